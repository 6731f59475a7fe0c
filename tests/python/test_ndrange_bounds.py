"""tack.ndrange with bounds: an axis is a size n, a tuple (start, stop[, step])
or a range(start, stop[, step]); one shape (a.shape, *a.shape, or a single
tuple of sizes) stands for all the axes; and `n, m = a.shape` unpacks a shape
anywhere in a kernel.  Each kernel is compared with the plain Python loops it
spells (tack.ndrange itself, called from Python), parallel at the top of a
kernel and serial nested inside one."""

import itertools

import numpy as np
import pytest

import tack


def python_visits(*axes):
    """What the loop visits, from Python: every index tuple, in order."""
    return list(tack.ndrange(*axes))


@tack.kernel
def mark2(out, a0, a1, a2, b0, b1, b2):
    for i, j in tack.ndrange((a0, a1, a2), range(b0, b1, b2)):
        out[i, j] += 1


@tack.kernel
def mark2_serial(out, a0, a1, a2, b0, b1, b2):
    for t in range(1):
        for i, j in tack.ndrange((a0, a1, a2), range(b0, b1, b2)):
            out[i, j] += 1


@tack.kernel
def mark1(out, a0, a1, a2):
    for i in tack.ndrange(range(a0, a1, a2)):
        out[i] += 1


@tack.kernel
def mark1_unit(out, a0, a1):
    for i in tack.ndrange(range(a0, a1)):
        out[i] += 1


@tack.kernel
def mark1_unit_serial(out, a0, a1):
    for t in range(1):
        for i in tack.ndrange(range(a0, a1)):
            out[i] += 1


@tack.kernel
def mark3(out, n):
    for i, j, k in tack.ndrange((1, n), 3, (n - 1, -1, -2)):
        out[i, j, k] += i * 100 + j * 10 + k


AXES = [(0, 5, 1), (1, 4, 1), (4, 0, -1), (5, -1, -2), (0, 5, 2), (3, 3, 1), (4, 1, 1), (1, 5, 3), (-1, 2, 1)]


def expected(shape, visits):
    out = np.zeros(shape, np.int64)
    for idx in visits:
        out[idx] += 1
    return out


@pytest.mark.parametrize("k", [mark2, mark2_serial])
@pytest.mark.parametrize("a, b", list(itertools.product(AXES[:6], AXES[3:])))
def test_two_axes_match_python(k, a, b):
    out = np.zeros((6, 6), np.int64)
    k(out, *a, *b)
    np.testing.assert_array_equal(out, expected((6, 6), python_visits(a, range(*b))))


@pytest.mark.parametrize("a", AXES)
def test_one_axis_matches_python(a):
    out = np.zeros(6, np.int64)
    mark1(out, *a)
    np.testing.assert_array_equal(out, expected(6, [(i,) for i in range(*a)]))
    if a[2] == 1:
        for k in (mark1_unit, mark1_unit_serial):
            out = np.zeros(6, np.int64)
            k(out, a[0], a[1])
            np.testing.assert_array_equal(out, expected(6, [(i,) for i in range(a[0], a[1])]))


def test_three_axes_mixed():
    out = np.zeros((6, 3, 6), np.int64)
    mark3(out, 6)
    want = np.zeros_like(out)
    for i, j, k in tack.ndrange((1, 6), 3, (5, -1, -2)):
        want[i, j, k] += i * 100 + j * 10 + k
    np.testing.assert_array_equal(out, want)


@tack.kernel
def stencil_tuples(a, out):
    n, m = a.shape
    for i, j in tack.ndrange((1, n - 1), (1, m - 1)):
        out[i, j] = a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1] - 4 * a[i, j]


@tack.kernel
def stencil_ranges(a, out):
    n, m = a.shape
    for i, j in tack.ndrange(range(1, n - 1), range(1, m - 1)):
        out[i, j] = a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1] - 4 * a[i, j]


@pytest.mark.parametrize("k", [stencil_tuples, stencil_ranges])
@pytest.mark.parametrize("shape", [(7, 9), (3, 3), (2, 5), (1, 1)])
def test_stencil_matches_python(k, shape):
    a = np.random.default_rng(3).standard_normal(shape)
    out = np.zeros(shape)
    k(a, out)
    want = np.zeros(shape)
    n, m = shape
    for i in range(1, n - 1):
        for j in range(1, m - 1):
            want[i, j] = a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1] - 4 * a[i, j]
    np.testing.assert_array_equal(out, want)


