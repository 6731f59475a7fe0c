"""Debug mode's typed execution: a kernel run as Python computes in the types
the compiled kernel computes in.

``@tack.kernel(jit=False)`` (or ``TACK_DISABLE_JIT=1``) runs a kernel as the
Python function it is, serially, so that ``print()`` and pdb work.  Run as
written, that function would be a different language: Python floats are
doubles, NumPy adds two bools as a logical or, ``int(nan)`` raises,
``math.sqrt(-1.0)`` raises, and an int8 store of 300 raises.  Two things
make it the same language (docs/design/decisions.md, "Debug mode runs the
same language"):

1. Before it runs, ``PythonKernel`` asks the compiler for the kernel's typed
   IR for the call's signature (``Kernel.ir``: the front end, type checks,
   lowering and the race check, without a C compiler), so whatever the
   compiler refuses (``tack.CompileError``) or warns about (``RaceWarning``)
   is raised or warned identically.  The IR also gives the types of the
   kernel's locals, the parameters it writes and the lines whose ``+=`` is
   atomic.

2. The function runs as a transformed copy of its own AST (``ast`` module):
   every arithmetic operator, comparison, subscript, store, augmented
   assignment, call and ``for`` loop is routed through the helpers of a
   ``_Ctx`` that apply Tack's type rule (docs/language.md, "The type of every
   operation") to the operands' run-time values:

   - a NumPy scalar is a concrete value of its dtype (array elements are,
     and f16 elements load as f32, as in a kernel; bf16 arrays are their
     bits, tack._bf16's BF16Bits, converted where loaded and stored);
   - a Python int, float, bool or complex written in the kernel is a weak
     *literal*: arithmetic on literals alone is Python's own;
   - the loop variable, a shape, ``len()`` and a Python int argument are
     ``_RInt``: weak integers known at run time (64-bit, wrapping), which
     give the default float where they meet a float, are divided or given
     to math;
   - a Python float argument is an ``_RFloat``: weak, carried in f64, and
     arithmetic on it keeps a small expression tree so that where it meets
     f32 it is recomputed in f32, as the compiler computes it.

   Stores convert as the compiled kernel does (floats to integers saturate,
   NaN is 0; integers wrap), and a local is converted to the type the
   compiler gave it where that type is one type for the name.  The checks a
   compiled kernel makes raise the same exceptions here, and only those:
   IndexError, ZeroDivisionError for integer ``//`` and ``%``, ValueError
   for a negative integer power, AssertionError (the ``assert`` statement
   itself), each only while ``checks=True``.

The transformed function keeps the original file name and line numbers, so
a traceback and pdb show the kernel's own source.

This module is the operators (``_Ctx``, which the transformed copy calls)
and the run; the rest of debug mode is a module per concern: the IR's facts
and the signature check (tack._debug_facts), the AST rewrite
(tack._debug_transform), the run-time values and conversions
(tack._debug_values), the built-in and @tack.func calls (tack._debug_calls)
and the race detector's checks (tack._debug_races).
"""

from __future__ import annotations

import ast
import builtins
import operator
import os
import re
import sys
import weakref

import numpy as np

from . import _bf16, _core, _linalg
from ._debug_facts import (  # noqa: F401 (check, ir_facts, ...: tack._kernels finds them here)
    _BOOL, _C64, _C128, _F32, _F64, _I64, _LOCAL_TYPES, _U64, check, check_int, ir_facts, without_breakpoints)
from ._debug_transform import _AST_BIN, _CTX, _Transform, _c, _transformed  # noqa: F401
from . import _debug_calls
from ._debug_calls import float_power
from ._debug_calls import (  # noqa: F401 (_register_calls: tack._kernels finds it here)
    _CALLS, _instantiate, _register_calls, _run_func)
from ._debug_values import (  # noqa: F401 (convert: tack._array finds it here)
    _BIG, _big_literal, _RANK, _RBool, _RFloat, _RInt, _half_round, _int_to, _is_bool, _tree_f32, _value_dtype, _weak, _wrap64, convert)


# -------------------------------------------------------------- operators
_FLOORDIV = np.floor_divide
_MOD = np.remainder

_OPS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "@": operator.matmul,
    "<<": operator.lshift, ">>": operator.rshift, "&": operator.and_, "|": operator.or_, "^": operator.xor,
}
_NPOPS = {
    "+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide, "//": np.floor_divide,
    "%": np.remainder, "**": np.power, "<<": np.left_shift, ">>": np.right_shift, "&": np.bitwise_and,
    "|": np.bitwise_or, "^": np.bitwise_xor,
}
_CMPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
         ">=": operator.ge}
_ARITH = {"+", "-", "*", "/", "//", "%", "**"}

_FLOAT_OPS = frozenset(("+", "-", "*", "/", "//", "%", "**"))
_INT_OPS = frozenset(("+", "-", "*", "&", "|", "^"))
_SAME_TYPE_OPS = {np.float32: _FLOAT_OPS, np.float64: _FLOAT_OPS, np.int8: _INT_OPS, np.int16: _INT_OPS,
                  np.int32: _INT_OPS, np.int64: _INT_OPS, np.uint8: _INT_OPS, np.uint16: _INT_OPS,
                  np.uint32: _INT_OPS, np.uint64: _INT_OPS}


def _np_f32(op):
    f = _NPOPS[op]
    return lambda a, b: f(np.float32(a), np.float32(b))


