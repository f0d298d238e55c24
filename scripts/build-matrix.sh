#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build every prefix of the series the way the build bots do: several
# arches, compilers and configurations; fail on a warning the base lacks.
set -o errexit -o nounset -o pipefail

. "$(dirname "$0")/lib.sh"

readonly MATRIX_TREE="$SCRATCH_TREE"
readonly MATRIX_BUILD="$BUILD_DIR/matrix"
readonly LOG="$RESULTS_DIR/matrix"
# Base warnings, per base commit, compiler and configuration: kept across runs.
readonly BASE_CACHE="$EPOLL_CACHE_DIR/matrix"
# Bump when what is recorded for the base changes meaning.
readonly CACHE_VERSION=2
readonly KUNITCONFIG=fs/tests/.kunitconfig
# Every configuration is built with W=1; C=1 (sparse) where the table says.
readonly MAKE_FLAGS=(W=1)

# One configuration a line: name, ARCH, compiler (run as "ccache
# <compiler>"; a cross compiler's prefix is CROSS_COMPILE), sparse (1 or
# 0), then the fragments merged onto tinyconfig in order: NAME for
# config/NAME.config of this repository, or a path in the patched tree,
# used when the top of the series has it.
readonly MATRIX=(
	"x86_64-gcc         x86_64 gcc                   1 guest qemu-x86_64 debug matrix/epoll $KUNITCONFIG"
	"x86_64-clang-debug x86_64 clang-19              0 guest qemu-x86_64 debug matrix/clang-debug matrix/epoll $KUNITCONFIG"
	"i386-gcc           i386   gcc                   1 matrix/epoll $KUNITCONFIG"
	"arm-gcc            arm    arm-linux-gnueabi-gcc 1 matrix/arm matrix/epoll"
	"arm64-gcc          arm64  aarch64-linux-gnu-gcc 1 matrix/epoll $KUNITCONFIG"
	"x86_64-no-pm-sleep x86_64 gcc                   1 guest qemu-x86_64 matrix/epoll matrix/no-pm-sleep"
	"x86_64-no-io-uring x86_64 gcc                   1 guest qemu-x86_64 matrix/epoll matrix/no-io-uring"
	"x86_64-no-epoll    x86_64 gcc                   1 guest qemu-x86_64 matrix/epoll matrix/no-epoll"
)

usage() {
	cat <<EOF
Usage: ${0##*/} [-h] [-f] [-q] [-t] [-c NAME]...

For each configuration below, build the base and then every prefix of
the series (as the bisect build does; a patch that only touches
tools/testing/, .rst files or MAINTAINERS is skipped), objects only:
  - the C files the series changes and those that include a header it
    changes, when the configuration builds them (decided from their
    Makefile line and the .config),
  - plus one 'make prepare' per configuration.
Fail on a build error, or on a compiler, sparse, objtool or Kconfig
warning that a prefix has and the base of the same configuration does
not ("new ones", as the kernel test robot reports them), naming the
configuration, the patch and the message. Line numbers are ignored when
comparing, so moved code does not count as new.

Configurations (W=1 everywhere; fragments onto tinyconfig, config/NAME.config
or a file of the patched tree):
$(printf '%s\n' "${MATRIX[@]}" | awk '{ printf "  %-19s ARCH=%-6s %-22s %s", $1, $2, $3, $4 == 1 ? "C=1" : "   "
	for (i = 5; i <= NF; i++) printf " %s", $i; print "" }')

The configurations share the scratch worktree of \$OUT_DIR/linux ($MATRIX_TREE)
and have one build directory each ($MATRIX_BUILD/NAME), with ccache.
A configuration is made anew only when the top of the series, a fragment
or the compiler changes. The base's warnings are cached in
$BASE_CACHE/, keyed by base commit, compiler (and
sparse) version, .config and object list. Logs and warning lists: $LOG/.

Options:
  -h       show this help and exit
  -c NAME  only this configuration (repeatable)
  -f       rebuild the base even if its warnings are cached
  -q       quick: let kbuild rebuild only the objects whose inputs a patch
           changed, and keep the warnings of the others from the step
           before (the default rebuilds every object at every step; with
           ccache only sparse really runs again)
  -t       top only: compare the whole series with the base, not each
           patch (make check's short mode; lint-series.sh build still
           builds every patch on x86_64)

Environment:
  OUT_DIR          output directory (now: $OUT_DIR)
  EPOLL_CACHE_DIR  base tree, ccache and base warnings (now: $EPOLL_CACHE_DIR)
  JOBS             parallel make jobs (now: $JOBS)

Exit status: 0 when no prefix adds a warning in any configuration, 1 otherwise.
EOF
}

# English messages and one collation: ccache hashes the locale, and
# comm needs the sort order of sort.
export LC_ALL=C.UTF-8

# The configuration being built, set by load_config.
cfg_name='' cfg_arch='' cfg_cc='' cfg_cross='' cfg_sparse=0 cfg_frags=() cfg_dir=''

load_config() {
	local line name rest

	for line in "${MATRIX[@]}"; do
		read -r name rest <<<"$line"
		[ "$name" = "$1" ] || continue
		read -r cfg_name cfg_arch cfg_cc cfg_sparse rest <<<"$line"
		read -r -a cfg_frags <<<"$rest"
		case "$cfg_cc" in
		*-gcc) cfg_cross=${cfg_cc%gcc} ;;
		*) cfg_cross='' ;;
		esac
		cfg_dir="$MATRIX_BUILD/$cfg_name"
		return 0
	done
	die "no configuration named '$1' (see -h)"
}

