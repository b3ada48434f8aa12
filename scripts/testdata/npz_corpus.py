"""The npz test corpus: npz/testdata/*.npz, each with a manifest *.json.

Archives come from the writers users have: numpy's savez and
savez_compressed, Python's zipfile streaming to a pipe (data descriptors),
Info-ZIP's zip (stored, deflated, and streamed to a pipe), and a small raw
zip writer here for what those writers never produce: zip64 end records and
saturated 0xFFFFFFFF fields, Python 3.12-style local headers, unreadable
methods, encryption flags, hostile and colliding names, broken npy headers.

Each manifest is what Python and numpy read back from the archive: per
central directory entry (in order) its name, size, method and the sha256 of
its bytes, and for .npy members that numpy can parse, the array's
data_offset, data_length and the sha256 of the array bytes. The Go tests
compare npzfs against it.

Deterministic: fixed data, timestamps and environment (TZ=UTC for zip).
"""
import binascii
import bz2
import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import tempfile
import zipfile
import zlib

import numpy as np
from numpy.lib import format as npformat

FIXED_TIME = 1700000000  # 2023-11-14T22:13:20Z
DOS_DATE_TIME = (2023, 11, 14, 22, 13, 20)


# ---------------------------------------------------------------- arrays

def npy_bytes(arr):
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=True)
    return buf.getvalue()


def arrays():
    """A varied, small, deterministic set of arrays."""
    rng = np.random.default_rng(1234)
    structured = np.zeros(4, dtype=[("x", "<f4"), ("y", "<i2"), ("name", "S5")])
    structured["x"] = [1.5, 2.5, -3.0, 0.25]
    structured["y"] = [1, -2, 3, -4]
    structured["name"] = [b"a", b"bb", b"ccc", b"dddd"]
    return {
        "ints": np.arange(24, dtype="<i8").reshape(2, 3, 4),
        "floats": rng.standard_normal((5, 7)).astype("<f4"),
        "big_endian": np.arange(6, dtype=">u2"),
        "fortran": np.asfortranarray(np.arange(12, dtype="<f8").reshape(3, 4)),
        "structured": structured,
        "empty": np.zeros((0, 3), dtype="<i4"),
        "empty_1d": np.zeros(0, dtype="<f8"),
        "scalar": np.array(3.25, dtype="<f8"),
        "bools": np.array([True, False, True]),
        "unicode": np.array(["npz", "fs", "µ"], dtype="<U3"),
        "complex": np.array([1 + 2j, 3 - 4j], dtype="<c16"),
        "objects": np.array([{"a": 1}, [1, 2], "three"], dtype=object),
        "compressible": np.repeat(np.arange(64, dtype="<i4"), 512),
    }


# ---------------------------------------------------------------- raw zip writer

