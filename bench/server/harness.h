/* SPDX-License-Identifier: GPL-2.0 */
/*
 * harness.h - what every variant of epoll_server shares: the workload
 * (clients, connections, the reaper's policy), the measurement (syscall
 * counts, CPU, latency, state held), the use-after-free detector, and the
 * interface a variant implements (struct variant). harness.c is the
 * program; each other .c file of this directory is one way to retire a
 * connection while workers may be handling it (bench/VARIANTS.md).
 */
#ifndef EPOLL_SERVER_HARNESS_H
#define EPOLL_SERVER_HARNESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/types.h>
#include <time.h>

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
#define CONN_PRIV	48	/* the variant's own per-connection fields */
#define BATCH		8	/* events per epoll_wait() */
#define MAX_WORKERS	64
#define MAX_CLIENTS	256

/* epoll data.u64 of the control descriptors (no state pointer is 0 or 1). */
#define EV_STOP		0
#define EV_KICK		1

/* Every kind of system call the server side makes. */
enum sys {
	SYS_EPOLL_WAIT, SYS_EPOLL_CTL, SYS_RECV, SYS_SEND, SYS_CLOSE,
	SYS_SHUTDOWN, SYS_URING_ENTER, SYS_READ, SYS_WRITE, SYS_FUTEX,
	SYS_NANOSLEEP, NSYS
};

/*
 * Events of the variants, counted and reported (JSON key = name in
 * harness.c's ctr_names[]). A variant bumps those that concern it.
 */
enum ctr {
	C_CTL_ERRORS,		/* epoll_ctl() failures that must not be */
	C_STALE_FD,		/* recv/send errors on a connection */
	C_RING_ERRORS,		/* io_uring failures that must not be */
	C_DISABLE_OK,		/* disable: DISABLE answered 0 */
	C_DISABLE_BUSY,		/* disable: DISABLE answered EBUSY */
	C_FORCED_EVENTS,	/* shutdown: armed, shut down to force an event */
	C_HANDLER_FREES,	/* shutdown: retired while handled, the handler frees */
	C_REARM_ENOENT,		/* MOD after the reaper's DEL (expected) */
	C_STALE_EVENTS,		/* gen: generation mismatch */
	C_GEN_BUSY,		/* gen: retired while a worker held a reference */
	C_HANDOFFS,		/* connections queued to an owner */
	C_GRACE_PERIODS,	/* qsbr variants: grace periods ended */
	C_GP_BY_WORKER,		/* qsbr-self: ... of which a worker ended */
	C_REMOVE_CANCELLED,	/* uring: POLL_REMOVE or ASYNC_CANCEL found it armed */
	C_REMOVE_LATE,		/* uring: ... found it fired or gone */
	C_REMOVE_RETRIED,	/* uring-multishot: POLL_REMOVE queued again */
	C_CANCELLED_CQES,	/* uring: -ECANCELED completions */
	C_REARMS,		/* uring-recv: multishot recv armed again */
	NCTR
};

struct opts {
	const struct variant *v;
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

/* Everything a connection owns; freed (poisoned, quarantined) at retirement. */
struct conn {
	_Atomic uint64_t magic;		/* CONN_LIVE, CONN_FREED once freed */
	uint64_t id;
	int fd;				/* server end of the socketpair */
	int owner;			/* partitioned variants: the owning worker */
	bool timed;			/* retired during the load: time it */
	_Atomic bool eof;		/* the peer closed: retire soon */
	_Atomic uint32_t nreq;		/* requests answered */
	_Atomic uint64_t last_ns;	/* last answered request */
	uint64_t born_ns;
	uint64_t retire_ns;		/* when the reaper decided to retire it */
	/*
	 * The reaper's table while live; after retirement, free for the
	 * variant's own lists (limbo, batches). The quarantine's link.
	 */
	struct conn *prev, *next;
	struct conn *qnext;		/* hand-over queues */
	/* The variant's fields (its own struct, see conn_priv()). */
	_Alignas(16) unsigned char priv[CONN_PRIV];
	unsigned char buf[CONN_BUF];
};

/* The variant's per-connection struct @type in @c. */
#define conn_priv(c, type) ({						\
	_Static_assert(sizeof(type) <= CONN_PRIV, #type " too big");	\
	(type *)(void *)(c)->priv;					\
})

