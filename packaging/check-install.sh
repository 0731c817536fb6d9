#!/bin/sh
# check-install.sh DEB: installs, triggers, reinstalls, removes and purges the rhi
# package, checking what each step leaves. check-deb.sh runs it as root
# inside a throwaway root (overlay over /, private mount namespace); never
# run it on a host you care about.
set -eu

deb=$1
fails=0
fail() {
	echo "check-install: FAIL: $*" >&2
	fails=$((fails + 1))
}
wants=/etc/systemd/system/multi-user.target.wants/rhi.service
dpkg_quiet() { dpkg "$@" >/tmp/rhi-check/dpkg.log 2>&1 || { cat /tmp/rhi-check/dpkg.log >&2; return 1; }; }
state() { dpkg-query -W -f '${db:Status-Abbrev}' rhi 2>/dev/null || true; }

if [ -d /run/systemd/system ]; then
	echo "check-install: /run/systemd/system exists; not a throwaway root?" >&2
	exit 1
fi
# The host may have rhi installed; this root is a copy, so start clean.
if dpkg-query -W rhi >/dev/null 2>&1; then
	dpkg_quiet --purge rhi
fi
rm -f "$wants"

# First install: user, group membership, enabled, not started (no systemd
# here, and postinst does not start it anyway).
dpkg_quiet --install "$deb"
[ "$(state)" = "ii " ] || fail "after install: dpkg state \"$(state)\""
ent=$(getent passwd rhi) || fail "after install: no user rhi"
case "$ent" in
*:/var/lib/rhi:/usr/sbin/nologin) ;;
*) fail "user rhi: \"$ent\", want home /var/lib/rhi and shell /usr/sbin/nologin" ;;
esac
getent group rhi >/dev/null || fail "after install: no group rhi"
if getent group bird >/dev/null; then
	case " $(id -nG rhi) " in
	*" bird "*) ;;
	*) fail "rhi is not in group bird: $(id -nG rhi)" ;;
	esac
fi
[ -L "$wants" ] || fail "after install: rhi.service not enabled ($wants missing)"

# bird2 or bird3 installed after rhi: unpacking /usr/sbin/bird fires rhi's
# trigger, and postinst triggered adds rhi to the group BIRD's postinst
# created. This root has BIRD (the host's) or not: take rhi out of the group,
# or make the group as BIRD's package would, then fire the trigger as dpkg would.
if getent group bird >/dev/null; then
	gpasswd -d rhi bird >/dev/null
else
	groupadd --system bird
fi
dpkg-trigger --no-await /usr/sbin/bird
dpkg --triggers-only rhi >/tmp/rhi-check/trigger.log 2>&1 || { cat /tmp/rhi-check/trigger.log >&2; fail "dpkg --triggers-only rhi"; }
case " $(id -nG rhi) " in
*" bird "*) ;;
*) fail "after the trigger on /usr/sbin/bird: rhi is not in group bird: $(id -nG rhi)" ;;
esac
grep -q 'added user rhi to group bird' /tmp/rhi-check/trigger.log || fail "postinst triggered did not say it added rhi to group bird: $(cat /tmp/rhi-check/trigger.log)"
[ "$(state)" = "ii " ] || fail "after the trigger: dpkg state \"$(state)\""
# The daemon's user can read its config and the binary accepts it.
chroot --userspec=rhi:rhi / rhi check-config --config /etc/rhi/rhi.yaml >/dev/null ||
	fail "rhi check-config as user rhi fails"

# postinst again, as dpkg would after a failed run: nothing breaks.
# (deb-systemd-helper insists on being called from dpkg: say we are.)
DPKG_MAINTSCRIPT_PACKAGE=rhi DPKG_MAINTSCRIPT_NAME=postinst \
	/var/lib/dpkg/info/rhi.postinst configure "" || fail "postinst configure, run twice, fails"

