#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kselftest entry (BENCH_CHECK=1, scripts/build-selftests.sh): the short
# correctness run of the server's naive variant (delete and free at once),
# which passes only if the use-after-free detector sees what that causes.
exec ./epoll_server --check --retire=naive
