#!/usr/bin/env bash
# test.sh (make vagrant-test): the Vagrant lab end to end, on libvirt, and
# always torn down again, pass or fail:
#
#   box      make vagrant-box (a no-op when the box of this hash is added)
#   clean    what a killed run left in libvirt (libvirt.sh clean)
#   up       make deb; make vagrant-up with that package (router, dc1, dc2)
#   bird     each ADC runs the suite's BIRD (RHI_LAB_SUITE: bookworm BIRD 2,
#            trixie BIRD 3)
#   guard    each ADC's rhi_guard4 (tiers.conf) holds the other's VIPs
#   failover make vagrant-failover, RHI_LAB_FAILOVER_RUNS times (5)
#   verify   make vagrant-verify
#   graceful graceful.sh: systemctl stop rhi on dc1 with on_shutdown:
#            withdraw: its paths marked last resort at the router for the
#            grace, then withdrawn, no probe lost; rhi started again
#   dc1      systemctl reload rhi, then systemctl restart rhi: the router's
#            routes stay on dc1 and FRR receives no UPDATE from dc1 meanwhile;
#            rhi SIGSTOPped: systemd's watchdog kills it and it comes back;
#            systemd-analyze security rhi
#   down     make vagrant-down: VMs, networks, pool and firewall chains gone,
#            no forwarding (libvirt.sh check)
#
# Ends with one line, "vagrant-test: PASS …" or "vagrant-test: FAIL …", with
# the figures. Every wait is bounded. RHI_LAB_KEEP=1 leaves the VMs up on a
# failure, to look at them (then `make vagrant-down`).
set -euo pipefail

cd "$(dirname "$0")/../.."
export RHI_LAB_APISIX=${RHI_LAB_APISIX:-fake}
export RHI_LAB_SUITE=${RHI_LAB_SUITE:-bookworm}
export VAGRANT_CHECKPOINT_DISABLE=1
make=${MAKE:-make}
runs=${RHI_LAB_FAILOVER_RUNS:-5}
up_timeout=${RHI_LAB_UP_TIMEOUT:-2400}
# shellcheck source=host.sh
source integration/vagrant/host.sh
start=$(now)
step=setup
summary=()
tmp=$(mktemp -d)

log() { echo "vagrant-test: $*"; }
figure() {
	summary+=("$*")
	log "$*"
}

finish() {
	local rc=$? took
	lab_ssh_close
	if ((rc != 0)); then
		log "failed in step \"$step\"; the lab as it is:"
		timeout 60 "$vagrant" status 2>&1 | sed 's/^/  /' || true
		timeout 60 "$vagrant" ssh "$router" -c "sudo systemctl --failed --no-pager; sudo vtysh -c 'show bgp summary'; sudo journalctl -u frr -n 30 --no-pager" -- -q </dev/null 2>&1 | sed "s/^/  $router: /" || true
		for h in $adcs; do
			timeout 60 "$vagrant" ssh "$h" -c 'sudo systemctl --failed --no-pager; sudo birdc show protocols; sudo journalctl -u rhi -n 30 --no-pager' -- -q </dev/null 2>&1 | sed "s/^/  $h: /" || true
		done
	fi
	if ((rc != 0)) && [[ -n ${RHI_LAB_KEEP:-} ]]; then
		log "RHI_LAB_KEEP is set: leaving the lab up (make vagrant-down)"
	else
		log "tearing down"
		if ! timeout 600 "$make" --no-print-directory vagrant-down; then
			log "teardown failed"
			if ((rc == 0)); then
				rc=1
				step=down
			fi
		fi
	fi
	rm -rf "$tmp"
	took=$(secs "$start" "$(now)")
	local all
	all=$(printf '%s; ' "${summary[@]}")
	if ((rc == 0)); then
		echo "vagrant-test: PASS in ${took%.*} s: ${all%; }"
	else
		echo "vagrant-test: FAIL (step $step, exit $rc) after ${took%.*} s: ${all%; }"
	fi
	exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

step=box
timeout 1800 "$make" --no-print-directory vagrant-box

# A run that was killed (CI stopped, the machine restarted) leaves domains
# whose .vagrant is gone and networks libvirtd brings back: clear them.
step=clean
if [[ ${VAGRANT_PROVIDER:-libvirt} == libvirt ]]; then
	integration/vagrant/libvirt.sh clean
fi

step=up
log "building the package"
deb=$("$make" --no-print-directory -s deb | tail -n 1)
[[ -f $deb ]] || {
	log "make deb printed no package: $deb"
	exit 1
}
export RHI_LAB_RHI=${deb#"$PWD"/}
t=$(now)
# Vagrant's upload progress is one endless line in a log.
timeout "$up_timeout" "$make" --no-print-directory vagrant-up 2>&1 | stdbuf -oL tr '\r' '\n' | sed -u '/KProgress:/d'
took=$(secs "$t" "$(now)")
figure "accel $(cat .vagrant/rhi-lab-accel 2>/dev/null || echo "${RHI_LAB_ACCEL:-?}"), APISIX $RHI_LAB_APISIX, up in ${took%.*} s"

# The BIRD of the suite, on every ADC.
step=bird
case $RHI_LAB_SUITE in
trixie) want=3 ;;
*) want=2 ;;
esac
for h in $adcs; do
	v=$(on "$h" 'sudo bird --version 2>&1' | sed -n 's/^BIRD version \([0-9][0-9.]*\).*/\1/p')
	if [[ $v != "$want".* ]]; then
		log "$h runs BIRD ${v:-(no version)}, want $want.x on $RHI_LAB_SUITE"
		exit 1
	fi
