"""Differential tests of the kernel language against NumPy and Python (hypothesis).

Each kernel is compiled once per signature and then fed many generated inputs;
the reference is NumPy (whose integer and float // and % follow Python) or the
Python function itself.
"""

import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tack

# make test runs 40 examples a test (the two tests from the fuzzer below cost what the other 20
# each gave up); make test-all (TACK_TEST_ALL=1) runs 100
SETTINGS = settings(
    max_examples=100 if os.environ.get("TACK_TEST_ALL") == "1" else 40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow], derandomize=True
)

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
SIGNED = [np.int8, np.int32, np.int64]


def int_arrays(dtype, n=16):
    return hnp.arrays(dtype, n, elements=hnp.from_dtype(np.dtype(dtype)))


def float_arrays(dtype, n=16, **kw):
    kw.setdefault("allow_nan", False)
    kw.setdefault("allow_infinity", False)
    return hnp.arrays(dtype, n, elements=st.floats(width=np.dtype(dtype).itemsize * 8, **kw))


# ------------------------------------------------------------------ // and %
@tack.kernel
def floordiv_mod(a, b, q, r):
    for i in range(a.shape[0]):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
@SETTINGS
@given(data=st.data())
def test_int_floordiv_mod(dtype, data):
    a = data.draw(int_arrays(dtype))
    b = data.draw(int_arrays(dtype))
    b[b == 0] = 1
    if np.dtype(dtype).kind == "i":
        info = np.iinfo(dtype)
        b[(a == info.min) & (b == -1)] = 1  # the one overflowing quotient
    q = np.zeros_like(a)
    r = np.zeros_like(a)
    floordiv_mod(a, b, q, r)
    np.testing.assert_array_equal(q, np.floor_divide(a, b))
    np.testing.assert_array_equal(r, np.remainder(a, b))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@SETTINGS
@given(data=st.data())
def test_float_floordiv_mod(dtype, data):
    a = data.draw(float_arrays(dtype, min_value=-1e6, max_value=1e6))
    b = data.draw(float_arrays(dtype, min_value=-1e3, max_value=1e3))
    b[b == 0] = 1.5
    q = np.zeros_like(a)
    r = np.zeros_like(a)
    floordiv_mod(a, b, q, r)
    with np.errstate(all="ignore"):  # huge quotients overflow to inf, here as in NumPy
        np.testing.assert_array_equal(q, np.floor_divide(a, b))
        np.testing.assert_array_equal(r, np.remainder(a, b))


@pytest.mark.parametrize("a, b", [(264788.0, 0.01953125), (-264788.0, 0.01953125), (1e-30, 1e30), (-1e-30, 1e30),
                                  (16777215.0, 0.1), (3.0, 0.0), (-3.0, 0.0)])
def test_float32_floordiv_mod_round_in_float32_as_numpy(a, b):
    """f32 // and % are computed in f32, as NumPy does: 264788 / 0.01953125 is
    13557145.6, which f32 division rounds to 13557146 before the floor (NumPy's
    answer); a quotient computed in f64 gives 13557145 (found by hypothesis)."""
    x, y = np.full(3, a, np.float32), np.full(3, b, np.float32)
    q, r = np.zeros_like(x), np.zeros_like(x)
    floordiv_mod(x, y, q, r)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(q, np.floor_divide(x, y))
        np.testing.assert_array_equal(r, np.remainder(x, y))


@pytest.mark.parametrize("a, b", [(7, -2), (-7, 2), (-7, -2), (7, 2), (0, -3)])
def test_python_examples_of_floordiv_mod(a, b):
    for dtype in (np.int32, np.int64, np.float64):
        x, y = np.array([a], dtype), np.array([b], dtype)
        q, r = np.zeros_like(x), np.zeros_like(x)
        floordiv_mod(x, y, q, r)
        assert q[0] == a // b and r[0] == a % b


