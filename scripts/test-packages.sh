#!/usr/bin/env bash
# The release artifacts, built and tried:
#
#   bash scripts/test-packages.sh
#
# runs the completion tests with bash, zsh and fish present, then
# scripts/package.sh into a folder of its own, and checks that every
# artifact is there and listed in SHA256SUMS; that the .deb and .rpm depend
# on fuse3, recommend bash-completion, and hold the binary, completions,
# man page and license; that each wheel (Linux, macOS and Windows)
# carries its own system's and architecture's binary (file(1): ELF,
# Mach-O or PE), a macOS one made for the macOS version its tag names. As root on Debian it then installs this machine's .deb with
# dpkg, in a mount namespace whose /usr and /var are overlays on a tmpfs,
# so that the system (and an npzfs package installed on it) is never
# touched: npzfs version names the commit, man -w npzfs finds the page,
# bash loads the completion, mount -t fuse.npzfs mounts the demo archive;
# and removes it again. The system's npzfs is checked unchanged after.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
ensure_deps fuse man bash-completion rpm unzip zsh fish file

work=$(mktemp -d /tmp/npzfs-packages.XXXXXX)
mnt="$work/mnt" # in the namespace of try_deb, which unmounts it
trap 'rm -rf "$work"' EXIT
step() { printf -- '-- %s\n' "$*"; }

step "completion scripts in bash, zsh and fish"
go test -count=1 -run 'TestCompletion' ./cmd/npzfs

built=$(NPZFS_DIST="$work/dist" bash scripts/package.sh)
version=$(bash scripts/version.sh)
commit=$(git rev-parse --short=12 HEAD)
d="$work/dist"

step "every artifact, in SHA256SUMS, listed by package.sh with its size and sum"
for f in "npzfs_${version}_amd64.deb" "npzfs_${version}_arm64.deb" \
  "npzfs-${version}-1.x86_64.rpm" "npzfs-${version}-1.aarch64.rpm" \
  "npzfs_${version}_linux_amd64.tar.gz" "npzfs_${version}_linux_arm64.tar.gz" \
  "npzfs-${version}-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.musllinux_1_1_x86_64.whl" \
  "npzfs-${version}-py3-none-manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64.whl" \
  "npzfs-${version}-py3-none-macosx_12_0_x86_64.whl" "npzfs-${version}-py3-none-macosx_12_0_arm64.whl" \
  "npzfs-${version}-py3-none-win_amd64.whl"; do
  [ -s "$d/$f" ] || die "missing $f"
  grep -q "  $f\$" "$d/SHA256SUMS" || die "$f is not in SHA256SUMS"
  size=$(numfmt --to=iec-i --suffix=B "$(stat -c %s -- "$d/$f")")
  awk -v f="$f" -v s="$size" '$1 == s && $2 == f' <<<"$built" | grep -q . \
    || die "package.sh does not list $f with its size $size: $built"
  sum=$(awk -v f="$f" '$2 == f' "$d/SHA256SUMS")
  grep -qxF "  $sum" <<<"$built" || die "package.sh does not print the sum of $f: $built"
done
(cd "$d" && sha256sum --quiet -c SHA256SUMS) || die "SHA256SUMS does not match"

