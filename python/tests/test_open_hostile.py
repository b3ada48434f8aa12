"""npzfs.open against what it must not trust: a server that breaks the
protocol in every way a reply can (a fake one, in Python), and hostile
archives, local and over HTTP. Nothing may crash or hang, and no byte may
come out wrong: every failure is npzfs.Error, one line.

scripts/test-python.sh runs this file also in a mount namespace with no
/dev/fuse."""

import gc
import io
import struct
import warnings
import sys
import zipfile
import zlib

import numpy as np
import pytest

import npzfs
from conftest import serve_pids
from test_open import exact


@pytest.fixture(autouse=True)
def no_server_left():
    yield
    gc.collect()
    assert not serve_pids()


# A server that answers hello and table as npzfs serve does, for an
# archive of one array, and breaks the protocol in the reply to a read
# as $FAKE_MODE says.
FAKE = r'''#!PYTHON
import json, os, struct, sys
mode = os.environ["FAKE_MODE"]
src, out = sys.stdin.buffer, sys.stdout.buffer
buf = __import__("io").BytesIO()
__import__("numpy").save(buf, __import__("numpy").arange(50000, dtype="<f8"))
member = buf.getvalue()

def send(meta, data=b"", magic=b"NZS1", mlen=None, dlen=None):
    m = json.dumps(meta).encode() if isinstance(meta, dict) else meta
    out.write(magic + struct.pack("<II", len(m) if mlen is None else mlen, len(data) if dlen is None else dlen) + m + data)
    out.flush()

while True:
    hdr = src.read(12)
    if len(hdr) < 12:
        sys.exit(0)
    _, m, d = struct.unpack("<4sII", hdr)
    q = json.loads(src.read(m))
    rid, kind = q["id"], q["kind"]
    if kind == "hello":
        send({"id": rid, "kind": "hello", "version": 1, "limits": {"max_chunk": 65536, "max_reply_meta": 1 << 20}})
    elif kind == "table":
        e = {"index": 0, "name": "a.npy", "key": "a", "kind": "member", "size": len(member), "method": "deflate", "readable": True}
        if mode == "table_lies":
            e["name"] = "b.npy"
        send({"id": rid, "kind": "table", "first": 0, "total": 1, "members": [e]})
    elif kind == "read":
        off, n = q["offset"], q["length"]
        data = member[off:off + n]
        first = off < 128
        if first or mode == "good":
            for i in range(0, max(len(data), 1), 65536):
                part = data[i:i + 65536]
                send({"id": rid, "kind": "data", "offset": off + i, "last": i + 65536 >= len(data)}, part)
        elif mode == "bad_magic":
            send({"id": rid, "kind": "data", "offset": off, "last": True}, data, magic=b"XXXX")
        elif mode == "huge_meta":
            send({"id": rid}, mlen=1 << 30)
        elif mode == "huge_data":
            send({"id": rid, "kind": "data", "offset": off, "last": True}, data, dlen=1 << 30)
        elif mode == "wrong_offset":
            send({"id": rid, "kind": "data", "offset": off + 8, "last": True}, data[:-8])
        elif mode == "short":
            send({"id": rid, "kind": "data", "offset": off, "last": True}, data[:-8])
        elif mode == "overrun":
            send({"id": rid, "kind": "data", "offset": off, "last": True}, data + b"12345678")
        elif mode == "unknown_id":
            send({"id": rid + 1000, "kind": "data", "offset": off, "last": True}, data)
        elif mode == "not_json":
            send(b"{this is not json")
        elif mode == "no_kind":
            send({"id": rid}, b"")
        elif mode == "closed_reply":
            send({"id": rid, "kind": "table", "first": 0, "total": 0, "members": []})
        elif mode == "error":
            send({"id": rid, "kind": "error", "code": "read", "message": "the disk\nis on fire"})
        elif mode == "dies_mid_reply":
            out.write(b"NZS1" + struct.pack("<II", 10, 0) + b"{")
            out.flush()
            os._exit(3)
        elif mode == "exits":
            sys.exit(0)
        elif mode == "silent_exit_error":
            sys.stderr.write("npzfs serve: something went wrong\n")
            sys.exit(1)
'''

