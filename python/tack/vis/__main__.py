"""Render a VTK file to a PNG:  python -m tack.vis radius.vti radius.png

Reads any VTK XML or legacy dataset file (.vti, .vtr, .vts, .vtu, .vtp,
.vtk) and draws it as tack.vis.render does: the three mid-planes of a
volume, a slice of a 2-D image, or the points of anything else coloured by
their active scalars (or --field).
"""

import argparse
import pathlib
import sys


def read(path):
    path = pathlib.Path(path)
    if not path.exists():
        raise SystemExit(f"tack.vis: {path} does not exist")
    if path.suffix == ".vtk":
        from vtkmodules.vtkIOLegacy import vtkDataSetReader as Reader
    else:
        from vtkmodules.vtkIOXML import vtkXMLGenericDataObjectReader as Reader
    reader = Reader()
    reader.SetFileName(str(path))
    reader.Update()
    data = reader.GetOutput()
    if data is None or data.GetNumberOfPoints() == 0:
        raise SystemExit(f"tack.vis: VTK read no points from {path}")
    return data


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tack.vis", description=__doc__.splitlines()[0])
    parser.add_argument("input", help="a VTK dataset file")
    parser.add_argument("output", help="the PNG to write")
    parser.add_argument("--field", help="the point-data array to show (default: the active scalars)")
    parser.add_argument("--title", help="a title (default: the field's name)")
    parser.add_argument("--colormap", default="viridis")
    args = parser.parse_args(argv)

    from . import render

    options = {"colormap": args.colormap}
    if args.field:
        options["field"] = args.field
    if args.title:
        options["title"] = args.title
    out = render(read(args.input), args.output, **options)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
