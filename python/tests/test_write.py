"""npzfs.savez and npzfs.pack: np.load (and zipfile's testzip) of every
archive they write equals what numpy wrote, for arrays of every kind; the
layout is checked here without npzfs's code: each stored array's data
aligned in the file, and each deflated member's SOZip index parsed as the
spec describes it and every chunk inflated alone with zlib."""

import io
import os
import struct
import zipfile
import zlib

import numpy as np
import pytest
from numpy.lib import format as npformat

import npzfs
import npzfs._write

# numpy says so of the headers of format 2.0 and 3.0 the corpus needs.
pytestmark = pytest.mark.filterwarnings("ignore:Stored array in format:UserWarning")


def corpus():
    """Arrays of every kind np.savez writes: every dtype in both byte
    orders, records (nested, with subarrays, a header of format 3.0),
    Fortran order, 0-d, empty, strided, large (many chunks, past a page),
    and object arrays."""
    rng = np.random.default_rng(40)
    out = {}
    for code in ["?", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8", "g", "c8", "c16", "G"]:
        for order in "<>":
            dt = np.dtype(code).newbyteorder(order)
            out[f"{code}{'le' if order == '<' else 'be'}"] = (rng.standard_normal(37) * 100).astype(dt)
    for unit in ["D", "s", "ms", "ns", "10ms"]:
        out[f"M8_{unit}"] = np.arange(11).astype(f"M8[{unit}]")
        out[f"m8_{unit}"] = np.arange(11).astype(f">m8[{unit}]")
    out["bytes"] = np.array([b"ab", b"cde", b""], dtype="S5")
    out["unicode_be"] = np.array(["héllo", "π"], dtype=">U7")
    out["void"] = np.frombuffer(bytes(range(24)), dtype="V8")
    rec = np.dtype([("a", "<i4"), ("b", [("c", ">f8"), ("d", "u1", (2, 3))]), ("e", "S3")])
    out["records"] = np.zeros(5, dtype=rec)
    out["records"]["a"] = np.arange(5)
    out["aligned_records"] = np.zeros(4, dtype=np.dtype([("x", "u1"), ("y", "<f8")], align=True))  # padding zeroed
    out["aligned_records"]["y"] = 1.5
    out["utf8_fields"] = np.arange(6, dtype="<i2").view([("π", "<i2")])  # a header of format 3.0
    out["wide"] = np.zeros(2, dtype=[(f"f{i}", "<i2") for i in range(4000)])  # a header of format 2.0
    out["fortran"] = np.asfortranarray(rng.standard_normal((30, 70)))
    out["fortran3"] = np.asfortranarray(np.arange(2 * 3 * 4, dtype=">i4").reshape(2, 3, 4))
    out["scalar"] = np.float64(2.5)
    out["zero_d"] = np.array(7, dtype="<u2")
    out["empty"] = np.zeros((0, 3), dtype="<i2")
    out["empty_records"] = np.zeros(0, dtype=rec)
    out["strided"] = np.arange(1000, dtype="<i8")[::3]
    out["transposed"] = np.arange(600, dtype="<f4").reshape(20, 30)[:, ::2].T
    out["large"] = np.sin(np.arange(150_000, dtype="<f8") / 50)  # 1.2 MB: past the default chunk
    out["noise"] = rng.standard_normal(40_000).astype("<f4")
    out["small"] = np.arange(3, dtype="u1")
    out["objects"] = np.array([1, "two", None, {"three": 3}], dtype=object)
    out["object_records"] = np.array([(1, "x")], dtype=[("n", "<i4"), ("o", "O")])
    return out


ARRAYS = corpus()
POSITIONAL = [np.arange(5, dtype="<i4"), np.float32(1.5)]


def raw(x):
    """x's bytes as np.save writes them: its memory, padding between
    fields included, in Fortran order for a Fortran array (tobytes does
    not keep the padding)."""
    x = np.asarray(x)
    if x.flags.f_contiguous and not x.flags.c_contiguous:
        x = x.T
    if x.nbytes == 0:
        return b""
    if not x.flags.c_contiguous:
        return x.tobytes()
    return x.reshape(-1).view(np.uint8).tobytes()


def same_loaded(got_path, want, start=0):
    """np.load of got_path (an archive from byte start on) gives want:
    the same keys in order, values, dtypes, shapes and orders; zipfile's
    testzip finds no bad CRC-32."""
    with zipfile.ZipFile(got_path) as z:
        assert z.testzip() is None
    with open(got_path, "rb") as f:
        f.seek(start)
        got = np.load(f, allow_pickle=True)
        assert got.files == list(want)
        for key, value in want.items():
            if isinstance(value, bytes):  # a member that is not .npy
                assert got[key] == value, key
                continue
            a, b = got[key], np.asanyarray(value)
            assert a.dtype == b.dtype and a.shape == b.shape, key
            assert np.isfortran(a) == np.isfortran(b), key
            if b.dtype.hasobject or b.dtype.names:
                # np.load does not keep the padding between fields:
                # the members' bytes are compared apart.
                assert repr(a.tolist()) == repr(b.tolist()), key
            else:
                assert raw(a) == raw(b), key


def local_header(f, offset):
    """The local header at offset: name, method, sizes (zip64 ones read
    from its extra field), and where its data starts."""
    f.seek(offset)
    sig, _, flags, method, _, _, crc, csize, size, n, e = struct.unpack("<IHHHHHIIIHH", f.read(30))
    assert sig == 0x04034B50, f"no local header at {offset}"
    name = f.read(n).decode("utf-8" if flags & 0x800 else "cp437")
    extra = f.read(e)
    if csize == 0xFFFFFFFF or size == 0xFFFFFFFF:
        i = 0
        while struct.unpack_from("<H", extra, i)[0] != 1:
            i += 4 + struct.unpack_from("<H", extra, i + 2)[0]
        size, csize = struct.unpack_from("<QQ", extra, i + 4)
    return name, method, crc, csize, size, offset + 30 + n + e


def sozip_index(f, info, data_at):
    """The SOZip index after the member info, parsed as the spec says,
    or None when the entry after it is not one."""
    head, _, base = info.filename.rpartition("/")
    want = (head + "/" if head else "") + "." + base + ".sozip.idx"
    try:
        name, method, crc, csize, size, at = local_header(f, data_at + info.compress_size)
    except (AssertionError, struct.error):
        return None
    if name != want:
        return None
    assert method == 0 and csize == size
    f.seek(at)
    idx = f.read(size)
    assert zlib.crc32(idx) == crc
    version, skip, chunk, offset_size, usize, csize = struct.unpack_from("<IIIIQQ", idx)
    assert (version, offset_size) == (1, 8) and chunk > 0
    assert usize == info.file_size and csize == info.compress_size and usize > chunk
    count = (usize - 1) // chunk
    assert len(idx) == 32 + skip + 8 * count
    offsets = list(struct.unpack_from(f"<{count}Q", idx, 32 + skip))
    assert all(a < b for a, b in zip([0] + offsets, offsets + [csize]))  # rising strictly, inside the stream
    return chunk, offsets


def check_layout(path, chunk):
    """Each stored array's data (past its .npy header) at a multiple of
    4096 in the file (64 for one shorter than a page), as np.memmap maps
    it; each deflated member of more than one chunk followed by its SOZip
    index, each of its chunks inflating alone to its bytes; no index
    after the others. Returns how many members had one."""
    indexed = 0
    with zipfile.ZipFile(path) as z, open(path, "rb") as f:
        for info in z.infolist():
            if info.is_dir():
                continue
            name, method, _, _, _, data_at = local_header(f, info.header_offset)
            assert name == info.filename and method == info.compress_type
            data = z.read(info)
            arr = None
            if info.filename.endswith(".npy") and data[:6] == b"\x93NUMPY":
                arr = np.load(io.BytesIO(data), allow_pickle=True)
            if method == 0 and arr is not None and not arr.dtype.hasobject:
                # The header's length, from its magic: format 1.0 or later.
                hlen = 10 + struct.unpack_from("<H", data, 8)[0] if data[6] == 1 else 12 + struct.unpack_from("<I", data, 8)[0]
                at, length = data_at + hlen, len(data) - hlen
                align = 4096 if length >= 4096 else 64
                assert at % align == 0, f"{info.filename}: data at {at}"
                if length:
                    m = np.memmap(path, dtype=arr.dtype, mode="r", offset=at, shape=arr.shape, order="F" if np.isfortran(arr) else "C")
                    assert m.ctypes.data % align == 0
                    assert raw(m) == data[hlen:]
                    del m
            if method != 8:
                continue
            x = sozip_index(f, info, data_at)
            if info.file_size <= chunk:
                assert x is None, f"{info.filename}: an index for one chunk"
                continue
            assert x is not None, f"{info.filename}: no SOZip index"
            size, offsets = x
            assert size == chunk
            bounds = [0] + offsets + [info.compress_size]
            for i in range(len(bounds) - 1):
                f.seek(data_at + bounds[i])
                c = f.read(bounds[i + 1] - bounds[i])
                if i < len(bounds) - 2:  # a sync flush, then a full flush
                    assert c.endswith(b"\x00\x00\xff\xff\x00\x00\x00\xff\xff"), f"{info.filename}: chunk {i}"
                d = zlib.decompressobj(-15)
                out = d.decompress(c)
                assert out == data[i * chunk:(i + 1) * chunk], f"{info.filename}: chunk {i}"
                assert d.eof == (i == len(bounds) - 2)
            indexed += 1
    return indexed


@pytest.fixture
def work(tmp_path):
    """A folder of the test's own (conftest keeps tmp_path/tmp)."""
    d = tmp_path / "work"
    d.mkdir()
    return d


def numpy_members(path):
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("chunk", [4096, 1 << 20])
def test_savez(work, compress, chunk):
    path = work / "out.npz"
    npzfs.savez(path, *POSITIONAL, compress=compress, chunk=chunk, **ARRAYS)
    want = dict(ARRAYS, arr_0=POSITIONAL[0], arr_1=POSITIONAL[1])
    same_loaded(path, want)
    assert check_layout(path, chunk) >= (1 if compress else 0)
    # Every member is byte for byte what np.savez writes.
    np.savez(work / "numpy.npz", *POSITIONAL, **ARRAYS)
    assert numpy_members(path) == numpy_members(work / "numpy.npz")
    assert sorted(p.name for p in work.iterdir()) == ["numpy.npz", "out.npz"]  # no temporary file left


class Stream(io.RawIOBase):
    """A file that cannot seek."""

    def __init__(self):
        self.buf = bytearray()

    def writable(self):
        return True

    def write(self, b):
        self.buf += bytes(b)
        return len(b)


@pytest.mark.parametrize("compress", [False, True])
def test_savez_file_objects(work, compress):
    # A file that cannot seek, and one written from past its start.
    s = Stream()
    npzfs.savez(s, compress=compress, chunk=4096, **ARRAYS)
    (work / "stream.npz").write_bytes(s.buf)
    same_loaded(work / "stream.npz", ARRAYS)
    assert check_layout(work / "stream.npz", 4096) >= (1 if compress else 0)
    with open(work / "prefixed.npz", "wb") as f:
        f.write(b"#" * 1000)
        npzfs.savez(f, compress=compress, chunk=4096, **ARRAYS)
    same_loaded(work / "prefixed.npz", ARRAYS, 1000)
    check_layout(work / "prefixed.npz", 4096)
    b = io.BytesIO()
    npzfs.savez(b, POSITIONAL[0])
    b.seek(0)
    assert np.load(b)["arr_0"].tolist() == POSITIONAL[0].tolist()


def test_savez_zip64(work, monkeypatch):
    monkeypatch.setattr(npzfs._write, "_force_zip64", True)
    for compress in (False, True):
        path = work / f"zip64-{compress}.npz"
        npzfs.savez(path, compress=compress, chunk=4096, **ARRAYS)
        assert b"PK\x06\x06" in path.read_bytes()  # the zip64 end record
        same_loaded(path, ARRAYS)
        check_layout(path, 4096)


def test_savez_names_and_errors(work):
    npzfs.savez(str(work / "noext"), x=np.arange(3))
    assert np.load(work / "noext.npz")["x"].tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="Cannot use un-named variables and keyword arr_0"):
        npzfs.savez(work / "a.npz", np.arange(2), arr_0=np.arange(3))
    with pytest.raises(ValueError, match="chunk"):
        npzfs.savez(work / "a.npz", x=np.arange(2), chunk=100)
    with pytest.raises(TypeError, match="compress"):
        npzfs.savez(work / "a.npz", x=np.arange(2), compress="yes")

    class Broken:
        def __array__(self, *args, **kwargs):
            raise RuntimeError("no array here")

    (work / "kept.npz").write_bytes(b"the old archive")
    with pytest.raises(RuntimeError, match="no array here"):
        npzfs.savez(work / "kept.npz", x=np.arange(5000), y=Broken())
    assert (work / "kept.npz").read_bytes() == b"the old archive"
    assert sorted(p.name for p in work.iterdir()) == ["kept.npz", "noext.npz"]


