#!/bin/sh
# test-version.sh: version.sh on a scratch git repository, through the
# cases it documents, and the order dpkg gives the results. check-deb.sh
# runs it.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(mktemp -d)
trap 'rm -rf "$repo" "$repo.versions"' EXIT
cd "$repo"
git init -q
git config user.email test@example.invalid
git config user.name test
fails=0

commit() { # commit ISO-TIME [FILE]
	echo "$1" >>"${2:-f}"
	git add "${2:-f}"
	GIT_COMMITTER_DATE="$1" GIT_AUTHOR_DATE="$1" git commit -q -m "at $1"
}
release() { # release VERSION ISO-TIME: the commit that sets VERSION
	printf '%s\n' "$1" >VERSION
	git add VERSION
	GIT_COMMITTER_DATE="$2" GIT_AUTHOR_DATE="$2" git commit -q -m "release $1"
}
check() { # check NAME WANT [sorted]
	got=$("$here/version.sh" 2>/dev/null) || got="(failed)"
	sha=$(git rev-parse --short=7 HEAD 2>/dev/null || true)
	want=$(printf '%s' "$2" | sed "s/SHA/$sha/")
	if [ "$got" = "$want" ]; then
		echo "test-version: ok: $1: $got"
	else
		echo "test-version: FAIL: $1: got \"$got\", want \"$want\"" >&2
		fails=$((fails + 1))
	fi
	if [ "${3:-}" = sorted ]; then
		printf '%s\n' "$got" >>"$repo.versions"
	fi
}

commit 2026-01-02T03:04:05Z
check "no VERSION file" "(failed)"
release 0.5.9 2026-01-02T03:04:06Z
check "release commit" "0.5.9" sorted
commit 2026-01-02T03:04:07Z
check "a commit after it" "0.5.9+git1.SHA" sorted
git tag v9.9.9
check "tags are not read" "0.5.9+git1.SHA"
release 0.6.0~rc1 2026-01-03T00:00:00Z
check "pre-release" "0.6.0~rc1" sorted
commit 2026-01-03T00:00:01Z
commit 2026-01-03T00:00:02Z
check "two commits past a pre-release" "0.6.0~rc1+git2.SHA" sorted
release 0.6.0 2026-01-04T00:00:00Z
check "release after its pre-release" "0.6.0" sorted
i=1
while [ "$i" -le 10 ]; do
	commit "2026-01-05T00:00:$(printf %02d "$i")Z"
	[ "$i" = 9 ] && check "nine commits past" "0.6.0+git9.SHA" sorted
	i=$((i + 1))
done
check "ten commits past (sorts after nine)" "0.6.0+git10.SHA" sorted
echo edit >>f
check "uncommitted change" "0.6.0+git10.SHA+dirty" sorted
git checkout -q -- f
printf '0.6\n' >VERSION
git add VERSION
git commit -q -m "bad version"
check "a VERSION that is not x.y.z" "(failed)"
printf 'v0.7.0\n' >VERSION
git add VERSION
git commit -q -m "bad version"
check "a VERSION with a v" "(failed)"
release 0.7.0 2026-01-06T00:00:00Z
check "next release" "0.7.0" sorted
rm -rf .git
check "no git" "0.7.0"

# An install from before the VERSION file must upgrade to any of these.
sed -i '1i 0.0.0~git20261207000000.abcdef0' "$repo.versions"

# Each build sorts after the one before it.
prev=
while read -r v; do
	if [ -n "$prev" ] && ! dpkg --compare-versions "$prev" lt "$v"; then
		echo "test-version: FAIL: dpkg does not sort \"$prev\" before \"$v\"" >&2
		fails=$((fails + 1))
	fi
	prev=$v
done <"$repo.versions"

[ "$fails" = 0 ]
