"""Serial sums of a parallel loop's iterations, run side by side (src/compiler/cpu/jam.c).

A parallel loop whose iterations are each one serial loop of assignments
(`s = 0; for k: s += w[k, j] * x[k]; out[j] = f(s)`) runs in panels of
iterations (a cache line of accumulators), jammed: for each k, every
iteration of the panel in turn, each sum in a lane of a local array.  Each
iteration's statements run in their order on the same operands, so the
results are the bits of the loop as written; where the panel's checks could
fail, or what is stored shares memory with what the sums read, the
iterations run as written.  The tile setting turns the pass off
(tack.config.tile, TACK_TILE=0) with tile.c's; these tests compare with it,
and with nests.c off, in this process.
"""

import math

import numpy as np
import pytest

import tack
from test_tile import _all_same, _run  # the pass on, off and nests.c off compared bit for bit

OPTIMIZED = tack.config.optimize and tack.config.nests and tack.config.tile
needs_pass = pytest.mark.skipif(not OPTIMIZED, reason="the pass is off (TACK_OPT=0, TACK_NESTS=0 or TACK_TILE=0)")
MARK = "sums jammed (jam.c)"


def forward(x, w, hidden):  # backprop's hidden layer (benchmarks/rodinia.py): columns from 1
    n1, hw = w.shape
    for j in range(1, hw):
        s = 0.0
        for k in range(n1):
            s += w[k, j] * x[k]
        hidden[j] = 1.0 / (1.0 + math.exp(-s))


def forward_sums(x, w, hidden):  # the same sums, stored as they are
    n1, hw = w.shape
    for j in range(1, hw):
        s = 0.0
        for k in range(n1):
            s += w[k, j] * x[k]
        hidden[j] = s


def col_stats(a, lo, out_sum, out_max):  # two sums, a temporary, a bound from an argument
    for j in range(a.shape[1]):
        s = 0.0
        m = a[lo, j]
        for k in range(lo, a.shape[0]):
            v = a[k, j] * 0.5
            s = s + v
            m = max(m, v)
        out_sum[j] = s
        out_max[j] = m + s


def shifted(a, out):  # a local from the parallel variable (`c = j + 1`), read in the loop and after
    for j in range(out.shape[0]):
        c = j + 1
        s = 0
        for k in range(a.shape[0]):
            s += a[k, c] * k
        out[j] = s + c


def expr_of_sum(a, out):  # integer arithmetic of a sum before the loop: its value there, a lane
    for j in range(out.shape[0]):
        s = 0
        c = s + j
        for k in range(a.shape[0]):
            s += a[k, j]
        out[j] = s * 1000 + c


def rows_sum(a, out):  # each iteration a row, contiguous in k: the lanes would gather, left as written
    for i in range(a.shape[0]):
        s = 0.0
        for k in range(a.shape[1]):
            s += a[i, k]
        out[i] = s


def last_k(a, out):  # reads the loop's variable after the loop: left as written
    for j in range(a.shape[1]):
        s = 0.0
        k = 0
        for k in range(a.shape[0]):
            s += a[k, j]
        out[j] = s + k


def serial_sum(a, out):  # a loop of one iteration, serial work: no other iteration to run beside it
    for t in range(1):
        s = 0.0
        for k in range(a.shape[0]):
            s += a[k, 0] * a[k, 1]
        out[0] = s


def branchy(a, out):  # an if in the loop: left as written
    for j in range(a.shape[1]):
        s = 0.0
        for k in range(a.shape[0]):
            if a[k, j] > 0.5:
                s += a[k, j]
        out[j] = s


@needs_pass
def test_jammed_in_source():
    x, w, h = np.zeros(9, np.float32), np.zeros((9, 17), np.float32), np.zeros(17, np.float32)
    assert MARK in tack.kernel(forward).generated_source(x, w, h)
    a = np.zeros((5, 4))
    assert MARK in tack.kernel(col_stats).generated_source(a, 0, np.zeros(4), np.zeros(4))
    assert MARK in tack.kernel(shifted).generated_source(np.zeros((5, 4), np.int64), np.zeros(3, np.int64))


