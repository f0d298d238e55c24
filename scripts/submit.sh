#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Turn each posting into the mails of its own thread, check them, and send
# them (dry run by default).
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly OUT_MAIL="$RESULTS_DIR/submit"
# Markers that must not survive into a cover letter.
readonly PLACEHOLDER_RE='@@[A-Z_]+@@|\*\*\* .* \*\*\*'
# Mail domains that never deliver (RFC 2606, RFC 6761) or only bounce.
readonly UNROUTABLE_RE='(\.(example|test|invalid|localhost|local)|@localhost|@(.*\.)?example\.(com|net|org))>?$'

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [--send] [POSTING...]

For each posting (default: all, in order: $(postings | tr '\n' ' '))
take its mails from patches/<posting>/ (0000-cover-letter.patch first,
as scripts/export-series.sh makes them), and:

  1. refuse a cover letter that still holds a placeholder ($PLACEHOLDER_RE);
  2. run checkpatch.pl --strict on every patch (not the cover letter);
  3. check the recipients: every maintainer, reviewer and list that
     scripts/get_maintainer.pl names for the posting's patches must be in
     the To: or Cc: of its cover letter, which the template
     Documentation/cover-letters/<posting>.txt holds, with the lists
     its maintainers expect beyond that (linux-api, linux-pm, ...);
  4. check the identity: the From: of every mail must be the sender's
     own git identity (user.name, user.email) at a domain that delivers
     mail; the dry run reports a mismatch, --send refuses;
  5. write the thread to $OUT_MAIL/<posting>/ with the cover
     letter's To: and Cc: on every mail, and, with git send-email
     installed, show what 'git send-email --dry-run' would do.

Only with --send does 'git send-email' send, with the sender's own
sendemail.* configuration, one thread per posting; it asks first.

Environment:
  OUT_DIR      output directory (now: $OUT_DIR)
  KERNEL_SRC   kernel tree whose checkpatch.pl and get_maintainer.pl run
               (default: $WORKTREE)

Exit status: 0 when every check passed (and, with --send, the mails went
out), 1 otherwise.
EOF
}

fail=0
send=0
problem() { printf '%s: %s\n' "${0##*/}" "$*" >&2; fail=1; }
# Who sends is checked when sending; a dry run only says so.
identity_problem() {
	if [ "$send" = 1 ]; then
		problem "$@"
	else
		printf '%s: warning: %s\n' "${0##*/}" "$*" >&2
	fi
}

# The header field $2 of mail $1, folded lines joined.
field() {
	sed -n '1,/^$/p' "$1" | sed -e ':a' -e 'N' -e '$!ba' -e 's/\n[[:space:]]\+/ /g' |
		sed -n "s/^$2: //p"
}

# The addresses of a To:/Cc: value, one a line, lower case.
addresses() {
	tr ',' '\n' | sed -E 's/.*<([^>]+)>.*/\1/; s/^[[:space:]]+//; s/[[:space:]]+$//' |
		tr 'A-Z' 'a-z' | sed '/^$/d'
}

