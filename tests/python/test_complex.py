"""Complex numbers: the complex64 / complex128 dtypes, sharing them with NumPy,
DLPack and torch, NumPy 2's promotion, and the kernel language's complex
arithmetic and functions, each against NumPy's own results."""

import cmath
import re

import numpy as np
import pytest

import tack

CTYPES = [np.complex64, np.complex128]
PART = {np.complex64: np.float32, np.complex128: np.float64}


def cdata(dt, n=64, seed=0, special=True):
    """Random complex values of dtype dt, with zeros, infinities and NaNs mixed in."""
    rng = np.random.default_rng(seed)
    z = (rng.normal(size=n) * 3 + 1j * rng.normal(size=n) * 3).astype(dt)
    if special:
        sp = [0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e-30]
        for k in range(n // 4):
            z[k] = complex(sp[k % len(sp)], sp[(k * 3 + 1) % len(sp)])
    return z


def fma_numpy():
    """Whether NumPy's complex64 product fuses one multiply (its SIMD loops on
    FMA hardware), the rounding Tack always gives."""
    a = cdata(np.complex64, 4096, seed=7, special=False)
    b = cdata(np.complex64, 4096, seed=8, special=False)
    ar, ai = a.real.astype(np.float64), a.imag.astype(np.float64)
    fused = (ar * b.real.astype(np.float64) - (a.imag * b.imag).astype(np.float64)).astype(np.float32)
    return bool(np.array_equal((a * b).real, fused))


# ------------------------------------------------------------------ dtypes
def test_dtype_objects():
    assert tack.complex64.itemsize == 8 and tack.complex128.itemsize == 16
    assert tack.complex64.kind == "c" and tack.complex64.shape == ()
    assert tack.complex64.numpy == np.dtype(np.complex64)
    assert tack.complex128.numpy == np.dtype(np.complex128)
    assert tack.dtype(np.complex64) is tack.complex64
    assert tack.dtype("complex128") is tack.complex128
    assert tack.dtype(np.dtype("c16")) is tack.complex128
    assert tack.complex64(1 + 2j) == np.complex64(1 + 2j)


@pytest.mark.parametrize("dt", CTYPES)
def test_numpy_round_trip(dt):
    z = cdata(dt)
    t = tack.asarray(z)
    assert t.dtype is tack.dtype(dt)
    back = np.asarray(t)
    assert back.dtype == dt and np.array_equal(back, z, equal_nan=True)
    assert memoryview(back).format in ("Zf", "Zd")
    # a tack array built from the buffer protocol ('Zf' / 'Zd') shares the memory
    m = memoryview(z)
    assert m.format == ("Zf" if dt == np.complex64 else "Zd")
    t2 = tack.asarray(m)
    assert t2.dtype is tack.dtype(dt)
    assert np.array_equal(np.asarray(t2), z, equal_nan=True)


@pytest.mark.parametrize("dt", CTYPES)
def test_dlpack_round_trip(dt):
    z = cdata(dt)
    t = tack.from_dlpack(z)
    assert t.dtype is tack.dtype(dt)
    back = np.from_dlpack(t)
    assert back.dtype == dt and np.array_equal(back, z, equal_nan=True)


@pytest.mark.parametrize("dt", CTYPES)
def test_torch_complex(dt):
    torch = pytest.importorskip("torch")
    tt = {np.complex64: torch.complex64, np.complex128: torch.complex128}[dt]
    x = torch.arange(6, dtype=torch.float64).to(tt) * (1 + 2j)
    t = tack.from_dlpack(x)
    assert t.dtype is tack.dtype(dt)
    assert np.array_equal(np.asarray(t), x.numpy())
    y = torch.from_dlpack(t)
    assert y.dtype == tt and torch.equal(y, x)


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_dlpack_bad_complex_width():
    # complex32 has no Tack dtype: torch's chalf, when torch has it
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "complex32"):
        pytest.skip("no complex32 in this torch")
    x = torch.zeros(2, dtype=torch.complex32)
    with pytest.raises((TypeError, BufferError), match="complex"):
        tack.from_dlpack(x)


