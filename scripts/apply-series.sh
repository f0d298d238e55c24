#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Apply the patch series with 'git am' on a fresh branch of the base tree.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h]

Make \$OUT_DIR/linux a clone of the base tree (see scripts/get-base-tree.sh)
that shares its objects, reset the clone's branch '$SERIES_BRANCH' to the
base commit and apply every patch listed in 'series' with 'git am'.
The base repository, and KERNEL_TREE if given, are only read.

On a patch that does not apply, name the patch and the files and hunks
that failed, and stop.

Environment:
  OUT_DIR          output directory (now: $OUT_DIR)
  KERNEL_TREE      kernel git tree to use instead of $BASE_PACKAGE
  KERNEL_BASE      commit in KERNEL_TREE to apply to (default: HEAD)

Exit status: 0 when every patch applied, 1 otherwise.
EOF
}

# A clone sharing the base repository's objects: its branches are its own,
# so neither the cache repository nor KERNEL_TREE is ever written.
prepare_worktree() {
	local repo=$1 base=$2

	mkdir -p "$OUT_DIR"
	if [ "$(cat "$WORKTREE/.git/objects/info/alternates" 2>/dev/null)" != \
	     "$(git -C "$repo" rev-parse --path-format=absolute --git-common-dir)/objects" ]; then
		rm -rf "$WORKTREE"
		git clone -q --shared --no-checkout "$repo" "$WORKTREE"
		git -C "$WORKTREE" config gc.auto 0
	fi
	git -C "$WORKTREE" am --abort >/dev/null 2>&1 || true
	git -C "$WORKTREE" checkout -q -f -B "$SERIES_BRANCH" "$base"
	git -C "$WORKTREE" clean -q -f -d
	printf '%s\n' "$base" > "$OUT_DIR/base-commit"
}

explain_failure() {
	local patch=$1

	printf '\n%s: error: %s does not apply to %s\n' "${0##*/}" \
		"$patch" "$(git -C "$WORKTREE" describe --always --tags "$(base_commit)")" >&2
	git -C "$WORKTREE" apply --check --verbose "$PATCHES_DIR/$patch" 2>&1 |
		grep -E '^(error|Checking|Hunk|.*patch failed)' | sed 's/^/  /' >&2 || true
	cat >&2 <<EOF

To rebase the series onto this tree:
  cd $WORKTREE
  git am --3way $PATCHES_DIR/$patch     # or fix by hand, then: git am --continue
  (apply the rest with 'git am', then run scripts/export-series.sh)
EOF
	git -C "$WORKTREE" am --abort >/dev/null 2>&1 || true
}

apply_patches() {
	local patch n=0

	while read -r patch; do
		[ -f "$PATCHES_DIR/$patch" ] || die "series lists $patch, which is not in patches/"
		if ! git -C "$WORKTREE" -c user.name=apply-series \
			-c user.email=apply-series@localhost \
			am -q "$PATCHES_DIR/$patch" >/dev/null 2>&1; then
			explain_failure "$patch"
			exit 1
		fi
		n=$((n + 1))
	done < <(series_patches)
	log "applied $n patches on $(git -C "$WORKTREE" log -1 --format='%h (%s)' "$(base_commit)")"
}

main() {
	local base_info repo base

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	[ -r "$SERIES_FILE" ] || die "no series file at $SERIES_FILE"
	base_info=$("$REPO_DIR/scripts/get-base-tree.sh")
	repo=$(sed -n 1p <<<"$base_info")
	base=$(sed -n 2p <<<"$base_info")
	prepare_worktree "$repo" "$base"
	apply_patches
}

main "$@"
