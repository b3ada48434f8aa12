"""Lazy arrays: an array of an archive that is read only where it is
indexed, through ``npzfs serve`` (docs/python.md).

Indexing a :class:`LazyArray` with numpy's basic indexing (integers,
slices with any step, ``...``, ``None``) works out which bytes of the
member the result is made of, reads them (one request per contiguous run
of bytes, runs close together merged into one, all in flight at once) and
returns what numpy returns for the same expression on the whole array.
numpy itself checks the index and places the result: the index is applied
to a stand-in array of the same shape and strides whose data is never
touched, and the view it gives says where each element of the result lies
in the member.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterator, List, Literal, Optional, Tuple

import numpy as np

if TYPE_CHECKING:
    # Annotations only: numpy.typing takes longer to import than
    # npzfs.open of a stored array takes to return.
    import numpy.typing as npt

    from ._protocol import Connection

    Array = npt.NDArray[Any]

# Two runs of bytes at most this far apart are read as one, with what lies
# between them: a request costs about what reading this much does.
MERGE_GAP = 32 << 10
# ... unless the merged read, which goes through a buffer of its own
# before its elements are put in place, would be longer than this.
MAX_SLAB = 8 << 20
# Requests sent before their replies are waited for, and the bytes of
# merged reads held at once: a bound on what one index holds in flight.
BATCH_RUNS = 4096
BATCH_BYTES = 64 << 20


class _Source:
    """Where a lazy array's bytes are: what it asks its archive for."""

    def connection(self) -> "Connection":  # pragma: no cover - an interface
        raise NotImplementedError


