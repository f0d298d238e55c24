#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The mail round trip: what make submit would send, delivered into local
# mailboxes, taken back with b4 and git am, and compared with the
# workbench's trees.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

# The sender of the round trip: at a domain that cannot receive mail, so
# that scripts/submit.sh accepts it only in its --test-sender mode.
readonly TEST_SENDER_NAME="Mail Round-Trip"
readonly TEST_SENDER_EMAIL="round-trip@example.invalid"
readonly TEST_SENDER="$TEST_SENDER_NAME <$TEST_SENDER_EMAIL>"
readonly RT_DIR="$RESULTS_DIR/mail-roundtrip"
readonly RT_LOG="$RESULTS_DIR/mail-roundtrip.log"
# The control's edit of a patch: an added line of its first hunk says
# something else.
readonly CHANGE_CODE='0,/^+[^+]/s/^\(+[^+].*\)$/\1 \/* changed in the mail *\//'
# What b4 says when it could not take a whole series from a thread.
readonly B4_TROUBLE_RE='(^|[[:space:]])(WARNING|ERROR|CRITICAL):|Thread incomplete|Traceback'
# Where the posting being checked is split and taken back: $RT_DIR, or a
# control's own directory. The postings it needs are always in $RT_DIR.
work=$RT_DIR
# The commit the postings' cover letters name as base-commit: (set in
# main; for a posting to another project, its upstream commit).
base=""
# The scratch checkout the mails are taken back into, and the commit
# there that they apply to: out/linux's objects at $base; for another
# project's posting, its cached base repository's, at the import of its
# pinned tarball, whose tree is that of $base.
rt_repo=""
rt_base=""
# The last commit of each posting in out/linux, once looked up.
declare -A head_of=()

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [--self-test] [POSTING...]

The mail round trip of each posting (default: all, in order: $(all_postings | tr '\n' ' ')):

  1. scripts/submit.sh --test-sender '$TEST_SENDER'
     writes each posting's thread as make submit does and has git
     send-email deliver it into a local mbox, $RT_DIR/mails/<posting>.mbox
     (the envelope beside it, .mbox.rcpt);
  2. the thread as delivered: a cover letter '0/N' and N patches
     numbered 1..N, each with In-Reply-To: and References: of the cover
     letter's Message-Id, all Message-Ids distinct; From: the sender;
  3. recipients: on every mail, To: and Cc: are exactly the template's
     (Documentation/cover-letters/<posting>.txt) and hold every name
     scripts/get_maintainer.pl gives for the posting's patches; the
     envelope is the same set (LTP, liburing: the template is
     external/<posting>/cover-letter.txt, the names its SOURCE's
     recipients=);
  4. trailers: every patch has exactly one Signed-off-by:, the sender's,
     as its last trailer (another one only after its own
     Co-developed-by:); no mail names the repository's placeholder
     identity, or any identity at a domain that does not deliver mail
     but the test sender; the cover letter has 'base-commit:' with the
     base commit, the sentence naming its upstream version, and one
     'prerequisite-patch-id:' for each patch (as delivered) of the
     postings it needs, in order, and none else;
  5. 'b4 am -m -' takes the series back from the mbox (offline; b4 0.12
     parses a mailbox given by path with Python's compat32 policy and
     fails on a folded header, so the mbox goes in on stdin), and must
     find all N patches and the base-commit;
  6. 'git am' of b4's mbox onto a clean checkout of the base plus the
     postings it needs, each of those taken back the same way, gives the
     tree that the workbench's commits of those postings give (out/linux,
     branch $SERIES_BRANCH), and commits whose author is the sender and
     whose messages have the sender's Signed-off-by: last; applied one
     after the other in series order, the postings give the tree of the
     posting's last commit in out/linux; LTP, liburing: b4 must read the
     upstream base-commit: (SOURCE's commit=, not in the checkout: b4
     says so), and git am onto the cached import of the pinned tarball
     must give the tree the build scripts build from (external_tree:
     external/<posting>/patches/ by git am on that import), its copyright
     notices the sender's, as submit.sh makes them;
  7. the controls: three broken copies of the first posting's thread (a
     patch whose In-Reply-To: names no mail of the thread, a patch
     without its Signed-off-by:, a patch whose code differs from the
     commit) must each be refused, or the checks above prove nothing;
     and the last one of the first other project's thread (LTP).

  --self-test  1 to 6 for the first posting only, then 7

The checkout is a scratch repository in $RT_DIR that borrows
out/linux's objects (LTP, liburing: those of the cached base repository,
in $RT_DIR/<posting>/), sparse (only the files the postings touch), so
nothing of out/linux or the cache changes. The log is $RT_LOG.

Environment:
  OUT_DIR      output directory (now: $OUT_DIR)

Exit status: 0 when every check passed and every control was refused,
1 otherwise.
EOF
}

# Lines on stdin, indented under a message.
indent() {
	sed 's/^/    /'
}

