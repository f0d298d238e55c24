// SPDX-License-Identifier: GPL-2.0
/*
 * EPOLLWAKEUP and CAP_BLOCK_SUSPEND, as user space sees them.
 *
 * epoll_ctl(2): with CAP_BLOCK_SUSPEND, EPOLLWAKEUP ensures that the
 * system does not suspend while the event is pending or being processed,
 * processed meaning until the next epoll_wait() on the epoll fd, its
 * close, EPOLL_CTL_DEL of the item or EPOLL_CTL_MOD clearing the flag.
 * Without the capability the flag is silently ignored (BUGS). A suspend
 * is held off here exactly when a read of /sys/power/wakeup_count blocks
 * (Documentation/ABI/testing/sysfs-power), and the mask an item keeps is
 * what /proc/self/fdinfo shows (proc_pid_fdinfo(5)).
 * Documentation/userspace-api/epoll.rst states the rest: the flag's fate
 * in a user namespace, edge-triggered and one-shot items, readiness that
 * comes during a report, a faulting copy, EFAULT from epoll_ctl(), and
 * IORING_OP_EPOLL_CTL and IORING_OP_EPOLL_WAIT.
 *
 * Each test names the sentence it checks. Every test restores the
 * capabilities it drops in its teardown; none changes anything outside
 * its own process.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <linux/userfaultfd.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>

#include "kselftest_harness.h"
#include "epoll_helpers.h"

/* epoll_ctl() adds these to every mask it stores for ADD and MOD. */
#define ALWAYS_POLLED (EPOLLERR | EPOLLHUP)

/* Masks with unrelated bits, to see that only EPOLLWAKEUP changes. */
#define ADD_MASK (EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLRDHUP | EPOLLET)
#define MOD_MASK (EPOLLIN | EPOLLRDBAND | EPOLLONESHOT)

/* How long a read of wakeup_count must stay blocked to count as held up. */
#define HELD_UP_MS 500
/* How long a read of wakeup_count may take to complete (QEMU is slow). */
#define COMPLETES_MS 10000

static int ctl(int epfd, int op, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return epoll_ctl(epfd, op, fd, &ev);
}

static uint32_t stored_events(struct __test_metadata *_metadata, int epfd,
			      int tfd)
{
	uint32_t events = 0;

	EXPECT_EQ(0, fdinfo_events(epfd, tfd, &events))
		TH_LOG("fd %d is not in the fdinfo of epoll fd %d", tfd, epfd);
	return events;
}

/*
 * Become root of a new user namespace: every capability there, none in
 * the initial one. False, with the reason in @why, where that is refused.
 */
static bool become_userns_root(struct __test_metadata *_metadata,
			       const char **why)
{
	uid_t uid = geteuid();
	char map[64];
	int fd, len;

	if (unshare(CLONE_NEWUSER)) {
		*why = errno == EINVAL ? "no user namespaces (CONFIG_USER_NS=n)" :
			"creating a user namespace is not allowed here";
		return false;
	}
	len = snprintf(map, sizeof(map), "0 %u 1\n", uid);
	fd = open("/proc/self/uid_map", O_WRONLY | O_CLOEXEC);
	EXPECT_LE(0, fd);
	EXPECT_EQ(len, write(fd, map, len));
	close(fd);
	EXPECT_EQ(1, cap_is_effective(CAP_BLOCK_SUSPEND));
	return true;
}

/*
 * An epoll fd and an eventfd to watch; the capabilities of the test,
 * restored by the teardown whatever a test dropped. A test that needs a
 * capability asks for it itself: most need none.
 */
struct env {
	int epfd;
	int efd;
	uint64_t saved_caps;
};

static void env_setup(struct __test_metadata *_metadata, struct env *env)
{
	env->epfd = -1;
	env->efd = -1;
	ASSERT_EQ(0, cap_get_effective(&env->saved_caps));
	env->epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, env->epfd);
	env->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, env->efd);
}

static void env_teardown(struct __test_metadata *_metadata, struct env *env)
{
	EXPECT_EQ(0, cap_set_effective(env->saved_caps));
	if (env->efd >= 0)
		close(env->efd);
	if (env->epfd >= 0)
		close(env->epfd);
}

FIXTURE(ep) {
	struct env env;
};

FIXTURE_SETUP(ep)
{
	env_setup(_metadata, &self->env);
}

FIXTURE_TEARDOWN(ep)
{
	env_teardown(_metadata, &self->env);
}

static void drop_cap(struct __test_metadata *_metadata, uint64_t saved,
		     int cap)
{
	ASSERT_EQ(0, cap_set_effective(saved & ~CAP_TO_MASK64(cap)));
	ASSERT_EQ(0, cap_is_effective(cap));
}

/*
 * Why a hold of suspend cannot be seen here, or NULL: the kernel cannot
 * suspend, or something else holds suspend off now.
 */
static const char *no_hold_to_see(void)
{
	if (!wakeup_count_supported())
		return "no " WAKEUP_COUNT_PATH " (CONFIG_PM_SLEEP=n)";
	if (wakeup_count_read_bounded(COMPLETES_MS) != 1)
		return "a wakeup event elsewhere holds off suspend";
	return NULL;
}

static void expect_held_up(struct __test_metadata *_metadata)
{
	EXPECT_EQ(0, wakeup_count_read_bounded(HELD_UP_MS))
		TH_LOG("suspend is not held off");
}

static void expect_not_held_up(struct __test_metadata *_metadata)
{
	EXPECT_EQ(1, wakeup_count_read_bounded(COMPLETES_MS))
		TH_LOG("suspend is still held off");
}

static void make_ready(struct __test_metadata *_metadata, int efd)
{
	uint64_t one = 1;

	ASSERT_EQ(sizeof(one), write(efd, &one, sizeof(one)));
}

static void drain(struct __test_metadata *_metadata, int efd)
{
	uint64_t n;

	ASSERT_EQ(sizeof(n), read(efd, &n, sizeof(n)));
}

/*
 * epoll_ctl(2), EPOLLWAKEUP: the flag is taken with CAP_BLOCK_SUSPEND;
 * proc_pid_fdinfo(5): "events" is the mask of the item. MOD without the
 * flag takes it away, MOD with it gives it back.
 */
TEST_F(ep, add_and_mod_keep_epollwakeup_with_cap_block_suspend)
{
	uint32_t kept = wakeup_count_supported() ? EPOLLWAKEUP : 0;

	if (!has_cap_block_suspend())
		SKIP(return, NEEDS_CAP_BLOCK_SUSPEND);
	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_ADD, self->env.efd,
			 ADD_MASK | EPOLLWAKEUP, 1));
	EXPECT_EQ(ADD_MASK | ALWAYS_POLLED | kept,
		  stored_events(_metadata, self->env.epfd, self->env.efd));
	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_MOD, self->env.efd, MOD_MASK, 2));
	EXPECT_EQ(MOD_MASK | ALWAYS_POLLED,
		  stored_events(_metadata, self->env.epfd, self->env.efd));
	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_MOD, self->env.efd,
			 MOD_MASK | EPOLLWAKEUP, 3));
	EXPECT_EQ(MOD_MASK | ALWAYS_POLLED | kept,
		  stored_events(_metadata, self->env.epfd, self->env.efd));
}

/*
 * epoll_ctl(2), BUGS: "If EPOLLWAKEUP is specified in flags, but the
 * caller does not have the CAP_BLOCK_SUSPEND capability, then the
 * EPOLLWAKEUP flag is silently ignored." The call succeeds and the rest
 * of the mask is stored; an item keeps what it got until the next MOD.
 * Dropping CAP_WAKE_ALARM (35) instead changes nothing. A caller that
 * never had CAP_BLOCK_SUSPEND has the flag ignored from the first call.
 */
FIXTURE(cap_dropped) {
	struct env env;
};

FIXTURE_VARIANT(cap_dropped) {
	int cap;		/* dropped from the effective set */
	bool clears;		/* EPOLLWAKEUP is then ignored */
};

FIXTURE_VARIANT_ADD(cap_dropped, cap_block_suspend) {
	.cap = CAP_BLOCK_SUSPEND,
	.clears = true,
};

