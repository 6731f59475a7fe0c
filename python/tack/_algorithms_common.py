"""What the parallel primitives share: taking their arguments and cutting their input into blocks.

Every primitive of tack._algorithms and tack._algorithms_sort takes 1-D arrays in C order (a
strided view is gathered into a copy on its device, anything array-like goes through
tack.asarray), checks that their dtypes are ones it takes -- the error naming the function and the
argument -- and cuts n elements into blocks for the blocked two-pass pattern: a few blocks per CPU
thread, each streaming through memory on one core, and one per 4,096 elements on a GPU, where the
serial loop over a block is one work-item's.  Small constants reach the device as arrays
(``_host``); a small input's kernels run on the calling thread alone (``_launch``).  These helpers sit below both modules and import neither, so that the sort can be a
module of its own without importing the one that re-exports it.
"""

import functools
import sys

import numpy as np

from . import _core
from ._array import asarray as _asarray


def not_differentiated(what):
    """A primitive that runs Tack's own kernels, made opaque to a recording tack.Tape: its kernels'
    launches are not recorded (their adjoints are not written to be differentiated), and the tape
    instead notes the call, refusing in backward where a gradient reaches its float results
    (tack._autodiff_run.opaque_call).  No tape records: one dictionary lookup a call."""

    def wrap(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            run = sys.modules.get("tack._autodiff_run")  # no tape without the tape's module
            if run is None or not run._active:
                return fn(*args, **kwargs)
            return run.opaque_call(what, fn, args, kwargs)

        return call

    return wrap


def _one_d(x, name, what, device=None):
    """x as a 1-D Tack array in C order: a strided view is gathered (a copy on
    its device), anything else array-like goes through tack.asarray -- onto
    ``device`` where given (the device of the primitive's first array: a
    NumPy mask for an OpenCL array is copied there, not refused as 'on cpu')."""
    if not isinstance(x, _core.Array):
        if hasattr(x, "__dlpack__") and not isinstance(x, np.ndarray):
            x = _core.from_dlpack(x, device=device)
        else:
            x = _asarray(np.asarray(x), device=device)
    if x.ndim != 1:
        raise ValueError(f"tack.{what}: {name} must be a 1-D array, got shape {tuple(x.shape)}"
                         " (ravel it, or pass one row at a time)")
    if getattr(x, "strided", False):
        x = x.copy()
    return x


def _is_records(x):
    """Whether x is a tack.StructArray (the records of a @tack.struct), which the primitives that
    only move elements (sort's values, compact) take as they are."""
    from ._structs import StructArray

    return isinstance(x, StructArray)


def _one_d_records(x, name, what):
    if x.ndim != 1:
        raise ValueError(f"tack.{what}: {name} must be a 1-D array, got shape {tuple(x.shape)}")
    return x


def _numeric(x, name, what, complex_ok=False):
    kind = x.dtype.kind
    if x.dtype.shape != () or kind not in ("b", "i", "u", "f") + (("c",) if complex_ok else ()):
        raise TypeError(f"tack.{what}: {name} has dtype {x.dtype.name}; it takes bool, integer or float"
                        + (" or complex" if complex_ok else "") + " elements")


def _npdtype(dt):
    return np.dtype(dt.numpy)


def _blocks(n, device, gpu_block=4096):
    """(number of blocks, elements per block) for n elements on device."""
    if n == 0:
        return 1, 1
    if device.startswith("cpu"):
        nb = max(1, 4 * _core.device_threads(device))
        nb = min(nb, max(1, n // 1024))
    else:
        nb = max(1, -(-n // gpu_block))
    bs = -(-n // nb)
    return -(-n // bs), bs


# Below this many elements a primitive's kernels on the CPU run on the calling thread alone
# (_core._launch_alone): the same blocks, so the same results bit for bit, without waking the
# pool's threads, whose hand-over costs more than such an input's work (benchmarks/algorithms.py
# --sizes; docs/algorithms.md has the figures).
ALONE_BELOW = 1 << 15


def _launch(k, work, device, *args):
    """k(*args), on the calling thread alone when it is on the CPU and its work is small: `work` is
    in elements of a one-pass read such as a sum's (a scan, which reads twice and writes, counts 4
    an element)."""
    if work < ALONE_BELOW and device.startswith("cpu"):
        was = _core._launch_alone(True)
        try:
            return k(*args)
        finally:
            _core._launch_alone(was)
    return k(*args)


def _host(values, dtype, device):
    """A small NumPy array of dtype moved to device."""
    from ._array import array as _array
    return _array(np.asarray(values, dtype), device=device)


def _sortable(a, name, what):
    a = _one_d(a, name, what)
    _numeric(a, name, what)
    return a
