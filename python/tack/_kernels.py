"""Kernels and device functions: the host side of Tack's kernel language.

``@tack.kernel`` turns a plain Python function into a data-parallel kernel
compiled to C (and later to GPU code) on the first call with each new argument
signature; ``@tack.func`` marks a helper function that kernels may call.  Here
too are what goes with them: ``tack.compile_kernels``, the default float and
the race detector's settings, the errors and warnings a kernel raises, and
debug mode (``jit=False``: ``PythonKernel``, a kernel run as Python, with the
views it gives a kernel of its arguments).  The intrinsics a kernel calls
(``tack.sqrt``, ``tack.atomic_add``, ``tack.ndrange`` ...) and the registry
the compiler knows them by are tack._intrinsics'.
"""

from __future__ import annotations

import builtins as _builtins
import types

from . import _core
from . import config as _config
from ._intrinsics import _np, _q
from ._intrinsics import _INTRINSICS  # noqa: F401 (_autodiff.py reads the registry here)

# The host API; the intrinsics' names (tack.sqrt, tack.atomic_add ...) are
# tack._intrinsics' __all__.
__all__ = [
    "kernel",
    "set_default_float",
    "get_default_float",
    "set_check_races",
    "get_check_races",
    "func",
    "compile_kernels",
    "Kernel",
    "PythonKernel",
    "CompileError",
    "RaceWarning",
    "RaceError",
]

Kernel = _core.Kernel


class CompileError(SyntaxError):
    """A kernel could not be compiled.

    Raised on the first call of a kernel with a new argument signature (or by
    ``kernel.compile(...)``) when the function uses Python that the kernel
    language does not support, names something that is not defined, or mixes
    types that do not go together.  Like SyntaxError it carries ``filename``,
    ``lineno``, ``offset`` (1-based column) and ``text`` (the source line), so
    the traceback shows the line with a caret under the offending code.
    For a kernel defined in a notebook cell the message names the cell as
    IPython does ("Cell In[3], line 4"); ``filename`` stays the file IPython
    compiled the cell under, where linecache finds its text.
    """

    def __init__(self, *args):
        super().__init__(*args)
        from ._source import cell_file

        if isinstance(self.filename, str):
            self.filename = cell_file(self.filename)  # "Cell In[3]" from the module: the cell's file

    def __str__(self):
        from ._source import cell_name

        cell = cell_name(self.filename)
        if cell is None or self.lineno is None:
            return super().__str__()
        return f"{self.msg} ({cell}, line {self.lineno})"


CompileError.__module__ = "tack"


class RaceWarning(UserWarning):
    """Two iterations of a parallel loop may touch one array element, one of
    them writing it (docs/language.md, "Races").

    Issued when a kernel is compiled, at the line of the access, when Tack
    cannot prove the iterations independent; a certain conflict is a
    CompileError instead.  ``tack.independent(range(...))`` around a loop's
    range says the iterations are independent and silences both.
    """


RaceWarning.__module__ = "tack"


class RaceError(RuntimeError):
    """Two iterations of a parallel loop touched one array element, one of
    them writing it, in a kernel run under the race detector
    (``check_races=True``; docs/language.md, "Races").

    The message names the kernel, the array and the element, both
    iterations (the loop variables' values) and the file and line of each
    access.  The arrays the kernel writes hold what the iterations that ran
    wrote.
    """


RaceError.__module__ = "tack"
_core._set_hooks(compile_error=CompileError, race_warning=RaceWarning, race_error=RaceError)



def _tp_name(cls):
    """A type's name as the compiled call's messages give it (C's tp_name): ``numpy.ndarray`` for a
    type written in C, the class's own name for one written in Python."""
    if cls.__flags__ & (1 << 9) or cls.__module__ == "builtins":  # Py_TPFLAGS_HEAPTYPE: a Python class
        return cls.__name__
    return f"{cls.__module__}.{cls.__qualname__}"

