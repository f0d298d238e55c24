/* SPDX-License-Identifier: GPL-2.0 */
/*
 * uring_ring.h - the few io_uring operations that epoll_server's uring
 * variants need, on the raw system calls: set a ring up and map it, take
 * and publish SQEs, enter, reap CQEs, tear it down. liburing is not used
 * (the benchmark's programs are static and carry no libraries but libc).
 *
 * Concurrency contract: the caller serialises everything that touches the
 * SQ (uring_get_sqe() and uring_publish()), one lock per ring; the CQ has
 * exactly one consumer. uring_unsubmitted() and uring_enter() may be called
 * by any thread.
 *
 * The opcodes come from the system's <linux/io_uring.h> (an enum, 5.6 or
 * later for IORING_OP_READ and struct io_uring_probe); the flags that came
 * later than that are defined here when the headers lack them.
 */
#ifndef URING_RING_H
#define URING_RING_H

#include <errno.h>
#include <linux/io_uring.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup	425
#endif
#ifndef __NR_io_uring_enter
#define __NR_io_uring_enter	426
#endif
#ifndef __NR_io_uring_register
#define __NR_io_uring_register	427
#endif
#ifndef IORING_SETUP_CQSIZE
#define IORING_SETUP_CQSIZE	(1U << 3)
#endif
#ifndef IORING_FEAT_SINGLE_MMAP
#define IORING_FEAT_SINGLE_MMAP	(1U << 0)
#endif
#ifndef IORING_ENTER_GETEVENTS
#define IORING_ENTER_GETEVENTS	(1U << 0)
#endif
#ifndef IORING_POLL_ADD_MULTI
#define IORING_POLL_ADD_MULTI	(1U << 0)
#endif
#ifndef IORING_CQE_F_MORE
#define IORING_CQE_F_MORE	(1U << 1)
#endif
#ifndef IORING_REGISTER_PROBE
#define IORING_REGISTER_PROBE	8
#endif
#ifndef IO_URING_OP_SUPPORTED
#define IO_URING_OP_SUPPORTED	(1U << 0)
#endif

struct uring {
	int fd;
	unsigned int features;
	unsigned int *sq_head, *sq_tail, *sq_array;
	unsigned int sq_mask, sq_entries;
	unsigned int sq_local;		/* next SQE to fill: under the SQ lock */
	struct io_uring_sqe *sqes;
	unsigned int *cq_head, *cq_tail;
	unsigned int cq_mask, cq_entries;
	struct io_uring_cqe *cqes;
	void *sq_map, *cq_map;
	size_t sq_len, cq_len, sqes_len;
};

static inline int uring_sys_setup(unsigned int entries, struct io_uring_params *p)
{
	long ret = syscall(__NR_io_uring_setup, entries, p);

	return ret < 0 ? -errno : (int)ret;
}

static inline int uring_enter(int fd, unsigned int to_submit,
			      unsigned int min_complete, unsigned int flags)
{
	long ret = syscall(__NR_io_uring_enter, fd, to_submit, min_complete,
			   flags, NULL, 0);

	return ret < 0 ? -errno : (int)ret;
}

static inline int uring_register(int fd, unsigned int op, void *arg,
				 unsigned int nr)
{
	long ret = syscall(__NR_io_uring_register, fd, op, arg, nr);

	return ret < 0 ? -errno : (int)ret;
}

/* Bytes of the ring's shared memory: what the kernel maps for it. */
static inline size_t uring_bytes(const struct uring *r)
{
	return r->sq_len + (r->cq_map != r->sq_map ? r->cq_len : 0) + r->sqes_len;
}

