#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Turn the series into mails, check them, and send them (dry run by default).
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

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [--send] [KERNEL_SRC]

Make the mails of the series BASE_COMMIT..SERIES_REF in the kernel work
tree KERNEL_SRC and check them:

  1. git format-patch --cover-letter --base=BASE_COMMIT -o OUT_MAIL;
  2. fill the cover letter from $COVER_TEMPLATE
     (shortlog, diffstat, base commit, the test summary RESULTS_FILE
     and the rendered man page), refusing while a placeholder is left;
  3. checkpatch.pl --strict on every patch;
  4. recipients from scripts/get_maintainer.pl (maintainers in To:,
     reviewers and lists in Cc:) plus $API_LIST;
  5. the identity: every From: and the last Signed-off-by: of every
     patch must be the sender's own git identity, at a domain that
     delivers mail (not .example, .test, .invalid, localhost, ...); the
     dry run reports a mismatch, --send refuses;
  6. git send-email --dry-run with a dummy SMTP server: nothing is sent
     and no connection is made.

The cover letter gets the range-diff against v1 (the series as committed
in this repository at V1_REF), and, when the base is Debian's tree rather
than a public commit, says so in place of a base-commit: line.

Only with --send are the mails sent, through the sender's own
git send-email configuration (sendemail.smtpServer and friends), with a
confirmation prompt for each mail.

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

format_mails() {
	mkdir -p "$OUT_MAIL"
	rm -f "$OUT_MAIL"/*.patch
	local base=()

	# Debian's tree is one local commit nobody else has: no base-commit:.
	[ -z "$KERNEL_TREE" ] || base=(--base="$BASE")
	git -C "$KSRC" format-patch -q --cover-letter "${base[@]}" \
		--signature="$(sender_ident)" -o "$OUT_MAIL" "$BASE..$SERIES_REF"
	COVER="$OUT_MAIL/0000-cover-letter.patch"
	[ -f "$COVER" ] || die "git format-patch wrote no cover letter"
	PATCHES=("$OUT_MAIL"/0*.patch)
	PATCHES=("${PATCHES[@]:1}")
	[ "${#PATCHES[@]}" -eq "$NR_PATCHES" ] ||
		die "git format-patch wrote ${#PATCHES[@]} patches, expected $NR_PATCHES"
	log "wrote $((NR_PATCHES + 1)) mails to $OUT_MAIL"
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

	git -C "$KSRC" shortlog --no-merges -w$MAIL_WIDTH,2,4 \
		"$BASE..$SERIES_REF" | sed '${/^$/d}' >"$dir/SHORTLOG"
	git -C "$KSRC" diff --stat=$MAIL_WIDTH --summary "$BASE" "$SERIES_REF" \
		>"$dir/DIFFSTAT"
	base_statement >"$dir/BASE"
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

# Put the filled template into git's cover letter: its Subject after the
# "[PATCH 0/N]" that git computed, its body in place of git's blurb,
# shortlog, diffstat and base-commit, up to the signature.
fill_cover() {
	local parts filled subject

	parts=$(mktemp -d)
	render_parts "$parts"
	filled="$parts/filled"
	fill_template "$parts" >"$filled"

	subject=$(sed -n '1s/^Subject: \[PATCH 0\/N\] //p' "$filled")
	[ -n "$subject" ] ||
		die "$COVER_TEMPLATE: first line must be 'Subject: [PATCH 0/N] ...'"
	sed -i 1d "$filled"

	awk -v subject="$subject" -v body="$filled" '
		/^Subject: / && !subj { sub(/\*\*\* SUBJECT HERE \*\*\*/, subject); subj = 1 }
		/^\*\*\* BLURB HERE \*\*\*$/ {
			while ((getline l < body) > 0)
				if (!(first++ == 0 && l == ""))
					print l
			skip = 1
			next
		}
		skip && /^-- $/ { skip = 0 }
		!skip { print }
	' "$COVER" >"$parts/cover"
	mv "$parts/cover" "$COVER"
	rm -rf "$parts"
}

