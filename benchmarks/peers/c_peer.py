"""Hand-written C with OpenMP (benchmarks/c/reference.c), compiled at run time
with ``cc -O3 -march=native -fno-math-errno -ffp-contract=off -fopenmp`` into a temporary
directory and called through ctypes.  The thread count comes from OMP_NUM_THREADS (set by the
driver)."""

import ctypes
import os
import shutil
import subprocess
import tempfile

import numpy as np

NAME, LABEL = "c", "C+OpenMP"
SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "c", "reference.c")
# -fno-math-errno: sqrtf may then vectorize (without it GCC keeps a scalar
# call for the errno of negative inputs); Tack's JIT passes it too.
# -ffp-contract=off: a * b + c rounded twice, as the kernels say (and NumPy,
# Numba and Tack do), not fused into an FMA (reference.c says more).
FLAGS = ["-O3", "-march=native", "-fno-math-errno", "-ffp-contract=off", "-fopenmp", "-std=gnu11", "-shared", "-fPIC"]
_lib = None
_why = None


def compiler():
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or "cc"


def library():
    """Compile reference.c once per process; the ctypes library."""
    global _lib, _why
    if _lib is not None or _why is not None:
        return _lib
    tmp = tempfile.mkdtemp(prefix="tack-bench-c-")
    out = os.path.join(tmp, "libreference.so")
    try:
        subprocess.run([compiler(), *FLAGS, "-o", out, SOURCE, "-lm"], check=True,
                       capture_output=True, text=True)
        lib = ctypes.CDLL(out)
    except (OSError, subprocess.CalledProcessError) as e:
        _why = f"cannot build the C reference: {getattr(e, 'stderr', '') or e}".strip()
        return None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # the loaded library stays mapped
    i64, f32, i32, p = ctypes.c_int64, ctypes.c_float, ctypes.c_int32, ctypes.c_void_p
    sig = {
        "ref_saxpy": [i64, f32, p, p], "ref_saxpy_serial": [i64, f32, p, p],
        "ref_radius_squared": [i64, i64, i64, p],
        "ref_stencil": [i64, f32, f32, p, p],
        "ref_nbody": [i64, f32, p, p, p, p, p, p, p],
        "ref_mandelbrot": [i64, i64, f32, f32, f32, f32, i32, p],
        "ref_sum": [i64, p, p], "ref_histogram": [i64, p, i32, p], "ref_normalize": [i64, p, p],
        "ref_stencil_local": [i64, i64, i64, p, p], "ref_conv2d": [i64, i64, i64, p, p, p],
        "ref_matmul_acc": [i64, i64, i64, p, p, p], "ref_hist2": [i64, p, p, i32, p, p],
        "ref_transcendental": [i64, p, p],
        "ref_triangle": [i64, p, p, p],
        "bw_write": [i64, p, f32], "bw_copy": [i64, p, p], "bw_memset": [i64, p],
    }
    for name, args in sig.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, None
    lib.ref_threads.restype = ctypes.c_int
    _lib = lib
    return lib


def available():
    library()
    return _why


def setup(threads):
    pass  # OMP_NUM_THREADS, set before the process started


def threads():
    return library().ref_threads()


def _p(a):
    return a.ctypes.data


