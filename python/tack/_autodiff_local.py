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
one must be the forward's), with no adjoint.  Arrays of vectors, matrices and complex numbers
reach this module as the float arrays of their components, one more axis
(tack._autodiff_local_vec); arrays of 16-bit floats are refused.

**Serial loops that carry values** between iterations (``p = p * x[k]``, a time-stepping loop,
a loop writing a local array or storing into an array, a sum read inside the loop) are
*replayed*: iteration ``m``'s adjoint needs the state (locals, local arrays) at the start of
iteration ``m``, which the forward left behind long ago.  The forward sweep saves the state the
loop changes at its entry (``save·N``, a local or a local array of the same shape), and the
loop's trip count ``n = len(range(lo, hi, st))``, ``lo`` and ``st`` (in closed form, as the
entry sees them), and runs the loop.  The reverse keeps a *tape*: a local array per state item
with room for the states of ``TAPE_SLOTS`` (32) iterations (the trip count of a constant range
when that is fewer), fewer where the state is large (a tape array at most 4 KiB, a GPU's limit
for one local array; 16 KiB in all).  The forward sweep's run of the loop records each
iteration's starting state into the tape as a ring (iteration ``j`` in slot ``j % slots``).  The
reverse takes the trips in segments of that many, last first: the last segment's states are the
ring's, taken backwards at once; for each earlier one the entry state is put back, the
iterations before the segment run forward (no recording), the segment's run forward recording
each iteration's state, then taken backwards, each iteration's state read from the tape, run
forward (its single-assignment temporaries) and backward.  For ``n <= 32``: ``2 n`` forward
iterations (the forward sweep's included) and ``n`` reverse ones; beyond, about ``n^2 / 64``
more.  Memory per thread: the entry state and the tape, whatever ``n`` (a run-time value: the
tape cannot be sized by it, a thread's local arrays have compile-time sizes).  Up to
``PLAIN_TRIPS`` (3) trips, and where no tape of two slots fits or a local array's shape is not a
value the generator can evaluate, each iteration is replayed from the entry: ``n (n + 1) / 2``
forward iterations, no more than the tape's for three trips and without its segments and
copies (a body of up to ``PLAIN_BODY`` nodes gets both forms and a test on ``n``).  A constant
step is written as one in every replayed range (a variable one costs each a division), and a
state array of up to 16 elements is copied element by element.  Every trip count is right,
zero included (no iteration; the entry state is put back).  A loop whose iterations write only
elements of their own (``_disjoint``: a gather ``p[c] = x[tets[e, c]]``) needs no tape: its
reverse puts the entry state back once and takes each iteration forward and backward, last
first.  docs/design/decisions.md has the why.  Loops whose iterations are independent (sums
and the iteration's own locals) keep the cheaper replay of tack._autodiff (``_Gen.serial``):
one forward and one reverse per iteration, no tape.
"""

from __future__ import annotations

import ast
import copy
import re

from . import _core
from ._autodiff_nodes import SEP, _as_load, _loc, _nm

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


def _sub(arr, idx, node, store=False):
    return _loc(ast.Subscript(value=_nm(arr, node), slice=copy.deepcopy(idx),
                              ctx=ast.Store() if store else ast.Load()), node)


def _assign(tgt, value, node):
    return _loc(ast.Assign(targets=[tgt], value=value), node)


def check(gen, name, node, vectors=False):
    """Refuse a local array the adjoint cannot differentiate, at node.  With `vectors`, before the
    kernel is made scalars, one of vectors, matrices or complex numbers is let through: it becomes
    the float array of its components (tack._autodiff_local_vec)."""
    k = kind(gen, name)
    if k is None or k[0] in _FLOAT or k[0] in _PLAIN_INT:
        return
    from ._autodiff_local_vec import element_type

    if vectors and element_type(gen, name) is not None:
        return
    raise gen.error(f"'{name}' is a local array of {k[0]}: only local arrays of f32, f64, integers and bools, and "
                    f"of vectors, matrices and complex numbers, are differentiated (compute 16-bit floats in f32)",
                    node)


def precheck(gen, fdef):
    """Refuse, at its creation, a kernel's local array of a type the adjoint does not take (before
    vectors are made components: tack._autodiff_scalarize would meet its elements first)."""
    for n in ast.walk(fdef):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    check(gen, t.id, n, vectors=True)


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
    it = s.iter
    if not (isinstance(it, ast.Call) and gen.resolve(it.func) is range and 1 <= len(it.args) <= 3
            and not it.keywords):
        raise gen.error(f"a serial loop over {ast.unparse(it)} that carries values between iterations is not "
                        f"differentiated: write it over a range()", s)
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
            shape = _shape(gen, v)
            if shape is not None and _small(shape):
                fwd.extend(_assign(_sub(sv, _const_index(e, s), s, True), _sub(v, _const_index(e, s), s), s)
                           for e in _elements(shape))
            else:
                fwd.append(copy_loops(gen, sv, v, v, s))
            gen.larrays[sv] = gen.larrays[v]
            gen.local_types[sv] = gen.local_types[v]
        else:
            gen.save_reads.add(v)
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
    # the trip count and the range's start and step, as the loop's entry sees them (the reverse
    # sweep reads them after the loop, which may have changed what its bounds read)
    bounds = {w: gen.fresh(w) for w in ("n", "lo", "st")}
    it = s.iter
    fwd.append(_assign(_nm(bounds["n"], s, True), _trips(it, s), s))
    fwd.append(_assign(_nm(bounds["lo"], s, True), copy.deepcopy(it.args[0]) if len(it.args) > 1 else
                       _loc(ast.Constant(value=0), s), s))
    fwd.append(_assign(_nm(bounds["st"], s, True), copy.deepcopy(it.args[2]) if len(it.args) > 2 else
                       _loc(ast.Constant(value=1), s), s))
    plan = _tape_plan(gen, s, entry)
    trips = _const_trips(gen, s)
    if _disjoint(gen, s, stores):
        mode = "disjoint"  # each iteration writes elements of its own: no tape, no replay of the others
    elif plan is None or (trips is not None and trips <= PLAIN_TRIPS):
        mode = "plain"
    elif trips is not None or _size(f1) > PLAIN_BODY:
        mode = "taped"
    else:
        mode = "both"  # up to PLAIN_TRIPS trips the plain replay, more the tape
    if mode in ("plain", "disjoint"):
        fwd.append(loop)
    else:  # the forward run records each iteration's state into the tape, a ring of `slots`:
        # after it the tape holds the last segment's states (segments start at multiples of slots)
        slots, items = plan
        r = gen.fresh("r")
        rec = copy.copy(s)
        rec.body = _tape_copy(items, _nm(r, s), True, s) + [_assign(_nm(r, s, True), _loc(ast.BinOp(
            left=_loc(ast.BinOp(left=_nm(r, s), op=ast.Add(), right=_loc(ast.Constant(value=1), s)), s),
            op=ast.Mod(), right=_loc(ast.Constant(value=slots), s)), s), s)] + copy.deepcopy(f1)
        taped = _tapes(gen, plan, s) + [_assign(_nm(r, s, True), _loc(ast.Constant(value=0), s), s), rec]
        if mode == "taped":
            fwd.extend(taped)
        else:
            test = _loc(ast.Compare(left=_nm(bounds["n"], s), ops=[ast.LtE()],
                                    comparators=[_loc(ast.Constant(value=PLAIN_TRIPS), s)]), s)
            fwd.append(_loc(ast.If(test=test, body=[loop], orelse=taped), s))
    acts.append(("replay", s, f1, a1, entry, (bounds, plan, mode), s))


# ------------------------------------------------------------------ the reverse sweep


SMALL_ARRAY = 16  # a state array of at most this many elements is copied element by element


def _small(shape):
    n = 1
    for d in shape:
        n *= d
    return n <= SMALL_ARRAY


def _elements(shape):
    import itertools

    return itertools.product(*(range(d) for d in shape))


def _const_index(e, node):
    if len(e) == 1:
        return _loc(ast.Constant(value=e[0]), node)
    return _loc(ast.Tuple(elts=[_loc(ast.Constant(value=i), node) for i in e], ctx=ast.Load()), node)


def _shape(gen, name):
    """The constant shape of local array `name` as a tuple of ints, or None."""
    shape = _constant(gen, gen.larrays[name][0])
    shape = (shape,) if isinstance(shape, int) else shape
    if isinstance(shape, tuple) and all(type(d) is int and d >= 0 for d in shape):
        return shape
    return None


def _restore(gen, entry, node):
    out = []
    for v, sv, arr in entry:
        if not arr:
            out.append(_assign(_nm(v, node, True), _nm(sv, node), node))
            continue
        shape = _shape(gen, v)
        if shape is not None and _small(shape):
            out.extend(_assign(_sub(v, _const_index(e, node), node, True), _sub(sv, _const_index(e, node), node), node)
                       for e in _elements(shape))
        else:
            out.append(copy_loops(gen, v, sv, v, node))
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
        _, loop_node, f1, a1, entry, how, _n = act
        back = []
        gen.reverse(a1, back)
        out.extend(_replayed(gen, loop_node, f1, back, entry, how, node))
        return True
    return False


def _replayed(gen, loop_node, f1, back, entry, how, node):
    """The reverse of a replayed loop over range(lo, hi, st) (module docstring), its trip count n
    and its lo and st saved by the forward sweep: with a tape (``_taped``), or for a few trips or
    where no tape fits, for k = n - 1 down to 0: the entry state put back, iterations 0 .. k - 1
    as range(lo, lo + k st, st) and iteration k as the one of range(lo + k st, lo + (k + 1) st,
    st), forward and backward (``_plain``; no test per iteration)."""
    bounds, plan, mode = how
    it = loop_node.iter
    n, lo, st, k = bounds["n"], bounds["lo"], bounds["st"], gen.fresh("k")

    def c(v):
        return _loc(ast.Constant(value=v), node)

    def b(x, op, y):
        return _loc(ast.BinOp(left=x, op=op, right=y), node)

    lo_c = _int_const(it.args[0]) if len(it.args) > 1 else 0
    st_c = _int_const(it.args[2]) if len(it.args) > 2 else 1

    def lo_r():  # the start, a constant where it is one (the C compiler folds it)
        return c(lo_c) if lo_c is not None else _nm(lo, node)

    def st_r():  # and the step: a constant step spares each replayed range its trip count's division
        return c(st_c) if st_c is not None else _nm(st, node)

    def at(kk):  # lo + kk * st
        kst = kk if st_c == 1 else b(kk, ast.Mult(), st_r())
        return kst if lo_c == 0 else b(lo_r(), ast.Add(), kst)

    def over(x, y, stmts):
        lp = copy.copy(loop_node)
        lp.iter = _loc(ast.Call(func=_nm("range", node), args=[x, y, st_r()], keywords=[]), node)
        lp.body = stmts or [_loc(ast.Pass(), node)]
        return lp

    if mode == "plain":
        return _plain(gen, entry, n, k, lo_r, at, over, c, b, f1, back, node)
    if mode == "disjoint":  # the entry state back at once, then each iteration forward and backward
        rng = _loc(ast.Call(func=_nm("range", node), args=[b(_nm(n, node), ast.Sub(), c(1)), c(-1), c(-1)],
                            keywords=[]), node)
        return _restore(gen, entry, node) + [_loc(ast.For(
            target=_nm(k, node, True), iter=rng,
            body=[over(at(_nm(k, node)), at(b(_nm(k, node), ast.Add(), c(1))), copy.deepcopy(f1) + back)],
            orelse=[]), node)]
    taped = _taped(gen, plan, entry, n, at, over, f1, back, node)
    if mode == "taped":
        return taped
    plain = _plain(gen, entry, n, k, lo_r, at, over, c, b, f1, copy.deepcopy(back), node)
    test = _loc(ast.Compare(left=_nm(n, node), ops=[ast.LtE()], comparators=[c(PLAIN_TRIPS)]), node)
    return [_loc(ast.If(test=test, body=plain, orelse=taped), node)]


def _disjoint(gen, s, stores):
    """Whether loop `s` (over a range) changes nothing but elements of local arrays that are its
    iteration's own, and locals that are: every store into a local array has the loop's variable
    for its first index, every read of an array the loop writes too, the range counts up from 0 or
    more (so no two iterations meet at one element, a negative index included), and each local it
    assigns is set before it is read and not read after the loop; no inner loop, no @tack.func
    call, no store into an array parameter.  A gather (``for c in range(4): p[c] = x[tets[e, c]]``)
    is such a loop.  Its reverse puts the entry state back once and takes each iteration forward
    and backward, last first: no iteration reads what another wrote, and each one's backward
    puts its elements back as the entry had them (``_replayed``)."""
    it = s.iter
    lo = _int_const(it.args[0]) if len(it.args) > 1 else 0
    st = _int_const(it.args[2]) if len(it.args) > 2 else 1
    if lo is None or lo < 0 or st is None or st <= 0:
        return False
    c = s.target.id
    written = set()

    def first(idx):
        e = idx.elts[0] if isinstance(idx, ast.Tuple) and idx.elts else idx
        return isinstance(e, ast.Name) and e.id == c

    for n in ast.walk(s):
        if n is s:
            continue
        if isinstance(n, (ast.For, ast.While)):
            return False
        if isinstance(n, ast.Call) and isinstance(gen.resolve(n.func), _core.Kernel):
            return False
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                if isinstance(t, ast.Name):
                    if t.id == c or isinstance(n, ast.AugAssign) or kind(gen, t.id) is not None:
                        return False  # the variable changed, a sum, a local array made in the loop
                elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and \
                        kind(gen, t.value.id) is not None and first(t.slice):
                    written.add(t.value.id)
                else:
                    return False
    for n in ast.walk(s):
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id in written and \
                not first(n.slice):
            return False
    outside = gen.reads_outside(s)
    for v, how in stores.items():
        if v == c or v in written:
            continue
        if how != {"set"} or not _own(s.body, v) or v in outside:
            return False
    return bool(written)


def _own(body, v):
    """Whether every read of local `v` in `body` follows an assignment to it on every path through
    the statements before (an `if` assigns it where both branches do): v is the iteration's own."""
    def reads(e):
        return e is not None and any(isinstance(n, ast.Name) and n.id == v and isinstance(n.ctx, ast.Load)
                                     for n in ast.walk(e))

    def walk(stmts, defined):
        for st in stmts:
            if isinstance(st, ast.If):
                if not defined and reads(st.test):
                    return None
                a, b = walk(st.body, defined), walk(st.orelse, defined)
                if a is None or b is None:
                    return None
                defined = a and b
            elif isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                mine = any(isinstance(t, ast.Name) and t.id == v for t in targets)
                if not defined and (reads(st.value) or any(reads(t) for t in targets) or
                                    (mine and isinstance(st, ast.AugAssign))):
                    return None
                defined = defined or mine
            elif not defined and reads(st):
                return None
        return defined

    return walk(body, False) is not None


PLAIN_TRIPS = 3  # up to this many trips the replay from the entry runs no more forward iterations
PLAIN_BODY = 300  # than a tape; a loop body of at most this many AST nodes gets both forms


def _size(stmts):
    return sum(1 for s in stmts for _ in ast.walk(s))


def _const_trips(gen, loop_node):
    bounds = [_constant(gen, a) for a in loop_node.iter.args]
    if all(type(v) is int for v in bounds) and (len(bounds) < 3 or bounds[2]):
        return len(range(*bounds))
    return None


def _plain(gen, entry, n, k, lo_r, at, over, c, b, f1, back, node):
    """The replay from the entry: for k = n - 1 down to 0, the entry state put back, iterations
    0 .. k - 1 forward, iteration k forward and backward (n (n + 1) / 2 forward iterations)."""
    body = _restore(gen, entry, node) + [
        over(lo_r(), at(_nm(k, node)), copy.deepcopy(f1)),
        over(at(_nm(k, node)), at(b(_nm(k, node), ast.Add(), c(1))), copy.deepcopy(f1) + back)]
    rng = _loc(ast.Call(func=_nm("range", node), args=[b(_nm(n, node), ast.Sub(), c(1)), c(-1), c(-1)],
                        keywords=[]), node)
    return [_loc(ast.For(target=_nm(k, node, True), iter=rng, body=body, orelse=[]), node)] + _restore(gen, entry, node)


def _int_const(e):
    """The value of an int literal (a negative one too), else None."""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        v = _int_const(e.operand)
        return -v if v is not None else None
    return e.value if isinstance(e, ast.Constant) and type(e.value) is int else None


def _trips(it, node):
    """The trip count of range(*it.args) as an expression, len(range(lo, hi, st)): max(0, hi - lo)
    for a step of one, max(0, -((lo - hi) // st)) for any other (the floor division rounds the
    trip count up, whatever the step's sign; a zero step failed in the forward sweep before)."""
    a = [copy.deepcopy(x) for x in it.args]

    def c(v):
        return _loc(ast.Constant(value=v), node)

    def b(x, op, y):
        return _loc(ast.BinOp(left=x, op=op, right=y), node)

    lo, hi = (c(0), a[0]) if len(a) == 1 else (a[0], a[1])
    if len(a) < 3 or (isinstance(a[2], ast.Constant) and a[2].value == 1):
        span = hi if len(a) == 1 else b(hi, ast.Sub(), lo)
    else:
        span = _loc(ast.UnaryOp(op=ast.USub(), operand=b(b(lo, ast.Sub(), hi), ast.FloorDiv(), a[2])), node)
    return _loc(ast.Call(func=_nm("max", node), args=[c(0), span], keywords=[]), node)


_BYTES = {"f32": 4, "f64": 8, "i8": 1, "u8": 1, "i16": 2, "u16": 2, "i32": 4, "u32": 4, "i64": 8, "u64": 8,
          "bool": 1}
TAPE_SLOTS = 32  # iterations whose states a replayed loop keeps at once
TAPE_BYTES = 4096  # the most one tape array may take: a GPU's limit for one local array
TAPE_TOTAL = 16384  # and all of one loop's together


def _constant(gen, node):
    """node's value where it is a constant the generator can evaluate (literals, module constants,
    ``len(t)`` and ``t.shape[d]`` of a local array of constant shape), else None."""
    node = _extents(gen, copy.deepcopy(node))
    try:
        return eval(compile(ast.Expression(body=node), "<constant>", "eval"), dict(gen.env))
    except Exception:
        return None


def _extents(gen, node):
    """node with len(t) and t.shape[d] of local arrays of constant shape replaced by their values."""
    def shape_of(name):
        if name not in gen.larrays:
            return None
        try:
            v = eval(compile(ast.Expression(body=copy.deepcopy(gen.larrays[name][0])), "<shape>", "eval"),
                     dict(gen.env))
        except Exception:
            return None
        v = (v,) if isinstance(v, int) else v
        return v if isinstance(v, tuple) and all(type(d) is int for d in v) else None

    class _T(ast.NodeTransformer):
        def visit_Call(self, n):
            self.generic_visit(n)
            if isinstance(n.func, ast.Name) and n.func.id == "len" and len(n.args) == 1 and \
                    isinstance(n.args[0], ast.Name) and gen.resolve(n.func) in (len, None):
                sh = shape_of(n.args[0].id)
                if sh:
                    return ast.copy_location(ast.Constant(value=sh[0]), n)
            return n

        def visit_Subscript(self, n):
            self.generic_visit(n)
            v = n.value
            if isinstance(v, ast.Attribute) and v.attr == "shape" and isinstance(v.value, ast.Name) and \
                    isinstance(n.slice, ast.Constant) and type(n.slice.value) is int:
                sh = shape_of(v.value.id)
                if sh and -len(sh) <= n.slice.value < len(sh):
                    return ast.copy_location(ast.Constant(value=sh[n.slice.value]), n)
            return n

    return _T().visit(node)


def _tape_plan(gen, loop_node, entry):
    """(slots, [(name, tape name, dtype, shape or None, is a local array)]) of the tape of a replayed
    loop's state, or None where a tape of two slots or more does not fit or is not needed (the plain
    replay then).  A loop over a constant range has a tape of its trip count, when that is smaller."""
    items, sizes = [], []
    bounds = [_constant(gen, a) for a in loop_node.iter.args]
    trips = len(range(*bounds)) if all(type(v) is int for v in bounds) and (len(bounds) < 3 or bounds[2]) else None
    for v, _sv, arr in entry:
        if arr:
            shape_node, et, _nd = gen.larrays[v]
            shape = _constant(gen, shape_node)
            if shape is None:  # a shape the adjoint cannot evaluate here: no tape
                return None
            shape = (shape,) if isinstance(shape, int) else tuple(shape)
            if et not in _BYTES or not all(type(d) is int and d > 0 for d in shape):
                return None
            size = _BYTES[et]
            for d in shape:
                size *= d
        else:
            t = gen.local_types.get(v)
            et = {"float (Python)": "f64", "int (Python)": "i64", "bool (Python)": "bool"}.get(t, t)
            if et not in _BYTES:
                return None
            shape, size = None, _BYTES[et]
        items.append((v, gen.fresh("tape"), et, shape, arr))
        sizes.append(size)
    slots = TAPE_SLOTS if trips is None else min(TAPE_SLOTS, trips)
    if sizes:
        slots = min(slots, min(TAPE_BYTES // z for z in sizes), TAPE_TOTAL // sum(sizes))
    return (slots, items) if slots >= 2 else None


def _tape_copy(items, slot, to_tape, node):
    """Each state item into (or from) its tape's element `slot` (an expression)."""
    out = []
    for v, tape, _et, shape, arr in items:
        if not arr:
            cell = _sub(tape, slot, node, store=to_tape)
            out.append(_assign(cell, _nm(v, node), node) if to_tape else
                       _assign(_nm(v, node, True), cell, node))
            continue
        if _small(shape):  # a few elements: one statement each, constant indices (no loop, no wrap)
            for e in _elements(shape):
                cv = _const_index(e, node)
                ct = _loc(ast.Tuple(elts=[copy.deepcopy(slot)] + [_loc(ast.Constant(value=i), node) for i in e],
                                    ctx=ast.Load()), node)
                out.append(_assign(_sub(tape, ct, node, True), _sub(v, cv, node), node) if to_tape else
                           _assign(_sub(v, cv, node, True), _sub(tape, ct, node), node))
            continue
        qs = [f"{tape}{SEP}q{d}" for d in range(len(shape))]
        own = qs[0] if len(qs) == 1 else None
        idx_v = _nm(own, node) if own else _loc(ast.Tuple(elts=[_nm(q, node) for q in qs], ctx=ast.Load()), node)
        idx_t = _loc(ast.Tuple(elts=[copy.deepcopy(slot)] + [_nm(q, node) for q in qs], ctx=ast.Load()), node)
        st = (_assign(_sub(tape, idx_t, node, True), _sub(v, idx_v, node), node) if to_tape else
              _assign(_sub(v, idx_v, node, True), _sub(tape, idx_t, node), node))
        for d in reversed(range(len(shape))):
            ext = _loc(ast.Subscript(value=_loc(ast.Attribute(value=_nm(v, node), attr="shape", ctx=ast.Load()), node),
                                     slice=_loc(ast.Constant(value=d), node), ctx=ast.Load()), node)
            rng = _loc(ast.Call(func=_nm("range", node), args=[ext], keywords=[]), node)
            st = _loc(ast.For(target=_nm(qs[d], node, True), iter=rng, body=[st], orelse=[]), node)
        out.append(st)
    return out


def _tapes(gen, plan, node):
    """The creation of a loop's tape arrays (zeroed, as every local array; every slot the reverse
    reads was written before by the forward run or a segment's recording)."""
    slots, items = plan
    np = _np()
    out = []
    for v, tape, et, shape, arr in items:
        dims = (slots,) + (shape or ())
        c = [_loc(ast.Constant(value=d), node) for d in dims]
        out.append(_assign(_nm(tape, node, True), _loc(ast.Call(
            func=_nm(gen.use(np.zeros, "zeros"), node),
            args=[_loc(ast.Tuple(elts=c, ctx=ast.Load()), node) if len(dims) > 1 else c[0],
                  _nm(gen.use(getattr(_core, et), et), node)], keywords=[]), node), node))
    return out


def _taped(gen, plan, entry, n, at, over, f1, back, node):
    """The reverse of a replayed range loop with a tape of `slots` iterations' states: the trips in
    segments of `slots`, last first.  The forward run left the last segment's states in the tape
    (a ring: iteration j in slot j % slots), so it is taken backwards at once; each earlier one's
    start is reached by replaying the loop from its entry, its iterations then run once forward
    recording their states, and taken backwards from the tape.  n + n (n / slots - 1) / 2 forward
    iterations for n trips, none beyond the forward run's when n <= slots."""
    slots, items = plan

    def c(v):
        return _loc(ast.Constant(value=v), node)

    def b(x, op, y):
        return _loc(ast.BinOp(left=x, op=op, right=y), node)

    sg, a, hi, q, k, last = (gen.fresh(w) for w in ("sg", "a", "b", "q", "k", "last"))
    segs = b(b(_nm(n, node), ast.Add(), c(slots - 1)), ast.FloorDiv(), c(slots))
    record = over(at(_nm(a, node)), at(_nm(hi, node)),
                  _tape_copy(items, _nm(q, node), True, node) +
                  [_loc(ast.AugAssign(target=_nm(q, node, True), op=ast.Add(), value=c(1)), node)] +
                  copy.deepcopy(f1))
    k1 = b(_nm(k, node), ast.Add(), c(1))
    backward = _loc(ast.For(
        target=_nm(k, node, True),
        iter=_loc(ast.Call(func=_nm("range", node), args=[b(_nm(hi, node), ast.Sub(), c(1)),
                                                          b(_nm(a, node), ast.Sub(), c(1)), c(-1)], keywords=[]), node),
        body=_tape_copy(items, b(_nm(k, node), ast.Sub(), _nm(a, node)), False, node) +
        [over(at(_nm(k, node)), at(k1), copy.deepcopy(f1) + back)], orelse=[]), node)
    earlier = _loc(ast.Compare(left=_nm(sg, node), ops=[ast.Lt()], comparators=[_nm(last, node)]), node)
    body = [
        _assign(_nm(a, node, True), b(_nm(sg, node), ast.Mult(), c(slots)), node),
        _assign(_nm(hi, node, True), _loc(ast.Call(func=_nm("min", node), args=[
            b(_nm(a, node), ast.Add(), c(slots)), _nm(n, node)], keywords=[]), node), node),
        _loc(ast.If(test=earlier, body=_restore(gen, entry, node) + [
            over(at(c(0)), at(_nm(a, node)), copy.deepcopy(f1)),
            _assign(_nm(q, node, True), c(0), node), record], orelse=[]), node),
        backward]
    out = [_assign(_nm(last, node, True), b(segs, ast.Sub(), c(1)), node),
           _loc(ast.For(target=_nm(sg, node, True), iter=_loc(ast.Call(
               func=_nm("range", node), args=[_nm(last, node), c(-1), c(-1)], keywords=[]), node),
               body=body, orelse=[]), node)]
    return out + _restore(gen, entry, node)


def first_use(body, name):
    """'set' when the first statement of `body` that mentions `name` assigns it without reading it
    (at the body's own level), else 'read'."""
    for st in body:
        names = {n.id for n in ast.walk(st) if isinstance(n, ast.Name)}
        if name not in names:
            continue
        if isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
            reads = {n.id for n in ast.walk(st.value) if isinstance(n, ast.Name)}
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            if name not in reads and any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return "set"
        return "read"
    return "read"
