"""Shallow water: a finite-volume solver with a CFL time step, one kernel call a phase.

    python docs/examples/shallow_water.py [--n 256] [--steps 250] [--dtype f32|f64]
        [--boundary reflective|periodic] [--device cpu] [--output-dir .]

The 2-D shallow-water equations carry three conserved fields, the depth h and the momenta hu
and hv, on an n x n grid of cells with one layer of ghost cells around it. A step is three
kernels: `boundary` fills the ghosts (a wall reflects the normal momentum, or the grid wraps
around), `max_speed` finds the fastest wave |u| + sqrt(g h) with `tack.atomic_max`, which the
host reads back to choose the time step dt = CFL dx / max_speed, and `update` moves every cell
by the Rusanov fluxes through its four faces. The fluxes are `@tack.func`s returning a tuple of
three values, unpacked by the caller.

The check: the first steps against the same scheme written with NumPy slices, bit for bit (the
operations are the same, in the same order, and neither side fuses a multiply-add); then the
depth stays positive and, with walls or a periodic grid, the total mass is what it was to
rounding. With VTK installed the final depth is drawn as shallow_water.png (tack.vis).
"""

import argparse
import math
import os
import time

import numpy as np

import tack

G = 9.81     # gravity
CFL = 0.4    # Courant number: dt = CFL * dx / (fastest wave)


@tack.func
def flux_x(h, hu, hv, g):
    """The physical flux through a face normal to x."""
    u = hu / h
    return hu, hu * u + 0.5 * g * h * h, hv * u


@tack.func
def flux_y(h, hu, hv, g):
    v = hv / h
    return hv, hu * v, hv * v + 0.5 * g * h * h


@tack.func
def rusanov_x(hl, hul, hvl, hr, hur, hvr, g):
    """Rusanov's flux between a left and a right state: the mean flux less a jump term."""
    a = max(abs(hul / hl) + math.sqrt(g * hl), abs(hur / hr) + math.sqrt(g * hr))
    fl0, fl1, fl2 = flux_x(hl, hul, hvl, g)
    fr0, fr1, fr2 = flux_x(hr, hur, hvr, g)
    return (0.5 * (fl0 + fr0) - 0.5 * a * (hr - hl),
            0.5 * (fl1 + fr1) - 0.5 * a * (hur - hul),
            0.5 * (fl2 + fr2) - 0.5 * a * (hvr - hvl))


@tack.func
def rusanov_y(hl, hul, hvl, hr, hur, hvr, g):
    a = max(abs(hvl / hl) + math.sqrt(g * hl), abs(hvr / hr) + math.sqrt(g * hr))
    fl0, fl1, fl2 = flux_y(hl, hul, hvl, g)
    fr0, fr1, fr2 = flux_y(hr, hur, hvr, g)
    return (0.5 * (fl0 + fr0) - 0.5 * a * (hr - hl),
            0.5 * (fl1 + fr1) - 0.5 * a * (hur - hul),
            0.5 * (fl2 + fr2) - 0.5 * a * (hvr - hvl))


@tack.kernel
def boundary(h, hu, hv, periodic):
    """Fill the ghost cells: copies of the far side (periodic) or mirror images (walls)."""
    ny, nx = h.shape
    for j in range(1, nx - 1):              # the ghost rows
        if periodic:
            h[0, j], hu[0, j], hv[0, j] = h[ny - 2, j], hu[ny - 2, j], hv[ny - 2, j]
            h[ny - 1, j], hu[ny - 1, j], hv[ny - 1, j] = h[1, j], hu[1, j], hv[1, j]
        else:
            h[0, j], hu[0, j], hv[0, j] = h[1, j], hu[1, j], -hv[1, j]
            h[ny - 1, j], hu[ny - 1, j], hv[ny - 1, j] = h[ny - 2, j], hu[ny - 2, j], -hv[ny - 2, j]
    for i in range(1, ny - 1):              # the ghost columns
        if periodic:
            h[i, 0], hu[i, 0], hv[i, 0] = h[i, nx - 2], hu[i, nx - 2], hv[i, nx - 2]
            h[i, nx - 1], hu[i, nx - 1], hv[i, nx - 1] = h[i, 1], hu[i, 1], hv[i, 1]
        else:
            h[i, 0], hu[i, 0], hv[i, 0] = h[i, 1], -hu[i, 1], hv[i, 1]
            h[i, nx - 1], hu[i, nx - 1], hv[i, nx - 1] = h[i, nx - 2], -hu[i, nx - 2], hv[i, nx - 2]


