#!/usr/bin/python3
"""The numpy side of scripts/bench.sh: one measurement per process.

    npbench.py mmap   NPY              np.load(NPY, mmap_mode='r'), read the middle element
    npbench.py npz    NPZ KEY          np.load(NPZ)[KEY], read the middle element
    npbench.py npzall NPZ              z = np.load(NPZ); z[k] for every k in z.files
                                       (open_secs: the np.load part alone)
    npbench.py dirall LIST             np.load(path) for every path listed in LIST

Prints one line: secs=... maxrss_kb=... base_kb=... (base_kb is ru_maxrss
after importing numpy, before the measured operation; secs covers only the
operation, not interpreter start-up or the import).
"""
import resource
import sys
import time

import numpy as np


def maxrss_kb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main(argv):
    mode = argv[0]
    extra = ""
    if mode == "dirall":
        with open(argv[1]) as f:
            paths = [line.rstrip("\n") for line in f if line.strip()]
    base = maxrss_kb()
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
    elif mode == "dirall":
        for p in paths:
            np.load(p)
        extra = " arrays=%d" % len(paths)
    else:
        raise SystemExit("npbench.py: unknown mode " + mode)
    secs = time.perf_counter() - t0
    print("secs=%.6f maxrss_kb=%d base_kb=%d%s" % (secs, maxrss_kb(), base, extra))


if __name__ == "__main__":
    main(sys.argv[1:])
