"""Mount NumPy .npz archives as read-only folders, and load their arrays as
memory maps.

The package runs the npzfs program it carries (a static binary for this
platform), so it needs no Go, compiler or network; mounting needs Linux
with FUSE (/dev/fuse, and fusermount3 for a user other than root), and
:func:`open` needs none. :func:`load`, :func:`open` and :func:`savez` need
numpy (``pip install 'npzfs[numpy]'``); the rest, and the npzfs command,
do not.

- :func:`mount` mounts a source and returns a :class:`Mount`, also a
  context manager that binds the mount's :class:`pathlib.Path`.
- :func:`load` is ``np.load`` for an .npz whose arrays are read-only
  ``np.memmap`` objects: nothing is read until it is used (where FUSE is
  not available, it is :func:`open`).
- :func:`open` is ``np.load`` for an .npz with no FUSE: stored arrays of
  local archives memory-mapped, the others :class:`LazyArray` objects
  read where indexed, through ``npzfs serve``.
- :func:`ls` lists an archive's members; :func:`index` builds the saved
  indexes of its deflated members.
- :func:`savez` is ``np.savez`` writing an archive laid out for random
  access; :func:`pack` rewrites an archive so.

A source is anything the command takes: a local ``.npz``, ``.npy`` or
folder, or an ``https://``, ``http://`` or ``s3://`` URL (``str`` or
``os.PathLike``). Options are keyword arguments named after the command's
flags (``cache_mb=256``, ``no_index=True``, ``header=["Authorization:
Bearer ..."]``): ``True`` gives a bare flag, a list repeats it, ``None`` or
``False`` leaves it out, and an unknown one raises :class:`TypeError`
before anything runs. Headers, and the query string and user info of a
URL, never appear in a command line (``ps``, ``/proc/PID/cmdline``): they
reach npzfs through its environment. Every failure raises :class:`Error`.
"""

from __future__ import annotations

import builtins
import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import warnings
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

from ._flags import FLAGS
from ._write import pack, savez

__all__ = ["Archive", "Error", "LazyArray", "Mount", "OpenArchive", "binary", "index", "load", "ls", "mount", "open", "pack", "savez"]

try:
    from importlib.metadata import PackageNotFoundError, version as _version

    try:
        __version__ = _version("npzfs")
    except PackageNotFoundError:
        __version__ = "unknown"
except ImportError:  # pragma: no cover
    __version__ = "unknown"

Source = Union[str, "os.PathLike[str]"]

# Flags the API does not take: -f would keep mount from returning, and the
# API asks ls for JSON and serve for --stdio itself.
_NOT_TAKEN = {"mount": {"foreground"}, "ls": {"json"}, "serve": {"stdio"}}

# The environment through which npzfs takes secrets (see man npzfs).
_HEADERS_ENV = "NPZFS_HEADERS"
_SOURCE_ENV = "NPZFS_SOURCE_URL"


class Error(OSError):
    """An npzfs command failed.

    ``message`` is npzfs's one line saying why (str(error) is the same),
    ``exit_code`` its exit code: 1 the operation failed, 2 the command line
    was wrong.
    """

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> Tuple[Any, Tuple[str, int]]:  # picklable, as OSError subclasses with other arguments are not
        return (type(self), (self.message, self.exit_code))


