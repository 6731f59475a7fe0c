"""What the kernel-watching pytest plugins share, and how the tests run them.

Four plugins check every kernel call that other test files make:
_cuda_capture.py (compile its GPU source), _race_capture.py (its IR and
sources, for races), _opencl_diff.py (run it on an OpenCL device too) and
_metal_differential.py (run it on the fake Metal too).  Each is loaded with
``-p NAME`` into a pytest of its own, in a subprocess, over test files that
know nothing of it; what it finds goes to a JSON summary that the calling
test reads.  This module holds the parts that are the same in all four, so
that each plugin keeps only what it checks:

  - ``wrap_kernels(on_call)`` replaces ``tack.kernel`` (bare and with
    options) so that every kernel defined after it is a thin wrapper: a call
    goes to ``on_call(kernel, args, kwargs)``, which makes the real call
    itself; every other attribute (``ir``, ``generated_source``,
    ``__name__``) is the kernel's.  It is never undone: the plugin's process
    ends with the session.  ``after_each_call(check)`` is the on_call of the
    plugins that look after the call, whatever it did.
  - ``copy_arg`` / ``to_device`` copy an argument before the call changes it,
    on the CPU or onto another device; ``single_precision`` gives the
    arguments again with float64 made float32 and complex128 complex64 (for
    Metal, which has no double).
  - ``write_summary_at_exit`` writes the summary when the process ends.
  - ``run_plugin`` is the calling test's side: pytest over the given files
    in a subprocess with the plugin and this folder on its path, and the
    summary it wrote read back (the test fails with the subprocess's output
    when there is none).
"""

import atexit
import contextlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np

import tack
from tack import _core

HERE = Path(__file__).resolve().parent


_aside = threading.local()


@contextlib.contextmanager
def aside():
    """A plugin's own calls of a kernel (again on a device, in single
    precision) go to the kernel itself inside this block, not through the
    wrappers of the other plugins loaded in the same run: each plugin sees
    the test's calls only."""
    before = getattr(_aside, "on", False)
    _aside.on = True
    try:
        yield
    finally:
        _aside.on = before


class _Wrapped:
    """A kernel whose calls go through on_call; everything else is the kernel's."""

    def __init__(self, k, on_call):
        object.__setattr__(self, "_k", k)
        object.__setattr__(self, "_on_call", on_call)

    def __call__(self, *args, **kwargs):
        if getattr(_aside, "on", False):
            return self._k(*args, **kwargs)
        return self._on_call(self._k, args, kwargs)

    def __getattr__(self, name):
        return getattr(self._k, name)


def wrap_kernels(on_call):
    """Make every kernel defined from now on call on_call(kernel, args, kwargs) when called."""
    original = tack.kernel

    def kernel(fn=None, **options):
        if fn is None:
            return lambda f: kernel(f, **options)
        return _Wrapped(original(fn, **options), on_call)

    tack.kernel = kernel


def after_each_call(check):
    """An on_call: the call as the test makes it, then check(kernel, args, kwargs) however it ended."""

    def on_call(k, args, kwargs):
        try:
            return k(*args, **kwargs)
        finally:
            with aside():
                check(k, args, kwargs)

    return on_call


def to_device(a, device):
    """A NumPy or Tack array argument copied onto device; anything else as it is."""
    if isinstance(a, np.ndarray):
        return tack.array(a, device=device)
    if isinstance(a, _core.Array):
        return tack.array(a, a.dtype, device=device)
    return a


def copy_arg(a):
    """An argument as it is before the call: a NumPy copy of a NumPy array, a CPU copy of a Tack array."""
    if isinstance(a, np.ndarray):
        return a.copy()
    return to_device(a, "cpu")


WIDE = {np.dtype(np.float64): np.float32, np.dtype(np.complex128): np.complex64}


def single_precision(args, scalars=True):
    """The arguments with float64 made float32 and complex128 complex64 (NumPy
    arrays, and NumPy scalars unless scalars=False), or None when there is
    nothing to change."""
    out, changed = [], False
    for a in args:
        if isinstance(a, np.ndarray) and a.dtype in WIDE:
            out.append(a.astype(WIDE[a.dtype]))
            changed = True
        elif scalars and isinstance(a, np.generic) and a.dtype in WIDE:
            out.append(WIDE[a.dtype](a))
            changed = True
        else:
            out.append(a)
    return out if changed else None


