// SPDX-License-Identifier: GPL-2.0
/*
 * perthread: one epoll instance per worker, as libuv, nginx, HAProxy and
 * Seastar partition their sets.
 *
 * Connection i belongs to worker i mod --workers and is registered
 * level-triggered in its instance: its owner is the only thread that sees
 * its events, so it needs neither EPOLLONESHOT nor a re-arm. The reaper
 * hands a retirement to the owner (a locked queue and an eventfd in the
 * owner's instance, written when the queue was empty); after the batch it
 * is handling, the owner deletes, closes and frees.
 *
 * Assumes no load balancing: a connection is served by its owner only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "harness.h"

struct perthread_worker {
	int epfd;			/* its own instance */
	int kickfd;			/* hand-over eventfd */
	struct lock qlock;
	struct conn *retq;		/* retirements from the reaper */
};

static struct perthread_worker *pw(struct server *s, int i)
{
	return s->workers[i].priv;
}

static int perthread_setup(struct server *s)
{
	struct epoll_event stop = { .events = EPOLLIN, .data.u64 = EV_STOP };
	struct epoll_event kick = { .events = EPOLLIN, .data.u64 = EV_KICK };
	struct perthread_worker *p;
	int i;

	for (i = 0; i < s->o.workers; i++) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return -ENOMEM;
		s->workers[i].priv = p;
		p->epfd = epoll_create1(EPOLL_CLOEXEC);
		p->kickfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (p->epfd < 0 || p->kickfd < 0 ||
		    epoll_ctl(p->epfd, EPOLL_CTL_ADD, s->stopfd, &stop) ||
		    epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->kickfd, &kick))
			return -errno;
	}
	return 0;
}

static void perthread_teardown(struct server *s)
{
	struct perthread_worker *p;
	int i;

	for (i = 0; i < s->o.workers; i++) {
		p = pw(s, i);
		if (!p)
			continue;
		if (p->epfd >= 0)
			close(p->epfd);
		if (p->kickfd >= 0)
			close(p->kickfd);
		free(p);
	}
}

static int perthread_add(struct server *s, struct conn *c)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };

	return ctl(pw(s, c->owner)->epfd, EPOLL_CTL_ADD, c->fd, &ev);
}

/* The owner deletes, closes and frees; the reaper only asks. */
static void perthread_retire(struct server *s, struct conn *c)
{
	struct perthread_worker *p = pw(s, c->owner);
	uint64_t one = 1;
	bool was_empty;

	lock_acquire(&p->qlock);
	was_empty = !p->retq;
	c->qnext = p->retq;
	p->retq = c;
	lock_release(&p->qlock);
	count(s, C_HANDOFFS);
	/* An empty queue means the owner has read the eventfd since the last write. */
	if (was_empty && x_write(p->kickfd, &one, sizeof(one)) != sizeof(one))
		count(s, C_CTL_ERRORS);
}

/* The owner, between batches. */
static void perthread_take_retired(struct server *s, struct perthread_worker *p)
{
	struct conn *c, *next;
	uint64_t v;

	/* Reset before taking the queue: a later push writes it again. */
	if (x_read(p->kickfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		count(s, C_CTL_ERRORS);
	lock_acquire(&p->qlock);
	c = p->retq;
	p->retq = NULL;
	lock_release(&p->qlock);
	for (; c; c = next) {
		next = c->qnext;
		if (ctl(p->epfd, EPOLL_CTL_DEL, c->fd, NULL))
			count(s, C_CTL_ERRORS);
		conn_close_release(s, c);
	}
}

static void *perthread_worker(void *arg)
{
	struct worker *w = arg;
	struct server *s = w->s;
	struct perthread_worker *p = w->priv;
	bool stop = false, kicked;
	int n, i, got, r;

	tls_stats = &w->st;
	worker_ready(s);
	while (!stop) {
		n = x_epoll_wait(p->epfd, w->evs, BATCH, -1);
		bump(&w->st.waits);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("epoll_wait");
			break;
		}
		got = 0;
		kicked = false;
		for (i = 0; i < n; i++) {
			uint64_t d = w->evs[i].data.u64;

			if (d == EV_STOP) {
				stop = true;
			} else if (d == EV_KICK) {
				kicked = true;
			} else {
				r = serve_one(s, (struct conn *)(uintptr_t)d);
				got += r > 0;
			}
		}
		/* After the batch: it may hold an event of a connection to free. */
		if (kicked)
			perthread_take_retired(s, p);
		if (!got)
			bump(&w->st.empty_waits);
	}
	w->cpu_ns = thread_cpu_ns();
	return NULL;
}

/* Items left in the instances, the stop and kick descriptors aside. */
static long perthread_items_left(struct server *s)
{
	long n, total = shared_items_left(s);
	int i;

	for (i = 0; i < s->o.workers; i++) {
		n = fdinfo_items(pw(s, i)->epfd);
		total += n < 0 ? n : n - 2;
	}
	return total;
}

static void perthread_check(struct server *s, struct verdict *vd)
{
	EXPECT(vd, atomic_load(&s->ctr[C_HANDOFFS]) == atomic_load(&s->retired),
	       "perthread: %ld hand-overs for %ld retirements",
	       atomic_load(&s->ctr[C_HANDOFFS]), atomic_load(&s->retired));
}

const struct variant variant_perthread = {
	.name = "perthread",
	.setup = perthread_setup,
	.teardown = perthread_teardown,
	.add = perthread_add,
	.retire = perthread_retire,
	.worker = perthread_worker,
	.items_left = perthread_items_left,
	.check = perthread_check,
};
