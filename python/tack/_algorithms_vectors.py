"""tack.reduce, tack.scan and tack.segmented_reduce of an array of vectors or matrices (vec3, vec2d,
vec4i, mat33, ...): component by component, as NumPy's ``a.sum(axis=0)`` / ``min`` / ``max``,
``np.cumsum(a, axis=0)`` / ``np.minimum.accumulate(a, axis=0)`` and each segment's reduction as
tack.reduce's, of the (n, k) array of the components.  A reduction gives a NumPy array of the
element's shape -- the form in which an element of such an array reaches the host (``v[0]``), so a
reduction of vec3 values reads as one of them; a scan and a segmented reduction give a Tack array
on the input's device whose elements are of the vector or matrix type of the result's component
type (vec3 of float32, vec3d when ``dtype=np.float64``), or, where there is none (the int64 of an
integer sum: Tack has no int64 vectors), a 2-D array (n, k) -- (n, 2, 2) for a matrix -- of the
components, NumPy's own result on the component view.

Each component is computed as the 1-D array of that component alone would be, in the same blocks
and the same order, so its result is that primitive's bit for bit.  A float sum is one pass of the
scalar primitive's kernel over the vectors themselves (the reduce's eight partial sums, the scan's
running total -- from -0.0, as the scalar scan's -- and the segment's fold are vectors, and a
vector add is the scalar add of each component).  Every other case -- integer sums, which
widen to int64 as NumPy's do and have no vector type to add in, min and max with their NaN and
zero rules, a ``dtype=`` -- keeps each component to the scalar kernel's steps: a reduce runs the
scalar reduction on each component's strided view in turn (k passes, each reading every k-th
scalar; its float min and max have the integer-key path, which reads a 1-D view), a scan and a
segmented reduction run one kernel over the (n, k) rows of components that takes each component
through the scalar kernel's steps in its order (_rows: one pass, not k strided ones, which wrote
each cache line of the result k times) -- but a scan to a dtype= narrower than its accumulator
(f16, which computes in f32; int8 of floats) runs the scalar scan on each component's strided
view, since the rows' kernel carries a running value from tile to tile in the result's dtype.  A
``@tack.func`` operator of reduce and segmented_reduce gets the vectors themselves (two vec3
values, say) and must give the element's type.  ``dtype=`` names the components' type
(``np.float64``) or a vector type of the element's shape (``tack.vec3d``).

The file is apart from tack._algorithms, whose reduce(), scan() and segmented_reduce() send vector
arrays here, to keep that file under its size.
"""

import numpy as np

from ._algorithms_common import _blocks, _host, _launch
from ._intrinsics import independent
from ._kernels import kernel

_ROWS = []


def _rows():
    """The scan and segments kernels over the (n, k) rows of components, made on first use (their
    operator, tack._algorithms' _combine, is named from this scope: that module imports this one).
    Each component c runs the scalar kernel's steps in its order -- a block's fold from first[0],
    the blocks' offsets in order, the block again from its offset -- so its result is that of the
    scalar kernel on the column alone, in one pass over the rows instead of k strided ones."""
    if _ROWS:
        return _ROWS
    from ._algorithms import _combine

    @kernel(checks=False)  # i < min(b * bs + bs, n), c < k: every index is in its axis
    def _scan_rows(x, out, partial, first, bs, exclusive, which):
        # x, out: (n, k); partial: (nb, k), each block's running values, then its offsets.  A block
        # goes in tiles of 256 rows, each component's run through the tile in a register (one
        # carried through memory from row to row would wait on each store)
        n = x.shape[0]
        k = x.shape[1]
        nb = partial.shape[0]
        for b in independent(range(nb)):
            hi = min(b * bs + bs, n)
            for c in range(k):
                partial[b, c] = first[0]
            for t in range(b * bs, hi, 256):
                for c in range(k):
                    acc = partial[b, c]
                    for i in range(t, min(t + 256, hi)):
                        acc = _combine(which, acc, x[i, c])
                    partial[b, c] = acc
        for t in range(1):
            for c in range(k):
                acc = first[0]
                for b in range(nb):
                    v = partial[b, c]
                    partial[b, c] = acc
                    acc = _combine(which, acc, v)
        for b in independent(range(nb)):
            hi = min(b * bs + bs, n)
            for t in range(b * bs, hi, 256):
                for c in range(k):
                    acc = partial[b, c]
                    for i in range(t, min(t + 256, hi)):
                        if exclusive != 0:
                            out[i, c] = acc
                            acc = _combine(which, acc, x[i, c])
                        else:
                            acc = _combine(which, acc, x[i, c])
                            out[i, c] = acc
                    partial[b, c] = acc

    @kernel
    def _segments_rows(x, off, out, init, which, has_init):
        # x: (n, k), out: (nseg, k), init: (k,); each segment's components in turn, as _segments
        k = x.shape[1]
        for s in range(out.shape[0]):
            for c in range(k):
                lo = off[s]
                hi = off[s + 1]
                acc = init[c]
                if has_init == 0 and hi > lo:
                    acc = x[lo, c]
                    lo += 1
                for i in range(lo, hi):
                    acc = _combine(which, acc, x[i, c])
                out[s, c] = acc

    _ROWS.extend([_scan_rows, _segments_rows])
    return _ROWS


