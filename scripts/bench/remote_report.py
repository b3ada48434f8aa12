"""The remote-archive table of BENCHMARKS.md, from scripts/bench/remote.sh's
results (key TAB key=value... lines, several rounds per key).

    python3 scripts/bench/remote_report.py RESULTS.tsv [--write BENCHMARKS.md]

Prints the section; with --write, replaces it in BENCHMARKS.md between the
markers <!-- remote:begin --> and <!-- remote:end --> (added at the end when
missing).
"""
import re
import statistics
import sys

BEGIN, END = "<!-- remote:begin -->", "<!-- remote:end -->"


def load(path):
    rows = {}
    for line in open(path):
        line = line.rstrip("\n")
        if not line or "\t" not in line:
            continue
        k, v = line.split("\t", 1)
        rows.setdefault(k, []).append(v)
    return rows


def kv(s):
    return dict(p.split("=", 1) for p in s.split() if "=" in p)


def med(rows, key, field):
    vals = [float(kv(v)[field]) for v in rows.get(key, []) if field in kv(v)]
    return statistics.median(vals) if vals else None


def most(rows, key, field):
    vals = [int(float(kv(v)[field])) for v in rows.get(key, []) if field in kv(v)]
    return max(vals) if vals else None


def err(rows, key):
    e = rows.get(key + ".err")
    return e[0] if e else None


def fmt(x, unit="", nd=2):
    return "n/a" if x is None else f"{x:.{nd}f}{unit}"


def section(rows):
    setup = kv(rows.get("r.setup", [""])[0])
    lat_ms = float(setup.get("latency", "20ms").rstrip("ms") or 20)
    rate = int(setup.get("rate_bytes_per_sec", "0"))
    out = []
    out.append("## Remote archives (issue 10)\n")
    out.append(
        f"nginx ({setup.get('server', '?')}) serves the archives on 127.0.0.1 behind "
        f"internal/cmd/faultproxy: {lat_ms:g} ms added to every request, all bodies "
        f"together capped at {rate / 1e6:g} MB/s. Requests are counted in nginx's access "
        "log; every npzfs figure is a fresh `npzfs mount` of the URL (medians of the "
        "rounds; request counts, the largest). From `scripts/bench/remote.sh`, run by "
        "`scripts/bench.sh`.\n")
    meta = rows.get("meta", [])
    if meta:
        out.append(meta[0] + "\n")
    out.append("| workload | npzfs | reference (same run) | ratio | target | met |")
    out.append("| --- | --- | --- | --- | --- | --- |")

    def row(name, ours, ref, ratio, target, met):
        yes = "n/a" if met is None else ("yes" if met else "**no**")
        out.append(f"| {name} | {ours} | {ref} | {ratio} | {target} | {yes} |")

    s, n = med(rows, "r.mount", "secs"), most(rows, "r.mount", "requests")
    ok = None if s is None else (n <= 2 and s <= 0.2)
    row("mount, 100,000-member archive", f"{fmt(s, ' s')}, {n} requests" if s is not None else err(rows, "r.mount") or "n/a",
        "", "", "<= 2 requests, <= 0.2 s", ok)

    s = med(rows, "r.mmap", "secs")
    n = most(rows, "r.mmap", "requests")
    m = most(rows, "r.mmap", "mount_requests")
    alt = med(rows, "r.alt.curl", "total_secs")
    row("`np.load(x.npy, mmap_mode='r')` + one element of the 1 GiB stored array",
        f"{fmt(s, ' s', 3)}, {None if n is None else n + m} requests (mount included)" if s is not None else err(rows, "r.mmap") or "n/a",
        f"curl the archive, then `np.load(npz)['x']`: {fmt(alt, ' s')}",
        "" if s is None or alt is None else f"{alt / s:.0f}x faster",
        "<= 3 requests", None if n is None else n + m <= 3)

    ours, ref = med(rows, "r.seq", "mbps"), med(rows, "r.curl", "mbps")
    n = most(rows, "r.seq", "requests")
    row("read the 1 GiB stored array whole (x/raw.bin, 1 MiB reads)",
        f"{fmt(ours, ' MiB/s', 1)}, {n} requests" if ours is not None else err(rows, "r.seq") or "n/a",
        f"curl of the same byte range: {fmt(ref, ' MiB/s', 1)}",
        "" if ours is None or ref is None else f"{ours / ref:.2f}x",
        ">= 0.8x", None if ours is None or ref is None else ours / ref >= 0.8)

    md = med(rows, "r.rand", "median_ms")
    n = most(rows, "r.rand", "requests")
    p99 = med(rows, "r.rand", "p99_ms")
    row("4 KiB reads at 1,000 random offsets of the stored array",
        f"median {fmt(md, ' ms', 1)}, p99 {fmt(p99, ' ms', 1)}, {n} requests" if md is not None else err(rows, "r.rand") or "n/a",
        f"injected latency {lat_ms:g} ms", "" if md is None else f"{md / lat_ms:.2f}x",
        "<= 1 request a read, median <= 1.5x", None if md is None else (md <= 1.5 * lat_ms and n <= 1000))
    p, u = med(rows, "r.deep90.packed", "secs"), med(rows, "r.deep90.plain", "secs")
    n, nu = most(rows, "r.deep90.packed", "requests"), most(rows, "r.deep90.plain", "requests")
    m, mu = most(rows, "r.deep90.packed", "mount_requests"), most(rows, "r.deep90.plain", "mount_requests")
    row("first 4 KiB at 90% of the 1 GiB deflated member packed (`npzfs pack`, SOZip), fresh mount, empty index folder",
        f"{fmt(p, ' s', 3)}, {n} requests after the mount's {m}" if p is not None else err(rows, "r.deep90.packed") or "n/a",
        f"as numpy wrote it: {fmt(u, ' s')}, {nu} requests after the mount's {mu}"
        if u is not None else f"as numpy wrote it: {err(rows, 'r.deep90.plain') or 'n/a'}",
        "" if p is None or u is None else f"{u / p:.0f}x faster",
        "<= 2 requests", None if n is None else n <= 2)
    out.append("")
    out.append("What a user would do instead, in the same run (`np.load(npz)['x']` of the "
               "same 1 GiB array, through the same proxy):\n")
    for key, name in [("r.alt.curl", "curl the whole archive, then np.load"),
                      ("r.alt.rclone", "rclone mount of the HTTP remote (Debian's rclone)"),
                      ("r.alt.s3fs", "s3fs (Debian's) on versitygw, behind the same proxy")]:
        t = med(rows, key, "total_secs")
        rss = med(rows, key, "maxrss_kb")
        if t is not None:
            out.append(f"- {name}: {t:.2f} s, {rss / 1024:.0f} MiB resident in numpy")
        else:
            out.append(f"- {name}: failed: {err(rows, key) or 'not run'}")
    s = med(rows, "r.mmap", "secs")
    if s is not None:
        out.append(f"- npzfs: the memory map and one element in {s:.3f} s (row above), "
                   "reading one page of data, not the archive")
    out.append("")
    out.extend(prefix_section(rows))
    return "\n".join(out) + "\n"


