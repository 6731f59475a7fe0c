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
demoted, skipped (arguments that are not plain NumPy), and differences.
"""

import atexit
import json
import os

import numpy as np

import tack

_OUT = os.environ.get("TACK_METAL_DIFF")
_res = {"agree": 0, "refused": 0, "demoted": 0, "skipped": 0, "differ": []}
_WIDE = {np.dtype(np.float64): np.float32, np.dtype(np.complex128): np.complex64}
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
    if not all(isinstance(a, _SCALARS) or (isinstance(a, np.ndarray) and a.flags.c_contiguous and a.flags.writeable)
               for a in args):
        _res["skipped"] += 1
        return
    cpu = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    met = [tack.array(a, device="metal") if isinstance(a, np.ndarray) else a for a in args]
    e_met, e_cpu = _call(k, met), _call(k, cpu)
    if e_met and e_met[0] in ("CompileError", "NotImplementedError") and "Metal" in e_met[1]:
        _res["refused"] += 1
        low = [a.astype(_WIDE[a.dtype]) if isinstance(a, np.ndarray) and a.dtype in _WIDE else a for a in args]
        if not demoted and any(x is not y for x, y in zip(low, args)):
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


class _Differential:
    """A kernel that also runs each call on Metal and on the CPU, and compares."""

    def __init__(self, k):
        object.__setattr__(self, "_k", k)

    def __call__(self, *args, **kwargs):
        if kwargs:
            _res["skipped"] += 1
        else:
            _compare(self._k, args)
        return self._k(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._k, name)


_original = tack.kernel


def _kernel(fn=None, **options):
    if fn is None:
        return lambda f: _kernel(f, **options)
    return _Differential(_original(fn, **options))


tack.kernel = _kernel


@atexit.register
def _write():
    if _OUT:
        with open(_OUT, "w") as f:
            json.dump(_res, f, indent=1)
