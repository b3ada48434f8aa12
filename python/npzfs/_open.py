"""npzfs.open: an archive's arrays with no FUSE (docs/python.md).

A local archive's central directory is read as Python's zipfile reads it
for np.load (_zipdir, faster), so keys and members are np.load's. A stored array of a
local archive is an np.memmap of the archive file at its data: no copy, no
server. Everything else is read through ``npzfs serve --stdio``, started
at first need: deflated arrays and every array of a remote archive are
:class:`LazyArray` s. Members that are not arrays are bytes, and object
arrays unpickled with allow_pickle=True, as np.load gives them. Every npy
header is parsed by numpy's own reader, so that dtypes, shapes and the
errors for bad headers are np.load's.
"""

from __future__ import annotations

import builtins
import io
import os
import threading
import urllib.parse
import weakref
import zipfile
import zlib
from collections.abc import Mapping
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

import numpy as np

from . import Error, Source, _option_flags, _source, _zipdir, binary
from ._lazy import LazyArray, _Source
from ._protocol import Connection, shutdown

_MAGIC = b"\x93NUMPY"
# Bytes read first from an array member: its magic, version and header
# in one read, for all but very wide records.
_HEAD = 4096
# np.load's default bound on a header (numpy's format._MAX_HEADER_SIZE).
_MAX_HEADER_SIZE = 10000
# The remote schemes npzfs reads (dataset.IsRemote).
_REMOTE = ("http", "https", "s3")
# A local file header's fixed part.
_LOCAL_HEADER = 30
# numpy's .npy reader, whose stubs leave it untyped.
_fmt: Any = np.lib.format
# The largest stored member verify="auto" checks before mapping it
# (npz.DefaultVerifyLimit), and how much of it is read at a time.
_VERIFY_LIMIT = 256 << 20
_VERIFY_CHUNK = 4 << 20


class _State:
    """What an open archive holds that its finalizer closes: its file,
    its zipfile and its server, if started."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.fp: Optional[io.BufferedReader] = None
        self.zip: Optional[zipfile.ZipFile] = None
        self.conn: Optional[Connection] = None
        self.closed = False

    def close(self) -> None:
        with self.lock:
            self.closed = True
            conn, self.conn = self.conn, None
            for f in (self.zip, self.fp):
                if f is not None:
                    f.close()
        if conn is not None:
            conn.close()


def _finalize(state: _State) -> None:
    """An archive's cleanup when it is collected or Python exits: its
    server's stdin closed, nothing waited for."""
    with state.lock:
        state.closed = True
        conn, state.conn = state.conn, None
    if conn is not None:
        shutdown(conn)


