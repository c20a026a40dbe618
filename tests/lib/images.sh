# shellcheck shell=bash
# The system stage's disk images (sourced by tests/stages/system after
# scripts/common.sh, tests/lib/vm.sh and the stage's settings).
#
# Images (images(); IMG[NAME] = the cached image's path):
#   stock, ours        Debian 12 root filesystem (ROOT_SIZE, no partition
#                      table) that boots with the test initramfs
#                      (make_image): stock keeps Debian's packages, ours gets
#                      ours from build/repo (repo_install)
#   stock12i, ours12i  Debian 12 with initramfs-tools: root on partition 1
#                      (ROOT13_FS) of a DISK13 disk, Debian's own initramfs
#                      per kernel in IMG.initrd-<release>, the cloud first
#                      boot's ms-growroot.service (make_image_it)
#   stock13, ours13    the same with Debian 13, and a damaged twin
#                      (IMG.damaged) for the damage boots
#   the data disk      DATA: an ext4 filesystem (DATA_FS) on a larger disk
#                      (DATA_DISK) with three files, and DATA.damaged
#   the LVM disk       LVM (Debian 13 images, which get lvm2): a PV holding
#                      volume group LVM_VG with LVs home and data (LVM_LV
#                      each, ext4), mounted at /home and /srv/data by the
#                      images' fstab; the rest of the VG free for e2scrub's
#                      snapshot (256M) and an lvextend (make_lvm_disk)
# Cache: ~/.cache/mountsafe/system/images/NAME-KEY[-DEBS].img, KEY the first
# 12 hex digits of the SHA-256 of the image's inputs: the debootstrap
# tarball's name (which names its suite and package list), the sizes, for
# the initramfs-tools images the kernels and their VERSION files, the
# files copied into the image (tests/system/guest*, refusal.sh,
# debugfs.sh, the data disk's checksums) and this file; for ours*, DEBS
# (debs_key) is that of the packages, the repository key, stanza and pin,
# and the definitions of the stage's apt functions the recipe calls.
# A variant not used for CACHE_UNUSED_HOURS (tests/lib/vm/artifacts.sh, the
# one eviction rule of the caches) is deleted when its name is rebuilt.
#
# Uses the stage's HERE, SYS, SYS_CACHE, VM, RES, DEBS, REPO, F_IMAGES,
# F_KERNELS, F_KERNELS13, KDIR/KREL (vm_kernels), timing, and repo_install
# (tests/lib/apt.sh).

ROOT_SIZE=1536M DATA_DISK=512M DATA_FS=256M LOOP_FS=64M
# Debian 13 and Debian 12 with initramfs-tools: root on partition 1
# (ROOT13_FS) of a larger disk (DISK13).
ROOT13_FS=1536M DISK13=2048M
# The LVM disk: e2scrub_all scrubs only LVs whose VG has 256M free (its
# snapshot's size), and the lvextend row takes 32M more.
LVM_DISK=512M LVM_LV=64M LVM_VG=msvg

IMAGES_LIB=${BASH_SOURCE[0]}
# IMG[NAME]: the image's path (images); ROOTFS_USED[TARBALL]: the
# debootstraps they were made from (for the stage's manifest).
declare -A IMG=() ROOTFS_USED=()

# toolset_of IMAGE: the tool set name of an image's rows.
toolset_of() {
	case $1 in
	stock) echo debian12-stock ;; ours) echo debian12-mountsafe ;;
	stock12i) echo debian12-initramfs-stock ;; ours12i) echo debian12-initramfs-mountsafe ;;
	stock13) echo debian13-stock ;; ours13) echo debian13-mountsafe ;;
	esac
}

