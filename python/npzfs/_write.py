"""Writing archives np.load reads as it reads np.savez's, laid out for
random access (docs/archive.md): :func:`savez` writes arrays so, in pure
Python; :func:`pack` rewrites an archive so, with the npzfs program.

The layout: a stored array's data (past its .npy header) starts at a
multiple of 4096 bytes in the file (of 64 when it is shorter than a page),
its local header padded with an extra field (ID 0xd935, as Android's
zipalign lays it out); a deflated member is compressed in chunks, each
alone (on threads: zlib releases the GIL), ending with a sync flush and a
full flush so that each inflates alone, and a hidden SOZip index (a
stored ``.NAME.sozip.idx`` with a local header but no central directory
record) follows it, saying where each chunk starts.
"""

from __future__ import annotations

import concurrent.futures
import io
import os
import struct
import time
import zlib
from collections import deque
from typing import IO, TYPE_CHECKING, Any, Deque, Iterable, Iterator, List, Tuple, Union, cast

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["pack", "savez"]

PAGE = 4096  # the alignment of a stored array's data of a page or more
LINE = 64  # of a shorter one's: a multiple of every numpy item's alignment
DEFAULT_CHUNK = 1 << 20
MIN_CHUNK, MAX_CHUNK = 4 << 10, 64 << 20

_LEVEL = 6  # zlib's level, as np.savez_compressed deflates
_PADDING_ID = 0xD935
_PADDING_FIXED = 6  # the padding field's ID, length and alignment
_U32 = 0xFFFFFFFF
_FULL_FLUSH = b"\x00\x00\x00\xff\xff"

# Tests set this to write zip64 records for every member and at the end,
# as an archive of members over 4 GiB has them.
_force_zip64 = False


def _dos_time(t: time.struct_time) -> Tuple[int, int]:
    """An MS-DOS date and time, as zipfile writes them."""
    year = min(max(t.tm_year, 1980), 2107)
    return (year - 1980) << 9 | t.tm_mon << 5 | t.tm_mday, t.tm_hour << 11 | t.tm_min << 5 | t.tm_sec // 2


class _Entry:
    """An entry as the central directory lists it."""

    def __init__(self, name: str, method: int, when: Tuple[int, int]) -> None:
        self.name = name.encode("utf-8")
        self.flags = 0x800 if not name.isascii() else 0
        self.method = method
        self.date, self.time = when
        self.crc = 0
        self.csize = 0
        self.size = 0
        self.offset = 0
        self.zip64 = False  # the local header holds its sizes in zip64
        self.align = 0  # the alignment of the byte skip bytes into its data
        self.skip = 0

    def padding(self, base: int) -> int:
        """The length of the local header's padding field, for an archive
        that starts at base in its file (alignment is of positions in the
        file)."""
        if not self.align:
            return 0
        at = base + self.offset + 30 + len(self.name) + (20 if self.zip64 else 0) + self.skip
        p = -at % self.align
        while 0 < p < _PADDING_FIXED:
            p += self.align
        return p

    def local(self, base: int) -> bytes:
        """The local header, with the sizes and CRC-32 as they are now."""
        csize, size, version = self.csize, self.size, 20
        extra = b""
        if self.zip64:
            csize, size, version = _U32, _U32, 45
            extra = struct.pack("<HHQQ", 1, 16, self.size, self.csize)
        p = self.padding(base)
        if p:
            extra += struct.pack("<HHH", _PADDING_ID, p - 4, self.align) + bytes(p - _PADDING_FIXED)
        return struct.pack("<IHHHHHIIIHH", 0x04034B50, version, self.flags, self.method, self.time, self.date,
                           self.crc, csize, size, len(self.name), len(extra)) + self.name + extra

    def central(self) -> bytes:
        """The central directory record, with zip64 fields where needed."""
        z64 = b""
        fields = []
        for v in (self.size, self.csize, self.offset):
            if _force_zip64 or v >= _U32:
                z64 += struct.pack("<Q", v)
                fields.append(_U32)
            else:
                fields.append(v)
        extra = struct.pack("<HH", 1, len(z64)) + z64 if z64 else b""
        version = 45 if z64 or self.zip64 else 20
        return struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 3 << 8 | version, version, self.flags, self.method,
                           self.time, self.date, self.crc, fields[1], fields[0], len(self.name), len(extra), 0, 0, 0,
                           0o100644 << 16, fields[2]) + self.name + extra


