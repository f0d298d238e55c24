#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Lint the documentation that goes with the series: the epoll_ctl(2) man
# page draft and the MAINTAINERS entry (MAINTAINERS-snippet).
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

# The man page draft and the MAINTAINERS entry kept in this repository;
# the page is what the man-pages patch makes of man-pages' epoll_ctl(2),
# taken from the manpages-dev package of MAN_SUITE.
readonly MAN_PAGE="$REPO_DIR/Documentation/man/epoll_ctl.2"
readonly MAN_PATCH="$REPO_DIR/man-pages/0001-man-man2-epoll_ctl.2-Document-EPOLL_CTL_DISABLE.patch"
: "${MAN_SUITE:=sid}"
readonly SNIPPET="$REPO_DIR/MAINTAINERS-snippet"
# Width used to render the man page, as a terminal would.
readonly MAN_WIDTH=80

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [-m] [KERNEL_SRC]

Check the man page draft and the MAINTAINERS entry of the series:

  1. $MAN_PAGE renders with 'man -l' and draws no
     message from 'mandoc -Tlint' or 'groff -ww -man -z', and is what
     ${MAN_PATCH#"$REPO_DIR"/}
     makes of epoll_ctl(2) as manpages-dev of $MAN_SUITE ships it (its
     title in capitals, for mandoc), man-pages/README.md says why;
  2. $SNIPPET passes 'checkpatch.pl --strict' as a
     MAINTAINERS change, has trailing slashes on directories and
     matching files, and is in alphabetical position;
  3. the snippet equals the entry of that name in KERNEL_SRC/MAINTAINERS,
     and every line that a patch under patches/ adds to MAINTAINERS is
     in the snippet (the snippet is the whole entry as the series leaves
     it: a new one, or an existing one with the series' additions).

KERNEL_SRC is the patched kernel work tree (the series applied). It is
taken from the first argument, else from the KERNEL_SRC environment
variable, else it is $WORKTREE.

Options:
  -h  show this help and exit
  -m  accept F: patterns that match no file (for a partial series)

Environment:
  KERNEL_SRC   patched kernel work tree (default: $WORKTREE)

Exit status: 0 if every check passed, 1 if any failed or on error.
EOF
}

need_tools() {
	local tool

	for tool in mandoc groff man diff perl; do
		command -v "$tool" >/dev/null ||
			die "$tool is not installed (mandoc, groff and man-db are needed)"
	done
}

# Run "$@" and fail the check named $1 if it exits non-zero or prints
# anything at all: these linters report on stdout or stderr.
quiet_check() {
	local name=$1 out
	shift

	if ! out=$("$@" 2>&1) || [ -n "$out" ]; then
		fail "$name"
		printf '%s\n' "$out" >&2
		return
	fi
	pass "$name"
}

# The page the man-pages patch makes, on stdout.
patched_man_page() {
	local deb tmp

	deb=$("$REPO_DIR/scripts/fetch-debian-package.sh" manpages-dev "$MAN_SUITE") || return 1
	tmp=$(mktemp -d)
	dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/man/man2/epoll_ctl.2.gz |
		gunzip > "$tmp/epoll_ctl.2" &&
		patch -s -d "$tmp" -p3 < "$MAN_PATCH" &&
		sed '5s/^\.TH epoll_ctl 2 /.TH EPOLL_CTL 2 /' "$tmp/epoll_ctl.2"
	local rc=$?
	rm -rf "$tmp"
	return "$rc"
}

check_man_patch() {
	local page

	if ! page=$(patched_man_page); then
		fail "${MAN_PATCH##*/} does not apply to epoll_ctl(2) of manpages-dev ($MAN_SUITE)"
	elif ! cmp -s - "$MAN_PAGE" <<<"$page"; then
		fail "${MAN_PAGE##*/} is not what ${MAN_PATCH##*/} makes: regenerate one from the other"
	else
		pass "${MAN_PAGE##*/} is what ${MAN_PATCH##*/} makes"
	fi
}

lint_man_page() {
	local rendered errs

	[ -f "$MAN_PAGE" ] || { fail "missing $MAN_PAGE"; return; }

	quiet_check "mandoc -Tlint ${MAN_PAGE##*/}" mandoc -Tlint "$MAN_PAGE"
	quiet_check "groff -ww -man -z ${MAN_PAGE##*/}" \
		groff -ww -man -z "$MAN_PAGE"

	errs=$(mktemp)
	if ! rendered=$(MANWIDTH=$MAN_WIDTH man --warnings -l "$MAN_PAGE" \
			2>"$errs") || [ -s "$errs" ] ||
	   ! grep -q '^NAME' <<<"$rendered"; then
		fail "man -l ${MAN_PAGE##*/}"
		cat "$errs" >&2
	else
		pass "man -l ${MAN_PAGE##*/} ($(wc -l <<<"$rendered") lines)"
	fi
	rm -f "$errs"
}

# Name of the section the snippet adds: its first line.
snippet_name() {
	head -n 1 "$SNIPPET"
}

# Print the section named $2 of MAINTAINERS file $1, without the blank
# line that ends it.
section_of() {
	awk -v name="$2" '
		!found && $0 == name { found = 1 }
		found && /^$/ { exit }
		found { print }
	' "$1"
}

# Print the line number of the section named $2 in $1, or nothing.
section_line() {
	awk -v name="$2" '$0 == name { print NR; exit }' "$1"
}

# MAINTAINERS file $1 without the section named $2.
without_section() {
	awk -v name="$2" '
		$0 == name { skip = 1; next }
		skip && /^$/ { skip = 0; next }
		!skip { print }
	' "$1"
}

# Insert the snippet into MAINTAINERS text on stdin, right before the
# section header $1. Without $1, before the first header that sorts after
# the snippet, case-insensitively, when the header after that one does too
# (MAINTAINERS is not perfectly sorted).
insert_snippet() {
	local anchor=${1:-}

	LC_ALL=C awk -v name="$(snippet_name)" -v anchor="$anchor" \
		-v snippet="$SNIPPET" '
		{ line[n++] = $0 }
		END {
			up = toupper(name)
			for (i = 1; i < n; i++) {
				if (line[i] ~ /^Maintainers List/)
					inlist = 1
				if (inlist && line[i - 1] == "" &&
				    line[i] ~ /^[^ \t.-]/ && line[i] !~ /^[A-Z]:/ &&
				    line[i] !~ /^Maintainers List/)
					h[nh++] = i
			}
			at = -1
			for (k = 0; k < nh && at < 0; k++) {
				t = toupper(line[h[k]])
				if (anchor != "" && line[h[k]] == anchor)
					at = h[k]
				if (anchor == "" && t > up &&
				    (k + 1 == nh || toupper(line[h[k + 1]]) > up))
					at = h[k]
			}
			for (i = 0; i < n; i++) {
				if (i == at)
					add()
				print line[i]
			}
			if (at < 0) {
				print ""
				add()
			}
		}
		function add(  l) {
			while ((getline l < snippet) > 0)
				print l
			print ""
		}
	'
}

check_snippet_form() {
	local ksrc=$1 type value path bad=0

	while IFS= read -r line; do
		[[ $line =~ ^([A-Z]):$'\t'(.*)$ ]] || continue
		type=${BASH_REMATCH[1]}
		value=${BASH_REMATCH[2]}
		[ "$type" = F ] || [ "$type" = X ] || continue
		path=${value%/}
		if [[ $value != *[*?]* ]] && [ -d "$ksrc/$path" ] &&
		   [ "$value" = "$path" ]; then
			fail "snippet: directory without trailing slash: $value"
			bad=1
		fi
	done < "$SNIPPET"
	[ "$bad" -ne 0 ] || pass "snippet: trailing slash on directories"
}

# The base tree's MAINTAINERS, on stdout, or nothing without a base.
base_maintainers() {
	local ksrc=$1 base

	base=$(cat "$OUT_DIR/base-commit" 2>/dev/null) || return 0
	git -C "$ksrc" show "$base:MAINTAINERS" 2>/dev/null || true
}

# checkpatch checks MAINTAINERS entries only in a patch to a file named
# MAINTAINERS: build one that adds the snippet to MAINTAINERS and check
# it. When the base tree has the entry already, the patch goes from the
# base entry to the snippet, so that only what the series adds is
# judged, not the order of lines it found.
checkpatch_snippet() {
	local ksrc=$1 tmp name out rc=0

	name=$(snippet_name)
	tmp=$(mktemp -d)
	mkdir "$tmp/a" "$tmp/b"
	base_maintainers "$ksrc" > "$tmp/base"
	if [ -n "$(section_of "$tmp/base" "$name")" ]; then
		cp "$tmp/base" "$tmp/a/MAINTAINERS"
		without_section "$tmp/base" "$name" |
			insert_snippet "$(header_after "$tmp/base" "$name")" >"$tmp/b/MAINTAINERS"
	else
		without_section "$ksrc/MAINTAINERS" "$name" >"$tmp/a/MAINTAINERS"
		insert_snippet "$(header_after "$ksrc/MAINTAINERS" "$name")" \
			<"$tmp/a/MAINTAINERS" >"$tmp/b/MAINTAINERS"
	fi
	{
		printf 'From: lint <lint@localhost>\nSubject: [PATCH] Add %s\n\n' \
			"$name"
		printf 'Check MAINTAINERS-snippet as a MAINTAINERS change.\n\n'
		printf 'Signed-off-by: lint <lint@localhost>\n---\n'
		(cd "$tmp" && diff -u a/MAINTAINERS b/MAINTAINERS) ||
			[ $? -eq 1 ] || die "diff failed"
	} >"$tmp/snippet.diff"

	out=$(cd "$ksrc" && ./scripts/checkpatch.pl --strict --no-summary \
		--quiet "$tmp/snippet.diff" 2>&1) || rc=$?
	if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
		fail "checkpatch --strict on the snippet as a MAINTAINERS patch"
		printf '%s\n' "$out" >&2
	else
		pass "checkpatch --strict on the snippet as a MAINTAINERS patch"
	fi

	rm -rf "$tmp"
}

# Section headers of MAINTAINERS file $1, one a line, in file order.
section_headers() {
	LC_ALL=C awk '
		/^Maintainers List/ { inlist = 1 }
		inlist && prev == "" && /^[^ \t.-]/ && !/^[A-Z]:/ &&
		    !/^Maintainers List/ { print }
		{ prev = $0 }
	' "$1"
}

# The section header that follows section $2 in $1, or nothing.
header_after() {
	section_headers "$1" | grep -A1 -x -F -- "$2" | sed -n 2p
}

# The section headers right before and after $2 in $1 must sort around it.
check_position() {
	local file=$1 name=$2 prev next

	prev=$(section_headers "$file" | grep -B1 -x -F -- "$name" | head -n 1)
	next=$(header_after "$file" "$name")
	if [ "$prev" != "$name" ] && [[ ${prev^^} < ${name^^} ]] &&
	   { [ -z "$next" ] || [[ ${name^^} < ${next^^} ]]; }; then
		pass "snippet: '$name' sorts between '$prev' and '$next'"
	else
		fail "snippet: '$name' is not between '$prev' and '$next'"
	fi
}

# The entry in the patched tree must be the snippet, byte for byte, and
# get_maintainer.pl's self-test must find nothing wrong with it.
check_tree_entry() {
	local ksrc=$1 allow_missing=$2 name first last count msgs

	name=$(snippet_name)
	if ! diff -u "$SNIPPET" <(section_of "$ksrc/MAINTAINERS" "$name") \
			>&2; then
		fail "snippet differs from '$name' in $ksrc/MAINTAINERS"
		return
	fi
	pass "snippet equals '$name' in $ksrc/MAINTAINERS"
	check_position "$ksrc/MAINTAINERS" "$name"

	first=$(section_line "$ksrc/MAINTAINERS" "$name")
	count=$(wc -l <"$SNIPPET")
	last=$((first + count - 1))
	msgs=$(cd "$ksrc" && ./scripts/get_maintainer.pl --self-test=sections |
		awk -F: -v a="$first" -v b="$last" '$2 >= a && $2 <= b')
	if [ -n "$msgs" ]; then
		fail "get_maintainer.pl --self-test=sections on '$name'"
		printf '%s\n' "$msgs" >&2
	else
		pass "get_maintainer.pl --self-test=sections on '$name'"
	fi
	check_patterns "$ksrc" "$allow_missing"
}

# Every F: and X: pattern of the snippet must match a file in the tree,
# as get_maintainer.pl --self-test=patterns checks (which scans all of
# MAINTAINERS and takes minutes).
check_patterns() {
	local ksrc=$1 allow_missing=$2 line value missing=0 base_entry
	local -a hits

	base_entry=$(base_maintainers "$ksrc" | { f=$(mktemp); cat >"$f"; section_of "$f" "$(snippet_name)"; rm -f "$f"; })
	while IFS= read -r line; do
		[[ $line =~ ^[FX]:$'\t'(.*)$ ]] || continue
		value=${BASH_REMATCH[1]}
		# A line the base entry has already is not the series' to fix.
		! grep -qxF -- "$line" <<<"$base_entry" || continue
		# A trailing slash means everything below; a glob matches
		# within the tree. Word splitting is off: value has no blanks.
		if [[ $value == */ ]]; then
			hits=("$ksrc/$value"*)
		else
			# shellcheck disable=SC2206 # the glob is wanted
			hits=("$ksrc"/$value)
		fi
		[ -e "${hits[0]}" ] && continue
		if [ "$allow_missing" = 1 ]; then
			log "warning: no file matches $value (accepted with -m)"
		else
			fail "snippet: no file matches $value"
			missing=1
		fi
	done < "$SNIPPET"
	[ "$missing" -ne 0 ] || pass "snippet: F:/X: patterns checked"
}

# Lines that patch file $1 adds to MAINTAINERS (blank lines dropped).
patch_added() {
	awk '
		/^diff --git / { inm = ($3 == "a/MAINTAINERS"); next }
		inm && /^\+\+\+ / { next }
		inm && /^\+./ { print substr($0, 2) }
	' "$1"
}

# Whatever a patch adds to MAINTAINERS must be part of the snippet: the
# tree check above shows that the section as patched is the snippet.
check_patch_entry() {
	local patch added stray found=0

	[ -d "$PATCHES_DIR" ] || { log "no $PATCHES_DIR: patch check skipped"; return; }
	for patch in "$PATCHES_DIR"/*/[0-9]*.patch; do
		[ -f "$patch" ] || continue
		added=$(patch_added "$patch")
		[ -n "$added" ] || continue
		found=$((found + 1))
		stray=$(grep -vxF -f "$SNIPPET" <<<"$added" || true)
		if [ -z "$stray" ]; then
			pass "every MAINTAINERS line ${patch##*/} adds is in the snippet"
		else
			fail "${patch##*/} adds MAINTAINERS lines that are not in the snippet:"
			printf '  %s\n' "$stray" >&2
		fi
	done
	[ "$found" -ne 0 ] || log "no patch in $PATCHES_DIR changes MAINTAINERS yet"
}

main() {
	local opt allow_missing=0 ksrc

	while getopts 'hm' opt; do
		case $opt in
		h) usage; exit 0 ;;
		m) allow_missing=1 ;;
		*) usage >&2; exit 1 ;;
		esac
	done
	shift $((OPTIND - 1))
	[ $# -le 1 ] || { usage >&2; exit 1; }
	ksrc=${1:-${KERNEL_SRC:-$WORKTREE}}
	if [ ! -f "$ksrc/MAINTAINERS" ] || [ ! -x "$ksrc/scripts/checkpatch.pl" ]; then
		die "$ksrc is not a kernel tree (set KERNEL_SRC or pass it)"
	fi
	[ -s "$SNIPPET" ] || die "missing or empty $SNIPPET"
	need_tools

	lint_man_page
	check_man_patch
	check_snippet_form "$ksrc"
	checkpatch_snippet "$ksrc"
	check_tree_entry "$ksrc" "$allow_missing"
	check_patch_entry

	if [ "$failures" -ne 0 ]; then
		log "$failures check(s) failed"
		exit 1
	fi
	log "all checks passed"
}

main "$@"