def prepare(kernel, inp):
    lib = library()
    if kernel == "saxpy":
        n, a, x, y = inp["y"].shape[0], inp["a"], _p(inp["x"]), _p(inp["y"])
        run = lambda inp=inp: lib.ref_saxpy(n, a, x, y)  # noqa: E731
    elif kernel == "radius_squared":
        n, nx, ny, v = inp["values"].shape[0], inp["nx"], inp["ny"], _p(inp["values"])
        run = lambda inp=inp: lib.ref_radius_squared(n, nx, ny, v)  # noqa: E731
    elif kernel == "stencil":
        n, c0, c1, a, o = inp["a"].shape[0], inp["c0"], inp["c1"], _p(inp["a"]), _p(inp["out"])
        run = lambda inp=inp: lib.ref_stencil(n, c0, c1, a, o)  # noqa: E731
    elif kernel == "nbody":
        args = [inp["px"].shape[0], inp["eps2"]] + [_p(inp[k]) for k in
                                                     ("px", "py", "pz", "m", "ax", "ay", "az")]
        run = lambda inp=inp: lib.ref_nbody(*args)  # noqa: E731
    elif kernel == "mandelbrot":
        args = [inp["out"].shape[0], inp["w"], inp["x0"], inp["y0"], inp["dx"], inp["dy"],
                inp["max_iter"], _p(inp["out"])]
        run = lambda inp=inp: lib.ref_mandelbrot(*args)  # noqa: E731
    elif kernel == "sum":
        n, x, o = inp["x"].shape[0], _p(inp["x"]), _p(inp["out"])
        run = lambda inp=inp: lib.ref_sum(n, x, o)  # noqa: E731
    elif kernel == "histogram":
        n, k, nb, h = inp["keys"].shape[0], _p(inp["keys"]), inp["hist"].shape[0], _p(inp["hist"])
        run = lambda inp=inp: lib.ref_histogram(n, k, nb, h)  # noqa: E731
    elif kernel == "normalize":
        n, v, o = inp["v"].shape[0], _p(inp["v"]), _p(inp["out"])
        run = lambda inp=inp: lib.ref_normalize(n, v, o)  # noqa: E731
    elif kernel == "stencil_local":
        (n0, n1, n2), a, o = inp["a"].shape, _p(inp["a"]), _p(inp["out"])
        run = lambda inp=inp: lib.ref_stencil_local(n0, n1, n2, a, o)  # noqa: E731
    elif kernel == "conv2d":
        n, t, m = inp["img"].shape[0], inp["w"].shape[0], inp["out"].shape[0]
        img, w, o = _p(inp["img"]), _p(inp["w"]), _p(inp["out"])
        run = lambda inp=inp: lib.ref_conv2d(n, t, m, img, w, o)  # noqa: E731
    elif kernel == "matmul_acc":
        (n, kk), m = inp["A"].shape, inp["B"].shape[1]
        A, B, C = _p(inp["A"]), _p(inp["B"]), _p(inp["C"])
        run = lambda inp=inp: lib.ref_matmul_acc(n, kk, m, A, B, C)  # noqa: E731
    elif kernel == "hist2":
        n, nb = inp["keys"].shape[0], inp["counts"].shape[0]
        k, w, c, s = _p(inp["keys"]), _p(inp["w"]), _p(inp["counts"]), _p(inp["sums"])
        run = lambda inp=inp: lib.ref_hist2(n, k, w, nb, c, s)  # noqa: E731
    elif kernel == "transcendental":
        n, x, out = inp["x"].shape[0], _p(inp["x"]), _p(inp["out"])
        run = lambda inp=inp: lib.ref_transcendental(n, x, out)  # noqa: E731
    elif kernel == "triangle":
        n, x, y, o = inp["out"].shape[0], _p(inp["x"]), _p(inp["y"]), _p(inp["out"])
        run = lambda inp=inp: lib.ref_triangle(n, x, y, o)  # noqa: E731
    else:
        raise KeyError(kernel)
    return run, None  # run keeps inp (the arrays behind the addresses) alive


def bandwidth(nbytes, timer):
    """Best times of plain stores, a copy and memset over nbytes: {name: seconds}."""
    lib = library()
    n = nbytes // 4
    src = np.ones(n, np.float32)
    dst = np.zeros(n, np.float32)
    return {
        "write": timer(lambda: lib.bw_write(n, _p(dst), 1.0)),
        "copy": timer(lambda: lib.bw_copy(n, _p(src), _p(dst))),
        "memset": timer(lambda: lib.bw_memset(n, _p(dst))),
    }
