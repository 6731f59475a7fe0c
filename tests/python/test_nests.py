"""Loop nests in a parallel loop (src/compiler/cpu/nests.c).

Per-row versioning: the index checks of a serial loop at the top of a
parallel loop's body are tested once per row, from the least and greatest
value of each index (a convolution's `img[i + di, j + dj]` over the taps),
and the row runs without them when they all hold; otherwise the loop runs as
written, so an out-of-bounds index raises the same IndexError after the same
writes.  Interchange: a perfect nest `for j: for k: C[i, j] += A[i, k] * B[k, j]`
runs k outside and j inside, each cell's sum in the same k order: the same
bits.  The nests setting turns the pass off (tack.config.nests, TACK_NESTS=0);
these tests compare with it, in this process.
"""
import numpy as np
import pytest

import tack

OPTIMIZED = tack.config.optimize and tack.config.nests
needs_pass = pytest.mark.skipif(not OPTIMIZED, reason="the pass is off (TACK_OPT=0 or TACK_NESTS=0)")


def conv2d(img, w, out):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            acc = 0.0
            for di in range(w.shape[0]):
                for dj in range(w.shape[1]):
                    acc += img[i + di, j + dj] * w[di, dj]
            out[i, j] = acc


def matmul_ijk(A, B, C):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def matmul_plain(A, B, C):  # C[i, j] = C[i, j] + ...: a plain store, not a compound one
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] = C[i, j] + A[i, k] * B[k, j]


def matmul_local(A, B, C):  # a local accumulator: k's order per cell needs it; not interchanged
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            C[i, j] = s


def imperfect(A, B, C):  # a statement between the loops: not interchanged
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            C[i, j] = 0.5
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def two_stores(A, B, C, D):  # a second store in the body: not interchanged
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]
                D[i, k] = B[k, j]


def neighbour(A, C):  # reads the stored array at another element: not interchanged
    for i in range(C.shape[0]):
        for j in range(C.shape[1] - 1):
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * C[i, j + 1]


def triangular(A, C):  # a bound that names j: not interchanged
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            for k in range(j):
                C[i, j] += A[i, k]


def indirect(img, idx, out):  # a loaded index: no range; the loop keeps its checks
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = img[i, idx[j]]


def _both(fn, *args):
    """fn compiled with the pass and without (nests=False), each run on copies of args."""
    on = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    tack.kernel(fn)(*on)
    off = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    with tack.config.override(nests=False):
        tack.kernel(fn)(*off)
    return on, off


def _conv_args(rng, n, m, taps=5):
    img = rng.random((n, m), dtype=np.float32)
    w = rng.random((taps, taps), dtype=np.float32)
    out = np.zeros((n - taps + 1, m - taps + 1), np.float32)
    return img, w, out


def _conv_ref(img, w, out):
    """The kernel's f32 sums in its own order, a tap at a time over the whole image."""
    r = np.zeros(out.shape, np.float32)
    a, b = out.shape
    for di in range(w.shape[0]):
        for dj in range(w.shape[1]):
            r = r + img[di:di + a, dj:dj + b] * w[di, dj]
    return r


def _mm_ref(A, B, C):
    """C + A @ B with each cell's terms added in ascending k, as the loops do."""
    r = C.copy()
    for k in range(A.shape[1]):
        r = r + A[:, k:k + 1] * B[k:k + 1, :]
    return r


@needs_pass
def test_conv2d_checks_tested_once_per_row():
    img, w, out = _conv_args(np.random.default_rng(0), 20, 24)
    src = tack.kernel(conv2d).generated_source(img, w, out)
    assert "index checks tested once (nests.c)" in src
    # the checked loop is still there for rows where a check could fail
    assert src.count("abi->fail(ctx") >= 2


@pytest.mark.parametrize("shape", [(5, 5), (6, 9), (37, 21), (130, 67)])
def test_conv2d_same_bits(shape):
    img, w, out = _conv_args(np.random.default_rng(1), *shape)
    on, off = _both(conv2d, img, w, out)
    assert np.array_equal(on[2], off[2])
    assert np.array_equal(on[2], _conv_ref(img, w, out))


