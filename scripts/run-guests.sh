#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot the posted tests on kernels that lack what they test: without
# CONFIG_PM_SLEEP, without CONFIG_IO_URING, and the base kernel itself.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

# Each guest: its name, the commit its kernel is built from (postings:
# the postings without the proof layer; base: the tree they apply to) and
# the fragment that takes a feature away (config/matrix/, which the build
# matrix uses too), or - for none.
readonly GUESTS=(
	"no-pm-sleep postings config/matrix/no-pm-sleep.config"
	"no-io-uring postings config/matrix/no-io-uring.config"
	"base base -"
)
# The guests run the posted programs of m64, as root only, and no suite
# of other projects.
readonly GUEST_APPEND="epoll.abis=m64 epoll.envs= epoll.suites=none"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [GUEST...]

Build and boot each guest (default: all), a kernel that lacks something
the posted tests test:
$(printf '  %s\n' "${GUESTS[@]}" | awk '{ printf "  %-12s from %-9s %s\n", $1, $2, $3 }')
Each kernel is built without sanitizers (DEBUG_CONFIG=config/nodebug.config,
with config/proof.config and the tree's test fragments, and the guest's
fragment last) from \$OUT_DIR/scratch (a worktree of \$OUT_DIR/linux) into
\$BUILD_DIR/guest-<name>/, with ccache. The base kernel gets the posted
selftests' config fragment; it has no KUnit suite. The guest boots the
initramfs of 'make initramfs' and runs the posted programs, -m64, as
root (epoll.tests=, $GUEST_APPEND); its console, KTAP and .config go to
\$RESULTS_DIR/guest-<name>/, where scripts/summarize.py judges them
against config/outcomes.tsv: what skips and why, and on the base kernel
exactly the cases that reproduce the fixes fail.

Environment:
  OUT_DIR      output directory (now: $OUT_DIR)
  JOBS         parallel make jobs (now: $JOBS)

Exit status: 0 when every guest was built and ran to its end (the
verdict on the tests is scripts/summarize.py's), 1 otherwise.
EOF
}

# The fields of guest $1's line: name rev fragment.
guest_line() {
	local g

	for g in "${GUESTS[@]}"; do
		[ "${g%% *}" != "$1" ] || { printf '%s\n' "$g"; return 0; }
	done
	die "no guest '$1' (guests: $(printf '%s ' "${GUESTS[@]%% *}"))"
}

# The posted programs as /init's epoll.tests= value.
posted_tests() {
	awk '/^TEST_GEN_PROGS[[:space:]]*:?=/ { on = 1; sub(/^[^=]*=/, "") }
	     on { c = sub(/\\$/, ""); print; on = c }' "$REPO_DIR/selftests/Makefile" |
		tr -s ' \t' '\n' | grep . | paste -sd, -
}

run_guest() {
	local name rev frag kout extra=""

	read -r name rev frag <<<"$(guest_line "$1")"
	kout="$BUILD_DIR/guest-$name"
	case "$rev" in
	base) rev=$(base_commit) ;;
	postings) rev=$(postings_head) ;;
	esac
	# The base tree lacks the posted selftests' fragment: take the
	# postings' (its mirror; the proof layer's adds its race window).
	[ "$rev" != "$(base_commit)" ] || extra="$REPO_DIR/selftests/config"
	[ "$frag" = - ] || extra="$extra $REPO_DIR/$frag"
	kernel_out_dir "$kout" "$rev" shared
	log "$name: building $(git -C "$WORKTREE" log -1 --format='%h %s' "$rev")"
	OUT_DIR="$kout" DEBUG_CONFIG="$REPO_DIR/config/nodebug.config" \
		EXTRA_CONFIGS="${extra# }" "$REPO_DIR/scripts/build-kernel.sh"
	mkdir -p "$RESULTS_DIR/guest-$name"
	cp "$kout/build/qemu/.config" "$RESULTS_DIR/guest-$name/config"
	GUEST_KERNEL="$kout/build/qemu/arch/x86/boot/bzImage" \
		GUEST_RESULTS="$RESULTS_DIR/guest-$name" \
		QEMU_APPEND="$GUEST_APPEND epoll.tests=$(posted_tests) ${QEMU_APPEND:-}" \
		"$REPO_DIR/scripts/run-qemu.sh"
}

main() {
	local g rc=0

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	-*) usage >&2; exit 1 ;;
	esac
	need_worktree
	[ -f "$BUILD_DIR/initramfs.cpio.gz" ] ||
		die "no initramfs: run 'make kernel selftests initramfs' first"
	[ $# -gt 0 ] || set -- "${GUESTS[@]%% *}"
	for g in "$@"; do
		guest_line "$g" >/dev/null
	done
	for g in "$@"; do
		rm -rf "${RESULTS_DIR:?}/guest-$g"
		run_guest "$g" || { log "$g: failed"; rc=1; }
	done
	return "$rc"
}

main "$@"
