"""Quaternions and transforms made scalars for the adjoint: the rules of tack._autodiff_scalarize for them.

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
  giving the identity, as the forward's; `tack.quat_identity()`;
- `tack.quat_slerp(a, b, t)` in the forward's steps (emit_quat.c): normalized ends, the shorter
  arc, the angle 2 atan2(|a - b|, |a + b|), the linear weights where its sine is 0;
- transforms, seven components (p then q, as stored): `t * u`, `transform_point`,
  `transform_vector` and `transform_inverse`, each in the forward's steps (the rotation as
  `v + w t + u x t`, `t = (2 / |q|^2) u x v`).

- `tack.quat_from_matrix(m)` in the forward's steps: the component solved for first chosen by the
  largest of the trace and the diagonal (the branch kept in a local, so the reverse takes the
  forward's), normalized with `w >= 0`.  The recomputed values
may differ from the forward's by rounding (the formulas are the textbook ones), which only scales
the derivatives.
"""

from __future__ import annotations

import ast

SUPPORTED = ("quat_rotate", "quat_rotate_inv", "quat_inverse", "quat_to_matrix", "quat_from_axis_angle",
             "quat_identity", "quat_slerp", "quat_from_matrix", "transform_point", "transform_vector",
             "transform_inverse")


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
    if name == "quat_from_matrix":
        return Ty("q", (4,), q.dt if q is not None else "f32")
    if name in ("transform_point", "transform_vector"):
        v = args[1] if len(args) > 1 else None
        return Ty("v", (3,), _wider(q.dt, v.dt) if q is not None and v is not None else "f32")
    if name == "transform_inverse":
        return q
    if name == "quat_slerp":
        r = args[1] if len(args) > 1 else None
        return Ty("q", (4,), _wider(q.dt, r.dt) if q is not None and r is not None else "f32")
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
    if name == "quat_slerp":
        return slerp(sc, e, ty)
    if name == "quat_from_matrix":
        return from_matrix(sc, e, ty)
    if name.startswith("transform"):
        return transform(sc, name, e, ty)
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


def slerp(sc, e, ty):
    """quat_slerp(a, b, t) in the forward's steps (emit_quat.c): the ends normalized (the zero
    quaternion stays zero), b negated where a . b < 0, the angle 2 atan2(|a - b|, |a + b|), the
    weights sin((1 - t) th) / sin th and sin(t th) / sin th, or 1 - t and t where sin th is 0.  A
    length is the square root only where its square is positive, so the gradient at equal ends
    (th = 0, the linear weights) is that of the linear blend, the limit of the general one."""
    from ._autodiff_scalarize import Ty, _add, _c, _div, _loc, _mul, _neg, _sub, _sum

    one = Ty("v", (1,), ty.dt)

    def gt0(v):
        return _loc(ast.Compare(left=v, ops=[ast.Gt()], comparators=[_c(0.0, e)]), e)

    def length(cs):
        sq = sc.bind([_sum([_mul(c, c, e) for c in cs], e)], one, e)[0]
        return sc.bind([_loc(ast.IfExp(test=gt0(sq), body=sc.fn("sqrt", [sq], e), orelse=_c(0.0, e)), e)],
                       one, e)[0]

    def normalize(arg):
        _t, q = sc.comps(arg)
        q = sc.bind(q, _t, e)
        n = length(q)
        return sc.bind([_loc(ast.IfExp(test=gt0(n), body=_div(c, n, e), orelse=_c(0.0, e)), e) for c in q], ty, e)

    a = normalize(e.args[0])
    b = normalize(e.args[1])
    t = sc.bind([sc.scal(e.args[2])], one, e)[0]
    neg = _loc(ast.Compare(left=_sum([_mul(p, r, e) for p, r in zip(a, b)], e), ops=[ast.Lt()],
                           comparators=[_c(0.0, e)]), e)
    flip = sc.bind([_loc(ast.IfExp(test=neg, body=_c(True, e), orelse=_c(False, e)), e)], Ty("v", (1,), "bool"), e)[0]
    b = sc.bind([_loc(ast.IfExp(test=flip, body=_neg(c, e), orelse=c), e) for c in b], ty, e)
    th = sc.bind([_mul(_c(2.0, e), sc.fn("atan2", [length([_sub(p, r, e) for p, r in zip(a, b)]),
                                                     length([_add(p, r, e) for p, r in zip(a, b)])], e), e)], one, e)[0]
    sn = sc.bind([sc.fn("sin", [th], e)], one, e)[0]
    zero = _loc(ast.Compare(left=sn, ops=[ast.Eq()], comparators=[_c(0.0, e)]), e)
    omt = _sub(_c(1.0, e), t, e)
    wa = sc.bind([_loc(ast.IfExp(test=zero, body=omt, orelse=_div(sc.fn("sin", [_mul(omt, th, e)], e), sn, e)), e)],
                 one, e)[0]
    wb = sc.bind([_loc(ast.IfExp(test=zero, body=t, orelse=_div(sc.fn("sin", [_mul(t, th, e)], e), sn, e)), e)],
                 one, e)[0]
    return [_add(_mul(p, wa, e), _mul(r, wb, e), e) for p, r in zip(a, b)]


