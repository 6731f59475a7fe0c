"""@tack.func calls in adjoints: inlined, their parameters and locals renamed per call.

An adjoint differentiates one iteration of a parallel loop as straight-line statements it can
walk backwards, and a @tack.func call is differentiated the same way: its body is written into
the iteration at the call, its parameters assigned from the arguments (an array argument, a
kernel parameter or a local array, is passed by reference: its name stands for the parameter),
its locals renamed ``f·N·name`` so that two calls, or a call and the caller, never share one,
and its return value is what the call's expression stands for.  The generator then takes the
inlined statements as its own (tack._autodiff): they are recomputed in the forward sweep and
walked back in the reverse sweep, so a function needs no adjoint of its own.

The scalarizing rewrite (tack._autodiff_scalarize) inlines a function on vectors the same way
before the generator sees the kernel, since its vector locals need the rewrite too: both take
the function's parts (`func_parts`: its tree without the docstring and the final return, what
it assigns, what its free names mean) and rename its nodes (`relocator`) here.  What cannot be
inlined is refused at the call: a function on structs or called with keywords, calls nested
more than 16 deep, and a return before the end (the straight-line form has no early exit).

A name the function reads from its module or closure (a constant, another function, tack)
becomes one of the adjoint's injected names (``ad·f·name``), so it means in the adjoint what it
meant in the function, whatever the kernel's module calls it.
"""

from __future__ import annotations

import ast
import builtins as _builtins
import copy

from . import _autodiff_local as _local
from . import _autodiff_unpack as _unpack
from ._autodiff_nodes import SEP, _loc


def namespace(fn):
    """What fn's free names mean: the builtins, its module's globals, its closure's cells."""
    env = dict(_builtins.__dict__)
    env.update(fn.__globals__)
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            env[name] = cell.cell_contents
        except ValueError:
            pass
    return env


def func_parts(gen, call, fobj):
    """(fn, its FunctionDef, parameter names, body without the docstring and the final return, the
    returned expression or None, the names it assigns, what its free names mean) of a @tack.func call an adjoint inlines, refusing what it cannot
    inline (gen.error at the call): structs, keywords, nesting past 16, a return before the end.
    Shared by the adjoint's inliner and the scalarizing rewrite (tack._autodiff_scalarize)."""
    from ._structs_rewrite import _parse

    fn = fobj.__wrapped__
    if getattr(fn, "__tack_tree__", None) is not None or call.keywords:
        raise gen.error(f"{fn.__name__}(): a @tack.func on structs, or called with keywords, is not "
                        f"differentiated yet", call)
    gen.depth = getattr(gen, "depth", 0) + 1
    if gen.depth > 16:
        raise gen.error(f"{fn.__name__}(): @tack.func calls nested more than 16 deep", call)
    fdef, _base = _parse(fn)
    params = [a.arg for a in fdef.args.args]
    if len(params) != len(call.args) or fdef.args.vararg or fdef.args.kwonlyargs:
        raise gen.error(f"{fn.__name__}() takes {len(params)} positional parameters here", call)
    body = [st for st in fdef.body if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant))]
    ret = None
    if body and isinstance(body[-1], ast.Return):
        ret = body[-1].value
        body = body[:-1]
    for st in body:
        for n in ast.walk(st):
            if isinstance(n, (ast.Return, ast.Yield, ast.Global, ast.Nonlocal)):
                if (getattr(fn, "__module__", None) or "").startswith("tack."):  # behind a mesh's or bvh's query
                    raise gen.error(f"{fn.__name__}() is Tack's own function behind a spatial query (such as "
                                    f"mesh.closest_point() or mesh.ray_closest()), which is not differentiated "
                                    f"yet: run the query in a kernel of its own and pass what it finds as "
                                    f"arrays", call)
                raise gen.error(f"{fn.__name__}(): a return before the end of a @tack.func is not "
                                f"differentiated yet (assign the result and return it once, at the end)", call)
    locals_ = set(params)
    for n in ast.walk(fdef):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            locals_.add(n.id)
    return fn, fdef, params, body, ret, locals_, namespace(fn)


def relocator(gen, fn, rename, env, call):
    """A copy of an inlined @tack.func's node, its names renamed (`rename`: parameters and locals to
    the caller's), the globals it reads (`env`) made the adjoint's own names, at the call's line."""

    class Rn(ast.NodeTransformer):
        def visit_Name(self, n):
            if n.id in rename:
                return _loc(ast.Name(id=rename[n.id], ctx=n.ctx), n)
            if n.id in env and not isinstance(n.ctx, ast.Store):
                return _loc(ast.Name(id=gen.use(env[n.id], f"{fn.__name__}{SEP}{n.id}"), ctx=n.ctx), n)
            return n

    def relocated(node):
        node = Rn().visit(copy.deepcopy(node))
        for n in ast.walk(node):
            if hasattr(n, "lineno"):
                ast.copy_location(n, call)
        return node

    return relocated


def inline(gen, call, fobj, fwd, acts):
    """The call's body as statements of the iteration (its parameters and locals renamed
    f·N·name); the simple node of its return value (a list of them for ``return a, b``), or None."""
    from ._autodiff import _FLOATS

    fn, fdef, params, body, ret, locals_, env = func_parts(gen, call, fobj)
    tag = gen.fresh(fn.__name__)
    types = gen.func_types.get(fn.__name__, {})
    rename, assign = {}, []
    for p, a in zip(params, call.args):
        if isinstance(a, ast.Name) and (a.id in gen.params and gen.params[a.id][0] in ("farray", "array", "bad")
                                        or _local.kind(gen, a.id) is not None):
            rename[p] = a.id  # an array: the kernel's own parameter, or a local array (by reference)
            continue
        rename[p] = f"{tag}{SEP}{p}"
        assign.append((rename[p], a))
    for name in locals_ - set(params):
        rename[name] = f"{tag}{SEP}{name}"
    for name in locals_:
        if rename.get(name, "").startswith(tag):
            ts = types.get(name, set())
            floats = ts & set(_FLOATS)
            if floats and ts - set(_FLOATS):
                raise gen.error(f"{fn.__name__}(): its local '{name}' is {sorted(ts)} in different calls: "
                                f"not differentiated yet", call)
            if ts:
                gen.local_types[rename[name]] = "f64" if len(floats) > 1 else sorted(ts)[0]
    relocated = relocator(gen, fn, rename, env, call)

    inl_assigned = set()
    for name, a in assign:
        gen.local(name, a, fwd, acts, inl_assigned, call)
    rbody = [relocated(st) for st in body]
    rbody = _unpack.unpack(gen, ast.Module(body=rbody, type_ignores=[])).body  # a, b = b, a in the function
    rret = relocated(ret) if ret is not None else None
    outer = gen.par_body  # a serial loop of the function: what is read outside it is the function's
    gen.par_body = rbody + ([_loc(ast.Expr(value=rret), call)] if rret is not None else [])
    for st in rbody:
        gen.stmt(st, fwd, acts, inl_assigned)
    gen.par_body = outer
    if isinstance(rret, ast.Tuple):  # return a, b: each value's node, the caller unpacking them
        out = [gen.flat(e, fwd, acts) for e in rret.elts]
    else:
        out = gen.flat(rret, fwd, acts) if rret is not None else None
    gen.depth -= 1
    return out
