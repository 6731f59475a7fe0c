"""Parallel-loop iterations in SIMD lanes (src/compiler/cpu/emit_inner.c, simd_ok).

The chunk loop of a parallel loop carries `#pragma omp simd` when its body
cannot leave early (no checks, returns or breaks out of it) and lanes cannot
collide (no atomics); private sums get `reduction(+: ...)`.  Every local of
the body is declared inside it, so each iteration (lane) has its own, and a
loop whose body has serial loops with invariant bounds is versioned on
`lo < hi` so that GCC may vectorize the outer loop.  Each case here is
checked against NumPy; test_differential.py checks them against the
unoptimized compile bit for bit.
"""
import math
import os
import sys

import numpy as np
import pytest

import tack

OPTIMIZED = os.environ.get("TACK_OPT") != "0"


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
from benchmarks.peers import tack_peer  # noqa: E402  (the benchmark's n-body, an outer loop in lanes)

nbody = tack_peer.kernels()["nbody"]


def _nbody_ref(p, m, eps2):
    d = p[:, None, :] - p[:, :, None]
    r2 = (d * d).sum(0) + eps2
    s = m[None, :] / (r2 * np.sqrt(r2))
    return (d * s).sum(-1)


@pytest.mark.parametrize("n", [1, 2, 7, 16, 17, 100, 333])
def test_nbody_matches_numpy(n):
    r = np.random.default_rng(n)
    p = r.standard_normal((3, n)).astype(np.float32)
    m = r.uniform(0.5, 1.5, n).astype(np.float32)
    a = [np.zeros(n, np.float32) for _ in range(3)]
    nbody(p[0].copy(), p[1].copy(), p[2].copy(), m, *a, 0.01)
    ref = _nbody_ref(p.astype(np.float64), m.astype(np.float64), 0.01)
    np.testing.assert_allclose(np.stack(a), ref, rtol=1e-3, atol=1e-4 * np.abs(ref).max())


@tack.kernel
def row_sums(a, lo, hi, out):
    for i in range(a.shape[0]):
        t = 0.0
        for j in range(lo, hi):
            t += a[i, j]
        out[i] = t + 1.0


@pytest.mark.parametrize("lo,hi", [(0, 5), (2, 3), (0, 0), (3, 1), (-2, 0)])
def test_inner_loop_guard_both_versions(lo, hi):
    """Invariant inner bounds, empty ones included (the version without the guard)."""
    a = np.arange(40, dtype=np.float64).reshape(8, 5)
    out = np.zeros(8)
    row_sums(a, lo, hi, out)
    ref = np.array([sum(a[i, j] for j in range(lo, hi)) for i in range(8)]) + 1.0
    np.testing.assert_array_equal(out, ref)


@tack.kernel
def triangle(x, out):
    for i in range(x.shape[0]):
        t = 0
        for j in range(i + 1):
            t += x[j]
        out[i] = t


def test_inner_loop_with_varying_bounds():
    x = np.arange(1, 101, dtype=np.int64)
    out = np.zeros(100, np.int64)
    triangle(x, out)
    np.testing.assert_array_equal(out, np.cumsum(x))


@tack.kernel
def window_max(x, out):
    for i in range(x.shape[0] - 6):
        w = np.empty(7)
        for k in range(7):
            w[k] = x[i + k]
        m = w[0]
        for k in range(1, 7):
            if w[k] > m:
                m = w[k]
        out[i] = m


def test_guards_of_inner_loops_in_nested_blocks():
    """A sliding-window maximum, as a Numba user writes it: two inner loops of constant
    bounds, each in a block of its own.  Their guards were joined without && (the count
    restarted in each block), C that did not compile ("called object is not a function").  Windows
    of seven: a loop of up to five constant trips is unrolled instead (unroll.c), with no guard."""
    x = np.array([1.0, 5, 2, 8, 3, -1, 0, 9, -4, 6, 2, 7])
    out = np.zeros(6)
    window_max(x, out)
    np.testing.assert_array_equal(out, np.lib.stride_tricks.sliding_window_view(x, 7).max(1))
    if OPTIMIZED:  # TACK_OPT=0 writes no SIMD version
        src = window_max.generated_source(x, out)
        guard = next(ln for ln in src.splitlines() if "<= 4194304" in ln)
        assert guard.count("<= 4194304") == 2 and "<= 4194304 && (" in guard


