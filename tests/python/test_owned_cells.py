"""Compound adds on the iteration's own element (src/compiler/passes/privatize.c).

`C[i, j] += v` in a parallel loop over i is atomic by the language's rule,
but no other iteration names row i, so the compiler writes a plain
read-modify-write there -- on every dialect.  Where another iteration may
name the element (a histogram, a wrapped negative index, a second add at
another row, a @tack.func's add, another array that may be a view) the
atomic stays.  Every case must give NumPy's answer.
"""
import re

import numpy as np
import pytest

import tack

def calls_atomic(src):
    """Whether the kernel's code calls an atomic add or subtract on an array (every dialect
    spells it tk_atomic_add_<type>(&aN[...], v); the prelude's definitions take a pointer)."""
    return re.search(r"tk_atomic_(add|sub)_\w+\(&a\d", src) is not None


@tack.kernel
def matmul_acc(A, B, C):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


@tack.kernel
def grid_acc(A, C):
    for i, j in tack.ndrange(C.shape[0], C.shape[1]):
        for k in range(A.shape[2]):
            C[i, j] -= A[i, j, k]


@tack.kernel
def offset(a, out):
    for i in range(1, a.shape[0]):
        out[i] += a[i]
        out[i] += 1


@tack.kernel
def stepped(a, out):
    for i in range(1, a.shape[0], 2):
        out[i] += a[i]
        out[i] += 1


@tack.kernel
def hist(keys, h):
    for i in range(keys.shape[0]):
        h[keys[i]] += 1


@tack.kernel
def two_rows(C):
    for i in range(C.shape[0] - 1):
        for j in range(C.shape[1]):
            C[i, j] += 1.0
            C[i + 1, j] += 1.0


@tack.kernel
def wraps(a):
    for i in range(-a.shape[0], a.shape[0]):
        a[i] += 1


@tack.kernel
def times_symbol(a, m):
    for i in range(a.shape[0]):
        r = i * m
        a[r] += 1


@tack.func
def bump(C, i, j, v):
    C[i, j] += v


@tack.kernel
def through_func(A, C):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            bump(C, i, j, A[i, j])
            C[i, j] += 1.0


@tack.kernel
def maybe_view(C, D, keys):
    for i in range(C.shape[0]):
        C[i] += 1.0
        D[keys[i]] += 1.0


@pytest.mark.optimized_source
def test_matmul_row_has_no_atomic_and_matches_numpy():
    rng = np.random.default_rng(0)
    A, B = rng.random((37, 23)), rng.random((23, 41))
    C = rng.random((37, 41))
    ref = C + A @ B
    assert not calls_atomic(matmul_acc.generated_source(A, B, C))
    matmul_acc(A, B, C)
    np.testing.assert_allclose(C, ref, rtol=1e-12)


@pytest.mark.optimized_source
@pytest.mark.parametrize("dt", [np.float32, np.int64, np.uint8])
def test_ndrange_subtract_owned(dt):
    A = (np.arange(5 * 6 * 7) % 5).astype(dt).reshape(5, 6, 7)
    C = np.full((5, 6), 100, dt)
    assert not calls_atomic(grid_acc.generated_source(A, C))
    grid_acc(A, C)
    np.testing.assert_array_equal(C, (np.full((5, 6), 100, dt) - A.sum(axis=2, dtype=dt)).astype(dt))


@pytest.mark.optimized_source
def test_offset_range_is_owned():
    a = np.arange(11, dtype=np.int32)
    out = np.zeros(11, np.int32)
    assert not calls_atomic(offset.generated_source(a, out))
    offset(a, out)
    ref = np.zeros(11, np.int32)
    ref[1:] = a[1:] + 1
    np.testing.assert_array_equal(out, ref)


@pytest.mark.optimized_source
def test_stepped_range_is_owned():
    """i = 1 + 2 * k: no wrap once checks.c knows i >= 0, so the element is the iteration's own."""
    a = np.arange(11, dtype=np.int32)
    out = np.zeros(11, np.int32)
    assert not calls_atomic(stepped.generated_source(a, out))
    stepped(a, out)
    ref = np.zeros(11, np.int32)
    ref[1::2] = a[1::2] + 1
    np.testing.assert_array_equal(out, ref)


def test_histogram_keeps_its_atomics():
    keys = np.random.default_rng(1).integers(0, 100_000, 1000).astype(np.int64)
    h = np.zeros(100_000, np.int32)  # past the private copy's cap: the atomics run
    assert calls_atomic(hist.generated_source(keys, h))
    hist(keys, h)
    np.testing.assert_array_equal(h, np.bincount(keys, minlength=100_000))


def test_second_row_keeps_atomics():
    C = np.zeros((300, 50))
    assert calls_atomic(two_rows.generated_source(C))
    two_rows(C)
    ref = np.full((300, 50), 2.0)
    ref[0] = ref[-1] = 1.0
    np.testing.assert_array_equal(C, ref)


def test_wrapped_negative_index_keeps_atomics():
    a = np.zeros(1000, np.int64)
    assert calls_atomic(wraps.generated_source(a))
    wraps(a)
    np.testing.assert_array_equal(a, np.full(1000, 2))


def test_symbolic_factor_keeps_atomics():
    a = np.zeros(1000, np.int64)
    assert calls_atomic(times_symbol.generated_source(a, 0))
    times_symbol(a, 0)  # every iteration adds into a[0]
    assert a[0] == 1000 and not a[1:].any()


def test_func_add_stays_atomic():
    A = np.random.default_rng(2).random((40, 30))
    C = np.zeros((40, 30))
    assert calls_atomic(through_func.generated_source(A, C))
    through_func(A, C)
    np.testing.assert_allclose(C, A + 1.0)


def test_another_array_of_the_dtype_with_atomics_blocks():
    keys = np.arange(500) % 7
    buf = np.zeros(600)
    src = maybe_view.generated_source(buf[:500], buf[100:], keys)
    assert re.search(r"tk_atomic_add_double\(&a0\[", src)
    maybe_view(buf[:500], buf[100:], keys)  # views of one buffer: both adds stay atomic
    ref = np.zeros(600)
    ref[:500] += 1.0
    np.add.at(ref, 100 + keys, 1.0)
    np.testing.assert_array_equal(buf, ref)


@pytest.mark.optimized_source
@pytest.mark.parametrize("target", ["cuda", "opencl"])
def test_gpu_dialects_own_the_row(target):
    """A GPU thread runs whole iterations: the same rule, the same plain add."""
    rng = np.random.default_rng(3)
    A, B, C = rng.random((8, 8)), rng.random((8, 8)), np.zeros((8, 8))
    keys, h = np.zeros(4, np.int64), np.zeros(8, np.int32)
    try:
        src = matmul_acc.generated_source(A, B, C, target=target)
        hsrc = hist.generated_source(keys, h, target=target)
    except Exception as err:  # pragma: no cover - a build without the dialect
        pytest.skip(f"no {target} source: {err}")
    assert not calls_atomic(src) and "a2[" in src
    assert calls_atomic(hsrc)
