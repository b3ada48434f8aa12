"""Builds the npzfs wheel for one platform.

scripts/package.sh stages this folder with the npzfs binary in
npzfs/_bin/npzfs (npzfs/_bin/npzfs.exe for Windows), LICENSE and
THIRD_PARTY_NOTICES, and runs ``python3 -m build --wheel --no-isolation``
with NPZFS_VERSION (from scripts/version.sh) and NPZFS_WHEEL_PLAT (the
platform tag of that binary, such as
manylinux_2_17_x86_64.manylinux2014_x86_64, macosx_12_0_arm64 or
win_amd64) set. The binary is static, so the wheel is tagged
py3-none-PLATFORM: any Python 3 on that platform.
"""

import os

from setuptools import setup
from setuptools.dist import Distribution

try:  # setuptools 70.1 and later have their own
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # older ones (Debian 12's 66), the wheel package's
    from wheel.bdist_wheel import bdist_wheel


class BinaryDistribution(Distribution):
    """A distribution that carries a binary: its files go where a
    platform's files go."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """A wheel for one platform (it carries a binary), for any Python 3."""

    def get_tag(self):
        return "py3", "none", os.environ["NPZFS_WHEEL_PLAT"]


_bin = os.path.join(os.path.dirname(os.path.abspath(__file__)), "npzfs", "_bin")
if not any(os.path.exists(os.path.join(_bin, name)) for name in ("npzfs", "npzfs.exe")):
    raise SystemExit("npzfs/_bin/npzfs is missing: build the wheels with bash scripts/package.sh")

setup(
    version=os.environ["NPZFS_VERSION"],
    distclass=BinaryDistribution,
    cmdclass={"bdist_wheel": PlatformWheel},
)
