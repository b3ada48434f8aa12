#!/usr/bin/python3
"""Write the archives scripts/bench.sh measures, with numpy's own writers.

    /usr/bin/python3 scripts/bench/gen.py OUTDIR NAME PARAMS_JSON

NAME is one of:
  stored     np.savez(x=float32[n])                 normal noise, 1 GiB at full size
  deflated   np.savez_compressed(y=float32[n])      a smooth signal plus noise,
  bigdefl    np.savez_compressed(z=float32[n])      quantised to 1/16: deflates
                                                    to about a quarter, slowly
  many       np.savez(a000000=float32[4], ...)      100,000 small arrays
  million    np.savez(a0000000=float32[4], ...)     1,000,000 small arrays
  manydefl   np.savez_compressed(b00000=float32[300], ...)  20,000 small deflated
                                                    arrays (1.3 KB each)
  verify     np.savez(v=float32[n])                 normal noise, 256 MiB at full size:
                                                    the largest stored array
                                                    verified by default

PARAMS_JSON holds the sizes ({"stored_bytes": ..., ...}). Each archive gets a
sidecar OUTDIR/NAME.json recording the parameters it was written with, its
size and mtime, and where its first member's array bytes lie in the archive;
a later run reuses the archive when the sidecar still matches (--check).
Everything is seeded, so the same parameters give the same bytes.
"""
import json
import os
import struct
import sys
import zipfile

GEN_VERSION = 2  # bump when the data written for the same parameters changes


def signal(n, seed):
    """Smooth, noisy float32 data quantised to 1/16: numpy-like, not zeros."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = np.empty(n, dtype=np.float32)
    chunk = 1 << 24
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        t = np.arange(start, start + m, dtype=np.float64)
        v = np.sin(t * 1e-4) * 10 + np.sin(t * 3.7e-2) * 2 + rng.standard_normal(m) * 0.5
        out[start:start + m] = np.round(v * 16) / 16
    return out


def write(outdir, name, p):
    import numpy as np

    path = os.path.join(outdir, name + ".npz")
    tmp = path + ".tmp.npz"
    if name == "stored":
        n = p["stored_bytes"] // 4
        rng = np.random.default_rng(1)
        np.savez(tmp, x=rng.standard_normal(n, dtype=np.float32))
    elif name == "deflated":
        np.savez_compressed(tmp, y=signal(p["deflated_bytes"] // 4, 2))
    elif name == "bigdefl":
        np.savez_compressed(tmp, z=signal(p["bigdefl_bytes"] // 4, 3))
    elif name == "many":
        rng = np.random.default_rng(4)
        k = p["many_count"]
        vals = rng.standard_normal((k, 4), dtype=np.float32)
        np.savez(tmp, **{"a%06d" % i: vals[i] for i in range(k)})
    elif name == "million":
        rng = np.random.default_rng(5)
        k = p["million_count"]
        vals = rng.standard_normal((k, 4), dtype=np.float32)
        np.savez(tmp, **{"a%07d" % i: vals[i] for i in range(k)})
    elif name == "manydefl":
        rng = np.random.default_rng(6)
        k = p["manydefl_count"]
        vals = (np.round(rng.standard_normal((k, 300)) * 16) / 16).astype(np.float32)
        np.savez_compressed(tmp, **{"b%05d" % i: vals[i] for i in range(k)})
    elif name == "verify":
        rng = np.random.default_rng(7)
        np.savez(tmp, v=rng.standard_normal(p["verify_bytes"] // 4, dtype=np.float32))
    else:
        raise SystemExit("gen.py: unknown archive " + name)
    os.replace(tmp, path)
    return path


def layout(path):
    """Where the first member's .npy stream and its array bytes start."""
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
        info = infos[0]
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        lh = f.read(30)
        sig, _, _, method, _, _, _, _, _, nlen, xlen = struct.unpack("<IHHHHHIIIHH", lh)
        assert sig == 0x04034B50, "bad local header"
        npy_off = info.header_offset + 30 + nlen + xlen
        out = {"members": len(infos), "first_member": info.filename, "method": method,
               "npy_offset": npy_off, "npy_size": info.file_size,
               "compressed_size": info.compress_size}
        if method == 0:
            f.seek(npy_off)
            head = f.read(12)
            major = head[6]
            if major == 1:
                hlen = struct.unpack("<H", head[8:10])[0] + 10
            else:
                hlen = struct.unpack("<I", head[8:12])[0] + 12
            out["raw_offset"] = npy_off + hlen
            out["raw_size"] = info.file_size - hlen
        return out


def sidecar_ok(outdir, name, params):
    path = os.path.join(outdir, name + ".npz")
    try:
        with open(os.path.join(outdir, name + ".json")) as f:
            meta = json.load(f)
        st = os.stat(path)
    except (OSError, ValueError):
        return False
    return (meta.get("gen_version") == GEN_VERSION and meta.get("params") == params
            and meta.get("size") == st.st_size and meta.get("mtime_ns") == st.st_mtime_ns)


def main(argv):
    check = argv[:1] == ["--check"]
    if check:
        argv = argv[1:]
    outdir, name, params = argv[0], argv[1], json.loads(argv[2])
    # Only the parameters this archive depends on decide whether it is reused.
    keys = {"stored": ["stored_bytes"], "deflated": ["deflated_bytes"],
            "bigdefl": ["bigdefl_bytes"], "many": ["many_count"], "million": ["million_count"],
            "manydefl": ["manydefl_count"], "verify": ["verify_bytes"]}[name]
    params = {k: params[k] for k in keys}
    if check:
        return 0 if sidecar_ok(outdir, name, params) else 1
    os.makedirs(outdir, exist_ok=True)
    path = write(outdir, name, params)
    st = os.stat(path)
    meta = {"gen_version": GEN_VERSION, "params": params, "size": st.st_size,
            "mtime_ns": st.st_mtime_ns, "layout": layout(path)}
    with open(os.path.join(outdir, name + ".json"), "w") as f:
        json.dump(meta, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
