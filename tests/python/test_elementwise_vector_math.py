"""Element-wise math on vectors and matrices (docs/language.md, "Vectors and matrices"; decisions.md,
2026-12-06).

abs, the tack.* math functions and their NumPy spellings, and np.minimum / np.maximum apply to a vector
or matrix component by component, scalar arguments broadcast, as NumPy (and Warp, for abs, sign,
min/max, clamp, lerp) means them.  Each component is the scalar call: so a vector's result equals,
bit for bit, the scalar kernel's on its components, compiled and in debug mode alike, and debug mode
equals the compiled kernel bit for bit wherever it does for scalars (the correctly rounded and exact
functions; the transcendental ones are within the documented ulps, as for scalars).  math.sqrt(v) and
min(v, w) stay refused, as Python raises for arrays, and so do predicates (no bool vectors).
"""

import math

import numpy as np
import pytest

import tack

OPENCL = [d for d in tack.devices() if d.startswith("opencl")]

# the unary functions a vector takes, in the order _unary stores them
UNARY = ["abs", "np.abs", "sqrt", "np.sqrt", "exp", "np.exp", "log", "log2", "log10", "sin", "cos", "tan", "asin",
         "acos", "atan", "sinh", "cosh", "tanh", "floor", "np.floor", "ceil", "trunc", "np.trunc", "np.rint", "log1p",
         "expm1", "cbrt", "exp2", "asinh", "acosh", "atanh", "rint", "rsqrt", "sign", "np.sign", "degrees",
         "radians", "np.fabs"]
# correctly rounded or exact: compiled and debug mode agree bit for bit (the others within the ulps)
EXACT = {"abs", "np.abs", "sqrt", "np.sqrt", "floor", "np.floor", "ceil", "trunc", "np.trunc", "rint", "np.rint",
         "sign", "np.sign", "np.fabs"}


@tack.func
def _unary(v, out, i):
    out[0, i] = abs(v)
    out[1, i] = np.abs(v)
    out[2, i] = tack.sqrt(v)
    out[3, i] = np.sqrt(v)
    out[4, i] = tack.exp(v)
    out[5, i] = np.exp(v)
    out[6, i] = tack.log(v)
    out[7, i] = tack.log2(v)
    out[8, i] = tack.log10(v)
    out[9, i] = tack.sin(v)
    out[10, i] = tack.cos(v)
    out[11, i] = tack.tan(v)
    out[12, i] = tack.asin(v)
    out[13, i] = tack.acos(v)
    out[14, i] = tack.atan(v)
    out[15, i] = tack.sinh(v)
    out[16, i] = tack.cosh(v)
    out[17, i] = tack.tanh(v)
    out[18, i] = tack.floor(v)
    out[19, i] = np.floor(v)
    out[20, i] = tack.ceil(v)
    out[21, i] = tack.trunc(v)
    out[22, i] = np.trunc(v)
    out[23, i] = np.rint(v)
    out[24, i] = tack.log1p(v)
    out[25, i] = tack.expm1(v)
    out[26, i] = tack.cbrt(v)
    out[27, i] = tack.exp2(v)
    out[28, i] = tack.asinh(v)
    out[29, i] = tack.acosh(v)
    out[30, i] = tack.atanh(v)
    out[31, i] = tack.rint(v)
    out[32, i] = tack.rsqrt(v)
    out[33, i] = tack.sign(v)
    out[34, i] = np.sign(v)
    out[35, i] = tack.degrees(v)
    out[36, i] = tack.radians(v)
    out[37, i] = np.fabs(v)


BINARY = ["atan2", "np.arctan2", "pow", "hypot", "fmod", "copysign", "clamp s", "clamp v", "lerp s", "lerp v",
          "fma", "smoothstep", "step", "np.minimum", "np.maximum", "np.minimum s", "np.fmod"]
BINARY_EXACT = {"fmod", "copysign", "clamp s", "clamp v", "fma", "step", "np.minimum", "np.maximum",
                "np.minimum s", "np.fmod"}