def test_off_switch():
    x, w, h = np.zeros(9, np.float32), np.zeros((9, 17), np.float32), np.zeros(17, np.float32)
    with tack.config.override(tile=False):
        assert MARK not in tack.kernel(forward).generated_source(x, w, h)


# columns: one, fewer than a panel, a panel (16 f32, 8 f64) exactly, more, a partial last panel
@pytest.mark.parametrize("cols", [2, 5, 9, 17, 33, 40])
@pytest.mark.parametrize("rows", [1, 7, 300])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_sums_same_bits(cols, rows, dt):
    rng = np.random.default_rng(cols * 1000 + rows)
    x = rng.random(rows).astype(dt)
    w = ((rng.random((rows, cols)) - 0.5) * 2).astype(dt)
    on = _all_same(forward_sums, [x, w, np.zeros(cols, dt)])
    ref = np.zeros(cols, dt)
    for k in range(rows):  # each column's sum in ascending k, in the element type
        ref[1:] = ref[1:] + w[k, 1:] * x[k]
    assert np.array_equal(on[2], ref)


@pytest.mark.parametrize("cols", [9, 17, 40])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_forward_within_the_math_bound(cols, dt):
    """The statements after the loop run in a loop over the panel, which the C compiler may run
    in SIMD lanes: exp may then be libmvec's, within the bound the language states (4 ulps; the
    scalar function's within about 2); the sums it is given are the same bits."""
    rng = np.random.default_rng(cols)
    x = rng.random(300).astype(dt)
    w = ((rng.random((300, cols)) - 0.5) * 0.1).astype(dt)
    on = _run(forward, [x, w, np.zeros(cols, dt)])[2]
    off = _run(forward, [x, w, np.zeros(cols, dt)], {"tile": False})[2]
    assert np.all(np.abs(on - off) <= 8 * np.spacing(off))


@pytest.mark.parametrize("lo", [0, 3])
@pytest.mark.parametrize("shape", [(10, 3), (50, 8), (50, 21), (4, 40)])
def test_two_sums_same_bits(lo, shape):
    rng = np.random.default_rng(shape[0] + lo)
    a = rng.random(shape) - 0.5
    on = _all_same(col_stats, [a, lo, np.zeros(shape[1]), np.zeros(shape[1])])
    s = np.zeros(shape[1])
    m = a[lo].copy()
    for k in range(lo, shape[0]):
        v = a[k] * 0.5
        s = s + v
        m = np.maximum(m, v)
    assert np.array_equal(on[2], s) and np.array_equal(on[3], m + s)


def test_empty_loop_same_bits():
    """No rows: the serial loop does not run; each result is its sum's first value."""
    on = _all_same(shifted, [np.zeros((0, 20), np.int64), np.full(19, 7, np.int64)])
    assert np.array_equal(on[1], np.arange(1, 20))


@pytest.mark.parametrize("dt", [np.int64, np.int32, np.int8, np.uint16])
def test_integers_same_bits(dt):  # wrapping sums
    rng = np.random.default_rng(11)
    a = rng.integers(0, 100, (70, 20)).astype(dt)
    on = _all_same(shifted, [a, np.zeros(19, dt)])
    if dt == np.int64:
        ref = (a[:, 1:] * np.arange(70)[:, None]).sum(0) + np.arange(1, 20)
        assert np.array_equal(on[1], ref)


@needs_pass
def test_expression_of_a_sum_keeps_its_value():
    """c = s + j before the loop is not put where it is read after the loop (s has changed)."""
    a = np.arange(60, dtype=np.int64).reshape(3, 20)
    assert MARK in tack.kernel(expr_of_sum).generated_source(a, np.zeros(20, np.int64))
    on = _all_same(expr_of_sum, [a, np.zeros(20, np.int64)])
    assert np.array_equal(on[1], a.sum(0) * 1000 + np.arange(20))


