// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Copyright (c) 2026 Seed 7fb0762e maintainers <maintainers@users.noreply.a-seed-7fb0762e.example>
 */

/*\
 * Verify the rules of :manpage:`epoll_ctl(2)` for EPOLLEXCLUSIVE.
 *
 * EPOLLEXCLUSIVE may be given with EPOLL_CTL_ADD only, together with
 * EPOLLIN, EPOLLOUT, EPOLLWAKEUP, EPOLLET, EPOLLHUP and EPOLLERR; every
 * other use fails with EINVAL.
 *
 * [Algorithm]
 *
 * - Register a pipe with EPOLLEXCLUSIVE and every flag it may be combined
 *   with, and check the mask /proc/self/fdinfo shows for it; register a
 *   second pipe without EPOLLEXCLUSIVE.
 * - Check that these fail with EINVAL: MOD of the exclusive item, MOD of
 *   the other one with EPOLLEXCLUSIVE, ADD of an epoll instance with
 *   EPOLLEXCLUSIVE, and ADD with EPOLLEXCLUSIVE and one of EPOLLONESHOT,
 *   EPOLLPRI or EPOLLRDHUP.
 * - After each, check that both items keep their masks and that no fd a
 *   failed ADD named has been registered.
 *
 * The test runs three times: with the flags above but EPOLLWAKEUP, with
 * EPOLLWAKEUP too, and with EPOLLWAKEUP and CAP_BLOCK_SUSPEND dropped, when
 * the kernel ignores the flag.
 */

#include <sys/epoll.h>

#include "tst_test.h"
#include "tst_epoll.h"
#include "tst_capability.h"
#include "lapi/capability.h"
#include "lapi/epoll.h"
#include "epoll_ctl_fdinfo.h"

#define EXCL_OK (EPOLLEXCLUSIVE | EPOLLIN | EPOLLOUT | EPOLLET | \
		 EPOLLHUP | EPOLLERR)

static int epfd = -1, inner = -1;
static int excl[2] = {-1, -1}, plain[2] = {-1, -1}, third[2] = {-1, -1};
static uint32_t excl_events, plain_events, wakeup;
static struct epoll_event *ev;

static struct tcase {
	int op;
	int *fd;
	uint32_t events;
	const char *desc;
} tcases[] = {
	{EPOLL_CTL_MOD, &excl[0], EPOLLIN, "MOD of an item added with EPOLLEXCLUSIVE"},
	{EPOLL_CTL_MOD, &plain[0], EPOLLEXCLUSIVE | EPOLLIN, "MOD with EPOLLEXCLUSIVE"},
	{EPOLL_CTL_ADD, &inner, EPOLLEXCLUSIVE | EPOLLIN, "EPOLLEXCLUSIVE for an epoll fd"},
	{EPOLL_CTL_ADD, &third[0], EPOLLEXCLUSIVE | EPOLLIN | EPOLLONESHOT,
	 "EPOLLEXCLUSIVE with EPOLLONESHOT"},
	{EPOLL_CTL_ADD, &third[0], EPOLLEXCLUSIVE | EPOLLIN | EPOLLPRI,
	 "EPOLLEXCLUSIVE with EPOLLPRI"},
	{EPOLL_CTL_ADD, &third[0], EPOLLEXCLUSIVE | EPOLLIN | EPOLLRDHUP,
	 "EPOLLEXCLUSIVE with EPOLLRDHUP"},
};

static void run(unsigned int n)
{
	struct tcase *tc = &tcases[n];
	int ok = 1;

	ev->events = tc->events | wakeup;
	ev->data.u64 = n;
	TST_EXP_FAIL(epoll_ctl(epfd, tc->op, *tc->fd, ev), EINVAL,
		     "epoll_ctl() %s", tc->desc);

	ok &= epoll_check_item(epfd, excl[0], excl_events, "the exclusive item");
	ok &= epoll_check_item(epfd, plain[0], plain_events, "the other item");
	ok &= epoll_check_absent(epfd, inner, "the epoll fd");
	ok &= epoll_check_absent(epfd, third[0], "the third pipe");
	if (ok)
		tst_res(TPASS, "the interest list is unchanged");
}

static void setup(void)
{
	struct tst_cap drop = TST_CAP(TST_CAP_DROP, CAP_BLOCK_SUSPEND);

	switch (tst_variant) {
	case 0:
		tst_res(TINFO, "Testing without EPOLLWAKEUP");
		break;
	case 1:
		tst_res(TINFO, "Testing with EPOLLWAKEUP");
		wakeup = EPOLLWAKEUP;
		break;
	case 2:
		tst_res(TINFO, "Testing with EPOLLWAKEUP without CAP_BLOCK_SUSPEND");
		tst_cap_action(&drop);
		wakeup = EPOLLWAKEUP;
		break;
	}

	epfd = SAFE_EPOLL_CREATE1(0);
	inner = SAFE_EPOLL_CREATE1(0);
	SAFE_PIPE(excl);
	SAFE_PIPE(plain);
	SAFE_PIPE(third);

	ev->events = EXCL_OK | wakeup;
	TST_EXP_PASS(epoll_ctl(epfd, EPOLL_CTL_ADD, excl[0], ev),
		     "epoll_ctl() ADD with EPOLLEXCLUSIVE and every flag it takes");
	if (!TST_PASS)
		tst_brk(TBROK, "cannot go on without the exclusive item");
	ev->events = EPOLLIN | wakeup;
	SAFE_EPOLL_CTL(epfd, EPOLL_CTL_ADD, plain[0], ev);

	if (!epoll_fdinfo_events(epfd, excl[0], &excl_events) ||
	    !epoll_fdinfo_events(epfd, plain[0], &plain_events))
		tst_brk(TBROK, "registered fds missing from /proc/self/fdinfo/%d", epfd);

	/* Whether the kernel keeps EPOLLWAKEUP is not the point here. */
	if ((excl_events & ~EPOLLWAKEUP) != EXCL_OK)
		tst_res(TFAIL, "the exclusive item has events 0x%x, expected 0x%x",
			excl_events & ~EPOLLWAKEUP, EXCL_OK);
	if (tst_variant == 2 && (excl_events & EPOLLWAKEUP))
		tst_res(TFAIL, "EPOLLWAKEUP kept without CAP_BLOCK_SUSPEND");
}

static void cleanup(void)
{
	int *pipes[] = {excl, plain, third};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(pipes); i++) {
		if (pipes[i][0] != -1) {
			SAFE_CLOSE(pipes[i][0]);
			SAFE_CLOSE(pipes[i][1]);
		}
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
	.min_kver = "4.5",
	.bufs = (struct tst_buffers []) {
		{&ev, .size = sizeof(*ev)},
		{},
	},
};