@tack.func
def _binary(v, w, t, out, i):
    out[0, i] = tack.atan2(v, w)
    out[1, i] = np.arctan2(v, w)
    out[2, i] = pow(abs(v), w)
    out[3, i] = tack.hypot(v, w)
    out[4, i] = tack.fmod(v, w)
    out[5, i] = tack.copysign(v, w)
    out[6, i] = tack.clamp(v, -0.5, 1.0)
    out[7, i] = tack.clamp(v, w, w + 1.0)
    out[8, i] = tack.lerp(v, w, 0.25)
    out[9, i] = tack.lerp(v, w, t)
    out[10, i] = tack.fma(v, w, t)
    out[11, i] = tack.smoothstep(-1.0, 1.5, v)
    out[12, i] = tack.step(0.25, v)
    out[13, i] = np.minimum(v, w)
    out[14, i] = np.maximum(v, w)
    out[15, i] = np.minimum(v, 0.5)
    out[16, i] = np.fmod(v, w)


@tack.kernel
def unary_vec(x, out):
    for i in range(x.shape[0]):
        _unary(x[i], out, i)


@tack.kernel
def unary_scalar(x, out):
    for i in range(x.shape[0]):
        _unary(x[i], out, i)


@tack.kernel
def binary_vec(x, y, t, out):
    for i in range(x.shape[0]):
        _binary(x[i], y[i], t[i], out, i)


@tack.kernel
def binary_scalar(x, y, t, out):
    for i in range(x.shape[0]):
        _binary(x[i], y[i], t[i], out, i)


VECTORS = {(n, dt): getattr(tack, f"vec{n}" + ("d" if dt == np.float64 else "")) for n in (2, 3, 4)
           for dt in (np.float32, np.float64)}
N = 24


def _inputs(n, dt, k):
    rng = np.random.default_rng(10 * n + k)
    x = (rng.standard_normal((N, n)) * 2.0).astype(dt)
    x.flat[:8] = [0.0, -0.0, 0.5, -0.5, 1.0, -1.5, 2.5, np.nan]  # ties, signed zeros, a NaN
    return x


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _same_bits(a, b, what):
    bad = _bits(a) != _bits(b)
    assert not bad.any(), f"{what}: {int(bad.sum())} components differ, first {a[bad][:3]} vs {b[bad][:3]}"


