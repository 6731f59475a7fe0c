"""A @tack.func whose value is a Python float returns f32 where every call
meets f32 (weak_locals.c), and f64 where one meets f64 -- NumPy's answer.

`h = 0.5; return h * k`, `return 1.0 if x > 0 else -1.0` and `return c * c`
with a Python float `c` made the function return the weak carrier, f64: an
f32 kernel calling it needed double (Metal and Intel DG2 have none).  Debug
mode (jit=False) computes in the same types: the values below are compared
bit for bit, compiled and run as Python, against NumPy in the type the
compiler chose."""

import re

import numpy as np
import pytest

import tack


@tack.func
def half(x):
    h = 0.5
    return h * x


@tack.func
def sign(x):
    return 1.0 if x > 0 else -1.0


@tack.func
def sign_local(x):
    s = 1.0 if x > 0 else -1.0
    return s


@tack.func
def square(x, c):
    return c * c if x > 0 else -(c * c)


@tack.func
def outer(x, c):
    return square(x, c) + 1.0  # a function's value flowing into another's


@tack.func
def tenth(x):
    return 0.1 if x == x else 0.2


def scaled(x, y):
    for i in range(x.shape[0]):
        y[i] = sign(x[i]) * x[i] + half(x[i])


def stored(x, y):
    for i in range(x.shape[0]):
        s = sign_local(x[i])  # a local of the caller holding the value
        y[i] = s * x[i]


def squares(x, y):
    for i in range(x.shape[0]):
        y[i] = square(x[i], 0.1) + outer(x[i], 0.1)


def products(x, y):
    for i in range(x.shape[0]):
        y[i] = x[i] * (tenth(x[i]) * tenth(x[i]))  # two values multiplied before they meet f32


KERNELS = {name: (tack.kernel(fn), tack.kernel(jit=False)(fn)) for name, fn in
           (("scaled", scaled), ("stored", stored), ("squares", squares), ("products", products))}


def _want(name, x, t):
    """NumPy in type t (the narrowed functions compute in f32)."""
    one, c = t(1.0), t(0.1)
    sgn = np.where(x > 0, one, -one).astype(t)
    if name == "scaled":
        return sgn * x + x * t(0.5)
    if name == "stored":
        return sgn * x
    if name == "products":
        return x * (c * c)
    sq = np.where(x > 0, c * c, -(c * c)).astype(t)
    return sq + (sq + one)


def _code(src):
    """An OpenCL source without its prelude's double-precision helpers (#ifdef TK_FP64)."""
    return re.sub(r"#ifdef TK_FP64.*?#endif", "", src, flags=re.S)


X32 = np.array([-2.5, -0.1, 0.0, 0.3, 7.0, 1e-3], np.float32)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_an_f32_kernel_calling_them_needs_no_double(name):
    k = KERNELS[name][0]
    y = np.zeros_like(X32)
    src = k.generated_source(X32, y, target="opencl")
    assert src.rstrip().endswith("fp64=0 */"), src[-200:]
    assert "double" not in _code(src), [line for line in _code(src).splitlines() if "double" in line]
    ir = k.ir(X32, y)
    for head in re.findall(r"^func \w+#\d+\(.*$", ir, re.M):
        assert head.split(" -> ")[1].split()[0] == "f32", head
    for line in ir.splitlines():  # nor the locals that hold them
        assert not (line.strip().startswith("locals:") and "float (Python)" in line), ir


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_compiled_and_debug_mode_compute_in_f32(name):
    want = _want(name, X32, np.float32)
    for k in KERNELS[name]:
        y = np.zeros_like(X32)
        k(X32, y)
        np.testing.assert_array_equal(y, want, err_msg=f"{name}, jit={k is KERNELS[name][0]}")
    if name in ("squares", "products"):  # computed in f32, which rounds 0.1 * 0.1 otherwise than f64 does
        assert np.float32(0.1) * np.float32(0.1) != np.float32(0.1 * 0.1)


def to_f64(x, y):
    for i in range(x.shape[0]):
        y[i] = square(x[i], 0.1)


def both(x, y32, y64):
    for i in range(x.shape[0]):
        y32[i] = square(x[i], 0.1)
        y64[i] = square(x[i], 0.1)


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_a_value_that_meets_f64_stays_f64(jit):
    f64_sq = np.where(X32 > 0, 0.1 * 0.1, -(0.1 * 0.1))  # NumPy: a Python float product, f64
    k = tack.kernel(jit=jit)(to_f64)
    x, y = X32.astype(np.float64), np.zeros(6)
    if jit:
        assert re.search(r"^func square#\d+\(.*-> float \(Python\)", k.ir(x, y), re.M)
    k(x, y)
    np.testing.assert_array_equal(y, f64_sq)
    # one specialization, one call meeting f32 and one f64: f64 for both, then rounded where stored
    k = tack.kernel(jit=jit)(both)
    y32, y64 = np.zeros(6, np.float32), np.zeros(6)
    if jit:
        assert re.search(r"^func square#\d+\(.*-> float \(Python\)", k.ir(X32, y32, y64), re.M)
    k(X32, y32, y64)
    np.testing.assert_array_equal(y64, f64_sq)
    np.testing.assert_array_equal(y32, f64_sq.astype(np.float32))
    assert not (y32 == np.where(X32 > 0, np.float32(0.1) * np.float32(0.1), -(np.float32(0.1) * np.float32(0.1)))).all()
