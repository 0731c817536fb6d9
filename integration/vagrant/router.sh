#!/usr/bin/env bash
# router.sh show | wait ADC SECONDS: the router's view of the VIPs, run on the
# router (as root) by failover.sh.
#
#   show            FRR's BGP table, then per VIP the kernel's next hop, the
#                   ADC it belongs to, and the answer of a request through the
#                   VIP (the backends answer with their ADC's name)
#   wait ADC SECS   wait until every VIP's kernel route goes via ADC
#   hold ADC SECS   for SECS seconds, check every 0.1 s that every VIP goes
#                   via ADC; fails on the first one that does not
#   updates ADC     how many BGP UPDATE messages FRR has received from ADC (a
#                   withdrawal or a new announcement each counts; keepalives
#                   do not)
set -euo pipefail

repo=${LAB_REPO:-/vagrant}
# shellcheck source=lab.sh
source "$repo/integration/vagrant/lab.sh"

# next_hop VIP: the kernel's next hop for VIP/32, empty when there is none.
next_hop() {
	ip -4 route show "$1/32" | sed -n 's/.* via \([0-9.]*\) .*/\1/p' | head -n 1
}

# owner ADDR: the lab host with that address.
owner() {
	local h
	for h in "${LAB_HOSTS[@]}"; do
		[[ ${LAB_ADDR[$h]} == "$1" ]] && echo "$h" && return 0
	done
	echo "-"
}

show() {
	local vip hop answer
	vtysh -c 'show bgp ipv4 unicast'
	echo
	printf '%-16s %-16s %-8s %s\n' VIP "NEXT HOP" ADC "GET /<upstream>/ through the VIP"
	for vip in "${LAB_VIPS[@]}"; do
		hop=$(next_hop "$vip")
		answer=$(curl -sS --max-time 2 --max-filesize 4096 \
			"http://$vip:$LAB_APISIX_PORT/${LAB_VIP_UPSTREAM[$vip]}/" 2>&1 | head -n 1) || true
		printf '%-16s %-16s %-8s %s\n' "$vip" "${hop:--}" "$(owner "$hop")" "$answer"
	done
}

wait_for() {
	local adc=$1 secs=$2 want vip ok deadline
	want=${LAB_ADDR[$adc]:-}
	[[ ${LAB_ROLE[$adc]:-} == adc ]] || lab_die "\"$adc\" is not an ADC in $LAB_TOPOLOGY"
	deadline=$((SECONDS + secs))
	echo "router: waiting up to ${secs}s for every VIP to go via $adc ($want)"
	while :; do
		ok=1
		for vip in "${LAB_VIPS[@]}"; do
			[[ $(next_hop "$vip") == "$want" ]] || ok=""
		done
		if [[ -n $ok ]]; then
			echo "router: every VIP goes via $adc"
			return 0
		fi
		if ((SECONDS >= deadline)); then
			echo "router: not every VIP goes via $adc after ${secs}s" >&2
			show >&2
			return 1
		fi
		sleep 0.1
	done
}

hold() {
	local adc=$1 secs=$2 want vip deadline hop
	want=${LAB_ADDR[$adc]:-}
	[[ ${LAB_ROLE[$adc]:-} == adc ]] || lab_die "\"$adc\" is not an ADC in $LAB_TOPOLOGY"
	deadline=$((SECONDS + secs))
	echo "router: checking for ${secs}s that every VIP goes via $adc ($want)"
	while ((SECONDS < deadline)); do
		for vip in "${LAB_VIPS[@]}"; do
			hop=$(next_hop "$vip")
			if [[ $hop != "$want" ]]; then
				echo "router: $vip went via \"${hop:-nothing}\", not $adc" >&2
				return 1
			fi
		done
		sleep 0.1
	done
	echo "router: every VIP went via $adc throughout"
}

updates() {
	local adc=$1
	[[ ${LAB_ROLE[$adc]:-} == adc ]] || lab_die "\"$adc\" is not an ADC in $LAB_TOPOLOGY"
	vtysh -c "show bgp neighbors ${LAB_ADDR[$adc]} json" |
		python3 -c 'import json, sys; n = json.load(sys.stdin); print(next(iter(n.values()))["messageStats"]["updatesRecv"])'
}

case ${1:-} in
show) show ;;
wait) wait_for "${2:?usage: router.sh wait ADC SECONDS}" "${3:?usage: router.sh wait ADC SECONDS}" ;;
hold) hold "${2:?usage: router.sh hold ADC SECONDS}" "${3:?usage: router.sh hold ADC SECONDS}" ;;
updates) updates "${2:?usage: router.sh updates ADC}" ;;
*)
	echo "usage: router.sh show | wait ADC SECONDS | hold ADC SECONDS | updates ADC" >&2
	exit 2
	;;
esac
