"""Debug mode's values: the run-time types of Tack's type rule, and the
conversions a compiled kernel makes.

tack._debug runs a kernel as a transformed copy of its Python function whose
operators apply Tack's type rule to the operands' run-time values; this
module is what those values are and how one becomes another, shared by the
operators (tack._debug's ``_Ctx``) and the built-in calls
(tack._debug_calls):

- ``_RInt``: a weak integer known at run time (the loop variable, a shape,
  ``len()``, a Python int argument): 64-bit, wrapping;
- ``_RFloat``: a weak float known at run time (a Python float argument),
  carried in f64 with a small expression tree so that where it meets f32 it
  is recomputed in f32 (``_tree_f32``), as the compiler computes it;
- ``_weak``: whether a value is weak (a literal or one of the above) and of
  which kind;
- ``convert``: a value converted to a dtype as a compiled kernel's store
  converts it (floats to integers saturate, NaN is 0; integers wrap), with
  f16 and bf16 rounded through their storage type (``_half_round``).

They are a module of their own so that the operators and the calls, two
modules, share one definition of each without importing each other.
"""

from __future__ import annotations

import numpy as np

from . import _bf16, _core
from ._debug_facts import _F32

class _RInt(int):
    """A weak integer known at run time (the loop variable, a shape, a
    Python int argument): 64-bit, wrapping."""

    __slots__ = ()


class _RBool(int):
    """A Python bool argument: a weak bool known at run time (0 or 1, shown as False and True),
    which arithmetic makes a run-time int, as the compiled kernel's weak bool parameter: `s / 3` is
    the default float's division, `0 / s` with s False is NaN, not Python's ZeroDivisionError."""

    __slots__ = ()

    def __repr__(self):
        return repr(bool(self))

    __str__ = __repr__


class _RFloat(float):
    """A weak float known at run time (a Python float argument, arithmetic
    on one): carried in f64; ``tree`` recomputes it in f32."""

    __slots__ = ("tree",)


_RANK = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}


def _wrap64(v):
    v &= 0xFFFFFFFFFFFFFFFF
    return _RInt(v - (1 << 64) if v >= 1 << 63 else v)


# (rank, run-time) of each weak type: by the exact type, as type(v) is ... compares
_WEAK = {_RInt: (1, True), _RFloat: (2, True), _RBool: (0, True), bool: (0, False), int: (1, False), float: (2, False),
         complex: (3, False)}


def _weak(v):
    """(rank, run-time) of a weak value, or None."""
    return _WEAK.get(type(v))


def _f2i(x, to):
    """A float converted to the integer dtype `to` as tk_f2i64/tk_f2u64 do:
    NaN is 0, out of range the nearest 64-bit limit, then wrapped."""
    x = float(x)
    if x != x:
        v = 0
    elif to.kind == "u" and x >= 0:
        v = (1 << 64) - 1 if x >= 18446744073709551615.0 else int(x)
    elif x >= 9223372036854775807.0:
        v = (1 << 63) - 1
    elif x <= -9223372036854775808.0:
        v = -(1 << 63)
    else:
        v = int(x)
    return _int_to(v, to)


def _int_to(v, to):
    """The Python int v wrapped into the integer dtype `to`."""
    bits = to.itemsize * 8
    v &= (1 << bits) - 1
    if to.kind == "i" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return to.type(v)


def _tree_f32(v):
    """A weak value recomputed in f32, as the compiler pushes a conversion to
    f32 down through weak-float arithmetic (lower.c, weak_to_f32)."""
    tree = getattr(v, "tree", None) if type(v) is _RFloat else None
    if tree is None:
        return np.float32(v)
    op = tree[0]
    if op == "un":
        return tree[1](_tree_f32(tree[2]))
    if op == "math":
        return tree[1](*[_tree_f32(a) for a in tree[2]])
    return op(_tree_f32(tree[1]), _tree_f32(tree[2]))


def convert(to, v):
    """v converted to the scalar dtype `to` as the compiled kernel converts:
    a store, a cast (tack.u8(x), float(x)), a local of a fixed type."""
    if isinstance(v, np.ndarray):
        return v
    if to.kind in "iu":
        if isinstance(v, (np.floating, float)):
            return _f2i(v, to)
        if isinstance(v, (np.complexfloating, complex)):
            return _f2i(v.real, to)
        return _int_to(int(v), to)
    if to.kind == "b":
        return np.bool_(v != 0)
    if to == _F32 and type(v) is _RFloat:
        return _tree_f32(v)
    if to.kind == "f" and to.itemsize == 2 and type(v) is _RFloat:  # a weak float computed at run time
        # meets f16's values' type, f32, as compiled (lower_local.c, lw_half_value); one that is no
        # computation (an argument, a local holding one) is rounded once, as NumPy stores it
        return to.type(float(v) if getattr(v, "tree", None) is None else _tree_f32(v))
    if to.kind == "f" and isinstance(v, (np.complexfloating, complex)):
        v = v.real
    if isinstance(v, int) and not isinstance(v, np.generic):
        return to.type(float(v)) if to.kind == "f" else to.type(v)
    return to.type(v)


def _value_dtype(t):
    """The NumPy dtype of the values of scalar Tack dtype t: f32 for the
    storage types f16 and bf16, as an annotation with one gives in a kernel."""
    return _F32 if t is _core.f16 or t is _core.bf16 else np.dtype(t.numpy)


def _half_round(t, v):
    """tack.f16(v), tack.bf16(v) (np.float16(v)): v rounded as a store into
    an element of t rounds it (a float64 once, anything else through f32),
    as the f32 that the element holds (lower_local.c, lw_half_round)."""
    if t is _core.bf16:
        return _bf16.b2f(_bf16.bits_of(v, lambda x: convert(_F32, x)))
    if type(v) is float or type(v) is np.float64 or (type(v) is _RFloat and getattr(v, "tree", None) is None):
        return np.float32(np.float16(float(v)))
    return np.float32(np.float16(convert(_F32, v)))




_BIG = 1 << 63


def _big_literal(v, other):
    """A literal from 2**63 to 2**64 - 1 is a uint64 where it meets anything but another literal (the
    compiler's constant marked TK_CONST_PYINT, lower_pyint.c): `i + 2**63` is uint64 arithmetic,
    `x32[i] + 2**63` float64, as NumPy's uint64 gives; between literals it is Python's int."""
    if type(v) is int and v >= _BIG and not (type(other) in (int, bool, float, complex)):
        return np.uint64(v)
    return v


def _is_bool(v):
    return type(v) is bool or type(v) is _RBool or isinstance(v, np.bool_)
