// SPDX-License-Identifier: GPL-2.0
/*
 * qsbr: QSBR without timeouts whose grace periods the reaper ends on its
 * tick.
 *
 * One epoll instance for all workers, EPOLLIN | EPOLLONESHOT, data.ptr =
 * state, epoll_wait(-1). A worker blocked in epoll_wait() is in an extended
 * quiescent state (qsbr.h). The reaper deletes and shuts down at once and
 * frees in batches, one grace period a batch: the period starts when no
 * other runs and needs of each worker its next offline phase, or to be
 * seen offline with an empty event buffer. The reaper checks on every tick
 * (qsbr_tick()), so a batch waits for at least the tick after the one that
 * retired it, plus a tick for each look that finds a worker still online.
 * --unsafe-offline drops the buffer check, to show it matters.
 *
 * Assumes that the reaper can read the workers' buffers, and epoll's copy
 * under ep->mtx (qsbr.h); ends grace periods only as often as the reaper
 * ticks.
 */
#include <sys/socket.h>

#include "qsbr.h"

struct qsbr_server {
	/* Reaper only: the batch in its grace period, the next one. */
	struct conn *batch, *next, *next_tail;
	long batch_len, next_len;
	bool active;
	uint64_t need[MAX_WORKERS];	/* 0: that worker is past it */
};

static int qsbr_setup(struct server *s)
{
	s->priv = calloc(1, sizeof(struct qsbr_server));
	if (!s->priv)
		return -ENOMEM;
	return qsbr_workers_setup(s);
}

static void qsbr_teardown(struct server *s)
{
	qsbr_workers_teardown(s);
	free(s->priv);
}

static void qsbr_retire(struct server *s, struct conn *c)
{
	struct qsbr_server *q = s->priv;

	if (ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL))
		count(s, C_CTL_ERRORS);
	x_shutdown(c->fd, SHUT_RDWR);
	c->next = NULL;
	if (q->next_tail)
		q->next_tail->next = c;
	else
		q->next = c;
	q->next_tail = c;
	q->next_len++;
	limbo_track(s, q->next_len + q->batch_len);
}

/*
 * End the current grace period if every worker is past it and free its
 * batch; start one for the connections retired since. Every tick.
 */
static void qsbr_tick(struct server *s)
{
	struct qsbr_server *q = s->priv;
	struct conn *c;
	int i;

	for (;;) {
		if (!q->active) {
			if (!q->next)
				return;
			q->batch = q->next;
			q->batch_len = q->next_len;
			q->next = q->next_tail = NULL;
			q->next_len = 0;
			/* After every DEL of the batch: the next offline phase. */
			for (i = 0; i < s->o.workers; i++)
				q->need[i] = qsbr_need(&s->workers[i]);
			q->active = true;
		}
		for (i = 0; i < s->o.workers; i++) {
			if (q->need[i] &&
			    !qsbr_passed(&s->workers[i], q->need[i], s->o.unsafe_offline))
				return;
			q->need[i] = 0;
		}
		while ((c = q->batch)) {
			q->batch = c->next;
			conn_close_release(s, c);
		}
		q->batch_len = 0;
		q->active = false;
		count(s, C_GRACE_PERIODS);
	}
}

static void qsbr_before_wait(struct server *s, struct worker *w, int n)
{
	(void)s;
	qsbr_offline(w, n);
}

static void qsbr_after_wait(struct server *s, struct worker *w)
{
	(void)s;
	qsbr_online(w);
}

static void qsbr_check(struct server *s, struct verdict *vd)
{
	EXPECT(vd, atomic_load(&s->ctr[C_GRACE_PERIODS]) > 0, "qsbr: no grace period ended");
}

const struct variant variant_qsbr = {
	.name = "qsbr",
	.setup = qsbr_setup,
	.teardown = qsbr_teardown,
	.retire = qsbr_retire,
	.tick = qsbr_tick,
	.event = shared_serve_and_rearm,
	.before_wait = qsbr_before_wait,
	.after_wait = qsbr_after_wait,
	.worker_exit = qsbr_worker_exit,
	.check = qsbr_check,
};
