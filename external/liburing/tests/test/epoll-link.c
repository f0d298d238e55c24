/* SPDX-License-Identifier: MIT */
/*
 * Description: a failed IORING_OP_EPOLL_CTL or IORING_OP_EPOLL_WAIT
 *		breaks its IOSQE_IO_LINK chain, the next request completing
 *		with -ECANCELED; a successful one lets the chain go on.
 */
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "liburing.h"
#include "helpers.h"

#define TAG	7

/*
 * Submit what was prepared, linked to a NOP; the request's result in
 * res[0], the NOP's in res[1].
 */
static int run_linked(struct io_uring *ring, struct io_uring_sqe *sqe,
		      int res[2])
{
	struct __kernel_timespec ts = { .tv_sec = 10 };
	struct io_uring_cqe *cqe;
	int i, ret;

	sqe->flags |= IOSQE_IO_LINK;
	sqe->user_data = 0;
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 1;
	ret = io_uring_submit(ring);
	if (ret != 2) {
		fprintf(stderr, "submit: %d\n", ret);
		return 1;
	}
	res[0] = res[1] = 1;
	for (i = 0; i < 2; i++) {
		ret = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
		if (ret) {
			fprintf(stderr, "wait: %d\n", ret);
			return 1;
		}
		if (cqe->user_data > 1) {
			fprintf(stderr, "unexpected user_data %llu\n",
				(unsigned long long) cqe->user_data);
			return 1;
		}
		res[cqe->user_data] = cqe->res;
		io_uring_cqe_seen(ring, cqe);
	}
	return 0;
}

static int check(const int res[2], int exp0, int exp1, const char *what)
{
	if (res[0] == exp0 && res[1] == exp1)
		return 0;
	fprintf(stderr, "%s: results %d, %d, expected %d, %d\n", what,
		res[0], res[1], exp0, exp1);
	return 1;
}

static int test(unsigned int ring_flags)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG };
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	uint64_t one = 1;
	int epfd, efd, ret, res[2];

	ret = t_create_ring(8, &ring, ring_flags);
	if (ret == T_SETUP_SKIP)
		return T_EXIT_SKIP;
	else if (ret != T_SETUP_OK)
		return T_EXIT_FAIL;

	epfd = epoll_create1(0);
	efd = eventfd(0, EFD_NONBLOCK);
	if (epfd < 0 || efd < 0) {
		perror("setup");
		return T_EXIT_FAIL;
	}
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, efd, &ev)) {
		perror("epoll_ctl");
		return T_EXIT_FAIL;
	}

	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_epoll_ctl(sqe, epfd, efd, EPOLL_CTL_ADD, &ev);
	if (run_linked(&ring, sqe, res) ||
	    check(res, -EEXIST, -ECANCELED, "failed EPOLL_CTL"))
		return T_EXIT_FAIL;

	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_epoll_ctl(sqe, epfd, efd, EPOLL_CTL_MOD, &ev);
	if (run_linked(&ring, sqe, res) ||
	    check(res, 0, 0, "successful EPOLL_CTL"))
		return T_EXIT_FAIL;

	if (write(efd, &one, sizeof(one)) != sizeof(one)) {
		perror("write");
		return T_EXIT_FAIL;
	}
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_epoll_wait(sqe, epfd, &ev, 0, 0);
	if (run_linked(&ring, sqe, res) ||
	    check(res, -EINVAL, -ECANCELED, "failed EPOLL_WAIT"))
		return T_EXIT_FAIL;

	memset(&ev, 0, sizeof(ev));
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_epoll_wait(sqe, epfd, &ev, 1, 0);
	if (run_linked(&ring, sqe, res) ||
	    check(res, 1, 0, "successful EPOLL_WAIT"))
		return T_EXIT_FAIL;
	if (ev.data.u64 != TAG) {
		fprintf(stderr, "EPOLL_WAIT data %llu\n",
			(unsigned long long) ev.data.u64);
		return T_EXIT_FAIL;
	}

	close(efd);
	close(epfd);
	io_uring_queue_exit(&ring);
	return T_EXIT_PASS;
}

int main(int argc, char *argv[])
{
	struct io_uring_probe *probe;
	int ret;

	if (argc > 1)
		return T_EXIT_SKIP;

	probe = io_uring_get_probe();
	if (!probe || !io_uring_opcode_supported(probe, IORING_OP_EPOLL_CTL) ||
	    !io_uring_opcode_supported(probe, IORING_OP_EPOLL_WAIT)) {
		io_uring_free_probe(probe);
		return T_EXIT_SKIP;
	}
	io_uring_free_probe(probe);

	ret = test(0);
	if (ret) {
		fprintf(stderr, "test 0 failed\n");
		return ret;
	}
	ret = test(IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SINGLE_ISSUER);
	if (ret == T_EXIT_SKIP)
		return T_EXIT_PASS;
	if (ret) {
		fprintf(stderr, "test defer failed\n");
		return ret;
	}
	return T_EXIT_PASS;
}