def _message(fn, args):
    with pytest.raises(IndexError) as e:
        fn(*args)
    return str(e.value)


@pytest.mark.parametrize("extra", [1, 3])
def test_conv2d_out_of_bounds_same_error(extra):
    """out is `extra` columns too wide: the last columns read past the image.  The
    message and the writes made before the failure are those without the pass."""
    rng = np.random.default_rng(2)
    img, w, _ = _conv_args(rng, 12, 12)
    out = np.zeros((8, 8 + extra), np.float32)
    a_on = [img, w, out.copy()]
    msg_on = _message(tack.kernel(conv2d), a_on)
    a_off = [img, w, out.copy()]
    with tack.config.override(nests=False):
        msg_off = _message(tack.kernel(conv2d), a_off)
    assert msg_on == msg_off
    assert "index 12" in msg_on and "size 12" in msg_on


def test_one_row_out_of_bounds_same_writes():
    """One row (no other thread to stop it early): the pixels written before the
    failing one are written, as without the pass."""
    rng = np.random.default_rng(11)
    img, w, _ = _conv_args(rng, 12, 12)
    out = np.zeros((1, 10), np.float32)  # columns 8 and 9 read past the image
    a_on = [img, w, out.copy()]
    msg_on = _message(tack.kernel(conv2d), a_on)
    a_off = [img, w, out.copy()]
    with tack.config.override(nests=False):
        msg_off = _message(tack.kernel(conv2d), a_off)
    assert msg_on == msg_off
    assert np.array_equal(a_on[2], a_off[2])
    assert np.array_equal(a_on[2][:, :8], _conv_ref(img, w, np.zeros((1, 8), np.float32)))
    assert not a_on[2][:, 8:].any()


def test_conv2d_taps_too_many_rows():
    """The taps reach below the image (axis 0): the error is the unversioned one."""
    rng = np.random.default_rng(3)
    img = rng.random((10, 10), dtype=np.float32)
    w = rng.random((3, 3), dtype=np.float32)
    out = np.zeros((9, 8), np.float32)  # rows 8 + 2 = 10 is past the end
    msg_on = _message(tack.kernel(conv2d), [img, w, out.copy()])
    with tack.config.override(nests=False):
        msg_off = _message(tack.kernel(conv2d), [img, w, out.copy()])
    assert msg_on == msg_off and "index 10" in msg_on


@needs_pass
def test_matmul_interchanged_in_source():
    A = np.zeros((8, 8))
    with tack.config.override(tile=False, gemm=False):  # gemm.c and tile.c take these nests first (test_gemm.py, test_tile.py)
        src = tack.kernel(matmul_ijk).generated_source(A, A.copy(), A.copy())
        assert "loops interchanged (nests.c)" in src
        src = tack.kernel(matmul_plain).generated_source(A, A.copy(), A.copy())
        assert "loops interchanged (nests.c)" in src


@pytest.mark.parametrize("fn", [matmul_ijk, matmul_plain])
@pytest.mark.parametrize("n,k,m", [(1, 1, 1), (3, 7, 5), (64, 64, 64), (33, 129, 70)])
def test_matmul_same_bits(fn, n, k, m):
    rng = np.random.default_rng(4)
    A, B, C = rng.random((n, k)), rng.random((k, m)), rng.random((n, m))
    on, off = _both(fn, A, B, C)
    assert np.array_equal(on[2], off[2])
    assert np.array_equal(on[2], _mm_ref(A, B, C))


def test_matmul_f32_and_int_same_bits():
    rng = np.random.default_rng(5)
    A, B = rng.random((17, 31), dtype=np.float32), rng.random((31, 23), dtype=np.float32)
    on, off = _both(matmul_ijk, A, B, np.zeros((17, 23), np.float32))
    assert np.array_equal(on[2], off[2])
    assert np.array_equal(on[2], _mm_ref(A, B, np.zeros((17, 23), np.float32)))
    Ai, Bi = rng.integers(-9, 9, (5, 6)), rng.integers(-9, 9, (6, 7))
    on, off = _both(matmul_ijk, Ai, Bi, np.zeros((5, 7), np.int64))
    assert np.array_equal(on[2], Ai @ Bi) and np.array_equal(off[2], Ai @ Bi)


