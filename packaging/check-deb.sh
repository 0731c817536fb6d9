#!/bin/sh
# check-deb.sh DEB: inspects the rhi package that build-deb.sh made (what
# `make check-deb` runs, from the repository root).
#
#  0. version.sh maps git to Debian versions as documented (test-version.sh)
#  1. control: name, version, architecture, relations, conffiles, scripts
#  2. contents: every path with its mode and owner, nothing else; shipped
#     files equal to their sources in deploy/
#  3. the binary: static, and `rhi version` prints the package version
#  4. man page, changelog, maintainer scripts (shellcheck), lintian
#  5. as root: install, reinstall, remove and purge for real in a throwaway
#     root (an overlay over / in private mount and network namespaces: the
#     host's files are only read, its interfaces never seen), checking the
#     user, the enablement, what stays, and that removal withdraws the VIPs.
#
# A tool that is missing is reported as SKIPPED, or fails the check when
# CI=true, where .ci/run installs them all.
set -eu

deb=$1
fails=0
fail() {
	echo "check-deb: FAIL: $*" >&2
	fails=$((fails + 1))
}
ok() { echo "check-deb: ok: $*"; }
need() {
	if command -v "$1" >/dev/null 2>&1; then
		return 0
	fi
	if [ "${CI:-}" = true ]; then
		fail "$1 is not installed (CI installs it)"
	else
		echo "check-deb: SKIPPED: $2 ($1 is not installed)"
	fi
	return 1
}

[ -f "$deb" ] || {
	echo "check-deb: no such package: \"$deb\"" >&2
	exit 1
}
# The package's own version is what everything inside must agree with. It
# must be this commit's (others may have touched files since the build, so
# "+dirty" may come or go).
want_version=$(dpkg-deb --field "$deb" Version)
want_arch=$(${GO:-go} env GOARCH)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --- 0. the version mapping ------------------------------------------------
packaging/test-version.sh >/dev/null || fail "packaging/test-version.sh"

# --- 1. control ------------------------------------------------------------
field() { dpkg-deb --field "$deb" "$1"; }
expect_field() {
	got=$(field "$1")
	if [ "$got" = "$2" ]; then ok "$1: $got"; else fail "$1: got \"$got\", want \"$2\""; fi
}
expect_field Package rhi
tree_version=$(packaging/version.sh)
if [ "${want_version%+dirty}" = "${tree_version%+dirty}" ]; then
	ok "Version: $want_version"
else
	fail "Version: got \"$want_version\", this tree is \"$tree_version\""
fi
case "$deb" in
*/rhi_"${want_version}_$want_arch".deb) ;;
*) fail "file name \"$deb\" does not match rhi_${want_version}_$want_arch.deb" ;;
esac
expect_field Architecture "$want_arch"
expect_field Depends "systemd-sysusers | adduser"
expect_field Recommends "bird2 | bird3, logrotate"
expect_field Suggests apisix
expect_field Section net
dpkg-deb --info "$deb" >"$tmp/info"

dpkg-deb --control "$deb" "$tmp/control"
printf '/etc/logrotate.d/rhi\n/etc/rhi/rhi.yaml\n' >"$tmp/conffiles.want"
if sort "$tmp/control/conffiles" | cmp -s - "$tmp/conffiles.want"; then
	ok "conffiles: $(tr '\n' ' ' <"$tmp/conffiles.want")"
else
	fail "conffiles: got \"$(tr '\n' ' ' <"$tmp/control/conffiles")\", want \"$(tr '\n' ' ' <"$tmp/conffiles.want")\""
fi
# bird2 or bird3 installed after rhi re-runs the group step (postinst triggered).
if [ "$(cat "$tmp/control/triggers" 2>/dev/null)" = "interest-noawait /usr/sbin/bird" ]; then
	ok "triggers: interest-noawait /usr/sbin/bird"
else
	fail "triggers: got \"$(cat "$tmp/control/triggers" 2>/dev/null)\", want \"interest-noawait /usr/sbin/bird\""
fi
for s in postinst prerm postrm; do
	if [ -x "$tmp/control/$s" ] && cmp -s "$tmp/control/$s" "packaging/scripts/$s"; then
		ok "control: $s is packaging/scripts/$s, executable"
	else
		fail "control: $s missing, not executable or not packaging/scripts/$s"
	fi
