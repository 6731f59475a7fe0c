"""Reaction-diffusion: the Gray-Scott model growing spots and stripes, one kernel call a step.

    python docs/examples/reaction_diffusion.py [--n 256] [--steps 4000] [--device cpu] [--output-dir .]

Two chemicals U and V live on an n x n periodic grid. U is fed in at rate F, V is removed at
rate F + k, and where they meet U turns into V (U + 2V -> 3V). Both diffuse, U twice as fast:

    du/dt = Du lap(u) - u v^2 + F (1 - u)
    dv/dt = Dv lap(v) + u v^2 - (F + k) v

Started from U = 1, V = 0 with a few noisy squares of V, the reaction spreads into a pattern
whose kind F and k choose (here F = 0.037, k = 0.06: the "worms" of Pearson's classification).
One kernel does a step: each grid point reads its four neighbours (the grid wraps around) and
writes the next u and v; two pairs of arrays take turns.

The check: the first steps against the same update in NumPy (f64, to rounding), and at the end
u and v within [0, 1] and a pattern formed (V spread well beyond the starting squares). With VTK
installed the final V is drawn as reaction_diffusion.png (tack.vis).
"""

import argparse
import os
import time

import numpy as np

import tack

DU, DV = 0.16, 0.08      # diffusion rates (grid units, dt = 1)
F, K = 0.037, 0.06       # feed and kill rates


@tack.kernel
def gray_scott(u, v, un, vn, du, dv, f, k):
    """One explicit Euler step (dt = 1) on the periodic grid, from (u, v) into (un, vn)."""
    n = u.shape[0]
    m = u.shape[1]
    for i, j in tack.ndrange(n, m):
        up = (i + n - 1) % n
        down = (i + 1) % n
        left = (j + m - 1) % m
        right = (j + 1) % m
        uc = u[i, j]
        vc = v[i, j]
        lu = u[up, j] + u[down, j] + u[i, left] + u[i, right] - 4.0 * uc
        lv = v[up, j] + v[down, j] + v[i, left] + v[i, right] - 4.0 * vc
        uvv = uc * vc * vc
        un[i, j] = uc + du * lu - uvv + f * (1.0 - uc)
        vn[i, j] = vc + dv * lv + uvv - (f + k) * vc


def numpy_step(u, v):
    """The same step in NumPy: np.roll wraps as the kernel's modulo does."""
    lap = lambda a: np.roll(a, 1, 0) + np.roll(a, -1, 0) + np.roll(a, 1, 1) + np.roll(a, -1, 1) - 4.0 * a
    uvv = u * v * v
    return u + DU * lap(u) - uvv + F * (1.0 - u), v + DV * lap(v) + uvv - (F + K) * v


def start(n, seed=3):
    """U = 1 and V = 0 everywhere but in a few squares of V = 0.25 (with 1% noise)."""
    rng = np.random.default_rng(seed)
    u, v = np.ones((n, n)), np.zeros((n, n))
    s = max(n // 16, 2)
    for ci, cj in rng.integers(s, n - s, (5, 2)):
        u[ci - s:ci + s, cj - s:cj + s] = 0.5
        v[ci - s:ci + s, cj - s:cj + s] = 0.25
    u += 0.01 * rng.standard_normal((n, n))
    v += 0.01 * rng.standard_normal((n, n))
    return u, v


def run(n, steps, device):
    u0, v0 = start(n)
    u, v = tack.array(u0, device=device), tack.array(v0, device=device)
    un, vn = tack.zeros((n, n), tack.f64, device=device), tack.zeros((n, n), tack.f64, device=device)
    # the first steps against NumPy
    want_u, want_v = u0, v0
    for _ in range(5):
        gray_scott(u, v, un, vn, DU, DV, F, K)
        u, v, un, vn = un, vn, u, v
        want_u, want_v = numpy_step(want_u, want_v)
    np.testing.assert_allclose(u.numpy(), want_u, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(v.numpy(), want_v, rtol=1e-12, atol=1e-14)
    tack.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps - 5):
        gray_scott(u, v, un, vn, DU, DV, F, K)
        u, v, un, vn = un, vn, u, v
    tack.synchronize()
    seconds = time.perf_counter() - t0
    return u.numpy(), v.numpy(), v0, seconds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=256, help="grid points along each side")
    ap.add_argument("--steps", type=int, default=4000, help="time steps (at least 5)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--output-dir", help="draw the final V as reaction_diffusion.png here (needs VTK)")
    args = ap.parse_args(argv)
    if args.n < 16 or args.steps < 5:
        ap.error(f"--n {args.n} --steps {args.steps}: the grid needs 16 points a side and the check 5 steps")
    u, v, v0, seconds = run(args.n, args.steps, args.device)
    print(f"{args.n} x {args.n} grid, {args.steps} steps on {args.device}: "
          f"{seconds / (args.steps - 5) * 1e6:.1f} us a step")
    assert np.isfinite(u).all() and np.isfinite(v).all()
    assert u.min() > -0.05 and u.max() < 1.05 and v.min() > -0.05 and v.max() < 1.05, (u.min(), v.max())
    grown, started = (v > 0.1).mean(), (v0 > 0.1).mean()
    print(f"V above 0.1 on {grown:.0%} of the grid (at the start {started:.0%})")
    assert grown > 1.5 * started, (grown, started)
    if args.output_dir:
        try:
            from tack import vis
        except ImportError:
            print("VTK is not installed: no picture")
        else:
            path = vis.render_slice(v, os.path.join(args.output_dir, "reaction_diffusion.png"), colormap="magma",
                                    title=f"Gray-Scott V after {args.steps} steps", size=(640, 560))
            print(f"wrote {path}")
    print("reaction-diffusion: all checks passed")


if __name__ == "__main__":
    main()
