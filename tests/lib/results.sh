# shellcheck shell=bash
# Results of every stage, one layout (sourced after scripts/common.sh).
#
# results.tsv in the run's directory, one row per checked thing:
#   stage kernel switch toolset scenario expected outcome verdict seconds note
# kernel is the release (6.12.117) or "host"; switch is the value of
# bdev_allow_write_mounted the VM booted with, or "-" for host checks.
# verdict: pass | fail | skip.  Each row also becomes one TAP line on
# stdout ("ok - ..." / "not ok - ..." / "ok - ... # SKIP ..."), which
# tests/run numbers and counts.
#
# Expected outcomes: one reader for every stage.  Lines are
#   <toolset-glob> <switch|*> <kernel-glob> <scenario-glob> <outcome>
# (first match wins): tests/system/expect as it is, and a scenario's
# "#@ expect <toolset> <switch> <kernel> <outcome>" lines with the
# scenario's name put in.

# shellcheck disable=SC2034 # used by the stages
RESULTS_HEADER=$'stage\tkernel\tswitch\ttoolset\tscenario\texpected\toutcome\tverdict\tseconds\tnote'

# expect_lines_of_scenario FILE: a scenario's expectations as reader lines.
expect_lines_of_scenario() {
	sed -n "s/^#@ expect \([^ ]*\) \([^ ]*\) \([^ ]*\) \(.*\)/\1 \2 \3 ${1##*/} \4/p" "$1"
}

# expect_lookup TOOLSET SWITCH KERNEL SCENARIO < LINES: the expected outcome,
# or "unspecified".
expect_lookup() {
	local ts=$1 sw=$2 kr=$3 sc=$4 g s k c o
	while read -r g s k c o; do
		case $g in '#'* | '') continue ;; esac
		# shellcheck disable=SC2254
		case $ts in $g) ;; *) continue ;; esac
		[ "$s" = '*' ] || [ "$s" = "$sw" ] || continue
		# shellcheck disable=SC2254
		case $kr in $k) ;; *) continue ;; esac
		# shellcheck disable=SC2254
		case $sc in $c) ;; *) continue ;; esac
		printf '%s\n' "$o"
		return
	done
	echo unspecified
}

# result_row TSV STAGE KERNEL SWITCH TOOLSET SCENARIO EXPECTED OUTCOME SECONDS NOTE [CHECKS]
# Decides the verdict (outcome = expected and no after-check failed; an
# outcome "skip" is a skip), appends the row and prints the TAP line.
result_row() {
	local tsv=$1 st=$2 kr=$3 sw=$4 ts=$5 sc=$6 exp=$7 out=$8 secs=$9 note=${10} checks=${11:-} v label
	if [ "$out" = skip ]; then
		v=skip
	elif [ "$out" = "$exp" ] && [[ $checks != *=fail* ]]; then
		v=pass
	else
		v=fail
	fi
	[ -z "$checks" ] || note="[$checks] $note"
	# One line, at most 400 characters (the shell's own expansions: a
	# matrix has over 1600 rows).
	note=${note//$'\t'/ } note=${note//$'\n'/ }
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$st" "$kr" "$sw" "$ts" "$sc" "$exp" "$out" "$v" \
		"$secs" "${note:0:400}" >>"$tsv"
	label=$st
	case $kr in host | -) ;; *) label="$label $kr" ;; esac
	[ "$sw" = - ] || label="$label sw$sw"
	[ "$ts" = - ] || label="$label $ts"
	label="$label $sc"
	case $v in
	pass) echo "ok - $label: $out ${secs}s" ;;
	skip) echo "ok - $label # SKIP $note" ;;
	*) echo "not ok - $label: $out, expected $exp: $note" ;;
	esac
}

# job_rows TSV STAGE KERNEL SWITCH TOOLSET EXPECT WHY LOGDIR SCENARIO... < ROWS
# The rows of one job (a boot, a pair of boots, a check on the host): for
# each SCENARIO its line of ROWS (SCENARIO <TAB> OUTCOME <TAB> SECONDS <TAB>
# NOTE; the first one counts) or, without one, the outcome "error" with the
# note "no result: WHY"; the expected outcome from the file EXPECT
# (expect_lookup lines); the note also into LOGDIR/SCENARIO.log (LOGDIR
# "-": none).
job_rows() {
	local tsv=$1 st=$2 kr=$3 sw=$4 ts=$5 expect=$6 why=$7 logdir=$8 l sc outcome secs note
	shift 8
	local -A got=()
	while IFS= read -r l; do
		sc=${l%%$'\t'*}
		[ -n "${got[$sc]+set}" ] || got[$sc]=${l#*$'\t'}
	done
	for sc; do
		if [ -n "${got[$sc]+set}" ]; then
			IFS=$'\t' read -r outcome secs note <<<"${got[$sc]}"
		else
			outcome=error secs=0 note="no result: $why"
		fi
		[ "$logdir" = - ] || printf '%s\n' "$note" >"$logdir/$sc.log"
		result_row "$tsv" "$st" "$kr" "$sw" "$ts" "$sc" \
			"$(expect_lookup "$ts" "$sw" "$kr" "$sc" <"$expect")" "$outcome" "$secs" "$note"
	done
}

# no_result_reason BASE LOG [DONE-LOG]: why a boot whose serial console is
# LOG did not report everything it was to report (the matrix, system and
# util-linux suite stages): no log, a guest that died before /init (vm_boot
# boots it twice), one that said why with an @@ERROR line (/init could not
# mount root, the suite found no build tree), one that stopped before its
# @@DONE line (in DONE-LOG, default LOG; the reason when vm_stop_reason in
# tests/lib/vm.sh knows it), or one that finished without reporting it.
# Paths are named relative to BASE.
no_result_reason() {
	local rel=${2#"$1"/} r
	if [ ! -f "$2" ]; then
		echo "no serial log $rel: the boot left no results"
	elif ! grep -q '^@@BOOT' "$2"; then
		echo "the guest died before /init (twice; see $rel)"
	elif r=$(grep -m1 '^@@ERROR' "$2" | tr -d '\r'); then
		echo "$r (see $rel)"
	elif ! grep -q '^@@DONE' "${3:-$2}" 2>/dev/null; then
		r=$(vm_stop_reason "$2")
		echo "the guest stopped before reporting it${r:+: $r} (see $rel)"
	else
		echo "the guest did not report it (see $rel)"
	fi
}

# split_scenario_logs SERIAL-LOG DIR: each scenario's output (between its
# @@BEGIN and @@R lines) into DIR/<toolset>/<scenario>.log.
split_scenario_logs() {
	[ -f "$1" ] || return 0
	tr -d '\r' <"$1" 2>/dev/null | awk -v dir="$2" -F'\t' '
		$1 == "@@BEGIN" { f = dir "/" $2 "/" $3 ".log"; d = f; sub(/\/[^\/]*$/, "", d)
			system("mkdir -p \"" d "\""); printf "" >f; next }
		$1 == "@@R" && f != "" { print $0 >>f; close(f); f = ""; next }
		f != "" { sub(/^  \| /, ""); print >>f }'
}
