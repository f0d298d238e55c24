// SPDX-License-Identifier: GPL-2.0
/*
 * uring, uring-multishot: io_uring poll requests instead of epoll, on the
 * private ring helper uring_ring.h, as first written for this benchmark
 * (kept for comparison with earlier runs; uring_recv.c is the variant an
 * io_uring programmer would write today).
 *
 * uring: one ring per worker, connections partitioned as in perthread;
 * the acceptor hands a new connection to its owner (a locked queue and an
 * eventfd that an IORING_OP_READ in the owner's ring waits on), so every
 * POLL_ADD is submitted by the owner and its completion runs in the
 * owner's context. One-shot IORING_OP_POLL_ADD, user_data = state; a
 * re-arm is an SQE submitted by the next io_uring_enter() that waits; the
 * request is then read and answered with recv() and send(). The SQ is
 * shared by the owner and the reaper under a per-ring lock; only the owner
 * reaps the CQ. The reaper, under the SQ lock, marks the connection
 * retiring and queues IORING_OP_POLL_REMOVE. Its CQE decides who owns the
 * state: 0, the poll was armed and is cancelled, so the thread reaping that
 * CQE closes and frees for the reaper; -ENOENT or -EALREADY, the poll
 * fired, so the worker that got its CQE frees instead of re-arming (it
 * checks retiring under the SQ lock). The cancelled poll's -ECANCELED CQE
 * is dropped without touching the state. Assumes io_uring, and that a
 * one-shot poll whose wakeup won the race with POLL_REMOVE (-EALREADY)
 * completes with a CQE.
 *
 * uring-multishot: as uring with IORING_POLL_ADD_MULTI: the poll stays
 * armed, each CQE with IORING_CQE_F_MORE is served by reading requests
 * until EAGAIN (as with an edge-triggered watch), and the final CQE,
 * without F_MORE, says that no later CQE carries that user_data. The state
 * is freed once both the final poll CQE and the POLL_REMOVE's CQE have
 * been reaped; -EALREADY queues the remove again.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>

#include "harness.h"
#include "uring_ring.h"

/*
 * Ring sizes (a connection has at most three CQEs outstanding: its poll, a
 * POLL_REMOVE and the cancelled poll), and the low bits of user_data
 * (state is 16-aligned).
 */
#define RING_SQ		128
#define RING_CQ		1024
#define UD_POLL		0
#define UD_REMOVE	1
#define UD_KICK		2
#define UD_TAGS		7ULL

struct up_conn {
	bool retiring;			/* under the owner's SQ lock */
	bool remove_inflight;		/* multishot: under the SQ lock */
	bool poll_armed;		/* owner's view: a poll is or will be armed */
};

struct up_worker {
	int kickfd;			/* hand-over eventfd */
	struct lock qlock;
	struct conn *newq;		/* connections from the acceptor */
	struct lock sq_lock;		/* the SQ, and retiring/remove_inflight */
	struct uring ring;
	uint64_t kick_buf;
};

struct up_server {
	bool multi;
	bool ring_dirty[MAX_WORKERS];	/* reaper queued SQEs there */
};

static struct up_worker *upw(struct server *s, int i)
{
	return s->workers[i].priv;
}

static struct up_conn *upc(struct conn *c)
{
	return conn_priv(c, struct up_conn);
}

static bool multi(struct server *s)
{
	return ((struct up_server *)s->priv)->multi;
}

static int x_uring_enter(int fd, unsigned int to_submit, unsigned int min_complete,
			 unsigned int flags)
{
	count_sys(SYS_URING_ENTER);
	return uring_enter(fd, to_submit, min_complete, flags);
}

/*
 * Can the variant run here? 1: yes; 0: no, @why says why (a skip); <0:
 * io_uring misbehaved. Multishot poll is tried for real: an eventfd write
 * must give a CQE that says more will follow.
 */
