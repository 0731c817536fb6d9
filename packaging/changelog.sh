#!/bin/sh
# changelog.sh VERSION MAINTAINER > changelog
#
# Writes the package's Debian changelog: one entry for this build, listing
# the commits since the last v* tag (all of them before the first tag),
# newest first, at most 100, each subject wrapped to fit 80 columns.
set -eu

version=$1
maintainer=$2
max=100

if tag=$(git describe --tags --abbrev=0 --match 'v[0-9]*' 2>/dev/null); then
	range="$tag..HEAD"
	since="since $tag"
else
	range=HEAD
	since="so far"
fi
total=$(git rev-list --count "$range")

printf 'rhi (%s) unstable; urgency=medium\n\n' "$version"
printf '  * Built from git commit %s; %s commits %s:\n' \
	"$(git rev-parse --short=7 HEAD)" "$total" "$since"
git log --no-merges --max-count="$max" --format=%s "$range" | while IFS= read -r subject; do
	printf '%s\n' "$subject" | fold -s -w 72 | sed -e 's/ *$//' -e '1s/^/    - /' -e '2,$s/^/      /'
done
if [ "$total" -gt "$max" ]; then
	printf '    - and %s earlier ones.\n' "$((total - max))"
fi
when=$(git log -1 --format=%ct HEAD)
printf '\n -- %s  %s\n' "$maintainer" "$(LC_ALL=C date -u -R -d "@$when")"
