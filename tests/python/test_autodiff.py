"""Reverse-mode differentiation (tack.Tape, kernel.adjoint; docs/differentiation.md).

Every differentiable intrinsic is checked in ONE adjoint launch against central finite differences
and against PyTorch's autograd of the same expression in f64; a 2-D heat equation over 100 steps
against PyTorch; debug mode against the compiled adjoint; every refusal at its line; the tape's API.
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tack
from tack import _autodiff_run as _autodiff, _core
from tack._derivs import DERIVS

ROOT = Path(__file__).resolve().parents[2]
# importing torch, hiprtc and PoCL's builds take seconds each: those parts run under make test-all
TEST_ALL = os.environ.get("TACK_TEST_ALL") == "1"


def test_derivative_table_is_fresh():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_autodiff.py"), "--check"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr


@tack.kernel
def every_deriv(a, out):
    for i in range(a.shape[0]):
        out[i, 0] = tack.sqrt(a[i, 0, 0])
        out[i, 1] = tack.exp(a[i, 1, 0])
        out[i, 2] = tack.log(a[i, 2, 0])
        out[i, 3] = tack.log2(a[i, 3, 0])
        out[i, 4] = tack.log10(a[i, 4, 0])
        out[i, 5] = tack.sin(a[i, 5, 0])
        out[i, 6] = tack.cos(a[i, 6, 0])
        out[i, 7] = tack.tan(a[i, 7, 0])
        out[i, 8] = tack.asin(a[i, 8, 0])
        out[i, 9] = tack.acos(a[i, 9, 0])
        out[i, 10] = tack.atan(a[i, 10, 0])
        out[i, 11] = tack.sinh(a[i, 11, 0])
        out[i, 12] = tack.cosh(a[i, 12, 0])
        out[i, 13] = tack.tanh(a[i, 13, 0])
        out[i, 14] = tack.floor(a[i, 14, 0])
        out[i, 15] = tack.ceil(a[i, 15, 0])
        out[i, 16] = tack.trunc(a[i, 16, 0])
        out[i, 17] = math.fabs(a[i, 17, 0])
        out[i, 18] = tack.atan2(a[i, 18, 0], a[i, 18, 1])
        out[i, 19] = math.pow(a[i, 19, 0], a[i, 19, 1])
        out[i, 20] = tack.hypot(a[i, 20, 0], a[i, 20, 1])
        out[i, 21] = tack.fmod(a[i, 21, 0], a[i, 21, 1])
        out[i, 22] = tack.copysign(a[i, 22, 0], a[i, 22, 1])
        out[i, 23] = math.erf(a[i, 23, 0])
        out[i, 24] = math.erfc(a[i, 24, 0])
        out[i, 25] = tack.log1p(a[i, 25, 0])
        out[i, 26] = tack.expm1(a[i, 26, 0])
        out[i, 27] = tack.cbrt(a[i, 27, 0])
        out[i, 28] = tack.exp2(a[i, 28, 0])
        out[i, 29] = tack.asinh(a[i, 29, 0])
        out[i, 30] = tack.acosh(a[i, 30, 0])
        out[i, 31] = tack.atanh(a[i, 31, 0])
        out[i, 32] = math.remainder(a[i, 32, 0], a[i, 32, 1])
        out[i, 33] = tack.rint(a[i, 33, 0])
        out[i, 34] = tack.fma(a[i, 34, 0], a[i, 34, 1], a[i, 34, 2])
        out[i, 35] = tack.rsqrt(a[i, 35, 0])
        out[i, 36] = tack.sign(a[i, 36, 0])
        out[i, 37] = tack.clamp(a[i, 37, 0], a[i, 37, 1], a[i, 37, 2])
        out[i, 38] = tack.lerp(a[i, 38, 0], a[i, 38, 1], a[i, 38, 2])
        out[i, 39] = tack.smoothstep(a[i, 39, 0], a[i, 39, 1], a[i, 39, 2])
        out[i, 40] = tack.step(a[i, 40, 0], a[i, 40, 1])
        out[i, 41] = tack.degrees(a[i, 41, 0])
        out[i, 42] = tack.radians(a[i, 42, 0])
        out[i, 43] = abs(a[i, 43, 0])
        out[i, 44] = min(a[i, 44, 0], a[i, 44, 1])
        out[i, 45] = max(a[i, 45, 0], a[i, 45, 1])
        out[i, 46] = np.minimum(a[i, 46, 0], a[i, 46, 1])
        out[i, 47] = np.maximum(a[i, 47, 0], a[i, 47, 1])
        out[i, 48] = float(a[i, 48, 0])
        out[i, 49] = np.square(a[i, 49, 0])
        out[i, 50] = np.power(a[i, 50, 0], a[i, 50, 1])
        out[i, 51] = round(a[i, 51, 0])
        out[i, 52] = np.around(a[i, 52, 0])

# each row's arguments: (lo, hi) per argument, away from kinks and ties
_DOMAIN = {
    "asin": [(-0.8, 0.8)], "acos": [(-0.8, 0.8)], "atanh": [(-0.8, 0.8)], "acosh": [(1.2, 3.0)],
    "atan2": [(0.3, 2.0), (0.3, 2.0)], "pow": [(0.5, 2.0), (-1.5, 1.5)], "hypot": [(0.3, 2.0), (-2.0, -0.3)],
    "fmod": [(2.1, 2.4), (0.9, 1.0)], "copysign": [(0.3, 2.0), (-2.0, -0.3)], "remainder": [(2.1, 2.4), (0.9, 1.0)],
    "clamp": [(0.2, 0.8), (0.0, 0.1), (0.9, 1.0)], "lerp": [(-1.0, 1.0), (2.0, 3.0), (0.1, 0.9)],
    "smoothstep": [(0.0, 0.1), (0.9, 1.0), (0.3, 0.7)], "step": [(0.0, 0.1), (0.5, 0.9)],
    "min": [(0.0, 0.4), (0.6, 1.0)], "max": [(0.0, 0.4), (0.6, 1.0)], "minimum": [(0.6, 1.0), (0.0, 0.4)],
    "maximum": [(0.6, 1.0), (0.0, 0.4)], "fma": [(-2.0, 2.0)] * 3,
    "floor": [(0.1, 0.9)], "ceil": [(0.1, 0.9)], "trunc": [(0.1, 0.9)], "rint": [(0.1, 0.4)],
    "power": [(0.5, 2.0), (-1.5, 1.5)], "round": [(0.1, 0.4)], "around": [(0.1, 0.4)],
    "sign": [(0.2, 0.9)], "fabs": [(-2.0, -0.2)], "abs": [(0.2, 2.0)],
}


def _torch_of(name, torch):
    t = torch
    one = {"sqrt": t.sqrt, "exp": t.exp, "log": t.log, "log2": t.log2, "log10": t.log10, "sin": t.sin,
           "cos": t.cos, "tan": t.tan, "asin": t.asin, "acos": t.acos, "atan": t.atan, "sinh": t.sinh,
           "cosh": t.cosh, "tanh": t.tanh, "floor": t.floor, "ceil": t.ceil, "trunc": t.trunc, "fabs": t.abs,
           "erf": t.erf, "erfc": t.erfc, "log1p": t.log1p, "expm1": t.expm1, "exp2": t.exp2, "asinh": t.asinh,
           "acosh": t.acosh, "atanh": t.atanh, "rint": t.round, "rsqrt": t.rsqrt, "sign": t.sign,
           "degrees": t.rad2deg, "radians": t.deg2rad, "abs": t.abs, "float": lambda x: x * 1,
           "cbrt": lambda x: t.pow(x, 1.0 / 3.0),
           "atan2": t.atan2, "pow": t.pow, "hypot": t.hypot, "fmod": t.fmod, "copysign": t.copysign,
           "remainder": lambda x, y: x - t.round(x / y) * y, "min": t.minimum, "max": t.maximum,
           "minimum": t.minimum, "maximum": t.maximum,
           "square": t.square, "power": t.pow, "round": t.round, "around": t.round,
           "step": lambda e, x: (x >= e).double() + 0 * (e + x),
           "fma": lambda x, y, z: x * y + z, "clamp": lambda x, lo, hi: t.minimum(t.maximum(x, lo), hi),
           "lerp": lambda a, b, w: a + w * (b - a)}
    if name == "smoothstep":
        def f(e0, e1, x):
            u = t.clamp((x - e0) / (e1 - e0), 0.0, 1.0)
            return u * u * (3 - 2 * u)
        return f
    return one[name]


def test_every_intrinsic_against_finite_differences_and_torch():
    # importing torch takes seconds on a busy machine: its comparison runs under make test-all
    torch = pytest.importorskip("torch") if TEST_ALL else None
    names = list(DERIVS)
    written = set()
    for line in Path(__file__).read_text().split("def every_deriv", 1)[1].split("_DOMAIN", 1)[0].splitlines():
        if "out[i, " in line:
            written.add(line.split("=", 1)[1].strip().split("(", 1)[0].split(".")[-1])
    assert written == set(names), "every TK_DERIV row is in every_deriv, and nothing else"
    rng = np.random.default_rng(3)
    n, k = 2, len(names)
    a = np.full((n, k, 3), 0.5)
    for r, name in enumerate(names):
        dom = _DOMAIN.get(name, [(0.2, 0.9)] * len(DERIVS[name]))
        for j, (lo, hi) in enumerate(dom):
            a[:, r, j] = rng.uniform(lo, hi, n)
    out = np.zeros((n, k))
    seed = rng.uniform(0.5, 1.5, (n, k))
    ga = np.zeros_like(a)
    every_deriv.adjoint(a, out, grads={"a": ga, "out": seed.copy()})  # one adjoint launch, every row
    # finite differences: 6 forward launches (a row depends on its own arguments only)
    h = 1e-6
    fd = np.zeros_like(a)
    for j in range(3):
        hi_, lo_ = a.copy(), a.copy()
        hi_[:, :, j] += h
        lo_[:, :, j] -= h
        o1, o2 = np.zeros((n, k)), np.zeros((n, k))
        every_deriv(hi_, o1)
        every_deriv(lo_, o2)
        fd[:, :, j] = seed * (o1 - o2) / (2 * h)
    for r, name in enumerate(names):
        m = len(DERIVS[name])
        if name == "float":  # the default float, f32: finite differences would measure its rounding
            fd[:, r, 0] = seed[:, r]
        for j in range(m):
            np.testing.assert_allclose(ga[:, r, j], fd[:, r, j], rtol=1e-6, atol=1e-7, err_msg=f"{name} arg {j} (fd)")
        assert not ga[:, r, m:].any(), name  # nothing reaches the unused argument slots
        if torch is None:
            continue
        ins = [torch.tensor(a[:, r, j], dtype=torch.float64, requires_grad=True) for j in range(m)]
        y = _torch_of(name, torch)(*ins)
        (y * torch.tensor(seed[:, r])).sum().backward()
        for j in range(m):
            want = ins[j].grad.numpy() if ins[j].grad is not None else np.zeros(n)
            np.testing.assert_allclose(ga[:, r, j], want, rtol=1e-12, atol=1e-12, err_msg=f"{name} arg {j} (torch)")


def _pow_call(a, b, out):
    for i in range(a.shape[0]):
        out[i] = math.pow(a[i], b[i])


def _pow_operator(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] ** b[i]


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_pow_at_a_zero_base_or_exponent(jit, dt):
    """0 ** b is 0 for every b > 0, so its derivative in b is 0, and a ** 0 is 1 for every a, so its
    derivative in a is 0: PyTorch's and JAX's values.  The rows' formulas, r * log(a) and
    b * a ** (b - 1), gave NaN (0 * -inf, 0 * inf) there, and a NaN in one element's gradient
    spreads to every parameter it reaches."""
    a = np.array([0.0, 0.0, 0.0, -0.0, 2.0, 0.0, 0.5], dt)
    b = np.array([1.5, 1.0, 0.0, 2.0, 0.0, -1.0, 0.5], dt)
    ga_want = [0.0, 1.0, 0.0, -0.0, 0.0, -np.inf, 0.5 * 0.5 ** -0.5]
    gb_want = [0.0, 0.0, 0.0, 0.0, np.log(2.0), -np.inf, 0.5 ** 0.5 * np.log(0.5)]
    for fn in (_pow_call, _pow_operator):
        ga, gb = np.zeros_like(a), np.zeros_like(a)
        tack.kernel(jit=jit)(fn).adjoint(a, b, np.zeros_like(a), grads={"a": ga, "b": gb, "out": np.ones_like(a)})
        np.testing.assert_allclose(ga, ga_want, rtol=1e-6, err_msg=f"{fn.__name__}, d/da")
        np.testing.assert_allclose(gb, gb_want, rtol=1e-6, err_msg=f"{fn.__name__}, d/db")


@tack.kernel
def heat_step(u, k, unew):
    n, m = u.shape
    for i, j in tack.ndrange((1, n - 1), (1, m - 1)):
        lap = u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j]
        unew[i, j] = u[i, j] + k[i, j] * lap


@tack.kernel
def sum_squares(u, loss):
    for i, j in tack.ndrange(u.shape):
        loss[0] += u[i, j] * u[i, j]


def _heat_reference(u0, k0):
    """The same 100 steps and their gradients by hand (the adjoint of the stencil, written out in NumPy)."""
    us = [u0]
    for _ in range(100):
        c = us[-1]
        nxt = np.zeros_like(c)
        lap = c[:-2, 1:-1] + c[2:, 1:-1] + c[1:-1, :-2] + c[1:-1, 2:] - 4 * c[1:-1, 1:-1]
        nxt[1:-1, 1:-1] = c[1:-1, 1:-1] + k0[1:-1, 1:-1] * lap
        us.append(nxt)
    g = 2 * us[-1]
    gk = np.zeros_like(k0)
    for c in reversed(us[:-1]):
        gi = np.zeros_like(g)
        gi[1:-1, 1:-1] = g[1:-1, 1:-1]
        lap = c[:-2, 1:-1] + c[2:, 1:-1] + c[1:-1, :-2] + c[1:-1, 2:] - 4 * c[1:-1, 1:-1]
        gk[1:-1, 1:-1] += gi[1:-1, 1:-1] * lap
        kg = k0 * gi
        prev = gi - 4 * kg
        prev[:-2, 1:-1] += kg[1:-1, 1:-1]
        prev[2:, 1:-1] += kg[1:-1, 1:-1]
        prev[1:-1, :-2] += kg[1:-1, 1:-1]
        prev[1:-1, 2:] += kg[1:-1, 1:-1]
        g = prev
    return float((us[-1] ** 2).sum()), g, gk


def test_heat_equation_100_steps_against_torch():
    torch = pytest.importorskip("torch") if TEST_ALL else None
    rng = np.random.default_rng(0)
    u0 = rng.uniform(0, 1, (12, 10))
    k0 = rng.uniform(0.05, 0.2, (12, 10))
    u = tack.array(u0, tack.f64, requires_grad=True)
    kk = tack.array(k0, tack.f64, requires_grad=True)
    loss = tack.zeros(1, tack.f64)
    with tack.Tape() as tape:
        cur = u
        for _ in range(100):
            nxt = tack.array(u0 * 0, tack.f64)  # each step its own array (the border stays 0)
            heat_step(cur, kk, nxt)
            cur = nxt
        sum_squares(cur, loss)
    tape.backward(loss)
    l_ref, gu_ref, gk_ref = _heat_reference(u0, k0)
    assert abs(loss.numpy()[0] - l_ref) < 1e-12 * l_ref
    np.testing.assert_allclose(u.grad.numpy(), gu_ref, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(kk.grad.numpy(), gk_ref, rtol=1e-10, atol=1e-14)
    assert len(tape.launches) == 101
    # zero() clears every gradient, reset() forgets the launches
    tape.zero()
    assert not u.grad.numpy().any() and not kk.grad.numpy().any()
    tape.reset()
    assert tape.launches == []
    if torch is None:
        return
    tape = None
    tu = torch.tensor(u0, requires_grad=True)
    tk = torch.tensor(k0, requires_grad=True)
    c = tu
    for _ in range(100):
        lap = c[:-2, 1:-1] + c[2:, 1:-1] + c[1:-1, :-2] + c[1:-1, 2:] - 4 * c[1:-1, 1:-1]
        nxt = torch.zeros_like(c)
        nxt[1:-1, 1:-1] = c[1:-1, 1:-1] + tk[1:-1, 1:-1] * lap
        c = nxt
    tl = (c * c).sum()
    tl.backward()
    assert abs(l_ref - tl.item()) < 1e-12 * abs(tl.item())
    np.testing.assert_allclose(gu_ref, tu.grad.numpy(), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(gk_ref, tk.grad.numpy(), rtol=1e-10, atol=1e-14)


@tack.kernel
def _products(a, b, y):
    for i in range(y.shape[0]):
        y[i] = a[i] * b[i]


@tack.kernel
def _dots(a, b, y):
    for i in range(y.shape[0]):
        y[i] = tack.dot(a[i], b[i])


def test_one_array_read_as_two_parameters_gets_both_gradients():
    """pair(x, x): the gradients of `a` and `b` are one array, and each iteration summed its adds
    into a local per parameter and stored them, the second store dropping the first's adds (x.grad
    was x, not 2x).  Each parameter now adds into memory of its own."""
    xv = np.array([1.0, 2.0, 3.0])
    for jit in (True, False):
        k = _products if jit else tack.kernel(jit=False)(_products.__wrapped__)
        x = tack.array(xv, tack.f64, requires_grad=True)
        y, loss = tack.zeros(3, tack.f64), tack.zeros(1, tack.f64)
        with tack.Tape() as tape:
            k(x, x, y)
            sum_squares(y.reshape(1, 3), loss)
        tape.backward(loss)
        np.testing.assert_array_equal(x.grad.numpy(), 4 * xv ** 3)  # d/dx sum(x^4)
        g = np.zeros(3)
        k.adjoint(xv, xv, np.zeros(3), grads={"a": g, "b": g, "y": np.ones(3)})
        np.testing.assert_array_equal(g, 2 * xv)
    # arrays of vectors (the gradients' component views), and a repeated gradient on a device
    v = np.array([[1.0, 2.0, 2.0], [0.5, -1.0, 3.0]])
    devices = ["cpu"] + [d for d in tack.devices() if d.startswith("opencl")][:1]
    for dev in devices:
        x = tack.array(v, tack.vec3d, device=dev)
        gx = tack.zeros(2, tack.vec3d, device=dev)
        _dots.adjoint(x, x, tack.zeros(2, tack.f64, device=dev),
                      grads={"a": gx, "b": gx, "y": tack.array(np.ones(2), tack.f64, device=dev)})
        np.testing.assert_allclose(gx.numpy(), 2 * v, rtol=1e-15, err_msg=dev)
    with pytest.raises(ValueError, match="two gradients share part of their memory"):
        g = np.zeros(4)
        _products.adjoint(xv, xv, np.zeros(3), grads={"a": g[:3], "b": g[1:], "y": np.ones(3)})


def test_tape_refuses_slices_of_one_array():
    """x and x[1:] on one tape had a gradient each, so the adds through the slice never reached
    x's (tape.gradient(x) was short of them, silently): the tape refuses arrays that share memory
    without being one array or its reshaped views.  Fields of one record array, which interleave
    but share no element, and a reshaped view pass."""
    xv = np.array([1.0, 2.0, 3.0, 4.0])
    for x in (xv.copy(), tack.array(xv, tack.f64, requires_grad=True)):
        y1, y2 = np.zeros(4), np.zeros(3)
        with tack.Tape() as tape:
            _products(x, x, y1)
            _products(x[1:], x[1:], y2)
        with pytest.raises(ValueError, match="share memory but are not one array"):
            tape.backward(grads=[(y1, np.ones(4)), (y2, np.ones(3))])
    x = tack.array(xv, tack.f64, requires_grad=True)
    y, loss = tack.zeros(4, tack.f64), tack.zeros(1, tack.f64)
    with tack.Tape() as tape:
        _products(x, x.reshape(2, 2).reshape(4), y)
        sum_squares(y.reshape(2, 2), loss)
    tape.backward(loss)
    np.testing.assert_array_equal(x.grad.numpy(), 4 * xv ** 3)


def test_tape_refuses_a_step_that_overwrites_what_an_earlier_step_read():
    a = tack.array(np.ones((4, 4)), tack.f64, requires_grad=True)
    kk = tack.array(np.full((4, 4), 0.1), tack.f64)
    b = tack.zeros((4, 4), tack.f64)
    with tack.Tape() as tape:
        heat_step(a, kk, b)
        heat_step(b, kk, a)  # ping-pong: a was read by the first step
    with pytest.raises(ValueError, match="writes its argument 'unew', which heat_step\\(\\) read earlier"):
        tape.backward(grads={a: np.ones((4, 4))})
    with pytest.raises(ValueError, match="'unew' \\(written\\) and 'u' \\(read\\) share memory"):
        heat_step.adjoint(a, kk, a)  # one launch reading and writing the same array through two parameters


@tack.kernel
def dense_tanh(W, b, x, y):
    for i in range(y.shape[0]):
        s = b[i]
        for k in range(x.shape[0]):
            p = W[i, k] * x[k]
            s += p
        y[i] = tack.tanh(s)


@tack.kernel
def spring_step(x, v, k, dt, xn, vn):
    n = x.shape[0]
    for i in range(n):
        f = 0.0
        for d in range(2):  # the two neighbours of a chain, a serial loop replayed by the adjoint
            j = i - 1 + 2 * d
            if j >= 0 and j < n:
                f += k[0] * (x[j] - x[i])
        vnew = v[i] + dt * (f - 0.1 * x[i])
        vn[i] = vnew
        xn[i] = x[i] + dt * vnew


@tack.func
def _bump(v, w):
    t = v * w
    if t > 1.0:
        t = tack.sin(t)
    return t * t + 1.0


@tack.func
def _add_bump(a, i, v):
    a[i] += _bump(v, 1.0)


@tack.kernel
def with_funcs(x, y, z):
    c = 0.5  # a constant outside the loop: no gradient reaches it
    for i in range(x.shape[0]):
        y[i] = _bump(x[i], c * 4.0) + _bump(x[i], x[i])
        _add_bump(z, i, x[i])


def test_func_calls_are_inlined():
    x = np.array([0.2, 0.45, 0.8, 1.1, 1.4])  # t = 2x and x*x away from the branch at 1
    k = with_funcs
    k(x, np.zeros(5), np.zeros(5))
    gx = np.zeros(5)
    k.adjoint(x, np.zeros(5), np.zeros(5), grads={"x": gx, "y": np.ones(5), "z": np.ones(5)})

    def bump(v, w):
        t = v * w
        return np.where(t > 1, np.sin(t), t) ** 2 + 1, np.where(t > 1, 2 * np.sin(t) * np.cos(t), 2 * t)

    _, d1 = bump(x, 2.0)
    _, d2 = bump(x, x)
    _, d3 = bump(x, 1.0)
    np.testing.assert_allclose(gx, d1 * 2.0 + d2 * 2 * x + d3, rtol=1e-13)


def test_serial_loop_a_dense_layer():
    rng = np.random.default_rng(5)
    W, b, x = rng.random((4, 3)), rng.random(4), rng.random(3)
    y, gy = np.zeros(4), rng.random(4)
    dense_tanh(W, b, x, y)
    gW, gb, gx = np.zeros_like(W), np.zeros_like(b), np.zeros_like(x)
    dense_tanh.adjoint(W, b, x, y, grads={"W": gW, "b": gb, "x": gx, "y": gy.copy()})
    d = gy * (1 - np.tanh(W @ x + b) ** 2)
    np.testing.assert_allclose(gW, np.outer(d, x), rtol=1e-13)
    np.testing.assert_allclose(gb, d, rtol=1e-13)
    np.testing.assert_allclose(gx, W.T @ d, rtol=1e-13)


@pytest.mark.skipif(not TEST_ALL, reason="two more kernels and their adjoints to build: under make test-all")
def test_spring_chain_30_steps_against_finite_differences():
    rng = np.random.default_rng(5)

    def simulate(x0, v0, k0, tape=None):
        xs, vs = tack.array(x0, tack.f64), tack.array(v0, tack.f64)
        loss = tack.zeros(1, tack.f64)
        for _ in range(30):
            xn, vn = tack.zeros(6, tack.f64), tack.zeros(6, tack.f64)
            spring_step(xs, vs, k0, 0.05, xn, vn)
            xs, vs = xn, vn
        sum_squares(xs.reshape(2, 3), loss)
        return loss.numpy()[0], xs

    x0, v0 = rng.random(6), rng.random(6)
    kk = tack.array([2.0], tack.f64, requires_grad=True)
    with tack.Tape() as tape:
        xs = tack.array(x0, tack.f64, requires_grad=True)
        vs = tack.array(v0, tack.f64, requires_grad=True)
        x_in, v_in = xs, vs
        loss = tack.zeros(1, tack.f64)
        for _ in range(30):
            xn, vn = tack.zeros(6, tack.f64), tack.zeros(6, tack.f64)
            spring_step(xs, vs, kk, 0.05, xn, vn)
            xs, vs = xn, vn
        sum_squares(xs.reshape(2, 3), loss)
    tape.backward(loss)
    h = 1e-6
    fd_k = (simulate(x0, v0, np.array([2.0 + h]))[0] - simulate(x0, v0, np.array([2.0 - h]))[0]) / (2 * h)
    np.testing.assert_allclose(kk.grad.numpy()[0], fd_k, rtol=1e-6)
    for i in (0, 3):
        e = np.zeros(6)
        e[i] = h
        fd_x = (simulate(x0 + e, v0, np.array([2.0]))[0] - simulate(x0 - e, v0, np.array([2.0]))[0]) / (2 * h)
        fd_v = (simulate(x0, v0 + e, np.array([2.0]))[0] - simulate(x0, v0 - e, np.array([2.0]))[0]) / (2 * h)
        np.testing.assert_allclose(x_in.grad.numpy()[i], fd_x, rtol=1e-6)
        np.testing.assert_allclose(v_in.grad.numpy()[i], fd_v, rtol=1e-6)


def _scaled(x, y, s):
    for i in range(x.shape[0]):
        t = x[i] * s
        if t > 1.0:
            t = tack.sin(t)
        else:
            t = t * t * t
        y[i] = t * t + x[i]


scaled = tack.kernel(_scaled)
scaled_py = tack.kernel(jit=False)(_scaled)


def test_an_adjoint_launch_takes_the_signature_once_and_kinds_by_dtype(monkeypatch):
    """The Python side of kernel.adjoint is part of its cost (it was 124 us a launch, a tenth of a
    2048^2 stencil's forward on two quiet cores): the function's signature is taken once, not per
    launch, and an array's kind is read from its dtype's kind and size, as its name gave it (debug
    mode: no C to build)."""
    import inspect

    x, y = np.linspace(0.1, 0.9, 7), np.zeros(7)
    g1 = {"x": np.zeros(7), "y": np.ones(7)}
    scaled_py.adjoint(x, y, 2.0, grads=g1)

    def again(*a, **kw):
        raise AssertionError("inspect.signature taken again for a launch")

    monkeypatch.setattr(inspect, "signature", again)
    g2 = {"x": np.zeros(7), "y": np.ones(7)}
    scaled_py.adjoint(x, y, 2.0, grads=g2)
    np.testing.assert_array_equal(g2["x"], g1["x"])
    kinds = {"float32": ("farray", "f32"), ">f8": ("farray", "f64"), "float16": ("bad", "float16"),
             "complex64": ("bad", "complex64"), "int16": ("array", None), "uint8": ("array", None),
             "bool": ("array", None)}
    for dt, want in kinds.items():
        assert _autodiff._array_kind(np.zeros(2, dt)) == want, dt


def _numpy_casts(x, y, n, out):
    for i in range(x.shape[0]):
        out[i] = np.float64(x[i]) * y[i] + tack.f64(np.float32(y[i])) * np.int64(x[i] * 4.0) + n[i] * x[i]


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_numpy_scalar_types_are_the_casts_they_name(jit):
    """np.float64(x) is tack.f64(x) (docs/language.md): the gradient passes through it, and
    np.int64(x) stops it as int(x) does.  The adjoint refused np.float64() ("no TK_DERIV row")."""
    k = tack.kernel(jit=jit)(_numpy_casts)
    x, y = np.array([0.3, -1.7, 2.6]), np.array([0.5, 0.25, -2.0])  # y exact in f32
    n = np.array([1, 2, 3], np.int32)
    gx, gy = np.zeros(3), np.zeros(3)
    k.adjoint(x, y, n, np.zeros(3), grads={"x": gx, "y": gy, "out": np.ones(3)})
    np.testing.assert_array_equal(gx, y + n)
    np.testing.assert_array_equal(gy, x + np.trunc(x * 4.0))


@tack.func
def _polar(x, y):
    a, b = x, y
    a, b = b, a                               # a swap inside a function
    return tack.sqrt(a * a + b * b), tack.atan2(a, b)


def _unpacking(x, y, n, out):
    for i in range(x.shape[0]):
        a, b = x[i], 1.0
        m, s = 0, 0.0
        for k in range(n[i]):
            a, b = b, a + b * y[i]            # a swap, carried by the loop
            m, s = m + 1, s * 0.9 + a
        c = d = a * b
        c = d = c + d * 0.5                   # reads the names it assigns
        r, th = _polar(x[i], y[i])            # a func's two values
        out[i] = c * d + s + m * a + r * th


def _unpacking_plain(x, y, n):
    a, b = x, 1.0
    m, s = 0, 0.0
    for k in range(n):
        a, b = b, a + b * y
        m, s = m + 1, s * 0.9 + a
    c = d = a * b
    c = d = c + d * 0.5
    return c * d + s + m * a + math.hypot(x, y) * math.atan2(y, x)


def _unpack_elements(x, y, z, w):
    for i in range(x.shape[0]):
        y[i], z[i] = x[i] * 2.0, x[i] * x[i]
        w[i] = t = x[i] * 3.0
        w[i] += t * t


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_tuple_and_chained_assignments_and_a_funcs_values(jit):
    """a, b = b, a + b and c = d = e are differentiated (they were refused: "tuples of float values
    are not differentiated yet", "chained assignments"), and r, th = f(x) of a func returning two
    values gets its gradient (it got none: the call was taken for a constant)."""
    k = tack.kernel(jit=jit)(_unpacking)
    rng = np.random.default_rng(6)
    x, y = rng.uniform(0.5, 1.5, 5), rng.uniform(-0.8, 0.8, 5)
    n = np.array([0, 1, 2, 5, 40])
    out = np.zeros(5)
    k(x, y, n, out)
    np.testing.assert_allclose(out, [_unpacking_plain(x[i], y[i], n[i]) for i in range(5)], rtol=1e-13)
    gx, gy = np.zeros(5), np.zeros(5)
    k.adjoint(x, y, n, out, grads={"x": gx, "y": gy, "out": np.ones(5)})
    h = 1e-6
    fx = [(_unpacking_plain(x[i] + h, y[i], n[i]) - _unpacking_plain(x[i] - h, y[i], n[i])) / (2 * h) for i in range(5)]
    fy = [(_unpacking_plain(x[i], y[i] + h, n[i]) - _unpacking_plain(x[i], y[i] - h, n[i])) / (2 * h) for i in range(5)]
    np.testing.assert_allclose(gx, fx, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gy, fy, rtol=1e-6, atol=1e-8)
    # into array elements: y[i], z[i] = 2x, x^2; w[i] = t = 3x, then w[i] += t^2
    k2 = tack.kernel(jit=jit)(_unpack_elements)
    yv, zv, wv, g = np.zeros(5), np.zeros(5), np.zeros(5), np.zeros(5)
    k2(x, yv, zv, wv)
    np.testing.assert_array_equal(zv, x * x)
    np.testing.assert_array_equal(wv, x * 3.0 + (x * 3.0) * (x * 3.0))
    k2.adjoint(x, yv, zv, wv, grads={"x": g, "y": np.ones(5), "z": np.full(5, 2.0), "w": np.ones(5)})
    np.testing.assert_allclose(g, 2 + 4 * x + 3 + 18 * x, rtol=1e-14)


def _select_by_truth(x, y, out):
    for i in range(x.shape[0]):
        out[i, 0] = x[i] or y[i]                          # x[i] unless it is 0.0
        out[i, 1] = x[i] and y[i] * 3.0                   # 3 y[i] unless x[i] is 0.0 (then x[i])
        out[i, 2] = (x[i] > 0.5 and y[i]) or x[i] * 2.0   # y[i] (when not 0), else 2 x[i]
        out[i, 3] = x[i] * 0.0 or y[i] or x[i]            # y[i] unless it is 0.0, then x[i]


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_and_and_or_of_floats_select_a_value(jit):
    """`a or b` and `a and b` of floats are one of their operands, as in Python, and the gradient
    goes to the one selected: it was 0 for both (the operators were taken for conditions), a
    silent wrong answer."""
    k = tack.kernel(jit=jit)(_select_by_truth)
    x = np.array([0.0, 0.25, 0.75, 1.5, 0.0])
    y = np.array([2.0, 0.0, 4.0, -1.0, 0.0])
    out = np.zeros((5, 4))
    k(x, y, out)
    xs, ys = x != 0, y != 0
    np.testing.assert_array_equal(out[:, 0], np.where(xs, x, y))
    gx_want = np.stack([xs, ~xs, ~((x > 0.5) & ys), ~ys], 1).astype(float) * [1, 1, 2, 1]
    gy_want = np.stack([~xs, 3 * xs, (x > 0.5) & ys, ys], 1).astype(float)
    for col in range(4):
        gx, gy = np.zeros(5), np.zeros(5)
        seed = np.zeros((5, 4))
        seed[:, col] = 1
        k.adjoint(x, y, out, grads={"x": gx, "y": gy, "out": seed})
        np.testing.assert_array_equal(gx, gx_want[:, col], err_msg=f"column {col}, x")
        np.testing.assert_array_equal(gy, gy_want[:, col], err_msg=f"column {col}, y")


def test_adjoint_direct_branches_scalars_and_debug_mode():
    xv = np.linspace(0.1, 0.9, 7)
    t = 2 * xv
    big = t > 1
    f = np.where(big, np.sin(t), t ** 3)
    df = np.where(big, np.cos(t), 3 * t ** 2)
    want_x = 2 * f * df * 2 + 1
    want_s = np.sum(2 * f * df * xv)
    for k in (scaled, scaled_py):
        x = tack.array(xv, tack.f64, requires_grad=True)
        y = tack.zeros(7, tack.f64, requires_grad=True)
        k(x, y, 2.0)
        y.grad.fill(1.0)
        gs = np.zeros(1)
        k.adjoint(x, y, 2.0, grads={"s": gs})
        np.testing.assert_allclose(x.grad.numpy(), want_x, rtol=1e-13)
        np.testing.assert_allclose(gs[0], want_s, rtol=1e-13)
        assert not y.grad.numpy().any()  # y's old values do not reach the loss: its gradient is spent
    with pytest.raises(TypeError, match="not float array or float scalar parameters"):
        scaled.adjoint(xv, np.zeros(7), 2.0, grads={"nope": gs})

    # the stencil's gather form (tack._autodiff_gather) in debug mode, against the compiled one
    rng = np.random.default_rng(1)
    u, kk, seed = rng.random((6, 5)), rng.random((6, 5)), rng.random((6, 5))
    got = []
    for k in (heat_step, tack.kernel(jit=False)(heat_step.__wrapped__)):
        g = {"u": np.zeros((6, 5)), "k": np.zeros((6, 5)), "unew": seed.copy()}
        k.adjoint(u, kk, np.zeros((6, 5)), grads=g)
        got.append(g)
    np.testing.assert_allclose(got[1]["u"], got[0]["u"], rtol=1e-14)
    np.testing.assert_allclose(got[1]["k"], got[0]["k"], rtol=1e-14)
    assert got[0]["u"].any() and not got[0]["unew"][1:-1, 1:-1].any()  # the border was never written


def _heat_step_grads(u, k, g):
    """heat_step's gradients by hand: unew[q] = u[q] + k[q] * lap(u)[q] on the interior q."""
    gu, gk = np.zeros_like(u), np.zeros_like(u)
    gi = g[1:-1, 1:-1]
    lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
    gk[1:-1, 1:-1] = gi * lap
    gu[1:-1, 1:-1] += gi * (1 - 4 * k[1:-1, 1:-1])
    for dx, dy in ((-1, 0), (1, 0), (0, -1), (0, 1)):
        gu[1 + dx:u.shape[0] - 1 + dx, 1 + dy:u.shape[1] - 1 + dy] += gi * k[1:-1, 1:-1]
    return gu, gk


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 8), (5, 5), (9, 6), (40, 33)])
def test_the_stencil_gather_covers_every_element_once(shape):
    """The gather form runs an untested interior loop and tested border strips (tack._autodiff_gather):
    together they cover the gradient once, also where the interior is empty (3 x 3: one iteration,
    a gather range of 3 on each axis)."""
    rng = np.random.default_rng(len(shape) + shape[0] * 7 + shape[1])
    u, kk, seed = rng.random(shape), rng.random(shape), rng.random(shape)
    g = {"u": np.zeros(shape), "k": np.zeros(shape), "unew": seed.copy()}
    heat_step.adjoint(u, kk, np.zeros(shape), grads=g)
    want_u, want_k = _heat_step_grads(u, kk, seed)
    np.testing.assert_allclose(g["u"], want_u, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(g["k"], want_k, rtol=1e-13, atol=1e-15)


def _heat_step_grads_in_order(u, k, g, gu, gk):
    """heat_step's gradients added onto gu and gk in the adjoint's order, each sum rounded to the
    arrays' type (NumPy's elementwise operations round each one): u's gradient at p gathers the
    iterations q = p - o for the offsets o in sorted order, (-1, 0), (0, -1), (0, 1), (1, 0) (each
    contribution 0 + g[q] * k[q], as the reverse sweep's local starts at zero), then adds the
    iteration's own terms, g[p] and -(0 + g[p] * k[p]) * 4; k's gradient at p adds g[p] * lap[p]."""
    gu, gk = gu.copy(), gk.copy()
    n, m = u.shape
    zero = np.zeros((), u.dtype)
    inner = (slice(1, n - 1), slice(1, m - 1))
    for o in ((-1, 0), (0, -1), (0, 1), (1, 0)):  # p = q + o for every iteration q
        p = (slice(1 + o[0], n - 1 + o[0]), slice(1 + o[1], m - 1 + o[1]))
        gu[p] = gu[p] + (zero + g[inner] * k[inner])
    gu[inner] = gu[inner] + g[inner]
    gu[inner] = gu[inner] + (-(zero + g[inner] * k[inner])) * 4.0
    lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]
    gk[inner] = gk[inner] + g[inner] * lap
    return gu, gk