def compile_kernels(calls, *, threads=None):
    """Compile several kernels at once, ahead of their first calls.

    ``calls`` is a sequence of ``(kernel, args)`` or ``(kernel, args, kwargs)``:
    each kernel with arguments like those it will be called with (only their
    types, shapes' ranks and devices matter; nothing runs; example arrays
    that share memory, one placeholder passed for every array, build both
    the code for calls with separate arrays and the code for arrays that
    overlap).  The compilations
    run side by side, one C compiler process per kernel on up to ``threads``
    cores (default: every core), so a program that uses many kernels pays for
    them once, in about the time of the slowest.  Kernels found in the disk
    cache only load.  Returns the seconds each took, in order.  When some
    fail, the others are still compiled, and the first failure in order is
    raised (a CompileError names its kernel and line).

    >>> import numpy as np, tack
    >>> @tack.kernel
    ... def scale(x, a):
    ...     for i in range(x.shape[0]):
    ...         x[i] *= a
    >>> secs = tack.compile_kernels([(scale, (np.zeros(3), 2.0)), (scale, (np.zeros(3, np.int32), 2))])
    >>> len(secs), scale.specializations
    (2, 2)
    """
    import os
    import time
    from concurrent.futures import ThreadPoolExecutor

    jobs = []
    for n, item in enumerate(calls):
        if not isinstance(item, tuple) or len(item) not in (2, 3):
            raise TypeError(f"compile_kernels: item {n} must be (kernel, args) or (kernel, args, kwargs), "
                            f"not {item!r:.80}")
        k, args = item[0], item[1]
        kwargs = item[2] if len(item) == 3 else {}
        if not isinstance(k, (Kernel, PythonKernel)) or k.is_func:
            raise TypeError(f"compile_kernels: item {n}: {k!r:.80} is not a @tack.kernel")
        if not isinstance(args, (tuple, list)) or not isinstance(kwargs, dict):
            raise TypeError(f"compile_kernels: item {n}: the arguments must be a tuple (and the keywords a dict)")
        jobs.append((k, tuple(args), kwargs))
    if threads is None:
        threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"compile_kernels: threads must be a positive int, not {threads!r}")

    def one(job):
        k, args, kwargs = job
        if isinstance(k, PythonKernel):
            return 0.0  # runs as Python: nothing to compile
        t = time.perf_counter()
        k.compile(*args, **kwargs)  # releases the GIL while the C compiler runs
        return time.perf_counter() - t

    if not jobs:
        return []
    with ThreadPoolExecutor(max_workers=min(threads, len(jobs))) as pool:
        futures = [pool.submit(one, j) for j in jobs]
    return [f.result() for f in futures]  # the first failure, in order, raises


def _float_choice(value, what):
    """tack.f32 or tack.f64 from any dtype-like (tack.f64, np.float64, "float64")."""
    np = _np()
    try:
        value_dt = np.dtype(value) if isinstance(value, type) else value
    except TypeError:
        value_dt = value
    for d in (_core.f32, _core.f64):
        try:
            if d == value_dt:
                return d
        except Exception:
            pass
    raise ValueError(f"{what} must be tack.f32 or tack.f64, not {value!r:.60}")


def set_default_float(dtype):
    """Set the default float of every kernel defined from now on: ``tack.f32``
    (Tack's default, so kernels run on GPUs without double precision) or
    ``tack.f64`` (NumPy's types everywhere).  A kernel given
    ``default_float=`` keeps its own; kernels already defined keep theirs.
    It is the ``default_float`` setting (``tack.config``), whose initial value
    the environment variable ``TACK_DEFAULT_FLOAT`` (``f32`` or ``f64``) gives.

    >>> import tack
    >>> tack.set_default_float(tack.f64)
    >>> @tack.kernel
    ... def scale(x, out):
    ...     for i in range(x.shape[0]):
    ...         out[i] = i * 0.1
    >>> scale.default_float
    tack.f64
    >>> tack.set_default_float(tack.f32)
    """
    _config.set("default_float", _float_choice(dtype, "tack.set_default_float").name)


def get_default_float():
    """The default float of kernels defined now (``tack.f32`` unless set)."""
    return getattr(_core, _config.get("default_float"))


