// SPDX-License-Identifier: GPL-2.0
/*
 * epoll_server - a multithreaded server whose reaper retires connections
 * while worker threads may be handling them, in eight ways on one workload.
 *
 * The workload. --workers threads serve connections. A connection is an
 * AF_UNIX SOCK_SEQPACKET socketpair whose server end is watched for input,
 * with its state (struct conn, with a 384-byte buffer the request works on)
 * reachable from the event. A worker that gets an event reads one request,
 * answers it and re-arms the watch. --clients threads keep a bounded load,
 * one connection each: send a request, wait for the answer, sometimes pause
 * past the idle limit. They also play the acceptor: conn_new() is the
 * server's accept, run in the client's thread. A reaper thread, every
 * --tick-us, retires connections that are idle, have served their quota or
 * are too old, while workers may be handling them. After the load an idle
 * phase keeps the connections open and unused and counts the workers'
 * wakeups; then the drain retires everything and the workers end.
 *
 * The variants (--retire=), and what each assumes of the program:
 *
 *   disable    One epoll instance for all workers, EPOLLIN | EPOLLONESHOT,
 *              data.ptr = state. The deletion protocol of
 *              Documentation/userspace-api/epoll.rst: a lock and a deleted
 *              flag per connection; the reaper calls EPOLL_CTL_DISABLE
 *              under the lock; on 0 it deletes, closes and frees, on EBUSY
 *              it sets deleted and the worker handling the event frees the
 *              state instead of re-arming it. Assumes a kernel with
 *              EPOLL_CTL_DISABLE and every re-arm made under the lock.
 *   userspace  (also --retire=qsbr-timeout) The same instance and items;
 *              quiescent-state-based reclamation whose quiescent point is
 *              the top of the worker loop. The reaper deletes the item and
 *              shuts the socket down at once, closes and frees once every
 *              worker has passed the point since; workers wait with a
 *              --quiesce-ms timeout so that idle ones still pass it.
 *              Assumes nothing of the kernel; pays with idle wakeups.
 *   naive      EPOLL_CTL_DEL, close and free at once: unsafe. A worker
 *              handed the event a moment earlier uses freed state; this
 *              control shows what the others prevent.
 *   gen        One instance, EPOLLONESHOT; data.u64 = slot index | the
 *              slot's generation << 32. Slots are small and type-stable
 *              (allocated in chunks, reused through a free list, never
 *              freed during the run), each with a lock, a generation, a
 *              reference count, the descriptor and a pointer to the state.
 *              A worker locks the slot, drops the event if the generation
 *              differs (the connection was retired after the kernel handed
 *              the event out), else takes a reference and unlocks; it
 *              serves the request and re-arms, then drops the reference.
 *              The reaper, under the lock, bumps the generation; if no
 *              reference is held it deletes, closes and frees the state at
 *              once, else the last reference's holder does. Assumes the
 *              state and descriptor are used only under a reference taken
 *              through the slot, and slot memory is never returned, only
 *              reused.
 *   perthread  One epoll instance per worker; connection i belongs to
 *              worker i mod --workers and is registered level-triggered in
 *              its instance: its owner is the only thread that sees its
 *              events, so it needs neither EPOLLONESHOT nor a re-arm. The
 *              reaper hands a retirement to the owner (a locked queue and
 *              an eventfd in the owner's instance, written when the queue
 *              was empty); after the batch it is handling, the owner
 *              deletes, closes and frees. Assumes no load balancing: a
 *              connection is served by its owner only.
 *   qsbr       One instance, EPOLLONESHOT; QSBR with an extended quiescent
 *              state while blocked in epoll_wait(), so no timeout. A
 *              worker's sequence count is odd while online and even while
 *              offline (from before epoll_wait() until it returns). The
 *              reaper deletes and shuts down at once and frees in batches,
 *              one grace period a batch: a worker is past it once its count
 *              reaches the offline phase after the one the batch began in,
 *              or once it is seen offline with an empty event buffer.
 *              The buffer check is what makes "offline" safe: epoll_wait()
 *              copies the pointer out while the worker is still marked
 *              offline. The worker zeroes the entries it handled before it
 *              goes offline, and epoll copies events under the mutex that
 *              EPOLL_CTL_DEL takes, so once DEL has returned any copy of
 *              the item's data is in some buffer for the reaper to see.
 *              Assumes that the reaper can read the workers' buffers, and
 *              epoll's copy under ep->mtx (true since Linux 2.6, but not
 *              documented).
 *              --unsafe-offline drops the buffer check, to show it matters.
 *   uring      io_uring instead of epoll. One ring per worker, connections
 *              partitioned as in perthread; the acceptor hands a new
 *              connection to its owner (a locked queue and an eventfd that
 *              an IORING_OP_READ in the owner's ring waits on), so every
 *              POLL_ADD is submitted by the owner and its completion runs
 *              in the owner's context. One-shot IORING_OP_POLL_ADD,
 *              user_data = state; a re-arm is an SQE submitted by the next
 *              io_uring_enter() that waits. The SQ is shared by the owner
 *              and the reaper under a per-ring lock; only the owner reaps
 *              the CQ. The reaper, under the SQ lock, marks the connection
 *              retiring and queues IORING_OP_POLL_REMOVE. Its CQE decides
 *              who owns the state: 0, the poll was armed and is cancelled,
 *              so the thread reaping that CQE closes and frees for the
 *              reaper; -ENOENT or -EALREADY, the poll fired, so the worker
 *              that got its CQE frees instead of re-arming (it checks
 *              retiring under the SQ lock). The cancelled poll's
 *              -ECANCELED CQE is dropped without touching the state.
 *              Assumes io_uring, and that a one-shot poll whose wakeup won
 *              the race with POLL_REMOVE (-EALREADY) completes with a CQE.
 *   uring-multishot  As uring with IORING_POLL_ADD_MULTI: the poll stays
 *              armed, each CQE with IORING_CQE_F_MORE is served by reading
 *              requests until EAGAIN (as with an edge-triggered watch), and
 *              the final CQE, without F_MORE, says that no later CQE carries
 *              that user_data. The state is freed once both the final poll
 *              CQE and the POLL_REMOVE's CQE have been reaped; -EALREADY
 *              queues the remove again.
 *
 * Use-after-free detection: freed state is poisoned (every byte 0x6b, the
 * magic word CONN_FREED) and kept in a quarantine that is never returned
 * to malloc during the run, in all variants alike. A worker checks the
 * magic word when it takes an event and again before it re-arms; a
 * poisoned read counts one use-after-free. At the end the quarantine is
 * checked for writes into freed state, which count too.
 *
 * Syscalls are counted per thread through the wrappers below (x_*(),
 * ctl(), the futex calls of struct lock): everything the workers, the
 * reaper and the accept path (conn_new()) make. Not counted: the clients'
 * own calls, the main thread's set-up and tear-down, the measurement's
 * quarantine lock and clock reads, and whatever malloc() does inside.
 *
 * Output: a summary; --json adds one line of JSON (keys: bench/VARIANTS.md).
 * --check runs a short bounded run and exits 0 only if the variant saw no
 * use-after-free, no misrouted answer, no unexpected epoll_ctl() or ring
 * error, and every connection was retired and freed with no item,
 * descriptor or state left; KSFT_SKIP (4) when the kernel lacks
 * EPOLL_CTL_DISABLE (disable) or io_uring (uring, uring-multishot). For
 * the naive variant --check instead requires that use-after-free was seen.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "uring_ring.h"

#ifndef EPOLL_CTL_DISABLE
#define EPOLL_CTL_DISABLE 4
#endif

#define KSFT_PASS	0
#define KSFT_FAIL	1
#define KSFT_SKIP	4

#define CONN_LIVE	0x6c6976652d636f6eULL	/* "live-con" */
#define CONN_FREED	0x6b6b6b6b6b6b6b6bULL	/* POISON_FREE bytes */
#define POISON_BYTE	0x6b
#define CONN_BUF	384	/* per-connection state the handler works on */
#define BATCH		8	/* events per epoll_wait() */
#define MAX_WORKERS	64
#define MAX_CLIENTS	256
#define IDLE_SETTLE_MS	20	/* idle phase: let the last retirements finish */

/* epoll data.u64 of the control descriptors (no state pointer is 0 or 1). */
#define EV_STOP		0
#define EV_KICK		1

/* gen: the slab of slots. */
#define SLOT_CHUNK	64
#define MAX_CHUNKS	4096
#define NO_SLOT		UINT32_MAX

/*
 * uring: ring sizes (a connection has at most three CQEs outstanding: its
 * poll, a POLL_REMOVE and the cancelled poll), and the low bits of
 * user_data (state is 16-aligned).
 */
#define RING_SQ		128
#define RING_CQ		1024
#define UD_POLL		0
#define UD_REMOVE	1
#define UD_KICK		2
#define UD_TAGS		7ULL

enum retire {
	RETIRE_DISABLE, RETIRE_USERSPACE, RETIRE_NAIVE, RETIRE_GEN,
	RETIRE_PERTHREAD, RETIRE_QSBR, RETIRE_URING, RETIRE_URING_MULTI,
	RETIRE_NR
};
static const char *const retire_names[RETIRE_NR] = {
	"disable", "userspace", "naive", "gen", "perthread", "qsbr", "uring",
	"uring-multishot",
};

/* Every kind of system call the server side makes. */
enum sys {
	SYS_EPOLL_WAIT, SYS_EPOLL_CTL, SYS_RECV, SYS_SEND, SYS_CLOSE,
	SYS_SHUTDOWN, SYS_URING_ENTER, SYS_READ, SYS_WRITE, SYS_FUTEX,
	SYS_NANOSLEEP, NSYS
};
static const char *const sys_names[NSYS] = {
	"epoll_wait", "epoll_ctl", "recv", "send", "close", "shutdown",
	"io_uring_enter", "read", "write", "futex", "nanosleep",
};

struct opts {
	enum retire retire;
	int workers;		/* server threads */
	int clients;		/* client threads, one connection each */
	long duration_ms;	/* the load ends after this long ... */
	long requests;		/* ... or this many answered requests */
	long idle_ms;		/* retire a connection idle this long */
	long conn_requests;	/* retire a connection after this many requests */
	long conn_age_ms;	/* retire a connection this old */
	int pause_pct;		/* % of requests after which a client pauses */
	long tick_us;		/* reaper period */
	long quiesce_ms;	/* userspace: epoll_wait() timeout of the workers */
	long idle_phase_ms;	/* idle phase after the load; 0: none */
	int work;		/* rounds over the state per request */
	bool unsafe_offline;	/* qsbr: trust "offline" without the buffer check */
	bool check;
	bool json;
};

struct msg {
	uint64_t seq;		/* client's sequence number */
	uint64_t client;	/* client's number */
	uint64_t sum;		/* answer: a digest of the state */
	uint64_t pad;
};

/* A mutex on futex(2) whose system calls are counted (0 free, 1 held, 2 contended). */
struct lock {
	_Atomic int v;
};

/* Per server-side thread, written by that thread only, read by main. */
struct tstats {
	_Atomic uint64_t sys[NSYS];
	_Atomic uint64_t sqes;		/* uring: SQEs queued */
	_Atomic uint64_t waits;		/* returns from epoll_wait()/io_uring_enter() */
	_Atomic uint64_t empty_waits;	/* ... that delivered no request */
};

