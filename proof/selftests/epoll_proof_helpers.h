/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the local proof layer of the epoll selftests
 * (epoll_proof_*_test.c), not for upstream. The posted tests have their
 * own, smaller epoll_helpers.h; the two are never included together.
 *
 * - cap_get_effective(), cap_set_effective(), cap_is_effective():
 *   raw capget()/capset() on the calling thread (no libcap), so that a
 *   test can drop exactly one capability from its effective set and put
 *   it back afterwards.
 * - fdinfo_epoll_item(), fdinfo_epoll_item_by_data(): the events mask and
 *   data of one item as shown in /proc/self/fdinfo/<epfd>, i.e. the mask
 *   the kernel really stored.
 * - epoll_ctl_disable_probe(): whether the kernel has EPOLL_CTL_DISABLE.
 * - ring_*(): a raw io_uring instance (no liburing) that submits
 *   IORING_OP_EPOLL_CTL and waits for its completion.
 * - wakeup_count_reader_*(), wakeup_count_read_bounded(): a read of
 *   /sys/power/wakeup_count bounded in time. Such a read blocks while any
 *   wakeup source is active, which is what holds up the suspend handshake
 *   of a suspend daemon.
 * - wakeup_source_find(): look up a wakeup source by name in
 *   /sys/class/wakeup.
 * - task_sleeps(), process_sleeps(): whether a thread of this process, or
 *   a child process, sleeps, and in which system call.
 * - mtx_holder_*(): a thread that stops in the middle of an epoll_wait()
 *   scan, holding ep->mtx, until the test lets it go on.
 * - kernel_reports_*(): the bug reports (WARN, oops, KASAN, soft lockup,
 *   lockdep) the kernel made while the program ran, and the body of a
 *   last test that fails on them.
 *
 * All functions return 0 (or a count, or a flag as documented) on success
 * and a negative errno on failure; none of them prints anything, except
 * kernel_reports_check(), a test body.
 */

#ifndef __EPOLL_PROOF_HELPERS_H
#define __EPOLL_PROOF_HELPERS_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/io_uring.h>
#include <linux/userfaultfd.h>

#ifndef EPOLLEXCLUSIVE
#define EPOLLEXCLUSIVE 0x10000000
#endif

#ifndef EPOLLWAKEUP
#define EPOLLWAKEUP 0x20000000
#endif

#ifndef EPOLL_CTL_DISABLE
#define EPOLL_CTL_DISABLE 4
#endif

#ifndef CAP_BLOCK_SUSPEND
#define CAP_BLOCK_SUSPEND 36
#endif

#ifndef __NR_close_range
#define __NR_close_range 436
#endif

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif

#ifndef __NR_io_uring_enter
#define __NR_io_uring_enter 426
#endif

/* Bit of capability @cap in a 64-bit capability mask. */
#define CAP_TO_MASK64(cap) (1ULL << (cap))

#define WAKEUP_COUNT_PATH "/sys/power/wakeup_count"
#define WAKEUP_CLASS_PATH "/sys/class/wakeup"

/* Capabilities */

static inline int __cap_data(struct __user_cap_data_struct data[2], bool set)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
		.pid = 0,
	};
	long ret;

	if (set)
		ret = syscall(__NR_capset, &hdr, data);
	else
		ret = syscall(__NR_capget, &hdr, data);
	return ret ? -errno : 0;
}

/* Store the effective capability set of the calling thread in @effective. */
static inline int cap_get_effective(uint64_t *effective)
{
	struct __user_cap_data_struct data[2];
	int ret;

	ret = __cap_data(data, false);
	if (ret)
		return ret;
	*effective = (uint64_t)data[1].effective << 32 | data[0].effective;
	return 0;
}

/*
 * Make @effective the effective capability set of the calling thread; the
 * permitted and inheritable sets are left as they are. A capability that
 * is still permitted can be raised again later, so
 *
 *	cap_get_effective(&saved);
 *	cap_set_effective(saved & ~CAP_TO_MASK64(CAP_BLOCK_SUSPEND));
 *	...
 *	cap_set_effective(saved);
 *
 * drops exactly one capability and restores the original state.
 */
static inline int cap_set_effective(uint64_t effective)
{
	struct __user_cap_data_struct data[2];
	int ret;

	ret = __cap_data(data, false);
	if (ret)
		return ret;
	data[0].effective = (uint32_t)effective;
	data[1].effective = (uint32_t)(effective >> 32);
	return __cap_data(data, true);
}