FIXTURE_VARIANT_ADD(cap_dropped, cap_wake_alarm) {
	.cap = CAP_WAKE_ALARM,
	.clears = false,
};

FIXTURE_SETUP(cap_dropped)
{
	env_setup(_metadata, &self->env);
}

FIXTURE_TEARDOWN(cap_dropped)
{
	env_teardown(_metadata, &self->env);
}

TEST_F(cap_dropped, add_and_mod_ignore_only_epollwakeup)
{
	bool had_cap = has_cap_block_suspend();
	uint32_t with_cap = had_cap && wakeup_count_supported() ? EPOLLWAKEUP : 0;
	uint32_t kept = variant->clears ? 0 : with_cap;
	int early;

	if (!variant->clears && !had_cap)
		SKIP(return, NEEDS_CAP_BLOCK_SUSPEND);
	if (cap_is_effective(variant->cap) != 1 && !variant->clears)
		SKIP(return, "needs CAP_WAKE_ALARM, to drop it");
	early = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, early);
	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_ADD, early,
			 ADD_MASK | EPOLLWAKEUP, 1));
	drop_cap(_metadata, self->env.saved_caps, variant->cap);

	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_ADD, self->env.efd,
			 ADD_MASK | EPOLLWAKEUP, 2));
	EXPECT_EQ(ADD_MASK | ALWAYS_POLLED | kept,
		  stored_events(_metadata, self->env.epfd, self->env.efd));
	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_MOD, self->env.efd,
			 MOD_MASK | EPOLLWAKEUP, 3));
	EXPECT_EQ(MOD_MASK | ALWAYS_POLLED | kept,
		  stored_events(_metadata, self->env.epfd, self->env.efd));

	EXPECT_EQ(ADD_MASK | ALWAYS_POLLED | with_cap,
		  stored_events(_metadata, self->env.epfd, early));
	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_MOD, early,
			 ADD_MASK | EPOLLWAKEUP, 4));
	EXPECT_EQ(ADD_MASK | ALWAYS_POLLED | kept,
		  stored_events(_metadata, self->env.epfd, early));
	close(early);
}

/*
 * epoll_ctl(2), ERRORS: each condition listed there fails with its errno,
 * whether EPOLLWAKEUP is then kept or ignored, and changes nothing;
 * epoll.rst adds EFAULT when the event cannot be read. EPOLLWAKEUP is one
 * of the flags EPOLLEXCLUSIVE may be combined with (epoll_ctl(2),
 * EPOLLEXCLUSIVE). Each call below meets exactly one of the conditions.
 */
FIXTURE(ctl_errors) {
	struct env env;
};

FIXTURE_VARIANT(ctl_errors) {
	bool cap;		/* CAP_BLOCK_SUSPEND kept */
};

FIXTURE_VARIANT_ADD(ctl_errors, with_cap_block_suspend) {
	.cap = true,
};

FIXTURE_VARIANT_ADD(ctl_errors, without_cap_block_suspend) {
	.cap = false,
};

FIXTURE_SETUP(ctl_errors)
{
	env_setup(_metadata, &self->env);
	if (variant->cap && !has_cap_block_suspend())
		SKIP(return, NEEDS_CAP_BLOCK_SUSPEND);
	if (!variant->cap)
		drop_cap(_metadata, self->env.saved_caps, CAP_BLOCK_SUSPEND);
}

FIXTURE_TEARDOWN(ctl_errors)
{
	env_teardown(_metadata, &self->env);
}

/* epoll_ctl() of an EPOLLIN | EPOLLWAKEUP event: 0 or the errno. */
static int ctl_errno(int epfd, int op, int fd, uint32_t events)
{
	return ctl(epfd, op, fd, events | EPOLLIN | EPOLLWAKEUP, 0) ? errno : 0;
}

TEST_F(ctl_errors, each_condition_fails_with_its_errno)
{
	uint32_t kept = variant->cap && wakeup_count_supported() ?
		EPOLLWAKEUP : 0;
	int epfd = self->env.epfd, efd = self->env.efd;
	int closed, other, dir, inner;
	uint32_t events;
	void *unreadable;

	other = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, other);
	dir = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_LE(0, dir);
	inner = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, inner);
	closed = dup(efd);	/* the last fd opened, so it stays free */
	ASSERT_LE(0, closed);
	close(closed);
	unreadable = mmap(NULL, getpagesize(), PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(unreadable != MAP_FAILED);
	ASSERT_EQ(0, ctl_errno(epfd, EPOLL_CTL_ADD, efd, 0));

	EXPECT_EQ(EBADF, ctl_errno(epfd, EPOLL_CTL_ADD, closed, 0));
	EXPECT_EQ(EBADF, ctl_errno(closed, EPOLL_CTL_ADD, other, 0));
	EXPECT_EQ(EEXIST, ctl_errno(epfd, EPOLL_CTL_ADD, efd, 0));
	EXPECT_EQ(EINVAL, ctl_errno(efd, EPOLL_CTL_ADD, other, 0))
		TH_LOG("epfd is not an epoll fd");
	EXPECT_EQ(EINVAL, ctl_errno(epfd, EPOLL_CTL_ADD, epfd, 0))
		TH_LOG("fd is epfd");
	EXPECT_EQ(EINVAL, ctl_errno(epfd, 0, other, 0))
		TH_LOG("op 0 is not an operation");
	EXPECT_EQ(ENOENT, ctl_errno(epfd, EPOLL_CTL_MOD, other, 0));
	EXPECT_EQ(ENOENT, ctl_errno(epfd, EPOLL_CTL_DEL, other, 0));
	EXPECT_EQ(EPERM, ctl_errno(epfd, EPOLL_CTL_ADD, dir, 0))
		TH_LOG("a directory does not support epoll");
	EXPECT_EQ(0, ctl_errno(epfd, EPOLL_CTL_ADD, inner, 0));
	EXPECT_EQ(ELOOP, ctl_errno(inner, EPOLL_CTL_ADD, epfd, 0))
		TH_LOG("two epoll instances would watch each other");
	EXPECT_EQ(-1, epoll_ctl(epfd, EPOLL_CTL_ADD, other, unreadable));
	EXPECT_EQ(EFAULT, errno);

	EXPECT_EQ(EPOLLIN | ALWAYS_POLLED | kept,
		  stored_events(_metadata, epfd, efd));
	EXPECT_EQ(-ENOENT, fdinfo_events(epfd, other, &events))
		TH_LOG("a failed ADD added fd %d", other);
	EXPECT_EQ(-ENOENT, fdinfo_events(inner, epfd, &events))
		TH_LOG("a failed ADD added the epoll fd");

	munmap(unreadable, getpagesize());
	close(inner);
	close(dir);
	close(other);
}

TEST_F(ctl_errors, epollexclusive_takes_epollwakeup)
{
	uint32_t kept = variant->cap && wakeup_count_supported() ?
		EPOLLWAKEUP : 0;
	int epfd = self->env.epfd, efd = self->env.efd;
	int other, inner;

	other = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, other);
	inner = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, inner);
	ASSERT_EQ(0, ctl_errno(epfd, EPOLL_CTL_ADD, other, 0));

	EXPECT_EQ(0, ctl_errno(epfd, EPOLL_CTL_ADD, efd,
			       EPOLLEXCLUSIVE | EPOLLOUT | EPOLLET | ALWAYS_POLLED));
	EXPECT_EQ(EPOLLEXCLUSIVE | EPOLLIN | EPOLLOUT | EPOLLET | ALWAYS_POLLED |
		  kept, stored_events(_metadata, epfd, efd));
	EXPECT_EQ(EINVAL, ctl_errno(epfd, EPOLL_CTL_MOD, efd, 0))
		TH_LOG("MOD of an item added with EPOLLEXCLUSIVE");
	EXPECT_EQ(EINVAL, ctl_errno(epfd, EPOLL_CTL_MOD, other, EPOLLEXCLUSIVE))
		TH_LOG("MOD with EPOLLEXCLUSIVE");
	EXPECT_EQ(EINVAL, ctl_errno(epfd, EPOLL_CTL_ADD, inner, EPOLLEXCLUSIVE))
		TH_LOG("EPOLLEXCLUSIVE on an epoll fd");
	EXPECT_EQ(0, ctl_errno(epfd, EPOLL_CTL_DEL, efd, 0));
	EXPECT_EQ(EINVAL, ctl_errno(epfd, EPOLL_CTL_ADD, efd,
				    EPOLLEXCLUSIVE | EPOLLONESHOT))
		TH_LOG("EPOLLONESHOT with EPOLLEXCLUSIVE");

	EXPECT_EQ(EPOLLIN | ALWAYS_POLLED | kept,
		  stored_events(_metadata, epfd, other));
	close(inner);
	close(other);
}

