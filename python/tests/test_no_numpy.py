"""Without numpy: the command line and npzfs.ls work; npzfs.load and
npzfs.savez raise npzfs.Error in one line saying how to install it; the
wheel does not require numpy, and offers it as the extra npzfs[numpy].

Each case runs a Python of the test's environment in which numpy cannot
be imported: a folder ahead of it on sys.path holds a numpy package
whose import fails, as it fails where numpy is not installed.
"""

import subprocess
import sys
from importlib import metadata
from pathlib import Path

BLOCKED = "numpy is not installed (blocked by the test)"


def run_without_numpy(tmp_path, argv, code=None):
    """Runs argv (or python -c code) with numpy unimportable."""
    block = tmp_path / "block"
    (block / "numpy").mkdir(parents=True, exist_ok=True)
    (block / "numpy" / "__init__.py").write_text(f"raise ImportError({BLOCKED!r})\n")
    if code is not None:
        argv = [sys.executable, "-c", code]
    env = {"PYTHONPATH": str(block), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "TMPDIR": str(tmp_path)}
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)


def test_numpy_is_an_extra():
    reqs = metadata.requires("npzfs") or []
    # Each requirement is NAME[ ; MARKER], the marker quoting as it will.
    split = [[part.strip().replace("'", '"') for part in r.split(";", 1)] + [""] for r in reqs]
    assert all("extra ==" in marker for _, marker, *_ in split), reqs
    assert ["numpy", 'extra == "numpy"'] in [s[:2] for s in split], reqs


def test_command_line_without_numpy(tmp_path):
    script = Path(sys.executable).parent / "npzfs"
    r = run_without_numpy(tmp_path, [str(script), "version"])
    assert r.returncode == 0 and r.stdout.startswith("npzfs "), (r.returncode, r.stdout, r.stderr)
    r = run_without_numpy(tmp_path, [sys.executable, "-m", "npzfs", "version"])
    assert r.returncode == 0 and r.stdout.startswith("npzfs "), (r.returncode, r.stdout, r.stderr)


def test_load_and_savez_without_numpy(data, tmp_path):
    archive = data / "stored.npz"
    code = f"""
import sys
try:
    import numpy
except ImportError as e:
    assert {BLOCKED!r} in str(e)
else:
    sys.exit("numpy was imported")
import npzfs
print(len(npzfs.ls({str(archive)!r})))
for call in (lambda: npzfs.load({str(archive)!r}), lambda: npzfs.savez({str(tmp_path / "out.npz")!r}, a=[1, 2])):
    try:
        call()
    except npzfs.Error as e:
        print(e)
    else:
        sys.exit("no npzfs.Error")
"""
    r = run_without_numpy(tmp_path, None, code)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 3 and int(lines[0]) > 0, lines
    for what, line in zip(("load", "savez"), lines[1:]):
        assert line == f"npzfs.{what} needs numpy, which this Python lacks: pip install numpy (or pip install 'npzfs[numpy]')", line
    assert not (tmp_path / "out.npz").exists()
