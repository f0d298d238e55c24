# SPDX-License-Identifier: GPL-2.0
# Shared defaults and helpers, sourced by the scripts in this directory.
# Every path can be overridden from the environment; see README.md.

# shellcheck shell=bash

readonly REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Kept across clones and runs: the unpacked base tree and the compiler cache.
: "${EPOLL_CACHE_DIR:=${XDG_CACHE_HOME:-$HOME/.cache}/eventpoll-series}"
# Everything this checkout generates: work tree, build dirs, results.
: "${OUT_DIR:=$REPO_DIR/out}"
# Scripts remove and recreate directories below it: never the root.
OUT_DIR=$(realpath -m "$OUT_DIR")
[ "$OUT_DIR" != / ] || { echo "OUT_DIR must not be /" >&2; exit 1; }
# An existing kernel git tree to use instead of Debian's linux-source-7.3.
: "${KERNEL_TREE:=}"
# The Debian package that provides the default base tree, the suite it is
# downloaded from (empty: installed with apt, scripts/install-deps.sh) and
# the version the series was made against.
: "${BASE_PACKAGE:=linux-source-7.3}"
: "${BASE_SUITE=trixie-backports}"
: "${BASE_VERSION=7.3.4-1~bpo13+1}"
: "${JOBS:=$(nproc)}"

# The same CC on every run, or kbuild rebuilds everything.
readonly KCC="ccache gcc"

export CCACHE_DIR="${CCACHE_DIR:-$EPOLL_CACHE_DIR/ccache}"
# Clones live at different paths: make cache keys path-independent.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-/}"
export CCACHE_NOHASHDIR=1
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-8G}"

# Options of every UML build of the KUnit suite (scripts/run-kunit.sh,
# scripts/run-mutate.sh). kunit.py's UML defaults enable PCI over virtio
# without a device ID; on 6.12 that WARNs at every boot, and a WARN fails
# the run; no case needs PCI. Stack variables start as a pattern, not as
# whatever the stack held, so a use of one never set (a poll table not
# initialised, say) fails the same way on every run: config/debug.config
# does the same for the guest.
readonly KUNIT_KCONFIG_ADD=(--kconfig_add=CONFIG_UML_PCI_OVER_VIRTIO=n
			    --kconfig_add=CONFIG_INIT_STACK_ALL_PATTERN=y)

# The test guest's architecture: x86_64, or arm64 (make arm64). An arm64
# run builds in build/arm64/ and reports in results/arm64/, so that it
# and an x86_64 run coexist; stages that know only x86_64 refuse it.
: "${GUEST_ARCH:=x86_64}"
case "$GUEST_ARCH" in
x86_64)
	readonly GUEST_SUBDIR=""
	# Its kernel and programs: the host's compiler.
	readonly GUEST_CROSS=""
	;;
arm64)
	readonly GUEST_SUBDIR="/arm64"
	readonly GUEST_CROSS="aarch64-linux-gnu-"
	;;
*)
	printf '%s: error: GUEST_ARCH must be x86_64 or arm64, not %s\n' \
		"${0##*/}" "$GUEST_ARCH" >&2
	exit 1
	;;
esac
# The guest kernel's compiler, as constant across runs as KCC.
readonly GUEST_KCC="ccache ${GUEST_CROSS}gcc"

readonly WORKTREE="$OUT_DIR/linux"
readonly BUILD_DIR="$OUT_DIR/build$GUEST_SUBDIR"
readonly RESULTS_DIR="$OUT_DIR/results$GUEST_SUBDIR"
# The postings: 'series' lists <posting>/<patch> under patches/, one
# '#' section per posting, in the order they apply; each posting's cover
# letter template is Documentation/cover-letters/<posting>.txt.
: "${SERIES_FILE:=$REPO_DIR/series}"
readonly PATCHES_DIR="$REPO_DIR/patches"
readonly COVER_DIR="$REPO_DIR/Documentation/cover-letters"
# The local proof layer, applied on top of the postings, never mailed:
# proof/series lists the patches in proof/.
readonly PROOF_DIR="$REPO_DIR/proof"
: "${PROOF_SERIES:=$PROOF_DIR/series}"
# Every commit of the proof layer carries this trailer; no posted one does.
readonly PROOF_TRAILER="Proof-layer: local, not for posting"
# The branch in $WORKTREE that carries the series on top of the base.
: "${SERIES_BRANCH:=eventpoll-series}"

