# shellcheck shell=bash
# apt over the life of a Debian system with our packages, in chroots of a
# debootstrapped root (rootfs_tarball), no VM: install from the signed
# repository, refusal of a broken copy of it, hold and go back, a Debian
# point release arriving, our rebuild on it, the upgrade from our previous
# release.  Sourced after scripts/common.sh by tests/stages/packages
# (apt_life) and tests/stages/system (repo_install, for its images).
#
# Reads REPO (the signed repository, build/repo), SUITE (its suite:
# bookworm or trixie; default bookworm), APT_LOGS (where the checks' logs
# go) and APT_WORK (scratch space).

# in_root ROOT CMD...: CMD in the chroot ROOT, without questions.
in_root() {
	local r=$1
	shift
	DEBIAN_FRONTEND=noninteractive chroot "$r" "$@"
}

# apt_local ROOT ARGS...: apt-get update of the stanzas in
# sources.list.d only (ours and the tests' local ones: no network), then
# apt-get ARGS.
apt_local() {
	local r=$1
	shift
	in_root "$r" apt-get -q update -o Dir::Etc::SourceList=/dev/null && in_root "$r" apt-get -q "$@"
}

# repo_install ROOT: as a user would: our signed repository (REPO,
# served from a directory of the root, /srv/mountsafe-repo), its public
# key, the stanza and the pin it ships, then apt update && apt upgrade
# with signature checking on.  (Only our stanza is refreshed: no network.)
repo_install() {
	local root=$1 rc=0 suite=${SUITE:-bookworm}
	mkdir -p "$root/srv" "$root/usr/share/keyrings" "$root/etc/apt/sources.list.d" \
		"$root/etc/apt/preferences.d"
	rm -rf "$root/srv/mountsafe-repo"
	cp -a "$REPO" "$root/srv/mountsafe-repo"
	install -m 0644 "$REPO/mountsafe-archive-keyring.gpg" "$root/usr/share/keyrings/"
	install -m 0644 "$REPO/mountsafe-$suite.sources" "$root/etc/apt/sources.list.d/mountsafe.sources"
	install -m 0644 "$REPO/mountsafe.pref" "$root/etc/apt/preferences.d/"
	mount -t proc proc "$root/proc"
	apt_local "$root" upgrade -y || rc=$?
	umount "$root/proc"
	return $rc
}

# repo_serve ROOT DIR: DIR served as our repository in ROOT from now on
# (a later build, published where the first was).
repo_serve() {
	rm -rf "$1/srv/mountsafe-repo"
	cp -a "$2" "$1/srv/mountsafe-repo"
}

# installed ROOT PKG...: "PKG=VERSION" of each PKG installed in ROOT.
installed() {
	local r=$1
	shift
	# shellcheck disable=SC2016 # dpkg-query's fields
	in_root "$r" dpkg-query -W -f='${db:Status-Abbrev} ${Package}=${Version}\n' "$@" 2>/dev/null |
		awk '$1 ~ /^.i/ {print $2}'
}

# ours_in ROOT: "PKG=VERSION" of every package of ours installed in ROOT.
ours_in() {
	# shellcheck disable=SC2016
	in_root "$1" dpkg-query -W -f='${Package}=${Version}\n' | { grep '+mountsafe[0-9]*$' || true; } | sort
}

