// SPDX-License-Identifier: GPL-2.0
/*
 * epoll_wakeups - wakeups of epoll_wait() sleepers that find nothing,
 * counted per thousand EPOLLONESHOT deliveries, to compare two kernels.
 *
 * --waiters threads sleep in epoll_wait(-1) on one instance that watches
 * --items eventfds, each EPOLLIN | EPOLLONESHOT. --generators threads make
 * items ready: a kick claims an idle item and writes its eventfd --burst
 * times in a row, so that the later writes can arrive while a waiter is
 * collecting the event of the first (the window in which epoll moves
 * wakeups to its overflow list). At most --inflight kicks are outstanding,
 * so that some waiters are asleep when an event comes. A waiter that gets
 * an event reads the eventfd and re-arms the item with EPOLL_CTL_MOD; when
 * the reads add up to the burst, the kick is done and the item idle again.
 * Each generator makes --kicks kicks, choosing items with a xorshift
 * generator seeded from --seed: the same counts on every run and kernel.
 *
 * Counting. A wakeup that finds nothing is invisible from user space:
 * ep_poll() just sleeps again. It shows as a voluntary context switch. Each
 * waiter reads its own ru_nvcsw (getrusage(RUSAGE_THREAD), which does not
 * block) right before and right after every epoll_wait(). A call that slept
 * d > 0 times returned after one wakeup that found an event; the other
 * d - 1 found nothing: "spurious". The only other blocking a waiter does is
 * EPOLL_CTL_MOD, which may sleep on ep->mtx; the switches between calls are
 * counted apart ("handling") and left out. A sleep on ep->mtx inside
 * epoll_wait() itself cannot be told from a spurious wakeup; it is the
 * same on both kernels. As a cross-check, each waiter also reads
 * voluntary_ctxt_switches from /proc/self/task/<tid>/status at its start
 * and end.
 *
 * Output: a summary; --json adds one line, {"bench":"epoll_wakeups",...}.
 * Exit status: 0, 1 when a system call failed or the kicks did not all
 * complete within --timeout-s, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS	64
#define MAX_ITEMS	4096
#define MAX_EVENTS	64
#define EV_STOP		0	/* data.u64 of the stop eventfd; items are 1.. */

struct opts {
	int waiters, generators, items, burst, inflight, maxevents;
	long kicks;		/* per generator */
	long timeout_s;
	uint64_t seed;
	bool json;
};

struct item {
	int fd;
	_Atomic int pending;	/* claimed by a generator until the kick is done */
	uint64_t got;		/* reads so far of this kick: one waiter at a time */
} __attribute__((aligned(64)));

struct waiter {
	pthread_t thread;
	struct bench *b;
	uint64_t waits, slept, spurious, in_wait, handling, deliveries, completed;
	uint64_t empty_reads;
	long proc_before, proc_after;
	int err;
} __attribute__((aligned(64)));

struct generator {
	pthread_t thread;
	struct bench *b;
	uint64_t seed, writes, probes;
	int err;
};

