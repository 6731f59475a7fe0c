"""The math library's second part (docs/language.md, "Math"): erf, erfc,
log1p, expm1, cbrt, exp2, asinh, acosh, atanh, remainder, rint, fma, rsqrt,
sign, clamp, lerp, smoothstep, step, degrees and radians.

Each function runs in a kernel over a sweep of arguments -- random bit
patterns over every exponent, uniform points where the function is
interesting, and the edges (zeros of both signs, subnormals, the largest
floats, infinities, NaN) -- on the CPU, on the OpenCL device (PoCL, where
tack.devices() lists it), in debug mode and, for f32, as the Metal dialect's
MSL run on the CPU (tests/python/_msl_emulate.py: Tack's own erf, erfc,
log1p, expm1, cbrt and remainder on a correctly rounded exp and log).  Its
error against a reference computed in more precision (NumPy's long double,
mpmath for erf and erfc in f64, exact fractions for fma) must stay within the
bound its row of src/compiler/intrinsics.def states, NaN where the reference
is NaN and nowhere else.  The exact ones (remainder, rint, sign, clamp, step)
must equal the reference, and the formula ones (lerp, smoothstep) must give
the bits their formula gives in NumPy scalars of the type.  The GPU dialects'
sources compile with NVRTC, hiprtc, Intel's ocloc and clang (the MSL check).
"""

import importlib.util
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import tack
from tack import _core, _mathlib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)
from benchmarks import ulps  # noqa: E402  (the sweep and the ulp measure)
import _msl  # noqa: E402
import _msl_emulate  # noqa: E402
import _ocloc  # noqa: E402


def _gen_math():
    spec = importlib.util.spec_from_file_location("gen_math", ROOT / "tools" / "gen_math.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


GEN = _gen_math()
BOUND = {r["name"]: {np.float32: r["ulps_f32"], np.float64: r["ulps_f64"]} for r in GEN.rows()}
LD = np.longdouble
PI = LD("3.14159265358979323846264338327950288")
OPENCL = next((d for d in tack.devices() if d.startswith("opencl")), None)
DT = pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])


def _unary(x, out):
    for i in range(x.shape[0]):
        out[0, i] = math.erf(x[i])
        out[1, i] = math.erfc(x[i])
        out[2, i] = math.log1p(x[i])
        out[3, i] = np.expm1(x[i])
        out[4, i] = math.cbrt(x[i])
        out[5, i] = math.exp2(x[i])
        out[6, i] = math.asinh(x[i])
        out[7, i] = np.arccosh(x[i])
        out[8, i] = math.atanh(x[i])
        out[9, i] = np.rint(x[i])
        out[10, i] = tack.rsqrt(x[i])
        out[11, i] = np.sign(x[i])
        out[12, i] = math.degrees(x[i])
        out[13, i] = np.radians(x[i])


unary = tack.kernel(_unary)
unary_debug = tack.kernel(_unary, jit=False)
UNARY = ["erf", "erfc", "log1p", "expm1", "cbrt", "exp2", "asinh", "acosh", "atanh", "rint", "rsqrt", "sign",
         "degrees", "radians"]
RANGES = {"erf": (-5, 5), "erfc": (-3, 12), "log1p": (-0.9, 10), "expm1": (-5, 5), "cbrt": (-1e3, 1e3),
          "exp2": (-130, 130), "asinh": (-100, 100), "acosh": (1, 100), "atanh": (-1, 1), "rint": (-1e3, 1e3),
          "rsqrt": (0, 1e3), "sign": (-1, 1), "degrees": (-10, 10), "radians": (-1000, 1000)}


def _nary(x, y, z, out):
    for i in range(x.shape[0]):
        out[0, i] = math.remainder(x[i], y[i])
        out[1, i] = tack.step(x[i], y[i])
        out[2, i] = tack.fma(x[i], y[i], z[i])
        out[3, i] = tack.clamp(x[i], y[i], z[i])
        out[4, i] = tack.lerp(x[i], y[i], z[i])
        out[5, i] = tack.smoothstep(x[i], y[i], z[i])


