// SPDX-License-Identifier: GPL-2.0
/*
 * epoll_server - a multithreaded server whose reaper retires connections
 * while worker threads may be handling them, in several ways on one
 * workload. This file is the harness: the workload, the measurement, the
 * checks and the program; each variant is a file of its own in this
 * directory (struct variant in harness.h; designs in bench/VARIANTS.md).
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
 * Use-after-free detection: freed state is poisoned (every byte 0x6b, the
 * magic word CONN_FREED) and kept in a quarantine that is never returned
 * to malloc during the run, in all variants alike. A worker checks the
 * magic word when it takes an event and again before it re-arms; a
 * poisoned read counts one use-after-free. At the end the quarantine is
 * checked for writes into freed state, which count too.
 *
 * Syscalls are counted per thread through the wrappers below (x_*(),
 * ctl(), the futex calls of struct lock, and the variants' own): what the
 * workers, the reaper and the accept path (conn_new()) make. Not counted:
 * the clients' own calls, the main thread's set-up and tear-down, the
 * measurement's quarantine lock and clock reads, and whatever malloc()
 * does inside.
 *
 * Output: a summary; --json adds one line of JSON (keys: bench/VARIANTS.md).
 * --check runs a short bounded run and exits 0 only if the variant saw no
 * use-after-free, no misrouted answer, no unexpected epoll_ctl() or ring
 * error, and every connection was retired and freed with no item,
 * descriptor or state left; KSFT_SKIP (4) when the kernel lacks what the
 * variant needs. For the unsafe control (naive) --check instead requires
 * that use-after-free was seen.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "harness.h"

#define IDLE_SETTLE_MS	20	/* idle phase: let the last retirements finish */

static const struct variant *const variants[] = {
	&variant_disable, &variant_shutdown, &variant_userspace, &variant_naive,
	&variant_gen, &variant_perthread, &variant_qsbr, &variant_qsbr_self,
	&variant_uring, &variant_uring_multishot, &variant_uring_recv,
};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))

static const char *const sys_names[NSYS] = {
	"epoll_wait", "epoll_ctl", "recv", "send", "close", "shutdown",
	"io_uring_enter", "read", "write", "futex", "nanosleep",
};

static const char *const ctr_names[NCTR] = {
	[C_CTL_ERRORS] = "ctl_errors", [C_STALE_FD] = "stale_fd",
	[C_RING_ERRORS] = "ring_errors", [C_DISABLE_OK] = "disable_ok",
	[C_DISABLE_BUSY] = "disable_busy", [C_FORCED_EVENTS] = "forced_events",
	[C_HANDLER_FREES] = "handler_frees", [C_REARM_ENOENT] = "rearm_enoent",
	[C_STALE_EVENTS] = "stale_events", [C_GEN_BUSY] = "gen_busy",
	[C_HANDOFFS] = "handoffs", [C_GRACE_PERIODS] = "grace_periods",
	[C_GP_BY_WORKER] = "gp_by_worker", [C_REMOVE_CANCELLED] = "remove_cancelled",
	[C_REMOVE_LATE] = "remove_late", [C_REMOVE_RETRIED] = "remove_retried",
	[C_CANCELLED_CQES] = "cancelled_cqes", [C_REARMS] = "rearms",
};

__thread struct tstats *tls_stats;

static uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t thread_cpu_ns(void)
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
void bump(_Atomic uint64_t *v)
{
	atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

void count_sys(enum sys k)
{
	if (tls_stats)
		bump(&tls_stats->sys[k]);
}

int x_epoll_wait(int epfd, struct epoll_event *evs, int n, int timeout)
{
	count_sys(SYS_EPOLL_WAIT);
	return epoll_wait(epfd, evs, n, timeout);
}

int ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	count_sys(SYS_EPOLL_CTL);
	return epoll_ctl(epfd, op, fd, ev) ? -errno : 0;
}