def test_matmul_empty_k():
    A, B, C = np.zeros((4, 0)), np.zeros((0, 5)), np.full((4, 5), 2.0)
    tack.kernel(matmul_ijk)(A, B, C)
    assert np.array_equal(C, np.full((4, 5), 2.0))


def test_matmul_aliased_arrays_keep_the_order():
    """A is C: in the interchanged order C[i, k] would be read before its own
    updates were done; the run-time test of disjoint memory picks the original
    order, so results are the unoptimized ones (and those of Python's loops)."""
    rng = np.random.default_rng(6)
    B = rng.random((6, 6))
    C0 = rng.random((6, 6))
    on = C0.copy()
    tack.kernel(matmul_ijk)(on, B, on)
    off = C0.copy()
    with tack.config.override(nests=False):
        tack.kernel(matmul_ijk)(off, B, off)
    ref, swapped = C0.copy(), C0.copy()
    for i in range(6):
        for j in range(6):
            for k in range(6):
                ref[i, j] += ref[i, k] * B[k, j]
        for k in range(6):
            for j in range(6):
                swapped[i, j] += swapped[i, k] * B[k, j]
    assert not np.array_equal(ref, swapped)  # the order matters here
    assert np.array_equal(on, off)
    assert np.array_equal(on, ref)


def test_matmul_out_of_bounds_same_error():
    rng = np.random.default_rng(7)
    A, B = rng.random((4, 6)), rng.random((5, 3))  # k runs to 5: B[5, j] is past the end
    msgs = []
    for env in (None, "0"):
        with tack.config.override(nests=env != "0"):
            msgs.append(_message(tack.kernel(matmul_ijk), [A, B, np.zeros((4, 3))]))
    assert msgs[0] == msgs[1] and "index 5" in msgs[0]


@needs_pass
@pytest.mark.parametrize("fn,args", [
    (matmul_local, 3), (imperfect, 3), (two_stores, 4), (neighbour, 2), (triangular, 2)])
def test_not_interchanged(fn, args):
    rng = np.random.default_rng(8)
    arrs = [rng.random((9, 9)) for _ in range(args)]
    src = tack.kernel(fn).generated_source(*arrs)
    assert "loops interchanged" not in src
    on, off = _both(fn, *arrs)
    for a, b in zip(on, off):
        assert np.array_equal(a, b)


def test_loaded_index_keeps_its_checks():
    """idx[j] has no range: the copy without the other checks keeps that one."""
    img = np.zeros((4, 4))
    msgs = []
    for env in (None, "0"):
        with tack.config.override(nests=env != "0"):
            msgs.append(_message(tack.kernel(indirect), [img, np.array([0, 9, 1, 2]), np.zeros((4, 4))]))
    assert msgs[0] == msgs[1] and "index 9" in msgs[0]


@needs_pass
def test_short_inner_loops_poll_from_the_row():
    """The taps' loops do not poll; the row's loop polls for their work."""
    img, w, out = _conv_args(np.random.default_rng(9), 20, 24)
    src = tack.kernel(conv2d).generated_source(img, w, out)
    assert "inner loops short (nests.c)" in src
    assert "TK_POLL((e" in src  # the row's strips are charged their work


def test_long_inner_loops_same_bits():
    """257 x 256 taps: more than 2^16 units of work a pixel, so the taps keep their polls."""
    rng = np.random.default_rng(10)
    img = rng.random((260, 259), dtype=np.float32)
    w = rng.random((257, 256), dtype=np.float32)
    out = np.zeros((4, 4), np.float32)
    on, off = _both(conv2d, img, w, out)
    assert np.array_equal(on[2], off[2])
    assert np.array_equal(on[2], _conv_ref(img, w, out))


def shifted(a, out, big):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            for d in range(2):
                out[i, j] += a[i, j + d + big - big]


