"""Periodic indices (src/compiler/cpu/periodic.c) against NumPy's np.roll.

`(i + c) % n` in a parallel loop runs as `i + c` in the loop's interior and
as written at its border, with the index checks of the remainders left out
when the divisor lies within the extents it indexes.  Every result here
must equal NumPy's, compiled and in debug mode, on sizes where everything
is border (1-4), odd and even sizes, negative offsets, offsets beyond the
extent, a divisor that is not the extent and one that is negative.
"""
import re

import numpy as np
import pytest

import tack


def gray_scott_fn(u, v, u2, v2, du, dv, f, k, dt):
    n = u.shape[0]
    m = u.shape[1]
    for i, j in tack.ndrange(n, m):
        uc = u[i, j]
        vc = v[i, j]
        lu = u[(i + 1) % n, j] + u[(i - 1 + n) % n, j] + u[i, (j + 1) % m] + u[i, (j - 1 + m) % m] - 4.0 * uc
        lv = v[(i + 1) % n, j] + v[(i - 1 + n) % n, j] + v[i, (j + 1) % m] + v[i, (j - 1 + m) % m] - 4.0 * vc
        uvv = uc * vc * vc
        u2[i, j] = uc + dt * (du * lu - uvv + f * (1.0 - uc))
        v2[i, j] = vc + dt * (dv * lv + uvv - (f + k) * vc)


def offsets_fn(x, out, p):
    n = x.shape[0]
    for i in range(n):
        out[0, i] = x[(i - 3) % n]             # a negative dividend at the start
        out[1, i] = x[(i + 7) % n]             # an offset beyond small extents
        out[2, i] = x[(i + 2 * n - 5) % n]     # k * n + c
        out[3, i] = x[(i - 1 + n) % n] - x[(i + 1) % n]
        out[4, i] = x[(i + 1) % p]             # a divisor that is not the extent
        out[5, i] = float((i - 2) % 3)         # a constant divisor, not an index


def diff_fn(x, out):
    n = x.shape[0]
    for i in range(n):
        out[i] = x[(i - 1 + n) % n] - x[(i + 1) % n]


def laplace3_fn(a, out):
    n0, n1, n2 = a.shape[0], a.shape[1], a.shape[2]
    for i, j, k in tack.ndrange(n0, n1, n2):
        out[i, j, k] = (a[(i + 1) % n0, j, k] + a[(i - 1) % n0, j, k] + a[i, (j + n1 - 1) % n1, k]
                        + a[i, j, k % n2] + a[i, j, (k - 2) % n2] + a[i, j, (k + 3 * n2 + 1) % n2])


def negative_fn(x, out):
    n = x.shape[0]
    for i in range(n):
        out[i] = x[(i + 1) % -n]               # in (-n, 0]: Python's negative index


def past_fn(x, out, p):
    for i in range(out.shape[0]):
        out[i] = x[(i + 1) % p]


gray_scott = tack.kernel(gray_scott_fn)
gray_scott_nc = tack.kernel(checks=False)(gray_scott_fn)
gray_scott_py = tack.kernel(jit=False)(gray_scott_fn)
offsets = tack.kernel(offsets_fn)
offsets_py = tack.kernel(jit=False)(offsets_fn)
negative = tack.kernel(negative_fn)
diff = tack.kernel(diff_fn)
laplace3 = tack.kernel(laplace3_fn)
past = tack.kernel(past_fn)
past_py = tack.kernel(jit=False)(past_fn)

GS = (0.16, 0.08, 0.035, 0.065, 1.0)


def gray_scott_ref(u, v, du, dv, f, k, dt):
    lu = np.roll(u, -1, 0) + np.roll(u, 1, 0) + np.roll(u, -1, 1) + np.roll(u, 1, 1) - 4.0 * u
    lv = np.roll(v, -1, 0) + np.roll(v, 1, 0) + np.roll(v, -1, 1) + np.roll(v, 1, 1) - 4.0 * v
    uvv = u * v * v
    return u + dt * (du * lu - uvv + f * (1.0 - u)), v + dt * (dv * lv + uvv - (f + k) * v)


