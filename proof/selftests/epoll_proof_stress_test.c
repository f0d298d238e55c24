// SPDX-License-Identifier: GPL-2.0
/*
 * Seeded stress and bad-input tests for epoll: part of the local proof
 * layer, not for upstream.
 *
 * bad_ctl.* and bad_wait.* feed every argument of epoll_ctl() and
 * epoll_wait() a systematic set of bad values, and expect the errno (or
 * the success) that Documentation/userspace-api/epoll.rst and the man
 * pages give: every op value from -1 to 255 and INT_MIN and INT_MAX;
 * event pointers that are NULL, unmapped, without access, read-only,
 * misaligned, straddling an unmapped page or pointing outside the user
 * address space; descriptors that are not open, O_PATH, not pollable, not
 * an epoll file, the epoll file itself or a duplicate of it, an epoll file
 * that would close a loop or nest too deep; maxevents 0, negative or too
 * large; bad timeouts and signal masks. epoll_ctl() is driven through the
 * syscall and through IORING_OP_EPOLL_CTL, inline and with IOSQE_ASYNC
 * (IORING_OP_EPOLL_WAIT is not driven here). expected_ctl()
 * computes the result of a call from the documented order of the checks;
 * unknown ops are held only to what is ABI (unknown_op_ok()).
 *
 * stress.* runs worker threads that each follow a random sequence of
 * operations, a pure function of the seed and the thread's index, until a
 * time or an operation budget runs out:
 *  - chaos threads: ADD, MOD, DEL, DISABLE and unknown ops, through the
 *    syscall and io_uring, with event masks drawn from all 32 bits;
 *    epoll_wait(), epoll_pwait(), epoll_pwait2() and poll() of epoll
 *    files; readiness changes, hangups, close, dup, fork; a shared pool of
 *    eventfds, pipes, sockets, timerfds, epoll files (nested into each
 *    other, into loops and past the depth limit) and memfds; dropping
 *    CAP_BLOCK_SUSPEND, and children in a new user namespace;
 *  - owner threads, each the only one to call epoll_ctl() on its
 *    EPOLLONESHOT items (eventfds, pipes, sockets, timerfds, FIFOs) in two
 *    shared "checked" epoll files, on which all threads wait. The data of
 *    each ADD and MOD carries a new generation.
 *
 * Checked while it runs, without false positives under real concurrency:
 *  - a generation that EPOLL_CTL_DISABLE disarmed (returned 0) is never
 *    reported, by any thread: a report before the DISABLE would have made
 *    it return EBUSY, and none can come after it; one that it answered
 *    EBUSY for was reported to some thread;
 *  - no generation of a one-shot item is reported twice, none that the
 *    owner has not set yet, none with events it did not ask for;
 *  - an owner's own epoll_wait() never reports its item after its
 *    EPOLL_CTL_DEL returned, nor an older generation after its MOD;
 *  - every epoll_ctl() of an owner returns what its item's state implies,
 *    and /proc/self/fdinfo shows the mask it asked for, EPOLLWAKEUP
 *    cleared when CAP_BLOCK_SUSPEND was dropped or in a user namespace;
 *  - the wakeup source of a disarmed item is inactive (FIFOs only: the
 *    source is named after the file);
 *  - every call of a chaos thread returns a result allowed for its
 *    arguments.
 * At the end, with the pool closed and every checked item queued with
 * EPOLLWAKEUP and then disarmed by DISABLE, and again after everything is
 * closed, a read of /sys/power/wakeup_count (the suspend handshake)
 * completes: no wakeup source was left active. Then no descriptor is left
 * over, and the wakeup sources in /sys/class/wakeup are back to their
 * number before the run. A kernel splat is the kernel log's to report.
 *
 * Environment: EPOLL_STRESS_SEED (default: a fixed one, so that a run
 * is repeatable; printed as "# seed=..."; the same seed replays the same
 * sequence of operations in each thread), EPOLL_STRESS_SECONDS (default
 * 15), EPOLL_STRESS_OPS (operations of all threads together; default
 * 100000000).
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/time_types.h>

#include "kselftest_harness.h"
#include "epoll_proof_helpers.h"

#ifndef __NR_epoll_pwait2
#define __NR_epoll_pwait2 441
#endif

/* The flags that a one-shot item keeps when it is disarmed. */
#define EP_PRIVATE_BITS (EPOLLWAKEUP | EPOLLONESHOT | EPOLLET | EPOLLEXCLUSIVE)
/* fs/eventpoll.c's EP_MAX_EVENTS: a larger maxevents gives EINVAL. */
#define MAX_EVENTS ((int)(INT_MAX / sizeof(struct epoll_event)))
/* At most five epoll files in a chain (epoll_ctl(2): ELOOP). */
#define MAX_CHAIN 5
/* sizeof(sigset_t) as the kernel sees it, for epoll_pwait(). */
#define KERNEL_SIGSET_SIZE 8

/* A high descriptor number that nothing else in the test gets. */
#define CLOSED_FD 1000

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Bad input
 */

/* How epoll_ctl() is called. */
enum ctl_path {
	PATH_SYSCALL,		/* epoll_ctl(2) */
	PATH_URING,		/* IORING_OP_EPOLL_CTL, submitted inline */
	PATH_URING_ASYNC,	/* IORING_OP_EPOLL_CTL with IOSQE_ASYNC */
};

/* What the event argument of epoll_ctl() points to. */
enum ev_ptr {
	EV_VALID,		/* { EPOLLIN, data } on a read-write page */
	EV_READ_ONLY,		/* the same on a read-only page */
	EV_MISALIGNED,		/* the same at an odd address */
	EV_NULL,
	EV_ONE,			/* (void *)1 */
	EV_UNMAPPED,		/* a page that was unmapped */
	EV_PROT_NONE,		/* a mapped page without access rights */
	EV_STRADDLING,		/* 4 bytes readable, the rest unmapped */
	EV_TOP,			/* the last page of the address space */
	EV_KERNEL_TEXT,		/* a kernel address (x86-64 text), 64-bit only */
	EV_NON_CANONICAL,	/* 64-bit only */
	NR_EV_PTRS
};

static const char *const ev_ptr_names[NR_EV_PTRS] = {
	"valid", "read-only", "misaligned", "NULL", "(void *)1", "unmapped",
	"PROT_NONE", "straddling", "top page", "kernel text", "non-canonical",
};

/* Only these can be read, so only these get past the copy of the event. */
static bool ev_readable(enum ev_ptr p)
{
	return p == EV_VALID || p == EV_READ_ONLY || p == EV_MISALIGNED;
}

/*
 * Memory for the event pointers of enum ev_ptr, four pages: read-write,
 * unmapped, PROT_NONE, read-only. The hole fits a single page, and the
 * tests map nothing after making it.
 */
struct bad_mem {
	char *rw;		/* the read-write page, the first one */
	char *hole;		/* the unmapped one */
	char *none;		/* PROT_NONE */
	char *ro;		/* read-only */
	size_t page;
};

static int bad_mem_init(struct bad_mem *m)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0x1122334455667788ULL };

	m->page = getpagesize();
	m->rw = mmap(NULL, 4 * m->page, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m->rw == MAP_FAILED)
		return -errno;
	m->hole = m->rw + m->page;
	m->none = m->rw + 2 * m->page;
	m->ro = m->rw + 3 * m->page;
	memcpy(m->rw, &ev, sizeof(ev));
	memcpy(m->rw + 33, &ev, sizeof(ev));
	memcpy(m->rw + m->page - 4, &ev, 4);
	memcpy(m->ro, &ev, sizeof(ev));
	if (munmap(m->hole, m->page) ||
	    mprotect(m->none, m->page, PROT_NONE) ||
	    mprotect(m->ro, m->page, PROT_READ))
		return -errno;
	return 0;
}

/* The hole is still unmapped: nothing was mapped into it meanwhile. */
static bool bad_mem_intact(struct bad_mem *m)
{
	unsigned char vec;

	return mincore(m->hole, m->page, &vec) && errno == ENOMEM;
}

static void bad_mem_exit(struct bad_mem *m)
{
	munmap(m->rw, m->page);
	munmap(m->none, 2 * m->page);
}

/* The address for @p, as the 64-bit value that sqe->addr carries. */
static uint64_t ev_addr(const struct bad_mem *m, enum ev_ptr p)
{
	switch (p) {
	case EV_VALID:
		return (uintptr_t)m->rw;
	case EV_READ_ONLY:
		return (uintptr_t)m->ro;
	case EV_MISALIGNED:
		return (uintptr_t)(m->rw + 33);
	case EV_NULL:
		return 0;
	case EV_ONE:
		return 1;
	case EV_UNMAPPED:
		return (uintptr_t)m->hole;
	case EV_PROT_NONE:
		return (uintptr_t)m->none;
	case EV_STRADDLING:
		return (uintptr_t)(m->rw + m->page - 4);
	case EV_TOP:
		return (uintptr_t)-m->page;
	case EV_KERNEL_TEXT:
		return 0xffffffff81000000ULL;
	case EV_NON_CANONICAL:
		return 0x8000000000000000ULL;
	default:
		return 0;
	}
}

/* The syscall takes a pointer: a 32-bit program cannot pass every value. */
static bool path_can_pass(enum ctl_path path, uint64_t addr)
{
	return path != PATH_SYSCALL || addr == (uintptr_t)addr;
}

/* The epfd argument. */
enum epfd_kind {
	EPFD_EPOLL,		/* an epoll file */
	EPFD_MINUS_ONE,
	EPFD_INT_MIN,
	EPFD_INT_MAX,
	EPFD_CLOSED,		/* a descriptor that was closed */
	EPFD_O_PATH,		/* an O_PATH descriptor: not usable */
	EPFD_EVENTFD,		/* a pollable file that is not epoll */
	EPFD_MEMFD,		/* a file that cannot be polled */
	NR_EPFD_KINDS
};

static const char *const epfd_names[NR_EPFD_KINDS] = {
	"epoll", "-1", "INT_MIN", "INT_MAX", "closed", "O_PATH", "eventfd",
	"memfd",
};

/* The fd argument. */
enum tfd_kind {
	TFD_FREE,		/* eventfd, not registered */
	TFD_LEVEL,		/* eventfd, registered level-triggered */
	TFD_ONESHOT,		/* eventfd, registered EPOLLONESHOT, armed */
	TFD_DISARMED,		/* the same after its event was reported */
	TFD_MINUS_ONE,
	TFD_INT_MIN,
	TFD_INT_MAX,
	TFD_CLOSED,
	TFD_O_PATH,
	TFD_MEMFD,		/* cannot be polled */
	TFD_DIRECTORY,		/* cannot be polled */
	TFD_EPFD,		/* epfd itself */
	TFD_EPFD_DUP,		/* a duplicate of epfd: the same file */
	TFD_PARENT,		/* an epoll file that watches epfd */
	NR_TFD_KINDS
};

static const char *const tfd_names[NR_TFD_KINDS] = {
	"free", "level", "oneshot", "disarmed", "-1", "INT_MIN", "INT_MAX",
	"closed", "O_PATH", "memfd", "directory", "epfd", "dup of epfd",
	"parent epoll",
};

static bool epfd_open(enum epfd_kind e)
{
	return e == EPFD_EPOLL || e == EPFD_EVENTFD || e == EPFD_MEMFD;
}

static bool tfd_registered(enum tfd_kind t)
{
	return t == TFD_LEVEL || t == TFD_ONESHOT || t == TFD_DISARMED;
}

static bool tfd_open(enum tfd_kind t, enum epfd_kind e)
{
	switch (t) {
	case TFD_MINUS_ONE:
	case TFD_INT_MIN:
	case TFD_INT_MAX:
	case TFD_CLOSED:
	case TFD_O_PATH:
		return false;
	case TFD_EPFD:
	case TFD_EPFD_DUP:
		return epfd_open(e);
	default:
		return true;
	}
}

static bool tfd_pollable(enum tfd_kind t, enum epfd_kind e)
{
	switch (t) {
	case TFD_MEMFD:
	case TFD_DIRECTORY:
		return false;
	case TFD_EPFD:
	case TFD_EPFD_DUP:
		return e != EPFD_MEMFD;
	default:
		return true;
	}
}

enum op_class { OP_ADD, OP_DEL, OP_MOD, OP_DISABLE, OP_UNKNOWN };

static enum op_class op_class(int op, bool has_disable)
{
	switch (op) {
	case EPOLL_CTL_ADD:
		return OP_ADD;
	case EPOLL_CTL_DEL:
		return OP_DEL;
	case EPOLL_CTL_MOD:
		return OP_MOD;
	case EPOLL_CTL_DISABLE:
		return has_disable ? OP_DISABLE : OP_UNKNOWN;
	default:
		return OP_UNKNOWN;
	}
}

/*
 * The result of epoll_ctl(epfd, op, fd, event) that epoll.rst documents,
 * checks in its order. The valid event is { EPOLLIN, data }, so the
 * EPOLLEXCLUSIVE checks never apply. An unknown op may also fail with
 * EINVAL before anything else (see unknown_op_ok()).
 */
