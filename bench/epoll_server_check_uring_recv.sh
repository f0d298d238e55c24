#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kselftest entry (BENCH_CHECK=1, scripts/build-selftests.sh): the short
# correctness run of the server's liburing variant (a ring per worker,
# multishot recv with provided buffers; skips without those features).
exec ./epoll_server --check --retire=uring-recv
