"""NumPy's spellings in kernels: np.sqrt & co are the math intrinsics, with
NumPy's result types for integer arguments; np.float32(x), np.int64(x), ...
are casts; np.pi and np.e are constants.  Resolved by identity of the
object, so any import spelling works.  Each result is compared with what
NumPy itself computes, element by element."""

import math
import os

import numpy
import numpy as np
import pytest
from numpy import arctan2 as my_atan2
from numpy import sqrt

import tack

UNARY = ["sqrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "arcsin", "arccos", "arctan",
         "sinh", "cosh", "tanh", "floor", "ceil", "trunc", "fabs", "absolute", "isnan", "isinf", "isfinite"]
BINARY = ["arctan2", "hypot", "copysign", "fmod"]


def make_unary(name):
    fn = getattr(np, name)

    @tack.kernel
    def k(x, out):
        for i in range(x.shape[0]):
            out[i] = fn(x[i])
    return k


def close(got, want, dt):
    want = np.asarray(want)
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-6 if dt == np.float32 else 1e-12,
                                   atol=1e-30, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


FLOATS = np.array([0.25, 0.5, 0.9, -0.3, 2.0, -7.5, 0.0, np.inf, -np.inf, np.nan])


def make_functions(tmp_path, kernel, names, operands="x[i]", inputs="x"):
    """A kernel named `kernel` computing each of names' NumPy functions of the operands into its
    own output, in turn."""
    import importlib.util

    outs = ", ".join(f"o{j}" for j in range(len(names)))
    body = "".join(f"        o{j}[i] = np.{name}({operands})\n" for j, name in enumerate(names))
    path = tmp_path / f"{kernel}.py"
    path.write_text(f"import numpy as np\nimport tack\n\n\n@tack.kernel\ndef {kernel}({inputs}, {outs}):\n"
                    f"    for i in range(x.shape[0]):\n{body}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, kernel)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_unary_on_floats_matches_numpy(tmp_path, dt):
    """Every function of UNARY on each value of FLOATS, in one kernel for dt (one build instead of
    one a function: the language suite's runs compile every build again for each target)."""
    x = FLOATS.astype(dt)
    with np.errstate(all="ignore"):
        wants = [getattr(np, name)(x) for name in UNARY]
    outs = [np.zeros(len(x), want.dtype) for want in wants]
    make_functions(tmp_path, "unary_functions", UNARY)(x, *outs)
    for name, out, want in zip(UNARY, outs, wants):
        try:
            close(out, want, dt)
        except AssertionError as e:
            raise AssertionError(f"np.{name}: {e}") from None


INTEGERS = [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32]
# Under make test each function takes one of two samples of INTEGERS in turn, each with a signed
# and an unsigned type and a type whose np.sqrt is f16, one whose is f32 (int16, in both) and one
# whose is f64: 77 kernels of 132 (each compiled again by the language suite's runs).
# make test-all takes every pair.
_INTEGER_TURNS = ([np.int8, np.int16, np.uint32], [np.uint8, np.int16, np.int32, np.int64])


def _unary_integer_cases():
    if os.environ.get("TACK_TEST_ALL") == "1":
        return [(name, dt) for name in UNARY for dt in INTEGERS]
    return [(name, dt) for i, name in enumerate(UNARY) for dt in _INTEGER_TURNS[i % 2]]


def test_each_integer_sample_meets_every_result_type():
    for sample in _INTEGER_TURNS:
        assert {np.sqrt(np.zeros(1, dt)).dtype for dt in sample} == {np.dtype(np.float16), np.dtype(np.float32),
                                                                     np.dtype(np.float64)}, sample
        assert {np.dtype(dt).kind for dt in sample} == {"i", "u"}, sample
    assert {dt for sample in _INTEGER_TURNS for dt in sample} == set(INTEGERS)


@pytest.mark.parametrize("name, dt", _unary_integer_cases(), ids=lambda v: v if isinstance(v, str) else np.dtype(v).name)
def test_unary_on_integers_has_numpys_result_type(name, dt):
    """np.sqrt of an int32 is f64 and of an int8 f16 (math.sqrt of either is
    the default float, f32); np.floor of an integer is the integer."""
    x = np.array([0, 1, 2, 3, 7, 100], dt)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x)
    k = make_unary(name)
    out = np.zeros(len(x), want.dtype)
    k(x, out)
    close(out, want, want.dtype.type)
    ir = k.ir(x, out)
    if want.dtype.kind == "f":
        assert {np.float16: "f16", np.float32: "f32", np.float64: "f64"}[want.dtype.type] in ir


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int16, np.int64])
def test_binary_matches_numpy(tmp_path, dt):
    """Every function of BINARY in one kernel for dt, each into its own output (as above)."""
    x = np.array([1, -2, 3, 5, -7, 0], dt)
    y = np.array([2, 3, -1, 0.5 if dt in (np.float32, np.float64) else 4, 2, 1], dt)
    wants = [getattr(np, name)(x, y) for name in BINARY]
    outs = [np.zeros(len(x), want.dtype) for want in wants]
    make_functions(tmp_path, "binary_functions", BINARY, "x[i], y[i]", "x, y")(x, y, *outs)
    for name, out, want in zip(BINARY, outs, wants):
        try:
            close(out, want, want.dtype.type)
        except AssertionError as e:
            raise AssertionError(f"np.{name}: {e}") from None


