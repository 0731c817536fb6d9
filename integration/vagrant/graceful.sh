#!/usr/bin/env bash
# graceful.sh: graceful shutdown on the Vagrant lab. With on_shutdown:
# withdraw, `systemctl stop rhi` on the ADC that carries the VIPs (dc1) must
# step every VIP down to the last-resort tier (rhi2: GRACEFUL_SHUTDOWN, the
# 8-copy prepend, the large community (AS, 1, 2)) for drain_grace, then
# withdraw them, then exit, well within the unit's TimeoutStopSec; the
# router moves to the other ADC (dc2) on the step down, while dc1 still
# answers, so a steady stream of probes loses nothing.
#
# While the router sends ICMP echo requests to the VIPs (RHI_LAB_PROBE_RATE a
# second, 200) and counts the answers, and each ADC counts the echo requests
# it answers, the host runs the stop on dc1 and checks at the router:
#   - every VIP moves to dc2 (kernel route), and FRR holds dc1's path of
#     each, marked last resort, with dc2's best (seen before any is gone);
#   - after that, FRR holds no path from dc1, and `systemctl stop` has
#     returned with rhi stopped cleanly, in less than half TimeoutStopSec;
#   - rhi's log says it stepped the VIPs down (not "interface missing");
#   - no echo request was lost.
# Times are on the host's clock from the start of `systemctl stop`, as in
# failover.sh (each router wait polls every 0.1 s). Then rhi runs again
# with dc1's original configuration (on_shutdown: keep) and the VIPs are
# back on dc1, on any exit. RHI_LAB_FIGURES names a file that gets one line
# "graceful LOST MOVED WITHDRAWN STOPPED" (seconds).
set -euo pipefail

cd "$(dirname "$0")/../.."
# shellcheck source=host.sh
source integration/vagrant/host.sh
timeout=${RHI_LAB_TIMEOUT:-90}
rate=${RHI_LAB_PROBE_RATE:-200}
figures=${RHI_LAB_FIGURES:-/dev/null}
conf=/etc/rhi/rhi.yaml
stopfile=/run/rhi-lab-probe.stop
stop_limit=50 # half the unit's TimeoutStopSec=100s
tmp=$(mktemp -d)
pids=()

log() { echo "graceful: $*"; }

restore() {
	local rc=$? p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	on "$router" sudo touch "$stopfile" >/dev/null 2>&1 || true
	echo "== restoring rhi on $dc1 (on_shutdown: keep)"
	on "$dc1" "sudo sed -i -e 's/^on_shutdown: withdraw\$/on_shutdown: keep/' -e 's/^drain_grace: 15s\$/drain_grace: 5s/' $conf && sudo systemctl start rhi" || rc=1
	if ! router_sh wait "$dc1" "$timeout" >/dev/null; then
		log "the VIPs did not come back to $dc1"
		rc=1
	fi
	lab_ssh_close
	rm -rf "$tmp"
	exit "$rc"
}
trap restore EXIT

# until_line FILE TEXT: waits (30 s at most) for a background job's line.
until_line() {
	local i
	for ((i = 0; i < 300; i++)); do
		grep -q "$2" "$1" && return 0
		sleep 0.1
	done
	cat "$1" >&2
	log "no \"$2\" in 30 s"
	return 1
}

# echos HOST: the ICMP echo requests HOST's kernel has received.
echos() {
	on "$1" cat /proc/net/snmp | awk '$1 == "Icmp:" { if (!n) { for (i = 2; i <= NF; i++) if ($i == "InEchos") n = i } else print $n }'
}

on "$dc1" ip link show rhi2 >/dev/null || {
	log "$dc1 has no rhi2, the last-resort tier's interface: a stop would withdraw at once"
	exit 1
}
echo "== $dc1: on_shutdown: withdraw"
on "$dc1" "sudo grep -qx 'on_shutdown: keep' $conf" || {
	log "$dc1: $conf has no line \"on_shutdown: keep\" to change"
	exit 1
}
# A restart with the old on_shutdown (keep) does not flap; the new rhi reads
# withdraw. The grace is 15s here, not the default 5s: under CPU emulation one
# look at the router takes 1-2 s, and the watcher must see the marked paths.
on "$dc1" "sudo sed -i -e 's/^on_shutdown: keep\$/on_shutdown: withdraw/' -e 's/^drain_grace: 5s\$/drain_grace: 15s/' $conf && sudo systemctl restart rhi"
router_sh wait "$dc1" "$timeout"
since=$(on "$dc1" date '+%Y-%m-%d\ %H:%M:%S')

