/* SPDX-License-Identifier: MIT */
/*
 * Description: IORING_OP_EPOLL_CTL adds, modifies and removes items as
 *		epoll_ctl(2) does, and fails with the errno epoll_ctl(2)
 *		documents for each condition, leaving the interest list as
 *		it was, with and without EPOLLWAKEUP. A set field the opcode
 *		does not use, or a personality that was never registered,
 *		fails the request with -EINVAL. Each case runs inline and from
 *		io-wq (IOSQE_ASYNC).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#include "liburing.h"
#include "helpers.h"

static int epfd, inner, efd, other, dir, closed_fd;
static uint32_t efd_events, inner_events;

/* The mask of @tfd's item in @ep per /proc/self/fdinfo, or 0 if none. */
static int fdinfo_events(int ep, int tfd, uint32_t *events)
{
	char path[64], line[256];
	unsigned int mask;
	int fd, found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", ep);
	f = fopen(path, "r");
	if (!f) {
		perror("fopen fdinfo");
		return -1;
	}
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "tfd: %d events: %x", &fd, &mask) == 2 &&
		    fd == tfd) {
			*events = mask;
			found = 1;
		}
	}
	fclose(f);
	return found;
}

/* Run one IORING_OP_EPOLL_CTL; its result, or 1 if it did not complete. */
static int epoll_ctl_req(struct io_uring *ring, int ep, int op, int fd,
			 struct epoll_event *ev, unsigned int flags,
			 int personality, int buf_index, int splice_fd_in)
{
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int res;

	sqe = io_uring_get_sqe(ring);
	io_uring_prep_epoll_ctl(sqe, ep, fd, op, ev);
	sqe->flags |= flags;
	sqe->personality = personality;
	sqe->buf_index = buf_index;
	sqe->splice_fd_in = splice_fd_in;
	if (t_submit_and_wait_single(ring, &cqe))
		return 1;
	res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

static int check_unchanged(const char *after)
{
	uint32_t events;

	if (fdinfo_events(epfd, efd, &events) != 1 || events != efd_events ||
	    fdinfo_events(epfd, inner, &events) != 1 || events != inner_events) {
		fprintf(stderr, "%s: an item changed\n", after);
		return 1;
	}
	if (fdinfo_events(epfd, other, &events) != 0 ||
	    fdinfo_events(inner, epfd, &events) != 0) {
		fprintf(stderr, "%s: a failed ADD added an item\n", after);
		return 1;
	}
	return 0;
}

static int test_errors(struct io_uring *ring, unsigned int flags,
		       uint32_t events, void *unreadable)
{
	struct epoll_event ev = { .events = events, .data.u64 = 9 };
	/*
	 * No two neighbours expect the same result: requests are recycled, and
	 * one completed without a result set would carry its predecessor's.
	 */
	struct {
		int *ep;
		int op;
		int *fd;
		void *ev;
		int buf_index;
		int splice_fd_in;
		int res;
		const char *desc;
	} tcs[] = {
		{ &closed_fd, EPOLL_CTL_ADD, &other, &ev, 0, 0, -EBADF, "epfd not open" },
		{ &epfd, EPOLL_CTL_ADD, &efd, &ev, 0, 0, -EEXIST, "fd registered" },
		{ &epfd, EPOLL_CTL_ADD, &closed_fd, &ev, 0, 0, -EBADF, "fd not open" },
		{ &efd, EPOLL_CTL_ADD, &other, &ev, 0, 0, -EINVAL, "epfd not epoll" },
		{ &epfd, EPOLL_CTL_MOD, &other, &ev, 0, 0, -ENOENT, "MOD not registered" },
		{ &epfd, EPOLL_CTL_ADD, &epfd, &ev, 0, 0, -EINVAL, "fd is epfd" },
		{ &epfd, EPOLL_CTL_DEL, &other, NULL, 0, 0, -ENOENT, "DEL not registered" },
		{ &epfd, 0, &other, &ev, 0, 0, -EINVAL, "op 0" },
		{ &epfd, EPOLL_CTL_ADD, &dir, &ev, 0, 0, -EPERM, "fd a directory" },
		{ &epfd, EPOLL_CTL_ADD, &other, &ev, 1, 0, -EINVAL, "buf_index set" },
		{ &inner, EPOLL_CTL_ADD, &epfd, &ev, 0, 0, -ELOOP, "a loop" },
		{ &epfd, EPOLL_CTL_ADD, &other, &ev, 0, 1, -EINVAL, "splice_fd_in set" },
		{ &epfd, EPOLL_CTL_ADD, &other, unreadable, 0, 0, -EFAULT, "event unreadable" },
	};
	unsigned int i;
	int res;

	for (i = 0; i < ARRAY_SIZE(tcs); i++) {
		res = epoll_ctl_req(ring, *tcs[i].ep, tcs[i].op, *tcs[i].fd,
				    tcs[i].ev, flags, 0, tcs[i].buf_index,
				    tcs[i].splice_fd_in);
		if (res != tcs[i].res) {
			fprintf(stderr, "%s (flags %x, events %x): res %d, expected %d\n",
				tcs[i].desc, flags, events, res, tcs[i].res);
			return T_EXIT_FAIL;
		}
		if (check_unchanged(tcs[i].desc))
			return T_EXIT_FAIL;
	}
	return T_EXIT_PASS;
}

/* ADD, MOD and DEL work, inline or from io-wq, as epoll_ctl(2) would. */
static int test_add_mod_del(struct io_uring *ring, unsigned int flags)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 }, out;
	uint64_t one = 1;
	uint32_t events;
	int res;

	res = epoll_ctl_req(ring, epfd, EPOLL_CTL_ADD, other, &ev, flags, 0, 0, 0);
	if (res) {
		fprintf(stderr, "ADD (flags %x): %d\n", flags, res);
		return T_EXIT_FAIL;
	}
	if (fdinfo_events(epfd, other, &events) != 1 ||
	    events != (EPOLLIN | EPOLLERR | EPOLLHUP)) {
		fprintf(stderr, "ADD (flags %x): item not added as asked\n", flags);
		return T_EXIT_FAIL;
	}
	if (write(other, &one, sizeof(one)) != sizeof(one)) {
		perror("write");
		return T_EXIT_FAIL;
	}
	if (epoll_wait(epfd, &out, 1, 0) != 1 || out.data.u64 != 1) {
		fprintf(stderr, "ADD (flags %x): event not reported\n", flags);
		return T_EXIT_FAIL;
	}

	ev.events = EPOLLIN | EPOLLET;
	ev.data.u64 = 2;
	res = epoll_ctl_req(ring, epfd, EPOLL_CTL_MOD, other, &ev, flags, 0, 0, 0);
	if (res) {
		fprintf(stderr, "MOD (flags %x): %d\n", flags, res);
		return T_EXIT_FAIL;
	}
	if (epoll_wait(epfd, &out, 1, 0) != 1 || out.data.u64 != 2) {
		fprintf(stderr, "MOD (flags %x): new data not reported\n", flags);
		return T_EXIT_FAIL;
	}
	if (epoll_wait(epfd, &out, 1, 0) != 0) {
		fprintf(stderr, "MOD (flags %x): EPOLLET not taken\n", flags);
		return T_EXIT_FAIL;
	}

	res = epoll_ctl_req(ring, epfd, EPOLL_CTL_DEL, other, NULL, flags, 0, 0, 0);
	if (res) {
		fprintf(stderr, "DEL (flags %x): %d\n", flags, res);
		return T_EXIT_FAIL;
	}
	if (fdinfo_events(epfd, other, &events) != 0) {
		fprintf(stderr, "DEL (flags %x): item still there\n", flags);
		return T_EXIT_FAIL;
	}
	if (read(other, &one, sizeof(one)) != sizeof(one)) {
		perror("read");
		return T_EXIT_FAIL;
	}
	return check_unchanged("ADD, MOD and DEL");
}

