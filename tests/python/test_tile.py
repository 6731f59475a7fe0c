"""Tiled matrix-product rows (src/compiler/cpu/tile.c).

A parallel loop whose rows are `for k: for j: C[i, j] += a * B[k, j]` (or the
ijk form) runs in panels of rows: tiles of j and k, blocks of four rows by
four k's.  Each cell sees its updates in ascending k through the same
operations, so the results are the bits of the loop as written; where the
panel's checks could fail, where C shares memory with what is read, or where
a loop is empty, the rows run as written.  The tile setting turns the pass off
(tack.config.tile, TACK_TILE=0); these tests compare with it, in this process
(and with the nests setting off, which turns off nests.c
and this pass with it).
"""

import numpy as np
import pytest

import tack

OPTIMIZED = tack.config.optimize and tack.config.nests and tack.config.tile
needs_pass = pytest.mark.skipif(not OPTIMIZED, reason="the pass is off (TACK_OPT=0, TACK_NESTS=0 or TACK_TILE=0)")
MARK = "rows tiled (tile.c)"


@pytest.fixture(autouse=True)
def _tile_not_gemm():
    """gemm.c takes the float products first (test_gemm.py): off here, so these are tile.c's."""
    with tack.config.override(gemm=False):
        yield


def matmul_ijk(A, B, C):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def matmul_acc(A, B, C):  # the benchmark's form: ikj with a local
    for i in range(A.shape[0]):
        for k in range(A.shape[1]):
            a = A[i, k]
            for j in range(B.shape[1]):
                C[i, j] += a * B[k, j]


def matmul_plain(A, B, C):  # a plain store that reads its own element
    for i in range(A.shape[0]):
        for k in range(A.shape[1]):
            for j in range(B.shape[1]):
                C[i, j] = C[i, j] - A[i, k] * B[k, j]


def matmul_scaled(A, B, C, alpha):  # a scalar, two locals, a subtraction
    for i in range(A.shape[0]):
        for k in range(A.shape[1]):
            a = alpha * A[i, k]
            b = a + 1.0
            for j in range(B.shape[1]):
                t = b * B[k, j]
                C[i, j] -= t * a


def shifted_rows(A, B, C):  # rows from 1, stored one row down: an offset and `i + 1`
    for i in range(1, A.shape[0]):
        for k in range(A.shape[1]):
            for j in range(B.shape[1]):
                C[i - 1, j] += A[i, k] * B[k, j]


def matmul_local(A, B, C):  # a local accumulator across k: not a perfect nest
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            C[i, j] = s


