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

# The lab's box has both already; only a box without them (and a route to
# the mirror) needs apt. Offline, `apt-get update` would only warn.
log "packages"
if ! dpkg -s frr curl >/dev/null 2>&1; then
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
		frr curl >/dev/null
fi
# The box is shared with the ADCs: BIRD is theirs. Debian's bird.service would
# fail here (no configuration for this host) and leave the VM degraded.
if systemctl cat bird.service >/dev/null 2>&1; then
	systemctl disable --now bird.service >/dev/null 2>&1
	systemctl reset-failed bird.service 2>/dev/null || true
fi

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
# FRR starts each daemon, then loads its part of frr.conf into it (vtysh -b).
# On a slow VM (CPU emulation on a busy host) that load can miss, leaving
# bgpd up without "router bgp": no session, no route, no failed unit. So
# check, load it once more if needed, and fail if it still is not there.
bgp_loaded() { vtysh -c 'show running-config' 2>/dev/null | grep -q "^router bgp ${LAB_ASN[$host]}\$"; }
for ((i = 0; i < 60; i++)); do
	bgp_loaded && break
	sleep 2
done
if ! bgp_loaded; then
	log "bgpd came up without frr.conf's BGP configuration: loading it again (vtysh -b)"
	vtysh -b >/dev/null || true
	sleep 2
	bgp_loaded || lab_die "bgpd has no \"router bgp ${LAB_ASN[$host]}\" (journalctl -u frr)"
fi

lab_settle "$host"
log "done: $(vtysh -c 'show version' | head -n 1)"
