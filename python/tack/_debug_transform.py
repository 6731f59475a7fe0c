"""Debug mode's rewrite of a kernel's own AST (tack._debug's second step).

A kernel run as Python must compute in the types the compiled kernel
computes in, so every arithmetic operator, comparison, subscript, store,
augmented assignment, call and ``for`` loop of its source is routed through
a helper of the run's context (tack._debug._Ctx), which applies Tack's type
rule to the operands' run-time values.  ``_Transform`` is that rewrite, an
``ast.NodeTransformer`` over the function's own parsed source; the context
is a parameter of a factory function around the rewritten copy, and the
copy keeps the file's name and line numbers, so tracebacks and pdb show the
kernel's own lines.  ``_transformed`` builds and caches the factory; a
struct build's rewritten tree (tack._structs) and the race detector's
subclass (tack._debug_races) come in here too.  The rewrite knows only the
names of the context's helpers, never their types: the rules stay in
tack._debug.
"""

from __future__ import annotations

import ast

_AST_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
            ast.Pow: "**", ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&",
            ast.BitOr: "|", ast.BitXor: "^"}
_AST_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}

_CTX = "__tack_ctx"


def _c(name):
    return ast.Attribute(value=ast.Name(id=_CTX, ctx=ast.Load()), attr=name, ctx=ast.Load())


def _callc(name, *args):
    return ast.Call(func=_c(name), args=list(args), keywords=[])