# The git configuration of the round trip's git and b4: the test sender's
# identity, nothing of the user's or the system's.
rt_env() {
	GIT_CONFIG_GLOBAL="$RT_DIR/gitconfig" GIT_CONFIG_NOSYSTEM=1 "$@"
}

make_gitconfig() {
	printf '[user]\n\tname = %s\n\temail = %s\n' "$TEST_SENDER_NAME" "$TEST_SENDER_EMAIL" \
		> "$RT_DIR/gitconfig"
}

# git in the scratch checkout.
rt_git() {
	rt_env git -C "$rt_repo" "$@"
}

# The scratch repository $rt_repo borrowing the objects of the repository
# $1, checked out sparse at $rt_base with the files named on stdin.
make_checkout() {
	rm -rf "$rt_repo"
	git init -q "$rt_repo"
	realpath "$1/.git/objects" > "$rt_repo/.git/objects/info/alternates"
	sort -u | sed 's|^|/|' | rt_git sparse-checkout set --no-cone --stdin
	rt_git checkout -q --detach "$rt_base"
}

# The files the mails in the mboxes $@ touch.
mail_paths() {
	cat "$@" | sed -n 's|^diff --git a/\([^ ]*\) b/\([^ ]*\)$|\1\n\2|p'
}

# The headers of the mails split into directory $1, read once:
# hdr[<file>|<field>] is the first <field> (lower case) of <file>,
# folded lines joined; mails[] the files in order.
declare -A hdr=()
mails=()
load_headers() {
	local f n v

	hdr=()
	mails=("$1"/[0-9]*)
	while IFS=$'\t' read -r f n v; do
		[ -n "${hdr[$f|$n]+set}" ] || hdr[$f|$n]=$v
	done < <(awk '
		function flush() { if (name != "") print FILENAME "\t" name "\t" val; name = "" }
		FNR == 1 { inhdr = 1 }
		!inhdr { next }
		/^$/ { flush(); inhdr = 0; next }
		/^[ \t]/ { sub(/^[ \t]+/, " "); val = val $0; next }
		{ flush(); i = index($0, ":"); name = tolower(substr($0, 1, i - 1))
		  val = substr($0, i + 1); sub(/^[ \t]+/, "", val) }
		' "${mails[@]}")
}

# The addresses of a To:/Cc: value $1, lower case, sorted, one a line.
addr_set() {
	local IFS=, a
	local -a out=()

	for a in $1; do
		[[ $a =~ \<([^>]+)\> ]] && a=${BASH_REMATCH[1]}
		a=${a//[[:space:]]/}
		[ -z "$a" ] || out+=("${a,,}")
	done
	[ ${#out[@]} -eq 0 ] || printf '%s\n' "${out[@]}" | sort -u
}

# Split mbox $1 into directory $2, one mail a file (0001, 0002, ...), and
# load the headers.
split_mbox() {
	rm -rf "$2"
	mkdir -p "$2"
	git mailsplit --mboxrd -o"$2" "$1" >/dev/null
	load_headers "$2"
}

# The cover letter of the loaded thread: the mail whose subject is
# '[... 0/N]'; and its patches, in order.
cover=""
patches=()
companions=()
find_cover() {
	local m

	cover=""
	patches=()
	companions=()
	for m in "${mails[@]}"; do
		if [ -z "$cover" ] && [[ ${hdr[$m|subject]:-} =~ \[[^]]*\ 0/[0-9]+\] ]]; then
			cover=$m
		elif [[ ${hdr[$m|subject]:-} =~ \[[^]]*\ [0-9]+/[0-9]+\] ]]; then
			patches+=("$m")
		else
			# Another project's patch in the thread (submit.sh's
			# companions): a reply to the cover letter, not one of
			# the posting's patches.
			companions+=("$m")
		fi
	done
}

# 2: a cover letter 0/N, N patches k/N in order, each a reply to it.
check_threading() {
	local posting=$1 cover_id n k=0 m subject id ok=1

	find_cover
	[ -n "$cover" ] || { fail "$posting: no cover letter ('[PATCH 0/N]') in the thread"; return; }
	cover_id=${hdr[$cover|message-id]:-}
	[[ ${hdr[$cover|subject]} =~ \[[^]]*\ 0/([0-9]+)\] ]] && n=${BASH_REMATCH[1]}
	[ -z "${hdr[$cover|in-reply-to]:-}" ] ||
		{ fail "$posting: the cover letter is a reply to ${hdr[$cover|in-reply-to]}"; ok=0; }
	[ -n "$cover_id" ] || { fail "$posting: the cover letter has no Message-Id"; ok=0; }
	for m in "${patches[@]}"; do
		k=$((k + 1))
		subject=${hdr[$m|subject]:-}
		[[ $subject =~ \[[^]]*\ $k/$n\] ]] ||
			{ fail "$posting: mail $k of the thread is not patch $k/$n: $subject"; ok=0; }
		[ "${hdr[$m|in-reply-to]:-}" = "$cover_id" ] ||
			{ fail "$posting: patch $k/$n: In-Reply-To: '${hdr[$m|in-reply-to]:-}', not the cover letter's $cover_id"; ok=0; }
		[[ " ${hdr[$m|references]:-} " == *" $cover_id "* ]] ||
			{ fail "$posting: patch $k/$n: References: does not name the cover letter $cover_id"; ok=0; }
	done
	[ "$k" = "$n" ] || { fail "$posting: the cover letter says $n patches, the thread has $k"; ok=0; }
	for m in "${companions[@]}"; do
		[ "${hdr[$m|in-reply-to]:-}" = "$cover_id" ] ||
			{ fail "$posting: ${hdr[$m|subject]:-}: not a reply to the cover letter $cover_id"; ok=0; }
	done
	id=$(for m in "${mails[@]}"; do printf '%s\n' "${hdr[$m|message-id]:-}"; done | sort | uniq -d)
	[ -z "$id" ] || { fail "$posting: Message-Id used twice: $id"; ok=0; }
	for m in "${mails[@]}"; do
		[ "$(addr_set "${hdr[$m|from]:-}")" = "$TEST_SENDER_EMAIL" ] ||
			{ fail "$posting: mail ${m##*/} is from '${hdr[$m|from]:-}', not the sender"; ok=0; }
	done
	[ "$ok" = 0 ] || pass "$posting: threading: cover letter 0/$n, $n patches in order, each a reply to $cover_id"
}

