// SPDX-License-Identifier: GPL-2.0
/*
 * epoll_server - a multithreaded epoll server whose reaper retires
 * connections while worker threads may be handling them.
 *
 * N workers block in epoll_wait() on one epoll instance. Every connection
 * is registered with EPOLLONESHOT and its state (struct conn) behind
 * data.ptr; a worker that gets an event reads one request, answers it and
 * re-arms the item with EPOLL_CTL_MOD. Client threads keep a bounded load
 * on AF_UNIX socketpairs: each holds one connection, sends a request,
 * waits for the answer, sometimes pauses for longer than the idle limit.
 * A reaper thread retires connections that are idle, have served their
 * quota of requests or are too old, while workers may be handling them,
 * in one of three ways (--retire=):
 *
 *   disable    EPOLL_CTL_DISABLE and the deletion protocol exactly as
 *              Documentation/userspace-api/epoll.rst describes it: a
 *              per-connection lock and "deleted" flag; whoever owns the
 *              event (the reaper on 0, the handling worker on EBUSY)
 *              deletes the item and frees the state.
 *   userspace  no kernel help: quiescent-state-based reclamation (QSBR).
 *              The reaper deletes the item and shuts the socket down at
 *              once, but closes the descriptor and frees the state only
 *              after every worker has passed a quiescent point (the top
 *              of its epoll_wait() loop) since. Workers wait with a
 *              timeout so that an idle one still passes such points.
 *   naive      EPOLL_CTL_DEL, close and free at once: unsafe. A worker
 *              that was handed the event a moment earlier uses freed
 *              state; this variant shows what the other two prevent.
 *
 * Use-after-free detection: freed state is poisoned (every byte 0x6b, the
 * magic word CONN_FREED) and kept in a quarantine that is never returned
 * to malloc during the run, in all variants alike. A worker checks the
 * magic word when it takes an event and again before it re-arms; a
 * poisoned read counts one use-after-free. At the end the quarantine is
 * checked for writes into freed state, which count too.
 *
 * Output: a summary; --json adds one line of JSON. --check runs a short
 * bounded run and exits 0 only if the variant saw no use-after-free, no
 * misrouted answer, no unexpected epoll_ctl() error, and every
 * connection was retired and freed with no item, descriptor or state
 * left (KSFT_SKIP, 4, when the kernel lacks EPOLL_CTL_DISABLE). For the
 * naive variant --check instead requires that use-after-free was seen.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
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
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

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

enum retire { RETIRE_DISABLE, RETIRE_USERSPACE, RETIRE_NAIVE };
static const char *const retire_names[] = { "disable", "userspace", "naive" };

struct opts {
	enum retire retire;
	int workers;		/* threads in epoll_wait() */
	int clients;		/* client threads, one connection each */
	long duration_ms;	/* the run ends after this long ... */
	long requests;		/* ... or this many answered requests */
	long idle_ms;		/* retire a connection idle this long */
	long conn_requests;	/* retire a connection after this many requests */
	long conn_age_ms;	/* retire a connection this old */
	int pause_pct;		/* % of requests after which a client pauses */
	long tick_us;		/* reaper period */
	long quiesce_ms;	/* userspace: epoll_wait() timeout of the workers */
	int work;		/* rounds over the state per request */
	bool check;
	bool json;
};

struct msg {
	uint64_t seq;		/* client's sequence number */
	uint64_t client;	/* client's number */
	uint64_t sum;		/* answer: a digest of the state */
	uint64_t pad;
};

/* Everything a connection owns, behind data.ptr. */
struct conn {
	_Atomic uint64_t magic;		/* CONN_LIVE, CONN_FREED once freed */
	uint64_t id;
	int fd;				/* server end of the socketpair */
	pthread_mutex_t lock;		/* disable: deleted and the re-arm */
	bool deleted;			/* disable: the handler frees it */
	_Atomic bool eof;		/* the peer closed: retire soon */
	_Atomic uint64_t last_ns;	/* last answered request */
	uint64_t born_ns;
	_Atomic uint32_t nreq;		/* requests answered */
	uint64_t retire_epoch;		/* userspace: epoch at retirement */
	struct conn *prev, *next;	/* reaper's table, limbo, quarantine */
	unsigned char buf[CONN_BUF];
};

