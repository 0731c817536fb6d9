#!/usr/bin/env bash
# root.sh: a Debian 13 (trixie) root file system with BIRD 3 from the Debian
# mirror, and wrappers that run its bird and birdc on this host, for the BIRD 3
# pass of the root-only tests (make integration-bird3). Prints the directory
# of the wrappers (put it first on PATH); everything else goes to stderr.
#
#   mmdebstrap --variant=minbase --include=PACKAGES trixie ROOT MIRROR
#   BIN/bird, BIN/birdc   exec ROOT's own loader on ROOT's binary, with ROOT's
#                         libraries: ROOT/lib64/ld-linux-x86-64.so.2
#                         --library-path ROOT/lib/x86_64-linux-gnu:… ROOT/usr/sbin/bird
#
# The loader is run through a symbolic link named after the tool (LD/bird,
# LD/birdc) with --argv0: the kernel names a process after the file it was
# started as, so BIRD 3 shows up as "bird" to ps, pgrep and `ss -p` (the labs
# find BIRD's netlink sockets that way), as BIRD 2 does, and not as
# "ld-linux-x86-64".
#
# The wrappers take every argument as it is and run BIRD with the caller's
# view of the host: its file system (configuration, socket and pid file where
# the caller says), its network namespace (`ip netns exec NS bird …`), its
# user. Nothing is chrooted and nothing is mounted. Only BIRD's own defaults
# (/etc/bird/bird.conf, /run/bird/bird.ctl) are the host's, so callers name
# -c, -s and -P.
#
# Cached in RHI_BIRD3_CACHE (/var/cache/rhi-ci) as bird3-trixie-HASH/{root,bin},
# HASH covering the package list and this script: a later run only checks it.
# Built in a scratch directory and renamed into place under a lock, so an
# interrupted or concurrent build never leaves a half root in use; roots of
# other hashes are removed after a build. Needs root (mmdebstrap's root mode)
# and the mirror (RHI_BIRD3_MIRROR, http://deb.debian.org/debian).
#
# Exit status: 0 with the directory printed; 3 when it cannot be had here
# (not root, no mmdebstrap, an architecture without wrappers, or mmdebstrap
# failed: most often no route to the mirror) so that `make test` can skip the
# pass and say why; 1 when the root was built but does not run BIRD 3.
set -euo pipefail

packages=(bird3)
suite=trixie
cache=${RHI_BIRD3_CACHE:-/var/cache/rhi-ci}
mirror=${RHI_BIRD3_MIRROR:-http://deb.debian.org/debian}
log() { echo "bird3-root: $*" >&2; }
unavailable() {
	log "$*"
	exit 3
}

case $(uname -m) in
x86_64) loader=lib64/ld-linux-x86-64.so.2 triplet=x86_64-linux-gnu ;;
aarch64) loader=lib/ld-linux-aarch64.so.1 triplet=aarch64-linux-gnu ;;
*) unavailable "no wrappers for $(uname -m)" ;;
esac

hash=$( (
	printf '%s\n' "$suite" "${packages[@]}"
	cat "$0"
) | sha256sum | cut -c1-16)
dir=$cache/bird3-$suite-$hash

# check DIR: BIRD 3 runs from DIR's wrappers; prints its version line.
check() {
	local v
	v=$(timeout 20 "$1/bin/bird" --version 2>&1) || {
		log "$1/bin/bird --version failed: $v"
		return 1
	}
	[[ $v == "BIRD version 3."* ]] || {
		log "$1/bin/bird --version says \"$v\", want BIRD version 3.x"
		return 1
	}
	# birdc runs if it gets as far as trying the socket.
	v=$(timeout 20 "$1/bin/birdc" -s "$1/no-such.ctl" show status 2>&1) || true
	[[ $v == *"Unable to connect to server control socket"* ]] || {
		log "$1/bin/birdc does not run: $v"
		return 1
	}
	v=$(timeout 20 "$1/bin/bird" --version 2>&1)
	log "$v ($1)"
}

if [[ -d $dir/bin ]]; then
	check "$dir" || exit 1
	echo "$dir/bin"
	exit 0
fi

((EUID == 0)) || unavailable "building the root needs root (mmdebstrap --mode=root)"
command -v mmdebstrap >/dev/null || unavailable "no mmdebstrap (Debian: apt-get install mmdebstrap)"
mkdir -p "$cache"
exec 9>"$cache/.bird3-$suite.lock"
flock -w 1200 9 || unavailable "another build holds $cache/.bird3-$suite.lock"
# Built by another run while this one waited.
if [[ -d $dir/bin ]]; then
	check "$dir" || exit 1
	echo "$dir/bin"
	exit 0
fi

work=$(mktemp -d "$cache/.bird3-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
log "mmdebstrap $suite (${packages[*]}) from $mirror into $dir"
start=$SECONDS
if ! timeout 1200 mmdebstrap --quiet --mode=root --variant=minbase \
	--include="$(
		IFS=,
		echo "${packages[*]}"
	)" "$suite" "$work/root" "$mirror" >"$work/log" 2>&1; then
	tail -n 5 "$work/log" >&2
	unavailable "mmdebstrap failed (no route to $mirror? RHI_BIRD3_MIRROR names another)"
fi
install -d "$work/bin" "$work/ld"
for tool in bird birdc; do
	ln -s "$dir/root/$loader" "$work/ld/$tool"
	cat >"$work/bin/$tool" <<EOF
#!/bin/sh
# $tool of BIRD 3 from the Debian $suite root beside this directory
# (integration/bird3/root.sh): the root's loader, named $tool, and libraries;
# the caller's file system, namespace and arguments.
R=$dir/root
exec "$dir/ld/$tool" --library-path "\$R/lib/$triplet:\$R/usr/lib/$triplet" --argv0 $tool "\$R/usr/sbin/$tool" "\$@"
EOF
	chmod 0755 "$work/bin/$tool"
done
rm -rf "$dir"
mv "$work" "$dir"
trap - EXIT
chmod 0755 "$dir"
log "built in $((SECONDS - start)) s ($(du -sh "$dir" | cut -f1))"
check "$dir" || exit 1
find "$cache" -maxdepth 1 -name "bird3-$suite-*" ! -name "${dir##*/}" -exec rm -rf {} +
echo "$dir/bin"
