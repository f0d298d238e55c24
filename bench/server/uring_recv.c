// SPDX-License-Identifier: GPL-2.0
/*
 * uring-recv: io_uring as an io_uring programmer writes a server today,
 * with liburing: a ring per worker, owned by it alone
 * (IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN), connections
 * partitioned as in perthread, a multishot recv per connection that takes
 * its buffers from a ring of provided buffers, the answers sent with
 * IORING_OP_SEND, and one io_uring_enter() a loop that submits and waits.
 * No epoll, no recv() or send() call, no lock on the serving path.
 *
 * Other threads talk to a worker's ring with IORING_OP_MSG_RING (its CQE
 * skipped on success): the acceptor (a client thread, with a small ring of
 * its own) posts "new connection", the reaper (a ring of its own, one
 * submit a tick) posts "retire". Only the owner ever touches a
 * connection's io_uring requests, so ownership is decided in one thread:
 * on "retire" it cancels the multishot recv (IORING_OP_ASYNC_CANCEL) and
 * frees the state once the recv's final CQE (without IORING_CQE_F_MORE)
 * and the CQEs of the sends in flight have all been reaped. The cancel's
 * own CQE is skipped on success and names no state on failure.
 *
 * Assumes io_uring with DEFER_TASKRUN (6.1), multishot recv and ring
 * provided buffers (6.0, 5.19), MSG_RING (5.18); probed for real, else it
 * skips. No load balancing, as perthread. liburing 2.3 (Debian 12) has
 * every helper used here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness.h"

#define RING_SQ		256
#define RING_CQ		4096
#define NBUFS		256		/* provided buffers per worker, a request each */
#define BGID		1
/* The low bits of user_data (state is 16-aligned). */
#define UD_RECV		0
#define UD_SEND		1
#define UD_NEW		2
#define UD_RETIRE	3
#define UD_CANCEL	4
#define UD_STOP		5
#define UD_TAGS		7ULL

struct ur_conn {
	struct msg resp;		/* the answer being sent */
	bool added;			/* "new connection" seen by the owner */
	bool recv_armed;		/* a multishot recv whose final CQE is to come */
	bool retiring;			/* "retire" seen by the owner */
	uint8_t sends;			/* sends whose CQE is to come */
};

struct ur_worker {
	struct io_uring ring;
	bool ring_ok;
	struct io_uring_buf_ring *br;
	struct msg *bufs;
};

/* A client thread's ring, for its MSG_RINGs as the acceptor. */
struct acc_ring {
	struct io_uring ring;
	struct acc_ring *next;
};

struct ur_server {
	struct io_uring reaper_ring;	/* the reaper's, then main's to stop */
	bool reaper_ok;
	struct lock acc_lock;
	struct acc_ring *accs;
};

static __thread struct acc_ring *tls_acc;

static struct ur_worker *urw(struct server *s, int i)
{
	return s->workers[i].priv;
}

static struct ur_conn *urc(struct conn *c)
{
	return conn_priv(c, struct ur_conn);
}

static uint64_t ud_make(const void *p, unsigned int tag)
{
	return (uint64_t)(uintptr_t)p | tag;
}

static struct conn *ud_conn(uint64_t ud)
{
	return (struct conn *)(uintptr_t)(ud & ~UD_TAGS);
}

/* io_uring_submit(), counted when it enters the kernel (when SQEs are ready). */
static int x_submit(struct io_uring *ring)
{
	if (!io_uring_sq_ready(ring))
		return 0;
	count_sys(SYS_URING_ENTER);
	return io_uring_submit(ring);
}

/* A free SQE of @ring; submits what is queued when the SQ is full. */
static struct io_uring_sqe *sqe_get(struct server *s, struct io_uring *ring)
{
	struct io_uring_sqe *sqe;
	int ret;

	while (!(sqe = io_uring_get_sqe(ring))) {
		ret = x_submit(ring);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
			count(s, C_RING_ERRORS);
	}
	if (tls_stats)
		bump(&tls_stats->sqes);
	return sqe;
}

/* Post @ud to the ring @fd from @ring (MSG_RING, no CQE on success). */
static void post(struct server *s, struct io_uring *ring, int fd, uint64_t ud)
{
	struct io_uring_sqe *sqe = sqe_get(s, ring);

	io_uring_prep_msg_ring(sqe, fd, 0, ud, 0);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	sqe->user_data = ud;
}

