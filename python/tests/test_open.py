"""npzfs.open against np.load, with no FUSE: every array of the corpus
(every dtype, both byte orders, Fortran order, 0-d, empty, structured),
stored and deflated, local, over HTTP (nginx) and S3 (versitygw); and
thousands of random basic-index expressions on each array's lazy form,
each giving exactly what the same expression gives on np.load's array.

scripts/test-python.sh runs this file also in a mount namespace with no
/dev/fuse."""

import ast
import gc
import shutil
import time
import warnings

import numpy as np
import pytest

import npzfs
from conftest import running, serve_pids

SOURCES = ["local-stored", "local-deflated", "http-stored", "http-deflated", "s3-stored", "s3-deflated"]


@pytest.fixture(autouse=True)
def no_server_left():
    """Every test ends its servers: an archive closed, or collected."""
    yield
    gc.collect()
    left = serve_pids()
    assert not left, f"npzfs serve processes left: {left}"


@pytest.fixture(scope="session")
def copied_to_s3(s3, data, corpus):
    for name in ("corpus_stored.npz", "corpus_deflated.npz"):
        shutil.copy(data / name, s3[1] / name)
    return s3[0]


def source_of(where, data, request):
    """The source string and options of a corpus archive at where."""
    place, method = where.split("-")
    name = f"corpus_{method}.npz"
    if place == "local":
        return str(data / name), {}
    if place == "http":
        return f"{request.getfixturevalue('nginx')}/{name}", {}
    endpoint = request.getfixturevalue("copied_to_s3")
    return f"s3://corpus/{name}", {"endpoint": endpoint}


def exact(got, want):
    """got is what numpy gives: the same type (an ndarray, or the same
    kind of numpy scalar), dtype, shape and bytes."""
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), type(got)
    else:
        assert type(got) is type(want), (type(got), type(want))
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert values(got) == values(want)


def values(a):
    """An array's bytes, field by field for a record (whose padding
    np.load leaves as it finds it in memory)."""
    if a.dtype.names is None:
        return a.tobytes()
    return tuple(values(a[name]) for name in a.dtype.names)


@pytest.mark.parametrize("where", SOURCES)
def test_same_as_np_load(where, data, corpus, request):
    src, opts = source_of(where, data, request)
    ref = np.load(data / f"corpus_{where.split('-')[1]}.npz", allow_pickle=True)
    with npzfs.open(src, allow_pickle=True, **opts) as z:
        assert z.files == ref.files and list(z) == ref.files and len(z) == len(ref.files)
        for key in ref.files:
            got, want = z[key], ref[key]
            if isinstance(want, bytes):
                assert got == want
                continue
            if want.dtype.hasobject:
                assert isinstance(got, np.ndarray) and list(got) == list(want)
                continue
            if where == "local-stored":
                assert isinstance(got, np.memmap) and not got.flags.writeable
            else:
                assert isinstance(got, npzfs.LazyArray)
                assert (got.shape, got.dtype, got.ndim, got.size, got.nbytes) == (want.shape, want.dtype, want.ndim, want.size, want.nbytes)
                if want.ndim:
                    assert len(got) == len(want)
            exact(np.asarray(got), want)
            exact(np.asarray(got, dtype=want.dtype), want)
            exact(np.asarray(z[key + ".npy"]), want)
        assert "t_lef4" in z and "t_lef4.npy" in z and "nope" not in z
        with pytest.raises(KeyError) as e:
            z["nope"]
        assert str(e.value) == str(KeyError("nope is not a file in the archive"))
    ref.close()


def test_table_descr(data, corpus):
    """The server's table, with headers, gives each array's descr as the
    text from which numpy rebuilds np.load's dtype, its shape and order,
    and tells arrays from other members by their bytes."""
    with npzfs.open(data / "corpus_deflated.npz") as z:
        rp = z.connection().call({"kind": "table", "headers": True})
    kinds = {e["name"]: e["kind"] for e in rp["members"]}
    assert kinds["notes.txt"] == "other" and kinds["looks.npy"] == "other" and kinds["objects.npy"] == "array"
    for e in rp["members"]:
        key = e["key"]
        if key not in corpus:
            continue
        want = corpus[key]
        assert e["kind"] == "array" and e["readable"] and e["method"] == "deflate"
        assert np.lib.format.descr_to_dtype(ast.literal_eval(e["descr"])) == want.dtype, key
        assert e["shape"] == list(want.shape) and e["fortran_order"] == (want.ndim > 1 and want.flags.f_contiguous and not want.flags.c_contiguous)
        assert e["data_length"] == want.nbytes and e["data_offset"] % 64 == 0 and "archive_offset" not in e


