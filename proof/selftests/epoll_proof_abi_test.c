// SPDX-License-Identifier: GPL-2.0
/*
 * The local proof layer of the EPOLLWAKEUP and epoll_ctl() ABI tests.
 *
 * Not for upstream: white-box checks of what user space can observe only
 * indirectly (/sys/class/wakeup, /proc/slabinfo, failslab, userfaultfd,
 * io_uring internals), tests written to kill mutants of fs/eventpoll.c, and
 * a last test that fails on any kernel report made while the program ran.
 * The documented ABI that epoll_wakeup_abi_test checks (the mask stored
 * with and without CAP_BLOCK_SUSPEND, CAP_WAKE_ALARM or in a user
 * namespace; which pending events hold off suspend; the release of that
 * hold by close, DEL, MOD and epoll_wait(); delivery and faulting copies
 * by epoll_wait()) is not repeated here.
 *
 * What is pinned here:
 * - bits that uapi does not define are accepted and ignored, and the
 *   EPOLLEXCLUSIVE combinations keep their errors;
 * - EPOLL_CTL_DEL never reads its event argument;
 * - which error wins when several arguments of epoll_ctl() are bad, and
 *   what an unknown op may answer;
 * - struct epoll_event has the same layout for 64-bit and 32-bit callers;
 * - every removal gives its watch back to fs.epoll.max_user_watches;
 * - the wakeup sources themselves: named after the target's dentry,
 *   created and destroyed by ADD, MOD and DEL, their statistics, the
 *   instance's own source, and their release by a poll(2) or a nested
 *   epoll scan of an item no longer ready;
 * - ENOMEM from every allocation of ADD and MOD (failslab) changes
 *   nothing;
 * - the waking of epoll_wait() and poll(2) waiters, exclusive wakeups,
 *   the wakeup path limit, events during a scan (the overflow list);
 * - IORING_OP_EPOLL_CTL in a link and with reserved fields set;
 * - what the release paths free (slab counts), a killed waiter, the cost
 *   of a MOD without a wakeup source;
 * - races held open by the kernel's race window: a MOD destroying a
 *   wakeup source that a poll callback is using, and the close of an
 *   instance racing the close of its target.
 */

#include <stddef.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "epoll_proof_helpers.h"

#ifndef EPOLLNVAL
#define EPOLLNVAL 0x00000020
#endif

/* Every event bit that include/uapi/linux/eventpoll.h defines. */
#define EPOLL_URING_WAKE_BIT 0x08000000
#define UAPI_EVENT_BITS (EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLERR |	\
			 EPOLLHUP | EPOLLNVAL | EPOLLRDNORM | EPOLLRDBAND | \
			 EPOLLWRNORM | EPOLLWRBAND | EPOLLMSG | EPOLLRDHUP | \
			 EPOLL_URING_WAKE_BIT | EPOLLEXCLUSIVE |	\
			 EPOLLWAKEUP | EPOLLONESHOT | EPOLLET)
#define UNDEFINED_EVENT_BITS (~(uint32_t)UAPI_EVENT_BITS)

/* epoll_ctl() always adds these to the mask it stores for ADD and MOD. */
#define ALWAYS_POLLED (EPOLLERR | EPOLLHUP)

/* How long a read of wakeup_count must stay blocked to count as held up. */
#define HELD_UP_MS 1000
/* How long a read of wakeup_count may take to complete (TCG is slow). */
#define COMPLETES_MS 10000
/* Sleep before reading active_time_ms, which counts whole milliseconds. */
#define ACTIVE_TIME_SETTLE_US 20000

static int ctl(int epfd, int op, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return epoll_ctl(epfd, op, fd, &ev);
}

/* The mask stored for @tfd in @epfd, or 0 with a failure if there is none. */
static uint32_t stored_events(struct __test_metadata *_metadata, int epfd,
			      int tfd)
{
	uint32_t events = 0;

	EXPECT_EQ(0, fdinfo_epoll_item(epfd, tfd, &events, NULL))
		TH_LOG("fd %d is not in the fdinfo of epoll fd %d", tfd, epfd);
	return events;
}

static void eventfd_signal_once(struct __test_metadata *_metadata, int efd)
{
	uint64_t one = 1;

	ASSERT_EQ(sizeof(one), write(efd, &one, sizeof(one)));
}

/*
 * An epoll fd watching nothing yet, an eventfd to watch, and the original
 * capabilities, restored by the teardown whatever a test dropped.
 */
FIXTURE(epollwakeup) {
	int epfd;		/* epoll fd under test */
	int efd;		/* eventfd to register */
	uint64_t saved_caps;	/* effective capabilities at setup */
	bool pm_sleep;		/* kernel has CONFIG_PM_SLEEP */
};

FIXTURE_SETUP(epollwakeup)
{
	ASSERT_EQ(0, cap_get_effective(&self->saved_caps));
	self->pm_sleep = wakeup_count_supported();
	self->epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->epfd);
	self->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, self->efd);
}

FIXTURE_TEARDOWN(epollwakeup)
{
	EXPECT_EQ(0, cap_set_effective(self->saved_caps));
	close(self->efd);
	close(self->epfd);
}

/*
 * Bits that uapi does not define have always been accepted: they are
 * stored as given and never reported by epoll_wait().
 */
TEST_F(epollwakeup, undefined_bits_are_accepted_and_ignored)
{
	struct epoll_event ev[2];
	int efd2;

	efd2 = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, efd2);

	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
			 EPOLLIN | UNDEFINED_EVENT_BITS, 1));
	EXPECT_EQ(EPOLLIN | UNDEFINED_EVENT_BITS | ALWAYS_POLLED,
		  stored_events(_metadata, self->epfd, self->efd));
	/* Only undefined bits: the item never reports anything. */
	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, efd2,
			 UNDEFINED_EVENT_BITS, 2));
	EXPECT_EQ(UNDEFINED_EVENT_BITS | ALWAYS_POLLED,
		  stored_events(_metadata, self->epfd, efd2));

	eventfd_signal_once(_metadata, self->efd);
	eventfd_signal_once(_metadata, efd2);
	ASSERT_EQ(1, epoll_wait(self->epfd, ev, 2, 0));
	EXPECT_EQ(EPOLLIN, ev[0].events);
	EXPECT_EQ(1, ev[0].data.u64);

	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_MOD, self->efd,
			 EPOLLOUT | UNDEFINED_EVENT_BITS, 3));
	EXPECT_EQ(EPOLLOUT | UNDEFINED_EVENT_BITS | ALWAYS_POLLED,
		  stored_events(_metadata, self->epfd, self->efd));
	ASSERT_EQ(1, epoll_wait(self->epfd, ev, 2, 0));
	EXPECT_EQ(EPOLLOUT, ev[0].events);
	EXPECT_EQ(3, ev[0].data.u64);

	close(efd2);
}

/*
 * EPOLLEXCLUSIVE is only for ADD, only with EPOLLIN, EPOLLOUT, EPOLLERR,
 * EPOLLHUP, EPOLLWAKEUP and EPOLLET (an undefined bit is refused here,
 * unlike anywhere else), and not on an epoll fd target. Its checks come
 * before the lookup of the item, so they beat ENOENT and EEXIST, and an
 * item added with it cannot be modified. A failed call changes nothing.
 */
FIXTURE(exclusive) {
	int epfd;		/* epoll fd under test */
	int target;		/* eventfd or epoll fd the call is about */
};

FIXTURE_VARIANT(exclusive) {
	int op;			/* EPOLL_CTL_ADD or EPOLL_CTL_MOD */
	uint32_t events;	/* mask passed by the call under test */
	bool target_is_epoll;	/* target is an epoll fd, not an eventfd */
	uint32_t registered;	/* mask target was added with, 0: not added */
	int error;		/* expected errno, 0 for success */
};

FIXTURE_VARIANT_ADD(exclusive, add_in) {
	.op = EPOLL_CTL_ADD,
	.events = EPOLLEXCLUSIVE | EPOLLIN,
};

FIXTURE_VARIANT_ADD(exclusive, add_all_allowed_bits) {
	.op = EPOLL_CTL_ADD,
	.events = EPOLLEXCLUSIVE | EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP |
		  EPOLLWAKEUP | EPOLLET,
};

FIXTURE_VARIANT_ADD(exclusive, add_with_oneshot) {
	.op = EPOLL_CTL_ADD,
	.events = EPOLLEXCLUSIVE | EPOLLIN | EPOLLONESHOT,
	.error = EINVAL,
};

FIXTURE_VARIANT_ADD(exclusive, add_with_rdhup) {
	.op = EPOLL_CTL_ADD,
	.events = EPOLLEXCLUSIVE | EPOLLIN | EPOLLRDHUP,
	.error = EINVAL,
};

FIXTURE_VARIANT_ADD(exclusive, add_with_pri) {
	.op = EPOLL_CTL_ADD,
	.events = EPOLLEXCLUSIVE | EPOLLPRI,
	.error = EINVAL,
};

FIXTURE_VARIANT_ADD(exclusive, add_with_rdnorm) {
	.op = EPOLL_CTL_ADD,
	.events = EPOLLEXCLUSIVE | EPOLLRDNORM,
	.error = EINVAL,
};

FIXTURE_VARIANT_ADD(exclusive, add_with_undefined_bit) {
	.op = EPOLL_CTL_ADD,
	.events = EPOLLEXCLUSIVE | EPOLLIN | (1U << 20),
	.error = EINVAL,
};

FIXTURE_VARIANT_ADD(exclusive, add_epoll_target) {
	.op = EPOLL_CTL_ADD,
	.events = EPOLLEXCLUSIVE | EPOLLIN,
	.target_is_epoll = true,
	.error = EINVAL,
};

FIXTURE_VARIANT_ADD(exclusive, add_disallowed_bit_beats_eexist) {
	.op = EPOLL_CTL_ADD,
	.events = EPOLLEXCLUSIVE | EPOLLIN | EPOLLONESHOT,
	.registered = EPOLLIN,
	.error = EINVAL,
};

FIXTURE_VARIANT_ADD(exclusive, add_allowed_bits_registered) {
	.op = EPOLL_CTL_ADD,
	.events = EPOLLEXCLUSIVE | EPOLLIN,
	.registered = EPOLLIN,
	.error = EEXIST,
};

FIXTURE_VARIANT_ADD(exclusive, mod_with_exclusive) {
	.op = EPOLL_CTL_MOD,
	.events = EPOLLEXCLUSIVE | EPOLLIN,
	.registered = EPOLLIN,
	.error = EINVAL,
};

FIXTURE_VARIANT_ADD(exclusive, mod_with_exclusive_beats_enoent) {
	.op = EPOLL_CTL_MOD,
	.events = EPOLLEXCLUSIVE | EPOLLIN,
	.error = EINVAL,
};

FIXTURE_VARIANT_ADD(exclusive, mod_of_exclusive_item) {
	.op = EPOLL_CTL_MOD,
	.events = EPOLLIN | EPOLLOUT,
	.registered = EPOLLEXCLUSIVE | EPOLLIN,
	.error = EINVAL,
};

FIXTURE_SETUP(exclusive)
{
	self->epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->epfd);
	if (variant->target_is_epoll)
		self->target = epoll_create1(EPOLL_CLOEXEC);
	else
		self->target = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, self->target);
	if (variant->registered)
		ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->target,
				 variant->registered, 1));
}

FIXTURE_TEARDOWN(exclusive)
{
	close(self->target);
	close(self->epfd);
}

TEST_F(exclusive, errors_and_stored_mask)
{
	bool wakeup_kept = wakeup_count_supported() &&
			   cap_is_effective(CAP_BLOCK_SUSPEND) == 1;
	uint32_t want_stored, stored = 0;
	int ret;

	if (variant->error)
		want_stored = variant->registered | ALWAYS_POLLED;
	else if (wakeup_kept)
		want_stored = variant->events | ALWAYS_POLLED;
	else
		want_stored = (variant->events & ~EPOLLWAKEUP) | ALWAYS_POLLED;

	ret = ctl(self->epfd, variant->op, self->target, variant->events, 2);
	if (variant->error) {
		ASSERT_EQ(-1, ret);
		ASSERT_EQ(variant->error, errno);
	} else {
		ASSERT_EQ(0, ret);
	}

	ret = fdinfo_epoll_item(self->epfd, self->target, &stored, NULL);
	if (!variant->registered && variant->error) {
		EXPECT_EQ(-ENOENT, ret);
	} else {
		ASSERT_EQ(0, ret);
		EXPECT_EQ(want_stored, stored);
	}
}

/*
 * EPOLL_CTL_DEL ignores its event argument: before Linux 2.6.9 it had to
 * be a valid pointer, since then it may be NULL, and programs may pass
 * anything. The same pointers make ADD fail with EFAULT.
 */
FIXTURE(del_event) {
	int epfd;		/* epoll fd under test */
	int efd;		/* eventfd that is added and deleted */
	void *page;		/* PROT_NONE mapping, or MAP_FAILED */
	struct epoll_event *event; /* the pointer passed to DEL */
};

FIXTURE_VARIANT(del_event) {
	int kind;		/* one of the DEL_EVENT_* below */
};

enum {
	DEL_EVENT_NULL,		/* NULL, as documented since 2.6.9 */
	DEL_EVENT_ADDRESS_ONE,	/* (void *)1 */
	DEL_EVENT_UNMAPPED,	/* a page that was unmapped */
	DEL_EVENT_PROT_NONE,	/* a mapped page without access rights */
};

FIXTURE_VARIANT_ADD(del_event, null) {
	.kind = DEL_EVENT_NULL,
};

FIXTURE_VARIANT_ADD(del_event, address_one) {
	.kind = DEL_EVENT_ADDRESS_ONE,
};

FIXTURE_VARIANT_ADD(del_event, unmapped_page) {
	.kind = DEL_EVENT_UNMAPPED,
};

FIXTURE_VARIANT_ADD(del_event, prot_none_page) {
	.kind = DEL_EVENT_PROT_NONE,
};

FIXTURE_SETUP(del_event)
{
	size_t size = getpagesize();

	self->epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->epfd);
	self->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, self->efd);
	self->page = mmap(NULL, size, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(self->page != MAP_FAILED);

	switch (variant->kind) {
	case DEL_EVENT_NULL:
		self->event = NULL;
		break;
	case DEL_EVENT_ADDRESS_ONE:
		self->event = (struct epoll_event *)1;
		break;
	case DEL_EVENT_UNMAPPED:
		ASSERT_EQ(0, munmap(self->page, size));
		self->event = self->page;
		self->page = MAP_FAILED;
		break;
	case DEL_EVENT_PROT_NONE:
		self->event = self->page;
		break;
	}
}