@pytest.mark.parametrize("shape", [(3, 3), (4, 7), (9, 6), (37, 70)])
def test_the_stencil_adjoint_adds_in_its_order_to_the_bit(shape):
    """The gather form's sums, to the bit, in f64, compiled and in debug mode, onto gradients that
    are not zero: the order in which an element's adds arrive is the generator's (the gathers by
    offset, then the iteration's own), whatever loops it splits them into; the seed is spent."""
    rng = np.random.default_rng(shape[0] * 100 + shape[1])
    u, kk, seed, gu0, gk0 = (rng.random(shape) - 0.3 for _ in range(5))
    want_u, want_k = _heat_step_grads_in_order(u, kk, seed, gu0, gk0)
    for k in (heat_step, tack.kernel(jit=False)(heat_step.__wrapped__)):
        g = {"u": gu0.copy(), "k": gk0.copy(), "unew": seed.copy()}
        k.adjoint(u, kk, np.zeros(shape), grads=g)
        np.testing.assert_array_equal(g["u"], want_u)
        np.testing.assert_array_equal(g["k"], want_k)
        assert not g["unew"][1:-1, 1:-1].any()
        np.testing.assert_array_equal(g["unew"][0], seed[0])  # the border was never written


def test_the_stencil_adjoint_is_a_gather_sweep_and_a_last_pass():
    """The gathers' interior and the iteration's own adds into u's gradient are one loop
    (tack._autodiff_gather): it reads k and the seed at the neighbours and u's gradient, stores u's
    gradient once an iteration (summed in a local: no += to privatize, no test), and leaves the
    seed alone.  The last pass, after every loop that reads a neighbour's seed, adds k's gradient
    (the own adjoint's part for an array nothing gathers: u's five loads for lap) and zeroes the
    seed.  The border strips' gathers keep of the recomputed iteration what their add needs (the
    seed and k at the neighbour, not u's five loads: _live), and so does their own part."""
    import ast

    from tack import _autodiff_run

    u = np.zeros((8, 8))
    adj = _autodiff_run.build(heat_step, (u, u.copy(), u.copy()), {})[0]
    loops = [st for st in adj.__wrapped__.__tack_tree__.body if isinstance(st, ast.For)]
    assert len(loops) == 6  # the sweep, two strips per axis, the last pass

    def arrays(node, ctx):
        return [n.value.id for n in ast.walk(node) if isinstance(n, ast.Subscript) and isinstance(n.ctx, ctx)
                and isinstance(n.value, ast.Name)]

    sweep, strips, last = loops[0], loops[1:5], loops[5]
    assert set(arrays(sweep, ast.Load)) == {"k", "unew\u00b7grad", "u\u00b7grad"}
    assert arrays(sweep, ast.Store) == ["u\u00b7grad"]
    assert not [n for n in ast.walk(sweep) if isinstance(n, ast.If)
                or isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Subscript)]
    assert set(arrays(last, ast.Load)) == {"u", "unew\u00b7grad", "k\u00b7grad"}
    assert sorted(arrays(last, ast.Store)) == ["k\u00b7grad", "unew\u00b7grad"]
    stores = [st for st in last.body if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Subscript)]
    assert [ast.unparse(st) for st in stores] == ["unew\u00b7grad[i, j] = 0.0", "k\u00b7grad[i, j] = acc\u00b7k"]
    for n, strip in enumerate(strips):
        *gathers, own = strip.body
        # a strip tests the axes on which it leaves the box: the row strips both, the column
        # strips (inside the box's rows) the columns only
        tested = {v.id for st in strip.body for v in ast.walk(st.test) if isinstance(v, ast.Name)}
        assert tested & {"p\u00b70", "p\u00b71"} == ({"p\u00b70", "p\u00b71"} if n < 2 else {"p\u00b71"})
        for g in gathers + [own]:  # one test per offset, and the own adds under theirs
            assert set(arrays(g, ast.Load)) == {"k", "unew\u00b7grad", "u\u00b7grad"}
            assert "lap" not in {n.id for n in ast.walk(g) if isinstance(n, ast.Name)}
        assert set(arrays(strip, ast.Store)) == {"u\u00b7grad"}  # no k gradient, no zeroes
        assert not [n for n in ast.walk(strip) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Subscript)]