done

# --- 2. contents -----------------------------------------------------------
# mode path, for every regular file; directories are 0755 root/root.
cat >"$tmp/files.want" <<'LIST'
-rw-r--r-- ./etc/logrotate.d/rhi
-rw-r--r-- ./etc/rhi/rhi.yaml
-rwxr-xr-x ./usr/bin/rhi
-rw-r--r-- ./usr/lib/systemd/network/50-rhi0.netdev
-rw-r--r-- ./usr/lib/systemd/network/50-rhi0.network
-rw-r--r-- ./usr/lib/systemd/system/rhi.service
-rw-r--r-- ./usr/lib/sysusers.d/rhi.conf
-rw-r--r-- ./usr/share/doc/rhi/README.Debian
-rw-r--r-- ./usr/share/doc/rhi/changelog.gz
-rw-r--r-- ./usr/share/doc/rhi/copyright
-rw-r--r-- ./usr/share/doc/rhi/examples/rhi.yaml
-rw-r--r-- ./usr/share/lintian/overrides/rhi
-rw-r--r-- ./usr/share/man/man8/rhi.8.gz
-rw-r--r-- ./usr/share/man/man5/rhi.yaml.5.gz
-rw-r--r-- ./usr/share/bash-completion/completions/rhi
-rw-r--r-- ./usr/share/zsh/vendor-completions/_rhi
-rw-r--r-- ./usr/share/rhi/bird/adc.conf
-rw-r--r-- ./usr/share/rhi/bird/base.conf
-rw-r--r-- ./usr/share/rhi/bird/examples/bird.conf
-rw-r--r-- ./usr/share/rhi/bird/tiers.conf
-rw-r--r-- ./usr/share/rhi/bird/examples/bird-tiers.conf
-rw-r--r-- ./usr/share/rhi/networkd/50-rhi1.netdev
-rw-r--r-- ./usr/share/rhi/networkd/50-rhi1.network
-rw-r--r-- ./usr/share/rhi/networkd/50-rhi2.netdev
-rw-r--r-- ./usr/share/rhi/networkd/50-rhi2.network
-rw-r--r-- ./usr/share/rhi/grafana/rhi.json
-rw-r--r-- ./usr/share/rhi/prometheus/rhi-alerts.yml
-rw-r--r-- ./usr/share/rhi/prometheus/rhi-alerts_test.yml
LIST
for f in docs/*.md; do
	echo "-rw-r--r-- ./usr/share/doc/rhi/$f" >>"$tmp/files.want"
done
if [ -f README.md ]; then
	echo '-rw-r--r-- ./usr/share/doc/rhi/README.md' >>"$tmp/files.want"
fi
sort -k2 -o "$tmp/files.want" "$tmp/files.want"
dpkg-deb --contents "$deb" >"$tmp/contents"
awk '$1 !~ /^d/ { print $1, $6 }' "$tmp/contents" | sort -k2 >"$tmp/files.got"
if cmp -s "$tmp/files.got" "$tmp/files.want"; then
	ok "contents: $(wc -l <"$tmp/files.want") files, modes as expected"
else
	fail "contents differ (- want, + got):"
	diff -u "$tmp/files.want" "$tmp/files.got" | sed -n '3,$p' >&2 || true
fi
bad=$(awk '$2 != "root/root" || ($1 ~ /^d/ && $1 != "drwxr-xr-x") { print }' "$tmp/contents")
if [ -z "$bad" ]; then ok "contents: all root/root, directories 0755"; else fail "owner or directory mode: $bad"; fi

root=$tmp/root
dpkg-deb --extract "$deb" "$root"
before=$fails
while read -r src dst; do
	if cmp -s "$src" "$root$dst"; then :; else fail "$dst differs from $src"; fi
done <<'MAP'
deploy/rhi.minimal.yaml /etc/rhi/rhi.yaml
deploy/rhi.yaml /usr/share/doc/rhi/examples/rhi.yaml
deploy/logrotate/rhi /etc/logrotate.d/rhi
deploy/systemd/rhi.service /usr/lib/systemd/system/rhi.service
deploy/systemd/rhi.sysusers /usr/lib/sysusers.d/rhi.conf
deploy/networkd/50-rhi0.netdev /usr/lib/systemd/network/50-rhi0.netdev
deploy/networkd/50-rhi0.network /usr/lib/systemd/network/50-rhi0.network
deploy/bird/adc.conf /usr/share/rhi/bird/adc.conf
deploy/bird/base.conf /usr/share/rhi/bird/base.conf
deploy/bird/examples/bird.conf /usr/share/rhi/bird/examples/bird.conf
deploy/bird/tiers.conf /usr/share/rhi/bird/tiers.conf
deploy/bird/examples/bird-tiers.conf /usr/share/rhi/bird/examples/bird-tiers.conf
deploy/networkd/50-rhi1.netdev /usr/share/rhi/networkd/50-rhi1.netdev
deploy/networkd/50-rhi1.network /usr/share/rhi/networkd/50-rhi1.network
deploy/networkd/50-rhi2.netdev /usr/share/rhi/networkd/50-rhi2.netdev
deploy/networkd/50-rhi2.network /usr/share/rhi/networkd/50-rhi2.network
packaging/README.Debian /usr/share/doc/rhi/README.Debian
packaging/copyright /usr/share/doc/rhi/copyright
packaging/lintian-overrides /usr/share/lintian/overrides/rhi
deploy/prometheus/rhi-alerts.yml /usr/share/rhi/prometheus/rhi-alerts.yml
deploy/prometheus/rhi-alerts_test.yml /usr/share/rhi/prometheus/rhi-alerts_test.yml
deploy/grafana/rhi.json /usr/share/rhi/grafana/rhi.json
deploy/completion/rhi.bash /usr/share/bash-completion/completions/rhi
deploy/completion/_rhi /usr/share/zsh/vendor-completions/_rhi
MAP
for f in docs/*.md; do
	cmp -s "$f" "$root/usr/share/doc/rhi/$f" || fail "/usr/share/doc/rhi/$f differs from $f"
done
if [ -f README.md ] && ! cmp -s README.md "$root/usr/share/doc/rhi/README.md"; then
	fail "/usr/share/doc/rhi/README.md differs from README.md"
fi
if [ "$fails" = "$before" ]; then ok "shipped files equal their sources"; fi
# BIRD: what the operator gets must parse as README.Debian tells them to use
# it, with the files where the package puts them (the includes rewritten
# into the extracted package).
bird_example=$root/usr/share/rhi/bird/examples/bird.conf
includes=$(sed -n 's/^include "\([^"]*\)";.*/\1/p' "$bird_example")
[ -n "$includes" ] || fail "examples/bird.conf includes nothing"
for f in $includes; do
	case $f in
	/usr/share/rhi/bird/*) [ -f "$root$f" ] || fail "examples/bird.conf includes $f, which the package does not ship" ;;
	*) fail "examples/bird.conf includes \"$f\": not an installed absolute path" ;;
	esac
done
# README.Debian tells operators with a bird.conf of their own to merge
# base.conf's two settings: it must quote them as base.conf has them.
for re in 'scan time [0-9]*;' 'netlink rx buffer [0-9]*;'; do
	setting=$(grep -v '^[[:space:]]*#' deploy/bird/base.conf | grep -o "$re" | head -n 1)
	if [ -z "$setting" ]; then
		fail "deploy/bird/base.conf has no \"$re\""
	elif ! grep -qF "$setting" packaging/README.Debian; then
		fail "README.Debian does not quote base.conf's \"$setting\""
	fi
done
if need bird "bird -p -c on the shipped BIRD files"; then
	sed "s#^include \"/#include \"$root/#" "$bird_example" >"$tmp/bird-example.conf"
	if out=$(bird -p -c "$tmp/bird-example.conf" 2>&1); then
		ok "bird -p -c examples/bird.conf (with base.conf and adc.conf as shipped)"
	else
		fail "bird -p -c examples/bird.conf: $out"
	fi
	tiers_example=$root/usr/share/rhi/bird/examples/bird-tiers.conf
	sed "s#^include \"/#include \"$root/#" "$tiers_example" >"$tmp/bird-tiers.conf"
	if out=$(bird -p -c "$tmp/bird-tiers.conf" 2>&1); then
		ok "bird -p -c examples/bird-tiers.conf (with base.conf and tiers.conf as shipped)"
	else
		fail "bird -p -c examples/bird-tiers.conf: $out"
	fi
	# Debian's stock bird.conf, as the installed bird2 (or bird3) has it,
	# with our include appended (README.Debian, step 2).
	stock=""
	for f in /usr/share/bird2/bird.conf /usr/share/bird3/bird.conf /etc/bird/bird.conf; do
		if [ -r "$f" ]; then
			stock=$f
			break
		fi
	done
	if [ -z "$stock" ]; then
		if [ "${CI:-}" = true ]; then fail "no stock bird.conf of bird2 or bird3 here"; else echo "check-deb: SKIPPED: stock bird.conf + adc.conf (no stock bird.conf)"; fi
	else
		{
			cat "$stock"
			printf '\ninclude "%s/usr/share/rhi/bird/adc.conf";\n' "$root"
		} >"$tmp/bird-stock.conf"
		if out=$(bird -p -c "$tmp/bird-stock.conf" 2>&1); then
			ok "bird -p -c $stock + include adc.conf"
		else
			fail "bird -p -c $stock + include adc.conf: $out"
		fi
	fi
fi

# The unit's ordering and restart policy (systemd-analyze verify, in
# check-deploy, accepts any): never network-online.target, whose wait can
# hold rhi for minutes on an ifupdown host with systemd-networkd enabled.
unit=$root/usr/lib/systemd/system/rhi.service
unit_has() { grep -qx "$1" "$unit" || fail "rhi.service: no line \"$1\""; }
if grep -v '^#' "$unit" | grep -q 'network-online'; then fail "rhi.service refers to network-online.target"; fi
unit_has 'After=network.target systemd-networkd.service bird.service'
# A failed rhi leaves VIPs announced and unmonitored: it must keep restarting.
unit_has 'StartLimitIntervalSec=0'
unit_has 'Restart=on-failure'
unit_has 'RestartSec=5s'
# Limits (issue 11, row 13): a leak or a hostile answer ends in a restart,
# and rhi speaks IP only on loopback unless the operator adds an address.
unit_has 'IPAddressDeny=any'
unit_has 'IPAddressAllow=localhost'
unit_has 'PrivateMounts=yes'
for key in MemoryMax TasksMax LimitNOFILE; do
	grep -q "^$key=[0-9]" "$unit" || fail "rhi.service: no $key="
done
# systemctl reload fails visibly on a rejected file: rhi reload waits for
# the daemon's outcome.
reload=$(sed -n 's/^ExecReload=//p' "$unit")
want_reload='/usr/bin/rhi reload --config /etc/rhi/rhi.yaml'
[ "$reload" = "$want_reload" ] || fail "rhi.service ExecReload: got \"$reload\", want \"$want_reload\""

# --- 3. the binary ---------------------------------------------------------
bin=$root/usr/bin/rhi
if ldd "$bin" >/dev/null 2>&1; then
	fail "usr/bin/rhi is dynamically linked; the package declares no libc dependency"
else
	ok "usr/bin/rhi is static"
fi
got=$("$bin" version)
if [ "$got" = "rhi $want_version" ]; then ok "rhi version: $got"; else fail "rhi version: got \"$got\", want \"rhi $want_version\""; fi
# The conffile is valid and announces nothing; the example is valid.
if "$bin" check-config --config "$root/etc/rhi/rhi.yaml" >"$tmp/effective.yaml"; then
	if grep -qx 'vips: \[\]' "$tmp/effective.yaml"; then
		ok "shipped /etc/rhi/rhi.yaml passes rhi check-config and has no VIPs"
	else
		fail "shipped /etc/rhi/rhi.yaml has VIPs: $(grep -A3 '^vips:' "$tmp/effective.yaml")"
	fi
else
	fail "shipped /etc/rhi/rhi.yaml fails rhi check-config"
fi
if "$bin" check-config --quiet --config "$root/usr/share/doc/rhi/examples/rhi.yaml"; then
	ok "shipped examples/rhi.yaml passes rhi check-config"
else
	fail "shipped examples/rhi.yaml fails rhi check-config"
fi

# --- 4. man page, changelog, scripts, lintian ------------------------------
man8=$root/usr/share/man/man8/rhi.8.gz
zcat "$man8" >"$tmp/rhi.8"
for c in $("$bin" -h | sed -n 's/^  rhi \([a-z][a-z-]*\).*/\1/p'); do
	# roff source: "rhi check\-config".
	pat=$(printf 'rhi %s' "$c" | sed 's/-/\\-/g')
	grep -qF "$pat" "$tmp/rhi.8" || fail "man page does not mention \"rhi $c\""