/* 1 if @cap is in the effective set of the calling thread, 0 if not. */
static inline int cap_is_effective(int cap)
{
	uint64_t effective;
	int ret;

	ret = cap_get_effective(&effective);
	if (ret)
		return ret;
	return !!(effective & CAP_TO_MASK64(cap));
}

/* /proc/self/fdinfo of an epoll fd */

static inline int __fdinfo_epoll_find(int epfd, int tfd, const uint64_t *want,
				      uint32_t *events, uint64_t *data)
{
	char path[64], *line = NULL;
	unsigned long long d;
	size_t len = 0;
	int fd, ret = -ENOENT;
	unsigned int ev;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", epfd);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &len, f) > 0) {
		if (sscanf(line, "tfd: %d events: %x data: %llx",
			   &fd, &ev, &d) != 3 || fd != tfd ||
		    (want && d != *want))
			continue;
		if (events)
			*events = ev;
		if (data)
			*data = d;
		ret = 0;
		break;
	}
	free(line);
	fclose(f);
	return ret;
}

/*
 * Find the item of target fd @tfd in /proc/self/fdinfo/@epfd, whose lines
 * read "tfd: <fd> events: <hex> data: <hex> ...", and store its events
 * mask and data in @events and @data (either may be NULL).
 * Return 0 if found, -ENOENT if @tfd is not registered in @epfd.
 */
static inline int fdinfo_epoll_item(int epfd, int tfd, uint32_t *events,
				    uint64_t *data)
{
	return __fdinfo_epoll_find(epfd, tfd, NULL, events, data);
}

/*
 * As fdinfo_epoll_item(), for the item of @tfd whose data is @data. Items
 * are keyed by file and fd number: after @tfd was closed while a duplicate
 * kept its file open, the stale item still shows the same tfd.
 */
static inline int fdinfo_epoll_item_by_data(int epfd, int tfd, uint64_t data,
					    uint32_t *events)
{
	return __fdinfo_epoll_find(epfd, tfd, &data, events, NULL);
}

/* EPOLL_CTL_DISABLE */

static inline int __ctl_disable(int epfd, int fd)
{
	return epoll_ctl(epfd, EPOLL_CTL_DISABLE, fd, NULL) ? -errno : 0;
}

static inline bool __unknown_op_errno(int ret)
{
	return ret == -EFAULT || ret == -EINVAL;
}

/*
 * Probe for EPOLL_CTL_DISABLE, with a NULL event on a valid epoll fd and
 * eventfd: first unregistered, then registered as an armed oneshot item.
 * A kernel that has the operation answers ENOENT, then 0 and disarms the
 * item. On a kernel without it, 4 is an unknown op: it fails and changes
 * nothing, with EFAULT where the event is read before the op is looked
 * at (Linux 6.12) or with EINVAL where unknown ops are rejected first.
 * Neither kernel answers the other way: an unknown op never gets as far
 * as the lookup (ENOENT), never succeeds and never changes an item.
 *
 * Returns 1 if the operation is supported, 0 if not. Any other answer is a
 * broken operation, which must fail the tests rather than skip them: then
 * the probe returns the -errno of the DISABLE of the armed item.
 */
static inline int epoll_ctl_disable_probe(void)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT };
	int epfd, efd, unregistered, armed = -EPROTO, ret;
	uint32_t before = 0, after = 0;
	bool changed = false;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	efd = eventfd(0, EFD_CLOEXEC);
	if (epfd < 0 || efd < 0) {
		ret = -errno;
		if (epfd >= 0)
			close(epfd);
		return ret;
	}
	unregistered = __ctl_disable(epfd, efd);
	ret = epoll_ctl(epfd, EPOLL_CTL_ADD, efd, &ev) ? -errno : 0;
	if (!ret)
		ret = fdinfo_epoll_item(epfd, efd, &before, NULL);
	if (!ret) {
		armed = __ctl_disable(epfd, efd);
		changed = fdinfo_epoll_item(epfd, efd, &after, NULL) ||
			  after != before;
	}
	close(efd);
	close(epfd);
	if (ret)
		return ret;

	if (unregistered == -ENOENT || !armed || changed)
		return 1;
	if (__unknown_op_errno(unregistered) &&
	    __unknown_op_errno(armed))
		return 0;
	return armed;
}

