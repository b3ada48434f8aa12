"""The client of ``npzfs serve --stdio`` (docs/serve.md): the server
process, its pipes, and requests in flight from any number of threads.

Replies are read by one thread at a time, which puts each read's bytes
straight into the buffer its caller gave (``readinto``: no second copy). A
thread waiting for one reply (a small read, a table) reads replies itself
while no other thread is, until its own has come: handing a reply from
one thread to another costs more than a cached read does. The
connection's own reply thread reads for every other wait (batches of
many reads, calls whose caller left) and to the end at close. The server
is started in a session of its own (a Ctrl-C at the terminal is Python's, not the server's), and ends
when its stdin closes: when the connection is closed or collected, when
Python exits, or when Python is killed. A server that dies, or breaks the
protocol, fails every call in flight and every later one with
:class:`npzfs.Error` at once.
"""

from __future__ import annotations

import collections
import io
import itertools
import json
import os
import signal
import struct
import subprocess
import sys
import threading
from typing import IO, Any, Dict, List, Optional, Sequence, Tuple, cast

from . import Error

MAGIC = b"NZS1"
HEADER = struct.Struct("<4sII")
VERSION = 1

# Requests a connection keeps in flight at most (the server takes 1,024):
# enough to keep every server thread busy and a remote source's requests
# overlapping, few enough that their frames fit in the pipe's buffer.
IN_FLIGHT = 256

# Bounds of what a reply may hold until the hello reply says the server's
# own (docs/serve.md).
_DEFAULT_LIMITS = {"max_reply_meta": 16 << 20, "max_chunk": 1 << 20}

# Lines of the server's stderr kept, for saying why it stopped.
_STDERR_LINES = 20


class _Batch:
    """Calls a thread waits for together: how many are left, the first
    error, the replies' metas, and a lock held until all are answered or
    one failed (cheaper to wait on than a condition)."""

    __slots__ = ("done", "left", "error", "metas", "released", "orphan")

    def __init__(self, count: int) -> None:
        self.done = threading.Lock()
        # Whether no caller reads its replies (see Connection._orphans).
        self.orphan = count != 1
        self.left = count
        self.error: Optional[BaseException] = None
        self.metas: List[Dict[str, Any]] = []
        self.released = count == 0
        if not self.released:
            self.done.acquire()

    def settle(self, error: Optional[BaseException], meta: Optional[Dict[str, Any]]) -> None:
        """One call is answered (with the connection's lock held)."""
        self.left -= 1
        if error is not None and self.error is None:
            self.error = error
        if meta is not None:
            self.metas.append(meta)
        if not self.released and (self.left == 0 or self.error is not None):
            self.released = True
            self.done.release()


class _Call:
    """A request in flight: a read's member, where its bytes go (dest,
    from member offset base) and the offset the next reply must carry;
    another request's meta."""

    __slots__ = ("batch", "dest", "base", "next", "member", "meta")

    def __init__(self, batch: _Batch, dest: Optional[memoryview] = None, base: int = 0, member: int = -1,
                 meta: Optional[Dict[str, Any]] = None) -> None:
        self.batch = batch
        self.dest = dest
        self.base = base
        self.next = base
        self.member = member
        self.meta = meta

    def frame(self, rid: int) -> bytes:
        """The request's frame, with id rid."""
        if self.meta is not None:
            return _frame(dict(self.meta, id=rid))
        assert self.dest is not None
        m = b'{"id":%d,"kind":"read","member":%d,"offset":%d,"length":%d}' % (rid, self.member, self.base, self.dest.nbytes)
        return HEADER.pack(MAGIC, len(m), 0) + m