# --------------------------------------------------------------- promotion
@tack.kernel
def add_arrays(a, b, out):
    out[0] = a[0] + b[0]


@tack.kernel
def add_literal(a, out):
    out[0] = a[0] + 1j


@tack.kernel
def add_float_literal(a, out):
    out[0] = a[0] + 1.5


def result_type(ir):
    m = re.search(r"\(add:(\w+)", ir)
    assert m, ir
    return m.group(1)


NAMES = {np.dtype(t): tack.dtype(t).name for t in
         [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
          np.float16, np.float32, np.float64, np.complex64, np.complex128]}


@pytest.mark.parametrize("other", [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                   np.uint32, np.uint64, np.float16, np.float32, np.float64, np.complex64,
                                   np.complex128])
@pytest.mark.parametrize("dt", CTYPES)
def test_promotion_matches_numpy(dt, other):
    want = np.result_type(dt, other)
    ir = add_arrays.ir(np.zeros(1, dt), np.zeros(1, other), np.zeros(1, want))
    assert result_type(ir) == NAMES[want]
    ir = add_arrays.ir(np.zeros(1, other), np.zeros(1, dt), np.zeros(1, want))
    assert result_type(ir) == NAMES[want]


@pytest.mark.parametrize("other", [np.bool_, np.int8, np.int32, np.int64, np.uint16, np.float16, np.float32,
                                   np.float64, np.complex64, np.complex128])
def test_python_complex_is_weak(other):
    want = np.result_type(other, 1j)  # NEP 50: the Python complex takes the array's precision
    if np.dtype(other).kind in "biu":  # meeting an integer: the default complex, as a float gets the default float
        want = np.dtype(np.complex64)
    ir = add_literal.ir(np.zeros(1, other), np.zeros(1, np.complex128))
    assert result_type(ir) == NAMES[want]


def test_python_float_meets_complex64():
    ir = add_float_literal.ir(np.zeros(1, np.complex64), np.zeros(1, np.complex64))
    assert result_type(ir) == "complex64" == NAMES[np.result_type(np.complex64, 1.5)]


def weak_abs(z, out):
    for i in range(out.shape[0]):
        w = complex(0.1, 0.2) * (i + 1)   # a weak complex local
        out[i] = abs(w) + abs(z) * i      # abs of weak complexes meeting f32


def weak_escape(out):
    for i in range(out.shape[0]):
        w = 0j
        c = complex(-0.8, 0.156) + 0.01 * i
        n = 0
        while n < 30:                       # a Julia set's escape loop, as a Taichi user writes it
            w = w * w + c
            if abs(w) > 2.0:
                break
            n += 1
        out[i] = n


def weak_abs_local(z, out):
    for i in range(out.shape[0]):
        w = complex(0.3, -0.7) * (i + 1) + z
        r = abs(w)                           # a weak float local that meets f32 only
        out[i, 0] = max(r, 1.0)
        out[i, 1] = max(abs(w), 1.0)         # max() holds abs() in a temporary: the same
        out[i, 2] = r * 0.5


@pytest.mark.parametrize("jit", [True, False])
def test_abs_of_python_complex_in_a_local_meets_f32(jit):
    """The same when abs() of a Python complex is held in a local (or max()'s
    temporary) that only meets f32: the local became f32 and the f32
    conversion went into abs()'s complex operand (weak_locals.c), a build
    that failed to load (undefined symbol tk_float_of_tk_c128)."""
    out = np.zeros((4, 3), np.float32)
    tack.kernel(weak_abs_local, jit=jit)(0.1 + 0.2j, out)
    r = [np.float32(abs(complex(0.3, -0.7) * (i + 1) + (0.1 + 0.2j))) for i in range(4)]
    want = [[max(x, np.float32(1)), max(x, np.float32(1)), x * np.float32(0.5)] for x in r]
    np.testing.assert_array_equal(out, np.array(want, np.float32))