/* Everything a connection owns. */
struct conn {
	_Atomic uint64_t magic;		/* CONN_LIVE, CONN_FREED once freed */
	uint64_t id;
	int fd;				/* server end of the socketpair */
	int owner;			/* perthread, uring: the owning worker */
	struct lock lock;		/* disable: deleted and the re-arm */
	bool deleted;			/* disable: the handler frees it */
	bool retiring;			/* uring: under the owner's SQ lock */
	bool remove_inflight;		/* uring-multishot: under the SQ lock */
	bool poll_armed;		/* uring: owner's view, a poll is or will be armed */
	bool timed;			/* retired during the load: time it */
	uint32_t slot;			/* gen */
	_Atomic bool eof;		/* the peer closed: retire soon */
	_Atomic uint64_t last_ns;	/* last answered request */
	uint64_t born_ns;
	uint64_t retire_ns;		/* when the reaper decided to retire it */
	_Atomic uint32_t nreq;		/* requests answered */
	uint64_t retire_epoch;		/* userspace: epoch at retirement */
	struct conn *prev, *next;	/* reaper's table, limbo, batch, quarantine */
	struct conn *qnext;		/* perthread, uring: hand-over queues */
	unsigned char buf[CONN_BUF];
};

/* gen: what an event names. Type-stable: never freed during the run. */
struct slot {
	struct lock lock;		/* everything but next_free */
	uint32_t gen;			/* bumped at retirement */
	int fd;
	uint32_t refs;			/* workers using conn and fd now */
	bool retire;			/* retired while in use: the last one frees */
	uint32_t next_free;		/* free list, under the slab's lock */
	struct conn *conn;		/* NULL while free */
};

struct worker {
	struct server *s;
	pthread_t thread;
	clockid_t clock;
	_Atomic uint64_t epoch;		/* userspace: last quiescent point */
	_Atomic uint64_t seq;		/* qsbr: odd online, even offline */
	struct epoll_event evs[BATCH];	/* qsbr: read by the reaper too */
	int epfd;			/* perthread: its own instance */
	int kickfd;			/* perthread, uring: hand-over eventfd */
	struct lock qlock;		/* the two queues */
	struct conn *retq;		/* perthread: retirements from the reaper */
	struct conn *newq;		/* uring: connections from the acceptor */
	struct lock sq_lock;		/* uring: the SQ, and retiring/remove_inflight */
	struct uring ring;
	uint64_t kick_buf;
	struct tstats st;
	uint64_t cpu_ns;
} __attribute__((aligned(64)));

#define HIST_SUB	16
#define HIST_BUCKETS	(64 * HIST_SUB)

struct client {
	struct server *s;
	pthread_t thread;
	int id;
	int fd;				/* client end, -1 between connections */
	uint64_t seed;
	uint64_t done, dropped, timeouts, wrong, reconnects;
	struct tstats st;		/* the accept path (conn_new()) */
	uint64_t hist[HIST_BUCKETS];	/* latency, ns */
};

struct server {
	struct opts o;
	int epfd;			/* the shared instance */
	int stopfd;			/* level-triggered: ends every epoll worker */
	uint64_t t0, deadline;
	_Atomic bool clients_stop, drain, reaper_stop, idle_phase, workers_stop;
	_Atomic long answered;		/* client-side count, for --requests */

	struct lock table_lock;		/* the reaper's list of live conns */
	struct conn table;
	long live;

	_Atomic uint64_t epoch;		/* userspace: grace-period counter */
	struct conn *limbo, *limbo_tail;	/* userspace: reaper only */
	long limbo_len, limbo_peak;

	/* qsbr, reaper only: the batch in its grace period, the next one. */
	struct conn *gp_batch, *gp_next, *gp_next_tail;
	long gp_batch_len, gp_next_len, grace_periods;
	bool gp_active;
	uint64_t gp_need[MAX_WORKERS];	/* 0: that worker is past it */

	struct lock slab_lock;		/* gen: nslots and the free list */
	_Atomic(struct slot *) chunks[MAX_CHUNKS];
	uint32_t nslots, free_slot;
	long slot_bytes;

	bool ring_dirty[MAX_WORKERS];	/* uring: reaper queued SQEs there */
	long ring_bytes;

	pthread_mutex_t q_lock;		/* quarantine and retire_hist */
	struct conn *quarantine;
	uint64_t retire_hist[HIST_BUCKETS];

	struct worker workers[MAX_WORKERS];
	struct client clients[MAX_CLIENTS];
	pthread_t reaper;
	clockid_t reaper_clock;
	uint64_t reaper_cpu_ns;
	struct tstats reaper_st;

	/* Counters: every one is reported. */
	_Atomic long created, retired, freed;
	_Atomic long uaf_reads, uaf_writes;
	_Atomic long ctl_errors;	/* epoll_ctl() failures that must not be */
	_Atomic long disable_ok, disable_busy;
	_Atomic long rearm_enoent;	/* userspace/naive/qsbr: MOD after DEL */
	_Atomic long stale_fd;		/* recv/send on a descriptor not ours */
	_Atomic long stale_events;	/* gen: generation mismatch */
	_Atomic long gen_busy;		/* gen: retired while a worker held a reference */
	_Atomic long handoffs;		/* perthread, uring: queued to an owner */
	_Atomic long remove_cancelled, remove_late, remove_retried;
	_Atomic long cancelled_cqes, ring_errors;
	_Atomic long handled;
	_Atomic long held, held_peak;	/* bytes retired, not yet freed */
	_Atomic long state, state_peak;	/* bytes of state: conns and slots */
	double held_sum, state_sum;
	long samples;
};

static __thread struct tstats *tls_stats;

static uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static uint64_t thread_cpu_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void max_store(_Atomic long *max, long v)
{
	long old = atomic_load(max);

	while (v > old && !atomic_compare_exchange_weak(max, &old, v))
		;
}

/* A counter written by one thread only: no locked instruction needed. */
static void bump(_Atomic uint64_t *v)
{
	atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

static void count_sys(enum sys k)
{
	if (tls_stats)
		bump(&tls_stats->sys[k]);
}

static int x_epoll_wait(int epfd, struct epoll_event *evs, int n, int timeout)
{
	count_sys(SYS_EPOLL_WAIT);
	return epoll_wait(epfd, evs, n, timeout);
}

static int ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	count_sys(SYS_EPOLL_CTL);
	return epoll_ctl(epfd, op, fd, ev) ? -errno : 0;
}

static ssize_t x_recv(int fd, void *buf, size_t len, int flags)
{
	count_sys(SYS_RECV);
	return recv(fd, buf, len, flags);
}

static ssize_t x_send(int fd, const void *buf, size_t len, int flags)
{
	count_sys(SYS_SEND);
	return send(fd, buf, len, flags);
}

static int x_close(int fd)
{
	count_sys(SYS_CLOSE);
	return close(fd);
}

static int x_shutdown(int fd, int how)
{
	count_sys(SYS_SHUTDOWN);
	return shutdown(fd, how);
}

static ssize_t x_read(int fd, void *buf, size_t len)
{
	count_sys(SYS_READ);
	return read(fd, buf, len);
}

static ssize_t x_write(int fd, const void *buf, size_t len)
{
	count_sys(SYS_WRITE);
	return write(fd, buf, len);
}

static int x_uring_enter(int fd, unsigned int to_submit, unsigned int min_complete,
			 unsigned int flags)
{
	count_sys(SYS_URING_ENTER);
	return uring_enter(fd, to_submit, min_complete, flags);
}

static void x_nanosleep(const struct timespec *ts)
{
	count_sys(SYS_NANOSLEEP);
	nanosleep(ts, NULL);
}

static void x_futex(_Atomic int *addr, int op, int val)
{
	count_sys(SYS_FUTEX);
	syscall(SYS_futex, addr, op, val, NULL, NULL, 0);
}

/* The classic three-state futex mutex, as glibc's default mutex behaves. */
static void lock_acquire(struct lock *l)
{
	int c = 0;

	if (atomic_compare_exchange_strong_explicit(&l->v, &c, 1, memory_order_acquire,
						    memory_order_relaxed))
		return;
	if (c != 2)
		c = atomic_exchange_explicit(&l->v, 2, memory_order_acquire);
	while (c != 0) {
		x_futex(&l->v, FUTEX_WAIT_PRIVATE, 2);
		c = atomic_exchange_explicit(&l->v, 2, memory_order_acquire);
	}
}

static void lock_release(struct lock *l)
{
	if (atomic_exchange_explicit(&l->v, 0, memory_order_release) == 2)
		x_futex(&l->v, FUTEX_WAKE_PRIVATE, 1);
}

/*
 * Probe for EPOLL_CTL_DISABLE as Documentation/userspace-api/epoll.rst
 * says: with a NULL event and a pollable fd that is not registered, a
 * kernel that knows the operation reports ENOENT; kernels without it fail
 * as for any unknown operation, with EFAULT where they copy the event
 * before they look at the operation (6.12 and earlier) or with EINVAL.
 * 1: supported, 0: absent, <0: broken.
 */
static int probe_disable(void)
{
	int epfd, efd, ret;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	efd = eventfd(0, EFD_CLOEXEC);
	if (epfd < 0 || efd < 0)
		return -errno;
	ret = ctl(epfd, EPOLL_CTL_DISABLE, efd, NULL);
	close(efd);
	close(epfd);
	if (ret == -ENOENT)
		return 1;
	if (ret == -EFAULT || ret == -EINVAL)
		return 0;
	return ret ? ret : -EPROTO;
}

/*
 * Can the uring variants run here? 1: yes; 0: no, *why says why (a skip);
 * <0: io_uring misbehaved. Multishot poll is tried for real: an eventfd
 * write must give a CQE that says more will follow.
 */
static int probe_uring(bool multishot, char *why, size_t len)
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

static bool conn_live(struct conn *c)
{
	return atomic_load_explicit(&c->magic, memory_order_acquire) == CONN_LIVE;
}

static void hist_add(uint64_t *hist, uint64_t v)
{
	unsigned int msb, i;

	if (v < HIST_SUB) {
		i = v;
	} else {
		msb = 63 - __builtin_clzll(v);
		i = (msb - 3) * HIST_SUB + ((v >> (msb - 4)) & (HIST_SUB - 1));
	}
	hist[i]++;
}

/* Middle of bucket @i. */
static double hist_value(unsigned int i)
{
	unsigned int shift;

	if (i < HIST_SUB)
		return i;
	shift = i / HIST_SUB - 1;
	return (double)((HIST_SUB + i % HIST_SUB) << shift) + (double)(1ULL << shift) / 2;
}

static double hist_pct(const uint64_t *hist, double p)
{
	uint64_t total = 0, seen = 0, want;
	unsigned int i;

	for (i = 0; i < HIST_BUCKETS; i++)
		total += hist[i];
	if (!total)
		return 0;
	want = (uint64_t)(p * total + 0.999999);
	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += hist[i];
		if (seen >= want && seen)
			return hist_value(i);
	}
	return hist_value(HIST_BUCKETS - 1);
}

static uint64_t hist_total(const uint64_t *hist)
{
	uint64_t total = 0;
	unsigned int i;

	for (i = 0; i < HIST_BUCKETS; i++)
		total += hist[i];
	return total;
}

