"""bfloat16 in debug mode: an array of its bits, and the conversions a
compiled kernel makes.

NumPy has no bfloat16 (ml_dtypes adds one, but debug mode is the same
language with or without it), and NumPy's DLPack import refuses bfloat16.
So a kernel run as Python (``jit=False``) sees a bf16 array as a
``BF16Bits``: a uint16 ndarray over the same storage, whose loads and
stores ``tack._debug`` routes through ``load`` and ``store`` here.  They are
the compiled kernel's ``tk_b2f``/``tk_f2b``/``tk_d2b`` (the dialects'
preludes) written with NumPy scalars, so both give the same bits:

- a load widens the bits to f32 exactly (they are the f32's upper half);
- a store of an f32 rounds to nearest even, adding 0x7fff and the last kept
  bit, and a NaN becomes the quiet NaN of its sign;
- a float64 (a Python float written in the kernel, a float64 value) rounds
  once: to f32 rounding to odd, then to nearest even, which f32's 16 spare
  bits make the correctly rounded result (the compiler rounds a constant at
  compile time to the same value);
- anything else is first converted to f32, as the compiler converts it.
"""

from __future__ import annotations

import numpy as np


class BF16Bits(np.ndarray):
    """A bf16 array's storage as uint16 bits, in a kernel run as Python."""


class _Holder:
    """A Tack array's storage for NumPy: its address and shape as uint16,
    kept alive by the view made of it (the view's base is this holder)."""

    def __init__(self, arr):
        self.arr = arr
        self.__array_interface__ = {"data": (arr.ptr, not arr.writable), "shape": tuple(arr.shape),
                                    "typestr": "<u2", "version": 3}


def view_of_array(arr):
    """A C-contiguous bf16 tack.Array on the CPU as BF16Bits sharing its storage."""
    return np.asarray(_Holder(arr)).view(BF16Bits)


def view_of_ml_dtypes(a):
    """An ml_dtypes bfloat16 ndarray as BF16Bits sharing its storage."""
    return a.view(np.uint16).view(BF16Bits)


def zeros(shape):
    """A local bf16 array of a kernel run as Python (every element +0.0)."""
    return np.zeros(shape, np.uint16).view(BF16Bits)


def b2f(bits):
    """The f32 a bf16's bits stand for (exactly)."""
    return np.uint32(int(bits) << 16).view(np.float32)


def f2b(f):
    """The bits of the bf16 nearest an f32, ties to even; NaN: the quiet NaN of its sign."""
    u = int(np.float32(f).view(np.uint32))
    if u & 0x7FFFFFFF > 0x7F800000:
        return np.uint16((u >> 16 & 0x8000) | 0x7FC0)
    return np.uint16((u + 0x7FFF + (u >> 16 & 1)) >> 16)


def d2b(d):
    """The bits of the bf16 nearest a float64, rounded once (via f32 rounded to odd)."""
    d = float(d)
    with np.errstate(over="ignore"):
        f = np.float32(d)
    u = int(f.view(np.uint32))
    if f == f and float(f) != d and not u & 1:
        u = (u + (1 if (float(f) < d) == (d > 0) else -1)) & 0xFFFFFFFF
    return f2b(np.uint32(u).view(np.float32))


def bits_of(v, to_f32):
    """The bits a compiled kernel stores for value v: a float64 (a Python
    float, np.float64) rounded once, anything else through ``to_f32`` (the
    conversion to f32 that a store makes) and then rounded.  A Python float
    argument (a weak float known at run time with no arithmetic on it, which
    is a float subclass without an expression tree) is rounded once too."""
    if type(v) is float or type(v) is np.float64 or (isinstance(v, float) and getattr(v, "tree", None) is None):
        return d2b(v)
    return f2b(to_f32(v))