class Connection:
    """A running ``npzfs serve --stdio`` of one archive (``argv`` is the
    whole command line; ``shown`` names the archive in messages)."""

    def __init__(self, argv: Sequence[str], env: Optional[Dict[str, str]], shown: str) -> None:
        self.shown = shown
        self._lock = threading.Lock()  # pending, ids, dead, reading
        # Taken to read a reply, and waited on for one's turn to (see
        # _await_one); told whenever a turn ends or calls are settled.
        self._turn = threading.Condition(self._lock)
        self._reading = False
        # Calls in flight that no caller's thread will read replies for
        # (a batch of many, or a call whose caller left): the reply
        # thread reads while there are some.
        self._orphans = 0
        self._wlock = threading.Lock()  # writes to the server
        self._pending: Dict[int, _Call] = {}
        self._ids = itertools.count(1)
        self._dead: Optional[Error] = None
        self._died = threading.Event()  # set once _dead says why
        self._slots = threading.BoundedSemaphore(IN_FLIGHT)
        self._stderr: collections.deque[str] = collections.deque(maxlen=_STDERR_LINES)
        self.limits: Dict[str, int] = dict(_DEFAULT_LIMITS)
        kwargs: Dict[str, Any] = {}
        if sys.platform == "win32":
            kwargs["creationflags"] = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
        else:
            kwargs["start_new_session"] = True
        try:
            self._proc = subprocess.Popen(
                list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                bufsize=0, env=env, close_fds=True, **kwargs,
            )
        except OSError as e:
            raise Error(f"npzfs: cannot start {argv[0]}: {e.strerror or e}") from None
        assert self._proc.stdin is not None and self._proc.stdout is not None and self._proc.stderr is not None
        self._win = self._proc.stdin.fileno()
        _grow_pipe(self._proc.stdout.fileno())
        self._out: IO[bytes] = io.BufferedReader(cast(io.RawIOBase, self._proc.stdout), 1 << 16)
        self._errpipe = self._proc.stderr
        self._err_thread = threading.Thread(target=self._read_stderr, name="npzfs-serve-stderr", daemon=True)
        self._err_thread.start()
        self._thread = threading.Thread(target=self._read_replies, name="npzfs-serve-replies", daemon=True)
        self._thread.start()
        hello = self.call({"kind": "hello", "version": VERSION})
        for k in _DEFAULT_LIMITS:
            v = hello.get("limits", {}).get(k)
            if isinstance(v, int) and v > 0:
                self.limits[k] = v
        self.hello = hello

    # -- requests

    def call(self, meta: Dict[str, Any]) -> Dict[str, Any]:
        """Sends one request that has one reply (hello, table) and
        returns the reply; an error reply raises :class:`Error`."""
        batch = _Batch(1)
        self._send([_Call(batch, meta=meta)], batch)
        return batch.metas[0]

    def read(self, member: int, runs: Sequence[Tuple[int, memoryview]]) -> None:
        """Reads, for each (offset, dest) of runs, len(dest) bytes of
        member at offset into dest, all at once; raises :class:`Error`
        once they are done if any failed."""
        batch = _Batch(len(runs))
        self._send([_Call(batch, dest, off, member) for off, dest in runs], batch)

    def _send(self, calls: Sequence[_Call], batch: _Batch) -> None:
        """Sends the calls' requests, at most IN_FLIGHT in flight, and
        waits for all their replies (reading them itself for a single
        call, see _await_one); a failure cancels the rest."""
        sent: List[int] = []
        frames: List[bytes] = []
        try:
            for call in calls:
                if not self._slots.acquire(blocking=False):
                    self._flush(frames)  # what is ready goes before waiting for a slot
                    self._tell()  # the reply thread reads for orphans among them
                    self._slots.acquire()
                with self._lock:
                    if self._dead is not None:
                        self._slots.release()
                        raise self._dead
                    rid = next(self._ids)
                    self._pending[rid] = call
                    if batch.orphan:
                        self._orphans += 1
                sent.append(rid)
                frames.append(call.frame(rid))
                if len(frames) >= 64:
                    self._flush(frames)
                if batch.error is not None:
                    break
            self._flush(frames)
            if len(calls) == 1:
                self._await_one(batch)
            else:
                self._tell()  # the reply thread reads for them
                batch.done.acquire()  # every reply has come, or one failed
        except BaseException:  # KeyboardInterrupt while waiting, too
            try:
                self._flush(frames)  # every call registered is sent, to be cancelled
            except Error:
                pass
            self._cancel(sent)
            raise
        if batch.error is not None:
            self._cancel(sent)
            raise batch.error

    def _flush(self, frames: List[bytes]) -> None:
        """Writes frames, in one write, and empties the list."""
        if frames:
            b = b"".join(frames)
            frames.clear()
            with self._wlock:
                self._write(b)

    def _write(self, b: bytes) -> None:
        view = memoryview(b)
        try:
            while view:
                view = view[os.write(self._win, view):]
        except OSError:
            self._die(None)
            with self._lock:
                assert self._dead is not None
                raise self._dead from None

    def _cancel(self, ids: Sequence[int]) -> None:
        """Cancels those of ids still in flight: their replies are then
        dropped as they come."""
        frames = []
        with self._turn:
            for rid in ids:
                call = self._pending.get(rid)
                if call is not None:
                    if not call.batch.orphan:  # its caller no longer reads for it
                        call.batch.orphan = True
                        self._orphans += 1
                        self._turn.notify_all()
                    call.dest = None  # its bytes, if any come, go nowhere
                    frames.append(_frame({"id": next(self._ids), "kind": "cancel", "target": rid}))
        if frames and self._dead is None:
            try:
                with self._wlock:
                    self._write(b"".join(frames))
            except Error:
                pass

    # -- replies

    def _tell(self) -> None:
        """Wakes the threads waiting on the turn to look again."""
        with self._turn:
            self._turn.notify_all()

    def _leave_turn(self) -> None:
        with self._turn:
            self._reading = False
            self._turn.notify_all()

    def _reply_or_problem(self) -> Tuple[bool, Optional[str]]:
        """Reads one reply (see _reply): whether more may come, and when
        none may, what broke, if anything did."""
        try:
            return self._reply(), None
        except _Broken as e:
            return False, str(e)
        except (OSError, ValueError) as e:
            return False, f"reading its replies failed: {e}"

    def _await_one(self, batch: _Batch) -> None:
        """Waits for a batch of one call: reads replies itself while no
        other thread is, until its own has come, or waits for the thread
        that is reading to settle it or to leave the turn."""
        while True:
            with self._turn:
                while self._reading and not batch.released:
                    self._turn.wait()
                if batch.released:
                    return
                self._reading = True
            dead = False
            try:
                while not batch.released and not dead:
                    dead = not self._reply_turn()
            finally:
                self._leave_turn()
            if dead:
                # The connection is dead: the thread that found it so
                # settles every call in flight, this one too, if it has
                # not yet.
                with self._turn:
                    while not batch.released:
                        self._turn.wait()
                return

    def _reply_turn(self) -> bool:
        """Reads one reply for a caller's thread: waits for its first
        byte as any blocking call does (a KeyboardInterrupt there takes
        nothing from the stream), then reads it whole with Ctrl-C held
        back until it is (a frame read in part would leave the stream in
        the middle of one). False once the server's output has ended or
        broken the protocol, the connection then dead."""
        try:
            first = self._out.peek(1)  # type: ignore[attr-defined]
        except (OSError, ValueError) as e:
            self._die(f"reading its replies failed: {e}")
            return False
        if not first:
            self._die(None)
            return False
        held = _CtrlCHeld()
        try:
            with held:
                more, problem = self._reply_or_problem()
        except BaseException:
            # Another signal's handler raised inside the frame: the
            # stream cannot be followed any further.
            self._die("a reply was cut short in this process")
            raise
        if not more:
            self._die(problem)
        held.deliver()  # the reply read whole: a Ctrl-C held back is raised now
        return more

    def _read_replies(self) -> None:
        """The reply thread: reads replies while calls are in flight that
        no caller's thread is reading for, and at close, until the
        server's stdout ends or breaks the protocol, then fails
        everything in flight."""
        while True:
            with self._turn:
                while self._dead is None and (self._reading or not (self._orphans or self._closing)):
                    self._turn.wait()
                if self._dead is not None:
                    return
                self._reading = True
            try:
                more, problem = self._reply_or_problem()
            finally:
                self._leave_turn()
            if not more:
                self._die(problem)
                return

    def _reply(self) -> bool:
        hdr = self._out.read(HEADER.size)
        if not hdr:
            return False
        if len(hdr) < HEADER.size:
            raise _Broken("its output ends inside a reply")
        magic, m, d = HEADER.unpack(hdr)
        if magic != MAGIC or m == 0 or m > self.limits["max_reply_meta"] or d > self.limits["max_chunk"]:
            raise _Broken(f"a reply frame with header {hdr.hex()}")
        raw = self._out.read(m)
        if len(raw) < m:
            raise _Broken("its output ends inside a reply")
        try:
            meta = json.loads(raw)
            rid = meta["id"]
            kind = meta["kind"]
        except (ValueError, KeyError, TypeError):
            raise _Broken(f"a reply that is not a JSON object with an id and a kind: {raw[:200]!r}") from None
        with self._lock:
            call = self._pending.get(rid) if isinstance(rid, int) else None
        if call is None:
            if rid == 0 and kind == "error":  # about a request it could not read: none of ours
                raise _Broken(f"it refused a request: {meta.get('message')}")
            raise _Broken(f"a reply to no request in flight: {raw[:200]!r}")
        if kind == "data":
            self._data(rid, call, meta, d)
            return True
        if d:
            raise _Broken(f"a {kind} reply with data")
        if kind == "error":
            msg = meta.get("message")
            text = " ".join(msg.split()) if isinstance(msg, str) else "an error with no message"
            self._finish(rid, call, Error(f"npzfs serve: {self.shown}: {text}"), None)
        elif call.meta is None:
            raise _Broken(f"a {kind} reply to a read")
        else:
            self._finish(rid, call, None, meta)
        return True

    def _data(self, rid: int, call: _Call, meta: Dict[str, Any], d: int) -> None:
        """Takes a data reply of d bytes: into its place in the call's
        buffer, in order, the last one ending exactly at its end."""
        off, last = meta.get("offset"), meta.get("last")
        if call.member < 0 or not isinstance(off, int) or not isinstance(last, bool):
            raise _Broken("a data reply that is not an answer to a read")
        dest = call.dest
        size = dest.nbytes if dest is not None else None
        if off != call.next or (size is not None and off + d > call.base + size):
            raise _Broken(f"bytes at {off} of member {call.member}, where {call.next} was next")
        if dest is not None:
            view = dest[off - call.base: off - call.base + d]
            got = 0
            while got < d:
                n = self._out.readinto(view[got:])  # type: ignore[attr-defined]
                if not n:
                    raise _Broken("its output ends inside a reply")
                got += n
        else:  # cancelled: its bytes go nowhere
            left = d
            while left:
                chunk = self._out.read(min(left, 1 << 16))
                if not chunk:
                    raise _Broken("its output ends inside a reply")
                left -= len(chunk)
        call.next = off + d
        if last:
            if size is not None and call.next != call.base + size:
                raise _Broken(f"a read of member {call.member} ends at {call.next}, short of {call.base + size}")
            self._finish(rid, call, None, None)

    def _finish(self, rid: int, call: _Call, error: Optional[BaseException], meta: Optional[Dict[str, Any]]) -> None:
        with self._lock:
            if self._pending.pop(rid, None) is None:
                return
            if call.batch.orphan:
                self._orphans -= 1
            call.batch.settle(error, meta)
        self._slots.release()

    def _read_stderr(self) -> None:
        for line in iter(self._errpipe.readline, b""):
            self._stderr.append(line.decode("utf-8", "replace").rstrip())

    def _die(self, problem: Optional[str]) -> None:
        """Marks the connection dead: every call in flight, and every
        later one, raises why."""
        with self._lock:
            if self._dead is not None:
                dying = True
            else:
                dying = False
                self._dead = Error(f"npzfs serve: {self.shown}: the connection is closed")
        if dying:
            self._died.wait()  # another thread is finding out why
            return
        if problem is not None:
            self._proc.kill()  # it broke the protocol: nothing more from it
        try:
            self._proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        try:
            code = self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            code = self._proc.wait()
        self._err_thread.join(timeout=1)
        dead = self._death(problem, code)
        with self._lock:
            self._dead = dead
            calls = list(self._pending.items())
            self._pending.clear()
            self._orphans = 0
        self._died.set()
        with self._turn:
            for _, call in calls:
                call.batch.settle(dead, None)
            self._turn.notify_all()  # their waiters, and the reply thread, end
        for _ in calls:
            self._slots.release()

    def _death(self, problem: Optional[str], code: int) -> Error:
        """Why the server is gone, in one line."""
        if self._closing:
            return Error(f"npzfs: {self.shown}: the archive is closed")
        if problem is not None:
            return Error(f"npzfs serve: {self.shown}: it broke the protocol: {problem}")
        lines = [line for line in self._stderr if line.strip()]
        if lines and code != 0:
            return Error(lines[-1], code if code > 0 else 1)
        how = f"exited with code {code}" if code >= 0 else f"was killed by signal {-code}"
        return Error(f"npzfs serve: {self.shown}: the server {how}")

    _closing = False

    def close(self) -> None:
        """Ends the server (closing its stdin) and waits for it; calls
        in flight and later ones raise :class:`Error`."""
        self._closing = True
        self._tell()  # the reply thread reads to the end
        try:
            self._proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        if threading.current_thread() is not self._thread:
            self._thread.join()

    @property
    def pid(self) -> int:
        return self._proc.pid