/* CQEs on a ring that only posts: each is a failed MSG_RING. */
static void posts_failed(struct server *s, struct io_uring *ring)
{
	struct io_uring_cqe *cqe;
	unsigned int head, n = 0;

	io_uring_for_each_cqe(ring, head, cqe) {
		fprintf(stderr, "uring-recv: MSG_RING failed: %s\n", strerror(-cqe->res));
		count(s, C_RING_ERRORS);
		n++;
	}
	io_uring_cq_advance(ring, n);
}

static int ring_flags_init(struct io_uring *ring, unsigned int entries, unsigned int flags,
			   unsigned int cq)
{
	struct io_uring_params p = { .flags = flags };

	if (cq) {
		p.flags |= IORING_SETUP_CQSIZE;
		p.cq_entries = cq;
	}
	return io_uring_queue_init_params(entries, ring, &p);
}

/* The ring of provided buffers of @w's ring; 0 or -errno. */
static int bufs_setup(struct ur_worker *w)
{
	struct io_uring_buf_reg reg = { .ring_entries = NBUFS, .bgid = BGID };
	void *mem;
	int i, ret;

	if (posix_memalign(&mem, 4096, NBUFS * sizeof(struct io_uring_buf)))
		return -ENOMEM;
	w->br = mem;
	w->bufs = calloc(NBUFS, sizeof(*w->bufs));
	if (!w->bufs)
		return -ENOMEM;
	reg.ring_addr = (uint64_t)(uintptr_t)w->br;
	ret = io_uring_register_buf_ring(&w->ring, &reg, 0);
	if (ret)
		return ret;
	io_uring_buf_ring_init(w->br);
	for (i = 0; i < NBUFS; i++)
		io_uring_buf_ring_add(w->br, &w->bufs[i], sizeof(struct msg), i,
				      io_uring_buf_ring_mask(NBUFS), i);
	io_uring_buf_ring_advance(w->br, NBUFS);
	return 0;
}

/*
 * Can the variant run here? Everything it uses is tried once for real: a
 * worker-style ring, its provided buffers, a multishot recv that gets a
 * message with a buffer and says more will follow, and a MSG_RING into it
 * from another ring.
 */
static int ur_probe(struct server *s, char *why, size_t len)
{
	static const unsigned char ops[] = {
		IORING_OP_RECV, IORING_OP_SEND, IORING_OP_MSG_RING, IORING_OP_ASYNC_CANCEL,
	};
	struct ur_worker w = { 0 };
	struct io_uring other;
	struct io_uring_probe *pr;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct msg m = { .seq = 42 };
	bool other_ok = false;
	int ret, sv[2] = { -1, -1 };
	unsigned int i;

	(void)s;
	ret = ring_flags_init(&w.ring, 8, IORING_SETUP_SINGLE_ISSUER |
			      IORING_SETUP_DEFER_TASKRUN, 0);
	if (ret == -ENOSYS) {
		snprintf(why, len, "the kernel has no io_uring (io_uring_setup: ENOSYS)");
		return 0;
	}
	if (ret == -EPERM) {
		snprintf(why, len, "io_uring is disabled (io_uring_setup: EPERM, "
			 "see kernel.io_uring_disabled)");
		return 0;
	}
	if (ret == -EINVAL) {
		snprintf(why, len, "no IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN (EINVAL)");
		return 0;
	}
	if (ret)
		return ret;
	pr = io_uring_get_probe_ring(&w.ring);
	if (!pr) {
		snprintf(why, len, "io_uring cannot be probed (IORING_REGISTER_PROBE)");
		ret = 0;
		goto out;
	}
	for (i = 0; i < sizeof(ops); i++) {
		if (!io_uring_opcode_supported(pr, ops[i])) {
			snprintf(why, len, "io_uring lacks opcode %u", ops[i]);
			ret = 0;
			break;
		}
	}
	io_uring_free_probe(pr);
	if (i < sizeof(ops))
		goto out;
	ret = bufs_setup(&w);
	if (ret == -EINVAL) {
		snprintf(why, len, "no ring-provided buffers (IORING_REGISTER_PBUF_RING: EINVAL)");
		ret = 0;
		goto out;
	}
	if (ret)
		goto out;
	ret = ring_flags_init(&other, 8, 0, 0);
	if (ret)
		goto out;
	other_ok = true;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) ||
	    send(sv[0], &m, sizeof(m), 0) != sizeof(m)) {
		ret = -errno;
		goto out;
	}
	sqe = io_uring_get_sqe(&w.ring);
	io_uring_prep_recv_multishot(sqe, sv[1], NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BGID;
	sqe->user_data = 1;
	sqe = io_uring_get_sqe(&other);
	io_uring_prep_msg_ring(sqe, w.ring.ring_fd, 0, 2, 0);
	ret = io_uring_submit(&other);
	if (ret != 1) {
		snprintf(why, len, "IORING_OP_MSG_RING into a DEFER_TASKRUN ring failed (%d)", ret);
		ret = ret < 0 ? ret : -EPROTO;
		goto out;
	}
	ret = io_uring_submit_and_wait(&w.ring, 2);
	if (ret < 0)
		goto out;
	ret = 1;
	for (i = 0; i < 2; i++) {
		if (io_uring_peek_cqe(&w.ring, &cqe)) {
			snprintf(why, len, "a probe CQE is missing");
			ret = -EPROTO;
			break;
		}
		if (cqe->user_data == 1 && (cqe->res != sizeof(m) ||
					    !(cqe->flags & IORING_CQE_F_MORE) ||
					    !(cqe->flags & IORING_CQE_F_BUFFER))) {
			snprintf(why, len, "no multishot recv with provided buffers "
				 "(res %d, flags %#x)", cqe->res, cqe->flags);
			ret = 0;
		}
		io_uring_cqe_seen(&w.ring, cqe);
	}
out:
	if (sv[0] >= 0) {
		close(sv[0]);
		close(sv[1]);
	}
	if (other_ok)
		io_uring_queue_exit(&other);
	io_uring_queue_exit(&w.ring);	/* cancels the recv */
	free(w.br);
	free(w.bufs);
	return ret;
}