def _run(kernel, jit, vt, ins, nf, n, dt):
    """Run `kernel` (vector form when vt is a vector type, else on the components as scalars) on inputs
    `ins`, its output nf results a point; the outputs as an (nf, N, n) float array."""
    k = kernel if jit else tack.kernel(kernel.__wrapped__, jit=False)
    if vt is not None:
        out = tack.zeros((nf, N), vt)
        k(*[tack.array(a, vt) for a in ins], out)
        return out.numpy().reshape(nf, N, n)
    out = np.zeros((nf, N * n), dt)
    k(*[a.reshape(-1).copy() for a in ins], out)
    return out.reshape(nf, N, n)


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_unary_functions_are_the_scalar_ones_on_each_component(n, dt):
    vt, x = VECTORS[(n, dt)], _inputs(n, dt, 0)
    with np.errstate(all="ignore"):
        cv = _run(unary_vec, True, vt, [x], len(UNARY), n, dt)
        cs = _run(unary_scalar, True, None, [x], len(UNARY), n, dt)
        dv = _run(unary_vec, False, vt, [x], len(UNARY), n, dt)
        ds = _run(unary_scalar, False, None, [x], len(UNARY), n, dt)
    for f, name in enumerate(UNARY):
        _same_bits(cv[f], cs[f], f"{name} compiled, vector vs scalars")
        _same_bits(dv[f], ds[f], f"{name} debug mode, vector vs scalars")
        if name in EXACT:
            _same_bits(cv[f], dv[f], f"{name} compiled vs debug mode")
    # against NumPy's functions of the component arrays (the transcendental ones within their ulps)
    ref = {"abs": np.abs, "sqrt": np.sqrt, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
           "exp": np.exp, "sin": np.sin, "tanh": np.tanh, "sign": np.sign, "rint": np.rint, "atanh": np.arctanh}
    tol = 1e-5 if dt == np.float32 else 1e-13
    with np.errstate(all="ignore"):
        for name, fn in ref.items():
            want = fn(x)
            assert want.dtype == dt
            np.testing.assert_allclose(cv[UNARY.index(name)], want, rtol=tol, atol=0, err_msg=name)
            np.testing.assert_allclose(cv[UNARY.index("np." + name)] if "np." + name in UNARY else
                                       cv[UNARY.index(name)], want, rtol=tol, atol=0, err_msg=name)


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_several_arguments_vectors_and_broadcast_scalars(n, dt):
    vt = VECTORS[(n, dt)]
    x, y, t = _inputs(n, dt, 1), _inputs(n, dt, 2), np.abs(_inputs(n, dt, 3))
    y[0] = x[0]  # equal components: np.minimum's tie
    with np.errstate(all="ignore"):
        cv = _run(binary_vec, True, vt, [x, y, t], len(BINARY), n, dt)
        cs = _run(binary_scalar, True, None, [x, y, t], len(BINARY), n, dt)
        dv = _run(binary_vec, False, vt, [x, y, t], len(BINARY), n, dt)
        ds = _run(binary_scalar, False, None, [x, y, t], len(BINARY), n, dt)
    for f, name in enumerate(BINARY):
        _same_bits(cv[f], cs[f], f"{name} compiled, vector vs scalars")
        _same_bits(dv[f], ds[f], f"{name} debug mode, vector vs scalars")
        if name in BINARY_EXACT:
            _same_bits(cv[f], dv[f], f"{name} compiled vs debug mode")
    with np.errstate(all="ignore"):
        _same_bits(cv[BINARY.index("np.minimum")], np.minimum(x, y), "np.minimum vs NumPy")
        _same_bits(cv[BINARY.index("np.maximum")], np.maximum(x, y), "np.maximum vs NumPy")
        _same_bits(cv[BINARY.index("np.minimum s")], np.minimum(x, dt(0.5)), "np.minimum(v, 0.5) vs NumPy")
        _same_bits(cv[BINARY.index("fmod")], np.fmod(x, y), "fmod vs NumPy")
        _same_bits(cv[BINARY.index("copysign")], np.copysign(x, y), "copysign vs NumPy")
        clamp = np.where(np.isnan(x), x, np.minimum(np.maximum(x, dt(-0.5)), dt(1.0)))
        _same_bits(cv[BINARY.index("clamp s")], clamp, "clamp(v, -0.5, 1.0) vs NumPy")
        np.testing.assert_allclose(cv[BINARY.index("lerp v")], x + t * (y - x), rtol=1e-5 if dt == np.float32 else 1e-12,
                                   atol=1e-6)
        np.testing.assert_allclose(cv[BINARY.index("atan2")], np.arctan2(x, y), rtol=1e-5 if dt == np.float32 else 1e-13)


