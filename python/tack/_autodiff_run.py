"""Adjoints built and launched: kernel.adjoint, and the tape (tack.Tape).

tack._autodiff generates a kernel's adjoint as another kernel's tree; this module makes it a
kernel (a compiled one, or a PythonKernel in debug mode) once per signature of the forward call,
binds the gradients to its extra parameters (an array's ``.grad``, the ``grads=`` given, or
scratch arrays) and launches it.  ``tack.Tape`` records launches through the extension's tape
hook (``_core._set_tape``: one pointer test a launch when no tape records) and, in
``backward``, runs their adjoints last first, after refusing a launch that modified an array an
earlier launch on the tape read.  docs/differentiation.md is the user's chapter.
"""

from __future__ import annotations

import builtins as _builtins
import re
import weakref

from . import _core
from . import _autodiff_local
from . import _autodiff_scalarize
from . import _autodiff_continue
from . import _autodiff_forward
from . import _autodiff_structs
from . import _autodiff_unpack
from ._autodiff import _INTS, _Gen, _np

# ------------------------------------------------------------------ builds


_BUILDS = weakref.WeakKeyDictionary()
_LOCALS = re.compile(r"(\S+?)(?:'\d+)?:((?:[a-z0-9]+(?: \(Python\))?)|array\[[^\]]*\]|\S+)(?=\s|$)")


def _local_types(ir):
    """{local name: its type} from the kernel's IR (the first function's `locals:` line)."""
    out = {}
    for line in ir.splitlines():
        line = line.strip()
        if line.startswith("locals:"):
            for m in _LOCALS.finditer(line[len("locals:"):]):
                name, t = m.group(1), m.group(2)
                if name[:2] in ("_t", "_u") and name[2:].isdigit():  # temporaries, unbound.c's flags
                    continue
                out.setdefault(name, t)
            break
    return out


_FUNC = re.compile(r"^func (\w+)#\d+\(.*\) -> (.+?)(?:\s+parallel)?$")


def _func_types(ir):
    """({func name: {local: {types}}}, {func name: {return types}}) of the @tack.func builds in the IR."""
    types, returns, cur = {}, {}, None
    for line in ir.splitlines():
        m = _FUNC.match(line.strip())
        if m and line.startswith("func "):
            cur = m.group(1)
            returns.setdefault(cur, set()).add(m.group(2).strip())
            continue
        if line.startswith("kernel "):
            cur = None
        if cur is not None and line.strip().startswith("locals:"):
            for lm in _LOCALS.finditer(line.strip()[len("locals:"):]):
                types.setdefault(cur, {}).setdefault(lm.group(1), set()).add(lm.group(2))
    return types, returns


def _array_kind(v):
    """('farray', 'f32'|'f64'), ('array', None) for integer/bool arrays, ('bad', what), or None."""
    np = _np()
    if isinstance(v, _core.Array):
        name = v.dtype.name
    elif isinstance(v, np.ndarray):
        dt = v.dtype
        if dt.kind == "f" and dt.itemsize in (4, 8):  # before dt.name, which NumPy computes in Python
            return ("farray", "f32" if dt.itemsize == 4 else "f64")
        if dt.kind in "iub":
            return ("array", None)
        name = {"float32": "f32", "float64": "f64"}.get(dt.name, dt.name)
    elif hasattr(v, "__dlpack__") and hasattr(v, "dtype"):
        # a PyTorch dtype prints as "torch.int32"; JAX's, CuPy's and the rest as NumPy's names
        name = str(v.dtype).replace("torch.", "")
        name = {"float32": "f32", "float64": "f64"}.get(name, name)
    else:
        return None
    if name in ("f32", "f64"):
        return ("farray", name)
    if name in _INTS or name.startswith(("int", "uint")) or name == "bool":
        return ("array", None)
    return ("bad", name)


_SIGNATURES = weakref.WeakKeyDictionary()


