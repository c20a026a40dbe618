#!/bin/bash
# shellcheck source-path=SCRIPTDIR
# Debian 12 and Debian 13 binary packages of util-linux and e2fsprogs with
# the mountsafe series, built the way Debian builds them.
#
#   ./build.sh deb [SOURCE...]   (or scripts/deb.sh): util-linux e2fsprogs
#   scripts/deb.sh --release bookworm|trixie [SOURCE...]   one release only
#   MOUNTSAFE_RELEASES=bookworm ./build.sh                   Debian 12 only
#
# The releases built: MOUNTSAFE_RELEASES (comma-separated), else every
# release of matrix.conf.
#
# For each release (matrix.conf: bookworm = Debian 12, series
# patches/<c>/deb12; trixie = Debian 13, series patches/<c>/deb13) and source
# package: the newest version in its baseline's suites (the release and its
# -updates suite) is unpacked with dpkg-source into the work directory,
# the series is appended to debian/patches/series
# (files in debian/patches/mountsafe/, DEP-3 headers as they are), a
# debian/changelog entry gives the version a +mountsafeN suffix, and
# dpkg-buildpackage -b builds it as an unprivileged user (nobody) inside a
# clean chroot of that release: mmdebstrap's buildd variant plus the
# package's build dependencies, made once and kept as a tarball, unpacked
# afresh for every build.  The host installs no build dependencies; what it
# has installed does not reach the build.  Two releases build at the same
# time.  Debian's build-time test suites run unless DEB_BUILD_OPTIONS
# has nocheck; e2fsprogs' runs only when DEB_BUILD_OPTIONS is set (tests/run's
# stage "e2fsprogs check" runs it on the same sources and series).
# Result: build/debs/<release>/*.deb, SHA256SUMS and BUILDINFO.txt
# (versions, patches, timings, the chroot).  Build logs:
# build/logs/deb-<release>-<source>.log.
#
# Environment: MOUNTSAFE_DEB_REV=N for +mountsafeN (default: deb_rev);
# DEBFULLNAME / DEBEMAIL for the changelog entry.
set -euo pipefail
[ -z "${DEB_BUILD_OPTIONS+x}" ] || DEB_BUILD_OPTIONS_SET=1

# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
# shellcheck source=patchq.sh
. "$MS_ROOT/scripts/patchq.sh"

# The build happens outside the checkout: a checkout may live where the
# build user cannot go (root's home is mode 700).  The directory also keeps
# each source's last packages (out-<release>-<source>/, stamped with what
# they were built from), which a new clone of the same series reuses
# instead of building them again, and the chroot tarballs (chroots/).
if [ "$(id -u)" -eq 0 ]; then
	DEB_WORK=${MOUNTSAFE_DEB_WORK:-/var/cache/mountsafe/deb}
else
	DEB_WORK=${MOUNTSAFE_DEB_WORK:-$MS_CACHE/deb}
fi
DEB_OUT=$MS_BUILD/debs
LOGS=$MS_BUILD/logs
IFS=, read -r -a RELEASES <<<"${MOUNTSAFE_RELEASES:-$MATRIX_RELEASES}"
SOURCES=(util-linux e2fsprogs)
# Compilers in the chroot go through ccache; its directory is bound into
# every chroot and owned by the build user.
DEB_CCACHE=${MS_DEB_CCACHE:-/var/cache/mountsafe/ccache-deb}

usage() { awk 'NR > 1 && !/^#/ {exit} NR > 1 && !/shellcheck/ {sub(/^# ?/, ""); print}' "$0"; }

# Newest source version of PKG in the suites of REL's baseline (as build.sh
# resolves the baseline).
release_version() {
	local base
	base=$(rel_base "$1")
	# shellcheck disable=SC2086 # a list
	newest_src "$2" ${MATRIX_SUITES[$base]}
}

