#!/usr/bin/python3
"""npzfs.open's figures (issue 38), each beside its reference in the same
run: scripts/bench.sh runs it as its step 8, and it runs alone too:

    /usr/bin/python3 scripts/bench/open.py NPZFS DATA [--size full|small]
        [--rounds N] [--write BENCHMARKS.md]

NPZFS is the npzfs binary to measure, DATA the folder of scripts/bench.sh's
archives (bigdefl.npz, many.npz: written with scripts/bench/gen.py when
missing); it writes its own open4g.npz there (np.savez of one 4 GiB array,
streamed; 256 MiB at --size small). Every figure is a fresh Python process
running the package from python/ (PYTHONPATH, its bytecode compiled
beforehand, as an installed wheel has it) with
NPZFS_BINARY=NPZFS, timed around the call only, medians of the rounds. The mount's figures are
a fresh `npzfs mount --no-index` each (they are "not measured" where FUSE
is not). Prints the section; with --write, replaces it in BENCHMARKS.md
between <!-- open:begin --> and <!-- open:end -->. Nothing fails on a
timing.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = "/usr/bin/python3"
BEGIN, END = "<!-- open:begin -->", "<!-- open:end -->"
SIZES = {
    "full": {"open_bytes": 4 << 30, "gen": {"bigdefl_bytes": 1 << 30, "many_count": 100000}},
    "small": {"open_bytes": 256 << 20, "gen": {"bigdefl_bytes": 64 << 20, "many_count": 10000}},
}
GEN_PARAMS = {"full": '{"stored_bytes":1073741824,"deflated_bytes":268435456,"bigdefl_bytes":1073741824,"many_count":100000,"million_count":1000000,"manydefl_count":20000}',
              "small": '{"stored_bytes":67108864,"deflated_bytes":33554432,"bigdefl_bytes":67108864,"many_count":10000,"million_count":100000,"manydefl_count":5000}'}

# What each measurement runs, in a fresh process: it prints one line of
# key=value pairs. ARGS is a JSON list of its arguments.
PRELUDE = """
import json, os, resource, statistics, sys, time
import numpy as np
import npzfs
ARGS = json.loads(sys.argv[1])
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
def out(**kv):
    print(" ".join(f"{k}={v}" for k, v in kv.items()), flush=True)
def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
"""

OPEN_STORED = """
path, = ARGS
r0 = rss(); t0 = time.perf_counter()
z = npzfs.open(path); a = z["x"]
t1 = time.perf_counter(); r1 = rss()
assert isinstance(a, np.memmap)
out(ms=(t1 - t0) * 1e3, rss_mb=(r1 - r0) / 1e6, bytes=a.nbytes, offset=a.offset)
"""

# The three whole reads of the stored array: each allocating its result
# (mbps: np.array, np.fromfile), then, from a mapping or a file opened
# anew, into a buffer whose pages were touched beforehand (into_mbps:
# the read alone, without what a fresh allocation's pages cost, which on
# a virtual machine varies tenfold from one run to the next).
READ_STORED = """
path, = ARGS
z = npzfs.open(path); a = z["x"]
t0 = time.perf_counter(); b = np.array(a); t1 = time.perf_counter()
dst = np.ones_like(b); del a, b; z.close()
a = npzfs.open(path)["x"]
t2 = time.perf_counter(); np.copyto(dst, a); t3 = time.perf_counter()
out(mbps=dst.nbytes / 2**20 / (t1 - t0), into_mbps=dst.nbytes / 2**20 / (t3 - t2))
"""

MEMMAP = """
path, offset, count = ARGS
a = np.memmap(path, dtype="<f4", mode="r", offset=offset, shape=(count,))
t0 = time.perf_counter(); b = np.array(a); t1 = time.perf_counter()
dst = np.ones_like(b); del a, b
a = np.memmap(path, dtype="<f4", mode="r", offset=offset, shape=(count,))
t2 = time.perf_counter(); np.copyto(dst, a); t3 = time.perf_counter()
out(mbps=dst.nbytes / 2**20 / (t1 - t0), into_mbps=dst.nbytes / 2**20 / (t3 - t2))
"""

FROMFILE = """
path, offset, count = ARGS
t0 = time.perf_counter(); b = np.fromfile(path, dtype="<f4", count=count, offset=offset); t1 = time.perf_counter()
dst = np.ones_like(b); del b
view = memoryview(dst).cast("B")
t2 = time.perf_counter()
with open(path, "rb", buffering=0) as f:
    f.seek(offset)
    got = 0
    while got < len(view):
        got += f.readinto(view[got:])
