// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Copyright (c) 2026 Seed 7fb0762e maintainers <maintainers@users.noreply.a-seed-7fb0762e.example>
 */

/*\
 * Verify that an :manpage:`epoll_ctl(2)` call that fails with one of the
 * errors the manual page lists leaves every interest list as it was.
 *
 * [Algorithm]
 *
 * - Register a pipe and a second epoll instance with an epoll instance
 *   and note the event masks /proc/self/fdinfo shows for them.
 * - Make calls that each meet exactly one condition of ERRORS: epfd or fd
 *   not open (EBADF), fd already registered (EEXIST), epfd not an epoll
 *   instance, fd equal to epfd, an unknown op (EINVAL), MOD or DEL of an fd
 *   not registered (ENOENT), fd a directory (EPERM), two instances that
 *   would watch each other (ELOOP) and an event that cannot be read
 *   (EFAULT).
 * - After each call, check its errno, that both items keep their masks and
 *   that no fd a failed call named has been registered.
 *
 * The test runs three times: with plain EPOLLIN masks, with EPOLLWAKEUP
 * added, and with EPOLLWAKEUP added and CAP_BLOCK_SUSPEND dropped, when
 * the kernel ignores the flag.
 */

#include <sys/epoll.h>
#include <sys/mman.h>

#include "tst_test.h"
#include "tst_epoll.h"
#include "tst_capability.h"
#include "lapi/capability.h"
#include "epoll_ctl_fdinfo.h"

static int epfd = -1, inner = -1, dir = -1, closed_fd = -1;
static int fds[2] = {-1, -1}, other[2] = {-1, -1};
static uint32_t fd_events, inner_events, wakeup;
static struct epoll_event *good_ev, *bad_ev;

static struct tcase {
	int *epfd;
	int op;
	int *fd;
	struct epoll_event **ev;
	int exp_errno;
	const char *desc;
} tcases[] = {
	{&epfd, EPOLL_CTL_ADD, &closed_fd, &good_ev, EBADF, "fd is not open"},
	{&closed_fd, EPOLL_CTL_ADD, &other[0], &good_ev, EBADF, "epfd is not open"},
	{&epfd, EPOLL_CTL_ADD, &fds[0], &good_ev, EEXIST, "fd is already registered"},
	{&fds[0], EPOLL_CTL_ADD, &other[0], &good_ev, EINVAL, "epfd is not an epoll fd"},
	{&epfd, EPOLL_CTL_ADD, &epfd, &good_ev, EINVAL, "fd is epfd"},
	{&epfd, 0, &other[0], &good_ev, EINVAL, "op is 0"},
	{&epfd, EPOLL_CTL_MOD, &other[0], &good_ev, ENOENT, "fd is not registered for MOD"},
	{&epfd, EPOLL_CTL_DEL, &other[0], &good_ev, ENOENT, "fd is not registered for DEL"},
	{&epfd, EPOLL_CTL_ADD, &dir, &good_ev, EPERM, "fd is a directory"},
	{&inner, EPOLL_CTL_ADD, &epfd, &good_ev, ELOOP, "two instances would watch each other"},
	{&epfd, EPOLL_CTL_ADD, &other[0], &bad_ev, EFAULT, "event is not readable"},
};

static void check_unchanged(void)
{
	int ok = 1;

	ok &= epoll_check_item(epfd, fds[0], fd_events, "the pipe");
	ok &= epoll_check_item(epfd, inner, inner_events, "the inner instance");
	ok &= epoll_check_absent(epfd, other[0], "the other pipe");
	ok &= epoll_check_absent(inner, epfd, "the outer instance");
	if (ok)
		tst_res(TPASS, "the interest lists are unchanged");
}

static void run(unsigned int n)
{
	struct tcase *tc = &tcases[n];

	TST_EXP_FAIL(epoll_ctl(*tc->epfd, tc->op, *tc->fd, *tc->ev),
		     tc->exp_errno, "epoll_ctl() when %s", tc->desc);
	check_unchanged();
}

static void setup(void)
{
	struct tst_cap drop = TST_CAP(TST_CAP_DROP, CAP_BLOCK_SUSPEND);
	int fd;

	switch (tst_variant) {
	case 0:
		tst_res(TINFO, "Testing with EPOLLIN");
		break;
	case 1:
		tst_res(TINFO, "Testing with EPOLLIN | EPOLLWAKEUP");
		wakeup = EPOLLWAKEUP;
		break;
	case 2:
		tst_res(TINFO, "Testing with EPOLLIN | EPOLLWAKEUP without CAP_BLOCK_SUSPEND");
		tst_cap_action(&drop);
		wakeup = EPOLLWAKEUP;
		break;
	}

	good_ev->events = EPOLLIN | wakeup;
	good_ev->data.u64 = 1;
	bad_ev = SAFE_MMAP(NULL, getpagesize(), PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	epfd = SAFE_EPOLL_CREATE1(0);
	inner = SAFE_EPOLL_CREATE1(0);
	SAFE_PIPE(fds);
	SAFE_PIPE(other);
	dir = SAFE_OPEN("/", O_RDONLY | O_DIRECTORY);

	/* A number well above the fds in use, so nothing reuses it. */
	fd = SAFE_FCNTL(fds[0], F_DUPFD, 100);
	closed_fd = fd;
	SAFE_CLOSE(fd);

	SAFE_EPOLL_CTL(epfd, EPOLL_CTL_ADD, fds[0], good_ev);
	SAFE_EPOLL_CTL(epfd, EPOLL_CTL_ADD, inner, good_ev);

	if (!epoll_fdinfo_events(epfd, fds[0], &fd_events) ||
	    !epoll_fdinfo_events(epfd, inner, &inner_events))
		tst_brk(TBROK, "registered fds missing from /proc/self/fdinfo/%d", epfd);

	if (tst_variant == 2 && (fd_events & EPOLLWAKEUP))
		tst_res(TFAIL, "EPOLLWAKEUP kept without CAP_BLOCK_SUSPEND");
}

static void cleanup(void)
{
	if (bad_ev)
		SAFE_MUNMAP(bad_ev, getpagesize());
	if (dir != -1)
		SAFE_CLOSE(dir);
	if (other[0] != -1) {
		SAFE_CLOSE(other[0]);
		SAFE_CLOSE(other[1]);
	}
	if (fds[0] != -1) {
		SAFE_CLOSE(fds[0]);
		SAFE_CLOSE(fds[1]);
	}
	if (inner != -1)
		SAFE_CLOSE(inner);
	if (epfd != -1)
		SAFE_CLOSE(epfd);
}

static struct tst_test test = {
	.setup = setup,
	.cleanup = cleanup,
	.test = run,
	.tcnt = ARRAY_SIZE(tcases),
	.test_variants = 3,
	.bufs = (struct tst_buffers []) {
		{&good_ev, .size = sizeof(*good_ev)},
		{},
	},
};
