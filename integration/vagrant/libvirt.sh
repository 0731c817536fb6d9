#!/usr/bin/env bash
# libvirt.sh up | clean | down | check: the libvirt side of the Vagrant lab, for the
# libvirt provider (make vagrant-up / vagrant-down / vagrant-test).
#
#   up     starts libvirtd and virtlogd if they are not running (under
#          `nice -n 10`; without systemd as PID 1 they run as plain daemons),
#          then defines and starts what the lab uses, all isolated:
#            rhi-lab-mgmt  Vagrant's management network: DHCP for eth0, no
#                          forwarding, no NAT, no DNS (dnsmasq serves DHCP only)
#            rhi-lab       the lab's /24 (topology): no DHCP, no DNS, no forwarding
#            rhi-lab       a storage pool in /var/lib/libvirt/rhi-lab, with the
#                          box's kernel and initrd where libvirt's qemu user can
#                          read them (VAGRANT_HOME under /root is not)
#   clean  starts libvirtd if needed and runs down: what an interrupted run
#          left (domains, networks, pool) is removed before a new one
#   down   removes all of that, and any rhi-lab_ domain vagrant did not
#          destroy: networks, pool and its volumes, libvirt's
#          firewall chains (once no libvirt network is left), and stops the
#          daemons if `up` started them.
#   check  fails if anything of the lab is left, a libvirt network forwards,
#          or IPv4 forwarding is on.
#
# Vagrant's own defaults would create a NAT network (ip_forward on,
# MASQUERADE) and undefine networks on destroy; the Vagrantfile points it at
# these instead (management_network_keep, libvirt__always_destroy: false).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lab.sh
source "$here/lab.sh"
# shellcheck source=box/suite.sh
source "$here/box/suite.sh"
name=$LAB_BOX
pool_dir=${RHI_LAB_POOL_DIR:-/var/lib/libvirt/rhi-lab}
mgmt_net=rhi-lab-mgmt
mgmt_prefix=${RHI_LAB_MGMT_PREFIX:-192.168.125}
lab_net=rhi-lab
run_dir=/run/rhi-lab-libvirt
virsh=(virsh -q -c qemu:///system)
log() { echo "libvirt: $*"; }
die() {
	echo "libvirt: $*" >&2
	exit 1
}

# lab_prefix: the first three octets of the lab's /24 (from topology).
lab_prefix() {
	local a=${LAB_ADDR[$LAB_ROUTER]}
	echo "${a%.*}"
}

# kvm_access: /dev/kvm as Debian's udev rule leaves it (root:kvm 0660, and
# libvirt-qemu is in group kvm). In a container without udev it is often
# root-only: qemu probed as root finds KVM, the qemu user cannot open it, and
# libvirt then finds its capability cache stale at every call and probes qemu
# again (two qemu runs, seconds each), which slows every step of `vagrant
# up` by minutes. The lab's VMs still use whichever accelerator accel.sh chose.
kvm_access() {
	[[ -c /dev/kvm ]] || return 0
	getent group kvm >/dev/null || return 0
	if [[ $(stat -c '%G %a' /dev/kvm) != "kvm 660" ]]; then
		log "/dev/kvm: root:kvm 0660, as udev would leave it (was $(stat -c '%U:%G %a' /dev/kvm))"
		chgrp kvm /dev/kvm
		chmod 0660 /dev/kvm
	fi
}

daemon_up() {
	kvm_access
	if "${virsh[@]}" version >/dev/null 2>&1; then
		return 0
	fi
	if [[ $(ps -p 1 -o comm= 2>/dev/null) == systemd ]]; then
		log "starting libvirtd (systemd)"
		systemctl start virtlogd.socket libvirtd.service
	else
		# A NAT network marked autostart would come up with the daemon.
		for f in /etc/libvirt/qemu/networks/autostart/*.xml; do
			[[ -e $f ]] || continue
			grep -q '<forward' "$f" && die "$f: a forwarding libvirt network would start with libvirtd; the lab stays isolated (virsh net-autostart --disable ${f##*/})"
		done
		log "starting virtlogd and libvirtd (nice -n 10, no systemd)"
		mkdir -p "$run_dir"
		pgrep -x virtlogd >/dev/null || nice -n 10 /usr/sbin/virtlogd -d
		nice -n 10 /usr/sbin/libvirtd -d
		touch "$run_dir/started"
	fi
	for ((i = 0; i < 30; i++)); do
		"${virsh[@]}" version >/dev/null 2>&1 && return 0
		sleep 1
	done
	die "libvirtd did not answer in 30 s"
}

