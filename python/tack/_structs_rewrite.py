"""The struct rewrite: a kernel or @tack.func's tree with its structs scalarized.

tack._structs says what a struct is and why it never reaches the compiler;
this module does the rewriting, on the tree of the function's own source.
It knows which parameters are struct arrays and struct values (the call's
struct signature) and follows struct-ness through the body: ``p[i]`` of a
struct array is an element (a record in memory), ``q`` assigned a struct is
a struct local (one local per leaf, ``q.mass``), ``Particle(...)`` a value
built from its arguments, a @tack.func call taking or returning structs a
call of the func's own struct build.  Each use becomes what the compiler
already reads:

    p[i].mass               p.mass[i]
    p[i].vel.x += f         p.vel[i, 0] += f
    p[i].vel                tack.vec3(p.vel[i, 0], p.vel[i, 1], p.vel[i, 2])
    p[i].vel = v            t = v; p.vel[i, 0] = t[0]; ... (a temporary: v is evaluated once)
    q = p[i]                q.pos: vec3 = ...; q.mass: f32 = p.mass[i]; ...
    p[i] = q                p.pos[i, 0] = q.pos[0]; ...; p.mass[i] = q.mass
    q.mass                  the local `q.mass`
    f(q)                    f'(q.pos, q.mass, ...)  (f' returns a struct as the tuple of its leaves)
    atomic_add(p, i, "mass", v)     atomic_add(p.mass, i, v)

Everything else about a struct is refused with a CompileError at its line:
``==`` and arithmetic on whole structs, an unknown field (naming the struct
and its fields), a struct array used other than by element, ``.shape`` or
``len``, a slice of a struct array.  Every node made keeps the line and
column of the node it replaces.

The rewrite is three modules.  This one holds the rewriter (``_Rw``) with its expression
half -- what a struct-related expression is, its leaves' values, constructors, func calls --
and the entry points (``_rewrite_function``, ``build_func``, ``_parse``, ``_make``);
tack._structs_stmts holds its statement half (assignments, stores, the walk over a body), a
base class of ``_Rw``; tack._structs_nodes the vocabulary both use (the leaf names' separator,
the tree builders, the descriptors of an expression).
"""

import ast
import copy
import types
import weakref

from . import _core
from ._structs_nodes import SEP, _sep, _R, _loc, _name, _const, _index, _elts, _ArrSrc, _Rel
from ._structs_stmts import _Statements


_FUNC_BUILDS = weakref.WeakKeyDictionary()