def test_the_gather_slice_keeps_what_may_act():
    """_live drops assignments to locals nothing reads, and nothing else: an if, a store, an add
    into a gradient and an assignment whose value calls a call stay, with what they read."""
    import ast

    from tack._autodiff_gather import _live

    src = ("a = x + 1\nb = f(x)\nc = g(x)(y)\nd = a * 2\nd += b\nif c:\n    pass\n"
           "w[i] = 0.0\nz = d\ngrad[i] += z\ne = 3\n")
    kept = ast.unparse(ast.Module(body=_live(ast.parse(src).body), type_ignores=[]))
    assert kept.splitlines() == ["a = x + 1", "b = f(x)", "c = g(x)(y)", "d = a * 2", "d += b", "if c:",
                                 "    pass", "w[i] = 0.0", "z = d", "grad[i] += z"]
    src = "a = x\nb = a\na = y\ngrad[i] += a\n"  # the first a is overwritten before it is read
    kept = ast.unparse(ast.Module(body=_live(ast.parse(src).body), type_ignores=[]))
    assert kept.splitlines() == ["a = y", "grad[i] += a"]


def test_nested_tapes_both_record():
    """A launch inside two tapes' blocks is recorded by both: the outer tape recorded nothing of the
    inner block, so its backward gave no gradient through it, silently."""
    xv = np.array([1.0, 2.0, 3.0])
    x = tack.array(xv, tack.f64, requires_grad=True)
    y, loss = tack.zeros(3, tack.f64), tack.zeros(1, tack.f64)
    with tack.Tape() as outer:
        with tack.Tape() as inner:
            _products(x, x, y)
        sum_squares(y.reshape(1, 3), loss)
    assert len(outer.launches) == 2 and len(inner.launches) == 1
    outer.backward(loss)
    np.testing.assert_array_equal(x.grad.numpy(), 4 * xv ** 3)
    x.grad.fill(0)
    inner.backward(grads=[(y, np.ones(3))])
    np.testing.assert_array_equal(x.grad.numpy(), 2 * xv)


