"""Vectors, matrices, quaternions and transforms passed to a kernel by value.

A kernel parameter annotated with one of these types (``g: tack.vec3``,
``m: tack.mat33d``, ``q: tack.quat``) takes a value of that type from the
host: a tuple or list of numbers, or a NumPy array of exactly the type's shape
(``tack.vec3(0, -9.8, 0)``, which is a float32 array of shape (3,)), its
components converted to the annotation's scalar type as a scalar annotation
(``x: tack.f64``) converts a number.  Without the annotation nothing changes:
a NumPy (3,) array is a 1-D array, as it always was, and a tuple is refused.
The annotation says which type, so a vec3 and a vec3d are never guessed from
the components (docs/design/decisions.md, "vectors, matrices and quaternions
by value: the parameter's annotation says so").

Such a value never reaches the compiler as one.  It travels the way a struct
passed by value does (tack._structs): the struct build of the kernel takes
one scalar parameter per component (``g·0``, ``g·1``, ``g·2``, each a NumPy
scalar of the component type) and opens with ``g = tack.vec3(g·0, g·1,
g·2)``, so the value is a local vector from the first line on.  Every
dialect already passes scalars by value and builds vectors from them, debug
mode runs the same build, the kernel cache keys it by the components' types
(a vec3 build takes four-byte floats, a vec3d build eight-byte ones), and
the adjoint sees locals built from scalar parameters: constants, as a struct
passed by value is.

The compiled kernel cannot tell a NumPy (3,) array meant as a value from one
meant as an array, so a kernel with such a parameter is made with
``by_value=True``: the extension hands every call of it to the package's
hook (``kcall_signature`` refuses to bind it), which binds the arguments
here and calls the build.  An array of the annotated type (``tack.zeros(n,
tack.vec3)``) passed to the parameter stays an array, as before.
"""

import weakref

from . import _core

_PARAMS = weakref.WeakKeyDictionary()  # function -> {parameter: dtype}
_SCALAR = {}  # dtype -> its components' NumPy dtype
_F64_INT = 2**53  # the ints a float64 holds exactly: np.float32(int) of a larger one may round twice
_F32_MAX, _F64_MAX = 3.4028234663852886e38, 1.7976931348623157e308  # past them (and NaN) the slow path


def _np():
    import numpy

    return numpy


def _annotation(fn, a):
    """An annotation's object: a string one (``from __future__ import annotations``) read in the
    function's globals, as the compiler reads the name; None where that fails."""
    if isinstance(a, str):
        try:
            import builtins

            return eval(a, dict(fn.__globals__), {"__builtins__": builtins})  # noqa: S307 (a dotted name)
        except Exception:
            return None
    return a


def is_value_type(dt):
    """A dtype taken by value when a parameter is annotated with it: a vector, matrix, quaternion
    or transform (a dtype of more than one component that is not complex)."""
    return isinstance(dt, _core.DType) and len(dt.shape) > 0