struct worker {
	struct server *s;
	pthread_t thread;
	_Atomic uint64_t epoch;		/* userspace: last quiescent point */
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
	uint64_t hist[HIST_BUCKETS];	/* latency, ns */
};

struct server {
	struct opts o;
	int epfd;
	int stopfd;			/* level-triggered: ends every worker */
	uint64_t t0, deadline;
	_Atomic bool clients_stop, drain, reaper_stop;
	_Atomic long answered;		/* client-side count, for --requests */

	pthread_mutex_t table_lock;	/* the reaper's list of live conns */
	struct conn table;
	long live;

	_Atomic uint64_t epoch;		/* userspace: grace-period counter */
	struct conn *limbo, *limbo_tail;	/* userspace: reaper only */
	long limbo_len, limbo_peak;

	pthread_mutex_t q_lock;		/* quarantine of freed state */
	struct conn *quarantine;

	struct worker workers[MAX_WORKERS];
	struct client clients[MAX_CLIENTS];
	pthread_t reaper;
	uint64_t reaper_cpu_ns;

	/* Counters: every one is reported. */
	_Atomic long created, retired, freed;
	_Atomic long uaf_reads, uaf_writes;
	_Atomic long ctl_errors;	/* epoll_ctl() failures that must not be */
	_Atomic long disable_ok, disable_busy;
	_Atomic long rearm_enoent;	/* userspace/naive: MOD after DEL */
	_Atomic long stale_fd;		/* recv/send on a descriptor not ours */
	_Atomic long handled;
	_Atomic long held, held_peak;	/* bytes retired, not yet freed */
	double held_sum;
	long held_samples;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
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

static int ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	return epoll_ctl(epfd, op, fd, ev) ? -errno : 0;
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

static bool conn_live(struct conn *c)
{
	return atomic_load_explicit(&c->magic, memory_order_acquire) == CONN_LIVE;
}

/* Poison @c and put it in quarantine: it is never touched or reused again. */
static void conn_release(struct server *s, struct conn *c)
{
	atomic_store(&c->magic, CONN_FREED);
	pthread_mutex_destroy(&c->lock);
	memset((char *)c + sizeof(c->magic), POISON_BYTE, sizeof(*c) - sizeof(c->magic));
	pthread_mutex_lock(&s->q_lock);
	c->next = s->quarantine;	/* the link is outside the checked bytes */
	s->quarantine = c;
	pthread_mutex_unlock(&s->q_lock);
	atomic_fetch_add(&s->held, -(long)sizeof(*c));
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
	close(c->fd);
	conn_release(s, c);
}

/*
 * The deletion protocol of Documentation/userspace-api/epoll.rst, as
 * written there: conn_delete() in the reaper, conn_done() in the worker
 * that handled an event. Exactly one of them frees the state.
 */
static void conn_delete(struct server *s, struct conn *c)
{
	bool owner;
	int ret;

	pthread_mutex_lock(&c->lock);
	ret = ctl(s->epfd, EPOLL_CTL_DISABLE, c->fd, NULL);
	owner = ret == 0;
	if (!owner)		/* EBUSY: an event is being handled */
		c->deleted = true;
	pthread_mutex_unlock(&c->lock);
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

	pthread_mutex_lock(&c->lock);
	deleted = c->deleted;
	if (!deleted && ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev))
		atomic_fetch_add(&s->ctl_errors, 1);
	pthread_mutex_unlock(&c->lock);
	if (deleted)
		conn_free(s, c);
}

