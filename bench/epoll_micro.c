// SPDX-License-Identifier: GPL-2.0
/*
 * epoll_micro - the epoll hot paths that EPOLL_CTL_DISABLE must not slow
 * down, timed in fixed amounts of work so that two kernels can be compared
 * boot against boot:
 *
 *   ctl_add, ctl_mod, ctl_del   ns per epoll_ctl() on 1000 eventfds
 *   wait_N                      ns per epoll_wait() that returns the one
 *                               ready eventfd among N watched ones
 *                               (level-triggered, N = 1 ... 10000)
 *   oneshot_rearm               ns per epoll_wait() + EPOLL_CTL_MOD of a
 *                               ready EPOLLONESHOT item: the server loop
 *   pingpong                    us per round trip between two threads,
 *                               each blocked in epoll_wait() on its own
 *                               instance for the other's eventfd write
 *
 * Each test is repeated --reps times (default 5) and the median of the
 * repetitions is reported; the repetitions are in the JSON too.
 * Exit status: 0, 1 on a failed system call, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define MAX_REPS	25
#define CTL_FDS		1000
#define MAX_WATCHED	10000

static const int watched[] = { 1, 10, 100, 1000, MAX_WATCHED };

struct opts {
	int reps;
	double scale;		/* multiplies every iteration count */
	bool json;
};

static struct opts o = { .reps = 5, .scale = 1.0 };

static void die(const char *what)
{
	fprintf(stderr, "epoll_micro: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static long iters(long base)
{
	long n = (long)(base * o.scale);

	return n > 0 ? n : 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Print one result: the median of @v[0..o.reps-1]. */
static void result(const char *name, const char *unit, double *v)
{
	double sorted[MAX_REPS];
	int i;

	memcpy(sorted, v, o.reps * sizeof(*v));
	qsort(sorted, o.reps, sizeof(*v), cmp_double);
	printf("# %-16s %10.1f %s (median of %d; min %.1f, max %.1f)\n", name,
	       sorted[o.reps / 2], unit, o.reps, sorted[0], sorted[o.reps - 1]);
	if (!o.json)
		return;
	printf("{\"test\":\"%s\",\"unit\":\"%s\",\"median\":%.2f,\"reps\":[",
	       name, unit, sorted[o.reps / 2]);
	for (i = 0; i < o.reps; i++)
		printf("%s%.2f", i ? "," : "", v[i]);
	printf("]}\n");
}

static int new_eventfd(unsigned int count)
{
	int fd = eventfd(count, EFD_CLOEXEC | EFD_NONBLOCK);

	if (fd < 0)
		die("eventfd");
	return fd;
}

static void bench_ctl(void)
{
	double add[MAX_REPS], mod[MAX_REPS], del[MAX_REPS];
	struct epoll_event ev = { .events = EPOLLIN };
	long rounds = iters(20), r;
	int fds[CTL_FDS], epfd, i, rep;
	uint64_t t0, t1, t2, t3, ta, tm, td;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		die("epoll_create1");
	for (i = 0; i < CTL_FDS; i++)
		fds[i] = new_eventfd(0);
	for (rep = 0; rep < o.reps; rep++) {
		ta = tm = td = 0;
		for (r = 0; r < rounds; r++) {
			t0 = now_ns();
			for (i = 0; i < CTL_FDS; i++) {
				ev.events = EPOLLIN;
				ev.data.u32 = i;
				if (epoll_ctl(epfd, EPOLL_CTL_ADD, fds[i], &ev))
					die("EPOLL_CTL_ADD");
			}
			t1 = now_ns();
			for (i = 0; i < CTL_FDS; i++) {
				ev.events = EPOLLIN | EPOLLOUT;
				if (epoll_ctl(epfd, EPOLL_CTL_MOD, fds[i], &ev))
					die("EPOLL_CTL_MOD");
			}
			t2 = now_ns();
			for (i = 0; i < CTL_FDS; i++)
				if (epoll_ctl(epfd, EPOLL_CTL_DEL, fds[i], NULL))
					die("EPOLL_CTL_DEL");
			t3 = now_ns();
			ta += t1 - t0;
			tm += t2 - t1;
			td += t3 - t2;
		}
		add[rep] = (double)ta / (rounds * CTL_FDS);
		mod[rep] = (double)tm / (rounds * CTL_FDS);
		del[rep] = (double)td / (rounds * CTL_FDS);
	}
	result("ctl_add", "ns/op", add);
	result("ctl_mod", "ns/op", mod);
	result("ctl_del", "ns/op", del);
	for (i = 0; i < CTL_FDS; i++)
		close(fds[i]);
	close(epfd);
}

/* One ready eventfd among @n watched ones, all level-triggered. */
static void bench_wait(int n)
{
	static int fds[MAX_WATCHED];
	struct epoll_event ev = { .events = EPOLLIN }, out[8];
	double v[MAX_REPS];
	long calls = iters(20000), c;
	int epfd, i, rep;
	char name[32];
	uint64_t t0;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		die("epoll_create1");
	for (i = 0; i < n; i++) {
		fds[i] = new_eventfd(i == n / 2);
		ev.data.u32 = i;
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, fds[i], &ev))
			die("EPOLL_CTL_ADD");
	}
	for (rep = 0; rep < o.reps; rep++) {
		t0 = now_ns();
		for (c = 0; c < calls; c++)
			if (epoll_wait(epfd, out, 8, 0) != 1)
				die("epoll_wait: not exactly one event");
		v[rep] = (double)(now_ns() - t0) / calls;
	}
	snprintf(name, sizeof(name), "wait_%d", n);
	result(name, "ns/call", v);
	for (i = 0; i < n; i++)
		close(fds[i]);
	close(epfd);
}

/* epoll_wait() hands out a ready oneshot item, EPOLL_CTL_MOD re-arms it. */
static void bench_rearm(void)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT }, out;
	long cycles = iters(20000), c;
	double v[MAX_REPS];
	int epfd, fd, rep;
	uint64_t t0;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	fd = new_eventfd(1);
	if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev))
		die("oneshot setup");
	for (rep = 0; rep < o.reps; rep++) {
		t0 = now_ns();
		for (c = 0; c < cycles; c++) {
			if (epoll_wait(epfd, &out, 1, 0) != 1)
				die("epoll_wait: oneshot item not reported");
			if (epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev))
				die("EPOLL_CTL_MOD");
		}
		v[rep] = (double)(now_ns() - t0) / cycles;
	}
	result("oneshot_rearm", "ns/cycle", v);
	close(fd);
	close(epfd);
}