@pytest.mark.parametrize("where", SOURCES)
def test_object_arrays_refused_without_allow_pickle(where, data, corpus, request):
    src, opts = source_of(where, data, request)
    with npzfs.open(src, **opts) as z:
        with pytest.raises(ValueError, match="Object arrays cannot be loaded when allow_pickle=False"):
            z["objects"]
        assert z["notes.txt"] == b"not an array\n" * 100


def random_index(rng, shape):
    """A random basic index of an array of shape: integers (negative
    too), slices of any start, stop and step, an Ellipsis, None, in a
    tuple or alone; now and then one numpy refuses (out of bounds, too
    many, a step of 0)."""
    ndim = len(shape)
    parts = []
    axis = 0
    for _ in range(rng.integers(0, ndim + 2)):
        n = shape[axis] if axis < ndim else 1
        r = rng.random()
        if r < 0.3:
            lo, hi = (-n, n) if rng.random() < 0.97 else (-n - 2, n + 2)
            parts.append(int(rng.integers(lo, hi)) if hi > lo else 0)
            axis += 1
        elif r < 0.85:
            def end():
                return None if rng.random() < 0.3 else int(rng.integers(-n - 3, n + 4))
            step = None if rng.random() < 0.3 else int(rng.choice([-7, -3, -2, -1, 1, 1, 2, 3, 5]) if rng.random() < 0.995 else 0)
            parts.append(slice(end(), end(), step))
            axis += 1
        elif r < 0.95:
            parts.append(None)
        elif Ellipsis not in parts:
            parts.append(Ellipsis)
    if len(parts) == 1 and rng.random() < 0.5:
        return parts[0]
    return tuple(parts)


def outcome(f):
    try:
        return f(), None
    except (IndexError, ValueError, TypeError) as e:
        return None, type(e)


# Expressions per array: thousands where reads are local, fewer where
# each read is an HTTP or S3 request.
COUNTS = {"local-deflated": 2000, "http-stored": 1000, "http-deflated": 1000, "s3-stored": 1000, "s3-deflated": 1000}


@pytest.mark.parametrize("where", list(COUNTS))
def test_random_indexes(where, data, corpus, request):
    """Random basic-index expressions on every array's lazy form give
    exactly what they give on np.load's array (or the same exception)."""
    src, opts = source_of(where, data, request)
    rng = np.random.default_rng(1938 + SOURCES.index(where))
    with npzfs.open(src, **opts) as z:
        for key, want in corpus.items():
            lazy = z[key]
            assert isinstance(lazy, npzfs.LazyArray)
            for _ in range(COUNTS[where]):
                index = random_index(rng, want.shape)
                got, got_err = outcome(lambda: lazy[index])
                ref, ref_err = outcome(lambda: want[index])
                assert got_err == ref_err, (key, index, got_err, ref_err)
                if ref_err is None:
                    try:
                        exact(got, ref)
                    except AssertionError:
                        pytest.fail(f"{key}[{index!r}] differs from numpy's")


def test_other_indexes_read_whole(data, corpus):
    """Indexes that are not basic (lists, arrays, booleans) are numpy's,
    on the whole array."""
    with npzfs.open(data / "corpus_deflated.npz") as z:
        a, want = z["big"], corpus["big"]
        for index in ([3, 1, 3], np.array([0, -1]), want[:, 0] > 0, (slice(None), [0, 5]), True, np.True_, (np.array(2), 1)):
            exact(a[index], want[index])


def test_reads_only_what_is_asked(data, corpus, nginx, monkeypatch):
    """An index reads the runs of bytes its result is made of, one
    request each, runs close together read as one."""
    asked = []
    read = npzfs._protocol.Connection.read

    def counting(self, member, runs):
        asked.extend((off, len(dest)) for off, dest in runs)
        return read(self, member, runs)

    monkeypatch.setattr(npzfs._protocol.Connection, "read", counting)
    row = 1031 * 8
    with npzfs.open(f"{nginx}/corpus_stored.npz") as z:
        big, cube = z["big"], z["cube_f"]
        start = asked[-1][0] + asked[-1][1]  # the header's read ends where the data starts... or beyond
        for index, runs in (
            ((100,), [(100 * row, row)]),
            ((slice(100, 103),), [(100 * row, 3 * row)]),
            ((slice(None), 7), [(7 * 8, 255 * row + 8)]),
            ((slice(None, None, 200), slice(None, None, 500)), [(0, 1001 * 8), (200 * row, 1001 * 8)]),
            ((slice(None, None, -200), slice(None, None, -500)), [(55 * row + 30 * 8, 1001 * 8), (255 * row + 30 * 8, 1001 * 8)]),
        ):
            del asked[:]
            exact(big[index], corpus["big"][index])
            data_offset = big._data_offset
            assert [(off - data_offset, n) for off, n in asked] == runs, index
        del asked[:]
        exact(cube[3, 4, :], corpus["cube_f"][3, 4, :])  # Fortran order: 23 elements 17*19*4 bytes apart
        assert [(off - cube._data_offset, n) for off, n in asked] == [((3 + 4 * 17) * 4, 22 * 17 * 19 * 4 + 4)]
        assert start