def _end(count: int, start: int, size: int, at: int) -> bytes:
    """The end records of a central directory of count records, size
    bytes at start, written at at."""
    out = b""
    if _force_zip64 or count >= 0xFFFF or start >= _U32 or size >= _U32:
        out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 3 << 8 | 45, 45, 0, 0, count, count, size, start)
        out += struct.pack("<IIQI", 0x07064B50, 0, at, 1)
    return out + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, min(count, 0xFFFF), min(count, 0xFFFF),
                             min(size, _U32), min(start, _U32), 0)


def _sozip_index(chunk: int, size: int, csize: int, offsets: List[int]) -> bytes:
    """A SOZip index (sozip/sozip-spec 0.5)."""
    return struct.pack("<IIIIQQ", 1, 0, chunk, 8, size, csize) + struct.pack(f"<{len(offsets)}Q", *offsets)


def _sozip_name(name: str) -> str:
    head, _, base = name.rpartition("/")
    return (head + "/" if head else "") + "." + base + ".sozip.idx"


def _deflate(chunk: "Union[bytes, memoryview]", last: bool) -> bytes:
    """chunk deflated alone: ended by a sync flush and a full flush, or
    for a member's last chunk by the final block."""
    c = zlib.compressobj(_LEVEL, zlib.DEFLATED, -15)
    out = c.compress(chunk)
    if last:
        return out + c.flush()
    return out + c.flush(zlib.Z_SYNC_FLUSH) + c.flush(zlib.Z_FULL_FLUSH)


def _rechunk(pieces: Iterable["Union[bytes, memoryview]"], size: int) -> Iterator["Union[bytes, memoryview]"]:
    """The bytes of pieces in chunks of size (the last shorter), slices
    of the pieces where a chunk lies in one."""
    pending = bytearray()
    for piece in pieces:
        mv = memoryview(piece).cast("B")
        while len(mv):
            if not pending and len(mv) >= size:
                yield mv[:size]
                mv = mv[size:]
                continue
            take = min(size - len(pending), len(mv))
            pending += mv[:take]
            mv = mv[take:]
            if len(pending) == size:
                yield bytes(pending)
                pending = bytearray()
    if pending:
        yield bytes(pending)


def _may_need_zip64(size: int) -> bool:
    """Whether a member of size bytes needs, or deflated may need, zip64
    sizes in its local header (a margin of 1/16 for deflate's growth)."""
    return _force_zip64 or size >= _U32 - _U32 // 16


