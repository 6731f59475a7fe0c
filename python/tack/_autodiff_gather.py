"""The gather form of an adjoint loop: a stencil's gradients without atomics, in a gather sweep and a last pass.

A parallel loop that reads its neighbours, ``unew[i, j] = u[i, j] + k * (u[i - 1, j] + ...)``,
has an adjoint that adds into its neighbours' gradients, ``u·grad[i - 1, j] += g``, which
iterations share: each such add is atomic (tack._autodiff: the race rule of every kernel), and
on the CPU an atomic float add is a compare-and-swap loop, some twenty times the cost of the
forward's SIMD loads.

Where every gradient an iteration adds at a shifted element is at a constant offset from the
loop's own variables (``u[i - 1, j]``: offset (-1, 0)), the adjoint is written the other way
round: a loop over the elements ``p`` *gathers*, for each offset ``o``, the contribution of
iteration ``q = p - o`` when ``q`` is in the loop's range, recomputing of that iteration only
what the one contribution needs (a backward slice, `_live`: the seed and ``k`` at ``q``, not the
forward's five loads of ``u``), so each iteration writes its own element ``u·grad[p]`` and no add
is atomic.  The price is recomputation: a five-point stencil's seed and ``k`` are read once per
neighbour, from cache.

The same loop then adds the iteration's own terms into the gathered arrays (``u``'s at ``p``),
after the gathers: the order of the sum an element got when gathers and own adds were one loop,
so the result is the same to the bit.  The rest of the iteration's own adjoint (``k``'s
gradient, the arrays nothing gathers, a float scalar's) runs in a last pass over the loop's own
range, and that pass zeroes the seeds of the outputs the loop overwrote (an overwritten output's
old value no longer counts) -- the gather sweep must not, a neighbour still reads them.  The
last pass reads the seed at its own element anyway (``k``'s gradient is seed times ``lap``), so
its zeroes cost only the lines they dirty.  Against one sweep of everything and then a pass of
zeroes alone, the bytes are the same (36 an f32 element, for the stencil) in fewer rows at one
column: NumPy puts large arrays at one offset in a page, so where a row is a whole number of
pages (2048 f32) the rows a loop reads at one column share a set of the level-1 cache -- eleven
in the one sweep (the seed, ``k`` and ``u`` at three rows each, both gradients), seven in the
gathers, five in the last pass.  On the 2-core development machine (a 12-way level-1 cache),
loaded, the two took 0.71-1.21 of the one sweep's time, 0.95 in the median of nineteen paired
runs (docs/differentiation.md, "Cost"; on an 8-way cache they measured no faster: decisions.md).
Zeroing in the last pass is right only where nothing in an iteration reads a seed after zeroing
it (``y[i] = a`` then ``y[i] = b``: the first store's seed is the zero the second left), and a
gather, which recomputes a neighbour's reverse sweep without its zeroes, is wrong there too:
such a loop keeps the atomic form (``_spent_last``).

Bounds tests (is ``q`` in the loop's range, is ``p``?) would keep the loop out of SIMD lanes,
where the forward stencil is one vector sweep (a tested gather cost 37 times its forward).  So
the sweep runs without tests over the box where every offset's ``q`` and ``p`` itself are
iterations -- ``lo + max(0, o) <= p < hi + min(0, o)`` on each axis, over every offset -- and
loops over the border strips around it, with the tests: peeled one axis at a time (axis k below
and above the box, the axes before k inside it, the axes after k whole), so they and the box
cover the range once, also when the box is empty (a range narrower than the offsets' spread).
A strip tests only the axes on which it leaves the box (axis k and those after it): on the axes
before k it lies inside the box, where every test holds.
Within an iteration the adds into a gradient's own element are summed in a local and stored
once (`_accumulated`): the C compiler forwarded the loads of the cell but kept every store.
Anything else (an index that is not the loop's variable plus a constant, a range with a step)
keeps the atomic form.
"""

from __future__ import annotations

