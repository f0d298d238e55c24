// SPDX-License-Identifier: GPL-2.0
/*
 * The local proof layer of the EPOLL_CTL_DISABLE tests.
 *
 * Not for upstream: what epoll_ctl_disable_test, the posted test of the
 * documented behaviour, does not check. The item's stored mask after each
 * answer (/proc/self/fdinfo); the ready list's order after a DISABLE; the
 * order in which the errors are checked when several arguments are bad;
 * IORING_OP_EPOLL_CTL compared with the syscall, with ep->mtx and
 * epnested_mutex held through userfaultfd so that the nonblocking attempt
 * must fail and io-wq retry it; the deletion protocol against a naive
 * delete-and-free under real concurrency; and a last test that fails on
 * any kernel report made while the program ran.
 *
 * EPOLL_CTL_DISABLE disarms an EPOLLONESHOT item that has not reported an
 * event since it was last armed and returns 0, or fails with EBUSY if the
 * event was already reported. A thread that wants to delete an item whose
 * epoll_event.data.ptr points at state shared with the threads sleeping in
 * epoll_wait() learns from it whether one of those threads may still be
 * using the state: on 0 it deletes the item and frees the state at once,
 * on EBUSY the thread that holds the event does so when it is done.
 *
 * The errors are checked in this order: EINVAL (event is not NULL), EBADF
 * (epfd, then fd), EPERM (fd cannot be polled), EINVAL (epfd is not an
 * epoll file or fd is epfd), ENOENT (fd not registered), EINVAL (item not
 * oneshot), EBUSY (event already reported).
 */

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
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
#include <time.h>
#include <unistd.h>
#include <linux/io_uring.h>
#include <linux/userfaultfd.h>

#include "kselftest_harness.h"
#include "epoll_proof_helpers.h"

/* epoll_ctl() returning 0 or -errno, so results read as ASSERT_EQ(-EBUSY, ...) */
static int ctl(int epfd, int op, int fd, struct epoll_event *event)
{
	return epoll_ctl(epfd, op, fd, event) ? -errno : 0;
}

static int ctl_disable(int epfd, int fd)
{
	return ctl(epfd, EPOLL_CTL_DISABLE, fd, NULL);
}

