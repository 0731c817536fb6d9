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
#   stepdown ADC OTHER SECS  wait until FRR holds a path of every VIP from
#                   ADC marked last resort (GRACEFUL_SHUTDOWN and the large
#                   community (ADC's AS, 1, 2)) and each VIP's best path is
#                   OTHER's; print them
#   gone ADC SECS   wait until FRR holds no path of any VIP from ADC
#   probe RATE SECS STOPFILE  ICMP echo requests to the VIPs, RATE a second,
#                   until STOPFILE exists (at most SECS seconds); prints
#                   "ready" once sending, at the end "sent N answered M
#                   lost L lost-for S"
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

# bgp_paths VIP…: FRR's paths of each VIP/32 (one vtysh call), one line
# each: "vip peer best marks local-pref as-path", marks being gshut
# (GRACEFUL_SHUTDOWN) and each large community, comma-separated ("-" for
# none), the AS path's blanks as "_".
bgp_paths() {
	local vip args=()
	for vip in "$@"; do args+=(-c "show bgp ipv4 unicast $vip/32 json"); done
	vtysh "${args[@]}" | python3 -c '
import json, sys
text, i, dec = sys.stdin.read(), 0, json.JSONDecoder()
while True:
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        break
    r, i = dec.raw_decode(text, i)
    vip = r.get("prefix", "?").split("/")[0]
    for p in r.get("paths", []):
        peer = (p.get("peer") or {}).get("peerId") or p.get("peerId") or ((p.get("nexthops") or [{}])[0]).get("ip", "?")
        best = "best" if (p.get("bestpath") or {}).get("overall") else "-"
        marks = []
        com = (p.get("community") or {}).get("string", "").split()
        if "graceful-shutdown" in com or "65535:0" in com:
            marks.append("gshut")
        marks += (p.get("largeCommunity") or {}).get("string", "").split()
        path = (p.get("aspath") or {}).get("string", "") or "-"
        print(vip, peer, best, ",".join(marks) or "-", p.get("locPrf", "-"), path.replace(" ", "_"))
'
}

# stepdown ADC OTHER SECS: waits until FRR's best path of every VIP is
# OTHER's while it still holds ADC's, marked last resort (GRACEFUL_SHUTDOWN
# and the large community (ADC's AS, 1, 2)); fails at once when a VIP has
# no path from ADC (withdrawn without stepping down, or never announced).
stepdown() {
	local adc=$1 other=$2 secs=$3 deadline paths vip peer best marks pref path ok
	[[ ${LAB_ROLE[$adc]:-} == adc && ${LAB_ROLE[$other]:-} == adc ]] || lab_die "want two ADCs of $LAB_TOPOLOGY, got \"$adc\" and \"$other\""
	deadline=$((SECONDS + secs))
	echo "router: waiting up to ${secs}s for $adc's paths to be marked last resort, $other's best"
	while :; do
		paths=$(bgp_paths "${LAB_VIPS[@]}")
		ok=1
		for vip in "${LAB_VIPS[@]}"; do
			if ! awk -v v="$vip" -v a="${LAB_ADDR[$adc]}" '$1 == v && $2 == a { f = 1 } END { exit !f }' <<<"$paths"; then
				echo "router: $vip: no path from $adc" >&2
				printf '%s\n' "$paths" >&2
				return 1
			fi
			awk -v v="$vip" -v a="${LAB_ADDR[$adc]}" -v o="${LAB_ADDR[$other]}" -v c="${LAB_ASN[$adc]}:1:2" '
				$1 == v && $2 == a { m = index("," $4 ",", ",gshut,") && index("," $4 ",", "," c ",") }
				$1 == v && $2 == o && $3 == "best" { b = 1 }
				END { exit !(m && b) }' <<<"$paths" || ok=""
		done
		if [[ -n $ok ]]; then
			while read -r vip peer best marks pref path; do
				echo "router: $vip from $(owner "$peer"): ${best/-/not best}, $marks, local-pref $pref, as-path ${path//_/ }"
			done <<<"$paths"
			echo "router: every VIP best via $other, $adc's paths marked last resort"
			return 0
		fi
		if ((SECONDS >= deadline)); then
			echo "router: $adc's paths not marked last resort with $other's best after ${secs}s" >&2
			printf '%s\n' "$paths" >&2
			return 1
		fi
		sleep 0.1
	done
}

