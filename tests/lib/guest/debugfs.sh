# shellcheck shell=sh
# ms_debugfs MOUNTPOINT: the debugfs settings of the kernel command line's
# ms.debugfs=FILE:VALUE,... (VM_KERNEL_ARGS, tests/lib/vm.sh), written in
# their order with debugfs mounted on MOUNTPOINT for the moment (a file may
# come more than once: sched/features takes one feature a write); then what
# each file holds is printed, once a file.  A kernel without a file keeps
# its default.  Plain sh, mount and umount only: it runs in the harness's
# /init (busybox) and in the init-top script of Debian's own initramfs in
# the system stage's images (busybox or klibc).
ms_debugfs() {
	_dbg_m=$1 _dbg_v='' _dbg_shown=' ' _dbg_ifs=$IFS
	read -r _dbg_x </proc/cmdline
	for _dbg_a in $_dbg_x; do
		case $_dbg_a in ms.debugfs=*) _dbg_v=${_dbg_a#ms.debugfs=} ;; esac
	done
	[ -n "$_dbg_v" ] || return 0
	mount -t debugfs debugfs "$_dbg_m" || return 0
	IFS=,
	for _dbg_f in $_dbg_v; do
		echo "${_dbg_f#*:}" 2>/dev/null >"$_dbg_m/${_dbg_f%%:*}"
	done
	for _dbg_f in $_dbg_v; do
		_dbg_f=${_dbg_f%%:*}
		case $_dbg_shown in *" $_dbg_f "*) continue ;; esac
		_dbg_shown="$_dbg_shown$_dbg_f "
		_dbg_x='none: no such file'
		read -r _dbg_x 2>/dev/null <"$_dbg_m/$_dbg_f"
		echo "# debugfs $_dbg_f: $_dbg_x"
	done
	IFS=$_dbg_ifs
	umount "$_dbg_m"
}
