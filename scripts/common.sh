# shellcheck shell=bash
# Shared helpers for build.sh and tests/run: paths, logging, the matrix
# (matrix.conf), a private apt configuration that reuses the archive the
# machine's own apt sources name.

MS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MS_CACHE=${MOUNTSAFE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mountsafe}
MS_BUILD=${MOUNTSAFE_BUILD:-$MS_ROOT/build}
MS_JOBS=${MOUNTSAFE_JOBS:-$(nproc)}
export MS_ROOT MS_CACHE MS_BUILD MS_JOBS

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# ---- the matrix: what is built and tested (matrix.conf says what each
# record means) ----
MS_MATRIX=$MS_ROOT/matrix.conf
# matrix_load: matrix.conf into these (lists comma-separated, in the file's
# order):
#   MATRIX_BASELINES, MATRIX_TOOLSETS (stock-B,patched-B for each baseline B),
#   MATRIX_RELEASES, MATRIX_KERNELS, MATRIX_SWITCHES, MATRIX_HARNESS,
#   MS_SUITE_TOOLSETS_DEFAULT, MATRIX_SUITE_KERNELS (the util-linux suite's
#   default cells), MATRIX_SOURCE[B] (debian|upstream), MATRIX_SUITES[B]
#   (blank-separated), MATRIX_REL_BASE[R], MATRIX_KERNEL_SPEC[K]
#   ("GLOB SUITE..."), MATRIX_ARCHIVE (every suite named, blank-separated,
#   with repeats).
# (MS_SUITE_TOOLSETS_DEFAULT keeps its name: build.sh's cache key includes
# the build function that reads it.)
# shellcheck disable=SC2034 # used by the scripts that source this one
matrix_load() {
	local f n=0 x min
	MATRIX_BASELINES='' MATRIX_TOOLSETS='' MATRIX_RELEASES='' MATRIX_KERNELS=''
	MATRIX_SWITCHES='' MATRIX_HARNESS='' MS_SUITE_TOOLSETS_DEFAULT='' MATRIX_SUITE_KERNELS=''
	MATRIX_ARCHIVE=''
	declare -gA MATRIX_SOURCE=() MATRIX_SUITES=() MATRIX_REL_BASE=() MATRIX_KERNEL_SPEC=()
	[ -f "$MS_MATRIX" ] || die "no $MS_MATRIX"
	while read -r -a f; do
		n=$((n + 1))
		[ ${#f[@]} -gt 0 ] || continue
		case ${f[0]} in
		baseline | kernel) min=4 ;;
		release | suite) min=3 ;;
		switch | harness) min=2 ;;
		*) die "matrix.conf:$n: unknown record ${f[0]}" ;;
		esac
		[ ${#f[@]} -ge $min ] || die "matrix.conf:$n: ${f[0]} needs $((min - 1)) fields or more"
		case ${f[0]} in
		baseline)
			case ${f[2]} in debian | upstream) ;; *) die "matrix.conf:$n: source ${f[2]}: debian or upstream" ;; esac
			MATRIX_BASELINES=${MATRIX_BASELINES:+$MATRIX_BASELINES,}${f[1]}
			MATRIX_TOOLSETS=${MATRIX_TOOLSETS:+$MATRIX_TOOLSETS,}stock-${f[1]},patched-${f[1]}
			MATRIX_SOURCE[${f[1]}]=${f[2]} MATRIX_SUITES[${f[1]}]=${f[*]:3}
			MATRIX_ARCHIVE+=" ${f[*]:3}"
			;;
		release)
			MATRIX_RELEASES=${MATRIX_RELEASES:+$MATRIX_RELEASES,}${f[1]}
			MATRIX_REL_BASE[${f[1]}]=${f[2]}
			;;
		kernel)
			MATRIX_KERNELS=${MATRIX_KERNELS:+$MATRIX_KERNELS,}${f[1]}
			MATRIX_KERNEL_SPEC[${f[1]}]=${f[*]:2}
			MATRIX_ARCHIVE+=" ${f[*]:3}"
			;;
		switch) MATRIX_SWITCHES=${MATRIX_SWITCHES:+$MATRIX_SWITCHES,}${f[1]} ;;
		harness) MATRIX_HARNESS=${f[1]} ;;
		suite)
			x=${f[*]:2}
			case ${f[1]} in
			toolsets) MS_SUITE_TOOLSETS_DEFAULT=${x// /,} ;;
			kernels) MATRIX_SUITE_KERNELS=${x// /,} ;;
			*) die "matrix.conf:$n: suite ${f[1]}: toolsets or kernels" ;;
			esac
			;;
		esac
	done < <(sed 's/#.*//' "$MS_MATRIX")
	# Every name used is one defined above.
	for x in "${MATRIX_REL_BASE[@]}"; do matrix_has "$x" "$MATRIX_BASELINES" || die "matrix.conf: no baseline $x"; done
	for x in $MATRIX_HARNESS ${MS_SUITE_TOOLSETS_DEFAULT//,/ }; do
		matrix_has "$x" "$MATRIX_TOOLSETS" || die "matrix.conf: no tool set $x"
	done
	for x in ${MATRIX_SUITE_KERNELS//,/ }; do matrix_has "$x" "$MATRIX_KERNELS" || die "matrix.conf: no kernel $x"; done
	if [ -z "$MATRIX_HARNESS" ] || [ -z "$MATRIX_KERNELS" ] || [ -z "$MATRIX_SWITCHES" ]; then
		die "matrix.conf: needs a harness, a kernel and a switch"
	fi
}
# matrix_has ITEM LIST: ITEM is in the comma-separated LIST.
matrix_has() { [[ ,$2, == *",$1,"* ]]; }
# matrix_patched LIST: the patched tool sets of a comma-separated LIST.
matrix_patched() { tr ',' '\n' <<<"$1" | grep '^patched-' | paste -sd, || true; }
# matrix_suites: every archive suite the matrix names, one a line, grouped
# by release (bookworm, bookworm-updates, ...) in the order the releases
# are first named.
matrix_suites() {
	local s c order=() seen=' '
	local -A group=()
	for s in $MATRIX_ARCHIVE; do
		case $seen in *" $s "*) continue ;; esac
		seen+="$s "
		c=${s%%-*}
		[ -n "${group[$c]+x}" ] || order+=("$c")
		group[$c]+=" $s"
	done
	# shellcheck disable=SC2086 # a list
	for c in "${order[@]}"; do printf '%s\n' ${group[$c]}; done
}
matrix_load

