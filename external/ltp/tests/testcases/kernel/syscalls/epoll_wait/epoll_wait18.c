// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Copyright (c) 2026 Seed 7fb0762e maintainers <maintainers@users.noreply.a-seed-7fb0762e.example>
 */

/*\
 * Verify that one event of a level-triggered item reaches every process
 * blocked in :manpage:`epoll_wait(2)` on the same epoll instance.
 *
 * :manpage:`epoll(7)` wakes just one of several waiters for an
 * edge-triggered item; a level-triggered item stays ready when it is
 * reported, so a waiter still blocked then finds it too. epoll_wait15
 * checks several instances watching one fd; this test checks several
 * waiters on one instance.
 *
 * [Algorithm]
 *
 * - Register a file, level-triggered, with an epoll instance: a pipe, whose
 *   write wakes its waiters with the synchronous hint, or an eventfd, whose
 *   write wakes them without it.
 * - Fork two children that block in :manpage:`epoll_wait(2)` on it with no
 *   timeout.
 * - Once both sleep, make the file readable and never read it.
 * - Both children must return within 10 seconds with the file's event.
 */

#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>

#include "tst_test.h"
#include "tst_epoll.h"

#define NWAITERS 2
#define WAKE_MS 10000
#define TAG 6

static int epfd = -1;
static int fds[2] = {-1, -1};

static const char *const kinds[] = { "a pipe", "an eventfd" };

static void wait_for_event(void)
{
	struct epoll_event ev = {};

	TEST(epoll_wait(epfd, &ev, 1, -1));
	if (TST_RET != 1) {
		tst_res(TFAIL | TTERRNO, "epoll_wait() returned %li", TST_RET);
		exit(0);
	}
	if (ev.data.u64 != TAG || !(ev.events & EPOLLIN)) {
		tst_res(TFAIL, "epoll_wait() returned events 0x%x data %llu",
			ev.events, (unsigned long long)ev.data.u64);
		exit(0);
	}
	tst_res(TPASS, "a blocked waiter got the level-triggered event");
	exit(0);
}

static void close_fds(void)
{
	if (fds[1] != -1 && fds[1] != fds[0])
		SAFE_CLOSE(fds[1]);
	fds[1] = -1;
	if (fds[0] != -1)
		SAFE_CLOSE(fds[0]);
}

static void run(unsigned int n)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG};
	uint64_t one = 1;
	pid_t pids[NWAITERS];
	int i, ms, left = NWAITERS;

	tst_res(TINFO, "Testing with %s", kinds[n]);
	epfd = SAFE_EPOLL_CREATE1(0);
	if (n == 0) {
		SAFE_PIPE(fds);
	} else {
		fds[0] = eventfd(0, 0);
		if (fds[0] < 0)
			tst_brk(TBROK | TERRNO, "eventfd()");
		fds[1] = fds[0];
	}
	SAFE_EPOLL_CTL(epfd, EPOLL_CTL_ADD, fds[0], &ev);

	for (i = 0; i < NWAITERS; i++) {
		pids[i] = SAFE_FORK();
		if (!pids[i])
			wait_for_event();
	}
	for (i = 0; i < NWAITERS; i++)
		TST_PROCESS_STATE_WAIT(pids[i], 'S', 0);

	if (n == 0)
		SAFE_WRITE(SAFE_WRITE_ALL, fds[1], "x", 1);
	else
		SAFE_WRITE(SAFE_WRITE_ALL, fds[1], &one, sizeof(one));

	for (ms = 0; left && ms < WAKE_MS; ms++) {
		for (i = 0; i < NWAITERS; i++) {
			if (pids[i] && SAFE_WAITPID(pids[i], NULL, WNOHANG) == pids[i]) {
				pids[i] = 0;
				left--;
			}
		}
		usleep(1000);
	}

	for (i = 0; i < NWAITERS; i++) {
		if (!pids[i])
			continue;
		tst_res(TFAIL, "waiter %d was not woken within %d ms", i, WAKE_MS);
		SAFE_KILL(pids[i], SIGKILL);
		SAFE_WAITPID(pids[i], NULL, 0);
	}

	close_fds();
	SAFE_CLOSE(epfd);
}

static void cleanup(void)
{
	close_fds();
	if (epfd != -1)
		SAFE_CLOSE(epfd);
}

static struct tst_test test = {
	.test = run,
	.tcnt = ARRAY_SIZE(kinds),
	.cleanup = cleanup,
	.forks_child = 1,
};