/*
 * epoll_ctl(2), ELOOP: "... or a nesting depth of epoll instances greater
 * than 5". A chain of instances built from the bottom up fails with ELOOP
 * by the time it would be six deep.
 */
TEST_F(ctl_errors, deep_nesting_fails_with_eloop)
{
	int ep[6], i, err = 0;

	for (i = 0; i < 6; i++) {
		ep[i] = epoll_create1(EPOLL_CLOEXEC);
		ASSERT_LE(0, ep[i]);
	}
	ASSERT_EQ(0, ctl_errno(ep[1], EPOLL_CTL_ADD, ep[0], 0));
	for (i = 2; i < 6 && !err; i++)
		err = ctl_errno(ep[i], EPOLL_CTL_ADD, ep[i - 1], 0);
	EXPECT_EQ(ELOOP, err) TH_LOG("a chain %d instances deep was made", i);
	for (i = 0; i < 6; i++)
		close(ep[i]);
}

/*
 * epoll_wait(2): the call "blocks until ... a file descriptor delivers an
 * event"; epoll(7), Q3: an epoll fd that "has events waiting" is
 * readable, to poll(2) and to an epoll instance that watches it. A thread
 * blocked in any of these without a timeout returns when an item becomes
 * ready: by an event of its file (a pipe wakes its waiters synchronously,
 * an eventfd does not), by an ADD of a ready file, or by a MOD that arms a
 * ready one-shot item again.
 */
enum blocked_in { IN_EPOLL_WAIT, IN_POLL, IN_OUTER_EPOLL_WAIT };

/* The data of the outer instance's item, the epoll fd it watches. */
#define OUTER_TAG 77

struct waiter {
	enum blocked_in in;
	int fd;			/* the epoll fd it waits on */
	pid_t tid;		/* set by the waiter before it blocks */
	bool done;
	int res;
	struct epoll_event ev;	/* the event, or the revents of poll() */
};

static void *waiter_run(void *arg)
{
	struct waiter *w = arg;
	struct pollfd pfd = { .fd = w->fd, .events = POLLIN };

	__atomic_store_n(&w->tid, syscall(__NR_gettid), __ATOMIC_RELEASE);
	if (w->in == IN_POLL) {
		w->res = poll(&pfd, 1, -1);
		w->ev.events = pfd.revents;
	} else {
		w->res = epoll_wait(w->fd, &w->ev, 1, -1);
	}
	__atomic_store_n(&w->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* Whether thread @tid of this process is asleep ("S" in its stat). */
static bool task_sleeping(pid_t tid)
{
	char path[64], stat[512], *end;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, stat, sizeof(stat) - 1);
	close(fd);
	if (n <= 0)
		return false;
	stat[n] = '\0';
	end = strrchr(stat, ')');
	return end && end[1] == ' ' && end[2] == 'S';
}

/* Start @w; return once it has gone to sleep. */
static void start_waiter(struct __test_metadata *_metadata, struct waiter *w,
			 pthread_t *thread)
{
	pid_t tid;
	int ms;

	w->tid = 0;
	w->done = false;
	w->res = -1;
	ASSERT_EQ(0, pthread_create(thread, NULL, waiter_run, w));
	for (ms = 0; ms < COMPLETES_MS; ms++) {
		tid = __atomic_load_n(&w->tid, __ATOMIC_ACQUIRE);
		if (tid && task_sleeping(tid))
			return;
		usleep(1000);
	}
	TH_LOG("the waiting thread did not block");
}

/*
 * Expect @w to return with the event of @tag within COMPLETES_MS; one
 * that stays blocked is left to the end of the test's process.
 */
static void expect_woken(struct __test_metadata *_metadata, struct waiter *w,
			 pthread_t thread, uint64_t tag)
{
	int ms;

	for (ms = 0; ms < COMPLETES_MS; ms++) {
		if (__atomic_load_n(&w->done, __ATOMIC_ACQUIRE))
			break;
		usleep(1000);
	}
	if (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE)) {
		pthread_detach(thread);
		ASSERT_TRUE(false) TH_LOG("the blocked thread was not woken");
	}
	ASSERT_EQ(0, pthread_join(thread, NULL));
	ASSERT_EQ(1, w->res);
	if (w->in == IN_POLL) {
		EXPECT_EQ(POLLIN, w->ev.events & POLLIN);
	} else {
		EXPECT_EQ(w->in == IN_OUTER_EPOLL_WAIT ? OUTER_TAG : tag,
			  w->ev.data.u64);
	}
}

FIXTURE(blocked) {
	struct env env;
	int outer;
	struct waiter w;
	pthread_t thread;
};

FIXTURE_VARIANT(blocked) {
	enum blocked_in in;
};

FIXTURE_VARIANT_ADD(blocked, in_epoll_wait) {
	.in = IN_EPOLL_WAIT,
};

FIXTURE_VARIANT_ADD(blocked, in_poll_of_the_epoll_fd) {
	.in = IN_POLL,
};

FIXTURE_VARIANT_ADD(blocked, in_epoll_wait_of_an_instance_watching_it) {
	.in = IN_OUTER_EPOLL_WAIT,
};

FIXTURE_SETUP(blocked)
{
	self->outer = -1;
	env_setup(_metadata, &self->env);
	self->w.in = variant->in;
	self->w.fd = self->env.epfd;
	if (variant->in != IN_OUTER_EPOLL_WAIT)
		return;
	self->outer = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->outer);
	ASSERT_EQ(0, ctl(self->outer, EPOLL_CTL_ADD, self->env.epfd, EPOLLIN,
			 OUTER_TAG));
	self->w.fd = self->outer;
}

FIXTURE_TEARDOWN(blocked)
{
	if (self->outer >= 0)
		close(self->outer);
	env_teardown(_metadata, &self->env);
}

TEST_F(blocked, woken_by_an_eventfd_write)
{
	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_ADD, self->env.efd,
			 EPOLLIN | EPOLLWAKEUP, 1));
	start_waiter(_metadata, &self->w, &self->thread);
	make_ready(_metadata, self->env.efd);
	expect_woken(_metadata, &self->w, self->thread, 1);
}

TEST_F(blocked, woken_by_a_pipe_write)
{
	int p[2];

	ASSERT_EQ(0, pipe2(p, O_NONBLOCK | O_CLOEXEC));
	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_ADD, p[0],
			 EPOLLIN | EPOLLWAKEUP, 2));
	start_waiter(_metadata, &self->w, &self->thread);
	ASSERT_EQ(1, write(p[1], "x", 1));
	expect_woken(_metadata, &self->w, self->thread, 2);
	close(p[0]);
	close(p[1]);
}

TEST_F(blocked, woken_by_add_of_a_ready_file)
{
	make_ready(_metadata, self->env.efd);
	start_waiter(_metadata, &self->w, &self->thread);
	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_ADD, self->env.efd,
			 EPOLLIN | EPOLLWAKEUP, 3));
	expect_woken(_metadata, &self->w, self->thread, 3);
}

TEST_F(blocked, woken_by_mod_arming_a_ready_oneshot_item)
{
	const uint32_t events = EPOLLIN | EPOLLONESHOT | EPOLLWAKEUP;
	struct epoll_event ev;

	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_ADD, self->env.efd, events, 4));
	make_ready(_metadata, self->env.efd);
	/* Reported, so disarmed; the eventfd stays readable. */
	ASSERT_EQ(1, epoll_wait(self->env.epfd, &ev, 1, 0));
	start_waiter(_metadata, &self->w, &self->thread);
	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_MOD, self->env.efd, events, 5));
	expect_woken(_metadata, &self->w, self->thread, 5);
}

