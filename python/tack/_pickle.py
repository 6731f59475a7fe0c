"""How Tack's objects pickle: what Dask, multiprocessing and concurrent.futures
use to send arguments, results and task functions to other processes.

Arrays.  A CPU array pickles as NumPy would pickle its values.  The NumPy
array handed to pickle shares Tack's storage (``np.from_dlpack``), so
protocol 5 with out-of-band buffers -- what ``dask.distributed`` uses --
sends the bytes without copying them on this side.  It unpickles as a new,
writable CPU array owning a copy, on the CPU whatever the receiving
process's default device.  An array on any other device is refused: pickling
it would copy it to the host behind the caller's back (and unpickling would
have to guess a device), so the caller says which copy they mean.

Kernels.  A kernel pickles as a function does.  One that its module's
namespace holds under its name pickles by that name and is imported again on
the other side.  Any other kernel -- one defined in a script (``__main__``),
in a notebook, or inside a function -- pickles as its Python function, its
options (``checks``, ``fast_math``, ``flush_denormals``) and its source text, which Tack compiles
from: a pickler that sends functions by value (cloudpickle, which Dask uses)
does not keep the source file's name, and the receiving machine need not have
the file.  Plain pickle sends functions only by name, so it refuses a kernel
defined inside a function as it refuses such a function; a script's kernel,
whose name its function's name finds, sends a copy of its function found by a
name of its own (``by_name``), which is how multiprocessing and
concurrent.futures send a script's kernel to a pool.  Either way the
receiving process compiles the kernel on its first call, or loads it from the
kernel cache.

The text that came with a kernel is that kernel's alone: it goes on a copy
of the function pickle gave back, never on that function, which may be the
receiving process's own (a function sent by name: ``k = tack.kernel(body)``
in an importable module), whose kernels compile the file it imported.  And
it is compiled only while it is the text of the function the kernel runs:
where the function came by name from a file edited since the pickling, the
first call raises the CompileError an edited file gets
(docs/design/decisions.md, "A pickled kernel's source").

The extension's ``Array.__reduce__`` and ``Kernel.__reduce__`` call
``reduce`` below (handed over at import through ``_core._set_hooks``).
"""

from __future__ import annotations

import sys
import types

from . import _core
from ._array import _numpy, array


def reduce(obj, protocol=None):
    if isinstance(obj, _core.Array):
        return _reduce_array(obj)
    if isinstance(obj, _core.Kernel):
        return _reduce_kernel(obj, protocol)
    raise TypeError(f"cannot pickle {type(obj).__name__!r} object")


def _reduce_array(a):
    if a.device != "cpu":
        raise TypeError(
            f"cannot pickle a tack.Array on device '{a.device}': that would copy it to the host "
            f"without being asked. Send a host copy (a.numpy(), or a.to('cpu')) and make the array "
            f"on the other side with tack.array(values, device=...)"
        )
    if a.dtype is _core.bf16:  # NumPy imports no bfloat16: its bits, which need no ml_dtypes on either side
        from . import _bf16

        return (_array_bits, (_numpy().array(_bf16.view_of_array(a.copy() if a.strided else a)), a.dtype.name))
    return (_array, (_numpy().from_dlpack(a), a.dtype.name))


def _array(values, dtype_name):
    return array(values, dtype_name, device="cpu")


def _array_bits(bits, dtype_name):
    out = _core.empty(bits.shape, getattr(_core, dtype_name), "cpu")
    out._copy_from(_numpy().ascontiguousarray(bits))
    return out


_BY_NAME = ".__tack_by_name__"


def _reduce_kernel(k, protocol=None):
    fn = k.__wrapped__
    module = sys.modules.get(fn.__module__)
    found = module
    for part in fn.__qualname__.split(".") if module is not None else ():
        found = getattr(found, part, None)
    if found is k and (fn.__module__ != "__main__" or (protocol is not None and protocol < 4)):
        # by name, as pickle sends a function; a script's kernel too below protocol 4, which sends
        # by_name's dotted name as getattr of the kernel itself (see by_name)
        return fn.__qualname__
    from ._source import getsourcelines

    lines, first = getsourcelines(fn)  # the source's errors (none available, edited) are raised here
    source = ("".join(lines), first, fn.__code__.co_filename)
    if found is k:  # a script's kernel: its function as a copy plain pickle finds by name (by_name)
        fn = k.__tack_by_name__
    fn = fn.__dict__.get("__tack_function__", fn)  # an unpickled kernel's: the function pickle gave it
    return (_kernel, (fn, source, k.checks, k.fast_math, k.is_func, k.flush_denormals, k.default_float.name,
                      k.check_races, k.optimize))


def _kernel(fn, source, checks, fast_math, is_func, flush_denormals=False, default_float=None, check_races=False,
            optimize=True):
    text, first, filename = source
    given = fn
    fn = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    fn.__dict__.update(given.__dict__)
    fn.__qualname__, fn.__module__, fn.__doc__ = given.__qualname__, given.__module__, given.__doc__
    if fn.__qualname__.endswith(_BY_NAME):  # by_name's copy: the kernel keeps its function's name
        fn.__qualname__ = fn.__qualname__[: -len(_BY_NAME)]
    fn.__kwdefaults__, fn.__annotations__ = given.__kwdefaults__, given.__annotations__
    if fn.__code__.co_filename != filename:  # cloudpickle renames it: error messages name the real file
        fn.__code__ = fn.__code__.replace(co_filename=filename)
    fn.__tack_source__ = (text.splitlines(True), first)  # the copy's only (see the module's docstring)
    fn.__tack_function__ = given
    from . import _vector_args

    return _core.Kernel(fn, checks=checks, fast_math=fast_math, is_func=is_func, flush_denormals=flush_denormals,
                        default_float=getattr(_core, default_float or "f32"), check_races=check_races,
                        optimize=optimize, by_value=not is_func and bool(_vector_args.params(fn)))


def by_name(k):
    """Kernel.__tack_by_name__: a copy of a script's kernel's function that plain pickle sends by name.

    Pickle sends a function by the name its ``__qualname__`` gives, and refuses it unless that name
    finds the function again; a script's kernel (``__main__.step``) holds that name, so its function
    cannot go so.  The copy's name is the kernel's attribute (``step.__tack_by_name__``), which finds the
    copy in this process and, in a process that made the script's kernels again (fork, or
    multiprocessing's spawn, which imports the script as ``__mp_main__`` and calls it ``__main__``), that
    process's own copy.  cloudpickle sends ``__main__``'s functions by value whatever their name, as before.
    Below protocol 4, pickle sends a dotted name as ``getattr(kernel, ...)``, pickling the kernel again,
    so there a script's kernel goes by its own name (the receiving process's kernel of that name).
    """
    fn = k.__wrapped__
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__dict__.update(fn.__dict__)
    copy.__qualname__, copy.__module__, copy.__doc__ = fn.__qualname__ + _BY_NAME, fn.__module__, fn.__doc__
    copy.__kwdefaults__, copy.__annotations__ = fn.__kwdefaults__, fn.__annotations__
    return copy


_core._set_hooks(reduce=reduce, by_name=by_name)