# The state directory is the rhi user's (systemd's StateDirectory), so that
# user can put a symbolic link to any root file in place of the drain file
# or of the drains prerm keeps aside: postinst must not chown, chmod, copy
# or write through it (issue 11, row 2).
postinst() {
	DPKG_MAINTSCRIPT_PACKAGE=rhi DPKG_MAINTSCRIPT_NAME=postinst \
		/var/lib/dpkg/info/rhi.postinst configure "" >/tmp/rhi-check/postinst.log 2>&1
}
mkdir -p /var/lib/rhi
chown rhi:rhi /var/lib/rhi
chmod 0750 /var/lib/rhi
canary=/tmp/rhi-check/canary
printf 'secret\n' >"$canary"
chmod 0600 "$canary"
canary_is() { stat -c '%U:%G %a' "$canary"; }
canary_ok() { [ "$(canary_is)" = "root:root 600" ] && [ "$(cat "$canary")" = secret ]; }
for planted in drain drain.before-remove; do
	ln -s "$canary" "/var/lib/rhi/$planted"
	postinst || fail "postinst with /var/lib/rhi/$planted a link fails: $(cat /tmp/rhi-check/postinst.log)"
	canary_ok || fail "postinst followed the link /var/lib/rhi/$planted: its target is now $(canary_is), \"$(cat "$canary")\""
	[ -L /var/lib/rhi/drain ] || fail "postinst replaced the link /var/lib/rhi/drain (planted as $planted)"
	grep -q "/var/lib/rhi/drain is not a regular file: left alone" /tmp/rhi-check/postinst.log ||
		fail "postinst did not report the link at /var/lib/rhi/drain: $(cat /tmp/rhi-check/postinst.log)"
	rm -f /var/lib/rhi/drain /var/lib/rhi/drain.before-remove
done
# A FIFO there is left alone too, and does not hold postinst up.
mkfifo /var/lib/rhi/drain
timeout 60 sh -c 'DPKG_MAINTSCRIPT_PACKAGE=rhi DPKG_MAINTSCRIPT_NAME=postinst /var/lib/dpkg/info/rhi.postinst configure ""' >/tmp/rhi-check/postinst.log 2>&1 ||
	fail "postinst with a FIFO at /var/lib/rhi/drain: $(cat /tmp/rhi-check/postinst.log)"
[ -p /var/lib/rhi/drain ] || fail "postinst replaced the FIFO at /var/lib/rhi/drain"
rm -f /var/lib/rhi/drain
# What postinst is there for: an older rhi drain, run as root, left the
# file root:root 0640, which the daemon cannot read. It becomes the
# directory owner's, 0644, with the same drains.
printf '192.0.2.101\n' >/var/lib/rhi/drain
chmod 0640 /var/lib/rhi/drain
postinst || fail "postinst with a root-owned drain file: $(cat /tmp/rhi-check/postinst.log)"
[ "$(stat -c '%U:%G %a' /var/lib/rhi/drain)" = "rhi:rhi 644" ] ||
	fail "drain file after postinst: $(stat -c '%U:%G %a' /var/lib/rhi/drain), want rhi:rhi 644"
[ "$(cat /var/lib/rhi/drain)" = 192.0.2.101 ] || fail "drain file after postinst holds \"$(cat /var/lib/rhi/drain)\""
[ "$(find /var/lib/rhi -name '.drain-*')" = "" ] || fail "postinst left temporary files: $(ls -a /var/lib/rhi)"
rm -rf /var/lib/rhi

# Reinstall (the upgrade path) keeps an operator's choices: the unit stays
# disabled, the edited config stays.
rm -f "$wants"
echo "# edited by the operator" >>/etc/rhi/rhi.yaml
dpkg_quiet --install "$deb"
[ -e "$wants" ] && fail "reinstall re-enabled rhi.service the operator had disabled"
grep -q '^# edited by the operator$' /etc/rhi/rhi.yaml || fail "reinstall replaced the edited /etc/rhi/rhi.yaml"
ln -s /usr/lib/systemd/system/rhi.service "$wants"

# An interface and a VIP on it, for the removal tests: only in a network
# namespace of our own (check-deb.sh makes one), never on the host's.
vip=192.0.2.100/32
netns=""
if [ "$(readlink /proc/self/ns/net)" = "$(readlink /proc/1/ns/net)" ]; then
	echo "check-install: SKIPPED: removal with VIPs on rhi0 (not in a network namespace of our own)"