def _components(dtype, a, what):
    """dtype= as the components' dtype: a scalar dtype as it is, a vector or matrix dtype of the
    elements' shape as its scalar (tack.vec3d for np.float64)."""
    if dtype is None:
        return None
    from ._array import dtype as _dtype

    try:
        t = _dtype(dtype)
    except (TypeError, ValueError):
        return dtype  # np.dtype, in _plan, says what it makes of it
    if t.shape == ():
        return dtype
    if tuple(t.shape) != tuple(a.dtype.shape):
        raise TypeError(f"tack.{what}: dtype={t.name} has shape {tuple(t.shape)} and the elements ({a.dtype.name}) "
                        f"{tuple(a.dtype.shape)}: give the components' dtype (np.float64) or a type of their shape")
    return np.dtype(t.scalar.numpy)


def _result_type(a, outdt):
    """The vector or matrix type of a.dtype's kind (vec3, mat22, quat, ...) whose components are
    outdt, or None where Tack has none (int64, float16, ...)."""
    from ._array import dtype as _dtype

    if outdt == np.dtype(a.dtype.scalar.numpy):
        return a.dtype
    suffix = {np.dtype(np.float32): "", np.dtype(np.float64): "d", np.dtype(np.int32): "i"}.get(outdt)
    base = a.dtype.name[:-1] if a.dtype.name[-1] in "di" else a.dtype.name
    if suffix is None:
        return None
    try:
        t = _dtype(base + suffix)
    except (TypeError, ValueError):  # no such type (mat33i)
        return None
    return t if tuple(t.shape) == tuple(a.dtype.shape) else None


def _no_complex(outdt, a, what):
    if outdt.kind == "c":  # the rows' kernel combines with _combine, whose min and max cannot type complex
        raise TypeError(f"tack.{what}: dtype={outdt} is not taken for {a.dtype.name} values (a complex sum of "
                        "vectors: scan or reduce a complex array of each component)")


def _out(a, m, outdt, device):
    """The result of m elements: of the vector type of outdt's components, or (m,) + shape of outdt."""
    from ._array import empty as _empty

    vt = _result_type(a, outdt)
    if vt is not None:
        return _empty(m, vt, device=device)
    return _empty((m,) + tuple(a.dtype.shape), outdt, device=device)


def _column(x, dt, c, m, k):
    """Component c of x's m elements of k components each (a vector array, or an (m, k...) array)."""
    return x._field_view(dt, c, (m,), (k,))


def _rows_of(x, dt, m, k):
    """x's m elements of k components each as an (m, k) array of dt."""
    return x._field_view(dt, 0, (m, k), (k, 1))


def _initials(initial, shape, outdt, what="reduce"):
    """initial as one value per component: a scalar for every component, or a value of the
    element's shape."""
    if initial is None:
        return None
    v = np.asarray(initial)
    if v.shape != () and v.shape != shape:
        raise ValueError(f"tack.{what}: initial has shape {v.shape}; give a scalar or a value of the elements' "
                         f"shape {shape}")
    return np.broadcast_to(v, shape)