static int probe(bool multishot, char *why, size_t len)
{
	static const unsigned char ops[] = {
		IORING_OP_POLL_ADD, IORING_OP_POLL_REMOVE, IORING_OP_READ,
	};
	struct io_uring_probe *pr = NULL;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct uring r;
	uint64_t one = 1;
	unsigned int i;
	int ret, efd = -1;

	ret = uring_setup(&r, 8, 0);
	if (ret == -ENOSYS) {
		snprintf(why, len, "the kernel has no io_uring (io_uring_setup: ENOSYS)");
		return 0;
	}
	if (ret == -EPERM) {
		char v[16] = "?";
		FILE *f = fopen("/proc/sys/kernel/io_uring_disabled", "re");

		if (f) {
			if (!fgets(v, sizeof(v), f))
				strcpy(v, "?");
			v[strcspn(v, "\n")] = 0;
			fclose(f);
		}
		snprintf(why, len, "io_uring is disabled (io_uring_setup: EPERM, "
			 "kernel.io_uring_disabled=%s)", v);
		return 0;
	}
	if (ret)
		return ret;
	pr = calloc(1, sizeof(*pr) + 256 * sizeof(pr->ops[0]));
	if (!pr) {
		ret = -ENOMEM;
		goto out;
	}
	ret = uring_register(r.fd, IORING_REGISTER_PROBE, pr, 256);
	if (ret) {
		snprintf(why, len, "io_uring cannot be probed (IORING_REGISTER_PROBE: %s)",
			 strerror(-ret));
		ret = 0;
		goto out;
	}
	for (i = 0; i < sizeof(ops); i++) {
		if (ops[i] > pr->last_op || !(pr->ops[ops[i]].flags & IO_URING_OP_SUPPORTED)) {
			snprintf(why, len, "io_uring lacks opcode %u", ops[i]);
			ret = 0;
			goto out;
		}
	}
	ret = 1;
	if (!multishot)
		goto out;
	efd = eventfd(0, EFD_CLOEXEC);
	sqe = uring_get_sqe(&r);
	if (efd < 0 || !sqe) {
		ret = efd < 0 ? -errno : -EPROTO;
		goto out;
	}
	uring_prep_poll_add(sqe, efd, POLLIN, 1, 42);
	uring_publish(&r);
	if (write(efd, &one, sizeof(one)) != sizeof(one)) {
		ret = -errno;
		goto out;
	}
	ret = uring_enter(r.fd, 1, 1, IORING_ENTER_GETEVENTS);
	cqe = uring_peek_cqe(&r);
	if (ret < 0 || !cqe) {
		ret = ret < 0 ? ret : -EPROTO;
		goto out;
	}
	if (cqe->res < 0 || !(cqe->flags & IORING_CQE_F_MORE)) {
		snprintf(why, len, "no multishot poll (POLL_ADD_MULTI gave res %d, flags %#x)",
			 cqe->res, cqe->flags);
		ret = 0;
	} else {
		ret = 1;
	}
	uring_cqe_seen(&r);
out:
	free(pr);
	if (efd >= 0)
		close(efd);
	uring_exit(&r);	/* cancels the multishot poll, if armed */
	return ret;
}

static int uring_probe(struct server *s, char *why, size_t len)
{
	(void)s;
	return probe(false, why, len);
}

static int uring_multi_probe(struct server *s, char *why, size_t len)
{
	(void)s;
	return probe(true, why, len);
}

static int setup(struct server *s, bool multishot)
{
	struct up_server *u = calloc(1, sizeof(*u));
	struct up_worker *p;
	int i, ret;

	if (!u)
		return -ENOMEM;
	u->multi = multishot;
	s->priv = u;
	for (i = 0; i < s->o.workers; i++) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return -ENOMEM;
		s->workers[i].priv = p;
		p->ring.fd = -1;
		p->kickfd = eventfd(0, EFD_CLOEXEC);
		if (p->kickfd < 0)
			return -errno;
		ret = uring_setup(&p->ring, RING_SQ, RING_CQ);
		if (ret)
			return ret;
		s->ring_bytes += uring_bytes(&p->ring);
	}
	return 0;
}

static int uring_setup_oneshot(struct server *s)
{
	return setup(s, false);
}

static int uring_setup_multi(struct server *s)
{
	return setup(s, true);
}

static void uring_teardown(struct server *s)
{
	struct up_worker *p;
	int i;

	for (i = 0; i < s->o.workers; i++) {
		p = upw(s, i);
		if (!p)
			continue;
		if (p->ring.fd >= 0)
			uring_exit(&p->ring);
		if (p->kickfd >= 0)
			close(p->kickfd);
		free(p);
	}
	free(s->priv);
}

static uint64_t ud_make(const void *p, unsigned int tag)
{
	return (uint64_t)(uintptr_t)p | tag;
}

static void *ud_ptr(uint64_t ud)
{
	return (void *)(uintptr_t)(ud & ~UD_TAGS);
}

/* A free SQE of @p's ring; the caller holds its SQ lock. */
static struct io_uring_sqe *sqe_get(struct server *s, struct up_worker *p)
{
	struct io_uring_sqe *sqe;
	int ret;

