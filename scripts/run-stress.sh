#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A long run of epoll_proof_stress_test in the guest (make stress).
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly PROGRAM=epoll_proof_stress_test
# Where the KCSAN kernel, its selftests and its results go.
readonly KCSAN_OUT="$OUT_DIR/kcsan"
# Seconds of stress per ABI: the guest runs -m32, then -m64, so the
# default makes a quarter of an hour of guest time.
: "${DURATION:=450}"
# EPOLL_STRESS_SEED for both ABIs. The program's default is fixed, for
# repeatable runs in make check; a stress run explores a new one each time.
: "${SEED:=0x$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')}"
# 1: boot a kernel with KCSAN (config/kcsan.config) instead of KASAN.
: "${KCSAN:=}"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h]

Boot the guest with only $PROGRAM, for DURATION seconds of stress per
ABI (kernel command line epoll_stress.seconds=, which the guest's /init
exports as EPOLL_STRESS_SECONDS; boot-time KUnit off), then print the
verdict of scripts/summarize.py and the test's figures (seed, operations
and syscalls per second, DISABLE results), which are also kept in
results/stress.txt. Any KASAN, KCSAN, lockdep, RCU or hung-task report in
the kernel log fails the run, as in make check.

The KASAN kernel is the one of 'make kernel selftests initramfs'. With
KCSAN=1, the series' tree is checked out in $KCSAN_OUT/linux
and built there with config/kcsan.config in place of
config/debug.config (KCSAN and KASAN cannot be combined); its results go
to $KCSAN_OUT/results.

Environment:
  DURATION      seconds of stress per ABI (now: $DURATION)
  SEED          EPOLL_STRESS_SEED, to replay a run (default: a random one;
                now: '${SEED}')
  KCSAN         1 for the KCSAN kernel (now: '${KCSAN}')
  QEMU_TIMEOUT  limit for the whole boot (default: 2 x DURATION + 900 s)
  QEMU_APPEND   more kernel command line
  OUT_DIR       output directory (now: $OUT_DIR)

Exit status: 0 when the run passed, 1 otherwise.
EOF
}

# The KCSAN guest: the applied series as a worktree, built apart.
prepare_kcsan() {
	need_worktree
	mkdir -p "$KCSAN_OUT"
	worktree_at "$KCSAN_OUT/linux" "$SERIES_BRANCH"
	cp "$OUT_DIR/base-commit" "$SERIES_APPLIED_FILE" "$KCSAN_OUT/"
	OUT_DIR=$KCSAN_OUT DEBUG_CONFIG=$REPO_DIR/config/kcsan.config \
		"$REPO_DIR/scripts/build-kernel.sh"
	OUT_DIR=$KCSAN_OUT "$REPO_DIR/scripts/build-selftests.sh"
	OUT_DIR=$KCSAN_OUT "$REPO_DIR/scripts/make-initramfs.sh"
}

# The test's own figures, and the time each ABI took, from its KTAP.
figures() {
	grep -E '# (seed=|stress:|FAIL)|epoll-guest: m[0-9]+ took' "$1" |
		sed -e 's/^[ #]*//'
}

main() {
	local out=$OUT_DIR append rc=0

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	need_x86_64_guest
	[[ $DURATION =~ ^[0-9]+$ ]] || die "DURATION must be a number of seconds, not '$DURATION'"
	if [ -n "$KCSAN" ]; then
		prepare_kcsan
		out=$KCSAN_OUT
	fi
	# As root only (epoll.envs= empty): the guest's other environments
	# would run the stress once more each, past QEMU_TIMEOUT.
	append="epoll.tests=$PROGRAM epoll.envs= epoll_stress.seconds=$DURATION kunit.enable=0"
	[ -z "$SEED" ] || append+=" epoll_stress.seed=$SEED"
	OUT_DIR=$out QEMU_TIMEOUT=${QEMU_TIMEOUT:-$((2 * DURATION + 900))} \
		QEMU_APPEND="$append ${QEMU_APPEND:-}" "$REPO_DIR/scripts/run-qemu.sh" || rc=1
	figures "$out/results/ktap.log" | tee "$out/results/stress.txt" >&2
	"$REPO_DIR/scripts/summarize.py" "$out/results" || rc=1
	return "$rc"
}

main "$@"
