"""Compound assignments to array elements inside a parallel loop.

+= and -= on numeric elements are atomic, so a reduction into one cell is
right.  Every other compound assignment is a read and a write: on the
iteration's own element (each loop variable, unassigned in the body, is one
of its indices) that is fine; on an element other iterations may update at
the same time it would lose updates without a word (s[0] *= x[i] over 200,000
factors of 1.00005 gave 452.7 instead of 22,021), so it is a CompileError that
says what to write instead -- on every backend, the CPU included."""

import numpy as np
import pytest

import tack


@tack.kernel
def product_into_one_cell(x, s):
    for i in range(x.shape[0]):
        s[0] *= x[i]


@tack.kernel
def product_in_a_serial_loop(x, s):
    for t in range(1):
        p = 1.0
        for i in range(x.shape[0]):
            p *= x[i]
        s[0] = p


@tack.kernel
def scale_own(a, f):
    for i in range(a.shape[0]):
        a[i] *= f
        a[i] //= 2.0


@tack.kernel
def scale_rows(m):
    for i in range(m.shape[0]):
        m[i, 0] *= 2.0
        for j in range(1, m.shape[1]):
            m[i, j] **= 2


@tack.kernel
def scale_grid(m):
    for i, j in tack.ndrange(m.shape[0], m.shape[1]):
        m[j, i] *= 3.0


@tack.kernel
def half_grid_shared(m, out):
    for i, j in tack.ndrange(m.shape[0], m.shape[1]):
        out[i] *= m[i, j]


@tack.kernel
def reassigned_index(a):
    for i in range(a.shape[0]):
        i = i // 2
        a[i] *= 2.0


@tack.kernel
def or_into_flags(x, flags):
    for i in range(x.shape[0]):
        flags[0] |= x[i] > 0


@tack.kernel
def add_into_f16(x, h):
    for i in range(x.shape[0]):
        h[0] += x[i]


@tack.kernel
def add_into_shared_sum(x, s):
    for i in range(x.shape[0]):
        s[0] += x[i]


def test_product_into_one_cell_is_refused_with_advice():
    with pytest.raises(tack.CompileError, match=r"'s\[\.\.\.\] \*= \.\.\.' in a parallel loop: iterations may update "
                                                r"the same element at once.*only \+= and -= are atomic"):
        product_into_one_cell(np.full(200_000, 1.00005), np.ones(1))


def test_the_advice_works():
    x = np.full(200_000, 1.00005)
    s = np.zeros(1)
    product_in_a_serial_loop(x, s)
    assert s[0] == pytest.approx(np.prod(x), rel=1e-9)


def test_own_elements_may_be_updated_in_place():
    a = np.arange(10.0)
    scale_own(a, 3.0)
    np.testing.assert_array_equal(a, np.arange(10.0) * 3.0 // 2.0)
    m = np.arange(12.0).reshape(3, 4)
    scale_rows(m)
    ref = np.arange(12.0).reshape(3, 4)
    ref[:, 0] *= 2.0
    ref[:, 1:] **= 2
    np.testing.assert_array_equal(m, ref)
    g = np.ones((4, 4))
    scale_grid(g)
    np.testing.assert_array_equal(g, np.full((4, 4), 3.0))


def test_an_element_shared_by_an_ndrange_row_is_refused():
    with pytest.raises(tack.CompileError, match=r"'out\[\.\.\.\] \*= \.\.\.' in a parallel loop"):
        half_grid_shared(np.ones((3, 4)), np.ones(3))


def test_an_index_the_body_reassigns_is_not_the_iterations_own():
    with pytest.raises(tack.CompileError, match=r"'a\[\.\.\.\] \*= \.\.\.' in a parallel loop"):
        reassigned_index(np.ones(8))


def test_bool_and_float16_cells_are_refused():
    with pytest.raises(tack.CompileError, match=r"'flags\[\.\.\.\] \|= \.\.\.'.*only \+= and -= are atomic"):
        or_into_flags(np.ones(4), np.zeros(1, np.bool_))
    with pytest.raises(tack.CompileError, match=r"'h\[\.\.\.\] \+= \.\.\.'.*not atomic on float16"):
        add_into_f16(np.ones(4, np.float16), np.zeros(1, np.float16))


def test_sums_into_one_cell_stay_atomic_and_right():
    x = np.ones(1_000_000)
    s = np.zeros(1)
    add_into_shared_sum(x, s)
    assert s[0] == 1_000_000.0
