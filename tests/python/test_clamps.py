"""Clamped indices (src/compiler/cpu/periodic.c) against NumPy and debug mode.

`min(i + c, e)` and `max(i + c, e)` in a parallel loop, alone or nested, in
either operand order, run as `i + c` in the innermost variable's interior
and as written at its ends; their index checks and wraps go under a flag
that asks their least and greatest values to lie within the extents they
index.  Every result here must equal NumPy's (np.clip of shifted indices,
np.pad's edge mode), compiled, without checks and in debug mode; sizes
where everything is border (1-3), odd and even; a bound past the extent
raises as before, naming the same index; an i32 index and a bound that is
not loop-invariant keep the loop as written.
"""
import re

import numpy as np
import pytest

import tack


def forms_fn(x, lim, out, e):
    n = x.shape[0]
    for i in range(n):
        out[0, i] = x[min(i + 1, n - 1)]
        out[1, i] = x[max(i - 1, 0)]
        out[2, i] = x[min(n - 1, i + 2)]              # the bound first
        out[3, i] = x[max(0, i - 3)]
        out[4, i] = x[max(min(i + 5, n - 1), 0)]      # nested
        out[5, i] = x[min(max(0, i - 7), n - 1)]
        out[6, i] = x[min(i - 2, n - 1)]              # negative at the start: Python's wrap
        out[7, i] = x[min(i + 1, e)]                  # a bound from the caller
        out[8, i] = float(max(i - 4, 2))              # not an index
        out[9, i] = x[min(max(i + 3, 1), n - 2)] if n >= 2 else x[0]
        out[10, i] = x[min(tack.i32(i) + tack.i32(1), tack.i32(n - 1))]  # i32: as written
        out[11, i] = x[min(i + 1, lim[i])]            # a bound per iteration: as written
    for i in range(1, n):                             # a 1-D loop from 1: checks go, no split
        out[12, i] = x[max(i - 2, 0)] + x[min(i + 1, n - 1)]


def forms_ref(x, lim, e):
    n = x.shape[0]
    i = np.arange(n)
    rows = [np.minimum(i + 1, n - 1), np.maximum(i - 1, 0), np.minimum(n - 1, i + 2), np.maximum(0, i - 3),
            np.maximum(np.minimum(i + 5, n - 1), 0), np.minimum(np.maximum(0, i - 7), n - 1),
            np.minimum(i - 2, n - 1), np.minimum(i + 1, e)]
    out = [x[r] for r in rows] + [np.maximum(i - 4, 2).astype(float)]
    out.append(x[np.minimum(np.maximum(i + 3, 1), n - 2)] if n >= 2 else np.full(n, x[0]))
    out += [x[np.minimum(i + 1, n - 1)], x[np.minimum(i + 1, lim)]]
    out.append(np.where(i >= 1, x[np.maximum(i - 2, 0)] + x[np.minimum(i + 1, n - 1)], 0.0))
    return np.stack(out)


def stencil_fn(src, dst):
    rows, cols = src.shape
    for r, c in tack.ndrange(rows, cols):
        rn = max(r - 1, 0)
        rs = min(r + 1, rows - 1)
        cw = max(c - 1, 0)
        ce = min(c + 1, cols - 1)
        cee = min(cols - 1, c + 2)
        dst[r, c] = src[rn, c] + 2.0 * src[rs, c] + 3.0 * src[r, cw] + 4.0 * src[r, ce] + 5.0 * src[r, cee] - src[r, c]


def stencil_ref(s):
    p = np.pad(s, 2, mode="edge")
    r, c = s.shape
    return (p[1:r + 1, 2:c + 2] + 2.0 * p[3:r + 3, 2:c + 2] + 3.0 * p[2:r + 2, 1:c + 1] + 4.0 * p[2:r + 2, 3:c + 3]
            + 5.0 * p[2:r + 2, 4:c + 4] - s)


def layers_fn(src, dst):
    nz, ny, nx = src.shape
    for z, y, x in tack.ndrange(nz, ny, nx):
        dst[z, y, x] = (src[max(z - 1, 0), y, x] + src[min(z + 1, nz - 1), y, x] + src[z, max(y - 1, 0), x]
                        + src[z, min(y + 1, ny - 1), x] + src[z, y, max(x - 1, 0)] + src[z, y, min(x + 1, nx - 1)])


def layers_ref(s):
    p = np.pad(s, 1, mode="edge")
    z, y, x = s.shape
    return (p[0:z, 1:y + 1, 1:x + 1] + p[2:z + 2, 1:y + 1, 1:x + 1] + p[1:z + 1, 0:y, 1:x + 1]
            + p[1:z + 1, 2:y + 2, 1:x + 1] + p[1:z + 1, 1:y + 1, 0:x] + p[1:z + 1, 1:y + 1, 2:x + 2])


