// SPDX-License-Identifier: GPL-2.0
/*
 * qsbr-self: QSBR without timeouts whose grace periods the workers end
 * themselves; no tick is needed for reclamation.
 *
 * One epoll instance for all workers, EPOLLIN | EPOLLONESHOT, data.ptr =
 * state, epoll_wait(-1), and the extended quiescent state of qsbr.h. The
 * reaper deletes and shuts down at once; after its tick's retirements it
 * starts a grace period for them if none runs (qs_start()): it records
 * for each worker the phase it must reach (its next offline one) and a
 * count of workers still to pass, and passes at once every worker it sees
 * offline with an empty event buffer. Each worker, when it has handled
 * what an epoll_wait() returned and goes offline for the next one, looks
 * whether the running grace period still needs it and, if so, passes it
 * (qs_pass()). Whoever passes last, the reaper or a worker, ends the grace
 * period: it frees the batch and starts the next one. A batch whose
 * workers are all blocked in epoll_wait() is freed by the reaper in the
 * tick that retired it; otherwise by the last worker to finish its batch.
 *
 * The need of a worker is cleared by compare-and-swap, so that the reaper
 * and the worker cannot both count it; a full fence on each side (the
 * worker's count then the need, the reaper's need then the count) makes
 * sure at least one of them sees the other.
 *
 * Assumes what qsbr.h says (the reaper reads the workers' buffers; epoll
 * copies under ep->mtx); pays a full fence per epoll_wait() in each worker.
 */
#include <sys/socket.h>

#include "qsbr.h"

struct qs_server {
	struct lock lock;		/* batches, active, starting a period */
	struct conn *next, *next_tail;	/* retired, waiting for a grace period */
	long next_len;
	struct conn *batch;		/* in the current grace period */
	long batch_len;
	bool active;
	_Atomic int remaining;		/* workers yet to pass the current period */
	_Atomic uint64_t need[MAX_WORKERS];	/* phase each must reach; 0: passed */
	struct conn *retired, *retired_tail;	/* the reaper's, this tick */
	long retired_len;
};

static int qs_setup(struct server *s)
{
	s->priv = calloc(1, sizeof(struct qs_server));
	if (!s->priv)
		return -ENOMEM;
	return qsbr_workers_setup(s);
}

static void qs_teardown(struct server *s)
{
	qsbr_workers_teardown(s);
	free(s->priv);
}

/* Pass worker @i's need @need; true if that ended the grace period. */
static bool qs_claim(struct qs_server *q, int i, uint64_t need)
{
	uint64_t n = need;

	if (!atomic_compare_exchange_strong(&q->need[i], &n, 0))
		return false;		/* the other side passed it */
	return atomic_fetch_sub(&q->remaining, 1) == 1;
}

static void qs_free(struct server *s, struct conn *c)
{
	struct conn *next;

	for (; c; c = next) {
		next = c->next;
		conn_close_release(s, c);
	}
}

/*
 * Under q->lock: start grace periods while connections wait and none runs.
 * Those that every worker had already passed end here; their connections
 * are returned for the caller to free after the unlock.
 */
static struct conn *qs_start(struct server *s, struct qs_server *q)
{
	uint64_t need[MAX_WORKERS];
	struct conn *done = NULL, *tail;
	int i, live;
	bool ended;

	while (!q->active && q->next) {
		q->batch = q->next;
		q->batch_len = q->next_len;
		tail = q->next_tail;
		q->next = q->next_tail = NULL;
		q->next_len = 0;
		q->active = true;
		/*
		 * A worker that has ended needs nothing (0). The count is set
		 * before any need is published: a worker may claim its need
		 * the moment it is stored, and the look below must then not
		 * count that worker again.
		 */
		live = 0;
		for (i = 0; i < s->o.workers; i++) {
			need[i] = qsbr_need(&s->workers[i]);
			live += need[i] != 0;
		}
		atomic_store(&q->remaining, live);
		for (i = 0; i < s->o.workers; i++)
			atomic_store(&q->need[i], need[i]);
		atomic_thread_fence(memory_order_seq_cst);
		ended = !live;
		for (i = 0; i < s->o.workers; i++)
			if (need[i] && qsbr_passed(&s->workers[i], need[i], false) &&
			    qs_claim(q, i, need[i]))
				ended = true;
		if (!ended)
			break;
		tail->next = done;
		done = q->batch;
		q->batch = NULL;
		q->batch_len = 0;
		q->active = false;
		count(s, C_GRACE_PERIODS);
	}
	return done;
}

