#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Entry of the benchmark guest (epoll.bench=epoll_server_sweep.sh), also run
# on the host by scripts/run-bench-native.sh: every variant of the server
# at other connection counts, churn and numbers of workers than
# epoll_server_bench.sh's defaults, one JSON line each
# (scripts/bench-report.py groups them by those settings), the variants in
# the order of EPOLL_BENCH_VARIANTS as there. Fails only if a run failed;
# a variant that skips prints nothing.
variants=$(echo "${EPOLL_BENCH_VARIANTS:-$(./epoll_server --list | tr '\n' ,)}" | tr , ' ')
echo "# epoll_server variants in this order: $variants"
rc=0
run() {
	./epoll_server --json --duration-ms=1500 --idle-phase-ms=200 "$@"
	r=$?
	[ "$r" -eq 0 ] || [ "$r" -eq 4 ] || rc=1
}
for v in $variants; do
	# connections x churn (retire after 4 or 64 requests)
	for clients in 8 64; do
		for churn in 4 64; do
			run --retire="$v" --clients="$clients" --conn-requests="$churn"
		done
	done
	# workers, on the guest's vCPUs
	for workers in 1 2 8; do
		run --retire="$v" --workers="$workers"
	done
done
exit "$rc"