MODES = ["bad_magic", "huge_meta", "huge_data", "wrong_offset", "short", "overrun", "unknown_id", "not_json",
         "no_kind", "closed_reply", "error", "dies_mid_reply", "exits", "silent_exit_error"]


@pytest.fixture
def fake(tmp_path, monkeypatch, data):
    """Makes npzfs.open run the fake server: an http URL, so that every
    member is read through it."""
    prog = tmp_path / "fake-npzfs"
    prog.write_text(FAKE.replace("PYTHON", sys.executable))
    prog.chmod(0o755)
    monkeypatch.setenv("NPZFS_BINARY", str(prog))

    def use(mode):
        monkeypatch.setenv("FAKE_MODE", mode)
        return "http://fake.invalid/a.npz"
    return use


def test_fake_server_good(fake):
    """The fake server, behaving, serves its array exactly (the modes
    below break only what they say)."""
    with npzfs.open(fake("good")) as z:
        assert z.files == ["a"]
        exact(z["a"][123:45678:7], np.arange(50000, dtype="<f8")[123:45678:7])


@pytest.mark.parametrize("mode", MODES)
def test_hostile_replies(fake, mode):
    """Each way of breaking the protocol fails the read in flight, and
    every later call, with npzfs.Error in one line; the fake server is
    stopped; nothing hangs."""
    z = npzfs.open(fake(mode))
    try:
        with pytest.raises(npzfs.Error) as e:
            a = z["a"]  # its header reads well: the fake breaks reads past it
            np.asarray(a)
        msg = str(e.value)
        assert "\n" not in msg and msg
        if mode == "error":
            assert "the disk is on fire" in msg
        elif mode == "silent_exit_error":
            assert msg == "npzfs serve: something went wrong" and e.value.exit_code == 1
        else:
            assert "broke the protocol" in msg or "exited" in msg, msg
        if mode != "error":  # an error reply is an answer, not a broken server
            with pytest.raises(npzfs.Error):
                z["a"]
    finally:
        z.close()


def test_server_and_zipfile_disagree(fake, tmp_path):
    """A server whose table names a member otherwise than Python's
    zipfile does is not trusted with it."""
    fake("table_lies")
    path = tmp_path / "a.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a.npy", npy(np.arange(50000, dtype="<f8")))
    with npzfs.open(path) as z:
        with pytest.raises(npzfs.Error, match="b.npy"):
            z["a"]


