"""NumPy arrays passed to a kernel are read from the array object itself (src/python/
array_ndarray.c) once the buffer protocol has shown that reading right; every array that does not
qualify (not C-contiguous, read-only, warning on write, misaligned, a dtype the buffer protocol has
not mapped) still goes the buffer protocol's way.  The tests here hold the two ways to the same
results, errors and warnings, check the switch's state, and the references the fast path takes."""

import gc
import re
import sys
import warnings
import weakref

import numpy as np
import pytest

import tack
from tack import _core


@tack.kernel
def add_one(x):
    for i in range(x.shape[0]):
        x[i] = x[i] + 1


@tack.kernel
def copy_into(src, dst):
    for i in range(src.shape[0]):
        dst[i] = src[i]


@tack.kernel
def scale2(m, a):
    for i, j in tack.ndrange(m.shape[0], m.shape[1]):
        m[i, j] = m[i, j] * a


@tack.kernel
def total3(t, out):
    for i in range(1):
        s = 0.0
        for a in range(t.shape[0]):
            for b in range(t.shape[1]):
                for c in range(t.shape[2]):
                    s += t[a, b, c]
        out[0] = s


@pytest.fixture
def fresh():
    """The fast path forgotten before and after the test (unchecked, no dtypes known)."""
    _core._ndarray_path(-1)
    yield
    _core._ndarray_path(-1)


