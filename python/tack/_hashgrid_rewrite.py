"""The HashGrid rewrite: a kernel's tree with its grid parameters made plain.

tack._hashgrid says what the grid is; this module turns a kernel taking one
into an ordinary kernel, on the tree of the kernel's own source, before the
front end (or debug mode) reads it -- the way tack._structs_rewrite
scalarizes structs, and through the same exit (``__tack_tree__``, the
original function's lines).  A grid parameter ``g`` of a D-dimensional grid
becomes the parameters ``g·perm``, ``g·start``, ``g·end`` (its arrays),
``g·o0`` ... (its origin), ``g·inv`` (the inverse of its cell width) and
``g·n0`` ... (its cells along each axis), and the loop

    for j in g.neighbors(p, r):
        BODY

becomes, with names of its own for every temporary, the range of cells the
ball touches along each axis (in f64, clamped to the grid, widened by a
millionth of a cell so that rounding never loses a cell, and empty for a
NaN point or a negative radius), then the nest

    for c2 in range(l2, h2 + 1):
        for c1 in range(l1, h1 + 1):
            for c0 in range(l0, h0 + 1):
                cell = (c2 * g·n1 + c1) * g·n0 + c0
                for k in range(g·start[cell], g·end[cell]):
                    j = g·perm[k]
                    BODY

so every backend runs the same serial loops it runs for any kernel.  A
periodic grid (``box=``) becomes ``g·i0`` ... (an inverse width per axis)
instead of the origin and one width, and its ranges of cells are not clamped
but wrapped (cell ``c % n`` along each axis, all n cells once when the ball
spans them), so the same nest visits the cells across the box's faces.  What
the rewrite cannot keep the meaning of it refuses, naming the line: a
``break`` in the body (it would leave one cell's run, not the query), an
``else:`` on the loop, the loop at the top level of a kernel (it would
become a parallel loop), and any other use of the grid in the kernel.
"""

import ast
import math

import numpy as np

from ._core import f32, f64

from ._rewritten_call import QueryRewriter
from ._structs_nodes import SEP

_TEMPLATE = {
    2: """
{T}r = {F}({R}) * {G}inv
{AXES}
for {T}c1 in range({T}x1, {T}y1 + 1):
    for {T}c0 in range({T}x0, {T}y0 + 1):
        {T}cell = {T}c1 * {G}n0 + {T}c0
        for {T}k in range({G}start[{T}cell], {G}end[{T}cell]):
            {J} = {G}perm[{T}k]
            __tk_BODY
""",
    3: """
{T}r = {F}({R}) * {G}inv
{AXES}
for {T}c2 in range({T}x2, {T}y2 + 1):
    for {T}c1 in range({T}x1, {T}y1 + 1):
        for {T}c0 in range({T}x0, {T}y0 + 1):
            {T}cell = ({T}c2 * {G}n1 + {T}c1) * {G}n0 + {T}c0
            for {T}k in range({G}start[{T}cell], {G}end[{T}cell]):
                {J} = {G}perm[{T}k]
                __tk_BODY
""",
}

# A periodic grid (HashGrid(..., box=L)): each axis's range of cells is not clamped but wrapped,
# cell c along d being c % n_d, and the ball's radius is in cells of that axis's own width.
_TEMPLATE_PERIODIC = {
    2: """
{T}r = {F}({R})
{AXES}
for {T}c1 in range({T}x1, {T}y1 + 1):
    {T}w1 = {T}c1 % {G}n1
    for {T}c0 in range({T}x0, {T}y0 + 1):
        {T}cell = {T}w1 * {G}n0 + {T}c0 % {G}n0
        for {T}k in range({G}start[{T}cell], {G}end[{T}cell]):
            {J} = {G}perm[{T}k]
            __tk_BODY
""",
    3: """
{T}r = {F}({R})
{AXES}
for {T}c2 in range({T}x2, {T}y2 + 1):
    {T}w2 = {T}c2 % {G}n2
    for {T}c1 in range({T}x1, {T}y1 + 1):
        {T}w1 = {T}c1 % {G}n1
        for {T}c0 in range({T}x0, {T}y0 + 1):
            {T}cell = ({T}w2 * {G}n1 + {T}w1) * {G}n0 + {T}c0 % {G}n0
            for {T}k in range({G}start[{T}cell], {G}end[{T}cell]):
                {J} = {G}perm[{T}k]
                __tk_BODY
""",
}

