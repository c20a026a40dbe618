# shellcheck shell=dash
# mountsafe scenario runner, sourced by the guest /init (tests/lib/guest/init)
# with ms.mode=matrix; busybox ash.
#
# One boot = one (kernel, bdev_allow_write_mounted) pair, or one shard of it
# (ms.shard=I/N: every N-th (tool set, scenario) pair from the I-th).  It
# runs every scenario for every tool set and prints, on the serial console:
#   @@BEGIN <toolset> <scenario>
#     | ...   the scenario's own output and the after-checks' findings
#   @@R <toolset> <scenario> <outcome> <seconds> <checks> <note>   (tab-separated)
# and @@DONE at the end.  The host (tests/stages/matrix) decides the verdicts.
#
# A scenario is a file tests/scenarios/<id>, sourced in a subshell.  Header
# lines (read by the host and by this runner):
#   #@ description <text>
#   #@ requires <word>...      loop | disks=2 | fuse | lvm | e2fsck-static
#                              (unmet -> reported as skip, naming it; the
#                              matrix stage fails such a row as "unmet")
#   #@ expect <toolset-glob> <switch 0|1|*> <kernel-glob> <works|refused|error>
#                              first matching line wins
#   #@ dmesg-allow <regex>     kernel messages this scenario may cause
#   #@ waits <why>             it spends most of its time asleep (a tool's
#                              own sleep or retry loop): the host runs the
#                              scenarios marked so in a boot of their own
#                              beside the others (tests/stages/matrix)
# It defines run() and may define cleanup().  run() ends in one of:
#   returns normally            -> outcome "works"
#   refused "why"               -> outcome "refused" (the kernel's EBUSY reached the user)
#   fail "why"                  -> outcome "error"
# Helpers: try CMD... (run it; on failure decide refused/error from its
# output with is_refusal, tests/lib/guest/refusal.sh), expect_rc RC CMD...,
# mkfs DEV [SIZE] [mke2fs options] (make a filesystem with the harness's
# mke2fs and register DEV for the after-checks), fill DIR DEV (write test
# files, remember checksums), golden FILE (its lines are a message a user
# reads: compared with tests/golden/<id>.out), dev_written VAR DEV (VAR = sectors written
# to DEV so far: two equal readings around a command prove it wrote
# nothing), log, tool NAME ARGS (a tool of the tool set under test whose
# name is not a shell word, e.g. fsck.ext4), is_refusal FILE,
# has_tune_ioctl (the kernel has the ext4 tune ioctl).  Every tool
# of the tool set under test (mount, losetup, resize2fs, tune2fs, ...) is a
# shell function calling that tool set's binary; the harness's own tools
# (matrix.conf's harness tool set, /ts/harness) are $HB/<name>.
#
# After every run the runner itself checks: nothing left mounted, no loop
# device attached, e2fsck -fn clean on each registered filesystem, test files
# match their checksums, and no EXT4-fs error/warning, WARNING, BUG or oops
# in the kernel log.  A check that does not apply says "skip".

export PATH=/bin
# (bash, LVM and setpriv come from the host: guest_tools_payload, tests/lib/vm.sh)
export LVM_SUPPRESS_FD_WARNINGS=1
D1=/dev/vda
D2=/dev/vdb
MNT=/mnt/a
MNT2=/mnt/b
SC_DIR=/harness/scenarios
W=/tmp/w
HB=/hb	# harness tools (/ts/harness), see make_hb
HARNESS_FUNCS="golden log has_tune_ioctl refused fail skip_scenario try expect_rc mkfs register_fs fill dev_written loops_used tool is_refusal run cleanup"

mount_sys() {
	mount -t sysfs sys /sys
	mount -t tmpfs -o size=1200m tmp /tmp
	mkdir -p /dev/pts /run /mnt/a /mnt/b /mnt/c /etc
	mount -t devpts devpts /dev/pts
	mount -t tmpfs run /run
	: >/etc/fstab
	ln -sf /proc/self/mounts /etc/mtab
	echo 'root:x:0:0:root:/root:/bin/sh' >/etc/passwd
}

