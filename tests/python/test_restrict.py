"""Array parameters are declared restrict only where the call proved that
they share no memory.

A kernel's signature records, per array, whether its memory overlaps another
array argument's (the same array twice, or two views of one buffer that share
bytes).  The CUDA dialect declares the distinct ones `__restrict__` and the
OpenCL dialect `restrict`; a call with overlapping arrays gets its own build
without, and gives the right answer."""

import numpy as np
import pytest

import tack


@tack.kernel
def add_into(a, b, out):
    for i in range(out.shape[0]):
        out[i] = a[i] + b[i]


@tack.kernel
def plus_one(x, y):
    for i in range(x.shape[0]):
        y[i] = x[i] + 1.0


def _params(src):
    return {name for name in ("a0", "a1", "a2") if f"__restrict__ {name} = P.{name};" in src}


def test_distinct_arrays_are_restrict_in_cuda_and_opencl():
    a, b, out = np.ones(8), np.ones(8), np.zeros(8)
    assert _params(add_into.generated_source(a, b, out, target="cuda")) == {"a0", "a1", "a2"}
    cl = add_into.generated_source(a, b, out, target="opencl")
    assert all(f"double *restrict {p}" in cl for p in ("a0", "a1", "a2"))


def test_the_same_array_twice_is_not_restrict_and_is_right():
    a, out = np.arange(8.0), np.zeros(8)
    src = add_into.generated_source(a, a, out, target="cuda")
    assert _params(src) == {"a2"}  # out shares memory with no other argument
    add_into(a, a, out)
    np.testing.assert_array_equal(out, 2 * np.arange(8.0))
    x = np.arange(8.0)
    assert "__restrict__" not in plus_one.generated_source(x, x, target="cuda")
    assert "*restrict a" not in plus_one.generated_source(x, x, target="opencl")
    plus_one(x, x)  # in place
    np.testing.assert_array_equal(x, np.arange(8.0) + 1.0)


@pytest.mark.parametrize("lo, hi", [(0, 8), (4, 12), (7, 15)])
def test_overlapping_views_are_not_restrict(lo, hi):
    buf = np.arange(16.0)
    x, y = buf[0:8], buf[lo:hi]
    assert "__restrict__" not in plus_one.generated_source(x, y, target="cuda")
    assert "*restrict a" not in plus_one.generated_source(x, y, target="opencl")


def test_adjacent_views_are_distinct():
    buf = np.arange(16.0)
    x, y = buf[0:8], buf[8:16]
    assert _params(plus_one.generated_source(x, y, target="cuda")) == {"a0", "a1"}
    plus_one(x, y)
    np.testing.assert_array_equal(buf[8:], np.arange(8.0) + 1.0)