elif ! command -v ip >/dev/null 2>&1; then
	echo "check-install: SKIPPED: removal with VIPs on rhi0 (no ip)"
elif ! ip link add rhi0 type ifb 2>/dev/null && ! ip link add rhi0 type dummy 2>/dev/null; then
	echo "check-install: SKIPPED: removal with VIPs on rhi0 (cannot make an ifb or dummy link)"
else
	ip link set rhi0 up
	ip address add "$vip" dev rhi0
	netns=yes
fi
on_rhi0() { ip -o address show dev rhi0 scope global | awk '{ print $4 }'; }

# Remove: program gone; config, enablement and user stay. rhi is not running,
# so prerm says that the VIPs on rhi0 stay announced, and how to remove them.
mkdir -p /var/lib/rhi /var/log/rhi
echo 192.0.2.101 >/var/lib/rhi/drain
cp /var/lib/rhi/drain /tmp/rhi-check/drain.operator
touch /var/log/rhi/main.log
dpkg_quiet --remove rhi
[ "$(state)" = "rc " ] || fail "after remove: dpkg state \"$(state)\""
[ -e /usr/bin/rhi ] && fail "after remove: /usr/bin/rhi is still there"
[ -f /etc/rhi/rhi.yaml ] || fail "after remove: /etc/rhi/rhi.yaml is gone"
[ -L "$wants" ] || fail "after remove: enablement is gone"
[ -e /var/lib/rhi/drain ] || fail "after remove: /var/lib/rhi is gone"
cmp -s /var/lib/rhi/drain /tmp/rhi-check/drain.operator || fail "remove without a daemon changed the drain file"
[ -e /var/lib/rhi/drain.before-remove ] && fail "remove without a daemon kept a drain file aside"
if [ -n "$netns" ]; then
	if ! { grep -q "stay on rhi0" /tmp/rhi-check/dpkg.log && grep -q "^rhi:   $vip\$" /tmp/rhi-check/dpkg.log &&
		grep -q "ip address flush dev rhi0 scope global" /tmp/rhi-check/dpkg.log; }; then
		fail "remove without a daemon did not list $vip as staying on rhi0: $(cat /tmp/rhi-check/dpkg.log)"
	fi
	[ "$(on_rhi0)" = "$vip" ] || fail "remove without a daemon changed rhi0: $(on_rhi0)"
fi

# Remove with rhi running (here without systemd: prerm asks rhi status), on
# a BIRD with the shipped base.conf and adc.conf: prerm drains everything,
# waits for BIRD to confirm, and keeps the operator's drains aside; a
# reinstall puts them back.
dpkg_quiet --install "$deb"
cmp -s /var/lib/rhi/drain /tmp/rhi-check/drain.operator || fail "reinstall changed the drain file"
if [ -z "$netns" ]; then
	:
elif ! command -v bird >/dev/null 2>&1; then
	echo "check-install: SKIPPED: removal with rhi running (no bird)"
else
	cp /etc/rhi/rhi.yaml /tmp/rhi-check/rhi.yaml.operator
	# The control API is nowhere and the policy is announce: rhi keeps the
	# VIP it finds on rhi0, so only the drain can take it away.
	cat >/etc/rhi/rhi.yaml <<'YAML'
apisix_control_url: http://127.0.0.1:1
apisix_poll_interval: 500ms
interface: rhi0
main_log: /var/log/rhi/main.log
failure_policy:
  control_api_unreachable: announce
bird:
  socket: /run/bird/bird.ctl
status_listen: 127.0.0.1:9711
vips:
  - address: 192.0.2.100
    upstreams: ["/apisix/upstreams/a"]
  - address: 192.0.2.101
    upstreams: ["/apisix/upstreams/b"]
YAML
	cat >/tmp/rhi-check/bird.conf <<'CONF'
