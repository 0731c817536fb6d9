#!/usr/bin/env bash
# provision-router.sh HOST: turns a Debian 12 VM into the Vagrant lab's
# router: FRR with bgpd, one passive eBGP session per ADC, the best path for
# each VIP installed in the kernel (so `ip route` shows where traffic goes).
# FRR rather than BIRD, so that the ADCs' BIRD is checked against a second
# BGP implementation.
#
# Run by Vagrant as root, with the repository at /vagrant. Safe to run again.
set -euo pipefail

host=${1:?usage: provision-router.sh HOST}
repo=${LAB_REPO:-/vagrant}
# shellcheck source=lab.sh
source "$repo/integration/vagrant/lab.sh"
[[ $host == "$LAB_ROUTER" ]] || lab_die "\"$host\" is not the router in $LAB_TOPOLOGY"

export DEBIAN_FRONTEND=noninteractive
log() { echo "provision $host: $*"; }

log "packages"
apt-get update -qq
apt-get install -y -qq --no-install-recommends -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
	frr curl >/dev/null

log "FRR"
conf=$(mktemp)
render_router_frr >"$conf"
# The same check CI runs (check.sh), before FRR sees the file.
vtysh --dryrun -f "$conf"
install -m 0640 -o frr -g frr "$conf" /etc/frr/frr.conf
rm -f "$conf"
# Debian's FRR starts zebra, staticd and watchfrr only; bgpd is opt-in.
sed -i 's/^bgpd=no$/bgpd=yes/' /etc/frr/daemons
grep -q '^bgpd=yes$' /etc/frr/daemons || lab_die "/etc/frr/daemons: could not enable bgpd"
systemctl enable frr.service
systemctl restart frr.service

log "done: $(vtysh -c 'show version' | head -n 1)"