static int ctl_add(int epfd, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int ctl_mod(int epfd, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return ctl(epfd, EPOLL_CTL_MOD, fd, &ev);
}

/* Make the eventfd @efd readable. */
static int make_ready(int efd)
{
	uint64_t one = 1;

	return write(efd, &one, sizeof(one)) == sizeof(one) ? 0 : -errno;
}

/* epoll_wait() returning the number of events or -errno. */
static int wait_events(int epfd, struct epoll_event *events, int max,
		       int timeout_ms)
{
	int n;

	do {
		n = epoll_wait(epfd, events, max, timeout_ms);
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

#define NO_DISABLE "kernel lacks EPOLL_CTL_DISABLE (op 4 fails as unknown)"

/* Number of items listed in /proc/self/fdinfo/@epfd, or -errno. */
static int fdinfo_count(int epfd)
{
	char path[64], line[256];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", epfd);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		n += !strncmp(line, "tfd:", 4);
	fclose(f);
	return n;
}

/* A file that cannot be polled: a memfd, or an unlinked regular file. */
static int open_unpollable(void)
{
	char path[] = "/tmp/epoll_ctl_disable_XXXXXX";
	int fd;

	fd = syscall(__NR_memfd_create, "epoll_ctl_disable", 0);
	if (fd >= 0)
		return fd;
	fd = mkostemp(path, O_CLOEXEC);
	if (fd >= 0)
		unlink(path);
	return fd;
}

/*
 * One epoll instance and one eventfd that is not readable until a test
 * writes to it.
 */
FIXTURE(disable) {
	int epfd;	/* the epoll instance under test */
	int efd;	/* eventfd, readable once make_ready() wrote to it */
};

FIXTURE_SETUP(disable)
{
	int probe = epoll_ctl_disable_probe();

	self->epfd = -1;
	self->efd = -1;
	ASSERT_LE(0, probe);
	if (!probe)
		SKIP(return, NO_DISABLE);

	self->epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->epfd);
	self->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ASSERT_LE(0, self->efd);
}

FIXTURE_TEARDOWN(disable)
{
	if (self->efd >= 0)
		close(self->efd);
	if (self->epfd >= 0)
		close(self->epfd);
}

/*
 * An armed item that is not ready: DISABLE returns 0 and leaves only the
 * private bits in the event mask; the data is untouched.
 */
TEST_F(disable, armed_item_returns_0_and_is_disarmed)
{
	uint32_t events = 0;
	uint64_t data = 0;

	ASSERT_EQ(0, ctl_add(self->epfd, self->efd, EPOLLIN | EPOLLONESHOT, 42));
	ASSERT_EQ(0, ctl_disable(self->epfd, self->efd));

	ASSERT_EQ(0, fdinfo_epoll_item(self->epfd, self->efd, &events, &data));
	EXPECT_EQ(EPOLLONESHOT, events);
	EXPECT_EQ(42, data);
}

/*
 * An item that is ready and queued but not yet reported is armed:
 * DISABLE returns 0, and neither epoll_wait() nor poll() on the epoll fd
 * sees it afterwards.
 */
TEST_F(disable, queued_item_returns_0_and_reports_nothing)
{
	struct pollfd pfd = { .fd = self->epfd, .events = POLLIN };
	struct epoll_event ev;

	ASSERT_EQ(0, make_ready(self->efd));
	ASSERT_EQ(0, ctl_add(self->epfd, self->efd, EPOLLIN | EPOLLONESHOT, 1));
	ASSERT_EQ(1, poll(&pfd, 1, 0));

	ASSERT_EQ(0, ctl_disable(self->epfd, self->efd));

	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_EQ(0, wait_events(self->epfd, &ev, 1, 100));
}

/*
 * DISABLE takes a queued item off the ready list. The ready list is FIFO:
 * with A and B queued in that order, disarming A and re-arming it with MOD
 * must queue A again behind B. An A left on the list would still be first.
 */
TEST_F(disable, queued_item_is_taken_off_the_ready_list)
{
	struct epoll_event ev;
	int efd_b;

	efd_b = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
	ASSERT_LE(0, efd_b);
	ASSERT_EQ(0, make_ready(self->efd));
	ASSERT_EQ(0, ctl_add(self->epfd, self->efd, EPOLLIN | EPOLLONESHOT, 'A'));
	ASSERT_EQ(0, ctl_add(self->epfd, efd_b, EPOLLIN | EPOLLONESHOT, 'B'));

	ASSERT_EQ(0, ctl_disable(self->epfd, self->efd));
	ASSERT_EQ(0, ctl_mod(self->epfd, self->efd, EPOLLIN | EPOLLONESHOT, 'A'));

	ASSERT_EQ(1, wait_events(self->epfd, &ev, 1, 0));
	EXPECT_EQ('B', ev.data.u64);
	ASSERT_EQ(1, wait_events(self->epfd, &ev, 1, 0));
	EXPECT_EQ('A', ev.data.u64);
	EXPECT_EQ(0, wait_events(self->epfd, &ev, 1, 0));
	close(efd_b);
}

/* Once the event was reported, DISABLE fails with EBUSY and changes nothing. */
TEST_F(disable, reported_item_returns_EBUSY_and_is_unchanged)
{
	uint32_t before = 0, after = 0;
	uint64_t data = 0;
	struct epoll_event ev;

	ASSERT_EQ(0, ctl_add(self->epfd, self->efd, EPOLLIN | EPOLLONESHOT, 7));
	ASSERT_EQ(0, make_ready(self->efd));
	ASSERT_EQ(1, wait_events(self->epfd, &ev, 1, 1000));
	ASSERT_EQ(0, fdinfo_epoll_item(self->epfd, self->efd, &before, &data));

	EXPECT_EQ(-EBUSY, ctl_disable(self->epfd, self->efd));

	ASSERT_EQ(0, fdinfo_epoll_item(self->epfd, self->efd, &after, &data));
	EXPECT_EQ(before, after);
	EXPECT_EQ(7, data);
}

/*
 * Items without EPOLLONESHOT have no armed state to report on: EINVAL, and
 * the item goes on reporting its events.
 */
TEST_F(disable, non_oneshot_item_returns_EINVAL_and_is_unchanged)
{
	static const uint32_t modes[] = { EPOLLIN, EPOLLIN | EPOLLET };
	uint32_t before = 0, after = 0;
	struct epoll_event ev;
	uint64_t data = 0;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(modes); i++) {
		int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

		ASSERT_LE(0, efd);
		ASSERT_EQ(0, ctl_add(self->epfd, efd, modes[i], i));
		ASSERT_EQ(0, fdinfo_epoll_item(self->epfd, efd, &before, &data));

		EXPECT_EQ(-EINVAL, ctl_disable(self->epfd, efd))
			TH_LOG("events %#x", modes[i]);

		ASSERT_EQ(0, fdinfo_epoll_item(self->epfd, efd, &after, &data));
		EXPECT_EQ(before, after);
		ASSERT_EQ(0, make_ready(efd));
		ASSERT_EQ(1, wait_events(self->epfd, &ev, 1, 1000));
		EXPECT_EQ(i, ev.data.u64);
		ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_DEL, efd, NULL));
		close(efd);
	}
}

TEST_F(disable, unpollable_fd_returns_EPERM)
{
	int fd = open_unpollable();

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EPERM, ctl_disable(self->epfd, fd));
	close(fd);
}

TEST_F(disable, fd_equal_to_epfd_returns_EINVAL)
{
	EXPECT_EQ(-EINVAL, ctl_disable(self->epfd, self->epfd));
}

/*
 * The event argument must be NULL. A valid pointer to a zeroed event is
 * rejected just like a pointer to nowhere (which must not turn into
 * EFAULT: nothing is read through it), and the item is left armed.
 */
