# shellcheck shell=bash
# Booting a guest (part of tests/lib/vm.sh): the emulator, the
# accelerator, the kernel command line, one boot and its watchdog.

# The emulator of every boot: Debian 13's qemu-system-x86 (the newest in
# trixie and trixie-updates, resolved at run time), unpacked with the
# libraries it needs into $MS_CACHE/qemu/ (cache_get; mmdebstrap's extract
# variant: nothing is installed on the host) and started through that tree's own
# dynamic loader, so that a Debian 12 and a Debian 13 host run the same
# QEMU, and a faster one under TCG than Debian 12's 7.2 (docs/performance.md).
# MOUNTSAFE_QEMU=host runs the host's qemu-system-x86_64 instead.  Sets
# VM_QEMU (the command) and exports VM_QEMU_DIR (the unpacked tree; unset
# with the host's QEMU) for the stages a run starts.
VM_QEMU=()
vm_qemu() {
	local ver dir lib
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
	if [ -z "$dir" ] || [ ! -d "$dir" ]; then
		ver=$(newest_bin qemu-system-x86 '*' trixie trixie-updates)
		[ -n "$ver" ] || die "no qemu-system-x86 in trixie"
		# (No epoch in the path: ':' separates --library-path's entries.)
		dir=$(cache_get qemu "trixie-${ver#*:}" qemu_unpack "$ver")
		[ -n "$dir" ] || exit 1
	fi
	lib=$dir/usr/lib/x86_64-linux-gnu
	VM_QEMU=(env "QEMU_MODULE_DIR=$lib/qemu" "$lib/ld-linux-x86-64.so.2" --library-path "$lib"
		"$dir/usr/bin/qemu-system-x86_64" -L "$dir/usr/share/qemu" -L "$dir/usr/share/seabios")
	"${VM_QEMU[@]}" --version >/dev/null 2>&1 || die "the QEMU in ${dir#"$MS_CACHE"/} does not run"
	export VM_QEMU_DIR=$dir
}
# qemu_unpack TMP VERSION: vm_qemu's tree of qemu-system-x86 VERSION, made
# at TMP, with the version (epoch included) in .ok for vm_qemu_version.
qemu_unpack() {
	local tmp=$1 ver=$2 uri
	need_pkgs mmdebstrap
	uri=$(archive_uri)
	say "unpacking qemu-system-x86 $ver from trixie into qemu/trixie-${ver#*:}"
	mmdebstrap --mode=root --variant=extract --include="qemu-system-x86=$ver" \
		--aptopt='Acquire::Retries "3"' trixie "$tmp" \
		"deb $uri trixie main" "deb $uri trixie-updates main" >"$tmp.log" 2>&1 ||
		{ tail -n 20 "$tmp.log" >&2; die "mmdebstrap (qemu-system-x86 $ver) failed (log: $tmp.log)"; }
	echo "$ver" >"$tmp/.ok"
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
			# (A directory of its own: runs of one checkout may start at once.)
			mkdir -p "$VM_DIR"
			probe=$(mktemp -d "$VM_DIR/kvm-probe.XXXXXX")
			initramfs_make "$probe/initramfs.cpio" "$k"
			log=$probe/serial.log
			# The probe boots like every other guest (vm_boot), with KVM,
			# once: a guest KVM can run reaches /init in seconds, while
			# one it cannot stops at once ("KVM internal error ...
			# emulation failure" on QEMU's stderr, the console silent), and
			# two tries of a minute's silence each cost every run 2 minutes.
			VM_ACCEL=kvm
			vm_boot -o -k "$k" -i "$probe/initramfs.cpio" -l "$log" -m 256 -t 20 \
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
#   -a ARGS     kernel command line (console, panic, VM_KERNEL_ARGS added,
#               and MS_VM_APPEND last: a run's own extra arguments)
#   -l LOG      serial console log (ttyS0); -L LOG2 a second serial port
#   -m MiB      memory (1024), -s N vCPUs (1)
#   -t SECONDS  the guest is stopped when its console has been silent that
#               long (1800), or has run four times that long in all: a
#               guest that is slow because the host is loaded goes on, a
#               hung one does not
#   -o          one try (the accelerator's probe)
# Otherwise the guest is booted again, once, when it died before /init printed @@BOOT
# (seen under host load with TCG: a panic in early timer set-up); the first
# log is kept as LOG.first-try.  Returns QEMU's exit status; the seconds
# taken are appended to LOG.secs.  MS_QEMU_WRAPPER, when set, is a command
# QEMU's command line is handed to (it runs QEMU itself).
vm_boot() {
	local k='' initrd='' append='' log='' log2='' mem=1024 smp=1 tmo=1800 tries='1 2' OPTIND o try rc t0
	while getopts k:i:a:l:L:m:s:t:o o; do
		case $o in
		k) k=$OPTARG ;; i) initrd=$OPTARG ;; a) append=$OPTARG ;; l) log=$OPTARG ;;
		L) log2=$OPTARG ;; m) mem=$OPTARG ;; s) smp=$OPTARG ;; t) tmo=$OPTARG ;; o) tries=1 ;;
		*) die "vm_boot: bad option" ;;
		esac
	done
	shift $((OPTIND - 1))
	[ "${1:-}" != -- ] || shift
	local accel TIMEFORMAT='qemu: user %Us, system %Ss, wall %Rs'
	vm_accel
	read -ra accel <<<"$(vm_accel_opts)"
	t0=$(date +%s)
	for try in $tries; do
		rc=0
		: >"$log"
		[ -z "$log2" ] || : >"$log2"
		# The VM's CPU time is recorded too: wall time depends on the host's load.
		{ time vm_watch "$tmo" "$log" ${MS_QEMU_WRAPPER:+"$MS_QEMU_WRAPPER"} "${VM_QEMU[@]}" "${accel[@]}" -M q35 -m "$mem" -smp "$smp" \
			-nodefaults -no-user-config -display none -no-reboot \
			-serial "file:$log" ${log2:+-serial "file:$log2"} \
			-kernel "${KDIR[$k]}/vmlinuz" -initrd "$initrd" \
			-append "console=ttyS0 panic=-1 no_timer_check $VM_KERNEL_ARGS $append ${MS_VM_APPEND:-}" \
			"$@" >>"$log.qemu" 2>&1 || rc=$?; } 2>>"$log.qemu"
		[ "$rc" = 0 ] || echo "qemu exited with $rc" >>"$log.qemu"
		grep -q '^@@BOOT' "$log" 2>/dev/null && break
		if [ "$try" = 1 ] && [ "$tries" != 1 ]; then
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