@tack.kernel
def sums(x, fo, io):
    for i in range(x.shape[0]):
        fo[0] += x[i]
        fo[1] -= x[i] * 2.0
        io[0] += i
        io[1] -= 3


@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 1000, 100_003])
def test_private_sums_in_lanes(n):
    x = (np.arange(n) % 7).astype(np.float64)  # small integers: every order sums exactly
    fo, io = np.array([0.5, 0.0]), np.array([10, 0], np.int64)
    sums(x, fo, io)
    assert fo[0] == 0.5 + x.sum() and fo[1] == -2 * x.sum()
    assert io[0] == 10 + n * (n - 1) // 2 and io[1] == -3 * n


@tack.kernel
def sum32(x, out):
    for i in range(x.shape[0]):
        out[0] += x[i]


@pytest.mark.parametrize("n", [3, 1000, 1 << 20])
def test_f32_sum_close_to_numpy(n):
    x = np.random.default_rng(n).random(n, dtype=np.float32)
    out = np.zeros(1, np.float32)
    sum32(x, out)
    exact = x.astype(np.float64).sum()
    # partial sums per lane keep the f32 error small; one serial chain (TACK_OPT=0) less so.
    # The exact error depends on the lane count the host's vectors give: 1M values summed
    # in 8 f32 lanes (AVX2) are off by 1.10 (2.1e-6 relative), in 16 lanes by less.
    assert abs(float(out[0]) - exact) <= (2e-6 * n if OPTIMIZED else 1e-4 * exact)


@tack.kernel
def sum_dot(x, y, out):
    for i in range(x.shape[0]):
        out[0] += x[i] * y[i]


@tack.kernel
def sum_exp(x, out):
    for i in range(x.shape[0]):
        out[0] += math.exp(x[i])


@pytest.mark.optimized_source
def test_private_sums_in_streams():
    # A small body whose sums' adds are what it waits on (a load a sum at most) runs its sums
    # in two streams over the chunk's halves, then the last iteration at most (emit_inner.c,
    # stream_loop); sum_streams picks 1, 2 or 4 (config.def).
    f = np.zeros(8, np.float32)

    def source(streams):  # a kernel of its own for each setting (a built one keeps its source)
        @tack.kernel
        def total(x, out):
            for i in range(x.shape[0]):
                out[0] += x[i]

        with tack.config.override(sum_streams=streams):
            return _body(total.generated_source(f, np.zeros(1, np.float32)))

    src = source("2")  # the default
    assert "2 sums a trip" in src and src.count("#pragma omp simd") == 1  # the last one: no lanes
    assert "reduction(+: v2_sum2, v2_sum2_1)" in src and "i_ < hi_ && i_ < qe_ + 1;" in src
    assert "v2_sum2 = (v2_sum2 + v2_sum2_1);" in src
    src = source("4")
    assert "reduction(+: v2_sum2, v2_sum2_1, v2_sum2_2, v2_sum2_3)" in src
    assert "v2_sum2 = (v2_sum2 + v2_sum2_1) + (v2_sum2_2 + v2_sum2_3);" in src
    src = source("1")
    assert "sums a trip" not in src and "#pragma omp simd reduction(+: v2_sum2)\n" in src
    x = np.zeros(8)
    src = _body(sums.generated_source(x, x[:2], np.zeros(2, np.int64)))
    assert "2 sums a trip" in src and src.count("_1 = 0;") == 4  # two float sums, two integer

    # two loads a sum (a dot product: the loads are the limit, measured no faster), a math
    # function, a loop in the body: one stream
    assert "sums a trip" not in _body(sum_dot.generated_source(f, f, np.zeros(1, np.float32)))
    assert "sums a trip" not in _body(sum_exp.generated_source(f, np.zeros(1, np.float32)))

    @tack.kernel
    def row_sums(a, out):
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                out[0] += a[i, j]

    assert "sums a trip" not in _body(row_sums.generated_source(np.zeros((2, 2)), np.zeros(1)))


