#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Turn the series into mails with b4, check them, and send them (dry run
# by default).
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

# Cover letter template and man page draft kept in this repository.
readonly COVER_TEMPLATE="${COVER_TEMPLATE:-$REPO_DIR/Documentation/cover-letter.txt}"
readonly MAN_PAGE="$REPO_DIR/Documentation/man/epoll_ctl.2"
# Always copied on the series: it changes the user-space ABI.
readonly API_LIST="linux-api@vger.kernel.org"
# Mail width of the rendered man page, shortlog and diffstat.
readonly MAIL_WIDTH=72
# Markers that must not survive into the cover letter.
readonly PLACEHOLDER_RE='@@[A-Z_]+@@|\*\*\* .* \*\*\*'
# Mail domains that never deliver (RFC 2606, RFC 6761) or only bounce.
readonly UNROUTABLE_RE='(\.(example|test|invalid|localhost|local)|@localhost|@(.*\.)?example\.(com|net|org))$'
# The repository commit whose patches/ and series are v1 of the series.
: "${V1_REF:=9ac1df6}"
# The revision the mails carry ([PATCH vN ...]).
: "${REVISION:=2}"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [--send] [KERNEL_SRC]

Make the mails of the series BASE_COMMIT..SERIES_REF in the kernel work
tree KERNEL_SRC with b4, and check them. b4 does what it can do:

  1. 'b4 prep' in a throwaway clone (\$OUT_DIR/b4/linux, remade on every
     run; KERNEL_SRC is only read): enrol the series on BASE_COMMIT,
     revision REVISION, the cover letter kept in the branch description;
  2. 'b4 prep --auto-to-cc': recipients from scripts/get_maintainer.pl
     (without K: keyword matches, which only add the LLVM list for a
     comment that names clang), plus $API_LIST for the uapi change;
  3. 'b4 send -o OUT_MAIL --no-sign': the mails, nothing sent.

and this script what b4 0.12 lacks:

  - the cover letter from $COVER_TEMPLATE: the test summary RESULTS_FILE
    of a passing 'make check', the rendered man page and the range-diff
    against v1 (the series as committed in this repository at V1_REF,
    never sent, so 'b4 prep --compare-to' has no v1 to compare with);
    b4 adds shortlog, diffstat and change-id; the base is a base-commit:
    for a public tree (KERNEL_TREE), else a plain statement that it is
    Debian's source; refuses while a placeholder is left;
  - checkpatch.pl --strict on every patch (b4 0.12 has no 'prep --check');
  - the identity: the author and the last Signed-off-by: of every commit
    must be the sender's own git identity, at a domain that delivers
    mail (not .example, .test, .invalid, localhost, ...); the dry run
    reports a mismatch, --send refuses.

Only with --send are the mails sent, by 'b4 send' with the sender's own
configuration (sendemail.* or b4's web endpoint, patatt signing); b4
asks for confirmation first.

KERNEL_SRC is the first argument, else \$KERNEL_SRC, else $WORKTREE.
It must have SERIES_REF checked out, since get_maintainer.pl reads the
MAINTAINERS of the work tree.

Options:
  -h, --help  show this help and exit
  --send      really send the mails after all checks passed

Environment:
  KERNEL_SRC     patched kernel work tree (default: $WORKTREE)
  BASE_COMMIT    commit the series is based on (default: \$OUT_DIR/base-commit)
  SERIES_REF     last commit of the series (default: $SERIES_BRANCH)
  RESULTS_FILE   summary of a passing run (default: $RESULTS_DIR/summary.txt)
  OUT_MAIL       where the mails go (default: \$OUT_DIR/mail)
  COVER_TEMPLATE cover letter template (default: $COVER_TEMPLATE)
  V1_REF         commit of this repository that holds v1 (default: $V1_REF)
  REVISION       revision of the series (default: $REVISION)

Exit status: 0 when the mails passed every check (and were sent with
--send), 1 on any problem.
EOF
}

# Mail identity of the sender: "Name <address>" from git.
sender_ident() {
	git -C "$KSRC" var GIT_COMMITTER_IDENT | sed 's/>.*/>/'
}

