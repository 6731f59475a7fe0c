"""The intrinsics of Tack's kernel language: their Python meanings and the
registry the compiler knows them by.

The functions defined here (``tack.sqrt``, ``tack.atomic_add``, ``tack.ndrange``
...) are the intrinsics of the kernel language.  Inside a kernel the compiler
replaces each by native code; called from ordinary Python they compute the same
thing with NumPy, so a kernel's helpers can be tested without compiling it.
The compiler recognizes them by identity through the registry ``_INTRINSICS``
(object -> intrinsic name), which also lists the builtins and the ``math``
functions that kernels may use.  Which intrinsics there are, and how many
arguments each takes, is the compiler's table (src/compiler/intrinsics.def,
``_core._intrinsics()``); this module only gives each row its Python meaning.
The kernels that call them are tack._kernels'.
"""

from __future__ import annotations

import builtins as _builtins
import itertools as _itertools
import cmath as _cmath
import math as _math

from . import _core

# The intrinsics' names (tack.sqrt, tack.atomic_add ...), from the compiler's
# table below (_define_intrinsics); tack.shared from _kernels_blocks.
__all__ = []

# ----------------------------------------------------------- the table
# The compiler's intrinsics, row by row from its one table
# (src/compiler/intrinsics.def, read through the extension): name -> (kind,
# min_args, max_args).  This module gives each row its Python meaning, the
# object a kernel calls it by and that computes it outside a kernel (_PYTHON);
# nothing here lists the names again.  tests/python/test_intrinsics.py fails
# when a row has no Python meaning or a Python definition has no row.
_TABLE = {name: (kind, lo, hi) for name, kind, lo, hi in _core._intrinsics()}

_PYTHON = {}  # intrinsic name -> its Python object: a builtin, a math function or tack.<name>


def _intrinsic(f):
    """Give the row of f's name its Python definition, f (tack.<name>)."""
    _PYTHON[f.__name__] = f
    return f


# --------------------------------------------------------------- iteration
@_intrinsic
def ndrange(*axes):
    """Iterate over every index of an N-dimensional range.

    ``for i, j in tack.ndrange(n, m)`` visits ``(i, j)`` for ``0 <= i < n`` and
    ``0 <= j < m``, the last axis fastest; at the top level of a kernel it is
    one parallel loop over all ``n * m`` points.  Each axis is a size ``n``, a
    tuple ``(start, stop)`` or ``(start, stop, step)``, or a ``range(...)``,
    read as ``range()`` reads them: ``tack.ndrange((1, n - 1), (1, m - 1))``
    visits a grid's interior.  A single shape stands for all the axes:
    ``ndrange(a.shape)``, ``ndrange(*a.shape)``, or one tuple of sizes (so a
    single axis with bounds is written ``ndrange(range(start, stop))``).
    """
    if len(axes) == 1 and isinstance(axes[0], tuple):
        axes = axes[0]
        for n in axes:
            if isinstance(n, (tuple, range)):
                raise TypeError("tack.ndrange(): a shape given as one tuple holds sizes, not tuples; "
                                "write each axis as its own argument: ndrange((start, stop), (start, stop))")
    ranges = []
    for a in axes:
        if isinstance(a, range):
            ranges.append(a)
        elif isinstance(a, tuple):
            if len(a) not in (2, 3):
                raise TypeError(f"tack.ndrange(): an axis given as a tuple is (start, stop) or "
                                f"(start, stop, step), not {len(a)} values")
            ranges.append(range(*a))
        else:
            ranges.append(range(a))
    return _itertools.product(*ranges)


@_intrinsic
def independent(loop):
    """Mark a parallel loop's iterations as independent: ``for i in
    tack.independent(range(n)):`` (or around ``tack.ndrange(...)``).

    The race check (docs/language.md, "Races") then says nothing about this
    loop: the caller promises that no iteration writes an element another
    iteration reads or writes.  Outside a kernel it returns ``loop`` itself.
    """
    return loop


# tack.blocks, tack.shared, tack.barrier and the block and sub-group operations: their Python
# meanings live in a module of their own (registered through _intrinsic as it is imported)
from ._kernels_blocks import (  # noqa: E402,F401
    barrier, block_max, block_min, block_scan, block_sum, blocks, shared, shuffle, shuffle_down, warp_all,
    warp_any, warp_ballot, warp_max, warp_min, warp_sum,
)
from . import _kernels_blocks as _blocks_module  # noqa: E402

__all__ += ["shared"]