# the cells [x, y] of a periodic axis d, unwrapped: the point wrapped into [0, n) cells first, the
# range widened as the clamped one is; every cell once (x = 0, y = n - 1) when the widened ball
# spans n cells or more, so no cell is visited twice; empty for a NaN or infinite point or a NaN
# or negative radius.  Every conversion to an integer is of a float within 2 n of the box.
_AXIS_PERIODIC = """
{T}s{d} = {T}r * {G}i{d}
{T}a{d} = {F}({P}) * {G}i{d}
{T}a{d} = {T}a{d} - {F}({G}n{d}) * {FL}({T}a{d} / {F}({G}n{d}))
{T}e{d} = {T}s{d} + (abs({T}a{d}) + {T}s{d} + 1.0) * {EPS}
{T}l{d} = {FL}({T}a{d} - {T}e{d})
{T}h{d} = {FL}({T}a{d} + {T}e{d})
{T}x{d} = {I}(1)
{T}y{d} = {I}(0)
if {T}l{d} <= {T}h{d} and {T}s{d} >= 0.0:
    if {T}h{d} - {T}l{d} + 1.0 >= {F}({G}n{d}):
        {T}x{d} = {I}(0)
        {T}y{d} = {G}n{d} - 1
    else:
        {T}x{d} = {I}({T}l{d})
        {T}y{d} = {I}({T}h{d})
"""

# the cells [x, y] the ball touches along axis d, widened by a few rounding errors of the
# grid's float type (EPS), empty (x > y) for a NaN point or a NaN or negative radius; every
# conversion to an integer is of a float already known to lie in [0, n)
_AXIS = """
{T}a{d} = ({F}({P}) - {G}o{d}) * {G}inv
{T}e{d} = {T}r + (abs({T}a{d}) + {T}r + 1.0) * {EPS}
{T}l{d} = {FL}({T}a{d} - {T}e{d})
{T}h{d} = {FL}({T}a{d} + {T}e{d})
{T}x{d} = {I}(1)
{T}y{d} = {I}(0)
if {T}l{d} <= {T}h{d} and {T}r >= 0.0 and {T}h{d} >= 0.0 and {T}l{d} < {F}({G}n{d}):
    {T}x{d} = {I}(0)
    if {T}l{d} > 0.0:
        {T}x{d} = {I}({T}l{d})
    {T}y{d} = {G}n{d} - 1
    if {T}h{d} < {F}({T}y{d}):
        {T}y{d} = {I}({T}h{d})
"""