@pytest.mark.parametrize("streams", ["2", "4"])
def test_streams_every_remainder(streams):
    # trips around multiples of the streams and of the chunk split, on 1 and 2 threads: every
    # iteration counted once (small integers: every order of the adds gives the same bits)
    @tack.kernel
    def sums_here(x, fo, io):  # a kernel of its own: compiled under this setting
        for i in range(x.shape[0]):
            fo[0] += x[i]
            fo[1] -= x[i] * 2.0
            io[0] += i
            io[1] -= 3

    for threads in [1, 2]:
        with tack.config.override(num_threads=threads, sum_streams=streams):
            for n in [1, 4, 5, 6, 7, 8, 63, 64, 65, 4099, 70_001]:
                x = (np.arange(n) % 5).astype(np.float64)
                fo, io = np.array([0.25, 0.0]), np.array([1, 0], np.int64)
                if n == 1 and threads == 1 and OPTIMIZED:  # TACK_OPT=0 writes no lanes
                    assert f"{streams} sums a trip" in sums_here.generated_source(x, fo, io)
                sums_here(x, fo, io)
                assert fo[0] == 0.25 + x.sum() and fo[1] == -2 * x.sum(), n
                assert io[0] == 1 + n * (n - 1) // 2 and io[1] == -3 * n, n


@tack.kernel
def matmul(a, b, c):
    for i, j in tack.ndrange(a.shape[0], b.shape[1]):
        acc = 0.0
        for k in range(a.shape[1]):
            acc += a[i, k] * b[k, j]
        c[i, j] = acc


@pytest.mark.parametrize("n,m,p", [(1, 1, 1), (3, 17, 5), (16, 16, 16), (9, 0, 4), (31, 7, 33)])
def test_ndrange_lanes(n, m, p):
    r = np.random.default_rng(n * m + p)
    a, b = r.random((n, m)), r.random((m, p))
    c = np.full((n, p), -1.0)
    matmul(a, b, c)
    ref = np.array([[sum(a[i, k] * b[k, j] for k in range(m)) for j in range(p)] for i in range(n)]).reshape(n, p)
    np.testing.assert_array_equal(c, ref)


