"""Checks on data verified a block at a time (src/compiler/cpu/emit_inner.c, verified_blocks).

When a parallel loop's body starts with checks that depend on loaded data
(`out[i] = x[idx[i]]`) and the rest could run in SIMD lanes, each block of
iterations is first scanned for failures; clean blocks run without those
checks, in lanes, and a block with a failure runs with them and reports it.  Results must equal NumPy's, and every bad value must still raise and
write nothing out of bounds.
"""
import os

import numpy as np
import pytest

import tack
from test_privatize import count

OPTIMIZED = os.environ.get("TACK_OPT") != "0"
MARKER = "verified a block at a time"


@tack.kernel
def gather(x, idx, out):
    for i in range(out.shape[0]):
        out[i] = x[idx[i]]


@tack.kernel
def gather2(x, idx, out):
    for i in range(out.shape[0]):
        j = idx[i]
        v = x[j]
        out[i] = x[v % x.shape[0]] + v


@tack.kernel
def checked_div(a, d, out):
    for i in range(a.shape[0]):
        assert d[i] != 7, "no sevens"
        out[i] = a[i] // d[i]


@pytest.mark.parametrize("n", [1, 5, 1023, 1024, 1025, 4096 + 17, 100_000])
def test_gather_matches_numpy(n):
    r = np.random.default_rng(n)
    x = r.random(300)
    idx = r.integers(-300, 300, n)
    out = np.zeros(n)
    gather(x, idx, out)
    np.testing.assert_array_equal(out, x[idx])


def test_chained_gathers():
    r = np.random.default_rng(1)
    x = r.integers(-50, 50, 97)
    idx = r.integers(-97, 97, 5000)
    out = np.zeros(5000, np.int64)
    gather2(x, idx, out)
    v = x[idx]
    np.testing.assert_array_equal(out, x[v % 97] + v)


@pytest.mark.parametrize("n", [3000, 1 << 20])
@pytest.mark.parametrize("where", [0, 1, 1023, 1024, 2047, -1])
def test_bad_index_raises_and_writes_nothing_outside(n, where):
    x = np.arange(10.0)
    idx = np.zeros(n, np.int64)
    idx[where] = 10
    out = np.full(n + 8, -1.0)
    with pytest.raises(IndexError, match="10"):
        gather(x, idx, out[:n])
    assert (out[n:] == -1.0).all()
    k = np.zeros(n, np.int32)
    k[where] = -9
    hist = np.zeros(12, np.int32)
    with pytest.raises(IndexError, match="-9"):
        count(k, hist[2:10])
    assert hist[0] == hist[1] == hist[10] == hist[11] == 0


@pytest.mark.parametrize("n", [10, 5000, 300_000])
def test_histogram_matches_bincount(n):
    keys = np.random.default_rng(n).integers(-64, 64, n).astype(np.int32)
    hist = np.zeros(64, np.int32)
    count(keys, hist)
    np.testing.assert_array_equal(hist, np.bincount(np.where(keys < 0, keys + 64, keys), minlength=64))


def test_assert_and_zero_division_in_the_prefix():
    a = np.arange(1, 3001, dtype=np.int64)
    d = np.full(3000, 3, np.int64)
    out = np.zeros(3000, np.int64)
    checked_div(a, d, out)
    np.testing.assert_array_equal(out, a // 3)
    d[2500] = 7
    with pytest.raises(AssertionError, match="no sevens"):
        checked_div(a, d, out)
    d[2500] = 0
    with pytest.raises(ZeroDivisionError):
        checked_div(a, d, out)


def test_index_loaded_from_a_written_array():
    x = np.arange(100, 200, dtype=np.int64)
    o = np.arange(5000, dtype=np.int64) % 100

    @tack.kernel
    def chase(x, o):
        for i in range(o.shape[0]):
            o[i] = x[o[i]]

    chase(x, o)
    np.testing.assert_array_equal(o, 100 + np.arange(5000) % 100)


@pytest.mark.optimized_source
def test_which_loops_are_verified_in_blocks():
    f, i = np.zeros(4), np.zeros(4, np.int64)
    src = gather.generated_source(f, i, f)
    assert MARKER in src
    fast = src[src.index("if (__builtin_expect(!bad_, 1))"):src.index("} else {", src.index("if (__builtin_expect(!bad_, 1))"))]
    assert "#pragma omp simd" in fast and "abi->fail" not in fast
    # a histogram's body cannot run in lanes anyway: its one branch costs less than a first pass
    assert MARKER not in count.generated_source(i.astype(np.int32), np.zeros(4, np.int32))

    @tack.kernel
    def chase(x, o):  # the index is loaded from an array the loop writes: not verified ahead
        for i in range(o.shape[0]):
            o[i] = x[o[i]]

    assert MARKER not in chase.generated_source(i, i)

    @tack.kernel
    def plain(x, out):  # nothing to verify
        for i in range(x.shape[0]):
            out[i] = x[i] * 2.0

    assert MARKER not in plain.generated_source(f, f)