/* Bounded read of /sys/power/wakeup_count */

/* True if the kernel has CONFIG_PM_SLEEP (the file exists and is readable). */
static inline bool wakeup_count_supported(void)
{
	return access(WAKEUP_COUNT_PATH, R_OK) == 0;
}

/*
 * A child process blocked in read() of /sys/power/wakeup_count. The child
 * keeps no other file of its parent open, so it never pins an epoll file,
 * and it is killed when its parent dies.
 */
struct wakeup_count_reader {
	pid_t pid;		/* the child, 0 when none is running */
	int pipefd;		/* read end of the pipe the child reports on */
	unsigned long count;	/* the value read, once the read completed */
};

struct __wakeup_count_report {
	int error;		/* errno of the failed open() or read(), or 0 */
	unsigned long count;
};

static inline void __wakeup_count_child(int wfd, pid_t parent)
{
	struct __wakeup_count_report rep = { 0 };
	char buf[32] = "";
	ssize_t n;
	int fd;

	/* Never outlive the test, blocked forever in read(). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(1);
	/*
	 * Keep only the pipe, as fd 3: no epoll file that the test means to
	 * release, and no standard stream that a test runner waits on.
	 */
	if (wfd != 3 && dup2(wfd, 3) != 3)
		_exit(1);
	if (syscall(__NR_close_range, 0U, 2U, 0U) ||
	    syscall(__NR_close_range, 4U, ~0U, 0U))
		for (fd = 0; fd < 1024; fd++)
			if (fd != 3)
				close(fd);

	fd = open(WAKEUP_COUNT_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rep.error = errno;
	} else {
		n = read(fd, buf, sizeof(buf) - 1);
		if (n < 0)
			rep.error = errno;
		else
			rep.count = strtoul(buf, NULL, 10);
	}
	if (write(3, &rep, sizeof(rep)) != sizeof(rep))
		_exit(1);
	_exit(0);
}

