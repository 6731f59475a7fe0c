"""One step of smoothed-particle hydrodynamics with tack.HashGrid, checked against SciPy.

    python docs/examples/sph.py [--n 20000] [--device cpu] [--output-dir .]

Particles of a fluid in a box carry a mass; SPH estimates the density at each particle as a sum
over the particles within the smoothing length h, weighted by a kernel W (here Müller et al.'s
"poly6", W(r) = 315 / (64 pi h^9) (h^2 - r^2)^3 for r <= h), turns the density into a pressure
(an ideal gas, p = k (rho - rho0)) and the pressures into forces (the "spiky" kernel's gradient).
Each of those sums is a loop over the neighbours a HashGrid gives; the whole step is:

    grid.build(pos)                    # the particles moved: rebuild
    density(pos, grid, ...)            # rho_i = sum_j m W(|x_i - x_j|)
    forces(pos, rho, grid, ...)        # f_i = -sum_j m (p_i + p_j) / (2 rho_j) grad W(x_i - x_j)
    move(pos, vel, force, rho, dt)     # symplectic Euler

The check: the same density and forces from SciPy's cKDTree (every pair within h) and NumPy.
With VTK installed, --output-dir draws the particles coloured by density as sph.png (tack.vis).
"""

import argparse
import math
import os

import numpy as np

import tack

H = 0.05           # smoothing length
MASS = 0.02
K_GAS = 2.0        # pressure constant
RHO0 = 100.0      # rest density
POLY6 = 315.0 / (64.0 * math.pi * H ** 9)
SPIKY = -45.0 / (math.pi * H ** 6)


@tack.kernel
def density(pos, grid, h, mass, poly6, rho):
    for i in range(pos.shape[0]):
        xi = tack.vec3d(pos[i, 0], pos[i, 1], pos[i, 2])
        s = 0.0
        for j in grid.neighbors(xi, h):
            d = tack.vec3d(pos[j, 0], pos[j, 1], pos[j, 2]) - xi
            r2 = tack.dot(d, d)
            if r2 < h * h:
                w = h * h - r2
                s += w * w * w
        rho[i] = mass * poly6 * s


@tack.kernel
def forces(pos, rho, grid, h, mass, k, rho0, spiky, force):
    for i in range(pos.shape[0]):
        xi = tack.vec3d(pos[i, 0], pos[i, 1], pos[i, 2])
        pi = k * (rho[i] - rho0)
        f = tack.vec3d(0.0, 0.0, 0.0)
        for j in grid.neighbors(xi, h):
            d = xi - tack.vec3d(pos[j, 0], pos[j, 1], pos[j, 2])
            r = tack.length(d)
            if j != i and r < h and r > 0.0:
                pj = k * (rho[j] - rho0)
                f -= d * (mass * (pi + pj) / (2.0 * rho[j]) * spiky * (h - r) * (h - r) / r)
        force[i, 0] = f.x
        force[i, 1] = f.y
        force[i, 2] = f.z


@tack.kernel
def move(pos, vel, force, rho, dt):
    for i, c in tack.ndrange(pos.shape[0], 3):
        vel[i, c] += dt * force[i, c] / rho[i]
        pos[i, c] += dt * vel[i, c]


def reference(x):
    """The same density and forces from SciPy's pairs and NumPy (f64)."""
    from scipy.spatial import cKDTree

    n = len(x)
    pairs = cKDTree(x).query_pairs(H, output_type="ndarray")  # i < j, distance <= h
    i, j = pairs[:, 0], pairs[:, 1]
    d = x[i] - x[j]
    r2 = (d * d).sum(1)
    keep = r2 < H * H
    i, j, d, r2 = i[keep], j[keep], d[keep], r2[keep]
    w = (H * H - r2) ** 3
    s = np.full(n, H ** 6)  # each particle is its own neighbour at r = 0
    np.add.at(s, i, w)
    np.add.at(s, j, w)
    rho = MASS * POLY6 * s
    p = K_GAS * (rho - RHO0)
    r = np.sqrt(r2)
    ok = r > 0
    i, j, d, r = i[ok], j[ok], d[ok], r[ok]
    # f_i -= (x_i - x_j) m (p_i + p_j) / (2 rho_j) spiky (h - r)^2 / r, and the same for j with i
    g = SPIKY * (H - r) ** 2 / r
    f = np.zeros((n, 3))
    np.add.at(f, i, -d * (MASS * (p[i] + p[j]) / (2 * rho[j]) * g)[:, None])
    np.add.at(f, j, d * (MASS * (p[j] + p[i]) / (2 * rho[i]) * g)[:, None])
    return rho, f


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--output-dir", help="draw the particles by density as sph.png here (needs VTK)")
    args = ap.parse_args()
    n, dev = args.n, args.device

    # a block of fluid: jittered lattice points filling the lower half of the unit box
    rng = np.random.default_rng(0)
    side = round((2 * n) ** (1 / 3))
    lattice = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)
    lattice = lattice[lattice[:, 2] < side // 2][:n]
    x = (lattice + 0.5 + 0.1 * rng.standard_normal(lattice.shape)) / side
    n = len(x)
    pos = tack.array(x, device=dev)
    vel = tack.zeros((n, 3), np.float64, device=dev)
    rho = tack.zeros(n, np.float64, device=dev)
    force = tack.zeros((n, 3), np.float64, device=dev)

    grid = tack.HashGrid(pos, H)
    density(pos, grid, H, MASS, POLY6, rho)
    forces(pos, rho, grid, H, MASS, K_GAS, RHO0, SPIKY, force)

    want_rho, want_f = reference(x)
    np.testing.assert_allclose(rho.numpy(), want_rho, rtol=1e-9)
    np.testing.assert_allclose(force.numpy(), want_f, rtol=1e-7, atol=1e-9 * np.abs(want_f).max())
    print(f"{n} particles, h = {H}: density {want_rho.min():.3g} .. {want_rho.max():.3g}, "
          f"equal to SciPy's pairs")

    # a few steps: move, rebuild, recompute
    for _ in range(3):
        move(pos, vel, force, rho, 1e-4)
        grid.build(pos)
        density(pos, grid, H, MASS, POLY6, rho)
        forces(pos, rho, grid, H, MASS, K_GAS, RHO0, SPIKY, force)
    x = pos.numpy()
    want_rho, want_f = reference(x)
    np.testing.assert_allclose(rho.numpy(), want_rho, rtol=1e-9)
    np.testing.assert_allclose(force.numpy(), want_f, rtol=1e-7, atol=1e-9 * np.abs(want_f).max())
    if args.output_dir:
        try:
            from tack import vis
        except ImportError:
            print("VTK is not installed: no picture")
        else:
            shown = tuple(np.percentile(rho.numpy(), [2, 98]))  # a few outliers would take the whole scale
            path = vis.render_points(x, os.path.join(args.output_dir, "sph.png"), values=rho.numpy(), view="iso",
                                     range=shown, colormap="coolwarm", title=f"{n} SPH particles by density",
                                     size=(640, 560))
            print(f"wrote {path}")
    print("all checks passed")


if __name__ == "__main__":
    main()