t3 = time.perf_counter()
out(mbps=dst.nbytes / 2**20 / (t1 - t0), into_mbps=dst.nbytes / 2**20 / (t3 - t2))
"""

ROWS = """
path, index_dir, n = ARGS
z = npzfs.open(path, index_dir=index_dir); a = z["z"]
rng = np.random.default_rng(38)
size = a.shape[0]
times = []
for _ in range(n + 1):
    m = int(rng.integers(1024, 16385))  # 4 to 64 KiB of float32
    k = int(rng.integers(0, size - m))
    t0 = time.perf_counter(); a[k:k + m]; times.append(time.perf_counter() - t0)
first, rest = times[0], sorted(times[1:])
out(first_ms=first * 1e3, median_ms=statistics.median(rest) * 1e3, p99_ms=rest[int(len(rest) * 0.99)] * 1e3)
"""

NPLOAD = """
path, key = ARGS
t0 = time.perf_counter(); b = np.load(path)[key]; t1 = time.perf_counter()
out(secs=t1 - t0, mbps=b.nbytes / 2**20 / (t1 - t0), maxrss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""

DEPTH = """
path, depth = ARGS
z = npzfs.open(path, no_index=True); a = z["z"]
k = int(a.shape[0] * depth) - 1024
pid = z.connection().pid
c0 = cpu(pid); t0 = time.perf_counter(); a[k:k + 1024]; t1 = time.perf_counter(); c1 = cpu(pid)
out(secs=t1 - t0, cpu=c1 - c0, offset=a._data_offset + 4 * k)
"""

PREAD = """
path, offset, pid = ARGS
fd = os.open(path, os.O_RDONLY)
c0 = cpu(pid); t0 = time.perf_counter(); b = os.pread(fd, 4096, offset); t1 = time.perf_counter(); c1 = cpu(pid)
assert len(b) == 4096
out(secs=t1 - t0, cpu=c1 - c0)
"""

ASARRAY = """
path, = ARGS
z = npzfs.open(path, no_index=True); a = z["z"]
t0 = time.perf_counter(); b = np.asarray(a); t1 = time.perf_counter()
out(secs=t1 - t0, mbps=b.nbytes / 2**20 / (t1 - t0), bytes=b.nbytes, maxrss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""

MOUNTED = """
path, = ARGS
t0 = time.perf_counter(); b = np.load(path); t1 = time.perf_counter()
out(secs=t1 - t0, mbps=b.nbytes / 2**20 / (t1 - t0))
"""

ROUNDTRIP = """
path, = ARGS
z = npzfs.open(path, no_index=True); a = z["z"]
conn = z.connection()
k = 1 << 16
a[k:k + 1024]  # its span inflated and cached
buf = memoryview(bytearray(4096)); off = a._data_offset + 4 * k
def med(f, n=5000):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e6
lazy = med(lambda: a[k:k + 1024])
read4k = med(lambda: conn.read(0, [(off, buf)]))
read0 = med(lambda: conn.read(0, [(off, buf[:0])]))
# The machine's own round trip over a pair of pipes: a child that
# echoes 64 bytes, each way one write and one read, as a request and
# its reply are (what waking a process on the other CPU costs shows
# here: on a virtual machine it is most of it).
import subprocess
echo = subprocess.Popen([sys.executable, "-c", "import os\\nwhile True:\\n    b = os.read(0, 64)\\n    if not b: break\\n    os.write(1, b)"],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
w, r, msg = echo.stdin.fileno(), echo.stdout.fileno(), b"x" * 64
def ping():
    os.write(w, msg)
    os.read(r, 64)
pipe = med(ping)
echo.stdin.close(); echo.wait()
out(lazy_us=lazy, read4k_us=read4k, read0_us=read0, overhead_us=lazy - (read4k - read0), pipe_us=pipe)
"""

MANY = """
path, = ARGS
t0 = time.perf_counter(); z = npzfs.open(path); f = z.files; t1 = time.perf_counter()
out(secs=t1 - t0, keys=len(f))
"""


class Bench:
    def __init__(self, npzfs, data, size, rounds):
        self.npzfs, self.data, self.size, self.rounds = npzfs, data, size, rounds
        # The package's bytecode compiled once (into its __pycache__,
        # which git ignores), as an installed wheel has it.
        self.env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), NPZFS_BINARY=npzfs)
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run([PY, "-m", "compileall", "-q", os.path.join(ROOT, "python", "npzfs")], env=self.env, check=True)
        self.res = {}
        self.load = [0.0]
        self.waited = 0.0

    def run(self, key, code, *args, rounds=None):
        """Runs code in rounds fresh processes; keeps each round's
        key=value pairs under key (or why it failed)."""
        for _ in range(rounds or self.rounds):
            p = subprocess.run([PY, "-c", PRELUDE + code, json.dumps(list(args))], env=self.env, capture_output=True, text=True, timeout=1800)
            if p.returncode != 0:
                self.res.setdefault(key + ".err", []).append((p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1])
                return
            self.res.setdefault(key, []).append(dict(kv.split("=", 1) for kv in p.stdout.split()))

    def run_turns(self, *runs):
        """Runs each (key, code, *args) of runs once a round, in turn, so
        that whatever the machine does meanwhile falls on each alike."""
        for _ in range(self.rounds):
            for key, code, *args in runs:
                self.run(key, code, *args, rounds=1)

    def quiet(self, limit=60.0):
        """Waits, up to limit seconds, for a second in which the CPUs are
        idle nine-tenths of the time (the steps before may leave work
        behind: a daemon exiting, pages written back), so that the
        timings after it see the machine as they would alone."""
        def ticks():
            with open("/proc/stat") as f:
                v = [int(x) for x in f.readline().split()[1:]]
            return sum(v), v[3] + v[4]
        t0 = time.monotonic()
        while time.monotonic() - t0 < limit:
            a = ticks()
            time.sleep(1)
            b = ticks()
            if b[0] > a[0] and (b[1] - a[1]) / (b[0] - a[0]) >= 0.9:
                break
        self.waited += time.monotonic() - t0

    def med(self, key, field):
        vals = [float(r[field]) for r in self.res.get(key, []) if field in r]
        return statistics.median(vals) if vals else None

    def warm(self, path):
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass

    def mount(self, path):
        """A fresh mount of path (--no-index) and its daemon's pid, or
        None where FUSE is not."""
        mnt = tempfile.mkdtemp(prefix="npzfs-open-bench-")
        p = subprocess.run([self.npzfs, "mount", "--no-index", path, mnt], capture_output=True, text=True)
        if p.returncode != 0:
            os.rmdir(mnt)
            self.res.setdefault("mount.err", []).append(p.stderr.strip())
            return None
        return mnt, daemon(mnt)

    def unmount(self, mnt):
        subprocess.run([self.npzfs, "unmount", mnt], capture_output=True)
        os.rmdir(mnt)


def daemon(mnt):
    """The pid of the npzfs daemon serving mnt."""
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if b"--ready-fd=3" in args and os.fsencode(mnt) in args:
            return int(pid)
    return 0


def write_stored(path, nbytes):
    """np.savez's archive of one float32 array x of nbytes, streamed (the
    array is never whole in memory), unless it is there already."""
    if os.path.exists(path) and os.path.getsize(path) > nbytes:
        return
    import numpy as np

    n = nbytes // 4
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
        with z.open("x.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": (n,)})
            chunk = 1 << 24
            for start in range(0, n, chunk):
                m = min(chunk, n - start)
                f.write(np.arange(start, start + m, dtype="<f4").tobytes())
    os.rename(tmp, path)


def measure(b):
    b.load = [os.getloadavg()[0]]
    d, size = b.data, SIZES[b.size]
    for name in ("bigdefl", "many"):
        if not os.path.exists(os.path.join(d, name + ".npz")):
            subprocess.run([PY, os.path.join(ROOT, "scripts/bench/gen.py"), d, name, GEN_PARAMS[b.size]], check=True)
    stored, bigdefl, many = os.path.join(d, "open4g.npz"), os.path.join(d, "bigdefl.npz"), os.path.join(d, "many.npz")
    write_stored(stored, size["open_bytes"])
    b.warm(stored)
    b.quiet()
    b.run("open", OPEN_STORED, stored)
    offset, nbytes = int(b.res["open"][0]["offset"]), int(b.res["open"][0]["bytes"])
    b.run_turns(("read", READ_STORED, stored), ("memmap", MEMMAP, stored, offset, nbytes // 4),
                ("fromfile", FROMFILE, stored, offset, nbytes // 4))
    b.warm(bigdefl)
    idx = tempfile.mkdtemp(prefix="npzfs-open-bench-index-")
    t0 = time.perf_counter()
    p = subprocess.run([b.npzfs, "index", "--index-dir", idx, bigdefl], capture_output=True, text=True)
    b.res["index"] = [{"secs": str(time.perf_counter() - t0), "ok": str(p.returncode == 0)}]
    b.run("rows", ROWS, bigdefl, idx, 1000)
    subprocess.run(["rm", "-rf", idx])
    b.run("npload", NPLOAD, bigdefl, "z")
    for depth in (0.25, 0.5, 0.9):
        key = "depth.%d" % round(depth * 100)
        b.run(key, DEPTH, bigdefl, depth)
        off = b.med(key, "offset")
        for _ in range(b.rounds):
            m = b.mount(bigdefl)
            if m is None:
                break
            b.run(key + ".mount", PREAD, os.path.join(m[0], "z.npy"), int(off), m[1], rounds=1)
            b.unmount(m[0])
    b.run("asarray", ASARRAY, bigdefl)
    for _ in range(b.rounds):
        m = b.mount(bigdefl)
        if m is None:
            break
        b.run("mounted", MOUNTED, os.path.join(m[0], "z.npy"), rounds=1)
        b.unmount(m[0])
    b.quiet()
    b.run("roundtrip", ROUNDTRIP, bigdefl)
    b.warm(many)
    b.run("many", MANY, many)
    b.load.append(os.getloadavg()[0])


def fmt(x, unit, digits=2):
    return "not measured" if x is None else f"{x:.{digits}f} {unit}"


def section(b):
    m = b.med
    rows = []

    def row(name, n, ref, ratio, target, ok):
        rows.append(f"| {name} | {n} | {ref} | {ratio} | {target} | {'—' if ok is None else ('yes' if ok else '**no**')} |")

    gib = (int(b.res["open"][0]["bytes"]) / 2**30) if b.res.get("open") else 0
    ms, mb = m("open", "ms"), m("open", "rss_mb")
    row(f"`npzfs.open` + `z[key]` of a stored {gib:g} GiB array: time, RSS growth", f"{fmt(ms, 'ms')}, {fmt(mb, 'MB')}", "", "",
        "<= 10 ms, <= 10 MB", None if ms is None or mb is None else ms <= 10 and mb <= 10)
    r, f, mm = m("read", "mbps"), m("fromfile", "mbps"), m("memmap", "mbps")
    q = r / f if r and f else None
    row("  `np.array(z[key])`, the memory map read whole", fmt(r, "MiB/s", 0),
        f"`np.fromfile` of the same bytes: {fmt(f, 'MiB/s', 0)}; `np.array` of numpy's own `np.memmap` of them: {fmt(mm, 'MiB/s', 0)}",
        fmt(q, "x"), ">= 0.9x", None if q is None else q >= 0.9)
    r, f, mm = m("read", "into_mbps"), m("fromfile", "into_mbps"), m("memmap", "into_mbps")
    q = r / f if r and f else None
    row("  the same into a buffer touched beforehand: `np.copyto(buf, z[key])`", fmt(r, "MiB/s", 0),
        f"`readinto` (np.fromfile's read): {fmt(f, 'MiB/s', 0)}; `np.copyto` from numpy's own `np.memmap`: {fmt(mm, 'MiB/s', 0)}",
        fmt(q, "x"), ">= 0.9x", None if q is None else q >= 0.9)
    defl = f"{(m('asarray', 'bytes') or 0) / 2**30:g} GiB"
    med, p99, first = m("rows", "median_ms"), m("rows", "p99_ms"), m("rows", "first_ms")
    row(f"{defl} deflated member, saved index: 1,000 random reads of 4-64 KiB", f"median {fmt(med, 'ms', 3)}, p99 {fmt(p99, 'ms')} (first {fmt(first, 'ms')})",
        "", "", "median <= 1 ms, p99 <= 5 ms", None if med is None or p99 is None else med <= 1 and p99 <= 5)
    ls, lr = m("npload", "secs"), m("npload", "maxrss_mb")
    row("  np.load of the same member, for comparison", "", f"{fmt(ls, 's')}, peak RSS {fmt(lr, 'MiB', 0)}", "", "—", None)
    for depth in (25, 50, 90):
        o, t = m(f"depth.{depth}", "secs"), m(f"depth.{depth}.mount", "secs")
        oc, tc = m(f"depth.{depth}", "cpu"), m(f"depth.{depth}.mount", "cpu")
        q = t / o if o and t else None
        row(f"  no index: first read at {depth}% (4 KiB); CPU time of the server and of the daemon", f"{fmt(o, 's', 3)} ({fmt(oc, 's CPU')})",
            f"the mount's first pread there: {fmt(t, 's', 3)} ({fmt(tc, 's CPU')})", fmt(q, "x"), "<= the mount's", None if q is None else o <= t)
    a, mo = m("asarray", "mbps"), m("mounted", "mbps")
    q = a / mo if a and mo else None
    row(f"`np.asarray(z[key])` of the {defl} deflated member, no index", fmt(a, "MiB/s", 0), f"`np.load(MNT/z.npy)`, fresh mount: {fmt(mo, 'MiB/s', 0)}",
        fmt(q, "x"), ">= 0.8x", None if q is None else q >= 0.8)
    lz, r4, r0, ov, pp = (m("roundtrip", f) for f in ("lazy_us", "read4k_us", "read0_us", "overhead_us", "pipe_us"))
    row("4 KiB read of a cached span: `a[k:k+1024]` over the server's own work", fmt(ov, "µs", 1),
        f"the whole call {fmt(lz, 'µs', 1)}; a 4 KiB read request {fmt(r4, 'µs', 1)}, an empty one {fmt(r0, 'µs', 1)}; "
        f"64 bytes to a child process and back over pipes: {fmt(pp, 'µs', 1)}", "", "<= 50 µs",
        None if ov is None else ov <= 50)
    s, k = m("many", "secs"), m("many", "keys")
    row(f"`npzfs.open` + `z.files` of a {k or 0:,.0f}-member archive", fmt(s, "s", 3), "", "", "<= 0.5 s", None if s is None else s <= 0.5)
    errs = [f"- {k}: {v[0]}" for k, v in sorted(b.res.items()) if k.endswith(".err")]
    out = ["## npzfs.open, no FUSE (issue 38)\n",
           f"From `scripts/bench/open.py` ({b.size}, {b.rounds} rounds, medians; each figure a fresh Python process; "
           f"load average {b.load[0]:.1f} at the start, {b.load[-1]:.1f} at the end, on {os.cpu_count()} cores; "
           f"{b.waited:.0f} s spent waiting for idle CPUs before the timed steps). "
           "The three whole reads of the stored array run in turn, a round each, each process mapping or reading anew. "
           "The stored array is mapped from the archive file (page cache warm); the deflated member is bench-data's bigdefl.npz, "
           "its index built by `npzfs index` for the random reads, none elsewhere; the mount's figures come from a fresh "
           "`npzfs mount --no-index` each.\n",
           "| workload | npzfs.open | reference (same run) | ratio | target | met |", "| --- | --- | --- | --- | --- | --- |", *rows]
    if errs:
        out += ["", "Failures:", *errs]
    return "\n".join(out) + "\n"


def write(md, text):
    with open(md) as f:
        s = f.read()
    block = BEGIN + "\n" + text + "\n" + END
    if BEGIN in s and END in s:
        s = s[:s.index(BEGIN)] + block + s[s.index(END) + len(END):]
    else:
        s = s.rstrip("\n") + "\n\n" + block + "\n"
    with open(md, "w") as f:
        f.write(s)


def main(argv):
    args = list(argv)
    opts = {"--size": "full", "--rounds": "3", "--write": None}
    pos = []
    while args:
        a = args.pop(0)
        if a in opts:
            opts[a] = args.pop(0)
        else:
            pos.append(a)
    if len(pos) != 2 or opts["--size"] not in SIZES:
        sys.exit(__doc__)
    b = Bench(os.path.abspath(pos[0]), os.path.abspath(pos[1]), opts["--size"], int(opts["--rounds"]))
    os.makedirs(b.data, exist_ok=True)
    measure(b)
    text = section(b)
    print(text)
    if opts["--write"]:
        write(opts["--write"], text)


if __name__ == "__main__":
    main(sys.argv[1:])
