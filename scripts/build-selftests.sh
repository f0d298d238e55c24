#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the epoll kselftests of the patched tree, static, for -m64 and -m32,
# and with BENCH_CHECK=1 the short correctness runs of bench/.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly TARGET="filesystems/epoll"
readonly KBUILD="$BUILD_DIR/qemu"
readonly HDRS="$KBUILD/usr/include"
readonly OUT="$BUILD_DIR/selftests"
# ABIs to build for; x86-64 packs struct epoll_event, i386 does not need to.
readonly ABIS=(m64 m32)
# 1: add bench/'s --check runs to the -m64 installation.
: "${BENCH_CHECK:=}"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h]

Build and install tools/testing/selftests/$TARGET of the patched tree
with 'make -C tools/testing/selftests TARGETS=$TARGET install', against
the uapi headers that scripts/build-kernel.sh installed ($HDRS),
statically, once per ABI (${ABIS[*]}), into $OUT/<abi>/: the
programs and their settings under $TARGET/, run_kselftest.sh and
kselftest-list.txt, as the kselftest documentation describes.

With BENCH_CHECK=1, bench/'s 'make install-kselftest' then adds the
collection "bench" to the -m64 installation: epoll_server --check for
each retirement variant (bench/VARIANTS.md), short runs that fail on a
use-after-free (except the naive variant), a wrong answer, an unexpected
epoll_ctl() error or a leaked item, descriptor or state; and
epoll_oneshot_window --check, which fails when a one-shot item woken
during its delivery wakes a second sleeper (fix 3 missing).

Environment:
  OUT_DIR      output directory (now: $OUT_DIR)
  BENCH_CHECK  1 to add the bench/ checks (now: '$BENCH_CHECK')

Exit status: 0 on success, 1 on error.
EOF
}

build_abi() {
	local abi=$1 dest="$OUT/$1"

	rm -rf "$dest" "$OUT/build-$abi"
	mkdir -p "$OUT"
	# The selftests' own 'make install': the programs, their settings,
	# kselftest-list.txt and run_kselftest.sh, which the guest runs.
	CFLAGS="-$abi -static -O2 -g" LDFLAGS="-$abi -static" \
		make -s -C "$WORKTREE/tools/testing/selftests" TARGETS="$TARGET" \
		O="$KBUILD" BUILD="$OUT/build-$abi" KSFT_INSTALL_PATH="$dest" \
		install >"$OUT/build-$abi.log" 2>&1 ||
		die "selftests failed to build for -$abi: see $OUT/build-$abi.log"
	grep -q "^$TARGET:" "$dest/kselftest-list.txt" ||
		die "no test program was built for -$abi"
	log "-$abi: $(sed -n "s|^$TARGET:||p" "$dest/kselftest-list.txt" | tr '\n' ' ')"
}

# bench/epoll_server --check, as kselftest entries of the -m64 ABI.
build_bench_check() {
	rm -rf "$OUT/build-bench"
	make -C "$REPO_DIR/bench" OUTPUT="$OUT/build-bench" INSTALL_PATH="$OUT/m64" \
		install-kselftest >"$OUT/build-bench.log" 2>&1 ||
		die "bench/ failed to build: see $OUT/build-bench.log"
	! grep -q 'warning:' "$OUT/build-bench.log" ||
		die "bench/ builds with warnings: see $OUT/build-bench.log"
	log "-m64: $(sed -n 's|^bench:||p' "$OUT/m64/kselftest-list.txt" | tr '\n' ' ')"
}

main() {
	local abi

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	case "$BENCH_CHECK" in
	""|0|1) ;;
	*) die "BENCH_CHECK must be 1, 0 or empty, not '$BENCH_CHECK'" ;;
	esac
	need_worktree
	[ -f "$HDRS/linux/eventpoll.h" ] || die "no uapi headers in $HDRS: run 'make kernel' (scripts/build-kernel.sh)"
	for abi in "${ABIS[@]}"; do
		build_abi "$abi"
	done
	[ "$BENCH_CHECK" != 1 ] || build_bench_check
}

main "$@"