static int expected_ctl(int op, enum ev_ptr ev, enum epfd_kind e,
			enum tfd_kind t, bool has_disable)
{
	enum op_class c = op_class(op, has_disable);

	/* DISABLE takes no event: the argument must be NULL. */
	if (c == OP_DISABLE && ev != EV_NULL)
		return -EINVAL;
	/* Every other op but DEL, unknown ones too, first copies the event. */
	if (c != OP_DISABLE && c != OP_DEL && !ev_readable(ev))
		return -EFAULT;
	/* epfd, then fd, must be open. */
	if (!epfd_open(e) || !tfd_open(t, e))
		return -EBADF;
	if (!tfd_pollable(t, e))
		return -EPERM;
	/* epfd must be an epoll file, and fd another file. */
	if (e != EPFD_EPOLL || t == TFD_EPFD || t == TFD_EPFD_DUP)
		return -EINVAL;
	/* Adding an epoll file that watches epfd would close a loop. */
	if (c == OP_ADD && t == TFD_PARENT)
		return -ELOOP;
	switch (c) {
	case OP_ADD:
		return tfd_registered(t) ? -EEXIST : 0;
	case OP_DEL:
	case OP_MOD:
		return tfd_registered(t) ? 0 : -ENOENT;
	case OP_DISABLE:
		if (!tfd_registered(t))
			return -ENOENT;
		if (t == TFD_LEVEL)
			return -EINVAL;
		return t == TFD_ONESHOT ? 0 : -EBUSY;
	default:
		return -EINVAL;
	}
}

/*
 * An op that does not exist fails and changes nothing. Its error is ABI
 * only that far: a call valid for a known op gets EINVAL, one with another
 * bad argument EINVAL or that argument's error (Linux 6.12 reads the event
 * and checks the fds before it looks at the op; a kernel may as well
 * reject the op first). So is op 4 on a kernel without EPOLL_CTL_DISABLE.
 * Ops up to 255 are taken as unknown: a new op must update this test.
 */
static bool unknown_op_ok(int op, bool has_disable, int ret)
{
	return op_class(op, has_disable) == OP_UNKNOWN && ret == -EINVAL;
}

/*
 * One epoll file with one eventfd, fresh for each case, and the fixture's
 * descriptors that never change.
 */
struct ctl_env {
	struct ring ring;	/* for the io_uring paths */
	struct bad_mem mem;	/* what the event pointers point to */
	bool has_disable;	/* the kernel has EPOLL_CTL_DISABLE */
	int memfd;		/* cannot be polled */
	int dirfd;		/* a directory: cannot be polled */
	int opath;		/* an O_PATH descriptor */
	int other;		/* an eventfd that is not an epoll file */
	int failures;		/* cases that got another result */
};

FIXTURE(bad_ctl) {
	struct ctl_env env;
};

FIXTURE_VARIANT(bad_ctl) {
	enum ctl_path path;
};

FIXTURE_VARIANT_ADD(bad_ctl, syscall) {
	.path = PATH_SYSCALL,
};

FIXTURE_VARIANT_ADD(bad_ctl, io_uring) {
	.path = PATH_URING,
};

FIXTURE_VARIANT_ADD(bad_ctl, io_uring_async) {
	.path = PATH_URING_ASYNC,
};

FIXTURE_SETUP(bad_ctl)
{
	struct ctl_env *env = &self->env;
	int ret;

	env->ring.fd = -1;
	env->mem.rw = NULL;
	ret = epoll_ctl_disable_probe();
	ASSERT_LE(0, ret);
	env->has_disable = ret;
	if (!ret)
		TH_LOG("no EPOLL_CTL_DISABLE: op 4 is expected to be unknown");
	if (variant->path != PATH_SYSCALL) {
		if (access("/proc/sys/kernel/io_uring_disabled", F_OK))
			SKIP(return, "kernel built without io_uring");
		ret = ring_init(&env->ring);
		if (ret == -EPERM)
			SKIP(return, "io_uring disabled (kernel.io_uring_disabled)");
		ASSERT_EQ(0, ret);
	}
	ASSERT_EQ(0, bad_mem_init(&env->mem));
	env->memfd = memfd_create("epoll_stress", MFD_CLOEXEC);
	ASSERT_LE(0, env->memfd);
	env->dirfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_LE(0, env->dirfd);
	env->opath = open("/", O_PATH | O_CLOEXEC);
	ASSERT_LE(0, env->opath);
	env->other = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ASSERT_LE(0, env->other);
	ASSERT_EQ(-1, fcntl(CLOSED_FD, F_GETFD));
}

FIXTURE_TEARDOWN(bad_ctl)
{
	struct ctl_env *env = &self->env;

	if (env->mem.rw) {
		EXPECT_TRUE(bad_mem_intact(&env->mem));
		bad_mem_exit(&env->mem);
	}
	ring_exit(&env->ring);
}

static int ctl_by(struct ctl_env *env, enum ctl_path path, int epfd, int op,
		  int fd, uint64_t addr)
{
	if (path == PATH_SYSCALL)
		return epoll_ctl(epfd, op, fd,
				 (struct epoll_event *)(uintptr_t)addr) ? -errno : 0;
	return ring_epoll_ctl_addr(&env->ring, epfd, op, fd, addr,
				   path == PATH_URING_ASYNC);
}

/* The descriptors of one case. */
struct ctl_case {
	int ep;			/* epoll file of the case */
	int efd;		/* eventfd, maybe registered in ep */
	int extra;		/* a duplicate of epfd or a parent epoll, or -1 */
	int epfd, fd;		/* the arguments */
};

static int ctl_case_init(struct ctl_env *env, struct ctl_case *c,
			 enum epfd_kind e, enum tfd_kind t)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 };
	uint64_t one = 1;

	c->extra = -1;
	c->epfd = -1;
	c->fd = -1;
	c->ep = epoll_create1(EPOLL_CLOEXEC);
	c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->ep < 0 || c->efd < 0)
		return -errno;
	switch (e) {
	case EPFD_EPOLL:
		c->epfd = c->ep;
		break;
	case EPFD_MINUS_ONE:
		c->epfd = -1;
		break;
	case EPFD_INT_MIN:
		c->epfd = INT_MIN;
		break;
	case EPFD_INT_MAX:
		c->epfd = INT_MAX;
		break;
	case EPFD_CLOSED:
		c->epfd = CLOSED_FD;
		break;
	case EPFD_O_PATH:
		c->epfd = env->opath;
		break;
	case EPFD_EVENTFD:
		c->epfd = env->other;
		break;
	default:
		c->epfd = env->memfd;
		break;
	}
	c->fd = c->efd;
	switch (t) {
	case TFD_LEVEL:
		return epoll_ctl(c->ep, EPOLL_CTL_ADD, c->efd, &ev) ? -errno : 0;
	case TFD_ONESHOT:
	case TFD_DISARMED:
		ev.events |= EPOLLONESHOT;
		if (epoll_ctl(c->ep, EPOLL_CTL_ADD, c->efd, &ev))
			return -errno;
		if (t == TFD_ONESHOT)
			return 0;
		if (write(c->efd, &one, sizeof(one)) != sizeof(one))
			return -errno;
		return epoll_wait(c->ep, &ev, 1, 0) == 1 ? 0 : -EIO;
	case TFD_MINUS_ONE:
		c->fd = -1;
		break;
	case TFD_INT_MIN:
		c->fd = INT_MIN;
		break;
	case TFD_INT_MAX:
		c->fd = INT_MAX;
		break;
	case TFD_CLOSED:
		c->fd = CLOSED_FD;
		break;
	case TFD_O_PATH:
		c->fd = env->opath;
		break;
	case TFD_MEMFD:
		c->fd = env->memfd;
		break;
	case TFD_DIRECTORY:
		c->fd = env->dirfd;
		break;
	case TFD_EPFD:
		c->fd = c->epfd;
		break;
	case TFD_EPFD_DUP:
		c->extra = epfd_open(e) ? dup(c->epfd) : -1;
		c->fd = c->extra;
		break;
	case TFD_PARENT:
		c->extra = epoll_create1(EPOLL_CLOEXEC);
		c->fd = c->extra;
		if (c->extra < 0)
			return -errno;
		return epoll_ctl(c->extra, EPOLL_CTL_ADD, c->ep, &ev) ? -errno : 0;
	default:
		break;
	}
	return 0;
}

static void ctl_case_exit(struct ctl_case *c)
{
	if (c->extra >= 0)
		close(c->extra);
	close(c->efd);
	close(c->ep);
}

/*
 * The calls of one (epfd, fd) pair share their descriptors until a call
 * succeeds: that one changed the item, which is checked (fdinfo) and set
 * up afresh. Failed calls must change nothing: the item is compared with
 * its state at setup when the descriptors are dropped.
 */
struct ctl_batch {
	struct ctl_case c;
	enum epfd_kind e;
	enum tfd_kind t;
	bool open;		/* c is set up */
	int found;		/* the item in fdinfo at setup: 0 or -ENOENT */
	uint32_t events;	/* and its mask */
	int failed_calls;	/* since setup */
};

static bool batch_end(struct __test_metadata *_metadata, struct ctl_env *env,
		      struct ctl_batch *b)
{
	uint32_t events = 0;
	bool ok = true;
	int found;

	if (!b->open)
		return true;
	if (b->failed_calls) {
		found = fdinfo_epoll_item(b->c.ep, b->c.efd, &events, NULL);
		ok = found == b->found && events == b->events;
		if (!ok && env->failures++ < 20)
			TH_LOG("epfd %s, fd %s: %d failed calls changed the item: %d/%#x -> %d/%#x",
			       epfd_names[b->e], tfd_names[b->t], b->failed_calls,
			       b->found, b->events, found, events);
	}
	ctl_case_exit(&b->c);
	b->open = false;
	return ok;
}

/* One call: its result, and what a success did to the item. */
static bool batch_call(struct __test_metadata *_metadata, struct ctl_env *env,
		       enum ctl_path path, struct ctl_batch *b, int op,
		       enum ev_ptr p)
{
	int want = expected_ctl(op, p, b->e, b->t, env->has_disable);
	uint64_t addr = ev_addr(&env->mem, p);
	uint32_t after = 0;
	int ret, found = 0;
	bool ok;

	if (!path_can_pass(path, addr))
		return true;
	if (!b->open) {
		ret = ctl_case_init(env, &b->c, b->e, b->t);
		if (ret) {
			TH_LOG("epfd %s, fd %s: setup failed: %d",
			       epfd_names[b->e], tfd_names[b->t], ret);
			ctl_case_exit(&b->c);
			return false;
		}
		b->events = 0;
		b->found = fdinfo_epoll_item(b->c.ep, b->c.efd, &b->events, NULL);
		b->failed_calls = 0;
		b->open = true;
	}

	ret = ctl_by(env, path, b->c.epfd, op, b->c.fd, addr);

	ok = ret == want || unknown_op_ok(op, env->has_disable, ret);
	if (ret) {
		b->failed_calls++;
	} else {
		found = fdinfo_epoll_item(b->c.ep, b->c.efd, &after, NULL);
		switch (op_class(op, env->has_disable)) {
		case OP_ADD:
		case OP_MOD:
			/* The event was read right, misaligned or not. */
			ok = ok && !found && after == (EPOLLIN | EPOLLERR | EPOLLHUP);
			break;
		case OP_DEL:
			ok = ok && found == -ENOENT;
			break;
		case OP_DISABLE:
			ok = ok && !found && after == (b->events & EP_PRIVATE_BITS);
			break;
		default:
			ok = false;
		}
	}
	if (!ok && env->failures++ < 20)
		TH_LOG("op %d, event %s, epfd %s, fd %s: %d, not %d; item %d/%#x -> %d/%#x",
		       op, ev_ptr_names[p], epfd_names[b->e], tfd_names[b->t],
		       ret, want, b->found, b->events, found, after);
	if (!ret) {
		/* Changed (or wrongly not): start afresh. */
		b->failed_calls = 0;
		batch_end(_metadata, env, b);
	}
	return ok;
}

/*
 * Every op value from -1 to 255, INT_MIN and INT_MAX, each with the
 * arguments that tell the classes of ops apart: which ops read the event,
 * which look the item up, what each one does to it.
 */