def dos_time(dt=DOS_DATE_TIME):
    y, mo, d, h, mi, s = dt
    return ((h << 11) | (mi << 5) | (s // 2)), (((y - 1980) << 9) | (mo << 5) | d)


def deflate(data, level=6):
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


class Entry:
    """One member for raw_zip."""

    def __init__(self, name, data=b"", method=0, flags=0, payload=None,
                 zip64_cd=False, zip64_local=False, descriptor=False, extra=b""):
        self.name = name if isinstance(name, bytes) else name.encode()
        self.data = data
        self.method = method
        self.flags = flags | (0x08 if descriptor else 0)
        if payload is None:
            payload = {0: lambda d: d, 8: deflate, 12: bz2.compress}[method](data)
        self.payload = payload
        self.zip64_cd = zip64_cd
        self.zip64_local = zip64_local
        self.descriptor = descriptor
        self.extra = extra


def raw_zip(entries, comment=b"", zip64_end=False):
    """Write entries as a zip archive, with full control of every field."""
    out = bytearray()
    central = bytearray()
    t, d = dos_time()
    for e in entries:
        offset = len(out)
        crc = zlib.crc32(e.data) & 0xFFFFFFFF
        size, csize = len(e.data), len(e.payload)
        version = 45 if (e.zip64_cd or e.zip64_local) else 20
        lextra = b""
        if e.zip64_local:
            lextra = struct.pack("<HHQQ", 1, 16, size, csize)
            lsize = lcsize = 0xFFFFFFFF
        else:
            lsize, lcsize = size, csize
        lcrc = crc
        if e.descriptor:
            lcrc = 0
            if not e.zip64_local:
                lsize = lcsize = 0
        lextra += e.extra
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, version, e.flags, e.method, t, d,
                           lcrc, lcsize, lsize, len(e.name), len(lextra))
        out += e.name + lextra + e.payload
        if e.descriptor:
            if e.zip64_local:
                out += struct.pack("<IIQQ", 0x08074B50, crc, csize, size)
            else:
                out += struct.pack("<IIII", 0x08074B50, crc, csize, size)
        cextra = b""
        if e.zip64_cd:
            cextra = struct.pack("<HHQQQ", 1, 24, size, csize, offset)
            csz, cs, coff = 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF
        else:
            csz, cs, coff = size, csize, offset
        cextra += e.extra
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, (3 << 8) | version, version,
                               e.flags, e.method, t, d, crc, cs, csz, len(e.name),
                               len(cextra), 0, 0, 0, 0o100644 << 16, coff)
        central += e.name + cextra
    cd_off, cd_size, n = len(out), len(central), len(entries)
    out += central
    if zip64_end:
        z64_off = len(out)
        out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, (3 << 8) | 45, 45, 0, 0, n, n,
                           cd_size, cd_off)
        out += struct.pack("<IIQI", 0x07064B50, 0, z64_off, 1)
        out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF,
                           0xFFFFFFFF, len(comment))
    else:
        out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, cd_size, cd_off, len(comment))
    out += comment
    return bytes(out)


# ---------------------------------------------------------------- writers

def write_numpy(path, compressed, positional=False, keyed=None):
    arrs = keyed if keyed is not None else arrays()
    save = np.savez_compressed if compressed else np.savez
    if positional:
        save(path, *arrs.values())
    else:
        save(path, **arrs)


class Pipe:
    """A write-only, non-seekable stream, as a pipe is to zipfile."""

    def __init__(self):
        self.buf = bytearray()

    def write(self, b):
        self.buf += b
        return len(b)

    def flush(self):
        pass

    def seekable(self):
        return False

    def tell(self):
        raise OSError("not seekable")


def write_zipfile_stream(path):
    pipe = Pipe()
    a = arrays()
    with zipfile.ZipFile(pipe, "w") as z:
        for key, method in (("ints", zipfile.ZIP_STORED), ("floats", zipfile.ZIP_DEFLATED),
                            ("compressible", zipfile.ZIP_DEFLATED), ("empty", zipfile.ZIP_STORED)):
            info = zipfile.ZipInfo(key + ".npy", date_time=DOS_DATE_TIME)
            info.compress_type = method
            with z.open(info, "w") as f:
                f.write(npy_bytes(a[key]))
    with open(path, "wb") as f:
        f.write(pipe.buf)


def write_infozip(path, level, stream=False):
    a = arrays()
    tmp = tempfile.mkdtemp()
    try:
        names = []
        for key in ("ints", "fortran", "structured", "compressible", "scalar"):
            p = os.path.join(tmp, key + ".npy")
            with open(p, "wb") as f:
                f.write(npy_bytes(a[key]))
            os.utime(p, (FIXED_TIME, FIXED_TIME))
            names.append(key + ".npy")
        env = dict(os.environ, TZ="UTC")
        args = ["zip", "-q", "-X", "-" + str(level)]
        if stream:
            # To a pipe zip cannot seek back: it writes data descriptors.
            proc = subprocess.run(args + ["-"] + names, cwd=tmp, env=env, check=True,
                                  stdout=subprocess.PIPE)
            with open(path, "wb") as f:
                f.write(proc.stdout)
        else:
            out = os.path.join(tmp, "out.zip")
            subprocess.run(args + [out] + names, cwd=tmp, env=env, check=True)
            shutil.copyfile(out, path)
    finally:
        shutil.rmtree(tmp)


