"""A local archive's central directory, read as Python's zipfile reads it
(the names, offsets and sizes np.load sees), at a few times its speed.

zipfile makes a ZipInfo object of every entry and decodes every name
through a Python codec: 0.4-0.5 s for 100,000 members, which npzfs.open
may not spend before ``files``. This reads the same records with one
struct unpack an entry and keeps a tuple of what npzfs.open needs. It
follows zipfile's rules: the end record searched for as _EndRecData
does, a zip64 end record used when its locator is there, offsets
shifted by what precedes the zip (zipfile's "concat"), names UTF-8 when
flagged so else CP437, cut at a NUL, zip64 extra fields where a size or
offset is saturated. Whatever zipfile would refuse raises BadDirectory,
and npzfs.open then asks npzfs.
"""

from __future__ import annotations

import os
import struct
from typing import BinaryIO, List, NamedTuple

_EOCD = struct.Struct("<4s4H2LH")  # end of central directory record
_LOC64 = struct.Struct("<4sLQL")  # zip64 end of central directory locator
_EOCD64 = struct.Struct("<4sQ2H2L4Q")  # zip64 end of central directory record
_CD = struct.Struct("<4s4B4HL2L5H2L")  # a central directory entry's fixed part
_MAX_COMMENT = 1 << 16
_SATURATED = 0xFFFFFFFF
# The newest zip version zipfile reads (zipfile.MAX_EXTRACT_VERSION).
_MAX_EXTRACT_VERSION = 63


class BadDirectory(Exception):
    """What zipfile would refuse, or is not a zip at all."""


class Entry(NamedTuple):
    """What npzfs.open needs of a central directory entry."""

    name: str  # as zipfile names it (cut at a NUL)
    orig: str  # as the record has it, which the local header must repeat
    header_offset: int  # where the local header is in the file
    compress_size: int
    file_size: int
    method: int
    flags: int
    crc: int


def read(fp: BinaryIO, size: int) -> List[Entry]:
    """The entries of the zip archive of size bytes in fp."""
    cd_offset, cd_size, concat = _end(fp, size)
    start = cd_offset + concat
    if start < 0:
        raise BadDirectory("bad offset for central directory")
    fp.seek(start)
    cd = fp.read(cd_size)
    out: List[Entry] = []
    append, unpack = out.append, _CD.unpack_from
    p = 0
    while p < cd_size:
        if p + _CD.size > len(cd):
            raise BadDirectory("truncated central directory")
        (sig, _, _, version, _, flags, method, _, _, crc, csize, fsize, nlen, elen, clen, _, _, _, off) = unpack(cd, p)
        if sig != b"PK\x01\x02":
            raise BadDirectory("bad magic number for central directory")
        if version > _MAX_EXTRACT_VERSION:
            raise BadDirectory(f"zip file version {version / 10:.1f}")
        raw = cd[p + _CD.size:p + _CD.size + nlen]
        try:
            orig = raw.decode("utf-8") if flags & 0x800 else raw.decode("ascii" if raw.isascii() else "cp437")
        except UnicodeDecodeError:
            raise BadDirectory("a name flagged UTF-8 is not") from None
        e = p + _CD.size + nlen
        if _SATURATED in (csize, fsize, off) or elen:
            fsize, csize, off = _zip64(cd[e:e + elen], fsize, csize, off)
        name = orig
        if "\0" in name:
            name = name[:name.index("\0")]
        if os.sep != "/" and os.sep in name:
            name = name.replace(os.sep, "/")
        append(Entry(name, orig, off + concat, csize, fsize, method, flags, crc))
        p = e + elen + clen
    return out


def _end(fp: BinaryIO, size: int) -> tuple[int, int, int]:
    """The central directory's offset and size as recorded, and concat,
    what precedes the zip, from the end records."""
    tail_start = max(size - _MAX_COMMENT - _EOCD.size, 0)
    fp.seek(tail_start)
    tail = fp.read()
    if len(tail) >= _EOCD.size and tail[-_EOCD.size:-_EOCD.size + 4] == b"PK\x05\x06" and tail[-2:] == b"\0\0":
        at = len(tail) - _EOCD.size
    else:
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or at + _EOCD.size > len(tail):
            raise BadDirectory("no end of central directory record")
    _, _, _, _, _, cd_size, cd_offset, _ = _EOCD.unpack_from(tail, at)
    location = tail_start + at
    zip64 = False
    loc = location - _LOC64.size
    if loc >= 0:
        fp.seek(loc)
        b = fp.read(_LOC64.size)
        if len(b) == _LOC64.size:
            sig, disk, _, disks = _LOC64.unpack(b)
            if sig == b"PK\x06\x07":
                if disk != 0 or disks > 1:
                    raise BadDirectory("zipfiles that span multiple disks are not supported")
                rec = loc - _EOCD64.size
                if rec >= 0:
                    fp.seek(rec)
                    b = fp.read(_EOCD64.size)
                    if len(b) == _EOCD64.size and b[:4] == b"PK\x06\x06":
                        fields = _EOCD64.unpack(b)
                        cd_size, cd_offset, zip64 = fields[8], fields[9], True
    concat = location - cd_size - cd_offset
    if zip64:
        concat -= _EOCD64.size + _LOC64.size
    return cd_offset, cd_size, concat


def _zip64(extra: bytes, fsize: int, csize: int, off: int) -> tuple[int, int, int]:
    """The sizes and offset with the zip64 extra field's in place of
    saturated ones; extra fields checked as zipfile checks them."""
    while len(extra) >= 4:
        tp, ln = struct.unpack_from("<HH", extra)
        if ln + 4 > len(extra):
            raise BadDirectory(f"corrupt extra field {tp:04x} (size={ln})")
        if tp == 1:
            data = extra[4:ln + 4]
            try:
                if fsize in (0xFFFF_FFFF_FFFF_FFFF, _SATURATED):
                    fsize, = struct.unpack_from("<Q", data)
                    data = data[8:]
                if csize == _SATURATED:
                    csize, = struct.unpack_from("<Q", data)
                    data = data[8:]
                if off == _SATURATED:
                    off, = struct.unpack_from("<Q", data)
            except struct.error:
                raise BadDirectory("corrupt zip64 extra field") from None
        extra = extra[ln + 4:]
    return fsize, csize, off