TEST_F_TIMEOUT(bad_ctl, every_op_value, 120)
{
	static const struct {
		enum ev_ptr ev;
		enum tfd_kind fd;
	} args[] = {
		{ EV_VALID, TFD_FREE },
		{ EV_VALID, TFD_LEVEL },
		{ EV_NULL, TFD_ONESHOT },
		{ EV_NULL, TFD_DISARMED },
	};
	struct ctl_env *env = &self->env;
	unsigned int i, calls = 0, failed = 0;
	struct ctl_batch b = { .e = EPFD_EPOLL };
	int64_t op, start = now_ms();

	for (i = 0; i < ARRAY_SIZE(args); i++) {
		b.t = args[i].fd;
		for (op = -1; op <= 257; op++, calls++) {
			int o = op == 256 ? INT_MIN : op == 257 ? INT_MAX : (int)op;

			failed += !batch_call(_metadata, env, variant->path, &b,
					      o, args[i].ev);
		}
		failed += !batch_end(_metadata, env, &b);
	}
	TH_LOG("%u calls in %lld ms", calls, (long long)(now_ms() - start));
	EXPECT_EQ(0, failed);
}

/* Every kind of event pointer, for the known ops and some unknown ones. */
TEST_F_TIMEOUT(bad_ctl, event_pointers, 120)
{
	static const int ops[] = {
		EPOLL_CTL_ADD, EPOLL_CTL_DEL, EPOLL_CTL_MOD, EPOLL_CTL_DISABLE,
		0, 5, 255, -1, INT_MIN, INT_MAX,
	};
	static const enum tfd_kind fds[] = {
		TFD_FREE, TFD_LEVEL, TFD_ONESHOT, TFD_DISARMED,
	};
	static const enum epfd_kind epfds[] = { EPFD_EPOLL, EPFD_MINUS_ONE };
	struct ctl_env *env = &self->env;
	unsigned int i, j, k, calls = 0, failed = 0;
	struct ctl_batch b = { 0 };
	int64_t start = now_ms();
	int p;

	for (j = 0; j < ARRAY_SIZE(epfds); j++) {
		for (k = 0; k < ARRAY_SIZE(fds); k++) {
			b.e = epfds[j];
			b.t = fds[k];
			for (i = 0; i < ARRAY_SIZE(ops); i++)
				for (p = 0; p < NR_EV_PTRS; p++, calls++)
					failed += !batch_call(_metadata, env,
							      variant->path, &b,
							      ops[i], p);
			failed += !batch_end(_metadata, env, &b);
		}
	}
	TH_LOG("%u calls in %lld ms", calls, (long long)(now_ms() - start));
	EXPECT_EQ(0, failed);
}

/*
 * Every kind of epfd with every kind of fd: not open, O_PATH, not
 * pollable, not epoll, the same file, an epoll file that would close a
 * loop; with a valid and a NULL event.
 */
TEST_F_TIMEOUT(bad_ctl, file_descriptors, 120)
{
	static const int ops[] = {
		EPOLL_CTL_ADD, EPOLL_CTL_DEL, EPOLL_CTL_MOD, EPOLL_CTL_DISABLE,
		0, 255,
	};
	static const enum ev_ptr ptrs[] = { EV_VALID, EV_NULL };
	struct ctl_env *env = &self->env;
	unsigned int i, j, calls = 0, failed = 0;
	struct ctl_batch b = { 0 };
	int64_t start = now_ms();
	int e, t;

	for (e = 0; e < NR_EPFD_KINDS; e++) {
		for (t = 0; t < NR_TFD_KINDS; t++) {
			if (t == TFD_EPFD_DUP && !epfd_open(e))
				continue;
			b.e = e;
			b.t = t;
			for (i = 0; i < ARRAY_SIZE(ops); i++)
				for (j = 0; j < ARRAY_SIZE(ptrs); j++, calls++)
					failed += !batch_call(_metadata, env,
							      variant->path, &b,
							      ops[i], ptrs[j]);
			failed += !batch_end(_metadata, env, &b);
		}
	}
	TH_LOG("%u calls in %lld ms", calls, (long long)(now_ms() - start));
	EXPECT_EQ(0, failed);
}

/*
 * Nesting: five epoll files in a chain are allowed, a sixth level is not,
 * whichever end it is added at; an ADD that would close a loop fails with
 * ELOOP and adds nothing; an epoll file cannot watch itself, not even
 * through a duplicate; MOD, DEL and DISABLE do not look for loops. Events
 * still reach the top of the deepest chain.
 *
 *	efd -> e[0] -> e[1] -> e[2] -> e[3] -> e[4]
 *	                         ^
 *	             side -------'       (allowed: depth 3)
 */
TEST_F(bad_ctl, nesting_loops_and_depth)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct pollfd pfd = { .events = POLLIN };
	int e[MAX_CHAIN], extra, side, efd, dupfd, i;
	enum ctl_path path = variant->path;
	struct ctl_env *env = &self->env;
	uint64_t one = 1;

	for (i = 0; i < MAX_CHAIN; i++) {
		e[i] = epoll_create1(EPOLL_CLOEXEC);
		ASSERT_LE(0, e[i]);
	}
	extra = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, extra);
	side = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, side);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ASSERT_LE(0, efd);
	ASSERT_EQ(0, epoll_ctl(e[0], EPOLL_CTL_ADD, efd, &ev));
	for (i = 1; i < MAX_CHAIN; i++) {
		ev.data.u64 = i;
		ASSERT_EQ(0, ctl_by(env, path, e[i], EPOLL_CTL_ADD, e[i - 1],
				    (uintptr_t)&ev))
			TH_LOG("level %d", i);
	}

	/* A sixth level, at the bottom or at the top. */
	EXPECT_EQ(-ELOOP, ctl_by(env, path, e[0], EPOLL_CTL_ADD, extra,
				 (uintptr_t)&ev));
	EXPECT_EQ(-ELOOP, ctl_by(env, path, extra, EPOLL_CTL_ADD,
				 e[MAX_CHAIN - 1], (uintptr_t)&ev));
	EXPECT_EQ(-ENOENT, fdinfo_epoll_item(e[0], extra, NULL, NULL));
	EXPECT_EQ(-ENOENT, fdinfo_epoll_item(extra, e[MAX_CHAIN - 1], NULL,
					     NULL));
	/* A branch that stays within the limit. */
	EXPECT_EQ(0, ctl_by(env, path, e[2], EPOLL_CTL_ADD, side,
			    (uintptr_t)&ev));

	/* Loops, of two and of five epoll files. */
	EXPECT_EQ(-ELOOP, ctl_by(env, path, e[0], EPOLL_CTL_ADD, e[1],
				 (uintptr_t)&ev));
	EXPECT_EQ(-ELOOP, ctl_by(env, path, e[0], EPOLL_CTL_ADD,
				 e[MAX_CHAIN - 1], (uintptr_t)&ev));
	EXPECT_EQ(-ELOOP, ctl_by(env, path, side, EPOLL_CTL_ADD, e[3],
				 (uintptr_t)&ev));
	EXPECT_EQ(-ENOENT, fdinfo_epoll_item(e[0], e[1], NULL, NULL));
	/* MOD, DEL and DISABLE only look the item up. */
	EXPECT_EQ(-ENOENT, ctl_by(env, path, e[0], EPOLL_CTL_MOD, e[1],
				  (uintptr_t)&ev));
	EXPECT_EQ(-ENOENT, ctl_by(env, path, e[0], EPOLL_CTL_DEL, e[1], 0));
	if (env->has_disable)
		EXPECT_EQ(-ENOENT, ctl_by(env, path, e[0], EPOLL_CTL_DISABLE,
					  e[1], 0));

	/* Itself, directly and through a duplicate. */
	dupfd = dup(e[2]);
	ASSERT_LE(0, dupfd);
	EXPECT_EQ(-EINVAL, ctl_by(env, path, e[2], EPOLL_CTL_ADD, e[2],
				  (uintptr_t)&ev));
	EXPECT_EQ(-EINVAL, ctl_by(env, path, e[2], EPOLL_CTL_ADD, dupfd,
				  (uintptr_t)&ev));
	close(dupfd);

	/* An event at the bottom is seen at the top. */
	ASSERT_EQ(sizeof(one), write(efd, &one, sizeof(one)));
	pfd.fd = e[MAX_CHAIN - 1];
	EXPECT_EQ(1, poll(&pfd, 1, 1000));
	memset(&ev, 0, sizeof(ev));
	EXPECT_EQ(1, epoll_wait(e[MAX_CHAIN - 1], &ev, 1, 1000));
	EXPECT_EQ(MAX_CHAIN - 1, ev.data.u64);

	close(efd);
	close(side);
	close(extra);
	for (i = 0; i < MAX_CHAIN; i++)
		close(e[i]);
}

/*
 * epoll_wait(), epoll_pwait() and epoll_pwait2(): an epoll file with one
 * eventfd, and the bad memory.
 */
FIXTURE(bad_wait) {
	struct bad_mem mem;
	int memfd;		/* cannot be polled */
	int opath;		/* an O_PATH descriptor */
	int other;		/* an eventfd that is not an epoll file */
};

FIXTURE_SETUP(bad_wait)
{
	ASSERT_EQ(0, bad_mem_init(&self->mem));
	self->memfd = memfd_create("epoll_stress", MFD_CLOEXEC);
	ASSERT_LE(0, self->memfd);
	self->opath = open("/", O_PATH | O_CLOEXEC);
	ASSERT_LE(0, self->opath);
	self->other = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ASSERT_LE(0, self->other);
	ASSERT_EQ(-1, fcntl(CLOSED_FD, F_GETFD));
}

FIXTURE_TEARDOWN(bad_wait)
{
	EXPECT_TRUE(bad_mem_intact(&self->mem));
	bad_mem_exit(&self->mem);
}

enum wait_call { CALL_WAIT, CALL_PWAIT, CALL_PWAIT2, NR_WAIT_CALLS };

static const char *const wait_names[NR_WAIT_CALLS] = {
	"epoll_wait", "epoll_pwait", "epoll_pwait2",
};

/* Each call without a timeout: result or -errno. */
static int wait_by(enum wait_call call, int epfd, void *events, int max)
{
	struct __kernel_timespec ts = { 0 };
	long ret;

	switch (call) {
	case CALL_WAIT:
#ifdef __NR_epoll_wait
		ret = syscall(__NR_epoll_wait, epfd, events, max, 0);
#else
		/* arm64's (asm-generic) epoll_wait() is epoll_pwait(). */
		ret = syscall(__NR_epoll_pwait, epfd, events, max, 0, NULL,
			      KERNEL_SIGSET_SIZE);
#endif
		break;
	case CALL_PWAIT:
		ret = syscall(__NR_epoll_pwait, epfd, events, max, 0, NULL,
			      KERNEL_SIGSET_SIZE);
		break;
	default:
		ret = syscall(__NR_epoll_pwait2, epfd, events, max, &ts, NULL,
			      KERNEL_SIGSET_SIZE);
		break;
	}
	return ret < 0 ? -errno : ret;
}

/* An epoll file with @n eventfds registered with @mode, all readable. */
static int ready_epoll(uint32_t mode, int n, int *efds)
{
	struct epoll_event ev = { .events = EPOLLIN | mode };
	int epfd, i;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	for (i = 0; i < n; i++) {
		efds[i] = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
		ev.data.u64 = 100 + i;
		if (epfd < 0 || efds[i] < 0 ||
		    epoll_ctl(epfd, EPOLL_CTL_ADD, efds[i], &ev))
			return -1;
	}
	return epfd;
}

static void close_all(int epfd, int n, int *efds)
{
	while (n--)
		close(efds[n]);
	close(epfd);
}

/*
 * maxevents must be greater than zero (epoll_wait(2)), and at most
 * EP_MAX_EVENTS: INT_MAX bytes of events.
 */
TEST_F(bad_wait, maxevents_out_of_range)
{
	static const int bad[] = { 0, -1, INT_MIN, MAX_EVENTS + 1, INT_MAX };
	static struct epoll_event events[2];
	int efd, epfd, call;
	unsigned int i;

	epfd = ready_epoll(0, 1, &efd);
	ASSERT_LE(0, epfd);
	for (call = 0; call < NR_WAIT_CALLS; call++) {
		for (i = 0; i < ARRAY_SIZE(bad); i++) {
			EXPECT_EQ(-EINVAL, wait_by(call, epfd, events, bad[i]))
				TH_LOG("%s, maxevents %d", wait_names[call], bad[i]);
		}
		/* The largest value is fine: only ready events are written. */
		EXPECT_EQ(1, wait_by(call, epfd, events, MAX_EVENTS))
			TH_LOG("%s, maxevents %d", wait_names[call], MAX_EVENTS);
		EXPECT_EQ(100, events[0].data.u64);
	}
	close_all(epfd, 1, &efd);
}

/*
 * A buffer that cannot be written gives EFAULT, and the event that could
 * not be copied is not lost: the next call reports it, also for
 * edge-triggered and one-shot items (which stay armed). A buffer whose
 * first slot can be written gets that event, and the second one waits
 * for the next call. A misaligned buffer is fine.
 */
