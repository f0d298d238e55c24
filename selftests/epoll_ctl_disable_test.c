// SPDX-License-Identifier: GPL-2.0
/*
 * epoll_ctl(EPOLL_CTL_DISABLE), as Documentation/userspace-api/epoll.rst
 * and the epoll_ctl(2) draft of this series document it:
 *
 *   For an EPOLLONESHOT item that has reported no event since it was last
 *   armed by EPOLL_CTL_ADD or EPOLL_CTL_MOD, EPOLL_CTL_DISABLE disarms
 *   the item and returns 0: no event is reported for it until
 *   EPOLL_CTL_MOD arms it again, and a pending one is dropped. If the item
 *   has reported its event (or was disabled already), it fails with EBUSY
 *   and changes nothing. It fails with EINVAL for an item without
 *   EPOLLONESHOT, and with EINVAL if the event argument is not NULL;
 *   otherwise as epoll_ctl() does. IORING_OP_EPOLL_CTL gives the same
 *   results, with sqe->addr in place of the event argument.
 *
 * Each test names the sentence it checks, and sets up one condition at a
 * time: which error wins when several apply is not part of the ABI.
 */
#define _GNU_SOURCE
#include <sys/eventfd.h>

#include "kselftest_harness.h"
#include "epoll_helpers.h"

#ifndef EPOLL_CTL_DISABLE
#define EPOLL_CTL_DISABLE 4
#endif

/* epoll_ctl() as 0 or -errno. */
static int ctl(int epfd, int op, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return epoll_ctl(epfd, op, fd, &ev) ? -errno : 0;
}

static int ctl_disable(int epfd, int fd)
{
	return epoll_ctl(epfd, EPOLL_CTL_DISABLE, fd, NULL) ? -errno : 0;
}

/* epoll_wait() without blocking: the number of events, or -errno. */
static int wait_now(int epfd, struct epoll_event *ev, int max)
{
	int n = epoll_wait(epfd, ev, max, 0);

	return n < 0 ? -errno : n;
}

static void make_ready(struct __test_metadata *_metadata, int efd)
{
	uint64_t one = 1;

	ASSERT_EQ(sizeof(one), (size_t)write(efd, &one, sizeof(one)));
}

/*
 * Whether the kernel has EPOLL_CTL_DISABLE: for an eventfd that is not
 * registered it fails with ENOENT. A kernel without it takes op 4 for one
 * that needs an event and fails with EFAULT on the NULL one, or EINVAL.
 * The probe uses files of its own: an inherited descriptor may be closed,
 * or a file epoll cannot watch (EPERM), such as /dev/null.
 */
static bool has_disable(struct __test_metadata *_metadata)
{
	int epfd = epoll_create1(EPOLL_CLOEXEC), efd, ret;

	EXPECT_LE(0, epfd);
	efd = eventfd(0, EFD_CLOEXEC);
	EXPECT_LE(0, efd);
	ret = ctl_disable(epfd, efd);
	close(efd);
	close(epfd);
	if (ret == -EFAULT || ret == -EINVAL)
		return false;
	EXPECT_EQ(-ENOENT, ret) TH_LOG("unexpected answer to the probe");
	return true;
}

#define NO_DISABLE "the kernel lacks EPOLL_CTL_DISABLE"

FIXTURE(disable) {
	int epfd;
	int efd;
};

FIXTURE_SETUP(disable)
{
	self->epfd = -1;
	self->efd = -1;
	if (!has_disable(_metadata))
		SKIP(return, NO_DISABLE);
	self->epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->epfd);
	self->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, self->efd);
}

FIXTURE_TEARDOWN(disable)
{
	if (self->efd >= 0)
		close(self->efd);
	if (self->epfd >= 0)
		close(self->epfd);
}

/* "disarms the item and returns 0: no event is reported for it" */
TEST_F(disable, armed_item_is_disarmed)
{
	struct epoll_event ev;

	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
			 EPOLLIN | EPOLLONESHOT, 1));
	EXPECT_EQ(0, ctl_disable(self->epfd, self->efd));
	make_ready(_metadata, self->efd);
	EXPECT_EQ(0, wait_now(self->epfd, &ev, 1));
}

/* "... and a pending one is dropped" */
TEST_F(disable, pending_event_of_an_armed_item_is_dropped)
{
	struct epoll_event ev;

	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
			 EPOLLIN | EPOLLONESHOT, 1));
	make_ready(_metadata, self->efd);
	EXPECT_EQ(0, ctl_disable(self->epfd, self->efd));
	EXPECT_EQ(0, wait_now(self->epfd, &ev, 1));
}

