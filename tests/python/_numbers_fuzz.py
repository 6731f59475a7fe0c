"""The differential fuzzer of numbers (test_fuzz_numbers.py runs it; `python
tests/python/_numbers_fuzz.py SECONDS` runs it at length and prints what it
finds).

A case is a small kernel over random arguments -- arrays of every dtype
(bool, int8 ... uint64, float16, float32, float64, complex64, complex128),
Python ints, floats, bools and complexes, NumPy scalars -- whose body stores
random expressions into output arrays of random dtypes:

    def k(a0, a1, a2, s0, s1, o0, o1, ...):
        for i in range(o0.shape[0]):
            o0[i] = (a0[i] // s1) if a1[i] else max(a2[i], 300)
            o1[i] += np.fmod(~a0[i], 3) ** 2

The expressions draw on + - * / // % ** << >> & | ^, unary - and ~,
comparisons (chained too, up to three operators, of mixed types), shifts
between integers of mixed widths, abs, min/max, np.minimum/np.maximum,
conditional expressions, int()/float()/bool() casts, math.* and np.*
functions (MATH_1/MATH_2, and the wider library of MATH_1_MORE/MATH_2_MORE
on every float width, integers converted), with literals small and huge
(2**63, 2**64 - 1, 1e300); each is stored, or combined by an augmented
assignment of any operator (+= ... ^=), into an output of any dtype.
Vector kernels are _numbers_fuzz_vec.py's.  Each case runs three
ways, and all three must agree on every output's bits (within 4 ulps where a
math function is called: libm and NumPy may differ in the last places), or
all raise the same kind of exception:

1. compiled (`@tack.kernel(default_float=tack.f64)`),
2. as Python (`jit=False`, the same options),
3. the oracle below: NumPy 2 on the same values (NEP 50's promotion of
   Python scalars), with Tack's documented differences from NumPy
   (docs/language.md, "Differences from NumPy", "Arithmetic") written in:
   `bool + bool` is an integer, integer `//`, `%` and `np.fmod` by zero raise
   ZeroDivisionError, f16 loads compute in f32, an integer known at run time
   is 64-bit and wraps in its own arithmetic, a store converts as item 7 says,
   `min`/`max` pick by the exact comparison and convert what they pick, the
   branches of `x if c else y` promote together, `int(nan)` is 0.

A Tack CompileError agrees with the oracle's TypeError (what NumPy refuses)
and with an OverflowError of a literal (NumPy 2's OverflowError for a Python
int out of a type's bounds is a compile error in a kernel).  With the
default float f32 only 1 and 2 are compared (NumPy has no such mode).
"""

from __future__ import annotations

import math
import random
import sys
import time
import warnings

import numpy as np

import tack

N = 4  # elements of each array
ARRAY_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float16", "float32", "float64", "complex64", "complex128"]
OUT_DTYPES = [d for d in ARRAY_DTYPES if d != "float16"] + ["float16"]

INT_LITS = [0, 1, 2, 3, 7, -1, -3, 100, 127, 128, 255, 300, -129, 2**31, 2**40, 2**63 - 1, -2**63, 2**63,
            2**64 - 1]
FLOAT_LITS = [0.5, -2.5, 0.1, 3.0, 1e300, -1e-300, 1e10, 1e309]
MATH_1 = ["math.sqrt", "math.exp", "math.floor", "math.fabs", "np.sqrt", "np.exp", "np.sin", "np.floor",
          "np.abs", "np.trunc", "np.isnan", "np.log", "np.sign"]
MATH_2 = ["math.fmod", "np.fmod", "np.hypot", "math.copysign", "np.arctan2", "np.minimum", "np.maximum"]
# the wider math library, drawn by MATH_WIDE of the calls (each float width, integers converted)
MATH_1_MORE = ["math.sin", "math.cos", "math.tan", "math.log", "math.log2", "math.log10", "math.atan",
               "math.tanh", "math.ceil", "math.trunc", "math.log1p", "math.expm1", "np.cos", "np.tan", "np.log2",
               "np.log10", "np.log1p", "np.expm1", "np.arctan", "np.arcsin", "np.tanh", "np.sinh", "np.ceil",
               "np.rint", "np.cbrt", "np.square", "np.isinf", "np.isfinite", "np.signbit", "np.exp2"]
MATH_2_MORE = ["math.atan2", "math.hypot", "math.pow", "np.power", "np.copysign", "np.fmin", "np.fmax"]
MATH_WIDE = 0.5
ULP_FUNCS = ("exp", "sin", "log", "hypot", "arctan2", "sqrt", "cos", "tan", "log2", "log10", "atan", "tanh",
             "log1p", "expm1", "arctan", "arcsin", "sinh", "cbrt", "exp2", "atan2", "pow", "power")
AUG_OPS = ["+", "+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^"]
SHIFTS = ["<<", ">>"]


