"""tack.HashGrid: what a rebuild costs per million points, and one neighbour
query over every point, beside SciPy's cKDTree (build and query_ball_point
counts) on the same points.

    python benchmarks/hashgrid.py [--n 1000000] [--rounds 3] [--device cpu] [--dim 3]

The points are uniform in the unit cube (square with --dim 2), f32, already
on the device; the cell size is chosen for about 8 points per cell and the
query radius is one cell, about 34 neighbours a point in 3-D.  A rebuild is
``grid.build(points)`` on a grid built once (its arrays are reused); the
time is the best of --rounds, in milliseconds, with the rate in ms per
million points.  The query is a kernel that counts each point's neighbours
within the radius, on the points in their random order and then reordered
by ``grid.permutation`` (cell order).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import tack


@tack.kernel
def count3(pts, grid, r, out):
    for i in range(pts.shape[0]):
        c = 0
        for j in grid.neighbors((pts[i, 0], pts[i, 1], pts[i, 2]), r):
            dx = pts[j, 0] - pts[i, 0]
            dy = pts[j, 1] - pts[i, 1]
            dz = pts[j, 2] - pts[i, 2]
            if dx * dx + dy * dy + dz * dz <= r * r:
                c += 1
        out[i] = c


@tack.kernel
def count2(pts, grid, r, out):
    for i in range(pts.shape[0]):
        c = 0
        for j in grid.neighbors((pts[i, 0], pts[i, 1]), r):
            dx = pts[j, 0] - pts[i, 0]
            dy = pts[j, 1] - pts[i, 1]
            if dx * dx + dy * dy <= r * r:
                c += 1
        out[i] = c


def best_ms(fn, rounds, sync):
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dim", type=int, default=3, choices=(2, 3))
    ap.add_argument("--no-scipy", action="store_true", help="skip the cKDTree columns")
    args = ap.parse_args()
    n, dim = args.n, args.dim
    x = np.random.default_rng(0).random((n, dim)).astype(np.float32)
    cell = float((8.0 / n) ** (1.0 / dim))
    pts = tack.array(x, device=args.device)
    sync = lambda: tack.synchronize(args.device)  # noqa: E731
    grid = tack.HashGrid(pts, cell)
    out = tack.zeros(n, np.int64, device=args.device)
    kern = count3 if dim == 3 else count2
    kern(pts, grid, np.float32(cell), out)  # compile
    build = best_ms(lambda: grid.build(pts), args.rounds, sync)
    query = best_ms(lambda: kern(pts, grid, np.float32(cell), out), args.rounds, sync)
    mean = float(out.numpy().mean())
    # the same points reordered into cell order (x[grid.permutation]): neighbours in memory
    sorted_pts = tack.array(x[grid.permutation.numpy()], device=args.device)
    grid.build(sorted_pts)
    query_sorted = best_ms(lambda: kern(sorted_pts, grid, np.float32(cell), out), args.rounds, sync)
    rows = [("HashGrid rebuild", build), (f"neighbour count ({mean:.1f} a point)", query),
            ("neighbour count, points in cell order", query_sorted)]
    if not args.no_scipy:
        try:
            from scipy.spatial import cKDTree
        except ImportError:
            cKDTree = None
        if cKDTree is not None:
            tree = [None]

            def kd_build():
                tree[0] = cKDTree(x)

            rows.append(("cKDTree build", best_ms(kd_build, args.rounds, lambda: None)))
            rows.append(("cKDTree query_ball_point counts (all cores)", best_ms(
                lambda: tree[0].query_ball_point(x, cell, return_length=True, workers=-1), 1, lambda: None)))
    print(f"{n} points in {dim}-D, cells {grid.dims} ({grid.ncells} cells, width {grid.cell_width:.4g}), "
          f"device {args.device}, {tack._core.device_threads(args.device) if args.device.startswith('cpu') else ''}"
          f" threads")
    print("| step | ms | ms per million points |")
    print("| --- | ---: | ---: |")
    for name, ms in rows:
        print(f"| {name} | {ms:.1f} | {ms / (n / 1e6):.1f} |")


if __name__ == "__main__":
    main()