static void state_add(struct server *s, long delta)
{
	long v = atomic_fetch_add(&s->state, delta) + delta;

	if (delta > 0)
		max_store(&s->state_peak, v);
}

/* Poison @c and put it in quarantine: it is never touched or reused again. */
static void conn_release(struct server *s, struct conn *c)
{
	uint64_t t = now_ns(), retire_ns = c->retire_ns;
	bool timed = c->timed;

	atomic_store(&c->magic, CONN_FREED);
	memset((char *)c + sizeof(c->magic), POISON_BYTE, sizeof(*c) - sizeof(c->magic));
	pthread_mutex_lock(&s->q_lock);
	c->next = s->quarantine;	/* the link is outside the checked bytes */
	s->quarantine = c;
	if (timed)
		hist_add(s->retire_hist, t - retire_ns);
	pthread_mutex_unlock(&s->q_lock);
	atomic_fetch_add(&s->held, -(long)sizeof(*c));
	state_add(s, -(long)sizeof(*c));
	atomic_fetch_add(&s->freed, 1);
}

/* Writes into freed state: a byte that is no longer poison, the link aside. */
static long quarantine_check(struct server *s)
{
	const size_t link = offsetof(struct conn, next);
	struct conn *c, *next;
	long bad = 0;

	for (c = s->quarantine; c; c = next) {
		const unsigned char *p = (const unsigned char *)c;
		bool dirty = atomic_load(&c->magic) != CONN_FREED;
		size_t i;

		next = c->next;
		for (i = sizeof(c->magic); i < sizeof(*c) && !dirty; i++)
			if ((i < link || i >= link + sizeof(c->next)) && p[i] != POISON_BYTE)
				dirty = true;
		bad += dirty;
		free(c);
	}
	s->quarantine = NULL;
	return bad;
}

static struct epoll_event conn_event(struct conn *c)
{
	struct epoll_event ev = {
		.events = EPOLLIN | EPOLLONESHOT,
		.data.ptr = c,
	};

	return ev;
}

/* EPOLL_CTL_DEL, close, free: what the owner of the event does. */
static void conn_free(struct server *s, struct conn *c)
{
	if (ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL))
		atomic_fetch_add(&s->ctl_errors, 1);
	x_close(c->fd);
	conn_release(s, c);
}

/*
 * disable: the deletion protocol of Documentation/userspace-api/epoll.rst,
 * as written there: conn_delete() in the reaper, conn_done() in the worker
 * that handled an event. Exactly one of them frees the state.
 */
static void conn_delete(struct server *s, struct conn *c)
{
	bool owner;
	int ret;

	lock_acquire(&c->lock);
	ret = ctl(s->epfd, EPOLL_CTL_DISABLE, c->fd, NULL);
	owner = ret == 0;
	if (!owner)		/* EBUSY: an event is being handled */
		c->deleted = true;
	lock_release(&c->lock);
	if (owner) {
		atomic_fetch_add(&s->disable_ok, 1);
		conn_free(s, c);
	} else {
		atomic_fetch_add(ret == -EBUSY ? &s->disable_busy : &s->ctl_errors, 1);
	}
}

static void conn_done(struct server *s, struct conn *c)
{
	struct epoll_event ev = conn_event(c);
	bool deleted;

	lock_acquire(&c->lock);
	deleted = c->deleted;
	if (!deleted && ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev))
		atomic_fetch_add(&s->ctl_errors, 1);
	lock_release(&c->lock);
	if (deleted)
		conn_free(s, c);
}

/* userspace (qsbr-timeout): stop events at once, free after a grace period. */
static void qsbr_timeout_retire(struct server *s, struct conn *c)
{
	if (ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL))
		atomic_fetch_add(&s->ctl_errors, 1);
	/* The peer sees EOF now; the number stays ours until the close. */
	x_shutdown(c->fd, SHUT_RDWR);
	/*
	 * A worker that announces a later epoch loaded it after the DEL
	 * returned, so its next epoll_wait() cannot hand out @c, and it has
	 * finished the batch that may have held @c.
	 */
	c->retire_epoch = atomic_fetch_add(&s->epoch, 1);
	c->next = NULL;
	if (s->limbo_tail)
		s->limbo_tail->next = c;
	else
		s->limbo = c;
	s->limbo_tail = c;
	s->limbo_len++;
	if (s->limbo_len > s->limbo_peak)
		s->limbo_peak = s->limbo_len;
}

/* userspace: free what every worker has quiesced past. */
static void qsbr_timeout_reclaim(struct server *s)
{
	uint64_t min = UINT64_MAX;
	struct conn *c;
	int i;

	for (i = 0; i < s->o.workers; i++) {
		uint64_t e = atomic_load(&s->workers[i].epoch);

		if (e < min)
			min = e;
	}
	while ((c = s->limbo) && c->retire_epoch < min) {
		s->limbo = c->next;
		if (!s->limbo)
			s->limbo_tail = NULL;
		s->limbo_len--;
		x_close(c->fd);
		conn_release(s, c);
	}
}

/*
 * qsbr: the data word of event @i of @w's buffer, as two 32-bit halves
 * (struct epoll_event is packed: the word is only 4-byte aligned).
 */
static uint32_t *evs_word(struct worker *w, int i)
{
	return (uint32_t *)((char *)&w->evs[i] + offsetof(struct epoll_event, data));
}

/* qsbr worker: done with the @n events of the batch; going to epoll_wait(). */
static void qsbr_offline(struct worker *w, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		__atomic_store_n(&evs_word(w, i)[0], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&evs_word(w, i)[1], 0, __ATOMIC_RELAXED);
	}
	/* Orders the batch's uses of state, and the zeroing, before it. */
	atomic_store_explicit(&w->seq, atomic_load_explicit(&w->seq, memory_order_relaxed) + 1,
			      memory_order_release);
}

/* qsbr worker: epoll_wait() returned. */
static void qsbr_online(struct worker *w)
{
	atomic_store_explicit(&w->seq, atomic_load_explicit(&w->seq, memory_order_relaxed) + 1,
			      memory_order_release);
	/*
	 * The zeroing of this batch's entries comes after the count in any
	 * reader's view that sees it (the reaper's seqlock-style check).
	 */
	atomic_thread_fence(memory_order_release);
}

/*
 * qsbr reaper: @w was seen offline in phase @seq. True if its buffer holds
 * no event and it was still in that phase after the look: then it holds no
 * connection, and epoll_wait() cannot hand it one deleted before.
 */
static bool qsbr_buffer_empty(struct worker *w, uint64_t seq)
{
	int i;

	for (i = 0; i < BATCH; i++)
		if (__atomic_load_n(&evs_word(w, i)[0], __ATOMIC_RELAXED) |
		    __atomic_load_n(&evs_word(w, i)[1], __ATOMIC_RELAXED))
			return false;
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&w->seq, memory_order_relaxed) == seq;
}

static bool qsbr_passed(struct server *s, struct worker *w, uint64_t need)
{
	uint64_t v = atomic_load_explicit(&w->seq, memory_order_acquire);

	if (v >= need)
		return true;
	if (v & 1)
		return false;
	return s->o.unsafe_offline || qsbr_buffer_empty(w, v);
}

static void qsbr_retire(struct server *s, struct conn *c)
{
	if (ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL))
		atomic_fetch_add(&s->ctl_errors, 1);
	x_shutdown(c->fd, SHUT_RDWR);
	c->next = NULL;
	if (s->gp_next_tail)
		s->gp_next_tail->next = c;
	else
		s->gp_next = c;
	s->gp_next_tail = c;
	s->gp_next_len++;
	if (s->gp_next_len + s->gp_batch_len > s->limbo_peak)
		s->limbo_peak = s->gp_next_len + s->gp_batch_len;
}

/*
 * qsbr: end the current grace period if every worker is past it and free
 * its batch; start one for the connections retired since. Every tick.
 */
static void qsbr_advance(struct server *s)
{
	struct conn *c;
	int i;

	for (;;) {
		if (!s->gp_active) {
			if (!s->gp_next)
				return;
			s->gp_batch = s->gp_next;
			s->gp_batch_len = s->gp_next_len;
			s->gp_next = s->gp_next_tail = NULL;
			s->gp_next_len = 0;
			/* After every DEL of the batch: the next offline phase. */
			for (i = 0; i < s->o.workers; i++) {
				uint64_t v = atomic_load_explicit(&s->workers[i].seq,
								  memory_order_acquire);

				s->gp_need[i] = v + ((v & 1) ? 1 : 2);
			}
			s->gp_active = true;
		}
		for (i = 0; i < s->o.workers; i++) {
			if (s->gp_need[i] && !qsbr_passed(s, &s->workers[i], s->gp_need[i]))
				return;
			s->gp_need[i] = 0;
		}
		while ((c = s->gp_batch)) {
			s->gp_batch = c->next;
			x_close(c->fd);
			conn_release(s, c);
		}
		s->gp_batch_len = 0;
		s->gp_active = false;
		s->grace_periods++;
	}
}

/* gen: slot @i; its chunk was published before any event could name it. */
static struct slot *slot_at(struct server *s, uint32_t i)
{
	struct slot *chunk = atomic_load_explicit(&s->chunks[i / SLOT_CHUNK],
						  memory_order_acquire);

	return &chunk[i % SLOT_CHUNK];
}

static uint64_t gen_tag(uint32_t i, uint32_t gen)
{
	return (uint64_t)gen << 32 | i;
}

static uint32_t slot_get(struct server *s)
{
	struct slot *chunk;
	uint32_t i = NO_SLOT, j;

	lock_acquire(&s->slab_lock);
	if (s->free_slot != NO_SLOT) {
		i = s->free_slot;
		s->free_slot = slot_at(s, i)->next_free;
	} else if (s->nslots < MAX_CHUNKS * SLOT_CHUNK) {
		if (s->nslots % SLOT_CHUNK == 0) {
			chunk = calloc(SLOT_CHUNK, sizeof(*chunk));
			if (!chunk)
				goto out;
			for (j = 0; j < SLOT_CHUNK; j++) {
				chunk[j].gen = 1;
				chunk[j].fd = -1;
			}
			atomic_store_explicit(&s->chunks[s->nslots / SLOT_CHUNK], chunk,
					      memory_order_release);
			s->slot_bytes += SLOT_CHUNK * sizeof(*chunk);
			state_add(s, SLOT_CHUNK * sizeof(*chunk));
		}
		i = s->nslots++;
	}
out:
	lock_release(&s->slab_lock);
	return i;
}

static void slot_put(struct server *s, uint32_t i)
{
	lock_acquire(&s->slab_lock);
	slot_at(s, i)->next_free = s->free_slot;
	s->free_slot = i;
	lock_release(&s->slab_lock);
}

static int gen_register(struct server *s, struct conn *c)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT };
	uint32_t i = slot_get(s);
	struct slot *sl;
	int ret;

	if (i == NO_SLOT)
		return -ENOMEM;
	sl = slot_at(s, i);
	lock_acquire(&sl->lock);
	sl->conn = c;
	sl->fd = c->fd;
	ev.data.u64 = gen_tag(i, sl->gen);
	lock_release(&sl->lock);
	c->slot = i;
	ret = ctl(s->epfd, EPOLL_CTL_ADD, c->fd, &ev);
	if (ret) {
		lock_acquire(&sl->lock);
		sl->gen++;
		sl->conn = NULL;
		sl->fd = -1;
		lock_release(&sl->lock);
		slot_put(s, i);
	}
	return ret;
}

