#!/bin/bash
# summary.tsv -> Markdown matrix: scenarios down, (kernel, switch, tool set)
# across.  A cell is the outcome; "FAIL" marks a verdict of fail (wrong
# outcome or a failed after-check), "skip" a skipped run.
set -euo pipefail
awk -F'\t' '
NR == 1 { next }
{
	col = $1 " sw" $2 " " $3
	if (!(col in seen)) { seen[col] = 1; cols[++nc] = col }
	if (!($4 in sseen)) { sseen[$4] = 1; rows[++nr] = $4 }
	v = $6
	if ($7 == "fail") v = "**FAIL** " $6 " (want " $5 ")"
	else if ($7 == "skip") v = "skip"
	cell[$4, col] = v
	tot[$7]++
}
END {
	printf "| scenario |"
	for (c = 1; c <= nc; c++) printf " %s |", cols[c]
	printf "\n|---|"
	for (c = 1; c <= nc; c++) printf "---|"
	printf "\n"
	for (r = 1; r <= nr; r++) {
		printf "| %s |", rows[r]
		for (c = 1; c <= nc; c++) printf " %s |", ((rows[r], cols[c]) in cell) ? cell[rows[r], cols[c]] : "-"
		printf "\n"
	}
	printf "\n%d passed, %d failed, %d skipped\n", tot["pass"], tot["fail"], tot["skip"]
}' "$1"
