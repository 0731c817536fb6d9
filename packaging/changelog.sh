#!/bin/sh
# changelog.sh VERSION MAINTAINER > changelog
#
# Writes the package's Debian changelog: one entry for this build (VERSION,
# from version.sh), listing the commits it holds past the previous release,
# newest first, at most 100, each subject wrapped to fit 80 columns. A
# release is a commit that changed the file VERSION: a build between
# releases lists the commits since the last one, a release build those
# since the release before it (all of them for the first).
set -eu

version=$1
maintainer=$2
max=100

# The commits that set VERSION, newest first.
releases=$(git log --format=%H -- VERSION)
last=$(printf '%s\n' "$releases" | sed -n 1p)
since_commit=$last
if [ -n "$last" ] && [ "$(git rev-list --count "$last..HEAD")" = 0 ]; then
	since_commit=$(printf '%s\n' "$releases" | sed -n 2p)
fi
if [ -n "$since_commit" ]; then
	range="$since_commit..HEAD"
	since="since $(git show -s --format=%h "$since_commit") set VERSION to $(git show "$since_commit:VERSION" | sed -n 1p)"
else
	range=HEAD
	since="so far"
fi
total=$(git rev-list --count "$range")

printf 'rhi (%s) unstable; urgency=medium\n\n' "$version"
# The header wrapped like the subjects: lintian wants lines of 80 or less.
printf '  * Built from git commit %s; %s commits %s:\n' \
	"$(git rev-parse --short=7 HEAD)" "$total" "$since" | fold -s -w 78 | sed -e 's/ *$//' -e '2,$s/^/    /'
git log --no-merges --max-count="$max" --format=%s "$range" | while IFS= read -r subject; do
	printf '%s\n' "$subject" | fold -s -w 72 | sed -e 's/ *$//' -e '1s/^/    - /' -e '2,$s/^/      /'
done
if [ "$total" -gt "$max" ]; then
	printf '    - and %s earlier ones.\n' "$((total - max))"
fi
when=$(git log -1 --format=%ct HEAD)
printf '\n -- %s  %s\n' "$maintainer" "$(LC_ALL=C date -u -R -d "@$when")"