done
figure "$RHI_LAB_SUITE, BIRD $v on the ADCs"

# The sessions come up after provisioning; on a slow host that takes a while.
step=converge
t=$(now)
router_sh wait "$dc1" "${RHI_LAB_CONVERGE_TIMEOUT:-300}"
took=$(secs "$t" "$(now)")
figure "every VIP via $dc1 ${took%.*} s after up"

# The fail-open guard's tables (deploy/bird/tiers.conf): each ADC hears every
# VIP from the other over the router's ADD-PATH session, in rhi_guard4 only;
# none of it reaches the ADC's kernel.
step=guard
nvips=$(awk '/^  - address:/ { n++ } END { print n + 0 }' deploy/rhi.yaml)
# guard_heard HOST ASN: the paths from ASN in HOST's rhi_guard4.
guard_heard() {
	on "$1" "sudo birdc -r show route table rhi_guard4 where bgp_path.last = $2 count" | sed -n 's/^\([0-9]*\) of .*/\1/p'
}
# guard_wait HOST OTHER: until HOST's guard table holds every VIP from OTHER.
guard_wait() {
	local asn deadline=$((SECONDS + 60))
	asn=$(awk -v h="$2" '$1 == h { print $4 }' "$topology")
	until [[ $(guard_heard "$1" "$asn") == "$nvips" ]]; do
		if ((SECONDS >= deadline)); then
			log "$1: rhi_guard4 holds $(guard_heard "$1" "$asn") of $nvips VIPs from $2 (AS $asn) after 60 s"
			return 1
		fi
		sleep 1
	done
}
guard_wait "$dc1" "$dc2"
guard_wait "$dc2" "$dc1"
if [[ -n $(on "$dc1" ip -4 route show proto bird) ]]; then
	log "$dc1: BIRD put routes in the kernel: $(on "$dc1" ip -4 route show proto bird)"
	exit 1
fi
figure "guard tables: each ADC hears the other's $nvips VIPs, none in its kernel"

step=failover
RHI_LAB_FAILOVER_RUNS=$runs RHI_LAB_FIGURES=$tmp/figures timeout 900 integration/vagrant/failover.sh
for name in "$dc1-$dc2" "$dc2-$dc1"; do
	# shellcheck disable=SC2046 # one word per figure
	figure "failover $name at the router: $(median_worst $(awk -v n="$name" '$1 == n { print $2 }' "$tmp/figures")) ($runs runs)"
