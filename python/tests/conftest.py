"""Fixtures of the npzfs package's tests: archives written with numpy, an
nginx serving them on 127.0.0.1 (and versitygw, an S3 server, for
npzfs.open), and a check after every test that it left no mount and no
temporary folder behind.

scripts/test-python.sh runs these tests against the installed wheel, in a
virtual environment whose PATH holds no Go.
"""

import io
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


def corpus_arrays():
    """The arrays npzfs.open is tested on: every dtype numpy saves raw,
    both byte orders, C and Fortran order, 0-d, empty, structured (with
    subarrays, titles, nesting and padding), and members long enough to
    take several replies and merged reads. Values are random bytes."""
    rng = np.random.default_rng(38)

    def random(shape, dtype, order="C"):
        dt = np.dtype(dtype)
        raw = rng.integers(0, 256, int(np.prod(shape)) * dt.itemsize, dtype=np.uint8)
        return np.ndarray(shape, dt, buffer=raw.tobytes(), order=order).copy(order=order)

    out = {}
    for dt in ["?", "i1", "<i2", ">i2", "<i4", ">i4", "<i8", ">i8", "u1", "<u2", ">u4", "<u8", "<f2", ">f2",
               "<f4", ">f4", "<f8", ">f8", "<c8", ">c16", "<M8[ns]", ">m8[s]", "S5", "<U3", ">U2", "V4"]:
        out["t_" + dt.replace("<", "le").replace(">", "be").replace("[", "_").replace("]", "")] = random((4, 5, 6), dt)
    out["f_le_f4"] = random((7, 5, 3), "<f4", "F")
    out["f_be_i8"] = random((2, 9), ">i8", "F")
    out["f_4d"] = random((3, 1, 4, 5), "<u2", "F")
    out["zero_d"] = random((), "<f8")
    out["zero_d_be"] = random((), ">i4")
    out["zero_d_rec"] = random((), [("a", "<i4"), ("b", "S2")])
    out["empty"] = random((0,), "<f4")
    out["empty_3d"] = random((2, 0, 3), ">i2")
    out["empty_f"] = random((0, 4), "<u1", "F")
    out["one"] = random((1,), "<i8")
    rec = np.dtype([("a", "<i4"), ("b", ">f8", (2, 3)), (("the title", "c"), "S3"), ("d", [("e", "u1"), ("f", "<f4")])])
    out["records"] = random((5, 3), rec)
    out["records_f"] = random((4, 3), rec, "F")
    out["padded"] = random((6,), np.dtype([("x", "u1"), ("y", "<f8")], align=True))
    out["subarray_of_subarray"] = random((3,), [("s", ("<i2", (2,)), (3,))])
    out["big"] = random((256, 1031), "<f8")  # 2 MiB: replies of 1 MiB, merged runs
    out["tall"] = random((4096, 3), ">u2")
    out["cube_f"] = random((17, 19, 23), "<f4", "F")
    return out


def processes():
    """(pid, command line) of every process now."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                yield int(pid), f.read().split(b"\0")
        except OSError:
            continue


def serve_pids():
    """The pids of running npzfs serve processes started by this one."""
    out = []
    for pid, args in processes():
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z" and int(fields[1]) == os.getpid() and b"serve" in args[1:3]:
            out.append(pid)
    return out


def running(pid):
    """Whether process pid runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


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
    return [args for _, args in processes() if args and os.path.basename(args[0]) == b"npzfs"]


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
def corpus(data):
    """corpus_stored.npz and corpus_deflated.npz in the data folder (so
    nginx serves them too), with an object array and a member that is not
    an array besides; yields the arrays."""
    arrays = corpus_arrays()
    np.savez(data / "corpus_stored.npz", **arrays)
    np.savez_compressed(data / "corpus_deflated.npz", **arrays)
    for name, method in (("corpus_stored.npz", zipfile.ZIP_STORED), ("corpus_deflated.npz", zipfile.ZIP_DEFLATED)):
        with zipfile.ZipFile(data / name, "a", compression=method) as z:
            buf = io.BytesIO()
            np.save(buf, np.array([{"a": 1}, None, "x"], dtype=object), allow_pickle=True)
            z.writestr("objects.npy", buf.getvalue())
            z.writestr("notes.txt", b"not an array\n" * 100)
            z.writestr("looks.npy", b"\x93NUMPX not an array")
    return arrays


@pytest.fixture(scope="session")
def s3(data, tmp_path_factory):
    """versitygw, an S3 server, on 127.0.0.1 over a folder whose bucket
    "corpus" holds the corpus archives; yields its endpoint, with
    credentials in the environment of the test session."""
    prog = os.environ.get("NPZFS_VERSITYGW") or shutil.which("versitygw")
    if not prog:
        pytest.fail("versitygw not found: set NPZFS_VERSITYGW (scripts/test-python.sh builds it)")
    root = tmp_path_factory.mktemp("s3")
    (root / "corpus").mkdir()
    port = free_port()
    access, secret = "npzfsaccess", "npzfssecret0123456789"
    proc = subprocess.Popen([prog, "--access", access, "--secret", secret, "--port", f"127.0.0.1:{port}", "--quiet", "posix", str(root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")}
    os.environ.update(AWS_ACCESS_KEY_ID=access, AWS_SECRET_ACCESS_KEY=secret, AWS_REGION="us-east-1")
    try:
        wait_listening(proc, port, "versitygw")
        yield f"http://127.0.0.1:{port}", root / "corpus"
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def wait_listening(proc, port, what):
    for _ in range(3000):  # a guard against a server that never listens, not a timing
        if proc.poll() is not None:
            pytest.fail(f"{what} exited")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.02)
    pytest.fail(f"{what} does not listen")


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