/* gen: delete, close, free, and give the slot back; nobody else can reach it. */
static void gen_free(struct server *s, struct conn *c, int fd)
{
	if (ctl(s->epfd, EPOLL_CTL_DEL, fd, NULL))
		atomic_fetch_add(&s->ctl_errors, 1);
	x_close(fd);
	conn_release(s, c);
}

/*
 * gen reaper: after the bump, an event already handed out names an old
 * generation and is dropped; a worker holding a reference frees it instead.
 */
static void gen_retire(struct server *s, struct conn *c)
{
	uint32_t i = c->slot;
	struct slot *sl = slot_at(s, i);
	bool busy;
	int fd;

	lock_acquire(&sl->lock);
	sl->gen++;
	busy = sl->refs > 0;
	fd = sl->fd;
	if (busy) {
		sl->retire = true;
	} else {
		sl->conn = NULL;
		sl->fd = -1;
	}
	lock_release(&sl->lock);
	if (busy) {
		atomic_fetch_add(&s->gen_busy, 1);
		return;
	}
	gen_free(s, c, fd);
	slot_put(s, i);
}

/* perthread: the owner deletes, closes and frees; the reaper only asks. */
static void perthread_retire(struct server *s, struct conn *c)
{
	struct worker *w = &s->workers[c->owner];
	uint64_t one = 1;
	bool was_empty;

	lock_acquire(&w->qlock);
	was_empty = !w->retq;
	c->qnext = w->retq;
	w->retq = c;
	lock_release(&w->qlock);
	atomic_fetch_add(&s->handoffs, 1);
	/* An empty queue means the owner has read the eventfd since the last write. */
	if (was_empty && x_write(w->kickfd, &one, sizeof(one)) != sizeof(one))
		atomic_fetch_add(&s->ctl_errors, 1);
}

/* perthread owner, between batches. */
static void perthread_take_retired(struct server *s, struct worker *w)
{
	struct conn *c, *next;
	uint64_t v;

	/* Reset before taking the queue: a later push writes it again. */
	if (x_read(w->kickfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		atomic_fetch_add(&s->ctl_errors, 1);
	lock_acquire(&w->qlock);
	c = w->retq;
	w->retq = NULL;
	lock_release(&w->qlock);
	for (; c; c = next) {
		next = c->qnext;
		if (ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL))
			atomic_fetch_add(&s->ctl_errors, 1);
		x_close(c->fd);
		conn_release(s, c);
	}
}

static uint64_t ud_make(const void *p, unsigned int tag)
{
	return (uint64_t)(uintptr_t)p | tag;
}

static void *ud_ptr(uint64_t ud)
{
	return (void *)(uintptr_t)(ud & ~UD_TAGS);
}

/* uring: a free SQE of @w's ring; the caller holds its SQ lock. */
static struct io_uring_sqe *uring_sqe(struct server *s, struct worker *w)
{
	struct io_uring_sqe *sqe;
	int ret;

	while (!(sqe = uring_get_sqe(&w->ring))) {
		/* Full: submitting makes the kernel consume (copy) the SQEs. */
		ret = x_uring_enter(w->ring.fd, uring_unsubmitted(&w->ring), 0, 0);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
			atomic_fetch_add(&s->ring_errors, 1);
		if (ret <= 0)
			sched_yield();
	}
	if (tls_stats)
		bump(&tls_stats->sqes);
	return sqe;
}

static void uring_free(struct server *s, struct conn *c)
{
	x_close(c->fd);
	conn_release(s, c);
}

/*
 * uring owner: arm @c's poll, unless the reaper marked it retiring, in
 * which case no poll of it is armed or will be: free it unless a
 * POLL_REMOVE's CQE is still to come (multishot), whose reaping frees it.
 */
static void uring_arm(struct server *s, struct worker *w, struct conn *c)
{
	struct io_uring_sqe *sqe;
	bool free_it = false;

	lock_acquire(&w->sq_lock);
	if (c->retiring) {
		c->poll_armed = false;
		free_it = !c->remove_inflight;
	} else {
		sqe = uring_sqe(s, w);
		uring_prep_poll_add(sqe, c->fd, POLLIN, s->o.retire == RETIRE_URING_MULTI,
				    ud_make(c, UD_POLL));
		uring_publish(&w->ring);
		c->poll_armed = true;
	}
	lock_release(&w->sq_lock);
	if (free_it)
		uring_free(s, c);
}

/* uring owner: wait for the next hand-over (or the end) with a READ. */
static void uring_arm_kick(struct server *s, struct worker *w)
{
	struct io_uring_sqe *sqe;

	lock_acquire(&w->sq_lock);
	sqe = uring_sqe(s, w);
	uring_prep_read(sqe, w->kickfd, &w->kick_buf, sizeof(w->kick_buf), ud_make(w, UD_KICK));
	uring_publish(&w->ring);
	lock_release(&w->sq_lock);
}

/* uring acceptor: the owner submits the first POLL_ADD. */
static void uring_handoff(struct server *s, struct conn *c)
{
	struct worker *w = &s->workers[c->owner];
	uint64_t one = 1;
	bool was_empty;

	c->poll_armed = true;	/* from the reaper's side: it will be */
	lock_acquire(&w->qlock);
	was_empty = !w->newq;
	c->qnext = w->newq;
	w->newq = c;
	lock_release(&w->qlock);
	atomic_fetch_add(&s->handoffs, 1);
	if (was_empty && x_write(w->kickfd, &one, sizeof(one)) != sizeof(one))
		atomic_fetch_add(&s->ring_errors, 1);
}

static void uring_take_new(struct server *s, struct worker *w)
{
	struct conn *c, *next;

	lock_acquire(&w->qlock);
	c = w->newq;
	w->newq = NULL;
	lock_release(&w->qlock);
	for (; c; c = next) {
		next = c->qnext;
		uring_arm(s, w, c);
	}
}

/* uring reaper: @c is not touched after the unlock; it may be freed. */
static void uring_retire(struct server *s, struct conn *c)
{
	int owner = c->owner;
	struct worker *w = &s->workers[owner];
	struct io_uring_sqe *sqe;

	lock_acquire(&w->sq_lock);
	c->retiring = true;
	if (s->o.retire == RETIRE_URING_MULTI)
		c->remove_inflight = true;
	sqe = uring_sqe(s, w);
	uring_prep_poll_remove(sqe, ud_make(c, UD_POLL), ud_make(c, UD_REMOVE));
	uring_publish(&w->ring);
	lock_release(&w->sq_lock);
	s->ring_dirty[owner] = true;
}

/* uring reaper, after a tick's retirements: submit the POLL_REMOVEs. */
static void uring_flush(struct server *s)
{
	struct worker *w;
	int i, ret;

	for (i = 0; i < s->o.workers; i++) {
		if (!s->ring_dirty[i])
			continue;
		s->ring_dirty[i] = false;
		w = &s->workers[i];
		ret = x_uring_enter(w->ring.fd, uring_unsubmitted(&w->ring), 0, 0);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
			atomic_fetch_add(&s->ring_errors, 1);
	}
}

static void conn_retire(struct server *s, struct conn *c, uint64_t now, bool timed)
{
	long held;

	c->retire_ns = now;
	c->timed = timed;
	atomic_fetch_add(&s->retired, 1);
	held = atomic_fetch_add(&s->held, (long)sizeof(*c)) + (long)sizeof(*c);
	if (timed)
		max_store(&s->held_peak, held);
	switch (s->o.retire) {
	case RETIRE_DISABLE:
		conn_delete(s, c);
		break;
	case RETIRE_USERSPACE:
		qsbr_timeout_retire(s, c);
		break;
	case RETIRE_NAIVE:
		conn_free(s, c);
		break;
	case RETIRE_GEN:
		gen_retire(s, c);
		break;
	case RETIRE_PERTHREAD:
		perthread_retire(s, c);
		break;
	case RETIRE_QSBR:
		qsbr_retire(s, c);
		break;
	case RETIRE_URING:
	case RETIRE_URING_MULTI:
		uring_retire(s, c);
		break;
	case RETIRE_NR:
		break;
	}
}

/* Called by a client thread: the server "accepts" @fd. */
static int conn_new(struct server *s, int fd)
{
	struct epoll_event ev;
	struct conn *c;
	int ret = 0;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = fd;
	c->id = atomic_fetch_add(&s->created, 1);
	c->owner = c->id % s->o.workers;
	c->born_ns = now_ns();
	atomic_store(&c->last_ns, c->born_ns);
	memset(c->buf, (int)c->id, sizeof(c->buf));
	atomic_store_explicit(&c->magic, CONN_LIVE, memory_order_release);
	state_add(s, sizeof(*c));
	/* Registered before the reaper can see it: DISABLE must not see ENOENT. */
	switch (s->o.retire) {
	case RETIRE_GEN:
		ret = gen_register(s, c);
		break;
	case RETIRE_PERTHREAD:
		ev.events = EPOLLIN;
		ev.data.ptr = c;
		ret = ctl(s->workers[c->owner].epfd, EPOLL_CTL_ADD, fd, &ev);
		break;
	case RETIRE_URING:
	case RETIRE_URING_MULTI:
		uring_handoff(s, c);
		break;
	default:
		ev = conn_event(c);
		ret = ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev);
		break;
	}
	if (ret) {
		atomic_fetch_add(&s->ctl_errors, 1);
		atomic_fetch_sub(&s->created, 1);
		state_add(s, -(long)sizeof(*c));
		free(c);
		return ret;
	}
	lock_acquire(&s->table_lock);
	c->next = s->table.next;
	c->prev = &s->table;
	s->table.next->prev = c;
	s->table.next = c;
	s->live++;
	lock_release(&s->table_lock);
	return 0;
}

/* The work of one request: fold it into the state, answer a digest. */
static uint64_t conn_work(struct conn *c, const struct msg *req, int rounds)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ req->seq;
	int r;
	size_t i;

	for (r = 0; r < rounds; r++) {
		for (i = 0; i < sizeof(c->buf); i++) {
			h = (h ^ c->buf[i]) * 0x100000001b3ULL;
			c->buf[i] ^= (unsigned char)(h >> 32);
		}
	}
	return h;
}

/*
 * Read and answer one request of @c. 1: answered; 0: nothing to read
 * (EAGAIN, or the peer is gone, which marks it for the reaper); -1: @c was
 * freed under us (counted), the caller must not touch it again.
 */