struct side {
	int epfd;	/* watches in */
	int in;		/* eventfd this side waits for */
	int out;	/* eventfd of the other side */
	long rounds;
};

static void side_setup(struct side *s, int in, int out, long rounds)
{
	struct epoll_event ev = { .events = EPOLLIN };

	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->in = in;
	s->out = out;
	s->rounds = rounds;
	if (s->epfd < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, in, &ev))
		die("ping-pong setup");
}

static void side_wait(struct side *s)
{
	struct epoll_event ev;
	uint64_t val;

	while (epoll_wait(s->epfd, &ev, 1, -1) != 1)
		if (errno != EINTR)
			die("epoll_wait");
	if (read(s->in, &val, sizeof(val)) != sizeof(val))
		die("read eventfd");
}

static void side_kick(struct side *s)
{
	uint64_t one = 1;

	if (write(s->out, &one, sizeof(one)) != sizeof(one))
		die("write eventfd");
}

static void *pong(void *arg)
{
	struct side *s = arg;
	long i;

	for (i = 0; i < s->rounds; i++) {
		side_wait(s);
		side_kick(s);
	}
	return NULL;
}

static void bench_pingpong(void)
{
	long rounds = iters(5000), i;
	int a = new_eventfd(0), b = new_eventfd(0), rep;
	struct side ping, pong_side;
	double v[MAX_REPS];
	pthread_t t;
	uint64_t t0;

	for (rep = 0; rep < o.reps; rep++) {
		side_setup(&ping, a, b, rounds);
		side_setup(&pong_side, b, a, rounds);
		if (pthread_create(&t, NULL, pong, &pong_side))
			die("pthread_create");
		t0 = now_ns();
		for (i = 0; i < rounds; i++) {
			side_kick(&ping);
			side_wait(&ping);
		}
		v[rep] = (double)(now_ns() - t0) / rounds / 1000;
		pthread_join(t, NULL);
		close(ping.epfd);
		close(pong_side.epfd);
	}
	result("pingpong", "us/round-trip", v);
	close(a);
	close(b);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: epoll_micro [--reps=N] [--scale=F] [--json]\n"
		"  --reps=N    repetitions of each test, median reported (default 5, max %d)\n"
		"  --scale=F   multiply every iteration count by F (default 1)\n"
		"  --json      also print one JSON line per test\n",
		MAX_REPS);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "reps", required_argument, NULL, 'r' },
		{ "scale", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct rlimit rl = { MAX_WATCHED + 64, MAX_WATCHED + 64 };
	struct utsname u;
	unsigned int i;
	int opt;

	while ((opt = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (opt) {
		case 'r': o.reps = atoi(optarg); break;
		case 's': o.scale = atof(optarg); break;
		case 'j': o.json = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || o.reps < 1 || o.reps > MAX_REPS || o.scale <= 0) {
		usage(stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	uname(&u);
	printf("# epoll_micro on %s, %d repetitions, scale %g\n", u.release, o.reps, o.scale);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < MAX_WATCHED + 64) {
		rl.rlim_cur = rl.rlim_max = MAX_WATCHED + 64;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			die("setrlimit(RLIMIT_NOFILE) for 10000 eventfds");
	}
	bench_ctl();
	for (i = 0; i < sizeof(watched) / sizeof(watched[0]); i++)
		bench_wait(watched[i]);
	bench_rearm();
	bench_pingpong();
	return 0;
}