struct worker {
	struct server *s;
	int id;
	pthread_t thread;
	clockid_t clock;
	struct epoll_event evs[BATCH];	/* the shared loop's buffer (qsbr: read by others) */
	void *priv;			/* the variant's per-worker state */
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
	const struct variant *v;
	int epfd;			/* the shared instance */
	int stopfd;			/* level-triggered: ends every epoll worker */
	uint64_t t0, deadline;
	_Atomic bool clients_stop, drain, reaper_stop, idle_phase, workers_stop;
	_Atomic long answered;		/* client-side count, for --requests */
	_Atomic int ready;		/* threads through their set-up (worker_ready()) */

	struct lock table_lock;		/* the reaper's list of live conns */
	struct conn table;
	long live;

	void *priv;			/* the variant's server-wide state */
	long limbo_peak;		/* connections waiting for a grace period, peak */
	long slot_bytes;		/* gen: type-stable memory (never freed in the run) */
	long ring_bytes;		/* uring: the rings' memory, apart from state */

	pthread_mutex_t q_lock;		/* quarantine and retire_hist */
	struct conn *quarantine;
	uint64_t retire_hist[HIST_BUCKETS];

	struct worker workers[MAX_WORKERS];
	struct client clients[MAX_CLIENTS];
	pthread_t reaper;
	clockid_t reaper_clock;
	uint64_t reaper_cpu_ns;
	struct tstats reaper_st;

	_Atomic long created, retired, freed;
	_Atomic long uaf_reads, uaf_writes;
	_Atomic long ctr[NCTR];
	_Atomic long handled;
	_Atomic long held, held_peak;	/* bytes retired, not yet freed */
	_Atomic long state, state_peak;	/* bytes of state: conns and slots */
	double held_sum, state_sum;
	long samples;
};

/* What --check found wrong; EXPECT() in a variant's check hook adds to it. */
struct verdict {
	int bad;
};

/*
 * One way to retire a connection. Hooks left NULL take the harness's
 * default, named in brackets.
 */
struct variant {
	const char *name;
	const char *alias;		/* another --retire= name, or NULL */
	/* 1: can run; 0: cannot here, @why says why (a skip); <0: broken. [1] */
	int (*probe)(struct server *s, char *why, size_t len);
	/* Descriptors, rings, private state; 0 or -errno. [nothing] */
	int (*setup)(struct server *s);
	void (*teardown)(struct server *s);
	/* The accept path, in a client thread, before the reaper can see @c. [shared_add] */
	int (*add)(struct server *s, struct conn *c);
	/* The reaper retires @c (off its table); after this it must not touch @c. */
	void (*retire)(struct server *s, struct conn *c);
	/* The reaper, after each tick's retirements. [nothing] */
	void (*tick)(struct server *s);
	/* A worker thread; it calls worker_ready() once set up. [shared_worker] */
	void *(*worker)(void *arg);
	/* shared_worker's hooks: one event (1 if a request was answered) ... */
	int (*event)(struct server *s, struct worker *w, uint64_t data);
	/* ... before epoll_wait(), with the @n events of the last batch handled ... [nothing] */
	void (*before_wait)(struct server *s, struct worker *w, int n);
	/* ... after it. [nothing] */
	void (*after_wait)(struct server *s, struct worker *w);
	/* ... and as the worker ends. [nothing] */
	void (*worker_exit)(struct server *s, struct worker *w);
	bool wait_timeout;		/* epoll_wait() with --quiesce-ms, not -1 */
	/* End the workers once everything is freed. [the stop eventfd] */
	void (*stop)(struct server *s);
	/* Items left in epoll instances at the end, -1 unknown. [the shared instance's] */
	long (*items_left)(struct server *s);
	/* --check: what must hold for this variant beyond the common checks. */
	void (*check)(struct server *s, struct verdict *vd);
	bool expect_uaf;		/* the unsafe control: --check wants use-after-free */
};

