#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Write a posting to another project (LTP, liburing) from its work tree.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

# Columns of the diffstat in a cover letter, as format-patch makes them.
readonly STAT_WIDTH=72

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] SUITE

SUITE is one of: ${EXTERNAL_SUITES[*]}.

The commits after the tag 'base' on the branch of \$OUT_DIR/SUITE (the
work tree scripts/build-SUITE-tests.sh makes, with the posting applied)
become the posting in external/SUITE/:

  patches/      'git format-patch' mails, numbered, with the subject
                prefix, To and Cc of the cover letter template, and
                0000-cover-letter.patch made from that template
                (external/SUITE/cover-letter.txt) with the shortlog and
                the diffstat
  tests/        readable copies of the files the mails add under the
                suite's test directories (testcases/ or test/), at their
                paths in the tree

Edit and commit in \$OUT_DIR/SUITE (sign off: git commit -s), run this,
then commit external/SUITE/ here. scripts/check-external.sh fails when
the copies and the mails drift apart.

Environment: OUT_DIR (now: $OUT_DIR).
Exit status: 0 on success, 1 on error.
EOF
}

# Header field @2 of the template @1, folded lines joined.
template_field() {
	sed -n '1,/^$/p' "$1" | awk -v f="$2:" '
		$1 == f { sub(/^[^:]*: */, ""); v = $0; on = 1; next }
		on && /^[ \t]/ { sub(/^[ \t]+/, " "); v = v $0; next }
		{ on = 0 }
		END { print v }'
}

# The directories whose new files get readable copies.
test_paths() {
	case "$1" in
	ltp) echo testcases/ ;;
	liburing) echo test/ ;;
	esac
}

cover_letter() {
	local src=$1 template=$2 n

	n=$(git -C "$src" rev-list --count base..HEAD)
	printf 'From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n'
	git -C "$src" log -1 --format='From: %an <%ae>%nDate: %aD' HEAD
	sed -n '1,/^$/p' "$template" | sed "s|^\(Subject: \[[^]]*\) 0/[0-9n]*\]|\1 0/$n]|"
	sed '1,/^$/d' "$template"
	printf '\n'
	git -C "$src" shortlog --no-merges base..HEAD
	git -C "$src" diff --stat="$STAT_WIDTH" --summary base HEAD
}

export_suite() {
	local suite=$1 src="$OUT_DIR/$1" dest="$EXTERNAL_DIR/$1" template tmp prefix to cc f
	local -a mails

	template="$dest/cover-letter.txt"
	[ -f "$template" ] || die "no cover letter template $template"
	git -C "$src" rev-parse -q --verify 'base^{commit}' >/dev/null 2>&1 ||
		die "no work tree with a 'base' tag in $src: run scripts/build-$suite-tests.sh first"
	[ -z "$(git -C "$src" status --porcelain --untracked-files=no)" ] ||
		die "$src has uncommitted changes: commit them (git commit -s) first"
	[ "$(git -C "$src" rev-list --count base..HEAD)" -gt 0 ] || die "no commits after base in $src"
	prefix=$(template_field "$template" Subject | sed -n 's/^\[\([^]]*\) 0\/[0-9n]*\].*/\1/p')
	[ -n "$prefix" ] || die "$template: Subject must start with '[PATCH 0/N]'"
	to=$(template_field "$template" To)
	cc=$(template_field "$template" Cc)
	[ -n "$to" ] || die "$template has no To:"

	tmp=$(mktemp -d)
	# shellcheck disable=SC2064
	trap "rm -rf '$tmp'" EXIT
	mkdir -p "$tmp/patches" "$tmp/tests"
	git -C "$src" format-patch -q --no-signature --zero-commit --numbered \
		--subject-prefix="$prefix" --to="$to" ${cc:+--cc="$cc"} \
		-o "$tmp/patches" base..HEAD || die "git format-patch failed in $src"
	cover_letter "$src" "$template" > "$tmp/patches/0000-cover-letter.patch"
	git -C "$src" diff --name-only --diff-filter=A base HEAD -- "$(test_paths "$suite")" |
		while read -r f; do
			mkdir -p "$tmp/tests/$(dirname "$f")"
			git -C "$src" show "HEAD:$f" > "$tmp/tests/$f"
		done
	rm -rf "$dest/patches" "$dest/tests"
	mv "$tmp/patches" "$tmp/tests" "$dest/"
	# The tree now matches the mails: the build scripts may reuse it.
	mapfile -t mails < <(external_patches "$suite")
	printf '%s %s\n' "$(cat "${mails[@]}" | sha256sum | cut -d' ' -f1)" \
		"$(git -C "$src" rev-parse HEAD)" > "$src/.git/posting-stamp"
	log "external/$suite: $(external_patches "$suite" | wc -l) patches and a cover letter," \
		"$(find "$dest/tests" -type f | wc -l) test files"
}

main() {
	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	ltp|liburing) export_suite "$1" ;;
	*) usage >&2; exit 1 ;;
	esac
}

main "$@"
