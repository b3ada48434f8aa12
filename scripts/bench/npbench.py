#!/usr/bin/python3
"""The numpy side of scripts/bench.sh: one measurement per process.

    npbench.py mmap   NPY              np.load(NPY, mmap_mode='r'), read the middle element
    npbench.py npz    NPZ KEY          np.load(NPZ)[KEY], read the middle element
    npbench.py npzall NPZ              z = np.load(NPZ); z[k] for every k in z.files
                                       (open_secs: the np.load part alone)
    npbench.py npzsample NPZ K SEED [BUDGET]
                                       z = np.load(NPZ) (timed: open_secs), then z[k]
                                       for K keys drawn uniformly at random without
                                       replacement (seeded), each timed on its own;
                                       stops early once the sample has taken BUDGET
                                       seconds (sample= says how many were timed)
    npbench.py dirall LIST             np.load(path) for every path listed in LIST
    npbench.py dirmany NAMES REFDIR NAME=DIR...
                                       np.load of each name of NAMES through every
                                       DIR and then REFDIR, in turn (the first name
                                       through each, the second...), each load timed
                                       on its own, so that all see the same moments
                                       of the machine: one line per DIR, name=NAME
                                       secs= (its loads') ref_secs= (REFDIR's)
    npbench.py loadmany LIST KEY W     np.load(path)[KEY] (np.load(path) for KEY "-")
                                       for every path listed in LIST, from W
                                       threads at once
    npbench.py pread PATH OFF LEN      one os.pread of LEN bytes at OFF (the file
                                       opened first, untimed)

Prints one line: secs=... maxrss_kb=... base_kb=... (base_kb is ru_maxrss
after importing numpy, before the measured operation; secs covers only the
operation, not interpreter start-up or the import).

npzsample estimates what npzall would take without running it (numpy 1.24's
NpzFile.__getitem__ scans its lists of names, so the full loop is quadratic in
the number of keys): with N keys, K sampled, and the sample's per-key times
t_1..t_K, est_secs = N/K * sum(t) is an unbiased estimate of the loop's total
(the keys are a simple random sample, so each key's time is counted with
weight N/K in expectation), and se_secs = N * sd(t) / sqrt(K) * sqrt(1 - K/N)
its standard error (finite-population correction included). It assumes a
key costs the same in the sampled order as in the loop's order. Stopping at
BUDGET keeps a simple random sample (the first keys of a random order), at
the cost of a bias of the order of one key's time.
"""
import math
import random
import resource
import sys
import time

import numpy as np


def maxrss_kb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main(argv):
    mode = argv[0]
    extra = ""
    if mode in ("dirall", "loadmany"):
        with open(argv[1]) as f:
            paths = [line.rstrip("\n") for line in f if line.strip()]
    base = maxrss_kb()
    secs = None  # the operation's time, where it is not all since t0
    t0 = time.perf_counter()
    if mode == "mmap":
        a = np.load(argv[1], mmap_mode="r")
        flat = a.reshape(-1)
        v = float(flat[flat.size // 2])
        extra = " value=%r" % v
    elif mode == "npz":
        with np.load(argv[1]) as z:
            a = z[argv[2]]
        flat = a.reshape(-1)
        v = float(flat[flat.size // 2])
        extra = " value=%r" % v
    elif mode == "npzall":
        n = 0
        with np.load(argv[1]) as z:
            extra = " open_secs=%.6f" % (time.perf_counter() - t0)
            for k in z.files:
                z[k]
                n += 1
        extra += " arrays=%d" % n
    elif mode == "npzsample":
        want, seed = int(argv[2]), int(argv[3])
        budget = float(argv[4]) if len(argv) > 4 else float("inf")
        with np.load(argv[1]) as z:
            open_secs = time.perf_counter() - t0
            files = z.files
            n = len(files)
            k = min(want, n)
            keys = [files[i] for i in random.Random(seed).sample(range(n), k)]
            ts = []
            clock = time.perf_counter
            total = 0.0
            for key in keys:
                a = clock()
                z[key]
                ts.append(clock() - a)
                total += ts[-1]
                if total >= budget:
                    break
        k = len(ts)
        total = sum(ts)
        mean = total / k if k else 0.0
        sd = math.sqrt(sum((t - mean) ** 2 for t in ts) / (k - 1)) if k > 1 else 0.0
        est = n / k * total if k else 0.0
        se = n * sd / math.sqrt(k) * math.sqrt(1 - k / n) if k else 0.0
        ts.sort()
        extra = (" open_secs=%.6f keys=%d sample=%d seed=%d sample_secs=%.6f mean_ms=%.4f sd_ms=%.4f"
                 " min_ms=%.4f median_ms=%.4f max_ms=%.4f est_secs=%.3f se_secs=%.3f"
                 % (open_secs, n, k, seed, total, mean * 1e3, sd * 1e3, ts[0] * 1e3 if ts else 0,
                    ts[k // 2] * 1e3 if ts else 0, ts[-1] * 1e3 if ts else 0, est, se))
    elif mode == "dirall":
        for p in paths:
            np.load(p)
        extra = " arrays=%d" % len(paths)
    elif mode == "dirmany":
        with open(argv[1]) as f:
            names = [line.rstrip("\n") for line in f if line.strip()]
        ref_dir = argv[2]
        dirs = [a.split("=", 1) for a in argv[3:]]
        clock = time.perf_counter
        sums = [0.0] * len(dirs)
        ref = 0.0
        for name in names:
            for i, (_, d) in enumerate(dirs):
                t = clock()
                np.load(d + "/" + name)
                sums[i] += clock() - t
            t = clock()
            np.load(ref_dir + "/" + name)
            ref += clock() - t
        for (label, _), secs in zip(dirs, sums):
            print("name=%s secs=%.6f ref_secs=%.6f arrays=%d" % (label, secs, ref, len(names)))
        return
    elif mode == "loadmany":
        from concurrent.futures import ThreadPoolExecutor

        key, workers = argv[2], int(argv[3])

        def load(p):
            if key == "-":
                return np.load(p).nbytes
            with np.load(p) as z:
                return z[key].nbytes

        with ThreadPoolExecutor(workers) as ex:
            nbytes = sum(ex.map(load, paths))
        extra = " arrays=%d bytes=%d workers=%d" % (len(paths), nbytes, workers)
    elif mode == "pread":
        import os

        fd = os.open(argv[1], os.O_RDONLY)
        t0 = time.perf_counter()
        b = os.pread(fd, int(argv[3]), int(argv[2]))
        os.close(fd)
        extra = " bytes=%d" % len(b)
    else:
        raise SystemExit("npbench.py: unknown mode " + mode)
    if secs is None:
        secs = time.perf_counter() - t0
    print("secs=%.6f maxrss_kb=%d base_kb=%d%s" % (secs, maxrss_kb(), base, extra))


if __name__ == "__main__":
    main(sys.argv[1:])
