"""The heat equation in 3-D on many processes: MPI through mpi4py, Tack kernels per rank.

The grid (nz, ny, nx points; x fastest, as VTK stores images) is cut into slabs of
whole z-planes, one slab per rank.  Each rank keeps its slab with one ghost plane or
face on every side.  Each time step:

  1. the ranks swap their edge planes with their neighbours (two ``Sendrecv`` calls,
     the Tack arrays themselves as MPI buffers: no copies);
  2. one kernel call does the rest of the step: it fills the ghost faces of the
     insulated walls (no heat crosses them) and applies the 7-point stencil.

The total heat, a kernel's sum on each rank and an ``Allreduce`` across them, stays
what it was at the start: the walls are insulated.  At the end every rank writes its
slab as one piece, a ``.vti`` file, and rank 0 writes the ``.pvti`` that names the
pieces, so VTK's vtkXMLPImageDataReader and ParaView open them as one image.

    uv sync --extra mpi --extra interop
    .venv/bin/mpiexec -n 4 .venv/bin/python docs/examples/heat_mpi.py --shape 64 64 64 \\
        --steps 100 --output build/heat/heat.pvti

On a cluster, launch it with the site's launcher (srun, mpiexec) and an mpi4py built
against the site's MPI: docs/beyond-one-machine.md says how.
"""

import argparse
import os
import sys

import numpy as np
from mpi4py import MPI

import tack


@tack.kernel
def hot_sphere(u, z0, nz, ny, nx):
    """u's interior: 1.0 inside a sphere around the grid's centre, 0.0 outside.

    Whole numbers throughout (coordinates in half cells), so every rank and the
    single-process reference agree exactly on which points are inside."""
    r = min(nz, min(ny, nx)) // 2
    for z, y, x in tack.ndrange(u.shape[0] - 2, u.shape[1] - 2, u.shape[2] - 2):
        dz = 2 * (z + z0) + 1 - nz
        dy = 2 * y + 1 - ny
        dx = 2 * x + 1 - nx
        if dz * dz + dy * dy + dx * dx <= r * r:
            u[z + 1, y + 1, x + 1] = 1.0
        else:
            u[z + 1, y + 1, x + 1] = 0.0


@tack.kernel
def heat_step(u, v, c, bottom, top):
    """One explicit Euler step of du/dt = laplacian(u), from u into v.

    The ghost faces of the walls first get the value next to them (a zero gradient:
    insulated walls); the z-planes do too where this rank's slab ends at the bottom
    (bottom=1) or the top (top=1) of the grid -- elsewhere they hold the neighbours'
    planes.  Each top-level loop starts when the one before it is done."""
    nz = u.shape[0]
    ny = u.shape[1]
    nx = u.shape[2]
    for z, y in tack.ndrange((1, nz - 1), (1, ny - 1)):
        u[z, y, 0] = u[z, y, 1]
        u[z, y, nx - 1] = u[z, y, nx - 2]
    for z, x in tack.ndrange((1, nz - 1), (1, nx - 1)):
        u[z, 0, x] = u[z, 1, x]
        u[z, ny - 1, x] = u[z, ny - 2, x]
    for y, x in tack.ndrange((1, ny - 1), (1, nx - 1)):
        if bottom == 1:
            u[0, y, x] = u[1, y, x]
        if top == 1:
            u[nz - 1, y, x] = u[nz - 2, y, x]
    for z, y, x in tack.ndrange((1, nz - 1), (1, ny - 1), (1, nx - 1)):
        v[z, y, x] = u[z, y, x] + c * (u[z - 1, y, x] + u[z + 1, y, x] + u[z, y - 1, x] + u[z, y + 1, x]
                                       + u[z, y, x - 1] + u[z, y, x + 1] - 6.0 * u[z, y, x])


@tack.kernel
def interior_sum(u, total):
    total[0] = 0.0
    for z, y, x in tack.ndrange((1, u.shape[0] - 1), (1, u.shape[1] - 1), (1, u.shape[2] - 1)):
        total[0] += u[z, y, x]