config_names() { printf '%s\n' "${MATRIX[@]}" | awk '{ print $1 }'; }

kmake() {
	local flags=("${MAKE_FLAGS[@]}")

	[ "$cfg_sparse" -eq 0 ] || flags+=(C=1)
	# </dev/null: a config prompt must not eat the caller's input. Not
	# the variables of a calling make (make matrix MATRIX=...): kbuild
	# would take them for its own.
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$MATRIX_TREE" O="$cfg_dir" ARCH="$cfg_arch" \
		CROSS_COMPILE="$cfg_cross" CC="ccache $cfg_cc" HOSTCC="$KCC" \
		-j"$JOBS" "${flags[@]}" "$@" </dev/null
}

compiler_version() {
	"$cfg_cc" --version | head -1
	[ "$cfg_sparse" -eq 0 ] || echo "sparse $(sparse --version 2>&1)"
}

# The configuration's fragments, as files; tree files missing at the top
# of the series are left out.
fragment_files() {
	local f

	for f in "${cfg_frags[@]}"; do
		case "$f" in
		*/*.*) [ ! -f "$MATRIX_TREE/$f" ] || printf '%s\n' "$MATRIX_TREE/$f" ;;
		*) [ -f "$REPO_DIR/config/$f.config" ] || die "$cfg_name: no config/$f.config"
		   printf '%s\n' "$REPO_DIR/config/$f.config" ;;
		esac
	done
}

# Kernel C files the series changes, and those that include a header it
# changes (include/linux/eventpoll.h -> every #include <linux/eventpoll.h>).
candidate_sources() {
	local h key

	{
		series_c_files
		git -C "$WORKTREE" diff --name-only --diff-filter=AM "$(base_commit)" "$(postings_head)" -- \
			'include/*.h' 'arch/*/include/*.h' |
		while read -r h; do
			key=${h#*include/}
			key=${key#uapi/}
			git -C "$MATRIX_TREE" grep -lE "^#[[:space:]]*include [<\"](uapi/)?${key//./\\.}[>\"]" \
				-- '*.c' ':!tools/' ':!samples/' ':!Documentation/' || true
		done
	} | sort -u
}

# Make the configuration's .config at the top of the series: tinyconfig,
# the fragments, olddefconfig, every option checked; then list the
# candidate objects it builds. Skipped when nothing it depends on (the
# functions that do it included) changed.
configure() {
	local tmp="$cfg_dir/.config.new" stamp frags f

	mapfile -t frags < <(fragment_files)
	stamp=$({
		echo "$cfg_arch $cfg_cc $(git -C "$MATRIX_TREE" rev-parse HEAD)"
		compiler_version
		declare -f configure fragment_files candidate_sources kbuild_builds makefile_var
		for f in "${frags[@]}"; do echo "== ${f##*/}"; cat "$f"; done
	} | sha1sum | cut -d' ' -f1)
	if [ "$(cat "$cfg_dir/matrix.stamp" 2>/dev/null)" = "$stamp" ] &&
	   [ -f "$cfg_dir/matrix.config" ] && [ -f "$cfg_dir/matrix.objects" ]; then
		return 0
	fi
	log "$cfg_name: configuring (tinyconfig + ${frags[*]##*/})"
	rm -f "$cfg_dir/matrix.stamp"
	mkdir -p "$cfg_dir"
	KCONFIG_CONFIG=.config.new kmake -s tinyconfig >/dev/null
	(cd "$cfg_dir" && KCONFIG_CONFIG=.config.new \
		"$MATRIX_TREE/scripts/kconfig/merge_config.sh" -m -O "$cfg_dir" \
		"$tmp" "${frags[@]}" >/dev/null)
	KCONFIG_CONFIG=.config.new kmake -s olddefconfig >/dev/null
	verify_config "$tmp" "${frags[@]}"
	mv "$tmp" "$cfg_dir/matrix.config"
	while read -r f; do
		! kbuild_builds "$MATRIX_TREE" "$cfg_arch" "$f" "$cfg_dir/matrix.config" || printf '%s\n' "${f%.c}.o"
	done <<<"$SOURCES" > "$cfg_dir/matrix.objects"
	printf '%s\n' "$stamp" > "$cfg_dir/matrix.stamp"
}