TEST_F(disable, non_null_event_returns_EINVAL)
{
	struct epoll_event zero = {};
	void *unmapped;

	unmapped = mmap(NULL, getpagesize(), PROT_NONE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(unmapped != MAP_FAILED);
	ASSERT_EQ(0, munmap(unmapped, getpagesize()));
	ASSERT_EQ(0, ctl_add(self->epfd, self->efd, EPOLLIN | EPOLLONESHOT, 1));

	EXPECT_EQ(-EINVAL, ctl(self->epfd, EPOLL_CTL_DISABLE, self->efd, &zero));
	EXPECT_EQ(-EINVAL, ctl(self->epfd, EPOLL_CTL_DISABLE, self->efd, unmapped));

	/* Still armed: the rejected calls did not disarm it. */
	EXPECT_EQ(0, ctl_disable(self->epfd, self->efd));
}

/*
 * With several bad arguments the first check in the documented order
 * decides: event, epfd, fd, pollability, epfd type, registration.
 */
TEST_F(disable, errors_are_reported_in_documented_order)
{
	struct epoll_event zero = {};
	int unpollable, not_epoll, level;
	const struct {
		const char *what;
		int epfd, fd;
		struct epoll_event *event;
		int expected;
	} *c, cases[] = {
		{ "event before bad epfd and fd", -1, -1, &zero, -EINVAL },
		{ "event before unregistered fd", self->epfd, self->efd, &zero, -EINVAL },
		{ "bad epfd before unpollable fd", -1, -2, NULL, -EBADF },
		{ "bad fd before epfd type", -3, -1, NULL, -EBADF },
		{ "unpollable fd before epfd type", -3, -2, NULL, -EPERM },
		{ "epfd type before registration", -3, self->efd, NULL, -EINVAL },
		{ "fd is epfd before registration", self->epfd, self->epfd, NULL, -EINVAL },
		{ "registration before oneshot", self->epfd, self->efd, NULL, -ENOENT },
		{ "event before unpollable fd", self->epfd, -2, &zero, -EINVAL },
		{ "oneshot", self->epfd, -4, NULL, -EINVAL },
	};
	unsigned int i;

	unpollable = open_unpollable();
	ASSERT_LE(0, unpollable);
	not_epoll = eventfd(0, EFD_CLOEXEC);
	ASSERT_LE(0, not_epoll);
	level = eventfd(0, EFD_CLOEXEC);
	ASSERT_LE(0, level);
	ASSERT_EQ(0, ctl_add(self->epfd, level, EPOLLIN, 0));

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		int epfd, fd;

		c = &cases[i];
		/* Placeholders: -2 unpollable, -3 not an epoll fd, -4 level item. */
		epfd = c->epfd == -3 ? not_epoll : c->epfd;
		fd = c->fd == -2 ? unpollable : c->fd == -4 ? level : c->fd;
		EXPECT_EQ(c->expected, ctl(epfd, EPOLL_CTL_DISABLE, fd, c->event))
			TH_LOG("case \"%s\"", c->what);
	}
	close(level);
	close(not_epoll);
	close(unpollable);
}

/*
 * IORING_OP_EPOLL_CTL with EPOLL_CTL_DISABLE, through raw io_uring_setup()
 * and io_uring_enter() (ring_*() of epoll_proof_helpers.h): same results as the
 * syscall.
 */

/* True if an io-wq worker thread (comm "iou-wrk-<tid>") exists. */
static bool have_io_wq_worker(void)
{
	char path[300], comm[32];
	struct dirent *de;
	bool found = false;
	DIR *dir;
	FILE *f;

	dir = opendir("/proc/self/task");
	if (!dir)
		return false;
	while (!found && (de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		found = fgets(comm, sizeof(comm), f) && !strncmp(comm, "iou-wrk-", 8);
		fclose(f);
	}
	closedir(dir);
	return found;
}

enum item_state {
	ITEM_ARMED,		/* oneshot, not ready */
	ITEM_REPORTED,		/* oneshot, event reported by epoll_wait() */
	ITEM_LEVEL,		/* level-triggered, not oneshot */
	ITEM_UNREGISTERED,	/* fd not added to the epoll instance */
};

/* An epoll instance with one eventfd in the given state. */
struct dcase {
	int epfd;
	int efd;
};

static int dcase_init(struct dcase *c, enum item_state state)
{
	struct epoll_event ev;
	int ret = 0;

	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->epfd < 0 || c->efd < 0)
		return -errno;
	switch (state) {
	case ITEM_ARMED:
		ret = ctl_add(c->epfd, c->efd, EPOLLIN | EPOLLONESHOT, 1);
		break;
	case ITEM_REPORTED:
		ret = ctl_add(c->epfd, c->efd, EPOLLIN | EPOLLONESHOT, 1);
		if (!ret)
			ret = make_ready(c->efd);
		if (!ret && wait_events(c->epfd, &ev, 1, 1000) != 1)
			ret = -EIO;
		break;
	case ITEM_LEVEL:
		ret = ctl_add(c->epfd, c->efd, EPOLLIN, 1);
		break;
	case ITEM_UNREGISTERED:
		break;
	}
	return ret;
}

static void dcase_exit(struct dcase *c)
{
	close(c->efd);
	close(c->epfd);
}

/* Event mask of the item, or -1 if it is not registered. */
static int64_t dcase_events(struct dcase *c)
{
	uint32_t events = 0;
	uint64_t data = 0;

	return fdinfo_epoll_item(c->epfd, c->efd, &events, &data) ? -1 : events;
}

FIXTURE(uring) {
	struct ring ring;	/* the io_uring instance, set up raw */
	struct dcase sys;	/* the case as seen by the syscall */
	struct dcase uring;	/* an identical case for io_uring */
	struct epoll_event zero;/* the non-NULL event of the EINVAL case */
};

FIXTURE_VARIANT(uring) {
	enum item_state state;	/* state of the item before DISABLE */
	bool pass_event;	/* pass a pointer to a zeroed event */
	int expected;		/* result of the syscall and the SQE */
};

FIXTURE_VARIANT_ADD(uring, armed) {
	.state = ITEM_ARMED,
	.expected = 0,
};

FIXTURE_VARIANT_ADD(uring, reported) {
	.state = ITEM_REPORTED,
	.expected = -EBUSY,
};

