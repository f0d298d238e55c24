#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot the built kernel with the test initramfs in QEMU; keep the kernel log
# and the tests' KTAP apart.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

# What to boot, and where its logs go: the guest of make kernel and make
# initramfs by default; scripts/run-guests.sh boots other kernels.
: "${GUEST_IMAGE:=$BUILD_DIR/initramfs.cpio.gz}"
: "${GUEST_RESULTS:=$RESULTS_DIR}"
readonly IMAGE=$GUEST_IMAGE
# The kernel's console, and the kselftests' KTAP (guest/init's epoll.ktap=).
readonly CONSOLE="$GUEST_RESULTS/console.log"
readonly KTAP="$GUEST_RESULTS/ktap.log"
# qboot, not SeaBIOS: without ACPI, SeaBIOS shows the guest a single CPU.
readonly BIOS=/usr/share/qemu/qboot.rom
# arm64: the virt machine's CPU model; max has every feature QEMU
# emulates (LPA2, so the kernel's 52-bit VA is used too).
: "${QEMU_CPU:=max}"
# The machine per architecture: QEMU, kernel image, console device, the
# KTAP device, and QEMU's options for the machine and for the KTAP file.
case "$GUEST_ARCH" in
x86_64)
	readonly QEMU=qemu-system-x86_64 KERNEL="${GUEST_KERNEL:-$BUILD_DIR/qemu/arch/x86/boot/bzImage}" \
		CONSOLE_DEV=ttyS0 KTAP_DEV=/dev/ttyS1
	machine_args() { printf '%s\n' -bios "$BIOS"; }
	# The second serial port.
	ktap_args() { printf '%s\n' -serial "file:$1"; }
	;;
arm64)
	readonly QEMU=qemu-system-aarch64 KERNEL="${GUEST_KERNEL:-$BUILD_DIR/qemu/arch/arm64/boot/Image}" \
		CONSOLE_DEV=ttyAMA0 KTAP_DEV=/dev/hvc0
	machine_args() { printf '%s\n' -machine virt -cpu "$QEMU_CPU"; }
	# The virt machine has one UART: a virtio console.
	ktap_args() {
		printf '%s\n' -device virtio-serial-device -chardev "file,id=ktap,path=$1" \
			-device virtconsole,chardev=ktap
	}
	;;
esac
# Two vCPUs: upstream's epoll59 needs a second CPU to finish in time.
: "${QEMU_SMP:=2}"
: "${QEMU_MEM:=2G}"
# kvm, tcg, or auto: KVM only if a guest really boots with it.
: "${QEMU_ACCEL:=auto}"
# Whole-run limit, and the factor applied to per-test timeouts under TCG.
: "${QEMU_TIMEOUT:=1500}"
: "${TCG_TIMEOUT_SCALE:=4}"
# More kernel command line, e.g. epoll.tests=<program>,... for /init.
: "${QEMU_APPEND:=}"
# -icount value, e.g. shift=1,sleep=off: guest time from executed
# instructions. TCG only, and single-threaded (QEMU has no MTTCG with it).
: "${QEMU_ICOUNT:=}"
readonly KVM_PROBE_SECS=30