done

step=verify
timeout 300 integration/vagrant/verify.sh

step=graceful
RHI_LAB_FIGURES=$tmp/figures timeout 600 integration/vagrant/graceful.sh
read -r _ lost moved withdrawn stopped < <(grep '^graceful ' "$tmp/figures")
figure "stop (on_shutdown: withdraw): $lost probes lost, router moved after $moved s, withdrawn after $withdrawn s, stop took $stopped s"

# hold_during SECS COMMAND…: runs COMMAND on dc1 while the router checks for
# SECS seconds that every VIP stays on dc1; then FRR must have received no
# UPDATE from dc1 (no withdrawal, no new announcement).
hold_during() {
	local secs=$1 before after pid
	shift
	before=$(router_sh updates "$dc1")
	router_sh hold "$dc1" "$secs" >"$tmp/hold.out" 2>&1 &
	pid=$!
	sleep 1
	on "$dc1" "$@"
	if ! wait "$pid"; then
		cat "$tmp/hold.out" >&2
		return 1
	fi
	after=$(router_sh updates "$dc1")
	if [[ $before != "$after" ]]; then
		log "FRR received $((after - before)) UPDATE(s) from $dc1 during: $*"
		return 1
	fi
}

# rhi_pid: rhi's main PID on dc1, after checking it is active.
rhi_pid() {
	on "$dc1" 'systemctl is-active --quiet rhi && systemctl show -p MainPID --value rhi'
}

step=reload
pid=$(rhi_pid)
hold_during 10 sudo systemctl reload rhi
[[ $(rhi_pid) == "$pid" ]] || {
	log "rhi's PID changed on reload"
	exit 1
}
figure "reload: no flap, same process"

step=restart
hold_during 20 sudo systemctl restart rhi
new=$(rhi_pid)
[[ -n $new && $new != "$pid" && $new != 0 ]] || {
	log "rhi did not restart (PID $pid, now ${new:-none})"
	exit 1
}
figure "restart: no flap"

step=watchdog
pid=$new
before=$(router_sh updates "$dc1")
restarts=$(on "$dc1" systemctl show -p NRestarts --value rhi)
on "$dc1" sudo kill -STOP "$pid"
t=$(now)
deadline=$((SECONDS + ${RHI_LAB_WATCHDOG_TIMEOUT:-180}))
while :; do
	new=$(on "$dc1" 'systemctl is-active --quiet rhi && systemctl show -p MainPID --value rhi' || true)
	if [[ -n $new && $new != 0 && $new != "$pid" ]]; then break; fi
	if ((SECONDS >= deadline)); then
		log "rhi (PID $pid, stopped) was not restarted by the watchdog"
		exit 1
	fi
	sleep 1
done
took=$(secs "$t" "$(now)")
[[ $(on "$dc1" systemctl show -p NRestarts --value rhi) -gt $restarts ]] || {
	log "rhi has a new PID but systemd counted no restart"
	exit 1
}
on "$dc1" "sudo journalctl -u rhi --since=-5min --no-pager | grep -m1 -i watchdog" || {
	log "the journal does not say the watchdog fired"
	exit 1
}
router_sh wait "$dc1" 60 >/dev/null
after=$(router_sh updates "$dc1")
if [[ $before == "$after" ]]; then flap="no UPDATE at the router"; else flap="$((after - before)) UPDATE(s) at the router"; fi
figure "watchdog: SIGSTOPped rhi running again after $took s ($flap)"

step=security
sec=$(on "$dc1" sudo systemd-analyze security --no-pager rhi.service | tail -n 1)
# "→ Overall exposure level for rhi.service: 1.5 OK 🙂"
level=$(sed -n 's/.*Overall exposure level for rhi\.service: \([0-9.]* [A-Z]*\).*/\1/p' <<<"$sec")
[[ -n $level ]] || {
	log "systemd-analyze security gave no overall level: $sec"
	exit 1
}
figure "systemd-analyze security rhi: $level"
step=end