FIXTURE_VARIANT_ADD(uring, not_oneshot) {
	.state = ITEM_LEVEL,
	.expected = -EINVAL,
};

FIXTURE_VARIANT_ADD(uring, unregistered) {
	.state = ITEM_UNREGISTERED,
	.expected = -ENOENT,
};

FIXTURE_VARIANT_ADD(uring, non_null_addr) {
	.state = ITEM_ARMED,
	.pass_event = true,
	.expected = -EINVAL,
};

FIXTURE_SETUP(uring)
{
	int ret = epoll_ctl_disable_probe();

	self->ring.fd = -1;
	self->sys.epfd = -1;
	self->sys.efd = -1;
	self->uring.epfd = -1;
	self->uring.efd = -1;
	ASSERT_LE(0, ret);
	if (!ret)
		SKIP(return, NO_DISABLE);
	/* The sysctl exists whenever the kernel has io_uring. */
	if (access("/proc/sys/kernel/io_uring_disabled", F_OK))
		SKIP(return, "kernel built without io_uring");

	ret = ring_init(&self->ring);
	if (ret == -EPERM)
		SKIP(return, "io_uring disabled (kernel.io_uring_disabled)");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, dcase_init(&self->sys, variant->state));
	ASSERT_EQ(0, dcase_init(&self->uring, variant->state));
}

FIXTURE_TEARDOWN(uring)
{
	if (self->uring.epfd >= 0)
		dcase_exit(&self->uring);
	if (self->sys.epfd >= 0)
		dcase_exit(&self->sys);
	ring_exit(&self->ring);
}

/*
 * Run DISABLE on two identical cases, through the syscall and through an
 * SQE, and compare results and the items' event masks afterwards.
 */
#define COMPARE_WITH_SYSCALL(async) do { \
	struct epoll_event *event = variant->pass_event ? &self->zero : NULL; \
	\
	EXPECT_EQ(variant->expected, \
		  ctl(self->sys.epfd, EPOLL_CTL_DISABLE, self->sys.efd, event)); \
	EXPECT_EQ(variant->expected, \
		  ring_epoll_ctl(&self->ring, self->uring.epfd, \
				 EPOLL_CTL_DISABLE, self->uring.efd, event, \
				 async)); \
	EXPECT_EQ(dcase_events(&self->sys), dcase_events(&self->uring)); \
} while (0)

/* Inline submission: the nonblocking attempt finds ep->mtx free. */
TEST_F(uring, inline_submission_matches_syscall)
{
	COMPARE_WITH_SYSCALL(false);
}

/* IOSQE_ASYNC: the request runs blocking in an io-wq worker. */
TEST_F(uring, async_submission_matches_syscall)
{
	COMPARE_WITH_SYSCALL(true);
	/* Prep-time errors complete before the request could be punted. */
	if (!variant->pass_event)
		EXPECT_TRUE(have_io_wq_worker());
}

/*
 * Without userfaultfd: a thread keeps ep->mtx busy with epoll_wait() scans
 * of many ready level-triggered items, so that some nonblocking attempts
 * of inline submissions fail their trylock with -EAGAIN and io_uring
 * retries them blocking from io-wq. The results must not change. An io-wq
 * worker shows the retry path was taken, but it can only be expected with
 * two CPUs or more: on one CPU, a kernel without preemption never switches
 * to the submitter while the contender holds ep->mtx.
 */
#define CONTENDER_ITEMS	256

struct contender {
	int epfd;
	atomic_bool stop;
};

static void *contender_fn(void *arg)
{
	struct epoll_event events[CONTENDER_ITEMS];
	struct contender *c = arg;

	while (!atomic_load(&c->stop))
		epoll_wait(c->epfd, events, CONTENDER_ITEMS, 0);
	return NULL;
}

/* CPUs this process may run on. */
static int nr_cpus_allowed(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return CPU_COUNT(&set);
}

/* FIXTURE_DATA(uring) and FIXTURE_VARIANT(uring), spelt out for checkpatch. */
static void contend_by_scanning(struct __test_metadata *_metadata,
				struct _test_data_uring *self,
				const struct _fixture_variant_uring *variant)
{
	struct epoll_event *event = variant->pass_event ? &self->zero : NULL;
	struct contender c = { .epfd = self->uring.epfd };
	int fds[CONTENDER_ITEMS], i, res, mismatches = 0;
	struct timespec start, now;
	int64_t events_before;
	pthread_t thread;

	for (i = 0; i < CONTENDER_ITEMS; i++) {
		fds[i] = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
		ASSERT_LE(0, fds[i]);
		ASSERT_EQ(0, ctl_add(self->uring.epfd, fds[i], EPOLLIN, 0));
	}
	events_before = dcase_events(&self->uring);
	ASSERT_EQ(0, pthread_create(&thread, NULL, contender_fn, &c));

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (i = 0; ; i++) {
		res = ring_epoll_ctl(&self->ring, self->uring.epfd,
				     EPOLL_CTL_DISABLE, self->uring.efd,
				     event, false);
		if (res != variant->expected) {
			TH_LOG("iteration %d: got %d, expected %d", i, res,
			       variant->expected);
			mismatches++;
		}
		/* Back to the state before DISABLE for the next round. */
		if (variant->state == ITEM_ARMED && !variant->pass_event &&
		    ctl_mod(self->uring.epfd, self->uring.efd,
			    EPOLLIN | EPOLLONESHOT, 1))
			mismatches++;
		if (dcase_events(&self->uring) != events_before)
			mismatches++;
		if (mismatches)
			break;

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec >= 10 ||
		    (i >= 100 && have_io_wq_worker()))
			break;
	}

	atomic_store(&c.stop, true);
	pthread_join(thread, NULL);
	for (i = 0; i < CONTENDER_ITEMS; i++)
		close(fds[i]);

	EXPECT_EQ(0, mismatches);
	/* Prep-time errors complete before any trylock. */
	if (variant->pass_event)
		return;
	if (nr_cpus_allowed() > 1) {
		EXPECT_TRUE(have_io_wq_worker())
			TH_LOG("no submission was retried from io-wq");
	} else if (!have_io_wq_worker()) {
		TH_LOG("one CPU: no submission found ep->mtx held");
	}
}

