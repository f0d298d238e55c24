#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Mutation testing of the kselftests: boot a kernel that carries known
# breakages and check that the tests listed for each one fail.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly PATCH="$REPO_DIR/mutants/guest.patch"
readonly LIST="$REPO_DIR/mutants/guest.list"
readonly MUT_OUT="$OUT_DIR/mutants"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [--check | [-p PROGRAM] N...]

Apply mutants/guest.patch on top of the series in $MUT_OUT/linux (a
worktree of $WORKTREE), build the guest kernel and the selftests there
once, then for each line of mutants/guest.list (all, or those of the N
given; with -p, only those of PROGRAM) boot with epoll_mutant=N, run only
the line's test program (-m64 and -m32), and check that every test
listed for it failed in both ABIs.
Boot-time KUnit is off (kunit.enable=0); the consoles are kept as
$MUT_OUT/results/mutant-N.log.

mutants/guest.list: one mutant and program a line (a mutant may be
listed once for each program that must catch it),
  N  program  test[,test...]  what is broken
test names as the harness prints them (fixture[.variant].test); N is "-"
for a test that no kernel mutant can fail (it is shown failing another
way, said on the line).

--check, without booting anything (make check runs it): the patch
applies on top of the series, the mutant numbers in the patch and in the
list agree, every listed test exists, and every test of the programs in
the list is listed for some mutant here or failed on a generated mutant
in the guest sweep of make mutate (a killer in mutants/results.tsv).

Takes about a minute a mutant under TCG, plus the kernel build.
Exit status: 0 if every mutant was killed as listed, 1 otherwise.
EOF
}

prepare() {
	worktree_at "$MUT_OUT/linux" "$SERIES_BRANCH"
	git -C "$MUT_OUT/linux" apply "$PATCH" ||
		die "mutants/guest.patch does not apply on top of the series: regenerate it (see its header)"
	# The mutant tree is the applied series plus the patch: the stages
	# run on it see the markers apply-series.sh left for the series.
	cp "$OUT_DIR/base-commit" "$SERIES_APPLIED_FILE" "$MUT_OUT/"
	OUT_DIR=$MUT_OUT "$REPO_DIR/scripts/build-kernel.sh"
	OUT_DIR=$MUT_OUT "$REPO_DIR/scripts/build-selftests.sh"
	OUT_DIR=$MUT_OUT "$REPO_DIR/scripts/make-initramfs.sh"
}