def write_zip64(path):
    a = arrays()
    entries = [
        # Every field saturated in the central directory, Python 3.12-style
        # local header (0xFFFFFFFF sizes and a zip64 extra).
        Entry("ints.npy", npy_bytes(a["ints"]), 0, zip64_cd=True, zip64_local=True),
        Entry("compressible.npy", npy_bytes(a["compressible"]), 8, zip64_cd=True,
              zip64_local=True, descriptor=True),
        Entry("structured.npy", npy_bytes(a["structured"]), 8, zip64_cd=True, descriptor=True),
        Entry("plain.txt", b"not an array\n", 0),
    ]
    with open(path, "wb") as f:
        f.write(raw_zip(entries, comment=b"zip64 end record and locator", zip64_end=True))


def write_methods(path):
    a = arrays()
    ints = npy_bytes(a["ints"])
    entries = [
        Entry("stored.npy", ints, 0),
        Entry("bzip2.npy", ints, 12),
        # npzfs never decompresses these, so the payload need not be real.
        Entry("zstd.npy", ints, 93, payload=b"\x28\xb5\x2f\xfd" + b"\0" * 16),
        Entry("encrypted.npy", ints, 0, flags=1, payload=b"\x55" * 12 + ints),
        Entry("deflated.npy", ints, 8),
    ]
    with open(path, "wb") as f:
        f.write(raw_zip(entries))


def write_comment(path):
    a = arrays()
    data = raw_zip([Entry("ints.npy", npy_bytes(a["ints"]), 8)],
                   comment=b"an archive comment, " + b"#" * 300)
    with open(path, "wb") as f:
        f.write(data)


def broken_npy():
    good = npy_bytes(np.arange(4, dtype="<i4"))
    return {
        "bad_magic": b"\x93NUMPX" + good[6:],
        "bad_dict": good.replace(b"'descr'", b"'dscr' "),
        "short_data": npy_bytes(np.arange(100, dtype="<i8"))[:200],
        "not_npy": b"hello",
    }


def write_names(path):
    a = arrays()
    small = npy_bytes(np.arange(3, dtype="<u1"))
    other = npy_bytes(np.arange(5, dtype="<i2"))
    b = broken_npy()
    entries = [
        Entry(b"/abs.npy", small),
        Entry(b"./dot//x.npy", small, 8),
        Entry(b"up/../evil.npy", small),
        Entry(b"dup.npy", small),
        Entry(b"dup.npy", other, 8),
        Entry(b"a.npy", small),
        Entry(b"a/header.json", b'{"member": "not a view"}\n'),
        Entry(b"a/raw.bin", b"member bytes\n"),
        Entry(b"b", b"file b, shadowed by folder b/\n"),
        Entry(b"b/c.npy", small),
        Entry(b"c.npy", small),
        Entry(b"c", b"file c takes the views folder's name\n"),
        Entry(b"back\\slash.npy", small),
        Entry(b"caf\x82.npy", small),                # CP437, no UTF-8 flag
        Entry("snow\u2603.npy".encode(), small, flags=0x800),
        Entry(b"bad\xff.npy", small, flags=0x800),   # flagged UTF-8, is not
        Entry(b"nul\x00.npy", small),
        Entry(b"x" * 256 + b".npy", small),
        Entry(b"deep/er/" + b"y" * 251 + b".npy", small),  # a 255-byte name
        Entry(b"dir/", b""),
        Entry(b"", b"empty name"),
        Entry(b"./", b""),
        Entry(b"bad_magic.npy", b["bad_magic"]),
        Entry(b"bad_dict.npy", b["bad_dict"], 8),
        Entry(b"short_data.npy", b["short_data"]),
        Entry(b"not_npy.npy", b["not_npy"]),
        Entry(b".npy", small),
        Entry(b"notes.txt", b"plain file\n"),
        Entry(b"objects.npy", npy_bytes(a["objects"])),
    ]
    with open(path, "wb") as f:
        f.write(raw_zip(entries))
    # zipfile refuses this archive (the flagged name that is not UTF-8), so
    # its manifest comes from what was written.
    return entries


# ---------------------------------------------------------------- manifest