_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_NUMPY = os.path.dirname(os.path.abspath(np.__file__)) + os.sep


def _user_frame():
    """The innermost frame of the kernel's or a @tack.func's own code (the
    transformed copies keep their file and line numbers): the first frame
    up the stack that is neither Tack's nor NumPy's."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith((_HERE, _NUMPY)):
        f = f.f_back
    return f


class _Ctx:
    """The helpers a transformed kernel calls, for one kernel's options."""

    def __init__(self, default_float, checks, where):
        self.df = np.dtype(default_float.numpy if hasattr(default_float, "numpy") else default_float)
        self.checks = checks
        self.where = where  # the kernel's __name__, as the compiled kernel's messages call it
        self.local_types = {}
        self.atomic_lines = frozenset()
        self.choices = {}  # (line, col, k) -> the type of an and/or operand or an `x if c else y`
        self.funcs = {}  # a @tack.func's name -> its builds: [(param types, local types, choices, atomic lines, return dtype, lines)]
        self._types = {}
        self._frames = {}  # (function, build) -> (its context, its transformed copy)
        self.races = None  # check_races: the call's race detector (tack._debug_races)
        # the arrays of the call, its arguments and the local arrays the kernel made (np.zeros ...,
        # tack.shared), by id: a 2-D one is not a matrix value, nor a 1-D one a vector, in the words of
        # an index error (_index_error)
        self._arrays = weakref.WeakValueDictionary()

    def site(self, frame=None):
        """Where a failed check is, in the compiled kernel's words (tk_site_error,
        src/runtime/program.c): "kernel K, FILE:LINE", or "function F called
        from kernel K, FILE:LINE" inside a @tack.func."""
        from ._source import shown_file

        f = frame or _user_frame()
        if f is None:
            return f"kernel {self.where}"
        at = f"{shown_file(f.f_code.co_filename)}:{f.f_lineno}"
        if f.f_code.co_name != self.where:
            return f"function {f.f_code.co_name} called from kernel {self.where}, {at}"
        return f"kernel {self.where}, {at}"

    def _index_error(self, e, a, idx):
        """NumPy's IndexError for a[idx], with the array and the site the
        compiled kernel's message names; a vector value's component, in the
        compiled kernel's words for it."""
        f = _user_frame()
        local_array = self._arrays.get(id(a)) is a
        if type(a).__name__ == "VectorView" and a.ndim == 1 and isinstance(idx, (int, np.integer)) \
                and not local_array:
            return IndexError(f"index {int(idx)} is out of range for a vector of length {a.shape[0]} ({self.site(f)})")
        if _is_matrix(a) and not local_array:  # m[i, j], m[i]: the axis out of range, as the compiled check says
            ks = idx if type(idx) is tuple else (idx,)
            for axis, k in enumerate(ks):
                if isinstance(k, (int, np.integer)) and not -a.shape[axis] <= k < a.shape[axis]:
                    name = f"mat{a.shape[0]}{a.shape[1]}" + ("d" if a.dtype == np.float64 else "")
                    return IndexError(f"index {int(k)} is out of range for axis {axis} of a {name} ({self.site(f)})")
        name = next((k for k, v in f.f_locals.items() if v is a), "?") if f is not None else "?"
        return IndexError(f"{e} (array '{name}', {self.site(f)})")

    # -- types
    def _promote(self, x, y):
        """The dtype x op y computes in, or None when both are weak (wx, wy
        then say how)."""
        wx, wy = _weak(x), _weak(y)
        if wx is None and wy is None:
            a, b = x.dtype, y.dtype
            if a.itemsize == 2 and (a.kind == "f" or a.name == "bfloat16"):
                a = _F32
            if b.itemsize == 2 and (b.kind == "f" or b.name == "bfloat16"):
                b = _F32
            return np.promote_types(a, b)
        if wx is not None and wy is not None:
            return None
        w, c = (wx, y.dtype) if wx is not None else (wy, x.dtype)
        if c.itemsize == 2 and (c.kind == "f" or c.name == "bfloat16"):
            c = _F32
        cr = _RANK[c.kind]
        if w[0] <= cr:
            return _I64 if (w[0] == 1 and cr == 0) else c
        if w[0] == 1:
            return _I64
        if w[0] == 3:
            return _C64 if cr == 2 and c.itemsize <= 4 else _C128
        return self.df

    def _to(self, t, v):
        if type(v) is _RFloat and t == _F32:
            return _tree_f32(v)
        if _weak(v) is None:
            return v.astype(t) if v.dtype != t else v
        if t.kind in "iu" and type(v) is not float:
            return _int_to(int(v), t)
        return t.type(v)

    # -- binary operators
    def bin(self, op, x, y):
        tx = type(x)
        if tx is type(y) and op in _SAME_TYPE_OPS.get(tx, ()):  # one NumPy type: NumPy's own operator
            return _OPS[op](x, y)
        if op == "@":  # summed in the kernel's order, not by NumPy's BLAS
            return _linalg.matmul(x, y)
        if (type(x) is int and x >= _BIG) != (type(y) is int and y >= _BIG):
            x, y = _big_literal(x, y), _big_literal(y, x)
        xa, ya = isinstance(x, np.ndarray), isinstance(y, np.ndarray)
        if xa != ya and op in _ARITH:
            # a vector, matrix or quaternion value and a number: the compiled kernel converts the
            # number to the components' type first (vec3 * f64 is a vec3 computed in f32), where
            # NumPy would promote the components (f64) and the store round them a second time
            if xa:
                if type(y) is _RInt and x.dtype.kind in "iu" and self.checks:
                    self._fits(x.dtype, y)
                y = convert(x.dtype, y)
            else:
                if type(x) is _RInt and y.dtype.kind in "iu" and self.checks:
                    self._fits(y.dtype, x)
                x = convert(y.dtype, x)
        if xa or ya:
            if op in ("//", "%", "**"):
                # each component the scalar operator, as compiled (lower_expr.c, componentwise): its
                # checks (an integer zero divisor, a negative integer exponent) and its rounding, where
                # NumPy's array operator gives 0 with a warning, or takes a square root for ** 0.5
                v = x if xa else y
                r = [self.bin(op, x.flat[k] if xa else x, y.flat[k] if ya else y) for k in range(v.size)]
                return _vector_value(np.array(r).reshape(v.shape))
            return _OPS[op](x, y)
        wx, wy = _weak(x), _weak(y)
        if (wx is None and not isinstance(x, np.generic)) or (wy is None and not isinstance(y, np.generic)):
            return _OPS[op](x, y)
        arith = op in _ARITH
        if (arith or op in ("<<", ">>")) and _is_bool(x) and _is_bool(y):
            # arithmetic on two bools is arithmetic on ints, as in Python
            x = (_RInt(int(x)) if wx[1] else int(x)) if wx else np.int64(x)
            y = (_RInt(int(y)) if wy[1] else int(y)) if wy else np.int64(y)
            wx, wy = _weak(x), _weak(y)
        if wx is not None and wy is not None:
            return self._weak_bin(op, x, y, wx, wy)
        key = (tx, type(y))
        t = self._types.get(key)
        if t is None:
            t = self._types[key] = self._promote(x, y)  # it depends on the types alone
        if arith and t.kind == "b":
            t = _I64
        if op == "/" and t.kind in "iub":
            t = self.df
        if op == "**" and t.kind in "iu" and wy is not None and not wy[1] and y < 0:
            t = self.df  # 2 ** -1 is 0.5, as in Python
        if t.kind in "iu" and self.checks and (tx is _RInt or type(y) is _RInt) and t != _I64:
            self._fits(t, x if tx is _RInt else y)
        return self._compute(op, t, self._to(t, x), self._to(t, y))

    def _fits(self, t, v):
        """A run-time Python int meeting the integer type t in arithmetic: NumPy 2's
        OverflowError where it does not fit, in the compiled check's words (lower_pyint.c,
        tk_site_error): the kernel, or the function and its kernel, and the file and line."""
        info = np.iinfo(t)
        if not info.min <= v <= info.max:
            raise OverflowError(f"Python integer {int(v)} out of bounds for {t.name} ({self.site()}); a Python "
                                f"int takes the type of the {t.name} value it meets in arithmetic, as in NumPy 2: "
                                f"widen that operand (tack.i64(...)) for a wider result")

    def _compute(self, op, t, a, b):
        if t.kind in "iu":
            if op in ("//", "%") and b == 0:
                if self.checks:
                    raise ZeroDivisionError(f"integer {'division' if op == '//' else 'modulo'} by zero "
                                            f"({self.site()})")
                return t.type(0)
            if op == "**" and t.kind == "i" and b < 0:
                if self.checks:
                    raise ValueError(f"integers to negative integer powers are not allowed: exponent {int(b)} "
                                     f"({self.site()}); make the base a float for a "
                                     f"float result")
                a, b = int(a), int(b)
                return t.type(1 if a == 1 else ((-1 if b & 1 else 1) if a == -1 else 0))
            if op in ("<<", ">>"):
                bits = t.itemsize * 8
                if b < 0 or b >= bits:  # NumPy's shifts: every bit shifted out
                    return t.type(-1 if (op == ">>" and t.kind == "i" and a < 0) else 0)
        if op == "**" and t.type in (np.float32, np.float64):
            return float_power(t.type(a), t.type(b))
        if type(a) is type(b) and type(a) is t.type and t.kind != "c":
            return _OPS[op](a, b)  # NumPy scalars of one type: NumPy's operator, faster than the ufunc
        # (not for complex: the scalar operator multiplies without the fused product of NumPy's
        # array loop, which the compiled kernel's product gives, bit for bit; the ufunc has it)
        return _NPOPS[op](a, b)

    def _weak_bin(self, op, x, y, wx, wy):
        rank = max(wx[0], wy[0])
        runtime = wx[1] or wy[1]
        if rank == 0 and runtime:  # & | ^ of a Python bool argument and a bool: a run-time bool
            return _RBool(_OPS[op](bool(x), bool(y)))
        if not runtime:  # literals: Python's own arithmetic, computed exactly
            if rank >= 2 and op in ("/", "//", "%", "**"):
                r = self._compute(op, _F64 if rank == 2 else _C128, np.float64(x) if rank == 2 else
                                  np.complex128(x), np.float64(y) if rank == 2 else np.complex128(y))
                return complex(r) if rank == 3 else float(r)
            if op in ("//", "%") and y == 0:
                return self._compute(op, _I64, np.int64(x), np.int64(0))
            if op == "**" and rank <= 1 and y < 0:  # a float power, folded as C's pow: 0 ** -1 is inf
                return float(self._compute("**", _F64, np.float64(x), np.float64(y)))
            if op == "/" and rank <= 1:  # as the compiler folds it: the float64 values divided (1 / 0 is
                # inf, 0 / 0 NaN, and 2**53 + 1 is rounded to float64 first), NumPy's true_divide
                return float(self._compute("/", _F64, np.float64(x), np.float64(y)))
            if op in ("<<", ">>"):  # NumPy's int64 shift, folded as compiled (lower_pyint.c)
                if not 0 <= y < 64:
                    return -1 if op == ">>" and x < 0 else 0
                if op == "<<":
                    r = (x << y) & 0xFFFFFFFFFFFFFFFF
                    return r - (1 << 64) if r >= 1 << 63 else r
            return _OPS[op](x, y)
        if rank <= 1:  # run-time integers: 64 bits, wrapping
            if op == "/":
                t = self.df
                return self._compute("/", t, self._to(t, x), self._to(t, y))
            if op == "**" and y < 0 and not wy[1]:
                t = self.df
                return self._compute("**", t, self._to(t, x), self._to(t, y))
            r = self._compute(op, _I64, _int_to(int(x), _I64), _int_to(int(y), _I64))
            return _RInt(int(r))
        if rank == 2:
            if (wx[1] and wx[0] <= 1) or (wy[1] and wy[0] <= 1):  # a run-time int meets a float
                t = self.df
                return self._compute(op, t, self._to(t, x), self._to(t, y))
            r = _RFloat(float(self._compute(op, _F64, np.float64(x), np.float64(y))))
            r.tree = (_np_f32(op), x, y)
            return r
        return _OPS[op](x, y)

    # -- comparisons
    def cmp(self, op, x, y):
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            return _CMPS[op](x, y)
        wx, wy = _weak(x), _weak(y)
        if (wx is None and not isinstance(x, np.generic)) or (wy is None and not isinstance(y, np.generic)):
            return _CMPS[op](x, y)
        if wx is not None and wy is not None:
            if not (wx[1] or wy[1]) or max(wx[0], wy[0]) <= 1:
                return np.bool_(_CMPS[op](x, y))  # a bool, as compiled: 100000 * (1 < 2) is int64
            t = self.df  # a run-time weak value meeting a float: the default float (complex: the default complex)
            if max(wx[0], wy[0]) == 3:
                t = _C64 if self.df == _F32 else _C128
        else:
            t = self._promote(x, y)
            if wx is None and wy is None and t.kind == "f" and x.dtype.kind in "iu" and y.dtype.kind in "iu":
                # uint64 and a signed type promote to float64; NumPy 2 compares them exactly
                return np.bool_(_CMPS[op](int(x), int(y)))
            w = wx if wx is not None else wy
            if t.kind in "iu" and w is not None and w[0] == 1:
                # a Python int and a fixed-width integer: exactly, as NumPy 2 compares
                # them (lower_pyint.c, lw_pyint_compare), not in the integer's type
                return np.bool_(_CMPS[op](int(x), int(y)))
        return np.bool_(_CMPS[op](self._to(t, x), self._to(t, y)))

    # -- unary operators
    def neg(self, x):
        w = _weak(x)
        if w is None:
            if isinstance(x, np.bool_):
                return -np.int64(x)
            return -x
        if type(x) is _RInt or type(x) is _RBool:
            return _wrap64(-int(x))
        if type(x) is _RFloat:
            r = _RFloat(-float(x))
            r.tree = ("un", operator.neg, x)
            return r
        return -x

    def pos(self, x):
        """+x: a bool is an int64 (Python's +True is 1; NumPy has no + of a bool), anything else itself."""
        if type(x) is bool:
            return int(x)
        if type(x) is _RBool:
            return _RInt(int(x))
        if isinstance(x, np.bool_):
            return np.int64(x)
        return x

    def inv(self, x):
        if type(x) is _RInt:
            return _wrap64(~int(x))
        if type(x) is bool:
            return not x  # ~ of a bool is NumPy's logical not, True and False as well
        if type(x) is _RBool:
            return _RBool(not x)
        return ~x

    def not_(self, x):
        return np.bool_(not x)  # a bool, as compiled (not Python's weak one)

    # -- arrays
    def load(self, a, idx):
        if isinstance(idx, np.ndarray):
            idx = _axes(idx)
        try:
            v = a[idx]
        except IndexError as e:
            raise self._index_error(e, a, idx) from None
        if type(a) is tuple:  # a.shape[k]: an integer known at run time
            return _RInt(v) if type(v) is int else v
        if isinstance(v, np.ndarray):  # a vector, matrix, quaternion or transform element: a value, as in a
            return _vector_value(v.copy())  # kernel, not a view (v = a[i]; v[1] = s would have written a[i]);
                                            # a matrix's row m[i] is a vector, its components named
        if type(v) is np.float16:
            return np.float32(v)  # f16 is a storage type: loads give f32
        if type(a) is _bf16.BF16Bits:
            return _bf16.b2f(v)  # so is bf16, held as its bits (tack._bf16)
        return v

    def store(self, a, idx, v):
        if isinstance(idx, np.ndarray):
            idx = _axes(idx)
        try:
            self._store(a, idx, v)
        except IndexError as e:
            raise self._index_error(e, a, idx) from None

    def _store(self, a, idx, v):
        if type(a) is _bf16.BF16Bits:
            a[idx] = _bf16.bits_of(v, lambda x: convert(_F32, x))
            return
        if type(v) is a.dtype.type:
            a[idx] = v
            return
        if isinstance(a, np.ndarray) and a.dtype.kind in "biufc" and a.ndim and not isinstance(v, np.ndarray):
            try:
                cell_is_scalar = a.ndim == (len(idx) if type(idx) is tuple else 1)
            except TypeError:
                cell_is_scalar = False
            if cell_is_scalar:
                v = convert(a.dtype, v)
        a[idx] = v

    def setattr(self, obj, names, v):
        """``v.y = s``, ``q.w = s``, ``t.p = u``, ``t.p.x = s`` (names: ("p", "x")) on a local vector,
        quaternion or transform, which the compiler has checked: a copy of it with the component, or
        the part's components, set -- a number converted to the local's scalar type, as the compiled
        kernel's component store converts it -- which the transform binds to the local's name.  A
        copy, because a vector here may be a view that others share (an array's element, a caller's
        local passed to a func), where a kernel's vector is a value."""
        new = obj.copy()
        self._set_part(new, names, v)
        return new

    @staticmethod
    def _part_slots(obj, names):
        """The components (first, count) of obj that names ("p", "x") name."""
        first, count, form = 0, 1, type(obj)
        for name in names:
            if form is _debug_calls._QTYPES[1]:  # a transform: p, its position; q, its rotation
                first, count, form = first + (0 if name == "p" else 3), 3 if name == "p" else 4, \
                    None if name == "p" else _debug_calls._QTYPES[0]
            else:
                first, count, form = first + "xyzw".index(name), 1, None
        return first, count

    def _set_part(self, obj, names, v):
        first, count = self._part_slots(obj, names)
        a = np.asarray(obj)
        if count == 1:
            self._store(a, first, v)
        else:
            a[first:first + count] = np.asarray(v)

    def setattr_at(self, a, idx, names, v):
        """``t[i].x = s`` on a local array of vectors (the compiler has checked it): the component
        set in the element itself, a view of the array's row."""
        if isinstance(idx, np.ndarray):
            idx = _axes(idx)
        try:
            el = a[idx]
        except IndexError as e:
            raise self._index_error(e, a, idx) from None
        self._set_part(el, names, v)

    def _element(self, a, idx):
        """a[idx], an element of an array of vectors, quaternions, transforms or matrices: a view of it."""
        if isinstance(idx, np.ndarray):
            idx = _axes(idx)
        try:
            return a[idx]
        except IndexError as e:
            raise self._index_error(e, a, idx) from None

    def store_part(self, a, idx, k, v):
        """``a[i][k] = s`` (``a[i][r, c] = s``) on an array of vectors, quaternions or matrices (the
        compiler has checked it): that component set in the element itself, converted to its type as
        the compiled kernel's store of the component alone converts it."""
        self.store(self._element(a, idx), k, v)

    def aug_part(self, op, a, idx, part, v, line):
        """``a[i].x += s`` (part: the names, ("x",)), ``a[i].p += u``, ``a[i][k] += s`` (part: k) on an
        array's element, in place: each component updated as a number's element is -- atomically
        where the compiled kernel's update is atomic (v converted to the component's type first)."""
        el = self._element(a, idx)
        if type(part) is not tuple or not all(type(n) is str for n in part):
            self.aug(op, el, part, v, line)
            return
        first, count = self._part_slots(el, part)
        el = np.asarray(el)
        if count == 1:
            self.aug(op, el, first, v, line)
            return
        for j in range(count):
            self.aug(op, el, first + j, v[j], line)

    def aug(self, op, a, idx, v, line):
        if isinstance(idx, np.ndarray):
            idx = _axes(idx)
        if line in self.atomic_lines and op in ("+", "-") and isinstance(a, np.ndarray) \
                and a.dtype.kind in "iufc" and a.dtype != np.float16:
            # an atomic a[k] += v: v converted to the element's type first, added in it (an f16
            # element has no atomic: its own element's update is NumPy's, as compiled, lower_stmt.c)
            t = a.dtype
            if a.ndim > (len(idx) if type(idx) is tuple else 1):  # a vector or matrix cell: per component
                old = self.load(a, idx)
                self.store(a, idx, _debug_calls.vector_update(op, t, old, v))
                return
            if type(v) is _RInt and t.kind in "iu" and t != _I64 and self.checks:
                self._fits(t, v)
            old = self.load(a, idx)
            self.store(a, idx, self._compute(op, t, self._to(t, old), convert(t, v)))
            return
        self.store(a, idx, self.bin(op, self.load(a, idx), v))

    def annotated(self, t, v):
        """`x: t = v`: v as a cast to t gives it, but f32 for the storage types
        f16 and bf16 (the local holds a value, and a value is f32, lower.c)."""
        if t is _core.f16 or t is _core.bf16:
            return convert(_F32, v)
        return self.call(t, v)

    def own(self, v):
        """``w = v`` of a vector, matrix, quaternion or transform: a copy, as a kernel's value is one
        (setting ``w[1]`` must leave ``v``); anything else as it is."""
        return v.copy() if isinstance(v, np.ndarray) else v

    def local(self, name, v):
        t = self.local_types.get(name)
        if t is None or isinstance(v, np.ndarray):
            return v
        if type(t) is str:
            # a local the compiler types weak: a value known at run time, not a literal, even where
            # a literal was assigned (`v = 100; v / 3` is the default float's 100 / 3, `v = 300;
            # a8[i] + v` NumPy 2's OverflowError, as the compiled kernel's local gives them)
            w = _weak(v)
            if w is None or w[1]:
                return v
            if t == "int (Python)" and w[0] <= 1:
                return _wrap64(int(v)) if -(1 << 63) <= v < (1 << 63) else v
            if t == "float (Python)" and w[0] <= 2:
                r = _RFloat(float(v))
                r.tree = None
                return r
            return v
        return convert(t, v)

    def choice(self, line, col, k, v, run_time=False):
        """An operand of `a and b` (k = 1 for the first `and`, 2 for the next
        ...) or the value of `x if c else y` (k = 0) converted to the type the
        compiler gives that expression: the promoted type of its operands,
        which Python's short circuit cannot show (the operand it skips).  A
        Python int literal chosen by a condition known at run time (run_time)
        is an integer known at run time, as the compiler's select of the two
        is: checked where it meets a narrower integer, not folded."""
        t = self.choices.get((line, col, k))
        if t is None or isinstance(v, np.ndarray):
            return v
        if type(t) is str:  # a weak type: widen a weak value to its rank
            w = _weak(v)
            if w is None:
                return v
            if run_time and t == "int (Python)" and w == (1, False):
                return _RInt(int(v))
            if t == "float (Python)" and w[0] < 2:
                if w[1]:
                    r = _RFloat(float(int(v)))
                    r.tree = None
                    return r
                return float(v)
            if t == "int (Python)" and w[0] == 0:
                return _RInt(int(v)) if w[1] else int(v)
            return v
        if type(v) is t.type:
            return v
        return convert(t, v)

    def constants(self, t):
        """The elements of a loop over a constant tuple: its tuples are _Constants, so that an
        element read from one (off[0]) is the literal the compiled copy reads, not a shape's
        run-time integer (load)."""
        return tuple(_Constants(self.constants(x)) if type(x) is tuple else
                     _vector_value(x.copy()) if type(x) is np.ndarray else x for x in t)

    def range(self, *args):
        for i in builtins.range(*[int(a) for a in args]):
            yield _RInt(i)

    # -- blocks (tack.blocks; the compiled meaning is src/compiler/lower/lower_blocks.c's)
    def blocks(self, n_blocks, block_size, thread, line):
        """Run ``thread(b, t)``, a generator that yields at each barrier the
        barrier's line, for every block b, its threads stepped together from
        one barrier to the next: each runs until its next barrier (or its
        end) before any goes past it.  Threads that reach different barriers,
        or some a barrier while others end, raise the compiled CPU's
        ValueError."""
        bs = int(block_size)
        for b in builtins.range(int(n_blocks)):
            self.block_shared, self.block_made = [], [0] * bs
            gens = [thread(_RInt(b), _RInt(t)) for t in builtins.range(bs)]
            while True:
                at = []
                for t, g in enumerate(gens):
                    self.block_thread = t
                    at.append(next(g, None))
                if len(set(at)) > 1:
                    raise ValueError(f"the threads of a block disagree on a condition or loop bound around "
                                     f"tack.barrier() in the blocks loop at line {line}: every thread of a block "
                                     f"must reach the same barriers")
                if at[0] is None:
                    break
        self.block_shared = self.block_made = self.block_thread = None

    def block_put(self, v, *args):
        """A block collective's value from this thread (r = tack.block_sum(v) & co: lower_blocks.c),
        with a shuffle's lane (delta) and width."""
        if self.block_thread == 0:
            self.block_vals = [None] * len(self.block_made)
            self.block_args = [None] * len(self.block_made)
        self.block_vals[self.block_thread] = v
        self.block_args[self.block_thread] = args

    def block_get(self, op):
        """The collective's result for this thread, in the type the compiled kernel gives it: the
        values' concrete type (i64 for Python ints, the default float for Python floats); integer
        sums wrap."""
        vals = self.block_vals
        t = self.block_thread
        if op.startswith("warp_") or op.startswith("shuffle"):
            return self._warp(op, t)
        dt = np.result_type(*[np.asarray(self.concrete(v)) for v in vals])
        arr = np.array([self.concrete(v) for v in vals], dtype=dt)
        with np.errstate(over="ignore"):
            if op == "block_sum":
                r = np.add.reduce(arr, dtype=dt) if not np.issubdtype(dt, np.floating) else self._tree(arr)
            elif op == "block_min":
                r = arr.min()
            elif op == "block_max":
                r = arr.max()
            else:
                r = self._scan(arr)[t]
        return dt.type(r)

    def concrete(self, v):
        """v in its concrete type: a Python int as i64, a Python float as the default float."""
        if isinstance(v, np.generic):
            return v
        if isinstance(v, float):
            return convert(self.df, v)
        return np.int64(int(v))

    def _warp(self, op, t):
        """A sub-group operation (32 lanes) for thread t, as lower_blocks.c writes it."""
        W = 32
        if len(self.block_vals) % W:
            raise ValueError("sub-group operations need a block size that is a multiple of 32")
        base = t - t % W
        if op in ("warp_ballot", "warp_any", "warp_all"):
            bits = sum(1 << k for k in range(W) if bool(self.block_vals[base + k]))
            return _RInt(bits) if op == "warp_ballot" else bool(bits != 0 if op == "warp_any" else bits == 0xffffffff)
        if op.startswith("shuffle"):
            v0 = self.concrete(self.block_vals[t])
            args = self.block_args[t]
            w = int(args[1]) if len(args) > 1 else W
            lane = t % w
            grp = t - lane
            if op == "shuffle":
                src = grp + int(args[0]) % w
            else:
                src = grp + lane + int(args[0]) if 0 <= lane + int(args[0]) < w else t
            return type(v0)(self.concrete(self.block_vals[src]))
        arr = np.array([self.concrete(v) for v in self.block_vals[base:base + W]])
        with np.errstate(over="ignore"):
            r = self._tree(arr) if op == "warp_sum" else arr.min() if op == "warp_min" else arr.max()
        return arr.dtype.type(r)

    @staticmethod
    def _tree(a):
        """The float sum in the compiled kernel's order: a tree, strides P/2 .. 1."""
        a = a.copy()
        B = len(a)
        P = 1
        while P < B:
            P *= 2
        s = P // 2
        while s >= 1:
            lim = min(s, B - s)
            if lim > 0:
                a[:lim] = a[:lim] + a[s:s + lim]
            s //= 2
        return a[0]

    @staticmethod
    def _scan(a):
        """The inclusive scan in the compiled kernel's order (Hillis and Steele)."""
        a = a.copy()
        off = 1
        while off < len(a):
            x = np.zeros_like(a)
            x[off:] = a[:-off]
            a = a + x
            off *= 2
        return a

    def shared(self, shape, dtype):
        """tack.shared: the block's k-th shared array for a thread's k-th call (one array per block)."""
        t = self.block_thread
        k = self.block_made[t]
        self.block_made[t] += 1
        if k == len(self.block_shared):
            self.block_shared.append(np.zeros(shape, np.dtype(dtype.numpy)))
            self._arrays[id(self.block_shared[k])] = self.block_shared[k]
        return self.block_shared[k]

    def assert_(self, cond, msg=None):
        if self.checks and not cond:
            raise AssertionError(msg) if msg is not None else AssertionError()

    # -- calls
    def call(self, f, *args, **kwargs):
        own = getattr(f, "__self__", None)
        if isinstance(own, np.ndarray) and getattr(f, "__name__", None) in _METHODS:
            # NumPy's method spellings the compiler knows (the front end's numpy_methods): the call
            # of the function they spell, with its typing and order of sums
            if f.__name__ == "dot":
                return self.bin("@", own, args[0])
            if f.__name__ == "transpose" and own.ndim == 1:
                return _vector_value(own.copy())
            return self.call(_METHODS[f.__name__](), own)
        h = _CALLS.get(_key(f))
        if h is not None:
            r = h(self, *args, **kwargs)
            return r if self._arrays.get(id(r)) is r else _vector_value(_of_python_complex(args, r))
        if any(f is m for m in _array_makers()):
            r = f(*args, **kwargs)
            if isinstance(r, np.ndarray):
                self._arrays[id(r)] = r
            return r
        if isinstance(f, _core.Kernel) and f.is_func:
            return _run_func(self, f, args, kwargs)
        if isinstance(f, _core.DType) and not f.shape:
            return _half_round(f, args[0]) if f is _core.f16 or f is _core.bf16 else convert(np.dtype(f.numpy), args[0])
        if isinstance(f, _core.DType) and not kwargs:
            return _vector_value(_construct(f, args))
        if isinstance(f, type) and issubclass(f, np.integer) and len(args) == 1 and not kwargs:
            # np.int64(x) is tack.i64(x) in a kernel: the compiled conversion (NaN to 0,
            # saturation, then wrapping), not NumPy's cast of NaN or inf to INT64_MIN
            return convert(np.dtype(f), args[0])
        if isinstance(f, type) and issubclass(f, np.floating) and len(args) == 1 and not kwargs:
            # np.float16(x) is tack.f16(x): rounded to f16 and given as the f32 it holds, since
            # f16 is a storage type (NumPy's float16 scalar would keep rounding what it meets)
            t = np.dtype(f)
            return _half_round(_core.f16, args[0]) if t == np.float16 else convert(t, args[0])
        return _vector_value(_of_python_complex(args, f(*args, **kwargs)))

    def part(self, v, name):
        """``v.real`` / ``v.imag`` (and any other attribute read the rewrite
        routes here): of a Python complex, a weak float known at run time,
        as the compiler types a part of one (_of_python_complex)."""
        if name == "T" and isinstance(v, np.ndarray):  # m.T: a value, not a view of m
            return _vector_value(v.T.copy())
        r = getattr(v, name)
        if type(v) is complex and type(r) is float:
            r = _RFloat(r)
            r.tree = None
        return r

    def math(self, fn, *args):
        """A math function of real scalars, in the type the compiler gives it; of a vector or matrix,
        that of each component (_debug_calls.elementwise)."""
        if any(_debug_calls._composite(a) for a in args):
            return _debug_calls.elementwise(self, lambda ctx, *a: ctx.math(fn, *a), args)
        if any(isinstance(a, np.ndarray) for a in args):
            return fn(*args)
        if any(isinstance(a, (complex, np.complexfloating)) for a in args):
            return fn(*args)
        x = args[0]
        for y in args[1:]:  # the promoted type of the arguments, as for + (of the types alone: a
            # run-time int as 0, since each argument converts to the function's float unchecked, as
            # compiled: math.copysign(u32, -1) is -x, not NumPy 2's OverflowError of -1 meeting u32)
            x = self.bin("+", _RInt(0) if type(x) is _RInt else x, _RInt(0) if type(y) is _RInt else y)
        w = _weak(x)
        if w is None:
            t = x.dtype
            if t.kind in "iub":
                t = self.df
            return fn(*[self._to(t, a) for a in args])
        if any(_weak(a) is not None and _weak(a)[1] and _weak(a)[0] <= 1 for a in args) \
                or (w[1] and w[0] <= 1):
            t = self.df
            return fn(*[self._to(t, a) for a in args])
        r = fn(*[np.float64(a) for a in args])
        if isinstance(r, np.bool_):
            return r
        # a weak float, of literals too: the compiler folds no math call, so np.sin(-1e-300) is a
        # weak expression that meets f32 computed in f32 (lower.c, weak_to_f32; weak_locals.c)
        r = _RFloat(float(r))
        r.tree = ("math", lambda *a: fn(*[np.float32(v) for v in a]), args)
        return r