@tack.kernel
def max_speed(h, hu, hv, g, smax):
    """The fastest wave over the cells, into smax[0] (a private maximum per chunk, in SIMD lanes)."""
    ny, nx = h.shape
    for i, j in tack.ndrange((1, ny - 1), (1, nx - 1)):
        c = math.sqrt(g * h[i, j])
        tack.atomic_max(smax, 0, max(abs(hu[i, j] / h[i, j]) + c, abs(hv[i, j] / h[i, j]) + c))


@tack.kernel
def update(h, hu, hv, nh, nhu, nhv, g, lam):
    """One step of every cell: what flows in through its four faces less what flows out."""
    ny, nx = h.shape
    for i, j in tack.ndrange((1, ny - 1), (1, nx - 1)):
        e0, e1, e2 = rusanov_x(h[i, j], hu[i, j], hv[i, j], h[i, j + 1], hu[i, j + 1], hv[i, j + 1], g)
        w0, w1, w2 = rusanov_x(h[i, j - 1], hu[i, j - 1], hv[i, j - 1], h[i, j], hu[i, j], hv[i, j], g)
        n0, n1, n2 = rusanov_y(h[i, j], hu[i, j], hv[i, j], h[i + 1, j], hu[i + 1, j], hv[i + 1, j], g)
        s0, s1, s2 = rusanov_y(h[i - 1, j], hu[i - 1, j], hv[i - 1, j], h[i, j], hu[i, j], hv[i, j], g)
        nh[i, j] = h[i, j] - lam * (e0 - w0) - lam * (n0 - s0)
        nhu[i, j] = hu[i, j] - lam * (e1 - w1) - lam * (n1 - s1)
        nhv[i, j] = hv[i, j] - lam * (e2 - w2) - lam * (n2 - s2)


# ---- the same scheme with NumPy slices, for the check
def numpy_rusanov(l, r, g, axis):
    (hl, hul, hvl), (hr, hur, hvr) = l, r
    half = hl.dtype.type(0.5)
    ql, qr = (hul, hvl)[axis], (hur, hvr)[axis]
    a = np.maximum(np.abs(ql / hl) + np.sqrt(g * hl), np.abs(qr / hr) + np.sqrt(g * hr))
    ul, ur = ql / hl, qr / hr
    if axis == 0:
        fl, fr = (hul, hul * ul + half * g * hl * hl, hvl * ul), (hur, hur * ur + half * g * hr * hr, hvr * ur)
    else:
        fl, fr = (hvl, hul * ul, hvl * ul + half * g * hl * hl), (hvr, hur * ur, hvr * ur + half * g * hr * hr)
    return [half * (a0 + b0) - half * a * (y - x) for a0, b0, x, y in zip(fl, fr, l, r)]


def numpy_step(q, periodic, g):
    """One whole step on (h, hu, hv) with ghosts, returning the new fields and dt."""
    q = [a.copy() for a in q]
    for a, sy, sx in zip(q, (1, 1, -1), (1, -1, 1)):
        if periodic:
            sy = sx = 1
        a[0, 1:-1], a[-1, 1:-1] = (a[-2, 1:-1], a[1, 1:-1]) if periodic else (sy * a[1, 1:-1], sy * a[-2, 1:-1])
        a[1:-1, 0], a[1:-1, -1] = (a[1:-1, -2], a[1:-1, 1]) if periodic else (sx * a[1:-1, 1], sx * a[1:-1, -2])
    h, hu, hv = (a[1:-1, 1:-1] for a in q)
    c = np.sqrt(g * h)
    smax = np.maximum(np.abs(hu / h) + c, np.abs(hv / h) + c).max()
    dt, lam = time_step(smax, h.shape[0], h.dtype.type)
    fx = numpy_rusanov([a[1:-1, :-1] for a in q], [a[1:-1, 1:] for a in q], g, 0)
    fy = numpy_rusanov([a[:-1, 1:-1] for a in q], [a[1:, 1:-1] for a in q], g, 1)
    new = [a.copy() for a in q]
    for k, a in enumerate(q):
        new[k][1:-1, 1:-1] = a[1:-1, 1:-1] - lam * (fx[k][:, 1:] - fx[k][:, :-1]) - lam * (fy[k][1:] - fy[k][:-1])
    return new, dt