def _need_numpy(function: str) -> None:
    """Raises Error, in one line saying how to install it, where numpy is
    missing: npzfs.load and npzfs.savez need it, the rest of the package
    (and the command line) does not."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        raise Error(f"npzfs.{function} needs numpy, which this Python lacks: pip install numpy (or pip install 'npzfs[numpy]')") from None


def binary() -> str:
    """The path of the npzfs program this package runs: the one it carries,
    or ``$NPZFS_BINARY`` where that is set (for development)."""
    name = "npzfs.exe" if sys.platform == "win32" else "npzfs"
    prog = os.environ.get("NPZFS_BINARY") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", name)
    if not os.access(prog, os.X_OK):
        raise Error(f"npzfs: the npzfs program {prog} is missing or not executable: reinstall the npzfs package")
    return prog


def _run(args: Sequence[str], env: Optional[Dict[str, str]] = None) -> "subprocess.CompletedProcess[str]":
    full_env = None
    if env:
        full_env = dict(os.environ)
        full_env.update(env)
    return subprocess.run(
        [binary(), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=full_env,
        text=True,
    )


def _failure(r: "subprocess.CompletedProcess[str]") -> Error:
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    msg = lines[-1] if lines else f"npzfs exited with code {r.returncode}"
    return Error(msg, r.returncode)


def _flags(command: str, function: str, options: Dict[str, Any]) -> Tuple[List[str], Dict[str, str]]:
    """The command line flags and environment that options give, checked
    against the command's flags before anything runs."""
    table = FLAGS[command]
    argv: List[str] = []
    env: Dict[str, str] = {}
    for key, value in options.items():
        if key not in table or key in _NOT_TAKEN.get(command, ()):
            known = [k for k in table if k not in _NOT_TAKEN.get(command, ())]
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise TypeError(f"npzfs.{function}() got an unexpected keyword argument {key!r}{hint}")
        kind = table[key][0]
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if kind == "bool":
            if value is not True:
                raise TypeError(f"npzfs.{function}(): {key} takes True or False, not {value!r}")
            argv.append(flag)
            continue
        if kind == "list":
            items = [value] if isinstance(value, (str, os.PathLike)) else list(value)
            if not all(isinstance(v, (str, os.PathLike)) for v in items):
                raise TypeError(f"npzfs.{function}(): {key} takes a str or a list of them, not {value!r}")
        elif isinstance(value, bool) or not isinstance(value, _KINDS[kind][0]):
            raise TypeError(f"npzfs.{function}(): {key} takes {_KINDS[kind][1]}, not {value!r}")
        elif kind == "duration" and not isinstance(value, str):
            items = [f"{value}s"]  # seconds
        else:
            items = [value]
        texts = [os.fspath(v) if isinstance(v, os.PathLike) else str(v) for v in items]
        if key == "header":
            for h in texts:
                if "\n" in h or "\r" in h:
                    raise ValueError(f"npzfs.{function}(): a header holds a line break: {h.split(':')[0]!r}")
            env[_HEADERS_ENV] = "\n".join(texts)
            continue
        argv.extend(f"{flag}={v}" for v in texts)
    return argv, env


# What a flag of each kind takes: the Python types, and how to say so.
_KINDS: dict[str, tuple[Any, str]] = {
    "int": (int, "an int"),
    "duration": ((str, int, float), "a duration: seconds, or a str such as '90s' or '5m'"),
    "value": ((str, os.PathLike), "a str"),
}


def _source(source: Source) -> Tuple[str, Dict[str, str]]:
    """The source as the command line shows it, and the environment that
    carries what it must not show (a URL's query string and user info)."""
    s = os.fspath(source)
    if not isinstance(s, str):
        raise TypeError(f"a source is a str or os.PathLike of str, not {type(source).__name__}")
    u = urllib.parse.urlsplit(s)
    if u.scheme.lower() in ("http", "https") and (u.query or u.fragment or u.username is not None or u.password is not None):
        host = u.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        if u.port is not None:
            host += f":{u.port}"
        return urllib.parse.urlunsplit((u.scheme, host, u.path, "", "")), {_SOURCE_ENV: s}
    return s, {}


def _mounted(path: str) -> bool:
    """Whether an npzfs mount is on path, from the mount table."""
    try:
        with builtins.open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
            table = f.read()
    except OSError:
        return False
    for line in table.splitlines():
        fields = line.split()
        if len(fields) < 7 or "-" not in fields[6:]:
            continue
        fstype = fields[fields.index("-", 6) + 1]
        point = fields[4].encode("utf-8", "surrogateescape").decode("unicode_escape").encode("latin-1").decode("utf-8", "surrogateescape")
        if fstype == "fuse.npzfs" and point == path:
            return True
    return False


def _unmount(path: str, made: Optional[str], lazy: Optional[bool]) -> None:
    """Unmounts path (when lazy is None: plainly, else detached if busy),
    then removes the folder made for it, if any."""
    if _mounted(path):
        r = _run(["unmount", "--lazy", path] if lazy else ["unmount", path])
        if r.returncode != 0 and lazy is None and "busy" in r.stderr:
            r = _run(["unmount", "--lazy", path])
        if r.returncode != 0:
            raise _failure(r)
    if made is not None:
        try:
            os.rmdir(made)
        except FileNotFoundError:
            pass