check_inputs() {
	local head tip

	if [ ! -f "$KSRC/MAINTAINERS" ] || [ ! -x "$KSRC/scripts/get_maintainer.pl" ]; then
		die "$KSRC is not a kernel tree (pass it or set KERNEL_SRC)"
	fi
	BASE=$(git -C "$KSRC" rev-parse -q --verify "$BASE^{commit}") ||
		die "BASE_COMMIT is not a commit in $KSRC"
	tip=$(git -C "$KSRC" rev-parse -q --verify "$SERIES_REF^{commit}") ||
		die "SERIES_REF=$SERIES_REF is not a commit in $KSRC"
	head=$(git -C "$KSRC" rev-parse HEAD)
	[ "$head" = "$tip" ] ||
		die "$KSRC has $head checked out, not $SERIES_REF ($tip)"
	git -C "$KSRC" merge-base --is-ancestor "$BASE" "$tip" ||
		die "BASE_COMMIT is not an ancestor of $SERIES_REF"
	NR_PATCHES=$(git -C "$KSRC" rev-list --count "$BASE..$tip")
	[ "$NR_PATCHES" -gt 0 ] || die "no commits between BASE_COMMIT and $SERIES_REF"
	[ -f "$COVER_TEMPLATE" ] || die "missing $COVER_TEMPLATE"
	[ -f "$MAN_PAGE" ] || die "missing $MAN_PAGE"
	[ -f "$RESULTS" ] ||
		die "no test results in $RESULTS: run 'make check' first (or set RESULTS_FILE)"
	grep -qx 'verdict: PASS' "$RESULTS" ||
		die "$RESULTS does not say 'verdict: PASS': not sending a failing series"
}

# Where the series applies: a public commit, or Debian's source said plainly.
base_statement() {
	local ver

	if [ -n "$KERNEL_TREE" ]; then
		printf 'base-commit: %s\n' "$BASE"
		return
	fi
	ver=$(dpkg-query -W -f='${Version}' "$BASE_PACKAGE" 2>/dev/null || echo unknown)
	cat <<EOF
base: Debian's $BASE_PACKAGE $ver, i.e. Linux $(make -s -C "$KSRC" kernelversion)
with Debian's patches, unpacked into git as one commit that exists only
locally, so no base-commit: is given. To take the series onto another
tree, apply it with 'git am -3' (or 'quilt push -a'), or let the
workbench do it: KERNEL_TREE=/path/to/linux KERNEL_BASE=<commit> make run
EOF
}

# The range-diff of this version against v1, the series as committed in
# this repository at \$V1_REF, applied to the same base.
v1_range_diff() {
	local tmp=$1 wt="$1/v1" p v1

	git -C "$KSRC" worktree add -q --detach "$wt" "$BASE"
	while read -r p; do
		git -C "$REPO_DIR" show "$V1_REF:patches/$p" >"$tmp/v1.patch"
		git -C "$wt" -c user.name=submit -c user.email=submit@localhost \
			am -q "$tmp/v1.patch" ||
			die "v1 ($V1_REF) does not apply to the base: cannot make the range-diff"
	done < <(git -C "$REPO_DIR" show "$V1_REF:series" | sed -e 's/#.*//' -e '/^[[:space:]]*$/d')
	v1=$(git -C "$wt" rev-parse HEAD)
	git -C "$KSRC" worktree remove --force "$wt"
	printf 'Range-diff against v1:\n'
	git -C "$KSRC" range-diff --no-color "$BASE..$v1" "$BASE..$SERIES_REF"
}

# Write the texts that replace the placeholders into $1/<NAME>.
render_parts() {
	local dir=$1

	v1_range_diff "$dir" >"$dir/RANGE_DIFF"
	sed '/^$/N;/^\n$/D' "$RESULTS" >"$dir/TESTING"
	MANWIDTH=$MAIL_WIDTH man -E ascii -l "$MAN_PAGE" 2>/dev/null |
		col -bx >"$dir/MAN_PAGE"
	[ -s "$dir/MAN_PAGE" ] || die "could not render $MAN_PAGE"
}

