# shellcheck shell=bash
# Fetch and unpack the Debian cloud kernels the tests boot.  Sourced by
# tests/run after scripts/common.sh.  Versions are resolved at run time:
#   k6 = newest linux-image-cloud-amd64 6.12.x in trixie
#   k7 = newest linux-image-cloud-amd64 7.x in sid or trixie-backports

# newest_bin PKG VERSION-GLOB SUITE...: newest binary version of PKG.
newest_bin() {
	local pkg=$1 glob=$2 best='' v where s; shift 2
	local suites=" $* "
	while IFS='|' read -r _ v where; do
		v=${v// /}
		case $where in *Sources*) continue ;; esac
		s=$(awk '{print $2}' <<<"$where"); s=${s%%/*}
		case $suites in *" $s "*) ;; *) continue ;; esac
		# shellcheck disable=SC2053
		[[ $v == $glob ]] || continue
		if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then best=$v; fi
	done < <(papt_cache madison "$pkg")
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

# kernel_fetch NAME VERSION-GLOB SUITE...: prints the unpacked kernel dir, which
# holds vmlinuz, loop.ko, virtio_blk.ko and VERSION.
kernel_fetch() {
	local name=$1 glob=$2 meta img dir p; shift 2
	meta=$(newest_bin linux-image-cloud-amd64 "$glob" "$@")
	[ -n "$meta" ] || die "no linux-image-cloud-amd64 $glob in $*"
	img=$(papt_cache show "linux-image-cloud-amd64=$meta" | sed -n 's/^Depends: //p' | head -n1 |
		tr ',' '\n' | grep -o 'linux-image-[0-9][^ ]*-cloud-amd64' | head -n1)
	[ -n "$img" ] || die "cannot resolve the kernel behind linux-image-cloud-amd64 $meta"
	dir=$MS_CACHE/kernels/$img-$meta
	if [ ! -f "$dir/VERSION" ]; then
		rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
		kernel_unpack "$img" "$meta" "$dir.tmp/root"
		# 6.x: /boot/vmlinuz-REL; 7.x: /usr/lib/modules/REL/vmlinuz.
		local vmlinuz rel
		vmlinuz=$(find "$dir.tmp/root" \( -name 'vmlinuz-*' -o -name vmlinuz \) -type f | head -n1 || true)
		[ -n "$vmlinuz" ] || die "no vmlinuz in $img"
		cp "$vmlinuz" "$dir.tmp/vmlinuz"
		rel=$(find "$dir.tmp/root" -path '*/modules/*/modules.order' | head -n1 || true)
		rel=${rel%/modules.order}
		for p in loop virtio_blk; do
			local ko
			ko=$(find "$dir.tmp/root/lib/modules" "$dir.tmp/root/usr/lib/modules" -name "$p.ko*" 2>/dev/null | head -n1 || true)
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
		rm -rf "$dir.tmp/root" "$dir"
		mv "$dir.tmp" "$dir"
	fi
	printf '%s\n' "$dir"
}
