#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kselftest entry (BENCH_CHECK=1, scripts/build-selftests.sh): the short
# correctness run of the server's forced-event variant (an armed
# connection is shut down and freed by the worker that gets the event, as
# Qpid Proton's epoll proactor does).
exec ./epoll_server --check --retire=shutdown
