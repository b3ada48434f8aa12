"""npzfs.open's server over its life: threads reading one archive at
once, a server killed while reads are in flight, Ctrl-C while a read
waits and while a reply is read, Python killed with SIGKILL while its
server reads, and a server at Python's exit. No test
here waits on time but as a guard against a hang.

scripts/test-python.sh runs this file also in a mount namespace with no
/dev/fuse."""

import gc
import http.server
import os
import re
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

import npzfs
from conftest import running, serve_pids
from test_open import exact

GUARD = 60  # seconds: only a hang takes this long


@pytest.fixture(autouse=True)
def no_server_left():
    yield
    gc.collect()
    assert not serve_pids()


def test_threads(data, corpus):
    """Eight threads index two lazy arrays of one archive at once, and
    read them whole: every result is numpy's."""
    errors = []
    with npzfs.open(data / "corpus_deflated.npz") as z:
        arrays = {k: z[k] for k in ("big", "cube_f", "records", "tall")}

        def work(seed):
            rng = np.random.default_rng(seed)
            try:
                for i in range(150):
                    key = list(arrays)[(seed + i) % len(arrays)]
                    want, lazy = corpus[key], arrays[key]
                    n = want.shape[0]
                    a, b = sorted(int(x) for x in rng.integers(0, n + 1, 2))
                    step = int(rng.choice([1, 2, -1, 3]))
                    index = (slice(a, b, step), Ellipsis) if i % 7 else Ellipsis
                    exact(lazy[index], want[index])
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(GUARD)
        assert not any(t.is_alive() for t in threads)
    assert not errors, errors[0]


class GatedHandler(http.server.BaseHTTPRequestHandler):
    """Serves one file with byte ranges, as npzfs needs (206, exact
    Content-Range, an ETag); once the gate is shut, requests wait for it
    to open, counted in waiting."""

    path_served = ""
    gate = threading.Event()
    shut = threading.Event()
    waiting = threading.Semaphore(0)

    def do_GET(self):  # noqa: N802 - http.server's name
        with open(self.path_served, "rb") as f:
            body = f.read()
        m = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", ""))
        if not m:
            self.send_error(416)
            return
        if m.group(1):
            first, last = int(m.group(1)), min(int(m.group(2) or len(body) - 1), len(body) - 1)
        else:
            first, last = max(len(body) - int(m.group(2)), 0), len(body) - 1
        if self.shut.is_set():
            self.waiting.release()
            self.gate.wait(GUARD)
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {first}-{last}/{len(body)}")
        self.send_header("Content-Length", str(last - first + 1))
        self.send_header("ETag", '"fixed"')
        self.end_headers()
        try:
            self.wfile.write(body[first:last + 1])
        except OSError:
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def gated(tmp_path):
    """An HTTP server of an archive whose array "huge" (24 MiB) lies
    before the 4 MiB that opening it fetches, and whose reads can be
    made to wait."""
    path = tmp_path / "gated.npz"
    np.savez(path, huge=np.arange(3 << 20, dtype="<f8"), small=np.arange(10))
    GatedHandler.path_served = str(path)
    GatedHandler.gate.clear()
    GatedHandler.shut.clear()
    while GatedHandler.waiting.acquire(blocking=False):
        pass
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), GatedHandler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/gated.npz"
    GatedHandler.gate.set()
    srv.shutdown()
    srv.server_close()
    path.unlink()


def test_server_killed_mid_read(gated):
    """Reads in flight when the server is killed all raise npzfs.Error,
    and so does every later call; nothing hangs."""
    z = npzfs.open(gated)
    huge = z["huge"]
    GatedHandler.shut.set()
    reads = [lambda: huge[1 << 20:(1 << 20) + 10], lambda: huge[2 << 20:(2 << 20) + 10], lambda: np.asarray(huge)]
    results = [None] * len(reads)

    def read(i):
        try:
            reads[i]()
        except BaseException as e:  # noqa: BLE001 - checked below
            results[i] = e

    threads = [threading.Thread(target=read, args=(i,)) for i in range(len(reads))]
    for t in threads:
        t.start()
    for _ in reads:
        assert GatedHandler.waiting.acquire(timeout=GUARD)  # every read is at the HTTP server
    pid = z._state.conn.pid
    os.kill(pid, signal.SIGKILL)
    for t in threads:
        t.join(GUARD)
    assert not any(t.is_alive() for t in threads)
    for e in results:
        assert isinstance(e, npzfs.Error) and "killed by signal 9" in str(e) and "\n" not in str(e), e
    with pytest.raises(npzfs.Error, match="killed"):
        huge[1]
    GatedHandler.gate.set()
    z.close()