def _param_kinds(fn, args, kwargs):
    sig = _SIGNATURES.get(fn)
    if sig is None:  # inspect.signature costs tens of microseconds a call: once per function
        import inspect

        sig = _SIGNATURES[fn] = inspect.signature(fn)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    np = _np()
    kinds = {}
    for p, v in bound.arguments.items():
        k = _array_kind(v)
        if k is None:
            if isinstance(v, float):
                k = ("fscalar", "float (Python)")
            elif isinstance(v, np.floating) and v.dtype.name in ("float32", "float64"):
                k = ("fscalar", "f32" if v.dtype.name == "float32" else "f64")
            elif isinstance(v, (bool, int, np.integer, np.bool_)):
                k = ("other", None)
            else:
                k = ("other", type(v).__name__)
        kinds[p] = k
    return bound, kinds


def _ir(kernel, args, kwargs):
    from ._kernels import PythonKernel

    k = kernel._checker if isinstance(kernel, PythonKernel) else kernel
    return k.ir(*args, **kwargs)


def build(kernel, args, kwargs):
    """(the adjoint kernel of `kernel` for these arguments, the bound arguments, the parameters that get
    a gradient, in the adjoint's order)."""
    hit, bound, kinds = _built(kernel, args, kwargs)
    return hit[0], bound, hit[1], kinds


def _built(kernel, args, kwargs):
    """(the build's entry: the adjoint kernel, the parameters that get a gradient, the parameters
    loaded and modified, the arrays of vectors; the bound arguments; their kinds)."""
    from ._kernels import PythonKernel
    from ._structs_rewrite import _make, _parse

    fn = kernel.py_func if isinstance(kernel, PythonKernel) else kernel.__wrapped__
    from . import _structs

    if _structs.has_struct(args, kwargs):  # callers expand a struct launch first (tack._autodiff_structs)
        raise TypeError(f"{fn.__qualname__}: a launch on structs is differentiated through its struct build")
    bound, kinds = _param_kinds(fn, args, kwargs)
    table = _BUILDS.setdefault(kernel, {})
    quick = tuple((p, k, _layout(bound.arguments[p])) for p, k in kinds.items())  # what the IR depends on
    hit = table.get(quick)
    if hit is None:
        ir = _ir(kernel, bound.args, bound.kwargs)  # the forward's own CompileError first
        key = tuple((p, k) for p, k in kinds.items()) + (ir,)
        hit = table.get(key)
    if hit is None:
        fdef, base = _parse(fn)
        if getattr(fn, "__tack_tree__", None) is not None:  # a struct build: its tree, numbered as the source's
            import copy

            fdef = copy.deepcopy(fn.__tack_tree__)
        varr = _vector_arrays(bound)
        gkinds = dict(kinds)
        for p, ty in varr.items():  # to the adjoint, the float (or integer) array of its components
            gkinds[p] = ("farray", ty.dt) if ty.dt in ("f32", "f64") else ("array", None)
        gen = _Gen(kernel, fn, fdef, base, gkinds, _local_types(ir))
        gen.func_types, gen.func_returns = _func_types(ir)
        gen.top_names = set()
        gen.array_ndims = {p: len(bound.arguments[p].shape) for p in varr}  # `x.shape` of vectors (scalarize)
        gen.fdef = _autodiff_unpack.unpack(gen, gen.fdef)  # a, b = b, a: one name at a time
        gen.fdef = _autodiff_continue.unfold(gen.fdef)  # if c: continue: the rest in the else branch
        gen.fdef = _autodiff_forward.forward(gen, gen.fdef, varr)  # a[i] = e, then a[i] read: e's local
        _autodiff_local.precheck(gen, gen.fdef)
        if _autodiff_scalarize.needs(gen, gen.fdef, varr):  # vectors, matrices, complex: as scalars
            gen.fdef = _autodiff_scalarize.scalarize(gen, gen.fdef, varr)
        new, grads = gen.build()

        class _Rw:
            inject = gen.inject
            returns = None

        g = _make(fn, new, base, _Rw)
        g.__qualname__ = fn.__qualname__ + ".adjoint"
        opts = dict(checks=kernel.checks, fast_math=kernel.fast_math, flush_denormals=kernel.flush_denormals,
                    default_float=kernel.default_float, check_races=kernel.check_races, optimize=kernel.optimize)
        adj = PythonKernel(g, **opts) if isinstance(kernel, PythonKernel) else _core.Kernel(g, **opts)
        hit = table[key] = (adj, grads, frozenset(gen.loaded), frozenset(gen.modified), varr)
    table[quick] = hit
    return hit, bound, kinds


