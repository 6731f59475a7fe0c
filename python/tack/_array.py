"""Array creation and conversion: the NumPy-facing side of tack.Array.

Creation functions follow NumPy and the array API standard: ``empty``,
``zeros``, ``ones``, ``full`` take a shape, a dtype and a device.  Tack's
default float is f32 (the kernel language's default), so ``tack.zeros(4)``
and ``tack.array([1.0, 2.0])`` are f32, while NumPy arrays keep their dtype.

``tack.array`` always copies.  ``Array.numpy()`` and ``np.asarray(array)``
always copy.  Sharing storage goes through DLPack or ``array_from_ptr``.
"""

from __future__ import annotations

import builtins
import numbers
import threading

from . import _core, _structs

# Set while a kernel runs as plain Python (jit=False or TACK_DISABLE_JIT):
# a local array made there (tack.zeros(8) in the kernel's body) is a NumPy
# array, as np.zeros(8) is, so that it can be written element by element,
# as the compiled kernel writes its local array.
class _Depth(threading.local):
    depth = 0  # a class attribute: a thread that never ran a kernel as Python reads 0 without a miss


_as_python = _Depth()


def _in_python_kernel():
    return _as_python.depth > 0


def _local_array(shape, dtype, fill):
    """A kernel's local array when the kernel runs as Python: a NumPy array
    of the Tack dtype's NumPy layout (vectors and matrices as trailing axes,
    with v.x ... on a vector array's rows, as the kernel's parameters get)."""
    import numpy as np

    from . import _kernels

    dt = globals()["dtype"](dtype) if dtype is not None else _core.f32
    if dt is _core.bf16:  # its bits, as debug mode holds bf16 arrays (tack._bf16)
        from . import _bf16, _debug

        out = _bf16.zeros(_shape_tuple(shape))
        if fill is not None:
            out[...] = _bf16.bits_of(fill, lambda x: _debug.convert(np.dtype(np.float32), x))
        return out
    out = np.zeros(_shape_tuple(shape), dt.numpy)
    if fill is not None:
        out[...] = fill
    if len(dt.shape) == 1:
        out = out.view(_kernels._vector_view_type())
    return out

_np = None


def _struct_class(dtype):
    if type(dtype) is _core.DType or dtype is None:  # the common cases, without a getattr that misses
        return None
    return dtype if isinstance(dtype, type) and getattr(dtype, "__tack_struct__", None) is not None else None


def _numpy():
    # NumPy is imported on first use, so `import tack` stays cheap.
    global _np
    if _np is None:
        import numpy

        _np = numpy
    return _np


def dtype(x) -> _core.DType:
    """Return the Tack dtype for ``x``.

    ``x`` may be a Tack dtype (``tack.f32``), a name (``"f32"``,
    ``"float32"``, ``"vec3"``), a NumPy dtype or scalar type
    (``np.float32``, ``np.dtype((np.float32, 3))``), or a Python type:
    ``float`` is f32, Tack's default float (as in a kernel's annotations and
    ``float(x)`` in a kernel), ``int`` is i64 and ``bool`` is bool.  Use
    ``tack.f64`` (or ``np.float64``, ``"f64"``) for 64-bit floats.

    >>> tack.dtype("float32") is tack.f32
    True
    >>> tack.dtype(float), tack.dtype(np.float64), tack.dtype(int)
    (tack.f32, tack.f64, tack.i64)
    """
    return _core._dtype(x)


def _shape_tuple(shape):
    if isinstance(shape, numbers.Integral):
        return (int(shape),)
    return tuple(shape)


def empty(shape, dtype=None, *, device=None) -> _core.Array:
    """A new array with uninitialized values.  ``dtype`` defaults to f32 (a
    ``@tack.struct`` class: a ``tack.StructArray``)."""
    if _as_python.depth > 0:
        return _local_array(shape, dtype, None)  # zeros, as a compiled kernel's
    if _struct_class(dtype) is not None:
        return _structs.new_array(shape, dtype, device, False)
    return _core.empty(shape, _core._dtype(dtype) if dtype is not None else _core.f32, device)