log "/tmp/rhi-check/bird.log" all;
router id 192.0.2.1;
include "/usr/share/rhi/bird/base.conf";
include "/usr/share/rhi/bird/adc.conf";
CONF
	mkdir -p /run/bird
	bird -c /tmp/rhi-check/bird.conf -s /run/bird/bird.ctl -P /tmp/rhi-check/bird.pid ||
		fail "bird does not start with the shipped base.conf and adc.conf"
	rhi run --config /etc/rhi/rhi.yaml >/tmp/rhi-check/rhi.out 2>&1 &
	rhi_pid=$!
	i=0
	until rhi status --config /etc/rhi/rhi.yaml >/dev/null 2>&1 || [ $i -ge 50 ]; do
		sleep 0.2
		i=$((i + 1))
	done
	rhi status --config /etc/rhi/rhi.yaml >/dev/null 2>&1 || fail "rhi did not start: $(cat /tmp/rhi-check/rhi.out)"
	[ "$(on_rhi0)" = "$vip" ] || fail "before remove: rhi0 holds \"$(on_rhi0)\", want $vip"
	# The rhi user's link where prerm keeps the drains aside (issue 11,
	# row 2): prerm must replace it, not write through it.
	chown rhi:rhi /var/lib/rhi
	ln -s "$canary" /var/lib/rhi/drain.before-remove
	dpkg_quiet --remove rhi || fail "remove with rhi running"
	canary_ok || fail "prerm followed the link /var/lib/rhi/drain.before-remove: its target is now $(canary_is), \"$(cat "$canary")\""
	grep -q "every VIP is withdrawn and BIRD confirms it" /tmp/rhi-check/dpkg.log ||
		fail "remove with rhi running did not confirm the withdrawal: $(cat /tmp/rhi-check/dpkg.log)"
	[ -z "$(on_rhi0)" ] || fail "after remove with rhi running: rhi0 still holds $(on_rhi0)"
	grep -q "stay on rhi0" /tmp/rhi-check/dpkg.log && fail "remove with rhi running says VIPs stay on rhi0"
	cmp -s /var/lib/rhi/drain.before-remove /tmp/rhi-check/drain.operator ||
		fail "remove did not keep the operator's drains aside in /var/lib/rhi/drain.before-remove"
	grep -qx all /var/lib/rhi/drain || fail "after remove: the drain file does not drain all: $(cat /var/lib/rhi/drain)"
	kill "$rhi_pid" "$(cat /tmp/rhi-check/bird.pid)"
	wait "$rhi_pid" || true

	dpkg_quiet --install "$deb"
	grep -q "restored /var/lib/rhi/drain" /tmp/rhi-check/dpkg.log || fail "reinstall did not say it restored the drains: $(cat /tmp/rhi-check/dpkg.log)"
	cmp -s /var/lib/rhi/drain /tmp/rhi-check/drain.operator || fail "reinstall did not restore the operator's drains: $(cat /var/lib/rhi/drain)"
	[ -e /var/lib/rhi/drain.before-remove ] && fail "reinstall left /var/lib/rhi/drain.before-remove"
	[ "$(stat -c %a /var/lib/rhi/drain)" = 644 ] || fail "restored drain file has mode $(stat -c %a /var/lib/rhi/drain), want 644"
	cp /tmp/rhi-check/rhi.yaml.operator /etc/rhi/rhi.yaml
	# Purge must delete drains kept aside, too.
	cp /var/lib/rhi/drain /var/lib/rhi/drain.before-remove
fi

# Purge: config, state, logs and enablement gone; the user stays.
dpkg_quiet --purge rhi
[ -z "$(state)" ] || [ "$(state)" = "un " ] || fail "after purge: dpkg state \"$(state)\""
for p in /etc/rhi /var/lib/rhi /var/log/rhi "$wants" /etc/logrotate.d/rhi; do
	if [ -e "$p" ] || [ -L "$p" ]; then fail "after purge: $p is still there"; fi
done
getent passwd rhi >/dev/null || fail "after purge: user rhi was removed"

# Install after purge: a first install again, enabled again.
dpkg_quiet --install "$deb"
[ -L "$wants" ] || fail "install after purge: rhi.service not enabled"

if [ "$fails" != 0 ]; then
	exit 1
fi
echo "check-install: install, trigger on /usr/sbin/bird, postinst twice, reinstall, remove (with VIPs left, with rhi running), reinstall, purge, install again: ok"