def test_adjoint_refuses_a_gradient_of_the_wrong_kind():
    """grads={"a": g} with g an integer array truncated every add (x^2 + sin x at 1.3, 2, 3 gave
    [2, 3, 5] for 2x + cos x), and one of another shape was indexed as the array: both are
    refused, naming the parameter."""
    x, y = np.array([1.3, 2.0, 3.0]), np.zeros(3)
    for bad, err, words in ((np.zeros(3, np.int64), TypeError, "'a' is an array of int64: a gradient is a float"),
                            (np.zeros(4), ValueError, r"'a' has shape \(4,\), the array \(3,\)"),
                            (np.zeros((3, 1)), ValueError, r"'a' has shape \(3, 1\)")):
        with pytest.raises(err, match=words):
            _products.adjoint(x, x, y, grads={"a": bad, "y": np.ones(3)})
    g = np.zeros(3, np.float32)  # another float type is taken
    _products.adjoint(x, x, y, grads={"a": g, "y": np.ones(3)})
    np.testing.assert_allclose(g, x, rtol=1e-7)


def _checked_log(x, y):
    assert x.shape[0] == y.shape[0], "one y per x"
    for i in range(x.shape[0]):
        assert x[i] > 0.0, "a positive x"
        y[i] = math.log(x[i])


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_asserts_are_checked_again_by_the_adjoint(jit):
    """An assert (in the parallel loop or before it) was refused ("'Assert' is not differentiated
    yet"): the adjoint makes the check again in its forward sweep, and raises where it fails."""
    k = tack.kernel(jit=jit)(_checked_log)
    x, y = np.array([0.5, 2.0, 4.0]), np.zeros(3)
    k(x, y)
    g = np.zeros(3)
    k.adjoint(x, y, grads={"x": g, "y": np.ones(3)})
    np.testing.assert_allclose(g, 1 / x, rtol=1e-15)
    x[1] = -1.0
    with pytest.raises(AssertionError, match="a positive x"):
        k.adjoint(x, y, grads={"x": np.zeros(3), "y": np.ones(3)})