class _Transform(ast.NodeTransformer):
    """Route a kernel's operators, subscripts, stores and calls through _Ctx."""

    def __init__(self, is_kernel, line_shift):
        self.is_kernel = is_kernel
        self.line_shift = line_shift  # the parsed source's line 1 is the file's line 1 + line_shift
        self.n = 0

    def _choice(self, node, k, value):
        return _callc("choice", ast.Constant(node.lineno + self.line_shift), ast.Constant(node.col_offset),
                      ast.Constant(k), value)

    def visit_BoolOp(self, node):
        """`a and b and c` as `((a and b) and c)` with each pair's operands in
        the type the compiler gives the pair (lower_expr.c, shortcircuit), the
        test on `a` itself, before that conversion (2**31 * i is true, though
        it is 0 in uint8): `a and b` is `b' if (t := a) else t'`, `a or b` is
        `t' if (t := a) else b'`, where x' is x converted."""
        self.generic_visit(node)
        acc = node.values[0]
        for k, v in enumerate(node.values[1:], 1):
            name = self.tmp()
            test = ast.NamedExpr(target=ast.Name(id=name, ctx=ast.Store()), value=acc)
            first = self._choice(node, k, ast.Name(id=name, ctx=ast.Load()))
            other = self._choice(node, k, v)
            if not (isinstance(acc, ast.Constant) and isinstance(v, ast.Constant)):
                # a literal picked by a test known at run time is an integer known at run time, as
                # the compiler's pick of the two is (only two constants give a constant, lower_expr.c)
                first.args.append(ast.Constant(True))
                other.args.append(ast.Constant(True))
            acc = ast.IfExp(test=test, body=other, orelse=first) if isinstance(node.op, ast.And) else \
                ast.IfExp(test=test, body=first, orelse=other)
            acc = ast.copy_location(acc, node)
            ast.fix_missing_locations(acc)
        return acc

    def visit_IfExp(self, node):
        # a Python int literal picked by `x if c else y` is an integer known at run time, whatever the
        # condition: the compiler folds no conditional expression (lower_expr.c's select), so
        # `(2**31 if True else i) + a32[i]` is checked when it runs, not wrapped as a folded literal
        self.generic_visit(node)
        call = self._choice(node, 0, node)
        call.args.append(ast.Constant(True))
        return ast.copy_location(call, node)

    def tmp(self):
        self.n += 1
        return f"__tack_t{self.n}"

    def visit_BinOp(self, node):
        self.generic_visit(node)
        return ast.copy_location(_callc("bin", ast.Constant(_AST_BIN[type(node.op)]), node.left, node.right), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.USub):
            return ast.copy_location(_callc("neg", node.operand), node)
        if isinstance(node.op, ast.Invert):
            return ast.copy_location(_callc("inv", node.operand), node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_callc("not_", node.operand), node)
        if isinstance(node.op, ast.UAdd):
            return ast.copy_location(_callc("pos", node.operand), node)
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if not all(type(o) in _AST_CMP for o in node.ops):
            return node
        parts = []
        left = node.left
        for i, (op, right) in enumerate(zip(node.ops, node.comparators)):
            if i < len(node.ops) - 1:
                name = self.tmp()
                right_val = ast.NamedExpr(target=ast.Name(id=name, ctx=ast.Store()), value=right)
                parts.append(_callc("cmp", ast.Constant(_AST_CMP[type(op)]), left, right_val))
                left = ast.Name(id=name, ctx=ast.Load())
            else:
                parts.append(_callc("cmp", ast.Constant(_AST_CMP[type(op)]), left, right))
        out = parts[0] if len(parts) == 1 else ast.BoolOp(op=ast.And(), values=parts)
        return ast.copy_location(out, node)

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load) and node.attr in ("real", "imag", "T"):  # a complex's part, m.T: _Ctx.part
            return ast.copy_location(_callc("part", node.value, ast.Constant(node.attr)), node)
        return node

    def visit_For(self, node):
        self.generic_visit(node)
        if not isinstance(node.iter, ast.Call):  # over a constant tuple (the compiler checked): _Ctx.constants
            node.iter = ast.copy_location(_callc("constants", node.iter), node.iter)
        return node

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load):
            return ast.copy_location(_callc("load", node.value, node.slice), node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in ("breakpoint", "print"):
            return node  # called from the kernel's own frame (pdb stops there)
        return ast.copy_location(ast.Call(func=_c("call"), args=[node.func] + node.args,
                                          keywords=node.keywords), node)

    def _assign_to(self, target, value, node):
        """Statements assigning the (transformed) expression `value` to `target`."""
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Subscript):
            # a[i][k] = s, a[i][r, c] = s: a component of an array's element, set in the element itself
            # (a load of a[i] would be a copy), as the compiled kernel's store of that component alone
            inner = target.value
            self.generic_visit(inner)  # the array and the element's index, not a load of the element
            return [ast.copy_location(ast.Expr(_callc("store_part", inner.value, inner.slice,
                                                      self.visit(target.slice), value)), node)]
        if isinstance(target, ast.Subscript):
            self.generic_visit(target)  # its value and index
            return [ast.copy_location(ast.Expr(_callc("store", target.value, target.slice, value)), node)]
        if isinstance(target, ast.Name):
            if isinstance(value, ast.Name):  # w = v: a vector's value, not a second name for one NumPy array
                value = _callc("own", value)
            value = _callc("local", ast.Constant(target.id), value)
            return [ast.copy_location(ast.Assign(targets=[target], value=value), node)]
        if isinstance(target, (ast.Tuple, ast.List)):
            name = self.tmp()
            out = [ast.copy_location(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value), node)]
            unpacked = [self.tmp() for _ in target.elts]
            out.append(ast.copy_location(ast.Assign(
                targets=[ast.Tuple(elts=[ast.Name(id=u, ctx=ast.Store()) for u in unpacked], ctx=ast.Store())],
                value=ast.Name(id=name, ctx=ast.Load())), node))
            for elt, u in zip(target.elts, unpacked):
                out += self._assign_to(elt, ast.Name(id=u, ctx=ast.Load()), node)
            return out
        if isinstance(target, ast.Attribute):
            root, names = _attr_chain(target)
            if isinstance(root, ast.Subscript):  # t[i].x = s on a local array: its element, in place
                self.generic_visit(root)
                return [ast.copy_location(ast.Expr(_callc("setattr_at", root.value, root.slice, names, value)),
                                          node)]
            # v.y = s on a local (a name, the compiler checked): the local rebound to a copy with the
            # component set, so a value it shares with an array's element or a caller's local --
            # `v = a[i]` and a func's parameter are views here -- keeps its own, as in a kernel
            return [ast.copy_location(ast.Assign(targets=[ast.Name(id=root.id, ctx=ast.Store())],
                                                 value=_callc("setattr", self.visit(root), names, value)), node)]
        self.generic_visit(target)
        return [ast.copy_location(ast.Assign(targets=[target], value=value), node)]

    def visit_Assign(self, node):
        value = self.visit(node.value)
        if len(node.targets) == 1:
            return self._assign_to(node.targets[0], value, node)
        name = self.tmp()
        out = [ast.copy_location(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value), node)]
        for t in node.targets:
            out += self._assign_to(t, ast.Name(id=name, ctx=ast.Load()), node)
        return out

    def visit_AnnAssign(self, node):
        if node.value is None:
            return node
        value = _callc("annotated", node.annotation, self.visit(node.value))
        return self._assign_to(node.target, value, node)

    def visit_AugAssign(self, node):
        op = ast.Constant(_AST_BIN[type(node.op)])
        value = self.visit(node.value)
        t = node.target
        line = ast.Constant(node.lineno + self.line_shift)
        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Subscript):  # a[i][k] += s, in place
            inner = t.value
            self.generic_visit(inner)
            return ast.copy_location(ast.Expr(_callc("aug_part", op, inner.value, inner.slice, self.visit(t.slice),
                                                     value, line)), node)
        if isinstance(t, ast.Attribute) and isinstance(_attr_chain(t)[0], ast.Subscript):
            root, names = _attr_chain(t)  # a[i].x += s on an array's (or a local array's) element, in place
            self.generic_visit(root)
            return ast.copy_location(ast.Expr(_callc("aug_part", op, root.value, root.slice, names, value, line)),
                                     node)
        if isinstance(t, ast.Subscript):
            self.generic_visit(t)
            return ast.copy_location(ast.Expr(_callc("aug", op, t.value, t.slice, value,
                                                     ast.Constant(node.lineno + self.line_shift))), node)
        if isinstance(t, ast.Name):
            load = ast.Name(id=t.id, ctx=ast.Load())
            return self._assign_to(ast.Name(id=t.id, ctx=ast.Store()), _callc("bin", op, load, value), node)
        if isinstance(t, ast.Attribute):  # v.x += s: the root is a local's name (the compiler checked)
            load = self.visit(ast.copy_location(ast.Attribute(value=t.value, attr=t.attr, ctx=ast.Load()), t))
            return self._assign_to(t, _callc("bin", op, load, value), node)
        self.generic_visit(node)
        return node

    def visit_FunctionDef(self, node):
        """The kernel's top-level statements: a ``tack.blocks`` loop among them
        becomes a generator per thread (_blocks_loop)."""
        if self.is_kernel and getattr(self, "_top", None) is None:
            self._top = node
            for s in parallel_loops(node.body):
                if not _is_blocks_loop(s):
                    s.body = _unbind(s) + s.body
            node.body = [x for s in node.body for x in (self._blocks_loop(s) if _is_blocks_loop(s) else [s])]
        self.generic_visit(node)
        return node

    def _blocks_loop(self, node):
        """``for b, t in tack.blocks(n, B): body`` as ``def thread(b, t): body``
        (each ``tack.barrier()`` a ``yield`` of its line) run by the context's
        ``blocks``, which steps the block's threads from barrier to barrier."""
        for s in ast.walk(node):
            for field in ("body", "orelse"):
                stmts = getattr(s, field, None)
                if isinstance(stmts, list):
                    setattr(s, field, [y for x in stmts for y in self._barriers(x)])
        self.n += 1
        name = f"__tack_thread{self.n}"
        params = [ast.arg(arg=e.id) for e in node.target.elts]
        body = node.body + [ast.If(test=ast.Constant(False), body=[ast.Expr(ast.Yield(None))], orelse=[])]
        fn = ast.FunctionDef(name=name, args=ast.arguments(posonlyargs=[], args=params, vararg=None, kwonlyargs=[],
                                                           kw_defaults=[], kwarg=None, defaults=[]),
                             body=body, decorator_list=[], returns=None)
        run = ast.Expr(_callc("blocks", node.iter.args[0], node.iter.args[1], ast.Name(id=name, ctx=ast.Load()),
                              ast.Constant(node.lineno + self.line_shift)))
        return [ast.copy_location(fn, node), ast.copy_location(run, node)]

    def _barriers(self, x):
        """A statement of a blocks loop's body as the thread's generator runs it: a barrier is a
        ``yield`` of its line; ``r = tack.block_sum(v)`` (block_min, block_max, block_scan) puts
        the thread's value, yields, takes the block's result and yields again (tack._debug)."""
        line = ast.Constant(x.lineno + self.line_shift)
        if _is_barrier(x):
            return [ast.copy_location(ast.Expr(ast.Yield(line)), x)]
        op = _collective(x)
        if op is None:
            return [x]
        width = [k.value for k in x.value.keywords if k.arg == "width"]  # shuffle(v, lane, width=8)
        put = ast.Expr(_callc("block_put", *x.value.args, *width))
        get = ast.Assign(targets=[x.targets[0]], value=_callc("block_get", ast.Constant(op)))
        return [ast.copy_location(n, x) for n in (put, ast.Expr(ast.Yield(line)), get, ast.Expr(ast.Yield(line)))]

    def visit_Assert(self, node):
        self.generic_visit(node)
        args = [node.test] + ([node.msg] if node.msg is not None else [])
        return ast.copy_location(ast.Expr(_callc("assert_", *args)), node)