nary = tack.kernel(_nary)
nary_debug = tack.kernel(_nary, jit=False)
NARY = ["remainder", "step", "fma", "clamp", "lerp", "smoothstep"]


# ------------------------------------------------------------- references
def _mp_erf(name, v):
    import mpmath

    if not math.isfinite(v) or abs(v) > 30:  # past f64's resolution: 1, -1, 0 or 2 exactly
        return LD(getattr(math, name)(v))
    with mpmath.workprec(80):
        return LD(str(getattr(mpmath, name)(mpmath.mpf(v))))


def reference(name, x, dt):
    """The exact function of x (an array of dtype dt), in long double."""
    with np.errstate(all="ignore"):
        xl = x.astype(LD)
        if name in ("erf", "erfc"):
            if dt == np.float64:
                pytest.importorskip("mpmath")
                return np.array([_mp_erf(name, float(v)) for v in x], dtype=LD)
            f = getattr(math, name)  # a double is 2^29 f32 ulps more precise
            return np.array([f(float(v)) for v in x], dtype=np.float64).astype(LD)
        if name in ("log1p", "expm1", "cbrt", "exp2", "rint", "sign"):
            return getattr(np, name)(xl)
        if name in ("asinh", "acosh", "atanh"):
            return getattr(np, "arc" + name[1:])(xl)
        if name == "rsqrt":
            return LD(1) / np.sqrt(xl)
        if name == "degrees":
            return xl * (LD(180) / PI)
        if name == "radians":
            return xl * (PI / LD(180))
    raise KeyError(name)


def _exact_fma(a, b, c):
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return a * b + c
    e = Fraction(a) * Fraction(b) + Fraction(c)
    try:
        return LD(e.numerator) / LD(e.denominator) if e else LD(0.0)
    except OverflowError:
        return LD(math.inf if e > 0 else -math.inf)


def _remainder(x, y):
    if math.isnan(x) or math.isnan(y) or math.isinf(x) or y == 0:
        return math.nan
    return x if math.isinf(y) else math.remainder(x, y)


def sweep(dt, n, lo_hi, seed):
    return ulps.sweep(dt, n, lo_hi, seed)


def unary_args(dt, n):
    return np.concatenate([sweep(dt, n, RANGES[name], 11 + k) for k, name in enumerate(UNARY)])


