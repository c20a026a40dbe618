# shellcheck shell=dash
# mountsafe benchmark, sourced by the guest /init with ms.mode=bench (busybox
# ash).  For every tool set of ms.toolsets= it times the operations the
# patches touch, rounds interleaved (stock and patched one after the other,
# so that a drift of the host's speed hits both alike), and prints
#   @@BENCH <measure> <toolset> <round> <seconds>     (tab-separated)
# Measures (each long enough, by repeating an operation inside the round,
# that TCG's and the host's jitter is small against it):
#   loop-cycles   50 x (mount -o loop IMG; umount)
#   e2fsck-fn     5 x e2fsck -fn of a filled 1.2 GiB filesystem (unmounted)
#   online-grow   5 x resize2fs of a mounted 256 MiB filesystem to 1 GiB
#                 (only resize2fs is timed; mke2fs and mount are not)
#   tune2fs-5     20 x tune2fs -c -C -i -e -m on a mounted filesystem, the
#                 values alternating so that every call changes them
#   tune2fs-8t    10 x tune2fs -c -C on a mounted 8 TiB filesystem (a
#                 sparse file on a tmpfs, loop-attached), alternating: a
#                 full open of the filesystem reads all 65536 group
#                 descriptors, 4 MiB
D1=/dev/vda
D2=/dev/vdb
MNT=/mnt/a
BIG=/mnt/big
mount -t sysfs sys /sys
mount -t tmpfs -o size=256m tmp /tmp
mkdir -p $MNT $BIG /big /run
ln -sf /proc/self/mounts /etc/mtab 2>/dev/null
i=0
while [ ! -b $D2 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done

bin() {	# bin TOOLSET NAME: the tool's path in the tool set
	local d
	for d in sbin usr/sbin bin usr/bin; do
		[ -x "/ts/$1/$d/$2" ] && { echo "/ts/$1/$d/$2"; return; }
	done
	echo "/nonexistent/$1/$2"
}
now() { cut -d' ' -f1 /proc/uptime; }
report() {	# report MEASURE TOOLSET ROUND T0 T1 RC
	if [ "$6" = 0 ]; then
		printf '@@BENCH\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(awk -v a="$4" -v b="$5" 'BEGIN{printf "%.2f", b - a}')"
	else
		printf '@@BENCH\t%s\t%s\t%s\tfailed(%s)\n' "$1" "$2" "$3" "$6"
	fi
}

tunes() {	# tunes TUNE2FS N DEVICE OPTIONS-A OPTIONS-B: N x tune2fs, the
	# options alternating so that every call changes the values; the
	# status of the first that fails
	local i=0 o
	while [ $i -lt "$2" ]; do
		o=$4
		[ $((i % 2)) = 0 ] || o=$5
		# shellcheck disable=SC2086 # the options, one word each
		"$1" $o "$3" >/dev/null 2>&1 || return
		i=$((i + 1))
	done
}

toolsets=$(arg toolsets | tr ',' ' ')
rounds=$(arg rounds)
rounds=${rounds:-3}

# The filled filesystem for e2fsck: 4000 files in 40 directories and
# 600 MiB in large files.
$(bin harness mke2fs) -q -F -t ext4 $D1 1200M
mount $D1 $MNT
d=0
while [ $d -lt 40 ]; do
	mkdir $MNT/d$d
	f=0
	while [ $f -lt 100 ]; do echo "$d $f" >$MNT/d$d/f$f; f=$((f + 1)); done
	d=$((d + 1))
done
f=0
while [ $f -lt 6 ]; do dd if=/dev/zero of=$MNT/big$f bs=1M count=100 2>/dev/null; f=$((f + 1)); done
umount $MNT
dd if=/dev/zero of=/tmp/img bs=1M count=0 seek=32 2>/dev/null
$(bin harness mke2fs) -q -F -t ext4 /tmp/img

# The 8 TiB filesystem for tune2fs-8t: a sparse file on a tmpfs of its own
# (a tmpfs's size= bounds the pages it holds, not a file's size; mke2fs
# writes about 200 MiB: superblock, descriptor and reserved GDT backups,
# bitmaps), the inode tables and the journal left unwritten, and mounted
# with noinit_itable so that the kernel does not zero the inode tables
# behind the measure.
mount -t tmpfs -o size=1g big /big
dd if=/dev/zero of=/big/img bs=1M count=0 seek=8388608 2>/dev/null
$(bin harness mke2fs) -q -F -t ext4 -E lazy_itable_init=1,lazy_journal_init=1,nodiscard /big/img
bigdev=$($(bin harness losetup) -f --show /big/img)
mount -o noinit_itable "$bigdev" $BIG
echo "@@BENCH-BIG $(now) $bigdev $(du -k /big/img | cut -f1) KiB on the tmpfs"
echo "@@BENCH-READY $(now)"

r=1
while [ "$r" -le "$rounds" ]; do
	for ts in $toolsets; do
		m=$(bin "$ts" mount) u=$(bin "$ts" umount)
		t0=$(now) rc=0 i=0
		while [ $i -lt 50 ]; do
			{ $m -o loop /tmp/img $MNT && $u $MNT; } || { rc=1; break; }
			i=$((i + 1))
		done
		report loop-cycles "$ts" "$r" "$t0" "$(now)" $rc

		e=$(bin "$ts" e2fsck) t0=$(now) rc=0 i=0
		while [ $i -lt 5 ]; do
			$e -fn $D1 >/dev/null 2>&1 || { rc=$?; break; }
			i=$((i + 1))
		done
		report e2fsck-fn "$ts" "$r" "$t0" "$(now)" $rc

		rs=$(bin "$ts" resize2fs) rc=0 i=0 sum=0
		while [ $i -lt 5 ]; do
			[ $i = 0 ] || umount $MNT
			$(bin harness mke2fs) -q -F -t ext4 $D2 256M
			mount $D2 $MNT
			t0=$(now)
			$rs $D2 1G >/dev/null 2>&1 || { rc=$?; break; }
			sum=$(awk -v s="$sum" -v a="$t0" -v b="$(now)" 'BEGIN{print s + b - a}')
			i=$((i + 1))
		done
		report online-grow "$ts" "$r" 0 "$sum" $rc

		tu=$(bin "$ts" tune2fs) t0=$(now) rc=0
		tunes "$tu" 20 $D2 "-c 30 -C 5 -i 2w -e remount-ro -m 3" \
			"-c 25 -C 3 -i 3w -e continue -m 4" || rc=$?
		report tune2fs-5 "$ts" "$r" "$t0" "$(now)" $rc
		umount $MNT

		t0=$(now) rc=0
		tunes "$tu" 10 "$bigdev" "-c 30 -C 5" "-c 25 -C 3" || rc=$?
		report tune2fs-8t "$ts" "$r" "$t0" "$(now)" $rc
	done
	r=$((r + 1))
done
echo "@@DONE $(now)"
sync
poweroff -f