# deb_rev COMPONENT: N of +mountsafeN, the number of commits of this
# checkout that changed the component's series or the packaging (this
# file), so that every such change gives a higher version and apt offers
# it.  Uncommitted changes give N+1~dirty, which sorts below the commit
# that will hold them.
deb_rev() {
	local comp=$1 n
	if [ -n "${MOUNTSAFE_DEB_REV:-}" ]; then
		printf '%s\n' "$MOUNTSAFE_DEB_REV"
		return
	fi
	[ "$(git -C "$MS_ROOT" rev-parse --is-shallow-repository 2>/dev/null)" = false ] ||
		die "the package version counts commits: $MS_ROOT must be a complete git clone (or set MOUNTSAFE_DEB_REV)"
	n=$(git -C "$MS_ROOT" rev-list --count HEAD -- "patches/$comp" scripts/deb.sh)
	if git -C "$MS_ROOT" diff --quiet HEAD -- "patches/$comp" scripts/deb.sh &&
		[ -z "$(git -C "$MS_ROOT" ls-files --others --exclude-standard -- "patches/$comp")" ]; then
		printf '%s\n' "$n"
	else
		printf '%s~dirty\n' "$((n + 1))"
	fi
}

# The commit a build is made from, for the changelog and BUILDINFO.txt.
source_commit() {
	local c
	c=$(git -C "$MS_ROOT" rev-parse --short=12 HEAD 2>/dev/null) || c=unknown
	git -C "$MS_ROOT" diff --quiet HEAD -- patches scripts/deb.sh 2>/dev/null || c="$c+changes"
	printf '%s\n' "$c"
}

# The version Debian's next update of VER would get: +debNNuN -> +debNNu(N+1),
# otherwise the first stable update +debNNu1.
next_debian_update() {
	local v=$1 tag=$2 n
	if [[ $v =~ ^(.*\+${tag}u)([0-9]+)$ ]]; then
		n=${BASH_REMATCH[2]}
		printf '%s%s\n' "${BASH_REMATCH[1]}" "$((n + 1))"
	else
		printf '%s+%su1\n' "$v" "$tag"
	fi
}

# Our version of Debian's VER (source package PKG, release REL):
# VER+mountsafeN when VER already carries a stable-update suffix
# (+deb12uN); otherwise VER+deb12u0+mountsafeN, because a plain
# VER+mountsafeN would sort above Debian's first stable update VER+deb12u1
# ("m" > "d").  Checked with dpkg --compare-versions against VER, against
# the binary versions the release ships of PKG (binNMUs such as
# 1.47.0-2+b2), and against the next update.
local_version() {
	local v=$1 pkg=$2 rel=$3 tag ours next b rev
	tag=$(rel_base "$rel")
	rev=$(deb_rev "$pkg")
	if [[ $v =~ \+${tag}u[0-9]+$ ]]; then
		ours=$v+mountsafe$rev
	else
		ours=$v+${tag}u0+mountsafe$rev
	fi
	next=$(next_debian_update "$v" "$tag")
	dpkg --compare-versions "$ours" gt "$v" || die "$ours does not sort above $v"
	# shellcheck disable=SC2086 # a list
	while read -r b; do
		dpkg --compare-versions "$ours" gt "$b" || die "$ours does not sort above Debian's binary $pkg $b"
	done < <(archive_versions "$pkg" Packages ${MATRIX_SUITES[$tag]})
	dpkg --compare-versions "$ours" lt "$next" || die "$ours does not sort below $next"
	printf '%s\n' "$ours"
}

# Prepend our changelog entry.
changelog_entry() {
	local dir=$1 pkg=$2 ver=$3 base=$4 comp=$5 rel=$6 sb who when p subj n
	sb=$(rel_base "$rel")
	who="${DEBFULLNAME:-mountsafe build} <${DEBEMAIL:-build@mountsafe.invalid}>"
	# The date of the newest commit touching the series (reproducible), else now.
	when=$(git -C "$MS_ROOT" log -1 --format=%ct -- "patches/$comp/$sb" 2>/dev/null || true)
	when=$(LC_ALL=C date -u -R -d "@${when:-$(date +%s)}")
	n=$(series_list "$comp" "$sb" | wc -l)
	{
		printf '%s (%s) %s; urgency=medium\n\n' "$pkg" "$ver" "$rel"
		printf '  * mountsafe: rebuild of %s with %s patch(es) from\n' "$base" "$n"
		printf '    debian/patches/mountsafe/ so that the tools work when the kernel\n'
		printf '    blocks writes to mounted block devices (bdev_allow_write_mounted=0).\n'
		printf '    Built from mountsafe commit %s.\n' "$(source_commit)"
		while read -r p; do
			subj=$(patch_field "$(series_dir "$comp" "$sb")/$p" Subject)
			printf '    - %s\n' "$subj" | fold -s -w 74 | sed -e 's/ *$//' -e '2,$s/^/      /'
		done < <(series_list "$comp" "$sb")
		printf '\n -- %s  %s\n\n' "$who" "$when"
		cat "$dir/debian/changelog"
	} >"$dir/debian/changelog.new"
	mv "$dir/debian/changelog.new" "$dir/debian/changelog"
}

