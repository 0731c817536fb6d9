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

# bird2 installed after rhi: unpacking /usr/sbin/bird fires rhi's trigger,
# and postinst triggered adds rhi to the group bird2's postinst created.
# This root has bird2 (the host's) or not: take rhi out of the group, or
# make the group as bird2 would, then fire the trigger as dpkg would.
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

# Reinstall (the upgrade path) keeps an operator's choices: the unit stays
# disabled, the edited config stays.
rm -f "$wants"
echo "# edited by the operator" >>/etc/rhi/rhi.yaml
dpkg_quiet --install "$deb"
[ -e "$wants" ] && fail "reinstall re-enabled rhi.service the operator had disabled"
grep -q '^# edited by the operator$' /etc/rhi/rhi.yaml || fail "reinstall replaced the edited /etc/rhi/rhi.yaml"
ln -s /usr/lib/systemd/system/rhi.service "$wants"

# Remove: program gone; config, enablement and user stay.
mkdir -p /var/lib/rhi /var/log/rhi
touch /var/lib/rhi/drain /var/log/rhi/main.log
dpkg_quiet --remove rhi
[ "$(state)" = "rc " ] || fail "after remove: dpkg state \"$(state)\""
[ -e /usr/bin/rhi ] && fail "after remove: /usr/bin/rhi is still there"
[ -f /etc/rhi/rhi.yaml ] || fail "after remove: /etc/rhi/rhi.yaml is gone"
[ -L "$wants" ] || fail "after remove: enablement is gone"
[ -e /var/lib/rhi/drain ] || fail "after remove: /var/lib/rhi is gone"

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
echo "check-install: install, trigger on /usr/sbin/bird, postinst twice, reinstall, remove, purge, install again: ok"