@tack.kernel
def ints(x, y, fa, fb, fc, ia):
    for i in range(x.shape[0]):
        v = x[i]
        fa[i] = tack.sqrt(v)               # the default float, as tack.sqrt of an i32 is
        fb[i] = np.sqrt(v)                 # NumPy's: f64 for an i32
        fc[i] = tack.clamp(v, -2.0, 2.0)   # a float bound: the float result
        ia[0, i] = abs(v)
        ia[1, i] = np.abs(v)
        ia[2, i] = np.sign(v)
        ia[3, i] = np.floor(v)             # NumPy keeps an integer
        ia[4, i] = np.minimum(v, y[i])
        ia[5, i] = np.maximum(v, 0)


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_integer_vectors(jit):
    x = np.array([[1, -2, 3], [-4, 0, 9], [2147483647, -2147483647, 7]], np.int32)
    y = np.array([[0, 0, 5], [-5, 1, 9], [0, 0, 0]], np.int32)
    fa, fb, fc = tack.zeros(3, tack.vec3), tack.zeros(3, tack.vec3d), tack.zeros(3, tack.vec3)
    ia = tack.zeros((6, 3), tack.vec3i)
    k = ints if jit else tack.kernel(ints.__wrapped__, jit=False)
    k(tack.array(x, tack.vec3i), tack.array(y, tack.vec3i), fa, fb, fc, ia)
    with np.errstate(invalid="ignore"):
        _same_bits(fa.numpy().reshape(3, 3), np.sqrt(x.astype(np.float32)), "tack.sqrt of vec3i")
        _same_bits(fb.numpy().reshape(3, 3), np.sqrt(x), "np.sqrt of vec3i")
    _same_bits(fc.numpy().reshape(3, 3), np.clip(x, -2, 2).astype(np.float32), "clamp")
    got = ia.numpy().reshape(6, 3, 3)
    for k_, want in enumerate([np.abs(x), np.abs(x), np.sign(x), np.floor(x), np.minimum(x, y), np.maximum(x, 0)]):
        assert want.dtype == np.int32
        np.testing.assert_array_equal(got[k_], want)


@tack.kernel
def int_scalars(x, out):
    for i in range(x.shape[0]):
        out[0, i] = np.sqrt(x[i])   # f64, as NumPy computes an int32's
        out[1, i] = np.floor(x[i])  # the integer as it is


def test_numpy_spellings_of_integer_scalars_in_debug_mode():
    # debug mode computed np.sqrt of an int32 in the default float (f32), the compiled kernel in f64
    x = np.array([2, 3, 10**9 + 7], np.int32)
    c, d = np.zeros((2, 3)), np.zeros((2, 3))
    int_scalars(x, c)
    tack.kernel(int_scalars.__wrapped__, jit=False)(x, d)
    _same_bits(c, d, "compiled vs debug mode")
    _same_bits(c[0], np.sqrt(x), "np.sqrt of int32")
    assert c[1].tolist() == x.tolist()


def test_integer_vector_results_and_types_through_the_ir():
    ir = ints.ir(*[tack.zeros(2, tack.vec3i)] * 2, tack.zeros(2, tack.vec3), tack.zeros(2, tack.vec3d),
                 tack.zeros(2, tack.vec3), tack.zeros((6, 2), tack.vec3i))
    assert "vec3d" in ir and "vec3i" in ir


@tack.kernel
def matrices(m, a, b, c):
    for i in range(m.shape[0]):
        a[i] = tack.sqrt(abs(m[i]))
        b[i] = tack.clamp(m[i], -0.5, 0.5)
        c[i] = np.minimum(m[i], tack.transpose(m[i]))


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
@pytest.mark.parametrize("mt, dt", [(tack.mat33, np.float32), (tack.mat22d, np.float64), (tack.mat44, np.float32)],
                         ids=["mat33", "mat22d", "mat44"])
def test_matrices(jit, mt, dt):
    r = mt.shape[0]
    m = np.random.default_rng(5).standard_normal((4, r, r)).astype(dt)
    outs = [tack.zeros(4, mt) for _ in range(3)]
    k = matrices if jit else tack.kernel(matrices.__wrapped__, jit=False)
    k(tack.array(m, mt), *outs)
    a, b, c = (o.numpy().reshape(4, r, r) for o in outs)
    _same_bits(a, np.sqrt(np.abs(m)), "sqrt(abs(m))")
    _same_bits(b, np.clip(m, dt(-0.5), dt(0.5)), "clamp(m)")
    _same_bits(c, np.minimum(m, m.transpose(0, 2, 1)), "np.minimum(m, m.T)")


@tack.func
def _mm(a, b):
    return np.minimum(a, b), np.maximum(a, b)


