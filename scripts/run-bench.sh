#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: what EPOLL_CTL_DISABLE buys against the ways servers retire
# connections today (bench/epoll_server, every variant), what the series
# costs everybody else (bench/epoll_micro, perf bench epoll, the
# instructions it adds), fix 3's payoff, on four kernels in boots of a
# seeded random order; the same server workload natively on this host and
# with one vCPU, to calibrate the emulator; tables, JSON and plots.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

# Per kernel, an OUT_DIR of its own that build-kernel.sh, make-initramfs.sh
# and run-qemu.sh use as they use $OUT_DIR: linux/ (a worktree at the
# kernel's commit), build/qemu/ (its O= dir), build/bench/ (the programs,
# the guest's /bench), results/ (the last boot's logs).
# base: the tree the postings apply to. control: base with a change of
# code layout only (bench/layout-control.patch), so that a ratio against
# base shows what moving code costs by itself. fixes: base with the fixes
# posting. patched: every posting (not the proof layer).
readonly KERNELS=(base control fixes patched)
# A boot of the patched kernel with one vCPU instead of two: the server
# variants only, to see whether two vCPUs taking turns on one host thread
# (-icount) change how they rank.
readonly SMP1=patched-smp1
readonly BENCH_RESULTS="$RESULTS_DIR/bench"
# The bench programs and perf, built once for every image.
readonly PROG_DIR="$BUILD_DIR/bench-prog"
readonly PERF_DIR="$BUILD_DIR/perf"
# What each boot runs (guest/init, epoll.bench=).
readonly MICRO_ENTRY=epoll_micro_bench.sh
readonly SERVER_ENTRY=epoll_server_bench.sh
readonly SWEEP_ENTRY=epoll_server_sweep.sh
readonly WAKEUPS_ENTRY=epoll_wakeups_bench.sh
readonly PERF_ENTRY=perf_bench_epoll.sh
readonly CONTROL_PATCH="$REPO_DIR/bench/layout-control.patch"
# Boots of each kernel, and of the patched one with one vCPU.
: "${BENCH_BOOTS:=5}"
: "${BENCH_SMP1_BOOTS:=$BENCH_BOOTS}"
# Rounds of the server on this host, without an emulator (0: none).
: "${BENCH_NATIVE_ROUNDS:=$BENCH_BOOTS}"
# The seed of every order: kernels within a round, variants within a boot.
: "${BENCH_SEED:=1}"
# Guest time from executed instructions, not from the busy host; none:
# the guest's clock runs free with the host's.
: "${BENCH_ICOUNT:=shift=1,sleep=off}"
# Factor on the microbenchmarks' iteration counts (epoll_bench.scale=).
: "${BENCH_SCALE:=1}"
# Runs of each perf bench epoll test per boot.
: "${BENCH_PERF_REPS:=3}"
# Per-boot limit, seconds.
: "${BENCH_BOOT_TIMEOUT:=1800}"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h]

Build four kernels from the same non-debug configuration (tinyconfig +
config/qemu-x86_64.config + config/bench.config, build-kernel.sh's
KERNEL_FLAVOUR=bench), each from a worktree of \$OUT_DIR/linux into
\$OUT_DIR/build/bench-<kernel>/, with ccache:
  base      the commit the postings apply to
  control   base with bench/layout-control.patch, which moves code and
            changes nothing else: the noise floor of code layout
  fixes     base with the fixes posting
  patched   every posting (the proof layer is not built into it)
Build bench/ once, -m64 static, and tools/perf of \$OUT_DIR/linux once,
static and minimal; pack both into each kernel's initramfs as /bench.
Disassemble epoll's functions of each kernel (scripts/bench-insns.py).