FIXTURE_TEARDOWN(del_event)
{
	if (self->page != MAP_FAILED)
		munmap(self->page, getpagesize());
	close(self->efd);
	close(self->epfd);
}

TEST_F(del_event, del_ignores_event_argument)
{
	ASSERT_EQ(-1, epoll_ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
				self->event));
	ASSERT_EQ(EFAULT, errno);

	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd, EPOLLIN, 1));
	ASSERT_EQ(0, epoll_ctl(self->epfd, EPOLL_CTL_DEL, self->efd,
			       self->event));
	EXPECT_EQ(-ENOENT, fdinfo_epoll_item(self->epfd, self->efd,
					     NULL, NULL));

	/* Not registered any more: ENOENT, still not EFAULT. */
	ASSERT_EQ(-1, epoll_ctl(self->epfd, EPOLL_CTL_DEL, self->efd,
				self->event));
	ASSERT_EQ(ENOENT, errno);
}

/*
 * The order in which epoll_ctl() checks the arguments of ADD, MOD and
 * DEL. Found on Linux 6.12, the same on 7.3, and pinned: a program that
 * gets one error must not get another one on a later kernel.
 *  1. EFAULT  the event cannot be read (ADD and MOD read it first)
 *  2. EBADF   epfd is not open
 *  3. EBADF   fd is not open
 *  4. EPERM   fd does not support poll
 *  5. EINVAL  epfd is not an epoll fd, or fd == epfd
 *  6. EINVAL  EPOLLEXCLUSIVE misused (see the exclusive tests)
 *  7. ELOOP   ADD of an epoll fd would close a loop
 *  8. ENOENT, EEXIST for the lookup
 * Unknown ops are not part of that order: see unknown_op_fails.
 */
FIXTURE(ctl_errors) {
	int epfd;		/* epoll fd under test */
	int epfd2;		/* a second epoll fd, for nesting */
	int efd;		/* pollable target: eventfd */
	int efd2;		/* another eventfd, used as a non-epoll epfd */
	int regfd;		/* target without poll support: memfd */
	void *bad;		/* address of an unmapped page */
	struct epoll_event ev;	/* a valid event */
};

FIXTURE_SETUP(ctl_errors)
{
	size_t size = getpagesize();

	self->epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->epfd);
	self->epfd2 = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->epfd2);
	self->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, self->efd);
	self->efd2 = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, self->efd2);
	self->regfd = memfd_create("epoll_wakeup_abi", MFD_CLOEXEC);
	ASSERT_LE(0, self->regfd);
	self->bad = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	ASSERT_TRUE(self->bad != MAP_FAILED);
	ASSERT_EQ(0, munmap(self->bad, size));
	self->ev.events = EPOLLIN;
	self->ev.data.u64 = 1;
}

FIXTURE_TEARDOWN(ctl_errors)
{
	close(self->regfd);
	close(self->efd2);
	close(self->efd);
	close(self->epfd2);
	close(self->epfd);
}

/* The errno of epoll_ctl(), or 0 if it succeeded. */
static int ctl_errno(int epfd, int op, int fd, void *event)
{
	errno = 0;
	if (epoll_ctl(epfd, op, fd, event))
		return errno;
	return 0;
}

TEST_F(ctl_errors, add_checks_ordering)
{
	const int op = EPOLL_CTL_ADD;
	int dupfd;
	struct epoll_event bad_excl = {
		.events = EPOLLEXCLUSIVE | EPOLLONESHOT | EPOLLIN,
	};

	/* The event is copied before anything else is looked at. */
	EXPECT_EQ(EFAULT, ctl_errno(-1, op, -1, self->bad));
	EXPECT_EQ(EFAULT, ctl_errno(self->regfd, op, self->regfd, NULL));
	EXPECT_EQ(EFAULT, ctl_errno(self->epfd, op, self->efd, NULL));

	/* Then epfd, then fd must be open. */
	EXPECT_EQ(EBADF, ctl_errno(-1, op, self->regfd, &self->ev));
	EXPECT_EQ(EBADF, ctl_errno(-1, op, -1, &self->ev));
	EXPECT_EQ(EBADF, ctl_errno(self->efd2, op, -1, &self->ev));
	EXPECT_EQ(EBADF, ctl_errno(self->epfd, op, -1, &self->ev));
	EXPECT_EQ(EBADF, ctl_errno(self->epfd, op, INT_MAX, &self->ev));

	/* Then fd must support poll, before epfd must be an epoll fd. */
	EXPECT_EQ(EPERM, ctl_errno(self->efd2, op, self->regfd, &self->ev));
	EXPECT_EQ(EPERM, ctl_errno(self->regfd, op, self->regfd, &self->ev));
	EXPECT_EQ(EPERM, ctl_errno(self->epfd, op, self->regfd, &self->ev));
	EXPECT_EQ(EPERM, ctl_errno(self->epfd, op, self->regfd, &bad_excl));

	/* Then epfd must be an epoll fd, and fd another file. */
	EXPECT_EQ(EINVAL, ctl_errno(self->efd2, op, self->efd, &self->ev));
	EXPECT_EQ(EINVAL, ctl_errno(self->efd, op, self->efd, &self->ev));
	EXPECT_EQ(EINVAL, ctl_errno(self->epfd, op, self->epfd, &self->ev));

	/* Then the lookup. */
	EXPECT_EQ(0, ctl_errno(self->epfd, op, self->efd, &self->ev));
	EXPECT_EQ(EEXIST, ctl_errno(self->epfd, op, self->efd, &self->ev));
	/* EPOLLEXCLUSIVE is checked before the lookup. */
	EXPECT_EQ(EINVAL, ctl_errno(self->epfd, op, self->efd, &bad_excl));
	/* Items are (file, fd) pairs: the same file under another fd. */
	dupfd = dup(self->efd);
	ASSERT_LE(0, dupfd);
	EXPECT_EQ(0, ctl_errno(self->epfd, op, dupfd, &self->ev));
	close(dupfd);
}

TEST_F(ctl_errors, mod_checks_ordering)
{
	const int op = EPOLL_CTL_MOD;
	struct epoll_event excl = { .events = EPOLLEXCLUSIVE | EPOLLIN };

	EXPECT_EQ(EFAULT, ctl_errno(-1, op, -1, self->bad));
	EXPECT_EQ(EFAULT, ctl_errno(self->epfd, op, self->efd, NULL));

	EXPECT_EQ(EBADF, ctl_errno(-1, op, self->regfd, &self->ev));
	EXPECT_EQ(EBADF, ctl_errno(self->efd2, op, -1, &self->ev));

	EXPECT_EQ(EPERM, ctl_errno(self->efd2, op, self->regfd, &self->ev));
	EXPECT_EQ(EPERM, ctl_errno(self->epfd, op, self->regfd, &self->ev));

	EXPECT_EQ(EINVAL, ctl_errno(self->efd2, op, self->efd, &self->ev));
	EXPECT_EQ(EINVAL, ctl_errno(self->epfd, op, self->epfd, &self->ev));

	/* EPOLLEXCLUSIVE with MOD is refused before the lookup. */
	EXPECT_EQ(EINVAL, ctl_errno(self->epfd, op, self->efd, &excl));
	EXPECT_EQ(ENOENT, ctl_errno(self->epfd, op, self->efd, &self->ev));
	EXPECT_EQ(ENOENT, ctl_errno(self->epfd, op, self->epfd2, &self->ev));

	ASSERT_EQ(0, ctl_errno(self->epfd, EPOLL_CTL_ADD, self->efd,
			       &self->ev));
	EXPECT_EQ(0, ctl_errno(self->epfd, op, self->efd, &self->ev));
	EXPECT_EQ(EINVAL, ctl_errno(self->epfd, op, self->efd, &excl));
}

TEST_F(ctl_errors, del_checks_ordering)
{
	const int op = EPOLL_CTL_DEL;

	/* The event is never read, even when it is the only bad argument. */
	EXPECT_EQ(EBADF, ctl_errno(-1, op, -1, self->bad));
	EXPECT_EQ(EBADF, ctl_errno(-1, op, self->regfd, self->bad));
	EXPECT_EQ(EBADF, ctl_errno(self->efd2, op, -1, self->bad));

	EXPECT_EQ(EPERM, ctl_errno(self->efd2, op, self->regfd, self->bad));
	EXPECT_EQ(EPERM, ctl_errno(self->epfd, op, self->regfd, self->bad));

	EXPECT_EQ(EINVAL, ctl_errno(self->efd2, op, self->efd, self->bad));
	EXPECT_EQ(EINVAL, ctl_errno(self->epfd, op, self->epfd, self->bad));

	EXPECT_EQ(ENOENT, ctl_errno(self->epfd, op, self->efd, self->bad));
	ASSERT_EQ(0, ctl_errno(self->epfd, EPOLL_CTL_ADD, self->efd,
			       &self->ev));
	EXPECT_EQ(0, ctl_errno(self->epfd, op, self->efd, self->bad));
}

/*
 * An op that does not exist fails and changes nothing. Which error it
 * gets is not ABI beyond this: a call that would be valid for a known op
 * fails with EINVAL, and a call with another bad argument fails with
 * EINVAL or with the error that argument gets (Linux 6.12 reads the
 * event, as for ADD, and checks the fds before it looks at the op; a
 * kernel may as well reject the op first). Op 4 and the next ones are
 * left out: new ops get those numbers.
 */
static bool einval_or(int err, int other)
{
	return err == EINVAL || err == other;
}

TEST_F(ctl_errors, unknown_op_fails)
{
	static const int ops[] = { 0, -1, INT_MAX, INT_MIN };
	uint32_t before = 0, after = 0;
	unsigned int i;
	int err;

	ASSERT_EQ(0, ctl_errno(self->epfd, EPOLL_CTL_ADD, self->efd,
			       &self->ev));
	ASSERT_EQ(0, fdinfo_epoll_item(self->epfd, self->efd, &before, NULL));

	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		const int op = ops[i];

		/* Valid for a known op: registered or not, EINVAL. */
		EXPECT_EQ(EINVAL, ctl_errno(self->epfd, op, self->efd,
					    &self->ev))
			TH_LOG("op %d", op);
		EXPECT_EQ(EINVAL, ctl_errno(self->epfd, op, self->efd2,
					    &self->ev))
			TH_LOG("op %d", op);

		err = ctl_errno(self->epfd, op, self->efd, NULL);
		EXPECT_TRUE(einval_or(err, EFAULT))
			TH_LOG("op %d, NULL event: errno %d", op, err);
		err = ctl_errno(-1, op, -1, self->bad);
		EXPECT_TRUE(einval_or(err, EFAULT) || err == EBADF)
			TH_LOG("op %d, bad event and fds: errno %d", op, err);
		err = ctl_errno(-1, op, self->efd, &self->ev);
		EXPECT_TRUE(einval_or(err, EBADF))
			TH_LOG("op %d, bad epfd: errno %d", op, err);
		err = ctl_errno(self->epfd, op, -1, &self->ev);
		EXPECT_TRUE(einval_or(err, EBADF))
			TH_LOG("op %d, bad fd: errno %d", op, err);
		err = ctl_errno(self->efd2, op, self->regfd, &self->ev);
		EXPECT_TRUE(einval_or(err, EPERM))
			TH_LOG("op %d, unpollable fd: errno %d", op, err);
		EXPECT_EQ(EINVAL, ctl_errno(self->efd2, op, self->efd,
					    &self->ev))
			TH_LOG("op %d", op);
	}

	/* Nothing changed: the item is as it was, efd2 is not registered. */
	ASSERT_EQ(0, fdinfo_epoll_item(self->epfd, self->efd, &after, NULL));
	EXPECT_EQ(before, after);
	EXPECT_EQ(-ENOENT, fdinfo_epoll_item(self->epfd, self->efd2,
					     NULL, NULL));
}

/*
 * Nesting: epfd2 inside epfd. Adding epfd to epfd2 would close a loop:
 * ELOOP, unless EPOLLEXCLUSIVE already made the call invalid.
 *
 *	epfd --> epfd2 -x-> epfd
 */
TEST_F(ctl_errors, loop_checks_ordering)
{
	struct epoll_event excl = { .events = EPOLLEXCLUSIVE | EPOLLIN };

	ASSERT_EQ(0, ctl_errno(self->epfd, EPOLL_CTL_ADD, self->epfd2,
			       &self->ev));

	EXPECT_EQ(EFAULT, ctl_errno(self->epfd2, EPOLL_CTL_ADD, self->epfd,
				    self->bad));
	EXPECT_EQ(EINVAL, ctl_errno(self->epfd2, EPOLL_CTL_ADD, self->epfd,
				    &excl));
	EXPECT_EQ(ELOOP, ctl_errno(self->epfd2, EPOLL_CTL_ADD, self->epfd,
				   &self->ev));
	EXPECT_EQ(-ENOENT, fdinfo_epoll_item(self->epfd2, self->epfd,
					     NULL, NULL));
	/* No loop, but already there. */
	EXPECT_EQ(EEXIST, ctl_errno(self->epfd, EPOLL_CTL_ADD, self->epfd2,
				    &self->ev));
	/* MOD and DEL do not check for loops. */
	EXPECT_EQ(ENOENT, ctl_errno(self->epfd2, EPOLL_CTL_MOD, self->epfd,
				    &self->ev));
	EXPECT_EQ(ENOENT, ctl_errno(self->epfd2, EPOLL_CTL_DEL, self->epfd,
				    NULL));
}

/*
 * struct epoll_event is packed on x86-64 only, so that it has the 12-byte
 * layout of i386 and 32-bit programs need no compat translation; other
 * architectures use the natural layout. Both ABIs must see that layout,
 * and the kernel must write an array of events with that stride and the
 * whole 64-bit data.
 */
struct natural_epoll_event {
	uint32_t events;
	uint64_t data;
};