def imperfect(A, B, C):  # a statement between the loops
    for i in range(A.shape[0]):
        for k in range(A.shape[1]):
            C[i, k] = 0.5
            for j in range(B.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def two_stores(A, B, C, D):
    for i in range(A.shape[0]):
        for k in range(A.shape[1]):
            for j in range(B.shape[1]):
                C[i, j] += A[i, k] * B[k, j]
                D[i, k] = B[k, j]


def neighbour(A, C):  # reads C at another element
    for i in range(C.shape[0]):
        for k in range(A.shape[1]):
            for j in range(C.shape[1] - 1):
                C[i, j] += A[i, k] * C[i, j + 1]


def triangular(A, C):  # a bound that names a loop variable
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            for k in range(j):
                C[i, j] += A[i, k]


def _run(fn, args, settings=None):
    """fn compiled and run on copies of args, under the settings given (tack.config)."""
    args = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    with tack.config.override(**(settings or {})):
        tack.kernel(fn)(*args)
    return args


def _mm_ref(A, B, C, sign=1):
    """C + A @ B with each cell's terms added in ascending k, as the loops do."""
    r = C.copy()
    for k in range(A.shape[1]):
        r = r + A[:, k:k + 1] * B[k:k + 1, :] if sign > 0 else r - A[:, k:k + 1] * B[k:k + 1, :]
    return r


def _all_same(fn, args):
    """The pass on, off (tile=False) and nests.c off: the same bits."""
    on = _run(fn, args)
    off = _run(fn, args, {"tile": False})
    plain = _run(fn, args, {"nests": False})
    for a, b, c in zip(on, off, plain):
        if isinstance(a, np.ndarray):
            assert np.array_equal(a.view(np.uint8), b.view(np.uint8)) and np.array_equal(a.view(np.uint8), c.view(np.uint8))
    return on


@needs_pass
@pytest.mark.parametrize("fn", [matmul_ijk, matmul_acc, matmul_plain])
def test_tiled_in_source(fn):
    A = np.zeros((8, 8))
    assert MARK in tack.kernel(fn).generated_source(A, A.copy(), A.copy())
    assert MARK in tack.kernel(matmul_scaled).generated_source(A, A.copy(), A.copy(), 2.0)


def test_off_switch():
    A = np.zeros((8, 8))
    with tack.config.override(tile=False):
        assert MARK not in tack.kernel(matmul_acc).generated_source(A, A.copy(), A.copy())


# sizes not multiples of the blocks: rows (4, panel 32), k (4, tile 64), j (tile 512 f64, 1024 f32)
SIZES = [(1, 1, 1), (3, 7, 5), (4, 4, 4), (5, 3, 9), (33, 129, 70), (37, 5, 600), (66, 131, 1030), (64, 64, 64)]


@pytest.mark.parametrize("fn", [matmul_ijk, matmul_acc])
@pytest.mark.parametrize("n,k,m", SIZES)
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_same_bits(fn, n, k, m, dt):
    rng = np.random.default_rng(n * 1000 + k * 10 + m)
    A, B, C = (rng.random(s).astype(dt) for s in ((n, k), (k, m), (n, m)))
    on = _all_same(fn, [A, B, C])
    assert np.array_equal(on[2], _mm_ref(A, B, C))


@pytest.mark.parametrize("n,k,m", [(3, 7, 5), (37, 67, 41)])
def test_plain_scaled_and_shifted_same_bits(n, k, m):
    rng = np.random.default_rng(1)
    A, B, C = rng.random((n, k)), rng.random((k, m)), rng.random((n, m))
    on = _all_same(matmul_plain, [A, B, C])
    assert np.array_equal(on[2], _mm_ref(A, B, C, -1))
    on = _all_same(matmul_scaled, [A, B, C, 0.7])
    ref = C.copy()
    for q in range(k):
        a = 0.7 * A[:, q:q + 1]
        ref = ref - ((a + 1.0) * B[q:q + 1, :]) * a
    assert np.array_equal(on[2], ref)
    on = _all_same(shifted_rows, [A, B, C])
    ref = C.copy()
    ref[:-1] = _mm_ref(A[1:], B, C[:-1])
    assert np.array_equal(on[2], ref)


def test_integers_same_bits():
    rng = np.random.default_rng(2)
    for dt in (np.int64, np.int32, np.int8, np.uint16):  # wrapping sums: the same modulo 2^bits
        A, B = rng.integers(-9, 9, (35, 70)).astype(dt), rng.integers(-9, 9, (70, 13)).astype(dt)
        on = _all_same(matmul_acc, [A, B, np.zeros((35, 13), dt)])
        assert np.array_equal(on[2], A @ B)


def test_float16_left_alone():
    """A float16 C rounds every partial sum when it is stored: not tiled, same bits."""
    rng = np.random.default_rng(3)
    A, B, C = (rng.random(s).astype(np.float16) for s in ((9, 10), (10, 11), (9, 11)))
    if OPTIMIZED:
        assert MARK not in tack.kernel(matmul_acc).generated_source(A, B, C)
    _all_same(matmul_acc, [A, B, C])


@pytest.mark.parametrize("shape", [((4, 0), (0, 5), (4, 5)), ((4, 3), (3, 0), (4, 0)), ((0, 3), (3, 5), (0, 5))])
@pytest.mark.parametrize("fn", [matmul_ijk, matmul_acc])
def test_empty_loops(fn, shape):
    rng = np.random.default_rng(4)
    A, B, C = (rng.random(s) for s in shape)
    on = _all_same(fn, [A, B, C])
    assert np.array_equal(on[2], C)


@pytest.mark.parametrize("fn", [matmul_ijk, matmul_acc])
def test_c_is_a_falls_back(fn):
    """A is C: the order of the loops as written matters, and the run-time
    test of disjoint memory runs them as written."""
    rng = np.random.default_rng(5)
    n = 37
    B = rng.random((n, n))
    C0 = rng.random((n, n))
    outs = []
    for env in (None, {"tile": False}, {"nests": False}):
        c = C0.copy()
        with tack.config.override(**(env or {})):
            tack.kernel(fn)(c, B, c)
        outs.append(c)
    ref = C0.copy()
    for i in range(n):  # the ikj order of matmul_acc; ijk reads C[i, k] as updated the same way
        for k in range(n):
            a = ref[i, k]
            ref[i, :] += a * B[k, :] if fn is matmul_acc else 0
    assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], outs[2])
    if fn is matmul_acc:
        assert np.array_equal(outs[0], ref)


