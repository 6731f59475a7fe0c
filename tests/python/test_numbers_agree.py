"""Numbers you can trust: the cases where a compiled kernel and the same kernel
run as Python (jit=False) gave different numbers, or Tack's type differed
from NumPy 2's with no entry in docs/language.md's "Differences from NumPy".
Each kernel runs both ways and both must give the value written here (or
raise the same exception).  The random search that finds such cases is
test_fuzz_numbers.py.

- a local holding a Python int literal (`v = 100`) is an integer known at
  run time in the compiled kernel (`v / 3` in the default float, `a8[i] + v`
  checked like `a8[i] + i`); debug mode kept the literal (`v / 3` in f64,
  300 wrapped into int8 silently);
- `np.maximum(3, 100)` is NumPy's int64, not a Python int: `/ 3` divides an
  int64 (the default float), `np.maximum(i, 5) + a8[i]` is int64;
- `i if c else 0.5` is the default float, as `max(i, 0.5)` is: it was a
  Python float, computed in f64 where it met f64;
- `np.fmod` of two bools is NumPy's int8 remainder (it was a float fmod:
  NaN by zero, where NumPy's integer loop gives 0 and Tack's integer fmod
  raises ZeroDivisionError);
- a read-only array written by a kernel run as Python is named as the
  compiled call names it, "(a numpy.ndarray)".
"""

import numpy as np
import pytest

import tack


def both(fn, make, **opts):
    """The outputs (or exception) of fn compiled and as Python, on fresh arguments each."""
    outs = []
    for jit in (True, False):
        args = make()
        try:
            tack.kernel(fn, jit=jit, **opts)(*args)
        except Exception as e:  # noqa: BLE001 -- compared below
            outs.append((type(e), str(e).split(" (kernel")[0]))
            continue
        outs.append([a.copy() for a in args if isinstance(a, np.ndarray)])
    return outs


def assert_both(fn, make, want, **opts):
    c, p = both(fn, make, **opts)
    for got in (c, p):
        if isinstance(want, type):
            assert isinstance(got, tuple) and got[0] is want, got
        else:
            assert not isinstance(got, tuple), got
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and g.tobytes() == w.tobytes(), (fn.__name__, g, w)
    if isinstance(want, type):
        assert c == p  # the same message, word for word (less the site)


def local_int_divided(o):
    for i in range(o.shape[0]):
        v = 100
        o[i] = v / 3


def local_int_meets_int8(a, o):
    for i in range(o.shape[0]):
        v = 300
        o[i] = a[i] + v


def local_int_times_float(o):
    for i in range(o.shape[0]):
        v = 3
        o[i] = v * 0.5 + 16777217


def test_local_holding_a_literal_is_known_at_run_time():
    f32 = np.float64(np.float32(100) / np.float32(3))
    assert_both(local_int_divided, lambda: (np.zeros(2),), [np.full(2, f32)])
    assert_both(local_int_meets_int8, lambda: (np.zeros(2, np.int8), np.zeros(2, np.int8)), OverflowError)
    # v * 0.5 is f32 (a run-time int meets a float), and so is + 16777217: 16777218.5 rounds to 16777218
    assert_both(local_int_times_float, lambda: (np.zeros(2),), [np.full(2, 16777218.0)])


def np_max_of_ints(a, o, o2):
    for i in range(o.shape[0]):
        o[i] = np.maximum(3, 100) / 3
        o2[i] = np.maximum(i, 5) + a[i]


def test_np_maximum_of_python_ints_is_int64():
    a = np.full(200, 100, np.int8)
    o2 = (np.maximum(np.arange(200), 5) + a.astype(np.int64)).astype(np.int64)  # NumPy's int64, no overflow
    assert_both(np_max_of_ints, lambda: (a.copy(), np.zeros(200), np.zeros(200, np.int64)),
                [a, np.full(200, np.float64(np.float32(100) / np.float32(3))), o2])


def cond_int_float(c, o):
    for i in range(o.shape[0]):
        v = i if c[i] else 0.5
        o[i] = v / 3 + 16777217


def test_conditional_of_a_run_time_int_and_a_float_is_the_default_float():
    c = np.array([True, False, True])
    want = np.array([np.float32(np.float32(v) / np.float32(3)) + np.float32(16777217) for v in (0, 0.5, 2)],
                    np.float64)
    assert_both(cond_int_float, lambda: (c.copy(), np.zeros(3)), [c, want])
    # with default_float=f64 it is NumPy's float64
    want64 = np.array([v / 3 + 16777217 for v in (0, 0.5, 2)])
    assert_both(cond_int_float, lambda: (c.copy(), np.zeros(3)), [c, want64], default_float=tack.f64)


def fmod_bools(a, b, o):
    for i in range(o.shape[0]):
        o[i] = ~np.fmod(a[i], b[i])


def test_fmod_of_bools_is_int8():
    a, b = np.array([True, False, True]), np.array([True, True, True])
    # NumPy's int8 remainder, 0, so ~ of it is -1 (~ of the float it was is a compile error)
    assert_both(fmod_bools, lambda: (a, b, np.zeros(3, np.int64)), [a, b, np.full(3, -1, np.int64)])
    assert (~np.fmod(a, b)).tolist() == [-1] * 3
    assert_both(fmod_bools, lambda: (a, ~b, np.zeros(3)), ZeroDivisionError)


def writes(a):
    for i in range(a.shape[0]):
        a[i] = 1.0


def test_read_only_argument_names_numpy_ndarray_both_ways():
    a = np.zeros(3)
    a.flags.writeable = False
    for jit in (True, False):
        with pytest.raises(ValueError, match=r"\(a numpy\.ndarray\) is read-only"):
            tack.kernel(writes, jit=jit)(a)
