#!/bin/bash
# Debian's autopkgtest on our packages: the tests of a source package
# (debian/tests of util-linux or e2fsprogs) run by the host's autopkgtest
# in a testbed of the release with our .debs installed over Debian's.
# Sourced by tests/stages/packages (after scripts/common.sh and
# tests/lib/vm.sh); run directly for one run without the cache:
#
#   tests/lib/autopkgtest.sh RELEASE SOURCE OUT-DIR [DEB...]
#
# (no DEB: the tests on Debian's own packages, as the release has them).
#
# The testbed: autopkgtest-virt-unshare on a cached debootstrap of the
# release (rootfs_tarball: minbase and what the tests depend on, so that
# a test does not install a compiler every time), unpacked afresh for each
# run and after each test that needs it (the server's revert); apt in it
# reads the archive the machine's apt sources name and the release's
# -updates suite.  autopkgtest puts the DEBs in a local repository that it
# pins above everything (priority 1002) and reinstalls each one whose
# package the testbed has: ours replace Debian's before any test runs, and
# the packages a test depends on come from ours where we build them.  Tests
# whose restrictions the testbed cannot meet (isolation-machine: it is a
# chroot, not a machine) are skipped by autopkgtest, which says why.
#
# Functions:
#   autopkgtest_setup              the host's autopkgtest (need_pkgs); sets
#                                  AUTOPKGTEST_VERSION
#   autopkgtest_src SRC VER        the source package unpacked (cached),
#                                  prints its directory
#   autopkgtest_run REL SRC VER OUT [DEB...]   one run into OUT; its exit
#                                  status is autopkgtest's
#   autopkgtest_cached KEY-TEXT OUT REL SRC VER DEB...   the same, kept
#                                  under a hash of every input
#   autopkgtest_verdict OUT DEB... "works"/"error" and why, then one
#                                  "skip" line per skipped test
#   autopkgtest_row REL SRC VER W DEB...   the cached run and its verdict

AUTOPKGTEST_LIB=${BASH_SOURCE[0]}
AUTOPKGTEST_CACHE=$MS_CACHE/autopkgtest
# What the tests depend on, in the testbed from the start (Debian 12 and
# 13: util-linux's bc, bsdextrautils, the -dev tests' compiler, the
# login test's expect; e2fsprogs' fuse3), and apt-utils for autopkgtest's
# own local repository.
AUTOPKGTEST_TB_PKGS=apt-utils,build-essential,pkg-config,bc,bsdextrautils,expect,fuse3

autopkgtest_setup() {
	need_pkgs autopkgtest
	AUTOPKGTEST_VERSION=$(dpkg-query -W -f='${Version}' autopkgtest)
}