static inline void uring_exit(struct uring *r)
{
	if (r->sqes && r->sqes != MAP_FAILED)
		munmap(r->sqes, r->sqes_len);
	if (r->cq_map && r->cq_map != MAP_FAILED && r->cq_map != r->sq_map)
		munmap(r->cq_map, r->cq_len);
	if (r->sq_map && r->sq_map != MAP_FAILED)
		munmap(r->sq_map, r->sq_len);
	if (r->fd >= 0)
		close(r->fd);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

/*
 * A ring of @entries SQEs and @cq_entries CQEs (0: the kernel's default,
 * twice @entries). 0 or -errno; on failure nothing is left open.
 */
static inline int uring_setup(struct uring *r, unsigned int entries,
			      unsigned int cq_entries)
{
	struct io_uring_params p;
	unsigned int i;
	char *sq, *cq;
	int fd, err;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	memset(&p, 0, sizeof(p));
	if (cq_entries) {
		p.flags |= IORING_SETUP_CQSIZE;
		p.cq_entries = cq_entries;
	}
	fd = uring_sys_setup(entries, &p);
	if (fd < 0)
		return fd;
	r->fd = fd;
	r->features = p.features;
	r->sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	r->cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (p.features & IORING_FEAT_SINGLE_MMAP) {
		if (r->cq_len > r->sq_len)
			r->sq_len = r->cq_len;
		r->cq_len = r->sq_len;
	}
	r->sq_map = mmap(NULL, r->sq_len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
	if (r->sq_map == MAP_FAILED)
		goto fail;
	if (p.features & IORING_FEAT_SINGLE_MMAP) {
		r->cq_map = r->sq_map;
	} else {
		r->cq_map = mmap(NULL, r->cq_len, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_CQ_RING);
		if (r->cq_map == MAP_FAILED)
			goto fail;
	}
	r->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED)
		goto fail;

	sq = r->sq_map;
	cq = r->cq_map;
	r->sq_head = (unsigned int *)(sq + p.sq_off.head);
	r->sq_tail = (unsigned int *)(sq + p.sq_off.tail);
	r->sq_mask = *(unsigned int *)(sq + p.sq_off.ring_mask);
	r->sq_entries = *(unsigned int *)(sq + p.sq_off.ring_entries);
	r->sq_array = (unsigned int *)(sq + p.sq_off.array);
	r->cq_head = (unsigned int *)(cq + p.cq_off.head);
	r->cq_tail = (unsigned int *)(cq + p.cq_off.tail);
	r->cq_mask = *(unsigned int *)(cq + p.cq_off.ring_mask);
	r->cq_entries = *(unsigned int *)(cq + p.cq_off.ring_entries);
	r->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	/* SQEs are filled in ring order, so the indirection is the identity. */
	for (i = 0; i < r->sq_entries; i++)
		r->sq_array[i] = i;
	r->sq_local = *r->sq_tail;
	return 0;
fail:
	err = -errno;
	uring_exit(r);
	return err;
}

/* The next free SQE, zeroed, or NULL when the SQ is full. Under the SQ lock. */
static inline struct io_uring_sqe *uring_get_sqe(struct uring *r)
{
	unsigned int head = __atomic_load_n(r->sq_head, __ATOMIC_ACQUIRE);
	struct io_uring_sqe *sqe;

	if (r->sq_local - head >= r->sq_entries)
		return NULL;
	sqe = &r->sqes[r->sq_local & r->sq_mask];
	memset(sqe, 0, sizeof(*sqe));
	r->sq_local++;
	return sqe;
}

/* Hands the SQEs taken so far to the kernel's view. Under the SQ lock. */
static inline void uring_publish(struct uring *r)
{
	__atomic_store_n(r->sq_tail, r->sq_local, __ATOMIC_RELEASE);
}

/* Published SQEs that no io_uring_enter() has consumed yet. */
static inline unsigned int uring_unsubmitted(const struct uring *r)
{
	return __atomic_load_n(r->sq_tail, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(r->sq_head, __ATOMIC_ACQUIRE);
}

/* The oldest unreaped CQE, or NULL. Only the CQ's one consumer calls it. */
static inline struct io_uring_cqe *uring_peek_cqe(const struct uring *r)
{
	unsigned int head = __atomic_load_n(r->cq_head, __ATOMIC_RELAXED);

	if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
		return NULL;
	return &r->cqes[head & r->cq_mask];
}

/* Gives the CQE returned by uring_peek_cqe() back to the kernel. */
static inline void uring_cqe_seen(struct uring *r)
{
	__atomic_store_n(r->cq_head, __atomic_load_n(r->cq_head, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELEASE);
}

static inline void uring_prep_poll_add(struct io_uring_sqe *sqe, int fd,
				       unsigned int mask, int multishot,
				       uint64_t user_data)
{
	sqe->opcode = IORING_OP_POLL_ADD;
	sqe->fd = fd;
	sqe->poll32_events = mask;	/* little-endian: the low 16 bits */
	sqe->len = multishot ? IORING_POLL_ADD_MULTI : 0;
	sqe->user_data = user_data;
}

/* Cancels the poll whose user_data is @target. */
static inline void uring_prep_poll_remove(struct io_uring_sqe *sqe,
					  uint64_t target, uint64_t user_data)
{
	sqe->opcode = IORING_OP_POLL_REMOVE;
	sqe->fd = -1;
	sqe->addr = target;
	sqe->user_data = user_data;
}

static inline void uring_prep_read(struct io_uring_sqe *sqe, int fd, void *buf,
				   unsigned int len, uint64_t user_data)
{
	sqe->opcode = IORING_OP_READ;
	sqe->fd = fd;
	sqe->addr = (uint64_t)(uintptr_t)buf;
	sqe->len = len;
	sqe->off = (uint64_t)-1;	/* the file position: eventfd has none */
	sqe->user_data = user_data;
}

#endif /* URING_RING_H */