check_posting() {
	local posting=$1 ksrc=$2 dir="$PATCHES_DIR/$1" cover recipients want p
	local me from out

	cover="$dir/0000-cover-letter.patch"
	[ -f "$cover" ] || { problem "$posting: no $cover: run 'make export'"; return; }
	! grep -Eq "$PLACEHOLDER_RE" "$cover" ||
		problem "$posting: the cover letter still holds a placeholder: $(grep -Eo "$PLACEHOLDER_RE" "$cover" | sort -u | tr '\n' ' ')"

	for p in "$dir"/[0-9]*.patch; do
		[ "$p" != "$cover" ] || continue
		out=$(cd "$ksrc" && PATH=/usr/bin:$PATH ./scripts/checkpatch.pl --strict -q --terse \
			--ignore UNKNOWN_COMMIT_ID "$p" 2>&1 |
			grep -v -e 'does MAINTAINERS need updating' -e '^total: ' || true)
		[ -z "$out" ] || { problem "$posting: checkpatch --strict on ${p##*/}:"; sed 's/^/    /' <<<"$out" >&2; }
	done

	recipients=$( { field "$cover" To; echo ,; field "$cover" Cc; } | tr -d '\n' | addresses)
	[ -n "$(field "$cover" To)" ] || problem "$posting: the cover letter has no To:"
	want=$(cd "$ksrc" && ./scripts/get_maintainer.pl --no-rolestats --nogit \
		--nogit-fallback --no-keywords $(ls "$dir"/[0-9]*.patch | grep -v '/0000-') 2>/dev/null |
		addresses)
	while read -r p; do
		grep -qxF "$p" <<<"$recipients" ||
			problem "$posting: get_maintainer.pl names $p, who is not in To:/Cc:"
	done <<<"$want"

	me="$(git config user.name 2>/dev/null) <$(git config user.email 2>/dev/null)>"
	for p in "$dir"/*.patch; do
		from=$(field "$p" From)
		if [ "$from" != "$me" ]; then
			identity_problem "$posting: ${p##*/} is from '$from', not the sender's git identity '$me'"
		elif grep -Eq "$UNROUTABLE_RE" <<<"$from"; then
			identity_problem "$posting: ${p##*/}: '$from' is at a domain that does not deliver mail"
		fi
	done
}

# The posting's mails, To: and Cc: of the cover letter on each, into $2.
write_thread() {
	local posting=$1 dest=$2 dir="$PATCHES_DIR/$1" cover p to cc

	cover="$dir/0000-cover-letter.patch"
	to=$(field "$cover" To)
	cc=$(field "$cover" Cc)
	rm -rf "$dest"
	mkdir -p "$dest"
	for p in "$dir"/*.patch; do
		if [ "$p" = "$cover" ]; then
			cp "$p" "$dest/"
		else
			awk -v to="$to" -v cc="$cc" '
				!done && /^$/ { print "To: " to; print "Cc: " cc; done = 1 }
				{ print }' "$p" > "$dest/${p##*/}"
		fi
	done
}

send_thread() {
	local dest=$1 dry=$2

	[ -x "$(git --exec-path)/git-send-email" ] ||
		{ [ "$dry" = 1 ] && { log "git send-email is not installed: the dry run stops at the mails"; return 0; }
		  die "git send-email is not installed (Debian: git-email)"; }
	if [ "$dry" = 1 ]; then
		git send-email --dry-run --confirm=never --suppress-cc=all --no-chain-reply-to \
			--thread --to-cover --cc-cover "$dest"/*.patch 2>&1 |
			grep -E '^(Dry-OK|Subject|To|Cc):' | sed 's/^/    /' || true
	else
		git send-email --confirm=always --suppress-cc=all --no-chain-reply-to \
			--thread --to-cover --cc-cover "$dest"/*.patch
	fi
}

main() {
	local ksrc posting

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	--send) send=1; shift ;;
	esac
	ksrc=${KERNEL_SRC:-$WORKTREE}
	[ -x "$ksrc/scripts/checkpatch.pl" ] ||
		die "no kernel tree at $ksrc: run 'make tree' (scripts/apply-series.sh) or set KERNEL_SRC"
	[ $# -gt 0 ] || set -- $(postings)
	for posting in "$@"; do
		postings | grep -qxF "$posting" || die "no posting '$posting' in series (postings: $(postings | tr '\n' ' '))"
	done
	for posting in "$@"; do
		check_posting "$posting" "$ksrc"
		write_thread "$posting" "$OUT_MAIL/$posting"
		log "$posting: $(ls "$OUT_MAIL/$posting" | wc -l) mails in $OUT_MAIL/$posting"
	done
	if [ "$send" = 1 ] && [ "$fail" -ne 0 ]; then
		die "not sending: fix the problems above"
	fi
	for posting in "$@"; do
		log "$posting: $([ "$send" = 1 ] && echo sending || echo 'dry run of git send-email')"
		send_thread "$OUT_MAIL/$posting" "$((1 - send))"
	done
	[ "$fail" -eq 0 ] || die "the postings have the problems above (a dry run; nothing was sent)"
	log "every posting checked$([ "$send" = 1 ] && echo ' and sent' || echo '; nothing was sent')"
}

main "$@"
