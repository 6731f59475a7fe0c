"""Debug mode's calls: the intrinsics' handlers, and the @tack.func calls
of a kernel run as Python.

A call in the transformed kernel goes to ``_Ctx.call`` (tack._debug), which
looks the called object up in ``_CALLS``: the handlers here apply the
compiler's typing to the intrinsics that need it (the casts, ``len``,
``abs``, ``min``/``max``, ``pow``, the loops, the atomics, every math row,
the quaternions and transforms, tack.random's draws), registered once by
``_register_calls`` for each Python object a kernel may call them by.  A
@tack.func is run as its own transformed copy (``_run_func``), in the build
the compiler made for the call's argument types, so its locals keep the
types it gave them and its value the type it returns.

tack.random's draws are computed a block of counters at a time and kept
(``_random_draw``), since a draw through the @func's body as Python costs
milliseconds; the bits are the same (the random module's docstring).
"""

from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from . import _core
from ._debug_facts import _F32, _I64, _LOCAL_TYPES, _U64
from ._debug_transform import _transformed
from ._debug_values import _big_literal, _RBool, _RFloat, _RInt, _f2i, _is_bool, _value_dtype, _weak, _wrap64, convert

_U64 = np.dtype(np.uint64)

def _float(ctx, x=0.0):
    if isinstance(x, np.ndarray):
        return float(x)
    return convert(ctx.df, x)


def _seed_u64(ctx, x):
    """seed_u64(x) as a kernel converts it (lower_call.c, TK_IK_SEED): the
    u64 cast's conversion, so an integer seed wraps modulo 2**64 (-1 is
    2**64 - 1), with a float NaN a ValueError while checks are on (0 with
    checks=False).  Not the host's u64(), which refuses a negative Python
    int as NumPy's uint64 does."""
    if ctx.checks and isinstance(x, (float, np.floating)) and x != x:
        raise ValueError("cannot convert float NaN to integer")
    return convert(_U64, x)


def _int(ctx, x=0):
    if isinstance(x, (np.floating, float)):
        return _f2i(x, _I64)
    return convert(_I64, x)


def _bool(ctx, x=False):
    return np.bool_(bool(x))


def _len(ctx, a):
    return _RInt(len(a))


def _composite(a):
    """Whether debug-mode value `a` is a vector or matrix value (a 1-D array of 2 to 4 components, a 2-D one
    of 2 to 4 rows and columns), on which abs and the math rows act element-wise; not a quaternion or
    transform (tack._quat), whose rows are their own."""
    if not isinstance(a, np.ndarray) or isinstance(a, _QTYPES):
        return False
    return (a.ndim == 1 and 2 <= a.shape[0] <= 4) or (a.ndim == 2 and 2 <= a.shape[0] <= 4 and 2 <= a.shape[1] <= 4)


def elementwise(ctx, h, args):
    """Scalar handler `h` applied to each component of the vector or matrix arguments, the scalar arguments
    broadcast: what lower_call.c's elementwise compiles.  Each component goes through the handler a scalar
    goes through (not NumPy's array loop, whose SIMD kernels may round otherwise), so compiled and debug
    mode agree bit for bit wherever they do for scalars."""
    shape = next(a.shape for a in args if _composite(a))
    out = [h(ctx, *[a[idx] if isinstance(a, np.ndarray) else a for a in args]) for idx in np.ndindex(shape)]
    return np.array(out).reshape(shape)


def _abs(ctx, x):
    if _composite(x):
        return elementwise(ctx, _abs, (x,))
    w = _weak(x)
    if type(x) is _RInt or type(x) is _RBool:
        return _wrap64(abs(int(x)))
    if type(x) is _RFloat:
        r = _RFloat(abs(float(x)))
        r.tree = ("un", np.abs, x)
        return r
    if isinstance(x, np.bool_):
        return np.int64(x)
    return abs(x) if w is not None or not isinstance(x, np.generic) else np.abs(x)


