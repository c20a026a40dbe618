# shellcheck shell=bash
# Guest root for the upstream test suites: a Debian 12 minbase system (the
# tool sets are built on Debian 12, so its glibc fits them) with the tools
# util-linux's test suite calls, plus the module tree of the kernel we boot.
# Sourced by tests/suites/util-linux after scripts/common.sh and
# tests/lib/kernels.sh.

SUITE_PKGS=bash,bc,bzip2,diffutils,dosfstools,e2fsprogs,file,findutils,gawk,grep,gzip,kmod,procps,sed,socat,squashfs-tools,tar,udev,xz-utils

# rootfs_tarball: prints a cached tarball of the guest root.
rootfs_tarball() {
	local dir=$MS_CACHE/suites tar key
	key=$(printf '%s\n' "$SUITE_PKGS" | sha256sum | cut -c1-12)
	tar=$dir/rootfs-bookworm-$key.tar
	if [ ! -s "$tar" ]; then
		need_pkgs debootstrap
		mkdir -p "$dir"
		rm -rf "$dir/rootfs.tmp"
		say "debootstrap bookworm (minbase + $SUITE_PKGS)"
		debootstrap --variant=minbase --include="$SUITE_PKGS" bookworm \
			"$dir/rootfs.tmp" "$(archive_uri)" >"$dir/debootstrap.log" 2>&1 ||
			{ tail -n 20 "$dir/debootstrap.log" >&2; die "debootstrap failed (log: $dir/debootstrap.log)"; }
		rm -rf "$dir/rootfs.tmp"/var/cache/apt/archives/*.deb "$dir/rootfs.tmp"/var/lib/apt/lists/*
		tar -C "$dir/rootfs.tmp" -cf "$tar.part" . && mv "$tar.part" "$tar"
		rm -rf "$dir/rootfs.tmp"
	fi
	printf '%s\n' "$tar"
}

# kernel_modules KERNEL-DIR: prints a cached directory holding the kernel's
# whole lib/modules/<release> tree (scsi_debug, sd_mod, ... for the suite).
kernel_modules() {
	local kdir=$1 img meta rel out p
	read -r img meta <"$kdir/VERSION"
	rel=$(cat "$kdir/RELEASE")
	out=$MS_CACHE/suites/modules-$rel-$meta
	if [ ! -f "$out/.ok" ]; then
		say "fetching the module tree of $img $meta"
		rm -rf "$out" && mkdir -p "$out"
		kernel_unpack "$img" "$meta" "$out/x"
		p=$(find "$out/x" -type d -path "*/modules/$rel" | head -n1)
		[ -n "$p" ] || die "no modules/$rel in $img"
		mv "$p" "$out/$rel"
		rm -rf "$out/x"
		touch "$out/.ok"
	fi
	printf '%s\n' "$out/$rel"
}