import ast
import builtins as _builtins
import copy

from ._autodiff_nodes import SEP


def _walk_stmts(stmts):
    for st in stmts:
        yield from ast.walk(st)


def gather_passes(gen, loop, out, fwd, init, rev, flush):
    """[the fused loop, the strips, the pass that zeroes the spent seeds] for `loop`'s adjoint, or
    [out], its adds at the iteration's own element written as loads and stores."""
    sites, other = {}, set()
    for n in _walk_stmts(rev):
        site = getattr(n, "ad_site", None)
        if site is None:
            continue
        arr, off = site
        if off is None:
            other.add(arr)
        elif any(off):
            sites.setdefault(arr, set()).add(off)
    bounds = _bounds(gen, loop)
    if other or not sites or bounds is None or gen.loop_vars is None or len(bounds) != len(gen.loop_vars) or \
            not _spent_last(rev):
        own_only = {getattr(n, "ad_site")[0] for n in _walk_stmts(rev) if getattr(n, "ad_site", None)} - other - \
            set(sites)
        out.body = _accumulated(gen, _own_stores(out.body, own_only))
        return [out]
    return _fused(_Loops(gen, loop, bounds), sites, fwd, init, rev, flush)


def _fused(lp, sites, fwd, init, rev, flush):
    """[the sweep over the box where every gather is untested, the tested strips around it, the
    last pass]: see the module's docstring."""
    loop, dims = lp.loop, lp.dims
    offs = {arr: sorted(sites[arr]) for arr in sorted(sites)}
    every = [o for os in offs.values() for o in os]
    zero = (0,) * dims
    gathered = set(offs)
    # the sweep's own part: the iteration's adds at its own element into the gathered arrays,
    # after their gathers (the order of the sum an iteration's element gets)
    kept = _keep(rev, lambda site: not any(site[1]) and site[0] in gathered)
    own = _live(lp.renamed(fwd + init + _own_stores(kept, gathered), zero))

    def body(tested):
        """the loop's body; `tested`: the axes on which a strip may lie outside the loop's range (none
        in the box)"""
        out = [st for arr, os in offs.items() for off in os for st in lp.gathered(arr, off, fwd, init, rev, tested)]
        mine = copy.deepcopy(own)
        if tested and mine:  # a strip of the gathers' range may lie outside the loop's own
            mine = [ast.copy_location(ast.If(test=lp.in_range(zero, tested), body=mine, orelse=[]), loop)]
        return out + mine

    # per axis: the range of the gathers and the own pass [a, e), and the box [b, c) where every
    # offset's q and p itself are iterations of the loop
    whole = [(lp.shifted(lo, min(0, min(o[d] for o in every))), lp.shifted(hi, max(0, max(o[d] for o in every))))
             for d, (lo, hi) in enumerate(lp.bounds)]
    inner = [(lp.shifted(lo, max(0, max(o[d] for o in every))), lp.shifted(hi, min(0, min(o[d] for o in every))))
             for d, (lo, hi) in enumerate(lp.bounds)]
    loops = lp.peeled(whole, inner, body)
    # the last pass, over the loop's own range once every neighbour's seed has been read: the
    # iteration's adds into the arrays nothing gathers, a float scalar's, and the zeroes
    rest = _keep(rev, lambda site: not any(site[1]) and site[0] not in gathered)
    arrays = {n.ad_site[0] for n in _walk_stmts(rest) if getattr(n, "ad_site", None)}
    last_body = _live(copy.deepcopy(fwd + init + _own_stores(rest, arrays) + flush), into_ifs=True)
    if any(isinstance(n, (ast.Assign, ast.AugAssign)) and isinstance(n.targets[0] if isinstance(n, ast.Assign)
                                                                     else n.target, ast.Subscript)
           for n in _walk_stmts(last_body)):
        last = copy.copy(loop)
        last.body = _accumulated(lp.gen, last_body)
        loops.append(last)
    return loops