/*
 * A worker names itself when it first runs, which can be some time after
 * io_uring handed it the request: give it up to @timeout_ms to show up.
 */
static bool wait_io_wq_worker(int timeout_ms)
{
	int64_t deadline = __monotonic_ms() + timeout_ms;

	while (!have_io_wq_worker()) {
		if (__monotonic_ms() >= deadline)
			return false;
		usleep(1000);
	}
	return true;
}

/*
 * The nonblocking attempt of an inline submission finds ep->mtx held by
 * the holder: it must change nothing and return -EAGAIN, and io_uring
 * must retry the request blocking from io-wq, where it waits for ep->mtx.
 * While the holder holds it, the request has not completed and an io-wq
 * worker exists; once released, the result must be the syscall's. Without
 * userfaultfd, contend_by_scanning() does what it can.
 */
TEST_F_TIMEOUT(uring, contended_submission_matches_syscall, 60)
{
	struct epoll_event *event = variant->pass_event ? &self->zero : NULL;
	struct mtx_holder h;
	int ret;

	/* The sysctl exists whenever the kernel has userfaultfd. */
	if (access("/proc/sys/vm/unprivileged_userfaultfd", F_OK)) {
		TH_LOG("no userfaultfd: contending by scanning");
		contend_by_scanning(_metadata, self, variant);
		return;
	}
	ret = mtx_holder_start(&h, self->uring.epfd);
	if (ret == -EPERM) {
		TH_LOG("userfaultfd may not serve kernel faults: contending by scanning");
		contend_by_scanning(_metadata, self, variant);
		return;
	}
	ASSERT_EQ(0, ret);

	/*
	 * Nothing here may take ep->mtx of self->uring.epfd (no fdinfo, no
	 * epoll_ctl() on it) until the holder is released.
	 */
	ret = ring_submit_epoll_ctl(&self->ring, self->uring.epfd,
				    EPOLL_CTL_DISABLE, self->uring.efd, event,
				    false);
	if (variant->pass_event) {
		/* Prep-time errors complete at once, whoever holds ep->mtx. */
		EXPECT_TRUE(ring_cqe_ready(&self->ring));
	} else {
		EXPECT_FALSE(ring_cqe_ready(&self->ring))
			TH_LOG("completed although ep->mtx was held");
		EXPECT_TRUE(wait_io_wq_worker(5000))
			TH_LOG("the submission was not retried from io-wq");
	}
	EXPECT_EQ(1, mtx_holder_release(&h));
	ASSERT_EQ(0, ret);

	EXPECT_EQ(variant->expected, ring_wait_cqe(&self->ring));
	EXPECT_EQ(variant->expected,
		  ctl(self->sys.epfd, EPOLL_CTL_DISABLE, self->sys.efd, event));
	EXPECT_EQ(dcase_events(&self->sys), dcase_events(&self->uring));
}

/*
 * A thread that adds an epoll fd to an instance: with epoll_ctl(), or
 * with an inline IORING_OP_EPOLL_CTL when it has a ring. io_uring cancels
 * the requests of a task that exits, so a submitter lives until told.
 */
struct adder {
	struct ring *ring;	/* NULL: epoll_ctl() */
	int epfd;		/* the instance the epoll fd is added to */
	int fd;			/* the epoll fd added */
	atomic_int tid;		/* the thread's, once it runs */
	atomic_bool returned;	/* epoll_ctl() or the submission returned */
	atomic_bool may_exit;
	int result;		/* epoll_ctl()'s or the submission's */
	pthread_t thread;
};

static void *adder_fn(void *arg)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct adder *a = arg;

	atomic_store(&a->tid, syscall(__NR_gettid));
	if (a->ring)
		a->result = ring_submit_epoll_ctl(a->ring, a->epfd,
						  EPOLL_CTL_ADD, a->fd, &ev,
						  false);
	else
		a->result = ctl_add(a->epfd, a->fd, EPOLLIN, 0);
	atomic_store(&a->returned, true);
	while (a->ring && !atomic_load(&a->may_exit))
		usleep(1000);
	return NULL;
}

/*
 * Start the adder; true once it sleeps on a mutex, which the callers
 * arrange to be the ep->mtx that a holder keeps, met in the loop check.
 */
static bool adder_start_and_block(struct adder *a)
{
	if (pthread_create(&a->thread, NULL, adder_fn, a))
		return false;
	while (!atomic_load(&a->tid))
		usleep(1000);
	return task_sleeps(atomic_load(&a->tid), 'D', -1, 5000);
}

