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
# Stable patches that do not apply to $BACKPORT_PACKAGE as they are, by
# name without their number, and why; each needs a version of its own.
declare -A NEEDS_OWN_BACKPORT=(
	[eventpoll-Do-not-re-queue-a-oneshot-item-disarmed-du.patch]="6.1's ep_done_scan() has other context (no 'ovflist is LIFO' comment, the batch is txlist): the same change, rebased by hand, still to be written"
)
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
here; one listed in NEEDS_OWN_BACKPORT (with the reason) is reported and
left out, since it needs a version of its own for the older tree. The log goes to $BP_LOG.

Environment:
  BACKPORT_PACKAGE  Debian package of the older tree (now: $BACKPORT_PACKAGE)
  OUT_DIR, JOBS     as for the other scripts

Exit status: 0 when every stable patch applies and builds cleanly, 1 otherwise.
EOF
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
	local info repo base p n=0 before after opt

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
		if [ -n "${NEEDS_OWN_BACKPORT[${p#[0-9][0-9][0-9][0-9]-}]:-}" ]; then
			log "$p: not applied: ${NEEDS_OWN_BACKPORT[${p#[0-9][0-9][0-9][0-9]-}]}"
			continue
		fi
		git -C "$BP_TREE" -c user.name=check-backport -c user.email=check-backport@localhost \
			am -q "$PATCHES_DIR/$p" >>"$BP_LOG" 2>&1 || {
			git -C "$BP_TREE" am --abort >/dev/null 2>&1 || true
			die "$p does not apply to $BACKPORT_PACKAGE ($(git -C "$BP_TREE" describe --always --tags "$base")): see $BP_LOG"
		}
		after=$(build_warnings)
		[ -f "$BP_BUILD/fs/eventpoll.o" ] && ! grep -q ' error:' <<<"$after" ||
			die "$p does not build on $BACKPORT_PACKAGE: see $BP_LOG"
		[ -z "$(comm -13 <(printf '%s\n' "$before") <(printf '%s\n' "$after"))" ] ||
			die "$p adds warnings on $BACKPORT_PACKAGE: $(comm -13 <(printf '%s\n' "$before") <(printf '%s\n' "$after"))"
		n=$((n + 1))
		log "$p: applies to and builds on $BACKPORT_PACKAGE"
	done
	log "$n stable patches apply to $(make -s -C "$BP_TREE" kernelversion) ($BACKPORT_PACKAGE) and build without new warnings"
}

main "$@"
