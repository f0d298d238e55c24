#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Check the patch queue: listing, mail headers, drift, and quilt == git am.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly SUBJECT_RE='^Subject: \[PATCH( [0-9]+/[0-9]+)?\] [^ ].*: [A-Z][a-z]+ '
readonly MAX_SUBJECT=75

usage() {
	cat <<EOF
Usage: ${0##*/} [-h]

Check, after scripts/apply-series.sh has applied the series with 'git am':
  1. every entry of 'series' is in patches/, and every patch is listed once;
  2. each patch is a mail: From, Date, 'Subject: [PATCH n/m] prefix: Verb'
     (at most $MAX_SUBJECT characters after the tag), a changelog,
     Signed-off-by, '---' and a diffstat; the prefix is the one upstream
     uses for what the patch touches: 'selftests/eventpoll:' for the
     epoll selftests only, 'Documentation: userspace-api:' for
     Documentation/ only, 'MAINTAINERS:' for MAINTAINERS only, and
     'eventpoll:' for everything else; a patch for stable (Cc: stable)
     has a Fixes: tag and touches no test;
  3. patches/, series, kunit/ and selftests/ are what scripts/export-series.sh
     makes from the applied commits (nothing hand-edited, nothing stale),
     whoever runs the check: the export adds no identity of its own;
  4. 'quilt push -a --fuzz=0' gives the same files as 'git am'.

Exit status: 0 when all checks pass, 1 otherwise.
EOF
}

fail=0
drifted=0
problem() { printf '%s: %s\n' "${0##*/}" "$*" >&2; fail=1; }

check_listing() {
	local p

	while read -r p; do
		problem "series lists $p twice"
	done < <(series_patches | sort | uniq -d)
	while read -r p; do
		[ -f "$PATCHES_DIR/$p" ] || problem "series lists $p, which is not in patches/"
	done < <(series_patches)
	for p in "$PATCHES_DIR"/*.patch; do
		[ -e "$p" ] || continue
		series_patches | grep -qxF "${p##*/}" || problem "patches/${p##*/} is not in series"
	done
}

# The mail header of a patch, folded lines joined.
mail_header() {
	sed -n '1,/^$/p' "$1" | sed -e ':a' -e 'N' -e '$!ba' -e 's/\n[[:space:]]\+/ /g'
}

# What patch $1 touches: selftests, docs, maintainers or kernel.
touched_kind() {
	local files

	files=$(sed -n 's|^diff --git a/\([^ ]*\) .*|\1|p' "$1")
	if ! grep -qv '^tools/testing/selftests/' <<<"$files"; then
		echo selftests
	elif ! grep -qv '^Documentation/' <<<"$files"; then
		echo docs
	elif [ "$files" = MAINTAINERS ]; then
		echo maintainers
	else
		echo kernel
	fi
}

# The subject prefix upstream uses for such a patch (as in 827382c088e9
# "selftests/eventpoll: Add test for multiple waiters").
expected_prefix() {
	case $(touched_kind "$1") in
	selftests) echo "selftests/eventpoll" ;;
	docs) echo "Documentation: userspace-api" ;;
	maintainers) echo "MAINTAINERS" ;;
	kernel) echo "eventpoll" ;;
	esac
}

