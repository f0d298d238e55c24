#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the epoll kselftests of the patched tree, static, for -m64 and -m32.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly TEST_DIR="tools/testing/selftests/filesystems/epoll"
readonly HDRS="$BUILD_DIR/qemu/usr/include"
readonly OUT="$BUILD_DIR/selftests"
# ABIs to build for; x86-64 packs struct epoll_event, i386 does not need to.
readonly ABIS=(m64 m32)

usage() {
	cat <<EOF
Usage: ${0##*/} [-h]

Build $TEST_DIR of the patched tree with the
uapi headers that scripts/build-kernel.sh installed ($HDRS),
statically, once per ABI (${ABIS[*]}), into $OUT/<abi>/.
The directory's 'settings' file, if any, is copied beside the binaries.

Environment:
  OUT_DIR  output directory (now: $OUT_DIR)

Exit status: 0 on success, 1 on error.
EOF
}

build_abi() {
	local abi=$1 dest="$OUT/$1"

	rm -rf "$dest"
	mkdir -p "$dest"
	CFLAGS="-$abi -static -O2 -g" LDFLAGS="-$abi -static" \
		make -s -C "$WORKTREE/$TEST_DIR" OUTPUT="$dest" \
		KHDR_INCLUDES="-isystem $HDRS" all >/dev/null ||
		die "selftests failed to build for -$abi"
	[ ! -f "$WORKTREE/$TEST_DIR/settings" ] || cp "$WORKTREE/$TEST_DIR/settings" "$dest/"
	find "$dest" -maxdepth 1 -type f -perm -u+x -printf '%f\n' | sort > "$dest/list"
	[ -s "$dest/list" ] || die "no test program was built for -$abi"
	log "-$abi: $(tr '\n' ' ' < "$dest/list")"
}

main() {
	local abi

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	need_worktree
	[ -f "$HDRS/linux/eventpoll.h" ] || die "no uapi headers in $HDRS: run scripts/build-kernel.sh"
	for abi in "${ABIS[@]}"; do
		build_abi "$abi"
	done
}

main "$@"