def reduce_vectors(a, op, initial, dtype):
    """tack.reduce of the 1-D array `a` of vectors or matrices (see the module's essay)."""
    from . import _algorithms as A
    from ._array import array as _array, empty as _empty

    shape = tuple(a.dtype.shape)
    k = int(np.prod(shape))
    sc = a.dtype.scalar
    n = a.shape[0]
    fn, name = A._op_of(op, "reduce")
    dtype = _components(dtype, a, "reduce")
    if name is None:
        return _reduce_with(a, fn, initial, dtype, shape)
    col = a._field_view(sc, 0, (n,), (k,))
    fn, name, outdt, ident, fl = A._plan("reduce", col, op, dtype)
    inits = _initials(initial, shape, outdt)
    if n == 0:
        if inits is not None:
            return np.array(inits, outdt)
        if name == "sum":
            return np.zeros(shape, outdt)
        raise ValueError(f"tack.reduce: zero-size array to reduction operation {name} which has no identity "
                         "(give initial=)")
    device = a.device
    if name == "sum" and outdt.kind == "f" and outdt == np.dtype(sc.numpy) and outdt.itemsize >= 4:
        # the scalar sum's kernel over the vectors: the same eight partial sums of each component
        nb, bs = _blocks(n, device)
        partial = _empty(nb, a.dtype, device=device)
        first = _array(np.zeros((2,) + shape, outdt), dtype=a.dtype, device=device)
        _launch(A._reduce_sum, n * k, device, a, partial, first, bs)
        got = np.asarray(first[1], outdt).reshape(shape)
        if inits is not None:  # as the scalar reduce: initial + the sum, per component
            got = (inits.astype(outdt) + got).astype(outdt)
        return got
    out = np.empty(k, outdt)
    flat = None if inits is None else inits.reshape(k)
    for c in range(k):
        col = a._field_view(sc, c, (n,), (k,))
        out[c] = A._reduce_column(col, a, c, k, fn, name, outdt, ident, fl, dtype,
                                  None if flat is None else flat[c])
    return out.reshape(shape)


def _reduce_with(a, fn, initial, dtype, shape):
    """A @tack.func operator of two vectors (or matrices), in _algorithms._reduce_kernel's blocks."""
    from . import _algorithms as A
    from ._array import array as _array, empty as _empty

    if dtype is not None:
        raise TypeError(f"tack.reduce: dtype= is not taken with an operator of {a.dtype.name} values (the operator "
                        "gets the elements as they are)")
    n = a.shape[0]
    outdt = np.dtype(a.dtype.scalar.numpy)
    if n == 0:
        if initial is None:
            raise ValueError(f"tack.reduce: zero-size array to reduction operation {fn.__name__} which has no "
                             "identity (give initial=)")
        return np.array(_initials(initial, shape, outdt), outdt)
    device = a.device
    nb, bs = _blocks(n, device)
    partial = _empty(nb, a.dtype, device=device)
    kern = A._reduce_kernel(fn)
    kern(a, partial, bs)
    got = np.asarray(partial[0], outdt).reshape(shape)
    if initial is not None:
        # op(initial, the blocks' result), by the same kernel: one block of two
        pair = _array(np.stack([np.array(_initials(initial, shape, outdt), outdt), got]), dtype=a.dtype,
                      device=device)
        kern(pair, partial[:1], 2)
        got = np.asarray(partial[0], outdt).reshape(shape)
    return got


