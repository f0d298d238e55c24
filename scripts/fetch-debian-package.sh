#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Download one Debian package of another suite, or the upstream tarball of
# a source package, through a private apt configuration, leaving the host's
# apt configuration and state untouched.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly APT_DIR="$EPOLL_CACHE_DIR/apt"
# --arch: the architecture of the package to fetch (empty: the host's).
arch=""

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [--source | --arch ARCH] PACKAGE SUITE [VERSION]

Download PACKAGE (an architecture-independent .deb, such as
linux-source-7.3) from SUITE (such as trixie-backports) into
$APT_DIR/archives/ and print the path of the .deb on stdout.
Nothing is installed.

With --arch ARCH, PACKAGE is the .deb of architecture ARCH (such as
busybox-static for arm64, which the arm64 guest unpacks, runs and never
installs on the host); an architecture-independent one is taken as well.

With --source, PACKAGE is a source package (such as qpid-proton): its
upstream tarball (.orig.tar.*) goes to $APT_DIR/sources/ and its path
is printed. Only that tarball is needed, so a Debian part the mirror
lacks is not an error; the tarball's SHA-256 is checked against the
suite's signed Sources index.

The mirror is the one the host's apt already uses: the first URI of a
'deb' entry in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list
whose suite is not a -security one. The private configuration (its own
sources list, package lists and cache, all under $APT_DIR) reads the
host's keyrings and dpkg status but writes nothing of the host's.

VERSION pins the version; when the suite no longer has it, the script
says so and takes the suite's current version. Without VERSION it takes
the current one. apt checks the Release signature and the package's hash.

Environment:
  EPOLL_CACHE_DIR  where the downloads are kept (now: $EPOLL_CACHE_DIR)

Exit status: 0 on success, 1 on error.
EOF
}

# The host's Debian mirror, from deb822 .sources files or sources.list.
host_mirror() {
	local f uri

	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		uri=$(awk '
			function flush() {
				if (deb && uri != "" && suites !~ /-security/) { print uri; found = 1; exit }
				deb = 0; uri = ""; suites = ""
			}
			/^[[:space:]]*$/ { flush(); next }
			/^Types:/ { deb = ($0 ~ /[[:space:]]deb([[:space:]]|$)/) }
			/^URIs:/ { uri = $2 }
			/^Suites:/ { suites = $0 }
			END { if (!found) flush() }' "$f")
		[ -z "$uri" ] || { printf '%s\n' "$uri"; return 0; }
	done
	if [ -r /etc/apt/sources.list ]; then
		uri=$(awk '$1 == "deb" && $0 !~ /-security/ {
				for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' \
			/etc/apt/sources.list)
		[ -z "$uri" ] || { printf '%s\n' "$uri"; return 0; }
	fi
	return 1
}

private_apt() {
	local cmd=$1

	shift
	"$cmd" -q ${arch:+-o APT::Architecture="$arch" -o APT::Architectures="$arch"} \
		-o Dir::Etc::sourcelist="$APT_DIR/sources.list" \
		-o Dir::Etc::sourceparts=/nonexistent \
		-o Dir::State::Lists="$APT_DIR/lists" \
		-o Dir::Cache="$APT_DIR/cache" \
		-o APT::Sandbox::User=root "$@"
}

# The upstream tarball of source package @1, version @2, in the current
# directory; its path on stdout.
fetch_orig() {
	local package=$1 version=$2 name sum

	read -r sum name < <(private_apt apt-cache showsrc "$package" |
		awk -v v="$version" '/^Version:/ { this = ($2 == v) }
		     /^Checksums-Sha256:/ { in_sums = this; next }
		     /^[^ ]/ { in_sums = 0 }
		     in_sums && $3 ~ /\.orig\.tar\./ { print $1, $3; exit }') || true
	[ -n "${name:-}" ] || die "$package $version has no .orig.tar.* in the Sources index"
	if ! echo "$sum  $name" | sha256sum -c --quiet >/dev/null 2>&1; then
		rm -f "$name"
		private_apt apt-get source --download-only -qq "$package=$version" >/dev/null 2>&1 ||
			true
		echo "$sum  $name" | sha256sum -c --quiet >/dev/null 2>&1 ||
			die "downloading $name failed or its SHA-256 is not the Sources index's"
	fi
	printf '%s\n' "$PWD/$name"
}

# The architecture of the package, as apt names its .deb: ARCH or all.
deb_arch() {
	private_apt apt-cache show "$1=$2" | awk '/^Architecture:/ { print $2; exit }'
}

main() {
	local package suite version mirror candidate deb kind=deb

	case "${1:-}" in
	-h|--help) usage; exit 0 ;;
	--source) kind="deb-src"; shift ;;
	--arch)
		[ $# -ge 2 ] || { usage >&2; exit 1; }
		arch=$2
		shift 2
		;;
	esac
	[ $# -ge 2 ] && [ $# -le 3 ] || { usage >&2; exit 1; }
	package=$1 suite=$2 version=${3:-}
	command -v apt-get >/dev/null || die "apt-get not found: this needs a Debian host"
	mirror=$(host_mirror) ||
		die "no Debian mirror found in /etc/apt/sources.list{,.d/*.sources}: add the host's mirror there"

	mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial" "$APT_DIR/archives" \
		"$APT_DIR/sources"
	printf '%s %s%s %s main\n' "$kind" "${arch:+[arch=$arch] }" "$mirror" "$suite" \
		> "$APT_DIR/sources.list"
	log "$kind lists of $suite${arch:+ ($arch)} from the host's mirror"
	private_apt apt-get update -qq >/dev/null ||
		die "apt-get update of $suite failed (is the mirror reachable?)"

	if [ "$kind" = deb-src ]; then
		candidate=$(private_apt apt-cache showsrc "$package" 2>/dev/null |
			awk '/^Version:/ { print $2; exit }')
		[ -n "$candidate" ] || die "$suite has no source package $package"
		if [ -n "$version" ] && ! private_apt apt-cache showsrc "$package" 2>/dev/null |
				grep -qx "Version: $version"; then
			log "warning: $suite no longer has source $package $version; taking $candidate"
			version=""
		fi
		cd "$APT_DIR/sources"
		fetch_orig "$package" "${version:-$candidate}"
		return 0
	fi

	candidate=$(private_apt apt-cache policy "$package" | awk '/Candidate:/ { print $2 }')
	[ -n "$candidate" ] && [ "$candidate" != "(none)" ] ||
		die "$suite has no package $package"
	if [ -n "$version" ] && ! private_apt apt-cache show "$package=$version" >/dev/null 2>&1; then
		log "warning: $suite no longer has $package $version; taking $candidate"
		version=""
	fi
	version=${version:-$candidate}

	deb="$APT_DIR/archives/${package}_${version//:/%3a}_$(deb_arch "$package" "$version").deb"
	if [ ! -s "$deb" ]; then
		(cd "$APT_DIR/archives" && private_apt apt-get download -qq "$package=$version") ||
			die "downloading $package $version failed"
	fi
	[ -s "$deb" ] || die "apt-get download left no $deb"
	printf '%s\n' "$deb"
}

main "$@"
