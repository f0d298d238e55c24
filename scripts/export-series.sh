#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Export the commits of the work tree back into patches/, series and mirrors.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

# Where the series' own files live in the kernel tree, and their mirrors.
readonly MIRRORS=(
	"fs/tests/eventpoll:kunit"
	"tools/testing/selftests/filesystems/epoll/:selftests"
)

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [-o DIR]

Regenerate the product from the commits base..$SERIES_BRANCH in \$OUT_DIR/linux:
  patches/    'git format-patch' mails (names as format-patch makes them);
              nothing is added: sign off when you commit ('git commit -s'),
              so that the result depends on the commits only, never on
              whose git identity runs the export
  series      rewritten in the same order; each patch keeps the '#' section
              it had (matched by name without its number); new ones follow
              the patch before them
  kunit/      the series' fs/tests/eventpoll* files, as in the tree
  selftests/  the series' files in tools/testing/selftests/filesystems/epoll/

  -o DIR      write into DIR instead of this repository (used by
              scripts/check-series.sh to detect drift)

Exit status: 0 on success, 1 on error.
EOF
}

# Name without the NNNN- prefix, to follow a patch across renumbering.
slug() { sed -E 's/^[0-9]{4}-//' <<<"$1"; }

write_series() {
	local old=$1 new=$2 dest=$3 line name header="" current="" pending=""
	local in_preamble=1
	declare -A section_of=()

	: > "$dest"
	# The preamble is the comment block up to the first blank line; after
	# it, the comment lines above a group of patches are its section.
	while IFS= read -r line; do
		if [ "$in_preamble" -eq 1 ]; then
			printf '%s\n' "$line" >> "$dest"
			[ -n "$line" ] || in_preamble=0
			continue
		fi
		case "$line" in
		"#"*|"") pending+="$line"$'\n' ;;
		*)
			if [ -n "$pending" ]; then header=$pending; pending=""; fi
			section_of[$(slug "$line")]=$header
			;;
		esac
	done < "$old"
	[ "$in_preamble" -eq 0 ] || printf '\n' >> "$dest"
	while read -r name; do
		header=${section_of[$(slug "$name")]-$current}
		if [ "$header" != "$current" ]; then
			printf '%s' "$header" >> "$dest"
			current=$header
		fi
		printf '%s\n' "$name" >> "$dest"
	done < "$new"
}

mirror() {
	local dest=$1 base=$2 spec path dir

	for spec in "${MIRRORS[@]}"; do
		path=${spec%%:*}
		dir="$dest/${spec#*:}"
		rm -rf "$dir"
		mkdir -p "$dir"
		git -C "$WORKTREE" diff --name-only --diff-filter=AM "$base" HEAD -- "$path*" |
		while read -r f; do
			git -C "$WORKTREE" show "HEAD:$f" > "$dir/${f##*/}"
		done
	done
}

main() {
	local dest=$REPO_DIR base

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	-o) [ -n "${2:-}" ] || die "-o needs a directory"; dest=$2 ;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	need_branch
	base=$(base_commit)
	[ -z "$(git -C "$WORKTREE" status --porcelain --untracked-files=no)" ] ||
		die "uncommitted changes in $WORKTREE: commit or stash them first"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT

	git -C "$WORKTREE" format-patch -q --no-signature --zero-commit \
		--numbered -o "$tmp/patches" "$base..HEAD" ||
		die "git format-patch failed"
	ls "$tmp/patches" > "$tmp/new" 2>/dev/null || : > "$tmp/new"
	[ -s "$tmp/new" ] || die "no commits between base and HEAD in $WORKTREE"

	mkdir -p "$dest"
	write_series "$SERIES_FILE" "$tmp/new" "$tmp/series"
	rm -rf "$dest/patches"
	cp -r "$tmp/patches" "$dest/patches"
	cp "$tmp/series" "$dest/series"
	mirror "$dest" "$base"
	# Exported: the commits are in patches/ now, 'make tree' may reset them.
	[ "$dest" != "$REPO_DIR" ] || record_head
	log "exported $(wc -l < "$tmp/new") patches to $dest"
}

main "$@"