class OpenArchive(Mapping[str, Any], _Source):
    """An archive as :func:`open` gives it: a read-only Mapping of its keys
    (``files``, as ``np.load`` names them) to its arrays and members, and
    a context manager that closes it.

    A stored array of a local archive is a read-only ``np.memmap`` of the
    archive file; a deflated array, and any array of a remote archive, a
    :class:`LazyArray` read through ``npzfs serve``, which is started when
    first needed and ends when the archive is closed, or collected with
    its lazy arrays, or when Python exits. Members that are not arrays are
    their bytes; object arrays raise ValueError unless allow_pickle, as
    in ``np.load``. Every other failure raises :class:`npzfs.Error`.
    """

    def __init__(self, source: Source, options: Dict[str, Any], allow_pickle: bool, max_header_size: int) -> None:
        argv, env = _option_flags("serve", "open", options)
        self._verify = str(options.get("verify", "auto"))
        self._verified: Set[int] = set()  # the stored members checked, by their start
        src, src_env = _source(source)
        env.update(src_env)
        self._argv = ["serve", "--stdio", *argv, "--", src]
        self._env = dict(os.environ, **env) if env else None
        self.allow_pickle = allow_pickle
        self.max_header_size = max_header_size
        self._shown = src
        self._state = _State()
        self._finalizer = weakref.finalize(self, _finalize, self._state)
        self._bare = False
        self._bare_name = ""
        self._dir: List[_zipdir.Entry] = []
        self._entries: List[Dict[str, Any]] = []
        self._checked: Dict[Tuple[int, bool], Dict[str, Any]] = {}  # entries the server gave, by index and headers
        self._path: Optional[str] = None
        if urllib.parse.urlsplit(src).scheme.lower() not in _REMOTE and "://" not in src:
            self._open_local(os.path.abspath(src))
        else:
            self._list_served()
        if self._bare:
            names = [self._bare_name]
        elif self._entries:
            names = [str(e.get("name")) for e in self._entries]
        else:
            names = [e.name for e in self._dir]
        self._names = names
        self.files = [n[:-4] if n.endswith(".npy") else n for n in names]
        self._by_name = {n: i for i, n in enumerate(names)}  # the last of a name, as zipfile has it

    # -- opening

    def _open_local(self, path: str) -> None:
        """Opens a local file: a zip whose directory reads as zipfile
        reads it, else a bare .npy, else whatever npzfs makes of it (its
        message, if nothing)."""
        if os.path.isdir(path):
            raise Error(f"npzfs.open: {path} is a folder: npzfs.open takes one archive (.npz or .npy)", 2)
        try:
            fp = builtins.open(path, "rb")
        except OSError:
            self._list_served()  # npzfs says why, in its words
            return
        self._state.fp = fp
        self._path = path
        try:
            with self._state.lock:
                self._dir = _zipdir.read(fp, os.fstat(fp.fileno()).st_size)
            return
        except (_zipdir.BadDirectory, OSError):
            pass
        if self._pread(0, len(_MAGIC)) == _MAGIC:
            self._bare = True
            name = os.path.basename(path)
            self._bare_name = name if name.endswith(".npy") else name + ".npy"
            return
        self._list_served()  # npzfs may read what zipfile does not

    def _list_served(self) -> None:
        """Lists the members through the server: a remote archive, or a
        local one zipfile cannot read."""
        conn = self.connection()
        entries: List[Dict[str, Any]] = []
        while True:
            rp = conn.call({"kind": "table", "first": len(entries)})
            members, total = rp.get("members"), rp.get("total")
            if not isinstance(members, list) or not isinstance(total, int) or rp.get("first") != len(entries) or (not members and len(entries) < total):
                raise Error(f"npzfs serve: {self._shown}: a table reply that breaks the protocol")
            entries.extend(members)
            if len(entries) >= total:
                break
        self._entries = entries

    def connection(self) -> Connection:
        """The archive's server, started now if it is not yet."""
        st = self._state
        with st.lock:
            if st.closed:
                raise Error(f"npzfs: {self._shown}: the archive is closed")
            if st.conn is None:
                st.conn = Connection([binary(), *self._argv], self._env, self._shown)
            return st.conn

    # -- the Mapping

    def _index(self, key: object) -> int:
        """The member a key names, as np.load finds it: the name itself,
        else the name with ".npy"; the last member of that name."""
        if key in self._by_name:
            return self._by_name[key]  # type: ignore[index]
        if isinstance(key, str) and key + ".npy" in self._by_name:
            return self._by_name[key + ".npy"]
        raise KeyError(f"{key} is not a file in the archive")

    def __getitem__(self, key: str) -> Any:
        if self._state.closed:
            raise ValueError("the archive is closed")
        i = self._index(key)
        if self._bare:
            return self._stored(0, os.fstat(self._fp().fileno()).st_size, self._names[0], None, None)
        if self._entries:
            return self._from_entry(i)
        return self._from_zip(i)

    def __contains__(self, key: object) -> bool:
        return key in self._by_name or (isinstance(key, str) and key + ".npy" in self._by_name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)

    def close(self) -> None:
        """Closes the archive and ends its server: memory maps already
        taken stay readable; lazy arrays raise :class:`npzfs.Error`."""
        self._finalizer.detach()
        self._state.close()

    def __enter__(self) -> "OpenArchive":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<npzfs.OpenArchive {self._shown!r}{' closed' if self._state.closed else ''}>"

    # -- members of a local zip

    def _fp(self) -> io.BufferedReader:
        fp = self._state.fp
        if fp is None or self._state.closed:
            raise Error(f"npzfs: {self._shown}: the archive is closed")
        return fp

    def _pread(self, off: int, n: int) -> bytes:
        with self._state.lock:
            fp = self._fp()
            fp.seek(off)
            return fp.read(n)

    def _from_zip(self, i: int) -> Any:
        e = self._dir[i]
        try:
            if e.flags & 0x41:
                raise Error(f"npzfs: {self._shown}: {e.name}: cannot read: encrypted")
            if e.method == zipfile.ZIP_STORED:
                start = self._data_start(e)
                return self._stored(start, e.file_size, e.name, lambda: self._crc_checked(e, self._pread(start, e.file_size)), e.crc)
            if e.method == zipfile.ZIP_DEFLATED:
                start = self._data_start(e)
                if zlib.decompressobj(-15).decompress(self._pread(start, min(e.compress_size, 1024)), len(_MAGIC)) != _MAGIC:
                    return self._inflated(e, start)  # bytes, as np.load gives them
                return self._served(i, e.name)
            return self._by_zipfile(i)
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError, RuntimeError) as err:
            if isinstance(err, Error):
                raise
            raise Error(f"npzfs: {self._shown}: {e.name}: {err}") from None

    def _by_zipfile(self, i: int) -> Any:
        """A member of a method npzfs does not read (bzip2, lzma): read
        whole by zipfile, as np.load reads it."""
        st = self._state
        with st.lock:
            if st.zip is None:
                st.zip = zipfile.ZipFile(self._fp())
            z = st.zip
        info = z.infolist()[i]
        if info.orig_filename != self._dir[i].orig:
            raise Error(f"npzfs: {self._shown}: Python's zipfile reads member {i} as {info.filename!r}, not {self._dir[i].name!r}")
        with z.open(info) as f:
            magic = f.read(len(_MAGIC))
        if magic != _MAGIC:
            return z.read(info)
        with z.open(info) as f:
            return _fmt.read_array(f, allow_pickle=self.allow_pickle, max_header_size=self.max_header_size)

    def _crc_checked(self, e: _zipdir.Entry, b: bytes) -> bytes:
        """A member's bytes, once their CRC-32 is the directory's (as
        zipfile checks it for np.load)."""
        if zlib.crc32(b) != e.crc:
            raise Error(f"npzfs: {self._shown}: {e.name}: bad CRC-32")
        return b

    def _inflated(self, e: _zipdir.Entry, start: int) -> bytes:
        """A deflated member's bytes, inflated whole and checked."""
        d = zlib.decompressobj(-15)
        out = d.decompress(self._pread(start, e.compress_size), e.file_size)
        if len(out) != e.file_size or d.unconsumed_tail:
            raise Error(f"npzfs: {self._shown}: {e.name}: its deflate stream does not make its {e.file_size} bytes")
        return self._crc_checked(e, out)

    def _data_start(self, e: _zipdir.Entry) -> int:
        """Where a member's bytes start in the archive file, from its
        local header, checked as zipfile checks it."""
        h = self._pread(e.header_offset, _LOCAL_HEADER)
        if len(h) < _LOCAL_HEADER or h[:4] != b"PK\x03\x04":
            raise Error(f"npzfs: {self._shown}: {e.name}: no local header at byte {e.header_offset}")
        n, extra = int.from_bytes(h[26:28], "little"), int.from_bytes(h[28:30], "little")
        name = self._pread(e.header_offset + _LOCAL_HEADER, n).decode("utf-8" if e.flags & 0x800 else "cp437", "replace")
        if name != e.orig:
            raise Error(f'npzfs: {self._shown}: local header of "{e.name}" names "{name}" instead')
        start = e.header_offset + _LOCAL_HEADER + n + extra
        if (e.method == zipfile.ZIP_STORED and e.compress_size != e.file_size) or start + e.compress_size > os.fstat(self._fp().fileno()).st_size:
            raise Error(f"npzfs: {self._shown}: {e.name}: the archive ends inside it (or its sizes cannot be right)")
        return start

    def _stored(self, start: int, size: int, name: str, whole: Optional[Callable[[], bytes]], crc: Optional[int]) -> Any:
        """A stored member of a local archive from byte start of the
        file: an array as a memory map of the file, else its bytes. A
        member with a CRC-32 (crc; a bare .npy has none) is verified
        first, as verify says."""
        head = _parse(self._pread(start, min(size, _HEAD)), lambda n: self._pread(start, n), size, self._header_bound())
        if head is None:
            return whole() if whole is not None else self._pread(start, size)
        shape, fortran, dtype, data = head
        if dtype.hasobject:
            if not self.allow_pickle:
                raise ValueError("Object arrays cannot be loaded when allow_pickle=False")
            b = self._pread(start, size)
            if crc is not None and zlib.crc32(b) != crc:
                raise Error(f"npzfs: {self._shown}: {name}: bad CRC-32")
            return _fmt.read_array(io.BytesIO(b), allow_pickle=True)
        _fits(self._shown, name, data, shape, dtype, size)
        if crc is not None:
            self._verify_stored(start, size, name, crc)
        return np.memmap(self._fp(), dtype=dtype, mode="r", offset=start + data, shape=shape, order="F" if fortran else "C")

    def _verify_stored(self, start: int, size: int, name: str, crc: int) -> None:
        """Checks the CRC-32 of a stored member before it is mapped, once:
        verify="auto" those up to 256 MiB, "strict" all, "lazy" none (as
        a mount verifies them: docs/guarantees.md)."""
        if start in self._verified or self._verify == "lazy" or (self._verify == "auto" and size > _VERIFY_LIMIT):
            return
        got = 0
        for off in range(0, size, _VERIFY_CHUNK):
            b = self._pread(start + off, min(_VERIFY_CHUNK, size - off))
            if not b:
                raise Error(f"npzfs: {self._shown}: {name}: the archive ends inside it")
            got = zlib.crc32(b, got)
        if got != crc:
            raise Error(f"npzfs: {self._shown}: {name}: CRC-32 mismatch: its bytes give {got:08x}, the archive records {crc:08x}")
        self._verified.add(start)

    def _header_bound(self) -> int:
        return 2**64 if self.allow_pickle else self.max_header_size  # np.load trusts a pickled file's header

    # -- members read through the server

    def _from_entry(self, i: int) -> Any:
        """A member of an archive listed by the server: a stored member of
        a local archive still mapped from the file where the server says
        its bytes lie."""
        e = self._entries[i]
        if e.get("kind") == "folder":
            return b""  # as np.load reads a folder entry
        if e.get("method") == "stored" and self._path is not None and e.get("readable"):
            e = self._entry(i, headers=True)
            start, crc = e.get("archive_offset"), e.get("crc32")
            if isinstance(start, int):
                return self._stored(start, int(e["size"]), str(e["name"]), None, crc if isinstance(crc, int) else None)
        return self._served(i, str(e["name"]))

    def _entry(self, i: int, headers: bool = False) -> Dict[str, Any]:
        """Member i's entry in the server's table, checked to be the
        member zipfile names i."""
        if not headers and self._entries:
            return self._entries[i]  # listed by this server
        e = self._checked.get((i, headers))
        if e is not None:
            return e
        rp = self.connection().call({"kind": "table", "first": i, "count": 1, "headers": headers})
        ms = rp.get("members")
        if not isinstance(ms, list) or len(ms) != 1 or not isinstance(ms[0], dict) or ms[0].get("index") != i:
            raise Error(f"npzfs serve: {self._shown}: a table reply that breaks the protocol")
        e = ms[0]
        if e.get("name") != self._names[i]:
            raise Error(f"npzfs: {self._shown}: npzfs and Python's zipfile read member {i} as {e.get('name')!r} and {self._names[i]!r}")
        self._checked[(i, headers)] = e
        return e

    def _served(self, i: int, name: str) -> Any:
        """Member i read through the server: an array as a LazyArray."""
        e = self._entry(i)
        if not e.get("readable"):
            raise Error(f"npzfs: {self._shown}: {name}: {e.get('reason') or 'cannot be read'}")
        size = e.get("size")
        if not isinstance(size, int) or size < 0:
            raise Error(f"npzfs serve: {self._shown}: a table entry with no size")
        conn = self.connection()

        def read(n: int) -> bytes:
            buf = bytearray(n)
            if n:
                conn.read(i, [(0, memoryview(buf))])
            return bytes(buf)

        head = _parse(read(min(size, _HEAD)), read, size, self._header_bound())
        if head is None:
            return read(size)
        shape, fortran, dtype, data = head
        if dtype.hasobject:
            if not self.allow_pickle:
                raise ValueError("Object arrays cannot be loaded when allow_pickle=False")
            return _fmt.read_array(io.BytesIO(read(size)), allow_pickle=True)
        _fits(self._shown, name, data, shape, dtype, size)
        return LazyArray(self, i, name, data, shape, dtype, fortran)


