#!/bin/bash
# mountsafe build: pristine Debian sources + our patch series -> working trees
# -> out-of-tree builds -> one staging root per tool set.
#
#   ./build.sh                 everything below: tool sets and packages at
#                              the same time, then the apt repository
#   ./build.sh tools           fetch, materialise, build and stage the tool sets
#   ./build.sh deb [SOURCE...] Debian 12 and 13 packages with our series, each
#                              built in a clean chroot of its release ->
#                              build/debs/{bookworm,trixie}/ (Debian's test
#                              suites run unless DEB_BUILD_OPTIONS=nocheck),
#                              then the signed apt repository build/repo/
#                              (scripts/deb.sh, scripts/repo.sh)
#   ./build.sh trees           only fetch and materialise the working trees
#   ./build.sh export [C[/B]]  write working-tree commits back to patches/
#   ./build.sh --help
#
# Baselines (matrix.conf): deb12    = Debian 12's util-linux and e2fsprogs
#                                  source packages (Debian's patches applied)
#                       deb13    = the same for Debian 13
#                       upstream = newest util-linux and e2fsprogs in sid,
#                                  pristine upstream tarballs
# Tool sets: stock-<baseline> (no series) and patched-<baseline>.
set -euo pipefail

# shellcheck source=scripts/common.sh
. "$(dirname "$0")/scripts/common.sh"
# shellcheck source=scripts/patchq.sh
. "$MS_ROOT/scripts/patchq.sh"

COMPONENTS=(util-linux e2fsprogs)
IFS=, read -r -a BASELINES <<<"$MATRIX_BASELINES"
STAGE=$MS_BUILD/stage
LOGS=$MS_BUILD/logs
MANIFEST=$MS_BUILD/manifest.txt
TOOLSETS_TSV=$MS_BUILD/toolsets.tsv	# read by toolset_dirs (common.sh)

usage() { sed -n '2,22s/^# \{0,1\}//p' "$0"; }

host_deps() {
	need_pkgs build-essential autoconf automake autopoint libtool gettext bison \
		flex pkg-config dpkg-dev git curl xz-utils ca-certificates ccache \
		debian-archive-keyring texinfo gtk-doc-tools zstd \
		uuid-dev libblkid-dev libfuse-dev
}

# Newest source version of $1 in the baseline's suites.
resolve_version() {
	# shellcheck disable=SC2086 # a list
	newest_src "$1" ${MATRIX_SUITES[$2]}
}

# fetch_source PKG VERSION BASELINE -> prints the pristine directory.
# The unpacked source, after autoreconf, is also kept in
# $MS_CACHE/pristine/ for every checkout on this machine (a fresh clone
# spent a minute of its build unpacking and re-running autoreconf): under
# the source's name, with the versions of the autotools that regenerated it
# beside it (NAME.key).  Copied with its times, so that nothing is
# regenerated again in the copy.
fetch_source() {
	local pkg=$1 ver=$2 base=$3 dl=$MS_CACHE/src dest uver line uri file sum pc key
	uver=${ver#*:}
	uver=${uver%-*}
	dest=$MS_BUILD/pristine/$pkg-$base-$ver
	if [ -f "$dest/.mountsafe-ok" ]; then
		printf '%s\n' "$dest"
		return 0
	fi
	mkdir -p "$dl" "$MS_BUILD/pristine" "$MS_CACHE/pristine"
	rm -rf "$dest" "$dest.tmp"
	pc=$MS_CACHE/pristine/$pkg-$base-$ver
	key=$( { autoconf --version; automake --version; libtoolize --version; autopoint --version; } 2>/dev/null |
		grep -E '^(autoconf|automake|libtoolize|autopoint) ' | paste -sd' ' || true)
	if [ -f "$pc/.mountsafe-ok" ] && [ "$(cat "$pc.key" 2>/dev/null)" = "$key" ]; then
		cp -a "$pc" "$dest.tmp"
		mv "$dest.tmp" "$dest"
		say "source $pkg $ver ($base): unpacked from ${pc#"$MS_CACHE"/}"
		printf '%s\n' "$dest"
		return 0
	fi
	case ${MATRIX_SOURCE[$base]} in
	debian)
		# The whole Debian source package, Debian's patches applied.
		dpkg-source --no-check -x "$(fetch_dsc "$pkg" "$ver")" "$dest.tmp" >&2 ||
			die "dpkg-source -x failed for $pkg $ver"
		rm -rf "$dest.tmp/.pc"
		;;
	upstream)
		# Only the upstream tarball: no Debian changes.
		line=$(papt_get --print-uris -qq source "$pkg=$ver" | grep "^'.*\.orig\.tar\.[a-z0-9]*'") ||
			die "no upstream tarball for $pkg $ver"
		uri=$(cut -d"'" -f2 <<<"$line")
		file=$(awk '{print $2}' <<<"$line")
		sum=$(awk '{print $4}' <<<"$line")
		fetch_verified "$uri" "$dl/$file" "${sum#SHA256:}"
		mkdir -p "$dest.tmp"
		tar -xf "$dl/$file" -C "$dest.tmp" --strip-components=1
		;;
	esac
	regen_autotools "$dest.tmp"
	touch "$dest.tmp/.mountsafe-ok"
	mv "$dest.tmp" "$dest"
	# Keep a copy for the next checkout (other versions of it go).
	find "$MS_CACHE/pristine" -mindepth 1 -maxdepth 1 -name "$pkg-$base-*" ! -name '*.new.*' -exec rm -rf {} +
	cp -a "$dest" "$pc.new.$$"
	echo "$key" >"$pc.key"
	mv "$pc.new.$$" "$pc"
	printf '%s\n' "$dest"
}

