#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Entry of the benchmark guest (epoll.bench=epoll_micro_bench.sh): the
# microbenchmarks as JSON lines. EPOLL_BENCH_SCALE (the guest's /init sets
# it from epoll_bench.scale=) multiplies every iteration count.
exec ./epoll_micro --json --scale="${EPOLL_BENCH_SCALE:-1}"