def _finalize(path: str, made: Optional[str]) -> None:
    """A Mount's cleanup when it is collected or the interpreter exits:
    detached even if files are open in it, and never raising."""
    try:
        _unmount(path, made, True)
    except Exception as e:  # noqa: BLE001 - nowhere to raise to
        print(f"npzfs: cannot unmount {path}: {e}", file=sys.stderr)


class Mount:
    """A live mount, made by :func:`mount`.

    ``path`` is the mount point. :meth:`unmount` unmounts (and removes the
    folder mount made for it); it does nothing the second time. Used with
    ``with``, a Mount binds its path and unmounts on leaving the block,
    also when an exception leaves it. A Mount still mounted when it is
    garbage-collected, or when the interpreter exits, is unmounted then
    (detached, if files are still open in it).
    """

    def __init__(self, path: Path, made: Optional[str] = None) -> None:
        self.path = path
        self._finalizer = weakref.finalize(self, _finalize, str(path), made)

    @property
    def mounted(self) -> bool:
        """True until :meth:`unmount` (or cleanup) has run."""
        return self._finalizer.alive

    def unmount(self, lazy: Optional[bool] = None) -> None:
        """Unmounts; unmounted plainly, the mount's daemon has exited when
        this returns. With lazy None (the default) a mount whose files are
        still open (memory maps of its arrays) is detached: it leaves the
        mount table now and goes when they are closed. lazy=False raises
        :class:`Error` instead; lazy=True always detaches."""
        if not self._finalizer.alive:
            return
        info = self._finalizer.peek()
        if info is None:
            return
        path, made = info[2]
        _unmount(path, made, lazy)
        self._finalizer.detach()

    def __fspath__(self) -> str:
        return str(self.path)

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc: object) -> None:
        self.unmount()

    def __repr__(self) -> str:
        state = "mounted" if self.mounted else "unmounted"
        return f"<npzfs.Mount {str(self.path)!r} {state}>"


def mount(source: Source, mountpoint: Optional[Union[str, "os.PathLike[str]"]] = None, **options: Any) -> Mount:
    """Mounts source read-only and returns once the mount is live.

    With no mountpoint, a private temporary folder is made (under
    ``tempfile.gettempdir()``) and removed when the mount is. The mount
    lives no longer than this Python process: its daemon unmounts it
    once the process exits, however it ends (``owner=PID`` names another
    process instead). options are
    ``npzfs mount``'s flags as keyword arguments (``cache_mb=256``,
    ``index=True``, ``options=["allow_other"]``, ``header=[...]``; see
    ``npzfs mount --help``). A mount that fails raises :class:`Error` and
    leaves nothing mounted and no temporary folder behind.
    """
    argv, env = _flags("mount", "mount", options)
    src, src_env = _source(source)
    env.update(src_env)
    made = None
    if mountpoint is None:
        made = tempfile.mkdtemp(prefix="npzfs-")
        mountpoint = made
    # The mount table names the folder with its links resolved: so does
    # the Mount, or it could not find its own mount to unmount.
    path = Path(os.path.realpath(os.fspath(mountpoint)))
    # The mount lives no longer than this Python, however it ends
    # (SIGKILL, the OOM killer, a closed terminal), and takes the folder
    # made for it along.
    if "owner" not in options:
        argv.append(f"--owner={os.getpid()}")
    if made is not None:
        argv.append("--rmdir")
    try:
        r = _run(["mount", *argv, "--", src, str(path)], env)
        if r.returncode != 0:
            raise _failure(r)
    except BaseException:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
        raise
    for line in r.stderr.splitlines():  # what a mount that succeeds says
        if line.strip():
            print(line, file=sys.stderr)
    return Mount(path, made)


def ls(source: Source, verify: bool = False, **options: Any) -> List[Dict[str, Any]]:
    """The members of an archive, as ``npzfs ls --json`` gives them: a list
    of dicts (name, path, state, method, size, dtype, shape, ...; see
    ``man npzfs``). Of a folder (local, or a remote prefix), the members of
    every archive under it, each dict naming its archive's path in the
    folder (``archive``); an archive there that cannot be opened raises
    :class:`Error`. With verify=True every member is read whole and its
    CRC-32 checked, and each dict says how (``verify``): a member that
    fails is reported there, not raised."""
    doc, r = _ls_document(source, verify, options, "ls")
    if "archives" not in doc:
        if r.returncode == 0 or verify:
            members: List[Dict[str, Any]] = doc["members"]
            return members
        raise _failure(r)
    if doc["errors"]:
        first = doc["errors"][0]
        more = f" (and {len(doc['errors']) - 1} more)" if len(doc["errors"]) > 1 else ""
        raise Error(f"npzfs ls: {first['archive']}: {first['error']}{more}", r.returncode)
    return [dict(m, archive=a["archive"]) for a in doc["archives"] for m in a["members"]]