before1=$(echos "$dc1")
before2=$(echos "$dc2")
router_sh probe "$rate" 120 "$stopfile" >"$tmp/probe" 2>&1 &
pids+=($!)
until_line "$tmp/probe" '^ready'
{
	router_sh wait "$dc2" "$timeout"
	echo "moved $(now)"
} >"$tmp/moved" 2>&1 &
pids+=($!)
{
	router_sh stepdown "$dc1" "$dc2" "$timeout"
	echo "marked $(now)"
} >"$tmp/marked" 2>&1 &
pids+=($!)
{
	router_sh gone "$dc1" "$timeout"
	echo "gone $(now)"
} >"$tmp/gone" 2>&1 &
pids+=($!)
until_line "$tmp/moved" 'waiting up to'
until_line "$tmp/marked" 'waiting up to'
until_line "$tmp/gone" 'waiting up to'
sleep 1 # a steady stream before the stop

echo "== $dc1: systemctl stop rhi"
t0=$(now)
on "$dc1" sudo systemctl stop rhi
t1=$(now)
ok=1
for p in "${pids[@]:1}"; do wait "$p" || ok=""; done
sleep 1 # the stream after the withdrawal
on "$router" sudo touch "$stopfile"
wait "${pids[0]}" || ok=""
pids=()
cat "$tmp/moved" "$tmp/marked" "$tmp/gone" "$tmp/probe"
[[ -n $ok ]] || {
	log "a check at the router failed (above)"
	exit 1
}
after1=$(echos "$dc1")
after2=$(echos "$dc2")

moved=$(secs "$t0" "$(awk '$1 == "moved" { print $2 }' "$tmp/moved")")
marked=$(secs "$t0" "$(awk '$1 == "marked" { print $2 }' "$tmp/marked")")
withdrawn=$(secs "$t0" "$(awk '$1 == "gone" { print $2 }' "$tmp/gone")")
stopped=$(secs "$t0" "$t1")
read -r _ sent _ answered _ noreply _ lostfor < <(grep '^sent ' "$tmp/probe")
# A request is lost when no site received it: the sites' ICMP counters say
# how many each received. An answer that did not come back is the prober's
# (a stalled prober under CPU emulation overflows its socket), not the
# route's: it is reported, not judged.
received=$(((after1 - before1) + (after2 - before2)))
lost=$((sent > received ? sent - received : 0))
log "echo requests: $sent sent, $received received ($((after1 - before1)) by $dc1, $((after2 - before2)) by $dc2), $lost lost; $answered answers came back ($noreply did not, over ${lostfor} s)"
log "after the stop began: the router's kernel routes moved to $dc2 after $moved s, FRR held $dc1's paths marked last resort with $dc2's best after $marked s, $dc1's paths gone after $withdrawn s, systemctl stop returned after $stopped s"

fail=""
if awk -v s="$stopped" -v l="$stop_limit" 'BEGIN { exit !(s >= l) }'; then
	fail+=" systemctl stop took $stopped s (limit $stop_limit s);"
fi
state="$(on "$dc1" systemctl show -p ActiveState --value rhi) $(on "$dc1" systemctl show -p Result --value rhi)"
[[ $state == "inactive success" ]] || fail+=" rhi is \"$state\" after the stop, want \"inactive success\";"
left=$(on "$dc1" ip -4 -o addr show | awk '$2 ~ /^rhi[0-2]$/ { print $2, $4 }' | paste -sd' ' -)
[[ -z $left ]] || fail+=" addresses left on $dc1: $left;"
rhilog=$(on "$dc1" "sudo journalctl -u rhi --since='$since' --no-pager -o cat; sudo cat /var/log/rhi/main.log")
if ! grep -q 'announced in last resort (GRACEFUL_SHUTDOWN) for their drain_grace' <<<"$rhilog"; then
	fail+=" rhi's log does not say it stepped the VIPs down to last resort;"
fi
((lost == 0)) || fail+=" $lost echo requests lost;"
if [[ -n $fail ]]; then
	log "FAIL:$fail"
	exit 1
fi
echo "graceful $lost $moved $withdrawn $stopped" >>"$figures"