def zeros(shape, dtype=None, *, device=None, requires_grad=False) -> _core.Array:
    """A new array of zeros.  ``dtype`` defaults to f32 (a ``@tack.struct``
    class: a ``tack.StructArray`` of zeroed records).  ``requires_grad=True``
    gives it a zeroed ``.grad`` (docs/differentiation.md)."""
    if _as_python.depth > 0:
        return _local_array(shape, dtype, None)
    if _struct_class(dtype) is not None:
        return _structs.new_array(shape, dtype, device, True)
    out = _core.empty(shape, _core._dtype(dtype) if dtype is not None else _core.f32, device, True)
    return _with_grad(out, requires_grad)


def full(shape, fill_value, dtype=None, *, device=None, requires_grad=False) -> _core.Array:
    """A new array with every element set to ``fill_value``.

    Without ``dtype`` the type follows the value: bool, i64 for Python ints,
    f32 for Python floats, complex128 for Python complex numbers (as
    ``tack.array`` makes them), and a NumPy scalar's own dtype (as
    ``numpy.full``: ``np.uint64(2**63)`` stays u64, ``np.float64(0.1)`` f64).
    ``requires_grad=True`` gives it a zeroed ``.grad``.
    """
    if _struct_class(dtype) is not None:
        raise TypeError(f"tack.full and tack.ones take number dtypes, not the struct {dtype.__name__}: make "
                        f"tack.zeros(shape, {dtype.__name__}) and set its fields")
    if dtype is None and not _in_python_kernel() and _is_numpy_scalar(fill_value):
        if fill_value.dtype.kind not in "biufc" and not _is_bfloat16(fill_value.dtype):
            raise TypeError(f"fill_value must be a number, not {type(fill_value).__name__}")
        dtype = _core._dtype(fill_value.dtype)
    elif dtype is None and not _in_python_kernel() and isinstance(fill_value, builtins.complex):
        dtype = _core.complex128
    if dtype is None:
        if isinstance(fill_value, builtins.bool):
            dtype = _core.bool
        elif isinstance(fill_value, numbers.Integral):
            dtype = _core.i64
        elif isinstance(fill_value, numbers.Real):
            dtype = _core.f32
        else:
            raise TypeError(f"fill_value must be a number, not {type(fill_value).__name__}")
    if _in_python_kernel():
        return _local_array(shape, dtype, fill_value)
    out = empty(shape, dtype, device=device)
    out.fill(fill_value)
    return _with_grad(out, requires_grad)


def ones(shape, dtype=None, *, device=None, requires_grad=False) -> _core.Array:
    """A new array of ones.  ``dtype`` defaults to f32; ``requires_grad=True`` gives it a zeroed ``.grad``."""
    return full(shape, 1, dtype if dtype is not None else _core.f32, device=device, requires_grad=requires_grad)


def _like(a, dtype, device, what):
    """The shape, dtype and device of `a` for tack.zeros_like and its kin (`dtype` and `device`
    where given instead): a Tack or struct array, or a NumPy-like array (a shape and a dtype),
    whose device is the CPU.  A list is refused: its dtype would be a guess."""
    from ._structs import StructArray

    if isinstance(a, (_core.Array, StructArray)):
        shape, dt, dev = tuple(a.shape), a.dtype, a.device
    elif hasattr(a, "shape") and hasattr(a, "dtype"):
        np = _numpy()
        shape, dev = tuple(a.shape), "cpu"
        dt = a.dtype
        if isinstance(dt, np.dtype) and dt.fields is not None:
            raise TypeError(f"tack.{what}: a NumPy record array has no struct of its own: pass "
                            f"tack.asarray(records, dtype=YourStruct)")
        dt = _core._dtype(dt)
    else:
        raise TypeError(f"tack.{what}: takes an array (a tack.Array, a struct array or a NumPy array), not "
                        f"{type(a).__name__}")
    return shape, (dt if dtype is None else dtype), (dev if device is None else device)


