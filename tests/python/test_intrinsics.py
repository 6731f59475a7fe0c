"""The Python registry of intrinsics agrees with the compiler's one table
(src/compiler/intrinsics.def, read through _core._intrinsic_names())."""

import builtins
import math

import numpy as np
import pytest

import tack
from tack import _core, _kernels

C_NAMES = set(_core._intrinsic_names())
API = {"kernel", "func", "compile_kernels", "Kernel", "CompileError", "PythonKernel", "RaceWarning",
       "set_default_float", "get_default_float", "set_check_races", "get_check_races", "RaceError"}


def test_table_is_not_empty_and_unique():
    names = _core._intrinsic_names()
    assert len(names) == len(set(names)) > 40
    assert {"sqrt", "atomic_add", "ndrange", "range", "print", "dot"} <= C_NAMES


def test_every_tack_intrinsic_is_in_the_table():
    exported = set(_kernels.__all__) - API
    assert exported <= C_NAMES, exported - C_NAMES
    for name in exported:
        assert _kernels._INTRINSICS[getattr(tack, name)] == name


def test_every_table_name_is_reachable_from_python():
    for name in C_NAMES:
        objs = [getattr(m, name) for m in (tack, math, builtins) if hasattr(m, name)]
        assert objs, f"intrinsic {name!r} has no Python object"
        assert any(_kernels._INTRINSICS.get(o) == name for o in objs), name


def test_api_functions_are_not_intrinsics():
    for name in API:
        obj = getattr(tack, name)
        assert obj not in _kernels._INTRINSICS, name


@tack.kernel
def _calls_compile_kernels(out):
    for i in range(out.shape[0]):
        tack.compile_kernels([])


@tack.kernel
def _calls_gamma(out):
    for i in range(out.shape[0]):
        out[i] = math.gamma(out[i])


def test_compile_kernels_in_a_kernel_is_refused():
    # compile_kernels is host API, not an intrinsic: the front end refuses it by name.
    with pytest.raises(tack.CompileError, match="compile_kernels"):
        _calls_compile_kernels(np.zeros(2))


def test_unsupported_math_function_is_named():
    with pytest.raises(tack.CompileError, match="unsupported function 'gamma'"):
        _calls_gamma(np.zeros(2))


@tack.kernel
def _unary_math(x, out):
    for i in range(x.shape[0]):
        out[0, i] = tack.sqrt(x[i])
        out[1, i] = tack.exp(x[i])
        out[2, i] = tack.log(x[i])
        out[3, i] = tack.log2(x[i])
        out[4, i] = tack.log10(x[i])
        out[5, i] = tack.sin(x[i])
        out[6, i] = tack.cos(x[i])
        out[7, i] = tack.tan(x[i])
        out[8, i] = tack.asin(x[i] / 4)
        out[9, i] = tack.acos(x[i] / 4)
        out[10, i] = tack.atan(x[i])
        out[11, i] = tack.sinh(x[i])
        out[12, i] = tack.cosh(x[i])
        out[13, i] = tack.tanh(x[i])
        out[14, i] = tack.floor(x[i])
        out[15, i] = tack.ceil(x[i])
        out[16, i] = tack.trunc(x[i])
        out[17, i] = math.fabs(x[i])
        out[18, i] = tack.atan2(x[i], 2.5)
        out[19, i] = pow(x[i], 1.5)
        out[20, i] = tack.hypot(x[i], 2.5)
        out[21, i] = tack.fmod(x[i], 0.75)
        out[22, i] = tack.copysign(x[i], -1.0)
        out[23, i] = float(tack.isnan(x[i])) + 2 * float(tack.isinf(x[i])) + 4 * float(tack.isfinite(x[i]))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_each_math_row_spells_its_own_function(dt):
    # A row whose spelling slipped to a neighbour's (sin for cos) gives the
    # neighbour's values: each row is compared with NumPy's function.
    x = np.array([0.25, 0.5, 1.0, 1.5, 2.0, 3.0], dtype=dt)
    out = np.zeros((24, x.size), dtype=dt)
    _unary_math(x, out)
    want = [np.sqrt(x), np.exp(x), np.log(x), np.log2(x), np.log10(x), np.sin(x), np.cos(x), np.tan(x),
            np.arcsin(x / 4), np.arccos(x / 4), np.arctan(x), np.sinh(x), np.cosh(x), np.tanh(x),
            np.floor(x), np.ceil(x), np.trunc(x), np.fabs(x), np.arctan2(x, dt(2.5)), x ** dt(1.5),
            np.hypot(x, dt(2.5)), np.fmod(x, dt(0.75)), np.copysign(x, dt(-1.0)),
            np.isnan(x) + 2.0 * np.isinf(x) + 4.0 * np.isfinite(x)]
    rtol = 1e-6 if dt == np.float32 else 1e-14
    for row, w in enumerate(want):
        np.testing.assert_allclose(out[row], w.astype(dt), rtol=rtol, atol=0, err_msg=f"row {row}")
