#!/usr/bin/env bash
# The Python package's tests, against the installed wheel:
#
#   bash scripts/test-python.sh
#
# builds this machine's wheel (scripts/package.sh), installs it with pip
# from the file alone into a fresh virtual environment that sees Debian's
# numpy and pytest (--system-site-packages), and runs python/tests there
# with a PATH that holds no Go. As root on Debian it installs what is
# missing (fuse3, numpy, nginx, python3-build, -pytest, -venv).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
ensure_deps fuse numpy nginx pybuild pytest venv

work=$(mktemp -d /tmp/npzfs-python.XXXXXX)
trap 'rm -rf "$work"' EXIT
NPZFS_DIST="$work/dist" NPZFS_ONLY=wheel NPZFS_ARCHES="$(go env GOARCH)" bash scripts/package.sh >/dev/null
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --quiet --no-index "$work"/dist/npzfs-*.whl
# From a folder of its own, so that nothing but the installed package is
# importable as npzfs.
cp -r python/tests "$work/tests"
cd "$work"
env -i HOME="$HOME" PATH="$work/venv/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  "$work/venv/bin/python" -m pytest -p no:cacheprovider -q tests
