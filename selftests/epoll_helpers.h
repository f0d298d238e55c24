/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the epoll ABI selftests: capabilities, /proc/self/fdinfo of
 * an epoll fd, a bounded read of /sys/power/wakeup_count, and io_uring
 * requests through tools/include/io_uring/mini_liburing.h.
 *
 * Functions return 0 (or a count or flag, as documented) on success and a
 * negative errno on failure.
 */
#ifndef __EPOLL_HELPERS_H
#define __EPOLL_HELPERS_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <io_uring/mini_liburing.h>

#ifndef EPOLLWAKEUP
#define EPOLLWAKEUP 0x20000000U
#endif

#ifndef CAP_WAKE_ALARM
#define CAP_WAKE_ALARM 35
#endif

#ifndef CAP_BLOCK_SUSPEND
#define CAP_BLOCK_SUSPEND 36
#endif

#define CAP_TO_MASK64(cap) (1ULL << (cap))

#define WAKEUP_COUNT_PATH "/sys/power/wakeup_count"

/* Capabilities, with capget()/capset() as tools/testing/selftests/bpf does */

static inline int __cap_data(struct __user_cap_data_struct data[2], bool set)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	long ret;

	ret = syscall(set ? __NR_capset : __NR_capget, &hdr, data);
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
 * Make @effective the effective set of the calling thread. The permitted
 * set is left alone, so a capability dropped this way can be raised again:
 * save the set with cap_get_effective() and restore it in the teardown.
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
	return ret ? ret : !!(effective & CAP_TO_MASK64(cap));
}

/*
 * Whether the calling process is in the initial user namespace: its
 * /proc/self/uid_map maps every uid to itself (user_namespaces(7)), or
 * the kernel has no user namespaces.
 */
static inline bool in_initial_user_ns(void)
{
	unsigned long first, lower, count;
	bool ret = false;
	FILE *f;

	f = fopen("/proc/self/uid_map", "re");
	if (!f)
		return errno == ENOENT;
	if (fscanf(f, "%lu %lu %lu", &first, &lower, &count) == 3)
		ret = first == 0 && lower == 0 && count == 4294967295UL;
	fclose(f);
	return ret;
}

/*
 * Whether EPOLLWAKEUP is kept for the calling thread: CAP_BLOCK_SUSPEND
 * counts only in the initial user namespace (capable(), not
 * ns_capable()), so the root of any other has it in its effective set
 * in vain.
 */
static inline bool has_cap_block_suspend(void)
{
	return in_initial_user_ns() && cap_is_effective(CAP_BLOCK_SUSPEND) == 1;
}

#define NEEDS_CAP_BLOCK_SUSPEND \
	"needs CAP_BLOCK_SUSPEND in the initial user namespace"

/*
 * The events mask that /proc/self/fdinfo/@epfd shows for target fd @tfd
 * (proc_pid_fdinfo(5): "tfd: ... events: ... data: ..."), in @events.
 * Returns 0, or -ENOENT if @tfd has no item there.
 */
static inline int fdinfo_events(int epfd, int tfd, uint32_t *events)
{
	char path[64], line[256];
	int fd, ret = -ENOENT;
	unsigned int ev;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", epfd);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "tfd: %d events: %x", &fd, &ev) == 2 &&
		    fd == tfd) {
			*events = ev;
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

/*
 * A read of /sys/power/wakeup_count blocks while a wakeup event is being
 * processed (Documentation/ABI/testing/sysfs-power), as it is while an
 * EPOLLWAKEUP item has an event pending. The read runs in a child that
 * keeps no file of the test open, so it never pins an epoll file, and is
 * killed when the test process dies.
 */

/* True if the kernel has CONFIG_PM_SLEEP (the file exists and is readable). */
static inline bool wakeup_count_supported(void)
{
	return access(WAKEUP_COUNT_PATH, R_OK) == 0;
}

static inline void __wakeup_count_child(int wfd, pid_t parent)
{
	char buf[32];
	int fd, err = 0;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(1);
	if (dup2(wfd, 3) != 3)
		_exit(1);
	for (fd = 0; fd < 1024; fd++)
		if (fd != 3)
			close(fd);
	fd = open(WAKEUP_COUNT_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, buf, sizeof(buf)) < 0)
		err = errno;
	if (write(3, &err, sizeof(err)) != sizeof(err))
		_exit(1);
	_exit(0);
}

/*
 * Read /sys/power/wakeup_count, giving up after @timeout_ms. Returns 1 if
 * the read completed, 0 if it was still blocked, or a negative errno.
 */