/* Edge-triggered one-shot items are one-shot items. */
TEST_F(disable, armed_edge_triggered_item_is_disarmed)
{
	struct epoll_event ev;

	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
			 EPOLLIN | EPOLLONESHOT | EPOLLET, 1));
	make_ready(_metadata, self->efd);
	EXPECT_EQ(0, ctl_disable(self->epfd, self->efd));
	EXPECT_EQ(0, wait_now(self->epfd, &ev, 1));
}

/* "If the item has reported its event ..., it fails with EBUSY" */
TEST_F(disable, reported_item_fails_with_ebusy)
{
	struct epoll_event ev;

	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
			 EPOLLIN | EPOLLONESHOT, 1));
	make_ready(_metadata, self->efd);
	ASSERT_EQ(1, wait_now(self->epfd, &ev, 1));
	EXPECT_EQ(1, ev.data.u64);
	EXPECT_EQ(-EBUSY, ctl_disable(self->epfd, self->efd));
}

/* "(or was disabled already)" */
TEST_F(disable, disabled_item_fails_with_ebusy)
{
	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
			 EPOLLIN | EPOLLONESHOT, 1));
	ASSERT_EQ(0, ctl_disable(self->epfd, self->efd));
	EXPECT_EQ(-EBUSY, ctl_disable(self->epfd, self->efd));
}

/* An item a MOD made one-shot is armed by that MOD. */
TEST_F(disable, item_made_oneshot_by_mod_is_disarmed)
{
	struct epoll_event ev;

	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd, EPOLLIN, 1));
	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_MOD, self->efd,
			 EPOLLIN | EPOLLONESHOT, 2));
	EXPECT_EQ(0, ctl_disable(self->epfd, self->efd));
	make_ready(_metadata, self->efd);
	EXPECT_EQ(0, wait_now(self->epfd, &ev, 1));
}

/* "until EPOLL_CTL_MOD arms it again" */
TEST_F(disable, mod_arms_a_disabled_item_again)
{
	struct epoll_event ev;

	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
			 EPOLLIN | EPOLLONESHOT, 1));
	make_ready(_metadata, self->efd);
	ASSERT_EQ(0, ctl_disable(self->epfd, self->efd));
	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_MOD, self->efd,
			 EPOLLIN | EPOLLONESHOT, 2));
	ASSERT_EQ(1, wait_now(self->epfd, &ev, 1));
	EXPECT_EQ(2, ev.data.u64);
	EXPECT_EQ(-EBUSY, ctl_disable(self->epfd, self->efd));
	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_MOD, self->efd,
			 EPOLLIN | EPOLLONESHOT, 3));
	EXPECT_EQ(0, ctl_disable(self->epfd, self->efd));
}

/* "and changes nothing": the item is there, disarmed, to be deleted. */
TEST_F(disable, item_stays_registered_until_deleted)
{
	struct epoll_event ev;

	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
			 EPOLLIN | EPOLLONESHOT, 1));
	ASSERT_EQ(0, ctl_disable(self->epfd, self->efd));
	EXPECT_EQ(-EEXIST, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
			       EPOLLIN | EPOLLONESHOT, 1));
	EXPECT_EQ(0, epoll_ctl(self->epfd, EPOLL_CTL_DEL, self->efd, NULL));
	EXPECT_EQ(-ENOENT, ctl_disable(self->epfd, self->efd));

	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
			 EPOLLIN | EPOLLONESHOT, 2));
	make_ready(_metadata, self->efd);
	ASSERT_EQ(1, wait_now(self->epfd, &ev, 1));
	ASSERT_EQ(-EBUSY, ctl_disable(self->epfd, self->efd));
	EXPECT_EQ(0, epoll_ctl(self->epfd, EPOLL_CTL_DEL, self->efd, NULL));
}

/*
 * "It fails with EINVAL for an item without EPOLLONESHOT": the events the
 * last EPOLL_CTL_ADD or EPOLL_CTL_MOD set decide.
 */
FIXTURE_VARIANT(disable_not_oneshot) {
	uint32_t mode;
	bool oneshot_at_add;	/* a MOD then takes EPOLLONESHOT away */
};

FIXTURE(disable_not_oneshot) {
	int epfd;
	int efd;
};

FIXTURE_VARIANT_ADD(disable_not_oneshot, level_triggered) {
	.mode = 0,
};

FIXTURE_VARIANT_ADD(disable_not_oneshot, edge_triggered) {
	.mode = EPOLLET,
};

FIXTURE_VARIANT_ADD(disable_not_oneshot, oneshot_until_mod) {
	.mode = 0,
	.oneshot_at_add = true,
};