/*
 * A request runs with the credentials of a registered personality; an id
 * that was never registered fails it with -EINVAL.
 */
static int test_personality(struct io_uring *ring, unsigned int flags)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 3 };
	int id, res;

	id = io_uring_register_personality(ring);
	if (id < 0) {
		fprintf(stderr, "register personality: %d\n", id);
		return T_EXIT_FAIL;
	}
	res = epoll_ctl_req(ring, epfd, EPOLL_CTL_ADD, other, &ev, flags,
			    id + 1, 0, 0);
	if (res != -EINVAL) {
		fprintf(stderr, "unknown personality (flags %x): %d\n", flags, res);
		return T_EXIT_FAIL;
	}
	if (check_unchanged("unknown personality"))
		return T_EXIT_FAIL;
	res = epoll_ctl_req(ring, epfd, EPOLL_CTL_ADD, other, &ev, flags, id, 0, 0);
	if (res) {
		fprintf(stderr, "ADD with personality (flags %x): %d\n", flags, res);
		return T_EXIT_FAIL;
	}
	res = epoll_ctl_req(ring, epfd, EPOLL_CTL_DEL, other, NULL, flags, id, 0, 0);
	if (res) {
		fprintf(stderr, "DEL with personality (flags %x): %d\n", flags, res);
		return T_EXIT_FAIL;
	}
	io_uring_unregister_personality(ring, id);
	return check_unchanged("personality");
}