# The disk driver was loaded by /init; wait for the second disk.  (Loop
# devices are created on demand through /dev/loop-control.)
wait_disks() {
	local i=0
	while [ ! -b $D2 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
}

# The harness's own tools: its tool set (/ts/harness, a link the host
# made: toolset_payload), by absolute path.
make_hb() {
	local f n
	mkdir -p $HB
	for f in /ts/harness/usr/sbin/* /ts/harness/usr/bin/* \
		/ts/harness/sbin/* /ts/harness/bin/*; do
		n=${f##*/}
		[ -e "$HB/$n" ] || ln -s "$f" "$HB/$n"
	done
}

# use_toolset NAME: define a shell function per tool of the tool set, from
# the definitions toolset_funcs wrote when the runner started: the
# scenario's subshell and its cleanup's source them for every scenario
# (finding the ~130 tools and defining each anew took ten times as long).
use_toolset() {
	TOOLSET=$1
	TS=/ts/$1
	. /harness/funcs-$1
}
# toolset_funcs NAME: the definitions, one line per tool.
toolset_funcs() {
	local f n
	for f in /ts/$1/usr/sbin/* /ts/$1/usr/bin/* /ts/$1/sbin/* /ts/$1/bin/*; do
		[ -x "$f" ] || continue
		n=${f##*/}
		case $n in *[!A-Za-z0-9_]*) continue ;; esac
		# The harness's own helpers win over tools of the same name
		# (util-linux ships a mkfs front end).
		case " $HARNESS_FUNCS " in *" $n "*) continue ;; esac
		echo "$n() { $f \"\$@\"; }"
	done
}
tool() {
	local n=$1 d
	shift
	for d in $TS/usr/sbin $TS/usr/bin $TS/sbin $TS/bin; do
		[ -x "$d/$n" ] && { "$d/$n" "$@"; return; }
	done
	echo "tool $n not in $TOOLSET" >&2
	return 127
}

# ---- helpers for scenarios ----
log() { echo "# $*"; }
# golden FILE...: these lines are what a user reads (a refusal, a fallback,
# an explanation): compared on the host with tests/golden/<scenario>.out
# (tests/lib/golden.sh).
# (Read in this shell: a sed would be one more process, ~7 ms under TCG.)
golden() {
	local _f _l
	for _f; do
		while IFS= read -r _l || [ -n "$_l" ]; do printf 'OUT %s\n' "$_l"; done <"$_f"
	done
}
# Whether the running kernel has EXT4_IOC_SET_TUNE_SB_PARAM (Linux 6.18):
# the one place the scenarios' code reads it from the release.
has_tune_ioctl() {
	case $(uname -r) in [0-5].* | 6.[0-9].* | 6.1[0-7].*) return 1 ;; esac
	return 0
}
refused() { echo "OUTCOME refused: $*"; exit 10; }
fail() { echo "OUTCOME error: $*"; exit 2; }
skip_scenario() { echo "OUTCOME skip: $*"; exit 11; }

. /harness/refusal.sh

# try CMD...: run CMD, show its output (on failure as golden lines: what
# the user reads) and end the scenario on failure as "refused" when the
# output shows the kernel's refusal (is_refusal), otherwise as "error".  (Most commands print nothing: the cat, a process,
# ~6 ms under TCG, only for an output there is.)
try() {
	local rc
	echo "\$ $*"
	"$@" >$W/out 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		[ ! -s $W/out ] || cat $W/out
		return 0
	fi
	golden $W/out
	echo "(exit $rc)"
	is_refusal $W/out && refused "$1 exit $rc"
	fail "$1 exit $rc"
}
# expect_rc RC CMD...: like try, but RC is the success exit code (a
# non-zero exit's output is golden, expected or not).
expect_rc() {
	local want=$1 rc
	shift
	echo "\$ $*"
	"$@" >$W/out 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		[ ! -s $W/out ] || cat $W/out
	else
		golden $W/out
	fi
	[ $rc -eq "$want" ] && return 0
	echo "(exit $rc, expected $want)"
	is_refusal $W/out && refused "$1 exit $rc"
	fail "$1 exit $rc (expected $want)"
}

# mkfs DEV [SIZE] [mke2fs options]: harness mke2fs; DEV (device or image) is
# checked with e2fsck -fn after the scenario.
mkfs() {
	local dev=$1 size=''
	shift
	case ${1:-} in [0-9]*) size=$1; shift ;; esac
	$HB/mke2fs -q -F -t ext4 "$@" "$dev" $size >$W/mkfs.out 2>&1 ||
		{ cat $W/mkfs.out; fail "mke2fs $dev"; }
	register_fs "$dev"
}
# (The list is read in this shell: a grep is a process, ~7 ms under TCG.)
register_fs() {
	local _f
	if [ -e $W/fslist ]; then
		while IFS= read -r _f; do [ "$_f" != "$1" ] || return 0; done <$W/fslist
	fi
	echo "$1" >>$W/fslist
}

