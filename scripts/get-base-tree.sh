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

Without KERNEL_TREE, take Debian's $BASE_PACKAGE: with BASE_SUITE set,
download it from that suite (scripts/fetch-debian-package.sh: a private
apt configuration on the host's mirror, nothing installed); with
BASE_SUITE empty, the installed package (scripts/install-deps.sh). Unpack
its tarball once into \$EPOLL_CACHE_DIR, make it a git repository with a
single tagged base commit, and reuse it on later runs.

With KERNEL_TREE, check that it is a kernel git tree and print it with
KERNEL_BASE (default: its HEAD). The tree's branches are not touched.

Environment:
  EPOLL_CACHE_DIR  cache for the unpacked tree (now: $EPOLL_CACHE_DIR)
  BASE_PACKAGE     Debian package of the base tree (now: $BASE_PACKAGE)
  BASE_SUITE       suite to download it from, empty: installed (now: ${BASE_SUITE:-installed})
  BASE_VERSION     version to take from BASE_SUITE (now: ${BASE_VERSION:-the current one})
  KERNEL_TREE      existing kernel git tree to use instead
  KERNEL_BASE      commit-ish in KERNEL_TREE to base on (default: HEAD)

Exit status: 0 on success, 1 on error.
EOF
}

# Locate the package: set pkg_version, and pkg_deb (a downloaded .deb)
# or pkg_tarball (the tarball of the installed package).
pkg_version="" pkg_deb="" pkg_tarball=""
locate_package() {
	if [ -n "$BASE_SUITE" ]; then
		pkg_deb=$("$REPO_DIR/scripts/fetch-debian-package.sh" "$BASE_PACKAGE" \
			"$BASE_SUITE" "$BASE_VERSION") || exit 1
		pkg_version=$(dpkg-deb -f "$pkg_deb" Version)
	else
		pkg_version=$(dpkg-query -W -f='${Version}' "$BASE_PACKAGE" 2>/dev/null) ||
			die "$BASE_PACKAGE is not installed: run 'make deps' (scripts/install-deps.sh)"
		pkg_tarball=$(dpkg -L "$BASE_PACKAGE" | grep -m1 '\.tar\.xz$') ||
			die "$BASE_PACKAGE ships no tarball"
	fi
}

# The kernel tarball of the located package, on stdout.
package_tarball() {
	local member

	if [ -n "$pkg_deb" ]; then
		member=$(dpkg-deb -c "$pkg_deb" | grep -o '\./usr/src/[^ ]*\.tar\.xz$' | head -n 1)
		[ -n "$member" ] || die "$pkg_deb ships no kernel tarball"
		dpkg-deb --fsys-tarfile "$pkg_deb" | tar -xO "$member"
	else
		cat "$pkg_tarball"
	fi
}

debian_base() {
	local debver="" repo tag kver

	# A pinned version already unpacked needs no apt at all.
	if [ -n "$BASE_SUITE" ] && [ -n "$BASE_VERSION" ] &&
	   git -C "$EPOLL_CACHE_DIR/base/$BASE_PACKAGE-$BASE_VERSION" rev-parse -q \
		--verify "refs/tags/base/${BASE_VERSION//'~'/_}" >/dev/null 2>&1; then
		debver=$BASE_VERSION
	else
		locate_package
		debver=$pkg_version
	fi
	repo="$EPOLL_CACHE_DIR/base/$BASE_PACKAGE-$debver"
	tag="base/${debver//'~'/_}"

	if ! git -C "$repo" rev-parse -q --verify "refs/tags/$tag" >/dev/null 2>&1; then
		log "unpacking $BASE_PACKAGE $debver into $repo"
		rm -rf "$repo"
		mkdir -p "$repo"
		package_tarball | tar -C "$repo" --strip-components=1 -xJ ||
			die "unpacking $BASE_PACKAGE $debver failed"
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
			-m "Unpacked from Debian's $BASE_PACKAGE $debver; the Debian packaging block at the end of .gitignore is removed."
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
