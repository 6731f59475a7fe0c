"""A running min/max per chunk for tack.atomic_min/max into a fixed cell
(src/compiler/passes/privatize.c).

`tack.atomic_max(err, 0, abs(new[i] - old[i]))` in a parallel loop keeps a
private running max per chunk on the CPU, flushed with one atomic max at the
chunk's end, when the array is used in the loop only by such statements.
The results must be the atomics' own: a NaN value stores nothing, a NaN cell
stays NaN, a zero equal to the cell leaves it (first zero wins), and a chunk
that never reaches the statement leaves the cell as it was.  Each compiled
kernel is checked against debug mode (jit=False) and NumPy.
"""

import numpy as np
import pytest

import tack

MARKER = "private running"


@tack.kernel
def amax(x, out):
    for i in range(x.shape[0]):
        tack.atomic_max(out, 0, x[i])


@tack.kernel
def amin(x, out):
    for i in range(x.shape[0]):
        tack.atomic_min(out, 0, x[i])


@tack.kernel
def err_max(new, old, err):
    for i in range(new.shape[0]):
        tack.atomic_max(err, 0, abs(new[i] - old[i]))


@tack.kernel
def max_above(x, lim, out):
    for i in range(x.shape[0]):
        if x[i] > lim:
            tack.atomic_max(out, 0, x[i])
            tack.atomic_min(out, 1, x[i])


@tack.kernel
def extremes_and_count(x, ext, cnt):
    for i in range(x.shape[0]):
        tack.atomic_min(ext, 0, x[i])
        tack.atomic_max(ext, 1, x[i])
        cnt[0] += 1


@tack.kernel
def max_at(x, j, out):
    for i in range(x.shape[0]):
        tack.atomic_min(out, 0, x[i])
        tack.atomic_max(out, j, x[i])


@tack.kernel
def max_and_old(x, out, olds):
    for i in range(x.shape[0]):
        olds[i] = tack.atomic_max(out, 0, x[i])


def _debug(k):
    return tack.kernel(k.__wrapped__, jit=False)


def _both(k, *args):
    """The kernel compiled and in debug mode on copies of args: (compiled, debug)."""
    a = [np.copy(x) if isinstance(x, np.ndarray) else x for x in args]
    b = [np.copy(x) if isinstance(x, np.ndarray) else x for x in args]
    k(*a)
    _debug(k)(*b)
    return a, b


def _same(x, y):
    """Bitwise equal (NaN payloads and zero signs too)."""
    assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), (x, y)


DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint32]


def _data(dt, n, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dt).kind == "f":
        x = rng.standard_normal(n).astype(dt) * 100
        x[rng.integers(0, n, n // 50)] = np.nan
        x[rng.integers(0, n, 8)] = 0.0
        return x
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -(10**6)), min(info.max, 10**6), n).astype(dt)


def _extreme(dt, biggest):
    if np.dtype(dt).kind == "f":
        return np.inf if biggest else -np.inf
    return np.iinfo(dt).max if biggest else np.iinfo(dt).min


@pytest.mark.parametrize("dt", DTYPES)
def test_min_max_match_numpy_and_debug(dt):
    """Many chunks on 2 and 3 threads, NaN in the float data (ignored: the atomic stores nothing)."""
    x = _data(dt, 300_000, 1)
    small = _data(dt, 300, 2)  # one chunk, debug mode is quick
    for threads in (2, 3):
        with tack.config.override(num_threads=threads):
            for k, start, want in [(amax, _extreme(dt, False), np.nanmax(x)), (amin, _extreme(dt, True), np.nanmin(x))]:
                out = np.array([start], dt)
                k(x, out)
                _same(out, np.array([want], dt))
    for k, start, want in [(amax, _extreme(dt, False), np.nanmax(small)), (amin, _extreme(dt, True), np.nanmin(small))]:
        a, b = _both(k, small, np.array([start], dt))
        _same(a[1], b[1])
        _same(a[1], np.array([want], dt))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_nan_cell_and_signed_zeros_as_the_atomics(dt):
    """A NaN cell stays NaN; a zero equal to the cell or to the running value leaves it (the first
    zero wins in one chunk); compiled, debug mode and the atomics' rule all agree."""
    z, nz = np.array([0.0, -0.0], dt)
    cases = [
        (amax, [np.nan], np.array([1.0, 5.0, np.nan], dt)),
        (amin, [np.nan], np.array([1.0, -5.0], dt)),
        (amax, [0.0], np.array([-0.0, -0.0, -1.0], dt)),   # +0 stays
        (amax, [-0.0], np.array([0.0, -3.0], dt)),         # -0 stays
        (amin, [0.0], np.array([-0.0, 2.0], dt)),          # +0 stays
        (amin, [-0.0], np.array([0.0, np.nan], dt)),       # -0 stays
        (amax, [-np.inf], np.array([-0.0, 0.0, -1.0], dt)),  # the first zero: -0
        (amax, [-np.inf], np.array([np.nan, 0.0, -0.0], dt)),  # +0
        (amin, [np.inf], np.array([0.0, -0.0, 1.0], dt)),    # +0
        (amin, [np.inf], np.array([-0.0, 0.0], dt)),         # -0
        (amax, [-np.inf], np.array([np.nan, np.nan], dt)),   # NaN only: nothing stored
        (amin, [7.0], np.array([], dt)),
    ]
    for k, start, x in cases:
        a, b = _both(k, x, np.array(start, dt))
        _same(a[1], b[1])
    # the first zero, by the bits
    a, _ = _both(amax, np.array([-0.0, 0.0], dt), np.array([-np.inf], dt))
    assert np.signbit(a[1][0])
    a, _ = _both(amin, np.array([0.0, -0.0], dt), np.array([np.inf], dt))
    assert not np.signbit(a[1][0]) and a[1][0] == z == nz
    # many chunks, only zeros of one sign after the start: the cell keeps its own zero
    many = np.full(200_000, -0.0, dt)
    with tack.config.override(num_threads=3):
        out = np.array([0.0], dt)
        amax(many, out)
        assert out[0] == 0 and not np.signbit(out[0])
        out = np.array([np.nan], dt)
        amax(many, out)
        assert np.isnan(out[0])