static int serve_one(struct server *s, struct conn *c)
{
	struct msg req, resp;
	int fd, ret = 0;
	ssize_t n;

	if (!conn_live(c)) {	/* handed an event for freed state */
		atomic_fetch_add(&s->uaf_reads, 1);
		return -1;
	}
	fd = c->fd;
	n = x_recv(fd, &req, sizeof(req), MSG_DONTWAIT);
	if (n == sizeof(req)) {
		resp = req;
		resp.sum = conn_work(c, &req, s->o.work);
		atomic_store_explicit(&c->last_ns, now_ns(), memory_order_relaxed);
		atomic_fetch_add_explicit(&c->nreq, 1, memory_order_relaxed);
		if (x_send(fd, &resp, sizeof(resp), MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
		    errno != EPIPE && errno != ECONNRESET && errno != EAGAIN)
			atomic_fetch_add(&s->stale_fd, 1);
		atomic_fetch_add_explicit(&s->handled, 1, memory_order_relaxed);
		ret = 1;
	} else if (n == 0) {
		/* Peer gone (or shut down by a retiring reaper): retire it. */
		atomic_store(&c->eof, true);
	} else if (n < 0 && errno != EAGAIN && errno != ECONNRESET) {
		atomic_fetch_add(&s->stale_fd, 1);
	}
	if (!conn_live(c)) {	/* freed while we handled it */
		atomic_fetch_add(&s->uaf_reads, 1);
		return -1;
	}
	return ret;
}

/* gen: the slot names the state, if the generation still matches. */
static int gen_handle(struct server *s, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT, .data.u64 = tag };
	struct slot *sl = slot_at(s, (uint32_t)tag);
	struct conn *c;
	bool retire;
	int r, fd;

	lock_acquire(&sl->lock);
	c = sl->conn;
	if (sl->gen != (uint32_t)(tag >> 32) || !c) {
		/* Retired after the kernel handed this event out. */
		lock_release(&sl->lock);
		atomic_fetch_add(&s->stale_events, 1);
		return 0;
	}
	sl->refs++;	/* @c and its descriptor stay ours until the put */
	fd = sl->fd;
	lock_release(&sl->lock);
	r = serve_one(s, c);
	/*
	 * Re-armed even if retired meanwhile: the item is deleted only at
	 * the last put, and an event it gives now names an old generation.
	 */
	if (r >= 0 && ctl(s->epfd, EPOLL_CTL_MOD, fd, &ev))
		atomic_fetch_add(&s->ctl_errors, 1);
	lock_acquire(&sl->lock);
	retire = --sl->refs == 0 && sl->retire;
	if (retire) {
		sl->retire = false;
		sl->conn = NULL;
		sl->fd = -1;
	}
	lock_release(&sl->lock);
	if (retire) {
		gen_free(s, c, fd);
		slot_put(s, (uint32_t)tag);
	}
	return r > 0;
}

/* The workers that share s->epfd: 1 if a request was answered. */
static int handle_shared(struct server *s, uint64_t data)
{
	struct conn *c = (struct conn *)(uintptr_t)data;
	struct epoll_event ev;
	int r, ret;

	if (s->o.retire == RETIRE_GEN)
		return gen_handle(s, data);
	r = serve_one(s, c);
	if (r < 0)
		return 0;
	if (s->o.retire == RETIRE_DISABLE) {
		conn_done(s, c);
		return r;
	}
	ev = conn_event(c);
	ret = ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev);
	/* The reaper deleted the item meanwhile: expected. */
	if (ret == -ENOENT || (ret == -EBADF && s->o.retire == RETIRE_NAIVE))
		atomic_fetch_add(&s->rearm_enoent, 1);
	else if (ret)
		atomic_fetch_add(&s->ctl_errors, 1);
	return r;
}

/* disable, userspace, naive, gen, qsbr: all workers on s->epfd. */
static void *worker_shared(void *arg)
{
	struct worker *w = arg;
	struct server *s = w->s;
	bool qsbr = s->o.retire == RETIRE_QSBR;
	int timeout = -1, n = 0, i, got;
	bool stop = false;

	tls_stats = &w->st;
	if (s->o.retire == RETIRE_USERSPACE)
		timeout = s->o.quiesce_ms;
	while (!stop) {
		/* userspace: quiescent point, this thread holds no connection now. */
		if (s->o.retire == RETIRE_USERSPACE)
			atomic_store(&w->epoch, atomic_load(&s->epoch));
		if (qsbr)
			qsbr_offline(w, n);
		n = x_epoll_wait(s->epfd, w->evs, BATCH, timeout);
		if (qsbr)
			qsbr_online(w);
		bump(&w->st.waits);
		if (n < 0) {
			n = 0;
			if (errno == EINTR)
				continue;
			perror("epoll_wait");
			break;
		}
		got = 0;
		for (i = 0; i < n; i++) {
			if (w->evs[i].data.u64 == EV_STOP)
				stop = true;
			else
				got += handle_shared(s, w->evs[i].data.u64);
		}
		if (!got)
			bump(&w->st.empty_waits);
	}
	atomic_store(&w->epoch, UINT64_MAX);
	atomic_store_explicit(&w->seq, UINT64_MAX - 1, memory_order_release);
	w->cpu_ns = thread_cpu_ns();
	return NULL;
}

static void *worker_perthread(void *arg)
{
	struct worker *w = arg;
	struct server *s = w->s;
	bool stop = false, kicked;
	int n, i, got, r;

	tls_stats = &w->st;
	while (!stop) {
		n = x_epoll_wait(w->epfd, w->evs, BATCH, -1);
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
			perthread_take_retired(s, w);
		if (!got)
			bump(&w->st.empty_waits);
	}
	w->cpu_ns = thread_cpu_ns();
	return NULL;
}

/* uring-multishot owner: the CQE of a POLL_REMOVE of @c. */
static void uring_multi_removed(struct server *s, struct worker *w, struct conn *c, int res)
{
	struct io_uring_sqe *sqe;
	bool free_it = false;

	lock_acquire(&w->sq_lock);
	if (res == -EALREADY) {
		/* The poll was posting a CQE and stays armed: ask again. */
		sqe = uring_sqe(s, w);
		uring_prep_poll_remove(sqe, ud_make(c, UD_POLL), ud_make(c, UD_REMOVE));
		uring_publish(&w->ring);
		atomic_fetch_add(&s->remove_retried, 1);
	} else {
		c->remove_inflight = false;
		free_it = !c->poll_armed;
		atomic_fetch_add(res == 0 ? &s->remove_cancelled : &s->remove_late, 1);
	}
	lock_release(&w->sq_lock);
	if (free_it)
		uring_free(s, c);
}

/* uring owner: one CQE. Returns 1 if a request was answered. */
static int uring_cqe(struct server *s, struct worker *w, uint64_t ud, int res,
		     unsigned int flags, bool *stop)
{
	bool multi = s->o.retire == RETIRE_URING_MULTI;
	struct conn *c = ud_ptr(ud);
	int r = 0, got = 0;

	switch (ud & UD_TAGS) {
	case UD_KICK:
		if (atomic_load(&s->workers_stop)) {
			*stop = true;
			return 0;
		}
		if (res < 0)
			atomic_fetch_add(&s->ring_errors, 1);
		uring_arm_kick(s, w);
		uring_take_new(s, w);
		return 0;
	case UD_REMOVE:
		if (multi) {
			uring_multi_removed(s, w, c, res);
		} else if (res == 0) {
			/* Cancelled while armed: ours (for the reaper) to free. */
			atomic_fetch_add(&s->remove_cancelled, 1);
			uring_free(s, c);
		} else {
			/* It fired: the worker with its CQE frees it. @c may be gone. */
			atomic_fetch_add(&s->remove_late, 1);
		}
		return 0;
	}
	if (res == -ECANCELED) {
		atomic_fetch_add(&s->cancelled_cqes, 1);
		if (!multi)
			return 0;	/* one-shot: the remove's CQE decides; @c may be gone */
	} else if (res < 0) {
		atomic_fetch_add(&s->ring_errors, 1);
	} else {
		do {
			r = serve_one(s, c);
			got += r > 0;
		} while (multi && r > 0);
		if (r < 0)
			return got;
	}
	if (multi && (flags & IORING_CQE_F_MORE))
		return got;
	uring_arm(s, w, c);	/* or free it, when retiring */
	return got;
}

static void *worker_uring(void *arg)
{
	struct worker *w = arg;
	struct server *s = w->s;
	struct io_uring_cqe *cqe;
	bool stop = false;
	int ret, got;

	tls_stats = &w->st;
	uring_arm_kick(s, w);
	while (!stop) {
		ret = x_uring_enter(w->ring.fd, uring_unsubmitted(&w->ring), 1,
				    IORING_ENTER_GETEVENTS);
		bump(&w->st.waits);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
			fprintf(stderr, "io_uring_enter: %s\n", strerror(-ret));
			atomic_fetch_add(&s->ring_errors, 1);
			break;
		}
		got = 0;
		while ((cqe = uring_peek_cqe(&w->ring))) {
			uint64_t ud = cqe->user_data;
			unsigned int flags = cqe->flags;
			int res = cqe->res;

			uring_cqe_seen(&w->ring);
			got += uring_cqe(s, w, ud, res, flags, &stop);
		}
		if (!got)
			bump(&w->st.empty_waits);
	}
	w->cpu_ns = thread_cpu_ns();
	return NULL;
}

static bool reap_due(struct server *s, struct conn *c, uint64_t now, bool idle, bool drain)
{
	if (drain || atomic_load_explicit(&c->eof, memory_order_relaxed))
		return true;
	if (idle)	/* the idle phase keeps the connections */
		return false;
	return now - atomic_load_explicit(&c->last_ns, memory_order_relaxed) >
			s->o.idle_ms * 1000000ULL ||
	       atomic_load_explicit(&c->nreq, memory_order_relaxed) >= s->o.conn_requests ||
	       now - c->born_ns > s->o.conn_age_ms * 1000000ULL;
}

static void *reaper_main(void *arg)
{
	struct server *s = arg;
	struct timespec tick = {
		.tv_sec = s->o.tick_us / 1000000,
		.tv_nsec = s->o.tick_us % 1000000 * 1000,
	};
	struct conn *victims = NULL, *c, *next;
	bool idle, drain, timed;
	uint64_t now;

	tls_stats = &s->reaper_st;
	for (;;) {
		x_nanosleep(&tick);
		now = now_ns();
		idle = atomic_load(&s->idle_phase);
		drain = atomic_load(&s->drain);
		timed = !idle && !drain;
		lock_acquire(&s->table_lock);
		for (c = s->table.next; c != &s->table; c = next) {
			next = c->next;
			if (!reap_due(s, c, now, idle, drain))
				continue;
			c->prev->next = c->next;
			c->next->prev = c->prev;
			s->live--;
			c->next = victims;
			victims = c;
		}
		lock_release(&s->table_lock);
		/* Outside the table lock: the table only tells who is live. */
		for (c = victims; c; c = next) {
			next = c->next;
			conn_retire(s, c, now, timed);
		}
		victims = NULL;
		if (s->o.retire == RETIRE_USERSPACE)
			qsbr_timeout_reclaim(s);
		else if (s->o.retire == RETIRE_QSBR)
			qsbr_advance(s);
		else if (s->o.retire == RETIRE_URING || s->o.retire == RETIRE_URING_MULTI)
			uring_flush(s);
		if (timed) {
			s->held_sum += atomic_load(&s->held);
			s->state_sum += atomic_load(&s->state);
			s->samples++;
		}
		if (atomic_load(&s->reaper_stop))
			break;
	}
	s->reaper_cpu_ns = thread_cpu_ns();
	return NULL;
}

static bool clients_done(struct server *s)
{
	return atomic_load(&s->clients_stop) ||
	       (s->o.requests && atomic_load(&s->answered) >= s->o.requests) ||
	       now_ns() >= s->deadline;
}

static int client_connect(struct client *cl)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	if (conn_new(cl->s, sv[1])) {
		close(sv[0]);
		close(sv[1]);
		return -EIO;
	}
	cl->fd = sv[0];
	cl->reconnects++;
	return 0;
}

