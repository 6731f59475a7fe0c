"""A running maximum or minimum written as Python writes it is a reduction.

`if x[i] > out[0]: out[0] = x[i]` in a parallel loop raised only a RaceWarning
and was then wrong in one or two runs of ten: every iteration reads out[0] and
those that pass the test write it.  Tack now lowers that exact form to
tack.atomic_max (tack.atomic_min for the other direction), whose
compare-and-swap stores v only while v beats the cell -- the same test, so
every order of the iterations ends with the same value; and any other
conditional store to a cell the condition reads is a CompileError naming the
fix.
"""

import numpy as np
import pytest

import tack


@tack.kernel
def running_max(x, out):
    for i in range(x.shape[0]):
        if x[i] > out[0]:
            out[0] = x[i]


@tack.kernel
def running_min_mirrored(x, out):
    for i in range(x.shape[0]):
        if out[1] > x[i]:
            out[1] = x[i]


@tack.kernel
def running_max_2d(m, out):
    for i, j in tack.ndrange(m.shape):
        if m[i, j] > out[0, 1]:
            out[0, 1] = m[i, j]


@tack.kernel
def running_max_inner_loop(m, out):
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            if abs(m[i, j]) > out[0]:
                out[0] = abs(m[i, j])


@tack.kernel
def running_max_ge_int(x, out):
    for i in range(x.shape[0]):
        if x[i] >= out[0]:
            out[0] = x[i]


@tack.kernel
def running_max_ge_float(x, out):
    for i in range(x.shape[0]):
        if x[i] >= out[0]:
            out[0] = x[i]


@tack.kernel
def stores_something_else(x, out):
    for i in range(x.shape[0]):
        if x[i] > out[0]:
            out[0] = x[i] * 2.0


@tack.kernel
def narrowing_int(x, out):
    for i in range(x.shape[0]):
        if x[i] > out[0]:
            out[0] = x[i]


@tack.kernel
def own_cell(x, out):
    for i in range(x.shape[0]):
        if x[i] > out[i]:
            out[i] = x[i]


def test_running_maximum_and_minimum_are_exact_every_run():
    rng = np.random.default_rng(7)
    x = rng.standard_normal(1_000_000)
    for _ in range(10):  # it was wrong in 1-2 runs of 10 as a plain store
        out = np.array([-np.inf, np.inf])
        running_max(x, out)
        running_min_mirrored(x, out)
        assert out[0] == x.max() and out[1] == x.min()


@pytest.mark.parametrize("dt", [np.int8, np.int32, np.int64, np.uint16, np.uint64, np.float32])
def test_every_element_type(dt):
    rng = np.random.default_rng(1)
    info = np.iinfo(dt) if np.dtype(dt).kind in "iu" else np.finfo(dt)
    x = rng.integers(0, 100, 300_000).astype(dt)
    out = np.array([info.min, info.max], dtype=dt)
    running_max(x, out)
    running_min_mirrored(x, out)
    assert out.tolist() == [x.max(), x.min()]
    if np.dtype(dt).kind in "iu":  # >= is the same as > for integers: taken too
        out2 = np.array([info.min], dtype=dt)
        running_max_ge_int(x, out2)
        assert out2[0] == x.max()


def test_two_dimensions_and_inner_loops():
    rng = np.random.default_rng(2)
    m = rng.standard_normal((700, 300))
    out = np.full((1, 2), -np.inf)
    running_max_2d(m, out)
    assert out[0, 1] == m.max()
    o = np.zeros(1)
    running_max_inner_loop(m, o)
    assert o[0] == np.abs(m).max()


def test_nan_is_skipped_as_the_serial_test_skips_it():
    x = np.array([1.0, np.nan, 3.0, 2.0] * 10_000)
    out = np.array([-np.inf, np.inf])
    running_max(x, out)
    assert out[0] == 3.0  # nan > m is False: never stored, in any order
    serial = -np.inf
    for v in x:
        if v > serial:
            serial = v
    assert serial == 3.0


def test_it_is_an_atomic_in_the_generated_source():
    out = np.zeros(2)
    running_max(np.ones(4), out)
    src = running_max.generated_source(np.ones(4), out)
    assert "tk_atomic_max" in src


def test_forms_that_are_not_exact_are_compile_errors_naming_the_fix():
    x = np.ones(10)
    with pytest.raises(tack.CompileError, match=r"reads out\[0\] and those whose condition holds write it.*"
                                                r"tack.atomic_max"):
        stores_something_else(x, np.zeros(1))
    with pytest.raises(tack.CompileError, match=r"tack.atomic_max.*differ only for -0\.0 and 0\.0"):
        running_max_ge_float(x, np.zeros(1))
    with pytest.raises(tack.CompileError, match=r"i64 stored into i8 elements may change its order"):
        narrowing_int(np.ones(10, np.int64), np.zeros(1, np.int8))


def test_the_iterations_own_cell_is_left_alone():
    x = np.arange(10.0)
    out = np.full(10, 4.5)
    own_cell(x, out)
    assert out.tolist() == np.maximum(x, 4.5).tolist()
    assert "tk_atomic_max" not in own_cell.generated_source(x, out)


def test_debug_mode_agrees():
    x = np.random.default_rng(3).standard_normal(1000)
    a = np.array([-np.inf, np.inf])
    b = a.copy()
    running_max(x, a)
    tack.kernel(running_max.__wrapped__, jit=False)(x, b)
    assert a[0] == b[0] == x.max()
