#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Check the patch queue: listing, mail headers, postings, drift, and
# quilt == git am.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly SUBJECT_RE='^Subject: \[(RFC )?PATCH( [0-9]+/[0-9]+)?\] [^ ].*: [A-Z][a-z]+ '
readonly MAX_SUBJECT=75
# Lines of tests the postings may add in all: KUnit and kselftests.
: "${POSTED_TEST_BUDGET:=4000}"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [--self-test]

Check, after scripts/apply-series.sh has applied the series with 'git am':
  1. every entry of 'series' and proof/series exists, and every patch
     is listed once;
  2. each patch is a mail: From, Date, 'Subject: [PATCH n/m] prefix: Verb'
     ('[RFC PATCH n/m]' allowed; at most $MAX_SUBJECT characters after the
     tag), a changelog, Signed-off-by, '---' and a diffstat; the prefix is
     the one upstream uses for what the patch touches ('selftests/eventpoll:'
     for the epoll selftests only, 'Documentation: userspace-api:' for
     Documentation/ only, 'MAINTAINERS:' for MAINTAINERS only,
     'eventpoll:' otherwise); a patch for stable (Cc: stable) has a
     Fixes: tag and touches no test; a posted patch does not carry the
     proof layer's trailer, a proof patch does;
  3. each posting (a directory of patches/, a section of 'series') has a
     cover letter template, Documentation/cover-letters/<posting>.txt,
     whose header block holds Subject:, To:, Cc: and nothing else but
     'prerequisite-posting: <posting>' lines, each naming an earlier
     posting; no patch of a posting changes a file that an earlier patch
     of the same posting added (a fixup belongs in the patch it fixes);
     and the posting applies with 'git am' onto the base plus the
     postings it needs (those its template names, and theirs), and
     nothing else;
  4. patches/, series, proof/, kunit/ and selftests/ are what
     scripts/export-series.sh makes from the applied commits (nothing
     hand-edited, nothing stale), whoever runs the check;
  5. 'quilt push -a --fuzz=0' gives the same files as 'git am', for the
     postings and for the postings with the proof layer;
  6. the lines the postings add under fs/tests/ and tools/testing/ are
     at most POSTED_TEST_BUDGET (now: $POSTED_TEST_BUDGET), and are the
     figures Documentation/testing.md and the cover letters state.

--self-test  show the check of 3 a posting with a fixup, and expect it
             to be refused; needs nothing applied

Exit status: 0 when all checks pass, 1 otherwise.
EOF
}

fail=0
drifted=0
problem() { printf '%s: %s\n' "${0##*/}" "$*" >&2; fail=1; }

check_listing() {
	local list dir p

	for list in "$SERIES_FILE" "$PROOF_SERIES"; do
		[ -f "$list" ] || continue
		dir=$PATCHES_DIR
		[ "$list" != "$PROOF_SERIES" ] || dir=$PROOF_DIR
		while read -r p; do
			problem "${list#"$REPO_DIR"/} lists $p twice"
		done < <(series_patches "$list" | sort | uniq -d)
		while read -r p; do
			[ -f "$dir/$p" ] || problem "${list#"$REPO_DIR"/} lists $p, which is not in ${dir#"$REPO_DIR"/}/"
		done < <(series_patches "$list")
	done
	while read -r p; do
		series_patches | grep -qxF "$p" || problem "patches/$p is not in series"
	done < <(cd "$PATCHES_DIR" && find . -name '[0-9]*.patch' ! -name '0000-cover-letter.patch' |
		 sed 's|^\./||' | sort)
	while read -r p; do
		proof_patches | grep -qxF "$p" || problem "proof/$p is not in proof/series"
	done < <(cd "$PROOF_DIR" 2>/dev/null && ls -- *.patch 2>/dev/null)
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

# Mail checks of patch file $1 (named $2 in messages); $3: proof or posted.
check_mail() {
	local f=$1 p=$2 layer=$3 hdr subject prefix

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
	if [ "$layer" = proof ]; then
		grep -qxF "$PROOF_TRAILER" "$f" || problem "$p: proof patch without '$PROOF_TRAILER'"
	else
		! grep -qxF "$PROOF_TRAILER" "$f" || problem "$p: posted patch with '$PROOF_TRAILER'"
	fi
	awk '/^$/ {body=1; next} body && /^Signed-off-by:/ {exit} body && NF {n++}
	     END {exit n < 3}' "$f" || problem "$p: changelog shorter than three lines"
	grep -q '^Signed-off-by: .*<.*@.*>' "$f" || problem "$p: no Signed-off-by"
	grep -qx -- '---' "$f" || problem "$p: no '---' separator"
	grep -Eq '^ [0-9]+ files? changed' "$f" || problem "$p: no diffstat"
}

check_headers() {
	local p

	while read -r p; do
		[ ! -f "$PATCHES_DIR/$p" ] || check_mail "$PATCHES_DIR/$p" "$p" posted
	done < <(series_patches)
	while read -r p; do
		[ ! -f "$PROOF_DIR/$p" ] || check_mail "$PROOF_DIR/$p" "proof/$p" proof
	done < <(proof_patches)
}

# The files patch $1 adds ("new file mode").
added_files() {
	awk '/^diff --git a\// { f = $3; sub(/^a\//, "", f) } /^new file mode/ { print f }' "$1"
}

# The files patch $1 changes, deletes or renames (not those it adds).
changed_files() {
	awk '/^diff --git a\// { if (f != "" && !added) print f; f = $3; sub(/^a\//, "", f); added = 0 }
	     /^new file mode/ { added = 1 }
	     END { if (f != "" && !added) print f }' "$1"
}

# No patch of posting $1 (its patches in $2, listed in order) changes a
# file an earlier patch of the posting added.
check_no_fixup() {
	local posting=$1 dir=$2 p f
	declare -A added_by=()

	while read -r p; do
		while read -r f; do
			[ -z "${added_by[$f]:-}" ] ||
				problem "posting $posting: ${p##*/} changes $f, which ${added_by[$f]} of the same posting adds: fold the change into that patch"
		done < <(changed_files "$dir/$p")
		while read -r f; do
			added_by[$f]=${p##*/}
		done < <(added_files "$dir/$p")
	done
}

# The header block of posting $1's template: Subject:, To:, Cc:, and the
# postings it needs; any other line would go into the mail unchecked.
check_template_header() {
	local t="$COVER_DIR/$1.txt" line

	grep -Eq '^To: .+@' "$t" || problem "posting $1: its cover letter has no To:"
	grep -Eq '^Cc: .+@' "$t" || problem "posting $1: its cover letter has no Cc:"
	while IFS= read -r line; do
		case "$line" in
		"Subject: "*|"To: "*|"Cc: "*|"prerequisite-posting: "*|[[:space:]]*|"") ;;
		"Depends-on:"*)
			problem "posting $1: 'Depends-on:' in ${t#"$REPO_DIR"/} is no longer read: write one 'prerequisite-posting: <posting>' line a posting it needs" ;;
		*) problem "posting $1: ${t#"$REPO_DIR"/} has '${line%%:*}:' in its header block; only Subject:, To:, Cc: and prerequisite-posting: belong there" ;;
		esac
	done < <(sed -n '1,/^$/p' "$t")
}