class _Rw(_Statements):
    def __init__(self, fn, fdef, base, is_kernel):
        from . import _intrinsics, _structs

        self.fn, self.base, self.is_kernel = fn, base, is_kernel
        self.S = _structs
        self.arrays = {}     # struct array parameter -> (layout, ndim)
        self.values = {}     # struct local (or value parameter) -> layout
        self.declared = set()
        self.inject = {}     # closure name -> object
        self.by_id = {}
        self.ntemp = 0
        self.returns = None  # the layout a func returns
        self.returns_plain = False
        self.pre = []
        self.conditional = 0  # inside a part of an expression or a loop test that may run other than once
        self.fdef = fdef
        self.atomics = {getattr(_intrinsics, "atomic_" + a, None) for a in
                        ("add", "sub", "min", "max", "exch", "and", "or", "xor", "cas")} - {None}
        self.env = dict(fn.__globals__)
        b = fn.__globals__.get("__builtins__", __builtins__)
        self.builtins = b if isinstance(b, dict) else vars(b)
        if fn.__closure__:
            for n, c in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.env[n] = c.cell_contents
                except ValueError:
                    pass

    # ----------------------------------------------------------- helpers
    def error(self, msg, node):
        return self.S._compile_error(msg, node, self.fn, self.base)

    def use(self, obj, hint):
        key = id(obj)
        if key not in self.by_id:
            name = f"__tk_{hint}_{len(self.inject)}"
            self.inject[name] = obj
            self.by_id[key] = name
        return self.by_id[key]

    def obj_name(self, obj, node, hint):
        return _name(self.use(obj, hint), node)

    def dtype_node(self, dt, node):
        return self.obj_name(dt, node, dt.name)

    def compose(self, dt, comps, node):
        """The value of dtype dt built from its components in storage order.  A transform's seven
        are its position and its rotation, which its constructor takes as a vec3 and a quat
        (tack.transform(p, q)), not as seven numbers."""
        from . import transform, transformd, vec3, vec3d, quat, quatd

        if dt is transform or dt is transformd:
            v, q = (vec3, quat) if dt is transform else (vec3d, quatd)
            comps = [_loc(ast.Call(func=self.dtype_node(v, node), args=comps[:3], keywords=[]), node),
                     _loc(ast.Call(func=self.dtype_node(q, node), args=comps[3:], keywords=[]), node)]
        return _loc(ast.Call(func=self.dtype_node(dt, node), args=comps, keywords=[]), node)

    def temp(self):
        self.ntemp += 1
        return f"__tk_t{self.ntemp}"

    def resolve(self, node):
        """The object a Name or attribute chain names outside the function, or None."""
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return self.env[node.id]
            return self.builtins.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if isinstance(base, (types.ModuleType, type)):
                return getattr(base, node.attr, None)
        return None

    def once(self, idx):
        """An element index, evaluated once however many fields it reaches: one with a call in it (an
        atomic, a func) goes to a temporary first."""
        new = self.expr(idx)
        if not any(isinstance(n, ast.Call) for n in ast.walk(idx)):
            return new
        if self.conditional:
            raise self.error("this struct element's index calls a function where the call may run other "
                             "than once (a loop's test, one side of 'if'-'else', 'and' or 'or'): compute "
                             "the index into a variable first", idx)
        t = self.temp()
        self.pre.append(_loc(ast.Assign(targets=[_name(t, idx, ast.Store())], value=new), idx))
        return _name(t, idx)

    def struct_class(self, node):
        obj = self.resolve(node)
        return obj if isinstance(obj, type) and getattr(obj, "__tack_struct__", None) is not None else None

    def view(self, arr, leaf):
        return f"{arr}{SEP}{_sep(leaf.name)}"

    # --------------------------------------------------------------- refs
    def ref(self, node):
        """What `node` is, when it is a struct, a struct array or part of one; else None."""
        if isinstance(node, ast.Name):
            if node.id in self.arrays:
                lay, nd = self.arrays[node.id]
                return _R("arr", name=node.id, lay=lay, ndim=nd, node=node)
            if node.id in self.values:
                return _R("val", name=node.id, lay=self.values[node.id], path=(), node=node)
            return None
        if isinstance(node, ast.Subscript):
            r = self.ref(node.value)
            if r is None:
                return None
            idx = _elts(node.slice)
            if r.kind == "arr":
                if any(isinstance(x, ast.Slice) for x in idx):
                    raise self.error(f"'{r.name}' is an array of {r.lay.name}: index it by element "
                                     f"({r.name}[i]); slices of struct arrays are not kernel values", node)
                if len(idx) != r.ndim:
                    raise self.error(f"'{r.name}' is a {r.ndim}-dimensional array of {r.lay.name}: an element "
                                     f"takes {r.ndim} indices, not {len(idx)}", node)
                return _R("elem", name=r.name, lay=r.lay, idx=[self.once(x) for x in idx], path=(), node=node)
            if r.kind == "eleaf":
                need = len(r.leaf.comp_shape())
                if len(r.sub) + len(idx) > need:
                    raise self.error(f"field '{r.leaf.name}' of {r.lay.name} takes at most {need} indices", node)
                r.sub = r.sub + [self.expr(x) for x in idx]
                r.node = node
                return r
            if r.kind in ("elem", "val", "ctor", "fcall"):
                raise self.error(f"a {self.layout_at(r).name} struct is not indexed: name a field", node)
            return None
        if isinstance(node, ast.Attribute):
            r = self.ref(node.value)
            if r is None:
                return None
            if r.kind == "arr":
                if node.attr == "shape":
                    return None
                raise self.error(f"'{r.name}' is an array of {r.lay.name}: read its fields by element "
                                 f"({r.name}[i].{node.attr}); the array itself has .shape", node)
            if r.kind in ("ctor", "fcall"):
                r = self.materialize(r, node)
            if r.kind in ("elem", "val"):
                lay = self.layout_at(r)
                f = lay.fields.get(node.attr)
                if f is None:
                    raise self.error(f"struct {lay.name} has no field '{node.attr}' (its fields: "
                                     f"{', '.join(lay.fields)})", node)
                path = r.path + (node.attr,)
                if f.kind == "struct":
                    return _R(r.kind, name=r.name, lay=r.lay, idx=r.idx, path=path, node=node)
                leaf = next(lf for lf in r.lay.leaves if lf.path == path)
                if r.kind == "elem":
                    return _R("eleaf", name=r.name, lay=r.lay, idx=r.idx, leaf=leaf, sub=[], node=node)
                return _R("vleaf", name=r.name, lay=r.lay, leaf=leaf, node=node)
            if r.kind == "eleaf":
                leaf, comp = r.leaf, r.leaf.comp_shape()
                k = len(r.sub)
                if k == len(leaf.ashape) and leaf.dt.kind == "c" and node.attr in ("real", "imag"):
                    r.sub = r.sub + [_const(0 if node.attr == "real" else 1, node)]
                elif (k == len(leaf.ashape) and len(comp) - k == 1 and leaf.dt.kind != "c"
                      and node.attr in "xyzw" and len(node.attr) == 1 and "xyzw".index(node.attr) < comp[-1]):
                    r.sub = r.sub + [_const("xyzw".index(node.attr), node)]
                else:
                    return None  # a method or attribute of the loaded value (v.conjugate): expr loads it
                r.node = node
                return r
            return None
        if isinstance(node, ast.Call):
            cls = self.struct_class(node.func)
            if cls is not None:
                return _R("ctor", lay=cls.__tack_struct__, node=node)
            fobj = self.resolve(node.func)
            if isinstance(fobj, _core.Kernel) and fobj.is_func and self.struct_args(node):
                gname, lay = self.func_call(fobj, node)
                if lay is not None:
                    return _R("fcall", lay=lay, node=node, name=gname)
            return None
        return None

    def layout_at(self, r):
        return r.lay.at(r.path) if r.path else r.lay

    def struct_args(self, call):
        return any(self.ref_quiet(a) for a in call.args) or any(self.ref_quiet(k.value) for k in call.keywords)

    def ref_quiet(self, node):
        if isinstance(node, ast.Name):
            return node.id in self.arrays or node.id in self.values
        if isinstance(node, ast.Call):
            return self.struct_class(node.func) is not None or (
                isinstance(self.resolve(node.func), _core.Kernel) and self.struct_args(node))
        if isinstance(node, (ast.Subscript, ast.Attribute)):
            return self.ref_quiet(node.value)
        return False

    # ------------------------------------------------------- leaf values
    def load_leaf(self, arr, leaf, idx, sub, node):
        """The value of a leaf (or of its component) of element idx of struct array arr."""
        comp = leaf.comp_shape()
        view = _name(self.view(arr, leaf), node)
        if len(sub) == len(comp):
            return _loc(ast.Subscript(value=view, slice=_index(idx + sub, node), ctx=ast.Load()), node)
        if len(sub) < len(leaf.ashape):
            raise self.error(f"field '{leaf.name}' is an array field: read its elements by index "
                             f"([{', '.join('k' * 1 for _ in leaf.ashape)}])", node)
        rest = comp[len(sub):]
        if leaf.dt.kind == "c":
            parts = [self.load_leaf(arr, leaf, idx, sub + [_const(k, node)], node) for k in (0, 1)]
            return _loc(ast.Call(func=self.obj_name(complex, node, "complex"), args=parts, keywords=[]), node)
        if len(rest) == 1 and len(sub) > len(leaf.ashape):
            raise self.error(f"a row of the matrix field '{leaf.name}' is read by element ([r, c])", node)
        import itertools

        comps = [self.load_leaf(arr, leaf, idx, sub + [_const(k, node) for k in ks], node)
                 for ks in itertools.product(*[range(n) for n in rest])]
        return self.compose(leaf.dt, comps, node)

    def leaf_values(self, r, node):
        """[(leaf, value node)] for every leaf of struct r, leaves relative to r's layout."""
        lay = self.layout_at(r) if r.kind in ("elem", "val") else r.lay
        n = len(r.path or ())
        if r.kind == "elem":
            return [(_Rel(lf, n), _ArrSrc(lambda ks, lf=lf: self.load_leaf(r.name, lf, r.idx, ks, node))
                     if lf.ashape else self.load_leaf(r.name, lf, r.idx, [], node))
                    for lf in r.lay.leaves_under(r.path)]
        if r.kind == "val":
            def local(lf):
                name = _name(f"{r.name}{SEP}{_sep(lf.name)}", node)
                if not lf.ashape:
                    return name
                return _ArrSrc(lambda ks: _loc(ast.Subscript(value=name, slice=_index(ks, node), ctx=ast.Load()),
                                               node), name)
            return [(_Rel(lf, n), local(lf)) for lf in r.lay.leaves_under(r.path)]
        if r.kind == "fcall":
            r = self.materialize(r, node)
            return self.leaf_values(r, node)
        if r.kind == "ctor":
            return self.ctor_values(lay, r.node)
        raise self.error("not a struct value", node)

    def ctor_values(self, lay, call):
        names = list(lay.fields)
        given = {}
        if len(call.args) > len(names):
            raise self.error(f"{lay.name}() takes {len(names)} fields, {len(call.args)} given", call)
        for n, a in zip(names, call.args):
            given[n] = a
        for kw in call.keywords:
            if kw.arg is None or kw.arg not in lay.fields:
                raise self.error(f"struct {lay.name} has no field '{kw.arg}' (its fields: {', '.join(names)})", call)
            if kw.arg in given:
                raise self.error(f"{lay.name}() got field '{kw.arg}' twice", call)
            given[kw.arg] = kw.value
        out = []
        for n, f in lay.fields.items():
            a = given.get(n)
            if f.kind == "struct":
                if a is None:
                    out.extend((_Rel(lf, 0, (n,)), self.zero(lf, call)) for lf in f.sub.leaves)
                    continue
                r = self.ref(a)
                if r is None or r.kind not in ("elem", "val", "ctor", "fcall") or \
                        (self.layout_at(r) if r.kind in ("elem", "val") else r.lay) is not f.sub:
                    raise self.error(f"field '{n}' of {lay.name} is a {f.sub.name}: give it a {f.sub.name} value",
                                     a)
                out.extend((_Rel(rl.leaf, rl.n, (n,) + rl.prefix), v) for rl, v in self.leaf_values(r, a))
                continue
            leaf = next(lf for lf in lay.leaves if lf.path == (n,))
            if f.kind == "array" and a is not None:
                raise self.error(f"the array field '{n}' of {lay.name} is not given to {lay.name}(): it starts "
                                 f"zeroed, and its elements are set by index", a)
            if a is None:
                out.append((_Rel(leaf, 0), self.zero(leaf, call)))
                continue
            if self.ref_quiet(a) and self.ref(a) is not None and self.ref(a).kind not in ("eleaf", "vleaf"):
                raise self.error(f"field '{n}' of {lay.name} is a {leaf.dt.name}, not a struct", a)
            v = self.expr(a)
            if not leaf.dt.shape and leaf.dt.kind != "c":
                v = _loc(ast.Call(func=self.dtype_node(leaf.dt, a), args=[v], keywords=[]), a)
            elif isinstance(a, (ast.Tuple, ast.List)):
                v = self.compose(leaf.dt, [self.expr(e) for e in a.elts], a)
            out.append((_Rel(leaf, 0), v))
        return out

    def zero(self, leaf, node):
        if leaf.ashape:
            return _ArrSrc(None)
        dt = leaf.dt
        if dt.kind == "c":
            return _loc(ast.Call(func=self.dtype_node(dt, node), args=[_const(0.0, node)], keywords=[]), node)
        z = False if dt.kind == "b" else (0.0 if dt.scalar.kind in "fc" else 0)
        n = 1
        for s in dt.shape:
            n *= s
        return self.compose(dt, [_const(z, node)] * n, node)

    def materialize(self, r, node):
        """A ctor or struct-returning call as a temporary struct local (statements in self.pre)."""
        t = self.temp()
        self.pre.extend(self.assign_local(t, r, node))
        return _R("val", name=t, lay=self.values[t], path=(), node=node)

    # ------------------------------------------------------------ funcs
    def func_call(self, fobj, call):
        """(closure name of fobj's struct build for this call's arguments, the layout it returns)."""
        if call.keywords:
            raise self.error("a @tack.func taking structs is called with positional arguments", call)
        sig = []
        for a in call.args:
            r = self.ref(a) if self.ref_quiet(a) else None
            if r is None or r.kind in ("eleaf", "vleaf"):
                sig.append(None)
            elif r.kind == "arr":
                sig.append(("array", r.lay, r.ndim))
            else:
                sig.append(("fvalue", self.layout_at(r) if r.kind in ("elem", "val") else r.lay, 0))
        g, lay = build_func(fobj, tuple(sig))
        return self.use(g, fobj.__name__), lay

    def local_array_arg(self, v, node):
        if isinstance(v, _ArrSrc):
            return v.name_node
        return v

    def func_expr(self, r):
        return self.call_expanded(r.node, r.name)

    def call_expanded(self, call, gname):
        args = []
        for a in call.args:
            r = self.ref(a) if self.ref_quiet(a) else None
            if r is None or r.kind in ("eleaf", "vleaf"):
                args.append(self.expr(a))
            elif r.kind == "arr":
                args.extend(_name(self.view(r.name, lf), a) for lf in r.lay.leaves)
            else:
                lay = self.layout_at(r) if r.kind in ("elem", "val") else r.lay
                if r.kind != "val" and any(lf.ashape for lf in lay.leaves):
                    r = self.materialize(r, a)  # its array fields as local arrays, passed by value
                vals = self.leaf_values(r, a)
                args.extend(self.local_array_arg(v, a) for _, v in vals)
        return _loc(ast.Call(func=_name(gname, call), args=args, keywords=[]), call)

    # ------------------------------------------------------------ exprs
    def no_struct(self, node):
        r = self.ref(node)
        if r is not None and r.kind not in ("eleaf", "vleaf"):
            what = r.lay.name if r.kind in ("arr", "ctor", "fcall") else self.layout_at(r).name
            raise self.error(f"a {what} struct is not a value here: use its fields", node)

    def expr(self, node):
        if node is None or not isinstance(node, ast.expr):
            return node
        if isinstance(node, ast.Call) and any(self.ref_quiet(a) for a in node.args):
            fobj = self.resolve(node.func)
            if fobj is len and len(node.args) == 1:
                r = self.ref(node.args[0])
                if r is not None and r.kind == "arr":
                    return _loc(ast.Call(func=node.func, args=[_name(self.view(r.name, r.lay.leaves[0]), node)],
                                         keywords=[]), node)
            if fobj in self.atomics:
                return self.atomic(node)
        if isinstance(node, (ast.Name, ast.Subscript, ast.Attribute, ast.Call)) and self.ref_quiet(node):
            if isinstance(node, ast.Call):
                fobj = self.resolve(node.func)
                if fobj in self.atomics:
                    return self.atomic(node)
                if isinstance(fobj, _core.Kernel) and fobj.is_func:
                    gname, lay = self.func_call(fobj, node)
                    if lay is not None:
                        raise self.error(f"this call returns a {lay.name}: assign it to a name or use its "
                                         f"fields", node)
                    return self.call_expanded(node, gname)
                if fobj is len and len(node.args) == 1:
                    r = self.ref(node.args[0])
                    if r is not None and r.kind == "arr":
                        return _loc(ast.Call(func=node.func, args=[_name(self.view(r.name, r.lay.leaves[0]), node)],
                                             keywords=[]), node)
            if isinstance(node, ast.Attribute) and node.attr == "shape":
                r = self.ref(node.value)
                if r is not None and r.kind == "arr":
                    leaf = next((lf for lf in r.lay.leaves if not lf.comp_shape()), None)
                    if leaf is None:
                        raise self.error(f"'{r.name}.shape' of this {r.lay.name} array is read by axis "
                                         f"({r.name}.shape[0])", node)
                    return _loc(ast.Attribute(value=_name(self.view(r.name, leaf), node), attr="shape",
                                              ctx=ast.Load()), node)
            if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
                    and node.value.attr == "shape"):
                r = self.ref(node.value.value)
                if r is not None and r.kind == "arr":
                    return _loc(ast.Subscript(value=_loc(ast.Attribute(
                        value=_name(self.view(r.name, r.lay.leaves[0]), node), attr="shape", ctx=ast.Load()),
                        node), slice=self.expr(node.slice), ctx=ast.Load()), node)
            r = self.ref(node)
            if r is not None:
                if r.kind == "eleaf":
                    return self.load_leaf(r.name, r.leaf, r.idx, r.sub, node)
                if r.kind == "vleaf":
                    return _name(f"{r.name}{SEP}{_sep(r.leaf.name)}", node)
                self.no_struct(node)
        if isinstance(node, ast.Compare):
            for o in [node.left] + node.comparators:
                r = self.ref(o) if self.ref_quiet(o) else None
                if r is not None and r.kind not in ("eleaf", "vleaf"):
                    what = r.lay.name if r.kind in ("arr", "ctor", "fcall") else self.layout_at(r).name
                    raise self.error(f"structs are not compared ({what}): '==' and the other comparisons take "
                                     f"numbers; compare the fields", node)
        if isinstance(node, (ast.IfExp, ast.BoolOp)):
            first = node.test if isinstance(node, ast.IfExp) else node.values[0]
            node = copy.copy(node)
            if isinstance(node, ast.IfExp):
                node.test = self.expr(first)
            else:
                node.values = [self.expr(first)] + node.values[1:]
            self.conditional += 1
            try:
                if isinstance(node, ast.IfExp):
                    node.body, node.orelse = self.expr(node.body), self.expr(node.orelse)
                else:
                    for o in node.values[1:]:
                        if self.ref_quiet(o):
                            self.no_struct_op(o, node)
                    node.values = node.values[:1] + [self.expr(v) for v in node.values[1:]]
            finally:
                self.conditional -= 1
            return node
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp)):
            for o in ([node.left, node.right] if isinstance(node, ast.BinOp) else
                      [node.operand] if isinstance(node, ast.UnaryOp) else node.values):
                if self.ref_quiet(o):
                    self.no_struct_op(o, node)
        return self.map_children(node)

    def no_struct_op(self, o, node):
        r = self.ref(o)
        if r is not None and r.kind not in ("eleaf", "vleaf"):
            what = r.lay.name if r.kind in ("arr", "ctor", "fcall") else self.layout_at(r).name
            raise self.error(f"structs have no arithmetic ({what}): compute with their fields", node)

    def atomic(self, node):
        args = node.args
        r = self.ref(args[0]) if args else None
        if r is None or r.kind != "arr":
            return self.map_children(node)
        if len(args) < 4 or not (isinstance(args[2], ast.Constant) and isinstance(args[2].value, str)):
            raise self.error(f"an atomic on the {r.lay.name} array '{r.name}' names its field: "
                             f"tack.atomic_add({r.name}, i, \"field\", value)", node)
        path = tuple(args[2].value.split("."))
        comp = []
        leaf = next((lf for lf in r.lay.leaves if lf.path == path), None)
        if leaf is None and len(path) > 1 and path[-1] in "xyzw":
            leaf = next((lf for lf in r.lay.leaves if lf.path == path[:-1]), None)
            if leaf is not None and len(leaf.dt.shape) == 1 and not leaf.ashape:
                comp = [_const("xyzw".index(path[-1]), node)]
            else:
                leaf = None
        if leaf is None:
            raise self.error(f"struct {r.lay.name} has no numeric field '{args[2].value}' (its fields: "
                             f"{', '.join(lf.name for lf in r.lay.leaves)})", args[2])
        if len(comp) != len(leaf.comp_shape()) - len(leaf.ashape) or leaf.dt.kind == "c" and not comp:
            if leaf.dt.kind != "c":
                raise self.error(f"field '{leaf.name}' of {r.lay.name} is a {leaf.dt.name}: an atomic takes one "
                                 f"number (name a component: \"{leaf.name}.x\")", args[2])
        idx = _elts(args[1])
        if len(idx) != r.ndim:
            raise self.error(f"'{r.name}' is a {r.ndim}-dimensional array of {r.lay.name}: the atomic's index "
                             f"takes {r.ndim} indices", node)
        if leaf.ashape:
            raise self.error(f"atomics on the array field '{leaf.name}' are not supported", node)
        index = _index([self.expr(x) for x in idx] + comp, node)
        new = [_name(self.view(r.name, leaf), node), index] + [self.expr(a) for a in args[3:]]
        return _loc(ast.Call(func=self.expr(node.func), args=new, keywords=[self.map_children(k)
                                                                            for k in node.keywords]), node)

    def map_children(self, node):
        node = copy.copy(node)
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.expr):
                setattr(node, field, self.expr(value))
            elif isinstance(value, list):
                setattr(node, field, [self.expr(x) if isinstance(x, ast.expr) else
                                      (self.map_children(x) if isinstance(x, (ast.keyword, ast.comprehension))
                                       else x) for x in value])
            elif isinstance(value, (ast.keyword, ast.slice if hasattr(ast, "slice") else ast.keyword)):
                setattr(node, field, self.map_children(value))
        return node