# Stop a stage that builds or boots only the x86_64 guest.
need_x86_64_guest() {
	[ "$GUEST_ARCH" = x86_64 ] ||
		die "this stage has an x86_64 guest only, not GUEST_ARCH=$GUEST_ARCH: unset GUEST_ARCH"
}

log() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
die() { printf '%s: error: %s\n' "${0##*/}" "$*" >&2; exit 1; }

# Entries of the quilt series file $1 (default: $SERIES_FILE), in order,
# comments and blanks dropped.
series_patches() {
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "${1:-$SERIES_FILE}"
}

# The proof layer's patch file names, in order (none without proof/series).
proof_patches() {
	[ ! -f "$PROOF_SERIES" ] || series_patches "$PROOF_SERIES"
}

# The postings, in the order they apply: the directories of the entries.
postings() {
	series_patches | sed -n 's|/.*||p' | awk '!seen[$0]++'
}

# The entries of posting $1, in order.
posting_patches() {
	series_patches | grep "^$1/"
}

# The postings that posting $1 needs applied first, as the header block of
# its cover letter template names them, one 'prerequisite-posting:
# <posting>' line each (the one place the dependencies are written).
# make export turns them into the 'prerequisite-patch-id:' lines that
# git format-patch --base writes.
posting_deps() {
	sed -n '1,/^$/ s/^prerequisite-posting:[[:space:]]*\([^[:space:]]*\)[[:space:]]*$/\1/p' \
		"$COVER_DIR/$1.txt" 2>/dev/null
}