# 3: every mail to exactly the template's To: and Cc:, which hold every
# name get_maintainer.pl gives; the envelope ($2) says the same.
check_recipients() {
	local posting=$1 rcpt=$2 template tpl gm m have missing extra env line ok=1 who
	local -A envelope=()

	find_cover
	template=$(posting_template "$posting")
	tpl=$(addr_set "$(mail_field "$template" To), $(mail_field "$template" Cc)")
	gm=$(required_recipients "$posting" "$WORKTREE" "${patches[@]}" | sort -u)
	who="get_maintainer.pl"
	! is_external "$posting" || who="external/$posting/SOURCE (recipients=)"
	missing=$(comm -23 <(printf '%s\n' "$gm" | sed '/^$/d') <(printf '%s\n' "$tpl"))
	[ -z "$missing" ] ||
		{ fail "$posting: $who names $(tr '\n' ' ' <<<"$missing")whom the template does not: add them to its To:/Cc:"; ok=0; }
	while read -r line; do
		envelope[${line%% *}]=${line#* }
	done < "$rcpt"
	for m in "${mails[@]}"; do
		have=$(addr_set "${hdr[$m|to]:-}, ${hdr[$m|cc]:-}")
		if [[ " ${companions[*]} " == *" $m "* ]]; then
			: # to its own project's people, as its source says
		elif [ "$have" != "$tpl" ]; then
			missing=$(comm -23 <(printf '%s\n' "$tpl") <(printf '%s\n' "$have"))
			extra=$(comm -13 <(printf '%s\n' "$tpl") <(printf '%s\n' "$have"))
			[ -z "$missing" ] || fail "$posting: mail ${m##*/} is not to $(tr '\n' ' ' <<<"$missing")"
			[ -z "$extra" ] || fail "$posting: mail ${m##*/} is also to $(tr '\n' ' ' <<<"$extra")(not in the template)"
			ok=0
		fi
		env=${envelope[${hdr[$m|message-id]:-}]:-}
		env=$(addr_set "${env// /,}")
		[ "$env" = "$have" ] ||
			{ fail "$posting: mail ${m##*/} went to $(tr '\n' ' ' <<<"$env")but its To:/Cc: say $(tr '\n' ' ' <<<"$have")"; ok=0; }
	done
	[ "$ok" = 0 ] || pass "$posting: recipients: every mail to the template's $(wc -l <<<"$tpl") addresses (envelope alike), the $(sed '/^$/d' <<<"$gm" | wc -l) that $who names among them"
}

# The trailers of commit message (or patch mail body up to '---') on stdin.
trailers() {
	sed '/^---$/,$d' | git interpret-trailers --parse
}

# The Signed-off-by: lines of $2 (text of one commit message's trailers)
# are right for the sender; complaints about $1.
check_signoffs() {
	local what=$1 trailer_lines=$2 me="$TEST_SENDER" prev="" line n=0

	[ "$(grep -cxF "Signed-off-by: $me" <<<"$trailer_lines")" = 1 ] ||
		{ fail "$what: $(grep -cxF "Signed-off-by: $me" <<<"$trailer_lines") Signed-off-by: of the sender, not one"; return 1; }
	[ "$(tail -1 <<<"$trailer_lines")" = "Signed-off-by: $me" ] ||
		{ fail "$what: the sender's Signed-off-by: is not the last trailer"; return 1; }
	while IFS= read -r line; do
		if [[ $line == "Signed-off-by: "* ]] && [ "$line" != "Signed-off-by: $me" ] &&
		   [ "$prev" != "Co-developed-by: ${line#Signed-off-by: }" ]; then
			fail "$what: '$line' is another Signed-off-by: without its Co-developed-by:"
			n=1
		fi
		prev=$line
	done <<<"$trailer_lines"
	return "$n"
}

# The placeholder identities of the posting's patches in $1 (their From:
# at a domain that does not deliver): names and addresses, one a line.
placeholders_of() {
	local p author

	for p in "$1"/[0-9]*.patch; do
		author=$(mail_field "$p" From)
		undeliverable "$author" || continue
		sed -E 's/^"?([^"<]*[^"<[:space:]])"?[[:space:]]*<([^>]*)>$/\1\n\2/' <<<"$author"
	done | sort -u
}

# 4: signatures, no placeholder, base and prerequisites in the cover.
check_trailers() {
	local posting=$1 placeholders m line ok=1 dep want got n
	local -a lines

	find_cover
	placeholders=$(placeholders_of "$(posting_mail_dir "$posting")")
	for m in "${patches[@]}" "${companions[@]}"; do
		check_signoffs "$posting: ${m##*/}" "$(sed '1,/^$/d' "$m" | trailers)" || ok=0
	done
	if [ -n "$placeholders" ]; then
		while read -r m; do
			fail "$posting: mail ${m##*/} names the placeholder $(grep -oiF -- "$placeholders" "$m" | sort -u | tr '\n' ' ')"
			ok=0
		done < <(grep -liF -- "$placeholders" "${mails[@]}" || true)
	fi
	while read -r line; do
		[[ ${line,,} == *"<$TEST_SENDER_EMAIL>"* ]] && continue
		fail "$posting: mail ${line%%: *} names '${line#*: }', at a domain that does not deliver mail"
		ok=0
	done < <(for m in "${mails[@]}"; do
			{ printf '%s\n' "From: ${hdr[$m|from]:-}" "To: ${hdr[$m|to]:-}" "Cc: ${hdr[$m|cc]:-}"
			  sed '1,/^$/d' "$m" | sed '/^---$/,$d' | grep -E '^[A-Za-z-]+-by: ' || true; } |
				sed -nE 's/^(From|To|Cc|[A-Za-z-]+-by):[[:space:]]*//Ip' | tr ',' '\n' |
				sed "s|^[[:space:]]*|${m##*/}: |"
		 done | grep -Ei "$UNDELIVERABLE_RE" || true)
	[ -n "$cover" ] || return 0
	mapfile -t lines < <(grep -E '^(base-commit|prerequisite-patch-id): ' "$cover")
	if [ "${lines[0]:-}" != "base-commit: $base" ] || [ "$(grep -c '^base-commit: ' "$cover")" != 1 ]; then
		fail "$posting: the cover letter's base-commit: is not one line 'base-commit: $base' ahead of its prerequisite-patch-id: lines"
		ok=0
	fi
	want=$(posting_base_description "$posting")
	want=${want%%$'\n'*}
	[ -z "$want" ] || grep -qxF -- "$want" "$cover" ||
		{ fail "$posting: the cover letter does not name the base's upstream version ('$want')"; ok=0; }
	want=""
	for dep in $(posting_prereqs "$posting"); do
		[ -d "$RT_DIR/split/$dep" ] || { fail "$posting needs $dep, whose thread was not delivered"; ok=0; continue; }
		for m in "$RT_DIR/split/$dep"/[0-9]*; do
			[ -n "$(git patch-id --stable < "$m")" ] || continue
			want+="prerequisite-patch-id: $(git patch-id --stable < "$m" | cut -d' ' -f1)"$'\n'
		done
	done
	want=${want%$'\n'}
	got=$(printf '%s\n' "${lines[@]:1}")
	n=$(sed '/^$/d' <<<"$want" | wc -l)
	[ "$got" = "$want" ] ||
		{ fail "$posting: the cover letter's prerequisite-patch-id: lines are not those of the delivered patches of $(posting_prereqs "$posting" | tr '\n' ' ')(got $(sed '/^$/d' <<<"$got" | wc -l), want $n)"; ok=0; }
	[ "$ok" = 0 ] || pass "$posting: trailers: one Signed-off-by: of the sender, last, in every patch; no placeholder; base-commit: and $n prerequisite-patch-id: lines as expected"
}

# 5: b4 am of the mbox $2 (offline, on stdin) into $work/b4/$1.mbx, run
# in the scratch checkout so that b4 finds the base commit.
# The thread's cover letter and patches as an mbox (mboxrd), without its
# companions, which are for another project's tree.
posting_mbox() {
	local m

	for m in "$cover" "${patches[@]}"; do
		printf 'From mboxrd@z Thu Jan  1 00:00:00 1970\n'
		sed 's/^>*From />&/' "$m"
		printf '\n'
	done
}

take_back() {
	local posting=$1 mbox=$2 n=$3 out said

	mkdir -p "$work/b4" "$RT_DIR/xdg"
	rm -f "$work/b4/$posting".*
	if ! out=$(cd "$rt_repo" && XDG_DATA_HOME="$RT_DIR/xdg" XDG_CACHE_HOME="$RT_DIR/xdg" \
		   XDG_CONFIG_HOME="$RT_DIR/xdg" rt_env b4 --offline-mode am -m - -o "$work/b4" -n "$posting" < "$mbox" 2>&1); then
		fail "$posting: b4 am failed:"
		indent <<<"$out" >&2
		return 1
	fi
	printf '%s\n' "$out" > "$work/b4/$posting.log"
	if grep -Eq "$B4_TROUBLE_RE" <<<"$out" || ! grep -q "^Total patches: $n\$" <<<"$out" ||
	   [ ! -s "$work/b4/$posting.mbx" ]; then
		fail "$posting: b4 am did not take the $n patches back cleanly:"
		indent <<<"$out" >&2
		return 1
	fi
	# Another project's upstream base commit is not in the checkout, which
	# has the import of its tarball: b4 must have read it, as a
	# maintainer's b4 would, and can only say it does not know it.
	said="using specified base-commit ${base:0:12}"
	is_external "$posting" && ! rt_git cat-file -e "$base^{commit}" 2>/dev/null &&
		said="base-commit ${base:0:12}[0-9a-f]* not known"
	grep -Eq "Base: $said" <<<"$out" ||
		{ fail "$posting: b4 did not read the cover letter's base-commit: (want 'Base: $said')"; indent <<<"$out" >&2; return 1; }
	pass "$posting: b4 am took back $n patches, on base-commit ${base:0:12} (b4: '$(grep -Eo "Base: $said" <<<"$out")')"
}

# The postings applied in the scratch checkout since the base, in order.
applied=()

# Make the checkout the base plus postings $@ (b4's mboxes in $RT_DIR),
# going on from what is applied when that is where they start.
apply_postings() {
	local -a needed=("$@")
	local posting i=0

	while [ "$i" -lt "${#applied[@]}" ] && [ "$i" -lt "${#needed[@]}" ] &&
	      [ "${applied[i]}" = "${needed[i]}" ]; do
		i=$((i + 1))
	done
	if [ "$i" -lt "${#applied[@]}" ]; then
		rt_git reset -q --hard "$base"
		applied=()
		i=0
	fi
	for posting in "${needed[@]:i}"; do
		[ -s "$RT_DIR/b4/$posting.mbx" ] || { fail "$posting was not taken back"; return 1; }
		apply_mbx "$posting" "$RT_DIR" || { applied=(_); return 1; }
		applied+=("$posting")
	done
}

# git am of b4's mbox of posting $1 (in directory $2) onto the checkout's HEAD.
apply_mbx() {
	local out

	if ! out=$(rt_git am -q "$2/b4/$1.mbx" 2>&1); then
		rt_git am --abort >/dev/null 2>&1 || true
		fail "$1: git am of b4's mbox failed:"
		indent <<<"$out" >&2
		return 1
	fi
}

# The tree that base plus the workbench's commits of postings $@ (in the
# order of series) gives, into $rebuilt_tree, built in a scratch index
# that goes on from the postings it holds when they are where $@ starts;
# a patch that does not apply means the postings named are not enough.
rebuilt=()
rebuilt_tree=""
rebuild_tree() {
	local -a needed=("$@")
	local idx="$RT_DIR/index" posting prev c i=0

	while [ "$i" -lt "${#rebuilt[@]}" ] && [ "$i" -lt "${#needed[@]}" ] &&
	      [ "${rebuilt[i]}" = "${needed[i]}" ]; do
		i=$((i + 1))
	done
	if [ "$i" -lt "${#rebuilt[@]}" ] || [ ! -f "$idx" ]; then
		GIT_INDEX_FILE=$idx git -C "$WORKTREE" read-tree "$base"
		rebuilt=()
		i=0
	fi
	for posting in "${needed[@]:i}"; do
		prev=$base
		for c in $(postings); do
			[ "$c" = "$posting" ] && break
			prev=$(last_commit "$c")
		done
		for c in $(git -C "$WORKTREE" rev-list --reverse "$prev..$(last_commit "$posting")"); do
			if ! git -C "$WORKTREE" diff --binary --full-index "$c^" "$c" |
			     GIT_INDEX_FILE=$idx git -C "$WORKTREE" apply --cached; then
				log "error: $(git -C "$WORKTREE" log -1 --format='%h %s' "$c") does not apply without the postings before it that are not named"
				rm -f "$idx"
				return 1
			fi
		done
		rebuilt+=("$posting")
	done
	rebuilt_tree=$(GIT_INDEX_FILE=$idx git -C "$WORKTREE" write-tree)
}

# The postings before posting $1 in series, one a line.
earlier_postings() {
	postings | sed "/^$1\$/,\$d"
}

# The last $2 commits of the checkout, posting $1's: by the sender, and
# signed off by the sender last.
check_commits() {
	local posting=$1 n=$2 c msg rc=0

	for c in $(rt_git rev-list --reverse -n "$n" HEAD); do
		[ "$(rt_git log -1 --format='%an <%ae>' "$c")" = "$TEST_SENDER" ] ||
			{ fail "$posting: commit '$(rt_git log -1 --format=%s "$c")' is by $(rt_git log -1 --format='%an <%ae>' "$c"), not the sender"; rc=1; }
		msg=$(rt_git log -1 --format=%B "$c")
		check_signoffs "$posting: commit '$(rt_git log -1 --format=%s "$c")'" "$(trailers <<<"$msg")" || rc=1
	done
	return "$rc"
}

# 6 for another project's posting $1: b4's mbox onto the import of its
# pinned tarball gives the tree its build script builds from, which
# external_tree (lib.sh) makes as the build does: external/$1/patches/
# applied by git am onto the cached base repository; with the copyright
# notices of the placeholder the sender's, as submit.sh makes them, and
# nothing else changed.
check_applied_external() {
	local suite=$1 n=$2 want got out ok=1 wb="$RT_DIR/$1/workbench" takeover f blob
	local idx="$RT_DIR/$1/takeover-index"
	local -a files

	rt_git reset -q --hard "$rt_base"
	apply_mbx "$suite" "$work" || return 0
	got=$(rt_git rev-parse 'HEAD^{tree}')
	if ! out=$( (external_tree "$wb" "$suite" "$(external_base_dir "$suite")") 2>&1); then
		fail "$suite: the build scripts' tree could not be made:"
		indent <<<"$out" >&2
		return 0
	fi
	takeover=$(copyright_takeover "" "$(placeholder_identities "$(posting_mail_dir "$suite")")" "$TEST_SENDER")
	# The files the posting adds or changes that hold a copyright notice.
	mapfile -t files < <(git -C "$wb" diff --name-only -z base HEAD |
		xargs -0 -r git -C "$wb" grep -l -F -i copyright -- 2>/dev/null || true)
	# Edited in an index of its own: the work tree stays what the build
	# scripts made, for the next call of external_tree.
	GIT_INDEX_FILE=$idx git -C "$wb" read-tree HEAD
	for f in "${files[@]}"; do
		[ -n "$takeover" ] || break
		blob=$(git -C "$wb" show "HEAD:$f" | sed -e "$takeover" | git -C "$wb" hash-object -w --stdin)
		GIT_INDEX_FILE=$idx git -C "$wb" update-index --cacheinfo \
			"$(git -C "$wb" ls-files -s -- "$f" | cut -d' ' -f1),$blob,$f"
	done
	want=$(GIT_INDEX_FILE=$idx git -C "$wb" write-tree)
	if [ "$got" != "$want" ]; then
		fail "$suite: the tree taken back by mail differs from the one the build scripts build from:"
		GIT_ALTERNATE_OBJECT_DIRECTORIES="$rt_repo/.git/objects" git -C "$wb" diff --stat "$want" "$got" | indent >&2
		ok=0
	fi
	check_commits "$suite" "$n" || ok=0
	[ "$ok" = 0 ] || pass "$suite: git am onto its pinned tarball (${rt_base:0:12}, the files of upstream ${base:0:12}) gives the tree the build scripts build from ($(git -C "$wb" rev-parse --short=12 'HEAD^{tree}'))$([ "$want" = "$(git -C "$wb" rev-parse 'HEAD^{tree}')" ] || echo ", its copyright notices the sender's: ${want:0:12}"); $n commits by the sender, signed off last"
}

# 6, alone: posting $1 onto the base and its prerequisites, all taken back.
check_applied() {
	local posting=$1 n=$2 want got ok=1
	local -a deps

	if is_external "$posting"; then
		check_applied_external "$posting" "$n"
		return
	fi
	mapfile -t deps < <(posting_prereqs "$posting")
	apply_postings "${deps[@]}" || return 0
	if [ "$work" = "$RT_DIR" ]; then
		apply_postings "${deps[@]}" "$posting" || return 0
	else
		apply_mbx "$posting" "$work" || return 0
		# Not what $RT_DIR/b4 has: start anew next time.
		applied=(_)
	fi
	got=$(rt_git rev-parse 'HEAD^{tree}')
	# What the workbench's commits give: with every posting before it, the
	# tree of its last commit; else base plus those commits, rebuilt.
	if [ "$(posting_prereqs "$posting")" = "$(earlier_postings "$posting")" ]; then
		want=$(git -C "$WORKTREE" rev-parse "$(last_commit "$posting")^{tree}")
	elif rebuild_tree "${deps[@]}" "$posting"; then
		want=$rebuilt_tree
	else
		fail "$posting: the workbench's commits of it and of what it needs (${deps[*]}) do not make a tree"
		return
	fi
	if [ "$got" != "$want" ]; then
		fail "$posting: the tree taken back by mail differs from the workbench's:"
		git -C "$WORKTREE" diff --stat "$want" "$got" | indent >&2
		ok=0
	fi
	check_commits "$posting" "$n" || ok=0
	[ "$ok" = 0 ] || pass "$posting: git am onto the base$(posting_prereqs "$posting" | sed 's/^/ + /' | tr -d '\n') gives the workbench's tree ${want:0:12}; $n commits by the sender, signed off last"
}

# 6, in series order: each posting on all those before it gives the tree
# of its last commit in out/linux.
check_chain() {
	local posting ok=1 n=0

	for posting in "$@"; do
		apply_postings "${@:1:$((++n))}" || return 0
		[ "$(rt_git rev-parse 'HEAD^{tree}')" = "$(git -C "$WORKTREE" rev-parse "$(last_commit "$posting")^{tree}")" ] ||
			{ fail "chain: after $posting the tree is not that of $(git -C "$WORKTREE" log -1 --format='%h %s' "$(last_commit "$posting")")"; ok=0; }
	done
	[ "$ok" = 0 ] || pass "chain: $* applied one after another from the mails give out/linux's trees, up to $(git -C "$WORKTREE" rev-parse --short=12 "$(last_commit "$posting")")"
}

# The last commit of posting $1 in out/linux (posting_head), all looked up
# at once: the postings' commits follow the base in the order of series.
last_commit() {
	local -a commits
	local posting n=0

	if [ ${#head_of[@]} -eq 0 ]; then
		mapfile -t commits < <(git -C "$WORKTREE" rev-list --reverse "$base..$(postings_head)")
		for posting in $(postings); do
			n=$((n + $(posting_patches "$posting" | wc -l)))
			head_of[$posting]=${commits[n - 1]:-}
		done
	fi
	[ -n "${head_of[$1]:-}" ] || die "no commits of posting $1 in $WORKTREE: run 'make tree'"
	printf '%s\n' "${head_of[$1]}"
}

# 2 to 6 for posting $1 whose thread is the mbox $2 (envelope $2.rcpt).
round_trip() {
	local posting=$1 mbox=$2

	split_mbox "$mbox" "$work/split/$posting"
	find_cover
	check_threading "$posting"
	check_recipients "$posting" "$mbox.rcpt"
	check_trailers "$posting"
	posting_mbox > "$work/$posting.posting.mbox"
	take_back "$posting" "$work/$posting.posting.mbox" "${#patches[@]}" || return 0
	check_applied "$posting" "${#patches[@]}"
}

# 7: a copy of thread $2 of posting $1, its patch number $3 broken by sed
# program $4, must fail check $7 (threading, trailers or tree) with a
# message matching $5; $6 says what the control is.
control() {
	local posting=$1 mbox=$2 k=$3 edit=$4 want=$5 what=$6 check=$7 dir="$RT_DIR/control" out m

	rm -rf "$dir"
	split_mbox "$mbox" "$dir/split/$posting"
	find_cover
	sed -i -e "$edit" "${patches[k - 1]}"
	for m in "${mails[@]}"; do
		printf 'From control@example.invalid Thu Jan  1 00:00:00 1970\n'
		sed -E 's/^(>*From )/>\1/' "$m"
		printf '\n'
	done > "$dir/$posting.mbox"
	# In a subshell: the control's failures are what it is for, not ours.
	out=$( (work=$dir
		split_mbox "$dir/$posting.mbox" "$dir/split/$posting"
		find_cover
		case "$check" in
		threading) check_threading "$posting" ;;
		trailers) check_trailers "$posting" ;;
		tree) take_back "$posting" "$dir/$posting.mbox" "${#patches[@]}" &&
			check_applied "$posting" "${#patches[@]}" ;;
		esac) 2>&1 || true)
	if grep -q "FAIL: .*$want" <<<"$out"; then
		pass "control: $what is refused: $(grep -m1 "FAIL: .*$want" <<<"$out" | sed 's/.*FAIL: //')"
	else
		fail "control: $what was not refused; the round trip said:"
		indent <<<"$out" >&2
	fi
}