def inputs(work):
    """Archives numpy and zipfile write of the corpus: np.savez (zip64
    local headers), np.savez_compressed, zipfile streaming to a file that
    cannot seek (data descriptors), zipfile with zip64 records forced."""
    out = {}
    out["savez"] = work / "savez.npz"
    np.savez(out["savez"], **ARRAYS)
    out["compressed"] = work / "compressed.npz"
    np.savez_compressed(out["compressed"], **ARRAYS)
    s = Stream()
    with zipfile.ZipFile(s, "w", zipfile.ZIP_DEFLATED) as z:
        for key, value in ARRAYS.items():
            with z.open(key + ".npy", "w") as w:
                npformat.write_array(w, np.asanyarray(value), allow_pickle=True)
        z.writestr("notes.txt", b"not an array\n" * 500)
    out["stream"] = work / "stream.npz"
    out["stream"].write_bytes(s.buf)
    out["zip64"] = work / "zip64.npz"
    with zipfile.ZipFile(out["zip64"], "w", zipfile.ZIP_STORED) as z:
        for key, value in ARRAYS.items():
            with z.open(key + ".npy", "w", force_zip64=True) as w:
                npformat.write_array(w, np.asanyarray(value), allow_pickle=True)
    return out


@pytest.mark.parametrize("compress", ["keep", "none", "deflate", "auto"])
def test_pack(work, compress):
    for kind, src in inputs(work).items():
        dst = work / f"packed-{kind}.npz"
        line = npzfs.pack(src, dst, chunk=4096, compress=compress)
        assert line.startswith(f"{dst}: {len(numpy_members(src))} members (")
        with np.load(src, allow_pickle=True) as z:
            want = {k: z[k] for k in z.files}
        same_loaded(dst, want)
        indexed = check_layout(dst, 4096)
        # "large" is deflated past a chunk unless stored; notes.txt keeps
        # its method (deflated, past a chunk) whatever the mode.
        deflated = compress in ("deflate", "auto") or kind == "stream" or (compress == "keep" and kind == "compressed")
        assert indexed >= deflated
        assert numpy_members(dst) == numpy_members(src)
        src_infos = zipfile.ZipFile(src).infolist()
        dst_infos = zipfile.ZipFile(dst).infolist()
        for a, b in zip(src_infos, dst_infos):
            arrays = a.filename.endswith(".npy") and not np.load(src, allow_pickle=True)[a.filename[:-4]].dtype.hasobject
            if not arrays or compress == "keep":
                assert a.compress_type == b.compress_type, a.filename
            elif compress == "none":
                assert b.compress_type == zipfile.ZIP_STORED
            elif compress == "deflate":
                assert b.compress_type == zipfile.ZIP_DEFLATED
    files = sorted(p.name for p in work.iterdir())
    assert not [f for f in files if f.startswith(".")], files


