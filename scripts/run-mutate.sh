#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Mutation testing with generated mutants: scripts/mutate.py makes them,
# one kernel carries them all, scripts/mutate-sweep.py runs the tests.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

# The mutation tree and its builds; make check's sample has its own, and
# writes the list of mutants there, not to mutants/.
MUT_OUT="$OUT_DIR/mut"
GEN_OUT="$REPO_DIR/mutants/generated.tsv"
readonly GEN="$REPO_DIR/mutants/generated.tsv"
readonly UNCOMPILABLE="$REPO_DIR/mutants/uncompilable"
readonly KUNITCONFIG="fs/tests/.kunitconfig"
# Tests written for survivors, not in the series yet: the sweep runs them.
readonly NEW_TESTS="$REPO_DIR/new-tests"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [--check | sample | prepare | prepare-kunit | kunit [ID...] | guest [ID...] | report | seed | all]

prepare  check out the series in $MUT_OUT/linux (a worktree of
         $WORKTREE), apply new-tests/*.patch, switch every mutant of
         scripts/mutate.py in (eventpoll.mutant=N selects one, 0 none),
         write mutants/generated.tsv, build the UML KUnit kernel, the
         debug guest kernel, the selftests and the initramfs there, and
         in $MUT_OUT/fast the same guest without sanitizers
         (config/nodebug.config) with the LTP and liburing tests of
         external/, for the posted layer's sweep and the suites'
prepare-kunit  only the mutant tree and the UML KUnit kernel (enough
         for 'kunit')
kunit    one UML boot per mutant (all, or the IDs given), results in
         $MUT_OUT/kunit.tsv (kept: a second run resumes)
guest    the kselftests (-m64) in the guest, one run per mutant, many
         mutants a boot: GUEST_LAYER=posted (default) the posted
         programs on every mutant, GUEST_LAYER=proof the proof layer's
         on the mutants nothing has killed yet; GUEST_LAYER=suites the
         LTP and liburing tests on the mutants that the kselftest cases
         they were written from killed (mutants/moved.tsv)
report   mutants/results.tsv and the scores (scripts/mutate-sweep.py report)
seed     on a machine without $MUT_OUT/kunit.tsv and guest-posted.tsv, write them
         from mutants/results.tsv, so that kunit and guest re-run only
         the IDs given and report keeps the recorded verdicts
all      prepare, kunit, guest (posted, proof, suites), report (make mutate)
sample   make check's short mode: the mutant tree and its UML KUnit kernel
         in $OUT_DIR/mut-check, then KUnit on SAMPLE (default 12)
         mutants spread over mutants/results.tsv, each of which must get
         its recorded verdict

--check, without building anything (make check runs it): new-tests/
applies to the series; the generator still applies to the series and
gives the mutants of mutants/generated.tsv; mutants/results.tsv and
mutants/equivalent.tsv are of those mutants (not of an older list),
and results.tsv covers every one and names only tests that exist.

Mutants listed in mutants/uncompilable (one id a line) are generated but
not switched in. Wall time on 2 cores under TCG: see
Documentation/testing.md.

Environment: OUT_DIR (now: $OUT_DIR), JOBS (now: $JOBS).
Exit status: 0 on success, 1 on error or a failed check.
EOF
}

new_tests() {
	compgen -G "$NEW_TESTS/*.patch" || true
}

# Apply new-tests/*.patch in the tree @1, or with --check only check
# that they apply to the series in $WORKTREE.
apply_new_tests() {
	local p n=0 tree=$1 check=()

	[ "$tree" != --check ] || { tree=$WORKTREE; check=(--check); }
	for p in $(new_tests); do
		git -C "$tree" apply "${check[@]}" "$p" ||
			die "${p#"$REPO_DIR"/} does not apply on top of the series: rebase it"
		n=$((n + 1))
	done
	log "new-tests/: $n patches apply on top of the series"
}

excluded() {
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$UNCOMPILABLE" 2>/dev/null | paste -sd, -
}

# The mutant tree and the UML KUnit kernel with every mutant.
prepare_kunit() {
	worktree_at "$MUT_OUT/linux" "$SERIES_BRANCH"
	# The mutant tree is the applied series plus the mutants: the stages
	# run on it see the markers apply-series.sh left for the series.
	cp "$OUT_DIR/base-commit" "$SERIES_APPLIED_FILE" "$MUT_OUT/"
	apply_new_tests "$MUT_OUT/linux"
	mkdir -p "$MUT_OUT/build"
	"$REPO_DIR/scripts/mutate.py" "$MUT_OUT/linux" --apply --tsv "$GEN_OUT" \
		--exclude "$(excluded)"
	(cd "$MUT_OUT/linux" && with_timeout 3000 kunit.py \
		./tools/testing/kunit/kunit.py build --kunitconfig="$KUNITCONFIG" \
		--build_dir="$MUT_OUT/build/kunit-uml" --jobs="$JOBS" \
		--make_options="CC=$KCC" "${KUNIT_KCONFIG_ADD[@]}")
}

# The guest of OUT_DIR @1 on the mutant tree: kernel, selftests, with
# @2 = suites the LTP and liburing tests, initramfs.
prepare_guest() {
	local dir=$1 suites=${2:-}

	OUT_DIR=$dir "$REPO_DIR/scripts/build-kernel.sh"
	OUT_DIR=$dir "$REPO_DIR/scripts/build-selftests.sh"
	if [ "$suites" = suites ]; then
		OUT_DIR=$dir "$REPO_DIR/scripts/build-ltp-tests.sh"
		OUT_DIR=$dir "$REPO_DIR/scripts/build-liburing-tests.sh"
	fi
	OUT_DIR=$dir "$REPO_DIR/scripts/make-initramfs.sh"
}

prepare() {
	prepare_kunit
	prepare_guest "$MUT_OUT"
	# The guest of the posted layer and of the suites (GUEST_LAYER=posted,
	# suites), without sanitizers: the same tree.
	mkdir -p "$MUT_OUT/fast"
	ln -sfn ../linux "$MUT_OUT/fast/linux"
	cp "$MUT_OUT/base-commit" "$MUT_OUT/$(basename "$SERIES_APPLIED_FILE")" "$MUT_OUT/fast/"
	DEBUG_CONFIG="$REPO_DIR/config/nodebug.config" \
		EXTRA_CONFIGS="$REPO_DIR/config/hung-task.config" \
		prepare_guest "$MUT_OUT/fast" suites
}

main() {
	local cmd=${1:-all}

	case "$cmd" in
	-h|--help) usage; exit 0 ;;
	esac
	need_x86_64_guest
	case "$cmd" in
	--check)
		need_worktree
		apply_new_tests --check
		exec "$REPO_DIR/scripts/mutate.py" "$WORKTREE" --check \
			--exclude "$(excluded)" ;;
	prepare) need_worktree; prepare ;;
	prepare-kunit) need_worktree; prepare_kunit ;;
	kunit|guest|report|seed) shift || true; exec "$REPO_DIR/scripts/mutate-sweep.py" "$cmd" "$@" ;;
	sample)
		need_worktree
		MUT_OUT="$OUT_DIR/mut-check"
		GEN_OUT="$MUT_OUT/generated.tsv"
		mkdir -p "$MUT_OUT"
		prepare_kunit
		MUT_OUT="$MUT_OUT" exec "$REPO_DIR/scripts/mutate-sweep.py" sample ;;
	all)
		need_worktree
		prepare
		"$REPO_DIR/scripts/mutate-sweep.py" kunit
		GUEST_LAYER=posted "$REPO_DIR/scripts/mutate-sweep.py" guest
		GUEST_LAYER=proof "$REPO_DIR/scripts/mutate-sweep.py" guest
		GUEST_LAYER=suites "$REPO_DIR/scripts/mutate-sweep.py" guest
		"$REPO_DIR/scripts/mutate-sweep.py" report ;;
	*) usage >&2; exit 1 ;;
	esac
}

main "$@"