# ---------------------------------------------------------------- wrapping
@tack.kernel
def arith(a, b, s, d, p, n):
    for i in range(a.shape[0]):
        s[i] = a[i] + b[i]
        d[i] = a[i] - b[i]
        p[i] = a[i] * b[i]
        n[i] = -a[i]


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
@SETTINGS
@given(data=st.data())
def test_integers_wrap(dtype, data):
    a = data.draw(int_arrays(dtype))
    b = data.draw(int_arrays(dtype))
    outs = [np.zeros_like(a) for _ in range(4)]
    arith(a, b, *outs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = [a + b, a - b, a * b, -a]
    for got, want in zip(outs, expected):
        np.testing.assert_array_equal(got, want)


# --------------------------------------------------------- weak scalars (NEP 50)
@tack.kernel
def weak_ops(x, out, k, f):
    for i in range(x.shape[0]):
        out[i] = x[i] * f + k


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@SETTINGS
@given(data=st.data())
def test_weak_scalars_take_the_array_type(dtype, data):
    x = data.draw(float_arrays(dtype, min_value=-1e3, max_value=1e3))
    k = data.draw(st.integers(-1000, 1000))
    f = data.draw(st.floats(-10, 10))
    out = np.zeros(x.shape, np.float64)  # wider than the computation: shows its type
    weak_ops(x, out, k, f)
    expected = (x * dtype(f) + dtype(k)).astype(np.float64)
    np.testing.assert_array_equal(out, expected)


@tack.kernel
def add_literal(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] + 1


@SETTINGS
@given(x=int_arrays(np.int8))
def test_weak_literal_keeps_int8_and_wraps(x):
    out = np.zeros(x.shape, np.int64)
    add_literal(x, out)
    np.testing.assert_array_equal(out, (x + np.int8(1)).astype(np.int64))


@tack.kernel
def int_true_div(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] / b[i]


@SETTINGS
@given(data=st.data())
def test_int_division_gives_the_default_float(data):
    a = data.draw(hnp.arrays(np.int32, 16, elements=st.integers(-(2**24), 2**24)))
    b = data.draw(hnp.arrays(np.int32, 16, elements=st.integers(1, 2**24)))
    out = np.zeros(16, np.float64)
    int_true_div(a, b, out)
    expected = (a.astype(np.float32) / b.astype(np.float32)).astype(np.float64)
    np.testing.assert_array_equal(out, expected)


@tack.kernel
def promote_mixed(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] + b[i]


@pytest.mark.parametrize(
    "ta, tb",
    [(np.int8, np.int16), (np.uint8, np.int8), (np.int32, np.float32), (np.float32, np.float64),
     (np.uint32, np.int64)],
    ids=lambda t: np.dtype(t).name,
)
def test_concrete_types_promote_as_numpy(ta, tb):
    rng = np.random.default_rng(0)
    a = rng.integers(-50, 50, 32).astype(ta) if np.dtype(ta).kind != "u" else rng.integers(0, 100, 32).astype(ta)
    b = rng.integers(-50, 50, 32).astype(tb) if np.dtype(tb).kind != "u" else rng.integers(0, 100, 32).astype(tb)
    want = a + b
    out = np.zeros(32, want.dtype)
    promote_mixed(a, b, out)
    np.testing.assert_array_equal(out, want)


# ------------------------------------------------------------------- casts
@tack.kernel
def casts(x, as_int, as_float, as_bool, as_i8):
    for i in range(x.shape[0]):
        as_int[i] = int(x[i])
        as_float[i] = float(x[i])
        as_bool[i] = bool(x[i])
        as_i8[i] = tack.i8(int(x[i]))


@SETTINGS
@given(x=float_arrays(np.float64, min_value=-1e9, max_value=1e9))
def test_casts_from_float(x):
    as_int = np.zeros(x.shape, np.int64)
    as_float = np.zeros(x.shape, np.float64)
    as_bool = np.zeros(x.shape, np.bool_)
    as_i8 = np.zeros(x.shape, np.int8)
    casts(x, as_int, as_float, as_bool, as_i8)
    np.testing.assert_array_equal(as_int, np.trunc(x).astype(np.int64))
    np.testing.assert_array_equal(as_float, x.astype(np.float32).astype(np.float64))
    np.testing.assert_array_equal(as_bool, x != 0)
    np.testing.assert_array_equal(as_i8, np.trunc(x).astype(np.int64).astype(np.int8))


@tack.kernel
def int_casts(x, as_u8, as_f64, as_i16):
    for i in range(x.shape[0]):
        as_u8[i] = tack.u8(x[i])
        as_f64[i] = tack.f64(x[i])
        as_i16[i] = tack.i16(x[i])


@SETTINGS
@given(x=int_arrays(np.int64))
def test_integer_casts_wrap(x):
    outs = [np.zeros(x.shape, t) for t in (np.uint8, np.float64, np.int16)]
    int_casts(x, *outs)
    np.testing.assert_array_equal(outs[0], x.astype(np.uint8))
    np.testing.assert_array_equal(outs[1], x.astype(np.float64))
    np.testing.assert_array_equal(outs[2], x.astype(np.int16))


# -------------------------------------------------------------------- math
@tack.kernel
def unary_math(x, o):
    for i in range(x.shape[0]):
        o[0, i] = math.sqrt(abs(x[i]))
        o[1, i] = math.exp(x[i] / 100.0)
        o[2, i] = math.log(abs(x[i]) + 1.0)
        o[3, i] = math.sin(x[i])
        o[4, i] = math.cos(x[i])
        o[5, i] = math.atan(x[i])
        o[6, i] = math.tanh(x[i])
        o[7, i] = math.floor(x[i])
        o[8, i] = math.ceil(x[i])
        o[9, i] = math.trunc(x[i])
        o[10, i] = abs(x[i])
        o[11, i] = tack.sqrt(abs(x[i]))


@tack.kernel
def binary_math(x, y, o):
    for i in range(x.shape[0]):
        o[0, i] = math.atan2(x[i], y[i])
        o[1, i] = math.hypot(x[i], y[i])
        o[2, i] = math.copysign(x[i], y[i])
        o[3, i] = min(x[i], y[i])
        o[4, i] = max(x[i], y[i], 0.0)
        o[5, i] = math.pow(abs(x[i]), 0.5)
        o[6, i] = x[i] ** 2


@SETTINGS
@given(x=float_arrays(np.float64, min_value=-500, max_value=500), y=float_arrays(np.float64, min_value=-500, max_value=500))
def test_math_functions_f64(x, y):
    o = np.zeros((12, x.shape[0]))
    unary_math(x, o)
    expected = [np.sqrt(abs(x)), np.exp(x / 100), np.log(abs(x) + 1), np.sin(x), np.cos(x),
                np.arctan(x), np.tanh(x), np.floor(x), np.ceil(x), np.trunc(x), abs(x), np.sqrt(abs(x))]
    for row, want in zip(o, expected):
        np.testing.assert_allclose(row, want, rtol=1e-13, atol=1e-300)
    o2 = np.zeros((7, x.shape[0]))
    binary_math(x, y, o2)
    expected2 = [np.arctan2(x, y), np.hypot(x, y), np.copysign(x, y), np.minimum(x, y),
                 np.maximum(np.maximum(x, y), 0), np.sqrt(abs(x)), x**2]
    for row, want in zip(o2, expected2):
        np.testing.assert_allclose(row, want, rtol=1e-13, atol=1e-300)


@SETTINGS
@given(x=float_arrays(np.float32, min_value=-50, max_value=50))
def test_math_functions_f32(x):
    o = np.zeros((12, x.shape[0]), np.float32)
    unary_math(x, o)
    with np.errstate(all="ignore"):
        expected = [np.sqrt(abs(x)), np.exp(x / np.float32(100)), np.log(abs(x) + np.float32(1)),
                    np.sin(x), np.cos(x), np.arctan(x), np.tanh(x), np.floor(x), np.ceil(x),
                    np.trunc(x), abs(x), np.sqrt(abs(x))]
    for row, want in zip(o, expected):
        np.testing.assert_allclose(row, want, rtol=2e-6, atol=1e-6)


# ----------------------------------------------------------------- vectors
@tack.kernel
def vec_ops(p, q, d, c, n, s):
    for i in range(p.shape[0]):
        d[i] = tack.dot(p[i], q[i])
        c[i] = tack.cross(p[i], q[i])
        n[i] = tack.length(p[i] - q[i])
        s[i] = p[i] * 2.0 + q[i] - tack.vec3(p[i].x, p[i][1], p[i].z)


@SETTINGS
@given(data=st.data())
def test_vector_ops(data):
    pn = data.draw(hnp.arrays(np.float32, (8, 3), elements=st.floats(-100, 100, width=32)))
    qn = data.draw(hnp.arrays(np.float32, (8, 3), elements=st.floats(-100, 100, width=32)))
    p, q = tack.array(pn, tack.vec3), tack.array(qn, tack.vec3)
    d = np.zeros(8, np.float32)
    c = tack.zeros(8, tack.vec3)
    n = np.zeros(8, np.float32)
    s = tack.zeros(8, tack.vec3)
    vec_ops(p, q, d, c, n, s)
    p64, q64 = pn.astype(np.float64), qn.astype(np.float64)
    np.testing.assert_allclose(d, (p64 * q64).sum(1), rtol=1e-4, atol=1e-2)
    np.testing.assert_allclose(c.numpy().reshape(8, 3), np.cross(p64, q64), rtol=1e-4, atol=1e-2)
    np.testing.assert_allclose(n, np.linalg.norm(p64 - q64, axis=1), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(s.numpy().reshape(8, 3), pn + qn, rtol=1e-6, atol=1e-4)


# ----------------------------------------------------------------- atomics
@tack.kernel
def scatter_add(idx, v, acc):
    for i in range(idx.shape[0]):
        acc[idx[i]] += v[i]


@tack.kernel
def scatter_sub(idx, v, acc):
    for i in range(idx.shape[0]):
        acc[idx[i]] -= v[i]


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32], ids=["i32", "i64", "u32"])
@SETTINGS
@given(data=st.data())
def test_atomic_scatter_matches_add_at(dtype, data):
    n = data.draw(st.integers(1, 20000))
    bins = data.draw(st.integers(1, 8))
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, bins, n).astype(np.int64)
    v = rng.integers(0, 100, n).astype(dtype)
    acc = np.zeros(bins, dtype)
    scatter_add(idx, v, acc)
    want = np.zeros(bins, dtype)
    np.add.at(want, idx, v)
    np.testing.assert_array_equal(acc, want)
    scatter_sub(idx, v, acc)
    assert not acc.any()


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_atomic_float_sums(seed):
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, 4, 50000)
    v = rng.integers(-8, 8, 50000).astype(np.float64)  # exact in any order
    acc = np.zeros(4)
    scatter_add(idx, v, acc)
    want = np.zeros(4)
    np.add.at(want, idx, v)
    np.testing.assert_array_equal(acc, want)