TEST_F(bad_wait, unwritable_buffers_lose_no_event)
{
	static const uint32_t modes[] = { 0, EPOLLET, EPOLLONESHOT };
	static const enum ev_ptr bad[] = {
		EV_NULL, EV_ONE, EV_UNMAPPED, EV_PROT_NONE, EV_READ_ONLY,
		EV_STRADDLING, EV_TOP,
	};
	struct epoll_event ev[2], got;
	struct bad_mem *m = &self->mem;
	int efds[2], epfd, call, n;
	unsigned int i, j;
	char *edge;

	for (call = 0; call < NR_WAIT_CALLS; call++) {
		for (i = 0; i < ARRAY_SIZE(modes); i++) {
			for (j = 0; j < ARRAY_SIZE(bad); j++) {
				void *buf = (void *)(uintptr_t)ev_addr(m, bad[j]);

				epfd = ready_epoll(modes[i], 1, efds);
				ASSERT_LE(0, epfd);
				EXPECT_EQ(-EFAULT, wait_by(call, epfd, buf, 1))
					TH_LOG("%s, mode %#x, buffer %s",
					       wait_names[call], modes[i],
					       ev_ptr_names[bad[j]]);
				EXPECT_EQ(1, wait_by(call, epfd, ev, 2))
					TH_LOG("%s, mode %#x: event lost after %s",
					       wait_names[call], modes[i],
					       ev_ptr_names[bad[j]]);
				EXPECT_EQ(100, ev[0].data.u64);
				close_all(epfd, 1, efds);
			}

			/* Room for one event before the hole. */
			edge = m->rw + m->page - sizeof(struct epoll_event);
			epfd = ready_epoll(modes[i], 2, efds);
			ASSERT_LE(0, epfd);
			EXPECT_EQ(1, wait_by(call, epfd, edge, 2));
			memcpy(&got, edge, sizeof(got));
			n = wait_by(call, epfd, ev, 2);
			ASSERT_LE(1, n);
			/* The other one; level-triggered, both. */
			EXPECT_TRUE(ev[0].data.u64 + got.data.u64 == 201 ||
				    ev[n - 1].data.u64 + got.data.u64 == 201)
				TH_LOG("%s, mode %#x: second event lost",
				       wait_names[call], modes[i]);
			close_all(epfd, 2, efds);

			/* Misaligned. */
			epfd = ready_epoll(modes[i], 1, efds);
			ASSERT_LE(0, epfd);
			EXPECT_EQ(1, wait_by(call, epfd, m->rw + 33, 1));
			memcpy(&got, m->rw + 33, sizeof(got));
			EXPECT_EQ(EPOLLIN, got.events);
			EXPECT_EQ(100, got.data.u64);
			close_all(epfd, 1, efds);
		}
	}
}

/* epfd not open or O_PATH: EBADF; not an epoll file: EINVAL. */
TEST_F(bad_wait, bad_epfd)
{
	const struct {
		int epfd;
		int expected;
	} cases[] = {
		{ -1, -EBADF },
		{ INT_MIN, -EBADF },
		{ INT_MAX, -EBADF },
		{ CLOSED_FD, -EBADF },
		{ self->opath, -EBADF },
		{ self->other, -EINVAL },
		{ self->memfd, -EINVAL },
	};
	struct epoll_event ev;
	unsigned int i;
	int call;

	for (call = 0; call < NR_WAIT_CALLS; call++) {
		for (i = 0; i < ARRAY_SIZE(cases); i++) {
			EXPECT_EQ(cases[i].expected,
				  wait_by(call, cases[i].epfd, &ev, 1))
				TH_LOG("%s, epfd %d", wait_names[call],
				       cases[i].epfd);
		}
	}
}

/*
 * epoll_pwait2()'s timeout is a struct __kernel_timespec as for ppoll():
 * unreadable gives EFAULT, out of range EINVAL. epoll_pwait() and
 * epoll_pwait2() take a signal mask of the kernel's sigset_t size only,
 * and fail with EFAULT when it cannot be read.
 */
TEST_F(bad_wait, bad_timeouts_and_sigmasks)
{
	static const struct __kernel_timespec bad_ts[] = {
		{ .tv_sec = 0, .tv_nsec = -1 },
		{ .tv_sec = 0, .tv_nsec = 1000000000 },
		{ .tv_sec = -1, .tv_nsec = 0 },
	};
	void *unmapped = (void *)(uintptr_t)ev_addr(&self->mem, EV_UNMAPPED);
	struct __kernel_timespec zero = { 0 };
	struct epoll_event ev;
	int efd, epfd;
	unsigned int i;
	sigset_t set;

	sigemptyset(&set);
	epfd = ready_epoll(0, 1, &efd);
	ASSERT_LE(0, epfd);
	for (i = 0; i < ARRAY_SIZE(bad_ts); i++) {
		EXPECT_EQ(-1, syscall(__NR_epoll_pwait2, epfd, &ev, 1,
				      &bad_ts[i], NULL, KERNEL_SIGSET_SIZE));
		EXPECT_EQ(EINVAL, errno);
	}
	EXPECT_EQ(-1, syscall(__NR_epoll_pwait2, epfd, &ev, 1, unmapped, NULL,
			      KERNEL_SIGSET_SIZE));
	EXPECT_EQ(EFAULT, errno);

	EXPECT_EQ(-1, syscall(__NR_epoll_pwait, epfd, &ev, 1, 0, &set,
			      KERNEL_SIGSET_SIZE + 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, syscall(__NR_epoll_pwait2, epfd, &ev, 1, &zero, &set,
			      KERNEL_SIGSET_SIZE / 2));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, syscall(__NR_epoll_pwait, epfd, &ev, 1, 0, unmapped,
			      KERNEL_SIGSET_SIZE));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, syscall(__NR_epoll_pwait2, epfd, &ev, 1, &zero, unmapped,
			      KERNEL_SIGSET_SIZE));
	EXPECT_EQ(EFAULT, errno);

	/* And the event is still there. */
	EXPECT_EQ(1, syscall(__NR_epoll_pwait2, epfd, &ev, 1, &zero, &set,
			     KERNEL_SIGSET_SIZE));
	close_all(epfd, 1, &efd);
}

/*
 * Stress
 */

#define STRESS_OWNERS		2	/* threads owning the checked items */
#define STRESS_CHAOS		4	/* threads on the shared pool */
#define STRESS_THREADS		(STRESS_OWNERS + STRESS_CHAOS)
#define ITEMS_PER_OWNER		4
#define STRESS_ITEMS		(STRESS_OWNERS * ITEMS_PER_OWNER)
#define STRESS_CHECKED		2	/* epoll files of the checked items */
#define STRESS_SLOTS		16	/* descriptors of the shared pool */
#define STRESS_GENS		4096	/* reported generations kept per item */
#define STRESS_SECONDS		15
#define STRESS_OPS		100000000ULL
#define STRESS_SEED		0x65706f6c6c2d7333ULL	/* "epoll-s3" */
#define STRESS_GRACE		120	/* harness timeout beyond the duration */
#define JOIN_GRACE_MS		60000	/* a thread not done by then hangs */
#define REPORT_WAIT_MS		20000	/* for a thread to note an event */
#define SETTLE_MS		10000	/* for released wakeup sources to go */
#define MAX_REPORTS		20
#define MAX_WAKEUP_SOURCES	512

/* The data of a checked item: a tag, the item, the generation. */
#define ITEM_TAG		0xe9e9ULL
#define GEN_BITS		32
#define GEN_MASK		((1ULL << GEN_BITS) - 1)

/* Allowed results of a call, as a mask of errno values (bit 0: success). */
#define OK_(err)		(1ULL << (err))

struct stress_opts {
	uint64_t seed;
	uint64_t ops;		/* operations of all threads together */
	unsigned int seconds;
	bool seed_given;
};

static struct stress_opts opts;

/* A number from the environment (decimal, 0x hex or 0 octal), or @def. */
static uint64_t env_u64(const char *name, uint64_t def, bool *given)
{
	const char *v = getenv(name);
	unsigned long long x;
	char *end;

	if (!v || !*v)
		return def;
	errno = 0;
	x = strtoull(v, &end, 0);
	if (errno || *end) {
		ksft_print_msg("ignoring %s=%s: not a number\n", name, v);
		return def;
	}
	if (given)
		*given = true;
	return x;
}

enum fd_kind {
	KIND_EVENTFD,
	KIND_PIPE,		/* fd: read end, peer: write end */
	KIND_SOCKET,		/* AF_UNIX stream pair */
	KIND_TIMERFD,
	KIND_FIFO,		/* checked items only: opened O_RDWR */
	KIND_EPOLL,
	KIND_MEMFD,		/* cannot be polled */
	NR_KINDS
};

static const char *const kind_names[NR_KINDS] = {
	"eventfd", "pipe", "socket", "timerfd", "FIFO", "epoll", "memfd",
};

enum stress_op {
	/* chaos threads */
	OP_CTL, OP_WAIT, OP_POLL, OP_POKE, OP_DRAIN, OP_HANGUP, OP_REPLACE,
	OP_DUP, OP_FORK, OP_USERNS, OP_CAPS, OP_POKE_ITEM,
	/* owner threads, with OP_CAPS and OP_POKE_ITEM */
	OP_ITEM_ADD, OP_ITEM_MOD, OP_ITEM_DEL, OP_ITEM_DISABLE, OP_ITEM_WAIT,
	OP_ITEM_DRAIN, OP_ITEM_RECREATE, OP_ITEM_CHECK,
	NR_STRESS_OPS
};

static const char *const op_names[NR_STRESS_OPS] = {
	"ctl", "wait", "poll", "poke", "drain", "hangup", "replace", "dup",
	"fork", "userns", "caps", "poke-item", "item-add", "item-mod",
	"item-del", "item-disable", "item-wait", "item-drain",
	"item-recreate", "item-check",
};

struct weight {
	enum stress_op op;
	unsigned int weight;
};

static const struct weight chaos_ops[] = {
	{ OP_CTL, 34 }, { OP_WAIT, 18 }, { OP_POLL, 5 }, { OP_POKE, 12 },
	{ OP_DRAIN, 6 }, { OP_HANGUP, 2 }, { OP_REPLACE, 5 }, { OP_DUP, 4 },
	{ OP_FORK, 1 }, { OP_USERNS, 1 }, { OP_CAPS, 2 }, { OP_POKE_ITEM, 10 },
};

static const struct weight owner_ops[] = {
	{ OP_ITEM_ADD, 12 }, { OP_ITEM_MOD, 18 }, { OP_ITEM_DEL, 8 },
	{ OP_ITEM_DISABLE, 20 }, { OP_ITEM_WAIT, 20 }, { OP_POKE_ITEM, 12 },
	{ OP_ITEM_DRAIN, 4 }, { OP_ITEM_RECREATE, 2 }, { OP_ITEM_CHECK, 2 },
	{ OP_CAPS, 2 },
};

/* A descriptor of the shared pool. */
struct slot {
	pthread_rwlock_t lock;	/* read: using fd, peer; write: changing them */
	int fd;
	int peer;		/* other end of a pipe or socket, or -1 */
	enum fd_kind kind;
	unsigned int file;	/* same value for duplicates of one file */
};

/* A checked item: EPOLLONESHOT, in one checked epoll file, one owner. */
struct item {
	pthread_rwlock_t lock;	/* read: poking fd; write (owner): replacing it */
	int fd;
	int peer;
	enum fd_kind kind;
	int epfd;		/* the checked epoll file it is in */
	/* A FIFO's name is its wakeup source's: unique, to look it up. */
	char name[64];
	char path[512];
	/* Known to the owner only. */
	bool added;		/* by the last ADD, no DEL since */
	bool disabled;		/* DISABLE returned 0 since the last arm */
	bool reported;		/* known to be reported since the last arm */
	bool wakeup_kept;	/* EPOLLWAKEUP kept by the last arm */
	uint64_t armed_gen;	/* generation of the last ADD or MOD that worked */
	uint32_t armed_mask;	/* and its mask */
	uint64_t del_gen;	/* armed_gen when DEL last removed it */
	uint64_t busy_gen;	/* DISABLE said EBUSY: a thread must report it */
	/* Shared with every thread that reports its events. */
	atomic_uint next_gen;	/* highest generation passed to ADD/MOD */
	atomic_uint disabled_gen;	/* generation that DISABLE disarmed */
	atomic_uint reported_gens[STRESS_GENS]; /* by gen % STRESS_GENS */
};

struct stress;

struct worker {
	struct stress *s;
	pthread_t thread;
	int idx;		/* owners first, then chaos threads */
	uint64_t rng;		/* the thread's sequence: seed and idx only */
	uint64_t step;		/* operations done */
	uint64_t steps_max;
	uint64_t syscalls;
	uint64_t ops[NR_STRESS_OPS];
	struct ring ring;	/* for IORING_OP_EPOLL_CTL */
	bool have_ring;
	uint64_t caps;		/* effective capabilities at the start */
	bool can_drop;		/* CAP_BLOCK_SUSPEND is among them */
	bool caps_dropped;
	atomic_int op;		/* the operation in progress, for hangs */
};

