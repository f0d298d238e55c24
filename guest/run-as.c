// SPDX-License-Identifier: GPL-2.0
/*
 * run-as: run a command as one of the test guest's users. Packed into the
 * guest's initramfs as /usr/bin/run-as by scripts/make-initramfs.sh, for
 * guest/init; it only drops privileges, but it is built for the guest and
 * has no use on a host.
 *
 *   run-as ENVIRONMENT COMMAND [ARG...]
 *
 * ENVIRONMENT is one of
 *   root                  the caller as it is (root, every capability)
 *   user                  uid and gid 65534, no capability
 *   user-block-suspend    uid and gid 65534 holding only CAP_BLOCK_SUSPEND,
 *                         as an ambient capability, so that it survives
 *                         execve() (capabilities(7))
 *   userns-root           root of a new user namespace made by uid 65534:
 *                         every capability there, none in the initial one
 *
 * Must be started as root. Exits 125 if the environment cannot be made,
 * else as the command does (127 if it cannot be run).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#define NOBODY 65534
#define FAILED 125

static void die(const char *what)
{
	fprintf(stderr, "run-as: %s: %s\n", what, strerror(errno));
	exit(FAILED);
}

static void become_nobody(void)
{
	if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY))
		die("dropping the groups");
	if (setresuid(NOBODY, NOBODY, NOBODY))
		die("setresuid");
}

/* Keep @cap alone, as permitted, effective, inheritable and ambient. */
static void keep_only(int cap)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2] = {};

	data[cap / 32].permitted = 1U << (cap % 32);
	data[cap / 32].effective = 1U << (cap % 32);
	data[cap / 32].inheritable = 1U << (cap % 32);
	if (syscall(__NR_capset, &hdr, data))
		die("capset");
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0))
		die("raising the ambient capability");
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		die(path);
	close(fd);
}

static void become_userns_root(void)
{
	char map[32];

	become_nobody();
	/* The uid change made /proc/self root's; the maps must be writable. */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
		die("PR_SET_DUMPABLE");
	if (unshare(CLONE_NEWUSER))
		die("unshare(CLONE_NEWUSER)");
	snprintf(map, sizeof(map), "0 %d 1\n", NOBODY);
	write_file("/proc/self/setgroups", "deny");
	write_file("/proc/self/uid_map", map);
	write_file("/proc/self/gid_map", map);
	if (setresgid(0, 0, 0) || setresuid(0, 0, 0))
		die("becoming root of the user namespace");
}

int main(int argc, char *argv[])
{
	const char *env = argc > 2 ? argv[1] : "";

	if (argc < 3 || geteuid() != 0) {
		fprintf(stderr, "usage: run-as root|user|user-block-suspend|userns-root COMMAND [ARG...]\n"
				"(as root)\n");
		return FAILED;
	}
	if (!strcmp(env, "user")) {
		become_nobody();
	} else if (!strcmp(env, "user-block-suspend")) {
		if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0))
			die("PR_SET_KEEPCAPS");
		become_nobody();
		keep_only(CAP_BLOCK_SUSPEND);
	} else if (!strcmp(env, "userns-root")) {
		become_userns_root();
	} else if (strcmp(env, "root")) {
		fprintf(stderr, "run-as: no environment '%s'\n", env);
		return FAILED;
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "run-as: %s: %s\n", argv[2], strerror(errno));
	return 127;
}
