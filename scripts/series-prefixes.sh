#!/bin/bash
# shellcheck source-path=SCRIPTDIR
# Build every prefix of a patch series, to see that each patch builds (and
# passes the test suite) on its own: bisectable.
#
#   scripts/series-prefixes.sh [--no-check] [--util-linux | --only-util-linux] [BASELINE...]
#
# For each baseline (deb12 deb13 upstream, or those named), one after the
# other: the e2fsprogs series of the working tree e2fsprogs/<baseline> (tag
# pristine, then one commit per patch: ./build.sh trees makes it), as
# pristine, pristine + 1, pristine + 2, ..., each configured and built from
# scratch out of tree, with ccache ($MS_CACHE/ccache, as ./build.sh), then
# "make check" unless --no-check.  --util-linux does the same for the
# util-linux series after e2fsprogs' (its checks run as user nobody when
# the script runs as root, so that no test sets up loop devices or mounts
# on this host; the root-only tests then say SKIPPED); --only-util-linux
# the util-linux series alone.
#
# The commits are checked out in a scratch git worktree of the working tree
# under $TMPDIR (removed at the end): the working tree itself, its branch and
# its files are not touched.  A working tree that is not what patches/ holds
# (./build.sh trees not run since patches/ changed, or commits of your own)
# is built as it is, and the script says so.
#
# One line per prefix: baseline, component, patch number ("base" = pristine),
# build ok/FAILED, the check's counts (e2fsprogs: the tests of tests/;
# util-linux: the tests run.sh reports, skipped ones among the passed),
# seconds (configure, make and check), the patch's subject.  A prefix that
# fails a test pristine passes says "N new", one that reports fewer tests
# than pristine "N fewer".  Logs: build/prefixes/.  The exit status is 1
# when a prefix did not build, failed a test that pristine passes, or ran
# fewer tests.
#
# Environment: MOUNTSAFE_JOBS (make -j; default: the number of cores).
set -euo pipefail

# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
# shellcheck source=patchq.sh
. "$MS_ROOT/scripts/patchq.sh"

usage() { awk 'NR > 1 && !/^#/ {exit} NR > 1 && !/shellcheck/ {sub(/^# ?/, ""); print}' "$0"; }

CHECK=1
COMPS=(e2fsprogs)
BASES=()
while [ $# -gt 0 ]; do
	case $1 in
	--no-check) CHECK=0 ;;
	--util-linux) COMPS=(e2fsprogs util-linux) ;;
	--only-util-linux) COMPS=(util-linux) ;;
	-h | --help) usage; exit 0 ;;
	deb12 | deb13 | upstream) BASES+=("$1") ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done
[ ${#BASES[@]} -gt 0 ] || BASES=(deb12 deb13 upstream)

LOGDIR=$MS_BUILD/prefixes
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ms-prefixes.XXXXXX")
# The scratch worktree in use, as "TREE|WORKTREE".
WT=''
trap '[ -z "$WT" ] || git -C "${WT%%|*}" worktree remove --force "${WT#*|}" 2>/dev/null; rm -rf "$WORK"' EXIT
# Compiled as ./build.sh compiles (compiler, flags, relative source paths),
# so that ccache serves what the tool sets compiled.
export CCACHE_DIR=$MS_CACHE/ccache CCACHE_BASEDIR=$WORK CCACHE_NOHASHDIR=1
export TMPDIR=$WORK/tmp
mkdir -p "$TMPDIR" "$LOGDIR"
# Every checkout's files get one old time stamp: autotools' rebuild rules
# then see nothing newer than what was generated from it.
STAMP=@946684800

# check_counts COMP OBJDIR LOG: "PASSED FAILED SKIPPED" and the failed
# tests' names (one line).
check_counts() {
	local comp=$1 obj=$2 log=$3 p f s
	case $comp in
	e2fsprogs)
		p=$(find "$obj/tests" -maxdepth 1 -name '*.ok' | wc -l)
		f=$(find "$obj/tests" -maxdepth 1 -name '*.failed' | wc -l)
		s=$(grep -cE '^[a-z]_[A-Za-z0-9_]*: .*: skip' "$log" || true)
		printf '%s %s %s %s\n' "$p" "$f" "$s" \
			"$(find "$obj/tests" -maxdepth 1 -name '*.failed' -printf '%f\n' | sed 's/\.failed$//' | sort | paste -sd' ')"
		;;
	util-linux)
		# run.sh: "... OK", "... FAILED (name)", "... SKIPPED (why)";
		# the summary "All N tests PASSED" or "F tests of N FAILED".
		local n
		n=$(sed -n 's/^ *All \([0-9]*\) tests PASSED$/\1/p; s/^ *[0-9]* tests of \([0-9]*\) FAILED$/\1/p' "$log" | tail -n1)
		f=$(grep -cE '\.\.\. *FAILED \(' "$log" || true)
		s=$(grep -cE '\.\.\. *SKIPPED' "$log" || true)
		printf '%s %s %s %s\n' "$(( ${n:-0} - f ))" "$f" "$s" \
			"$(sed -n 's/.*\.\.\. *FAILED (\(.*\))$/\1/p' "$log" | sort | paste -sd' ')"
		;;
	esac
}