static void client_disconnect(struct client *cl)
{
	close(cl->fd);
	cl->fd = -1;
}

static void *client_main(void *arg)
{
	struct client *cl = arg;
	struct server *s = cl->s;
	struct pollfd pfd = { .events = POLLIN };
	struct msg req = { .client = cl->id }, resp;
	uint64_t t, pause;
	ssize_t n;

	tls_stats = &cl->st;	/* counts the server's accept path only */
	while (!clients_done(s)) {
		if (cl->fd < 0 && client_connect(cl)) {
			usleep(1000);
			continue;
		}
		req.seq++;
		t = now_ns();
		if (send(cl->fd, &req, sizeof(req), MSG_NOSIGNAL) != sizeof(req)) {
			/* Retired while we paused: connect again. */
			cl->dropped++;
			client_disconnect(cl);
			continue;
		}
		pfd.fd = cl->fd;
		n = poll(&pfd, 1, 2000);
		if (n == 0) {
			cl->timeouts++;
			client_disconnect(cl);
			continue;
		}
		n = recv(cl->fd, &resp, sizeof(resp), 0);
		if (n <= 0) {
			/* Retired with our request in it. */
			cl->dropped++;
			client_disconnect(cl);
			continue;
		}
		if (n != sizeof(resp) || resp.seq != req.seq || resp.client != req.client) {
			cl->wrong++;
			client_disconnect(cl);
			continue;
		}
		hist_add(cl->hist, now_ns() - t);
		cl->done++;
		atomic_fetch_add_explicit(&s->answered, 1, memory_order_relaxed);
		if ((int)(xorshift(&cl->seed) % 100) < s->o.pause_pct) {
			/* Pause past the idle limit: the reaper retires us. */
			pause = s->o.idle_ms * 1000 * 3 / 2;
			usleep(pause);
		}
	}
	return NULL;
}

static long count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the directory's own descriptor */
}

static long fdinfo_items(int epfd)
{
	char path[64], line[256];
	long n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", epfd);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += !strncmp(line, "tfd:", 4);
	fclose(f);
	return n;
}

static double tv_s(struct timeval tv)
{
	return tv.tv_sec + tv.tv_usec / 1e6;
}

static double ru_cpu_s(const struct rusage *a, const struct rusage *b)
{
	return tv_s(b->ru_utime) + tv_s(b->ru_stime) - tv_s(a->ru_utime) - tv_s(a->ru_stime);
}

struct result {
	double secs, rps, p50_us, p99_us, held_avg, state_avg;
	double cpu_s, server_cpu_s, cpu_us_req, load_cpu_s, proc_cpu_us_req;
	double retire_p50_us, retire_p99_us;
	double idle_secs, idle_wakeups, idle_returns, idle_cpu_s;
	long answered, uaf, leaked_items;
	uint64_t dropped, timeouts, wrong, retire_samples;
	/* Over the load phase. */
	uint64_t sys[NSYS], sys_worker, sys_reaper, sys_accept, sqes;
	uint64_t waits, empty_waits;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: epoll_server [options]\n"
		"  --retire=V         how the reaper retires: disable (default), userspace\n"
		"                     (alias qsbr-timeout), naive, gen, perthread, qsbr, uring,\n"
		"                     uring-multishot\n"
		"  --workers=N        server threads (default 4)\n"
		"  --clients=N        client threads, one connection each (default 16)\n"
		"  --duration-ms=N    load length (default 3000; --check: 1500)\n"
		"  --requests=N       stop the load after N answers (default 200000; --check: 20000)\n"
		"  --idle-ms=N        idle limit of a connection (default 20)\n"
		"  --conn-requests=N  requests per connection before it expires (default 16)\n"
		"  --conn-age-ms=N    age limit of a connection (default 200)\n"
		"  --pause-pct=N      %% of answers after which a client pauses past the\n"
		"                     idle limit (default 2)\n"
		"  --tick-us=N        reaper period (default 1000)\n"
		"  --quiesce-ms=N     userspace: workers' epoll_wait() timeout (default 5)\n"
		"  --idle-phase-ms=N  idle phase after the load, for idle wakeups (default 500;\n"
		"                     --check: 200; 0: none)\n"
		"  --work=N           rounds over the %d-byte state per request (default 2)\n"
		"  --unsafe-offline   qsbr: take an offline worker as quiescent without the\n"
		"                     event-buffer check (unsafe: shows why it is needed)\n"
		"  --check            short run; exit 0 only if it is correct (see source)\n"
		"  --json             also print the results as one JSON line\n"
		"Exit status: 0 ok, 1 failed check, 2 usage, 4 skipped (the kernel lacks\n"
		"EPOLL_CTL_DISABLE or io_uring).\n",
		CONN_BUF);
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{ "retire", required_argument, NULL, 'r' },
		{ "workers", required_argument, NULL, 'w' },
		{ "clients", required_argument, NULL, 'c' },
		{ "duration-ms", required_argument, NULL, 'd' },
		{ "requests", required_argument, NULL, 'n' },
		{ "idle-ms", required_argument, NULL, 'i' },
		{ "conn-requests", required_argument, NULL, 'q' },
		{ "conn-age-ms", required_argument, NULL, 'a' },
		{ "pause-pct", required_argument, NULL, 'p' },
		{ "tick-us", required_argument, NULL, 't' },
		{ "quiesce-ms", required_argument, NULL, 'Q' },
		{ "idle-phase-ms", required_argument, NULL, 'I' },
		{ "work", required_argument, NULL, 'W' },
		{ "unsafe-offline", no_argument, NULL, 'U' },
		{ "check", no_argument, NULL, 'C' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	long duration = -1, requests = -1, idle_phase = -1;
	int opt;
	unsigned int i;

	*o = (struct opts) {
		.workers = 4, .clients = 16, .idle_ms = 20, .conn_requests = 16,
		.conn_age_ms = 200, .pause_pct = 2, .tick_us = 1000,
		.quiesce_ms = 5, .work = 2,
	};
	while ((opt = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			for (i = 0; i < RETIRE_NR; i++)
				if (!strcmp(optarg, retire_names[i]))
					break;
			if (!strcmp(optarg, "qsbr-timeout"))
				i = RETIRE_USERSPACE;
			if (i == RETIRE_NR)
				return -1;
			o->retire = i;
			break;
		case 'w': o->workers = atoi(optarg); break;
		case 'c': o->clients = atoi(optarg); break;
		case 'd': duration = atol(optarg); break;
		case 'n': requests = atol(optarg); break;
		case 'i': o->idle_ms = atol(optarg); break;
		case 'q': o->conn_requests = atol(optarg); break;
		case 'a': o->conn_age_ms = atol(optarg); break;
		case 'p': o->pause_pct = atoi(optarg); break;
		case 't': o->tick_us = atol(optarg); break;
		case 'Q': o->quiesce_ms = atol(optarg); break;
		case 'I': idle_phase = atol(optarg); break;
		case 'W': o->work = atoi(optarg); break;
		case 'U': o->unsafe_offline = true; break;
		case 'C': o->check = true; break;
		case 'j': o->json = true; break;
		case 'h': usage(stdout); exit(0);
		default: return -1;
		}
	}
	if (optind != argc)
		return -1;
	o->duration_ms = duration >= 0 ? duration : o->check ? 1500 : 3000;
	o->requests = requests >= 0 ? requests : o->check ? 20000 : 200000;
	o->idle_phase_ms = idle_phase >= 0 ? idle_phase : o->check ? 200 : 500;
	if (o->workers < 1 || o->workers > MAX_WORKERS ||
	    o->clients < 1 || o->clients > MAX_CLIENTS ||
	    o->duration_ms <= 0 || o->idle_ms <= 0 || o->conn_requests <= 0 ||
	    o->conn_age_ms <= 0 || o->tick_us <= 0 || o->quiesce_ms <= 0 ||
	    o->work < 0 || o->pause_pct < 0 || o->pause_pct > 100 ||
	    (o->unsafe_offline && o->retire != RETIRE_QSBR))
		return -1;
	return 0;
}

static void start_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
	int err = pthread_create(t, NULL, fn, arg);

	if (err) {
		fprintf(stderr, "pthread_create: %s\n", strerror(err));
		exit(KSFT_FAIL);
	}
}

static clockid_t thread_clock(pthread_t t)
{
	clockid_t clk;

	return pthread_getcpuclockid(t, &clk) ? CLOCK_THREAD_CPUTIME_ID : clk;
}

/* CPU time of the live workers, ns. */
static uint64_t workers_cpu_now(struct server *s)
{
	uint64_t t = 0;
	int i;

	for (i = 0; i < s->o.workers; i++)
		t += clock_ns(s->workers[i].clock);
	return t;
}

/* CPU time of the live server threads (workers and reaper), ns. */
static uint64_t server_cpu_now(struct server *s)
{
	return clock_ns(s->reaper_clock) + workers_cpu_now(s);
}

static void idle_counts(struct server *s, uint64_t *waits, uint64_t *empty)
{
	int i;

	*waits = *empty = 0;
	for (i = 0; i < s->o.workers; i++) {
		*waits += atomic_load_explicit(&s->workers[i].st.waits, memory_order_relaxed);
		*empty += atomic_load_explicit(&s->workers[i].st.empty_waits,
					       memory_order_relaxed);
	}
}

static uint64_t stats_sum(struct tstats *st, uint64_t *per_kind)
{
	uint64_t t = 0, v;
	int k;

	for (k = 0; k < NSYS; k++) {
		v = atomic_load_explicit(&st->sys[k], memory_order_relaxed);
		per_kind[k] += v;
		t += v;
	}
	return t;
}

/* The load-phase counts, taken when the clients have ended. */
static void load_counts(struct server *s, struct result *r)
{
	int i;

	for (i = 0; i < s->o.workers; i++) {
		r->sys_worker += stats_sum(&s->workers[i].st, r->sys);
		r->sqes += atomic_load(&s->workers[i].st.sqes);
		r->waits += atomic_load(&s->workers[i].st.waits);
		r->empty_waits += atomic_load(&s->workers[i].st.empty_waits);
	}
	r->sys_reaper = stats_sum(&s->reaper_st, r->sys);
	r->sqes += atomic_load(&s->reaper_st.sqes);
	for (i = 0; i < s->o.clients; i++) {
		r->sys_accept += stats_sum(&s->clients[i].st, r->sys);
		r->sqes += atomic_load(&s->clients[i].st.sqes);
	}
}

static bool per_worker_epoll(const struct server *s)
{
	return s->o.retire == RETIRE_PERTHREAD;
}

static bool uses_uring(const struct server *s)
{
	return s->o.retire == RETIRE_URING || s->o.retire == RETIRE_URING_MULTI;
}