def test_gray_scott_equals_np_roll():
    rng = np.random.default_rng(3)
    for n, m in [(1, 1), (1, 4), (2, 3), (3, 2), (4, 4), (5, 7), (33, 64), (64, 65)]:
        u, v = rng.random((n, m)), rng.random((n, m))
        want = gray_scott_ref(u, v, *GS)
        kernels = [gray_scott, gray_scott_nc] + ([gray_scott_py] if n * m <= 64 else [])
        for kern in kernels:
            u2, v2 = np.empty_like(u), np.empty_like(v)
            kern(u, v, u2, v2, *GS)
            assert np.array_equal(u2, want[0]) and np.array_equal(v2, want[1]), (kern, n, m)


def test_offsets_equal_np_roll():
    rng = np.random.default_rng(4)
    for n in [1, 2, 3, 4, 5, 8, 9, 40, 41]:
        x = rng.random(n)
        p = 3 if n >= 3 else n  # (i + 1) % 3 stays within every extent of 3 or more
        idx = np.arange(n)
        want = np.stack([np.roll(x, 3), np.roll(x, -7), np.roll(x, -(2 * n - 5)),
                         np.roll(x, 1) - np.roll(x, -1), x[(idx + 1) % p], ((idx - 2) % 3).astype(float)])
        for kern in (offsets, offsets_py):
            out = np.zeros((6, n))
            kern(x, out, p)
            assert np.array_equal(out, want), (kern, n)


def test_diff_equals_np_roll():
    for n in [1, 2, 3, 4, 7, 8, 100]:
        x = np.random.default_rng(n).random(n)
        out = np.empty(n)
        diff(x, out)
        assert np.array_equal(out, np.roll(x, 1) - np.roll(x, -1)), n


def test_three_axes_equal_np_roll():
    rng = np.random.default_rng(5)
    for shape in [(1, 1, 1), (2, 3, 4), (3, 1, 5), (4, 6, 37)]:
        a = rng.random(shape)
        want = (np.roll(a, -1, 0) + np.roll(a, 1, 0) + np.roll(a, 1, 1) + a + np.roll(a, 2, 2)
                + np.roll(a, -1, 2))
        out = np.empty(shape)
        laplace3(a, out)
        assert np.array_equal(out, want), shape


def test_negative_divisor_wraps_as_python():
    for n in [1, 2, 5, 16]:
        x = np.arange(n, dtype=np.float64)
        out = np.empty(n)
        negative(x, out)
        assert np.array_equal(out, x[(np.arange(n) + 1) % -n]), n


def test_divisor_past_the_extent_raises():
    x = np.arange(10.0)
    out = np.empty(10)
    past(x, out, 10)
    assert np.array_equal(out, np.roll(x, -1))
    short = np.empty(8)  # (i + 1) % 12 for i < 8 stays below 10: the loop as written, no error
    for kern in (past, past_py):
        kern(x, short, 12)
        assert np.array_equal(short, x[1:9])
        with pytest.raises(IndexError, match="index 10 is out of bounds for axis 0 with size 10"):
            kern(x, out, 11)  # i = 9 reads x[10 % 11]


def _interior(src):
    """The interior loops of the periodic version (from `pa_` to `pb_`, with the line before),
    up to the border's loop."""
    start = re.search(r"for \(int64_t \w+ = pa_;", src).start()
    start = src.rindex("\n", 0, src.rindex("\n", 0, start))
    return src[start:src.index("for (int pp_ = 0;", start)]


@pytest.mark.optimized_source
def test_interior_is_free_of_modulo_and_checks():
    x = np.empty(16)
    body = _interior(diff.generated_source(x, x))
    assert "tk_mod" not in body and "modq" not in body and "abi->fail" not in body
    assert "#pragma omp simd" in body
    u = np.empty((8, 8))
    body = _interior(gray_scott.generated_source(u, u, u, u, *GS))
    assert "abi->fail" not in body and "#pragma omp simd" in body
    # the rows' remainders are computed from the row's index alone
    for args in re.findall(r"tk_mod\w*\(([^;]*)", body):
        assert "_j" not in args and "_t6" not in args, args
