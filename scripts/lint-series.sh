#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Lint the series patch by patch: checkpatch, bisectable build, sparse, coccinelle.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly BISECT_TREE="$SCRATCH_TREE"
readonly BISECT_BUILD="$BUILD_DIR/bisect"
readonly LOG="$RESULTS_DIR/lint"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [checkpatch|build]...

  checkpatch  scripts/checkpatch.pl --strict on every posted patch (not the
              proof layer's, which is never mailed): no error,
              warning or check (the only tolerated line is the MAINTAINERS
              reminder for new files in patches before the MAINTAINERS patch)
  build       for the base and then each prefix of the postings, in a separate
              worktree ($BISECT_TREE) with the guest's .config: build the
              objects of every C file the series touches, with sparse (C=2);
              fail on a build error or on a sparse warning the prefix adds.
              A patch that only touches tools/testing/, .rst files or
              MAINTAINERS builds the same objects as its parent and is
              not rebuilt. Then run coccicheck on those files at the top
              (scripts/coccicheck-file.sh: the semantic patches $JOBS at a time)
              and, when it reports anything, at the base with the semantic
              patches that reported (no other can report something new),
              and fail on a report the series adds. Line numbers are ignored
              when comparing, so moved code does not count as new.
Without arguments, both. Logs go to $LOG/.

Exit status: 0 when clean, 1 otherwise.
EOF
}

fail=0
problem() { printf '%s: %s\n' "${0##*/}" "$*" >&2; fail=1; }

checkpatch() {
	local p out n=0 ignore=()

	# Debian's tarball has no history, so the Fixes: shas of upstream
	# commits cannot be looked up in it; a real kernel tree checks them.
	[ -n "$KERNEL_TREE" ] || ignore=(--ignore UNKNOWN_COMMIT_ID)
	while read -r p; do
		# spdxcheck.py needs Debian's python3 (python3-ply, python3-git).
		out=$(cd "$WORKTREE" && PATH=/usr/bin:$PATH ./scripts/checkpatch.pl --strict -q --terse \
		      "${ignore[@]}" "$PATCHES_DIR/$p" 2>&1 |
		      grep -v -e 'added, moved or deleted file(s), does MAINTAINERS need updating' \
			      -e '^total: ' || true)
		if [ -n "$out" ]; then
			# (a Traceback from spdxcheck.py lands here too)
			problem "checkpatch --strict on $p:"
			sed 's/^/    /' <<<"$out" >&2
		fi
		n=$((n + 1))
	done < <(series_patches)
	[ "$fail" -eq 1 ] || log "checkpatch --strict: $n patches clean"
}

bmake() {
	# </dev/null: make (a config prompt, the checker) must not eat the
	# list of commits the caller is reading.
	make -C "$BISECT_TREE" O="$BISECT_BUILD" ARCH=x86_64 CC="$KCC" -j"$JOBS" "$@" </dev/null
}

# Objects, in the guest's configuration, of the C files the series
# touches. Asked of the tree's makefiles, not of the guest's build
# directory: a kernel taken from the cache comes without its objects.
touched_objects() {
	local f

	series_c_files | while read -r f; do
		! kbuild_builds "$WORKTREE" x86_64 "$f" "$BUILD_DIR/qemu/.config" ||
			printf '%s\n' "${f%.c}.o"
	done
}

build_step() {
	local rev=$1 name=$2 objs=$3

	git -C "$BISECT_TREE" checkout -q -f "$rev" ||
		{ problem "$name: cannot check out $rev in $BISECT_TREE"; return 1; }
	# shellcheck disable=SC2086
	if ! bmake -s C=2 $objs >"$LOG/build-$name.log" 2>&1; then
		problem "$name: does not build (see $LOG/build-$name.log):"
		grep -E 'error' "$LOG/build-$name.log" | head -5 | sed 's/^/    /' >&2
		return 1
	fi
	grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error):' "$LOG/build-$name.log" |
		normalize_warnings > "$LOG/sparse-$name.txt" || true
}