def test_pack_default_chunk(work):
    src = inputs(work)["compressed"]
    dst = work / "packed.npz"
    npzfs.pack(src, dst)
    with np.load(src, allow_pickle=True) as z:
        same_loaded(dst, {k: z[k] for k in z.files})
    assert check_layout(dst, 1 << 20) == 1  # "large" alone is past a chunk


def test_pack_refuses(work):
    bad = work / "bzip2.npz"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("ok.npy", b"x")
        z.writestr("b.npy", b"y" * 100, compress_type=zipfile.ZIP_BZIP2)
    (work / "notzip.npz").write_bytes(b"not a zip archive\n" * 10)
    for src, why in [(bad, 'member "b.npy" uses compression method 12'), (work / "notzip.npz", "end of central directory")]:
        with pytest.raises(npzfs.Error) as e:
            npzfs.pack(src, work / "out.npz")
        assert e.value.exit_code == 1 and why in str(e.value) and "\n" not in str(e.value)
        assert str(e.value).startswith("npzfs pack: ")
    with pytest.raises(TypeError, match="did you mean 'chunk'"):
        npzfs.pack(bad, work / "out.npz", chunks=4096)
    with pytest.raises(npzfs.Error) as e:
        npzfs.pack(bad, work / "out.npz", compress="zstd")
    assert e.value.exit_code == 2
    assert sorted(p.name for p in work.iterdir()) == ["bzip2.npz", "notzip.npz"]


