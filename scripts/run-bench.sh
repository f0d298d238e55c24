#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: what EPOLL_CTL_DISABLE buys (bench/epoll_server, three ways
# to retire a connection) and what the series costs everybody else
# (bench/epoll_micro on the base and the patched kernel, interleaved
# boots), as tables, JSON and a plot.
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
readonly BENCH_RESULTS="$RESULTS_DIR/bench"
# The bench programs, built once for both images.
readonly PROG_DIR="$BUILD_DIR/bench-prog"
# What each kernel's boots run (guest/init, epoll.bench=): the
# microbenchmarks on both, the server only on the patched one, where
# EPOLL_CTL_DISABLE exists.
readonly MICRO_ENTRY=epoll_micro_bench.sh
readonly SERVER_ENTRY=epoll_server_bench.sh
readonly SWEEP_ENTRY=epoll_server_sweep.sh
readonly WAKEUPS_ENTRY=epoll_wakeups_bench.sh
readonly CONTROL_PATCH="$REPO_DIR/bench/layout-control.patch"
# Boots of each kernel; they alternate base, patched, patched, base, ...
: "${BENCH_BOOTS:=5}"
# Guest time from executed instructions, not from the busy host; none:
# the guest's clock runs free with the host's.
: "${BENCH_ICOUNT:=shift=1,sleep=off}"
# Factor on the microbenchmarks' iteration counts (epoll_bench.scale=).
: "${BENCH_SCALE:=1}"
# Per-boot limit, seconds.
: "${BENCH_BOOT_TIMEOUT:=900}"

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
Build bench/ once, -m64 static, and pack it into each kernel's initramfs
as /bench.

Boot them $BENCH_BOOTS times each, the order rotating (base control fixes
patched, patched fixes control base, ...), under QEMU with -icount
$BENCH_ICOUNT. The kernel command line asks the guest's /init for the
benchmarks (epoll.bench=): every boot runs bench/epoll_micro,
bench/epoll_wakeups and bench/epoll_oneshot_window; patched boots also run
bench/epoll_server in every variant (bench/VARIANTS.md) and its sweep over
connections, churn and workers. Then scripts/bench-report.py prints and
writes to $BENCH_RESULTS/:
  bench.txt    the tables: the server variants; the sweep; spurious
               wakeups per 1000 one-shot deliveries, and sleepers woken
               per forced second wakeup, per kernel; the
               microbenchmarks of control, fixes and patched against
               base, with ratio, noise and floor ratio; the functions
               whose size changed; sizeof(struct epitem)
  bench.json   the same, with every boot's value
  bench.png, sweep.png   the plots
  raw/         each boot's KTAP and kernel log; meta.tsv, boots.tsv
Under TCG the absolute numbers mean little; ratios within one run count.

The series branch is measured as it is: run 'make tree' first to bench
what patches/ holds now.

Environment:
  BENCH_BOOTS         boots of each kernel (now: $BENCH_BOOTS, at least 5 for the
                      figures the documentation quotes)
  BENCH_ICOUNT        QEMU -icount value (now: $BENCH_ICOUNT); none: the
                      guest's clock runs free with the host's (noisy)
  BENCH_SCALE         factor on epoll_micro's iteration counts (now: $BENCH_SCALE)
  BENCH_BOOT_TIMEOUT  limit per boot, seconds (now: $BENCH_BOOT_TIMEOUT)
  OUT_DIR, JOBS       as for every script

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

