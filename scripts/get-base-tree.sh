#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Provide the kernel git tree the series applies to, and name its base commit.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h]

Print two lines on stdout: the path of a kernel git repository and the
commit the series is based on.

Without KERNEL_TREE, unpack Debian's $BASE_PACKAGE (installed by
scripts/install-deps.sh) once into \$EPOLL_CACHE_DIR, make it a git
repository with a single tagged base commit, and reuse it on later runs.

With KERNEL_TREE, check that it is a kernel git tree and print it with
KERNEL_BASE (default: its HEAD). The tree's branches are not touched.

Environment:
  EPOLL_CACHE_DIR  cache for the unpacked tree (now: $EPOLL_CACHE_DIR)
  KERNEL_TREE      existing kernel git tree to use instead
  KERNEL_BASE      commit-ish in KERNEL_TREE to base on (default: HEAD)

Exit status: 0 on success, 1 on error.
EOF
}

debian_base() {
	local debver tarball repo tag kver
	debver=$(dpkg-query -W -f='${Version}' "$BASE_PACKAGE" 2>/dev/null) ||
		die "$BASE_PACKAGE is not installed: run 'make deps' (scripts/install-deps.sh)"
	tarball=$(dpkg -L "$BASE_PACKAGE" | grep -m1 '\.tar\.xz$') ||
		die "$BASE_PACKAGE ships no tarball"
	repo="$EPOLL_CACHE_DIR/base/$BASE_PACKAGE-$debver"
	tag="base/$debver"
	tag=${tag//'~'/_}

	if ! git -C "$repo" rev-parse -q --verify "refs/tags/$tag" >/dev/null 2>&1; then
		log "unpacking $tarball ($debver) into $repo"
		rm -rf "$repo"
		mkdir -p "$repo"
		tar -C "$repo" --strip-components=1 -xJf "$tarball"
		# Debian's .gitignore ends with a block that ignores the whole
		# top level ('/*'), hiding every new file: drop that block.
		sed -i '/^# Debian packaging/,$d' "$repo/.gitignore"
		sed -i '$ { /^#$/d }' "$repo/.gitignore"
		git -C "$repo" init -q -b base
		git -C "$repo" config gc.auto 0
		kver=$(make -s -C "$repo" kernelversion)
		git -C "$repo" add -f -A
		git -C "$repo" -c user.name=base -c user.email=base@localhost \
			commit -q -m "Linux $kver ($BASE_PACKAGE $debver)" \
			-m "Unpacked from $(basename "$tarball"); the Debian packaging block at the end of .gitignore is removed."
		git -C "$repo" tag "$tag"
	fi
	printf '%s\n%s\n' "$repo" "$(git -C "$repo" rev-parse "$tag^{commit}")"
}

given_base() {
	local rev=${KERNEL_BASE:-HEAD}
	git -C "$KERNEL_TREE" rev-parse --git-dir >/dev/null 2>&1 ||
		die "KERNEL_TREE=$KERNEL_TREE is not a git repository"
	[ -f "$KERNEL_TREE/fs/eventpoll.c" ] ||
		die "KERNEL_TREE=$KERNEL_TREE has no fs/eventpoll.c: not a kernel tree"
	rev=$(git -C "$KERNEL_TREE" rev-parse -q --verify "$rev^{commit}") ||
		die "KERNEL_BASE=${KERNEL_BASE:-HEAD} is not a commit in $KERNEL_TREE"
	printf '%s\n%s\n' "$(cd "$KERNEL_TREE" && pwd)" "$rev"
}

main() {
	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	if [ -n "$KERNEL_TREE" ]; then
		given_base
	else
		debian_base
	fi
}

main "$@"
