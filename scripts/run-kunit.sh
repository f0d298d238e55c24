#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build and run the series' KUnit suite on UML with kunit.py.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly KUNITCONFIG="fs/tests/eventpoll.kunitconfig"
readonly KUNIT_BUILD="$BUILD_DIR/kunit-uml"
: "${KUNIT_TIMEOUT:=900}"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h]

Run 'tools/testing/kunit/kunit.py run --kunitconfig=$KUNITCONFIG'
in the patched tree, on UML, built in $KUNIT_BUILD with ccache.
The raw log goes to \$OUT_DIR/results/kunit-uml.log, the parsed results to
kunit-uml.json. Without $KUNITCONFIG in the tree, report that no
test ran (scripts/summarize.py decides whether that is a failure).

Environment:
  OUT_DIR        output directory (now: $OUT_DIR)
  JOBS           parallel make jobs (now: $JOBS)
  KUNIT_TIMEOUT  limit for build and run, seconds (now: $KUNIT_TIMEOUT)

Exit status: 0 when every test passed or none exists, 1 otherwise.
EOF
}

# kunit.py's UML defaults enable PCI over virtio without a device ID; on
# 6.12 that WARNs at every boot, and a WARN fails the run. No case here
# needs PCI, so it is switched off (--kconfig_add below).

main() {
	local rc=0

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	need_worktree
	mkdir -p "$RESULTS_DIR" "$BUILD_DIR"
	rm -f "$RESULTS_DIR"/kunit-uml.*
	if [ ! -f "$WORKTREE/$KUNITCONFIG" ]; then
		log "the tree has no $KUNITCONFIG: no KUnit test ran"
		return 0
	fi
	(cd "$WORKTREE" && with_timeout "$KUNIT_TIMEOUT" kunit.py \
		./tools/testing/kunit/kunit.py run --kunitconfig="$KUNITCONFIG" \
		--build_dir="$KUNIT_BUILD" --jobs="$JOBS" \
		--make_options="CC=$KCC" --json="$RESULTS_DIR/kunit-uml.json" \
		--kconfig_add=CONFIG_UML_PCI_OVER_VIRTIO=n) ||
		rc=$?
	cp "$KUNIT_BUILD/test.log" "$RESULTS_DIR/kunit-uml.log" 2>/dev/null || true
	return "$rc"
}

main "$@"
