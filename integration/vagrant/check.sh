#!/usr/bin/env bash
# check.sh (make check-vagrant): everything about the Vagrant lab that can be
# checked without starting a VM, on the files the VMs would get (rendered by
# the same lab.sh functions the provisioning scripts use):
#
#   Vagrantfile   ruby -c, vagrant validate -p (provider settings ignored:
#                 no provider is installed here)
#   scripts       shellcheck on every script of integration/vagrant (and box/)
#   BIRD          bird -p -c on each ADC's bird.conf with deploy/bird/base.conf
#                 and tiers.conf
#   FRR           vtysh --dryrun -f on the router's frr.conf
#   APISIX        config.yaml and the rendered apisix.yaml parsed and checked
#                 against deploy/rhi.yaml (check-yaml.rb)
#   systemd       systemd-analyze verify on the units the lab installs
#
# Every tool here is a Debian 12 package (vagrant ruby shellcheck bird2 frr
# systemd python3); a missing one is an error, not a skip.
set -euo pipefail

cd "$(dirname "$0")/../.."
# shellcheck source=lab.sh
source integration/vagrant/lab.sh

missing=()
need() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
need vagrant vagrant
need ruby ruby
need shellcheck shellcheck
need bird bird2
need vtysh frr
need systemd-analyze systemd
# The backend unit runs /usr/bin/python3; verify wants it to exist.
[[ -x /usr/bin/python3 ]] || missing+=(python3)
if ((${#missing[@]})); then
	echo "check-vagrant: missing tools; install them with: apt-get install ${missing[*]}" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { echo "check-vagrant: $*: ok"; }

ruby -c Vagrantfile >/dev/null
ruby -c integration/vagrant/check-yaml.rb >/dev/null
ok "ruby -c Vagrantfile"
# validate writes .vagrant/ next to the Vagrantfile unless told otherwise.
# RHI_LAB_ACCEL: no accelerator probe for a check.
RHI_LAB_ACCEL=qemu VAGRANT_DOTFILE_PATH=$tmp/dot-vagrant VAGRANT_CHECKPOINT_DISABLE=1 vagrant validate -p >/dev/null
ok "vagrant validate -p"

shellcheck integration/vagrant/*.sh integration/vagrant/box/*.sh
ok "shellcheck integration/vagrant/*.sh integration/vagrant/box/*.sh"
ruby -c integration/vagrant/box/Vagrantfile >/dev/null
ok "ruby -c integration/vagrant/box/Vagrantfile"

for h in "${LAB_ADCS[@]}"; do
	install -D -m 0644 "$LAB_BIRD_BASE" "$tmp/bird-$h/rhi/base.conf"
	install -D -m 0644 "$LAB_BIRD_SHARED" "$tmp/bird-$h/rhi/tiers.conf"
	render_adc_bird "$h" >"$tmp/bird-$h/bird.conf"
	bird -p -c "$tmp/bird-$h/bird.conf"
	ok "bird -p -c ($h bird.conf + deploy/bird/base.conf, tiers.conf)"
done

render_router_frr >"$tmp/frr.conf"
vtysh --dryrun -f "$tmp/frr.conf"
ok "vtysh --dryrun -f ($LAB_ROUTER frr.conf)"

render_apisix_yaml >"$tmp/apisix.yaml"
ruby integration/vagrant/check-yaml.rb "$LAB_RHI_CONFIG" integration/vagrant/apisix-config.yaml "$tmp/apisix.yaml" \
	"${LAB_VIPS[*]}" "${LAB_UPSTREAMS[*]}"

# The units as installed, but with the warm-up script at a path that exists
# here (as check-deploy does for rhi.service). Our own units must verify
# without a single complaint; verify's rc alone ignores bad settings.
install -D -m 0755 integration/vagrant/warmup.sh "$tmp/libexec/warmup.sh"
# The fake API's binary is built for the VMs by make vagrant-up; any
# executable does for checking the unit.
install -D -m 0755 /bin/true "$tmp/libexec/fake-apisix"
mkdir -p "$tmp/units"
for f in integration/vagrant/units/*; do
	sed "s#/usr/local/libexec/rhi-lab/#$tmp/libexec/#g" "$f" >"$tmp/units/${f##*/}"
done
port=$(lab_ports "${LAB_UPSTREAMS[0]}" | head -n 1)
units=(rhi-lab-warmup.service rhi-lab-warmup.timer rhi-lab-warmup.path rhi-lab-backends.target "rhi-lab-backend@$port.service" rhi-lab-fakeapi.service)
out=$(cd "$tmp/units" && systemd-analyze verify "${units[@]/#/./}" 2>&1) || {
	printf '%s\n' "$out" >&2
	exit 1
}
if grep -q 'rhi-lab-' <<<"$out"; then
	printf '%s\n' "$out" >&2
	echo "check-vagrant: systemd-analyze verify complained about the lab's units" >&2
	exit 1
fi
ok "systemd-analyze verify ${units[*]}"