# ---- the clean chroot of a release ----

# chroot_make REL TARBALL DSC...: mmdebstrap's buildd variant of REL (and
# REL-updates, from the archive the machine's apt sources name) with
# fakeroot, ccache and the build dependencies of the DSCs.
chroot_make() {
	local rel=$1 out=$2 uri log
	shift 2
	uri=$(archive_uri)
	log=$LOGS/chroot-$rel.log
	say "$rel: making a clean build chroot (mmdebstrap buildd + build dependencies; log: ${log#"$MS_ROOT"/})"
	# shellcheck disable=SC2016 # "$1" is mmdebstrap's: the chroot
	mmdebstrap --mode=root --variant=buildd --include=fakeroot,ccache \
		--aptopt='Acquire::Retries "3"' \
		--customize-hook='mkdir -p "$1/tmp/dsc"' \
		--customize-hook="copy-in $* /tmp/dsc" \
		--customize-hook='chroot "$1" sh -c "DEBIAN_FRONTEND=noninteractive apt-get -q -y --no-install-recommends build-dep /tmp/dsc/*.dsc"' \
		--customize-hook='rm -rf "$1/tmp/dsc"' \
		"$rel" "$out.tmp.tar" "deb $uri $rel main" "deb $uri $rel-updates main" >"$log" 2>&1 ||
		{ tail -n 30 "$log" >&2; die "mmdebstrap $rel failed (log: $log)"; }
	mv "$out.tmp.tar" "$out"
}

# chroot_tarball REL DSC...: the cached chroot for these sources; prints its
# path.  Kept under what goes into it: the release, the sources' build
# dependencies, mmdebstrap's version and the recipe above.
chroot_tarball() {
	local rel=$1 key dir=$DEB_WORK/chroots tar d
	shift
	key=$( {
		echo "$rel"
		for d in "$@"; do sha256sum <"$d"; done
		dpkg-query -W -f='${Version}\n' mmdebstrap
		declare -f chroot_make
	} | sha256sum | cut -c1-16)
	tar=$dir/$rel-$key.tar
	if [ ! -f "$tar" ]; then
		mkdir -p "$dir"
		chroot_make "$rel" "$tar" "$@"
		# Keep the newest other chroot of this release only.
		beyond_newest 1 "$dir" -maxdepth 1 -name "$rel-*.tar" ! -name "${tar##*/}" | xargs -r rm -f
	fi
	printf '%s\n' "$tar"
}

# in_chroot ROOT DIR CMD...: run CMD in the chroot ROOT (as root: CMD drops
# to the build user itself) with its own mount and PID namespaces, /proc,
# a read-only /sys, its own /dev/pts and /dev/shm, DIR bound at the same
# path and the ccache directory at /ccache.
in_chroot() {
	local root=$1 dir=$2
	shift 2
	# shellcheck disable=SC2016 # expanded by the inner shell
	unshare --mount --pid --fork --kill-child -- /bin/bash -euc '
		root=$1 dir=$2 cc=$3
		shift 3
		mount --make-rprivate /
		mount -t proc proc "$root/proc"
		mount -t sysfs -o ro sys "$root/sys"
		mkdir -p "$root/dev/pts" "$root/dev/shm" "$root$dir" "$root/ccache"
		mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$root/dev/pts"
		if [ ! -L "$root/dev/ptmx" ]; then
			[ -e "$root/dev/ptmx" ] || : >"$root/dev/ptmx"
			mount --bind "$root/dev/pts/ptmx" "$root/dev/ptmx"
		fi
		mount -t tmpfs -o mode=1777 shm "$root/dev/shm"
		mount --bind "$dir" "$root$dir"
		mount --bind "$cc" "$root/ccache"
		exec chroot "$root" "$@"' in_chroot "$root" "$dir" "$DEB_CCACHE" "$@"
}

# The recipe of a build: what a package's stamp holds besides the sources.
recipe_hash() {
	declare -f changelog_entry build_source in_chroot chroot_make | sha256sum | cut -c1-16
}

