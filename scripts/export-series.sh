#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Export the commits of the work tree back into the postings, the proof
# layer and the mirrors.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

# Where the series' own files live in the kernel tree, and their mirrors.
readonly MIRRORS=(
	"fs/tests/:kunit"
	"tools/testing/selftests/filesystems/epoll/:selftests"
)
# Columns of the diffstat in a cover letter, as format-patch makes them.
readonly STAT_WIDTH=72

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [-o DIR]

Regenerate the product from the commits base..$SERIES_BRANCH in \$OUT_DIR/linux.
The commits that carry the trailer "$PROOF_TRAILER"
are the proof layer; they must all come after the postings' commits.

  series            the postings' patches, in order; each keeps the '#'
                    section (the posting) it had, matched by directory
                    and name without its number; a new commit belongs to
                    the posting of the commit before it
  patches/P/        'git format-patch' mails of posting P, numbered within
                    P, with the subject prefix of P's cover letter template
                    (Documentation/cover-letters/P.txt), and
                    0000-cover-letter.patch made from that template with
                    the posting's shortlog and diffstat, and a
                    'prerequisite-patch-id:' line (git patch-id --stable)
                    for each patch of the postings the template names in
                    'prerequisite-posting:' lines, and of theirs
  proof/series, proof/*.patch   the proof layer's mails
  kunit/, selftests/            the postings' files in fs/tests/ and in
                    tools/testing/selftests/filesystems/epoll/, as the
                    last posting leaves them
  proof/kunit/, proof/selftests/   the same for the files the proof layer
                    adds, as HEAD has them

Nothing is added to the commits: sign off when you commit
('git commit -s'), so that the result depends on the commits only.

  -o DIR      write into DIR instead of this repository (used by
              scripts/check-series.sh to detect drift)

Exit status: 0 on success, 1 on error.
EOF
}

# Name without the NNNN- prefix, to follow a patch across renumbering.
slug() { sed -E 's/^[0-9]{4}-//' <<<"$1"; }

# "PATCH" or "RFC PATCH" from the Subject: of template $1.
subject_prefix() {
	mail_field "$1" Subject | sed -n 's/^\[\([^]]*\) 0\/[0-9n]*\].*/\1/p'
}

# Assign each commit of base..HEAD, oldest first, to a posting or to the
# proof layer: print "posting<TAB>commit" or "proof<TAB>commit".
classify() {
	local base=$1 tmp=$2 c subj name current="" seen_proof=0
	declare -A posting_of=()

	while read -r name; do
		posting_of[$(slug "${name##*/}")]=${name%%/*}
	done < <(series_patches)
	for c in $(git -C "$WORKTREE" rev-list --reverse "$base..HEAD"); do
		if is_proof_commit "$c"; then
			seen_proof=1
			printf 'proof\t%s\n' "$c"
			continue
		fi
		[ "$seen_proof" -eq 0 ] ||
			die "commit $(git -C "$WORKTREE" log -1 --format='%h %s' "$c") of a posting comes after the proof layer's commits: reorder them"
		subj=$(git -C "$WORKTREE" format-patch -1 --zero-commit -o "$tmp/one" "$c")
		rm -f "$subj"
		subj=$(slug "${subj##*/}")
		for name in "${!posting_of[@]}"; do
			[ "$name" = "$subj" ] && current=${posting_of[$name]}
		done
		[ -n "$current" ] ||
			die "commit $(git -C "$WORKTREE" log -1 --format='%h %s' "$c") matches no entry of series and follows none: add it to a posting's section"
		printf '%s\t%s\n' "$current" "$c"
	done
}

# The preamble of the series file $1: its comment block up to the first
# blank line; and the section header (comment lines) above each posting.
write_series() {
	local old=$1 dest=$2 listing=$3 line in_preamble=1 pending="" posting prev=""
	declare -A header_of=()

	: > "$dest"
	while IFS= read -r line; do
		if [ "$in_preamble" -eq 1 ]; then
			printf '%s\n' "$line" >> "$dest"
			[ -n "$line" ] || in_preamble=0
			continue
		fi
		case "$line" in
		"#"*|"") pending+="$line"$'\n' ;;
		*)
			if [ -n "$pending" ]; then
				header_of[${line%%/*}]=$pending
				pending=""
			fi
			;;
		esac
	done < "$old"
	[ "$in_preamble" -eq 0 ] || printf '\n' >> "$dest"
	while read -r line; do
		posting=${line%%/*}
		if [ "$posting" != "$prev" ]; then
			printf '%s' "${header_of[$posting]-"# $posting"$'\n'}" >> "$dest"
			prev=$posting
		fi
		printf '%s\n' "$line" >> "$dest"
	done < "$listing"
}

# The cover letter of posting $1 (commits $2..$3) from its template; the
# posting's prerequisites' mails are in $4/<posting>/. The template's
# header block gives Subject:, To:, Cc: and the postings it needs
# ('prerequisite-posting:'); those become what git format-patch --base
# writes after the diffstat, one 'prerequisite-patch-id:' a patch they
# post (the base-commit: line, a fact of the sender's tree, is added by
# scripts/submit.sh).
cover_letter() {
	local posting=$1 from=$2 to=$3 mails=$4 template="$COVER_DIR/$1.txt" n dep p

	n=$(git -C "$WORKTREE" rev-list --count "$from..$to")
	printf 'From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n'
	git -C "$WORKTREE" log -1 --format='From: %an <%ae>%nDate: %aD' "$to"
	sed -n '1,/^$/p' "$template" | grep -v '^prerequisite-posting:' |
		sed "s|^\(Subject: \[[^]]*\) 0/[0-9n]*\]|\1 0/$n]|"
	sed '1,/^$/d' "$template"
	printf '\n'
	git -C "$WORKTREE" shortlog --no-merges "$from..$to"
	git -C "$WORKTREE" diff --stat="$STAT_WIDTH" --summary "$from" "$to"
	dep=$(posting_prereqs "$posting")
	[ -n "$dep" ] || return 0
	printf '\n'
	for dep in $dep; do
		[ -d "$mails/$dep" ] ||
			die "posting $posting needs $dep, which is not among the postings before it: fix 'prerequisite-posting:' in $template"
		for p in "$mails/$dep"/[0-9][0-9][0-9][0-9]-*.patch; do
			[ "${p##*/}" != 0000-cover-letter.patch ] || continue
			printf 'prerequisite-patch-id: %s\n' "$(git patch-id --stable < "$p" | cut -d' ' -f1)"
		done
	done
}