def _construct(dt, args):
    """tack.vec3(...), tack.mat33(...) as a kernel means them (lower_call.c's vec_ctor): no argument is
    zeros, one scalar is every component of a vector and the diagonal of a matrix (tack.mat33(1.0)
    is the identity); anything else converts as outside a kernel."""
    if len(args) > 1 or (args and np.ndim(args[0]) != 0):
        return dt(*args)
    t = np.dtype(dt.numpy)
    base, shape = t.base, tuple(dt.shape)
    out = np.zeros(shape, base)
    if args:
        s = convert(base, args[0])
        if len(shape) == 1:
            out[...] = s
        else:
            np.fill_diagonal(out, s)
    return out


_ARRAY_MAKERS = []


def _array_makers():
    """What makes a kernel's local arrays (docs/language.md, "Local arrays"): NumPy's and Tack's zeros, ones,
    empty and full (Tack's give a NumPy array while a kernel runs as Python: tack._array._as_python)."""
    if not _ARRAY_MAKERS:
        from . import _array

        _ARRAY_MAKERS.extend((np.zeros, np.ones, np.empty, np.full, _array.zeros, _array.ones, _array.empty,
                              _array.full))
    return _ARRAY_MAKERS


class _Constants(tuple):
    """A tuple element of a loop over a constant tuple (_Ctx.constants)."""