TEST(epoll_event_layout_matches_uapi)
{
	static const uint64_t data[2] = {
		0x0123456789abcdefULL, 0xfedcba9876543210ULL,
	};
	struct epoll_event ev[3];
	int epfd, efd[2], i, n;
	uint64_t stored = 0;

#ifdef __x86_64__
	ASSERT_EQ(12, sizeof(struct epoll_event));
	ASSERT_EQ(4, offsetof(struct epoll_event, data));
#else
	ASSERT_EQ(sizeof(struct natural_epoll_event),
		  sizeof(struct epoll_event));
	ASSERT_EQ(offsetof(struct natural_epoll_event, data),
		  offsetof(struct epoll_event, data));
#endif
	TH_LOG("%zu-bit program, sizeof(struct epoll_event) = %zu",
	       sizeof(long) * 8, sizeof(struct epoll_event));

	epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, epfd);
	for (i = 0; i < 2; i++) {
		efd[i] = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
		ASSERT_LE(0, efd[i]);
		ASSERT_EQ(0, ctl(epfd, EPOLL_CTL_ADD, efd[i], EPOLLIN,
				 ~data[i]));
		ASSERT_EQ(0, ctl(epfd, EPOLL_CTL_MOD, efd[i], EPOLLIN,
				 data[i]));
		ASSERT_EQ(0, fdinfo_epoll_item(epfd, efd[i], NULL, &stored));
		EXPECT_EQ(data[i], stored);
	}

	memset(ev, 0x5a, sizeof(ev));
	n = epoll_wait(epfd, ev, 3, 0);
	ASSERT_EQ(2, n);
	for (i = 0; i < n; i++) {
		EXPECT_EQ(EPOLLIN, ev[i].events);
		EXPECT_TRUE(ev[i].data.u64 == data[0] ||
			    ev[i].data.u64 == data[1])
			TH_LOG("event %d: data %#llx", i,
			       (unsigned long long)ev[i].data.u64);
	}
	EXPECT_NE(ev[0].data.u64, ev[1].data.u64);
	/* Nothing written past the two events. */
	EXPECT_EQ(0x5a5a5a5a, ev[2].events);
	EXPECT_EQ(0x5a5a5a5a5a5a5a5aULL, ev[2].data.u64);

	close(efd[1]);
	close(efd[0]);
	close(epfd);
}

/*
 * Every way an item goes away gives its watch back to the user's
 * fs.epoll.max_user_watches budget: EPOLL_CTL_DEL, close of the target,
 * close of the epoll fd. Checked as a user of its own (the budget is per
 * user, counted from epoll_create()), with a budget of WATCHES.
 */
#define MAX_USER_WATCHES_PATH "/proc/sys/fs/epoll/max_user_watches"
#define WATCHES 4
#define WATCHES_UID 60999

FIXTURE(watches) {
	char saved[32];		/* max_user_watches to restore */
};

static int sysctl_rw(const char *path, char *old, size_t size,
		     const char *val)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = old ? read(fd, old, size - 1) : 0;
	if (n >= 0 && old)
		old[n] = '\0';
	if (n >= 0)
		n = pwrite(fd, val, strlen(val), 0);
	if (n < 0)
		n = -errno;
	close(fd);
	return n < 0 ? n : 0;
}

FIXTURE_SETUP(watches)
{
	char budget[16];

	self->saved[0] = '\0';
	if (geteuid())
		SKIP(return, "needs root to set " MAX_USER_WATCHES_PATH);
	snprintf(budget, sizeof(budget), "%d", WATCHES);
	ASSERT_EQ(0, sysctl_rw(MAX_USER_WATCHES_PATH, self->saved,
			       sizeof(self->saved), budget));
}

FIXTURE_TEARDOWN(watches)
{
	if (self->saved[0])
		EXPECT_EQ(0, sysctl_rw(MAX_USER_WATCHES_PATH, NULL, 0,
				       self->saved));
}

/* ADD of @fd to @epfd: 0 or the errno. */
static int add_errno(int epfd, int fd)
{
	return ctl(epfd, EPOLL_CTL_ADD, fd, EPOLLIN, fd) ? errno : 0;
}

TEST_F(watches, every_removal_returns_the_watch)
{
	int epfd, efd[WATCHES + 1], i, status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* Not the harness's checks: they belong to the test's process. */
#define CHECK(cond) do {						\
		if (!(cond)) {						\
			fprintf(stderr, "# %s:%d: %s failed (errno %d)\n", \
				__FILE__, __LINE__, #cond, errno);	\
			_exit(1);					\
		}							\
	} while (0)
		CHECK(setresgid(WATCHES_UID, WATCHES_UID, WATCHES_UID) == 0);
		CHECK(setresuid(WATCHES_UID, WATCHES_UID, WATCHES_UID) == 0);
		epfd = epoll_create1(EPOLL_CLOEXEC);
		CHECK(epfd >= 0);
		for (i = 0; i <= WATCHES; i++) {
			efd[i] = eventfd(0, EFD_CLOEXEC);
			CHECK(efd[i] >= 0);
		}
		for (i = 0; i < WATCHES; i++)
			CHECK(add_errno(epfd, efd[i]) == 0);
		CHECK(add_errno(epfd, efd[WATCHES]) == ENOSPC);

		/* DEL */
		CHECK(ctl(epfd, EPOLL_CTL_DEL, efd[0], 0, 0) == 0);
		CHECK(add_errno(epfd, efd[WATCHES]) == 0);
		CHECK(add_errno(epfd, efd[0]) == ENOSPC);

		/* Close of a target */
		close(efd[1]);
		CHECK(add_errno(epfd, efd[0]) == 0);
		efd[1] = eventfd(0, EFD_CLOEXEC);
		CHECK(efd[1] >= 0);
		CHECK(add_errno(epfd, efd[1]) == ENOSPC);

		/* Close of the epoll fd */
		close(epfd);
		epfd = epoll_create1(EPOLL_CLOEXEC);
		CHECK(epfd >= 0);
		for (i = 0; i < WATCHES; i++)
			CHECK(add_errno(epfd, efd[i]) == 0);
		CHECK(add_errno(epfd, efd[WATCHES]) == ENOSPC);
		_exit(0);
#undef CHECK
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/*
 * Wakeup sources. The target is a FIFO with a unique name, so that the
 * wakeup source epoll creates for it (named after the dentry) can be found
 * in /sys/class/wakeup. The tests need CONFIG_PM_SLEEP and
 * CAP_BLOCK_SUSPEND, and a system with no other wakeup source active.
 */
struct ws_env {
	int epfd;		/* epoll fd under test */
	int fifo;		/* FIFO, opened O_RDWR: the target */
	char dir[256];		/* temporary directory holding the FIFO */
	char name[64];		/* its name, hence the wakeup source's */
	char path[512];		/* dir/name */
	uint64_t saved_caps;	/* effective capabilities at setup */
	struct wakeup_count_reader reader; /* a pending wakeup_count read */
};

/* The FIFO and the epoll fd of @env, for a test that needs no wakeup source. */
static void ws_env_open(struct __test_metadata *_metadata, struct ws_env *env)
{
	const char *tmp = getenv("TMPDIR");
	struct stat st;

	ASSERT_EQ(0, cap_get_effective(&env->saved_caps));
	if (!tmp || stat(tmp, &st) || !S_ISDIR(st.st_mode))
		tmp = "/tmp";
	if (stat(tmp, &st) || !S_ISDIR(st.st_mode))
		tmp = ".";
	snprintf(env->dir, sizeof(env->dir), "%s/epoll_wakeup_abi.XXXXXX",
		 tmp);
	ASSERT_TRUE(mkdtemp(env->dir) == env->dir);
	snprintf(env->name, sizeof(env->name), "epoll-wakeup-abi-%d",
		 getpid());
	snprintf(env->path, sizeof(env->path), "%s/%s", env->dir, env->name);
	ASSERT_EQ(0, mkfifo(env->path, 0600));
	env->fifo = open(env->path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, env->fifo);
	env->epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, env->epfd);
}

static void ws_env_setup(struct __test_metadata *_metadata, struct ws_env *env)
{
	env->epfd = -1;
	env->fifo = -1;
	env->reader.pid = 0;
	if (!wakeup_count_supported() || !wakeup_sources_supported())
		SKIP(return, "no " WAKEUP_COUNT_PATH " or " WAKEUP_CLASS_PATH
		     ": kernel without CONFIG_PM_SLEEP");
	if (cap_is_effective(CAP_BLOCK_SUSPEND) != 1)
		SKIP(return, "needs CAP_BLOCK_SUSPEND (run as root)");
	ASSERT_EQ(1, wakeup_count_read_bounded(COMPLETES_MS))
		TH_LOG("another wakeup source is active: see %s",
		       WAKEUP_CLASS_PATH);
	ws_env_open(_metadata, env);
}

static void ws_env_teardown(struct __test_metadata *_metadata,
			    struct ws_env *env)
{
	wakeup_count_reader_stop(&env->reader);
	EXPECT_EQ(0, cap_set_effective(env->saved_caps));
	if (env->epfd >= 0)
		close(env->epfd);
	if (env->fifo >= 0)
		close(env->fifo);
	unlink(env->path);
	rmdir(env->dir);
}

static void fifo_fill(struct __test_metadata *_metadata, struct ws_env *env)
{
	ASSERT_EQ(1, write(env->fifo, "x", 1));
}

static void fifo_drain(struct __test_metadata *_metadata, struct ws_env *env)
{
	char buf[64];

	while (read(env->fifo, buf, sizeof(buf)) > 0)
		;
	ASSERT_EQ(EAGAIN, errno);
}

/* Stats of the FIFO's wakeup source, which must exist. */
static struct wakeup_source_stats ws_stats(struct __test_metadata *_metadata,
					   struct ws_env *env)
{
	struct wakeup_source_stats st = { 0 };

	usleep(ACTIVE_TIME_SETTLE_US);
	EXPECT_EQ(1, wakeup_source_find(env->name, &st))
		TH_LOG("no single wakeup source named %s", env->name);
	return st;
}

/* Start a wakeup_count read and check that it stays blocked. */
static void expect_held_up(struct __test_metadata *_metadata,
			   struct ws_env *env)
{
	if (!env->reader.pid)
		ASSERT_EQ(0, wakeup_count_reader_start(&env->reader));
	ASSERT_EQ(0, wakeup_count_reader_wait(&env->reader, HELD_UP_MS))
		TH_LOG("wakeup_count read not held up by a pending event");
}

/* Check that the pending (or a new) wakeup_count read completes. */
static void expect_not_held_up(struct __test_metadata *_metadata,
			       struct ws_env *env)
{
	if (!env->reader.pid)
		ASSERT_EQ(0, wakeup_count_reader_start(&env->reader));
	ASSERT_EQ(1, wakeup_count_reader_wait(&env->reader, COMPLETES_MS))
		TH_LOG("wakeup_count read still blocked after %d ms",
		       COMPLETES_MS);
}

/*
 * Creation and removal: one source named after the target's dentry per
 * item with EPOLLWAKEUP, plus one named "eventpoll" per epoll instance
 * (taken while epoll_wait() delivers), none without the flag or without
 * the capability.
 */
FIXTURE(wakeup_source) {
	struct ws_env env;	/* FIFO target, epoll fd, pending read */
};

FIXTURE_SETUP(wakeup_source)
{
	ws_env_setup(_metadata, &self->env);
}

FIXTURE_TEARDOWN(wakeup_source)
{
	ws_env_teardown(_metadata, &self->env);
}

TEST_F(wakeup_source, named_after_target_dentry)
{
	struct ws_env *env = &self->env;
	int eventpoll, eventfds, efd;

	eventpoll = wakeup_source_find("eventpoll", NULL);
	ASSERT_LE(0, eventpoll);
	ASSERT_EQ(0, wakeup_source_find(env->name, NULL));

	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_ADD, env->fifo,
			 EPOLLIN | EPOLLWAKEUP, 1));
	EXPECT_EQ(1, wakeup_source_find(env->name, NULL));
	EXPECT_EQ(eventpoll + 1, wakeup_source_find("eventpoll", NULL));
	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_DEL, env->fifo, 0, 0));
	EXPECT_EQ(0, wakeup_source_find(env->name, NULL));

	/* Anonymous inodes all have the same dentry name. */
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, efd);
	eventfds = wakeup_source_find("[eventfd]", NULL);
	ASSERT_LE(0, eventfds);
	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_ADD, efd,
			 EPOLLIN | EPOLLWAKEUP, 2));
	EXPECT_EQ(eventfds + 1, wakeup_source_find("[eventfd]", NULL));
	close(efd);
	EXPECT_EQ(eventfds, wakeup_source_find("[eventfd]", NULL));

	/* The epoll instance's own source goes with it. */
	EXPECT_EQ(eventpoll + 1, wakeup_source_find("eventpoll", NULL));
	close(env->epfd);
	env->epfd = -1;
	EXPECT_EQ(eventpoll, wakeup_source_find("eventpoll", NULL));
}

TEST_F(wakeup_source, created_and_removed_by_mod)
{
	struct ws_env *env = &self->env;

	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_ADD, env->fifo, EPOLLIN, 1));
	EXPECT_EQ(0, wakeup_source_find(env->name, NULL));
	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_MOD, env->fifo,
			 EPOLLIN | EPOLLWAKEUP, 2));
	EXPECT_EQ(1, wakeup_source_find(env->name, NULL));
	/* Again: still a single one. */
	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_MOD, env->fifo,
			 EPOLLIN | EPOLLET | EPOLLWAKEUP, 3));
	EXPECT_EQ(1, wakeup_source_find(env->name, NULL));
	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_MOD, env->fifo, EPOLLIN, 4));
	EXPECT_EQ(0, wakeup_source_find(env->name, NULL));
}

TEST_F(wakeup_source, not_created_without_cap_block_suspend)
{
	struct ws_env *env = &self->env;

	ASSERT_EQ(0, cap_set_effective(env->saved_caps &
				       ~CAP_TO_MASK64(CAP_BLOCK_SUSPEND)));
	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_ADD, env->fifo,
			 EPOLLIN | EPOLLWAKEUP, 1));
	EXPECT_EQ(0, wakeup_source_find(env->name, NULL));
	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_MOD, env->fifo,
			 EPOLLIN | EPOLLWAKEUP, 2));
	EXPECT_EQ(0, wakeup_source_find(env->name, NULL));

	/* An item given a source with the capability loses it on MOD. */
	ASSERT_EQ(0, cap_set_effective(env->saved_caps));
	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_MOD, env->fifo,
			 EPOLLIN | EPOLLWAKEUP, 3));
	EXPECT_EQ(1, wakeup_source_find(env->name, NULL));
	ASSERT_EQ(0, cap_set_effective(env->saved_caps &
				       ~CAP_TO_MASK64(CAP_BLOCK_SUSPEND)));
	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_MOD, env->fifo,
			 EPOLLIN | EPOLLWAKEUP, 4));
	EXPECT_EQ(0, wakeup_source_find(env->name, NULL));
}

/*
 * After its event was reported, a new event re-activates the source of an
 * edge-triggered item.
 */