def params(fn):
    """{parameter name: dtype} of fn's parameters annotated with a vector, matrix, quaternion or
    transform type; {} for a struct build, whose parameters were expanded already."""
    try:
        hit = _PARAMS.get(fn)
    except TypeError:
        hit = None
    if hit is not None:
        return hit
    out = {}
    if not getattr(fn, "__tack_values_done__", False):
        import inspect

        try:
            names = list(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            names = []
        ann = getattr(fn, "__annotations__", None) or {}
        for name in names:
            if name in ann:
                dt = _annotation(fn, ann[name])
                if is_value_type(dt):
                    out[name] = dt
    try:
        _PARAMS[fn] = out
    except TypeError:
        pass
    return out


def kernel_params(kernel):
    """params() of a kernel object (compiled or a tack.PythonKernel)."""
    fn = getattr(kernel, "py_func", None)
    if fn is None:
        fn = getattr(kernel, "__wrapped__", None)
    return params(fn) if fn is not None else {}


def _scalar(dt):
    return _np().dtype(dt.numpy).base


def _show(v):
    r = repr(v)
    return r if len(r) <= 80 else r[:77] + "..."


def kind(who, name, dt, v):
    """How argument v for parameter `name` annotated `dt` travels: None (an array: the compiler
    checks its dtype against the annotation, as before), or ("vec", dt, components) with the
    components converted to dt's scalar type, in storage order.  A wrong shape or a component that
    is not a number is a TypeError naming the parameter and the value; an integer component that
    does not fit, an OverflowError."""
    if type(v) in (tuple, list) and len(v) == dt.shape[0] and len(dt.shape) == 1:
        sc = _SCALAR.get(dt)
        if sc is None:
            sc = _SCALAR[dt] = _scalar(dt)
        big = _F32_MAX if sc.itemsize == 4 else _F64_MAX
        if sc.kind == "f" and all((type(c) is float and -big <= c <= big)
                                  or (type(c) is int and -_F64_INT < c < _F64_INT) for c in v):
            return ("vec", dt, tuple(sc.type(c) for c in v))  # the common case, Python numbers: NumPy's rounding
    np = _np()
    nd = len(dt.shape)
    if isinstance(v, _core.Array):
        return None
    if isinstance(v, np.ndarray) and v.ndim > nd:  # an array of them, as NumPy holds it: the compiler's to judge
        return None
    if not isinstance(v, (tuple, list, np.ndarray)):
        if hasattr(v, "__dlpack__") or hasattr(v, "__cuda_array_interface__") or hasattr(v, "__array_interface__"):
            return None  # a framework's tensor: an array argument, as before
        raise TypeError(f"{who}: parameter '{name}' is annotated {dt.name}, a value of {_count(dt)}; pass a "
                        f"tuple, a list or a NumPy array of shape {dt.shape}, not {_show(v)}")
    try:
        a = np.asarray(v)
    except (ValueError, TypeError):
        a = None
    sc = _scalar(dt)
    if a is not None and a.dtype.kind == "O" and a.size and all(type(c) is int for c in a.reshape(-1)):
        # Python ints past 64 bits, which NumPy holds as objects: too big for any component type
        if sc.kind in "iu":
            raise OverflowError(f"{who}: a component of the {dt.name} passed for '{name}' does not fit in "
                                f"{sc.name}: {_show(v)}")
        a = np.array([float(c) for c in a.reshape(-1)]).reshape(a.shape)  # a float: as f64, then rounded
    if a is None or a.dtype.kind not in "biuf":
        raise TypeError(f"{who}: the {dt.name} passed for '{name}' has a component that is not a real number "
                        f"(bool, int or float): {_show(v)}")
    if a.shape != tuple(dt.shape):
        raise TypeError(f"{who}: parameter '{name}' is annotated {dt.name}, a value of {_count(dt)}, but the "
                        f"value passed has shape {a.shape}: {_show(v)}")
    if sc.kind in "iu":
        if a.dtype.kind == "f":
            raise TypeError(f"{who}: the {dt.name} passed for '{name}' has a float component, which its "
                            f"{sc.name} components would truncate: {_show(v)} (convert it first, np.round or "
                            f"int)")
        info = np.iinfo(sc)
        if a.size and (int(a.min()) < info.min or int(a.max()) > info.max):
            raise OverflowError(f"{who}: a component of the {dt.name} passed for '{name}' does not fit in "
                                f"{sc.name}: {_show(v)}")
    with np.errstate(over="ignore"):  # a float beyond f32 is inf, as an f32 annotation makes of a number
        comps = a.astype(sc).reshape(-1)
    return ("vec", dt, tuple(comps))


def _count(dt):
    n = 1
    for s in dt.shape:
        n *= s
    return f"{n} numbers ({dt.shape[0]}x{dt.shape[1]})" if len(dt.shape) == 2 else f"{n} numbers"
