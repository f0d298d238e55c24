#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build liburing's epoll tests, with the liburing posting applied, for the guest.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly SUITE=liburing
readonly PIN="$EXTERNAL_DIR/$SUITE/SOURCE"
readonly HDRS="$BUILD_DIR/qemu/usr/include"
readonly SRC="$OUT_DIR/$SUITE"
readonly DEST="$SUITES_DIR/$SUITE"
readonly LOG="$OUT_DIR/$SUITE-build.log"
# liburing's T_EXIT_SKIP.
readonly T_EXIT_SKIP=77
# liburing's own tests of the epoll opcodes and of epoll on a ring; the
# posting's tests are added to them (every test/*.c it adds).
readonly OWN_TESTS=(eploop epwait poll-v-poll)

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [--base]

Build the liburing tests of the liburing posting (external/$SUITE/) and
liburing's own epoll tests (${OWN_TESTS[*]}), statically, for the x86_64
guest, and install them into $DEST/ with the runner 'run'
(guest/suite-run).

1. liburing from Debian: the source package, suite and version
   external/$SUITE/SOURCE pins, its upstream tarball fetched by
   scripts/fetch-debian-package.sh --source (SHA-256 checked against the
   suite's signed Sources index, then against the pin; its 'git archive'
   header against the pinned upstream commit), unpacked once
   into a git repository with one commit tagged 'base' (kept in
   $EPOLL_CACHE_DIR).
2. $SRC: a shared clone of it with external/$SUITE/patches/ applied by
   'git am' (refused if it holds commits or changes not exported by
   scripts/export-external.sh, unless FORCE=1).
3. liburing's configure and src/ (liburing.a), then the test programs,
   with -static and the uapi headers of the patched kernel ($HDRS, from
   scripts/build-kernel.sh) before the system's.
4. The programs and a list of them into $DEST/.

The guest runs $DEST/run (busybox sh): each program a KTAP subtest,
exit $T_EXIT_SKIP (T_EXIT_SKIP) a skip. The tests need /proc
(/proc/self/fdinfo).

  --base         step 1 only: make sure the base repository is in the
                 cache (scripts/check-mail.sh takes the mails back onto
                 it), and print its path; needs no kernel

Environment:
  OUT_DIR          output directory (now: $OUT_DIR)
  EPOLL_CACHE_DIR  base trees and downloads (now: $EPOLL_CACHE_DIR)
  JOBS             parallel make jobs (now: $JOBS)
  FORCE=1          drop unexported work in $SRC

Build log: $LOG. Exit status: 0 on success, 1 on error.
EOF
}

# The pinned upstream tarball from Debian, verified; its path on stdout.
pinned_tarball() {
	local tarball sum

	tarball=$("$REPO_DIR/scripts/fetch-debian-package.sh" --source \
		"$(pin_field "$PIN" debian_source)" "$(pin_field "$PIN" debian_suite)" \
		"$(pin_field "$PIN" debian_version)") ||
		die "could not fetch the liburing source package external/$SUITE/SOURCE pins"
	sum=$(pin_field "$PIN" sha256)
	echo "$sum  $tarball" | sha256sum -c --quiet >/dev/null 2>&1 ||
		die "$tarball is not the tarball external/$SUITE/SOURCE pins (SHA-256 differs):" \
			"the suite has moved on; pin the new version"
	printf '%s\n' "$tarball"
}

# The test programs: liburing's own epoll tests and those the posting adds.
tests() {
	printf '%s\n' "${OWN_TESTS[@]}"
	git -C "$SRC" diff --name-only --diff-filter=A base HEAD -- 'test/*.c' |
		sed 's|^test/||; s|\.c$||'
}

# Each step returns on failure: build runs as the left side of '||', where
# errexit does not apply.
build() {
	local targets

	targets=$(tests | sed 's/$/.t/' | tr '\n' ' ')
	# configure again when the headers it probed have changed.
	if [ ! -f "$SRC/config-host.mak" ] || [ "$HDRS/linux/version.h" -nt "$SRC/config-host.mak" ]; then
		(cd "$SRC" && CFLAGS="-isystem $HDRS -O2 -g" ./configure --cc=gcc) || return 1
	fi
	# configure keeps no flags for make: give the headers again.
	make -C "$SRC/src" -j"$JOBS" CPPFLAGS="-isystem $HDRS" liburing.a || return 1
	# shellcheck disable=SC2086
	make -C "$SRC/test" -j"$JOBS" CPPFLAGS="-isystem $HDRS" LDFLAGS=-static $targets
}

install_tests() {
	local name list=""

	rm -rf "$DEST"
	mkdir -p "$DEST"
	for name in $(tests); do
		[ -x "$SRC/test/$name.t" ] || die "test/$name.t was not built"
		readelf -l "$SRC/test/$name.t" | grep -q INTERP && die "test/$name.t is not static"
		cp "$SRC/test/$name.t" "$DEST/"
		list+="$name $name.t"$'\n'
	done
	install_suite_runner "$SUITE" "$DEST" "$T_EXIT_SKIP" "${list%$'\n'}"
	log "$DEST: $(tests | tr '\n' ' ')"
}

main() {
	local tarball base

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	--base) ;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	if [ "${1:-}" = --base ]; then
		tarball=$(pinned_tarball)
		check_tarball_commit "$tarball" "$SUITE"
		external_base_repo "$(external_base_dir "$SUITE")" "$tarball"
		external_base_dir "$SUITE"
		exit 0
	fi
	[ -f "$HDRS/linux/eventpoll.h" ] ||
		die "no uapi headers in $HDRS: run 'make kernel' (scripts/build-kernel.sh)"
	tarball=$(pinned_tarball)
	check_tarball_commit "$tarball" "$SUITE"
	base=$(external_base_dir "$SUITE")
	external_base_repo "$base" "$tarball"
	external_tree "$SRC" "$SUITE" "$base"
	mkdir -p "$OUT_DIR"
	log "building in $SRC (log: $LOG)"
	build > "$LOG" 2>&1 || die "the liburing build failed: see $LOG"
	install_tests
}

main "$@"