def prefix_section(rows):
    """The remote-folder and shared-sidecar rows (issue 23)."""
    out = ["### Remote folders and shared sidecars (issue 23)\n"]
    if err(rows, "p"):
        return out + [f"Not measured: {err(rows, 'p')}\n"]
    shards = kv(rows.get("p.shards", [""])[0])
    out.append(
        f"versitygw serves a prefix of {shards.get('count', '?')} shards (`np.savez`: the 100 "
        f"read are {int(shards.get('bytes_read', 0)) / 2**20:.1f} MiB, a 1 MiB array x then "
        f"4.5 MiB of y, so that a mount of one alone fetches x when it is read; the others "
        f"{int(shards.get('bytes_other', 0)) / 1024:.0f} KiB) and the 1 GiB archives behind the "
        "same proxy, which counts the requests and bytes. Reads of 100 shards are "
        "`np.load(x.npy)` (npzfs) or `np.load(npz)['x']` (rclone, s3fs) from 8 threads; the "
        "single-shard mounts are made beforehand, their mount time not counted. The first "
        "read at 90% is on a fresh mount with a fresh index folder, after a stat of `raw.bin` "
        "(its npy header), as `np.memmap` would do.\n")
    out.append("| workload | npzfs | reference (same run) | ratio | target | met |")
    out.append("| --- | --- | --- | --- | --- | --- |")

    def row(name, ours, ref, ratio, target, met):
        yes = "n/a" if met is None else ("yes" if met else "**no**")
        out.append(f"| {name} | {ours} | {ref} | {ratio} | {target} | {yes} |")

    objs = int(shards.get("count", 1000))
    pages = max(1, -(-objs // 1000))
    s, n = med(rows, "p.mount", "secs"), most(rows, "p.mount", "requests")
    row(f"mount of a prefix of {objs} shards",
        f"{fmt(s, ' s', 3)}, {n} requests" if s is not None else err(rows, "p.mount") or "n/a",
        "", "", f"<= 0.2 s, <= {pages} list request(s)", None if s is None else s <= 0.2 and n <= pages)
    s, n = med(rows, "p.ls", "secs"), most(rows, "p.ls", "requests")
    rc = med(rows, "p.alt.rclone.ls", "secs")
    row("ls of its root", f"{fmt(s, ' s', 3)}, {n} requests" if s is not None else "n/a",
        f"rclone: {fmt(rc, ' s', 3)}", "", "<= 0.5 s", None if s is None else s <= 0.5)
    ours, ref = med(rows, "p.read100", "secs"), med(rows, "p.read100.single", "secs")
    n = most(rows, "p.read100", "requests")
    nref = most(rows, "p.read100.single", "requests")
    k = most(rows, "p.read100", "shards") or 100
    row(f"one array from each of {k} shards, 8 readers",
        f"{fmt(ours, ' s')}, {n} requests ({n / k:.1f} a shard)" if ours is not None and n is not None else err(rows, "p.read100") or "n/a",
        f"{k} single-shard mounts: {fmt(ref, ' s')}, {nref} requests",
        "" if ours is None or ref is None else f"{ours / ref:.2f}x",
        "<= 1.2x; <= 2 requests a shard + its array's",
        None if ours is None or ref is None or n is None or nref is None else ours <= 1.2 * ref and n - nref <= 2 * k)
    d, st = med(rows, "p.first4k.bigdefl", "secs"), med(rows, "p.first4k.stored", "secs")
    n = most(rows, "p.first4k.bigdefl", "requests")
    before, sbefore = most(rows, "p.first4k.bigdefl", "before"), most(rows, "p.first4k.stored", "before")
    fetched = most(rows, "p.first4k.bigdefl", "fetched")
    member = most(rows, "p.first4k.bigdefl", "member")
    frac = None if fetched is None or not member else fetched / member
    row("first 4 KiB at 90% of a 1 GiB deflated member, with the shared sidecar (fresh machine)",
        f"{fmt(d, ' s', 3)}, {n} requests ({before} before it: mount, stat), "
        f"{fmt(None if frac is None else 100 * frac, '%', 2)} of the member fetched"
        if d is not None else err(rows, "p.first4k.bigdefl") or "n/a",
        f"4 KiB of the stored member: {fmt(st, ' s', 3)} ({sbefore} requests before it)",
        "" if d is None or st is None else f"{d / st:.2f}x",
        "<= 4 requests, <= 3x, <= 2% fetched",
        None if d is None or st is None or n is None or frac is None else n <= 4 and d <= 3 * st and frac <= 0.02)
    out.append("")
    for name in ("rclone", "s3fs"):
        t = med(rows, f"p.alt.{name}.read100", "secs")
        n = most(rows, f"p.alt.{name}.read100", "requests")
        ls = med(rows, f"p.alt.{name}.ls", "secs")
        if t is not None:
            out.append(f"- {name} mount of the prefix: ls {fmt(ls, ' s', 3)}; the 100 arrays "
                       f"(`np.load(npz)['x']`) in {t:.2f} s, {n} requests")
        else:
            out.append(f"- {name} mount of the prefix: {err(rows, f'p.alt.{name}.read100') or err(rows, f'p.alt.{name}') or 'not run'}")
    s = med(rows, "p.index", "secs")
    if s is not None:
        b = most(rows, "p.index", "sidecar_bytes")
        out.append(f"- `npzfs index --sidecar` of the 1 GiB deflated archive on versitygw: {s:.1f} s, "
                   f"a sidecar of {b / 1e6:.1f} MB put beside it")
    out.append("")
    return out


def main(argv):
    rows = load(argv[0])
    text = section(rows)
    print(text)
    if len(argv) > 2 and argv[1] == "--write":
        path = argv[2]
        md = open(path).read()
        block = BEGIN + "\n" + text + END
        if BEGIN in md and END in md:
            md = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, md, flags=re.S)
        else:
            md = md.rstrip("\n") + "\n\n" + block + "\n"
        open(path, "w").write(md)


if __name__ == "__main__":
    main(sys.argv[1:])