def test_load_falls_back_without_fuse(data, corpus, monkeypatch):
    """npzfs.load is npzfs.open where FUSE is not available (here: not
    Linux), saying so once; where it is, it mounts as before. In a mount
    namespace with no /dev/fuse, the plain call falls back too."""
    monkeypatch.setattr(npzfs, "_warned", False)
    fuse = npzfs.sys.platform.startswith("linux") and npzfs.os.path.exists("/dev/fuse")
    if not fuse:
        with pytest.warns(RuntimeWarning, match="FUSE is not available"):
            z = npzfs.load(data / "corpus_deflated.npz", cache_mb=16, max_open=3)
        assert isinstance(z, npzfs.OpenArchive)
        z.close()
    monkeypatch.setattr(npzfs.sys, "platform", "darwin")
    monkeypatch.setattr(npzfs, "_warned", False)
    with pytest.warns(RuntimeWarning, match="FUSE is not available") as w:
        z1 = npzfs.load(data / "corpus_stored.npz", options=["allow_other"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        z2 = npzfs.load(data / "corpus_deflated.npz")  # said once
    assert len(w) == 1
    with z1, z2:
        assert isinstance(z1, npzfs.OpenArchive) and isinstance(z2, npzfs.OpenArchive)
        assert isinstance(z1["t_lef8"], np.memmap) and isinstance(z2["t_lef8"], npzfs.LazyArray)
        exact(z2["big"][3], corpus["big"][3])
    with pytest.raises(TypeError, match="unexpected keyword argument 'cache_mib'"):
        npzfs.load(data / "corpus_stored.npz", cache_mib=3)


def test_bare_npy_and_folders(data):
    """A .npy file is an archive of one array; a folder is refused."""
    with npzfs.open(data / "grid.npy") as z:
        assert z.files == ["grid"]
        want = np.load(data / "grid.npy")
        assert isinstance(z["grid"], np.memmap)
        exact(np.asarray(z["grid"]), want)
    with pytest.raises(npzfs.Error, match="is a folder"):
        npzfs.open(data / "folder")


def test_errors(data, nginx):
    """A missing file, a file that is not an archive, a URL that is not
    there, a bad option: npzfs's one line, before anything is read."""
    for src, mention in ((data / "missing.npz", "does not exist"), (data / "notzip.npz", "not a readable .npz"),
                         (f"{nginx}/missing.npz", "404"), ("ftp://host/a.npz", "unknown URL scheme")):
        with pytest.raises(npzfs.Error) as e:
            npzfs.open(src)
        assert mention in str(e.value) and "\n" not in str(e.value) and isinstance(e.value, OSError)
    with pytest.raises(TypeError, match="did you mean 'cache_mb'"):
        npzfs.open(data / "stored.npz", cache_mib=3)
    with pytest.raises(TypeError):
        npzfs.open(data / "stored.npz", stdio=True)


def test_close(data, corpus):
    """After close, memory maps stay readable and lazy arrays raise
    npzfs.Error; the server has exited."""
    z = npzfs.open(data / "corpus_deflated.npz")
    lazy = z["big"]
    exact(lazy[1], corpus["big"][1])
    pid = z._state.conn.pid
    m = npzfs.open(data / "corpus_stored.npz")
    mapped = m["big"]
    z.close()
    m.close()
    assert not running(pid)
    with pytest.raises(npzfs.Error, match="closed"):
        lazy[2]
    exact(np.asarray(mapped[2]), corpus["big"][2])
    with pytest.raises(ValueError):
        z["big"]
    z.close()  # again: nothing


def test_collected(data, corpus):
    """An archive collected with its lazy arrays ends its server; one
    whose lazy array is kept stays open for it."""
    z = npzfs.open(data / "corpus_deflated.npz")
    lazy = z["big"]
    pid = z._state.conn.pid
    del z
    gc.collect()
    exact(lazy[4], corpus["big"][4])
    assert running(pid)
    del lazy
    gc.collect()
    for _ in range(500):  # a guard: the server exits once its stdin closes
        if not running(pid):
            break
        time.sleep(0.01)
    assert not running(pid)