/* Fork a child that reads /sys/power/wakeup_count and reports to @r. */
static inline int wakeup_count_reader_start(struct wakeup_count_reader *r)
{
	pid_t parent = getpid();
	int p[2];

	r->pid = 0;
	r->count = 0;
	if (pipe2(p, O_CLOEXEC))
		return -errno;
	r->pid = fork();
	if (r->pid < 0) {
		r->pid = 0;
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (r->pid == 0)
		__wakeup_count_child(p[1], parent);
	close(p[1]);
	r->pipefd = p[0];
	return 0;
}

/* Kill and reap the child of @r if it is still running. */
static inline void wakeup_count_reader_stop(struct wakeup_count_reader *r)
{
	if (!r->pid)
		return;
	kill(r->pid, SIGKILL);
	waitpid(r->pid, NULL, 0);
	close(r->pipefd);
	r->pid = 0;
}

static inline int64_t __monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Wait up to @timeout_ms for the read of @r to complete.
 * Return 1 if it completed (the value is in r->count and the child is
 * reaped), 0 if it is still blocked after @timeout_ms (the child keeps
 * waiting: call again, or wakeup_count_reader_stop()), or a negative
 * errno if the read itself failed.
 */
static inline int wakeup_count_reader_wait(struct wakeup_count_reader *r,
					   int timeout_ms)
{
	int64_t deadline = __monotonic_ms() + timeout_ms;
	struct pollfd pfd = { .fd = r->pipefd, .events = POLLIN };
	struct __wakeup_count_report rep;
	int64_t left;
	ssize_t n;
	int ret;

	if (!r->pid)
		return -ECHILD;
	for (;;) {
		left = deadline - __monotonic_ms();
		ret = poll(&pfd, 1, left > 0 ? (int)left : 0);
		if (ret > 0)
			break;
		if (ret == 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
	n = read(r->pipefd, &rep, sizeof(rep));
	if (n != sizeof(rep))
		rep.error = EIO;	/* the child died before reporting */
	waitpid(r->pid, NULL, 0);
	close(r->pipefd);
	r->pid = 0;
	if (rep.error)
		return -rep.error;
	r->count = rep.count;
	return 1;
}

/*
 * Read /sys/power/wakeup_count, giving up after @timeout_ms.
 * Return 1 if the read completed, 0 if it was still blocked (because a
 * wakeup source is active), or a negative errno.
 */
static inline int wakeup_count_read_bounded(int timeout_ms)
{
	struct wakeup_count_reader r;
	int ret;

	ret = wakeup_count_reader_start(&r);
	if (ret)
		return ret;
	ret = wakeup_count_reader_wait(&r, timeout_ms);
	wakeup_count_reader_stop(&r);
	return ret;
}

/* Wakeup sources in /sys/class/wakeup */

struct wakeup_source_stats {
	unsigned long active_count;	/* times it went from inactive to active */
	unsigned long event_count;	/* events signalled (__pm_stay_awake()) */
	unsigned long active_time_ms;	/* 0 while inactive, else time active */
};

/* True if the kernel lists its wakeup sources (CONFIG_PM_SLEEP). */
static inline bool wakeup_sources_supported(void)
{
	return access(WAKEUP_CLASS_PATH, R_OK | X_OK) == 0;
}

static inline int __wakeup_attr(const char *dev, const char *attr, char *buf,
				size_t size)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), WAKEUP_CLASS_PATH "/%s/%s", dev, attr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static inline int __wakeup_attr_ul(const char *dev, const char *attr,
				   unsigned long *val)
{
	char buf[32];
	int ret;

	ret = __wakeup_attr(dev, attr, buf, sizeof(buf));
	if (ret)
		return ret;
	*val = strtoul(buf, NULL, 10);
	return 0;
}

/*
 * Count the wakeup sources named @name (a wakeup source that epoll creates
 * for an item is named after the target file's dentry). If @stats is not
 * NULL, fill it from the last one found: pass a unique name for that.
 * Return the number of sources found (0 if none), or a negative errno.
 */
static inline int wakeup_source_find(const char *name,
				     struct wakeup_source_stats *stats)
{
	char buf[NAME_MAX + 2];
	struct dirent *de;
	int found = 0;
	DIR *dir;

	dir = opendir(WAKEUP_CLASS_PATH);
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		/* A source unregistered meanwhile is simply not counted. */
		if (__wakeup_attr(de->d_name, "name", buf, sizeof(buf)) ||
		    strcmp(buf, name))
			continue;
		if (stats &&
		    (__wakeup_attr_ul(de->d_name, "active_count",
				      &stats->active_count) ||
		     __wakeup_attr_ul(de->d_name, "event_count",
				      &stats->event_count) ||
		     __wakeup_attr_ul(de->d_name, "active_time_ms",
				      &stats->active_time_ms)))
			continue;
		found++;
	}
	closedir(dir);
	return found;
}

/* IORING_OP_EPOLL_CTL through raw io_uring_setup() and io_uring_enter() */

/* An io_uring instance with its rings mapped; one thread uses it at a time. */
struct ring {
	int fd;
	unsigned int *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	void *sq_map, *cq_map;
	size_t sq_len, cq_len, sqes_len;
};

/* Set up @r with four entries: 0, or -errno (EPERM: io_uring disabled). */
static inline int ring_init(struct ring *r)
{
	struct io_uring_params p = {};
	int ret;

	memset(r, 0, sizeof(*r));
	r->fd = syscall(__NR_io_uring_setup, 4, &p);
	if (r->fd < 0)
		return -errno;

	r->sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	r->cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (p.features & IORING_FEAT_SINGLE_MMAP) {
		if (r->cq_len > r->sq_len)
			r->sq_len = r->cq_len;
		r->cq_len = 0;
	}
	r->sq_map = mmap(NULL, r->sq_len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
	if (r->sq_map == MAP_FAILED)
		goto fail;
	r->cq_map = r->sq_map;
	if (r->cq_len) {
		r->cq_map = mmap(NULL, r->cq_len, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_POPULATE, r->fd,
				 IORING_OFF_CQ_RING);
		if (r->cq_map == MAP_FAILED)
			goto fail;
	}
	r->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED)
		goto fail;

	r->sq_tail = r->sq_map + p.sq_off.tail;
	r->sq_mask = r->sq_map + p.sq_off.ring_mask;
	r->sq_array = r->sq_map + p.sq_off.array;
	r->cq_head = r->cq_map + p.cq_off.head;
	r->cq_tail = r->cq_map + p.cq_off.tail;
	r->cq_mask = r->cq_map + p.cq_off.ring_mask;
	r->cqes = r->cq_map + p.cq_off.cqes;
	return 0;

fail:
	ret = -errno;
	close(r->fd);
	r->fd = -1;
	return ret;
}

/*
 * The next SQE, zeroed, with the ring's tail before it as user_data; the
 * caller fills it in and ring_submit() submits it.
 */
static inline struct io_uring_sqe *ring_get_sqe(struct ring *r)
{
	unsigned int tail = *r->sq_tail, idx = tail & *r->sq_mask;
	struct io_uring_sqe *sqe = &r->sqes[idx];

	memset(sqe, 0, sizeof(*sqe));
	sqe->user_data = tail;
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	return sqe;
}

/* Submit the @n SQEs last taken with ring_get_sqe(): 0 or -errno. */
static inline int ring_submit(struct ring *r, unsigned int n)
{
	int res;

	do {
		res = syscall(__NR_io_uring_enter, r->fd, n, 0, 0, NULL, 0);
	} while (res < 0 && errno == EINTR);
	if (res < 0)
		return -errno;
	return res == (int)n ? 0 : -EIO;
}

/* Fill @sqe with IORING_OP_EPOLL_CTL; the event pointer is @addr. */
static inline void ring_prep_epoll_ctl(struct io_uring_sqe *sqe, int epfd,
				       int op, int fd, uint64_t addr)
{
	sqe->opcode = IORING_OP_EPOLL_CTL;
	sqe->fd = epfd;
	sqe->off = fd;
	sqe->len = op;
	sqe->addr = addr;
}

/*
 * Submit one IORING_OP_EPOLL_CTL without waiting for it: 0 or -errno. The
 * event pointer (sqe->addr) is @addr, 64 bits even for a 32-bit caller.
 * With @async the SQE has IOSQE_ASYNC: the request runs in io-wq.
 */
static inline int ring_submit_epoll_ctl_addr(struct ring *r, int epfd, int op,
					     int fd, uint64_t addr, bool async)
{
	struct io_uring_sqe *sqe = ring_get_sqe(r);

	ring_prep_epoll_ctl(sqe, epfd, op, fd, addr);
	sqe->flags = async ? IOSQE_ASYNC : 0;
	return ring_submit(r, 1);
}

/* Submit one IORING_OP_EPOLL_CTL with @event without waiting for it. */
static inline int ring_submit_epoll_ctl(struct ring *r, int epfd, int op,
					int fd, struct epoll_event *event,
					bool async)
{
	return ring_submit_epoll_ctl_addr(r, epfd, op, fd, (uintptr_t)event,
					  async);
}

/* True if a completion is waiting in the CQ ring. */
static inline bool ring_cqe_ready(struct ring *r)
{
	return *r->cq_head != __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE);
}

