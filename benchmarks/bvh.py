"""tack.Bvh and tack.Mesh: what a build and a refit cost per million boxes, and
the in-kernel queries' rates.

    python benchmarks/bvh.py [--n 1000000] [--rays 1000000] [--rounds 3] [--device cpu]

The boxes are --n random f32 boxes in the unit cube, each 0.002 to 0.01
wide (a few boxes overlap a query box), already on the device.  A build is
``tack.Bvh(lower, upper)`` (Morton codes, argsort, the hierarchy, the
depths, their argsort and the level launches); a refit is ``bvh.refit`` of
the same boxes.  The box query is one per box, with the box itself, counting
its overlaps.  The mesh is a triangle soup of --n triangles of the same
sizes; the ray query casts --rays random rays from inside the cube with
``mesh.ray_closest``, and the closest-point query asks ``mesh.closest_point``
for --rays random points.  Times are the best of --rounds, in milliseconds,
and the rates in millions a second.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import tack


@tack.kernel
def overlaps(lo, hi, bvh, out):
    for i in range(lo.shape[0]):
        c = 0
        for k in bvh.query_box((lo[i, 0], lo[i, 1], lo[i, 2]), (hi[i, 0], hi[i, 1], hi[i, 2])):
            c += 1
        out[i] = c


@tack.kernel
def rays(o, d, mesh, tri, dist):
    for i in range(o.shape[0]):
        k, t, u, v = mesh.ray_closest((o[i, 0], o[i, 1], o[i, 2]), (d[i, 0], d[i, 1], d[i, 2]))
        tri[i] = k
        dist[i] = t


@tack.kernel
def nearest(p, mesh, tri, dist):
    for i in range(p.shape[0]):
        k, q = mesh.closest_point((p[i, 0], p[i, 1], p[i, 2]))
        tri[i] = k
        dist[i] = tack.length(q - tack.vec3(p[i, 0], p[i, 1], p[i, 2]))


def best(fn, rounds):
    out = []
    for _ in range(rounds):
        tack.synchronize()
        t0 = time.perf_counter()
        fn()
        tack.synchronize()
        out.append(time.perf_counter() - t0)
    return min(out) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--rays", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    n, m, dev = args.n, args.rays, args.device
    rng = np.random.default_rng(0)
    c = rng.random((n, 3)).astype(np.float32)
    s = (0.001 + 0.004 * rng.random((n, 3))).astype(np.float32)
    lo, hi = tack.array(c - s, device=dev), tack.array(c + s, device=dev)
    tack.Bvh(lo, hi)  # compiles
    holder = {}
    t_build = best(lambda: holder.__setitem__("b", tack.Bvh(lo, hi)), args.rounds)
    bvh = holder["b"]
    t_refit = best(lambda: bvh.refit(lo, hi), args.rounds)
    cnt = tack.zeros(n, np.int64, device=dev)
    overlaps(lo, hi, bvh, cnt)
    t_box = best(lambda: overlaps(lo, hi, bvh, cnt), args.rounds)
    print(f"{n} boxes, f32, {dev}: depth {bvh.depth}, {cnt.numpy().mean():.2f} overlaps a box")
    rows = [("Bvh build", t_build, n), ("Bvh refit", t_refit, n), ("query_box, one per box", t_box, n)]

    v = np.concatenate([c, c + s * (rng.random((n, 3)) * 2 - 1), c + s * (rng.random((n, 3)) * 2 - 1)])
    t = np.stack([np.arange(n), np.arange(n) + n, np.arange(n) + 2 * n], 1).astype(np.int32)
    mesh = tack.Mesh(tack.array(v.astype(np.float32), device=dev), tack.array(t, device=dev))
    o = tack.array(rng.random((m, 3)).astype(np.float32), device=dev)
    d = tack.array(rng.normal(size=(m, 3)).astype(np.float32), device=dev)
    tri, dist = tack.zeros(m, np.int64, device=dev), tack.zeros(m, np.float32, device=dev)
    rays(o, d, mesh, tri, dist)
    t_ray = best(lambda: rays(o, d, mesh, tri, dist), args.rounds)
    hit = (tri.numpy() >= 0).mean()
    nearest(o, mesh, tri, dist)
    t_cp = best(lambda: nearest(o, mesh, tri, dist), args.rounds)
    rows += [(f"ray_closest ({hit:.0%} hit)", t_ray, m), ("closest_point", t_cp, m)]
    print(f"{'step':32s} {'ms':>10s} {'M/s':>8s}")
    for name, ms, k in rows:
        print(f"{name:32s} {ms:10.1f} {k / ms / 1e3:8.2f}")


if __name__ == "__main__":
    main()