@tack.kernel
def fill_shape(a):
    for i, j, k in tack.ndrange(a.shape):
        a[i, j, k] = i * 100 + j * 10 + k


@tack.kernel
def fill_star(a):
    for i, j, k in tack.ndrange(*a.shape):
        a[i, j, k] = i * 100 + j * 10 + k


@tack.kernel
def fill_tuple(a):
    for i, j, k in tack.ndrange((a.shape[0], a.shape[1], a.shape[2])):
        a[i, j, k] = i * 100 + j * 10 + k


@tack.kernel
def fill_shape_serial(a):
    for t in range(1):
        for i, j, k in tack.ndrange(a.shape):
            a[i, j, k] = i * 100 + j * 10 + k


@pytest.mark.parametrize("k", [fill_shape, fill_star, fill_tuple, fill_shape_serial])
def test_whole_shape(k):
    a = np.zeros((3, 4, 5), np.int64)
    k(a)
    want = np.zeros_like(a)
    for i, j, kk in tack.ndrange(a.shape):
        want[i, j, kk] = i * 100 + j * 10 + kk
    np.testing.assert_array_equal(a, want)
    assert list(tack.ndrange(a.shape)) == list(tack.ndrange(*a.shape)) == list(itertools.product(range(3), range(4), range(5)))


@tack.kernel
def unpack(a, out):
    n, m = a.shape
    for i in range(n):
        (r,) = out.shape
        out[i] = n * 1000 + m * 10 + r
    for t in range(1):
        p, q = a.shape
        out[0] = p + q


def test_shape_unpacking():
    a = np.zeros((3, 4))
    out = np.zeros(3, np.int64)
    unpack(a, out)
    assert out.tolist() == [7, 3043, 3043]


@tack.kernel
def unpack_wrong(a, out):
    n, m = a.shape
    out[0] = n + m


def test_shape_unpacking_needs_one_name_per_axis():
    with pytest.raises(tack.CompileError, match=r"cannot unpack the shape of the 3-D array 'a' into 2 names"):
        unpack_wrong(np.zeros((2, 2, 2)), np.zeros(1))
    unpack_wrong(np.zeros((2, 5)), out := np.zeros(1))
    assert out[0] == 7


@tack.kernel
def stepped2(out, s):
    for i, j in tack.ndrange((0, out.shape[0], s), out.shape[1]):
        out[i, j] = 1.0


@tack.kernel
def stepped2_serial(out, s):
    for t in range(1):
        for i, j in tack.ndrange(out.shape[0], range(0, out.shape[1], s)):
            out[i, j] = 1.0


@tack.kernel
def literal_zero_step(out):
    for i, j in tack.ndrange((0, 4, 0), 3):
        out[i, j] = 1.0


@pytest.mark.parametrize("k", [stepped2, stepped2_serial])
def test_zero_step_is_an_error_as_in_range(k):
    out = np.zeros((4, 4))
    with pytest.raises(ValueError, match=r"range\(\) arg 3 must not be zero"):
        k(out, 0)
    with pytest.raises(ValueError, match=r"range\(\) arg 3 must not be zero"):
        list(tack.ndrange((0, 4, 0), 4))
    k(out, 2)
    assert out.sum() == 8


def test_literal_zero_step_is_a_compile_error():
    with pytest.raises(tack.CompileError, match=r"range\(\) arg 3 must not be zero"):
        literal_zero_step(np.zeros((4, 3)))


@tack.kernel
def one_tuple_one_var(out, n):
    for i in tack.ndrange((1, n)):
        out[i] = 1


@tack.kernel
def bad_tuple(out):
    for i, j in tack.ndrange((1, 2, 3, 4), 3):
        out[i, j] = 1


@tack.kernel
def float_size(out):
    for i in tack.ndrange(2.5):
        out[i] = 1


@tack.kernel
def array_size(out):
    for i in tack.ndrange(out):
        out[i] = 1


@tack.kernel
def shape_plus(out):
    for i, j, k in tack.ndrange(out.shape, 2):
        out[i, j, k] = 1


@tack.kernel
def star_plus(out):
    for i, j in tack.ndrange(*out.shape, 2):
        out[i] = 1


@tack.kernel
def float_bound(out):
    for i in tack.ndrange(range(0, 2.0)):
        out[i] = 1