@tack.kernel
def copy_planes(u, out):
    """out[k] = u[k + 1] without the x and y ghost faces: the piece VTK writes."""
    for z, y, x in tack.ndrange(out.shape):
        out[z, y, x] = u[z + 1, y + 1, x + 1]


def slab(nz, size, rank):
    """The first global z-plane of `rank`'s slab and its number of planes: nz planes
    dealt as evenly as they go, the first nz % size ranks one plane more."""
    base, extra = divmod(nz, size)
    return rank * base + min(rank, extra), base + (rank < extra)


def write_pvti(path, shape, spacing, pieces, name):
    """The .pvti: the whole extent and one <Piece> per rank's .vti (relative paths)."""
    nz, ny, nx = shape
    lines = [
        '<?xml version="1.0"?>',
        '<VTKFile type="PImageData" version="1.0" byte_order="LittleEndian" header_type="UInt64">',
        f'  <PImageData WholeExtent="0 {nx - 1} 0 {ny - 1} 0 {nz - 1}" GhostLevel="0" '
        f'Origin="0 0 0" Spacing="{spacing} {spacing} {spacing}">',
        f'    <PPointData Scalars="{name}">',
        f'      <PDataArray type="Float64" Name="{name}"/>',
        "    </PPointData>",
    ]
    for (z_first, z_last), source in pieces:
        lines.append(f'    <Piece Extent="0 {nx - 1} 0 {ny - 1} {z_first} {z_last}" Source="{source}"/>')
    lines += ["  </PImageData>", "</VTKFile>", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", type=int, nargs=3, default=(64, 64, 64), metavar=("NZ", "NY", "NX"),
                   help="grid points along z, y, x (the ranks split z)")
    p.add_argument("--steps", type=int, default=100, help="time steps")
    p.add_argument("--c", type=float, default=0.1,
                   help="diffusion number D*dt/h**2 (stable up to 1/6)")
    p.add_argument("--output", default="heat.pvti",
                   help="the .pvti to write (the pieces go beside it); '' writes nothing")
    p.add_argument("--report", type=int, default=0, help="print the total heat every N steps")
    p.add_argument("--device", default="cpu",
                   help="where the slabs live and the kernels run ('cpu', 'cuda:0', ...); a GPU needs "
                        "an MPI that reads GPU memory (docs/beyond-one-machine.md)")
    p.add_argument("--profile", action="store_true",
                   help="a barrier before each exchange, so that the exchange's time is the transfer's "
                        "alone and the barrier's is the ranks' imbalance")
    args = p.parse_args(argv)

    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    nz, ny, nx = args.shape
    if min(args.shape) < 1 or nz < size:
        if rank == 0:
            why = "has an empty axis" if min(args.shape) < 1 else f"gives fewer z-planes than the {size} ranks"
            print(f"error: --shape {nz} {ny} {nx} {why}", file=sys.stderr)
        return 2
    if not 0.0 < args.c <= 1.0 / 6.0:
        if rank == 0:
            print(f"error: --c {args.c} is unstable: use a value in (0, 1/6]", file=sys.stderr)
        return 2

    tack.set_default_device(args.device)
    device = tack.get_default_device()
    z0, planes = slab(nz, size, rank)
    u = tack.zeros((planes + 2, ny + 2, nx + 2), tack.f64)  # with ghost planes and faces
    v = tack.zeros((planes + 2, ny + 2, nx + 2), tack.f64)
    hot_sphere(u, z0, nz, ny, nx)
    below = rank - 1 if rank > 0 else MPI.PROC_NULL  # PROC_NULL: a Sendrecv half that does nothing
    above = rank + 1 if rank < size - 1 else MPI.PROC_NULL
    bottom, top = int(rank == 0), int(rank == size - 1)

    def exchange(a):
        # mpi4py asks a GPU array for its memory without synchronizing (DLPack's stream=-1):
        # the kernel that wrote it must be done first.  On the CPU a call has returned by now.
        if device != "cpu":
            tack.synchronize(device)
        # My lowest plane goes down while the plane above mine comes in, then the other way.
        comm.Sendrecv(a[1], dest=below, recvbuf=a[planes + 1], source=above)
        comm.Sendrecv(a[planes], dest=above, recvbuf=a[0], source=below)

    local = tack.zeros(1, tack.f64)
    total = tack.zeros(1, tack.f64)

    def total_heat(a):
        interior_sum(a, local)
        if device != "cpu":
            tack.synchronize(device)
        comm.Allreduce(local, total, op=MPI.SUM)
        return float(total[0])

    start_heat = total_heat(u)
    halo = wait = 0.0
    t_start = MPI.Wtime()
    for step in range(args.steps):
        if step == 1:  # the first step compiled the kernel (or loaded it): time the rest
            comm.Barrier()
            halo = wait = 0.0
            t_start = MPI.Wtime()
        t0 = MPI.Wtime()
        if args.profile:
            comm.Barrier()
        t1 = MPI.Wtime()
        exchange(u)
        t2 = MPI.Wtime()
        heat_step(u, v, args.c, bottom, top)
        wait += t1 - t0
        halo += t2 - t1
        u, v = v, u
        if args.report and (step + 1) % args.report == 0:
            heat = total_heat(u)
            if rank == 0:
                print(f"step {step + 1}: total heat {heat:.12g}")
    comm.Barrier()
    elapsed = MPI.Wtime() - t_start
    end_heat = total_heat(u)

    timed = max(args.steps - 1, 1)
    halo_max = comm.reduce(halo, op=MPI.MAX, root=0)
    wait_max = comm.reduce(wait, op=MPI.MAX, root=0)
    if rank == 0:
        print(f"{size} rank(s), grid {nz} x {ny} x {nx}, {args.steps} steps: "
              f"{elapsed / timed * 1e3:.3f} ms per step (after the first), halo exchange "
              f"{halo_max / timed * 1e3:.3f} ms per step on the slowest rank "
              f"({100.0 * halo_max / elapsed if elapsed > 0 else 0.0:.0f}%)"
              + (f", barrier {wait_max / timed * 1e3:.3f} ms" if args.profile else ""))
        print(f"total heat {end_heat:.12g} (at the start {start_heat:.12g})")

    if args.output:
        write_pieces(comm, u, exchange, args.output, (nz, ny, nx), z0, planes)
    return 0


