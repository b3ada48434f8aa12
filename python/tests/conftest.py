"""Fixtures of the npzfs package's tests: archives written with numpy, an
nginx serving them on 127.0.0.1, and a check after every test that it left
no mount and no temporary folder behind.

scripts/test-python.sh runs these tests against the installed wheel, in a
virtual environment whose PATH holds no Go.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

import npzfs

ARRAYS = {
    "images": np.arange(6 * 50 * 40, dtype="<f4").reshape(6, 50, 40) / 7,
    "labels": np.arange(1000, dtype="<i8") * 3,
    "big": np.sin(np.arange(1 << 20, dtype="<f8")),
    "fortran": np.asfortranarray(np.arange(12, dtype=">i4").reshape(3, 4)),
    "scalar": np.float64(2.5),
    "empty": np.zeros((0, 3), dtype="<i2"),
    "records": np.array([(1, 2.0), (3, 4.0)], dtype=[("a", "<i4"), ("b", "<f8")]),
    "nested/deep": np.arange(5, dtype="u1"),
}


def npzfs_mounts():
    """The mount points of npzfs mounts now."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            i = fields.index("-")
            if fields[i + 1] == "fuse.npzfs":
                out.append(fields[4])
    return out


def daemon_cmdlines():
    """The command lines of running npzfs processes."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if args and os.path.basename(args[0]) == b"npzfs":
            out.append(args)
    return out


@pytest.fixture(scope="session", autouse=True)
def installed():
    """The tests run against the installed package, with no Go."""
    assert Path(npzfs.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()), npzfs.__file__
    assert shutil.which("go") is None, "Go is on PATH: " + shutil.which("go")
    assert "NPZFS_BINARY" not in os.environ


@pytest.fixture(autouse=True)
def nothing_left(tmp_path, monkeypatch):
    """Each test gets a temporary folder of its own for npzfs's folders,
    and leaves no npzfs mount and nothing in it. Only mounts under the
    test's own folder are looked at: other npzfs mounts on the machine
    (a user's, another test run's) come and go as they will."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    yield tmp
    own = str(tmp_path.resolve()) + "/"
    left = {m for m in npzfs_mounts() if m.startswith(own)}
    for m in left:
        subprocess.run([npzfs.binary(), "unmount", "--lazy", m])
    assert not left, f"mounts left behind: {left}"
    assert not list(tmp.iterdir()), f"left in the temporary folder: {list(tmp.iterdir())}"


@pytest.fixture(scope="session")
def data(tmp_path_factory):
    """Archives: stored.npz (np.savez), deflated.npz (np.savez_compressed),
    a bare grid.npy, a folder of archives, objects.npz (an object array and
    a member that is not an array), notzip.npz."""
    d = tmp_path_factory.mktemp("data")
    np.savez(d / "stored.npz", **ARRAYS)
    np.savez_compressed(d / "deflated.npz", **ARRAYS)
    np.save(d / "grid.npy", ARRAYS["images"])
    folder = d / "folder"
    (folder / "sub").mkdir(parents=True)
    np.savez(folder / "a.npz", x=ARRAYS["labels"])
    np.savez_compressed(folder / "sub" / "b.npz", y=ARRAYS["big"])
    np.save(folder / "c.npy", ARRAYS["fortran"])
    np.savez(d / "objects.npz", objs=np.array([1, "a", None], dtype=object), ok=np.arange(3))
    with zipfile.ZipFile(d / "objects.npz", "a") as z:
        z.writestr("notes.txt", b"not an array\n")
    (d / "notzip.npz").write_bytes(b"this is not a zip archive at all\n")
    return d


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def nginx(data, tmp_path_factory):
    """nginx serving the data folder on 127.0.0.1, and under /private/
    only to requests with the header 'Authorization: Bearer sesame'.
    Yields its URL; stopped at the end of the session."""
    prog = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.access(prog, os.X_OK):
        pytest.fail("nginx not found (Debian: apt-get install nginx-light)")
    d = tmp_path_factory.mktemp("nginx")
    port = free_port()
    private = data / "private"
    private.mkdir(exist_ok=True)
    shutil.copy(data / "deflated.npz", private / "deflated.npz")
    conf = d / "nginx.conf"
    conf.write_text(
        f"""{"user root;" if os.geteuid() == 0 else ""}
daemon off;
master_process off;
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 64; }}
http {{
  access_log {d}/access.log;
  client_body_temp_path {d}/body;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
  server {{
    listen 127.0.0.1:{port};
    root {data};
    location /private/ {{
      if ($http_authorization != "Bearer sesame") {{ return 403; }}
    }}
  }}
}}
"""
    )
    proc = subprocess.Popen([prog, "-c", str(conf), "-p", str(d), "-e", str(d / "error.log")], start_new_session=True)
    try:
        for _ in range(3000):  # a guard against a server that never listens, not a timing
            if proc.poll() is not None:
                pytest.fail(f"nginx exited: {(d / 'error.log').read_text()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