# What posting $1 needs, its dependencies' dependencies included, in the
# order of 'series' (postings not in 'series' are left out).
posting_prereqs() {
	local -A want=()
	local todo=("$1") p d

	while [ ${#todo[@]} -gt 0 ]; do
		p=${todo[0]}
		todo=("${todo[@]:1}")
		for d in $(posting_deps "$p"); do
			[ -n "${want[$d]:-}" ] || { want[$d]=1; todo+=("$d"); }
		done
	done
	for p in $(postings); do
		[ -z "${want[$p]:-}" ] || [ "$p" = "$1" ] || printf '%s\n' "$p"
	done
}

# Header field $2 of the mail (or cover letter template) $1: the first
# one, folded lines joined.
mail_field() {
	sed -n '1,/^$/p' "$1" | sed -e ':a' -e 'N' -e '$!ba' -e 's/\n[[:space:]]\+/ /g' |
		sed -n "s/^$2: //I; T; p; q"
}

# The addresses of To:/Cc: values on stdin, one a line, lower case.
addresses() {
	tr ',' '\n' | sed -E 's/.*<([^>]+)>.*/\1/; s/^[[:space:]]+//; s/[[:space:]]+$//' |
		tr 'A-Z' 'a-z' | sed '/^$/d'
}

# Mail domains that never deliver (RFC 2606, RFC 6761): an identity there
# is a placeholder (the repository's own commits are signed by one) or a
# test identity, never a person.
readonly UNDELIVERABLE_RE='(\.(example|test|invalid|localhost|local)|@localhost|@(.*\.)?example\.(com|net|org))>?$'

# True when identity or address $1 ("Name <addr>" or addr) cannot receive mail.
undeliverable() {
	grep -Eiq "$UNDELIVERABLE_RE" <<<"$1"
}

# A sentence for a cover letter that names the upstream version of base
# commit $2 of repository $1, when the commit is a local import (as
# get-base-tree.sh makes from Debian's tarball) and so unknown upstream;
# nothing when the commit is an upstream one that base-commit: names.
base_description() {
	local subject re='^Linux ([^ ]+) [(]([^ ]+) ([^ )]+)[)]$'

	subject=$(git -C "$1" log -1 --format=%s "$2")
	if [[ $subject =~ $re ]]; then
		printf 'Based on v%s as Debian ships it (%s %s);\nbase-commit is that tree as imported into git here, not an upstream\ncommit.\n' \
			"${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}"
	fi
}

# True when commit $1 of $WORKTREE belongs to the proof layer.
is_proof_commit() {
	git -C "$WORKTREE" log -1 --format=%B "$1" | grep -qxF "$PROOF_TRAILER"
}

# The last commit of posting $1 on the branch: the postings are one run
# after the base, in the order of 'series'.
posting_head() {
	local n

	n=$(series_patches | awk -v p="$1/" 'index($0, p) == 1 { last = NR } END { print last + 0 }')
	[ "$n" -gt 0 ] || die "no posting '$1' in ${SERIES_FILE#"$REPO_DIR"/}"
	git -C "$WORKTREE" rev-list --reverse "$(base_commit)..$(postings_head)" | sed -n "${n}p"
}

# The last commit of the postings on the branch: HEAD without the proof
# layer's commits, which all come after the postings'.
postings_head() {
	local c

	for c in $(git -C "$WORKTREE" rev-list "$(base_commit)..HEAD"); do
		is_proof_commit "$c" || { printf '%s\n' "$c"; return 0; }
	done
	base_commit
}

# The commit the branch was at when apply-series.sh or export-series.sh
# last left it: commits beyond it are the user's, not yet in patches/.
readonly SERIES_HEAD_FILE="$OUT_DIR/series-head"
# Present only while the whole series is applied: a failed 'git am' removes
# it, so that no stage tests a half-applied series.
readonly SERIES_APPLIED_FILE="$OUT_DIR/series-applied"

need_branch() {
	git -C "$WORKTREE" rev-parse --verify -q "$SERIES_BRANCH" >/dev/null ||
		die "no patched tree in $WORKTREE: run 'make tree' (scripts/apply-series.sh) first"
}

need_worktree() {
	need_branch
	[ -f "$SERIES_APPLIED_FILE" ] ||
		die "the series is not fully applied in $WORKTREE (the last 'make tree' failed):" \
			"fix the patch it named, or run 'make tree' again"
}

# The branch head recorded in $SERIES_HEAD_FILE, if any.
recorded_head() {
	cat "$SERIES_HEAD_FILE" 2>/dev/null || true
}

record_head() {
	git -C "$WORKTREE" rev-parse HEAD > "$SERIES_HEAD_FILE"
}

# Check out @rev in @dir, a worktree of $WORKTREE. An existing one is
# reused, so that unchanged files keep their mtimes for incremental
# builds; one left from another clone, whose repository lacks the
# series' commits, is made anew.
worktree_at() {
	local dir=$1 rev=$2

	if [ "$(git -C "$dir" rev-parse --path-format=absolute --git-common-dir 2>/dev/null)" != \
	     "$(git -C "$WORKTREE" rev-parse --path-format=absolute --git-common-dir)" ]; then
		rm -rf "$dir"
		git -C "$WORKTREE" worktree prune
		git -C "$WORKTREE" worktree add -q --detach "$dir" "$rev"
	fi
	git -C "$dir" checkout -q -f --detach "$rev"
}

# The one worktree that the stages building another revision than
# $WORKTREE's share (the bisect build, the build matrix, the guests of
# run-guests.sh), each with its own O=: one checkout on disk instead of
# one each. Held, with a lock, from scratch_tree_at to the end of the
# process, so that two stages cannot switch it under each other.
readonly SCRATCH_TREE="$OUT_DIR/scratch"

scratch_tree_at() {
	local rev=$1

	if [ -z "${SCRATCH_LOCK_FD:-}" ]; then
		mkdir -p "$OUT_DIR"
		exec {SCRATCH_LOCK_FD}>"$SCRATCH_TREE.lock"
		flock -n "$SCRATCH_LOCK_FD" ||
			die "another stage is building in $SCRATCH_TREE: run this one when it has ended"
	fi
	worktree_at "$SCRATCH_TREE" "$rev"
}

# Point @link (a directory's path) at $SCRATCH_TREE. A worktree of its
# own from an earlier layout goes, unless it holds changes: those are
# somebody's work.
link_scratch_tree() {
	local link=$1

	[ "$(readlink "$link" 2>/dev/null)" != "$SCRATCH_TREE" ] || return 0
	if [ -d "$link" ] && [ ! -L "$link" ]; then
		[ -z "$(git -C "$link" status --porcelain 2>/dev/null)" ] ||
			die "$link has uncommitted changes: commit or move them, then run this again"
		rm -rf "$link"
		git -C "$WORKTREE" worktree prune
	fi
	ln -sfn "$SCRATCH_TREE" "$link"
}

# Make @kout an OUT_DIR that build-kernel.sh, make-initramfs.sh and
# run-qemu.sh use as they use $OUT_DIR, for the kernel at @rev: linux/ a
# worktree at @rev, whole at its commit (with @3 "shared": the scratch
# tree); base-commit copied; series-applied the number of patches in it.
kernel_out_dir() {
	local kout=$1 rev=$2 shared=${3:-}

	mkdir -p "$kout"
	if [ "$shared" = shared ]; then
		scratch_tree_at "$rev"
		link_scratch_tree "$kout/linux"
	else
		worktree_at "$kout/linux" "$rev"
	fi
	cp "$OUT_DIR/base-commit" "$kout/"
	git -C "$WORKTREE" rev-list --count "$(base_commit)..$rev" > "$kout/series-applied"
}

# The commit the series applies to, recorded by apply-series.sh.
base_commit() {
	cat "$OUT_DIR/base-commit" 2>/dev/null ||
		die "no base recorded: run 'make tree' (scripts/apply-series.sh) first"
}

# True when commit $1 of $WORKTREE changes no input of a kernel build, only
# selftests, .rst documents or MAINTAINERS: its objects are its parent's.
# (Not all of tools/: objtool runs in the build; nor Documentation/Kconfig.)
builds_as_parent() {
	! git -C "$WORKTREE" diff --name-only "$1^" "$1" |
		grep -qvE '^(tools/testing/|Documentation/.*\.rst$|MAINTAINERS$)'
}

# The statement of Makefile (or Kbuild) in dir @2 of kernel tree @1 that
# adds @3 (an object "x.o" or a subdirectory "x/") prints its variable:
# obj-y, obj-$(CONFIG_FOO), ...
makefile_var() {
	local tree=$1 dir=$2 what=$3 mk

	for mk in "$tree/$dir/Kbuild" "$tree/$dir/Makefile"; do
		[ -f "$mk" ] || continue
		# Whole file read (no early exit): a writer into the pipe
		# would die of SIGPIPE, and pipefail would say "not found".
		awk -v what="$what" '
			{ line = line $0 }
			/\\$/ { sub(/\\$/, " ", line); next }
			{ stmt = line; line = "" }
			found || stmt ~ /^[[:space:]]*#/ { next }
			stmt ~ /^[[:space:]]*[^ :+=]+[[:space:]]*[:+]?=/ {
				var = stmt; sub(/[[:space:]]*[:+]?=.*/, "", var)
				sub(/^[[:space:]]*/, "", var)
				rhs = stmt; sub(/^[^=]*=/, "", rhs)
				n = split(rhs, w, /[[:space:]]+/)
				for (i = 1; i <= n; i++)
					if (w[i] == what) { print var; found = 1 }
			}
			END { exit !found }' "$mk" && return 0
	done
	return 1
}

# True when kbuild builds file @3 (x.c) of kernel tree @1 into vmlinux for
# ARCH @2 with the .config @4: its object and each directory above it are added as obj-y or as
# obj-$(CONFIG_FOO) with FOO=y. (Asked for directly, kbuild would
# compile any x.o, built or not.)
kbuild_builds() {
	local tree=$1 arch=$2 path=$3 config=$4 srcarch dir what var opt

	case "$arch" in i386|x86_64) srcarch=x86 ;; *) srcarch=$arch ;; esac
	case "$path" in arch/*) [[ "$path" == "arch/$srcarch/"* ]] || return 1 ;; esac
	dir=${path%/*}
	what=${path##*/}
	what=${what%.c}.o
	while :; do
		var=$(makefile_var "$tree" "$dir" "$what") || return 1
		case "$var" in
		obj-y) ;;
		'obj-$(CONFIG_'*')')
			opt=${var#obj-\$(}
			grep -qx "${opt%)}=y" "$config" || return 1 ;;
		*) return 1 ;;
		esac
		# The top Kbuild adds arch/$(SRCARCH)/ and the top-level directories.
		[ "$dir" != . ] && [ "$dir" != "arch/$srcarch" ] || return 0
		what=${dir##*/}/
		case "$dir" in */*) dir=${dir%/*} ;; *) dir=. ;; esac
	done
}

# The kernel C files (not tools/) that the postings add or change.
series_c_files() {
	git -C "$WORKTREE" diff --name-only --diff-filter=AM "$(base_commit)" "$(postings_head)" -- '*.c' ':!tools/'
}

# Fail when olddefconfig dropped or changed an option that one of the
# fragments @2... asked for in the .config @1. A fragment overrides the
# ones before it, as with merge_config.sh.
verify_config() {
	local config=$1 frag line opt want bad=0
	declare -A wanted=() from=()

	shift
	for frag in "$@"; do
		while read -r line; do
			case "$line" in
			CONFIG_*=*) opt=${line%%=*}; want=${line#*=} ;;
			"# CONFIG_"*" is not set") opt=${line#\# }; opt=${opt%% *}; want=n ;;
			*) continue ;;
			esac
			wanted[$opt]=$want
			from[$opt]=${frag##*/}
		done < "$frag"
	done
	for opt in $(printf '%s\n' "${!wanted[@]}" | sort); do
		want=${wanted[$opt]}
		if [ "$want" = n ]; then
			! grep -q "^$opt=" "$config" && continue
		else
			grep -qxF "$opt=$want" "$config" && continue
		fi
		printf '  %s=%s (from %s) is "%s"\n' "$opt" "$want" "${from[$opt]}" \
			"$(grep -E "^$opt=|^# $opt is not set" "$config" || echo unset)" >&2
		bad=1
	done
	[ "$bad" -eq 0 ] || die "options above did not survive olddefconfig: fix the fragments"
}