# Each posting applies onto the base plus what it needs.
check_postings_apply() {
	local tmp=$1 posting dep earlier="" wt="$tmp/postings-wt" p

	git -C "$WORKTREE" worktree add -q --detach "$wt" "$(base_commit)" 2>/dev/null ||
		{ problem "cannot make a worktree to apply the postings alone"; return; }
	for posting in $(postings); do
		[ -f "$COVER_DIR/$posting.txt" ] ||
			{ problem "posting $posting has no cover letter template Documentation/cover-letters/$posting.txt"; continue; }
		for dep in $(posting_deps "$posting"); do
			grep -qxF "$dep" <<<"$earlier" ||
				problem "posting $posting needs '$dep' (prerequisite-posting:), which is no earlier posting"
		done
		check_template_header "$posting"
		check_no_fixup "$posting" "$PATCHES_DIR" < <(posting_patches "$posting")
		git -C "$wt" checkout -q -f --detach "$(base_commit)"
		for p in $(for dep in $(posting_prereqs "$posting"); do posting_patches "$dep"; done) \
			 $(posting_patches "$posting"); do
			git -C "$wt" -c user.name=check-series -c user.email=check-series@localhost \
				am -q "$PATCHES_DIR/$p" >/dev/null 2>&1 || {
				git -C "$wt" am --abort >/dev/null 2>&1 || true
				problem "posting $posting does not apply onto the base plus '$(posting_prereqs "$posting" | tr '\n' ' ')': $p fails"
				break
			}
		done
		earlier+="$posting"$'\n'
	done
	git -C "$WORKTREE" worktree remove -f "$wt"
}

check_drift() {
	local tmp=$1 d

	if ! "$REPO_DIR/scripts/export-series.sh" -o "$tmp/export" >/dev/null 2>"$tmp/export.log"; then
		problem "scripts/export-series.sh failed on the applied tree:"
		sed 's/^/    /' "$tmp/export.log" >&2
		return
	fi
	for d in patches series proof kunit selftests; do
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
		problem "remedy: edit the commits in $WORKTREE ('make tree' makes them), then 'make export'; never edit patches/, series, proof/, kunit/ or selftests/ by hand"
}