def set_check_races(on):
    """Run the kernels defined from now on under the race detector (``True``)
    or not (``False``, Tack's default).  A kernel given ``check_races=``
    keeps its own; kernels already defined keep theirs.  It is the
    ``check_races`` setting (``tack.config``), whose initial value the
    environment variable ``TACK_CHECK_RACES=1`` gives.

    Under the detector, the parallel loops whose races the compiler cannot
    decide (those it warns of with ``tack.RaceWarning``, and those
    ``tack.independent`` vouches for) record every access to the arrays they
    write, in their bodies and in the ``@tack.func`` functions they call, on
    the CPU or as Python (``jit=False``), and the first two iterations that touch one element,
    one of them writing it, raise ``tack.RaceError`` (docs/language.md,
    "Races").

    >>> import tack
    >>> tack.set_check_races(True)
    >>> @tack.kernel
    ... def scatter(out, idx, x):
    ...     for i in range(x.shape[0]):
    ...         out[idx[i]] = x[i]
    >>> scatter.check_races
    True
    >>> tack.set_check_races(False)
    """
    if not isinstance(on, _builtins.bool):
        raise TypeError(f"tack.set_check_races: expected True or False, not {on!r:.60}")
    _config.set("check_races", on)


def get_check_races():
    """Whether kernels defined now run under the race detector (``False`` unless set)."""
    return _config.get("check_races")


def kernel(fn=None, *, checks=None, fast_math=False, flush_denormals=False, jit=None,
           default_float=None, check_races=None, optimize=None):
    """Compile a Python function as a data-parallel kernel.

    Use bare (``@tack.kernel``) or with options
    (``@tack.kernel(checks=False, fast_math=True)``).  Every ``for`` loop over
    ``range(...)`` or ``tack.ndrange(...)`` at the top level of the body runs
    in parallel.  ``checks=False`` removes bounds, division-by-zero and assert
    checks; ``optimize=False`` compiles without the optimizing passes
    (folding, check hoisting, strength reduction, privatization, SIMD lanes),
    for comparing; ``fast_math=True`` lets the C compiler reassociate floating point.
    An option left out (None) takes its setting's value when the kernel is
    defined: ``tack.config.checks``, ``tack.config.optimize``,
    ``tack.config.check_races``, ``tack.config.default_float`` and
    ``tack.config.disable_jit`` (docs/configuration.md); an option given
    always wins.
    ``default_float`` (``tack.f32`` or ``tack.f64``; by default the process's,
    see ``tack.set_default_float``) is the type of a float that meets no float
    type: an integer meeting a Python float, ``/`` between integers,
    ``float()`` (docs/language.md, "The type of every operation").
    ``flush_denormals=True`` flushes subnormal floats to zero while the kernel
    runs (FTZ/DAZ on the threads that run it, put back after; the GPU
    compilers' flush option), for speed where values decay towards zero.

    ``check_races=True`` (by default the process's, see
    ``tack.set_check_races``) runs the parallel loops whose races the
    compiler cannot decide under a run-time race detector on the CPU: the
    first two iterations that touch one element, one of them writing it,
    raise ``tack.RaceError`` naming both and their lines (docs/language.md,
    "Races") -- accesses inside the ``@tack.func`` functions the loops call
    included, and in a kernel run as Python (``jit=False``) too; a GPU
    device refuses it with a CompileError.

    ``jit=False`` runs the function as plain Python instead (a
    ``tack.PythonKernel``: serially, on NumPy views of the arrays, so ``print``
    and ``pdb`` work); ``jit=None``, the default, compiles unless the
    ``tack.config.disable_jit`` is set (its initial value: the environment
    variable ``TACK_DISABLE_JIT=1``).
    """
    if jit is not None and not isinstance(jit, _builtins.bool):
        raise TypeError(f"tack.kernel: jit must be True, False or None, not {jit!r:.60}")
    dfloat = get_default_float() if default_float is None else _float_choice(default_float, "default_float")
    for what, v in (("check_races", check_races), ("optimize", optimize)):
        if v is not None and not isinstance(v, _builtins.bool):
            raise TypeError(f"tack.kernel: {what} must be True, False or None, not {v!r:.60}")
    races = _config.get("check_races") if check_races is None else check_races
    checks = _config.get("checks") if checks is None else checks
    optimize = _config.get("optimize") if optimize is None else optimize
    if jit is None:
        jit = not _config.get("disable_jit")

    def wrap(f):
        if not jit:
            if not callable(f):
                raise TypeError(f"tack.kernel expects a function, not {type(f).__name__}")
            return PythonKernel(f, checks=checks, fast_math=fast_math, flush_denormals=flush_denormals,
                                default_float=dfloat, check_races=races, optimize=optimize)
        from . import _vector_args

        return _core.Kernel(f, checks=checks, fast_math=fast_math, flush_denormals=flush_denormals,
                            default_float=dfloat, check_races=races, optimize=optimize,
                            by_value=_builtins.bool(isinstance(f, types.FunctionType) and _vector_args.params(f)))

    if fn is None:
        return wrap
    if not callable(fn):
        raise TypeError(
            f"tack.kernel expects a function (or keyword options), not {type(fn).__name__}"
        )
    return wrap(fn)