# A kbuild log, sorted out: the diagnostics of each object of the list
# @1 go to @2/<object with / as %>, all others (prepare, Kconfig) to
# @2/other. Paths lose the source tree: absolute (sparse), relative to
# the build dir (the compiler, as ccache runs it with CCACHE_BASEDIR), or
# another clone's (a warning replayed by ccache).
split_log() {
	local objs=$1 dest=$2

	mkdir -p "$dest"
	awk -v objs="$objs" -v dest="$dest" -v tree="$MATRIX_TREE/" '
		BEGIN { n = split(objs, o, " "); for (i = 1; i <= n; i++) want[o[i]] = 1
			cur = dest "/other"; printf "" > cur }
		{ gsub(tree, ""); gsub(/[^ :]*\/matrix\/linux\//, ""); sub(/^\.\//, "") }
		/^  [A-Z][A-Z0-9_]*( \[M\])? +[^ ]+$/ {
			t = $NF; if ($1 == "CHECK") sub(/\.c$/, ".o", t)
			if (t in want) { f = t; gsub("/", "%", f); cur = dest "/" f
				if (!(cur in seen)) { seen[cur] = 1; printf "" > cur } }
			else cur = dest "/other"
			next
		}
		/^[^ ]+: (fatal error|warning|error): / ||
		/^[^ ]+:[0-9]+(:[0-9]+)?: (fatal error|warning|error): / ||
		/^[^ ]*:[0-9]+:warning: / || /^(WARNING|ERROR): / { print > cur }
	'
}

# One build of the objects at commit @1, step @2 (base or a patch number):
# per-object warnings kept in the build dir beside each object, so that
# an object kbuild does not rebuild keeps those of its last build.
build_step() {
	local rev=$1 step=$2 quick=$3 prepare=$4 objs o rec f rc=0 split

	git -C "$MATRIX_TREE" checkout -q -f --detach "$rev"
	# A Kconfig that lacks an option of ours (the base has no
	# EPOLL_KUNIT_TEST) drops it from .config: put it back for the next step.
	cmp -s "$cfg_dir/matrix.config" "$cfg_dir/.config" ||
		cp "$cfg_dir/matrix.config" "$cfg_dir/.config"
	objs=$(tr '\n' ' ' < "$cfg_dir/matrix.objects")
	: > "$LOG/$cfg_name/$step.log"
	if [ "$prepare" -eq 1 ]; then
		kmake -k -O prepare >"$LOG/$cfg_name/$step.log" 2>&1 || rc=$?
	fi
	for o in $objs; do
		rec="$cfg_dir/$o.warnings"
		if [ "$quick" -eq 0 ] || [ ! -f "$rec" ] || [ ! -f "$cfg_dir/$o" ] ||
		   [ "$cfg_dir/$o" -nt "$rec" ]; then
			rm -f "$cfg_dir/$o" "$rec"
		fi
	done
	if [ "$rc" -eq 0 ] && [ -n "$objs" ]; then
		# shellcheck disable=SC2086
		kmake -k -O $objs >>"$LOG/$cfg_name/$step.log" 2>&1 || rc=$?
	fi
	split="$LOG/$cfg_name/$step.split"
	rm -rf "$split"
	split_log "$objs" "$split" < "$LOG/$cfg_name/$step.log"
	for o in $objs; do
		f="$split/${o//\//%}"
		rec="$cfg_dir/$o.warnings"
		if [ -f "$f" ]; then
			mkdir -p "${rec%/*}"
			cp "$f" "$rec"
		elif [ ! -f "$rec" ] && [ -f "$cfg_dir/$o" ]; then
			: > "$rec"
		fi
	done
	{
		cat "$split/other"
		for o in $objs; do cat "$cfg_dir/$o.warnings" 2>/dev/null || true; done
	} > "$LOG/$cfg_name/$step.warnings"
	normalize_warnings < "$LOG/$cfg_name/$step.warnings" > "$LOG/$cfg_name/$step.txt"
	config_drift "$step"
	return "$rc"
}

# Options of the configuration that kbuild changed at this step although
# the step's Kconfig knows them.
config_drift() {
	local opt

	while read -r opt; do
		git -C "$MATRIX_TREE" grep -qE "^[[:space:]]*(menu)?config ${opt#CONFIG_}\$" -- '*Kconfig*' ||
			continue
		fail "$cfg_name: at step $1, kbuild changed $opt from the configuration:" \
			"$(grep -E "^$opt=|^# $opt is not set" "$cfg_dir/.config" || echo unset)"
	done < <(diff <(grep '^CONFIG_' "$cfg_dir/matrix.config") \
		      <(grep '^CONFIG_' "$cfg_dir/.config") |
		 sed -nE 's/^[<>] (CONFIG_[A-Za-z0-9_]+)=.*/\1/p' | sort -u)
}

# The base's warnings, from the cache or from a build of the base commit
# (which runs 'make prepare': then base_built=1).
base_built=0
base_warnings() {
	local rebuild=$1 quick=$2 base key

	base=$(base_commit)
	key=$({
		echo "$CACHE_VERSION $base $cfg_arch $cfg_cc sparse=$cfg_sparse ${MAKE_FLAGS[*]}"
		compiler_version
		cat "$cfg_dir/matrix.config" "$cfg_dir/matrix.objects"
	} | sha1sum | cut -d' ' -f1)
	key="$BASE_CACHE/$cfg_name-$key.warnings"
	if [ "$rebuild" -eq 0 ] && [ -f "$key" ]; then
		cp "$key" "$LOG/$cfg_name/base.warnings"
		normalize_warnings < "$key" > "$LOG/$cfg_name/base.txt"
		base_built=0
		return 0
	fi
	build_step "$base" base "$quick" 1 ||
		die "$cfg_name: the base does not build (see $LOG/$cfg_name/base.log):
$(grep -E 'error|\*\*\*' "$LOG/$cfg_name/base.log" | head -5)"
	mkdir -p "$BASE_CACHE"
	cp "$LOG/$cfg_name/base.warnings" "$key.tmp"
	mv "$key.tmp" "$key"
	base_built=1
}

# The lines of @1 (raw warnings) whose normalised form is among the
# normalised lines @2.
raw_of() {
	local raw=$1 new=$2 line

	while IFS= read -r line; do
		grep -qxF -- "$(normalize_warnings <<<"$line")" <<<"$new" && printf '%s\n' "$line"
	done < "$raw" | sort -u
}

run_config() {
	local name=$1 rebuild=$2 quick=$3 top_only=$4 rev i=0 p new fresh prepared start steps=0 bad=0 rc
	local seen

	load_config "$name"
	start=$(date +%s)
	rm -rf "${LOG:?}/$cfg_name"
	mkdir -p "$LOG/$cfg_name"
	: > "$LOG/$cfg_name/reported.txt"
	git -C "$MATRIX_TREE" checkout -q -f --detach "$TOP"
	configure
	base_warnings "$rebuild" "$quick"
	prepared=$base_built
	while read -r rev <&3; do
		i=$((i + 1))
		p=$(series_patches | sed -n "${i}p")
		[ -n "$p" ] || p="commit $(git -C "$WORKTREE" log -1 --format='%h ("%s")' "$rev")"
		if [ "$top_only" -eq 1 ]; then
			[ "$rev" = "$TOP" ] || continue
			p="the series (make matrix names the patch)"
		elif builds_as_parent "$rev"; then
			continue
		fi
		rc=0
		if [ "$prepared" -eq 1 ]; then
			build_step "$rev" "$i" "$quick" 0 || rc=$?
		else
			build_step "$rev" "$i" "$quick" 1 || rc=$?
			prepared=1
		fi
		steps=$((steps + 1))
		new=$(comm -13 "$LOG/$cfg_name/base.txt" "$LOG/$cfg_name/$i.txt")
		if [ -n "$new" ] || [ "$rc" -ne 0 ]; then
			bad=1
			# Name each new warning once, at the first patch that has it.
			fresh=$(comm -13 "$LOG/$cfg_name/reported.txt" - <<<"$new")
			seen=$(($(grep -c . <<<"$new") - $(grep -c . <<<"$fresh" || true)))
			fail "$cfg_name ($(describe)): $p $(
				[ "$rc" -eq 0 ] || echo 'does not build, and ')adds over the base:
$({ raw_of "$LOG/$cfg_name/$i.warnings" "$fresh"
    [ "$rc" -eq 0 ] || grep -E '\*\*\*|error' "$LOG/$cfg_name/$i.log" | head -5
  } | sed 's/^/    >> /')$(
				[ "$seen" -eq 0 ] || printf '\n    (and %d reported above for an earlier patch)' "$seen")
    (log: $LOG/$cfg_name/$i.log)"
			sort -m "$LOG/$cfg_name/reported.txt" - <<<"$fresh" | sed '/^$/d' > "$LOG/$cfg_name/reported.new"
			mv "$LOG/$cfg_name/reported.new" "$LOG/$cfg_name/reported.txt"
		fi
	done 3< <(git -C "$WORKTREE" rev-list --reverse "$(base_commit)..$TOP")
	[ "$bad" -eq 1 ] ||
		pass "$cfg_name ($(describe)): $([ "$top_only" -eq 1 ] && echo "top of the series" || echo "$steps patches"), objects: $(tr '\n' ' ' < "$cfg_dir/matrix.objects")-- $(wc -l < "$LOG/$cfg_name/base.txt") warnings at base, none added ($(($(date +%s) - start)) s)"
}

describe() {
	printf '%s, %s W=1%s' "$cfg_arch" "$("$cfg_cc" --version | head -1 | sed -E 's/ \(.*\)//')" \
		"$([ "$cfg_sparse" -eq 0 ] || echo ' C=1')"
}

main() {
	local rebuild=0 quick=0 top_only=0 names=() name opt

	while getopts hfqtc: opt; do
		case "$opt" in
		h) usage; exit 0 ;;
		f) rebuild=1 ;;
		q) quick=1 ;;
		t) top_only=1 ;;
		c) names+=("$OPTARG") ;;
		*) usage >&2; exit 1 ;;
		esac
	done
	shift $((OPTIND - 1))
	[ $# -eq 0 ] || { usage >&2; exit 1; }
	[ ${#names[@]} -gt 0 ] || mapfile -t names < <(config_names)
	for name in "${names[@]}"; do load_config "$name"; done
	need_worktree
	command -v ccache >/dev/null || die "ccache missing: run scripts/install-deps.sh"
	TOP=$(postings_head)
	readonly TOP
	scratch_tree_at "$TOP"
	SOURCES=$(candidate_sources)
	readonly SOURCES
	[ -n "$SOURCES" ] || log "the series changes no kernel C file and no header: only 'make prepare' is built"
	for name in "${names[@]}"; do
		load_config "$name"
		command -v "$cfg_cc" >/dev/null || die "$cfg_name: no $cfg_cc: run scripts/install-deps.sh"
		run_config "$name" "$rebuild" "$quick" "$top_only"
	done
	[ "$failures" -eq 0 ] || die "$failures problem(s) above"
	log "${#names[@]} configurations, $([ "$top_only" -eq 1 ] && echo "the top of the series" || echo "every patch"): no warning added"
}

main "$@"