def _tack_function(name):
    def get():
        import tack  # the package itself, imported by the time a kernel runs

        return getattr(tack, name)

    return get


# a vector's or matrix's method (a NumPy array's, in debug mode) -> the tack function it spells
_METHODS = {"dot": None, "transpose": _tack_function("transpose"), "trace": _tack_function("trace")}


def _axes(idx):
    """g[p] with p an integer vector (the compiler has checked its length against g's dimensions): one
    index per axis, g[p[0], p[1]], as the compiled kernel indexes -- not NumPy's fancy indexing, which
    would pick whole rows."""
    return tuple(idx.tolist())


def _is_matrix(a):
    """Whether debug-mode value `a` has a matrix value's shape and type (mat22 ... mat44d)."""
    return isinstance(a, np.ndarray) and a.ndim == 2 and 2 <= a.shape[0] <= 4 and a.shape[0] == a.shape[1] \
        and a.dtype in (np.float32, np.float64)


def _vector_value(r):
    """A vector value computed in debug mode reads its components by name (v.x, (a + b).y), as an
    element of a vector array does (tack._kernels._vector_view_type)."""
    if type(r) is np.ndarray and r.ndim == 1 and 2 <= r.size <= 4:
        from . import _kernels

        return r.view(_kernels._vector_view_type())
    return r



