#!/usr/bin/env bash
# A tour of npzfs on a fresh machine:
#
#   bash scripts/demo.sh
#
# Builds npzfs, mounts the example archive examples/demo.npz (written by
# numpy's savez), shows the tree, a header.json, the raw bytes with od, and a
# numpy memory map through the mount where numpy is installed, then unmounts.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

ensure_deps fuse
work=$(mktemp -d)
mnt="$work/mnt"
mkdir "$mnt"
cleanup() {
  if grep -qs " $mnt fuse.npzfs " /proc/mounts; then
    "$work/npzfs" unmount "$mnt" || fusermount3 -u -z "$mnt" || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# show prints a command as a user would type it (npzfs on PATH, the mount
# point as $MNT), then runs it.
show() { local line="$*"; line=${line//$work\/npzfs/npzfs}; printf '\n$ %s\n' "${line//$mnt/\$MNT}"; "$@"; }

echo "building npzfs"
build_npzfs "$work/npzfs"
npzfs="$work/npzfs"
echo "MNT=$mnt"

show "$npzfs" ls examples/demo.npz
show "$npzfs" mount examples/demo.npz "$mnt"
show ls -l "$mnt"
show ls -R "$mnt"
show cat "$mnt/images/header.json"
show od -A d -t f4 -N 32 "$mnt/images/raw.bin"
show od -A d -t d8 "$mnt/labels/raw.bin"
if /usr/bin/python3 -c 'import numpy' >/dev/null 2>&1; then
  show /usr/bin/python3 -c "
import numpy as np
a = np.load('$mnt/images.npy', mmap_mode='r')
print(type(a).__name__, a.dtype, a.shape, 'images[1, 2, :4] =', a[1, 2, :4])
print('taken =', np.load('$mnt/taken.npy', mmap_mode='r'))"
else
  printf '\n(numpy is not installed for /usr/bin/python3: skipping the numpy memory map;\n apt-get install python3-numpy to see it)\n'
fi
show "$npzfs" unmount "$mnt"
echo
echo "demo finished: mounted, read, unmounted."
