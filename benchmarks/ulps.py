"""How far Tack's math functions on the CPU are from the correctly rounded result, in ulps.

    python benchmarks/ulps.py            # 2^20 points a function and dtype (about a minute)
    python benchmarks/ulps.py --points 65536

Each function runs in a Tack kernel (`out[i] = f(x[i])`, a loop whose calls go
to SIMD lanes where vector math is on: docs/design/decisions.md, "Vector
math") over a sweep of arguments: random bit patterns over every exponent,
uniform points in the range where the function is neither 0, 1 nor
overflowing, and the edge cases (zeros, denormals, infinities, NaN, the
overflow threshold).  The reference is NumPy's extended precision
(np.longdouble: the C library's expl, logl, ... on x86-64, 64 bits of
mantissa, so its own error is a few thousandths of an f64 ulp).  An ulp is
the spacing of the dtype at the reference (so an error below a power of two
counts in the finer spacing there), denormals counted in the smallest
spacing; an infinity counts as the next power of two past the largest finite
value.  NaN must be NaN where the reference is, and nowhere else.

tests/python/test_vector_math.py runs the same sweep, smaller, and holds
every function to the bound docs/language.md states.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import tack  # noqa: E402

LD = np.longdouble


@tack.kernel
def k_exp(x, out):
    for i in range(x.shape[0]):
        out[i] = math.exp(x[i])


@tack.kernel
def k_log(x, out):
    for i in range(x.shape[0]):
        out[i] = math.log(x[i])


@tack.kernel
def k_log2(x, out):
    for i in range(x.shape[0]):
        out[i] = math.log2(x[i])


@tack.kernel
def k_log10(x, out):
    for i in range(x.shape[0]):
        out[i] = math.log10(x[i])


@tack.kernel
def k_sin(x, out):
    for i in range(x.shape[0]):
        out[i] = math.sin(x[i])


@tack.kernel
def k_cos(x, out):
    for i in range(x.shape[0]):
        out[i] = math.cos(x[i])


@tack.kernel
def k_tan(x, out):
    for i in range(x.shape[0]):
        out[i] = math.tan(x[i])


@tack.kernel
def k_asin(x, out):
    for i in range(x.shape[0]):
        out[i] = math.asin(x[i])


@tack.kernel
def k_acos(x, out):
    for i in range(x.shape[0]):
        out[i] = math.acos(x[i])


@tack.kernel
def k_atan(x, out):
    for i in range(x.shape[0]):
        out[i] = math.atan(x[i])


@tack.kernel
def k_sinh(x, out):
    for i in range(x.shape[0]):
        out[i] = math.sinh(x[i])


@tack.kernel
def k_cosh(x, out):
    for i in range(x.shape[0]):
        out[i] = math.cosh(x[i])


@tack.kernel
def k_tanh(x, out):
    for i in range(x.shape[0]):
        out[i] = math.tanh(x[i])


@tack.kernel
def k_sqrt(x, out):
    for i in range(x.shape[0]):
        out[i] = math.sqrt(x[i])


@tack.kernel
def k_pow(x, y, out):
    for i in range(x.shape[0]):
        out[i] = math.pow(x[i], y[i])


@tack.kernel
def k_atan2(x, y, out):
    for i in range(x.shape[0]):
        out[i] = math.atan2(x[i], y[i])


@tack.kernel
def k_hypot(x, y, out):
    for i in range(x.shape[0]):
        out[i] = math.hypot(x[i], y[i])


# name -> (kernel, reference on longdouble arrays, ranges of the uniform points:
# one (lo, hi) per argument)
UNARY = {
    "exp": (k_exp, np.exp, (-110.0, 89.0), (-750.0, 710.0)),
    "log": (k_log, np.log, (0.0, 1e6), (0.0, 1e12)),
    "log2": (k_log2, np.log2, (0.0, 1e6), (0.0, 1e12)),
    "log10": (k_log10, np.log10, (0.0, 1e6), (0.0, 1e12)),
    "sin": (k_sin, np.sin, (-1e4, 1e4), (-1e6, 1e6)),
    "cos": (k_cos, np.cos, (-1e4, 1e4), (-1e6, 1e6)),
    "tan": (k_tan, np.tan, (-1e4, 1e4), (-1e6, 1e6)),
    "asin": (k_asin, np.arcsin, (-1.0, 1.0), (-1.0, 1.0)),
    "acos": (k_acos, np.arccos, (-1.0, 1.0), (-1.0, 1.0)),
    "atan": (k_atan, np.arctan, (-100.0, 100.0), (-100.0, 100.0)),
    "sinh": (k_sinh, np.sinh, (-95.0, 95.0), (-720.0, 720.0)),
    "cosh": (k_cosh, np.cosh, (-95.0, 95.0), (-720.0, 720.0)),
    "tanh": (k_tanh, np.tanh, (-20.0, 20.0), (-40.0, 40.0)),
    "sqrt": (k_sqrt, np.sqrt, (0.0, 1e6), (0.0, 1e12)),
}
BINARY = {
    "pow": (k_pow, np.power, ((0.0, 100.0), (-20.0, 20.0)), ((0.0, 1000.0), (-100.0, 100.0))),
    "atan2": (k_atan2, np.arctan2, ((-10.0, 10.0), (-10.0, 10.0)), ((-10.0, 10.0), (-10.0, 10.0))),
    "hypot": (k_hypot, np.hypot, ((-1e18, 1e18), (-1e18, 1e18)), ((-1e150, 1e150), (-1e150, 1e150))),
}
FUNCTIONS = list(UNARY) + list(BINARY)


def edges(dt):
    """Zeros, denormals, the extremes, infinities and NaN, both signs."""
    fi = np.finfo(dt)
    v = [0.0, fi.smallest_subnormal, fi.smallest_normal, fi.eps, 0.5, 1.0, 2.0, 10.0, 88.72, 89.0,
         709.78, 710.0, 1e10, float(fi.max), math.inf, math.nan]
    return np.array(v + [-a for a in v], dtype=dt)


def sweep(dt, n, lo_hi, seed):
    """n arguments of dtype dt: random bit patterns, uniform points in lo_hi, the edges."""
    r = np.random.default_rng(seed)
    ui = np.uint32 if dt == np.float32 else np.uint64
    bits = r.integers(0, np.iinfo(ui).max, n // 2, dtype=ui, endpoint=True).view(dt)
    lo, hi = lo_hi
    uni = r.uniform(lo, hi, n - n // 2).astype(dt)
    return np.concatenate([edges(dt), bits, uni])


def ulp_error(got, ref, dt):
    """(max error in ulps, number of NaN mismatches) of got (dtype dt) against ref (longdouble)."""
    fi = np.finfo(dt)
    nan_ref, nan_got = np.isnan(ref), np.isnan(got)
    bad_nan = int(np.count_nonzero(nan_ref != nan_got))
    keep = ~nan_ref & ~nan_got
    big = LD(2.0) ** (fi.maxexp)  # an infinity counts as the next power of two past the largest finite value
    g = np.clip(got[keep].astype(LD), -big, big)
    f = np.clip(ref[keep], -big, big)
    _, e = np.frexp(f)
    e = np.maximum(e.astype(np.int64) - 1, fi.minexp)  # denormals: the smallest spacing
    ulp = np.ldexp(LD(1.0), (e - (fi.nmant)).astype(np.int32))
    err = np.abs(g - f) / ulp
    return (float(err.max()) if err.size else 0.0), bad_nan


def measure(name, dt, n=1 << 16, seed=0):
    """Max ulp error and NaN mismatches of function `name` on dtype dt."""
    if name in UNARY:
        k, ref, r32, r64 = UNARY[name]
        x = sweep(dt, n, r32 if dt == np.float32 else r64, seed)
        out = np.zeros_like(x)
        k(x, out)
        with np.errstate(all="ignore"):
            expect = ref(x.astype(LD))
        return ulp_error(out, expect, dt)
    k, ref, r32, r64 = BINARY[name]
    rx, ry = r32 if dt == np.float32 else r64
    x, y = sweep(dt, n, rx, seed), sweep(dt, n, ry, seed + 1)
    ex = edges(dt)  # every pair of edge cases too
    x = np.concatenate([x, np.repeat(ex, ex.size)])
    y = np.concatenate([y, np.tile(ex, ex.size)])
    out = np.zeros_like(x)
    k(x, y, out)
    with np.errstate(all="ignore"):
        expect = ref(x.astype(LD), y.astype(LD))
    return ulp_error(out, expect, dt)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--points", type=int, default=1 << 20)
    a = ap.parse_args()
    print(f"vector math: TACK_VECTOR_MATH={os.environ.get('TACK_VECTOR_MATH', '(unset: on)')}, "
          f"{a.points} points a function")
    print(f"{'function':10s} {'f32 ulps':>10s} {'f64 ulps':>10s}")
    for name in FUNCTIONS:
        row = []
        for dt in (np.float32, np.float64):
            err, bad = measure(name, dt, a.points)
            row.append(f"{err:10.3f}" + (f" ({bad} NaN mismatches)" if bad else ""))
        print(f"{name:10s} " + " ".join(row))


if __name__ == "__main__":
    main()
