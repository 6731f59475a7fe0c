"""A kernel called with a structure whose queries are rewritten into its source.

``tack.HashGrid``, ``tack.Bvh`` and ``tack.Mesh`` are not arrays: inside a
kernel they are loops (``for j in grid.neighbors(p, r):``, ``for k in
bvh.query_box(lo, hi):``) and calls that the structure's module rewrites into
plain kernel code over the structure's arrays.  A call of a kernel with such an
argument therefore goes through here: the call's arguments are bound to the
kernel's own signature (keeping the launch's ``stream=`` and, for ``compile``
/ ``generated_source`` / ``ir``, ``target=`` aside), the rewritten kernel is
built once per kernel and structure kind (the key the module gives: a grid's
dimension and float type, a tree's kind and types) with the kernel's own
options, and it is called with each structure replaced by its arrays.
Arguments of the other kinds go on through that call: a Bvh kernel's HashGrid
arguments reach the grid's hook, and struct arguments the struct rewrite, each
rewriting the tree the one before made (tack._structs_rewrite._parse reads
``__tack_tree__``).  rewrite_function() is the frame of each module's rewrite:
the kernel's source parsed, its structure parameters replaced by the arrays
they stand for, its body given to the module's AST transformer, a
QueryRewriter (the depth of loops, the query loops' checks).  One place, so
that the kinds of structure cannot drift
apart in how they bind, cache, forward and rewrite.
"""

import ast
import copy
import weakref

from . import _core

_PARAMS = weakref.WeakKeyDictionary()  # kernel -> (its Python function, its signature, its count of plain parameters)
_BUILDS = weakref.WeakKeyDictionary()  # kernel -> {key: the rewritten kernel}


def call(kernel_obj, args, kwargs, method, cls, key_of, rewrite):
    """kernel_obj called (or `method` of it) with args of which some are `cls`
    instances; NotImplemented when the arguments do not bind to its signature
    (the plain call then raises Python's own TypeError).  key_of(structure) is
    the rewrite's key for one argument, rewrite(fn, keys) the rewritten
    function."""
    extra = {}
    if method is not None and "target" in kwargs:
        kwargs = dict(kwargs)
        extra["target"] = kwargs.pop("target")
    hit = _PARAMS.get(kernel_obj)
    if hit is None:
        import inspect

        fn = kernel_obj.__wrapped__ if hasattr(kernel_obj, "__wrapped__") else kernel_obj.py_func
        sig = inspect.signature(fn)
        plain = all(p.kind is p.POSITIONAL_OR_KEYWORD for p in sig.parameters.values())
        hit = _PARAMS[kernel_obj] = (fn, sig, len(sig.parameters) if plain else -1)
    fn, sig, nplain = hit
    if not kwargs and len(args) == nplain:  # every parameter given by position: bound as they come
        values = args
    else:
        if "stream" in kwargs and "stream" not in sig.parameters:  # the launch's stream= (docs/backends.md)
            kwargs = dict(kwargs)
            extra["stream"] = kwargs.pop("stream")
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError:
            return NotImplemented
        bound.apply_defaults()
        values = list(bound.arguments.values())
    keys = tuple(key_of(v) if isinstance(v, cls) else None for v in values)
    table = _BUILDS.setdefault(kernel_obj, {})
    built = table.get((cls, keys))
    if built is None:
        from ._kernels import PythonKernel

        g = rewrite(fn, keys)
        opts = dict(checks=kernel_obj.checks, fast_math=kernel_obj.fast_math,
                    flush_denormals=kernel_obj.flush_denormals, default_float=kernel_obj.default_float,
                    check_races=kernel_obj.check_races, optimize=kernel_obj.optimize)
        if not isinstance(kernel_obj, PythonKernel):  # vectors by value: its calls go on to the struct build
            from . import _vector_args

            opts["by_value"] = bool(_vector_args.params(g))
        built = PythonKernel(g, **opts) if isinstance(kernel_obj, PythonKernel) else _core.Kernel(g, **opts)
        table[(cls, keys)] = built
    expanded = []
    for v in values:
        if isinstance(v, cls):
            expanded.extend(v._args())
        else:
            expanded.append(v)
    if method is None:
        return built(*expanded, **extra)
    out = getattr(built, method)(*expanded, **extra)
    return None if method == "compile" else out