# Re-run autoreconf where a patch made configure.ac or Makefile.am newer than
# what was generated from it (Debian's util-linux patches do).
regen_autotools() {
	local t=$1 log
	[ -f "$t/configure.ac" ] || return 0
	# (util-linux includes Makemodule.am files from its Makefile.am.)
	if [ -n "$(find "$t" \( -name configure.ac -o -name '*.am' -o -name '*.m4' \) \
		-newer "$t/configure" -print -quit)" ]; then
		say "autoreconf in ${t#"$MS_ROOT"/}"
		mkdir -p "$LOGS"
		log=$LOGS/autoreconf-$(basename "$(dirname "$t")")-$(basename "$t").log
		(cd "$t" && autoreconf -fi) >"$log" 2>&1 ||
			{ tail -n 20 "$log" >&2; die "autoreconf failed in $t"; }
	fi
}

# Materialise the working tree COMPONENT/BASELINE from PRISTINE + series.
materialise() {
	local comp=$1 base=$2 pristine=$3 tree=$MS_ROOT/$1/$2 want
	want=$(basename "$pristine")
	if [ ! -d "$tree/.git" ] || [ "$(cat "$tree/.git/mountsafe-pristine" 2>/dev/null)" != "$want" ]; then
		if [ -d "$tree/.git" ] && tree_has_local_work "$tree"; then
			die "$comp/$base has unexported work and its pristine source changed; run ./build.sh export $comp/$base first"
		fi
		say "creating working tree $comp/$base from $want"
		rm -rf "$tree"
		mkdir -p "$(dirname "$tree")"
		cp -a "$pristine" "$tree"
		rm -f "$tree/.mountsafe-ok"
		git -C "$tree" init -q -b mountsafe
		git -C "$tree" add -A -f .
		GIT_COMMITTER_NAME=mountsafe GIT_COMMITTER_EMAIL=build@mountsafe.invalid \
			GIT_AUTHOR_NAME=upstream GIT_AUTHOR_EMAIL=upstream@mountsafe.invalid \
			git -C "$tree" commit -q -m "pristine $want"
		git -C "$tree" tag pristine
		echo "$want" >"$tree/.git/mountsafe-pristine"
		git -C "$tree" rev-parse HEAD >"$tree/.git/mountsafe-applied"
	fi
	if [ "$(cat "$tree/.git/mountsafe-series" 2>/dev/null)" != "$(series_hash "$comp" "$base")" ]; then
		if tree_has_local_work "$tree"; then
			die "$comp/$base: patches/ changed and the working tree has unexported edits; export or discard them (git -C $comp/$base reset --hard)"
		fi
		say "applying patches/$comp/$base/series ($(series_list "$comp" "$base" | wc -l) patches)"
		series_apply "$tree" "$comp" "$base"
		series_hash "$comp" "$base" >"$tree/.git/mountsafe-series"
	fi
	regen_autotools "$tree"
}

