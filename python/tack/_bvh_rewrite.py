"""The Bvh and Mesh rewrite: a kernel's tree with its tree parameters made plain.

tack._bvh says what the trees are; this module turns a kernel taking one
into an ordinary kernel, on the tree of the kernel's own source, before the
front end (or debug mode) reads it, as tack._hashgrid_rewrite does for a
HashGrid and through the same frame (tack._rewritten_call.rewrite_function).  A
Bvh parameter ``b`` becomes ``b·lo``, ``b·hi`` (the nodes' boxes, (2 n - 1,
3)), ``b·left``, ``b·right`` (the internal nodes' children), ``b·leaf``
(the boxes in leaf order) and ``b·n``; a Mesh parameter adds ``b·v`` and
``b·t``, its vertices and triangles.  The loop

    for k in b.query_box(lo, hi):       (or b.query_ray(origin, direction))
        BODY

becomes, with names of its own for every temporary, a walk of the tree with
a local stack of 64 node indices (tack._bvh.STACK; enough for any tree, as
tack._bvh explains):

    stk = tack.zeros(64, tack.i32)      # the root, node 0, on top
    sp = 1 if b·n > 0 (and the query's numbers are usable) else 0
    while sp > 0:
        sp -= 1
        nd = stk[sp]
        if the query meets node nd's box:
            if nd is a leaf:
                k = b·leaf[nd - (b·n - 1)]
                BODY
            else:
                push nd's two children (an AssertionError if the stack is full)

so a ``continue`` in the body goes on to the next node and a ``break`` ends
the query, as they would in a loop over a list of the boxes.  The two Mesh
queries, which answer with several values, are a statement of their own,
``tri, t, u, v = m.ray_closest(o, d)`` and ``tri, q = m.closest_point(p)``,
and become a call of a @tack.func of tack._bvh.funcs that walks the tree
the same way.  What the rewrite cannot keep the meaning of it refuses,
naming the line: a query at the top level of a kernel (a loop there would
be the parallel loop), an ``else:`` on the loop, a Mesh query anywhere but
the right of such an assignment, and any other use of the tree.
"""

import ast
import math

import numpy as np

from ._array import zeros as _zeros
from ._core import f32, f64, i32
from ._hashgrid_rewrite import _Place  # the same placing of the user's body in the template
from ._rewritten_call import QueryRewriter
from ._structs_nodes import SEP

_LOOP = """
{T}stk = __tk_zeros({S}, __tk_i32)
{T}sp = 0
{SETUP}
while {T}sp > 0:
    {T}sp -= 1
    {T}nd = {T}stk[{T}sp]
    if {TEST}:
        if {T}nd >= {B}n - 1:
            {K} = {B}leaf[{T}nd - ({B}n - 1)]
            __tk_BODY
        else:
            assert {T}sp + 2 <= {S}, "tack.Bvh: the traversal stack of {S} nodes overflowed"
            if {T}sp + 2 <= {S}:
                {T}stk[{T}sp] = {B}left[{T}nd]
                {T}stk[{T}sp + 1] = {B}right[{T}nd]
                {T}sp += 2
"""

_BOX_SETUP = """
if {B}n > 0:
    {T}sp = 1
"""

_RAY_SETUP = """
if {B}n > 0 and __tk_isfinite({T}o0) and __tk_isfinite({T}o1) and __tk_isfinite({T}o2) and \
        __tk_isfinite({T}d0) and __tk_isfinite({T}d1) and __tk_isfinite({T}d2):
    {T}sp = 1
"""

_BOX_TEST = " and ".join(f"{{B}}lo[{{T}}nd, {d}] <= {{T}}h{d} and {{B}}hi[{{T}}nd, {d}] >= {{T}}l{d}" for d in range(3))
_RAY_TEST = ("{RB}({B}lo, {B}hi, {T}nd, {T}o0, {T}o1, {T}o2, {T}d0, {T}d1, {T}d2, {INF})")

