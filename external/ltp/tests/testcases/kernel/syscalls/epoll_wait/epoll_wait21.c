// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Copyright (c) 2026 Seed 7fb0762e maintainers <maintainers@users.noreply.a-seed-7fb0762e.example>
 */

/*\
 * Verify that :manpage:`epoll_wait(2)` reports a ready file once however
 * many events it had since the last call, and writes no more than
 * maxevents entries.
 *
 * [Algorithm]
 *
 * - Register two pipes and write to each of them twice.
 * - :manpage:`epoll_wait(2)` with maxevents 1 into a zeroed buffer of three
 *   entries returns 1 and leaves the second and third entries untouched.
 * - :manpage:`epoll_wait(2)` with maxevents 3 returns 2: each pipe once,
 *   the third entry untouched.
 */

#include <sys/epoll.h>

#include "tst_test.h"
#include "tst_epoll.h"

static int epfd = -1;
static int fds[2][2] = {{-1, -1}, {-1, -1}};

static void run(void)
{
	struct epoll_event ev[3];
	int i, nevents;

	for (i = 0; i < 2; i++) {
		SAFE_WRITE(SAFE_WRITE_ALL, fds[i][1], "x", 1);
		SAFE_WRITE(SAFE_WRITE_ALL, fds[i][1], "y", 1);
	}

	memset(ev, 0, sizeof(ev));
	nevents = SAFE_EPOLL_WAIT(epfd, ev, 1, 0);
	if (nevents != 1 || ev[1].data.u64 || ev[1].events ||
	    ev[2].data.u64 || ev[2].events)
		tst_res(TFAIL, "maxevents 1: %d events, entries past the first %s",
			nevents, ev[1].events || ev[2].events ? "written" : "untouched");
	else
		tst_res(TPASS, "maxevents 1: one event, nothing written past it");

	memset(ev, 0, sizeof(ev));
	nevents = SAFE_EPOLL_WAIT(epfd, ev, 3, 0);
	if (nevents != 2 || ev[0].data.u64 + ev[1].data.u64 != 3 ||
	    ev[0].data.u64 == ev[1].data.u64 || ev[2].data.u64) {
		tst_res(TFAIL, "%d events, data %llu, %llu and %llu", nevents,
			(unsigned long long)ev[0].data.u64,
			(unsigned long long)ev[1].data.u64,
			(unsigned long long)ev[2].data.u64);
	} else {
		tst_res(TPASS, "each ready pipe reported once");
	}

	for (i = 0; i < 2; i++) {
		char buf[2];

		SAFE_READ(1, fds[i][0], buf, 2);
	}
}

static void setup(void)
{
	struct epoll_event ev = {.events = EPOLLIN};
	int i;

	epfd = SAFE_EPOLL_CREATE1(0);
	for (i = 0; i < 2; i++) {
		SAFE_PIPE(fds[i]);
		ev.data.u64 = i + 1;
		SAFE_EPOLL_CTL(epfd, EPOLL_CTL_ADD, fds[i][0], &ev);
	}
}

static void cleanup(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (fds[i][0] != -1) {
			SAFE_CLOSE(fds[i][0]);
			SAFE_CLOSE(fds[i][1]);
		}
	}
	if (epfd != -1)
		SAFE_CLOSE(epfd);
}

static struct tst_test test = {
	.setup = setup,
	.cleanup = cleanup,
	.test_all = run,
};
