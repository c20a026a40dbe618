# shellcheck shell=bash
# The one host-side VM layer of the mountsafe tests, sourced by every stage
# (after scripts/common.sh):
#
#   kernels      vm_kernels [k6,k7] -> KDIR[k] KREL[k]: Debian cloud kernels,
#                newest of their series, resolved at run time (what k6 and
#                k7 are: matrix.conf)
#   modules      kernel_modules K: the kernel's whole module tree (cached)
#   root trees   rootfs_tarball SUITE PKGS: a cached debootstrap (minbase+PKGS)
#   initramfs    initramfs_make OUT KERNELS DIR...: busybox, the one guest
#                /init (tests/lib/guest/init), the GUEST_KMODS modules of the
#                kernels, plus the given directories' contents
#   emulator     vm_qemu: Debian 13's QEMU, unpacked in the cache (cached);
#                MOUNTSAFE_QEMU=host runs the host's
#   accelerator  vm_accel: kvm when a probe boot reaches /init, else tcg;
#                MOUNTSAFE_ACCEL=kvm|tcg forces it
#   boot         vm_boot: one QEMU run, booted again once if the guest died
#                before /init printed @@BOOT
#   parallel     vm_parallel FUNC JOB...: FUNC JOB for every job, as many at
#                once as there are cores (MOUNTSAFE_VMS), in slots shared
#                with the other stages of the run (VM_POOL)
#
# Guests talk back on their serial console (see tests/lib/guest/init):
#   @@BOOT ...                        /init ran
#   @@BEGIN <toolset> <scenario>      a scenario's output follows
#   @@R <toolset> <scenario> <outcome> <seconds> <checks> <note>  (tab-separated)
#   @@DONE <uptime>                   the guest finished its work

# shellcheck disable=SC2034 # used by the stages
MS_TESTS=$MS_ROOT/tests
VM_DIR=$MS_BUILD/vm
# Where the guests' scratch disks go: a tmpfs (/dev/shm) when the host has
# one, so that what a guest writes never reaches the host's disk (less CPU
# time: docs/performance.md).  Only with room for two VMs' disks and the
# util-linux suite's images, 8 GiB: a container's small /dev/shm would fill.
VM_SCRATCH=$VM_DIR
if [ -w /dev/shm ] && [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] &&
	[ $(($(stat -f -c '%a * %S' /dev/shm) / 1048576)) -ge 8192 ]; then
	VM_SCRATCH=/dev/shm