def _ls_document(source: Source, verify: bool, options: Dict[str, Any], function: str) -> Tuple[Dict[str, Any], "subprocess.CompletedProcess[str]"]:
    """npzfs ls --json's document of source, and the run that gave it: an
    archive's ({"members": ...}) or a folder's ({"archives": ...})."""
    argv, env = _flags("ls", function, options)
    if verify:
        argv.append("--verify")
    src, src_env = _source(source)
    env.update(src_env)
    r = _run(["ls", "--json", *argv, "--", src], env)
    if r.returncode not in (0, 1) or not r.stdout.strip():
        raise _failure(r)
    return json.loads(r.stdout), r


def index(source: Source, keys: Optional[Sequence[str]] = None, **options: Any) -> str:
    """Builds and saves the indexes of an archive's deflated members (those
    named by keys, or all; or of every archive under a folder), so that
    mounts read anywhere in them at once. Returns npzfs index's summary
    line."""
    argv, env = _flags("index", "index", options)
    src, src_env = _source(source)
    env.update(src_env)
    r = _run(["index", *argv, "--", src, *(keys or [])], env)
    if r.returncode != 0:
        raise _failure(r)
    out: str = r.stdout.strip()
    return out


class Archive(Mapping[str, Any]):
    """An archive as :func:`load` gives it: a read-only Mapping of its keys
    (``files``, as ``np.load`` names them: member names without ``.npy``)
    to its arrays, each a read-only ``np.memmap`` of the mounted
    ``KEY.npy``, and to the bytes of members that are not arrays.

    The archive is listed and mounted on first use, and unmounted by
    :meth:`close`, on leaving a ``with`` block, or when collected; arrays
    already taken stay readable until they are dropped.
    """

    def __init__(self, source: Source, options: Dict[str, Any], allow_pickle: bool = False) -> None:
        _flags("mount", "load", options)  # unknown options raise now
        self._source = source
        self._options = options
        self.allow_pickle = allow_pickle
        self._mount: Optional[Mount] = None
        self._paths: Dict[str, str] = {}
        self._closed = False

    def _open(self) -> Mount:
        if self._closed:
            raise ValueError("the archive is closed")
        if self._mount is None:
            taken = {k: v for k, v in self._options.items() if k in FLAGS["ls"]}
            doc, r = _ls_document(self._source, False, taken, "load")
            if "archives" in doc:
                raise Error(f"{os.fspath(self._source)} is a folder: npzfs.load takes one archive (.npz or .npy); mount a folder with npzfs.mount", 2)
            if r.returncode != 0:
                raise _failure(r)
            members = doc["members"]
            paths: Dict[str, str] = {}
            exact = set()
            for m in members:
                if m.get("path") is None or m["state"] == "folder":
                    continue
                name = m["name"]
                key = name[:-4] if name.endswith(".npy") else name
                # A member named exactly key wins over KEY.npy, as in
                # np.load ("s" before "s.npy").
                if key not in exact:
                    paths[key] = m["path"]
                if key == name:
                    exact.add(key)
            self._mount = mount(self._source, **self._options)
            self._paths = paths
        return self._mount

    @property
    def files(self) -> List[str]:
        """The keys, in the archive's order."""
        self._open()
        return list(self._paths)

    def _key(self, key: object) -> str:
        """The key of key as np.load takes it: a key, or a member's name
        (``x.npy`` for the key ``x``)."""
        self._open()
        if isinstance(key, str) and key not in self._paths and key.endswith(".npy") and key[:-4] in self._paths:
            return key[:-4]
        if not isinstance(key, str) or key not in self._paths:
            raise KeyError(f"{key} is not a file in the archive")
        return key

    def __getitem__(self, key: str) -> Any:
        m = self._open()
        path = m.path / self._paths[self._key(key)]
        with builtins.open(path, "rb") as f:
            magic = f.read(6)
        if magic != b"\x93NUMPY":
            return path.read_bytes()
        import numpy as np

        try:
            return np.load(path, mmap_mode="r", allow_pickle=False)
        except ValueError as e:
            if "Python objects" not in str(e):
                raise
            if not self.allow_pickle:  # as np.load of the .npz says it
                raise ValueError("Object arrays cannot be loaded when allow_pickle=False") from None
        # An object array is a pickle: read whole, as np.load reads it.
        return np.load(path, allow_pickle=True)

    def __iter__(self) -> Iterator[str]:
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)

    def __contains__(self, key: object) -> bool:
        try:
            self._key(key)
        except KeyError:
            return False
        return True

    def close(self) -> None:
        """Unmounts the archive (detached while its arrays are mapped)."""
        self._closed = True
        if self._mount is not None:
            self._mount.unmount()

    def __enter__(self) -> "Archive":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<npzfs.Archive {os.fspath(self._source)!r}{' closed' if self._closed else ''}>"