Boot each kernel $BENCH_BOOTS times under QEMU with -icount $BENCH_ICOUNT, and
the patched one $BENCH_SMP1_BOOTS more times with -smp 1 ($SMP1), in rounds
of one boot each whose order is drawn from the seed $BENCH_SEED; every boot of
the patched kernel runs the server's variants in an order drawn from the
same seed for that boot. What runs (epoll.bench=): every boot
bench/epoll_micro, bench/epoll_wakeups, bench/epoll_oneshot_window and
perf bench epoll; patched boots bench/epoll_server in every variant
(bench/VARIANTS.md) and its sweep over connections, churn and workers;
$SMP1 boots the server's variants only. Then run the server and its
sweep $BENCH_NATIVE_ROUNDS times on this host's own kernel
(scripts/run-bench-native.sh). Then scripts/bench-report.py prints and
writes to $BENCH_RESULTS/:
  bench.txt    the tables, every figure a median with its range over
               boots; differences called only where ranges do not overlap
  rfc-table.txt  the table for the RFC's cover letter (72 columns)
  bench.json   the same, with every boot's value
  bench.png, sweep.png   the plots, with ranges
  insns.txt    instructions of epoll's functions per kernel, and the diff
  raw/         each boot's KTAP and kernel log, the native rounds' logs;
               meta.tsv, boots.tsv, native.tsv
Under TCG the absolute numbers mean little; ratios within one run count,
as far as the native run and $SMP1 agree with them.

The series branch is measured as it is: run 'make tree' first to bench
what patches/ holds now.

Environment:
  BENCH_BOOTS          boots of each kernel (now: $BENCH_BOOTS, at least 5 for
                       the figures the documentation quotes)
  BENCH_SMP1_BOOTS     boots of the patched kernel with -smp 1 (now: $BENCH_SMP1_BOOTS)
  BENCH_NATIVE_ROUNDS  rounds of the server on this host (now: $BENCH_NATIVE_ROUNDS)
  BENCH_SEED           seed of the orders, printed in the report (now: $BENCH_SEED)
  BENCH_ICOUNT         QEMU -icount value (now: $BENCH_ICOUNT); none: the
                       guest's clock runs free with the host's (noisy)
  BENCH_SCALE          factor on epoll_micro's iteration counts (now: $BENCH_SCALE)
  BENCH_PERF_REPS      runs of each perf bench epoll test a boot (now: $BENCH_PERF_REPS)
  BENCH_BOOT_TIMEOUT   limit per boot, seconds (now: $BENCH_BOOT_TIMEOUT)
  OUT_DIR, JOBS        as for every script

Exit status: 0 when every boot ran its benchmarks, the safe variants saw
no use-after-free and struct epitem has the same size in every kernel; 1
otherwise.
EOF
}

kernel_out() {
	echo "$BUILD_DIR/bench-$1"
}

kernel_rev() {
	case "$1" in
	base|control) base_commit ;;
	fixes) posting_head fixes ;;
	patched) postings_head ;;
	esac
}

build_kernel() {
	local k=$1 kout rev

	kout=$(kernel_out "$k")
	rev=$(kernel_rev "$k")
	kernel_out_dir "$kout" "$rev"
	if [ "$k" = control ]; then
		git -C "$kout/linux" apply "$CONTROL_PATCH" ||
			die "${CONTROL_PATCH#"$REPO_DIR"/} does not apply to the base: rebase it"
	fi
	log "$k kernel ($(git -C "$kout/linux" log -1 --format='%h %s' "$rev"))"
	OUT_DIR=$kout KERNEL_FLAVOUR=bench "$REPO_DIR/scripts/build-kernel.sh"
}

# fs/eventpoll.c of kernel @1 compiled once more with kbuild's own command
# line (without what follows the compiler, such as objtool, and without
# the dependency file), adding -g, into epitem-probe.o: the benchmark
# kernels carry no DWARF, which pahole and bench-insns.py's line numbers
# need. GCC's -g does not change the code (bench-insns.py checks it).
debug_object() {
	local k=$1 kout cmd obj

	kout=$(kernel_out "$k")
	obj="$kout/epitem-probe.o"
	cmd=$(sed -n 's|^savedcmd_fs/eventpoll.o := ||p' "$kout/build/qemu/fs/.eventpoll.o.cmd")
	[ -n "$cmd" ] || die "no kbuild command line for fs/eventpoll.o in $kout/build/qemu"
	cmd=${cmd%%;*}
	cmd=${cmd/-Wp,-MMD,fs\/.eventpoll.o.d/}
	[[ $cmd == *" -o fs/eventpoll.o "* ]] ||
		die "unexpected kbuild command line for fs/eventpoll.o: $cmd"
	cmd=${cmd/ -o fs\/eventpoll.o / -g -o $obj }
	(cd "$kout/build/qemu" && eval "$cmd") || die "could not compile fs/eventpoll.c with -g"
}