/* userspace: stop events at once, free after a grace period. */
static void qsbr_retire(struct server *s, struct conn *c)
{
	if (ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL))
		atomic_fetch_add(&s->ctl_errors, 1);
	/* The peer sees EOF now; the number stays ours until the close. */
	shutdown(c->fd, SHUT_RDWR);
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
static void qsbr_reclaim(struct server *s)
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
		close(c->fd);
		conn_release(s, c);
	}
}

static void conn_retire(struct server *s, struct conn *c)
{
	atomic_fetch_add(&s->retired, 1);
	max_store(&s->held_peak,
		  atomic_fetch_add(&s->held, (long)sizeof(*c)) + (long)sizeof(*c));
	switch (s->o.retire) {
	case RETIRE_DISABLE:
		conn_delete(s, c);
		break;
	case RETIRE_USERSPACE:
		qsbr_retire(s, c);
		break;
	case RETIRE_NAIVE:
		conn_free(s, c);
		break;
	}
}

/* Called by a client thread: the server "accepts" @fd. */
static int conn_new(struct server *s, int fd)
{
	struct epoll_event ev;
	struct conn *c;
	int ret;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	c->fd = fd;
	c->id = atomic_fetch_add(&s->created, 1);
	c->born_ns = now_ns();
	atomic_store(&c->last_ns, c->born_ns);
	memset(c->buf, (int)c->id, sizeof(c->buf));
	atomic_store_explicit(&c->magic, CONN_LIVE, memory_order_release);
	/* Registered before the reaper can see it: DISABLE must not see ENOENT. */
	ev = conn_event(c);
	ret = ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev);
	if (ret) {
		atomic_fetch_add(&s->ctl_errors, 1);
		atomic_fetch_sub(&s->created, 1);
		free(c);
		return ret;
	}
	pthread_mutex_lock(&s->table_lock);
	c->next = s->table.next;
	c->prev = &s->table;
	s->table.next->prev = c;
	s->table.next = c;
	s->live++;
	pthread_mutex_unlock(&s->table_lock);
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

