"""A pytest plugin: run every kernel call of a test file on Metal too.

Loaded with ``-p _metal_differential`` (tests/python on sys.path) by
test_metal_run.py, in a process where the fake Metal runs kernels
(FAKE_METAL_EMULATE).  It wraps ``tack.kernel`` so that each call the tests
make with NumPy arrays and scalars first runs on Metal copies of its
arguments and on CPU copies, and compares: the same exception type (and,
for errors raised by a running kernel, the same message -- a CompileError
may word a device limit differently), else the same arrays after (floats
to a relative 1e-4, f32 and complex64 to 1e-3; integers exactly).  A call
Metal refuses for double precision is run again with float64 made float32
and complex128 complex64.  The outcome of the file's own tests does not
matter here (the wrapper changes what some of them inspect); the summary
goes to the JSON file named by TACK_METAL_DIFF: calls agreeing, refused,
demoted, skipped (arguments that are not plain NumPy), sampled out, and
differences.  Under make test (TACK_SUITE_SAMPLE=1: _suite.sampling()) a call
is run only when its Metal source is in the half _suite.HALVES gives the
emulation (the fake compiles each source with clang++); a call with no Metal
source (a refusal, an error) always runs, and a refused call demoted to single
precision is sampled by the demoted source.
(_kernel_wrap.py wraps the kernels and copies the arguments.)
"""

import os

import numpy as np

import _kernel_wrap
import _suite
import tack
from tack._kernels import PythonKernel

_OUT = os.environ.get("TACK_METAL_DIFF")
_res = {"agree": 0, "refused": 0, "demoted": 0, "skipped": 0, "sampled_out": 0, "differ": []}
_SCALARS = (int, float, complex, bool, np.generic)


def _call(k, args):
    try:
        k(*args)
        tack.synchronize()
        return None
    except Exception as e:  # noqa: BLE001 -- every outcome is compared
        return type(e).__name__, str(e)


def _compare(k, args, demoted=False):
    name = getattr(k, "__name__", "?")
    if isinstance(k, PythonKernel):  # jit=False runs on the CPU only: a device array is refused by design
        _res["skipped"] += 1
        return
    if not all(isinstance(a, _SCALARS) or (isinstance(a, np.ndarray) and a.flags.c_contiguous and a.flags.writeable)
               for a in args):
        _res["skipped"] += 1
        return
    if _suite.sampling():
        try:
            src = k.generated_source(*args, target="metal")
        except Exception:  # noqa: BLE001 -- no source (refused, or an error): run, to compare the errors
            src = None
        if src is not None and not _suite.sampled("metal_emulated", src):
            _res["sampled_out"] += 1
            return
    cpu = [_kernel_wrap.copy_arg(a) for a in args]
    met = [_kernel_wrap.to_device(a, "metal") for a in args]
    e_met, e_cpu = _call(k, met), _call(k, cpu)
    if e_met and e_met[0] in ("CompileError", "NotImplementedError") and "Metal" in e_met[1]:
        _res["refused"] += 1
        low = _kernel_wrap.single_precision(args, scalars=False)
        if not demoted and low is not None:
            _res["demoted"] += 1
            _compare(k, low, demoted=True)
        return
    if (e_met is None) != (e_cpu is None) or (e_met and e_met[0] != e_cpu[0]) or \
            (e_met and e_met[0] != "CompileError" and e_met != e_cpu):
        _res["differ"].append(f"{name}: cpu raised {e_cpu}, metal raised {e_met}"[:1000])
        return
    for c, m in zip(cpu, met):
        if e_met is None and isinstance(c, np.ndarray):
            got = m.numpy()
            try:
                if c.dtype.kind in "fc":
                    tol = 1e-3 if c.dtype in (np.float32, np.complex64, np.float16) else 1e-4
                    np.testing.assert_allclose(got, c, rtol=tol, atol=tol, equal_nan=True)
                else:
                    np.testing.assert_array_equal(got, c)
            except AssertionError as e:
                _res["differ"].append(f"{name}: {e}"[:1000])
                return
    _res["agree"] += 1


def _differential(k, args, kwargs):
    """The call compared on Metal and on the CPU first, then made as the test makes it."""
    if kwargs:
        _res["skipped"] += 1
    else:
        _compare(k, args)
    return k(*args, **kwargs)


_kernel_wrap.wrap_kernels(_differential)
_kernel_wrap.write_summary_at_exit(_OUT, _res, indent=1)
