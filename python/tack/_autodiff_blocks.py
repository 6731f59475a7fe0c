"""The adjoints of the block and warp collectives: block_sum, block_min, block_max, block_scan,
warp_sum, warp_min and warp_max.

A collective `r = tack.block_sum(v)` gives every thread of a block a value made from every
thread's `v`, so its adjoint moves seeds between threads: thread u's `v` reaches every thread's
`r`, and its adjoint is the sum of their seeds -- a block sum again.  The adjoint generator
(tack._autodiff) writes one iteration's adjoint, a thread's; the other threads' seeds reach it
only through a collective of the reverse sweep, which is legal where the forward's was: the
reverse sweep takes the statements backwards inside the same branches and loops, so every
thread of the block that reached the forward's collective reaches its adjoint's.  Per call:

- `r = block_sum(v)` (`warp_sum`, over the sub-group): dv = block_sum(dr);
- `r = block_scan(v)`, the inclusive prefix sum over threads 0 .. t: thread u's `v` is in the
  `r` of threads u and above, so dv = block_sum(dr) - block_scan(dr) + dr;
- `r = block_min(v)` (`block_max`, `warp_min`, `warp_max`): the seeds go to the threads whose
  `v` is the result, shared equally among ties (PyTorch's `amax` does the same):
  dv = block_sum(dr) / block_sum(1 if v == r else 0) where v == r, else 0.

The forward sweep recomputes the collective as the kernel did (the generator's single-assignment
temporary `t·N = tack.block_sum(a)` is the form a collective must have).  The reverse sweep's
collectives are written with the forward call's own function node (`tack.block_sum`), so debug
mode, which recognizes a collective by its name, runs them as collectives.  `shuffle` and
`shuffle_down` stay refused: their adjoint sends a seed back to the lane it came from, which
no collective does (several lanes may read one).
"""

from __future__ import annotations

import ast
import copy

from ._autodiff_nodes import _loc, _nm

SUMS = {"block_sum": "block_sum", "warp_sum": "warp_sum", "block_scan": "block_sum",
        "block_min": "block_sum", "block_max": "block_sum", "warp_min": "warp_sum", "warp_max": "warp_sum"}


def _func(func, name, node):
    """The function node of collective `name`, spelled as the forward's call spells its own
    (`tack.block_sum` -> `tack.warp_sum`), so both the compiler and debug mode see a collective."""
    f = copy.deepcopy(func)
    if isinstance(f, ast.Attribute):
        f.attr = name
    else:
        f.id = name
    for n in ast.walk(f):
        ast.copy_location(n, node)
    return f


def flat(gen, e, name, fwd, acts):
    """The forward sweep of collective call e: its argument flattened, `t·N = call(arg)`."""
    if len(e.args) != 1:
        raise gen.error(f"{name}() takes one value", e)
    a = gen.flat(e.args[0], fwd, acts)
    gen.plain_only = True  # no gather form: it would recompute a neighbour's values, collectives among them
    t = gen.fresh("t")
    gen.temps.add(t)
    call = _loc(ast.Call(func=copy.deepcopy(e.func), args=[copy.deepcopy(a)], keywords=[]), e)
    fwd.append(_loc(ast.Assign(targets=[_nm(t, e, True)], value=call), e))
    acts.append(("collective", t, name, a, e))
    return _nm(t, e)


def reverse(gen, act, out):
    """The reverse sweep of a "collective" act into out: its collectives, then the argument's adjoint."""
    _, t, name, a, node = act
    g = gen.tmp_adj.get(t)
    if g is None or not gen.active(a):  # a static choice: the same in every thread, so none reaches a collective
        return
    func = node.func

    def coll(kind, arg):
        h = gen.fresh("h")
        call = _loc(ast.Call(func=_func(func, kind, node), args=[arg], keywords=[]), node)
        out.append(_loc(ast.Assign(targets=[_nm(h, node, True)], value=call), node))
        return _nm(h, node)

    total = coll(SUMS[name], _nm(g, node))
    if name in ("block_sum", "warp_sum"):
        gen.give(a, total, out, node)
        return
    if name == "block_scan":
        scan = coll("block_scan", _nm(g, node))
        grad = ast.BinOp(left=ast.BinOp(left=total, op=ast.Sub(), right=scan), op=ast.Add(), right=_nm(g, node))
        gen.give(a, _fix(grad, node), out, node)
        return
    won = _fix(ast.Compare(left=copy.deepcopy(a), ops=[ast.Eq()], comparators=[_nm(t, node)]), node)
    ties = coll(SUMS[name], _fix(ast.IfExp(test=won, body=ast.Constant(1.0), orelse=ast.Constant(0.0)), node))
    share = ast.IfExp(test=copy.deepcopy(won), body=ast.BinOp(left=total, op=ast.Div(), right=ties),
                      orelse=ast.Constant(0.0))
    gen.give(a, _fix(share, node), out, node)


def _fix(tree, node):
    for n in ast.walk(tree):
        if isinstance(n, (ast.expr, ast.stmt)):
            ast.copy_location(n, node)
    return tree