class _Rw(QueryRewriter):
    def __init__(self, fn, base, grids):
        from ._core import i64

        super().__init__(fn, base)
        self.grids = grids  # parameter name -> (dimension, float type, periodic)
        self.inject = {"__tk_i64": i64, "__tk_floor": math.floor}

    def grid_of(self, node):
        """The grid parameter `node` is `g.neighbors(...)` of, or None."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name) and node.func.value.id in self.grids:
            if node.func.attr != "neighbors":
                raise self.error(f"a tack.HashGrid in a kernel has only grid.neighbors(p, radius), not "
                                 f"'{node.func.attr}'", node)
            return node.func.value.id
        return None

    def visit_Name(self, node):
        if node.id in self.grids:
            raise self.error(f"'{node.id}' is a tack.HashGrid: a kernel uses it only as "
                             f"'for j in {node.id}.neighbors(p, radius):'", node)
        return node

    def visit_For(self, node):
        g = self.grid_of(node.iter)
        if g is None:
            return self.nested(node)
        return self.neighbors(node, g)

    def neighbors(self, node, g):
        call = node.iter
        dim, ft, periodic = self.grids[g]
        F = f"__tk_{np.dtype(ft).name}"
        self.inject[F] = {"float32": f32, "float64": f64}[np.dtype(ft).name]
        eps = "1e-5" if np.dtype(ft).itemsize == 4 else "1e-12"
        self.check_query(node, f"{g}.neighbors", f"{g}.neighbors takes two arguments, a point and a radius: "
                         f"{g}.neighbors(p, radius)", "the neighbour's index")
        for b in _own(node.body):
            if isinstance(b, ast.Break):
                raise self.error(f"'break' in 'for ... in {g}.neighbors(...)' would leave one cell's "
                                 f"points, not the query: keep a flag and 'continue' instead", b)
        p, r = call.args
        if isinstance(p, ast.Tuple) and len(p.elts) != dim:
            raise self.error(f"'{g}' is a {dim}-D grid: the point has {dim} coordinates, got "
                             f"{len(p.elts)}", p)
        self.count += 1
        T = f"{g}{SEP}q{self.count}{SEP}"
        G = f"{g}{SEP}"
        pre = []
        if isinstance(p, ast.Tuple):
            comps = [self.visit(e) for e in p.elts]
        else:
            pre.append(ast.copy_location(ast.Assign(targets=[ast.Name(id=T + "p", ctx=ast.Store())],
                                                    value=self.visit(p)), p))
            comps = [ast.copy_location(ast.Attribute(value=ast.Name(id=T + "p", ctx=ast.Load()), attr=a,
                                                     ctx=ast.Load()), p) for a in "xyz"[:dim]]
        r = self.visit(r)
        body = self.query_body(node.body)
        axis = _AXIS_PERIODIC if periodic else _AXIS
        axes = "".join(axis.format(T=T, G=G, F=F, I="__tk_i64", FL="__tk_floor", P=f"__tk_P{d}", d=d,
                                   EPS=f"{F}({eps})") for d in range(dim))
        src = (_TEMPLATE_PERIODIC if periodic else _TEMPLATE)[dim].format(T=T, G=G, F=F, R="__tk_R",
                                                                          J=node.target.id, AXES=axes)
        stmts = ast.parse(src).body
        subst = {"__tk_R": r}
        subst.update({f"__tk_P{d}": c for d, c in enumerate(comps)})
        out = pre + [_Place(subst, body, node).visit(s) for s in stmts]
        return out


class _Place(ast.NodeTransformer):
    """Puts the user's expressions and body into the template, and the loop's line on its own nodes."""

    def __init__(self, subst, body, at):
        self.subst, self.body, self.at = subst, body, at

    def visit_Name(self, node):
        if node.id in self.subst:
            return self.subst[node.id]
        return ast.copy_location(node, self.at)

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Name) and node.value.id == "__tk_BODY":
            return self.body
        return self.generic_visit(node)

    def generic_visit(self, node):
        if hasattr(node, "lineno") and node not in self.body:
            ast.copy_location(node, self.at)
            node.end_lineno, node.end_col_offset = self.at.end_lineno, self.at.end_col_offset
        return super().generic_visit(node)


def _own(body):
    """The statements of a loop body, not inside a nested loop."""
    todo = list(body)
    while todo:
        s = todo.pop()
        yield s
        if isinstance(s, (ast.For, ast.While, ast.FunctionDef)):
            continue
        for f in ("body", "orelse", "finalbody"):
            todo.extend(getattr(s, f, []) or [])
        for h in getattr(s, "handlers", []) or []:
            todo.extend(h.body)


def rewrite(fn, dims):
    """fn with the grid parameters of `dims` ((dimension, float type, periodic) per grid parameter, None
    for the others) made plain, carrying its rewritten tree as __tack_tree__."""
    from ._rewritten_call import rewrite_function

    def fields(gd):
        d, _ft, periodic = gd
        if periodic:  # an inverse width per axis, no origin (tack._hashgrid.HashGrid._args)
            return ["perm", "start", "end"] + [f"i{k}" for k in range(d)] + [f"n{k}" for k in range(d)]
        return ["perm", "start", "end"] + [f"o{k}" for k in range(d)] + ["inv"] + [f"n{k}" for k in range(d)]

    return rewrite_function(fn, dims, _Rw, "tack.HashGrid", fields)
