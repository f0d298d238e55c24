#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run one stage of a run, time it, and record the result for summarize.py.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

usage() {
	cat <<EOF
Usage: ${0##*/} [-k] NAME COMMAND [ARG...]

Run COMMAND, append "NAME<TAB>seconds<TAB>exit status<TAB>start (epoch)" to
\$OUT_DIR/results/stages.tsv and exit with COMMAND's status.
  -k   keep going: record a failure but exit 0 (for test stages, whose
       verdict scripts/summarize.py gives once the others have run)

Exit status: COMMAND's, or 0 with -k; 1 on bad usage.
EOF
}

main() {
	local keep=0 name start rc=0

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	-k) keep=1; shift ;;
	esac
	[ $# -ge 2 ] || { usage >&2; exit 1; }
	name=$1
	shift
	mkdir -p "$RESULTS_DIR"
	printf '==> %s\n' "$name" >&2
	start=$(date +%s)
	"$@" || rc=$?
	printf '%s\t%s\t%s\t%s\n' "$name" "$(($(date +%s) - start))" "$rc" "$start" \
		>> "$RESULTS_DIR/stages.tsv"
	[ "$rc" -eq 0 ] || log "stage $name failed (exit $rc)"
	[ "$keep" -eq 0 ] || exit 0
	exit "$rc"
}

main "$@"