# build TOOLSET COMPONENT SRCDIR: configure (once), make, install into the
# tool set's staging root.
#
# The object directory build/obj/TOOLSET/COMPONENT sees its source through a
# symlink beside it (build/obj/TOOLSET/COMPONENT.src -> SRCDIR) and runs
# configure by that relative path, so every compiler command line is the
# same for the stock and the patched build of a baseline, and in any clone:
# ccache (which ignores the working directory) then serves every object a
# patch did not change.  configure's results are cached per configure
# script, arguments and host packages ($MS_CACHE/config/), so the second
# tree of a baseline, and every later clone, skips the probes.
build_one() {
	local ts=$1 comp=$2 src=$3 top=$MS_BUILD/obj/$1 obj=$MS_BUILD/obj/$1/$2 log=$LOGS/$1-$2.log
	local args t0 stamp cache
	t0=$(date +%s)
	args=$(configure_args "$comp")
	mkdir -p "$top" "$LOGS"
	ln -sfn "$src" "$top/$comp.src"
	stamp=$obj/.mountsafe-config
	if [ ! -f "$obj/Makefile" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$src $args" ] ||
		[ "$src/configure" -nt "$obj/config.status" ]; then
		rm -rf "$obj" && mkdir -p "$obj" "$MS_CACHE/config"
		cache=$MS_CACHE/config/$comp-$( { cat "$src/configure"; echo "$args"; gcc -dumpfullversion;
			dpkg-query -W; } | sha256sum | cut -c1-16).cache
		# shellcheck disable=SC2086
		(cd "$obj" && CC="ccache gcc" CFLAGS="-O2 -g" "../$comp.src/configure" --cache-file="$cache" $args) >"$log" 2>&1 ||
			{ tail -n 30 "$log" >&2; die "configure failed: $ts/$comp (log: $log)"; }
		echo "$src $args" >"$stamp"
	fi
	make -C "$obj" -j"$MS_JOBS" >>"$log" 2>&1 ||
		{ grep -E 'error|Error' "$log" | tail -n 30 >&2; die "build failed: $ts/$comp (log: $log)"; }
	make -C "$obj" install DESTDIR="$STAGE/$ts.new" >>"$log" 2>&1 ||
		{ tail -n 30 "$log" >&2; die "install failed: $ts/$comp (log: $log)"; }
	[ "$comp" != e2fsprogs ] || stage_e2fsck_static "$ts" "$obj" "$log"
	# util-linux's test programs for the trees the util-linux suite stage
	# runs on: made here, they are cached with the tool set, and a fresh
	# clone's suite stage finds them made instead of linking 87 programs
	# per tree again (~55 s each).
	if [ "$comp" = util-linux ] && [[ ,$MS_SUITE_TOOLSETS_DEFAULT, == *",$ts,"* ]]; then
		make -C "$obj" -j"$MS_JOBS" check-programs >>"$log" 2>&1 ||
			{ grep -E 'error|Error' "$log" | tail -n 30 >&2; die "check-programs failed: $ts/$comp (log: $log)"; }
	fi
	printf '  %-18s %-10s built in %ss\n' "$ts" "$comp" "$(($(date +%s) - t0))"
	printf 'timing %s %s: %ss\n' "$ts" "$comp" "$(($(date +%s) - t0))" >>"$MANIFEST.new"
}

# stage_e2fsck_static TOOLSET OBJDIR LOG: e2fsck.static (what Debian's
# e2fsck-static package ships) beside the tool set's e2fsck.
stage_e2fsck_static() {
	local ts=$1 obj=$2 log=$3 dir
	make -C "$obj/e2fsck" -j"$MS_JOBS" e2fsck.static >>"$log" 2>&1 ||
		{ grep -E 'error|Error' "$log" | tail -n 30 >&2; die "e2fsck.static failed: $ts (log: $log)"; }
	dir=$(dirname "$(find "$STAGE/$ts.new" -name e2fsck -type f | head -n1)")
	install -m 0755 "$obj/e2fsck/e2fsck.static" "$dir/e2fsck.static"
}

# ---- the tool-set cache ----
# A built tool set (its staging root and its object directories, which the
# suite stages build on) is kept in $MS_CACHE/toolsets/ under a key of all
# that went into it: the build functions below, the host's build packages
# and each source tree's content (the pristine source's name; a working
# tree's committed files, only when it has no uncommitted edits).  A later
# build with the same key (a second clone, anywhere; CI) restores it
# instead of compiling.  The object directories hold a few absolute paths
# (config.status, Makefiles' abs_ variables, libtool's .la files): a tool set
# cached by a checkout elsewhere has them rewritten to this one's on restore
# (toolset_relocate).  The two newest entries per tool set are kept.
TS_CACHE=$MS_CACHE/toolsets

# build_host_packages: the host packages a build can depend on (compilers,
# autotools, every -dev package: configure finds optional libraries by
# itself), with their versions.
build_host_packages() {
	dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Version}\n' |
		awk '$1 == "ii" && ($2 ~ /-dev(:|$)/ ||
			$2 ~ /^(gcc|g\+\+|cpp|binutils|autoconf|automake|autopoint|libtool|gettext|pkgconf|pkg-config|bison|flex|make|texinfo|ccache)/) {print $2, $3}'
}