@tack.kernel
def spellings(x, out):
    for i in range(x.shape[0]):
        out[0, i] = numpy.sqrt(x[i])          # import numpy
        out[1, i] = sqrt(x[i])                # from numpy import sqrt
        out[2, i] = my_atan2(x[i], 1.0)       # from numpy import arctan2 as my_atan2
        out[3, i] = np.pi * x[i] + np.e
        out[4, i] = np.float32(x[i] / 3)      # a cast, like tack.f32
        out[5, i] = np.int64(x[i] * 2.7)      # truncates toward zero, as int() does
        out[6, i] = np.abs(-x[i]) + math.sqrt(x[i]) * 0


def fmod_ints(a, d, out, scaled):
    for i in range(out.shape[0]):
        out[i] = np.fmod(a[i], d[i])
        scaled[i] = np.fmod(a[i], d[i]) * 100      # an int8 times 100 wraps in int8, as NumPy's does


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int32, np.int64, np.uint64], ids=lambda d: np.dtype(d).name)
def test_fmod_of_integers_is_numpys_integer_remainder(dt, jit):
    """np.fmod of two integers is NumPy's integer loop: C's remainder (the dividend's sign) in their
    type.  It was computed in a float (f64 for int64, f32 for int8), so 2**60 + 1 rounded and
    np.fmod(2**60 + 1, 7) gave 1, not 2, and an int8 remainder times 100 did not wrap."""
    info = np.iinfo(dt)
    vals = sorted({int(info.min), int(info.max), 0, 1, 2, 3, 7, int(info.max) - 1}
                  | ({-1, -2, -7, int(info.min) + 1} if info.min else set())
                  | ({2**60 + 1, -(2**60 + 1), 2**62 + 3} if info.bits == 64 and info.min else set()))
    pairs = [(x, y) for x in vals for y in vals if y != 0]
    a = np.array([x for x, _ in pairs], dt)
    d = np.array([y for _, y in pairs], dt)
    out, scaled = np.zeros_like(a), np.zeros_like(a)
    tack.kernel(fmod_ints, jit=jit)(a, d, out, scaled)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, np.fmod(a, d))
        np.testing.assert_array_equal(scaled, np.fmod(a, d) * dt(100))
    with pytest.raises(ZeroDivisionError, match="integer modulo by zero"):  # as `%` by zero
        tack.kernel(fmod_ints, jit=jit)(a[:1], np.zeros(1, dt), out[:1], scaled[:1])


def test_fmod_of_integers_on_opencl():
    if not any(str(d).startswith("opencl") for d in tack.devices()):
        pytest.skip("no OpenCL device")
    a = np.array([2**60 + 1, -(2**60 + 1), -7, 7, -2**63], np.int64)
    d = np.array([7, 7, 2, -2, -1], np.int64)
    out, scaled = (tack.zeros(5, tack.i64, device="opencl") for _ in range(2))
    tack.kernel(fmod_ints)(tack.array(a, device="opencl"), tack.array(d, device="opencl"), out, scaled)
    assert out.numpy().tolist() == np.fmod(a, d).tolist() == [2, -2, -1, 1, 0]


def test_any_import_spelling_works():
    x = np.array([0.5, 2.0, 9.0])
    out = np.zeros((7, 3))
    spellings(x, out)
    np.testing.assert_allclose(out[0], np.sqrt(x))
    np.testing.assert_allclose(out[1], np.sqrt(x))
    np.testing.assert_allclose(out[2], np.arctan2(x, 1.0))
    np.testing.assert_allclose(out[3], np.pi * x + np.e)
    np.testing.assert_array_equal(out[4], np.float32(x / 3).astype(np.float64))
    np.testing.assert_array_equal(out[5], (x * 2.7).astype(np.int64))
    np.testing.assert_array_equal(out[6], x)


