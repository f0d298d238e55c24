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
 * comes during a report, a faulting copy, files that do not name their
 * events, and IORING_OP_EPOLL_CTL and IORING_OP_EPOLL_WAIT as ways into
 * the same rules. What epoll does whatever EPOLLWAKEUP is (errors,
 * wakeups, maxevents) is for LTP's epoll tests, and what io_uring's epoll
 * requests do apart from EPOLLWAKEUP for liburing's tests.
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
 * epoll_ctl(2), EPOLLEXCLUSIVE: "EPOLLWAKEUP" is one of the flags it may
 * be combined with; the rule of the capability holds as for any item.
 */
TEST_F(ep, epollexclusive_takes_epollwakeup)
{
	uint32_t kept = has_cap_block_suspend() && wakeup_count_supported() ?
		EPOLLWAKEUP : 0;

	ASSERT_EQ(0, ctl(self->env.epfd, EPOLL_CTL_ADD, self->env.efd,
			 EPOLLEXCLUSIVE | EPOLLIN | EPOLLWAKEUP, 1));
	EXPECT_EQ(EPOLLEXCLUSIVE | EPOLLIN | ALWAYS_POLLED | kept,
		  stored_events(_metadata, self->env.epfd, self->env.efd));
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

TEST_HARNESS_MAIN