struct stress {
	uint64_t seed;
	bool has_disable;	/* kernel has EPOLL_CTL_DISABLE */
	bool pm_sleep;		/* kernel keeps EPOLLWAKEUP at all */
	bool ws_listed;		/* wakeup sources are in /sys/class/wakeup */
	char dir[256];		/* temporary directory for the FIFOs */
	int64_t deadline_ms;
	char *ro_page;		/* a buffer epoll_wait() cannot write */
	int checked[STRESS_CHECKED];
	struct slot slots[STRESS_SLOTS];
	struct item items[STRESS_ITEMS];
	struct worker workers[STRESS_THREADS];
	atomic_uint next_file;
	atomic_uint violations;
	atomic_uint reports;	/* events of checked items */
	atomic_uint disable_ok;
	atomic_uint disable_busy;
	atomic_uint eloop;
	atomic_uint userns_unavailable;
};

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t hash3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t state = a ^ b * 0x9e3779b97f4a7c15ULL ^ c * 0xc2b2ae3d27d4eb4fULL;

	return splitmix64(&state);
}

static enum stress_op pick_op(const struct weight *w, size_t n, uint64_t r)
{
	unsigned int total = 0, x;
	size_t i;

	for (i = 0; i < n; i++)
		total += w[i].weight;
	x = r % total;
	for (i = 0; x >= w[i].weight; i++)
		x -= w[i].weight;
	return w[i].op;
}

/* Count a broken invariant; print the first MAX_REPORTS of them. */
static void vreport(struct stress *s, int thread, uint64_t step,
		    const char *fmt, va_list ap)
{
	char msg[256];

	if (atomic_fetch_add(&s->violations, 1) >= MAX_REPORTS)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	ksft_print_msg("FAIL thread %d, operation %llu: %s\n", thread,
		       (unsigned long long)step, msg);
}

/* From a worker: which thread, and the operation to replay up to. */
static __printf(2, 3) void wfail(struct worker *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(w->s, w->idx, w->step, fmt, ap);
	va_end(ap);
}

/* From the main thread, after the run. */
static __printf(2, 3) void violation(struct stress *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(s, -1, 0, fmt, ap);
	va_end(ap);
}

static uint64_t item_data(unsigned int i, uint64_t gen)
{
	return ITEM_TAG << 48 | (uint64_t)i << GEN_BITS | gen;
}

/*
 * The mask of generation @gen of item @i: a function of the seed, so that
 * every thread that gets an event can tell what was asked for. Mostly the
 * usual events and flags, sometimes all 32 bits; EPOLLONESHOT always.
 */
static uint32_t item_mask(const struct stress *s, unsigned int i, uint64_t gen)
{
	uint64_t h = hash3(s->seed, i, gen);
	uint32_t mask = (uint32_t)h;

	if (h >> 32 & 3)
		mask &= EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLRDHUP |
			EPOLLRDNORM | EPOLLWRNORM | EPOLLET | EPOLLWAKEUP;
	if (h >> 34 & 15)
		mask &= ~EPOLLEXCLUSIVE;
	return mask | EPOLLONESHOT;
}

/* A mask for the chaos threads: any of the 32 bits. */
static uint32_t chaos_mask(uint64_t r)
{
	uint32_t mask = r >> 32;

	if (r & 1)
		return mask;
	mask &= EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLRDHUP | EPOLLRDNORM |
		EPOLLWRNORM | EPOLLERR | EPOLLHUP;
	if (r & 2)
		mask |= EPOLLET;
	if (r & 4)
		mask |= EPOLLONESHOT;
	if (r & 8)
		mask |= EPOLLWAKEUP;
	if (!(r >> 4 & 7))
		mask |= EPOLLEXCLUSIVE;
	return mask;
}

/* Data for the chaos threads: anything but a checked item's. */
static uint64_t chaos_data(uint64_t r)
{
	uint64_t data = hash3(r, 0, 0);

	return data >> 48 == ITEM_TAG ? data ^ 1ULL << 63 : data;
}

static enum fd_kind pool_kind(uint64_t r)
{
	static const enum fd_kind kinds[16] = {
		KIND_EPOLL, KIND_EPOLL, KIND_EPOLL, KIND_EPOLL, KIND_EPOLL,
		KIND_EVENTFD, KIND_EVENTFD, KIND_EVENTFD, KIND_PIPE, KIND_PIPE,
		KIND_PIPE, KIND_SOCKET, KIND_SOCKET, KIND_TIMERFD, KIND_TIMERFD,
		KIND_MEMFD,
	};

	return kinds[r % 16];
}

static enum fd_kind item_kind(uint64_t r)
{
	return r % (KIND_FIFO + 1);
}

static int make_fd(enum fd_kind kind, int *fd, int *peer)
{
	int p[2];

	*fd = -1;
	*peer = -1;
	switch (kind) {
	case KIND_EVENTFD:
		*fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		break;
	case KIND_PIPE:
		if (pipe2(p, O_NONBLOCK | O_CLOEXEC))
			return -errno;
		*fd = p[0];
		*peer = p[1];
		break;
	case KIND_SOCKET:
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			       0, p))
			return -errno;
		*fd = p[0];
		*peer = p[1];
		break;
	case KIND_TIMERFD:
		*fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		break;
	case KIND_EPOLL:
		*fd = epoll_create1(EPOLL_CLOEXEC);
		break;
	default:
		*fd = memfd_create("epoll_stress", MFD_CLOEXEC);
		break;
	}
	return *fd < 0 ? -errno : 0;
}

