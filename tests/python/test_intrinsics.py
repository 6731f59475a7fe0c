"""The Python package's intrinsics are the compiler's one table
(src/compiler/intrinsics.def, read through _core._intrinsics()): every row has
a Python meaning, nothing in Python lacks a row, and each agrees with its row."""

import builtins
import inspect
import math

import numpy as np
import pytest

import tack
from tack import _core, _intrinsics, _kernels

ROWS = _core._intrinsics()
C_NAMES = {name for name, _kind, _lo, _hi in ROWS}
API = {"kernel", "func", "compile_kernels", "Kernel", "CompileError", "PythonKernel", "RaceWarning",
       "set_default_float", "get_default_float", "set_check_races", "get_check_races", "RaceError",
       "shared"}  # tack.shared: a local-array maker in blocks loops (lower_blocks.c), not a row


def test_table_is_not_empty_and_unique():
    names = [name for name, _kind, _lo, _hi in ROWS]
    assert len(names) == len(set(names)) > 40
    assert {"sqrt", "atomic_add", "ndrange", "range", "print", "dot"} <= C_NAMES
    kinds = {name: (kind, lo, hi) for name, kind, lo, hi in ROWS}
    assert kinds["sqrt"] == ("math", 1, 1) and kinds["atan2"] == ("math", 2, 2)
    assert kinds["ndrange"] == ("loop", 1, -1) and kinds["atomic_add"] == ("atomic", 3, 3)


def test_every_row_has_a_python_implementation_and_every_implementation_a_row():
    # _PYTHON is built from the table: a row the Python side cannot give a
    # meaning, or a definition (an @_intrinsic function, a _MATH or _ATOMIC
    # entry) whose name the table lacks, fails here
    assert set(_intrinsics._PYTHON) == C_NAMES, (C_NAMES - set(_intrinsics._PYTHON), set(_intrinsics._PYTHON) - C_NAMES)
    math_rows = {name for name, kind, _lo, _hi in ROWS if kind == "math"}
    assert set(_intrinsics._MATH) == math_rows, set(_intrinsics._MATH) ^ math_rows
    atomic_rows = {name for name, kind, _lo, _hi in ROWS if kind == "atomic"}
    assert set(_intrinsics._ATOMIC) == atomic_rows, set(_intrinsics._ATOMIC) ^ atomic_rows


def test_each_python_function_takes_its_rows_arguments():
    for name, _kind, lo, hi in ROWS:
        obj = _intrinsics._PYTHON[name]
        if getattr(obj, "__module__", None) != _intrinsics.__name__:
            continue  # a builtin or math's own function
        params = inspect.signature(obj).parameters.values()
        required = sum(p.default is p.empty and p.kind == p.POSITIONAL_OR_KEYWORD for p in params)
        star = any(p.kind == p.VAR_POSITIONAL for p in params)
        positional = sum(p.kind == p.POSITIONAL_OR_KEYWORD for p in params)
        assert required <= lo, (name, required, lo)
        assert (hi == -1) == star and (star or positional == hi), (name, positional, hi)


def test_tack_exports_each_intrinsic_it_defines():
    assert set(_kernels.__all__) == API - {"shared"}, set(_kernels.__all__) ^ (API - {"shared"})
    exported = set(_intrinsics.__all__) - API
    assert exported == set(_intrinsics._OWN) and exported <= C_NAMES, exported ^ set(_intrinsics._OWN)
    assert len(_intrinsics.__all__) == len(set(_intrinsics.__all__))
    for name in exported:
        assert _intrinsics._INTRINSICS[getattr(tack, name)] == name
        assert getattr(tack, name).__doc__, name


def test_every_table_name_is_reachable_from_python():
    for name in C_NAMES:
        objs = [getattr(m, name) for m in (tack, math, builtins) if hasattr(m, name)]
        assert objs, f"intrinsic {name!r} has no Python object"
        assert any(_intrinsics._INTRINSICS.get(o) == name for o in objs), name


def test_each_intrinsic_runs_from_python():
    # tack.<math row> is NumPy's function of the row (_MATH), with the row's arity
    # (or, where NumPy has none, tack._mathlib's)
    from tack import _mathlib

    x = np.array([0.25, 0.5, 0.75])
    for name, (npname, doc) in _intrinsics._MATH.items():
        if doc is not None:
            args = (x, np.float64(0.6), np.float64(0.9))[:_intrinsics._TABLE[name][1]]
            ref = getattr(np, npname) if npname is not None else getattr(_mathlib, name)
            np.testing.assert_array_equal(getattr(tack, name)(*args), ref(*args), err_msg=name)
    a = np.array([5, 7])
    assert tack.atomic_add(a, 1, 3) == 7 and tack.atomic_max(a, 0, 9) == 5 and a.tolist() == [9, 10]
    assert tack.atomic_sub(a, 1, 4) == 10 and tack.atomic_min(a, 1, 8) == 6 and a.tolist() == [9, 6]
    assert list(tack.ndrange(2, (1, 3))) == [(0, 1), (0, 2), (1, 1), (1, 2)]


def test_api_functions_are_not_intrinsics():
    for name in API:
        obj = getattr(tack, name)
        assert obj not in _intrinsics._INTRINSICS, name


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
