#!/bin/bash
# shellcheck source-path=SCRIPTDIR
# The signed apt repository of our packages: build/debs/<release>/*.deb ->
# build/repo/, one suite per release (bookworm, trixie).
#
#   scripts/repo.sh          (run by ./build.sh after the packages)
#   scripts/repo.sh --verify REPO-DIR  check REPO-DIR the way apt does (its
#                            signature and every index's checksum), with a
#                            private apt configuration; exit 0 = apt accepts it
#
# Layout (one suite per Debian release we build for: bookworm, trixie):
#   build/repo/dists/<suite>/{InRelease,Release,Release.gpg}
#   build/repo/dists/<suite>/main/binary-amd64/Packages{,.xz}
#   build/repo/pool/<suite>/*.deb
#   build/repo/mountsafe-archive-keyring.gpg   the public key (for Signed-By)
#   build/repo/mountsafe-<suite>.sources       the deb822 stanza a user of that
#                                              release adds
#   build/repo/mountsafe.pref                  the pin a user adds (any release)
#
# Signing key: MOUNTSAFE_SIGNING_KEY (a key id or fingerprint in the user's
# own GnuPG home), otherwise a key made once per machine and kept in
# $MS_CACHE/signing/ (no passphrase: it signs test builds on this machine).
set -euo pipefail

# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"

REPO=$MS_BUILD/repo
DEBS=$MS_BUILD/debs
ORIGIN=mountsafe

# signing_setup: sets GPG_OPTS (the home and key to sign with) and KEY_FPR.
signing_setup() {
	if [ -n "${MOUNTSAFE_SIGNING_KEY:-}" ]; then
		GPG_OPTS=(--batch --local-user "$MOUNTSAFE_SIGNING_KEY")
	else
		local home=$MS_CACHE/signing
		if ! gpg --homedir "$home" --batch --list-secret-keys 2>/dev/null | grep -q '^sec'; then
			mkdir -p "$home" && chmod 700 "$home"
			say "making this machine's repository signing key ($home)"
			gpg --homedir "$home" --batch --passphrase '' --quick-gen-key \
				"mountsafe test repository ($(hostname)) <root@localhost>" ed25519 sign never \
				2>/dev/null || die "gpg could not make a signing key in $home"
		fi
		GPG_OPTS=(--homedir "$home" --batch)
	fi
	KEY_FPR=$(gpg "${GPG_OPTS[@]}" --with-colons --list-secret-keys ${MOUNTSAFE_SIGNING_KEY:+"$MOUNTSAFE_SIGNING_KEY"} |
		awk -F: '$1 == "fpr" {print $10; exit}')
	[ -n "$KEY_FPR" ] || die "no secret key to sign with${MOUNTSAFE_SIGNING_KEY:+ ($MOUNTSAFE_SIGNING_KEY)}"
	GPG_OPTS+=(--local-user "$KEY_FPR")
}

# suite_index SUITE DEB...: pool, Packages and the signed Release of SUITE.
suite_index() {
	local suite=$1 d=$REPO/dists/$1 bin
	shift
	bin=$d/main/binary-amd64
	mkdir -p "$REPO/pool/$suite" "$bin"
	cp "$@" "$REPO/pool/$suite/"
	(cd "$REPO" && apt-ftparchive packages "pool/$suite") >"$bin/Packages"
	xz -9 -k -f "$bin/Packages"
	(cd "$d" && apt-ftparchive \
		-o "APT::FTPArchive::Release::Origin=$ORIGIN" \
		-o "APT::FTPArchive::Release::Label=$ORIGIN" \
		-o "APT::FTPArchive::Release::Suite=$suite" \
		-o "APT::FTPArchive::Release::Codename=$suite" \
		-o APT::FTPArchive::Release::Architectures=amd64 \
		-o APT::FTPArchive::Release::Components=main \
		-o "APT::FTPArchive::Release::Description=mountsafe packages for $suite" \
		release .) >"$d/Release.new"
	mv "$d/Release.new" "$d/Release"
	gpg "${GPG_OPTS[@]}" --yes --clearsign -o "$d/InRelease" "$d/Release"
	gpg "${GPG_OPTS[@]}" --yes --armor --detach-sign -o "$d/Release.gpg" "$d/Release"
}