def rotate(sc, e, dt, q, v):
    """quat_rotate of component lists in the forward's steps (emit_quat.c): v + w t + u x t with
    t = (2 / |q|^2) u x v."""
    from ._autodiff_scalarize import Ty, _add, _c, _div, _mul, _sub, _sum

    one = Ty("v", (3,), dt)
    x, y, z, w = q
    s = sc.bind([_div(_c(2.0, e), _sum([_mul(c, c, e) for c in q], e), e)], Ty("v", (1,), dt), e)[0]
    t = sc.bind([_mul(s, _sub(_mul(y, v[2], e), _mul(z, v[1], e), e), e),
                 _mul(s, _sub(_mul(z, v[0], e), _mul(x, v[2], e), e), e),
                 _mul(s, _sub(_mul(x, v[1], e), _mul(y, v[0], e), e), e)], one, e)
    return [_add(_add(v[0], _mul(w, t[0], e), e), _sub(_mul(y, t[2], e), _mul(z, t[1], e), e), e),
            _add(_add(v[1], _mul(w, t[1], e), e), _sub(_mul(z, t[0], e), _mul(x, t[2], e), e), e),
            _add(_add(v[2], _mul(w, t[2], e), e), _sub(_mul(x, t[1], e), _mul(y, t[0], e), e), e)]


def compose(sc, e, ty, a, b):
    """t * u of transforms' component lists (p then q): (t.p + q_t u.p, q_t q_u), u applied first."""
    from ._autodiff_scalarize import _add

    r = rotate(sc, e, ty.dt, a[3:], b[:3])
    return [_add(r[k], a[k], e) for k in range(3)] + product(sc, e, a[3:], b[3:])


def transform(sc, name, e, ty):
    """transform_point(t, p) = quat_rotate(t.q, p) + t.p, transform_vector(t, v) = quat_rotate(t.q, v),
    transform_inverse(t) = (-(q^-1 p), q^-1), as the forward computes them."""
    from ._autodiff_scalarize import Ty, _add, _div, _mul, _neg, _sum

    _t, tc = sc.comps(e.args[0])
    tc = sc.bind(tc, _t, e)
    if name == "transform_inverse":
        x, y, z, w = tc[3:]
        n = sc.bind([_sum([_mul(c, c, e) for c in tc[3:]], e)], Ty("v", (1,), ty.dt), e)[0]
        qi = sc.bind([_div(_neg(x, e), n, e), _div(_neg(y, e), n, e), _div(_neg(z, e), n, e), _div(w, n, e)],
                     Ty("q", (4,), ty.dt), e)
        return [_neg(c, e) for c in rotate(sc, e, ty.dt, qi, tc[:3])] + qi
    _tv, v = sc.comps(e.args[1])
    v = sc.bind(v, _tv, e)
    r = rotate(sc, e, ty.dt, tc[3:], v)
    if name == "transform_vector":
        return r
    return [_add(r[k], tc[k], e) for k in range(3)]


