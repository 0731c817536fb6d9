#!/bin/sh
# Prints the version of the checked-out tree: the release in the file
# VERSION at the top of the repository, and, between releases, how far past
# it this commit is. Debian's version rules apply (dpkg --compare-versions),
# so that each build sorts after the ones before it:
#   VERSION last changed by HEAD            -> 0.6.0
#   4 commits after VERSION last changed    -> 0.6.0+git4.abcdef0
#   VERSION 0.7.0~rc1 (a pre-release)       -> 0.7.0~rc1   (sorts before 0.7.0)
#   uncommitted changes                     -> any of the above + "+dirty"
#   no git (an exported tree)               -> the file as it is
# The count is of commits reachable from HEAD and not from the commit that
# last changed VERSION, so it needs no tag and travels with every clone
# that has the history (a shallow clone that lacks that commit counts from
# its own edge, and says so on stderr).
#
# Releasing: write the new version into VERSION and commit it alone; that
# commit is the release (a tag v<VERSION> on it is optional).
set -eu

top=$(git rev-parse --show-toplevel 2>/dev/null) || top=
file=${top:-.}/VERSION
if [ ! -f "$file" ]; then
	echo "version.sh: no VERSION file at \"$file\"" >&2
	exit 1
fi
base=$(sed -n '1{s/[[:space:]]//g;p;}' "$file")
if ! printf '%s\n' "$base" | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+(~[A-Za-z0-9.]+)?$'; then
	echo "version.sh: VERSION holds \"$base\", not a release such as 1.2.3 or 1.2.3~rc1" >&2
	exit 1
fi

v=$base
if [ -n "$top" ]; then
	sha=$(git rev-parse --short=7 HEAD)
	set_by=$(git log -1 --format=%H -- "$file")
	if [ -z "$set_by" ]; then
		echo "version.sh: VERSION is not committed; counting every commit" >&2
		n=$(git rev-list --count HEAD)
	else
		n=$(git rev-list --count "$set_by..HEAD")
	fi
	if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
		echo "version.sh: a shallow clone: the count after $base may be short" >&2
	fi
	if [ "$n" != 0 ]; then
		v="$v+git$n.$sha"
	fi
	if ! git diff --quiet HEAD -- 2>/dev/null; then
		v="$v+dirty"
	fi
fi

if ! printf '%s\n' "$v" | grep -Eq '^[0-9][A-Za-z0-9.+~]*$'; then
	echo "version.sh: \"$v\" is not a Debian upstream version" >&2
	exit 1
fi
printf '%s\n' "$v"
