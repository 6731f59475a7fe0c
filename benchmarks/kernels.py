"""What is measured: each kernel's inputs, sizes, expected result and tolerance.

Every peer computes the same function on the same inputs (made here from fixed
seeds, so each worker process makes identical ones).  A kernel's *outputs* are
the arrays it writes; before the checked run they are reset to their initial
values (``fresh``), then the peer runs once and its outputs are compared with
Tack's (and Tack's with the NumPy/float64 reference) using the kernel's
``check``.  Timed runs after that reuse the inputs as they are (saxpy keeps
accumulating into y, the sum into out[0]: the work per call is the same).

Sizes go from tiny (a few KiB) to at least 64 MiB of data for the
memory-bound kernels.  The compute-bound ones (n-body, mandelbrot) are sized by
work, not bytes: their largest size is one that the fastest peer finishes in
tens of milliseconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

KiB, MiB = 1024, 1024 * 1024


@dataclass
class Spec:
    name: str
    kind: str  # "memory" or "compute"
    what: str  # one line for the report
    sizes: list  # full run
    quick: list  # --quick and the tests
    make: Callable  # size -> dict of inputs (NumPy arrays and Python scalars)
    outputs: tuple  # names of the arrays the kernel writes
    reference: Callable  # inputs -> dict name -> expected array
    check: Callable  # (got dict, expected dict) -> None or a message
    nbytes: Callable  # size -> bytes a call must move (0: not memory-bound)
    work: Callable  # size -> relative work (to project run times)
    label: Callable  # size -> short label
    footprint: Callable  # size -> bytes of data
    fresh: dict = field(default_factory=dict)  # output name -> (inputs -> initial value)
    peers: tuple = ()  # the peers that have it written (empty: every peer)


def _rng(seed):
    return np.random.default_rng(seed)


def _count(n):
    for unit, div in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div}{unit}"
    return str(n)


def _close(rtol, atol_scale=0.0):
    """A check: every output within rtol (plus atol_scale * max|expected|)."""

    def check(got, expected):
        for name, exp in expected.items():
            g = np.asarray(got[name])
            if g.shape != exp.shape:
                return f"{name}: shape {g.shape}, expected {exp.shape}"
            known = ~np.isnan(exp) if exp.dtype.kind == "f" else np.ones(exp.shape, bool)
            atol = atol_scale * float(np.max(np.abs(exp[known]))) if known.any() else 0.0
            bad = ~np.isclose(g, exp, rtol=rtol, atol=atol) & known
            if bad.any():
                k = int(np.flatnonzero(bad.ravel())[0])
                return (f"{name}: {int(bad.sum())} of {bad.size} differ, first at {k}: "
                        f"{g.ravel()[k]!r} vs {exp.ravel()[k]!r}")
        return None

    return check


# ------------------------------------------------------------------ saxpy
def _saxpy_make(n):
    r = _rng(1)
    x, y = r.random(n, dtype=np.float32), r.random(n, dtype=np.float32)
    return {"a": 2.0, "x": x, "y": y, "_y0": y.copy()}


def _saxpy_ref(inp):
    return {"y": (np.float32(inp["a"]) * inp["x"] + inp["_y0"]).astype(np.float32)}


# ------------------------------------------------------------------ radius_squared
def _radius_make(n):
    return {"values": np.zeros(n, np.float32), "nx": 256, "ny": 256}


def _radius_ref(inp):
    n, nx, ny = inp["values"].shape[0], inp["nx"], inp["ny"]
    i = np.arange(n, dtype=np.int64)
    x = (i % nx).astype(np.float32) - np.float32((nx - 1) * 0.5)
    y = ((i // nx) % ny).astype(np.float32) - np.float32((ny - 1) * 0.5)
    z = (i // (nx * ny)).astype(np.float32) - np.float32(2.0)
    return {"values": x * x + y * y + z * z}


# ------------------------------------------------------------------ 3-D 7-point stencil
def _stencil_make(n):
    return {"a": _rng(2).random((n, n, n), dtype=np.float32), "out": np.zeros((n, n, n), np.float32),
            "c0": 0.5, "c1": 1.0 / 12.0}


def _stencil_ref(inp):
    a = inp["a"].astype(np.float64)
    out = np.zeros_like(a)
    c = a[1:-1, 1:-1, 1:-1]
    nb = (a[:-2, 1:-1, 1:-1] + a[2:, 1:-1, 1:-1] + a[1:-1, :-2, 1:-1] + a[1:-1, 2:, 1:-1]
          + a[1:-1, 1:-1, :-2] + a[1:-1, 1:-1, 2:])
    out[1:-1, 1:-1, 1:-1] = inp["c0"] * c + inp["c1"] * nb
    return {"out": out.astype(np.float32)}


# ------------------------------------------------------------------ n-body
def _nbody_make(n):
    r = _rng(3)
    p = r.standard_normal((3, n)).astype(np.float32)
    return {"px": p[0].copy(), "py": p[1].copy(), "pz": p[2].copy(),
            "m": r.uniform(0.5, 1.5, n).astype(np.float32),
            "ax": np.zeros(n, np.float32), "ay": np.zeros(n, np.float32),
            "az": np.zeros(n, np.float32), "eps2": 0.01}


def _nbody_ref(inp):
    # float64, on every row up to 1024 bodies and on 1024 evenly spaced rows
    # beyond (NaN elsewhere: not checked), to keep the reference cheap.
    n = inp["px"].shape[0]
    p = np.stack([inp["px"], inp["py"], inp["pz"]]).astype(np.float64)
    m = inp["m"].astype(np.float64)
    rows = np.arange(0, n, max(1, n // 1024))
    acc = np.full((3, n), np.nan)
    step = max(1, (1 << 22) // max(n, 1))
    for lo in range(0, rows.size, step):
        r = rows[lo:lo + step]
        d = p[:, None, :] - p[:, r, None]  # (3, rows, n): p_j - p_i
        r2 = (d * d).sum(0) + inp["eps2"]
        s = m[None, :] / (r2 * np.sqrt(r2))
        acc[:, r] = (d * s).sum(-1)
    return {"ax": acc[0].astype(np.float32), "ay": acc[1].astype(np.float32),
            "az": acc[2].astype(np.float32)}


# ------------------------------------------------------------------ mandelbrot
MANDEL_ITER = 64


def _mandel_make(npix):
    w = int(round(math.sqrt(npix)))
    h = npix // w
    return {"out": np.zeros(w * h, np.int32), "w": w, "x0": -2.0, "y0": -1.25,
            "dx": 3.0 / w, "dy": 2.5 / h, "max_iter": MANDEL_ITER}


def _mandel_ref(inp):
    # On at most ~64K evenly spaced pixels (-1 elsewhere: not checked).
    n, w = inp["out"].shape[0], inp["w"]
    f = np.float32
    i = np.arange(0, n, max(1, n // 65536))
    cx = f(inp["x0"]) + (i % w).astype(f) * f(inp["dx"])
    cy = f(inp["y0"]) + (i // w).astype(f) * f(inp["dy"])
    x = np.zeros(i.size, f)
    y = np.zeros(i.size, f)
    it = np.zeros(i.size, np.int32)
    live = np.ones(i.size, bool)
    for _ in range(inp["max_iter"]):
        live &= x * x + y * y <= f(4.0)
        if not live.any():
            break
        xt = x * x - y * y + cx
        y = np.where(live, f(2.0) * x * y + cy, y)
        x = np.where(live, xt, x)
        it += live
    out = np.full(n, -1, np.int32)
    out[i] = it
    return {"out": out}


def _mandel_check(got, expected):
    g, e = np.asarray(got["out"]), expected["out"]
    if g.shape != e.shape:
        return f"out: shape {g.shape}, expected {e.shape}"
    # Points on the set's boundary are chaotic: a fused multiply-add or another
    # rounding changes their count.  Allow 1% of the pixels to differ.
    known = e >= 0
    bad = int(((g != e) & known).sum())
    if bad > max(2, int(known.sum()) // 100):
        return f"out: {bad} of {int(known.sum())} iteration counts differ"
    return None


# ------------------------------------------------------------------ sum reduction
def _sum_make(n):
    return {"x": _rng(4).random(n, dtype=np.float32), "out": np.zeros(1, np.float32)}


def _sum_ref(inp):
    return {"out": np.array([inp["x"].sum(dtype=np.float64)], np.float32)}


# ------------------------------------------------------------------ histogram
HIST_BINS = 256


def _hist_make(n):
    return {"keys": _rng(5).integers(0, HIST_BINS, n, dtype=np.int32),
            "hist": np.zeros(HIST_BINS, np.int32)}


def _hist_ref(inp):
    return {"hist": np.bincount(inp["keys"], minlength=HIST_BINS).astype(np.int32)}


# ------------------------------------------------------------------ normalize vec3
def _norm_make(n):
    v = _rng(6).uniform(-1.0, 1.0, (n, 3)).astype(np.float32)
    v[:, 0] += np.where(v[:, 0] >= 0, 0.1, -0.1).astype(np.float32)  # never zero-length
    return {"v": v, "out": np.zeros((n, 3), np.float32)}


def _norm_ref(inp):
    v = inp["v"].astype(np.float64)
    return {"out": (v / np.sqrt((v * v).sum(1, keepdims=True))).astype(np.float32)}


# ------------------------------------------------------------------ round two (issue 21)
# Kernels written the way user programs are: each was slower than Numba for a
# cause the compiler has since removed (indices through locals, filter-tap
# loops, an owned cell's +=, two histograms in one loop).
def _stencil_local_make(n):
    return {"a": _rng(7).random((n, n, n)), "out": np.zeros((n, n, n))}


def _stencil_local_ref(inp):
    a = inp["a"]
    out = np.zeros_like(a)
    c = a[1:-1, 1:-1, 1:-1]
    out[1:-1, 1:-1, 1:-1] = (a[2:, 1:-1, 1:-1] + a[:-2, 1:-1, 1:-1] + a[1:-1, 2:, 1:-1] + a[1:-1, :-2, 1:-1]
                             + a[1:-1, 1:-1, 2:] + a[1:-1, 1:-1, :-2] - 6.0 * c)
    return {"out": out}


CONV_TAPS = 5


def _conv_make(n):
    r = _rng(8)
    return {"img": r.random((n, n), dtype=np.float32),
            "w": r.random((CONV_TAPS, CONV_TAPS), dtype=np.float32),
            "out": np.zeros((n - CONV_TAPS + 1, n - CONV_TAPS + 1), np.float32)}


def _conv_ref(inp):
    img, w = inp["img"].astype(np.float64), inp["w"].astype(np.float64)
    m = inp["out"].shape[0]
    out = np.zeros((m, m))
    for di in range(CONV_TAPS):
        for dj in range(CONV_TAPS):
            out += w[di, dj] * img[di:di + m, dj:dj + m]
    return {"out": out.astype(np.float32)}


def _matmul_make(n):
    r = _rng(9)
    return {"A": r.random((n, n)), "B": r.random((n, n)), "C": np.zeros((n, n))}


def _matmul_ref(inp):
    return {"C": inp["A"] @ inp["B"]}


HIST2_BINS = 256


def _hist2_make(n):
    r = _rng(10)
    return {"keys": r.integers(0, HIST2_BINS, n, dtype=np.int32), "w": r.random(n),
            "counts": np.zeros(HIST2_BINS, np.int32), "sums": np.zeros(HIST2_BINS)}


def _hist2_ref(inp):
    keys = inp["keys"]
    return {"counts": np.bincount(keys, minlength=HIST2_BINS).astype(np.int32),
            "sums": np.bincount(keys, weights=inp["w"], minlength=HIST2_BINS)}


# out[i] = tanh(log(x[i] + 1) * 0.5) + sqrt(exp(-x[i])): f32, four calls of the
# C library's math functions an element, nothing else (issue 21's "transcendental
# math in SIMD lanes").  x in [0, 4): log's argument in [1, 5), exp's in (-4, 0].
def _transc_make(n):
    return {"x": (_rng(11).random(n, dtype=np.float32) * np.float32(4.0)), "out": np.zeros(n, np.float32)}


def _transc_ref(inp):
    x = inp["x"].astype(np.float64)
    return {"out": (np.tanh(np.log(x + 1.0) * 0.5) + np.sqrt(np.exp(-x))).astype(np.float32)}


# ------------------------------------------------------------------ load balance
def _triangle_make(n):
    r = _rng(11)
    return {"x": r.random(n), "y": r.random(n), "out": np.zeros(n)}


def _triangle_ref(inp):
    n = inp["out"].shape[0]
    return {"out": np.convolve(inp["x"], inp["y"])[:n]}


def _zeros_like(name):
    return lambda inp: np.zeros_like(inp[name])


def _elems(nbytes, itemsize):
    return nbytes // itemsize


_MEM = [4 * KiB, 256 * KiB, 4 * MiB, 64 * MiB]  # bytes of the main array
ROUND_TWO = ("tack", "c", "numba", "numpy")  # the peers the round-two kernels are written for
_MEM_QUICK = [4 * KiB, 64 * KiB]

SPECS = {
    "saxpy": Spec(
        "saxpy", "memory", "y = a*x + y (f32)",
        [_elems(b, 4) for b in _MEM], [_elems(b, 4) for b in _MEM_QUICK],
        _saxpy_make, ("y",), _saxpy_ref, _close(1e-6, 1e-7),
        nbytes=lambda n: 12 * n, work=float, label=_count, footprint=lambda n: 8 * n,
        fresh={"y": lambda inp: inp["_y0"]}),
    "radius_squared": Spec(
        "radius_squared", "memory", "the spec's kernel: i -> (x, y, z) by // and %, store r^2 (f32)",
        [_elems(b, 4) for b in _MEM], [_elems(b, 4) for b in _MEM_QUICK],
        _radius_make, ("values",), _radius_ref, _close(1e-6, 1e-7),
        nbytes=lambda n: 4 * n, work=float, label=_count, footprint=lambda n: 4 * n,
        fresh={"values": _zeros_like("values")}),
    "stencil": Spec(
        "stencil", "memory", "3-D 7-point stencil on an n^3 grid, interior points (f32)",
        [16, 40, 100, 256], [8, 16],
        _stencil_make, ("out",), _stencil_ref, _close(1e-5, 1e-6),
        nbytes=lambda n: 8 * n ** 3, work=lambda n: float(n ** 3), label=lambda n: f"{n}^3",
        footprint=lambda n: 8 * n ** 3, fresh={"out": _zeros_like("out")}),
    "nbody": Spec(
        "nbody", "compute", "all-pairs gravity, n bodies (f32, 1/sqrt)",
        [256, 1024, 4096, 16384], [64, 200],
        _nbody_make, ("ax", "ay", "az"), _nbody_ref, _close(1e-3, 1e-4),
        nbytes=lambda n: 0, work=lambda n: float(n) * n, label=lambda n: f"n={n}",
        footprint=lambda n: 28 * n,
        fresh={k: _zeros_like(k) for k in ("ax", "ay", "az")}),
    "mandelbrot": Spec(
        "mandelbrot", "compute", f"escape count, while loop, max {MANDEL_ITER} iterations (f32)",
        [64 * 64, 256 * 256, 1024 * 1024, 4096 * 4096], [32 * 32, 64 * 64],
        _mandel_make, ("out",), _mandel_ref, _mandel_check,
        nbytes=lambda n: 0, work=float, label=lambda n: f"{int(math.isqrt(n))}^2",
        footprint=lambda n: 4 * n, fresh={"out": _zeros_like("out")}),
    "sum": Spec(
        "sum", "memory", "out[0] += x[i] over all i (f32)",
        [_elems(b, 4) for b in _MEM], [_elems(b, 4) for b in _MEM_QUICK],
        _sum_make, ("out",), _sum_ref, _close(2e-3),
        nbytes=lambda n: 4 * n, work=float, label=_count, footprint=lambda n: 4 * n,
        fresh={"out": _zeros_like("out")}),
    "histogram": Spec(
        "histogram", "memory", f"hist[keys[i]] += 1, {HIST_BINS} bins (i32, atomics)",
        [_elems(b, 4) for b in _MEM], [_elems(b, 4) for b in _MEM_QUICK],
        _hist_make, ("hist",), _hist_ref, _close(0.0),
        nbytes=lambda n: 4 * n, work=float, label=_count, footprint=lambda n: 4 * n,
        fresh={"hist": _zeros_like("hist")}),
    "normalize": Spec(
        "normalize", "memory", "out[i] = normalize(v[i]) over vec3 (f32)",
        [_elems(b, 12) for b in _MEM], [_elems(b, 12) for b in _MEM_QUICK],
        _norm_make, ("out",), _norm_ref, _close(2e-6, 1e-7),
        nbytes=lambda n: 24 * n, work=float, label=_count, footprint=lambda n: 24 * n,
        fresh={"out": _zeros_like("out")}),
    "stencil_local": Spec(
        "stencil_local", "memory", "3-D 7-point stencil, indices through locals (i = i0 + 1; a[i + 1, j, k]) (f64)",
        [16, 40, 100, 200], [8, 16],
        _stencil_local_make, ("out",), _stencil_local_ref, _close(1e-12, 1e-12),
        nbytes=lambda n: 16 * n ** 3, work=lambda n: float(n ** 3), label=lambda n: f"{n}^3",
        footprint=lambda n: 16 * n ** 3, fresh={"out": _zeros_like("out")}, peers=ROUND_TWO),
    "conv2d": Spec(
        "conv2d", "compute", f"2-D convolution, loops over the {CONV_TAPS}x{CONV_TAPS} filter taps (f32)",
        [64, 256, 1024, 2048], [16, 24],
        _conv_make, ("out",), _conv_ref, _close(1e-5, 1e-6),
        nbytes=lambda n: 0, work=lambda n: float(n * n * CONV_TAPS * CONV_TAPS), label=lambda n: f"{n}^2",
        footprint=lambda n: 8 * n * n, fresh={"out": _zeros_like("out")}, peers=ROUND_TWO),
    "matmul_acc": Spec(
        "matmul_acc", "compute", "C[i, j] += A[i, k] * B[k, j], rows in parallel (f64)",
        [64, 256, 512, 1024], [8, 16],
        _matmul_make, ("C",), _matmul_ref, _close(1e-12, 1e-12),
        nbytes=lambda n: 0, work=lambda n: float(n) ** 3, label=lambda n: f"{n}^2",
        footprint=lambda n: 24 * n * n, fresh={"C": _zeros_like("C")}, peers=ROUND_TWO),
    "hist2": Spec(
        "hist2", "memory", f"counts[keys[i]] += 1 and sums[keys[i]] += w[i] in one loop, {HIST2_BINS} bins (i32, f64)",
        [_elems(b, 12) for b in _MEM], [_elems(b, 12) for b in _MEM_QUICK],
        _hist2_make, ("counts", "sums"), _hist2_ref, _close(1e-9),
        nbytes=lambda n: 12 * n, work=float, label=_count, footprint=lambda n: 12 * n,
        fresh={"counts": _zeros_like("counts"), "sums": _zeros_like("sums")}, peers=ROUND_TWO),
    "transcendental": Spec(
        "transcendental", "compute", "out[i] = tanh(log(x[i] + 1) * 0.5) + sqrt(exp(-x[i])) (f32)",
        [_elems(b, 4) for b in _MEM], [_elems(b, 4) for b in _MEM_QUICK],
        _transc_make, ("out",), _transc_ref, _close(1e-5, 1e-6),
        nbytes=lambda n: 0, work=float, label=_count, footprint=lambda n: 8 * n,
        fresh={"out": _zeros_like("out")}, peers=ROUND_TWO),
    "triangle": Spec(
        "triangle", "compute", "out[i] = sum of x[j] * y[i - j] for j <= i: iteration i costs i (load balance) (f64)",
        [1000, 4000, 16000], [64, 256],
        _triangle_make, ("out",), _triangle_ref, _close(1e-9, 1e-12),
        nbytes=lambda n: 0, work=lambda n: float(n) * n / 2, label=lambda n: f"n={n}",
        footprint=lambda n: 24 * n, fresh={"out": _zeros_like("out")}, peers=ROUND_TWO),
}

ORDER = list(SPECS)


def reset(spec, inp):
    """Put the outputs back to their initial values, in place."""
    for name, make in spec.fresh.items():
        inp[name][...] = make(inp)