# ---------------------------------------------------------------- helpers
_np_module = None


def _np():
    global _np_module
    if _np_module is None:
        import numpy

        _np_module = numpy
    return _np_module


# The math rows (kind "math"): NumPy's function for each, by NumPy's name,
# and the docstring of tack.<name>.  A row without a docstring is computed by
# Python's own function of that name, which a kernel calls it by too: pow (the
# builtin) and fabs, erf, erfc, remainder (math's).  A row without a NumPy
# name (None: NumPy has no such function, or np.remainder, which is Python's
# %) is computed by _mathlib's function of its name.  _debug.py runs the same
# functions in a kernel run as Python, and _NUMPY_MATH below is this table
# read the other way round.
_MATH = {
    "sqrt": ("sqrt", "Square root (NaN for negative input)."),
    "exp": ("exp", "e raised to the power x."),
    "log": ("log", "Natural logarithm."),
    "log2": ("log2", "Base-2 logarithm."),
    "log10": ("log10", "Base-10 logarithm."),
    "sin": ("sin", "Sine (radians)."),
    "cos": ("cos", "Cosine (radians)."),
    "tan": ("tan", "Tangent (radians)."),
    "asin": ("arcsin", "Arc sine, in radians."),
    "acos": ("arccos", "Arc cosine, in radians."),
    "atan": ("arctan", "Arc tangent, in radians."),
    "sinh": ("sinh", "Hyperbolic sine."),
    "cosh": ("cosh", "Hyperbolic cosine."),
    "tanh": ("tanh", "Hyperbolic tangent."),
    "floor": ("floor", "Largest integral value not above x (same type as x)."),
    "ceil": ("ceil", "Smallest integral value not below x (same type as x)."),
    "trunc": ("trunc", "x rounded toward zero (same type as x)."),
    "fabs": ("fabs", None),
    "atan2": ("arctan2", "Arc tangent of y/x using the signs of both, in radians."),
    "pow": ("power", None),
    "hypot": ("hypot", "sqrt(x*x + y*y) without undue overflow."),
    "fmod": ("fmod", "C's fmod: remainder with the sign of x (unlike %)."),
    "copysign": ("copysign", "The magnitude of x with the sign of y."),
    "isnan": ("isnan", "True where x is NaN."),
    "isinf": ("isinf", "True where x is +inf or -inf."),
    "isfinite": ("isfinite", "True where x is neither infinite nor NaN."),
    "erf": (None, None),
    "erfc": (None, None),
    "log1p": ("log1p", "log(1 + x), accurate for x near 0."),
    "expm1": ("expm1", "exp(x) - 1, accurate for x near 0."),
    "cbrt": ("cbrt", "Cube root (negative for negative x)."),
    "exp2": ("exp2", "2 raised to the power x."),
    "asinh": ("arcsinh", "Inverse hyperbolic sine."),
    "acosh": ("arccosh", "Inverse hyperbolic cosine (NaN below 1)."),
    "atanh": ("arctanh", "Inverse hyperbolic tangent (+-inf at +-1, NaN beyond)."),
    "remainder": (None, None),
    "rint": ("rint", "x rounded to the nearest integral value, halves to even (same type as x)."),
    "fma": (None, "x * y + z with a single rounding (a fused multiply-add)."),
    "rsqrt": (None, "1 / sqrt(x): the reciprocal square root (inf at 0, NaN below it)."),
    "sign": ("sign", "-1, 0 or 1 by the sign of x, NaN for NaN (np.sign; 0 for -0)."),
    "clamp": (None, "clamp(x, lo, hi): min(max(x, lo), hi), a NaN x staying NaN."),
    "lerp": (None, "lerp(a, b, t): a + t * (b - a), the linear interpolation of a and b."),
    "smoothstep": (None, "smoothstep(e0, e1, x): 0 at or below e0, 1 at or above e1, 3t^2 - 2t^3 between, "
                         "t = (x - e0) / (e1 - e0)."),
    "step": (None, "step(edge, x): 0 where x < edge, 1 where x >= edge, NaN for NaN."),
    "degrees": ("degrees", "Radians to degrees (np.degrees, its constants included)."),
    "radians": ("radians", "Degrees to radians (np.radians)."),
}


def _math_impl(name):
    """The function that computes math row `name` on NumPy scalars and arrays of its type."""
    npname, _doc = _MATH[name]
    if npname is not None:
        return getattr(_np(), npname)
    from . import _mathlib  # imports NumPy, which tack's import does not

    return getattr(_mathlib, name)