# ----------------------------------------------------------------- ndrange
@tack.kernel
def fill2(m):
    for i, j in tack.ndrange(m.shape[0], m.shape[1]):
        m[i, j] = i * m.shape[1] + j


@tack.kernel
def fill3(m):
    for i, j, k in tack.ndrange(m.shape[0], m.shape[1], m.shape[2]):
        m[i, j, k] = (i * m.shape[1] + j) * m.shape[2] + k


@SETTINGS
@given(shape=st.tuples(st.integers(0, 40), st.integers(0, 40)))
def test_ndrange_2d(shape):
    m = np.full(shape, -1, np.int64)
    fill2(m)
    np.testing.assert_array_equal(m, np.arange(m.size).reshape(shape))


@SETTINGS
@given(shape=st.tuples(st.integers(1, 9), st.integers(1, 9), st.integers(1, 9)))
def test_ndrange_3d(shape):
    m = np.full(shape, -1, np.int32)
    fill3(m)
    np.testing.assert_array_equal(m, np.arange(m.size).reshape(shape))


# ------------------------------------------------- serial code between loops
@tack.kernel
def phases(x, a, b, out):
    n = x.shape[0]
    for i in range(n):
        a[i] = x[i] * 2
    first = a[0]
    last = a[n - 1]
    out[0] = first + last
    for i in range(n):
        b[i] = a[n - 1 - i] + first
    for i in range(1):
        total = 0
        for j in range(n):
            total += b[j]
        out[1] = total


