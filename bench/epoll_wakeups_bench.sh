#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Entry of the benchmark guest (epoll.bench=epoll_wakeups_bench.sh): the
# spurious wakeups of epoll_wait() sleepers per 1000 EPOLLONESHOT
# deliveries, one JSON line ({"bench":"epoll_wakeups",...}), to compare a
# kernel with and without a fix. Seeded, fixed counts: the same workload on
# every boot.
exec ./epoll_wakeups --json