def scan_vectors(a, op, exclusive, dtype):
    """tack.scan of the 1-D array `a` of vectors or matrices (see the module's essay); op is
    "sum", "min" or "max", checked."""
    from . import _algorithms as A
    from ._array import array as _array, empty as _empty

    shape = tuple(a.dtype.shape)
    k = int(np.prod(shape))
    sc = a.dtype.scalar
    n = a.shape[0]
    _, _, outdt, ident, fl = A._plan("scan", _column(a, sc, 0, n, k), op, _components(dtype, a, "scan"))
    _no_complex(outdt, a, "scan")
    device = a.device
    out = _out(a, n, outdt, device)
    if n == 0:
        return out
    nb, bs = _blocks(n, device)
    mode = 1 if exclusive else 0
    neg = op == "sum" and fl  # from -0.0, as the scalar scan (np.cumsum of -0.0s is -0.0s)
    if neg and outdt.kind == "f" and out.dtype is a.dtype:
        # the scalar scan's kernel over the vectors: each component's running total in its order
        partial = _empty(nb, a.dtype, device=device)
        first = _array(-np.zeros((2,) + shape, outdt), dtype=a.dtype, device=device)
        _launch(A._scan_with(A._op_sum), 4 * n * k, device, a, out, partial, first, bs, mode)
    elif np.promote_types(outdt, np.dtype(sc.numpy)) == outdt and outdt.itemsize >= 4:
        # the rows of components, each in the scalar scan's order: its running value, carried from
        # tile to tile in partial, is of outdt as the scalar scan's accumulator is
        first = _host(-ident if neg else ident, outdt, device)
        partial = np.empty((nb, k), outdt) if device == "cpu" else _empty((nb, k), outdt, device=device)
        _launch(_rows()[0], 4 * n * k, device, _rows_of(a, sc, n, k), _rows_of(out, outdt, n, k), partial, first, bs,
                mode, A._WHICH[op])
    else:  # a dtype= the elements' values do not fit in (int8 of floats), or that computes in f32 (f16):
        # the scalar scan's accumulator is of a wider type than outdt, which partial could not carry
        for c in range(k):
            partial, first = A._scratch(nb, outdt, -ident if neg else ident, device)
            A._run_scan(_column(a, sc, c, n, k), _column(out, outdt, c, n, k), partial, first, bs, mode, op, outdt,
                        n, device)
    if neg and exclusive:
        out[:1].fill(0)  # an exclusive sum starts from 0.0, as the scalar one
    return out


def segmented_vectors(values, off, fn, name, initial, dtype):
    """tack.segmented_reduce of the 1-D array `values` of vectors or matrices (see the module's
    essay): off, the checked int64 offsets; fn and name, the operator and its name (None for a
    @tack.func); segmented_reduce has refused an empty segment without initial= where the
    operator has no identity."""
    from . import _algorithms as A
    from ._array import array as _array

    shape = tuple(values.dtype.shape)
    k = int(np.prod(shape))
    sc = values.dtype.scalar
    n = values.shape[0]
    nseg = off.shape[0] - 1
    device = values.device
    has_init = 1 if initial is not None or name == "sum" else 0
    if name is None:  # a @tack.func of two vectors: the kernel's accumulator is of their type
        if dtype is not None:
            raise TypeError(f"tack.segmented_reduce: dtype= is not taken with an operator of {values.dtype.name} "
                            "values (the operator gets the elements as they are)")
        outdt = np.dtype(sc.numpy)
        out = _out(values, nseg, outdt, device)
        inits = _initials(initial if initial is not None else 0, shape, outdt, "segmented_reduce")
        if nseg:
            init = _array(np.array([inits], outdt), dtype=values.dtype, device=device)
            A._segment_kernel(fn)(values, _host(off, np.int64, device), out, init, has_init)
        return out
    _, _, outdt, _, _ = A._plan("segmented_reduce", _column(values, sc, 0, n, k), name,
                                _components(dtype, values, "segmented_reduce"))
    _no_complex(outdt, values, "segmented_reduce")
    out = _out(values, nseg, outdt, device)
    if nseg == 0:
        return out
    offs = _host(off, np.int64, device)
    inits = _initials(initial if initial is not None else 0, shape, outdt, "segmented_reduce")
    if name == "sum" and outdt.kind == "f" and out.dtype is values.dtype:
        # the scalar segments' fold over the vectors: acc = initial, then acc + x[i] in order
        init = _array(np.array([inits], outdt), dtype=values.dtype, device=device)
        A._segment_kernel(A._op_sum)(values, offs, out, init, 1)
        return out
    _rows()[1](_rows_of(values, sc, n, k), offs, _rows_of(out, outdt, nseg, k),
               _host(np.ascontiguousarray(inits).reshape(k), outdt, device), A._WHICH[name], has_init)
    return out
