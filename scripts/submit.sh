#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Turn each posting into the mails of its own thread, signed by the
# sender, check them, and send them (dry run by default).
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly OUT_MAIL="$RESULTS_DIR/submit"
readonly OUT_TEST_MAIL="$RESULTS_DIR/submit-test"
# Markers that must not survive into a cover letter.
readonly PLACEHOLDER_RE='@@[A-Z_]+@@|\*\*\* .* \*\*\*'
# The trailers that carry an identity the sender may have to take over.
readonly IDENTITY_TRAILER_RE='^(Signed-off-by|Co-developed-by): '
# What git send-email adds to the To: and Cc: the mails carry: nothing.
# Not the author, not the sender, not the body's Cc:/Signed-off-by:/
# *-by: lines (a 'Cc: stable@vger.kernel.org' tag is for the stable team
# once the patch is merged), not sendemail.cccmd, nor sendemail.to/cc.
readonly SEND_EMAIL_RECIPIENTS=(--no-to --no-cc --suppress-cc=author --suppress-cc=self
				--suppress-cc=body --suppress-cc=cccmd --no-signed-off-by-cc)

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [--send | --test-sender 'NAME <ADDR>'] [-o DIR] [POSTING...]

For each posting (default: all, in order: $(all_postings | tr '\n' ' '))
take its mails from patches/<posting>/ (0000-cover-letter.patch first,
as scripts/export-series.sh makes them) or, for a posting to another
project (${EXTERNAL_SUITES[*]}), from external/<posting>/patches/ (as
scripts/export-external.sh makes them), and:

  1. refuse to go on without a sender, or with one at a domain that does
     not deliver mail (the placeholder that signs this repository's
     commits is one): the sender is SUBMIT_FROM, else git config
     user.name and user.email;
  2. refuse a cover letter that still holds a placeholder ($PLACEHOLDER_RE);
  3. run checkpatch.pl --strict on every patch (not the cover letter) of
     the kernel's postings;
  4. check the recipients: every maintainer, reviewer and list that
     scripts/get_maintainer.pl names for the posting's patches must be in
     the To: or Cc: of its cover letter, which the template
     Documentation/cover-letters/<posting>.txt holds, with the people and
     lists its maintainers expect beyond that; another project's tree has
     no get_maintainer.pl: there, each address of the recipients= line of
     external/<posting>/SOURCE (its list and maintainer) must be in the
     To: or Cc: of its template, external/<posting>/cover-letter.txt;
  5. write the thread to DIR/<posting>/ (default DIR: $OUT_MAIL), as
     the sender's: the sender is the author of the whole series, so the
     From: of every mail whose author is a placeholder, and every
     Signed-off-by: (or Co-developed-by:) of a placeholder, become the
     sender's (a patch by a real other author keeps its From:, and git
     send-email puts it in the body); each patch ends its trailers with
     exactly one Signed-off-by: of the sender; every mail gets the cover
     letter's To: and Cc:, a Message-Id:, and each patch In-Reply-To:
     and References: of the cover letter; the cover letter ends with the
     upstream version of the base in a sentence and 'base-commit:' (the
     commit in \$OUT_DIR/base-commit; for another project, the upstream
     commit its SOURCE pins, of which its tarball is 'git archive'), before the
     'prerequisite-patch-id:' lines make export wrote; a mail left with a
     placeholder identity anywhere is refused;
  6. show what 'git send-email --dry-run' would send (with --send: send,
     asking first), each mail to its own To: and Cc: and no one else.

