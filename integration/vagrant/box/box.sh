#!/usr/bin/env bash
# box.sh (make vagrant-box): builds the lab's Debian box for vagrant-libvirt
# from Debian packages alone, and adds it to Vagrant as RHI_LAB_BOX. The suite
# is RHI_LAB_SUITE (suite.sh): bookworm, Debian 12 with BIRD 2, the default,
# boxed as rhi-lab/debian12; or trixie, Debian 13 with BIRD 3, boxed as
# rhi-lab/debian13. No Vagrant Cloud, no APISIX repository: the only host
# contacted is the Debian mirror, once per package list.
#
#   mmdebstrap --variant=minbase + packages, packages.SUITE
#                                             the root file system (root)
#   customize.sh                              vagrant user, key, sudo, fstab, eth0
#   mke2fs -t ext4 -d ROOTFS disk.raw 4G      the disk, no loop device
#   qemu-img convert -c -O qcow2              box.img
#   metadata.json, Vagrantfile, vmlinuz, initrd.img (direct kernel boot)
#
# Idempotent and cached: the box's hash covers the suite, the package lists,
# the customize hook, the box Vagrantfile and these scripts. A box of that hash in
# RHI_LAB_CACHE (~/.cache/rhi-lab) is reused; one already added to Vagrant
# under that hash makes this a no-op. Needs root, mmdebstrap, e2fsprogs
# (1.43+), qemu-utils and Debian's vagrant package (its insecure key).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
vagrant=${VAGRANT:-vagrant}
# shellcheck source=suite.sh
source "$here/suite.sh"
name=$LAB_BOX
cache=${RHI_LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rhi-lab}
mirror=${RHI_LAB_MIRROR:-http://deb.debian.org/debian}
security=${RHI_LAB_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
size=${RHI_LAB_DISK_SIZE:-4G}
log() { echo "vagrant-box: $*"; }
die() {
	echo "vagrant-box: $*" >&2
	exit 1
}

hash=$( (
	echo "$LAB_SUITE"
	cat "$here/packages" "$here/packages.$LAB_SUITE" "$here/customize.sh" "$here/Vagrantfile" "$here/suite.sh" "$0"
) | sha256sum | cut -c1-16)
box=$cache/rhi-lab-$LAB_DEBIAN-$hash.box

# added: the hash of the box Vagrant has under $name, empty if none.
added() {
	local dir=${VAGRANT_HOME:-$HOME/.vagrant.d}/boxes/${name//\//-VAGRANTSLASH-}
	cat "$dir"/*/libvirt/rhi-lab-box-hash 2>/dev/null | head -n 1
}
if [[ $(added) == "$hash" ]]; then
	log "$name ($hash) is already added"
	exit 0
fi

if [[ ! -f $box ]]; then
	((EUID == 0)) || die "building the box needs root (mmdebstrap, file ownership)"
	for t in mmdebstrap mke2fs qemu-img; do
		command -v "$t" >/dev/null || die "missing $t: apt-get install mmdebstrap e2fsprogs qemu-utils"
	done
	key=${RHI_LAB_VAGRANT_KEY:-}
	if [[ -z $key ]]; then
		key=$(find /usr/share/rubygems-integration/all/gems/vagrant-*/keys /opt/vagrant/embedded/gems/gems/vagrant-*/keys \
			-name vagrant.pub 2>/dev/null | head -n 1 || true)
	fi
	[[ -n $key && -f $key ]] || die "no vagrant.pub found (Debian's vagrant package ships it); set RHI_LAB_VAGRANT_KEY"
	mkdir -p "$cache"
	work=$(mktemp -d "$cache/build.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	mapfile -t pkgs < <(sed 's/#.*//' "$here/packages" "$here/packages.$LAB_SUITE" | tr -s ' \t' '\n' | sed '/^$/d')
	log "mmdebstrap $LAB_SUITE (${#pkgs[@]} packages) from $mirror"
	RHI_LAB_VAGRANT_KEY=$key mmdebstrap --quiet --mode=root --variant=minbase --arch=amd64 \
		--aptopt='Apt::Install-Recommends "false"' \
		--include="$(
			IFS=,
			echo "${pkgs[*]}"
		)" \
		--customize-hook="$here/customize.sh \"\$1\"" \
		"$LAB_SUITE" "$work/rootfs" \
		"deb $mirror $LAB_SUITE main" "deb $mirror $LAB_SUITE-updates main" "deb $security $LAB_SUITE-security main"
	install -d "$work/box"
	# The kernel's symbolic links, in / (bookworm) or /boot; else the one
	# kernel the root has.
	for f in vmlinuz initrd.img; do
		src=""
		for c in "$work/rootfs/$f" "$work/rootfs/boot/$f" "$work/rootfs/boot/$f"-*; do
			if [[ -e $c ]]; then
				src=$c
				break
			fi
		done
		[[ -n $src ]] || die "no $f in the root file system (/$f, /boot/$f or /boot/$f-*)"
		cp -L "$src" "$work/box/$f"
	done
	log "mke2fs -t ext4 -d rootfs ($size), qemu-img convert -c"
	mke2fs -q -t ext4 -L rhi-lab -d "$work/rootfs" "$work/disk.raw" "$size"
	qemu-img convert -c -O qcow2 "$work/disk.raw" "$work/box/box.img"
	rm -rf "$work/rootfs" "$work/disk.raw"
	printf '{"provider":"libvirt","format":"qcow2","virtual_size":%d}\n' "${size%G}" >"$work/box/metadata.json"
	cp "$here/Vagrantfile" "$work/box/Vagrantfile"
	echo "$hash" >"$work/box/rhi-lab-box-hash"
	tar -C "$work/box" -cf "$work/box.tar" .
	mv "$work/box.tar" "$box"
	# Older boxes of other hashes are of no further use.
	find "$cache" -maxdepth 1 -name "rhi-lab-$LAB_DEBIAN-*.box" ! -name "${box##*/}" -delete
	log "built $box ($(du -h "$box" | cut -f1))"
fi

log "adding $box as $name"
VAGRANT_CHECKPOINT_DISABLE=1 "$vagrant" box add --force --name "$name" "$box"
[[ $(added) == "$hash" ]] || die "vagrant box add did not leave $name with hash $hash"
log "$name ($hash) added"