# user_files SUITE...: the stanzas and the pin a user copies (README).
user_files() {
	local suite pkgs
	for suite in "$@"; do
		cat >"$REPO/mountsafe-$suite.sources" <<-EOF
		# /etc/apt/sources.list.d/mountsafe.sources (URIs: where you serve build/repo)
		Types: deb
		URIs: file:/srv/mountsafe-repo
		Suites: $suite
		Components: main
		Signed-By: /usr/share/keyrings/mountsafe-archive-keyring.gpg
		EOF
	done
	pkgs=$(sed -n 's/^Package: //p' "$REPO"/dists/*/main/binary-amd64/Packages | sort -u | paste -sd' ')
	# Our origin may provide only our own packages, at a priority above
	# Debian's 500 and below 1000: a newer Debian build (a point release)
	# does not replace ours, our next build (higher version) is taken, and
	# apt never downgrades to ours (docs/packages.md).
	cat >"$REPO/mountsafe.pref" <<-EOF
		# /etc/apt/preferences.d/mountsafe.pref
		Package: *
		Pin: release o=$ORIGIN
		Pin-Priority: -1

		Package: $pkgs
		Pin: release o=$ORIGIN
		Pin-Priority: 990
	EOF
}

# verify DIR: apt update against DIR with signature checking; prints apt's
# output, exit 0 when apt accepted the repository and its index.
verify() {
	local dir=$1 t rc=0 suite
	t=$(mktemp -d)
	mkdir -p "$t/lists/partial" "$t/cache"
	for suite in "$dir"/dists/*/; do
		suite=$(basename "$suite")
		echo "deb [signed-by=$dir/mountsafe-archive-keyring.gpg] file:$dir $suite main"
	done >"$t/sources.list"
	apt-get -o "Dir::Etc::SourceList=$t/sources.list" -o Dir::Etc::SourceParts=/dev/null \
		-o "Dir::State::Lists=$t/lists" -o "Dir::Cache=$t/cache" -o Dir::State::status=/dev/null \
		-o Debug::NoLocking=1 -o APT::Sandbox::User=root update 2>&1 | tee "$t/out" || rc=1
	# apt-get update exits 0 on some index errors; its "E:"/"W:" lines decide.
	grep -qE '^(E|W): ' "$t/out" && rc=1
	[ -n "$(find "$t/lists" -name '*_Packages*' -print -quit)" ] || rc=1
	rm -rf "$t"
	return $rc
}

main() {
	local stamp suites=() d
	case ${1:-} in
	--verify) verify "$2"; return ;;
	-h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 && !/shellcheck/ {sub(/^# ?/, ""); print}' "$0"; return ;;
	esac
	need_pkgs apt-utils gnupg xz-utils
	for d in "$DEBS"/*/SHA256SUMS; do
		[ -f "$d" ] && suites+=("$(basename "$(dirname "$d")")")
	done
	[ ${#suites[@]} -gt 0 ] || die "no packages in ${DEBS#"$MS_ROOT"/}: run ./build.sh deb first"
	signing_setup
	stamp=$( { cat "$DEBS"/*/SHA256SUMS; echo "$KEY_FPR"; sha256sum "$0"; } | sha256sum | cut -c1-16)
	if [ "$(cat "$REPO/.stamp" 2>/dev/null)" = "$stamp" ]; then
		echo "apt repository in ${REPO#"$MS_ROOT"/}: up to date (the same packages and key)"
		return 0
	fi
	rm -rf "$REPO.new" && mkdir -p "$REPO.new"
	REPO=$REPO.new
	for d in "${suites[@]}"; do suite_index "$d" "$DEBS/$d"/*.deb; done
	gpg "${GPG_OPTS[@]}" --export "$KEY_FPR" >"$REPO/mountsafe-archive-keyring.gpg"
	gpg "${GPG_OPTS[@]}" --armor --export "$KEY_FPR" >"$REPO/mountsafe-archive-keyring.asc"
	user_files "${suites[@]}"
	echo "$stamp" >"$REPO/.stamp"
	REPO=$MS_BUILD/repo
	rm -rf "$REPO" && mv "$REPO.new" "$REPO"
	mkdir -p "$MS_BUILD/logs"
	verify "$REPO" >"$MS_BUILD/logs/repo-verify.log" 2>&1 ||
		{ cat "$MS_BUILD/logs/repo-verify.log" >&2; die "apt does not accept ${REPO#"$MS_ROOT"/}"; }
	echo "apt repository in ${REPO#"$MS_ROOT"/}: $(for d in "${suites[@]}"; do
		printf '%s (%s packages) ' "$d" "$(find "$REPO/pool/$d" -name "*.deb" | wc -l)"; done)signed by $KEY_FPR"
}

main "$@"