# build_source REL PKG: one source package of one release.
build_source() {
	local rel=$1 pkg=$2 comp=$2 sb ver dsc ours dir out stamp t0 log secs tar root p o
	sb=$(rel_base "$rel")
	# e2fsprogs' "make check" runs in tests/run's stage "e2fsprogs check"
	# (the same sources and series, patched against stock), so the package
	# build does not run it again unless DEB_BUILD_OPTIONS is set.
	local DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS-}
	[ "$pkg" != e2fsprogs ] || [ -n "${DEB_BUILD_OPTIONS_SET:-}" ] || DEB_BUILD_OPTIONS=nocheck
	ver=$(release_version "$rel" "$pkg")
	ours=$(local_version "$ver" "$pkg" "$rel")
	tar=$(chroot_tarball "$rel" "${DSCS[@]}")
	out=$DEB_WORK/out-$rel-$pkg
	stamp="$ours $(series_hash "$comp" "$sb") opts=${DEB_BUILD_OPTIONS:-} recipe=$(recipe_hash) chroot=${tar##*/}"
	if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ]; then
		say "$rel: $pkg $ours: up to date ($out, built from the same series)"
		return 0
	fi
	dsc=$(fetch_dsc "$pkg" "$ver")
	dir=$DEB_WORK/$pkg-$ours
	root=$DEB_WORK/root-$pkg-$ours
	rm -rf "$dir" "$root" "$out"
	mkdir -p "$dir" "$LOGS"
	log=$LOGS/deb-$rel-$pkg.log
	say "$rel: $pkg $ver -> $ours ($(series_list "$comp" "$sb" | wc -l) mountsafe patches)"
	dpkg-source --no-check -x "$dsc" "$dir/src" >"$log" 2>&1 ||
		{ cat "$log" >&2; die "dpkg-source -x failed for $dsc"; }
	# Our series after Debian's.
	mkdir -p "$dir/src/debian/patches/mountsafe"
	while read -r p; do
		cp "$(series_dir "$comp" "$sb")/$p" "$dir/src/debian/patches/mountsafe/${p##*/}"
		echo "mountsafe/${p##*/}" >>"$dir/src/debian/patches/series"
	done < <(series_list "$comp" "$sb")
	changelog_entry "$dir/src" "$pkg" "$ours" "$ver" "$comp" "$rel"
	[ "$(dpkg-parsechangelog -l "$dir/src/debian/changelog" -S Version)" = "$ours" ] ||
		die "changelog entry not taken: $dir/src/debian/changelog"
	# Apply our patches now (dpkg-source would do it at build time) so a patch
	# that does not apply fails here, by name.
	dpkg-source --before-build "$dir/src" >>"$log" 2>&1 ||
		{ tail -n 30 "$log" >&2; die "$rel: $pkg: a mountsafe patch does not apply on $ver (log: $log)"; }
	# Packaging for what our series adds: Debian's rules end with
	# "dh_missing --fail-missing", so every new installed file must be
	# listed (units in lib/systemd/system are, as a directory).
	if [ -f "$dir/src/e2fsck/e2fsck_record.c" ]; then
		printf '%s\n' '[linux-any] sbin/e2fsck_record' \
			'[linux-any] usr/share/man/man8/e2fsck_record.8' >>"$dir/src/debian/e2fsprogs.install"
		# lintian (the packages stage compares ours with Debian's build):
		# the unit must run early, and there is no init script for it.
		o=$dir/src/debian/e2fsprogs.lintian-overrides
		printf '%s\n' '# e2fsck_record.service writes a read-only check of root to the superblock once' \
			'# root is read-write: early at boot, before local-fs.target, like systemd-fsck.' \
			'e2fsprogs: systemd-service-file-refers-to-unusual-wantedby-target local-fs.target [*lib/systemd/system/e2fsck_record.service]' >>"$o"
		grep -qx 'e2fsprogs: package-supports-alternative-init-but-no-init.d-script' "$o" ||
			printf '%s\n' '# Without systemd, e2fsck says to run e2fsck_record by hand once root is read-write.' \
				'e2fsprogs: package-supports-alternative-init-but-no-init.d-script [*lib/systemd/system/e2fsck_record.service]' >>"$o"
		# Going back to Debian's build, which has no such unit: dpkg
		# removes the unit file only after our postrm ran, and nothing
		# else removes its enable link and deb-systemd-helper's state
		# (piuparts found the link left dangling).
		o=$dir/src/debian/e2fsprogs.postrm
		[ -f "$o" ] || printf '%s\n' '#!/bin/sh' 'set -e' '' '#DEBHELPER#' '' 'exit 0' >"$o"
		grep -q '^#DEBHELPER#' "$o" || die "$rel: no #DEBHELPER# in debian/e2fsprogs.postrm"
		awk '/^#DEBHELPER#/ {
			print "# mountsafe: a build without e2fsck_record.service replaces this one"
			print "# (Debian'"'"'s own): the unit'"'"'s enable link and state go with it."
			print "if [ \"$1\" = upgrade ] && command -v deb-systemd-helper >/dev/null 2>&1; then"
			print "\tcase $2 in"
			print "\t*+mountsafe*) ;;"
			print "\t*) deb-systemd-helper purge e2fsck_record.service >/dev/null || true ;;"
			print "\tesac"
			print "fi"
			print ""
		} { print }' "$o" >"$o.new" && mv "$o.new" "$o"
		# Where debian/rules names the units dh_installsystemd enables
		# (Debian 13), ours must be among them, or it is never enabled.
		if grep -q '^override_dh_installsystemd:' "$dir/src/debian/rules"; then
			sed -i '/^[[:space:]]*dh_installsystemd .*e2scrub_all\.timer/s/$/ e2fsck_record.service/' "$dir/src/debian/rules"
			grep -q '^[[:space:]]*dh_installsystemd .*e2fsck_record\.service' "$dir/src/debian/rules" ||
				die "$rel: could not add e2fsck_record.service to dh_installsystemd in debian/rules"
		fi
	fi
	# A fresh chroot from the tarball; the sources and the build user's
	# home in the bound directory.
	mkdir -p "$root" "$dir/.home" "$DEB_CCACHE"
	tar -C "$root" -xf "$tar"
	chmod 755 "$DEB_WORK"
	chown -R nobody:nogroup "$dir" "$DEB_CCACHE"
	say "$rel: dpkg-buildpackage $pkg $ours in a clean $rel chroot (DEB_BUILD_OPTIONS='${DEB_BUILD_OPTIONS:-}'; log: ${log#"$MS_ROOT"/})"
	t0=$(date +%s)
	# shellcheck disable=SC2016 # expanded by the build user's shell
	in_chroot "$root" "$dir" setpriv --reuid=nobody --regid=nogroup --clear-groups --reset-env -- \
		env HOME="$dir/.home" SHELL=/bin/sh PATH=/usr/lib/ccache:/usr/sbin:/usr/bin:/sbin:/bin \
		CCACHE_DIR=/ccache CCACHE_BASEDIR="$DEB_WORK" CCACHE_NOHASHDIR=1 \
		DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-}" LC_ALL=C.UTF-8 \
		sh -c 'cd "$1" && exec dpkg-buildpackage -rfakeroot -b -us -uc -j"$2"' build "$dir/src" "$MS_JOBS" \
		>>"$log" 2>&1 ||
		{ tail -n 60 "$log" >&2; rm -rf "$root"; die "$rel: dpkg-buildpackage failed for $pkg (log: $log)"; }
	secs=$(($(date +%s) - t0))
	rm -rf "$root"
	mkdir -p "$out"
	# udebs are for the installer only.
	mv "$dir"/*.deb "$dir"/*.buildinfo "$out/"
	{
		printf '%s\t%s\t%s\t%ss\t%s\t%s\n' "$pkg" "$ver" "$ours" "$secs" \
			"DEB_BUILD_OPTIONS='${DEB_BUILD_OPTIONS:-}'" "chroot=${tar##*/}"
		series_list "$comp" "$sb" | sed 's/^/\tpatch\t/'
		printf '\tbuilt-from\t%s\n' "$(source_commit)"
	} >"$out/.info"
	echo "$stamp" >"$out/.stamp"
	printf '  %-8s %-10s %s built in %ss\n' "$rel" "$pkg" "$ours" "$secs"
}