def _skipping(x, alive, y):
    for i in range(x.shape[0]):
        a = x[i]
        if alive[i] == 0:
            y[i] = 0.0
            continue
        if a < 0.0:
            y[i] = -a * 3.0
            continue
        elif a > 2.0:
            continue                          # y[i] keeps its value: its seed stays
        b = math.sqrt(a) * a
        y[i] = b * b + a


def _skipping_in_a_serial_loop(x, y):
    for i in range(x.shape[0]):
        s = 0.0
        for k in range(4):
            if k == 2:
                continue
            s += x[i] * k
        y[i] = s


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_an_early_continue_of_a_parallel_loop(jit):
    """if not alive[i]: continue was refused ("'continue' is not differentiated yet"): a branch
    ending with continue directly in the parallel loop's body now leaves the rest of the iteration
    to the other branch.  A serial loop's continue is still refused at its line."""
    k = tack.kernel(jit=jit)(_skipping)
    x = np.array([0.5, -1.0, 3.0, 1.5, 0.2, -0.3])
    alive = np.array([1, 1, 1, 1, 0, 1], np.int32)
    y = np.full(6, 7.0)
    k(x, alive, y)
    np.testing.assert_allclose(y, [0.5 ** 3 + 0.5, 3.0, 7.0, 1.5 ** 3 + 1.5, 0.0, 0.9], rtol=1e-15)
    gx, gy = np.zeros(6), np.arange(1.0, 7.0)
    k.adjoint(x, alive, y, grads={"x": gx, "y": gy})
    np.testing.assert_allclose(gx, [1 * (3 * 0.5 ** 2 + 1), 2 * -3.0, 0.0, 4 * (3 * 1.5 ** 2 + 1), 0.0, 6 * -3.0],
                               rtol=1e-14)
    np.testing.assert_array_equal(gy, [0, 0, 3, 0, 0, 0])  # the stored elements' seeds are spent
    with pytest.raises(tack.CompileError, match="'continue' is not differentiated yet") as err:
        tack.kernel(jit=jit)(_skipping_in_a_serial_loop).adjoint(x, np.zeros(6), grads={"y": np.ones(6)})
    assert "line" in str(err.value)


