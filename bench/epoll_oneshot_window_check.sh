#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kselftest entry (BENCH_CHECK=1, scripts/build-selftests.sh): a short run
# of epoll_oneshot_window that fails when a one-shot item woken during its
# delivery wakes a second sleeper, as it does without the fixes posting.
exec ./epoll_oneshot_window --check --rounds=20
