# shellcheck shell=bash
# What a boot is made of, fetched or built once and cached (part of
# tests/lib/vm.sh): kernels and their module trees, debootstrapped roots,
# initramfs images, the tool sets' and the host's payloads.

declare -A KDIR KREL

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
# matrix.conf (vmlinuz, GUEST_KMODS as NAME.ko, config, RELEASE, VERSION),
# cached.  Runs that start at once on a new machine take turns (a lock
# file; the one that waited finds it made), as for the module trees and the
# Debian roots.
kernel_fetch() {
	local name=$1 glob suites meta img dir p ko vmlinuz rel
	[ -n "${MATRIX_KERNEL_SPEC[$name]:-}" ] || die "unknown kernel $name (known: ${MATRIX_KERNELS//,/ })"
	read -r glob suites <<<"${MATRIX_KERNEL_SPEC[$name]}"
	# shellcheck disable=SC2086
	meta=$(newest_bin linux-image-cloud-amd64 "$glob" $suites)
	[ -n "$meta" ] || die "no linux-image-cloud-amd64 $glob in $suites"
	img=$(papt_cache show "linux-image-cloud-amd64=$meta" | sed -n 's/^Depends: //p' | head -n1 |
		tr ',' '\n' | grep -o 'linux-image-[0-9][^ ]*-cloud-amd64' | head -n1)
	[ -n "$img" ] || die "cannot resolve the kernel behind linux-image-cloud-amd64 $meta"
	dir=$MS_CACHE/kernels/$img-$meta
	if ! kernel_complete "$dir"; then
		mkdir -p "$MS_CACHE/kernels"
		(
			flock 9
			! kernel_complete "$dir" || exit 0
			say "fetching kernel $img $meta"
			rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
			kernel_unpack "$img" "$meta" "$dir.tmp/root"
			# 6.x: /boot/vmlinuz-REL; 7.x: /usr/lib/modules/REL/vmlinuz.
			vmlinuz=$(find "$dir.tmp/root" \( -name 'vmlinuz-*' -o -name vmlinuz \) -type f | head -n1 || true)
			[ -n "$vmlinuz" ] || die "no vmlinuz in $img"
			cp "$vmlinuz" "$dir.tmp/vmlinuz"
			rel=$(find "$dir.tmp/root" -path '*/modules/*/modules.order' | head -n1 || true)
			rel=${rel%/modules.order}
			for p in $GUEST_KMODS; do
				# (The file may spell the name with '-': dm-mod.ko.)
				ko=$(find "$dir.tmp/root/lib/modules" "$dir.tmp/root/usr/lib/modules" \
					\( -name "$p.ko*" -o -name "${p//_/-}.ko*" \) 2>/dev/null | head -n1 || true)
				case $ko in
				*.xz) xz -dc "$ko" >"$dir.tmp/$p.ko" ;;
				*.zst) zstd -qdc "$ko" >"$dir.tmp/$p.ko" ;;
				"") : >"$dir.tmp/$p.ko" ;; # built in
				*) cp "$ko" "$dir.tmp/$p.ko" ;;
				esac
			done
			cp "$(find "$dir.tmp/root" \( -name 'config-*' -o -name config \) -type f | head -n1)" \
				"$dir.tmp/config" 2>/dev/null || true
			echo "${rel##*/}" >"$dir.tmp/RELEASE"
			echo "$img $meta" >"$dir.tmp/VERSION"
			rm -rf "$dir.tmp/root"
			if [ -f "$dir/VERSION" ]; then
				# Cached from before a module was added: add it, leave the rest
				# (a running VM may be using this kernel).
				for p in $GUEST_KMODS; do [ -e "$dir/$p.ko" ] || mv "$dir.tmp/$p.ko" "$dir/"; done
				rm -rf "$dir.tmp"
			else
				mv "$dir.tmp" "$dir"
			fi
		) 9>"$MS_CACHE/kernels/lock" || exit 1
	fi
	printf '%s\n' "$dir"
}

# kernel_complete DIR: DIR is an unpacked kernel with every GUEST_KMODS module.
kernel_complete() {
	local m
	[ -f "$1/VERSION" ] || return 1
	for m in $GUEST_KMODS; do [ -e "$1/$m.ko" ] || return 1; done
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
	local k=$1 img meta rel out p
	read -r img meta <"${KDIR[$k]}/VERSION"
	rel=${KREL[$k]}
	out=$MS_CACHE/modules/$rel-$meta
	if [ ! -f "$out/.ok" ]; then
		mkdir -p "$MS_CACHE/modules"
		(
			flock 9
			[ ! -f "$out/.ok" ] || exit 0
			say "fetching the module tree of $img $meta"
			rm -rf "$out" && mkdir -p "$out"
			kernel_unpack "$img" "$meta" "$out/x"
			p=$(find "$out/x" -type d -path "*/modules/$rel" | head -n1)
			[ -n "$p" ] || die "no modules/$rel in $img"
			mv "$p" "$out/$rel"
			rm -rf "$out/x"
			touch "$out/.ok"
		) 9>"$MS_CACHE/modules/lock" || exit 1
	fi
	printf '%s\n' "$out/$rel"
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

# unmount_under DIR: unmount whatever is mounted below DIR (a root tree's
# chroot mounts, or what an earlier, interrupted run left there).
unmount_under() {
	findmnt -rn -o TARGET | awk -v d="$1/" 'index($0, d) == 1' | sort -r | xargs -r umount
}

# rootfs_tarball SUITE PACKAGES: a cached tarball of a debootstrap'd Debian
# root (minbase + PACKAGES, comma-separated), from the archive the machine's
# apt sources name.  Every stage that needs a Debian guest starts from one.
# One debootstrap at a time on the machine (a lock file): runs in two clones
# that both found a root missing debootstrapped it into the same directory
# with the same package cache, and both failed ("Couldn't find these debs").
rootfs_tarball() {
	local suite=$1 pkgs=$2 dir=$MS_CACHE/rootfs key tar t0
	key=$(printf '%s %s v2\n' "$suite" "$pkgs" | sha256sum | cut -c1-12)
	tar=$dir/$suite-$key.tar
	if [ ! -s "$tar" ]; then
		mkdir -p "$dir/debs"
		(
			flock 9
			[ ! -s "$tar" ] || exit 0
			need_pkgs debootstrap
			rm -rf "$dir/$key.tmp"
			t0=$(date +%s)
			say "debootstrap $suite (minbase + $pkgs)"
			debootstrap --variant=minbase --include="$pkgs" --cache-dir="$dir/debs" \
				--keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
				"$suite" "$dir/$key.tmp" "$(archive_uri)" >"$dir/debootstrap-$suite-$key.log" 2>&1 ||
				{ tail -n 20 "$dir/debootstrap-$suite-$key.log" >&2; die "debootstrap failed (log: $dir/debootstrap-$suite-$key.log)"; }
			rm -rf "$dir/$key.tmp"/var/cache/apt/archives/*.deb
			tar -C "$dir/$key.tmp" -cf "$tar.part" . && mv "$tar.part" "$tar"
			rm -rf "$dir/$key.tmp"
			say "debootstrap $suite: $(($(date +%s) - t0))s"
		) 9>"$dir/lock" || exit 1
	fi
	printf '%s\n' "$tar"
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
