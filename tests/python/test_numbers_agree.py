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

import math

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


def _same_bits(g, w):
    """The same bits, but any NaN for a NaN (0.0 / 0.0 is -nan on x86-64)."""
    if g.dtype.kind == "f":
        nan = np.isnan(g)
        return bool((nan == np.isnan(w)).all()) and g[~nan].tobytes() == w[~nan].tobytes()
    return g.tobytes() == w.tobytes()


def assert_both(fn, make, want, **opts):
    c, p = both(fn, make, **opts)
    for got in (c, p):
        if isinstance(want, type):
            assert isinstance(got, tuple) and got[0] is want, got
        else:
            assert not isinstance(got, tuple), got
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and _same_bits(g, w), (fn.__name__, g, w)
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


# ------------------------------------------------- found by test_fuzz_numbers.py
def own_element_add(x, o):
    for i in range(o.shape[0]):
        o[i] += x[i]


def test_parallel_add_into_own_element_converts_first_both_ways():
    """`o[i] += x[i]` in a parallel loop is an atomic add made a plain update on the iteration's own
    element (privatize.c): x[i] is converted to o's type first, then added, as compiled; debug mode
    added in the promoted type and converted after (1 + -0.2 -> 0 where compiled gave 1)."""
    x = np.array([-0.2, 0.7, -1.5, 2.5])
    assert_both(own_element_add, lambda: (x, np.ones(4, np.int16)), [x, np.array([1, 1, 0, 3], np.int16)])
    y = np.array([1e-9, 0.1, 3.0000001, -2.5], np.float64)
    want = np.ones(4, np.float32) + y.astype(np.float32)  # f32 adds of the f32 roundings
    assert_both(own_element_add, lambda: (y, np.ones(4, np.float32)), [y, want])


def copysign_unsigned(a, o):
    for i in range(o.shape[0]):
        o[i] = math.copysign(a[i], ~i)


def test_math_of_unsigned_and_negative_run_time_int_both_ways():
    """math.copysign(u32, ~i): each argument becomes the function's float; debug mode checked -1
    against uint32 as for `+` (NumPy 2's OverflowError) where compiled gives -x."""
    a = np.array([64, 0, 7], np.uint32)
    assert_both(copysign_unsigned, lambda: (a, np.zeros(3)), [a, -a.astype(np.float64)])


def plus_bool(b, o):
    for i in range(o.shape[0]):
        o[i] = (+b[i]) + True


def test_unary_plus_of_bool_both_ways():
    """+b of a bool is Python's int (the compiled kernel's i64); debug mode ran NumPy's positive,
    which has no bool loop (UFuncTypeError)."""
    b = np.array([True, False])
    assert_both(plus_bool, lambda: (b, np.zeros(2)), [b, np.array([2.0, 1.0])])


def big_literal(o, o2):
    for i in range(o.shape[0]):
        o[i] = i % 9223372036854775808
        o2[i] = i + 9223372036854775808


def test_literal_above_int64_meets_run_time_int_both_ways():
    """A literal from 2**63 up is a uint64 (lower_pyint.c): `i % 2**63` and `i + 2**63` are uint64
    arithmetic; debug mode computed them as run-time ints in int64, wrapping (i % 2**63 gave
    -2**63 + i's remainder, i + 2**63 a negative number)."""
    want2 = (np.arange(3, dtype=np.uint64) + np.uint64(2**63)).astype(np.float64)
    assert_both(big_literal, lambda: (np.zeros(3), np.zeros(3)), [np.arange(3.0), want2])


def big_literal_compare(o):
    for i in range(o.shape[0]):
        o[i] = (18446744073709551615 >= (-1)) + (-5 < 9223372036854775808) * 2


def test_comparison_of_literals_above_int64_is_pythons():
    """`2**64 - 1 >= -1` of two literals is Python's True; the compiler converted -1 to the uint64
    of the other literal and refused it ("Python integer -1 is out of bounds for u64")."""
    assert_both(big_literal_compare, lambda: (np.zeros(2),), [np.full(2, 3.0)])


def np_abs_of_python_int(a, s, o):
    for i in range(o.shape[0]):
        o[i] = a[i] << np.abs(s)


def test_np_abs_of_python_int_stays_an_int_both_ways():
    """np.abs of a Python int argument is a Python int, as compiled (abs_of): uint64 << it is uint64;
    debug mode called NumPy's np.abs (an int64), and uint64 << int64 has no NumPy loop (TypeError)."""
    a = np.array([3, 4], np.uint64)
    assert_both(np_abs_of_python_int, lambda: (a, -7, np.zeros(2, np.uint64)), [a, a << np.uint64(7)])


def bool_argument(s, a8, o):
    for i in range(o.shape[1]):
        o[0, i] = (0 * s) / s
        o[1, i] = s / 3
        o[2, i] = ~(s & True)


def bool_argument_meets_int8(s, a8, o):
    for i in range(o.shape[0]):
        o[i] = max(128, s) & a8[i]