# 7 on posting $1, whose round trip passed, from its mbox $2.
controls() {
	local posting=$1 mbox=$2

	control "$posting" "$mbox" 1 's/^\(In-Reply-To: <\)/\1broken-/' \
		"In-Reply-To: '<broken-" "a patch replying to no mail of the thread" threading
	control "$posting" "$mbox" 1 "/^Signed-off-by: $TEST_SENDER_NAME /d" \
		"0 Signed-off-by: of the sender" "a patch without its Signed-off-by:" trailers
	control "$posting" "$mbox" 1 "$CHANGE_CODE" \
		"tree taken back by mail differs" "a patch whose code is not the commit's" tree
}

# Make the scratch checkout of another project's posting $1, whose base
# commit is its upstream one: its cached base repository at the import of
# the pinned tarball; false when that repository is not made yet.
external_checkout() {
	local suite=$1 repo

	repo=$(external_base_dir "$suite")
	base=$(posting_base "$suite")
	rt_repo="$RT_DIR/$suite/repo"
	# Made once, as the build script makes it (no kernel needed).
	git -C "$repo" rev-parse -q --verify 'base^{commit}' >/dev/null 2>&1 ||
		"$(dirname "$0")/build-$suite-tests.sh" --base >/dev/null ||
		{ fail "$suite: no base repository $repo, and scripts/build-$suite-tests.sh --base could not make it"; return 1; }
	rt_base=$(git -C "$repo" rev-parse 'base^{commit}')
	mail_paths "$RT_DIR/mails/$suite.mbox" | make_checkout "$repo"
}