@tack.kernel
def scalar_minmax(x, y, lo, hi, ilo):
    for i in range(x.shape[0]):
        lo[i], hi[i] = _mm(x[i], y[i])
        ilo[i] = np.minimum(int(i), 2)


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_np_minimum_and_maximum_of_scalars_propagate_nan(jit):
    x = np.array([1.0, np.nan, 3.0, 2.0, -0.0, np.inf], np.float32)
    y = np.array([2.0, 1.0, np.nan, 2.0, 0.0, -np.inf], np.float32)
    lo, hi, ilo = np.zeros(6, np.float32), np.zeros(6, np.float32), np.zeros(6, np.int64)
    k = scalar_minmax if jit else tack.kernel(scalar_minmax.__wrapped__, jit=False)
    k(x, y, lo, hi, ilo)
    assert np.isnan(lo[1]) and np.isnan(lo[2]) and np.isnan(hi[1]) and np.isnan(hi[2])  # min(...) would not
    np.testing.assert_array_equal(lo[[0, 3, 5]], np.minimum(x, y)[[0, 3, 5]])
    np.testing.assert_array_equal(hi[[0, 3, 5]], np.maximum(x, y)[[0, 3, 5]])
    np.testing.assert_array_equal(ilo, np.minimum(np.arange(6), 2))


def _math_sqrt(x, out):
    for i in range(x.shape[0]):
        out[i] = math.sqrt(x[i])


def _math_floor(x, out):
    for i in range(x.shape[0]):
        out[i] = math.floor(x[i])


def _math_erf(x, out):
    for i in range(x.shape[0]):
        out[i] = math.erf(x[i])


def _math_pow(x, out):
    for i in range(x.shape[0]):
        out[i] = math.pow(x[i], 2.0)


def _math_isnan(x, out):
    for i in range(x.shape[0]):
        out[i] = math.isnan(x[i])


def _builtin_min(x, out):
    for i in range(x.shape[0]):
        out[i] = min(x[i], x[i])


def _builtin_max(x, out):
    for i in range(x.shape[0]):
        out[i] = max(x[i], 0.0)


def _isnan(x, out):
    for i in range(x.shape[0]):
        out[i] = tack.isnan(x[i])


def _shapes(x, out):
    for i in range(x.shape[0]):
        out[i] = tack.lerp(x[i], tack.vec2(0.0, 1.0), 0.5)


REFUSED = [
    (_math_sqrt, "math.sqrt() takes scalars, not vec3 (Python's math module raises TypeError for an array); use "
                 "tack.sqrt() (or its NumPy spelling) for it element-wise"),
    (_math_erf, "math.erf() takes scalars, not vec3 (Python's math module raises TypeError for an array); Tack "
                "has no element-wise erf: apply it to each component"),
    (_math_pow, "math.pow() takes scalars, not vec3 (Python's math module raises TypeError for an array); use "
                "pow(v, w) for it element-wise"),
    (_math_isnan, "isnan() of vec3: Tack has no vector of bools"),
    (_math_floor, "math.floor() takes scalars, not vec3"),
    (_builtin_min, "min() takes scalars, not vec3 and vec3 (Python's min() raises TypeError for arrays); use "
                   "np.minimum(a, b) for the element-wise minimum"),
    (_builtin_max, "use np.maximum(a, b) for the element-wise maximum"),
    (_isnan, "isnan() of vec3: Tack has no vector of bools"),
    (_shapes, "lerp() of vec3 and vec2: element-wise, the shapes must match"),
]


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
@pytest.mark.parametrize("fn, message", REFUSED, ids=[f.__name__.strip("_") for f, _ in REFUSED])
def test_refusals(fn, message, jit):
    x = tack.array(np.ones((2, 3), np.float32), tack.vec3)
    with pytest.raises(tack.CompileError, match=r"line \d+") as e:
        tack.kernel(fn, jit=jit)(x, tack.zeros(2, tack.vec3))
    assert message in str(e.value)


def _complex_bound(x, out):
    for i in range(x.shape[0]):
        out[i] = tack.clamp(x[i], 0.0, 1j)


def _matrix_and_vector(x, out):
    for i in range(x.shape[0]):
        out[i] = np.minimum(x[i], tack.mat33(1.0))


