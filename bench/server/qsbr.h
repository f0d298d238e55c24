/* SPDX-License-Identifier: GPL-2.0 */
/*
 * qsbr.h - the worker's side of the two QSBR variants without timeouts
 * (qsbr.c: the reaper's tick ends grace periods; qsbr_self.c: the workers
 * do): an extended quiescent state while blocked in epoll_wait().
 *
 * A worker's sequence count is odd while online and even while offline
 * (from before epoll_wait() until it returns). Offline alone is not safe:
 * epoll_wait() copies an item's data into the worker's buffer while the
 * worker is still marked offline. So the worker zeroes the entries it
 * handled before it goes offline, and a worker seen offline counts as
 * quiescent only if its buffer holds no event and its count did not move
 * during the look (qsbr_buffer_empty()). That is safe because epoll
 * copies events to user memory under ep->mtx, which EPOLL_CTL_DEL takes:
 * once DEL has returned, any copy of the item's data that will ever be
 * made is already in some worker's buffer. True of Linux since 2.6, and
 * documented nowhere.
 */
#ifndef EPOLL_SERVER_QSBR_H
#define EPOLL_SERVER_QSBR_H

#include <errno.h>
#include <stdlib.h>

#include "harness.h"

struct qsbr_worker {
	_Atomic uint64_t seq;	/* odd online, even offline */
};

static inline struct qsbr_worker *qsbr_w(struct worker *w)
{
	return w->priv;
}

/*
 * The data word of event @i of @w's buffer, as two 32-bit halves (struct
 * epoll_event is packed: the word is only 4-byte aligned).
 */
static inline uint32_t *qsbr_evs_word(struct worker *w, int i)
{
	return (uint32_t *)((char *)&w->evs[i] + offsetof(struct epoll_event, data));
}

/* Worker: done with the @n events of the batch; going to epoll_wait(). */
static inline void qsbr_offline(struct worker *w, int n)
{
	struct qsbr_worker *q = qsbr_w(w);
	int i;

	for (i = 0; i < n; i++) {
		__atomic_store_n(&qsbr_evs_word(w, i)[0], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&qsbr_evs_word(w, i)[1], 0, __ATOMIC_RELAXED);
	}
	/* Orders the batch's uses of state, and the zeroing, before it. */
	atomic_store_explicit(&q->seq, atomic_load_explicit(&q->seq, memory_order_relaxed) + 1,
			      memory_order_release);
}

/* Worker: epoll_wait() returned. */
static inline void qsbr_online(struct worker *w)
{
	struct qsbr_worker *q = qsbr_w(w);

	atomic_store_explicit(&q->seq, atomic_load_explicit(&q->seq, memory_order_relaxed) + 1,
			      memory_order_release);
	/*
	 * The zeroing of this batch's entries comes after the count in any
	 * reader's view that sees it (the seqlock-style check below).
	 */
	atomic_thread_fence(memory_order_release);
}

/*
 * Another thread: @w was seen offline in phase @seq. True if its buffer
 * holds no event and it was still in that phase after the look: then it
 * holds no connection, and epoll_wait() cannot hand it one deleted before.
 */
static inline bool qsbr_buffer_empty(struct worker *w, uint64_t seq)
{
	int i;

	for (i = 0; i < BATCH; i++)
		if (__atomic_load_n(&qsbr_evs_word(w, i)[0], __ATOMIC_RELAXED) |
		    __atomic_load_n(&qsbr_evs_word(w, i)[1], __ATOMIC_RELAXED))
			return false;
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&qsbr_w(w)->seq, memory_order_relaxed) == seq;
}

/*
 * Another thread: has @w passed the grace period that needs phase @need
 * of it? @unsafe: take offline as quiescent without the buffer check.
 */
static inline bool qsbr_passed(struct worker *w, uint64_t need, bool unsafe)
{
	uint64_t v = atomic_load_explicit(&qsbr_w(w)->seq, memory_order_acquire);

	if (v >= need)
		return true;
	if (v & 1)
		return false;
	return unsafe || qsbr_buffer_empty(w, v);
}

/* The phase a grace period beginning now needs of @w: its next offline one. */
static inline uint64_t qsbr_need(struct worker *w)
{
	uint64_t v = atomic_load_explicit(&qsbr_w(w)->seq, memory_order_acquire);

	return v + ((v & 1) ? 1 : 2);
}

/* Each worker's count, odd: online until its first epoll_wait(). */
static inline int qsbr_workers_setup(struct server *s)
{
	int i;

	for (i = 0; i < s->o.workers; i++) {
		s->workers[i].priv = calloc(1, sizeof(struct qsbr_worker));
		if (!s->workers[i].priv)
			return -ENOMEM;
		atomic_store(&qsbr_w(&s->workers[i])->seq, 1);
	}
	return 0;
}

static inline void qsbr_workers_teardown(struct server *s)
{
	int i;

	for (i = 0; i < s->o.workers; i++)
		free(s->workers[i].priv);
}

/* Worker, as it ends: offline for good. */
static inline void qsbr_worker_exit(struct server *s, struct worker *w)
{
	(void)s;
	atomic_store_explicit(&qsbr_w(w)->seq, UINT64_MAX - 1, memory_order_release);
}

#endif