Only with --send does 'git send-email' send, with the sender's own
sendemail.* configuration for the transport, one thread per posting.

  --send         send the mails (git send-email --confirm=always)
  --test-sender 'NAME <ADDR>'
                 the mail round trip's mode (scripts/check-mail.sh): the
                 sender is this identity, which must be at a domain that
                 does not deliver mail, so that its mails cannot reach
                 anyone; checkpatch and get_maintainer.pl are left to
                 make check's checkpatch stage and to the round trip,
                 which checks the delivered mails; git send-email delivers each thread with
                 scripts/deliver-mbox.sh into DIR/<posting>.mbox (and the
                 envelope into DIR/<posting>.mbox.rcpt), with no
                 configuration of the user's; cannot be combined with
                 --send; default DIR: $OUT_TEST_MAIL
  -o DIR         write the threads to DIR/<posting>/ instead

Environment:
  SUBMIT_FROM  the sender, 'Your Name <you@your.domain>' (default: git
               config user.name and user.email)
  OUT_DIR      output directory (now: $OUT_DIR)
  KERNEL_SRC   kernel tree whose checkpatch.pl and get_maintainer.pl run
               (default: $WORKTREE)

Exit status: 0 when every check passed (and, with --send, the mails went
out; with --test-sender, were delivered), 1 otherwise.
EOF
}

fail=0
mode=dry
problem() { printf '%s: %s\n' "${0##*/}" "$*" >&2; fail=1; }

# The sender: name and address, from --test-sender, SUBMIT_FROM or git.
sender_name="" sender_email="" sender_header=""

