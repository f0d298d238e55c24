// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Copyright (c) 2026 Seed 7fb0762e maintainers <maintainers@users.noreply.a-seed-7fb0762e.example>
 */

/*\
 * Verify that :manpage:`epoll_ctl(2)` fails with ELOOP when EPOLL_CTL_ADD
 * would make a nesting depth of epoll instances greater than 5.
 *
 * [Algorithm]
 *
 * - Create six epoll instances.
 * - Add each to the next one, from the bottom up: the chains of two to
 *   five instances are made.
 * - The ADD that would make the chain six instances deep fails with ELOOP,
 *   and the sixth instance watches nothing.
 *
 * The test runs three times: with EPOLLIN, with EPOLLIN | EPOLLWAKEUP, and
 * with EPOLLIN | EPOLLWAKEUP and CAP_BLOCK_SUSPEND dropped.
 */

#include <sys/epoll.h>

#include "tst_test.h"
#include "tst_epoll.h"
#include "tst_capability.h"
#include "lapi/capability.h"
#include "epoll_ctl_fdinfo.h"

#define NINST 6

static int ep[NINST] = {-1, -1, -1, -1, -1, -1};
static uint32_t wakeup;

static void run(void)
{
	struct epoll_event ev = {.events = EPOLLIN | wakeup};
	uint32_t events;
	int i;

	for (i = 0; i < NINST; i++)
		ep[i] = SAFE_EPOLL_CREATE1(0);

	for (i = 1; i < NINST - 1; i++) {
		TST_EXP_PASS_SILENT(epoll_ctl(ep[i], EPOLL_CTL_ADD, ep[i - 1], &ev),
				    "epoll_ctl() making a chain %d instances deep", i + 1);
		if (!TST_PASS)
			goto out;
	}
	tst_res(TPASS, "a chain of %d instances was made", NINST - 1);

	TST_EXP_FAIL(epoll_ctl(ep[NINST - 1], EPOLL_CTL_ADD, ep[NINST - 2], &ev),
		     ELOOP, "epoll_ctl() making a chain %d instances deep", NINST);

	if (epoll_fdinfo_events(ep[NINST - 1], ep[NINST - 2], &events))
		tst_res(TFAIL, "the failed ADD registered the instance");

out:
	for (i = 0; i < NINST; i++)
		SAFE_CLOSE(ep[i]);
}

static void setup(void)
{
	struct tst_cap drop = TST_CAP(TST_CAP_DROP, CAP_BLOCK_SUSPEND);

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
}

static void cleanup(void)
{
	int i;

	for (i = 0; i < NINST; i++) {
		if (ep[i] != -1)
			SAFE_CLOSE(ep[i]);
	}
}

static struct tst_test test = {
	.test_all = run,
	.test_variants = 3,
	.setup = setup,
	.cleanup = cleanup,
};
