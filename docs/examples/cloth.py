"""A mass-spring cloth ported from Warp: springs as index pairs, atomic forces, a struct of parameters.

A square cloth of n x n particles hangs from two corners and falls onto the ground. Its springs
-- along the rows and the columns, across the diagonals, and two apart for bending -- are an
(m, 2) array of particle indices; one kernel adds each spring's force into both ends
(tack.atomic_add, as wp.atomic_add does), one steps each particle by semi-implicit Euler and
keeps it above the ground plane. The stiffness, damping, gravity and mass travel as a
@tack.struct passed by value, as a Warp program passes a wp.struct (docs/warp.md).

    python docs/examples/cloth.py [--n 32] [--steps 3000] [--device cpu] [--output-dir .]

The script checks the first steps against the same steps written in NumPy (float32), and at
the end that the pinned corners stayed, no particle went below the ground, part of the cloth
lies on it (after 0.3 s), and no spring stretched past 1.5 times its length; with VTK installed,
--output-dir draws the cloth as cloth.png (tack.vis), coloured by height.
"""

import argparse
import os

import numpy as np

import tack


@tack.struct
class Params:
    ks: tack.f32            # spring stiffness
    kd: tack.f32            # spring damping
    gravity: tack.vec3
    mass: tack.f32          # of a particle


@tack.kernel
def spring_forces(x, v, springs, rest, p, f):
    """Each spring's force, added into both of its particles."""
    for s in range(springs.shape[0]):
        i = springs[s, 0]
        j = springs[s, 1]
        d = x[j] - x[i]
        l = tack.length(d)
        u = d / l
        fs = u * (p.ks * (l - rest[s]) + p.kd * tack.dot(v[j] - v[i], u))
        tack.atomic_add(f, i, fs)
        tack.atomic_sub(f, j, fs)


@tack.kernel
def integrate(x, v, f, pinned, p, dt):
    """A semi-implicit Euler step of each free particle, kept above the ground y = 0; the forces
    are zeroed for the next step."""
    for i in range(x.shape[0]):
        if pinned[i] == 1:
            f[i] = tack.vec3(0.0)
            continue
        vn = v[i] + (f[i] / p.mass + p.gravity) * dt
        xn = x[i] + vn * dt
        if xn[1] < 0.0:
            xn = tack.vec3(xn[0], 0.0, xn[2])
            vn = tack.vec3(vn[0] * 0.8, max(vn[1], 0.0), vn[2] * 0.8)   # friction on the ground
        v[i] = vn
        x[i] = xn
        f[i] = tack.vec3(0.0)


def make_cloth(n, size=1.0, height=0.3):
    """The particles of an n x n cloth in the plane y = height, its springs and their rest lengths,
    and the two pinned corners."""
    h = size / (n - 1)
    ii, jj = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    x = np.stack([ii * h, np.full(ii.shape, height), jj * h], -1).reshape(-1, 3).astype(np.float32)
    idx = np.arange(n * n).reshape(n, n)
    pairs = [(idx[:-1], idx[1:]), (idx[:, :-1], idx[:, 1:]),           # structural
             (idx[:-1, :-1], idx[1:, 1:]), (idx[1:, :-1], idx[:-1, 1:]),  # shear
             (idx[:-2], idx[2:]), (idx[:, :-2], idx[:, 2:])]             # bending
    springs = np.concatenate([np.stack([a.ravel(), b.ravel()], 1) for a, b in pairs]).astype(np.int32)
    rest = np.linalg.norm(x[springs[:, 1]] - x[springs[:, 0]], axis=1).astype(np.float32)
    pinned = np.zeros(n * n, np.int32)
    pinned[[idx[0, 0], idx[0, -1]]] = 1
    return x, springs, rest, pinned


