#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Entry of the benchmark guest (epoll.bench=epoll_server_bench.sh): every
# variant of the server (bench/VARIANTS.md), one JSON line each, which the
# host judges (scripts/bench-report.py). Fails only if a variant failed to
# run; a variant that skips (4: no EPOLL_CTL_DISABLE, or no io_uring)
# prints no JSON line.
rc=0
for v in disable userspace naive gen perthread qsbr uring uring-multishot; do
	./epoll_server --json --retire="$v"
	r=$?
	[ "$r" -eq 0 ] || [ "$r" -eq 4 ] || rc=1
done
exit "$rc"