def _numpy_function(name, npname, nargs, doc):
    """tack.<name>: NumPy's npname (or _mathlib's name), taking the table's number of arguments."""
    if nargs == 1:
        def f(x):
            return _math_impl(name)(x)
    elif nargs == 2:
        def f(x, y):
            return _math_impl(name)(x, y)
    elif nargs == 3:
        def f(x, y, z):
            return _math_impl(name)(x, y, z)
    else:
        raise ValueError(f"intrinsic {name!r}: a math row takes 1 to 3 arguments, not {nargs}")
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


# -------------------------------------------------------- complex numbers
@_intrinsic
def conjugate(z):
    """The complex conjugate (z.conjugate(), np.conj); a real x is its own."""
    return _np().conjugate(z)


# ---------------------------------------------------------------- vectors
@_intrinsic
def dot(a, b):
    """Dot product of two vectors of the same type: a sum in ascending order, as a kernel computes it."""
    return _linalg("dot")(a, b)


@_intrinsic
def cross(a, b):
    """Cross product of two 3-vectors."""
    return _np().cross(_np().asarray(a), _np().asarray(b))


@_intrinsic
def length(v):
    """Euclidean length of a vector: the square root of the sum of squares, in order (as a kernel sums)."""
    return _linalg("norm")(v)


@_intrinsic
def normalize(v):
    """v divided by its length; a zero vector stays the zero vector (NaN stays NaN)."""
    v = _np().asarray(v)
    n = length(v)
    return v / n if n != 0 else _np().zeros_like(v)


# ------------------------------------------------ matrix and vector functions
# Each computes what the compiled kernel computes, in the same operations
# (python/tack/_linalg.py, whose functions these are; docs/language.md,
# "Matrix and vector functions").
def _linalg(name):
    from . import _linalg as la  # imports NumPy, which tack's import does not

    return getattr(la, name)


@_intrinsic
def transpose(m):
    """The transpose of a square matrix."""
    return _linalg("transpose")(m)


@_intrinsic
def inverse(m):
    """The inverse of a square matrix (adjugate over determinant); the zero matrix where the determinant is 0."""
    return _linalg("inverse")(m)


@_intrinsic
def determinant(m):
    """The determinant of a square matrix."""
    return _linalg("determinant")(m)


@_intrinsic
def trace(m):
    """The sum of a square matrix's diagonal."""
    return _linalg("trace")(m)


@_intrinsic
def outer(u, v):
    """The outer product u v^T of two vectors of one type: a matrix."""
    return _linalg("outer")(u, v)


@_intrinsic
def diag(x):
    """Of a vector: the matrix with it on the diagonal; of a matrix: its diagonal (numpy.diag)."""
    return _linalg("diag")(x)


@_intrinsic
def identity(dtype):
    """The identity matrix of a matrix dtype: tack.identity(tack.mat33)."""
    return _linalg("identity")(dtype)


@_intrinsic
def norm(x):
    """A vector's length, a matrix's Frobenius norm (numpy.linalg.norm's defaults)."""
    return _linalg("norm")(x)


@_intrinsic
def svd3(m):
    """(U, sigma, V) of a 3x3 matrix: m = U @ diag(sigma) @ V.T, sigma descending, by one-sided Jacobi."""
    return _linalg("svd3")(m)


@_intrinsic
def eig3(m):
    """(eigenvalues ascending, eigenvectors as columns) of a symmetric 3x3 matrix (its lower triangle)."""
    return _linalg("eig3")(m)


@_intrinsic
def qr3(m):
    """(Q, R) of a 3x3 matrix: m = Q @ R, Q orthogonal, R upper triangular with a diagonal >= 0."""
    return _linalg("qr3")(m)


# ---------------------------------------------- quaternions and transforms
# A quat is (x, y, z, w), a transform (p.x, p.y, p.z, q.x, q.y, q.z, q.w): the
# last axis of the arrays these take and give (tack._quat has the formulas,
# the compiled helpers' own).
def _q():
    from . import _quat  # imports NumPy, which tack's import does not

    return _quat


@_intrinsic
def quat_identity():
    """The identity rotation (0, 0, 0, 1), a quat of the default float."""
    from ._kernels import get_default_float

    return _np().array([0, 0, 0, 1], dtype=get_default_float().numpy)


@_intrinsic
def quat_from_axis_angle(axis, angle):
    """The rotation by ``angle`` radians about ``axis`` (normalized; a zero axis gives the identity)."""
    return _q().from_axis_angle(axis, angle)