# run_check COMP OBJDIR LOG: make -k check (a failing unit test does not
# keep the others from running), as nobody for util-linux under root.
run_check() {
	local comp=$1 obj=$2 log=$3
	if [ "$comp" = util-linux ] && [ "$(id -u)" -eq 0 ]; then
		make -C "$obj" -j"$MS_JOBS" check-programs >>"$log" 2>&1 || return 1
		chmod 755 "$WORK"
		chown -R nobody "$obj" "$TMPDIR"
		CCACHE_DISABLE=1 setpriv --reuid=nobody --regid=nogroup --clear-groups \
			make -k -C "$obj" check >>"$log" 2>&1 || true
	else
		make -k -C "$obj" -j"$MS_JOBS" check >>"$log" 2>&1 || true
	fi
}

# prefixes BASELINE COMPONENT: build (and check) every prefix; STATUS=1
# if one did not build or failed a test pristine passed.
STATUS=0
prefixes() {
	local base=$1 comp=$2 tree=$MS_ROOT/$2/$1 src obj log i=0 c t0 build check
	local name subj p f s fails newf pristine_fails='' pristine_n=0
	local -a commits
	if [ ! -d "$tree/.git" ] || ! git -C "$tree" rev-parse -q --verify pristine >/dev/null; then
		die "$comp/$base: no working tree (run ./build.sh trees)"
	fi
	if [ "$(cat "$tree/.git/mountsafe-series" 2>/dev/null)" != "$(series_hash "$comp" "$base")" ] ||
		[ "$(cat "$tree/.git/mountsafe-applied" 2>/dev/null)" != "$(git -C "$tree" rev-parse HEAD)" ]; then
		say "$comp/$base: the working tree is not patches/$comp/$base/series; building its commits as they are"
	fi
	mapfile -t commits < <(git -C "$tree" rev-parse pristine; git -C "$tree" rev-list --reverse pristine..HEAD)
	# build.sh's layout: the object directory beside COMPONENT.src.
	src=$WORK/$comp.src
	obj=$WORK/$comp
	rm -rf "$src"
	git -C "$tree" worktree add -q --detach "$src" pristine
	WT="$tree|$src"
	mkdir -p "$LOGDIR/$base-$comp"
	for c in "${commits[@]}"; do
		t0=$(date +%s)
		if [ "$i" = 0 ]; then
			# (Not 0000: util-linux's deb12 series has a patch 0000.)
			name=base subj=pristine
		else
			name=$(git -C "$tree" log -1 --format=%B "$c" | sed -n 's/^Patch-Name: //p' | tail -n1)
			name=${name#../}
			name=${name%%-*}
			[ -n "$name" ] || name=$(printf '+%03d' "$i")
			subj=$(git -C "$tree" log -1 --format=%s "$c")
		fi
		log=$LOGDIR/$base-$comp/$name.log
		git -C "$src" checkout -q --detach "$c"
		git -C "$src" ls-files -z | (cd "$src" && xargs -0 touch -h -d "$STAMP")
		rm -rf "$obj" && mkdir -p "$obj"
		build=ok check=-
		# shellcheck disable=SC2046 # the options, one word each
		if ! (cd "$obj" && CC="ccache gcc" CFLAGS="-O2 -g" "../$comp.src/configure" \
			--cache-file="$WORK/$comp-$base.cache" $(configure_args "$comp")) >"$log" 2>&1 ||
			! make -C "$obj" -j"$MS_JOBS" >>"$log" 2>&1; then
			build=FAILED STATUS=1
		elif [ "$CHECK" = 1 ]; then
			run_check "$comp" "$obj" "$log" || build=FAILED STATUS=1
			if [ "$build" = ok ]; then
				read -r p f s fails < <(check_counts "$comp" "$obj" "$log")
				check="$p passed, $f failed"
				[ "$s" = 0 ] || check="$check, $s skipped"
				if [ "$i" = 0 ]; then
					pristine_fails=" $fails " pristine_n=$((p + f + s))
				else
					newf=0
					for t in $fails; do
						[[ $pristine_fails == *" $t "* ]] || newf=$((newf + 1))
					done
					[ "$newf" = 0 ] || { check="$check ($newf new)"; STATUS=1; }
					[ $((p + f + s)) -ge "$pristine_n" ] ||
						{ check="$check ($((pristine_n - p - f - s)) fewer)"; STATUS=1; }
				fi
			fi
		fi
		printf '%-8s %-10s %-4s build %-6s check %-34s %5ss  %s\n' "$base" "$comp" "$name" \
			"$build" "$check" "$(($(date +%s) - t0))" "$subj"
		i=$((i + 1))
	done
	git -C "$tree" worktree remove --force "$src"
	WT=''
}

for base in "${BASES[@]}"; do
	for comp in "${COMPS[@]}"; do
		prefixes "$base" "$comp"
	done
done
say "logs in ${LOGDIR#"$MS_ROOT"/}/"
exit "$STATUS"