# install_harness ROOT NAME: what every image gets besides its fstab: the
# report and watchdog units (tests/system/guest), the tool set's name, no
# login prompts, a fixed host name and machine id, the loop image.
install_harness() {
	local st=$1 name=$2 d
	install -m 0755 "$SYS/guest/ms-report" "$st/usr/local/sbin/ms-report"
	install -D -m 0644 "$HERE/lib/guest/refusal.sh" "$st/usr/local/lib/mountsafe/refusal.sh"
	toolset_of "$name" >"$st/etc/mountsafe-toolset"
	install -m 0644 "$SYS/guest/ms-report.service" "$SYS/guest/ms-watchdog.service" "$st/etc/systemd/system/"
	for d in multi-user.target emergency.target rescue.target; do
		mkdir -p "$st/etc/systemd/system/$d.wants"
		ln -sf ../ms-report.service "$st/etc/systemd/system/$d.wants/ms-report.service"
	done
	# No login prompts (nobody logs in; keeps the console log readable and
	# the boot shorter under TCG).
	for d in getty-static.service getty@tty1.service serial-getty@ttyS0.service; do
		ln -sf /dev/null "$st/etc/systemd/system/$d"
	done
	mkdir -p "$st/etc/systemd/system/sysinit.target.wants"
	ln -sf ../ms-watchdog.service "$st/etc/systemd/system/sysinit.target.wants/ms-watchdog.service"
	echo "mountsafe-$name" >"$st/etc/hostname"
	# A fixed machine id: no first-boot setup, no prompts.
	printf '%s\n' "$(printf 'mountsafe %s' "$name" | md5sum | cut -c1-32)" >"$st/etc/machine-id"
	mkdir -p "$st/data" "$st/loopdata"
	mkfs.ext4 -q -F -L loopdata "$st/data-img.ext4" "$LOOP_FS" >/dev/null
}

# updated_stamp ROOT: what systemd-update-done.service leaves behind on an
# installed system's first boot: /etc/.updated and /var/.updated holding
# the time of /usr.  The images boot as a system that has booted before;
# without the stamps every boot of a snapshot (which never keeps them)
# rebuilt the dynamic linker cache and the journal catalog
# (ConditionNeedsUpdate=), some 8 s of TCG time in each Debian 13 boot.
updated_stamp() {
	local t d
	t=$(stat -c %.9Y "$1/usr")
	for d in etc var; do
		printf '# This file was created by the mountsafe image build (the first boot\n# systemd-update-done would have recorded). See systemd-update-done.service(8).\nTIMESTAMP_NSEC=%s\n' \
			"${t/./}" >"$1/$d/.updated"
		touch -d "@$t" "$1/$d/.updated"
	done
}

