"""An element a kernel stores and then reads back, read from a local in the kernel to differentiate.

A step written the way Warp's examples write it stores a new velocity and reads it back at once:

    for i in range(n):                          for i in range(n):
        vn[i] = v[i] + a * dt                       fwd·1 = tack.vec3(v[i] + a * dt)
        xn[i] = x[i] + vn[i] * dt        ->         vn[i] = fwd·1
                                                    xn[i] = x[i] + fwd·1 * dt

The adjoint generator (tack._autodiff) refuses an array that a loop reads and overwrites: it
recomputes an iteration from the arrays as the kernel left them, and an element overwritten after
it was read no longer holds what the read saw.  A read that comes after the store, of the same
element, sees the stored value, and so does the recomputation -- but only while nothing changes
the element in between, which the generator cannot tell from the two lists of reads and writes
it keeps.  This pass proves it on the tree, before the generator reads it, and writes the read as
the local it is: the store's value, converted to the array's element type as the store converts
it (`tack.f32(e)`, `tack.vec3(e)`: the same bits the read gave), held in a local the store then
stores.  The reverse sweep hands the read's gradient to the stored value, as it should, and the
array is no longer read, so the check has nothing to refuse.

A read is taken from the store when, in one block of statements (a parallel loop's body, a branch,
a serial loop's body), it comes after the store `a[idx] = e` of a float array or an array of
float vectors whose index `idx` is written the same way and is made of names and constants
(`i`, `i, 2`, `i + 1`), and every statement from the store to the read is a simple statement that
assigns no name of `idx`, stores into no array element but other elements of the same array at
a constant index that differs (`v[i, 1]` after `v[i, 0]`: a struct's vector field is stored
component by component) and calls nothing with an array passed by name (a call could write the
element).  The statement holding the read may store (`xn[i] = ...
vn[i] ...` reads before it stores); the search ends there, at a compound statement (`if`, a loop)
and at `a[idx] += ...`.  Every other read keeps the generator's rule and its refusal.
"""

from __future__ import annotations

import ast
import copy

from ._autodiff_nodes import _assign, _loc, _nm


def _pure_index(node):
    """Whether an index is names, constants and arithmetic on them: nothing a statement in between
    could change but a name it assigns."""
    for n in ast.walk(node):
        if not isinstance(n, (ast.Name, ast.Constant, ast.Tuple, ast.BinOp, ast.UnaryOp, ast.operator,
                              ast.unaryop, ast.Load, ast.expr_context)):
            return False
    return True


def _names(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _stored(st):
    """The names a simple statement assigns, and whether it stores into an element of anything."""
    targets = st.targets if isinstance(st, ast.Assign) else [st.target] if isinstance(
        st, (ast.AugAssign, ast.AnnAssign)) else []
    names, element = set(), False
    for t in targets:
        for n in ast.walk(t):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
            elif isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store):
                element = True
    return names, element


def _other_element(st, arr, idx):
    """Whether st stores only into elements of arr that differ from arr[idx] by a constant index
    (`v[i, 1] = ...` after `v[i, 0] = ...`, a struct's vector field stored component by component):
    whatever else arr's memory is, those are other elements."""
    if not isinstance(st, ast.Assign) or len(st.targets) != 1:
        return False
    t = st.targets[0]
    if not (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == arr):
        return False
    a, b = t.slice, idx
    if not (isinstance(a, ast.Tuple) and isinstance(b, ast.Tuple) and len(a.elts) == len(b.elts)):
        return False
    differ = False
    for x, y in zip(a.elts, b.elts):
        if ast.dump(x) == ast.dump(y):
            continue
        if isinstance(x, ast.Constant) and isinstance(y, ast.Constant) and type(x.value) is int and \
                type(y.value) is int and x.value != y.value and x.value >= 0 and y.value >= 0:
            differ = True
            continue
        return False
    return differ


