// SPDX-License-Identifier: GPL-2.0
/*
 * userspace (also --retire=qsbr-timeout): quiescent-state-based
 * reclamation whose quiescent point is the top of the worker loop, and
 * nothing else.
 *
 * One epoll instance for all workers, EPOLLIN | EPOLLONESHOT, data.ptr =
 * state. The reaper deletes the item and shuts the socket down at once,
 * and closes and frees once every worker has announced an epoch later than
 * the retirement (checked on the reaper's tick). Workers wait with a
 * --quiesce-ms timeout so that idle ones still announce.
 *
 * Assumes nothing of the kernel; pays with idle wakeups, and with state
 * held up to a timeout and a tick.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "harness.h"

struct userspace_conn {
	uint64_t retire_epoch;	/* the epoch at retirement */
};

struct userspace_worker {
	_Atomic uint64_t epoch;	/* last quiescent point */
};

struct userspace_server {
	_Atomic uint64_t epoch;	/* grace-period counter */
	struct conn *limbo, *limbo_tail;	/* reaper only */
	long limbo_len;
};

static struct userspace_server *us(struct server *s)
{
	return s->priv;
}

static int userspace_setup(struct server *s)
{
	int i;

	s->priv = calloc(1, sizeof(struct userspace_server));
	for (i = 0; i < s->o.workers; i++)
		s->workers[i].priv = calloc(1, sizeof(struct userspace_worker));
	for (i = 0; i < s->o.workers; i++)
		if (!s->workers[i].priv)
			return -ENOMEM;
	return s->priv ? 0 : -ENOMEM;
}

static void userspace_teardown(struct server *s)
{
	int i;

	for (i = 0; i < s->o.workers; i++)
		free(s->workers[i].priv);
	free(s->priv);
}

static void userspace_retire(struct server *s, struct conn *c)
{
	struct userspace_server *u = us(s);

	if (ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL))
		count(s, C_CTL_ERRORS);
	/* The peer sees EOF now; the number stays ours until the close. */
	x_shutdown(c->fd, SHUT_RDWR);
	/*
	 * A worker that announces a later epoch loaded it after the DEL
	 * returned, so its next epoll_wait() cannot hand out @c, and it has
	 * finished the batch that may have held @c.
	 */
	conn_priv(c, struct userspace_conn)->retire_epoch = atomic_fetch_add(&u->epoch, 1);
	c->next = NULL;
	if (u->limbo_tail)
		u->limbo_tail->next = c;
	else
		u->limbo = c;
	u->limbo_tail = c;
	limbo_track(s, ++u->limbo_len);
}

/* Free what every worker has quiesced past. */
static void userspace_tick(struct server *s)
{
	struct userspace_server *u = us(s);
	uint64_t min = UINT64_MAX;
	struct conn *c;
	int i;

	for (i = 0; i < s->o.workers; i++) {
		struct userspace_worker *uw = s->workers[i].priv;
		uint64_t e = atomic_load(&uw->epoch);

		if (e < min)
			min = e;
	}
	while ((c = u->limbo) && conn_priv(c, struct userspace_conn)->retire_epoch < min) {
		u->limbo = c->next;
		if (!u->limbo)
			u->limbo_tail = NULL;
		u->limbo_len--;
		conn_close_release(s, c);
	}
}

/* The quiescent point: this thread holds no connection now. */
static void userspace_before_wait(struct server *s, struct worker *w, int n)
{
	struct userspace_worker *uw = w->priv;

	(void)n;
	atomic_store(&uw->epoch, atomic_load(&us(s)->epoch));
}

static void userspace_worker_exit(struct server *s, struct worker *w)
{
	struct userspace_worker *uw = w->priv;

	(void)s;
	atomic_store(&uw->epoch, UINT64_MAX);
}

const struct variant variant_userspace = {
	.name = "userspace",
	.alias = "qsbr-timeout",
	.setup = userspace_setup,
	.teardown = userspace_teardown,
	.retire = userspace_retire,
	.tick = userspace_tick,
	.event = shared_serve_and_rearm,
	.before_wait = userspace_before_wait,
	.worker_exit = userspace_worker_exit,
	.wait_timeout = true,
};