def _spends(st):
    """st zeroes an element of a gradient: the seed ``y·grad[i] = 0.0`` of an overwritten output,
    spent once the reverse sweep has read it."""
    return isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Subscript) \
        and isinstance(st.targets[0].value, ast.Name) and st.targets[0].value.id.endswith(SEP + "grad") \
        and isinstance(st.value, ast.Constant) and st.value.value == 0


def _spent_last(rev):
    """No gradient that `rev` zeroes is read after the zero, in the order the statements run (and
    no zero in a serial loop, whose next turn may read it): then the zeroes can move to a pass of
    their own after the fused loop, which reads the seeds of neighbouring iterations."""
    def reads(node):
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}

    def ok(stmts, zeroed):
        """the gradients zeroed after stmts, or None where one is read after its zero"""
        for st in stmts:
            if _spends(st):
                if reads(st.value) & zeroed or reads(st.targets[0].slice) & zeroed:
                    return None
                zeroed = zeroed | {st.targets[0].value.id}
            elif isinstance(st, ast.If):  # one branch runs: each starts from what was zeroed before
                if reads(st.test) & zeroed:
                    return None
                body, orelse = ok(st.body, zeroed), ok(st.orelse, zeroed)
                if body is None or orelse is None:
                    return None
                zeroed = body | orelse
            elif isinstance(st, (ast.For, ast.While)):
                if any(_spends(n) for n in ast.walk(st)) or reads(st) & zeroed:
                    return None
            elif reads(st) & zeroed:
                return None
        return zeroed

    return ok(rev, frozenset()) is not None


def _own_stores(stmts, arrays, gathered=False):
    """The adds into the gradients of `arrays`, all at the iteration's own element, written as a load
    and a store (``g[i, j] = g[i, j] + e``): no other iteration touches those elements, which the
    compiler's race check proves, and it need not make them atomic as it makes ``+=``.  In a gather
    pass (`gathered`) every add was moved to the gathering iteration's own element, whatever its
    offset: written as a ``+=`` there, the border strips' adds (under their range tests) were
    privatized into per-thread copies of the whole gradient, zeroed and merged every launch."""
    out = []
    for st in stmts:
        site = getattr(st, "ad_site", None)
        if site is not None and site[0] in arrays and site[1] is not None and (gathered or not any(site[1])):
            load = copy.deepcopy(st.target)
            load.ctx = ast.Load()
            store = copy.deepcopy(st.target)
            store.ctx = ast.Store()
            new = ast.Assign(targets=[store], value=ast.BinOp(left=load, op=ast.Add(), right=st.value))
            new.ad_own = site[0]  # for _accumulated
            ast.copy_location(new, st)
            ast.fix_missing_locations(new)
            out.append(new)
            continue
        if isinstance(st, (ast.If, ast.For)):
            st = copy.copy(st)
            st.body = _own_stores(st.body, arrays, gathered)
            st.orelse = _own_stores(st.orelse, arrays, gathered)
        out.append(st)
    return out


