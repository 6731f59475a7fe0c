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

Array elements are targets too (``y[i], z[i] = a, b``) where no value reads an array assigned
before it, so that no temporary is needed (an element's would need the element's type, a vector's
included). Each temporary takes the type the IR gives its target (the local it stands for), which
is what the generator asks of a local: whether it is a float, and the type of its adjoint. The
value the target gets is the same as the forward's: the temporary holds the value as computed, and
its assignment to the target converts it as the forward's assignment does. Other targets (nested
tuples, starred ones, elements needing temporaries), local arrays, and unpacking a call (``q, r =
f(x)``, which the inliner takes) are left as they are.
"""

from __future__ import annotations

import ast

from ._autodiff_nodes import SEP, _assign, _cp, _loc, _nm


def unpack(gen, fdef):
    """fdef (a kernel's tree, or an inlined function's statements in a Module) with its tuple and
    chained assignments written one target at a time."""
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

    def assigned(t):
        """What target t changes: a name, or an array parameter's elements (its name); None for
        a target this pass leaves alone."""
        if isinstance(t, ast.Name):
            return t.id
        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in gen.params:
            return t.value.id
        return None

    def rewrite(s):
        if not isinstance(s, ast.Assign) or any(
                str(gen.local_types.get(n.id, "")).startswith("array") for t in s.targets for n in ast.walk(t)
                if isinstance(n, ast.Name)):
            return None  # a local array's name given another array: refused where the generator meets it
        if len(s.targets) > 1:  # a = b = e
            names = [assigned(t) for t in s.targets]
            if None in names:
                return None
            if not reads(s.value, set(names[:-1])):
                return [_loc(ast.Assign(targets=[_cp(t)], value=_cp(s.value)), s) for t in s.targets]
            if not all(isinstance(t, ast.Name) for t in s.targets):
                return None  # a temporary for an element: its type is not a local's
            tmp = temp(names[0])
            return [_assign(tmp, _cp(s.value), s)] + [_assign(n, _nm(tmp, s), s) for n in names]
        if len(s.targets) != 1 or not isinstance(s.targets[0], ast.Tuple) or not isinstance(s.value, ast.Tuple):
            return None
        tgts, vals = s.targets[0].elts, s.value.elts
        names = [assigned(t) for t in tgts]
        if len(tgts) != len(vals) or None in names or any(isinstance(v, ast.Starred) for v in vals):
            return None
        if not any(reads(v, set(names[:j])) for j, v in enumerate(vals)):
            return [_loc(ast.Assign(targets=[_cp(t)], value=_cp(v)), s) for t, v in zip(tgts, vals)]
        if not all(isinstance(t, ast.Name) for t in tgts):
            return None
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