def _vector_arrays(bound):
    """{parameter: Ty} of the arguments that are arrays of vectors, matrices or complex numbers."""
    out = {}
    for p, v in bound.arguments.items():
        ty = _vector_type(v)
        if ty is not None:
            out[p] = ty
    return out


def _vector_type(v):
    np = _np()
    if isinstance(v, _core.Array):
        return _autodiff_scalarize.dtype_type(v.dtype)
    if isinstance(v, np.ndarray) and v.dtype.kind == "c" and v.dtype.itemsize in (8, 16):
        return _autodiff_scalarize.Ty("c", (2,), "f32" if v.dtype.itemsize == 8 else "f64")
    return None


def _components(v, ty, what):
    """The array of v's components (one more axis, two for matrices), sharing its memory: how the
    adjoint takes an array of vectors, matrices or complex numbers and its gradient."""
    np = _np()
    comp = ty.shape
    if isinstance(v, np.ndarray):
        if v.dtype.kind == "c" and ty.kind == "c" and v.dtype.itemsize == (8 if ty.dt == "f32" else 16):
            return v[..., None].view(np.float32 if ty.dt == "f32" else np.float64)
        if v.dtype == np.dtype(ty.dt.replace("f", "float").replace("i", "int")) and v.ndim >= len(comp) and \
                tuple(v.shape[v.ndim - len(comp):]) == comp:
            return v  # already the components
    elif isinstance(v, _core.Array) and _autodiff_scalarize.dtype_type(v.dtype) is not None:
        vt = _autodiff_scalarize.dtype_type(v.dtype)
        if (vt.kind, vt.shape, vt.dt) == (ty.kind, ty.shape, ty.dt):
            if v.strided:
                raise ValueError(f"{what} is a strided view of {v.dtype.name} elements: differentiated arrays of "
                                 f"vectors, matrices and complex numbers are contiguous (pass a copy)")
            shape = tuple(v.shape) + comp
            strides, c = [], 1
            for d in reversed(shape):
                strides.insert(0, c)
                c *= d
            sc = getattr(_core, ty.dt) if ty.kind == "c" else v.dtype.scalar
            return v._field_view(sc, 0, shape, tuple(strides))
    name = {"c": "complex", "q": "quat", "x": "transform"}.get(ty.kind) or (
        f"vec{ty.shape[0]}" if ty.kind == "v" else f"mat{ty.shape[0]}{ty.shape[1]}")
    raise TypeError(f"{what} is {getattr(v, 'dtype', type(v).__name__)}: the gradient of an array of {name} "
                    f"({ty.dt} components) is an array of the same type and shape")


def _adjoint_args(bound, varr):
    """The kernel's arguments as its adjoint takes them: arrays of vectors as their components."""
    if not varr:
        return bound.args, bound.kwargs
    import copy

    b = copy.copy(bound)
    b.arguments = dict(bound.arguments)
    for p, ty in varr.items():
        b.arguments[p] = _components(bound.arguments[p], ty, f"the argument for '{p}'")
    return b.args, b.kwargs


def _layout(v):
    """An argument's part of a kernel's signature beyond its kind: rank, dtype, strides, device, type."""
    if isinstance(v, _core.Array):
        return (v.dtype.name, v.ndim, v.strided, v.device, v.writable)
    if hasattr(v, "__array_interface__"):  # the dtype itself: str() of a NumPy dtype runs Python code
        return (v.dtype, v.ndim, getattr(v, "flags", None) is not None and v.flags.c_contiguous,
                getattr(v, "flags", None) is not None and v.flags.writeable, type(v))
    if isinstance(v, int) and not isinstance(v, bool):
        return (int, v >= 1 << 63, v < -(1 << 63))
    return (type(v), getattr(v, "dtype", None))


def _zeros_like(v):
    np = _np()
    if isinstance(v, _core.Array):
        from . import _array

        return _array.zeros(v.shape, v.dtype, device=v.device)
    if isinstance(v, np.ndarray):
        return np.zeros_like(v)
    import torch  # a DLPack producer the kernel took: torch is the one Tack is tested with

    return torch.zeros_like(v)