def empty_like(a, dtype=None, *, device=None) -> _core.Array:
    """A new array with uninitialized values, of ``a``'s shape, dtype and device
    (``dtype`` and ``device`` where given instead): ``numpy.empty_like``, always in C order."""
    shape, dt, dev = _like(a, dtype, device, "empty_like")
    return empty(shape, dt, device=dev)


def zeros_like(a, dtype=None, *, device=None, requires_grad=False) -> _core.Array:
    """A new array of zeros of ``a``'s shape, dtype and device (``dtype`` and ``device``
    where given instead): ``numpy.zeros_like``, always in C order.  A struct array gives
    zeroed records of its struct."""
    shape, dt, dev = _like(a, dtype, device, "zeros_like")
    return zeros(shape, dt, device=dev, requires_grad=requires_grad)


def ones_like(a, dtype=None, *, device=None, requires_grad=False) -> _core.Array:
    """A new array of ones of ``a``'s shape, dtype and device (``dtype`` and ``device``
    where given instead): ``numpy.ones_like``, always in C order."""
    shape, dt, dev = _like(a, dtype, device, "ones_like")
    return full(shape, 1, dt, device=dev, requires_grad=requires_grad)


def full_like(a, fill_value, dtype=None, *, device=None, requires_grad=False) -> _core.Array:
    """A new array of ``a``'s shape, dtype and device (``dtype`` and ``device`` where given
    instead) with every element ``fill_value``: ``numpy.full_like``, always in C order.  The
    value is converted to the dtype as ``tack.full`` converts it."""
    shape, dt, dev = _like(a, dtype, device, "full_like")
    return full(shape, fill_value, dt, device=dev, requires_grad=requires_grad)


def _with_grad(out, requires_grad):
    if requires_grad:
        out.requires_grad = True
    return out


def _host_values(obj, dt):
    """obj as a C-contiguous NumPy array laid out for Tack dtype ``dt``
    (None: inferred), and the Tack dtype and shape it becomes."""
    np = _numpy()
    if isinstance(obj, _core.Array):
        obj = obj.numpy()
    if dt is None:
        host = np.asarray(obj)
        if host.dtype == np.float64 and _holds_python_floats(obj):
            host = host.astype(np.float32)  # Python floats: the default float
        if host.dtype.kind in "OUSVMm" and not _is_bfloat16(host.dtype):
            raise TypeError(f"cannot make a Tack array from values of NumPy dtype {host.dtype}")
        dt = _core._dtype(host.dtype)
    else:
        if dt.kind != "c" and not isinstance(obj, (list, tuple)):
            src = obj if isinstance(obj, np.ndarray) else np.asarray(obj)
            if src.dtype.kind == "c":
                raise TypeError(f"the values are {src.dtype} and dtype {dt.name} is not complex: a complex never "
                                f"becomes a real number implicitly (take .real, .imag or abs() of the values first)")
            obj = src
        host = np.asarray(obj, dtype=dt.scalar.numpy)
    host = np.asarray(host, order="C")
    comp = dt.shape
    if comp:
        if host.shape[host.ndim - len(comp):] != comp or host.ndim < len(comp):
            raise ValueError(
                f"values of shape {host.shape} cannot become {dt.name} elements: the trailing "
                f"axes must be {comp}"
            )
        shape = host.shape[: host.ndim - len(comp)]
    else:
        shape = host.shape
    return host, dt, shape


def _holds_python_floats(obj):
    """Whether the values NumPy read as float64 include a Python float --
    the default float's, f32 -- rather than only NumPy float64 scalars or
    arrays and Tack f64 arrays (whose dtype is kept, as a NumPy array's and a
    NumPy scalar's is: ``tack.array([x64, y64])`` is f64) or Python ints
    past int64's range (which NumPy reads as float64)."""
    todo = [obj]
    while todo:
        x = todo.pop()
        if type(x) is builtins.float:
            return True
        if isinstance(x, (list, tuple)):
            todo.extend(x)
    return False