@pytest.mark.parametrize("dt", DTYPES)
def test_chunks_that_never_reach_leave_the_cell(dt):
    """Only the values above `lim` reach the statements, all in one short stretch: most chunks never
    do, and the cells start at the type's extremes (a start other than the identity would move them)."""
    n = 250_000
    x = np.zeros(n, dt)
    x[123_456:123_466] = np.arange(10, 20).astype(dt)
    with tack.config.override(num_threads=3):
        for lim, want in [(dt(5), (19, 10)), (dt(50), None)]:
            start = np.array([_extreme(dt, False), _extreme(dt, True)], dt)
            out = start.copy()
            max_above(x, lim, out)
            _same(out, start if want is None else np.array(want, dt))
    a, b = _both(max_above, x[123_000:124_000], dt(5), np.array([_extreme(dt, False), _extreme(dt, True)], dt))
    _same(a[2], b[2])
    _same(a[2], np.array([19, 10], dt))


def test_jacobi_convergence_max():
    rng = np.random.default_rng(3)
    new, old = rng.random(100_000), rng.random(100_000)
    err = np.zeros(1)
    with tack.config.override(num_threads=2):
        err_max(new, old, err)
    assert err[0] == np.abs(new - old).max()
    a, b = _both(err_max, new[:500], old[:500], np.zeros(1))
    _same(a[2], b[2])


def test_min_and_max_cells_of_one_array_with_a_count():
    """extremes[0] min'd, extremes[1] max'd, a count in another array: each its own running value."""
    x = _data(np.float64, 200_000, 4)
    ext, cnt = np.array([np.inf, -np.inf]), np.zeros(1, np.int64)
    extremes_and_count(x, ext, cnt)
    _same(ext, np.array([np.nanmin(x), np.nanmax(x)]))
    assert cnt[0] == x.size
    a, b = _both(extremes_and_count, x[:400], np.array([np.inf, -np.inf]), np.zeros(1, np.int64))
    _same(a[1], b[1])
    _same(a[2], b[2])


def test_other_uses_keep_their_atomics():
    """A min and a max whose cells may be one (an index the loop does not know), or the old value
    used: per-element atomics, still the right answers."""
    x = _data(np.int32, 100_000, 5)
    out = np.array([0, 0], np.int32)
    max_at(x, 1, out)
    _same(out, np.array([min(0, x.min()), max(0, x.max())], np.int32))
    for j in (0, 1):  # one chunk: in order, as debug mode (j = 0 interleaves a min and a max on one cell)
        a, b = _both(max_at, x[:300], j, np.array([0, 0], np.int32))
        _same(a[2], b[2])
    out, olds = np.array([-(10**7)], np.int32), np.zeros(x.size, np.int32)
    max_and_old(x, out, olds)
    assert out[0] == x.max() and (olds <= x.max()).all()