/* Descriptors and rings of the variant; 0 or -errno. */
static int setup(struct server *s)
{
	struct epoll_event stop = { .events = EPOLLIN, .data.u64 = EV_STOP };
	struct epoll_event kick = { .events = EPOLLIN, .data.u64 = EV_KICK };
	int i, ret;

	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->stopfd = eventfd(0, EFD_CLOEXEC);
	if (s->epfd < 0 || s->stopfd < 0)
		return -errno;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->stopfd, &stop))
		return -errno;
	for (i = 0; i < s->o.workers; i++) {
		struct worker *w = &s->workers[i];

		w->s = s;
		w->epfd = w->kickfd = -1;
		w->ring.fd = -1;
		atomic_store(&w->seq, 1);
		if (per_worker_epoll(s)) {
			w->epfd = epoll_create1(EPOLL_CLOEXEC);
			w->kickfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			if (w->epfd < 0 || w->kickfd < 0 ||
			    epoll_ctl(w->epfd, EPOLL_CTL_ADD, s->stopfd, &stop) ||
			    epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->kickfd, &kick))
				return -errno;
		}
		if (uses_uring(s)) {
			w->kickfd = eventfd(0, EFD_CLOEXEC);
			if (w->kickfd < 0)
				return -errno;
			ret = uring_setup(&w->ring, RING_SQ, RING_CQ);
			if (ret)
				return ret;
			s->ring_bytes += uring_bytes(&w->ring);
		}
	}
	return 0;
}

static void teardown(struct server *s)
{
	int i;

	for (i = 0; i < s->o.workers; i++) {
		struct worker *w = &s->workers[i];

		if (w->ring.fd >= 0)
			uring_exit(&w->ring);
		if (w->epfd >= 0)
			close(w->epfd);
		if (w->kickfd >= 0)
			close(w->kickfd);
		w->epfd = w->kickfd = -1;
	}
	if (s->stopfd >= 0)
		close(s->stopfd);
	if (s->epfd >= 0)
		close(s->epfd);
	s->stopfd = s->epfd = -1;
	for (i = 0; i < MAX_CHUNKS; i++)
		free(atomic_load(&s->chunks[i]));
}

static void stop_workers(struct server *s)
{
	uint64_t one = 1;
	int i;

	if (uses_uring(s)) {
		atomic_store(&s->workers_stop, true);
		for (i = 0; i < s->o.workers; i++)
			if (write(s->workers[i].kickfd, &one, sizeof(one)) != sizeof(one))
				perror("write kickfd");
		return;
	}
	/* Level-triggered in every instance: each worker sees it. */
	if (write(s->stopfd, &one, sizeof(one)) != sizeof(one))
		perror("write stopfd");
}

/* Items left in the instances, the stop and kick descriptors aside. */
static long items_left(struct server *s)
{
	long n, total;
	int i;

	if (uses_uring(s))
		return 0;
	if (!per_worker_epoll(s))
		return fdinfo_items(s->epfd) - 1;
	total = fdinfo_items(s->epfd) - 1;
	for (i = 0; i < s->o.workers; i++) {
		n = fdinfo_items(s->workers[i].epfd);
		total += n < 0 ? n : n - 2;
	}
	return total;
}

static void run(struct server *s, struct result *r)
{
	struct rusage ru0, ru1, ru2, ru3;
	uint64_t hist[HIST_BUCKETS] = { 0 };
	uint64_t t1, cpu_load_end, cpu_idle_end = 0, cpu_idle0, w0, e0, w1, e1, i0;
	void *(*worker_fn)(void *) = worker_shared;
	int i, j;

	if (per_worker_epoll(s))
		worker_fn = worker_perthread;
	else if (uses_uring(s))
		worker_fn = worker_uring;
	getrusage(RUSAGE_SELF, &ru0);
	s->t0 = now_ns();
	s->deadline = s->t0 + s->o.duration_ms * 1000000ULL;
	for (i = 0; i < s->o.workers; i++) {
		start_thread(&s->workers[i].thread, worker_fn, &s->workers[i]);
		s->workers[i].clock = thread_clock(s->workers[i].thread);
	}
	start_thread(&s->reaper, reaper_main, s);
	s->reaper_clock = thread_clock(s->reaper);
	for (i = 0; i < s->o.clients; i++) {
		struct client *cl = &s->clients[i];

		cl->s = s;
		cl->id = i;
		cl->fd = -1;
		cl->seed = 0x9e3779b97f4a7c15ULL * (i + 1);
		start_thread(&cl->thread, client_main, cl);
	}
	for (i = 0; i < s->o.clients; i++)
		pthread_join(s->clients[i].thread, NULL);
	t1 = now_ns();
	getrusage(RUSAGE_SELF, &ru1);
	cpu_load_end = server_cpu_now(s);
	load_counts(s, r);
	r->load_cpu_s = ru_cpu_s(&ru0, &ru1);

	/* The idle phase: connections open, no requests; count wakeups. */
	ru2 = ru1;
	if (s->o.idle_phase_ms > 0) {
		atomic_store(&s->idle_phase, true);
		usleep(IDLE_SETTLE_MS * 1000);
		idle_counts(s, &w0, &e0);
		cpu_idle0 = workers_cpu_now(s);
		i0 = now_ns();
		usleep(s->o.idle_phase_ms * 1000);
		idle_counts(s, &w1, &e1);
		r->idle_cpu_s = (workers_cpu_now(s) - cpu_idle0) / 1e9;
		r->idle_secs = (now_ns() - i0) / 1e9;
		r->idle_wakeups = e1 - e0;
		r->idle_returns = w1 - w0;
		getrusage(RUSAGE_SELF, &ru2);
		/* The whole phase's server CPU, left out of cpu_s and server_cpu_s. */
		cpu_idle_end = server_cpu_now(s) - cpu_load_end;
	}

	/* Retire every connection while the workers still run ... */
	atomic_store(&s->drain, true);
	atomic_store(&s->idle_phase, false);
	for (;;) {
		lock_acquire(&s->table_lock);
		j = s->live == 0;
		lock_release(&s->table_lock);
		if (j && atomic_load(&s->freed) == atomic_load(&s->created))
			break;
		if (now_ns() - t1 > 10000000000ULL + s->o.idle_phase_ms * 1000000ULL)
			break;	/* leaked: the checks say so */
		usleep(1000);
	}
	atomic_store(&s->reaper_stop, true);
	pthread_join(s->reaper, NULL);
	/* ... then end the workers. */
	stop_workers(s);
	for (i = 0; i < s->o.workers; i++)
		pthread_join(s->workers[i].thread, NULL);
	getrusage(RUSAGE_SELF, &ru3);

	r->leaked_items = items_left(s);
	for (i = 0; i < s->o.clients; i++) {
		struct client *cl = &s->clients[i];

		if (cl->fd >= 0)
			client_disconnect(cl);
		for (j = 0; j < HIST_BUCKETS; j++)
			hist[j] += cl->hist[j];
		r->dropped += cl->dropped;
		r->timeouts += cl->timeouts;
		r->wrong += cl->wrong;
	}
	r->answered = atomic_load(&s->answered);
	r->secs = (t1 - s->t0) / 1e9;
	r->rps = r->answered / r->secs;
	r->p50_us = hist_pct(hist, 0.50) / 1000;
	r->p99_us = hist_pct(hist, 0.99) / 1000;
	r->held_avg = s->samples ? s->held_sum / s->samples : 0;
	r->state_avg = s->samples ? s->state_sum / s->samples : 0;
	r->retire_p50_us = hist_pct(s->retire_hist, 0.50) / 1000;
	r->retire_p99_us = hist_pct(s->retire_hist, 0.99) / 1000;
	r->retire_samples = hist_total(s->retire_hist);
	/* The whole run but the idle phase, as before there was one. */
	r->cpu_s = ru_cpu_s(&ru0, &ru3) - ru_cpu_s(&ru1, &ru2);
	r->server_cpu_s = ((double)s->reaper_cpu_ns - (double)cpu_idle_end) / 1e9;
	for (i = 0; i < s->o.workers; i++)
		r->server_cpu_s += s->workers[i].cpu_ns / 1e9;
	r->cpu_us_req = r->answered ? r->server_cpu_s * 1e6 / r->answered : 0;
	r->proc_cpu_us_req = r->answered ? r->load_cpu_s * 1e6 / r->answered : 0;
	atomic_fetch_add(&s->uaf_writes, quarantine_check(s));
	r->uaf = atomic_load(&s->uaf_reads) + atomic_load(&s->uaf_writes);
}

static double per_req(uint64_t n, long requests)
{
	return requests ? (double)n / requests : 0;
}

