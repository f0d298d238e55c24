#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kselftest entry (BENCH_CHECK=1, scripts/build-selftests.sh): the short
# correctness run of the server's io_uring multishot poll variant
# (skips without io_uring or multishot poll).
exec ./epoll_server --check --retire=uring-multishot
