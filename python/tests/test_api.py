"""The npzfs package against the real npzfs program: every function on
stored and deflated archives, a bare .npy, a folder and an HTTP server,
values exact against np.load; clean-up in every way a mount can end;
errors."""

import gc
import io
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

import npzfs
from conftest import ARRAYS, daemon_cmdlines, npzfs_mounts


def same(a, b):
    """a and b hold the same values, dtype, shape and order."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.flags.f_contiguous == b.flags.f_contiguous
    assert a.tobytes(order="A") == b.tobytes(order="A")


@pytest.mark.parametrize("name", ["stored.npz", "deflated.npz"])
def test_mount_archive(data, name):
    with npzfs.mount(data / name) as path:
        assert isinstance(path, Path)
        assert str(path) in npzfs_mounts()
        ref = np.load(data / name)
        for key in ref.files:
            same(np.load(path / (key + ".npy"), mmap_mode="r" if ref[key].size else None), ref[key])
            same(np.fromfile(path / key / "raw.bin", dtype=ref[key].dtype), ref[key].ravel(order="A"))
    assert str(path) not in npzfs_mounts()
    assert not path.exists()  # the temporary folder is gone


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM", "SIGHUP"])
def test_mount_ends_with_its_python(data, how):
    """A mount made by a Python killed (by any signal) is unmounted by its
    daemon, and the folder made for it removed: none outlives its owner."""
    code = ("import os, signal, sys, npzfs\n"
            "m = npzfs.mount(sys.argv[1])\n"
            "print(m.path, flush=True)\n"
            "os.kill(os.getpid(), getattr(signal, sys.argv[2]))\n"
            "signal.pause()\n")
    p = subprocess.run([sys.executable, "-c", code, str(data / "stored.npz"), how], capture_output=True, text=True, timeout=60)
    path = p.stdout.strip()
    assert p.returncode < 0 and path, (p.returncode, p.stdout, p.stderr)
    def daemons():
        return [c for c in daemon_cmdlines() if os.fsencode(path) in c]

    # The daemon unmounts, removes the folder, then exits: all three
    # are waited for (a bound on a hang, not a timing).
    deadline = time.monotonic() + 30
    while (path in npzfs_mounts() or os.path.exists(path) or daemons()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path not in npzfs_mounts() and not os.path.exists(path)
    assert not daemons()


def test_mount_on_a_folder_of_mine(data, tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    m = npzfs.mount(str(data / "stored.npz"), mnt, cache_mb=32, no_index=True)
    assert m.path == mnt and m.mounted
    same(np.load(mnt / "labels.npy"), ARRAYS["labels"])
    m.unmount()
    # Its daemon has exited by the time unmount returns.
    assert not [c for c in daemon_cmdlines() if os.fsencode(mnt) in c]
    m.unmount()  # idempotent
    assert not m.mounted and str(mnt) not in npzfs_mounts()
    assert mnt.is_dir()  # a folder the caller gave stays


def test_mount_bare_npy_and_folder(data):
    with npzfs.mount(data / "grid.npy") as path:
        same(np.load(path / "grid.npy"), ARRAYS["images"])
    with npzfs.mount(data / "folder") as path:
        same(np.load(path / "a.npz" / "x.npy"), ARRAYS["labels"])
        same(np.load(path / "sub" / "b.npz" / "y.npy", mmap_mode="r"), ARRAYS["big"])
        same(np.load(path / "c.npy"), ARRAYS["fortran"])


def test_mount_http(data, nginx):
    with npzfs.mount(f"{nginx}/deflated.npz") as path:
        same(np.load(path / "big.npy", mmap_mode="r"), ARRAYS["big"])
        same(np.load(path / "nested" / "deep.npy"), ARRAYS["nested/deep"])


def test_secrets_stay_out_of_command_lines(data, nginx):
    """A header, and a URL's query string, reach npzfs through its
    environment: no npzfs process shows them in its command line."""
    url = f"{nginx}/private/deflated.npz?X-Signature=hush"
    with pytest.raises(npzfs.Error) as e:
        npzfs.mount(url)
    assert e.value.exit_code == 1 and "403" in str(e.value) and "hush" not in str(e.value)
    with npzfs.mount(url, header=["Authorization: Bearer sesame"]) as path:
        same(np.load(path / "labels.npy"), ARRAYS["labels"])
        lines = daemon_cmdlines()
        assert any(str(path).encode() in args for args in lines)
        for args in lines:
            assert not any(b"sesame" in a or b"hush" in a for a in args), args
    assert npzfs.ls(url, header="Authorization: Bearer sesame")[0]["name"] == "images.npy"


@pytest.mark.parametrize("name", ["stored.npz", "deflated.npz"])
def test_load(data, name, nothing_left):
    ref = np.load(data / name)
    z = npzfs.load(data / name)
    assert not [m for m in npzfs_mounts() if m.startswith(str(nothing_left))]  # mounted on first use
    assert z.files == ref.files
    path = z._mount.path
    assert str(path) in npzfs_mounts()
    assert len(z) == len(ref.files) and list(z) == ref.files
    assert "images" in z and "nope" not in z
    for key in ref.files:
        a = z[key]
        if ref[key].size:
            assert isinstance(a, np.memmap), key
        assert not a.flags.writeable
        same(a, ref[key])
    with pytest.raises(KeyError, match="nope is not a file in the archive"):
        z["nope"]
    z.close()
    assert str(path) not in npzfs_mounts() and not path.exists()
    with pytest.raises(ValueError):
        z["images"]


def test_load_exact_name_first(tmp_path):
    """A member named "s" and another "s.npy": z["s"] is the first, as
    np.load gives it."""
    path = tmp_path / "order.npz"
    buf = io.BytesIO()
    np.save(buf, np.arange(3))
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("s.npy", buf.getvalue())
        z.writestr("s", b"raw member s")
    assert np.load(path)["s"] == b"raw member s"
    with npzfs.load(path) as z:
        assert z["s"] == b"raw member s" and z.files == ["s"]


def test_load_keeps_arrays_after_close(data):
    with npzfs.load(data / "deflated.npz") as z:
        big = z["big"]
    same(big, ARRAYS["big"])  # the mount was detached, the map lives on
    del big
    gc.collect()


def test_load_http_and_others(data, nginx):
    with npzfs.load(f"{nginx}/stored.npz") as z:
        same(z["records"], ARRAYS["records"])
    with npzfs.load(data / "grid.npy") as z:
        assert z.files == ["grid"]
        same(z["grid"], ARRAYS["images"])
    with npzfs.load(data / "objects.npz") as z:
        assert z.files == np.load(data / "objects.npz", allow_pickle=True).files
        same(z["ok"], np.arange(3))
        assert z["notes.txt"] == b"not an array\n"  # as np.load gives a member that is not an array
        with pytest.raises(ValueError, match="Object arrays cannot be loaded when allow_pickle=False"):
            z["objs"]
    with npzfs.load(data / "objects.npz", allow_pickle=True) as z:
        objs = z["objs"]
        assert objs.dtype == object and list(objs) == [1, "a", None]
        same(z["ok.npy"], np.arange(3))  # a member's name, as np.load takes it
        assert "ok.npy" in z and "ok" in z and "nope.npy" not in z


def flipped_copy(src, dst, key):
    """A copy of archive src with one bit flipped in the data of member
    KEY.npy, where np.load finds it (Bad CRC-32)."""
    b = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as z:
        info = z.getinfo(key + ".npy")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    b[start + info.compress_size // 2] ^= 0x10
    dst.write_bytes(bytes(b))
    with pytest.raises(zipfile.BadZipFile, match="Bad CRC-32"):
        np.load(dst)[key]
    return dst


@pytest.mark.parametrize("name", ["stored.npz", "deflated.npz"])
def test_load_never_serves_a_bad_crc(data, tmp_path, name):
    """Where np.load raises Bad CRC-32, npzfs.load and npzfs.open raise
    too (verify="auto"); verify="lazy" maps what is there."""
    bad = flipped_copy(data / name, tmp_path / name, "labels")
    with npzfs.load(bad) as z:
        with pytest.raises(OSError):
            np.asarray(z["labels"]).sum()
        same(z["images"], ARRAYS["images"])
    with npzfs.open(bad) as z:
        with pytest.raises(npzfs.Error, match="CRC-32"):
            np.asarray(z["labels"]).sum()
    if name == "stored.npz":
        with npzfs.open(bad, verify="lazy") as z:
            assert not np.array_equal(np.asarray(z["labels"]), ARRAYS["labels"])


def test_ls(data):
    members = npzfs.ls(data / "deflated.npz")
    assert [m["name"] for m in members] == [k + ".npy" for k in ARRAYS]
    big = members[list(ARRAYS).index("big")]
    assert big["method"] == "deflate" and big["shape"] == [1 << 20] and big["state"] == "served"
    checked = npzfs.ls(data / "stored.npz", verify=True)
    assert all(m["verify"] == "ok" for m in checked)


def test_ls_folder(data, tmp_path):
    members = npzfs.ls(data / "folder", verify=True)
    assert {(m["archive"], m["name"]) for m in members} >= {("a.npz", "x.npy"), ("sub/b.npz", "y.npy"), ("c.npy", "c.npy")}
    assert all(m["verify"] == "ok" for m in members)
    bad = tmp_path / "bad"
    shutil.copytree(data / "folder", bad)
    (bad / "junk.npz").write_bytes(b"junk")
    with pytest.raises(npzfs.Error) as e:
        npzfs.ls(bad)
    assert e.value.exit_code == 1 and e.value.message.startswith("npzfs ls: junk.npz: ")
    with pytest.raises(npzfs.Error, match="is a folder: npzfs.load takes one archive"):
        npzfs.load(data / "folder").files


def test_mount_through_a_link(data, tmp_path):
    """A mount point named through a symlink is the folder it leads to,
    as the mount table names it: the Mount finds its mount to unmount."""
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    m = npzfs.mount(data / "stored.npz", link)
    assert m.path == real.resolve() and str(m.path) in npzfs_mounts()
    same(np.load(link / "labels.npy"), ARRAYS["labels"])
    m.unmount()
    assert str(m.path) not in npzfs_mounts()


def test_index(data, tmp_path):
    d = tmp_path / "indexes"
    line = npzfs.index(data / "deflated.npz", index_dir=d, workers=1)
    assert line.startswith("indexed ") and str(d) in line
    assert list(d.rglob("*.idx")), "no index saved"
    assert npzfs.index(data / "deflated.npz", keys=["big"], index_dir=d).startswith("indexed 1 of 1")


def test_exception_in_with_block(data):
    with pytest.raises(RuntimeError):
        with npzfs.mount(data / "stored.npz") as path:
            assert str(path) in npzfs_mounts()
            raise RuntimeError("boom")
    assert str(path) not in npzfs_mounts() and not path.exists()


def test_busy_mount_is_detached(data):
    m = npzfs.mount(data / "stored.npz")
    a = np.load(m.path / "big.npy", mmap_mode="r")
    m.unmount()
    assert str(m.path) not in npzfs_mounts() and not m.path.exists()
    same(a, ARRAYS["big"])
    del a


def test_garbage_collection(data):
    m = npzfs.mount(data / "stored.npz")
    path = m.path
    assert str(path) in npzfs_mounts()
    del m
    gc.collect()
    assert str(path) not in npzfs_mounts() and not path.exists()
    z = npzfs.load(data / "stored.npz")
    z.files
    path = z._mount.path
    del z
    gc.collect()
    assert str(path) not in npzfs_mounts() and not path.exists()


def test_interpreter_exit(data, nothing_left):
    """A script that never unmounts leaves nothing mounted when it exits."""
    code = f"""
