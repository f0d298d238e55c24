#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Entry of the benchmark guest (epoll.bench=epoll_wakeups_bench.sh), to
# compare a kernel with and without fix 3: the spurious wakeups of
# epoll_wait() sleepers per 1000 EPOLLONESHOT deliveries under load, and
# the sleepers woken when a second wakeup lands in the delivery every
# time. One JSON line each ({"bench":"epoll_wakeups",...},
# {"bench":"epoll_oneshot_window",...}). Seeded, fixed counts: the same
# workload on every boot.
./epoll_wakeups --json || exit
exec ./epoll_oneshot_window --json
