#!/bin/bash
# shellcheck source-path=SCRIPTDIR
# Debian 12 binary packages of util-linux and e2fsprogs with the mountsafe
# series, built with Debian's own packaging.
#
#   ./build.sh deb [SOURCE...]   (or scripts/deb.sh): util-linux e2fsprogs
#
# For each source package: the newest Debian 12 version (bookworm,
# bookworm-updates) is unpacked with dpkg-source into build/deb/, our
# patches/<component>/deb12/series is appended to debian/patches/series
# (files in debian/patches/mountsafe/, DEP-3 headers as they are), a
# debian/changelog entry gives the version a +mountsafeN suffix, and
# dpkg-buildpackage -b builds it as an unprivileged user (like a buildd).
# Debian's build-time test suites run unless DEB_BUILD_OPTIONS has nocheck;
# e2fsprogs' runs only when DEB_BUILD_OPTIONS is set (tests/run's stage
# "e2fsprogs check" runs it on the same sources and series).
# Result: build/debs/*.deb, SHA256SUMS and BUILDINFO.txt (versions, patches,
# timings).  Build logs: build/logs/deb-<source>.log.
#
# Environment: MOUNTSAFE_DEB_REV=N (default 1) for +mountsafeN;
# DEBFULLNAME / DEBEMAIL for the changelog entry.
set -euo pipefail
[ -z "${DEB_BUILD_OPTIONS+x}" ] || DEB_BUILD_OPTIONS_SET=1

# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
# shellcheck source=patchq.sh
. "$MS_ROOT/scripts/patchq.sh"

# The build happens outside the checkout, as the unprivileged build user:
# a checkout may live where that user cannot go (root's home is mode 700).
# The directory also keeps each source's last packages (out-<source>/,
# stamped with what they were built from), which a new clone of the same
# series reuses instead of building them again.
if [ "$(id -u)" -eq 0 ]; then
	DEB_WORK=${MOUNTSAFE_DEB_WORK:-/var/cache/mountsafe/deb}
else
	DEB_WORK=${MOUNTSAFE_DEB_WORK:-$MS_CACHE/deb}
fi
DEB_OUT=$MS_BUILD/debs
LOGS=$MS_BUILD/logs
REV=${MOUNTSAFE_DEB_REV:-1}
SUITES="bookworm bookworm-updates"

usage() { awk 'NR > 1 && !/^#/ {exit} NR > 1 && !/shellcheck/ {sub(/^# ?/, ""); print}' "$0"; }

# Newest source version of $1 in bookworm / bookworm-updates (as build.sh
# resolves the deb12 baseline).
deb12_version() {
	# shellcheck disable=SC2086
	newest_src "$1" $SUITES
}

# The version Debian's next update of VER would get: +deb12uN -> +deb12u(N+1),
# otherwise the first stable update +deb12u1.
next_debian_update() {
	local v=$1 n
	if [[ $v =~ ^(.*\+deb12u)([0-9]+)$ ]]; then
		n=${BASH_REMATCH[2]}
		printf '%s%s\n' "${BASH_REMATCH[1]}" "$((n + 1))"
	else
		printf '%s+deb12u1\n' "$v"
	fi
}

# Our version of Debian's VER (source package PKG): VER+mountsafeN when VER
# already carries a stable-update suffix (+deb12uN); otherwise
# VER+deb12u0+mountsafeN, because a plain VER+mountsafeN would sort above
# Debian's first stable update VER+deb12u1 ("m" > "d").  Checked with
# dpkg --compare-versions against VER, against the binary versions Debian 12
# ships of PKG (binNMUs such as 1.47.0-2+b2), and against the next update.
local_version() {
	local v=$1 pkg=$2 ours next b
	if [[ $v =~ \+deb12u[0-9]+$ ]]; then
		ours=$v+mountsafe$REV
	else
		ours=$v+deb12u0+mountsafe$REV
	fi
	next=$(next_debian_update "$v")
	dpkg --compare-versions "$ours" gt "$v" || die "$ours does not sort above $v"
	# shellcheck disable=SC2086
	while read -r b; do
		dpkg --compare-versions "$ours" gt "$b" || die "$ours does not sort above Debian's binary $pkg $b"
	done < <(archive_versions "$pkg" Packages $SUITES)
	dpkg --compare-versions "$ours" lt "$next" || die "$ours does not sort below $next"
	printf '%s\n' "$ours"
}