import sys, tempfile, npzfs
tempfile.tempdir = {str(nothing_left)!r}
m = npzfs.mount({str(data / "stored.npz")!r})
z = npzfs.load({str(data / "deflated.npz")!r})
a = z["big"]
print(m.path, z._mount.path)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    paths = r.stdout.split()
    assert len(paths) == 2 and r.stderr == ""
    for p in paths:
        assert p not in npzfs_mounts() and not os.path.exists(p)


def test_errors(data, tmp_path):
    with pytest.raises(npzfs.Error) as e:
        npzfs.mount(data / "missing.npz")
    assert e.value.exit_code == 1 and "does not exist" in e.value.message
    assert isinstance(e.value, OSError) and str(e.value) == e.value.message and "\n" not in str(e.value)
    with pytest.raises(npzfs.Error) as e:
        npzfs.mount(data / "notzip.npz")
    assert e.value.exit_code == 1 and "is not a readable .npz archive" in str(e.value)
    with pytest.raises(npzfs.Error) as e:
        npzfs.ls(data / "missing.npz")
    assert e.value.exit_code == 1
    mnt = tmp_path / "busy"
    mnt.mkdir()
    with npzfs.mount(data / "stored.npz", mnt):
        with pytest.raises(npzfs.Error) as e:
            npzfs.mount(data / "deflated.npz", mnt)
        assert e.value.exit_code == 1 and "already mounted" in str(e.value)
    with pytest.raises(npzfs.Error) as e:
        npzfs.mount(data / "stored.npz", options=["rw"])
    assert e.value.exit_code == 2 and "read-only" in str(e.value)


