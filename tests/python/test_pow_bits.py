"""``**`` of floats, to the bit: the compiled kernel against debug mode against
NumPy (docs/language.md, "How accurate the math functions are").

An exponent of 2, -1 or 0.5 is NumPy's array power (``x * x``, ``1 / x``, the
square root, with pow's +0.0 and +inf at -0.0 and -inf for 0.5); any other is
the C library's scalar pow / powf, which NumPy's scalar operator and Python call.
Before, the compiled loop called libmvec's vector pow in SIMD lanes (a few ulps
from pow: 38 of 150 values of ``x ** 3`` came out otherwise than in debug mode)
and debug mode called pow for 2, -1 and 0.5 too, which is not correctly rounded:
it misrounds ``x * x`` for x with 27 significant bits (x * x a halfway case) and
``sqrt`` or ``1 / x`` for about one random value in a thousand.
"""
import math

import numpy as np
import pytest

import tack

EXPONENTS = [2, 3, 4, -1, -2, 0.5, 1 / 3]     # the literal rows, in order
RUNTIME = [2.0, -1.0, 0.5, 3.0, -2.0, 1 / 3, 2.5]


def _powers(a, out, e, k):
    for i in range(a.shape[0]):
        x = a[i]
        out[0, i] = x ** 2
        out[1, i] = x ** 3
        out[2, i] = x ** 4
        out[3, i] = x ** -1
        out[4, i] = x ** -2
        out[5, i] = x ** 0.5
        out[6, i] = x ** (1 / 3)
        out[7, i] = x ** e           # a float exponent known at run time
        out[8, i] = math.pow(x, e)
        out[9, i] = np.power(x, e)
        out[10, i] = x ** k          # an int exponent known at run time


def _values(dt):
    r = np.random.default_rng(28)
    if dt == np.float64:
        m = r.integers(1 << 26, 1 << 27, 300)    # 27 significant bits: x * x a halfway case
        mid = np.ldexp(m.astype(np.float64), r.integers(-60, 60, m.size) - 26)
        tiny, huge = 5e-324, 1e300
    else:
        m = r.integers(1 << 11, 1 << 12, 300)
        mid = np.ldexp(m.astype(np.float64), r.integers(-20, 20, m.size) - 11)
        tiny, huge = 1e-45, 1e30
    rand = np.exp(r.uniform(-7, 7, 600)) * r.choice([1.0, -1.0], 600)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, tiny, huge, -huge, 2.0, -8.0]
    return np.concatenate([mid, mid * mid, rand, specials]).astype(dt)


def _same(got, want):
    """Equal to the bit: NaN where NaN, else the same value and sign."""
    nan = np.isnan(want)
    return bool((np.isnan(got) == nan).all() and (got[~nan] == want[~nan]).all()
                and (np.signbit(got[~nan]) == np.signbit(want[~nan])).all())


def _numpy(x, e):
    """NumPy's result: its array power for 2, -1 and 0.5 (pow's values at -0.0 and
    -inf for 0.5), its scalar operator -- C's pow -- for any other exponent."""
    with np.errstate(all="ignore"):
        return _numpy_power(x, x.dtype.type(e))


def _numpy_power(x, e):
    if e in (2, -1, 0.5):
        r = x ** e
        if e == 0.5:
            r = np.where((x == 0) | np.isinf(x), np.abs(x), r)
        return r
    return np.array([v ** e for v in x], x.dtype)


@pytest.mark.parametrize("dt", [np.float64, np.float32], ids=["f64", "f32"])
def test_pow_compiled_debug_and_numpy_agree_to_the_bit(dt):
    x = _values(dt)
    kernels = {jit: tack.kernel(_powers, jit=jit) for jit in (True, False)}
    bad = []
    for e in RUNTIME:
        k = int(e) if e == int(e) else 3
        outs = {}
        for jit, kern in kernels.items():
            outs[jit] = np.zeros((11, x.size), dt)
            kern(x, outs[jit], e, k)
        for row in range(11):
            if not _same(outs[True][row], outs[False][row]):
                bad.append(f"row {row}, e={e}: compiled and debug mode differ at "
                           f"{x[outs[True][row] != outs[False][row]][:4]}")
        rows = [(r, ex) for r, ex in enumerate(EXPONENTS)] + [(7, e), (8, e), (9, e)]
        for row, ex in rows:
            want = _numpy(x, ex)
            if not _same(outs[True][row], want):
                bad.append(f"row {row}, exponent {ex}: not NumPy's at {x[outs[True][row] != want][:4]}")
        kind = _numpy(x, k)  # an int exponent: as its float
        if not _same(outs[True][10], kind):
            bad.append(f"row 10, k={k}: not NumPy's at {x[outs[True][10] != kind][:4]}")
    assert not bad, "\n".join(bad[:12])


def test_the_exact_exponents_differ_from_pow_on_these_values():
    # a control: the values above do tell x * x, 1 / x and sqrt from the C
    # library's pow, and NumPy's array power from its scalar one
    x = _values(np.float64)
    fin = np.isfinite(x) & (x > 0)
    with np.errstate(all="ignore"):
        pw = {e: np.array([np.float64(v) ** np.float64(e) for v in x[fin]]) for e in (2.0, -1.0, 0.5)}
        assert (pw[2.0] != x[fin] * x[fin]).sum() > 10
        assert (pw[-1.0] != 1 / x[fin]).sum() + (pw[0.5] != np.sqrt(x[fin])).sum() > 0
