# shellcheck shell=bash
# What a guest left behind (part of tests/lib/vm.sh): why it stopped, and
# its result lines.

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