def _of_python_complex(args, r):
    """The value of a call of Python complexes (weak) as the compiler types
    it.  A kernel computes a Python complex in its carrier, complex128, and
    never folds one: a real value made of it (abs, np.abs, cmath.phase) is a
    weak float known at run time, which where it meets f32 is converted and
    computed on in f32 (lower.c, weak_to_f32), and a complex one (np.sqrt,
    np.conj) is again a Python complex, not NumPy's concrete complex128.
    Here those are an _RFloat leaf and a Python complex; a call that also
    takes a NumPy value keeps what NumPy gives."""
    if not any(type(a) is complex for a in args) or any(isinstance(a, (np.generic, np.ndarray)) for a in args):
        return r
    if type(r) is float or type(r) is np.float64:
        out = _RFloat(float(r))
        out.tree = None
        return out
    if type(r) is np.complex128:
        return complex(r)
    return r


def _key(f):
    try:
        hash(f)
    except TypeError:
        return None
    return f


def run(ctx, fn, kwargs):
    """Run the kernel fn's transformed copy with kwargs (the debug views)."""
    g = _instantiate(ctx, fn, True)
    for name, v in list(kwargs.items()):
        if type(v) is int:
            kwargs[name] = _RInt(v)
        elif type(v) is bool:
            kwargs[name] = _RBool(v)
        elif type(v) is float:
            r = _RFloat(v)
            r.tree = None
            kwargs[name] = r
    ann = fn.__annotations__
    for name, a in ann.items():
        if name in kwargs and isinstance(a, _core.DType) and not a.shape:
            kwargs[name] = convert(_value_dtype(a), kwargs[name])
    with np.errstate(all="ignore"):
        g(**kwargs)
