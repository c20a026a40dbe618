# shellcheck shell=bash
# What a boot is made of, fetched or built once and cached (part of
# tests/lib/vm.sh): kernels and their module trees, debootstrapped roots,
# initramfs images, the tool sets' and the host's payloads.

declare -A KDIR KREL

# ---- the cache of every artifact: cache_get ----
# The one eviction rule (docs/architecture.md): entries of a kind not used
# for this many hours are deleted when a new entry of that kind is made.
# Not days: a busy day makes gigabytes of matrix initramfs images
# (docs/performance.md, "Caches").
CACHE_UNUSED_HOURS=10

# cache_get KIND KEY PRODUCER [ARG...]: print $MS_CACHE/KIND/KEY, an entry
# (a file or a directory) that is complete.  When it is missing,
# "PRODUCER TMP ARG..." makes it at TMP beside it (scratch in TMP.d, a log
# in TMP.log, kept as KEY.log), under the lock KEY.lock: runs that start at
# once take turns and the one that waited finds it made.  TMP is renamed
# into place, so an interrupted producer never leaves a half-made entry.
# Every call touches the entry and its log (the eviction rule reads them).
cache_get() {
	local kind=$1 key=$2 producer=$3 entry=$MS_CACHE/$1/$2
	shift 3
	if [ ! -e "$entry" ]; then
		mkdir -p "$MS_CACHE/$kind"
		# (Not under || or if: those would turn set -e off in the producer.)
		(
			set -e
			flock 9
			[ ! -e "$entry" ] || exit 0
			tmp=$entry.tmp.$BASHPID
			trap 'rm -rf --one-file-system "$tmp" "$tmp.d"' EXIT
			"$producer" "$tmp" "$@" >&2
			[ -e "$tmp" ] || die "$producer made no $kind/$key"
			# (Fails only when another producer won: an eviction had
			# deleted the lock it waited on.)
			mv -T "$tmp" "$entry" 2>/dev/null || [ -e "$entry" ]
			[ ! -e "$tmp.log" ] || mv -f "$tmp.log" "$entry.log"
			cache_evict "$kind"
		) 9>>"$entry.lock"
		[ -e "$entry" ] || exit 1
	fi
	touch -c "$entry" "$entry.log"
	printf '%s\n' "$entry"
}

# cache_evict KIND: delete the entries of KIND, their logs, leftovers and
# locks, not used for CACHE_UNUSED_HOURS.  Each is renamed away first, so
# that no run finds one half deleted.
cache_evict() {
	local dir=$MS_CACHE/$1 x t
	while IFS= read -r -d '' x; do
		case ${x##*/} in
		.evicted.*) t=$x ;; # (what an earlier eviction could not delete)
		*)
			t=$dir/.evicted.$BASHPID.${x##*/}
			mv -T "$x" "$t" 2>/dev/null || continue
			;;
		esac
		# (--one-file-system: an interrupted debootstrap may have left mounts.)
		rm -rf --one-file-system "$t" 2>/dev/null || true
		rm -f "$x.lock"
	done < <(find "$dir" -mindepth 1 -maxdepth 1 ! -name '*.lock' \
		-mmin +$((CACHE_UNUSED_HOURS * 60)) -print0 2>/dev/null)
}

# newest_bin PKG VERSION-GLOB SUITE...: newest binary version of PKG.
newest_bin() {
	local pkg=$1 glob=$2 best='' v
	shift 2
	while read -r v; do
		# shellcheck disable=SC2053
		[[ $v == $glob ]] || continue
		if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then best=$v; fi
	done < <(archive_versions "$pkg" Packages "$@")
	printf '%s\n' "$best"
}

