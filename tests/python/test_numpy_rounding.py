"""round, np.round (np.around), np.rint, np.square and np.power in kernels (docs/language.md, "Math";
decisions.md, 2026-12-06).

Each is checked against NumPy or Python bit for bit, on scalars of f32 and f64 and element-wise on vectors,
compiled and in debug mode: np.round(x, d) is NumPy's algorithm in x's type (rint of x scaled by 10**d),
round(x) Python's nearest int with halves to even (an int64), round(x, d) of a NumPy float NumPy's
__round__ (np.round), np.square x * x in x's type, np.power the language's ** -- with NumPy's refusal of
an integer to a negative integer power.  What Python raises, the kernel raises: round of a NaN is a
ValueError and of an infinity an OverflowError, in the same words in debug mode.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

import tack
from tack import _core

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _gpu_batch  # noqa: E402
import _msl  # noqa: E402

OPENCL = [d for d in tack.devices() if d.startswith("opencl")]
NVRTC = hasattr(_core, "_nvrtc_version") and _core._nvrtc_version() > 0
DIGITS = [-2, -1, 0, 1, 2, 3]


def _values(dt, n=400, seed=0):
    rng = np.random.default_rng(seed)
    halves = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 3.5, 0.25, 0.125, 1.25, 2.675, 1.005, -0.0, 0.0, 1e6 + 0.5,
                       12345.5, 0.05, 0.15, 0.45, 1.45, 2.55, 99.95, -99.95, 1234.5678, 555.0, 650.0, 750.0])
    x = np.concatenate([halves, rng.standard_normal(n) * 10.0 ** rng.integers(-3, 5, n),
                        rng.integers(-2000, 2000, n) / 20.0])
    return x.astype(dt)


def rounds(x, out, ints):
    for i in range(x.shape[0]):
        out[0, i] = np.round(x[i], -2)
        out[1, i] = np.round(x[i], -1)
        out[2, i] = np.round(x[i])
        out[3, i] = np.round(x[i], 1)
        out[4, i] = np.around(x[i], 2)
        out[5, i] = np.round(x[i], 3)
        out[6, i] = round(x[i], 2)
        out[7, i] = np.rint(x[i])
        out[8, i] = np.square(x[i])
        ints[i] = round(x[i])


def _rounds(x, jit):
    dt = x.dtype
    out, ints = np.zeros((9, len(x)), dt), np.zeros(len(x), np.int64)
    tack.kernel(rounds, jit=jit)(x, out, ints)
    return out, ints


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_scalars_are_numpys_and_pythons_bit_for_bit(dt, jit):
    x = _values(dt)
    out, ints = _rounds(x, jit)
    want = [np.round(x, d) for d in DIGITS] + [np.array([round(v, 2) for v in x]), np.rint(x), np.square(x)]
    for k, w in enumerate(want):
        assert out[k].dtype == w.dtype == dt
        assert out[k].tobytes() == w.tobytes(), (k, x[out[k] != w], out[k][out[k] != w], w[out[k] != w])
    assert ints.tolist() == [round(float(v)) for v in x]  # Python's round: halves to even
    assert ints[:5].tolist() == [0, 2, 2, 0, -2]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_special_values_compiled_and_debug_mode_alike(dt):
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 1e30, -1e30, np.finfo(dt).max], dt)
    out = np.zeros((9, len(x)), dt)
    fn = _no_round_int_kernel()
    tack.kernel(fn)(x, out)
    dbg = np.zeros_like(out)
    tack.kernel(fn, jit=False)(x, dbg)
    assert out.tobytes() == dbg.tobytes()
    with np.errstate(all="ignore"):
        want = [np.round(x, d) for d in DIGITS] + [np.round(x, 2), np.rint(x), np.square(x)]
    for k, w in enumerate(want):
        np.testing.assert_array_equal(out[k], w)  # NaN where NumPy's is NaN, the signs of zeros too
        assert np.signbit(out[k]).tolist() == np.signbit(w).tolist()


def _no_round_int_kernel():
    def float_rounds(x, out):
        for i in range(x.shape[0]):
            out[0, i] = np.round(x[i], -2)
            out[1, i] = np.round(x[i], -1)
            out[2, i] = np.round(x[i])
            out[3, i] = np.round(x[i], 1)
            out[4, i] = np.around(x[i], 2)
            out[5, i] = np.round(x[i], 3)
            out[6, i] = round(x[i], 2)
            out[7, i] = np.rint(x[i])
            out[8, i] = np.square(x[i])
    return float_rounds


def round_int(x, out):
    for i in range(x.shape[0]):
        out[i] = round(x[i]) + 2**40     # an int64: 2**40 + the int is exact


@pytest.mark.parametrize("value, error, message", [
    (np.nan, ValueError, "cannot convert float NaN to integer"),
    (np.inf, OverflowError, "round() of an infinity or of a float beyond int64's range"),
    (-np.inf, OverflowError, "round() of an infinity or of a float beyond int64's range"),
    (1e19, OverflowError, "round() of an infinity or of a float beyond int64's range"),
])
def test_round_raises_what_python_raises(value, error, message):
    got = []
    for jit in (True, False):
        with pytest.raises(error) as e:
            tack.kernel(round_int, jit=jit, checks=True)(np.array([1.5, value]), np.zeros(2, np.int64))
        got.append(str(e.value))
        assert message in got[-1] and "kernel round_int, " in got[-1]
    assert got[0] == got[1]
    if value != 1e19:  # Python's int holds 1e19; a kernel's int is an int64
        with pytest.raises(error):
            round(value)


def test_round_is_an_int64_and_unchecked_it_converts_as_int_does():
    x = np.array([2.5, -3.5, 1e18 + 0.0, -2.0**63])
    out = np.zeros(4, np.int64)
    tack.kernel(round_int)(x, out)
    assert out.tolist() == [round(v) + 2**40 for v in x[:3]] + [-2**63 + 2**40]
    y = np.array([np.nan, np.inf, 1e30])
    a, b = np.zeros(3, np.int64), np.zeros(3, np.int64)
    tack.kernel(round_int, checks=False)(y, a)
    tack.kernel(round_int, checks=False, jit=False)(y, b)
    assert a.tolist() == b.tolist()


def integers(a, b, out):
    for i in range(a.shape[0]):
        out[0, i] = np.square(a[i])
        out[1, i] = np.power(a[i], 3)
        out[2, i] = np.power(a[i], b[i])
        out[3, i] = a[i] ** b[i]
        out[4, i] = np.round(a[i])
        out[5, i] = round(a[i], 2)
        out[6, i] = round(a[i])


@pytest.mark.parametrize("jit", [True, False])
def test_integers_wrap_and_keep_their_type_as_numpy(jit):
    a = np.array([100, -7, 3, 0, -128, 11], np.int8)
    b = np.array([2, 3, 0, 5, 1, 4], np.int8)
    out = np.zeros((7, len(a)), np.int8)
    tack.kernel(integers, jit=jit)(a, b, out)
    with np.errstate(over="ignore"):
        assert out[0].tolist() == np.square(a).tolist()  # 100 * 100 wraps to 16, as NumPy's int8
        assert out[1].tolist() == np.power(a, 3).tolist()
        assert out[2].tolist() == out[3].tolist() == np.power(a, b).tolist()
    assert out[4].tolist() == out[5].tolist() == out[6].tolist() == a.tolist()


def negative_power(a, b, out):
    for i in range(a.shape[0]):
        out[i] = np.power(a[i], b[i])


def negative_literal(a, out):
    for i in range(a.shape[0]):
        out[i] = np.power(a[i], -1)


def float_base(a, out):
    for i in range(a.shape[0]):
        out[i] = np.power(2.0, -1) + np.power(a[i] * 1.0, -2) + 2 ** -1


@pytest.mark.parametrize("jit", [True, False])
def test_integers_to_negative_integer_powers_are_refused_as_numpy_refuses_them(jit):
    a = np.array([2, 3], np.int64)
    with pytest.raises(ValueError, match="integers to negative integer powers are not allowed"):
        tack.kernel(negative_power, jit=jit, checks=True)(a, np.array([1, -1]), np.zeros(2, np.int64))
    with pytest.raises(ValueError):
        np.power(a, np.array([1, -1]))
    with pytest.raises(tack.CompileError, match=r"np.power\(\) of integers to a negative integer power: NumPy "
                                                r"raises ValueError"):
        tack.kernel(negative_literal, jit=jit)(a, np.zeros(2))
    out = np.zeros(2)
    tack.kernel(float_base, jit=jit)(a, out)  # a float base: a float power, as in NumPy (2 ** -1 is Python's)
    np.testing.assert_allclose(out, [0.5 + 0.25 + 0.5, 0.5 + 1 / 9 + 0.5], rtol=1e-7)  # a[i] * 1.0: f32


def powers(x, y, out):
    for i in range(x.shape[0]):
        out[0, i] = np.power(x[i], y[i])
        out[1, i] = x[i] ** y[i]
        out[2, i] = np.power(x[i], 2)
        out[3, i] = x[i] ** 2
        out[4, i] = np.power(x[i], 0.5)
        out[5, i] = x[i] ** 0.5


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_np_power_is_the_languages_power(dt):
    rng = np.random.default_rng(2)
    x, y = np.abs(rng.standard_normal(300)).astype(dt) * 4, rng.standard_normal(300).astype(dt) * 3
    out, dbg = np.zeros((6, 300), dt), np.zeros((6, 300), dt)
    tack.kernel(powers)(x, y, out)
    tack.kernel(powers, jit=False)(x, y, dbg)
    for k in (0, 2, 4):
        assert out[k].tobytes() == out[k + 1].tobytes()  # np.power(x, y) and x ** y: one operation
    assert out[2].tobytes() == dbg[2].tobytes() == np.square(x).tobytes()
    tol = 4 * np.finfo(dt).eps  # pow: the documented 4 ulps (a SIMD lane's libmvec)
    np.testing.assert_allclose(out[0], np.power(x, y), rtol=tol)
    np.testing.assert_allclose(dbg[0], np.power(x, y), rtol=tol)
    np.testing.assert_allclose(out[4], np.sqrt(x), rtol=tol)


def bools(b, out):
    for i in range(b.shape[0]):
        out[0, i] = np.square(b[i])
        out[1, i] = np.round(b[i])


@pytest.mark.parametrize("jit", [True, False])
def test_bools_as_numpy(jit):
    b = np.array([True, False])
    out = np.zeros((2, 2), np.float32)
    tack.kernel(bools, jit=jit)(b, out)
    assert np.square(b).dtype == np.int8 and np.round(b).dtype == np.float16
    assert out.tolist() == [[1, 0], [1, 0]]


def vectors(v, w, out):
    for i in range(v.shape[0]):
        out[0, i] = np.square(v[i])
        out[1, i] = np.power(v[i], 2.0)
        out[2, i] = np.power(abs(v[i]), w[i])
        out[3, i] = np.round(v[i], 1)
        out[4, i] = np.round(v[i])
        out[5, i] = np.rint(v[i])
        out[6, i] = np.around(v[i], -1)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("dt, vt", [(np.float32, tack.vec3), (np.float64, tack.vec4d), (np.float32, tack.vec2)])
def test_vectors_element_wise_as_numpy(dt, vt, jit):
    n = vt.shape[0]
    x = _values(dt, 60)[: 60 - 60 % n].reshape(-1, n)
    y = (np.random.default_rng(5).standard_normal(x.shape) * 2).astype(dt)
    out = tack.zeros((7, len(x)), vt)
    tack.kernel(vectors, jit=jit)(tack.array(x, vt), tack.array(y, vt), out)
    got = out.numpy().reshape(7, len(x), n)
    assert got[0].tobytes() == np.square(x).tobytes()
    assert got[1].tobytes() == np.square(x).tobytes()
    with np.errstate(divide="ignore"):  # 0 ** -y: inf, in the kernel too
        np.testing.assert_allclose(got[2], np.power(np.abs(x), y), rtol=4 * np.finfo(dt).eps)
    for k, d in ((3, 1), (4, 0), (6, -1)):
        assert got[k].tobytes() == np.round(x, d).tobytes(), k
    assert got[5].tobytes() == np.rint(x).tobytes()


def matrices(m, out):
    for i in range(m.shape[0]):
        out[i] = np.square(m[i]) + np.round(m[i], 2)


@pytest.mark.parametrize("jit", [True, False])
def test_matrices_element_wise(jit):
    m = _values(np.float64, 36)[:36].reshape(4, 3, 3)
    out = tack.zeros(4, tack.mat33d)
    tack.kernel(matrices, jit=jit)(tack.array(m, tack.mat33d), out)
    assert out.numpy().tobytes() == (np.square(m) + np.round(m, 2)).tobytes()


def round_vector(v, out):
    for i in range(v.shape[0]):
        out[i] = round(v[i])


def digits_at_run_time(x, k, out):
    for i in range(x.shape[0]):
        out[i] = np.round(x[i], k)


def int_to_tens(a, out):
    for i in range(a.shape[0]):
        out[i] = round(a[i], -1)


def round_bool(b, out):
    for i in range(b.shape[0]):
        out[i] = round(b[i])


def square_of_two(x, out):
    for i in range(x.shape[0]):
        out[i] = np.square(x[i], x[i])


@pytest.mark.parametrize("jit", [True, False])
def test_refusals(jit):
    cases = [
        (round_vector, (tack.zeros(2, tack.vec3), tack.zeros(2, tack.vec3)),
         "round() of vec3: Python's round gives an int, and Tack has no vector of int64s; use np.rint(v)"),
        (digits_at_run_time, (np.zeros(2), 2, np.zeros(2)),
         "np.round(): the number of digits must be an integer constant"),
        (int_to_tens, (np.zeros(2, np.int32), np.zeros(2, np.int32)),
         "round() of an integer to -1 digits is not supported in kernels"),
        (round_bool, (np.zeros(2, bool), np.zeros(2)), "round() of bool: NumPy's bool has no __round__"),
        (square_of_two, (np.zeros(2), np.zeros(2)), "numpy.square() takes 1 argument (2 given)"),
    ]
    for fn, args, message in cases:
        with pytest.raises(tack.CompileError) as e:
            tack.kernel(fn, jit=jit)(*args)
        assert message in str(e.value), (fn.__name__, str(e.value))


def test_numpy_spellings_the_docs_list_are_accepted():
    # the CompileError for an unknown NumPy function lists the accepted ones; these are among them now
    def unknown(x, out):
        for i in range(x.shape[0]):
            out[i] = np.polyval(x, x[i])  # (np.cumsum has a message of its own: frontend_refuse.c)

    with pytest.raises(tack.CompileError) as e:
        tack.kernel(unknown)(np.zeros(2), np.zeros(2))
    for name in ("around", "power", "rint", "round", "square"):
        assert f" {name}," in str(e.value) or f" {name} (" in str(e.value), name


# ------------------------------------------------------------ devices and dialects
def device_kernel(x, e, out, ints):
    for i in range(x.shape[0]):
        out[0, i] = np.round(x[i], 2)
        out[1, i] = np.square(x[i]) + np.power(x[i], e[i])
        out[2, i] = np.round(x[i])
        ints[i] = round(x[i])


def _device_args(dt, device="cpu", n=256):
    x = _values(dt, n)[:n]
    e = np.arange(n) % 4
    return (tack.array(x, device=device), tack.array(e.astype(dt), device=device),
            tack.zeros((3, n), dt, device=device), tack.zeros(n, np.int64, device=device))


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pocl-opencl-icd)")
def test_one_kernel_on_opencl_gives_the_cpus_bits():
    k = tack.kernel(device_kernel)
    cpu, dev = _device_args(np.float32), _device_args(np.float32, OPENCL[0])
    k(*cpu)
    k(*dev)
    assert dev[3].numpy().tolist() == cpu[3].numpy().tolist()
    got, want = dev[2].numpy(), cpu[2].numpy()
    assert got[0].tobytes() == want[0].tobytes() and got[2].tobytes() == want[2].tobytes()
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)  # OpenCL's pow may differ by its ulps


def _source(target, dt):
    return tack.kernel(device_kernel).generated_source(*_device_args(dt, n=4), target=target)


@pytest.mark.skipif(not NVRTC, reason="NVRTC (libnvrtc) is not installed")
def test_cuda_source_compiles_with_nvrtc():
    src = _source("cuda", np.float64)
    assert "rint(" in src and ".entry" in _core._nvrtc_compile(src, "sm_80")


@pytest.mark.skipif(_core._hiprtc_version() <= 0, reason="hiprtc is not installed (Debian: libamdhip64-dev)")
def test_hip_source_compiles_with_hiprtc():
    # in a process of its own (comgr and PoCL share libLLVM), kept in the tests' output cache
    out = _gpu_batch.hiprtc_checked([_source("hip", np.float64)], "gfx90a")
    assert out == b"\x7fELF", out


@pytest.mark.skipif(_msl.clang() is None and not _msl.xcrun(), reason="clang++ is not installed (Debian: clang)")
def test_metal_source_type_checks():
    problems = _msl.check(_source("metal", np.float32))
    assert problems is None, problems


# ------------------------------------------------------------ gradients
def smooth(x, out):
    for i in range(x.shape[0]):
        out[i] = np.square(x[i]) + np.power(x[i], 3.0) + np.power(2.0, x[i]) + round(x[i]) * x[i] + np.round(x[i])


def test_gradients_against_finite_differences_and_debug_mode():
    rng = np.random.default_rng(9)
    x = rng.uniform(0.2, 3.0, 6)
    x[np.abs(x - np.round(x) - 0.5) < 0.05] += 0.1  # away from round's steps
    seed = rng.standard_normal(6)

    def adjoint(jit):
        g = np.zeros(6)
        tack.kernel(smooth, jit=jit).adjoint(x, np.zeros(6), grads={"x": g, "out": seed.copy()})
        return g

    want = seed * (2 * x + 3 * x**2 + np.log(2.0) * 2.0**x + np.round(x))
    np.testing.assert_allclose(adjoint(True), want, rtol=1e-12)
    np.testing.assert_allclose(adjoint(False), want, rtol=1e-12)


def vector_smooth(v, out):
    for i in range(v.shape[0]):
        out[i] = np.square(v[i]) + np.power(v[i], 3.0) + np.round(v[i]) * v[i]


def test_vector_gradients_component_by_component():
    rng = np.random.default_rng(11)
    V = rng.uniform(0.2, 2.0, (3, 3))
    V[np.abs(V - np.round(V) - 0.5) < 0.05] += 0.1
    seed = rng.standard_normal((3, 3))
    for jit in (True, False):
        g = tack.zeros(3, tack.vec3d)
        tack.kernel(vector_smooth, jit=jit).adjoint(tack.array(V, tack.vec3d), tack.zeros(3, tack.vec3d),
                                                    grads={"v": g, "out": tack.array(seed, tack.vec3d)})
        np.testing.assert_allclose(g.numpy().reshape(3, 3), seed * (2 * V + 3 * V**2 + np.round(V)), rtol=1e-12)


def rounded_to_digits(x, out):
    for i in range(x.shape[0]):
        out[i] = np.round(x[i], 2)


@pytest.mark.parametrize("jit", [True, False])
def test_what_is_not_differentiated_is_a_clear_error(jit):
    with pytest.raises(tack.CompileError, match=r"round\(\) with 2 arguments is not differentiated"):
        tack.kernel(rounded_to_digits, jit=jit).adjoint(np.zeros(2), np.zeros(2),
                                                        grads={"x": np.zeros(2), "out": np.ones(2)})


def python_scalars(out, f, k):
    for j in range(out.shape[0]):
        out[j, 0] = round(f)
        out[j, 1] = np.round(f, 1)
        out[j, 2] = np.round(2.675, 2)
        out[j, 3] = round(2.5) + round(k)
        out[j, 4] = np.square(f) + np.square(k) + np.power(k, 2)
        out[j, 5] = round(f, 2) + np.round(j * 0.25, 1)


@pytest.mark.parametrize("df", [tack.f32, tack.f64])
def test_python_numbers_take_the_default_float_compiled_and_in_debug_mode(df):
    got = []
    for jit in (True, False):
        out = np.zeros((4, 6))
        tack.kernel(python_scalars, jit=jit, default_float=df)(out, 1.35, 3)
        got.append(out)
    assert got[0].tobytes() == got[1].tobytes()
    t = np.dtype(df.numpy).type
    assert got[0][0, 0] == 1 and got[0][0, 3] == 2 + 3 and got[0][0, 4] == t(1.35) * t(1.35) + 9 + 9
    assert got[0][0, 1] == np.round(t(1.35), 1) and got[0][0, 2] == np.round(t(2.675), 2)  # NumPy's, in the type
    assert [got[0][j, 5] for j in range(4)] == [np.round(t(1.35), 2) + np.round(t(j * 0.25), 1) for j in range(4)]