class _Writer:
    """Writes an archive to f from its position: local headers and data
    as members come, then the central directory and end records."""

    def __init__(self, f: IO[bytes], chunk: int) -> None:
        self.f = f
        self.chunk = chunk
        self.pos = 0  # bytes written
        self.entries: List[_Entry] = []
        try:
            self.seekable = bool(f.seekable())
            self.base = f.tell() if self.seekable else 0
        except (AttributeError, OSError, ValueError):
            self.seekable, self.base = False, 0
        self.workers = max(os.cpu_count() or 1, 1)
        self.pool = concurrent.futures.ThreadPoolExecutor(self.workers)

    def write(self, b: "Union[bytes, memoryview]") -> None:
        n = len(memoryview(b).cast("B"))
        self.f.write(b)
        self.pos += n

    def entry(self, name: str, method: int, size: int) -> _Entry:
        e = _Entry(name, method, _dos_time(time.localtime()))
        e.size, e.offset, e.zip64 = size, self.pos, _may_need_zip64(size)
        return e

    def stored(self, name: str, pieces: "Any", size: int, align: int, skip: int) -> None:
        """Writes a stored member: pieces() gives its bytes (twice: its
        CRC-32 goes before them)."""
        e = self.entry(name, 0, size)
        e.csize, e.align, e.skip = size, align, skip
        n = 0
        for p in pieces():
            e.crc = zlib.crc32(p, e.crc)
            n += len(memoryview(p).cast("B"))
        if n != size:
            raise ValueError(f"npzfs.savez: {name}: {n} bytes, where {size} were expected")
        self.write(e.local(self.base))
        for p in pieces():
            self.write(p)
        self.entries.append(e)

    def deflated(self, name: str, pieces: "Iterable[Union[bytes, memoryview]]", size: int) -> None:
        """Writes a deflated member in chunks compressed on threads, each
        alone, and its SOZip index after it when it has more than one."""
        e = self.entry(name, 8, size)
        if self.seekable:
            self.write(e.local(self.base))  # written again with its sizes
        out: List["Union[bytes, memoryview]"] = []
        offsets: List[int] = []
        done = 0

        def take(job: "concurrent.futures.Future[bytes]") -> None:
            nonlocal done
            c = job.result()
            if done:
                offsets.append(e.csize)
            done += 1
            e.csize += len(c)
            if self.seekable:
                self.write(c)
            else:
                out.append(c)

        queue: Deque["concurrent.futures.Future[bytes]"] = deque()
        n = 0
        chunks = _rechunk(pieces, self.chunk)
        for c in chunks:
            e.crc = zlib.crc32(c, e.crc)
            n += len(c)
            queue.append(self.pool.submit(_deflate, c, n == size))
            while len(queue) > 2 * self.workers:
                take(queue.popleft())
        if n == 0:
            queue.append(self.pool.submit(_deflate, b"", True))
        while queue:
            take(queue.popleft())
        if n != size:
            raise ValueError(f"npzfs.savez: {name}: {n} bytes, where {size} were expected")
        if self.seekable:
            end = self.pos
            self.f.seek(self.base + e.offset)
            self.f.write(e.local(self.base))
            self.f.seek(self.base + end)
        else:
            self.write(e.local(self.base))
            for c in out:
                self.write(c)
        if offsets:
            self.index(e, offsets)
        self.entries.append(e)

    def index(self, e: _Entry, offsets: List[int]) -> None:
        """Writes e's SOZip index, with a local header and no directory
        record."""
        idx = _sozip_index(self.chunk, e.size, e.csize, offsets)
        ie = self.entry(_sozip_name(e.name.decode("utf-8")), 0, len(idx))
        ie.csize, ie.crc, ie.flags = len(idx), zlib.crc32(idx), e.flags
        self.write(ie.local(self.base))
        self.write(idx)

    def close(self) -> None:
        start = self.pos
        for e in self.entries:
            self.write(e.central())
        self.write(_end(len(self.entries), start, self.pos - start, self.pos))
        self.f.flush()


def _npy_header(arr: "np.ndarray[Any, Any]") -> bytes:
    """arr's .npy header, as np.save writes it (numpy's own writer picks
    the format version)."""
    from numpy.lib import format as untyped

    fmt: Any = untyped  # numpy's .npy writer, whose stubs leave it untyped
    d = fmt.header_data_from_array_1_0(arr)
    bio = io.BytesIO()
    write = getattr(fmt, "_write_array_header", None)
    if write is not None:
        write(bio, d, None)
        return bio.getvalue()
    try:  # pragma: no cover (a numpy without the private writer)
        fmt.write_array_header_1_0(bio, d)
    except ValueError:  # pragma: no cover
        bio = io.BytesIO()
        fmt.write_array_header_2_0(bio, d)
    return bio.getvalue()


