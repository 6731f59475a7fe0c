"""Matrix products found inside a parallel loop's rows (src/compiler/cpu/gemm.c).

The forms users write -- PolyBench's gemm with a prologue that scales the row,
alpha, a local sum, the ijk nest, transposed operands, a subtraction -- run as
packed panels and a register-blocked kernel, which the generated source names.
Each cell's chain of operations is the loop's, so the results are the bits of
the loop as written (gemm=False, compared in this process); with fast_math the
kernel may fuse multiply-adds and the results are close, not equal.  Where the
copy cannot run (C shares memory with an operand, an index could fail, a loop
is empty) the rows run as written; strided views are never taken.  Sizes cover
edges of the 8 x 48 block, more than one k block (256) and more than one panel
of rows (128); the larger sweep runs under make test-all.
"""

import numpy as np
import pytest

import tack
import _suite

ON = tack.config.optimize and tack.config.nests and tack.config.gemm
needs_pass = pytest.mark.skipif(not ON, reason="the pass is off (TACK_OPT=0, TACK_NESTS=0 or TACK_GEMM=0)")
MARK = "matrix product (gemm.c)"


def gemm(alpha, beta, C, A, B):  # PolyBench's: the row scaled, then alpha * A[i, k] in a local
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = beta * C[i, j]
        for k in range(A.shape[1]):
            a = alpha * A[i, k]
            for j in range(C.shape[1]):
                C[i, j] = C[i, j] + a * B[k, j]


def zeroed(C, A, B):  # the row set to a value, the ijk nest with +=, alpha inline
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = 0.0
        for j in range(C.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] += 2.0 * A[i, k] * B[k, j]


def dot_bt(C, A, B):  # a local sum, B transposed (C = A @ B.T)
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[j, k]
            C[i, j] = s


def sub_at(C, A, B):  # A transposed (C -= A.T @ B), the product's operands swapped
    for i in range(C.shape[0]):
        for k in range(A.shape[0]):
            for j in range(C.shape[1]):
                C[i, j] -= B[k, j] * A[k, i]


def other_range(C, A, B):  # the prologue's j range is not the product's: not taken
    for i in range(C.shape[0]):
        for j in range(1, C.shape[1]):
            C[i, j] = 0.5 * C[i, j]
        for k in range(A.shape[1]):
            for j in range(C.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def operands(fn, n, k, m, dt, rng):
    A = rng.random((k, n) if fn is sub_at else (n, k)).astype(dt)
    B = rng.random((m, k) if fn is dot_bt else (k, m)).astype(dt)
    C = rng.random((n, m)).astype(dt)
    return [1.5, 0.75, C, A, B] if fn is gemm else [C, A, B]


def reference(fn, args):
    """NumPy's product of the same operands (each form's meaning)."""
    if fn is gemm:
        alpha, beta, C, A, B = args
        return beta * C + (alpha * A) @ B
    C, A, B = args
    return {zeroed: lambda: (2.0 * A) @ B, dot_bt: lambda: A @ B.T, sub_at: lambda: C - A.T @ B}[fn]()


def run(fn, args, settings=None, **kw):
    args = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    with tack.config.override(**(settings or {})):
        k = tack.kernel(**kw)(fn) if kw else tack.kernel(fn)
        k(*args)
        src = k.generated_source(*args)
    return args, src


def same_as_loop(fn, args):
    on, src = run(fn, args)
    off, _ = run(fn, args, {"gemm": False})
    for a, b in zip(on, off):
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, b)
    return on, src


FORMS = [gemm, zeroed, dot_bt, sub_at]
SIZES = [(1, 1, 1), (5, 3, 9), (130, 300, 50)]  # smaller than a block; edges; two panels and two k blocks
if _suite.TEST_ALL:
    SIZES += [(8, 256, 48), (129, 257, 97), (300, 7, 500)]


@pytest.mark.parametrize("fn", FORMS)
@pytest.mark.parametrize("n,k,m", SIZES)
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_forms_same_bits_as_the_loop(fn, n, k, m, dt):
    if dt is np.float32 and fn not in (gemm, dot_bt) and not _suite.TEST_ALL:
        pytest.skip("the f32 sweep of every form runs under make test-all")
    rng = np.random.default_rng(n * 7 + k * 3 + m)
    args = operands(fn, n, k, m, dt, rng)
    on, src = same_as_loop(fn, args)
    if ON:
        assert MARK in src
    tol = 1e-4 if dt is np.float32 else 1e-12
    assert np.allclose(on[-3], reference(fn, args), rtol=tol, atol=tol * k)


@needs_pass
def test_fast_math_close_and_taken():
    rng = np.random.default_rng(1)
    args = operands(gemm, 70, 90, 60, np.float64, rng)
    out, src = run(gemm, args, fast_math=True)
    assert MARK in src
    assert np.allclose(out[2], reference(gemm, args), rtol=1e-12, atol=1e-12)


@needs_pass
def test_not_taken_same_bits():
    rng = np.random.default_rng(2)
    args = operands(other_range, 9, 10, 11, np.float64, rng)
    on, src = same_as_loop(other_range, args)
    assert MARK not in src
    for dt in (np.float16, np.int32):  # not f32/f64: the loop (or tile.c) as before
        A, B, C = (rng.integers(0, 5, s).astype(dt) for s in ((9, 10), (10, 11), (9, 11)))
        on, src = same_as_loop(dot_bt, [C, A, np.ascontiguousarray(B.T)])
        assert MARK not in src


def test_strided_views_run_as_written():
    rng = np.random.default_rng(3)
    A, B = rng.random((12, 20)), rng.random((20, 30))
    C = np.zeros((12, 30))
    c, a, bt = C[:, ::2], A[:, ::2], B[::2, ::2].T  # views: no copies
    k = tack.kernel(dot_bt)
    k(c, a, bt)
    assert MARK not in k.generated_source(c, a, bt)
    assert np.allclose(C[:, ::2], a @ bt.T) and not C[:, 1::2].any()


def test_c_is_a_falls_back():
    """C is A: the copy's run-time test of disjoint memory runs the rows as written."""
    rng = np.random.default_rng(4)
    C0, B = rng.random((37, 37)), rng.random((37, 37))
    outs = []
    for settings in (None, {"gemm": False}):
        c = C0.copy()
        with tack.config.override(**(settings or {})):
            tack.kernel(sub_at)(c, c, B)
        outs.append(c)
    assert np.array_equal(outs[0], outs[1])


def test_out_of_bounds_same_error():
    """B has a row too few: the same IndexError, after the same writes, as the loop as written."""
    rng = np.random.default_rng(5)
    A, B, C = rng.random((20, 9)), rng.random((8, 7)), rng.random((20, 7))
    res = []
    for settings in (None, {"gemm": False}):
        c = C.copy()
        with tack.config.override(**(settings or {})), pytest.raises(IndexError) as e:
            tack.kernel(gemm)(1.0, 1.0, c, A, B)
        res.append((str(e.value), c))
    assert res[0][0] == res[1][0]
    assert np.array_equal(res[0][1], res[1][1])


def test_off_switch():
    A = np.zeros((8, 8))
    with tack.config.override(gemm=False):
        assert MARK not in tack.kernel(dot_bt).generated_source(A, A.copy(), A.copy())
