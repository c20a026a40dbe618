#!/bin/bash
# force-fsck-reproducer.sh: does the error flag that EXT4_IOC_SET_TUNE_SB_PARAM
# sets with EXT4_TUNE_FL_FORCE_FSCK (Linux 6.18 and later) outlast the mount?
#
#   sudo docs/upstream/force-fsck-reproducer.sh [WORKDIR]
#
# Needs root, a kernel with the tune ioctl (6.18+), loop devices, ext4,
# e2fsprogs (mkfs.ext4, tune2fs, dumpe2fs, e2fsck), util-linux (losetup,
# mount) and python3 (it issues the ioctl; nothing else does yet).  Works in
# WORKDIR (default: a new directory under ${TMPDIR:-/tmp}) on 64 MiB image
# files attached to loop devices, and removes them at the end.  It changes
# no other filesystem and does not depend on bdev_allow_write_mounted.
#
# Four cases, each on a fresh filesystem:
#   control  the flag set by tune2fs while unmounted, then a mount and a
#            clean unmount
#   A        mounted read-write, flag set through the ioctl, clean unmount
#   B        the same, but remounted read-only before the unmount
#   C        as B on a filesystem without a journal
# For each it prints the state dumpe2fs reads while mounted and after the
# unmount, and what "e2fsck -p" then does.  It reports what it observes and
# asserts nothing: exit 0 when every case ran, 1 when it could not run.
# Part of the mountsafe documentation (docs/upstream/ext4-force-fsck-report.md);
# not run by its test suite.
set -euo pipefail

die() { printf 'error: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root (losetup, mount, the ioctl needs CAP_SYS_ADMIN)"
for t in mkfs.ext4 tune2fs dumpe2fs e2fsck losetup mount umount mountpoint python3; do
	command -v "$t" >/dev/null || die "$t is missing"
done
kver=$(uname -r)
IFS=. read -r kmaj kmin _ <<<"$kver"
if [ "$kmaj" -lt 6 ] || { [ "$kmaj" -eq 6 ] && [ "${kmin%%[!0-9]*}" -lt 18 ]; }; then
	die "Linux $kver: the tune ioctl needs 6.18 or later"
fi

OWN_WORK=0
if [ $# -gt 0 ]; then
	WORK=$1
	mkdir -p "$WORK"
	if [ -e "$WORK/img" ] || [ -e "$WORK/mnt" ]; then
		die "$WORK/img or $WORK/mnt exists already"
	fi
else
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/force-fsck.XXXXXX")
	OWN_WORK=1
fi
mkdir "$WORK/mnt"
MNT=$WORK/mnt
DEV=''

teardown() {
	if mountpoint -q "$MNT"; then umount "$MNT" || true; fi
	if [ -n "$DEV" ]; then losetup -d "$DEV" || true; fi
	DEV=''
}
# Remove what this script made: the image and the mount point, and WORK
# itself when it made it.
cleanup() {
	teardown
	rm -f "$WORK/img"
	rmdir "$MNT" 2>/dev/null || true
	if [ "$OWN_WORK" = 1 ]; then rmdir "$WORK" 2>/dev/null || true; fi
}
trap cleanup EXIT

# new_fs MKFS-OPTION...: a fresh 64 MiB ext4 image on a loop device ($DEV).
new_fs() {
	teardown
	rm -f "$WORK/img"
	truncate -s 64M "$WORK/img"
	mkfs.ext4 -q -F "$@" "$WORK/img"
	DEV=$(losetup --find --show "$WORK/img")
}

state() { dumpe2fs -h "$DEV" 2>/dev/null | sed -n 's/^Filesystem state: *//p'; }

# force_fsck_ioctl MOUNTPOINT: EXT4_IOC_GET_TUNE_SB_PARAM, then
# EXT4_IOC_SET_TUNE_SB_PARAM with set_flags = EXT4_TUNE_FL_FORCE_FSCK and
# every other field as GET returned it (the kernel copies mount_opts
# whatever set_flags says).  Tries the 232-byte struct (the size since the
# padding fix, and on 64-bit since 6.18.0) and the 228-byte one of 6.18.0
# on 32-bit x86.
force_fsck_ioctl() {
	python3 - "$1" <<'EOF'
import errno, fcntl, os, struct, sys

FORCE_FSCK = 0x00008000            # EXT4_TUNE_FL_FORCE_FSCK


def ioc(direction, size, nr):      # _IOC(dir, 'f', nr, size)
    return (direction << 30) | (size << 16) | (ord('f') << 8) | nr


fd = os.open(sys.argv[1], os.O_RDONLY)
for size in (232, 228):
    buf = bytearray(size)
    try:
        fcntl.ioctl(fd, ioc(2, size, 45), buf, True)   # _IOR: GET
    except OSError as e:
        if e.errno in (errno.ENOTTY, errno.EINVAL):
            continue
        raise
    supported = struct.unpack_from('=I', buf, 0)[0]
    if not supported & FORCE_FSCK:
        print('  the kernel does not offer EXT4_TUNE_FL_FORCE_FSCK')
        sys.exit(3)
    struct.pack_into('=I', buf, 0, FORCE_FSCK)
    fcntl.ioctl(fd, ioc(1, size, 46), bytes(buf))      # _IOW: SET
    print('  EXT4_IOC_SET_TUNE_SB_PARAM (%d-byte struct, '
          'set_flags=EXT4_TUNE_FL_FORCE_FSCK): accepted' % size)
    sys.exit(0)
print('  no EXT4_IOC_GET_TUNE_SB_PARAM on this kernel')
sys.exit(2)
EOF
}

# after_umount CASE: the state and what e2fsck -p does, and the verdict.
after_umount() {
	local s out rc=0
	s=$(state)
	echo "  after the unmount:  $s"
	out=$(e2fsck -p "$DEV" 2>&1) || rc=$?
	echo "  e2fsck -p (exit $rc): $(head -n1 <<<"$out")"
	case $s in
	*error*) RESULT[$1]="flag kept ($s)" ;;
	*) RESULT[$1]="flag lost ($s)" ;;
	esac
}