def build_func(fobj, sig):
    """fobj's struct build for a call whose arguments are `sig` (None, ('array', layout, ndim) or
    ('fvalue', layout, 0) each), and the layout it returns (None: not a struct)."""
    table = _FUNC_BUILDS.setdefault(fobj, {})
    key = tuple(None if k is None else (k[0], k[1].cls, k[2]) for k in sig)
    hit = table.get(key)
    if hit is None:
        g = _rewrite_function(fobj.__wrapped__, sig, is_kernel=False)
        hit = table[key] = (_core.Kernel(g, is_func=True), g.__tack_struct_returns__)
    return hit


def _parse(fn):
    from ._source import getsourcelines

    try:
        lines, first = getsourcelines(fn)
    except OSError as e:
        if e.errno is not None:  # the file is there but could not be read: that is the cause to see
            raise
        # the compiler's own words for a function without source (frontend_source.c)
        raise TypeError(f"cannot compile '{fn.__qualname__}': its source code is not available ({e}). Tack "
                        f"compiles a kernel from the function's source text, so define it in a file (a module, a "
                        f"script or a notebook cell), not in the plain interactive interpreter or with "
                        f"exec()/eval()") from e
    src = "".join(lines)
    tree = getattr(fn, "__tack_tree__", None)
    if tree is not None:  # a rewrite's result (a HashGrid or Bvh kernel taking structs): its tree,
        # numbered as the source it came from is parsed below
        return copy.deepcopy(tree), first - (2 if src[:1] in (" ", "\t", "\f") else 1)
    if src[:1] in (" ", "\t", "\f"):  # indented: the body of `if 1:`, as frontend_source.c parses it
        tree = ast.parse("if 1:\n" + src)
        fdef = tree.body[0].body[0]
        return fdef, first - 2
    tree = ast.parse(src)
    return tree.body[0], first - 1