/*
 * Wait for a completion and consume it: its result, its user_data in
 * *@user_data; INT_MIN if none came.
 */
static inline int ring_reap(struct ring *r, uint64_t *user_data)
{
	unsigned int head;
	int res;

	do {
		res = syscall(__NR_io_uring_enter, r->fd, 0, 1,
			      IORING_ENTER_GETEVENTS, NULL, 0);
	} while (res < 0 && errno == EINTR);
	*user_data = UINT64_MAX;
	if (res < 0 || !ring_cqe_ready(r))
		return INT_MIN;

	head = *r->cq_head;
	res = r->cqes[head & *r->cq_mask].res;
	*user_data = r->cqes[head & *r->cq_mask].user_data;
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return res;
}

/*
 * Wait for the completion of the one request in flight and consume it:
 * its result, or INT_MIN if something else completed.
 */
static inline int ring_wait_cqe(struct ring *r)
{
	uint64_t user_data;
	int res = ring_reap(r, &user_data);

	return user_data == *r->sq_tail - 1 ? res : INT_MIN;
}

/*
 * Submit one IORING_OP_EPOLL_CTL and wait for it: the CQE result, or
 * INT_MIN if submitting or reaping failed.
 */
static inline int ring_epoll_ctl_addr(struct ring *r, int epfd, int op, int fd,
				      uint64_t addr, bool async)
{
	if (ring_submit_epoll_ctl_addr(r, epfd, op, fd, addr, async))
		return INT_MIN;
	return ring_wait_cqe(r);
}