def _is_bfloat16(npdt):
    """Whether ``npdt`` is ml_dtypes' bfloat16, NumPy's spelling of tack.bf16
    (only where ml_dtypes is imported: there is no such array otherwise)."""
    import sys

    ml = sys.modules.get("ml_dtypes")
    return ml is not None and npdt == ml.bfloat16


def _is_numpy_scalar(x):
    np = _numpy()
    return isinstance(x, np.generic)


def array(obj, dtype=None, *, device=None, copy=True, requires_grad=False) -> _core.Array:
    """A new Tack array holding a copy of ``obj``'s values.

    ``obj`` may be a NumPy array, a nested sequence of numbers, a scalar, or
    another Tack array.  With ``dtype=tack.vec3`` an (n, 3) input gives n
    vec3 elements.  ``copy=False`` is refused: use ``tack.from_dlpack`` or
    ``tack.array_from_ptr`` to share storage.  With a ``@tack.struct`` class
    as ``dtype`` (``tack.array(records, dtype=Particle)``) it copies a NumPy
    record array of ``Particle.dtype`` into a ``tack.StructArray``.
    ``requires_grad=True`` gives the new array a zeroed ``.grad``
    (docs/differentiation.md).
    """
    if _struct_class(dtype) is not None:
        if copy is False:
            raise ValueError("tack.array always copies; tack.asarray(records, dtype=...) shares a record array")
        return _structs.array_of(obj, dtype, device, True)
    if copy is False:
        raise ValueError(
            "tack.array always copies; use tack.from_dlpack(obj) or tack.array_from_ptr(...) to share storage"
        )
    dt = globals()["dtype"](dtype) if dtype is not None else None
    if device is None and isinstance(obj, _core.Array) and dtype is None:
        if obj.strided:  # gathered into C order on its device, as with a dtype or a device given
            return _with_grad(obj.copy(), requires_grad)
        out = _core.empty(obj.shape, obj.dtype, obj.device)
        out._copy_array(obj)
        return _with_grad(out, requires_grad)
    host, dt, shape = _host_values(obj, dt)
    out = _core.empty(shape, dt, device)
    out._copy_from(host)
    return _with_grad(out, requires_grad)


def asarray(obj, dtype=None, *, device=None, copy=None) -> _core.Array:
    """``obj`` as a Tack array, with the array API standard's ``copy``:

    * ``None`` (default): ``obj`` itself when it already is a Tack array of
      that dtype and device, else a copy as with ``tack.array``;
    * ``True``: always a new array (a copy, as ``tack.array``);
    * ``False``: never a copy -- ``obj`` itself, or an array sharing the
      storage of a DLPack producer (a NumPy array, a PyTorch tensor) of that
      dtype on that device, as ``tack.from_dlpack`` gives; ``ValueError``
      when that would need a copy (a list, another dtype or device).

    With a ``@tack.struct`` class as ``dtype``, a NumPy record array of its
    dtype (or a ``tack.StructArray``) is taken as it is: the result shares
    its bytes (``copy=True``: a copy)."""
    if copy not in (None, True, False):
        raise ValueError(f"asarray(): copy must be True, False or None, not {copy!r}")
    if copy is not None:
        copy = bool(copy)  # 0 and numpy.False_ are False
    if _struct_class(dtype) is not None:
        if isinstance(obj, _structs.StructArray) and obj.dtype is dtype and device in (None, obj.device) \
                and not copy:
            return obj
        return _structs.array_of(obj, dtype, device, bool(copy))
    if copy:
        return array(obj, dtype, device=device)
    dt = globals()["dtype"](dtype) if dtype is not None else None
    if isinstance(obj, _core.Array):
        same_dtype = dt is None or dt is obj.dtype
        same_device = device is None or device == obj.device
        if same_dtype and same_device:
            return obj
        if copy is False:
            why = (f"its dtype {obj.dtype.name} is not {dt.name}" if not same_dtype
                   else f"it lives on {obj.device}, not {device}")
            raise ValueError(f"asarray(..., copy=False): a copy is needed, since {why}")
    elif copy is False:
        if not hasattr(obj, "__dlpack__"):
            raise ValueError(f"asarray(..., copy=False): a copy is needed, since a {type(obj).__name__} has no "
                             f"storage to share (a NumPy array or another DLPack producer has)")
        try:
            out = _core.from_dlpack(obj, device=device, copy=False)
        except BufferError as e:
            raise ValueError(f"asarray(..., copy=False): a copy is needed ({e})") from None
        if dt is not None and dt is not out.dtype:
            raise ValueError(f"asarray(..., copy=False): a copy is needed, since the values are "
                             f"{out.dtype.name}, not {dt.name}")
        return out
    return array(obj, dtype, device=device)