def write_summary_at_exit(path, summary, ready=None, indent=None):
    """Write summary as JSON to path (when there is one) at exit, or when the
    returned function is called; not while ready() says no."""

    if path and os.environ.get("PYTEST_XDIST_WORKER"):  # each worker of a run under -n its own file
        path = f"{path}.{os.environ['PYTEST_XDIST_WORKER']}"

    def write():
        if path and (ready is None or ready()):
            # made whole before the file is touched: a value JSON lacks (a complex number
            # in a mismatch's sample) once left half a file, which no run could read back
            text = json.dumps(summary, indent=indent, default=_jsonable)
            part = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".part")  # not PATH.gw*
            with open(part, "w") as f:
                f.write(text)
            os.replace(part, path)

    atexit.register(write)
    return write


def _jsonable(o):
    """A summary's value JSON has no type for: a complex number as [real, imag], a NumPy scalar as Python's."""
    if isinstance(o, (complex, np.complexfloating)):
        return [float(o.real), float(o.imag)]
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"{type(o).__name__} in a summary is not JSON")


# pytest-xdist's variables, which a pytest started by a worker must not inherit
_XDIST = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


def _merge(a, b):
    """Two processes' summaries of one plugin as one: counts added, lists
    joined, dictionaries merged key by key, anything else (a target's name)
    the same in both."""
    if isinstance(a, dict) and isinstance(b, dict):
        return {**a, **{k: _merge(a[k], v) if k in a else v for k, v in b.items()}}
    if isinstance(a, list) and isinstance(b, list):
        return a + b
    if isinstance(a, bool) or isinstance(b, bool):
        return a or b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a + b
    return a


def _read_summary(path):
    """The summary a run's plugin wrote at path, with those its pytest-xdist
    workers wrote beside it (PATH.gwN) merged in; None when there is none."""
    parts = [p for p in [path, *sorted(path.parent.glob(path.name + ".gw*"))] if p.exists()]
    if not parts:
        return None
    out = json.loads(parts[0].read_text())
    for p in parts[1:]:
        out = _merge(out, json.loads(p.read_text()))
    return out


def run_plugin(plugin, files, summary_var, summary, timeout, cwd=None, env=None, **values):
    """Run pytest over files with -p plugin in a subprocess (run_plugins), its
    summary file at `summary`, named by environment variable summary_var, in
    env (this process's when None) with values added; the summary read back."""
    summary = Path(summary)
    return run_plugins({plugin: summary_var}, files, summary.parent, timeout, cwd=cwd, prefix=summary.stem,
                       env=env, **values)[plugin]


def run_plugins(plugins, files, folder, timeout, cwd=None, prefix="run", args=(), env=None, **values):
    """Run pytest over files (with args: "-n 2" runs it on pytest-xdist's
    workers, whose summaries are merged) once with every plugin of `plugins`
    ({plugin: the environment variable naming its summary file}) loaded, each
    summary written under folder as PREFIX-PLUGIN.json, in env (this
    process's environment when None) with values added; the summaries read back, by plugin, and
    under "_process" the run's exit status and the tail of its output.  Each
    plugin that wraps the kernels does so in turn and sees the tests' calls
    only (aside())."""
    env = dict(os.environ if env is None else env, **values,
               **{var: os.path.join(folder, f"{prefix}-{name}.json") for name, var in plugins.items()})
    for var in _XDIST:
        env.pop(var, None)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE)] + [p for p in sys.path if p])
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    for name in plugins:
        cmd += ["-p", name]
    proc = subprocess.run(cmd + list(map(str, files)), env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    out = {"_process": {"returncode": proc.returncode, "tail": proc.stdout[-6000:] + proc.stderr[-3000:]}}
    for name, var in plugins.items():
        summary = _read_summary(Path(env[var]))
        assert summary is not None, f"{name} wrote no summary: " + \
            f"signal {-proc.returncode}: " * (proc.returncode < 0) + proc.stdout[-3000:] + proc.stderr[-3000:]
        out[name] = summary
    return out