def _scalar_grad(bound, kinds):
    """A scratch gradient for a float scalar: one element of the widest float array's type, on the
    arrays' device."""
    wide = [k[1] for k in kinds.values() if k[0] == "farray"]
    dt = "f64" if "f64" in wide or not wide else "f32"
    for v in bound.arguments.values():
        if isinstance(v, _core.Array):
            from . import _array

            return _array.zeros(1, getattr(_core, dt), device=v.device)
    return _np().zeros(1, "float64" if dt == "f64" else "float32")


def adjoint(kernel, args, kwargs):
    """kernel.adjoint(*args, grads=None): the extension's autodiff hook (see docs/differentiation.md)."""
    kwargs = dict(kwargs)
    grads = kwargs.pop("grads", None) or {}
    structs = _autodiff_structs.expand(kernel, args, kwargs)
    if structs is not None:  # through the struct build, on the leaves (tack._autodiff_structs)
        built, expanded, arrays, by_value = structs
        grads = _autodiff_structs.leaf_grads(arrays, by_value, grads, f"{kernel.__qualname__}.adjoint")
        return adjoint(built, expanded, {"grads": grads})
    hit, bound, kinds = _built(kernel, args, kwargs)
    adj, names, varr = hit[0], hit[1], hit[4]
    _check_aliases(kernel, bound, hit)
    extra = []
    for p in names:
        g = grads.get(p)
        if g is not None and kinds[p][0] == "farray" and p not in varr:
            _check_grad(g, bound.arguments[p], f"{kernel.__qualname__}.adjoint: the gradient for '{p}'")
        if g is None:
            v = bound.arguments[p]
            g = getattr(v, "grad", None) if isinstance(v, _core.Array) else None
        if g is None:
            if kinds[p][0] == "fscalar":
                g = _scalar_grad(bound, kinds)
            else:
                g = _zeros_like(bound.arguments[p])
        if p in varr:
            g = _components(g, varr[p], f"{kernel.__qualname__}.adjoint: the gradient for '{p}'")
        extra.append(g)
    unknown = set(grads) - set(names)
    if unknown:
        raise TypeError(f"{kernel.__qualname__}.adjoint: grads for {sorted(unknown)}, which are not float array or "
                        f"float scalar parameters (those are {names})")
    a, kw = _adjoint_args(bound, varr)
    _launch(adj, a, extra, kw, f"{kernel.__qualname__}.adjoint")
    return None


def _check_grad(g, v, what):
    """Refuse a gradient given for float array v that is not a float array of v's shape: an integer
    one would truncate every add, another shape would be indexed as v is."""
    kind = _array_kind(g)
    if kind is None or kind[0] != "farray":
        name = kind[1] if kind is not None and kind[1] else getattr(getattr(g, "dtype", None), "name",
                                                                      type(g).__name__)
        raise TypeError(f"{what} is an array of {name}: a gradient is a float array (f32 or f64) of the "
                        f"array's shape")
    if tuple(g.shape) != tuple(v.shape):
        raise ValueError(f"{what} has shape {tuple(g.shape)}, the array {tuple(v.shape)}: a gradient has its "
                         f"array's shape")


def _launch(adj, a, extra, kw, who):
    """Launch an adjoint, each gradient parameter given memory of its own.  One array passed for two
    parameters (a kernel reading x as both `a` and `b`, whose gradients are then one array) would
    lose adds: an iteration sums its adds into an element in a local and stores it once, so the
    store for `b` would drop the adds made for `a`.  A gradient repeated is given a zeroed scratch
    array instead, added into the first after the launch; gradients that overlap otherwise (slices
    of one array) are refused."""
    extra = list(extra)
    back = []  # (the first gradient, the scratch standing for a repeat of it)
    for j in range(len(extra)):
        for i in range(j):
            if not _shared(extra[i], extra[j]):
                continue
            first = extra[i]
            same = _storage(first) == _storage(extra[j]) and _size(first) == _size(extra[j]) and \
                type(first) is type(extra[j]) and first.dtype == extra[j].dtype
            if not same:
                raise ValueError(f"{who}: two gradients share part of their memory (slices of one array): give each "
                                 f"parameter's gradient an array of its own")
            scratch = _zeros_like(extra[j])
            back.append((first, scratch))
            extra[j] = scratch
            break
    with _paused():
        adj(*a, *extra, **kw)
    for first, scratch in back:
        if isinstance(first, _core.Array):
            from . import _array

            _array.copyto(first, first.numpy() + scratch.numpy().reshape(first.numpy().shape))
        else:
            first += scratch.reshape(first.shape)