gone() {
	local adc=$1 secs=$2 left deadline
	[[ ${LAB_ROLE[$adc]:-} == adc ]] || lab_die "\"$adc\" is not an ADC in $LAB_TOPOLOGY"
	deadline=$((SECONDS + secs))
	echo "router: waiting up to ${secs}s for every path from $adc to go"
	while :; do
		left=$(bgp_paths "${LAB_VIPS[@]}" | awk -v a="${LAB_ADDR[$adc]}" '$2 == a { print $1 }' | paste -sd' ' -)
		if [[ -z $left ]]; then
			echo "router: no path from $adc"
			return 0
		fi
		if ((SECONDS >= deadline)); then
			echo "router: paths from $adc still there after ${secs}s: $left" >&2
			return 1
		fi
		sleep 0.1
	done
}

# probe RATE SECS STOPFILE: a steady stream of ICMP echo requests from the
# router to the VIPs in turn (whichever ADC holds a VIP answers for it),
# each counted as answered or lost; "lost-for" is the span from the first
# lost echo's sending to the last one's.
probe() {
	rm -f "$3"
	python3 - "$1" "$2" "$3" "${LAB_VIPS[@]}" <<'EOF'
import os, select, socket, struct, sys, time

rate, secs, stopfile, vips = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4:]
if rate * secs >= 65536:
    sys.exit("probe: rate x secs must stay below 65536 echoes (16-bit sequence numbers)")
ident = os.getpid() & 0xFFFF
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
s.setblocking(False)
# A raw ICMP socket gets every ICMP packet the router receives: a large
# buffer keeps answers while the prober is starved of CPU.
try:
    s.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE, as root
except OSError:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)


def echo(seq):
    h = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + b"rhi-lab-probe..."
    v = sum(struct.unpack("!%dH" % (len(h) // 2), h))
    v = (v >> 16) + (v & 0xFFFF)
    v = ~(v + (v >> 16)) & 0xFFFF
    return h[:2] + struct.pack("!H", v) + h[4:]


sent = {}
answered = set()


def receive(until):
    while True:
        left = until - time.monotonic()
        r, _, _ = select.select([s], [], [], max(left, 0))
        while r:
            try:
                b = s.recv(2048)
            except BlockingIOError:
                break
            ihl = (b[0] & 0x0F) * 4
            if len(b) >= ihl + 8:
                typ, _, _, i, seq = struct.unpack("!BBHHH", b[ihl:ihl + 8])
                if typ == 0 and i == ident:
                    answered.add(seq)
        if left <= 0 or not r:
            return


print("ready", flush=True)
start = time.monotonic()
n = 0
while time.monotonic() - start < secs and not os.path.exists(stopfile):
    receive(start + n / rate)
    if time.monotonic() - start > n / rate + 0.05:
        # Starved (CPU emulation): go on from now rather than send the
        # echoes missed in a burst.
        start = time.monotonic() - n / rate
    try:
        s.sendto(echo(n), (vips[n % len(vips)], 0))
    except OSError:
        pass  # no route, say: counted as lost
    sent[n] = time.monotonic()
    n += 1
receive(time.monotonic() + 1.0)  # answers still on their way
lost = sorted(q for q in sent if q not in answered)
span = sent[lost[-1]] - sent[lost[0]] if lost else 0.0
print("sent %d answered %d lost %d lost-for %.3f" % (n, len(answered & set(sent)), len(lost), span), flush=True)
EOF
}

case ${1:-} in
show) show ;;
stepdown) stepdown "${2:?usage: router.sh stepdown ADC OTHER SECONDS}" "${3:?usage: router.sh stepdown ADC OTHER SECONDS}" "${4:?usage: router.sh stepdown ADC OTHER SECONDS}" ;;
gone) gone "${2:?usage: router.sh gone ADC SECONDS}" "${3:?usage: router.sh gone ADC SECONDS}" ;;
probe) probe "${2:?usage: router.sh probe RATE SECONDS STOPFILE}" "${3:?usage: router.sh probe RATE SECONDS STOPFILE}" "${4:?usage: router.sh probe RATE SECONDS STOPFILE}" ;;
wait) wait_for "${2:?usage: router.sh wait ADC SECONDS}" "${3:?usage: router.sh wait ADC SECONDS}" ;;
hold) hold "${2:?usage: router.sh hold ADC SECONDS}" "${3:?usage: router.sh hold ADC SECONDS}" ;;
updates) updates "${2:?usage: router.sh updates ADC}" ;;
*)
	echo "usage: router.sh show | wait ADC SECONDS | hold ADC SECONDS | updates ADC | stepdown ADC OTHER SECONDS | gone ADC SECONDS | probe RATE SECONDS STOPFILE" >&2
	exit 2
	;;
esac