#define EXPECT(vd, cond, ...) expect((vd), (cond), __VA_ARGS__)
void expect(struct verdict *vd, bool cond, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

extern __thread struct tstats *tls_stats;

/* Time. */
uint64_t now_ns(void);
uint64_t thread_cpu_ns(void);

/* Counting wrappers: every system call the server side makes goes through one. */
void count_sys(enum sys k);
void bump(_Atomic uint64_t *v);
int x_epoll_wait(int epfd, struct epoll_event *evs, int n, int timeout);
int ctl(int epfd, int op, int fd, struct epoll_event *ev);	/* 0 or -errno */
ssize_t x_recv(int fd, void *buf, size_t len, int flags);
ssize_t x_send(int fd, const void *buf, size_t len, int flags);
int x_close(int fd);
int x_shutdown(int fd, int how);
ssize_t x_read(int fd, void *buf, size_t len);
ssize_t x_write(int fd, const void *buf, size_t len);

void lock_acquire(struct lock *l);
void lock_release(struct lock *l);

static inline void count(struct server *s, enum ctr c)
{
	atomic_fetch_add_explicit(&s->ctr[c], 1, memory_order_relaxed);
}

static inline bool conn_live(struct conn *c)
{
	return atomic_load_explicit(&c->magic, memory_order_acquire) == CONN_LIVE;
}

/* Poison @c and put it in quarantine: the one way state is freed. */
void conn_release(struct server *s, struct conn *c);
/* The connection's descriptor closed and its state released. */
void conn_close_release(struct server *s, struct conn *c);
/* EPOLL_CTL_DEL from the shared instance, close, release. */
void conn_free(struct server *s, struct conn *c);
void state_add(struct server *s, long delta);
void limbo_track(struct server *s, long waiting);

/*
 * Serving. serve_one(): read and answer one request of @c with recv() and
 * send(). 1: answered; 0: nothing to read (EAGAIN, or the peer is gone,
 * which marks it for the reaper); -1: @c was freed under us (counted), the
 * caller must not touch it again. serve_msg(): the same for a request
 * already read (io_uring): fills @resp; -1 if @c was freed.
 */
int serve_one(struct server *s, struct conn *c);
int serve_msg(struct server *s, struct conn *c, const struct msg *req, struct msg *resp);

/* The shared instance: EPOLLIN | EPOLLONESHOT with data.ptr = @c. */
struct epoll_event conn_event(struct conn *c);
int shared_add(struct server *s, struct conn *c);
/* MOD of a shared item after serving; ENOENT (retired meanwhile) is counted apart. */
void shared_rearm(struct server *s, struct conn *c);
/*
 * A variant's event() for the shared instance when the state outlives any
 * worker that may hold it (the QSBR variants): serve, then re-arm.
 */
int shared_serve_and_rearm(struct server *s, struct worker *w, uint64_t data);

/* A worker (or the reaper) has set up what it must own itself. */
void worker_ready(struct server *s);
void *shared_worker(void *arg);
long shared_items_left(struct server *s);
long fdinfo_items(int epfd);

/* The kernel's answer to EPOLL_CTL_DISABLE (1 has it, 0 has not, <0 broken). */
int probe_disable(void);

/* The variants (harness.c lists them for --retire=). */
extern const struct variant variant_disable, variant_shutdown, variant_userspace,
	variant_naive, variant_gen, variant_perthread, variant_qsbr, variant_qsbr_self,
	variant_uring, variant_uring_multishot, variant_uring_recv;

#endif
