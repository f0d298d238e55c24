// SPDX-License-Identifier: GPL-2.0
/*
 * LD_PRELOAD library for make event-loop: counts the program's
 * epoll_ctl(EPOLL_CTL_DISABLE) calls by result and prints one line at
 * exit, so that a test run shows which retirement path Qpid Proton took.
 *
 *   epoll_ctl_count: disable=N ok=N ebusy=N enoent=N efault=N einval=N other=N
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>

#define OP_DISABLE 4

enum { CALLS, OK, EBUSY_, ENOENT_, EFAULT_, EINVAL_, OTHER, NR_COUNTS };

static unsigned long counts[NR_COUNTS];
static int (*real_epoll_ctl)(int, int, int, struct epoll_event *);

static void count(int which)
{
	__atomic_fetch_add(&counts[which], 1, __ATOMIC_RELAXED);
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
	int ret, err;

	if (!real_epoll_ctl) {
		real_epoll_ctl = dlsym(RTLD_NEXT, "epoll_ctl");
		if (!real_epoll_ctl) {
			fprintf(stderr, "epoll_ctl_count: no epoll_ctl after this library\n");
			abort();
		}
	}
	ret = real_epoll_ctl(epfd, op, fd, event);
	if (op != OP_DISABLE)
		return ret;
	err = errno;
	count(CALLS);
	if (!ret)
		count(OK);
	else if (err == EBUSY)
		count(EBUSY_);
	else if (err == ENOENT)
		count(ENOENT_);
	else if (err == EFAULT)
		count(EFAULT_);
	else if (err == EINVAL)
		count(EINVAL_);
	else
		count(OTHER);
	errno = err;
	return ret;
}

__attribute__((destructor)) static void report(void)
{
	fprintf(stderr,
		"epoll_ctl_count: disable=%lu ok=%lu ebusy=%lu enoent=%lu efault=%lu einval=%lu other=%lu\n",
		counts[CALLS], counts[OK], counts[EBUSY_], counts[ENOENT_],
		counts[EFAULT_], counts[EINVAL_], counts[OTHER]);
}
