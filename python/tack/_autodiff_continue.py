"""An early ``continue`` in a parallel loop of a kernel to differentiate, written as an else branch.

A parallel loop's iteration often starts by skipping the elements it has nothing to do for
(``if not alive[i]: continue``, Warp's early ``return``).  The adjoint generator (tack._autodiff)
walks an iteration's statements backwards, keeping the outcome of each ``if``, and has no jump to
walk back over, so it refused every ``continue``.  Where a branch of an ``if`` directly in the
parallel loop's body ends with ``continue``, the rest of the iteration runs exactly when the
other branch is taken, so the loop computes the same with the rest moved into that branch:

    for i in range(n):                 for i in range(n):
        a = x[i]                           a = x[i]
        if a < 0.0:                        if a < 0.0:
            y[i] = 0.0          ->             y[i] = 0.0
            continue                       else:
        y[i] = sqrt(a)                         y[i] = sqrt(a)

This pass does that on the kernel's tree before the generator reads it, again inside the branch
that received the rest (a second early ``continue``, an ``elif`` that continues too), and drops
what follows a ``continue`` standing alone in the body or a branch (it never runs).  The rest
moves into one branch, so nothing is copied.  A ``continue`` anywhere else -- of a serial loop,
or inside an ``if`` but not its branch's last statement -- is left for the generator to refuse
at its line, as before.
"""

from __future__ import annotations

import ast

from ._autodiff_nodes import _loc


def _continues(stmts):
    """Whether a continue of the enclosing loop is among stmts (not one of a loop inside them)."""
    for st in stmts:
        for n in _walk_outside_loops(st):
            if isinstance(n, ast.Continue):
                return True
    return False


def _walk_outside_loops(node):
    yield node
    if isinstance(node, (ast.For, ast.While)):
        return
    for child in ast.iter_child_nodes(node):
        yield from _walk_outside_loops(child)


def _unfold(stmts):
    """stmts (an iteration, or the part of it after an if) with each early continue made an else."""
    out = []
    for k, st in enumerate(stmts):
        if isinstance(st, ast.Continue):
            return out  # the rest of the iteration never runs
        if isinstance(st, ast.If) and _continues([st]):
            rest = stmts[k + 1:]
            ends_body = bool(st.body) and isinstance(st.body[-1], ast.Continue)
            ends_else = bool(st.orelse) and isinstance(st.orelse[-1], ast.Continue)
            if ends_body and not _continues(st.body[:-1]):  # the else branch's own continues: unfolded with it
                out.append(_loc(ast.If(test=st.test, body=st.body[:-1] or [_loc(ast.Pass(), st)],
                                       orelse=_unfold(st.orelse + rest)), st))
                return out
            if ends_else and not _continues(st.orelse[:-1]):
                out.append(_loc(ast.If(test=st.test, body=_unfold(st.body + rest) or [_loc(ast.Pass(), st)],
                                       orelse=st.orelse[:-1]), st))
                return out
        out.append(st)
    return out


def unfold(fdef):
    """fdef with the early continues of its parallel loops (its top-level for loops) made else branches."""
    for st in fdef.body:
        if isinstance(st, ast.For) and _continues(st.body):
            st.body = _unfold(st.body) or [_loc(ast.Pass(), st)]
    return fdef