def time_step(smax, n, real):
    """dt from the fastest wave, and dt / dx, in the fields' precision."""
    dx = real(1.0 / n)
    dt = real(CFL) * dx / real(smax)
    return dt, real(dt / dx)


def start(n, real):
    """Water of depth 1 with a Gaussian hump, all of it drifting slowly to the right."""
    x = (np.arange(n + 2) - 0.5) / n
    X, Y = np.meshgrid(x, x)
    h = 1.0 + 0.5 * np.exp(-((X - 0.4) ** 2 + (Y - 0.45) ** 2) / 0.004)
    return [a.astype(real) for a in (h, 0.2 * h, 0.0 * h)]


def run(n, steps, real, periodic, device):
    q0 = start(n, real)
    h, hu, hv = (tack.array(a, device=device) for a in q0)
    nh, nhu, nhv = (tack.array(a, device=device) for a in q0)
    smax = tack.zeros(1, real, device=device)
    g = real(G)
    want, check = q0, min(steps, 5)
    t = 0.0
    times = {"boundary": 0.0, "max_speed": 0.0, "update": 0.0}
    for k in range(steps):
        t0 = time.perf_counter()
        boundary(h, hu, hv, periodic)
        t1 = time.perf_counter()
        smax.fill(0)
        max_speed(h, hu, hv, g, smax)
        dt, lam = time_step(smax.numpy()[0], n, real)      # the reduction comes back to the host
        t2 = time.perf_counter()
        update(h, hu, hv, nh, nhu, nhv, g, lam)
        h, hu, hv, nh, nhu, nhv = nh, nhu, nhv, h, hu, hv
        tack.synchronize()
        t3 = time.perf_counter()
        t += float(dt)
        if k >= check:
            times["boundary"] += t1 - t0
            times["max_speed"] += t2 - t1
            times["update"] += t3 - t2
        elif k < check:                                     # the first steps: NumPy's bits
            want, want_dt = numpy_step(want, periodic, g)
            assert want_dt == dt, (k, want_dt, dt)
            for name, a, b in zip(("h", "hu", "hv"), (h, hu, hv), want):
                got = a.numpy()[1:-1, 1:-1]
                assert np.array_equal(got, b[1:-1, 1:-1]), (k, name, np.abs(got - b[1:-1, 1:-1]).max())
    boundary(h, hu, hv, periodic)
    return h.numpy(), t, times, q0[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=256, help="cells along each side")
    ap.add_argument("--steps", type=int, default=250, help="time steps (the first 5 are checked against NumPy)")
    ap.add_argument("--dtype", choices=("f32", "f64"), default="f32")
    ap.add_argument("--boundary", choices=("reflective", "periodic"), default="reflective")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--output-dir", help="draw the final depth as shallow_water.png here (needs VTK)")
    args = ap.parse_args(argv)
    if args.n < 8 or args.steps < 6:
        ap.error(f"--n {args.n} --steps {args.steps}: needs 8 cells a side and 6 steps")
    real = np.float32 if args.dtype == "f32" else np.float64
    h, t, times, h0 = run(args.n, args.steps, real, args.boundary == "periodic", args.device)
    timed = args.steps - 5
    print(f"{args.n} x {args.n} cells, {args.dtype}, {args.boundary}, {args.steps} steps to t = {t:.4f} on "
          f"{args.device}; per step: " + ", ".join(f"{k} {v / timed * 1e6:.0f} us" for k, v in times.items()))
    inner, inner0 = h[1:-1, 1:-1].astype(np.float64), h0[1:-1, 1:-1].astype(np.float64)
    drift = abs(inner.sum() / inner0.sum() - 1)
    print(f"mass drift {drift:.1e}, depth in [{inner.min():.3f}, {inner.max():.3f}]")
    assert np.isfinite(inner).all() and inner.min() > 0
    assert drift < (1e-5 if real is np.float32 else 1e-12), drift
    assert inner.max() < inner0.max(), "the hump has spread"
    if args.output_dir:
        try:
            from tack import vis
        except ImportError:
            print("VTK is not installed: no picture")
        else:
            path = vis.render_slice(inner, os.path.join(args.output_dir, "shallow_water.png"), colormap="viridis",
                                    title=f"depth at t = {t:.3f}", size=(640, 560))
            print(f"wrote {path}")
    print("shallow water: all checks passed")


if __name__ == "__main__":
    main()