# Prepend our changelog entry.
changelog_entry() {
	local dir=$1 pkg=$2 ver=$3 base=$4 comp=$5 who when p subj n
	who="${DEBFULLNAME:-mountsafe build} <${DEBEMAIL:-build@mountsafe.invalid}>"
	# The date of the newest commit touching the series (reproducible), else now.
	when=$(git -C "$MS_ROOT" log -1 --format=%ct -- "patches/$comp/deb12" 2>/dev/null || true)
	when=$(LC_ALL=C date -u -R -d "@${when:-$(date +%s)}")
	n=$(series_list "$comp" deb12 | wc -l)
	{
		printf '%s (%s) bookworm; urgency=medium\n\n' "$pkg" "$ver"
		printf '  * mountsafe: rebuild of %s with %s patch(es) from\n' "$base" "$n"
		printf '    debian/patches/mountsafe/ so that the tools work when the kernel\n'
		printf '    blocks writes to mounted block devices (bdev_allow_write_mounted=0).\n'
		while read -r p; do
			subj=$(patch_field "$(series_dir "$comp" deb12)/$p" Subject)
			printf '    - %s\n' "$subj" | fold -s -w 74 | sed -e 's/ *$//' -e '2,$s/^/      /'
		done < <(series_list "$comp" deb12)
		printf '\n -- %s  %s\n\n' "$who" "$when"
		cat "$dir/debian/changelog"
	} >"$dir/debian/changelog.new"
	mv "$dir/debian/changelog.new" "$dir/debian/changelog"
}

# Run a command as an unprivileged user when we are root (Debian's test
# suites then behave as on a buildd and leave the host's devices alone).
# Compilers go through ccache; its cache must be writable by that user, so it
# lives outside root's home: $MS_DEB_CCACHE (default /var/cache/mountsafe/ccache-deb).
DEB_CCACHE=${MS_DEB_CCACHE:-/var/cache/mountsafe/ccache-deb}
as_builder() {
	local path=/usr/sbin:/usr/bin:/sbin:/bin
	[ ! -d /usr/lib/ccache ] || path=/usr/lib/ccache:$path
	if [ "$(id -u)" -eq 0 ]; then
		setpriv --reuid=nobody --regid=nogroup --clear-groups --reset-env -- \
			env HOME="$DEB_WORK/.home" SHELL=/bin/sh PATH="$path" \
			CCACHE_DIR="$DEB_CCACHE" CCACHE_BASEDIR="$DEB_WORK" CCACHE_NOHASHDIR=1 \
			DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-}" LC_ALL=C.UTF-8 "$@"
	else
		env PATH="$path:$PATH" CCACHE_DIR="$DEB_CCACHE" CCACHE_BASEDIR="$DEB_WORK" \
			DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-}" \
			CCACHE_NOHASHDIR=1 "$@"
	fi
}