def nary_args(dt, n, seed=3):
    r = np.random.default_rng(seed)
    x, y, z = (sweep(dt, n, (-10, 10), seed + k) for k in range(3))
    e = ulps.edges(dt)
    pick = r.integers(0, e.size, (3, 2 * e.size * e.size // 4))
    # and ordered triples (lo <= x <= hi, e0 < e1) of ordinary numbers
    lo = r.uniform(-5, 5, n).astype(dt)
    return [np.concatenate([x, e[pick[0]], lo]), np.concatenate([y, e[pick[1]], lo + r.uniform(0, 3, n).astype(dt)]),
            np.concatenate([z, e[pick[2]], lo + r.uniform(0, 6, n).astype(dt)])]


# ------------------------------------------------------------- the runs
def run(kernel, args, dt, where):
    rows = 14 if kernel is unary else 6
    out = np.zeros((rows, args[0].size), dt)
    if where == "cpu":
        kernel(*args, out)
        return out
    if where == "debug":
        (unary_debug if kernel is unary else nary_debug)(*args, out)
        return out
    if where == "metal":
        (*_, got), err = _msl_emulate.run(kernel, *args, out, threads=1)
        assert err == (0, 0)
        return got
    d = tack.zeros(out.shape, tack.f32 if dt == np.float32 else tack.f64, device=where)
    kernel(*[tack.array(a, device=where) for a in args], d)
    return d.numpy()


def check_unary(got, x, dt, where):
    n = x.size // len(UNARY)
    for r, name in enumerate(UNARY):  # each function on its own part of the sweep
        bound = BOUND[name][dt]
        part = slice(r * n, (r + 1) * n)
        want, g = reference(name, x[part], dt), got[r][part]
        if bound == 0:
            w = want.astype(dt)
            same = (g == w) | (np.isnan(g) & np.isnan(w))
            assert same.all(), (name, where, x[part][~same][:5], g[~same][:5], w[~same][:5])
            continue
        err, bad_nan = ulps.ulp_error(g, want, dt)
        assert bad_nan == 0, f"{name} on {where} ({np.dtype(dt)}): NaN where the reference is not, or not where it is"
        assert err <= bound + 0.01, f"{name} on {where} ({np.dtype(dt)}): {err:.2f} ulps, bound {bound}"


def check_nary(got, args, dt, where):
    x, y, z = args
    with np.errstate(all="ignore"):
        rem = np.array([_remainder(float(a), float(b)) for a, b in zip(x, y)]).astype(dt)
        fma = np.array([_exact_fma(float(a), float(b), float(c)) for a, b, c in zip(x, y, z)], dtype=LD)
        exact = {"remainder": rem, "step": np.where(y < x, dt(0), np.where(y >= x, dt(1), dt(np.nan))).astype(dt),
                 "clamp": _mathlib.clamp(x, y, z), "lerp": x + z * (y - x),
                 "smoothstep": _mathlib.smoothstep(x, y, z)}
    for r, name in enumerate(NARY):
        if name == "fma":
            err, bad_nan = ulps.ulp_error(got[r], fma, dt)
            assert bad_nan == 0 and err <= 0.5, (where, err, bad_nan)
            continue
        w = np.asarray(exact[name], dtype=dt)
        same = (got[r] == w) | (np.isnan(got[r]) & np.isnan(w))
        if name in ("remainder", "clamp"):  # zeros keep their signs
            same &= np.isnan(w) | (np.signbit(got[r]) == np.signbit(w))
        assert same.all(), (name, where, x[~same][:4], y[~same][:4], z[~same][:4], got[r][~same][:4], w[~same][:4])


@DT
def test_unary_on_the_cpu(dt):
    x = unary_args(dt, 2048)
    check_unary(run(unary, [x], dt, "cpu"), x, dt, "cpu")


LANES = ["erf", "erfc", "log1p", "expm1", "cbrt", "exp2", "asinh", "acosh", "atanh"]


@tack.kernel
def lanes(x, out):
    # one loop a function, each of which runs in SIMD lanes where glibc's libmvec has it
    for i in range(out.shape[1]):
        out[0, i] = math.erf(x[0, i])
    for i in range(out.shape[1]):
        out[1, i] = math.erfc(x[1, i])
    for i in range(out.shape[1]):
        out[2, i] = math.log1p(x[2, i])
    for i in range(out.shape[1]):
        out[3, i] = math.expm1(x[3, i])
    for i in range(out.shape[1]):
        out[4, i] = math.cbrt(x[4, i])
    for i in range(out.shape[1]):
        out[5, i] = math.exp2(x[5, i])
    for i in range(out.shape[1]):
        out[6, i] = math.asinh(x[6, i])
    for i in range(out.shape[1]):
        out[7, i] = math.acosh(x[7, i])
    for i in range(out.shape[1]):
        out[8, i] = math.atanh(x[8, i])


@DT
def test_in_simd_lanes(dt):
    x = np.stack([sweep(dt, 4096, RANGES[name], 31 + k) for k, name in enumerate(LANES)])
    out = np.zeros_like(x)
    lanes(x, out)
    for r, name in enumerate(LANES):
        err, bad_nan = ulps.ulp_error(out[r], reference(name, x[r], dt), dt)
        assert bad_nan == 0 and err <= BOUND[name][dt] + 0.01, (name, np.dtype(dt), err, bad_nan)


@DT
def test_nary_on_the_cpu(dt):
    args = nary_args(dt, 4096)
    check_nary(run(nary, args, dt, "cpu"), args, dt, "cpu")


@DT
def test_debug_mode_gives_the_compiled_kernels_values_within_the_bounds(dt):
    x = unary_args(dt, 24)
    got = run(unary, [x], dt, "debug")
    check_unary(got, x, dt, "debug")
    args = nary_args(dt, 64)
    check_nary(run(nary, args, dt, "debug"), args, dt, "debug")


@pytest.mark.skipif(OPENCL is None, reason="no OpenCL device (PoCL) on this machine")
@DT
def test_on_opencl(dt):
    x = unary_args(dt, 2048)
    check_unary(run(unary, [x], dt, OPENCL), x, dt, OPENCL)
    args = nary_args(dt, 2048)
    check_nary(run(nary, args, dt, OPENCL), args, dt, OPENCL)


@pytest.mark.skipif(_msl.clang() is None, reason="clang++ is not installed (Debian: clang)")
def test_metal_f32_functions_in_emulation():
    x = unary_args(np.float32, 1024)
    check_unary(run(unary, [x], np.float32, "metal"), x, np.float32, "metal (emulated)")
    args = nary_args(np.float32, 1024)
    check_nary(run(nary, args, np.float32, "metal"), args, np.float32, "metal (emulated)")


# ------------------------------------------------------ the GPU dialects
def _sources(target, dt):
    x = np.zeros(4, dt)
    return [unary.generated_source(x, np.zeros((14, 4), dt), target=target),
            nary.generated_source(x, x, x, np.zeros((6, 4), dt), target=target)]


@pytest.mark.skipif(not (hasattr(_core, "_nvrtc_version") and _core._nvrtc_version() > 0),
                    reason="NVRTC (libnvrtc) is not installed")
@DT
def test_cuda_sources_compile_with_nvrtc(dt):
    for src in _sources("cuda", dt):
        assert ".entry" in _core._nvrtc_compile(src, "sm_80")


_HIPRTC = ("import sys\nfrom tack import _core\nfor s in sys.stdin.read().split('\\0'):\n"
           "    assert len(_core._hiprtc_compile(s, 'gfx90a')) > 0\n")


@pytest.mark.skipif(_core._hiprtc_version() <= 0, reason="hiprtc is not installed (Debian: libamdhip64-dev)")
def test_hip_sources_compile_with_hiprtc():
    # in a fresh process, as tests/python/test_hip.py compiles (comgr's state)
    srcs = _sources("hip", np.float32) + _sources("hip", np.float64)
    proc = subprocess.run([sys.executable, "-c", _HIPRTC], input="\0".join(srcs).encode(), capture_output=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]


@pytest.mark.skipif(_ocloc.library() is None, reason="libocloc not installed (Debian: intel-opencl-icd)")
@DT
def test_opencl_sources_compile_with_ocloc(dt):
    for src in _sources("opencl", dt):
        rc, outputs = _ocloc.compile(src, "dg2" if dt == np.float32 else "pvc")
        assert rc == 0, outputs.get("stdout.log", b"")[:3000]


@pytest.mark.skipif(_msl.clang() is None and not _msl.xcrun(), reason="clang++ is not installed (Debian: clang)")
def test_metal_sources_pass_the_msl_check():
    for src in _sources("metal", np.float32):
        assert "tk_erf_f32" in src or "tk_remainder_f32" in src
        assert _msl.check(src) is None


def test_a_kernel_without_them_carries_none_of_the_helpers():
    @tack.kernel
    def plain(x, out):
        for i in range(x.shape[0]):
            out[i] = math.sqrt(x[i])

    x = np.zeros(4, np.float32)
    for target in ("c", "cuda", "opencl", "metal"):
        src = plain.generated_source(x, x, target=target) if target != "c" else plain.generated_source(x, x)
        assert "tk_lerp" not in src and "tk_erf" not in src and "tk_sign" not in src, target


# --------------------------------------------------------------- types
def _of_ints(a, out):
    for i in range(a.shape[0]):
        out[0, i] = math.erf(i) + tack.clamp(a[i], 0, 3)
        out[1, i] = np.sign(a[i])
        out[2, i] = tack.sign(a[i])
        out[3, i] = tack.lerp(0, a[i], 0.5)


def test_integer_arguments_follow_the_type_rule():
    a = np.array([-2, 0, 5], np.int32)
    ir = tack.kernel(_of_ints).ir(a, np.zeros((4, 3)))
    assert "erf:f32" in ir and "clamp:f32" in ir and "sign:f32" in ir and "lerp:f32" in ir
    assert "sub:i32" in ir  # np.sign of an int32 is NumPy's int32 sign
    assert "erf:f64" in tack.kernel(_of_ints, default_float=tack.f64).ir(a, np.zeros((4, 3)))
    for k in (tack.kernel(_of_ints), tack.kernel(_of_ints, jit=False)):
        out = np.zeros((4, 3))
        k(a, out)
        assert out[1].tolist() == [-1, 0, 1] and out[2].tolist() == [-1, 0, 1]
        assert out[3].tolist() == [-1, 0, 2.5]
        assert out[0, 2] == np.float32(math.erf(2)) + 3


def _sign_of_bool(b, out):
    for i in range(b.shape[0]):
        out[i] = np.sign(b[i])


def _clamp_of_vector(v, out):
    for i in range(v.shape[0]):
        out[i] = tack.clamp(v[i], 0.0, tack.vec2(1.0, 1.0))


def _lerp_of_two(x, out):
    for i in range(x.shape[0]):
        out[i] = tack.lerp(x[i], 1.0)


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_refusals_are_named(jit):
    with pytest.raises(tack.CompileError, match=r"np.sign\(\) of bool"):
        tack.kernel(_sign_of_bool, jit=jit)(np.zeros(2, bool), np.zeros(2))
    with pytest.raises(tack.CompileError, match=r"clamp\(\) of vec3 and vec2: element-wise, the shapes must match"):
        tack.kernel(_clamp_of_vector, jit=jit)(tack.zeros(2, tack.vec3), tack.zeros(2, tack.vec3))
    with pytest.raises(tack.CompileError, match=r"lerp\(\) takes 3 arguments \(2 given\)"):
        tack.kernel(_lerp_of_two, jit=jit)(np.zeros(2), np.zeros(2))


# --------------------------------------------------------- special values
def test_special_values():
    f = np.float32
    inf, nan = math.inf, math.nan
    x = np.array([0.0, -0.0, inf, -inf, nan, 1.0, -1.0], f)
    out = np.zeros((14, x.size), f)
    unary(x, out)
    r = dict(zip(UNARY, out))
    assert r["erf"][:4].tolist() == [0, 0, 1, -1] and np.signbit(r["erf"][1])
    assert r["erfc"][2:4].tolist() == [0, 2]
    assert r["log1p"][6] == -inf and np.isnan(r["log1p"][3]) and np.signbit(r["log1p"][1])
    assert r["expm1"][3] == -1 and r["expm1"][2] == inf
    assert r["cbrt"][3] == -inf and np.signbit(r["cbrt"][1])
    assert r["rsqrt"][0] == inf and r["rsqrt"][1] == -inf and np.isnan(r["rsqrt"][6])
    assert r["atanh"][5] == inf and r["atanh"][6] == -inf
    assert r["sign"].tolist()[:4] == [0, 0, 1, -1] and not np.signbit(r["sign"][1]) and np.isnan(r["sign"][4])
    assert all(np.isnan(r[n][4]) for n in UNARY)
    y = np.array([2.5, 3.5, -2.5, 0.5, 1.5], f)
    assert np.rint(y).tolist() == run(unary, [y], f, "cpu")[9].tolist() == [2, 4, -2, 0, 2]


def test_docs_math_table_is_fresh():
    assert GEN.PAGE.read_text() == GEN.page_text(), "docs/language.md's Math table is stale: run make docs-gen"
    text = GEN.table()
    for name in UNARY + NARY:
        assert f"| {name} |" in text