# kernel_unpack IMG META DEST: download the kernel image package IMG at
# version META, plus its linux-{binary,modules,base}-* parts (7.x split the
# image), and unpack them all into DEST.
kernel_unpack() {
	local img=$1 meta=$2 dest=$3 deps p
	mkdir -p "$dest.debs" "$dest"
	deps=$(papt_cache show "$img=$meta" | sed -n 's/^Depends: //p' | head -n1 |
		tr ',' '\n' | grep -o 'linux-\(binary\|modules\|base\)-[0-9][^ ]*-cloud-amd64' || true)
	for p in $img $deps; do
		(cd "$dest.debs" && papt_get download -q "$p=$meta" >/dev/null 2>&1) ||
			die "apt-get download $p=$meta failed"
	done
	for p in "$dest.debs"/*.deb; do dpkg-deb -x "$p" "$dest"; done
	rm -rf "$dest.debs"
}

# The modules every guest's /init loads, in this order, when the kernel has
# them as modules (an empty NAME.ko: built in): the disk and loop drivers,
# the ciphers fscrypt needs (xts, cts: modules in 6.12, built into 7.x) and
# device-mapper with snapshots for LVM (e2scrub).  initramfs_make writes the
# list into the initramfs (/kmod/list), and /init loads what it names.
GUEST_KMODS="virtio_blk loop xts cts dm_mod dm_bufio dm_snapshot"

# kernel_fetch NAME: the unpacked kernel directory of a kernel of
# matrix.conf (vmlinuz, GUEST_KMODS as NAME.ko, config, RELEASE, VERSION):
# $MS_CACHE/kernels/<image package>-<version>.
kernel_fetch() {
	local name=$1 glob suites meta img dir p
	[ -n "${MATRIX_KERNEL_SPEC[$name]:-}" ] || die "unknown kernel $name (known: ${MATRIX_KERNELS//,/ })"
	read -r glob suites <<<"${MATRIX_KERNEL_SPEC[$name]}"
	# shellcheck disable=SC2086
	meta=$(newest_bin linux-image-cloud-amd64 "$glob" $suites)
	[ -n "$meta" ] || die "no linux-image-cloud-amd64 $glob in $suites"
	img=$(papt_cache show "linux-image-cloud-amd64=$meta" | sed -n 's/^Depends: //p' | head -n1 |
		tr ',' '\n' | grep -o 'linux-image-[0-9][^ ]*-cloud-amd64' | head -n1)
	[ -n "$img" ] || die "cannot resolve the kernel behind linux-image-cloud-amd64 $meta"
	dir=$(cache_get kernels "$img-$meta" kernel_make "$img" "$meta")
	[ -n "$dir" ] || exit 1
	# (The key does not name GUEST_KMODS: say what to do when it grew.)
	for p in $GUEST_KMODS; do
		[ -e "$dir/$p.ko" ] || die "$dir has no $p.ko (cached before GUEST_KMODS named it): remove that directory"
	done
	printf '%s\n' "$dir"
}

# kernel_make TMP IMG META: kernel_fetch's directory, made at TMP.
kernel_make() {
	local tmp=$1 img=$2 meta=$3 p ko vmlinuz rel
	say "fetching kernel $img $meta"
	mkdir -p "$tmp"
	kernel_unpack "$img" "$meta" "$tmp/root"
	# 6.x: /boot/vmlinuz-REL; 7.x: /usr/lib/modules/REL/vmlinuz.
	vmlinuz=$(find "$tmp/root" \( -name 'vmlinuz-*' -o -name vmlinuz \) -type f | head -n1 || true)
	[ -n "$vmlinuz" ] || die "no vmlinuz in $img"
	cp "$vmlinuz" "$tmp/vmlinuz"
	rel=$(find "$tmp/root" -path '*/modules/*/modules.order' | head -n1 || true)
	rel=${rel%/modules.order}
	for p in $GUEST_KMODS; do
		# (The file may spell the name with '-': dm-mod.ko.)
		ko=$(find "$tmp/root/lib/modules" "$tmp/root/usr/lib/modules" \
			\( -name "$p.ko*" -o -name "${p//_/-}.ko*" \) 2>/dev/null | head -n1 || true)
		case $ko in
		*.xz) xz -dc "$ko" >"$tmp/$p.ko" ;;
		*.zst) zstd -qdc "$ko" >"$tmp/$p.ko" ;;
		"") : >"$tmp/$p.ko" ;; # built in
		*) cp "$ko" "$tmp/$p.ko" ;;
		esac
	done
	cp "$(find "$tmp/root" \( -name 'config-*' -o -name config \) -type f | head -n1)" \
		"$tmp/config" 2>/dev/null || true
	echo "${rel##*/}" >"$tmp/RELEASE"
	echo "$img $meta" >"$tmp/VERSION"
	rm -rf "$tmp/root"
}