def _same_file(a: Any, b: Any) -> bool:
    sa, sb = os.fstat(a.fileno()), os.fstat(b.fileno())
    return (sa.st_dev, sa.st_ino, sa.st_size) == (sb.st_dev, sb.st_ino, sb.st_size)


def _parse(head: bytes, read: Callable[[int], bytes], size: int, max_header_size: int) -> Optional[Tuple[Tuple[int, ...], bool, np.dtype[Any], int]]:
    """An array member's header, parsed by numpy as np.load parses it,
    from its first bytes (head; read(n) gives its first n): shape, order,
    dtype and where the data starts. None when the member is not an array
    (it does not start with the magic)."""
    if head[:len(_MAGIC)] != _MAGIC:
        return None
    if len(head) >= 12:
        major = head[6]
        want = 10 + int.from_bytes(head[8:10], "little") if major == 1 else 12 + int.from_bytes(head[8:12], "little")
        if want > len(head):
            head = read(min(want, size))
    fp = io.BytesIO(head)
    try:
        version = _fmt.read_magic(fp)
        _fmt._check_version(version)
        shape, fortran, dtype = _read_header(fp, version, max_header_size)
    except ValueError as e:
        raise Error(f"npzfs: {' '.join(str(e).split())}") from None
    return tuple(shape), bool(fortran), dtype, fp.tell()


def _read_header(fp: io.BytesIO, version: Tuple[int, int], max_header_size: int) -> Tuple[Any, Any, np.dtype[Any]]:
    """numpy's own header reader, as read_array calls it."""
    read = getattr(_fmt, "_read_array_header", None)
    if read is not None:
        out = read(fp, version, max_header_size=max_header_size)
    elif version == (1, 0):
        out = _fmt.read_array_header_1_0(fp, max_header_size=max_header_size)
    else:
        out = _fmt.read_array_header_2_0(fp, max_header_size=max_header_size)
    return out[0], out[1], out[2]


def _fits(shown: str, name: str, data: int, shape: Tuple[int, ...], dtype: np.dtype[Any], size: int) -> None:
    """Refuses an array whose data its member is too short to hold."""
    need = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if data + need > size:
        raise Error(f"npzfs: {shown}: {name}: the header's shape and dtype need {need} bytes of data from byte {data}, but the member ends at byte {size}")