/* Wait up to @timeout_ms for the adder's call to return. */
static bool adder_returned(struct adder *a, int timeout_ms)
{
	int64_t deadline = __monotonic_ms() + timeout_ms;

	while (!atomic_load(&a->returned)) {
		if (__monotonic_ms() >= deadline)
			return false;
		usleep(1000);
	}
	return true;
}

static void adder_stop(struct adder *a)
{
	atomic_store(&a->may_exit, true);
	pthread_join(a->thread, NULL);
}

/*
 * An inline IORING_OP_EPOLL_CTL adding the epoll fd @inner to @epfd, while
 * others, through the userfaultfd holder, keep the mutexes of its loop
 * check.
 */
FIXTURE(uring_loop_check) {
	struct ring ring;
	int epfd;
	int inner;
};

FIXTURE_SETUP(uring_loop_check)
{
	int ret;

	if (access("/proc/sys/kernel/io_uring_disabled", F_OK))
		SKIP(return, "kernel built without io_uring");
	if (access("/proc/sys/vm/unprivileged_userfaultfd", F_OK))
		SKIP(return, "kernel built without userfaultfd");
	ret = ring_init(&self->ring);
	if (ret == -EPERM)
		SKIP(return, "io_uring disabled (kernel.io_uring_disabled)");
	ASSERT_EQ(0, ret);
	self->epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->epfd);
	self->inner = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->inner);
}

FIXTURE_TEARDOWN(uring_loop_check)
{
	close(self->inner);
	close(self->epfd);
	ring_exit(&self->ring);
}

/*
 * EPOLL_CTL_ADD of an epoll fd checks for loops under epnested_mutex, and
 * an inline IORING_OP_EPOLL_CTL must not wait for that mutex: when another
 * ADD holds it, the nonblocking attempt gives up, changes nothing, and the
 * request is retried from io-wq. The other ADD is made to hold it: its
 * loop check walks an instance whose ep->mtx the holder has.
 */
TEST_F(uring_loop_check, add_waits_for_epnested_mutex)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct adder adder = { .ring = NULL };
	struct mtx_holder h;
	int held, outer, ret;

	held = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, held);
	outer = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, outer);
	ret = mtx_holder_start(&h, held);
	if (ret == -EPERM)
		SKIP(return, "userfaultfd may not serve kernel faults");
	ASSERT_EQ(0, ret);

	adder.epfd = outer;
	adder.fd = held;
	EXPECT_TRUE(adder_start_and_block(&adder))
		TH_LOG("the other ADD did not block in its loop check");

	ret = ring_submit_epoll_ctl(&self->ring, self->epfd, EPOLL_CTL_ADD,
				    self->inner, &ev, false);
	EXPECT_FALSE(ring_cqe_ready(&self->ring))
		TH_LOG("completed although epnested_mutex was held");
	EXPECT_TRUE(wait_io_wq_worker(5000))
		TH_LOG("the submission was not retried from io-wq");
	EXPECT_EQ(-ENOENT,
		  fdinfo_epoll_item(self->epfd, self->inner, NULL, NULL));

	EXPECT_EQ(1, mtx_holder_release(&h));
	adder_stop(&adder);
	EXPECT_EQ(0, adder.result);
	ASSERT_EQ(0, ret);
	EXPECT_EQ(0, ring_wait_cqe(&self->ring));
	EXPECT_EQ(0, fdinfo_epoll_item(self->epfd, self->inner, NULL, NULL));

	close(outer);
	close(held);
}

/*
 * The same request drops ep->mtx of its instance for the loop check and
 * takes it again after, nonblocking as well: if it was taken meanwhile,
 * the request must give up then, change nothing, and be retried from
 * io-wq. Here the request itself sleeps in its loop check, on ep->mtx of
 * the epoll fd it adds, while a second holder takes its instance's.
 */
TEST_F(uring_loop_check, add_waits_for_instance_after_the_check)
{
	struct adder adder = {
		.ring = &self->ring, .epfd = self->epfd, .fd = self->inner,
	};
	struct mtx_holder in_check, after;
	int ret;

	ret = mtx_holder_start(&in_check, self->inner);
	if (ret == -EPERM)
		SKIP(return, "userfaultfd may not serve kernel faults");
	ASSERT_EQ(0, ret);

	ASSERT_TRUE(adder_start_and_block(&adder))
		TH_LOG("the submission did not block in its loop check");
	/* The request holds no ep->mtx now: the holder takes epfd's. */
	ASSERT_EQ(0, mtx_holder_start(&after, self->epfd));
	EXPECT_EQ(1, mtx_holder_release(&in_check));
	ASSERT_TRUE(adder_returned(&adder, 5000));
	ASSERT_EQ(0, adder.result);
	EXPECT_FALSE(ring_cqe_ready(&self->ring))
		TH_LOG("completed although ep->mtx was held");
	EXPECT_TRUE(wait_io_wq_worker(5000))
		TH_LOG("the submission was not retried from io-wq");

	EXPECT_EQ(1, mtx_holder_release(&after));
	EXPECT_EQ(0, ring_wait_cqe(&self->ring));
	adder_stop(&adder);
	EXPECT_EQ(0, fdinfo_epoll_item(self->epfd, self->inner, NULL, NULL));
}