want_files="/usr/bin/npzfs
/usr/share/bash-completion/completions/npzfs
/usr/share/fish/vendor_completions.d/npzfs.fish
/usr/share/man/man1/npzfs.1.gz"
for arch in amd64 arm64; do
  step "$arch .deb"
  deb="$d/npzfs_${version}_$arch.deb"
  info=$(dpkg-deb --info "$deb")
  grep -q "^ Depends: fuse3$" <<<"$info" || die "$deb does not depend on fuse3: $info"
  grep -q "^ Recommends: bash-completion$" <<<"$info" || die "$deb does not recommend bash-completion: $info"
  grep -q "^ Architecture: $arch$" <<<"$info" || die "$deb: wrong architecture"
  files=$(dpkg-deb -c "$deb" | awk '{print substr($6, 2)}')
  for f in $want_files /usr/share/zsh/vendor-completions/_npzfs /usr/share/doc/npzfs/copyright /usr/share/doc/npzfs/THIRD_PARTY_NOTICES; do
    grep -qx "$f" <<<"$files" || die "$deb lacks $f"
  done
  step "$arch .rpm"
  case $arch in amd64) m=x86_64 ;; arm64) m=aarch64 ;; esac
  rpmf="$d/npzfs-${version}-1.$m.rpm"
  rpm -qpR "$rpmf" 2>/dev/null | grep -qx fuse3 || die "$rpmf does not require fuse3"
  rpm -qp --recommends "$rpmf" 2>/dev/null | grep -qx bash-completion || die "$rpmf does not recommend bash-completion"
  files=$(rpm -qpl "$rpmf" 2>/dev/null)
  for f in $want_files /usr/share/zsh/site-functions/_npzfs /usr/share/licenses/npzfs/LICENSE; do
    grep -qx "$f" <<<"$files" || die "$rpmf lacks $f"
  done
  step "$arch tarball"
  tar -tzf "$d/npzfs_${version}_linux_$arch.tar.gz" | grep -q "/npzfs.1$" || die "the $arch tarball lacks the man page"
  tar -xzf "$d/npzfs_${version}_linux_$arch.tar.gz" -C "$work" "npzfs_${version}_linux_$arch/npzfs"
  check_binary "$work/npzfs_${version}_linux_$arch/npzfs" linux "$arch"
done

# macho_minos FILE: the oldest macOS the Mach-O executable FILE runs on,
# as its LC_BUILD_VERSION load command says (N_M).
macho_minos() {
  /usr/bin/python3 -c '
import struct, sys
b = open(sys.argv[1], "rb").read()
off = 32  # the 64-bit header
for _ in range(struct.unpack_from("<I", b, 16)[0]):
    cmd, size = struct.unpack_from("<II", b, off)
    if cmd == 0x32:  # LC_BUILD_VERSION: platform, minos, sdk, ntools
        minos = struct.unpack_from("<I", b, off + 12)[0]
        print(f"{minos >> 16}_{(minos >> 8) & 0xff}")
    off += size
' "$1"
}

for w in linux/amd64:manylinux_2_17_x86_64.manylinux2014_x86_64.musllinux_1_1_x86_64 \
  linux/arm64:manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64 \
  darwin/amd64:macosx_12_0_x86_64 darwin/arm64:macosx_12_0_arm64 windows/amd64:win_amd64; do
  os=${w%%/*} plat=${w#*:} arch=${w#*/}
  arch=${arch%%:*}
  step "$plat wheel"
  bin=npzfs/_bin/$(exe_name "$os")
  whl="$d/npzfs-$version-py3-none-$plat.whl"
  files=$(unzip -Z1 "$whl")
  grep -qx "$bin" <<<"$files" || die "$whl lacks $bin"
  [ "$(grep -c '^npzfs/_bin/' <<<"$files")" = 1 ] || die "$whl carries more than its binary: $(grep '^npzfs/_bin/' <<<"$files")"
  grep -q '^npzfs-.*\.dist-info/\(licenses/\)\?LICENSE$' <<<"$files" || die "$whl lacks the LICENSE"
  unzip -o -q "$whl" "$bin" -d "$work/whl-$plat"
  check_binary "$work/whl-$plat/$bin" "$os" "$arch"
  if [ "$os" = darwin ]; then
    minos=$(macho_minos "$work/whl-$plat/$bin")
    [[ $plat == macosx_${minos}_* ]] || die "$whl is tagged $plat, but its binary needs macOS ${minos/_/.}"
  fi
done

if [ "$(id -u)" != 0 ] || ! command -v dpkg >/dev/null; then
  echo "test-packages.sh: not root on Debian: the .deb was not installed"
  exit 0