class QueryRewriter(ast.NodeTransformer):
    """What the structures' AST transformers (make_rw of rewrite_function) share:
    the refusal at a node (error), the depth of the kernel's own loops around
    the node being visited -- a query loop at depth 0 would be the kernel's
    parallel loop, so it is refused there -- and a query loop's checks and the
    visit of its body one loop deeper.  A subclass sets `inject` (closure name
    -> object, which _make passes to the rewritten function) and numbers its
    query loops with `count`, for the names of their temporaries."""

    def __init__(self, fn, base):
        self.fn, self.base = fn, base
        self.returns = None  # what a kernel returns: no struct (_make reads it)
        self.count = 0
        self.depth = 0  # loops around the node: 0 at the kernel's top level

    def error(self, msg, node):
        from ._structs import _compile_error

        return _compile_error(msg, node, self.fn, self.base)

    def nested(self, node):
        """node (a loop of the kernel's own) with its children visited one loop deeper."""
        self.depth += 1
        try:
            return self.generic_visit(node)
        finally:
            self.depth -= 1

    def visit_While(self, node):
        return self.nested(node)

    def check_query(self, node, what, usage, index):
        """Refuse the query loop `for ... in what(...)` unless it is inside a loop and has two
        arguments (`usage`: the refusal when not), one name (`index`: what it names) and no
        else block."""
        if self.depth == 0:
            raise self.error(f"'for ... in {what}(...)' at the top level of a kernel would be a parallel "
                             f"loop: put it inside the kernel's parallel loop", node)
        if node.iter.keywords or len(node.iter.args) != 2:
            raise self.error(usage, node.iter)
        if not isinstance(node.target, ast.Name):
            raise self.error(f"'for ... in {what}(...)' takes one name for {index}", node)
        if node.orelse:
            raise self.error(f"'for ... in {what}(...)' has no 'else:' block", node)

    def query_body(self, body):
        """A query loop's body visited one loop deeper, as a list of statements."""
        self.depth += 1
        try:
            out = []
            for s in body:
                r = self.visit(s)
                out.extend(r if isinstance(r, list) else [r])
            return out
        finally:
            self.depth -= 1


def rewrite_function(fn, keys, make_rw, what, fields):
    """fn with each parameter whose key (one per parameter in `keys`) is not None
    replaced by the arrays fields(key) names (parameter·field), its body
    rewritten by make_rw(fn, base, {parameter: key}) -- a QueryRewriter -- and
    carrying the new tree as __tack_tree__.
    `what` names the structure in the refusal of other kinds of parameter."""
    from ._structs_nodes import SEP
    from ._structs_rewrite import _make, _parse

    fdef, base = _parse(fn)
    if not isinstance(fdef, ast.FunctionDef):
        raise TypeError(f"{fn.__qualname__}: cannot find the source of the function")
    a = fdef.args
    rw = make_rw(fn, base, {p.arg: k for p, k in zip(a.args, keys) if k is not None})
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or len(a.args) != len(keys):
        raise rw.error(f"a kernel taking a {what} has plain parameters only (no *args, **kwargs, "
                       "keyword-only or positional-only ones)", fdef)
    params = []
    for p, k in zip(a.args, keys):
        if k is None:
            params.append(p)
        else:
            params.extend(ast.copy_location(ast.arg(arg=f"{p.arg}{SEP}{nm}"), p) for nm in fields(k))
    fdef = copy.deepcopy(fdef)
    body = []
    for s in fdef.body:
        out = rw.visit(s)
        body.extend(out if isinstance(out, list) else [out])
    fdef.body = body
    fdef.args = copy.copy(a)
    fdef.args.args = params
    fdef.args.defaults = []
    fdef.decorator_list = []
    fdef.returns = None
    ast.fix_missing_locations(fdef)
    return _make(fn, fdef, base, rw)