@tack.kernel
def escape(out, w, max_iter):
    for i in range(out.shape[0]):
        cx = -2.0 + float(i % w) * (3.0 / w)
        cy = -1.25 + float(i // w) * (2.5 / w)
        x = 0.0
        y = 0.0
        it = 0
        while True:
            if it >= max_iter or x * x + y * y > 4.0:
                break
            x, y = x * x - y * y + cx, 2.0 * x * y + cy
            it += 1
        if it == max_iter:
            continue
        out[i] = it


def test_break_in_inner_loop_and_continue():
    w, mi = 37, 50
    out = np.full(w * w, -7, np.int64)
    escape(out, w, mi)
    for i in range(w * w):
        cx, cy = -2.0 + (i % w) * (3.0 / w), -1.25 + (i // w) * (2.5 / w)
        x = y = 0.0
        it = 0
        while not (it >= mi or x * x + y * y > 4.0):
            x, y = x * x - y * y + cx, 2.0 * x * y + cy
            it += 1
        assert out[i] == (-7 if it == mi else it), i


@tack.kernel
def maybe(x, out):
    for i in range(x.shape[0]):
        if x[i] > 0:
            t = x[i]
        out[i] = t


def test_locals_are_private_to_an_iteration():
    """A local not assigned in an iteration is unassigned there, whatever the iteration before it
    (in the same SIMD vector or chunk) assigned: nothing passes between iterations."""
    x = np.array([1.0, -1.0, 2.0, -3.0, -4.0, 5.0] * 1000)
    out = np.full(x.shape, 9.0)
    with pytest.raises(UnboundLocalError, match="'t'"):
        maybe(x, out)
    x = np.abs(x)
    maybe(x, out)
    np.testing.assert_array_equal(out, x)


def _body(src):
    start = src.index("static void tk_pfor0")
    return src[start:src.index("__attribute__", start)]


@pytest.mark.optimized_source
def test_which_loops_get_lanes():
    n = 8
    f = np.zeros(n, np.float32)
    src = _body(nbody.generated_source(f, f, f, f, f, f, f, 0.01))
    # versioned on the inner loop running, at most 4M iterations (longer ones poll for Ctrl-C)
    guard = "if ((((int64_t)0LL)) < (a0_s0) && (uint64_t)(a0_s0) - (uint64_t)(((int64_t)0LL)) <= 4194304) {"
    assert src.count("#pragma omp simd") == 1 and guard in src
    assert "reduction(+: " in _body(sum32.generated_source(f, np.zeros(1, np.float32)))
    # an index check left in the loop could leave it early: no lanes
    idx = np.zeros(n, np.int64)

    @tack.kernel
    def gather(x, idx, out):
        for i in range(out.shape[0]):
            out[i] = 0.0  # a store before the check: not verified ahead (test_verified_blocks.py)
            out[i] = x[idx[i]]

    assert "abi->fail" in _body(gather.generated_source(f, idx, f))
    assert "#pragma omp simd" not in _body(gather.generated_source(f, idx, f))

    @tack.kernel
    def scatter_add(x, idx, out):
        for i in range(x.shape[0]):
            out[idx[i] % 4] += x[i]

    # the private-histogram version adds into one stack copy: no lanes there
    src = _body(scatter_add.generated_source(f, idx, np.zeros(4, np.float32)))
    assert "private histogram" in src and "#pragma omp simd" not in src
    assert "#pragma omp simd" not in nbody.generated_source(f, f, f, f, f, f, f, 0.01, target="cuda")


@tack.kernel
def index4(a):
    for i, j, k, l in tack.ndrange(a.shape[0], a.shape[1], a.shape[2], a.shape[3]):
        a[i, j, k, l] = i * 1000000 + j * 10000 + k * 100 + l


@tack.kernel
def index3(a, off):
    for i, j, k in tack.ndrange(a.shape[0], a.shape[1], a.shape[2]):
        a[i, j, k] += i * 10000 + j * 100 + k + off


@pytest.mark.parametrize("shape", [(3, 4, 5, 6), (1, 1, 1, 1), (2, 1, 3, 1), (7, 13, 11, 3), (50, 40, 30, 20),
                                   (1, 70000, 1, 1), (70000, 1, 1, 1)])
def test_ndrange_outer_indices_counted_per_row(shape):
    """The outer indices of an ndrange are divided out once per chunk, then counted row by row:
    chunks start and end mid-row and mid-plane."""
    a = np.zeros(shape, np.int64)
    index4(a)
    i, j, k, l = np.indices(shape)
    np.testing.assert_array_equal(a, i * 1000000 + j * 10000 + k * 100 + l)
    b = np.zeros(shape[:3], np.int64)
    index3(b, 1)
    i, j, k = np.indices(shape[:3])
    np.testing.assert_array_equal(b, i * 10000 + j * 100 + k + 1)


def _min_parallel(src):
    import re

    got = re.search(r"parallel_for\(ctx, tk_pfor0, &F_, total_, (\w+), grain_\)", src).group(1)
    return got if got == "mp_" else int(got)  # mp_: counted at the launch (launch_work.c)


def test_fork_join_threshold_follows_the_body_cost():
    """Launches are split over threads from 32768 iterations of a saxpy-sized body down to 8192
    for costlier ones; for a body with a loop whose bounds the launch knows, from the work it
    counts at the launch (test_launch_work.py)."""
    f = np.zeros(4, np.float32)

    @tack.kernel
    def axpy(a, x, y):
        for i in range(y.shape[0]):
            y[i] = a * x[i] + y[i]

    @tack.kernel
    def norm3(v, out):
        for i in range(v.shape[0]):
            out[i] = tack.normalize(v[i])

    v = tack.zeros(4, tack.vec3)
    assert _min_parallel(axpy.generated_source(2.0, f, f)) == 32768
    assert 8192 <= _min_parallel(norm3.generated_source(v, v)) < 16384
    assert _min_parallel(nbody.generated_source(f, f, f, f, f, f, f, 0.01)) == "mp_"
    x = np.random.default_rng(0).random((12288, 3)).astype(np.float32)
    out = tack.zeros(12288, tack.vec3)
    norm3(tack.array(x, tack.vec3), out)
    ref = x / np.linalg.norm(x, axis=1, keepdims=True)
    np.testing.assert_allclose(np.asarray(out.numpy()).reshape(-1, 3), ref, rtol=2e-6, atol=1e-7)


@tack.kernel
def neighbours(a, out):
    for i in range(1, a.shape[0] - 1):
        out[i] = a[i - 1] + 2.0 * a[i] + a[i + 1]


@tack.kernel
def scale3(v, out, s):
    for i in range(v.shape[0]):
        out[i] = v[i] * s


@tack.kernel
def axpy_same_index(a, x, y):
    for i in range(y.shape[0]):
        y[i] = a * x[i] + y[i] + x[i]


@pytest.mark.optimized_source
def test_which_loops_take_32_byte_vectors():
    """Vector elements in memory: TK_NARROW; streams and neighbour loads keep the full width."""
    f = np.zeros(8, np.float32)
    v = tack.zeros(4, tack.vec3)

    def narrow(src):
        return "TK_NARROW static void tk_pfor0" in src

    assert not narrow(neighbours.generated_source(f, f))
    assert narrow(scale3.generated_source(v, v, 2.0))
    assert not narrow(axpy_same_index.generated_source(2.0, f, f))
    assert not narrow(sum32.generated_source(f, np.zeros(1, np.float32)))
    assert "#define TK_NARROW __attribute__((target(\"prefer-vector-width=256\")))" in \
        scale3.generated_source(v, v, 2.0)
    assert "TK_NARROW" not in scale3.generated_source(v, v, 2.0, target="cuda")


def _nearest(feat, cent, member, sums, counts):
    # kmeans's step: each point's squared distance to every centre, a sum in feature order
    n, nf = feat.shape
    for i in range(n):
        best = math.inf
        bi = 0
        for c in range(cent.shape[0]):
            d = 0.0
            for f in range(nf):
                t = feat[i, f] - cent[c, f]
                d += t * t
            if d < best:
                best = d
                bi = c
        member[i] = bi
        counts[bi] += 1
        for f in range(nf):
            sums[bi, f] += feat[i, f]


nearest = tack.kernel(_nearest)
nearest_fast = tack.kernel(_nearest, fast_math=True)
nearest_debug = tack.kernel(_nearest, jit=False)


@tack.kernel
def in_order_row_sums(a, out):
    for i in range(a.shape[0]):  # an in-order sum a row, no check: the rows may run in lanes
        s = 0.0
        for j in range(a.shape[1]):
            s += a[i, j]
        out[i] = s


@tack.kernel
def scattered_row_sums(a, to, out):
    # a sum a row in a's type, stored where to[i] says (a permutation; the check keeps it out of lanes)
    for i in tack.independent(range(a.shape[0])):
        s = a[i, 0] - a[i, 0]
        for j in range(a.shape[1]):
            s += a[i, j]
        out[to[i]] = s


@pytest.mark.optimized_source
def test_in_order_sums_take_32_byte_vectors():
    """A serial loop's in-order float sum (GCC's fold-left: every lane added in turn) narrows
    its chunk function to 32-byte vectors; fast_math (reassociated), integer sums and bodies
    that may run in SIMD lanes keep the full width."""
    feat, cent = np.zeros((8, 34), np.float32), np.zeros((5, 34), np.float32)
    args = (feat, cent, np.zeros(8, np.int32), np.zeros((5, 34), np.float32), np.zeros(5, np.int32))
    assert "TK_NARROW static void tk_pfor0" in nearest.generated_source(*args)
    assert "TK_NARROW static" not in nearest_fast.generated_source(*args)
    a = np.zeros((8, 8), np.float32)
    assert "TK_NARROW static" not in in_order_row_sums.generated_source(a, np.zeros(8, np.float32))
    to = np.zeros(8, np.int64)
    assert "TK_NARROW static void tk_pfor0" in scattered_row_sums.generated_source(a, to, np.zeros(8, np.float32))
    assert "TK_NARROW static" not in scattered_row_sums.generated_source(
        np.zeros((8, 8), np.int32), to, np.zeros(8, np.int32))


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32])
def test_scattered_row_sums_match_numpy(dt):
    r = np.random.default_rng(3)
    a = (r.random((1000, 37)) * 100).astype(dt)
    to = r.permutation(1000)
    out = np.zeros(1000, dt)
    scattered_row_sums(a, to, out)
    ref = np.zeros(1000, dt)
    acc = np.zeros(1000, dt)
    for j in range(37):  # column by column: the kernel's order of each row's sum
        acc += a[:, j]
    ref[to] = acc
    np.testing.assert_array_equal(out, ref)