# Print the template with '#' header lines dropped and every line that
# is exactly @@NAME@@ replaced by the file $1/NAME, when there is one.
fill_template() {
	local dir=$1

	awk -v dir="$dir" '
		!started && /^#/ { next }
		{ started = 1 }
		/^@@[A-Z_]+@@$/ {
			f = dir "/" substr($0, 3, length($0) - 4)
			if ((getline l < f) > 0) {
				print l
				while ((getline l < f) > 0)
					print l
				close(f)
				next
			}
		}
		{ print }
	' "$COVER_TEMPLATE"
}

# The cover letter for b4 (its first line the subject, without [PATCH])
# into $1/cover, and b4's cover template, which adds shortlog, diffstat,
# the base and change-id, into $1/b4-template.
make_cover() {
	local dir=$1 subject

	render_parts "$dir"
	fill_template "$dir" >"$dir/filled"
	subject=$(sed -n '1s/^Subject: \[PATCH 0\/N\] //p' "$dir/filled")
	[ -n "$subject" ] ||
		die "$COVER_TEMPLATE: first line must be 'Subject: [PATCH 0/N] ...'"
	{ printf '%s\n\n' "$subject"; sed '1d;2{/^$/d}' "$dir/filled"; } >"$dir/cover"
	if grep -nE -- "$PLACEHOLDER_RE" "$dir/cover" >&2; then
		die "placeholder left in the cover letter: edit $COVER_TEMPLATE (or the series) and rerun"
	fi
	{
		printf '${cover}\n\n---\n${shortlog}\n\n${diffstat}\n---\n'
		base_statement | sed 's/\$/$$/g'
		printf 'change-id: ${change_id}\n\nBest regards,\n-- \n${signature}\n'
	} >"$dir/b4-template"
}

# checkpatch's SPDX check needs python3 with ply and git (Debian's
# python3-ply and python3-git); prefer the system python that has them.
checkpatch_path() {
	if python3 -c 'import ply, git' 2>/dev/null; then
		printf '%s\n' "$PATH"
	elif /usr/bin/python3 -c 'import ply, git' 2>/dev/null; then
		printf '/usr/bin:%s\n' "$PATH"
	else
		die "checkpatch's SPDX check needs python3-ply and python3-git"
	fi
}

# checkpatch --strict must report nothing, except that a patch adding
# files may ask whether MAINTAINERS needs updating when a patch of the
# series updates MAINTAINERS.
run_checkpatch() {
	local patch out problems path bad=0 maint=0 ignore=()

	if grep -q '^diff --git a/MAINTAINERS b/MAINTAINERS' "${PATCHES[@]}"; then
		maint=1
	fi
	path=$(checkpatch_path)
	# Debian's tarball has no history to look the Fixes: shas up in.
	[ -n "$KERNEL_TREE" ] || ignore=(--ignore UNKNOWN_COMMIT_ID)
	for patch in "${PATCHES[@]}"; do
		out=$(cd "$KSRC" && PATH=$path ./scripts/checkpatch.pl --strict \
			--terse --show-types "${ignore[@]}" "$patch" 2>&1) || true
		problems=$(grep -E ': (ERROR|WARNING|CHECK):' <<<"$out" || true)
		if [ "$maint" -eq 1 ]; then
			problems=$(grep -v ' WARNING:FILE_PATH_CHANGES: ' <<<"$problems" || true)
		fi
		if [ -n "$problems" ] || grep -q 'Traceback' <<<"$out"; then
			printf '%s\n' "$out" >&2
			bad=1
		else
			log "checkpatch --strict: ${patch##*/} clean"
		fi
	done
	[ "$bad" -eq 0 ] || die "checkpatch --strict found problems (see above)"
}

# The address part of "Name <address>".
address_of() {
	sed -n 's/.*<\([^>]*\)>.*/\1/p' <<<"$1" | tr 'A-Z' 'a-z'
}