def write_pieces(comm, u, exchange, output, shape, z0, planes):
    """Each rank writes its planes, and the plane above them (its ghost, fresh from
    one more exchange) so that neighbouring pieces share a plane as VTK's pieces do;
    rank 0 writes the .pvti naming them all."""
    from vtkmodules.vtkCommonDataModel import vtkImageData
    from vtkmodules.vtkIOXML import vtkXMLImageDataWriter

    from tack.interop.vtk import array_to_vtk

    rank, size = comm.rank, comm.size
    nz, ny, nx = shape
    exchange(u)
    rows = planes + (rank < size - 1)
    out = tack.empty((rows, ny, nx), tack.f64)
    copy_planes(u, out)

    directory = os.path.dirname(os.path.abspath(output))
    stem = os.path.splitext(os.path.basename(output))[0]
    piece = f"{stem}_{rank}.vti"
    if rank == 0:
        os.makedirs(directory, exist_ok=True)
    comm.Barrier()

    image = vtkImageData()
    image.SetExtent(0, nx - 1, 0, ny - 1, z0, z0 + rows - 1)
    image.SetSpacing(1.0 / max(shape), 1.0 / max(shape), 1.0 / max(shape))
    host = out.to("cpu")  # out itself on the CPU; a copy from a GPU
    values = array_to_vtk(host.ravel(), name="temperature")  # VTK's view of Tack's storage
    image.GetPointData().SetScalars(values)
    writer = vtkXMLImageDataWriter()
    writer.SetFileName(os.path.join(directory, piece))
    writer.SetInputData(image)
    if not writer.Write():
        raise RuntimeError(f"rank {rank}: could not write {piece}")

    extents = comm.gather((z0, z0 + rows - 1), root=0)
    if rank == 0:
        pieces = [(e, f"{stem}_{r}.vti") for r, e in enumerate(extents)]
        write_pvti(output, shape, 1.0 / max(shape), pieces, "temperature")
        print(f"wrote {output} and {size} piece(s)")
    comm.Barrier()


if __name__ == "__main__":
    sys.exit(main())