static size_t ring_bytes(const struct io_uring *ring)
{
	return ring->sq.ring_sz + ring->cq.ring_sz +
	       ring->sq.ring_entries * sizeof(struct io_uring_sqe);
}

/*
 * The workers' rings are made here, disabled, so that the worker that
 * enables one becomes its single issuer; their buffers are registered here.
 */
static int ur_setup(struct server *s)
{
	struct ur_server *u = calloc(1, sizeof(*u));
	struct ur_worker *w;
	int i, ret;

	if (!u)
		return -ENOMEM;
	s->priv = u;
	for (i = 0; i < s->o.workers; i++) {
		w = calloc(1, sizeof(*w));
		if (!w)
			return -ENOMEM;
		s->workers[i].priv = w;
		ret = ring_flags_init(&w->ring, RING_SQ, IORING_SETUP_SINGLE_ISSUER |
				      IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_R_DISABLED,
				      RING_CQ);
		if (ret)
			return ret;
		w->ring_ok = true;
		ret = bufs_setup(w);
		if (ret)
			return ret;
		s->ring_bytes += ring_bytes(&w->ring) + 4096 + NBUFS * sizeof(struct msg);
	}
	ret = ring_flags_init(&u->reaper_ring, RING_SQ, 0, 0);
	if (ret)
		return ret;
	u->reaper_ok = true;
	s->ring_bytes += ring_bytes(&u->reaper_ring);
	return 0;
}

static void ur_teardown(struct server *s)
{
	struct ur_server *u = s->priv;
	struct acc_ring *a, *next;
	struct ur_worker *w;
	int i;

	for (i = 0; i < s->o.workers; i++) {
		w = urw(s, i);
		if (!w)
			continue;
		if (w->ring_ok)
			io_uring_queue_exit(&w->ring);
		free(w->br);
		free(w->bufs);
		free(w);
	}
	if (!u)
		return;
	if (u->reaper_ok)
		io_uring_queue_exit(&u->reaper_ring);
	for (a = u->accs; a; a = next) {
		next = a->next;
		io_uring_queue_exit(&a->ring);
		free(a);
	}
	free(u);
}