def test_c_is_b_falls_back():
    """B is C (one row: other rows would race on it, pass or not): C[0, j] is
    read as B[0, j] by its own update; the loop runs as written.  The call
    refuses B is C (rows would race through it: test_aliasing.py) unless the
    race check is off, which is how the tiles' fallback is still reached."""
    rng = np.random.default_rng(6)
    A = rng.random((1, 1))
    C0 = rng.random((1, 600))
    c = C0.copy()
    with pytest.raises(ValueError, match="'B' and 'C' of kernel 'matmul_acc' are the same array"):
        tack.kernel(matmul_acc)(A, c, c)
    assert np.array_equal(c, C0)
    res = []
    for env in ({"race_analysis": "off"}, {"tile": False, "race_analysis": "off"},
                {"nests": False, "race_analysis": "off"}):
        c = C0.copy()
        with tack.config.override(**env):
            tack.kernel(matmul_acc)(A, c, c)
        res.append(c)
    assert np.array_equal(res[0], res[1]) and np.array_equal(res[0], res[2])
    assert np.array_equal(res[0], C0 + A[0, 0] * C0)


def _message(fn, args, settings=None):
    with tack.config.override(**(settings or {})), pytest.raises(IndexError) as e:
        fn(*args)
    return str(e.value)


@pytest.mark.parametrize("fn", [matmul_ijk, matmul_acc])
@pytest.mark.parametrize("n,k,m", [(4, 6, 3), (70, 66, 600)])
def test_out_of_bounds_same_error(fn, n, k, m):
    """B has one row too few: B[k - 1, j] is past its end, in every panel."""
    rng = np.random.default_rng(7)
    A, B = rng.random((n, k)), rng.random((k - 1, m))
    msgs = [_message(tack.kernel(fn), [A, B, np.zeros((n, m))], env) for env in (None, {"tile": False})]
    assert msgs[0] == msgs[1] and f"index {k - 1}" in msgs[0]


@pytest.mark.parametrize("fn", [matmul_ijk, matmul_acc])
def test_out_of_bounds_one_row_same_writes(fn):
    """One row (one panel, no other thread): the cells written before the
    failing access are those written without the pass."""
    rng = np.random.default_rng(8)
    A, B = rng.random((1, 9)), rng.random((8, 70))
    outs = []
    for env in (None, {"tile": False}):
        c = np.zeros((1, 70))
        outs.append((_message(tack.kernel(fn), [A, B, c], env), c))
    assert outs[0][0] == outs[1][0]
    assert np.array_equal(outs[0][1], outs[1][1])


def test_c_too_narrow_same_error():
    """C has fewer columns than B: the store's column check fails."""
    rng = np.random.default_rng(9)
    A, B = rng.random((40, 8)), rng.random((8, 20))
    msgs = [_message(tack.kernel(matmul_acc), [A, B, np.zeros((40, 19))], env) for env in (None, {"tile": False})]
    assert msgs[0] == msgs[1]


@needs_pass
@pytest.mark.parametrize("fn,nargs", [(matmul_local, 3), (imperfect, 3), (two_stores, 4), (neighbour, 2), (triangular, 2)])
def test_not_tiled(fn, nargs):
    rng = np.random.default_rng(10)
    arrs = [rng.random((9, 9)) for _ in range(nargs)]
    assert MARK not in tack.kernel(fn).generated_source(*arrs)
    _all_same(fn, arrs)


@needs_pass
def test_tiled_k_loops_poll_for_their_work():
    """The jammed k loop charges each iteration's 16 * (tile width) updates to
    its polls (IR_FOR aux), as the row loops it replaces polled per update."""
    import re
    A = np.zeros((8, 8))
    src = tack.kernel(matmul_acc).generated_source(A, A.copy(), A.copy())
    tiled = src[src.index(MARK):]
    assert re.search(r"TK_POLL\(\(e\d+ - s\d+\) \* w\d+\)", tiled)
    assert re.search(r"v\d+_tk_work = \(\(int64_t\)\(\(uint64_t\)\(v\d+_tk_work\) \* \(uint64_t\)\(\(\(int64_t\)16LL\)\)\)\)", tiled)