def _minmax(pick):
    def f(ctx, *args):
        if len(args) == 1:
            args = tuple(args[0])
        if any(isinstance(a, np.ndarray) for a in args):
            return (min if pick == "<" else max)(*args)
        best = args[0]
        for a in args[1:]:
            if ctx.cmp(pick, a, best):  # Python's min/max: the first of equals, NaN as comparisons say
                best = a
        return _picked(ctx, args, best, pick)

    return f


def _np_minmax(pick):
    """np.minimum / np.maximum (lower_call.c's np_minmax): a where a < b (a > b) or a is NaN, else b."""
    def f(ctx, a, b):
        if _composite(a) or _composite(b):
            return elementwise(ctx, f, (a, b))
        a, b = _big_literal(a, b), _big_literal(b, a)
        t = ctx._promote(a, b)
        wa, wb = _weak(a), _weak(b)
        if t is None and max(wa[0], wb[0]) == 1:  # two Python ints: NumPy's int64 (lower_call.c's np_minmax)
            t = _U64 if any(type(v) is int and v >= 1 << 63 for v in (a, b)) else _I64
        if t is not None and t.kind in "iu":  # compared in the promoted type, into which a run-time
            for v in (a, b):                  # Python int must fit (NumPy 2's OverflowError), as compiled
                if type(v) is _RInt and ctx.checks:
                    ctx._fits(t, v)
            a, b = ctx._to(t, a), ctx._to(t, b)
        return _picked(ctx, (a, b), a if a != a or ctx.cmp(pick, a, b) else b)

    return f


def _picked(ctx, args, best, pick=None):
    """The value `best` of `args` that min/max (pick "<" or ">") picked, in the type the compiler
    gives the pick."""
    t = args[0]
    for a in args[1:]:  # the promoted type, as for + (of the types alone: a run-time int as 0,
        # since the value picked is converted as documented, not checked as an operand of +)
        t = ctx.bin("+", _RInt(0) if type(t) is _RInt else t, _RInt(0) if type(a) is _RInt else a) \
            if not (_is_bool(t) and _is_bool(a)) else t
    w = _weak(t)
    if w is None:
        return ctx._to(t.dtype, best) if _weak(best) is not None or best.dtype != t.dtype else best
    if w[1] and all(_weak(a) is not None for a in args):
        if type(t) is _RInt:
            return _RInt(int(best))
        if w[0] == 2 and any(type(a) is _RInt for a in args):
            return ctx._to(ctx.df, best)
        if w[0] == 2 and any(type(a) is _RFloat for a in args):
            # a weak float's pick: where it meets f32 the compiler compares and picks in f32 (weak_to_f32,
            # weak_locals.c), so it is recomputed there from the arguments' f32 values
            r = _RFloat(float(best))
            r.tree = ("math", _f32_pick(pick), tuple(args))
            return r
        return best
    return best


def _f32_pick(pick):
    """min (pick "<") or max (">") of f32 values as Python picks: the first of the best, by comparisons."""
    if pick is None:
        return None

    def f(*vals):
        best = vals[0]
        for v in vals[1:]:
            if (v < best) if pick == "<" else (v > best):
                best = v
        return best
    return f


def _pow(ctx, x, y):
    if _composite(x) or _composite(y):  # pow(v, w): lower_call.c's elementwise, a scalar pow a component
        return elementwise(ctx, _pow, (x, y))
    return ctx.bin("**", x, y)


def _square(ctx, x):
    """np.square: x * x in x's type, a bool as NumPy's int8 (lower_numpy.c)."""
    if _composite(x):
        return elementwise(ctx, _square, (x,))
    if _is_bool(x):
        x = np.int8(bool(x))
    return ctx.bin("*", x, x)


