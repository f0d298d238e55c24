#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Check the postings to other projects (external/): mails, pins, copies.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [SUITE...]

Check each posting in external/ (${EXTERNAL_SUITES[*]}, or the SUITEs
given), without fetching or building anything:

- SOURCE pins a tarball by name and a 64-digit SHA-256;
- patches/ holds 0000-cover-letter.patch and 0001... numbered without
  a gap, each a mail with From, Date, a Subject '[<prefix> i/N]' with
  the cover letter template's prefix and N the number of patches, the
  template's To and Cc, and (but the cover letter) a Signed-off-by of
  its author and a diff;
- the cover letter has the template's Subject and text;
- tests/ holds exactly the files the mails add under the suite's test
  directory, each equal to what the mails make of it ('git apply' of
  every mail in order, those paths only).

scripts/export-external.sh writes all of it from the work tree.

Exit status: 0 when every check passes, 1 otherwise.
EOF
}

# Header field @2 of the mail or template @1, folded lines joined.
field() {
	sed -n '1,/^$/p' "$1" | awk -v f="$2:" '
		$1 == f { sub(/^[^:]*: */, ""); v = $0; on = 1; next }
		on && /^[ \t]/ { sub(/^[ \t]+/, " "); v = v $0; next }
		{ on = 0 }
		END { print v }'
}

check_pin() {
	local pin="$EXTERNAL_DIR/$1/SOURCE"

	[ -f "$pin" ] || { fail "$1: no SOURCE"; return; }
	grep -qE '^tarball=.+' "$pin" || fail "$1: SOURCE pins no tarball"
	grep -qE '^sha256=[0-9a-f]{64}$' "$pin" || fail "$1: SOURCE has no 64-digit sha256"
}

check_mails() {
	local suite=$1 dir="$EXTERNAL_DIR/$1/patches" template="$EXTERNAL_DIR/$1/cover-letter.txt"
	local -a mails
	local n i=0 mail prefix subj author

	[ -f "$template" ] || { fail "$suite: no cover-letter.txt"; return; }
	[ -f "$dir/0000-cover-letter.patch" ] || { fail "$suite: no 0000-cover-letter.patch"; return; }
	mapfile -t mails < <(external_patches "$suite")
	n=${#mails[@]}
	[ "$n" -gt 0 ] || { fail "$suite: no patches"; return; }
	prefix=$(field "$template" Subject | sed -n 's/^\[\([^]]*\) 0\/[0-9n]*\].*/\1/p')
	[ -n "$prefix" ] || { fail "$suite: template Subject lacks '[PATCH 0/N]'"; return; }

	subj=$(field "$dir/0000-cover-letter.patch" Subject)
	[ "$subj" = "$(field "$template" Subject | sed "s|^\[$prefix 0/[0-9n]*\]|[$prefix 0/$n]|")" ] ||
		fail "$suite: the cover letter's Subject is not the template's: '$subj'"
	[ "$(field "$dir/0000-cover-letter.patch" To)" = "$(field "$template" To)" ] ||
		fail "$suite: the cover letter's To is not the template's"
	# The template's text, then the shortlog.
	if ! diff -q <(sed '1,/^$/d' "$template") \
			<(sed '1,/^$/d' "$dir/0000-cover-letter.patch" | head -n "$(sed '1,/^$/d' "$template" | wc -l)") \
			>/dev/null; then
		fail "$suite: the cover letter's text is not the template's: run scripts/export-external.sh $suite"
	fi

	for mail in "${mails[@]}"; do
		i=$((i + 1))
		case "${mail##*/}" in
		"$(printf '%04d' "$i")"-*) ;;
		*) fail "$suite: ${mail##*/} is not patch $i" ;;
		esac
		subj=$(field "$mail" Subject)
		case "$subj" in
		"[$prefix $i/$n] "?*) ;;
		*) fail "$suite: ${mail##*/}: Subject '$subj' is not '[$prefix $i/$n] ...'" ;;
		esac
		author=$(field "$mail" From)
		if [ -z "$author" ] || [ -z "$(field "$mail" Date)" ]; then
			fail "$suite: ${mail##*/} lacks From or Date"
		fi
		grep -qxF "Signed-off-by: $author" "$mail" ||
			fail "$suite: ${mail##*/} has no Signed-off-by of its author"
		[ "$(field "$mail" To)" = "$(field "$template" To)" ] ||
			fail "$suite: ${mail##*/}: To is not the template's"
		[ "$(field "$mail" Cc)" = "$(field "$template" Cc)" ] ||
			fail "$suite: ${mail##*/}: Cc is not the template's"
		grep -q '^diff --git ' "$mail" || fail "$suite: ${mail##*/} has no diff"
	done
}

# The readable copies against what the mails add.
check_copies() {
	local suite=$1 copies="$EXTERNAL_DIR/$1/tests" tmp path
	local -a mails paths

	mapfile -t mails < <(external_patches "$suite")
	[ "${#mails[@]}" -gt 0 ] || return 0
	tmp=$(mktemp -d)
	# The paths the mails create, within the test directories.
	mapfile -t paths < <(awk '/^diff --git / { p = $4; sub(/^b\//, "", p) }
		/^new file mode / && p ~ /^(testcases|test)\// { print p }' "${mails[@]}" | sort -u)
	git -C "$tmp" init -q
	for path in "${mails[@]}"; do
		# shellcheck disable=SC2046
		git -C "$tmp" apply $(printf -- '--include=%s ' "${paths[@]}") "$path" ||
			fail "$suite: ${path##*/} does not apply to the files the mails before it add"
	done
	for path in "${paths[@]}"; do
		if [ ! -f "$copies/$path" ]; then
			fail "$suite: no readable copy tests/$path"
		elif ! cmp -s "$tmp/$path" "$copies/$path"; then
			fail "$suite: tests/$path differs from the mails: run scripts/export-external.sh $suite"
		fi
	done
	if [ -d "$copies" ]; then
		while read -r path; do
			fail "$suite: tests/$path is added by no mail"
		done < <(cd "$copies" && find . -type f | sed 's|^\./||' | sort |
			comm -23 - <(printf '%s\n' "${paths[@]}" | sort))
	fi
	rm -rf "$tmp"
}

main() {
	local suite before
	local -a suites=("${EXTERNAL_SUITES[@]}")

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	esac
	[ $# -eq 0 ] || suites=("$@")
	for suite in "${suites[@]}"; do
		[ -d "$EXTERNAL_DIR/$suite" ] || { fail "no external/$suite"; continue; }
		before=$failures
		check_pin "$suite"
		check_mails "$suite"
		check_copies "$suite"
		[ "$failures" -ne "$before" ] || pass "external/$suite: pin, mails and copies agree"
	done
	[ "$failures" -eq 0 ] || die "$failures check(s) failed"
}

main "$@"
