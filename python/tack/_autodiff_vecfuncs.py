"""The tack functions of vectors, matrices and complex numbers made scalars for the adjoint.

The scalarizing rewrite (tack._autodiff_scalarize) turns a kernel on vectors, matrices and complex
numbers into the same kernel on their components before it is differentiated; this module holds
its rules for the intrinsics that take such values, one case per function, each written as the
scalar expressions of the components that the forward computes:

- of a vector, matrix or complex result (`vector`): `tack.identity`, `conjugate` (the method and
  the function), `cmath.exp`, `tack.cross`, `tack.normalize` (the zero vector for the zero
  vector, as in the forward), `tack.inverse` of 2x2, 3x3 and 4x4 matrices (the forward's adjugate
  over the determinant, in the operations and order of prelude_linalg.c, the zero matrix where
  the determinant is exactly 0; the 4x4 one from tack._autodiff_matrix), `tack.transpose`,
  `tack.outer` and `tack.diag`;
- of a number (`scalar`): `tack.dot`, `tack.length` and `tack.norm`, `abs` of a complex number
  (the square root taken only where its argument is positive, so that the gradient at zero is
  zero, as Warp and PyTorch give), `cmath.phase`, `tack.trace` and `tack.determinant`;
- and the type each vector-valued one gives (`result_type`), which the rewrite asks before it
  asks for the components;
- a matrix's entry read at computed indices (`entry_select`: the rewrite's select over the
  entries, each index counted from the end where negative, as the forward wraps it).

Each function answers None for a name it does not know, and the rewrite goes on to its own
refusals, which say what to write instead.  The components an expression reads more than once
are bound to locals first (`sc.bind`), so nothing is recomputed and no expression grows with
the nesting.  Quaternions and transforms have their own module (tack._autodiff_quat), the 4x4
determinant and inverse theirs (tack._autodiff_matrix), the decompositions theirs
(tack._autodiff_decomp).
"""

from __future__ import annotations

import ast
import copy

from . import _autodiff_matrix


def _square_norm(sc, arg, e):
    """(vector arg's components in locals, the sum of their squares in a local, the test that it is
    positive): what a length, a norm and a normalized vector are made of."""
    from ._autodiff_scalarize import Ty, _c, _loc, _mul, _sum

    t, a = sc.comps(arg)
    a = sc.bind(a, t, e)
    sq = sc.bind([_sum([_mul(c, c, e) for c in a], e)], Ty("v", (1,), t.dt), e)[0]
    pos = _loc(ast.Compare(left=copy.deepcopy(sq), ops=[ast.Gt()], comparators=[_c(0.0, e)]), e)
    return a, sq, pos


def result_type(sc, name, e):
    """The Ty of call e of intrinsic `name` on vectors, matrices or complex numbers, or None."""
    from ._autodiff_scalarize import Ty

    if name == "inverse" and e.args:
        t = sc.ty(e.args[0])
        if t is not None and t.kind == "m" and t.shape in ((2, 2), (3, 3), (4, 4)):
            return t
        raise sc.error(f"{ast.unparse(e.func)}() of a {'x'.join(map(str, t.shape)) if t else ''} matrix is "
                       f"not differentiated yet (2x2, 3x3 and 4x4 are)", e)
    args = [sc.ty(a) for a in e.args]
    a0 = args[0] if args else None
    if name in ("cross", "normalize", "conjugate", "cmath.exp"):
        return a0
    if name == "transpose" and a0 is not None:
        return Ty("m", (a0.shape[1], a0.shape[0]), a0.dt)
    if name == "outer" and a0 is not None and args[1] is not None:
        return Ty("m", (a0.shape[0], args[1].shape[0]), a0.dt)
    if name == "diag" and a0 is not None:
        return Ty("m", (a0.shape[0], a0.shape[0]), a0.dt) if a0.kind == "v" else Ty("v", (a0.shape[0],), a0.dt)
    return None