def test_unknown_options_run_nothing(data, nothing_left):
    with pytest.raises(TypeError, match="unexpected keyword argument 'cache_mib'; did you mean 'cache_mb'"):
        npzfs.mount(data / "stored.npz", cache_mib=5)
    with pytest.raises(TypeError, match="'foreground'"):
        npzfs.mount(data / "stored.npz", foreground=True)
    with pytest.raises(TypeError, match="takes True or False"):
        npzfs.mount(data / "stored.npz", no_index="yes")
    with pytest.raises(TypeError, match="cache_mb takes an int, not \\[1, 2\\]"):
        npzfs.mount(data / "stored.npz", cache_mb=[1, 2])
    with pytest.raises(TypeError, match="cache_mb takes an int, not 'abc'"):
        npzfs.mount(data / "stored.npz", cache_mb="abc")
    with pytest.raises(TypeError, match="takes an int"):
        npzfs.mount(data / "stored.npz", memory_mb=1.5)
    with pytest.raises(TypeError, match="list_ttl takes a duration"):
        npzfs.mount(data / "stored.npz", list_ttl=[5])
    with pytest.raises(TypeError, match="log takes a str"):
        npzfs.mount(data / "stored.npz", log=3)
    with pytest.raises(TypeError):
        npzfs.load(data / "stored.npz", bogus=1)
    with pytest.raises(TypeError):
        npzfs.ls(data / "stored.npz", cache_mb=1)
    with pytest.raises(TypeError):
        npzfs.index(data / "stored.npz", json=True)
    # No daemon started: none serves a folder of this test's.
    own = os.fsencode(str(nothing_left))
    assert not [c for c in daemon_cmdlines() if any(own in a for a in c)]