# "NAME <ADDR>" as a mail header writes it: quoted or encoded as needed.
header_identity() {
	local name=$1 q

	if LC_ALL=C grep -q '[^ -~]' <<<"$name"; then
		python3 -c 'import sys, email.utils
print(email.utils.formataddr((sys.argv[1], sys.argv[2]), charset="utf-8"))' "$name" "$2"
	elif [[ $name == *[\(\)\<\>\[\]:\;@\\,.\"]* ]]; then
		q=${name//\\/\\\\}
		printf '"%s" <%s>\n' "${q//\"/\\\"}" "$2"
	else
		printf '%s <%s>\n' "$name" "$2"
	fi
}

how_to_set_identity() {
	printf '%s\n' "set yours: git config user.name 'Your Name' and git config user.email you@your.domain" \
		"(in this repository, or --global), or SUBMIT_FROM='Your Name <you@your.domain>' make submit"
}

# Set the sender from $1 (--test-sender) or SUBMIT_FROM or git config; say
# why and fail for one that is missing, malformed, or on the wrong side of
# deliverable for the mode.
set_sender() {
	local given=$1 id re='^[[:space:]]*([^<>]*[^<>[:space:]])[[:space:]]*<([^<>@[:space:]]+@[^<>@[:space:]]+)>[[:space:]]*$'

	if [ "$mode" = roundtrip ]; then
		id=$given
	elif [ -n "${SUBMIT_FROM:-}" ]; then
		id=$SUBMIT_FROM
	else
		id="$(git -C "$REPO_DIR" config user.name 2>/dev/null || true) <$(git -C "$REPO_DIR" config user.email 2>/dev/null || true)>"
	fi
	if ! [[ $id =~ $re ]]; then
		log "error: no usable sender identity ('$id'): $(how_to_set_identity)"
		return 1
	fi
	sender_name=${BASH_REMATCH[1]}
	sender_email=${BASH_REMATCH[2]}
	if [ "$mode" = roundtrip ]; then
		if ! undeliverable "$sender_email"; then
			log "error: --test-sender takes only an identity at a domain that does not deliver mail (example.org, .example, .invalid, .test), so that its mails can reach no one: '$id'"
			return 1
		fi
	elif undeliverable "$sender_email"; then
		log "error: the sender '$id' is at a domain that does not deliver mail (this repository's commits are signed by such a placeholder): $(how_to_set_identity)"
		return 1
	fi
	sender_header=$(header_identity "$sender_name" "$sender_email")
}

# The identities of header or trailer lines on stdin ("Name <addr>").
identities() {
	sed -nE 's/^(From|To|Cc|[A-Za-z-]+-by):[[:space:]]*//Ip' | tr ',' '\n' |
		sed -E 's/^[[:space:]]+//; s/[[:space:]]+$//' | sed '/^$/d'
}

# The placeholder identities among the authors of the mails in $1: their
# name and their address, one a line.
placeholder_strings() {
	local p from

	for p in "$1"/*.patch; do
		from=$(mail_field "$p" From)
		undeliverable "$from" || continue
		sed -E 's/^"?([^"<]*[^"<[:space:]])"?[[:space:]]*<([^>]*)>$/\1\n\2/' <<<"$from"
	done | sort -u
}

check_posting() {
	local posting=$1 ksrc=$2 dir cover recipients want p out who
	local -a patches

	dir=$(posting_mail_dir "$posting")
	cover="$dir/0000-cover-letter.patch"
	[ -f "$cover" ] || { problem "$posting: no $cover: run 'make export'"; return; }
	! grep -Eq "$PLACEHOLDER_RE" "$cover" ||
		problem "$posting: the cover letter still holds a placeholder: $(grep -Eo "$PLACEHOLDER_RE" "$cover" | sort -u | tr '\n' ' ')"

	patches=()
	for p in "$dir"/[0-9]*.patch; do
		[ "$p" = "$cover" ] || patches+=("$p")
	done
	if [ "$mode" != roundtrip ] && ! is_external "$posting"; then
		for p in "${patches[@]}"; do
			out=$( (cd "$ksrc" || exit
				PATH=/usr/bin:$PATH ./scripts/checkpatch.pl --strict -q --terse \
				--ignore UNKNOWN_COMMIT_ID "$p") 2>&1 |
				grep -v -e 'does MAINTAINERS need updating' -e '^total: ' || true)
			[ -z "$out" ] && continue
			problem "$posting: checkpatch --strict on ${p##*/}:"
			printf '    %s\n' "${out//$'\n'/$'\n'    }" >&2
		done
	fi

	recipients=$( { mail_field "$cover" To; echo ,; mail_field "$cover" Cc; } | tr -d '\n' | addresses)
	[ -n "$(mail_field "$cover" To)" ] || problem "$posting: the cover letter has no To:"
	# The round trip checks the recipients of the delivered mails itself.
	[ "$mode" != roundtrip ] || return 0
	want=$(required_recipients "$posting" "$ksrc" "${patches[@]}")
	who="get_maintainer.pl names"
	! is_external "$posting" || who="external/$posting/SOURCE's recipients= names"
	while read -r p; do
		[ -z "$p" ] || grep -qxF "$p" <<<"$recipients" ||
			problem "$posting: $who $p, who is not in To:/Cc:"
	done <<<"$want"
}

# A To:/Cc: header $1 with value $2, one address a line.
folded_header() {
	printf '%s: %s\n' "$1" "$(sed -E 's/,[[:space:]]*/,\n /g' <<<"$2")"
}

# Mail $1 as the sender's, to stdout. $2: the Message-Id; $3: the cover
# letter's (empty for the cover letter itself); $4, $5: its To:, Cc:;
# $6: the lines that end a cover letter before its prerequisite-patch-id:
# lines (base sentence, base-commit:); $7: the placeholders' strings; $8:
# a sed program for the body (copyright_takeover), or none.
sender_mail() {
	local mail=$1 id=$2 cover_id=$3 to=$4 cc=$5 base_block=$6 placeholders=$7 body_edit=${8:-}
	local headers from author

	headers=$(sed -n '2,/^$/p' "$mail" | sed -e ':a' -e 'N' -e '$!ba' -e 's/\n[[:space:]]\+/ /g')
	from=$(grep -m1 '^From: ' <<<"$headers")
	from=${from#From: }
	if [[ ${from,,} =~ $UNDELIVERABLE_RE ]]; then author=$sender_header; else author=$from; fi
	head -1 "$mail"
	printf 'From: %s\n' "$author"
	grep -Ei '^(Date|Subject|MIME-Version|Content-Type|Content-Transfer-Encoding):' <<<"$headers"
	folded_header To "$to"
	# Not an empty one: LTP's posting goes to its list alone.
	[ -z "$cc" ] || folded_header Cc "$cc"
	printf 'Message-Id: <%s>\n' "$id"
	[ -z "$cover_id" ] || printf 'In-Reply-To: <%s>\nReferences: <%s>\n' "$cover_id" "$cover_id"
	printf '\n'
	sed '1,/^$/d' "$mail" | sed -e "${body_edit:-}" |
	ME="$sender_name <$sender_email>" MYNAME="$sender_name" TRAILER_RE="$IDENTITY_TRAILER_RE" \
	COVER="$([ -z "$cover_id" ] && echo 1 || echo 0)" BASE_BLOCK="$base_block" \
	PLACEHOLDERS="$placeholders" awk '
		function placeholder(line,   i) {
			for (i = 1; i <= np; i++)
				if (ph[i] != "" && index(line, ph[i])) return 1
			return 0
		}
		# The trailers are the last paragraph before the "---" line:
		# a placeholder signs as the sender, and the sender signs
		# once, last. A last paragraph that is no trailer block gets
		# a trailer block of its own.
		function flush_trailers(   i, n, out, trailers) {
			n = 0
			trailers = nb > 0
			for (i = 1; i <= nb; i++)
				if (buf[i] !~ /^[A-Za-z0-9-]+: /) trailers = 0
			for (i = 1; i <= nb; i++) {
				line = buf[i]
				if (trailers && line ~ ENVIRON["TRAILER_RE"] && placeholder(line))
					line = substr(line, 1, index(line, ":")) " " ENVIRON["ME"]
				if (trailers && line == "Signed-off-by: " ENVIRON["ME"]) continue
				out[++n] = line
			}
			for (i = 1; i <= n; i++) print out[i]
			if (!trailers && n > 0) print ""
			print "Signed-off-by: " ENVIRON["ME"]
		}
		BEGIN { np = split(ENVIRON["PLACEHOLDERS"], ph, "\n"); nb = 0; done = 0
			cover = ENVIRON["COVER"] == 1 }
		cover && /^prerequisite-patch-id: / && !based { print ENVIRON["BASE_BLOCK"]; based = 1 }
		cover && placeholder($0) && /^[^ ].* \([0-9]+\):$/ {
			sub(/^.* \(/, ENVIRON["MYNAME"] " ("); print; next
		}
		cover { print; next }
		done { print; next }
		$0 == "---" { flush_trailers(); print; done = 1; next }
		/^$/ { for (i = 1; i <= nb; i++) print buf[i]; nb = 0; print; next }
		{ buf[++nb] = $0 }
		END {
			if (cover && !based) printf "\n%s\n", ENVIRON["BASE_BLOCK"]
			if (!cover && !done) { for (i = 1; i <= nb; i++) print buf[i] }
		}'
}

# The posting's mails in $2 (a directory of git format-patch mails, the
# cover letter first) as the sender's thread in $3; $1 names it, and so
# its base (posting_base), which the cover letter names.
write_thread() {
	local posting=$1 src=$2 dest=$3
	local cover="$2/0000-cover-letter.patch" to cc stamp nonce domain k=0 p
	local id cover_id placeholders base_block takeover=""

	to=$(mail_field "$cover" To)
	cc=$(mail_field "$cover" Cc)
	placeholders=$(placeholder_strings "$src")
	# Another project's new files name their author in a copyright
	# notice (LTP asks for one): the sender's, as the From: is.
	! is_external "$posting" ||
		takeover=$(copyright_takeover '^[+]' "$(placeholder_identities "$src")" "$sender_name <$sender_email>")
	base_block=$(posting_base_description "$posting")
	base_block+="${base_block:+$'\n\n'}base-commit: $(posting_base "$posting")"
	stamp=$(date -u +%Y%m%d%H%M%S)
	nonce=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
	domain=${sender_email#*@}
	cover_id="$stamp-$posting-$nonce-0@$domain"
	rm -rf "$dest"
	mkdir -p "$dest"
	for p in "$src"/[0-9][0-9][0-9][0-9]-*.patch; do
		if [ "$p" = "$cover" ]; then
			sender_mail "$p" "$cover_id" "" "$to" "$cc" "$base_block" "$placeholders"
		else
			k=$((k + 1))
			id="$stamp-$posting-$nonce-$k@$domain"
			sender_mail "$p" "$id" "$cover_id" "$to" "$cc" "" "$placeholders" "$takeover"
		fi > "$dest/${p##*/}"
	done
	# Mails for another project that belong in the thread (the RFC's
	# man-pages patch): replies to the cover letter, after the patches,
	# to their own To: and Cc:.
	for p in $(companions "$posting"); do
		k=$((k + 1))
		id="$stamp-$posting-$nonce-$k@$domain"
		sender_mail "$REPO_DIR/$p" "$id" "$cover_id" "$(mail_field "$REPO_DIR/$p" To)" \
			"$(mail_field "$REPO_DIR/$p" Cc)" "" "$placeholders" > "$dest/9$(printf '%03d' "$k")-${p##*/}"
	done
	check_thread_identities "$posting" "$dest" "$placeholders"
}

# The companion mails of posting $1: the paths, relative to the
# repository, that Documentation/cover-letters/<posting>.companions lists.
companions() {
	local list="$COVER_DIR/$1.companions" p

	[ -f "$list" ] || return 0
	while read -r p; do
		case "$p" in ""|"#"*) continue ;; esac
		[ -f "$REPO_DIR/$p" ] || die "$list names $p, which does not exist"
		printf '%s\n' "$p"
	done < "$list"
}

# No mail of the thread in $2 names a placeholder ($3: their names and
# addresses), and every identity of its headers and trailers delivers,
# but for the test sender's own.
check_thread_identities() {
	local posting=$1 dest=$2 placeholders=$3 p line

	if [ -n "$placeholders" ]; then
		while read -r p; do
			problem "$posting: ${p##*/} still names a placeholder: $(grep -oiF -- "$placeholders" "$p" | sort -u | tr '\n' ' ')"
		done < <(grep -liF -- "$placeholders" "$dest"/*.patch || true)
	fi
	while read -r line; do
		[ "$mode" = roundtrip ] && [[ $line == *"<$sender_email>" || $line == *": $sender_email" ]] && continue
		problem "$posting: ${line%%: *} names '${line#*: }', at a domain that does not deliver mail"
	done < <(for p in "$dest"/*.patch; do
			{ sed -n '1,/^$/p' "$p" | sed -e ':a' -e 'N' -e '$!ba' -e 's/\n[[:space:]]\+/ /g'
			  sed '1,/^$/d' "$p" | sed '/^---$/,$d' | grep -E '^[A-Za-z-]+-by: '; } |
				identities | sed "s|^|${p##*/}: |"
		 done | grep -Ei "$UNDELIVERABLE_RE" || true)
}

# git send-email for the thread in $1: --dry-run, --send, or (--test-sender) into
# the mbox $1.mbox through scripts/deliver-mbox.sh.
send_thread() {
	local dest=$1

	[ -x "$(git --exec-path)/git-send-email" ] ||
		{ [ "$mode" = dry ] && { log "git send-email is not installed: the dry run stops at the mails"; return 0; }
		  die "git send-email is not installed (Debian: git-email)"; }
	case "$mode" in
	dry)
		git send-email --dry-run --confirm=never --no-thread "${SEND_EMAIL_RECIPIENTS[@]}" \
			--from="$sender_header" "$dest"/*.patch 2>&1 |
			awk '/^Dry-OK/ { n = 0 } /^RCPT TO:/ { n++ } /^Subject: / { s = $0 }
			     /^Sendmail: / { for (i = 3; i <= NF; i++) if ($i ~ /@/ && $(i - 1) != "-f") n++ }
			     /^Result: / { printf "    %s: %d recipients\n", s, n }'
		;;
	send)
		git send-email --confirm=always --no-thread "${SEND_EMAIL_RECIPIENTS[@]}" \
			--from="$sender_header" "$dest"/*.patch
		;;
	roundtrip)
		rm -f "$dest.mbox" "$dest.mbox.rcpt"
		# Outside any repository, without the user's configuration.
		(cd / && DELIVER_MBOX="$dest.mbox" GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 \
			git send-email --quiet --confirm=never --no-thread "${SEND_EMAIL_RECIPIENTS[@]}" \
			--from="$sender_header" --smtp-server="$REPO_DIR/scripts/deliver-mbox.sh" \
			"$dest"/*.patch >/dev/null) ||
			die "git send-email could not deliver $dest into $dest.mbox"
		;;
	esac
}

main() {
	local ksrc posting out="" test_sender=""
	local -a argv=()

	while [ $# -gt 0 ]; do
		case "$1" in
		-h|--help) usage; exit 0 ;;
		--send) [ "$mode" != roundtrip ] || die "--send and --test-sender exclude each other"; mode=send; shift ;;
		--test-sender)
			[ "$mode" != send ] || die "--send and --test-sender exclude each other"
			[ $# -ge 2 ] || die "--test-sender needs an identity, 'Name <addr@example.org>'"
			mode=roundtrip; test_sender=$2; shift 2 ;;
		-o) [ $# -ge 2 ] || die "-o needs a directory"; out=$2; shift 2 ;;
		-*) usage >&2; exit 1 ;;
		*) break ;;
		esac
	done
	[ -n "$out" ] || { [ "$mode" = roundtrip ] && out=$OUT_TEST_MAIL || out=$OUT_MAIL; }
	ksrc=${KERNEL_SRC:-$WORKTREE}
	[ $# -gt 0 ] || mapfile -t -d $'\n' argv < <(all_postings)
	[ $# -eq 0 ] || argv=("$@")
	set -- "${argv[@]}"
	for posting in "$@"; do
		grep -qxF "$posting" <<<"$(all_postings)" ||
			die "no posting '$posting' in series or external/ (postings: $(all_postings | tr '\n' ' '))"
		is_external "$posting" || [ -x "$ksrc/scripts/checkpatch.pl" ] ||
			die "no kernel tree at $ksrc: run 'make tree' (scripts/apply-series.sh) or set KERNEL_SRC"
	done
	if ! set_sender "$test_sender"; then
		# No mail of an earlier run outlives a refusal.
		for posting in "$@"; do rm -rf "${out:?}/$posting"; done
		exit 1
	fi
	log "sender: $sender_header"
	for posting in "$@"; do
		check_posting "$posting" "$ksrc"
		write_thread "$posting" "$(posting_mail_dir "$posting")" "$out/$posting"
		log "$posting: $(find "$out/$posting" -name '*.patch' | wc -l) mails in $out/$posting"
	done
	if [ "$mode" != dry ] && [ "$fail" -ne 0 ]; then
		die "not $([ "$mode" = send ] && echo sending || echo delivering): fix the problems above"
	fi
	for posting in "$@"; do
		case "$mode" in
		dry) log "$posting: dry run of git send-email" ;;
		send) log "$posting: sending" ;;
		roundtrip) log "$posting: delivering into $out/$posting.mbox" ;;
		esac
		send_thread "$out/$posting"
	done
	[ "$fail" -eq 0 ] || die "the postings have the problems above (a dry run; nothing was sent)"
	case "$mode" in
	dry) log "every posting checked; nothing was sent" ;;
	send) log "every posting checked and sent" ;;
	roundtrip) log "every posting checked and delivered into $out/<posting>.mbox; nothing left the machine" ;;
	esac
}

main "$@"
