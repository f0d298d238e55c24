// SPDX-License-Identifier: GPL-2.0
/*
 * shutdown: what a shared one-shot epoll set does today to retire an armed
 * connection, as Apache Qpid Proton's epoll proactor does
 * (pconnection_begin_close(): shutdown(fd, SHUT_RDWR) while current_arm is
 * set, free only after that event came back) and as thread pools that
 * share one set wake the worker owning a connection: force an event, and
 * let the worker that receives it retire the connection.
 *
 * One epoll instance for all workers, EPOLLIN | EPOLLONESHOT, data.ptr =
 * state. Per connection a state word with two flags, changed only by
 * atomic read-modify-write: ARMED (an event is or will be out: set before
 * every ADD and MOD, cleared by the worker that takes the event) and
 * CLOSING (set by the reaper). The reaper sets CLOSING; if ARMED was set it
 * calls shutdown(SHUT_RDWR), which makes the socket readable and hung up,
 * so the one-shot item fires, or fires as soon as the MOD in progress has
 * armed it (shutdown_retire()). The worker that takes an event clears
 * ARMED; if CLOSING was set it deletes, closes and frees. Otherwise it
 * serves the request, then sets ARMED: if CLOSING was set by then, the
 * reaper saw no ARMED and left the connection to it, so it frees instead
 * of re-arming (shutdown_event()). The reaper makes the shutdown() under a
 * per-connection lock, and a worker that frees after a forced event takes
 * that lock once first, so that the descriptor cannot be closed (and its
 * number reused) under the shutdown(); the lock is on the retirement path
 * only. Proton guards the same two facts (current_arm, closing) with its
 * context mutex on every event; this variant keeps the serving path free
 * of locks, as a tuned server would.
 *
 * Assumes nothing of the kernel beyond shutdown() waking the socket's
 * pollers (true of AF_UNIX and TCP). Pays per retirement of an armed
 * connection a shutdown(), an epoll wakeup of some worker and its trip
 * through epoll_wait(); per request two atomic operations.
 */
#include <sys/socket.h>

#include "harness.h"

#define ARMED	1u
#define CLOSING	2u

struct shutdown_conn {
	_Atomic unsigned int state;	/* ARMED, CLOSING */
	struct lock lock;		/* the reaper's shutdown() against the close */
};

static int shutdown_add(struct server *s, struct conn *c)
{
	atomic_store(&conn_priv(c, struct shutdown_conn)->state, ARMED);
	return shared_add(s, c);
}

static void shutdown_retire(struct server *s, struct conn *c)
{
	struct shutdown_conn *p = conn_priv(c, struct shutdown_conn);
	unsigned int old;

	lock_acquire(&p->lock);
	old = atomic_fetch_or(&p->state, CLOSING);
	if ((old & ARMED) && x_shutdown(c->fd, SHUT_RDWR))
		count(s, C_STALE_FD);
	lock_release(&p->lock);
	/* @c is the handler's now: it may be freed already. */
	count(s, (old & ARMED) ? C_FORCED_EVENTS : C_HANDLER_FREES);
}

static int shutdown_event(struct server *s, struct worker *w, uint64_t data)
{
	struct conn *c = (struct conn *)(uintptr_t)data;
	struct shutdown_conn *p;
	unsigned int old;
	int r;

	(void)w;
	if (!conn_live(c)) {	/* handed an event for freed state */
		atomic_fetch_add(&s->uaf_reads, 1);
		return 0;
	}
	p = conn_priv(c, struct shutdown_conn);
	old = atomic_fetch_and(&p->state, ~ARMED);
	if (old & CLOSING) {
		/* The forced event (or one that raced with it). */
		lock_acquire(&p->lock);	/* the reaper's shutdown() is done */
		lock_release(&p->lock);
		conn_free(s, c);
		return 0;
	}
	r = serve_one(s, c);
	if (r < 0)
		return 0;
	old = atomic_fetch_or(&p->state, ARMED);
	if (old & CLOSING) {	/* the reaper saw it unarmed: ours to free */
		conn_free(s, c);
		return r;
	}
	shared_rearm(s, c);
	return r;
}

static void shutdown_check(struct server *s, struct verdict *vd)
{
	EXPECT(vd, atomic_load(&s->ctr[C_FORCED_EVENTS]) > 0,
	       "shutdown: no armed connection was retired by a forced event");
	EXPECT(vd, atomic_load(&s->ctr[C_HANDLER_FREES]) > 0,
	       "shutdown: no connection was retired while a worker handled it");
	EXPECT(vd, atomic_load(&s->ctr[C_FORCED_EVENTS]) +
		   atomic_load(&s->ctr[C_HANDLER_FREES]) == atomic_load(&s->retired),
	       "shutdown: %ld forced events and %ld handler frees for %ld retirements",
	       atomic_load(&s->ctr[C_FORCED_EVENTS]), atomic_load(&s->ctr[C_HANDLER_FREES]),
	       atomic_load(&s->retired));
	EXPECT(vd, atomic_load(&s->ctr[C_REARM_ENOENT]) == 0,
	       "shutdown: %ld re-arms found the item deleted",
	       atomic_load(&s->ctr[C_REARM_ENOENT]));
}

const struct variant variant_shutdown = {
	.name = "shutdown",
	.add = shutdown_add,
	.retire = shutdown_retire,
	.event = shutdown_event,
	.check = shutdown_check,
};