# autopkgtest_src SRC VER: Debian's source package SRC VER, unpacked with
# dpkg-source -x (its patches applied, as autopkgtest unpacks a source
# package) into the cache; prints the directory.
autopkgtest_src() {
	local src=$1 ver=$2 dir dsc
	dir=$AUTOPKGTEST_CACHE/src/${src}_${ver#*:}
	mkdir -p "$AUTOPKGTEST_CACHE/src"
	(
		flock 9
		[ -d "$dir" ] && exit 0
		dsc=$(fetch_dsc "$src" "$ver")
		rm -rf "$dir.tmp"
		# --no-check: fetch_dsc checked every file against apt's signed
		# indexes, and a missing upstream signature (.asc) is no error.
		dpkg-source -q --no-check -x "$dsc" "$dir.tmp" >"$dir.log" 2>&1 ||
			{ cat "$dir.log" >&2; rm -rf "$dir.tmp" "$dir.log"; die "dpkg-source -x $dsc failed"; }
		rm -f "$dir.log"
		mv "$dir.tmp" "$dir"
		touch "$dir"
		# The sources of the last 8 versions stay.
		beyond_newest 8 "$AUTOPKGTEST_CACHE/src" -mindepth 1 -maxdepth 1 -type d | xargs -r rm -rf
	) 9>"$AUTOPKGTEST_CACHE/src/.lock" || return 1
	printf '%s\n' "$dir"
}

# autopkgtest_tarball REL: the testbed's root (cached by rootfs_tarball).
autopkgtest_tarball() { rootfs_tarball "$1" "$AUTOPKGTEST_TB_PKGS"; }

# autopkgtest_run REL SRC VER OUT [DEB...]: autopkgtest of source SRC
# version VER's tests with the DEBs, at nice 10, output in OUT (its
# --output-dir) and OUT.log (what it printed).
autopkgtest_run() {
	local rel=$1 src=$2 ver=$3 out=$4 tree tar uri rc=0
	shift 4
	tree=$(autopkgtest_src "$src" "$ver")
	tar=$(autopkgtest_tarball "$rel")
	uri=$(archive_uri)
	rm -rf "$out" "$out.tb"
	mkdir -p "$out.tb"
	# --no-built-binaries: the tests run on the DEBs, nothing is built.
	PATH=$(dirname "$AUTOPKGTEST_LIB")/autopkgtest:$PATH nice -n 10 autopkgtest --no-built-binaries \
		--output-dir "$out" \
		--setup-commands "printf 'deb $uri $rel main\ndeb $uri $rel-updates main\n' >/etc/apt/sources.list; apt-get -q update" \
		"$@" "$tree/" -- unshare --tarball "$tar" --prefix "$out.tb/tb." >"$out.log" 2>&1 || rc=$?
	rm -rf "$out.tb"
	return "$rc"
}

# autopkgtest_key KEY-TEXT REL SRC VER DEB...: a hash of every input of a
# run: the DEBs' SHA-256 sums, the tests (debian/tests of the source),
# autopkgtest's version, the functions that make the run (their text, as
# bash prints it; the tests themselves are hashed, not the function that
# unpacks them) and the unshare wrapper, the testbed's root (its cache
# file names the release and its packages).  What the testbed installs
# from the archive at run time is not in it.  (The verdict is no input:
# autopkgtest_verdict reads the kept output every time.)
autopkgtest_key() {
	local keytext=$1 rel=$2 src=$3 ver=$4 tree
	shift 4
	tree=$(autopkgtest_src "$src" "$ver")
	{
		printf '%s\n' "$keytext" "$rel $src $ver" "$AUTOPKGTEST_VERSION" "$AUTOPKGTEST_TB_PKGS"
		basename "$(autopkgtest_tarball "$rel")"
		(cd "$tree" && find debian/tests -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
		declare -f autopkgtest_tarball autopkgtest_run
		sha256sum "$(dirname "$AUTOPKGTEST_LIB")/autopkgtest/unshare" | cut -d' ' -f1
		[ $# -eq 0 ] || sha256sum -- "$@" | cut -d' ' -f1 | LC_ALL=C sort
	} | sha256sum | cut -c1-16
}

# autopkgtest_cached KEY-TEXT OUT REL SRC VER DEB...: autopkgtest_run, its
# output (summary, log, each test's -packages file) kept in
# $AUTOPKGTEST_CACHE/out/<key>/ and taken from there when the same inputs
# were run before.  A run that failed to start its testbed (autopkgtest
# exit 16 or 20) is not kept.  Runs that want the same result at once
# wait for the first.  Prints "cached" or the seconds the run took.
autopkgtest_cached() {
	local keytext=$1 out=$2 rel=$3 src=$4 ver=$5 key c t0 rc
	shift 5
	key=$(autopkgtest_key "$keytext" "$rel" "$src" "$ver" "$@")
	c=$AUTOPKGTEST_CACHE/out/$key
	mkdir -p "$AUTOPKGTEST_CACHE/out"
	(
		flock 9
		if [ -f "$c/rc" ]; then
			rm -rf "$out" && mkdir -p "$out" && cp -a "$c"/. "$out/"
			echo cached
			exit 0
		fi
		t0=$SECONDS rc=0
		autopkgtest_run "$rel" "$src" "$ver" "$out.run" "$@" || rc=$?
		rm -rf "$out" && mkdir -p "$out"
		cp "$out.run.log" "$out/autopkgtest.log"
		find "$out.run" -maxdepth 1 -type f \( -name summary -o -name log -o -name '*-packages' \
			-o -name testpkg-version -o -name '*-stdout' -o -name '*-stderr' \) -exec cp {} "$out/" \;
		echo "$rc" >"$out/rc"
		rm -rf "$out.run" "$out.run.log"
		case $rc in 16 | 20) ;; *) rm -rf "$c.tmp" && cp -a "$out" "$c.tmp" && rm -rf "$c" && mv "$c.tmp" "$c" ;; esac
		echo "$((SECONDS - t0))s"
	) 9>"$c.lock" || return 1
	# The newest 24 results (a few builds of both sources and releases).
	beyond_newest 24 "$AUTOPKGTEST_CACHE/out" -mindepth 1 -maxdepth 1 -type d | xargs -r rm -rf
	find "$AUTOPKGTEST_CACHE/out" -maxdepth 1 -name '*.lock' -mmin +1440 -delete 2>/dev/null || true
}

# autopkgtest_verdict OUT DEB...: from a run's output (OUT, as
# autopkgtest_cached leaves it): "works<TAB>why" when every test that ran
# passed, at least one ran, and the testbed ran ours: each of our packages
# that the testbed had (Debian's) was set up at our version, each that a
# test installed was ours, and one of ours at least was installed
# (Debian 13's minbase has no e2fsprogs: a test installs it); otherwise
# "error<TAB>why".  Then one line
# "skip<TAB>TEST<TAB>reason" per test autopkgtest skipped.
autopkgtest_verdict() {
	local out=$1 rc pass fail skipped over=() added=() notours=() p v line why q="'s"
	shift
	local -A ourver=()
	for p in "$@"; do
		# shellcheck disable=SC2016 # dpkg-deb's fields
		ourver[$(dpkg-deb -f "$p" Package)]=$(dpkg-deb -f "$p" Version)
	done
	rc=$(cat "$out/rc" 2>/dev/null || echo none)
	# summary: "NAME  PASS|FAIL why|SKIP why|FLAKY why" (a skip may be
	# listed twice: once when the tests are read, once at the end).
	pass=$(awk '$2 == "PASS" { print $1 }' "$out/summary" 2>/dev/null | sort -u | paste -sd' ' -)
	fail=$(awk '$2 != "PASS" && $2 != "SKIP" { $1 = $1; print }' "$out/summary" 2>/dev/null |
		sort -u | paste -sd';' -)
	skipped=$(awk '$2 == "SKIP"' "$out/summary" 2>/dev/null | sort -u)
	# Ours over Debian's: the testbed's packages before the DEBs came
	# (testbed-packages) that are ours must each be set up at our version.
	for p in "${!ourver[@]}"; do
		grep -q "^$p"$'\t' "$out/testbed-packages" 2>/dev/null || continue
		if grep -Eq "^Setting up $p(:[a-z0-9]+)? \(${ourver[$p]//+/\\+}\)" "$out/log"; then
			over+=("$p")
		else
			notours+=("$p (Debian's stayed)")
		fi
	done
	# What a test installed (<test>-packages; testbed-packages is the
	# testbed before ours came): a package of ours at another version.
	while IFS=$'\t' read -r p v; do
		p=${p%:*}
		[ -n "${ourver[$p]+x}" ] || continue
		if [ "$v" = "${ourver[$p]}" ]; then added+=("$p"); else notours+=("$p $v"); fi
	done < <(find "$out" -maxdepth 1 -name '*-packages' ! -name testbed-packages -exec cat {} + | grep -v '^$' || true)
	mapfile -t over < <(printf '%s\n' "${over[@]}" | sed '/^$/d' | sort)
	mapfile -t added < <(printf '%s\n' "${added[@]}" | sed '/^$/d' | sort -u)
	if [ "$rc" = none ] || [ ! -s "$out/summary" ]; then
		why="autopkgtest exit $rc, no summary: $(grep -m1 -E 'ERROR|error' "$out/autopkgtest.log" 2>/dev/null || true)"
		printf 'error\t%s\n' "$why"
	elif [ -n "$fail" ]; then
		printf 'error\tautopkgtest %s (exit %s): failed: %s\n' "$AUTOPKGTEST_VERSION" "$rc" "$fail"
	elif [ -z "$pass" ]; then
		printf 'error\tautopkgtest %s (exit %s): no test passed\n' "$AUTOPKGTEST_VERSION" "$rc"
	elif [ $# -gt 0 ] && { [ ${#notours[@]} -gt 0 ] || [ $((${#over[@]} + ${#added[@]})) -eq 0 ]; }; then
		printf 'error\tthe tests did not run on ours: %s\n' "${notours[*]:-no package of ours was installed}"
	else
		printf 'works\tautopkgtest %s (exit %s): passed: %s%s%s\n' "$AUTOPKGTEST_VERSION" "$rc" "$pass" \
			"${over[0]:+; ours over Debian$q: ${over[*]}}" "${added[0]:+; ours installed for the tests: ${added[*]}}"
	fi
	while read -r line; do
		[ -n "$line" ] || continue
		why=${line#* } why=${why#"${why%%[! ]*}"}
		printf 'skip\t%s\t%s\n' "${line%% *}" "${why#SKIP }"
	done <<<"$skipped"
}

# autopkgtest_row REL SRC VER W DEB...: the tests of Debian's source SRC
# VER on the DEBs (ours, built from it), cached; the run's output in W/
# (autopkgtest.log, log, summary, ...).  Prints autopkgtest_verdict's
# lines, the first with how long the run took ("cached" when it did not).
autopkgtest_row() {
	local rel=$1 src=$2 ver=$3 w=$4 t outcome detail
	shift 4
	t=$(autopkgtest_cached "ours $src" "$w" "$rel" "$src" "$ver" "$@") ||
		{ printf 'error\tautopkgtest did not run: %s\n' "$(tail -n1 "$w.run.log" 2>/dev/null)"; return; }
	autopkgtest_verdict "$w" "$@" | {
		IFS=$'\t' read -r outcome detail
		printf '%s\t%s (%s)\n' "$outcome" "$detail" "$t"
		cat
	}
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	[ $# -ge 3 ] || { echo "usage: $0 RELEASE SOURCE OUT-DIR [DEB...]" >&2; exit 2; }
	# shellcheck source-path=SCRIPTDIR source=../../scripts/common.sh
	. "$(dirname "$0")/../../scripts/common.sh"
	# shellcheck source-path=SCRIPTDIR source=vm.sh
	. "$(dirname "$0")/vm.sh"
	rel=$1 src=$2 out=$3
	shift 3
	autopkgtest_setup
	apt_setup
	ver=$(newest_src "$src" "$rel" "$rel-updates")
	rc=0
	autopkgtest_run "$rel" "$src" "$ver" "$out" "$@" || rc=$?
	echo "autopkgtest $AUTOPKGTEST_VERSION, $src $ver on $rel: exit $rc (log: $out.log)"
	cat "$out/summary" 2>/dev/null || true
	exit "$rc"
fi