def load(source: Source, *, allow_pickle: bool = False, **options: Any) -> "Archive | OpenArchive":
    """Like ``np.load`` of an .npz, but every array is a read-only
    ``np.memmap``: returns an :class:`Archive`, mounted on first use and
    unmounted by its ``close()``. options are ``npzfs mount``'s flags as
    keyword arguments, checked now (``verify="strict"``, say). A key, or a
    member's name (``x.npy``), that is not in the archive raises KeyError,
    and an object array ValueError unless allow_pickle (then it is read
    whole, as ``np.load`` reads it), as ``np.load`` would.
    Without numpy it raises :class:`Error` at once, saying how to install
    it.

    Where FUSE is not available (not Linux, or no /dev/fuse), it says so
    once in a warning and returns :func:`open`'s archive instead, with the
    options ``npzfs serve`` takes (the mount's others are left out)."""
    _need_numpy("load")
    if sys.platform.startswith("linux") and os.path.exists("/dev/fuse"):
        return Archive(source, options, allow_pickle)
    _flags("mount", "load", options)  # unknown options raise here too
    global _warned
    if not _warned:
        _warned = True
        warnings.warn("npzfs.load: FUSE is not available here (no /dev/fuse): reading with npzfs.open instead, "
                      "stored arrays of local archives as memory maps and the others as lazy arrays", RuntimeWarning, stacklevel=2)
    return open(source, allow_pickle=allow_pickle, **{k: v for k, v in options.items() if k in FLAGS["serve"]})


_warned = False  # load has said that FUSE is not available

# npzfs.open and its arrays use Error, binary and the option helpers
# above; _flags under a name of its own, as the module _flags.py has the
# same name.
_option_flags = _flags

if TYPE_CHECKING:
    from ._lazy import LazyArray
    from ._open import OpenArchive


def open(source: Source, *, allow_pickle: bool = False, max_header_size: int = 10000, **options: Any) -> "OpenArchive":
    """Opens an archive with no FUSE: ``np.load`` of an .npz whose stored
    arrays (of a local archive) are read-only memory maps and whose other
    arrays are :class:`LazyArray` s, read only where indexed.

    source is a local ``.npz`` or ``.npy`` file, or an ``https://``,
    ``http://`` or ``s3://`` URL; options are ``npzfs serve``'s flags as
    keyword arguments (``cache_mb=64``, ``index_dir=...``,
    ``header=[...]``, ``endpoint=...``), checked now. ``verify`` says
    which members are verified (their CRC-32 checked) before they are
    returned, as a mount's ``--verify`` does: "auto" (the default: members
    of a local archive up to 256 MiB), "strict" (all) or "lazy" (none).
    allow_pickle and max_header_size are np.load's. Use it as a context manager, or call
    ``close()``. Without numpy it raises :class:`Error` at once, saying how
    to install it."""
    _need_numpy("open")
    from ._open import OpenArchive

    return OpenArchive(source, options, allow_pickle, max_header_size)


def __getattr__(name: str) -> Any:
    """LazyArray and OpenArchive, imported when first named: they need
    numpy, which the rest of the package (the command line) does not."""
    if name in ("LazyArray", "OpenArchive"):
        _need_numpy(name)
    if name == "LazyArray":
        from ._lazy import LazyArray

        return LazyArray
    if name == "OpenArchive":
        from ._open import OpenArchive

        return OpenArchive
    raise AttributeError(f"module 'npzfs' has no attribute {name!r}")