@pytest.mark.parametrize("jit", [True, False])
def test_abs_of_python_complex_meets_f32(jit):
    """abs() of a Python complex (weak) meeting f32 is computed in the
    complex's carrier, complex128, and rounded once, as Python's abs() and
    debug mode compute it.  The compiled kernel once pushed the f32
    conversion into abs()'s operand, a complex-to-f32 conversion no prelude
    defines: the build failed to load (undefined symbol tk_float_of_tk_c128)."""
    out = np.zeros(4, np.float32)
    tack.kernel(weak_abs, jit=jit)(3 + 4j, out)
    want = [np.float32(abs((0.1 + 0.2j) * (i + 1))) + np.float32(5 * i) for i in range(4)]
    np.testing.assert_array_equal(out, np.array(want, np.float32))
    n = np.zeros(8, np.int32)
    tack.kernel(weak_escape, jit=jit)(n)
    want = []
    for i in range(8):
        w, c, k = 0j, complex(-0.8, 0.156) + 0.01 * i, 0
        while k < 30:
            w = w * w + c
            if abs(w) > 2.0:
                break
            k += 1
        want.append(k)
    assert n.tolist() == want


def weak_complex_parts(z, x, a, out, outc):
    for i in range(out.shape[0]):
        w = complex(0.3, -0.7) * (i + 1) + z     # a Python complex known at run time
        out[i, 0] = abs(w * w) - abs(z)
        out[i, 1] = np.abs(w) + tack.f32(1.0)
        out[i, 2] = abs(w) * 0.3 + 0.1
        out[i, 3] = w.real * 0.3 + w.imag
        out[i, 4] = np.real(w) * 0.3 - np.imag(w)
        out[i, 5] = np.abs(w) * x[i]
        out[i, 6] = cmath.phase(w) * 0.3 + 0.1
        out[i, 7] = cmath.phase(w) * x[i]
        outc[i, 0] = np.sqrt(w) * a[i]
        outc[i, 1] = np.conj(w) * a[i]
        outc[i, 2] = cmath.sqrt(w) * a[i]


def test_debug_mode_types_what_a_python_complex_gives_as_compiled():
    """A real value made of a Python complex (abs, np.abs, .real, .imag,
    np.real, np.imag) is a weak float known at run time, computed on in f32
    where it meets f32, and np.sqrt or np.conj of one a Python complex: so
    the compiler types them.  Debug mode took the first for exact Python
    floats (computed in f64, rounded once) and the second for NumPy's
    concrete complex128, and its results differed from the compiled
    kernel's in the last bit.  cmath.phase of a Python complex is such a
    weak float too; the compiler made it a concrete f64, so that
    phase(w) * x[i] with f32 x was computed in f64, unlike NumPy and
    debug mode."""
    x = np.array([0.37, 1.3, 2.9, 0.11, 7.7, 0.01], np.float32)
    a = (x + 1j * np.array([0.7, -0.3, 0.19, 2.3, -1.1, 5.5])).astype(np.complex64)
    got = []
    for jit in (True, False):
        out, outc = np.zeros((6, 8), np.float32), np.zeros((6, 3), np.complex64)
        tack.kernel(weak_complex_parts, jit=jit)(0.1 + 0.2j, x, a, out, outc)
        got.append((out, outc))
    np.testing.assert_array_equal(got[0][0], got[1][0])
    np.testing.assert_array_equal(got[0][1], got[1][1])
    w = [complex(0.3, -0.7) * (i + 1) + (0.1 + 0.2j) for i in range(6)]
    f = np.float32
    want = [f(f(abs(v)) * f(0.3)) + f(0.1) for v in w]   # the f32 rule, as compiled
    np.testing.assert_array_equal(got[0][0][:, 2], np.array(want, np.float32))
    want = [f(cmath.phase(v)) * x[i] for i, v in enumerate(w)]   # NumPy's: a Python float meeting f32
    np.testing.assert_array_equal(got[0][0][:, 7], np.array(want, np.float32))


# ------------------------------------------------------------- arithmetic
@tack.kernel
def arith(a, b, out):
    for i in range(a.shape[0]):
        z = a[i]
        w = b[i]
        out[i, 0] = z + w
        out[i, 1] = z - w
        out[i, 2] = z * w
        out[i, 3] = z / w
        out[i, 4] = -z
        out[i, 5] = z.conjugate()
        out[i, 6] = np.conj(w)