def _power(ctx, x, y):
    """np.power: x ** y (an integer to a negative integer literal is refused when the kernel compiles)."""
    if _composite(x) or _composite(y):
        return elementwise(ctx, _power, (x, y))
    return ctx.bin("**", x, y)


def _power_of_ten(n):
    """NumPy's power_of_ten (PyArray_Round), as lower_numpy.c has it."""
    if n < 9:
        return float(10 ** n)
    r = 1e9
    for _ in range(n - 9):
        r *= 10.0
    return r


_ROUND_RANGE = "round() of an infinity or of a float beyond int64's range: a kernel's int is an int64"


def _round(python):
    """round(x[, d]) (python) and np.round(x[, d]) as lower_numpy.c compiles them: NumPy's algorithm in the
    float's type, an integer kept; Python's round(x) an int64 whose NaN, infinity or overflow raises."""
    def h(ctx, x, d=None):
        if _composite(x):
            return elementwise(ctx, h, (x,) if d is None else (x, d))
        if _is_bool(x):
            return np.float32(bool(x))  # NumPy's float16 of it, an f32 value as a kernel's f16 is
        if _weak(x) is not None and _weak(x)[0] <= 1 or isinstance(x, np.integer):
            return convert(_I64, x) if python and d is None and isinstance(x, np.integer) else x
        t = ctx.df if _weak(x) is not None else x.dtype
        x = ctx._to(t, x)
        k = 0 if d is None else int(d)
        with np.errstate(all="ignore"):
            if k == 0:
                r = np.rint(x)
            else:
                f = t.type(_power_of_ten(abs(k)))
                r = np.rint(x * f) / f if k > 0 else np.rint(x / f) * f
        if not python or d is not None:
            return r
        if ctx.checks:
            if r != r:
                raise ValueError(f"cannot convert float NaN to integer ({ctx.site()})")
            if not -2.0 ** 63 <= r < 2.0 ** 63:
                raise OverflowError(f"{_ROUND_RANGE} ({ctx.site()})")
        return _f2i(r, _I64)
    return h


def _atomic(op):
    """tack.atomic_<op>(a, idx, v) -- atomic_cas(a, idx, expected, v) -- as the
    compiled kernel does it: the values converted to the element's type, the
    old element returned; exch and cas move and compare a float's bits."""
    from ._intrinsics import _same_bits  # the Python-side tack.atomic_cas's comparison

    def f(ctx, a, idx, *vals):
        t = a.dtype
        old = ctx.load(a, idx)
        if isinstance(old, np.ndarray):  # a vector or matrix element (the compiler allows add, sub, min, max)
            ctx.store(a, idx, vector_update(op, t, old, vals[-1]))
            return old
        vals = [convert(t, x) for x in vals]
        v = vals[-1]
        if op == "+":
            new = ctx._compute("+", t, old, v)
        elif op == "-":
            new = ctx._compute("-", t, old, v)
        elif op == "min":
            new = v if v < old else old
        elif op == "max":
            new = v if v > old else old
        elif op == "exch":
            new = v
        elif op == "and":
            new = old & v
        elif op == "or":
            new = old | v
        elif op == "xor":
            new = old ^ v
        else:  # cas: by the bits (-0.0 is not 0.0, a NaN matches the same NaN)
            new = v if _same_bits(old, vals[0]) else old
        a[idx] = new
        return old

    return f


def vector_update(op, t, old, v):
    """The new value of a vector or matrix element `old` (components of dtype t) that an atomic
    add, sub, min or max of v gives, as the compiled kernel's atomic per component does (the
    value converted to the components' type first; min and max keep the old component where v's
    is not below / above it, so a NaN stores nothing) -- one component after another, as debug
    mode runs one thread at a time."""
    v = v.astype(t) if isinstance(v, np.ndarray) else convert(t, v)
    if op == "+":
        return old + v
    if op == "-":
        return old - v
    return np.where(v < old, v, old) if op == "min" else np.where(v > old, v, old)


