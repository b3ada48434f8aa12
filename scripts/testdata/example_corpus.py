"""The example archive that scripts/demo.sh mounts: examples/demo.npz.

Small, deterministic, and written by numpy's own savez, byte for byte what
users have (zip64 extras in every local header included): two arrays
(images, labels) and a datetime array.
"""
import os

import numpy as np


def generate(root):
    out = os.path.join(root, "examples", "demo.npz")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    images = (np.arange(4 * 8 * 8, dtype=np.float32).reshape(4, 8, 8) / 16).astype(np.float32)
    labels = np.array([3, 1, 4, 1], dtype=np.int64)
    taken = np.array(["2026-01-01T00:00", "2026-01-02T12:30"], dtype="datetime64[m]")
    # savez stamps every member 1980-01-01, so the output is deterministic.
    np.savez(out, images=images, labels=labels, taken=taken)
    print(f"wrote {os.path.relpath(out, root)}")