def parallel_loops(body):
    """The parallel loops of a kernel whose body is `body`: its top-level ``for``
    loops over a call (range, tack.ndrange, tack.blocks), and those in the body of
    a top-level loop over a constant tuple, which the compiler unrolls into the
    kernel's top level, so that each copy of such a loop is a parallel loop of
    its own (a tuple loop with a break or continue cannot hold one: the front end
    refuses it).  The tuple loops themselves run serially, as Python runs them."""
    for s in body:
        if isinstance(s, ast.For) and isinstance(s.iter, ast.Call):
            yield s
        elif isinstance(s, ast.For):
            yield from parallel_loops(s.body)


def _unbind(loop):
    """Statements that unbind, at the start of each iteration of a parallel loop,
    the names its body assigns: an iteration's locals are its own, so one it
    reads before assigning raises UnboundLocalError, as the compiled kernel
    does (src/compiler/lower/unbound.c), instead of reading the previous
    iteration's value."""
    own = set(_target_names(loop.target))
    names = []
    for x in ast.walk(ast.Module(body=loop.body, type_ignores=[])):
        targets = []
        if isinstance(x, ast.Assign):
            targets = x.targets
        elif isinstance(x, (ast.AnnAssign, ast.AugAssign, ast.For)):
            targets = [x.target]
        elif isinstance(x, ast.NamedExpr):
            targets = [x.target]
        for t in targets:
            for n in _target_names(t):
                if n not in own and n not in names:
                    names.append(n)
    out = []
    for name in names:
        out.append(ast.copy_location(ast.Try(
            body=[ast.Delete(targets=[ast.Name(id=name, ctx=ast.Del())])],
            handlers=[ast.ExceptHandler(type=ast.Name(id="NameError", ctx=ast.Load()), name=None, body=[ast.Pass()])],
            orelse=[], finalbody=[]), loop))
    return out