def _index_refused(key, why):
    return IndexError(
        f"tack.Array index {key!r}: {why}; tack.Array takes ints (negative ones count from the end), slices "
        f"and an Ellipsis, which give views sharing the storage, and integer arrays and boolean masks, "
        f"which copy -- for other indexing copy with .numpy() or use a kernel")


def _index_copy(a: _core.Array, key):
    """``a[key]`` for a key holding an index array or a boolean mask (a list,
    a NumPy or a Tack array): NumPy's advanced indexing, which gives a new
    array -- a copy, as NumPy's does -- on a's device.  The values are read
    to the host, indexed by NumPy (its shapes, its order, its bounds checks and
    messages) and copied back: for many gathers of a large array a kernel
    is faster.  Called by ``tack.Array.__getitem__`` (array_views.c), which
    hands ints and slices alone to views."""
    np = _numpy()
    items = key if isinstance(key, tuple) else (key,)
    parts, used = [], 0
    for it in items:
        if it is Ellipsis:  # anywhere, once: NumPy reads it below
            parts.append(it)
            continue
        if it is None or isinstance(it, (bool, np.bool_)):
            raise _index_refused(key, "a bool is not an index" if it is not None
                                 else "None (numpy.newaxis) is not an index")
        if isinstance(it, slice):
            parts.append(it)
            used += 1
            continue
        if isinstance(it, _core.Array):
            it = it.numpy()
        idx = np.asarray(it)
        if idx.dtype == np.bool_ and idx.ndim > 0:
            used += idx.ndim
        elif idx.dtype.kind in "iu" or (idx.size == 0 and not isinstance(it, np.ndarray)):
            idx = idx.astype(np.intp) if idx.dtype.kind not in "iu" else idx  # [] is an empty index, as in NumPy
            used += 1
        else:
            raise _index_refused(key, f"an array of {idx.dtype} is not an index (integer arrays and boolean "
                                      f"masks are)")
        parts.append(idx)
    if used > a.ndim:
        raise IndexError(f"too many indices for array: array is {a.ndim}-dimensional, but {used} were indexed")
    host = a.numpy()  # a vector or matrix dtype's components are trailing axes, which no index reaches
    return array(host[tuple(parts)], a.dtype, device=a.device)


