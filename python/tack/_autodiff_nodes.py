"""The tree builders of the adjoint: Python syntax nodes made at the line of the node they stand for.

Every module of reverse-mode differentiation writes new Python trees -- the adjoint generator
(tack._autodiff), the inliner of @tack.func calls (tack._autodiff_inline), local arrays and
replayed loops (tack._autodiff_local, tack._autodiff_local_vec), collectives
(tack._autodiff_blocks), decompositions (tack._autodiff_decomp), the gather form
(tack._autodiff_gather) and the scalarizing rewrite (tack._autodiff_scalarize) -- and every node
they make must carry the line of the source node it comes from, so that an error the compiler
raises in the adjoint points at the user's line.  These builders do that in one place: each takes
the node whose line the new one gets (or None, where there is none yet) and copies its location.

`SEP`, the middle dot, joins the parts of the names the adjoint makes (``x·grad``, ``t·3``,
``f·2·name``): Python takes it in an identifier and no source spells it, so a made name never
meets a user's (tack._structs_nodes uses the same).

The builders of the arithmetic here do not copy their operands (the generator hands them fresh
nodes); the scalarizing rewrite, which reuses a component's expression in several places, has
its own copying ones.
"""

from __future__ import annotations

import ast
import copy

SEP = "\u00b7"  # a middle dot: an identifier to Python, spelled by no source (as tack._structs_nodes's)


def _loc(new, old):
    """new, at old's line (where old is a node)."""
    if old is not None:
        ast.copy_location(new, old)
    return new


def _nm(id_, node=None, store=False):
    return _loc(ast.Name(id=id_, ctx=ast.Store() if store else ast.Load()), node)


def _assign(name, value, node):
    return _loc(ast.Assign(targets=[_nm(name, node, True)], value=value), node)


def _aug(target, value, node, op=None):
    target = copy.deepcopy(target)
    target.ctx = ast.Store()
    return _loc(ast.AugAssign(target=target, op=op or ast.Add(), value=value), node)


def _bin(a, op, b, node):
    return _loc(ast.BinOp(left=a, op=op, right=b), node)


def _neg(a, node):
    return _loc(ast.UnaryOp(op=ast.USub(), operand=a), node)


def _c(v, node):
    return _loc(ast.Constant(value=v), node)


def _cp(node):
    return copy.deepcopy(node)


def _as_load(node):
    """A copy of node (a name, an element) read rather than assigned."""
    node = copy.deepcopy(node)
    for n in ast.walk(node):
        if hasattr(n, "ctx"):
            n.ctx = ast.Load()
    return node
