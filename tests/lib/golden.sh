# shellcheck shell=bash
# Golden output: what the tools print to a user (a refusal, a fallback, an
# explanation), kept beside the scenarios and compared after every run.
#
# A scenario marks the output a user reads with "golden FILE"
# (tests/lib/guest/matrix.sh): its lines reach the scenario's log as
# "OUT <line>".  tests/golden/<scenario>.out holds what they must be, one
# section per distinct output, headed by the cells that print it:
#   == patched-deb12/0/k7 patched-deb13/0/k7
#   resize2fs: ...
# (cell = toolset/switch/kernel name, "*" any; lines before the first "=="
# are comments).  Both sides go through golden_filter first.  A row whose
# output differs gets "out=fail" among its after-checks, which fails it,
# and the difference in <scenario>.out.bad beside its log; a scenario
# without a golden file is not compared.  tests/golden-update writes the
# files from a run's logs.

# golden_filter: what differs between two runs of the same cell made
# constant: loop device numbers, process ids, dates, UUIDs, disk identifiers,
# e2fsck's summary counts (the test files are random), the tools' version
# banners; and the tool set's directory left out of a program's name (a
# user's shell finds it in /usr/sbin).
golden_filter() {
	sed -E -e 's#/dev/loop[0-9]+#/dev/loopN#g' \
		-e 's#/ts/[^/ ]+/(usr/)?s?bin/##g' \
		-e 's/[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} [0-9]{4}/DATE/g' \
		-e 's/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/UUID/g' \
		-e 's/Disk identifier: 0x[0-9a-f]+/Disk identifier: ID/' \
		-e 's#[0-9]+/[0-9]+ files \([0-9.]+% non-contiguous\), [0-9]+/[0-9]+ blocks#N/N files (N% non-contiguous), N/N blocks#' \
		-e 's#clean, [0-9]+/[0-9]+ files, [0-9]+/[0-9]+ blocks#clean, N/N files, N/N blocks#' \
		-e 's/(pid|process|PID) [0-9]+/\1 N/g' \
		-e 's/ [0-9]+\.[0-9]+(\.[0-9]+)* \([0-9]+-[A-Za-z]+-[0-9]+\)/ VERSION/g' \
		-e 's/util-linux [0-9]+\.[0-9][0-9.]*/util-linux VERSION/g'
}

# golden_lines LOG: the OUT lines of a scenario's log, filtered.
golden_lines() { sed -n 's/^OUT //p' "$1" | golden_filter; }

# golden_section FILE CELL: the section of FILE whose header names CELL;
# non-zero when none does.
golden_section() {
	awk -v c="$2" '
		/^== / { on = 0; n = split(substr($0, 4), a, " ")
			for (i = 1; i <= n; i++) if (a[i] == c || a[i] == "*") on = found = 1
			started = 1; next }
		!started { next }
		on { print }
		END { exit !found }' "$1"
}

# golden_check GOLDEN-DIR SCENARIO CELL LOG: prints "ok" or "fail" (then
# LOG's directory gets SCENARIO.out.bad: the difference, or why there is
# none to take), nothing when SCENARIO has no golden file.
golden_check() {
	local file=$1/$2.out cell=$3 log=$4 bad exp
	[ -f "$file" ] || return 0
	bad=${log%/*}/$2.out.bad
	rm -f "$bad"
	if ! exp=$(golden_section "$file" "$cell"); then
		printf 'no section for %s in %s (tests/golden-update)\n' "$cell" "${file#"$MS_ROOT"/}" >"$bad"
		echo fail
	elif diff -u --label "expected ($cell)" --label "got" <(printf '%s\n' "$exp" | sed '/^$/d') \
		<(golden_lines "$log" | sed '/^$/d') >"$bad"; then
		rm -f "$bad"
		echo ok
	else
		echo fail
	fi
}
