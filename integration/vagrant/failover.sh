#!/usr/bin/env bash
# failover.sh (make vagrant-failover): the anycast failover of the design note
# on the Vagrant lab. Stops every backend on the first ADC (dc1), shows the
# router's table move to the second (dc2) once rhi on dc1 withdraws the VIPs,
# then restores dc1's backends and shows the VIPs come back to dc1.
#
# Runs on the host; everything in the VMs goes through `vagrant ssh`. Plain
# bash 3.2 (macOS) is enough here: the lab logic runs in the VMs (router.sh).
# VAGRANT names the vagrant command; RHI_LAB_TIMEOUT bounds each wait (s).
set -euo pipefail

cd "$(dirname "$0")/../.."
vagrant=${VAGRANT:-vagrant}
timeout=${RHI_LAB_TIMEOUT:-90}
topology=integration/vagrant/topology
router=$(awk '$1 !~ /^#/ && $2 == "router" { print $1 }' "$topology")
adcs=$(awk '$1 !~ /^#/ && $2 == "adc" { print $1 }' "$topology")
dc1=$(printf '%s\n' "$adcs" | sed -n 1p)
dc2=$(printf '%s\n' "$adcs" | sed -n 2p)
[[ -n $router && -n $dc1 && -n $dc2 ]] || { echo "failover: $topology needs a router and two ADCs" >&2; exit 1; }

on() {
	local h=$1
	shift
	"$vagrant" ssh "$h" -c "$*" -- -q
}
router_sh() { on "$router" sudo bash /vagrant/integration/vagrant/router.sh "$@"; }

restore() {
	echo "== restoring the backends of $dc1"
	on "$dc1" sudo systemctl start rhi-lab-backends.target
}

echo "== before: every VIP should go via $dc1 (lowest router id)"
router_sh wait "$dc1" "$timeout"
router_sh show

trap restore EXIT
echo
echo "== stopping every backend of $dc1"
on "$dc1" sudo systemctl stop rhi-lab-backends.target
router_sh wait "$dc2" "$timeout"
router_sh show
echo
echo "== rhi on $dc1 (last lines of /var/log/rhi/main.log)"
on "$dc1" sudo tail -n 8 /var/log/rhi/main.log

trap - EXIT
echo
restore
router_sh wait "$dc1" "$timeout"
router_sh show
