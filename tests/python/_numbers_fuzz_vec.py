"""The differential fuzzer of numbers, vector part (test_fuzz_numbers.py runs
it; `python tests/python/_numbers_fuzz_vec.py SECONDS [FIRST_SEED]` runs it at
length and prints what it finds).

A case is a kernel over arrays of vectors -- `vec3` (f32 components), `vec3d`
(f64) or `vec3i` (i32), given as `(n, 3)` NumPy arrays -- a scalar array of the
components' type, a Python float or int argument and literals, storing random
vector expressions:

    def k(a0, a1, x, s, o0, o1, ...):
        for i in range(x.shape[0]):
            o0[i] = np.maximum(a0[i] * x[i], -a1[i]) + 0.5
            o1[i] += abs(a0[i] - s) / 3.0

Every sub-expression is a vector, so that a Python scalar only ever meets a
vector of a fixed component type (item 2 of docs/language.md's "Differences
from NumPy" never applies).  The oracle is NumPy on the whole `(n, 3)` arrays
at once: a vector is its row, a scalar element a column `x[:, None]`, and the
same source is evaluated there (`abs`, `np.minimum`, `np.sqrt`, ... act
element-wise, as Tack's do on vectors).  Compiled, debug mode (`jit=False`)
and NumPy must give the same bits -- within 4 ulps where a math function is
called -- or Tack must refuse the kernel (a CompileError, which is listed by
the long run, not failed).
"""

from __future__ import annotations

import random
import sys
import time
import warnings

import numpy as np

import tack
from _numbers_fuzz import _ulps, case_function

N = 4
VEC = {"vec3": (tack.vec3, np.float32), "vec3d": (tack.vec3d, np.float64), "vec3i": (tack.vec3i, np.int32)}
FLOAT_FUNCS = ["np.sqrt", "np.exp", "np.sin", "np.floor", "np.abs", "np.log", "np.tanh", "np.ceil", "np.trunc"]
FLOAT_LITS = ["0.5", "3.0", "(-2.5)", "0.1", "1e30", "1e-30"]
INT_LITS = ["1", "2", "3", "(-7)", "100"]


def _values(ft, rng, shape):
    if np.dtype(ft).kind == "i":
        pool = [0, 1, -1, 2, 7, -100, 2**31 - 1, -2**31, 46341, 3]
    else:
        pool = [0.0, -0.0, 1.0, -1.5, 0.1, 2.5, 3.0, 1e30, -7.25, np.inf, np.nan, 1e-40, 300.7, 65504.0]
    with np.errstate(all="ignore"):
        return np.array([rng.choice(pool) for _ in range(int(np.prod(shape)))], ft).reshape(shape)


class VecCase:
    def __init__(self, seed, n_exprs=4):
        rng = random.Random(seed)
        self.seed = seed
        self.kind = rng.choice(sorted(VEC))
        vt, ft = VEC[self.kind]
        self.ft = np.dtype(ft)
        vals = random.Random(seed + 1)
        self.arrays = [_values(ft, vals, (N, 3)) for _ in range(2)]
        self.x = _values(ft, vals, (N,))
        isint = self.ft.kind == "i"
        self.s = rng.choice([3, -2, 100]) if isint or rng.random() < 0.3 else rng.choice([0.5, -2.5, 0.3, 1e10])
        self.rng = rng
        self.exprs = [self.vexpr(0) for _ in range(n_exprs)]
        self.aug = [rng.choice([None, None, None, "+", "-", "*"]) for _ in range(n_exprs)]

    def sleaf(self):
        r = self.rng.random()
        if r < 0.4:
            return "x[i]"
        if r < 0.6:
            return "s"
        lits = INT_LITS if self.ft.kind == "i" else FLOAT_LITS + INT_LITS
        return self.rng.choice(lits)

    def vexpr(self, depth):
        rng = self.rng
        if depth >= 3 or rng.random() < 0.25:
            return f"a{rng.randrange(2)}[i]"
        r = rng.random()
        v = lambda: self.vexpr(depth + 1)  # noqa: E731
        ops = ["+", "-", "*"] + (["/"] if self.ft.kind == "f" else [])
        if r < 0.35:
            return f"({v()} {rng.choice(ops)} {v()})"
        if r < 0.6:
            op = rng.choice(ops)
            return f"({v()} {op} {self.sleaf()})" if rng.random() < 0.5 else f"({self.sleaf()} {op} {v()})"
        if r < 0.7:
            return f"(-{v()})"
        if r < 0.78:
            return f"abs({v()})"
        if r < 0.88:
            f = rng.choice(["np.minimum", "np.maximum"])
            return f"{f}({v()}, {v() if rng.random() < 0.6 else self.sleaf()})"
        if self.ft.kind == "f":
            return f"{rng.choice(FLOAT_FUNCS)}({v()})"
        return f"({v()} * {self.sleaf()})"

    def source(self, which):
        params = ", ".join(["a0", "a1", "x", "s"] + [f"o{j}" for j in which])
        body = "".join(f"        o{j}[i] {self.aug[j] or ''}= {self.exprs[j]}\n" for j in which)
        return f"def k({params}):\n    for i in range(x.shape[0]):\n{body}"

    def fresh(self, which):
        vt, _ = VEC[self.kind]
        return ([tack.array(a.copy(), vt) for a in self.arrays] + [self.x.copy(), self.s] +
                [tack.array(np.ones((N, 3), self.ft), vt) for _ in which])

    def oracle(self, j):
        env = {"a0": self.arrays[0], "a1": self.arrays[1], "x": self.x[:, None], "s": self.s, "np": np,
               "i": slice(None)}
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            v = eval(self.exprs[j], env)
            v = np.broadcast_to(np.asarray(v), (N, 3))
            if v.dtype != self.ft:
                return None  # a type NumPy gives otherwise (an int vector divided): not compared
            old = np.ones((N, 3), self.ft)
            if self.aug[j]:  # on a vector element, componentwise: NumPy's a[k] = a[k] op v
                v = {"+": np.add, "-": np.subtract, "*": np.multiply}[self.aug[j]](old, v)
            return v.astype(self.ft)


