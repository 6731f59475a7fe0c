"""Local arrays and loop-carried values in adjoints: saved element by element, loops replayed.

tack._autodiff generates a kernel's adjoint as another kernel; this module gives it two things
whose values change in place during an iteration, which the reverse sweep must see as they were:

**Local arrays** (``t = np.zeros(3)`` inside a parallel loop).  The adjoint of a float local
array is a local array of the same shape and dtype, ``adj·t``, zero at the iteration's start.
Loads ``t[k]`` are differentiated like locals (their adjoint is added to ``adj·t[k]``).  A store
``t[k] = e`` (and ``t[k] += e``, written ``t[k] = t[k] + e``) saves the element it overwrites in
a scalar local first (``save·5 = t[k]``); its reverse reads ``adj·t[k]``, zeroes it (the old value
no longer reaches anything), puts the saved element back, and hands the adjoint to ``e``.  So at
every point of the reverse sweep the array holds what it held at that point of the forward one,
and the derivative expressions, which read elements where the forward did, see the right
values.  Integer and bool local arrays are saved and put back the same way (an index read from
one must be the forward's), with no adjoint.  Arrays of vectors, matrices, complex numbers or
16-bit floats are refused: a local array with one more axis holds the components.

**Serial loops that carry values** between iterations (``p = p * x[k]``, a time-stepping loop,
a loop writing a local array or storing into an array, a sum read inside the loop) are
*replayed*: iteration ``m``'s adjoint needs the state (locals, local arrays) at the start of
iteration ``m``, which the forward left behind long ago.  The forward sweep saves the state the
loop changes at its entry (``save·N``, a local or a local array of the same shape) and runs the
loop; the reverse sweep counts the loop's trips ``n`` and then, for ``m = n - 1`` down to 0,
puts the entry state back, runs iterations ``0 .. m - 1`` forward, and iteration ``m`` forward
and then backward.  Memory is the entry state once, whatever ``n`` (nothing grows with the trip
count, which may be a runtime value); time is ``n (n + 1) / 2`` forward iterations plus ``n``
reverse ones: O(n^2).  Any trip count is right, zero included (no iteration; the entry state
is put back).  Saving every iteration's state instead (O(n) time) would need a buffer sized by a
trip count known only at run time: not in a thread's stack; docs/design/decisions.md has the
why.  Loops whose iterations are independent (sums and the iteration's own locals) keep the
cheaper replay of tack._autodiff (``_Gen.serial``): one forward and one reverse per iteration.
"""

from __future__ import annotations

import ast
import copy
import re

from . import _core

SEP = "\u00b7"
_TYPE = re.compile(r"array\[(\w+), (\d+)-D\]")
_FLOAT = ("f32", "f64")
_PLAIN_INT = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool")


def _np():
    import numpy

    return numpy


def creators():
    import tack

    np = _np()
    return {id(f) for f in (np.zeros, np.ones, np.empty, np.full, tack.zeros, tack.ones, tack.empty, tack.full)}


def kind(gen, name):
    """(element type text, number of axes) of a local array, or None for anything else."""
    m = _TYPE.fullmatch(gen.local_types.get(name, "") or "")
    return (m.group(1), int(m.group(2))) if m else None


def is_float(gen, name):
    k = kind(gen, name)
    return k is not None and k[0] in _FLOAT


def _loc(new, old):
    return ast.copy_location(new, old) if old is not None else new


def _nm(id_, node, store=False):
    return _loc(ast.Name(id=id_, ctx=ast.Store() if store else ast.Load()), node)


def _sub(arr, idx, node, store=False):
    return _loc(ast.Subscript(value=_nm(arr, node), slice=copy.deepcopy(idx),
                              ctx=ast.Store() if store else ast.Load()), node)


def _as_load(node):
    node = copy.deepcopy(node)
    for n in ast.walk(node):
        if hasattr(n, "ctx"):
            n.ctx = ast.Load()
    return node


