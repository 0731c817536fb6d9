# shellcheck shell=bash
# The LAB_* variables are for the scripts that source this file.
# shellcheck disable=SC2034
# lab.sh: the Vagrant lab's topology and the configuration files it renders.
#
# Sourced (bash 4 or later) by the provisioning scripts inside the VMs, from
# /vagrant, by router.sh on the router, and by check.sh in CI, so that CI
# checks exactly the files the VMs get. Sourcing reads and checks the sources
# of truth and exits on a problem; every render_* function then writes one
# file to stdout and does nothing else.
#
# Sources of truth, all in the repository:
#   integration/vagrant/topology   hosts, roles, addresses, ASNs
#   deploy/rhi.yaml                the VIPs and their upstreams (the ADCs run it as it is)
#   deploy/bird/base.conf          BIRD's device and kernel protocols on the ADCs
#   deploy/bird/tiers.conf         BIRD on the ADCs: adc.conf plus the degraded tier and the
#                                  fail-open guard's tables (the host file adds identity,
#                                  the four defines and the session)

LAB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAB_REPO=$(cd "$LAB_DIR/../.." && pwd)
LAB_TOPOLOGY=$LAB_DIR/topology
LAB_RHI_CONFIG=$LAB_REPO/deploy/rhi.yaml
LAB_BIRD_SHARED=$LAB_REPO/deploy/bird/tiers.conf
LAB_BIRD_BASE=$LAB_REPO/deploy/bird/base.conf

# Backends per upstream. Two, because APISIX up to 3.12 creates no health
# checker for an upstream with a single node, and because "every node down"
# is what takes a data centre's VIP away.
LAB_NODES=2
# APISIX's proxy port (its default) and the backends' health-check path.
LAB_APISIX_PORT=9080
LAB_HEALTH_PATH=/healthz

lab_die() {
	echo "lab: $*" >&2
	exit 1
}

# The topology: LAB_HOSTS in file order; role, address and ASN by host;
# LAB_ROUTER and LAB_ADCS (dc1 first: it is the preferred one).
LAB_HOSTS=()
LAB_ADCS=()
LAB_ROUTER=""
declare -A LAB_ROLE=() LAB_ADDR=() LAB_ASN=()

