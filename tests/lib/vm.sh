# shellcheck shell=bash
# The one host-side VM layer of the mountsafe tests, sourced by every stage
# (after scripts/common.sh); its parts are in tests/lib/vm/:
#   artifacts.sh  cache_get, kernels, modules, root trees, initramfs, payloads
#   boot.sh       emulator, accelerator, vm_boot and its watchdog
#   sched.sh      vm_parallel and the shared VM slots
#   report.sh     vm_stop_reason, guest_rows
#
#   cache        cache_get KIND KEY PRODUCER: each cached artifact below is
#                an entry $MS_CACHE/KIND/KEY, made once under a lock; one
#                unused for CACHE_UNUSED_HOURS goes when its kind gets a new one
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

# shellcheck source=tests/lib/vm/artifacts.sh
. "$MS_TESTS/lib/vm/artifacts.sh"
# shellcheck source=tests/lib/vm/boot.sh
. "$MS_TESTS/lib/vm/boot.sh"
# shellcheck source=tests/lib/vm/sched.sh
. "$MS_TESTS/lib/vm/sched.sh"
# shellcheck source=tests/lib/vm/report.sh
. "$MS_TESTS/lib/vm/report.sh"
