#!/bin/bash
# summary.tsv -> Markdown: one table per kernel for the scenario matrix
# (scenarios down, (switch, tool set) across), then one table for the system
# stage (system-* scenarios).  A cell is the outcome; "FAIL" marks a verdict
# of fail (wrong outcome or a failed after-check), "skip" a skipped run.
set -euo pipefail
awk -F'\t' '
NR == 1 { next }
{
	if ($1 == "host") tab = "system stage: packages (apt, in a copy of the image root)"
	else if ($4 ~ /^system-/) tab = "system stage (Debian 12 boot), kernel " $1
	else tab = "kernel " $1
	col = "sw" $2 " " $3
	if (!(tab in tseen)) { tseen[tab] = 1; tabs[++nt] = tab }
	if (!((tab, col) in cseen)) { cseen[tab, col] = 1; cols[tab, ++nc[tab]] = col }
	if (!((tab, $4) in rseen)) { rseen[tab, $4] = 1; rows[tab, ++nr[tab]] = $4 }
	v = $6
	if ($7 == "fail") v = "**FAIL** " $6 " (want " $5 ")"
	else if ($7 == "skip") v = "skip"
	cell[tab, $4, col] = v
	tot[$7]++
}
END {
	# Scenario tables first, the system stage last.
	for (pass = 0; pass < 2; pass++) for (t = 1; t <= nt; t++) {
		tab = tabs[t]
		if ((tab ~ /^system/) != pass) continue
		printf "### %s\n\n| scenario |", tab
		for (c = 1; c <= nc[tab]; c++) printf " %s |", cols[tab, c]
		printf "\n|---|"
		for (c = 1; c <= nc[tab]; c++) printf "---|"
		printf "\n"
		for (r = 1; r <= nr[tab]; r++) {
			printf "| %s |", rows[tab, r]
			for (c = 1; c <= nc[tab]; c++) {
				k = tab SUBSEP rows[tab, r] SUBSEP cols[tab, c]
				printf " %s |", (k in cell) ? cell[k] : "-"
			}
			printf "\n"
		}
		printf "\n"
	}
	printf "%d passed, %d failed, %d skipped\n", tot["pass"], tot["fail"], tot["skip"]
}' "$1"