@needs_pass
def test_index_sums_signed_in_the_copy():
    """In the copy, an index's terms are tested small, so its sums are C's signed ones."""
    import re
    img, w, out = _conv_args(np.random.default_rng(12), 20, 24)
    src = tack.kernel(conv2d).generated_source(img, w, out)
    assert re.search(r"\(\(v\d+_j\) \+ \(v\d+_dj\)\)", src)
    assert re.search(r"\(int64_t\)\(\(uint64_t\)\(v\d+_j\) \+ \(uint64_t\)\(v\d+_dj\)\)", src)  # the loop as written


@pytest.mark.parametrize("big", [5, 2 ** 62])
def test_huge_index_terms_keep_wrapping(big):
    """j + d + 2**62 - 2**62: a term beyond 2^50 fails the test, and the loop as
    written (64-bit wrapping sums) runs: the same result as without the pass."""
    rng = np.random.default_rng(13)
    a = rng.random((6, 9))
    out = np.zeros((6, 8))
    on, off = _both(shifted, a, out, big)
    assert np.array_equal(on[1], off[1])
    assert np.array_equal(on[1], a[:, :8] + a[:, 1:9])


# ----------------------------------------------------------- triangular bounds
def triangle(x, y, out):  # the benchmark's kernel: the inner bound names the parallel variable
    for i in range(out.shape[0]):
        s = 0.0
        for j in range(i + 1):
            s += x[j] * y[i - j]
        out[i] = s


def tri_nested(y, out):  # k's bound names j, the versioned loop's variable: k in [0, j]
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            s = 0.0
            for k in range(j + 1):
                s += y[i, j - k]
            out[i, j] = s


def tri_upper(y, out):  # k's lower bound names j: k in [j, m)
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            s = 0.0
            for k in range(j, out.shape[1]):
                s += y[i, k - j] * y[i, k]
            out[i, j] = s


def tri_negative(y, out):  # k - j lies in [-j, 0]: negative indices, Python's wrap
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            s = 0.0
            for k in range(j + 1):
                s += y[i, k - j]
            out[i, j] = s


def tri_deep(y, out):  # three deep, each bound naming the loop around it
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            s = 0.0
            for k in range(j + 1):
                for m in range(k, j + 1):
                    s += y[i, j - m + k] * y[i, m - k]
            out[i, j] = s


def tri_scaled(y, out):  # coefficients: 2 * j - k over k in range(2 * j + 1) lies in [0, 2 * j]
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            s = 0.0
            for k in range(2 * j + 1):
                s += y[i, 2 * j - k] * (k + 1)
            out[i, j] = s


def tri_huge(y, out, big, back):  # big + back is 0, each beyond 2^50: the loop as written
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            s = 0.0
            for k in range(j + big + back + 1):
                s += y[i, j - k]
            out[i, j] = s


def _py(fn, *args):
    """The kernel's loops run by Python on copies (NumPy indexing: negative indices wrap)."""
    cp = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    fn(*cp)
    return cp


@needs_pass
@pytest.mark.parametrize("fn,width", [(tri_nested, 9), (tri_upper, 9), (tri_negative, 9), (tri_deep, 9),
                                      (tri_scaled, 17)])
def test_triangular_bounds_tested_once_per_row(fn, width):
    """An inner loop whose bounds name the loop around it (k in range(j + 1)) has a
    range too: its checks are tested once per row, not once per iteration."""
    y, out = np.zeros((3, width)), np.zeros((3, 9))
    src = tack.kernel(fn).generated_source(y, out)
    assert "index checks tested once (nests.c)" in src
    body = src[src.index("index checks tested once"):]
    body = body[:body.index("} else {")]
    assert "abi->fail(ctx" not in body  # the copy runs without them


def test_triangle_same_bits():
    rng = np.random.default_rng(20)
    for n in (1, 2, 7, 100):
        x, y = rng.random(n), rng.random(n)
        on, off = _both(triangle, x, y, np.zeros(n))
        assert np.array_equal(on[2], off[2])
        assert np.array_equal(on[2], _py(triangle, x, y, np.zeros(n))[2])


