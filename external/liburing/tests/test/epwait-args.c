/* SPDX-License-Identifier: MIT */
/*
 * Description: IORING_OP_EPOLL_WAIT takes the epoll fd in fd, the buffer
 *		in addr and maxevents in len. It fails as epoll_wait(2)
 *		does, -EINVAL when maxevents is not positive or fd is not
 *		an epoll fd, and with -EINVAL when a field it does not use
 *		is set; a failed request consumes no event. With nothing to
 *		report the request stays pending until an event is ready.
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

static int epfd, efd;

static int make_ready(void)
{
	uint64_t one = 1;

	if (write(efd, &one, sizeof(one)) != sizeof(one)) {
		perror("write");
		return 1;
	}
	return 0;
}

static int test_bad_args(struct io_uring *ring)
{
	struct epoll_event ev;
	struct {
		int maxevents;
		int not_epoll;
		uint64_t off;
		uint32_t rw_flags;
		uint16_t buf_index;
		int32_t splice_fd_in;
		const char *desc;
	} tcs[] = {
		{ 0, 0, 0, 0, 0, 0, "maxevents 0" },
		{ -1, 0, 0, 0, 0, 0, "maxevents -1" },
		{ 1, 1, 0, 0, 0, 0, "not an epoll fd" },
		{ 1, 0, 1, 0, 0, 0, "off set" },
		{ 1, 0, 0, 1, 0, 0, "rw_flags set" },
		{ 1, 0, 0, 0, 1, 0, "buf_index set" },
		{ 1, 0, 0, 0, 0, 1, "splice_fd_in set" },
	};
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	unsigned int i;
	int res;

	if (make_ready())
		return T_EXIT_FAIL;

	for (i = 0; i < ARRAY_SIZE(tcs); i++) {
		sqe = io_uring_get_sqe(ring);
		io_uring_prep_epoll_wait(sqe, tcs[i].not_epoll ? efd : epfd,
					 &ev, tcs[i].maxevents, 0);
		sqe->off = tcs[i].off;
		sqe->rw_flags = tcs[i].rw_flags;
		sqe->buf_index = tcs[i].buf_index;
		sqe->splice_fd_in = tcs[i].splice_fd_in;
		if (t_submit_and_wait_single(ring, &cqe))
			return T_EXIT_FAIL;
		res = cqe->res;
		io_uring_cqe_seen(ring, cqe);
		if (res != -EINVAL) {
			fprintf(stderr, "%s: res %d, expected %d\n",
				tcs[i].desc, res, -EINVAL);
			return T_EXIT_FAIL;
		}
	}

	/* The failed requests left the event in place. */
	if (epoll_wait(epfd, &ev, 1, 0) != 1 || ev.data.u64 != TAG) {
		fprintf(stderr, "the event is gone\n");
		return T_EXIT_FAIL;
	}
	if (read(efd, &ev, sizeof(uint64_t)) != sizeof(uint64_t)) {
		perror("read");
		return T_EXIT_FAIL;
	}
	return T_EXIT_PASS;
}

static int test_waits(struct io_uring *ring)
{
	struct __kernel_timespec ts = { .tv_nsec = 200000000 };
	struct epoll_event ev = { };
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int ret;

	sqe = io_uring_get_sqe(ring);
	io_uring_prep_epoll_wait(sqe, epfd, &ev, 1, 0);
	ret = io_uring_submit(ring);
	if (ret != 1) {
		fprintf(stderr, "submit: %d\n", ret);
		return T_EXIT_FAIL;
	}
	ret = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
	if (ret != -ETIME) {
		fprintf(stderr, "completed with nothing to report: %d, res %d\n",
			ret, ret ? 0 : cqe->res);
		return T_EXIT_FAIL;
	}

	if (make_ready())
		return T_EXIT_FAIL;
	ts.tv_sec = 10;
	ts.tv_nsec = 0;
	ret = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
	if (ret) {
		fprintf(stderr, "no completion once ready: %d\n", ret);
		return T_EXIT_FAIL;
	}
	ret = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	if (ret != 1 || ev.events != EPOLLIN || ev.data.u64 != TAG) {
		fprintf(stderr, "res %d, events %x, data %llu\n", ret,
			ev.events, (unsigned long long) ev.data.u64);
		return T_EXIT_FAIL;
	}
	return T_EXIT_PASS;
}

int main(int argc, char *argv[])
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG };
	struct io_uring_probe *probe;
	struct io_uring ring;
	int ret;

	if (argc > 1)
		return T_EXIT_SKIP;

	ret = t_create_ring(8, &ring, 0);
	if (ret == T_SETUP_SKIP)
		return T_EXIT_SKIP;
	else if (ret != T_SETUP_OK)
		return T_EXIT_FAIL;
	probe = io_uring_get_probe_ring(&ring);
	if (!probe || !io_uring_opcode_supported(probe, IORING_OP_EPOLL_WAIT)) {
		io_uring_free_probe(probe);
		return T_EXIT_SKIP;
	}
	io_uring_free_probe(probe);

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

	ret = test_bad_args(&ring);
	if (ret) {
		fprintf(stderr, "test_bad_args failed\n");
		return ret;
	}
	ret = test_waits(&ring);
	if (ret) {
		fprintf(stderr, "test_waits failed\n");
		return ret;
	}

	io_uring_queue_exit(&ring);
	return T_EXIT_PASS;
}