# Mirror into $1 the files under the paths of MIRRORS that commits
# $2..$3 add or change, as $3 has them; $4 is the mirror's parent dir.
mirror() {
	local dest=$1 from=$2 to=$3 filter=${4:-AM} spec path dir f

	for spec in "${MIRRORS[@]}"; do
		path=${spec%%:*}
		dir="$dest/${spec#*:}"
		rm -rf "$dir"
		while read -r f; do
			mkdir -p "$dir"
			git -C "$WORKTREE" show "$to:$f" > "$dir/${f##*/}"
		done < <(git -C "$WORKTREE" diff --name-only --diff-filter="$filter" "$from" "$to" -- "$path")
	done
}

main() {
	local dest=$REPO_DIR base posting prefix first last top c n=0
	local -a commits

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

	classify "$base" "$tmp" > "$tmp/classes"
	[ -s "$tmp/classes" ] || die "no commits between base and HEAD in $WORKTREE"
	mkdir -p "$tmp/patches" "$tmp/proof"
	: > "$tmp/listing"
	top=$base
	for posting in $(cut -f1 "$tmp/classes" | grep -vx proof | awk '!seen[$0]++'); do
		[ -f "$COVER_DIR/$posting.txt" ] ||
			die "posting $posting has no cover letter template $COVER_DIR/$posting.txt"
		prefix=$(subject_prefix "$COVER_DIR/$posting.txt")
		[ -n "$prefix" ] ||
			die "$COVER_DIR/$posting.txt: Subject: is not '[PATCH 0/n] ...' or '[RFC PATCH 0/n] ...'"
		mapfile -t commits < <(awk -F'\t' -v p="$posting" '$1 == p { print $2 }' "$tmp/classes")
		first=${commits[0]}
		last=${commits[${#commits[@]} - 1]}
		[ "$(git -C "$WORKTREE" rev-parse "$first^")" = "$top" ] ||
			die "the commits of posting $posting are not one run after the postings before it: reorder them"
		git -C "$WORKTREE" format-patch -q --no-signature --zero-commit --numbered \
			--subject-prefix="$prefix" -o "$tmp/patches/$posting" "$top..$last" ||
			die "git format-patch failed for posting $posting"
		cover_letter "$posting" "$top" "$last" "$tmp/patches" > "$tmp/patches/$posting/0000-cover-letter.patch"
		(cd "$tmp/patches" && ls "$posting"/[0-9][0-9][0-9][0-9]-*.patch |
			grep -v '/0000-cover-letter.patch$') >> "$tmp/listing"
		top=$last
		n=$((n + ${#commits[@]}))
	done
	if grep -q '^proof' "$tmp/classes"; then
		git -C "$WORKTREE" format-patch -q --no-signature --zero-commit \
			-o "$tmp/proof" "$top..HEAD" || die "git format-patch failed for the proof layer"
		(cd "$tmp/proof" && ls ./*.patch | sed 's|^\./||') > "$tmp/proof/series.list"
	fi

	mkdir -p "$dest"
	write_series "$SERIES_FILE" "$dest/series.new" "$tmp/listing"
	rm -rf "$dest/patches"
	cp -r "$tmp/patches" "$dest/patches"
	mv "$dest/series.new" "$dest/series"
	mirror "$dest" "$base" "$top"
	mkdir -p "$dest/proof"
	find "$dest/proof" -maxdepth 1 -name '*.patch' -delete
	rm -rf "$dest/proof/kunit" "$dest/proof/selftests"
	if [ -f "$tmp/proof/series.list" ]; then
		cp "$tmp/proof"/*.patch "$dest/proof/"
		{
			sed -n '1,/^$/p' "$PROOF_SERIES" 2>/dev/null | grep '^#' || true
			[ ! -f "$PROOF_SERIES" ] || echo
			cat "$tmp/proof/series.list"
		} > "$dest/proof/series.new"
		mv "$dest/proof/series.new" "$dest/proof/series"
		# Only what the layer adds: its changes to the postings' files
		# are in its patches, and a second copy of those would drift.
		mirror "$dest/proof" "$top" HEAD A
	fi
	# Exported: the commits are in patches/ now, 'make tree' may reset them.
	[ "$dest" != "$REPO_DIR" ] || record_head
	log "exported $n patches in $(cut -f1 "$tmp/classes" | grep -vx proof | sort -u | wc -l) postings, and $(grep -c '^proof' "$tmp/classes" || true) of the proof layer, to $dest"
}

main "$@"
