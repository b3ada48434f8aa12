#!/usr/bin/env bash
# The Python package's tests, against the installed wheel:
#
#   bash scripts/test-python.sh
#
# builds this machine's wheel (scripts/package.sh), installs it with pip
# from the file alone into a fresh virtual environment that sees Debian's
# numpy and pytest (--system-site-packages), and runs python/tests there
# with a PATH that holds no Go; then runs npzfs.open's tests again in a
# mount namespace whose /dev has no fuse (unshare -m; as a user other
# than root, in a user namespace too), where npzfs.load falls back to
# npzfs.open. As root on Debian it installs what is missing (fuse3,
# numpy, nginx, python3-build, -pytest, -venv), and it builds versitygw
# (the S3 server of npzfs.open's tests) once, as scripts/test.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
ensure_deps fuse numpy nginx pybuild pytest venv
ensure_versitygw

work=$(mktemp -d /tmp/npzfs-python.XXXXXX)
trap 'rm -rf "$work"' EXIT
NPZFS_DIST="$work/dist" NPZFS_ONLY=wheel NPZFS_ARCHES="$(go env GOARCH)" bash scripts/package.sh >/dev/null
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --quiet --no-index "$work"/dist/npzfs-*.whl
# From a folder of its own, so that nothing but the installed package is
# importable as npzfs.
cp -r python/tests "$work/tests"
cd "$work"
clean_env=(env -i HOME="$HOME" PATH="$work/venv/bin:/usr/sbin:/usr/bin:/sbin:/bin" NPZFS_VERSITYGW="$NPZFS_VERSITYGW")
"${clean_env[@]}" "$work/venv/bin/python" -m pytest -p no:cacheprovider -q tests

echo "npzfs.open's tests in a mount namespace with no /dev/fuse"
# /dev is an empty tmpfs there but for null, zero and urandom: links into
# the old /dev, bound beforehand where the tmpfs does not hide it (a
# device bound onto the tmpfs could not be opened in a user namespace).
mkdir "$work/dev"
as_root=()
[ "$(id -u)" = 0 ] || as_root=(--user --map-root-user)
OLD_DEV="$work/dev" unshare "${as_root[@]}" --mount --propagation private sh -c '
  mount --rbind /dev "$OLD_DEV" && mount -t tmpfs none /dev || exit 1
  for d in null zero urandom; do ln -s "$OLD_DEV/$d" "/dev/$d"; done
  if [ -e /dev/fuse ]; then echo "test-python.sh: /dev/fuse is still there" >&2; exit 1; fi
  exec "$@"' sh "${clean_env[@]}" "$work/venv/bin/python" -m pytest -p no:cacheprovider -q \
  tests/test_open.py tests/test_open_lifecycle.py tests/test_open_hostile.py