ssize_t x_recv(int fd, void *buf, size_t len, int flags)
{
	count_sys(SYS_RECV);
	return recv(fd, buf, len, flags);
}

ssize_t x_send(int fd, const void *buf, size_t len, int flags)
{
	count_sys(SYS_SEND);
	return send(fd, buf, len, flags);
}

int x_close(int fd)
{
	count_sys(SYS_CLOSE);
	return close(fd);
}

int x_shutdown(int fd, int how)
{
	count_sys(SYS_SHUTDOWN);
	return shutdown(fd, how);
}

ssize_t x_read(int fd, void *buf, size_t len)
{
	count_sys(SYS_READ);
	return read(fd, buf, len);
}

ssize_t x_write(int fd, const void *buf, size_t len)
{
	count_sys(SYS_WRITE);
	return write(fd, buf, len);
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
void lock_acquire(struct lock *l)
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

void lock_release(struct lock *l)
{
	if (atomic_exchange_explicit(&l->v, 0, memory_order_release) == 2)
		x_futex(&l->v, FUTEX_WAKE_PRIVATE, 1);
}

void expect(struct verdict *vd, bool cond, const char *fmt, ...)
{
	va_list ap;

	if (cond)
		return;
	printf("# FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	vd->bad++;
}

/*
 * Probe for EPOLL_CTL_DISABLE as Documentation/userspace-api/epoll.rst
 * says: with a NULL event and a pollable fd that is not registered, a
 * kernel that knows the operation reports ENOENT; kernels without it fail
 * as for any unknown operation, with EFAULT where they copy the event
 * before they look at the operation (7.3 and earlier) or with EINVAL.
 * 1: supported, 0: absent, <0: broken.
 */
int probe_disable(void)
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

void state_add(struct server *s, long delta)
{
	long v = atomic_fetch_add(&s->state, delta) + delta;

	if (delta > 0)
		max_store(&s->state_peak, v);
}

/* Connections retired and waiting for a grace period: keep the peak. */
void limbo_track(struct server *s, long waiting)
{
	if (waiting > s->limbo_peak)
		s->limbo_peak = waiting;
}

void conn_release(struct server *s, struct conn *c)
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

void conn_close_release(struct server *s, struct conn *c)
{
	x_close(c->fd);
	conn_release(s, c);
}

void conn_free(struct server *s, struct conn *c)
{
	if (ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL))
		count(s, C_CTL_ERRORS);
	conn_close_release(s, c);
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

struct epoll_event conn_event(struct conn *c)
{
	struct epoll_event ev = {
		.events = EPOLLIN | EPOLLONESHOT,
		.data.ptr = c,
	};

	return ev;
}

int shared_add(struct server *s, struct conn *c)
{
	struct epoll_event ev = conn_event(c);

	return ctl(s->epfd, EPOLL_CTL_ADD, c->fd, &ev);
}

void shared_rearm(struct server *s, struct conn *c)
{
	struct epoll_event ev = conn_event(c);
	int ret = ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev);

	if (ret == -ENOENT)	/* the reaper deleted the item meanwhile */
		count(s, C_REARM_ENOENT);
	else if (ret)
		count(s, C_CTL_ERRORS);
}

int shared_serve_and_rearm(struct server *s, struct worker *w, uint64_t data)
{
	struct conn *c = (struct conn *)(uintptr_t)data;
	int r = serve_one(s, c);

	(void)w;
	if (r < 0)
		return 0;
	shared_rearm(s, c);
	return r;
}

/* Called by a client thread: the server "accepts" @fd. */
static int conn_new(struct server *s, int fd)
{
	struct conn *c;
	int ret;

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
	ret = s->v->add ? s->v->add(s, c) : shared_add(s, c);
	if (ret) {
		count(s, C_CTL_ERRORS);
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

int serve_msg(struct server *s, struct conn *c, const struct msg *req, struct msg *resp)
{
	if (!conn_live(c)) {	/* handed an event for freed state */
		atomic_fetch_add(&s->uaf_reads, 1);
		return -1;
	}
	*resp = *req;
	resp->sum = conn_work(c, req, s->o.work);
	atomic_store_explicit(&c->last_ns, now_ns(), memory_order_relaxed);
	atomic_fetch_add_explicit(&c->nreq, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->handled, 1, memory_order_relaxed);
	return 1;
}

int serve_one(struct server *s, struct conn *c)
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
		if (serve_msg(s, c, &req, &resp) < 0)
			return -1;
		if (x_send(fd, &resp, sizeof(resp), MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
		    errno != EPIPE && errno != ECONNRESET && errno != EAGAIN)
			count(s, C_STALE_FD);
		ret = 1;
	} else if (n == 0) {
		/* Peer gone (or shut down by a retiring reaper): retire it. */
		atomic_store(&c->eof, true);
	} else if (n < 0 && errno != EAGAIN && errno != ECONNRESET) {
		count(s, C_STALE_FD);
	}
	if (!conn_live(c)) {	/* freed while we handled it */
		atomic_fetch_add(&s->uaf_reads, 1);
		return -1;
	}
	return ret;
}

void worker_ready(struct server *s)
{
	atomic_fetch_add_explicit(&s->ready, 1, memory_order_release);
}

static void wait_ready(struct server *s, int n)
{
	while (atomic_load_explicit(&s->ready, memory_order_acquire) < n)
		usleep(100);
}

/*
 * The workers of the variants that share s->epfd: the hooks around
 * epoll_wait() are the variant's, and so is the handling of an event.
 */
void *shared_worker(void *arg)
{
	struct worker *w = arg;
	struct server *s = w->s;
	const struct variant *v = s->v;
	int timeout = v->wait_timeout ? (int)s->o.quiesce_ms : -1;
	int n = 0, i, got;
	bool stop = false;

	tls_stats = &w->st;
	worker_ready(s);
	while (!stop) {
		if (v->before_wait)
			v->before_wait(s, w, n);
		n = x_epoll_wait(s->epfd, w->evs, BATCH, timeout);
		if (v->after_wait)
			v->after_wait(s, w);
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
				got += v->event(s, w, w->evs[i].data.u64);
		}
		if (!got)
			bump(&w->st.empty_waits);
	}
	if (v->worker_exit)
		v->worker_exit(s, w);
	w->cpu_ns = thread_cpu_ns();
	return NULL;
}

long fdinfo_items(int epfd)
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

/* Items left in the shared instance, the stop descriptor aside. */
long shared_items_left(struct server *s)
{
	long n = fdinfo_items(s->epfd);

	return n < 0 ? n : n - 1;
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

static void conn_retire(struct server *s, struct conn *c, uint64_t now, bool timed)
{
	long held;

	c->retire_ns = now;
	c->timed = timed;
	atomic_fetch_add(&s->retired, 1);
	held = atomic_fetch_add(&s->held, (long)sizeof(*c)) + (long)sizeof(*c);
	if (timed)
		max_store(&s->held_peak, held);
	s->v->retire(s, c);
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
	worker_ready(s);
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
		if (s->v->tick)
			s->v->tick(s);
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
	unsigned int i;

	fprintf(f, "Usage: epoll_server [options]\n"
		"  --retire=V         how the reaper retires (default disable):");
	for (i = 0; i < NVARIANTS; i++)
		fprintf(f, "%s%s%s%s%s", i % 5 ? " " : "\n                     ",
			variants[i]->name, variants[i]->alias ? " (alias " : "",
			variants[i]->alias ? variants[i]->alias : "",
			variants[i]->alias ? ")" : "");
	fprintf(f, "\n"
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
		"  --list             print the variants' names, one a line, and exit\n"
		"Exit status: 0 ok, 1 failed check, 2 usage, 4 skipped (the kernel lacks\n"
		"what the variant needs: EPOLL_CTL_DISABLE, io_uring or an io_uring feature).\n",
		CONN_BUF);
}

static const struct variant *variant_named(const char *name)
{
	unsigned int i;

	for (i = 0; i < NVARIANTS; i++)
		if (!strcmp(name, variants[i]->name) ||
		    (variants[i]->alias && !strcmp(name, variants[i]->alias)))
			return variants[i];
	return NULL;
}

/* --list: the variants, one a line (what the entry scripts run by default). */
static void list_variants(void)
{
	unsigned int i;

	for (i = 0; i < NVARIANTS; i++)
		printf("%s\n", variants[i]->name);
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
		{ "list", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	long duration = -1, requests = -1, idle_phase = -1;
	int opt;

	*o = (struct opts) {
		.v = &variant_disable,
		.workers = 4, .clients = 16, .idle_ms = 20, .conn_requests = 16,
		.conn_age_ms = 200, .pause_pct = 2, .tick_us = 1000,
		.quiesce_ms = 5, .work = 2,
	};
	while ((opt = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			o->v = variant_named(optarg);
			if (!o->v)
				return -1;
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
		case 'L': list_variants(); exit(0);
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
	    (o->unsafe_offline && o->v != &variant_qsbr))
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

/* The shared instance and the stop descriptor, then the variant's own; 0 or -errno. */
static int setup(struct server *s)
{
	struct epoll_event stop = { .events = EPOLLIN, .data.u64 = EV_STOP };
	int i;

	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->stopfd = eventfd(0, EFD_CLOEXEC);
	if (s->epfd < 0 || s->stopfd < 0)
		return -errno;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->stopfd, &stop))
		return -errno;
	for (i = 0; i < s->o.workers; i++) {
		s->workers[i].s = s;
		s->workers[i].id = i;
	}
	return s->v->setup ? s->v->setup(s) : 0;
}

static void teardown(struct server *s)
{
	if (s->v->teardown)
		s->v->teardown(s);
	if (s->stopfd >= 0)
		close(s->stopfd);
	if (s->epfd >= 0)
		close(s->epfd);
	s->stopfd = s->epfd = -1;
}

static void stop_workers(struct server *s)
{
	uint64_t one = 1;

	atomic_store(&s->workers_stop, true);
	if (s->v->stop) {
		s->v->stop(s);
		return;
	}
	/* Level-triggered in every instance that has it: each worker sees it. */
	if (write(s->stopfd, &one, sizeof(one)) != sizeof(one))
		perror("write stopfd");
}

static void run(struct server *s, struct result *r)
{
	struct rusage ru0, ru1, ru2, ru3;
	uint64_t hist[HIST_BUCKETS] = { 0 };
	uint64_t t1, cpu_load_end, cpu_idle_end = 0, cpu_idle0, w0, e0, w1, e1, i0;
	void *(*worker_fn)(void *) = s->v->worker ? s->v->worker : shared_worker;
	int i, j;

	getrusage(RUSAGE_SELF, &ru0);
	for (i = 0; i < s->o.workers; i++) {
		start_thread(&s->workers[i].thread, worker_fn, &s->workers[i]);
		s->workers[i].clock = thread_clock(s->workers[i].thread);
	}
	wait_ready(s, s->o.workers);
	start_thread(&s->reaper, reaper_main, s);
	s->reaper_clock = thread_clock(s->reaper);
	wait_ready(s, s->o.workers + 1);
	s->t0 = now_ns();
	s->deadline = s->t0 + s->o.duration_ms * 1000000ULL;
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

	r->leaked_items = s->v->items_left ? s->v->items_left(s) : shared_items_left(s);
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
	const char *v = s->v->name;
	uint64_t sys_total = r->sys_worker + r->sys_reaper + r->sys_accept;
	double idle_rate = r->idle_secs > 0 ?
		r->idle_wakeups / r->idle_secs / s->o.workers : 0;
	double idle_cpu = r->idle_secs > 0 ? r->idle_cpu_s * 1e6 / r->idle_secs : 0;
	struct utsname u;
	int k;

	uname(&u);
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
	printf("# %s: connections %ld created, %ld retired, %ld freed; limbo peak %ld; counters:",
	       v, atomic_load(&s->created), atomic_load(&s->retired), atomic_load(&s->freed),
	       s->limbo_peak);
	for (k = 0; k < NCTR; k++)
		if (atomic_load(&s->ctr[k]))
			printf(" %s %ld", ctr_names[k], atomic_load(&s->ctr[k]));
	printf("\n");
	printf("# %s: clients: %" PRIu64 " dropped by retirement, %" PRIu64 " timeouts, "
	       "%" PRIu64 " wrong answers; %ld items left\n",
	       v, r->dropped, r->timeouts, r->wrong, r->leaked_items);
	if (!s->o.json)
		return;
	printf("{\"variant\":\"%s\",\"kernel\":\"%s\",\"cpus\":%ld,\"workers\":%d,\"clients\":%d,"
	       "\"secs\":%.3f,\"requests\":%ld,\"rps\":%.1f,\"p50_us\":%.2f,\"p99_us\":%.2f,"
	       "\"held_peak_bytes\":%ld,\"held_mean_bytes\":%.0f,\"conn_bytes\":%zu,"
	       "\"uaf\":%ld,\"uaf_reads\":%ld,\"uaf_writes\":%ld,"
	       "\"cpu_s\":%.3f,\"server_cpu_s\":%.3f,\"cpu_us_per_request\":%.2f,"
	       "\"created\":%ld,\"freed\":%ld,\"retired\":%ld,\"limbo_peak\":%ld,"
	       "\"dropped\":%" PRIu64 ",\"timeouts\":%" PRIu64 ",\"wrong\":%" PRIu64,
	       v, u.release, sysconf(_SC_NPROCESSORS_ONLN), s->o.workers, s->o.clients,
	       r->secs, r->answered, r->rps, r->p50_us, r->p99_us,
	       atomic_load(&s->held_peak), r->held_avg, sizeof(struct conn),
	       r->uaf, atomic_load(&s->uaf_reads), atomic_load(&s->uaf_writes),
	       r->cpu_s, r->server_cpu_s, r->cpu_us_req,
	       atomic_load(&s->created), atomic_load(&s->freed), atomic_load(&s->retired),
	       s->limbo_peak, r->dropped, r->timeouts, r->wrong);
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
	for (k = 0; k < NCTR; k++)
		printf(",\"%s\":%ld", ctr_names[k], atomic_load(&s->ctr[k]));
	printf(",\"retire_samples\":%" PRIu64 ",\"retire_p50_us\":%.2f,"
	       "\"retire_p99_us\":%.2f,\"state_peak_bytes\":%ld,\"state_mean_bytes\":%.0f,"
	       "\"slot_bytes\":%ld,\"ring_bytes\":%ld,\"idle_secs\":%.3f,"
	       "\"idle_wakeups_per_s_per_worker\":%.2f,\"idle_returns\":%.0f,"
	       "\"idle_worker_cpu_us_per_s\":%.1f,"
	       "\"waits\":%" PRIu64 ",\"empty_waits\":%" PRIu64 ",\"leaked_items\":%ld}\n",
	       r->retire_samples, r->retire_p50_us, r->retire_p99_us,
	       atomic_load(&s->state_peak), r->state_avg, s->slot_bytes, s->ring_bytes,
	       r->idle_secs, idle_rate, r->idle_returns, idle_cpu,
	       r->waits, r->empty_waits, r->leaked_items);
}

/* --check: what must hold; prints each failure. */
static int verdict(struct server *s, struct result *r, long fds_before)
{
	struct verdict vd = { 0 };
	long fds_after = count_fds();

	if (s->v->expect_uaf) {
		/* The detector must see what deleting at once causes. */
		EXPECT(&vd, r->uaf > 0, "%s: no use-after-free seen (detector blind?)",
		       s->v->name);
		return vd.bad ? KSFT_FAIL : KSFT_PASS;
	}
	EXPECT(&vd, r->answered > 0, "no request was answered");
	EXPECT(&vd, r->uaf == 0, "%ld use-after-free", r->uaf);
	EXPECT(&vd, r->wrong == 0, "%" PRIu64 " wrong answers", r->wrong);
	EXPECT(&vd, r->timeouts == 0, "%" PRIu64 " requests never answered", r->timeouts);
	EXPECT(&vd, atomic_load(&s->ctr[C_STALE_FD]) == 0, "%ld I/O errors on a connection",
	       atomic_load(&s->ctr[C_STALE_FD]));
	EXPECT(&vd, atomic_load(&s->ctr[C_CTL_ERRORS]) == 0, "%ld unexpected epoll_ctl() errors",
	       atomic_load(&s->ctr[C_CTL_ERRORS]));
	EXPECT(&vd, atomic_load(&s->ctr[C_RING_ERRORS]) == 0, "%ld io_uring errors",
	       atomic_load(&s->ctr[C_RING_ERRORS]));
	EXPECT(&vd, s->live == 0, "%ld connections not retired", s->live);
	EXPECT(&vd, atomic_load(&s->retired) == atomic_load(&s->created),
	       "%ld connections created, %ld retired",
	       atomic_load(&s->created), atomic_load(&s->retired));
	EXPECT(&vd, atomic_load(&s->freed) == atomic_load(&s->created),
	       "%ld connections created, %ld freed",
	       atomic_load(&s->created), atomic_load(&s->freed));
	EXPECT(&vd, atomic_load(&s->held) == 0, "%ld bytes of state never freed",
	       atomic_load(&s->held));
	EXPECT(&vd, atomic_load(&s->state) == s->slot_bytes, "%ld bytes of state left",
	       atomic_load(&s->state) - s->slot_bytes);
	EXPECT(&vd, r->leaked_items == 0, "%ld items left in the epoll instances",
	       r->leaked_items);
	EXPECT(&vd, fds_after == fds_before, "%ld descriptors open before, %ld after",
	       fds_before, fds_after);
	if (s->v->check)
		s->v->check(s, &vd);
	return vd.bad ? KSFT_FAIL : KSFT_PASS;
}

/* 0: go on; else the exit status (the kernel lacks what the variant needs). */
static int probe(struct server *s)
{
	const char *v = s->v->name;
	char why[160] = "";
	int ret;

	if (!s->v->probe)
		return 0;
	ret = s->v->probe(s, why, sizeof(why));
	if (ret < 0)
		printf("# %s: probe: %s\n", v, strerror(-ret));
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
	s->v = s->o.v;
	s->epfd = s->stopfd = -1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	uname(&u);
	if (s->o.check)
		printf("TAP version 13\n1..1\n");
	printf("# epoll_server --retire=%s: %d workers, %d clients, %ld ms or %ld requests, on %s\n",
	       s->v->name, s->o.workers, s->o.clients, s->o.duration_ms, s->o.requests,
	       u.release);
	ret = probe(s);
	if (ret)
		return ret;
	fds_before = count_fds();
	pthread_mutex_init(&s->q_lock, NULL);
	s->table.next = s->table.prev = &s->table;
	ret = setup(s);
	if (ret) {
		printf("# set-up: %s\n", strerror(-ret));
		if (s->o.check)
			printf("not ok 1 epoll_server --retire=%s\n", s->v->name);
		return KSFT_FAIL;
	}

	run(s, &r);
	teardown(s);
	report(s, &r);
	if (s->o.check) {
		ret = verdict(s, &r, fds_before);
		printf("%s 1 epoll_server --retire=%s\n", ret ? "not ok" : "ok", s->v->name);
	}
	return ret;
}
