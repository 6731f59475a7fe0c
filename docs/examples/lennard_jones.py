"""Lennard-Jones molecular dynamics in a periodic box: neighbours from a HashGrid and from a cell list of our own.

    python docs/examples/lennard_jones.py [--side 16] [--steps 2000] [--device cpu] [--output-dir .]

Atoms of a Lennard-Jones liquid (reduced units: sigma = epsilon = mass = 1, density 0.8) start
on a cubic lattice, jittered and given random velocities with tack.random, in a periodic cubic
box of side L: an atom leaving through one face comes back through the opposite one, and each
pair interacts through its minimum image (d -= L floor(d / L + 1/2)). The pair potential is
4 (r^-12 - r^-6), cut and shifted at r = 2.5. Each step is velocity Verlet -- half a kick, a
drift (positions wrapped into the box), the forces at the new positions, half a kick -- and the
forces are computed three ways, which must agree:

    forces_grid     each atom sums the pulls of its neighbours, found by a periodic
                    tack.HashGrid (box=L)
    forces_cells    the same sum over a periodic cell list built here: a cell per atom (a
                    kernel), tack.argsort by cell, each cell's first atom by tack.searchsorted
    forces_pairs    each pair once (j > i), scattered by atomic vec3d updates:
                    force[i] += f; force[j] -= f

The steps run on forces_grid. The checks: the first forces and potential energy against SciPy's
periodic cKDTree pairs (boxsize=L) and NumPy, the three force kernels equal to rounding (first
and last step), the total energy (tack.reduce of the per-atom energies) within 1e-3 of its
start over every step, the total momentum kept to rounding (no walls: nothing pushes the box),
and two steps of a small box run as Python (jit=False) equal to the compiled ones. With VTK
installed, --output-dir draws the atoms coloured by speed as lennard_jones.png (tack.vis).
"""

import argparse
import math
import os
import time

import numpy as np

import tack

RC = 2.5                                   # the cutoff
SHIFT = 4.0 * (RC ** -12 - RC ** -6)       # the potential at the cutoff: subtracted, so it is 0 there
DENSITY = 0.8
DT = 0.002


@tack.kernel
def jitter(pos, seed, amp):
    for i in range(pos.shape[0]):
        d = tack.vec3d(tack.random.uniform(seed, 3 * i), tack.random.uniform(seed, 3 * i + 1),
                       tack.random.uniform(seed, 3 * i + 2))
        pos[i] += (d - 0.5) * amp


@tack.kernel
def thermal(vel, seed, sigma):
    for i in range(vel.shape[0]):
        vel[i] = tack.vec3d(tack.random.normal(seed, 3 * i), tack.random.normal(seed, 3 * i + 1),
                            tack.random.normal(seed, 3 * i + 2)) * sigma


@tack.func
def pair(d, box, rc, shift):
    """The force on an atom from one at distance vector d (pointing at the atom), through the minimum
    image in a periodic box of side `box`, and the pair's energy."""
    d -= box * np.floor(d / box + 0.5)
    r2 = tack.dot(d, d)
    if r2 >= rc * rc:
        return tack.vec3d(0.0, 0.0, 0.0), 0.0
    ir6 = 1.0 / (r2 * r2 * r2)
    return d * (24.0 * ir6 * (2.0 * ir6 - 1.0) / r2), 4.0 * ir6 * (ir6 - 1.0) - shift


@tack.kernel
def forces_grid(pos, grid, box, rc, shift, force, energy):
    for i in range(pos.shape[0]):
        xi = pos[i]
        f = tack.vec3d(0.0, 0.0, 0.0)
        e = 0.0
        for j in grid.neighbors(xi, rc):
            if j != i:
                fij, eij = pair(xi - pos[j], box, rc, shift)
                f += fij
                e += 0.5 * eij          # half of each pair's energy to each of its atoms
        force[i] = f
        energy[i] = e


@tack.kernel
def cell_of(pos, width, dims, cell):
    for i in range(pos.shape[0]):
        c = tack.vec3i(0, 0, 0)
        for k in range(3):
            c[k] = min(int(pos[i][k] / width), dims - 1)   # the positions are in [0, L)
        cell[i] = (c.z * dims + c.y) * dims + c.x