/* Acceptor: hand @c to its owner; the owner arms its recv. */
static int ur_add(struct server *s, struct conn *c)
{
	struct ur_server *u = s->priv;
	int ret;

	if (!tls_acc) {
		tls_acc = calloc(1, sizeof(*tls_acc));
		if (!tls_acc)
			return -ENOMEM;
		ret = ring_flags_init(&tls_acc->ring, 8, 0, 0);
		if (ret) {
			free(tls_acc);
			tls_acc = NULL;
			return ret;
		}
		lock_acquire(&u->acc_lock);
		tls_acc->next = u->accs;
		u->accs = tls_acc;
		lock_release(&u->acc_lock);
	}
	count(s, C_HANDOFFS);
	post(s, &tls_acc->ring, urw(s, c->owner)->ring.ring_fd, ud_make(c, UD_NEW));
	ret = x_submit(&tls_acc->ring);
	posts_failed(s, &tls_acc->ring);
	return ret == 1 ? 0 : ret < 0 ? ret : -EIO;
}

/* Reaper: ask the owner to retire @c; the tick submits. */
static void ur_retire(struct server *s, struct conn *c)
{
	struct ur_server *u = s->priv;

	post(s, &u->reaper_ring, urw(s, c->owner)->ring.ring_fd, ud_make(c, UD_RETIRE));
}

static void ur_tick(struct server *s)
{
	struct ur_server *u = s->priv;
	int ret = x_submit(&u->reaper_ring);

	if (ret < 0)
		count(s, C_RING_ERRORS);
	posts_failed(s, &u->reaper_ring);
}

static void arm_recv(struct server *s, struct ur_worker *w, struct conn *c)
{
	struct io_uring_sqe *sqe = sqe_get(s, &w->ring);

	io_uring_prep_recv_multishot(sqe, c->fd, NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BGID;
	sqe->user_data = ud_make(c, UD_RECV);
	urc(c)->recv_armed = true;
}

/* Owner: free @c once retiring and nothing of it is in flight. */
static void maybe_free(struct server *s, struct conn *c)
{
	struct ur_conn *p = urc(c);

	if (p->retiring && !p->recv_armed && !p->sends)
		conn_close_release(s, c);
}

static void buf_recycle(struct ur_worker *w, unsigned int bid)
{
	io_uring_buf_ring_add(w->br, &w->bufs[bid], sizeof(struct msg), bid,
			      io_uring_buf_ring_mask(NBUFS), 0);
	io_uring_buf_ring_advance(w->br, 1);
}

/* Owner: a CQE of @c's multishot recv. 1 if a request was answered. */
static int on_recv(struct server *s, struct ur_worker *w, struct conn *c, int res,
		   unsigned int flags)
{
	struct ur_conn *p = urc(c);
	struct io_uring_sqe *sqe;
	struct msg req;
	int r = 0;

	if (!(flags & IORING_CQE_F_MORE))
		p->recv_armed = false;	/* the final one */
	if (flags & IORING_CQE_F_BUFFER) {
		unsigned int bid = flags >> IORING_CQE_BUFFER_SHIFT;

		memcpy(&req, &w->bufs[bid], sizeof(req));
		buf_recycle(w, bid);
		if (res == sizeof(req) && !p->retiring) {
			r = serve_msg(s, c, &req, &p->resp);
			if (r < 0)
				return 0;
			sqe = sqe_get(s, &w->ring);
			io_uring_prep_send(sqe, c->fd, &p->resp, sizeof(p->resp), MSG_NOSIGNAL);
			sqe->user_data = ud_make(c, UD_SEND);
			p->sends++;
		}
	} else if (res == 0) {
		atomic_store(&c->eof, true);	/* the peer is gone: the reaper retires it */
	} else if (res == -ECANCELED) {
		count(s, C_REMOVE_CANCELLED);
	} else if (res != -ENOBUFS && res != -ECONNRESET) {
		count(s, C_RING_ERRORS);
	}
	if (p->recv_armed)
		return r;
	if (p->retiring) {
		maybe_free(s, c);
	} else if (res != 0) {
		count(s, C_REARMS);
		arm_recv(s, w, c);
	}
	return r;
}

/* Owner: one CQE. 1 if a request was answered. */
static int on_cqe(struct server *s, struct ur_worker *w, uint64_t ud, int res,
		  unsigned int flags, bool *stop)
{
	struct conn *c = ud_conn(ud);
	struct ur_conn *p;

	switch (ud & UD_TAGS) {
	case UD_STOP:
		*stop = true;
		return 0;
	case UD_CANCEL:
		/* Failed: the recv had ended or was ending; @c may be gone. */
		count(s, C_REMOVE_LATE);
		return 0;
	}
	if (!conn_live(c)) {	/* a CQE for freed state */
		atomic_fetch_add(&s->uaf_reads, 1);
		return 0;
	}
	p = urc(c);
	switch (ud & UD_TAGS) {
	case UD_NEW:
		p->added = true;
		if (p->retiring)
			maybe_free(s, c);
		else
			arm_recv(s, w, c);
		return 0;
	case UD_RETIRE:
		p->retiring = true;
		if (p->recv_armed) {
			struct io_uring_sqe *sqe = sqe_get(s, &w->ring);

			io_uring_prep_cancel64(sqe, ud_make(c, UD_RECV), 0);
			sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
			sqe->user_data = ud_make(c, UD_CANCEL);
		} else if (p->added) {
			maybe_free(s, c);
		}
		return 0;
	case UD_SEND:
		p->sends--;
		if (res < 0 && res != -EPIPE && res != -ECONNRESET)
			count(s, C_STALE_FD);
		maybe_free(s, c);
		return 0;
	case UD_RECV:
		return on_recv(s, w, c, res, flags);
	}
	count(s, C_RING_ERRORS);
	return 0;
}

/*
 * IORING_REGISTER_ENABLE_RINGS, made by the thread that is to be the
 * ring's single issuer. On the system call: Debian 12's shared liburing
 * does not export io_uring_enable_rings().
 */
static int enable_ring(struct io_uring *ring)
{
	return syscall(__NR_io_uring_register, ring->ring_fd, IORING_REGISTER_ENABLE_RINGS,
		       NULL, 0) ? -errno : 0;
}

static void *ur_worker(void *arg)
{
	struct worker *wk = arg;
	struct server *s = wk->s;
	struct ur_worker *w = wk->priv;
	struct io_uring_cqe *cqe;
	unsigned int head, n;
	bool stop = false;
	int ret, got;

	tls_stats = &wk->st;
	ret = enable_ring(&w->ring);
	if (ret) {
		fprintf(stderr, "uring-recv: enabling the ring: %s\n", strerror(-ret));
		count(s, C_RING_ERRORS);
	}
	worker_ready(s);
	while (!stop && !ret) {
		count_sys(SYS_URING_ENTER);
		ret = io_uring_submit_and_wait(&w->ring, 1);
		bump(&wk->st.waits);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
			fprintf(stderr, "io_uring_enter: %s\n", strerror(-ret));
			count(s, C_RING_ERRORS);
			break;
		}
		ret = 0;
		got = 0;
		n = 0;
		io_uring_for_each_cqe(&w->ring, head, cqe) {
			got += on_cqe(s, w, cqe->user_data, cqe->res, cqe->flags, &stop);
			n++;
		}
		io_uring_cq_advance(&w->ring, n);
		if (!got)
			bump(&wk->st.empty_waits);
	}
	wk->cpu_ns = thread_cpu_ns();
	return NULL;
}

