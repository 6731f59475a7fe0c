"""A pytest plugin: every kernel call of a test file, emitted again in single
precision for OpenCL, must need no double.

Loaded with ``-p _f32_capture`` by test_single_precision.py.  Each call the
tests make with NumPy arguments is turned into a float32 call (float64 arrays
made float32, complex128 complex64, NumPy float64 scalars float32; Python
floats stay Python floats, which is the point: they are weak) and its OpenCL
source is generated; the dialect records in its last line whether the kernel
needs fp64 (`fp64=1`), which an Intel DG2 GPU, Metal and many phones' GPUs
refuse.  The summary (TACK_F32_CAPTURE) counts the calls checked and lists
the kernels that still need double, with the line of the source that does.
"""

import os
import re

import numpy as np

import _kernel_wrap
import tack

_OUT = os.environ.get("TACK_F32_CAPTURE")
_res = {"checked": 0, "skipped": 0, "refused": 0, "need_fp64": []}
_SCALARS = (int, float, complex, bool, np.generic)
_seen = set()


def _check(k, args, kwargs):
    if kwargs or not all(isinstance(a, _SCALARS) or isinstance(a, np.ndarray) for a in args):
        _res["skipped"] += 1
        return
    low = _kernel_wrap.single_precision(args, scalars=True) or list(args)
    if any(isinstance(a, np.ndarray) and a.dtype in (np.float64, np.complex128) for a in low):
        _res["skipped"] += 1
        return
    key = (getattr(k, "__qualname__", "?"), tuple((a.dtype.str, a.ndim) if isinstance(a, np.ndarray)
                                                  else type(a).__name__ for a in low))
    if key in _seen:
        return
    _seen.add(key)
    try:
        src = k.generated_source(*low, target="opencl")
    except Exception:  # noqa: BLE001 -- a call the compiler refuses has no source to check
        _res["refused"] += 1
        return
    _res["checked"] += 1
    if re.search(r"fp64=1", src):
        lines = [ln.strip() for ln in src[src.find("__kernel"):].splitlines()
                 if re.search(r"\bdouble\b", ln) and "__global double" not in ln]
        _res["need_fp64"].append(f"{key[0]} {key[1]}: {lines[:3]}"[:600])


_kernel_wrap.wrap_kernels(_kernel_wrap.after_each_call(_check))
_kernel_wrap.write_summary_at_exit(_OUT, _res, indent=1)
