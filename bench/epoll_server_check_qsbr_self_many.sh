#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kselftest entry (BENCH_CHECK=1, scripts/build-selftests.sh): the QSBR
# variant whose workers end the grace periods, with 64 workers, where a
# worker passing its need while the reaper starts a grace period is
# common: the run that caught a grace period ending one worker early.
exec ./epoll_server --check --retire=qsbr-self --workers=64 --clients=64
