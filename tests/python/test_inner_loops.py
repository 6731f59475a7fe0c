"""Innermost serial loops (emit_stmt.c, emit_for): a loop with no loop in its body
runs as a plain loop after one poll when its trip fits one strip (TK_STRIP,
65536 iterations), and strip-mined, polling every strip, when longer.  Both
copies must give Python's answer: trips of 0, 1, around the strip and well
past it, steps other than 1, negative steps, `break` and `continue`.

Python's answer is the plain function run by CPython.  Debug mode (jit=False)
must give it too, but only on the short trips: the strip exists only in the
generated C, debug mode runs every trip the same way, and it takes about a
hundred times CPython's time a iteration (six seconds for the 786,432
iterations of the longest case), so the trips around the strip prove nothing
more about it."""
import re

import numpy as np
import pytest

import tack


def _both(fn):
    return tack.kernel(fn), tack.kernel(fn, jit=False)


def _walk(out, lo, hi, st):
    for i in range(out.shape[0]):
        s = 0
        c = 0
        for k in range(lo + i, hi, st):
            s += k % 7
            c += 1
        out[i, 0] = s
        out[i, 1] = c


def _early(out, lo, hi, stop_at):
    for i in range(out.shape[0]):
        s = 0
        for k in range(lo, hi):
            if k % 5 == 0:
                continue
            if k >= stop_at + i:
                break
            s += k
        out[i] = s


walk, walk_py = _both(_walk)
early, early_py = _both(_early)

STRIP = 65536
# Debug mode is compared on the trips of at most this many iterations a row.
DEBUG_TRIPS = 1000


@pytest.mark.parametrize("lo,hi,st", [
    (0, 0, 1), (0, 1, 1), (0, STRIP - 1, 1), (0, STRIP, 1), (0, STRIP + 1, 1), (-5, 3 * STRIP + 11, 1),
    (3, 200_000, 3), (0, 2 * STRIP, 2), (STRIP + 3, -7, -1), (10, 0, -3), (5, 5, -1),
])
def test_trips_around_one_strip(lo, hi, st):
    got, want = np.zeros((3, 2), np.int64), np.zeros((3, 2), np.int64)
    walk(got, lo, hi, st)
    _walk(want, lo, hi, st)
    np.testing.assert_array_equal(got, want)
    if len(range(lo, hi, st)) <= DEBUG_TRIPS:
        debug = np.zeros((3, 2), np.int64)
        walk_py(debug, lo, hi, st)
        np.testing.assert_array_equal(debug, want)


@pytest.mark.parametrize("lo,hi,stop_at", [(0, 100, 50), (0, STRIP + 100, STRIP + 7), (0, 3 * STRIP, 10**9),
                                           (7, 8, 0), (0, 0, 0)])
def test_break_and_continue_in_both_copies(lo, hi, stop_at):
    got, want = np.zeros(4, np.int64), np.zeros(4, np.int64)
    early(got, lo, hi, stop_at)
    _early(want, lo, hi, stop_at)
    np.testing.assert_array_equal(got, want)
    if len(range(lo, hi)) <= DEBUG_TRIPS:
        debug = np.zeros(4, np.int64)
        early_py(debug, lo, hi, stop_at)
        np.testing.assert_array_equal(debug, want)


@pytest.mark.optimized_source
def test_one_strip_copy_is_emitted_for_innermost_loops_only():
    src = walk.generated_source(np.zeros((3, 2), np.int64), 0, 10, 1, target="c")
    # non-unit step: the trip count's copy, once in each chunk function (the loop writes out's
    # columns 0 and 1, so it also has a version for records of exactly two: emit_cpu.c, tk_pfor0_r)
    chunks = len(re.findall(r"static void tk_pfor0\w*\(", src))
    assert chunks == 2
    assert src.count("<= TK_STRIP) {") == chunks
    src = early.generated_source(np.zeros(4, np.int64), 0, 10, 5, target="c")
    assert src.count("<= (uint64_t)TK_STRIP) {") == 1


MARK = "iterations independent (emit.c)"