class LazyArray:
    """An array of an archive read only where it is indexed.

    ``shape``, ``dtype``, ``ndim``, ``size``, ``nbytes`` and ``len()`` are
    the array's, known without reading it. ``a[index]`` with numpy's
    basic indexing reads only the bytes the result needs and returns what
    ``np.load`` 's array would give for it (a new ndarray, or a numpy
    scalar for a full integer index); other indexes (lists, arrays,
    booleans) read the whole array and index it. ``np.asarray(a)`` reads
    the whole array, once, straight into the array returned. Nothing is
    kept: each read reads again.
    """

    def __init__(self, source: _Source, member: int, name: str, data_offset: int,
                 shape: Tuple[int, ...], dtype: np.dtype[Any], fortran_order: bool) -> None:
        self._source = source
        self._member = member
        self._data_offset = data_offset
        self.name = name
        self.shape = tuple(shape)
        self.dtype = dtype
        self.fortran_order = fortran_order

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self) -> Iterator[Any]:
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        for i in range(self.shape[0]):
            yield self[i]

    def __repr__(self) -> str:
        return f"<npzfs.LazyArray {self.name!r} shape={self.shape} dtype={self.dtype}>"

    def _strides(self) -> Tuple[int, ...]:
        """The array's strides in bytes, as numpy's for its order."""
        strides = [0] * self.ndim
        step = self.dtype.itemsize
        axes = range(self.ndim) if self.fortran_order else reversed(range(self.ndim))
        for i in axes:
            strides[i] = step
            step *= self.shape[i]
        return tuple(strides)

    def __array__(self, dtype: Optional[npt.DTypeLike] = None, copy: Optional[bool] = None) -> Array:
        if copy is False:
            raise ValueError("npzfs.LazyArray: an array of an archive cannot be had without reading it into a new array (copy=False)")
        a = self._read_all()
        if dtype is not None and np.dtype(dtype) != a.dtype:
            return a.astype(dtype)
        return a

    def _read_all(self) -> Array:
        """The whole array, read in one request into its own buffer."""
        order: Literal["C", "F"] = "F" if self.fortran_order else "C"
        if self.nbytes == 0:
            return np.ndarray(self.shape, self.dtype, order=order)
        buf = np.empty(self.nbytes, np.uint8)
        self._source.connection().read(self._member, [(self._data_offset, buf.data)])
        return np.ndarray(self.shape, self.dtype, buffer=buf, order=order)

    def __getitem__(self, key: Any) -> Any:
        items = key if isinstance(key, tuple) else (key,)
        run = self._run(items)
        if run is not None:
            return self._read_run(*run)
        if not all(_basic(k) for k in items):
            return np.asarray(self)[key]  # advanced indexing: numpy's, on the whole array
        stand_in = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape=self.shape, strides=self._strides(), writeable=False)
        # With an Ellipsis, numpy gives a view even for a full integer
        # index (never a scalar, which would read the stand-in's data).
        view = stand_in[items if any(k is Ellipsis for k in items) else items + (Ellipsis,)]
        start = view.__array_interface__["data"][0] - stand_in.__array_interface__["data"][0]
        out = self._gather(start, view.shape, view.strides)
        if len(items) == self.ndim and all(_integer(k) for k in items):
            return out[()]  # a scalar, as numpy gives for a full integer index
        return out

    def _run(self, items: Tuple[Any, ...]) -> Optional[Tuple[int, Tuple[int, ...], bool]]:
        """For the commonest indexes of a C-order array, rows (a[i],
        a[i, j], a[i:k]): where the one run of bytes of the result starts,
        its shape, and whether it is a scalar; None for any other index,
        left to the general way (which raises numpy's errors too)."""
        if (self.fortran_order and self.ndim > 1) or len(items) > self.ndim:
            return None
        strides = self._strides()
        off, axis = 0, 0
        for k in items:
            n = self.shape[axis]
            if type(k) is int:
                if not -n <= k < n:
                    return None
                off += (k + n if k < 0 else k) * strides[axis]
            elif type(k) is slice and k.step is None and axis == len(items) - 1:
                start, stop, _ = k.indices(n)
                count = max(stop - start, 0)
                return off + start * strides[axis], (count,) + self.shape[axis + 1:], False
            else:
                return None
            axis += 1
        return off, self.shape[axis:], axis == self.ndim

    def _read_run(self, off: int, shape: Tuple[int, ...], scalar: bool) -> Any:
        """The elements of the given shape at off, in C order."""
        n = math.prod(shape) * self.dtype.itemsize
        buf = np.empty(n, np.uint8)
        if n:
            self._source.connection().read(self._member, [(self._data_offset + off, buf.data)])
        out: Array = np.ndarray(shape, self.dtype, buffer=buf)
        return out[()] if scalar else out

    def _gather(self, start: int, shape: Tuple[int, ...], strides: Tuple[int, ...]) -> Array:
        """The elements at start + sum(i[k] * strides[k]) of the array's
        bytes, for i within shape, as a new array of that shape."""
        itemsize = self.dtype.itemsize
        if math.prod(shape) == 0 or itemsize == 0:
            return np.ndarray(shape, self.dtype)
        plan = _Plan(start, shape, strides, itemsize)
        work: Array = np.ndarray(plan.work_shape, self.dtype)
        conn = self._source.connection()
        offsets = plan.run_offsets()
        block = plan.block_bytes
        flat = work.reshape(len(offsets), -1) if offsets.size else work.reshape(1, -1)
        wbytes = work.reshape(-1).view(np.uint8).data
        per = BATCH_RUNS if plan.dense else max(1, min(BATCH_RUNS, BATCH_BYTES // plan.run_bytes))
        i = 0
        while i < len(offsets):
            n = min(per, len(offsets) - i)
            runs: List[Tuple[int, memoryview]] = []
            slabs: List[Tuple[int, Array]] = []
            for r in range(i, i + n):
                off = self._data_offset + int(offsets[r])
                if plan.dense:
                    runs.append((off, wbytes[r * block:(r + 1) * block]))
                else:
                    slab = np.empty(plan.run_bytes, np.uint8)
                    slabs.append((r, slab))
                    runs.append((off, slab.data))
            conn.read(self._member, runs)
            for r, slab in slabs:
                flat[r] = np.ndarray(plan.inner_shape, self.dtype, buffer=slab, strides=plan.inner_strides).reshape(-1)
            i += n
        return plan.result(work, shape)


class _Plan:
    """How to read the elements a view of the array selects: its axes
    of more than one element in the order of their strides, the fastest
    of them merged into runs of bytes read whole, the others giving one
    run per combination of their indexes."""

    def __init__(self, start: int, shape: Tuple[int, ...], strides: Tuple[int, ...], itemsize: int) -> None:
        self.flip = [False] * len(shape)
        axes = []  # (stride, count, axis) of the axes that select more than one element
        for j, (n, s) in enumerate(zip(shape, strides)):
            if n > 1 and s != 0:
                if s < 0:
                    start += (n - 1) * s
                    s = -s
                    self.flip[j] = True
                axes.append((s, n, j))
        axes.sort()
        self.start = start
        self.axes = axes
        run, dense, merged = itemsize, True, 0
        for s, n, _ in axes:
            if dense and s == run:
                run *= n
            elif s - run <= MERGE_GAP and (n - 1) * s + run <= MAX_SLAB:
                run, dense = (n - 1) * s + run, False
            else:
                break
            merged += 1
        self.run_bytes = run
        self.dense = dense
        inner = axes[:merged]
        self.outer = axes[merged:]
        # The work array holds the elements in the order of their bytes:
        # the slowest axis first, C-contiguous.
        self.work_shape = tuple(n for _, n, _ in reversed(axes))
        self.inner_shape = tuple(n for _, n, _ in reversed(inner))
        self.inner_strides = tuple(s for s, _, _ in reversed(inner))
        self.block_bytes = math.prod(self.inner_shape) * itemsize

    def run_offsets(self) -> npt.NDArray[np.int64]:
        """Where each run starts in the array's bytes, in the work
        array's order."""
        offs = np.array([self.start], np.int64)
        for s, n, _ in reversed(self.outer):
            offs = (offs[:, None] + np.arange(n, dtype=np.int64) * s).reshape(-1)
        return offs

    def result(self, work: Array, shape: Tuple[int, ...]) -> Array:
        """The work array as the view's shape: its axes put back in
        order, reversed where the view's steps are negative, and the
        axes of one element added."""
        order = [j for _, _, j in reversed(self.axes)]  # the view's axis of each work axis
        v = work.transpose(np.argsort(order)) if order else work
        kept = sorted(order)
        if any(self.flip[j] for j in kept):
            v = v[tuple(slice(None, None, -1) if self.flip[j] else slice(None) for j in kept)]
        return v.reshape(shape)


def _integer(k: Any) -> bool:
    """An integer index, as numpy takes one (not a bool, not an array)."""
    return not isinstance(k, (bool, np.bool_, np.ndarray)) and hasattr(type(k), "__index__")


def _basic(k: Any) -> bool:
    """An index of numpy's basic indexing."""
    return k is None or k is Ellipsis or isinstance(k, slice) or _integer(k)