# fault_point NAME: true when this run was asked to break NAME
# (MS_FAULT=NAME[,NAME...]).  The negative controls' one way into a
# production path, for a fault no input can produce; the points are listed
# in docs/testing.md.
fault_point() { case ,${MS_FAULT:-}, in *,"$1",*) return 0 ;; esac; return 1; }

# toolset_dirs TOOLSET COMPONENT: a built tool set's component, from
# build.sh's build/toolsets.tsv: its staging root, object directory, the
# source as the object directory's Makefiles name it (relative to it) and
# the source directory, tab-separated.
toolset_dirs() {
	local row
	row=$(awk -F'\t' -v ts="$1" -v c="$2" '$1 == ts && $2 == c { print $3 "\t" $4 "\t" $5 "\t" $6; exit }' \
		"$MS_BUILD/toolsets.tsv" 2>/dev/null || true)
	[ -n "$row" ] || die "tool set $1 ($2) is not built: run ./build.sh first"
	printf '%s\n' "$row"
}

# beyond_newest N DIR FIND-TEST...: what find DIR FIND-TEST... names, less
# the N newest (by modification time), one path a line; the caches keep
# their newest entries and remove these.
beyond_newest() {
	local n=$1
	shift
	find "$@" -printf '%T@ %p\n' | sort -rn | tail -n +$((n + 1)) | cut -d' ' -f2-
}

# need_pkgs PKG...: apt-get install whatever is not installed yet.
need_pkgs() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	say "installing with apt: ${missing[*]}"
	[ "$(id -u)" -eq 0 ] || die "need root to install: ${missing[*]}"
	# One apt-get at a time on this machine: stages that overlap (tests/run)
	# and runs started together would otherwise collide on dpkg's lock.
	# (apt-get does not inherit the lock's descriptor: a service a package
	# starts would hold it.)
	{
		flock 9
		# -o Acquire::Retries: the archive sometimes drops a connection.
		DEBIAN_FRONTEND=noninteractive apt-get -q -o Acquire::Retries=3 update >/dev/null 9>&- ||
			die "apt-get update failed"
		DEBIAN_FRONTEND=noninteractive apt-get -q -y -o Acquire::Retries=3 \
			install --no-install-recommends "${missing[@]}" >&2 9>&- ||
			die "apt-get install failed: ${missing[*]}"
	} 9>/run/lock/mountsafe-apt.lock
}

