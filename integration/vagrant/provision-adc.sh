#!/usr/bin/env bash
# provision-adc.sh HOST: turns a Debian 12 or 13 VM into one ADC of the Vagrant
# lab: the rhi0, rhi1 and rhi2 dummies of the three tiers (systemd-networkd,
# deploy/networkd), BIRD (deploy/bird;
# Debian 12's bird2 or Debian 13's bird3), backends, APISIX in standalone mode
# with active health checks and the warm-up units, and rhi under its systemd
# unit with deploy/rhi.yaml.
#
# Run by Vagrant as root, with the repository at /vagrant. Safe to run again
# (`vagrant provision`): every step writes whole files; BIRD and APISIX restart
# only when their configuration changed, rhi always (it may be a new build;
# with on_shutdown: keep its VIPs stay put). Stopped backends start again.
# RHI_LAB_APISIX: real installs APISIX from its Debian repository (needs the
# internet; APISIX_VERSION pins its Debian version, e.g. 3.17.0-0, empty: the
# newest); fake (the default) runs the project's fake control API instead
# (bin/vagrant/fake-apisix, built by make vagrant-up) and needs no network.
# RHI_LAB_RHI names the rhi to install (a .deb or a binary, relative to the
# repository); empty: the newest of dist/rhi_*.deb and bin/vagrant/rhi.
set -euo pipefail

host=${1:?usage: provision-adc.sh HOST}
repo=${LAB_REPO:-/vagrant}
# shellcheck source=lab.sh
source "$repo/integration/vagrant/lab.sh"
[[ ${LAB_ROLE[$host]:-} == adc ]] || lab_die "\"$host\" is not an ADC in $LAB_TOPOLOGY"
mode=${RHI_LAB_APISIX:-fake}
[[ $mode == real || $mode == fake ]] || lab_die "RHI_LAB_APISIX: want real or fake, got \"$mode\""