@pytest.mark.parametrize("dt", CTYPES)
def test_arithmetic_matches_numpy(dt):
    a, b = cdata(dt, seed=1), cdata(dt, seed=2)
    b[-1] = 0  # division by zero: NumPy's complex inf / nan
    out = np.zeros((a.size, 7), dt)
    with np.errstate(all="ignore"):
        arith(a, b, out)
        want = [a + b, a - b, a * b, a / b, -a, np.conj(a), np.conjugate(b)]
    for k, w in enumerate(want):
        if k == 2 and not fma_numpy():  # this NumPy multiplies without a fused multiply-add
            np.testing.assert_allclose(out[:, k], w, rtol=4 * np.finfo(PART[dt]).eps)
            continue
        np.testing.assert_array_equal(out[:, k], w, err_msg=f"column {k}")


@tack.kernel
def parts(a, re, im, ab, npre, npim, npab):
    for i in range(a.shape[0]):
        re[i] = a[i].real
        im[i] = a[i].imag
        ab[i] = abs(a[i])
        npre[i] = np.real(a[i])
        npim[i] = np.imag(a[i])
        npab[i] = np.abs(a[i])


@pytest.mark.parametrize("dt", CTYPES)
def test_parts_and_abs(dt):
    a = cdata(dt, seed=3)
    p = PART[dt]
    outs = [np.zeros(a.size, p) for _ in range(6)]
    parts(a, *outs)
    np.testing.assert_array_equal(outs[0], a.real)
    np.testing.assert_array_equal(outs[1], a.imag)
    np.testing.assert_array_equal(outs[3], a.real)
    np.testing.assert_array_equal(outs[4], a.imag)
    # NumPy's abs: the larger part times sqrt(1 + ratio**2) with a fused multiply-add
    np.testing.assert_allclose(outs[2], np.abs(a), rtol=2 * np.finfo(p).eps)
    np.testing.assert_array_equal(outs[2], outs[5])
    if dt == np.complex64 and fma_numpy():
        np.testing.assert_array_equal(outs[2], np.abs(a))


@tack.kernel
def compare(a, b, eq, ne):
    for i in range(a.shape[0]):
        eq[i] = a[i] == b[i]
        ne[i] = a[i] != b[i]


@pytest.mark.parametrize("dt", CTYPES)
def test_equality(dt):
    a, b = cdata(dt, seed=4), cdata(dt, seed=4)
    b[::3] += 1j
    eq, ne = np.zeros(a.size, bool), np.zeros(a.size, bool)
    compare(a, b, eq, ne)
    np.testing.assert_array_equal(eq, a == b)
    np.testing.assert_array_equal(ne, a != b)


@tack.kernel
def functions(a, e, s, lg, ce, cs, cl):
    for i in range(a.shape[0]):
        e[i] = np.exp(a[i])
        s[i] = np.sqrt(a[i])
        lg[i] = np.log(a[i])
        ce[i] = cmath.exp(a[i])
        cs[i] = cmath.sqrt(a[i])
        cl[i] = cmath.log(a[i])


@pytest.mark.parametrize("dt", CTYPES)
def test_exp_sqrt_log(dt):
    a = cdata(dt, seed=5, special=False)
    a[0] = 0
    a[1] = -4
    a[2] = 1j
    outs = [np.zeros_like(a) for _ in range(6)]
    functions(a, *outs)
    eps = np.finfo(PART[dt]).eps
    with np.errstate(all="ignore"):
        for got, want in zip(outs, [np.exp(a), np.sqrt(a), np.log(a)] * 2):
            np.testing.assert_allclose(got[1:], want[1:], rtol=8 * eps, atol=8 * eps)
    np.testing.assert_array_equal(outs[1][:3], np.sqrt(a[:3]))  # zeros, negative reals, the axis
    assert outs[0][0] == 1 and outs[2][0].real == -np.inf


@tack.kernel
def sqrt_special(a, out):
    for i in range(a.shape[0]):
        out[i] = np.sqrt(a[i])


