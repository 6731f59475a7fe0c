"""Local arrays of vectors, matrices and complex numbers in adjoints: float arrays with one more axis.

A kernel may gather a cell's corners into a local array of vectors (``pts = tack.zeros(4,
tack.vec3d)``), keep a few matrices in ``np.zeros(2, tack.mat33d)`` or complex values in
``np.zeros(4, np.complex128)``.  The adjoint generator (tack._autodiff) differentiates float
local arrays (tack._autodiff_local: an adjoint array beside each, a save per store, carrying
loops replayed from a tape), and tack._autodiff_scalarize makes every vector, matrix and complex
value its components before the generator runs.  This module joins the two: while the kernel is
made scalars, such a local array becomes the float local array of its components, with one more
axis (two for a matrix), exactly as an array parameter of vectors is the float array of its
components to the adjoint:

- its creation ``tack.zeros(4, tack.vec3d)`` becomes ``np.zeros((4, 3), f64)`` (``empty`` too,
  every local array starting zeroed; ``ones`` and ``full`` of a number ``np.ones``, ``np.full``
  with the wider shape, every component set, as the forward sets them); ``full`` of a vector or
  a matrix, and ``ones`` and ``full`` of a complex array (whose imaginary parts stay zero),
  become a zeroed array and a store of the value into each element (written out for up to
  ``UNROLL`` elements, a loop over the elements beyond);
- an element ``pts[k]`` is its components ``pts[k, 0], pts[k, 1], pts[k, 2]``, read and stored by
  the scalarizer's rules for array elements, so ``pts[k].x``, ``pts[k][1]``, ``m[k] @ v``,
  ``pts[k] = v``, ``pts[k] += v`` and an element given a number all follow;
- ``.ndim``, ``.size``, a negative axis of ``.shape`` and ``.shape`` itself are the element
  array's, not the component array's (``x.ndim - 1``, ``x.size // 3``, ``x.shape[-1 - 1]``); the
  same holds for an array parameter of vectors, whose ``.size`` the adjoint read as the
  component count before;
- a ``@tack.func`` given such an array is inlined by the scalarizer (its parameter becomes the
  caller's array), as a func on vectors is.

The generator then sees float local arrays, and everything it does for them holds unchanged:
each stored component's old value saved and put back, the adjoint array beside it, the local
array saved at a carrying loop's entry and recorded on its ring tape (a ``(4, 3)`` f64 state is
96 bytes: 32 slots), the copy of a state of at most 16 numbers written out element by element.
An array of integer vectors (``vec3i``) becomes an integer array, saved and put back with no
gradient.  Local arrays of 16-bit floats stay refused (tack._autodiff_local.check);
quaternion, transform and struct local arrays do not exist in the language.
"""

from __future__ import annotations

import ast
import copy

from . import _autodiff_local as _local
from . import _core
from ._autodiff_nodes import _c, _loc, _nm

UNROLL = 16  # a vector fill of at most this many elements is written out element by element


def element_type(gen, name):
    """The Ty of local array `name`'s elements where they are vectors, matrices or complex numbers, else None."""
    from ._autodiff_scalarize import parse_type

    k = _local.kind(gen, name)
    if k is None:
        return None
    ty = parse_type(k[0])
    return ty if ty is not None and ty.kind in ("v", "m", "c") else None


def is_local_array(gen, name):
    """Whether `name` is a local array (of any element type)."""
    return _local.kind(gen, name) is not None


def type_has_vectors(text):
    """Whether an IR type's text is an array of vectors, matrices or complex numbers (a func's parameter)."""
    from ._autodiff_scalarize import parse_type

    m = _local._TYPE.fullmatch(text or "")
    ty = parse_type(m.group(1)) if m else None
    return ty is not None and ty.kind in ("v", "m", "c")


def _creator_kinds():
    import numpy as np

    import tack

    out = {}
    for what in ("zeros", "ones", "empty", "full"):
        out[id(getattr(np, what))] = what
        out[id(getattr(tack, what))] = what
    return out


def _arg(call, pos, kw):
    if len(call.args) > pos:
        return call.args[pos]
    return next((k.value for k in call.keywords if k.arg == kw), None)


