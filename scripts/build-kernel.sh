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
# Kernels built before from the same commit and configuration, kept across
# clones and runs: what the other stages need of a build (its image, uapi
# headers, .config and release), so that a fresh clone does not build an
# unchanged kernel again. A tree with changes not committed is never
# looked up nor stored.
readonly KERNEL_CACHE="$EPOLL_CACHE_DIR/kernels"
readonly KERNEL_CACHE_KEEP=24
readonly CACHED_FILES=("arch/$( [ "$KARCH" = x86_64 ] && echo x86 || echo "$KARCH")/boot/$KIMAGE"
		       .config include/config/kernel.release include/generated/compile.h
		       usr/include)
# More fragments, merged last, so that they override the others: what a
# guest of scripts/run-guests.sh lacks (CONFIG_PM_SLEEP, CONFIG_IO_URING).
: "${EXTRA_CONFIGS:=}"

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
bench's (make event-loop). EXTRA_CONFIGS, a list of fragments, comes
last, after the flavour's.
Every option asked for must survive olddefconfig, else the build stops.
An unchanged configuration is not rewritten, so rebuilds stay incremental.
A build directory without a kernel takes the one built before from the
same committed tree and configuration, if \$EPOLL_CACHE_DIR/kernels/
has it (the last $KERNEL_CACHE_KEEP are kept); a fresh build is stored there.

Environment:
  OUT_DIR         output directory (now: $OUT_DIR)
  GUEST_ARCH      x86_64 or arm64 (now: $GUEST_ARCH); arm64 builds in
                  \$OUT_DIR/build/arm64/ with aarch64-linux-gnu-gcc
  JOBS            parallel make jobs (now: $JOBS)
  DEBUG_CONFIG    the sanitizer fragment (default: config/debug.config)
  KERNEL_FLAVOUR  debug, bench or event-loop (now: $KERNEL_FLAVOUR)
  EXTRA_CONFIGS   fragments merged last (now: '$EXTRA_CONFIGS')

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
		;;
	*)
		printf '%s\n' "$DEBUG_CONFIG"
		printf '%s\n' "$REPO_DIR/config/proof.config"
		for f in tools/testing/selftests/filesystems/epoll/config \
			 fs/tests/.kunitconfig; do
			[ ! -f "$WORKTREE/$f" ] || printf '%s\n' "$WORKTREE/$f"
		done
		;;
	esac
	for f in $EXTRA_CONFIGS; do
		printf '%s\n' "$f"
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

# The key of the kernel that the committed tree and the configuration
# make; empty if the tree has changes not committed.
cache_key() {
	[ -z "$(git -C "$WORKTREE" status --porcelain)" ] || return 0
	{
		git -C "$WORKTREE" rev-parse 'HEAD^{tree}'
		cat "$KBUILD/.config"
		${GUEST_CROSS}gcc --version | head -n 1
		sha256sum < "${BASH_SOURCE[0]}"
	} | sha256sum | cut -c1-40
}

# Fill a build directory that has no kernel from the cache: true if done.
restore_cached() {
	local entry="$KERNEL_CACHE/$1" f

	[ -n "$1" ] && [ -f "$entry/complete" ] && [ ! -e "$KBUILD/vmlinux" ] || return 1
	for f in "${CACHED_FILES[@]}"; do
		mkdir -p "$(dirname "$KBUILD/$f")"
		rm -rf "${KBUILD:?}/$f"
		cp -a "$entry/$f" "$KBUILD/$f"
	done
	touch "$entry/complete"
	log "took the kernel built before from this commit and configuration ($entry)"
}

store_cached() {
	local entry="$KERNEL_CACHE/$1" f old

	[ -n "$1" ] && [ ! -f "$entry/complete" ] || return 0
	rm -rf "$entry.new"
	for f in "${CACHED_FILES[@]}"; do
		mkdir -p "$(dirname "$entry.new/$f")"
		cp -a "$KBUILD/$f" "$entry.new/$f"
	done
	touch "$entry.new/complete"
	rm -rf "$entry"
	mv "$entry.new" "$entry"
	# shellcheck disable=SC2012 # the entries are hex digests
	for old in $(ls -1t "$KERNEL_CACHE" | tail -n +$((KERNEL_CACHE_KEEP + 1))); do
		rm -rf "${KERNEL_CACHE:?}/$old"
	done
}

main() {
	local key

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
	for f in $EXTRA_CONFIGS; do
		[ -f "$f" ] || die "EXTRA_CONFIGS: no fragment $f"
	done
	command -v ccache >/dev/null || die "ccache missing: run 'make deps' (scripts/install-deps.sh)"
	command -v "${GUEST_CROSS}gcc" >/dev/null ||
		die "${GUEST_CROSS}gcc missing: run 'make deps' (scripts/install-deps.sh)"
	configure
	key=$(cache_key)
	restore_cached "$key" && return 0
	kmake -j"$JOBS" "$KIMAGE"
	kmake headers_install >/dev/null
	store_cached "$key"
	log "built $(kmake kernelrelease) in $KBUILD"
}

main "$@"