def test_grad_and_requires_grad():
    a = tack.zeros(3, tack.f32)
    assert a.grad is None and not a.requires_grad
    a.requires_grad = True
    assert a.grad.shape == (3,) and a.grad.dtype is tack.f32 and a.grad.device == a.device
    g = a.grad
    a.requires_grad = True
    assert a.grad is g
    with pytest.raises(ValueError, match="shape, dtype and device"):
        a.grad = tack.zeros(4, tack.f32)
    with pytest.raises(TypeError):
        a.grad = np.zeros(3)
    a.requires_grad = False
    assert a.grad is None
    b = tack.ones(2, tack.f64, requires_grad=True)
    assert b.requires_grad and not b.grad.numpy().any()
    with tack.Tape() as tape:
        pass
    with pytest.raises(ValueError, match="one-element"):
        tape.backward(b)


# ---- refusals, each at its line

def _int_out(x, n):
    for i in range(x.shape[0]):
        n[i] = int(x[i] * 4.0)  # REFUSE: integer output


def _amax(x, m):
    for i in range(x.shape[0]):
        tack.atomic_max(m, 0, x[i])  # REFUSE: atomic_max


def _overwrite(x):
    for i in range(x.shape[0]):
        x[i] = x[i] * 2.0  # REFUSE: overwritten