TEST_F(wakeup_source, edge_triggered_item_reactivated_by_next_event)
{
	struct ws_env *env = &self->env;
	struct wakeup_source_stats st;
	struct epoll_event ev;

	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_ADD, env->fifo,
			 EPOLLIN | EPOLLET | EPOLLWAKEUP, 7));
	fifo_fill(_metadata, env);
	ASSERT_EQ(1, epoll_wait(env->epfd, &ev, 1, 0));
	expect_not_held_up(_metadata, env);

	fifo_fill(_metadata, env);
	st = ws_stats(_metadata, env);
	EXPECT_LT(0, st.active_time_ms);
	EXPECT_EQ(2, st.active_count);
	expect_held_up(_metadata, env);
	ASSERT_EQ(1, epoll_wait(env->epfd, &ev, 1, 0));
	EXPECT_EQ(7, ev.data.u64);
	expect_not_held_up(_metadata, env);
}

/*
 * A one-shot item whose event was reported is disarmed: new events do not
 * activate its source until MOD re-arms it.
 */
TEST_F(wakeup_source, oneshot_item_inactive_until_rearmed)
{
	struct ws_env *env = &self->env;
	struct wakeup_source_stats st;
	struct epoll_event ev;

	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_ADD, env->fifo,
			 EPOLLIN | EPOLLONESHOT | EPOLLWAKEUP, 7));
	fifo_fill(_metadata, env);
	ASSERT_EQ(1, epoll_wait(env->epfd, &ev, 1, 0));
	expect_not_held_up(_metadata, env);

	fifo_fill(_metadata, env);
	st = ws_stats(_metadata, env);
	EXPECT_EQ(0, st.active_time_ms);
	EXPECT_EQ(1, st.active_count);
	expect_not_held_up(_metadata, env);
	ASSERT_EQ(0, epoll_wait(env->epfd, &ev, 1, 0));

	/* MOD re-arms and finds the FIFO readable: queued again. */
	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_MOD, env->fifo,
			 EPOLLIN | EPOLLONESHOT | EPOLLWAKEUP, 8));
	st = ws_stats(_metadata, env);
	EXPECT_LT(0, st.active_time_ms);
	expect_held_up(_metadata, env);
	ASSERT_EQ(1, epoll_wait(env->epfd, &ev, 1, 0));
	EXPECT_EQ(8, ev.data.u64);
	expect_not_held_up(_metadata, env);
}

/*
 * A one-shot item that reported its event is disarmed: a later wakeup
 * neither queues it nor activates its wakeup source, also a wakeup
 * without a poll key, such as a signalfd's.
 */
TEST(disarmed_oneshot_item_ignores_keyless_wakeups)
{
	struct wakeup_source_stats st;
	struct signalfd_siginfo si;
	struct epoll_event ev;
	int epfd, sfd, i;
	sigset_t set;

	if (!wakeup_sources_supported())
		SKIP(return, "no " WAKEUP_CLASS_PATH
		     ": kernel without CONFIG_PM_SLEEP");
	if (cap_is_effective(CAP_BLOCK_SUSPEND) != 1)
		SKIP(return, "needs CAP_BLOCK_SUSPEND (run as root)");
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	ASSERT_EQ(0, sigprocmask(SIG_BLOCK, &set, NULL));
	sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	ASSERT_LE(0, sfd);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, epfd);
	ASSERT_EQ(0, ctl(epfd, EPOLL_CTL_ADD, sfd,
			 EPOLLIN | EPOLLONESHOT | EPOLLWAKEUP, 1));

	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, kill(getpid(), SIGUSR1));
		EXPECT_EQ(!i, epoll_wait(epfd, &ev, 1, 0));
		/* Consumed, so that the next kill() signals again. */
		ASSERT_EQ(sizeof(si), read(sfd, &si, sizeof(si)));
	}
	ASSERT_EQ(1, wakeup_source_find("[signalfd]", &st));
	EXPECT_EQ(1, st.active_count)
		TH_LOG("the disarmed item's wakeup source was activated again");
	EXPECT_EQ(0, st.active_time_ms);
	close(epfd);
	close(sfd);
}

/*
 * MOD adding EPOLLWAKEUP to an item that is already queued: the new source
 * is held until the event is reported, as if the item had been queued
 * with it.
 */
TEST_F(wakeup_source, mod_adding_epollwakeup_to_queued_item_holds_it)
{
	struct ws_env *env = &self->env;
	struct wakeup_source_stats st;
	struct epoll_event ev;

	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_ADD, env->fifo,
			 EPOLLIN | EPOLLET, 1));
	fifo_fill(_metadata, env);
	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_MOD, env->fifo,
			 EPOLLIN | EPOLLET | EPOLLWAKEUP, 2));
	st = ws_stats(_metadata, env);
	EXPECT_EQ(1, st.active_count);
	EXPECT_LT(0, st.active_time_ms);
	expect_held_up(_metadata, env);
	ASSERT_EQ(1, epoll_wait(env->epfd, &ev, 1, 0));
	EXPECT_EQ(2, ev.data.u64);
	expect_not_held_up(_metadata, env);
}

/*
 * MOD adding EPOLLWAKEUP to an item with no event pending: the new source
 * stays inactive, as nothing is queued for it to hold.
 */
TEST_F(wakeup_source, mod_adding_epollwakeup_to_idle_item_leaves_it_inactive)
{
	struct ws_env *env = &self->env;
	struct wakeup_source_stats st;
	struct epoll_event ev;

	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_ADD, env->fifo, EPOLLIN, 1));
	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_MOD, env->fifo,
			 EPOLLIN | EPOLLWAKEUP, 2));
	st = ws_stats(_metadata, env);
	EXPECT_EQ(0, st.active_count);
	expect_not_held_up(_metadata, env);
	EXPECT_EQ(0, epoll_wait(env->epfd, &ev, 1, 0));
}

/*
 * A wakeup for events the item does not watch neither queues the item nor
 * activates its source: a read from a full FIFO wakes the FIFO's writers
 * with EPOLLOUT, and the item watches EPOLLIN only.
 */
TEST_F(wakeup_source, wakeup_for_unwatched_events_is_ignored)
{
	static char page[4096];
	struct ws_env *env = &self->env;
	struct wakeup_source_stats st;
	struct epoll_event ev;

	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_ADD, env->fifo,
			 EPOLLIN | EPOLLET | EPOLLWAKEUP, 1));
	while (write(env->fifo, page, sizeof(page)) > 0)
		;
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(1, epoll_wait(env->epfd, &ev, 1, 0));
	expect_not_held_up(_metadata, env);

	ASSERT_EQ(1, read(env->fifo, page, 1));
	st = ws_stats(_metadata, env);
	EXPECT_EQ(1, st.active_count)
		TH_LOG("source activated by a wakeup for EPOLLOUT");
	expect_not_held_up(_metadata, env);
	EXPECT_EQ(0, epoll_wait(env->epfd, &ev, 1, 0))
		TH_LOG("item reported after a wakeup for EPOLLOUT");
}

/*
 * Allocation failures where they happen. With CONFIG_FAILSLAB, writing N to
 * /proc/thread-self/fail-nth makes the N-th slab allocation of the thread
 * fail (Documentation/fault-injection/fault-injection.rst). One
 * epoll_ctl() is tried with N = 1, 2, ... until it makes fewer than N
 * allocations. Each call must either fail with ENOMEM and leave the
 * instance as it was, or succeed completely: item registered with its mask
 * and getting its events, a wakeup source for EPOLLWAKEUP (and the
 * instance's own), active while the item is queued, and nothing left
 * behind once the epoll fd is closed.
 */
#define FAIL_NTH_PATH "/proc/thread-self/fail-nth"
#define FAILSLAB_DIR "/sys/kernel/debug/failslab"
#define FAIL_NTH_MAX 10000

FIXTURE(ctl_enomem) {
	struct ws_env env;
	int fail_nth;			/* FAIL_NTH_PATH */
	char ignore_gfp_wait[8];	/* failslab knobs, restored */
	char verbose[8];
	int eventpoll;			/* "eventpoll" sources before */
};

/* Read failslab's debugfs knob @name into @old (if not NULL), write @val. */
static int failslab_knob(const char *name, char *old, size_t size,
			 const char *val)
{
	char path[128];
	ssize_t n = 0;
	int fd;

	/* Not seekable: one open to read, one to write. */
	snprintf(path, sizeof(path), FAILSLAB_DIR "/%s", name);
	if (old) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		n = read(fd, old, size - 1);
		if (n < 0)
			n = -errno;
		close(fd);
		if (n < 0)
			return n;
		old[n] = '\0';
		old[strcspn(old, "\n")] = '\0';
	}
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n < 0)
		n = -errno;
	close(fd);
	return n < 0 ? n : 0;
}

FIXTURE_SETUP(ctl_enomem)
{
	self->fail_nth = -1;
	self->ignore_gfp_wait[0] = '\0';
	self->verbose[0] = '\0';
	ws_env_setup(_metadata, &self->env);
	if (_metadata->exit_code)
		return;
	self->fail_nth = open(FAIL_NTH_PATH, O_RDWR | O_CLOEXEC);
	if (self->fail_nth < 0)
		SKIP(return, "no " FAIL_NTH_PATH
		     ": kernel without CONFIG_FAULT_INJECTION");
	/*
	 * failslab spares allocations that may sleep unless told, and logs
	 * a stack trace for each failure it makes: not a kernel problem.
	 */
	if (failslab_knob("ignore-gfp-wait", self->ignore_gfp_wait,
			  sizeof(self->ignore_gfp_wait), "N"))
		SKIP(return, "no " FAILSLAB_DIR
		     ": needs CONFIG_FAILSLAB, CONFIG_FAULT_INJECTION_DEBUG_FS and debugfs");
	ASSERT_EQ(0, failslab_knob("verbose", self->verbose,
				   sizeof(self->verbose), "0"));
	self->eventpoll = wakeup_source_find("eventpoll", NULL);
	ASSERT_LE(0, self->eventpoll);
}

FIXTURE_TEARDOWN(ctl_enomem)
{
	if (self->fail_nth >= 0)
		close(self->fail_nth);
	if (self->verbose[0])
		EXPECT_EQ(0, failslab_knob("verbose", NULL, 0, self->verbose));
	if (self->ignore_gfp_wait[0])
		EXPECT_EQ(0, failslab_knob("ignore-gfp-wait", NULL, 0,
					   self->ignore_gfp_wait));
	ws_env_teardown(_metadata, &self->env);
}

/* Fail the @nth allocation of this thread from now on; 0 disarms. */
static void fail_nth_arm(struct __test_metadata *_metadata, int fd,
			 unsigned int nth)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", nth);

	ASSERT_EQ(len, pwrite(fd, buf, len, 0));
}

/* Whether the armed failure was made; disarm it either way. */
static bool fail_nth_injected(struct __test_metadata *_metadata, int fd)
{
	char buf[16] = "";

	EXPECT_LT(0, pread(fd, buf, sizeof(buf) - 1, 0));
	fail_nth_arm(_metadata, fd, 0);
	return atoi(buf) == 0;
}

/*
 * For N = 1, 2, ...: a new epoll fd (with the FIFO registered with
 * @before first if @op is MOD), @op with @events under fail-nth = N, the
 * checks, close. The FIFO is readable if @queued. Return how many calls
 * failed, all with ENOMEM.
 */
static int ctl_enomem_sweep(struct __test_metadata *_metadata,
			    struct ws_env *env, int fail_nth, int eventpoll,
			    int op, uint32_t before, uint32_t events,
			    bool queued)
{
	bool wakeup = events & EPOLLWAKEUP;
	struct wakeup_source_stats st = { 0 };
	struct epoll_event ev;
	int nth, ret, err, failed = 0;
	uint32_t stored;
	bool injected;

	fifo_drain(_metadata, env);
	if (queued)
		fifo_fill(_metadata, env);
	if (env->epfd >= 0)
		close(env->epfd);
	env->epfd = -1;
	for (nth = 1; nth < FAIL_NTH_MAX; nth++) {
		env->epfd = epoll_create1(EPOLL_CLOEXEC);
		ASSERT_LE(0, env->epfd);
		if (op == EPOLL_CTL_MOD)
			ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_ADD, env->fifo,
					 before, 1));
		fail_nth_arm(_metadata, fail_nth, nth);
		ret = ctl(env->epfd, op, env->fifo, events, 2);
		err = errno;
		injected = fail_nth_injected(_metadata, fail_nth);

		if (ret) {
			failed++;
			EXPECT_EQ(ENOMEM, err)
				TH_LOG("allocation %d failed: errno %d", nth, err);
			if (op == EPOLL_CTL_ADD) {
				EXPECT_EQ(-ENOENT,
					  fdinfo_epoll_item(env->epfd, env->fifo,
							    NULL, NULL))
					TH_LOG("allocation %d failed: item added",
					       nth);
			} else {
				EXPECT_EQ(before | ALWAYS_POLLED,
					  stored_events(_metadata, env->epfd,
							env->fifo))
					TH_LOG("allocation %d failed: mask changed",
					       nth);
			}
			EXPECT_EQ(0, wakeup_source_find(env->name, NULL))
				TH_LOG("allocation %d failed: source left", nth);
		} else {
			stored = stored_events(_metadata, env->epfd, env->fifo);
			EXPECT_EQ(events | ALWAYS_POLLED, stored)
				TH_LOG("allocation %d: stored %#x", nth, stored);
			EXPECT_EQ((int)wakeup,
				  wakeup_source_find(env->name,
						     wakeup ? &st : NULL))
				TH_LOG("allocation %d: no single source", nth);
			if (wakeup && queued) {
				EXPECT_EQ(1, st.active_count)
					TH_LOG("allocation %d: source not active",
					       nth);
			}
			EXPECT_EQ(eventpoll + wakeup,
				  wakeup_source_find("eventpoll", NULL))
				TH_LOG("allocation %d: no eventpoll source", nth);
		}
		/* The item, if there is one, still gets its events. */
		if (!ret || op == EPOLL_CTL_MOD) {
			if (!queued)
				fifo_fill(_metadata, env);
			EXPECT_EQ(1, epoll_wait(env->epfd, &ev, 1, 0))
				TH_LOG("allocation %d: event lost", nth);
			if (!queued)
				fifo_drain(_metadata, env);
		}

		close(env->epfd);
		env->epfd = -1;
		EXPECT_EQ(0, wakeup_source_find(env->name, NULL));
		EXPECT_EQ(eventpoll, wakeup_source_find("eventpoll", NULL))
			TH_LOG("allocation %d: eventpoll source left", nth);
		if (_metadata->exit_code == KSFT_FAIL)
			break;
		if (!injected) {
			/* The call made fewer than nth allocations. */
			EXPECT_EQ(0, ret);
			break;
		}
	}
	EXPECT_GT(FAIL_NTH_MAX, nth);
	return failed;
}

/* The sweep in the environment of the test (self). */
#define SWEEP(op, before, events, queued)				\
	ctl_enomem_sweep(_metadata, &self->env, self->fail_nth,	\
			 self->eventpoll, op, before, events, queued)