lab_read_topology() {
	local host role addr asn extra
	while read -r host role addr asn extra; do
		[[ -z $host || $host == \#* ]] && continue
		[[ -n $asn && -z $extra ]] ||
			lab_die "$LAB_TOPOLOGY: want \"host role address asn\", got \"$host $role $addr $asn $extra\""
		[[ $addr =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] || lab_die "$LAB_TOPOLOGY: $host: address \"$addr\" is not IPv4"
		[[ $asn =~ ^[0-9]+$ ]] || lab_die "$LAB_TOPOLOGY: $host: ASN \"$asn\" is not a number"
		[[ -z ${LAB_ROLE[$host]:-} ]] || lab_die "$LAB_TOPOLOGY: host \"$host\" twice"
		case $role in
		router)
			[[ -z $LAB_ROUTER ]] || lab_die "$LAB_TOPOLOGY: more than one router"
			LAB_ROUTER=$host
			;;
		adc) LAB_ADCS+=("$host") ;;
		*) lab_die "$LAB_TOPOLOGY: $host: unknown role \"$role\" (allowed: router, adc)" ;;
		esac
		LAB_HOSTS+=("$host")
		LAB_ROLE[$host]=$role
		LAB_ADDR[$host]=$addr
		LAB_ASN[$host]=$asn
	done <"$LAB_TOPOLOGY"
	[[ -n $LAB_ROUTER ]] || lab_die "$LAB_TOPOLOGY: no router"
	((${#LAB_ADCS[@]} >= 2)) || lab_die "$LAB_TOPOLOGY: want at least two ADCs"
}

# The VIPs of deploy/rhi.yaml and their upstreams: LAB_VIPS and LAB_UPSTREAMS
# in file order, each once; LAB_VIP_UPSTREAM the first upstream of each VIP.
# The lab builds APISIX upstreams from the upstream keys, so it accepts only
# keys of type "upstreams", and only IPv4 VIPs: its BGP sessions are IPv4.
LAB_VIPS=()
LAB_UPSTREAMS=()
declare -A LAB_VIP_UPSTREAM=()

lab_read_rhi_config() {
	local line vip="" key id
	local re_vip='^[[:space:]]*-?[[:space:]]*address:[[:space:]]*"?([^"/[:space:]]+)(/[0-9]+)?"?[[:space:]]*$'
	local re_key='^[[:space:]]*-[[:space:]]+"?(/[^"[:space:]]+)"?[[:space:]]*$'
	declare -A seen=()
	while IFS= read -r line; do
		if [[ $line =~ $re_vip ]]; then
			vip=${BASH_REMATCH[1]}
			[[ $vip =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
				lab_die "$LAB_RHI_CONFIG: VIP \"$vip\": the lab carries IPv4 only"
			LAB_VIPS+=("$vip")
		elif [[ $line =~ $re_key ]]; then
			key=${BASH_REMATCH[1]}
			[[ -n $vip ]] || lab_die "$LAB_RHI_CONFIG: upstream \"$key\" before any VIP"
			[[ $key =~ /upstreams/([A-Za-z0-9._-]{1,64})$ ]] ||
				lab_die "$LAB_RHI_CONFIG: upstream \"$key\": the lab builds only /…/upstreams/<id> keys"
			id=${BASH_REMATCH[1]}
			[[ -n ${LAB_VIP_UPSTREAM[$vip]:-} ]] || LAB_VIP_UPSTREAM[$vip]=$id
			[[ -n ${seen[$id]:-} ]] || LAB_UPSTREAMS+=("$id")
			seen[$id]=1
		fi
	done <"$LAB_RHI_CONFIG"
	((${#LAB_VIPS[@]} > 0)) || lab_die "$LAB_RHI_CONFIG: no VIPs found"
	for vip in "${LAB_VIPS[@]}"; do
		[[ -n ${LAB_VIP_UPSTREAM[$vip]:-} ]] || lab_die "$LAB_RHI_CONFIG: VIP \"$vip\" has no upstreams"
	done
}

lab_read_topology
lab_read_rhi_config

# lab_ports UPSTREAM: the backend ports of one upstream, 80<i><n> for the
# i-th upstream (from 1) and its n-th node: 8011 8012, 8021 8022, …
lab_ports() {
	local i n
	for i in "${!LAB_UPSTREAMS[@]}"; do
		[[ ${LAB_UPSTREAMS[$i]} == "$1" ]] || continue
		for ((n = 1; n <= LAB_NODES; n++)); do
			printf '%d\n' $((8000 + 10 * (i + 1) + n))
		done
		return 0
	done
	lab_die "no upstream \"$1\" in $LAB_RHI_CONFIG"
}

# render_adc_bird HOST: /etc/bird/bird.conf of an ADC, the shape of
# deploy/bird/examples/bird-tiers.conf (a BIRD that runs for rhi only, so it
# takes base.conf's device and kernel protocols, with tiers.conf: the
# degraded tier on rhi1 and the fail-open guard's tables). The guard's range
# is the VIPs of deploy/rhi.yaml; the lab carries no IPv6, so RHI_GUARD6 is
# the documentation prefix. The includes are relative to this file, so the
# same text works in /etc/bird (next to rhi/) and in check.sh's scratch
# directory.
render_adc_bird() {
	local host=$1 router=$LAB_ROUTER guard4="" vip a b c d
	[[ ${LAB_ROLE[$host]:-} == adc ]] || lab_die "\"$host\" is not an ADC in $LAB_TOPOLOGY"
	for vip in "${LAB_VIPS[@]}"; do
		guard4+="${guard4:+, }$vip/32"
	done
	# RHI_SITE_ID: the router id as a number, rhi's default site_id.
	IFS=. read -r a b c d <<<"${LAB_ADDR[$host]}"
	cat <<EOF
# bird.conf of $host in the Vagrant lab. Rendered by integration/vagrant/lab.sh
# from integration/vagrant/topology; do not edit in place. Everything shared
# is in rhi/base.conf and rhi/tiers.conf, copies of deploy/bird/.

log syslog all;
router id ${LAB_ADDR[$host]};

define RHI_AS = ${LAB_ASN[$host]};
define RHI_SITE_ID = $(( (a << 24) + (b << 16) + (c << 8) + d ));
define RHI_DEGRADED_PREPEND = 3;
define RHI_GUARD4 = [ $guard4 ];
define RHI_GUARD6 = [ 2001:db8::/32{128,128} ];
include "rhi/base.conf";
include "rhi/tiers.conf";

# The session to $router (FRR). The lab carries IPv4 only.
protocol bgp peer_4 from rhi_peer4 {
  local ${LAB_ADDR[$host]} as ${LAB_ASN[$host]};
  neighbor ${LAB_ADDR[$router]} as ${LAB_ASN[$router]};
}
EOF
}

# render_router_frr: /etc/frr/frr.conf of the router, with the policy of
# deploy/bird/peer.conf: listen only (the ADCs connect), take the host routes
# the ADCs announce, and send each ADC every path of them (ADD-PATH), which
# tiers.conf takes into the fail-open guard's table only. Among equal paths the lowest router id
# wins, so the VIPs go to dc1 while it announces them (FRR's default for eBGP
# would keep whichever path is older).
render_router_frr() {
	local r=$LAB_ROUTER h
	cat <<EOF
! frr.conf of $r in the Vagrant lab. Rendered by integration/vagrant/lab.sh
! from integration/vagrant/topology; do not edit in place.
frr defaults traditional
hostname $r
log syslog informational
service integrated-vtysh-config
!
ip prefix-list rhi-vips seq 10 permit 0.0.0.0/0 ge 32
!
route-map rhi-adc-in permit 10
 match ip address prefix-list rhi-vips
exit
!
route-map rhi-adc-out permit 10
 match ip address prefix-list rhi-vips
exit
!
router bgp ${LAB_ASN[$r]}
 bgp router-id ${LAB_ADDR[$r]}
 bgp bestpath compare-routerid
 no bgp default ipv4-unicast
 neighbor adc peer-group
 neighbor adc passive
EOF
	for h in "${LAB_ADCS[@]}"; do
		printf ' neighbor %s remote-as %s\n neighbor %s peer-group adc\n neighbor %s description %s\n' \
			"${LAB_ADDR[$h]}" "${LAB_ASN[$h]}" "${LAB_ADDR[$h]}" "${LAB_ADDR[$h]}" "$h"
	done
	cat <<EOF
 !
 address-family ipv4 unicast
  neighbor adc activate
  neighbor adc route-map rhi-adc-in in
  neighbor adc route-map rhi-adc-out out
  neighbor adc addpath-tx-all-paths
 exit-address-family
exit
!
EOF
}

# render_apisix_yaml: the ADCs' /usr/local/apisix/conf/apisix.yaml: one
# upstream per upstream key of deploy/rhi.yaml (id = the key's last segment,
# which is what rhi matches on), LAB_NODES backends each, active health
# checks, and one route per upstream at /<id>/*.
render_apisix_yaml() {
	local id port
	cat <<EOF
# apisix.yaml of the Vagrant lab's ADCs (standalone mode). Rendered by
# integration/vagrant/lab.sh from deploy/rhi.yaml; do not edit in place.
# APISIX re-reads this file every second and loads it only if it ends in #END.
# A backend is down after 2 failed checks 1 s apart, up after 1 good one.
upstreams:
EOF
	for id in "${LAB_UPSTREAMS[@]}"; do
		printf '  - id: %s\n    type: roundrobin\n    nodes:\n' "$id"
		for port in $(lab_ports "$id"); do
			printf '      "127.0.0.1:%d": 1\n' "$port"
		done
		cat <<EOF
    checks:
      active:
        type: http
        http_path: $LAB_HEALTH_PATH
        timeout: 1
        healthy:
          interval: 1
          successes: 1
        unhealthy:
          interval: 1
          http_failures: 2
          tcp_failures: 2
          timeouts: 2
EOF
	done
	echo "routes:"
	for id in "${LAB_UPSTREAMS[@]}"; do
		printf '  - id: %s\n    uri: /%s/*\n    upstream_id: %s\n' "$id" "$id" "$id"
	done
	echo "#END"
}

# render_warmup_urls: one URL per route, for warmup.sh.
render_warmup_urls() {
	local id
	echo "# One request through each APISIX route. Rendered by integration/vagrant/lab.sh."
	for id in "${LAB_UPSTREAMS[@]}"; do
		printf 'http://127.0.0.1:%d/%s/\n' "$LAB_APISIX_PORT" "$id"
	done
}

# render_fakeapi_upstreams: the fake API's resources, one type/id a line: every
# upstream key of deploy/rhi.yaml, as rhi asks for it.
render_fakeapi_upstreams() {
	local id
	for id in "${LAB_UPSTREAMS[@]}"; do
		printf 'upstreams/%s\n' "$id"
	done
}

# render_fakeapi_env: /etc/rhi-lab/fakeapi.env, read by rhi-lab-fakeapi.service.
render_fakeapi_env() {
	local ids
	ids=$(render_fakeapi_upstreams | paste -sd, -)
	echo "# Rendered by integration/vagrant/lab.sh from deploy/rhi.yaml."
	echo "RHI_LAB_FAKEAPI_HEALTHY=$ids"
}

# lab_settle HOST: the end of provisioning. The lab's address must be up;
# Vagrant's own `ifup` of that interface races the ifup@ unit udev starts on
# first boot, and the loser leaves ifup@DEV failed though the interface is up
# (later boots bring it up once, from networking.service). Then no unit may
# have failed: a degraded VM is a provisioning bug.
lab_settle() {
	local host=$1 dev failed
	dev=$(ip -o -4 addr show | awk -v a="${LAB_ADDR[$host]}/" 'index($4, a) == 1 { print $2 }')
	[[ -n $dev ]] || lab_die "$host: no interface holds ${LAB_ADDR[$host]}"
	if systemctl is-failed --quiet "ifup@$dev.service"; then
		systemctl reset-failed "ifup@$dev.service"
	fi
	failed=$(systemctl list-units --state=failed --no-legend --plain | awk '{ print $1 }' | paste -sd' ' -)
	[[ -z $failed ]] || lab_die "$host: failed units: $failed (journalctl -u …)"
}