def _varr(kernel, bound, kinds):
    hit = _BUILDS[kernel].get(tuple((p, k, _layout(bound.arguments[p])) for p, k in kinds.items()))
    return hit[4] if hit is not None else {}


_core._set_hooks(autodiff=adjoint)


# ------------------------------------------------------------------ the tape

_active = []  # the recording tapes, innermost last: each records every launch


class _paused:
    """No tape records while an adjoint runs."""

    def __enter__(self):
        self.saved = list(_active)
        _active.clear()
        _core._set_tape(None)

    def __exit__(self, *exc):
        _active.extend(self.saved)
        if _active:
            _core._set_tape(_record)


class _Opaque:
    """A call of a primitive that is not differentiated (tack.scan, tack.sort, a HashGrid's build, ...)
    on a tape, in place of its kernels' launches: its float array results, whose gradient must stay
    zero (tack._algorithms_common.not_differentiated)."""

    def __init__(self, what, outputs):
        self.what = what
        self.__qualname__ = what
        self.outputs = outputs

    def check(self, tape):
        """Refuse (ValueError) where a gradient reached one of the results: the call's inputs would
        silently get none."""
        np = _np()
        for out in self.outputs:
            if isinstance(out, _core.Array) and out.grad is not None:
                g = out.grad
            else:
                hit = tape._grads.get(_storage(out))
                if hit is None:
                    continue
                g = hit[1]
            host = g.numpy() if isinstance(g, _core.Array) else np.asarray(g)
            if host.any():
                raise ValueError(f"tack.Tape: {self.what}() is not differentiated, and the loss depends on its "
                                 f"result (an array of shape {tuple(out.shape)}, whose gradient is not zero): its "
                                 f"inputs would get no gradient through it. Write that step as a kernel on the "
                                 f"tape (a sum as loss[0] += x[i]), or call {self.what}() outside the tape's block "
                                 f"where its result is a constant")


def _float_array(v):
    k = _array_kind(v)
    return k is not None and k[0] == "farray"


def opaque_call(what, fn, args, kwargs):
    """fn(*args, **kwargs), a primitive that is not differentiated, called while tapes record: its
    launches unrecorded, and the call noted on each tape when it takes and gives float arrays."""
    tapes = list(dict.fromkeys(_active))
    with _paused():
        out = fn(*args, **kwargs)
    if any(_float_array(v) for v in _builtins.list(args) + _builtins.list(kwargs.values())):
        outs = [o for o in (out if isinstance(out, tuple) else (out,)) if _float_array(o)]
        if outs:
            for tape in tapes:
                tape._launches.append((_Opaque(what, outs), (), {}))
    return out


def _record(kernel, args, kwargs):
    """A launch, recorded by every tape whose block it is in (an outer tape's too, as the innermost's)."""
    for tape in dict.fromkeys(_active):  # once each, a tape entered twice included
        tape._launches.append((kernel, args, dict(kwargs)))