# ------------------------------------------------------------- debug mode

_VectorView = None


def _vector_view_type():
    """An ndarray subclass whose elements (rows) read and write components by name."""
    global _VectorView
    if _VectorView is None:
        np = _np()

        def component(k):
            def put(self, value):  # v.y = s on a view (a kernel's own stores go through tack._debug's setattr)
                self[..., k] = value

            return property(lambda self: self[..., k] if self.ndim > 1 else self[k], put)

        _VectorView = type("VectorView", (np.ndarray,), {n: component(k) for k, n in enumerate("xyzw")})
    return _VectorView


def _debug_view(kernel_name, param, obj):
    """``obj`` as the function sees it in debug mode: arrays as NumPy views
    sharing their storage (strided views as they are, of a Tack dtype, read-only where the
    array is), scalars unchanged.  Refuses what a compiled call refuses, and
    arrays on other devices than the CPU."""
    np = _np()

    def refuse(exc, what):
        raise exc(f"argument '{param}' of {kernel_name}() (jit=False): {what}")

    if isinstance(obj, (_builtins.bool, int, float, complex, np.generic)):
        from . import _array

        if isinstance(obj, np.float16) or (isinstance(obj, np.generic) and _array._is_bfloat16(obj.dtype)):
            return np.float32(obj)  # a storage type's scalar: its value, an f32, as compiled (lower.c)
        return obj
    if isinstance(obj, _core.Array):
        if obj.device != "cpu":
            refuse(ValueError, f"the array is on {obj.device}, and a kernel run as Python (jit=False or "
                               f"TACK_DISABLE_JIT) runs on the CPU: pass array.to('cpu') and copy the "
                               f"results back, or compile the kernel")
        if obj.dtype is _core.bf16:  # its bits (tack._bf16), as NumPy has no bfloat16
            if obj.strided:
                refuse(ValueError, "a strided bf16 view cannot be run as Python (NumPy has no bfloat16 to "
                                   "view it with); pass a contiguous copy and copy the results back")
            from . import _bf16

            return _bf16.view_of_array(obj)
        view = np.from_dlpack(obj)  # a view; read-only where the array is
        if obj.dtype in (_core.quat, _core.quatd):  # quaternions and transforms: their own algebra (tack._quat)
            view = view.view(_q().Quat)
        elif obj.dtype in (_core.transform, _core.transformd):
            view = view.view(_q().Transform)
        elif len(obj.dtype.shape) == 1:  # vectors: v.x, v.y ... read components, as in a kernel
            view = view.view(_vector_view_type())
        return view
    if isinstance(obj, np.ndarray):
        view = obj
        from . import _array

        if _array._is_bfloat16(obj.dtype):  # ml_dtypes' bfloat16: its bits (tack._bf16)
            from . import _bf16

            return _bf16.view_of_ml_dtypes(obj)
    elif hasattr(type(obj), "__dlpack__"):
        kind = obj.__dlpack_device__()[0]
        if int(kind) not in (1, 3, 11):  # kDLCPU, kDLCUDAHost, kDLROCMHost
            refuse(ValueError, f"the {type(obj).__name__} is on DLPack device {tuple(obj.__dlpack_device__())}, "
                               f"and a kernel run as Python runs on the CPU: move it to the CPU first")
        try:  # PyTorch's conjugate and negative views, refused as in a compiled call
            _core._refuse_lazy_view(obj)
        except BufferError as e:
            refuse(ValueError, str(e))
        try:
            view = np.from_dlpack(obj)
        except RuntimeError:  # NumPy imports no bfloat16 ("Unsupported dtype"): Tack does, then its bits
            arr = _core.from_dlpack(obj)
            if arr.dtype is not _core.bf16:
                raise
            return _debug_view(kernel_name, param, arr)
        if view.flags.writeable and type(obj).__module__.split(".")[0] in ("jax", "jaxlib"):
            view.flags.writeable = False  # JAX arrays are immutable, as in a compiled call
    else:
        try:
            view = np.asarray(memoryview(obj))
        except TypeError:
            hint = ""
            if isinstance(obj, (tuple, list)):  # perhaps a vector's components, as Warp takes them
                hint = (f"; a vector, matrix or quaternion is passed by value to a parameter annotated with its "
                        f"type, {param}: tack.vec3 (docs/language.md, \"Vector arguments\")")
            refuse(TypeError, "expected a tack.Array, a NumPy array (or another buffer object), a DLPack "
                              f"producer or a bool/int/float or NumPy scalar (got {type(obj).__name__}){hint}")
    if view.strides and any(s % view.itemsize for s in view.strides):
        refuse(ValueError, f"a {type(obj).__name__} with strides {view.strides} in bytes, not multiples of its "
                           f"{view.itemsize}-byte elements, cannot be indexed by a kernel; pass a copy "
                           f"(x.copy()) and copy the results back into it")
    try:
        _core._dtype(view.dtype)
    except (TypeError, ValueError):
        refuse(TypeError, f"an array of NumPy dtype {view.dtype} has no Tack dtype")
    return view