def from_matrix(sc, e, ty):
    """quat_from_matrix(m) as the forward computes it (emit_quat.c): which of trace, m00, m11, m22 is
    largest picks the formula (ties as its `>=` tests break them), then r / (r.w < 0 ? -|r| : |r|)."""
    from ._autodiff_scalarize import SEP, Ty, _add, _c, _div, _loc, _mul, _neg, _nm, _sub, _sum

    t, a = sc.comps(e.args[0])
    a = sc.bind(a, t, e)
    m = lambda r, c: a[r * 3 + c]  # noqa: E731
    one = Ty("v", (1,), ty.dt)
    tr = sc.bind([_add(_add(m(0, 0), m(1, 1), e), m(2, 2), e)], one, e)[0]

    def ge(x, y):
        return _loc(ast.Compare(left=x, ops=[ast.GtE()], comparators=[y]), e)

    def both(*tests):
        return _loc(ast.BoolOp(op=ast.And(), values=list(tests)), e)

    sc.n += 1
    k = f"sc{SEP}{sc.n}{SEP}branch"
    sc.gen.local_types[k] = "i64"
    pick = _loc(ast.IfExp(test=both(ge(tr, m(0, 0)), ge(tr, m(1, 1)), ge(tr, m(2, 2))), body=_c(0, e), orelse=_loc(
        ast.IfExp(test=both(ge(m(0, 0), m(1, 1)), ge(m(0, 0), m(2, 2))), body=_c(1, e), orelse=_loc(
            ast.IfExp(test=ge(m(1, 1), m(2, 2)), body=_c(2, e), orelse=_c(3, e)), e)), e)), e)
    sc.pre.append(_loc(ast.Assign(targets=[_nm(k, e, True)], value=pick), e))

    def diag(i):
        return _add(_sub(_c(1.0, e), tr, e), _mul(_c(2.0, e), m(i, i), e), e)

    forms = [[_sub(m(2, 1), m(1, 2), e), _sub(m(0, 2), m(2, 0), e), _sub(m(1, 0), m(0, 1), e), _add(_c(1.0, e), tr, e)],
             [diag(0), _add(m(1, 0), m(0, 1), e), _add(m(2, 0), m(0, 2), e), _sub(m(2, 1), m(1, 2), e)],
             [_add(m(0, 1), m(1, 0), e), diag(1), _add(m(2, 1), m(1, 2), e), _sub(m(0, 2), m(2, 0), e)],
             [_add(m(0, 2), m(2, 0), e), _add(m(1, 2), m(2, 1), e), diag(2), _sub(m(1, 0), m(0, 1), e)]]
    r = []
    for i in range(4):
        out = forms[3][i]
        for b in (2, 1, 0):
            test = _loc(ast.Compare(left=_nm(k, e), ops=[ast.Eq()], comparators=[_c(b, e)]), e)
            out = _loc(ast.IfExp(test=test, body=forms[b][i], orelse=out), e)
        r.append(out)
    r = sc.bind(r, ty, e)
    sq = sc.bind([_sum([_mul(c, c, e) for c in r], e)], one, e)[0]
    ln = sc.bind([_loc(ast.IfExp(test=_loc(ast.Compare(left=sq, ops=[ast.Gt()], comparators=[_c(0.0, e)]), e),
                                 body=sc.fn("sqrt", [sq], e), orelse=_c(0.0, e)), e)], one, e)[0]
    neg = _loc(ast.Compare(left=r[3], ops=[ast.Lt()], comparators=[_c(0.0, e)]), e)
    den = sc.bind([_loc(ast.IfExp(test=neg, body=_neg(ln, e), orelse=ln), e)], one, e)[0]
    return [_div(c, den, e) for c in r]