# build_release REL SOURCE...: the sources of one release, one after the
# other (they share the chroot).
build_release() {
	local rel=$1 s
	shift
	DSCS=()
	for s in "${SOURCES[@]}"; do DSCS+=("$(fetch_dsc "$s" "$(release_version "$rel" "$s")")"); done
	for s in "$@"; do build_source "$rel" "$s"; done
}

# collect REL...: build/debs/<release>/ for every release built (or found up
# to date) in this run whose packages of both sources exist.  Another
# release's directory from an earlier run stays (the system stage checks
# that it matches the series); files of the old one-release layout go.
collect() {
	local rel s d sb
	mkdir -p "$DEB_OUT"
	find "$DEB_OUT" -maxdepth 1 -type f -delete
	for rel in "$@"; do
		for s in "${SOURCES[@]}"; do [ -f "$DEB_WORK/out-$rel-$s/.stamp" ] || continue 2; done
		sb=$(rel_base "$rel")
		d=$DEB_OUT/$rel
		rm -rf "$d.new" && mkdir -p "$d.new"
		for s in "${SOURCES[@]}"; do
			cp "$DEB_WORK/out-$rel-$s"/*.deb "$DEB_WORK/out-$rel-$s"/*.buildinfo "$d.new/"
		done
		{
			echo "# mountsafe packages for $rel, $(date -u '+%F %T') UTC"
			echo "# source	debian-version	our-version	build-time	options	chroot"
			for s in "${SOURCES[@]}"; do cat "$DEB_WORK/out-$rel-$s/.info"; done
			for s in "${SOURCES[@]}"; do echo "# series-hash $s $(series_hash "$s" "$sb")"; done
		} >"$d.new/BUILDINFO.txt"
		(cd "$d.new" && sha256sum -- *.deb *.buildinfo BUILDINFO.txt >SHA256SUMS)
		rm -rf "$d" && mv "$d.new" "$d"
		echo "packages in ${d#"$MS_ROOT"/}: $(find "$d" -name "*.deb" | wc -l) .deb, SHA256SUMS"
	done
}

# check_access: what a package build needs from the build user, without a
# build: read a file copied from this checkout into the work directory, and
# make HOME/.cache (dh_auto_clean does).  The negative control
# "build-anywhere" (tests/stages/controls) runs it from a clone in a mode-700
# directory.
check_access() {
	local d=$DEB_WORK/access-check
	rm -rf "$d" && mkdir -p "$d/src" "$d/.home"
	chmod 755 "$DEB_WORK"
	cp "$(series_dir util-linux "${MATRIX_BASELINES%%,*}")/series" "$d/src/series"
	[ "$(id -u)" -ne 0 ] || chown -R nobody:nogroup "$d"
	# shellcheck disable=SC2016 # expanded by the build user's shell
	(cd "$d/src" && setpriv --reuid=nobody --regid=nogroup --clear-groups --reset-env -- \
		env HOME="$d/.home" sh -c 'cat series >/dev/null && mkdir -p "$HOME/.cache"') ||
		die "the build user cannot use $d"
	rm -rf "$d"
	echo "the build user can read the sources and write HOME in $DEB_WORK"
}

main() {
	local srcs=() rels=("${RELEASES[@]}") s rel t0 pids=() rc=0 i
	case ${1:-} in
	-h | --help | help) usage; exit 0 ;;
	--check-access) check_access; exit 0 ;;
	--release) rel_base "${2:?}" >/dev/null; rels=("$2"); shift 2 ;;
	esac
	for s in "$@"; do
		case $s in util-linux | e2fsprogs) ;; *) usage >&2; exit 2 ;; esac
	done
	[ $# -gt 0 ] && srcs=("$@") || srcs=("${SOURCES[@]}")
	for rel in "${rels[@]}"; do rel_base "$rel" >/dev/null; done
	[ "$(id -u)" -eq 0 ] || die "the package build needs root (the chroots)"
	t0=$(date +%s)
	need_pkgs dpkg-dev mmdebstrap debian-archive-keyring curl
	apt_setup
	mkdir -p "$DEB_WORK" "$LOGS"
	# The releases build at the same time (two chroots).
	for rel in "${rels[@]}"; do
		build_release "$rel" "${srcs[@]}" >"$LOGS/deb-$rel.out" 2>&1 &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}" || { rc=1; say "${rels[$i]}: the package build failed"; }
		cat "$LOGS/deb-${rels[$i]}.out" >&2
	done
	[ $rc -eq 0 ] || die "package build failed (logs in ${LOGS#"$MS_ROOT"/})"
	collect "${rels[@]}"
	echo "deb done in $(($(date +%s) - t0))s"
}

main "$@"