def _wider(sc, shape, ty, node):
    """The component array's shape: the element array's, then the element's own axes."""
    extra = [_c(d, node) for d in ty.shape]
    if isinstance(shape, (ast.Tuple, ast.List)):
        elts = [copy.deepcopy(e) for e in shape.elts]
    else:
        v = _local._constant(sc.gen, shape)
        if isinstance(v, (tuple, list)) and all(type(d) is int for d in v):
            elts = [_c(d, node) for d in v]
        else:  # an int expression (the forward checked it is a constant one)
            elts = [copy.deepcopy(shape)]
    return _loc(ast.Tuple(elts=elts + extra, ctx=ast.Load()), node)


def create(sc, name, value, node):
    """`name = tack.zeros(shape, tack.vec3d)` (or np.ones, empty, full; Tack's or NumPy's): the
    statements making the float array of its components (module docstring)."""
    gen = sc.gen
    ty = sc.arr_ty(name)
    nd = _local.kind(gen, name)[1]
    what = _creator_kinds().get(id(gen.resolve(value.func))) if isinstance(value, ast.Call) else None
    if what is None:
        raise sc.error(f"'{name}' is a local array: only its creation (np.zeros, np.ones, np.empty, np.full) "
                       f"assigns it in a differentiated kernel", node)
    shape = _arg(value, 0, "shape")
    if shape is None:
        raise sc.error(f"'{name}': a local array's shape is its creation's first argument", node)
    fill = _arg(value, 1, "fill_value") if what == "full" else None
    comp = _nm(gen.use(getattr(_core, ty.dt), ty.dt), node)
    gen.local_types[name] = f"array[{ty.dt}, {nd + len(ty.shape)}-D]"
    sc.arr_nd[name] = nd
    np = _local._np()
    wide = _wider(sc, shape, ty, node)
    stores_of = None
    if what == "ones" and ty.kind == "c":
        stores_of = _c(1.0, node)  # 1 + 0j
    elif what == "full" and (ty.kind == "c" or sc.ty(fill) is not None):
        stores_of = fill
    elif what in ("ones", "full"):
        func = np.ones if what == "ones" else np.full
        args = [wide] + ([sc.scal(fill)] if what == "full" else []) + [comp]
        return [_local._assign(_nm(name, node, True), _loc(ast.Call(
            func=_nm(gen.use(func, what), node), args=args, keywords=[]), node), node)]
    made = _local._assign(_nm(name, node, True), _loc(ast.Call(
        func=_nm(gen.use(np.zeros, "zeros"), node), args=[wide, comp], keywords=[]), node), node)
    if stores_of is None:
        return [made]
    return [made] + _fill(sc, name, shape, nd, ty, stores_of, node)


def _fill(sc, name, shape, nd, ty, value, node):
    """A store of `value` (computed once, before the array is made) into every element of `name`."""
    from ._autodiff_scalarize import SEP, Ty

    vt = sc.ty(value)
    if vt is not None:
        _t, cs = sc.comps(value)
        cs = sc.bind(cs, vt, node)
        sc.n += 1
        held = f"sc{SEP}{sc.n}{SEP}fill"
        sc.alias[held] = (vt, cs)
        value = _nm(held, node)
    else:
        value = sc.bind([sc.scal(value)], Ty("v", (1,), ty.dt), node)[0]
    dims = _local._constant(sc.gen, shape)
    dims = (dims,) if isinstance(dims, int) else dims
    out = []
    if isinstance(dims, (tuple, list)) and len(dims) == nd and all(type(d) is int for d in dims) and \
            _local._small(dims) and len(list(_local._elements(dims))) <= UNROLL:
        for e in _local._elements(dims):
            tgt = _local._sub(name, _local._const_index(e, node), node, True)
            out.extend(sc.store(tgt, copy.deepcopy(value), node))
        return out
    qs = [sc.gen.fresh("q") for _ in range(nd)]
    for q in qs:
        sc.gen.local_types[q] = "i64"
    idx = _nm(qs[0], node) if nd == 1 else _loc(
        ast.Tuple(elts=[_nm(q, node) for q in qs], ctx=ast.Load()), node)
    body = sc.store(_local._sub(name, idx, node, True), copy.deepcopy(value), node)
    for d in reversed(range(nd)):
        ext = _loc(ast.Subscript(value=_loc(ast.Attribute(
            value=_nm(name, node), attr="shape", ctx=ast.Load()), node), slice=_c(d, node),
            ctx=ast.Load()), node)
        rng = _loc(ast.Call(func=_nm("range", node), args=[ext], keywords=[]), node)
        body = [_loc(ast.For(target=_nm(qs[d], node, True), iter=rng, body=body, orelse=[]), node)]
    return body


