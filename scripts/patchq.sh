# shellcheck shell=bash
# Patch series <-> git working tree.
#
# A working tree (util-linux/<baseline>, e2fsprogs/<baseline>) is a git
# repository: the commit tagged "pristine" is the unmodified source, and each
# patch of patches/<component>/<baseline>/series is one commit on top of it.
# Patch files carry a DEP-3 header:
#
#   From: Name <mail>            (DEP-3 "Author")
#   Subject: one-line summary    (DEP-3 "Description", first line)
#   Forwarded: no
#   Last-Update: YYYY-MM-DD
#   <blank line>
#   Long description = the commit message body, ready to mail upstream.
#   ---
#   <diff>
#
# series_apply materialises a tree from its series; series_export writes the
# tree's commits back as patch files.  Both touch only what changed, so make
# rebuilds only what a patch edit affects.

# The series file of a component/baseline; "series" may name a patch shared
# by every baseline as "../name.patch" (patches/COMPONENT/name.patch): one
# copy of a change that is the same on every baseline.
comp_dir() { printf '%s/patches/%s\n' "$MS_ROOT" "$1"; }
series_dir() { printf '%s/%s\n' "$(comp_dir "$1")" "$2"; }

series_list() {
	local f
	f="$(series_dir "$1" "$2")/series"
	[ -f "$f" ] || return 0
	sed -e 's/#.*//' -e 's/[[:space:]]\+-p1[[:space:]]*$//' -e '/^[[:space:]]*$/d' "$f"
}

# Parse a patch file: print the header field $2 (From, Subject, Forwarded,
# Last-Update) from the first paragraph.
patch_field() {
	awk -v f="$2" 'BEGIN{IGNORECASE=1} /^$/{exit}
		{ i=index($0, ":"); if (i && tolower(substr($0,1,i-1)) == tolower(f)) {
			v=substr($0,i+1); sub(/^[ \t]+/, "", v); print v; exit } }' "$1"
}
# The long description: after the header paragraph, up to the "---" line.
patch_body() {
	awk 'p==0 && /^$/ {p=1; next} p==1 && (/^---$/ || /^diff --git / || /^Index: /) {exit}
		p==1 {print}' "$1" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'
}
# The diff part of a patch (for comparing two versions of one patch).
patch_diff() { awk '/^diff --git /{p=1} p' "$1"; }

# series_apply TREE COMPONENT BASELINE: reset TREE's branch to pristine + series.
series_apply() {
	local tree=$1 comp=$2 base=$3 dir head p pf idx msg author subj body
	dir=$(series_dir "$comp" "$base")
	head=$(git -C "$tree" rev-parse pristine)
	idx=$(mktemp)
	GIT_INDEX_FILE=$idx git -C "$tree" read-tree "$head"
	while read -r p; do
		pf=$dir/$p
		[ -f "$pf" ] || die "series $comp/$base: missing patch $p"
		if ! GIT_INDEX_FILE=$idx git -C "$tree" apply --cached --whitespace=nowarn "$pf" 2>"$idx.err"; then
			cat "$idx.err" >&2
			die "patch does not apply: patches/$comp/$base/$p"
		fi
		author=$(patch_field "$pf" From)
		[ -n "$author" ] || author=$(patch_field "$pf" Author)
		subj=$(patch_field "$pf" Subject)
		[ -n "$subj" ] || subj=$(patch_field "$pf" Description)
		[ -n "$subj" ] || die "patches/$comp/$base/$p: no Subject/Description"
		body=$(patch_body "$pf")
		msg=$(printf '%s\n\n%s\n\nPatch-Name: %s\nForwarded: %s\nLast-Update: %s\n' \
			"$subj" "$body" "$p" "$(patch_field "$pf" Forwarded)" \
			"$(patch_field "$pf" Last-Update)")
		local t
		t=$(GIT_INDEX_FILE=$idx git -C "$tree" write-tree)
		head=$(GIT_AUTHOR_NAME="${author% <*}" GIT_AUTHOR_EMAIL="$(sed -n 's/.*<\(.*\)>.*/\1/p' <<<"$author")" \
			GIT_AUTHOR_DATE="$(patch_field "$pf" Last-Update) 00:00:00 +0000" \
			GIT_COMMITTER_NAME=mountsafe GIT_COMMITTER_EMAIL=build@mountsafe.invalid \
			GIT_COMMITTER_DATE="2000-01-01 00:00:00 +0000" \
			git -C "$tree" commit-tree "$t" -p "$head" -m "$msg")
	done < <(series_list "$comp" "$base")
	rm -f "$idx" "$idx.err"
	git -C "$tree" rev-parse "$head" >"$tree/.git/mountsafe-applied"
	if [ "$(git -C "$tree" rev-parse HEAD)" != "$head" ]; then
		git -C "$tree" reset -q --hard "$head"
	fi
}

