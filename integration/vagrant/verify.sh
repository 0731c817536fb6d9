#!/usr/bin/env bash
# verify.sh (make vagrant-verify): `rhi verify` on every ADC of the Vagrant
# lab. Exits with the worst exit code of them: 0 all consistent, 1 a mismatch
# or a session not Established, 2 could not check (rhi verify's own codes).
#
# Runs on the host (plain bash 3.2 is enough); reaches the VMs over ssh with
# `vagrant ssh-config`'s configuration (host.sh).
set -euo pipefail

cd "$(dirname "$0")/../.."
# shellcheck source=host.sh
source integration/vagrant/host.sh
trap lab_ssh_close EXIT
rc=0
for h in $adcs; do
	echo "== $h: rhi verify"
	r=0
	on "$h" sudo rhi verify --config /etc/rhi/rhi.yaml || r=$?
	echo "== $h: exit $r"
	if ((r > rc)); then rc=$r; fi
done
exit "$rc"
