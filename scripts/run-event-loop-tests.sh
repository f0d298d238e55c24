#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make event-loop: a real event loop using EPOLL_CTL_DISABLE. Qpid Proton's
# epoll proactor, with bench/qpid-proton/*.patch, runs its own tests on the
# base kernel (the fallback path) and on the patched one (the new path).
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly KERNELS=(base patched)
readonly PROTON_DIR="$BUILD_DIR/qpid-proton"
readonly PROTON_PATCHES="$REPO_DIR/bench/qpid-proton"
readonly ENTRY=qpid_proton_tests.sh
readonly EVENT_LOOP_RESULTS="$RESULTS_DIR/event-loop"
# Debian's source package: the suite is the host's own (bookworm), whose
# version the patch is written against.
: "${PROTON_SUITE:=bookworm}"
: "${PROTON_VERSION:=0.37.0-2}"
# The tests the guest runs (bench/qpid-proton/qpid_proton_tests.sh runs
# what is installed) and the report expects.
readonly PROTON_TESTS=(c-proactor-test c-raw-connection-test c-threaderciser)
# Per-boot limit, seconds.
: "${EVENT_LOOP_BOOT_TIMEOUT:=900}"

usage() {
	cat <<EOF
Usage: ${0##*/} [-h]

Check bench/qpid-proton/*.patch, which makes Qpid Proton's epoll proactor
retire armed sockets with EPOLL_CTL_DISABLE and fall back to its
shutdown()-and-wait path on kernels without it, with Proton's own tests:

  1. Download the upstream tarball of Debian's qpid-proton
     $PROTON_VERSION ($PROTON_SUITE) through the private apt configuration
     (scripts/fetch-debian-package.sh --source), make it a git tree in
     $PROTON_DIR/src/ and 'git am' the patch.
  2. Build the C library and the tests ${PROTON_TESTS[*]}
     (cmake, ccache; a Debug build with Proton's RUNTIME_CHECK=asan:
     assertions, AddressSanitizer and UBSan) in $PROTON_DIR/build/, and
     bench/qpid-proton/epoll_ctl_count.c, an LD_PRELOAD library that
     counts the EPOLL_CTL_DISABLE calls by result.
  3. Build two kernels, KERNEL_FLAVOUR=event-loop (make bench's
     configuration plus config/event-loop.config: TCP/IP), into
     \$OUT_DIR/build/event-loop-<kernel>/: base (the commit the postings
     apply to) and patched (every posting, not the proof layer).
  4. Boot each once under QEMU; the guest runs $ENTRY.
  5. scripts/event-loop-report.py checks that every test passed on both,
     that the patched kernel disarmed sockets (the new path ran), that the
     base kernel answered the probe and saw no other call (the fallback
     ran), and that the kernel logs are clean. It prints the table and
     writes it to $EVENT_LOOP_RESULTS/summary.txt.

$PROTON_DIR/src/ is generated: it is made anew when the tarball or the
patch changes, so work there is not kept; change the patch instead.

Environment:
  PROTON_SUITE, PROTON_VERSION  the source package (now: $PROTON_SUITE, $PROTON_VERSION)
  EVENT_LOOP_BOOT_TIMEOUT       limit per boot, seconds (now: $EVENT_LOOP_BOOT_TIMEOUT)
  OUT_DIR, JOBS                 as for every script

Exit status: 0 when the report's checks pass, 1 otherwise.
EOF
}

# The Proton tree: the tarball as one commit, then the patches.
proton_tree() {
	local tarball=$1 stamp src="$PROTON_DIR/src"

	stamp=$(cat "$tarball" "$PROTON_PATCHES"/*.patch | sha256sum | cut -d' ' -f1)
	if [ "$(cat "$PROTON_DIR/src.stamp" 2>/dev/null)" = "$stamp" ]; then
		log "Proton tree up to date ($(git -C "$src" log -1 --format='%h %s'))"
		return 0
	fi
	rm -rf "$src" "$PROTON_DIR/src.stamp"
	mkdir -p "$src"
	tar -xf "$tarball" -C "$src" --strip-components=1
	git -C "$src" init -q
	git -C "$src" add -A
	git -C "$src" -c user.name=make-event-loop -c user.email=make-event-loop@localhost \
		commit -q -m "qpid-proton ${tarball##*/}"
	git -C "$src" -c user.name=make-event-loop -c user.email=make-event-loop@localhost \
		am -q "$PROTON_PATCHES"/*.patch ||
		die "bench/qpid-proton/*.patch does not apply to ${tarball##*/}: rebase it"
	echo "$stamp" > "$PROTON_DIR/src.stamp"
	log "Proton tree: $(git -C "$src" log -1 --format='%h %s')"
}