class PythonKernel:
    """A kernel run as plain Python: ``@tack.kernel(jit=False)``, or any
    ``@tack.kernel`` while ``TACK_DISABLE_JIT=1`` was set at import.

    A call binds the arguments as Python does and first checks the kernel as
    the compiler does for the call's signature (its front end, types and race
    check, without a C compiler: a ``tack.CompileError`` or ``RaceWarning``
    comes as from a compiled call), then runs the function once, serially:
    parallel loops run in order, so ``print()`` output appears in loop order
    and ``breakpoint()``/pdb stop where they are written.  Arrays arrive as
    NumPy views sharing their storage (a ``tack.Array`` on the CPU, a NumPy
    array, a CPU DLPack producer), read-only where the array is.  The body
    computes in the compiled kernel's types (docs/language.md, "The type of
    every operation"): it runs as a copy of the function whose operators,
    stores and calls apply Tack's type rule (tack._debug), so an f32 kernel
    computes in f32, ``bool + bool`` is 2, ``int(nan)`` is 0 and an int8
    store wraps, and it raises what a compiled kernel raises (IndexError,
    ZeroDivisionError, AssertionError while ``checks=True``).  Arrays on a
    GPU are refused (no hidden copies).  ``check_races=True`` runs the
    compiled kernel's race detector here too (tack._debug_races): the loops
    and accesses the compiler would watch record which iteration read or
    wrote each element, and the first two iterations that meet raise the
    same ``tack.RaceError``.  ``flush_denormals=True`` sets flush-to-zero on the calling
    thread while the function runs, as the compiled kernel does, and puts
    the mode back after.
    """

    jit = False
    is_func = False

    def __init__(self, fn, *, checks=True, fast_math=False, flush_denormals=False, default_float=None,
                 check_races=False, optimize=True):
        import functools
        import inspect

        functools.update_wrapper(self, fn)
        self.py_func = fn
        self.checks = _builtins.bool(checks)
        self.check_races = _builtins.bool(check_races)
        self.fast_math = _builtins.bool(fast_math)
        self.flush_denormals = _builtins.bool(flush_denormals)
        self.optimize = _builtins.bool(optimize)  # kept for the compiled kernel it stands for; Python has no passes
        self.default_float = get_default_float() if default_float is None else _float_choice(default_float,
                                                                                             "default_float")
        self._signature = inspect.signature(fn)
        # the compiler's view of the same function and options: asked for the
        # IR of each new signature, never built
        self._checker = _core.Kernel(fn, checks=self.checks, fast_math=self.fast_math,
                                     flush_denormals=self.flush_denormals, default_float=self.default_float,
                                     check_races=self.check_races)
        self._facts = {}

    def _signature_key(self, views):
        np = _np()
        key = []
        arrays = []
        for v in views.values():
            if isinstance(v, np.ndarray):
                key.append((type(v), v.dtype.str, v.shape[1:] if type(v) is not np.ndarray else (), v.ndim,
                            v.flags.writeable))
                arrays.append(v)
            elif isinstance(v, np.generic):
                key.append(v.dtype.str)
            elif type(v) is int:
                key.append((int, v >= 1 << 63))  # from 2**63 a Python int is carried as a u64
            else:
                key.append(type(v))
        for a in range(len(arrays)):  # arguments sharing memory compile differently
            for b in range(a):
                if np.may_share_memory(arrays[a], arrays[b]):
                    key.append((a, b))
        return tuple(key)

    def __call__(self, *args, **kwargs):
        """Run the kernel as Python on these arguments, after the compiler's
        checks for their signature (see the class's docstring)."""
        from . import _array, _bvh, _debug, _hashgrid, _structs

        if _core._capture_active():  # tack.capture: a Python run would happen now, not at the replays
            raise ValueError(f"kernel '{self.__name__}' runs as Python (jit=False) and cannot be captured by "
                             f"tack.capture: call it outside the block, or compile it")
        out = _bvh.bvh_call(self, args, kwargs)  # a tack.Bvh or tack.Mesh argument: its tree build
        if out is not NotImplemented:
            return out
        if _hashgrid.has_grid(args, kwargs):  # a tack.HashGrid argument: the kernel's grid build
            out = _hashgrid.grid_call(self, args, kwargs)
            if out is not NotImplemented:
                return out
        if _structs.needs_build(self, args, kwargs):  # struct arrays or values, vectors by value: the struct build
            try:
                built, expanded = _structs.build_for(self, args, kwargs)
            except _structs._NoBind:
                pass  # the binding below raises Python's own TypeError
            else:
                return built(*expanded)
        if "stream" in kwargs and "stream" not in self._signature.parameters:
            # kernel(..., stream=s), checked as a compiled call checks it; Python runs on the host,
            # where every call is done when it returns: a stream orders nothing (docs/backends.md)
            kwargs = dict(kwargs)
            s = kwargs.pop("stream")
            from ._streams import Stream

            if s is not None and not isinstance(s, Stream):
                raise TypeError(f"stream= takes a tack.Stream (or None), not {type(s).__name__}")
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        name = self.__qualname__
        views = {p: _debug_view(name, p, v) for p, v in bound.arguments.items()}
        key = self._signature_key(views)
        facts = self._facts.get(key)
        if facts is None:
            # the compiler's checks for this signature: a CompileError (or
            # RaceWarning) exactly as a compiled call gives it
            ir, ranges, aliases = _debug.check(self._checker, bound.args, bound.kwargs)
            races = None
            if self.check_races:  # the loops and accesses the compiled detector watches
                from . import _debug_races

                races = _debug_races.parse(ir)
            facts = self._facts[key] = _debug.ir_facts(ir) + (ranges, races, aliases)
        local_types, written, atomic_lines, choices, funcs, ranges, races, aliases = facts
        for i, (p, v) in enumerate(views.items()):  # what tack_launch checks, in its order
            if i < len(ranges):
                _debug.check_int(self.__name__, p, v, ranges[i])
            if p in written and isinstance(v, _np().ndarray) and not v.flags.writeable:
                raise ValueError(f"{name}() writes to parameter '{p}', but the array passed for it (a "
                                 f"{_tp_name(type(bound.arguments[p]))}) is read-only")
            if p in written and isinstance(v, _np().ndarray) and _self_overlaps(v):
                raise ValueError(f"kernel '{self.__name__}' writes to parameter '{p}' but elements of the view "
                                 "passed for it share memory (a zero or overlapping stride, as "
                                 "numpy.broadcast_to gives): the writes would collide. Pass an array whose "
                                 "elements are apart (x.copy(), and copy the results back where they are wanted)")
        _check_aliases(self.__name__, views, aliases, written)
        if not _debug._CALLS:
            _debug._register_calls()
        ctx = _debug._Ctx(self.default_float, self.checks, self.__name__)  # as the compiled kernel names itself
        for v in views.values():  # an argument is an array, not a matrix value, whatever its shape
            if isinstance(v, _np().ndarray):
                ctx._arrays[id(v)] = v
        ctx.local_types = local_types
        ctx.atomic_lines = atomic_lines
        ctx.choices = choices
        ctx.funcs = funcs
        if races is not None and races[0]:
            from . import _debug_races

            from ._source import shown_file

            ctx.races = _debug_races.Detector(self.__name__, shown_file(self.py_func.__code__.co_filename), races,
                                              views)
        flag = _array._as_python
        flag.depth += 1  # tack.zeros(...) in the body: a NumPy local array
        fpmode = None
        try:
            if self.flush_denormals:  # FTZ/DAZ on this thread, as the compiled kernel sets it (fpmode.c)
                try:
                    fpmode = _core._flush_enter()
                except ValueError:
                    raise ValueError(f"kernel '{self.__name__}' asks for flush_denormals=True, but Tack cannot "
                                     f"set flush-to-zero on this CPU (only x86-64 and aarch64): compile it "
                                     f"without the option") from None
            t0 = _core._profile_now() if _core._profile_active() else 0  # tack.profile(): a launch in Python
            _debug.run(ctx, self.py_func, views)
            if t0:
                _core._profile_record("launch", "launch", self.__name__, "python", t0, _core._profile_now())
        finally:
            if fpmode is not None:
                _core._flush_leave(fpmode)
            flag.depth -= 1
        from . import _autodiff_run

        if _autodiff_run._active:  # a tack.Tape records the launch, as the compiled kernel's call does
            _autodiff_run._record(self, args, kwargs)

    def adjoint(self, *args, **kwargs):
        """Run the kernel's adjoint (reverse mode) as Python, as the compiled kernel's
        ``adjoint`` runs it compiled (docs/differentiation.md)."""
        from . import _autodiff_run

        return _autodiff_run.adjoint(self, args, kwargs)

    def compile(self, *args, **kwargs):
        """Nothing to build: the kernel runs as Python (jit=False).  The
        compiler's checks run for these arguments, as they would on a call."""
        from . import _debug

        _debug.check(self._checker, args, kwargs)

    @property
    def specializations(self):
        """0: a kernel run as Python builds nothing (``Kernel.specializations``
        counts the compiled builds)."""
        return 0

    def __repr__(self):
        return f"<tack.PythonKernel {self.__qualname__} (jit=False: runs as Python)>"