TEST_F(ctl_enomem, add)
{
	int plain, wakeup;

	plain = SWEEP(EPOLL_CTL_ADD, 0, EPOLLIN, false);
	wakeup = SWEEP(EPOLL_CTL_ADD, 0, EPOLLIN | EPOLLWAKEUP, false);
	/* The sources' allocations failed too, and were reported. */
	EXPECT_LT(0, plain);
	EXPECT_LT(plain, wakeup);
}

TEST_F(ctl_enomem, add_ready_target)
{
	EXPECT_LT(0, SWEEP(EPOLL_CTL_ADD, 0, EPOLLIN | EPOLLWAKEUP, true));
}

TEST_F(ctl_enomem, mod_adding_epollwakeup)
{
	EXPECT_LT(0, SWEEP(EPOLL_CTL_MOD, EPOLLIN, EPOLLIN | EPOLLWAKEUP,
			   false));
}

TEST_F(ctl_enomem, mod_adding_epollwakeup_to_queued_item)
{
	EXPECT_LT(0, SWEEP(EPOLL_CTL_MOD, EPOLLIN, EPOLLIN | EPOLLWAKEUP,
			   true));
}

/* A MOD that asks for no wakeup source allocates nothing: it cannot fail. */
TEST_F(ctl_enomem, mod_without_epollwakeup)
{
	EXPECT_EQ(0, SWEEP(EPOLL_CTL_MOD, EPOLLIN, EPOLLIN | EPOLLET, false));
}

/*
 * An item with EPOLLWAKEUP, level-triggered, edge-triggered or one-shot,
 * delivered by epoll_wait(). That the item's own source is held while the
 * event is queued, and released by the delivery, is epoll_wakeup_abi_test's.
 */
FIXTURE(ws_delivery) {
	struct ws_env env;	/* FIFO target, epoll fd, pending read */
};

FIXTURE_VARIANT(ws_delivery) {
	uint32_t mode;		/* EPOLLET, EPOLLONESHOT, or 0 for LT */
};

FIXTURE_VARIANT_ADD(ws_delivery, level_triggered) {
	.mode = 0,
};

FIXTURE_VARIANT_ADD(ws_delivery, edge_triggered) {
	.mode = EPOLLET,
};

FIXTURE_VARIANT_ADD(ws_delivery, oneshot) {
	.mode = EPOLLONESHOT,
};

FIXTURE_SETUP(ws_delivery)
{
	ws_env_setup(_metadata, &self->env);
}

FIXTURE_TEARDOWN(ws_delivery)
{
	ws_env_teardown(_metadata, &self->env);
}

/*
 * A delivery releases the item's wakeup source before it copies the
 * event out; the instance's own source ("eventpoll") covers the gap, from
 * before that release to the end of the scan.
 */
TEST_F(ws_delivery, instance_source_covers_the_delivery)
{
	struct ws_env *env = &self->env;
	struct wakeup_source_stats st0, st;
	struct epoll_event ev;
	int found;

	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_ADD, env->fifo,
			 EPOLLIN | EPOLLWAKEUP | variant->mode, 42));
	fifo_fill(_metadata, env);
	found = wakeup_source_find("eventpoll", &st0);
	if (found > 1)
		SKIP(return, "another epoll instance has EPOLLWAKEUP items");
	ASSERT_EQ(1, found) TH_LOG("the instance has no wakeup source");

	ASSERT_EQ(1, epoll_wait(env->epfd, &ev, 1, 0));
	ASSERT_EQ(1, wakeup_source_find("eventpoll", &st));
	EXPECT_EQ(st0.active_count + 1, st.active_count)
		TH_LOG("the instance's source was not held across the delivery");
	EXPECT_EQ(0, st.active_time_ms);
}

/* An item deleted while its event is queued is not reported afterwards. */
TEST(del_of_a_queued_item_leaves_nothing_to_report)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct pollfd pfd = { .events = POLLIN };
	int epfd, efd;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, epfd);
	efd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, efd);
	ASSERT_EQ(0, epoll_ctl(epfd, EPOLL_CTL_ADD, efd, &ev));
	pfd.fd = epfd;
	ASSERT_EQ(1, poll(&pfd, 1, 0));

	ASSERT_EQ(0, epoll_ctl(epfd, EPOLL_CTL_DEL, efd, NULL));
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_EQ(0, epoll_wait(epfd, &ev, 1, 0))
		TH_LOG("the deleted item was reported");
	close(efd);
	close(epfd);
}

/*
 * A scan that finds a queued item with EPOLLWAKEUP no longer ready
 * releases its source, so that a blocked wakeup_count read completes, and
 * keeps it registered: a new event holds it again. epoll_wait() is
 * epoll_wakeup_abi_test's; here the scans of poll(2) of the epoll fd and
 * of an epoll fd that watches it. (The release by close, DEL and MOD is
 * epoll_wakeup_abi_test's; that they unregister the source is
 * wakeup_source's.)
 */
FIXTURE(ws_release) {
	struct ws_env env;	/* FIFO target, epoll fd, pending read */
};

enum {
	/* The FIFO drained, a scan finds the item no longer ready: */
	RELEASE_BY_POLL,	/* poll(2) of the epoll fd */
	RELEASE_BY_NESTED,	/* an epoll fd watching this one */
};

FIXTURE_VARIANT(ws_release) {
	int action;		/* RELEASE_BY_*: which scan finds it drained */
};

FIXTURE_VARIANT_ADD(ws_release, poll_of_epfd_with_drained_item) {
	.action = RELEASE_BY_POLL,
};

FIXTURE_VARIANT_ADD(ws_release, nested_epoll_with_drained_item) {
	.action = RELEASE_BY_NESTED,
};

FIXTURE_SETUP(ws_release)
{
	ws_env_setup(_metadata, &self->env);
}

FIXTURE_TEARDOWN(ws_release)
{
	ws_env_teardown(_metadata, &self->env);
}

TEST_F(ws_release, releasing_queued_item_unblocks_wakeup_count)
{
	struct ws_env *env = &self->env;
	struct pollfd pfd = { .events = POLLIN };
	struct epoll_event ev;
	int eventpoll, outer;

	eventpoll = wakeup_source_find("eventpoll", NULL);
	ASSERT_LE(0, eventpoll);
	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_ADD, env->fifo,
			 EPOLLIN | EPOLLWAKEUP, 5));
	fifo_fill(_metadata, env);
	expect_held_up(_metadata, env);

	fifo_drain(_metadata, env);
	switch (variant->action) {
	case RELEASE_BY_POLL:
		pfd.fd = env->epfd;
		ASSERT_EQ(0, poll(&pfd, 1, 0));
		break;
	case RELEASE_BY_NESTED:
		outer = epoll_create1(EPOLL_CLOEXEC);
		ASSERT_LE(0, outer);
		ASSERT_EQ(0, ctl(outer, EPOLL_CTL_ADD, env->epfd, EPOLLIN, 6));
		ASSERT_EQ(0, epoll_wait(outer, &ev, 1, 0));
		close(outer);
		break;
	}

	expect_not_held_up(_metadata, env);
	EXPECT_EQ(1, wakeup_source_find(env->name, NULL));
	/* The epoll instance's own source goes only with the instance. */
	EXPECT_EQ(eventpoll + 1, wakeup_source_find("eventpoll", NULL));

	/* A new event queues the item, and holds the source, again. */
	fifo_fill(_metadata, env);
	expect_held_up(_metadata, env);
	ASSERT_EQ(1, epoll_wait(env->epfd, &ev, 1, 0));
	EXPECT_EQ(5, ev.data.u64);
}

/*
 * Readiness of the epoll file itself and the waking of its waiters: the
 * paths that queue an item (the poll callback, EPOLL_CTL_ADD and
 * EPOLL_CTL_MOD of a ready target) must wake a thread blocked in
 * epoll_wait() on the instance and one blocked in poll(2) on the epoll
 * file, and poll(2) on the epoll file reports EPOLLIN | EPOLLRDNORM,
 * nothing else, exactly while an item has an event it asks for.
 *
 *   waiter thread:  epoll_wait(epfd, 10 s)  or  poll(epfd, POLLIN, 10 s)
 *   main thread:    ~100 ms later, make the eventfd item ready by
 *                   write(efd) / EPOLL_CTL_ADD of a ready efd /
 *                   EPOLL_CTL_MOD of an idle item to a ready mask
 *
 * The waiter must return well before its timeout: a kernel that queues
 * the item without waking anybody leaves it asleep for the full 10 s.
 */
enum ready_trigger { TRIGGER_WRITE, TRIGGER_ADD, TRIGGER_MOD };
enum ready_waiter { WAITER_EPOLL_WAIT, WAITER_POLL };

FIXTURE(waiter) {
	int epfd;
	int efd;
};

FIXTURE_VARIANT(waiter) {
	enum ready_trigger trigger;
	enum ready_waiter waiter;
};

FIXTURE_VARIANT_ADD(waiter, write_wakes_epoll_wait) {
	.trigger = TRIGGER_WRITE, .waiter = WAITER_EPOLL_WAIT,
};

FIXTURE_VARIANT_ADD(waiter, write_wakes_poll_of_epfd) {
	.trigger = TRIGGER_WRITE, .waiter = WAITER_POLL,
};

FIXTURE_VARIANT_ADD(waiter, add_of_ready_fd_wakes_epoll_wait) {
	.trigger = TRIGGER_ADD, .waiter = WAITER_EPOLL_WAIT,
};

FIXTURE_VARIANT_ADD(waiter, add_of_ready_fd_wakes_poll_of_epfd) {
	.trigger = TRIGGER_ADD, .waiter = WAITER_POLL,
};

FIXTURE_VARIANT_ADD(waiter, mod_to_ready_mask_wakes_epoll_wait) {
	.trigger = TRIGGER_MOD, .waiter = WAITER_EPOLL_WAIT,
};

FIXTURE_VARIANT_ADD(waiter, mod_to_ready_mask_wakes_poll_of_epfd) {
	.trigger = TRIGGER_MOD, .waiter = WAITER_POLL,
};

#define WAITER_TIMEOUT_MS 10000

struct waiter_args {
	int epfd;
	enum ready_waiter waiter;
	int result;		/* what the waiter's call returned */
	int64_t waited_ms;	/* how long it blocked */
	short revents;
};

static void *waiter_fn(void *arg)
{
	struct waiter_args *a = arg;
	struct epoll_event ev;
	struct pollfd pfd = { .fd = a->epfd, .events = POLLIN };
	int64_t start = __monotonic_ms();

	if (a->waiter == WAITER_EPOLL_WAIT) {
		a->result = epoll_wait(a->epfd, &ev, 1, WAITER_TIMEOUT_MS);
	} else {
		a->result = poll(&pfd, 1, WAITER_TIMEOUT_MS);
		a->revents = pfd.revents;
	}
	a->waited_ms = __monotonic_ms() - start;
	return NULL;
}

FIXTURE_SETUP(waiter)
{
	self->epfd = epoll_create1(0);
	ASSERT_LE(0, self->epfd);
	self->efd = eventfd(0, EFD_NONBLOCK);
	ASSERT_LE(0, self->efd);
}

FIXTURE_TEARDOWN(waiter)
{
	close(self->efd);
	close(self->epfd);
}

TEST_F(waiter, queued_item_wakes_the_waiter)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct waiter_args a = { .epfd = self->epfd, .waiter = variant->waiter };
	pthread_t thread;
	uint64_t one = 1;

	if (variant->trigger == TRIGGER_WRITE)
		ASSERT_EQ(0, epoll_ctl(self->epfd, EPOLL_CTL_ADD, self->efd, &ev));
	if (variant->trigger == TRIGGER_MOD) {
		ev.events = 0;	/* idle: no event asked for */
		ASSERT_EQ(0, epoll_ctl(self->epfd, EPOLL_CTL_ADD, self->efd, &ev));
		ev.events = EPOLLIN;
	}
	if (variant->trigger != TRIGGER_WRITE)
		ASSERT_EQ(sizeof(one), write(self->efd, &one, sizeof(one)));

	ASSERT_EQ(0, pthread_create(&thread, NULL, waiter_fn, &a));
	usleep(100 * 1000);	/* let the waiter block */
	switch (variant->trigger) {
	case TRIGGER_WRITE:
		ASSERT_EQ(sizeof(one), write(self->efd, &one, sizeof(one)));
		break;
	case TRIGGER_ADD:
		ASSERT_EQ(0, epoll_ctl(self->epfd, EPOLL_CTL_ADD, self->efd, &ev));
		break;
	case TRIGGER_MOD:
		ASSERT_EQ(0, epoll_ctl(self->epfd, EPOLL_CTL_MOD, self->efd, &ev));
		break;
	}
	ASSERT_EQ(0, pthread_join(thread, NULL));

	EXPECT_EQ(1, a.result);
	EXPECT_GT(WAITER_TIMEOUT_MS / 2, a.waited_ms)
		TH_LOG("the waiter slept %lld ms: the queued item did not wake it",
		       (long long)a.waited_ms);
	if (variant->waiter == WAITER_POLL)
		EXPECT_EQ(POLLIN, a.revents);
}

TEST(poll_of_epfd_reports_pollin_rdnorm_only_while_an_item_is_ready)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct pollfd pfd;
	uint64_t v = 1;
	int epfd, efd;

	epfd = epoll_create1(0);
	ASSERT_LE(0, epfd);
	efd = eventfd(0, EFD_NONBLOCK);
	ASSERT_LE(0, efd);
	ASSERT_EQ(0, epoll_ctl(epfd, EPOLL_CTL_ADD, efd, &ev));

	pfd = (struct pollfd){ .fd = epfd,
			       .events = POLLIN | POLLRDNORM | POLLOUT | POLLPRI };
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	ASSERT_EQ(sizeof(v), write(efd, &v, sizeof(v)));
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_EQ(POLLIN | POLLRDNORM, pfd.revents);
	/* Asked for POLLIN alone, it reports POLLIN alone. */
	pfd.events = POLLIN;
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_EQ(POLLIN, pfd.revents);
	/* Drained: the item is still queued, but no longer ready. */
	ASSERT_EQ(sizeof(v), read(efd, &v, sizeof(v)));
	pfd.revents = 0;
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_EQ(0, epoll_wait(epfd, &ev, 1, 0));
	/* Ready again: the poll above must not have lost the item. */
	ASSERT_EQ(sizeof(v), write(efd, &v, sizeof(v)));
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_EQ(1, epoll_wait(epfd, &ev, 1, 0));
	close(efd);
	close(epfd);
}

