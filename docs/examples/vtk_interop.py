"""A VTK image and Tack sharing one array: fill it with a kernel, export it back.

The image's scalars are allocated by VTK.  vtk_to_array gives Tack a view of
that memory (no copy), a kernel writes each point's squared distance from the
image centre into it, and array_to_vtk hands the same memory back to VTK as
a second, named array.  The script checks the values against NumPy, checks
that a write through Tack shows in both VTK arrays, and with --output writes
the image as a .vti file that VTK or ParaView can open.

    uv run python docs/examples/vtk_interop.py --output radius.vti --picture radius.png

--picture draws the image's three mid-planes with tack.vis.  Needs VTK 9.7.1 or
later (`uv sync --extra interop`); runs on the CPU, with a fixed small image: the
point is the sharing of VTK's host memory, which a GPU would replace by copies.
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
def radius_squared(values, nx, ny):
    # VTK images store x fastest, then y, then z: decompose the flat index.
    for i in range(values.shape[0]):
        x = float(i % nx) - float(nx - 1) * 0.5
        y = float((i // nx) % ny) - float(ny - 1) * 0.5
        z = float(i // (nx * ny)) - 2.0
        values[i] = x * x + y * y + z * z


def expected_values():
    z, y, x = np.mgrid[:NZ, :NY, :NX]
    r2 = (x - (NX - 1) / 2) ** 2 + (y - (NY - 1) / 2) ** 2 + (z - 2) ** 2
    return r2.ravel().astype(np.float32)


def build_image():
    """Run the exchange; return the image, both VTK arrays and the Tack view."""
    tack.set_default_device("cpu")
    image = vtkImageData(dimensions=(NX, NY, NZ))
    scalars = vtkFloatArray(number_of_tuples=image.number_of_points)  # VTK owns this memory
    scalars.Fill(0.0)
    image.point_data.SetScalars(scalars)

    field = vtk_to_array(scalars)  # a Tack view of VTK's memory
    assert field.shape == (NX * NY * NZ,) and field.dtype == tack.f32
    radius_squared(field, NX, NY)
    scalars.Modified()  # tell VTK's pipeline the values changed

    exported = array_to_vtk(field, name="radius_squared")  # VTK's view of the same memory
    image.point_data.SetScalars(exported)
    return image, scalars, exported, field


def check(image, scalars, exported, field):
    want = expected_values()
    np.testing.assert_array_equal(np.asarray(scalars), want)
    np.testing.assert_array_equal(np.asarray(exported), want)
    # One allocation, three handles: VTK's original, Tack's view, VTK's export.
    addresses = {field.ptr, int(np.asarray(scalars).ctypes.data), int(np.asarray(exported).ctypes.data)}
    assert len(addresses) == 1, f"expected one shared allocation, found {len(addresses)}"
    field.fill(-1.0)
    assert np.asarray(scalars)[17] == -1.0 and np.asarray(exported)[17] == -1.0
    radius_squared(field, NX, NY)  # restore the field for the output file
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
    args = parser.parse_args(argv)
    image, scalars, exported, field = build_image()
    check(image, scalars, exported, field)
    if args.output:
        write_vti(image, args.output)
        print(f"wrote {args.output}: {NX}x{NY}x{NZ} points, point data 'radius_squared'")
    if args.picture:
        from tack import vis

        vis.render_slices(image, args.picture, title="radius_squared")
        print(f"wrote {args.picture}")
    print("VTK interop: check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
