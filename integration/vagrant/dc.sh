#!/usr/bin/env bash
# dc.sh down | up: takes every upstream of this ADC down, or brings them back,
# the way the lab's failover does it; prints the time it was done (epoch
# seconds, this VM's clock). Installed on the ADCs as
# /usr/local/libexec/rhi-lab/dc.sh, run as root by failover.sh.
#
#   real APISIX  stops (starts) rhi-lab-backends.target: APISIX's active
#                checks find the nodes dead (alive again)
#   fake API     sets every node of every upstream unhealthy (healthy)
#                through the fake API's control socket
set -euo pipefail

mode=$(cat /etc/rhi-lab/apisix-mode)
case ${1:-} in
down) want=unhealthy action=stop ;;
up) want=healthy action=start ;;
*)
	echo "usage: dc.sh down | up" >&2
	exit 2
	;;
esac
case $mode in
real) systemctl "$action" rhi-lab-backends.target ;;
fake)
	# One curl for all of them, so that they flip within milliseconds.
	urls=()
	while IFS= read -r ref; do
		[[ -z $ref || $ref == \#* ]] && continue
		urls+=("http://fake/status/$ref?status=$want")
	done </etc/rhi-lab/fakeapi-upstreams
	curl -fsS --max-time 5 --unix-socket /run/rhi-lab-fakeapi/control.sock -X POST "${urls[@]}"
	;;
*)
	echo "dc.sh: /etc/rhi-lab/apisix-mode: want real or fake, got \"$mode\"" >&2
	exit 1
	;;
esac
date +%s.%N