def test_ctrl_c_while_waiting(gated):
    """Ctrl-C while a read waits for its reply (read by the waiting thread
    itself) raises KeyboardInterrupt at once, takes nothing from the
    replies, and leaves the archive readable: the reply that comes later
    is dropped, and every read after is exact."""
    want = np.arange(3 << 20, dtype="<f8")
    with npzfs.open(gated) as z:
        huge = z["huge"]
        exact(huge[5:9], want[5:9])
        GatedHandler.shut.set()

        def interrupt():
            assert GatedHandler.waiting.acquire(timeout=GUARD)  # the read is at the HTTP server
            os.kill(os.getpid(), signal.SIGINT)

        t = threading.Thread(target=interrupt)
        t.start()
        with pytest.raises(KeyboardInterrupt):
            huge[1 << 20:(1 << 20) + 10]
        t.join(GUARD)
        GatedHandler.shut.clear()
        GatedHandler.gate.set()
        for k in (1 << 20, 2 << 20, 17):
            exact(huge[k:k + 10], want[k:k + 10])
        exact(np.asarray(huge), want)


def test_ctrl_c_inside_a_reply(data, corpus):
    """Ctrl-C while a reply is being read is held back until the reply is
    read whole, then raised: the archive stays readable (a reply cut in
    the middle would have lost the stream), and the handler is Python's
    again."""
    with npzfs.open(data / "corpus_deflated.npz") as z:
        big, want = z["big"], corpus["big"]
        exact(big[3], want[3])
        conn = z._state.conn
        reply = conn._reply
        ends = []

        def interrupted():
            conn._reply = reply  # once
            os.kill(os.getpid(), signal.SIGINT)  # its handler runs at the next step, here
            ends.append(reply())
            return ends[-1]

        conn._reply = interrupted
        with pytest.raises(KeyboardInterrupt):
            big[5]
        assert ends == [True]  # the reply was read to its end first
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        for i in (5, 0, 7):
            exact(big[i], want[i])
        exact(np.asarray(big), want)


CHILD = """
import sys, npzfs, numpy as np
z = npzfs.open(sys.argv[1])
a = z["huge"]
print(z._state.conn.pid, flush=True)
sys.stdin.readline()  # the gate is shut
np.asarray(a)  # waits at the gate until killed
"""


def test_python_killed(gated, tmp_path):
    """Python killed with SIGKILL while its server reads: the server sees
    its stdin close and exits (within 2 s: a bound, checked on the pid)."""
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    child = subprocess.Popen([sys.executable, str(script), gated], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pid = int(child.stdout.readline())
    GatedHandler.shut.set()
    child.stdin.write("go\n")
    child.stdin.flush()
    assert GatedHandler.waiting.acquire(timeout=GUARD)  # the read is under way
    assert running(pid)
    child.kill()
    child.wait()
    done = threading.Event()
    for _ in range(200):  # 2 s at most, in steps of 10 ms
        if not running(pid):
            break
        done.wait(0.01)
    assert not running(pid), "npzfs serve outlived its Python by 2 s"
    GatedHandler.gate.set()


EXITING = """
import sys, npzfs, numpy as np
z = npzfs.open(sys.argv[1])
same = int(z["big"][3, 4] == np.load(sys.argv[1])["big"][3, 4])
print(z._state.conn.pid, same, flush=True)
"""


def test_python_exits(data, corpus, tmp_path):
    """A server still open when Python exits ends with it."""
    script = tmp_path / "exiting.py"
    script.write_text(EXITING)
    out = subprocess.run([sys.executable, str(script), str(data / "corpus_deflated.npz")], capture_output=True, text=True, timeout=GUARD)
    pid, same = (int(x) for x in out.stdout.split())
    assert out.returncode == 0 and same == 1 and out.stderr == ""
    for _ in range(200):  # a guard: the server exits once its stdin closes
        if not running(pid):
            break
        threading.Event().wait(0.01)
    assert not running(pid)