def test_python_bool_argument_is_known_at_run_time_both_ways():
    """A Python bool argument is a weak bool known at run time (the compiled parameter is one):
    `(0 * s) / s` with s False is NaN (0.0 / 0.0 in the default float), `s / 3` the default
    float's; debug mode took it for a literal: Python's ZeroDivisionError, 1 / 3 in f64, and
    max(128, s) & a8[i] wrapped 128 into int8 where compiled raises NumPy 2's OverflowError."""
    a8 = np.array([1, 2], np.int8)
    third = float(np.float32(1) / np.float32(3))
    assert_both(bool_argument, lambda: (False, a8, np.zeros((3, 2))),
                [a8, np.array([[np.nan] * 2, [0.0] * 2, [1.0] * 2])])
    assert_both(bool_argument, lambda: (True, a8, np.zeros((3, 2))),
                [a8, np.array([[0.0] * 2, [third] * 2, [0.0] * 2])])
    assert_both(bool_argument_meets_int8, lambda: (True, a8, np.zeros(2)), OverflowError)


def literal_division(o):
    for i in range(o.shape[0]):
        o[0] = 9007199254740993 / 3
        o[1] = 2147483648 / 0
        o[2] = 0 / 0


def test_division_of_int_literals_is_float64s_both_ways():
    """`/` of two int literals divides their float64 values, as the compiler folds it: 1 / 0 is inf,
    0 / 0 NaN; debug mode divided Python's ints (ZeroDivisionError, and 2**53 + 1 divided exactly)."""
    assert_both(literal_division, lambda: (np.zeros(3),),
                [np.array([np.float64(9007199254740993) / 3, np.inf, np.nan])])


def weak_math_into_f16(f, o, o2):
    for i in range(o.shape[0]):
        o[i] = min(np.fmod(10000000000.0, np.sin(-1e-300)), False)
        o2[i] = f


def test_weak_floats_meeting_f16_are_computed_in_f32_both_ways():
    """A weak float computed at run time (a math call of literals, which the compiler does not fold)
    stored into f16 meets f32, the element's value type (lw_half_value), as compiled:
    np.sin(-1e-300) is sin of f32 -0.0, fmod(1e10, -0.0) NaN, and min picks it in f32 (debug mode
    computed it in f64 and rounded once: 0.0). A Python float argument stored as it is is no
    computation: it is rounded once, as NumPy stores it -- 1 + 2**-11 + 2**-30 is f16's
    1.0009765625; through f32 (1 + 2**-11, a tie) it became 1.0, in both modes."""
    v = 1 + 2**-11 + 2**-30
    assert_both(weak_math_into_f16, lambda: (v, np.zeros(2, np.float16), np.zeros(2, np.float16)),
                [np.full(2, np.nan, np.float16), np.full(2, np.float16(v))])
    assert np.float16(v) == 1.0009765625


def and_or_narrowing(a8, f, x32, o, o2, o3):
    for i in range(o.shape[0]):
        o[i] = (2147483648 * i) and a8[i]
        o2[i] = (2147483648 * i) or a8[i]
        o3[i] = f and x32[i]


def test_and_or_test_the_operand_before_converting_it():
    """`a and b` tests a itself, as Python does, then gives the pick in the promoted type: 2**31 * i
    is true though it is 0 in uint8, and a Python float of 1e-300 is true though it is 0.0 in f32.
    Compiled and debug mode both tested the converted value (and picked the wrong operand)."""
    a8, x32 = np.array([5, 6, 7], np.uint8), np.array([2.0, 3.0, 4.0], np.float32)
    assert_both(and_or_narrowing, lambda: (a8, 1e-300, x32, np.zeros(3), np.zeros(3), np.zeros(3)),
                [a8, x32, np.array([0.0, 6.0, 7.0]), np.array([5.0, 0.0, 0.0]), np.array([2.0, 3.0, 4.0])])


def weak_complex_compare(a8, s, z, f, o, o2):
    for i in range(o.shape[0]):
        o[i] = z == f
        o2[i] = a8[i] // ((-1) or s)


def test_run_time_python_scalars_in_and_or_and_complex_equality_both_ways():
    """A Python complex argument compared with a Python float argument is compared as complex (debug
    mode converted the complex to the default float: TypeError); `(-1) or s` with s a Python int
    argument is picked at run time, a run-time int, so -1 meeting uint8 in `//` raises NumPy 2's
    OverflowError, as compiled (debug mode kept the literal and wrapped it)."""
    a8 = np.array([7, 9], np.uint8)
    assert_both(weak_complex_compare, lambda: (a8, 3, 2 + 1.5j, 2.0, np.zeros(2, bool), np.zeros(2)),
                OverflowError)
    assert_both(complex_equals_float, lambda: (2 + 0j, 2.0, np.zeros(2, bool)), [np.ones(2, bool)])
    assert_both(complex_equals_float, lambda: (2 + 1j, 2.0, np.zeros(2, bool)), [np.zeros(2, bool)])


def complex_equals_float(z, f, o):
    for i in range(o.shape[0]):
        o[i] = z == f


def literal_negative_power(o):
    for i in range(o.shape[0]):
        o[0] = 0 ** -1
        o[1] = False ** (-9223372036854775808)
        o[2] = 3 ** -40


