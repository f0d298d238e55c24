#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kselftest entry (BENCH_CHECK=1, scripts/build-selftests.sh): the short
# correctness run of the server's user-space QSBR variant with the 5 ms
# epoll_wait() timeout (--retire=userspace, also called qsbr-timeout).
exec ./epoll_server --check --retire=userspace
