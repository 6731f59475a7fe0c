"""Array parameters are declared restrict only where the call proved that
they share no memory.

A kernel's signature records whether a call's arrays are distinct: no two of
them share memory (the same array twice, or two views of one buffer that
share bytes, are not).  One bit for the call, so a kernel has at most two
builds per signature.  The CUDA dialect declares the distinct ones `__restrict__`, the
OpenCL dialect and the CPU's C `restrict`; a call with overlapping arrays gets
its own build without, and gives the right answer."""

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
    assert _params(src) == set()  # a call whose arrays overlap: none is restrict
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


def _c_params(src):
    return {name for name in ("a0", "a1", "a2") if f"double *restrict {name} = " in src}


def test_distinct_arrays_are_restrict_in_the_cpu_c():
    a, b, out = np.ones(8), np.ones(8), np.zeros(8)
    src = add_into.generated_source(a, b, out, target="c")
    assert _c_params(src) == {"a0", "a1", "a2"}
    x = np.arange(8.0)
    src = add_into.generated_source(x, x, out, target="c")
    assert _c_params(src) == set()  # two arrays share memory: none is restrict
    assert "*restrict" not in plus_one.generated_source(x, x, target="c")
    buf = np.arange(16.0)
    assert "*restrict" not in plus_one.generated_source(buf[0:8], buf[4:12], target="c")
    assert _c_params(plus_one.generated_source(buf[0:8], buf[8:16], target="c")) == {"a0", "a1"}


@tack.kernel
def axpy_rows(x, y):
    for i in range(y.shape[0]):
        for j in range(y.shape[1]):
            y[i, j] = 2.0 * x[i, j] + y[i, j]


def test_the_cpu_builds_with_and_without_restrict_both_give_numpy_s_answer():
    """The same kernel called on distinct arrays, then in place: two builds,
    each vectorized by the C compiler under its own assumption."""
    rng = np.random.default_rng(7)
    x, y = rng.random((37, 301)), rng.random((37, 301))
    want = 2.0 * x + y
    axpy_rows(x, y)
    np.testing.assert_array_equal(y, want)
    z = rng.random((37, 301))
    want = 3.0 * z
    axpy_rows(z, z)  # in place: the build without restrict
    np.testing.assert_array_equal(z, want)
    buf = rng.random(2 * 37 * 301)
    lo, hi = buf[: 37 * 301].reshape(37, 301), buf[37 * 301:].reshape(37, 301)
    want = 2.0 * lo + hi
    axpy_rows(lo, hi)  # one buffer, disjoint halves: distinct, restrict
    np.testing.assert_array_equal(hi, want)


def test_a_restrict_build_refuses_overlapping_arrays_through_the_c_api():
    """tack_launch checks the promise a build made (runtime/program.c); on the
    CPU the call path marks each call, so overlapping arrays get the other
    build rather than the error."""
    x = np.arange(8.0)
    plus_one(x, np.zeros(8))
    plus_one(x, x)
    np.testing.assert_array_equal(x, np.arange(8.0) + 1.0)


def test_compile_with_one_placeholder_builds_for_both_kinds_of_call():
    """Kernel.compile (and tack.compile_kernels) with example arrays that
    share memory builds both: as passed, and with restrict for the calls
    with separate arrays that usually follow."""
    @tack.kernel
    def add3(a, b, out):
        for i in range(out.shape[0]):
            out[i] = a[i] + b[i]

    f = np.zeros(4)
    add3.compile(f, f, f)
    assert add3.specializations == 2
    x, y, out = np.arange(4.0), np.ones(4), np.zeros(4)
    add3(x, y, out)
    add3(x, x, out)
    np.testing.assert_array_equal(out, 2 * np.arange(4.0))
    assert add3.specializations == 2
    add3.compile(np.zeros(3), np.zeros(3), np.zeros(3))  # separate: the one build it needs
    assert add3.specializations == 2


@tack.kernel
def add_ten(a0, a1, a2, a3, a4, a5, a6, a7, a8, out):
    for i in range(out.shape[0]):
        out[i] = a0[i] + a1[i] + a2[i] + a3[i] + a4[i] + a5[i] + a6[i] + a7[i] + a8[i]


def _ten_restrict(args):
    return "double *restrict a9 = " in add_ten.generated_source(*args, target="c")


def test_many_arrays_any_overlap_turns_restrict_off():
    """Ten arrays: an overlap between any two, wherever they sit, makes the
    call's arrays not distinct (kernel_call.c)."""
    buf = np.arange(200.0)
    parts = [buf[10 * k:10 * k + 10] for k in range(9)]  # adjacent, disjoint views of one buffer
    out = np.zeros(10)
    assert _ten_restrict(parts + [out])
    add_ten(*parts, out)
    np.testing.assert_array_equal(out, sum(parts))
    for k in range(9):  # any one overlap, wherever it sits, turns restrict off
        over = list(parts)
        over[k] = buf[10 * k + 5:10 * k + 15] if k < 8 else buf[75:85]
        assert not _ten_restrict(over + [out]), k
    assert not _ten_restrict(parts + [buf[85:95]])  # out overlaps the last part
    assert _ten_restrict(parts + [buf[90:100]])      # out right after it
    same = [parts[0]] * 9
    assert not _ten_restrict(same + [out])
    add_ten(*same, out)
    np.testing.assert_array_equal(out, 9 * parts[0])
    empty = [np.zeros(0)] * 9
    assert _ten_restrict(empty + [np.zeros(0)])  # empty arrays share no bytes