@_intrinsic
def quat_from_matrix(m):
    """The unit quaternion (w >= 0) of a 3x3 rotation matrix."""
    return _q().from_matrix(m)


@_intrinsic
def quat_to_matrix(q):
    """The 3x3 rotation matrix of q (any nonzero length: q is normalized)."""
    return _q().to_matrix(q)


@_intrinsic
def quat_inverse(q):
    """The inverse conj(q) / |q|^2, so q * quat_inverse(q) is the identity."""
    return _q().inverse(q)


@_intrinsic
def quat_rotate(q, v):
    """The 3-vector v rotated by q: q v q^-1 (any nonzero length of q)."""
    return _q().rotate(q, v)


@_intrinsic
def quat_rotate_inv(q, v):
    """The 3-vector v rotated by the inverse of q."""
    return _q().rotate_inv(q, v)


@_intrinsic
def quat_slerp(a, b, t):
    """Spherical linear interpolation from a (t = 0) to b (t = 1) along the shorter arc."""
    return _q().slerp(a, b, t)


@_intrinsic
def transform_point(t, p):
    """The point p moved by the transform t: rotated by t.q, then translated by t.p."""
    return _q().x_point(t, p)


@_intrinsic
def transform_vector(t, v):
    """The vector v rotated by t.q (a direction: no translation)."""
    return _q().x_vector(t, v)


@_intrinsic
def transform_inverse(t):
    """The transform that undoes t: transform_point(transform_inverse(t), transform_point(t, p)) is p."""
    return _q().x_inverse(t)


# ------------------------------------------------------------ conversions
@_intrinsic
def seed_u64(x):
    """``x`` as a u64, as ``u64(x)`` converts it, except that in a kernel
    compiled with checks a float NaN raises ``ValueError`` ("cannot convert
    float NaN to integer", as ``u64(nan)`` does here) instead of becoming 0
    the way a kernel's float-to-integer conversion makes it.  ``tack.random``
    takes its seeds through it, so a NaN seed fails alike in and out of a
    kernel rather than drawing seed 0's numbers."""
    return _core.u64(x)


# ---------------------------------------------------------------- atomics
# The atomic rows (kind "atomic"): how each combines the old value with the
# new (atomic_cas: the old value, the expected one and the new).
_ATOMIC = {
    "atomic_add": (lambda a, b: a + b, "array[index] += value"),
    "atomic_sub": (lambda a, b: a - b, "array[index] -= value"),
    "atomic_min": (lambda a, b: _pick(b < a, b, a), "array[index] = min(array[index], value)"),
    "atomic_max": (lambda a, b: _pick(b > a, b, a), "array[index] = max(array[index], value)"),
    "atomic_exch": (lambda a, b: b, "array[index] = value (a float's bits as they are)"),
    "atomic_and": (lambda a, b: a & b, "array[index] &= value (integer arrays)"),
    "atomic_or": (lambda a, b: a | b, "array[index] |= value (integer arrays)"),
    "atomic_xor": (lambda a, b: a ^ b, "array[index] ^= value (integer arrays)"),
    "atomic_cas": (lambda a, e, b: b if _same_bits(a, e) else a,
                   "array[index] = value if array[index] == expected (a float compared by its bits: -0.0 is "
                   "not 0.0, a NaN matches a NaN of the same bits)"),
}


def _pick(take, b, a):
    """b where take holds, else a: of numbers, or component by component of a vector or matrix
    element (a NumPy row), as a kernel's atomic_min and atomic_max of one update each component."""
    if getattr(take, "ndim", 0):
        import numpy

        return numpy.where(take, b, a)
    return b if take else a


def _element(array, index):
    """array[index] as a value: a vector or matrix element (a row of the NumPy array) copied, so
    the old value returned is not the updated row."""
    old = array[index]
    return old.copy() if getattr(old, "ndim", 0) else old


def _same_bits(old, expected):
    """Whether old (an element) and expected, made the element's type, have the same bits."""
    import numpy

    old = numpy.asarray(old)
    return old.tobytes() == numpy.asarray(expected, dtype=old.dtype).tobytes()


def _atomic(name, op, what):
    if name == "atomic_cas":
        def f(array, index, expected, value):
            old = _element(array, index)
            array[index] = op(old, expected, value)
            return old

        sig = "array, index, expected, value"
    else:
        def f(array, index, value):
            old = _element(array, index)
            array[index] = op(old, value)
            return old

        sig = "array, index, value"
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"{name}({sig}): {what}, atomically; returns the old value."
    return f


