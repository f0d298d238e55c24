// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Copyright (c) 2026 Seed 7fb0762e maintainers <maintainers@users.noreply.a-seed-7fb0762e.example>
 */

/*\
 * Verify that a process blocked without a timeout on an epoll instance
 * returns when an item of the instance becomes ready, whichever way it
 * becomes ready.
 *
 * :manpage:`epoll_wait(2)` blocks until a file descriptor delivers an
 * event; :manpage:`epoll(7)` says an epoll fd with events waiting is
 * readable, to :manpage:`poll(2)` and to an epoll instance that watches it.
 *
 * [Algorithm]
 *
 * - A child blocks, with no timeout, in one of: :manpage:`epoll_wait(2)` on
 *   the instance, :manpage:`poll(2)` of the epoll fd, or
 *   :manpage:`epoll_wait(2)` on a second instance that watches the first.
 * - Once the child sleeps, the parent makes an item ready: by a write to
 *   a registered eventfd or pipe, by EPOLL_CTL_ADD of an fd that is already
 *   readable, or by EPOLL_CTL_MOD that arms again an EPOLLONESHOT item
 *   whose fd is readable and whose event was already reported.
 * - The child must return within 10 seconds with that item's event (its
 *   data, POLLIN from poll(), or the outer instance's item).
 *
 * The test runs twice: with EPOLLIN items, and with EPOLLIN | EPOLLWAKEUP
 * items, whose wakeups take another path where the caller has
 * CAP_BLOCK_SUSPEND.
 */

#include <poll.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>

#include "tst_test.h"
#include "tst_epoll.h"

#define WAKE_MS 10000
#define OUTER_TAG 77

enum blocked_in { IN_EPOLL_WAIT, IN_POLL, IN_OUTER_EPOLL_WAIT };
enum readied_by { EVENTFD_WRITE, PIPE_WRITE, ADD_READY, MOD_ONESHOT };

static const char *const blocked_desc[] = {
	[IN_EPOLL_WAIT] = "epoll_wait()",
	[IN_POLL] = "poll() of the epoll fd",
	[IN_OUTER_EPOLL_WAIT] = "epoll_wait() of an instance watching it",
};

static const char *const readied_desc[] = {
	[EVENTFD_WRITE] = "an eventfd write",
	[PIPE_WRITE] = "a pipe write",
	[ADD_READY] = "ADD of a readable fd",
	[MOD_ONESHOT] = "MOD arming a readable EPOLLONESHOT item",
};

static struct tcase {
	enum blocked_in in;
	enum readied_by by;
} tcases[] = {
	{IN_EPOLL_WAIT, EVENTFD_WRITE},
	{IN_EPOLL_WAIT, PIPE_WRITE},
	{IN_EPOLL_WAIT, ADD_READY},
	{IN_EPOLL_WAIT, MOD_ONESHOT},
	{IN_POLL, EVENTFD_WRITE},
	{IN_POLL, PIPE_WRITE},
	{IN_POLL, ADD_READY},
	{IN_POLL, MOD_ONESHOT},
	{IN_OUTER_EPOLL_WAIT, EVENTFD_WRITE},
	{IN_OUTER_EPOLL_WAIT, PIPE_WRITE},
	{IN_OUTER_EPOLL_WAIT, ADD_READY},
	{IN_OUTER_EPOLL_WAIT, MOD_ONESHOT},
};

static int epfd = -1, outer = -1, efd = -1;
static int fds[2] = {-1, -1};
static uint32_t wakeup;

static void ctl(int op, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = {.events = events | wakeup, .data.u64 = data};

	SAFE_EPOLL_CTL(epfd, op, fd, &ev);
}

static void make_ready(void)
{
	uint64_t one = 1;

	SAFE_WRITE(SAFE_WRITE_ALL, efd, &one, sizeof(one));
}

static void wait_for_event(enum blocked_in in, uint64_t tag)
{
	struct pollfd pfd = {.fd = epfd, .events = POLLIN};
	struct epoll_event ev = {};

	if (in == IN_POLL) {
		TEST(poll(&pfd, 1, -1));
		if (TST_RET != 1 || !(pfd.revents & POLLIN)) {
			tst_res(TFAIL | TTERRNO, "poll() returned %li, revents 0x%x",
				TST_RET, pfd.revents);
			exit(0);
		}
		tst_res(TPASS, "poll() of the epoll fd returned POLLIN");
		exit(0);
	}

	if (in == IN_OUTER_EPOLL_WAIT)
		tag = OUTER_TAG;

	TEST(epoll_wait(in == IN_OUTER_EPOLL_WAIT ? outer : epfd, &ev, 1, -1));
	if (TST_RET != 1) {
		tst_res(TFAIL | TTERRNO, "epoll_wait() returned %li", TST_RET);
		exit(0);
	}
	if (ev.data.u64 != tag) {
		tst_res(TFAIL, "epoll_wait() returned data %llu, expected %llu",
			(unsigned long long)ev.data.u64, (unsigned long long)tag);
		exit(0);
	}
	tst_res(TPASS, "epoll_wait() returned the event of the item");
	exit(0);
}

