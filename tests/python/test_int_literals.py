"""A Python int literal that does not fit the fixed-width type it meets is a
compile error, where NumPy 2 raises OverflowError (it wrapped silently:
300 into int8 gave 44)."""

import numpy as np
import pytest

import tack


@tack.kernel
def add300(a):
    for i in range(a.shape[0]):
        a[i] = a[i] + 300


@tack.kernel
def store300(a):
    for i in range(a.shape[0]):
        a[i] = 300


@tack.kernel
def store_minus_one(a):
    for i in range(a.shape[0]):
        a[i] = -1


@tack.kernel
def add256(a):
    for i in range(a.shape[0]):
        a[i] = a[i] + 256


@tack.kernel
def add127(a):
    for i in range(a.shape[0]):
        a[i] = a[i] + 127


@pytest.mark.parametrize("k", [add300, store300])
def test_literal_out_of_range_for_int8(k):
    with pytest.raises(OverflowError):
        np.int8(1) + 300  # NumPy 2's rule
    with pytest.raises(tack.CompileError, match="300 is out of bounds for i8"):
        k(np.zeros(3, np.int8))


@pytest.mark.parametrize("dt", [np.int16, np.int32, np.int64, np.uint16, np.float32])
def test_literal_in_range_for_wider_types(dt):
    a = np.zeros(3, dt)
    add300(a)
    np.testing.assert_array_equal(a, np.zeros(3, dt) + 300)


def test_literal_in_range_is_fine():
    a = np.zeros(3, np.int8)
    add127(a)
    assert a.tolist() == [127] * 3


def test_literals_out_of_range_for_uint8():
    with pytest.raises(tack.CompileError, match="256 is out of bounds for u8"):
        add256(np.zeros(3, np.uint8))
    with pytest.raises(tack.CompileError, match="-1 is out of bounds for u8"):
        store_minus_one(np.zeros(3, np.uint8))


@tack.kernel
def add_arg(a, s):
    for i in range(a.shape[0]):
        a[i] = a[i] + s


@tack.kernel
def add_arg_reassigned(a, s):
    s = s - 200
    for i in range(a.shape[0]):
        a[i] = a[i] + s


def test_python_int_argument_must_fit_like_numpy():
    a = np.zeros(3, np.int8)
    with pytest.raises(OverflowError):
        a + 300  # NumPy 2's rule for a Python int
    with pytest.raises(OverflowError, match="300 is out of bounds for i8 \\(argument 's' of kernel 'add_arg'"):
        add_arg(a, 300)
    assert a.tolist() == [0, 0, 0]  # refused before it ran
    add_arg(a, -128)
    assert a.tolist() == [-128] * 3
    with pytest.raises(OverflowError, match="-1 is out of bounds for u8"):
        add_arg(np.zeros(2, np.uint8), -1)
    b = np.zeros(2, np.int64)
    add_arg(b, 1 << 40)  # fits i64
    f = np.zeros(2, np.float32)
    add_arg(f, 300)  # meets a float: no limit
    assert f.tolist() == [300, 300]


def test_reassigned_int_parameter_is_not_the_argument():
    a = np.zeros(2, np.int8)
    add_arg_reassigned(a, 300)  # s is 100 where it meets int8
    assert a.tolist() == [100, 100]
