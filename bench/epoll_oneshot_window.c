// SPDX-License-Identifier: GPL-2.0
/*
 * epoll_oneshot_window - what it costs the other threads asleep in
 * epoll_wait() when an EPOLLONESHOT item is woken again while
 * epoll_wait() is delivering its event: the case fix 3 ("eventpoll: Do
 * not re-queue a oneshot item disarmed during the scan") changes.
 *
 * Under load that second wakeup comes at random and rarely lands in the
 * window (bench/epoll_wakeups counts what it costs there). Here it lands
 * in it every round: the deliverer's event buffer is a page registered
 * with userfaultfd and missing, so that copying the event out stops the
 * deliverer inside epoll_wait(), holding the instance, until the main
 * thread has written the item's eventfd a second time and filled the
 * page.
 *
 * Each round: --sleepers threads and then the deliverer are asleep in
 * epoll_wait(-1) on one instance that watches one eventfd, EPOLLIN |
 * EPOLLONESHOT. The main thread writes the eventfd; the deliverer, the
 * last to go to sleep, is the first woken (exclusive waiters are woken
 * newest first), and faults on its buffer. The main thread writes again,
 * which wakes one sleeper, resolves the fault, waits for the deliverer
 * to return its one event and for every sleeper to be asleep again, and
 * then counts the sleepers that ran (voluntary context switches, from
 * /proc/self/task/<tid>/status) and re-arms the item. The second wakeup
 * came while the item was armed, so one sleeper is woken for it on any
 * kernel; every further sleeper woken found nothing because the item
 * had been disarmed by the delivery.
 *
 * Needs userfaultfd for kernel-mode faults: root, or
 * vm.unprivileged_userfaultfd=1.
 * Output: a summary; --json adds {"bench":"epoll_oneshot_window",...}.
 * Exit status: 0, 1 when a system call failed or a round went otherwise
 * than described (a sleeper got the event) or, with --check, woke more
 * than the one sleeper needed, 2 on bad usage, 4 when userfaultfd is not
 * available.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/userfaultfd.h>
#include <poll.h>
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
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define MAX_SLEEPERS	16
#define EV_STOP		0	/* data.u64 of the stop eventfd */
#define EV_ITEM		1	/* data.u64 of the one-shot eventfd */
#define SETTLE_MS	5000	/* longest wait for a thread to fall asleep */
#define FAULT_MS	5000	/* longest wait for the deliverer's fault */

struct sleeper {
	pthread_t thread;
	pid_t tid;
	_Atomic bool ready;	/* about to call epoll_wait() */
	_Atomic long stolen;	/* events of the item it got: none expected */
};

static struct {
	int epfd, efd, stopfd, uffd;
	long page;
	char *buf;		/* the deliverer's event buffer, one page */
	char *zeros;		/* what fills it */
	struct sleeper sleepers[MAX_SLEEPERS];
	pthread_t deliverer;
	pid_t deliverer_tid;
	sem_t go, done;
	_Atomic bool deliverer_ready;
	_Atomic int delivered;	/* epoll_wait()'s result in the deliverer */
	_Atomic bool stop;
} b;

