"""Quaternions made scalars for the adjoint: the rules of tack._autodiff_scalarize for quat values.

A quaternion (`quat`, `quatd`: `(x, y, z, w)`, docs/language.md "Quaternions and transforms") is,
to the adjoint, four float locals like a vec4's, so construction, components, `q + r`, `q - r`,
`-q`, scaling by a number, `tack.dot`, `tack.length`, `tack.normalize` and array elements follow
the vector rules there.  What is a quaternion's own is written out here on the components:

- `q * r`, the Hamilton product;
- `tack.quat_rotate(q, v)` and `quat_rotate_inv`: `q v q^-1`, which for a quaternion of any
  nonzero length is `((w^2 - u.u) v + 2 (u.v) u +- 2 w (u x v)) / |q|^2` with `u = (x, y, z)`
  (the forward's meaning: a quaternion rotates without scaling; the zero one gives NaN);
- `tack.quat_inverse(q)`, `conj(q) / |q|^2`; `tack.quat_to_matrix(q)`, the rotation matrix of
  `q / |q|`; `tack.quat_from_axis_angle(axis, angle)`, with the axis normalized and a zero axis
  giving the identity, as the forward's; `tack.quat_identity()`.

`quat_slerp`, `quat_from_matrix` and transforms are refused by the caller.  The recomputed values
may differ from the forward's by rounding (the formulas are the textbook ones), which only scales
the derivatives.
"""

from __future__ import annotations

import ast

SUPPORTED = ("quat_rotate", "quat_rotate_inv", "quat_inverse", "quat_to_matrix", "quat_from_axis_angle",
             "quat_identity")


def call_type(sc, name, e, args):
    """The Ty a quaternion function's call gives (args: its arguments' Tys)."""
    from ._autodiff_scalarize import Ty, _wider

    q = args[0] if args else None
    if name in ("quat_rotate", "quat_rotate_inv"):
        v = args[1] if len(args) > 1 else None
        return Ty("v", (3,), _wider(q.dt, v.dt) if q is not None and v is not None else "f32")
    if name == "quat_inverse":
        return q
    if name == "quat_to_matrix":
        return Ty("m", (3, 3), q.dt if q is not None else "f32")
    if name == "quat_from_axis_angle":
        return Ty("q", (4,), q.dt if q is not None else "f32")
    if name == "quat_identity":
        return Ty("q", (4,), "f64" if sc.gen.kernel.default_float.name == "f64" else "f32")
    return None


def product(sc, e, a, b):
    """The Hamilton product of component lists a and b."""
    from ._autodiff_scalarize import _mul, _sub, _sum

    (ax, ay, az, aw), (bx, by, bz, bw) = a, b
    return [_sum([_mul(aw, bx, e), _mul(ax, bw, e), _mul(ay, bz, e), _neg_mul(az, by, e)], e),
            _sum([_mul(aw, by, e), _neg_mul(ax, bz, e), _mul(ay, bw, e), _mul(az, bx, e)], e),
            _sum([_mul(aw, bz, e), _mul(ax, by, e), _neg_mul(ay, bx, e), _mul(az, bw, e)], e),
            _sub(_sub(_sub(_mul(aw, bw, e), _mul(ax, bx, e), e), _mul(ay, by, e), e), _mul(az, bz, e), e)]


def _neg_mul(a, b, node):
    from ._autodiff_scalarize import _mul, _neg

    return _neg(_mul(a, b, node), node)


def call(sc, name, e, ty):
    """The components of a quaternion function's call."""
    from ._autodiff_scalarize import Ty, _add, _c, _div, _loc, _mul, _neg, _sub, _sum

    one = Ty("v", (1,), ty.dt)
    if name == "quat_identity":
        return [_c(0.0, e), _c(0.0, e), _c(0.0, e), _c(1.0, e)]
    if name == "quat_from_axis_angle":
        _t, ax = sc.comps(e.args[0])
        ax = sc.bind(ax, _t, e)
        sq = sc.bind([_sum([_mul(c, c, e) for c in ax], e)], one, e)[0]
        half = sc.bind([_mul(sc.scal(e.args[1]), _c(0.5, e), e)], one, e)[0]
        pos = _loc(ast.Compare(left=sq, ops=[ast.Gt()], comparators=[_c(0.0, e)]), e)
        s = sc.bind([_loc(ast.IfExp(test=pos, body=_div(sc.fn("sin", [half], e), sc.fn("sqrt", [sq], e), e),
                                    orelse=_c(0.0, e)), e)], one, e)[0]
        w = _loc(ast.IfExp(test=_loc(ast.Compare(left=sq, ops=[ast.Gt()], comparators=[_c(0.0, e)]), e),
                           body=sc.fn("cos", [half], e), orelse=_c(1.0, e)), e)
        return [_mul(c, s, e) for c in ax] + [w]
    _t, q = sc.comps(e.args[0])
    q = sc.bind(q, _t, e)
    x, y, z, w = q
    n = sc.bind([_sum([_mul(c, c, e) for c in q], e)], one, e)[0]
    if name == "quat_inverse":
        return [_div(_neg(x, e), n, e), _div(_neg(y, e), n, e), _div(_neg(z, e), n, e), _div(w, n, e)]
    if name == "quat_to_matrix":
        s = sc.bind([_div(_c(2.0, e), n, e)], one, e)[0]

        def sm(a, b, c, d, sign):  # s * (a b +- c d)
            inner = _add(_mul(a, b, e), _mul(c, d, e), e) if sign > 0 else _sub(_mul(a, b, e), _mul(c, d, e), e)
            return _mul(s, inner, e)

        def diag(a, b):
            return _sub(_c(1.0, e), _mul(s, _add(_mul(a, a, e), _mul(b, b, e), e), e), e)

        return [diag(y, z), sm(x, y, z, w, -1), sm(x, z, y, w, 1),
                sm(x, y, z, w, 1), diag(x, z), sm(y, z, x, w, -1),
                sm(x, z, y, w, -1), sm(y, z, x, w, 1), diag(x, y)]
    # quat_rotate, quat_rotate_inv: ((w^2 - u.u) v + 2 (u.v) u +- 2 w (u x v)) / |q|^2
    _tv, v = sc.comps(e.args[1])
    v = sc.bind(v, _tv, e)
    u = [x, y, z]
    a = sc.bind([_sub(_mul(w, w, e), _sum([_mul(c, c, e) for c in u], e), e)], one, e)[0]
    b = sc.bind([_mul(_c(2.0, e), _sum([_mul(p, r, e) for p, r in zip(u, v)], e), e)], one, e)[0]
    cw = sc.bind([_mul(_c(2.0 if name == "quat_rotate" else -2.0, e), w, e)], one, e)[0]
    cr = [_sub(_mul(u[1], v[2], e), _mul(u[2], v[1], e), e), _sub(_mul(u[2], v[0], e), _mul(u[0], v[2], e), e),
          _sub(_mul(u[0], v[1], e), _mul(u[1], v[0], e), e)]
    return [_div(_sum([_mul(a, v[k], e), _mul(b, u[k], e), _mul(cw, cr[k], e)], e), n, e) for k in range(3)]