def attribute(sc, e, ty):
    """x.ndim, x.size or x.shape of an array of vectors (a local one or a parameter), whose adjoint is
    the array of its components: the element array's values, or None for another attribute."""
    x = e.value.id

    def axis(d):
        return _loc(ast.Subscript(value=_loc(ast.Attribute(
            value=_nm(x, e), attr="shape", ctx=ast.Load()), e), slice=_c(d, e), ctx=ast.Load()), e)

    k = len(ty.shape)
    if e.attr == "ndim":
        return _loc(ast.BinOp(left=copy.deepcopy(e), op=ast.Sub(), right=_c(k, e)), e)
    if e.attr == "size":
        return _loc(ast.BinOp(left=copy.deepcopy(e), op=ast.FloorDiv(), right=_c(ty.size, e)), e)
    if e.attr == "shape":
        nd = sc.array_ndim(x)
        if nd is None:
            raise sc.error(f"{ast.unparse(e)}: the shape of an array of vectors as a whole is not differentiated "
                           f"yet (write its extents, {x}.shape[0], ...)", e)
        return _loc(ast.Tuple(elts=[axis(d) for d in range(nd)], ctx=ast.Load()), e)
    return None


def shape_axis(sc, e, ty):
    """x.shape[d] of an array of vectors: a negative d counts from the element array's last axis (the
    forward takes only a constant d)."""
    d = e.slice
    if isinstance(d, ast.UnaryOp) and isinstance(d.op, ast.USub) and isinstance(d.operand, ast.Constant):
        d = _c(-d.operand.value, d)
    new = copy.deepcopy(e)
    if isinstance(d, ast.Constant) and type(d.value) is int and d.value < 0:
        new.slice = _c(d.value - len(ty.shape), d)
    return new


def updated(tgt, s):
    """The value of `a[k] op= v` as `a[k] op v`: for a local array's element, whose components
    a complex product or a matrix product mixes (the store then holds them: `held`)."""
    load = _loc(ast.Subscript(value=copy.deepcopy(tgt.value), slice=copy.deepcopy(tgt.slice),
                                     ctx=ast.Load()), tgt)
    return _loc(ast.BinOp(left=load, op=copy.deepcopy(s.op), right=copy.deepcopy(s.value)), s)


def held(sc, tgt, cs, ty, node):
    """(components, index) of a store into an element of an array of vectors, written component
    by component: where the value reads the array (`a[k] = a[k] * z` of complex numbers, `p[k] =
    tack.vec2d(p[k].y, p[k].x)`), the new components are computed into locals of their own first,
    and an index that reads an array (which the first component's store may change) is read once."""
    from ._autodiff_scalarize import Ty

    arr = tgt.value.id
    idx = tgt.slice
    if any(isinstance(n, ast.Subscript) for n in ast.walk(idx)):
        parts = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        fresh = sc.fresh(Ty("v", (len(parts),), "i64"), node)
        for nm, p in zip(fresh, parts):
            sc.pre.append(_local._assign(_nm(nm, node, True), sc.scal(p), node))
        names = [_nm(nm, node) for nm in fresh]
        idx = names[0] if len(names) == 1 else _loc(ast.Tuple(elts=names, ctx=ast.Load()), node)
    if len(cs) > 1 and any(isinstance(n, ast.Name) and n.id == arr for c in cs for n in ast.walk(c)):
        fresh = sc.fresh(Ty("v", (len(cs),), ty.dt), node)
        for nm, c in zip(fresh, cs):
            sc.pre.append(_local._assign(_nm(nm, node, True), c, node))
        cs = [_nm(nm, node) for nm in fresh]
    return cs, idx