def npy_info(data):
    """data_offset, data_length and sha256 of the array bytes, or None."""
    f = io.BytesIO(data)
    try:
        version = npformat.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = npformat.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = npformat.read_array_header_2_0(f)
        else:
            return None
    except Exception:
        return None
    off = f.tell()
    if dtype.hasobject:
        length = len(data) - off
    else:
        length = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if off + length > len(data):
        return None
    arr = data[off:off + length]
    return {"data_offset": off, "data_length": length,
            "sha256": hashlib.sha256(arr).hexdigest(),
            "shape": list(shape), "fortran_order": bool(fortran), "descr": npformat.dtype_to_descr(dtype)
            if not dtype.names else None}


def python_name(raw, flags):
    """The name as Python's zipfile decodes it, or None where it refuses."""
    try:
        name = raw.decode("utf-8") if flags & 0x800 else raw.decode("cp437")
    except UnicodeDecodeError:
        return None
    return name.split("\0")[0]


def manifest_from_entries(path, entries):
    members = []
    for i, e in enumerate(entries):
        name = python_name(e.name, e.flags)
        m = {"index": i, "name": name, "name_hex": binascii.hexlify(e.name).decode(),
             "size": len(e.data), "compressed_size": len(e.payload), "method": e.method,
             "crc32": zlib.crc32(e.data) & 0xFFFFFFFF, "is_dir": e.name.endswith(b"/"),
             "readable": e.method in (0, 8) and not e.flags & 1,
             "sha256": hashlib.sha256(e.data).hexdigest()}
        if e.name.endswith(b".npy"):
            m["npy"] = npy_info(e.data)
        members.append(m)
    return {"archive": os.path.basename(path), "size": os.path.getsize(path),
            "comment": "", "members": members}


def manifest(path):
    members = []
    with zipfile.ZipFile(path) as z:
        for i, info in enumerate(z.infolist()):
            raw = info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437")
            m = {"index": i, "name": info.filename, "name_hex": binascii.hexlify(raw).decode(),
                 "size": info.file_size, "compressed_size": info.compress_size,
                 "method": info.compress_type, "crc32": info.CRC, "is_dir": info.is_dir()}
            try:
                data = z.read(info)
            except (NotImplementedError, RuntimeError):
                data = None  # a method or encryption zipfile cannot read either
            m["readable"] = data is not None and info.compress_type in (0, 8)
            if data is not None:
                m["sha256"] = hashlib.sha256(data).hexdigest()
                if info.filename.endswith(".npy"):
                    m["npy"] = npy_info(data)
            members.append(m)
        comment = z.comment.decode("latin-1")
    return {"archive": os.path.basename(path), "size": os.path.getsize(path),
            "comment": comment, "members": members}


# ---------------------------------------------------------------- driver

def generate(root):
    out = os.path.join(root, "npz", "testdata")
    os.makedirs(out, exist_ok=True)
    positional = {k: v for k, v in arrays().items() if k in ("ints", "floats", "objects")}
    slashed = {"group/x": np.arange(3, dtype="<i4"), "group/sub/y": np.ones((2, 2)),
               "top": np.array([7], dtype="<i2")}
    writers = {
        "numpy_savez.npz": lambda p: write_numpy(p, False),
        "numpy_savez_compressed.npz": lambda p: write_numpy(p, True),
        "numpy_positional.npz": lambda p: write_numpy(p, False, positional=True, keyed=positional),
        "numpy_slash_keys.npz": lambda p: write_numpy(p, True, keyed=slashed),
        "zipfile_stream.npz": write_zipfile_stream,
        "infozip_stored.npz": lambda p: write_infozip(p, 0),
        "infozip_deflated.npz": lambda p: write_infozip(p, 9),
        "infozip_stream.npz": lambda p: write_infozip(p, 6, stream=True),
        "zip64.npz": write_zip64,
        "methods.npz": write_methods,
        "comment.npz": write_comment,
        "names.npz": write_names,
    }
    for name, write in writers.items():
        path = os.path.join(out, name)
        entries = write(path)
        man = manifest_from_entries(path, entries) if entries else manifest(path)
        with open(path[:-4] + ".json", "w") as f:
            json.dump(man, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"wrote {os.path.relpath(path, root)}")