/*
 * Wakeup paths. One wakeup of a file can cascade through every epoll
 * instance that watches it, directly or nested; the kernel bounds the
 * number of such paths by their length, and a path of three links (file
 * -> epoll -> epoll -> epoll) may be taken by at most 100 instances. The
 * ADD that would make the 101st fails with EINVAL and registers nothing.
 *
 *	top --> mid --> ep[0..100] --> pipe
 */
#define THREE_LINK_PATHS 100

TEST(add_beyond_wakeup_path_limit_fails)
{
	int top, mid, pipefd[2], ep[THREE_LINK_PATHS + 1];
	int i, n = 0;

	top = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, top);
	mid = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, mid);
	ASSERT_EQ(0, ctl(top, EPOLL_CTL_ADD, mid, EPOLLIN, 0));
	ASSERT_EQ(0, pipe2(pipefd, O_CLOEXEC));
	for (n = 0; n <= THREE_LINK_PATHS; n++) {
		ep[n] = epoll_create1(EPOLL_CLOEXEC);
		ASSERT_LE(0, ep[n]);
		ASSERT_EQ(0, ctl(mid, EPOLL_CTL_ADD, ep[n], EPOLLIN, n));
	}
	for (i = 0; i < THREE_LINK_PATHS; i++)
		ASSERT_EQ(0, ctl(ep[i], EPOLL_CTL_ADD, pipefd[0], EPOLLIN, i));

	EXPECT_EQ(-1, ctl(ep[i], EPOLL_CTL_ADD, pipefd[0], EPOLLIN, i));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-ENOENT, fdinfo_epoll_item(ep[i], pipefd[0], NULL, NULL));
	/* One path fewer, and the same ADD succeeds. */
	ASSERT_EQ(0, ctl(ep[0], EPOLL_CTL_DEL, pipefd[0], 0, 0));
	EXPECT_EQ(0, ctl(ep[i], EPOLL_CTL_ADD, pipefd[0], EPOLLIN, i));
	EXPECT_EQ(0, fdinfo_epoll_item(ep[i], pipefd[0], NULL, NULL));

	for (i = 0; i < n; i++)
		close(ep[i]);
	close(pipefd[0]);
	close(pipefd[1]);
	close(mid);
	close(top);
}

/*
 * IORING_OP_EPOLL_CTL in an io_uring link. It takes its arguments from
 * fd, len, off and addr of the SQE and uses no buffer: a buffer index or a
 * splice fd fails the request with EINVAL before it does anything. A
 * request that fails, at preparation or when it runs, cancels the request
 * linked after it (IOSQE_IO_LINK); one that succeeds lets it run.
 */
FIXTURE(uring_link) {
	struct ring ring;
	int epfd;
	int pipefd[2];
};

FIXTURE_VARIANT(uring_link) {
	int op;
	bool registered;	/* the pipe is in the instance before */
	uint16_t buf_index;
	int32_t splice_fd_in;
	int expected;		/* result of the EPOLL_CTL request */
};

FIXTURE_VARIANT_ADD(uring_link, add) {
	.op = EPOLL_CTL_ADD,
	.expected = 0,
};

FIXTURE_VARIANT_ADD(uring_link, add_registered) {
	.op = EPOLL_CTL_ADD,
	.registered = true,
	.expected = -EEXIST,
};

FIXTURE_VARIANT_ADD(uring_link, del) {
	.op = EPOLL_CTL_DEL,
	.registered = true,
	.expected = 0,
};

FIXTURE_VARIANT_ADD(uring_link, del_unregistered) {
	.op = EPOLL_CTL_DEL,
	.expected = -ENOENT,
};

FIXTURE_VARIANT_ADD(uring_link, add_with_buf_index) {
	.op = EPOLL_CTL_ADD,
	.buf_index = 1,
	.expected = -EINVAL,
};

FIXTURE_VARIANT_ADD(uring_link, add_with_splice_fd_in) {
	.op = EPOLL_CTL_ADD,
	.splice_fd_in = 1,
	.expected = -EINVAL,
};

FIXTURE_SETUP(uring_link)
{
	int ret;

	self->ring.fd = -1;
	self->pipefd[0] = -1;
	self->pipefd[1] = -1;
	self->epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->epfd);
	ASSERT_EQ(0, pipe2(self->pipefd, O_CLOEXEC));
	/* The sysctl exists whenever the kernel has io_uring. */
	if (access("/proc/sys/kernel/io_uring_disabled", F_OK))
		SKIP(return, "kernel built without io_uring");
	ret = ring_init(&self->ring);
	if (ret == -EPERM)
		SKIP(return, "io_uring disabled (kernel.io_uring_disabled)");
	ASSERT_EQ(0, ret);
}

FIXTURE_TEARDOWN(uring_link)
{
	ring_exit(&self->ring);
	if (self->pipefd[0] >= 0) {
		close(self->pipefd[0]);
		close(self->pipefd[1]);
	}
	close(self->epfd);
}

TEST_F(uring_link, failed_epoll_ctl_cancels_the_linked_request)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 2 };
	int res[2] = { INT_MIN, INT_MIN };
	struct io_uring_sqe *sqe;
	uint64_t tag, first;
	bool registered;
	int i, n;

	if (variant->registered)
		ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->pipefd[0],
				 EPOLLIN, 1));
	/*
	 * A request before, whose arguments a request that fails at
	 * preparation must not run with (io_uring reuses requests).
	 */
	ASSERT_EQ(0, ring_epoll_ctl(&self->ring, self->epfd, EPOLL_CTL_ADD,
				    self->pipefd[1], &ev, false));
	sqe = ring_get_sqe(&self->ring);
	first = sqe->user_data;
	ring_prep_epoll_ctl(sqe, self->epfd, variant->op, self->pipefd[0],
			    (uintptr_t)&ev);
	sqe->flags = IOSQE_IO_LINK;
	sqe->buf_index = variant->buf_index;
	sqe->splice_fd_in = variant->splice_fd_in;
	ring_get_sqe(&self->ring)->opcode = IORING_OP_NOP;
	ASSERT_EQ(0, ring_submit(&self->ring, 2));

	for (n = 0; n < 2; n++) {
		int r = ring_reap(&self->ring, &tag);

		ASSERT_NE(INT_MIN, r);
		i = tag - first;
		ASSERT_TRUE(i == 0 || i == 1) TH_LOG("user_data %llu",
						     (unsigned long long)tag);
		res[i] = r;
	}
	EXPECT_EQ(variant->expected, res[0]);
	EXPECT_EQ(variant->expected ? -ECANCELED : 0, res[1]);

	/* A failed request changed nothing. */
	if (variant->expected)
		registered = variant->registered;
	else
		registered = variant->op == EPOLL_CTL_ADD;
	EXPECT_EQ(registered ? 0 : -ENOENT,
		  fdinfo_epoll_item(self->epfd, self->pipefd[0], NULL, NULL));
}

/*
 * Events that arrive while epoll_wait() copies a scan of the ready list
 * out go to the overflow list, and the end of the scan queues them. The
 * holder's epoll_wait() stops in the copy of the FIFO's event; meanwhile
 * the FIFO and an eventfd become ready (again). The next epoll_wait()
 * reports each of them once. The exception is a one-shot item, which its
 * delivery disarmed: it is neither queued nor holding its wakeup source.
 * Where there are no wakeup sources to hold (no CONFIG_PM_SLEEP, or no
 * CAP_BLOCK_SUSPEND), only what is reported is checked.
 */
enum { DATA_FIFO = 1, DATA_EFD, NR_DATA };

FIXTURE(scan_overflow) {
	struct ws_env env;	/* FIFO target, epoll fd */
	int efd;		/* ready only during the scan */
	bool ws;		/* the FIFO's item gets a wakeup source */
};

FIXTURE_VARIANT(scan_overflow) {
	uint32_t mode;		/* of the FIFO's item */
	bool fifo_queued;	/* the FIFO's item is queued after the scan */
};

FIXTURE_VARIANT_ADD(scan_overflow, level_triggered) {
	.mode = 0,
	.fifo_queued = true,
};

FIXTURE_VARIANT_ADD(scan_overflow, edge_triggered) {
	.mode = EPOLLET,
	.fifo_queued = true,
};

FIXTURE_VARIANT_ADD(scan_overflow, oneshot) {
	.mode = EPOLLONESHOT,
	.fifo_queued = false,
};

FIXTURE_SETUP(scan_overflow)
{
	self->efd = -1;
	self->env.epfd = -1;
	self->env.fifo = -1;
	self->env.reader.pid = 0;
	self->ws = wakeup_count_supported() && wakeup_sources_supported() &&
		   cap_is_effective(CAP_BLOCK_SUSPEND) == 1;
	if (self->ws)
		ws_env_setup(_metadata, &self->env);
	else
		ws_env_open(_metadata, &self->env);
	self->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, self->efd);
}

FIXTURE_TEARDOWN(scan_overflow)
{
	if (self->efd >= 0)
		close(self->efd);
	ws_env_teardown(_metadata, &self->env);
}

TEST_F(scan_overflow, events_during_a_scan_are_queued_once)
{
	struct ws_env *env = &self->env;
	struct wakeup_source_stats st;
	struct epoll_event ev[8];
	bool seen[NR_DATA] = { false };
	struct mtx_holder h;
	int i, n, ret;

	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_ADD, env->fifo,
			 EPOLLIN | (self->ws ? EPOLLWAKEUP : 0) | variant->mode,
			 DATA_FIFO));
	ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_ADD, self->efd, EPOLLIN,
			 DATA_EFD));
	fifo_fill(_metadata, env);

	/* The sysctl exists whenever the kernel has userfaultfd. */
	if (access("/proc/sys/vm/unprivileged_userfaultfd", F_OK))
		SKIP(return, "kernel built without userfaultfd");
	ret = mtx_holder_start(&h, env->epfd);
	if (ret == -EPERM)
		SKIP(return, "userfaultfd may not serve kernel faults");
	ASSERT_EQ(0, ret);
	fifo_fill(_metadata, env);
	eventfd_signal_once(_metadata, self->efd);
	EXPECT_EQ(1, mtx_holder_release(&h));

	if (self->ws) {
		st = ws_stats(_metadata, env);
		if (variant->fifo_queued)
			EXPECT_LT(0, st.active_time_ms)
				TH_LOG("the queued item does not hold its wakeup source");
		if (!variant->fifo_queued)
			EXPECT_EQ(0, st.active_time_ms)
				TH_LOG("the disarmed item still holds its wakeup source");
	}

	n = epoll_wait(env->epfd, ev, ARRAY_SIZE(ev), 0);
	ASSERT_LE(0, n);
	for (i = 0; i < n; i++) {
		/* The holder's item went with its eventfd. */
		ASSERT_GT(NR_DATA, ev[i].data.u64);
		ASSERT_LT(0, ev[i].data.u64);
		EXPECT_FALSE(seen[ev[i].data.u64])
			TH_LOG("item %llu reported twice",
			       (unsigned long long)ev[i].data.u64);
		seen[ev[i].data.u64] = true;
	}
	EXPECT_TRUE(seen[DATA_EFD])
		TH_LOG("the event that arrived during the scan was lost");
	EXPECT_EQ(variant->fifo_queued, seen[DATA_FIFO]);
}

/* A thread asleep in epoll_wait() (epoll_pwait(): every arch has it). */
struct sleeper {
	int epfd;
	pthread_t thread;
	atomic_int tid;
	int result;		/* events, or -errno */
};

static void *sleeper_fn(void *arg)
{
	struct sleeper *s = arg;
	struct epoll_event ev;
	long n;

	atomic_store(&s->tid, syscall(__NR_gettid));
	n = syscall(__NR_epoll_pwait, s->epfd, &ev, 1, WAITER_TIMEOUT_MS,
		    NULL, 0);
	s->result = n < 0 ? -errno : n;
	return NULL;
}

static void sleeper_start(struct __test_metadata *_metadata,
			  struct sleeper *s, int epfd)
{
	s->epfd = epfd;
	atomic_store(&s->tid, 0);
	ASSERT_EQ(0, pthread_create(&s->thread, NULL, sleeper_fn, s));
	while (!atomic_load(&s->tid))
		usleep(1000);
	ASSERT_TRUE(task_sleeps(atomic_load(&s->tid), 'S', __NR_epoll_pwait,
				WAITER_TIMEOUT_MS / 2))
		TH_LOG("the waiter did not go to sleep in epoll_pwait()");
}

/*
 * epoll_wait() sleepers of one instance are woken one at a time. A
 * level-triggered item stays queued after its delivery, so the end of
 * that scan wakes the next sleeper, which gets the event too.
 */
TEST(level_triggered_event_wakes_every_waiter_in_turn)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct sleeper s[2];
	int epfd, efd, i;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, epfd);
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, efd);
	ASSERT_EQ(0, epoll_ctl(epfd, EPOLL_CTL_ADD, efd, &ev));
	for (i = 0; i < 2; i++)
		sleeper_start(_metadata, &s[i], epfd);

	eventfd_signal_once(_metadata, efd);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, pthread_join(s[i].thread, NULL));
		EXPECT_EQ(1, s[i].result)
			TH_LOG("waiter %d slept through the queued event", i);
	}
	close(efd);
	close(epfd);
}

/* voluntary_ctxt_switches of thread @tid of this process, or -1. */
static long voluntary_switches(int tid)
{
	static const char field[] = "\nvoluntary_ctxt_switches:";
	char buf[4096], *p;

	if (!__task_file(getpid(), tid, "status", buf, sizeof(buf)))
		return -1;
	p = strstr(buf, field);
	return p ? strtol(p + strlen(field), NULL, 10) : -1;
}

/*
 * An edge-triggered event goes to one sleeper, and the scan that delivers
 * it leaves nothing queued, so it wakes nobody else: the other sleeper is
 * not even woken to find nothing (its voluntary context switches stay
 * put). A real event then wakes it.
 */