def _rows(a, out):
    for i0 in range(a.shape[0] - 2):
        for j0 in range(a.shape[1] - 2):
            for k0 in range(a.shape[2] - 2):
                i = i0 + 1
                j = j0 + 1
                k = k0 + 1
                out[i, j, k] = (a[i + 1, j, k] + a[i - 1, j, k] + a[i, j + 1, k] + a[i, j - 1, k]
                                + a[i, j, k + 1] + a[i, j, k - 1] - 6.0 * a[i, j, k])


def _live_out(x, out, last):
    for i in range(x.shape[0]):
        t = 0.0
        k = -1
        for k in range(x.shape[1]):
            t = x[i, k] * 2.0
            out[i, k] = t + 1.0
        last[i] = t + k


def _reduce(x, out):
    for i in range(x.shape[0]):
        s = 0.0
        for k in range(x.shape[1]):
            s += x[i, k]
        out[i] = s


def _carried(a, b):
    for i in range(a.shape[0]):
        for k in range(a.shape[1] - 1):
            a[i, k + 1] = a[i, k] + b[i, k]


def _same_cell(x, out):
    for i in range(x.shape[0]):
        for k in range(x.shape[1]):
            out[i] = x[i, k]


def _strided(x, out):
    for i in range(x.shape[0]):
        for k in range(x.shape[1] // 2):
            out[i, 2 * k] = x[i, k]


rows, rows_py = _both(_rows)
live_out, live_out_py = _both(_live_out)
reduce_, reduce_py = _both(_reduce)
carried, carried_py = _both(_carried)
same_cell, same_cell_py = _both(_same_cell)
strided, strided_py = _both(_strided)


@pytest.mark.parametrize("n,dt", [(16, np.float64), (40, np.float32), (7, np.float64), (3, np.float64)])
def test_independent_rows_run_in_lanes_and_match_numpy(n, dt):
    a = np.random.default_rng(n).random((n, n + 3, n + 5)).astype(dt)
    out = np.zeros_like(a)
    assert MARK in rows.generated_source(a, out, target="c")
    rows(a, out)
    want = np.zeros_like(a)
    c = a[1:-1, 1:-1, 1:-1]
    want[1:-1, 1:-1, 1:-1] = (a[2:, 1:-1, 1:-1] + a[:-2, 1:-1, 1:-1] + a[1:-1, 2:, 1:-1] + a[1:-1, :-2, 1:-1]
                              + a[1:-1, 1:-1, 2:] + a[1:-1, 1:-1, :-2] - 6.0 * c)
    np.testing.assert_allclose(out, want, rtol=1e-6 if dt == np.float32 else 1e-13)
    # the same array for both: not restrict, no lanes, still right
    b = a.copy()
    assert MARK not in rows.generated_source(b, b, target="c")


@pytest.mark.parametrize("m", [0, 1, 5, 67])
def test_values_left_by_the_loop_are_the_last_iteration_s(m):
    x = np.random.default_rng(m).random((9, m))
    got = (np.zeros((9, m)), np.zeros(9))
    want = (np.zeros((9, m)), np.zeros(9))
    assert MARK in live_out.generated_source(x, *got, target="c")
    live_out(x, *got)
    live_out_py(x, *want)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("kernel,pykernel,make", [
    (reduce_, reduce_py, lambda r: (r.random((5, 300)), np.zeros(5))),
    (carried, carried_py, lambda r: (r.random((5, 300)), r.random((5, 300)))),
    (same_cell, same_cell_py, lambda r: (r.random((5, 300)), np.zeros(5))),
    (strided, strided_py, lambda r: (r.random((5, 300)), np.zeros((5, 300)))),
])
def test_dependent_iterations_stay_in_order(kernel, pykernel, make):
    """A carried sum, a carried element, one cell written by every
    iteration, a store the rule cannot prove injective: no pragma, and
    Python's answer bit for bit."""
    args = make(np.random.default_rng(3))
    assert MARK not in kernel.generated_source(*args, target="c")
    got = [a.copy() for a in args]
    want = [a.copy() for a in args]
    kernel(*got)
    pykernel(*want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


# ---- how much of a nest is written twice (emit_stmt.c, TK_PLAIN_BODY_MAX)

PLAIN = "<= (uint64_t)TK_STRIP) {"  # the plain copy of a step-1 loop


def _long_body(x, n, out):
    for i in range(out.shape[0]):
        s = x[i, 0]
        t = x[i, 1]
        for k in range(n):  # a long scalar body, carried: past the budget, strips only
            s = s * 0.5 + x[i, k % 7] * 1.25 - t
            t = t * 0.25 + s * x[i, (k + 1) % 7]
            s = s - t * x[i, (k + 2) % 7] + 0.125
            t = t + s * 0.75 - x[i, (k + 3) % 7]
            s = s * 0.5 + x[i, (k + 4) % 7] * t
            t = t * 0.25 - s + x[i, (k + 5) % 7]
            s = s + t * x[i, (k + 6) % 7] - 0.5
            t = t - s * 0.125 + x[i, k % 7]
            s = s * 0.75 + t * x[i, (k + 1) % 7]
            t = t * 0.5 - s * x[i, (k + 2) % 7]
            s = s * 0.5 + x[i, k % 7] * 1.25 - t
            t = t * 0.25 + s * x[i, (k + 1) % 7]
            s = s - t * x[i, (k + 2) % 7] + 0.125
            t = t + s * 0.75 - x[i, (k + 3) % 7]
            s = s * 0.5 + x[i, (k + 4) % 7] * t
            t = t * 0.25 - s + x[i, (k + 5) % 7]
            s = s + t * x[i, (k + 6) % 7] - 0.5
            t = t - s * 0.125 + x[i, k % 7]
            s = s * 0.75 + t * x[i, (k + 1) % 7]
            t = t * 0.5 - s * x[i, (k + 2) % 7]
        out[i] = s + t


def _short_body(x, n, out):
    for i in range(out.shape[0]):
        s = x[i, 0]
        for k in range(n):  # the same loop with one statement: both copies
            s = s * 0.5 + x[i, k % 7] * 1.25
        out[i] = s


long_body, long_body_py = _both(_long_body)
short_body, short_body_py = _both(_short_body)


@pytest.mark.optimized_source
@pytest.mark.parametrize("n", [0, 1, 9])
def test_a_long_scalar_body_is_written_once_with_python_s_answer(n):
    x = np.random.default_rng(n).random((3, 7))
    assert PLAIN in short_body.generated_source(x, n, np.zeros(3), target="c")
    assert PLAIN not in long_body.generated_source(x, n, np.zeros(3), target="c")
    for k, kp in ((long_body, long_body_py), (short_body, short_body_py)):
        got, want = np.zeros(3), np.zeros(3)
        k(x, n, got)
        kp(x, n, want)
        np.testing.assert_array_equal(got, want)


def _nest1(x, n, y):
    for i in range(y.shape[0]):
        s = 0.0
        for a in range(n):
            s = s * 0.5 + x[i, a]
        y[i] = s


def _nest5(x, n, y):
    for i in range(y.shape[0]):
        s = 0.0
        for a in range(n):
            for b in range(n):
                for c in range(n):
                    for d in range(n):
                        for e in range(n):
                            s = s * 0.5 + x[i, a] + x[i, b] + x[i, c] + x[i, d] + x[i, e]
        y[i] = s


nest1, nest1_py = _both(_nest1)
nest5, nest5_py = _both(_nest5)


@pytest.mark.optimized_source
def test_a_deep_nest_has_one_plain_copy_and_linear_source():
    """Five serial loops deep: only the innermost has a second copy, so the C grows by a loop
    level's lines per level (3.1x the one-loop kernel's C, prelude included; 2.4x without the
    chunk's copy of the nest, emit_cpu.c), not by a factor per level (2^4 = 16x more if each
    level were written twice); Python's results."""
    x = np.random.default_rng(5).random((3, 4))
    one = nest1.generated_source(x, 3, np.zeros(3), target="c")
    five = nest5.generated_source(x, 3, np.zeros(3), target="c")
    # one innermost loop, in each of the nest's three versions (its checks tested once, and as
    # written: nests.c; the first alone, in the chunk whose rows all pass: emit_cpu.c), and no
    # other loop with a second copy
    assert one.count(PLAIN) == 1 and five.count(PLAIN) <= 3
    assert five.count("for (int64_t k") <= 3 * 5 + 3
    assert len(five) < 4 * len(one), (len(one), len(five))
    for n in (0, 1, 3):
        got, want = np.zeros(3), np.zeros(3)
        nest5(x, n, got)
        nest5_py(x, n, want)
        np.testing.assert_array_equal(got, want)
