#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kselftest entry (BENCH_CHECK=1, scripts/build-selftests.sh): the short
# correctness run of the server's QSBR variant whose grace periods the
# workers end themselves (no timeout, no tick); then with 64 workers, where
# a worker passing its need while the reaper starts a grace period is
# common: the run that caught a grace period ending one worker early.
./epoll_server --check --retire=qsbr-self || exit
exec ./epoll_server --check --retire=qsbr-self --workers=64 --clients=64