# ------------------------------------------------------ the table, built
def _define_intrinsics():
    """Give every row of the table its Python object, in the table's order:
    the functions defined above; a Python builtin of the row's name (range,
    min, pow ...); a math row's NumPy function or, without a docstring in
    _MATH, the math module's; an atomic row from _ATOMIC.  The functions made
    here become module globals (tack.sqrt ...).  Returns the names defined in
    this module (tack.<name>), in the table's order."""
    g = globals()
    for name, (kind, lo, hi) in _TABLE.items():
        if name in _PYTHON:
            continue
        if hasattr(_builtins, name):
            _PYTHON[name] = getattr(_builtins, name)
        elif kind == "math" and name in _MATH:
            npname, doc = _MATH[name]
            if doc is None:
                _PYTHON[name] = getattr(_math, name)
            else:
                _PYTHON[name] = g[name] = _numpy_function(name, npname, lo, doc)
        elif kind == "atomic" and name in _ATOMIC:
            _PYTHON[name] = g[name] = _atomic(name, *_ATOMIC[name])
    own = (__name__, _blocks_module.__name__)
    return [name for name in _TABLE if getattr(_PYTHON.get(name), "__module__", None) in own]


_OWN = _define_intrinsics()
__all__ += _OWN


# --------------------------------------------------------------- registry
def _build_registry():
    """{object: intrinsic name} for the compiler's intrinsics: each row's
    Python object (_PYTHON), and the ``math`` functions of the rows' names.
    The other ``math`` functions are registered too, so that a kernel calling
    one is told it is unsupported."""
    reg = {}
    for name in dir(_math):
        obj = getattr(_math, name)
        if not name.startswith("_") and callable(obj):
            reg[obj] = name
    # cmath's functions as "cmath.<name>": lower_call.c / complex.c take exp,
    # sqrt, log and phase (a real argument becomes complex, as in Python) and
    # name the others as unsupported
    for name in dir(_cmath):
        obj = getattr(_cmath, name)
        if not name.startswith("_") and callable(obj):
            reg[obj] = "cmath." + name
    for name, obj in _PYTHON.items():
        if name in _TABLE:
            reg[obj] = name
    return reg


_INTRINSICS = _build_registry()
_core._set_intrinsics(_INTRINSICS)

# NumPy's spellings of the math intrinsics: NumPy's name -> the intrinsic
# (_MATH read the other way round, and NumPy's names of abs and the complex
# parts).  Registered as "numpy.<intrinsic>" (lower_call.c types integer
# arguments as NumPy does: np.sqrt of an int32 is f64, of an int8 f16;
# np.floor of an integer is that integer), by identity of the object, so that
# any import spelling works (import numpy as np, from numpy import sqrt).
# np.minimum/np.maximum are registered apart (_NUMPY_MINMAX, lower_call.c's
# np_minmax): they propagate NaN where min/max follow Python's comparisons.
# np.power of integers is not the float pow: it is **, registered apart (_NUMPY_OWN) with
# np.square and np.round.
_NUMPY_MATH = {npname: name for name, (npname, _doc) in _MATH.items() if name != "pow" and npname is not None}
_NUMPY_MATH.update({"absolute": "abs", "conj": "conjugate", "conjugate": "conjugate", "real": "real",
                    "imag": "imag"})
_NUMPY_MINMAX = ("minimum", "maximum")
# NumPy's functions with no math row, lowered from other operations (src/compiler/lower/lower_numpy.c).
_NUMPY_OWN = ("square", "power", "round", "around")
_numpy_registered = False


def _register_numpy():
    """Add NumPy's math functions to the registry; the front end calls this
    before each kernel it builds once the program has imported NumPy."""
    global _numpy_registered
    if _numpy_registered:
        return
    import sys

    np = sys.modules.get("numpy")
    if np is None:
        return
    names = dict(_NUMPY_MATH)
    if np.floor(np.int8(1)).dtype.kind == "f":  # an older NumPy made integers float here: leave these three out
        for name in ("floor", "ceil", "trunc"):
            del names[name]
    for npname, name in names.items():
        _INTRINSICS[getattr(np, npname)] = "numpy." + name
    for npname in _NUMPY_MINMAX + _NUMPY_OWN:
        _INTRINSICS[getattr(np, npname)] = "numpy." + npname
    _numpy_registered = True