def _ndrange(ctx, *axes):
    from ._intrinsics import ndrange

    for idx in ndrange(*axes):
        yield tuple(_RInt(int(v)) for v in idx)


def _independent(ctx, loop):
    return loop


def _range(ctx, *args):
    return ctx.range(*args)


_CALLS = {}
_QTYPES = ()  # tack._quat's Quat and Transform, once _register_calls has run


def _quat_calls(K):
    """Debug mode's quaternions and transforms (tack._quat): the rows' NumPy
    meanings, whose values become Quat / Transform values (``*`` their
    algebra's) or vector views, and the dtype calls tack.quat(x, y, z, w),
    tack.transform(p, q) in the element's precision."""
    from . import _quat as Q

    global _QTYPES
    _QTYPES = (Q.Quat, Q.Transform)
    from ._kernels import _vector_view_type

    vec = _vector_view_type()

    def wrap(f, kind):
        def h(ctx, *args):
            r = np.asarray(f(*[np.asarray(a) if isinstance(a, np.ndarray) else a for a in args]))
            return Q.as_quat(r) if kind == "q" else Q.as_transform(r) if kind == "t" else \
                r.view(vec) if kind == "v" else r
        return h

    calls = {"quat_from_axis_angle": "q", "quat_from_matrix": "q", "quat_to_matrix": "m", "quat_inverse": "q",
             "quat_rotate": "v", "quat_rotate_inv": "v", "quat_slerp": "q", "transform_point": "v",
             "transform_vector": "v", "transform_inverse": "t"}
    by_name = {name: wrap(K._PYTHON[name], kind) for name, kind in calls.items()}
    by_name["quat_identity"] = lambda ctx: Q.as_quat(np.array([0, 0, 0, 1], ctx.df))

    def normalize(ctx, v):
        return Q.as_quat(Q.normalize(np.asarray(v))) if isinstance(v, Q.Quat) else K.normalize(v)

    by_name["normalize"] = normalize

    def make(dt, kind):
        t = np.dtype(dt.numpy).base

        def f(ctx, *args):
            if len(args) == 1 and isinstance(args[0], _QTYPES):  # the other precision
                r = np.asarray(args[0]).astype(t)
            elif kind == "q":
                r = np.array([convert(t, a) for a in args], t)
            else:
                r = Q.xform(np.asarray(args[0]).astype(t), np.asarray(args[1]).astype(t))
            return Q.as_quat(r) if kind == "q" else Q.as_transform(r)
        return f

    for dt, kind in ((_core.quat, "q"), (_core.quatd, "q"), (_core.transform, "t"), (_core.transformd, "t")):
        _CALLS[dt] = make(dt, kind)
    return by_name


# tack.random's draws in debug mode: a draw of (seed, counter) through the
# @func's body as Python costs some 1-2 ms (Philox's ten rounds and the
# normals' log and cos, each operation a NumPy scalar's).  The same bodies run
# on NumPy arrays of counters with the same bits (the module's docstring), so
# a draw computes the whole aligned block of _RANDOM_BLOCK counters around its
# own at once (about 0.2 us a draw) and keeps it: the loop's next draws are a lookup.  Only for the
# plain case, integer seeds and counters in [0, 2**63) (a float seed, a
# negative or bool value go through the body as written).
_RANDOM_BLOCK = 4096
_RANDOM_KEEP = 32
_random_blocks = {}


_PLAIN_INTS = frozenset()  # int, _RInt and NumPy's integer types, once _random_calls has run
_PY_INTS = frozenset()


