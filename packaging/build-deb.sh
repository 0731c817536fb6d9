#!/bin/sh
# build-deb.sh: builds dist/rhi_<version>_<arch>.deb (what `make deb` runs)
# and prints its path on stdout (everything else goes to stderr). Run from
# the repository root.
#
# Environment: GO (go), NFPM_VERSION (the nfpm release run through `go run`,
# so it stays out of go.mod; cached by Go afterwards), RHI_DEB_MAINTAINER.
set -eu

GO=${GO:-go}
NFPM_VERSION=${NFPM_VERSION:-v2.48.0}
RHI_DEB_MAINTAINER=${RHI_DEB_MAINTAINER:-rhi maintainers <maintainers@rhi-daemon.invalid>}
RHI_DEB_VERSION=$(packaging/version.sh)
RHI_DEB_ARCH=$("$GO" env GOARCH)
# Dates nfpm writes (directories, control files) are the commit's.
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct HEAD)
export RHI_DEB_MAINTAINER RHI_DEB_VERSION RHI_DEB_ARCH SOURCE_DATE_EPOCH

stage=dist/stage
rm -rf "$stage"
mkdir -p "$stage/doc"

# Static, so the package runs on any Debian release of its architecture.
CGO_ENABLED=0 ${MAKE:-make} --no-print-directory build \
	VERSION="$RHI_DEB_VERSION" BIN="$stage/rhi" GO="$GO" >&2

date=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%d HEAD)
packaging/gen-man.sh "$stage/rhi" "$date" >"$stage/rhi.8"
gzip -9n "$stage/rhi.8"
packaging/gen-man.sh "$stage/rhi" "$date" 5 >"$stage/rhi.yaml.5"
gzip -9n "$stage/rhi.yaml.5"

cp packaging/README.Debian packaging/copyright "$stage/doc/"
packaging/changelog.sh "$RHI_DEB_VERSION" "$RHI_DEB_MAINTAINER" >"$stage/doc/changelog"
gzip -9n "$stage/doc/changelog"
mkdir -p "$stage/lintian"
cp packaging/lintian-overrides "$stage/lintian/rhi"
if [ -f README.md ]; then
	cp README.md "$stage/doc/"
else
	echo "build-deb.sh: no README.md yet; the package ships README.Debian only" >&2
fi

mkdir -p dist
rm -f dist/rhi_*.deb
"$GO" run "github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION" pkg \
	--packager deb --config packaging/nfpm.yaml --target dist/ >&2
echo "dist/rhi_${RHI_DEB_VERSION}_${RHI_DEB_ARCH}.deb"
