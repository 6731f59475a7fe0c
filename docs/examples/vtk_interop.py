"""A VTK image and Tack sharing one array: fill it with a kernel, export it back.

The image's scalars are allocated by VTK.  vtk_to_array gives Tack a view of
that memory (no copy), a kernel writes each point's squared distance from the
image centre into it, and array_to_vtk hands the same memory back to VTK as
a second, named array.  The script checks the values against NumPy, checks
that a write through Tack shows in both VTK arrays, and with --output writes
the image as a .vti file that VTK or ParaView can open.

    uv run python docs/examples/vtk_interop.py --output radius.vti --picture radius.png
    uv run python docs/examples/vtk_interop.py --shape 64 48 32 --device opencl:0

--picture draws the image's three mid-planes with tack.vis; --shape NX NY NZ
sizes the image (9 x 7 x 5 by default).  On the CPU the three arrays share one
allocation.  --device puts the field on another device, where VTK's host memory
cannot be used in place: the field is copied there, filled, and copied back
(`copy=True`), as docs/visualization.md says a GPU exchange does.  Needs VTK 9.7.1
or later (`uv sync --extra interop`).
"""

import argparse
import sys

import numpy as np
from vtkmodules.vtkCommonCore import vtkFloatArray
from vtkmodules.vtkCommonDataModel import vtkImageData

import tack
from tack.interop.vtk import array_to_vtk, vtk_to_array

NX, NY, NZ = 9, 7, 5


@tack.kernel
def radius_squared(values, nx, ny, nz):
    # VTK images store x fastest, then y, then z: decompose the flat index.
    for i in range(values.shape[0]):
        x = float(i % nx) - float(nx - 1) * 0.5
        y = float((i // nx) % ny) - float(ny - 1) * 0.5
        z = float(i // (nx * ny)) - float(nz - 1) * 0.5
        values[i] = x * x + y * y + z * z


def expected_values(shape=(NX, NY, NZ)):
    nx, ny, nz = shape
    z, y, x = np.mgrid[:nz, :ny, :nx]
    r2 = (x - (nx - 1) / 2) ** 2 + (y - (ny - 1) / 2) ** 2 + (z - (nz - 1) / 2) ** 2
    return r2.ravel().astype(np.float32)


def build_image(shape=(NX, NY, NZ), device="cpu"):
    """Run the exchange; return the image, both VTK arrays and the Tack array."""
    nx, ny, nz = shape
    image = vtkImageData(dimensions=(nx, ny, nz))
    scalars = vtkFloatArray(number_of_tuples=image.number_of_points)  # VTK owns this memory
    scalars.Fill(0.0)
    image.point_data.SetScalars(scalars)

    if device == "cpu":
        field = vtk_to_array(scalars)  # a Tack view of VTK's memory
    else:
        field = tack.array(vtk_to_array(scalars), device=device)  # a copy on the device
    assert field.shape == (nx * ny * nz,) and field.dtype == tack.f32
    radius_squared(field, nx, ny, nz)
    scalars.Modified()  # tell VTK's pipeline the values changed

    # VTK's view of the same memory on the CPU; a host copy from another device
    exported = array_to_vtk(field, name="radius_squared", copy=device != "cpu")
    image.point_data.SetScalars(exported)
    return image, scalars, exported, field


def check(image, scalars, exported, field, shape=(NX, NY, NZ)):
    want = expected_values(shape)
    np.testing.assert_array_equal(np.asarray(exported), want)
    if field.device != "cpu":
        # copies: VTK's original array is as it was, and the device keeps its own values
        assert (np.asarray(scalars) == 0).all()
        np.testing.assert_array_equal(field.numpy(), want)
        return
    np.testing.assert_array_equal(np.asarray(scalars), want)
    # One allocation, three handles: VTK's original, Tack's view, VTK's export.
    addresses = {field.ptr, int(np.asarray(scalars).ctypes.data), int(np.asarray(exported).ctypes.data)}
    assert len(addresses) == 1, f"expected one shared allocation, found {len(addresses)}"
    field.fill(-1.0)
    assert np.asarray(scalars)[-1] == -1.0 and np.asarray(exported)[-1] == -1.0
    radius_squared(field, *shape)  # restore the field for the output file
    exported.Modified()
    np.testing.assert_array_equal(np.asarray(exported), want)


def write_vti(image, path):
    from vtkmodules.vtkIOXML import vtkXMLImageDataWriter

    writer = vtkXMLImageDataWriter(file_name=path)
    writer.SetInputData(image)
    if writer.Write() != 1:  # a failed write only logs; check the result
        raise RuntimeError(f"VTK could not write {path}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", metavar="FILE.vti", help="write the image to this .vti file")
    parser.add_argument("--picture", metavar="FILE.png", help="draw the image's three mid-planes (tack.vis)")
    parser.add_argument("--shape", type=int, nargs=3, default=(NX, NY, NZ), metavar=("NX", "NY", "NZ"),
                        help="the image's points along x, y and z")
    parser.add_argument("--device", default="cpu", help="where the kernel runs; off the CPU the field is copied")
    args = parser.parse_args(argv)
    if min(args.shape) < 1:
        parser.error(f"--shape {' '.join(map(str, args.shape))}: every axis needs a point")
    shape = tuple(args.shape)
    image, scalars, exported, field = build_image(shape, args.device)
    check(image, scalars, exported, field, shape)
    if args.output:
        write_vti(image, args.output)
        print(f"wrote {args.output}: {shape[0]}x{shape[1]}x{shape[2]} points, point data 'radius_squared'")
    if args.picture:
        from tack import vis

        vis.render_slices(image, args.picture, title="radius_squared")
        print(f"wrote {args.picture}")
    print("VTK interop: check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