@SETTINGS
@given(x=hnp.arrays(np.int64, st.integers(1, 3000), elements=st.integers(-1000, 1000)))
def test_serial_code_between_parallel_loops(x):
    a = np.zeros_like(x)
    b = np.zeros_like(x)
    out = np.zeros(2, np.int64)
    phases(x, a, b, out)
    wa = x * 2
    wb = wa[::-1] + wa[0]
    np.testing.assert_array_equal(a, wa)
    np.testing.assert_array_equal(b, wb)
    assert list(out) == [wa[0] + wa[-1], wb.sum()]


# ------------------------------------------------------------------- funcs
@tack.func
def piecewise(x, lo, hi):
    if x < lo:
        return lo - (lo - x) / 2
    elif x > hi:
        return hi + (x - hi) / 2
    return x


@tack.func
def poly(x):
    y = 0.0
    for k in range(4):
        y = y * x + (k + 1)
    return piecewise(y, -10.0, 10.0)


@tack.kernel
def apply_funcs(x, out):
    for i in range(x.shape[0]):
        out[i] = poly(x[i])


@SETTINGS
@given(x=float_arrays(np.float64, min_value=-5, max_value=5))
def test_funcs_match_python(x):
    out = np.zeros_like(x)
    apply_funcs(x, out)
    want = np.array([poly(v) for v in x])  # a @tack.func called from Python runs Python
    np.testing.assert_allclose(out, want, rtol=1e-15)