static inline int ring_epoll_ctl(struct ring *r, int epfd, int op, int fd,
				 struct epoll_event *event, bool async)
{
	return ring_epoll_ctl_addr(r, epfd, op, fd, (uintptr_t)event, async);
}

static inline void ring_exit(struct ring *r)
{
	if (r->sqes && r->sqes != MAP_FAILED)
		munmap(r->sqes, r->sqes_len);
	if (r->cq_len && r->cq_map && r->cq_map != MAP_FAILED)
		munmap(r->cq_map, r->cq_len);
	if (r->sq_map && r->sq_map != MAP_FAILED)
		munmap(r->sq_map, r->sq_len);
	if (r->fd >= 0)
		close(r->fd);
}

/* Read /proc/<pid>/task/<tid>/<file> into @buf as a string; false if not. */
static inline bool __task_file(pid_t pid, int tid, const char *file,
			       char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", pid, tid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

static inline bool __task_sleeps(pid_t pid, int tid, char state, long nr,
				 int timeout_ms)
{
	int64_t deadline = __monotonic_ms() + timeout_ms;
	char buf[512], *p;

	do {
		if (!__task_file(pid, tid, "stat", buf, sizeof(buf)))
			return false;
		p = strrchr(buf, ')');
		if (p && p[1] == ' ' && p[2] == state) {
			if (nr < 0)
				return true;
			if (!__task_file(pid, tid, "syscall", buf, sizeof(buf)))
				return false;
			/* "running", or the number and arguments of the call */
			if (buf[0] >= '0' && buf[0] <= '9' &&
			    strtol(buf, NULL, 10) == nr)
				return true;
		}
		usleep(1000);
	} while (__monotonic_ms() < deadline);
	return false;
}

/*
 * True once thread @tid of this process is in state @state ('S': asleep,
 * 'D': uninterruptible) and, unless @nr is negative, inside system call
 * @nr, as /proc shows them; false if it is not within @timeout_ms.
 */
static inline bool task_sleeps(int tid, char state, long nr, int timeout_ms)
{
	return __task_sleeps(getpid(), tid, state, nr, timeout_ms);
}

/* As task_sleeps(), for the single-threaded child process @pid. */
static inline bool process_sleeps(pid_t pid, char state, long nr,
				  int timeout_ms)
{
	return __task_sleeps(pid, pid, state, nr, timeout_ms);
}

/*
 * A thread that holds ep->mtx of an epoll instance for as long as the test
 * wants. epoll_wait() copies events to user memory with ep->mtx held; the
 * thread's buffer is a page registered with userfaultfd, so the copy of
 * the first ready event waits in the page fault, ep->mtx held, until the
 * test fills the page. The fault is reported to the test, so it knows when
 * ep->mtx is held, on any number of CPUs. Meanwhile the scan of the ready
 * list is in progress: events that arrive go to the overflow list.
 */
struct mtx_holder {
	int epfd;		/* the instance whose ep->mtx is held */
	int ready_fd;		/* the always-ready item that gets copied */
	int uffd;		/* userfaultfd of the buffer page */
	void *page;		/* the buffer, registered for missing pages */
	size_t page_size;
	pthread_t thread;
	bool running;		/* thread created and not joined yet */
	int result;		/* the thread's epoll_wait(), or -errno */
};

/* How long the test waits for the holder's fault to be reported. */
#define MTX_HOLDER_TIMEOUT_MS	10000

static inline void *mtx_holder_fn(void *arg)
{
	struct mtx_holder *h = arg;
	int n;

	n = epoll_wait(h->epfd, h->page, 1, 0);
	h->result = n < 0 ? -errno : n;
	return NULL;
}

/* Let the thread's copy complete: it drops ep->mtx and returns. */
static inline int mtx_holder_release(struct mtx_holder *h)
{
	struct uffdio_zeropage zero = {
		.range = { .start = (uintptr_t)h->page, .len = h->page_size },
	};
	int ret = 0;

	if (h->running) {
		/* EEXIST: the page is there already, nobody waits on it. */
		if (ioctl(h->uffd, UFFDIO_ZEROPAGE, &zero) && errno != EEXIST)
			ret = -errno;
		pthread_join(h->thread, NULL);
		h->running = false;
		if (!ret)
			ret = h->result;
	}
	if (h->page != MAP_FAILED)
		munmap(h->page, h->page_size);
	if (h->uffd >= 0)
		close(h->uffd);
	if (h->ready_fd >= 0)
		close(h->ready_fd);
	h->page = MAP_FAILED;
	h->uffd = -1;
	h->ready_fd = -1;
	return ret;
}

/*
 * Add an always-ready item to @epfd and start a thread that holds its
 * ep->mtx. The event copied is that of the item queued first: this one,
 * unless the caller queued another before. Returns 0 once the thread
 * waits in the page fault, -EPERM if userfaultfd may not serve faults of
 * the kernel, another -errno on failure, or -ETIMEDOUT if no fault was
 * reported.
 */
static inline int mtx_holder_start(struct mtx_holder *h, int epfd)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = {
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	struct epoll_event ev = { .events = EPOLLIN };
	struct pollfd pfd = { .events = POLLIN };
	struct uffd_msg msg;
	int ret;

	memset(h, 0, sizeof(*h));
	h->epfd = epfd;
	h->page_size = getpagesize();
	h->page = MAP_FAILED;
	h->ready_fd = -1;
	/* Without UFFD_USER_MODE_ONLY: the fault is copy_to_user()'s. */
	h->uffd = syscall(__NR_userfaultfd, O_CLOEXEC);
	if (h->uffd < 0) {
		ret = -errno;
		goto fail;
	}
	if (ioctl(h->uffd, UFFDIO_API, &api)) {
		ret = -errno;
		goto fail;
	}
	h->page = mmap(NULL, h->page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (h->page == MAP_FAILED) {
		ret = -errno;
		goto fail;
	}
	reg.range.start = (uintptr_t)h->page;
	reg.range.len = h->page_size;
	if (ioctl(h->uffd, UFFDIO_REGISTER, &reg)) {
		ret = -errno;
		goto fail;
	}
	h->ready_fd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
	if (h->ready_fd < 0) {
		ret = -errno;
		goto fail;
	}
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, h->ready_fd, &ev)) {
		ret = -errno;
		goto fail;
	}
	ret = -pthread_create(&h->thread, NULL, mtx_holder_fn, h);
	if (ret)
		goto fail;
	h->running = true;

	pfd.fd = h->uffd;
	ret = poll(&pfd, 1, MTX_HOLDER_TIMEOUT_MS);
	if (ret <= 0) {
		ret = ret ? -errno : -ETIMEDOUT;
		goto fail;
	}
	if (read(h->uffd, &msg, sizeof(msg)) != sizeof(msg)) {
		ret = -EIO;
		goto fail;
	}
	if (msg.event != UFFD_EVENT_PAGEFAULT ||
	    msg.arg.pagefault.address - (uintptr_t)h->page >= h->page_size) {
		ret = -EPROTO;
		goto fail;
	}
	return 0;

fail:
	mtx_holder_release(h);
	return ret;
}

