"""A kernel called with a structure whose queries are rewritten into its source.

``tack.HashGrid``, ``tack.Bvh`` and ``tack.Mesh`` are not arrays: inside a
kernel they are loops (``for j in grid.neighbors(p, r):``, ``for k in
bvh.query_box(lo, hi):``) and calls that the structure's module rewrites into
plain kernel code over the structure's arrays.  A call of a kernel with such an
argument therefore goes through here: the call's arguments are bound to the
kernel's own signature (keeping the launch's ``stream=`` and, for ``compile``
/ ``generated_source`` / ``ir``, ``target=`` aside), the structure's module
may refuse the mix of arguments, the rewritten kernel is built once per
kernel and structure kind (the key the module gives: a grid's dimension and
float type, a tree's kind and types) with the kernel's own options, and it is
called with each structure replaced by its arrays.  One place, so that the
kinds of structure cannot drift apart in how they bind, cache and forward.
"""

import weakref

from . import _core

_PARAMS = weakref.WeakKeyDictionary()  # kernel -> (its Python function, its signature)
_BUILDS = weakref.WeakKeyDictionary()  # kernel -> {key: the rewritten kernel}


def call(kernel_obj, args, kwargs, method, cls, key_of, rewrite, refuse):
    """kernel_obj called (or `method` of it) with args of which some are `cls`
    instances; NotImplemented when the arguments do not bind to its signature
    (the plain call then raises Python's own TypeError).  key_of(structure) is
    the rewrite's key for one argument, rewrite(fn, keys) the rewritten
    function, refuse(fn, values) raises for arguments the kind cannot mix with."""
    extra = {}
    if method is not None and "target" in kwargs:
        kwargs = dict(kwargs)
        extra["target"] = kwargs.pop("target")
    hit = _PARAMS.get(kernel_obj)
    if hit is None:
        import inspect

        fn = kernel_obj.__wrapped__ if hasattr(kernel_obj, "__wrapped__") else kernel_obj.py_func
        hit = _PARAMS[kernel_obj] = (fn, inspect.signature(fn))
    fn, sig = hit
    if "stream" in kwargs and "stream" not in sig.parameters:  # the launch's stream= (docs/backends.md)
        kwargs = dict(kwargs)
        extra["stream"] = kwargs.pop("stream")
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return NotImplemented
    bound.apply_defaults()
    values = list(bound.arguments.values())
    refuse(fn, values)
    keys = tuple(key_of(v) if isinstance(v, cls) else None for v in values)
    table = _BUILDS.setdefault(kernel_obj, {})
    built = table.get((cls, keys))
    if built is None:
        from ._kernels import PythonKernel

        g = rewrite(fn, keys)
        opts = dict(checks=kernel_obj.checks, fast_math=kernel_obj.fast_math,
                    flush_denormals=kernel_obj.flush_denormals, default_float=kernel_obj.default_float,
                    check_races=kernel_obj.check_races, optimize=kernel_obj.optimize)
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
