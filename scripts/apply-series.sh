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
base commit and apply with 'git am' every patch listed in 'series' (the
postings, from patches/), then those of proof/series (the proof layer).
The base repository, and KERNEL_TREE if given, are only read.

Nothing is discarded without FORCE=1: the script refuses when the clone
holds uncommitted changes, a rebase or 'git am' in progress, or commits
on '$SERIES_BRANCH' that 'make export' has not written to patches/. With
FORCE=1 those are kept anyway: the commits on a branch 'saved/<time>',
the changes in 'git stash'.

On a patch that does not apply, name the patch and the files and hunks
that failed, and stop; later stages then refuse the half-applied tree
until the series applies.

Environment:
  OUT_DIR          output directory (now: $OUT_DIR)
  KERNEL_TREE      kernel git tree to use instead of $BASE_PACKAGE
  KERNEL_BASE      commit in KERNEL_TREE to apply to (default: HEAD)
  FORCE            1: set the work found in $WORKTREE aside, then apply

Exit status: 0 when every patch applied, 1 otherwise.
EOF
}

# What resetting $WORKTREE would lose, one line each; nothing when it
# holds only what this script or export-series.sh left there.
unsaved_work() {
	local head recorded

	[ -d "$WORKTREE/.git" ] || return 0
	if [ -d "$WORKTREE/.git/rebase-merge" ] || [ -d "$WORKTREE/.git/rebase-apply" ]; then
		echo "a rebase or 'git am' in progress"
	fi
	git -C "$WORKTREE" status --porcelain | sed 's/^/uncommitted: /'
	head=$(git -C "$WORKTREE" rev-parse -q --verify "refs/heads/$SERIES_BRANCH") || return 0
	recorded=$(recorded_head)
	[ "$head" != "$recorded" ] || return 0
	if [ -n "$recorded" ] && git -C "$WORKTREE" cat-file -e "$recorded^{commit}" 2>/dev/null; then
		git -C "$WORKTREE" log --format='commit not in patches/: %h %s' "$recorded..$head"
		git -C "$WORKTREE" merge-base --is-ancestor "$recorded" "$head" ||
			echo "branch $SERIES_BRANCH rewritten since the last 'make tree' or 'make export'"
	else
		echo "branch $SERIES_BRANCH at $(git -C "$WORKTREE" log -1 --format='%h %s' "$head")," \
			"not left there by 'make tree' or 'make export'"
	fi
}

# Refuse to reset $WORKTREE over the user's work; with FORCE=1 keep it aside.
keep_work() {
	local work saved

	work=$(unsaved_work)
	[ -n "$work" ] || return 0
	if [ "${FORCE:-0}" != 1 ]; then
		{
			printf '%s: error: %s holds work that applying the series would discard:\n' \
				"${0##*/}" "$WORKTREE"
			sed 's/^/  /' <<<"$work" | head -20
			cat <<EOF
Keep it with 'make export' (commit first: it exports the commits of
$SERIES_BRANCH to patches/ and series), or set it aside and apply anyway
with 'FORCE=1 make tree' (commits go to a branch saved/<time>, changes to
'git stash').
EOF
		} >&2
		exit 1
	fi
	git -C "$WORKTREE" am --abort >/dev/null 2>&1 || true
	git -C "$WORKTREE" rebase --abort >/dev/null 2>&1 || true
	if [ -n "$(git -C "$WORKTREE" status --porcelain)" ]; then
		git -C "$WORKTREE" -c user.name=apply-series -c user.email=apply-series@localhost \
			stash push -q -u -m "set aside by apply-series.sh" ||
			die "cannot stash the changes in $WORKTREE: nothing was reset"
		log "uncommitted changes kept: 'git -C $WORKTREE stash show -p'"
	fi
	if [ "$(git -C "$WORKTREE" rev-parse -q --verify "refs/heads/$SERIES_BRANCH")" != \
	     "$(recorded_head)" ]; then
		saved="saved/$(date +%Y%m%d-%H%M%S)"
		git -C "$WORKTREE" branch "$saved" "$SERIES_BRANCH"
		log "commits kept on branch $saved in $WORKTREE"
	fi
}

