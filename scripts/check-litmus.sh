#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The proof layer's litmus tests, checked with herd7 and the Linux-kernel
# memory model; herd7 is built once from Debian's source package.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly LITMUS_DIR="$REPO_DIR/litmus"
# herdtools7 is in Debian's newer suites only, built with their OCaml
# libraries; its source builds with Debian 12's toolchain (see build_herd).
: "${HERDTOOLS_SUITE:=forky}"
: "${HERDTOOLS_VERSION=7.58-2}"
readonly HERD_ROOT="$EPOLL_CACHE_DIR/herdtools7"
# The memory model: that of the kernel tree the series applies to.
: "${MEMORY_MODEL:=$WORKTREE/tools/memory-model}"
# What the build needs from Debian 12 (scripts/install-deps.sh has them).
readonly BUILD_TOOLS=(dune menhir ocamlfind)

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [LITMUS...]

Run herd7 with the Linux-kernel memory model ($MEMORY_MODEL,
linux-kernel.cfg) on each litmus test of litmus/ (or on the files
given), and fail unless each test's outcome is the one its header states
("Result: Never", "Sometimes" or "Always"). One line per test, as TAP.

herd7 is built on the first run, into $HERD_ROOT/<version>/:
the upstream tarball of Debian's herdtools7 source package
($HERDTOOLS_VERSION of $HERDTOOLS_SUITE, scripts/fetch-debian-package.sh
--source), compiled with Debian 12's OCaml, dune and menhir. Debian 12's
zarith is 1.12, and herdtools7 calls two functions zarith added in 1.13
(Z.of_int64_unsigned, Z.to_int64_unsigned, only in its AArch64 SVE
model); the build then defines them in the one module that uses them.
No binary package of a newer suite is installed.

Environment:
  HERDTOOLS_SUITE    suite of the source package (now: $HERDTOOLS_SUITE)
  HERDTOOLS_VERSION  its Debian version (now: '$HERDTOOLS_VERSION'; empty:
                     the suite's current one)
  MEMORY_MODEL       tools/memory-model of a kernel tree (now: $MEMORY_MODEL)
  EPOLL_CACHE_DIR    where herd7 is kept (now: $EPOLL_CACHE_DIR)
  JOBS               parallel jobs of the build (now: $JOBS)

Exit status: 0 when every test has its stated outcome, 1 otherwise or on
error.
EOF
}