def test_sqrt_special_values():
    a = np.array([complex(np.inf, 1), complex(-np.inf, 1), complex(1, np.inf), complex(np.nan, np.inf),
                  complex(-0.0, 0.0), complex(0.0, -0.0)], np.complex128)
    out = np.zeros_like(a)
    sqrt_special(a, out)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out, np.sqrt(a))
    assert np.signbit(out[5].imag) == np.signbit(np.sqrt(a[5]).imag)


# --------------------------------------------------- literals and constructors
J = 0.5 - 2j


@tack.kernel
def literals(x, out):
    out[0] = 2 + 3j
    out[1] = complex(x[0], 2.0)
    out[2] = (0 + 1j) * (0 + 1j)
    out[3] = J * x[0]
    out[4] = complex(x[0])
    out[5] = np.complex64(1.5 - 1j) + x[0]
    z = 1j
    z += x[0]
    out[6] = z
    out[7] = complex(1.0, 2.0).conjugate()


@pytest.mark.parametrize("dt", CTYPES)
def test_literals(dt):
    out = np.zeros(8, dt)
    x = np.array([3.0], PART[dt])
    literals(x, out)
    xv = x[0]
    want = np.array([2 + 3j, complex(xv, 2), -1, J * xv, xv, np.complex64(1.5 - 1j) + xv, 1j + xv, 1 - 2j], dt)
    np.testing.assert_array_equal(out, want)
    assert out[2] == -1 + 0j  # not vec2d's componentwise [0, 1]


@tack.kernel
def casts(a, b64, b128, t):
    for i in range(a.shape[0]):
        b64[i] = np.complex64(a[i])
        b128[i] = tack.complex128(a[i])
        t[i] = bool(a[i])


def test_casts_and_truth():
    a = cdata(np.complex128, seed=6)
    b64, b128, t = np.zeros(a.size, np.complex64), np.zeros(a.size, np.complex128), np.zeros(a.size, bool)
    casts(a, b64, b128, t)
    np.testing.assert_array_equal(b64, a.astype(np.complex64))
    np.testing.assert_array_equal(b128, a)
    np.testing.assert_array_equal(t, a.astype(bool))


@tack.func
def rotate(z, k):
    return z * cmath.exp(complex(0.0, k))


@tack.kernel
def via_func(a, out):
    for i in range(a.shape[0]):
        out[i] = rotate(a[i], 0.5)


def test_complex_through_func():
    a = cdata(np.complex128, seed=9, special=False)
    out = np.zeros_like(a)
    via_func(a, out)
    np.testing.assert_allclose(out, a * np.exp(0.5j), rtol=1e-14)


# ---------------------------------------------------------------- atomics
@tack.kernel
def accumulate(a, acc):
    for i in range(a.shape[0]):
        acc[i % 3] += a[i]


@tack.kernel
def accumulate_serial(a, acc):
    for i in range(a.shape[0]):
        acc[i % 3] += a[i]


@pytest.mark.parametrize("dt", CTYPES)
def test_parallel_add_into_cells(dt):
    a = (np.arange(3000) % 7 + 1j * (np.arange(3000) % 5)).astype(dt)  # small integers: sums are exact
    acc = np.zeros(3, dt)
    accumulate(a, acc)
    want = np.array([a[k::3].sum() for k in range(3)], dt)
    np.testing.assert_array_equal(acc, want)


@tack.kernel
def parallel_add(a, acc):
    for i in tack.ndrange(a.shape[0]):
        acc[i % 3] += a[i]
        acc[3] -= a[i]


@pytest.mark.parametrize("dt", CTYPES)
def test_parallel_loop_atomic_add(dt):
    a = (np.arange(5000) % 7 + 1j * (np.arange(5000) % 5)).astype(dt)
    acc = np.zeros(4, dt)
    parallel_add(a, acc)
    want = np.array([a[k::3].sum() for k in range(3)] + [-a.sum()], dt)
    np.testing.assert_array_equal(acc, want)