static void die(const char *what)
{
	fprintf(stderr, "epoll_oneshot_window: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void fail(const char *what)
{
	fprintf(stderr, "epoll_oneshot_window: %s\n", what);
	exit(1);
}

static pid_t gettid_(void)
{
	return syscall(SYS_gettid);
}

/* The state letter of thread @tid ('R', 'S', 'D', ...), or 0. */
static char thread_state(pid_t tid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

static long thread_nvcsw(pid_t tid)
{
	char path[64], line[128];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	f = fopen(path, "re");
	if (!f)
		die(path);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1)
			break;
	fclose(f);
	if (v < 0)
		fail("no voluntary_ctxt_switches in /proc/self/task/<tid>/status");
	return v;
}

/* Wait until thread @tid, past its @ready flag, sleeps ('S'). */
static void wait_asleep(pid_t tid, _Atomic bool *ready)
{
	int i;

	for (i = 0; i < SETTLE_MS * 10; i++) {
		if ((!ready || atomic_load(ready)) && thread_state(tid) == 'S')
			return;
		usleep(100);
	}
	fail("a thread did not fall asleep in epoll_wait()");
}

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;
	struct epoll_event ev[4];
	int i, n;

	s->tid = gettid_();
	for (;;) {
		atomic_store(&s->ready, true);
		n = epoll_wait(b.epfd, ev, 4, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("epoll_wait (sleeper)");
		for (i = 0; i < n; i++) {
			if (ev[i].data.u64 == EV_STOP)
				return NULL;
			atomic_fetch_add(&s->stolen, 1);
		}
	}
}

static void *deliverer_main(void *arg)
{
	int n;

	(void)arg;
	b.deliverer_tid = gettid_();
	for (;;) {
		if (sem_wait(&b.go))
			die("sem_wait");
		if (atomic_load(&b.stop))
			return NULL;
		atomic_store(&b.deliverer_ready, true);
		do {
			n = epoll_wait(b.epfd, (struct epoll_event *)b.buf, 1, -1);
		} while (n < 0 && errno == EINTR);
		if (n < 0)
			die("epoll_wait (deliverer)");
		atomic_store(&b.deliverer_ready, false);
		atomic_store(&b.delivered, n);
		sem_post(&b.done);
	}
}

/* A fresh, missing page at b.buf, registered with the userfaultfd. */
static void arm_buffer(void)
{
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)b.buf, .len = b.page },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};

	if (munmap(b.buf, b.page))
		die("munmap");
	if (mmap(b.buf, b.page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != b.buf)
		die("mmap");
	if (ioctl(b.uffd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER");
}

/* Wait for the deliverer's fault on b.buf. */
static void wait_fault(void)
{
	struct pollfd pfd = { .fd = b.uffd, .events = POLLIN };
	struct uffd_msg msg;
	int ret;

	do {
		ret = poll(&pfd, 1, FAULT_MS);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0)
		die("poll (userfaultfd)");
	if (ret == 0)
		fail("the deliverer did not fault: was the event delivered to a sleeper?");
	if (read(b.uffd, &msg, sizeof(msg)) != sizeof(msg))
		die("read (userfaultfd)");
	if (msg.event != UFFD_EVENT_PAGEFAULT)
		fail("an unexpected userfaultfd event");
}

static void resolve_fault(void)
{
	struct uffdio_copy copy = {
		.dst = (uintptr_t)b.buf,
		.src = (uintptr_t)b.zeros,
		.len = b.page,
	};

	if (ioctl(b.uffd, UFFDIO_COPY, &copy))
		die("UFFDIO_COPY");
}

static void write_efd(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) != sizeof(one))
		die("write (eventfd)");
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: epoll_oneshot_window [--rounds=N] [--sleepers=N] [--json]\n"
		"  --rounds=N    rounds (default 200)\n"
		"  --sleepers=N  threads asleep besides the deliverer (2-%d, default 2)\n"
		"  --json        add one JSON line\n"
		"  --check       fail when a round woke more than one sleeper\n", MAX_SLEEPERS);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "sleepers", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "check", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long rounds = 200, r, woken = 0, switches = 0, before[MAX_SLEEPERS], d;
	int nsleepers = 2, i, c;
	struct uffdio_api api = { .api = UFFD_API };
	struct epoll_event ev;
	struct utsname u;
	uint64_t count;
	bool json = false, check = false;
	long extra = 0, w;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'r': rounds = atol(optarg); break;
		case 's': nsleepers = atoi(optarg); break;
		case 'j': json = true; break;
		case 'c': check = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || rounds < 1 || nsleepers < 2 || nsleepers > MAX_SLEEPERS) {
		usage(stderr);
		return 2;
	}
	uname(&u);
	if (check)
		printf("TAP version 13\n1..1\n");

	b.uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (b.uffd < 0) {
		printf("%sepoll_oneshot_window # SKIP no userfaultfd for kernel faults (%s)\n",
		       check ? "ok 1 " : "# ", strerror(errno));
		return 4;
	}
	if (ioctl(b.uffd, UFFDIO_API, &api))
		die("UFFDIO_API");
	b.page = sysconf(_SC_PAGESIZE);
	b.buf = mmap(NULL, b.page, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	b.zeros = calloc(1, b.page);
	if (b.buf == MAP_FAILED || !b.zeros)
		die("mmap/calloc");

	b.epfd = epoll_create1(EPOLL_CLOEXEC);
	b.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	b.stopfd = eventfd(0, EFD_CLOEXEC);
	if (b.epfd < 0 || b.efd < 0 || b.stopfd < 0)
		die("epoll_create1/eventfd");
	ev.events = EPOLLIN | EPOLLONESHOT;
	ev.data.u64 = EV_ITEM;
	if (epoll_ctl(b.epfd, EPOLL_CTL_ADD, b.efd, &ev))
		die("EPOLL_CTL_ADD");
	ev.events = EPOLLIN;
	ev.data.u64 = EV_STOP;
	if (epoll_ctl(b.epfd, EPOLL_CTL_ADD, b.stopfd, &ev))
		die("EPOLL_CTL_ADD (stop)");
	if (sem_init(&b.go, 0, 0) || sem_init(&b.done, 0, 0))
		die("sem_init");

	/* The sleepers go to sleep first, one after the other. */
	for (i = 0; i < nsleepers; i++) {
		if (pthread_create(&b.sleepers[i].thread, NULL, sleeper_main, &b.sleepers[i]))
			fail("pthread_create");
		while (!atomic_load(&b.sleepers[i].ready))
			usleep(100);
		wait_asleep(b.sleepers[i].tid, &b.sleepers[i].ready);
	}
	if (pthread_create(&b.deliverer, NULL, deliverer_main, NULL))
		fail("pthread_create");

	for (r = 0; r < rounds; r++) {
		arm_buffer();
		for (i = 0; i < nsleepers; i++)
			wait_asleep(b.sleepers[i].tid, NULL);
		sem_post(&b.go);
		while (!b.deliverer_tid)
			usleep(100);
		wait_asleep(b.deliverer_tid, &b.deliverer_ready);
		for (i = 0; i < nsleepers; i++)
			before[i] = thread_nvcsw(b.sleepers[i].tid);

		write_efd(b.efd);
		wait_fault();
		write_efd(b.efd);	/* the item is still armed: one sleeper wakes */
		resolve_fault();
		if (sem_wait(&b.done))
			die("sem_wait");
		if (atomic_load(&b.delivered) != 1 ||
		    ((struct epoll_event *)b.buf)->data.u64 != EV_ITEM)
			fail("the deliverer did not get the item's event");

		for (i = 0, w = 0; i < nsleepers; i++) {
			wait_asleep(b.sleepers[i].tid, NULL);
			d = thread_nvcsw(b.sleepers[i].tid) - before[i];
			switches += d;
			w += d > 0;
			if (atomic_load(&b.sleepers[i].stolen))
				fail("a sleeper got the item's event");
		}
		woken += w;
		extra += w > 1;
		if (read(b.efd, &count, sizeof(count)) != sizeof(count) || count != 2)
			fail("the eventfd did not count the two writes");
		ev.events = EPOLLIN | EPOLLONESHOT;
		ev.data.u64 = EV_ITEM;
		if (epoll_ctl(b.epfd, EPOLL_CTL_MOD, b.efd, &ev))
			die("EPOLL_CTL_MOD");
	}

	atomic_store(&b.stop, true);
	sem_post(&b.go);
	pthread_join(b.deliverer, NULL);
	write_efd(b.stopfd);
	for (i = 0; i < nsleepers; i++)
		pthread_join(b.sleepers[i].thread, NULL);

	printf("# epoll_oneshot_window: %ld rounds, %d sleepers: %ld sleepers woken "
	       "(%.2f a round, 1 needed), %ld rounds woke more, %ld context switches\n",
	       rounds, nsleepers, woken, (double)woken / rounds, extra, switches);
	if (json)
		printf("{\"bench\":\"epoll_oneshot_window\",\"kernel\":\"%s\",\"rounds\":%ld,"
		       "\"sleepers\":%d,\"woken\":%ld,\"woken_per_round\":%.3f,"
		       "\"rounds_woke_more\":%ld,\"switches\":%ld,\"ok\":true}\n",
		       u.release, rounds, nsleepers, woken, (double)woken / rounds, extra,
		       switches);
	if (check && extra)
		fprintf(stderr, "epoll_oneshot_window: %ld of %ld rounds woke a sleeper for "
			"a disarmed item\n", extra, rounds);
	if (check)
		printf("%s 1 epoll_oneshot_window --check\n", extra ? "not ok" : "ok");
	return check && extra ? 1 : 0;
}