static int setup_fds(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd;

	epfd = epoll_create1(0);
	inner = epoll_create1(0);
	efd = eventfd(0, EFD_NONBLOCK);
	other = eventfd(0, EFD_NONBLOCK);
	dir = open("/", O_RDONLY | O_DIRECTORY);
	if (epfd < 0 || inner < 0 || efd < 0 || other < 0 || dir < 0) {
		perror("setup");
		return 1;
	}
	/* A number well above those in use, so nothing reuses it. */
	fd = fcntl(efd, F_DUPFD, 100);
	if (fd < 0) {
		perror("F_DUPFD");
		return 1;
	}
	closed_fd = fd;
	close(fd);
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, efd, &ev) ||
	    epoll_ctl(epfd, EPOLL_CTL_ADD, inner, &ev)) {
		perror("epoll_ctl");
		return 1;
	}
	if (fdinfo_events(epfd, efd, &efd_events) != 1 ||
	    fdinfo_events(epfd, inner, &inner_events) != 1) {
		fprintf(stderr, "no items in fdinfo\n");
		return 1;
	}
	return 0;
}

int main(int argc, char *argv[])
{
	static const unsigned int flags[] = { 0, IOSQE_ASYNC };
	struct io_uring_probe *probe;
	struct io_uring ring;
	void *unreadable;
	unsigned int i;
	int ret;

	if (argc > 1)
		return T_EXIT_SKIP;

	ret = t_create_ring(8, &ring, 0);
	if (ret == T_SETUP_SKIP)
		return T_EXIT_SKIP;
	else if (ret != T_SETUP_OK)
		return T_EXIT_FAIL;
	probe = io_uring_get_probe_ring(&ring);
	if (!probe || !io_uring_opcode_supported(probe, IORING_OP_EPOLL_CTL)) {
		io_uring_free_probe(probe);
		return T_EXIT_SKIP;
	}
	io_uring_free_probe(probe);

	unreadable = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (unreadable == MAP_FAILED) {
		perror("mmap");
		return T_EXIT_FAIL;
	}
	if (setup_fds())
		return T_EXIT_FAIL;

	for (i = 0; i < ARRAY_SIZE(flags); i++) {
		ret = test_add_mod_del(&ring, flags[i]);
		if (ret) {
			fprintf(stderr, "test_add_mod_del failed\n");
			return ret;
		}
		/* EPOLLWAKEUP takes another path in epoll_ctl(). */
		ret = test_errors(&ring, flags[i], EPOLLIN, unreadable);
		if (!ret)
			ret = test_errors(&ring, flags[i], EPOLLIN | EPOLLWAKEUP,
					  unreadable);
		if (ret) {
			fprintf(stderr, "test_errors failed\n");
			return ret;
		}
		ret = test_personality(&ring, flags[i]);
		if (ret) {
			fprintf(stderr, "test_personality failed\n");
			return ret;
		}
	}

	io_uring_queue_exit(&ring);
	return T_EXIT_PASS;
}