# quilt of series file $2 (patches in $3) on a copy of the base's files
# that commits base..$1 change, compared with $1.
check_quilt_upto() {
	local tmp=$1 top=$2 list=$3 dir=$4 base f q

	base=$(base_commit)
	q="$tmp/quilt-${list##*/}"
	mkdir -p "$q"
	git -C "$WORKTREE" diff --name-only --diff-filter=DM "$base" "$top" |
		xargs -r git -C "$WORKTREE" archive "$base" | tar -C "$q" -x
	if ! (cd "$q" && QUILT_PATCHES="$dir" QUILT_SERIES="$list" \
	      QUILT_PC=.pc quilt push -q -a --fuzz=0 >"$q.log" 2>&1); then
		problem "quilt push -a --fuzz=0 of ${list#"$REPO_DIR"/} failed:"
		sed 's/^/    /' "$q.log" >&2
		return 1
	fi
	while read -r f; do
		if git -C "$WORKTREE" cat-file -e "$top:$f" 2>/dev/null; then
			git -C "$WORKTREE" show "$top:$f" | cmp -s - "$q/$f" ||
				problem "quilt and git am disagree on $f (${list#"$REPO_DIR"/})"
		elif [ -e "$q/$f" ]; then
			problem "quilt leaves $f, which git am deleted"
		fi
	done < <(git -C "$WORKTREE" diff --name-only "$base" "$top")
}

check_quilt() {
	local tmp=$1 both="$tmp/series.all"

	check_quilt_upto "$tmp" "$(postings_head)" "$SERIES_FILE" "$PATCHES_DIR" || return 0
	[ -s "$PROOF_SERIES" ] && [ -n "$(proof_patches)" ] || return 0
	# One quilt queue for both layers: entries relative to the repository.
	{ series_patches | sed 's|^|patches/|'; proof_patches | sed 's|^|proof/|'; } > "$both"
	check_quilt_upto "$tmp" HEAD "$both" "$REPO_DIR" || true
}

# A posting whose second patch changes the file its first one adds.
self_test() {
	local tmp=$1 out

	mkdir -p "$tmp/st"
	cat > "$tmp/st/0001-a.patch" <<'EOF'
diff --git a/tools/x.c b/tools/x.c
new file mode 100644
--- /dev/null
+++ b/tools/x.c
@@ -0,0 +1 @@
+int x;
EOF
	cat > "$tmp/st/0002-b.patch" <<'EOF'
diff --git a/tools/x.c b/tools/x.c
--- a/tools/x.c
+++ b/tools/x.c
@@ -1 +1 @@
-int x;
+int y;
EOF
	check_no_fixup selftest "$tmp/st" 2>"$tmp/st/out" < <(printf '%s\n' 0001-a.patch 0002-b.patch)
	out=$(cat "$tmp/st/out")
	if [ "$fail" -eq 1 ] && grep -q '0002-b.patch changes tools/x.c, which 0001-a.patch' <<<"$out"; then
		fail=0
		log "self-test: a posting with a fixup is refused: $out"
		return 0
	fi
	die "self-test: the posting with a fixup was not refused (got: ${out:-nothing})"
}

# Lines the posted patches add to tests (fs/tests/, tools/testing/).
# The lines that patches $1... add under fs/tests/ and tools/testing/.
test_lines() {
	local p

	for p in "$@"; do
		awk '/^diff --git a\/(fs\/tests|tools\/testing)\// { t = 1; next }
		     /^diff --git/ { t = 0 }
		     t && /^\+([^+]|$)/ { n++ }
		     END { print n + 0 }' "$PATCHES_DIR/$p"
	done | awk '{ s += $1 } END { print s + 0 }'
}

# The budget, and the figures the documents state: "<n> lines in all"
# in Documentation/testing.md, "The tests here are <n> lines" in a
# cover letter (that posting's tests).
check_test_budget() {
	local doc=$REPO_DIR/Documentation/testing.md posting claim n

	mapfile -t all < <(series_patches)
	posted_lines=$(test_lines "${all[@]}")
	[ "$posted_lines" -le "$POSTED_TEST_BUDGET" ] ||
		problem "the postings add $posted_lines lines of tests, over the budget of $POSTED_TEST_BUDGET"
	claim=$(sed -n 's/^\([0-9][0-9]*\) lines in all.*/\1/p' "$doc")
	[ "$claim" = "$posted_lines" ] ||
		problem "${doc#"$REPO_DIR"/} says ${claim:-nothing} lines of posted tests, the postings add $posted_lines"
	for posting in $(postings); do
		claim=$(sed -n 's/^The tests here are \([0-9][0-9]*\) lines.*/\1/p' \
			"$COVER_DIR/$posting.txt" 2>/dev/null)
		[ -n "$claim" ] || continue
		mapfile -t these < <(posting_patches "$posting")
		n=$(test_lines "${these[@]}")
		[ "$claim" = "$n" ] ||
			problem "the $posting cover letter says $claim lines of tests, its patches add $n"
	done
}

main() {
	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	--self-test)
		tmp=$(mktemp -d)
		trap 'rm -rf "$tmp"' EXIT
		self_test "$tmp"
		exit 0
		;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	need_worktree
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	check_listing
	check_headers
	check_postings_apply "$tmp"
	check_drift "$tmp"
	check_quilt "$tmp"
	check_test_budget
	[ "$fail" -eq 0 ] || die "the patch queue has the problems above"
	log "$(series_patches | wc -l) patches in $(postings | wc -l) postings and $(proof_patches | wc -l) of the proof layer: listed, well-formed, each posting applies on its own, no fixup, in sync, quilt == git am; the postings add $posted_lines lines of tests (budget $POSTED_TEST_BUDGET)"
}

main "$@"
