#!/bin/sh
# test-version.sh: version.sh on a scratch git repository, through the
# cases it documents, and the order dpkg gives the results. check-deb.sh
# runs it.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(mktemp -d)
trap 'rm -rf "$repo"' EXIT
cd "$repo"
git init -q
git config user.email test@example.invalid
git config user.name test
fails=0

commit() { # commit ISO-TIME
	echo "$1" >>f
	git add f
	GIT_COMMITTER_DATE="$1" GIT_AUTHOR_DATE="$1" git commit -q -m "at $1"
}
check() { # check NAME WANT
	got=$("$here/version.sh")
	sha=$(git rev-parse --short=7 HEAD)
	want=$(printf '%s' "$2" | sed "s/SHA/$sha/")
	if [ "$got" = "$want" ]; then
		echo "test-version: ok: $1: $got"
	else
		echo "test-version: FAIL: $1: got \"$got\", want \"$want\"" >&2
		fails=$((fails + 1))
	fi
	printf '%s\n' "$got" >>versions
}

commit 2026-01-02T03:04:05Z
check "no tag" "0.0.0~git20260102030405.SHA"
commit 2026-01-02T03:04:06Z
check "no tag, a second later" "0.0.0~git20260102030406.SHA"
git tag v1.2.3-rc1
check "pre-release tag" "1.2.3~rc1"
commit 2026-01-03T00:00:00Z
git tag v1.2.3
check "release tag" "1.2.3"
commit 2026-01-04T00:00:00Z
commit 2026-01-05T00:00:00Z
check "two commits past a tag" "1.2.3+git2.gSHA"
echo edit >>f
check "uncommitted change" "1.2.3+git2.gSHA+dirty"
git tag not-a-version
check "other tags are ignored" "1.2.3+git2.gSHA+dirty"

# Each build sorts after the one before it.
prev=
while read -r v; do
	if [ -n "$prev" ] && ! dpkg --compare-versions "$prev" le "$v"; then
		echo "test-version: FAIL: dpkg sorts \"$prev\" after \"$v\"" >&2
		fails=$((fails + 1))
	fi
	prev=$v
done <versions

[ "$fails" = 0 ]
