#!/bin/bash
# shellcheck source-path=SCRIPTDIR
# The series in the forms upstream and Debian take them (docs/upstream/).
#
#   scripts/upstream.sh [patches] [PROJECT...]  git format-patch of the
#       upstream baseline's series into docs/upstream/<project>/:
#       0000-cover-letter.patch (subject and text from
#       docs/upstream/<project>-cover-letter.md) and 0001-... one per
#       patch, with To/Cc headers, ready for git send-email
#   scripts/upstream.sh debdiff [SOURCE...]     docs/upstream/debian/
#       <source>-<release>.debdiff: Debian's source package against ours,
#       for each release scripts/deb.sh builds (MOUNTSAFE_RELEASES)
#   scripts/upstream.sh all                     both
#
# PROJECT, SOURCE: util-linux, e2fsprogs (default: both).
#
# The patches come from the working trees util-linux/upstream and
# e2fsprogs/upstream, made by "./build.sh trees" (run here when a tree is
# missing or older than patches/; about 20 s, no compiling).  A tree with
# edits or commits that are not in patches/ is refused: the output is the
# series in patches/.  The messages lose the trailers the trees carry for
# export (Patch-Name, Forwarded, Last-Update); the files do not depend on
# the git configuration or version of the machine, nor on the time (no
# signature, zero commit ids, the patches' own dates, no Message-Id:
# git send-email adds those and threads the mails itself).
#
# A debdiff is the debian/ directory of Debian's source package (the
# .dsc ./build.sh fetched into ~/.cache/mountsafe/src/, the version
# scripts/deb.sh builds) against the same tree after the lines of
# scripts/deb.sh's build_source that make ours: the series in
# debian/patches/mountsafe/ and debian/patches/series, the changelog
# entry, the packaging edits.  Those lines are taken from deb.sh itself,
# so the debdiff is what it builds; the series is also checked to apply
# (dpkg-source --before-build).  Its changelog entry names the commit of
# this checkout, as deb.sh's does.  Apply one with "patch -p1" in
# Debian's unpacked source.
set -euo pipefail

# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
# shellcheck source=patchq.sh
. "$MS_ROOT/scripts/patchq.sh"

OUT=$MS_ROOT/docs/upstream
PROJECTS=(util-linux e2fsprogs)

upstream_usage() {
	awk 'NR > 1 && !/^#/ {exit} NR > 2 && !/shellcheck/ {sub(/^# ?/, ""); print}' "$0"
}

# The headers of each project's mail (MAINTAINERS, list).
mail_opts() {
	case $1 in
	util-linux) printf '%s\n' --subject-prefix=PATCH \
		--to=util-linux@vger.kernel.org '--cc=Karel Zak <kzak@redhat.com>' ;;
	e2fsprogs) printf '%s\n' '--subject-prefix=PATCH e2fsprogs' \
		--to=linux-ext4@vger.kernel.org "--cc=Theodore Ts'o <tytso@mit.edu>" ;;
	esac
}

# git with no configuration but the repository's own.
pgit() { GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 git "$@"; }

# upstream_tree PROJECT: the working tree of the upstream baseline, as
# patches/ has it; prints its path.
upstream_tree() {
	local comp=$1 tree=$MS_ROOT/$1/upstream
	if [ ! -d "$tree/.git" ] ||
		[ "$(cat "$tree/.git/mountsafe-series" 2>/dev/null)" != "$(series_hash "$comp" upstream)" ]; then
		say "$comp/upstream is missing or older than patches/: ./build.sh trees"
		"$MS_ROOT/build.sh" trees >&2
	fi
	if tree_has_local_work "$tree"; then
		die "$comp/upstream has edits or commits that are not in patches/: export them (./build.sh export $comp/upstream) or reset the tree first"
	fi
	printf '%s\n' "$tree"
}

