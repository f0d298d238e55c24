#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kselftest entry (BENCH_CHECK=1, scripts/build-selftests.sh): the short
# correctness run of the server's QSBR variant whose grace periods the
# workers end themselves (no timeout, no tick).
exec ./epoll_server --check --retire=qsbr-self