@pytest.mark.parametrize("fn", [tri_nested, tri_upper, tri_negative, tri_deep, tri_scaled])
@pytest.mark.parametrize("shape", [(1, 1), (2, 5), (4, 9), (3, 40)])
def test_triangular_same_bits(fn, shape):
    """Differential: with the pass, without it, and Python's loops, bit for bit."""
    y = np.random.default_rng(21).random((shape[0], 2 * shape[1] - 1 if fn is tri_scaled else shape[1]))
    on, off = _both(fn, y, np.zeros(shape))
    assert np.array_equal(on[1], off[1])
    assert np.array_equal(on[1], _py(fn, y, np.zeros(shape))[1])


@pytest.mark.parametrize("fn,args,bad", [
    (triangle, lambda: (np.ones(6), np.ones(4), np.zeros(6)), "index 4"),   # y too short: i - j reaches 5
    (triangle, lambda: (np.ones(3), np.ones(6), np.zeros(6)), "index 3"),   # x too short: j reaches 5
    (tri_nested, lambda: (np.ones((2, 5)), np.zeros((2, 7))), "index 5"),   # j - k reaches 6
    (tri_upper, lambda: (np.ones((2, 4)), np.zeros((2, 6))), "index 4"),    # k reaches 5
    (tri_negative, lambda: (np.ones((2, 3)), np.zeros((2, 5))), "index -4"),  # k - j reaches -4
    (tri_deep, lambda: (np.ones((1, 3)), np.zeros((1, 4))), "index 3"),
    (tri_scaled, lambda: (np.ones((2, 6)), np.zeros((2, 4))), "index 6"),    # 2 * j - k reaches 6
])
def test_triangular_out_of_bounds_same_error(fn, args, bad):
    """Where a row's test fails, the loop as written runs: the same IndexError (message,
    site, operands) as without the pass, and every cell both runs wrote has the same
    value.  Which other rows ran before the failure stopped the loop depends on the
    threads' timing (test_triangular_one_row_same_writes compares the writes of one row)."""
    a_on = list(args())
    msg_on = _message(tack.kernel(fn), a_on)
    a_off = list(args())
    with tack.config.override(nests=False):
        msg_off = _message(tack.kernel(fn), a_off)
    assert msg_on == msg_off and bad in msg_on
    both = (a_on[-1] != 0) & (a_off[-1] != 0)
    assert np.array_equal(a_on[-1][both], a_off[-1][both])


def test_triangular_one_row_same_writes():
    """One row: the cells before the failing one are written, the rest are not."""
    y = np.arange(1.0, 6.0).reshape(1, 5)
    a_on = [y, np.zeros((1, 8))]
    msg_on = _message(tack.kernel(tri_nested), a_on)
    a_off = [y, np.zeros((1, 8))]
    with tack.config.override(nests=False):
        msg_off = _message(tack.kernel(tri_nested), a_off)
    assert msg_on == msg_off and "index 5" in msg_on
    assert np.array_equal(a_on[1], a_off[1])
    assert np.array_equal(a_on[1][0, :5], np.cumsum(y[0])) and not a_on[1][0, 5:].any()


@pytest.mark.parametrize("big", [3, 2 ** 52, 2 ** 62, -(2 ** 63)])
def test_triangular_huge_bound_terms(big):
    """j + big + back + 1 with big = -back beyond 2^50: the test's sums could wrap, so it
    fails and the loop runs as written (its 64-bit wrapping sums give j + 1): the same
    result, and Python's."""
    y = np.random.default_rng(22).random((3, 7))
    back = -big if big != -(2 ** 63) else big  # -2^63 + -2^63 wraps to 0
    if big == 3 and OPTIMIZED:  # versioned, behind the terms' +-2^50 test
        src = tack.kernel(tri_huge).generated_source(y, np.zeros((3, 7)), big, back)
        assert "index checks tested once (nests.c)" in src and "1125899906842624" in src
    on, off = _both(tri_huge, y, np.zeros((3, 7)), big, back)
    assert np.array_equal(on[1], off[1])
    assert np.array_equal(on[1], _py(tri_nested, y, np.zeros((3, 7)))[1])