def _random_draw(f, name):
    block = name == "block"

    def h(ctx, *args, **kwargs):
        if len(args) == 2 and not kwargs:
            seed, counter = args
            if type(seed) in _PLAIN_INTS and type(counter) in _PLAIN_INTS and 0 <= seed < 2**63 \
                    and 0 <= counter < 2**63:
                if type(counter) not in _PY_INTS:  # a NumPy integer: its value as a Python int
                    counter = int(counter)
                if type(seed) not in _PY_INTS:
                    seed = int(seed)
                k = counter % _RANDOM_BLOCK
                key = (name, seed, counter - k)
                got = _random_blocks.get(key)
                if got is None:
                    if len(_random_blocks) >= _RANDOM_KEEP:
                        _random_blocks.clear()
                    got = f(np.uint64(seed), np.arange(counter - k, counter - k + _RANDOM_BLOCK, dtype=np.uint64))
                    _random_blocks[key] = got
                return (got[0][k], got[1][k], got[2][k], got[3][k]) if block else got[k]
        return _run_func(ctx, f, args, kwargs)
    return h


def _random_calls():
    from . import random as R

    global _PLAIN_INTS, _PY_INTS
    _PY_INTS = frozenset([int, _RInt])
    _PLAIN_INTS = _PY_INTS | frozenset(np.dtype(c).type for c in "bhilqBHILQ")
    for name in ("uniform", "uniform_f32", "normal", "normal_f32", "block"):
        f = getattr(R, name)
        _CALLS[f] = _random_draw(f, name)


def float_power(a, b):
    """``a ** b`` of two NumPy floats of one type (float32 or float64), as the
    compiled kernel's tk_pow_f32 / tk_pow_f64 (dialect_c.c) computes it: an
    exponent of 2, -1 or 0.5 is NumPy's array power -- ``a * a``, ``1 / a``,
    the square root (with pow's +0.0 for -0.0 and +inf for -inf) -- correctly
    rounded; any other exponent is the C library's pow or powf (NumPy's scalar
    operator calls it)."""
    if b == 2:
        return a * a
    if b == -1:
        return type(a)(1) / a
    if b == 0.5:
        return abs(a) if a == 0 or np.isinf(a) else np.sqrt(a)
    return a ** b


def _float_pow(x, y):
    """math.pow on the two NumPy floats ctx.math gives it: ``**`` as it is
    computed here (float_power).  Not np.power's ufunc, which gives
    -0.0 for -0.0 and NaN for -inf to the exponent 0.5 (pow's +0.0 and +inf),
    and on an AVX-512 machine other bits for other exponents (SVML)."""
    if type(x) is type(y) and type(x) in (np.float32, np.float64):
        return float_power(x, y)
    return operator.pow(x, y)


def _math_handler(fn):
    return lambda ctx, *args: ctx.math(fn, *args)


_NUMPY_KEEPS_INTS = frozenset(("floor", "ceil", "trunc"))
_PREDICATES = frozenset(("isnan", "isinf", "isfinite"))


def _numpy_promoted(ctx, args):
    """The type NumPy's spelling of a math row promotes its arguments to, as lower_call.c's numpy_math
    does (ty_promote): a Python int or float takes the other argument's type (np.hypot(a32[i], 7) is
    an int32's, so f64; a Python int meeting a bool is i64), and arguments that are all Python numbers
    give None: they keep Tack's rule (the default float)."""
    v = args[0]
    for a in args[1:]:
        t = ctx._promote(v, a)
        if t is not None:
            v = t.type(0)
    if _weak(v) is not None or not isinstance(v, np.generic):
        return None
    return v.dtype


def _int_fmod(ctx, t, x, y):
    """np.fmod of integers, NumPy's integer loop (lower_call.c's int_fmod): Python's remainder in t,
    with `%`'s checks, less y where it and the dividend differ in sign -- C's remainder."""
    r = ctx.bin("%", x, y)
    if t.kind == "i" and r != 0 and (r < 0) != (ctx._to(t, x) < 0):
        r = ctx.bin("-", r, ctx._to(t, y))
    return r