class Tape:
    """Records kernel launches and runs their adjoints backwards (reverse-mode differentiation).

    ``with tack.Tape() as tape:`` records every launch in the block; ``tape.backward(loss)`` seeds the
    gradient of ``loss`` (a one-element float array) with 1, or ``tape.backward(grads={array: seed})``
    with the given seeds, then runs each recorded kernel's adjoint in reverse order, accumulating into
    the ``.grad`` of the arrays that have one (``requires_grad=True``) and into gradients the tape keeps
    for the others (``tape.gradients[array]``).  ``tape.zero()`` zeroes every gradient; ``tape.reset()``
    forgets the launches and the tape's own gradients.  See docs/differentiation.md.
    """

    def __init__(self):
        self._launches = []
        self._grads = {}  # id(array) -> (array, grad)

    def __enter__(self):
        _active.append(self)
        _core._set_tape(_record)
        return self

    def __exit__(self, *exc):
        if self in _active:
            _active.remove(self)
        if not _active:
            _core._set_tape(None)
        return False

    @property
    def launches(self):
        """The recorded launches: (kernel, args, kwargs), in order."""
        return list(self._launches)

    def _grad_of(self, v):
        """v's gradient: its .grad, else the tape's own, one per storage: a reshaped view of an array
        (x.reshape(...)) shares the gradient of the array it views."""
        key = _storage(v)
        if isinstance(v, _core.Array) and v.grad is not None:
            self._grads.setdefault(key, (v, v.grad))
            return v.grad
        hit = self._grads.get(key)
        if hit is None:
            hit = self._grads[key] = (v, _zeros_like(v))
        g = hit[1]
        if tuple(g.shape) != tuple(v.shape):
            if _size(g) != _size(v) or getattr(v, "strided", False):
                raise ValueError(f"tack.Tape: two arrays of different sizes start at one address "
                                 f"({tuple(v.shape)} and {tuple(g.shape)}): the tape differentiates whole "
                                 f"arrays and their reshaped views, not slices")
            g = g.reshape(*v.shape)
        return g

    def gradient(self, array):
        """The gradient of `array` after backward: its .grad, or the tape's own (None if it has none);
        for a struct array, a struct array of its type holding its float leaves' gradients."""
        lay = _autodiff_structs.struct_of(array)
        if lay is not None:
            return _autodiff_structs.gradient_of(self, array, *lay)
        if isinstance(array, _core.Array) and array.grad is not None:
            return array.grad
        hit = self._grads.get(_storage(array))
        return None if hit is None else hit[1].reshape(*array.shape)

    def backward(self, loss=None, *, grads=None):
        """Run the recorded launches' adjoints in reverse order, seeded with 1 for `loss` (a one-element
        float array) and with each seed of `grads` ({array: seed}, or a list of (array, seed) pairs,
        where arrays are not hashable).  A launch that overwrote an array an earlier launch read is
        refused (ValueError): give each step an array of its own."""
        seeds = list(grads.items()) if isinstance(grads, dict) else list(grads or ())
        if loss is not None:
            size = loss.size if hasattr(loss, "size") else None
            if _array_kind(loss) is None:
                raise TypeError(f"tape.backward(loss): the loss is a one-element float array that a kernel on the "
                                f"tape wrote (loss[0] += ...), not {type(loss).__name__} {loss!r}: a number has no "
                                f"gradient to seed (tack.reduce and the other primitives give numbers and are not "
                                f"differentiated)")
            if size != 1:
                raise ValueError(f"tape.backward(loss): the loss is a one-element array, not {loss!r} (give "
                                 f"grads={{array: seed}} for others)")
            seeds = list(seeds) + [(loss, None)]
        if not seeds:
            raise ValueError("tape.backward: give the loss (a one-element array) or grads={array: seed}")
        for arr, seed in seeds:
            lay = _autodiff_structs.struct_of(arr)
            if lay is not None:  # a struct array: each float leaf seeded from the seed's
                cls, leaves = lay
                for leaf in leaves:
                    if _autodiff_structs._float_leaf(leaf):
                        view = _autodiff_structs.leaf_view(arr, cls, leaf, "tape.backward")
                        # the seed's leaf through the host: on a device it is a strided view
                        _copy(self._grad_of(view), _autodiff_structs.host(_autodiff_structs.leaf_view(
                            seed, cls, leaf, "tape.backward: the seed")))
                continue
            g = self._grad_of(arr)
            if seed is None:
                _fill(g, 1.0)
            else:
                _copy(g, seed)
        # each launch built once (None for a primitive's record, which nothing recomputes)
        built = [None if isinstance(kernel, _Opaque) else _built(kernel, args, kwargs)
                 for kernel, args, kwargs in self._launches]
        written = self._check_overwrites(built)
        if loss is not None and not _within(loss, written):
            raise ValueError("tape.backward(loss): no launch on the tape wrote the loss, so no gradient would reach "
                             "anything: compute it in a kernel launched inside the tape's block")
        for (kernel, _args, _kwargs), b in zip(reversed(self._launches), reversed(built)):
            if isinstance(kernel, _Opaque):
                kernel.check(self)
                continue
            hit, bound, kinds = b
            adj, names, varr = hit[0], hit[1], hit[4]
            extra = []
            for p in names:
                if kinds[p][0] == "fscalar":
                    extra.append(_scalar_grad(bound, kinds))  # a scalar's gradient: kernel.adjoint(grads=...) gives it
                elif p in varr:
                    extra.append(_components(self._grad_of(bound.arguments[p]), varr[p], "tape.backward: a gradient"))
                else:
                    extra.append(self._grad_of(bound.arguments[p]))
            a, kw = _adjoint_args(bound, varr)
            _launch(adj, a, extra, kw, "tape.backward")

    def _check_overwrites(self, built):
        """Refuse a launch that modifies an array an earlier launch on the tape read: that launch's
        adjoint recomputes from the array as it is now.  `built`: each launch's _built, in order (None
        for a primitive's record).  Returns the arrays the launches wrote."""
        read = {}  # storage key -> (kernel, parameter) of the first launch that read it
        floats, seen = [], set()  # the float arrays of the launches, once each: for _check_slices
        written = []  # every array a launch wrote
        for (kernel, _args, _kwargs), b in zip(self._launches, built):
            if isinstance(kernel, _Opaque):  # its results are new arrays, and nothing recomputes it
                written.extend(kernel.outputs)
                continue
            entry, bound, _kinds = b
            loaded, modified = entry[2], entry[3]
            _check_aliases(kernel, bound, entry)
            for p, v in bound.arguments.items():
                if id(v) not in seen and (_kinds[p][0] == "farray" or p in entry[4]):
                    seen.add(id(v))
                    floats.append((kernel, p, v))
            for p in modified:
                key = _storage(bound.arguments[p])
                if key in read:
                    k0, p0 = read[key]
                    raise ValueError(f"tack.Tape: {kernel.__qualname__}() writes its argument '{p}', which "
                                     f"{k0.__qualname__}() read earlier on the tape (as '{p0}'); its adjoint "
                                     f"recomputes from the values it read: give each step an array of its own")
            for p in loaded:
                read.setdefault(_storage(bound.arguments[p]), (kernel, p))
            written.extend(bound.arguments[p] for p in modified)
        _check_slices(floats)
        return written

    def zero(self):
        """Zero every gradient the tape reaches: the tape's own and the .grad of recorded arrays."""
        seen = set()
        for kernel, args, kwargs in self._launches:
            for v in _builtins.list(args) + _builtins.list(kwargs.values()):
                if isinstance(v, _core.Array) and v.grad is not None and id(v) not in seen:
                    seen.add(id(v))
                    v.grad.fill(0)
        for _v, g in self._grads.values():
            _fill(g, 0.0)

    def reset(self):
        """Forget the recorded launches and the tape's own gradients (arrays keep their .grad)."""
        self._launches.clear()
        self._grads.clear()


