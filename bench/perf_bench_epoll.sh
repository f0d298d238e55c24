#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Entry of the benchmark guest (epoll.bench=perf_bench_epoll.sh): the
# kernel's own epoll benchmarks, tools/perf's 'perf bench epoll wait'
# (level-triggered, and with EPOLLONESHOT, whose re-arm is an
# EPOLL_CTL_MOD) and 'perf bench epoll ctl', built statically from the
# tree under test by scripts/run-bench.sh. Each runs EPOLL_BENCH_PERF_REPS
# times (default 3) for 1 s of guest time with 2 threads; one JSON line
# per run ({"bench":"perf_epoll",...}) for scripts/bench-report.py, with
# perf's own output as comments. Exit status: perf's, or 4 when this image
# has no perf.
[ -x ./perf ] || { echo "# no ./perf in this image"; exit 4; }
reps=${EPOLL_BENCH_PERF_REPS:-3}
secs=1
rc=0

# perf bench epoll @2... once; its figure as a JSON line named @1 (for ctl:
# rounds of ADD, MOD, DEL per second, which it counts per operation).
run() {
	name=$1
	shift
	out=$(./perf bench epoll "$@" -t 2 -r "$secs" 2>&1) || rc=1
	echo "$out" | sed 's/^/# /'
	echo "$out" | awk -v name="$name" -v secs="$secs" '
		/^Averaged [0-9]+ operations\/sec/ {
			printf "{\"bench\":\"perf_epoll\",\"test\":\"%s\",\"ops_per_s\":%s}\n", name, $2
		}
		/^Averaged [0-9]+ ADD operations/ {
			printf "{\"bench\":\"perf_epoll\",\"test\":\"%s\",\"ops_per_s\":%.1f}\n",
				name, $2 / secs
		}'
}

i=0
while [ "$i" -lt "$reps" ]; do
	run wait wait
	run wait_oneshot wait -S
	run ctl ctl
	i=$((i + 1))
done
exit "$rc"
