#!/bin/sh
# check-readme.sh DEB: walks the README's getting-started steps, as a new
# operator would type them, on a fresh Debian 13 (trixie) root made with
# mmdebstrap, with the package DEB (what `make check-readme` runs, as root,
# from the repository root).
#
# Every command line of the steps' ```sh blocks is either run in the root
# (chroot), with the smallest rewrite a script needs (apt's -y, the real
# package file name), or skipped with the reason; a line this script does
# not know fails the walk, so a README edit cannot leave it behind
# silently. A chroot has no running systemd, BIRD or APISIX: the steps that
# need them (the dry run, start, `rhi verify`) run the packaged binary in
# the netns lab instead, where a fake control API stands in for APISIX and
# the lab's router for the network (integration/readme, TestReadmeWalk).
#
# The fresh root is mmdebstrap's minbase with systemd, iproute2 and
# ca-certificates, nothing of rhi's nor BIRD's installed: it is built once
# into a cache and
# rebuilt when older than a week or when its recipe changes; every walk
# runs on an overlay of it (a copy where overlayfs is missing), so the
# package's own install (apt pulling bird2 and logrotate from the mirror)
# happens on every walk.
#
# Environment: RHI_README_MIRROR (http://deb.debian.org/debian),
# RHI_README_CACHE (/var/cache/rhi-ci/readme-trixie; RHI_README_FRESH=1
# rebuilds it), RHI_README_ROOT (a directory to make the walk's root in and
# keep; default a temporary one, removed), GO.
set -eu

deb=$(realpath "$1")
[ "$(id -u)" = 0 ] || {
	echo "check-readme: needs root (mmdebstrap, chroot, the netns lab)" >&2
	exit 1
}
for t in mmdebstrap dpkg-deb; do
	command -v "$t" >/dev/null || {
		echo "check-readme: $t is not installed (apt-get install mmdebstrap)" >&2
		exit 1
	}
