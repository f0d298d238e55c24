#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The calibration of make bench: the server's variants and their sweep on
# this host's own kernel, without an emulator, the same programs and
# entries as in the guest, in rounds whose variant order is drawn from a
# seed. Variants that need what this kernel lacks (EPOLL_CTL_DISABLE)
# skip.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly PROG_DIR="$BUILD_DIR/bench-prog"
# The programs and their entry scripts, as the guest's /bench holds them.
readonly RUN_DIR="$BUILD_DIR/bench-native"
readonly ENTRIES=(epoll_server_bench.sh epoll_server_sweep.sh)
: "${BENCH_NATIVE_ROUNDS:=5}"
: "${BENCH_SEED:=1}"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] RESULTS_DIR

Run bench/'s ${ENTRIES[*]} $BENCH_NATIVE_ROUNDS times on
this host ($(uname -r), $(nproc) CPUs), installed into $RUN_DIR
as the guest's /bench (programs built from bench/ into $PROG_DIR when
they are not there yet), each round with the server's
variants in an order drawn from seed $BENCH_SEED. Writes, replacing what
an earlier native run left there:
  RESULTS_DIR/raw/native-NN.log  each round's output, as the guest's KTAP
  RESULTS_DIR/native.tsv         round, kernel, seconds, order, load
                                 average (1 min) before and after
scripts/bench-report.py RESULTS_DIR then sets them beside the guest's.
The host's load is in every figure: run it when the machine is quiet
(the load is recorded), niced if others share it.

Environment:
  BENCH_NATIVE_ROUNDS  rounds (now: $BENCH_NATIVE_ROUNDS)
  BENCH_SEED           seed of the orders (now: $BENCH_SEED)
  OUT_DIR              as for every script

Exit status: 0 when every round ran; 1 otherwise.
EOF
}

load1() {
	cut -d' ' -f1 /proc/loadavg
}

# Round @1 into @2, in the format of the guest's KTAP (guest/init).
round() {
	local r=$1 out=$2 order=$3 n=0 entry rc

	{
		echo "KTAP version 1"
		echo "# native: $(uname -r) $(nproc) CPUs, round $r, variants $order"
		echo "1..${#ENTRIES[@]}"
		for entry in "${ENTRIES[@]}"; do
			n=$((n + 1))
			rc=0
			(cd "$RUN_DIR" && EPOLL_BENCH_VARIANTS=$order "./$entry") 2>&1 |
				sed 's/^/    /' || rc=$?
			case "$rc" in
			0) echo "ok $n $entry" ;;
			*) echo "not ok $n $entry # exit=$rc" ;;
			esac
		done
	} > "$out"
	! grep -q '^not ok' "$out"
}

main() {
	local rdir r tag order start before rc=0

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	"") usage >&2; exit 1 ;;
	esac
	[ $# -eq 1 ] || { usage >&2; exit 1; }
	rdir=$1
	[[ $BENCH_NATIVE_ROUNDS =~ ^[1-9][0-9]*$ ]] || die "BENCH_NATIVE_ROUNDS must be a positive number"
	[[ $BENCH_SEED =~ ^[1-9][0-9]*$ ]] || die "BENCH_SEED must be a positive number"
	[ -d "$rdir" ] || die "no results directory $rdir"
	rm -rf "$RUN_DIR"
	make -s -C "$REPO_DIR/bench" OUTPUT="$PROG_DIR" DESTDIR="$RUN_DIR" install-bench >/dev/null
	mkdir -p "$rdir/raw"
	rm -f "$rdir"/raw/native-*.log "$rdir/native.tsv"
	for ((r = 1; r <= BENCH_NATIVE_ROUNDS; r++)); do
		tag=$(printf 'native-%02d' "$r")
		# shellcheck disable=SC2046
		order=$(seeded_shuffle "$BENCH_SEED" "$tag" $("$RUN_DIR/epoll_server" --list) | tr ' ' ,)
		before=$(load1)
		start=$(date +%s)
		round "$r" "$rdir/raw/$tag.log" "$order" || rc=1
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$(uname -r)" "$(($(date +%s) - start))" \
			"$order" "$before" "$(load1)" >> "$rdir/native.tsv"
		log "native round $r: $(($(date +%s) - start))s, load $before -> $(load1)"
	done
	[ "$rc" -eq 0 ] || die "a native round failed: see $rdir/raw/native-*.log"
}

main "$@"