/*
 * epoll(7): of several threads blocked in epoll_wait() on one instance,
 * "just one" is woken for an edge-triggered item; a level-triggered item
 * stays ready when reported, so a thread still blocked then finds it too.
 */
TEST_F(ep, level_triggered_event_reaches_every_blocked_waiter)
{
	struct waiter w[2] = {};
	pthread_t thread[2];
	int i;

	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_ADD, self->env.efd, EPOLLIN, 6));
	for (i = 0; i < 2; i++) {
		w[i].in = IN_EPOLL_WAIT;
		w[i].fd = self->env.epfd;
		start_waiter(_metadata, &w[i], &thread[i]);
	}
	make_ready(_metadata, self->env.efd);
	for (i = 0; i < 2; i++)
		expect_woken(_metadata, &w[i], thread[i], 6);
}

/*
 * epoll_wait(2): it returns "the number of file descriptors ready", at
 * most maxevents, an entry each in the buffer; a file that had several
 * events since the last call is one of them.
 */
TEST_F(ep, ready_files_are_reported_once_each_up_to_maxevents)
{
	struct epoll_event ev[3];
	int other;

	other = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_ADD, self->env.efd, EPOLLIN, 1));
	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_ADD, other, EPOLLIN, 2));
	make_ready(_metadata, self->env.efd);
	make_ready(_metadata, other);
	make_ready(_metadata, self->env.efd);
	make_ready(_metadata, other);

	memset(ev, 0, sizeof(ev));
	ASSERT_EQ(1, epoll_wait(self->env.epfd, ev, 1, 0));
	EXPECT_EQ(0, ev[1].data.u64) TH_LOG("an entry past maxevents was written");

	memset(ev, 0, sizeof(ev));
	ASSERT_EQ(2, epoll_wait(self->env.epfd, ev, 3, 0));
	EXPECT_EQ(3, ev[0].data.u64 + ev[1].data.u64);
	EXPECT_NE(ev[0].data.u64, ev[1].data.u64);
	EXPECT_EQ(0, ev[2].data.u64);
	close(other);
}

/*
 * epoll_ctl(2): EPOLL_CTL_DEL removes the file from the interest list,
 * so an event it had waiting is reported no more.
 */
TEST_F(ep, del_of_a_ready_file_leaves_nothing_to_report)
{
	struct pollfd pfd = { .fd = self->env.epfd, .events = POLLIN };
	struct epoll_event ev;

	make_ready(_metadata, self->env.efd);
	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_ADD, self->env.efd, EPOLLIN, 1));
	ASSERT_EQ(0, epoll_ctl(self->env.epfd, EPOLL_CTL_DEL, self->env.efd, NULL));
	EXPECT_EQ(0, epoll_wait(self->env.epfd, &ev, 1, 0));
	EXPECT_EQ(0, poll(&pfd, 1, 0));
}

/*
 * epoll(7), Q3: an epoll fd is readable while it has events waiting, and
 * only then.
 */
TEST_F(ep, epoll_fd_is_readable_only_while_an_event_waits)
{
	struct pollfd pfd = { .fd = self->env.epfd, .events = POLLIN };

	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_ADD, self->env.efd, EPOLLIN, 1));
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	make_ready(_metadata, self->env.efd);
	ASSERT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_EQ(POLLIN, pfd.revents & POLLIN);
	drain(_metadata, self->env.efd);
	EXPECT_EQ(0, poll(&pfd, 1, 0)) TH_LOG("readable with no event waiting");
}

/*
 * epoll_wait(2), EFAULT: "The memory area pointed to by events is not
 * accessible with write permissions"; epoll.rst: the events stay pending.
 */
TEST_F(ep, epoll_wait_fails_with_efault_for_a_buffer_it_cannot_write)
{
	struct epoll_event ev[2] = {}, *none;
	int other;

	other = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, other);
	none = mmap(NULL, getpagesize(), PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(none != MAP_FAILED);
	make_ready(_metadata, self->env.efd);
	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_ADD, self->env.efd, EPOLLIN, 1));
	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_ADD, other, EPOLLIN, 2));

	EXPECT_EQ(-1, epoll_wait(self->env.epfd, (void *)-4096L, 2, 0));
	EXPECT_EQ(EFAULT, errno) TH_LOG("a buffer outside user space");
	EXPECT_EQ(-1, epoll_wait(self->env.epfd, none, 2, 0));
	EXPECT_EQ(EFAULT, errno) TH_LOG("an inaccessible buffer");
	ASSERT_EQ(2, epoll_wait(self->env.epfd, ev, 2, 0));
	EXPECT_EQ(3, ev[0].data.u64 + ev[1].data.u64);
	munmap(none, getpagesize());
	close(other);
}

/*
 * epoll.rst: the capability counts only in the initial user namespace; the
 * root of a new user namespace has EPOLLWAKEUP ignored like any caller
 * without it.
 */
TEST_F(ep, root_of_a_new_user_namespace_has_epollwakeup_ignored)
{
	const char *why;

	if (!become_userns_root(_metadata, &why))
		SKIP(return, "%s", why);
	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_ADD, self->env.efd,
			 ADD_MASK | EPOLLWAKEUP, 1));
	EXPECT_EQ(ADD_MASK | ALWAYS_POLLED,
		  stored_events(_metadata, self->env.epfd, self->env.efd));
	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_MOD, self->env.efd,
			 MOD_MASK | EPOLLWAKEUP, 2));
	EXPECT_EQ(MOD_MASK | ALWAYS_POLLED,
		  stored_events(_metadata, self->env.epfd, self->env.efd));
}

/*
 * epoll_ctl(2), EPOLLWAKEUP: the system does not suspend while the event
 * is pending, if the item has the flag and its caller had the capability.
 * The event itself is reported all the same. epoll.rst: an event the item
 * does not watch is not pending, from a file that names its events (an
 * eventfd does).
 */
enum caller { CALLER_WITH_CAP, CALLER_NO_CAP, CALLER_USERNS_ROOT };

FIXTURE(hold) {
	struct env env;
};

FIXTURE_VARIANT(hold) {
	uint32_t events;	/* of the ADD */
	enum caller caller;	/* who adds the item */
	bool ready_at_add;	/* the file is ready before the ADD */
	bool holds;		/* the pending event holds off suspend */
};

FIXTURE_VARIANT_ADD(hold, epollwakeup) {
	.events = EPOLLIN | EPOLLWAKEUP,
	.caller = CALLER_WITH_CAP,
	.holds = true,
};

FIXTURE_VARIANT_ADD(hold, epollwakeup_on_a_ready_file) {
	.events = EPOLLIN | EPOLLWAKEUP,
	.caller = CALLER_WITH_CAP,
	.ready_at_add = true,
	.holds = true,
};

FIXTURE_VARIANT_ADD(hold, epollwakeup_for_an_event_not_watched) {
	.events = EPOLLPRI | EPOLLWAKEUP,
	.caller = CALLER_WITH_CAP,
	.holds = false,
};

FIXTURE_VARIANT_ADD(hold, no_epollwakeup) {
	.events = EPOLLIN,
	.caller = CALLER_WITH_CAP,
	.holds = false,
};

FIXTURE_VARIANT_ADD(hold, epollwakeup_without_cap_block_suspend) {
	.events = EPOLLIN | EPOLLWAKEUP,
	.caller = CALLER_NO_CAP,
	.holds = false,
};

FIXTURE_VARIANT_ADD(hold, epollwakeup_from_a_user_namespace) {
	.events = EPOLLIN | EPOLLWAKEUP,
	.caller = CALLER_USERNS_ROOT,
	.holds = false,
};

FIXTURE_SETUP(hold)
{
	const char *why = no_hold_to_see();

	if (why)
		SKIP(return, "%s", why);
	if (variant->caller == CALLER_WITH_CAP && !has_cap_block_suspend())
		SKIP(return, NEEDS_CAP_BLOCK_SUSPEND);
	env_setup(_metadata, &self->env);
}