/*
 * A bug in epoll can show only in the kernel's own reports: the system
 * call returns what the test expects while the kernel warns, or KASAN
 * finds a use after free. User space can count them without reading the
 * kernel log: a WARN() and the first KASAN report add to warn_count, an
 * oops to oops_count (both in /sys/kernel since Linux 6.2); they also
 * taint the kernel (W, B, D; L for a soft lockup); lockdep turns itself
 * off (debug_locks 0 in /proc/lockdep_stats) after its first report.
 * -1 is a count this kernel does not show. Some reports have no count:
 * "suspicious RCU usage" leaves lockdep on, a hung task or an RCU stall
 * only logs. For them the kernel log since the start (/dev/kmsg, read
 * from its end; not readable without CAP_SYSLOG when dmesg_restrict is
 * set) is searched for the headers the kernel gives its reports.
 */
#define KERNEL_REPORT_TAINTS ((1UL << 5) | (1UL << 7) | (1UL << 9) | (1UL << 14))

struct kernel_reports {
	long warn_count;
	long oops_count;
	long taint;
	long debug_locks;
};

static struct kernel_reports kernel_reports_at_start;
static int kernel_log_fd = -1;

static const char *const kernel_log_reports[] = {
	"WARNING:", "BUG:", "Oops", "general protection fault", "UBSAN",
	"blocked for more than", "detected stall",
};

static inline long __read_long(const char *path, const char *key)
{
	char buf[4096], *p;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = buf;
	if (key) {
		p = strstr(buf, key);
		if (!p)
			return -1;
		p += strlen(key);
	}
	return strtol(p, NULL, 10);
}

