#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Install the Debian packages every stage needs; a no-op when all are there.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

# One line per stage, so a missing tool is easy to trace to its user.
readonly PACKAGES=(
	xz-utils						# base tree (scripts/fetch-debian-package.sh)
	linux-source-6.12 linux-source-6.1			# stable backport check
	git quilt						# apply, export
	build-essential bc bison flex libelf-dev libssl-dev	# kernel build
	ccache cpio kmod rsync python3				# kernel build, kunit.py
	# -m32 selftests. Not gcc-multilib: it conflicts with the cross
	# compilers below; the selftests take asm/ from the kernel's headers.
	gcc-12-multilib libc6-dev-i386
	busybox-static qemu-system-x86 qemu-system-data		# guest
	# The arm64 guest (make arm64): QEMU's virt machine and the static
	# glibc of its programs; its compiler, gcc-aarch64-linux-gnu, below.
	qemu-system-arm libc6-dev-arm64-cross
	sparse coccinelle ocaml-nox python3-ply python3-git	# lint
	# litmus tests: herd7 from herdtools7's source (scripts/check-litmus.sh)
	ocaml-dune menhir libmenhir-ocaml-dev libzarith-ocaml-dev ocaml-findlib
	clang-19 gcc-arm-linux-gnueabi gcc-aarch64-linux-gnu	# build matrix (7.3 needs clang >= 17)
	mandoc groff man-db python3-sphinx python3-yaml		# docs and man pages
	python3-jsonschema					# summary.json
	gnuplot-nox dwarves liburing-dev			# make bench: plot, pahole, bench/'s uring-recv
	cmake g++ dpkg-dev					# make event-loop: Qpid Proton, apt-get source
	autoconf automake m4 pkgconf				# make suites: LTP's configure
	git-email b4 libmailtools-perl bsdextrautils		# submit
)

usage() {
	cat <<EOF
Usage: ${0##*/} [-h]

Install with apt-get what the stages need, if anything is missing:
$(words | tr "\n" " " | fold -s -w 70 | sed "s/^/  /")

Runs 'apt-get update' only when a package is missing. Needs root.

Exit status: 0 when all packages are installed, 1 otherwise.
EOF
}

words() {
	printf '%s\n' "${PACKAGES[@]}" | sed 's/#.*//' | tr -s ' \t' '\n' | sed '/^$/d'
}

missing() {
	local p

	for p in $(words); do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
			grep -q '^install ok installed$' || printf '%s\n' "$p"
	done
}

main() {
	local todo

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	"") ;;
	*) usage >&2; exit 1 ;;
	esac
	todo=$(missing | tr '\n' ' ')
	if [ -z "$todo" ]; then
		log "all packages present"
		return 0
	fi
	[ "$(id -u)" -eq 0 ] || die "missing packages ($todo) and not root: install them with apt-get"
	log "installing: $todo"
	apt-get update -qq
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $todo
	todo=$(missing | tr '\n' ' ')
	[ -z "$todo" ] || die "still missing after apt-get: $todo"
}

main "$@"