@tack.kernel
def casts(x, out):
    for i in range(x.shape[0]):
        a: np.float64 = x[i]
        out[0, i] = np.int8(x[i])
        out[1, i] = np.uint8(np.int64(x[i]))
        out[2, i] = np.float32(a)
        out[3, i] = np.bool_(x[i])
        out[4, i] = tack.i8(x[i])


def test_casts_are_tacks_casts():
    x = np.array([1.7, -2.5, 0.0, 130.0])
    out = np.zeros((5, 4))
    casts(x, out)
    np.testing.assert_array_equal(out[0], out[4])
    np.testing.assert_array_equal(out[1], np.array([1, -2, 0, 130], np.int64).astype(np.uint8))
    np.testing.assert_array_equal(out[2], x.astype(np.float32))
    np.testing.assert_array_equal(out[3], x != 0)
    src = casts.generated_source(x, out)
    assert "int8_t" in src


def np_int_casts(x, out):
    for i in range(x.shape[0]):
        out[0, i] = np.int64(x[i])
        out[1, i] = tack.i64(x[i])
        out[2, i] = np.int32(x[i])
        out[3, i] = tack.i32(x[i])
        out[4, i] = np.uint8(x[i])
        out[5, i] = tack.u8(x[i])
        out[6, i] = np.uint64(x[i])
        out[7, i] = tack.u64(x[i])


def test_numpy_integer_casts_of_nan_and_inf_are_tacks_in_debug_mode_too():
    # Debug mode called NumPy's own np.int64(nan), INT64_MIN, where the compiled kernel
    # converts as tack.i64 does (NaN to 0, saturation, then wrapping): a histogram's
    # np.int64(np.floor((x - lo) / w)) put a NaN in bin 0 compiled and nowhere in debug mode.
    x = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, -3.7, 300.5, 2.0**63, -1.0])
    runs = []
    for k in (tack.kernel(np_int_casts), tack.kernel(jit=False)(np_int_casts)):
        out = np.zeros((8, x.size), np.int64)
        k(x, out)
        runs.append(out)
        for a in range(0, 8, 2):
            np.testing.assert_array_equal(out[a], out[a + 1])   # np.<int>(x) is tack.<int>(x)
        assert out[0, :3].tolist() == [0, 2**63 - 1, -2**63]
    np.testing.assert_array_equal(runs[0], runs[1])


@tack.kernel
def minmax_abs(a, b, out_min, out_max, out_abs):
    for i in range(a.shape[0]):
        out_min[i] = min(a[i], b[i])
        out_max[i] = max(a[i], b[i], 3)
        out_abs[i] = abs(a[i])


def test_min_max_abs_promote_as_numpy():
    """min/max promote their arguments as NumPy's binary operators do (NEP 50:
    a Python int is weak), and abs keeps the type: int8 wraps at -128."""
    a = np.array([-128, 5, -3], np.int8)
    b = np.array([1000, -7, 2], np.int16)
    out_min, out_max, out_abs = np.zeros(3, np.int16), np.zeros(3, np.int16), np.zeros(3, np.int8)
    minmax_abs(a, b, out_min, out_max, out_abs)
    assert out_min.tolist() == np.minimum(a, b).tolist()
    assert out_max.tolist() == np.maximum(np.maximum(a, b), 3).tolist()
    assert out_abs.tolist() == np.abs(a).tolist() == [-128, 5, 3]
    ir = minmax_abs.ir(a, b, out_min, out_max, out_abs)
    assert "i16" in ir


@tack.kernel
def uses_norm(x, out):
    for i in range(x.shape[0]):
        out[i] = np.linalg.norm(x[i])


@tack.kernel
def uses_logaddexp(x, out):
    for i in range(x.shape[0]):
        out[i] = np.logaddexp(x[i], 0.0)


@tack.kernel
def uses_complex(x, out):
    for i in range(x.shape[0]):
        out[i] = np.clongdouble(x[i])


def test_unsupported_numpy_functions_name_the_supported_ones():
    with pytest.raises(tack.CompileError) as e:
        uses_logaddexp(np.zeros(2), np.zeros(2))
    assert "is not supported in kernels; the NumPy functions kernels accept are: " in e.value.msg
    assert "arcsin" in e.value.msg and "sqrt" in e.value.msg and "np.float32(x)" in e.value.msg
    with pytest.raises(tack.CompileError) as e:  # one with a kernel spelling says it instead
        uses_norm(np.zeros(2), np.zeros(2))
    assert "np.linalg.norm is not supported in kernels: a kernel reads one element at a time, so add the " \
           "squares up in a loop" in e.value.msg and "math.sqrt(s)" in e.value.msg
    with pytest.raises(tack.CompileError, match="np.clongdouble"):
        uses_complex(np.zeros(2), np.zeros(2))