def _assign(tgt, value, node):
    return _loc(ast.Assign(targets=[tgt], value=value), node)


def check(gen, name, node):
    """Refuse a local array the adjoint cannot differentiate, at node."""
    k = kind(gen, name)
    if k is not None and k[0] not in _FLOAT and k[0] not in _PLAIN_INT:
        raise gen.error(f"'{name}' is a local array of {k[0]}: only local arrays of f32, f64, integers and bools "
                        f"are differentiated (hold a vector's or a complex number's components on one more axis, "
                        f"np.zeros((n, 3)); compute 16-bit floats in f32)", node)


def precheck(gen, fdef):
    """Refuse, at its creation, a kernel's local array of a type the adjoint does not take (before
    vectors are made components: tack._autodiff_scalarize would meet its elements first)."""
    for n in ast.walk(fdef):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    check(gen, t.id, n)


def index_ok(gen, e, node):
    """A subscript of a local array (the language has it index every axis) by integers."""
    check(gen, e.value.id, node)
    if gen.active(e.slice):
        raise gen.error("an index computed from float values", node)


def zeros(gen, name, node):
    """A zeroed local array of `name`'s shape and dtype (its adjoint, or a save of it)."""
    shape, et, _nd = gen.larrays[name]
    np = _np()
    return _loc(ast.Call(func=_nm(gen.use(np.zeros, "zeros"), node),
                         args=[copy.deepcopy(shape), _nm(gen.use(getattr(_core, et), et), node)], keywords=[]), node)


def copy_loops(gen, dst, src, name, node, value=None):
    """dst[...] = src[...] (or = value) over every element of local array `name`'s shape."""
    nd = kind(gen, name)[1]
    qs = [gen.fresh("q") for _ in range(nd)]
    idx = _nm(qs[0], node) if nd == 1 else _loc(ast.Tuple(elts=[_nm(q, node) for q in qs], ctx=ast.Load()), node)
    st = _assign(_sub(dst, idx, node, True), value if value is not None else _sub(src, idx, node), node)
    for d in reversed(range(nd)):
        rng = _loc(ast.Call(func=_nm("range", node), args=[_loc(ast.Subscript(
            value=_loc(ast.Attribute(value=_nm(dst, node), attr="shape", ctx=ast.Load()), node),
            slice=_loc(ast.Constant(value=d), node), ctx=ast.Load()), node)], keywords=[]), node)
        st = _loc(ast.For(target=_nm(qs[d], node, True), iter=rng, body=[st], orelse=[]), node)
    return st


# ------------------------------------------------------------------ the forward sweep


def top_store(gen, s):
    """Whether s, outside the parallel loops, stores into an element of a local array made there
    from values no differentiated input reaches (filter taps): that array is a constant to the adjoint."""
    tgts = s.targets if isinstance(s, ast.Assign) else [s.target]
    if len(tgts) != 1 or not isinstance(tgts[0], ast.Subscript) or not isinstance(tgts[0].value, ast.Name):
        return False
    arr = tgts[0].value.id
    if kind(gen, arr) is None or arr not in gen.consts:
        return False
    if gen.touches_float(s.value) or gen.touches_float(tgts[0].slice):
        raise gen.error(f"the local array '{arr}' made outside the parallel loops is given a differentiated value: "
                        f"not differentiated yet (compute it inside the loop)", s)
    return True