# Harness names (fixture[.variant].test, global.test) of the tests in @src.
test_names() {
	awk '
		{ gsub(/[ \t]/, "") }
		/^FIXTURE_VARIANT_ADD\(/ {
			split(substr($0, 21), a, /[,)]/)
			nv[a[1]]++; v[a[1], nv[a[1]]] = a[2]
		}
		/^TEST_F(_TIMEOUT)?\(/ {
			sub(/^TEST_F(_TIMEOUT)?\(/, ""); split($0, a, /[,)]/)
			nt++; tf[nt] = a[1]; tn[nt] = a[2]
		}
		/^TEST\(/ {
			sub(/^TEST\(/, ""); split($0, a, /[,)]/)
			nt++; tf[nt] = "global"; tn[nt] = a[1]
		}
		END {
			for (i = 1; i <= nt; i++) {
				if (!nv[tf[i]])
					print tf[i] "." tn[i]
				for (j = 1; j <= nv[tf[i]]; j++)
					print tf[i] "." v[tf[i], j] "." tn[i]
			}
		}
	' "$1"
}

# The list's entries without comments: N program tests what.
entries() {
	sed -e '/^[[:space:]]*#/d' -e '/^[[:space:]]*$/d' "$LIST"
}

# The tests of @1 that failed (not skipped) on a generated mutant in the
# guest sweep, as mutants/results.tsv records it (make mutate).
swept_failing() {
	awk -F'\t' '!/^#/ { print $5 }' "$REPO_DIR/mutants/results.tsv" | tr , '\n' |
		sed -n "s/^$1:\([^:]*\)\$/\1/p"
}

check_list() {
	local src prog problems=0 in_patch in_list t

	git -C "$WORKTREE" apply --check "$PATCH" 2>/dev/null || {
		log "mutants/guest.patch does not apply on top of the series: regenerate it (see its header)"
		problems=$((problems + 1))
	}
	in_patch=$(grep -oE 'epoll_mutant [!=]= [0-9]+' "$PATCH" | awk '{ print $3 }' | sort -nu)
	in_list=$(entries | awk '$1 != "-" { print $1 }' | sort -nu)
	if [ "$in_patch" != "$in_list" ]; then
		log "mutant numbers differ: patch has $(tr '\n' ' ' <<<"$in_patch")," \
			"list has $(tr '\n' ' ' <<<"$in_list")"
		problems=$((problems + 1))
	fi
	# A mutant may be listed once per program.
	for t in $(entries | awk '$1 != "-" { print $1 "/" $2 }' | sort | uniq -d); do
		log "mutant ${t%%/*} is listed twice for ${t#*/}"
		problems=$((problems + 1))
	done
	for prog in $(entries | awk '{ print $2 }' | sort -u); do
		src="$WORKTREE/tools/testing/selftests/filesystems/epoll/$prog.c"
		[ -f "$src" ] || { log "no test program $prog ($src)"; problems=$((problems + 1)); continue; }
		entries | awk -v p="$prog" '$2 == p { print $3 }' | tr , '\n' |
			LC_ALL=C sort -u > "$MUT_OUT/listed"
		test_names "$src" | LC_ALL=C sort -u > "$MUT_OUT/names"
		for t in $(LC_ALL=C comm -23 "$MUT_OUT/listed" "$MUT_OUT/names"); do
			log "$prog has no test $t"
			problems=$((problems + 1))
		done
		swept_failing "$prog" | LC_ALL=C sort -u - "$MUT_OUT/listed" > "$MUT_OUT/seen"
		for t in $(LC_ALL=C comm -13 "$MUT_OUT/seen" "$MUT_OUT/names"); do
			log "$prog: $t is listed for no mutant and failed for no generated one"
			problems=$((problems + 1))
		done
	done
	[ "$problems" -eq 0 ] || die "mutants/: $problems problems"
	log "mutants/guest.list: $(wc -l <<<"$in_list") mutants, every test of $(entries | awk '{ print $2 }' | sort -u | tr '\n' ' ')listed"
}

# Boot mutant @n with @prog; print one result line, fail if it survived.
run_one() {
	local n=$1 prog=$2 tests=$3 what=$4 log abi t failed missing="" start

	log="$MUT_OUT/results/mutant-$n.log"
	start=$(date +%s)
	OUT_DIR=$MUT_OUT QEMU_APPEND="epoll_mutant=$n kunit.enable=0 epoll.tests=$prog" \
		"$REPO_DIR/scripts/run-qemu.sh" 2>>"$MUT_OUT/results/run-qemu.log" || true
	cp "$MUT_OUT/results/ktap.log" "$log"
	grep -q '^# epoll-guest: done' "$log" || missing="(guest did not finish) "
	failed=$("$REPO_DIR/scripts/summarize.py" --list-failed "$MUT_OUT/results")
	for abi in m64 m32; do
		for t in ${tests//,/ }; do
			grep -qFx "$abi/$prog:$t" <<<"$failed" || missing+="$abi/$t "
		done
	done
	if [ -z "$missing" ]; then
		printf 'killed    %3s  %s (%s failed, %ss)\n' "$n" "$what" \
			"$(grep -c '^ *# not ok [0-9]* ' "$log")" "$(($(date +%s) - start))"
		return 0
	fi
	printf 'SURVIVED  %3s  %s: passed %s\n' "$n" "$what" "$missing"
	return 1
}

main() {
	local n prog tests what want only='' survivors=0 count=0

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	--check) need_worktree; mkdir -p "$MUT_OUT"; check_list; exit 0 ;;
	-p)
		[ $# -ge 2 ] || { usage >&2; exit 1; }
		only=$2
		shift 2
		entries | awk -v p="$only" '$2 == p { found = 1 } END { exit !found }' ||
			die "no mutant of program '$only' in mutants/guest.list"
		;;
	esac
	want=" $* "
	for n in "$@"; do
		[[ $n =~ ^[0-9]+$ ]] || { usage >&2; exit 1; }
		grep -q "^$n " "$LIST" || die "no mutant $n in mutants/guest.list"
	done
	need_worktree
	mkdir -p "$MUT_OUT/results"
	prepare

	while read -r n prog tests what; do
		[ "$n" != - ] || continue
		[ -z "$only" ] || [ "$prog" = "$only" ] || continue
		[ "$want" = "  " ] || [[ $want == *" $n "* ]] || continue
		count=$((count + 1))
		run_one "$n" "$prog" "$tests" "$what" </dev/null ||
			survivors=$((survivors + 1))
	done < <(entries)
	log "$count mutants, $((count - survivors)) killed, $survivors survived"
	[ "$survivors" -eq 0 ]
}

main "$@"