/* The child's exit, or -1 if it is still blocked after WAKE_MS. */
static int reap_within(pid_t pid)
{
	int ms, status;

	for (ms = 0; ms < WAKE_MS; ms++) {
		if (SAFE_WAITPID(pid, &status, WNOHANG) == pid)
			return status;
		usleep(1000);
	}
	return -1;
}

static void run(unsigned int n)
{
	struct tcase *tc = &tcases[n];
	struct epoll_event ev;
	uint64_t tag = n + 1;
	pid_t pid;

	tst_res(TINFO, "Blocked in %s, woken by %s", blocked_desc[tc->in],
		readied_desc[tc->by]);

	epfd = SAFE_EPOLL_CREATE1(0);
	efd = eventfd(0, EFD_NONBLOCK);
	if (efd == -1)
		tst_brk(TBROK | TERRNO, "eventfd()");
	SAFE_PIPE(fds);
	if (tc->in == IN_OUTER_EPOLL_WAIT) {
		outer = SAFE_EPOLL_CREATE1(0);
		ev.events = EPOLLIN;
		ev.data.u64 = OUTER_TAG;
		SAFE_EPOLL_CTL(outer, EPOLL_CTL_ADD, epfd, &ev);
	}

	switch (tc->by) {
	case EVENTFD_WRITE:
		ctl(EPOLL_CTL_ADD, efd, EPOLLIN, tag);
		break;
	case PIPE_WRITE:
		ctl(EPOLL_CTL_ADD, fds[0], EPOLLIN, tag);
		break;
	case ADD_READY:
		make_ready();
		break;
	case MOD_ONESHOT:
		ctl(EPOLL_CTL_ADD, efd, EPOLLIN | EPOLLONESHOT, 0);
		make_ready();
		/* Reported, so disarmed; the eventfd stays readable. */
		if (SAFE_EPOLL_WAIT(epfd, &ev, 1, 0) != 1)
			tst_brk(TBROK, "the one-shot event was not reported");
		break;
	}

	pid = SAFE_FORK();
	if (!pid)
		wait_for_event(tc->in, tag);

	TST_PROCESS_STATE_WAIT(pid, 'S', 0);

	switch (tc->by) {
	case EVENTFD_WRITE:
		make_ready();
		break;
	case PIPE_WRITE:
		SAFE_WRITE(SAFE_WRITE_ALL, fds[1], "x", 1);
		break;
	case ADD_READY:
		ctl(EPOLL_CTL_ADD, efd, EPOLLIN, tag);
		break;
	case MOD_ONESHOT:
		ctl(EPOLL_CTL_MOD, efd, EPOLLIN | EPOLLONESHOT, tag);
		break;
	}

	if (reap_within(pid) == -1) {
		tst_res(TFAIL, "the blocked child was not woken within %d ms",
			WAKE_MS);
		SAFE_KILL(pid, SIGKILL);
		SAFE_WAITPID(pid, NULL, 0);
	}

	if (outer != -1)
		SAFE_CLOSE(outer);
	SAFE_CLOSE(fds[0]);
	SAFE_CLOSE(fds[1]);
	SAFE_CLOSE(efd);
	SAFE_CLOSE(epfd);
}

static void setup(void)
{
	if (tst_variant) {
		tst_res(TINFO, "Testing items with EPOLLWAKEUP");
		wakeup = EPOLLWAKEUP;
	} else {
		tst_res(TINFO, "Testing items without EPOLLWAKEUP");
	}
}

static void cleanup(void)
{
	if (outer != -1)
		SAFE_CLOSE(outer);
	if (fds[0] != -1) {
		SAFE_CLOSE(fds[0]);
		SAFE_CLOSE(fds[1]);
	}
	if (efd != -1)
		SAFE_CLOSE(efd);
	if (epfd != -1)
		SAFE_CLOSE(epfd);
}

static struct tst_test test = {
	.test = run,
	.tcnt = ARRAY_SIZE(tcases),
	.test_variants = 2,
	.setup = setup,
	.cleanup = cleanup,
	.forks_child = 1,
};