# Checks that report each result and count the failures (lint-docs.sh,
# check-htmldocs.sh): the caller exits non-zero when $failures > 0.
failures=0
fail() { printf '%s: FAIL: %s\n' "${0##*/}" "$*" >&2; failures=$((failures + 1)); }
pass() { printf '%s: ok: %s\n' "${0##*/}" "$*" >&2; }

# Compiler, sparse, coccinelle and Sphinx messages made comparable across
# trees: "file:line[:col[-col]]:" becomes "file:", inner ":N: " and
# "line N" lose their numbers, so moved code does not count as new.
# Sorted, duplicates kept: a second copy of a warning is a new warning.
normalize_warnings() {
	sed -E -e 's/^([^: ]+):[0-9]*(:[0-9]+(-[0-9]+)?)?:/\1:/' \
		-e 's/:[0-9]+: /: /g' -e 's/line [0-9]+/line #/g' | sort
}

# Run a command with a wall-clock limit; name the stage when it is hit.
with_timeout() {
	local secs=$1 stage=$2 rc=0
	shift 2
	timeout --kill-after=10 "$secs" "$@" || rc=$?
	[ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || die "$stage: timed out after ${secs}s"
	return "$rc"
}

# The postings to other projects (external/<suite>/: LTP, liburing), each
# with its pinned source (SOURCE), cover letter template, patch mails and
# readable copies of the test files they add.
readonly EXTERNAL_DIR="$REPO_DIR/external"
readonly EXTERNAL_SUITES=(ltp liburing)
# What the build scripts install for the guest: <suite>/run and its programs.
readonly SUITES_DIR="$BUILD_DIR/suites"

# Value of key @2 in the pin file @1 (key=value lines).
pin_field() {
	local value

	value=$(sed -n "s/^$2=//p" "$1")
	[ -n "$value" ] || die "${1#"$REPO_DIR"/} has no '$2=' line"
	printf '%s\n' "$value"
}

# The patch mails of suite @1, cover letter left out, in order.
external_patches() {
	find "$EXTERNAL_DIR/$1/patches" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' \
		! -name '0000-*' | sort
}

# Every posting, the order make submit and make mail-roundtrip take them
# in: the kernel's ('series'), then those to other projects.
all_postings() {
	postings
	printf '%s\n' "${EXTERNAL_SUITES[@]}"
}

# True when posting @1 is one to another project (external/@1/).
is_external() {
	[[ " ${EXTERNAL_SUITES[*]} " == *" $1 "* ]]
}

# The mails of posting @1 (0000-cover-letter.patch first) and its cover
# letter template.
posting_mail_dir() {
	if is_external "$1"; then echo "$EXTERNAL_DIR/$1/patches"; else echo "$PATCHES_DIR/$1"; fi
}
posting_template() {
	if is_external "$1"; then echo "$EXTERNAL_DIR/$1/cover-letter.txt"; else echo "$COVER_DIR/$1.txt"; fi
}

# The commit the cover letter of posting @1 names as base-commit: the
# kernel's base (out/base-commit); for a suite, the upstream commit its
# pinned tarball was made from (SOURCE's commit=, which the build scripts
# check against the tarball's 'git archive' header).
posting_base() {
	if is_external "$1"; then pin_field "$EXTERNAL_DIR/$1/SOURCE" commit; else base_commit; fi
}

# The sentence of posting @1's cover letter before base-commit: that names
# the upstream version of its base (may be empty).
posting_base_description() {
	local pin="$EXTERNAL_DIR/$1/SOURCE" debian=""

	if ! is_external "$1"; then
		base_description "$WORKTREE" "$(base_commit)"
		return
	fi
	! grep -q '^debian_source=' "$pin" ||
		debian=", as Debian ships it ($(pin_field "$pin" debian_source) $(pin_field "$pin" debian_version))"
	printf 'Based on %s %s%s;\nbase-commit is that upstream commit (%s).\n' \
		"$(pin_field "$pin" project)" "$(pin_field "$pin" describe)" "$debian" "$(pin_field "$pin" url)"
}

# The addresses, one a line, lower case, that must be among the To: and
# Cc: of posting @1, whose patch mails are @3...: for the kernel's, what
# get_maintainer.pl of the kernel tree @2 names; for a suite's, which has
# no such script, the recipients= its SOURCE says its project asks for.
required_recipients() {
	local posting=$1 ksrc=$2

	shift 2
	if is_external "$posting"; then
		pin_field "$EXTERNAL_DIR/$posting/SOURCE" recipients | addresses
	elif [ -x "$ksrc/scripts/get_maintainer.pl" ]; then
		(cd "$ksrc" && ./scripts/get_maintainer.pl --no-rolestats --nogit \
			--nogit-fallback --no-keywords "$@" 2>/dev/null) | addresses
	fi
}

# The placeholder identities that author mails in directory @1, as their
# From: says them ("Name <addr>"), one a line.
placeholder_identities() {
	local p from

	for p in "$1"/[0-9]*.patch; do
		from=$(mail_field "$p" From)
		! undeliverable "$from" || printf '%s\n' "$from"
	done | sort -u
}

# A sed program that makes each copyright notice naming one of the
# placeholder identities @2 (placeholder_identities) the sender @3's
# ("Name <addr>"), in the lines matching @1: '^[+]' for the lines a patch
# adds, '' for a file's. LTP asks each new test for its author's
# copyright; the sender, the author of the whole posting, takes it over as
# they take over From: and Signed-off-by: (submit.sh, check-mail.sh).
copyright_takeover() {
	local id old new

	new=$(sed 's/[\\&|]/\\&/g' <<<"$3")
	while read -r id; do
		[ -n "$id" ] || continue
		old=$(sed 's/[][\\.*^$|/]/\\&/g' <<<"$id")
		printf '/%sCopyright/ s|%s|%s|g\n' "${1:+$1.*}" "$old" "$new"
	done <<<"$2"
}

# The git repository of suite @1's pinned tarball in the cache (made by
# external_base_repo from the build script), its commit tagged 'base'.
external_base_dir() {
	local pin="$EXTERNAL_DIR/$1/SOURCE"

	case "$1" in
	ltp) echo "$EPOLL_CACHE_DIR/$1-$(pin_field "$pin" commit | cut -c1-12)" ;;
	liburing) echo "$EPOLL_CACHE_DIR/$1-$(pin_field "$pin" version)" ;;
	*) die "no external suite '$1'" ;;
	esac
}