FIXTURE_TEARDOWN(hold)
{
	env_teardown(_metadata, &self->env);
}

TEST_F(hold, pending_event_holds_off_suspend)
{
	struct epoll_event ev;
	const char *why;

	if (variant->caller == CALLER_NO_CAP)
		drop_cap(_metadata, self->env.saved_caps, CAP_BLOCK_SUSPEND);
	if (variant->caller == CALLER_USERNS_ROOT &&
	    !become_userns_root(_metadata, &why))
		SKIP(return, "%s", why);

	if (variant->ready_at_add)
		make_ready(_metadata, self->env.efd);
	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_ADD, self->env.efd,
			 variant->events | EPOLLET, 3));
	if (!variant->ready_at_add) {
		expect_not_held_up(_metadata);
		make_ready(_metadata, self->env.efd);
	}
	if (variant->holds)
		expect_held_up(_metadata);
	else
		expect_not_held_up(_metadata);

	if (!(variant->events & EPOLLIN)) {
		EXPECT_EQ(0, epoll_wait(self->env.epfd, &ev, 1, 0));
		return;
	}
	ASSERT_EQ(1, epoll_wait(self->env.epfd, &ev, 1, 0));
	EXPECT_EQ(EPOLLIN, ev.events);
	EXPECT_EQ(3, ev.data.u64);
	expect_not_held_up(_metadata);
}

/*
 * epoll.rst: a file that wakes its waiters without saying which events it
 * has, as a signalfd does, makes an item pending whatever it watches,
 * until the next epoll_wait() has polled the file; that call reports
 * nothing the item does not watch, and ends the hold.
 */
TEST_F(ep, event_not_watched_of_a_file_not_naming_it_holds_until_epoll_wait)
{
	const char *why = no_hold_to_see();
	struct epoll_event ev;
	sigset_t mask;
	int sfd;

	if (why)
		SKIP(return, "%s", why);
	if (!has_cap_block_suspend())
		SKIP(return, NEEDS_CAP_BLOCK_SUSPEND);
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	ASSERT_EQ(0, sigprocmask(SIG_BLOCK, &mask, NULL));
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_ADD, sfd,
			 EPOLLPRI | EPOLLWAKEUP, 1));
	expect_not_held_up(_metadata);

	ASSERT_EQ(0, kill(getpid(), SIGUSR1));
	expect_held_up(_metadata);
	EXPECT_EQ(0, epoll_wait(self->env.epfd, &ev, 1, 0));
	expect_not_held_up(_metadata);
	close(sfd);
}

/*
 * epoll_ctl(2), EPOLLWAKEUP: an EPOLL_CTL_MOD that adds the flag makes the
 * item's event hold off suspend while it is pending, an event pending at
 * the MOD included, and not while none is.
 */
FIXTURE(mod_hold) {
	struct env env;
};

FIXTURE_VARIANT(mod_hold) {
	bool pending;		/* an event is pending at the MOD */
};

FIXTURE_VARIANT_ADD(mod_hold, event_pending) {
	.pending = true,
};

FIXTURE_VARIANT_ADD(mod_hold, no_event_pending) {
	.pending = false,
};

FIXTURE_SETUP(mod_hold)
{
	const char *why = no_hold_to_see();

	if (why)
		SKIP(return, "%s", why);
	if (!has_cap_block_suspend())
		SKIP(return, NEEDS_CAP_BLOCK_SUSPEND);
	env_setup(_metadata, &self->env);
}

FIXTURE_TEARDOWN(mod_hold)
{
	env_teardown(_metadata, &self->env);
}

TEST_F(mod_hold, mod_adding_epollwakeup_holds_a_pending_event)
{
	struct epoll_event ev;

	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_ADD, self->env.efd, EPOLLIN, 1));
	if (variant->pending) {
		make_ready(_metadata, self->env.efd);
		expect_not_held_up(_metadata);
	}
	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_MOD, self->env.efd,
			 EPOLLIN | EPOLLWAKEUP, 2));
	if (variant->pending) {
		expect_held_up(_metadata);
	} else {
		expect_not_held_up(_metadata);
		make_ready(_metadata, self->env.efd);
		expect_held_up(_metadata);
	}
	ASSERT_EQ(1, epoll_wait(self->env.epfd, &ev, 1, 0));
	EXPECT_EQ(2, ev.data.u64);
	drain(_metadata, self->env.efd);
	ASSERT_EQ(0, epoll_wait(self->env.epfd, &ev, 1, 0));
	expect_not_held_up(_metadata);
}

/*
 * epoll_ctl(2), EPOLLWAKEUP: processing ends with "the closure of that
 * file descriptor, the removal of the event file descriptor with
 * EPOLL_CTL_DEL, or the clearing of EPOLLWAKEUP for the event file
 * descriptor with EPOLL_CTL_MOD" (by a MOD with the flag but without the
 * capability too, BUGS), or the next epoll_wait() that finds the event
 * gone; epoll(7), Q6: closing every fd of the target removes its item.
 */
enum release {
	RELEASE_BY_CLOSE_EPFD,
	RELEASE_BY_CLOSE_TARGET,
	RELEASE_BY_DEL,
	RELEASE_BY_MOD,
	RELEASE_BY_MOD_WITHOUT_CAP,
	RELEASE_BY_EPOLL_WAIT,
};

FIXTURE_VARIANT(hold_release) {
	enum release how;
};

FIXTURE(hold_release) {
	struct env env;
};

FIXTURE_VARIANT_ADD(hold_release, close_of_the_epoll_fd) {
	.how = RELEASE_BY_CLOSE_EPFD,
};

FIXTURE_VARIANT_ADD(hold_release, close_of_the_target) {
	.how = RELEASE_BY_CLOSE_TARGET,
};

FIXTURE_VARIANT_ADD(hold_release, del) {
	.how = RELEASE_BY_DEL,
};

FIXTURE_VARIANT_ADD(hold_release, mod_without_epollwakeup) {
	.how = RELEASE_BY_MOD,
};

FIXTURE_VARIANT_ADD(hold_release, mod_without_cap_block_suspend) {
	.how = RELEASE_BY_MOD_WITHOUT_CAP,
};

FIXTURE_VARIANT_ADD(hold_release, epoll_wait_after_the_event_is_gone) {
	.how = RELEASE_BY_EPOLL_WAIT,
};

FIXTURE_SETUP(hold_release)
{
	const char *why = no_hold_to_see();

	if (why)
		SKIP(return, "%s", why);
	if (!has_cap_block_suspend())
		SKIP(return, NEEDS_CAP_BLOCK_SUSPEND);
	env_setup(_metadata, &self->env);
}

FIXTURE_TEARDOWN(hold_release)
{
	env_teardown(_metadata, &self->env);
}

TEST_F(hold_release, ending_the_processing_allows_suspend)
{
	struct epoll_event ev;

	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_ADD, self->env.efd,
			 EPOLLIN | EPOLLWAKEUP, 5));
	make_ready(_metadata, self->env.efd);
	expect_held_up(_metadata);

	switch (variant->how) {
	case RELEASE_BY_CLOSE_EPFD:
		ASSERT_EQ(0, close(self->env.epfd));
		self->env.epfd = -1;
		break;
	case RELEASE_BY_CLOSE_TARGET:
		ASSERT_EQ(0, close(self->env.efd));
		self->env.efd = -1;
		break;
	case RELEASE_BY_DEL:
		ASSERT_EQ(0, epoll_ctl(self->env.epfd, EPOLL_CTL_DEL, self->env.efd,
				       NULL));
		break;
	case RELEASE_BY_MOD:
		ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_MOD, self->env.efd,
				 EPOLLIN, 6));
		break;
	case RELEASE_BY_MOD_WITHOUT_CAP:
		drop_cap(_metadata, self->env.saved_caps, CAP_BLOCK_SUSPEND);
		ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_MOD, self->env.efd,
				 EPOLLIN | EPOLLWAKEUP, 6));
		break;
	case RELEASE_BY_EPOLL_WAIT:
		ASSERT_EQ(1, epoll_wait(self->env.epfd, &ev, 1, 0));
		drain(_metadata, self->env.efd);
		ASSERT_EQ(0, epoll_wait(self->env.epfd, &ev, 1, 0));
		break;
	}
	expect_not_held_up(_metadata);
}

