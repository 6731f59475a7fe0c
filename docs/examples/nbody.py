"""N-body gravity: every body pulls on every other, stepped by leapfrog; energy and momentum kept.

    python docs/examples/nbody.py [--n 2048] [--steps 200] [--device cpu] [--output-dir .]

Two clusters of bodies (a Plummer-like ball each, G = 1, equal masses summing to 1) fall
towards each other on a slightly offset course. Each step is kick-drift-kick leapfrog: one
kernel computes every body's acceleration as a sum over all the others, softened by eps so
that close passes stay finite,

    a_i = sum_j m_j (x_j - x_i) / (|x_j - x_i|^2 + eps^2)^(3/2)

(n^2 pairs, one parallel iteration a body), a second kernel moves the velocities and
positions. Leapfrog is symplectic: the total energy wanders but does not drift.

The check: the first accelerations against NumPy's all-pairs sum (f64, to rounding), the total
momentum at the end still zero (to rounding) and the total energy within 1% of the start. With
VTK installed the final bodies are drawn as nbody.png, coloured by speed (tack.vis).
"""

import argparse
import os
import time

import numpy as np

import tack

EPS = 0.05     # softening length
DT = 0.01


@tack.kernel
def accelerations(pos, mass, eps2, acc):
    for i in range(pos.shape[0]):
        xi = tack.vec3d(pos[i, 0], pos[i, 1], pos[i, 2])
        a = tack.vec3d(0.0, 0.0, 0.0)
        for j in range(pos.shape[0]):
            d = tack.vec3d(pos[j, 0], pos[j, 1], pos[j, 2]) - xi
            r2 = tack.dot(d, d) + eps2
            a += d * (mass[j] / (r2 * tack.sqrt(r2)))
        acc[i, 0] = a.x
        acc[i, 1] = a.y
        acc[i, 2] = a.z


@tack.kernel
def kick_drift(pos, vel, acc, dt):
    """Half a kick with the old accelerations, then a whole drift."""
    for i, c in tack.ndrange(pos.shape[0], 3):
        vel[i, c] += 0.5 * dt * acc[i, c]
        pos[i, c] += dt * vel[i, c]


@tack.kernel
def kick(vel, acc, dt):
    for i, c in tack.ndrange(vel.shape[0], 3):
        vel[i, c] += 0.5 * dt * acc[i, c]


def numpy_accelerations(x, m):
    d = x[None, :, :] - x[:, None, :]
    r2 = (d * d).sum(-1) + EPS * EPS
    return (d * (m[None, :] / (r2 * np.sqrt(r2)))[..., None]).sum(1)


def energy(x, v, m):
    d = x[None, :, :] - x[:, None, :]
    r = np.sqrt((d * d).sum(-1) + EPS * EPS)
    potential = -0.5 * (m[:, None] * m[None, :] / r)[~np.eye(len(m), dtype=bool)].sum()
    return 0.5 * (m * (v * v).sum(1)).sum() + potential


def clusters(n, seed=1):
    """Two balls of n/2 bodies at (-1, -0.25, 0) and (1, 0.25, 0), moving towards each other."""
    rng = np.random.default_rng(seed)
    half = n // 2
    x = np.empty((n, 3))
    v = np.empty((n, 3))
    for k, (centre, drift) in enumerate((((-1.0, -0.25, 0.0), (0.3, 0.0, 0.0)), ((1.0, 0.25, 0.0), (-0.3, 0.0, 0.0)))):
        part = slice(k * half, n if k else half)
        count = len(range(n)[part])
        r = 0.3 / np.sqrt(rng.uniform(0.05, 1.0, count) ** (-2.0 / 3.0) - 1.0 + 1e-9)   # a Plummer-like profile
        r = np.minimum(r, 0.8)
        direction = rng.standard_normal((count, 3))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        x[part] = np.asarray(centre) + direction * r[:, None]
        spin = np.cross(direction, [0.0, 0.0, 1.0]) * 0.4 * np.sqrt(r)[:, None]   # a slow rotation
        v[part] = np.asarray(drift) + spin + 0.05 * rng.standard_normal((count, 3))
    m = np.full(n, 1.0 / n)
    v -= (m[:, None] * v).sum(0) / m.sum()   # no net momentum
    return x, v, m


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2048, help="bodies")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--output-dir", help="draw the bodies as nbody.png here (needs VTK)")
    args = ap.parse_args(argv)
    if args.n < 2 or args.steps < 1:
        ap.error(f"--n {args.n} --steps {args.steps}: needs two bodies and a step")
    dev = args.device
    x0, v0, m0 = clusters(args.n)
    pos, vel, mass = (tack.array(a, device=dev) for a in (x0, v0, m0))
    acc = tack.zeros((args.n, 3), tack.f64, device=dev)
    accelerations(pos, mass, EPS * EPS, acc)
    np.testing.assert_allclose(acc.numpy(), numpy_accelerations(x0, m0), rtol=1e-9,
                               atol=1e-12 * np.abs(numpy_accelerations(x0, m0)).max())

    tack.synchronize()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        kick_drift(pos, vel, acc, DT)
        accelerations(pos, mass, EPS * EPS, acc)
        kick(vel, acc, DT)
    tack.synchronize()
    seconds = time.perf_counter() - t0
    x, v = pos.numpy(), vel.numpy()
    pairs = args.n * args.n * args.steps
    print(f"{args.n} bodies, {args.steps} steps on {dev}: {seconds * 1e3:.0f} ms, "
          f"{pairs / seconds / 1e9:.2f} G pair interactions a second")

    e0, e1 = energy(x0, v0, m0), energy(x, v, m0)
    momentum = (m0[:, None] * v).sum(0)
    print(f"energy {e0:.6f} -> {e1:.6f} ({abs(e1 - e0) / abs(e0):.1e} relative), "
          f"momentum {np.abs(momentum).max():.1e}")
    assert np.isfinite(x).all()
    assert np.abs(momentum).max() < 1e-12, momentum
    assert abs(e1 - e0) < 0.01 * abs(e0), (e0, e1)
    if args.output_dir:
        try:
            from tack import vis
        except ImportError:
            print("VTK is not installed: no picture")
        else:
            speed = np.linalg.norm(v, axis=1)
            path = vis.render_points(x, os.path.join(args.output_dir, "nbody.png"), values=speed, view="z",
                                     colormap="viridis", title=f"{args.n} bodies after {args.steps} steps, by speed",
                                     size=(640, 560))
            print(f"wrote {path}")
    print("n-body: all checks passed")


if __name__ == "__main__":
    main()