def _numpy_math_handler(name, fn):
    """NumPy's spelling of math row `name` (np.sqrt): lower_call.c's numpy_math types a fixed-width integer
    or bool argument as NumPy does -- floor, ceil and trunc keep it, sign gives its sign in its type, the
    others compute in NumPy's float for it (f16 for 8-bit ints and bool, f32 for 16-bit, f64 for wider)
    where tack.sqrt takes the default float; floor, ceil and trunc keep a Python int too."""
    def h(ctx, *args):
        if any(_composite(a) for a in args):
            return elementwise(ctx, h, args)
        if name == "abs" and len(args) == 1:  # lower_call.c's numpy_math: a bool as it is, else abs_of
            if isinstance(args[0], np.bool_):
                return args[0]
            return _abs(ctx, args[0])  # of a Python number abs's: an int stays a (run-time) Python int
        if name in _NUMPY_KEEPS_INTS and (type(args[0]) in (int, _RInt, bool) or _is_bool(args[0])
                                          or isinstance(args[0], np.integer)):
            return args[0]
        t = _numpy_promoted(ctx, args)
        if t is not None:
            if t.kind in "iub":
                if name == "sign":
                    return np.sign(convert(t, args[0]))
                if name == "fmod" and t.kind in "iu":
                    return _int_fmod(ctx, t, *args)
                if name == "fmod" and t.kind == "b":  # NumPy's loop for bools is int8's
                    return _int_fmod(ctx, np.dtype(np.int8), *[convert(np.dtype(np.int8), a) for a in args])
                if name not in _PREDICATES:  # isnan(int): False in any float
                    bits = 8 if t.kind == "b" else t.itemsize * 8
                    f = np.dtype(np.float16 if bits <= 8 else np.float32 if bits == 16 else np.float64)
                    args = [convert(f, a) for a in args]
                    if bits <= 8:  # f16 is a storage type: its values compute in f32, as compiled
                        args = [np.float32(a) for a in args]
        return ctx.math(fn, *args)
    return h


def _register_calls():
    """The handlers of the intrinsics, by the objects a kernel calls them by.

    The rows of the compiler's table that need the compiler's typing here
    have a handler by name: the casts, len, abs, min/max, pow, the loops, the
    atomics, and every math row (NumPy's function of _intrinsics._MATH, or
    _mathlib's where NumPy has none, in the type the compiler gives it).  Each handler is registered for the row's
    Python object (_intrinsics._PYTHON), the math module's function of that name
    and NumPy's spelling (_intrinsics._NUMPY_MATH); math.pow is C's pow (_float_pow), a
    float pow.  The other rows (print, complex, dot ...) run their
    Python object as it is."""
    from . import _intrinsics as K

    by_name = {"float": _float, "int": _int, "bool": _bool, "len": _len, "abs": _abs, "min": _minmax("<"),
               "max": _minmax(">"), "pow": _pow, "range": _range, "ndrange": _ndrange,
               "independent": _independent, "shared": lambda ctx, shape, dtype: ctx.shared(shape, dtype),
               "atomic_add": _atomic("+"), "atomic_sub": _atomic("-"),
               "atomic_min": _atomic("min"), "atomic_max": _atomic("max"), "atomic_exch": _atomic("exch"),
               "atomic_and": _atomic("and"), "atomic_or": _atomic("or"), "atomic_xor": _atomic("xor"),
               "atomic_cas": _atomic("cas"), "seed_u64": _seed_u64}
    for name in K._MATH:
        by_name.setdefault(name, _math_handler(K._math_impl(name)))
    by_name.update(_quat_calls(K))
    for name, obj in K._PYTHON.items():
        if name in by_name:
            _CALLS[obj] = by_name[name]
    _CALLS[K.shared] = by_name["shared"]  # not a row of the table: a local-array maker, as np.zeros
    for name in K._MATH:
        f = getattr(math, name, None)
        if f is not None and f not in _CALLS:
            _CALLS[f] = by_name[name]
    for npname, name in K._NUMPY_MATH.items():
        if name in K._MATH:
            _CALLS.setdefault(getattr(np, npname), _numpy_math_handler(name, K._math_impl(name)))
    _CALLS.setdefault(np.absolute, _numpy_math_handler("abs", np.absolute))  # np.abs: not a math row
    _CALLS[math.pow] = _math_handler(_float_pow)
    _CALLS[np.minimum], _CALLS[np.maximum] = _np_minmax("<"), _np_minmax(">")
    _CALLS[builtins.round] = _round(True)  # lower_numpy.c's spellings
    _CALLS[np.round], _CALLS[np.around] = _round(False), _round(False)
    _CALLS[np.square], _CALLS[np.power] = _square, _power
    _random_calls()