usage() {
	cat <<EOF
Usage: ${0##*/} [-h]

Boot $KERNEL with $IMAGE
under $QEMU ($QEMU_SMP CPUs, $QEMU_MEM); the guest runs the selftests
and reboots. The kernel's console ($CONSOLE_DEV: its log and boot-time
KUnit) goes to $CONSOLE,
the kselftests' KTAP ($KTAP_DEV) to
$KTAP.

Environment:
  GUEST_ARCH          x86_64 or arm64 (now: $GUEST_ARCH); arm64 boots QEMU's
                      virt machine, always under TCG
  QEMU_CPU            arm64: the CPU model (now: $QEMU_CPU)
  QEMU_ACCEL          kvm, tcg or auto (now: $QEMU_ACCEL); auto boots the
                      guest once with KVM and falls back to TCG unless
                      it reached userspace within ${KVM_PROBE_SECS}s; the
                      verdict is kept in \$EPOLL_CACHE_DIR per host kernel,
                      CPU flags and QEMU version
  QEMU_SMP, QEMU_MEM  guest size (now: $QEMU_SMP, $QEMU_MEM)
  QEMU_TIMEOUT        hard limit for the whole run, seconds (now: $QEMU_TIMEOUT)
  TCG_TIMEOUT_SCALE   factor on per-test timeouts under TCG (now: $TCG_TIMEOUT_SCALE)
  QEMU_APPEND         more kernel command line (now: '$QEMU_APPEND'), e.g.
                      epoll.tests=epoll_ctl_disable_test to run only that
                      program (comma-separated list)
  QEMU_ICOUNT         if set, run with -icount QEMU_ICOUNT under single-
                      threaded TCG (now: '$QEMU_ICOUNT'), e.g. shift=1,sleep=off:
                      the guest's clock then follows the instructions it
                      executes, not the host's load (make bench)

  GUEST_KERNEL, GUEST_IMAGE, GUEST_RESULTS   the kernel, the initramfs
                      and the directory of the logs (now: the above)

Exit status: 0 when the guest ran to its end, 1 otherwise (the verdict on
the tests is scripts/summarize.py's).
EOF
}

qemu() {
	local accel=$1 limit=$2 log=$3 ktap=$4
	shift 4

	mapfile -t machine < <(machine_args)
	mapfile -t ktap_dev < <(ktap_args "$ktap")
	timeout --kill-after=5 "$limit" "$QEMU" \
		-accel "$accel" ${QEMU_ICOUNT:+-icount "$QEMU_ICOUNT"} "${machine[@]}" \
		-smp "$QEMU_SMP" -m "$QEMU_MEM" \
		-kernel "$KERNEL" -initrd "$IMAGE" \
		-append "console=$CONSOLE_DEV panic=-1 epoll_guest=1 epoll.ktap=$KTAP_DEV $*" \
		-display none -monitor none -serial "file:$log" "${ktap_dev[@]}" \
		-no-reboot </dev/null || true
}

# The probe's verdict depends on the host only: keep it per host kernel,
# CPU flags and QEMU version, so that only the first run pays for it.
probe_key() {
	{ uname -r; grep -m1 '^flags' /proc/cpuinfo; qemu-system-x86_64 --version; } |
		md5sum | cut -c1-12
}

pick_accel() {
	local probe="$RESULTS_DIR/kvm-probe.log" verdict

	if [ -n "$QEMU_ICOUNT" ]; then
		echo tcg,thread=single
		return
	fi
	if [ "$GUEST_ARCH" != x86_64 ]; then
		# KVM runs a guest of the host's architecture only.
		[ "$QEMU_ACCEL" != kvm ] || die "no KVM for a $GUEST_ARCH guest on this host: QEMU_ACCEL=tcg"
		echo tcg,thread=multi
		return
	fi
	case "$QEMU_ACCEL" in
	kvm) echo kvm; return ;;
	tcg) echo tcg,thread=multi; return ;;
	auto) ;;
	*) die "QEMU_ACCEL must be kvm, tcg or auto, not '$QEMU_ACCEL'" ;;
	esac
	verdict="$EPOLL_CACHE_DIR/kvm-probe-$(probe_key)"
	if [ ! -f "$verdict" ]; then
		echo tcg > "$verdict.new"
		if [ -w /dev/kvm ]; then
			# rdinit=/bin/busybox: it prints its help and exits,
			# so the kernel reaches userspace, then panics at once;
			# the panic line proves the guest ran.
			qemu kvm "$KVM_PROBE_SECS" "$probe" /dev/null rdinit=/bin/busybox
			! grep -q 'Attempted to kill init' "$probe" || echo kvm > "$verdict.new"
		fi
		mv "$verdict.new" "$verdict"
	fi
	if [ "$(cat "$verdict")" = kvm ]; then
		echo kvm
		return
	fi
	log "KVM does not boot a guest on this host (probe verdict in $verdict): using TCG"
	echo tcg,thread=multi
}

main() {
	local accel scale=1 start

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	[ -f "$KERNEL" ] || die "no kernel at $KERNEL: run 'make kernel' (scripts/build-kernel.sh)"
	[ -f "$IMAGE" ] || die "no initramfs at $IMAGE: run 'make initramfs' (scripts/make-initramfs.sh)"
	[ "$GUEST_ARCH" != x86_64 ] || [ -f "$BIOS" ] ||
		die "no $BIOS: run 'make deps' (scripts/install-deps.sh) (qemu-system-data)"
	command -v "$QEMU" >/dev/null || die "no $QEMU: run 'make deps' (scripts/install-deps.sh)"
	mkdir -p "$RESULTS_DIR" "$GUEST_RESULTS"

	accel=$(pick_accel)
	[ "${accel%%,*}" = kvm ] || scale=$TCG_TIMEOUT_SCALE
	printf '%s\n' "${accel%%,*}" > "$GUEST_RESULTS/accel"
	log "booting with -accel $accel${QEMU_ICOUNT:+ -icount $QEMU_ICOUNT}, -smp $QEMU_SMP"
	start=$(date +%s)
	# QEMU_APPEND is split into its words, one kernel parameter each.
	# shellcheck disable=SC2086
	qemu "$accel" "$QEMU_TIMEOUT" "$CONSOLE" "$KTAP" "epoll.timeout_scale=$scale" \
		$QEMU_APPEND
	log "guest ran $(($(date +%s) - start))s"
	grep -q '^# epoll-guest: done' "$KTAP" ||
		die "guest did not finish within ${QEMU_TIMEOUT}s: see $CONSOLE and $KTAP"
}

main "$@"