# Commits between pristine and HEAD that series_apply did not produce, or
# uncommitted edits: things an apply would throw away.
tree_has_local_work() {
	local tree=$1
	[ -n "$(git -C "$tree" status --porcelain --untracked-files=no)" ] && return 0
	[ -f "$tree/.git/mountsafe-applied" ] &&
		[ "$(cat "$tree/.git/mountsafe-applied")" != "$(git -C "$tree" rev-parse HEAD)" ]
}

# series_export TREE COMPONENT BASELINE: write every commit pristine..HEAD as a
# patch file and rewrite the series.  Uncommitted edits are folded into the
# newest commit first, so "edit, then export" is one command.
#
# A commit whose Patch-Name is "../NAME.patch" is a patch shared by every
# baseline's series (patches/COMPONENT/NAME.patch): it is written there, and
# the other baselines' trees pick it up at the next ./build.sh.  A patch
# file is rewritten only when the change or its message differ: a diff that
# applies to the commit's parent and gives the commit's tree is kept as it
# is (so a shared patch does not flip between the baselines' line offsets).
series_export() {
	local tree=$1 comp=$2 base=$3 dir c name subj body fwd upd out old tmp today n=0 rel
	dir=$(series_dir "$comp" "$base")
	mkdir -p "$dir"
	today=$(date -u +%F)
	# A tree made from an older patches/ (another baseline's export changed a
	# shared patch, or patches/ was edited) would write the old patches back.
	if [ "$(cat "$tree/.git/mountsafe-series" 2>/dev/null)" != "$(series_hash "$comp" "$base")" ] &&
		[ "${MOUNTSAFE_EXPORT_FORCE:-0}" != 1 ]; then
		die "$comp/$base: patches/$comp changed since this tree was made; run ./build.sh trees first (MOUNTSAFE_EXPORT_FORCE=1 overwrites patches/ with this tree)"
	fi
	if [ -n "$(git -C "$tree" status --porcelain --untracked-files=no)" ]; then
		[ "$(git -C "$tree" rev-parse HEAD)" != "$(git -C "$tree" rev-parse pristine)" ] ||
			die "$tree: uncommitted edits but no patch to fold them into: git commit them first"
		say "$comp/$base: folding uncommitted edits into $(git -C "$tree" log -1 --format=%s)"
		git -C "$tree" commit -q -a --amend --no-edit
	fi
	tmp=$(mktemp -d)
	mkdir -p "$tmp/out"
	: >"$tmp/series"
	for c in $(git -C "$tree" rev-list --reverse pristine..HEAD); do
		n=$((n + 1))
		subj=$(git -C "$tree" log -1 --format=%s "$c")
		name=$(git -C "$tree" log -1 --format=%B "$c" | sed -n 's/^Patch-Name: //p' | tail -n1)
		if [ -z "$name" ]; then
			name=$(printf '%04d-%s.patch' "$n" \
				"$(tr -c 'A-Za-z0-9\n' '-' <<<"$subj" | sed -e 's/--*/-/g' -e 's/^-//' -e 's/-$//' | cut -c1-52)")
		fi
		case $name in
		../*/* | /* | */*/*) die "$comp/$base: patch name $name: only NAME or ../NAME" ;;
		esac
		fwd=$(git -C "$tree" log -1 --format=%B "$c" | sed -n 's/^Forwarded: //p' | tail -n1)
		body=$(git -C "$tree" log -1 --format=%b "$c" |
			grep -v -E '^(Patch-Name|Forwarded|Last-Update): ' | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}')
		# Where the file goes, relative to patches/COMPONENT.
		rel=$base/$name
		[ "${name#../}" = "$name" ] || rel=${name#../}
		out=$tmp/out/$rel
		mkdir -p "${out%/*}"
		old=$(comp_dir "$comp")/$rel
		{
			printf 'From: %s <%s>\n' "$(git -C "$tree" log -1 --format=%an "$c")" \
				"$(git -C "$tree" log -1 --format=%ae "$c")"
			printf 'Subject: %s\n' "$subj"
			printf 'Forwarded: %s\n' "${fwd:-no}"
			printf 'Last-Update: @@UPDATE@@\n\n'
			[ -z "$body" ] || printf '%s\n' "$body"
		} >"$tmp/head"
		if [ -f "$old" ] && patch_gives "$tree" "$old" "$c"; then
			# Same change: keep the old diff part.
			awk '/^---$/ {p=1} p' "$old" >"$tmp/tail"
		else
			{
				printf -- '---\n'
				git -C "$tree" diff --no-color --no-ext-diff --stat=72 "$c^" "$c"
				printf '\n'
				# No "index" lines: they name one baseline's blobs.
				git -C "$tree" diff --no-color --no-ext-diff -M "$c^" "$c" | grep -v '^index '
			} >"$tmp/tail"
		fi
		cat "$tmp/head" "$tmp/tail" >"$tmp/new"
		# The date moves only when the file would change.
		upd=$today
		if [ -f "$old" ] && sed 's/^Last-Update: .*/Last-Update: @@UPDATE@@/' "$old" | cmp -s - "$tmp/new"; then
			upd=$(patch_field "$old" Last-Update)
		fi
		sed "s/^Last-Update: @@UPDATE@@\$/Last-Update: $upd/" "$tmp/new" >"$out"
		echo "$name" >>"$tmp/series"
	done
	# Keep the old series' comment lines at the top.
	{ grep '^#' "$dir/series" 2>/dev/null || true; cat "$tmp/series"; } >"$tmp/series.new"
	# Patches this series no longer names: a baseline's own are removed; a
	# shared one only when no other series names it either.
	for name in $(series_list "$comp" "$base"); do
		grep -qxF "$name" "$tmp/series" && continue
		if [ "${name#../}" = "$name" ]; then
			say "removing patches/$comp/$base/$name"; rm -f "$dir/$name"
		elif ! grep -lxF "$name" "$(comp_dir "$comp")"/*/series | grep -qvxF "$dir/series"; then
			say "removing patches/$comp/${name#../}"; rm -f "$dir/$name"
		fi
	done
	while read -r out; do
		rel=${out#"$tmp"/out/}
		cmp -s "$out" "$(comp_dir "$comp")/$rel" ||
			{ cp "$out" "$(comp_dir "$comp")/$rel"; say "wrote patches/$comp/$rel"; }
	done < <(find "$tmp/out" -name '*.patch' | sort)
	cmp -s "$tmp/series.new" "$dir/series" || cp "$tmp/series.new" "$dir/series"
	rm -rf "$tmp"
	git -C "$tree" rev-parse HEAD >"$tree/.git/mountsafe-applied"
	series_hash "$comp" "$base" >"$tree/.git/mountsafe-series"
	say "$comp/$base: $n patch(es) in patches/$comp/$base/series"
}

# patch_gives TREE PATCHFILE COMMIT: does PATCHFILE, applied to COMMIT's
# parent, give exactly COMMIT's tree?
patch_gives() {
	local tree=$1 pf=$2 c=$3 idx rc=1
	idx=$(mktemp)
	GIT_INDEX_FILE=$idx git -C "$tree" read-tree "$c^"
	if GIT_INDEX_FILE=$idx git -C "$tree" apply --cached --whitespace=nowarn "$pf" 2>/dev/null &&
		[ "$(GIT_INDEX_FILE=$idx git -C "$tree" write-tree)" = "$(git -C "$tree" rev-parse "$c^{tree}")" ]; then
		rc=0
	fi
	rm -f "$idx"
	return $rc
}

# A digest of everything in a series, to tell whether a tree is current.
series_hash() {
	local dir p
	dir=$(series_dir "$1" "$2")
	{
		series_list "$1" "$2"
		while read -r p; do cat "$dir/$p" 2>/dev/null; done < <(series_list "$1" "$2")
	} | sha256sum | cut -d' ' -f1
}