@tack.kernel
def forces_cells(pos, order, first, width, dims, box, rc, shift, force, energy):
    # the 27 cells around the atom's, wrapped (c % dims); with fewer than 3 cells a side, each once
    span = min(dims, 3)
    for i in range(pos.shape[0]):
        xi = pos[i]
        cx = min(int(xi.x / width), dims - 1) - span // 2
        cy = min(int(xi.y / width), dims - 1) - span // 2
        cz = min(int(xi.z / width), dims - 1) - span // 2
        f = tack.vec3d(0.0, 0.0, 0.0)
        e = 0.0
        for z in range(cz, cz + span):
            for y in range(cy, cy + span):
                for x in range(cx, cx + span):
                    c = ((z % dims) * dims + y % dims) * dims + x % dims
                    for k in range(first[c], first[c + 1]):
                        j = order[k]
                        if j != i:
                            fij, eij = pair(xi - pos[j], box, rc, shift)
                            f += fij
                            e += 0.5 * eij
        force[i] = f
        energy[i] = e


@tack.kernel
def forces_pairs(pos, grid, box, rc, shift, force, energy):
    for i in range(pos.shape[0]):
        xi = pos[i]
        for j in grid.neighbors(xi, rc):
            if j > i:
                fij, eij = pair(xi - pos[j], box, rc, shift)
                force[i] += fij         # atomic, component by component
                force[j] -= fij
                energy[0] += eij


@tack.kernel
def kick_drift(pos, vel, force, dt, box):
    for i in range(pos.shape[0]):
        vel[i] += force[i] * (0.5 * dt)
        x = pos[i] + vel[i] * dt
        pos[i] = x - box * np.floor(x / box)        # back into the box [0, L)


@tack.kernel
def kick(vel, force, dt):
    for i in range(vel.shape[0]):
        vel[i] += force[i] * (0.5 * dt)


@tack.kernel
def kinetic(vel, energy):
    for i in range(vel.shape[0]):
        energy[i] = 0.5 * tack.dot(vel[i], vel[i])


class CellList:
    """Atoms sorted by cell: the cells' side at least the cutoff, so a neighbour is in one of 27
    (wrapped across the box's faces)."""

    def __init__(self, box, n, device):
        self.dims = max(1, int(box / RC))
        self.width = box / self.dims
        self.cell = tack.zeros(n, tack.i64, device=device)
        self.cells = tack.array(np.arange(self.dims ** 3 + 1), device=device)

    def build(self, pos):
        cell_of(pos, self.width, self.dims, self.cell)
        self.order = tack.argsort(self.cell)                  # the atoms by cell, stably
        sorted_cells = tack.sort(self.cell)
        self.first = tack.searchsorted(sorted_cells, self.cells)  # cell c: order[first[c]:first[c + 1]]


def reference(x, box):
    """The forces and the potential energy from SciPy's periodic pairs and NumPy."""
    from scipy.spatial import cKDTree

    p = cKDTree(x, boxsize=box).query_pairs(RC, output_type="ndarray")
    d = x[p[:, 0]] - x[p[:, 1]]
    d -= box * np.floor(d / box + 0.5)
    r2 = (d * d).sum(1)
    keep = r2 < RC * RC
    p, d, r2 = p[keep], d[keep], r2[keep]
    ir6 = r2 ** -3
    fij = d * (24 * ir6 * (2 * ir6 - 1) / r2)[:, None]
    f = np.zeros_like(x)
    np.add.at(f, p[:, 0], fij)
    np.add.at(f, p[:, 1], -fij)
    return f, (4 * ir6 * (ir6 - 1) - SHIFT).sum()


class System:
    def __init__(self, side, device, seed=1):
        spacing = DENSITY ** (-1 / 3)
        self.box = side * spacing
        g = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)
        self.n = n = len(g)
        self.pos = tack.array((g + 0.5) * spacing, tack.vec3d, device=device)
        jitter(self.pos, seed, 0.1)
        self.vel = tack.zeros(n, tack.vec3d, device=device)
        thermal(self.vel, seed + 1, 1.0)
        v = self.vel.numpy()
        tack.copyto(self.vel, v - v.mean(0))   # no drift of the whole box: total momentum 0
        self.force = tack.zeros(n, tack.vec3d, device=device)
        self.pe = tack.zeros(n, tack.f64, device=device)
        self.ke = tack.zeros(n, tack.f64, device=device)
        self.grid = tack.HashGrid(self.pos, RC, box=self.box)

    def forces(self):
        self.grid.build(self.pos)
        forces_grid(self.pos, self.grid, self.box, RC, SHIFT, self.force, self.pe)

    def step(self):
        kick_drift(self.pos, self.vel, self.force, DT, self.box)
        self.forces()
        kick(self.vel, self.force, DT)

    def energy(self):
        kinetic(self.vel, self.ke)
        return float(tack.reduce(self.pe)) + float(tack.reduce(self.ke))


