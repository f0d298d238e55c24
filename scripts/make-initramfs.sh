#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Pack busybox, the guest /init and the built selftests into an initramfs.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

# A static busybox of the guest's architecture: the host's for x86_64,
# Debian's busybox-static for arm64, fetched (scripts/fetch-debian-package.sh)
# and unpacked here, never installed.
case "$GUEST_ARCH" in
x86_64) readonly BUSYBOX=/bin/busybox ELF_MACHINE="X86-64" ;;
arm64) readonly BUSYBOX="$BUILD_DIR/busybox/bin/busybox" ELF_MACHINE=AArch64 ;;
esac
readonly ROOT="$BUILD_DIR/initramfs"
readonly IMAGE="$BUILD_DIR/initramfs.cpio.gz"
# The benchmark programs and their entry scripts, only in the images of
# make bench (scripts/run-bench.sh); the guest runs them on epoll.bench=.
readonly BENCH="$BUILD_DIR/bench"
# The compiler of the guest's own helper, guest/run-as.c.
: "${GUEST_CC:=${GUEST_CROSS}gcc}"
# Other projects' tests (scripts/build-ltp-tests.sh, build-liburing-tests.sh),
# run on epoll.suites=; optional.
readonly SUITES="$BUILD_DIR/suites"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h]

Make $IMAGE: a static busybox ($BUSYBOX)
as /bin/busybox and /bin/sh (guest/init links the other applets at boot),
guest/init as /init, guest/timeout as /usr/bin/timeout (what kselftest's
runner needs of coreutils' timeout), guest/tap-prefix as
/usr/bin/tap-prefix, guest/run-as.c built static as /usr/bin/run-as
(the users /init runs the tests as), the kselftest installation of each
ABI, \$BUILD_DIR/selftests/<abi>/ (scripts/build-selftests.sh), as
/tests/<abi>/, its runner prefixing the tests' lines with tap-prefix
instead of sed, and /tests/posted-programs, the programs of the
postings (TEST_GEN_PROGS of selftests/Makefile), which /init runs as
each user. An image of make bench has \$BUILD_DIR/bench/ (the bench
programs, scripts/run-bench.sh) as /bench/ and needs no selftests.
\$BUILD_DIR/suites/<suite>/ (scripts/build-ltp-tests.sh and
build-liburing-tests.sh), if there, go in as /suites/<suite>/; the
guest runs them on epoll.suites=<suite>,... (guest/init).

Environment:
  OUT_DIR     output directory (now: $OUT_DIR)
  GUEST_ARCH  x86_64 or arm64 (now: $GUEST_ARCH); arm64 fetches Debian's
              busybox-static for arm64 of the host's release once

Exit status: 0 on success, 1 on error.
EOF
}

# busybox sed, which runner.sh prefixes the tests' output with when there
# is no perl, holds its output while it writes into a pipe (guest/tap-prefix
# says why that matters); busybox sh runs its own sed whatever the PATH.
unbuffer_runner() {
	local runner=$1 text

	text=$(awk -v p="sed -e 's/^/# /'" -v by=/usr/bin/tap-prefix '
		(i = index($0, p)) { n++; $0 = substr($0, 1, i - 1) by substr($0, i + length(p)) }
		{ print }
		END { if (n != 1) exit 1 }' "$runner") || {
		log "warning: $runner has not one \"sed -e 's/^/# /'\" to replace; its output is left buffered"
		return 0
	}
	printf '%s\n' "$text" > "$runner"
}

# The kselftest programs of the postings, one a line.
posted_programs() {
	awk '/^TEST_GEN_PROGS[[:space:]]*:?=/ { on = 1; sub(/^[^=]*=/, "") }
	     on { c = sub(/\\$/, ""); print; on = c }' "$REPO_DIR/selftests/Makefile" |
		tr -s ' \t' '\n' | grep .
}

# Debian's busybox-static of the guest's architecture, unpacked into
# the build directory once.
fetch_busybox() {
	local deb codename

	[ "$GUEST_ARCH" != x86_64 ] || return 0		# the host's
	[ ! -e "$BUSYBOX" ] || return 0
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	[ -n "$codename" ] || die "no VERSION_CODENAME in /etc/os-release: this needs a Debian host"
	deb=$("$REPO_DIR/scripts/fetch-debian-package.sh" --arch "$GUEST_ARCH" \
		busybox-static "$codename") ||
		die "could not fetch busybox-static for $GUEST_ARCH (see above)"
	rm -rf "${BUSYBOX%/bin/busybox}"
	dpkg-deb -x "$deb" "${BUSYBOX%/bin/busybox}"
}

# The guest's busybox must be static and of its architecture.
check_busybox() {
	[ -x "$BUSYBOX" ] || die "no $BUSYBOX: run 'make deps' (scripts/install-deps.sh) (busybox-static)"
	! readelf -l "$BUSYBOX" 2>/dev/null | grep -q INTERP ||
		die "$BUSYBOX is not static: install busybox-static (scripts/install-deps.sh)"
	readelf -h "$BUSYBOX" 2>/dev/null | grep -q "Machine:.*$ELF_MACHINE" ||
		die "$BUSYBOX is not an $ELF_MACHINE program: remove it and run again"
}

main() {
	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	fetch_busybox
	check_busybox
	compgen -G "$BUILD_DIR/selftests/*/run_kselftest.sh" >/dev/null || [ -d "$BENCH" ] ||
		compgen -G "$SUITES/*/run" >/dev/null ||
		die "no selftests built: run 'make selftests' (scripts/build-selftests.sh)"

	rm -rf "$ROOT"
	mkdir -p "$ROOT"/{bin,dev,proc,sys,tmp,tests,suites}
	cp "$BUSYBOX" "$ROOT/bin/busybox"
	# The image is built where the guest's busybox may not run: /init
	# links its applets ('busybox --install') before it uses any.
	ln -s busybox "$ROOT/bin/sh"
	mkdir -p "$ROOT/sbin" "$ROOT/usr/bin"
	ln -s ../bin/reboot "$ROOT/sbin/reboot"
	install -m 0755 "$REPO_DIR/guest/init" "$ROOT/init"
	install -m 0755 "$REPO_DIR/guest/timeout" "$ROOT/usr/bin/timeout"
	install -m 0755 "$REPO_DIR/guest/tap-prefix" "$ROOT/usr/bin/tap-prefix"
	"$GUEST_CC" -static -O2 -Wall -Werror -o "$ROOT/usr/bin/run-as" "$REPO_DIR/guest/run-as.c" ||
		die "guest/run-as.c does not build with $GUEST_CC"
	posted_programs > "$ROOT/tests/posted-programs"
	for abi in "$BUILD_DIR"/selftests/*/; do
		[ -f "$abi/run_kselftest.sh" ] || continue
		mkdir -p "$ROOT/tests/$(basename "$abi")"
		cp -a "$abi/." "$ROOT/tests/$(basename "$abi")/"
		unbuffer_runner "$ROOT/tests/$(basename "$abi")/kselftest/runner.sh"
	done
	if compgen -G "$SUITES/*/run" >/dev/null; then
		cp -a "$SUITES/." "$ROOT/suites/"
	fi
	if [ -d "$BENCH" ]; then
		mkdir -p "$ROOT/bench"
		cp -a "$BENCH/." "$ROOT/bench/"
	fi
	(cd "$ROOT" && find . -print0 | sort -z |
		cpio --null -o -H newc --owner=0:0 --quiet) | gzip -1 > "$IMAGE"
	log "$IMAGE: $(du -h "$IMAGE" | cut -f1)"
}

main "$@"
