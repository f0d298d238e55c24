// SPDX-License-Identifier: GPL-2.0
/*
 * naive: EPOLL_CTL_DEL, close and free at once: unsafe. A worker handed the
 * event a moment earlier uses freed state; this control shows what the
 * other variants prevent, and that the detector sees it (--check passes
 * only if use-after-free was seen).
 */
#include <errno.h>

#include "harness.h"

static void naive_retire(struct server *s, struct conn *c)
{
	conn_free(s, c);
}

static int naive_event(struct server *s, struct worker *w, uint64_t data)
{
	struct conn *c = (struct conn *)(uintptr_t)data;
	struct epoll_event ev;
	int r = serve_one(s, c), ret;

	(void)w;
	if (r < 0)
		return 0;
	ev = conn_event(c);
	ret = ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev);
	/* Deleted, or even closed, by the reaper meanwhile: expected here. */
	if (ret == -ENOENT || ret == -EBADF)
		count(s, C_REARM_ENOENT);
	else if (ret)
		count(s, C_CTL_ERRORS);
	return r;
}

const struct variant variant_naive = {
	.name = "naive",
	.retire = naive_retire,
	.event = naive_event,
	.expect_uaf = true,
};