def test_pack_served(work):
    """npzfs reads what savez writes, every CRC-32 checked."""
    path = work / "s.npz"
    npzfs.savez(path, compress=True, chunk=4096, **ARRAYS)
    members = npzfs.ls(path, verify=True)
    assert len(members) == len(ARRAYS) and all(m["verify"] == "ok" for m in members)


def test_pack_remote(nginx, data, work):
    """pack reads a remote archive as ls does, headers kept out of the
    command line."""
    with np.load(data / "deflated.npz") as z:
        want = {k: z[k] for k in z.files}
    npzfs.pack(f"{nginx}/deflated.npz", work / "public.npz", chunk=4096)
    npzfs.pack(f"{nginx}/private/deflated.npz", work / "private.npz", chunk=4096, header=["Authorization: Bearer sesame"])
    for name in ("public.npz", "private.npz"):
        same_loaded(work / name, want)
        assert check_layout(work / name, 4096) >= 1
    with pytest.raises(npzfs.Error) as e:
        npzfs.pack(f"{nginx}/private/deflated.npz", work / "denied.npz")
    assert e.value.exit_code == 1 and str(e.value).startswith("npzfs pack: ") and "\n" not in str(e.value)
    assert sorted(p.name for p in work.iterdir()) == ["private.npz", "public.npz"]