def _accumulated(gen, stmts):
    """stmts with the adds into a gradient at the iteration's own element (`_own_stores`' ``g[p] =
    g[p] + e``) summed in a local from the first on and stored once at the end: ``acc = g[p] + e1``,
    ``acc = acc + e2``, ..., ``g[p] = acc``, each sum rounded to the gradient's type, so the value
    stored is the same, to the bit.  Written as loads and stores of the cell, a stencil's fused
    body (six adds into u's gradient) stored the cell six times: the C compiler forwards the loads
    but keeps every store.  Only for a gradient whose first add is a statement of stmts' own level
    (so the load happens where it did: one inside an if may be out of bounds when the if is not
    taken), whose adds are all at one index, and that nothing else in stmts mentions."""
    adds, names = {}, {}
    for n in _walk_stmts(stmts):
        arr = getattr(n, "ad_own", None)
        if arr is not None:
            adds.setdefault(arr, []).append(n)
        if isinstance(n, ast.Name):
            names[n.id] = names.get(n.id, 0) + 1
    todo = {}
    for arr, ns in adds.items():
        cell = ns[0].targets[0]
        where = ast.dump(cell.slice)
        if any(ast.dump(n.targets[0].slice) != where for n in ns) or names.get(cell.value.id) != 2 * len(ns):
            continue
        first = next(st for st in stmts if cell.value.id in _names(st))
        if getattr(first, "ad_own", None) == arr:
            todo[arr] = first
    if not todo:
        return stmts

    def acc(arr, store=False):
        return ast.copy_location(ast.Name(id=f"acc{SEP}{arr}", ctx=ast.Store() if store else ast.Load()), todo[arr])

    def rounded(arr, e):
        t = gen.params[arr][1]
        return ast.copy_location(ast.Call(func=ast.copy_location(ast.Name(id=gen.use(getattr(_core(), t), t),
                                                                          ctx=ast.Load()), e),
                                          args=[e], keywords=[]), e)

    def rewrite(stmts):
        out = []
        for st in stmts:
            arr = getattr(st, "ad_own", None)
            if arr in todo:
                left = copy.deepcopy(st.value.left) if st is todo[arr] else acc(arr)
                value = ast.copy_location(ast.BinOp(left=left, op=ast.Add(), right=copy.deepcopy(st.value.right)), st)
                new = ast.copy_location(ast.Assign(targets=[acc(arr, True)], value=rounded(arr, value)), st)
                out.append(ast.fix_missing_locations(new))
                continue
            if isinstance(st, (ast.If, ast.For)):
                st = copy.copy(st)
                st.body = rewrite(st.body)
                st.orelse = rewrite(st.orelse)
            out.append(st)
        return out

    out = rewrite(stmts)
    for arr, first in todo.items():
        out.append(ast.fix_missing_locations(ast.copy_location(
            ast.Assign(targets=[copy.deepcopy(first.targets[0])], value=acc(arr)), first)))
    return out


def _core():
    from . import _core

    return _core


def _pass(node):
    return ast.copy_location(ast.Pass(), node)


def _keep(stmts, want, rewrite=None):
    """stmts without the gradient adds whose site `want` refuses, and without stores into
    gradients (want is None: keep every add; rewrite: the new index of a kept add)."""
    out = []
    for st in stmts:
        site = getattr(st, "ad_site", None)
        if site is not None:
            if want(site):
                st = copy.deepcopy(st)
                if rewrite is not None:
                    st.target.slice = rewrite(st)
                out.append(st)
            continue
        if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Subscript):
            if want is None or want(("", (0,))):  # the own pass zeroes; a gather pass must not
                out.append(st)
            continue
        if isinstance(st, (ast.If, ast.For)):
            st = copy.copy(st)
            st.body = _keep(st.body, want, rewrite) or [_pass(st)]
            st.orelse = _keep(st.orelse, want, rewrite)
            out.append(st)
            continue
        out.append(copy.deepcopy(st))
    return out