@pytest.mark.optimized_source
def test_generated_c_has_one_atomic_per_chunk():
    def chunk(src):
        return src[src.index("static void tk_pfor0"):src.index("tack_entry")]

    x = np.zeros(8)
    for k, args, n_min, n_max in [
        (amax, (x, np.zeros(1)), 0, 1),
        (amin, (x.astype(np.int32), np.zeros(1, np.int32)), 1, 0),
        (max_above, (x.astype(np.uint32), np.uint32(1), np.zeros(2, np.uint32)), 1, 1),
        (extremes_and_count, (x, np.zeros(2), np.zeros(1, np.int64)), 1, 1),
    ]:
        c = chunk(k.generated_source(*args))
        assert c.count(MARKER) == n_min + n_max, c
        # the one call of each is the flush after the chunk's loop
        assert c.count("tk_atomic_min_") == n_min and c.count("tk_atomic_max_") == n_max, c
        tail = c[c.rindex("    }\n"):]
        assert tail.count("tk_atomic_m") == n_min + n_max, c
    for k, args in [(max_at, (x, 1, np.zeros(2))), (max_and_old, (x, np.zeros(1), np.zeros(8)))]:
        assert MARKER not in chunk(k.generated_source(*args))


@tack.kernel
def cfl_speed(h, hu, hv, g, smax):
    ny, nx = h.shape
    for i, j in tack.ndrange((1, ny - 1), (1, nx - 1)):
        c = np.sqrt(g * h[i, j])
        tack.atomic_max(smax, 0, max(abs(hu[i, j] / h[i, j]) + c, abs(hv[i, j] / h[i, j]) + c))


@tack.kernel
def max_and_store(x, out, y):
    for i in range(x.shape[0]):
        y[i] = 2 * x[i]
        tack.atomic_max(out, 0, x[i])


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_a_zero_result_in_lanes_keeps_the_first_zeros_sign(dt):
    """A float running max/min runs in SIMD lanes, whose maxima combine in another order than the
    iterations': where the result is a zero the loop runs again in order, so the first zero's sign
    wins as with the atomics in order.  Zeros of both signs far apart (other lanes), NaNs between."""
    rng = np.random.default_rng(7)
    n = 4099
    for k, sign in ((amax, -1), (amin, 1)):
        start = np.array([_extreme(dt, k is amin)], dt)
        for first, later in ((-0.0, 0.0), (0.0, -0.0)):
            x = (sign * (rng.random(n) + 0.5)).astype(dt)
            x[rng.integers(0, n, 40)] = np.nan
            x[37], x[1000], x[4001] = first, later, later
            with tack.config.override(num_threads=1):
                out = start.copy()
                k(x, out)
            assert out[0] == 0 and np.signbit(out[0]) == np.signbit(first), (k, first)
            a, b = _both(k, x, start)
            _same(a[1], b[1])
    # a non-zero result is the one value it can be, at every width and thread count
    x = _data(dt, 100_003, 8)
    for threads in (1, 2):
        with tack.config.override(num_threads=threads):
            out = np.array([-np.inf], dt)
            amax(x, out)
            _same(out, np.array([np.nanmax(x)], dt))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_a_cfl_max_over_a_grid_is_numpys(dt):
    """A shallow-water CFL condition: divisions and square roots per cell, the maximum over the
    interior of a grid (rows of the ndrange), bit for bit NumPy's and debug mode's."""
    rng = np.random.default_rng(9)
    h = (1 + rng.random((67, 131))).astype(dt)
    hu, hv = rng.standard_normal((2, 67, 131)).astype(dt)
    g = dt(9.81)
    hi, ui, vi = h[1:-1, 1:-1], hu[1:-1, 1:-1], hv[1:-1, 1:-1]
    c = np.sqrt(g * hi)
    want = np.maximum(np.abs(ui / hi) + c, np.abs(vi / hi) + c).max()
    for threads in (1, 2):
        with tack.config.override(num_threads=threads):
            out = np.zeros(1, dt)
            cfl_speed(h, hu, hv, g, out)
            _same(out, np.array([want], dt))
    a, b = _both(cfl_speed, h[:9, :20], hu[:9, :20], hv[:9, :20], g, np.zeros(1, dt))
    _same(a[4], b[4])


@pytest.mark.optimized_source
def test_running_min_max_loops_run_in_lanes():
    """The running value is a lanes' reduction(max/min); a float one is run again in order when it
    ends at zero, so its body must store nothing and keep no sum: those stay in order."""
    x = np.zeros(8)
    src = amax.generated_source(x, np.zeros(1))
    assert "reduction(max: " in src and "again in order" in src
    src = amin.generated_source(x.astype(np.int32), np.zeros(1, np.int32))
    assert "reduction(min: " in src and "again in order" not in src   # an integer: exact in any order
    for k, args in [(max_and_store, (x, np.zeros(1), np.zeros(8))),
                    (extremes_and_count, (x, np.zeros(2), np.zeros(1, np.int64)))]:
        src = k.generated_source(*args)
        assert "reduction(max: " not in src and "reduction(min: " not in src, k
    a, b = _both(max_and_store, np.arange(50.0) - 60, np.array([-np.inf]), np.zeros(50))
    _same(a[1], b[1])
    _same(a[2], b[2])
