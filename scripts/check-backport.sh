#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Prove that the fixes posting applies to and builds on the stable trees,
# and that the KUnit test passes there.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

# The stable trees, as Debian ships their source (linux-source-<version>).
: "${BACKPORT_TREES:=6.12 6.1}"
# The posting whose patches go to stable.
readonly FIXES_POSTING=fixes
readonly BP_LOG_DIR="$RESULTS_DIR/backport"
# What fs/eventpoll.c needs to be built, on top of tinyconfig.
readonly BP_CONFIG=(EPOLL PM_SLEEP SUSPEND)
: "${KUNIT_TIMEOUT:=900}"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [--kunit] [VERSION...]

For each stable tree VERSION (default: $BACKPORT_TREES), Debian's
linux-source-VERSION (installed by scripts/install-deps.sh, unpacked once
into \$EPOLL_CACHE_DIR as scripts/get-base-tree.sh does):

  1. 'git am' the patches of the '$FIXES_POSTING' posting, in order, in a
     clone under \$OUT_DIR/backport/VERSION; where stable/VERSION/ has a
     version of a fix of its own (same name without the number), that one
     instead, whose changelog must be the posting's plus only a
     '# VERSION.x' after Cc: stable and a '[ ... ]' backport note;
  2. after each, build fs/eventpoll.o (x86_64, tinyconfig plus
     ${BP_CONFIG[*]}, W=1): no warning the unpatched tree lacks;
  3. with --kunit, where stable/VERSION/kunit/ exists: apply its
     test-only prerequisites, then the posted patch that adds the KUnit
     test, unchanged, and run it on UML with kunit.py: every case passes.

A fix that needs another patch to apply or to build fails here. Logs go
to $BP_LOG_DIR/. make check runs 1 and 2; make backport adds 3.

Environment:
  BACKPORT_TREES  the stable versions (now: $BACKPORT_TREES)
  OUT_DIR, JOBS   as for the other scripts

Exit status: 0 when every fix applies and builds cleanly (and the KUnit
test passes), 1 otherwise.
EOF
}

# The changelog of mail @1 (subject and body), without the '[PATCH ...]'
# prefix, the backport note and the version after Cc: stable.
changelog() {
	git mailinfo /dev/null /dev/null <"$1" | sed -n 's/^Subject: //p'
	git mailinfo "$2" /dev/null <"$1" >/dev/null
	sed -e '/^\[ /,/\]$/d' -e 's/^\(Cc: stable@vger.kernel.org\) #.*/\1/' "$2"
}