/* The file of a checked item; a FIFO is made anew at its path. */
static int make_item_fd(struct item *it)
{
	if (it->kind != KIND_FIFO)
		return make_fd(it->kind, &it->fd, &it->peer);
	it->peer = -1;
	unlink(it->path);
	if (mkfifo(it->path, 0600))
		return -errno;
	it->fd = open(it->path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	return it->fd < 0 ? -errno : 0;
}

static void close_pair(int *fd, int *peer)
{
	if (*fd >= 0)
		close(*fd);
	if (*peer >= 0)
		close(*peer);
	*fd = -1;
	*peer = -1;
}

static void lock_slot(struct slot *slot, bool write)
{
	if (write)
		pthread_rwlock_wrlock(&slot->lock);
	else
		pthread_rwlock_rdlock(&slot->lock);
}

/* Lock slots @a and @b (the same one, or -1 for none), in index order. */
static void lock_slots(struct stress *s, int a, bool wa, int b, bool wb)
{
	if (a == b) {
		if (a >= 0)
			lock_slot(&s->slots[a], wa || wb);
		return;
	}
	if (a > b) {
		int t = a;
		bool wt = wa;

		a = b;
		wa = wb;
		b = t;
		wb = wt;
	}
	if (a >= 0)
		lock_slot(&s->slots[a], wa);
	lock_slot(&s->slots[b], wb);
}

static void unlock_slots(struct stress *s, int a, int b)
{
	if (a >= 0)
		pthread_rwlock_unlock(&s->slots[a].lock);
	if (b >= 0 && b != a)
		pthread_rwlock_unlock(&s->slots[b].lock);
}

/* epoll_ctl() through the syscall or io_uring: 0, -errno or INT_MIN. */
static int w_ctl(struct worker *w, unsigned int path, int epfd, int op,
		 int fd, struct epoll_event *ev)
{
	w->syscalls++;
	if (path == PATH_SYSCALL || !w->have_ring)
		return epoll_ctl(epfd, op, fd, ev) ? -errno : 0;
	return ring_epoll_ctl(&w->ring, epfd, op, fd, ev,
			      path == PATH_URING_ASYNC);
}

/* Mostly the syscall, a quarter of the calls through io_uring. */
static unsigned int pick_path(uint64_t r)
{
	switch (r & 7) {
	case 0:
		return PATH_URING;
	case 1:
		return PATH_URING_ASYNC;
	default:
		return PATH_SYSCALL;
	}
}

/*
 * One of the waits, with a timeout of 0 or 1 ms: result or -errno. EINTR
 * is allowed: the task work of this thread's io_uring requests interrupts
 * waits like a signal does.
 */
static int w_wait(struct worker *w, unsigned int call, int epfd, void *events,
		  int max, int timeout_ms)
{
	struct __kernel_timespec ts = { .tv_nsec = timeout_ms * 1000000L };
	sigset_t set;
	long ret;

	w->syscalls++;
	switch (call % 4) {
	case 1:
		sigemptyset(&set);
		ret = syscall(__NR_epoll_pwait, epfd, events, max, timeout_ms,
			      &set, KERNEL_SIGSET_SIZE);
		break;
	case 2:
		ret = syscall(__NR_epoll_pwait2, epfd, events, max, &ts, NULL,
			      KERNEL_SIGSET_SIZE);
		break;
	default:
		ret = epoll_wait(epfd, events, max, timeout_ms);
		break;
	}
	return ret < 0 ? -errno : ret;
}

/* Make @fd readable (or, for a timerfd, soon readable). */
static void poke(struct worker *w, enum fd_kind kind, int fd, int peer,
		 uint64_t r)
{
	struct itimerspec its = { .it_value.tv_nsec = 1000 + r % 1000000 };
	uint64_t one = 1;
	ssize_t n = 0;
	char c = 'x';

	switch (kind) {
	case KIND_EVENTFD:
		n = write(fd, &one, sizeof(one)) == sizeof(one) ? 1 : -1;
		break;
	case KIND_PIPE:
		if (peer < 0)
			return;
		n = write(peer, &c, 1);
		break;
	case KIND_SOCKET:
		if (peer < 0)
			return;
		n = send(peer, &c, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
		break;
	case KIND_TIMERFD:
		n = timerfd_settime(fd, 0, &its, NULL) ? -1 : 1;
		break;
	case KIND_FIFO:
		n = write(fd, &c, 1);
		break;
	default:
		return;
	}
	w->syscalls++;
	if (n < 0 && errno != EAGAIN)
		wfail(w, "poking a %s failed: %s", kind_names[kind],
		      strerror(errno));
}

/* Consume what @fd has to read. */
static void drain(struct worker *w, enum fd_kind kind, int fd)
{
	struct epoll_event ev[16];
	char buf[64];
	ssize_t n;

	w->syscalls++;
	switch (kind) {
	case KIND_EPOLL:
		/* A pool epoll file never holds a checked item. */
		n = epoll_wait(fd, ev, ARRAY_SIZE(ev), 0);
		break;
	case KIND_SOCKET:
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		break;
	default:
		n = read(fd, buf, sizeof(buf));
		break;
	}
	if (n < 0 && errno != EAGAIN && errno != EINTR)
		wfail(w, "draining a %s failed: %s", kind_names[kind],
		      strerror(errno));
}

/*
 * Every event of a checked item that any thread gets goes through here.
 * None of these checks depends on timing.
 */
static void note_report(struct worker *w, uint64_t data, uint32_t events)
{
	struct stress *s = w->s;
	unsigned int i = data >> GEN_BITS & 0xff;
	uint64_t gen = data & GEN_MASK, old;
	uint32_t asked;
	struct item *it;

	if (i >= STRESS_ITEMS) {
		wfail(w, "event with corrupt data %#llx", (unsigned long long)data);
		return;
	}
	it = &s->items[i];
	if (!gen || gen > atomic_load(&it->next_gen)) {
		wfail(w, "item %u: event for generation %llu, which was never set",
		      i, (unsigned long long)gen);
		return;
	}
	asked = item_mask(s, i, gen) | EPOLLERR | EPOLLHUP;
	if (!events || events & ~asked)
		wfail(w, "item %u generation %llu: events %#x, asked for %#x",
		      i, (unsigned long long)gen, events, asked);
	old = atomic_exchange(&it->reported_gens[gen % STRESS_GENS], gen);
	if (old == gen)
		wfail(w, "item %u: one-shot generation %llu reported twice", i,
		      (unsigned long long)gen);
	if (atomic_load(&it->disabled_gen) == gen)
		wfail(w, "item %u: generation %llu reported although EPOLL_CTL_DISABLE disarmed it",
		      i, (unsigned long long)gen);
	atomic_fetch_add(&s->reports, 1);
}

static bool is_item_data(uint64_t data)
{
	return data >> 48 == ITEM_TAG;
}

/* Check the events returned by a wait of any thread. */
static void check_events(struct worker *w, const struct epoll_event *ev,
			 int n)
{
	int k;

	for (k = 0; k < n; k++) {
		if (is_item_data(ev[k].data.u64))
			note_report(w, ev[k].data.u64, ev[k].events);
		else if (!ev[k].events)
			wfail(w, "event without events, data %#llx",
			      (unsigned long long)ev[k].data.u64);
	}
}

static void toggle_caps(struct worker *w)
{
	uint64_t caps = w->caps;

	if (!w->can_drop)
		return;
	if (!w->caps_dropped)
		caps &= ~CAP_TO_MASK64(CAP_BLOCK_SUSPEND);
	w->syscalls += 2;
	if (cap_set_effective(caps)) {
		wfail(w, "capset failed: %s", strerror(errno));
		return;
	}
	w->caps_dropped = !w->caps_dropped;
}

static void poke_item(struct worker *w, struct item *it, uint64_t r)
{
	pthread_rwlock_rdlock(&it->lock);
	poke(w, it->kind, it->fd, it->peer, r);
	pthread_rwlock_unlock(&it->lock);
}

/*
 * Owner threads
 */

/*
 * DISABLE answered EBUSY for busy_gen: its event was reported, so some
 * thread noted it, or is about to. Wait for that before the next arm.
 */
static void item_check_reported(struct worker *w, unsigned int i)
{
	struct item *it = &w->s->items[i];
	uint64_t gen = it->busy_gen;
	int64_t until = now_ms() + REPORT_WAIT_MS;

	if (!gen)
		return;
	it->busy_gen = 0;
	while (atomic_load(&it->reported_gens[gen % STRESS_GENS]) != gen) {
		if (now_ms() > until) {
			wfail(w,
			      "item %u: DISABLE said EBUSY for generation %llu, but no thread got its event",
			      i, (unsigned long long)gen);
			return;
		}
		usleep(1000);
	}
}

/* ADD or MOD with a new generation: its item_mask(), or @mask if not 0. */
static void item_arm(struct worker *w, unsigned int i, int op,
		     unsigned int path, uint32_t mask)
{
	struct stress *s = w->s;
	struct item *it = &s->items[i];
	uint64_t gen = atomic_load(&it->next_gen) + 1;
	struct epoll_event ev = { .data.u64 = item_data(i, gen) };
	int want, ret;

	if (!mask)
		mask = item_mask(s, i, gen);
	ev.events = mask;

	item_check_reported(w, i);
	if (mask & EPOLLEXCLUSIVE)
		want = -EINVAL;		/* not with EPOLLONESHOT, nor for MOD */
	else if (op == EPOLL_CTL_ADD)
		want = it->added ? -EEXIST : 0;
	else
		want = it->added ? 0 : -ENOENT;
	atomic_store(&it->next_gen, gen);
	ret = w_ctl(w, path, it->epfd, op, it->fd, &ev);
	if (ret != want)
		wfail(w, "item %u: %s of generation %llu, mask %#x: %d, expected %d",
		      i, op == EPOLL_CTL_ADD ? "ADD" : "MOD",
		      (unsigned long long)gen, mask, ret, want);
	if (ret)
		return;
	it->added = true;
	it->disabled = false;
	it->reported = false;
	it->armed_gen = gen;
	it->armed_mask = mask;
	it->wakeup_kept = mask & EPOLLWAKEUP && s->pm_sleep && w->can_drop &&
			  !w->caps_dropped;
}

static void item_del(struct worker *w, unsigned int i, unsigned int path)
{
	struct item *it = &w->s->items[i];
	int want = it->added ? 0 : -ENOENT, ret;

	ret = w_ctl(w, path, it->epfd, EPOLL_CTL_DEL, it->fd, NULL);
	if (ret != want)
		wfail(w, "item %u: DEL: %d, expected %d", i, ret, want);
	if (ret)
		return;
	it->added = false;
	it->del_gen = it->armed_gen;
}

static int item_disable(struct worker *w, unsigned int i, unsigned int path)
{
	struct stress *s = w->s;
	struct item *it = &s->items[i];
	uint64_t gen = it->armed_gen;
	bool strict = !it->added || it->disabled || it->reported;
	int want, ret;

	ret = w_ctl(w, path, it->epfd, EPOLL_CTL_DISABLE, it->fd, NULL);
	if (!s->has_disable) {
		/* Op 4 is unknown: EFAULT for its NULL event, or EINVAL. */
		if (ret != -EFAULT && ret != -EINVAL)
			wfail(w, "item %u: op 4 on a kernel without DISABLE: %d",
			      i, ret);
		return ret;
	}
	want = !it->added ? -ENOENT : strict ? -EBUSY : 0;
	if (strict ? ret != want : ret != 0 && ret != -EBUSY) {
		wfail(w, "item %u: DISABLE of generation %llu: %d, expected %d",
		      i, (unsigned long long)gen, ret, want);
		return ret;
	}
	if (!it->added || strict)
		return ret;
	if (ret == 0) {
		/* Seen by note_report() in any thread, whichever comes first. */
		atomic_store(&it->disabled_gen, gen);
		if (atomic_load(&it->reported_gens[gen % STRESS_GENS]) == gen)
			wfail(w, "item %u: DISABLE returned 0, but generation %llu was reported",
			      i, (unsigned long long)gen);
		it->disabled = true;
		atomic_fetch_add(&s->disable_ok, 1);
	} else {
		it->busy_gen = gen;
		it->reported = true;
		atomic_fetch_add(&s->disable_busy, 1);
	}
	return ret;
}

/*
 * Wait on a checked epoll file. Besides note_report(): an item of this
 * thread is reported only while added, and only with its last generation.
 */
static void owner_wait(struct worker *w, uint64_t r)
{
	struct stress *s = w->s;
	struct epoll_event ev[8];
	int n, k, max = 1 + (r >> 1 & 7);

	n = w_wait(w, r >> 4, s->checked[r & 1], ev, max, !(r >> 6 & 3));
	if (n == -EINTR)
		return;
	if (n < 0 || n > max) {
		wfail(w, "wait on a checked epoll file: %d", n);
		return;
	}
	check_events(w, ev, n);
	for (k = 0; k < n; k++) {
		unsigned int i = ev[k].data.u64 >> GEN_BITS & 0xff;
		uint64_t gen = ev[k].data.u64 & GEN_MASK;
		struct item *it = &s->items[i];

		if (!is_item_data(ev[k].data.u64) || i >= STRESS_ITEMS ||
		    i / ITEMS_PER_OWNER != (unsigned int)w->idx)
			continue;
		if (!it->added)
			wfail(w,
			      "item %u: generation %llu reported after EPOLL_CTL_DEL returned (deleted at %llu)",
			      i, (unsigned long long)gen,
			      (unsigned long long)it->del_gen);
		else if (gen != it->armed_gen)
			wfail(w, "item %u: generation %llu reported after MOD to %llu",
			      i, (unsigned long long)gen,
			      (unsigned long long)it->armed_gen);
		it->reported = true;
	}
}

/* A new file for the item: DEL first, so that no stale item stays. */
static void item_recreate(struct worker *w, unsigned int i, uint64_t r)
{
	struct item *it = &w->s->items[i];
	int ret;

	item_check_reported(w, i);
	if (it->added)
		item_del(w, i, PATH_SYSCALL);
	pthread_rwlock_wrlock(&it->lock);
	close_pair(&it->fd, &it->peer);
	it->kind = item_kind(r);
	ret = make_item_fd(it);
	pthread_rwlock_unlock(&it->lock);
	w->syscalls += 2;
	if (ret)
		wfail(w, "item %u: cannot make a %s: %d", i, kind_names[it->kind],
		      ret);
}

/*
 * The mask in fdinfo: as asked, with EPOLLERR and EPOLLHUP, EPOLLWAKEUP
 * only if it was kept, or only the flags once disarmed.
 */
static void item_check_mask(struct worker *w, unsigned int i)
{
	struct item *it = &w->s->items[i];
	uint32_t stored = 0, full;
	int ret;

	ret = fdinfo_epoll_item_by_data(it->epfd, it->fd,
					item_data(i, it->armed_gen), &stored);
	w->syscalls += 3;
	if (!it->added) {
		if (ret != -ENOENT)
			wfail(w, "item %u: in fdinfo after DEL: %d", i, ret);
		return;
	}
	if (ret) {
		wfail(w, "item %u: not in fdinfo: %d", i, ret);
		return;
	}
	full = it->armed_mask | EPOLLERR | EPOLLHUP;
	if (!it->wakeup_kept)
		full &= ~EPOLLWAKEUP;
	if (stored == (full & EP_PRIVATE_BITS) ||
	    (stored == full && !it->disabled))
		return;
	wfail(w, "item %u: fdinfo mask %#x, expected %#x%s", i, stored, full,
	      it->disabled ? " disarmed" : " or disarmed");
}

/*
 * A one-shot item that DISABLE disarmed, or whose event was reported, is
 * not queued: its wakeup source must be inactive (active_time_ms is 0).
 * Only a FIFO has a name of its own to find the source by.
 */
static void item_check_ws(struct worker *w, unsigned int i)
{
	struct item *it = &w->s->items[i];
	struct wakeup_source_stats st;
	int found;

	if (!w->s->ws_listed || it->kind != KIND_FIFO || !it->added ||
	    !it->wakeup_kept || !(it->disabled || it->reported))
		return;
	found = wakeup_source_find(it->name, &st);
	w->syscalls += 10;
	if (found != 1)
		wfail(w, "item %u: %d wakeup sources named %s", i, found,
		      it->name);
	else if (st.active_time_ms)
		wfail(w, "item %u: disarmed, and its wakeup source active for %lu ms",
		      i, st.active_time_ms);
}

static void owner_step(struct worker *w, const uint64_t *r)
{
	unsigned int i = w->idx * ITEMS_PER_OWNER + r[1] % ITEMS_PER_OWNER;
	enum stress_op op = pick_op(owner_ops, ARRAY_SIZE(owner_ops), r[0]);
	struct item *it = &w->s->items[i];
	unsigned int path = pick_path(r[1] >> 8);

	atomic_store(&w->op, op);
	w->ops[op]++;
	switch (op) {
	case OP_ITEM_ADD:
		item_arm(w, i, EPOLL_CTL_ADD, path, 0);
		break;
	case OP_ITEM_MOD:
		item_arm(w, i, EPOLL_CTL_MOD, path, 0);
		break;
	case OP_ITEM_DEL:
		item_del(w, i, path);
		break;
	case OP_ITEM_DISABLE:
		item_disable(w, i, path);
		break;
	case OP_ITEM_WAIT:
		owner_wait(w, r[2]);
		break;
	case OP_POKE_ITEM:
		poke_item(w, it, r[2]);
		break;
	case OP_ITEM_DRAIN:
		drain(w, it->kind, it->fd);
		break;
	case OP_ITEM_RECREATE:
		item_recreate(w, i, r[2]);
		break;
	case OP_ITEM_CHECK:
		item_check_mask(w, i);
		item_check_ws(w, i);
		break;
	default:
		toggle_caps(w);
		break;
	}
}

/*
 * Chaos threads
 */

/* What a chaos epoll_ctl() may return, given what epfd and fd are. */
static uint64_t chaos_allowed(const struct stress *s, int op,
			      enum fd_kind ekind, unsigned int efile,
			      enum fd_kind tkind, unsigned int tfile)
{
	enum op_class c = op_class(op, s->has_disable);

	/*
	 * Op 4 gets a NULL event, which a kernel without DISABLE copies; an
	 * unknown op may fail with EINVAL first (unknown_op_ok()).
	 */
	if (c == OP_UNKNOWN && op == EPOLL_CTL_DISABLE)
		return OK_(EFAULT) | OK_(EINVAL);
	if (tkind == KIND_MEMFD)
		return OK_(EPERM) | (c == OP_UNKNOWN ? OK_(EINVAL) : 0);
	if (ekind != KIND_EPOLL || efile == tfile)
		return OK_(EINVAL);
	switch (c) {
	case OP_ADD:
		/* EINVAL: EPOLLEXCLUSIVE, or too many wakeup paths. */
		return OK_(0) | OK_(EEXIST) | OK_(EINVAL) |
		       (tkind == KIND_EPOLL ? OK_(ELOOP) : 0);
	case OP_MOD:
		return OK_(0) | OK_(ENOENT) | OK_(EINVAL);
	case OP_DEL:
		return OK_(0) | OK_(ENOENT);
	case OP_DISABLE:
		return OK_(0) | OK_(ENOENT) | OK_(EINVAL) | OK_(EBUSY);
	default:
		return OK_(EINVAL);
	}
}

/* Checked epoll files count as files 1 and 2; pool files start at 100. */
static void chaos_ctl(struct worker *w, const uint64_t *r)
{
	struct stress *s = w->s;
	int a = r[1] % STRESS_SLOTS, b = (r[1] >> 8) % STRESS_SLOTS;
	int c = r[1] >> 16 & 1, sel = r[2] & 31, op, epfd, fd, ret;
	bool epfd_checked = !(r[1] >> 17 & 7);
	bool fd_checked = !(r[1] >> 20 & 15);
	struct epoll_event ev = {
		.events = chaos_mask(r[3]),
		.data.u64 = chaos_data(r[3]),
	};
	enum fd_kind ekind = KIND_EPOLL, tkind = KIND_EPOLL;
	unsigned int efile = c + 1, tfile;
	uint64_t allowed;

	if (sel < 8)
		op = EPOLL_CTL_ADD;
	else if (sel < 13)
		op = EPOLL_CTL_MOD;
	else if (sel < 18)
		op = EPOLL_CTL_DEL;
	else if (sel < 24)
		op = EPOLL_CTL_DISABLE;
	else if (sel & 1)
		op = (int)(r[2] >> 32);
	else
		op = (int)(r[2] >> 32 & 0xff) - 1;

	if (epfd_checked)
		a = -1;
	if (fd_checked)
		b = -1;
	lock_slots(s, a, false, b, false);
	epfd = s->checked[c];
	if (a >= 0) {
		epfd = s->slots[a].fd;
		ekind = s->slots[a].kind;
		efile = s->slots[a].file;
	}
	tfile = (c ^ (r[1] >> 24 & 1)) + 1;
	fd = s->checked[tfile - 1];
	if (b >= 0) {
		fd = s->slots[b].fd;
		tkind = s->slots[b].kind;
		tfile = s->slots[b].file;
	}
	allowed = chaos_allowed(s, op, ekind, efile, tkind, tfile);
	ret = w_ctl(w, pick_path(r[1] >> 28), epfd, op, fd,
		    op == EPOLL_CTL_DEL || op == EPOLL_CTL_DISABLE ? NULL : &ev);
	unlock_slots(s, a, b);
	if (ret == -ELOOP)
		atomic_fetch_add(&s->eloop, 1);
	if (ret > 0 || ret < -63 || !(allowed & OK_(-ret)))
		wfail(w, "epoll_ctl(%s, op %d, %s, events %#x): %d",
		      kind_names[ekind], op, kind_names[tkind], ev.events, ret);
}

/*
 * Wait on a checked epoll file or a pool file; sometimes into a buffer
 * that cannot be written, which must lose no event of a checked item.
 */
static void chaos_wait(struct worker *w, const uint64_t *r)
{
	struct stress *s = w->s;
	int a = r[1] % STRESS_SLOTS, max = 1 + (r[2] & 15), n;
	bool checked = !(r[1] >> 8 & 3), bad = !(r[2] >> 9 & 31);
	enum fd_kind kind = KIND_EPOLL;
	struct epoll_event ev[16];
	int epfd = s->checked[r[1] >> 10 & 1];
	uint64_t allowed;

	if (checked)
		a = -1;
	lock_slots(s, a, false, a, false);
	if (a >= 0) {
		epfd = s->slots[a].fd;
		kind = s->slots[a].kind;
	}
	n = w_wait(w, r[2] >> 4, epfd, bad ? (void *)s->ro_page : ev, max,
		   !(r[2] >> 6 & 7));
	unlock_slots(s, a, a);
	allowed = OK_(EINTR) |
		  (kind != KIND_EPOLL ? OK_(EINVAL) : bad ? OK_(EFAULT) : 0);
	if (n < 0 ? n < -63 || !(allowed & OK_(-n)) : n > max ||
	    (n && (bad || kind != KIND_EPOLL)))
		wfail(w, "wait on a %s%s: %d", kind_names[kind],
		      bad ? " into a read-only buffer" : "", n);
	else if (n > 0)
		check_events(w, ev, n);
}

static void chaos_poll(struct worker *w, const uint64_t *r)
{
	struct stress *s = w->s;
	int a = r[1] % STRESS_SLOTS, b = (r[1] >> 8) % STRESS_SLOTS, n, k;
	struct pollfd pfd[3];

	lock_slots(s, a, false, b, false);
	pfd[0].fd = s->slots[a].fd;
	pfd[1].fd = s->slots[b].fd;
	pfd[2].fd = s->checked[r[1] >> 16 & 1];
	for (k = 0; k < 3; k++)
		pfd[k].events = POLLIN | POLLOUT | POLLPRI;
	w->syscalls++;
	n = poll(pfd, 3, 0);
	unlock_slots(s, a, b);
	if ((n < 0 && errno != EINTR) || n > 3)
		wfail(w, "poll: %d (%s)", n, strerror(errno));
	for (k = 0; k < 3 && n > 0; k++)
		if (pfd[k].revents & POLLNVAL)
			wfail(w, "poll: POLLNVAL for an open descriptor");
}

static void slot_io(struct worker *w, enum stress_op op, const uint64_t *r)
{
	struct slot *slot = &w->s->slots[r[1] % STRESS_SLOTS];

	lock_slot(slot, op == OP_HANGUP);
	if (op == OP_POKE) {
		poke(w, slot->kind, slot->fd, slot->peer, r[2]);
	} else if (op == OP_DRAIN) {
		drain(w, slot->kind, slot->fd);
	} else if (slot->peer >= 0) {
		/* The other end goes: EPOLLHUP, EPOLLRDHUP. */
		w->syscalls++;
		close(slot->peer);
		slot->peer = -1;
	}
	pthread_rwlock_unlock(&slot->lock);
}

static void slot_replace(struct worker *w, const uint64_t *r)
{
	struct stress *s = w->s;
	struct slot *slot = &s->slots[r[1] % STRESS_SLOTS];
	int ret;

	lock_slot(slot, true);
	close_pair(&slot->fd, &slot->peer);
	slot->kind = pool_kind(r[2]);
	slot->file = atomic_fetch_add(&s->next_file, 1);
	ret = make_fd(slot->kind, &slot->fd, &slot->peer);
	pthread_rwlock_unlock(&slot->lock);
	w->syscalls += 2;
	if (ret)
		wfail(w, "cannot make a %s: %d", kind_names[slot->kind], ret);
}

/* Slot b becomes a duplicate of slot a. */
static void slot_dup(struct worker *w, const uint64_t *r)
{
	struct stress *s = w->s;
	int a = r[1] % STRESS_SLOTS, b = (r[1] >> 8) % STRESS_SLOTS;
	struct slot *from = &s->slots[a], *to = &s->slots[b];

	if (a == b)
		return;
	lock_slots(s, a, false, b, true);
	close_pair(&to->fd, &to->peer);
	to->fd = fcntl(from->fd, F_DUPFD_CLOEXEC, 0);
	if (to->fd < 0)
		wfail(w, "dup of %s %d: %s", kind_names[from->kind], from->fd,
		      strerror(errno));
	to->peer = from->peer < 0 ? -1 : fcntl(from->peer, F_DUPFD_CLOEXEC, 0);
	to->kind = from->kind;
	to->file = from->file;
	unlock_slots(s, a, b);
	w->syscalls += 3;
}

/*
 * A forked child works on its copies of two pool descriptors, and only
 * with raw system calls: it was forked from a threaded process.
 * Exit status 0, or 1 for a wrong result.
 */
static int child_ops(int epfd, int fd, uint64_t r)
{
	struct epoll_event ev[4] = {
		{ .events = chaos_mask(r), .data.u64 = chaos_data(r) },
	};
	struct pollfd pfd = { .fd = epfd, .events = POLLIN };
	int n;

	n = epoll_wait(epfd, ev, ARRAY_SIZE(ev), 0);
	if (n < 0 && errno != EINVAL)
		return 1;
	ev[0].events = chaos_mask(r);
	ev[0].data.u64 = chaos_data(r);
	epoll_ctl(epfd, EPOLL_CTL_ADD, fd, ev);
	if (poll(&pfd, 1, 0) < 0)
		return 1;
	close(fd);
	/* Not open any more: EBADF before anything else. */
	if (fd != epfd && (!epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL) ||
			   errno != EBADF))
		return 1;
	return 0;
}

/*
 * A child in a new user namespace is root there, without
 * CAP_BLOCK_SUSPEND in the initial one: EPOLLWAKEUP is cleared, silently.
 * Exit status 0, 2 if EPOLLWAKEUP was kept, 3 without user namespaces.
 */
static int child_userns(int fd, uid_t uid)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLWAKEUP };
	uint32_t stored = 0;
	char map[64];
	int mapfd, len, epfd;

	if (unshare(CLONE_NEWUSER))
		return 3;
	len = snprintf(map, sizeof(map), "0 %u 1\n", uid);
	mapfd = open("/proc/self/uid_map", O_WRONLY | O_CLOEXEC);
	if (mapfd < 0 || write(mapfd, map, len) != len)
		return 3;
	close(mapfd);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return 1;
	/* memfd; an epoll file nested too deep; too many wakeup paths */
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev))
		return errno == EPERM || errno == ELOOP || errno == EINVAL ? 0 : 1;
	if (fdinfo_epoll_item(epfd, fd, &stored, NULL))
		return 1;
	return stored & EPOLLWAKEUP ? 2 : 0;
}