def numpy_steps(x, v, springs, rest, pinned, ks, kd, g, mass, dt, steps):
    """The same steps in NumPy, in float32."""
    x, v = x.copy(), v.copy()
    a, b = springs[:, 0], springs[:, 1]
    free = pinned == 0
    for _ in range(steps):
        d = x[b] - x[a]
        length = np.linalg.norm(d, axis=1, keepdims=True)
        u = d / length
        fs = u * (ks * (length - rest[:, None]) + kd * ((v[b] - v[a]) * u).sum(1, keepdims=True))
        f = np.zeros_like(x)
        np.add.at(f, a, fs)
        np.subtract.at(f, b, fs)
        vn = v + (f / mass + g) * dt
        xn = x + vn * dt
        low = xn[:, 1] < 0
        xn[low, 1] = 0
        vn[low] *= np.array([0.8, 1.0, 0.8], np.float32)
        vn[low, 1] = np.maximum(vn[low, 1], 0)
        x[free], v[free] = xn[free], vn[free]
    return x


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=32, help="particles along a side")
    parser.add_argument("--steps", type=int, default=3000, help="time steps of 1/6000 s")
    parser.add_argument("--device", default="cpu", help="where the arrays live and the kernels run")
    parser.add_argument("--output-dir", help="draw the cloth as cloth.png here (needs VTK)")
    args = parser.parse_args(argv)
    if args.n < 4 or args.steps < 100:
        parser.error(f"--n {args.n} --steps {args.steps}: needs 4 particles a side and 100 steps")
    tack.set_default_device(args.device)

    x0, springs, rest, pinned = make_cloth(args.n)
    mass = np.float32(1.0 / (args.n * args.n))                 # a cloth of 1 kg
    ks, kd = np.float32(2000.0 / args.n), np.float32(0.02)
    g, dt = np.array([0.0, -9.8, 0.0], np.float32), np.float32(1.0 / 6000)
    p = Params(ks=ks, kd=kd, gravity=tack.vec3(g), mass=mass)
    x, v, f = tack.array(x0, tack.vec3), tack.zeros(len(x0), tack.vec3), tack.zeros(len(x0), tack.vec3)
    sp, rl, pin = tack.array(springs), tack.array(rest), tack.array(pinned)

    check = 50
    for step in range(args.steps):
        spring_forces(x, v, sp, rl, p, f)
        integrate(x, v, f, pin, p, dt)
        if step + 1 == check:  # the first steps against NumPy: the force sums' order differs
            want = numpy_steps(x0, np.zeros_like(x0), springs, rest, pinned, ks, kd, g, mass, dt, check)
            err = np.abs(x.numpy() - want).max()
            assert err < 1e-5, err
            print(f"the first {check} steps equal NumPy's to {err:.1e} m")

    xs = x.numpy()
    stretch = np.linalg.norm(xs[springs[:, 1]] - xs[springs[:, 0]], axis=1) / rest
    on_ground = int((xs[:, 1] <= 1e-6).sum())
    print(f"after {args.steps} steps ({args.steps * float(dt):.2f} s): {on_ground} of {len(xs)} particles on the "
          f"ground, springs at {stretch.min():.2f}-{stretch.max():.2f} of their length")
    assert (xs[pinned == 1] == x0[pinned == 1]).all(), "a pinned corner moved"
    assert xs[:, 1].min() >= 0.0, "a particle went below the ground"
    if args.steps * float(dt) > 0.3:  # the free edge falls 0.3 m in 0.25 s
        assert on_ground > 0, "the cloth never reached the ground"
    assert stretch.max() < 1.5, stretch.max()
    if args.output_dir:
        try:
            from tack import vis
        except ImportError:
            print("VTK is not installed: no picture")
        else:
            path = vis.render_points(xs, os.path.join(args.output_dir, "cloth.png"), values=xs[:, 1],
                                     title=f"{args.n} x {args.n} cloth after {args.steps} steps",
                                     point_size=4.0)
            print(f"wrote {path}")
    print("cloth: all checks passed")


if __name__ == "__main__":
    main()
