// SPDX-License-Identifier: GPL-2.0
/*
 * disable: EPOLL_CTL_DISABLE, the operation the RFC proposes.
 *
 * One epoll instance for all workers, EPOLLIN | EPOLLONESHOT, data.ptr =
 * state. The deletion protocol of Documentation/userspace-api/epoll.rst, as
 * written there: a lock and a deleted flag per connection; the reaper calls
 * EPOLL_CTL_DISABLE under the lock (disable_retire()); on 0 no event is or
 * will be out, so it deletes, closes and frees; on EBUSY an event is being
 * handled, so it sets deleted and the worker handling the event frees the
 * state instead of re-arming it (disable_done()). Exactly one of them frees.
 *
 * Assumes a kernel with EPOLL_CTL_DISABLE (else it skips), and every
 * re-arm made under the connection's lock.
 */
#include <errno.h>
#include <stdio.h>

#include "harness.h"

struct disable_conn {
	struct lock lock;	/* deleted, and the re-arm */
	bool deleted;		/* the handler frees it */
};

static int disable_probe(struct server *s, char *why, size_t len)
{
	int ret = probe_disable();

	(void)s;
	if (ret == 0)
		snprintf(why, len, "the kernel lacks EPOLL_CTL_DISABLE");
	return ret;
}

static void disable_retire(struct server *s, struct conn *c)
{
	struct disable_conn *p = conn_priv(c, struct disable_conn);
	bool owner;
	int ret;

	lock_acquire(&p->lock);
	ret = ctl(s->epfd, EPOLL_CTL_DISABLE, c->fd, NULL);
	owner = ret == 0;
	if (!owner)		/* EBUSY: an event is being handled */
		p->deleted = true;
	lock_release(&p->lock);
	if (owner) {
		count(s, C_DISABLE_OK);
		conn_free(s, c);
	} else {
		count(s, ret == -EBUSY ? C_DISABLE_BUSY : C_CTL_ERRORS);
	}
}

static void disable_done(struct server *s, struct conn *c)
{
	struct disable_conn *p = conn_priv(c, struct disable_conn);
	struct epoll_event ev = conn_event(c);
	bool deleted;

	lock_acquire(&p->lock);
	deleted = p->deleted;
	if (!deleted && ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev))
		count(s, C_CTL_ERRORS);
	lock_release(&p->lock);
	if (deleted)
		conn_free(s, c);
}

static int disable_event(struct server *s, struct worker *w, uint64_t data)
{
	struct conn *c = (struct conn *)(uintptr_t)data;
	int r = serve_one(s, c);

	(void)w;
	if (r < 0)
		return 0;
	disable_done(s, c);
	return r;
}

static void disable_check(struct server *s, struct verdict *vd)
{
	EXPECT(vd, atomic_load(&s->ctr[C_DISABLE_OK]) > 0 &&
		   atomic_load(&s->ctr[C_DISABLE_BUSY]) > 0,
	       "DISABLE answered 0 %ld times and EBUSY %ld times: both must occur",
	       atomic_load(&s->ctr[C_DISABLE_OK]), atomic_load(&s->ctr[C_DISABLE_BUSY]));
}

const struct variant variant_disable = {
	.name = "disable",
	.probe = disable_probe,
	.retire = disable_retire,
	.event = disable_event,
	.check = disable_check,
};