TEST(edge_triggered_event_wakes_one_waiter_only)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
	int epfd, efd, i, taker = -1, other;
	struct sleeper s[2];
	int64_t deadline;
	long before[2];

	epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, epfd);
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, efd);
	ASSERT_EQ(0, epoll_ctl(epfd, EPOLL_CTL_ADD, efd, &ev));
	for (i = 0; i < 2; i++)
		sleeper_start(_metadata, &s[i], epfd);
	for (i = 0; i < 2; i++) {
		before[i] = voluntary_switches(atomic_load(&s[i].tid));
		ASSERT_LE(0, before[i]);
	}

	eventfd_signal_once(_metadata, efd);
	deadline = __monotonic_ms() + WAITER_TIMEOUT_MS / 2;
	while (taker < 0 && __monotonic_ms() < deadline) {
		for (i = 0; i < 2 && taker < 0; i++)
			if (!pthread_tryjoin_np(s[i].thread, NULL))
				taker = i;
		usleep(1000);
	}
	ASSERT_LE(0, taker)
		TH_LOG("neither waiter took the event");
	EXPECT_EQ(1, s[taker].result);
	other = !taker;
	usleep(100 * 1000);	/* time for a wakeup to be slept off */
	EXPECT_EQ(before[other], voluntary_switches(atomic_load(&s[other].tid)))
		TH_LOG("the other waiter was woken with nothing to report");

	eventfd_signal_once(_metadata, efd);
	ASSERT_EQ(0, pthread_join(s[other].thread, NULL));
	EXPECT_EQ(1, s[other].result)
		TH_LOG("the other waiter slept through the second event");
	close(efd);
	close(epfd);
}

/* A thread asleep in poll(2) of an epoll fd. */
struct poller {
	int epfd;
	pthread_t thread;
	atomic_int tid;
	int result;		/* poll()'s */
};

static void *poller_fn(void *arg)
{
	struct poller *p = arg;
	struct pollfd pfd = { .fd = p->epfd, .events = POLLIN };

	atomic_store(&p->tid, syscall(__NR_gettid));
	p->result = poll(&pfd, 1, WAITER_TIMEOUT_MS);
	return NULL;
}

/*
 * The pollers of an epoll fd are woken when an item is queued, not by the
 * ADD, MOD or DEL of an item with nothing to report: the poller's
 * voluntary context switches stay put. A queued item then wakes it.
 */
TEST(ctl_of_an_idle_item_wakes_no_poller)
{
	struct poller p;
	int epfd, efd, i;
	long before;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, epfd);
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, efd);
	p.epfd = epfd;
	atomic_store(&p.tid, 0);
	ASSERT_EQ(0, pthread_create(&p.thread, NULL, poller_fn, &p));
	while (!atomic_load(&p.tid))
		usleep(1000);
	ASSERT_TRUE(task_sleeps(atomic_load(&p.tid), 'S', -1,
				WAITER_TIMEOUT_MS / 2))
		TH_LOG("the poller did not go to sleep");
	before = voluntary_switches(atomic_load(&p.tid));
	ASSERT_LE(0, before);

	for (i = 0; i < 10; i++) {
		ASSERT_EQ(0, ctl(epfd, EPOLL_CTL_ADD, efd, EPOLLIN, i));
		ASSERT_EQ(0, ctl(epfd, EPOLL_CTL_MOD, efd, EPOLLIN | EPOLLPRI, i));
		ASSERT_EQ(0, ctl(epfd, EPOLL_CTL_DEL, efd, 0, 0));
	}
	usleep(100 * 1000);	/* time for a wakeup to be slept off */
	EXPECT_EQ(before, voluntary_switches(atomic_load(&p.tid)))
		TH_LOG("the poller was woken with nothing to report");

	ASSERT_EQ(0, ctl(epfd, EPOLL_CTL_ADD, efd, EPOLLIN, 0));
	eventfd_signal_once(_metadata, efd);
	ASSERT_EQ(0, pthread_join(p.thread, NULL));
	EXPECT_EQ(1, p.result)
		TH_LOG("the poller slept through the queued item");
	close(efd);
	close(epfd);
}

/*
 * EPOLLEXCLUSIVE: a wakeup of the target stops at the first instance,
 * in the order they were added, that watches it exclusively and has a
 * waiter; the others do not even queue the event. An instance without a
 * waiter queues the event and passes the wakeup on. The wakeups are
 * those of the three keys that count: EPOLLIN (an eventfd written),
 * EPOLLOUT (a full pipe read from, a sync wakeup) and none (a signalfd).
 */
enum excl_target { EXCL_EVENTFD, EXCL_PIPE, EXCL_SIGNALFD };

FIXTURE(exclusive_wake) {
	int epfd[2];
	int fd;			/* the target */
	int other;		/* the pipe's read end, or -1 */
};

FIXTURE_VARIANT(exclusive_wake) {
	enum excl_target target;
	uint32_t events;
};

FIXTURE_VARIANT_ADD(exclusive_wake, eventfd_written) {
	.target = EXCL_EVENTFD,
	.events = EPOLLIN,
};

FIXTURE_VARIANT_ADD(exclusive_wake, full_pipe_read) {
	.target = EXCL_PIPE,
	.events = EPOLLOUT,
};

FIXTURE_VARIANT_ADD(exclusive_wake, signalfd_signalled) {
	.target = EXCL_SIGNALFD,
	.events = EPOLLIN,
};

FIXTURE_SETUP(exclusive_wake)
{
	static char page[4096];
	sigset_t set;
	int p[2], i;

	self->other = -1;
	switch (variant->target) {
	case EXCL_EVENTFD:
		self->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		break;
	case EXCL_PIPE:
		ASSERT_EQ(0, pipe2(p, O_NONBLOCK | O_CLOEXEC));
		self->fd = p[1];
		self->other = p[0];
		while (write(self->fd, page, sizeof(page)) > 0)
			;
		ASSERT_EQ(EAGAIN, errno);
		break;
	case EXCL_SIGNALFD:
		/* Blocked in every thread: the waiters inherit the mask. */
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		ASSERT_EQ(0, pthread_sigmask(SIG_BLOCK, &set, NULL));
		self->fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
		break;
	}
	ASSERT_LE(0, self->fd);
	for (i = 0; i < 2; i++) {
		self->epfd[i] = epoll_create1(EPOLL_CLOEXEC);
		ASSERT_LE(0, self->epfd[i]);
		ASSERT_EQ(0, ctl(self->epfd[i], EPOLL_CTL_ADD, self->fd,
				 variant->events | EPOLLEXCLUSIVE, i));
	}
}

FIXTURE_TEARDOWN(exclusive_wake)
{
	close(self->epfd[0]);
	close(self->epfd[1]);
	close(self->fd);
	if (self->other >= 0)
		close(self->other);
}

/* Wake the target's waiters: @fd is the target, @other the pipe's read end. */
static void exclusive_wake_trigger(struct __test_metadata *_metadata,
				   enum excl_target target, int fd, int other)
{
	static char page[4096];

	switch (target) {
	case EXCL_EVENTFD:
		eventfd_signal_once(_metadata, fd);
		break;
	case EXCL_PIPE:
		ASSERT_EQ(sizeof(page), read(other, page, sizeof(page)));
		break;
	case EXCL_SIGNALFD:
		ASSERT_EQ(0, kill(getpid(), SIGUSR1));
		break;
	}
}

TEST_F(exclusive_wake, first_instance_with_a_waiter_takes_the_event)
{
	struct epoll_event ev;
	struct sleeper s;

	sleeper_start(_metadata, &s, self->epfd[0]);
	exclusive_wake_trigger(_metadata, variant->target, self->fd,
			       self->other);
	ASSERT_EQ(0, pthread_join(s.thread, NULL));
	EXPECT_EQ(1, s.result)
		TH_LOG("the waiter of the first instance was not woken");
	EXPECT_EQ(0, epoll_wait(self->epfd[1], &ev, 1, 0))
		TH_LOG("the wakeup went on to the second instance");
}

TEST_F(exclusive_wake, instance_without_a_waiter_passes_the_wakeup_on)
{
	struct epoll_event ev;
	int i;

	exclusive_wake_trigger(_metadata, variant->target, self->fd,
			       self->other);
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(1, epoll_wait(self->epfd[i], &ev, 1, 0))
			TH_LOG("instance %d did not queue the event", i);
		EXPECT_EQ(i, ev.data.u64);
	}
}

/*
 * What the release paths free, seen in the per-cache object counts of
 * /proc/slabinfo: a release that forgets a kfree_rcu() or a reference
 * leaks an object per call, which nothing an epoll call returns shows.
 * Objects freed by RCU count until their grace period ends, those KASAN
 * holds in quarantine until it lets them go (a shrink of the cache does)
 * and a CPU's current slabs count whole, so a cache settles within a few
 * slabs of where it was; an object leaked per call leaves it a call's
 * count higher.
 */
#define SLABINFO_PATH "/proc/slabinfo"
#define SLAB_SYSFS_PATH "/sys/kernel/slab"
#define SLAB_CACHES_MAX 1024
#define SLAB_OPS 4000
#define SLAB_SETTLE_MS 10000

struct slab_counts {
	int n;
	struct {
		char name[64];
		long active;	/* objects in use */
	} cache[SLAB_CACHES_MAX];
};

static struct slab_counts slab_before, slab_now;

static int slab_counts_read(struct slab_counts *s)
{
	char line[512];
	long total = 0;
	FILE *f;

	f = fopen(SLABINFO_PATH, "re");
	if (!f)
		return -errno;
	s->n = 0;
	while (s->n < SLAB_CACHES_MAX && fgets(line, sizeof(line), f)) {
		if (line[0] == '#' ||
		    sscanf(line, "%63s %ld", s->cache[s->n].name,
			   &s->cache[s->n].active) != 2)
			continue;
		total += s->cache[s->n].active;
		s->n++;
	}
	fclose(f);
	/* Without CONFIG_SLUB_DEBUG the kernel counts no objects in use. */
	return total > 0 ? 0 : -ENODATA;
}

/*
 * vmalloc frees lazily: a vmap_area stays in use until a purge that no
 * interface asks for. With VMAP_STACK (arm64's KASAN kernel has it, the
 * x86-64 one not) every fork leaves one behind for its kernel stack,
 * whatever epoll did.
 */
static bool slab_freed_lazily(const char *name)
{
	return !strcmp(name, "vmap_area");
}

/* The cache that grew most from @before to @now, and by how much. */
static long slab_largest_growth(const struct slab_counts *before,
				const struct slab_counts *now,
				const char **name)
{
	long growth, largest = LONG_MIN;
	int i, j;

	for (i = 0; i < now->n; i++) {
		if (slab_freed_lazily(now->cache[i].name))
			continue;
		growth = now->cache[i].active;
		for (j = 0; j < before->n; j++) {
			if (!strcmp(before->cache[j].name, now->cache[i].name)) {
				growth -= before->cache[j].active;
				break;
			}
		}
		if (growth > largest) {
			largest = growth;
			*name = now->cache[i].name;
		}
	}
	return largest;
}

FIXTURE(frees) {
	struct ws_env env;	/* directory and epoll fd, if the test opens them */
	char path[sizeof(((struct ws_env *)0)->dir) + NAME_MAX + 2];
};

FIXTURE_SETUP(frees)
{
	int ret;

	self->env.epfd = -1;
	self->env.fifo = -1;
	self->env.reader.pid = 0;
	self->env.dir[0] = '\0';
	self->path[0] = '\0';
	ret = slab_counts_read(&slab_before);

	if (ret == -EACCES)
		SKIP(return, "%s is readable by root only", SLABINFO_PATH);
	if (ret == -ENODATA)
		SKIP(return, "%s counts no objects: kernel without CONFIG_SLUB_DEBUG",
		     SLABINFO_PATH);
	ASSERT_EQ(0, ret)
		TH_LOG("%s: %s", SLABINFO_PATH, strerror(-ret));
}

FIXTURE_TEARDOWN(frees)
{
	if (self->path[0])
		unlink(self->path);
	if (self->env.dir[0])
		ws_env_teardown(_metadata, &self->env);
}

/*
 * Shrink cache @name: KASAN then frees what it holds in quarantine. Only
 * a help: the caller reads the counts again, whatever this returns.
 */
static int slab_shrink(const char *name)
{
	char path[128];
	int fd, ret;

	snprintf(path, sizeof(path), SLAB_SYSFS_PATH "/%s/shrink", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = write(fd, "1", 1) == 1 ? 0 : -errno;
	close(fd);
	return ret;
}

/* Fail if a cache stays @ops / 2 objects above where it was. */
static void slab_expect_settled(struct __test_metadata *_metadata, long ops)
{
	int64_t deadline = __monotonic_ms() + SLAB_SETTLE_MS;
	const char *name = "";
	long growth;

	do {
		ASSERT_EQ(0, slab_counts_read(&slab_now));
		growth = slab_largest_growth(&slab_before, &slab_now, &name);
		if (growth < ops / 2)
			return;
		slab_shrink(name);
		usleep(20 * 1000);
	} while (__monotonic_ms() < deadline);
	EXPECT_GT(ops / 2, growth)
		TH_LOG("slab cache %s holds %ld more objects %d ms after %ld releases",
		       name, growth, SLAB_SETTLE_MS, ops);
}

TEST_F(frees, close_of_an_instance_frees_it)
{
	int i, epfd;

	for (i = 0; i < SLAB_OPS; i++) {
		epfd = epoll_create1(EPOLL_CLOEXEC);
		ASSERT_LE(0, epfd);
		ASSERT_EQ(0, close(epfd));
	}
	slab_expect_settled(_metadata, SLAB_OPS);
}

TEST_F(frees, del_frees_the_item)
{
	int i, epfd, efd;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, epfd);
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, efd);
	for (i = 0; i < SLAB_OPS; i++) {
		ASSERT_EQ(0, ctl(epfd, EPOLL_CTL_ADD, efd, EPOLLIN, i))
			TH_LOG("ADD %d: %s", i, strerror(errno));
		ASSERT_EQ(0, ctl(epfd, EPOLL_CTL_DEL, efd, 0, 0))
			TH_LOG("DEL %d: %s", i, strerror(errno));
	}
	slab_expect_settled(_metadata, SLAB_OPS);
	close(efd);
	close(epfd);
}

/*
 * An instance holds a reference on the user that created it (the owner of
 * its watches budget), which its close drops. Each instance is made by a
 * child of its own under a user of its own, so that the user goes away
 * with the child unless the instance kept it. The 400 forks take 13-16 s
 * under QEMU TCG with a KASAN and lockdep kernel: more time than the
 * harness's default 30 s leaves a host that is busy with other work.
 */
#define SLAB_USER_OPS 400
#define SLAB_FIRST_UID 61000

TEST_F_TIMEOUT(frees, close_of_an_instance_drops_its_user, 120)
{
	int i, epfd, status;
	uid_t uid;
	pid_t pid;

	if (cap_is_effective(CAP_SETUID) != 1)
		SKIP(return, "needs CAP_SETUID (run as root)");
	for (i = 0; i < SLAB_USER_OPS; i++) {
		uid = SLAB_FIRST_UID + i;
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			if (setresuid(uid, uid, uid))
				_exit(2);
			epfd = epoll_create1(EPOLL_CLOEXEC);
			_exit(epfd < 0 ? 3 : 0);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
			TH_LOG("child of uid %d: status 0x%x", uid, status);
	}
	slab_expect_settled(_metadata, SLAB_USER_OPS);
}