epitem_layout() {
	local k=$1

	pahole -C epitem "$(kernel_out "$k")/epitem-probe.o" > "$BENCH_RESULTS/epitem-$k.txt"
	grep -q '/\* size: [0-9]*,' "$BENCH_RESULTS/epitem-$k.txt" ||
		die "pahole found no struct epitem in $(kernel_out "$k")/epitem-probe.o"
}

# The sizes of epoll's functions in kernel @1 (what the compiler did not
# inline), in hexadecimal as nm gives them, to see where the series adds
# code.
function_sizes() {
	local k=$1

	nm -S "$(kernel_out "$k")/build/qemu/vmlinux" |
		awk '$3 ~ /^[tT]$/ && $4 ~ /^(__?ep_|ep_|do_epoll|epoll_|eventpoll|io_epoll|__(x64|ia32)_sys_epoll)/ {
			printf "%s\t%s\n", $4, $2 }' |
		sort > "$BENCH_RESULTS/functions-$k.tsv"
	[ -s "$BENCH_RESULTS/functions-$k.tsv" ] || die "no epoll function in the $k kernel's vmlinux"
}

# tools/perf of $WORKTREE, static, with nothing but what 'perf bench'
# needs: no library beyond libc, so that it runs in the busybox guest.
build_perf() {
	local log="$BENCH_RESULTS/perf-build.log"

	mkdir -p "$PERF_DIR"
	log "perf, static ($WORKTREE/tools/perf into $PERF_DIR)"
	make -C "$WORKTREE/tools/perf" O="$PERF_DIR" JOBS="$JOBS" LDFLAGS=-static WERROR=0 \
		NO_LIBELF=1 NO_LIBTRACEEVENT=1 NO_JEVENTS=1 NO_LIBPYTHON=1 NO_LIBPERL=1 \
		NO_SLANG=1 NO_GTK2=1 NO_LIBUNWIND=1 NO_LIBDW=1 NO_LIBBPF=1 BUILD_BPF_SKEL=0 \
		NO_LIBNUMA=1 NO_LIBCRYPTO=1 NO_LIBZSTD=1 NO_LZMA=1 NO_ZLIB=1 NO_LIBCAP=1 \
		NO_LIBBABELTRACE=1 NO_AUXTRACE=1 NO_LIBDEBUGINFOD=1 NO_LIBLLVM=1 \
		NO_CAPSTONE=1 NO_LIBPFM4=1 NO_DEMANGLE=1 NO_SHELLCHECK=1 NO_RUST=1 NO_SDT=1 \
		NO_AIO=1 "$PERF_DIR/perf" > "$log" 2>&1 ||
		die "tools/perf did not build statically: see $log"
	! readelf -l "$PERF_DIR/perf" | grep -q INTERP ||
		die "$PERF_DIR/perf is not static (it names an interpreter): see $log"
}

# The kernel's initramfs: busybox, guest/init and the bench programs and
# perf as /bench (make-initramfs.sh packs $OUT_DIR/build/bench), no
# selftests.
make_image() {
	local k=$1 kout

	kout=$(kernel_out "$k")
	rm -rf "$kout/build/bench" "$kout/build/selftests"
	make -s -C "$REPO_DIR/bench" OUTPUT="$PROG_DIR" DESTDIR="$kout/build/bench" \
		install-bench
	install -m 0755 "$PERF_DIR/perf" "$kout/build/bench/"
	OUT_DIR=$kout "$REPO_DIR/scripts/make-initramfs.sh"
}

# The entries of epoll.bench= for boot kind @1.
entries() {
	case "$1" in
	patched) echo "$MICRO_ENTRY,$PERF_ENTRY,$WAKEUPS_ENTRY,$SERVER_ENTRY,$SWEEP_ENTRY" ;;
	"$SMP1") echo "$SERVER_ENTRY" ;;
	*) echo "$MICRO_ENTRY,$PERF_ENTRY,$WAKEUPS_ENTRY" ;;
	esac
}