/*
 * Who consumes the events: epoll_wait(), or IORING_OP_EPOLL_WAIT, which
 * epoll.rst says counts as a call of epoll_wait() for EPOLLWAKEUP.
 */
enum consumer { BY_EPOLL_WAIT, BY_IORING_OP_EPOLL_WAIT };

FIXTURE(delivery) {
	int epfd;
	int efd;
	struct io_uring ring;
	bool has_ring;
};

FIXTURE_VARIANT(delivery) {
	uint32_t mode;		/* 0 (level-triggered), EPOLLET, EPOLLONESHOT */
	enum consumer consumer;
};

FIXTURE_VARIANT_ADD(delivery, level_triggered) {
	.mode = 0,
	.consumer = BY_EPOLL_WAIT,
};

FIXTURE_VARIANT_ADD(delivery, edge_triggered) {
	.mode = EPOLLET,
	.consumer = BY_EPOLL_WAIT,
};

FIXTURE_VARIANT_ADD(delivery, oneshot) {
	.mode = EPOLLONESHOT,
	.consumer = BY_EPOLL_WAIT,
};

FIXTURE_VARIANT_ADD(delivery, level_triggered_io_uring) {
	.mode = 0,
	.consumer = BY_IORING_OP_EPOLL_WAIT,
};

FIXTURE_VARIANT_ADD(delivery, edge_triggered_io_uring) {
	.mode = EPOLLET,
	.consumer = BY_IORING_OP_EPOLL_WAIT,
};

FIXTURE_VARIANT_ADD(delivery, oneshot_io_uring) {
	.mode = EPOLLONESHOT,
	.consumer = BY_IORING_OP_EPOLL_WAIT,
};

FIXTURE_SETUP(delivery)
{
	const char *why = no_hold_to_see();

	if (why)
		SKIP(return, "%s", why);
	if (!has_cap_block_suspend())
		SKIP(return, NEEDS_CAP_BLOCK_SUSPEND);
	if (variant->consumer == BY_IORING_OP_EPOLL_WAIT) {
		if (!uring_init(&self->ring, &why))
			SKIP(return, "no io_uring here: %s", why);
		self->has_ring = true;
	}
	self->epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->epfd);
	self->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, self->efd);
}

FIXTURE_TEARDOWN(delivery)
{
	close(self->efd);
	close(self->epfd);
	if (self->has_ring)
		io_uring_queue_exit(&self->ring);
}

/* Consume up to one event of @epfd into @ev: the number, or -errno. */
static int consume(struct __test_metadata *_metadata, enum consumer consumer,
		   int epfd, struct io_uring *ring, struct epoll_event *ev)
{
	int res = 0;

	if (consumer == BY_EPOLL_WAIT) {
		res = epoll_wait(epfd, ev, 1, 0);
		return res < 0 ? -errno : res;
	}
	EXPECT_EQ(0, uring_epoll_wait(ring, epfd, ev, 1));
	EXPECT_EQ(0, uring_run(ring, &res));
	return res;
}

/*
 * epoll_ctl(2), EPOLLWAKEUP: a level-triggered event keeps suspend held
 * off after it is reported, "until the next call to epoll_wait(2)";
 * epoll.rst: an edge-triggered or one-shot event lets it go as the event
 * is reported.
 */
TEST_F(delivery, reporting_the_event_ends_or_keeps_the_hold)
{
	struct epoll_event ev = {};

	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
			 EPOLLIN | EPOLLWAKEUP | variant->mode, 42));
	make_ready(_metadata, self->efd);
	expect_held_up(_metadata);

	ASSERT_EQ(1, consume(_metadata, variant->consumer, self->epfd, &self->ring, &ev));
	EXPECT_EQ(EPOLLIN, ev.events);
	EXPECT_EQ(42, ev.data.u64);
	if (variant->mode) {
		expect_not_held_up(_metadata);
		return;
	}
	expect_held_up(_metadata);
	drain(_metadata, self->efd);
	expect_held_up(_metadata);
	if (variant->consumer == BY_EPOLL_WAIT) {
		ASSERT_EQ(0, epoll_wait(self->epfd, &ev, 1, 0));
	} else {
		/* Nothing to report: the request stays pending. */
		ASSERT_EQ(0, uring_epoll_wait(&self->ring, self->epfd, &ev, 1));
		ASSERT_LE(0, io_uring_submit(&self->ring));
	}
	expect_not_held_up(_metadata);
}

/*
 * epoll.rst: an event that cannot be copied to the caller's buffer
 * (EFAULT) stays pending, and holds off suspend, until it is reported.
 */
TEST_F(delivery, event_whose_copy_faults_stays_pending)
{
	struct epoll_event ev = {}, *none;
	int res = 0;

	none = mmap(NULL, getpagesize(), PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(none != MAP_FAILED);
	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
			 EPOLLIN | EPOLLWAKEUP | variant->mode, 42));
	make_ready(_metadata, self->efd);

	if (variant->consumer == BY_EPOLL_WAIT) {
		EXPECT_EQ(-1, epoll_wait(self->epfd, none, 1, 0));
		EXPECT_EQ(EFAULT, errno);
	} else {
		ASSERT_EQ(0, uring_epoll_wait(&self->ring, self->epfd, none, 1));
		ASSERT_EQ(0, uring_run(&self->ring, &res));
		EXPECT_EQ(-EFAULT, res);
	}
	expect_held_up(_metadata);

	ASSERT_EQ(1, consume(_metadata, variant->consumer, self->epfd, &self->ring, &ev));
	EXPECT_EQ(42, ev.data.u64);
	munmap(none, getpagesize());
}

/*
 * epoll.rst: the hold of an edge-triggered or one-shot item lasts while
 * its event is copied out and ends when it is reported, also when the
 * file becomes ready again while the report is being made; for an
 * edge-triggered item that is a new event, which holds off suspend until
 * a later call reports it, while a one-shot item reports nothing more.
 * The report is held up with userfaultfd: the caller's buffer is a
 * missing page, and epoll_wait() waits in the copy of the event until the
 * file has been made ready again.
 */
FIXTURE(report_window) {
	int epfd;
	int efd;
	int uffd;
	struct epoll_event *buf;
};

FIXTURE_VARIANT(report_window) {
	uint32_t mode;		/* 0 (level-triggered), EPOLLET, EPOLLONESHOT */
};

FIXTURE_VARIANT_ADD(report_window, level_triggered) {
	.mode = 0,
};

FIXTURE_VARIANT_ADD(report_window, edge_triggered) {
	.mode = EPOLLET,
};

FIXTURE_VARIANT_ADD(report_window, oneshot) {
	.mode = EPOLLONESHOT,
};

FIXTURE_SETUP(report_window)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	const char *why = no_hold_to_see();

	self->uffd = -1;
	self->buf = MAP_FAILED;
	if (why)
		SKIP(return, "%s", why);
	if (!has_cap_block_suspend())
		SKIP(return, NEEDS_CAP_BLOCK_SUSPEND);
	self->uffd = syscall(__NR_userfaultfd, O_CLOEXEC);
	if (self->uffd < 0)
		SKIP(return,
		     "no userfaultfd for faults in the kernel (CONFIG_USERFAULTFD, CAP_SYS_PTRACE): %s",
		     strerror(errno));
	ASSERT_EQ(0, ioctl(self->uffd, UFFDIO_API, &api));
	self->buf = mmap(NULL, getpagesize(), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(self->buf != MAP_FAILED);
	reg.range.start = (uintptr_t)self->buf;
	reg.range.len = getpagesize();
	ASSERT_EQ(0, ioctl(self->uffd, UFFDIO_REGISTER, &reg));
	self->epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->epfd);
	self->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, self->efd);
}

FIXTURE_TEARDOWN(report_window)
{
	if (self->uffd < 0)
		return;
	close(self->efd);
	close(self->epfd);
	close(self->uffd);
	if (self->buf != MAP_FAILED)
		munmap(self->buf, getpagesize());
}