def create(gen, name, value, fwd, acts, assigned, s):
    """t = np.zeros(shape, dtype) (or ones, empty, full; tack's too) inside a parallel loop."""
    check(gen, name, s)
    if not (isinstance(value, ast.Call) and id(gen.resolve(value.func)) in creators()):
        raise gen.error(f"'{name}' is a local array: only its creation (np.zeros, np.ones, np.empty, np.full) "
                        f"assigns it in a differentiated kernel", s)
    if any(gen.touches_float(a) for a in list(value.args) + [k.value for k in value.keywords]):
        raise gen.error(f"'{name}' is filled with a differentiated value: create it with np.zeros and store the "
                        f"value into its elements", s)
    if name in assigned:
        raise gen.error(f"the local array '{name}' is created again in an iteration: the adjoint needs the first "
                        f"one's values (give the second a name of its own)", s)
    shape = value.args[0] if value.args else next((k.value for k in value.keywords if k.arg == "shape"), None)
    if shape is None:
        raise gen.error(f"'{name}': a local array's shape is its creation's first argument", s)
    gen.larrays[name] = (shape, kind(gen, name)[0], kind(gen, name)[1])
    assigned.add(name)
    fwd.append(copy.deepcopy(s))
    if is_float(gen, name):
        gen.plain_only = True
        acts.append(("lcreate", name, gen.replaying > 0, s))


def store(gen, tgt, value, fwd, acts, s):
    """t[k] = value for a local array t: the element it overwrites saved first."""
    arr = tgt.value.id
    if arr in gen.consts:
        raise gen.error(f"the local array '{arr}' made before the parallel loop is written inside it", s)
    index_ok(gen, tgt, s)
    isf = is_float(gen, arr)
    if not isf and gen.touches_float(value):
        raise gen.error(f"'{arr}' is a local array of {kind(gen, arr)[0]}: a float value made integer is not "
                        f"differentiable", s)
    v = gen.flat(value, fwd, acts) if isf else copy.deepcopy(value)
    idx = _as_load(tgt.slice)
    if any(isinstance(n, ast.Subscript) for n in ast.walk(idx)):  # read once: the store may change what it reads
        parts = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        names = []
        for p in parts:
            ix = gen.fresh("ix")
            fwd.append(_assign(_nm(ix, s, True), p, s))
            names.append(_nm(ix, s))
        idx = names[0] if len(names) == 1 else _loc(ast.Tuple(elts=names, ctx=ast.Load()), s)
    sv = gen.fresh("save")
    fwd.append(_assign(_nm(sv, s, True), _sub(arr, idx, s), s))
    fwd.append(_assign(_sub(arr, idx, s, True), copy.deepcopy(v), s))
    acts.append(("lstore", arr, idx, v, sv, isf, s))


def modified(gen, s):
    """The local arrays loop `s` writes: stores, and arrays passed to a @tack.func (which may write them)."""
    out = set()
    for n in ast.walk(s):
        if isinstance(n, (ast.Assign, ast.AugAssign)):
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                for m in ast.walk(t):
                    if isinstance(m, ast.Subscript) and isinstance(m.value, ast.Name) and kind(gen, m.value.id):
                        out.add(m.value.id)
        if isinstance(n, ast.Call) and isinstance(gen.resolve(n.func), _core.Kernel):
            out |= {a.id for a in n.args if isinstance(a, ast.Name) and kind(gen, a.id)}
    return out