# The archive URI the machine's apt sources use for Debian itself (never
# written into the repository: read at run time).
archive_uri() {
	local uri
	# shellcheck disable=SC2016 # $(REPO_URI) is apt's template, not shell
	uri=$(apt-get indextargets --format '$(REPO_URI)' 'Identifier: Packages' 2>/dev/null |
		grep -v -- '-security' | grep -m1 '/debian/\?$' || true)
	# shellcheck disable=SC2016
	[ -n "$uri" ] || uri=$(apt-get indextargets --format '$(REPO_URI)' 2>/dev/null |
		grep -v -- '-security' | head -n1)
	[ -n "$uri" ] || die "cannot find a Debian archive in the machine's apt sources"
	printf '%s\n' "${uri%/}"
}

# rel_base RELEASE: the baseline of a Debian release we ship packages for:
# its series (patches/<c>/<base>) and stable-update tag (+<base>uN).
rel_base() {
	[ -n "${MATRIX_REL_BASE[$1]:-}" ] || die "unknown release $1 (${MATRIX_RELEASES//,/ or })"
	echo "${MATRIX_REL_BASE[$1]}"
}
# rel_number RELEASE: 12 for bookworm, 13 for trixie (its baseline's digits).
rel_number() { rel_base "$1" | tr -dc 0-9; }

MS_APT=$MS_CACHE/apt
# Private apt configuration: every suite the matrix names (matrix_suites:
# the baselines' and the kernels'; the emulator's trixie is deb13's);
# binaries and sources. Index refresh at most once every 12
# hours.  Several runs may start at once (the negative controls do): the
# check and the refresh hold a lock, and each run writes its own new list.
apt_setup() {
	local uri kr=/usr/share/keyrings/debian-archive-keyring.gpg new s suites
	mkdir -p "$MS_APT/lists/partial" "$MS_APT/archives/partial" "$MS_APT/etc"
	uri=$(archive_uri)
	new=$(mktemp "$MS_APT/etc/sources.list.XXXXXX")
	suites=$(matrix_suites)
	for s in $suites; do
		echo "deb [signed-by=$kr] $uri $s main"
		echo "deb-src [signed-by=$kr] $uri $s main"
	done >"$new"
	chmod 644 "$new"
	(
		flock 9
		if ! cmp -s "$new" "$MS_APT/etc/sources.list" ||
			[ -z "$(find "$MS_APT/updated" -mmin -720 2>/dev/null)" ]; then
			mv "$new" "$MS_APT/etc/sources.list"
			say "refreshing private apt indexes ($(paste -sd, <<<"$suites" | sed 's/,/, /g'))"
			papt_get -q update >/dev/null 2>"$MS_APT/update.log" ||
				{ cat "$MS_APT/update.log" >&2; die "apt-get update (private) failed"; }
			touch "$MS_APT/updated"
		fi
	) 9>"$MS_APT/lock"
	rm -f "$new"
}
# apt's binary caches (pkgcache.bin, srcpkgcache.bin) are kept in $MS_APT
# even where the machine's apt configuration turns them off (images made
# for containers do: docker-clean): without them every apt-cache call
# parses the six suites' indexes again, 5 s a call, and a run makes dozens
# (kernel, QEMU and source versions, in every stage and control); with
# them 0.4 s.  apt rebuilds them when the indexes change, and writes them
# to a new file that it renames, so runs at once do not see half a cache.
_papt_opts() {
	printf '%s\n' -o "Dir::Etc::SourceList=$MS_APT/etc/sources.list" \
		-o Dir::Etc::SourceParts=/dev/null \
		-o "Dir::State::Lists=$MS_APT/lists" \
		-o "Dir::Cache=$MS_APT" -o "Dir::Cache::archives=$MS_APT/archives" \
		-o Dir::Cache::pkgcache=pkgcache.bin -o Dir::Cache::srcpkgcache=srcpkgcache.bin \
		-o Dir::State::status=/dev/null -o APT::Sandbox::User=root \
		-o Acquire::Retries=3 -o Debug::NoLocking=1
}
papt_get() { local o; mapfile -t o < <(_papt_opts); apt-get "${o[@]}" "$@"; }
papt_cache() { local o; mapfile -t o < <(_papt_opts); apt-cache "${o[@]}" "$@"; }