static void chaos_fork(struct worker *w, const uint64_t *r, bool userns)
{
	struct stress *s = w->s;
	int a = r[1] % STRESS_SLOTS, b = (r[1] >> 8) % STRESS_SLOTS;
	uid_t uid = getuid();
	int status = 0;
	pid_t pid;

	lock_slots(s, a, false, b, false);
	w->syscalls += 2;
	pid = fork();
	if (pid == 0)
		_exit(userns ? child_userns(s->slots[b].fd, uid) :
		      child_ops(s->slots[a].fd, s->slots[b].fd, r[2]));
	unlock_slots(s, a, b);
	if (pid < 0) {
		wfail(w, "fork: %s", strerror(errno));
		return;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 3 && userns) {
		atomic_fetch_add(&s->userns_unavailable, 1);
		return;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		wfail(w, "%s child: status %#x%s", userns ? "user namespace" : "forked",
		      status, WIFEXITED(status) && WEXITSTATUS(status) == 2 ?
		      " (EPOLLWAKEUP kept without CAP_BLOCK_SUSPEND)" : "");
}

static void chaos_step(struct worker *w, const uint64_t *r)
{
	enum stress_op op = pick_op(chaos_ops, ARRAY_SIZE(chaos_ops), r[0]);

	atomic_store(&w->op, op);
	w->ops[op]++;
	switch (op) {
	case OP_CTL:
		chaos_ctl(w, r);
		break;
	case OP_WAIT:
		chaos_wait(w, r);
		break;
	case OP_POLL:
		chaos_poll(w, r);
		break;
	case OP_POKE:
	case OP_DRAIN:
	case OP_HANGUP:
		slot_io(w, op, r);
		break;
	case OP_REPLACE:
		slot_replace(w, r);
		break;
	case OP_DUP:
		slot_dup(w, r);
		break;
	case OP_FORK:
	case OP_USERNS:
		chaos_fork(w, r, op == OP_USERNS);
		break;
	case OP_CAPS:
		toggle_caps(w);
		break;
	default:
		poke_item(w, &w->s->items[r[1] % STRESS_ITEMS], r[2]);
		break;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct stress *s = w->s;
	uint64_t r[4];
	int k;

	w->have_ring = !ring_init(&w->ring);
	if (!cap_get_effective(&w->caps))
		w->can_drop = w->caps & CAP_TO_MASK64(CAP_BLOCK_SUSPEND);
	while (w->step < w->steps_max && now_ms() < s->deadline_ms) {
		/* Four numbers a step, whatever the step does with them. */
		for (k = 0; k < 4; k++)
			r[k] = splitmix64(&w->rng);
		if (w->idx < STRESS_OWNERS)
			owner_step(w, r);
		else
			chaos_step(w, r);
		w->step++;
	}
	atomic_store(&w->op, -1);
	if (w->caps_dropped && !cap_set_effective(w->caps))
		w->caps_dropped = false;
	if (w->have_ring)
		ring_exit(&w->ring);
	return NULL;
}

static int stress_init(struct stress *s, bool has_disable)
{
	pthread_rwlockattr_t attr;
	uint64_t rng = hash3(opts.seed, 0x706f6f6c, 0);
	int i, ret;

	s->seed = opts.seed;
	s->has_disable = has_disable;
	s->pm_sleep = wakeup_count_supported();
	s->ws_listed = wakeup_sources_supported();
	snprintf(s->dir, sizeof(s->dir), "%s/epoll_stress.XXXXXX",
		 getenv("TMPDIR") ?: "/tmp");
	if (!mkdtemp(s->dir))
		return -errno;
	s->next_file = 100;
	s->ro_page = mmap(NULL, getpagesize(), PROT_READ,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->ro_page == MAP_FAILED)
		return -errno;
	/* Writers first: replacing a busy descriptor must not starve. */
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr,
				      PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	for (i = 0; i < STRESS_CHECKED; i++) {
		s->checked[i] = epoll_create1(EPOLL_CLOEXEC);
		if (s->checked[i] < 0)
			return -errno;
	}
	for (i = 0; i < STRESS_SLOTS; i++) {
		struct slot *slot = &s->slots[i];

		pthread_rwlock_init(&slot->lock, &attr);
		slot->kind = pool_kind(splitmix64(&rng));
		slot->file = atomic_fetch_add(&s->next_file, 1);
		ret = make_fd(slot->kind, &slot->fd, &slot->peer);
		if (ret)
			return ret;
	}
	for (i = 0; i < STRESS_ITEMS; i++) {
		struct item *it = &s->items[i];

		pthread_rwlock_init(&it->lock, &attr);
		it->epfd = s->checked[i % STRESS_CHECKED];
		it->kind = item_kind(splitmix64(&rng));
		snprintf(it->name, sizeof(it->name), "epoll-stress-%d-%d",
			 getpid(), i);
		snprintf(it->path, sizeof(it->path), "%s/%s", s->dir, it->name);
		ret = make_item_fd(it);
		if (ret)
			return ret;
	}
	for (i = 0; i < STRESS_THREADS; i++) {
		struct worker *w = &s->workers[i];

		w->s = s;
		w->idx = i;
		w->rng = hash3(opts.seed, i + 1, 0x74687264);
		w->steps_max = (opts.ops + STRESS_THREADS - 1) / STRESS_THREADS;
	}
	pthread_rwlockattr_destroy(&attr);
	return 0;
}

/*
 * After the run: close the pool, which takes its items out of the checked
 * epoll files. Then make each checked item ready, arm it with EPOLLWAKEUP,
 * so that it is queued with its wakeup source active, and DISABLE it: no
 * thread waits any more, so that returns 0 and releases the source.
 * Without DISABLE, delete the items. Then no item is queued, and no
 * wakeup source may be active.
 */
static void stress_quiesce(struct stress *s)
{
	const uint32_t mask = EPOLLIN | EPOLLOUT | EPOLLONESHOT | EPOLLWAKEUP;
	struct epoll_event ev[16];
	int i, j, n, ret;

	for (i = 0; i < STRESS_SLOTS; i++)
		close_pair(&s->slots[i].fd, &s->slots[i].peer);
	for (i = 0; i < STRESS_CHECKED; i++)
		for (j = 0; j < STRESS_CHECKED; j++)
			if (i != j)
				epoll_ctl(s->checked[i], EPOLL_CTL_DEL,
					  s->checked[j], NULL);
	for (i = 0; i < STRESS_ITEMS; i++) {
		struct worker *w = &s->workers[i / ITEMS_PER_OWNER];
		struct item *it = &s->items[i];

		item_check_reported(w, i);
		if (s->has_disable)
			poke_item(w, it, 0);
		else if (it->added)
			item_del(w, i, PATH_SYSCALL);
	}
	/* Until the timerfds have fired. */
	usleep(2000);
	for (i = 0; s->has_disable && i < STRESS_ITEMS; i++) {
		struct worker *w = &s->workers[i / ITEMS_PER_OWNER];
		struct item *it = &s->items[i];

		item_arm(w, i, it->added ? EPOLL_CTL_MOD : EPOLL_CTL_ADD,
			 PATH_SYSCALL, mask);
		ret = item_disable(w, i, PATH_SYSCALL);
		if (ret)
			wfail(w, "item %u: queued, reported to nobody, and DISABLE returned %d",
			      i, ret);
		item_check_ws(w, i);
	}
	for (i = 0; i < STRESS_CHECKED; i++) {
		n = epoll_wait(s->checked[i], ev, ARRAY_SIZE(ev), 0);
		for (j = 0; j < n; j++)
			violation(s, "event %#x, data %#llx, with every item disarmed",
				  ev[j].events, (unsigned long long)ev[j].data.u64);
	}
}

static void stress_close(struct stress *s)
{
	int i;

	for (i = 0; i < STRESS_ITEMS; i++)
		close_pair(&s->items[i].fd, &s->items[i].peer);
	for (i = 0; i < STRESS_CHECKED; i++)
		close(s->checked[i]);
	for (i = 0; i < STRESS_ITEMS; i++)
		unlink(s->items[i].path);
	rmdir(s->dir);
	munmap(s->ro_page, getpagesize());
}

/* Descriptors open in this process; with @log, say what they are. */
static int count_fds(bool log)
{
	char path[300], target[256];
	struct dirent *de;
	int n = 0;
	ssize_t len;
	DIR *dir;

	dir = opendir("/proc/self/fd");
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		n++;
		if (!log)
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		target[len < 0 ? 0 : len] = '\0';
		ksft_print_msg("fd %s: %s\n", de->d_name, target);
	}
	closedir(dir);
	return n;
}

/* Names of the wakeup sources in /sys/class/wakeup, sorted. */
struct ws_list {
	int n;
	char name[MAX_WAKEUP_SOURCES][48];
};

static int cmp_names(const void *a, const void *b)
{
	return strcmp(a, b);
}

static int ws_list_read(struct ws_list *l)
{
	struct dirent *de;
	DIR *dir;

	l->n = 0;
	dir = opendir(WAKEUP_CLASS_PATH);
	if (!dir)
		return -errno;
	while ((de = readdir(dir)) && l->n < MAX_WAKEUP_SOURCES) {
		if (de->d_name[0] == '.' ||
		    __wakeup_attr(de->d_name, "name", l->name[l->n],
				  sizeof(l->name[0])))
			continue;
		l->n++;
	}
	closedir(dir);
	qsort(l->name, l->n, sizeof(l->name[0]), cmp_names);
	return l->n;
}

/* Print the names in @now that are not in @before. */
static void ws_list_diff(const struct ws_list *before, const struct ws_list *now)
{
	int i = 0, j = 0, c;

	while (j < now->n) {
		c = i < before->n ? strcmp(before->name[i], now->name[j]) : 1;
		if (c < 0) {
			i++;
		} else if (c > 0) {
			ksft_print_msg("wakeup source \"%s\" left over\n",
				       now->name[j++]);
		} else {
			i++;
			j++;
		}
	}
}

static void stress_report(struct stress *s, int64_t ms)
{
	uint64_t ops[NR_STRESS_OPS] = { 0 }, steps = 0, syscalls = 0;
	char line[512];
	int i, k, len = 0;

	for (i = 0; i < STRESS_THREADS; i++) {
		steps += s->workers[i].step;
		syscalls += s->workers[i].syscalls;
		for (k = 0; k < NR_STRESS_OPS; k++)
			ops[k] += s->workers[i].ops[k];
	}
	if (ms < 1)
		ms = 1;
	ksft_print_msg("stress: %lld.%03lld s, %llu ops (%llu/s), %llu syscalls (%llu/s)\n",
		       (long long)ms / 1000, (long long)ms % 1000,
		       (unsigned long long)steps,
		       (unsigned long long)(steps * 1000 / ms),
		       (unsigned long long)syscalls,
		       (unsigned long long)(syscalls * 1000 / ms));
	ksft_print_msg("stress: checked items: %llu events; DISABLE: %llu x 0, %llu x EBUSY\n",
		       (unsigned long long)atomic_load(&s->reports),
		       (unsigned long long)atomic_load(&s->disable_ok),
		       (unsigned long long)atomic_load(&s->disable_busy));
	for (k = 0; k < NR_STRESS_OPS; k++)
		len += snprintf(line + len, sizeof(line) - len, " %s %llu",
				op_names[k], (unsigned long long)ops[k]);
	ksft_print_msg("stress: %d threads:%s; ELOOP %llu\n", STRESS_THREADS, line,
		       (unsigned long long)atomic_load(&s->eloop));
}

FIXTURE(stress) {
	struct stress *s;
	struct ws_list *ws_before, *ws_now;
};

FIXTURE_SETUP(stress)
{
	self->s = calloc(1, sizeof(*self->s));
	self->ws_before = calloc(1, sizeof(*self->ws_before));
	self->ws_now = calloc(1, sizeof(*self->ws_now));
	ASSERT_TRUE(self->s && self->ws_before && self->ws_now);
}

FIXTURE_TEARDOWN(stress)
{
	free(self->ws_now);
	free(self->ws_before);
	free(self->s);
}

TEST_F_TIMEOUT(stress, invariants_hold_and_nothing_leaks,
	       STRESS_SECONDS + STRESS_GRACE)
{
	struct stress *s = self->s;
	int fds_before, ws_before = -1, probe, i, ret;
	bool handshake = false;
	int64_t start, until;
	struct timespec ts;

	ksft_print_msg("seed=%#llx seconds=%u ops=%llu (EPOLL_STRESS_SEED=%#llx replays it)\n",
		       (unsigned long long)opts.seed, opts.seconds,
		       (unsigned long long)opts.ops,
		       (unsigned long long)opts.seed);
	probe = epoll_ctl_disable_probe();
	ASSERT_LE(0, probe);
	if (!probe)
		ksft_print_msg("skipped: the EPOLL_CTL_DISABLE checks (kernel lacks it)\n");
	signal(SIGPIPE, SIG_IGN);

	fds_before = count_fds(false);
	ASSERT_LT(0, fds_before);
	if (wakeup_sources_supported())
		ws_before = ws_list_read(self->ws_before);
	if (wakeup_count_supported()) {
		handshake = wakeup_count_read_bounded(SETTLE_MS) == 1;
		if (!handshake)
			ksft_print_msg("skipped: wakeup_count check, a wakeup source is active\n");
	} else {
		ksft_print_msg("skipped: the wakeup source checks (no CONFIG_PM_SLEEP)\n");
	}

	ASSERT_EQ(0, stress_init(s, probe));
	start = now_ms();
	s->deadline_ms = start + (int64_t)opts.seconds * 1000;
	for (i = 0; i < STRESS_THREADS; i++)
		ASSERT_EQ(0, pthread_create(&s->workers[i].thread, NULL,
					    worker_main, &s->workers[i]));

	/* A thread that does not come back is stuck in the kernel. */
	until = s->deadline_ms + JOIN_GRACE_MS;
	for (i = 0; i < STRESS_THREADS; i++) {
		struct worker *w = &s->workers[i];
		int64_t left = until - now_ms();

		clock_gettime(CLOCK_REALTIME, &ts);
		left = left < 0 ? 0 : left;
		ts.tv_sec += left / 1000 + (ts.tv_nsec + left % 1000 * 1000000) / 1000000000;
		ts.tv_nsec = (ts.tv_nsec + left % 1000 * 1000000) % 1000000000;
		ret = pthread_timedjoin_np(w->thread, NULL, &ts);
		if (ret) {
			int op = atomic_load(&w->op);

			ksft_print_msg("FAIL thread %d hangs in operation %llu (%s): %s\n",
				       i, (unsigned long long)w->step,
				       op >= 0 ? op_names[op] : "none",
				       strerror(ret));
			fflush(stdout);
			_exit(KSFT_FAIL);
		}
	}
	stress_report(s, now_ms() - start);
	start = now_ms();

	/* The checks that need the end of the run. */
	for (i = 0; i < STRESS_OWNERS; i++) {
		struct worker *w = &s->workers[i];
		int k;

		for (k = 0; k < ITEMS_PER_OWNER; k++)
			item_check_reported(w, i * ITEMS_PER_OWNER + k);
	}
	stress_quiesce(s);
	if (handshake && wakeup_count_read_bounded(SETTLE_MS) != 1)
		violation(s, "every item disarmed, and a read of %s still blocks",
			  WAKEUP_COUNT_PATH);
	stress_close(s);

	if (count_fds(false) != fds_before) {
		violation(s, "%d descriptors open, %d before the run",
			  count_fds(false), fds_before);
		count_fds(true);
	}
	if (ws_before >= 0) {
		until = now_ms() + SETTLE_MS;
		while (ws_list_read(self->ws_now) != ws_before && now_ms() < until)
			usleep(10000);
		if (self->ws_now->n != ws_before) {
			violation(s, "%d wakeup sources, %d before the run",
				  self->ws_now->n, ws_before);
			ws_list_diff(self->ws_before, self->ws_now);
		}
	}
	if (handshake && wakeup_count_read_bounded(SETTLE_MS) != 1)
		violation(s, "everything closed, and a read of %s still blocks",
			  WAKEUP_COUNT_PATH);
	ksft_print_msg("stress: checks after the run: %lld ms\n",
		       (long long)(now_ms() - start));
	if (atomic_load(&s->userns_unavailable))
		ksft_print_msg("skipped: %llu user namespace children (no user namespaces)\n",
			       (unsigned long long)atomic_load(&s->userns_unavailable));
	EXPECT_EQ(0, atomic_load(&s->violations))
		TH_LOG("seed %#llx: EPOLL_STRESS_SEED=%#llx EPOLL_STRESS_SECONDS=%u replays it",
		       (unsigned long long)opts.seed,
		       (unsigned long long)opts.seed, opts.seconds);
}

/*
 * Read the options once, and let the harness's timeout of the stress test
 * follow EPOLL_STRESS_SECONDS; like XFAIL_ADD(), this runs after the tests
 * are registered.
 */
static void __attribute__((constructor(KSELFTEST_PRIO_XFAIL))) stress_options(void)
{
	uint64_t seconds;

	opts.seed = env_u64("EPOLL_STRESS_SEED", STRESS_SEED, &opts.seed_given);
	opts.ops = env_u64("EPOLL_STRESS_OPS", STRESS_OPS, NULL);
	seconds = env_u64("EPOLL_STRESS_SECONDS", STRESS_SECONDS, NULL);
	opts.seconds = seconds > 7 * 86400 ? 7 * 86400 : seconds;
	_stress_invariants_hold_and_nothing_leaks_object->timeout =
		opts.seconds + STRESS_GRACE;
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
