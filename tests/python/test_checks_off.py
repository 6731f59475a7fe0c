"""Kernels compiled with checks=False (src/compiler/passes/checks.c).

checks=False removes the bounds checks, not Python's meaning of an index: a
negative index still counts from the end.  The wrap that does that goes
wherever the index cannot be negative -- with checks on or off -- so a loop
over `range(n)` reads `a[i]` as a plain offset the C compiler vectorizes.
(Without checks the wraps used to stay, and a kernel without checks ran up
to 40x slower than the same kernel with them: benchmarks/checks_cost.py.)
"""
import re

import numpy as np
import pytest

import tack


def saxpy(a, x, y):
    for i in range(y.shape[0]):
        y[i] = a * x[i] + y[i]


def taps(a, out):
    for i in range(out.shape[0]):
        for d in range(3):
            out[i] += a[i + d]


def through_local(a, out):
    for i0 in range(out.shape[0]):
        i = i0 + 1
        out[i0] = a[i - 1] + a[i]


def back(a, out):  # i - 1 is -1 at i = 0: Python's a[-1], the last element
    for i in range(out.shape[0]):
        out[i] = a[i - 1]


def reversed_(a, out):  # -1 - i: every index negative
    for i in range(out.shape[0]):
        out[i] = a[-1 - i]


def loaded(a, idx, out):  # an index loaded from an array may be negative
    for i in range(out.shape[0]):
        out[i] = a[idx[i]]


def _pfor(src):
    """The parallel loop's function in the generated source."""
    return src[src.index("static void tk_pfor0"):src.index("tack_entry")]


@pytest.mark.parametrize("fn,args", [
    (saxpy, (2.0, np.ones(8), np.ones(8))),
    (taps, (np.ones(10), np.zeros(8))),
    (through_local, (np.ones(9), np.zeros(8))),
])
def test_no_wrap_where_the_index_cannot_be_negative(fn, args):
    src = tack.kernel(fn, checks=False).generated_source(*args)
    assert "tk_wrap" not in _pfor(src)


@pytest.mark.parametrize("fn,args", [
    (back, (np.ones(8), np.zeros(8))),
    (reversed_, (np.ones(8), np.zeros(8))),
    (loaded, (np.ones(8), np.zeros(8, np.int64), np.zeros(8))),
])
def test_wrap_stays_where_it_may_be_negative(fn, args):
    src = tack.kernel(fn, checks=False).generated_source(*args)
    assert re.search(r"tk_wrap\(", _pfor(src))


@pytest.mark.parametrize("checks", [True, False])
def test_negative_indices_still_count_from_the_end(checks):
    a = np.arange(10.0)
    out = np.zeros(10)
    tack.kernel(back, checks=checks)(a, out)
    assert np.array_equal(out, a[np.arange(10) - 1])
    out = np.zeros(10)
    tack.kernel(reversed_, checks=checks)(a, out)
    assert np.array_equal(out, a[::-1])
    idx = np.array([-1, -10, 0, 9, -5, 3, 2, 1, 0, -2])
    out = np.zeros(10)
    tack.kernel(loaded, checks=checks)(a, idx, out)
    assert np.array_equal(out, a[idx])


@pytest.mark.parametrize("fn,args", [
    (saxpy, lambda r: (1.5, r.random(37), r.random(37))),
    (taps, lambda r: (r.random(40), r.random(38))),
    (through_local, lambda r: (r.random(38), np.zeros(37))),
    (back, lambda r: (r.random(37), np.zeros(37))),
])
def test_checks_off_same_results(fn, args):
    """Differential: with checks and without, in bounds, the same bits."""
    on = list(args(np.random.default_rng(30)))
    off = list(args(np.random.default_rng(30)))
    tack.kernel(fn)(*on)
    tack.kernel(fn, checks=False)(*off)
    for a, b in zip(on, off):
        assert np.array_equal(a, b)


def test_checks_on_still_raises():
    """The same kernel with checks raises where the index is past the end."""
    with pytest.raises(IndexError, match="index 10"):
        tack.kernel(taps)(np.ones(10), np.zeros(9))