main() {
	local posting self_test=0 first="" scripts_dir kernel_base=""
	local -a todo=() delivered=() kernel=()
	local -A wanted=()

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	--self-test) self_test=1; shift ;;
	esac
	command -v b4 >/dev/null || die "b4 is not installed: run scripts/install-deps.sh (Debian: b4)"
	for posting in "$@"; do
		grep -qxF "$posting" <<<"$(all_postings)" ||
			die "no posting '$posting' in series or external/ (postings: $(all_postings | tr '\n' ' '))"
	done
	mkdir -p "$RESULTS_DIR"
	: > "$RT_LOG"
	exec 2> >(tee -a "$RT_LOG" >&2)
	[ $# -gt 0 ] || mapfile -t todo < <(all_postings)
	[ $# -eq 0 ] || todo=("$@")
	[ "$self_test" = 0 ] || todo=("$(postings | sed -n 1p)")
	# What the postings asked for need: delivered and taken back first.
	for posting in "${todo[@]}"; do
		wanted[$posting]=1
		for first in $(posting_prereqs "$posting"); do
			wanted[$first]=1
		done
	done
	for posting in $(all_postings); do
		[ -z "${wanted[$posting]:-}" ] || delivered+=("$posting")
		[ -z "${wanted[$posting]:-}" ] || is_external "$posting" || kernel+=("$posting")
	done
	if [ ${#kernel[@]} -gt 0 ]; then
		need_worktree
		kernel_base=$(base_commit)
	fi
	rm -rf "$RT_DIR"
	mkdir -p "$RT_DIR"
	make_gitconfig
	scripts_dir=$(dirname "$0")
	"$scripts_dir/submit.sh" --test-sender "$TEST_SENDER" -o "$RT_DIR/mails" "${delivered[@]}" ||
		die "scripts/submit.sh could not write and deliver the threads (above)"
	if [ ${#kernel[@]} -gt 0 ]; then
		base=$kernel_base rt_base=$kernel_base rt_repo="$RT_DIR/repo"
		{ git -C "$WORKTREE" diff --name-only "$base" "$(postings_head)"
		  for posting in "${kernel[@]}"; do mail_paths "$RT_DIR/mails/$posting.mbox"; done
		} | make_checkout "$WORKTREE"
		last_commit "${kernel[0]}" >/dev/null
	fi
	for posting in "${delivered[@]}"; do
		if is_external "$posting"; then
			external_checkout "$posting" || continue
		else
			base=$kernel_base rt_base=$kernel_base rt_repo="$RT_DIR/repo"
		fi
		round_trip "$posting" "$RT_DIR/mails/$posting.mbox"
	done
	base=$kernel_base rt_base=$kernel_base rt_repo="$RT_DIR/repo"
	[ "$self_test" = 1 ] || [ ${#kernel[@]} -eq 0 ] || check_chain "${kernel[@]}"
	if [ "$failures" -ne 0 ]; then
		fail "controls not run: the round trip itself failed"
	else
		[ ${#kernel[@]} -eq 0 ] || controls "${kernel[0]}" "$RT_DIR/mails/${kernel[0]}.mbox"
		# Another project's tree is compared otherwise: its own control.
		for posting in "${delivered[@]}"; do
			is_external "$posting" && external_checkout "$posting" || continue
			control "$posting" "$RT_DIR/mails/$posting.mbox" 1 "$CHANGE_CODE" \
				"tree taken back by mail differs" "a $posting patch whose code is not the commit's" tree
			break
		done
	fi
	[ "$failures" -eq 0 ] || die "$failures problem(s) in the mail round trip (log: $RT_LOG)"
	log "mail round trip of ${delivered[*]}: delivered, taken back with b4 and git am, the workbench's trees; controls refused (log: $RT_LOG)"
}

main "$@"