	while (!(sqe = uring_get_sqe(&p->ring))) {
		/* Full: submitting makes the kernel consume (copy) the SQEs. */
		ret = x_uring_enter(p->ring.fd, uring_unsubmitted(&p->ring), 0, 0);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
			count(s, C_RING_ERRORS);
		if (ret <= 0)
			sched_yield();
	}
	if (tls_stats)
		bump(&tls_stats->sqes);
	return sqe;
}

/*
 * Owner: arm @c's poll, unless the reaper marked it retiring, in which
 * case no poll of it is armed or will be: free it unless a POLL_REMOVE's
 * CQE is still to come (multishot), whose reaping frees it.
 */
static void arm(struct server *s, struct up_worker *p, struct conn *c)
{
	struct io_uring_sqe *sqe;
	bool free_it = false;

	lock_acquire(&p->sq_lock);
	if (upc(c)->retiring) {
		upc(c)->poll_armed = false;
		free_it = !upc(c)->remove_inflight;
	} else {
		sqe = sqe_get(s, p);
		uring_prep_poll_add(sqe, c->fd, POLLIN, multi(s), ud_make(c, UD_POLL));
		uring_publish(&p->ring);
		upc(c)->poll_armed = true;
	}
	lock_release(&p->sq_lock);
	if (free_it)
		conn_close_release(s, c);
}

/* Owner: wait for the next hand-over (or the end) with a READ. */
static void arm_kick(struct server *s, struct up_worker *p)
{
	struct io_uring_sqe *sqe;

	lock_acquire(&p->sq_lock);
	sqe = sqe_get(s, p);
	uring_prep_read(sqe, p->kickfd, &p->kick_buf, sizeof(p->kick_buf), ud_make(p, UD_KICK));
	uring_publish(&p->ring);
	lock_release(&p->sq_lock);
}

/* Acceptor: the owner submits the first POLL_ADD. */
static int uring_add(struct server *s, struct conn *c)
{
	struct up_worker *p = upw(s, c->owner);
	uint64_t one = 1;
	bool was_empty;

	upc(c)->poll_armed = true;	/* from the reaper's side: it will be */
	lock_acquire(&p->qlock);
	was_empty = !p->newq;
	c->qnext = p->newq;
	p->newq = c;
	lock_release(&p->qlock);
	count(s, C_HANDOFFS);
	if (was_empty && x_write(p->kickfd, &one, sizeof(one)) != sizeof(one))
		count(s, C_RING_ERRORS);
	return 0;
}

static void take_new(struct server *s, struct up_worker *p)
{
	struct conn *c, *next;

	lock_acquire(&p->qlock);
	c = p->newq;
	p->newq = NULL;
	lock_release(&p->qlock);
	for (; c; c = next) {
		next = c->qnext;
		arm(s, p, c);
	}
}

/* Reaper: @c is not touched after the unlock; it may be freed. */
static void uring_retire(struct server *s, struct conn *c)
{
	int owner = c->owner;
	struct up_worker *p = upw(s, owner);
	struct io_uring_sqe *sqe;

	lock_acquire(&p->sq_lock);
	upc(c)->retiring = true;
	if (multi(s))
		upc(c)->remove_inflight = true;
	sqe = sqe_get(s, p);
	uring_prep_poll_remove(sqe, ud_make(c, UD_POLL), ud_make(c, UD_REMOVE));
	uring_publish(&p->ring);
	lock_release(&p->sq_lock);
	((struct up_server *)s->priv)->ring_dirty[owner] = true;
}

/* Reaper, after a tick's retirements: submit the POLL_REMOVEs. */
static void uring_tick(struct server *s)
{
	struct up_server *u = s->priv;
	struct up_worker *p;
	int i, ret;

	for (i = 0; i < s->o.workers; i++) {
		if (!u->ring_dirty[i])
			continue;
		u->ring_dirty[i] = false;
		p = upw(s, i);
		ret = x_uring_enter(p->ring.fd, uring_unsubmitted(&p->ring), 0, 0);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
			count(s, C_RING_ERRORS);
	}
}

/* Multishot owner: the CQE of a POLL_REMOVE of @c. */
static void multi_removed(struct server *s, struct up_worker *p, struct conn *c, int res)
{
	struct io_uring_sqe *sqe;
	bool free_it = false;

	lock_acquire(&p->sq_lock);
	if (res == -EALREADY) {
		/* The poll was posting a CQE and stays armed: ask again. */
		sqe = sqe_get(s, p);
		uring_prep_poll_remove(sqe, ud_make(c, UD_POLL), ud_make(c, UD_REMOVE));
		uring_publish(&p->ring);
		count(s, C_REMOVE_RETRIED);
	} else {
		upc(c)->remove_inflight = false;
		free_it = !upc(c)->poll_armed;
		count(s, res == 0 ? C_REMOVE_CANCELLED : C_REMOVE_LATE);
	}
	lock_release(&p->sq_lock);
	if (free_it)
		conn_close_release(s, c);
}