fi
# vm_scratch NAME: a new directory in VM_SCRATCH for a stage's scratch files
# (NAME.PID.XXXXXX, PID the stage's own); the stage removes it when it exits
# (an EXIT trap).  A stage killed with SIGKILL cannot, and on the tmpfs its
# files would hold memory until the machine restarts: the directories of
# stages that no longer run are removed first.
vm_scratch() {
	local d pid
	for d in "$VM_SCRATCH/mountsafe-"*.*.*; do
		[ -d "$d" ] || continue
		pid=${d%.*} pid=${pid##*.}
		[ -d "/proc/$pid" ] || rm -rf "$d"
	done
	mktemp -d "$VM_SCRATCH/mountsafe-$1.$$.XXXXXX"
}
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
# (MS_CONTROL_NO_GUEST_TOOLS: leave them out, for the negative control.)
guest_tools_payload() {
	local p=$1 c
	[ -z "${MS_CONTROL_NO_GUEST_TOOLS:-}" ] || return 0
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

# The emulator of every boot: Debian 13's qemu-system-x86 (the newest in
# trixie and trixie-updates, resolved at run time), unpacked with the
# libraries it needs into $MS_CACHE/qemu/ (mmdebstrap's extract variant:
# nothing is installed on the host) and started through that tree's own
# dynamic loader, so that a Debian 12 and a Debian 13 host run the same
# QEMU, and a faster one under TCG than Debian 12's 7.2 (docs/performance.md).
# MOUNTSAFE_QEMU=host runs the host's qemu-system-x86_64 instead.  Sets
# VM_QEMU (the command) and exports VM_QEMU_DIR (the unpacked tree; unset
# with the host's QEMU) for the stages a run starts.
VM_QEMU=()
vm_qemu() {
	local ver dir lib uri
	[ ${#VM_QEMU[@]} -eq 0 ] || return 0
	case ${MOUNTSAFE_QEMU:-trixie} in
	host)
		need_pkgs qemu-system-x86
		VM_QEMU=(qemu-system-x86_64)
		unset VM_QEMU_DIR
		return 0
		;;
	trixie) ;;
	*) die "MOUNTSAFE_QEMU must be trixie or host, not $MOUNTSAFE_QEMU" ;;
	esac
	dir=${VM_QEMU_DIR:-}
	if [ -z "$dir" ] || [ ! -f "$dir/.ok" ]; then
		ver=$(newest_bin qemu-system-x86 '*' trixie trixie-updates)
		[ -n "$ver" ] || die "no qemu-system-x86 in trixie"
		# (No epoch in the path: ':' separates --library-path's entries.)
		dir=$MS_CACHE/qemu/trixie-${ver#*:}
		mkdir -p "$MS_CACHE/qemu"
		(
			flock 9
			[ ! -f "$dir/.ok" ] || exit 0
			need_pkgs mmdebstrap
			uri=$(archive_uri)
			say "unpacking qemu-system-x86 $ver from trixie into ${dir#"$MS_CACHE"/}"
			rm -rf "$dir"
			mmdebstrap --mode=root --variant=extract --include="qemu-system-x86=$ver" \
				--aptopt='Acquire::Retries "3"' trixie "$dir" \
				"deb $uri trixie main" "deb $uri trixie-updates main" >"$dir.log" 2>&1 ||
				{ tail -n 20 "$dir.log" >&2; die "mmdebstrap (qemu-system-x86 $ver) failed (log: $dir.log)"; }
			echo "$ver" >"$dir/.ok"
			# Keep the newest other version only.
			beyond_newest 1 "$MS_CACHE/qemu" -mindepth 1 -maxdepth 1 -type d -name 'trixie-*' \
				! -path "$dir" | while read -r d; do rm -rf "$d" "$d.log"; done
		) 9>"$MS_CACHE/qemu/lock" || exit 1
	fi
	lib=$dir/usr/lib/x86_64-linux-gnu
	VM_QEMU=(env "QEMU_MODULE_DIR=$lib/qemu" "$lib/ld-linux-x86-64.so.2" --library-path "$lib"
		"$dir/usr/bin/qemu-system-x86_64" -L "$dir/usr/share/qemu" -L "$dir/usr/share/seabios")
	"${VM_QEMU[@]}" --version >/dev/null 2>&1 || die "the QEMU in ${dir#"$MS_CACHE"/} does not run"
	export VM_QEMU_DIR=$dir
}
# vm_qemu_version: the emulator, for the manifest.
vm_qemu_version() {
	local v
	vm_qemu
	v=$("${VM_QEMU[@]}" --version | head -n1)
	if [ -n "${VM_QEMU_DIR:-}" ]; then
		echo "$v (Debian 13's qemu-system-x86 $(cat "$VM_QEMU_DIR/.ok"), unpacked in ${VM_QEMU_DIR#"$MS_CACHE"/})"
	else
		echo "$v (the host's)"
	fi
}

# vm_accel: decide the accelerator for this run into VM_ACCEL, and export
# it as MOUNTSAFE_ACCEL so that the stages inherit the decision.  KVM only
# when a probe guest really reaches /init with it: on some hosts /dev/kvm
# exists but guests crash.
VM_ACCEL=${MOUNTSAFE_ACCEL:-}
vm_accel() {
	local k probe log
	vm_qemu
	if [ -z "$VM_ACCEL" ]; then
		VM_ACCEL=tcg
		if [ -w /dev/kvm ]; then
			k=${MS_KERNELS:-$MATRIX_KERNELS}
			k=${k%%,*}
			vm_kernels "$k"
			probe=$VM_DIR/kvm-probe
			mkdir -p "$probe"
			initramfs_make "$probe/initramfs.cpio" "$k"
			log=$probe/serial.log
			# The probe boots like every other guest (vm_boot), with KVM.
			VM_ACCEL=kvm
			vm_boot -k "$k" -i "$probe/initramfs.cpio" -l "$log" -m 256 -t 60 \
				-a "quiet ms.mode=probe" || true
			VM_ACCEL=tcg
			grep -q '^@@BOOT' "$log" 2>/dev/null && VM_ACCEL=kvm
			rm -rf "$probe"
		fi
	fi
	case $VM_ACCEL in kvm | tcg) ;; *) die "MOUNTSAFE_ACCEL must be kvm or tcg, not $VM_ACCEL" ;; esac
	export MOUNTSAFE_ACCEL=$VM_ACCEL
}
# Under TCG the CPU is QEMU's "max" without ERMS and FSRM (with them the
# guest's "rep movsb"/"rep stosb" copies are emulated a byte at a time) and
# without AVX and AVX2 (no YMM state to switch): less guest time, measured
# in docs/performance.md.  How the kernel and glibc copy and scan memory
# changes nothing the tests look at.
vm_accel_opts() {
	case $VM_ACCEL in
	kvm) echo -accel kvm -cpu host ;;
	*) echo -accel tcg -cpu max,-erms,-fsrm,-avx,-avx2 ;;
	esac
}