# make_image NAME ROOTFS OUT: the root disk image of one variant.
make_image() {
	local name=$1 src=$2 out=$3 st=$VM/root-$1 d p debs=()
	unmount_under "$st"
	rm -rf "$st" && mkdir -p "$st"
	tar -xf "$src" -C "$st"
	if [ "$name" = ours ]; then
		# Upgrade every package of ours that the image has installed.
		# shellcheck disable=SC2153 # the stage's
		for d in "$DEBS"/*.deb; do
			p=$(dpkg-deb -f "$d" Package)
			# shellcheck disable=SC2016
			chroot "$st" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' &&
				debs+=("$d")
		done
		[ ${#debs[@]} -gt 0 ] || die "none of ${DEBS#"$MS_ROOT"/}/*.deb is installed in the image"
		say "image ours: apt update && apt upgrade from ${REPO#"$MS_ROOT"/} (${#debs[@]} of its packages are installed)"
		repo_install "$st" >"$RES/image-ours-apt-install.log" 2>&1 ||
			{ tail -n 30 "$RES/image-ours-apt-install.log" >&2; die "apt upgrade from our repository failed in the image"; }
	fi
	# shellcheck disable=SC2016
	chroot "$st" dpkg-query -W -f='${Package}=${Version}\n' \
		util-linux mount libmount1 libblkid1 fdisk e2fsprogs libext2fs2 libcom-err2 libss2 logsave \
		>"$out.versions"
	# The system under test.
	install -m 0644 "$SYS/guest/fstab" "$st/etc/fstab"
	install_harness "$st" "$name"
	updated_stamp "$st"
	mkfs.ext4 -q -F -L root -d "$st" "$out.tmp" "$ROOT_SIZE" >/dev/null
	mv "$out.tmp" "$out"
	rm -rf "$st"
}

# ---- Debian 13: a cloud-style disk with Debian's own initramfs ----
# files_for DIR MANIFEST REL: three files of random data under DIR/REL and
# their checksums (paths relative to DIR) in MANIFEST, for the damage rows.
files_for() {
	local dir=$1 man=$2 rel=$3 i
	mkdir -p "$dir/$rel"
	for i in 1 2 3; do head -c $((200000 * i)) /dev/urandom >"$dir/$rel/f$i"; done
	(cd "$dir" && sha256sum "$rel"/f1 "$rel"/f2 "$rel"/f3) >"$man"
}

# damage FSIMAGE REL: what a crash or a bad disk leaves behind, that e2fsck
# -p repairs: an in-use inode (REL/f2) and a block of REL/f3 marked free,
# and the error flag set, as the kernel sets it when it finds damage.
damage() {
	local blk
	blk=$(debugfs -R "bmap /$2/f3 0" "$1" 2>/dev/null)
	[[ $blk =~ ^[0-9]+$ ]] || die "damage: no block of /$2/f3 in $1"
	debugfs -w -f - "$1" >/dev/null 2>&1 <<-EOT || die "damage: debugfs failed on $1"
		freei /$2/f2
		freeb $blk
		ssv state 2
	EOT
	e2fsck -fn "$1" >/dev/null 2>&1 && die "damage: $1 is still clean"
	return 0
}

# disk13 FSIMAGE OUT: a DISK13 disk, FSIMAGE as its partition 1 from 1 MiB.
disk13() {
	rm -f "$2"
	truncate -s "$DISK13" "$2"
	printf 'label: dos\nstart=2048, size=%s, type=83\n' "$(($(stat -c %s "$1") / 512))" |
		sfdisk -q "$2" >/dev/null
	dd if="$1" of="$2" bs=1M seek=1 conv=notrunc,sparse status=none
}

# make_image_it NAME ROOTFS OUT SUITE KERNELS: a disk image of Debian 13
# (stock13, ours13) or Debian 12 (stock12i, ours12i) booting with Debian's
# initramfs-tools (OUT), its damaged twin (OUT.damaged, Debian 13) and Debian's
# initramfs for each kernel (OUT.initrd-<release>).  The kernels' module
# trees go into the root, and initramfs-tools' mkinitramfs makes the
# initramfs in it, after our packages (ours*, from SUITE of the
# repository): its e2fsck is the one installed.  ms-growroot.service grows
# root at boot, as a cloud image's first boot does.
make_image_it() {
	local name=$1 src=$2 out=$3 suite=$4 kernels=$5 st=$VM/root-$1 k rel
	unmount_under "$st"
	rm -rf "$st" && mkdir -p "$st"
	tar -xf "$src" -C "$st"
	case $name in ours*)
		say "image $name: apt update && apt upgrade from ${REPO#"$MS_ROOT"/} (suite $suite)"
		SUITE=$suite repo_install "$st" >"$RES/image-$name-apt-install.log" 2>&1 ||
			{ tail -n 30 "$RES/image-$name-apt-install.log" >&2; die "apt upgrade from our repository failed in the $name image"; }
		;;
	esac
	# shellcheck disable=SC2016
	chroot "$st" dpkg-query -W -f='${Package}=${Version}\n' \
		util-linux mount libmount1 libblkid1 fdisk e2fsprogs 'libext2fs2*' libcom-err2 libss2 logsave \
		initramfs-tools cloud-guest-utils systemd | grep -v '=$' >"$out.versions"
	install -m 0644 "$SYS/guest13/fstab" "$st/etc/fstab"
	# Debian 13: /home and a data LV on the LVM disk (not root: root on
	# LVM is out of scope), as Debian's guided LVM install lays them out.
	case $name in *13)
		cat "$SYS/guest13/fstab-lvm" >>"$st/etc/fstab"
		mkdir -p "$st/srv/data"
		echo "$LVM_VG" >"$st/etc/mountsafe-lvm"
		# The weekly scrub as an administrator enables it: without
		# periodic_e2scrub=1 in e2scrub.conf (Debian ships it commented
		# out) e2scrub_all.service exits 0 and scrubs nothing.
		sed -i 's/^# *periodic_e2scrub=1$/periodic_e2scrub=1/' "$st/etc/e2scrub.conf"
		grep -qx 'periodic_e2scrub=1' "$st/etc/e2scrub.conf" || die "image $name: could not enable periodic_e2scrub in /etc/e2scrub.conf"
		;;
	esac
	install_harness "$st" "$name"
	install -m 0755 "$SYS/guest13/ms-growroot" "$st/usr/local/sbin/"
	install -m 0644 "$SYS/guest13/ms-growroot.service" "$st/etc/systemd/system/"
	ln -sf ../ms-growroot.service "$st/etc/systemd/system/multi-user.target.wants/ms-growroot.service"
	echo initramfs-tools >"$st/etc/mountsafe-initramfs"
	numfmt --from=iec "$ROOT13_FS" >"$st/etc/mountsafe-rootfs-bytes"
	files_for "$st" "$st/usr/local/lib/mountsafe/system-damage-root.sha256" srv/ms-files
	install -m 0644 "$DATA.sha256" "$st/usr/local/lib/mountsafe/system-damage-data.sha256"
	# Debian's initramfs for each kernel, made by Debian's mkinitramfs in
	# the image (its hooks copy fsck for the root in /etc/fstab).
	install -D -m 0755 "$SYS/guest13/ms-boot" "$st/etc/initramfs-tools/scripts/init-top/ms-boot"
	install -m 0644 "$HERE/lib/guest/debugfs.sh" "$st/etc/initramfs-tools/scripts/ms-debugfs.sh"
	# (The fsck hook finds root's type by probing the device, which a
	# chroot does not have: say it, as initramfs.conf(5) allows.)
	echo FSTYPE=ext4 >"$st/etc/initramfs-tools/conf.d/mountsafe-fstype"
	mount -t proc proc "$st/proc"
	for k in ${kernels//,/ }; do
		rel=${KREL[$k]}
		mkdir -p "$st/usr/lib/modules"
		cp -a "$(kernel_modules "$k")" "$st/usr/lib/modules/$rel"
		cp "${KDIR[$k]}/config" "$st/boot/config-$rel"
		chroot "$st" depmod "$rel" 2>&1 | { grep -v 'could not open modules\.' || true; } >&2
		chroot "$st" mkinitramfs -o "/boot/initrd.img-$rel" "$rel" >"$VM/mkinitramfs-$name-$k.log" 2>&1 ||
			{ umount "$st/proc"; tail -n 20 "$VM/mkinitramfs-$name-$k.log" >&2; die "mkinitramfs $rel failed in the $name image"; }
		cp "$st/boot/initrd.img-$rel" "$out.initrd-$rel"
	done
	umount "$st/proc"
	updated_stamp "$st"
	mkfs.ext4 -q -F -L root -d "$st" "$out.fs" "$ROOT13_FS" >/dev/null
	disk13 "$out.fs" "$out.tmp"
	# (Only Debian 13 has damage boots.)
	case $name in *13)
		damage "$out.fs" srv/ms-files
		disk13 "$out.fs" "$out.damaged"
		;;
	esac
	rm -f "$out.fs"
	mv "$out.tmp" "$out"
	rm -rf "$st"
}

# make_lvm_disk OUT: the LVM disk (a sparse LVM_DISK file): a PV with VG
# LVM_VG and two LVs, home and data (LVM_LV each, ext4 labelled as the LV).
# The LVs stay inactive on the host (no device-mapper needed there): each
# filesystem is made in a file and written at the LV's offset, which lvs
# gives (PV data start + first extent x extent size).
make_lvm_disk() {
	local out=$1 loop lv pe0 ext start cfg
	# Only this loop device, no devices file, no udev: the host's own
	# LVM set-up must neither see nor change this VG; no device-mapper
	# (--driverloaded n: the host may have none, the LVs stay inactive).
	cfg='devices { use_devicesfile=0 } activation { udev_sync=0 udev_rules=0 }'
	rm -f "$out.tmp"
	truncate -s "$LVM_DISK" "$out.tmp"
	loop=$(losetup -f --show "$out.tmp")
	lvm_on() {	# lvm_on COMMAND ARGS...: an LVM command on the loop device alone
		LVM_SUPPRESS_FD_WARNINGS=1 "$1" --driverloaded n --config "$cfg" --devices "$loop" "${@:2}"
	}
	if ! { lvm_on pvcreate -q "$loop" && lvm_on vgcreate -q "$LVM_VG" "$loop" &&
		lvm_on lvcreate -q -an -Zn -L "$LVM_LV" -n home "$LVM_VG" &&
		lvm_on lvcreate -q -an -Zn -L "$LVM_LV" -n data "$LVM_VG" &&
		pe0=$(lvm_on pvs --noheadings --units b --nosuffix -o pe_start "$loop") &&
		ext=$(lvm_on vgs --noheadings --units b --nosuffix -o vg_extent_size "$LVM_VG") &&
		lvm_on lvs --noheadings -o lv_name,seg_pe_ranges "$LVM_VG" >"$out.lvs"; } >"$VM/lvm-disk.log" 2>&1; then
		losetup -d "$loop"
		cat "$VM/lvm-disk.log" >&2
		die "make_lvm_disk: LVM on $loop failed"
	fi
	losetup -d "$loop"
	pe0=${pe0// /} ext=${ext// /}
	for lv in home data; do
		# (seg_pe_ranges: "PV:FIRST-LAST", one segment each.)
		start=$(awk -v lv="$lv" '$1 == lv { sub(/^.*:/, "", $2); sub(/-.*/, "", $2); print $2 }' "$out.lvs")
		[[ $start =~ ^[0-9]+$ ]] || die "make_lvm_disk: no extent of LV $lv in $out.lvs"
		rm -f "$VM/lv.ext4"
		mkfs.ext4 -q -F -L "$lv" "$VM/lv.ext4" "$LVM_LV" >/dev/null
		dd if="$VM/lv.ext4" of="$out.tmp" bs=1M seek=$(((pe0 + start * ext) / 1048576)) conv=notrunc,sparse status=none
	done
	rm -f "$VM/lv.ext4" "$out.lvs"
	mv "$out.tmp" "$out"
}