def func(fn=None):
    """Mark a Python function as a device function that kernels may call.

    The function is typed and compiled per call site, inside the calling
    kernel.  Called from ordinary Python it simply runs the Python function.
    """

    def wrap(f):
        return _core.Kernel(f, is_func=True)

    if fn is None:
        return wrap
    return wrap(fn)


def _self_overlaps(v) -> bool:
    """Whether two elements of the NumPy view ``v`` share memory (a zero or
    overlapping stride), by the rule a compiled launch checks
    (tack_array_self_overlaps): sorted by the size of their strides, each
    axis must step past everything the smaller axes span."""
    if v.size <= 1:  # no two elements (an empty array's strides are anything)
        return False
    axes = sorted((abs(st), n) for st, n in zip(v.strides, v.shape) if n > 1)
    reach = v.itemsize
    for st, n in axes:
        if st < reach:
            return True
        reach += st * (n - 1)
    return False


def _check_aliases(kernel_name, views, aliases, written):
    """Refuse, as tack_launch does (runtime/program.c, check_aliases), a pair of
    array arguments that the compiler marked (a parallel loop would race
    through them if they were one array, or views sharing bytes) when the
    NumPy views passed for them are one array or share memory.  One array
    for a pair marked only for partial sharing (an update in place) runs."""
    np = _np()
    names = list(views)
    for i, marks in enumerate(aliases):
        if marks is None:
            continue
        same_mask, part_mask = marks
        a = views[names[i]]
        for j in range(i + 1, min(len(names), 64)):
            b = views[names[j]]
            if not ((same_mask | part_mask) >> j & 1) or not isinstance(a, np.ndarray) \
                    or not isinstance(b, np.ndarray) or not _arrays_overlap(a, b):
                continue
            same = _same_array(a, b)
            if same and not same_mask >> j & 1:
                continue
            w, r = (names[i], names[j]) if names[i] in written else (names[j], names[i])
            raise ValueError(
                f"arguments '{names[i]}' and '{names[j]}' of kernel '{kernel_name}' "
                f"{'are the same array' if same else 'share memory'}, and a parallel loop of the kernel writes "
                f"'{w}' where its iterations also read or write '{r}' at other elements: the iterations would race "
                f"through the shared memory and the result would change from run to run. Pass a copy for the one "
                f"that is only read (np.copy(...)), or separate output arrays")


