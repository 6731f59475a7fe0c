"""Innermost serial loops (emit.c, emit_for): a loop with no loop in its body
runs as a plain loop after one poll when its trip fits one strip (TK_STRIP,
65536 iterations), and strip-mined, polling every strip, when longer.  Both
copies must give Python's answer: trips of 0, 1, around the strip and well
past it, steps other than 1, negative steps, `break` and `continue`."""
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


@pytest.mark.parametrize("lo,hi,st", [
    (0, 0, 1), (0, 1, 1), (0, STRIP - 1, 1), (0, STRIP, 1), (0, STRIP + 1, 1), (-5, 3 * STRIP + 11, 1),
    (3, 200_000, 3), (0, 2 * STRIP, 2), (STRIP + 3, -7, -1), (10, 0, -3), (5, 5, -1),
])
def test_trips_around_one_strip(lo, hi, st):
    got, want = np.zeros((3, 2), np.int64), np.zeros((3, 2), np.int64)
    walk(got, lo, hi, st)
    walk_py(want, lo, hi, st)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("lo,hi,stop_at", [(0, 100, 50), (0, STRIP + 100, STRIP + 7), (0, 3 * STRIP, 10**9),
                                           (7, 8, 0), (0, 0, 0)])
def test_break_and_continue_in_both_copies(lo, hi, stop_at):
    got, want = np.zeros(4, np.int64), np.zeros(4, np.int64)
    early(got, lo, hi, stop_at)
    early_py(want, lo, hi, stop_at)
    np.testing.assert_array_equal(got, want)


@pytest.mark.optimized_source
def test_one_strip_copy_is_emitted_for_innermost_loops_only():
    src = walk.generated_source(np.zeros((3, 2), np.int64), 0, 10, 1, target="c")
    assert src.count("<= TK_STRIP) {") == 1  # non-unit step: the trip count's copy
    src = early.generated_source(np.zeros(4, np.int64), 0, 10, 5, target="c")
    assert src.count("<= (uint64_t)TK_STRIP) {") == 1