build_source() {
	local pkg=$1 comp=$1 ver dsc ours dir out stamp t0 p log secs
	# e2fsprogs' "make check" runs in tests/run's stage "e2fsprogs check"
	# (the same sources and series, patched against stock), so the package
	# build does not run it again unless DEB_BUILD_OPTIONS is set.
	local DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS-}
	[ "$pkg" != e2fsprogs ] || [ -n "${DEB_BUILD_OPTIONS_SET:-}" ] || DEB_BUILD_OPTIONS=nocheck
	ver=$(deb12_version "$pkg")
	ours=$(local_version "$ver" "$pkg")
	out=$DEB_WORK/out-$pkg
	stamp="$ours $(series_hash "$comp" deb12) opts=${DEB_BUILD_OPTIONS:-} deb.sh=$(sha256sum <"$0" | cut -c1-16)"
	if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ]; then
		say "$pkg $ours: up to date ($out, built from the same series)"
		return 0
	fi
	dsc=$(fetch_dsc "$pkg" "$ver")
	dir=$DEB_WORK/$pkg-$ours/src
	rm -rf "$DEB_WORK/$pkg-$ours" "$out"
	mkdir -p "$DEB_WORK/$pkg-$ours" "$LOGS"
	log=$LOGS/deb-$pkg.log
	say "$pkg $ver -> $ours ($(series_list "$comp" deb12 | wc -l) mountsafe patches)"
	dpkg-source --no-check -x "$dsc" "$dir" >"$log" 2>&1 ||
		{ cat "$log" >&2; die "dpkg-source -x failed for $dsc"; }
	# Our series after Debian's.
	mkdir -p "$dir/debian/patches/mountsafe"
	while read -r p; do
		cp "$(series_dir "$comp" deb12)/$p" "$dir/debian/patches/mountsafe/${p##*/}"
		echo "mountsafe/${p##*/}" >>"$dir/debian/patches/series"
	done < <(series_list "$comp" deb12)
	changelog_entry "$dir" "$pkg" "$ours" "$ver" "$comp"
	[ "$(dpkg-parsechangelog -l "$dir/debian/changelog" -S Version)" = "$ours" ] ||
		die "changelog entry not taken: $dir/debian/changelog"
	# Apply our patches now (dpkg-source would do it at build time) so a patch
	# that does not apply fails here, by name.
	dpkg-source --before-build "$dir" >>"$log" 2>&1 ||
		{ tail -n 30 "$log" >&2; die "$pkg: a mountsafe patch does not apply on $ver (log: $log)"; }
	# Packaging for what our series adds: Debian's rules end with
	# "dh_missing --fail-missing", so every new installed file must be
	# listed (units in lib/systemd/system are, as a directory).
	if [ -f "$dir/e2fsck/e2fsck_record.c" ]; then
		printf '%s\n' '[linux-any] sbin/e2fsck_record' \
			'[linux-any] usr/share/man/man8/e2fsck_record.8' >>"$dir/debian/e2fsprogs.install"
	fi
	# Build dependencies, from the machine's own (Debian 12) apt sources.
	if ! (cd "$dir" && dpkg-checkbuilddeps) >/dev/null 2>&1; then
		[ "$(id -u)" -eq 0 ] || die "need root to install the build dependencies of $pkg"
		say "installing build dependencies of $pkg"
		DEBIAN_FRONTEND=noninteractive apt-get -q -o Acquire::Retries=3 update >/dev/null ||
			die "apt-get update failed"
		DEBIAN_FRONTEND=noninteractive apt-get -q -y -o Acquire::Retries=3 \
			--no-install-recommends build-dep "$dir" >>"$log" 2>&1 ||
			{ tail -n 30 "$log" >&2; die "apt-get build-dep failed for $pkg"; }
	fi
	mkdir -p "$DEB_WORK/.home" "$DEB_CCACHE"
	chmod 755 "$DEB_WORK"
	[ "$(id -u)" -ne 0 ] ||
		chown -R nobody:nogroup "$DEB_WORK/.home" "$DEB_WORK/$pkg-$ours" "$DEB_CCACHE"
	say "dpkg-buildpackage $pkg $ours (DEB_BUILD_OPTIONS='${DEB_BUILD_OPTIONS:-}'; log: ${log#"$MS_ROOT"/})"
	t0=$(date +%s)
	(cd "$dir" && as_builder dpkg-buildpackage -rfakeroot -b -us -uc -j"$MS_JOBS") >>"$log" 2>&1 ||
		{ tail -n 60 "$log" >&2; die "dpkg-buildpackage failed for $pkg (log: $log)"; }
	secs=$(($(date +%s) - t0))
	mkdir -p "$out"
	# udebs are for the installer only.
	mv "$DEB_WORK/$pkg-$ours"/*.deb "$DEB_WORK/$pkg-$ours"/*.buildinfo "$out/"
	{
		printf '%s\t%s\t%s\t%ss\t%s\n' "$pkg" "$ver" "$ours" "$secs" \
			"DEB_BUILD_OPTIONS='${DEB_BUILD_OPTIONS:-}'"
		series_list "$comp" deb12 | sed 's/^/\tpatch\t/'
	} >"$out/.info"
	echo "$stamp" >"$out/.stamp"
	printf '  %-10s %s built in %ss\n' "$pkg" "$ours" "$secs"
}

collect() {
	local tmp=$DEB_OUT.new s
	rm -rf "$tmp" && mkdir -p "$tmp"
	for s in "$@"; do
		cp "$DEB_WORK/out-$s"/*.deb "$DEB_WORK/out-$s"/*.buildinfo "$tmp/"
	done
	{
		echo "# mountsafe Debian 12 packages, $(date -u '+%F %T') UTC"
		echo "# source	debian-version	our-version	build-time	options"
		for s in "$@"; do cat "$DEB_WORK/out-$s/.info"; done
		echo "# series-hash util-linux $(series_hash util-linux deb12)"
		echo "# series-hash e2fsprogs $(series_hash e2fsprogs deb12)"
	} >"$tmp/BUILDINFO.txt"
	(cd "$tmp" && sha256sum -- *.deb *.buildinfo BUILDINFO.txt >SHA256SUMS)
	rm -rf "$DEB_OUT"
	mv "$tmp" "$DEB_OUT"
	echo "packages in ${DEB_OUT#"$MS_ROOT"/}: $(find "$DEB_OUT" -name "*.deb" | wc -l) .deb, SHA256SUMS"
}

# check_access: what a package build needs from the build user, without a
# build: read a file copied from this checkout into the work directory, and
# make HOME/.cache (dh_auto_clean does).  The negative control
# "build-anywhere" (tests/stages/controls) runs it from a clone in a mode-700
# directory.
check_access() {
	local d=$DEB_WORK/access-check
	rm -rf "$d" && mkdir -p "$d/src" "$DEB_WORK/.home"
	chmod 755 "$DEB_WORK"
	cp "$(series_dir util-linux deb12)/series" "$d/src/series"
	[ "$(id -u)" -ne 0 ] || chown -R nobody:nogroup "$d" "$DEB_WORK/.home"
	# shellcheck disable=SC2016 # expanded by the build user's shell
	(cd "$d/src" && as_builder sh -c 'cat series >/dev/null && mkdir -p "$HOME/.cache"') ||
		die "the build user cannot use $d"
	rm -rf "$d"
	echo "the build user can read the sources and write HOME in $DEB_WORK"
}

main() {
	local srcs=() s t0
	case ${1:-} in
	-h | --help | help) usage; exit 0 ;;
	--check-access) check_access; exit 0 ;;
	esac
	for s in "$@"; do
		case $s in util-linux | e2fsprogs) ;; *) usage >&2; exit 2 ;; esac
	done
	[ $# -gt 0 ] && srcs=("$@") || srcs=(util-linux e2fsprogs)
	t0=$(date +%s)
	need_pkgs dpkg-dev build-essential fakeroot debian-archive-keyring curl ccache
	apt_setup
	mkdir -p "$DEB_WORK"
	for s in "${srcs[@]}"; do build_source "$s"; done
	# The output folder always holds both sources' packages (whatever was built).
	local all=()
	for s in util-linux e2fsprogs; do [ -f "$DEB_WORK/out-$s/.stamp" ] && all+=("$s"); done
	collect "${all[@]}"
	echo "deb done in $(($(date +%s) - t0))s"
}

main "$@"
