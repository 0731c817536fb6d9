#!/usr/bin/env bash
# verify.sh (make vagrant-verify): `rhi verify` on every ADC of the Vagrant
# lab. Exits with the worst exit code of them: 0 all consistent, 1 a mismatch
# or a session not Established, 2 could not check (rhi verify's own codes).
#
# Runs on the host (plain bash 3.2 is enough). VAGRANT names the vagrant command.
set -euo pipefail

cd "$(dirname "$0")/../.."
vagrant=${VAGRANT:-vagrant}
rc=0
while read -r h; do
	echo "== $h: rhi verify"
	r=0
	# stdin stays with the loop, not with ssh.
	"$vagrant" ssh "$h" -c "sudo rhi verify --config /etc/rhi/rhi.yaml" -- -q </dev/null || r=$?
	echo "== $h: exit $r"
	if ((r > rc)); then rc=$r; fi
done < <(awk '$1 !~ /^#/ && $2 == "adc" { print $1 }' integration/vagrant/topology)
exit "$rc"
