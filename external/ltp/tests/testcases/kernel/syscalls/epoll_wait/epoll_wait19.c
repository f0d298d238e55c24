// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Copyright (c) 2026 Seed 7fb0762e maintainers <maintainers@users.noreply.a-seed-7fb0762e.example>
 */

/*\
 * Verify that an epoll fd is readable while it has events waiting, and
 * only then (:manpage:`epoll(7)`, Q3), and that EPOLL_CTL_DEL of a ready
 * fd leaves no event to report.
 *
 * [Algorithm]
 *
 * - Register a pipe: the epoll fd is not readable to :manpage:`poll(2)`.
 * - Write to the pipe: the epoll fd is readable.
 * - Drain the pipe: the epoll fd is no longer readable.
 * - Write to the pipe, then EPOLL_CTL_DEL it: :manpage:`epoll_wait(2)`
 *   reports nothing and the epoll fd is not readable.
 */

#include <poll.h>
#include <sys/epoll.h>

#include "tst_test.h"
#include "tst_epoll.h"

static int epfd = -1;
static int fds[2] = {-1, -1};

static void expect_readable(int readable, const char *when)
{
	struct pollfd pfd = {.fd = epfd, .events = POLLIN};

	TEST(poll(&pfd, 1, 0));
	if (TST_RET == -1)
		tst_brk(TBROK | TTERRNO, "poll()");
	if (readable != TST_RET || (readable && !(pfd.revents & POLLIN))) {
		tst_res(TFAIL, "epoll fd %s %s (poll() %li, revents 0x%x)",
			readable ? "not readable" : "readable", when,
			TST_RET, pfd.revents);
		return;
	}
	tst_res(TPASS, "epoll fd %s %s", readable ? "readable" : "not readable",
		when);
}

static void run(void)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 1};
	int nevents;
	char c;

	epfd = SAFE_EPOLL_CREATE1(0);
	SAFE_PIPE(fds);
	SAFE_EPOLL_CTL(epfd, EPOLL_CTL_ADD, fds[0], &ev);

	expect_readable(0, "with no event");
	SAFE_WRITE(SAFE_WRITE_ALL, fds[1], "x", 1);
	expect_readable(1, "with an event waiting");
	SAFE_READ(1, fds[0], &c, 1);
	expect_readable(0, "once the event is gone");

	SAFE_WRITE(SAFE_WRITE_ALL, fds[1], "x", 1);
	SAFE_EPOLL_CTL(epfd, EPOLL_CTL_DEL, fds[0], NULL);
	nevents = SAFE_EPOLL_WAIT(epfd, &ev, 1, 0);
	TST_EXP_EQ_LI(nevents, 0);
	expect_readable(0, "after DEL of the ready fd");

	SAFE_CLOSE(fds[0]);
	SAFE_CLOSE(fds[1]);
	SAFE_CLOSE(epfd);
}

static void cleanup(void)
{
	if (fds[0] != -1) {
		SAFE_CLOSE(fds[0]);
		SAFE_CLOSE(fds[1]);
	}
	if (epfd != -1)
		SAFE_CLOSE(epfd);
}

static struct tst_test test = {
	.test_all = run,
	.cleanup = cleanup,
};