def _names(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _plain(e):
    """e computes a value and does nothing else: no call but of a name or an attribute (the
    intrinsics, casts and constructors the adjoint writes; @tack.func calls are inlined before
    this), no walrus."""
    for n in ast.walk(e):
        if isinstance(n, ast.NamedExpr):
            return False
        if isinstance(n, ast.Call) and not isinstance(n.func, (ast.Name, ast.Attribute)):
            return False
    return True


def _live(stmts, into_ifs=False):
    """stmts less the assignments to locals that nothing after them reads: a gather pass keeps one
    offset's contribution, and the rest of the recomputed iteration (the forward's values, the
    other adds' partials) is dead there.  Without this the recomputation reads every array the
    forward reads, once per offset, and its index checks keep the C compiler from dropping the
    loads.  Conservative: anything but a plain assignment to a name (an if, a loop, an add into a
    gradient, a store) is kept with every name it mentions live, and an assignment whose value may
    do something (a call of a call, a walrus) is kept.  `into_ifs`: an if is sliced too (its
    branches from what is live after it), and left out when nothing in it is left and its test
    is plain."""
    return _slice(stmts, set(), into_ifs)[0]


def _slice(stmts, live, into_ifs):
    """(what _live keeps of stmts, the names live before them), given the names `live` after them."""
    live, out = set(live), []
    for st in reversed(stmts):
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
                and _plain(st.value):
            target = st.targets[0].id
            if target not in live:
                continue
            live.discard(target)
            live |= _names(st.value)
        elif isinstance(st, (ast.AugAssign, ast.AnnAssign)) and isinstance(st.target, ast.Name) \
                and st.value is not None and _plain(st.value):
            if st.target.id not in live:
                continue
            live |= _names(st.value)
        elif into_ifs and isinstance(st, ast.If):
            body, lb = _slice(st.body, live, into_ifs)
            orelse, lo = _slice(st.orelse, live, into_ifs)
            if not body and not orelse and _plain(st.test):
                continue
            st = copy.copy(st)
            st.body, st.orelse = body or [_pass(st)], orelse
            live = lb | lo | _names(st.test)
        else:
            live |= _names(st)
        out.append(st)
    out.reverse()
    return out, live


class _Loops:
    """What the gather and fused loops are built from: names, constants, the neighbour's renaming,
    the loops over a box of the gather variables ``p·0, p·1, ...``."""

    def __init__(self, gen, loop, bounds):
        self.gen, self.loop, self.bounds = gen, loop, bounds
        self.dims = len(bounds)
        self.pv = [f"p{SEP}{d}" for d in range(self.dims)]

    def name(self, id_, store=False):
        return ast.copy_location(ast.Name(id=id_, ctx=ast.Store() if store else ast.Load()), self.loop)

    def const(self, v):
        return ast.copy_location(ast.Constant(value=v), self.loop)

    def shifted(self, e, k):
        if k == 0:
            return copy.deepcopy(e)
        return ast.copy_location(ast.BinOp(left=copy.deepcopy(e), op=ast.Add() if k > 0 else ast.Sub(),
                                           right=self.const(abs(k))), self.loop)

    def call(self, fn, label, *args):
        return ast.copy_location(ast.Call(func=self.name(self.gen.use(fn, label)),
                                          args=[copy.deepcopy(a) for a in args], keywords=[]), self.loop)

    def renamed(self, stmts, off):
        """stmts of the iteration q = p - off: each of the loop's variables replaced by its
        expression (not a local assigned from it: the compiler's hoisting of index checks out of a
        row follows the loop's own variables through expressions, not through locals)."""
        q = {v: d for d, v in enumerate(self.gen.loop_vars)}
        outer = self

        class Rn(ast.NodeTransformer):
            def visit_Name(self, n):
                if n.id in q and isinstance(n.ctx, ast.Load):
                    d = q[n.id]
                    return ast.copy_location(outer.shifted(outer.name(outer.pv[d]), -off[d]), n)
                return n

        return [Rn().visit(copy.deepcopy(st)) for st in stmts]

    def index(self, st):
        elts = [self.name(p) for p in self.pv]
        return elts[0] if len(elts) == 1 else ast.copy_location(ast.Tuple(elts=elts, ctx=ast.Load()), self.loop)

    def in_range(self, off, axes):
        """q = p - off is one of the loop's iterations, tested on `axes` (on the others it is known)."""
        tests = []
        for d in axes:
            lo, hi = self.bounds[d]
            q = self.shifted(self.name(self.pv[d]), -off[d])
            tests.append(ast.copy_location(ast.Compare(left=copy.deepcopy(lo), ops=[ast.LtE()], comparators=[q]),
                                           self.loop))
            tests.append(ast.copy_location(ast.Compare(left=copy.deepcopy(q), ops=[ast.Lt()],
                                                       comparators=[copy.deepcopy(hi)]), self.loop))
        return ast.copy_location(ast.BoolOp(op=ast.And(), values=tests), self.loop) if len(tests) > 1 else tests[0]

    def gathered(self, arr, off, fwd, init, rev, tested):
        """One offset's contribution to arr's gradient at p, recomputed from iteration p - off."""
        inner = _own_stores(_live(self.renamed(fwd + init + _keep(rev, lambda site: site == (arr, off), self.index),
                                               off)), {arr}, gathered=True)
        if not tested:
            return inner
        return [ast.copy_location(ast.If(test=self.in_range(off, tested), body=inner or [_pass(self.loop)], orelse=[]),
                                  self.loop)]

    def loop_over(self, axes, body):
        if self.dims == 1:
            it = self.call(_builtins.range, "range", *axes[0])
            target = self.name(self.pv[0], True)
        else:
            import tack

            it = ast.copy_location(ast.Call(func=self.name(self.gen.use(tack.ndrange, "ndrange")),
                                            args=[ast.Tuple(elts=[copy.deepcopy(lo), copy.deepcopy(hi)], ctx=ast.Load())
                                                  for lo, hi in axes], keywords=[]), self.loop)
            target = ast.Tuple(elts=[self.name(p, True) for p in self.pv], ctx=ast.Store())
        new = ast.For(target=target, iter=it, body=body or [_pass(self.loop)], orelse=[])
        ast.copy_location(new, self.loop)
        ast.fix_missing_locations(new)
        for n in ast.walk(new):
            if hasattr(n, "lineno") and getattr(n, "lineno", None) is None:
                ast.copy_location(n, self.loop)
        return new

    def peeled(self, whole, inner, body):
        """[the loop over the box `inner`, the strips of `whole` around it]: body(tested) is the
        loop's body, tested for the strips.  Peeled one axis at a time (axis k below and above
        `inner`, the axes before k inner, the axes after k whole), so the strips and the box cover
        `whole` once, also when `inner` is empty."""
        loops = [self.loop_over(inner, _accumulated(self.gen, body(())))]
        for k in range(self.dims):
            (a, e), (b, c) = whole[k], inner[k]
            below = (a, self.call(_builtins.min, "min", b, e))  # [a, min(b, e))
            above = (self.call(_builtins.max, "max", c, b), e)  # [max(c, b), e): with below, [a, e) once
            for strip in (below, above):
                # the axes before k lie in the box: every q's coordinate there is an iteration's
                loops.append(self.loop_over(inner[:k] + [strip] + whole[k + 1:], body(range(k, self.dims))))
        return loops


def _bounds(gen, loop):
    """[(lo, hi)] expressions of each axis of the loop's range or ndrange, step 1; None otherwise."""
    import tack

    it = loop.iter
    if not isinstance(it, ast.Call) or it.keywords:
        return None
    fobj = gen.resolve(it.func)
    if fobj is _builtins.range:
        return _range_axis(it.args)
    if fobj is not tack.ndrange:
        return None
    args = it.args
    if len(args) == 1 and isinstance(args[0], ast.Tuple):  # one tuple: a shape
        return [(ast.Constant(value=0), e) for e in args[0].elts]
    out = []
    for a in args:
        if isinstance(a, ast.Starred) or (isinstance(a, ast.Attribute) and a.attr == "shape"):
            return None
        if isinstance(a, ast.Tuple):
            ax = _range_axis(a.elts)
        elif isinstance(a, ast.Call) and gen.resolve(a.func) is _builtins.range and not a.keywords:
            ax = _range_axis(a.args)
        else:
            ax = [(ast.Constant(value=0), a)]
        if ax is None:
            return None
        out.extend(ax)
    return out


def _range_axis(args):
    if len(args) == 1:
        return [(ast.Constant(value=0), args[0])]
    if len(args) == 2 or (len(args) == 3 and isinstance(args[2], ast.Constant) and args[2].value == 1):
        return [(args[0], args[1])]
    return None
