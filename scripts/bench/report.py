#!/usr/bin/python3
"""Turn the results scripts/bench.sh recorded into its table.

    report.py RESULTS.tsv GOBENCH.txt [--write BENCHMARKS.md]

RESULTS.tsv has one measurement a line: KEY<TAB>VALUE, where VALUE is
"k=v k=v ..." for measurements and KEY ends in .err (or .timeout) when the
step failed. Repeated keys are rounds; the table shows their median.
With --write, the part of BENCHMARKS.md between the results markers is
replaced by the tables (the prose around it is kept).
"""
import re
import statistics
import sys
from collections import defaultdict

BEGIN = "<!-- results:begin (written by scripts/bench.sh; edits here are overwritten) -->"
END = "<!-- results:end -->"
MiB = 1048576.0
RATIO_NOTE = ("ratio: how many times better npzfs does than the reference "
              "(throughput: npzfs / reference; time and memory: reference / npzfs). MiB/s = 2^20 bytes a second.")


def load(path):
    res = defaultdict(list)
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if "\t" in line:
                k, v = line.split("\t", 1)
                res[k].append(v)
    return res


def parse_kv(s):
    out = {}
    for part in s.split():
        if "=" in part:
            k, v = part.split("=", 1)
            out[k] = v
    return out


class R:
    def __init__(self, res):
        self.res = res

    def nums(self, key, field):
        out = []
        for v in self.res.get(key, []):
            x = parse_kv(v).get(field)
            if x is not None:
                try:
                    out.append(float(x))
                except ValueError:
                    pass
        return out

    def med(self, key, field):
        xs = self.nums(key, field)
        return statistics.median(xs) if xs else None

    def max(self, key, field):
        xs = self.nums(key, field)
        return max(xs) if xs else None

    def err(self, key):
        for suffix in (".err", ".timeout"):
            if self.res.get(key + suffix):
                v = self.res[key + suffix][0]
                return ("timed out after %s s" % v) if suffix == ".timeout" else v
        return None

    def one(self, key, default=""):
        v = self.res.get(key)
        return v[0] if v else default


def fmt_num(x, unit, digits=None):
    if x is None:
        return None
    if digits is None:
        digits = 0 if abs(x) >= 100 else (1 if abs(x) >= 10 else (2 if abs(x) >= 1 else 3))
    return ("%." + str(digits) + "f %s") % (x, unit)


def cell(r, key, value, unit, digits=None):
    """A measured figure, or the reason there is none."""
    if value is not None:
        return fmt_num(value, unit, digits)
    e = r.err(key)
    if e:
        e = re.sub(r"/tmp/npzfs-bench\.[^/ ']+/mnt", "MNT", e)
    return ("FAILED: " + e) if e else "not measured"


def ratio_str(x):
    if x is None:
        return "—"
    if x >= 100:
        return "%.0fx" % x
    if x >= 10:
        return "%.1fx" % x
    return "%.2fx" % x


def human(nbytes):
    if not nbytes:
        return "?"
    for unit, div_ in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= div_:
            v = nbytes / div_
            return ("%d %s" if abs(v - round(v)) < 0.05 else "%.1f %s") % (round(v) if abs(v - round(v)) < 0.05 else v, unit)
    return "%d B" % nbytes


def np_sample(r):
    """numpy's key-by-key loop estimated from random samples of keys (one per
    round): medians over rounds of the estimate, its standard error, the
    per-key mean, the sample size and np.load's own time; None if none."""
    runs = [parse_kv(v) for v in r.res.get("s5.npzsample", [])]
    runs = [x for x in runs if "est_secs" in x]
    if not runs:
        return None
    med = lambda f: statistics.median(float(x[f]) for x in runs)
    return {"est": med("est_secs"), "se": med("se_secs"), "mean_ms": med("mean_ms"), "sd_ms": med("sd_ms"),
            "median_ms": med("median_ms"), "max_ms": max(float(x["max_ms"]) for x in runs),
            "open": med("open_secs"), "k": int(med("sample")), "n": int(med("keys")), "rounds": len(runs),
            "seeds": ",".join(x.get("seed", "?") for x in runs)}


class Rows:
    """The rows of the table, added by calling it with a measurement and
    its reference."""

    def __init__(self, r):
        self.r = r
        self.rows = []

    def __call__(self, id_, name, nval, nkey, nunit, rval, rkey, runit, rname, ratio, target, ok, digits=None):
        n = cell(self.r, nkey, nval, nunit, digits)
        ref = "—" if rname is None else "%s: %s" % (rname, cell(self.r, rkey, rval, runit, digits))
        met = "—" if ok is None else ("met" if ok else "NOT met")
        if ok is None and target != "—" and (nval is None):
            met = "not measured"
        self.rows.append((id_, name, n, ref, ratio_str(ratio), target, met))

    def ratio_text(self, text):
        """Says the last row's ratio in words."""
        self.rows[-1] = self.rows[-1][:4] + (text,) + self.rows[-1][5:]

    def met_text(self, text):
        """Says whether the last row met its target in words."""
        self.rows[-1] = self.rows[-1][:-1] + (text,)