# pahole needs DWARF, which the benchmark kernels do not carry: compile
# fs/eventpoll.c once more with kbuild's own command line (without what
# follows the compiler, such as objtool, and without the dependency
# file), adding -g, into a scratch object.
epitem_layout() {
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
	pahole -C epitem "$obj" > "$BENCH_RESULTS/epitem-$k.txt"
	grep -q '/\* size: [0-9]*,' "$BENCH_RESULTS/epitem-$k.txt" ||
		die "pahole found no struct epitem in $obj"
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

# The kernel's initramfs: busybox, guest/init and the bench programs as
# /bench (make-initramfs.sh packs $OUT_DIR/build/bench), no selftests.
make_image() {
	local k=$1 kout

	kout=$(kernel_out "$k")
	rm -rf "$kout/build/bench" "$kout/build/selftests"
	make -s -C "$REPO_DIR/bench" OUTPUT="$PROG_DIR" DESTDIR="$kout/build/bench" \
		install-bench
	OUT_DIR=$kout "$REPO_DIR/scripts/make-initramfs.sh"
}

# The entries of epoll.bench= for kernel @1.
entries() {
	if [ "$1" = patched ]; then
		echo "$MICRO_ENTRY,$WAKEUPS_ENTRY,$SERVER_ENTRY,$SWEEP_ENTRY"
	else
		echo "$MICRO_ENTRY,$WAKEUPS_ENTRY"
	fi
}

# Boot @k once as boot number @n; keep its logs under raw/.
boot() {
	local n=$1 k=$2 kout start rc=0 tag

	kout=$(kernel_out "$k")
	tag=$(printf 'boot-%02d-%s' "$n" "$k")
	rm -f "$kout/results/ktap.log" "$kout/results/console.log"
	start=$(date +%s)
	# tsc=reliable: with -icount the TSC follows guest time exactly, but
	# the clocksource watchdog, comparing it with jiffies whose ticks
	# icount delays, marks it unstable and falls back to 4 ms jiffies.
	OUT_DIR=$kout QEMU_ICOUNT=$(qemu_icount) QEMU_TIMEOUT=$BENCH_BOOT_TIMEOUT \
		QEMU_APPEND="tsc=reliable epoll.bench=$(entries "$k") epoll_bench.scale=$BENCH_SCALE" \
		"$REPO_DIR/scripts/run-qemu.sh" 2>>"$BENCH_RESULTS/raw/run-qemu.log" || rc=$?
	cp "$kout/results/ktap.log" "$BENCH_RESULTS/raw/$tag.ktap" 2>/dev/null || true
	cp "$kout/results/console.log" "$BENCH_RESULTS/raw/$tag.console" 2>/dev/null || true
	printf '%s\t%s\t%s\n' "$n" "$k" "$(($(date +%s) - start))" >> "$BENCH_RESULTS/boots.tsv"
	[ "$rc" -eq 0 ] || die "boot $n ($k) did not finish: see $BENCH_RESULTS/raw/$tag.*"
	log "boot $n ($k): $(($(date +%s) - start))s"
}

# The kernels in turn, every other round backwards: a drift of the host
# over the run weighs on all kernels alike.
boot_order() {
	local i

	for ((i = 0; i < BENCH_BOOTS; i++)); do
		if ((i % 2)); then
			printf '%s\n' "${KERNELS[@]}" | tac
		else
			printf '%s\n' "${KERNELS[@]}"
		fi
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

main() {
	local start t_build t_boots k tool n=0 rc=0

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	need_x86_64_guest
	[[ $BENCH_BOOTS =~ ^[1-9][0-9]*$ ]] || die "BENCH_BOOTS must be a positive number"
	[[ $BENCH_SCALE =~ ^[0-9]*\.?[0-9]+$ ]] || die "BENCH_SCALE must be a positive number"
	[[ $BENCH_BOOT_TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "BENCH_BOOT_TIMEOUT must be seconds"
	need_worktree
	for tool in pahole gnuplot; do
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
	for k in "${KERNELS[@]}"; do
		epitem_layout "$k"
		function_sizes "$k"
		make_image "$k"
	done
	t_build=$(($(date +%s) - start))

	while read -r k; do
		n=$((n + 1))
		boot "$n" "$k"
	done < <(boot_order)
	t_boots=$(($(date +%s) - start - t_build))

	{
		printf 'date\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
		printf 'boots\t%s\n' "$BENCH_BOOTS"
		printf 'clock\t%s\n' "$(clock)"
		printf 'scale\t%s\n' "$BENCH_SCALE"
		printf 'qemu\t%s\n' "$(qemu-system-x86_64 --version | sed -n '1s/.*version \([^ ]*\).*/\1/p')"
		printf 'smp\t%s\n' "${QEMU_SMP:-2}"
		printf 'config\t%s\n' "tinyconfig + config/qemu-x86_64.config + config/bench.config, same .config for all"
		for k in "${KERNELS[@]}"; do
			printf '%s\t%s\n' "$k" "$(kernel_rev "$k")"
		done
		printf 'host\t%s, %s CPUs, load %s at the end\n' "$(uname -r)" "$(nproc)" \
			"$(cut -d' ' -f1-3 /proc/loadavg)"
		printf 'build_time\t%s\n' "$(hms "$t_build")"
		printf 'boot_time\t%s\n' "$(hms "$t_boots")"
		printf 'wall\t%s\n' "$(hms $(($(date +%s) - start)))"
	} > "$BENCH_RESULTS/meta.tsv"
	"$REPO_DIR/scripts/bench-report.py" "$BENCH_RESULTS" || rc=1
	log "results in $BENCH_RESULTS; make bench took $(hms $(($(date +%s) - start)))"
	return "$rc"
}

main "$@"