# repo_refused ROOT HOW: in ROOT (repo_install done), break the served copy
# of the repository (HOW: tampered = one version in Packages changed,
# unsigned = InRelease and Release.gpg removed) and refresh it; prints
# "refused" when apt rejects it (and names apt's reason on the next line),
# "works" when apt accepts it.  The repository is put back afterwards.
repo_refused() {
	local root=$1 how=$2 r=$1/srv/mountsafe-repo p out rc=0 suite=${SUITE:-bookworm}
	p=$r/dists/$suite/main/binary-amd64/Packages
	cp -a "$r" "$r.good"
	case $how in
	tampered)
		sed -i '0,/^Version: /s/^Version: \(.*\)/Version: \1.1/' "$p"
		xz -9 -k -f "$p"
		;;
	unsigned) rm -f "$r/dists/$suite/InRelease" "$r/dists/$suite/Release.gpg" ;;
	esac
	# As a machine that has not seen the repository yet: apt fetches an
	# index only when the signed Release names a new one.
	rm -f "$root"/var/lib/apt/lists/*mountsafe-repo*
	out=$(in_root "$root" apt-get update -o Dir::Etc::SourceList=/dev/null 2>&1) || rc=$?
	printf '%s\n' "$out" >>"$APT_LOGS/system-apt-repo-$how.log"
	rm -rf "$r" && mv "$r.good" "$r"
	if [ "$rc" != 0 ] || grep -q '^E: ' <<<"$out"; then
		echo refused
		grep -m1 -E 'Hash Sum mismatch|not signed|NO_PUBKEY|is not signed|E: ' <<<"$out" || echo "apt exit $rc"
	else
		echo works
		echo "apt accepted the $how repository"
	fi
}

# packages_hold_and_go_back ROOT: in a copy of ROOT (our packages
# installed by apt), hold ours, check apt keeps them, then go back to
# Debian's as docs/packages.md says (unhold; apt install --allow-downgrades
# of Debian's versions from the archive; our stanza and pin removed, after
# which apt upgrade offers none of ours); before that, in the same copy, a
# tampered and an unsigned copy of the repository must be refused
# (repo_refused).  Prints the result rows
#   SCENARIO <TAB> OUTCOME <TAB> DETAIL
packages_hold_and_go_back() {
	local gb=$APT_WORK/root-go-back log=$APT_LOGS/system-apt-go-back.log pkgs back now bad='' rc=0 left
	local how res why w=$APT_WORK
	rm -rf "$gb" && cp -a "$1" "$gb" && rm -f "$w/left"
	# shellcheck disable=SC2016
	pkgs=$(in_root "$gb" dpkg-query -W -f='${Package} ${Version}\n' | awk '/mountsafe/ {print $1}' | sort)
	if [ -n "$pkgs" ]; then
		printf 'system-apt-install\tworks\tapt update && apt upgrade from the signed repository installed %s packages (system-apt-install.log)\n' \
			"$(echo "$pkgs" | wc -l)"
	else
		printf 'system-apt-install\terror\tapt upgrade from the repository installed none of ours (system-apt-install.log)\n'
	fi
	back=$(for p in $pkgs; do grep "^$p=" "$w/debian-versions"; done)
	cp /etc/resolv.conf "$gb/etc/resolv.conf"
	mount -t proc proc "$gb/proc"
	for how in tampered unsigned; do
		{ read -r res; read -r why; } < <(repo_refused "$gb" "$how")
		printf 'system-apt-repo-%s\t%s\t%s (system-apt-repo-%s.log)\n' "$how" "$res" "$why" "$how"
	done
	{
		echo "# our packages: ${pkgs//$'\n'/ }"
		# shellcheck disable=SC2086
		in_root "$gb" apt-mark hold $pkgs
		[ "$(in_root "$gb" apt-mark showhold | sort)" = "$pkgs" ] || { echo "hold: not every package held"; rc=1; }
		in_root "$gb" apt-get -q update || rc=1
		# Held: apt's full upgrade leaves ours alone, and even an explicit
		# install of Debian's versions is refused while they are held.
		in_root "$gb" apt-get -s -q dist-upgrade >"$w/upgrade-sim" || rc=1
		cat "$w/upgrade-sim"
		for p in $pkgs; do grep -q "^Inst $p " "$w/upgrade-sim" && { echo "held $p would be replaced"; rc=1; }; done
		# shellcheck disable=SC2086
		if in_root "$gb" apt-get install -y -q --allow-downgrades \
			--no-install-recommends $back >"$w/held-install" 2>&1; then
			echo "apt replaced held packages"; rc=1
		fi
		cat "$w/held-install"
		grep -q 'Held packages were changed' "$w/held-install" || { echo "no held-packages refusal"; rc=1; }
		# Go back.
		# shellcheck disable=SC2086
		in_root "$gb" apt-mark unhold $pkgs
		# shellcheck disable=SC2086
		in_root "$gb" apt-get install -y -q --allow-downgrades --no-install-recommends $back || rc=1
		in_root "$gb" dpkg --audit || rc=1
		# Nothing of our unit left: no enable link, no deb-systemd-helper state.
		left=$(cd "$gb" && find etc/systemd var/lib/systemd -name '*e2fsck_record*' 2>/dev/null || true)
		echo "# left of e2fsck_record.service: ${left:-nothing}"
		[ -z "$left" ] || echo "$left" >"$w/left"
		# Our repository still configured, apt upgrade would bring ours
		# back (they sort above Debian's): the stanza and pin go too.
		echo "# apt upgrade with our repository still configured (not done):"
		in_root "$gb" apt-get -s -q upgrade | grep '^Inst ' || true
		rm -f "$gb/etc/apt/sources.list.d/mountsafe.sources" "$gb/etc/apt/preferences.d/mountsafe.pref"
		in_root "$gb" apt-get -q update || rc=1
		echo "# apt upgrade without them:"
		in_root "$gb" apt-get -s -q upgrade >"$w/upgrade-sim" || rc=1
		cat "$w/upgrade-sim"
		! grep -q '^Inst .*mountsafe' "$w/upgrade-sim" || { echo "apt upgrade would install ours again"; rc=1; }
	} >"$log" 2>&1 || rc=1
	umount "$gb/proc"
	now=$(for p in $pkgs; do installed "$gb" "$p"; done)
	[ "$now" = "$back" ] || bad="installed now: ${now//$'\n'/ }"
	[ -z "$(in_root "$gb" apt-mark showhold)" ] || bad="$bad; still held: $(in_root "$gb" apt-mark showhold | paste -sd' ')"
	[ ! -s "$w/left" ] || bad="$bad; left behind: $(paste -sd' ' "$w/left")"
	rm -rf "$gb"
	if [ "$rc" = 0 ] && [ -z "$bad" ]; then
		printf 'system-apt-go-back\tworks\tapt-mark hold: apt refused to replace the %s held packages; unhold + apt install --allow-downgrades restored %s\n' \
			"$(echo "$pkgs" | wc -l)" "${back//$'\n'/ }"
	else
		printf 'system-apt-go-back\terror\t%s (see system-apt-go-back.log)\n' "${bad:-apt failed}"
	fi
}

# ---- versions of later builds (Debian's and ours) ----

# debian_next OURS SUITE: Debian's next stable update of the version
# OURS was built on (scripts/deb.sh's local_version undone: VER+mountsafeN
# or VER+debNNu0+mountsafeN), as a test point release: +debNNu99, which
# sorts above ours.
debian_next() {
	local v=${1%%+mountsafe*}
	[[ $v =~ ^(.*)\+deb[0-9]+u[0-9]+$ ]] && v=${BASH_REMATCH[1]}
	printf '%s+deb%su99\n' "$v" "$(rel_number "$2")"
}

# deb_reversion DEB OUTDIR VERSION MAP: DEB as OUTDIR/<package>_<VERSION>_<arch>.deb,
# its "(= OLD)" relations to its siblings rewritten by MAP (lines "OLD NEW"),
# as a rebuild of the same source at another version would have them.
deb_reversion() {
	local deb=$1 out=$2 new=$3 map=$4 x
	x=$(mktemp -d "$APT_WORK/rev.XXXXXX")
	dpkg-deb -R "$deb" "$x/p"
	sed -i "s/^Version: .*/Version: $new/" "$x/p/DEBIAN/control"
	sed -i -f <(awk '{ gsub(/\./, "\\.", $1); print "s/(= " $1 ")/(= " $2 ")/g" }' "$map") \
		"$x/p/DEBIAN/control"
	dpkg-deb -Zgzip -z1 -b "$x/p" "$out/" >/dev/null
	rm -rf "$x"
}