class _Reads(ast.NodeTransformer):
    """Replaces each read of arr[idx] in a value by the local."""

    def __init__(self, arr, idx, local):
        self.arr, self.idx, self.local, self.count = arr, idx, local, 0

    def visit_Subscript(self, node):
        if isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name) and node.value.id == self.arr \
                and ast.dump(node.slice) == self.idx:
            self.count += 1
            return _nm(self.local, node)
        return self.generic_visit(node)


_PENDING = "fwd\u00b7?"  # the local's name until it is made (no source spells it, as SEP's names)


class _Forward:
    def __init__(self, gen, casts, types):
        self.gen = gen
        self.casts = casts  # array parameter -> its element type's constructor (tack.f32, tack.vec3d ...)
        self.types = types  # array parameter -> that type's name, as the IR writes it
        self.used = {}  # array parameter -> the injected name of its constructor, once needed

    def calls_with_array(self, st):
        for n in ast.walk(st):
            if isinstance(n, ast.Call):
                for a in list(n.args) + [k.value for k in n.keywords]:
                    if isinstance(a, ast.Name) and a.id in self.gen.params:
                        return True
        return False

    def block(self, stmts):
        for st in stmts:  # the blocks inside first
            for field in ("body", "orelse"):
                inner = getattr(st, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(st, field, self.block(inner))
        out = []
        for k, st in enumerate(stmts):
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Subscript):
                tgt = st.targets[0]
                if isinstance(tgt.value, ast.Name) and tgt.value.id in self.casts and _pure_index(tgt.slice):
                    new = self.forward(st, tgt, stmts[k + 1:])
                    if new is not None:
                        out.extend(new)
                        continue
            out.append(st)
        return out

    def forward(self, st, tgt, rest):
        arr, idx, idx_names = tgt.value.id, ast.dump(tgt.slice), _names(tgt.slice)
        local = _PENDING  # named once a read is found: a kernel with none keeps its adjoint's names
        found, changed = 0, []
        for u in rest:
            if not isinstance(u, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)) or self.calls_with_array(u):
                break
            if isinstance(u, ast.AugAssign) and isinstance(u.target, ast.Subscript) and \
                    isinstance(u.target.value, ast.Name) and u.target.value.id == arr:
                break
            if u.value is not None:
                r = _Reads(arr, idx, local)
                probe = r.visit(copy.deepcopy(u.value))
                if r.count:
                    u.value = probe
                    found += r.count
                    changed.append(probe)
            names, element = _stored(u)
            if names & idx_names or (element and not _other_element(u, arr, tgt.slice)):
                break
        if not found:
            return None
        local = self.gen.fresh("fwd")
        for value in changed:
            for n in ast.walk(value):
                if isinstance(n, ast.Name) and n.id == _PENDING:
                    n.id = local
        if arr not in self.used:
            self.used[arr] = self.gen.use(self.casts[arr], self.types[arr])
        cast = _loc(ast.Call(func=_nm(self.used[arr], st), args=[st.value], keywords=[]), st)
        self.gen.local_types[local] = self.types[arr]
        return [_assign(local, cast, st), _loc(ast.Assign(targets=[tgt], value=_nm(local, st)), st)]


def forward(gen, fdef, varr):
    """fdef with the reads of elements its parallel loops stored just before taken from locals."""
    import tack

    casts, types = {}, {}
    for p, kind in gen.params.items():
        ty = varr.get(p)
        if ty is not None:
            if ty.kind != "v" or ty.dt not in ("f32", "f64"):
                continue
            text = f"vec{ty.shape[0]}" + ("d" if ty.dt == "f64" else "")
        elif kind[0] == "farray":
            text = kind[1]
        else:
            continue
        casts[p], types[p] = getattr(tack, text), text
    if not casts:
        return fdef
    f = _Forward(gen, casts, types)
    for st in fdef.body:
        if isinstance(st, ast.For):
            st.body = f.block(st.body)
    return fdef