static void handle(struct server *s, struct conn *c)
{
	struct msg req, resp;
	ssize_t n;
	int fd;

	if (!conn_live(c)) {	/* handed an event for freed state */
		atomic_fetch_add(&s->uaf_reads, 1);
		return;
	}
	fd = c->fd;
	n = recv(fd, &req, sizeof(req), MSG_DONTWAIT);
	if (n == sizeof(req)) {
		resp = req;
		resp.sum = conn_work(c, &req, s->o.work);
		atomic_store_explicit(&c->last_ns, now_ns(), memory_order_relaxed);
		atomic_fetch_add_explicit(&c->nreq, 1, memory_order_relaxed);
		if (send(fd, &resp, sizeof(resp), MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
		    errno != EPIPE && errno != ECONNRESET && errno != EAGAIN)
			atomic_fetch_add(&s->stale_fd, 1);
		atomic_fetch_add_explicit(&s->handled, 1, memory_order_relaxed);
	} else if (n == 0) {
		/* Peer gone (or shut down by a retiring reaper): retire it. */
		atomic_store(&c->eof, true);
	} else if (n < 0 && errno != EAGAIN && errno != ECONNRESET) {
		atomic_fetch_add(&s->stale_fd, 1);
	}
	if (!conn_live(c)) {	/* freed while we handled it */
		atomic_fetch_add(&s->uaf_reads, 1);
		return;
	}
	switch (s->o.retire) {
	case RETIRE_DISABLE:
		conn_done(s, c);
		break;
	case RETIRE_USERSPACE:
	case RETIRE_NAIVE: {
		struct epoll_event ev = conn_event(c);
		int ret = ctl(s->epfd, EPOLL_CTL_MOD, fd, &ev);

		/* The reaper deleted the item meanwhile: expected. */
		if (ret == -ENOENT || (ret == -EBADF && s->o.retire == RETIRE_NAIVE))
			atomic_fetch_add(&s->rearm_enoent, 1);
		else if (ret)
			atomic_fetch_add(&s->ctl_errors, 1);
		break;
	}
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct server *s = w->s;
	struct epoll_event evs[BATCH];
	int timeout = -1, n, i;
	bool stop = false;

	if (s->o.retire == RETIRE_USERSPACE)
		timeout = s->o.quiesce_ms;
	while (!stop) {
		/* Quiescent point: this thread holds no connection now. */
		if (s->o.retire == RETIRE_USERSPACE)
			atomic_store(&w->epoch, atomic_load(&s->epoch));
		n = epoll_wait(s->epfd, evs, BATCH, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("epoll_wait");
			break;
		}
		for (i = 0; i < n; i++) {
			if (!evs[i].data.ptr)
				stop = true;
			else
				handle(s, evs[i].data.ptr);
		}
	}
	atomic_store(&w->epoch, UINT64_MAX);
	w->cpu_ns = thread_cpu_ns();
	return NULL;
}

static bool reap_due(struct server *s, struct conn *c, uint64_t now)
{
	return s->drain || atomic_load_explicit(&c->eof, memory_order_relaxed) ||
	       now - atomic_load_explicit(&c->last_ns, memory_order_relaxed) >
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
	uint64_t now;

	for (;;) {
		nanosleep(&tick, NULL);
		now = now_ns();
		pthread_mutex_lock(&s->table_lock);
		for (c = s->table.next; c != &s->table; c = next) {
			next = c->next;
			if (!reap_due(s, c, now))
				continue;
			c->prev->next = c->next;
			c->next->prev = c->prev;
			s->live--;
			c->next = victims;
			victims = c;
		}
		pthread_mutex_unlock(&s->table_lock);
		/* Outside the table lock: the table only tells who is live. */
		for (c = victims; c; c = next) {
			next = c->next;
			conn_retire(s, c);
		}
		victims = NULL;
		if (s->o.retire == RETIRE_USERSPACE)
			qsbr_reclaim(s);
		s->held_sum += atomic_load(&s->held);
		s->held_samples++;
		if (atomic_load(&s->reaper_stop))
			break;
	}
	s->reaper_cpu_ns = thread_cpu_ns();
	return NULL;
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

struct result {
	double secs, rps, p50_us, p99_us, held_avg, cpu_s, server_cpu_s, cpu_us_req;
	long answered, uaf, leaked_items, leaked_fds;
	uint64_t dropped, timeouts, wrong;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: epoll_server [options]\n"
		"  --retire=disable|userspace|naive  how the reaper retires (default disable)\n"
		"  --workers=N        threads in epoll_wait() (default 4)\n"
		"  --clients=N        client threads, one connection each (default 16)\n"
		"  --duration-ms=N    run length (default 3000; --check: 1500)\n"
		"  --requests=N       stop after N answers (default 200000; --check: 20000)\n"
		"  --idle-ms=N        idle limit of a connection (default 20)\n"
		"  --conn-requests=N  requests per connection before it expires (default 16)\n"
		"  --conn-age-ms=N    age limit of a connection (default 200)\n"
		"  --pause-pct=N      %% of answers after which a client pauses past the\n"
		"                     idle limit (default 2)\n"
		"  --tick-us=N        reaper period (default 1000)\n"
		"  --quiesce-ms=N     userspace: workers' epoll_wait() timeout (default 5)\n"
		"  --work=N           rounds over the %d-byte state per request (default 2)\n"
		"  --check            short run; exit 0 only if it is correct (see source)\n"
		"  --json             also print the results as one JSON line\n"
		"Exit status: 0 ok, 1 failed check, 2 usage, 4 skipped (no EPOLL_CTL_DISABLE).\n",
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
		{ "work", required_argument, NULL, 'W' },
		{ "check", no_argument, NULL, 'C' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	long duration = -1, requests = -1;
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
			for (i = 0; i < 3; i++)
				if (!strcmp(optarg, retire_names[i]))
					break;
			if (i == 3)
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
		case 'W': o->work = atoi(optarg); break;
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
	if (o->workers < 1 || o->workers > MAX_WORKERS ||
	    o->clients < 1 || o->clients > MAX_CLIENTS ||
	    o->duration_ms <= 0 || o->idle_ms <= 0 || o->conn_requests <= 0 ||
	    o->conn_age_ms <= 0 || o->tick_us <= 0 || o->quiesce_ms <= 0 ||
	    o->work < 0 || o->pause_pct < 0 || o->pause_pct > 100)
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

static void run(struct server *s, struct result *r)
{
	struct rusage ru0, ru1;
	uint64_t hist[HIST_BUCKETS] = { 0 };
	struct epoll_event stop = { .events = EPOLLIN };
	uint64_t one = 1, t1;
	int i, j;

	getrusage(RUSAGE_SELF, &ru0);
	s->t0 = now_ns();
	s->deadline = s->t0 + s->o.duration_ms * 1000000ULL;
	for (i = 0; i < s->o.workers; i++) {
		s->workers[i].s = s;
		start_thread(&s->workers[i].thread, worker_main, &s->workers[i]);
	}
	start_thread(&s->reaper, reaper_main, s);
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

	/* Retire every connection while the workers still run ... */
	atomic_store(&s->drain, true);
	for (;;) {
		pthread_mutex_lock(&s->table_lock);
		j = s->live == 0;
		pthread_mutex_unlock(&s->table_lock);
		if (j && atomic_load(&s->freed) == atomic_load(&s->created))
			break;
		if (now_ns() - t1 > 10000000000ULL)
			break;	/* leaked: the checks say so */
		usleep(1000);
	}
	atomic_store(&s->reaper_stop, true);
	pthread_join(s->reaper, NULL);
	/* ... then end the workers. */
	stop.data.ptr = NULL;
	epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->stopfd, &stop);
	if (write(s->stopfd, &one, sizeof(one)) != sizeof(one))
		perror("write stopfd");
	for (i = 0; i < s->o.workers; i++)
		pthread_join(s->workers[i].thread, NULL);
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->stopfd, NULL);
	getrusage(RUSAGE_SELF, &ru1);

	r->leaked_items = fdinfo_items(s->epfd);
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
	r->held_avg = s->held_samples ? s->held_sum / s->held_samples : 0;
	r->cpu_s = tv_s(ru1.ru_utime) + tv_s(ru1.ru_stime) -
		   tv_s(ru0.ru_utime) - tv_s(ru0.ru_stime);
	r->server_cpu_s = s->reaper_cpu_ns / 1e9;
	for (i = 0; i < s->o.workers; i++)
		r->server_cpu_s += s->workers[i].cpu_ns / 1e9;
	r->cpu_us_req = r->answered ? r->server_cpu_s * 1e6 / r->answered : 0;
	atomic_fetch_add(&s->uaf_writes, quarantine_check(s));
	r->uaf = atomic_load(&s->uaf_reads) + atomic_load(&s->uaf_writes);
}

static void report(struct server *s, struct result *r)
{
	const char *v = retire_names[s->o.retire];

	printf("# %s: %ld answers in %.2fs: %.0f req/s, latency p50 %.1f us, p99 %.1f us\n",
	       v, r->answered, r->secs, r->rps, r->p50_us, r->p99_us);
	printf("# %s: state retired but not freed: peak %ld B, mean %.0f B (%zu B a connection)\n",
	       v, atomic_load(&s->held_peak), r->held_avg, sizeof(struct conn));
	printf("# %s: use-after-free %ld (%ld poisoned reads, %ld writes into freed state)\n",
	       v, r->uaf, atomic_load(&s->uaf_reads), atomic_load(&s->uaf_writes));
	printf("# %s: CPU %.2fs process, %.2fs server threads (%.1f us a request)\n",
	       v, r->cpu_s, r->server_cpu_s, r->cpu_us_req);
	printf("# %s: connections %ld created, %ld retired, %ld freed; DISABLE %ld x 0, %ld x EBUSY; limbo peak %ld\n",
	       v, atomic_load(&s->created), atomic_load(&s->retired), atomic_load(&s->freed),
	       atomic_load(&s->disable_ok), atomic_load(&s->disable_busy), s->limbo_peak);
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
	       "\"wrong\":%" PRIu64 ",\"stale_fd\":%ld,\"ctl_errors\":%ld}\n",
	       v, s->o.workers, s->o.clients, r->secs, r->answered, r->rps,
	       r->p50_us, r->p99_us, atomic_load(&s->held_peak), r->held_avg,
	       sizeof(struct conn), r->uaf, atomic_load(&s->uaf_reads),
	       atomic_load(&s->uaf_writes), r->cpu_s, r->server_cpu_s, r->cpu_us_req,
	       atomic_load(&s->created), atomic_load(&s->freed),
	       atomic_load(&s->disable_ok), atomic_load(&s->disable_busy),
	       s->limbo_peak, r->dropped, r->timeouts, r->wrong,
	       atomic_load(&s->stale_fd), atomic_load(&s->ctl_errors));
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
	EXPECT(s->live == 0, "%ld connections not retired", s->live);
	EXPECT(atomic_load(&s->retired) == atomic_load(&s->created),
	       "%ld connections created, %ld retired",
	       atomic_load(&s->created), atomic_load(&s->retired));
	EXPECT(atomic_load(&s->freed) == atomic_load(&s->created),
	       "%ld connections created, %ld freed",
	       atomic_load(&s->created), atomic_load(&s->freed));
	EXPECT(atomic_load(&s->held) == 0, "%ld bytes of state never freed",
	       atomic_load(&s->held));
	EXPECT(r->leaked_items == 0, "%ld items left in the epoll instance", r->leaked_items);
	EXPECT(fds_after == fds_before, "%ld descriptors open before, %ld after",
	       fds_before, fds_after);
	if (s->o.retire == RETIRE_DISABLE)
		EXPECT(atomic_load(&s->disable_ok) > 0 && atomic_load(&s->disable_busy) > 0,
		       "DISABLE answered 0 %ld times and EBUSY %ld times: both must occur",
		       atomic_load(&s->disable_ok), atomic_load(&s->disable_busy));
#undef EXPECT
	return bad ? KSFT_FAIL : KSFT_PASS;
}

int main(int argc, char **argv)
{
	static struct server srv;
	struct server *s = &srv;
	struct result r = { 0 };
	struct utsname u;
	long fds_before;
	int ret = KSFT_PASS, probe;

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
	if (s->o.retire == RETIRE_DISABLE) {
		probe = probe_disable();
		if (probe == 0) {
			if (s->o.check)
				printf("ok 1 epoll_server --retire=disable # SKIP ");
			else
				printf("# disable: skipped: ");
			printf("the kernel lacks EPOLL_CTL_DISABLE\n");
			return KSFT_SKIP;
		}
		if (probe < 0) {
			printf("# EPOLL_CTL_DISABLE probe: %s\n", strerror(-probe));
			if (s->o.check)
				printf("not ok 1 epoll_server --retire=disable\n");
			return KSFT_FAIL;
		}
	}
	fds_before = count_fds();
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->stopfd = eventfd(0, EFD_CLOEXEC);
	if (s->epfd < 0 || s->stopfd < 0) {
		perror("epoll_create1/eventfd");
		return KSFT_FAIL;
	}
	pthread_mutex_init(&s->table_lock, NULL);
	pthread_mutex_init(&s->q_lock, NULL);
	s->table.next = s->table.prev = &s->table;

	run(s, &r);
	close(s->stopfd);
	close(s->epfd);
	report(s, &r);
	if (s->o.check) {
		ret = verdict(s, &r, fds_before);
		printf("%s 1 epoll_server --retire=%s\n", ret ? "not ok" : "ok",
		       retire_names[s->o.retire]);
	}
	return ret;
}