# toolset_key TOOLSET [ROOT]: the key, or nothing when a tree has uncommitted
# edits (uses cmd_build's SRC).  With ROOT: the key of the first version of
# this cache, which held the checkout's place (read, never written).
toolset_key() {
	local ts=$1 comp src
	for comp in "${COMPONENTS[@]}"; do
		src=${SRC[$ts/$comp]}
		if [ -d "$src/.git" ] && [ -n "$(git -C "$src" status --porcelain)" ]; then
			return 0
		fi
	done
	{
		if [ -n "${2:-}" ]; then echo "mountsafe tool set 1 $ts $2"; else echo "mountsafe tool set 2 $ts"; fi
		declare -f configure_args build_one stage_e2fsck_static
		gcc -dumpfullversion
		build_host_packages
		for comp in "${COMPONENTS[@]}"; do
			src=${SRC[$ts/$comp]}
			if [ -d "$src/.git" ]; then
				# (Less autoconf's cache, which differs from one
				# autoreconf to the next and goes into no build.)
				echo "$comp tree $(git -C "$src" ls-tree -r HEAD | grep -v $'\tautom4te.cache/' | sha256sum)"
			else
				echo "$comp pristine $(basename "$src")"
			fi
		done
	} | sha256sum | cut -c1-20
}

# toolset_restore TOOLSET KEY: restore a cached tool set; status 1 if none.
# Every restored file gets one time, now: make then finds the objects up to
# date (not older than the sources this clone materialised before, nor
# than each other) and rebuilds only what is edited later.
toolset_restore() {
	local ts=$1 f=$TS_CACHE/$1-$2.tar.zst t0 now comp
	[ -f "$f" ] || return 1
	t0=$(date +%s)
	rm -rf "${STAGE:?}/$ts" "$MS_BUILD/obj/$ts"
	# (The lanes restore at the same time: tar must not have to create
	# the shared parents, or one tar can fail to make obj/<ts> in an obj/
	# that another is creating; seen once in a fresh clone.)
	mkdir -p "$MS_BUILD/obj" "$STAGE"
	if ! tar -I zstd -xf "$f" -C "$MS_BUILD"; then
		rm -rf "${STAGE:?}/$ts" "$MS_BUILD/obj/$ts" "$f"
		say "the cached $ts was unreadable; building it"
		return 1
	fi
	toolset_relocate "$ts"
	now=$(date +%s)
	find "$MS_BUILD/obj/$ts" "$STAGE/$ts" -exec touch -h -d "@$now" {} +
	for comp in "${COMPONENTS[@]}"; do
		ln -sfn "${SRC[$ts/$comp]}" "$MS_BUILD/obj/$ts/$comp.src"
	done
	touch "$f"
	printf '  %-18s restored from the cache in %ss (%s)\n' "$ts" "$(($(date +%s) - t0))" "${f#"$MS_CACHE"/}"
	printf 'timing %s: restored from the cache %ss\n' "$ts" "$(($(date +%s) - t0))" >>"$MANIFEST.new"
}