static void report(struct server *s, struct result *r)
{
	const char *v = retire_names[s->o.retire];
	uint64_t sys_total = r->sys_worker + r->sys_reaper + r->sys_accept;
	double idle_rate = r->idle_secs > 0 ?
		r->idle_wakeups / r->idle_secs / s->o.workers : 0;
	double idle_cpu = r->idle_secs > 0 ? r->idle_cpu_s * 1e6 / r->idle_secs : 0;
	int k;

	printf("# %s: %ld answers in %.2fs: %.0f req/s, latency p50 %.1f us, p99 %.1f us\n",
	       v, r->answered, r->secs, r->rps, r->p50_us, r->p99_us);
	printf("# %s: state retired but not freed: peak %ld B, mean %.0f B (%zu B a connection)\n",
	       v, atomic_load(&s->held_peak), r->held_avg, sizeof(struct conn));
	printf("# %s: all state: peak %ld B, mean %.0f B (slots %ld B, rings %ld B apart)\n",
	       v, atomic_load(&s->state_peak), r->state_avg, s->slot_bytes, s->ring_bytes);
	printf("# %s: retirement latency p50 %.1f us, p99 %.1f us (%" PRIu64 " retirements)\n",
	       v, r->retire_p50_us, r->retire_p99_us, r->retire_samples);
	printf("# %s: use-after-free %ld (%ld poisoned reads, %ld writes into freed state)\n",
	       v, r->uaf, atomic_load(&s->uaf_reads), atomic_load(&s->uaf_writes));
	printf("# %s: CPU %.2fs process, %.2fs server threads (%.1f us a request); "
	       "load phase %.1f us a request (process)\n",
	       v, r->cpu_s, r->server_cpu_s, r->cpu_us_req, r->proc_cpu_us_req);
	printf("# %s: syscalls a request %.2f (workers %.2f, reaper %.2f, accept %.2f); "
	       "SQEs a request %.2f\n",
	       v, per_req(sys_total, r->answered), per_req(r->sys_worker, r->answered),
	       per_req(r->sys_reaper, r->answered), per_req(r->sys_accept, r->answered),
	       per_req(r->sqes, r->answered));
	printf("# %s: syscalls:", v);
	for (k = 0; k < NSYS; k++)
		if (r->sys[k])
			printf(" %s %" PRIu64, sys_names[k], r->sys[k]);
	printf("\n");
	printf("# %s: idle %.2fs: %.1f wakeups/s a worker, workers' CPU %.1f us/s; "
	       "load: %" PRIu64 " waits, %" PRIu64 " without a request\n",
	       v, r->idle_secs, idle_rate, idle_cpu, r->waits, r->empty_waits);
	printf("# %s: connections %ld created, %ld retired, %ld freed; DISABLE %ld x 0, %ld x EBUSY; "
	       "limbo peak %ld, grace periods %ld\n",
	       v, atomic_load(&s->created), atomic_load(&s->retired), atomic_load(&s->freed),
	       atomic_load(&s->disable_ok), atomic_load(&s->disable_busy), s->limbo_peak,
	       s->grace_periods);
	printf("# %s: stale events %ld, retired busy %ld, hand-overs %ld, POLL_REMOVE %ld cancelled, "
	       "%ld late, %ld again; %ld -ECANCELED CQEs, %ld ring errors\n",
	       v, atomic_load(&s->stale_events), atomic_load(&s->gen_busy),
	       atomic_load(&s->handoffs),
	       atomic_load(&s->remove_cancelled), atomic_load(&s->remove_late),
	       atomic_load(&s->remove_retried), atomic_load(&s->cancelled_cqes),
	       atomic_load(&s->ring_errors));
	printf("# %s: clients: %" PRIu64 " dropped by retirement, %" PRIu64 " timeouts, %" PRIu64 " wrong answers; "
	       "%ld re-arms after DEL, %ld stale descriptors, %ld epoll_ctl errors, %ld items left\n",
	       v, r->dropped, r->timeouts, r->wrong, atomic_load(&s->rearm_enoent),
	       atomic_load(&s->stale_fd), atomic_load(&s->ctl_errors), r->leaked_items);
	if (!s->o.json)
		return;
	printf("{\"variant\":\"%s\",\"workers\":%d,\"clients\":%d,\"secs\":%.3f,"
	       "\"requests\":%ld,\"rps\":%.1f,\"p50_us\":%.2f,\"p99_us\":%.2f,"
	       "\"held_peak_bytes\":%ld,\"held_mean_bytes\":%.0f,\"conn_bytes\":%zu,"
	       "\"uaf\":%ld,\"uaf_reads\":%ld,\"uaf_writes\":%ld,"
	       "\"cpu_s\":%.3f,\"server_cpu_s\":%.3f,\"cpu_us_per_request\":%.2f,"
	       "\"created\":%ld,\"freed\":%ld,\"disable_ok\":%ld,\"disable_busy\":%ld,"
	       "\"limbo_peak\":%ld,\"dropped\":%" PRIu64 ",\"timeouts\":%" PRIu64 ","
	       "\"wrong\":%" PRIu64 ",\"stale_fd\":%ld,\"ctl_errors\":%ld",
	       v, s->o.workers, s->o.clients, r->secs, r->answered, r->rps,
	       r->p50_us, r->p99_us, atomic_load(&s->held_peak), r->held_avg,
	       sizeof(struct conn), r->uaf, atomic_load(&s->uaf_reads),
	       atomic_load(&s->uaf_writes), r->cpu_s, r->server_cpu_s, r->cpu_us_req,
	       atomic_load(&s->created), atomic_load(&s->freed),
	       atomic_load(&s->disable_ok), atomic_load(&s->disable_busy),
	       s->limbo_peak, r->dropped, r->timeouts, r->wrong,
	       atomic_load(&s->stale_fd), atomic_load(&s->ctl_errors));
	printf(",\"conn_requests\":%ld,\"idle_ms\":%ld,\"conn_age_ms\":%ld,\"tick_us\":%ld,"
	       "\"load_cpu_s\":%.3f,\"process_cpu_us_per_request\":%.2f,"
	       "\"syscalls_per_request\":%.3f,\"worker_syscalls_per_request\":%.3f,"
	       "\"reaper_syscalls_per_request\":%.3f,\"accept_syscalls_per_request\":%.3f,"
	       "\"sqes_per_request\":%.3f",
	       s->o.conn_requests, s->o.idle_ms, s->o.conn_age_ms, s->o.tick_us,
	       r->load_cpu_s, r->proc_cpu_us_req,
	       per_req(sys_total, r->answered), per_req(r->sys_worker, r->answered),
	       per_req(r->sys_reaper, r->answered), per_req(r->sys_accept, r->answered),
	       per_req(r->sqes, r->answered));
	for (k = 0; k < NSYS; k++)
		printf(",\"sys_%s\":%" PRIu64, sys_names[k], r->sys[k]);
	printf(",\"retired\":%ld,\"retire_samples\":%" PRIu64 ",\"retire_p50_us\":%.2f,"
	       "\"retire_p99_us\":%.2f,\"state_peak_bytes\":%ld,\"state_mean_bytes\":%.0f,"
	       "\"slot_bytes\":%ld,\"ring_bytes\":%ld,\"idle_secs\":%.3f,"
	       "\"idle_wakeups_per_s_per_worker\":%.2f,\"idle_returns\":%.0f,"
	       "\"idle_worker_cpu_us_per_s\":%.1f,"
	       "\"waits\":%" PRIu64 ",\"empty_waits\":%" PRIu64 ",\"stale_events\":%ld,\"gen_busy\":%ld,"
	       "\"handoffs\":%ld,\"grace_periods\":%ld,\"remove_cancelled\":%ld,"
	       "\"remove_late\":%ld,\"remove_retried\":%ld,\"cancelled_cqes\":%ld,"
	       "\"ring_errors\":%ld,\"rearm_enoent\":%ld,\"leaked_items\":%ld}\n",
	       atomic_load(&s->retired), r->retire_samples, r->retire_p50_us,
	       r->retire_p99_us, atomic_load(&s->state_peak), r->state_avg,
	       s->slot_bytes, s->ring_bytes, r->idle_secs, idle_rate, r->idle_returns, idle_cpu,
	       r->waits, r->empty_waits, atomic_load(&s->stale_events),
	       atomic_load(&s->gen_busy), atomic_load(&s->handoffs), s->grace_periods,
	       atomic_load(&s->remove_cancelled), atomic_load(&s->remove_late),
	       atomic_load(&s->remove_retried), atomic_load(&s->cancelled_cqes),
	       atomic_load(&s->ring_errors), atomic_load(&s->rearm_enoent),
	       r->leaked_items);
}

/* --check: what must hold; prints each failure. */
static int verdict(struct server *s, struct result *r, long fds_before)
{
	long fds_after = count_fds();
	int bad = 0;

#define EXPECT(cond, ...) do {						\
		if (!(cond)) {						\
			printf("# FAIL: " __VA_ARGS__);			\
			printf("\n");					\
			bad++;						\
		}							\
	} while (0)

	if (s->o.retire == RETIRE_NAIVE) {
		/* The detector must see what deleting at once causes. */
		EXPECT(r->uaf > 0, "naive: no use-after-free seen (detector blind?)");
		return bad ? KSFT_FAIL : KSFT_PASS;
	}
	EXPECT(r->answered > 0, "no request was answered");
	EXPECT(r->uaf == 0, "%ld use-after-free", r->uaf);
	EXPECT(r->wrong == 0, "%" PRIu64 " wrong answers", r->wrong);
	EXPECT(r->timeouts == 0, "%" PRIu64 " requests never answered", r->timeouts);
	EXPECT(atomic_load(&s->stale_fd) == 0, "%ld I/O errors on a connection",
	       atomic_load(&s->stale_fd));
	EXPECT(atomic_load(&s->ctl_errors) == 0, "%ld unexpected epoll_ctl() errors",
	       atomic_load(&s->ctl_errors));
	EXPECT(atomic_load(&s->ring_errors) == 0, "%ld io_uring errors",
	       atomic_load(&s->ring_errors));
	EXPECT(s->live == 0, "%ld connections not retired", s->live);
	EXPECT(atomic_load(&s->retired) == atomic_load(&s->created),
	       "%ld connections created, %ld retired",
	       atomic_load(&s->created), atomic_load(&s->retired));
	EXPECT(atomic_load(&s->freed) == atomic_load(&s->created),
	       "%ld connections created, %ld freed",
	       atomic_load(&s->created), atomic_load(&s->freed));
	EXPECT(atomic_load(&s->held) == 0, "%ld bytes of state never freed",
	       atomic_load(&s->held));
	EXPECT(atomic_load(&s->state) == s->slot_bytes, "%ld bytes of state left",
	       atomic_load(&s->state) - s->slot_bytes);
	EXPECT(r->leaked_items == 0, "%ld items left in the epoll instances", r->leaked_items);
	EXPECT(fds_after == fds_before, "%ld descriptors open before, %ld after",
	       fds_before, fds_after);
	if (s->o.retire == RETIRE_DISABLE)
		EXPECT(atomic_load(&s->disable_ok) > 0 && atomic_load(&s->disable_busy) > 0,
		       "DISABLE answered 0 %ld times and EBUSY %ld times: both must occur",
		       atomic_load(&s->disable_ok), atomic_load(&s->disable_busy));
	if (s->o.retire == RETIRE_QSBR)
		EXPECT(s->grace_periods > 0, "qsbr: no grace period ended");
	if (s->o.retire == RETIRE_PERTHREAD)
		EXPECT(atomic_load(&s->handoffs) == atomic_load(&s->retired),
		       "perthread: %ld hand-overs for %ld retirements",
		       atomic_load(&s->handoffs), atomic_load(&s->retired));
	if (uses_uring(s))
		EXPECT(atomic_load(&s->remove_cancelled) > 0,
		       "POLL_REMOVE never cancelled an armed poll");
#undef EXPECT
	return bad ? KSFT_FAIL : KSFT_PASS;
}

/* 0: go on; else the exit status (the kernel lacks what the variant needs). */
static int probe(struct server *s)
{
	const char *v = retire_names[s->o.retire];
	char why[160] = "";
	int ret;

	if (s->o.retire == RETIRE_DISABLE) {
		ret = probe_disable();
		if (ret == 0)
			snprintf(why, sizeof(why), "the kernel lacks EPOLL_CTL_DISABLE");
		else if (ret < 0)
			printf("# EPOLL_CTL_DISABLE probe: %s\n", strerror(-ret));
	} else if (uses_uring(s)) {
		ret = probe_uring(s->o.retire == RETIRE_URING_MULTI, why, sizeof(why));
		if (ret < 0)
			printf("# io_uring probe: %s\n", strerror(-ret));
	} else {
		return 0;
	}
	if (ret == 0) {
		if (s->o.check)
			printf("ok 1 epoll_server --retire=%s # SKIP %s\n", v, why);
		else
			printf("# %s: skipped: %s\n", v, why);
		return KSFT_SKIP;
	}
	if (ret < 0) {
		if (s->o.check)
			printf("not ok 1 epoll_server --retire=%s\n", v);
		return KSFT_FAIL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct server srv;
	struct server *s = &srv;
	struct result r = { 0 };
	struct utsname u;
	long fds_before;
	int ret = KSFT_PASS;

	if (parse(argc, argv, &s->o)) {
		usage(stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	uname(&u);
	if (s->o.check)
		printf("TAP version 13\n1..1\n");
	printf("# epoll_server --retire=%s: %d workers, %d clients, %ld ms or %ld requests, on %s\n",
	       retire_names[s->o.retire], s->o.workers, s->o.clients,
	       s->o.duration_ms, s->o.requests, u.release);
	ret = probe(s);
	if (ret)
		return ret;
	fds_before = count_fds();
	pthread_mutex_init(&s->q_lock, NULL);
	s->table.next = s->table.prev = &s->table;
	s->free_slot = NO_SLOT;
	ret = setup(s);
	if (ret) {
		printf("# set-up: %s\n", strerror(-ret));
		if (s->o.check)
			printf("not ok 1 epoll_server --retire=%s\n", retire_names[s->o.retire]);
		return KSFT_FAIL;
	}

	run(s, &r);
	teardown(s);
	report(s, &r);
	if (s->o.check) {
		ret = verdict(s, &r, fds_before);
		printf("%s 1 epoll_server --retire=%s\n", ret ? "not ok" : "ok",
		       retire_names[s->o.retire]);
	}
	return ret;
}