FIXTURE_SETUP(disable_not_oneshot)
{
	self->epfd = -1;
	self->efd = -1;
	if (!has_disable(_metadata))
		SKIP(return, NO_DISABLE);
	self->epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->epfd);
	self->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, self->efd);
}

FIXTURE_TEARDOWN(disable_not_oneshot)
{
	if (self->efd >= 0)
		close(self->efd);
	if (self->epfd >= 0)
		close(self->epfd);
}

TEST_F(disable_not_oneshot, fails_with_einval_and_changes_nothing)
{
	struct epoll_event ev;

	if (variant->oneshot_at_add) {
		ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
				 EPOLLIN | EPOLLONESHOT, 2));
		ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_MOD, self->efd,
				 EPOLLIN | variant->mode, 1));
	} else {
		ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
				 EPOLLIN | variant->mode, 1));
	}
	make_ready(_metadata, self->efd);
	EXPECT_EQ(-EINVAL, ctl_disable(self->epfd, self->efd));
	ASSERT_EQ(1, wait_now(self->epfd, &ev, 1));
	EXPECT_EQ(1, ev.data.u64);
}

/* "and with EINVAL if the event argument is not NULL" */
TEST_F(disable, event_argument_must_be_null)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT };

	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
			 EPOLLIN | EPOLLONESHOT, 1));
	EXPECT_EQ(-1, epoll_ctl(self->epfd, EPOLL_CTL_DISABLE, self->efd, &ev));
	EXPECT_EQ(EINVAL, errno);
	/* The failed call did not disarm the item. */
	EXPECT_EQ(0, ctl_disable(self->epfd, self->efd));
}

/*
 * The reserved argument is EPOLL_CTL_DISABLE's alone: EPOLL_CTL_DEL still
 * ignores its event (epoll_ctl(2), BUGS: "event can be specified as NULL
 * when using EPOLL_CTL_DEL").
 */
TEST_F(disable, del_still_ignores_its_event_argument)
{
	struct epoll_event ev = { .events = EPOLLIN };

	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
			 EPOLLIN | EPOLLONESHOT, 1));
	EXPECT_EQ(0, epoll_ctl(self->epfd, EPOLL_CTL_DEL, self->efd, &ev));
	EXPECT_EQ(-ENOENT, ctl_disable(self->epfd, self->efd));
}

/* "otherwise as epoll_ctl() does": epoll_ctl(2), ERRORS. */
TEST_F(disable, fd_not_registered_fails_with_enoent)
{
	EXPECT_EQ(-ENOENT, ctl_disable(self->epfd, self->efd));
}

TEST_F(disable, bad_file_descriptors_fail_with_ebadf)
{
	int closed = dup(self->efd);

	ASSERT_LE(0, closed);
	ASSERT_EQ(0, close(closed));
	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
			 EPOLLIN | EPOLLONESHOT, 1));
	EXPECT_EQ(-EBADF, ctl_disable(closed, self->efd));
	EXPECT_EQ(-EBADF, ctl_disable(self->epfd, closed));
}

TEST_F(disable, epfd_that_is_not_epoll_fails_with_einval)
{
	int efd2 = eventfd(0, EFD_CLOEXEC);

	ASSERT_LE(0, efd2);
	EXPECT_EQ(-EINVAL, ctl_disable(efd2, self->efd));
	close(efd2);
}

/*
 * epoll.rst, EPOLLWAKEUP: "EPOLL_CTL_DISABLE of an item whose event is
 * pending lets suspend proceed", since the event is dropped; MOD holds it
 * off again while an event is pending.
 */
TEST_F(disable, dropped_event_no_longer_holds_off_suspend)
{
	struct epoll_event ev;

	if (!has_cap_block_suspend())
		SKIP(return, NEEDS_CAP_BLOCK_SUSPEND);
	if (!wakeup_count_supported())
		SKIP(return, "no %s (CONFIG_PM_SLEEP=n)", WAKEUP_COUNT_PATH);
	if (wakeup_count_read_bounded(10000) != 1)
		SKIP(return, "a wakeup event elsewhere holds off suspend");

	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd,
			 EPOLLIN | EPOLLONESHOT | EPOLLWAKEUP, 1));
	make_ready(_metadata, self->efd);
	EXPECT_EQ(0, wakeup_count_read_bounded(500));

	ASSERT_EQ(0, ctl_disable(self->epfd, self->efd));
	EXPECT_EQ(1, wakeup_count_read_bounded(10000));

	ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_MOD, self->efd,
			 EPOLLIN | EPOLLONESHOT | EPOLLWAKEUP, 2));
	EXPECT_EQ(0, wakeup_count_read_bounded(500));
	ASSERT_EQ(1, wait_now(self->epfd, &ev, 1));
	EXPECT_EQ(1, wakeup_count_read_bounded(10000));
}

