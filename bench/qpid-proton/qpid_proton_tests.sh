#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Entry of the event-loop guest (epoll.bench=qpid_proton_tests.sh, make
# event-loop, scripts/run-event-loop-tests.sh): Qpid Proton's own tests
# of its epoll proactor, built with bench/qpid-proton/*.patch, under
# epoll_ctl_count.so: every program of /bench/qpid-proton/bin. Each test
# prints its verdict and one "epoll_ctl_count:" line; the host checks
# those against the kernel.
#
# It brings up the loopback interface and writes /etc/hosts, so it runs
# only in the guest (epoll_guest=1, set by scripts/run-qemu.sh, and a
# root file system in memory).

root_fs=$(awk '$2 == "/" { print $3; exit }' /proc/mounts 2>/dev/null)
if [ "${epoll_guest:-}" != 1 ] || [ ! -d /bench/qpid-proton ] ||
   case "$root_fs" in rootfs|ramfs|tmpfs) false ;; *) true ;; esac; then
	echo "${0##*/} runs in the event-loop guest only (make event-loop)." >&2
	exit 2
fi

P=/bench/qpid-proton
# How long the threaderciser runs, seconds.
THREADERCISER_SECONDS=10

ip link set lo up || exit 1
mkdir -p /etc
echo '127.0.0.1 localhost' > /etc/hosts
echo 'hosts: files' > /etc/nsswitch.conf

# Proton's RUNTIME_CHECK=asan build: the counting library is preloaded
# before the sanitizer's runtime, which it allows when told.
export ASAN_OPTIONS=verify_asan_link_order=0

rc=0
run() {
	prog=$1
	shift
	echo "# qpid-proton: $prog $*"
	"$P/lib/ld-linux-x86-64.so.2" --library-path "$P/lib" \
		--preload "$P/lib/epoll_ctl_count.so" "$P/bin/$prog" "$@" 2>&1
	status=$?
	echo "# qpid-proton: $prog exit=$status"
	[ "$status" -eq 0 ] || rc=1
}

# Every test the host installed in $P/bin.
for path in "$P"/bin/*; do
	case "${path##*/}" in
	c-threaderciser)
		# Proton 0.37.0's threaderciser leaks connections at exit, now
		# and then, with or without EPOLL_CTL_DISABLE: no LeakSanitizer.
		ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" \
			run c-threaderciser -time "$THREADERCISER_SECONDS"
		;;
	*) run "${path##*/}" ;;
	esac
done
exit "$rc"
