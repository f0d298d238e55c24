#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build LTP's epoll tests, with the LTP posting applied, for the guest.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly SUITE=ltp
readonly PIN="$EXTERNAL_DIR/$SUITE/SOURCE"
readonly HDRS="$BUILD_DIR/qemu/usr/include"
readonly SRC="$OUT_DIR/$SUITE"
readonly DEST="$SUITES_DIR/$SUITE"
readonly LOG="$OUT_DIR/$SUITE-build.log"
# LTP's exit code for TCONF: the test does not apply here.
readonly TCONF=32
# The runtest entries this suite runs: LTP's epoll tests and ours.
readonly ENTRY_RE='^epoll'
# LTP's own entries the guest does not run, with why; the runner reports
# each as a skip with that reason, which config/outcomes.tsv expects.
readonly NOT_RUN=(
	"epoll_wait05:not run here: needs AF_INET (CONFIG_INET), which the guest kernel lacks"
	"epoll_wait04:not run here: checks a zero timeout against wall-clock time, which failed under QEMU TCG on timing alone"
	"epoll_pwait01:not run here: checks signal delivery against wall-clock time, which failed under QEMU TCG on timing alone"
)

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [--base]

Build the LTP tests of the LTP posting (external/$SUITE/) and LTP's own
epoll tests, statically, for the x86_64 guest, and install them into
$DEST/ with the runner 'run' (guest/suite-run).

1. The LTP tree external/$SUITE/SOURCE pins, a tarball that is not a
   Debian package: LTP_TARBALL, checked against the pinned SHA-256 (and
   its 'git archive' header against the pinned commit) and copied to $EPOLL_CACHE_DIR/upstream/, then unpacked once into a git
   repository with one commit tagged 'base' (the cache keeps it).
2. $SRC: a shared clone of it with external/$SUITE/patches/ applied by
   'git am' (refused if it holds commits or changes not exported by
   scripts/export-external.sh, unless FORCE=1).
3. LTP's 'make autotools' and configure, against the uapi headers of the
   patched kernel ($HDRS, from scripts/build-kernel.sh), with -static;
   then lib/ and the directories of runtest/syscalls' epoll entries.
4. The programs of those entries, and a list of them, into $DEST/.

The guest runs $DEST/run (busybox sh): each entry a KTAP subtest, exit
$TCONF (TCONF) a skip. LTP's library needs /proc (the tests read
/proc/self/fdinfo and /proc/<pid>/stat), a writable TMPDIR (the runner
makes one under /tmp per test), and puts its results in /dev/shm when
that exists, else in TMPDIR. The guest kernel's .config goes along as
kernel-config, which the runner gives LTP as KCONFIG_PATH.

  --base         step 1 only: make sure the base repository is in the
                 cache (scripts/check-mail.sh takes the mails back onto
                 it), and print its path; needs no kernel

Environment:
  LTP_TARBALL      the pinned tarball (now: ${LTP_TARBALL:-<default>})
  OUT_DIR          output directory (now: $OUT_DIR)
  EPOLL_CACHE_DIR  base trees and downloads (now: $EPOLL_CACHE_DIR)
  JOBS             parallel make jobs (now: $JOBS)
  FORCE=1          drop unexported work in $SRC

Build log: $LOG. Exit status: 0 on success, 1 on error.
EOF
}

# The pinned tarball, verified, in the cache; its path on stdout.
pinned_tarball() {
	local name sum cached origin

	name=$(pin_field "$PIN" tarball)
	sum=$(pin_field "$PIN" sha256)
	cached="$EPOLL_CACHE_DIR/upstream/$name"
	if ! echo "$sum  $cached" | sha256sum -c --quiet >/dev/null 2>&1; then
		# The team's shared directory sits beside the repository, or
		# beside the one a clone was made from.
		if [ -z "${LTP_TARBALL:-}" ]; then
			LTP_TARBALL=$REPO_DIR/../shared/upstream/$name
			origin=$(git -C "$REPO_DIR" config remote.origin.url 2>/dev/null || true)
			[ -f "$LTP_TARBALL" ] || [ ! -d "$origin" ] ||
				LTP_TARBALL=$origin/../shared/upstream/$name
		fi
		[ -f "$LTP_TARBALL" ] ||
			die "no $LTP_TARBALL: set LTP_TARBALL to the LTP tarball external/$SUITE/SOURCE pins"
		echo "$sum  $LTP_TARBALL" | sha256sum -c --quiet >/dev/null 2>&1 ||
			die "$LTP_TARBALL does not have the SHA-256 external/$SUITE/SOURCE pins"
		mkdir -p "${cached%/*}"
		cp "$LTP_TARBALL" "$cached.tmp"
		mv "$cached.tmp" "$cached"
	fi
	printf '%s\n' "$cached"
}