@pytest.mark.parametrize("fn, message", [
    (_complex_bound, "clamp() of vec3 and complex (Python): element-wise, the other arguments must be real scalars"),
    (_matrix_and_vector, "numpy.minimum() of vec3 and mat33: element-wise, the shapes must match")])
def test_arguments_of_another_kind_are_refused(fn, message):
    with pytest.raises(tack.CompileError) as e:
        tack.kernel(fn)(tack.array(np.ones((2, 3), np.float32), tack.vec3), tack.zeros(2, tack.vec3))
    assert message in str(e.value)


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pocl-opencl-icd)")
def test_one_kernel_on_opencl():
    dev = OPENCL[0]
    x, y = _inputs(3, np.float32, 4), _inputs(3, np.float32, 5)
    t = np.abs(_inputs(3, np.float32, 6))
    out = tack.zeros((len(BINARY), N), tack.vec3, device=dev)
    binary_vec(*[tack.array(a, tack.vec3, device=dev) for a in (x, y, t)], out)
    want = tack.zeros((len(BINARY), N), tack.vec3)
    binary_vec(*[tack.array(a, tack.vec3) for a in (x, y, t)], want)
    got, want = out.numpy().reshape(-1, N, 3), want.numpy().reshape(-1, N, 3)
    for f, name in enumerate(BINARY):
        if name in BINARY_EXACT:
            nan = np.isnan(want[f])  # a NaN's sign and payload are the device's (fmod(0, 0))
            assert (np.isnan(got[f]) == nan).all(), name
            _same_bits(got[f][~nan], want[f][~nan], f"{name} on OpenCL vs the CPU")
        else:
            np.testing.assert_allclose(got[f], want[f], rtol=1e-5, atol=1e-6, err_msg=name)


def _grad_kernel(x, t, out):
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = (tack.sqrt(abs(v) + 1.0) + tack.clamp(v, -0.5, 0.5) * 2.0 + tack.lerp(v, v * v, t[i])
                  + np.exp(v * 0.5) + np.minimum(v, 0.25) + tack.sin(v) * tack.atan2(v, 1.5))


def test_gradients_against_finite_differences_and_debug_mode():
    k = tack.kernel(_grad_kernel)
    rng = np.random.default_rng(7)
    X, T = rng.standard_normal((4, 3)), rng.uniform(0.1, 0.9, 4)
    X[np.abs(np.abs(X) - 0.5) < 0.05] += 0.2  # away from clamp's and minimum's kinks
    X[np.abs(X - 0.25) < 0.05] += 0.2
    seed = rng.standard_normal((4, 3))

    def adjoint(kern):
        gx, gt = tack.zeros(4, tack.vec3d), np.zeros(4)
        kern.adjoint(tack.array(X, tack.vec3d), T, tack.zeros(4, tack.vec3d),
                     grads={"x": gx, "t": gt, "out": tack.array(seed, tack.vec3d)})
        return gx.numpy().reshape(4, 3), gt

    def loss(X, T):
        out = tack.zeros(4, tack.vec3d)
        k(tack.array(X, tack.vec3d), T, out)
        return float((out.numpy().reshape(4, 3) * seed).sum())

    gx, gt = adjoint(k)
    h = 1e-6
    fx = np.zeros_like(X)
    for idx in np.ndindex(X.shape):
        p, m = X.copy(), X.copy()
        p[idx] += h
        m[idx] -= h
        fx[idx] = (loss(p, T) - loss(m, T)) / (2 * h)
    ft = np.array([(loss(X, T + h * (np.arange(4) == j)) - loss(X, T - h * (np.arange(4) == j))) / (2 * h)
                   for j in range(4)])
    assert np.abs(gx).min() > 0 and np.abs(gt).min() > 0  # no silently zero gradient
    np.testing.assert_allclose(gx, fx, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gt, ft, rtol=1e-6, atol=1e-7)
    dx, dt_ = adjoint(tack.kernel(_grad_kernel, jit=False))
    np.testing.assert_allclose(dx, gx, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(dt_, gt, rtol=1e-12, atol=1e-14)