# A clone sharing the base repository's objects: its branches are its own,
# so neither the cache repository nor KERNEL_TREE is ever written.
prepare_worktree() {
	local repo=$1 base=$2

	mkdir -p "$OUT_DIR"
	keep_work
	rm -f "$SERIES_APPLIED_FILE"
	if [ "$(cat "$WORKTREE/.git/objects/info/alternates" 2>/dev/null)" != \
	     "$(git -C "$repo" rev-parse --path-format=absolute --git-common-dir)/objects" ]; then
		[ ! -d "$WORKTREE/.git" ] || [ "${FORCE:-0}" = 1 ] ||
			die "$WORKTREE is a clone of another base repository: move it away," \
				"or replace it with 'FORCE=1 make tree' (after 'make export')"
		rm -rf "$WORKTREE"
		git clone -q --shared --no-checkout "$repo" "$WORKTREE"
		git -C "$WORKTREE" config gc.auto 0
	fi
	git -C "$WORKTREE" checkout -q -f -B "$SERIES_BRANCH" "$base"
	git -C "$WORKTREE" clean -q -f -d
	printf '%s\n' "$base" > "$OUT_DIR/base-commit"
	record_head
}

explain_failure() {
	local mail=$1

	printf '\n%s: error: %s does not apply to %s\n' "${0##*/}" \
		"${mail#"$REPO_DIR"/}" "$(git -C "$WORKTREE" describe --always --tags "$(base_commit)")" >&2
	git -C "$WORKTREE" apply --check --verbose "$mail" 2>&1 |
		grep -E '^(error|Checking|Hunk|.*patch failed)' | sed 's/^/  /' >&2 || true
	cat >&2 <<EOF

To rebase the series onto this tree:
  cd $WORKTREE
  git am --3way $mail     # or fix by hand, then: git am --continue
  (apply the rest with 'git am', then run 'make export')
Until the series applies, the other stages refuse this tree.
EOF
	git -C "$WORKTREE" am --abort >/dev/null 2>&1 || true
	record_head
}

# 'git am' the entries of series file $1, which are relative to $2.
apply_list() {
	local list=$1 dir=$2 patch

	while read -r patch; do
		[ -f "$dir/$patch" ] || die "${list#"$REPO_DIR"/} lists $patch, which is not in ${dir#"$REPO_DIR"/}/"
		if ! git -C "$WORKTREE" -c user.name=apply-series \
			-c user.email=apply-series@localhost \
			am -q "$dir/$patch" >/dev/null 2>&1; then
			explain_failure "$dir/$patch"
			exit 1
		fi
		n=$((n + 1))
	done < <(series_patches "$list")
}

apply_patches() {
	local n=0 posted

	apply_list "$SERIES_FILE" "$PATCHES_DIR"
	posted=$n
	[ ! -f "$PROOF_SERIES" ] || apply_list "$PROOF_SERIES" "$PROOF_DIR"
	record_head
	printf '%s\n' "$n" > "$SERIES_APPLIED_FILE"
	log "applied $posted patches of $(postings | wc -l) postings and $((n - posted)) of the proof layer on $(git -C "$WORKTREE" log -1 --format='%h (%s)' "$(base_commit)")"
}

main() {
	local base_info repo base

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	[ -r "$SERIES_FILE" ] || die "no series file at $SERIES_FILE"
	case "${FORCE:-0}" in 0|1) ;; *) die "FORCE must be 0 or 1, not '$FORCE'" ;; esac
	base_info=$("$REPO_DIR/scripts/get-base-tree.sh")
	repo=$(sed -n 1p <<<"$base_info")
	base=$(sed -n 2p <<<"$base_info")
	prepare_worktree "$repo" "$base"
	apply_patches
}

main "$@"