/*
 * An ADD to an instance that another one watches checks the wakeup paths
 * of the target, listing it on a global list for the time of the check;
 * the end of the check takes it off again, so that the list head of the
 * target's items goes with its last item.
 */
TEST_F(frees, close_of_a_target_checked_for_paths_frees_its_head)
{
	int i, inner, outer, p[2];

	inner = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, inner);
	outer = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, outer);
	ASSERT_EQ(0, ctl(outer, EPOLL_CTL_ADD, inner, EPOLLIN, 0));
	for (i = 0; i < SLAB_OPS / 4; i++) {
		ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
		ASSERT_EQ(0, ctl(inner, EPOLL_CTL_ADD, p[0], EPOLLIN, i))
			TH_LOG("ADD %d: %s", i, strerror(errno));
		close(p[0]);
		close(p[1]);
	}
	slab_expect_settled(_metadata, SLAB_OPS / 4);
	close(outer);
	close(inner);
}

/*
 * A wakeup source is named after its target's dentry. A name too long to
 * be stored in the dentry is a separate, reference-counted allocation,
 * which must go with the dentry once the source has its copy. Each FIFO
 * is unlinked while open, so that its dentry goes with the last close.
 */
#define SLAB_WAKEUP_OPS 400

TEST_F(frees, close_of_a_long_named_target_frees_its_name)
{
	struct ws_env *env = &self->env;
	char *path = self->path;
	int i, fd, len;

	if (!wakeup_sources_supported())
		SKIP(return, "no " WAKEUP_CLASS_PATH
		     ": kernel without CONFIG_PM_SLEEP");
	if (cap_is_effective(CAP_BLOCK_SUSPEND) != 1)
		SKIP(return, "needs CAP_BLOCK_SUSPEND (run as root)");
	ws_env_open(_metadata, env);
	len = snprintf(path, sizeof(self->path), "%s/", env->dir);
	memset(path + len, 'n', 200);
	path[len + 200] = '\0';

	for (i = 0; i < SLAB_WAKEUP_OPS; i++) {
		ASSERT_EQ(0, mkfifo(path, 0600));
		fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, ctl(env->epfd, EPOLL_CTL_ADD, fd,
				 EPOLLIN | EPOLLWAKEUP, i))
			TH_LOG("ADD %d: %s", i, strerror(errno));
		ASSERT_EQ(0, unlink(path));
		ASSERT_EQ(0, close(fd));
	}
	slab_expect_settled(_metadata, SLAB_WAKEUP_OPS);
}

/*
 * A waiter killed while an event is ready for it returns without taking
 * the event, so an edge-triggered or oneshot item stays queued for the
 * other waiters of a shared epoll file. The test runs at a real-time
 * priority on the waiter's CPU while it queues the event and kills the
 * waiter, so the waiter, woken by the event, runs with SIGKILL pending.
 */
FIXTURE(killed_waiter) {
	int epfd;
	int efd;
};

FIXTURE_VARIANT(killed_waiter) {
	uint32_t events;
};

FIXTURE_VARIANT_ADD(killed_waiter, edge_triggered) {
	.events = EPOLLIN | EPOLLET,
};

FIXTURE_VARIANT_ADD(killed_waiter, oneshot) {
	.events = EPOLLIN | EPOLLONESHOT,
};

FIXTURE_SETUP(killed_waiter)
{
	self->epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->epfd);
	self->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, self->efd);
	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
			 variant->events, 1));
}

FIXTURE_TEARDOWN(killed_waiter)
{
	close(self->efd);
	close(self->epfd);
}

TEST_F(killed_waiter, leaves_the_event_queued)
{
	struct sched_param fifo = { .sched_priority = 1 }, other = { 0 };
	struct epoll_event ev;
	uint64_t one = 1;
	ssize_t written;
	cpu_set_t cpu;
	int status;
	pid_t pid;

	CPU_ZERO(&cpu);
	CPU_SET(sched_getcpu(), &cpu);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(cpu), &cpu));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		epoll_pwait(self->epfd, &ev, 1, WAITER_TIMEOUT_MS, NULL);
		_exit(1);
	}
	if (!process_sleeps(pid, 'S', __NR_epoll_pwait, WAITER_TIMEOUT_MS / 2)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		ASSERT_TRUE(false)
			TH_LOG("the waiter did not go to sleep in epoll_pwait()");
	}
	if (sched_setscheduler(0, SCHED_FIFO, &fifo)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		SKIP(return, "needs CAP_SYS_NICE (SCHED_FIFO): run as root");
	}
	written = write(self->efd, &one, sizeof(one));
	kill(pid, SIGKILL);
	ASSERT_EQ(0, sched_setscheduler(0, SCHED_OTHER, &other));
	ASSERT_EQ(sizeof(one), written);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	EXPECT_EQ(1, epoll_wait(self->epfd, &ev, 1, 0))
		TH_LOG("the killed waiter took the event with it");
}

/*
 * EPOLL_CTL_MOD of an item without a wakeup source has none to destroy,
 * so it waits for no RCU grace period: it costs about what an ADD and a
 * DEL of an item cost, not milliseconds. Each is counted in windows of
 * TIMED_WINDOW_MS, long against a tick (the guest's clock may be
 * jiffies), and the best of TIMED_ROUNDS windows is kept, to leave out
 * the ones the host interrupted.
 */
#define TIMED_ROUNDS 5
#define TIMED_WINDOW_MS 100

TEST(mod_without_a_wakeup_source_waits_for_no_grace_period)
{
	long mods = 0, pairs = 0, n;
	int round, epfd, efd, other;
	int64_t end;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, epfd);
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, efd);
	other = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, ctl(epfd, EPOLL_CTL_ADD, efd, EPOLLIN, 0));

	for (round = 0; round < TIMED_ROUNDS; round++) {
		end = __monotonic_ms() + TIMED_WINDOW_MS;
		for (n = 0; __monotonic_ms() < end; n++)
			ASSERT_EQ(0, ctl(epfd, EPOLL_CTL_MOD, efd,
					 n & 1 ? EPOLLIN : EPOLLIN | EPOLLPRI, n));
		if (n > mods)
			mods = n;

		end = __monotonic_ms() + TIMED_WINDOW_MS;
		for (n = 0; __monotonic_ms() < end; n++) {
			ASSERT_EQ(0, ctl(epfd, EPOLL_CTL_ADD, other, EPOLLIN, n));
			ASSERT_EQ(0, ctl(epfd, EPOLL_CTL_DEL, other, 0, 0));
		}
		if (n > pairs)
			pairs = n;
	}
	EXPECT_LE(pairs, 2 * mods)
		TH_LOG("in %d ms: %ld MODs, %ld ADD+DEL pairs",
		       TIMED_WINDOW_MS, mods, pairs);
	close(other);
	close(efd);
	close(epfd);
}

/*
 * Races held open by the kernel's race window (CONFIG_EPOLL_PROOF_WINDOW,
 * fs/tests/eventpoll_window.c): a kprobe that keeps one named thread of
 * the test at a kernel function for WINDOW_MS, while the test's other
 * thread does the other side of the race. Each race then happens on every
 * run.
 *
 * The held thread spins with interrupts off, so the two sides run pinned
 * to two CPUs: the other side on CPU 0, the held thread on another. Else
 * the other side may wait in the held CPU's run queue until the window
 * closes, and a grace period may wait for that CPU for a reason of its
 * own (SRCU runs its callbacks on the boot CPU until it grows), so that
 * the race would not happen.
 */
#define WINDOW_DIR "/sys/kernel/debug/eventpoll_window"
#define WINDOW_MS 3000
/* How long the held thread may take to reach the window (TCG is slow). */
#define WINDOW_REACH_MS 10000

/* Set the window ("SYMBOL COMM MS"), or remove it (""). */
static int window_set(const char *line)
{
	int fd, ret;

	fd = open(WINDOW_DIR "/probe", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = write(fd, line, strlen(line) ?: 1) < 0 ? -errno : 0;
	close(fd);
	return ret;
}

/* Times a thread entered the window and left it, or -1 each. */
static void window_count(int *entered, int *left)
{
	char buf[32] = "";
	int fd;

	*entered = *left = -1;
	fd = open(WINDOW_DIR "/count", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (read(fd, buf, sizeof(buf) - 1) > 0)
		sscanf(buf, "%d %d", entered, left);
	close(fd);
}

/* Wait until a thread is in the window; false if none came in time. */
static bool window_entered(void)
{
	int64_t deadline = __monotonic_ms() + WINDOW_REACH_MS;
	int entered, left;

	do {
		window_count(&entered, &left);
		if (entered > 0)
			return true;
		usleep(1000);
	} while (__monotonic_ms() < deadline);
	return false;
}

struct window_thread {
	pthread_t thread;
	const char *comm;	/* the name the window waits for */
	int cpu;		/* where it runs */
	int fd;			/* written to, or closed */
	bool close;		/* close @fd instead of writing to it */
	int error;		/* errno of the write or close, or 0 */
};

/* Pin the calling thread to @cpu; 0 or -errno. */
static int pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

/* A CPU other than 0 that this thread may run on, or -1. */
static int window_cpu(void)
{
	cpu_set_t set;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set) || !CPU_ISSET(0, &set))
		return -1;
	for (cpu = 1; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set))
			return cpu;
	return -1;
}

static void *window_thread_fn(void *arg)
{
	struct window_thread *w = arg;
	uint64_t one = 1;

	prctl(PR_SET_NAME, w->comm);
	w->error = -pin_to_cpu(w->cpu);
	if (w->error)
		return NULL;
	if (w->close)
		w->error = close(w->fd) ? errno : 0;
	else
		w->error = write(w->fd, &one, sizeof(one)) < 0 ? errno : 0;
	return NULL;
}

FIXTURE(race_window) {
	int epfd;
	int efd;
	int cpu;	/* the held thread's */
};

FIXTURE_SETUP(race_window)
{
	int ret;

	self->epfd = -1;
	self->efd = -1;
	if (access(WINDOW_DIR, F_OK))
		SKIP(return, "kernel built without CONFIG_EPOLL_PROOF_WINDOW");
	if (!wakeup_sources_supported())
		SKIP(return, "kernel built without CONFIG_PM_SLEEP");
	if (cap_is_effective(CAP_BLOCK_SUSPEND) != 1)
		SKIP(return, "needs CAP_BLOCK_SUSPEND (run as root)");
	self->cpu = window_cpu();
	if (self->cpu < 0)
		SKIP(return, "needs CPU 0 and another CPU: the held thread spins with interrupts off");
	ASSERT_EQ(0, pin_to_cpu(0));
	ret = window_set("");
	ASSERT_EQ(0, ret)
		TH_LOG("%s/probe: %s", WINDOW_DIR, strerror(-ret));
	self->epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->epfd);
	self->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, self->efd);
	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
			 EPOLLIN | EPOLLWAKEUP, 1));
}

FIXTURE_TEARDOWN(race_window)
{
	window_set("");
	if (self->efd >= 0)
		close(self->efd);
	if (self->epfd >= 0)
		close(self->epfd);
}

/*
 * A MOD that drops EPOLLWAKEUP destroys the item's wakeup source, while
 * the poll callback may be activating it on another CPU: the callback
 * holds ep->lock with interrupts off from reading epi->ws to using it, so
 * the MOD must wait for an RCU grace period before it frees the source.
 * The window holds the callback of the eventfd write in __pm_stay_awake()
 * with the source in hand; the MOD must not return before the callback
 * left it. A free before that is a use after free (KASAN reports it).
 */
TEST_F(race_window, mod_dropping_epollwakeup_waits_for_the_poll_callback)
{
	struct window_thread w = {
		.comm = "ep-window-wake", .cpu = self->cpu, .fd = self->efd,
	};
	char line[64];
	int entered, left;

	snprintf(line, sizeof(line), "__pm_stay_awake %s %d", w.comm, WINDOW_MS);
	ASSERT_EQ(0, window_set(line));
	ASSERT_EQ(0, pthread_create(&w.thread, NULL, window_thread_fn, &w));
	ASSERT_TRUE(window_entered())
		TH_LOG("the eventfd write did not reach __pm_stay_awake()");
	window_count(&entered, &left);
	EXPECT_EQ(0, left)
		TH_LOG("the callback left the window before the MOD began");

	EXPECT_EQ(0, ctl(self->epfd, EPOLL_CTL_MOD, self->efd, EPOLLIN, 2));
	window_count(&entered, &left);
	EXPECT_EQ(1, left)
		TH_LOG("MOD destroyed the wakeup source while the poll callback still used it");

	pthread_join(w.thread, NULL);
	EXPECT_EQ(0, w.error);
	EXPECT_EQ(0, wakeup_source_find("[eventfd]", NULL));
}

/*
 * The close of an epoll fd removes its items, but leaves an item whose
 * target is being released at that moment to the target's release
 * (eventpoll_release_file()); the instance then lives until that release
 * drops the item's reference, and that release must free it. The window
 * holds the close of the epoll fd in its first removal, with ep->mtx
 * held, until the eventfd's close has begun: the eventfd's release then
 * removes the item and drops the last reference. The instance has a
 * wakeup source of its own ("eventpoll") since its EPOLLWAKEUP item was
 * added, which only its free unregisters.
 */
TEST_F(race_window, close_racing_a_target_close_frees_the_instance)
{
	struct window_thread w = {
		.comm = "ep-window-close", .cpu = self->cpu, .fd = self->epfd,
		.close = true,
	};
	int before, after, entered, left;
	char line[64];

	/* The instance's source exists from the ADD of the fixture on. */
	before = wakeup_source_find("eventpoll", NULL);
	ASSERT_LT(0, before);

	snprintf(line, sizeof(line), "remove_wait_queue %s %d", w.comm, WINDOW_MS);
	ASSERT_EQ(0, window_set(line));
	self->epfd = -1;	/* the thread closes it */
	ASSERT_EQ(0, pthread_create(&w.thread, NULL, window_thread_fn, &w));
	ASSERT_TRUE(window_entered())
		TH_LOG("the close of the epoll fd did not reach remove_wait_queue()");
	window_count(&entered, &left);
	EXPECT_EQ(0, left)
		TH_LOG("the epoll fd's release left the window before the eventfd's close");
	EXPECT_EQ(0, close(self->efd));
	self->efd = -1;
	pthread_join(w.thread, NULL);
	EXPECT_EQ(0, w.error);

	after = wakeup_source_find("eventpoll", NULL);
	EXPECT_EQ(before - 1, after)
		TH_LOG("the instance was not freed: its wakeup source stayed");
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