# Kernel arguments of every test boot (what each saves: docs/performance.md).
# mitigations=off: under TCG the Spectre mitigations are emulated instruction
# by instruction, and nothing the tests look at depends on them.
# hung_task_panic=1: a task blocked in the kernel for 120 s panics the guest,
# its stack in the console log, instead of a silent guest waiting for the
# host's watchdog (BOOT_TIMEOUT).
# ms.debugfs=FILE:VALUE,...: debugfs files written in this order by
# tests/lib/guest/debugfs.sh (the harness's /init, and the init-top script of
# the system stage's images with Debian's own initramfs):
# sched/features NO_HRTICK, NO_HRTICK_DL: 7.x's high-resolution tick off (6.12
# has it off), a timer at every task switch that TCG emulates;
# fault_around_bytes 2 MiB instead of 64 KiB: fewer emulated page faults when
# a tool maps its program and libraries.  Neither changes what the tests see.
VM_KERNEL_ARGS="mitigations=off hung_task_panic=1 ms.debugfs=sched/features:NO_HRTICK,sched/features:NO_HRTICK_DL,fault_around_bytes:2097152"

# vm_boot [options] -- QEMU-ARGS...: one VM run.
#   -k K        kernel (k6, k7)
#   -i FILE     initramfs
#   -a ARGS     kernel command line (console, panic, VM_KERNEL_ARGS added)
#   -l LOG      serial console log (ttyS0); -L LOG2 a second serial port
#   -m MiB      memory (1024), -s N vCPUs (1)
#   -t SECONDS  the guest is stopped when its console has been silent that
#               long (1800), or has run four times that long in all: a
#               guest that is slow because the host is loaded goes on, a
#               hung one does not
# The guest is booted again, once, when it died before /init printed @@BOOT
# (seen under host load with TCG: a panic in early timer set-up); the first
# log is kept as LOG.first-try.  Returns QEMU's exit status; the seconds
# taken are appended to LOG.secs.
vm_boot() {
	local k='' initrd='' append='' log='' log2='' mem=1024 smp=1 tmo=1800 OPTIND o try rc t0
	while getopts k:i:a:l:L:m:s:t: o; do
		case $o in
		k) k=$OPTARG ;; i) initrd=$OPTARG ;; a) append=$OPTARG ;; l) log=$OPTARG ;;
		L) log2=$OPTARG ;; m) mem=$OPTARG ;; s) smp=$OPTARG ;; t) tmo=$OPTARG ;;
		*) die "vm_boot: bad option" ;;
		esac
	done
	shift $((OPTIND - 1))
	[ "${1:-}" != -- ] || shift
	local accel TIMEFORMAT='qemu: user %Us, system %Ss, wall %Rs'
	vm_accel
	read -ra accel <<<"$(vm_accel_opts)"
	t0=$(date +%s)
	for try in 1 2; do
		rc=0
		: >"$log"
		[ -z "$log2" ] || : >"$log2"
		# The VM's CPU time is recorded too: wall time depends on the host's load.
		{ time vm_watch "$tmo" "$log" "${VM_QEMU[@]}" "${accel[@]}" -M q35 -m "$mem" -smp "$smp" \
			-nodefaults -no-user-config -display none -no-reboot \
			-serial "file:$log" ${log2:+-serial "file:$log2"} \
			-kernel "${KDIR[$k]}/vmlinuz" -initrd "$initrd" \
			-append "console=ttyS0 panic=-1 no_timer_check $VM_KERNEL_ARGS $append ${MS_CONTROL_RDINIT:+rdinit=$MS_CONTROL_RDINIT} ${MS_CONTROL_HANG:+ms.mode=hang}" \
			"$@" >>"$log.qemu" 2>&1 || rc=$?; } 2>>"$log.qemu"
		[ "$rc" = 0 ] || echo "qemu exited with $rc" >>"$log.qemu"
		grep -q '^@@BOOT' "$log" 2>/dev/null && break
		if [ "$try" = 1 ]; then
			cp "$log" "$log.first-try"
			echo "the guest died before /init (kept ${log##*/}.first-try); booting again" >>"$log.qemu"
		fi
	done
	echo "$(($(date +%s) - t0))" >"$log.secs"
	return "$rc"
}

