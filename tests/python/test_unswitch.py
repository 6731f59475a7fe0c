"""A chunk whose iterations all pass their loops' index tests (nests.c's `ck`, emit_cpu.c).

nests.c versions a serial loop at the top of a parallel loop's body on the
iteration's indices: `if (in bounds) { the loop without checks } else { the
loop as written }`.  When that test names only the parallel loop's variable
and fixed values, the chunk function first tests it for each of its
iterations and, where all pass, runs a copy of its loop with the check-free
branch alone (the clean copy); otherwise the loop as it was, each iteration
choosing.  These tests run both ways: every iteration passing (the clean
copy, the same bits as without it), an iteration whose test fails in one
chunk while its accesses stay in bounds (the conservative test: the loop as
written, correct results), and an index out of bounds in one chunk (the same
IndexError, from the same iteration, after the same writes, as without the
copy).  tack.config.unswitch turns the copy off (TACK_UNSWITCH=0); the tests
compare with it, in this process.
"""
import numpy as np
import pytest

import tack

OPTIMIZED = tack.config.optimize and tack.config.nests and tack.config.unswitch
needs_copy = pytest.mark.skipif(not OPTIMIZED, reason="the copy is off (TACK_OPT=0, TACK_NESTS=0 or TACK_UNSWITCH=0)")
CLEAN = "a copy without them (nests.c's ck)"


# Each point sums w[j, f] * x[i + j, f]: the check of i + j stays in the j loop (checks.c takes
# it out of the f loop only), and nests.c versions the j loop on i + len(w) - 1 < len(x).
def window(x, w, out):
    for i in range(out.shape[0]):
        s = 0.0
        for j in range(w.shape[0]):
            for f in range(w.shape[1]):
                s += w[j, f] * x[i + j, f]
        out[i] = s


def window_from(x, w, out, lo):  # the parallel loop from a start given at run time (its `off`)
    for i in range(lo, out.shape[0]):
        s = 0.0
        for j in range(w.shape[0]):
            for f in range(w.shape[1]):
                s += w[j, f] * x[i + j, f]
        out[i] = s


def window_guarded(x, w, lim, out):  # the test covers x[i + j] under an `if` that keeps it in bounds
    for i in range(out.shape[0]):
        s = 0.0
        for j in range(w.shape[0]):
            for f in range(w.shape[1]):
                if i + j < lim[0]:
                    s += w[j, f] * x[i + j, f]
        out[i] = s


def nearest(feat, cent, member, counts):  # k-means' assignment: the centres' loop versioned per point
    for i in range(feat.shape[0]):
        best = 1e30
        bi = 0
        for c in range(cent.shape[0]):
            d = 0.0
            for f in range(feat.shape[1]):
                t = feat[i, f] - cent[c, f]
                d += t * t
            if d < best:
                best = d
                bi = c
        member[i] = bi
        counts[bi] += 1


def _run(fn, args, unswitch, threads=1):
    a = [np.copy(v) if isinstance(v, np.ndarray) else v for v in args]
    with tack.config.override(unswitch=unswitch, num_threads=threads):
        tack.kernel(fn)(*a)
    return a


def _message(fn, args, unswitch, threads=1):
    with tack.config.override(unswitch=unswitch, num_threads=threads):
        k = tack.kernel(fn)
        with pytest.raises(IndexError) as e:
            k(*args)
    return str(e.value)


def _window_ref(x, w, n, lim=None):
    """The kernel's sums in its order (j, then f, ascending within each point)."""
    out = np.zeros(n, x.dtype)
    for j in range(w.shape[0]):
        for f in range(w.shape[1]):
            keep = np.ones(n, bool) if lim is None else np.arange(n) + j < lim
            out = out + np.where(keep, w[j, f] * np.resize(x[j:j + n, f], n), 0.0)
    return out


@needs_copy
def test_clean_copy_in_source():
    """The chunk tests its iterations, then runs the copy or the loop as it was; the
    copy is there only with the setting on, and the row test reads only i and the
    launch's fixed part."""
    x, w, out = np.ones((40, 3)), np.ones((5, 3)), np.zeros(36)
    with tack.config.override(unswitch=True):
        src = tack.kernel(window).generated_source(x, w, out)
    assert src.count(CLEAN) == 1 and "ck_ &= (tk_bool)(" in src and "if (ck_) {" in src
    test = src.split("ck_ &= (tk_bool)(", 1)[1].split(";\n", 1)[0]
    assert "tk_rows_ok" in test and "a0[" not in test  # no loads: fixed values and i
    clean, rest = src.split("if (ck_) {", 1)[1].split("    } else {\n", 1)
    # the copy: the check-free loop alone, without the per-point test and the checked copy
    # (the check of f's range, before the j loop, stays in both)
    assert clean.count("index checks tested once (nests.c)") == 1 and "tk_rows_ok" not in clean
    assert "tk_rows_ok" in rest and clean.count("abi->fail(ctx") < rest.count("abi->fail(ctx")
    with tack.config.override(unswitch=False):
        assert CLEAN not in tack.kernel(window).generated_source(x, w, out)