def vector(sc, name, e, ty):
    """(Ty, [component expressions]) of call e of intrinsic `name`, whose result is of type ty; None
    where `name` is none of these functions."""
    from ._autodiff_scalarize import Ty, _c, _div, _loc, _mul, _neg, _sub, _sum

    if name == "identity":
        return ty, [_c(1.0 if i == j else 0.0, e) for i in range(ty.shape[0]) for j in range(ty.shape[1])]
    if name == "conjugate":
        t, cs = sc.comps(e.args[0])
        return t, [cs[0], _neg(cs[1], e)]
    if name == "cmath.exp":
        _t, (a, b) = sc.comps(e.args[0])
        b = sc.bind([b], Ty("v", (1,), ty.dt), e)[0]
        ex = sc.bind([sc.fn("exp", [a], e)], Ty("v", (1,), ty.dt), e)[0]
        return ty, [_mul(ex, sc.fn("cos", [b], e), e), _mul(ex, sc.fn("sin", [b], e), e)]
    if name == "cross":
        _t, a = sc.comps(e.args[0])
        _t, b = sc.comps(e.args[1])
        a = sc.bind(a, ty, e)
        b = sc.bind(b, ty, e)
        return ty, [_sub(_mul(a[1], b[2], e), _mul(a[2], b[1], e), e),
                    _sub(_mul(a[2], b[0], e), _mul(a[0], b[2], e), e),
                    _sub(_mul(a[0], b[1], e), _mul(a[1], b[0], e), e)]
    if name == "normalize":
        a, sq, pos = _square_norm(sc, e.args[0], e)
        inv = sc.bind([_loc(ast.IfExp(test=pos, body=_div(_c(1.0, e), sc.fn("sqrt", [sq], e), e),
                                        orelse=_c(0.0, e)), e)], Ty("v", (1,), ty.dt), e)[0]
        return ty, [_mul(c, inv, e) for c in a]
    if name == "inverse":  # 2x2 and 3x3 (call_ty): the forward's adjugate over the determinant,
        # in its operations and order (prelude_linalg.c); the zero matrix where that is exactly 0
        t, a = sc.comps(e.args[0])
        a = sc.bind(a, t, e)
        n = t.shape[0]
        m = lambda r, c: a[r * n + c]  # noqa: E731
        one = Ty("v", (1,), t.dt)
        if n == 4:
            num, d = _autodiff_matrix.inverse4(sc, a, t, e)
        elif n == 2:
            d = sc.bind([_sub(_mul(m(0, 0), m(1, 1), e), _mul(m(0, 1), m(1, 0), e), e)], one, e)[0]
            num = [m(1, 1), _neg(m(0, 1), e), _neg(m(1, 0), e), m(0, 0)]
        else:
            def cof(r, c):  # the cofactor of a[r][c], written as the prelude's tk_cof3
                r1, r2 = [k for k in range(3) if k != r]
                c1, c2 = [k for k in range(3) if k != c]
                if (r + c) % 2:  # the prelude's order: the minor's columns swapped, not negated
                    c1, c2 = c2, c1
                return _sub(_mul(m(r1, c1), m(r2, c2), e), _mul(m(r1, c2), m(r2, c1), e), e)
            cs = sc.bind([cof(i, j) for i in range(3) for j in range(3)], t, e)
            d = sc.bind([_sum([_mul(m(0, j), cs[j], e) for j in range(3)], e)], one, e)[0]
            num = [cs[j * 3 + i] for i in range(3) for j in range(3)]
        nz = _loc(ast.Compare(left=copy.deepcopy(d), ops=[ast.NotEq()], comparators=[_c(0.0, e)]), e)
        return ty, [_loc(ast.IfExp(test=copy.deepcopy(nz), body=_div(x, d, e), orelse=_c(0.0, e)), e) for x in num]
    if name == "transpose":
        t, a = sc.comps(e.args[0])
        r, c = t.shape
        return ty, [a[j * c + i] for i in range(c) for j in range(r)]
    if name == "outer":
        _t, a = sc.comps(e.args[0])
        _t, b = sc.comps(e.args[1])
        a, b = sc.bind(a, _t, e), sc.bind(b, _t, e)
        return ty, [_mul(x, y, e) for x in a for y in b]
    if name == "diag":
        t, a = sc.comps(e.args[0])
        if t.kind == "v":
            n = t.shape[0]
            return ty, [a[i] if i == j else _c(0.0, e) for i in range(n) for j in range(n)]
        return ty, [a[i * t.shape[1] + i] for i in range(t.shape[0])]
    return None


