#!/usr/bin/env bash
# accel.sh: prints the accelerator the lab's libvirt VMs should use, "kvm" or
# "qemu" (TCG, CPU emulation), and caches it in .vagrant/rhi-lab-accel. Read
# by the Vagrantfile when RHI_LAB_ACCEL is "auto" (its default).
#
# /dev/kvm existing is not enough: on some hosts (a paravirtual nested KVM
# module) guests hang or qemu aborts ("failed to set MSR 0x10a"). So the box's
# own kernel is booted under KVM with no root file system: a usable KVM
# reaches "Kernel panic" (and qemu exits) in a few seconds; anything else
# within RHI_LAB_ACCEL_PROBE_TIMEOUT (30 s) means TCG.
set -euo pipefail

cd "$(dirname "$0")/../.."
cache=${VAGRANT_DOTFILE_PATH:-.vagrant}/rhi-lab-accel
if [[ -s $cache && -z ${RHI_LAB_ACCEL_REPROBE:-} ]]; then
	cat "$cache"
	exit 0
fi
# shellcheck source=box/suite.sh
source integration/vagrant/box/suite.sh
name=$LAB_BOX
timeout=${RHI_LAB_ACCEL_PROBE_TIMEOUT:-30}
why=""
accel=qemu
# Only an answer from /dev/kvm itself or from a probe is cached.
keep=1
kernels=("${VAGRANT_HOME:-$HOME/.vagrant.d}/boxes/${name//\//-VAGRANTSLASH-}"/*/libvirt/vmlinuz)
if [[ ! -r /dev/kvm || ! -w /dev/kvm ]]; then
	why="no usable /dev/kvm"
elif ! command -v qemu-system-x86_64 >/dev/null; then
	why="no qemu-system-x86_64 to probe with"
	keep=""
elif [[ ! -f ${kernels[-1]} ]]; then
	why="no kernel to probe with (make vagrant-box)"
	keep=""
else
	out=$(timeout --kill-after=5 "$timeout" nice -n 10 qemu-system-x86_64 -accel kvm -cpu host -m 256 \
		-nodefaults -display none -serial stdio -no-reboot \
		-kernel "${kernels[-1]}" -append "console=ttyS0 panic=-1 root=/dev/rhi-lab-probe" 2>&1) || true
	if grep -q 'Kernel panic' <<<"$out"; then
		accel=kvm
		why="a kernel booted under KVM"
	else
		why="the kernel did not boot under KVM within ${timeout}s: $(grep -m1 -iE 'error|fail' <<<"$out" || echo hung)"
	fi
fi
if [[ -n $keep ]]; then
	mkdir -p "${cache%/*}"
	echo "$accel" >"$cache"
	why+="; cached in $cache"
fi
echo "accel: $accel ($why)" >&2
echo "$accel"
