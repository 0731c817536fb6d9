# shellcheck shell=bash
# suite.sh: sourced by box.sh, ../libvirt.sh and ../accel.sh. The Debian
# suite of the lab's box, RHI_LAB_SUITE: bookworm (Debian 12, BIRD 2, the
# default) or trixie (Debian 13, BIRD 3); and the box's name in Vagrant,
# RHI_LAB_BOX, rhi-lab/debian12 or rhi-lab/debian13 unless set. The
# Vagrantfile makes the same choice in Ruby.
LAB_SUITE=${RHI_LAB_SUITE:-bookworm}
case $LAB_SUITE in
bookworm) LAB_DEBIAN=debian12 ;;
trixie) LAB_DEBIAN=debian13 ;;
*)
	echo "RHI_LAB_SUITE: want bookworm or trixie, got \"$LAB_SUITE\"" >&2
	exit 1
	;;
esac
# shellcheck disable=SC2034 # read by the scripts that source this file
LAB_BOX=${RHI_LAB_BOX:-rhi-lab/$LAB_DEBIAN}