def _rewrite_function(fn, sig, is_kernel):
    """A new function: fn with the struct parameters of `sig` scalarized (see the module's
    docstring), carrying its rewritten tree as __tack_tree__."""
    fdef, base = _parse(fn)
    if not isinstance(fdef, ast.FunctionDef):
        raise TypeError(f"{fn.__qualname__}: cannot find the source of the function")
    rw = _Rw(fn, fdef, base, is_kernel)
    a = fdef.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
        if any(k is not None for k in sig):
            raise rw.error("a kernel or func taking structs has plain parameters only (no *args, **kwargs, "
                           "keyword-only or positional-only ones)", fdef)
    params = list(a.args)
    if len(params) != len(sig):
        raise rw.error(f"{fn.__qualname__} takes {len(params)} parameters, called with {len(sig)}", fdef)
    new_params, prologue = [], []
    for p, kind in zip(params, sig):
        if kind is None:
            new_params.append(p)
            continue
        what, lay, nd = kind
        if what == "vec":  # a vector, matrix or quaternion by value: its components, then the value built
            # from them as the body's first statement (tack._vector_args)
            cnames = [f"{p.arg}{SEP}{k}" for k in range(len(nd))]
            new_params.extend(_loc(ast.arg(arg=c), p) for c in cnames)
            value = rw.compose(lay, [_name(c, p) for c in cnames], p)
            prologue.append(_loc(ast.Assign(targets=[_name(p.arg, p, ast.Store())], value=value), p))
            continue
        if what == "array":
            rw.arrays[p.arg] = (lay, nd)
            new_params.extend(_loc(ast.arg(arg=f"{p.arg}{SEP}{_sep(lf.name)}"), p) for lf in lay.leaves)
            continue
        if what == "value" and any(lf.ashape for lf in lay.leaves):
            raise rw.error(f"struct {lay.name} has array fields: it is passed to a kernel in an array, not by "
                           f"value", p)
        rw.values[p.arg] = lay
        for lf in lay.leaves:
            name = f"{p.arg}{SEP}{_sep(lf.name)}"
            comp = lf.comp_shape()
            if what == "fvalue" or not comp:
                new_params.append(_loc(ast.arg(arg=name), p))
                continue
            n = 1
            for s in comp:
                n *= s
            cnames = [f"{name}{SEP}{k}" for k in range(n)]
            new_params.extend(_loc(ast.arg(arg=c), p) for c in cnames)
            comps = [_name(c, p) for c in cnames]
            if lf.dt.kind == "c":
                value = _loc(ast.Call(func=rw.obj_name(complex, p, "complex"), args=comps, keywords=[]), p)
            else:
                value = rw.compose(lf.dt, comps, p)
            prologue.append(rw.set_leaf_local(name, lf.dt, value, p))
    fdef = copy.copy(fdef)
    fdef.args = copy.copy(a)
    fdef.args.args = new_params
    fdef.args.defaults = [] if len(new_params) != len(params) else a.defaults
    body = rw.stmts(fdef.body)
    if prologue:
        # after a docstring, which must stay first
        k = 1 if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and \
            isinstance(body[0].value.value, str) else 0
        body = body[:k] + prologue + body[k:]
    fdef.body = body
    fdef.decorator_list = []
    fdef.returns = None
    ast.fix_missing_locations(fdef)
    g = _make(fn, fdef, base, rw)
    g.__tack_values_done__ = True  # its vector parameters are expanded (tack._vector_args.params)
    return g