# ---------------------------------------------------------------- values
def edge_values(dt, rng):
    dt = np.dtype(dt)
    if dt.kind == "b":
        return np.array([rng.random() < 0.5 for _ in range(N)], dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        pool = [0, 1, 2, 3, 7, -1, -7, 100, -128, info.min, info.max, info.max - 1, info.min + 1, 64, 5]
        pool = [v for v in pool if info.min <= v <= info.max]
        return np.array([rng.choice(pool) for _ in range(N)], dt)
    pool = [0.0, -0.0, 1.0, -1.5, 0.1, 2.5, 3.0, 1e30, -7.25, np.inf, -np.inf, np.nan, 65504.0, 1e-40, 300.7]
    if dt.kind == "c":
        return np.array([complex(rng.choice(pool), rng.choice(pool)) for _ in range(N)], dt)
    with np.errstate(all="ignore"):
        return np.array([rng.choice(pool) for _ in range(N)], dt)


def scalar_arg(rng):
    kind = rng.choice(["int", "int", "float", "bool", "complex", "np"])
    if kind == "int":
        return rng.choice([0, 1, 3, -2, 7, 100, 300, -129, 2**40, 2**62])
    if kind == "float":
        return rng.choice([0.5, -2.5, 0.3, 1e10, 3.0, -0.0, 1e300])
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "complex":
        return complex(rng.choice([0.5, -1.0, 2.0]), rng.choice([0.0, 1.5]))
    t = rng.choice(["int8", "uint8", "int32", "uint64", "float32", "float64", "bool"])
    v = rng.choice([0, 1, 3, 7, 100])
    return np.dtype(t).type(v)


# ------------------------------------------------------------ expressions
class Gen:
    """Random expression trees as source text."""

    def __init__(self, rng, arrays, scalars):
        self.rng = rng
        self.arrays = arrays
        self.scalars = scalars

    def leaf(self):
        r = self.rng.random()
        if r < 0.45:
            return f"a{self.rng.randrange(len(self.arrays))}[i]"
        if r < 0.6:
            return f"s{self.rng.randrange(len(self.scalars))}"
        if r < 0.65:
            return "i"
        if r < 0.85:
            v = self.rng.choice(INT_LITS)
            return f"({v})" if v < 0 else str(v)
        if r < 0.95:
            v = self.rng.choice(FLOAT_LITS)
            return "1e309" if v == math.inf else f"({v!r})" if v < 0 else repr(v)
        return self.rng.choice(["True", "False", "1j", "(2+3j)"])

    def int_leaf(self):
        """An integer operand: an element of an integer (or bool) array if the case has one, else a
        literal or the loop variable -- for shifts between integers of mixed widths."""
        ints = [k for k, a in enumerate(self.arrays) if a.dtype.kind in "iub"]
        if ints and self.rng.random() < 0.7:
            return f"a{self.rng.choice(ints)}[i]"
        return self.rng.choice(["i", "3", "7", "63", "64", "(-1)", "100", "s0", "s1"])

    def expr(self, depth=0):
        if depth >= 3 or self.rng.random() < 0.3:
            return self.leaf()
        r = self.rng.random()
        e = lambda: self.expr(depth + 1)  # noqa: E731
        if self.rng.random() < 0.08:  # a shift of two integers of (often) different widths
            return f"({self.int_leaf()} {self.rng.choice(SHIFTS)} {self.int_leaf()})"
        if r < 0.45:
            op = self.rng.choice(["+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^"])
            return f"({e()} {op} {e()})"
        if r < 0.55:
            ops = ["<", "<=", "==", "!=", ">", ">="]
            op = self.rng.choice(ops)
            if self.rng.random() < 0.4:  # chained, of mixed types: a < b < c, a == b > c <= d
                chain = f"{e()} {op} {e()} {self.rng.choice(ops)} {e()}"
                if self.rng.random() < 0.3:
                    chain += f" {self.rng.choice(ops)} {self.leaf()}"
                return f"({chain})"
            return f"({e()} {op} {e()})"
        if r < 0.62:
            return f"({self.rng.choice(['-', '~', '+'])}{e()})"
        if r < 0.7:
            return f"{self.rng.choice(['min', 'max'])}({e()}, {e()})"
        if r < 0.73:
            return f"({e()} if {e()} else {e()})"
        if r < 0.76:
            return f"({e()} {self.rng.choice(['and', 'or'])} {e()})"
        if r < 0.83:
            return f"{self.rng.choice(['int', 'float', 'bool', 'abs'])}({e()})"
        wide = self.rng.random() < MATH_WIDE
        if r < 0.93:
            return f"{self.rng.choice(MATH_1_MORE if wide else MATH_1)}({e()})"
        return f"{self.rng.choice(MATH_2_MORE if wide else MATH_2)}({e()}, {e()})"


# ---------------------------------------------------------------- oracle
class W:
    """A weak (Python) scalar: a literal (rt False) or a value known at run time (the loop
    variable, a Python argument, arithmetic on them)."""
    __slots__ = ("v", "rt", "arg")

    def __init__(self, v, rt, arg=False):
        self.v, self.rt, self.arg = v, rt, arg  # arg: a Python argument itself, checked when stored


class Skip(Exception):
    """A case the oracle cannot decide (the branch not taken raised: its type is unknown)."""


class Refused(Exception):
    """What a kernel refuses when it compiles (NumPy's TypeError, an out-of-bounds literal)."""


def _rank(v):
    if isinstance(v, W):
        v = v.v
        return 0 if type(v) is bool else 1 if type(v) is int else 2 if type(v) is float else 3
    return {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}[v.dtype.kind]


def _is_bool(v):
    return (type(v.v) is bool) if isinstance(v, W) else v.dtype.kind == "b"


def _wrap64(v):
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


def _np(v):
    return v.v if isinstance(v, W) else v


def _promoted(x, y):
    """The type of x op y as NumPy 2 gives it (None: both weak)."""
    if isinstance(x, W) and isinstance(y, W):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return np.result_type(_np(x), _np(y))
        except (OverflowError, TypeError):
            return None


F64 = np.dtype(np.float64)


class Oracle:
    def __init__(self, env):
        self.env = env
        self.ulps = False
        self.weak_math = False

    def run(self, src):
        import ast
        tree = ast.parse(src, mode="eval").body
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.ev(tree)

    def ev(self, n):
        import ast
        if isinstance(n, ast.Constant):
            return W(n.value, False)
        if isinstance(n, ast.Name):
            if n.id in ("True", "False"):
                return W(n.id == "True", False)
            return self.env[n.id]
        if isinstance(n, ast.Subscript):
            return self.env[n.value.id][self.env["i"].v]
        if isinstance(n, ast.BinOp):
            return self.bin(type(n.op).__name__, self.ev(n.left), self.ev(n.right))
        if isinstance(n, ast.UnaryOp):
            return self.unary(type(n.op).__name__, self.ev(n.operand))
        if isinstance(n, ast.Compare):
            a = self.ev(n.left)
            res = None
            for op, c in zip(n.ops, n.comparators):
                b = self.ev(c)
                r = self.cmp(type(op).__name__, a, b)
                res = r if res is None else np.bool_(res and r)
                if not res:  # Python's chain stops at the first False: the rest is not evaluated
                    break
                a = b
            return res
        if isinstance(n, ast.BoolOp) and len(n.values) == 2:
            a = self.ev(n.values[0])
            ta = self.truth(a)
            run_b = ta if isinstance(n.op, ast.And) else not ta
            try:  # b runs only where Python runs it; its type counts either way
                b = self.ev(n.values[1])
            except (ZeroDivisionError, OverflowError, ValueError) as e:
                if run_b:
                    raise
                raise Skip(type(e).__name__) from None
            if _rank(a) == 3 or _rank(b) == 3:
                raise Refused("and/or of complex numbers")
            if _is_bool(a) and _is_bool(b) and not (isinstance(a, W) and isinstance(b, W)):
                return np.bool_(bool(_np(b) if run_b else _np(a)))
            return self.choose(run_b, b, a)
        if isinstance(n, ast.IfExp):
            c = self.truth(self.ev(n.test))
            taken = self.ev(n.body if c else n.orelse)
            try:  # the branch not taken is not run: only its type counts
                other = self.ev(n.orelse if c else n.body)
            except (ZeroDivisionError, OverflowError, ValueError) as e:
                raise Skip(type(e).__name__) from None
            return self.choose(c, taken, other) if c else self.choose(c, other, taken)
        if isinstance(n, ast.Call):
            f = ast.unparse(n.func)
            args = [self.ev(a) for a in n.args]
            return self.call(f, args)
        raise Refused(f"oracle: {ast.dump(n)}")

    # -- the pieces
    def truth(self, c):
        if _rank(c) == 3:
            return bool(_np(c) != 0)
        return bool(_np(c))

    def concrete_of_weak(self, w):
        """A weak value standing alone: its default type (f64 under default_float=f64)."""
        if type(w.v) is bool:
            return np.bool_(w.v)
        if type(w.v) is int:
            if not -2**63 <= w.v < 2**64:
                raise Refused("int out of range")
            return np.uint64(w.v) if w.v >= 2**63 else np.int64(w.v)
        if type(w.v) is float:
            return np.float64(w.v)
        return np.complex128(w.v)

    def promote_pair(self, a, b):
        """(type, weak-or-not) that `a if c else b` and min/max give."""
        a, b = self.big(a, b)
        if isinstance(a, W) and isinstance(b, W):
            rank = max(_rank(a), _rank(b))
            rt = a.rt or b.rt
            run_int = (a.rt and _rank(a) <= 1) or (b.rt and _rank(b) <= 1)
            if rank == 2 and run_int:
                return F64, False
            return rank, True
        t = _promoted(a, b)
        if t is None:
            raise Refused("no common type")
        if t.kind == "b" and not (_is_bool(a) and _is_bool(b)):
            t = np.dtype(np.int64)
        return t, False

    def to(self, t, v):
        """v converted to dtype t as a kernel's store or cast converts it."""
        x = _np(v)
        if t.kind in "iu":
            if isinstance(x, (complex, np.complexfloating)):
                x = x.real
            if isinstance(x, (float, np.floating)):
                x = float(x)
                if x != x:
                    x = 0
                elif t.kind == "u" and x >= 0:
                    x = 2**64 - 1 if x >= 18446744073709551615.0 else int(x)
                else:
                    x = max(-2**63, min(2**63 - 1, int(x))) if math.isfinite(x) else (2**63 - 1 if x > 0 else -2**63)
            bits = t.itemsize * 8
            x = int(x) & ((1 << bits) - 1)
            if t.kind == "i" and x >= 1 << (bits - 1):
                x -= 1 << bits
            return t.type(x)
        if t.kind == "b":
            return np.bool_(x != 0)
        if t.kind == "f" and isinstance(x, (complex, np.complexfloating)):
            x = x.real
        if t == np.float16:
            return np.float16(np.float64(x)) if isinstance(x, (float, np.float64)) else np.float16(np.float32(x))
        return t.type(x)

    def choose(self, cond, a, b):
        t, weak = self.promote_pair(a, b)
        v = a if cond else b
        if weak:
            rank = t
            if isinstance(v, W):
                val = v.v
                if rank == 2:
                    val = float(val)
                elif rank == 1 and type(val) is bool:
                    val = int(val)
                elif rank == 3:
                    val = complex(val)
                return W(val, a.rt or b.rt)
        if t.kind in "iu":
            for u in (a, b):  # a literal must fit the type of the two (compile time), whichever is taken
                if isinstance(u, W) and _rank(u) <= 1 and (not u.rt or u.arg) and \
                        not np.iinfo(t).min <= u.v <= np.iinfo(t).max:
                    raise OverflowError("argument out of bounds") if u.rt else Refused("literal out of bounds")
        return self.to(t, v)

    def big(self, x, y):
        """A literal from 2**63 up is a uint64 where it meets anything but a literal (lower_pyint.c)."""
        def one(v, other):
            if isinstance(v, W) and not v.rt and type(v.v) is int and v.v >= 2**63 and \
                    (other.rt if isinstance(other, W) else other.dtype.kind in "fcb" or other.dtype == np.uint64):
                return np.uint64(v.v)
            return v
        return one(x, y), one(y, x)

    def bin(self, op, x, y):
        x, y = self.big(x, y)
        arith = op in ("Add", "Sub", "Mult", "Div", "FloorDiv", "Mod", "Pow")
        if (arith or op in ("LShift", "RShift")) and _is_bool(x) and _is_bool(y):
            x = W(int(x.v), x.rt) if isinstance(x, W) else np.int64(x)
            y = W(int(y.v), y.rt) if isinstance(y, W) else np.int64(y)
        if isinstance(x, W) and isinstance(y, W):
            return self.weak_bin(op, x, y)
        for v in (x, y):  # an out-of-range Python int is refused (a literal) or OverflowError (run time)
            if isinstance(v, W) and type(v.v) is int:
                other = y if v is x else x
                if other.dtype.kind in "iu" and not np.iinfo(other.dtype).min <= v.v <= np.iinfo(other.dtype).max:
                    if op in ("Div",):
                        continue
                    raise OverflowError("out of bounds") if v.rt else Refused("literal out of bounds")
        t = _promoted(x, y)
        if t is None:
            raise Refused("types")
        if op == "Div" and t.kind in "iub":
            t = F64
        if t.kind in "iu":
            a, b = self.to(t, x), self.to(t, y)
            if op in ("FloorDiv", "Mod") and b == 0:
                raise ZeroDivisionError
            if op == "Pow" and t.kind == "i" and b < 0:
                if isinstance(y, W) and not y.rt:  # 2 ** -1: a float, as in Python
                    return np.float64(a) ** np.float64(b)
                raise ValueError("negative power")
        if t.kind == "c" and op in ("FloorDiv", "Mod", "Pow"):
            raise Refused("complex // and **: refused with a clear message")
        if t.kind in "fc" and op in ("LShift", "RShift", "BitAnd", "BitOr", "BitXor"):
            raise Refused("float bits")
        f = {"Add": np.add, "Sub": np.subtract, "Mult": np.multiply, "Div": np.true_divide,
             "FloorDiv": np.floor_divide, "Mod": np.remainder, "Pow": np.power, "LShift": np.left_shift,
             "RShift": np.right_shift, "BitAnd": np.bitwise_and, "BitOr": np.bitwise_or,
             "BitXor": np.bitwise_xor}[op]
        try:
            r = f(self.to(t, x), self.to(t, y))
        except TypeError as e:
            raise Refused(str(e)) from None
        return r

    def weak_bin(self, op, x, y):
        rank = max(_rank(x), _rank(y))
        rt = x.rt or y.rt
        a, b = x.v, y.v
        if type(a) is bool and rank >= 1:
            a = int(a)
        if type(b) is bool and rank >= 1:
            b = int(b)
        if not rt:  # literals: Python's own arithmetic
            if op in ("LShift", "RShift"):
                if rank >= 2:
                    raise Refused("float shift")
                if not 0 <= b < 64:
                    return W(-1 if op == "RShift" and a < 0 else 0, False)
                return W(_wrap64(a << b) if op == "LShift" else a >> b, False)
            if op in ("FloorDiv", "Mod") and b == 0 and rank <= 1:
                raise ZeroDivisionError
            if rank == 2 and op in ("Div", "FloorDiv", "Mod", "Pow"):
                fa, fb = np.float64(a), np.float64(b)
                r = {"Div": np.true_divide, "FloorDiv": np.floor_divide, "Mod": np.remainder,
                     "Pow": np.power}[op](fa, fb)
                return W(float(r), False)
            if rank == 3 and op in ("FloorDiv", "Mod", "Pow"):
                raise Refused("complex //")
            if rank >= 2 and op in ("BitAnd", "BitOr", "BitXor"):
                raise Refused("float bits")
            if op == "Div" and rank <= 1:  # the compiler folds it in float64 (1 / 0 is inf)
                return W(float(np.float64(a) / np.float64(b)), False)
            if op == "Div" and rank == 3 and b == 0:
                raise Refused("complex / 0")
            if op == "Pow" and rank <= 1 and b < 0:  # C's pow, as the compiler folds it (0 ** -1 is inf)
                return W(float(np.power(np.float64(a), np.float64(b))), False)
            if op == "Pow" and rank <= 1 and abs(b) > 200:
                raise Refused("huge power")
            r = {"Add": a + b, "Sub": a - b, "Mult": a * b, "Div": None, "FloorDiv": None,
                 "Mod": None, "Pow": None, "BitAnd": None, "BitOr": None, "BitXor": None}[op]
            if r is None:
                r = {"Div": lambda: a / b, "FloorDiv": lambda: a // b, "Mod": lambda: a % b,
                     "Pow": lambda: a ** b, "BitAnd": lambda: a & b, "BitOr": lambda: a | b,
                     "BitXor": lambda: a ^ b}[op]()
            if type(r) is int and not -2**63 <= r < 2**64:
                raise Refused("literal arithmetic out of range")
            if type(r) is bool:
                r = int(r)
            return W(r, False)
        if rank <= 1:  # integers known at run time: int64, wrapping
            if op == "Div":
                return np.float64(a) / np.float64(b)
            if op == "Pow" and b < 0:
                if not y.rt:
                    return np.float64(a) ** np.float64(b)
                raise ValueError("negative power")
            for v in (a, b):
                if not -2**63 <= v < 2**63:
                    raise OverflowError("run-time int beyond int64")
            ia, ib = np.int64(a), np.int64(b)
            if op in ("FloorDiv", "Mod") and b == 0:
                raise ZeroDivisionError
            if op in ("LShift", "RShift"):
                if not 0 <= b < 64:
                    return W(-1 if op == "RShift" and a < 0 else 0, True)
            f = {"Add": np.add, "Sub": np.subtract, "Mult": np.multiply, "FloorDiv": np.floor_divide,
                 "Mod": np.remainder, "Pow": np.power, "LShift": np.left_shift, "RShift": np.right_shift,
                 "BitAnd": np.bitwise_and, "BitOr": np.bitwise_or, "BitXor": np.bitwise_xor}[op]
            return W(int(f(ia, ib)), True)
        if rank >= 2 and op in ("LShift", "RShift", "BitAnd", "BitOr", "BitXor"):
            raise Refused("float bits")
        run_int = (x.rt and _rank(x) <= 1) or (y.rt and _rank(y) <= 1)
        t = np.dtype(np.complex128) if rank == 3 else F64
        if rank == 3 and op in ("FloorDiv", "Mod", "Pow"):
            raise Refused("complex //")
        f = {"Add": np.add, "Sub": np.subtract, "Mult": np.multiply, "Div": np.true_divide,
             "FloorDiv": np.floor_divide, "Mod": np.remainder, "Pow": np.power}[op]
        r = f(t.type(a), t.type(b))
        if run_int or rank == 3:
            return r
        return W(float(r), True)

    def cmp(self, op, x, y):
        for u, other in ((x, y), (y, x)):  # docs/language.md, item 6: one argument slot cannot carry
            # both -1 and 2**64 - 1, so a negative Python int argument compared with a u64 is refused
            if isinstance(u, W) and u.arg and type(u.v) is int and u.v < 0 and \
                    not isinstance(other, W) and other.dtype == np.uint64:
                raise OverflowError("a negative Python int argument compared with a uint64")
        if _rank(x) == 3 or _rank(y) == 3:
            if op not in ("Eq", "NotEq"):
                raise Refused("complex order")
        a, b = _np(x), _np(y)
        if _rank(x) <= 1 and _rank(y) <= 1 and (isinstance(x, W) or isinstance(y, W)):
            a, b = int(a), int(b)  # a Python int and an integer: compared exactly (NumPy 2, NEP 50)
            return np.bool_({"Lt": a < b, "LtE": a <= b, "Eq": a == b, "NotEq": a != b, "Gt": a > b,
                             "GtE": a >= b}[op])
        f = {"Lt": np.less, "LtE": np.less_equal, "Eq": np.equal, "NotEq": np.not_equal, "Gt": np.greater,
             "GtE": np.greater_equal}[op]
        if isinstance(x, W) and isinstance(y, W):
            return np.bool_({"Lt": a < b, "LtE": a <= b, "Eq": a == b, "NotEq": a != b, "Gt": a > b,
                             "GtE": a >= b}[op])
        return np.bool_(f(a, b))

    def unary(self, op, x):
        if op == "UAdd":  # +True is Python's 1: the kernel's int64
            if _is_bool(x):
                return W(int(x.v), x.rt) if isinstance(x, W) else np.int64(x)
            return x
        if op == "USub":
            if isinstance(x, W):
                if x.rt and _rank(x) <= 1:
                    return W(_wrap64(-int(x.v)), True)
                return W(-x.v if type(x.v) is not bool else -int(x.v), x.rt)
            if x.dtype.kind == "b":
                return -np.int64(x)  # Python's -True is -1 (NumPy refuses -np.True_): the kernel's i64
            return -x
        if op == "Invert":
            if _rank(x) >= 2:
                raise Refused("~float")
            if isinstance(x, W):
                if type(x.v) is bool:
                    return np.bool_(not x.v)
                return W(_wrap64(~x.v) if x.rt else ~x.v, x.rt)
            return ~x
        if op == "Not":
            return np.bool_(not self.truth(x))
        raise Refused(op)

    def call(self, f, args):
        if f in ("min", "max"):
            a, b = args
            if _rank(a) == 3 or _rank(b) == 3:
                raise Refused("complex min")
            gt = self.cmp("Lt" if f == "min" else "Gt", b, a)
            return self.choose(bool(gt), b, a)
        if f in ("int", "float", "bool"):
            (v,) = args
            if f == "bool":
                return np.bool_(self.truth(v))
            if _rank(v) == 3:
                raise Refused("complex to real")
            if f == "int":
                if isinstance(v, W) and type(v.v) is int and not v.rt:
                    if not -2**63 <= v.v < 2**63:
                        raise Refused("int() of a literal beyond int64")
                    return self.concrete_of_weak(v)
                return self.to(np.dtype(np.int64), v)
            return self.to(F64, v)
        if f == "abs":
            (v,) = args
            if isinstance(v, W):
                if v.rt and _rank(v) <= 1:
                    return W(_wrap64(abs(int(v.v))), True)
                r = abs(v.v)
                return W(int(r) if type(v.v) is bool else r, v.rt) if _rank(v) < 3 else W(r, v.rt)
            if v.dtype.kind == "b":
                return np.int64(v)  # Python's abs(True), 1, as +b and -b (docs/language.md's table)
            return np.abs(v)
        name = f.split(".")[1]
        if all(isinstance(a, W) and not (a.rt and _rank(a) <= 1) for a in args) and \
                any(_rank(a) == 2 for a in args):
            # a math call of Python floats is a weak float in Tack, which where it meets f32 or f16 is
            # computed in f32 (docs/language.md, "Differences from NumPy", item 2); here a float64
            self.weak_math = True
        if f.startswith("math."):
            args = [self.math_arg(a) for a in args]
            if name in ("floor", "ceil", "trunc"):
                return getattr(np, name)(args[0])  # kernel's math.floor: the float, not Python's int (triaged)
            name = {"atan": "arctan", "atan2": "arctan2", "pow": "power"}.get(name, name)
            self.ulps = self.ulps or name in ULP_FUNCS
            return getattr(np, {"fabs": "fabs", "copysign": "copysign"}.get(name, name))(*args)
        # np.*
        if name in ("minimum", "maximum"):
            a, b = args
            if _rank(a) == 3 or _rank(b) == 3:
                raise Refused("complex np.maximum")
            a, b = self.big(a, b)
            if isinstance(a, W) and isinstance(b, W) and max(_rank(a), _rank(b)) == 1:
                a, b = self.concrete_of_weak(W(int(a.v), a.rt)), self.concrete_of_weak(W(int(b.v), b.rt))
            t, weak = self.promote_pair(a, b)
            if weak:
                if t == 0:
                    raise Refused("weak bools")
                av, bv = float(a.v) if t == 2 else a.v, float(b.v) if t == 2 else b.v
                r = getattr(np, name)(np.float64(av), np.float64(bv)) if t == 2 else getattr(np, name)(av, bv)
                return W(float(r), a.rt or b.rt) if t == 2 else W(r, a.rt or b.rt)
            if t.kind in "iu":  # a Python int must fit the promoted type, as in arithmetic (NumPy 2)
                for u in (a, b):
                    if isinstance(u, W) and _rank(u) <= 1 and not np.iinfo(t).min <= u.v <= np.iinfo(t).max:
                        raise OverflowError("out of bounds") if u.rt else Refused("literal out of bounds")
            return getattr(np, name)(self.to(t, a), self.to(t, b))
        if name == "square":  # x * x in x's type, a bool NumPy's int8 first (docs/language.md)
            (x,) = args
            if not isinstance(x, W) and x.dtype.kind == "b":
                x = np.int8(x)
            return self.bin("Mult", x, x)
        if name == "power":  # x ** y, but an integer to a negative integer literal is refused
            a, b = args
            if isinstance(b, W) and not b.rt and type(b.v) is int and b.v < 0 and _rank(a) <= 1:
                raise Refused("np.power of an integer to a negative integer")
            return self.bin("Pow", a, b)
        if name in ("abs", "absolute") and isinstance(args[0], W) and _rank(args[0]) == 1:
            return W(abs(args[0].v), args[0].rt)  # np.abs of a Python int: abs's, a Python int
        self.ulps = self.ulps or name in ULP_FUNCS
        if all(isinstance(a, W) for a in args):
            if name in ("floor", "trunc", "ceil") and all(_rank(a) <= 1 for a in args):
                return args[0]  # an integer as it is
            args = [self.math_arg(a) for a in args]
        else:
            # NumPy's loop for the fixed-width arguments; a Python number takes it, unchecked (NumPy
            # converts it to the loop's float: np.arctan2(2**31, int16) is float32), but a Python
            # float meeting integers is the default float, a Python int meeting a bool int64 (Tack's
            # promotion, lower_call.c's numpy_math)
            t = np.result_type(*[a.dtype for a in args if not isinstance(a, W)])
            for a in args:
                if isinstance(a, W):
                    r = _rank(a)
                    if r == 3:
                        t = np.result_type(t, np.complex64)
                    elif r == 2 and t.kind in "iub":
                        t = F64
                    elif r == 1 and t.kind == "b":
                        t = np.dtype(np.int64)
            if t.kind in "iub" and name == "fmod":
                tt = np.dtype(np.int8) if t.kind == "b" else t
                for a in args:
                    if isinstance(a, W) and not np.iinfo(tt).min <= int(a.v) <= np.iinfo(tt).max:
                        raise OverflowError if a.rt else Refused("literal")
                x, y = [self.to(tt, a) for a in args]
                if y == 0:
                    raise ZeroDivisionError
                return np.fmod(x, y)
            if t.kind in "iub" and name in ("floor", "trunc", "ceil", "sign", "abs", "isnan"):
                args = [self.to(t, a) for a in args]
            elif t.kind in "iub":
                bits = 8 if t.kind == "b" else t.itemsize * 8
                ft = np.float16 if bits <= 8 else np.float32 if bits == 16 else np.float64
                args = [np.float32(ft(_np(a))) if ft is np.float16 else ft(_np(a)) for a in args]
            else:
                args = [t.type(a.v) if isinstance(a, W) else a for a in args]
        try:
            r = getattr(np, name)(*args)
        except TypeError as e:
            raise Refused(str(e)) from None
        if isinstance(r, np.float16):
            r = np.float32(r)
        return r

    def math_arg(self, a):
        """A math function's argument: an integer or bool in the default float (f64)."""
        if isinstance(a, W):
            if _rank(a) == 3:
                return np.complex128(a.v)
            return np.float64(a.v)
        if a.dtype.kind in "iub":
            return np.float64(a)
        if a.dtype.kind == "c":
            raise Refused("math of complex")
        return a


# ------------------------------------------------------------------ cases
class Case:
    def __init__(self, seed, n_exprs=6):
        rng = random.Random(seed)
        self.seed = seed
        nprng = random.Random(seed + 1)
        self.arrays = [edge_values(rng.choice(ARRAY_DTYPES), nprng) for _ in range(3)]
        self.scalars = [scalar_arg(rng) for _ in range(2)]
        g = Gen(rng, self.arrays, self.scalars)
        self.exprs = [g.expr() for _ in range(n_exprs)]
        self.outs = [np.dtype(rng.choice(OUT_DTYPES)) for _ in range(n_exprs)]
        self.aug = [rng.choice([None] * 12 + AUG_OPS) for _ in range(n_exprs)]

    def source(self, which):
        params = ", ".join([f"a{k}" for k in range(3)] + [f"s{k}" for k in range(2)] +
                           [f"o{j}" for j in which])
        body = "".join(f"        o{j}[i] {self.aug[j] or ''}= {self.exprs[j]}\n" for j in which)
        return (f"def k({params}):\n    for i in range({N}):\n{body}")

    def fresh(self, which):
        outs = [np.full(N, 1, self.outs[j]) for j in which]  # 1: an augmented store adds to it
        return [a.copy() for a in self.arrays] + list(self.scalars) + outs

    def oracle(self, j):
        """Expression j's outputs (or exception type) by the oracle."""
        out = np.full(N, 1, self.outs[j])
        ulps = False
        for i in range(N):
            env = {f"a{k}": [np.float32(v) if a.dtype == np.float16 else v for v in a]
                   for k, a in enumerate(self.arrays)}
            for k, s in enumerate(self.scalars):
                env[f"s{k}"] = W(s, True, True) if type(s) in (int, float, bool, complex) else s
            env["i"] = W(i, True)
            o = Oracle(env)
            try:
                v = o.run(self.exprs[j])
                if self.aug[j]:
                    with np.errstate(all="ignore"), warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        old = out[i]
                        t = out.dtype
                        if self.aug[j] in "+-" and t.kind in "iufc" and t != np.float16:
                            # a parallel loop's a[k] += v is atomic: v converted to the element's type
                            # first, added in it (docs/language.md, "Atomics"; "Differences from NumPy")
                            if isinstance(v, W) and type(v.v) is int and t.kind in "iu" and \
                                    not np.iinfo(t).min <= v.v <= np.iinfo(t).max:
                                raise OverflowError("out of bounds") if v.rt else Refused("literal")
                            if _rank(v) == 3 and t.kind != "c":
                                raise Refused("complex into a real element")
                            v = (np.add if self.aug[j] == "+" else np.subtract)(old, o.to(t, v))
                        else:  # NumPy's a[k] = a[k] op v
                            v = o.bin(_AUG_NAMES[self.aug[j]], np.float32(old) if out.dtype == np.float16 else old, v)
                if isinstance(v, W):
                    if type(v.v) is int and self.outs[j].kind in "iu":
                        info = np.iinfo(self.outs[j])
                        if not v.rt and not info.min <= v.v <= info.max:
                            raise Refused("literal out of bounds")
                    if type(v.v) is int and self.outs[j].kind == "f" and not v.rt and not -2**63 <= v.v < 2**64:
                        raise Refused("huge")
                if isinstance(v, W) and v.arg and type(v.v) is int and self.outs[j].kind in "iu" and \
                        not np.iinfo(self.outs[j]).min <= v.v <= np.iinfo(self.outs[j]).max:
                    raise OverflowError("a Python int argument stored: checked at the call")
                if _rank(v) == 3 and self.outs[j].kind not in "cb":
                    raise Refused("a complex stored into a real element")  # NumPy drops .imag, warning
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out[i] = o.to(self.outs[j], v)
            except (Refused, TypeError):
                return "refused", False
            except Skip:
                return "skip", False
            except (ZeroDivisionError, OverflowError, ValueError) as e:
                return type(e).__name__, False
            ulps = ulps or o.ulps
            narrow = [a.dtype for a in self.arrays] + [self.outs[j]] + [np.asarray(v).dtype for v in self.scalars]
            if o.weak_math and any(t in (np.float16, np.float32, np.complex64) for t in narrow):
                return "skip", False  # item 2's f32 computation of a weak math call: not modelled
        return out, ulps


_AUG_NAMES = {"+": "Add", "-": "Sub", "*": "Mult", "/": "Div", "//": "FloorDiv", "%": "Mod", "**": "Pow",
              "<<": "LShift", ">>": "RShift", "&": "BitAnd", "|": "BitOr", "^": "BitXor"}


def _ulps(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "c":
        return max(_ulps(a.real, b.real), _ulps(a.imag, b.imag))
    if a.dtype.kind != "f":
        return 0 if np.array_equal(a, b) else 1 << 62
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ia, ib = a.view(bits).astype(np.int64), b.view(bits).astype(np.int64)
    ia = np.where(ia < 0, np.int64(-2**63) - ia if a.dtype.itemsize == 8 else -(ia & ((1 << (8 * a.dtype.itemsize - 1)) - 1)), ia)
    ib = np.where(ib < 0, np.int64(-2**63) - ib if a.dtype.itemsize == 8 else -(ib & ((1 << (8 * b.dtype.itemsize - 1)) - 1)), ib)
    d = np.abs(ia - ib)
    d[np.isnan(a) & np.isnan(b)] = 0
    return int(d.max())


def _same(a, b, ulps):
    if a.dtype != b.dtype:
        return False
    if ulps and a.dtype.kind not in "fc":
        return True  # a math function's last place, made an integer (int(np.log(np.exp(1)))): either side
    if a.tobytes() == b.tobytes():
        return True
    if a.dtype.kind in "fc":  # any NaN for a NaN (its sign and payload are no number); else the bits
        parts = (a.real, b.real, a.imag, b.imag) if a.dtype.kind == "c" else (a, b)
        same = True
        for x, y in zip(parts[::2], parts[1::2]):
            nan = np.isnan(x)
            same = same and bool((nan == np.isnan(y)).all()) and x[~nan].tobytes() == y[~nan].tobytes()
        if same:
            return True
    # a math function: within a few ulps of the type it computed in (at most f32's in an f64 output)
    return ulps and (_ulps(a, b) <= 4 or bool(np.allclose(a, b, rtol=4 * 2.0**-23, atol=0, equal_nan=True)))


def _outcome(kernel, args):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kernel(*args)
    except tack.CompileError:
        return "refused"
    except (ZeroDivisionError, OverflowError, ValueError, TypeError, IndexError) as e:
        return type(e).__name__
    return None


_AGREE = {("refused", "refused"), ("OverflowError", "refused"), ("refused", "OverflowError"),
          # a Python int argument is checked when the call is made, before the first element's error
          ("ZeroDivisionError", "OverflowError"), ("ValueError", "OverflowError"),
          # the oracle stops at the first element's error; Tack refuses the kernel's types first
          ("ZeroDivisionError", "refused"), ("ValueError", "refused")}


def run_case(case, default_float, which, counter=[0]):
    """[(expression index or None, what differed)] for the expressions `which` of the case, run as one kernel."""
    counter[0] += 1
    fn = _last_fn(case, which)
    opts = {"default_float": tack.f64} if default_float == "f64" else {}
    ca, pa = case.fresh(which), case.fresh(which)
    co = _outcome(tack.kernel(fn, **opts), ca)
    po = _outcome(tack.kernel(fn, jit=False, **opts), pa)
    problems = []
    if co != po:
        problems.append((None, f"compiled {co or 'ran'}, debug {po or 'ran'}"))
        return problems, co, po
    if co is None:
        for j, c, p in zip(which, ca[5:], pa[5:]):
            if not _same(c, p, True):
                problems.append((j, f"compiled {c!r} debug {p!r}"))
    return problems, co, po


def check(case, default_float="f64"):
    """The differences found in one case: [(kind, expression, detail)]."""
    found = []
    which = list(range(len(case.exprs)))
    want = [case.oracle(j) for j in which] if default_float == "f64" else None
    probs, co, po = run_case(case, default_float, which)
    singles = which if co is not None or probs else []
    if not singles:
        if want:
            for j in which:
                w, ulps = want[j]
                if isinstance(w, str):
                    singles.append(j)
        if not singles:
            if want:
                compare(case, which, want, found)
            return found
    for j in which:
        if j not in singles:
            continue
        probs, co, po = run_case(case, default_float, [j])
        for _, detail in probs:
            found.append(("modes", case.exprs[j], case.outs[j], detail))
        if probs or not want:
            continue
        w, ulps = want[j]
        if isinstance(w, str) and w == "skip":
            continue
        if isinstance(w, str) or co is not None:
            wk = w if isinstance(w, str) else None
            if wk != co and (wk, co) not in _AGREE:
                found.append((_kind(co, wk), case.exprs[j], case.outs[j],
                              f"tack {co or 'ran'}, oracle {w if isinstance(w, str) else w!r}"))
            continue
        args = case.fresh([j])
        tack.kernel(_last_fn(case, [j]), default_float=tack.f64)(*args)
        if not _same(args[5], w, ulps):
            found.append(("value", case.exprs[j], case.outs[j], f"tack {args[5]!r}, oracle {w!r}"))
    if not [j for j in which if j not in singles]:
        return found
    rest = [j for j in which if j not in singles]
    if rest and want:
        args = case.fresh(rest)
        try:
            tack.kernel(_last_fn(case, rest), default_float=tack.f64)(*args)
        except Exception:  # noqa: BLE001 -- the singles above name it
            return found
        for j, got in zip(rest, args[5:]):
            w, ulps = want[j]
            if not _same(got, w, ulps):
                found.append(("value", case.exprs[j], case.outs[j], f"tack {got!r}, oracle {w!r}"))
    return found


# What a difference between Tack and the oracle is.  "value" (both ran, other bits), "raise" (Tack
# raised at run time where NumPy computes) and "silent" (Tack ran where the oracle raises at run time:
# a division by zero, an overflow NumPy 2 reports) are Tack's bugs or the oracle's, to be fixed either
# way; "refusal" (Tack refuses at compile time what NumPy computes: sin of a complex, a complex stored
# into a real array) and "oracle-gap" (Tack runs what the oracle refuses) are listed by the long run
# for a person to read, and do not fail the tests.
FAILING = ("modes", "value", "raise", "silent")


def _kind(tack_outcome, oracle_outcome):
    if tack_outcome == "refused":
        return "refusal"
    if tack_outcome is not None:
        return "raise"
    return "oracle-gap" if oracle_outcome == "refused" else "silent"


def case_function(case, which, label):
    """The case's kernel of the expressions `which` (a plain function), its source where Tack reads
    it (linecache, under a file name of `label`, the seed and `which`)."""
    import linecache
    ns = {"np": np, "math": math, "tack": tack}
    src = case.source(which)
    fname = f"<{label} seed {case.seed} {'_'.join(map(str, which))}>"
    linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
    exec(compile(src, fname, "exec"), ns)
    return ns["k"]


def _last_fn(case, which):
    """case_function, named after its seed and expressions."""
    fn = case_function(case, which, "numbers-fuzz")
    fn.__name__ = fn.__qualname__ = f"k_{case.seed}_{'_'.join(map(str, which))}"
    return fn


def compare(case, which, want, found):
    args = case.fresh(which)
    tack.kernel(_last_fn(case, which), default_float=tack.f64)(*args)
    for j, got in zip(which, args[5:]):
        w, ulps = want[j]
        if not _same(got, w, ulps):
            found.append(("value", case.exprs[j], case.outs[j], f"tack {got!r}, oracle {w!r}"))


def main(seconds, start=0, default_float="f64"):
    t0, seed, n, found = time.time(), start, 0, []
    while time.time() - t0 < seconds:
        case = Case(seed)
        try:
            f = check(case, default_float)
        except Exception as e:  # noqa: BLE001 -- a crash of the fuzzer or of Tack is a finding
            f = [("crash", case.source(range(len(case.exprs))), None, f"{type(e).__name__}: {e}")]
        for x in f:
            print(seed, *x, sep=" | ", flush=True)
        found += [x for x in f if x[0] in FAILING or x[0] == "crash"]
        n += len(case.exprs)
        seed += 1
    print(f"{n} expressions in {seed - start} kernels, {len(found)} findings of kinds {FAILING}", flush=True)


if __name__ == "__main__":
    main(float(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0,
         sys.argv[3] if len(sys.argv) > 3 else "f64")
