#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Entry of the benchmark guest (epoll.bench=epoll_server_sweep.sh): every
# variant of the server at other connection counts, churn and numbers of
# workers than epoll_server_bench.sh's defaults, one JSON line each
# (scripts/bench-report.py groups them by those settings). Fails only if
# a run failed; a variant that skips prints nothing.
rc=0
run() {
	./epoll_server --json --duration-ms=1500 --idle-phase-ms=200 "$@"
	r=$?
	[ "$r" -eq 0 ] || [ "$r" -eq 4 ] || rc=1
}
for v in disable userspace naive gen perthread qsbr uring uring-multishot; do
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