# toolset_relocate TOOLSET: after a restore, the object directories' text
# files name this checkout and build directory instead of those they were
# built in (obj/TOOLSET/.mountsafe-paths: the checkout, then the build
# directory; an entry without it was made here).
toolset_relocate() {
	local ts=$1 obj=$MS_BUILD/obj/$1 old_root old_build
	[ -f "$obj/.mountsafe-paths" ] || return 0
	{ read -r old_root; read -r old_build; } <"$obj/.mountsafe-paths"
	[ "$old_root" != "$MS_ROOT" ] || [ "$old_build" != "$MS_BUILD" ] || return 0
	# One pass, the build directory first: a second pass would rewrite
	# again what the first wrote whenever the new place contains the old
	# one (/work/main -> /check/work/main).
	# shellcheck disable=SC2016 # perl's $ENV, not the shell's
	grep -rIlZ -F -e "$old_build" -e "$old_root" "$obj" |
		OB=$old_build NB=$MS_BUILD OR=$old_root NR=$MS_ROOT xargs -0 -r perl -pi -e \
			's{(\Q$ENV{OB}\E|\Q$ENV{OR}\E)(?=[/\s\x27"]|$)}{$1 eq $ENV{OB} ? $ENV{NB} : $ENV{NR}}ge'
	printf '%s\n' "$MS_ROOT" "$MS_BUILD" >"$obj/.mountsafe-paths"
}

# toolset_save TOOLSET KEY
toolset_save() {
	local ts=$1 f=$TS_CACHE/$1-$2.tar.zst
	mkdir -p "$TS_CACHE"
	printf '%s\n' "$MS_ROOT" "$MS_BUILD" >"$MS_BUILD/obj/$ts/.mountsafe-paths"
	if ! tar -I 'zstd -1 -T0' -cf "$f.tmp.$BASHPID" -C "$MS_BUILD" "obj/$ts" "stage/$ts"; then
		rm -f "$f.tmp.$BASHPID"
		say "could not cache $ts"
		return 0
	fi
	mv "$f.tmp.$BASHPID" "$f"
	# Keep the newest two of each tool set.
	beyond_newest 2 "$TS_CACHE" -maxdepth 1 -name "$ts-*.tar.zst" | xargs -r rm -f
}

# build_lane BASELINE: the tool sets stock-BASELINE and patched-BASELINE,
# one after the other (uses cmd_build's SRC); each from the cache when it
# holds it.
build_lane() {
	local ts comp key old
	for ts in stock-$1 patched-$1; do
		key=$(toolset_key "$ts")
		if [ -n "$key" ] && toolset_restore "$ts" "$key"; then
			continue
		fi
		# An entry of the first version of this cache, made in this checkout.
		old=$(toolset_key "$ts" "$MS_ROOT")
		if [ -n "$key" ] && toolset_restore "$ts" "$old"; then
			toolset_save "$ts" "$key"
			continue
		fi
		rm -rf "$STAGE/$ts.new"
		for comp in "${COMPONENTS[@]}"; do
			build_one "$ts" "$comp" "${SRC[$ts/$comp]}"
		done
		rm -rf "${STAGE:?}/$ts"
		mv "$STAGE/$ts.new" "$STAGE/$ts"
		[ -z "$key" ] || toolset_save "$ts" "$key"
	done
}