# format_patches PROJECT: docs/upstream/PROJECT/, 0000-cover-letter.patch
# and one 000N-*.patch a patch.
format_patches() {
	local comp=$1 tree letter subject c parent msg dir n opts=()
	tree=$(upstream_tree "$comp")
	letter=$OUT/$comp-cover-letter.md
	subject=$(sed -n '1s/^Subject: //p' "$letter" 2>/dev/null)
	[ -n "$subject" ] || die "$letter: no 'Subject: ...' on its first line"
	# The series again, as objects only (no ref of the tree moves), with
	# the messages upstream gets.
	parent=$(pgit -C "$tree" rev-parse pristine)
	for c in $(pgit -C "$tree" rev-list --reverse pristine..HEAD); do
		msg=$(pgit -C "$tree" log -1 --format=%B "$c" |
			grep -v -E '^(Patch-Name|Forwarded|Last-Update): ')
		parent=$(GIT_AUTHOR_NAME=$(pgit -C "$tree" log -1 --format=%an "$c") \
			GIT_AUTHOR_EMAIL=$(pgit -C "$tree" log -1 --format=%ae "$c") \
			GIT_AUTHOR_DATE=$(pgit -C "$tree" log -1 --format=%ad --date=raw "$c") \
			GIT_COMMITTER_NAME=mountsafe GIT_COMMITTER_EMAIL=build@mountsafe.invalid \
			GIT_COMMITTER_DATE="2000-01-01 00:00:00 +0000" \
			pgit -C "$tree" commit-tree "$c^{tree}" -p "$parent" -m "$msg")
	done
	dir=$OUT/$comp
	rm -rf "$dir.new"
	mkdir -p "$dir.new"
	mapfile -t opts < <(mail_opts "$comp")
	# The cover letter is from the author of the newest patch, dated as it.
	GIT_COMMITTER_NAME=$(pgit -C "$tree" log -1 --format=%an "$parent") \
		GIT_COMMITTER_EMAIL=$(pgit -C "$tree" log -1 --format=%ae "$parent") \
		GIT_COMMITTER_DATE=$(pgit -C "$tree" log -1 --format=%ad --date=raw "$parent") \
		pgit -C "$tree" -c core.abbrev=12 format-patch --quiet --cover-letter --numbered \
		--zero-commit --no-signature --no-thread "${opts[@]}" -o "$dir.new" "pristine..$parent"
	# The letter's subject and text in place of git's placeholders.
	awk -v subject="$subject" -v body="$letter" '
		/\*\*\* SUBJECT HERE \*\*\*/ { sub(/\*\*\* SUBJECT HERE \*\*\*/, subject) }
		/^\*\*\* BLURB HERE \*\*\*$/ {
			skip = 1
			while ((getline line < body) > 0) {
				if (skip) { if (line == "") skip = 0; continue }
				print line
			}
			next
		}
		{ print }' "$dir.new/0000-cover-letter.patch" >"$dir.new/cover"
	mv "$dir.new/cover" "$dir.new/0000-cover-letter.patch"
	! grep -q '\*\*\* \(SUBJECT\|BLURB\) HERE \*\*\*' "$dir.new/0000-cover-letter.patch" ||
		die "$comp: the cover letter still has git's placeholders"
	rm -rf "$dir"
	mv "$dir.new" "$dir"
	n=$(find "$dir" -name '0*.patch' ! -name '0000-*' | wc -l)
	echo "${dir#"$MS_ROOT"/}: cover letter and $n patches ($(series_list "$comp" upstream | wc -l) in patches/$comp/upstream/series)"
}

# ---- the Debian route ----

# scripts/deb.sh's functions (versions, changelog entry) without running
# it: everything but its last line, the call of main.
load_deb_sh() {
	local deb=$MS_ROOT/scripts/deb.sh
	[ "$(tail -n 1 "$deb")" = 'main "$@"' ] ||
		die "scripts/deb.sh no longer ends with 'main \"\$@\"': see load_deb_sh in $0"
	# shellcheck source=deb.sh
	. <(sed '$d' "$deb")
}

# The lines of deb.sh's build_source that turn Debian's unpacked source
# ($dir/src) into ours.
deb_prepare_code() {
	awk '/^\t# Our series after Debian.s\.$/ {p = 1}
		/^\t# A fresh chroot from the tarball/ {exit}
		p' "$MS_ROOT/scripts/deb.sh"
}