# ------------------------------------------------------------- bad inputs
def compile_error(fn, *args, match):
    with pytest.raises(tack.CompileError, match=match):
        fn(*args)


@tack.kernel
def order(a, out):
    out[0] = a[0] < a[1]


@tack.kernel
def to_float(a, out):
    out[0] = float(a[0])


@tack.kernel
def implicit_real(a, out):
    out[0] = a[0]


@tack.kernel
def with_vec(a, out):
    v = tack.vec2(1.0, 2.0)
    out[0] = (a[0] * v).x


@tack.kernel
def floor_div(a, out):
    out[0] = a[0] // a[1]


@tack.kernel
def math_sqrt(a, out):
    out[0] = tack.sqrt(a[0])


@tack.kernel
def cmath_other(a, out):
    out[0] = cmath.sin(a[0])


@tack.kernel
def complex_min(a, out):
    out[0] = min(a[0], a[1])


@tack.kernel
def complex_or(a, out):
    out[0] = a[0] or a[1]


def test_bad_inputs():
    z = np.ones(2, np.complex64)
    compile_error(order, z, np.zeros(1, bool), match="'<' is not supported .*no order")
    compile_error(to_float, z, np.zeros(1, np.float32), match="float.*complex")
    compile_error(implicit_real, z, np.zeros(1, np.float32), match="cannot convert complex64 to f32")
    compile_error(with_vec, z, np.zeros(1, np.float32), match=r"\*: complex64 and vec2")
    compile_error(floor_div, z, z, match="//")
    compile_error(math_sqrt, z, z, match="cmath.sqrt or np.sqrt")
    compile_error(cmath_other, z, z, match="cmath.sin is not supported")
    compile_error(complex_min, z, z, match="no order")
    compile_error(complex_or, z, z, match="and/or of complex")


@tack.kernel
def scalar_arg(z, out):
    out[0] = z


@tack.kernel
def axpz(a, z, out):
    for i in tack.ndrange(a.shape[0]):
        out[i] = a[i] * z + z


@tack.kernel
def add_scalar(a, z, out):
    out[0] = a[0] + z


@pytest.mark.parametrize("z", [np.complex64(1.5 - 2j), 0.1 + 0.2j, np.complex128(0.1 - 3j), 1j,
                               complex(-0.0, -1.0), complex(np.inf, np.nan)])
def test_complex_scalar_argument(z):
    out = np.zeros(1, np.result_type(z))
    scalar_arg(z, out)
    assert out[0] == np.result_type(z).type(z) or (np.isnan(out[0].imag) and np.isinf(out[0].real))
    assert np.array_equal(np.signbit([out[0].real, out[0].imag]), np.signbit([z.real, z.imag]))