def scalar(sc, name, e, t0):
    """The scalar expression of call e of intrinsic `name` on vector values (t0: its first argument's
    Ty, or None); None where `name` is none of these functions."""
    from ._autodiff_scalarize import _c, _loc, _mul, _neg, _sub, _sum

    if name == "dot":
        _t, a = sc.comps(e.args[0])
        _t, b = sc.comps(e.args[1])
        return _sum([_mul(x, y, e) for x, y in zip(a, b)], e)
    if name in ("length", "norm") or (name in ("abs", "fabs") and t0 is not None and t0.kind == "c"):
        _a, sq, pos = _square_norm(sc, e.args[0], e)
        return _loc(ast.IfExp(test=pos, body=sc.fn("sqrt", [sq], e), orelse=_c(0.0, e)), e)
    if name == "cmath.phase":
        _t, (a, b) = sc.comps(e.args[0])
        return sc.fn("atan2", [b, a], e)
    if name == "trace":
        t, a = sc.comps(e.args[0])
        return _sum([a[i * t.shape[1] + i] for i in range(min(t.shape))], e)
    if name == "determinant" and t0.shape in ((2, 2), (3, 3), (4, 4)):
        t, a = sc.comps(e.args[0])
        a = sc.bind(a, t, e)
        if t.shape == (4, 4):
            return _autodiff_matrix.minors4(sc, a, t, e)[2]
        if t.shape == (2, 2):
            return _sub(_mul(a[0], a[3], e), _mul(a[1], a[2], e), e)
        m = lambda r, c: a[r * 3 + c]  # noqa: E731
        terms = []
        for c, sign in ((0, 1), (1, -1), (2, 1)):
            c1, c2 = [k for k in range(3) if k != c]
            minor = _sub(_mul(m(1, c1), m(2, c2), e), _mul(m(1, c2), m(2, c1), e), e)
            term = _mul(m(0, c), minor, e)
            terms.append(term if sign > 0 else _neg(term, e))
        return _sum(terms, e)
    return None


def const_int(k):
    """Whether index k is an int literal (-1 included)."""
    if isinstance(k, ast.UnaryOp) and isinstance(k.op, ast.USub):
        k = k.operand
    return isinstance(k, ast.Constant) and type(k.value) is int


def entry_select(sc, e, t, idx):
    """m[i, j] with an index computed: the rewrite's select() over the matrix's entries, each axis's index
    counted from the end where negative (its index()); out of range on either axis, NaN."""
    from ._autodiff_scalarize import Ty, _c, _loc

    _t, cs = sc.comps(e.value)
    r, c = t.shape
    i = sc.index(idx[0], Ty("v", (r,), t.dt), e)
    j = sc.index(idx[1], Ty("v", (c,), t.dt), e)
    out = sc.nan(e)
    for a in reversed(range(r)):
        for b in reversed(range(c)):
            test = _loc(ast.BoolOp(op=ast.And(), values=[
                _loc(ast.Compare(left=copy.deepcopy(i), ops=[ast.Eq()], comparators=[_c(a, e)]), e),
                _loc(ast.Compare(left=copy.deepcopy(j), ops=[ast.Eq()], comparators=[_c(b, e)]), e)]), e)
            out = _loc(ast.IfExp(test=test, body=cs[a * c + b], orelse=out), e)
    return out