# fill DIR DEV: write files on the mounted filesystem DIR (which is DEV) and
# record their checksums for the after-checks.
fill() {
	local dir=$1 dev=$2 key i
	# The checksum file's name: /dev/vda -> _dev_vda (check_sums turns it
	# back).  A substitution, not a pipeline to tr: 0.2 ms against 14 ms
	# under TCG.
	# shellcheck disable=SC3060 # busybox ash has ${var//pattern/string}
	key=${dev//\//_}
	mkdir -p "$dir/data" || fail "mkdir on $dir"
	for i in 1 2 3; do
		dd if=/dev/urandom of="$dir/data/f$i" bs=4k count=$((i * 16)) 2>/dev/null ||
			fail "write $dir/data/f$i"
	done
	sync
	(cd "$dir" && md5sum data/f1 data/f2 data/f3) >>"$W/sums$key"
}

# loops_used VAR: set VAR to the number of loop devices that have a backing
# file, counted in this shell (not ls | wc -l: three processes, ~15 ms
# under TCG, and loop-mount-cycles counts after each of its 50 cycles).
loops_used() {
	local _l _n=0
	for _l in /sys/block/loop*/loop/backing_file; do [ ! -e "$_l" ] || _n=$((_n + 1)); done
	eval "$1=\$_n"
}

# dev_written VAR DEV: set VAR to the number of sectors written to the
# block device DEV since boot (/sys/class/block/<dev>/stat), after writing
# back what is buffered for it, so that a write still in the page cache
# counts too.  Cheaper than hashing the device (md5sum reads ~35 MB/s under
# TCG), and stricter: a write of identical bytes counts.
dev_written() {
	local s
	sync "$2" || fail "sync $2"
	# Fields: reads, merged, sectors read, ms, writes, merged, sectors written, ...
	read -r _ _ _ _ _ _ s _ <"/sys/class/block/${2##*/}/stat" || fail "no statistics for $2"
	case $s in '' | *[!0-9]*) fail "no sectors-written count for $2" ;; esac
	eval "$1=\$s"
}

# cleanup_umount ARGS...: umount as cleanup() gets it: the tool set's, run
# only when one of ARGS is mounted (a source or a mount point in
# /proc/self/mounts).  A cleanup unmounts whatever its scenario may have
# left behind, which mostly is nothing, and each umount with nothing to do
# is a process (~10 ms under TCG; three a row).  What this skips would have
# failed with "not mounted"; anything it leaves mounted, check_mounts finds.
cleanup_umount() {
	local _a _dev _dir _rest
	while read -r _dev _dir _rest; do
		for _a in "$@"; do
			case $_a in -*) continue ;; esac
			[ "$_a" = "$_dev" ] || [ "$_a" = "$_dir" ] || continue
			tool umount "$@"
			return
		done
	done </proc/self/mounts
	return 32
}