struct bench {
	struct opts o;
	int epfd, stopfd;
	sem_t slots;		/* free in-flight places */
	_Atomic uint64_t completed;
	struct item items[MAX_ITEMS];
	struct waiter waiters[MAX_THREADS];
	struct generator generators[MAX_THREADS];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t nvcsw(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nvcsw;
}

/* voluntary_ctxt_switches of the calling thread, or -1. */
static long proc_nvcsw(void)
{
	char path[64], line[128];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/status", (long)syscall(SYS_gettid));
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	struct bench *b = w->b;
	struct epoll_event evs[MAX_EVENTS], ev = { .events = EPOLLIN | EPOLLONESHOT };
	uint64_t before, after, prev, v;
	bool stop = false, done;
	struct item *it;
	int n, i;

	w->proc_before = proc_nvcsw();
	prev = nvcsw();
	while (!stop) {
		before = nvcsw();
		n = epoll_wait(b->epfd, evs, b->o.maxevents, -1);
		after = nvcsw();
		w->handling += before - prev;
		prev = after;
		w->waits++;
		w->in_wait += after - before;
		if (after > before) {
			w->slept++;
			w->spurious += after - before - 1;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			w->err = errno;
			break;
		}
		for (i = 0; i < n; i++) {
			if (evs[i].data.u64 == EV_STOP) {
				stop = true;
				continue;
			}
			it = &b->items[evs[i].data.u64 - 1];
			w->deliveries++;
			if (read(it->fd, &v, sizeof(v)) == sizeof(v))
				it->got += v;
			else
				w->empty_reads++;
			/* Before the re-arm: then another waiter may have the item. */
			done = it->got >= (uint64_t)b->o.burst;
			if (done)
				it->got = 0;
			ev.data.u64 = evs[i].data.u64;
			if (epoll_ctl(b->epfd, EPOLL_CTL_MOD, it->fd, &ev)) {
				w->err = errno;
				stop = true;
				continue;
			}
			if (done) {
				w->completed++;
				atomic_fetch_add(&b->completed, 1);
				atomic_store_explicit(&it->pending, 0, memory_order_release);
				sem_post(&b->slots);	/* never blocks */
			}
		}
	}
	w->proc_after = proc_nvcsw();
	return NULL;
}

static void *generator_main(void *arg)
{
	struct generator *g = arg;
	struct bench *b = g->b;
	uint64_t one = 1;
	long k;
	int i, j, expect;

	for (k = 0; k < b->o.kicks; k++) {
		while (sem_wait(&b->slots) && errno == EINTR)
			;
		/* A seeded start; the first idle item from there. */
		i = xorshift(&g->seed) % b->o.items;
		for (;;) {
			expect = 0;
			if (atomic_compare_exchange_strong(&b->items[i].pending, &expect, 1))
				break;
			g->probes++;
			i = (i + 1) % b->o.items;
		}
		for (j = 0; j < b->o.burst; j++) {
			if (write(b->items[i].fd, &one, sizeof(one)) != sizeof(one)) {
				g->err = errno;
				return NULL;
			}
			g->writes++;
		}
	}
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: epoll_wakeups [options]\n"
		"  --waiters=N     threads in epoll_wait(-1) on one instance (default 4)\n"
		"  --generators=N  threads that make items ready (default 2)\n"
		"  --items=N       EPOLLONESHOT eventfds (default 64)\n"
		"  --kicks=N       kicks per generator (default 20000)\n"
		"  --burst=N       eventfd writes per kick (default 2)\n"
		"  --inflight=N    kicks outstanding at most (default 2)\n"
		"  --maxevents=N   epoll_wait() maxevents (default 1)\n"
		"  --seed=N        seed of the item choice (default 1)\n"
		"  --timeout-s=N   give up after N seconds (default 120)\n"
		"  --json          also print the results as one JSON line\n"
		"Exit status: 0 ok, 1 failed, 2 usage.\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{ "waiters", required_argument, NULL, 'w' },
		{ "generators", required_argument, NULL, 'g' },
		{ "items", required_argument, NULL, 'i' },
		{ "kicks", required_argument, NULL, 'k' },
		{ "burst", required_argument, NULL, 'b' },
		{ "inflight", required_argument, NULL, 'f' },
		{ "maxevents", required_argument, NULL, 'm' },
		{ "seed", required_argument, NULL, 's' },
		{ "timeout-s", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int opt;

	*o = (struct opts) {
		.waiters = 4, .generators = 2, .items = 64, .kicks = 20000,
		.burst = 2, .inflight = 2, .maxevents = 1, .seed = 1,
		.timeout_s = 120,
	};
	while ((opt = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (opt) {
		case 'w': o->waiters = atoi(optarg); break;
		case 'g': o->generators = atoi(optarg); break;
		case 'i': o->items = atoi(optarg); break;
		case 'k': o->kicks = atol(optarg); break;
		case 'b': o->burst = atoi(optarg); break;
		case 'f': o->inflight = atoi(optarg); break;
		case 'm': o->maxevents = atoi(optarg); break;
		case 's': o->seed = strtoull(optarg, NULL, 0); break;
		case 't': o->timeout_s = atol(optarg); break;
		case 'j': o->json = true; break;
		case 'h': usage(stdout); exit(0);
		default: return -1;
		}
	}
	if (optind != argc || o->waiters < 1 || o->waiters > MAX_THREADS ||
	    o->generators < 1 || o->generators > MAX_THREADS ||
	    o->items < 1 || o->items > MAX_ITEMS || o->kicks < 1 ||
	    o->burst < 1 || o->inflight < 1 || o->inflight > o->items ||
	    o->maxevents < 1 || o->maxevents > MAX_EVENTS || o->timeout_s < 1 ||
	    !o->seed)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	static struct bench bench;
	struct bench *b = &bench;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT };
	struct epoll_event stop = { .events = EPOLLIN, .data.u64 = EV_STOP };
	uint64_t t0, t1, total, one = 1;
	uint64_t waits = 0, slept = 0, spurious = 0, in_wait = 0, handling = 0;
	uint64_t deliveries = 0, empty_reads = 0, writes = 0, probes = 0;
	long proc = 0;
	bool proc_ok = true;
	struct utsname u;
	int i, err = 0;
	double secs;

	if (parse(argc, argv, &b->o)) {
		usage(stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	uname(&u);
	printf("# epoll_wakeups: %d waiters, %d generators x %ld kicks of %d writes, %d items, "
	       "%d in flight, maxevents %d, seed %" PRIu64 ", on %s\n",
	       b->o.waiters, b->o.generators, b->o.kicks, b->o.burst, b->o.items,
	       b->o.inflight, b->o.maxevents, b->o.seed, u.release);
	b->epfd = epoll_create1(EPOLL_CLOEXEC);
	b->stopfd = eventfd(0, EFD_CLOEXEC);
	if (b->epfd < 0 || b->stopfd < 0 || sem_init(&b->slots, 0, b->o.inflight)) {
		perror("epoll_create1/eventfd/sem_init");
		return 1;
	}
	for (i = 0; i < b->o.items; i++) {
		b->items[i].fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		ev.data.u64 = i + 1;
		if (b->items[i].fd < 0 || epoll_ctl(b->epfd, EPOLL_CTL_ADD, b->items[i].fd, &ev)) {
			perror("eventfd/EPOLL_CTL_ADD");
			return 1;
		}
	}
	total = (uint64_t)b->o.generators * b->o.kicks;
	t0 = now_ns();
	for (i = 0; i < b->o.waiters; i++) {
		b->waiters[i].b = b;
		if (pthread_create(&b->waiters[i].thread, NULL, waiter_main, &b->waiters[i])) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	}
	for (i = 0; i < b->o.generators; i++) {
		struct generator *g = &b->generators[i];

		g->b = b;
		g->seed = b->o.seed * 0x9e3779b97f4a7c15ULL + i + 1;
		if (pthread_create(&g->thread, NULL, generator_main, g)) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	}
	for (i = 0; i < b->o.generators; i++) {
		pthread_join(b->generators[i].thread, NULL);
		writes += b->generators[i].writes;
		probes += b->generators[i].probes;
		if (b->generators[i].err)
			err = b->generators[i].err;
	}
	while (!err && atomic_load(&b->completed) < total) {
		if (now_ns() - t0 > (uint64_t)b->o.timeout_s * 1000000000ULL) {
			fprintf(stderr, "epoll_wakeups: %" PRIu64 " of %" PRIu64 " kicks done in %lds\n",
				atomic_load(&b->completed), total, b->o.timeout_s);
			err = ETIMEDOUT;
			break;
		}
		usleep(1000);
	}
	t1 = now_ns();
	/* Level-triggered: every waiter sees it. */
	if (epoll_ctl(b->epfd, EPOLL_CTL_ADD, b->stopfd, &stop) ||
	    write(b->stopfd, &one, sizeof(one)) != sizeof(one)) {
		perror("stop");
		return 1;
	}
	for (i = 0; i < b->o.waiters; i++) {
		struct waiter *w = &b->waiters[i];

		pthread_join(w->thread, NULL);
		waits += w->waits;
		slept += w->slept;
		spurious += w->spurious;
		in_wait += w->in_wait;
		handling += w->handling;
		deliveries += w->deliveries;
		empty_reads += w->empty_reads;
		if (w->proc_before < 0 || w->proc_after < 0)
			proc_ok = false;
		else
			proc += w->proc_after - w->proc_before;
		if (w->err)
			err = w->err;
	}
	for (i = 0; i < b->o.items; i++)
		close(b->items[i].fd);
	close(b->stopfd);
	close(b->epfd);
	secs = (t1 - t0) / 1e9;
	if (!proc_ok)
		proc = -1;

	printf("# epoll_wakeups: %" PRIu64 " kicks, %" PRIu64 " writes, %" PRIu64
	       " deliveries in %.2fs (%" PRIu64 " reads found nothing)\n",
	       atomic_load(&b->completed), writes, deliveries, secs, empty_reads);
	printf("# epoll_wakeups: %" PRIu64 " epoll_wait() calls, %" PRIu64 " slept; "
	       "%" PRIu64 " voluntary switches in them, %" PRIu64 " spurious\n",
	       waits, slept, in_wait, spurious);
	printf("# epoll_wakeups: spurious wakeups per 1000 deliveries: %.2f; all wakeups "
	       "per 1000: %.1f\n",
	       deliveries ? spurious * 1000.0 / deliveries : 0,
	       deliveries ? in_wait * 1000.0 / deliveries : 0);
	printf("# epoll_wakeups: switches outside epoll_wait() (handling) %" PRIu64
	       "; /proc voluntary_ctxt_switches of the waiters %ld\n", handling, proc);
	if (b->o.json)
		printf("{\"bench\":\"epoll_wakeups\",\"kernel\":\"%s\",\"waiters\":%d,"
		       "\"generators\":%d,\"items\":%d,\"kicks\":%" PRIu64 ",\"burst\":%d,"
		       "\"inflight\":%d,\"maxevents\":%d,\"seed\":%" PRIu64 ",\"secs\":%.3f,"
		       "\"writes\":%" PRIu64 ",\"deliveries\":%" PRIu64 ",\"empty_reads\":%" PRIu64 ","
		       "\"waits\":%" PRIu64 ",\"waits_slept\":%" PRIu64 ",\"wait_switches\":%" PRIu64 ","
		       "\"spurious\":%" PRIu64 ",\"spurious_per_1000\":%.3f,"
		       "\"wakeups_per_1000\":%.2f,\"handling_switches\":%" PRIu64 ","
		       "\"proc_switches\":%ld,\"probes\":%" PRIu64 ",\"ok\":%s}\n",
		       u.release, b->o.waiters, b->o.generators, b->o.items,
		       atomic_load(&b->completed), b->o.burst, b->o.inflight, b->o.maxevents,
		       b->o.seed, secs, writes, deliveries, empty_reads, waits, slept, in_wait,
		       spurious, deliveries ? spurious * 1000.0 / deliveries : 0,
		       deliveries ? in_wait * 1000.0 / deliveries : 0, handling, proc, probes,
		       err ? "false" : "true");
	if (err) {
		fprintf(stderr, "epoll_wakeups: %s\n", strerror(err));
		return 1;
	}
	return 0;
}