@pytest.mark.parametrize("n", [2, 8])
def test_triangular_huge_bound_raises_the_same(n):
    """The same with an index past the end: the loop as written raises."""
    msgs = []
    for env in (None, "0"):
        with tack.config.override(nests=env != "0"):
            msgs.append(_message(tack.kernel(tri_huge), [np.ones((1, n - 1)), np.zeros((1, n)), 2 ** 62, -(2 ** 62)]))
    assert msgs[0] == msgs[1] and f"index {n - 1}" in msgs[0]


# ------------------------------------------- negative-index wraps of run-time starts
def lu_step(a, k):  # Rodinia's LU, one pivot: the row update starts at a column known at run time
    n = a.shape[0]
    for i in tack.independent(range(k + 1, n)):
        lv = a[i, k] / a[k, k]
        a[i, k] = lv
        for j in range(k + 1, n):
            a[i, j] = a[i, j] - lv * a[k, j]


def from_start(x, lo, out):  # a serial loop from a start that may be negative (Python's x[i, -3])
    for i in range(out.shape[0]):
        for j in range(lo, x.shape[1]):
            out[i] += x[i, j]


@needs_pass
def test_wraps_tested_once_per_row():
    """The copy runs where each index is tested >= 0, without the negative-index
    wraps (`tk_wrap`: `j < 0 ? j + n : j`, a select the C compiler does not
    vectorize through); the loop as written keeps them."""
    a = np.eye(8, dtype=np.float32)
    src = tack.kernel(lu_step).generated_source(a, 1)
    fast, slow = src.split("index checks tested once (nests.c)", 1)[1].split("} else {", 1)
    assert "a0[((v2_i) * a0_s1 + (v4_j))]" in fast and "tk_wrap" not in fast
    assert "tk_wrap(v4_j" in slow


def test_lu_step_same_bits():
    a = np.random.default_rng(20).random((37, 37)).astype(np.float32) + np.float32(37) * np.eye(37, dtype=np.float32)
    want = a.copy()
    for k in range(36):
        want[k + 1:, k] /= want[k, k]
        want[k + 1:, k + 1:] -= np.multiply.outer(want[k + 1:, k], want[k, k + 1:])
    on, off = a.copy(), a.copy()
    for k in range(36):
        tack.kernel(lu_step)(on, k)
        with tack.config.override(nests=False):
            tack.kernel(lu_step)(off, k)
    assert np.array_equal(on, want) and np.array_equal(off, want)


@pytest.mark.parametrize("lo", [-3, -1, 0, 2, 9])
def test_negative_start_still_wraps(lo):
    """A start below zero fails the test: the row runs as written and x[i, -3] is x[i, m - 3]."""
    x = np.random.default_rng(21).integers(0, 100, (5, 9)).astype(np.float64)
    on, off = _both(from_start, x, lo, np.zeros(5))
    want = np.array([sum(x[i, j] for j in range(lo, 9)) for i in range(5)])
    assert np.array_equal(on[2], want) and np.array_equal(off[2], want)


# ------------------------------------------- the test's fixed part, once per launch
def row_update(a, k, m):  # lu_step's row update to a column m given at run time
    for i in tack.independent(range(k + 1, a.shape[0])):
        lv = a[i, k] / a[k, k]
        for j in range(k + 1, m):
            a[i, j] = a[i, j] - lv * a[k, j]


@needs_pass
def test_fixed_part_of_the_test_once_per_launch():
    """Of LU's row test only the row's own index stays in the rows' loop: the bounds of
    k + 1 and n (lowering's temporaries for the range, read through their values) are
    tested once, into a frame local assigned before the parallel loop."""
    src = tack.kernel(lu_step).generated_source(np.eye(8, dtype=np.float32), 1)
    entry = src[src.index("void tack_entry("):]
    assert "tk_rows_ok = (" in entry and entry.index("tk_rows_ok = (") < entry.index("abi->parallel_for")
    # the row's test in the loop as written, after the chunk's copy without it (emit_cpu.c)
    row = src.split("index checks tested once (nests.c)")[-2].rsplit("if (", 1)[1]
    assert "tk_rows_ok" in row and "a0_s1" not in row and "v8_t3" not in row and "v2_i" in row


