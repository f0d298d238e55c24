#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build and run the series' KUnit suite on UML with kunit.py.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly KUNITCONFIG="fs/tests/.kunitconfig"
readonly KUNIT_BUILD="$BUILD_DIR/kunit-uml"
# --no-pm-sleep: the cases that may skip without CONFIG_PM_SLEEP, because
# they are about the wakeup source itself, as config/outcomes.tsv lists
# them for uml-nopm/kunit; every other case must run (summarize.py then
# holds every result to that list).
NOPM_MAY_SKIP=$(awk -F '\t' '$1 ~ /(^|,)uml-nopm\/kunit(,|$)/ && $4 == "skip" {
	sub(/\..*/, "", $3); print $3 }' "$REPO_DIR/config/outcomes.tsv" | sort -u | tr '\n' ' ')
readonly NOPM_MAY_SKIP
: "${KUNIT_TIMEOUT:=900}"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [--no-pm-sleep]

Run 'tools/testing/kunit/kunit.py run --kunitconfig=$KUNITCONFIG'
in the patched tree, on UML, built in $KUNIT_BUILD with ccache.
The raw log goes to \$OUT_DIR/results/kunit-uml.log, the parsed results to
kunit-uml.json. Without $KUNITCONFIG in the tree, report that no
test ran (scripts/summarize.py decides whether that is a failure).

--no-pm-sleep  the same on a kernel without CONFIG_PM_SLEEP (built in
               $KUNIT_BUILD-nopm, results kunit-uml-nopm.*), where
               epoll_ctl() clears EPOLLWAKEUP: no case may fail, and only
               the cases about the wakeup source itself may skip
               ($NOPM_MAY_SKIP)

Environment:
  OUT_DIR        output directory (now: $OUT_DIR)
  JOBS           parallel make jobs (now: $JOBS)
  KUNIT_TIMEOUT  limit for build and run, seconds (now: $KUNIT_TIMEOUT)

Exit status: 0 when every test passed or none exists, 1 otherwise.
EOF
}

# Fail unless the skipped cases of the KTAP log @1 are all in NOPM_MAY_SKIP.
check_nopm_skips() {
	local log=$1 bad

	grep -q '^ *ok [0-9]* eventpoll_[a-z_]*$' "$log" ||
		die "without CONFIG_PM_SLEEP no case passed: see $log"
	# KTAP gives the parameters of a case before the case's own result.
	bad=$(awk -v allowed=" $NOPM_MAY_SKIP " '
		/^        ok [0-9]+ .* # SKIP/ { param_skipped = 1 }
		/^    (not )?ok [0-9]+ eventpoll_/ {
			name = $0
			sub(/^ *(not )?ok [0-9]+ /, "", name)
			sub(/ .*/, "", name)
			if (param_skipped || $0 ~ / # SKIP/)
				skipped[name] = 1
			param_skipped = 0
		}
		END { for (n in skipped) if (index(allowed, " " n " ") == 0) print n }
	' "$log")
	[ -z "$bad" ] ||
		die "without CONFIG_PM_SLEEP these cases skip, but do not need a wakeup source: $(echo $bad)"
	log "without CONFIG_PM_SLEEP: only $NOPM_MAY_SKIP skip"
}

main() {
	local rc=0 build=$KUNIT_BUILD name=kunit-uml nopm=()

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	--no-pm-sleep)
		build=$KUNIT_BUILD-nopm
		name=kunit-uml-nopm
		nopm=(--kconfig_add=CONFIG_SUSPEND=n --kconfig_add=CONFIG_HIBERNATION=n
		      --kconfig_add=CONFIG_PM_SLEEP=n)
		;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	need_worktree
	mkdir -p "$RESULTS_DIR" "$BUILD_DIR"
	rm -f "$RESULTS_DIR/$name".*
	if [ ! -f "$WORKTREE/$KUNITCONFIG" ]; then
		log "the tree has no $KUNITCONFIG: no KUnit test ran"
		return 0
	fi
	(cd "$WORKTREE" && with_timeout "$KUNIT_TIMEOUT" kunit.py \
		./tools/testing/kunit/kunit.py run --kunitconfig="$KUNITCONFIG" \
		--build_dir="$build" --jobs="$JOBS" \
		--make_options="CC=$KCC" --json="$RESULTS_DIR/$name.json" \
		"${KUNIT_KCONFIG_ADD[@]}" "${nopm[@]}") ||
		rc=$?
	cp "$build/test.log" "$RESULTS_DIR/$name.log" 2>/dev/null || true
	[ "$rc" -ne 0 ] || [ "${#nopm[@]}" -eq 0 ] ||
		check_nopm_skips "$RESULTS_DIR/$name.log"
	return "$rc"
}

main "$@"
