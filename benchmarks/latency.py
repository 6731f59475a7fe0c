"""Latency: launch overhead, compile time, first call with a warm cache, import.

``python -m benchmarks.latency launch`` prints one JSON line per peer with the
best mean time of a call of a 1-element saxpy (two arrays and a scalar):
Tack (Tack arrays and NumPy arrays), Numba's ``@njit`` call, Warp's CPU
``wp.launch``, Taichi and ctypes into C for scale.

``startup()`` (called by the driver) runs fresh processes: ``import tack``;
the first call of a kernel with an empty cache (cold compile) and again in a
new process with that cache (warm first call), and Numba's first call for
comparison.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np

from benchmarks import timing
from benchmarks.peers import load

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _best(fn):
    return timing.best_of(fn, repeat=7, min_repeat=5, budget=1.0, min_sample=20e-3, max_number=100000)


def launch():
    out = []

    def emit(peer, what, fn):
        try:
            fn()
            out.append({"peer": peer, "what": what, "time_s": _best(fn)})
        except Exception as e:  # noqa: BLE001
            out.append({"peer": peer, "what": what, "error": f"{type(e).__name__}: {e}"[:200]})

    x = np.ones(1, np.float32)
    y = np.ones(1, np.float32)
    tk = load("tack")
    if tk.available() is None:
        import tack

        k = tk.kernels()["saxpy"]
        tx, ty = tack.array(x), tack.array(y)
        emit("tack", "Tack arrays", lambda: k(2.0, tx, ty))
        emit("tack", "NumPy arrays", lambda: k(2.0, x, y))
    nb = load("numba")
    if nb.available() is None:
        f = nb.kernels()["saxpy_serial"]
        a = np.float32(2.0)
        emit("numba", "@njit call", lambda: f(a, x, y))
        g = nb.kernels()["saxpy"]
        emit("numba", "@njit(parallel=True) call", lambda: g(a, x, y))
    wp_ = load("warp")
    if wp_.available() is None:
        import warp as wp

        wp_.setup(None)
        k = wp_.kernels()["saxpy"]
        wx = wp.array(x, dtype=float, device="cpu")
        wy = wp.array(y, dtype=float, device="cpu")
        emit("warp", "wp.launch on cpu", lambda: wp.launch(k, dim=1, inputs=[2.0, wx, wy], device="cpu"))
    ti_ = load("taichi")
    if ti_.available() is None:
        import taichi as ti

        ti_.setup(None)
        k = ti_.kernels()["saxpy_nd"]
        nx = ti.ndarray(ti.f32, shape=1)
        ny = ti.ndarray(ti.f32, shape=1)
        emit("taichi", "ti.ndarray call", lambda: k(2.0, nx, ny))
    c = load("c")
    if c.available() is None:
        lib = c.library()
        px, py = x.ctypes.data, y.ctypes.data
        emit("c", "ctypes call", lambda: lib.ref_saxpy_serial(1, 2.0, px, py))
    for rec in out:
        print(json.dumps(rec), flush=True)


_KERNEL = textwrap.dedent('''
    import sys, time
    t0 = time.perf_counter()
    import numpy as np
    import tack
    t1 = time.perf_counter()

    @tack.kernel
    def saxpy(a, x, y):
        for i in range(y.shape[0]):
            y[i] = a * x[i] + y[i]

    x = np.ones(1024, np.float32)
    y = np.ones(1024, np.float32)
    t2 = time.perf_counter()
    saxpy(2.0, x, y)
    t3 = time.perf_counter()
    saxpy(2.0, x, y)
    t4 = time.perf_counter()
    assert y[0] == 5.0
    print(t1 - t0, t3 - t2, t4 - t3)
''')

_NUMBA = textwrap.dedent('''
    import time
    import numpy as np
    t0 = time.perf_counter()
    import numba
    t1 = time.perf_counter()

    @numba.njit(cache=CACHE)
    def saxpy(a, x, y):
        for i in range(y.shape[0]):
            y[i] = a * x[i] + y[i]

    x = np.ones(1024, np.float32)
    y = np.ones(1024, np.float32)
    t2 = time.perf_counter()
    saxpy(np.float32(2.0), x, y)
    t3 = time.perf_counter()
    print(t1 - t0, t3 - t2, 0.0)
''')


def _py(code, env, tmp, name="script.py"):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(code)
    r = subprocess.run([sys.executable, path], env=env, capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise RuntimeError((r.stderr or r.stdout).strip().splitlines()[-1:] or ["failed"])
    return [float(v) for v in r.stdout.split()]


def startup(repeat=3):
    """{name: best seconds or error string}: import and first-call latencies."""
    res = {}
    env = dict(os.environ)
    # import tack, alone in a fresh process
    imp = [f"import time; t = time.perf_counter(); import {m}; "
           f"print(time.perf_counter() - t, int('numpy' in __import__('sys').modules))"
           for m in ("tack", "numpy")]
    for code, key in zip(imp, ("import tack", "import numpy")):
        best = None
        for _ in range(5):
            r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
            if r.returncode:
                res[key] = "error: " + (r.stderr.strip().splitlines() or ["?"])[-1]
                break
            t, has_np = r.stdout.split()
            best = float(t) if best is None else min(best, float(t))
            if key == "import tack":
                res["import tack loads numpy"] = bool(int(has_np))
        else:
            res[key] = best
    tk = load("tack")
    if tk.available() is None:
        cold, warm = [], []
        for _ in range(repeat):
            with tempfile.TemporaryDirectory(prefix="tack-bench-cache-") as cache:
                env2 = dict(env, TACK_CACHE_DIR=cache)
                try:
                    _, c, _ = _py(_KERNEL, env2, cache)
                    _, w, _ = _py(_KERNEL, env2, cache)
                except Exception as e:  # noqa: BLE001
                    res["tack cold compile"] = res["tack warm first call"] = f"error: {e}"
                    break
                cold.append(c)
                warm.append(w)
        else:
            res["tack cold compile"], res["tack warm first call"] = min(cold), min(warm)
    else:
        res["tack cold compile"] = res["tack warm first call"] = "tack.kernel unavailable"
    if load("numba").available() is None:
        with tempfile.TemporaryDirectory(prefix="tack-bench-numba-") as tmp:
            try:
                env2 = dict(env, NUMBA_CACHE_DIR=tmp)
                cold = min(_py(_NUMBA.replace("CACHE", "False"), env2, tmp)[1] for _ in range(repeat))
                _py(_NUMBA.replace("CACHE", "True"), env2, tmp, "cached.py")
                warm = min(_py(_NUMBA.replace("CACHE", "True"), env2, tmp, "cached.py")[1]
                           for _ in range(repeat))
                res["numba cold compile"], res["numba warm first call"] = cold, warm
            except Exception as e:  # noqa: BLE001
                res["numba cold compile"] = f"error: {e}"
    return res


if __name__ == "__main__":
    if sys.argv[1:] == ["launch"]:
        launch()
    else:
        print(json.dumps(startup()))
