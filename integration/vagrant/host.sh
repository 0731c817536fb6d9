# shellcheck shell=bash
# The variables are for the scripts that source this file.
# shellcheck disable=SC2034
# host.sh: what the host-side scripts (failover.sh, verify.sh, test.sh) share.
# Plain bash 3.2 (macOS) is enough. Sourced from the repository root.
#
# Commands reach the VMs over ssh with the configuration `vagrant ssh-config`
# prints, through one multiplexed connection per VM: a command then costs a
# few milliseconds rather than `vagrant ssh`'s seconds, which is what lets
# failover.sh time a failover from the host with one clock.

vagrant=${VAGRANT:-vagrant}
topology=integration/vagrant/topology
router=$(awk '$1 !~ /^#/ && $2 == "router" { print $1 }' "$topology")
adcs=$(awk '$1 !~ /^#/ && $2 == "adc" { print $1 }' "$topology")
dc1=$(printf '%s\n' "$adcs" | sed -n 1p)
dc2=$(printf '%s\n' "$adcs" | sed -n 2p)

# lab_ssh_init: writes the ssh configuration of every VM (once per run).
lab_ssh_init() {
	lab_ssh_dir=$(mktemp -d "${TMPDIR:-/tmp}/rhi-lab-ssh.XXXXXX")
	# shellcheck disable=SC2086 # one word per host
	"$vagrant" ssh-config $router $adcs >"$lab_ssh_dir/config" </dev/null
	cat >>"$lab_ssh_dir/config" <<EOT
Host *
  ControlMaster auto
  ControlPath $lab_ssh_dir/%h.sock
  ControlPersist 10m
  ConnectTimeout 30
  ServerAliveInterval 10
  ServerAliveCountMax 6
  LogLevel ERROR
EOT
}

# lab_ssh_close: ends the multiplexed connections and removes the config.
lab_ssh_close() {
	local h
	[[ -n ${lab_ssh_dir:-} && -d $lab_ssh_dir ]] || return 0
	for h in $router $adcs; do
		ssh -F "$lab_ssh_dir/config" -O exit "$h" >/dev/null 2>&1 || true
	done
	rm -rf "$lab_ssh_dir"
}

# on HOST COMMAND…: runs COMMAND in HOST (as vagrant; prefix sudo for root),
# for at most RHI_LAB_SSH_TIMEOUT seconds (300).
on() {
	local h=$1
	shift
	[[ -n ${lab_ssh_dir:-} ]] || lab_ssh_init
	timeout "${RHI_LAB_SSH_TIMEOUT:-300}" ssh -F "$lab_ssh_dir/config" "$h" "$*" </dev/null
}

router_sh() { on "$router" sudo bash /vagrant/integration/vagrant/router.sh "$@"; }

# now: the host's clock, epoch seconds with milliseconds.
now() { date +%s.%3N; }
# secs A B: B - A, three decimals.
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
# median_worst N…: "median M s, worst W s" of the numbers.
median_worst() {
	printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "median %.2f s, worst %.2f s", m, v[NR] }'
}
