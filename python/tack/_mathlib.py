"""The Python meaning of the math rows NumPy has no function for.

Each math row of the compiler's table (src/compiler/intrinsics.def) computes,
outside a kernel and in debug mode, what the compiled kernel computes
(python/tack/_intrinsics.py, ``_MATH``).  Most are NumPy's ufuncs.  The rest
are here, each giving a NumPy scalar (or array) of its arguments' float
type, so that debug mode, which hands them values already converted to the
type the compiler gives the call, computes in that type:

- ``erf``, ``erfc`` and ``remainder`` (``math.erf`` ...; ``np.remainder`` is
  Python's ``%``, not IEEE's remainder): the math module's double-precision
  function, rounded to the type, with IEEE's special values where the math
  module raises (``remainder(inf, y)`` is NaN);
- ``fma``: exact, through fractions (``math.fma`` is Python 3.13's): one
  rounding to the type, float32 by way of a round-to-odd double;
- the formulas (``rsqrt``, ``clamp``, ``lerp``, ``smoothstep``, ``step``):
  the same operations in the same order as the prelude's helpers
  (src/compiler/emit/prelude_math.c), in NumPy scalars of the type, so the
  bits agree with the compiled kernel's.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np


def _float_type(*args):
    """The float dtype the arguments compute in: their promoted type, f64 for integers and Python numbers."""
    t = np.result_type(*[a if isinstance(a, (np.ndarray, np.generic)) else np.float64(0) for a in args])
    return t if t.kind == "f" else np.dtype(np.float64)


def _scalar(r):
    return r[()] if isinstance(r, np.ndarray) and r.ndim == 0 else r


def _map(f, t, *args):
    """f of Python floats applied element by element, its result as dtype t."""
    arrs = np.broadcast_arrays(*[np.asarray(a, dtype=t) for a in args])
    out = np.empty(arrs[0].shape, dtype=t)
    flat = [a.ravel() for a in arrs]
    with np.errstate(all="ignore"):
        for i in range(out.size):
            out.flat[i] = f(*[float(a[i]) for a in flat], t)
    return _scalar(out)


def _round(v, t):
    with np.errstate(all="ignore"):
        return t.type(v)


def _erf(v, t):
    return _round(math.erf(v), t)


def _erfc(v, t):
    return _round(math.erfc(v), t)


def _remainder(x, y, t):
    if math.isnan(x) or math.isnan(y):
        return t.type(math.nan)
    if math.isinf(x) or y == 0:
        return t.type(math.nan)
    if math.isinf(y):
        return t.type(x)
    return t.type(math.remainder(x, y))  # exact, so representable in t


def _fma(a, b, c, t):
    if not (math.isfinite(a) and math.isfinite(b)):
        return _round(a * b + c, t)  # IEEE's NaN and infinity rules
    if not math.isfinite(c):
        return t.type(c)
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:  # the sign of an exact zero: -0 only for (-0) + (-0)
        neg = a * b == 0 and c == 0 and (math.copysign(1, a) * math.copysign(1, b) < 0) and math.copysign(1, c) < 0
        return t.type(-0.0 if neg else 0.0)
    try:
        r = exact.numerator / exact.denominator  # correctly rounded to a double
    except OverflowError:
        return t.type(math.inf if exact > 0 else -math.inf)
    if t == np.float64:
        return np.float64(r)
    if Fraction(r) != exact and (np.float64(r).view(np.int64) & 1) == 0:
        r = float(np.nextafter(r, math.inf if exact > r else -math.inf))  # round to odd: no double rounding
    return _round(r, t)


def erf(x):
    """The error function, rounded to x's float type."""
    return _map(_erf, _float_type(x), x)


def erfc(x):
    """The complementary error function 1 - erf(x), rounded to x's float type."""
    return _map(_erfc, _float_type(x), x)


def remainder(x, y):
    """IEEE's remainder x - n*y, n the integer nearest x/y (ties to even); exact."""
    return _map(_remainder, _float_type(x, y), x, y)


def fma(x, y, z):
    """x * y + z with a single rounding (a fused multiply-add)."""
    return _map(_fma, _float_type(x, y, z), x, y, z)


def rsqrt(x):
    """1 / sqrt(x): the reciprocal square root (inf at 0, NaN below it)."""
    t = _float_type(x)
    with np.errstate(all="ignore"):
        return _scalar(t.type(1) / np.sqrt(np.asarray(x, dtype=t)))


def clamp(x, lo, hi):
    """min(max(x, lo), hi), picked as Python's min and max pick: a NaN x stays NaN."""
    t = _float_type(x, lo, hi)
    x, lo, hi = (np.asarray(v, dtype=t) for v in (x, lo, hi))
    m = np.where(lo > x, lo, x)
    return _scalar(np.where(hi < m, hi, m).astype(t))


def lerp(a, b, t):
    """a + t * (b - a): a at t = 0, b at t = 1 (up to rounding), extrapolating outside."""
    ty = _float_type(a, b, t)
    a, b, t = (np.asarray(v, dtype=ty) for v in (a, b, t))
    with np.errstate(all="ignore"):
        return _scalar(a + t * (b - a))


def smoothstep(e0, e1, x):
    """Hermite interpolation: 0 at or below e0, 1 at or above e1, 3t^2 - 2t^3 between,
    t = (x - e0) / (e1 - e0)."""
    ty = _float_type(e0, e1, x)
    e0, e1, x = (np.asarray(v, dtype=ty) for v in (e0, e1, x))
    with np.errstate(all="ignore"):
        t = clamp((x - e0) / (e1 - e0), ty.type(0), ty.type(1))
        return _scalar(t * t * (ty.type(3) - ty.type(2) * t))


def step(edge, x):
    """0 where x < edge, 1 where x >= edge, NaN where either is NaN."""
    ty = _float_type(edge, x)
    edge, x = (np.asarray(v, dtype=ty) for v in (edge, x))
    with np.errstate(all="ignore"):
        return _scalar(np.where(x < edge, ty.type(0), np.where(x >= edge, ty.type(1), x + edge)).astype(ty))