# runtest/syscalls' entries this suite runs, as '<name> <command>' lines.
entries() {
	grep -E "$ENTRY_RE" "$SRC/runtest/syscalls" | tr -s ' \t' ' '
}

# Each step returns on failure: build runs as the left side of '||', where
# errexit does not apply.
build() {
	local cflags="-isystem $HDRS -O2 -g" dirs dir cmd

	# configure again when the headers it probed have changed.
	if [ ! -f "$SRC/include/mk/config.mk" ] || [ "$HDRS/linux/version.h" -nt "$SRC/config.status" ]; then
		make -C "$SRC" autotools || return 1
		(cd "$SRC" && ./configure CFLAGS="$cflags" LDFLAGS=-static) || return 1
	fi
	make -C "$SRC/lib" -j"$JOBS" libltp.a || return 1
	dirs=$(entries | while read -r _ cmd; do
		find "$SRC/testcases/kernel/syscalls" -name "${cmd%% *}.c" -printf '%h\n'
	done | sort -u)
	[ -n "$dirs" ] || { echo "no directories for the epoll entries of runtest/syscalls"; return 1; }
	for dir in $dirs; do
		make -C "$dir" -j"$JOBS" || return 1
	done
	printf '%s\n' "$dirs" > "$SRC/.epoll-dirs"
}

# The '<name> <command>' lines on stdin, those of NOT_RUN as
# '<name> #SKIP <why>' (guest/suite-run).
not_run() {
	local name cmd entry

	while read -r name cmd; do
		for entry in "${NOT_RUN[@]}"; do
			[ "${entry%%:*}" != "$name" ] || cmd="#SKIP ${entry#*:}"
		done
		printf '%s %s\n' "$name" "$cmd"
	done
}

install_tests() {
	local name cmd prog dir list

	rm -rf "$DEST"
	mkdir -p "$DEST"
	list=$(entries)
	while read -r name cmd; do
		prog=""
		while read -r dir; do
			[ -x "$dir/${cmd%% *}" ] && prog="$dir/${cmd%% *}"
		done < "$SRC/.epoll-dirs"
		[ -n "$prog" ] || die "runtest entry $name: no program ${cmd%% *} was built"
		readelf -l "$prog" | grep -q INTERP && die "$prog is not static"
		cp "$prog" "$DEST/"
	done <<< "$list"
	install_suite_runner "$SUITE" "$DEST" "$TCONF" "$(not_run <<< "$list")"
	# LTP reads the kernel's configuration (epoll_wait10 needs it);
	# the guest has no /proc/config.gz: the runner passes KCONFIG_PATH.
	cp "$BUILD_DIR/qemu/.config" "$DEST/kernel-config"
	log "$DEST: $(wc -l <<< "$list") tests: $(cut -d' ' -f1 <<< "$list" | tr '\n' ' ')"
}

main() {
	local tarball

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
	if [ ! -f "$HDRS/linux/eventpoll.h" ] || [ ! -f "$BUILD_DIR/qemu/.config" ]; then
		die "no uapi headers in $HDRS: run 'make kernel' (scripts/build-kernel.sh)"
	fi
	command -v autoreconf >/dev/null ||
		die "autoconf/automake missing: run 'make deps' (scripts/install-deps.sh)"
	tarball=$(pinned_tarball)
	check_tarball_commit "$tarball" "$SUITE"
	external_base_repo "$(external_base_dir "$SUITE")" "$tarball"
	external_tree "$SRC" "$SUITE" "$(external_base_dir "$SUITE")"
	mkdir -p "$OUT_DIR"
	log "building in $SRC (log: $LOG)"
	build > "$LOG" 2>&1 || die "the LTP build failed: see $LOG"
	install_tests
}

main "$@"
