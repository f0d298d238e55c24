#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A sendmail for git send-email that delivers into a local mbox file.
set -o errexit -o nounset -o pipefail

usage() {
	cat <<EOF
Usage: DELIVER_MBOX=FILE ${0##*/} [-h] [-i] [-f SENDER] RECIPIENT...

What git send-email runs as its sendmail program (--smtp-server=<this
path>) when scripts/submit.sh --test-sender delivers a thread locally:
read one message on stdin and append it to the mbox FILE (mboxrd: a
"From " line, body lines matching /^>*From / get one more '>'), and
append a line "<Message-Id> RECIPIENT..." to FILE.rcpt, the envelope
the message was sent to. Nothing leaves the machine.

  -i          accepted and ignored (sendmail's "a lone dot does not end
              the message"; this reads to the end of stdin anyway)
  -f SENDER   envelope sender for the "From " line (default: the From:
              header's address)

Environment:
  DELIVER_MBOX  the mbox to append to (required)

Exit status: 0 when the message was appended, 1 otherwise.
EOF
}

die() { printf '%s: error: %s\n' "${0##*/}" "$*" >&2; exit 1; }

# The address of the header field $2 (From, Message-Id) of message file $1.
header_address() {
	sed -n '1,/^$/p' "$1" | sed -e ':a' -e 'N' -e '$!ba' -e 's/\n[[:space:]]\+/ /g' |
		sed -n "s/^$2:[[:space:]]*//I; T; s/.*<\([^>]*\)>.*/\1/; p; q"
}

msg=""

main() {
	local sender="" id

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	esac
	while [ $# -gt 0 ]; do
		case "$1" in
		-i) shift ;;
		-f) [ $# -ge 2 ] || die "-f needs a sender"; sender=$2; shift 2 ;;
		-*) die "unknown option $1 (see -h)" ;;
		*) break ;;
		esac
	done
	[ $# -gt 0 ] || die "no recipient"
	[ -n "${DELIVER_MBOX:-}" ] || die "DELIVER_MBOX is not set: say which mbox to deliver to"
	msg=$(mktemp)
	trap 'rm -f -- "$msg"' EXIT
	cat > "$msg"
	[ -s "$msg" ] || die "empty message on stdin"
	[ -n "$sender" ] || sender=$(header_address "$msg" From)
	id=$(header_address "$msg" Message-Id)
	[ -n "$id" ] || die "the message has no Message-Id"
	{
		printf 'From %s %s\n' "${sender:-MAILER-DAEMON}" "$(LC_ALL=C date -u '+%a %b %e %H:%M:%S %Y')"
		sed -E 's/^(>*From )/>\1/' "$msg"
		# One blank line ends each message of an mbox.
		[ -z "$(tail -c 1 "$msg")" ] || printf '\n'
		printf '\n'
	} >> "$DELIVER_MBOX"
	printf '<%s> %s\n' "$id" "$*" >> "$DELIVER_MBOX.rcpt"
}

main "$@"