@needs_copy
def test_histogram_loop_one_copy():
    """k-means' assignment (a count per centre: privatize.c's histogram versions) gets the
    copy once, in the version that keeps every private copy."""
    feat, cent = np.zeros((64, 6), np.float32), np.zeros((3, 6), np.float32)
    src = tack.kernel(nearest).generated_source(feat, cent, np.zeros(64, np.int32), np.zeros(3, np.int32))
    assert src.count(CLEAN) == 1


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n", [1, 2, 7, 300, 40_000])
def test_every_iteration_passes_same_bits(n, threads):
    """Every point in bounds: each chunk runs the copy; the bits are those without it."""
    rng = np.random.default_rng(n)
    x, w = rng.random((n + 4, 3)), rng.random((5, 3))
    on = _run(window, (x, w, np.zeros(n)), True, threads)[2]
    off = _run(window, (x, w, np.zeros(n)), False, threads)[2]
    assert np.array_equal(on, off) and np.allclose(on, _window_ref(x, w, n))


@pytest.mark.parametrize("lo", [0, 3, 299])
def test_loop_from_a_start_same_bits(lo):
    """range(lo, n): the chunk's iterations are i = lo + its indices."""
    rng = np.random.default_rng(lo)
    x, w = rng.random((304, 3)), rng.random((5, 3))
    on = _run(window_from, (x, w, np.zeros(300), lo), True)[2]
    off = _run(window_from, (x, w, np.zeros(300), lo), False)[2]
    assert np.array_equal(on, off) and np.allclose(on[lo:], _window_ref(x, w, 300)[lo:]) and not on[:lo].any()


@pytest.mark.parametrize("threads", [1, 2])
def test_conservative_test_fails_in_one_chunk(threads):
    """The last points' tests fail (x[i + j] could pass the end) but the `if` keeps every
    access in bounds: the chunk holding them runs the loop as written, the others the
    copy, and the results are correct."""
    n = 40_000
    rng = np.random.default_rng(5)
    x, w = rng.random((n + 2, 3)), rng.random((5, 3))  # 2 short of what the test asks at the end
    lim = np.array([n + 2])
    on = _run(window_guarded, (x, w, lim, np.zeros(n)), True, threads)[3]
    off = _run(window_guarded, (x, w, lim, np.zeros(n)), False, threads)[3]
    assert np.array_equal(on, off) and np.allclose(on, _window_ref(x, w, n, n + 2))


@pytest.mark.parametrize("short", [1, 3])
def test_out_of_bounds_same_error_same_writes(short):
    """x `short` elements too short: the last points read past its end.  On one thread the
    chunk's test fails and the loop runs as written: the same IndexError, and the points
    before the failing one written, as without the copy."""
    n = 300
    rng = np.random.default_rng(short)
    x, w = rng.random((n + 4 - short, 3)), rng.random((5, 3))
    a_on, a_off = [x, w, np.zeros(n)], [x, w, np.zeros(n)]
    m_on, m_off = _message(window, a_on, True), _message(window, a_off, False)
    assert m_on == m_off and f"index {n + 4 - short}" in m_on
    assert np.array_equal(a_on[2], a_off[2])
    first_bad = n - short
    assert np.allclose(a_on[2][:first_bad], _window_ref(x, w, first_bad)) and not a_on[2][first_bad:].any()


def test_out_of_bounds_in_one_chunk_of_many():
    """On two threads, the chunks without the bad point run the copy; the one with it
    raises the same IndexError as without the copy, and every cell both runs wrote
    holds the same value."""
    n = 40_000
    rng = np.random.default_rng(9)
    x, w = rng.random((n + 3, 3)), rng.random((5, 3))
    a_on, a_off = [x, w, np.zeros(n)], [x, w, np.zeros(n)]
    m_on, m_off = _message(window, a_on, True, 2), _message(window, a_off, False, 2)
    assert m_on == m_off and f"index {n + 3}" in m_on
    both = (a_on[2] != 0) & (a_off[2] != 0)
    assert np.array_equal(a_on[2][both], a_off[2][both])


def test_debug_mode_same_error():
    """Debug mode (jit=False) is the same language: the same IndexError (the compiled
    message adds the array, kernel and line)."""
    n = 50
    x, w = np.ones((n + 2, 3)), np.ones((5, 3))
    m_jit = _message(window, [x, w, np.zeros(n)], True)
    with pytest.raises(IndexError) as e:
        tack.kernel(window, jit=False)(x, w, np.zeros(n))
    assert m_jit.startswith(str(e.value)) and "index 52" in m_jit


@pytest.mark.parametrize("threads", [1, 2])
def test_nearest_same_as_numpy(threads):
    """k-means' assignment: the copy's members and counts are NumPy's."""
    rng = np.random.default_rng(3)
    feat = rng.random((20_000, 7), dtype=np.float32)
    cent = feat[:4].copy()
    member, counts = np.zeros(20_000, np.int32), np.zeros(4, np.int32)
    on = _run(nearest, (feat, cent, member, counts), True, threads)
    off = _run(nearest, (feat, cent, member, counts), False, threads)
    assert np.array_equal(on[2], off[2]) and np.array_equal(on[3], off[3])
    d = np.zeros((20_000, 4), np.float32)
    for f in range(7):  # the kernel's order of the f32 sums
        d += (feat[:, f:f + 1] - cent[:, f]) ** 2
    want = np.argmin(d, axis=1)
    assert np.array_equal(on[2], want) and np.array_equal(on[3], np.bincount(want, minlength=4))