def _nearest_numpy(feat, cent):
    dist = np.zeros((cent.shape[0], feat.shape[0]), np.float32)
    for c in range(cent.shape[0]):  # feature by feature: the kernel's order of the f32 sum
        for f in range(feat.shape[1]):
            t = feat[:, f] - cent[c, f]
            dist[c] += t * t
    m = np.argmin(dist, axis=0)
    return m, np.bincount(m, minlength=cent.shape[0])


@pytest.mark.parametrize("n,nf,k", [(1, 1, 1), (7, 3, 2), (100, 34, 5), (5000, 34, 5), (3001, 17, 9)])
def test_in_order_sums_match_numpy_and_debug(n, nf, k):
    r = np.random.default_rng(n + nf + k)
    feat = r.random((n, nf)).astype(np.float32)
    cent = feat[r.choice(n, k, replace=n < k)].copy() + np.float32(0.01)

    def run(kern):
        out = (np.zeros(n, np.int32), np.zeros((k, nf), np.float32), np.zeros(k, np.int32))
        kern(feat, cent, *out)
        return out

    member, sums, counts = run(nearest)
    m_ref, c_ref = _nearest_numpy(feat, cent)
    np.testing.assert_array_equal(member, m_ref)
    np.testing.assert_array_equal(counts, c_ref)
    for c in range(k):  # each cluster's sums: the same f32 values, added in some order
        np.testing.assert_allclose(sums[c], feat[member == c].sum(0, dtype=np.float64), rtol=1e-4, atol=1e-4)
    if n <= 100:  # debug mode: the same distances bit for bit, so the same nearest centres
        d_member, d_sums, d_counts = run(nearest_debug)
        np.testing.assert_array_equal(member, d_member)
        np.testing.assert_array_equal(counts, d_counts)
        np.testing.assert_allclose(sums, d_sums, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n", [3, 17, 40, 1000, 100003])
def test_narrow_loops_match_numpy(n):
    r = np.random.default_rng(n)
    a = r.random(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    neighbours(a, out)
    ref = np.zeros(n, np.float32)
    ref[1:-1] = a[:-2] + np.float32(2.0) * a[1:-1] + a[2:]
    np.testing.assert_array_equal(out, ref)
    x = r.random((n, 3)).astype(np.float32)
    o = tack.zeros(n, tack.vec3)
    scale3(tack.array(x, tack.vec3), o, 1.5)
    np.testing.assert_array_equal(np.asarray(o.numpy()).reshape(-1, 3), x * np.float32(1.5))


@tack.kernel
def blur2(a, out):
    for i, j in tack.ndrange(a.shape[0] - 2, a.shape[1] - 2):
        out[i + 1, j + 1] = a[i, j + 1] + a[i + 2, j + 1] - a[i + 1, j] * 2.0 + a[1 + i, j + 2]


@tack.kernel
def blur3(a, out):
    for i, j, k in tack.ndrange(a.shape[0] - 2, a.shape[1] - 2, a.shape[2] - 2):
        out[i + 1, j + 1, k + 1] = (a[i, j + 1, k + 1] + a[i + 2, j + 1, k + 1] + a[i + 1, j, k + 1]
                                    + a[i + 1, j + 2, k + 1] + a[i + 1, j + 1, k] - a[i + 1, j + 1, k + 2])


@tack.kernel
def shift4(a, out):
    for i, j, k, l in tack.ndrange(a.shape[0] - 1, a.shape[1] - 1, a.shape[2] - 1, a.shape[3] - 1):
        out[i, j, k, l] = a[i + 1, j, k + 1, l] - a[i, j + 1, k, l + 1]


@pytest.mark.parametrize("shape", [(3, 3), (3, 40), (40, 3), (257, 129), (1000, 67)])
def test_neighbour_indices_2d(shape):
    """Rows of an ndrange are nested loops over the chunk's first to last row; neighbour
    accesses share one row base (emit_expr.c, split_index).  Chunks start and end mid-row."""
    a = np.random.default_rng(sum(shape)).random(shape)
    out = np.full(shape, -7.0)
    blur2(a, out)
    ref = np.full(shape, -7.0)
    ref[1:-1, 1:-1] = a[:-2, 1:-1] + a[2:, 1:-1] - a[1:-1, :-2] * 2.0 + a[1:-1, 2:]
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("shape", [(3, 3, 3), (4, 5, 6), (40, 3, 40), (3, 70, 70), (33, 34, 35), (66, 66, 66)])
def test_neighbour_indices_3d(shape):
    a = np.random.default_rng(sum(shape)).random(shape).astype(np.float32)
    out = np.full(shape, -7.0, np.float32)
    blur3(a, out)
    ref = np.full(shape, -7.0, np.float32)
    ref[1:-1, 1:-1, 1:-1] = (a[:-2, 1:-1, 1:-1] + a[2:, 1:-1, 1:-1] + a[1:-1, :-2, 1:-1] + a[1:-1, 2:, 1:-1]
                             + a[1:-1, 1:-1, :-2] - a[1:-1, 1:-1, 2:])
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("shape", [(2, 2, 2, 2), (3, 17, 2, 40), (20, 20, 20, 20)])
def test_neighbour_indices_4d(shape):
    a = np.random.default_rng(sum(shape)).random(shape)
    out = np.zeros(shape)
    shift4(a, out)
    ref = np.zeros(shape)
    ref[:-1, :-1, :-1, :-1] = a[1:, :-1, 1:, :-1] - a[:-1, 1:, :-1, 1:]
    np.testing.assert_array_equal(out, ref)


@pytest.mark.optimized_source
def test_neighbour_indices_share_a_row_base():
    f = np.zeros((4, 4, 4), np.float32)
    src = blur3.generated_source(f, f)
    body = src[src.index("static void tk_pfor0"):src.index("tack_entry")]
    assert "for (int64_t x0_ = c0_; x0_ <= e0_; x0_++)" in body and "for (int64_t x1_ = " in body
    # whole rows get a copy whose inner loop has the same bounds on every row
    assert "if (jb_ == 0 && je_ == inner_) {" in body and "for (int64_t j_ = 0; j_ < inner_; j_++)" in body
    # every access is the row base plus a constant offset (in both copies)
    assert body.count("(v0_i) * a0_s1 * a0_s2 + (v1_j) * a0_s2 + (v2_k) + (") == 12


@tack.kernel
def rec_dist(loc, lat, lng, dist):
    for i in range(dist.shape[0]):
        a = loc[i, 0] - lat
        b = loc[i, 1] - lng
        dist[i] = math.sqrt(a * a + b * b)


@tack.kernel
def rec_swap(p, q):
    for i in range(p.shape[0]):
        q[i, 0] = p[i, 2]
        q[i, 1] = p[i, 1]
        q[i, 2] = p[i, 0] + p[i, 1]


@tack.kernel
def rec_cols(a, out):
    for i in range(out.shape[0]):
        t = 0.0
        for j in range(a.shape[1]):
            t += a[i, j]
        out[i] = t + a[i, 0]


@pytest.mark.parametrize("n", [0, 1, 17, 100003])
def test_record_arrays_match_numpy(n):
    """Records read and written at constant columns (emit_cpu.c, record_arrays): the version for
    records of the length read, and the usual one for longer records, give the same answers."""
    r = np.random.default_rng(n)
    for cols in (2, 3, 5):  # 2: the record version; 3 and 5: columns the kernel does not read
        loc = r.uniform(-90, 90, (n, cols)).astype(np.float32)
        dist = np.zeros(n, np.float32)
        rec_dist(loc, np.float32(30.0), np.float32(90.0), dist)
        a, b = loc[:, 0] - np.float32(30.0), loc[:, 1] - np.float32(90.0)
        np.testing.assert_array_equal(dist, np.sqrt(a * a + b * b))
    for cols in (3, 4):
        p = r.random((n, cols)).astype(np.float32)
        q = np.full((n, cols), -1.0, np.float32)
        rec_swap(p, q)
        ref = np.full((n, cols), -1.0, np.float32)
        ref[:, 0], ref[:, 1], ref[:, 2] = p[:, 2], p[:, 1], p[:, 0] + p[:, 1]
        np.testing.assert_array_equal(q, ref)


def test_record_arrays_too_short_still_raise():
    with pytest.raises(IndexError, match="1"):
        rec_dist(np.zeros((5, 1), np.float32), 0.0, 0.0, np.zeros(5, np.float32))


@pytest.mark.optimized_source
def test_which_loops_read_records():
    f2, f = np.zeros((4, 2), np.float32), np.zeros(4, np.float32)
    src = rec_dist.generated_source(f2, 0.0, 0.0, f)
    assert "static void tk_pfor0_r(" in src and "(1 && a0_s1 == 2) ? tk_pfor0_r : tk_pfor0" in src
    src = rec_swap.generated_source(np.zeros((4, 3), np.float32), np.zeros((4, 3), np.float32))
    assert "a0_s1 == 3 && a1_s1 == 3" in src
    assert "tk_pfor0_r" not in rec_cols.generated_source(np.zeros((4, 3)), np.zeros(4))  # a column per j
    assert "tk_pfor0_r" not in scale3.generated_source(tack.zeros(4, tack.vec3), tack.zeros(4, tack.vec3), 2.0)
    assert "tk_pfor0_r" not in rec_dist.generated_source(f2, 0.0, 0.0, f, target="cuda")


@tack.kernel
def rec_nd_div(p, d, out):
    for i, j in tack.ndrange(out.shape[0], out.shape[1]):
        out[i, j] = p[i, j, 0] * p[i, j, 2] + p[(i + j) // d, j, 1]


@tack.kernel
def rec_hist(p, h):
    for i in range(p.shape[0]):
        h[int(p[i, 1]) % 4] += p[i, 0]


@pytest.mark.parametrize("extra", [0, 1])
def test_record_version_with_other_versions(extra):
    """The record version beside an ndrange's rows and fast divisions, and beside private
    histograms: each combination gives the answers of the usual function (extra columns)."""
    r = np.random.default_rng(extra)
    p = r.random((7, 9, 3 + extra)).astype(np.float32)
    out = np.zeros((7, 9), np.float32)
    rec_nd_div(p, 3, out)
    i, j = np.meshgrid(range(7), range(9), indexing="ij")
    np.testing.assert_array_equal(out, p[:, :, 0] * p[:, :, 2] + p[(i + j) // 3, j, 1])
    q = np.stack([r.random(50000), r.integers(0, 9, 50000)] + [r.random(50000)] * extra, 1).astype(np.float32)
    h = np.zeros(4, np.float32)
    rec_hist(q, h)
    ref = np.zeros(4)
    np.add.at(ref, q[:, 1].astype(int) % 4, q[:, 0].astype(np.float64))
    np.testing.assert_allclose(h, ref, rtol=1e-4)
    if OPTIMIZED:
        assert "tk_pfor0_r" in rec_hist.generated_source(q, h) and "tk_pfor0_r" in rec_nd_div.generated_source(p, 3, out)
