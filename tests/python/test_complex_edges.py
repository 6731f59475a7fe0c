"""Complex exp, sqrt, log and abs against NumPy at the edges (C99 Annex G).

Every pair of special parts -- zeros of both signs, subnormals, the smallest
normal, ordinary values, values near the overflow threshold, infinities and
NaN -- for complex64 and complex128, on the CPU and on OpenCL (PoCL) where
there is a device.  Where NumPy's part is special (an infinity, a NaN, a
zero) the kernel's must be the same, sign included (a NaN's too); elsewhere within
ULPS units in the last place (docs/language.md, "Complex numbers").
"""

import cmath
import warnings

import numpy as np
import pytest

import tack

ULPS = 2  # the documented bound; the grid below is within 1 on the CPU ...
ULPS_EXP_OVER = 4  # ... but for exp past exp's overflow threshold (exp(x/2) squared)
LANES_ULPS = 4  # of the exact result: glibc's vector math's documented bound, in SIMD lanes

OPENCL = [d for d in tack.devices() if d.startswith("opencl")]
DEVICES = ["cpu"] + [pytest.param(d, id=d) for d in OPENCL[:1]]


@tack.kernel
def k_exp(z, out):
    for i in range(z.shape[0]):
        out[i] = np.exp(z[i])


@tack.kernel
def k_sqrt(z, out):
    for i in range(z.shape[0]):
        out[i] = cmath.sqrt(z[i])


@tack.kernel
def k_log(z, out):
    for i in range(z.shape[0]):
        out[i] = np.log(z[i])


@tack.kernel
def k_abs(z, out):
    for i in range(z.shape[0]):
        out[i] = abs(z[i])


FUNCS = {"exp": (k_exp, np.exp), "sqrt": (k_sqrt, np.sqrt), "log": (k_log, np.log), "abs": (k_abs, np.abs)}


def parts(ft):
    fi = np.finfo(ft)
    sub = float(fi.smallest_subnormal)
    over = 88.8 if ft == np.float32 else 709.9  # exp overflows, exp(x/2) does not
    v = [0.0, sub, 3 * sub, float(fi.tiny) * 0.75, float(fi.tiny), 1e-30 if ft == np.float32 else 1e-300,
         0.5, 0.6, 0.8, 0.75, 1.0, 1.5, 2.0, 3.0, over, float(np.sqrt(fi.max)), float(fi.max) / 2, float(fi.max),
         np.inf]
    v = v + [-x for x in v] + [np.nan]
    return np.array(v, ft)


def grid(ct):
    p = parts(np.float32 if ct == np.complex64 else np.float64)
    re, im = np.meshgrid(p, p, indexing="ij")
    z = np.empty(re.size, ct)
    z.real, z.imag = re.ravel(), im.ravel()
    return z


def ulp_distance(a, b):
    """Units in the last place between same-dtype finite floats (elementwise)."""
    it = np.int32 if a.dtype == np.float32 else np.int64
    ai, bi = a.view(it).astype(np.int64), b.view(it).astype(np.int64)
    lo = np.int64(np.iinfo(it).min)
    ai = np.where(ai < 0, lo - ai, ai)
    bi = np.where(bi < 0, lo - bi, bi)
    return np.abs(ai - bi)


def mismatches(got, want, ulps=ULPS, exact_ref=None):
    """Indices where a part differs: specials exactly, others past `ulps` of
    NumPy's result, and past LANES_ULPS of exact_ref (NumPy's double-precision
    result rounded) too.  Where a loop runs in SIMD lanes Tack's complex64 log
    calls glibc's vector logf, documented within 4 ulps: on an AVX-512 machine
    (an AMD EPYC) log(0.75+0.75j).real came out 2.5 ulps from the exact value
    and 3 from NumPy's, which is SIMD code of its own (docs/language.md)."""
    bad = np.zeros(got.shape, bool)
    ref = want if exact_ref is None else exact_ref
    pairs = [(got.real, want.real, ref.real), (got.imag, want.imag, ref.imag)] if np.iscomplexobj(want) else \
        [(got, want, ref)]
    for g, w, r in pairs:
        g, w, r = np.ascontiguousarray(g), np.ascontiguousarray(w), np.ascontiguousarray(r)
        special = ~np.isfinite(w) | (w == 0) | ~np.isfinite(g) | (g == 0)
        nan = np.isnan(w)
        exact = (np.isnan(g) == nan) & (np.signbit(g) == np.signbit(w)) & (nan | (g == w))
        close = np.zeros_like(bad)
        fin = ~special
        close[fin] = ulp_distance(g[fin], w[fin]) <= ulps
        fin_r = fin & np.isfinite(r) & (r != 0)
        close[fin_r] |= ulp_distance(g[fin_r], r[fin_r]) <= LANES_ULPS
        bad |= np.where(special, ~exact, ~close)
    return np.nonzero(bad)[0]


def run(kernel, z, out, device):
    if device == "cpu":
        kernel(z, out)
        return out
    zd, od = tack.array(z, device=device), tack.array(out, device=device)
    kernel(zd, od)
    return od.numpy()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ct", [np.complex64, np.complex128], ids=["complex64", "complex128"])
@pytest.mark.parametrize("name", list(FUNCS))
def test_edges_equal_numpy(name, ct, device):
    kernel, ref = FUNCS[name]
    z = grid(ct)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = ref(z)
    got = run(kernel, z, np.zeros_like(want), device)
    exact_ref = None
    if ct == np.complex64:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            exact_ref = ref(z.astype(np.complex128)).astype(want.dtype)
    bad = mismatches(got, want, ULPS_EXP_OVER if name == "exp" else ULPS, exact_ref)
    assert not len(bad), "\n".join(f"{name}({z[i]!r}) = {got[i]!r}, NumPy {want[i]!r}" for i in bad[:12])


@pytest.mark.parametrize("ct", [np.complex64, np.complex128], ids=["complex64", "complex128"])
def test_issue_examples(ct):
    """The values issue 32 names: each was wrong before."""
    big = np.finfo(ct).max / 2 if ct == np.complex64 else 1e308
    z = np.array([complex(big, big), complex(-np.inf, np.inf), complex(np.finfo(ct).smallest_subnormal, 0.0)], ct)
    for kernel, ref in (FUNCS["sqrt"], FUNCS["exp"], FUNCS["log"]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = ref(z)
        got = run(kernel, z, np.zeros_like(want), "cpu")
        assert not len(mismatches(got, want)), (kernel, got, want)


def test_near_unit_circle_log():
    """log|z| where |z| is close to 1 cancels in the textbook formula (it
    was wrong in the fourth digit for complex64)."""
    rng = np.random.default_rng(5)
    for ct in (np.complex64, np.complex128):
        ft = np.float32 if ct == np.complex64 else np.float64
        t = rng.uniform(0, 2 * np.pi, 2000)
        r = 1 + rng.uniform(-1e-3, 1e-3, t.size)
        z = (r * np.exp(1j * t)).astype(ct)
        want = np.log(z)
        got = np.zeros_like(want)
        k_log(z, got)
        assert np.abs(got.imag - want.imag).max() <= 2 * np.spacing(ft(np.pi))
        err = np.abs(got.real - want.real) / np.maximum(np.abs(want.real), np.finfo(ft).tiny)
        assert err.max() <= 4 * np.finfo(ft).eps, err.max()
