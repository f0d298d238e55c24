/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Copyright (c) 2026 Seed 7fb0762e maintainers <maintainers@users.noreply.a-seed-7fb0762e.example>
 */

#ifndef EPOLL_CTL_FDINFO_H__
#define EPOLL_CTL_FDINFO_H__

#include <stdio.h>
#include <stdint.h>

#include "tst_test.h"
#include "tst_safe_stdio.h"

/*
 * The event mask of the item for @tfd in the interest list of @epfd, as
 * proc_pid_fdinfo(5) shows it. Returns 1 and sets @events if @tfd is on
 * the list, 0 if it is not.
 */
static inline int epoll_fdinfo_events(int epfd, int tfd, uint32_t *events)
{
	char path[64], line[256];
	unsigned int mask;
	int fd, found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", epfd);
	f = SAFE_FOPEN(path, "r");
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "tfd: %d events: %x", &fd, &mask) == 2 &&
		    fd == tfd) {
			*events = mask;
			found = 1;
		}
	}
	SAFE_FCLOSE(f);

	return found;
}

/*
 * Report a failure unless @fd is in the interest list of @epfd with the
 * event mask @exp. Returns 1 if it is.
 */
static inline int epoll_check_item(int epfd, int fd, uint32_t exp,
				   const char *what)
{
	uint32_t events;

	if (!epoll_fdinfo_events(epfd, fd, &events)) {
		tst_res(TFAIL, "%s is not registered", what);
		return 0;
	}
	if (events != exp) {
		tst_res(TFAIL, "%s has events 0x%x, expected 0x%x", what,
			events, exp);
		return 0;
	}
	return 1;
}

/*
 * Report a failure if @fd is in the interest list of @epfd. Returns 1 if
 * it is not.
 */
static inline int epoll_check_absent(int epfd, int fd, const char *what)
{
	uint32_t events;

	if (epoll_fdinfo_events(epfd, fd, &events)) {
		tst_res(TFAIL, "%s is registered", what);
		return 0;
	}
	return 1;
}

#endif /* EPOLL_CTL_FDINFO_H__ */