net_up() {
	local net=$1 xml=$2 tmp
	if ! "${virsh[@]}" net-info "$net" >/dev/null 2>&1; then
		tmp=$(mktemp)
		printf '%s\n' "$xml" >"$tmp"
		"${virsh[@]}" net-define "$tmp" >/dev/null
		rm -f "$tmp"
	fi
	# libvirtd may bring back a network it had running before it was
	# killed just after it answers: "already active" is then no failure.
	if ! "${virsh[@]}" net-info "$net" | grep -q '^Active: *yes' &&
		! "${virsh[@]}" net-start "$net" >/dev/null; then
		"${virsh[@]}" net-info "$net" | grep -q '^Active: *yes' || die "network $net: cannot start it"
	fi
	log "network $net: isolated, active"
}

up() {
	local box_dir p kernels
	daemon_up
	p=$(lab_prefix)
	# No <forward>: isolated. <dns enable='no'>: dnsmasq forwards no query.
	net_up "$mgmt_net" "<network ipv6='no'><name>$mgmt_net</name><bridge name='rhilabm0' stp='off'/>
  <dns enable='no'/><ip address='$mgmt_prefix.1' netmask='255.255.255.0'>
  <dhcp><range start='$mgmt_prefix.2' end='$mgmt_prefix.254'/></dhcp></ip></network>"
	net_up "$lab_net" "<network ipv6='no'><name>$lab_net</name><bridge name='rhilab0' stp='off'/>
  <dns enable='no'/><ip address='$p.1' netmask='255.255.255.0'/></network>"
	if ! "${virsh[@]}" pool-info "$lab_net" >/dev/null 2>&1; then
		"${virsh[@]}" pool-define-as "$lab_net" dir --target "$pool_dir" >/dev/null
		"${virsh[@]}" pool-build "$lab_net" >/dev/null
	fi
	"${virsh[@]}" pool-info "$lab_net" | grep -q '^State: *running' || "${virsh[@]}" pool-start "$lab_net" >/dev/null
	kernels=("${VAGRANT_HOME:-$HOME/.vagrant.d}/boxes/${name//\//-VAGRANTSLASH-}"/*/libvirt/vmlinuz)
	box_dir=$(dirname "${kernels[-1]}")
	[[ -f $box_dir/vmlinuz && -f $box_dir/initrd.img ]] || die "no box $name with a kernel: run \`make vagrant-box\`"
	install -m 0644 "$box_dir/vmlinuz" "$pool_dir/rhi-lab-vmlinuz"
	install -m 0644 "$box_dir/initrd.img" "$pool_dir/rhi-lab-initrd.img"
	"${virsh[@]}" pool-refresh "$lab_net" >/dev/null
	log "pool $lab_net: $pool_dir (kernel and initrd of $name)"
	check_forwarding
}

# Remove libvirt's firewall chains once no libvirt network needs them
# (libvirt 9 creates them with the first network and never removes them).
chains_down() {
	local cmd table chain
	[[ -z $("${virsh[@]}" net-list --name 2>/dev/null | sed '/^$/d') ]] || {
		log "other libvirt networks are active: their firewall chains stay"
		return 0
	}
	for cmd in iptables ip6tables; do
		command -v "$cmd" >/dev/null || continue
		for table in filter nat mangle; do
			# grep finds nothing once the chains are gone: not a failure.
			"$cmd" -t "$table" -S 2>/dev/null | { grep -E '^-A [A-Z]+ .*-j LIBVIRT_' || true; } | while read -r _ rest; do
				# shellcheck disable=SC2086 # the rule's own words
				"$cmd" -t "$table" -D $rest
			done
			"$cmd" -t "$table" -S 2>/dev/null | sed -n 's/^-N \(LIBVIRT_[A-Z]*\)$/\1/p' | while read -r chain; do
				"$cmd" -t "$table" -F "$chain"
				"$cmd" -t "$table" -X "$chain"
			done
		done
	done
}

# lab_domains: the lab's libvirt domains (the Vagrantfile's default_prefix),
# including those of a run that was killed, whose checkout is gone.
lab_domains() {
	"${virsh[@]}" list --all --name 2>/dev/null | grep '^rhi-lab_' || true
}

down() {
	local net vol dom
	if ! "${virsh[@]}" version >/dev/null 2>&1; then
		log "libvirtd is not running"
	else
		# vagrant destroy removes the domains it knows; these are left by a
		# run that was killed (its .vagrant is gone, so vagrant cannot).
		for dom in $(lab_domains); do
			"${virsh[@]}" destroy "$dom" >/dev/null 2>&1 || true
			"${virsh[@]}" undefine "$dom" >/dev/null
			log "domain $dom removed (left by an earlier run)"
		done
		# rhi-lab-nat: real mode's, Vagrant's own; gone already unless a
		# destroy failed.
		for net in "$lab_net" "$mgmt_net" rhi-lab-nat; do
			"${virsh[@]}" net-info "$net" >/dev/null 2>&1 || continue
			"${virsh[@]}" net-destroy "$net" >/dev/null 2>&1 || true
			"${virsh[@]}" net-undefine "$net" >/dev/null
			log "network $net removed"
		done
		if "${virsh[@]}" pool-info "$lab_net" >/dev/null 2>&1; then
			"${virsh[@]}" pool-refresh "$lab_net" >/dev/null 2>&1 || true
			for vol in $("${virsh[@]}" vol-list "$lab_net" 2>/dev/null | awk '{ print $1 }'); do
				"${virsh[@]}" vol-delete --pool "$lab_net" "$vol" >/dev/null
			done
			"${virsh[@]}" pool-destroy "$lab_net" >/dev/null 2>&1 || true
			"${virsh[@]}" pool-delete "$lab_net" >/dev/null 2>&1 || true
			"${virsh[@]}" pool-undefine "$lab_net" >/dev/null
			log "pool $lab_net removed"
		fi
		chains_down
	fi
	rm -rf "$pool_dir"
	if [[ -f $run_dir/started ]]; then
		log "stopping the libvirtd and virtlogd it started"
		local f pid
		for f in /run/libvirtd.pid /run/virtlogd.pid; do
			pid=$(cat "$f" 2>/dev/null) || continue
			kill "$pid" 2>/dev/null || continue
			for ((i = 0; i < 20; i++)); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.5
			done
		done
		rm -rf "$run_dir"
	fi
}

check_forwarding() {
	[[ $(sysctl -n net.ipv4.ip_forward) == 0 ]] || die "net.ipv4.ip_forward is on"
}

# check: nothing of the lab is left; no libvirt network forwards.
check() {
	local left=() dom
	if "${virsh[@]}" version >/dev/null 2>&1; then
		for dom in $(lab_domains); do left+=("domain $dom"); done
		for net in $("${virsh[@]}" net-list --all --name); do
			if [[ $net == rhi-lab* ]]; then left+=("network $net"); fi
			if "${virsh[@]}" net-dumpxml "$net" | grep -q '<forward'; then
				if "${virsh[@]}" net-info "$net" | grep -q '^Active: *yes'; then left+=("forwarding network $net (active)"); fi
			fi
		done
		"${virsh[@]}" pool-info "$lab_net" >/dev/null 2>&1 && left+=("pool $lab_net")
	fi
	ip link show rhilab0 >/dev/null 2>&1 && left+=("bridge rhilab0")
	ip link show rhilabm0 >/dev/null 2>&1 && left+=("bridge rhilabm0")
	for cmd in iptables ip6tables; do
		command -v "$cmd" >/dev/null || continue
		for table in filter nat mangle; do
			"$cmd" -t "$table" -S 2>/dev/null | grep -q LIBVIRT_ && left+=("$cmd -t $table LIBVIRT_ chains")
		done
	done
	[[ $(sysctl -n net.ipv4.ip_forward) == 0 ]] || left+=("net.ipv4.ip_forward=1")
	if ((${#left[@]})); then
		die "left behind: ${left[*]}"
	fi
	log "nothing of the lab is left; no forwarding"
}

case ${1:-} in
up) up ;;
clean)
	daemon_up
	down
	;;
down) down ;;
check) check ;;
*)
	echo "usage: libvirt.sh up | clean | down | check" >&2
	exit 2
	;;
esac
