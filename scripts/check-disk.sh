#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Refuse to start a run that the disk cannot hold, before hours of it.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

# What make check leaves in a clean clone's out/ (9.3 GiB on 2026-12-07:
# out/linux, out/scratch, the mutation tree, the two backport trees and
# the builds; with a margin), and what the base trees take in
# $EPOLL_CACHE_DIR when they are not there yet.
readonly OUT_GIB=${OUT_GIB:-11}
readonly CACHE_GIB=${CACHE_GIB:-8}
readonly MIN_GIB=2

usage() {
	cat <<EOF
Usage: ${0##*/} [-h]

Check that the file systems of \$OUT_DIR and \$EPOLL_CACHE_DIR have room
for a run of make check: $OUT_GIB GiB for \$OUT_DIR less what it holds
already (at least $MIN_GIB GiB), and $CACHE_GIB GiB more while the base
trees are not in \$EPOLL_CACHE_DIR/base.

Environment:
  OUT_DIR          now: $OUT_DIR
  EPOLL_CACHE_DIR  now: $EPOLL_CACHE_DIR
  OUT_GIB, CACHE_GIB  the two sizes above

Exit status: 0 when there is room, 1 otherwise (nothing is deleted).
EOF
}

gib_free() {
	df -P -B1G "$1" | awk 'NR == 2 { print $4 }'
}

# The first existing directory of @1 and its parents.
existing() {
	local d=$1

	while [ ! -d "$d" ]; do d=$(dirname "$d"); done
	printf '%s\n' "$d"
}

main() {
	local out_fs cache_fs have need free

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	'') ;;
	*) usage >&2; exit 1 ;;
	esac
	out_fs=$(existing "$OUT_DIR")
	cache_fs=$(existing "$EPOLL_CACHE_DIR")
	have=0
	[ ! -d "$OUT_DIR" ] || have=$(du -sx -B1G "$OUT_DIR" | cut -f1)
	need=$((OUT_GIB - have))
	[ "$need" -ge "$MIN_GIB" ] || need=$MIN_GIB
	if ! compgen -G "$EPOLL_CACHE_DIR/base/linux-source-*" >/dev/null; then
		if [ "$(df -P "$out_fs" | awk 'NR == 2 { print $1 }')" = \
		     "$(df -P "$cache_fs" | awk 'NR == 2 { print $1 }')" ]; then
			need=$((need + CACHE_GIB))
		elif [ "$(gib_free "$cache_fs")" -lt "$CACHE_GIB" ]; then
			die "$cache_fs has $(gib_free "$cache_fs") GiB free, the base trees need" \
				"$CACHE_GIB GiB in $EPOLL_CACHE_DIR: free some, or set EPOLL_CACHE_DIR"
		fi
	fi
	free=$(gib_free "$out_fs")
	[ "$free" -ge "$need" ] ||
		die "$out_fs has $free GiB free, this run needs $need GiB more in $OUT_DIR" \
			"(it holds $have GiB): free some (make clean removes out/build and" \
			"out/results), or set OUT_DIR to a larger file system"
	log "$free GiB free for $OUT_DIR, $need GiB needed"
}

main "$@"