# vm_watch IDLE LOG CMD...: run CMD (a QEMU); stop it when LOG has not grown
# for IDLE seconds or CMD has run 4 x IDLE seconds.  Returns CMD's status
# (124 when stopped, as timeout(1) does).
vm_watch() {
	local idle=$1 log=$2 pid size last=-1 quiet t start=$SECONDS changed=$SECONDS rc=0
	shift 2
	"$@" &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		size=$(stat -c %s "$log" 2>/dev/null || echo 0)
		[ "$size" = "$last" ] || { last=$size changed=$SECONDS; }
		t=$((SECONDS - start)) quiet=$((SECONDS - changed))
		if [ "$quiet" -ge "$idle" ] || [ "$t" -ge $((4 * idle)) ]; then
			echo "stopped: console silent for ${quiet}s, ${t}s in all (limit ${idle}s silent, $((4 * idle))s in all)" >&2
			kill "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
			return 124
		fi
	done
	wait "$pid" || rc=$?
	return "$rc"
}

# vm_parallel FUNC JOB...: run "FUNC JOB" for each JOB, at most VM_SLOTS at
# a time (one per core: a TCG vCPU is one host thread, and more VMs than
# cores took more CPU time in all: docs/performance.md).
#
# The stages tests/run runs side by side share its VM_SLOTS slots: VM_POOL
# is then a directory of lock files, one per slot, and every job holds one
# (flock) while it runs, so that a stage's VMs start as the previous
# stage's VMs end, and never more run at once than there are slots.  When the
# last job holds its slot, vm_parallel creates the file VM_DISPATCHED (when
# set): tests/run starts the next stage then, not before, so that no VM of
# a later stage takes a slot a job of this one waits for.
VM_SLOTS=${MOUNTSAFE_VMS:-$(nproc)}
vm_parallel() {
	local f=$1 j running=0 i=0 n
	shift
	n=$#
	[ "$n" -gt 0 ] || vm_dispatched
	for j in "$@"; do
		i=$((i + 1))
		(
			vm_slot_take
			[ "$i" -lt "$n" ] || vm_dispatched
			"$f" "$j"
		) &
		running=$((running + 1))
		if [ "$running" -ge "$VM_SLOTS" ]; then
			wait -n || true
			running=$((running - 1))
		fi
	done
	wait || true
}
# vm_slot_take: hold one of VM_POOL's slots until this (sub)shell and what
# it started have exited; nothing without VM_POOL.
vm_slot_take() {
	local s
	[ -n "${VM_POOL:-}" ] || return 0
	while :; do
		for ((s = 0; s < VM_SLOTS; s++)); do
			exec {VM_SLOT_FD}>>"$VM_POOL/slot-$s"
			flock -n "$VM_SLOT_FD" && return 0
			exec {VM_SLOT_FD}>&-
		done
		sleep 1
	done
}
vm_dispatched() { [ -z "${VM_DISPATCHED:-}" ] || : >"$VM_DISPATCHED"; }

# vm_stop_reason LOG: why a guest that had started /init stopped before it
# reported everything, when the logs say: its kernel panicked (the panic's
# message, e.g. a task blocked for good: hung_task_panic above), or the
# host's watchdog stopped it (vm_watch's line in LOG.qemu).  Prints nothing
# when neither did.
vm_stop_reason() {
	local r
	r=$(tr -d '\r' <"$1" 2>/dev/null | sed -n 's/.*Kernel panic - not syncing: //p' | head -n1)
	if [ -n "$r" ]; then
		echo "its kernel panicked: $r"
		return 0
	fi
	r=$(sed -n 's/^stopped: //p' "$1.qemu" 2>/dev/null | tail -n1)
	[ -z "$r" ] || echo "the host's watchdog stopped it: $r"
}

# guest_rows LOG: the @@R lines of a serial log, as TSV without the tag
# (toolset, scenario, outcome, seconds, checks, note).
guest_rows() {
	[ -f "$1" ] || return 0
	tr -d '\r' <"$1" 2>/dev/null | grep $'^@@R\t' | cut -f2- || true
}
