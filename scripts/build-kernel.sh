#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Configure and build the kernel that the QEMU guest boots (x86_64 or
# arm64): the debug kernel of the tests, or the plain one of the benchmarks.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly KBUILD="$BUILD_DIR/qemu"
# The kernel's ARCH=, its image target and the machine's fragment.
case "$GUEST_ARCH" in
x86_64) readonly KARCH=x86_64 KIMAGE=bzImage ;;
arm64) readonly KARCH=arm64 KIMAGE=Image ;;
esac
readonly MACHINE_CONFIG="$REPO_DIR/config/qemu-$GUEST_ARCH.config"
# The sanitizers: KASAN and lockdep, or config/kcsan.config (make stress KCSAN=1).
: "${DEBUG_CONFIG:=$REPO_DIR/config/debug.config}"
# debug: the tests' kernel. bench: config/bench.config instead of the
# sanitizers and the test fragments, so that the base and the patched tree
# get the same configuration (scripts/run-bench.sh). event-loop: bench
# plus config/event-loop.config (scripts/run-event-loop-tests.sh).
: "${KERNEL_FLAVOUR:=debug}"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h]

Build the $GUEST_ARCH kernel ($KIMAGE) and the uapi headers of the patched
tree (\$OUT_DIR/linux) into $KBUILD, with ccache
($GUEST_KCC).

The configuration is tinyconfig merged with, in order:
  config/guest.config         what the guest and the epoll tests need
  $(printf '%-27s' "${MACHINE_CONFIG#"$REPO_DIR"/}") the machine: CPU, console, 32-bit ABI
  \$DEBUG_CONFIG               KASAN, lockdep, KUnit, ... (now: ${DEBUG_CONFIG#"$REPO_DIR"/})
  config/proof.config         what the proof layer's tests need
  tools/testing/selftests/filesystems/epoll/config   (if the tree has it)
  fs/tests/.kunitconfig                      (if the tree has it)
With KERNEL_FLAVOUR=bench, config/guest.config, the machine's fragment
and config/bench.config (-O2, high-resolution timers) only: no debugging
options and no test fragments, which only the patched tree has, so that
the base and the patched tree get the same configuration (make bench).
KERNEL_FLAVOUR=event-loop adds config/event-loop.config (TCP/IP) to
bench's (make event-loop).
Every option asked for must survive olddefconfig, else the build stops.
An unchanged configuration is not rewritten, so rebuilds stay incremental.

Environment:
  OUT_DIR         output directory (now: $OUT_DIR)
  GUEST_ARCH      x86_64 or arm64 (now: $GUEST_ARCH); arm64 builds in
                  \$OUT_DIR/build/arm64/ with aarch64-linux-gnu-gcc
  JOBS            parallel make jobs (now: $JOBS)
  DEBUG_CONFIG    the sanitizer fragment (default: config/debug.config)
  KERNEL_FLAVOUR  debug, bench or event-loop (now: $KERNEL_FLAVOUR)

Exit status: 0 on success, 1 on error.
EOF
}

fragments() {
	local f

	printf '%s\n' "$REPO_DIR/config/guest.config" "$MACHINE_CONFIG"
	case "$KERNEL_FLAVOUR" in
	bench|event-loop)
		printf '%s\n' "$REPO_DIR/config/bench.config"
		[ "$KERNEL_FLAVOUR" = bench ] ||
			printf '%s\n' "$REPO_DIR/config/event-loop.config"
		return 0
		;;
	esac
	printf '%s\n' "$DEBUG_CONFIG"
	printf '%s\n' "$REPO_DIR/config/proof.config"
	for f in tools/testing/selftests/filesystems/epoll/config \
		 fs/tests/.kunitconfig; do
		[ ! -f "$WORKTREE/$f" ] || printf '%s\n' "$WORKTREE/$f"
	done
}

kmake() {
	make -s -C "$WORKTREE" O="$KBUILD" ARCH="$KARCH" CROSS_COMPILE="$GUEST_CROSS" \
		CC="$GUEST_KCC" "$@"
}

configure() {
	local tmp="$KBUILD/.config.new"

	mkdir -p "$KBUILD"
	KCONFIG_CONFIG=.config.new kmake tinyconfig >/dev/null
	mapfile -t frags < <(fragments)
	(cd "$KBUILD" && KCONFIG_CONFIG=.config.new \
		"$WORKTREE/scripts/kconfig/merge_config.sh" -m -O "$KBUILD" \
		"$tmp" "${frags[@]}" >/dev/null)
	KCONFIG_CONFIG=.config.new kmake olddefconfig >/dev/null
	verify_config "$tmp" "${frags[@]}"
	if cmp -s "$tmp" "$KBUILD/.config"; then
		rm -f "$tmp"
	else
		mv "$tmp" "$KBUILD/.config"
		log "configuration updated"
	fi
}

main() {
	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	case "$KERNEL_FLAVOUR" in
	debug|bench|event-loop) ;;
	*) die "KERNEL_FLAVOUR must be debug, bench or event-loop, not '$KERNEL_FLAVOUR'" ;;
	esac
	need_worktree
	command -v ccache >/dev/null || die "ccache missing: run 'make deps' (scripts/install-deps.sh)"
	command -v "${GUEST_CROSS}gcc" >/dev/null ||
		die "${GUEST_CROSS}gcc missing: run 'make deps' (scripts/install-deps.sh)"
	configure
	kmake -j"$JOBS" "$KIMAGE"
	kmake headers_install >/dev/null
	log "built $(kmake kernelrelease) in $KBUILD"
}

main "$@"