/* Main, after the reaper ended: a "stop" to each worker on the reaper's ring. */
static void ur_stop(struct server *s)
{
	struct ur_server *u = s->priv;
	int i;

	for (i = 0; i < s->o.workers; i++)
		post(s, &u->reaper_ring, urw(s, i)->ring.ring_fd, UD_STOP);
	if (io_uring_submit(&u->reaper_ring) != s->o.workers)
		perror("uring-recv: stopping the workers");
}

static long ur_items_left(struct server *s)
{
	return shared_items_left(s);
}

static void ur_check(struct server *s, struct verdict *vd)
{
	EXPECT(vd, atomic_load(&s->ctr[C_REMOVE_CANCELLED]) > 0,
	       "uring-recv: no armed recv was cancelled");
	EXPECT(vd, atomic_load(&s->ctr[C_HANDOFFS]) == atomic_load(&s->created),
	       "uring-recv: %ld hand-overs for %ld connections",
	       atomic_load(&s->ctr[C_HANDOFFS]), atomic_load(&s->created));
}

const struct variant variant_uring_recv = {
	.name = "uring-recv",
	.probe = ur_probe,
	.setup = ur_setup,
	.teardown = ur_teardown,
	.add = ur_add,
	.retire = ur_retire,
	.tick = ur_tick,
	.worker = ur_worker,
	.stop = ur_stop,
	.items_left = ur_items_left,
	.check = ur_check,
};