def three_ways(s, cells):
    """The forces and potential energy of forces_grid, forces_cells and forces_pairs: equal to rounding."""
    s.forces()
    cells.build(s.pos)
    dev = s.pos.device
    f2, e2 = tack.zeros(s.n, tack.vec3d, device=dev), tack.zeros(s.n, tack.f64, device=dev)
    forces_cells(s.pos, cells.order, cells.first, cells.width, cells.dims, s.box, RC, SHIFT, f2, e2)
    f3, e3 = tack.zeros(s.n, tack.vec3d, device=dev), tack.zeros(1, tack.f64, device=dev)
    forces_pairs(s.pos, s.grid, s.box, RC, SHIFT, f3, e3)
    f1, u = s.force.numpy(), float(tack.reduce(s.pe))
    scale = np.abs(f1).max()
    for f, e in ((f2, float(tack.reduce(e2))), (f3, float(e3.numpy()[0]))):
        np.testing.assert_allclose(f.numpy(), f1, rtol=0, atol=1e-11 * scale)
        assert abs(e - u) <= 1e-11 * abs(u), (e, u)
    return f1, u


def debug_mode_check():
    """Two steps of 64 atoms compiled and run as Python (jit=False): the same numbers."""
    runs = []
    for jit in (True, False):
        k = {f.__name__: tack.kernel(f.__wrapped__, jit=jit) for f in (kick_drift, kick, forces_grid)}
        s = System(4, "cpu")
        s.grid.build(s.pos)
        k["forces_grid"](s.pos, s.grid, s.box, RC, SHIFT, s.force, s.pe)
        for _ in range(2):
            k["kick_drift"](s.pos, s.vel, s.force, DT, s.box)
            s.grid.build(s.pos)
            k["forces_grid"](s.pos, s.grid, s.box, RC, SHIFT, s.force, s.pe)
            k["kick"](s.vel, s.force, DT)
        runs.append([a.numpy() for a in (s.pos, s.vel, s.force, s.pe)])
    for a, b in zip(*runs):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13 * np.abs(a).max())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--side", type=int, default=16, help="atoms along each side of the starting lattice")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--output-dir", help="draw the atoms by speed as lennard_jones.png here (needs VTK)")
    args = ap.parse_args(argv)
    if args.side < 4 or args.steps < 1:
        ap.error(f"--side {args.side} --steps {args.steps}: needs 4 atoms a side (a box wider than the cutoff) "
                 f"and a step")
    s = System(args.side, args.device)
    cells = CellList(s.box, s.n, args.device)
    f, u = three_ways(s, cells)
    want_f, want_u = reference(s.pos.numpy(), s.box)
    np.testing.assert_allclose(f, want_f, rtol=0, atol=1e-11 * np.abs(want_f).max())
    assert abs(u - want_u) <= 1e-11 * abs(want_u), (u, want_u)

    e0 = s.energy()
    p0 = s.vel.numpy().sum(0)
    worst = 0.0
    tack.synchronize()
    t0 = time.perf_counter()
    for k in range(args.steps):
        s.step()
        if k % 10 == 9 or k == args.steps - 1:
            worst = max(worst, abs(s.energy() - e0) / abs(e0))
    tack.synchronize()
    seconds = time.perf_counter() - t0
    f, _ = three_ways(s, cells)
    drift = np.abs(s.vel.numpy().sum(0) - p0).max()
    print(f"{s.n} atoms, {args.steps} steps on {args.device}: {seconds / args.steps * 1e3:.2f} ms a step; "
          f"energy {e0:.4f} -> {s.energy():.4f}, at most {worst:.1e} from the start; momentum moved {drift:.1e}")
    assert worst < 1e-3, worst
    assert drift < 1e-9 * math.sqrt(s.n) * args.steps, drift
    assert np.abs(f.sum(0)).max() < 1e-9 * np.abs(f).max() * math.sqrt(s.n), f.sum(0)
    debug_mode_check()
    if args.output_dir:
        try:
            from tack import vis
        except ImportError:
            print("VTK is not installed: no picture")
        else:
            speed = np.linalg.norm(s.vel.numpy(), axis=1)
            path = vis.render_points(s.pos.numpy(), os.path.join(args.output_dir, "lennard_jones.png"), values=speed,
                                     view="iso", colormap="viridis", size=(640, 560),
                                     title=f"{s.n} Lennard-Jones atoms after {args.steps} steps, by speed")
            print(f"wrote {path}")
    print("Lennard-Jones: all checks passed")


if __name__ == "__main__":
    main()