static inline void kernel_reports_read(struct kernel_reports *r)
{
	r->warn_count = __read_long("/sys/kernel/warn_count", NULL);
	r->oops_count = __read_long("/sys/kernel/oops_count", NULL);
	r->taint = __read_long("/proc/sys/kernel/tainted", NULL);
	if (r->taint > 0)
		r->taint &= KERNEL_REPORT_TAINTS;
	r->debug_locks = __read_long("/proc/lockdep_stats", "debug_locks:");
}

static void __attribute__((constructor)) kernel_reports_start(void)
{
	kernel_reports_read(&kernel_reports_at_start);
	kernel_log_fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kernel_log_fd >= 0 && lseek(kernel_log_fd, 0, SEEK_END) < 0) {
		close(kernel_log_fd);
		kernel_log_fd = -1;
	}
}

/*
 * The first line of the first report in the kernel log since the start,
 * in @line: 1 if there is one, 0 if not, -1 if the log cannot be read.
 */
static inline int kernel_log_report(char *line, size_t size)
{
	char rec[8192], *msg;
	unsigned int i;
	ssize_t n;

	if (kernel_log_fd < 0)
		return -1;
	for (;;) {
		n = read(kernel_log_fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)	/* records overwritten */
			continue;
		if (n <= 0)
			return 0;
		rec[n] = '\0';
		msg = strchr(rec, ';');
		if (!msg)
			continue;
		msg++;
		for (i = 0; i < ARRAY_SIZE(kernel_log_reports); i++) {
			if (strstr(msg, kernel_log_reports[i])) {
				snprintf(line, size, "%.*s", (int)strcspn(msg, "\n"), msg);
				return 1;
			}
		}
	}
}

/*
 * What the kernel reported since the program started, as text in @what;
 * returns the number of kinds of report, or -ENOENT when neither the
 * counts nor the kernel log can be read.
 */
static inline int kernel_reports_since_start(char *what, size_t size)
{
	const struct kernel_reports *t = &kernel_reports_at_start;
	struct kernel_reports n;
	char line[160];
	size_t len = 0;
	int kinds = 0;
	int logged;

	kernel_reports_read(&n);
	logged = kernel_log_report(line, sizeof(line));
	if (n.warn_count < 0 && n.oops_count < 0 && n.taint < 0 && logged < 0)
		return -ENOENT;
	what[0] = '\0';
#define __kernel_report(cond, ...)						\
	do {									\
		if ((cond) && len < size) {					\
			len += snprintf(what + len, size - len, __VA_ARGS__);	\
			kinds++;						\
		}								\
	} while (0)
	__kernel_report(n.warn_count > t->warn_count,
			" WARN or KASAN (warn_count %ld -> %ld);",
			t->warn_count, n.warn_count);
	__kernel_report(n.oops_count > t->oops_count,
			" oops (oops_count %ld -> %ld);",
			t->oops_count, n.oops_count);
	__kernel_report(n.taint > 0 && (n.taint & ~t->taint),
			" new taint flags 0x%lx;", n.taint & ~t->taint);
	__kernel_report(t->debug_locks == 1 && n.debug_locks == 0,
			" lockdep report (debug_locks 1 -> 0);");
	__kernel_report(logged == 1, " kernel log: \"%s\";", line);
#undef __kernel_report
	return kinds;
}

/*
 * The body of a program's last test (a fixture registered last runs
 * last): fail when the kernel reported a bug while the program ran, so
 * that a kselftest run catches it without anyone reading the kernel log.
 * The one helper here that uses the harness.
 */
static inline void kernel_reports_check(struct __test_metadata *const _metadata)
{
	char what[512];
	int kinds = kernel_reports_since_start(what, sizeof(what));

	if (kinds == -ENOENT)
		SKIP(return, "neither the report counts nor /dev/kmsg can be read");
	if (kernel_reports_at_start.taint & KERNEL_REPORT_TAINTS)
		TH_LOG("tainted 0x%lx before the tests: new reports of that kind are not seen",
		       kernel_reports_at_start.taint);
	EXPECT_EQ(0, kinds)
		TH_LOG("the kernel reported a bug during the tests:%s see its log", what);
}

#endif /* __EPOLL_PROOF_HELPERS_H */