def copyto(dst: _core.Array, src, *, casting: str = "same_kind") -> None:
    """Replace the values of ``dst`` with ``src``, converted to dst's dtype.

    ``src`` may be a Tack array, a NumPy array, a sequence or a scalar; it is
    broadcast to dst's shape as in ``numpy.copyto``.  ``dst`` may be a strided
    view (``a[::2]``, ``m.T``): each value goes to its element, on any device.
    Raises ValueError when the shapes do not match, ``dst`` is read-only or
    its elements share memory.
    """
    if not isinstance(dst, _core.Array):
        raise TypeError(f"copyto() destination must be a tack.Array, not {type(dst).__name__}")
    if not dst.writable:
        raise ValueError("copyto() destination is read-only")
    if casting not in ("no", "equiv", "safe", "same_kind", "unsafe"):
        raise ValueError(f"copyto(): casting must be one of 'no', 'equiv', 'safe', 'same_kind' or 'unsafe', "
                         f"not {casting!r}")
    if isinstance(src, _core.Array) and src.dtype is dst.dtype and src.shape == dst.shape and not dst.strided:
        # a strided source is gathered (on its device) first, as .copy() does; a strided destination
        # (a[::2], m.T) takes the values from the host below, each scattered to its element
        dst._copy_array(src.copy() if src.strided else src)
        return
    np = _numpy()
    host = src.numpy() if isinstance(src, _core.Array) else np.asarray(src)
    target_shape = dst.shape + dst.dtype.shape
    buf = np.empty(target_shape, dtype=dst.dtype.scalar.numpy)
    try:
        np.copyto(buf, host, casting=casting)
    except ValueError:
        raise ValueError(
            f"copyto(): source of shape {host.shape} cannot be broadcast to the destination's "
            f"shape {dst.shape}" + (f" of {dst.dtype.name}" if dst.dtype.shape else "")
        ) from None
    dst._copy_from(buf)


_REPR_THRESHOLD = 1000  # NumPy's: above it, only 3 items at each edge of each axis print
_EDGE = 3


def _edge_values(a: _core.Array):
    """The values repr shows, read without copying the rest: a NumPy array of
    a's shape holding a's values at the edges (3 at each end of each axis)
    and zeros elsewhere, in pages that are never touched.  None when it would
    take more than a few thousand small copies (then the caller copies all)."""
    import itertools

    np = _numpy()
    comp = a.dtype.shape
    out = np.zeros(a.shape + comp, dtype=a.dtype.scalar.numpy)  # calloc'd: untouched pages cost nothing
    if not a.shape or a.size == 0:
        return None
    edges = [list(range(n)) if n <= 2 * _EDGE else list(range(_EDGE)) + list(range(n - _EDGE, n))
             for n in a.shape[:-1]]
    rows = 1
    for e in edges:
        rows *= len(e)
    if rows > 4096:
        return None
    last = a.shape[-1]
    spans = [(0, last)] if last <= 2 * _EDGE else [(0, _EDGE), (last - _EDGE, last)]
    strides = [1] * a.ndim
    for k in range(a.ndim - 2, -1, -1):
        strides[k] = strides[k + 1] * a.shape[k + 1]
    item = a.dtype.itemsize
    for idx in itertools.product(*edges):
        base = sum(i * s for i, s in zip(idx, strides))
        for lo, hi in spans:
            part = _core.wrap_pointer(a.ptr + (base + lo) * item, (hi - lo,), a.dtype, device=a.device)
            out[idx + (slice(lo, hi),)] = part.numpy()
    return out


def _format(a: _core.Array) -> str:
    np = _numpy()
    values = None
    if a.size > _REPR_THRESHOLD:
        if a.device == "cpu":
            try:
                values = np.from_dlpack(a)  # shared, not copied: array2string reads only what it prints
            except (BufferError, TypeError):
                values = None
        if values is None:
            try:
                values = _edge_values(a)
            except NotImplementedError:  # an OpenCL cl_mem buffer: no address to offset; copy it all
                values = None
    if values is None:
        values = a.numpy()
    body = np.array2string(values, separator=", ", prefix="tack.array(", threshold=_REPR_THRESHOLD)
    # NumPy 2's rule: the shape is said where the values do not show it -- an empty array of
    # another shape than (0,) (all print as []), and an array shown with '...'
    shape = f", shape={a.shape}" if (a.size == 0 and a.shape != (0,)) or a.size > _REPR_THRESHOLD else ""
    return f"tack.array({body}{shape}, dtype={a.dtype.name}, device='{a.device}')"


_core._set_hooks(repr=_format)
