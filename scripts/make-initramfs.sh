#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Pack busybox, the guest /init and the built selftests into an initramfs.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly BUSYBOX=/bin/busybox
readonly ROOT="$BUILD_DIR/initramfs"
readonly IMAGE="$BUILD_DIR/initramfs.cpio.gz"
# The benchmark programs and their entry scripts, only in the images of
# make bench (scripts/run-bench.sh); the guest runs them on epoll.bench=.
readonly BENCH="$BUILD_DIR/bench"
# The compiler of the guest's own helper, guest/run-as.c.
: "${GUEST_CC:=gcc}"
# Other projects' tests (scripts/build-ltp-tests.sh, build-liburing-tests.sh),
# run on epoll.suites=; optional.
readonly SUITES="$BUILD_DIR/suites"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h]

Make $IMAGE: a static busybox with its applets in /bin,
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

main() {
	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	[ -x "$BUSYBOX" ] && ! readelf -l "$BUSYBOX" 2>/dev/null | grep -q INTERP ||
		die "$BUSYBOX is not a static busybox: run 'make deps' (scripts/install-deps.sh) (busybox-static)"
	compgen -G "$BUILD_DIR/selftests/*/run_kselftest.sh" >/dev/null || [ -d "$BENCH" ] ||
		compgen -G "$SUITES/*/run" >/dev/null ||
		die "no selftests built: run 'make selftests' (scripts/build-selftests.sh)"

	rm -rf "$ROOT"
	mkdir -p "$ROOT"/{bin,dev,proc,sys,tmp,tests,suites}
	cp "$BUSYBOX" "$ROOT/bin/busybox"
	"$BUSYBOX" --list | while read -r applet; do
		[ -e "$ROOT/bin/$applet" ] || ln -s busybox "$ROOT/bin/$applet"
	done
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
