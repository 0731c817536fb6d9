#!/usr/bin/env bash
# failover.sh (make vagrant-failover): the anycast failover of the design note
# on the Vagrant lab, timed. Takes every upstream of the first ADC (dc1) down
# (dc.sh: stops its backends under the real APISIX, flips the fake API's
# nodes to unhealthy), waits until the router's kernel routes every VIP via
# the second ADC (dc2), then brings dc1's upstreams back and waits until the
# VIPs return to dc1. RHI_LAB_FAILOVER_RUNS times (1).
#
# The time of each step is taken on the host's clock alone: from the return
# of the command that flipped dc1 to the return of the router's wait for the
# move (polling every 0.1 s). Both go through already open ssh connections
# (host.sh), so the error is about the flip command's own duration, printed
# with each figure. RHI_LAB_TIMEOUT bounds each wait (90 s); dc1's upstreams
# are restored on any exit. RHI_LAB_FIGURES names a file that gets one line
# per step: "dc1-dc2 SECONDS" or "dc2-dc1 SECONDS".
#
# Runs on the host; needs GNU date and ssh. Everything in the VMs goes through
# ssh with `vagrant ssh-config`'s configuration.
set -euo pipefail

cd "$(dirname "$0")/../.."
# shellcheck source=host.sh
source integration/vagrant/host.sh
timeout=${RHI_LAB_TIMEOUT:-90}
runs=${RHI_LAB_FAILOVER_RUNS:-1}
figures=${RHI_LAB_FIGURES:-/dev/null}
[[ -n $router && -n $dc1 && -n $dc2 ]] || {
	echo "failover: $topology needs a router and two ADCs" >&2
	exit 1
}
dc=/usr/local/libexec/rhi-lab/dc.sh
tmp=$(mktemp -d)

restore() {
	echo "== restoring the upstreams of $dc1"
	on "$dc1" sudo "$dc" up >/dev/null || true
	lab_ssh_close
	rm -rf "$tmp"
}
trap restore EXIT

# step NAME ACTION TO: runs `dc.sh ACTION` on dc1 while the router waits for
# every VIP to go via TO; prints and records the time from flip to move.
step() {
	local name=$1 action=$2 to=$3 out=$tmp/wait.out t0 t1 t2 pid i
	: >"$out"
	router_sh wait "$to" "$timeout" >"$out" 2>&1 &
	pid=$!
	# The wait must be polling before the flip.
	for ((i = 0; i < 300; i++)); do
		grep -q 'waiting up to' "$out" && break
		sleep 0.1
	done
	grep -q 'waiting up to' "$out" || {
		cat "$out" >&2
		return 1
	}
	t0=$(now)
	on "$dc1" sudo "$dc" "$action" >/dev/null
	t1=$(now)
	if ! wait "$pid"; then
		cat "$out" >&2
		echo "failover: $name: the VIPs did not move to $to in ${timeout}s" >&2
		return 1
	fi
	t2=$(now)
	echo "failover: $name: every VIP via $to $(secs "$t1" "$t2") s after the flip (the flip command took $(secs "$t0" "$t1") s)"
	echo "$name $(secs "$t1" "$t2")" >>"$tmp/figures"
}

echo "== before: every VIP should go via $dc1 (lowest router id)"
router_sh wait "$dc1" "$timeout"
router_sh show

for ((r = 1; r <= runs; r++)); do
	echo
	echo "== run $r/$runs: taking every upstream of $dc1 down"
	step "$dc1-$dc2" down "$dc2"
	if ((r == 1)); then
		router_sh show
		echo
		echo "== rhi on $dc1 (last lines of /var/log/rhi/main.log)"
		on "$dc1" sudo tail -n 8 /var/log/rhi/main.log
	fi
	echo "== run $r/$runs: bringing the upstreams of $dc1 back"
	step "$dc2-$dc1" up "$dc1"
done
router_sh show
echo
for name in "$dc1-$dc2" "$dc2-$dc1"; do
	# shellcheck disable=SC2046 # one word per figure
	echo "failover: $name over $runs run(s): $(median_worst $(awk -v n="$name" '$1 == n { print $2 }' "$tmp/figures"))"
done
cat "$tmp/figures" >>"$figures"