# ioctl_case CASE rw|ro MKFS-OPTION...: on a fresh filesystem mounted
# read-write, set the flag through the ioctl; with "ro", remount read-only;
# then unmount.
ioctl_case() {
	local name=$1 remount=$2
	shift 2
	new_fs "$@"
	mount "$DEV" "$MNT"
	force_fsck_ioctl "$MNT"
	sync
	echo "  while mounted rw:   $(state)"
	if [ "$remount" = ro ]; then
		mount -o remount,ro "$MNT"
		echo "  after remount,ro:   $(state)"
	fi
	umount "$MNT"
	after_umount "$name"
}

declare -A RESULT
echo "Linux $kver; bdev_allow_write_mounted on the command line:" \
	"$(grep -o 'bdev_allow_write_mounted=[^ ]*' /proc/cmdline || echo 'not given')"

echo
echo "control: error flag set by tune2fs on the unmounted filesystem, then mount rw and umount"
new_fs
tune2fs -E force_fsck "$DEV" >/dev/null
echo "  before the mount:   $(state)"
mount "$DEV" "$MNT"
echo "  while mounted rw:   $(state)"
umount "$MNT"
after_umount control

echo
echo "A: journal, mounted rw, FORCE_FSCK through the ioctl, then umount"
ioctl_case A rw
echo
echo "B: journal, mounted rw, FORCE_FSCK through the ioctl, mount -o remount,ro, then umount"
ioctl_case B ro
echo
echo "C: no journal, mounted rw, FORCE_FSCK through the ioctl, mount -o remount,ro, then umount"
ioctl_case C ro -O ^has_journal

echo
echo "Summary (Linux $kver):"
for c in control A B C; do printf '  %-8s %s\n' "$c" "${RESULT[$c]}"; done
