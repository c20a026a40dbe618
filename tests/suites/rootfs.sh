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
	local kdir=$1 img meta rel out p deps
	read -r img meta <"$kdir/VERSION"
	rel=$(cat "$kdir/RELEASE")
	out=$MS_CACHE/suites/modules-$rel-$meta
	if [ ! -f "$out/.ok" ]; then
		say "fetching the module tree of $img $meta"
		rm -rf "$out" && mkdir -p "$out/debs" "$out/x"
		deps=$(papt_cache show "$img=$meta" | sed -n 's/^Depends: //p' | head -n1 |
			tr ',' '\n' | grep -o 'linux-modules-[0-9][^ ]*-cloud-amd64' || true)
		for p in $img $deps; do
			(cd "$out/debs" && papt_get download -q "$p=$meta" >/dev/null 2>&1) ||
				die "apt-get download $p=$meta failed"
		done
		for p in "$out"/debs/*.deb; do dpkg-deb -x "$p" "$out/x"; done
		p=$(find "$out/x" -type d -path "*/modules/$rel" | head -n1)
		[ -n "$p" ] || die "no modules/$rel in $img"
		mv "$p" "$out/$rel"
		rm -rf "$out/debs" "$out/x"
		touch "$out/.ok"
	fi
	printf '%s\n' "$out/$rel"
}