# ------------------------------------------------------ comparisons, boolean ops
@tack.kernel
def logic(a, b, out):
    for i in range(a.shape[0]):
        out[i] = 1 if (a[i] < b[i] <= 2 * a[i]) or (not a[i] and b[i] != 0) else 0


@SETTINGS
@given(a=int_arrays(np.int16), b=int_arrays(np.int16))
def test_chained_comparisons_and_boolean_ops(a, b):
    out = np.zeros(a.shape, np.int8)
    logic(a, b, out)
    twice = (a * np.int16(2)).astype(np.int16)  # the weak 2 is i16: it wraps as NumPy does
    want = [1 if (int(x) < int(y) <= int(t)) or (not x and y != 0) else 0 for x, y, t in zip(a, b, twice)]
    np.testing.assert_array_equal(out, want)


@tack.kernel
def bits(a, b, out):
    for i in range(a.shape[0]):
        out[0, i] = a[i] & b[i]
        out[1, i] = a[i] | b[i]
        out[2, i] = a[i] ^ b[i]
        out[3, i] = ~a[i]
        out[4, i] = a[i] >> 3
        out[5, i] = a[i] << 2


@pytest.mark.parametrize("dtype", [np.int32, np.uint16, np.int64], ids=["i32", "u16", "i64"])
@SETTINGS
@given(data=st.data())
def test_bitwise(dtype, data):
    a = data.draw(int_arrays(dtype))
    b = data.draw(int_arrays(dtype))
    out = np.zeros((6, a.shape[0]), dtype)
    bits(a, b, out)
    want = [a & b, a | b, a ^ b, ~a, a >> dtype(3), a << dtype(2)]
    for row, w in zip(out, want):
        np.testing.assert_array_equal(row, w)



# --------------------------------------------- expressions of Python int literals
# From a differential fuzzer: an expression of literals built with a shift, ~, abs, min,
# max, and/or or True/False was not folded, so it wrapped to the type it met without the
# check a literal gets ((1 << 20) + a16[i] gave a16[i]); debug mode made comparisons, `not`
# and int() of literals Python's weak values.  Each example is a few random expressions:
# the ones whose value fits int16 run in one kernel, compiled and in debug mode, against
# Python's value (a shift is NumPy's int64 shift) plus the element; the others must be
# refused, both ways, naming the value (a refusal builds nothing).
import sys

_LIT_EXAMPLES = 40 if os.environ.get("TACK_TEST_ALL") == "1" else 6


def _shift(op, x, c):
    if not 0 <= c < 64:
        return -1 if op == ">>" and x < 0 else 0
    if op == ">>":
        return x >> c
    r = (x << c) & (2**64 - 1)
    return r - 2**64 if r >= 2**63 else r


def _step(v, *parts):
    """(v, whether v and every step before it lie where a 64-bit type holds them)."""
    return v, all(p[3] for p in parts) and -2**63 <= v < 2**64