static inline int wakeup_count_read_bounded(int timeout_ms)
{
	struct pollfd pfd = { .events = POLLIN };
	pid_t parent = getpid(), pid;
	int p[2], err, ret;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		close(p[0]);
		close(p[1]);
		return ret;
	}
	if (pid == 0)
		__wakeup_count_child(p[1], parent);
	close(p[1]);
	pfd.fd = p[0];
	do {
		ret = poll(&pfd, 1, timeout_ms);
	} while (ret < 0 && errno == EINTR);
	if (ret > 0) {
		if (read(p[0], &err, sizeof(err)) != sizeof(err))
			err = EIO;
		ret = err ? -err : 1;
	} else if (ret < 0) {
		ret = -errno;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(p[0]);
	return ret;
}

/* io_uring */

#ifndef IORING_OP_EPOLL_WAIT
#define IORING_OP_EPOLL_WAIT 59
#endif

/*
 * Set up @ring with 8 entries: 1, or 0 where io_uring cannot be had here
 * (not built in, or disabled by the io_uring_disabled sysctl), with the
 * reason in @why.
 */
static inline int uring_init(struct io_uring *ring, const char **why)
{
	if (io_uring_queue_init(8, ring, 0) == 0)
		return 1;
	*why = strerror(errno);
	return 0;
}

/* The next SQE for @opcode on @fd, zeroed otherwise; NULL if none is free. */
static inline struct io_uring_sqe *uring_sqe(struct io_uring *ring,
					     uint8_t opcode, int fd)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (sqe) {
		memset(sqe, 0, sizeof(*sqe));
		sqe->opcode = opcode;
		sqe->fd = fd;
	}
	return sqe;
}

/*
 * Queue IORING_OP_EPOLL_CTL with the event at @event (which may be NULL),
 * the SQE flags @flags and the personality @personality: 0, or -EBUSY
 * if the ring is full.
 */
static inline int uring_epoll_ctl(struct io_uring *ring, int epfd, int op,
				  int fd, struct epoll_event *event,
				  uint8_t flags, uint16_t personality)
{
	struct io_uring_sqe *sqe = uring_sqe(ring, IORING_OP_EPOLL_CTL, epfd);

	if (!sqe)
		return -EBUSY;
	sqe->len = op;
	sqe->off = fd;
	sqe->addr = (uintptr_t)event;
	sqe->flags = flags;
	sqe->personality = personality;
	return 0;
}

/* Queue IORING_OP_EPOLL_WAIT into @events: 0, or -EBUSY if the ring is full. */
static inline int uring_epoll_wait(struct io_uring *ring, int epfd,
				   struct epoll_event *events,
				   unsigned int maxevents)
{
	struct io_uring_sqe *sqe = uring_sqe(ring, IORING_OP_EPOLL_WAIT, epfd);

	if (!sqe)
		return -EBUSY;
	sqe->len = maxevents;
	sqe->addr = (uintptr_t)events;
	return 0;
}

/*
 * Wait up to @timeout_ms for a completion and consume it: returns 1 with
 * a copy of it in @cqe, 0 if none came, or a negative errno.
 */
static inline int uring_reap_cqe(struct io_uring *ring, int timeout_ms,
				 struct io_uring_cqe *cqe)
{
	struct pollfd pfd = { .fd = ring->ring_fd, .events = POLLIN };
	struct io_uring_cqe *next;
	int ret;

	do {
		ret = poll(&pfd, 1, timeout_ms);
	} while (ret < 0 && errno == EINTR);
	if (ret <= 0)
		return ret < 0 ? -errno : 0;
	ret = io_uring_wait_cqe(ring, &next);
	if (ret)
		return ret;
	*cqe = *next;
	io_uring_cqe_seen(ring);
	return 1;
}

/* uring_reap_cqe(), for the result of the completion only, in @res. */
static inline int uring_reap(struct io_uring *ring, int timeout_ms, int *res)
{
	struct io_uring_cqe cqe;
	int ret = uring_reap_cqe(ring, timeout_ms, &cqe);

	if (ret == 1)
		*res = cqe.res;
	return ret;
}

/* Submit what was prepared and wait up to 10 s for one result: 0 or -errno. */
static inline int uring_run(struct io_uring *ring, int *res)
{
	int ret = io_uring_submit(ring);

	if (ret < 0)
		return ret;
	ret = uring_reap(ring, 10000, res);
	return ret < 0 ? ret : ret ? 0 : -ETIMEDOUT;
}

#endif /* __EPOLL_HELPERS_H */