# The mail to apply for posted patch @2 on tree @1: stable/@1/'s own
# version if it has one (checked against the posted changelog), else it.
backport_of() {
	local version=$1 p=$2 own tmp="$OUT_DIR/backport/msg"

	own="$REPO_DIR/stable/$version/$(sed -E 's/^[0-9]{4}-//' <<<"${p##*/}")"
	if [ ! -f "$own" ]; then
		printf '%s\n' "$PATCHES_DIR/$p"
		return
	fi
	changelog "$PATCHES_DIR/$p" "$tmp.series" >"$tmp.series.log"
	changelog "$own" "$tmp.own" >"$tmp.own.log"
	diff -q "$tmp.series.log" "$tmp.own.log" >/dev/null ||
		die "${own#"$REPO_DIR"/}: its changelog differs from $p's (beyond the backport note): $(diff "$tmp.series.log" "$tmp.own.log" | grep -m1 '^[<>]')"
	printf '%s\n' "$own"
}

# The posted patch that adds the KUnit test.
kunit_patch() {
	local p

	while read -r p; do
		grep -q '^+++ b/fs/tests/eventpoll_kunit.c$' "$PATCHES_DIR/$p" &&
			grep -q '^new file mode' "$PATCHES_DIR/$p" &&
			{ printf '%s\n' "$p"; return 0; }
	done < <(series_patches)
	return 1
}

am() {
	git -C "$tree" -c user.name=check-backport -c user.email=check-backport@localhost \
		am -q "$1" >>"$log" 2>&1 || {
		git -C "$tree" am --abort >/dev/null 2>&1 || true
		die "${1#"$REPO_DIR"/} does not apply to linux-source-$version: see $log"
	}
}

bpmake() {
	make -C "$tree" O="$build" ARCH=x86_64 CC="$KCC" -j"$JOBS" "$@" </dev/null
}

build_warnings() {
	touch "$tree/fs/eventpoll.c"
	bpmake W=1 fs/eventpoll.o 2>&1 | tee -a "$log" |
		grep -E '(warning|error):' | normalize_warnings || true
}

# One stable tree: apply and build the fixes, then (with @2 = 1) KUnit.
check_tree() {
	local version=$1 kunit=$2 info repo base p mail before after opt n=0
	local tree="$OUT_DIR/backport/$version/linux" build="$BUILD_DIR/backport-$version"
	local log="$BP_LOG_DIR/$version.log"

	: > "$log"
	info=$(KERNEL_TREE='' BASE_PACKAGE="linux-source-$version" BASE_SUITE='' BASE_VERSION='' \
	       "$REPO_DIR/scripts/get-base-tree.sh") ||
		die "no linux-source-$version tree: run 'make deps' (scripts/install-deps.sh)"
	repo=$(sed -n 1p <<<"$info")
	base=$(sed -n 2p <<<"$info")
	[ -d "$tree/.git" ] || { mkdir -p "${tree%/*}"; git clone -q --shared --no-checkout "$repo" "$tree"; }
	git -C "$tree" am --abort >/dev/null 2>&1 || true
	git -C "$tree" checkout -q -f -B stable "$base"

	mkdir -p "$build"
	bpmake -s tinyconfig >>"$log" 2>&1
	for opt in "${BP_CONFIG[@]}"; do
		"$tree/scripts/config" --file "$build/.config" -e "$opt"
	done
	bpmake -s olddefconfig >>"$log" 2>&1
	for opt in "${BP_CONFIG[@]}"; do
		grep -qx "CONFIG_$opt=y" "$build/.config" ||
			die "CONFIG_$opt did not survive olddefconfig in linux-source-$version"
	done
	before=$(build_warnings)

	while read -r p; do
		mail=$(backport_of "$version" "$p")
		am "$mail"
		after=$(build_warnings)
		[ -f "$build/fs/eventpoll.o" ] && ! grep -q ' error:' <<<"$after" ||
			die "$p does not build on linux-source-$version: see $log"
		[ -z "$(comm -13 <(printf '%s\n' "$before") <(printf '%s\n' "$after"))" ] ||
			die "$p adds warnings on linux-source-$version: $(comm -13 <(printf '%s\n' "$before") <(printf '%s\n' "$after"))"
		n=$((n + 1))
		log "${mail#"$REPO_DIR"/}: applies to and builds on linux-source-$version"
	done < <(posting_patches "$FIXES_POSTING")
	[ "$n" -gt 0 ] || die "the posting '$FIXES_POSTING' has no patch"
	log "$n fixes apply to $(make -s -C "$tree" kernelversion) (linux-source-$version) and build without new warnings"

	[ "$kunit" -eq 1 ] && [ -d "$REPO_DIR/stable/$version/kunit" ] || return 0
	for mail in "$REPO_DIR/stable/$version/kunit"/*.patch; do
		am "$mail"
	done
	p=$(kunit_patch) || die "no posted patch adds fs/tests/eventpoll_kunit.c"
	am "$PATCHES_DIR/$p"
	(cd "$tree" && with_timeout "$KUNIT_TIMEOUT" "kunit.py on $version" \
		./tools/testing/kunit/kunit.py run --kunitconfig=fs/tests \
		--build_dir="$BUILD_DIR/backport-$version-kunit" --jobs="$JOBS" \
		--make_options="CC=$KCC" --json="$BP_LOG_DIR/kunit-$version.json" \
		"${KUNIT_KCONFIG_ADD[@]}") >"$BP_LOG_DIR/kunit-$version.log" 2>&1 ||
		die "KUnit fails on linux-source-$version with the fixes: see $BP_LOG_DIR/kunit-$version.log"
	log "KUnit on linux-source-$version with the fixes: $(grep -m1 -o 'Ran [0-9]* tests: .*' "$BP_LOG_DIR/kunit-$version.log")"
}

main() {
	local kunit=0 version

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	--kunit) kunit=1; shift ;;
	esac
	[ $# -eq 0 ] || BACKPORT_TREES="$*"
	for version in $BACKPORT_TREES; do
		[[ $version =~ ^[0-9]+\.[0-9]+$ ]] || { usage >&2; exit 1; }
	done
	mkdir -p "$BP_LOG_DIR"
	for version in $BACKPORT_TREES; do
		check_tree "$version" "$kunit"
	done
}

main "$@"
