"""Spatial queries: ``tack.HashGrid``, a uniform grid of cells over points.

A particle code asks, for each point, which points lie within a radius of
it.  Checking every pair costs O(n^2); a grid of cells at least as wide as
the radius makes it O(n * neighbours): each point's neighbours lie in the
cells its ball touches.  The grid is built with the parallel primitives
(tack._algorithms) on the points' own device: one kernel finds each block's
bounding box (one launch and one copy back, where a reduction per axis and
bound cost six launches and copies in 3-D), one gives each point the index of its cell, ``tack.argsort`` sorts the points by cell (stably, so
the points of one cell keep their input order), and one kernel marks where
each cell's run of sorted points starts and ends.  What a kernel then reads
is three arrays -- the permutation and the start and end of every cell --
and a few numbers: the grid's origin, the inverse of its cell width and its
number of cells along each axis.

The cells are dense over the points' bounding box rather than hashed into a
table: a hash table's buckets collide, and two touched cells sharing a bucket
would give the same point twice.  To keep the memory O(n) whatever the
points' spread, the grid never has more than max(4 n, 4096) cells: when the
bounding box needs more at the requested width, the cells are made wider
(``cell_width``), which only adds candidates, never loses one.

Inside a kernel ``for j in grid.neighbors(p, radius):`` visits the index of
every point in the cells the ball touches (a superset of the ball: test the
distance yourself).  The loop is rewritten before the front end reads the
kernel (tack._hashgrid_rewrite), as struct kernels are: the grid argument
becomes its arrays and numbers and the loop a nest over the touched cells
and their runs, so the CPU, every GPU dialect and debug mode run it as an
ordinary kernel.  A call reaches here only when the kernel's argument binding
failed (the extension's struct_call hook), so other calls pay nothing.
"""

import math

import numpy as np

from . import _core, _rewritten_call
from ._algorithms_common import not_differentiated
from ._array import empty as _empty, asarray as _asarray
from ._core import i64
from ._intrinsics import independent
from ._hashgrid_rewrite import rewrite
from ._kernels import func, kernel

__all__ = ["HashGrid"]


@func
def _clamped_cell(f, lim, n):
    # the cell of position f (in cell widths) on an axis of n cells: 0 at or below 0 (a NaN too),
    # n - 1 at or above lim, else int(f) kept below n
    c = i64(0)
    if f > 0.0:
        c = n - 1
        if f < lim:
            c = i64(f)
            if c > n - 1:
                c = n - 1
    return c


@kernel
def _cells(pts, origin, lim, inv, dims, keys):
    # in the points' own float type, so that a 32-bit grid builds where there is no f64 (Metal)
    for i in range(pts.shape[0]):
        key = i64(0)
        stride = i64(1)
        for d in range(pts.shape[1]):
            c = _clamped_cell(math.floor((pts[i, d] - origin[d]) * inv), lim[d], dims[d])
            key += c * stride
            stride *= dims[d]
        keys[i] = key


@kernel
def _cells_periodic(pts, inv, fdims, dims, keys):
    # a periodic box [0, L) along each axis: a point's cell along d is floor(x / width) wrapped into
    # [0, n) (a point outside the box is in its image's cell); inv and fdims in the points' float type
    for i in range(pts.shape[0]):
        key = i64(0)
        stride = i64(1)
        for d in range(pts.shape[1]):
            f = pts[i, d] * inv[d]
            f = f - fdims[d] * math.floor(f / fdims[d])  # in [0, n], n only by rounding
            c = _clamped_cell(f, fdims[d], dims[d])
            key += c * stride
            stride *= dims[d]
        keys[i] = key


@kernel
def _box(pts, box, bs):
    # block b's least and greatest coordinate along each axis (columns d and dim + d) and its count of
    # non-finite coordinates (the last column): one launch and one copy back for the bounding box
    n, dim = pts.shape
    for b in range(box.shape[0]):
        first = b * bs
        last = min(first + bs, n)
        bad = 0
        for d in range(dim):
            lo = pts[first, d]
            hi = lo
            for i in range(first, last):
                x = pts[i, d]
                if x < lo:
                    lo = x
                if x > hi:
                    hi = x
                if not (x - x == 0.0):  # NaN or an infinity
                    bad += 1
            box[b, d] = lo
            box[b, dim + d] = hi
        box[b, 2 * dim] = bad


@kernel
def _clear(start, end):
    for c in range(start.shape[0]):
        start[c] = 0
        end[c] = 0