# debdiff_one WORK REL PKG: docs/upstream/debian/PKG-REL.debdiff.
debdiff_one() {
	local work=$1/$3-$2 rel=$2 pkg=$3 ver ours dsc top code out
	# Read by the lines of deb.sh (deb_prepare_code) run below.
	# shellcheck disable=SC2034
	local comp=$3 sb dir=$1/$3-$2/ours log=$1/$3-$2.log p
	# shellcheck disable=SC2034
	sb=$(rel_base "$rel")
	ver=$(release_version "$rel" "$pkg")
	ours=$(local_version "$ver" "$pkg" "$rel")
	dsc=$(fetch_dsc "$pkg" "$ver")
	top=$pkg-$(sed -n 's/^Version: \([0-9]*:\)\{0,1\}\(.*\)-[^-]*$/\2/p' "$dsc")
	[ "$top" != "$pkg-" ] || die "no upstream version in $dsc"
	rm -rf "$work"
	mkdir -p "$work/debian" "$dir"
	dpkg-source --no-check -x "$dsc" "$work/debian/$top" >"$log" 2>&1 ||
		{ cat "$log" >&2; die "dpkg-source -x failed for $dsc"; }
	cp -a "$work/debian/$top" "$dir/src"
	code=$(deb_prepare_code)
	grep -q 'changelog_entry' <<<"$code" ||
		die "the source preparation of scripts/deb.sh's build_source was not found: see deb_prepare_code in $0"
	eval "$code"
	mkdir -p "$work/ours" "$OUT/debian"
	mv "$dir/src" "$work/ours/$top"
	out=$OUT/debian/$pkg-$rel.debdiff
	# As debdiff shows a 3.0 (quilt) package of the same upstream version:
	# debian/ only, both sides named <source>-<upstream version>; without
	# the timestamps, so that the file changes only with its content.
	(cd "$work" && LC_ALL=C diff -Nru "debian/$top/debian" "ours/$top/debian") |
		sed -E -e 's#^diff -Nru debian/([^ ]*) ours/(.*)$#diff -Nru \1 \2#' \
			-e 's#^--- debian/([^\t]*)\t.*$#--- \1#' \
			-e 's#^\+\+\+ ours/([^\t]*)\t.*$#+++ \1#' >"$out.new" || true
	grep -q '^+++ ' "$out.new" || die "$rel: $pkg: empty debdiff"
	mv "$out.new" "$out"
	echo "${out#"$MS_ROOT"/}: Debian's $pkg $ver against ours $ours ($(grep -c '^diff -Nru' "$out") files)"
}

debdiffs() {
	local work rel s rc srcs=("$@") failed=()
	load_deb_sh
	[ ${#srcs[@]} -gt 0 ] || srcs=("${SOURCES[@]}")
	need_pkgs dpkg-dev
	apt_setup
	work=$(mktemp -d "${TMPDIR:-/tmp}/mountsafe-debdiff.XXXXXX")
	# shellcheck disable=SC2064 # the directory is known now
	trap "rm -rf '$work'" EXIT
	for rel in "${RELEASES[@]}"; do
		rel_base "$rel" >/dev/null
		for s in "${srcs[@]}"; do
			# One at a time in a subshell of its own (with errexit: not
			# in a tested context), so that one that fails leaves the
			# others; its old debdiff goes, as deb.sh cannot build it.
			set +e
			(set -e; debdiff_one "$work" "$rel" "$s")
			rc=$?
			set -e
			if [ "$rc" -ne 0 ]; then
				failed+=("$s/$rel")
				rm -f "$OUT/debian/$s-$rel.debdiff"
			fi
		done
	done
	[ ${#failed[@]} -eq 0 ] ||
		die "no debdiff for ${failed[*]}: scripts/deb.sh's own preparation failed (above)"
}

upstream_main() {
	local cmd=patches p
	case ${1:-} in
	-h | --help | help) upstream_usage; exit 0 ;;
	patches | debdiff | all) cmd=$1; shift ;;
	esac
	for p in "$@"; do
		case $p in util-linux | e2fsprogs) ;; *) upstream_usage >&2; exit 2 ;; esac
	done
	[ "$cmd" != all ] || [ $# -eq 0 ] || { upstream_usage >&2; exit 2; }
	[ $# -gt 0 ] || set -- "${PROJECTS[@]}"
	if [ "$cmd" != debdiff ]; then
		for p in "$@"; do format_patches "$p"; done
	fi
	if [ "$cmd" != patches ]; then
		debdiffs "$@"
	fi
}

upstream_main "$@"