# images: make or find every image of F_IMAGES, the data disk (DATA) and,
# with a Debian 13 image, the LVM disk (LVM).
# shellcheck disable=SC2034 # IMG, ROOTFS_USED, LVM: read by the stage
images() {
	local key name out t0 dir k src suite kernels
	dir=$SYS_CACHE/images
	mkdir -p "$dir"
	# The data disk: an ext4 filesystem smaller than the disk (room to
	# grow) with three files (their checksums in DATA.sha256), and its
	# damaged twin (DATA.damaged) for the damage rows.
	DATA=$dir/data-$DATA_DISK-$DATA_FS-v2.img
	if [ ! -f "$DATA.damaged" ]; then
		rm -rf "$VM/data-files" && mkdir -p "$VM/data-files"
		files_for "$VM/data-files" "$DATA.sha256" ms-files
		truncate -s "$DATA_DISK" "$DATA.tmp"
		mkfs.ext4 -q -F -L data -d "$VM/data-files" "$DATA.tmp" "$DATA_FS"
		rm -rf "$VM/data-files"
		mv "$DATA.tmp" "$DATA"
		cp --sparse=always "$DATA" "$DATA.tmp"
		damage "$DATA.tmp" ms-files
		mv "$DATA.tmp" "$DATA.damaged"
	fi
	# (The version names the recipe: bump it when make_lvm_disk changes.)
	LVM=$dir/lvm-$LVM_DISK-$LVM_LV-$LVM_VG-v1.img
	case ,$F_IMAGES, in *13,*) [ -f "$LVM" ] || make_lvm_disk "$LVM" ;; esac
	# debs_key DIR SUITE: the packages an image of ours installs and the apt
	# set-up they come through; not BUILDINFO.txt, which has the time the
	# repository was made (every fresh clone rebuilt the three images).
	debs_key() {
		{ grep -v ' BUILDINFO.txt$' "$1/SHA256SUMS"
			cat "$REPO/mountsafe-archive-keyring.gpg" "$REPO/mountsafe-$2.sources" "$REPO/mountsafe.pref"
			declare -f repo_install; } |
			sha256sum | cut -c1-12
	}
	for name in ${F_IMAGES//,/ }; do
		case $name in
		stock | ours)
			src=$(rootfs_tarball bookworm "$GUEST_PKGS")
			key=$( { echo "$src $ROOT_SIZE $LOOP_FS"; cat "$SYS"/guest/* "$HERE/lib/guest/refusal.sh" "$IMAGES_LIB"; } |
				sha256sum | cut -c1-12)
			;;
		stock12i | ours12i | stock13 | ours13)
			case $name in *13) suite=trixie kernels=$F_KERNELS13 ;; *) suite=bookworm kernels=$F_KERNELS ;; esac
			src=$(rootfs_tarball "$suite" "$(guest_it_pkgs "$suite")")
			key=$( {
				echo "$src $ROOT13_FS $DISK13 $LOOP_FS $kernels $LVM_VG"
				for k in ${kernels//,/ }; do cat "${KDIR[$k]}/VERSION"; done
				cat "$SYS"/guest/* "$SYS"/guest13/* "$HERE/lib/guest/refusal.sh" "$HERE/lib/guest/debugfs.sh" "$DATA.sha256" "$IMAGES_LIB"
			} | sha256sum | cut -c1-12)
			;;
		*) die "unknown image $name (stock, ours, stock12i, ours12i, stock13, ours13)" ;;
		esac
		ROOTFS_USED[$src]=1
		out=$dir/$name-$key.img
		case $name in
		ours) out=$dir/ours-$key-$(debs_key "$DEBS" bookworm).img ;;
		ours12i | ours13) out=$dir/$name-$key-$(debs_key "$MS_BUILD/debs/$suite" "$suite").img ;;
		esac
		if [ ! -f "$out" ]; then
			t0=$(date +%s)
			# Other variants stay while a run may still use them (the
			# controls boot stock13 and ours13 with one kernel, the stage
			# with two: deleting the other's image made every run build it
			# twice), not longer: kept for a day, the variants of a day's
			# changes filled this machine's disk (31 GB, 2026-12-08).
			find "$dir" -name "$name-*" -mmin +$((CACHE_UNUSED_HOURS * 60)) -delete
			case $name in
			stock | ours) make_image "$name" "$src" "$out" ;;
			*) make_image_it "$name" "$src" "$out" "$suite" "$kernels" ;;
			esac
			timing "image $name: built in $(($(date +%s) - t0))s"
		else
			find "$dir" -name "${out##*/}*" -exec touch {} +
			timing "image $name: cached"
		fi
		IMG[$name]=$out
	done
}