def _fn(case, which):
    return case_function(case, which, "numbers-fuzz-vec")


def _run(fn, args, jit):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tack.kernel(fn, jit=jit)(*args)
    except tack.CompileError:
        return "refused"
    except (ZeroDivisionError, OverflowError, ValueError, TypeError, IndexError) as e:
        return type(e).__name__
    return None


def _same(a, b, ulps):
    if a.dtype != b.dtype:
        return False
    nan = np.isnan(a) if a.dtype.kind == "f" else np.zeros(a.shape, bool)
    if a.dtype.kind == "f" and not (nan == np.isnan(b)).all():
        return False
    if a[~nan].tobytes() == b[~nan].tobytes():
        return True
    if not (ulps and a.dtype.kind == "f"):
        return False
    # within 4 ulps, or 4 of the largest operand's where the value was added to the element's 1.0
    # (1 - log(2.5): log's last place, cancelled)
    eps = float(np.finfo(a.dtype).eps)
    return _ulps(a[~nan], b[~nan]) <= 4 or bool(np.allclose(a, b, rtol=4 * eps, atol=8 * eps, equal_nan=True))


def _math(expr):
    """Whether a math function of the C library (its last place is its own) is called."""
    return any(f"np.{f}(" in expr for f in ("sqrt", "exp", "sin", "log", "tanh"))


def check(case):
    """[(kind, expression, detail)]: "modes" (compiled and debug differ), "value" (both ran, NumPy's
    bits differ), "raise" (Tack raised at run time); "refusal" (a CompileError) is listed only."""
    found = []
    which = list(range(len(case.exprs)))
    fn = _fn(case, which)  # all the expressions in one kernel first; one by one where anything differs
    ca, pa = case.fresh(which), case.fresh(which)
    if _run(fn, ca, True) is None and _run(fn, pa, False) is None:
        wants = [case.oracle(j) for j in which]
        ulps = [_math(case.exprs[j]) for j in which]
        if all(_same(c.numpy(), p.numpy(), u) and (w is None or _same(c.numpy(), w, u))
               for c, p, w, u in zip(ca[4:], pa[4:], wants, ulps)):
            return found
    for j in which:
        fn = _fn(case, [j])
        ca, pa = case.fresh([j]), case.fresh([j])
        co, po = _run(fn, ca, True), _run(fn, pa, False)
        if co != po:
            found.append(("modes", case.exprs[j], f"compiled {co or 'ran'}, debug {po or 'ran'}"))
            continue
        if co == "refused":
            found.append(("refusal", case.exprs[j], "tack refused"))
            continue
        if co is not None:
            found.append(("raise", case.exprs[j], f"tack {co}"))
            continue
        c, p = ca[-1].numpy(), pa[-1].numpy()
        ulps = _math(case.exprs[j])
        if not _same(c, p, ulps):  # a math function in SIMD lanes: glibc's vector math, within 4 ulps
            found.append(("modes", case.exprs[j], f"compiled {c!r}, debug {p!r}"))
            continue
        want = case.oracle(j)
        if want is not None and not _same(c, want, ulps):
            found.append(("value", case.exprs[j], f"tack {c!r}, numpy {want!r}"))
    return found


FAILING = ("modes", "value", "raise")


def main(seconds, start=0):
    t0, seed, n, bad = time.time(), start, 0, 0
    while time.time() - t0 < seconds:
        case = VecCase(seed)
        try:
            f = check(case)
        except Exception as e:  # noqa: BLE001 -- a crash of the fuzzer or of Tack is a finding
            f = [("crash", case.source(range(len(case.exprs))), f"{type(e).__name__}: {e}")]
        for x in f:
            print(seed, case.kind, f"s={case.s!r}", *x, sep=" | ", flush=True)
        bad += sum(x[0] in FAILING or x[0] == "crash" for x in f)
        n += len(case.exprs)
        seed += 1
    print(f"{n} vector expressions in {seed - start} kernels, {bad} findings of kinds {FAILING}", flush=True)


if __name__ == "__main__":
    main(float(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0)