def _attr_chain(t):
    """The expression an attribute target (v.x, t.p.y) starts from, and its
    attribute names in order as a tuple constant (("p", "y"))."""
    names = []
    while isinstance(t, ast.Attribute):
        names.insert(0, t.attr)
        t = t.value
    return t, ast.Constant(tuple(names))


def _target_names(t):
    """The names an assignment target binds (not those inside a subscript or attribute it stores to)."""
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)):
        return [n for e in t.elts for n in _target_names(e)]
    if isinstance(t, ast.Starred):
        return _target_names(t.value)
    return []


def _is_blocks_loop(s):
    it = s.iter if isinstance(s, ast.For) else None
    f = it.func if isinstance(it, ast.Call) else None
    return (isinstance(f, ast.Attribute) and f.attr == "blocks" or isinstance(f, ast.Name) and f.id == "blocks") and \
        isinstance(s.target, ast.Tuple) and len(s.target.elts) == 2 and len(it.args) == 2


def _collective(s):
    """The name of the block collective s assigns to a name (r = tack.block_sum(v)), else None."""
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) and
            isinstance(s.value, ast.Call) and 1 <= len(s.value.args) <= 3):
        return None
    f = s.value.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    return name if name in _COLLECTIVES else None


_COLLECTIVES = ("block_sum", "block_min", "block_max", "block_scan", "warp_sum", "warp_min", "warp_max", "shuffle",
                "shuffle_down", "warp_ballot", "warp_any", "warp_all")


