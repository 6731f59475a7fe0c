"""The struct rewrite's statements: assignments, stores and the walk over a body.

tack._structs_rewrite's rewriter (``_Rw``) reads expressions: what a struct-related expression is,
the values of a struct's leaves, func calls.  This half writes: an assignment to a struct local
(one local per leaf, declared with its dtype at its first assignment), a store into an element of
a struct array (one store per leaf, through a temporary where the value is a vector or a complex
number, element by element for an array field), ``+=`` on a field, and the statement walk that
takes every statement of a body through them -- with a struct return of a @tack.func becoming the
tuple of its leaves, and the statements an expression needs first (``self.pre``) placed before its
own.  It is a mixin: ``_Rw`` inherits it, and its methods call the expression methods and the
state (``values``, ``declared``, ``pre``) that ``_Rw`` holds.  It is apart so that neither half
grows past what one reads at a sitting; the vocabulary both use is tack._structs_nodes.
"""

import ast
import copy

from ._structs_nodes import SEP, _sep, _loc, _name, _const, _index, _store, _ArrSrc, _Plain


class _Statements:
    """The statements of the struct rewrite (see the module's docstring); a base of _Rw."""

    # ------------------------------------------------------- assignments
    def set_leaf_local(self, name, dt, value, node, ashape=()):
        if ashape:  # an array field: a local array of its shape, copied element by element
            out = []
            if name not in self.declared:
                self.declared.add(name)
                shape = _loc(ast.Tuple(elts=[_const(k, node) for k in ashape], ctx=ast.Load()), node)
                zeros = _loc(ast.Call(func=self.obj_name(self.zeros_fn(), node, "zeros"),
                                      args=[shape, self.dtype_node(dt, node)], keywords=[]), node)
                out.append(_loc(ast.Assign(targets=[_name(name, node, ast.Store())], value=zeros), node))
            elif value.load is None:
                out.extend(self.each(ashape, lambda ks: _loc(ast.Assign(targets=[_loc(ast.Subscript(
                    value=_name(name, node), slice=_index(ks, node), ctx=ast.Store()), node)],
                    value=self.zero(_Plain(dt), node)), node), node))
            if value.load is not None:
                out.extend(self.each(ashape, lambda ks: _loc(ast.Assign(targets=[_loc(ast.Subscript(
                    value=_name(name, node), slice=_index(ks, node), ctx=ast.Store()), node)],
                    value=value.load(ks)), node), node))
            return out
        if name not in self.declared:
            self.declared.add(name)
            ann = _loc(ast.AnnAssign(target=_name(name, node, ast.Store()), annotation=self.dtype_node(dt, node),
                                     value=value, simple=1), node)
            if SEP in name:  # a struct local's leaf: messages name it as written (p.pos, not p·pos)
                ann.tack_shown = name.replace(SEP, ".")
            return ann
        return _loc(ast.Assign(targets=[_name(name, node, ast.Store())], value=value), node)

    def zeros_fn(self):
        from . import _array

        return _array.zeros

    def each(self, ashape, make, node):
        """make(indices) for every element of an array field (unrolled: its elements are few)."""
        import itertools

        n = 1
        for d in ashape:
            n *= d
        if n > 64:
            raise self.error(f"an array field of {n} elements is copied element by element: at most 64 are "
                             f"copied as a whole (copy them with a loop over its indices)", node)
        return [make([_const(k, node) for k in ks]) for ks in itertools.product(*[range(d) for d in ashape])]

    def assign_local(self, name, r, node):
        lay = self.layout_at(r) if r.kind in ("elem", "val") else r.lay
        if name in self.arrays:
            raise self.error(f"'{name}' is an array of {self.arrays[name][0].name}; it cannot be assigned a "
                             f"{lay.name}", node)
        old = self.values.get(name)
        if old is not None and old is not lay:
            raise self.error(f"'{name}' holds a {old.name}; it cannot be assigned a {lay.name}", node)
        self.values[name] = lay
        if r.kind == "fcall":
            target = _loc(ast.Tuple(elts=[_name(f"{name}{SEP}{_sep(lf.name)}", node, ast.Store()) for lf in lay.leaves],
                                    ctx=ast.Store()), node)
            return [_loc(ast.Assign(targets=[target], value=self.func_expr(r)), node)]
        vals = self.leaf_values(r, node)
        out = []
        if r.kind == "ctor" and any(isinstance(n, ast.Name) and n.id.startswith(name + SEP)
                                    for _, v in vals for n in ast.walk(v)):
            temps = []
            for rl, v in vals:  # q = S(a=q.b, b=q.a): every value first
                if isinstance(v, _ArrSrc):
                    temps.append((rl, v))
                    continue
                t = self.temp()
                out.extend(self._set(t, rl.leaf.dt, v, node))
                temps.append((rl, _name(t, node)))
            vals = temps
        for rl, v in vals:
            out.extend(self._set(f"{name}{SEP}{_sep(rl.name)}", rl.leaf.dt, v, node, rl.leaf.ashape))
        return out

    def _set(self, name, dt, value, node, ashape=()):
        got = self.set_leaf_local(name, dt, value, node, ashape)
        return got if isinstance(got, list) else [got]

    def store_leaf(self, arr, leaf, idx, sub, value, node, op=None):
        """Statements storing value (or `view op= value`) into a leaf, or its component, of arr[idx]."""
        comp = leaf.comp_shape()
        view = _name(self.view(arr, leaf), node)
        if isinstance(value, _ArrSrc):  # a whole array field: element by element
            out = []
            for ks in self.each(leaf.ashape, lambda ks: ks, node):
                v = value.load(ks) if value.load is not None else self.zero(_Plain(leaf.dt), node)
                out.extend(self.store_leaf(arr, leaf, idx, list(ks), v, node))
            return out
        if len(sub) == len(comp):
            tgt = _loc(ast.Subscript(value=view, slice=_index(idx + sub, node), ctx=ast.Store()), node)
            if op is not None:
                return [_loc(ast.AugAssign(target=tgt, op=op, value=value), node)]
            return [_loc(ast.Assign(targets=[tgt], value=value), node)]
        if len(sub) < len(leaf.ashape):
            raise self.error(f"field '{leaf.name}' is an array field: store its elements by index", node)
        # `p[k].f += v` on a vector or matrix field: each component its own `+=` (atomic in a parallel
        # loop, as on a vector array's element), the value held once; the field read, added and stored
        # whole lost other iterations' adds into the same element
        per_comp = isinstance(op, (ast.Add, ast.Sub)) and leaf.dt.kind != "c" and \
            leaf.dt.name not in ("transform", "transformd", "quat", "quatd")
        if per_comp:
            value = _loc(ast.BinOp(left=self.zero(_Plain(leaf.dt), node), op=ast.Add(), right=value), node)
        elif op is not None:
            value = _loc(ast.BinOp(left=self.load_leaf(arr, leaf, idx, sub, node), op=op, right=value), node)
        t = self.temp()
        out = [self.set_leaf_local(t, leaf.dt, value, node)]
        # the temporary is declared with the field's dtype, so a value of another is refused there:
        # messages name the field it stands for (b[i].xf), not the temporary (frontend.c, st_annassign)
        out[0].tack_shown = f"{arr}[{', '.join(ast.unparse(k) for k in idx)}].{leaf.name}" + \
            "".join(f"[{ast.unparse(k)}]" for k in sub)
        import itertools

        rest = comp[len(sub):]
        for ks in itertools.product(*[range(n) for n in rest]):
            tv = _name(t, node)
            if leaf.dt.kind == "c":
                c = _loc(ast.Attribute(value=tv, attr="real" if ks[0] == 0 else "imag", ctx=ast.Load()), node)
            elif leaf.dt.name in ("transform", "transformd"):  # its p, then its q
                part = _loc(ast.Attribute(value=tv, attr="p" if ks[0] < 3 else "q", ctx=ast.Load()), node)
                c = _loc(ast.Subscript(value=part, slice=_const(ks[0] if ks[0] < 3 else ks[0] - 3, node),
                                       ctx=ast.Load()), node)
            else:
                c = _loc(ast.Subscript(value=tv, slice=_index([_const(k, node) for k in ks], node),
                                       ctx=ast.Load()), node)
            out.extend(self.store_leaf(arr, leaf, idx, sub + [_const(k, node) for k in ks], c, node,
                                       op=op if per_comp else None))
        return out

    def assign(self, node):
        if len(node.targets) != 1:
            for t in node.targets:
                if self.ref_quiet(t):
                    raise self.error("a chained assignment to struct fields: assign them one by one", node)
            return [self.generic_stmt(node)]
        t, v = node.targets[0], node.value
        if isinstance(t, ast.Tuple):
            if any(self.ref_quiet(e) and not isinstance(self.ref(e), type(None)) and
                   self.ref(e).kind not in ("eleaf", "vleaf") for e in t.elts):
                raise self.error("structs are not unpacked: assign them one at a time", node)
        rv = self.ref(v) if self.ref_quiet(v) else None
        if rv is not None and rv.kind == "arr":
            raise self.error(f"'{rv.name}' is an array of {rv.lay.name}: it is not assigned to a name", node)
        struct_v = rv is not None and rv.kind in ("elem", "val", "ctor", "fcall")
        if isinstance(t, ast.Name):
            if struct_v:
                return self.assign_local(t.id, rv, node)
            if t.id in self.values:
                raise self.error(f"'{t.id}' holds a {self.values[t.id].name}; it cannot be assigned a "
                                 f"value that is not one", node)
            if t.id in self.arrays:
                raise self.error(f"'{t.id}' is an array of {self.arrays[t.id][0].name}; it is not reassigned",
                                 node)
            return [self.generic_stmt(node)]
        rt = self.ref(t) if self.ref_quiet(t) else None
        if rt is None:
            return [self.generic_stmt(self.part_target(node))]
        if rt.kind in ("elem", "val"):
            lay = self.layout_at(rt)
            if not struct_v:
                raise self.error(f"a {lay.name} is assigned a {lay.name} value, not {ast.unparse(v)}", node)
            vlay = self.layout_at(rv) if rv.kind in ("elem", "val") else rv.lay
            if vlay is not lay:
                raise self.error(f"a {lay.name} cannot be assigned a {vlay.name}", node)
            vals = self.leaf_values(rv, node)
            out = []
            if rt.kind == "val":
                for rl, val in vals:
                    full = rt.path + rl.leaf_rel_path()
                    leaf = next(lf for lf in rt.lay.leaves if lf.path == full)
                    out.extend(self._set(f"{rt.name}{SEP}{_sep(leaf.name)}", leaf.dt, val, node, leaf.ashape))
                return out
            for rl, val in vals:
                full = rt.path + rl.leaf_rel_path()
                leaf = next(lf for lf in rt.lay.leaves if lf.path == full)
                out.extend(self.store_leaf(rt.name, leaf, rt.idx, [], val, node))
            return out
        if struct_v:
            raise self.error("a struct is assigned only to a struct: a name, an element or a struct field", node)
        if rt.kind == "eleaf":
            return self.store_leaf(rt.name, rt.leaf, rt.idx, rt.sub, self.expr(v), node)
        if rt.kind == "arr":
            raise self.error(f"'{rt.name}' is an array of {rt.lay.name}: assign its elements, {rt.name}[i]", node)
        return [self.generic_stmt(node)]

    def comp_target(self, node):
        """`q.pos.y = v` (a vector field of a struct local) as `q·pos[1] = v`, the spelling a local's
        component is set by."""
        t = node.targets[0] if isinstance(node, ast.Assign) else node.target
        if isinstance(t, ast.Attribute) and len(t.attr) == 1 and t.attr in "xyzw" and self.ref_quiet(t.value):
            r = self.ref(t.value)
            if r is not None and r.kind == "vleaf" and len(r.leaf.dt.shape) == 1:
                new = _loc(ast.Subscript(value=t.value, slice=_const("xyzw".index(t.attr), t), ctx=ast.Store()), t)
                node = copy.copy(node)
                if isinstance(node, ast.Assign):
                    node.targets = [new]
                else:
                    node.target = new
        return node

    def part_target(self, node):
        """comp_target, and a store to a part of an element's field that is not a component
        (`b[i].xf.p = v`, `b[i].xf.p.x = v`: a transform field's position) refused, in the user's own
        words rather than the rewritten load's; a struct local's (`p.xf.p.x = s`) is its leaf local's,
        which the compiler sets as any local transform's part."""
        new = self.comp_target(node)
        t = new.targets[0] if isinstance(new, ast.Assign) else new.target
        root = t.value if isinstance(t, ast.Attribute) else None
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in self.values:
            return new  # a part of a struct local's field (p.xf.p = v): a local's, which the compiler sets
        if isinstance(t, ast.Attribute) and self.ref_quiet(t.value):
            text = copy.copy(node)
            text.value = ast.Name(id="...", ctx=ast.Load())
            raise self.error(f"assigning to an attribute ('{ast.unparse(text)}') is not supported in kernels; "
                             f"build a new value instead", node)
        return new

    def augassign(self, node):
        if not self.ref_quiet(node.target):
            if self.ref_quiet(node.value):
                self.no_struct(node.value)
            return [self.generic_stmt(node)]
        rt = self.ref(node.target)
        if rt is None:
            return [self.generic_stmt(self.part_target(node))]
        if rt.kind == "eleaf":
            return self.store_leaf(rt.name, rt.leaf, rt.idx, rt.sub, self.expr(node.value), node, op=node.op)
        if rt.kind == "vleaf":
            return [self.generic_stmt(node)]
        if rt is None:
            return [self.generic_stmt(self.comp_target(node))]
        raise self.error(f"structs have no arithmetic ({type(node.op).__name__} on a "
                         f"{self.layout_at(rt).name if rt.kind in ('elem', 'val') else rt.lay.name}): "
                         f"update its fields", node)

    # -------------------------------------------------------- statements
    def generic_stmt(self, node):
        node = copy.copy(node)
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.expr) and field == "target":
                setattr(node, field, _store(self.expr(value)))
            elif isinstance(value, list) and field == "targets":
                setattr(node, field, [_store(self.expr(x)) for x in value])
            elif isinstance(value, ast.expr):
                setattr(node, field, self.expr(value))
            elif isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                setattr(node, field, self.stmts(value))
            elif isinstance(value, list):
                setattr(node, field, [self.expr(x) if isinstance(x, ast.expr) else x for x in value])
        return node

    def stmt(self, node):
        if isinstance(node, ast.Assign):
            return self.assign(node)
        if isinstance(node, ast.AnnAssign):
            cls = self.struct_class(node.annotation)
            if cls is not None:
                if node.value is None:
                    raise self.error(f"a {cls.__name__} local is declared with its value", node)
                r = self.ref(node.value) if self.ref_quiet(node.value) else None
                lay = None if r is None else (self.layout_at(r) if r.kind in ("elem", "val") else r.lay)
                if lay is not cls.__tack_struct__ or r.kind not in ("elem", "val", "ctor", "fcall"):
                    raise self.error(f"'{ast.unparse(node.target)}' is annotated {cls.__name__} but is assigned "
                                     f"{ast.unparse(node.value)}", node)
                return self.assign(_loc(ast.Assign(targets=[node.target], value=node.value), node))
            return [self.generic_stmt(node)]
        if isinstance(node, ast.AugAssign):
            return self.augassign(node)
        if isinstance(node, ast.Return) and node.value is not None and self.ref_quiet(node.value):
            r = self.ref(node.value)
            if r is not None and r.kind in ("elem", "val", "ctor", "fcall"):
                lay = self.layout_at(r) if r.kind in ("elem", "val") else r.lay
                if self.is_kernel:
                    raise self.error("a kernel returns nothing; a @tack.func may return a struct", node)
                if self.returns_plain or (self.returns is not None and self.returns is not lay):
                    raise self.error("every return of a func returning a struct returns one of the same struct",
                                     node)
                self.returns = lay
                if r.kind == "fcall":
                    return [_loc(ast.Return(value=self.func_expr(r)), node)]
                vals = [v for _, v in self.leaf_values(r, node)]
                if any(isinstance(v, _ArrSrc) for v in vals):
                    raise self.error(f"a func returns a struct without array fields ({lay.name} has some): "
                                     f"return its other fields, or write into an array", node)
                return [_loc(ast.Return(value=_loc(ast.Tuple(elts=vals, ctx=ast.Load()), node)), node)]
        if isinstance(node, ast.Return):
            if self.returns is not None:
                raise self.error("every return of a func returning a struct returns one of the same struct", node)
            self.returns_plain = node.value is not None
        if isinstance(node, ast.While):
            node = copy.copy(node)
            self.conditional += 1
            try:
                node.test = self.expr(node.test)
            finally:
                self.conditional -= 1
            node.body, node.orelse = self.stmts(node.body), self.stmts(node.orelse)
            return [node]
        if isinstance(node, ast.For) and self.ref_quiet(node.iter):
            r = self.ref(node.iter)
            if r is not None and r.kind == "arr":
                raise self.error(f"a loop over the {r.lay.name} array '{r.name}' runs over indices: "
                                 f"for i in range({r.name}.shape[0])", node)
        return [self.generic_stmt(node)]

    def stmts(self, body):
        out = []
        for s in body:
            saved, self.pre = self.pre, []
            new = self.stmt(s)
            out.extend(self.pre)
            out.extend(new)
            self.pre = saved
        return out