# Every commit must come from, and be signed off by, the sender, at an
# address that delivers mail. Prints the problems; returns 1 if any.
check_identity() {
	local me c author sob bad=0

	me=$(address_of "$(sender_ident)")
	if [ -z "$me" ] || grep -Eq "$UNROUTABLE_RE" <<<"$me"; then
		printf '  sender %s: not an address that delivers mail (git config user.email)\n' \
			"${me:-(none)}"
		bad=1
	fi
	for c in $(git -C "$KSRC" rev-list --reverse "$BASE..$SERIES_REF"); do
		author=$(git -C "$KSRC" log -1 --format='%ae' "$c" | tr 'A-Z' 'a-z')
		sob=$(address_of "$(git -C "$KSRC" log -1 --format='%(trailers:key=Signed-off-by,valueonly)' "$c" |
			sed '/^$/d' | tail -n 1)")
		if [ "$author" != "$me" ] || [ "$sob" != "$me" ]; then
			printf '  %s: author <%s>, last Signed-off-by <%s>, sender <%s>\n' \
				"$(git -C "$KSRC" log -1 --format='%h %s' "$c")" "$author" "$sob" "$me"
			bad=1
		elif grep -Eq "$UNROUTABLE_RE" <<<"$author"; then
			printf '  %s: <%s> does not deliver mail\n' \
				"$(git -C "$KSRC" log -1 --format='%h %s' "$c")" "$author"
			bad=1
		fi
	done
	return "$bad"
}

