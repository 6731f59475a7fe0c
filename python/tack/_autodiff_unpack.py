"""Tuple and chained assignments of a kernel to differentiate, written as single assignments.

The adjoint generator (tack._autodiff) takes one assignment at a time: a local's new value, the
saved old one, the adjoint handed back.  Python's ``x, v = x + dt * v, v - dt * x`` (a symplectic
step, a swap ``a, b = b, a``) and ``a = b = e`` assign several names from values computed
*before* any of them changes, so they are rewritten here, on the kernel's tree and before any
other pass of the generator reads it, into assignments one at a time that compute the same:

- ``n1, ..., nk = e1, ..., ek`` (names on the left, a tuple of as many values on the right)
  becomes ``n1 = e1; ...; nk = ek`` where no value reads a name assigned before it, and
  otherwise ``unpack·1 = e1; ...; unpack·k = ek; n1 = unpack·1; ...``: every value first, as
  Python evaluates them;
- ``n1 = ... = nk = e`` becomes ``n1 = e; ...; nk = e`` where ``e`` reads none of the names
  (an expression of a kernel has no side effect to repeat: atomics and random draws, which
  have, are refused as values), and otherwise ``unpack·1 = e; n1 = unpack·1; ...``.

Each temporary takes the type the IR gives its target (the local it stands for), which is what
the generator asks of a local: whether it is a float, and the type of its adjoint.  The value
the target gets is the same as the forward's: the temporary holds the value as computed, and its
assignment to the target converts it as the forward's assignment does.  Targets other than names
(array elements, nested tuples, starred ones), local arrays' names, and unpacking a call
(``q, r = f(x)``, which the inliner takes) are left as they are.
"""

from __future__ import annotations

import ast

from ._autodiff_nodes import SEP, _assign, _cp, _nm


def unpack(gen, fdef):
    """fdef with its tuple and chained assignments of names written one name at a time."""
    count = [0]

    def temp(target):
        count[0] += 1
        name = f"unpack{SEP}{count[0]}"
        t = gen.local_types.get(target)
        if t is not None:
            gen.local_types[name] = t
        return name

    def reads(e, names):
        return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(e))

    def rewrite(s):
        if not isinstance(s, ast.Assign) or any(
                str(gen.local_types.get(n.id, "")).startswith("array") for t in s.targets for n in ast.walk(t)
                if isinstance(n, ast.Name)):
            return None  # a local array's name given another array: refused where the generator meets it
        if len(s.targets) > 1 and all(isinstance(t, ast.Name) for t in s.targets):  # a = b = e
            names = [t.id for t in s.targets]
            if not reads(s.value, set(names[:-1])):
                return [_assign(n, _cp(s.value), s) for n in names]
            tmp = temp(names[0])
            return [_assign(tmp, _cp(s.value), s)] + [_assign(n, _nm(tmp, s), s) for n in names]
        if len(s.targets) != 1 or not isinstance(s.targets[0], ast.Tuple) or not isinstance(s.value, ast.Tuple):
            return None
        tgts, vals = s.targets[0].elts, s.value.elts
        if len(tgts) != len(vals) or not all(isinstance(t, ast.Name) for t in tgts) or \
                any(isinstance(v, ast.Starred) for v in vals):
            return None
        names = [t.id for t in tgts]
        if not any(reads(v, set(names[:j])) for j, v in enumerate(vals)):
            return [_assign(n, _cp(v), s) for n, v in zip(names, vals)]
        tmps = [temp(n) for n in names]
        return [_assign(t, _cp(v), s) for t, v in zip(tmps, vals)] + \
            [_assign(n, _nm(t, s), s) for n, t in zip(names, tmps)]

    class _Rewrite(ast.NodeTransformer):
        def generic_visit(self, node):
            super().generic_visit(node)
            for field in ("body", "orelse"):
                stmts = getattr(node, field, None)
                if not isinstance(stmts, list):
                    continue
                out = []
                for st in stmts:
                    new = rewrite(st)
                    out.extend(new if new is not None else [st])
                setattr(node, field, out)
            return node

    return _Rewrite().visit(fdef)