def div(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def fmt_count(x):
    return "?" if x is None else "%d" % x


def passrate(r, key):
    """MiB/s of a pass recorded as bytes and secs."""
    b, t = r.med(key, "bytes"), r.med(key, "secs")
    return div(b / MiB if b is not None else None, t)


def build(r, gobench):
    """The table's rows: (id, benchmark, npzfs, reference, ratio, target,
    met), a function for each step or two."""
    row = Rows(r)
    stored_rows(r, row)
    deflated_rows(r, row)
    index_rows(r, row)
    packed_rows(r, row)
    inflater_rows(r, row)
    many_rows(r, row)
    many_local_rows(r, row)
    verify_rows(r, row, div)
    return row.rows


def stored_rows(r, row):
    """Rows of steps 1 and 2: a stored array read through the mount, and mapped by numpy."""
    stored_h = human(r.med("s1.direct.raw.1m", "bytes"))
    # 1. stored array, sequential
    for kind, label, tgt, t in (("first", "first read, fresh mount", ">= 0.5x", 0.5),
                                ("second", "second read, same mount", ">= 0.9x", 0.9)):
        for f, fname, dkey in (("raw", "x/raw.bin", "s1.direct.raw.1m"), ("npy", "x.npy", "s1.direct.npy.1m")):
            nkey = "s1.%s.%s.1m" % (kind, f)
            n, d = r.med(nkey, "mbps"), r.med(dkey, "mbps")
            q = div(n, d)
            row("1", "stored %s: %s %s, 1 MiB reads" % (stored_h, fname, label), n, nkey, "MiB/s", d, dkey, "MiB/s",
                "same range of the archive file", q, tgt, None if q is None else q >= t)

    n, d = r.med("s1.third.raw.1m", "mbps"), r.med("s1.direct.raw.1m", "mbps")
    q = div(n, d)
    row("1", "  x/raw.bin third read, same mount (page activation done)", n, "s1.third.raw.1m", "MiB/s", d,
        "s1.direct.raw.1m", "MiB/s", "same range of the archive file", q, "—", None)

    # 2. numpy memory map
    n, d = r.med("s2.mmap", "secs"), r.med("s2.npz", "secs")
    q = div(d, n)
    row("2", "np.load(x.npy, mmap_mode='r') + one element, fresh mount: time",
        None if n is None else n * 1e3, "s2.mmap", "ms", None if d is None else d * 1e3, "s2.npz", "ms",
        "np.load(npz)['x']", q, ">= 100x faster", None if q is None else q >= 100)
    lo = r.med("s2.local", "secs")
    row("2", "  the same call on a local .npy (numpy's own floor)", None if n is None else n * 1e3, "s2.mmap", "ms",
        None if lo is None else lo * 1e3, "s2.local", "ms", "local file, same header", div(lo, n), "—", None)
    n, d = r.med("s2.mmap", "maxrss_kb"), r.med("s2.npz", "maxrss_kb")
    q = div(d, n)
    row("2", "  the same: peak RSS of the Python process (ru_maxrss)",
        None if n is None else n / 1024, "s2.mmap", "MiB", None if d is None else d / 1024, "s2.npz", "MiB",
        "np.load(npz)['x']", q, ">= 50x smaller", None if q is None else q >= 50)



def deflated_rows(r, row):
    """Rows of steps 3 and 4: a deflated array read in full and at random."""
    defl_h = human((r.med("s3.first.npy", "bytes") or 0) - 128)
    # 3. deflated, sequential
    nbytes = r.med("s3.first.npy", "bytes")
    n = r.med("s3.first.npy", "mbps")
    us = r.med("s3.unzip", "secs")
    u = div(nbytes / MiB if nbytes else None, us)
    q = div(n, u)
    row("3", "deflated %s: y.npy read in full, fresh mount" % defl_h, n, "s3.first.npy", "MiB/s", u, "s3.unzip", "MiB/s",
        "unzip -p", q, ">= 1.5x", None if q is None else q >= 1.5)
    ns = r.med("s3.numpy", "secs")
    m = div(nbytes / MiB if nbytes else None, ns)
    row("3", "  the same vs numpy", n, "s3.first.npy", "MiB/s", m, "s3.numpy", "MiB/s",
        "np.load(npz)['y']", div(n, m), "—", None)
    ni = r.med("s3.indexed.npy", "mbps")
    row("3", "  the same, fresh mount with its index saved before", ni, "s3.indexed.npy", "MiB/s", u, "s3.unzip", "MiB/s",
        "unzip -p", div(ni, u), "—", None)

    # 4. deflated, random
    first = r.med("s4.rand", "first_ms")
    row("4", "deflated: first 4 KiB pread at a random offset, fresh mount", first, "s4.rand", "ms",
        None if ns is None else ns * 1e3, "s3.numpy", "ms", "np.load(npz)['y'] (whole array)",
        div(ns * 1e3 if ns else None, first), "—", None)
    med = r.med("s4.rand", "median_ms")
    row("4", "  1,000 random 4 KiB preads: median", med, "s4.rand", "ms", None, None, None, None, None,
        "<= 2 ms", None if med is None else med <= 2)
    p99 = r.med("s4.rand", "p99_ms")
    row("4", "  1,000 random 4 KiB preads: p99", p99, "s4.rand", "ms", None, None, None, None, None,
        "<= 10 ms", None if p99 is None else p99 <= 10)
    rss = max(map(float, r.res["rss.npzfs.bigdefl"])) / 1024 if r.res.get("rss.npzfs.bigdefl") else None
    big_h = human((r.med("s4.big.seq", "bytes") or 0) - 128)
    row("4", "daemon peak RSS serving a %s deflated member (full + random reads)" % big_h, rss,
        "s4.big.seq", "MiB", None, None, None, None, None, "<= 64 MiB", None if rss is None else rss <= 64)



def index_rows(r, row):
    """Rows of steps 4b and 4d: saved indexes, first reads at depths, background indexing."""
    big_h = human((r.med("s4.big.seq", "bytes") or 0) - 128)
    # 4b. saved indexes, depths (issue 11)
    p1, p2 = passrate(r, "s4b.pass.w1"), passrate(r, "s4b.pass.w2")
    q = div(p2, p1)
    split = r.med("s4b.pass.w2", "split")
    row("4b", "deflated %s: the first pass (`npzfs index`), split among 2 threads%s" % (big_h, "" if split else " (NOT split)"),
        p2, "s4b.pass.w2", "MiB/s", p1, "s4b.pass.w1", "MiB/s", "on 1 thread (--workers 1)", q,
        ">= 1.7x", None if q is None else q >= 1.7)
    isecs, ibytes = r.med("s4b.index", "secs"), r.med("s4b.index", "bytes")
    row("4b", "  `npzfs index` as run (every core), building the index used below",
        div(ibytes / MiB if ibytes else None, isecs), "s4b.index", "MiB/s", None, None, None, None, None, "—", None)
    isize, idata = r.med("s4b.size", "bytes"), r.med("s4b.size", "data")
    pct = div(isize * 100 if isize is not None else None, idata)
    row("4b", "  its index on disk, %% of the data (%s bytes)" % ("?" if isize is None else "%d" % isize),
        pct, "s4b.size", "%", None, None, None, None, None, "<= 0.5%", None if pct is None else pct <= 0.5, digits=3)
    first, med = r.med("s4b.rand", "first_ms"), r.med("s4b.rand", "median_ms")
    q = div(first, med)
    row("4b", "  fresh mount with the saved index: first 4 KiB pread at a random offset", first, "s4b.rand", "ms",
        med, "s4b.rand", "ms", "the next 999 on that mount (index in memory), median", None,
        "<= 5 ms and <= 2x", None if first is None or q is None else (first <= 5 and q <= 2))
    if q is not None:
        row.ratio_text("%.2fx as long" % q)
    for d in (25, 50, 75, 100):
        a, g = r.med("s4b.alone.%d" % d, "secs"), r.med("s4b.together.%d" % d, "secs")
        q = div(g, a)
        row("4b", "  fresh mount, no index: first read at %d%% with three others at 25/50/75/100%%" % d,
            g, "s4b.together.%d" % d, "s", a, "s4b.alone.%d" % d, "s", "the same read alone", None,
            "<= 1.3x as long", None if q is None else q <= 1.3)
        if q is not None:
            row.ratio_text("%.2fx as long" % q)

    # 4d. background indexing against none (issue 26)
    def ms(secs):
        return None if secs is None else secs * 1000

    ns, bs_ = r.med("s4d.none.shallow", "secs"), r.med("s4d.bg.shallow", "secs")
    row("4d", "fresh mount, no saved index: first 4 KiB read at 1%, `--index` indexing in the background", ms(bs_),
        "s4d.bg.shallow", "ms", ms(ns), "s4d.none.shallow", "ms", "the same read without `--index`", None, "—", None)
    q = div(bs_, ns)
    if q is not None:
        row.ratio_text("%.2fx as long" % q)
    done, cpu = r.med("s4d.bg.done", "secs"), r.med("s4d.bg.done", "cpu")
    row("4d", "  `--index`: background indexing done, seconds after the mount started (daemon CPU %s s)" %
        ("?" if cpu is None else "%.2f" % cpu), done, "s4d.bg.done", "s", None, None, None, None, None, "—", None)
    nd, bd = r.med("s4d.none.deep", "secs"), r.med("s4d.bg.deep", "secs")
    row("4d", "  then a first 4 KiB read at 90%", ms(bd), "s4d.bg.deep", "ms", ms(nd), "s4d.none.deep", "ms",
        "the same read on a fresh mount without `--index`", div(nd, bd), "—", None)


def packed_rows(r, row):
    """Rows of step 4e: the deflated member packed (SOZip chunks), issue 40."""
    big_h = human((r.med("s4.big.seq", "bytes") or 0) - 128)

    def ms(secs):
        return None if secs is None else secs * 1000

    pd, ud = r.med("s4e.packed.deep", "secs"), r.med("s4e.plain.deep", "secs")
    row("4e", "%s deflated member packed (`npzfs pack`, SOZip chunks of 1 MiB): fresh mount, empty index folder, "
        "first 4 KiB read at 90%%" % big_h, ms(pd), "s4e.packed.deep", "ms", ms(ud), "s4e.plain.deep", "ms",
        "the same read of the archive as numpy wrote it", div(ud, pd), "<= 5 ms",
        None if pd is None else pd * 1000 <= 5)
    seq = r.med("s4e.packed.seq", "mbps")
    b1, t1, cores = r.med("s4e.onecore", "bytes"), r.med("s4e.onecore", "secs"), r.med("s4e.onecore", "cores")
    one = div(b1 / MiB if b1 is not None else None, t1)
    ref = None if one is None or cores is None else one * cores
    q = div(seq, ref)
    row("4e", "  the packed member read whole (z.npy, 1 MiB reads), fresh mount", seq, "s4e.packed.seq", "MiB/s",
        ref, "s4e.onecore", "MiB/s", "%s cores x one core's inflate of its stream (%s)" % (
            "?" if cores is None else "%d" % cores, "?" if one is None else "%.0f MiB/s" % one),
        q, ">= 0.9x", None if q is None else q >= 0.9)
    # What the cores could give at most: the read's bytes over the CPU
    # time it took in all (the daemon's, the reader's) shared by the
    # cores, as if none were ever idle.
    sb, dc = r.med("s4e.packed.seq", "bytes"), r.med("s4e.packed.seq", "daemon_cpu")
    ru, rs = r.med("s4e.packed.seq", "usr"), r.med("s4e.packed.seq", "sys")
    spent = None if None in (dc, ru, rs) else dc + ru + rs
    cap = None if spent is None or cores is None or sb is None else sb / MiB / (spent / cores)
    row("4e", "    its CPU: the daemon's %s s (one core inflates the stream in %s s), the reader's %s s; "
        "the most the cores give at that CPU cost" % (
            "?" if dc is None else "%.2f" % dc, "?" if t1 is None else "%.2f" % t1,
            "?" if ru is None else "%.2f" % (ru + rs)),
        cap, "s4e.packed.seq", "MiB/s", seq, "s4e.packed.seq", "MiB/s", "the read itself", div(seq, cap), "—", None)
    ps, pin, pout, pdata = (r.med("s4e.pack", f) for f in ("secs", "in", "out", "data"))
    speed = div(pdata / MiB if pdata is not None else None, ps)
    zb, zs = r.med("s4e.zlib6", "bytes"), r.med("s4e.zlib6", "secs")
    z1 = div(zb / MiB if zb is not None else None, zs)
    zref = None if z1 is None or cores is None else z1 * cores
    q = div(speed, zref)
    row("4e", "`npzfs pack` of that archive as numpy wrote it (%s of array data), MiB/s of array data" % human(pdata or 0),
        speed, "s4e.pack", "MiB/s", zref, "s4e.zlib6", "MiB/s", "%s cores x Python's zlib at level 6 on one core (%s)" % (
            "?" if cores is None else "%d" % cores, "?" if z1 is None else "%.1f MiB/s" % z1),
        q, ">= 0.8x", None if q is None else q >= 0.8)
    sq = div(pout, pin)
    row("4e", "  the packed archive's size", None if pout is None else pout / MiB, "s4e.pack", "MiB",
        None if pin is None else pin / MiB, "s4e.pack", "MiB", "the archive as numpy wrote it", sq, "<= 1.03x",
        None if sq is None else sq <= 1.03)


def inflater_rows(r, row):
    """Rows of step 4c: the inflater on one core, and the first pass split."""
    # 4c. the inflater on one core (issue 11)
    for kind, label, bar in (("noise", "float32 normal noise", 420), ("walk", "int32 random walk", 550)):
        def mbs(key):
            b, t = r.med(key, "bytes"), r.med(key, "secs")
            return div(b / 1e6 if b is not None else None, t)
        n = mbs("s4c.npzfs.%s" % kind)
        best = None
        for tool in ("igzip", "libdeflate-gunzip"):
            v = mbs("s4c.%s.%s" % (tool, kind))
            if v is not None and (best is None or v > best[1]):
                best = (tool, v)
        q = div(n, best[1] if best else None)
        row("4c", "inflater on one core, %s deflated by zlib level 6, in MB/s" % label, n, "s4c.npzfs.%s" % kind, "MB/s",
            best[1] if best else None, "s4c.%s.%s" % (best[0] if best else "igzip", kind), "MB/s",
            "fastest of igzip, libdeflate-gunzip (%s)" % (best[0] if best else "none measured"), q,
            ">= %d MB/s and >= 0.83x" % bar, None if n is None or q is None else (n >= bar and q >= 1 / 1.2))

    # 4c. the first pass over the same streams (issue 11)
    for kind, label in (("noise", "float32 normal noise"), ("walk", "int32 random walk")):
        p1, p2 = passrate(r, "s4c.pass1.%s" % kind), passrate(r, "s4c.pass2.%s" % kind)
        q = div(p2, p1)
        split = r.med("s4c.pass2.%s" % kind, "split")
        row("4c", "first pass of the %s stream, split among 2 threads%s" % (label, "" if split else " (NOT split)"),
            p2, "s4c.pass2.%s" % kind, "MiB/s", p1, "s4c.pass1.%s" % kind, "MiB/s", "on 1 thread", q, "—", None)
        isize, idata = r.med("s4c.pass1.%s" % kind, "index"), r.med("s4c.pass1.%s" % kind, "bytes")
        pct = div(isize * 100 if isize is not None else None, idata)
        bar = "<= 0.5%" if kind == "noise" else "— (bar for float32)"
        isplit = r.med("s4c.pass2.%s" % kind, "index")
        row("4c", "  its index, %% of the data (%s bytes; from the split pass: %s)" % (
            "?" if isize is None else "%d" % isize, "?" if isplit is None else "%d" % isplit),
            pct, "s4c.pass1.%s" % kind, "%", None, None, None, None, None, bar,
            None if pct is None or kind != "noise" else pct <= 0.5, digits=3)



def many_rows(r, row):
    """Rows of step 5: many small arrays."""
    # 5. many small arrays
    count = r.one("s5.expect")
    cnt = parse_kv(count).get("files", "?")
    n, d = r.med("s5.mount", "secs"), r.med("s5.npopen", "secs")
    row("5", "%s arrays: `npzfs mount` (background) returns" % cnt, n, "s5.mount", "s", d, "s5.npopen", "s",
        "np.load(npz).files", div(d, n), "<= 0.3 s", None if n is None else n <= 0.3)
    z = r.med("s5.zipinfo", "secs")
    for how, name in (("-f", "ls -f"), ("plain", "ls")):
        n = r.med("s5.ls" + how, "secs")
        row("5", "  `%s` of the root, fresh mount" % name, n, "s5.ls" + how, "s", z, "s5.zipinfo", "s",
            "unzip -Z1", div(z, n), "<= 0.5 s", None if n is None else n <= 0.5)
    # numpy's key-by-key loop, without its np.load (the mount time is not
    # counted on the npzfs side either; both openings have their own row).
    # The full loop when it was run (only when short), else its estimate
    # from a random sample of keys (see npbench.py npzsample).
    tot, op = r.nums("s5.npzall", "secs"), r.nums("s5.npzall", "open_secs")
    npall = statistics.median([a - b for a, b in zip(tot, op)]) if tot and op else None
    npall_to = r.res.get("s5.npzall.timeout")
    smp = np_sample(r)
    for key, name in (("s5.readall", "read every KEY.npy (C reader)"),
                      ("s5.npdirall", "np.load every KEY.npy")):
        n = r.med(key, "secs")
        if npall is not None:
            rq = div(npall, n)
            row("5", "  %s, fresh mount" % name, n, key, "s", npall, "s5.npzall", "s",
                "NpzFile z[k] for every key (full loop)", rq, ">= 10x", None if rq is None else rq >= 10)
        elif smp and n:
            # Estimated: ratio and verdict use the point estimate; the 95%
            # interval (estimate +- 1.96 standard errors) is shown, and said
            # when it reaches across the target.
            rq = smp["est"] / n
            lo, hi = (smp["est"] - 1.96 * smp["se"]) / n, (smp["est"] + 1.96 * smp["se"]) / n
            met = "met" if rq >= 10 else "NOT met"
            if lo < 10 <= hi:
                met += " (estimate; its 95% interval spans the target)"
            row.rows.append(("5", "  %s, fresh mount" % name, fmt_num(n, "s"),
                         "NpzFile z[k] for every key, estimated from a %s-key random sample: %s "
                         "(95%% sampling interval %s to %s; %.3g ms a key)" % (
                             "{:,}".format(smp["k"]), fmt_num(smp["est"], "s"),
                             fmt_num(smp["est"] - 1.96 * smp["se"], "s"),
                             fmt_num(smp["est"] + 1.96 * smp["se"], "s"), smp["mean_ms"]),
                         ratio_str(rq) + " (est.)", ">= 10x", met))
        elif npall_to and n:
            # numpy did not finish: its time is at least the bound minus its open.
            lower = float(npall_to[0]) - (d or 0)
            rq = lower / n
            row.rows.append(("5", "  %s, fresh mount" % name, fmt_num(n, "s"),
                         "NpzFile z[k] for every key: > %.0f s (timed out at %s s)" % (lower, npall_to[0]),
                         ">= " + ratio_str(rq), ">= 10x", "met" if rq >= 10 else "not known"))
        else:
            key_ref = "s5.npzsample" if r.err("s5.npzsample") else "s5.npzall"
            row("5", "  %s, fresh mount" % name, n, key, "s", None, key_ref, "s",
                "NpzFile z[k] for every key", None, ">= 10x", None)
            if n is not None:
                row.met_text("not known")
    d_each, l_each = r.med("s5.npdirall", "secs"), r.med("s5.nplocal", "secs")
    dn, ln = r.med("s5.npdirall", "arrays"), r.med("s5.nplocal", "arrays")
    if d_each and l_each and dn and ln:
        a, b = d_each / dn * 1e6, l_each / ln * 1e6
        row("5", "  np.load of one KEY.npy, per file: mount vs local folder", a, "s5.npdirall", "µs",
            b, "s5.nplocal", "µs", "local (first %d members)" % ln, b / a, "—", None)
    rss_many = [float(v) for k in ("rss.npzfs.many-ls", "rss.npzfs.many-read") for v in r.res.get(k, [])]
    rss = max(rss_many) / 1024 if rss_many else None
    row("5", "  daemon peak RSS (ls, read every member)", rss, "s5.readall", "MiB", None, None, None, None, None,
        "<= 100 MiB", None if rss is None else rss <= 100)



def many_local_rows(r, row):
    """Rows of steps 5b to 5d: many arrays beside a local folder and the floor, a million arrays, many deflated ones."""
    # 5b. beside fuse-zip and a local folder of the same files (issue 22)
    n, ne = r.med("s5.ls-f", "secs"), r.med("s5.ls-f", "entries")
    f, fe = r.med("o.fuse-zip.ls-f", "secs"), r.med("o.fuse-zip.ls-f", "entries")
    a, b = div(n, ne), div(f, fe)
    q = div(b, a)
    row("5b", "  `ls -f` of the root, per entry listed", None if a is None else a * 1e6, "s5.ls-f", "µs",
        None if b is None else b * 1e6, "o.fuse-zip.ls-f", "µs", "fuse-zip, same archive", q,
        "<= 1.5x fuse-zip's", None if a is None or b is None else a <= 1.5 * b, digits=2)
    n, d = r.med("s5.lsl", "secs"), r.med("s5.lsl.tree", "secs")
    ne, de = r.med("s5.lsl", "entries"), r.med("s5.lsl.tree", "entries")
    q = div(d, n)
    row("5b", "  `ls -l` of the root, fresh mount", n, "s5.lsl", "s", d, "s5.lsl.tree", "s",
        "ls -l of a local folder of the same %s names (KEY.npy, KEY.ra, KEY/)" % ("?" if de is None else "%d" % de),
        q, "<= 2x as long", None if q is None else q >= 0.5)
    d = r.med("s5.lsl.local", "secs")
    row("5b", "  the same, beside the members alone", n, "s5.lsl", "s", d, "s5.lsl.local", "s",
        "ls -l of a local folder of the %s .npy files" % fmt_count(r.med("s5.lsl.local", "entries")),
        div(d, n), "—", None)
    de = r.med("s5.lsl.local", "entries")
    a, b = div(n, ne), div(d, de)
    row("5b", "  `ls -l` of the root, per entry (%s entries; the .npy files %s)" % (
        fmt_count(ne), fmt_count(de)),
        None if a is None else a * 1e6, "s5.lsl", "µs", None if b is None else b * 1e6, "s5.lsl.local", "µs",
        "local folder of the .npy files", div(b, a), "—", None, digits=2)
    a, d = r.med("s5.lsl.afterls", "secs"), r.med("s5.lsl.tree", "secs")
    q = div(d, a)
    row("5b", "  `ls -l` of the root after a plain `ls` (the kernel keeps its listing)", a, "s5.lsl.afterls", "s",
        d, "s5.lsl.tree", "s", "ls -l of the local folder of the same names", q, "—", None)
    n, d = r.med("s5.opendir.root", "secs"), r.med("s5.opendir.small", "secs")
    q = div(d, n)
    row("5b", "  opening the root 200 times, fresh mount", None if n is None else n * 1e3, "s5.opendir.root", "ms",
        None if d is None else d * 1e3, "s5.opendir.small", "ms", "a folder of 2 entries, as often", q,
        "<= 3x as long", None if q is None else q >= 1 / 3)
    for key, name, tgt, t in (("s5.nprand.listed", "after `ls -l` of the root", "<= 1.3x as long", 1.3),
                              ("s5.nprand.fresh", "fresh mount, no listing", "<= 1.5x as long", 1.5)):
        k = r.med(key, "arrays")
        a, b = div(r.med(key, "secs"), k), div(r.med(key, "ref_secs"), k)
        q = div(b, a)
        row("5b", "  np.load of 2,000 random KEY.npy, per file, %s" % name, None if a is None else a * 1e6, key, "µs",
            None if b is None else b * 1e6, key, "µs", "the same file in a local folder, loaded in turn", q,
            tgt, None if q is None else q >= 1 / t)
    # The floor: what np.load costs through FUSE itself on this machine.
    for key, name in (("s5.nprand.floor.listed", "after a stat of each"),
                      ("s5.nprand.floor.fresh", "fresh mount")):
        k = r.med(key, "arrays")
        a, b = div(r.med(key, "secs"), k), div(r.med(key, "ref_secs"), k)
        row("5b", "  the same, %s, through the floor (a minimal C daemon, scripts/bench/floor.c)" % name,
            None if a is None else a * 1e6, key, "µs", None if b is None else b * 1e6, key, "µs",
            "the same file in a local folder, loaded in turn", div(b, a), "—", None)
    floor_rows(r, row, div)
    # 5c. a million arrays
    n = r.med("s5m.mount", "secs")
    row("5c", "1,000,000 arrays: `npzfs mount` (background) returns", n, "s5m.mount", "s", None, None, None, None,
        None, "<= 1 s", None if n is None else n <= 1)
    rss = r.med("s5m.lsl", "rss_kb")
    n = r.med("s5m.lsl", "secs")
    row("5c", "  daemon resident memory after `ls -l` of the root (%s s)" % ("?" if n is None else "%.0f" % n),
        None if rss is None else rss * 1024 / 1e6, "s5m.lsl", "MB", None, None, None, None, None, "<= 200 MB",
        None if rss is None else rss * 1024 <= 200e6)
    fnd = parse_kv(r.one("s5m.find"))
    n = r.med("s5m.find", "secs")
    ok = None if not fnd else fnd.get("found") == fnd.get("expected")
    row("5c", "  `find MNT -name '*.npy' | wc -l` (found %s of %s)" % (fnd.get("found", "?"), fnd.get("expected", "?")),
        n, "s5m.find", "s", None, None, None, None, None, "finishes, right", ok)
    # 5d. many small deflated arrays, per file against step 5's stored ones
    a, b = r.med("s5d.readall", "us_per_file"), r.med("s5.readall", "us_per_file")
    cnt = r.med("s5d.readall", "files")
    row("5d", "%s small deflated arrays: read every KEY.npy (C reader), per file, fresh mount, index folder on"
        % ("?" if cnt is None else "{:,}".format(int(cnt))), a, "s5d.readall", "µs", b, "s5.readall", "µs",
        "step 5's stored arrays, per file", div(b, a), "—", None)
    nf = r.max("s5d.indexfiles", "files")
    row("5d", "  index files the reads wrote", nf, "s5d.indexfiles", "", None, None, None, None, None, "0",
        None if nf is None else nf == 0, digits=0)



def verify_rows(r, row, div):
    """Step 5e: what verification costs a member's first read, and its
    second mount; stored reads checked (strict) against auto."""
    vh = human(r.med("s5e.stored.direct", "bytes"))
    n, d = r.med("s5e.stored.first", "secs"), r.med("s5e.stored.direct", "secs")
    q = div(n, d)
    row("5e", "stored %s: first 4 KiB of v.npy, fresh mount, empty index folder (the member verified first)" % vh,
        None if n is None else n * 1e3, "s5e.stored.first", "ms", None if d is None else d * 1e3, "s5e.stored.direct",
        "ms", "reading its bytes once from the page cache", div(d, n), "<= 1.5x as long", None if q is None else q <= 1.5)
    n, d = r.med("s5e.defl.first", "secs"), r.med("s5e.defl.pass", "secs")
    q = div(n, d)
    row("5e", "deflated %s: first 4 KiB of y.npy, fresh mount, empty index folder (the member verified first)"
        % human(r.med("s5e.defl.pass", "bytes")), None if n is None else n * 1e3, "s5e.defl.first", "ms",
        None if d is None else d * 1e3, "s5e.defl.pass", "ms", "the parallel first pass over its stream",
        div(d, n), "<= 1x as long", None if q is None else q <= 1.0)
    for kind, name in (("stored", "v.npy"), ("defl", "y.npy")):
        key = "s5e.%s.second" % kind
        n, passes = r.med(key, "secs"), r.med(key, "passes")
        row("5e", "  %s: second mount, same index folder: first 4 KiB (verification passes: %s)"
            % (name, "?" if passes is None else "%d" % passes), None if n is None else n * 1e3, key, "ms",
            None, None, None, None, None, "no pass", None if passes is None else passes == 0)
    n, d = r.med("s5e.read.strict", "mbps"), r.med("s5e.read.auto", "mbps")
    row("5e", "  v/raw.bin read whole, 1 MiB reads, --verify=strict (every read checked)", n, "s5e.read.strict",
        "MiB/s", d, "s5e.read.auto", "MiB/s", "--verify=auto (verified once, then spliced)", div(n, d), "—", None)


def per_file(r, key, field="secs"):
    """A dirmany record's per-file time in µs (median of rounds)."""
    k = r.med(key, "arrays")
    t = r.med(key, field)
    return None if k in (None, 0) or t is None else t / k * 1e6


def floor_rows(r, row, div):
    """Issue 39: np.load of a small array against the floor (floor.c) in
    the same run, fresh and after each kind of listing, the daemons' CPU
    per load, and the C reader making np.load's system calls."""
    ff, fl = per_file(r, "s5.nprand.floor.fresh"), per_file(r, "s5.nprand.floor.listed")
    nf = per_file(r, "s5.nprand.fresh")
    q = div(ff, nf)
    row("5b", "  np.load per file, fresh mount, against the floor, fresh", nf, "s5.nprand.fresh", "µs",
        ff, "s5.nprand.floor.fresh", "µs", "floor.c", q, "<= 1.15x floor.c's", None if q is None else q >= 1 / 1.15)
    for how, name in (("listdir", "os.listdir"), ("ls", "ls"), ("listed", "ls -l"),
                      ("la.listdir", "os.listdir"), ("la.ls", "ls")):
        key = "s5.nprand." + how
        mounted = ", mounted with `--list-attrs`" if how.startswith("la.") else ""
        n = per_file(r, key)
        q = div(fl, n)
        row("5b", "  the same after `%s` of the root%s, against the floor after a stat of each" % (name, mounted),
            n, key, "µs",
            fl, "s5.nprand.floor.listed", "µs", "floor.c", q, "<= 1.15x floor.c's",
            None if q is None else q >= 1 / 1.15)
        q = div(nf, n)
        row("5b", "  the same after `%s`%s, against npzfs fresh" % (name, mounted), n, key, "µs", nf,
            "s5.nprand.fresh", "µs",
            "npzfs, fresh mount", q, "never slower", None if q is None else q >= 1)
    n, d = r.med("s5.ls-f.la", "secs"), r.med("s5.ls-f", "secs")
    row("5b", "  `ls -f` of the root, fresh mount with `--list-attrs` (the files' attributes in every reply)",
        n, "s5.ls-f.la", "s", d, "s5.ls-f", "s", "without it", div(d, n), "—", None)
    a, b = r.med("s5.nprand.fresh", "cpu_us"), r.med("s5.nprand.floor.fresh", "cpu_us")
    q = div(b, a)
    row("5b", "  daemon CPU per np.load, fresh mount (its threads' schedstat)", a, "s5.nprand.fresh", "µs",
        b, "s5.nprand.floor.fresh", "µs", "floor.c", q, "<= 1.5x floor.c's", None if q is None else q >= 1 / 1.5)
    for pyv in ("311", "314"):
        local = r.med("s5.npc%s.local" % pyv, "us_per_file")
        for how, name in (("fresh", "fresh mount"), ("listed", "after `ls -l` (the floor: a stat of each)")):
            key, fkey = "s5.npc%s.%s" % (pyv, how), "s5.npc%s.floor.%s" % (pyv, how)
            a, b = r.med(key, "us_per_file"), r.med(fkey, "us_per_file")
            row("5b", "  C reader making np.load's system calls as Python %s.%s does, per file, %s" % (
                pyv[0], pyv[1:], name), a, key, "µs", b, fkey, "µs",
                "floor.c (a local file: %s)" % ("?" if local is None else "%.1f µs" % local), div(b, a), "—", None)


def request_lines(r):
    """The FUSE requests per np.load, by kind, from npzfs's counters."""
    out = []
    for key, name in (("s5.nprand.fresh", "np.load, fresh mount"), ("s5.nprand.listdir", "after os.listdir"),
                      ("s5.nprand.ls", "after ls"), ("s5.nprand.listed", "after ls -l"),
                      ("s5.nprand.la.listdir", "after os.listdir with --list-attrs"),
                      ("s5.nprand.la.ls", "after ls with --list-attrs"),
                      ("s5.npc311.fresh", "C reader as Python 3.11, fresh"),
                      ("s5.npc311.listed", "the same after ls -l"),
                      ("s5.npc314.fresh", "C reader as Python 3.14, fresh"),
                      ("s5.npc314.listed", "the same after ls -l")):
        vals = r.res.get(key)
        if not vals:
            continue
        kv = parse_kv(vals[0])
        # Kinds under 0.005 a load are the mount's first open and flush,
        # which the kernel stops sending once answered ENOSYS.
        reqs = ", ".join("%s %s" % (k[4:], v) for k, v in sorted(kv.items())
                         if k.startswith("req_") and float(v) >= 0.005)
        out.append("%s: %s" % (name, reqs or "none"))
    if not out:
        return []
    return ["FUSE requests per load (the daemon's counters, round 1): " + "; ".join(out)]


def ceiling(r):
    out = []
    for b, name in (("128k", "128 KiB"), ("1m", "1 MiB"), ("4m", "4 MiB")):
        d = r.med("s1.direct.raw." + b, "mbps")
        f = r.med("s1.first.raw." + b, "mbps")
        s = r.med("s1.second.raw." + b, "mbps")

        def c(key, v):
            return cell(r, key, v, "MiB/s")

        out.append((name, c("s1.direct.raw." + b, d), c("s1.first.raw." + b, f),
                    ratio_str(f / d if f and d else None), c("s1.second.raw." + b, s),
                    ratio_str(s / d if s and d else None)))
    d = r.med("s1.direct.raw.1m", "mbps")
    for key, name in (("s1.first.raw.ra128", "1 MiB, fuse read_ahead_kb 128"),
                      ("s1.first.raw.ra4096", "1 MiB, fuse read_ahead_kb 4096"),
                      ("s1.first.raw.pipe2m", "1 MiB, pipe-max-size 2 MiB (splice works)")):
        f = r.med(key, "mbps")
        if f is None and not r.err(key):
            continue
        out.append((name, cell(r, "s1.direct.raw.1m", d, "MiB/s"), cell(r, key, f, "MiB/s"),
                    ratio_str(f / d if f and d else None), "—", "—"))
    return out


def rss_table(r):
    labels = ["stored-seq", "mmap", "deflated-seq", "deflated-indexed", "deflated-rand", "bigdefl", "many-ls", "many-read", "million"]
    out = []
    for lab in labels:
        cells = []
        for kind in ("npzfs", "fuse-zip", "archivemount"):
            v = r.res.get("rss.%s.%s" % (kind, lab))
            cells.append("%.1f MiB" % (max(map(float, v)) / 1024) if v else "—")
        out.append((lab,) + tuple(cells))
    return out


def others(r):
    def seq(kind, key):
        k = "o.%s.%s" % (kind, key) if kind != "npzfs" else key
        v = r.med(k, "mbps")
        if v is None and k.endswith(".stored.second") and r.err(k[:-len("second")] + "first"):
            return "skipped (first read failed)"
        return cell(r, k, v, "MiB/s")

    def secs(kind, key, nkey=None, scale=1.0, unit="s"):
        k = "o.%s.%s" % (kind, key) if kind != "npzfs" else nkey
        v = r.med(k, "secs")
        return cell(r, k, None if v is None else v * scale, unit)

    def rand(kind):
        k = "o.%s.rand" % kind if kind != "npzfs" else "s4.rand"
        m, p = r.med(k, "median_ms"), r.med(k, "p99_ms")
        if m is None:
            return cell(r, k, None, "")
        return "%s / %s" % (fmt_num(m, "ms"), fmt_num(p, "ms"))

    kinds = ("npzfs", "fuse-zip", "archivemount")
    sh = human(r.med("s1.direct.raw.1m", "bytes"))
    dh = human((r.med("s3.first.npy", "bytes") or 0) - 128)
    mh = parse_kv(r.one("s5.expect")).get("files", "?")
    rows = [
        ("stored %s: x.npy first read, 1 MiB reads" % sh, [seq(k, "stored.first" if k != "npzfs" else "s1.first.npy.1m") for k in kinds]),
        ("stored %s: x.npy second read" % sh, [seq(k, "stored.second" if k != "npzfs" else "s1.second.npy.1m") for k in kinds]),
        ("np.load mmap + one element", [secs(k, "mmap", "s2.mmap", 1e3, "ms") for k in kinds]),
        ("deflated %s: y.npy read in full" % dh, [seq(k, "deflated.first" if k != "npzfs" else "s3.first.npy") for k in kinds]),
        ("1,000 random 4 KiB preads: median / p99", [rand(k) for k in kinds]),
        ("%s arrays: mount command returns" % mh, [secs(k, "mount", "s5.mount") for k in kinds]),
        ("%s arrays: ls -f" % mh, [secs(k, "ls-f", "s5.ls-f") for k in kinds]),
        ("%s arrays: read every KEY.npy" % mh, [secs(k, "readall", "s5.readall") for k in kinds]),
    ]
    return rows


def go_lines(text):
    pk = {}
    lines = []
    for line in text.splitlines():
        m = re.match(r"^(ok|FAIL|\?)\s+(\S+)", line)
        if m:
            pk[m.group(2)] = line.strip()
        if line.startswith("Benchmark"):
            lines.append(re.sub(r"\s+", " ", line.strip()))
        if re.match(r"^(# |.*\.go:\d+:\d+: )", line):
            lines.append("build: " + line.strip())
    status = []
    if text.startswith("(skipped"):
        return [], ["skipped (BENCH_GO=0)"]
    for p in ("npy", "npz", "inflate"):
        full = "github.com/npzfs/npzfs/" + p
        s = pk.get(full)
        if s is None:
            status.append("%s: no result (did not build or timed out)" % p)
        elif s.startswith("?"):
            status.append("%s: no test files" % p)
        elif s.startswith("FAIL"):
            status.append("%s: FAILED" % p)
        else:
            status.append("%s: ok" % p)
    return lines, status


def go_inflate_table(lines):
    """BenchmarkInflate/DATA/IMPL-N ... X MB/s -> rows DATA, npzfs, stdlib, klauspost."""
    data = {}
    impls = []
    for line in lines:
        m = re.match(r"^BenchmarkInflate/([^/\s]+)/([^\s-]+)(?:-\d+)?\s.*?([\d.]+) MB/s", line)
        if m:
            d, impl, mbps = m.group(1), m.group(2), float(m.group(3))
            data.setdefault(d, {})[impl] = mbps
            if impl not in impls:
                impls.append(impl)
    if not data:
        return None, None
    hdr = ("data",) + tuple(impls) + tuple("npzfs / " + i for i in impls if i != "npzfs")
    rows = []
    for d, v in data.items():
        base = v.get("npzfs")
        rows.append((d,) + tuple("%.0f MB/s" % v[i] if i in v else "—" for i in impls)
                    + tuple(ratio_str(base / v[i]) if base and v.get(i) else "—" for i in impls if i != "npzfs"))
    return hdr, rows


def fmt_ns(ns):
    for unit, d in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= d:
            return "%.3g %s" % (ns / d, unit)
    return "%.3g ns" % ns


def go_other_table(lines):
    """Every benchmark but the inflate matrix: time/op, MB/s, allocs and custom metrics."""
    rows = []
    for line in lines:
        if not line.startswith("Benchmark") or line.startswith("BenchmarkInflate/"):
            continue
        f = line.split()
        name = re.sub(r"-\d+$", "", f[0])
        metrics = {}
        for i in range(2, len(f) - 1, 2):
            metrics[f[i + 1]] = f[i]
        if "ns/op" not in metrics:
            continue
        extra = ", ".join("%s %s" % (v, k) for k, v in metrics.items()
                          if k not in ("ns/op", "MB/s", "B/op", "allocs/op"))
        rows.append((name, fmt_ns(float(metrics["ns/op"])), metrics.get("MB/s", "—"),
                     metrics.get("B/op", "—"), metrics.get("allocs/op", "—"), extra or "—"))
    return ("benchmark", "time/op", "MB/s", "B/op", "allocs/op", "other"), rows


def text_table(header, rows):
    w = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    out = ["  ".join(str(x).ljust(w[i]) for i, x in enumerate(header)),
           "  ".join("-" * w[i] for i in range(len(w)))]
    for row in rows:
        out.append("  ".join(str(x).ljust(w[i]) for i, x in enumerate(row)))
    return "\n".join(out)


def md_table(header, rows):
    esc = lambda s: str(s).replace("|", "\\|")
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    for row in rows:
        out.append("| " + " | ".join(esc(x) for x in row) + " |")
    return "\n".join(out)


def main(argv):
    r = R(load(argv[0]))
    with open(argv[1]) as f:
        gobench = f.read()
    write = argv[3] if len(argv) >= 4 and argv[2] == "--write" else None

    main_rows = build(r, gobench)
    hdr = ("#", "benchmark", "npzfs", "reference (same run)", "ratio", "target", "result")
    ceil_hdr = ("request size, setting", "direct (archive file)", "first read", "ratio", "second read", "ratio")
    ceil = ceiling(r)
    rss_hdr = ("daemon, workload", "npzfs", "fuse-zip", "archivemount")
    rss = rss_table(r)
    oth_hdr = ("workload", "npzfs", "fuse-zip -r", "archivemount -o readonly")
    oth = [(name,) + tuple(c) for name, c in others(r)]
    golines, gostatus = go_lines(gobench)

    one = r.one
    machine = "%s cores (%s), %s, Linux %s; load average at start %s" % (
        one("meta.cores"), one("meta.cpu"), one("meta.mem"), one("meta.kernel"), one("meta.load"))
    run = "%s, commit %s, size %s, %s, medians; whole run %.0f s; %s, numpy %s, fuse-zip %s, archivemount %s" % (
        one("meta.date"), one("meta.commit"), one("meta.size"), one("meta.rounds", "?"),
        float(one("meta.wall", "0") or 0), one("meta.go"), one("meta.numpy"), one("meta.fusezip"), one("meta.archivemount"))
    data = [one("meta.stored"), one("meta.deflated"), one("meta.bigdefl"), one("meta.many"), one("meta.million"), one("meta.manydefl")]
    parts = dict(run=run, machine=machine, data=data, hdr=hdr, main_rows=main_rows, ceil_hdr=ceil_hdr, ceil=ceil,
                 probes=probe_lines(r), oth_hdr=oth_hdr, oth=oth, rss_hdr=rss_hdr, rss=rss,
                 info=info_lines(r) + check_lines(r), golines=golines, gostatus=gostatus, tree=one("go.tree"))
    print_report(parts)
    if write:
        write_report(write, parts)
        print("\nwrote the results into " + write)


def probe_lines(r):
    """What the run found of the mount's settings and costs, beside the
    table: readahead, what one first read cost the daemon."""
    one = r.one
    probes = []
    probes.append("fuse bdi %s as npzfs mounts it: read_ahead_kb %s, max_read %s" % (
        one("s1.bdi", "?"), one("s1.read_ahead_kb", "?"), one("s1.max_read", "?")))
    rc, sc = one("s1.daemon_rchar"), one("s1.daemon_syscr")
    if rc:
        probes.append("daemon during one first read of raw.bin: %.1f MiB read by read-family syscalls (rchar, %s calls), "
                      "%s splice fallbacks logged (\"trySplice: ... max pipe size\"); rchar near 0 would mean the bytes were spliced"
                      % (float(rc) / MiB, sc, one("s1.splice_fallbacks", "?")))
    f1, d1 = r.res.get("s1.first.raw.1m"), r.res.get("s1.direct.raw.1m")
    if f1 and d1 and one("s1.daemon_cpu"):
        a, b = parse_kv(f1[0]), parse_kv(d1[0])
        if "usr" in a and "usr" in b:
            probes.append("CPU for one first read of raw.bin (round 1): %.2f s wall, reader %.2f s, daemon %.2f s; "
                          "the direct read: %.2f s wall, %.2f s CPU" % (
                              float(a["secs"]), float(a["usr"]) + float(a["sys"]), float(one("s1.daemon_cpu")),
                              float(b["secs"]), float(b["usr"]) + float(b["sys"])))
    if one("s1.pipe2m.daemon_rchar"):
        pf = r.res.get("s1.first.raw.pipe2m")
        probes.append("with /proc/sys/fs/pipe-max-size at 2 MiB while the daemon runs (round 1): daemon rchar %.1f MiB, %s splice fallbacks, "
                      "%s s wall, daemon CPU %s s"
                      % (float(one("s1.pipe2m.daemon_rchar", "0") or 0) / MiB, one("s1.pipe2m.splice_fallbacks", "?"),
                         parse_kv(pf[0]).get("secs", "?") if pf else "?", one("s1.pipe2m.daemon_cpu", "?")))
    return probes


def check_lines(r):
    """The run's checks that the bytes read were right."""
    one = r.one
    checks = ["stored raw.bin = archive bytes: %s" % one("check.stored", "not run"),
              "deflated y.npy = unzip -p: %s" % one("check.deflated", "not run")]
    exp = parse_kv(one("s5.expect"))
    got = r.res.get("s5.readall", [])
    if got:
        g = parse_kv(got[0])
        checks.append("every member read through the mount: %s files, %s bytes (archive holds %s files, %s bytes)" % (
            g.get("files"), g.get("bytes"), exp.get("files"), exp.get("bytes")))
    return checks


def info_lines(r):
    """Other figures the run measured, and its notes."""
    info = []
    big = r.res.get("s4.big.seq")
    if big:
        info.append("1 GiB deflated member read in full: %s MiB/s" % parse_kv(big[0]).get("mbps"))
    for k, name in (("s4.big.rand", "then 1,000 random 4 KiB preads on the same mount"),
                    ("s4.big.randfirst", "1,000 random 4 KiB preads on a fresh mount")):
        v = r.res.get(k)
        if v:
            kv = parse_kv(v[0])
            info.append("%s: first %s ms, median %s ms, p99 %s ms" % (name, kv["first_ms"], kv["median_ms"], kv["p99_ms"]))
        elif r.err(k):
            info.append("%s: FAILED: %s" % (name, r.err(k)))
    f3 = r.res.get("s3.first.npy")
    if f3 and r.res.get("s3.daemon_cpu"):
        w = [float(parse_kv(v).get("secs", 0)) for v in f3]
        c = [float(v) for v in r.res["s3.daemon_cpu"]]
        info.append("deflated y.npy first read: daemon CPU %.2f s for %.2f s wall (medians)"
                    % (statistics.median(c), statistics.median(w)))
    smp = np_sample(r)
    if smp:
        full = r.res.get("s5.npzall")
        if full:
            fk = parse_kv(full[0])
            fl = "full loop measured too: %.2f s (the table uses it)" % (float(fk["secs"]) - float(fk["open_secs"]))
        elif r.res.get("s5.npzall.timeout"):
            fl = "full loop timed out after %s s" % r.res["s5.npzall.timeout"][0]
        elif r.res.get("s5.npzall.skipped"):
            fl = "full loop not run (estimate over the %s s bound)" % parse_kv(r.res["s5.npzall.skipped"][0]).get("max_secs", "?")
        else:
            fl = "full loop: %s" % (r.err("s5.npzall") or "not run")
        info.append("numpy NpzFile over the %s-key archive: np.load %.3f s; z[k] for %s random keys a round "
                    "(%d rounds, seeds %s): mean %.3g ms, sd %.3g ms, median %.3g ms, max %.3g ms; "
                    "key-by-key loop estimated (keys / sample x sample sum) at %.1f s, standard error %.2f s; %s"
                    % ("{:,}".format(smp["n"]), smp["open"], "{:,}".format(smp["k"]), smp["rounds"], smp["seeds"],
                       smp["mean_ms"], smp["sd_ms"], smp["median_ms"], smp["max_ms"], smp["est"], smp["se"], fl))
    elif r.err("s5.npzsample"):
        info.append("numpy NpzFile random-key sample: FAILED: %s" % r.err("s5.npzsample"))
    info += request_lines(r)
    sec = r.med("s3.second.npy", "mbps")
    if sec is not None:
        info.append("deflated y.npy second read (FUSE page cache): %.0f MiB/s" % sec)
    m = r.med("s2.mmap", "base_kb"), r.med("s2.npz", "base_kb")
    if m[0] is not None:
        info.append("Python after `import numpy`, before the measured call: %.1f MiB (mmap runs), %.1f MiB (npz runs)"
                    % (m[0] / 1024, (m[1] or 0) / 1024))
        g0 = r.med("s2.mmap", "maxrss_kb") - m[0]
        g1 = (r.med("s2.npz", "maxrss_kb") or 0) - (m[1] or 0)
        info.append("growth of peak RSS over that baseline: mmap %.2f MiB, np.load(npz) %.1f MiB (%s)"
                    % (g0 / 1024, g1 / 1024, ratio_str(g1 / g0) if g0 > 0 else "mmap grew by 0"))
    for k in sorted(r.res):
        if k.startswith("note."):
            info.append("%s: %s" % (k[5:], r.res[k][0]))
    return info


def print_report(p):
    """Prints the report's tables and lines."""
    print()
    print("npzfs benchmarks: " + p["run"])
    print("machine: " + p["machine"])
    print()
    print(text_table(p["hdr"], p["main_rows"]))
    print(RATIO_NOTE)
    print()
    print("Ceiling, stored array x/raw.bin (first read: fresh mount; second: same mount):")
    print(text_table(p["ceil_hdr"], p["ceil"]))
    for line in p["probes"]:
        print("  " + line)
    print()
    print("Other mounters, same archives, same run (each step bounded by timeout):")
    print(text_table(p["oth_hdr"], p["oth"]))
    print()
    print("Peak RSS (VmHWM) of the file system daemon, max over rounds:")
    print(text_table(p["rss_hdr"], p["rss"]))
    print()
    for line in p["info"]:
        print("  " + line)
    print()
    ghdr, grows = go_inflate_table(p["golines"])
    print("Go benchmarks: " + "; ".join(p["gostatus"]))
    if grows:
        print(text_table(ghdr, grows))
    ohdr, orows = go_other_table(p["golines"])
    if orows:
        print(text_table(ohdr, orows))


def write_report(path, p):
    """Writes the report, in Markdown, between the results markers of the
    file at path (appended when it has none)."""
    ghdr, grows = go_inflate_table(p["golines"])
    md = [BEGIN, "", "## Results", "", "- Run: " + p["run"], "- Machine: " + p["machine"],
          "- Data: " + "; ".join(d for d in p["data"] if d), "", md_table(p["hdr"], p["main_rows"]), "", RATIO_NOTE, "",
          "### Ceiling of stored reads", "", md_table(p["ceil_hdr"], p["ceil"]), ""]
    md += ["- " + x for x in p["probes"]] + ["", "### Other mounters", "", md_table(p["oth_hdr"], p["oth"]), "",
                                            "### Daemon peak RSS", "", md_table(p["rss_hdr"], p["rss"]), "",
                                            "### Other figures and checks", ""]
    md += ["- " + x for x in p["info"]]
    tree = p["tree"]
    md += ["", "### Go benchmarks", "", "`go test -run '^$' -bench . -benchmem` over ./npy ./npz ./inflate"
           + (" (tree: %s)" % tree if tree else "") + ": " + "; ".join(p["gostatus"]) + ".", ""]
    if grows:
        md += ["Inflating whole streams (BenchmarkInflate, MB/s of output, MB = 10^6 bytes as Go reports it):", "", md_table(ghdr, grows), ""]
    ohdr, orows = go_other_table(p["golines"])
    if orows:
        md += ["The others (npy header parsing, opening a 100,000-member archive, ReadAt):", "", md_table(ohdr, orows), ""]
    md += ["Raw lines:", "", "```"] + p["golines"] + ["```", "", END]
    block = "\n".join(md)
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        text = ""
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + block + "\n"
    with open(path, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