def _byte_blocks(v):
    """The byte strides of `v`'s axes of extent over 1, innermost first, with the
    innermost axes that run on contiguously merged into one block; and that
    block's bytes (runtime/strided.c, byte_blocks)."""
    block, inner, rest = v.itemsize, True, []
    for st, n in zip(reversed(v.strides), reversed(v.shape)):
        if n > 1:
            if inner and st == block:
                block *= n
            else:
                inner = False
                rest.append(st)
    return rest, block


def _arrays_overlap(a, b) -> bool:
    """Whether the NumPy views `a` and `b` share a byte, by the rule a compiled
    launch uses (tack_arrays_overlap, rt_strided_overlap): the byte ranges they
    span, then their residues modulo the common divisor of their strides;
    conservative, never a false "apart"."""
    import math

    if not a.size or not b.size or not _np().may_share_memory(a, b):  # NumPy's test of the byte spans
        return False
    a0, b0 = a.__array_interface__["data"][0], b.__array_interface__["data"][0]
    if a.flags.c_contiguous and b.flags.c_contiguous:
        return a0 < b0 + b.nbytes and b0 < a0 + a.nbytes

    def span(v):
        lo, hi = 0, v.itemsize
        for st, n in zip(v.strides, v.shape):
            if n > 1:
                lo, hi = lo + min(st * (n - 1), 0), hi + max(st * (n - 1), 0)
        return lo, hi

    (alo, ahi), (blo, bhi) = span(a), span(b)
    if a0 + ahi <= b0 + blo or b0 + bhi <= a0 + alo:
        return False
    (sa, ia), (sb, ib) = _byte_blocks(a), _byte_blocks(b)
    g = 0
    for st in sa + sb:
        g = math.gcd(g, st)
    if g == 0 or ia >= g or ib >= g:
        return True
    d = (b0 - a0) % g  # Python's remainder is already non-negative
    return d < ia or d + ib > g


def _same_array(a, b) -> bool:
    """Whether two NumPy views are one array: the same first element, dtype and
    shape, and the same strides (runtime/program.c, same_array)."""
    if a.__array_interface__["data"][0] != b.__array_interface__["data"][0] or a.dtype != b.dtype \
            or a.shape != b.shape or a.flags.c_contiguous != b.flags.c_contiguous:
        return False
    return a.flags.c_contiguous or a.strides == b.strides