def _outcome(fn):
    """What fn does: its result or its exception's type and message, and its warnings."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = ("ok", fn())
        except Exception as e:  # noqa: BLE001 - the outcome compared is any exception
            r = ("raised", type(e).__name__, re.sub(r"0x[0-9a-f]+", "0x...", str(e)))
    return r, [(type(x.message).__name__, str(x.message)) for x in w]


def _both(make, call):
    """call(make()) with the fast path on (learned) and off; both outcomes and arrays."""
    _core._ndarray_path(-1)
    warm = np.zeros(4, np.float64)
    add_one(warm)  # the first NumPy array checks the layout: the fast path is on after it
    a = make()
    on = _outcome(lambda: call(a)), a
    _core._ndarray_path(0)
    b = make()
    off = _outcome(lambda: call(b)), b
    _core._ndarray_path(-1)
    return on, off


DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
          np.uint16, np.uint32, np.uint64, np.complex64, np.complex128]


@pytest.mark.parametrize("dt", DTYPES)
def test_every_dtype_the_same_both_ways(fresh, dt):
    def make():
        return np.arange(7).astype(dt)
    (on, a), (off, b) = _both(make, lambda x: (add_one(x), add_one(x)))
    assert on == off
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, (np.arange(7) + 2).astype(dt))
    state, names = _core._ndarray_path()
    assert state == -1 and names == ()


def test_the_first_array_turns_it_on_and_each_dtype_is_learned_once(fresh):
    assert _core._ndarray_path() == (-1, ())
    x = np.zeros(5, np.float32)
    add_one(x)
    assert _core._ndarray_path() == (1, ("f32",))
    for _ in range(3):
        add_one(x)
    add_one(np.zeros(3, np.int64))
    assert _core._ndarray_path() == (1, ("f32", "i64"))
    np.testing.assert_array_equal(x, 4)


def test_off_stays_off(fresh):
    _core._ndarray_path(0)
    x = np.zeros(5)
    add_one(x)
    assert _core._ndarray_path() == (0, ())
    np.testing.assert_array_equal(x, 1)
    with pytest.raises(ValueError, match="state is 0 or -1, not 1"):
        _core._ndarray_path(1)


MAKERS = {
    "2-D": lambda: np.arange(12.0).reshape(3, 4),
    "0-d": lambda: np.array(5.0),
    "empty": lambda: np.zeros(0),
    "empty 2-D": lambda: np.zeros((3, 0)),
    "size-1 axes": lambda: np.arange(6.0).reshape(1, 6, 1)[:, :, 0],
    "Fortran order": lambda: np.asfortranarray(np.arange(12.0).reshape(3, 4)),
    "a column": lambda: np.arange(12.0).reshape(3, 4)[:, 1],
    "reversed": lambda: np.arange(6.0)[::-1],
    "read-only": lambda: _readonly(np.arange(4.0)),
    "broadcast": lambda: np.broadcast_arrays(np.arange(4.0), np.zeros((2, 4)))[0],
    # C-contiguous (its one row's stride is 0), and NumPy warns when it is written
    "broadcast, contiguous": lambda: np.broadcast_arrays(np.arange(4.0), np.zeros((1, 4)))[0],
    "byte-swapped": lambda: np.arange(4.0).astype(">f8"),
    "misaligned": lambda: np.frombuffer(bytearray(8 * 4 + 1), np.float64, count=4, offset=1),
    "structured": lambda: np.zeros(3, [("a", np.float64), ("b", np.int32)]),
    "object": lambda: np.array([1.0, None], dtype=object),
    "bool": lambda: np.array([True, False, True]),
}


def _readonly(a):
    a.setflags(write=False)
    return a


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_arrays_that_do_not_qualify_behave_as_before(fresh, kind):
    make = MAKERS[kind]
    ndim = make().ndim

    def call(x):
        if ndim == 2:
            return scale2(x, 3.0)
        if ndim == 1 and x.dtype != np.bool_:
            return add_one(x)
        out = np.zeros(max(x.size, 1), x.dtype if x.dtype != object else np.float64)
        return copy_into(x.reshape(-1) if x.ndim else x.reshape(1), out) if x.dtype != object else copy_into(x, out)
    (on, a), (off, b) = _both(make, call)
    assert on == off, kind
    if a.dtype != object:
        np.testing.assert_array_equal(a, b)


def test_a_read_only_array_is_read_but_not_written(fresh):
    x = _readonly(np.arange(4.0))
    out = np.zeros(4)
    add_one(np.zeros(2))  # the fast path on
    copy_into(x, out)
    np.testing.assert_array_equal(out, x)
    with pytest.raises(ValueError, match="read-only"):
        add_one(x)


def test_no_reference_is_kept_or_lost(fresh):
    x = np.zeros(100, np.float32)
    add_one(x)  # learn
    before = sys.getrefcount(x), sys.getrefcount(x.dtype)
    for _ in range(200):
        add_one(x)
    assert (sys.getrefcount(x), sys.getrefcount(x.dtype)) == before
    r = weakref.ref(x)
    del x
    gc.collect()
    assert r() is None  # the kernel does not keep the array alive


def test_the_array_is_read_again_at_every_call(fresh):
    x = np.zeros(12)
    add_one(x)
    x.shape = (3, 4)  # the same memory, another shape
    scale2(x, 2.0)
    np.testing.assert_array_equal(x, 2)
    y = np.zeros(4)
    add_one(y)
    y.resize(1000, refcheck=False)  # new memory
    add_one(y)
    np.testing.assert_array_equal(y[:4], 2)
    np.testing.assert_array_equal(y[4:], 1)
    x3 = np.arange(24.0).reshape(2, 3, 4)
    out = np.zeros(1)
    total3(x3, out)
    assert out[0] == x3.sum()


def test_more_dtypes_than_it_keeps(fresh):
    # dtype objects with metadata are distinct objects of the same dtype: past the ones it keeps,
    # the rest go the buffer protocol's way, with the same results
    xs = [np.zeros(3, np.dtype(np.float64, metadata={"k": k})) for k in range(40)]
    for x in xs:
        add_one(x)
        add_one(x)
    for x in xs:
        np.testing.assert_array_equal(x, 2)
    state, names = _core._ndarray_path()
    assert state == 1 and 1 <= len(names) <= 16


def test_a_subclass_takes_the_buffer_protocol(fresh):
    m = np.zeros(4).view(type("Sub", (np.ndarray,), {}))
    add_one(np.zeros(2))
    add_one(m)
    np.testing.assert_array_equal(m, 1)