# archive_versions PKG Sources|Packages SUITE...: the versions of PKG (source
# or binary) that the private apt configuration knows in the given suites.
archive_versions() {
	local pkg=$1 kind=$2 v where s
	shift 2
	while IFS='|' read -r _ v where; do
		[ "${where##* }" = "$kind" ] || continue
		s=$(awk '{print $2}' <<<"$where")
		case " $* " in *" ${s%%/*} "*) printf '%s\n' "${v// /}" ;; esac
	done < <(papt_cache madison "$pkg")
}

# newest_src PKG SUITE...: the newest source version of PKG in the suites.
newest_src() {
	local pkg=$1 v best=''
	shift
	while read -r v; do
		if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then best=$v; fi
	done < <(archive_versions "$pkg" Sources "$@")
	[ -n "$best" ] || die "no source package $pkg in $*"
	printf '%s\n' "$best"
}

# fetch_verified URI FILE SHA256: download one file apt told us about and
# verify it; cached.
fetch_verified() {
	# (A part file of this process's own: ./build.sh fetches a source
	# for the tool sets and for the packages at the same time.)
	local uri=$1 out=$2 sum=$3 part=$2.part.$BASHPID
	if [ -f "$out" ] && echo "$sum  $out" | sha256sum -c --quiet - 2>/dev/null; then
		return 0
	fi
	curl -fsSL --retry 3 -o "$part" "$uri" || { rm -f "$part"; die "download failed: $uri"; }
	echo "$sum  $part" | sha256sum -c --quiet - || { rm -f "$part"; die "checksum mismatch: $uri"; }
	mv "$part" "$out"
}

# Download (or reuse from $MS_CACHE/src) the files of a source package;
# prints the .dsc path.
fetch_dsc() {
	local pkg=$1 ver=$2 dl=$MS_CACHE/src line uri file sum
	mkdir -p "$dl"
	while read -r line; do
		uri=$(cut -d"'" -f2 <<<"$line")
		file=$(awk '{print $2}' <<<"$line")
		sum=$(awk '{print $4}' <<<"$line")
		case $file in
		*.asc)
			# The upstream tarball's signature: dpkg-source --no-check
			# does not read it, and mirrors do not always carry it.
			(fetch_verified "$uri" "$dl/$file" "${sum#SHA256:}") 2>/dev/null ||
				say "note: $file not on the mirror (not needed)" ;;
		*) fetch_verified "$uri" "$dl/$file" "${sum#SHA256:}" ;;
		esac
	done < <(papt_get --print-uris -qq source "$pkg=$ver" | grep "^'")
	[ -f "$dl/${pkg}_${ver#*:}.dsc" ] || die "no .dsc for $pkg $ver"
	printf '%s\n' "$dl/${pkg}_${ver#*:}.dsc"
}

# configure_args COMPONENT: the configure options of every build of COMPONENT
# (the tool sets of build.sh, the prefix builds of scripts/series-prefixes.sh).
configure_args() {
	local comp=$1
	case $comp in
	util-linux)
		# Everything but the login/terminal tools and optional libraries;
		# static libraries, so each tool set runs without LD_LIBRARY_PATH.
		echo --prefix=/usr --disable-nls --disable-shared \
			--disable-bash-completion --disable-makeinstall-chown \
			--disable-makeinstall-setuid --disable-asciidoc --disable-poman \
			--disable-gtk-doc --disable-pylibmount --disable-liblastlog2 \
			--disable-login --disable-su --disable-runuser --disable-sulogin \
			--disable-chfn-chsh --disable-newgrp --disable-vipw --disable-nologin \
			--disable-wall --disable-write --disable-mesg --disable-agetty \
			--without-python --without-systemd --without-udev --without-selinux \
			--without-audit --without-ncursesw --without-ncurses --without-tinfo \
			--without-readline --without-cap-ng --without-libmagic --without-econf \
			--without-user --without-btrfs --without-cryptsetup --without-smack \
			--without-utempter --without-libz
		;;
	e2fsprogs)
		# fuse2fs too (libfuse 2 on every baseline): the audit covers it.
		echo --prefix=/usr --disable-nls --enable-fuse2fs --disable-e2initrd-helper \
			--without-libarchive --with-udev-rules-dir=no --with-crond-dir=no \
			--with-systemd-unit-dir=no --disable-uuidd \
			--disable-fsck --disable-libblkid --disable-libuuid
		;;
	esac
}