# Fail unless the tarball @1 is 'git archive' of the commit suite @2's
# SOURCE pins (the commit its pax header names), so that base-commit:
# names upstream's commit of the tree the build unpacks.
check_tarball_commit() {
	local tarball=$1 want have

	want=$(pin_field "$EXTERNAL_DIR/$2/SOURCE" commit)
	have=$(case "$tarball" in
		*.xz) xz -dc "$tarball" ;;
		*.gz) gzip -dc "$tarball" ;;
		*) cat "$tarball" ;;
		esac 2>/dev/null | git get-tar-commit-id 2>/dev/null || true)
	[ "$have" = "$want" ] ||
		die "${tarball##*/} is 'git archive' of ${have:-no commit}, not of external/$2/SOURCE's commit=$want"
}

# Make @1 a git repository of the tarball @2 (its top directory
# stripped), one commit tagged 'base', unless it is one already.
external_base_repo() {
	local repo=$1 tarball=$2 tmp

	git -C "$repo" rev-parse -q --verify 'base^{commit}' >/dev/null 2>&1 && return 0
	tmp="$repo.new.$$"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	tar -xf "$tarball" -C "$tmp" --strip-components=1
	git -C "$tmp" init -q
	# Upstream's .gitignore files match some files the tarball holds.
	git -C "$tmp" add -f -A
	git -C "$tmp" -c user.name=base -c user.email=base@localhost \
		commit -q -m "${tarball##*/}"
	git -C "$tmp" tag base
	rm -rf "$repo"
	mv "$tmp" "$repo"
}