# ---- after-checks ----
# Each sets R to ok, fail or skip (does not apply) and prints its findings
# as "# ..." lines; run_one calls them with output to $W/chk, in this shell
# (no pipeline, no subshell: they run 408 times a boot).
check_mounts() {
	local dev dir rest
	R=ok
	# The test disks, loop devices and anything on /mnt/*: read in this
	# shell (1 ms under TCG; grep 10 ms).
	while read -r dev dir rest; do
		case $dev in
		/dev/vd* | /dev/loop*) ;;
		*) case $dir in /mnt/*) ;; *) continue ;; esac ;;
		esac
		echo "$dev $dir $rest"
	done </proc/mounts >$W/left
	[ -s $W/left ] || return 0
	echo "# leftover mounts:"; cat $W/left
	# Clean up so the next scenario starts fresh.
	awk '{print $2}' $W/left | sort -r | while read -r m; do umount -l "$m"; done
	R=fail
}
check_loops() {
	local d bad=''
	for d in /sys/block/loop*; do
		[ -e "$d/loop/backing_file" ] || continue
		bad="$bad /dev/${d##*/}"
		echo "# leftover loop device /dev/${d##*/} -> $(cat "$d/loop/backing_file")"
	done
	for d in $bad; do $HB/losetup -d "$d"; done
	R=ok
	[ -z "$bad" ] || R=fail
}
# check_fsck: e2fsck -fn of every filesystem the scenario made.  The
# harness's e2fsck.static (the harness tool set's e2fsck, linked statically;
# build.sh makes it for every tool set): it starts in ~7 ms under TCG, the
# dynamically linked one in ~12 ms (a guest microbenchmark), once or twice a
# row.
check_fsck() {
	local dev fsck=$HB/e2fsck.static
	R=skip
	[ -s $W/fslist ] || return 0
	[ -x $fsck ] || fsck=$HB/e2fsck
	while read -r dev; do
		if $fsck -fn "$dev" >$W/fsck.out 2>&1; then
			[ $R = fail ] || R=ok
		else
			echo "# e2fsck -fn $dev:"; sed 's/^/#   /' $W/fsck.out
			R=fail
		fi
	done <$W/fslist
}
check_sums() {
	local f dev opt mnt umnt
	R=skip
	for f in $W/sums_*; do
		[ -e "$f" ] || continue
		dev=${f#"$W"/sums}
		# shellcheck disable=SC3060 # busybox ash has ${var//pattern/string}
		dev=${dev//_//}
		# A disk: busybox's mount and umount (a read-only mount is the
		# same system call; 11-35 ms under TCG against 36-84 ms for
		# util-linux's pair).  An image: util-linux's, which set up
		# the loop device and free it again.
		mnt=$HB/mount umnt=$HB/umount opt=ro,loop
		[ ! -b "$dev" ] || mnt=mount umnt=umount opt=ro
		if ! $mnt -t ext4 -o $opt "$dev" /mnt/c >$W/sum.out 2>&1; then
			echo "# cannot mount $dev to verify checksums:"; cat $W/sum.out
			R=fail; continue
		fi
		if cd /mnt/c && md5sum -c "$f" >$W/sum.out 2>&1; then
			[ $R = fail ] || R=ok
		else
			echo "# checksum mismatch on $dev:"; cat $W/sum.out; R=fail
		fi
		cd /
		$umnt /mnt/c || umount -l /mnt/c
	done
}
# check_dmesg TAG ALLOW: the kernel's messages since "mountsafe: begin TAG".
# The log is read and cleared (dmesg -c): each scenario's check reads what
# came after the previous one's, not the whole boot's log again (that scan
# grew with the boot: 0.3 ms a KiB under TCG, about 20 s of a boot's 408
# scenarios).  What came between two scenarios is before the next TAG and
# ignored, as before.
check_dmesg() {
	R=ok
	dmesg -c | awk -v tag="mountsafe: begin $1" -v allow="$2" '
		index($0, tag) && substr($0, length($0) - length(tag) + 1) == tag { on = 1; next }
		on && /EXT4-fs (error|warning)|WARNING:|BUG:|Oops|general protection|Call Trace/ &&
			(allow == "" || $0 !~ allow)' >$W/dmesg.bad
	[ -s $W/dmesg.bad ] || return 0
	echo "# kernel log:"; sed 's/^/#   /' $W/dmesg.bad
	R=fail
}

# ts_has TOOLSET NAME: the tool set has the program NAME.
ts_has() {
	local d
	for d in sbin bin usr/sbin usr/bin; do [ -x "/ts/$1/$d/$2" ] && return 0; done
	return 1
}

# scenario_meta: what run_one needs from each scenario's header, read once a
# boot (one awk for all of them, not a sed, an awk and a grep for each of a
# boot's 408 runs): /harness/meta-<id> has three lines, read by run_one
# into REQS (its "#@ requires" words), ALLOW (its "#@ dmesg-allow" regexes
# joined by |) and CLEANUP (1 when it defines cleanup()).
scenario_meta() {
	awk -v dir=/harness '
	function flush() {
		if (id == "") return
		f = dir "/meta-" id
		printf "%s\n%s\n%d\n", r, a, c >f
		close(f)
	}
	FNR == 1 { flush(); id = FILENAME; sub(/.*\//, "", id); r = a = ""; c = 0 }
	sub(/^#@ requires /, "") { r = r (r == "" ? "" : " ") $0 }
	sub(/^#@ dmesg-allow /, "") { a = a (a == "" ? "" : "|") $0 }
	/^cleanup\(\)/ { c = 1 }
	END { flush() }' $SC_DIR/*
}

# unmet_requirement TOOLSET: UNMET = the first of the scenario's REQS that
# does not hold, and why; empty when all hold.
unmet_requirement() {
	local w
	UNMET=
	for w in $REQS; do
		case $w in
		loop) [ -e /dev/loop-control ] || UNMET="loop (no /dev/loop-control)" ;;
		disks=2) [ -b $D2 ] || UNMET="disks=2 (no $D2)" ;;
		fuse)
			if [ ! -c /dev/fuse ]; then UNMET="fuse (no /dev/fuse)"
			elif ! ts_has "$1" fuse2fs; then UNMET="fuse (no fuse2fs in $1)"; fi ;;
		lvm)
			if [ ! -c /dev/mapper/control ]; then UNMET="lvm (no /dev/mapper/control)"
			elif ! command -v lvcreate >/dev/null; then UNMET="lvm (no lvcreate in the guest)"
			elif ! command -v bash >/dev/null; then UNMET="lvm (no bash in the guest)"; fi ;;
		e2fsck-static)
			ts_has "$1" e2fsck.static || UNMET="e2fsck-static (no e2fsck.static in $1)" ;;
		*) UNMET="$w (a requirement this runner does not know)" ;;
		esac
		[ -z "$UNMET" ] || return 0
	done
}

