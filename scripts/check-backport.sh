#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Prove that the series' stable fixes apply to and build on the older LTS.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

# The other LTS tree Debian ships as a source package.
: "${BACKPORT_PACKAGE:=linux-source-6.1}"
readonly BP_TREE="$OUT_DIR/backport/linux"
readonly BP_BUILD="$BUILD_DIR/backport"
readonly BP_LOG="$RESULTS_DIR/backport.log"
# Versions of stable patches for the older tree, where the series' own
# does not apply: stable/<version>/<patch name without its number>.
readonly BP_VERSION=${BACKPORT_PACKAGE#linux-source-}
readonly BP_OWN_DIR="$REPO_DIR/stable/$BP_VERSION"
# What fs/eventpoll.c needs to be built, on top of tinyconfig.
readonly BP_CONFIG=(EPOLL PM_SLEEP SUSPEND)

usage() {
	cat <<EOF
Usage: ${0##*/} [-h]

Take the patches of the series that carry 'Cc: stable@vger.kernel.org'
(in series order), 'git am' them onto Debian's $BACKPORT_PACKAGE (unpacked
once into \$EPOLL_CACHE_DIR, as scripts/get-base-tree.sh does for the
base), and build fs/eventpoll.o there (x86_64, tinyconfig plus
${BP_CONFIG[*]}, W=1) with no warning the unpatched tree does not have.
A fix that needs another patch of the series to apply or to build fails
here. Where stable/$BP_VERSION/ has a version of a fix of its own (same
name without the number), that version is applied instead; its changelog
must be the series patch's, plus only a '# $BP_VERSION.x' after Cc: stable
and a '[ ... ]' backport note. The log goes to $BP_LOG.

Environment:
  BACKPORT_PACKAGE  Debian package of the older tree (now: $BACKPORT_PACKAGE)
  OUT_DIR, JOBS     as for the other scripts

Exit status: 0 when every stable patch applies and builds cleanly, 1 otherwise.
EOF
}

# The changelog of mail @1 (subject and body), without the '[PATCH ...]'
# prefix, the backport note and the version after Cc: stable.
changelog() {
	git mailinfo /dev/null /dev/null <"$1" | sed -n 's/^Subject: //p'
	git mailinfo "$2" /dev/null <"$1" >/dev/null
	sed -e '/^\[ /,/\]$/d' -e 's/^\(Cc: stable@vger.kernel.org\) #.*/\1/' "$2"
}

# The version of stable patch @1 to apply: its own for the older tree if
# stable/ has one (checked against the series' changelog), else itself.
backport_of() {
	local p=$1 own="$BP_OWN_DIR/${1#[0-9][0-9][0-9][0-9]-}"
	local tmp="$OUT_DIR/backport/msg"

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

# Patch files of the series meant for stable, in order.
stable_patches() {
	local p

	while read -r p; do
		grep -qi '^Cc: stable@vger.kernel.org' "$PATCHES_DIR/$p" && printf '%s\n' "$p"
	done < <(series_patches)
}

bpmake() {
	make -C "$BP_TREE" O="$BP_BUILD" ARCH=x86_64 CC="$KCC" -j"$JOBS" "$@" </dev/null
}

build_warnings() {
	touch "$BP_TREE/fs/eventpoll.c"
	bpmake W=1 fs/eventpoll.o 2>&1 | tee -a "$BP_LOG" |
		grep -E '(warning|error):' | normalize_warnings || true
}

main() {
	local info repo base p mail n=0 before after opt

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	mkdir -p "$RESULTS_DIR" "$OUT_DIR/backport"
	: > "$BP_LOG"
	mapfile -t patches < <(stable_patches)
	[ "${#patches[@]}" -gt 0 ] || die "no patch of the series carries Cc: stable"
	info=$(KERNEL_TREE='' BASE_PACKAGE="$BACKPORT_PACKAGE" "$REPO_DIR/scripts/get-base-tree.sh") ||
		die "no $BACKPORT_PACKAGE tree: run 'make deps' (scripts/install-deps.sh)"
	repo=$(sed -n 1p <<<"$info")
	base=$(sed -n 2p <<<"$info")
	if [ ! -d "$BP_TREE/.git" ]; then
		git clone -q --shared --no-checkout "$repo" "$BP_TREE"
	fi
	git -C "$BP_TREE" am --abort >/dev/null 2>&1 || true
	git -C "$BP_TREE" checkout -q -f -B stable "$base"

	mkdir -p "$BP_BUILD"
	bpmake -s tinyconfig >>"$BP_LOG" 2>&1
	for opt in "${BP_CONFIG[@]}"; do
		"$BP_TREE/scripts/config" --file "$BP_BUILD/.config" -e "$opt"
	done
	bpmake -s olddefconfig >>"$BP_LOG" 2>&1
	for opt in "${BP_CONFIG[@]}"; do
		grep -qx "CONFIG_$opt=y" "$BP_BUILD/.config" ||
			die "CONFIG_$opt did not survive olddefconfig in $BACKPORT_PACKAGE"
	done
	before=$(build_warnings)

	for p in "${patches[@]}"; do
		mail=$(backport_of "$p")
		git -C "$BP_TREE" -c user.name=check-backport -c user.email=check-backport@localhost \
			am -q "$mail" >>"$BP_LOG" 2>&1 || {
			git -C "$BP_TREE" am --abort >/dev/null 2>&1 || true
			die "${mail#"$REPO_DIR"/} does not apply to $BACKPORT_PACKAGE ($(git -C "$BP_TREE" describe --always --tags "$base")): see $BP_LOG"
		}
		after=$(build_warnings)
		[ -f "$BP_BUILD/fs/eventpoll.o" ] && ! grep -q ' error:' <<<"$after" ||
			die "$p does not build on $BACKPORT_PACKAGE: see $BP_LOG"
		[ -z "$(comm -13 <(printf '%s\n' "$before") <(printf '%s\n' "$after"))" ] ||
			die "$p adds warnings on $BACKPORT_PACKAGE: $(comm -13 <(printf '%s\n' "$before") <(printf '%s\n' "$after"))"
		n=$((n + 1))
		log "${mail#"$REPO_DIR"/}: applies to and builds on $BACKPORT_PACKAGE"
	done
	log "$n stable patches apply to $(make -s -C "$BP_TREE" kernelversion) ($BACKPORT_PACKAGE) and build without new warnings"
}

main "$@"