# toolsets_tsv: TOOLSETS_TSV, where the parts of each built tool set are, so
# that the stages that build on them (the suite stages) need not know this
# script's layout.  A row per tool set and component: its staging root, its
# object directory, the source as the object directory's Makefiles name it
# (relative to it: build_one configures through ../COMPONENT.src, a link)
# and the source directory (uses cmd_build's SRC).
toolsets_tsv() {
	local ts comp
	{
		printf '# toolset\tcomponent\tstage\tobj\tsrcdir\tsrc\n'
		for ts in ${MATRIX_TOOLSETS//,/ }; do
			for comp in "${COMPONENTS[@]}"; do
				printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$ts" "$comp" "$STAGE/$ts" "$MS_BUILD/obj/$ts/$comp" \
					"../$comp.src" "$(readlink -f "${SRC[$ts/$comp]}")"
			done
		done
	} >"$TOOLSETS_TSV.new"
	mv "$TOOLSETS_TSV.new" "$TOOLSETS_TSV"
}

# bg_wait WHAT DID: wait for every background job in BG (pid -> name); die
# with "WHAT <the failed names> DID" when any failed.
bg_wait() {
	local pid rc failed=''
	while [ "${#BG[@]}" -gt 0 ]; do
		rc=0; wait -n -p pid || rc=$?
		[ "$rc" = 0 ] || failed="$failed ${BG[$pid]}"
		unset "BG[$pid]"
	done
	[ -z "$failed" ] || die "$1$failed $2 (see the errors above)"
}

cmd_build() {
	local base comp ver pristine t0
	t0=$(date +%s)
	host_deps
	export CCACHE_DIR=$MS_CACHE/ccache CCACHE_BASEDIR=$MS_ROOT CCACHE_NOHASHDIR=1
	apt_setup
	mkdir -p "$MS_BUILD" "$STAGE" "$LOGS"
	{
		echo "# mountsafe build manifest, $(date -u '+%F %T') UTC"
		echo "host: $(. /etc/os-release && echo "$PRETTY_NAME"), gcc $(gcc -dumpfullversion)"
	} >"$MANIFEST.new"
	declare -A SRC
	# The working trees are materialised at once (copy, git, patches,
	# autoreconf: each tree on its own), the sources fetched one by one.
	declare -A BG=()
	for base in "${BASELINES[@]}"; do
		for comp in "${COMPONENTS[@]}"; do
			ver=$(resolve_version "$comp" "$base")
			pristine=$(fetch_source "$comp" "$ver" "$base")
			materialise "$comp" "$base" "$pristine" &
			BG[$!]=$comp/$base
			SRC[stock-$base/$comp]=$pristine
			SRC[patched-$base/$comp]=$MS_ROOT/$comp/$base
			printf '%s\t%s\t%s\t%s patches\n' "$base" "$comp" "$ver" \
				"$(series_list "$comp" "$base" | wc -l)" >>"$MANIFEST.new"
			echo "source $comp/$base: $comp $ver ($(series_list "$comp" "$base" | wc -l) patches)"
		done
	done
	bg_wait "the working trees of" "could not be made"
	[ "${1:-}" = trees ] && { mv "$MANIFEST.new" "$MANIFEST"; return 0; }
	# (None while the tool sets build: a failed build leaves no rows.)
	rm -f "$TOOLSETS_TSV"
	# One lane per baseline, stock then patched (so that ccache serves the
	# patched tree what the stock one compiled), all lanes at once: one
	# lane's configure, which runs on one core, overlaps the others'
	# compiling, and no lane is left to run alone at the end.
	for base in "${BASELINES[@]}"; do
		build_lane "$base" &
		BG[$!]=$base
	done
	bg_wait "the tool sets of" "did not build"
	toolsets_tsv
	echo "tool sets: $(($(date +%s) - t0))s" >>"$MANIFEST.new"
	mv "$MANIFEST.new" "$MANIFEST"
	echo "staged tool sets in ${STAGE#"$MS_ROOT"/}: $(cd "$STAGE" && echo *)"
	echo "build done in $(($(date +%s) - t0))s; manifest: ${MANIFEST#"$MS_ROOT"/}"
}

cmd_export() {
	local sel=${1:-} comp base any=0
	for comp in "${COMPONENTS[@]}"; do
		for base in "${BASELINES[@]}"; do
			case $sel in "" | "$comp" | "$comp/$base") ;; *) continue ;; esac
			[ -d "$MS_ROOT/$comp/$base/.git" ] || continue
			series_export "$MS_ROOT/$comp/$base" "$comp" "$base"
			any=1
		done
	done
	[ $any = 1 ] || die "nothing to export for '${sel:-all}' (run ./build.sh first)"
}

# cmd_all: the tool sets and the packages at the same time, then the
# repository.  The two share only the private apt indexes and the source
# downloads, both safe for builds at once (common.sh).  The packages spend
# most of their time in Debian's util-linux test suite, which Debian runs
# one test at a time (debian/rules: --max-parallel=1), and one after the
# other they left a core idle for much of it (docs/performance.md).  The
# tool sets compile beside them at a lower priority (nice 10),
# on the CPU time the package builds leave, so that the packages' test
# suites (some of them timing-sensitive) run as they did alone.
cmd_all() {
	declare -A BG=()
	"$MS_ROOT/scripts/deb.sh" &
	BG[$!]=deb
	nice -n 10 "$MS_ROOT/build.sh" tools &
	BG[$!]=tools
	bg_wait "./build.sh:" failed
	exec "$MS_ROOT/scripts/repo.sh"
}

case ${1:-} in
"" | build) cmd_all ;;
tools) cmd_build ;;
trees) cmd_build trees ;;
export) cmd_export "${2:-}" ;;
deb) shift; "$MS_ROOT/scripts/deb.sh" "$@" && exec "$MS_ROOT/scripts/repo.sh" ;;
-h | --help | help) usage ;;
*) usage >&2; exit 2 ;;
esac
