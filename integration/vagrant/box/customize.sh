#!/usr/bin/env bash
# customize.sh ROOTFS: mmdebstrap's customize hook for the lab's box (box.sh).
# Makes the root file system a Vagrant base box: the vagrant user with
# Vagrant's insecure key (from Debian's vagrant package) and password-less
# sudo, /dev/vda as /, eth0 on DHCP, fresh machine-id and ssh host keys at
# first boot, nothing that reaches for the network on its own.
set -euo pipefail
root=${1:?usage: customize.sh ROOTFS}
key=${RHI_LAB_VAGRANT_KEY:-}
[[ -n $key && -f $key ]] || { echo "customize: no Vagrant public key (RHI_LAB_VAGRANT_KEY)" >&2; exit 1; }

chroot "$root" useradd -m -s /bin/bash -U vagrant
echo vagrant:vagrant | chroot "$root" chpasswd
install -d -m 0700 -o 1000 -g 1000 "$root/home/vagrant/.ssh"
install -m 0600 -o 1000 -g 1000 "$key" "$root/home/vagrant/.ssh/authorized_keys"
# The uid/gid above must be vagrant's.
[[ $(chroot "$root" id -u vagrant) == 1000 ]] || { echo "customize: vagrant is not uid 1000" >&2; exit 1; }
echo 'vagrant ALL=(ALL) NOPASSWD:ALL' >"$root/etc/sudoers.d/vagrant"
chmod 0440 "$root/etc/sudoers.d/vagrant"

echo '/dev/vda / ext4 defaults,errors=remount-ro 0 1' >"$root/etc/fstab"
echo debian >"$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tdebian\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
cat >"$root/etc/network/interfaces" <<'EOT'
# The box's management interface; Vagrant adds the lab's below.
source /etc/network/interfaces.d/*

auto lo
iface lo inet loopback

auto eth0
iface eth0 inet dhcp
EOT

# Each VM gets its own machine-id (systemd writes it at first boot) and its
# own ssh host keys (ssh-keygen -A before sshd starts).
: >"$root/etc/machine-id"
rm -f "$root/var/lib/dbus/machine-id"
rm -f "$root"/etc/ssh/ssh_host_*
install -d "$root/etc/systemd/system/ssh.service.d"
# Before the unit's own `sshd -t`, which fails without host keys.
printf '[Service]\nExecStartPre=\nExecStartPre=/usr/bin/ssh-keygen -A\nExecStartPre=/usr/sbin/sshd -t\n' >"$root/etc/systemd/system/ssh.service.d/rhi-lab-keygen.conf"
printf 'UseDNS no\n' >"$root/etc/ssh/sshd_config.d/rhi-lab.conf"
# No resolver: the VMs have no route out and look nothing up.
rm -f "$root/etc/resolv.conf"
: >"$root/etc/resolv.conf"

# Nothing starts by itself that the lab did not ask for: BIRD runs on the
# ADCs only, FRR on the router only (provisioning enables each), and apt's
# timers would only fail without a route to the mirror.
chroot "$root" systemctl disable bird.service frr.service apt-daily.timer apt-daily-upgrade.timer 2>/dev/null || true
chroot "$root" apt-get clean
rm -f "$root"/var/log/*.log