def replay(gen, s, fwd, acts, assigned, stores):
    """A serial loop that carries values between iterations (module docstring): its entry state
    saved, the loop run; the reverse sweep replays it (``reverse_replay``)."""
    arrays = modified(gen, s)
    made_in = {t.id for n in ast.walk(s) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    entry = []  # (name, save, is a local array)
    for v in sorted(set(stores) | arrays):
        if v in gen.consts:
            continue
        if v in arrays:  # a local array lives from its creation: one made before the loop (maybe by the caller
            if v in made_in:  # of an inlined function) is saved; one made in the loop is made again each time
                continue
        elif v not in assigned:
            continue
        sv = gen.fresh("save")
        if v in gen.larrays:
            fwd.append(_assign(_nm(sv, s, True), zeros(gen, v, s), s))
            fwd.append(copy_loops(gen, sv, v, v, s))
            gen.larrays[sv] = gen.larrays[v]
            gen.local_types[sv] = gen.local_types[v]
        else:
            fwd.append(_assign(_nm(sv, s, True), _nm(v, s), s))
        entry.append((v, sv, v in gen.larrays))
    f1, a1 = [], []
    inner = set(assigned) | {s.target.id}
    outer_accums = gen.accums
    gen.accums = set()  # every local a plain local here: saved before it is overwritten
    gen.replaying += 1
    gen.plain_only = True
    gen.body(s.body, f1, a1, inner)
    gen.replaying -= 1
    gen.accums = outer_accums
    assigned |= inner
    loop = copy.copy(s)
    loop.body = f1 or [_loc(ast.Pass(), s)]
    fwd.append(loop)
    acts.append(("replay", s, f1, a1, entry, s))


# ------------------------------------------------------------------ the reverse sweep


def _restore(gen, entry, node):
    out = []
    for v, sv, arr in entry:
        out.append(copy_loops(gen, v, sv, v, node) if arr else _assign(_nm(v, node, True), _nm(sv, node), node))
    return out


def reverse(gen, act, out):
    """The reverse of an act this module made; False for one it did not."""
    kind_, node = act[0], act[-1]
    if kind_ == "lcreate":  # made again in a loop: its earlier life's adjoint is not this one's
        _, name, in_loop, _n = act
        gen.adj_used.add(name)
        if in_loop:
            out.append(copy_loops(gen, f"adj{SEP}{name}", None, name, node, _loc(ast.Constant(value=0.0), node)))
        return True
    if kind_ == "lstore":
        _, arr, idx, v, sv, isf, _n = act
        g = None
        if isf:
            gen.adj_used.add(arr)
            g = gen.fresh("g")
            out.append(_assign(_nm(g, node, True), _sub(f"adj{SEP}{arr}", idx, node), node))
            out.append(_assign(_sub(f"adj{SEP}{arr}", idx, node, True), _loc(ast.Constant(value=0.0), node), node))
        out.append(_assign(_sub(arr, idx, node, True), _nm(sv, node), node))
        if isf:
            gen.give(v, _nm(g, node), out, node)
        return True
    if kind_ == "replay":
        _, loop_node, f1, a1, entry, _n = act
        n, k, m = gen.fresh("n"), gen.fresh("k"), gen.fresh("m")
        def zero():
            return _loc(ast.Constant(value=0), node)

        def one():
            return _loc(ast.Constant(value=1), node)

        count = copy.copy(loop_node)  # n = the trip count
        count.body = [_loc(ast.AugAssign(target=_nm(n, node, True), op=ast.Add(), value=one()), node)]
        out.append(_assign(_nm(n, node, True), zero(), node))
        out.append(count)
        back = []
        gen.reverse(a1, back)
        this = _loc(ast.If(test=_loc(ast.Compare(left=_nm(m, node), ops=[ast.Eq()], comparators=[_nm(k, node)]),
                                     node), body=back or [_loc(ast.Pass(), node)], orelse=[]), node)
        step = _loc(ast.If(test=_loc(ast.Compare(left=_nm(m, node), ops=[ast.LtE()], comparators=[_nm(k, node)]),
                                     node), body=copy.deepcopy(f1) + [this], orelse=[]), node)
        again = copy.copy(loop_node)  # iterations 0 .. k forward, iteration k backward
        again.body = [step, _loc(ast.AugAssign(target=_nm(m, node, True), op=ast.Add(), value=one()), node)]
        rng = _loc(ast.Call(func=_nm("range", node), args=[
            _loc(ast.BinOp(left=_nm(n, node), op=ast.Sub(), right=one()), node),
            _loc(ast.UnaryOp(op=ast.USub(), operand=one()), node), _loc(ast.UnaryOp(op=ast.USub(), operand=one()), node)],
            keywords=[]), node)
        body = _restore(gen, entry, node) + [_assign(_nm(m, node, True), zero(), node), again]
        out.append(_loc(ast.For(target=_nm(k, node, True), iter=rng, body=body, orelse=[]), node))
        out.extend(_restore(gen, entry, node))
        return True
    return False