_LOOPS = {"query_box": (("lo", "hi"), "l", "h"), "query_ray": (("origin", "direction"), "o", "d")}
_CALLS = {"ray_closest": (("origin", "direction"), 4, "tri, t, u, v"), "closest_point": (("p",), 2, "tri, q")}


class _Rw(QueryRewriter):
    def __init__(self, fn, base, trees):
        super().__init__(fn, base)
        self.trees = trees  # parameter name -> ("bvh" | "mesh", float type)
        self.inject = {"__tk_zeros": _zeros, "__tk_i32": i32, "__tk_isfinite": math.isfinite}

    def kind(self, name):
        return "tack.Mesh" if self.trees[name][0] == "mesh" else "tack.Bvh"

    def method_of(self, node):
        """(tree parameter, method) when `node` is `tree.method(...)`, else None."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name) and node.func.value.id in self.trees:
            b, m = node.func.value.id, node.func.attr
            known = list(_LOOPS) + (list(_CALLS) if self.trees[b][0] == "mesh" else [])
            if m not in known:
                raise self.error(f"a {self.kind(b)} in a kernel has {', '.join(k + '()' for k in known)}, "
                                 f"not '{m}'", node)
            return b, m
        return None

    def visit_Name(self, node):
        if node.id in self.trees:
            raise self.error(f"'{node.id}' is a {self.kind(node.id)}: a kernel uses it only in its queries "
                             f"('for k in {node.id}.query_box(lo, hi):', ...)", node)
        return node

    def visit_Call(self, node):
        got = self.method_of(node)
        if got is not None:
            b, m = got
            if m in _LOOPS:
                raise self.error(f"{b}.{m}(...) is a loop: 'for k in {b}.{m}(...):'", node)
            raise self.error(f"{b}.{m}(...) gives several values: write '{_CALLS[m][2]} = {b}.{m}(...)' "
                             f"as a statement of its own", node)
        return self.generic_visit(node)

    def setup(self, b):
        ft = self.trees[b][1]
        name = np.dtype(ft).name
        F = f"__tk_{name}"
        self.inject[F] = {"float32": f32, "float64": f64}[name]
        from ._bvh import funcs

        fs = funcs(ft)
        for k in ("ray_box", "ray_closest", "closest_point"):
            self.inject[f"__tk_{k}_{name}"] = fs[k]
        self.inject[f"__tk_inf_{name}"] = fs["INF"]
        return F, name

    def components(self, b, arg, T, letter, F, what):
        """Statements setting T+letter+0..2 to the 3 coordinates of `arg` in the tree's float type."""
        if isinstance(arg, ast.Tuple):
            if len(arg.elts) != 3:
                raise self.error(f"the {what} of a {self.kind(b)} query has 3 coordinates, got {len(arg.elts)}",
                                 arg)
            comps = [self.visit(e) for e in arg.elts]
            pre = []
        else:
            pre = [ast.copy_location(ast.Assign(targets=[ast.Name(id=T + letter, ctx=ast.Store())],
                                                value=self.visit(arg)), arg)]
            comps = [ast.copy_location(ast.Subscript(value=ast.Name(id=T + letter, ctx=ast.Load()),
                                                     slice=ast.Constant(value=d), ctx=ast.Load()), arg)
                     for d in range(3)]  # v[0], not v.x: debug mode's vectors are NumPy arrays
        for d, c in enumerate(comps):
            call = ast.Call(func=ast.Name(id=F, ctx=ast.Load()), args=[c], keywords=[])
            pre.append(ast.copy_location(ast.Assign(targets=[ast.Name(id=f"{T}{letter}{d}", ctx=ast.Store())],
                                                    value=call), arg))
        return pre

    def visit_For(self, node):
        got = self.method_of(node.iter)
        if got is None:
            return self.nested(node)
        b, m = got
        if m not in _LOOPS:
            raise self.error(f"{b}.{m}(...) is not a loop: write '{_CALLS[m][2]} = {b}.{m}(...)'", node)
        call = node.iter
        names, a, c = _LOOPS[m]
        self.check_query(node, f"{b}.{m}", f"{b}.{m} takes two arguments: {b}.{m}({', '.join(names)})",
                         "the box's index")
        F, name = self.setup(b)
        self.count += 1
        T = f"{b}{SEP}q{self.count}{SEP}"
        B = f"{b}{SEP}"
        pre = self.components(b, call.args[0], T, a, F, names[0]) + \
            self.components(b, call.args[1], T, c, F, names[1])
        body = self.query_body(node.body)
        from ._bvh import STACK

        if m == "query_box":
            setup, test = _BOX_SETUP, _BOX_TEST
        else:
            setup, test = _RAY_SETUP, _RAY_TEST
        fmt = dict(T=T, B=B, RB=f"__tk_ray_box_{name}", INF=f"__tk_inf_{name}")
        src = _LOOP.format(S=STACK, K=node.target.id, SETUP=setup.format(**fmt).strip(),
                           TEST=test.format(**fmt), **fmt)
        stmts = ast.parse(src).body
        return pre + [_Place({}, body, node).visit(s) for s in stmts]

    def visit_Assign(self, node):
        got = self.method_of(node.value)
        if got is None:
            return self.generic_visit(node)
        b, m = got
        if m not in _CALLS:
            raise self.error(f"{b}.{m}(...) is a loop: 'for k in {b}.{m}(...):'", node)
        names, count, spelled = _CALLS[m]
        call = node.value
        if self.depth == 0:
            raise self.error(f"{b}.{m}(...) at the top level of a kernel: put it inside the kernel's "
                             f"parallel loop", node)
        if call.keywords or len(call.args) != len(names):
            raise self.error(f"{b}.{m} takes {len(names)} argument{'s' if len(names) > 1 else ''}: "
                             f"{b}.{m}({', '.join(names)})", call)
        tgt = node.targets[0]
        if len(node.targets) != 1 or not isinstance(tgt, ast.Tuple) or len(tgt.elts) != count:
            raise self.error(f"{b}.{m}(...) gives {count} values: '{spelled} = {b}.{m}(...)'", node)
        F, name = self.setup(b)
        self.count += 1
        T = f"{b}{SEP}q{self.count}{SEP}"
        pre = []
        for k, (nm, letter) in enumerate(zip(names, "od" if count == 4 else "p")):
            pre += self.components(b, call.args[k], T, letter, F, nm)
        fields = ["lo", "hi", "left", "right", "leaf", "n", "v", "t"]
        args = [ast.Name(id=f"{b}{SEP}{f}", ctx=ast.Load()) for f in fields]
        for letter in ("od" if count == 4 else "p"):
            args += [ast.Name(id=f"{T}{letter}{d}", ctx=ast.Load()) for d in range(3)]
        value = ast.Call(func=ast.Name(id=f"__tk_{m}_{name}", ctx=ast.Load()), args=args, keywords=[])
        new = ast.Assign(targets=[self.visit(tgt)], value=value)
        ast.copy_location(new, node)
        for n in ast.walk(new):
            if hasattr(n, "lineno") and n is not new:
                ast.copy_location(n, node)
        return pre + [new]


def rewrite(fn, keys):
    """fn with the Bvh and Mesh parameters of `keys` (("bvh" | "mesh", float type) per tree parameter,
    None for the others) made plain, carrying its rewritten tree as __tack_tree__."""
    from ._rewritten_call import rewrite_function

    def fields(k):
        return ["lo", "hi", "left", "right", "leaf", "n"] + (["v", "t"] if k[0] == "mesh" else [])

    return rewrite_function(fn, keys, _Rw, "tack.Bvh or tack.Mesh", fields)