# b4 in the prep clone, configured through the environment only: the
# sender's identity and send settings come from KERNEL_SRC's config;
# B4_EXTRA adds key=value settings.
b4_run() {
	local getm="./scripts/get_maintainer.pl --nogit --nogit-fallback --nogit-chief-penguins --norolestats --nokeywords"
	local cfg=(
		"include.path=$(cd "$KSRC" && realpath "$(git rev-parse --git-path config)")"
		"user.name=$SENDER_NAME"
		"user.email=$SENDER_EMAIL"
		"b4.prep-cover-strategy=branch-description"
		"b4.prep-cover-template=$PARTS/b4-template"
		"b4.send-series-cc=$API_LIST"
		"b4.send-auto-to-cmd=$getm --nol"
		"b4.send-auto-cc-cmd=$getm --nom"
		"${B4_EXTRA[@]}"
	)
	local i env=(GIT_CONFIG_COUNT=${#cfg[@]})

	for i in "${!cfg[@]}"; do
		env+=("GIT_CONFIG_KEY_$i=${cfg[$i]%%=*}" "GIT_CONFIG_VALUE_$i=${cfg[$i]#*=}")
	done
	(cd "$B4_TREE" && env "${env[@]}" b4 "$@")
}

# A fresh clone of KERNEL_SRC with the base and the series as b4 branches,
# enrolled, at REVISION, with the cover letter and its recipients.
b4_prep() {
	rm -rf "$B4_TREE"
	mkdir -p "${B4_TREE%/*}"
	git clone -q --shared --no-checkout "$KSRC" "$B4_TREE"
	git -C "$B4_TREE" branch -q eventpoll-base "$BASE"
	git -C "$B4_TREE" checkout -q -b eventpoll "$(git -C "$KSRC" rev-parse "$SERIES_REF")"
	b4_run --offline-mode --no-stdin prep -e eventpoll-base >>"$B4_LOG" 2>&1 ||
		die "b4 prep -e failed: see $B4_LOG"
	b4_run --offline-mode --no-stdin prep --force-revision "$REVISION" >>"$B4_LOG" 2>&1 ||
		die "b4 prep --force-revision failed: see $B4_LOG"
	git -C "$B4_TREE" config branch.eventpoll.description "$(cat "$PARTS/cover")"
	b4_run --offline-mode --no-stdin prep --auto-to-cc >>"$B4_LOG" 2>&1 ||
		die "b4 prep --auto-to-cc failed: see $B4_LOG"
	log "b4: series enrolled on $BASE, v$REVISION, recipients added ($B4_LOG)"
}

# The mails, written by b4 without sending; PATCHES are all but the cover.
b4_mails() {
	mkdir -p "$OUT_MAIL"
	rm -f "$OUT_MAIL"/*.patch "$OUT_MAIL"/*.eml
	# Unsigned mails need the SMTP path (b4 refuses its web endpoint
	# without a signature); -o only writes them, so no server is run.
	B4_EXTRA=("sendemail.smtpServer=$(command -v false)")
	b4_run --offline-mode --no-stdin send -o "$OUT_MAIL" --no-sign >>"$B4_LOG" 2>&1 ||
		die "b4 send -o failed: see $B4_LOG"
	MAILS=("$OUT_MAIL"/*.eml)
	[ "${#MAILS[@]}" -eq $((NR_PATCHES + 1)) ] ||
		die "b4 wrote ${#MAILS[@]} mails to $OUT_MAIL, expected $((NR_PATCHES + 1))"
	COVER=${MAILS[0]}
	grep -q "^Subject: \[PATCH v$REVISION 0*0/$NR_PATCHES\]" "$COVER" ||
		die "${COVER##*/} is not the cover letter of v$REVISION"
	PATCHES=("${MAILS[@]:1}")
	B4_EXTRA=()
	if grep -nE -- "$PLACEHOLDER_RE" "${MAILS[@]}" >&2; then
		die "placeholder left in the mails: edit $COVER_TEMPLATE (or the series) and rerun"
	fi
	grep -Eq "^(base-commit: $BASE|base: Debian's )" "$COVER" ||
		die "cover letter says nothing of the base"
	log "b4 wrote $((NR_PATCHES + 1)) mails to $OUT_MAIL; no placeholder left"
	log "To: $(sed -n '/^To: /,/^[^ ]/{/^To: \|^ /p}' "$COVER" | sed 's/^To: //; s/^ *//' | paste -sd' ' -)"
	log "Cc: $(sed -n '/^Cc: /,/^[^ ]/{/^Cc: \|^ /p}' "$COVER" | sed 's/^Cc: //; s/^ *//' | paste -sd' ' -)"
}

main() {
	local mode=dry-run problems

	while [ $# -gt 0 ]; do
		case $1 in
		-h|--help) usage; exit 0 ;;
		--send) mode=send; shift ;;
		-*) usage >&2; exit 1 ;;
		*) break ;;
		esac
	done
	[ $# -le 1 ] || { usage >&2; exit 1; }

	KSRC=${1:-${KERNEL_SRC:-$WORKTREE}}
	BASE=${BASE_COMMIT:-$(base_commit)}
	SERIES_REF=${SERIES_REF:-$SERIES_BRANCH}
	RESULTS=${RESULTS_FILE:-$RESULTS_DIR/summary.txt}
	OUT_MAIL=${OUT_MAIL:-$OUT_DIR/mail}
	B4_TREE="$OUT_DIR/b4/linux"
	B4_EXTRA=()
	B4_LOG="$OUT_DIR/b4/b4.log"
	command -v b4 >/dev/null || die "b4 is missing: run 'make deps' (scripts/install-deps.sh)"
	[[ "$REVISION" =~ ^[1-9][0-9]*$ ]] || die "REVISION=$REVISION is not a revision number"

	check_inputs
	sender_ident >/dev/null 2>&1 ||
		die "no git identity in $KSRC: set user.name and user.email ('git config'), the sender of the mails"
	SENDER_NAME=$(sender_ident | sed 's/ *<.*//')
	SENDER_EMAIL=$(address_of "$(sender_ident)")
	if ! problems=$(check_identity); then
		printf '%s\n' "$problems" >&2
		[ "$mode" = dry-run ] ||
			die "not sending: the patches must be written and signed off by the sender (commit them with your own identity, 'git commit -s')"
		log "a real send (SEND=1) would refuse: identity above"
	fi
	mkdir -p "$OUT_DIR/b4"
	: >"$B4_LOG"
	PARTS=$(mktemp -d)
	trap 'rm -rf "$PARTS"' EXIT
	make_cover "$PARTS"
	b4_prep
	b4_mails
	run_checkpatch
	if [ "$mode" = dry-run ]; then
		log "dry run done: the mails are in $OUT_MAIL; rerun with --send (make submit SEND=1) to send"
	else
		b4_run send || die "b4 send failed"
	fi
}

main "$@"