/*
 * "IORING_OP_EPOLL_CTL gives the same results, with sqe->addr in place of
 * the event argument", issued inline or from io-wq (IOSQE_ASYNC); an
 * event reported by IORING_OP_EPOLL_WAIT is a reported event.
 */
enum uring_case {
	URING_ARMED,
	URING_REPORTED,
	URING_REPORTED_BY_IO_URING,
	URING_NOT_ONESHOT,
	URING_NOT_REGISTERED,
	URING_ADDR_SET,
};

FIXTURE(uring) {
	int epfd;
	int efd;
	struct io_uring ring;
	bool has_ring;
};

FIXTURE_VARIANT(uring) {
	enum uring_case what;
	bool async;
	int res;
};

FIXTURE_VARIANT_ADD(uring, armed) {
	.what = URING_ARMED, .res = 0,
};

FIXTURE_VARIANT_ADD(uring, armed_io_wq) {
	.what = URING_ARMED, .async = true, .res = 0,
};

FIXTURE_VARIANT_ADD(uring, reported) {
	.what = URING_REPORTED, .res = -EBUSY,
};

FIXTURE_VARIANT_ADD(uring, reported_io_wq) {
	.what = URING_REPORTED, .async = true, .res = -EBUSY,
};

FIXTURE_VARIANT_ADD(uring, reported_by_ioring_op_epoll_wait) {
	.what = URING_REPORTED_BY_IO_URING, .res = -EBUSY,
};

FIXTURE_VARIANT_ADD(uring, not_oneshot) {
	.what = URING_NOT_ONESHOT, .res = -EINVAL,
};

FIXTURE_VARIANT_ADD(uring, not_registered) {
	.what = URING_NOT_REGISTERED, .res = -ENOENT,
};

FIXTURE_VARIANT_ADD(uring, addr_set) {
	.what = URING_ADDR_SET, .res = -EINVAL,
};

FIXTURE_SETUP(uring)
{
	const char *why;

	self->epfd = -1;
	self->efd = -1;
	if (!has_disable(_metadata))
		SKIP(return, NO_DISABLE);
	if (!uring_init(&self->ring, &why))
		SKIP(return, "no io_uring here: %s", why);
	self->has_ring = true;
	self->epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->epfd);
	self->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, self->efd);
}

FIXTURE_TEARDOWN(uring)
{
	if (self->efd >= 0)
		close(self->efd);
	if (self->epfd >= 0)
		close(self->epfd);
	if (self->has_ring)
		io_uring_queue_exit(&self->ring);
}

TEST_F(uring, epoll_ctl_disable_gives_the_syscall_results)
{
	uint32_t events = EPOLLIN | EPOLLONESHOT;
	struct epoll_event ev = { .events = events };
	int res = 0;

	if (variant->what == URING_NOT_ONESHOT)
		events = EPOLLIN;
	if (variant->what != URING_NOT_REGISTERED)
		ASSERT_EQ(0, ctl(self->epfd, EPOLL_CTL_ADD, self->efd, events, 1));
	make_ready(_metadata, self->efd);
	if (variant->what == URING_REPORTED)
		ASSERT_EQ(1, wait_now(self->epfd, &ev, 1));
	if (variant->what == URING_REPORTED_BY_IO_URING) {
		ASSERT_EQ(0, uring_epoll_wait(&self->ring, self->epfd, &ev, 1));
		ASSERT_EQ(0, uring_run(&self->ring, &res));
		ASSERT_EQ(1, res);
	}

	ASSERT_EQ(0, uring_epoll_ctl(&self->ring, self->epfd, EPOLL_CTL_DISABLE,
				     self->efd,
				     variant->what == URING_ADDR_SET ? &ev : NULL,
				     variant->async ? IOSQE_ASYNC : 0, 0));
	ASSERT_EQ(0, uring_run(&self->ring, &res));
	EXPECT_EQ(variant->res, res);

	/* What the syscall says afterwards agrees. */
	if (variant->what == URING_ARMED)
		EXPECT_EQ(0, wait_now(self->epfd, &ev, 1));
	switch (variant->what) {
	case URING_ARMED:
	case URING_REPORTED:
	case URING_REPORTED_BY_IO_URING:
		EXPECT_EQ(-EBUSY, ctl_disable(self->epfd, self->efd));
		break;
	case URING_ADDR_SET:
		EXPECT_EQ(0, ctl_disable(self->epfd, self->efd));
		break;
	case URING_NOT_ONESHOT:
		EXPECT_EQ(1, wait_now(self->epfd, &ev, 1));
		break;
	case URING_NOT_REGISTERED:
		break;
	}
}

TEST_HARNESS_MAIN