# Refuse while any mail, the cover letter above all, holds a placeholder.
check_placeholders() {
	local hits

	if hits=$(grep -nE -- "$PLACEHOLDER_RE" "$OUT_MAIL"/*.patch); then
		printf '%s\n' "$hits" >&2
		die "placeholder left in the mails: edit $COVER_TEMPLATE (or the series) and rerun"
	fi
	grep -Eq "^(base-commit: $BASE|base: Debian's )" "$COVER" ||
		die "cover letter says nothing of the base"
	log "no placeholder left in the cover letter"
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

# Every patch must come from, and be signed off by, the sender, at an
# address that delivers mail. Prints the problems; returns 1 if any.
check_identity() {
	local me patch from sob bad=0

	me=$(address_of "$(sender_ident)")
	if [ -z "$me" ] || grep -Eq "$UNROUTABLE_RE" <<<"$me"; then
		printf '  sender %s: not an address that delivers mail (git config user.email)\n' \
			"${me:-(none)}"
		bad=1
	fi
	for patch in "${PATCHES[@]}"; do
		from=$(address_of "$(sed -n '/^From: /{N;s/\n//;p;q}' "$patch")")
		sob=$(address_of "$(grep '^Signed-off-by: ' "$patch" | tail -n 1)")
		if [ "$from" != "$me" ] || [ "$sob" != "$me" ]; then
			printf '  %s: From <%s>, last Signed-off-by <%s>, sender <%s>\n' \
				"${patch##*/}" "$from" "$sob" "$me"
			bad=1
		elif grep -Eq "$UNROUTABLE_RE" <<<"$from"; then
			printf '  %s: <%s> does not deliver mail\n' "${patch##*/}" "$from"
			bad=1
		fi
	done
	return "$bad"
}

# get_maintainer.pl on all patches: maintainers go to To:, reviewers and
# lists to Cc:, each address once.
find_recipients() {
	local common=(--no-rolestats --no-git --no-git-fallback --no-multiline)

	TO=$(cd "$KSRC" && ./scripts/get_maintainer.pl "${common[@]}" --no-r --no-l \
		"${PATCHES[@]}")
	CC=$(cd "$KSRC" && ./scripts/get_maintainer.pl "${common[@]}" --no-m \
		"${PATCHES[@]}")
	CC=$(printf '%s\n%s\n' "$CC" "$API_LIST" | tr ',' '\n' |
		sed 's/^ *//; /^$/d' | awk '!seen[tolower($0)]++')
	TO=$(tr ',' '\n' <<<"$TO" | sed 's/^ *//; /^$/d')
	[ -n "$TO$CC" ] || die "get_maintainer.pl found no recipient"
	log "To: $(paste -sd, - <<<"$TO" | sed 's/,/, /g')"
	log "Cc: $(paste -sd, - <<<"$CC" | sed 's/,/, /g')"
}

send_mails() {
	local mode=$1 args=() addr

	while IFS= read -r addr; do [ -z "$addr" ] || args+=(--to="$addr"); done <<<"$TO"
	while IFS= read -r addr; do [ -z "$addr" ] || args+=(--cc="$addr"); done <<<"$CC"
	args+=(--from="$(sender_ident)" --8bit-encoding=UTF-8 --no-chain-reply-to
	       --thread --suppress-cc=self)

	if [ "$mode" = dry-run ]; then
		# Never connects: --dry-run stops before sending, and the
		# "server" is a program that fails if it were ever run.
		git -C "$KSRC" -c sendemail.smtpServer="$(command -v false)" \
			send-email --dry-run --confirm=never "${args[@]}" \
			"$COVER" "${PATCHES[@]}" | tee "$OUT_MAIL/send-email-dry-run.log"
		log "dry run done: $OUT_MAIL/send-email-dry-run.log; rerun with --send to send"
	else
		git -C "$KSRC" send-email --confirm=always "${args[@]}" \
			"$COVER" "${PATCHES[@]}"
	fi
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

	check_inputs
	format_mails
	fill_cover
	check_placeholders
	run_checkpatch
	find_recipients
	if ! problems=$(check_identity); then
		printf '%s\n' "$problems" >&2
		[ "$mode" = dry-run ] ||
			die "not sending: the patches must be written and signed off by the sender (commit them with your own identity, 'git commit -s')"
		log "a real send (SEND=1) would refuse: identity above"
	fi
	send_mails "$mode"
}

main "$@"