def _within(v, arrays):
    """Whether v's elements lie in the memory of one of `arrays` (v may be a view of one)."""
    key = _storage(v)
    if key[0] == "obj":  # an object without an address (a DLPack producer): itself
        return any(_storage(a) == key for a in arrays)
    lo, hi = _extent(v)
    for a in arrays:
        k = _storage(a)
        if k[0] == key[0] and k[0] != "obj":
            alo, ahi = _extent(a)
            if alo <= lo and hi <= ahi:
                return True
    return False


def _check_aliases(kernel, bound, hit=None):
    """Refuse a launch whose arguments share memory between a parameter the kernel modifies and
    another it reads: its adjoint recomputes from the values it read (`hit`: the launch's build
    entry, when the caller has it)."""
    if hit is None:
        fn = kernel.py_func if hasattr(kernel, "py_func") else kernel.__wrapped__
        _b, kinds = _param_kinds(fn, bound.args, bound.kwargs)
        hit = _BUILDS[kernel].get(tuple((p, k, _layout(bound.arguments[p])) for p, k in kinds.items()))
    if hit is None:
        return
    loaded, modified = hit[2], hit[3]
    for pm in modified:
        for pl in loaded:
            if pm != pl and _overlap(bound.arguments[pm], bound.arguments[pl]):
                raise ValueError(f"{kernel.__qualname__}: the arguments for '{pm}' (written) and '{pl}' (read) share "
                                 f"memory, and the adjoint recomputes from the values the kernel read: pass "
                                 f"separate arrays")


def _overlap(a, b):
    np = _np()
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return np.may_share_memory(a, b)
    return _storage(a) == _storage(b)


