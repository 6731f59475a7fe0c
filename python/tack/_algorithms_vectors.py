"""tack.reduce of an array of vectors or matrices (vec3, vec2d, vec4i, mat33, ...): component by
component, as NumPy's ``a.sum(axis=0)``, ``a.min(axis=0)`` and ``a.max(axis=0)`` of the (n, k)
array of the components, giving a NumPy array of the element's shape -- the form in which an
element of such an array reaches the host (``v[0]``), so a reduction of vec3 values reads as one of
them.

Each component is reduced as the 1-D array of that component alone would be, in the same blocks
and the same order, so its result is that reduction's bit for bit: a float sum is one pass of the
scalar sum's kernel over the vectors themselves (its eight partial sums are vectors, and a vector
add is the scalar add of each component); every other reduction -- integer sums, which widen to
int64 as NumPy's do and have no vector type to add in, min and max with their NaN and zero rules,
a ``dtype=`` -- runs the scalar reduction on each component's strided view in turn (k passes over
the data, each reading every k-th scalar).  A ``@tack.func`` operator gets the vectors themselves
(two vec3 values, say) and must give the element's type.

The file is apart from tack._algorithms, whose reduce() sends vector arrays here, to keep that file
under its size.
"""

import numpy as np

from ._algorithms_common import _blocks, _launch


def _initials(initial, shape, outdt):
    """initial as one value per component: a scalar for every component, or a value of the
    element's shape."""
    if initial is None:
        return None
    v = np.asarray(initial)
    if v.shape != () and v.shape != shape:
        raise ValueError(f"tack.reduce: initial has shape {v.shape}; give a scalar or a value of the elements' "
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