# cocci NAME OBJECTS [SEMANTIC PATCHES]: coccicheck report of the checked
# out tree in cocci-NAME.txt, the semantic patches that reported in
# cocci-NAME.reported.
cocci() {
	local name=$1 objs=$2 only=${3:-}

	: > "$LOG/cocci-$name.reported"
	# Not -s: coccicheck prints nothing in a silent make.
	# shellcheck disable=SC2086
	COCCI_FILES="${objs//.o/.c}" COCCI_JOBS=$JOBS COCCI_ONLY="$only" \
		COCCI_REPORTED="$LOG/cocci-$name.reported" \
		bmake C=2 CHECK="$REPO_DIR/scripts/coccicheck-file.sh" MODE=report $objs \
		>"$LOG/cocci-$name.raw" 2>&1 || true
	grep -E '^[^ ]+:[0-9]+:[0-9]+-[0-9]+: ' "$LOG/cocci-$name.raw" |
		normalize_warnings > "$LOG/cocci-$name.txt" || true
}

added() { comm -13 "$1" "$2"; }

build() {
	local base top objs prev=base rev i=0 p new reported

	base=$(base_commit)
	objs=$(touched_objects | tr '\n' ' ')
	[ -f "$BUILD_DIR/qemu/.config" ] ||
		{ problem "no guest configuration in $BUILD_DIR/qemu: run 'make kernel' first"; return; }
	# The debug guest builds every C file of the series: none found is a
	# broken check, not a clean one.
	[ -n "$objs" ] ||
		{ problem "none of the series' C files is built in $BUILD_DIR/qemu/.config"; return; }
	scratch_tree_at "$base"
	mkdir -p "$BISECT_BUILD"
	cmp -s "$BUILD_DIR/qemu/.config" "$BISECT_BUILD/.config" ||
		cp "$BUILD_DIR/qemu/.config" "$BISECT_BUILD/.config"
	log "objects: $objs"

	build_step "$base" base "$objs" || return
	while read -r rev <&3; do
		i=$((i + 1))
		p=$(series_patches | sed -n "${i}p")
		if builds_as_parent "$rev"; then
			log "$p: no kernel source changed, build as the previous step"
			continue
		fi
		build_step "$rev" "$i" "$objs" || { problem "$p breaks the build"; continue; }
		new=$(added "$LOG/sparse-$prev.txt" "$LOG/sparse-$i.txt")
		[ -z "$new" ] || { problem "$p adds sparse warnings:"; sed 's/^/    /' <<<"$new" >&2; }
		prev=$i
	done 3< <(git -C "$WORKTREE" rev-list --reverse "$base..$(postings_head)")
	[ "$i" -eq "$(series_patches | wc -l)" ] ||
		problem "checked $i commits, but the postings have $(series_patches | wc -l) patches"
	top=$(postings_head)
	git -C "$BISECT_TREE" checkout -q -f "$top" ||
		{ problem "cannot check out the top of the series in $BISECT_TREE"; return; }
	cocci top "$objs"
	reported=$(sort -u "$LOG/cocci-top.reported" | tr '\n' ' ')
	: > "$LOG/cocci-base.txt"
	if [ -n "$reported" ]; then
		git -C "$BISECT_TREE" checkout -q -f "$base" &&
			cocci base "$objs" "$reported" &&
			git -C "$BISECT_TREE" checkout -q -f "$top" ||
			{ problem "cannot run coccicheck at the base in $BISECT_TREE"; return; }
	fi
	new=$(added "$LOG/cocci-base.txt" "$LOG/cocci-top.txt")
	[ -z "$new" ] || { problem "the series adds coccinelle reports:"; sed 's/^/    /' <<<"$new" >&2; }
	[ "$fail" -eq 1 ] || log "build, sparse, coccinelle: $i patches clean ($(wc -l < "$LOG/sparse-base.txt") sparse and $(wc -l < "$LOG/cocci-top.txt") coccinelle lines at the top, all at the base too)"
}

main() {
	local what

	case "${1:-}" in -h|--help) usage; exit 0 ;; esac
	need_worktree
	mkdir -p "$LOG"
	[ $# -gt 0 ] || set -- checkpatch build
	for what in "$@"; do
		case "$what" in
		checkpatch) checkpatch ;;
		build)
			need_x86_64_guest
			[ -f "$BUILD_DIR/qemu/.config" ] || die "no guest .config: run 'make kernel' (scripts/build-kernel.sh) first"
			build ;;
		*) usage >&2; exit 1 ;;
		esac
	done
	[ "$fail" -eq 0 ] || die "lint found the problems above"
}

main "$@"