def _instantiate(ctx, fn, is_kernel):
    factory, free, _ = _transformed(fn, is_kernel, ctx.races is not None)
    cells = fn.__closure__ or ()
    return factory(ctx, *[c.cell_contents for c in cells])


_TYPE_NAMES = None


def _type_names(v):
    """The names the IR may give the type of a value passed to a @tack.func
    (a Python float parameter may have been made f32: weak_locals.c)."""
    global _TYPE_NAMES
    if _TYPE_NAMES is None:
        _TYPE_NAMES = {dt: name for name, dt in _LOCAL_TYPES.items()}
    if isinstance(v, np.ndarray):
        dt = _core._dtype(v.dtype)
        return (f"array[{dt.name}, {v.ndim}-D]",) + _composite_names(v, dt.name)
    t = type(v)
    if t is _RInt or t is int:
        return ("int (Python)",)
    if t is _RFloat or t is float:
        return ("float (Python)", "f32")
    if t is bool:
        return ("bool (Python)",)
    if t is complex:
        return ("complex (Python)", "complex64")
    if isinstance(v, np.generic):
        name = _TYPE_NAMES.get(v.dtype)
        if name is None and (v.dtype == np.float16 or v.dtype.kind == "V" and v.dtype.name == "bfloat16"):
            name = "f32"  # the storage types' values are f32 in a kernel (_value_dtype)
        return (name,) if name else ()
    return ()


def _composite_names(v, scalar):
    """The names a NumPy array in debug mode may stand for in the IR besides an array of its own
    dtype: a vector, matrix, quaternion or transform value (``vec3``, ``mat33d``, ``quat``) when its
    shape is one, or an array of them (``array[vec3, 1-D]``).  Without them no build of a func given
    a vector value matched, and the func ran with its caller's local types."""
    from . import _quat as Q

    vs = {"f32": "", "f64": "d", "i32": "i"}.get(scalar)
    names = []
    if vs is None:
        return ()

    def add(name, rank):
        names.append(name if rank == 0 else f"array[{name}, {rank}-D]")

    if scalar != "i32":
        if isinstance(v, Q.Quat) and v.shape[-1:] == (4,):
            add("quat" + vs, v.ndim - 1)
        if isinstance(v, Q.Transform) and v.shape[-1:] == (7,):
            add("transform" + vs, v.ndim - 1)
        if v.ndim >= 2 and v.shape[-1] == v.shape[-2] and 2 <= v.shape[-1] <= 4:
            add(f"mat{v.shape[-1]}{v.shape[-1]}{vs}", v.ndim - 2)
    if v.ndim >= 1 and 2 <= v.shape[-1] <= 4:
        add(f"vec{v.shape[-1]}{vs}", v.ndim - 1)
    return tuple(names)