/*
 * The use case: worker threads in epoll_wait() on EPOLLONESHOT items whose
 * data.ptr points at per-item state, while another thread deletes the
 * items. The items are eventfds that are always readable, and a writer
 * thread keeps signalling them. With the DISABLE protocol every state is freed exactly once and
 * never touched after that. The "naive" variant deletes and frees at once,
 * as applications without DISABLE do, and must catch a worker using state
 * that was freed under it: it shows that the checks can fail.
 *
 * The protocol: the deleter sets a "deleted" flag in the state and calls
 * DISABLE; on 0 it deletes the item and frees the state, on EBUSY it
 * forgets the item. A worker done with an event re-arms the item with MOD
 * unless the flag is set, in which case it deletes and frees. The flag
 * and the DISABLE, and the check of the flag and the MOD, are done under
 * a lock in the state: without it a worker could re-arm an item between
 * the deleter's EBUSY and its own check, and nobody would own the item.
 *
 * States come from a pool and are never returned to the allocator: a free
 * poisons the state, and every access checks the poison first.
 */
#define RACE_WORKERS	4
#define RACE_ITEMS	16
#define RACE_ROUNDS	64
#define RACE_SECONDS	3

#define STATE_LIVE	0x4c495645u
#define STATE_POISON	0xdeadbeefu

struct race_state {
	atomic_uint magic;	/* STATE_LIVE while allocated, then STATE_POISON */
	atomic_int holders;	/* workers handling an event for it right now */
	atomic_int frees;	/* times it was freed: must end up 1 */
	pthread_mutex_t lock;	/* orders DISABLE against the worker's MOD */
	bool deleted;		/* the deleter wants it gone; under lock */
	int fd;			/* eventfd, kept readable all its life */
};

struct race {
	int epfd;
	bool naive;		/* DEL and free without EPOLL_CTL_DISABLE */
	atomic_bool stop;	/* tells the workers to return */
	atomic_uint freed;	/* states freed so far */
	atomic_uint stale;	/* accesses to freed state, frees while held */
	atomic_uint shared;	/* two workers held one item at the same time */
	atomic_uint ctl_errors;	/* epoll_ctl() failures the protocol excludes */
	atomic_uint idle;	/* DISABLE returned 0 */
	atomic_uint busy;	/* DISABLE returned EBUSY */
	atomic_int fds[RACE_ITEMS];	/* this round's eventfds, for the writer */
	atomic_uint writes;	/* successful writes of the writer */
	struct race_state pool[RACE_ITEMS * RACE_ROUNDS];
};

static void race_free(struct race *r, struct race_state *s)
{
	if (atomic_load(&s->holders))
		atomic_fetch_add(&r->stale, 1);
	if (atomic_exchange(&s->magic, STATE_POISON) != STATE_LIVE)
		atomic_fetch_add(&r->stale, 1);
	atomic_fetch_add(&s->frees, 1);
	close(s->fd);
	atomic_fetch_add(&r->freed, 1);
}

static void race_handle(struct race *r, struct race_state *s)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT };
	bool owner;

	if (atomic_load(&s->magic) != STATE_LIVE) {
		atomic_fetch_add(&r->stale, 1);
		return;
	}
	if (atomic_fetch_add(&s->holders, 1))
		atomic_fetch_add(&r->shared, 1);
	/* The "work": let the deleter run while the event is held. */
	sched_yield();
	atomic_fetch_sub(&s->holders, 1);

	pthread_mutex_lock(&s->lock);
	if (atomic_load(&s->magic) != STATE_LIVE) {
		pthread_mutex_unlock(&s->lock);
		atomic_fetch_add(&r->stale, 1);
		return;
	}
	/* The deleter got EBUSY: this thread owns the item now. */
	owner = s->deleted && !r->naive;
	ev.data.ptr = s;
	if (!owner && ctl(r->epfd, EPOLL_CTL_MOD, s->fd, &ev)) {
		/* The item went away while this thread held its event. */
		atomic_fetch_add(r->naive ? &r->stale : &r->ctl_errors, 1);
	}
	pthread_mutex_unlock(&s->lock);

	if (owner) {
		if (ctl(r->epfd, EPOLL_CTL_DEL, s->fd, NULL))
			atomic_fetch_add(&r->ctl_errors, 1);
		race_free(r, s);
	}
}

/*
 * Keep the items' wait queues busy: every write runs the poll callback of
 * the item, which must not queue a disarmed one. The writer only knows fd
 * numbers, never the states; a write to an fd closed meanwhile just fails.
 */
static void *race_writer(void *arg)
{
	struct race *r = arg;
	unsigned int i, writes = 0;
	uint64_t one = 1;

	while (!atomic_load(&r->stop)) {
		for (i = 0; i < RACE_ITEMS; i++)
			writes += write(atomic_load(&r->fds[i]), &one,
					sizeof(one)) == sizeof(one);
		sched_yield();
	}
	atomic_store(&r->writes, writes);
	return NULL;
}

static void *race_worker(void *arg)
{
	struct race *r = arg;
	struct epoll_event ev;
	int n;

	while (!atomic_load(&r->stop)) {
		n = epoll_wait(r->epfd, &ev, 1, 10);
		if (n < 0 && errno != EINTR) {
			atomic_fetch_add(&r->ctl_errors, 1);
			break;
		}
		if (n == 1)
			race_handle(r, ev.data.ptr);
	}
	return NULL;
}

