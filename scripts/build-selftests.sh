#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the epoll kselftests of the patched tree, static, for the guest's
# ABIs (x86_64: -m64 and -m32; arm64: its 64-bit ABI), and with
# BENCH_CHECK=1 the short correctness runs of bench/ (x86_64 only).
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly TARGET="filesystems/epoll"
readonly KBUILD="$BUILD_DIR/qemu"
readonly HDRS="$KBUILD/usr/include"
readonly OUT="$BUILD_DIR/selftests"
# ABIs to build for, each with its compiler flag; x86-64 packs struct
# epoll_event, i386 does not need to. arm64's 64-bit ABI keeps the name
# m64 (its flag is -mabi=lp64): guest/init's epoll.abis= and the summary's
# names are the same on both. Its compat arm32 ABI is not built.
case "$GUEST_ARCH" in
x86_64)
	readonly ABIS=(m64 m32) SELFTEST_ARCH=x86
	declare -rA ABI_FLAG=([m64]=-m64 [m32]=-m32)
	;;
arm64)
	readonly ABIS=(m64) SELFTEST_ARCH=arm64
	declare -rA ABI_FLAG=([m64]=-mabi=lp64)
	;;
esac
# 1: add bench/'s --check runs to the -m64 installation.
: "${BENCH_CHECK:=}"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h]

Build and install tools/testing/selftests/$TARGET of the patched tree
with 'make -C tools/testing/selftests TARGETS=$TARGET install', against
the uapi headers that scripts/build-kernel.sh installed ($HDRS),
statically with ${GUEST_CROSS}gcc, once per ABI (${ABIS[*]}), into
$OUT/<abi>/: the
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
  GUEST_ARCH   x86_64 or arm64 (now: $GUEST_ARCH)
  BENCH_CHECK  1 to add the bench/ checks, x86_64 only (now: '$BENCH_CHECK')

Exit status: 0 on success, 1 on error.
EOF
}

build_abi() {
	local abi=$1 dest="$OUT/$1" flag=${ABI_FLAG[$1]}

	rm -rf "$dest" "$OUT/build-$abi"
	mkdir -p "$OUT"
	# The selftests' own 'make install': the programs, their settings,
	# kselftest-list.txt and run_kselftest.sh, which the guest runs.
	CFLAGS="$flag -static -O2 -g" LDFLAGS="$flag -static" \
		make -s -C "$WORKTREE/tools/testing/selftests" TARGETS="$TARGET" \
		ARCH="$SELFTEST_ARCH" CROSS_COMPILE="$GUEST_CROSS" \
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
	[ "$BENCH_CHECK" != 1 ] || need_x86_64_guest
	command -v "${GUEST_CROSS}gcc" >/dev/null ||
		die "${GUEST_CROSS}gcc missing: run 'make deps' (scripts/install-deps.sh)"
	need_worktree
	[ -f "$HDRS/linux/eventpoll.h" ] || die "no uapi headers in $HDRS: run 'make kernel' (scripts/build-kernel.sh)"
	for abi in "${ABIS[@]}"; do
		build_abi "$abi"
	done
	[ "$BENCH_CHECK" != 1 ] || build_bench_check
}

main "$@"