struct report {
	int epfd;
	struct epoll_event *buf;
	int res;
};

static void *report(void *arg)
{
	struct report *r = arg;

	r->res = epoll_wait(r->epfd, r->buf, 1, -1);
	return NULL;
}

/* Wait until the report faults on the missing page. */
static void wait_fault(struct __test_metadata *_metadata, int uffd)
{
	struct pollfd pfd = { .fd = uffd, .events = POLLIN };
	struct uffd_msg msg;

	ASSERT_EQ(1, poll(&pfd, 1, COMPLETES_MS));
	ASSERT_EQ(sizeof(msg), read(uffd, &msg, sizeof(msg)));
	ASSERT_EQ(UFFD_EVENT_PAGEFAULT, msg.event);
}

/* Fill the missing page @buf: the report goes on. */
static void fill_page(struct __test_metadata *_metadata, int uffd, void *buf)
{
	struct uffdio_copy copy = {};
	void *zeros = calloc(1, getpagesize());

	ASSERT_NE(0, (uintptr_t)zeros);
	copy.dst = (uintptr_t)buf;
	copy.src = (uintptr_t)zeros;
	copy.len = getpagesize();
	EXPECT_EQ(0, ioctl(uffd, UFFDIO_COPY, &copy));
	free(zeros);
}

TEST_F(report_window, readiness_during_the_report)
{
	struct report r = { .epfd = self->epfd, .buf = self->buf };
	struct epoll_event ev = {};
	pthread_t thread;

	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
			 EPOLLIN | EPOLLWAKEUP | variant->mode, 42));
	make_ready(_metadata, self->efd);
	ASSERT_EQ(0, pthread_create(&thread, NULL, report, &r));
	wait_fault(_metadata, self->uffd);
	expect_held_up(_metadata);
	make_ready(_metadata, self->efd);
	fill_page(_metadata, self->uffd, self->buf);
	ASSERT_EQ(0, pthread_join(thread, NULL));
	ASSERT_EQ(1, r.res);
	EXPECT_EQ(EPOLLIN, self->buf[0].events);
	EXPECT_EQ(42, self->buf[0].data.u64);

	if (variant->mode == EPOLLONESHOT) {
		expect_not_held_up(_metadata);
		EXPECT_EQ(0, epoll_wait(self->epfd, &ev, 1, 0));
		return;
	}
	expect_held_up(_metadata);
	ASSERT_EQ(1, epoll_wait(self->epfd, &ev, 1, 0));
	EXPECT_EQ(EPOLLIN, ev.events);
	EXPECT_EQ(42, ev.data.u64);
}

/*
 * IORING_OP_EPOLL_CTL is epoll_ctl() (io_uring_enter(2)): EPOLLWAKEUP is
 * kept or ignored by the same rule, with the credentials the request runs
 * with: the submitter's, inline or from io-wq (IOSQE_ASYNC), or those of
 * a personality registered with IORING_REGISTER_PERSONALITY
 * (io_uring_register(2)).
 */
FIXTURE(uring_ctl) {
	int epfd;
	int efd;
	uint64_t saved_caps;
	struct io_uring ring;
	bool has_ring;
};

FIXTURE_VARIANT(uring_ctl) {
	bool async;		/* IOSQE_ASYNC: issued from io-wq */
	bool personality;	/* with a registered personality */
	bool personality_cap;	/* which had CAP_BLOCK_SUSPEND */
	bool submitter_cap;	/* the submitter has CAP_BLOCK_SUSPEND */
};

FIXTURE_VARIANT_ADD(uring_ctl, inline_with_cap) {
	.submitter_cap = true,
};

FIXTURE_VARIANT_ADD(uring_ctl, inline_without_cap) {
	.submitter_cap = false,
};

FIXTURE_VARIANT_ADD(uring_ctl, io_wq_with_cap) {
	.async = true,
	.submitter_cap = true,
};

FIXTURE_VARIANT_ADD(uring_ctl, io_wq_without_cap) {
	.async = true,
	.submitter_cap = false,
};

FIXTURE_VARIANT_ADD(uring_ctl, personality_with_cap) {
	.personality = true,
	.personality_cap = true,
	.submitter_cap = false,
};

FIXTURE_VARIANT_ADD(uring_ctl, personality_without_cap) {
	.personality = true,
	.personality_cap = false,
	.submitter_cap = true,
};

FIXTURE_VARIANT_ADD(uring_ctl, io_wq_personality_with_cap) {
	.async = true,
	.personality = true,
	.personality_cap = true,
	.submitter_cap = false,
};

FIXTURE_SETUP(uring_ctl)
{
	const char *why;

	ASSERT_EQ(0, cap_get_effective(&self->saved_caps));
	if ((variant->submitter_cap || variant->personality) &&
	    !has_cap_block_suspend())
		SKIP(return, NEEDS_CAP_BLOCK_SUSPEND);
	if (!uring_init(&self->ring, &why))
		SKIP(return, "no io_uring here: %s", why);
	self->has_ring = true;
	self->epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->epfd);
	self->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, self->efd);
}

FIXTURE_TEARDOWN(uring_ctl)
{
	EXPECT_EQ(0, cap_set_effective(self->saved_caps));
	close(self->efd);
	close(self->epfd);
	if (self->has_ring)
		io_uring_queue_exit(&self->ring);
}

/* IORING_OP_EPOLL_CTL @op of @fd in @epfd, which must succeed. */
static void uring_ctl_run(struct __test_metadata *_metadata,
			  struct io_uring *ring, int epfd, int op, int fd,
			  uint32_t events, uint8_t flags, int personality)
{
	struct epoll_event ev = { .events = events, .data.u64 = op };
	int res = 0;

	ASSERT_EQ(0, uring_epoll_ctl(ring, epfd, op, fd, &ev, flags,
				     personality));
	ASSERT_EQ(0, uring_run(ring, &res));
	ASSERT_EQ(0, res);
}

TEST_F(uring_ctl, epollwakeup_follows_the_request_credentials)
{
	uint32_t with_cap = wakeup_count_supported() ? EPOLLWAKEUP : 0;
	bool cap = variant->personality ? variant->personality_cap :
		variant->submitter_cap;
	uint32_t kept = cap ? with_cap : 0;
	uint8_t flags = variant->async ? IOSQE_ASYNC : 0;
	int id = 0;

	if (variant->personality) {
		if (!variant->personality_cap)
			drop_cap(_metadata, self->saved_caps, CAP_BLOCK_SUSPEND);
		id = syscall(__NR_io_uring_register, self->ring.ring_fd,
			     IORING_REGISTER_PERSONALITY, NULL, 0);
		ASSERT_LT(0, id);
		ASSERT_EQ(0, cap_set_effective(self->saved_caps));
	}
	if (!variant->submitter_cap)
		drop_cap(_metadata, self->saved_caps, CAP_BLOCK_SUSPEND);

	uring_ctl_run(_metadata, &self->ring, self->epfd, EPOLL_CTL_ADD,
		      self->efd, ADD_MASK | EPOLLWAKEUP, flags, id);
	EXPECT_EQ(ADD_MASK | ALWAYS_POLLED | kept,
		  stored_events(_metadata, self->epfd, self->efd));
	uring_ctl_run(_metadata, &self->ring, self->epfd, EPOLL_CTL_MOD,
		      self->efd, MOD_MASK, flags, id);
	EXPECT_EQ(MOD_MASK | ALWAYS_POLLED,
		  stored_events(_metadata, self->epfd, self->efd));
	uring_ctl_run(_metadata, &self->ring, self->epfd, EPOLL_CTL_MOD,
		      self->efd, MOD_MASK | EPOLLWAKEUP, flags, id);
	EXPECT_EQ(MOD_MASK | ALWAYS_POLLED | kept,
		  stored_events(_metadata, self->epfd, self->efd));
}

/* A ring, and an epoll fd watching an eventfd (EPOLLIN, data 7). */
FIXTURE(uring) {
	int epfd;
	int efd;
	struct io_uring ring;
	bool has_ring;
};

