#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build Documentation/userspace-api with Sphinx at the base and on the
# patched tree; fail on any warning the series adds or about epoll.rst.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

# The document the series adds, relative to Documentation/.
readonly DOC=userspace-api/epoll
readonly SPHINXDIR=${DOC%%/*}
# Worktree of the base commit, only while the base is being built.
readonly BASE_TREE="$OUT_DIR/htmldocs-base"
readonly LOG="$RESULTS_DIR/htmldocs"
# Base warnings depend only on the base commit (and Sphinx): kept across runs.
readonly CACHE="$EPOLL_CACHE_DIR/htmldocs"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [-f] [KERNEL_SRC]

Run 'make O=... SPHINXDIRS=$SPHINXDIR htmldocs' on the base commit and on
the patched tree, and fail when the patched build
  - has a warning the base build does not have (paths and line numbers
    ignored when comparing),
  - has any warning mentioning ${DOC##*/}.rst, or
  - did not write $DOC.html.

The base is built in a temporary worktree ($BASE_TREE) and its
warnings are cached in $CACHE/, keyed by base commit and
Sphinx version, so a rerun only builds the patched tree. Logs and
warning lists go to $LOG/, the HTML to
$BUILD_DIR/htmldocs/Documentation/output/.

KERNEL_SRC is the patched kernel work tree (default: $WORKTREE);
its edits count, committed or not. Sphinx and the rest are Debian's
(scripts/install-deps.sh): /usr/bin comes first in PATH.

Options:
  -h  show this help and exit
  -f  rebuild the base even if its warnings are cached

Exit status: 0 if no warning was added, 1 otherwise or on error.
EOF
}

# The machine's first python3 may lack Debian's modules (yaml, docutils).
export PATH=/usr/bin:$PATH
# English messages from Sphinx, and one collation for sort and comm.
export LC_ALL=C.UTF-8

# Build the docs of tree $1 in build dir $2 (from scratch: an incremental
# Sphinx build prints warnings only for the files it rereads); log to $3.
build_docs() {
	local tree=$1 out=$2 log=$3 start rc=0

	rm -rf "$out"
	mkdir -p "$out"
	start=$(date +%s)
	make -C "$tree" O="$out" -j"$JOBS" SPHINXDIRS="$SPHINXDIR" htmldocs \
		>"$log" 2>&1 || rc=$?
	log "${log##*/}: $(($(date +%s) - start)) s"
	if [ "$rc" -ne 0 ]; then
		tail -n 20 "$log" | sed 's/^/    /' >&2
		die "make htmldocs failed in $tree (exit $rc, see $log)"
	fi
}

# Warning lines of a build log, paths below tree $1 and build dir $2
# made relative, line numbers kept.
warnings() {
	sed -E -e 's/\x1b\[[0-9;]*m//g' -e "s|$1/||g" -e "s|$2/||g" |
		grep -E '(WARNING|ERROR|CRITICAL|SEVERE)|: (warning|error):' || true
}

# The base warnings, from the cache or from a build of the base commit.
base_warnings() {
	local ksrc=$1 rebuild=$2 base key

	base=$(base_commit)
	git -C "$ksrc" rev-parse -q --verify "$base^{commit}" >/dev/null ||
		die "base commit $base is not in $ksrc: run 'make tree' (scripts/apply-series.sh)"
	key="$CACHE/$base-sphinx-$(sphinx-build --version 2>&1 | awk '{ print $NF }').warnings"
	if [ "$rebuild" -eq 0 ] && [ -f "$key" ]; then
		log "base $(git -C "$ksrc" log -1 --format=%h "$base"): warnings cached in $key"
		cp "$key" "$LOG/base.warnings"
		return
	fi

	rm -rf "$BASE_TREE"
	git -C "$ksrc" worktree prune
	git -C "$ksrc" worktree add -q --detach "$BASE_TREE" "$base"
	build_docs "$BASE_TREE" "$BUILD_DIR/htmldocs-base" "$LOG/base.log"
	[ -f "$BUILD_DIR/htmldocs-base/Documentation/output/$SPHINXDIR/index.html" ] ||
		die "the base build wrote no $SPHINXDIR/index.html (see $LOG/base.log)"
	warnings "$BASE_TREE" "$BUILD_DIR/htmldocs-base" <"$LOG/base.log" >"$LOG/base.warnings"
	mkdir -p "$CACHE"
	cp "$LOG/base.warnings" "$key.tmp"
	mv "$key.tmp" "$key"
	# Only the warnings are needed again: drop the tree and its output.
	git -C "$ksrc" worktree remove --force "$BASE_TREE"
	rm -rf "$BUILD_DIR/htmldocs-base"
}

main() {
	local opt rebuild=0 ksrc out new mine

	while getopts 'hf' opt; do
		case $opt in
		h) usage; exit 0 ;;
		f) rebuild=1 ;;
		*) usage >&2; exit 1 ;;
		esac
	done
	shift $((OPTIND - 1))
	[ $# -le 1 ] || { usage >&2; exit 1; }
	ksrc=${1:-${KERNEL_SRC:-$WORKTREE}}
	ksrc=$(cd "$ksrc" 2>/dev/null && pwd) ||
		die "no kernel tree at ${1:-${KERNEL_SRC:-$WORKTREE}}: run 'make tree' (scripts/apply-series.sh)"
	if [ ! -f "$ksrc/Documentation/Makefile" ] || ! git -C "$ksrc" rev-parse -q --git-dir >/dev/null; then
		die "$ksrc is not a kernel git tree (set KERNEL_SRC or pass it)"
	fi
	[ -f "$ksrc/Documentation/$DOC.rst" ] ||
		die "no Documentation/$DOC.rst in $ksrc: is the series applied? (scripts/apply-series.sh)"
	command -v sphinx-build >/dev/null ||
		die "sphinx-build is not installed: run 'make deps' (scripts/install-deps.sh)"
	mkdir -p "$LOG"
	rm -f "$LOG"/*.log "$LOG"/*.warnings

	base_warnings "$ksrc" "$rebuild"

	out="$BUILD_DIR/htmldocs"
	build_docs "$ksrc" "$out" "$LOG/patched.log"
	warnings "$ksrc" "$out" <"$LOG/patched.log" >"$LOG/patched.warnings"

	new=$(comm -13 <(normalize_warnings <"$LOG/base.warnings") \
		<(normalize_warnings <"$LOG/patched.warnings"))
	printf '%s\n' "$new" | sed '/^$/d' >"$LOG/new.warnings"
	mine=$(grep -F "${DOC##*/}.rst" "$LOG/patched.warnings" || true)
	if [ -n "$new" ]; then
		fail "the patched tree adds $(wc -l <"$LOG/new.warnings") Sphinx warning(s):"
		sed 's/^/    /' "$LOG/new.warnings" >&2
	else
		pass "no warning added ($(wc -l <"$LOG/base.warnings") at base, $(wc -l <"$LOG/patched.warnings") patched)"
	fi
	if [ -n "$mine" ]; then
		fail "warnings about ${DOC##*/}.rst:"
		printf '%s\n' "$mine" | sed 's/^/    /' >&2
	else
		pass "no warning about ${DOC##*/}.rst"
	fi
	if [ -f "$out/Documentation/output/$DOC.html" ]; then
		pass "$out/Documentation/output/$DOC.html written"
	else
		fail "no $DOC.html in $out/Documentation/output"
	fi

	if [ "$failures" -ne 0 ]; then
		log "$failures check(s) failed; logs in $LOG/"
		exit 1
	fi
	log "all checks passed"
}

main "$@"