# The upstream version in the name of a herdtools7 tarball.
tarball_version() {
	local name=${1##*/}

	name=${name#herdtools7_}
	printf '%s\n' "${name%.orig.tar.*}"
}

# Define what zarith 1.13 added, in the build's copy of the only module
# that calls it, when Debian 12's older zarith is what there is.
zarith_compat() {
	local src=$1 zv

	zv=$(ocamlfind query -format '%v' zarith) || die "no zarith for OCaml: run 'make deps'"
	if printf '%s\n' 1.13 "$zv" | sort -V -C; then
		return 0
	fi
	grep -q 'Z\.of_int64_unsigned' "$src/lib/SVEScalar.ml" ||
		die "herdtools7's lib/SVEScalar.ml no longer calls Z.of_int64_unsigned: update zarith_compat"
	log "zarith $zv < 1.13: defining Z.of_int64_unsigned and Z.to_int64_unsigned for lib/SVEScalar.ml"
	{
		cat <<'EOF'
(* Added by scripts/check-litmus.sh: zarith < 1.13 lacks these two. *)
module Z = struct
  include Z
  let two64 = shift_left one 64
  let of_int64_unsigned x =
    if Int64.compare x 0L >= 0 then of_int64 x else add (of_int64 x) two64
  let to_int64_unsigned z =
    if sign z < 0 || numbits z > 64 then raise Overflow
    else if numbits z < 64 then to_int64 z
    else to_int64 (sub z two64)
end
EOF
		cat "$src/lib/SVEScalar.ml"
	} > "$src/lib/SVEScalar.ml.new"
	mv "$src/lib/SVEScalar.ml.new" "$src/lib/SVEScalar.ml"
}

# Build herd7 into $HERD_ROOT/<version> unless it is there; its path on
# stdout. Built in a directory of its own and moved into place, so that
# two runs at once cannot leave half an installation.
build_herd() {
	local tarball version prefix tmp src t start

	# A pinned version built before needs no download.
	prefix="$HERD_ROOT/${HERDTOOLS_VERSION%-*}"
	if [ -n "$HERDTOOLS_VERSION" ] && [ -x "$prefix/bin/herd7" ]; then
		printf '%s\n' "$prefix/bin/herd7"
		return 0
	fi
	for t in "${BUILD_TOOLS[@]}"; do
		command -v "$t" >/dev/null || die "no $t: run 'make deps' (scripts/install-deps.sh)"
	done
	tarball=$("$REPO_DIR/scripts/fetch-debian-package.sh" --source herdtools7 \
		"$HERDTOOLS_SUITE" ${HERDTOOLS_VERSION:+"$HERDTOOLS_VERSION"})
	version=$(tarball_version "$tarball")
	prefix="$HERD_ROOT/$version"
	if [ -x "$prefix/bin/herd7" ]; then
		printf '%s\n' "$prefix/bin/herd7"
		return 0
	fi
	start=$(date +%s)
	mkdir -p "$HERD_ROOT"
	tmp=$(mktemp -d "$HERD_ROOT/build.XXXXXX")
	# shellcheck disable=SC2064
	trap "rm -rf '$tmp'" EXIT
	tar -xzf "$tarball" -C "$tmp"
	src=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d)
	[ -f "$src/herd/dune" ] || die "$tarball has no herd/ directory"
	zarith_compat "$src"
	log "building herd7 $version (a few minutes of CPU; log in $tmp/build.log)"
	(
		cd "$src"
		# herd7 finds its model files (herd/libdir) below the prefix.
		sh ./version-gen.sh "$prefix"
		dune build -j "$JOBS" --profile release herd/herd.exe
	) > "$tmp/build.log" 2>&1 || { tail -20 "$tmp/build.log" >&2; die "building herd7 failed"; }
	mkdir -p "$tmp/prefix/bin" "$tmp/prefix/share/herdtools7"
	cp "$src/_build/default/herd/herd.exe" "$tmp/prefix/bin/herd7"
	cp -r "$src/herd/libdir" "$tmp/prefix/share/herdtools7/herd"
	mv -T "$tmp/prefix" "$prefix" 2>/dev/null || [ -x "$prefix/bin/herd7" ] ||
		die "could not install herd7 into $prefix"
	log "herd7 $version built in $(($(date +%s) - start)) s: $prefix"
	printf '%s\n' "$prefix/bin/herd7"
}

# The outcome a test's header states: Never, Sometimes or Always.
stated_result() {
	sed -n 's/^ \* Result: \(Never\|Sometimes\|Always\)\b.*/\1/p' "$1" | head -1
}

main() {
	local herd test want got n=0 bad=0 out
	local -a tests

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	-*) usage >&2; exit 1 ;;
	esac
	[ -f "$MEMORY_MODEL/linux-kernel.cfg" ] ||
		die "no memory model at $MEMORY_MODEL: run 'make tree' or set MEMORY_MODEL"
	if [ $# -gt 0 ]; then
		tests=("$@")
	else
		tests=("$LITMUS_DIR"/*.litmus)
		[ -f "${tests[0]}" ] || die "no litmus tests in $LITMUS_DIR"
	fi
	herd=$(build_herd)
	echo "TAP version 13"
	echo "1..${#tests[@]}"
	for test in "${tests[@]}"; do
		n=$((n + 1))
		test=$(realpath "$test")
		want=$(stated_result "$test")
		[ -n "$want" ] || die "${test#"$REPO_DIR"/} states no ' * Result: Never|Sometimes|Always'"
		out=$(cd "$MEMORY_MODEL" && "$herd" -conf linux-kernel.cfg "$test" 2>&1) ||
			{ printf '%s\n' "$out" >&2; die "herd7 failed on ${test#"$REPO_DIR"/}"; }
		got=$(printf '%s\n' "$out" | awk '$1 == "Observation" { print $3 }')
		if [ "$got" = "$want" ]; then
			echo "ok $n ${test##*/} # $got"
		else
			echo "not ok $n ${test##*/} # herd7 says ${got:-nothing}, the header $want"
			bad=$((bad + 1))
		fi
	done
	[ "$bad" -eq 0 ] || die "$bad of $n litmus tests do not have the outcome their header states"
	log "$n litmus tests have the outcome their header states"
}

main "$@"