done
mirror=${RHI_README_MIRROR:-http://deb.debian.org/debian}
fails=0
fail() {
	echo "check-readme: FAIL: $*" >&2
	fails=$((fails + 1))
}
start=$(date +%s)
ok() { echo "check-readme: ok: $*  [$(($(date +%s) - start)) s]"; }
skip() { echo "check-readme: SKIPPED: $*"; }

# The cached base root.
cache=${RHI_README_CACHE:-/var/cache/rhi-ci/readme-trixie}
includes=systemd,iproute2,ca-certificates
recipe="mmdebstrap --mode=root --variant=minbase --include=$includes trixie $mirror, with lists and bird2 logrotate downloaded"
if [ "${RHI_README_FRESH:-0}" = 1 ] || [ ! -f "$cache/recipe" ] || [ "$(cat "$cache/recipe")" != "$recipe" ] ||
	[ -n "$(find "$cache/recipe" -mtime +7)" ]; then
	echo "check-readme: building the base root: $recipe (into $cache)"
	rm -rf "$cache.new"
	mkdir -p "$cache.new"
	# A Debian 13 host as an operator gets it: systemd, iproute2, apt with
	# Recommends (so that the package brings bird2 and logrotate, as the
	# README says).
	# apt's lists and the .debs of what the package recommends stay in the
	# base (downloaded, not installed), so that a walk's apt-get update and
	# install fetch only what changed on the mirror since.
	# shellcheck disable=SC2016 # mmdebstrap gives the hook the root as $1
	mmdebstrap --quiet --mode=root --variant=minbase --include=$includes \
		--skip=cleanup/apt/lists --skip=cleanup/apt/cache \
		--customize-hook='chroot "$1" apt-get install -y -qq --download-only bird2 logrotate' \
		trixie "$cache.new/root" "deb $mirror trixie main" >&2
	printf '%s\n' "$recipe" >"$cache.new/recipe"
	rm -rf "$cache"
	mv "$cache.new" "$cache"
else
	echo "check-readme: base root from $cache ($(cat "$cache/recipe"), built $(date -u -r "$cache/recipe" +%FT%TZ))"
fi

tmp=$(mktemp -d)
keep=${RHI_README_ROOT:-}
overlay=
if [ -n "$keep" ]; then
	root=$keep
	rm -rf "$root"
	mkdir -p "$(dirname "$root")"
	cp -a "$cache/root" "$root"
else
	root=$tmp/root
	mkdir -p "$root" "$tmp/upper" "$tmp/work"
	if mount -t overlay overlay -o "lowerdir=$cache/root,upperdir=$tmp/upper,workdir=$tmp/work" "$root" 2>/dev/null; then
		overlay=1
	else
		rmdir "$root"
		cp -a "$cache/root" "$root"
	fi
fi
cleanup() {
	# Nothing is removed under a mount that did not come off.
	if mountpoint -q "$root/proc" && ! umount "$root/proc"; then
		echo "check-readme: $root/proc is still mounted: $tmp left in place" >&2
		return
	fi
	if [ -n "$overlay" ] && ! umount "$root"; then
		echo "check-readme: the overlay on $root is still mounted: $tmp left in place" >&2
		return
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# Nothing may start in the root: no init runs, and BIRD or rhi started by
# a maintainer script would run on this host.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
mount -t proc proc "$root/proc"
cp "$deb" "$root/root/"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root DEBIAN_FRONTEND=noninteractive sh -c "cd /root && $1"; }

# The README's steps: "STEP<TAB>LINE" for every line of their ```sh
# blocks, and step 4's BIRD snippet and step 5's rhi.yaml.
awk '
	/^### [0-9]+\. / { step = $2; sub(/\.$/, "", step); next }
	/^## / { step = "" }
	step != "" && /^```sh$/ { insh = 1; next }
	insh && /^```$/ { insh = 0; next }
	insh { print step "\t" $0 }
' README.md >"$tmp/commands"
block() { # block STEP INFO: the first block of that info string in the step
	awk -v want="$1" -v info="$2" '
		/^### [0-9]+\. / { step = $2; sub(/\.$/, "", step); next }
		/^## / { step = "" }
		step == want && !inb && !done && $0 == "```" info { inb = 1; next }
		inb && /^```$/ { inb = 0; done = 1; next }
		inb { print }
	' README.md
}
[ -s "$tmp/commands" ] || fail "README.md: no \`\`\`sh lines in numbered steps"
block 4 "" >"$tmp/bird-snippet"
block 5 yaml >"$tmp/rhi.yaml"
[ -s "$tmp/bird-snippet" ] || fail "README.md step 4: no BIRD snippet"
[ -s "$tmp/rhi.yaml" ] || fail "README.md step 5: no rhi.yaml"

pkg=$(basename "$deb")
want_version=$(dpkg-deb --field "$deb" Version)
lab_steps=
while IFS="$(printf '\t')" read -r step line; do
	cmd=$(printf '%s\n' "${line%%#*}" | sed 's/[[:space:]]*$//')
	[ -n "$cmd" ] || continue
	case "$cmd" in
	"make deb")
		skip "step $step: $cmd (the package under test is its output: $pkg)" ;;
	"apt install ./rhi_"*".deb")
		if in_root "apt-get update -qq && apt-get install -y -qq ./$pkg" >"$tmp/apt.log" 2>&1; then
			ok "step $step: apt install ./$pkg"
		else
			fail "step $step: apt install ./$pkg:"; cat "$tmp/apt.log" >&2
		fi
		for p in bird2 logrotate; do
			if in_root "dpkg -s $p" >/dev/null 2>&1; then ok "step $step: apt brought $p (Recommends)"; else fail "step $step: $p not installed"; fi
		done ;;
	"rhi version")
		got=$(in_root "rhi version" 2>&1) || true
		if [ "$got" = "rhi $want_version" ]; then ok "step $step: rhi version: $got"; else fail "step $step: rhi version: got \"$got\", want \"rhi $want_version\""; fi ;;
	"systemctl is-enabled rhi")
		got=$(in_root "systemctl is-enabled rhi" 2>&1) || true
		if [ "$got" = enabled ]; then ok "step $step: systemctl is-enabled rhi: enabled"; else fail "step $step: systemctl is-enabled rhi: got \"$got\""; fi ;;
	"curl "*)
		skip "step $step: $cmd (no APISIX in the root: the lab's fake control API stands in)" ;;
	"systemctl enable --now systemd-networkd")
		if in_root "systemctl enable systemd-networkd" >/dev/null 2>&1 && [ "$(in_root 'systemctl is-enabled systemd-networkd')" = enabled ] &&
			[ -f "$root/usr/lib/systemd/network/50-rhi0.netdev" ]; then
			ok "step $step: systemd-networkd enabled (started at boot; a chroot starts nothing), 50-rhi0.netdev in place"
		else
			fail "step $step: systemctl enable systemd-networkd, or 50-rhi0.netdev missing"
		fi ;;
	"systemctl disable systemd-networkd-wait-online.service")
		if in_root "$cmd" >/dev/null 2>&1; then ok "step $step: $cmd"; else fail "step $step: $cmd"; fi ;;
	"ip -br link show rhi0")
		skip "step $step: $cmd (no systemd-networkd runs in a chroot: the lab's rhi0 stands in)" ;;
	"bird -p && birdc configure")
		# The README's snippet, appended to Debian's stock bird.conf.
		cat "$tmp/bird-snippet" >>"$root/etc/bird/bird.conf"
		if out=$(in_root "bird -p" 2>&1); then
			ok "step $step: bird -p of the stock bird.conf with the README's snippet ($(in_root 'bird --version' 2>&1 | head -n 1))"
		else
			fail "step $step: bird -p: $out"
		fi
		skip "step $step: birdc configure (no BIRD runs in a chroot: the lab's BIRD stands in)" ;;
	"birdc show protocols")
		skip "step $step: $cmd (no BIRD runs in a chroot: the lab's BIRD and router stand in)" ;;
	"id rhi")
		got=$(in_root "id rhi" 2>&1) || true
		case "$got" in
		*"(bird)"*) ok "step $step: id rhi: $got" ;;
		*) fail "step $step: id rhi: got \"$got\", want group bird" ;;
		esac ;;
	"rhi check-config")
		cp "$tmp/rhi.yaml" "$root/etc/rhi/rhi.yaml"
		if in_root "rhi check-config" >"$tmp/cc.out" 2>"$tmp/cc.err" && [ ! -s "$tmp/cc.err" ]; then
			ok "step $step: rhi check-config of the README's rhi.yaml: exit 0, no warning"
		else
			fail "step $step: rhi check-config: $(cat "$tmp/cc.err")"
		fi ;;
	"mkdir -p /run/systemd/system/rhi.service.d" | "printf '[Service]"*"/run/systemd/system/rhi.service.d/dry-run.conf")
		if in_root "$cmd" 2>&1; then ok "step $step: $cmd"; else fail "step $step: $cmd"; fi ;;
	"systemctl daemon-reload && systemctl start rhi" | "rhi status" | "journalctl -u rhi | grep would" | \
		"systemctl stop rhi && rm /run/systemd/system/rhi.service.d/dry-run.conf && systemctl daemon-reload" | \
		"systemctl start rhi" | "systemctl status rhi" | "ip -br addr show rhi0" | "rhi verify")
		skip "step $step: $cmd (needs a running systemd, BIRD and APISIX: run in the lab below)"
		case " $lab_steps " in *" $step "*) ;; *) lab_steps="$lab_steps $step" ;; esac ;;
	*)
		fail "step $step: the walk does not know \"$cmd\": teach packaging/check-readme.sh to run or skip it" ;;
	esac
done <"$tmp/commands"

# The dry-run drop-in of step 6, on the packaged unit.
if [ -f "$root/run/systemd/system/rhi.service.d/dry-run.conf" ]; then
	if out=$(in_root "systemd-analyze verify rhi.service" 2>&1) && ! printf '%s\n' "$out" | grep -q dry-run.conf; then
		ok "step 6: systemd-analyze verify rhi.service with the dry-run drop-in"
	else
		fail "step 6: systemd-analyze verify rhi.service with the dry-run drop-in: $out"
	fi
fi

# Steps 5 to 8 with the packaged rhi in the netns lab.
if RHI_README_RHI="$root/usr/bin/rhi" ${GO:-go} test -v -tags integration -count=1 -p 1 -run '^TestReadmeWalk$' \
	./integration/readme/ >"$tmp/walk.log" 2>&1 && grep -q '^--- PASS: TestReadmeWalk' "$tmp/walk.log"; then
	ok "steps$lab_steps in the lab with $root/usr/bin/rhi: dry run, start, rhi verify exit 0"
else
	fail "the lab walk (integration/readme TestReadmeWalk):"
	cat "$tmp/walk.log" >&2
fi

[ "$fails" = 0 ]