# centis VAR UPTIME: VAR = UPTIME (/proc/uptime's "123.45") in hundredths of
# a second, in this shell (an awk for the arithmetic cost 4 ms under TCG).
centis() { eval "$1=\$(( ${2%.*} * 100 + 1${2#*.} - 100 ))"; }
# tenths VAR HUNDREDTHS: VAR = seconds with one decimal, rounded.
tenths() { eval "$1=$((($2 + 5) / 100)).$((($2 + 5) / 10 % 10))"; }

# run_one TOOLSET SCENARIO
run_one() {
	local ts=$1 sc=$2 f=$SC_DIR/$2 t0 t1 t2 dl rc outcome note checks tag secs after
	tag="$ts:$sc"
	rm -rf $W && mkdir -p $W
	echo "mountsafe: begin $tag" >/dev/kmsg
	printf '@@BEGIN\t%s\t%s\n' "$ts" "$sc"
	read -r t0 _ </proc/uptime
	{ IFS= read -r REQS; IFS= read -r ALLOW; read -r CLEANUP; } </harness/meta-"$sc"
	unmet_requirement "$ts"
	if [ -n "$UNMET" ]; then
		printf '@@R\t%s\t%s\t%s\t%s\t%s\t%s\n' "$ts" "$sc" skip 0 - "requires $UNMET"
		return
	fi
	# The scenario: fresh disks, its own subshell, a watchdog.  The disks'
	# first 2 MiB are zeroed on the disk itself (O_DIRECT: nothing of it
	# is left dirty in the page cache for the scenario's first tool to
	# meet; 64 KiB blocks: 1 MiB ones cost dd a 1 MiB buffer's page faults
	# each time).
	dd if=/dev/zero of=$D1 bs=64k count=32 oflag=direct 2>/dev/null
	dd if=/dev/zero of=$D2 bs=64k count=32 oflag=direct 2>/dev/null
	(
		use_toolset "$ts"
		cd $W || exit 2
		# shellcheck source=/dev/null
		. "$f"
		run
	) >$W/run.log 2>&1 &
	pid=$!
	centis dl "$t0"
	echo "$pid $((dl + ${SCENARIO_TIMEOUT:-300} * 100)) $W/run.log" >$WD_FILE
	wait $pid
	rc=$?
	rm -f $WD_FILE
	if [ "$CLEANUP" = 1 ]; then
		# shellcheck source=/dev/null
		( use_toolset "$ts"; cd $W || exit; . "$f"
		  umount() { cleanup_umount "$@"; }
		  cleanup ) >>$W/run.log 2>&1
	fi
	read -r t1 _ </proc/uptime
	case $rc in
	0) outcome=works ;;
	10) outcome=refused ;;
	11) outcome=skip ;;
	*) outcome=error ;;
	esac
	# The scenario's output, indented; its last OUTCOME's reason (or the
	# watchdog's kill) is the note.
	awk -v nf=$W/note -v to="${SCENARIO_TIMEOUT:-300}" '{ print "  | " $0 }
		sub(/^OUTCOME [a-z]*: /, "") { n = $0 }
		/^# TIMEOUT$/ { n = "killed after " to " s (SCENARIO_TIMEOUT)" }
		END { print n >nf }' $W/run.log
	IFS= read -r note <$W/note
	check_mounts >$W/chk; checks="mounts=$R"
	check_loops >>$W/chk; checks="$checks loops=$R"
	check_fsck >>$W/chk; checks="$checks fsck=$R"
	check_sums >>$W/chk; checks="$checks sums=$R"
	check_dmesg "$tag" "$ALLOW" >>$W/chk; checks="$checks dmesg=$R"
	[ ! -s $W/chk ] || sed 's/^/  | /' $W/chk
	read -r t2 _ </proc/uptime
	centis t0 "$t0"; centis t1 "$t1"; centis t2 "$t2"
	tenths secs $((t1 - t0)); tenths after $((t2 - t1))
	echo "  | # after-checks: $after s"
	printf '@@R\t%s\t%s\t%s\t%s\t%s\t%s\n' "$ts" "$sc" "$outcome" "$secs" "$checks" "${note:--}"
}