def _make(fn, fdef, base, rw):
    free = list(fn.__code__.co_freevars)
    cells = [c.cell_contents for c in (fn.__closure__ or ())]
    # fn may be a rewrite's result itself (a Bvh kernel taking a HashGrid or structs): a name its
    # rewrite injected and this one injects again is the same object (a type, a func), passed once
    for n in rw.inject:
        if n in free and cells[free.index(n)] is not rw.inject[n]:
            raise AssertionError(f"{fn.__qualname__}: two rewrites inject different objects as {n}")
    injected = [n for n in rw.inject if n not in free]
    inner = copy.deepcopy(fdef)
    ast.increment_lineno(inner, base)  # the file's lines
    factory = ast.parse(f"def __tack_factory({', '.join(free + injected)}):\n    pass\n").body[0]
    for n in ast.walk(factory):  # the factory's own nodes sit on the def's line
        if hasattr(n, "lineno"):
            n.lineno = n.end_lineno = inner.lineno
    factory.body = [inner, _loc(ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load())), inner)]
    mod = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(mod)
    code = compile(mod, fn.__code__.co_filename, "exec")
    ns = {}
    exec(code, fn.__globals__, ns)
    g = ns["__tack_factory"](*cells, *[rw.inject[n] for n in injected])
    g.__qualname__ = fn.__qualname__
    g.__module__ = fn.__module__
    g.__doc__ = fn.__doc__
    # the source lines are fn's (tack._source reads them through __tack_struct_of__), and the tree is
    # numbered as the front end numbers them
    g.__tack_struct_of__ = fn
    g.__tack_tree__ = fdef
    g.__tack_struct_returns__ = rw.returns
    return g