/* Owner: one CQE. Returns 1 if a request was answered. */
static int one_cqe(struct server *s, struct up_worker *p, uint64_t ud, int res,
		   unsigned int flags, bool *stop)
{
	bool m = multi(s);
	struct conn *c = ud_ptr(ud);
	int r = 0, got = 0;

	switch (ud & UD_TAGS) {
	case UD_KICK:
		if (atomic_load(&s->workers_stop)) {
			*stop = true;
			return 0;
		}
		if (res < 0)
			count(s, C_RING_ERRORS);
		arm_kick(s, p);
		take_new(s, p);
		return 0;
	case UD_REMOVE:
		if (m) {
			multi_removed(s, p, c, res);
		} else if (res == 0) {
			/* Cancelled while armed: ours (for the reaper) to free. */
			count(s, C_REMOVE_CANCELLED);
			conn_close_release(s, c);
		} else {
			/* It fired: the worker with its CQE frees it. @c may be gone. */
			count(s, C_REMOVE_LATE);
		}
		return 0;
	}
	if (res == -ECANCELED) {
		count(s, C_CANCELLED_CQES);
		if (!m)
			return 0;	/* one-shot: the remove's CQE decides; @c may be gone */
	} else if (res < 0) {
		count(s, C_RING_ERRORS);
	} else {
		do {
			r = serve_one(s, c);
			got += r > 0;
		} while (m && r > 0);
		if (r < 0)
			return got;
	}
	if (m && (flags & IORING_CQE_F_MORE))
		return got;
	arm(s, p, c);	/* or free it, when retiring */
	return got;
}

static void *uring_worker(void *arg)
{
	struct worker *w = arg;
	struct server *s = w->s;
	struct up_worker *p = w->priv;
	struct io_uring_cqe *cqe;
	bool stop = false;
	int ret, got;

	tls_stats = &w->st;
	arm_kick(s, p);
	worker_ready(s);
	while (!stop) {
		ret = x_uring_enter(p->ring.fd, uring_unsubmitted(&p->ring), 1,
				    IORING_ENTER_GETEVENTS);
		bump(&w->st.waits);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
			fprintf(stderr, "io_uring_enter: %s\n", strerror(-ret));
			count(s, C_RING_ERRORS);
			break;
		}
		got = 0;
		while ((cqe = uring_peek_cqe(&p->ring))) {
			uint64_t ud = cqe->user_data;
			unsigned int flags = cqe->flags;
			int res = cqe->res;

			uring_cqe_seen(&p->ring);
			got += one_cqe(s, p, ud, res, flags, &stop);
		}
		if (!got)
			bump(&w->st.empty_waits);
	}
	w->cpu_ns = thread_cpu_ns();
	return NULL;
}

static void uring_stop(struct server *s)
{
	uint64_t one = 1;
	int i;

	for (i = 0; i < s->o.workers; i++)
		if (write(upw(s, i)->kickfd, &one, sizeof(one)) != sizeof(one))
			perror("write kickfd");
}

/* No epoll item but the stop descriptor: the rings hold the rest. */
static long uring_items_left(struct server *s)
{
	return shared_items_left(s);
}

static void uring_check(struct server *s, struct verdict *vd)
{
	EXPECT(vd, atomic_load(&s->ctr[C_REMOVE_CANCELLED]) > 0,
	       "POLL_REMOVE never cancelled an armed poll");
}

const struct variant variant_uring = {
	.name = "uring",
	.probe = uring_probe,
	.setup = uring_setup_oneshot,
	.teardown = uring_teardown,
	.add = uring_add,
	.retire = uring_retire,
	.tick = uring_tick,
	.worker = uring_worker,
	.stop = uring_stop,
	.items_left = uring_items_left,
	.check = uring_check,
};

const struct variant variant_uring_multishot = {
	.name = "uring-multishot",
	.probe = uring_multi_probe,
	.setup = uring_setup_multi,
	.teardown = uring_teardown,
	.add = uring_add,
	.retire = uring_retire,
	.tick = uring_tick,
	.worker = uring_worker,
	.stop = uring_stop,
	.items_left = uring_items_left,
	.check = uring_check,
};