export DEBIAN_FRONTEND=noninteractive
# Keep our copy of a package's config file (APISIX's config.yaml, rhi.yaml) on
# upgrades instead of asking.
apt_install=(apt-get install -y -qq --no-install-recommends -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
arch=$(dpkg --print-architecture)
log() { echo "provision $host: $*"; }

# put SRC DEST MODE OWNER:GROUP: install a file, print "changed" if it did.
put() {
	if ! cmp -s "$1" "$2" || [[ $(stat -c '%a %U:%G' "$2") != "$3 $4" ]]; then
		install -D -m "$3" -o "${4%%:*}" -g "${4##*:}" "$1" "$2"
		echo changed
	fi
}

# render FUNC DEST MODE OWNER:GROUP [ARGS…]: put the output of a render_* function.
render() {
	local fn=$1 dest=$2 mode=$3 owner=$4 tmp
	shift 4
	tmp=$(mktemp)
	"$fn" "$@" >"$tmp"
	put "$tmp" "$dest" "$mode" "$owner"
	rm -f "$tmp"
}

# The lab's box has every package already; only a box without them (and a
# route to the mirror) needs apt. Offline, `apt-get update` would only warn.
log "packages"
need=()
for p in ca-certificates curl python3; do
	dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
# BIRD 2 on Debian 12, BIRD 3 on 13 (whose bird2 and bird3 conflict).
if ! dpkg -s bird2 >/dev/null 2>&1 && ! dpkg -s bird3 >/dev/null 2>&1; then
	if [[ $(. /etc/os-release && echo "${VERSION_CODENAME:-}") == bookworm ]]; then need+=(bird2); else need+=(bird3); fi
fi
if ((${#need[@]})); then
	apt-get update -qq
	"${apt_install[@]}" "${need[@]}" >/dev/null
fi
# FRR is the router's; its zebra has no business on an ADC.
if systemctl cat frr.service >/dev/null 2>&1; then
	systemctl disable --now frr.service >/dev/null 2>&1
fi

# --- rhi0, rhi1, rhi2: the dummies that hold the VIPs at full weight,
# degraded and in last resort (where drain and a stop with on_shutdown:
# withdraw step them down before withdrawing them), from deploy/networkd.
# ifupdown keeps the VM's own interfaces; networkd manages only what its
# .network files match.
log "rhi0, rhi1, rhi2 (systemd-networkd)"
changed=""
for f in 50-rhi{0,1,2}.netdev 50-rhi{0,1,2}.network; do
	changed+=$(put "$repo/deploy/networkd/$f" "/etc/systemd/network/$f" 644 root:root)
done
# networkd's wait-online would wait for links it does not manage; the VM's
# network-online.target stays ifupdown's. Masked after enabling networkd,
# whose enabling would enable wait-online again (Also=).
systemctl enable --now systemd-networkd.service
systemctl mask --now systemd-networkd-wait-online.service >/dev/null 2>&1
if [[ -n $changed ]]; then
	networkctl reload
fi
for ((i = 0; i < 30; i++)); do
	ip link show rhi0 >/dev/null 2>&1 && ip link show rhi1 >/dev/null 2>&1 && ip link show rhi2 >/dev/null 2>&1 && break
	sleep 1
done
for l in rhi0 rhi1 rhi2; do
	ip link show "$l" >/dev/null || lab_die "$l did not appear (journalctl -u systemd-networkd)"
done

# --- BIRD: the host file around deploy/bird/base.conf and tiers.conf, as on a
# production host that takes examples/bird-tiers.conf whole.
log "BIRD"
install -d -m 0750 -o root -g bird /etc/bird/rhi
changed=$(put "$LAB_BIRD_BASE" /etc/bird/rhi/base.conf 640 root:bird)
changed+=$(put "$LAB_BIRD_SHARED" /etc/bird/rhi/tiers.conf 640 root:bird)
rm -f /etc/bird/rhi/adc.conf # a lab provisioned before tiers.conf
changed+=$(render render_adc_bird /etc/bird/bird.conf 640 root:bird "$host")
bird -p -c /etc/bird/bird.conf
systemctl enable bird.service
if [[ -n $changed ]] || ! systemctl is-active --quiet bird.service; then
	systemctl restart bird.service
fi

# --- The fake control API (RHI_LAB_APISIX=fake) in place of APISIX.
fake_api() {
	log "fake APISIX control API"
	if systemctl cat apisix.service >/dev/null 2>&1; then
		systemctl disable --now apisix.service rhi-lab-warmup.timer rhi-lab-warmup.path >/dev/null 2>&1 || true
	fi
	local bin=$repo/bin/vagrant/fake-apisix
	[[ -x $bin ]] || lab_die "no $bin: run \`make vagrant-up\` (builds it)"
	changed=$(put "$bin" /usr/local/libexec/rhi-lab/fake-apisix 755 root:root)
	changed+=$(render render_fakeapi_env /etc/rhi-lab/fakeapi.env 644 root:root)
	render render_fakeapi_upstreams /etc/rhi-lab/fakeapi-upstreams 644 root:root >/dev/null
	changed+=$(put "$LAB_DIR/units/rhi-lab-fakeapi.service" /etc/systemd/system/rhi-lab-fakeapi.service 644 root:root)
	systemctl daemon-reload
	systemctl enable rhi-lab-fakeapi.service >/dev/null 2>&1
	if [[ -n $changed ]] || ! systemctl is-active --quiet rhi-lab-fakeapi.service; then
		systemctl restart rhi-lab-fakeapi.service
	fi
	# Every upstream healthy again, as after `dc.sh up`.
	/usr/local/libexec/rhi-lab/dc.sh up >/dev/null
}

# --- The real APISIX (RHI_LAB_APISIX=real), its backends and warm-up.
real_apisix() {
	if systemctl cat rhi-lab-fakeapi.service >/dev/null 2>&1; then
		systemctl disable --now rhi-lab-fakeapi.service >/dev/null 2>&1 || true
	fi
	# --- Backends: LAB_NODES python3 http.server per upstream, all under
	# rhi-lab-backends.target so that one command stops the data centre.
	log "backends"
	install -d -m 0755 /srv/rhi-lab/www
	echo ok >/srv/rhi-lab/www/healthz
	for id in "${LAB_UPSTREAMS[@]}"; do
		install -d -m 0755 "/srv/rhi-lab/www/$id"
		echo "$host $id" >"/srv/rhi-lab/www/$id/index.html"
	done
	for u in rhi-lab-backend@.service rhi-lab-backends.target; do
		put "$LAB_DIR/units/$u" "/etc/systemd/system/$u" 644 root:root >/dev/null
	done
	systemctl daemon-reload
	for id in "${LAB_UPSTREAMS[@]}"; do
		for port in $(lab_ports "$id"); do
			systemctl enable "rhi-lab-backend@$port.service" >/dev/null
		done
	done
	systemctl enable rhi-lab-backends.target
	systemctl start rhi-lab-backends.target

	# --- APISIX from its Debian 12 repository (codename "debian12").
	log "APISIX"
	if ! dpkg -s apisix >/dev/null 2>&1; then
		case $arch in
		amd64) apt_repo=https://repos.apiseven.com/packages/debian ;;
		arm64) apt_repo=https://repos.apiseven.com/packages/arm64/debian ;;
		*) lab_die "APISIX publishes no Debian packages for $arch" ;;
		esac
		key=$(mktemp)
		curl -fsSL --max-time 60 https://repos.apiseven.com/pubkey.gpg -o "$key"
		# apt takes an armored key as .asc and a binary one as .gpg.
		if grep -q -- '-----BEGIN PGP PUBLIC KEY BLOCK-----' "$key"; then keyring=/etc/apt/keyrings/apisix.asc; else keyring=/etc/apt/keyrings/apisix.gpg; fi
		install -D -m 0644 "$key" "$keyring"
		rm -f "$key"
		echo "deb [signed-by=$keyring] $apt_repo debian12 main" >/etc/apt/sources.list.d/apisix.list
		apt-get update -qq
	fi
	"${apt_install[@]}" "apisix${APISIX_VERSION:+=$APISIX_VERSION}" >/dev/null
	changed=$(put "$LAB_DIR/apisix-config.yaml" /usr/local/apisix/conf/config.yaml 644 root:root)
	render render_apisix_yaml /usr/local/apisix/conf/apisix.yaml 644 root:root >/dev/null

	# --- Warm-up: APISIX makes health checkers only for upstreams that served a
	# request (README.md). After every APISIX start, apisix.yaml change, and each
	# minute, one request goes through each route.
	log "warm-up units"
	install -D -m 0755 "$LAB_DIR/warmup.sh" /usr/local/libexec/rhi-lab/warmup.sh
	render render_warmup_urls /etc/rhi-lab/warmup-urls 644 root:root >/dev/null
	for u in rhi-lab-warmup.service rhi-lab-warmup.timer rhi-lab-warmup.path; do
		put "$LAB_DIR/units/$u" "/etc/systemd/system/$u" 644 root:root >/dev/null
	done
	systemctl daemon-reload
	systemctl enable rhi-lab-warmup.service rhi-lab-warmup.path
	systemctl enable --now rhi-lab-warmup.timer
	systemctl start rhi-lab-warmup.path

	systemctl enable apisix.service
	# A changed apisix.yaml needs no restart: APISIX reloads it by itself, and
	# rhi-lab-warmup.path warms up after it. config.yaml needs one.
	if [[ -n $changed ]] || ! systemctl is-active --quiet apisix.service; then
		# Starting APISIX starts the warm-up too (WantedBy=apisix.service).
		systemctl restart apisix.service
	fi
	# Wait for one warm-up to finish, so rhi starts with every checker in place.
	systemctl start rhi-lab-warmup.service
}

install -D -m 0755 "$LAB_DIR/dc.sh" /usr/local/libexec/rhi-lab/dc.sh
install -d -m 0755 /etc/rhi-lab
echo "$mode" >/etc/rhi-lab/apisix-mode
if [[ $mode == fake ]]; then fake_api; else real_apisix; fi

# --- rhi: the newest of `make deb`'s package and `make vagrant-up`'s binary.
log "rhi"
pkg=""
if [[ -n ${RHI_LAB_RHI:-} ]]; then
	pkg=$repo/${RHI_LAB_RHI#"$repo"/}
	[[ -f $pkg ]] || lab_die "RHI_LAB_RHI: no $pkg"
fi
for f in "$repo"/dist/rhi_*_"$arch".deb "$repo/bin/vagrant/rhi"; do
	[[ -z ${RHI_LAB_RHI:-} && -f $f ]] || continue
	if [[ -z $pkg || $f -nt $pkg ]]; then pkg=$f; fi
done
[[ -n $pkg ]] || lab_die "no rhi to install: run \`make vagrant-up\` (builds bin/vagrant/rhi) or \`make deb\` (dist/rhi_*_$arch.deb)"
if [[ $pkg == *.deb ]]; then
	log "installing $pkg"
	# A unit or binary left by an earlier install from bin/ would shadow the package's.
	rm -f /etc/systemd/system/rhi.service /etc/sysusers.d/rhi.conf
	"${apt_install[@]}" --allow-downgrades "$pkg" >/dev/null
else
	log "installing $pkg with the files from deploy/"
	if dpkg -s rhi >/dev/null 2>&1; then apt-get remove -y -qq rhi >/dev/null; fi
	install -D -m 0755 "$pkg" /usr/bin/rhi
	install -D -m 0644 "$repo/deploy/systemd/rhi.service" /etc/systemd/system/rhi.service
	install -D -m 0644 "$repo/deploy/systemd/rhi.sysusers" /etc/sysusers.d/rhi.conf
	install -D -m 0644 "$repo/deploy/logrotate/rhi" /etc/logrotate.d/rhi
	systemd-sysusers
fi
# rhi reaches BIRD's socket (bird:bird 0660) as a member of group bird. The
# package's postinst adds it; the bin/ install path has no postinst.
usermod -a -G bird rhi
install -D -m 0640 -o root -g rhi "$LAB_RHI_CONFIG" /etc/rhi/rhi.yaml
rhi check-config --config /etc/rhi/rhi.yaml >/dev/null
systemctl daemon-reload
systemctl enable rhi.service
systemctl restart rhi.service

if [[ $mode == fake ]]; then api="fake APISIX control API"; else api="APISIX $(apisix version 2>/dev/null | tail -n 1)"; fi
lab_settle "$host"
log "done: $api, $(bird --version 2>&1), $(rhi version)"