def test_binary_on_windows(monkeypatch):
    """On Windows the package runs the npzfs.exe it carries (which the
    Linux wheel under test lacks)."""
    monkeypatch.delenv("NPZFS_BINARY", raising=False)
    assert os.path.basename(npzfs.binary()) == "npzfs"
    monkeypatch.setattr(sys, "platform", "win32")
    with pytest.raises(npzfs.Error, match=r"_bin.npzfs\.exe is missing"):
        npzfs.binary()


def test_command(data):
    """The npzfs script and python -m npzfs run the bundled program: same
    output, same exit codes."""
    prog = npzfs.binary()
    script = Path(sys.executable).parent / "npzfs"
    assert script.exists() and str(script) != prog
    for args, code in [(["version"], 0), (["ls", str(data / "stored.npz")], 0), (["mout"], 2), (["ls", str(data / "missing.npz")], 1)]:
        want = subprocess.run([prog, *args], capture_output=True, text=True)
        assert want.returncode == code
        for cmd in ([str(script)], [sys.executable, "-m", "npzfs"]):
            got = subprocess.run([*cmd, *args], capture_output=True, text=True)
            assert (got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr), cmd
    version = subprocess.run([prog, "version"], capture_output=True, text=True, check=True).stdout
    assert version.startswith(f"npzfs {npzfs.__version__} (commit ")