def _message(fn, args, settings=None):
    with tack.config.override(**(settings or {})), pytest.raises(IndexError) as e:
        fn(*args)
    return str(e.value)


@pytest.mark.parametrize("rows,cols", [(6, 5), (300, 40)])
def test_out_of_bounds_same_error_and_writes(rows, cols):
    """x has one element too few: x[rows - 1] is past its end; the same error, the same writes."""
    rng = np.random.default_rng(12)
    x, w = rng.random(rows - 1), rng.random((rows, cols))
    outs = []
    for env in (None, {"tile": False}):
        h = np.zeros(cols)
        outs.append((_message(tack.kernel(forward), [x, w, h], env), h))
    assert outs[0][0] == outs[1][0] and f"index {rows - 1}" in outs[0][0]
    assert np.array_equal(outs[0][1], outs[1][1])


def test_store_overlaps_what_is_read_falls_back():
    """hidden is x (one array): each iteration's store reaches the later iterations' sums, in the
    order as written (one thread); the run-time test of disjoint memory runs the loop as written.
    The call refuses the shared array (a race) unless the race check is off."""
    rng = np.random.default_rng(13)
    n = 17
    w, x0 = rng.random((n, n)), rng.random(n)
    res = []
    for env in ({}, {"tile": False}, {"nests": False}):
        x = x0.copy()
        with tack.config.override(race_analysis="off", num_threads=1, **env):
            tack.kernel(forward)(x, w, x)
        res.append(x)
    ref = x0.copy()
    for j in range(1, n):
        s = 0.0
        for k in range(n):
            s += w[k, j] * ref[k]
        ref[j] = 1.0 / (1.0 + math.exp(-s))
    for r in res:
        assert np.array_equal(r, ref)


@needs_pass
@pytest.mark.parametrize("fn", [rows_sum, last_k, branchy, serial_sum])
def test_not_jammed(fn):
    rng = np.random.default_rng(14)
    a = rng.random((9, 9))
    assert MARK not in tack.kernel(fn).generated_source(a, np.zeros(9))
    _all_same(fn, [a, np.zeros(9)])


@needs_pass
def test_float16_sum_left_alone():
    """A float16 local would be rounded by its lane's store: not jammed."""
    def half_sum(a, out):
        for j in range(a.shape[1]):
            s = tack.f16(0.0)
            for k in range(a.shape[0]):
                s = tack.f16(s + a[k, j])
            out[j] = s
    a = np.random.default_rng(15).random((9, 5)).astype(np.float16)
    assert MARK not in tack.kernel(half_sum).generated_source(a, np.zeros(5, np.float16))
    _all_same(half_sum, [a, np.zeros(5, np.float16)])


@needs_pass
def test_serial_loop_polls_for_its_lanes():
    """The jammed loop charges each iteration's lanes to its polls (IR_FOR aux)."""
    import re
    x, w, h = np.zeros(9, np.float32), np.zeros((9, 17), np.float32), np.zeros(17, np.float32)
    src = tack.kernel(forward).generated_source(x, w, h)
    jammed = src[src.index(MARK):]
    assert re.search(r"TK_POLL\(\(e\d+ - s\d+\) \* w\d+\)", jammed)
    assert re.search(r"v\d+_tk_work = \(\(int64_t\)16LL\);", jammed)


def pairs(x, m, out):  # an n-body's form: no check in the body, the emitter's lanes already
    for i in range(x.shape[0]):
        xi = x[i]
        s = 0.0
        for j in range(x.shape[0]):
            d = x[j] - xi
            s += m[j] * d * d
        out[i] = s


@needs_pass
def test_check_free_body_left_to_the_emitters_lanes():
    rng = np.random.default_rng(16)
    x, m = rng.random(40), rng.random(40)
    src = tack.kernel(pairs).generated_source(x, m, np.zeros(40))
    assert MARK not in src and "#pragma omp simd" in src
    _all_same(pairs, [x, m, np.zeros(40)])