class _Broken(Exception):
    """The server broke the protocol."""


class _CtrlCHeld:
    """Holds back SIGINT's handler (KeyboardInterrupt) in the main thread
    for a with block, and calls it, on deliver(), if a SIGINT came
    meanwhile; elsewhere, or where the handler is not Python's to swap
    (set in C), it does nothing."""

    __slots__ = ("old", "hit")

    def __init__(self) -> None:
        self.old: Any = None
        self.hit: Any = None

    def __enter__(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        old = signal.getsignal(signal.SIGINT)
        if callable(old):
            self.old = old
            signal.signal(signal.SIGINT, self._held)

    def _held(self, signum: int, frame: Any) -> None:
        self.hit = (signum, frame)

    def __exit__(self, *exc: Any) -> None:
        if self.old is not None:
            signal.signal(signal.SIGINT, self.old)

    def deliver(self) -> None:
        """Calls the handler held back if a SIGINT came (once)."""
        hit, self.hit = self.hit, None
        if hit is not None and self.old is not None:
            self.old(*hit)


def _frame(meta: Dict[str, Any]) -> bytes:
    m = json.dumps(meta, separators=(",", ":")).encode()
    return HEADER.pack(MAGIC, len(m), 0) + m


def _grow_pipe(fd: int) -> None:
    """Makes a pipe's buffer 1 MiB where Linux lets it (fewer switches
    between the server and the reply thread for long reads)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except OSError:
        pass


def shutdown(conn: Connection) -> None:
    """A connection's cleanup when it is collected or Python exits: its
    server's stdin closed, nothing waited for."""
    conn._closing = True
    try:
        conn._proc.stdin.close()  # type: ignore[union-attr]
    except OSError:
        pass
    # The reply thread, waiting for calls to read for, reads to the end.
    # (A call under way holds its archive, so no collector of it runs
    # while this lock is held; the timeout is a guard all the same.)
    if conn._lock.acquire(timeout=1):
        try:
            conn._turn.notify_all()
        finally:
            conn._lock.release()
