"""Sharing storage with other libraries: DLPack and external pointers.

``tack.from_dlpack`` borrows another library's tensor through DLPack;
``Array.__dlpack__`` lets other libraries borrow Tack arrays
(``np.from_dlpack(arr)``, ``torch.from_dlpack(arr)``, ...).
``tack.array_from_ptr`` wraps memory that another library owns, given by
address or by an object with the buffer protocol.

Nothing here copies unless asked (``copy=True``) or unless the request
cannot be met otherwise; ``copy=False`` guarantees no copy or an error.
The rules are in ``docs/runtime-contract.md`` ("DLPack") and the lifetime
mechanism in ``docs/design/interop.md``.
"""

from __future__ import annotations

import numbers

from . import _core

__all__ = ["array_from_ptr", "from_dlpack"]


# tack.from_dlpack is the C function itself: an exchange is cheap enough
# (a few hundred nanoseconds) that a Python wrapper would double its cost.
# Its documentation is the C docstring; see help(tack.from_dlpack).
from_dlpack = _core.from_dlpack


def array_from_ptr(ptr, shape, dtype, writable=False, device=None) -> _core.Array:
    """A Tack array on memory that something else owns.

    ``ptr`` is either

    * an ``int`` address: trusted for size (Tack cannot check it) but checked
      for the dtype's alignment (``ValueError`` naming the address and the
      alignment) and for an extent that would run past the end of the
      address space (``ValueError`` naming the address and the size).  Tack never takes ownership of a raw address: the memory
      must outlive every array that uses it.  On a GPU device the address is
      a device address of that device.  On Metal it is an ``MTLBuffer``
      instead (its ``id`` as an int, or a PyObjC object, whose
      ``__c_void_p__()`` gives it) in shared storage: Tack retains the buffer
      for as long as an array uses it and checks that it holds the shape.
    * an object with the buffer protocol (a NumPy array, a ``bytearray``, a
      ``memoryview``, ...): Tack keeps the object alive as the owner for as
      long as any array uses its memory, and checks that ``shape`` x the
      dtype's itemsize fits in its buffer, that the buffer is C-contiguous,
      and that it is writable when ``writable=True``.

    ``shape`` and ``dtype`` must describe the storage as it is: a vec3 array
    of n elements is ``(n,)`` with ``tack.vec3``.  The array is read-only
    unless ``writable=True``, which should be asked only when the owner
    permits writes.  ``device`` defaults to the current default device.

    >>> import numpy as np
    >>> owner = np.zeros(8, dtype=np.float32)
    >>> view = tack.array_from_ptr(owner, (8,), tack.f32, writable=True)
    >>> view.fill(2.0)
    >>> float(owner[3])
    2.0
    """
    if isinstance(ptr, bool):
        raise TypeError("array_from_ptr() needs an int address or a buffer, not a bool")
    if hasattr(ptr, "__c_void_p__"):
        ptr = ptr.__c_void_p__().value or 0  # a PyObjC object, such as an MTLBuffer
    if isinstance(ptr, numbers.Integral) and not isinstance(ptr, int):
        ptr = int(ptr)  # a NumPy integer holding an address, e.g. from ctypes or .ctypes.data
    return _core.wrap_pointer(ptr, shape, dtype, writable, device)
