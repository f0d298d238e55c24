#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run one stage of a run, time it, and record the result for summarize.py.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

usage() {
	cat <<EOF
Usage: ${0##*/} [-k] [-c [-o DIR]...] NAME COMMAND [ARG...]

Run COMMAND, append "NAME<TAB>seconds<TAB>exit status<TAB>start (epoch)
<TAB>passed before (epoch)" to \$OUT_DIR/results/stages.tsv and exit with
COMMAND's status.
  -k   keep going: record a failure but exit 0 (for test stages, whose
       verdict scripts/summarize.py gives once the others have run)
  -c   a stage whose outcome is a function of its inputs (builds, lint,
       the guests that only confirm a configuration or an architecture):
       when it passed on this machine with the same inputs, say so and
       do not run it again. The inputs: this repository's files (but
       README.md), the series branch and base of \$OUT_DIR/linux, the
       installed Debian packages (compilers, linux-source-*), COMMAND and
       the QEMU_, TCG_, BENCH_, GUEST_, KERNEL_, MATRIX_, DEBUG_ and
       EXTRA_ settings in the environment.
       A change not committed in either tree runs the stage. FRESH=1
       runs it anyway. Passes are kept in \$EPOLL_CACHE_DIR/stages/NAME/.
  -o   with -c: DIR, below \$OUT_DIR/results, holds what the stage found
       (a guest's logs), kept with the pass and put back when the stage
       is not run again, for scripts/summarize.py to judge anew

Exit status: COMMAND's, or 0 with -k; 1 on bad usage.
EOF
}

# The key of the inputs of stage $1 running "$2 ...", or nothing when an
# input has uncommitted changes.
inputs_key() {
	local name=$1

	shift
	[ -z "$(git -C "$REPO_DIR" status --porcelain --untracked-files=no)" ] || return 0
	[ -z "$(git -C "$WORKTREE" status --porcelain --untracked-files=no 2>/dev/null)" ] ||
		return 0
	{
		printf '%s\n' "$name" "$*" "$(uname -m)"
		env | grep -E '^(QEMU|TCG|BENCH|GUEST|KERNEL|MATRIX|DEBUG|EXTRA)_' | sort
		git -C "$REPO_DIR" ls-files -s | grep -v '[[:space:]]README\.md$'
		git -C "$WORKTREE" rev-parse "$SERIES_BRANCH^{tree}" 2>/dev/null
		cat "$OUT_DIR/base-commit" 2>/dev/null
		dpkg-query -W -f '${Package} ${Version}\n'
	} | sha256sum | cut -c1-20
}

main() {
	local keep=0 cacheable=0 name start rc=0 key="" stamp="" before="" d
	local -a outputs=()

	while [ $# -gt 0 ]; do
		case "$1" in
		-h|--help) usage; exit 0 ;;
		-k) keep=1; shift ;;
		-c) cacheable=1; shift ;;
		-o) [ $# -ge 2 ] || { usage >&2; exit 1; }
		    outputs+=("$2"); shift 2 ;;
		*) break ;;
		esac
	done
	[ $# -ge 2 ] || { usage >&2; exit 1; }
	[ "$cacheable" -eq 1 ] || [ ${#outputs[@]} -eq 0 ] || { usage >&2; exit 1; }
	for d in "${outputs[@]}"; do
		case "$d" in
		/*|*..*|'') die "-o $d: a directory below $RESULTS_DIR, named relative to it" ;;
		esac
	done
	name=$1
	shift
	mkdir -p "$RESULTS_DIR"
	printf '==> %s\n' "$name" >&2
	[ "$cacheable" -eq 0 ] || key=$(inputs_key "$name" "$@")
	[ -z "$key" ] || stamp="$EPOLL_CACHE_DIR/stages/$name/$key"
	start=$(date +%s)
	if [ -n "$stamp" ] && [ -f "$stamp" ] && [ -z "${FRESH:-}" ]; then
		before=$(cat "$stamp")
		log "$name: passed with these inputs (key $key) at" \
			"$(date -u -d "@$before" '+%F %T UTC'): not run again (FRESH=1 runs it)"
		for d in "${outputs[@]}"; do
			rm -rf "${RESULTS_DIR:?}/$d"
		done
		[ ${#outputs[@]} -eq 0 ] || tar -xf "$stamp.tar" -C "$RESULTS_DIR"
	else
		"$@" || rc=$?
		if [ -n "$stamp" ] && [ "$rc" -eq 0 ]; then
			mkdir -p "${stamp%/*}"
			[ ${#outputs[@]} -eq 0 ] || tar -cf "$stamp.tar" -C "$RESULTS_DIR" "${outputs[@]}"
			printf '%s\n' "$start" > "$stamp"
		fi
	fi
	printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$(($(date +%s) - start))" "$rc" "$start" \
		"$before" >> "$RESULTS_DIR/stages.tsv"
	[ "$rc" -eq 0 ] || log "stage $name failed (exit $rc)"
	[ "$keep" -eq 0 ] || exit 0
	exit "$rc"
}

main "$@"