/* Delete one item the way the variant says. */
static void race_delete(struct race *r, struct race_state *s)
{
	int ret;

	if (r->naive) {
		if (ctl(r->epfd, EPOLL_CTL_DEL, s->fd, NULL))
			atomic_fetch_add(&r->ctl_errors, 1);
		race_free(r, s);
		return;
	}

	pthread_mutex_lock(&s->lock);
	s->deleted = true;
	ret = ctl_disable(r->epfd, s->fd);
	pthread_mutex_unlock(&s->lock);
	if (ret == 0) {
		/* No event is out: delete and free now. */
		atomic_fetch_add(&r->idle, 1);
		if (ctl(r->epfd, EPOLL_CTL_DEL, s->fd, NULL))
			atomic_fetch_add(&r->ctl_errors, 1);
		race_free(r, s);
	} else if (ret == -EBUSY) {
		/* A worker holds the event and frees s: hands off. */
		atomic_fetch_add(&r->busy, 1);
	} else {
		atomic_fetch_add(&r->ctl_errors, 1);
	}
}

FIXTURE(race) {
	struct race *r;		/* shared with the worker threads */
};

FIXTURE_VARIANT(race) {
	bool naive;		/* delete without EPOLL_CTL_DISABLE */
};

FIXTURE_VARIANT_ADD(race, disable_protocol) {
	.naive = false,
};

FIXTURE_VARIANT_ADD(race, naive_del_and_free) {
	.naive = true,
};

FIXTURE_SETUP(race)
{
	/* The naive variant checks the checker and runs on any kernel. */
	int probe = variant->naive ? 1 : epoll_ctl_disable_probe();

	self->r = NULL;
	ASSERT_LE(0, probe);
	if (!probe)
		SKIP(return, NO_DISABLE);

	self->r = calloc(1, sizeof(*self->r));
	ASSERT_FALSE(!self->r);
	self->r->naive = variant->naive;
	self->r->epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->r->epfd);
}

FIXTURE_TEARDOWN(race)
{
	if (self->r) {
		close(self->r->epfd);
		free(self->r);
	}
}

TEST_F_TIMEOUT(race, delete_items_while_threads_handle_their_events, 60)
{
	pthread_t workers[RACE_WORKERS], writer;
	struct race *r = self->r;
	unsigned int used = 0, round, i, lost = 0, multi = 0;
	struct timespec start, now;

	for (i = 0; i < RACE_WORKERS; i++)
		ASSERT_EQ(0, pthread_create(&workers[i], NULL, race_worker, r));
	for (i = 0; i < RACE_ITEMS; i++)
		atomic_store(&r->fds[i], -1);
	ASSERT_EQ(0, pthread_create(&writer, NULL, race_writer, r));

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (round = 0; round < RACE_ROUNDS; round++) {
		struct race_state *batch = &r->pool[used];
		struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT };
		int waited;

		for (i = 0; i < RACE_ITEMS; i++) {
			struct race_state *s = &batch[i];

			s->fd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
			ASSERT_LE(0, s->fd);
			ASSERT_EQ(0, pthread_mutex_init(&s->lock, NULL));
			atomic_store(&s->magic, STATE_LIVE);
			ev.data.ptr = s;
			ASSERT_EQ(0, ctl(r->epfd, EPOLL_CTL_ADD, s->fd, &ev));
			atomic_store(&r->fds[i], s->fd);
		}
		used += RACE_ITEMS;
		/* Let the workers pass the events around for a while. */
		usleep(2000);

		for (i = 0; i < RACE_ITEMS; i++) {
			race_delete(r, &batch[i]);
			sched_yield();
		}

		/* The EBUSY ones are freed by the workers. */
		for (waited = 0; atomic_load(&r->freed) < used && waited < 5000;
		     waited++)
			usleep(1000);
		if (atomic_load(&r->freed) < used)
			break;

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec >= RACE_SECONDS)
			break;
		/* The naive variant only has to show the race once. */
		if (r->naive && atomic_load(&r->stale))
			break;
	}

	atomic_store(&r->stop, true);
	pthread_join(writer, NULL);
	for (i = 0; i < RACE_WORKERS; i++)
		pthread_join(workers[i], NULL);

	for (i = 0; i < used; i++) {
		int frees = atomic_load(&r->pool[i].frees);

		lost += frees == 0;
		multi += frees > 1;
	}
	TH_LOG("%u items, %u writes, DISABLE: %u x 0, %u x EBUSY; %u stale accesses",
	       used, atomic_load(&r->writes), atomic_load(&r->idle),
	       atomic_load(&r->busy), atomic_load(&r->stale));

	if (r->naive) {
		/* Deleting and freeing at once must be caught. */
		EXPECT_LT(0, atomic_load(&r->stale));
		return;
	}
	EXPECT_EQ(0, atomic_load(&r->stale));
	EXPECT_EQ(0, atomic_load(&r->shared));
	EXPECT_EQ(0, atomic_load(&r->ctl_errors));
	EXPECT_EQ(0, lost);
	EXPECT_EQ(0, multi);
	EXPECT_EQ(0, fdinfo_count(r->epfd));
	/* Both answers of the protocol were exercised. */
	EXPECT_LT(0, atomic_load(&r->idle));
	EXPECT_LT(0, atomic_load(&r->busy));
}

/* Registered last, so it runs after every other test of the program. */
FIXTURE(kernel) {};
FIXTURE_SETUP(kernel) {}
FIXTURE_TEARDOWN(kernel) {}

TEST_F(kernel, reported_no_bug_while_the_tests_ran)
{
	kernel_reports_check(_metadata);
}

TEST_HARNESS_MAIN