def _check_slices(floats):
    """Refuse two float arrays of a tape's launches ((kernel, parameter, array) each) that share
    memory but are not one array or its reshaped views: the tape keeps a gradient per array, so the
    adds through a slice (x[1:] beside x) would never reach the other's gradient."""
    np = _np()
    spans = sorted(((str(_storage(v)[0]),) + _extent(v) + (v, k, p) for k, p, v in floats), key=lambda t: t[:2])
    active = []  # the spans before this one (by start) that reach past its start: a sweep
    for span in spans:
        dev, lo, hi, v, kernel, p = span
        active = [a for a in active if a[0] == dev and a[2] > lo]
        for dev0, lo0, hi0, v0, k0, p0 in active:
            if lo0 == lo and _size(v0) == _size(v) and (_dense(v0) and _dense(v) or _steps(v0) == _steps(v)):
                continue  # one array, or a reshaped view of it, or a view the same: one gradient
            if np.shares_memory(_layout_of(v0), _layout_of(v), max_work=1 << 20):
                raise ValueError(f"tack.Tape: {k0.__qualname__}()'s argument '{p0}' and {kernel.__qualname__}()'s "
                                 f"argument '{p}' share memory but are not one array (slices of one, such as "
                                 f"x[1:] and x): the tape keeps one gradient per array and its reshaped views, "
                                 f"not slices: pass the whole array and index it in the kernel")
        active.append(span)


def _steps(v):
    """v's shape and strides (a view of a struct array's field is made again for each launch)."""
    if isinstance(v, _core.Array):
        return tuple(v.shape), v._strides
    return tuple(v.shape), tuple(v.strides)


def _dense(v):
    np = _np()
    return v.flags.c_contiguous if isinstance(v, np.ndarray) else not getattr(v, "strided", False)


def _extent(v):
    """[lo, hi): the bytes v's elements span (a strided view's, from its strides)."""
    np = _np()
    if isinstance(v, _core.Array) and not v.strided:
        return v.ptr, v.ptr + v.nbytes
    if isinstance(v, _core.Array):
        item = v.dtype.itemsize
        lo = hi = v.ptr
        for n, st in zip(v.shape, v._strides):
            lo += min(0, (n - 1) * st * item)
            hi += max(0, (n - 1) * st * item)
        return lo, hi + item
    return _byte_bounds(v if isinstance(v, np.ndarray) else np.asarray(v))


def _byte_bounds(a):
    from numpy.lib.array_utils import byte_bounds

    return byte_bounds(a)


def _layout_of(v):
    """A NumPy array with v's address, shape and strides, for np.byte_bounds and np.shares_memory
    (which read no element): v itself when it is NumPy's; for a tack.Array, a view of its address
    however its memory is reached (a device's too: nothing reads it)."""
    np = _np()
    if isinstance(v, np.ndarray):
        return v
    if not isinstance(v, _core.Array):
        iface = getattr(v, "__array_interface__", None)
        return np.asarray(v) if iface is not None else np.zeros(0)
    size = _size(v)
    item = v.nbytes // size if size and not v.strided else v.dtype.itemsize
    shape = tuple(v.shape)
    strides = None
    if v.strided:
        strides = tuple(s * item for s in v._strides)

    class _At:
        __array_interface__ = {"shape": shape, "typestr": f"|V{item}", "data": (v.ptr, True), "strides": strides,
                               "version": 3}

    return np.asarray(_At())


def _shared(a, b):
    """Whether a and b have an element in common (the fields of one record array do not)."""
    np = _np()
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        try:
            return np.shares_memory(a, b, max_work=1 << 20)
        except Exception:  # noqa: BLE001 -- numpy's TooHardError: too many strides to tell, take it as shared
            return True
    return _storage(a) == _storage(b)


def _size(a):
    n = 1
    for d in a.shape:
        n *= d
    return n


def _storage(v):
    if isinstance(v, _core.Array):
        return (v.device, v.ptr)
    iface = getattr(v, "__array_interface__", None)
    if iface is not None:
        return ("cpu", iface["data"][0])
    return ("obj", id(v))


def _fill(g, value):
    if isinstance(g, _core.Array):
        g.fill(value)
    else:
        g[...] = value


def _copy(g, seed):
    if isinstance(g, _core.Array):
        from . import _array

        _array.copyto(g, seed)
    else:
        g[...] = _np().asarray(seed)