def _is_barrier(s):
    f = s.value.func if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) else None
    return isinstance(f, ast.Attribute) and f.attr == "barrier" or isinstance(f, ast.Name) and f.id == "barrier"


def _transformed(fn, is_kernel, races=False):
    """The factory of fn's transformed copy: called with the context and the
    values of fn's free variables, it returns the function.  With `races`,
    the copy a kernel with check_races runs (tack._debug_races)."""
    attr = "__tack_debug_race_factory__" if races else "__tack_debug_factory__"
    cached = getattr(fn, attr, None)
    if cached is not None and cached[0] is fn.__code__ and cached[1] == is_kernel:
        return cached[2]
    from ._source import getsourcelines

    lines, first = getsourcelines(fn)
    src = "".join(lines)
    if src[:1] in (" ", "\t"):  # indented: parsed as the body of `if 1:`, as the compiler's front end
        tree = ast.parse("if 1:\n" + src)  # does, so that columns are the file's (and/or choices)
        fdef = tree.body[0].body[0] if tree.body and isinstance(tree.body[0], ast.If) else None
        shift = first - 2
    else:
        tree = ast.parse(src)
        fdef = tree.body[0]
        shift = first - 1
    if not isinstance(fdef, ast.FunctionDef):
        raise TypeError(f"{fn.__qualname__}: cannot find the source of the function")
    if getattr(fn, "__tack_tree__", None) is not None:  # a struct build's tree (tack._structs)
        import copy

        fdef = copy.deepcopy(fn.__tack_tree__)
    fdef.decorator_list = []
    ret_ann = fdef.returns
    if races:
        from ._debug_races import transform_class

        fdef = transform_class()(is_kernel, shift, fn).visit(fdef)
    else:
        fdef = _Transform(is_kernel, shift).visit(fdef)
    ast.fix_missing_locations(fdef)
    free = list(fn.__code__.co_freevars)
    factory = ast.parse(f"def __tack_factory({', '.join([_CTX] + free)}):\n    pass\n").body[0]
    factory.body = [fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))]
    mod = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(mod)
    ast.increment_lineno(mod, shift)
    code = compile(mod, fn.__code__.co_filename, "exec")
    ns = {}
    exec(code, fn.__globals__, ns)
    entry = (fn.__code__, is_kernel, (ns["__tack_factory"], free, ret_ann is not None))
    try:
        setattr(fn, attr, entry)
    except AttributeError:
        pass
    return entry[2]