check_headers() {
	local p f hdr subject prefix

	while read -r p; do
		f="$PATCHES_DIR/$p"
		[ -f "$f" ] || continue
		hdr=$(mail_header "$f")
		grep -q '^From: .*<.*@.*>' <<<"$hdr" || problem "$p: no From: header"
		grep -q '^Date: ' <<<"$hdr" || problem "$p: no Date: header"
		subject=$(grep -m1 '^Subject: ' <<<"$hdr")
		grep -Eq "$SUBJECT_RE" <<<"$subject" ||
			problem "$p: subject is not '[PATCH n/m] prefix: Verb ...': $subject"
		prefix=$(expected_prefix "$f")
		[[ ${subject#*] } == "$prefix: "* ]] ||
			problem "$p: touches $(touched_kind "$f"): subject must start '$prefix: '"
		subject=${subject#*] }
		[ "${#subject}" -le "$MAX_SUBJECT" ] ||
			problem "$p: subject longer than $MAX_SUBJECT characters"
		if grep -qi '^Cc: stable@vger.kernel.org' "$f"; then
			grep -q '^Fixes: [0-9a-f]\{12\} ("' "$f" ||
				problem "$p: Cc: stable without a 'Fixes: <12-char sha> (\"subject\")'"
			! grep -Eq '^diff --git a/(fs/tests|tools/testing)/' "$f" ||
				problem "$p: a stable fix must carry only the fix, not tests"
		fi
		awk '/^$/ {body=1; next} body && /^Signed-off-by:/ {exit} body && NF {n++}
		     END {exit n < 3}' "$f" || problem "$p: changelog shorter than three lines"
		grep -q '^Signed-off-by: .*<.*@.*>' "$f" || problem "$p: no Signed-off-by"
		grep -qx -- '---' "$f" || problem "$p: no '---' separator"
		grep -Eq '^ [0-9]+ files? changed' "$f" || problem "$p: no diffstat"
	done < <(series_patches)
}

check_drift() {
	local tmp=$1 d

	if ! "$REPO_DIR/scripts/export-series.sh" -o "$tmp/export" >/dev/null 2>"$tmp/export.log"; then
		problem "scripts/export-series.sh failed on the applied tree:"
		sed 's/^/    /' "$tmp/export.log" >&2
		return
	fi
	for d in patches series kunit selftests; do
		if [ ! -e "$REPO_DIR/$d" ]; then
			problem "$d is missing"
			continue
		fi
		diff -r -u "$REPO_DIR/$d" "$tmp/export/$d" > "$tmp/$d.diff" 2>&1 && continue
		problem "$d differs from what the applied commits export ($(grep -c '^[-+][^-+]' "$tmp/$d.diff") lines; first 20):"
		head -20 "$tmp/$d.diff" | sed 's/^/    /' >&2
		drifted=1
	done
	[ "$drifted" -eq 0 ] ||
		problem "remedy: edit the commits in $WORKTREE ('make tree' makes them), then 'make export'; never edit patches/, series, kunit/ or selftests/ by hand"
}

# quilt on a copy of just the files the series touches, compared with git am.
check_quilt() {
	local tmp=$1 base f

	base=$(base_commit)
	mkdir -p "$tmp/quilt"
	git -C "$WORKTREE" diff --name-only --diff-filter=DM "$base" HEAD |
		xargs -r git -C "$WORKTREE" archive "$base" | tar -C "$tmp/quilt" -x
	if ! (cd "$tmp/quilt" && QUILT_PATCHES="$PATCHES_DIR" QUILT_SERIES="$SERIES_FILE" \
	      QUILT_PC=.pc quilt push -q -a --fuzz=0 >"$tmp/quilt.log" 2>&1); then
		problem "quilt push -a --fuzz=0 failed:"
		sed 's/^/    /' "$tmp/quilt.log" >&2
		return
	fi
	while read -r f; do
		if git -C "$WORKTREE" cat-file -e "HEAD:$f" 2>/dev/null; then
			git -C "$WORKTREE" show "HEAD:$f" | cmp -s - "$tmp/quilt/$f" ||
				problem "quilt and git am disagree on $f"
		elif [ -e "$tmp/quilt/$f" ]; then
			problem "quilt leaves $f, which git am deleted"
		fi
	done < <(git -C "$WORKTREE" diff --name-only "$base" HEAD)
}

main() {
	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	need_worktree
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	check_listing
	check_headers
	check_drift "$tmp"
	check_quilt "$tmp"
	[ "$fail" -eq 0 ] || die "the patch queue has the problems above"
	log "$(series_patches | wc -l) patches: listed, well-formed, in sync, quilt == git am"
}

main "$@"
