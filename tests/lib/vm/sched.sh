# shellcheck shell=bash
# The scheduler (part of tests/lib/vm.sh): jobs in VM slots shared by the
# stages of a run.

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
