#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the epoll kselftests of the patched tree, static, for -m64 and -m32.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly TARGET="filesystems/epoll"
readonly KBUILD="$BUILD_DIR/qemu"
readonly HDRS="$KBUILD/usr/include"
readonly OUT="$BUILD_DIR/selftests"
# ABIs to build for; x86-64 packs struct epoll_event, i386 does not need to.
readonly ABIS=(m64 m32)

usage() {
	cat <<EOF
Usage: ${0##*/} [-h]

Build and install tools/testing/selftests/$TARGET of the patched tree
with 'make -C tools/testing/selftests TARGETS=$TARGET install', against
the uapi headers that scripts/build-kernel.sh installed ($HDRS),
statically, once per ABI (${ABIS[*]}), into $OUT/<abi>/: the
programs and their settings under $TARGET/, run_kselftest.sh and
kselftest-list.txt, as the kselftest documentation describes.

Environment:
  OUT_DIR  output directory (now: $OUT_DIR)

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

main() {
	local abi

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	need_worktree
	[ -f "$HDRS/linux/eventpoll.h" ] || die "no uapi headers in $HDRS: run 'make kernel' (scripts/build-kernel.sh)"
	for abi in "${ABIS[@]}"; do
		build_abi "$abi"
	done
}

main "$@"