build_proton() {
	local b="$PROTON_DIR/build"

	mkdir -p "$b"
	cmake -S "$PROTON_DIR/src" -B "$b" -DPROACTOR=epoll -DSSL_IMPL=none -DSASL_IMPL=none \
		-DBUILD_BINDINGS= -DBUILD_CPP=OFF -DBUILD_GO=OFF -DTHREADERCISER=ON \
		-DENABLE_WARNING_ERROR=OFF -DCMAKE_BUILD_TYPE=Debug -DRUNTIME_CHECK=asan \
		-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
		> "$PROTON_DIR/cmake.log" 2>&1 ||
		die "cmake failed: see $PROTON_DIR/cmake.log"
	make -s -C "$b" -j"$JOBS" "${PROTON_TESTS[@]}" > "$PROTON_DIR/make.log" 2>&1 ||
		die "building Proton failed: see $PROTON_DIR/make.log"
	gcc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$PROTON_DIR/epoll_ctl_count.so" \
		"$PROTON_PATCHES/epoll_ctl_count.c" -ldl
}

# The guest's /bench: the entry, the tests, and every library they load
# with the loader itself, which the entry calls by path.
install_proton() {
	local dest=$1 t lib

	rm -rf "$dest"
	mkdir -p "$dest/qpid-proton/bin" "$dest/qpid-proton/lib"
	install -m 0755 "$PROTON_PATCHES/$ENTRY" "$dest/"
	for t in "${PROTON_TESTS[@]}"; do
		install -m 0755 "$PROTON_DIR/build/c/tests/$t" "$dest/qpid-proton/bin/"
	done
	install -m 0755 "$PROTON_DIR/epoll_ctl_count.so" "$dest/qpid-proton/lib/"
	for lib in $(for t in "${PROTON_TESTS[@]}"; do
			ldd "$PROTON_DIR/build/c/tests/$t"
		done | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u); do
		cp -L "$lib" "$dest/qpid-proton/lib/"
	done
	[ -e "$dest/qpid-proton/lib/ld-linux-x86-64.so.2" ] ||
		die "ldd named no ld-linux-x86-64.so.2 for the Proton tests"
}

prepare_guest() {
	local k=$1 kout=$BUILD_DIR/event-loop-$1 rev

	case "$k" in
	base) rev=$(base_commit) ;;
	patched) rev=$(postings_head) ;;
	esac
	kernel_out_dir "$kout" "$rev"
	log "$k kernel ($(git -C "$kout/linux" log -1 --format='%h %s' "$rev"))"
	OUT_DIR=$kout KERNEL_FLAVOUR=event-loop "$REPO_DIR/scripts/build-kernel.sh"
	rm -rf "$kout/build/selftests"
	install_proton "$kout/build/bench"
	OUT_DIR=$kout "$REPO_DIR/scripts/make-initramfs.sh"
}

boot() {
	local k=$1 kout=$BUILD_DIR/event-loop-$1 rc=0

	rm -f "$kout/results/ktap.log" "$kout/results/console.log"
	OUT_DIR=$kout QEMU_TIMEOUT=$EVENT_LOOP_BOOT_TIMEOUT QEMU_APPEND="epoll.bench=$ENTRY" \
		"$REPO_DIR/scripts/run-qemu.sh" || rc=$?
	mkdir -p "$EVENT_LOOP_RESULTS"
	cp "$kout/results/ktap.log" "$EVENT_LOOP_RESULTS/$k.ktap" 2>/dev/null || true
	cp "$kout/results/console.log" "$EVENT_LOOP_RESULTS/$k.console" 2>/dev/null || true
	[ "$rc" -eq 0 ] || log "warning: the $k guest did not finish (the report says more)"
}

main() {
	local tarball k start

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	need_x86_64_guest
	[[ $EVENT_LOOP_BOOT_TIMEOUT =~ ^[1-9][0-9]*$ ]] ||
		die "EVENT_LOOP_BOOT_TIMEOUT must be seconds"
	need_worktree
	for k in cmake g++ ccache ldd; do
		command -v "$k" >/dev/null || die "$k missing: run 'make deps' (scripts/install-deps.sh)"
	done
	compgen -G "$PROTON_PATCHES/*.patch" >/dev/null || die "no patch in bench/qpid-proton/"
	start=$(date +%s)
	rm -rf "$EVENT_LOOP_RESULTS"
	mkdir -p "$PROTON_DIR" "$EVENT_LOOP_RESULTS"

	tarball=$("$REPO_DIR/scripts/fetch-debian-package.sh" --source qpid-proton \
		"$PROTON_SUITE" "$PROTON_VERSION")
	proton_tree "$tarball"
	build_proton
	for k in "${KERNELS[@]}"; do
		prepare_guest "$k"
	done
	for k in "${KERNELS[@]}"; do
		boot "$k"
	done
	"$REPO_DIR/scripts/event-loop-report.py" --proton "$(git -C "$PROTON_DIR/src" log -1 --format='%h %s')" \
		--tests "$(IFS=,; echo "${PROTON_TESTS[*]}")" "$EVENT_LOOP_RESULTS" "${KERNELS[@]}"
	log "make event-loop took $((($(date +%s) - start) / 60)) min"
}

main "$@"
