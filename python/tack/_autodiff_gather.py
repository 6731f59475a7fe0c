"""The gather form of an adjoint loop: a stencil's gradients without atomics.

A parallel loop that reads its neighbours, ``unew[i, j] = u[i, j] + k * (u[i - 1, j] + ...)``,
has an adjoint that adds into its neighbours' gradients, ``u·grad[i - 1, j] += g``, which
iterations share: each such add is atomic (tack._autodiff: the race rule of every kernel), and
on the CPU an atomic float add is a compare-and-swap loop, some twenty times the cost of the
forward's SIMD loads.

Where every gradient an iteration adds at a shifted element is at a constant offset from the
loop's own variables (``u[i - 1, j]``: offset (-1, 0)), the adjoint is written the other way
round: a first loop over the elements ``p`` of that gradient *gathers*, for each offset ``o``,
the contribution of iteration ``q = p - o`` when ``q`` is in the loop's range, recomputing that
iteration (its forward values and adjoint) and keeping only that one contribution, so each
iteration writes its own element ``u·grad[p]`` and no add is atomic; then the own pass runs the
adjoint as before, without the shifted adds (and it is the one that zeroes the gradients of
overwritten outputs, after the gather has read them).  The price is recomputation: a
five-point stencil's iteration is recomputed once per neighbour, which is still far below the
cost of the atomics.  Anything else (an index that is not the loop's variable plus a constant, a
range with a step) keeps the atomic form.

The bounds tests (is ``q`` in the loop's range?) kept the gather loop out of SIMD lanes, where
the forward stencil is one vector sweep: the adjoint of a 2048 x 2048 heat step cost 37 times
its forward.  So the gather is written as one loop over the *interior* -- the elements ``p``
for which every offset's ``q`` is in range, ``lo + max(o) <= p < hi + min(o)`` on each axis --
with no test at all, and loops over the border strips around it with the tests.  The strips
peel one axis at a time (axis k below and above the interior, the axes before k interior, the
axes after k whole), so they and the interior cover the gather's range once, also when the
interior is empty (a range narrower than the offsets' spread).
"""

from __future__ import annotations

import ast
import builtins as _builtins
import copy

SEP = "\u00b7"


def _walk_stmts(stmts):
    for st in stmts:
        yield from ast.walk(st)


def gather_passes(gen, loop, out, fwd, init, rev, flush):
    """[the gather loops..., the own pass] for `loop`'s adjoint, or [out] unchanged."""
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
    if other or not sites or bounds is None or gen.loop_vars is None or len(bounds) != len(gen.loop_vars):
        own_only = {getattr(n, "ad_site")[0] for n in _walk_stmts(rev) if getattr(n, "ad_site", None)} - other - \
            set(sites)
        out.body = _own_stores(out.body, own_only)
        return [out]
    passes = []
    for arr in sorted(sites):
        offs = sorted(sites[arr])
        passes.extend(_gather_loops(gen, loop, arr, offs, bounds, fwd, init, rev))
    own = copy.copy(loop)
    kept = _keep(rev, lambda site: not any(site[1]))
    own.body = fwd + init + _own_stores(kept, {n.ad_site[0] for n in _walk_stmts(kept) if hasattr(n, "ad_site")}) + \
        flush or [_pass(loop)]
    return passes + [own]


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


def _live(stmts):
    """stmts less the assignments to locals that nothing after them reads: a gather pass keeps one
    offset's contribution, and the rest of the recomputed iteration (the forward's values, the
    other adds' partials) is dead there.  Without this the recomputation reads every array the
    forward reads, once per offset, and its index checks keep the C compiler from dropping the
    loads.  Conservative: anything but a plain assignment to a name (an if, a loop, an add into a
    gradient, a store) is kept with every name it mentions live, and an assignment whose value may
    do something (a call of a call, a walrus) is kept."""
    live, out = set(), []
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
        else:
            live |= _names(st)
        out.append(st)
    out.reverse()
    return out


