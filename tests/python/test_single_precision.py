"""Every kernel of the language suite, emitted again in single precision for
OpenCL, needs no double -- unless it asks for double itself.

The default float is f32 so that a kernel runs on GPUs without double
precision (Metal, Intel's DG2, many phones').  Idioms that made an f32
kernel an fp64 one -- `i * 0.1`, `(x - lo) / (hi - lo)` with Python floats,
`s = 1.0 if c else -1.0`, float literals passed to a @tack.func -- are gone;
the language suite's calls are captured (the _f32_capture plugin), made
float32, and their OpenCL source must not need fp64.  What remains is
listed below with the reason: each asks for double by NumPy's own rules (a concrete
int32 or int64 meeting f32, NumPy's math of int32/int64, np.zeros without a
dtype, a NumPy complex64 meeting an integer, a NumPy float64) or by name (tack.f64,
complex128 annotations).  A kernel not in the list that needs double fails.
"""

import os
import sys

import pytest

import tack

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _suite  # noqa: E402

OPENCL = [d for d in tack.devices() if d.startswith("opencl")]

# kernel (qualname) -> why it needs double in single precision
ASKS_FOR_DOUBLE = {
    "test_annotations.<locals>.k": "an annotation `y: tack.f64`",
    "promote_mixed": "int32 + f32 is f64 in NumPy's table",
    "int_casts": "an explicit tack.f64 conversion",
    "make_unary.<locals>.k": "np.sqrt & co of int32/int64/uint32 are float64 in NumPy",
    "binary_functions": "np.arctan2/np.fmod of int64 are float64 in NumPy",
    "casts": "explicit tack.f64 / complex128 conversions",
    "literals": "complex128 literals by name (tack.complex128)",
    "via_func": "a complex128 value by name passed to a @tack.func",
    "add_scalar": "a NumPy complex64 meeting int32 is complex128 in NumPy's table",
    "axpz": "a NumPy complex64 meeting int32 is complex128 in NumPy's table",
    "annotated_scalar": "an annotation tack.complex128",
    "control_flow": "an annotation `acc: tack.complex128`",
    "print_with_text": "print() of a Python complex prints its full value",
    "complex_scratch": "a complex128 local array by name",
    "f64_matrices": "mat22d / vec2d types by name",
    "matmul3": "np.zeros without a dtype is float64, as in NumPy",
    "window_max": "np.empty without a dtype is float64, as in NumPy",
    "kinds": "np.zeros / np.full without a dtype are float64, as in NumPy",
    "tack_defaults": "np.zeros without a dtype is float64, as in NumPy",
    "shared_fill": "np.full without a dtype is float64, as in NumPy",
    "through_funcs": "np.zeros without a dtype is float64, as in NumPy",
    "shared_taps": "np.zeros without a dtype is float64, as in NumPy",
    "reads_past_in_a_func": "np.zeros without a dtype is float64, as in NumPy",
    "reads_past": "np.zeros without a dtype is float64, as in NumPy",
    "reads_unchecked": "np.zeros without a dtype is float64, as in NumPy",
    "norms": "np.zeros without a dtype is float64, as in NumPy (in the @tack.func it calls)",
    "test_a_numpy_float64_is_strong_too.<locals>.times": "a module-level np.float64 is float64, as in NumPy",
    "weak_abs": "a Python complex argument is computed in complex128, its carrier, as in Python",
    "weak_abs_local": "a Python complex argument is computed in complex128, its carrier, as in Python",
    "weak_complex_parts": "a Python complex argument is computed in complex128, its carrier, as in Python",
    "store_argument": "a Python float argument stored as it is into a float16 element rounds once from its "
                      "float64, as NumPy stores it (np.float32(s) runs without double)",
}


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (make test installs PoCL as root)")
def test_the_language_suite_in_single_precision_needs_no_double(record_property):
    res = _suite.watched("_f32_capture")  # the suite's one watched run
    record_property("language_suite", f"single precision (OpenCL): {res['checked']} kernels checked")
    assert res["checked"] > 250, res
    need = {entry.split(" ", 1)[0] for entry in res["need_fp64"]}
    unexpected = [e for e in res["need_fp64"] if e.split(" ", 1)[0] not in ASKS_FOR_DOUBLE]
    assert not unexpected, "\n".join(unexpected)
    # the list is kept honest: an entry that no longer needs double is taken out
    assert set(ASKS_FOR_DOUBLE) <= need, sorted(set(ASKS_FOR_DOUBLE) - need)
