#!/bin/sh
# Prints the Debian package version of the checked-out tree, so that later
# builds sort after earlier ones (dpkg --compare-versions):
#   tag v1.2.3 on HEAD            -> 1.2.3
#   4 commits past v1.2.3         -> 1.2.3+git4.gabcdef0
#   tag v1.2.3-rc1                -> 1.2.3~rc1   (sorts before 1.2.3)
#   no v* tag at all              -> 0.0.0~git20251202163400.abcdef0
#                                    (commit time, UTC: sorts by time)
#   uncommitted changes           -> any of the above + "+dirty"
set -eu

sha=$(git rev-parse --short=7 HEAD)
dirty=
if ! git diff --quiet HEAD -- 2>/dev/null; then
	dirty=+dirty
fi

if desc=$(git describe --tags --long --match 'v[0-9]*' 2>/dev/null); then
	# v1.2.3-rc1-4-gabcdef0: the last two fields are git's, the rest the tag.
	n=$(printf '%s\n' "$desc" | sed 's/^.*-\([0-9]*\)-g[0-9a-f]*$/\1/')
	tag=$(printf '%s\n' "$desc" | sed 's/-[0-9]*-g[0-9a-f]*$//')
	# Debian versions cannot hold "-" without a revision; "~" keeps a
	# pre-release sorting before its release.
	v=$(printf '%s\n' "${tag#v}" | tr -- '-_' '~~')
	if [ "$n" != 0 ]; then
		v="$v+git$n.g$sha"
	fi
else
	when=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S HEAD)
	v="0.0.0~git$when.$sha"
fi
v="$v$dirty"

if ! printf '%s\n' "$v" | grep -Eq '^[0-9][A-Za-z0-9.+~]*$'; then
	echo "version.sh: \"$v\" is not a Debian upstream version (tag \"${tag:-}\")" >&2
	exit 1
fi
printf '%s\n' "$v"