done
# rhi.yaml(5) shows every key of the effective configuration.
man5=$root/usr/share/man/man5/rhi.yaml.5.gz
zcat "$man5" >"$tmp/rhi.yaml.5"
sed -n 's/^\([a-z_]*\):.*/\1/p' "$tmp/effective.yaml" >"$tmp/keys"
while read -r k; do
	grep -q "^$k:" "$tmp/rhi.yaml.5" || fail "rhi.yaml(5) does not show the key \"$k\""
done <"$tmp/keys"
if need man "rendering the man pages"; then
	for page in "$man8" "$man5"; do
		if warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null) && [ -z "$warn" ]; then
			ok "man page $(basename "$page") renders without warnings"
		else
			fail "man page $(basename "$page"): $warn"
		fi
	done
fi
zcat "$root/usr/share/doc/rhi/changelog.gz" >"$tmp/changelog"
if need dpkg-parsechangelog "parsing the changelog"; then
	got=$(dpkg-parsechangelog -l "$tmp/changelog" -S Version)
	if [ "$got" = "$want_version" ]; then ok "changelog: $got"; else fail "changelog version: got \"$got\", want \"$want_version\""; fi
fi
if need shellcheck "shellcheck of the maintainer and packaging scripts"; then
	if shellcheck "$tmp/control/postinst" "$tmp/control/prerm" "$tmp/control/postrm" packaging/*.sh; then
		ok "shellcheck: maintainer scripts and packaging/*.sh"
	else
		fail "shellcheck"
	fi
fi
if need lintian "lintian"; then
	# Lintian warns when run as root; that line is noise here.
	if lintian --fail-on error,warning --pedantic --display-info "$deb" >"$tmp/lintian" 2>&1; then
		ok "lintian: no errors or warnings"
	else
		fail "lintian:"
	fi
	# Info and pedantic notes too, and no "running as root" noise.
	grep -v 'running with root privileges' "$tmp/lintian" || true
fi

# --- 5. install for real, in a throwaway root ------------------------------
if [ "$(id -u)" != 0 ]; then
	echo "check-deb: SKIPPED: install test in a throwaway root (needs root: mount namespaces, overlayfs)"
elif ! unshare --mount --net --propagation private true 2>/dev/null; then
	if [ "${CI:-}" = true ]; then fail "unshare --mount --net fails"; else echo "check-deb: SKIPPED: install test (no mount or network namespaces)"; fi
else
	cp "$deb" "$tmp/rhi.deb"
	cp packaging/check-install.sh "$tmp/check-install.sh"
	# The inner script expands its own $1 (the temp dir).
	# shellcheck disable=SC2016
	if unshare --mount --net --propagation private sh -eu -c '
		t=$1
		# A network namespace of its own: the removal test puts a VIP on an
		# rhi0 there and runs BIRD and rhi on it.
		if command -v ip >/dev/null; then ip link set lo up; fi
		mkdir "$t/ovl"
		mount -t tmpfs rhi-check "$t/ovl"
		mkdir "$t/ovl/upper" "$t/ovl/work" "$t/ovl/root"
		mount -t overlay rhi-check -o "lowerdir=/,upperdir=$t/ovl/upper,workdir=$t/ovl/work" "$t/ovl/root"
		mount --rbind /dev "$t/ovl/root/dev"
		mount -t proc proc "$t/ovl/root/proc"
		mkdir -p "$t/ovl/root/tmp/rhi-check"
		cp "$t/rhi.deb" "$t/check-install.sh" "$t/ovl/root/tmp/rhi-check/"
		# No /run/systemd/system in there: the scripts act as in a chroot.
		chroot "$t/ovl/root" sh /tmp/rhi-check/check-install.sh /tmp/rhi-check/rhi.deb
	' sh "$tmp"; then
		ok "install, reinstall, remove, purge in a throwaway root"
	else
		fail "install test (see above)"
	fi
fi

if [ "$fails" != 0 ]; then
	echo "check-deb: $fails problem(s) in $deb" >&2
	exit 1
fi
echo "check-deb: $deb ok"