def _func_frame(ctx, f, fn, args):
    """The transformed copy of @tack.func f for a call with these arguments,
    the type its value is converted to (None: as it comes) and the names of its
    parameters' types (None: no build known): the build the
    compiler made for their types, whose locals then keep the types it gave
    them (one type per local, as compiled, not the type of whatever value
    reaches it), and whose value has the type it returns (a Python float
    made f32 where every call meets f32: weak_locals.c).  The func never
    runs with another's types: a call that no build matches is a TypeError
    naming the types, and so is a call of one of two funcs made by one `def`
    whose builds for these types differ (nothing in the IR tells them apart)."""
    builds = ctx.funcs.get(fn.__name__, ())
    if len(builds) > 1:
        # the builds of this func, not of another of the same name: those whose statements lie
        # within its source lines (the IR names funcs, not the Python objects they came from)
        code = fn.__code__
        last = max((ln for _, _, ln in code.co_lines() if ln is not None), default=code.co_firstlineno)
        own = [b for b in builds if b[5] is None or code.co_firstlineno <= b[5][0] and b[5][1] <= last]
        builds = own or builds
    build = None
    if len(builds) == 1:
        build = builds[0]
    elif builds:
        names = [_type_names(a) for a in args]
        fits = [b for b in builds if len(b[0]) == len(names) and all(p in n for p, n in zip(b[0], names))]
        if fits:
            build = fits[0]
            if any(b[1:5] != build[1:5] for b in fits[1:]):
                # funcs made by one `def` (a closure made twice) whose captured values give their
                # locals other types: the IR does not say which build is which object's
                raise TypeError(f"debug mode cannot tell apart the builds of the @tack.funcs named {fn.__name__} "
                                f"made from one definition (line {fn.__code__.co_firstlineno}) whose locals have "
                                f"other types: give them their own names (set __name__) or run compiled")
        else:
            # Running the body with no build's types would give its locals whatever types the
            # caller's locals of the same names have (an f32 truncated into a caller's i32 `x`):
            # a wrong number with no word.  No build matching is a fault of debug mode's typing.
            got = ", ".join(n[0] if n else type(a).__name__ for n, a in zip(names, args))
            have = "; ".join("(" + ", ".join(b[0]) + ")" for b in builds)
            raise TypeError(f"debug mode: no build of @tack.func {fn.__name__} takes arguments of types ({got}); "
                            f"the compiler built it for {have} (a fault of debug mode: please report it, "
                            f"and run compiled meanwhile)")
    key = (fn, id(build))
    frame = ctx._frames.get(key)
    if frame is None:
        sub = ctx
        if build is not None:
            import copy

            sub = copy.copy(ctx)
            sub.local_types, sub.choices, sub.atomic_lines = build[1], build[2], build[3]
            sub._frames = ctx._frames
        frame = ctx._frames[key] = (sub, _instantiate(sub, fn, False))
    return frame[1], (build[4] if build is not None else None), (build[0] if build is not None else None)


def _run_func(ctx, f, args, kwargs):
    """A @tack.func called from a kernel run as Python: its transformed body,
    its annotations applied as the compiler applies them."""
    import inspect

    fn = f.__wrapped__
    ann = fn.__annotations__
    if ann or kwargs:
        bound = inspect.signature(fn).bind(*args, **kwargs)
        for name, v in bound.arguments.items():
            if name in ann and isinstance(ann[name], _core.DType) and not ann[name].shape:
                bound.arguments[name] = convert(_value_dtype(ann[name]), v)
        args, kwargs = bound.args, bound.kwargs
    g, ret, ptypes = _func_frame(ctx, f, fn, args)
    if ptypes is not None:  # a vector, matrix, quaternion or transform argument is a value the func owns, as
        # compiled, not a view of the caller's local (which `v[1] = s` in the func would have set)
        args = tuple(a.copy() if isinstance(a, np.ndarray) and k < len(ptypes) and not ptypes[k].startswith("array[")
                     else a for k, a in enumerate(args))
    r = g(*args, **kwargs)
    rt = ann.get("return")
    if isinstance(rt, _core.DType) and not rt.shape:
        r = convert(_value_dtype(rt), r)
    elif ret == _F32 and (w := _weak(r)) is not None and w[0] == 2:  # a Python float the compiler returns as f32
        r = convert(ret, r)
    return r