# vm_kernels K1,K2,...: fetch the kernels, fill KDIR and KREL.
vm_kernels() {
	local k
	for k in ${1//,/ }; do
		[ -n "${KDIR[$k]:-}" ] && continue
		KDIR[$k]=$(kernel_fetch "$k")
		KREL[$k]=$(cat "${KDIR[$k]}/RELEASE")
	done
}
# kernel_short K: the release without the Debian suffix (6.12.117), the
# "kernel" column of every results table.
kernel_short() { printf '%s\n' "${KREL[$1]%%+*}"; }

# kernel_modules K: a cached directory holding the kernel's whole
# lib/modules/<release> tree (scsi_debug, dm-*, ... for the Debian guests).
kernel_modules() {
	local k=$1 img meta rel out
	read -r img meta <"${KDIR[$k]}/VERSION"
	rel=${KREL[$k]}
	out=$(cache_get modules "$rel-$meta" modules_make "$img" "$meta" "$rel")
	[ -n "$out" ] || exit 1
	printf '%s\n' "$out/$rel"
}
# modules_make TMP IMG META REL: kernel_modules' entry, the tree in TMP/REL.
modules_make() {
	local tmp=$1 img=$2 meta=$3 rel=$4 p
	say "fetching the module tree of $img $meta"
	mkdir -p "$tmp"
	kernel_unpack "$img" "$meta" "$tmp/x"
	p=$(find "$tmp/x" -type d -path "*/modules/$rel" | head -n1 || true)
	[ -n "$p" ] || die "no modules/$rel in $img"
	mv "$p" "$tmp/$rel"
	rm -rf "$tmp/x"
}

# The packages of every Debian guest beyond minbase: the system stage's
# (systemd, the tools under test) and what util-linux's test suite calls.
# One list, so one debootstrap serves both.
# shellcheck disable=SC2034 # used by the stages
GUEST_PKGS=systemd-sysv,udev,kmod,e2fsprogs,util-linux,mount,fdisk,procps,bash,bc,bzip2,diffutils,dosfstools,file,findutils,gawk,grep,gzip,sed,socat,squashfs-tools,tar,xz-utils
# The images booting with initramfs-tools (system stage), and the Debian 13
# root of the packages stage's apt checks.
# shellcheck disable=SC2034
GUEST_IT_PKGS=$GUEST_PKGS,initramfs-tools,busybox,zstd,cloud-guest-utils
# guest_it_pkgs SUITE: GUEST_IT_PKGS for SUITE: Debian 13's root also has
# lvm2 (the system stage's e2scrub_all and lvextend -r rows); one list, so
# that the images and the packages stage share one debootstrap.
guest_it_pkgs() { printf '%s%s\n' "$GUEST_IT_PKGS" "$([ "$1" != trixie ] || echo ,lvm2)"; }

# unmount_under DIR: unmount whatever is mounted below DIR (a root tree's
# chroot mounts, or what an earlier, interrupted run left there).
unmount_under() {
	findmnt -rn -o TARGET | awk -v d="$1/" 'index($0, d) == 1' | sort -r | xargs -r umount
}

# rootfs_tarball SUITE PACKAGES: a cached tarball of a debootstrap'd Debian
# root (minbase + PACKAGES, comma-separated), from the archive the machine's
# apt sources name.  Every stage that needs a Debian guest starts from one.
rootfs_tarball() {
	local key tar
	key=$(printf '%s %s v2\n' "$1" "$2" | sha256sum | cut -c1-12)
	tar=$(cache_get rootfs "$1-$key.tar" rootfs_make "$1" "$2")
	[ -n "$tar" ] || exit 1
	printf '%s\n' "$tar"
}
# rootfs_make TMP SUITE PACKAGES: rootfs_tarball's tarball, made at TMP.
# debootstrap's package cache is an entry of its own (rootfs/debs, also
# read by tests/lib/apt.sh), and one debootstrap at a time uses it: two
# that shared it failed ("Couldn't find these debs").
rootfs_make() {
	local tar=$1 suite=$2 pkgs=$3 debs t0
	debs=$(cache_get rootfs debs mkdir)
	need_pkgs debootstrap
	(
		flock 8
		t0=$(date +%s)
		say "debootstrap $suite (minbase + $pkgs)"
		debootstrap --variant=minbase --include="$pkgs" --cache-dir="$debs" \
			--keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
			"$suite" "$tar.d" "$(archive_uri)" >"$tar.log" 2>&1 ||
			{ tail -n 20 "$tar.log" >&2; die "debootstrap failed (log: $tar.log)"; }
		rm -rf "$tar.d"/var/cache/apt/archives/*.deb
		tar -C "$tar.d" -cf "$tar" .
		rm -rf "$tar.d"
		say "debootstrap $suite: $(($(date +%s) - t0))s"
	) 8>>"$debs.lock"
}

# initramfs_make OUT KERNELS [DIR...]: a newc cpio with busybox, the guest
# /init, the GUEST_KMODS modules of each kernel (/kmod/<release>/) and the
# contents of each DIR on top.
initramfs_make() {
	local out=$1 kernels=$2 r k m
	shift 2
	r=$out.d
	rm -rf "$r" && mkdir -p "$r"/{bin,proc,sys,dev,tmp,run,newroot}
	cp /bin/busybox "$r/bin/busybox"
	install -m 0755 "$MS_TESTS/lib/guest/init" "$r/init"
	install -m 0644 "$MS_TESTS/lib/guest/debugfs.sh" "$r/debugfs.sh"
	for k in ${kernels//,/ }; do
		mkdir -p "$r/kmod/${KREL[$k]}"
		for m in $GUEST_KMODS; do cp "${KDIR[$k]}/$m.ko" "$r/kmod/${KREL[$k]}/"; done
	done
	echo "$GUEST_KMODS" >"$r/kmod/list"
	for d in "$@"; do cp -a "$d"/. "$r/"; done
	(cd "$r" && find . | cpio -o -H newc --quiet) >"$out.tmp"
	mv "$out.tmp" "$out"
	rm -rf "$r"
}

# toolset_payload DIR TOOLSETS: the tool sets (build/stage/<toolset>,
# without headers, static libraries and docs; debug info stripped) under
# DIR/ts/, and the host's shared libraries they need (they were built on
# this host) at their paths under DIR.  TOOLSETS must name MATRIX_HARNESS:
# the guests find the harness's own tools through DIR/ts/harness, a link.
toolset_payload() {
	local p=$1 ts lib
	for ts in $2; do
		mkdir -p "$p/ts/$ts"
		(cd "$MS_BUILD/stage/$ts" && tar -cf - --exclude=./usr/share --exclude=./usr/include \
			--exclude='*.a' --exclude='*.la' --exclude=./usr/lib/pkgconfig .) |
			tar -xf - -C "$p/ts/$ts"
		find "$p/ts/$ts" -type f -perm -u+x -exec strip --strip-debug {} + 2>/dev/null || true
	done
	[ -d "$p/ts/$MATRIX_HARNESS" ] || die "toolset_payload: the harness's tool set $MATRIX_HARNESS is missing"
	ln -sfn "$MATRIX_HARNESS" "$p/ts/harness"
	host_libs "$p" "$p/ts"
}

# host_libs DIR PATH...: the host's shared libraries that the executables
# under PATH need, at their own paths under DIR.
host_libs() {
	local p=$1 lib
	shift
	{ find "$@" -type f -perm -u+x -print0 | xargs -0 ldd 2>/dev/null || true; } |
		awk '/=> \//{print $3} /^\t\/lib64/{print $1}' | sort -u |
		while read -r lib; do
			mkdir -p "$p$(dirname "$lib")"
			cp -L "$lib" "$p$lib"
		done
	mkdir -p "$p/usr" && ln -sfn lib "$p/usr/lib64"
}

# GUEST_HOST_PKGS: the host packages whose programs guest_tools_payload
# puts into the scenario guests (the audit's e2scrub needs bash and LVM;
# setpriv runs a tool without a capability).
# shellcheck disable=SC2034 # used by tests/run
GUEST_HOST_PKGS="bash lvm2 util-linux"
# guest_tools_payload DIR: bash, LVM (lvm with its command names, a
# configuration for a guest without udev) and the host's setpriv in
# DIR/bin, DIR/etc/lvm, and their libraries.
guest_tools_payload() {
	local p=$1 c
	mkdir -p "$p/bin" "$p/etc/lvm"
	cp -L /bin/bash /sbin/lvm /usr/bin/setpriv "$p/bin/"
	for c in pvcreate pvremove vgcreate vgremove lvcreate lvremove lvs lvchange vgchange; do
		ln -sfn lvm "$p/bin/$c"
	done
	cat >"$p/etc/lvm/lvm.conf" <<-'EOF'
		# mountsafe scenario guests: no udev, no daemons.
		devices {
			obtain_device_list_from_udev = 0
			external_device_info_source = "none"
		}
		activation {
			udev_sync = 0
			udev_rules = 0
			monitoring = 0
		}
		global {
			use_lvmpolld = 0
		}
	EOF
	host_libs "$p" "$p/bin/bash" "$p/bin/lvm" "$p/bin/setpriv"
}