@pytest.mark.parametrize("m", [0, 5, 8, 9, 12])
def test_fixed_part_failing_runs_the_loop_as_written(m):
    """m past the last column fails the fixed part: every row runs as written and raises
    the same IndexError after the same writes as without the pass."""
    a = np.random.default_rng(m).random((8, 8)) + 8 * np.eye(8)
    if m <= 8:
        on, off = _both(row_update, a, 2, m)
        want = a.copy()
        want[3:, 3:m] -= np.multiply.outer(want[3:, 2] / want[2, 2], want[2, 3:m])
        assert np.array_equal(on[0], want) and np.array_equal(off[0], want)
        return
    # one thread: on two, which of the failing rows start before the first failure stops the
    # loop is the threads' timing (the two runs differed in rows 3 and 5 in 34-65 of 300 tries)
    on, off = a.copy(), a.copy()
    with tack.config.override(num_threads=1):
        msgs = [_message(tack.kernel(row_update), [on, 2, m])]
        with tack.config.override(nests=False):
            msgs.append(_message(tack.kernel(row_update), [off, 2, m]))
    assert msgs[0] == msgs[1] and "index 8" in msgs[0]
    assert np.array_equal(on, off)


# ------------------------------------------- a stepped loop's last value
def blocked_rows(x, out, lo):  # each row summed in blocks of eight from lo: x[r, i + 7] at the last i
    for r in range(x.shape[0]):
        s = 0.0
        for i in range(lo, x.shape[1], 8):
            s += (x[r, i] + x[r, i + 1] + x[r, i + 2] + x[r, i + 3]
                  + x[r, i + 4] + x[r, i + 5] + x[r, i + 6] + x[r, i + 7])
        out[r] = s


@needs_pass
def test_stepped_loop_tested_by_its_last_value():
    """range(lo, m, 8) ends at lo + 8 * (trip - 1), not m - 1: the rows' test reads the
    trip count, so a row of 8k columns passes it.  (Bounded by m - 1, `i + 7` made the
    test `m + 6 < m`, false for every m: each row ran with its eight checks a block.)"""
    x, out = np.zeros((3, 16)), np.zeros(3)
    src = tack.kernel(blocked_rows).generated_source(x, out, 0)
    entry = src[src.index("void tack_entry("):]
    test = entry[entry.index("tk_rows_ok = ("):]
    assert "tk_trip(" in test[:test.index(";\n")]
    body = src[src.index("index checks tested once"):]
    assert "abi->fail(ctx" not in body[:body.index("} else {")]  # the copy runs without them


@pytest.mark.parametrize("m,lo", [(0, 0), (8, 0), (64, 0), (8, 8), (35, 3), (3, 3), (2, 3)])
def test_stepped_loop_same_bits(m, lo):
    """Columns that the blocks cover exactly: with the pass, without it, in debug mode
    and in Python's loops, bit for bit."""
    x = np.random.default_rng(m).random((3, m))
    on, off = _both(blocked_rows, x, np.zeros(3), lo)
    debug = np.zeros(3)
    tack.kernel(blocked_rows, jit=False)(x, debug, lo)
    want = _py(blocked_rows, x, np.zeros(3), lo)[1]
    assert np.array_equal(on[1], want) and np.array_equal(off[1], want) and np.array_equal(debug, want)


@pytest.mark.parametrize("m,lo,bad", [(12, 0, 12), (15, 0, 15), (9, 0, 9), (36, 3, 36), (4, 3, 4)])
def test_stepped_loop_past_the_last_column_same_error(m, lo, bad):
    """The last block reaches past the row (m - lo not a multiple of 8): the same
    IndexError with the pass, without it and in debug mode."""
    x = np.ones((1, m))
    msgs = [_message(tack.kernel(blocked_rows), [x, np.zeros(1), lo])]
    with tack.config.override(nests=False):
        msgs.append(_message(tack.kernel(blocked_rows), [x, np.zeros(1), lo]))
    msgs.append(_message(tack.kernel(blocked_rows, jit=False), [x, np.zeros(1), lo]))
    assert msgs[0] == msgs[1], msgs
    assert all(f"index {bad} is out of bounds for axis 1 with size {m}" in msg for msg in msgs), msgs