def past_fn(x, out, e, f):
    for i in range(out.shape[0]):
        out[i] = x[min(i + 1, e)] + x[max(i - 2, f)]


forms = (tack.kernel(forms_fn), tack.kernel(jit=False)(forms_fn))
stencil = (tack.kernel(stencil_fn), tack.kernel(checks=False)(stencil_fn), tack.kernel(jit=False)(stencil_fn))
layers = (tack.kernel(layers_fn), tack.kernel(jit=False)(layers_fn))
past = (tack.kernel(past_fn), tack.kernel(jit=False)(past_fn))


def test_forms_equal_numpy():
    """Every form; an i32 index, a per-iteration bound and a loop from 1 beside them."""
    rng = np.random.default_rng(1)
    for n in [2, 3, 4, 5, 8, 9, 40, 41]:  # x[min(i - 2, n - 1)] needs n >= 2
        x = rng.random(n)
        lim = rng.integers(0, n, n)
        for e in {0, n // 2, n - 1}:
            want = forms_ref(x, lim, e)
            for kern in forms:
                out = np.zeros((13, n))
                kern(x, lim, out, e)
                assert np.array_equal(out, want), (kern, n, e)


def _equal_ref(kernels, compiled, ref, shapes, seed):
    """Each of kernels (the first `compiled` of them on every shape, the rest, debug mode, on small
    ones) equals ref on random arrays of each shape."""
    rng = np.random.default_rng(seed)
    for shape in shapes:
        s = rng.random(shape)
        want = ref(s)
        for kern in kernels[:compiled] + (kernels[compiled:] if s.size <= 64 else ()):
            out = np.empty_like(s)
            kern(s, out)
            assert np.array_equal(out, want), (kern, shape)


def test_rows_and_columns_equal_edge_padding():
    _equal_ref(stencil, 2, stencil_ref, [(1, 1), (1, 5), (2, 3), (3, 2), (4, 4), (5, 7), (33, 64), (17, 65)], 2)


def test_layers_equal_edge_padding():
    _equal_ref(layers, 1, layers_ref, [(1, 1, 1), (2, 3, 4), (3, 1, 5), (4, 6, 37)], 3)


def test_bound_past_the_extent_raises_as_before():
    x = np.arange(10.0)
    out = np.empty(10)
    for kern in past:
        kern(x, out, 9, 0)
        assert np.array_equal(out, x[np.minimum(np.arange(10) + 1, 9)] + x[np.maximum(np.arange(10) - 2, 0)])
        kern(x, out, 9, -10)  # max(i - 2, -10) is -2, -1 at the start: Python's wrap
        assert np.array_equal(out, x[np.minimum(np.arange(10) + 1, 9)] + x[np.arange(10) - 2])
        short = np.empty(8)
        kern(x, short, 12, 0)  # min(i + 1, 12) for i < 8 stays below 10: no error
        with pytest.raises(IndexError, match="index 10 is out of bounds for axis 0 with size 10"):
            kern(x, out, 10, 0)  # i = 9 reads x[min(10, 10)]
        with pytest.raises(IndexError, match="index 10 is out of bounds for axis 0 with size 10"):
            kern(x, out, 9, 10)  # i = 0 reads x[max(-2, 10)]
        with pytest.raises(IndexError, match="index -11 is out of bounds for axis 0 with size 10"):
            kern(x, out, -11, 0)  # i = 0 reads x[min(1, -11)]


def _interior(src):
    """The interior loop of the split (from `pa_` to `pb_`), up to the border's loop."""
    start = re.search(r"for \(int64_t \w+ = pa_;", src).start()
    start = src.rindex("\n", 0, src.rindex("\n", 0, start))
    return src[start:src.index("for (int pp_ = 0;", start)]


@pytest.mark.optimized_source
def test_interior_is_contiguous_and_unchecked():
    s = np.empty((8, 8))
    body = _interior(stencil[0].generated_source(s, s))
    assert "abi->fail" not in body and "tk_wrap" not in body and "#pragma omp simd" in body
    # the column clamps are the counter plus a constant, no select
    cols = re.findall(r"v\d+_c(?:ee|e|w) = \([^\n]*", body)
    assert len(cols) == 3 and all(re.fullmatch(r"v\d+_c\w* = \(\(int64_t\)\(v\d+_c \+ \(-?[12]LL\)\)\);", c) for c in cols), cols