def zip_bytes(members):
    """A zip of (name, bytes, method) members, written by zipfile."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, b, method in members:
            z.writestr(zipfile.ZipInfo(name), b, compress_type=method)
    return bytearray(buf.getvalue())


def npy(a):
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def hostile_archives():
    """Archives that lie, each with the keys that must fail and those
    that must read exactly."""
    out = {}
    good = np.arange(4000, dtype="<i4")
    big = np.arange(1 << 18, dtype="<f8")  # 2 MiB: more than one span
    # A deflate stream damaged in its middle: bytes before the damage
    # read, a read across it fails; never a wrong byte.
    b = zip_bytes([("d.npy", npy(big), zipfile.ZIP_DEFLATED), ("ok.npy", npy(good), zipfile.ZIP_STORED)])
    start = 30 + len("d.npy")
    comp = zipfile.ZipFile(io.BytesIO(bytes(b))).getinfo("d.npy").compress_size
    for i in range(start + comp // 2, start + comp // 2 + 64):
        b[i] ^= 0x5A
    out["damaged.npz"] = (b, {"d": "read"}, {"ok": good})
    # Headers that declare more data than their member holds.
    short = npy(good)[:-100]
    out["short.npz"] = (zip_bytes([("s.npy", short, zipfile.ZIP_STORED), ("t.npy", short, zipfile.ZIP_DEFLATED), ("ok.npy", npy(good), zipfile.ZIP_DEFLATED)]),
                        {"s": "need", "t": "need"}, {"ok": good})
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000000,), }"
    huge = b"\x93NUMPY\x01\x00" + struct.pack("<H", 118) + (header + " " * (117 - len(header)) + "\n").encode() + b"\0" * 8
    out["huge.npz"] = (zip_bytes([("h.npy", huge, zipfile.ZIP_STORED), ("g.npy", huge, zipfile.ZIP_DEFLATED)]), {"h": "need", "g": "need"}, {})
    # A local header that names another member; a member flagged encrypted.
    b = zip_bytes([("x.npy", npy(good), zipfile.ZIP_STORED), ("ok.npy", npy(good), zipfile.ZIP_STORED)])
    b[30:35] = b"y.npy"
    out["misnamed.npz"] = (b, {"x": 'names "y.npy"'}, {"ok": good})
    b = zip_bytes([("e.npy", npy(good), zipfile.ZIP_STORED)])
    b[6] |= 1
    cd = b.rindex(b"PK\x01\x02")
    b[cd + 8] |= 1
    out["encrypted.npz"] = (b, {"e": "encrypted"}, {})
    # A header numpy refuses (too long for np.load's default bound).
    wide = np.zeros(2, [(f"f{i}", "<i4") for i in range(800)])
    out["wide.npz"] = (zip_bytes([("w.npy", npy(wide), zipfile.ZIP_DEFLATED)]), {"w": "max_header_size"}, {})
    return out


@pytest.mark.parametrize("name", sorted(hostile_archives()))
@pytest.mark.parametrize("where", ["local", "http"])
def test_hostile_archives(name, where, data, nginx):
    b, failing, reading = hostile_archives()[name]
    (data / "hostile").mkdir(exist_ok=True)
    (data / "hostile" / name).write_bytes(bytes(b))
    src = str(data / "hostile" / name) if where == "local" else f"{nginx}/hostile/{name}"
    with npzfs.open(src) as z:
        for key, want in reading.items():
            exact(np.asarray(z[key]), want)
        for key, mention in failing.items():
            with pytest.raises(npzfs.Error) as e:
                a = z[key]
                if isinstance(a, npzfs.LazyArray) and name == "damaged.npz":
                    ref = np.arange(1 << 18, dtype="<f8")
                    exact(a[:1000], ref[:1000])  # before the damage: exact
                np.asarray(a)
            assert "\n" not in str(e.value), str(e.value)
            if mention != "read":
                assert mention in str(e.value), str(e.value)


def test_bzip2_read_as_np_load_reads_it(data, nginx):
    """A member of a method npzfs does not read is read whole through
    zipfile in a local archive, as np.load reads it; remote, it cannot be
    read."""
    path = data / "bz.npz"
    good = np.arange(1000, dtype=">i2")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_BZIP2) as z:
        z.writestr("b.npy", npy(good))
    with npzfs.open(path) as z:
        exact(z["b"], good)
    with npzfs.open(f"{nginx}/bz.npz") as z:
        with pytest.raises(npzfs.Error, match="bzip2"):
            z["b"]


def zip_variants(tmp_path):
    """Zips as writers make them, and as they should not: numpy's, with a
    comment, with bytes before them, zip64 records, names in CP437 and
    UTF-8 and with a NUL, folders, a name twice; then damaged ones."""
    a = npy(np.arange(100, dtype="<i4"))
    out = {}

    def write(name, members, comment=b"", **kw):
        p = tmp_path / name
        with zipfile.ZipFile(p, "w", **kw) as z, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a name twice, on purpose
            z.comment = comment
            for n, b, method in members:
                info = n if isinstance(n, zipfile.ZipInfo) else zipfile.ZipInfo(n)
                info.compress_type = method
                z.writestr(info, b)
        out[name] = p.read_bytes()

    write("plain.npz", [("a.npy", a, zipfile.ZIP_STORED), ("b.npy", a, zipfile.ZIP_DEFLATED), ("dir/", b"", zipfile.ZIP_STORED)])
    write("comment.npz", [("a.npy", a, zipfile.ZIP_STORED)], comment=b"PK\x05\x06 a comment that looks like a record" * 10)
    write("names.npz", [("caf\u00e9.npy", a, zipfile.ZIP_STORED), ("nul\0x.npy", a, zipfile.ZIP_STORED), ("a.npy", a, zipfile.ZIP_STORED), ("a.npy", a, zipfile.ZIP_DEFLATED)])
    cp437 = zipfile.ZipInfo("x.npy")
    with zipfile.ZipFile(tmp_path / "cp.npz", "w") as z:
        z.writestr(cp437, a)
    b = bytearray((tmp_path / "cp.npz").read_bytes())
    for at in (30, b.rindex(b"PK\x01\x02") + 46):
        b[at] = 0x82  # a name byte outside ASCII, not flagged UTF-8: CP437's e-acute
    out["cp437.npz"] = bytes(b)
    out["prepended.npz"] = b"#!/bin/sh\nexit 0\n" * 30 + out["plain.npz"]
    with zipfile.ZipFile(tmp_path / "z64.npz", "w") as z:
        with z.open("big.npy", "w", force_zip64=True) as f:
            f.write(a)
        z.writestr("small.npy", a)
    out["zip64.npz"] = (tmp_path / "z64.npz").read_bytes()
    z64 = bytearray(out["zip64.npz"])  # zip64 end records, as zip64 writers put them
    end = z64.rindex(b"PK\x05\x06")
    cd_size, cd_off = struct.unpack_from("<LL", z64, end + 12)
    rec = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, 2, 2, cd_size, cd_off)
    loc = struct.pack("<4sLQL", b"PK\x06\x07", 0, end, 1)
    z64[end + 12:end + 20] = b"\xff" * 8
    out["zip64end.npz"] = bytes(z64[:end] + rec + loc + z64[end:])
    plain = out["plain.npz"]
    out["truncated_cd.npz"] = plain[:plain.rindex(b"PK\x01\x02") + 10] + plain[plain.rindex(b"PK\x05\x06"):]
    out["bad_utf8.npz"] = plain.replace(b"a.npy", b"\xff.npy").replace(b"\x14\x00\x00\x00", b"\x14\x00\x00\x08")
    out["not_zip.npz"] = b"just some bytes, no end record" * 100
    return out


def test_directory_as_zipfile_reads_it(tmp_path):
    """npzfs.open's reader of a central directory gives what zipfile
    gives, entry by entry, or refuses what zipfile refuses."""
    for name, b in zip_variants(tmp_path).items():
        try:
            want = [(i.filename, i.orig_filename, i.header_offset, i.compress_size, i.file_size, i.compress_type, i.flag_bits, i.CRC)
                    for i in zipfile.ZipFile(io.BytesIO(b)).infolist()]
        except (zipfile.BadZipFile, UnicodeDecodeError, NotImplementedError):
            want = None
        try:
            got = [tuple(e) for e in npzfs._zipdir.read(io.BytesIO(b), len(b))]
        except npzfs._zipdir.BadDirectory:
            got = None
        assert got == want, name
        if want is None:
            continue
        path = tmp_path / name
        path.write_bytes(b)
        ref = np.lib.npyio.NpzFile(io.BytesIO(b))  # np.load's reader of an .npz, whatever precedes the zip
        with npzfs.open(path) as z:
            assert z.files == ref.files, name
            for key in ref.files:
                if isinstance(ref[key], bytes):
                    assert z[key] == ref[key]
                else:
                    exact(np.asarray(z[key]), ref[key])
