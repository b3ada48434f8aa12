#!/usr/bin/env bash
# Builds npzfs's release artifacts into dist/ (git-ignored):
#
#   npzfs-VERSION-py3-none-manylinux_2_17_x86_64....whl, ..._aarch64....whl
#   npzfs-VERSION-py3-none-macosx_12_0_x86_64.whl, ..._arm64.whl
#   npzfs-VERSION-py3-none-win_amd64.whl
#                                       wheels, each carrying its binary
#   npzfs_VERSION_amd64.deb, npzfs_VERSION_arm64.deb
#   npzfs-VERSION-1.x86_64.rpm, npzfs-VERSION-1.aarch64.rpm
#   npzfs_VERSION_linux_amd64.tar.gz, npzfs_VERSION_linux_arm64.tar.gz
#                                       binary, README, LICENSE, notices,
#                                       completions, man page
#   SHA256SUMS
#
# and lists them, each with its size, then SHA256SUMS.
#
# VERSION comes from git (scripts/version.sh). The binaries are static
# (CGO_ENABLED=0, -trimpath); the .deb and .rpm are made by nfpm, at a
# pinned version from the Go module proxy, the wheels by Debian's
# python3-build over setuptools and wheel, offline. As root on Debian it
# installs what is missing.
#
# Environment: NPZFS_DIST (output folder, default dist), NPZFS_ARCHES
# (default "amd64 arm64": Linux's), NPZFS_ONLY (default "wheel
# wheel-macos wheel-windows deb rpm tar"; "wheel" is Linux's wheels; the
# Python tests build only the wheel of this machine's architecture).
#
# The macOS and Windows wheels carry the binary built for them (no FUSE
# there: npzfs.open, ls, inspect, index, serve and pack). Their macOS
# version is the oldest the Go toolchain supports, 12.0 for Go 1.26
# (Go 1.27 needs 13: golang/go#75836), which its linker writes in the
# binary's LC_BUILD_VERSION too (scripts/test-packages.sh compares them).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

NFPM_VERSION=v2.45.2
dist=$(realpath -m "${NPZFS_DIST:-dist}")
arches=${NPZFS_ARCHES:-amd64 arm64}
only=" ${NPZFS_ONLY:-wheel wheel-macos wheel-windows deb rpm tar} "
wants() { [[ $only == *" $1 "* ]]; }

ensure_deps pybuild
version=$(bash scripts/version.sh)
export SOURCE_DATE_EPOCH
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
echo "npzfs $version into $dist"

rm -rf "$dist"
stage="$dist/.stage"
mkdir -p "$stage/common/completions"

# The commit goes in by -ldflags too: Go records none for a build in a
# git worktree.
commit=$(git rev-parse HEAD)
build() { # GOARCH OUT [GOOS]
  CGO_ENABLED=0 GOOS="${3:-linux}" GOARCH="$1" GOFLAGS= go build -buildvcs=auto -trimpath \
    -ldflags "-s -w -X main.version=$version -X main.commit=$commit" -o "$2" ./cmd/npzfs
}

# wheel BINARY PLATFORM: the wheel of the Python package carrying BINARY
# (npzfs, or npzfs.exe for Windows) as npzfs/_bin/, tagged
# py3-none-PLATFORM, into dist.
wheel() {
  local py="$stage/python-$2"
  cp -r python "$py"
  rm -rf "$py/tests" "$py/build" "$py"/*.egg-info
  mkdir -p "$py/npzfs/_bin"
  cp "$1" "$py/npzfs/_bin/"
  cp "$common/LICENSE" "$common/THIRD_PARTY_NOTICES" "$py/"
  (cd "$py" && NPZFS_VERSION=$version NPZFS_WHEEL_PLAT=$2 \
    /usr/bin/python3 -m build --wheel --no-isolation --outdir "$dist" >"$stage/wheel-$2.log" 2>&1) \
    || { cat "$stage/wheel-$2.log" >&2; die "building the $2 wheel failed"; }
}

# What every package carries besides the binary, made by this machine's
# own build of it.
build "$(go env GOARCH)" "$stage/host-npzfs"
common="$stage/common"
"$stage/host-npzfs" help --man >"$common/npzfs.1"
gzip -9n <"$common/npzfs.1" >"$common/npzfs.1.gz"
"$stage/host-npzfs" completion bash >"$common/completions/npzfs.bash"
"$stage/host-npzfs" completion zsh >"$common/completions/_npzfs"
"$stage/host-npzfs" completion fish >"$common/completions/npzfs.fish"
bash scripts/notices.sh >"$common/THIRD_PARTY_NOTICES"
cp LICENSE README.md "$common/"

if wants deb || wants rpm; then
  nfpm="${XDG_CACHE_HOME:-$HOME/.cache}/npzfs/tools/nfpm-$NFPM_VERSION/nfpm"
  if [ ! -x "$nfpm" ]; then
    echo "building nfpm $NFPM_VERSION into $(dirname "$nfpm") (once)"
    GOBIN=$(dirname "$nfpm") GOFLAGS= go install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION" \
      || die "cannot build nfpm $NFPM_VERSION"
  fi
fi

for arch in $arches; do
  case $arch in
    amd64) machine=x86_64 ;;
    arm64) machine=aarch64 ;;
    *) die "unknown architecture $arch (amd64 or arm64)" ;;
  esac
  s="$stage/$arch"
  mkdir -p "$s"
  cp -r "$common/." "$s/"
  build "$arch" "$s/npzfs"

  for kind in deb rpm; do
    wants $kind || continue
    NPZFS_VERSION=$version NPZFS_ARCH=$arch NPZFS_STAGE=$s \
      "$nfpm" package --config packaging/nfpm.yaml --packager $kind --target "$dist/" >/dev/null
  done

  if wants tar; then
    name="npzfs_${version}_linux_$arch"
    mkdir -p "$stage/tar/$name"
    cp -r "$s/npzfs" "$s/README.md" "$s/LICENSE" "$s/THIRD_PARTY_NOTICES" "$s/npzfs.1" "$s/completions" "$stage/tar/$name/"
    tar -C "$stage/tar" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
      -cf - "$name" | gzip -9n >"$dist/$name.tar.gz"
  fi

  if wants wheel; then
    wheel "$s/npzfs" "manylinux_2_17_$machine.manylinux2014_$machine.musllinux_1_1_$machine"
  fi
done

# The wheels of the other systems.
for target in darwin/amd64:macosx_12_0_x86_64 darwin/arm64:macosx_12_0_arm64 windows/amd64:win_amd64; do
  os=${target%%/*} arch=${target#*/} plat=${target#*:}
  arch=${arch%%:*}
  case $os in darwin) wants wheel-macos ;; windows) wants wheel-windows ;; esac || continue
  bin="$stage/$os-$arch/$(exe_name "$os")"
  mkdir -p "$(dirname "$bin")"
  build "$arch" "$bin" "$os"
  wheel "$bin" "$plat"
done

rm -rf "$stage"
(cd "$dist" && sha256sum -- * >SHA256SUMS)
# What was built: each artifact with its size, then the checksums.
echo "built:"
(cd "$dist" && for f in *; do
  [ "$f" = SHA256SUMS ] && continue
  printf '  %8s  %s\n' "$(numfmt --to=iec-i --suffix=B "$(stat -c %s -- "$f")")" "$f"
done)
echo "$dist/SHA256SUMS:"
sed 's/^/  /' "$dist/SHA256SUMS"
