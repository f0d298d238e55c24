// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Copyright (c) 2026 Seed 7fb0762e maintainers <maintainers@users.noreply.a-seed-7fb0762e.example>
 */

/*\
 * Verify that :manpage:`epoll_wait(2)` fails with EFAULT when it cannot
 * write the events to the buffer, and that the events stay to be reported
 * by the next call.
 *
 * [Algorithm]
 *
 * - Register two pipes with data in them.
 * - Call :manpage:`epoll_wait(2)` with a buffer outside the user address
 *   space, then with a buffer without access rights: both fail with
 *   EFAULT.
 * - Call it with a good buffer: both events are reported.
 */

#include <sys/epoll.h>
#include <sys/mman.h>

#include "tst_test.h"
#include "tst_epoll.h"

static int epfd = -1;
static int fds[2][2] = {{-1, -1}, {-1, -1}};
static struct epoll_event *none;

static struct tcase {
	struct epoll_event **buf;
	const char *desc;
} tcases[] = {
	{NULL, "a buffer outside the user address space"},
	{&none, "a buffer without access rights"},
};

static void run(unsigned int n)
{
	/* The top page: never a user address. */
	struct epoll_event *buf = tcases[n].buf ? *tcases[n].buf : (void *)-4096L;
	struct epoll_event ev[2] = {};
	int nevents;

	TST_EXP_FAIL(epoll_wait(epfd, buf, 2, 0), EFAULT,
		     "epoll_wait() into %s", tcases[n].desc);

	nevents = SAFE_EPOLL_WAIT(epfd, ev, 2, 0);
	if (nevents != 2 || ev[0].data.u64 + ev[1].data.u64 != 3 ||
	    ev[0].data.u64 == ev[1].data.u64) {
		tst_res(TFAIL, "after EFAULT: %d events, data %llu and %llu",
			nevents, (unsigned long long)ev[0].data.u64,
			(unsigned long long)ev[1].data.u64);
		return;
	}
	tst_res(TPASS, "both events reported after EFAULT");
}

static void setup(void)
{
	struct epoll_event ev = {.events = EPOLLIN};
	int i;

	none = SAFE_MMAP(NULL, getpagesize(), PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	epfd = SAFE_EPOLL_CREATE1(0);
	for (i = 0; i < 2; i++) {
		SAFE_PIPE(fds[i]);
		SAFE_WRITE(SAFE_WRITE_ALL, fds[i][1], "x", 1);
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
	if (none)
		SAFE_MUNMAP(none, getpagesize());
}

static struct tst_test test = {
	.setup = setup,
	.cleanup = cleanup,
	.test = run,
	.tcnt = ARRAY_SIZE(tcases),
};