@pytest.mark.parametrize("dt", CTYPES + [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("z", [0.1 + 0.2j, np.complex64(0.1 + 0.2j), np.complex128(0.1 + 0.2j)])
def test_complex_scalar_promotion_and_values(dt, z):
    """A Python complex is weak (complex64 with f32 and complex64 arrays), a
    NumPy complex scalar concrete; the values are NumPy's."""
    a = (np.arange(8) - 3).astype(dt)
    want_t = np.result_type(a, z)  # NEP 50
    zn = z
    if type(z) is complex and a.dtype.kind in "biu":  # the default complex, as a float gets the default float
        want_t, zn = np.dtype(np.complex64), np.complex64(z)
    out = np.zeros(1, want_t)
    assert result_type(add_scalar.ir(a, z, out)) == NAMES[want_t]
    add_scalar(a, z, out)
    ac = a.astype(want_t) if zn is not z else a  # the integers meet the default complex
    assert out[0] == (ac[:1] + zn)[0]
    out = np.zeros(8, want_t)
    axpz(a, z, out)  # small integers times z: exact in either rounding of the product
    np.testing.assert_array_equal(out, ac * zn + zn)


def test_complex_scalar_specializations():
    """The argument's type is part of the kernel's key: each call gets its own build."""
    out64, out128 = np.zeros(1, np.complex64), np.zeros(1, np.complex128)
    scalar_arg(0.1 + 0.2j, out128)
    scalar_arg(np.complex64(0.1 + 0.2j), out64)
    scalar_arg(np.complex128(0.1 + 0.2j), out128)
    assert out64[0] == np.complex64(0.1 + 0.2j) and out128[0] == 0.1 + 0.2j
    assert "complex64" in scalar_arg.ir(np.complex64(1j), out64)
    assert "complex64" not in scalar_arg.ir(1j, out128)


@tack.kernel
def annotated_scalar(z: tack.complex64, out):
    out[0] = z


@tack.kernel
def annotated_real(x: tack.f32, out):
    out[0] = x


def test_complex_scalar_annotated():
    out = np.zeros(1, np.complex128)
    annotated_scalar(0.1 + 0.2j, out)
    assert out[0] == np.complex64(0.1 + 0.2j)
    annotated_scalar(2.5, out)  # a real argument to a complex parameter
    assert out[0] == 2.5
    compile_error(annotated_real, 1 + 2j, np.zeros(1, np.float32), match="'x' is annotated f32 but the argument is a complex")
    compile_error(annotated_scalar, np.complex128(1j), out, match="'z' is annotated complex64 but the argument is complex128")


@tack.kernel
def exp_log(a, e, lg):
    for i in range(a.shape[0]):
        e[i] = np.exp(a[i])
        lg[i] = np.log(a[i])


@pytest.mark.parametrize("dt", CTYPES)
def test_exp_log_special_values(dt):
    inf, nan = np.inf, np.nan
    a = np.array([0, -0.0 + 0j, complex(inf, 0), complex(-inf, 1), complex(inf, 1), complex(nan, 0),
                  complex(-inf, 0), complex(1, -0.0), complex(inf, nan), complex(nan, inf), complex(-0.0, -0.0)], dt)
    e, lg = np.zeros_like(a), np.zeros_like(a)
    exp_log(a, e, lg)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(e, np.exp(a), rtol=4 * np.finfo(PART[dt]).eps, equal_nan=True)
        np.testing.assert_allclose(lg, np.log(a), rtol=4 * np.finfo(PART[dt]).eps, equal_nan=True)
        assert np.array_equal(np.signbit(e.imag), np.signbit(np.exp(a).imag))
        assert np.array_equal(np.signbit(lg.imag), np.signbit(np.log(a).imag))


@tack.func
def square_and_abs(z: tack.complex128):
    return z * z, abs(z)


@tack.kernel
def control_flow(a, out, m, flags):
    for i in tack.ndrange(a.shape[0]):
        acc: tack.complex128 = 0
        z = a[i]
        w = z if z.real > 0 else -z
        n = 0
        while n < 3:
            acc += w
            n += 1
        s, r = square_and_abs(acc)
        out[i] = s
        m[i] = r
        if z:
            flags[i] = 1
        else:
            flags[i] = 0


def test_locals_branches_loops_and_functions():
    a = np.array([1 + 1j, -2 + 0.5j, 0j], np.complex128)
    out, m, flags = np.zeros(3, np.complex128), np.zeros(3), np.zeros(3, np.int32)
    control_flow(a, out, m, flags)
    w = np.where(a.real > 0, a, -a) * 3
    np.testing.assert_array_equal(out, w * w)
    np.testing.assert_allclose(m, np.abs(w), rtol=1e-15)
    assert flags.tolist() == [1, 1, 0]


@tack.kernel
def narrow_then_widen(a, out):
    w: tack.complex64 = a[0]
    out[0] = w


def test_narrow_then_widen_rounds():
    """complex128 -> complex64 -> complex128 rounds each part to f32 (GCC 12's
    vectorizer dropped the pair of conversions before the prelude hid them)."""
    a = np.array([0.1 + 0.2j], np.complex128)
    out = np.zeros_like(a)
    narrow_then_widen(a, out)
    np.testing.assert_array_equal(out, a.astype(np.complex64).astype(np.complex128))


@tack.kernel
def print_each(a):
    for i in range(a.shape[0]):
        print(a[i])


@tack.kernel
def print_with_text(z, a):
    print("z =", z, "and", a[0] * 2, a[0].real)


PRINTED = [1 + 2j, 1j, -1j, complex(-0.0, -1.0), complex(0.0, -0.0), 0j, complex(-0.0, 0.0), 1.5 - 2.25j,
           1e20 + 1e-5j, complex(np.inf, np.nan), complex(-np.inf, -np.inf), complex(np.nan, 1),
           complex(0.1, 1 / 3), complex(0, np.inf), 123456789 - 1j, -2.5e-300 + 7j]


@pytest.mark.watched_differs("the watching plugins call the kernel again, and it prints again")
def test_print_complex128_as_python(capfd):
    print_each(np.array(PRINTED, np.complex128))
    out, _ = capfd.readouterr()
    assert out.splitlines() == [str(z) for z in PRINTED]


@pytest.mark.watched_differs("the watching plugins call the kernel again, and it prints again")
def test_print_complex64_as_numpy(capfd):
    vals = [z for z in PRINTED if abs(z.real) < 1e30 and abs(z.imag) < 1e30 or z != z or abs(z) == np.inf]
    a = np.array(vals, np.complex64)
    print_each(a)
    out, _ = capfd.readouterr()
    assert out.splitlines() == [str(z) for z in a]  # NumPy 2 writes each f32 part shortest, as Python a float


@pytest.mark.watched_differs("the watching plugins call the kernel again, and it prints again")
def test_print_complex_scalar_argument(capfd):
    print_with_text(0.5 - 1j, np.array([1 + 1j], np.complex64))
    out, _ = capfd.readouterr()
    assert out == "z = (0.5-1j) and (2+2j) 1.0\n"


# Values whose parts print the same through OpenCL's printf ("%.17g" of the
# part, which PoCL 3.1 also rounds to f32 first) and Python's repr
PRINTED_ON_OPENCL = [1 + 2j, 1j, -1j, complex(-0.0, -1.0), complex(0.0, -0.0), 0j, complex(-0.0, 0.0), 1.5 - 2.25j,
                     complex(np.inf, np.nan), complex(-np.inf, -np.inf), complex(np.nan, 1), complex(0, np.inf),
                     -0.125 + 7j, 1024 - 0.5j]


@pytest.mark.watched_differs("the watching plugins call the kernel again, and it prints again")
@pytest.mark.skipif(not any(d.startswith("opencl") for d in tack.devices()), reason="no OpenCL device")
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_print_complex_on_opencl(capfd, dtype):
    dev = next(d for d in tack.devices() if d.startswith("opencl"))
    a = np.array(PRINTED_ON_OPENCL, dtype)
    print_each(tack.array(a, device=dev))
    tack.synchronize(dev)
    out, _ = capfd.readouterr()
    assert out.splitlines() == [str(z) for z in a]


@tack.kernel
def divide_unvectorized(a, b, out):
    for i in range(1):
        j = 0
        while j < a.shape[0]:  # a while loop: never SIMD lanes
            out[j] = a[j] / b[j]
            j += 1


@pytest.mark.parametrize("dt", CTYPES)
@pytest.mark.parametrize("kernel", ["parallel", "serial"])
def test_division_is_numpys_in_every_loop(dt, kernel):
    """Smith's division gives NumPy's bits whether or not the loop is vectorized.

    Found when the unoptimized run took in the whole suite: GCC 12's SLP
    vectorizer fused the two lanes' products and sums into one vfmsubadd
    even under -ffp-contract=off, so a loop left scalar was one ulp from
    NumPy in 12 of these 64 quotients (1e30j / 1e30j gave 1 - 4.5e-77j);
    TK_ROUNDED (dialect_c.c) keeps the products apart."""
    a, b = cdata(dt, seed=1), cdata(dt, seed=2)
    b[-1] = 0
    out = np.zeros_like(a)
    with np.errstate(all="ignore"):
        if kernel == "serial":
            divide_unvectorized(a, b, out)
        else:
            col = np.zeros((a.size, 7), dt)
            arith(a, b, col)
            out = col[:, 3].copy()
        want = a / b
    np.testing.assert_array_equal(out, want)
