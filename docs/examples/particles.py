"""Particles as a struct: a @tack.struct array stepped by a kernel, written as VTK points.

Each particle is one record -- position, velocity, mass, a flag and an id --
in a NumPy record array of ``Particle.dtype``, which kernels read and write
in place.  A kernel steps the falling, bouncing particles; the script checks
the result against the same step written in NumPy, and against the same
kernel written on separate arrays (struct of arrays).  The particles then
become a VTK point cloud: the positions its points, the other fields point
data named by field (``tack.interop.vtk.struct_to_vtk``); ``--output``
writes it as a .vtp file that ParaView opens, ``--output-dir`` draws it as
particles.png (tack.vis), coloured by speed.  ``--bench`` times the struct
kernel against the struct-of-arrays one.

    uv run python docs/examples/particles.py --output particles.vtp
    uv run python docs/examples/particles.py --n 1000 --steps 20 --device cpu --output-dir .
    uv run python docs/examples/particles.py --bench

Needs VTK 9.7.1 or later for the VTK part (`uv sync --extra interop`); runs on the CPU.
"""

import argparse
import os
import time

import numpy as np

import tack


@tack.struct
class Particle:
    pos: tack.vec3
    vel: tack.vec3
    mass: tack.f32
    alive: bool
    id: tack.i64


@tack.func
def bounced(p, floor):
    """A particle after hitting the floor: on it, going up at half the speed."""
    q = p
    if q.pos.z < floor:
        q.pos.z = floor
        q.vel.z = -0.5 * q.vel.z
    return q


@tack.kernel
def step(p, dt, floor):
    for i in range(p.shape[0]):
        if p[i].alive:
            p[i].vel.z -= 9.81 * dt
            p[i].pos = p[i].pos + p[i].vel * dt
            p[i] = bounced(p[i], floor)


@tack.kernel
def step_soa(pos, vel, alive, dt, floor):
    """The same step on separate arrays: pos and vel (3, n), a row per component."""
    for i in range(pos.shape[1]):
        if alive[i]:
            vel[2, i] -= 9.81 * dt
            for k in range(3):
                pos[k, i] = pos[k, i] + vel[k, i] * dt
            if pos[2, i] < floor:
                pos[2, i] = floor
                vel[2, i] = -0.5 * vel[2, i]


def particles(n, seed=7):
    rng = np.random.default_rng(seed)
    p = np.zeros(n, Particle.dtype)
    p["pos"] = rng.uniform(0, 1, (n, 3))
    p["vel"] = rng.normal(0, 0.5, (n, 3))
    p["mass"] = rng.uniform(1, 2, n)
    p["alive"] = rng.uniform(size=n) < 0.9
    p["id"] = np.arange(n)
    return p


def numpy_step(p, dt, floor):
    p = p.copy()
    f = np.float32
    a = p["alive"]
    vel, pos = p["vel"], p["pos"]
    vel[a, 2] = vel[a, 2] - f(9.81) * dt
    pos[a] = pos[a] + vel[a] * dt
    low = a & (pos[:, 2] < floor)
    pos[low, 2] = floor
    vel[low, 2] = f(-0.5) * vel[low, 2]
    return p


def soa(p):
    return (np.ascontiguousarray(p["pos"].T), np.ascontiguousarray(p["vel"].T), np.ascontiguousarray(p["alive"]))


def check(n=1000, steps=20, device="cpu"):
    dt, floor = np.float32(0.01), np.float32(0.0)
    p = particles(n)
    want = p.copy()
    pos, vel, alive = soa(p)
    # on the CPU the kernel steps the NumPy records in place; elsewhere a copy on the device
    on_device = p if device == "cpu" else tack.array(p, dtype=Particle, device=device)
    for _ in range(steps):
        step(on_device, dt, floor)
        step_soa(pos, vel, alive, dt, floor)
        want = numpy_step(want, dt, floor)
    if device != "cpu":
        p = np.asarray(on_device)
    np.testing.assert_allclose(p["pos"], want["pos"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p["vel"], want["vel"], rtol=1e-5, atol=1e-6)
    assert (p["pos"][:, 2] >= 0).all() and (p["id"] == np.arange(n)).all()
    # the struct kernel and the struct-of-arrays one compute the same, to the bit
    assert p["pos"].tobytes() == pos.T.tobytes() and p["vel"].tobytes() == vel.T.tobytes()
    return p


def to_vtk(p):
    from vtkmodules.util import numpy_support
    from vtkmodules.vtkCommonCore import vtkPoints
    from vtkmodules.vtkCommonDataModel import vtkPolyData

    from tack.interop.vtk import struct_to_vtk

    cloud = vtkPolyData()
    points = vtkPoints()
    points.SetData(numpy_support.numpy_to_vtk(np.ascontiguousarray(p["pos"]), deep=1))
    cloud.SetPoints(points)
    for array in struct_to_vtk(p, fields=["vel", "mass", "alive", "id"]):
        cloud.GetPointData().AddArray(array)
    assert cloud.GetNumberOfPoints() == len(p)
    got = numpy_support.vtk_to_numpy(cloud.GetPointData().GetArray("vel"))
    assert got.tolist() == p["vel"].tolist()
    return cloud


def bench(n=2_000_000, reps=20):
    dt, floor = np.float32(0.001), np.float32(0.0)
    p = particles(n)
    pos, vel, alive = soa(p)
    step(p, dt, floor)
    step_soa(pos, vel, alive, dt, floor)  # compiled and warm
    timings = {}
    for name, run in (("struct (array of structs)", lambda: step(p, dt, floor)),
                      ("separate arrays (struct of arrays)", lambda: step_soa(pos, vel, alive, dt, floor))):
        best = float("inf")
        for _ in range(reps):
            t0 = time.perf_counter()
            run()
            best = min(best, time.perf_counter() - t0)
        timings[name] = best
        print(f"{name:36s} {best * 1e3:8.2f} ms for {n} particles ({n / best / 1e6:.0f} M/s)")
    return timings


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", help="write the particles as a .vtp file")
    ap.add_argument("--output-dir", help="draw the particles as particles.png here (needs VTK)")
    ap.add_argument("--n", type=int, default=1000, help="particles")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--device", default="cpu", help="where the struct kernel runs ('cpu', 'cuda:0', ...)")
    ap.add_argument("--bench", action="store_true", help="time the struct kernel against struct of arrays")
    args = ap.parse_args()
    p = check(args.n, args.steps, args.device)
    try:
        cloud = to_vtk(p)
    except ImportError:
        cloud = None
        print("VTK is not installed: the VTK part is skipped (uv sync --extra interop)")
    if args.output and cloud is not None:
        from vtkmodules.vtkIOXML import vtkXMLPolyDataWriter

        writer = vtkXMLPolyDataWriter(file_name=args.output)
        writer.SetInputData(cloud)
        writer.Write()
        print(f"wrote {args.output}")
    if args.output_dir and cloud is not None:
        from tack import vis

        path = vis.render_points(p["pos"], os.path.join(args.output_dir, "particles.png"),
                                 values=np.linalg.norm(p["vel"], axis=1), view="iso", size=(640, 560),
                                 title=f"{len(p)} particles after {args.steps} steps, by speed")
        print(f"wrote {path}")
    if args.bench:
        bench()
    print("all checks passed")


if __name__ == "__main__":
    main()
