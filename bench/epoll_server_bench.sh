#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Entry of the benchmark guest (epoll.bench=epoll_server_bench.sh), also run
# on the host by scripts/run-bench-native.sh: every variant of the server
# (bench/VARIANTS.md), one JSON line each, which the host judges
# (scripts/bench-report.py). EPOLL_BENCH_VARIANTS (comma-separated; the
# guest's /init sets it from epoll_bench.variants=) is the order, which
# make bench draws per boot from a printed seed; without it, the
# program's own list (epoll_server --list). Fails only if a variant failed
# to run; a variant that skips (4: the kernel lacks what it needs) prints
# no JSON line.
variants=$(echo "${EPOLL_BENCH_VARIANTS:-$(./epoll_server --list | tr '\n' ,)}" | tr , ' ')
echo "# epoll_server variants in this order: $variants"
rc=0
for v in $variants; do
	./epoll_server --json --retire="$v"
	r=$?
	[ "$r" -eq 0 ] || [ "$r" -eq 4 ] || rc=1
done
exit "$rc"
