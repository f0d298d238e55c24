#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kbuild's CHECK for the coccinelle step of lint-series.sh: the tree's
# scripts/coccicheck on the one source file kbuild names last, each
# semantic patch in a process of its own, COCCI_JOBS of them at a time.
# coccicheck itself runs them one after the other, and with C=2 kbuild
# also checks scripts/mod/empty.c while preparing: a source file that is
# not in COCCI_FILES is skipped.

set -euo pipefail

usage() {
	cat <<EOF
Usage: make C=2 CHECK=${0##*/} MODE=report COCCI_FILES="<files>" [COCCI_JOBS=N] <objects>

Run as kbuild's source checker only: kbuild passes the checker flags and,
last, the C file. Environment (kbuild exports srctree):
  COCCI_FILES     the source files to check, relative to \$srctree
  COCCI_JOBS      semantic patches run at once (default: nproc)
  COCCI_ONLY      only these semantic patches, relative to \$srctree
                  (default: every one in scripts/coccinelle)
  COCCI_REPORTED  a file to which the name of each semantic patch that
                  reports something is appended
Each report is printed as coccicheck prints it; the reports of one file
come together, in the order of the semantic patches.
EOF
}

case "${1:-}" in
-h|--help) usage; exit 0 ;;
esac
if [ $# -lt 1 ] || [ -z "${srctree:-}" ] || [ -z "${COCCI_FILES:-}" ]; then
	usage >&2
	exit 2
fi

file=${*: -1}
case " $COCCI_FILES " in
*" ${file#"$srctree"/} "*) ;;
*) exit 0 ;;
esac

if [ -n "${COCCI_ONLY:-}" ]; then
	semantic_patches=()
	for cocci in $COCCI_ONLY; do
		[ -f "$srctree/$cocci" ] || { echo "${0##*/}: no $srctree/$cocci" >&2; exit 2; }
		semantic_patches+=("$srctree/$cocci")
	done
else
	mapfile -t semantic_patches < <(find "$srctree/scripts/coccinelle" -name '*.cocci' -type f | sort)
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
jobs=${COCCI_JOBS:-$(nproc)}
n=0
while read -r cocci; do
	while [ "$(jobs -pr | wc -l)" -ge "$jobs" ]; do
		wait -n || true
	done
	n=$((n + 1))
	printf '%s\n' "${cocci#"$srctree"/}" > "$out/$(printf %04d $n).name"
	COCCI=$cocci "$srctree/scripts/coccicheck" "$@" > "$out/$(printf %04d $n)" 2>&1 &
done < <(printf '%s\n' "${semantic_patches[@]}")
wait
for f in "$out"/????; do
	[ -f "$f" ] || continue
	cat "$f"
	if [ -n "${COCCI_REPORTED:-}" ] &&
	   grep -qE '^[^ ]+:[0-9]+:[0-9]+-[0-9]+: ' "$f"; then
		cat "$f.name" >> "$COCCI_REPORTED"
	fi
done
