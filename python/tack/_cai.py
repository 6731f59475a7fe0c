"""The CUDA Array Interface (version 3): Tack's GPU arrays to Numba, CuPy and PyTorch, and theirs to Tack.

DLPack is how Tack shares arrays (tack.from_dlpack, ``__dlpack__``); the CUDA Array Interface is
the older protocol that Numba's device arrays speak and that CuPy and PyTorch speak besides: an
attribute ``__cuda_array_interface__``, a dict with the data's device address, shape, type string,
strides in bytes (None for C order), a read-only flag, the version and, from version 3, a stream.
On ROCm, CuPy and PyTorch speak it for HIP memory too, so Tack does on both.

Export (``tack.Array.__cuda_array_interface__``, arrays on a CUDA or HIP device only: elsewhere the
attribute does not exist, so ``hasattr`` is false).  Tack's launches are asynchronous on Tack's
own stream, which the consumer does not know, so the export waits on the host for the work
queued on the array's device and says ``"stream": None`` ("nothing to synchronize"), which every
consumer accepts; the array is marked shared (its later launches complete before their calls
return, as for a DLPack export).  A vecN or matRC array is described as its scalar type with
trailing axes.  An array of a type the interface cannot name (bfloat16) raises TypeError naming
it; so does nothing else.

Import (``tack.from_cuda_array_interface(obj)``, and a kernel argument that is neither a buffer nor a
DLPack producer but has the attribute): the memory is wrapped without a copy, on the CUDA or HIP
device whose driver says the address is its own, and ``obj`` is kept alive for as long as a Tack
array uses it.  A ``stream`` in the dict (an integer handle) is one on which the producer may
still be writing: Tack's own stream is made to wait for it on the device (an event recorded
there, waited for on Tack's), so nothing waits on the host.  A mask, a version above 3, a
misaligned or negative address, strides that are not whole elements, and a type Tack has not
are refused, naming the value.
"""

from __future__ import annotations

from . import _core

def _np():
    import numpy

    return numpy


def _gpu(device):
    return device.split(":")[0] in ("cuda", "hip")


def export(a):
    """a.__cuda_array_interface__ (the extension's cai_export hook)."""
    if not _gpu(a.device):
        raise AttributeError(f"__cuda_array_interface__: the array is on {a.device}; the CUDA Array Interface "
                             f"describes CUDA and HIP memory (share other arrays through DLPack: tack.from_dlpack, "
                             f"np.from_dlpack)")
    np = _np()
    scalar = a.dtype.scalar if a.dtype.shape else a.dtype
    npd = np.dtype(scalar.numpy) if scalar.numpy is not None else None
    if npd is None or npd.kind not in "biufc":  # bfloat16 has none (ml_dtypes' is a void type to NumPy)
        raise TypeError(f"__cuda_array_interface__: {a.dtype.name} has no type string in the CUDA Array Interface "
                        f"(share it through DLPack)")
    typestr = npd.str
    comp = tuple(a.dtype.shape)
    shape = tuple(a.shape) + comp
    strides = a._strides
    size = scalar.itemsize
    if strides is not None:
        inner, c = [], 1
        for d in reversed(comp):
            inner.insert(0, c)
            c *= d
        strides = tuple(s * c * size for s in strides) + tuple(x * size for x in inner)
    _core.synchronize(a.device)  # Tack's queued work done: no stream for the consumer to wait on
    return {"shape": shape, "typestr": typestr, "descr": [("", typestr)], "data": (a.ptr, not a.writable),
            "strides": strides, "version": 3, "stream": None}


def _devices():
    return [d for d in _core.devices() if _gpu(d)]