@kernel
def _bounds(keys, perm, start, end):
    n = perm.shape[0]
    for i in independent(range(n)):  # a cell's run has one first and one last point
        k = keys[perm[i]]
        if i == 0:
            start[k] = 0
        elif keys[perm[i - 1]] != k:
            start[k] = i
        if i == n - 1:
            end[k] = n
        elif keys[perm[i + 1]] != k:
            end[k] = i + 1




def _positive(value, what):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"tack.HashGrid: {what} must be a number, got {value!r}") from None
    if not (math.isfinite(v) and v > 0.0):
        raise ValueError(f"tack.HashGrid: {what} must be a positive finite number, got {value!r}")
    return v


class HashGrid:
    """A uniform grid of cells over 2-D or 3-D points, for neighbour queries in kernels.

    ``HashGrid(points, cell_size)`` builds it from an (n, 2) or (n, 3) array of f32
    or f64, or an (n,) array of vec2, vec3, vec2d or vec3d (a Tack array, or anything
    ``tack.asarray`` takes) on the points' device;
    ``grid.build(points)`` rebuilds it from new points, reusing its arrays where
    they are large enough.  Pass the grid to a kernel and loop
    ``for j in grid.neighbors(p, radius):`` (``p`` a vector or a tuple of 2 or 3
    numbers) to visit the index of every point in the cells the ball of that
    radius touches, each once: the points within the radius and some farther
    ones, so test the distance.  ``box=L`` (a length, or one per axis) makes
    the grid periodic over [0, L) along each axis: a point outside the box is in
    its image's cell, and the ball's cells wrap across the faces (each cell
    once, however wide the ball); the kernel takes the minimum image of each
    displacement itself.  The grid keeps no reference to the points.
    Memory: 8 bytes per point for the cell keys, 8 for the permutation, and
    16 per cell (at most max(4 n, 4096) cells)."""

    def __init__(self, points, cell_size, *, box=None):
        self.cell_size = _positive(cell_size, "cell_size")
        if box is not None:
            box = tuple(_positive(b, "box") for b in (box if isinstance(box, (tuple, list)) else (box,)))
        self._box_arg = box
        self.box = None
        self._keys = self._start = self._end = None
        self.build(points)

    def _points(self, points):
        a = points if isinstance(points, _core.Array) else _asarray(points)
        vshape = getattr(a.dtype, "shape", ())
        if a.ndim == 1 and tuple(vshape) in ((2,), (3,)):  # a vec2/vec3 array: its components as (n, k)
            if a.strided:
                a = a.copy()
            k = vshape[0]
            a = a._field_view(a.dtype.scalar, 0, (a.shape[0], k), (k, 1))
        shape = tuple(a.shape)
        if len(shape) != 2 or shape[1] not in (2, 3):
            raise ValueError(f"tack.HashGrid: points must be an (n, 2) or (n, 3) array, got shape {shape}")
        npdt = np.dtype(a.dtype.numpy) if hasattr(a.dtype, "numpy") else None
        if npdt not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise TypeError(f"tack.HashGrid: points must be f32 or f64, got {a.dtype}")
        return a

    @not_differentiated("HashGrid.build")
    def build(self, points):
        """Rebuild the grid from `points` (same rules as the constructor); returns the grid."""
        from ._algorithms import argsort
        from ._algorithms_common import _blocks

        a = self._points(points)
        self._argv = None
        n, dim = a.shape
        dev = a.device
        lo, hi = [0.0] * dim, [0.0] * dim
        if n:
            nb, bs = _blocks(n, dev)
            box = _empty((nb, 2 * dim + 1), a.dtype, device=dev)
            _box(a, box, bs)
            box = box.numpy()
            lo, hi = box[:, :dim].min(0).tolist(), box[:, dim:2 * dim].max(0).tolist()
            if box[:, 2 * dim].any():
                for d in range(dim):  # the error's path only: which point
                    col = a[:, d].numpy()
                    bad = np.flatnonzero(~np.isfinite(col))
                    if len(bad):
                        k = int(bad[0])
                        raise ValueError(f"tack.HashGrid: point {k} has {col[k]} in coordinate {d} (the point: "
                                         f"{a[k].numpy().tolist()}): every coordinate must be finite")
        width = self.cell_size
        cap = max(4 * n, 4096)
        box = self._box_arg
        if box is not None:
            if len(box) == 1:
                box = box * dim
            if len(box) != dim:
                raise ValueError(f"tack.HashGrid: box has {len(box)} lengths for {dim}-D points: give one, or {dim}")
            lo = [0.0] * dim
        while True:
            if box is None:
                dims = [int(math.floor((hi[d] - lo[d]) / width)) + 1 for d in range(dim)]
            else:  # whole cells in the box, each at least `width` wide
                dims = [max(1, int(math.floor(box[d] / width))) for d in range(dim)]
            ncells = math.prod(dims)
            if ncells <= cap:
                break
            width *= max(1.01, (ncells / cap) ** (1.0 / dim))
        self.dim, self.n, self.origin, self.dims = dim, n, tuple(lo), tuple(dims)
        self.ncells, self.device, self.box = ncells, dev, box
        self.ftype = np.dtype(a.dtype.numpy).type
        if box is None:
            self.cell_width = width
            self._inv = self.ftype(1.0 / width)
        else:  # each axis's cells fill its length: widths at least `width`, the largest the one named
            self.cell_width = max(box[d] / dims[d] for d in range(dim))
            self._inv = tuple(self.ftype(dims[d] / box[d]) for d in range(dim))
        if self._start is None or self._start.device != dev or self._start.shape[0] < ncells:
            size = max(ncells, cap if n else 1)
            self._start = _empty(size, np.int64, device=dev)
            self._end = _empty(size, np.int64, device=dev)
        _clear(self._start, self._end)
        if n == 0:
            self._perm = _empty(0, np.int64, device=dev)
            return self
        if self._keys is None or self._keys.device != dev or self._keys.shape[0] != n:
            self._keys = _empty(n, np.int64, device=dev)
        from ._array import array as _array

        ft = self.ftype
        if box is None:
            _cells(a, _array(np.asarray(lo, ft), device=dev), _array(np.asarray(dims, ft) - 1, device=dev),
                   self._inv, _array(np.asarray(dims, np.int64), device=dev), self._keys)
        else:
            _cells_periodic(a, _array(np.asarray(self._inv, ft), device=dev), _array(np.asarray(dims, ft), device=dev),
                            _array(np.asarray(dims, np.int64), device=dev), self._keys)
        self._perm = argsort(self._keys)
        _bounds(self._keys, self._perm, self._start, self._end)
        return self

    @property
    def permutation(self):
        """The points' indices in cell order (int64, on the grid's device): the points of cell 0
        first, each cell's in their input order.  Reordering the particles by it
        (``x = x[grid.permutation]``, then rebuild) makes the points a kernel visits for
        neighbouring particles neighbours in memory: a neighbour query over every point ran 11-17x
        faster on a million points (docs/benchmarks.md)."""
        return self._perm

    def neighbors(self, p, radius):
        """In a kernel, ``for j in grid.neighbors(p, radius):`` visits the index of every point
        in the cells that the ball of `radius` around `p` (a vector or a tuple of the grid's 2
        or 3 coordinates) touches, each once, in no stated order; none for a NaN point or a
        NaN or negative radius.  Called from Python it raises TypeError."""
        raise TypeError("HashGrid.neighbors(p, radius) is a loop inside a kernel "
                        "(for j in grid.neighbors(p, radius): ...), not a Python call")

    def _args(self):
        """The kernel arguments the grid becomes (tack._hashgrid_rewrite names them), made once a build."""
        if self._argv is None:
            ft = self.ftype
            if self.box is None:
                self._argv = ([self._perm, self._start, self._end] + [ft(o) for o in self.origin]
                              + [self._inv] + [np.int64(d) for d in self.dims])
            else:  # periodic: an inverse width per axis, no origin
                self._argv = [self._perm, self._start, self._end] + list(self._inv) + [np.int64(d) for d in self.dims]
        return self._argv

    def _key(self):
        """What the kernel's rewrite depends on: the dimension, the float type, whether periodic."""
        return (self.dim, self.ftype, self.box is not None)

    def __repr__(self):
        box = "" if self.box is None else f", box={self.box}"
        return (f"tack.HashGrid({self.n} points in {self.dim}-D, cell_size={self.cell_size}{box}, "
                f"cells {self.dims} of width {self.cell_width:g}, device={self.device!r})")


# ------------------------------------------------------------------ the call hook

def has_grid(args, kwargs):
    return any(isinstance(v, HashGrid) for v in args) or any(isinstance(v, HashGrid) for v in kwargs.values())


def grid_call(kernel_obj, args, kwargs, method=None):
    """The hook for a call with a HashGrid argument (or kernel.compile / generated_source / ir
    of such arguments, with their target= keyword); NotImplemented when no argument is a grid."""
    if not has_grid(args, kwargs):
        return NotImplemented
    # struct arguments beside the grid go on to the struct rewrite, which reads the grid rewrite's tree
    return _rewritten_call.call(kernel_obj, args, kwargs, method, HashGrid, HashGrid._key, rewrite)