# The server's variants in the order of boot @1 (words).
variant_order() {
	# shellcheck disable=SC2046
	seeded_shuffle "$BENCH_SEED" "boot-$1" $("$PROG_DIR/epoll_server" --list)
}

# Boot @k once as boot number @n; keep its logs under raw/.
boot() {
	local n=$1 k=$2 kout start rc=0 tag smp=2 order

	if [ "$k" = "$SMP1" ]; then
		kout=$(kernel_out patched)
		smp=1
	else
		kout=$(kernel_out "$k")
	fi
	order=$(variant_order "$n" | tr ' ' ,)
	tag=$(printf 'boot-%02d-%s' "$n" "$k")
	rm -f "$kout/results/ktap.log" "$kout/results/console.log"
	start=$(date +%s)
	# tsc=reliable: with -icount the TSC follows guest time exactly, but
	# the clocksource watchdog, comparing it with jiffies whose ticks
	# icount delays, marks it unstable and falls back to 4 ms jiffies.
	OUT_DIR=$kout QEMU_SMP=$smp QEMU_ICOUNT=$(qemu_icount) QEMU_TIMEOUT=$BENCH_BOOT_TIMEOUT \
		QEMU_APPEND="tsc=reliable epoll.bench=$(entries "$k") epoll_bench.scale=$BENCH_SCALE epoll_bench.variants=$order epoll_bench.perf_reps=$BENCH_PERF_REPS" \
		"$REPO_DIR/scripts/run-qemu.sh" 2>>"$BENCH_RESULTS/raw/run-qemu.log" || rc=$?
	cp "$kout/results/ktap.log" "$BENCH_RESULTS/raw/$tag.ktap" 2>/dev/null || true
	cp "$kout/results/console.log" "$BENCH_RESULTS/raw/$tag.console" 2>/dev/null || true
	printf '%s\t%s\t%s\t%s\n' "$n" "$k" "$(($(date +%s) - start))" "$order" \
		>> "$BENCH_RESULTS/boots.tsv"
	[ "$rc" -eq 0 ] || die "boot $n ($k) did not finish: see $BENCH_RESULTS/raw/$tag.*"
	log "boot $n ($k, -smp $smp): $(($(date +%s) - start))s"
}

# Round after round, one boot of each kind in an order drawn from the
# seed: a drift of the host over the run weighs on all of them alike.
boot_order() {
	local i kinds

	for ((i = 0; i < BENCH_BOOTS || i < BENCH_SMP1_BOOTS; i++)); do
		kinds=()
		((i >= BENCH_BOOTS)) || kinds+=("${KERNELS[@]}")
		((i >= BENCH_SMP1_BOOTS)) || kinds+=("$SMP1")
		seeded_shuffle "$BENCH_SEED" "round-$i" "${kinds[@]}" | tr ' ' '\n'
	done
}

# run-qemu.sh's QEMU_ICOUNT: empty for none.
qemu_icount() {
	[ "$BENCH_ICOUNT" = none ] || echo "$BENCH_ICOUNT"
}

# The guest's clock, as the report names it.
clock() {
	if [ "$BENCH_ICOUNT" != none ]; then
		echo "-icount $BENCH_ICOUNT"
	else
		echo "free-running (no -icount: the host's load is in the figures)"
	fi
}

hms() {
	printf '%dm %02ds' $(($1 / 60)) $(($1 % 60))
}