@pytest.mark.parametrize("k, args, msg", [
    (one_tuple_one_var, (np.zeros(4), 3), r"one tuple is a shape.*write range\(start, stop\)"),
    (bad_tuple, (np.zeros((4, 4)),), r"\(start, stop\) or \(start, stop, step\), not 4 values"),
    (float_size, (np.zeros(4),), r"a size must be an integer, not f"),
    (array_size, (np.zeros(4),), r"ndrange\(\) takes sizes, not an array: write ndrange\(out.shape\)"),
    (shape_plus, (np.zeros((2, 2, 2)),), r"a shape must be ndrange\(\)'s only argument"),
    (float_bound, (np.zeros(4),), r"range\(\) arguments must be integers"),
    (star_plus, (np.zeros(4),), r"a starred shape must be ndrange\(\)'s only argument"),
])
def test_unsupported_arguments_say_what_works(k, args, msg):
    with pytest.raises(tack.CompileError, match=msg):
        k(*args)


def test_python_ndrange_spells_the_same_loops():
    assert list(tack.ndrange((1, 3), range(2, 0, -1))) == [(1, 2), (1, 1), (2, 2), (2, 1)]
    assert list(tack.ndrange((2, 3))) == list(itertools.product(range(2), range(3)))
    assert list(tack.ndrange((0, 5, 2), 1)) == [(0, 0), (2, 0), (4, 0)]
    with pytest.raises(TypeError):
        list(tack.ndrange((1, 2, 3, 4), 2))


@tack.kernel
def reads_past_the_end(a, out):
    n, m = a.shape
    for i, j in tack.ndrange((1, n), (1, m)):
        out[i, j] = a[i + 1, j]


@tack.kernel
def reads_before_the_start(a, out, lo):
    n, m = a.shape
    for i, j in tack.ndrange((lo, n), (1, m)):
        out[i, j] = a[i - 1, j - 1]


@tack.kernel
def reassigns_the_variable(a, out):
    n, m = a.shape
    for i, j in tack.ndrange((1, n - 1), (1, m - 1)):
        out[i, j] = a[i, j]
        k = i + 5                     # (assigning i itself is a CompileError: test_loop_variable.py)
        out[k, j] = 1.0


@pytest.mark.optimized_source
def test_bounds_checks_stay_where_an_index_can_leave_the_array():
    """The checks of a stencil over bounded axes run once per loop (the
    indices are lo .. hi - 1 of each axis), and still catch every index that
    would leave the array, with the message the per-element check gives."""
    a, out = np.ones((5, 4)), np.zeros((5, 4))
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 5"):
        reads_past_the_end(a, out)
    with pytest.raises(IndexError, match="index -6 is out of bounds for axis 0 with size 5"):
        reads_before_the_start(a, out, -5)
    reads_before_the_start(a, out, 0)  # a[-1, j - 1] wraps, as in Python
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 5"):
        reassigns_the_variable(a, out)
    src = stencil_tuples.generated_source(a, out)
    body = src[src.index("a whole row"):]
    body = body[:body.index("} else {")]  # the whole row's first copy (the overlapping vector's, emit_inner.c)
    assert "omp simd" in body and "abi->fail" not in body


@tack.kernel
def count3(out, a0, a1, a2, b0, b1, b2, c0, c1, c2):
    for i, j, k in tack.ndrange(range(a0, a1, a2), (b0, b1, b2), range(c0, c1, c2)):
        out[i, j, k] += 1


@tack.kernel
def count3_serial(out, a0, a1, a2, b0, b1, b2, c0, c1, c2):
    for t in range(1):
        for i, j, k in tack.ndrange(range(a0, a1, a2), (b0, b1, b2), range(c0, c1, c2)):
            out[i, j, k] += 1


def test_random_bounds_match_python():
    """Any start in -8 .. 7, stop in -9 .. 8 and nonzero step, three axes: the
    kernels visit exactly the indices Python's loops visit (each index is in
    -8 .. 7, and negative ones wrap)."""
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    axis = st.tuples(st.integers(-8, 7), st.integers(-9, 8), st.integers(-4, 4).filter(bool))

    @hypothesis.settings(max_examples=60, deadline=None)
    @hypothesis.given(axis, axis, axis)
    def check(a, b, c):
        want = np.zeros((8, 8, 8), np.int64)
        for idx in tack.ndrange(range(*a), b, range(*c)):
            want[idx] += 1
        for k in (count3, count3_serial):
            out = np.zeros((8, 8, 8), np.int64)
            k(out, *a, *b, *c)
            np.testing.assert_array_equal(out, want)

    check()