def _filled(x, y):
    for i in range(x.shape[0]):
        t = np.full(3, x[i])  # REFUSE: a local array filled with a differentiated value
        y[i] = t[1]


@tack.func
def _early(v):
    if v > 0.0:
        return v
    return -v


def _calls(x, y):
    for i in range(x.shape[0]):
        y[i] = _early(x[i])  # REFUSE: func


def _outside(x, y, s):
    h = s * 2.0  # REFUSE: outside
    for i in range(x.shape[0]):
        y[i] = h * x[i]


def _draws(x, y):
    for i in range(x.shape[0]):
        y[i] = x[i] + tack.random.uniform(1, i)  # REFUSE: random


@pytest.mark.parametrize("fn, args, words", [
    (_int_out, (np.ones(3), np.zeros(3, np.int32)), "integer output is not differentiable"),
    (_amax, (np.ones(3), np.zeros(1)), "atomic_max is not differentiable"),
    (_overwrite, (np.ones(3),), "write the new values to another array"),
    (_filled, (np.ones(3), np.zeros(3)), "create it with np.zeros and store the value into its elements"),
    (_calls, (np.ones(3), np.zeros(3)), "a return before the end of a @tack.func is not differentiated yet"),
    (_draws, (np.ones(3), np.zeros(3)), "random draws are not differentiated"),
    (_outside, (np.ones(3), np.zeros(3), 1.0), "may only compute values no differentiated input reaches"),
])
def test_refusals_name_the_line(fn, args, words):
    k = tack.kernel(fn)
    with pytest.raises(tack.CompileError, match=words) as err:
        k.adjoint(*args)
    lines, first = __import__("inspect").getsourcelines(fn)
    want = first + next(n for n, line in enumerate(lines) if "REFUSE" in line)
    assert f"line {want}" in str(err.value) or err.value.lineno == want, str(err.value)


def _adjoint_source(k, args, target):
    adj, bound, names, kinds = _autodiff.build(k, args, {})
    grads = [np.zeros(1, np.float32) if kinds[p][0] == "fscalar" else np.zeros_like(bound.arguments[p])
             for p in names]
    return adj.generated_source(*args, *grads, target=target)


def _dialect_sources(target):
    """The adjoints of the f32 branch-and-scalar kernel, of the heat stencil and of pow (whose
    derivatives are conditional expressions), in one dialect."""
    x = np.linspace(0.1, 0.9, 7).astype(np.float32)
    u = np.ones((6, 5), np.float32)
    return [_adjoint_source(scaled, (x, np.zeros(7, np.float32), 2.0), target),
            _adjoint_source(heat_step, (u, u, np.zeros((6, 5), np.float32)), target),
            _adjoint_source(tack.kernel(_pow_call), (x, x, np.zeros(7, np.float32)), target)]


def test_adjoint_sources_compile_with_nvrtc():
    import _gpu_batch

    if getattr(_core, "_nvrtc_compile", None) is None:
        pytest.skip("no NVRTC in this build")
    try:
        assert _core._nvrtc_compile(_gpu_batch.batch_source(_dialect_sources("cuda"))[0], "sm_80")
    except OSError as e:  # NVRTC's library is not installed
        pytest.skip(str(e))


_HIPRTC = ("import json, sys\n"
           "from tack import _core\n"
           "job = json.load(sys.stdin)\n"
           "_core._hiprtc_compile(job['source'], 'gfx90a')\n")