/* A worker passed last: free the batch, start the next period. */
static void qs_end(struct server *s, struct qs_server *q)
{
	struct conn *done, *more;

	lock_acquire(&q->lock);
	done = q->batch;
	q->batch = NULL;
	q->batch_len = 0;
	q->active = false;
	count(s, C_GRACE_PERIODS);
	count(s, C_GP_BY_WORKER);
	more = qs_start(s, q);
	lock_release(&q->lock);
	qs_free(s, done);
	qs_free(s, more);
}

static void qs_retire(struct server *s, struct conn *c)
{
	struct qs_server *q = s->priv;

	if (ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL))
		count(s, C_CTL_ERRORS);
	x_shutdown(c->fd, SHUT_RDWR);
	c->next = NULL;
	if (q->retired_tail)
		q->retired_tail->next = c;
	else
		q->retired = c;
	q->retired_tail = c;
	q->retired_len++;
}

/* The reaper, after its retirements: hand them to a grace period. */
static void qs_tick(struct server *s)
{
	struct qs_server *q = s->priv;
	struct conn *done;

	if (!q->retired)
		return;
	lock_acquire(&q->lock);
	if (q->next_tail)
		q->next_tail->next = q->retired;
	else
		q->next = q->retired;
	q->next_tail = q->retired_tail;
	q->next_len += q->retired_len;
	q->retired = q->retired_tail = NULL;
	q->retired_len = 0;
	limbo_track(s, q->next_len + q->batch_len);
	done = qs_start(s, q);
	lock_release(&q->lock);
	qs_free(s, done);
}

/* Worker @w, offline: pass the running grace period if it needs @w. */
static void qs_pass(struct server *s, struct worker *w)
{
	struct qs_server *q = s->priv;
	uint64_t n, seq;

	atomic_thread_fence(memory_order_seq_cst);
	n = atomic_load_explicit(&q->need[w->id], memory_order_relaxed);
	if (!n)
		return;
	seq = atomic_load_explicit(&qsbr_w(w)->seq, memory_order_relaxed);
	if (seq >= n && qs_claim(q, w->id, n))
		qs_end(s, q);
}

static void qs_before_wait(struct server *s, struct worker *w, int n)
{
	qsbr_offline(w, n);
	qs_pass(s, w);
}

static void qs_after_wait(struct server *s, struct worker *w)
{
	(void)s;
	qsbr_online(w);
}

static void qs_worker_exit(struct server *s, struct worker *w)
{
	qsbr_worker_exit(s, w);
	qs_pass(s, w);
}

static void qs_check(struct server *s, struct verdict *vd)
{
	EXPECT(vd, atomic_load(&s->ctr[C_GRACE_PERIODS]) > 0, "qsbr-self: no grace period ended");
	EXPECT(vd, atomic_load(&s->ctr[C_GP_BY_WORKER]) > 0,
	       "qsbr-self: no grace period was ended by a worker");
}

const struct variant variant_qsbr_self = {
	.name = "qsbr-self",
	.setup = qs_setup,
	.teardown = qs_teardown,
	.retire = qs_retire,
	.tick = qs_tick,
	.event = shared_serve_and_rearm,
	.before_wait = qs_before_wait,
	.after_wait = qs_after_wait,
	.worker_exit = qs_worker_exit,
	.check = qs_check,
};
