"""A pytest plugin: every kernel call of the language tests runs on an OpenCL
device too, and must give the CPU's results.

Loaded with ``-p _opencl_diff`` (tests/python on sys.path) by
test_opencl.py, which runs the language test files in a subprocess with it.
It wraps ``tack.kernel``: a call made by a test runs on the CPU as the test
wants; before it, the arguments are copied; after it, the same kernel runs on
the OpenCL device (TACK_OPENCL_DEVICE, default ``opencl:0``) with those
copies moved there, and every array argument is compared with what the CPU
left in it -- exactly for integers and booleans, to a few float32 ulps for
floats (the device's math library rounds differently from glibc's; atomics
add in another order).  A call that fails on the CPU must fail on the device
with the same exception type.  The summary goes to the JSON file named by
TACK_OPENCL_DIFF, and each distinct source to the directory named by
TACK_OPENCL_SOURCES; the language tests' own outcome does not matter here.
Under make test the device runs the calls whose source is in half 0 of the
sources (_suite.HALVES: Intel's compiler takes the other half); under make
test-all and on a GPU (make test-gpu), every call.
(_kernel_wrap.py wraps the kernels and copies the arguments.)

The device is only a name: ``make test-gpu`` (tests/gpu/gpurun.py) and
test_level_zero_gpu.py point TACK_OPENCL_DEVICE at "cuda:0", "hip:0",
"level_zero:0" or "metal:0" to compare the suite on a GPU with the CPU.
"""

import hashlib
import os
import re

import numpy as np

import _kernel_wrap
import _suite
import tack
from tack import _core

_OUT = os.environ.get("TACK_OPENCL_DIFF")
_DEV = os.environ.get("TACK_OPENCL_DEVICE", "opencl:0")
_SOURCES = os.environ.get("TACK_OPENCL_SOURCES")  # a directory to keep each distinct OpenCL source in
_summary = {"calls": 0, "compared": 0, "exact": 0, "close": 0, "close_atomic": 0, "errors_alike": 0,
            "mismatches": [], "not_run": {}}

# Kernels whose results depend on the order iterations run in, by design of
# the test that calls them: compared for their other outputs only.
RACY = {
    ("count_and_read", 2): "reads hist[0] while other iterations add to it",
    ("hand_out_old_values", 1): "each cell's old values go to the iterations in the order they ran "
                                "(an H200 gave 31 where the CPU gave 0; the test checks each is handed out once)",
}


def _host(a):
    if isinstance(a, np.ndarray):
        return a
    if isinstance(a, _core.Array):
        return np.asarray(tack.array(a, a.dtype, device="cpu").numpy())
    return None


def _magnitude(arrays):
    m = 0.0
    for a in arrays:
        a = np.asarray(a)
        if a.dtype.kind in "fc" and a.size:
            fin = np.abs(a[np.isfinite(a)])
            if fin.size:
                m = max(m, float(fin.max()))
    return m


def _same(cpu, dev, atomic_scale):
    """Exact, or close: a few float32 ulps of the value; where the kernel adds
    floats atomically (the order of the adds differs), of the largest
    magnitude in the call's arrays."""
    if cpu.shape != dev.shape:
        return False, "shape"
    if cpu.dtype.kind in "biu":
        return bool(np.array_equal(cpu, dev)), "exact"
    if np.array_equal(cpu, dev, equal_nan=True):
        return True, "exact"
    if not (np.isnan(cpu) == np.isnan(dev)).all():
        return False, "nan"
    scale = _magnitude([cpu])
    if np.allclose(dev, cpu, rtol=4e-6, atol=1e-6 * max(scale, 1e-30), equal_nan=True):
        return True, "close"
    if atomic_scale is not None and np.allclose(dev, cpu, rtol=1e-4, atol=1e-4 * atomic_scale, equal_nan=True):
        return True, "close_atomic"
    return False, "values"


def _note(why):
    _summary["not_run"][why] = _summary["not_run"].get(why, 0) + 1


def _on_device(k, before, kw_before):
    moved = [_kernel_wrap.to_device(a, _DEV) for a in before]
    kw_moved = {n: _kernel_wrap.to_device(v, _DEV) for n, v in kw_before.items()}
    k(*moved, **kw_moved)
    tack.synchronize(_DEV)
    return moved + list(kw_moved.values())