def from_cuda_array_interface(obj, *, device=None) -> _core.Array:
    """A Tack array on the memory ``obj.__cuda_array_interface__`` describes, without a copy.

    The device is the CUDA or HIP device whose driver owns the address (``device=`` names one to
    try alone); ``obj`` stays alive while a Tack array uses the memory; a ``stream`` in the
    interface is waited for on the device before Tack's next work there.  See docs/interop.md.
    """
    cai = getattr(obj, "__cuda_array_interface__", None)
    if not isinstance(cai, dict):
        raise TypeError(f"tack.from_cuda_array_interface: a {type(obj).__name__} has no __cuda_array_interface__ "
                        f"dict")
    np = _np()
    version = cai.get("version")
    if not isinstance(version, int) or not 0 <= version <= 3:
        raise ValueError(f"__cuda_array_interface__: version {version!r} is not one Tack reads (0 to 3)")
    if cai.get("mask") is not None:
        raise ValueError("__cuda_array_interface__: a mask is not supported (Tack arrays have no masked elements)")
    shape = cai.get("shape")
    if not isinstance(shape, tuple) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise ValueError(f"__cuda_array_interface__: shape {shape!r} is not a tuple of non-negative ints")
    try:
        nd = np.dtype(cai.get("typestr"))
    except TypeError:
        raise ValueError(f"__cuda_array_interface__: typestr {cai.get('typestr')!r} is not a type string") from None
    from . import _array

    try:
        dt = _array.dtype(nd)
    except (TypeError, ValueError):
        raise TypeError(f"__cuda_array_interface__: typestr {cai['typestr']!r} ({nd}) is no Tack dtype") from None
    data = cai.get("data")
    if not (isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], int)):
        raise ValueError(f"__cuda_array_interface__: data {data!r} is not (address, read_only)")
    ptr, readonly = data
    count = 1
    for n in shape:
        count *= n
    size = nd.itemsize
    strides = cai.get("strides")
    if strides is not None:
        if not (isinstance(strides, tuple) and len(strides) == len(shape)):
            raise ValueError(f"__cuda_array_interface__: strides {strides!r} do not match shape {shape}")
        if any(not isinstance(s, int) or s % size for s in strides):
            raise ValueError(f"__cuda_array_interface__: strides {strides!r} are not whole {nd} elements "
                             f"({size} bytes)")
        c = size
        contiguous = []
        for n in reversed(shape):
            contiguous.insert(0, c)
            c *= n
        if tuple(strides) == tuple(contiguous) or count == 0:
            strides = None
    stream = cai.get("stream") if version >= 3 else None
    if stream is not None and (not isinstance(stream, int) or stream == 0):
        raise ValueError(f"__cuda_array_interface__: stream {stream!r} is not a stream handle (0 is disallowed; "
                         f"None means nothing to wait for)")
    candidates = [device] if device is not None else _devices()
    if not candidates:
        raise ValueError("tack.from_cuda_array_interface: Tack finds no CUDA or HIP device here "
                         "(python -m tack says why)")
    last = None
    for dev in candidates:
        try:
            arr = _wrap(ptr, shape, strides, dt, size, count, not readonly, dev, obj)
        except (ValueError, RuntimeError, NotImplementedError) as e:
            last = e
            continue
        if stream is not None:
            _wait_for(dev, stream)
        return arr
    raise ValueError(f"tack.from_cuda_array_interface: address {ptr:#x} is not memory of "
                     f"{' or '.join(candidates)}: {last}")


def _wrap(ptr, shape, strides, dt, size, count, writable, dev, owner):
    if strides is None:
        return _core.wrap_pointer(ptr, shape, dt, writable, dev, owner)
    # a strided view: the span its elements cover, wrapped flat from the lowest one, then viewed
    lo = hi = 0
    for n, s in zip(shape, strides):
        if n > 1:
            if s < 0:
                lo += s * (n - 1)
            else:
                hi += s * (n - 1)
    base = ptr + lo
    span = (hi - lo) // size + 1
    flat = _core.wrap_pointer(base, (span,), dt, writable, dev, owner)
    return flat._field_view(dt, -lo // size, shape, tuple(s // size for s in strides))


def _wait_for(dev, stream):
    """Tack's own stream on dev waits, on the device, for what the producer queued on `stream`."""
    from ._streams import Event, Stream

    Event(dev, timing=False).record(Stream(dev, handle=stream)).wait(None)


def import_arg(obj):
    """A kernel argument with __cuda_array_interface__ (the extension's cai_import hook)."""
    return from_cuda_array_interface(obj)


_core._set_hooks(cai_export=export, cai_import=import_arg)