check_env() {
	local v

	for v in BENCH_BOOTS BENCH_SEED BENCH_PERF_REPS BENCH_BOOT_TIMEOUT; do
		[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive number, not '${!v}'"
	done
	for v in BENCH_SMP1_BOOTS BENCH_NATIVE_ROUNDS; do
		[[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a number, not '${!v}'"
	done
	[[ $BENCH_SCALE =~ ^[0-9]*\.?[0-9]+$ ]] || die "BENCH_SCALE must be a positive number"
}

write_meta() {
	local start=$1 t_build=$2 t_boots=$3 t_native=$4 k

	{
		printf 'date\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
		printf 'boots\t%s\n' "$BENCH_BOOTS"
		printf 'smp1_boots\t%s\n' "$BENCH_SMP1_BOOTS"
		printf 'native_rounds\t%s\n' "$BENCH_NATIVE_ROUNDS"
		printf 'seed\t%s\n' "$BENCH_SEED"
		printf 'clock\t%s\n' "$(clock)"
		printf 'scale\t%s\n' "$BENCH_SCALE"
		printf 'qemu\t%s\n' "$(qemu-system-x86_64 --version | sed -n '1s/.*version \([^ ]*\).*/\1/p')"
		printf 'smp\t%s\n' 2
		printf 'config\t%s\n' "tinyconfig + config/qemu-x86_64.config + config/bench.config, same .config for all"
		for k in "${KERNELS[@]}"; do
			printf '%s\t%s\n' "$k" "$(kernel_rev "$k")"
		done
		printf 'host\t%s, %s CPUs (%s)\n' "$(uname -r)" "$(nproc)" \
			"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | sort -u | head -1)"
		printf 'load_end\t%s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
		printf 'liburing\t%s\n' "$(dpkg-query -W -f='${Version}' liburing-dev 2>/dev/null || echo '?')"
		printf 'build_time\t%s\n' "$(hms "$t_build")"
		printf 'boot_time\t%s\n' "$(hms "$t_boots")"
		printf 'native_time\t%s\n' "$(hms "$t_native")"
		printf 'wall\t%s\n' "$(hms $(($(date +%s) - start)))"
	} > "$BENCH_RESULTS/meta.tsv"
}

main() {
	local start t_build t_boots t_native k tool n=0 rc=0 insns_args

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	need_x86_64_guest
	check_env
	need_worktree
	for tool in pahole gnuplot objdump readelf; do
		command -v "$tool" >/dev/null || die "$tool missing: run 'make deps' (scripts/install-deps.sh)"
	done
	start=$(date +%s)
	rm -rf "$BENCH_RESULTS"
	mkdir -p "$BENCH_RESULTS/raw"

	for k in "${KERNELS[@]}"; do
		build_kernel "$k"
	done
	for k in "${KERNELS[@]}"; do
		cmp -s "$(kernel_out base)/build/qemu/.config" "$(kernel_out "$k")/build/qemu/.config" ||
			die "the kernels' configurations differ: compare $(kernel_out base)/build/qemu/.config and $(kernel_out "$k")/build/qemu/.config"
	done
	make -s -C "$REPO_DIR/bench" OUTPUT="$PROG_DIR" clean all
	build_perf
	for k in "${KERNELS[@]}"; do
		debug_object "$k"
		epitem_layout "$k"
		function_sizes "$k"
		make_image "$k"
	done
	insns_args=()
	for k in "${KERNELS[@]}"; do
		insns_args+=("$k=$(kernel_out "$k")")
	done
	"$REPO_DIR/scripts/bench-insns.py" --out "$BENCH_RESULTS/insns.json" "${insns_args[@]}" \
		> "$BENCH_RESULTS/insns.txt" ||
		die "scripts/bench-insns.py failed: see $BENCH_RESULTS/insns.txt"
	t_build=$(($(date +%s) - start))

	log "boots in the order of seed $BENCH_SEED: $(boot_order | tr '\n' ' ')"
	while read -r k; do
		n=$((n + 1))
		boot "$n" "$k"
	done < <(boot_order)
	t_boots=$(($(date +%s) - start - t_build))

	if [ "$BENCH_NATIVE_ROUNDS" -gt 0 ]; then
		BENCH_NATIVE_ROUNDS=$BENCH_NATIVE_ROUNDS BENCH_SEED=$BENCH_SEED \
			"$REPO_DIR/scripts/run-bench-native.sh" "$BENCH_RESULTS"
	fi
	t_native=$(($(date +%s) - start - t_build - t_boots))

	write_meta "$start" "$t_build" "$t_boots" "$t_native"
	"$REPO_DIR/scripts/bench-report.py" "$BENCH_RESULTS" || rc=1
	log "results in $BENCH_RESULTS; make bench took $(hms $(($(date +%s) - start)))"
	return "$rc"
}

main "$@"