def _array_data(arr: "np.ndarray[Any, Any]") -> Iterator["Union[bytes, memoryview]"]:
    """arr's data as np.save writes it: in Fortran order for an array that
    is Fortran-contiguous only, else in C order; without a copy when it
    is contiguous, else a piece at a time."""
    import numpy as np

    a = np.asarray(arr)
    if a.flags.f_contiguous and not a.flags.c_contiguous:
        a = a.T
    if a.nbytes == 0:
        return
    if a.flags.c_contiguous:
        yield a.reshape(-1).view(np.uint8).data
        return
    size = max(16 * 1024**2 // a.itemsize, 1)
    for piece in np.nditer(a, flags=["external_loop", "buffered", "zerosize_ok"], buffersize=size, order="C"):
        yield cast("np.ndarray[Any, Any]", piece).tobytes("C")


def _member(w: _Writer, key: str, value: Any, compress: bool) -> None:
    """Writes value as the member key.npy, as np.savez would (an object
    array pickled), stored with its data aligned or deflated in chunks."""
    import numpy as np
    from numpy.lib import format as untyped

    fmt: Any = untyped  # numpy's .npy writer, whose stubs leave it untyped
    arr = np.asanyarray(value)
    name = key + ".npy"
    if arr.dtype.hasobject:
        bio = io.BytesIO()
        fmt.write_array(bio, arr, allow_pickle=True)
        whole = bio.getbuffer()
        if compress:
            w.deflated(name, [whole], len(whole))
        else:
            w.stored(name, lambda: [whole], len(whole), 0, 0)
        return
    header = _npy_header(arr)
    size = len(header) + arr.nbytes

    def pieces() -> Iterator["Union[bytes, memoryview]"]:
        yield header
        yield from _array_data(arr)

    if compress:
        w.deflated(name, pieces(), size)
    else:
        w.stored(name, pieces, size, PAGE if arr.nbytes >= PAGE else LINE, len(header))


def _write_all(f: IO[bytes], arrays: "dict[str, Any]", compress: bool, chunk: int) -> None:
    w = _Writer(f, chunk)
    try:
        for key, value in arrays.items():
            _member(w, key, value, compress)
        w.close()
    finally:
        w.pool.shutdown(wait=True, cancel_futures=True)


def savez(file: "Union[str, os.PathLike[str], IO[bytes]]", *args: Any, compress: bool = False,
          chunk: int = DEFAULT_CHUNK, **kwds: Any) -> None:
    """Saves arrays into one archive as ``np.savez`` does (the same
    arguments, keys and members: ``arr_0``, ``arr_1``, ... for positional
    arrays, ``.npz`` added to a path without it), laid out for random
    access: np.load reads it unchanged, and npzfs serves it at once.

    With ``compress=False`` each array is stored with its data (past its
    .npy header) at a multiple of 4096 bytes in the file (64 for an array
    shorter than a page), so that ``np.memmap`` maps it; with
    ``compress=True`` each is deflated (zlib's level 6, as
    ``np.savez_compressed``) in SOZip chunks of ``chunk`` bytes, each
    compressed alone on a thread of its own, with the index that lets a
    reader inflate any chunk alone. Object arrays are pickled, as numpy
    does. One array is in memory at a time, as the caller holds it (a
    deflated array's compressed bytes too, when ``file`` cannot seek).

    ``file`` is a path (written to a temporary file beside it, renamed
    over it once whole, removed on failure) or a binary file object,
    written from its position. Without numpy it raises
    :class:`npzfs.Error`, saying how to install it.
    """
    from . import _need_numpy

    _need_numpy("savez")
    if not isinstance(compress, bool):
        raise TypeError(f"npzfs.savez(): compress takes True or False, not {compress!r}")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or not MIN_CHUNK <= chunk <= MAX_CHUNK:
        raise ValueError(f"npzfs.savez(): chunk {chunk!r}: give {MIN_CHUNK} to {MAX_CHUNK} bytes")
    arrays = dict(kwds)
    for i, value in enumerate(args):
        key = "arr_%d" % i
        if key in arrays:
            raise ValueError("Cannot use un-named variables and keyword %s" % key)
        arrays[key] = value
    if hasattr(file, "write"):
        _write_all(file, arrays, compress, chunk)  # type: ignore[arg-type]
        return
    path = os.fspath(file)
    if not path.endswith(".npz"):
        path += ".npz"
    _write_path(path, arrays, compress, chunk)


def _write_path(path: str, arrays: "dict[str, Any]", compress: bool, chunk: int) -> None:
    """Writes the archive to a temporary file beside path, with the mode
    a new file gets, then renames it over path; removes it on failure."""
    head, base = os.path.split(path)
    for _ in range(100):
        tmp = os.path.join(head, f".{base}.savez-{os.urandom(6).hex()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover
        raise FileExistsError(f"npzfs.savez: cannot make a temporary file beside {path}")
    try:
        with os.fdopen(fd, "wb") as f:
            _write_all(f, arrays, compress, chunk)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def pack(source: "Union[str, os.PathLike[str]]", destination: "Union[str, os.PathLike[str]]", **options: Any) -> str:
    """Rewrites the archive source (anything ``npzfs pack`` takes: a local
    path or a URL) into destination, laid out as :func:`savez` lays it
    out (``npzfs pack``: stored arrays aligned, deflated members in SOZip
    chunks compressed on every core). Options are the command's flags:
    ``chunk=1 << 20``, ``compress="keep"`` (or ``"none"``, ``"deflate"``,
    ``"auto"``), and the remote ones (``header=``, ``endpoint=``, ...).
    Returns its summary line; a failure raises :class:`npzfs.Error`, and
    leaves destination as it was."""
    from . import _failure, _run, _source
    from . import _flags as flags_of

    argv, env = flags_of("pack", "pack", options)
    src, src_env = _source(source)
    env.update(src_env)
    r = _run(["pack", *argv, "--", src, os.fspath(destination)], env)
    if r.returncode != 0:
        raise _failure(r)
    return str(r.stdout).strip()