fi

# private_system: make /usr and /var of this mount namespace overlays
# whose upper layers are on a tmpfs: what dpkg writes there (the files,
# its database, the man-db trigger's cache, its log) stays in the
# namespace and goes with it. Returns 1, having said why, where it cannot.
private_system() {
  local scratch="$work/scratch" dir
  mkdir -p "$scratch"
  mount -t tmpfs npzfs-test "$scratch" || return 1
  for dir in /usr /var; do
    mkdir -p "$scratch$dir/upper" "$scratch$dir/work"
    mount -t overlay npzfs-test -o "lowerdir=$dir,upperdir=$scratch$dir/upper,workdir=$scratch$dir/work" "$dir" || return 1
  done
}

# try_deb DEB: install the .deb, try it, remove it; run in a mount
# namespace of its own, after private_system.
try_deb() {
  trap 'if grep -qs " $mnt " /proc/mounts; then umount -l "$mnt"; fi' EXIT
  step "dpkg -i (an npzfs installed on the system, if any, is upgraded in the namespace alone)"
  dpkg -i "$1" >/dev/null
  local out got
  out=$(/usr/bin/npzfs version)
  [[ $out == "npzfs $version (commit $commit"* ]] || die "npzfs version says: $out"
  echo "$out"
  man -w npzfs | grep -qx /usr/share/man/man1/npzfs.1.gz || die "man -w npzfs: $(man -w npzfs 2>&1)"
  MANWIDTH=80 man npzfs 2>/dev/null | grep -q "npzfs mount \[flags\] ARCHIVE MOUNTPOINT" || die "man npzfs does not show the page"
  got=$(bash -c 'source /usr/share/bash-completion/bash_completion; _completion_loader npzfs; complete -p npzfs')
  [ "$got" = "complete -F _npzfs npzfs" ] || die "bash does not load the completion: $got"
  step "mount -t fuse.npzfs"
  mkdir "$mnt"
  mount -t fuse.npzfs "$PWD/examples/demo.npz" "$mnt" -o ro
  pgrep -af -- "$mnt" | grep -q "^[0-9]* /usr/bin/npzfs mount" || die "the mount is not served by /usr/bin/npzfs: $(pgrep -af -- "$mnt")"
  cmp <(unzip -p examples/demo.npz labels.npy) "$mnt/labels.npy" || die "the mount reads wrong"
  umount "$mnt"
  step "dpkg -r"
  dpkg -r npzfs >/dev/null
  [ ! -e /usr/bin/npzfs ] || die "/usr/bin/npzfs is still there after dpkg -r"
}

# live: what the system outside the namespace holds of npzfs, which the
# test must leave as it was (a package a user installed, say).
live() {
  dpkg-query -W -f='${db:Status-Abbrev} ${Version}\n' npzfs 2>/dev/null || true
  sha256sum /usr/bin/npzfs /usr/share/man/man1/npzfs.1.gz 2>/dev/null || true
}

arch=$(dpkg --print-architecture)
before=$(live)
export work mnt version commit
export -f private_system try_deb die step
if ! unshare --mount --propagation private true 2>/dev/null; then
  echo "test-packages.sh: cannot make a mount namespace here (unshare --mount): the .deb was not installed"
  exit 0
fi
# shellcheck disable=SC2016 # $1 is the inner shell's
unshare --mount --propagation private bash -c 'set -euo pipefail; private_system || exit 3; try_deb "$1"' test-packages.sh "$d/npzfs_${version}_$arch.deb" || {
  rc=$?
  [ $rc = 3 ] || exit $rc
  echo "test-packages.sh: cannot lay a private /usr and /var over the system (overlay on tmpfs): the .deb was not installed"
  exit 0
}
after=$(live)
[ "$after" = "$before" ] || die "the system's npzfs changed: was [$before], is [$after]"
echo "test-packages.sh: all passed"