# cell_watchdog: kills a scenario that runs longer than SCENARIO_TIMEOUT
# (300 s), from the line "PID DEADLINE LOG" run_one keeps in WD_FILE while
# the scenario runs (DEADLINE in hundredths of a second of uptime).  One
# loop a boot, a sleep every 5 s, instead of a sleeping subshell a row (two
# processes, ~10 ms under TCG, 408 times a boot).
WD_FILE=/harness/watchdog
cell_watchdog() {
	local _p _d _l _n _now
	while sleep 5; do
		[ -s $WD_FILE ] || continue
		read -r _p _d _l <$WD_FILE || continue
		read -r _now _ </proc/uptime
		centis _now "$_now"
		case $_d in "" | *[!0-9]*) continue ;; esac
		[ "$_now" -ge "$_d" ] || continue
		# (Still the same scenario: the file names it.)
		_n=
		read -r _n _ _ <$WD_FILE 2>/dev/null
		[ "$_n" = "$_p" ] || continue
		kill -9 "$_p" 2>/dev/null && echo "# TIMEOUT" >>"$_l"
		rm -f $WD_FILE
	done
}

# guest_cpu: where this boot's CPU time went, for the host's boot line: the
# cpu line of /proc/stat (ticks of 1/100 s: user and nice; system, irq and
# softirq; idle and iowait) and the processes started since boot.
guest_cpu() {
	local k u n s i w q sq cpu='? ? ?' p='?'
	while read -r k u n s i w q sq _; do
		case $k in
		cpu) cpu="$((u + n)) $((s + q + sq)) $((i + w))" ;;
		processes) p=$u ;;
		esac
	done </proc/stat
	# shellcheck disable=SC2086 # $cpu: three fields
	printf '@@CPU\t%s\t%s\t%s\t%s\n' $cpu "$p"
}

main() {
	mount_sys
	echo 1 >/proc/sys/kernel/printk_ratelimit 2>/dev/null
	# The scenarios' tags in the kernel log (check_dmesg) must never be
	# dropped by /dev/kmsg's rate limit.
	echo on >/proc/sys/kernel/printk_devkmsg
	wait_disks
	make_hb
	local toolsets scenarios ts sc shard i=0 n=1 k=0
	toolsets=$(arg toolsets | tr ',' ' ')
	for ts in $toolsets; do toolset_funcs "$ts" >/harness/funcs-$ts; done
	scenario_meta
	scenarios=$(arg scenarios | tr ',' ' ')
	# (@NAME: the list the host put in /harness/list-NAME.)
	case $scenarios in @*) scenarios=$(cat "/harness/list-${scenarios#@}") ;; esac
	[ -n "$scenarios" ] || scenarios=$(ls $SC_DIR)
	echo "# runner ready at $(cut -d' ' -f1 /proc/uptime)s of uptime"
	shard=$(arg shard)
	[ -z "$shard" ] || { i=${shard%/*}; n=${shard#*/}; }
	cell_watchdog &
	for ts in $toolsets; do
		for sc in $scenarios; do
			[ $((k % n)) -eq "$i" ] && run_one "$ts" "$sc"
			k=$((k + 1))
		done
	done
	guest_cpu
	echo "@@DONE $(cut -d' ' -f1 /proc/uptime)"
	sync
	poweroff -f
}

main "$@"