def _gather_loops(gen, loop, arr, offs, bounds, fwd, init, rev):
    """The gather of `arr`'s shifted adds: [the interior's loop without bounds tests, the border
    strips' loops with them] (see the module's docstring)."""
    dims = len(bounds)
    pv = [f"p{SEP}{d}" for d in range(dims)]

    def name(id_, store=False):
        return ast.copy_location(ast.Name(id=id_, ctx=ast.Store() if store else ast.Load()), loop)

    def const(v):
        return ast.copy_location(ast.Constant(value=v), loop)

    def shifted(e, k):
        if k == 0:
            return copy.deepcopy(e)
        return ast.copy_location(ast.BinOp(left=copy.deepcopy(e), op=ast.Add() if k > 0 else ast.Sub(),
                                           right=const(abs(k))), loop)

    def call(fn, label, *args):
        return ast.copy_location(ast.Call(func=name(gen.use(fn, label)), args=[copy.deepcopy(a) for a in args],
                                          keywords=[]), loop)

    # the iteration q = p - off: each of the loop's variables replaced by its expression (not a
    # local assigned from it: the compiler's hoisting of index checks out of a row follows the
    # loop's own variables through expressions, not through locals)
    class Rn(ast.NodeTransformer):
        def __init__(self, off):
            self.q = {v: d for d, v in enumerate(gen.loop_vars)}
            self.off = off

        def visit_Name(self, n):
            if n.id in self.q and isinstance(n.ctx, ast.Load):
                d = self.q[n.id]
                return ast.copy_location(shifted(name(pv[d]), -self.off[d]), n)
            return n

    def renamed(stmts, off):
        return [Rn(off).visit(copy.deepcopy(st)) for st in stmts]

    def index(st, _pv=pv):
        elts = [name(p) for p in _pv]
        return elts[0] if len(elts) == 1 else ast.copy_location(ast.Tuple(elts=elts, ctx=ast.Load()), loop)

    def body(tested):
        out = []
        for off in offs:
            inner = _own_stores(_live(renamed(fwd + init + _keep(rev, lambda site, o=off: site == (arr, o), index), off)),
                                {arr}, gathered=True)
            if not tested:
                out.extend(inner)
                continue
            tests = []
            for d in range(dims):
                lo, hi = bounds[d]
                q = shifted(name(pv[d]), -off[d])
                tests.append(ast.copy_location(ast.Compare(left=copy.deepcopy(lo), ops=[ast.LtE()],
                                                           comparators=[q]), loop))
                tests.append(ast.copy_location(ast.Compare(left=copy.deepcopy(q), ops=[ast.Lt()],
                                                           comparators=[copy.deepcopy(hi)]), loop))
            test = ast.copy_location(ast.BoolOp(op=ast.And(), values=tests), loop) if len(tests) > 1 else tests[0]
            out.append(ast.copy_location(ast.If(test=test, body=inner or [_pass(loop)], orelse=[]), loop))
        return out or [_pass(loop)]

    def loop_over(axes, tested):
        if dims == 1:
            it = call(_builtins.range, "range", *axes[0])
            target = name(pv[0], True)
        else:
            import tack

            it = ast.copy_location(ast.Call(func=name(gen.use(tack.ndrange, "ndrange")),
                                            args=[ast.Tuple(elts=[copy.deepcopy(lo), copy.deepcopy(hi)], ctx=ast.Load())
                                                  for lo, hi in axes], keywords=[]), loop)
            target = ast.Tuple(elts=[name(p, True) for p in pv], ctx=ast.Store())
        new = ast.For(target=target, iter=it, body=body(tested), orelse=[])
        ast.copy_location(new, loop)
        ast.fix_missing_locations(new)
        for n in ast.walk(new):
            if hasattr(n, "lineno") and getattr(n, "lineno", None) is None:
                ast.copy_location(n, loop)
        return new

    # per axis: the gather's range [a, e) and its interior [b, c), where every offset's q is in range
    whole, inner = [], []
    for d in range(dims):
        lo, hi = bounds[d]
        whole.append((shifted(lo, min(o[d] for o in offs)), shifted(hi, max(o[d] for o in offs))))
        inner.append((shifted(lo, max(o[d] for o in offs)), shifted(hi, min(o[d] for o in offs))))
    loops = [loop_over(inner, tested=False)]
    for k in range(dims):
        (a, e), (b, c) = whole[k], inner[k]
        below = (a, call(_builtins.min, "min", b, e))  # [a, min(b, e))
        above = (call(_builtins.max, "max", c, b), e)  # [max(c, b), e): with below, [a, e) once
        for strip in (below, above):
            loops.append(loop_over(inner[:k] + [strip] + whole[k + 1:], tested=True))
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