@pytest.mark.skipif(not TEST_ALL, reason="hiprtc takes a second or two a program: under make test-all (TACK_TEST_ALL=1)")
@pytest.mark.skipif(_core._hiprtc_version() <= 0, reason="hiprtc is not installed (Debian: libamdhip64-dev)")
def test_adjoint_sources_compile_with_hiprtc():
    import _gpu_batch

    # in a process of its own, as test_hip.py explains (comgr and PoCL share libLLVM)
    job = json.dumps({"source": _gpu_batch.batch_source(_dialect_sources("hip"))[0]})
    proc = subprocess.run([sys.executable, "-c", _HIPRTC], input=job, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_adjoint_sources_compile_with_ocloc():
    import _ocloc

    if _ocloc.library() is None:
        pytest.skip("libocloc is not installed (Debian: intel-opencl-icd)")
    rc, out = _ocloc.compile(_ocloc.batch_source(_dialect_sources("opencl"))[0], "pvc")
    assert rc == 0, {k: v.decode(errors="replace")[-3000:] for k, v in out.items() if "log" in k.lower()}


def test_adjoint_sources_type_check_as_metal():
    import _msl

    if _msl.clang() is None and not _msl.xcrun():
        pytest.skip("clang++ is not installed (Debian: clang)")
    for src in _dialect_sources("metal"):
        assert _msl.check(src) is None


def test_adjoints_in_every_dialect_and_on_opencl():
    """The adjoints of an f32 kernel with a branch and a scalar, and of the heat stencil, are emitted
    for every target; where an OpenCL device is present (PoCL in CI) they run there equal to the CPU."""
    x = np.linspace(0.1, 0.9, 7).astype(np.float32)
    u = np.random.default_rng(1).random((6, 5)).astype(np.float32)
    kk = np.full((6, 5), 0.1, np.float32)
    cases = [(scaled, (x, np.zeros(7, np.float32), 2.0), {"y": np.ones(7, np.float32)}),
             (heat_step, (u, kk, np.zeros((6, 5), np.float32)), {"unew": np.ones((6, 5), np.float32)})]
    for k, args, seeds in cases:
        for target in tack._core._targets():
            assert _adjoint_source(k, args, target)
    ocl = [d for d in tack.devices() if d.startswith("opencl")]
    if not ocl or not TEST_ALL:  # PoCL builds four programs here (about 10 s): under make test-all
        return
    for k, args, seeds in cases:
        out = []
        for dev in ("cpu", ocl[0]):
            dargs = [tack.array(a, device=dev) if isinstance(a, np.ndarray) else a for a in args]
            names = [p for p, a in zip(("x", "y", "s") if k is scaled else ("u", "k", "unew"), args)
                     if isinstance(a, np.ndarray)]
            grads = {p: tack.array(seeds[p], device=dev) if p in seeds else tack.zeros(a.shape, tack.f32, device=dev)
                     for p, a in zip(names, dargs)}
            if k is scaled:
                grads["s"] = tack.zeros(1, tack.f32, device=dev)
            k(*dargs)
            k.adjoint(*dargs, grads=grads)
            out.append({p: g.numpy() for p, g in grads.items()})
        for p in out[0]:
            np.testing.assert_allclose(out[1][p], out[0][p], rtol=1e-5, atol=1e-6, err_msg=f"{k.__name__} {p}")


@tack.kernel
def tanh_layer(x, w, s, y):
    for i in range(y.shape[0]):
        y[i] = tack.tanh(w[i] * x[i] * s) + x[i] * x[i]


@pytest.mark.skipif(not TEST_ALL, reason="importing torch takes seconds: under make test-all (TACK_TEST_ALL=1)")
def test_torch_function_passes_gradcheck():
    torch = pytest.importorskip("torch")
    f = tack.torch_function(tanh_layer, outputs={"y": lambda x, w, s: x.shape})
    x = torch.rand(6, dtype=torch.float64, requires_grad=True)
    w = torch.rand(6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, w: f(x, w, 1.5), (x, w))
    # a layer of a model: the gradient flows on through torch's own operations
    (f(x, w, 1.5) * torch.arange(6.0, dtype=torch.float64)).sum().backward()
    want = (1 - torch.tanh(w * x * 1.5) ** 2) * 1.5 * w + 2 * x
    torch.testing.assert_close(x.grad, (want * torch.arange(6.0, dtype=torch.float64)).detach())


@tack.kernel
def picked(z, labels, keep, loss):
    for n in range(z.shape[0]):
        if keep[n]:
            loss[0] += z[n, labels[n]] * z[n, labels[n]]


@pytest.mark.skipif(not TEST_ALL, reason="importing torch takes seconds: under make test-all (TACK_TEST_ALL=1)")
def test_torch_function_takes_integer_and_bool_tensors():
    """Integer and bool tensors are indices and masks, not differentiated: their dtypes' names
    ("torch.int32") were taken for unknown element types and the adjoint refused them."""
    torch = pytest.importorskip("torch")
    f = tack.torch_function(picked, outputs={"loss": (1,)})
    z = torch.tensor(np.random.default_rng(4).random((5, 3)), requires_grad=True)
    for itype in (torch.int32, torch.int64, torch.uint8):
        z.grad = None
        labels = torch.tensor([0, 2, 1, 1, 0], dtype=itype)
        keep = torch.tensor([True, True, False, True, True])
        f(z, labels, keep).sum().backward()
        want = torch.zeros(5, 3, dtype=torch.float64)
        rows = torch.arange(5)[keep]
        want[rows, labels.long()[keep]] = 2 * z.detach()[rows, labels.long()[keep]]
        torch.testing.assert_close(z.grad, want)


@pytest.mark.skipif(not TEST_ALL, reason="importing jax takes seconds: under make test-all (TACK_TEST_ALL=1)")
def test_jax_function_passes_check_grads():
    jax = pytest.importorskip("jax")
    from jax.test_util import check_grads

    jax.config.update("jax_enable_x64", True)
    g = tack.jax_function(tanh_layer, outputs={"y": lambda x, w, s: x.shape})
    rng = np.random.default_rng(2)
    x, w = jax.numpy.array(rng.random(5)), jax.numpy.array(rng.random(5))
    check_grads(lambda x, w: g(x, w, 1.5), (x, w), order=1, modes=["rev"])
    # under jax.vmap (and its gradient), one launch per element of the batch: it raised
    # NotImplementedError (pure_callback without a vmap rule)
    xs, ws = jax.numpy.stack([x, 2 * x]), jax.numpy.stack([w, w + 1])
    ys = jax.vmap(lambda x, w: g(x, w, 1.5))(xs, ws)
    want = jax.numpy.tanh(ws * xs * 1.5) + xs * xs
    np.testing.assert_allclose(np.asarray(ys), np.asarray(want), rtol=1e-13)
    gx = jax.vmap(jax.grad(lambda x, w: jax.numpy.sum(g(x, w, 1.5))))(xs, ws)
    dy = (1 - jax.numpy.tanh(ws * xs * 1.5) ** 2) * 1.5 * ws + 2 * xs
    np.testing.assert_allclose(np.asarray(gx), np.asarray(dy), rtol=1e-12)


@pytest.mark.skipif(not TEST_ALL, reason="31 optimization iterations of 101 launches: under make test-all")
def test_diffsim_example_converges(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "docs" / "examples" / "diffsim.py")], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "converged in" in out.stdout and "all checks passed" in out.stdout


@pytest.mark.skipif(not TEST_ALL, reason="importing torch takes seconds: under make test-all (TACK_TEST_ALL=1)")
def test_two_layer_mlp_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    W1, b1, W2, b2 = rng.normal(size=(8, 4)), rng.normal(size=8), rng.normal(size=(3, 8)), rng.normal(size=3)
    x = rng.normal(size=4)
    arrays = [tack.array(a, tack.f64, requires_grad=True) for a in (W1, b1, W2, b2, x)]
    h, y, loss = tack.zeros(8, tack.f64), tack.zeros(3, tack.f64), tack.zeros(1, tack.f64)
    with tack.Tape() as tape:
        dense_tanh(arrays[0], arrays[1], arrays[4], h)
        dense_tanh(arrays[2], arrays[3], h, y)
        sum_squares(y.reshape(1, 3), loss)
    tape.backward(loss)
    t = [torch.tensor(a, requires_grad=True) for a in (W1, b1, W2, b2, x)]
    ty = torch.tanh(t[2] @ torch.tanh(t[0] @ t[4] + t[1]) + t[3])
    (ty * ty).sum().backward()
    assert abs(loss.numpy()[0] - (ty * ty).sum().item()) < 1e-12
    for a, ta in zip(arrays, t):
        np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12, atol=1e-14)
