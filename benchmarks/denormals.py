"""What subnormal floats cost, and what ``flush_denormals=True`` gives back:
a 2-D Gray-Scott reaction-diffusion solver, timed per step once its fields
hold subnormals, with and without the option, beside NumPy.

    python benchmarks/denormals.py [--n 512] [--dtype f64] [--warmup 8000]
        [--steps 100] [--rounds 7]

The run starts from U = 1, V = 0 with a seeded square in the middle and
steps ``--warmup`` times with the plain kernel.  With this feed and kill
rate the pattern dies out: V decays everywhere, through the subnormal range
(below 2.2e-308 in f64, 1.2e-38 in f32), and where the decay's products
round back to the same tiny value it stays there for good -- the printed
share of subnormal cells says how many hold one.
From that state each round times ``--steps`` steps of the plain kernel, of
the flush_denormals kernel and of NumPy (the same formulas, whole-array
expressions), each from a copy of the same state, and prints the best
round's milliseconds per step, and the plain kernel once more from the
flushed kernel's state (no subnormals left): what the subnormals cost.  The
flushed kernel's fields agree with the plain kernel's except where values
are below the smallest normal float.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import tack  # noqa: E402

DU, DV, FEED, KILL, DT = 0.16, 0.08, 0.02, 0.075, 1.0  # a pattern that dies out


def gray_scott(u, v, u2, v2, du, dv, feed, kill, dt):
    n, m = u.shape[0], u.shape[1]
    for i, j in tack.ndrange((1, n - 1), (1, m - 1)):
        uc = u[i, j]
        vc = v[i, j]
        lu = u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4 * uc
        lv = v[i - 1, j] + v[i + 1, j] + v[i, j - 1] + v[i, j + 1] - 4 * vc
        uvv = uc * vc * vc
        u2[i, j] = uc + dt * (du * lu - uvv + feed * (1 - uc))
        v2[i, j] = vc + dt * (dv * lv + uvv - (feed + kill) * vc)


plain = tack.kernel(gray_scott)
flushed = tack.kernel(gray_scott, flush_denormals=True)


def numpy_step(u, v, u2, v2, du, dv, feed, kill, dt):
    uc, vc = u[1:-1, 1:-1], v[1:-1, 1:-1]
    lu = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * uc
    lv = v[:-2, 1:-1] + v[2:, 1:-1] + v[1:-1, :-2] + v[1:-1, 2:] - 4 * vc
    uvv = uc * vc * vc
    u2[1:-1, 1:-1] = uc + dt * (du * lu - uvv + feed * (1 - uc))
    v2[1:-1, 1:-1] = vc + dt * (dv * lv + uvv - (feed + kill) * vc)


def initial(n, dtype):
    u, v = np.ones((n, n), dtype), np.zeros((n, n), dtype)
    c, r = n // 2, max(2, n // 20)
    u[c - r:c + r, c - r:c + r] = 0.5
    v[c - r:c + r, c - r:c + r] = 0.25
    return u, v


def run(step, u, v, steps, coef):
    u, v = u.copy(), v.copy()
    u2, v2 = u.copy(), v.copy()
    t = time.perf_counter()
    for _ in range(steps):
        step(u, v, u2, v2, *coef)
        u, u2, v, v2 = u2, u, v2, v
    return (time.perf_counter() - t) / steps, u, v


def subnormal_share(*arrays):
    tiny = np.finfo(arrays[0].dtype).tiny
    cells = sum(a.size for a in arrays)
    return sum(int(((a != 0) & (np.abs(a) < tiny)).sum()) for a in arrays) / cells


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--dtype", choices=["f32", "f64"], default="f64")
    ap.add_argument("--warmup", type=int, default=8000)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args(argv)
    dtype = np.float32 if a.dtype == "f32" else np.float64
    coef = tuple(dtype(c) for c in (DU, DV, FEED, KILL, DT))
    u, v = initial(a.n, dtype)
    t0 = time.perf_counter()
    _, u, v = run(plain, u, v, a.warmup, coef)
    print(f"Gray-Scott {a.n}x{a.n} {a.dtype}, Tack threads "
          f"{os.environ.get('TACK_NUM_THREADS', 'all')}: {a.warmup} warm-up steps in "
          f"{time.perf_counter() - t0:.1f} s; subnormal cells {100 * subnormal_share(u, v):.1f}%")
    best = {"plain": np.inf, "flush_denormals": np.inf, "numpy": np.inf, "plain, flushed state": np.inf}
    for _ in range(a.rounds):
        tp, up, vp = run(plain, u, v, a.steps, coef)
        tf, uf, vf = run(flushed, u, v, a.steps, coef)
        tn, un, vn = run(numpy_step, u, v, a.steps, coef)
        tc, _, _ = run(plain, uf, vf, a.steps, coef)
        best["plain"] = min(best["plain"], tp)
        best["flush_denormals"] = min(best["flush_denormals"], tf)
        best["numpy"] = min(best["numpy"], tn)
        best["plain, flushed state"] = min(best["plain, flushed state"], tc)
    tiny = np.finfo(dtype).tiny
    np.testing.assert_allclose(uf, up, rtol=1e-5, atol=16 * tiny)
    np.testing.assert_allclose(vf, vp, rtol=1e-5, atol=16 * tiny)
    print(f"after {a.steps} more steps: subnormal cells, plain {100 * subnormal_share(up, vp):.1f}%, "
          f"flush_denormals {100 * subnormal_share(uf, vf):.1f}%")
    for name, t in best.items():
        print(f"  {name:21s} {t * 1e3:8.3f} ms/step")
    print(f"  plain / flush_denormals: {best['plain'] / best['flush_denormals']:.2f}x")
    return best


if __name__ == "__main__":
    main()