# reversioned OUTDIR NEWVER-CMD PKG=DEB...: each DEB (whose package is
# PKG) re-versioned into OUTDIR; NEWVER-CMD OLD-VERSION prints the new
# version.  Prints nothing; the map of versions is OUTDIR.map.
reversioned() {
	local out=$1 cmd=$2 pd d v
	shift 2
	mkdir -p "$out"
	: >"$out.map"
	for pd in "$@"; do
		d=${pd#*=}
		v=$(dpkg-deb -f "$d" Version)
		printf '%s %s\n' "$v" "$($cmd "$v")" >>"$out.map"
	done
	sort -u -o "$out.map" "$out.map"
	for pd in "$@"; do
		d=${pd#*=}
		v=$(dpkg-deb -f "$d" Version)
		deb_reversion "$d" "$out" "$(awk -v v="$v" '$1 == v {print $2}' "$out.map")" "$out.map"
	done
}

# ours_repo OUT DEBDIR [DATE]: our repository as scripts/repo.sh makes it
# (our key, stanza and pin) from the .debs of DEBDIR, in OUT/repo; its
# Release dated DATE (apt ignores a Release older than the one it has, so
# an earlier release must carry an earlier date).
ours_repo() {
	local out=$1 d=$2 suite=${SUITE:-bookworm}
	rm -rf "$out" && mkdir -p "$out/debs/$suite"
	cp "$d"/*.deb "$out/debs/$suite/"
	(cd "$out/debs/$suite" && sha256sum -- *.deb >SHA256SUMS)
	if [ -n "${3:-}" ]; then printf 'APT::FTPArchive::Release::Date "%s";\n' "$3"; fi >"$out/apt.conf"
	APT_CONFIG=$out/apt.conf MOUNTSAFE_BUILD=$out "$MS_ROOT/scripts/repo.sh" >"$out/repo.log" 2>&1 ||
		{ cat "$out/repo.log" >&2; return 1; }
}

# debian_repo OUT SUITE DEB...: a repository of Debian's packages at OUT,
# one suite, origin and label "Debian" as the archive's, signed with a
# throwaway key (public key OUT/key.gpg).
debian_repo() {
	local out=$1 suite=$2 g=$APT_WORK/gnupg o
	shift 2
	if [ ! -d "$g" ]; then
		mkdir -m 700 "$g"
		gpg --homedir "$g" --batch --passphrase '' --quick-gen-key \
			'mountsafe test point release <root@localhost>' ed25519 sign never 2>/dev/null
	fi
	rm -rf "$out" && mkdir -p "$out/pool" "$out/dists/$suite/main/binary-amd64"
	cp "$@" "$out/pool/"
	(cd "$out" && apt-ftparchive packages pool) >"$out/dists/$suite/main/binary-amd64/Packages"
	o=APT::FTPArchive::Release
	(cd "$out/dists/$suite" && apt-ftparchive -o "$o::Origin=Debian" -o "$o::Label=Debian" \
		-o "$o::Suite=$suite" -o "$o::Codename=$suite" -o "$o::Architectures=amd64" \
		-o "$o::Components=main" release .) >"$APT_WORK/Release"
	mv "$APT_WORK/Release" "$out/dists/$suite/Release"
	gpg --homedir "$g" --batch --yes --clearsign -o "$out/dists/$suite/InRelease" "$out/dists/$suite/Release"
	gpg --homedir "$g" --batch --export >"$out/key.gpg"
}

# debian_deb PKG=VERSION: Debian's own package file of that version: from
# debootstrap's cache (what the root was made of), else downloaded through
# the private apt configuration into APT_WORK.
debian_deb() {
	local p=${1%%=*} v=${1#*=} f
	f=$MS_CACHE/rootfs/debs/${p}_${v//:/%3a}_
	f=$(compgen -G "$f*.deb" | head -n1 || true)
	if [ -z "$f" ]; then
		mkdir -p "$APT_WORK/dl"
		(cd "$APT_WORK/dl" && papt_get -q download "$1" >/dev/null) || return 1
		f=$(compgen -G "$APT_WORK/dl/${p}_${v//:/%3a}_*.deb" | head -n1)
	fi
	printf '%s\n' "$f"
}

# pool_deb PKG=VERSION: that package of ours in REPO's pool (file names
# without the epoch).
pool_deb() {
	local p=${1%%=*} v=${1#*=}
	compgen -G "$REPO/pool/${SUITE:-bookworm}/${p}_${v#*:}_*.deb" | head -n1
}

# The new versions of the three checks below, from the old: Debian's
# point release (APT_WORK/pr-versions: Debian's version, the next),
# our rebuild on it, our previous release (+mountsafe<N-1>;
# MS_APT_PREVIOUS_STEP=0, a negative control, gives it this build's version).
pr_ver() { awk -v v="$1" '$1 == v {print $2; exit}' "$APT_WORK/pr-versions"; }
rb_ver() { printf '%s+mountsafe%s\n' "$(debian_next "$1" "${SUITE:-bookworm}")" "${1##*+mountsafe}"; }
pv_ver() {
	local n=${1##*+mountsafe}
	printf '%s+mountsafe%s\n' "${1%+mountsafe*}" "$((n - ${MS_APT_PREVIOUS_STEP:-1}))"
}

# ---- the checks ----
# point_release ROOT: ROOT has ours from REPO with the pin it ships; a
# second local repository (origin Debian, signed, its stanza and key in
# ROOT) serves Debian's own packages of what ROOT has of ours, as Debian's
# next point release (debian_next), and apt update && apt upgrade runs.
# Works when ours stay installed; the point release must be seen first
# (apt-cache policy lists it, and apt upgrade without our pin would take
# it), or the check proves nothing.  Prints one row.
point_release() {
	local root=$1 log=$APT_LOGS/packages-apt-point-release.log w=$APT_WORK ours pairs=() pd ver
	local suite=${SUITE:-bookworm}-pointrelease sim kept pr
	mapfile -t ours < <(ours_in "$root")
	for pd in "${ours[@]}"; do
		ver=$(grep "^${pd%%=*}=" "$w/debian-versions" | cut -d= -f2-)
		pairs+=("${pd%%=*}=$(debian_deb "${pd%%=*}=$ver")") || return 1
	done
	# Debian's next version of each source: that of our version of it.
	{
		for pd in "${ours[@]}"; do printf '%s %s\n' "$(grep "^${pd%%=*}=" "$w/debian-versions" | cut -d= -f2-)" \
			"$(debian_next "${pd#*=}" "${SUITE:-bookworm}")"; done
	} | sort -u >"$w/pr-versions"
	reversioned "$w/pr-debs" pr_ver "${pairs[@]}"
	debian_repo "$root/srv/debian-pointrelease" "$suite" "$w/pr-debs"/*.deb
	install -m 0644 "$root/srv/debian-pointrelease/key.gpg" "$root/usr/share/keyrings/mountsafe-test-debian.gpg"
	printf 'Types: deb\nURIs: file:/srv/debian-pointrelease\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/mountsafe-test-debian.gpg\n' \
		"$suite" >"$root/etc/apt/sources.list.d/debian-pointrelease.sources"
	mount -t proc proc "$root/proc"
	{
		echo "# Debian's point release: $(cd "$w/pr-debs" && echo *.deb)"
		in_root "$root" apt-get -q update -o Dir::Etc::SourceList=/dev/null
		echo "# apt-cache policy (what the user sees):"
		in_root "$root" apt-cache policy mount e2fsprogs
		echo "# apt list --upgradable:"
		in_root "$root" apt list --upgradable 2>/dev/null
		echo "# apt upgrade without our pin (simulated, the control):"
		in_root "$root" apt-get -s -q -o Dir::Etc::PreferencesParts=/dev/null upgrade
	} >"$log" 2>&1 || true
	sim=$(grep -c "^Inst .*+deb$(rel_number "${SUITE:-bookworm}")u99 " "$log" || true)
	{ echo "# apt upgrade:"; in_root "$root" apt-get -q -y upgrade; } >>"$log" 2>&1 || true
	umount "$root/proc"
	kept=$(ours_in "$root" | wc -l)
	pr=$(installed "$root" "${ours[@]%%=*}" | grep -c 'u99$' || true)
	if [ "$sim" = 0 ]; then
		printf 'packages-apt-point-release\terror\tthe point release was not seen: apt upgrade without our pin would install none of it (packages-apt-point-release.log)\n'
	elif [ "$kept" = "${#ours[@]}" ] && [ "$pr" = 0 ]; then
		printf "packages-apt-point-release\tworks\tapt upgrade kept our %s packages (%s) over Debian's point release (%s), which it takes for %s of them without our pin (packages-apt-point-release.log)\n" \
			"$kept" "$(grep -m1 '^mount=' <<<"$(printf '%s\n' "${ours[@]}")")" \
			"$(awk '{print $2}' "$w/pr-versions" | paste -sd' ')" "$sim"
	else
		printf "packages-apt-point-release\terror\tapt upgrade replaced ours with Debian's point release: %s (packages-apt-point-release.log)\n" \
			"$(installed "$root" "${ours[@]%%=*}" | grep -v '+mountsafe' | paste -sd' ')"
	fi
}

# rebuild_taken ROOT: after point_release, our rebuild on Debian's point
# release (our packages re-versioned to <Debian's next>+mountsafeN, as
# ./build.sh would version them, since it builds on Debian's newest
# source) published in our repository: apt update && apt upgrade must take
# it.  Prints one row.
rebuild_taken() {
	local root=$1 log=$APT_LOGS/packages-apt-rebuild-taken.log w=$APT_WORK ours pairs=() pd want now
	mapfile -t ours < <(cat "$w/ours-installed")
	for pd in "${ours[@]}"; do pairs+=("${pd%%=*}=$(pool_deb "$pd")"); done
	reversioned "$w/rb-debs" rb_ver "${pairs[@]}"
	ours_repo "$w/rb" "$w/rb-debs" || { printf 'packages-apt-rebuild-taken\terror\tscripts/repo.sh failed on the rebuild\n'; return; }
	repo_serve "$root" "$w/rb/repo"
	mount -t proc proc "$root/proc"
	{ echo "# our rebuild: $(cd "$w/rb-debs" && echo *.deb)"; apt_local "$root" -y upgrade; } >"$log" 2>&1 || true
	umount "$root/proc"
	want=$(for pd in "${ours[@]}"; do echo "${pd%%=*}=$(rb_ver "${pd#*=}")"; done | sort)
	now=$(installed "$root" "${ours[@]%%=*}" | sort)
	if [ "$now" = "$want" ]; then
		printf 'packages-apt-rebuild-taken\tworks\tapt upgrade took our rebuild on the point release for all %s packages (%s) (packages-apt-rebuild-taken.log)\n' \
			"${#ours[@]}" "$(grep -m1 '^mount=' <<<"$now")"
	else
		printf 'packages-apt-rebuild-taken\terror\tinstalled: %s; wanted: %s (packages-apt-rebuild-taken.log)\n' \
			"$(comm -23 <(echo "$now") <(echo "$want") | paste -sd' ')" "$(comm -13 <(echo "$now") <(echo "$want") | paste -sd' ')"
	fi
}

# upgrade_from_previous TARBALL: a fresh root with our previous release
# (ours re-versioned to +mountsafe<N-1>, pv_ver, in a
# repository made by scripts/repo.sh with our key and pin) installed as a
# user does, then this build published in its place: apt update && apt
# upgrade must move every package to this build, whose changelog names the
# commit it was built from.  Prints one row.
upgrade_from_previous() {
	local root=$APT_WORK/root-previous log=$APT_LOGS/packages-apt-upgrade-from-previous.log w=$APT_WORK
	local ours pairs=() pd now want prev commit
	mapfile -t ours < <(cat "$w/ours-installed")
	for pd in "${ours[@]}"; do pairs+=("${pd%%=*}=$(pool_deb "$pd")"); done
	reversioned "$w/pv-debs" pv_ver "${pairs[@]}"
	ours_repo "$w/pv" "$w/pv-debs" "$(date -u -R -d "$(sed -n 's/^Date: //p' "$REPO/dists/${SUITE:-bookworm}/Release") - 1 day")" || { printf 'packages-apt-upgrade-from-previous\terror\tscripts/repo.sh failed on the previous release\n'; return; }
	rm -rf "$root" && mkdir -p "$root" && tar -xf "$1" -C "$root"
	{
		echo "# our previous release: $(cd "$w/pv-debs" && echo *.deb)"
		REPO=$w/pv/repo repo_install "$root"
		prev=$(ours_in "$root")
		echo "# installed: ${prev//$'\n'/ }"
		echo "# this build published:"
		repo_serve "$root" "$REPO"
		mount -t proc proc "$root/proc"
		apt_local "$root" -y upgrade
		umount "$root/proc"
	} >"$log" 2>&1 || true
	want=$(printf '%s\n' "${ours[@]}" | sort)
	now=$(installed "$root" "${ours[@]%%=*}" | sort)
	commit=$(zcat "$root/usr/share/doc/mount/changelog.Debian.gz" 2>/dev/null |
		sed -n '1,12s/.*Built from mountsafe commit \([^ ]*\)\./\1/p' | head -n1)
	prev=$(grep -m1 '^# installed: ' "$log" | grep -o 'mount=[^ ]*' || true)
	rm -rf "$root"
	if [ "$now" = "$want" ] && [ -n "$commit" ] && [ -n "$prev" ] && [ "$prev" != "$(grep -m1 '^mount=' <<<"$want")" ]; then
		printf 'packages-apt-upgrade-from-previous\tworks\tapt upgrade moved %s packages from our previous release (%s) to this build (%s, built from mountsafe commit %s) (packages-apt-upgrade-from-previous.log)\n' \
			"${#ours[@]}" "$prev" "$(grep -m1 '^mount=' <<<"$now")" "$commit"
	elif [ "$prev" = "$(grep -m1 '^mount=' <<<"$want")" ]; then
		printf 'packages-apt-upgrade-from-previous\terror\tour previous release and this build share the version %s: apt upgrade has nothing to take (packages-apt-upgrade-from-previous.log)\n' "$prev"
	else
		printf 'packages-apt-upgrade-from-previous\terror\tfrom %s: installed %s; wanted %s; commit "%s" (packages-apt-upgrade-from-previous.log)\n' \
			"${prev:-nothing}" "$(comm -23 <(echo "$now") <(echo "$want") | paste -sd' ')" \
			"$(comm -13 <(echo "$now") <(echo "$want") | paste -sd' ')" "$commit"
	fi
}

# ---- the release upgrade, Debian 12 with ours -> Debian 13 with ours ----

# trixie_archive OUT TAR13 [PKG...]: Debian 13's archive as the upgrade
# needs it, served locally (no network): Debian's own packages of every
# version installed in the Debian 13 root TAR13 (the packages an upgraded
# root ends with), and each PKG (one of ours the Debian 12 root has that
# TAR13 lacks: util-linux-extra) at the version of its source's packages
# there, from debootstrap's cache, else downloaded once into
# $MS_CACHE/relup/debs (a file name carries its version); signed
# (debian_repo) as suite trixie.  Prints the number of packages.
trixie_archive() {
	local out=$1 tar=$2 pv p v f dl=$MS_CACHE/relup/debs debs=() st src
	shift 2
	mkdir -p "$dl"
	st=$(tar -xOf "$tar" ./var/lib/dpkg/status | awk '
		/^Package: / { p = $2 } /^Status: / { s = $4 } /^Version: / { v = $2 } /^Source: / { src = $2 }
		/^$/ { if (s == "installed") print p "=" v " " (src == "" ? p : src); p = s = v = src = "" }')
	while read -r pv; do
		p=${pv%%=*} v=${pv#*=}
		f=$(compgen -G "$MS_CACHE/rootfs/debs/${p}_${v//:/%3a}_*.deb" | head -n1 || true)
		[ -n "$f" ] || f=$(compgen -G "$dl/${p}_${v//:/%3a}_*.deb" | head -n1 || true)
		if [ -z "$f" ]; then
			(cd "$dl" && papt_get -q download "$pv" >/dev/null) || { echo "cannot download $pv" >&2; return 1; }
			f=$(compgen -G "$dl/${p}_${v//:/%3a}_*.deb" | head -n1)
		fi
		debs+=("$f")
	done < <(
		cut -d' ' -f1 <<<"$st"
		for p in "$@"; do
			src=$(awk -v p="$p" '/^Package: / {q = $2; s = $2} /^Source: / {s = $2} /^$/ && q == p {print s; exit}' \
				"$REPO/dists/trixie/main/binary-amd64/Packages")
			# The version of the source's own package (bsdutils has an epoch, a
			# binNMU's +bN is per package: util-linux's, not a sibling's).
			v=$(awk -v s="$src" '$2 == s && $1 ~ "^" s "=" {sub(/^[^=]*=/, "", $1); print $1; exit}' <<<"$st")
			[ -z "$v" ] || echo "$p=$v"
		done)
	debian_repo "$out" trixie "${debs[@]}"
	printf '%s\n' "${#debs[@]}"
}

# release_go_back ROOT LOG: in ROOT, upgraded to Debian 13 with ours, the
# way back of docs/packages.md: Debian's versions of ours installed from
# the (local) Debian 13 archive with --allow-downgrades, our stanza and pin
# removed.  Works when every package is Debian's version, dpkg is clean,
# nothing of e2fsck_record.service is left and apt upgrade offers none of
# ours.  Also logs (and names in the row) what the documented
# "apt install PKG/trixie" picks: our suite is called trixie as well.
release_go_back() {
	local root=$1 log=$2 pkgs back now bad=() rc=0 sim left p v
	pkgs=$(ours_in "$root" | cut -d= -f1)
	back=$(for p in $pkgs; do
		v=$(awk -v p="$p" '/^Package: / {q = $2} /^Version: / && q == p {print $2; exit}' \
			"$root/srv/debian-archive/dists/trixie/main/binary-amd64/Packages")
		[ -z "$v" ] || echo "$p=$v"
	done)
	mount -t proc proc "$root/proc"
	{
		echo "# ours: ${pkgs//$'\n'/ }"
		echo "# the documented apt install --allow-downgrades PKG/trixie (simulated):"
		# shellcheck disable=SC2046 # one word a package
		in_root "$root" apt-get -s -q install --allow-downgrades --no-install-recommends $(awk '{print $0 "/trixie"}' <<<"$pkgs")
		echo "# Debian's versions: ${back//$'\n'/ }"
		# shellcheck disable=SC2086
		in_root "$root" apt-get -q -y install --allow-downgrades --no-install-recommends $back || rc=1
		rm -f "$root/etc/apt/sources.list.d/mountsafe.sources" "$root/etc/apt/preferences.d/mountsafe.pref"
		in_root "$root" apt-get -q update || rc=1
		echo "# apt upgrade without our stanza and pin (simulated):"
		in_root "$root" apt-get -s -q upgrade || rc=1
		echo "# dpkg --audit:"
		in_root "$root" dpkg --audit || rc=1
	} >"$log" 2>&1 || rc=1
	umount "$root/proc"
	sim=$(awk '/^# the documented/,/^# Debian.s versions/' "$log" | grep '^Inst ' | grep -vc '+mountsafe' || true)
	now=$(for p in $pkgs; do installed "$root" "$p"; done)
	[ -n "$back" ] && [ "$now" = "$back" ] || bad+=("installed now: $(grep '+mountsafe' <<<"$now" | paste -sd' ')")
	[ -z "$(in_root "$root" dpkg --audit 2>&1)" ] || bad+=("dpkg --audit reports problems")
	left=$(cd "$root" && { find etc/systemd var/lib/systemd -name '*e2fsck_record*' 2>/dev/null || true; } | paste -sd' ')
	[ -z "$left" ] || bad+=("left of e2fsck_record.service: $left")
	! awk '/^# apt upgrade without/,/^# dpkg/' "$log" | grep -q '^Inst .*+mountsafe' || bad+=("apt upgrade would install ours again")
	[ "$rc" = 0 ] || bad+=("apt or dpkg failed (see the log)")
	if [ ${#bad[@]} -eq 0 ]; then
		printf "packages-apt-release-upgrade-go-back\tworks\tafter the upgrade, apt install --allow-downgrades of Debian 13's versions and our stanza and pin removed: Debian's %s packages (%s), dpkg clean, nothing of e2fsck_record.service left; the documented PKG/trixie would have installed %s of Debian's (our suite is named trixie too) (packages-apt-release-upgrade-go-back.log)\n" \
			"$(grep -c . <<<"$now")" "$(grep -m1 '^mount=' <<<"$now")" "$sim"
	else
		printf 'packages-apt-release-upgrade-go-back\terror\t%s (packages-apt-release-upgrade-go-back.log)\n' "$(printf '%s; ' "${bad[@]}" | sed 's/; $//')"
	fi
}

# release_upgrade_run TAR12 TAR13 LOG: the upgrade in a fresh Debian 12
# root (TAR12) with ours installed from REPO's bookworm suite as the
# README says (repo_install), Debian's archive a local signed one
# (trixie_archive, its bookworm stanza written as the user has it), then
# Debian's release notes: every stanza switched from bookworm to trixie
# (Debian's and ours: REPO serves both suites), apt update, apt upgrade
# --without-new-pkgs, apt full-upgrade.  Prints the result row, then
# release_go_back's.
release_upgrade_run() {
	local t12=$1 t13=$2 log=$3 root=$APT_WORK/root-relup w=$APT_WORK/relup before n rc=0 step
	local bad=() x ours13 left pkgs deb extra
	rm -rf "$root" "$w" && mkdir -p "$root" "$w" && tar -xf "$t12" -C "$root"
	{
		echo "# Debian 12 root $(basename "$t12"), Debian 13's archive from $(basename "$t13")"
		SUITE=bookworm repo_install "$root" || rc=1
		before=$(ours_in "$root")
		echo "# ours before: ${before//$'\n'/ }"
		# Ours of Debian 12 that Debian 13's root lacks: Debian's build of them too.
		extra=$(tar -xOf "$t13" ./var/lib/dpkg/status | sed -n 's/^Package: //p' | sort |
			comm -13 - <(cut -d= -f1 <<<"$before" | sort) | grep -xF -f <(sed -n 's/^Package: //p' \
			"$REPO/dists/trixie/main/binary-amd64/Packages" 2>/dev/null) || true)
		echo "# ours that Debian 13's root lacks: ${extra:-none}"
		# shellcheck disable=SC2086 # one word a package
		n=$(trixie_archive "$root/srv/debian-archive" "$t13" $extra) || rc=1
		echo "# Debian 13's archive (local): ${n:-no} packages"
		install -m 0644 "$root/srv/debian-archive/key.gpg" "$root/usr/share/keyrings/mountsafe-test-debian.gpg"
		# The Debian stanza as a user of Debian 12 has it (here local, signed).
		printf '# Debian 12 is moving to debian-archive\n' >"$root/etc/apt/sources.list"
		printf 'Types: deb\nURIs: file:/srv/debian-archive\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/mountsafe-test-debian.gpg\n' \
			>"$root/etc/apt/sources.list.d/debian.sources"
		echo "# the switch: sed -i s/bookworm/trixie/ in every stanza"
		sed -i 's/\bbookworm\b/trixie/g' "$root"/etc/apt/sources.list.d/*.sources
		cat "$root"/etc/apt/sources.list.d/*.sources
		mount -t proc proc "$root/proc"
		# (An apt update that fails is logged and the upgrade goes on, as a
		# user's would: the verdict is what is installed at the end.)
		for step in update 'upgrade --without-new-pkgs' full-upgrade; do
			echo "# apt $step"
			# shellcheck disable=SC2086 # the step's words
			in_root "$root" apt -q -y -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold $step ||
				{ echo "# apt $step: exit $?"; rc=1; }
		done
		echo "# dpkg --audit:"
		in_root "$root" dpkg --audit || rc=1
		umount "$root/proc"
	} >"$log" 2>&1 || rc=1
	if mountpoint -q "$root/proc"; then umount "$root/proc"; fi
	# Ours of Debian 13: PKG=VERSION as REPO's trixie suite has them (none
	# when a control serves a repository without that suite).
	ours13=$(awk '/^Package: / {p = $2} /^Version: / {print p "=" $2}' "$REPO/dists/trixie/main/binary-amd64/Packages" 2>/dev/null | sort -u || true)
	pkgs=$(cut -d= -f1 <<<"$ours13")
	# Every installed package of the two sources must be our trixie build:
	# not Debian's own, not ours of Debian 12 left behind.
	# shellcheck disable=SC2016
	x=$(in_root "$root" dpkg-query -W -f='${db:Status-Abbrev}|${source:Package}|${Package}=${Version}\n' |
		awk -F'|' '$1 ~ /^.i/ && ($2 == "util-linux" || $2 == "e2fsprogs") {print $3}' | sort |
		comm -23 - <(echo "$ours13"))
	deb=$(grep -v '+mountsafe' <<<"$x" || true)
	[ -z "$deb" ] || bad+=("the upgrade left Debian's util-linux/e2fsprogs packages ($(grep -c . <<<"$deb")): $(grep -E '^(mount|e2fsprogs)=' <<<"$deb" | paste -sd' '); all: $(cut -d= -f1 <<<"$deb" | paste -sd' ')")
	x=$(grep '+mountsafe' <<<"$x" || true)
	[ -z "$x" ] || bad+=("ours of Debian 12 left installed: $(paste -sd' ' <<<"$x")")
	# Every package of ours installed before and now gone must have no
	# trixie build of that name (a rename: libext2fs2 -> libext2fs2t64).
	left=''
	while IFS= read -r x; do
		if [ -z "$x" ] || [ -n "$(installed "$root" "${x%%=*}")" ]; then continue; fi
		if grep -qx "${x%%=*}" <<<"$pkgs"; then bad+=("${x%%=*} removed, though our trixie suite has it"); else left="$left ${x%%=*}"; fi
	done <<<"$before"
	[ -n "$before" ] || bad+=("none of ours was installed from the bookworm suite")
	# shellcheck disable=SC2016
	x=$(in_root "$root" dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' | awk '$1 !~ /^(ii|rc)/' | paste -sd' ')
	[ -z "$x" ] || bad+=("not fully installed: $x")
	[ -z "$(in_root "$root" dpkg --audit 2>&1)" ] || bad+=("dpkg --audit reports problems")
	[ -L "$root/etc/systemd/system/local-fs.target.wants/e2fsck_record.service" ] ||
		bad+=("e2fsck_record.service is not enabled (no local-fs.target.wants link)")
	x=$(cat "$root/etc/debian_version" 2>/dev/null || echo none)
	[[ $x == 13* ]] || bad+=("/etc/debian_version is $x, not 13")
	[ "$rc" = 0 ] || bad+=("apt or dpkg failed (see the log)")
	if [ ${#bad[@]} -eq 0 ]; then
		# shellcheck disable=SC2016 # dpkg-query's field
		printf 'packages-apt-release-upgrade\tworks\tDebian 12 -> 13 (%s) with the release notes'"'"' steps: our %s bookworm packages -> %s of our trixie build (%s)%s; dpkg clean; e2fsck_record.service enabled (packages-apt-release-upgrade.log)\n' \
			"$x" "$(grep -c . <<<"$before")" "$(in_root "$root" dpkg-query -W -f='${db:Status-Abbrev} ${Version}\n' | grep -c '^.i.* .*+mountsafe')" \
			"$(installed "$root" mount)" "${left:+; gone with their Debian 12 names:$left}"
	else
		printf 'packages-apt-release-upgrade\terror\t%s (packages-apt-release-upgrade.log)\n' "$(printf '%s; ' "${bad[@]}" | sed 's/; $//')"
	fi
	if [ ${#bad[@]} -eq 0 ]; then
		release_go_back "$root" "${log%.log}-go-back.log"
	else
		printf 'packages-apt-release-upgrade-go-back\terror\tno upgraded system to go back from\n'
	fi
	rm -rf "$root" "$w"
}

# release_upgrade TAR12 TAR13: release_upgrade_run's rows and logs, kept by
# cache_get (tests/lib/vm/artifacts.sh: its lock and its one eviction rule)
# as $MS_CACHE/relup/out/<key> and taken from there (the row says so) when the
# inputs are the same: the two roots (their cache names carry the release
# and packages, and so the Debian 13 archive made of them), our
# repository's two Packages indexes (the .debs' hashes), its pin, stanzas
# and key, and the functions that run it.  Prints the rows.
release_upgrade() {
	local t12=$1 t13=$2 log=$APT_LOGS/packages-apt-release-upgrade.log key c
	key=$( {
		basename "$t12" && basename "$t13"
		cat "$REPO/dists/bookworm/main/binary-amd64/Packages" "$REPO/dists/trixie/main/binary-amd64/Packages" 2>/dev/null || true
		# What repo_install gives the root besides the packages (a control changes the pin).
		cat "$REPO/mountsafe.pref" "$REPO"/mountsafe-*.sources "$REPO/mountsafe-archive-keyring.gpg" 2>/dev/null || true
		declare -f release_upgrade_run release_go_back trixie_archive debian_repo repo_install apt_local ours_in installed in_root
	} | sha256sum | cut -c1-16)
	rm -f "$APT_WORK/relup.made"
	c=$(cache_get relup/out "$key" release_upgrade_make "$t12" "$t13" "$log") || return 1
	[ -n "$c" ] || return 1
	if [ -e "$APT_WORK/relup.made" ]; then
		cat "$c/row"
		return 0
	fi
	cp "$c/log" "$log"
	cp "$c/log2" "${log%.log}-go-back.log" 2>/dev/null || true
	sed 's/ (\(packages-apt-[a-z-]*\.log\))$/ (from the cache: run of '"$(date -u -r "$c/row" +%FT%TZ)"', key '"$key"') (\1)/' "$c/row"
}
# release_upgrade_make TMP TAR12 TAR13 LOG: the cache entry of
# release_upgrade made at TMP: the rows (row) and the logs (log, log2) of
# release_upgrade_run, which also leaves its logs at LOG.
release_upgrade_make() {
	local tmp=$1 log=$4 t0=$SECONDS
	mkdir -p "$tmp"
	release_upgrade_run "$2" "$3" "$log" >"$tmp/row"
	echo "# run took $((SECONDS - t0)) s" >>"$log"
	cp "$log" "$tmp/log"
	cp "${log%.log}-go-back.log" "$tmp/log2" 2>/dev/null || true
	: >"$APT_WORK/relup.made"
}

# tools_run ROOT: our tools start in the root and are ours (Debian 13).
tools_run() {
	local root=$1 log=$APT_LOGS/system-apt-install.log v rc=0
	in_root "$root" sh -c 'mount -V && losetup --version && e2fsck -V && resize2fs 2>&1 | head -n1 && tune2fs 2>&1 | head -n1' \
		>>"$log" 2>&1 || rc=1
	# (Debian 13's libext2fs is libext2fs2t64: the 64-bit time_t rename.)
	v=$(installed "$root" mount libmount1 e2fsprogs 'libext2fs2*' | paste -sd' ')
	if [ "$rc" = 0 ] && [ "$(grep -o '=[^ ]*+mountsafe' <<<"$v" | wc -l)" = 4 ]; then
		printf 'system-apt-tools-run\tworks\tours run in Debian 13: %s (system-apt-install.log)\n' "$v"
	else
		printf 'system-apt-tools-run\terror\ta tool failed, or not ours: %s (system-apt-install.log)\n' "$v"
	fi
}

# row_out T0 ROW: ROW ("SCENARIO <TAB> OUTCOME <TAB> DETAIL") with the
# seconds since T0 put in after the outcome.
row_out() {
	local sc outcome detail
	IFS=$'\t' read -r sc outcome detail <<<"$2"
	printf '%s\t%s\t%s\t%s\n' "$sc" "$outcome" "$((SECONDS - $1))" "$detail"
}

# apt_life TARBALL: every check above for SUITE, in roots made from
# TARBALL; one row a check, "SCENARIO <TAB> OUTCOME <TAB> SECONDS <TAB>
# DETAIL", in this order: (Debian 13: system-apt-tools-run),
# system-apt-install, -repo-tampered, -repo-unsigned, -go-back,
# packages-apt-point-release, -rebuild-taken, -upgrade-from-previous,
# (Debian 12, when RELUP_TAR names a Debian 13 root: -release-upgrade,
# -release-upgrade-go-back).
apt_life() {
	local tar=$1 root=$APT_WORK/root t0 rc=0 row
	t0=$SECONDS
	rm -rf "$root" && mkdir -p "$root" && tar -xf "$tar" -C "$root"
	# Debian's versions of everything installed, for the way back.
	# shellcheck disable=SC2016
	in_root "$root" dpkg-query -W -f='${Package}=${Version}\n' >"$APT_WORK/debian-versions"
	repo_install "$root" >"$APT_LOGS/system-apt-install.log" 2>&1 || rc=$?
	echo "# apt exit $rc" >>"$APT_LOGS/system-apt-install.log"
	ours_in "$root" >"$APT_WORK/ours-installed"
	if [ "${SUITE:-bookworm}" != bookworm ]; then
		row=$(tools_run "$root")
		[ "$rc" = 0 ] || row=$'system-apt-tools-run\terror\t'"apt exit $rc (system-apt-install.log)"
		row_out "$t0" "$row"
	fi
	t0=$SECONDS
	while read -r row; do row_out "$t0" "$row"; t0=$SECONDS; done < <(packages_hold_and_go_back "$root")
	t0=$SECONDS
	row=$(point_release "$root") || row=$'packages-apt-point-release\terror\tthe check failed'
	row_out "$t0" "$row"
	t0=$SECONDS
	row=$(rebuild_taken "$root") || row=$'packages-apt-rebuild-taken\terror\tthe check failed'
	row_out "$t0" "$row"
	rm -rf "$root"
	t0=$SECONDS
	row=$(upgrade_from_previous "$tar") || row=$'packages-apt-upgrade-from-previous\terror\tthe check failed'
	row_out "$t0" "$row"
	# Debian 12 only: the upgrade to Debian 13 (RELUP_TAR, its root).
	[ "${SUITE:-bookworm}" = bookworm ] && [ -n "${RELUP_TAR:-}" ] || return 0
	t0=$SECONDS
	while read -r row; do row_out "$t0" "$row"; t0=$SECONDS; done < <(release_upgrade "$tar" "$RELUP_TAR" ||
		printf 'packages-apt-release-upgrade\terror\tthe check failed\npackages-apt-release-upgrade-go-back\terror\tthe check failed\n')
}