def _record(k, args, before, kwargs, kw_before, cpu_error):
    name = getattr(k, "__name__", "?")
    every = list(args) + list(kwargs.values())
    if getattr(k, "jit", True) is False:  # a kernel run as Python takes CPU arrays only (the language says so)
        _note("a kernel run as Python (jit=False): the CPU's by definition")
        return
    if any(isinstance(a, np.ndarray) and not a.flags.c_contiguous for a in every):
        _note("a non-contiguous NumPy argument")
        return
    if any(isinstance(a, np.ndarray) and not a.flags.writeable for a in every):
        _note("a read-only NumPy argument (its device copy would be writable)")
        return
    try:
        src = k.generated_source(*before, target="opencl", **kw_before)
    except Exception:  # noqa: BLE001 -- no source (a call that fails to build): run, to compare the errors
        src = None
    if src is not None and _SOURCES:  # kept for Intel's compiler (test_opencl.py), both halves
        digest = hashlib.sha256(src.encode()).hexdigest()[:20]
        path = os.path.join(_SOURCES, f"{name[:40]}-{digest}.cl")
        if not os.path.exists(path):
            with open(path, "w") as f:
                f.write(src)
    if src is not None and not _suite.sampled("opencl", src):
        _note("the sources PoCL does not run under make test: Intel's compiler compiles them (_suite.share)")
        return
    try:
        moved = _on_device(k, before, kw_before)
        dev_error = None
    except Exception as e:  # noqa: BLE001 -- compared with the CPU's below
        dev_error, moved = e, None
    if cpu_error is not None or dev_error is not None:
        if cpu_error is not None and dev_error is not None and type(cpu_error) is type(dev_error):
            _summary["errors_alike"] += 1
        elif cpu_error is None and isinstance(dev_error, (NotImplementedError, BufferError)):
            _note(f"{type(dev_error).__name__}: {str(dev_error)[:120]}")
        else:
            _summary["mismatches"].append({"kernel": name, "cpu": repr(cpu_error)[:300], "device": repr(dev_error)[:600]})
        return
    atomic_scale = None
    if src is not None and re.search(r"tk_atomic_(add|sub)_(float|double)\(", src):  # a use; the prelude pastes the names
        atomic_scale = _magnitude([_host(a) for a in every if _host(a) is not None] +
                                  [_host(a) for a in before if _host(a) is not None])
    for i, (a, m) in enumerate(zip(every, moved)):
        cpu = _host(a)
        if cpu is None or (name, i) in RACY:
            continue
        dev = _host(m)
        ok, how = _same(np.asarray(cpu), np.asarray(dev), atomic_scale)
        if not ok:
            c, d = np.asarray(cpu).ravel(), np.asarray(dev).ravel()
            bad = np.flatnonzero(c != d) if c.shape == d.shape else np.arange(0)
            diff = "shapes differ" if c.shape != d.shape else f"{bad.size} of {c.size} differ, first at {int(bad[0])}: cpu {c[bad[0]]!r} device {d[bad[0]]!r}"
            _summary["mismatches"].append({"kernel": name, "arg": i, "dtype": str(cpu.dtype), "why": diff,
                                           "cpu": np.asarray(cpu).ravel()[:8].tolist(),
                                           "device": np.asarray(dev).ravel()[:8].tolist()})
            return
        _summary[how] += 1
    _summary["compared"] += 1


def _diffed(k, args, kwargs):
    """The call as the test makes it, after copying its arguments; then again on the device."""
    _summary["calls"] += 1
    before = [_kernel_wrap.copy_arg(a) for a in args]
    kw_before = {n: _kernel_wrap.copy_arg(v) for n, v in kwargs.items()}
    try:
        result = k(*args, **kwargs)
    except Exception as e:
        with _kernel_wrap.aside():
            _record(k, args, before, kwargs, kw_before, e)
        raise
    with _kernel_wrap.aside():
        _record(k, args, before, kwargs, kw_before, None)
    return result


_kernel_wrap.wrap_kernels(_diffed)
_kernel_wrap.write_summary_at_exit(_OUT, _summary, indent=1)