FIXTURE_SETUP(uring)
{
	const char *why;

	if (!uring_init(&self->ring, &why))
		SKIP(return, "no io_uring here: %s", why);
	self->has_ring = true;
	self->epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->epfd);
	self->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, self->efd);
	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd, EPOLLIN, 7));
}

FIXTURE_TEARDOWN(uring)
{
	close(self->efd);
	close(self->epfd);
	if (self->has_ring)
		io_uring_queue_exit(&self->ring);
}

/*
 * IORING_OP_EPOLL_WAIT (io_uring_enter(2)) takes the epoll fd in fd, the
 * buffer in addr and maxevents in len, and fails as epoll_wait(2) does:
 * EINVAL when maxevents is not positive or fd is not an epoll fd; fields
 * it does not use must be zero. With nothing to report, the request
 * stays pending until an event is ready.
 */
TEST_F(uring, epoll_wait_bad_arguments_fail_with_einval)
{
	struct epoll_event ev;
	int res = 0;

	make_ready(_metadata, self->efd);

	ASSERT_EQ(0, uring_epoll_wait(&self->ring, self->epfd, &ev, 0));
	ASSERT_EQ(0, uring_run(&self->ring, &res));
	EXPECT_EQ(-EINVAL, res) TH_LOG("maxevents 0");

	ASSERT_EQ(0, uring_epoll_wait(&self->ring, self->efd, &ev, 1));
	ASSERT_EQ(0, uring_run(&self->ring, &res));
	EXPECT_EQ(-EINVAL, res) TH_LOG("not an epoll fd");

	ASSERT_EQ(0, uring_epoll_wait(&self->ring, self->epfd, &ev, 1));
	uring_last_sqe(&self->ring)->off = 1;
	ASSERT_EQ(0, uring_run(&self->ring, &res));
	EXPECT_EQ(-EINVAL, res) TH_LOG("off set");

	ASSERT_EQ(0, uring_epoll_wait(&self->ring, self->epfd, &ev, 1));
	uring_last_sqe(&self->ring)->buf_index = 1;
	ASSERT_EQ(0, uring_run(&self->ring, &res));
	EXPECT_EQ(-EINVAL, res) TH_LOG("buf_index set");

	/* The event is still there. */
	ASSERT_EQ(1, epoll_wait(self->epfd, &ev, 1, 0));
	EXPECT_EQ(7, ev.data.u64);
}

TEST_F(uring, epoll_wait_waits_for_an_event)
{
	struct epoll_event ev = {};
	int res = 0;

	ASSERT_EQ(0, uring_epoll_wait(&self->ring, self->epfd, &ev, 1));
	ASSERT_EQ(1, io_uring_submit(&self->ring));
	ASSERT_EQ(0, uring_reap(&self->ring, 200, &res))
		TH_LOG("completed with nothing to report: %d", res);

	make_ready(_metadata, self->efd);
	ASSERT_EQ(1, uring_reap(&self->ring, 10000, &res));
	EXPECT_EQ(1, res);
	EXPECT_EQ(EPOLLIN, ev.events);
	EXPECT_EQ(7, ev.data.u64);
}

/*
 * io_uring_enter(2): IORING_OP_EPOLL_CTL fails as epoll_ctl(2) does, and
 * epoll.rst adds EINVAL for a field of the SQE it does not use. A request
 * that fails cancels the rest of its IOSQE_IO_LINK chain with ECANCELED,
 * one that succeeds does not; the epoll requests are no exception.
 */
/* IORING_OP_EPOLL_CTL ADD of @fd in @epfd with @event: the result. */
static int uring_add(struct __test_metadata *_metadata, struct io_uring *ring,
		     int epfd, int fd, struct epoll_event *event)
{
	int res = 0;

	EXPECT_EQ(0, uring_epoll_ctl(ring, epfd, EPOLL_CTL_ADD, fd, event, 0, 0));
	EXPECT_EQ(0, uring_run(ring, &res));
	return res;
}

TEST_F(uring, epoll_ctl_fails_as_the_system_call_does)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLWAKEUP };
	int closed, other, res = 0;
	uint32_t events;
	void *unreadable;

	other = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, other);
	closed = dup(self->efd);	/* the last fd opened, so it stays free */
	ASSERT_LE(0, closed);
	close(closed);
	unreadable = mmap(NULL, getpagesize(), PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(unreadable != MAP_FAILED);

	/* No two requests in a row with one result: each is its own. */
	EXPECT_EQ(-EBADF, uring_add(_metadata, &self->ring, self->epfd, closed, &ev));
	EXPECT_EQ(-EEXIST, uring_add(_metadata, &self->ring, self->epfd,
				     self->efd, &ev));
	EXPECT_EQ(-EBADF, uring_add(_metadata, &self->ring, closed, other, &ev));
	EXPECT_EQ(-EFAULT, uring_add(_metadata, &self->ring, self->epfd, other,
				     unreadable));

	ASSERT_EQ(0, uring_epoll_ctl(&self->ring, self->epfd, EPOLL_CTL_ADD,
				     other, &ev, 0, 0));
	uring_last_sqe(&self->ring)->buf_index = 1;
	ASSERT_EQ(0, uring_run(&self->ring, &res));
	EXPECT_EQ(-EINVAL, res) TH_LOG("buf_index set");

	EXPECT_EQ(-ENOENT, fdinfo_events(self->epfd, other, &events))
		TH_LOG("a failed ADD added the item");
	munmap(unreadable, getpagesize());
	close(other);
}

/*
 * Submit what was prepared, its last request linked to a NOP, and take
 * both results within 10 s each: the request's in @res[0], the NOP's in
 * @res[1].
 */
static void uring_run_linked(struct __test_metadata *_metadata,
			     struct io_uring *ring, int res[2])
{
	struct io_uring_sqe *sqe = uring_last_sqe(ring);
	struct io_uring_cqe cqe;
	int i;

	sqe->flags |= IOSQE_IO_LINK;
	sqe->user_data = 0;
	sqe = uring_sqe(ring, IORING_OP_NOP, -1);
	ASSERT_NE(0, (uintptr_t)sqe);
	sqe->user_data = 1;
	ASSERT_EQ(2, io_uring_submit(ring));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(1, uring_reap_cqe(ring, 10000, &cqe));
		ASSERT_GT(2, cqe.user_data);
		res[cqe.user_data] = cqe.res;
	}
}

TEST_F(uring, failed_request_cancels_its_link)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 };
	int res[2];

	ASSERT_EQ(0, uring_epoll_ctl(&self->ring, self->epfd, EPOLL_CTL_ADD,
				     self->efd, &ev, 0, 0));
	uring_run_linked(_metadata, &self->ring, res);
	EXPECT_EQ(-EEXIST, res[0]);
	EXPECT_EQ(-ECANCELED, res[1]) TH_LOG("after a failed IORING_OP_EPOLL_CTL");

	ASSERT_EQ(0, uring_epoll_ctl(&self->ring, self->epfd, EPOLL_CTL_MOD,
				     self->efd, &ev, 0, 0));
	uring_run_linked(_metadata, &self->ring, res);
	EXPECT_EQ(0, res[0]);
	EXPECT_EQ(0, res[1]) TH_LOG("after a successful IORING_OP_EPOLL_CTL");

	make_ready(_metadata, self->efd);
	ASSERT_EQ(0, uring_epoll_wait(&self->ring, self->epfd, &ev, 0));
	uring_run_linked(_metadata, &self->ring, res);
	EXPECT_EQ(-EINVAL, res[0]);
	EXPECT_EQ(-ECANCELED, res[1]) TH_LOG("after a failed IORING_OP_EPOLL_WAIT");

	ASSERT_EQ(0, uring_epoll_wait(&self->ring, self->epfd, &ev, 1));
	uring_run_linked(_metadata, &self->ring, res);
	EXPECT_EQ(1, res[0]);
	EXPECT_EQ(0, res[1]) TH_LOG("after a successful IORING_OP_EPOLL_WAIT");
	EXPECT_EQ(7, ev.data.u64);
}

TEST_HARNESS_MAIN