@st.composite
def _literal_exprs(draw, depth=3):
    """(source, Python's value, whether it is a bool, whether every step fits 64 bits)."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        v = draw(st.sampled_from([0, 1, -1, 2, 3, 7, 20, 127, 128, 255, 256, 32767, 32768, -32769, 65535, 100000,
                                  2**31, 2**40, 2**63, True, False]))
        return repr(v), int(v), isinstance(v, bool), True
    kind = draw(st.sampled_from(["bin", "bin", "bin", "un", "call", "boolop"]))
    if kind == "un":
        a = draw(_literal_exprs(depth - 1))
        op = draw(st.sampled_from(["-", "~"]))
        if op == "~" and a[2]:  # ~ of a bool is NumPy's logical not, in Tack as in NumPy
            return (f"(~{a[0]})", int(not a[1]), True, a[3])
        v, ok = _step(-a[1] if op == "-" else ~a[1], a)
        return f"({op}{a[0]})", v, False, ok
    if kind == "call":
        f = draw(st.sampled_from(["abs", "min", "max"]))
        a = draw(_literal_exprs(depth - 1))
        if f == "abs":
            v, ok = _step(abs(a[1]), a)
            return f"abs({a[0]})", v, False, ok
        b = draw(_literal_exprs(depth - 1))
        if a[2] and b[2]:
            return a
        pick = (b if b[1] < a[1] else a) if f == "min" else (b if b[1] > a[1] else a)
        return f"{f}({a[0]}, {b[0]})", pick[1], False, a[3] and b[3]
    a, b = draw(_literal_exprs(depth - 1)), draw(_literal_exprs(depth - 1))
    if kind == "boolop" and not (a[2] and b[2]):  # and/or of two bools is a bool value, not folded
        op = draw(st.sampled_from(["and", "or"]))
        v = (b[1] if a[1] else a[1]) if op == "and" else (a[1] if a[1] else b[1])
        return f"({a[0]} {op} {b[0]})", v, False, a[3] and b[3]
    op = draw(st.sampled_from(["+", "-", "*", "&", "|", "^", "<<", ">>"]))
    if a[2] and b[2] and op in ("&", "|", "^"):
        return f"({a[0]} {op} {b[0]})", {"&": a[1] & b[1], "|": a[1] | b[1], "^": a[1] ^ b[1]}[op], True, True
    if op in ("<<", ">>"):
        if not (-2**63 <= a[1] < 2**63 and -2**63 <= b[1] < 2**63):
            return a  # a uint64-only value is not shifted as a Python int (refused)
        v, ok = _step(_shift(op, a[1], b[1]), a, b)
        return f"({a[0]} {op} {b[0]})", v, False, ok
    v = {"+": a[1] + b[1], "-": a[1] - b[1], "*": a[1] * b[1], "&": a[1] & b[1], "|": a[1] | b[1],
         "^": a[1] ^ b[1]}[op]
    v, ok = _step(v, a, b)
    return f"({a[0]} {op} {b[0]})", v, False, ok


def _literal_kernel(tmp_path, texts, jit):
    """out[k, i] = (texts[k]) + a[i], one kernel for them all (test_int_literals.py's)."""
    sys.path.insert(0, os.path.dirname(__file__))
    from test_int_literals import _add_kernel

    return _add_kernel(tmp_path, texts, jit)


@settings(max_examples=_LIT_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture], derandomize=True)
@given(exprs=st.lists(_literal_exprs(), min_size=4, max_size=8))
def test_expressions_of_literals_fold_like_python(tmp_path, exprs):
    a = np.array([0, 1, -5, 32767, -32768], np.int16)
    fit = [(t, v) for t, v, _, ok in exprs if ok and -32768 <= v <= 32767]
    for t, v, _, ok in exprs:
        if ok and -32768 <= v <= 32767:
            continue
        message = f"Python integer {v} is out of bounds for i16" if ok else "64-bit|2\\*\\*63"
        for jit in (True, False):
            with pytest.raises(tack.CompileError, match=message):
                _literal_kernel(tmp_path, [t], jit)(a, np.zeros((1, 5), np.int16))
    if fit:
        for jit in (True, False):
            out = np.zeros((len(fit), 5), np.int16)
            _literal_kernel(tmp_path, [t for t, _ in fit], jit)(a, out)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for (t, v), row in zip(fit, out):
                    assert row.tolist() == (a + np.int16(v)).tolist(), (t, jit)


# ------------------------------------------------ complex products, compiled and debug
# From the fuzzer: debug mode multiplied complex scalars with NumPy's scalar operator, whose
# product is not fused as NumPy's array loop's and the compiled kernel's is (half of random
# products differed in the last bit).
@tack.kernel
def complex_mix(a, b, c, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * b[i] + c[i] * a[i] - b[i] / c[i]


complex_mix_debug = tack.kernel(complex_mix.__wrapped__, jit=False)


def _complex_arrays(dtype, n=16):
    w = 32 if dtype == np.complex64 else 64
    part = st.floats(-1e3, 1e3, width=w)
    return hnp.arrays(dtype, n, elements=st.builds(complex, part, part))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=["c64", "c128"])
@SETTINGS
@given(data=st.data())
def test_complex_arithmetic_compiled_debug_and_numpy(dtype, data):
    a, b, c = (data.draw(_complex_arrays(dtype)) for _ in range(3))
    c[c == 0] = 1
    outs = [np.zeros(16, dtype), np.zeros(16, dtype)]
    complex_mix(a, b, c, outs[0])
    complex_mix_debug(a, b, c, outs[1])
    with np.errstate(all="ignore"):
        want = a * b + c * a - b / c
    assert outs[0].tobytes() == outs[1].tobytes()
    np.testing.assert_array_equal(outs[0], want)