# The work tree @1 of suite @2: a shared clone of the base repo @3 with
# the suite's patches applied by 'git am' on branch 'posting'. Left as it
# is when the patches and the branch are what the last call made, so a
# rebuild is incremental; refused when it holds work not yet exported
# (scripts/export-external.sh), unless FORCE=1.
external_tree() {
	local src=$1 suite=$2 base=$3 stamp patches want have

	stamp="$src/.git/posting-stamp"
	mapfile -t patches < <(external_patches "$suite")
	[ "${#patches[@]}" -gt 0 ] || die "no patches in external/$suite/patches/"
	want=$(cat "${patches[@]}" | sha256sum | cut -d' ' -f1)
	if [ -d "$src/.git" ]; then
		have=$(cat "$stamp" 2>/dev/null || true)
		if [ "$have" = "$want $(git -C "$src" rev-parse HEAD)" ] &&
		   [ -z "$(git -C "$src" status --porcelain --untracked-files=no)" ]; then
			return 0
		fi
		if [ "${FORCE:-}" != 1 ] &&
		   { [ -n "$(git -C "$src" status --porcelain --untracked-files=no)" ] ||
		     [ "${have#* }" != "$(git -C "$src" rev-parse HEAD)" ]; }; then
			die "$src holds changes or commits not in external/$suite/patches/:" \
				"run 'scripts/export-external.sh $suite' to keep them, or FORCE=1 to drop them"
		fi
	else
		rm -rf "$src"
		git clone -q --shared --no-checkout "$base" "$src"
	fi
	# Build products stay: files the mails do not touch keep their
	# mtimes, so the build after new mails is incremental.
	git -C "$src" checkout -q -f -B posting base
	git -C "$src" -c user.name=workbench -c user.email=workbench@localhost \
		am -q --committer-date-is-author-date "${patches[@]}" ||
		{ git -C "$src" am --abort 2>/dev/null || true
		  die "external/$suite/patches/ do not apply to the base with 'git am'"; }
	printf '%s %s\n' "$want" "$(git -C "$src" rev-parse HEAD)" > "$stamp"
}

# Install the guest runner of suite @1 into @2 as 'run': @3 is the exit
# code that means skipped, @4 the list of '<name> <command>' lines.
install_suite_runner() {
	local suite=$1 dest=$2 skip_rc=$3

	sed -e "s/@SUITE@/$suite/g" -e "s/@SKIP_RC@/$skip_rc/g" \
		"$REPO_DIR/guest/suite-run" > "$dest/run"
	chmod 0755 "$dest/run"
	printf '%s\n' "$4" > "$dest/tests"
}

# The words @3... in an order drawn from seed @1 and tag @2: the same seed
# and tag give the same order on every run and every host (make bench's
# boots and variants, scripts/run-bench-native.sh's rounds).
seeded_shuffle() {
	python3 -c 'import random, sys
r = random.Random(sys.argv[1] + ":" + sys.argv[2])
w = sys.argv[3:]
r.shuffle(w)
print(" ".join(w))' "$@"
}