def test_negative_power_of_int_literals_is_cs_pow_both_ways():
    """An int literal to a negative literal power is a float, folded with C's pow as the compiler
    folds it: 0 ** -1 is inf; debug mode used Python's, which raises ZeroDivisionError."""
    assert_both(literal_negative_power, lambda: (np.zeros(3),), [np.array([np.inf, np.inf, 3.0 ** -40])])


def literal_floats_meet_f32(x, o, o2, o3, h):
    for i in range(o.shape[0]):
        o[i] = x[i] ** (1e300 % -2**63)
        o2[i] = x[i] + 1e300 * 1e-300
        o3[i] = x[i] + ((1e300 if x[i] > 0 else 2.0) * 1e-300 + i)
        h[i] = x[i] - (-1e300 + 1e300)


def test_expressions_of_float_literals_are_pythons_where_they_meet_f32():
    """An expression of Python float literals is Python's float, computed in f64 and rounded once
    where it meets f32 (or f16), as in debug mode and NumPy: `1e300 % -2**63` is -0.0, so
    x ** -0.0 is 1. The compiler pushed the conversion to f32 into the literals, as it does for a
    Python float argument, so 1e300 became inf and the result NaN."""
    x = np.array([0.5, 3.0], np.float32)
    assert_both(literal_floats_meet_f32,
                lambda: (x.copy(), np.zeros(2, np.float32), np.zeros(2, np.float32), np.zeros(2, np.float32),
                         np.zeros(2, np.float16)),
                [np.array([0.5, 3.0], np.float32), np.ones(2, np.float32), x + np.float32(1),
                 x + np.array([1, 2], np.float32), x.astype(np.float16)])


def python_float_into_f16(s, h, h2, h3, d):
    for i in range(h.shape[0]):
        t = s
        h[i] = s
        h2[i] = t if i > 0 else d[i]
        h3[i] += d[i]


def test_python_float_and_f64_stored_into_f16_round_once_both_ways():
    """A Python float argument (or a local holding it) stored into f16 is rounded once, as NumPy
    stores it: at 1 + 2**-11 + 2**-40, f32 gives the tie 1 + 2**-11 and then f16 1.0; NumPy (and
    a float64 element) 1.0009765625. Both modes went through f32. And `h[i] += d[i]` with an f64
    `d` is NumPy's update (f16 has no atomic: the compiled kernel adds in f64 and rounds once);
    debug mode took it as an atomic, d[i] made f32 first."""
    v = 1 + 2**-11 + 2**-40
    want = np.full(2, np.float16(v))
    assert want[0] == np.float16(1.0009765625) and np.float16(np.float32(v)) == 1.0
    assert_both(python_float_into_f16,
                lambda: (v, np.zeros(2, np.float16), np.zeros(2, np.float16), np.zeros(2, np.float16),
                         np.full(2, v)),
                [want, want, want, np.full(2, v)])


def python_int_arg(a, s, o):
    for i in range(o.shape[0]):
        o[i] = a[i] + s


@pytest.mark.parametrize("s", [2**64, -2**63 - 1, 2**70])
def test_python_int_argument_beyond_64_bits_is_refused_by_name(s):
    """A Python int argument no 64-bit type holds is an OverflowError naming the argument, compiled
    and in debug mode (NumPy 2 refuses it too), never wrapped -- for int64, uint64 and float64
    arrays alike."""
    for dt in (np.int64, np.uint64, np.float64):
        for jit in (True, False):
            with pytest.raises(OverflowError, match="argument 's'"):
                tack.kernel(python_int_arg, jit=jit)(np.zeros(2, dt), s, np.zeros(2, dt))


def test_python_int_argument_from_2_63_is_uint64s_only():
    """2**63 .. 2**64 - 1 is accepted where it meets uint64 (NumPy 2's answer), and refused with the
    argument's name where it meets int64 or float64, both modes."""
    for s in (2**63, 2**64 - 1):
        for jit in (True, False):
            o = np.zeros(2, np.uint64)
            tack.kernel(python_int_arg, jit=jit)(np.ones(2, np.uint64) * 0, s, o)
            assert o.tolist() == [s, s]
            for dt in (np.int64, np.float64):
                with pytest.raises(OverflowError, match="argument 's'"):
                    tack.kernel(python_int_arg, jit=jit)(np.zeros(2, dt), s, np.zeros(2, dt))


def literal_picked_by_constant_condition(a, s, o):
    for i in range(o.shape[0]):
        o[i] = a[i] * s + (2147483648 if 300 else i)


def test_literal_picked_by_a_constant_condition_is_checked_both_ways():
    """`x if c else y` is never folded by the compiler, whatever c: a Python int literal it picks is
    an integer known at run time, so 2**31 meeting int32 is NumPy 2's OverflowError when it runs.
    Debug mode folded a constant condition to the literal, which it does not check (the compiler
    refuses an out-of-bounds literal), and wrapped silently: -2**31 + 14."""
    assert_both(literal_picked_by_constant_condition,
                lambda: (np.array([2, 64], np.int32), 7, np.zeros(2)), OverflowError)
