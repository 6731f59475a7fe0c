"""tack.vis: offscreen pictures of arrays and datasets, checked pixel by pixel."""

import numpy as np
import pytest

import tack

pytest.importorskip("vtkmodules", reason="VTK is not installed (uv sync --extra interop)")

from vtkmodules.util.numpy_support import numpy_to_vtk, vtk_to_numpy  # noqa: E402
from vtkmodules.vtkCommonDataModel import vtkImageData  # noqa: E402

import tack.vis as vis  # noqa: E402

WHITE = np.array([255, 255, 255])


def volume():
    z, y, x = np.mgrid[:5, :7, :9]
    return ((x - 4) ** 2 + (y - 3) ** 2 + (z - 2) ** 2).astype(np.float32)


def read_png(path):
    from vtkmodules.vtkIOImage import vtkPNGReader

    r = vtkPNGReader()
    r.SetFileName(str(path))
    r.Update()
    img = r.GetOutput()
    w, h, _ = img.GetDimensions()
    return vtk_to_numpy(img.GetPointData().GetScalars()).reshape(h, w, -1)[::-1, :, :3]


def assert_not_blank(rgb, min_colours=20):
    flat = rgb.reshape(-1, rgb.shape[-1])
    colours = np.unique(flat, axis=0)
    assert len(colours) >= min_colours, f"only {len(colours)} colours: a blank picture?"
    non_white = np.any(flat != 255, axis=1).mean()
    assert 0.05 < non_white < 0.95, f"{non_white:.0%} of the picture is drawn"


def test_slice_png_has_the_size_and_the_field(tmp_path):
    path = vis.render_slice(tack.array(volume()), tmp_path / "slice.png", size=(320, 240))
    assert path.exists() and path.stat().st_size > 1000
    rgb = read_png(path)
    assert rgb.shape == (240, 320, 3)
    assert_not_blank(rgb)
    # The colour map runs from dark (the centre, value 0) to bright yellow (the corners).
    drawn = np.argwhere(np.any(rgb != 255, axis=2) & (rgb.sum(axis=2) < 700))
    brightness = rgb.sum(axis=2).astype(int)
    centre = brightness[tuple(drawn.mean(axis=0).astype(int))]
    assert centre < 250, f"the centre of the field should be dark, got brightness {centre}"


def test_slice_as_array_without_a_file():
    rgb = vis.render_slice(volume()[2], None, size=(200, 150))
    assert rgb.shape == (150, 200, 3) and rgb.dtype == np.uint8
    assert_not_blank(rgb)


def test_a_figure_is_an_array_a_notebook_shows(tmp_path):
    fig = vis.render_slice(volume()[2], None, size=(200, 150))
    assert isinstance(fig, vis.Figure) and isinstance(fig, np.ndarray)
    png = fig._repr_png_()  # what IPython and Jupyter call to show it
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    (tmp_path / "fig.png").write_bytes(png)
    assert np.array_equal(read_png(tmp_path / "fig.png"), np.asarray(fig))  # VTK reads back the same pixels
    # what NumPy computes from it is a plain array or scalar, shown as numbers
    assert type(fig + 1) is np.ndarray and type(fig.sum()) is np.uint64 and type(np.asarray(fig)) is np.ndarray
    assert fig[0]._repr_png_() is None and fig.astype(np.float32)._repr_png_() is None
    assert fig[:0]._repr_png_() is None


def test_volume_slices_png(tmp_path):
    path = vis.render_slices(tack.array(volume()), tmp_path / "slices.png", size=(200, 180),
                             title="radius squared")
    rgb = read_png(path)
    assert rgb.shape == (180, 3 * 200 + 110, 3)
    assert_not_blank(rgb)
    for k in range(3):  # every panel has a picture
        panel = rgb[:, k * 200:(k + 1) * 200]
        assert np.any(panel.sum(axis=2) < 300), f"panel {k} is empty"


def test_image_data_and_dataset_inputs(tmp_path):
    from tack.interop.vtk import vtk_to_dataset

    image = vtkImageData(dimensions=(9, 7, 5), spacing=(1.0, 0.5, 2.0))
    values = numpy_to_vtk(volume().ravel(), deep=1)
    values.SetName("radius_squared")
    image.GetPointData().SetScalars(values)
    a = vis.render(image, tmp_path / "image.png")
    b = vis.render(vtk_to_dataset(image), tmp_path / "dataset.png")
    np.testing.assert_array_equal(read_png(a), read_png(b))
    c = vis.render_slice(image, None, field="radius_squared", axis="x", size=(200, 200))
    assert_not_blank(c)


def test_points_coloured_by_a_field(tmp_path):
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(400, 3)).astype(np.float32)
    values = np.linalg.norm(pts, axis=1)
    path = vis.render_points(tack.array(pts, tack.vec3), tmp_path / "points.png",
                             values=tack.array(values), size=(300, 300))
    rgb = read_png(path)
    assert rgb.shape == (300, 300, 3)
    assert_not_blank(rgb, min_colours=30)
    plain = vis.render_points(pts, None, size=(200, 200))
    assert len(np.unique(plain.reshape(-1, 3), axis=0)) > 2


def test_points_from_polydata_field(tmp_path):
    from vtkmodules.vtkFiltersSources import vtkSphereSource

    from tack.interop.vtk import vtk_to_dataset

    src = vtkSphereSource(theta_resolution=16, phi_resolution=12)
    src.Update()
    poly = src.GetOutput()
    rgb = vis.render(poly, None, field="Normals", size=(240, 240))  # vectors show their length
    assert_not_blank(rgb, min_colours=5)
    rgb2 = vis.render(vtk_to_dataset(poly), None, size=(240, 240))
    assert rgb2.shape == (240, 240, 3)


def test_bad_inputs():
    with pytest.raises(ValueError, match="2-D .* or 3-D"):
        vis.render_slice(np.zeros(5), None)
    with pytest.raises(ValueError, match="axis must be"):
        vis.render_slice(volume(), None, axis="w")
    with pytest.raises(IndexError, match="outside 0..4"):
        vis.render_slice(volume(), None, axis="z", index=5)
    with pytest.raises(ValueError, match="unknown colormap"):
        vis.render_slice(volume(), None, colormap="rainbow-ish")
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        vis.render_points(np.zeros((4, 2)), None)
    with pytest.raises(ValueError, match="need 4 values"):
        vis.render_points(np.zeros((4, 3)), None, values=np.zeros(3))
    image = vtkImageData(dimensions=(3, 3, 3))
    with pytest.raises(ValueError, match="no point data"):
        vis.render_slice(image, None)
    with pytest.raises(ValueError, match="does not know how to draw"):
        vis.render(np.zeros((2, 2, 2, 2)), None)


def test_command_line_renders_a_vti(tmp_path):
    import subprocess
    import sys

    from vtkmodules.vtkIOXML import vtkXMLImageDataWriter

    image = vtkImageData(dimensions=(9, 7, 5))
    values = numpy_to_vtk(volume().ravel(), deep=1)
    values.SetName("radius_squared")
    image.GetPointData().SetScalars(values)
    writer = vtkXMLImageDataWriter(file_name=str(tmp_path / "r.vti"))
    writer.SetInputData(image)
    assert writer.Write() == 1
    out = subprocess.run([sys.executable, "-m", "tack.vis", str(tmp_path / "r.vti"), str(tmp_path / "r.png")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert_not_blank(read_png(tmp_path / "r.png"))
    missing = subprocess.run([sys.executable, "-m", "tack.vis", str(tmp_path / "nope.vti"), "x.png"],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode != 0 and "does not exist" in missing.stderr


def _probe(rgb, fy, fx):
    h, w, _ = rgb.shape
    return rgb[int(fy * h), int(fx * w)].astype(int).sum()


def test_a_slice_is_drawn_as_imshow_draws_it_row_zero_at_the_top():
    # Rows 0..31 bright, the rest dark: the bright half must be the top one.
    top = np.zeros((64, 64), np.float32)
    top[:32] = 1.0
    rgb = vis.render_slice(top, None, colormap="gray", range=(0, 1), title="")
    assert _probe(rgb, 0.3, 0.4) == 3 * 255 and _probe(rgb, 0.75, 0.4) == 0
    # and column 0 at the left
    left = np.zeros((64, 64), np.float32)
    left[:, :32] = 1.0
    rgb = vis.render_slice(left, None, colormap="gray", range=(0, 1), title="")
    assert _probe(rgb, 0.5, 0.25) == 3 * 255 and _probe(rgb, 0.5, 0.55) == 0
    # The same through a vtkImageData: one orientation whatever the input.
    img = vtkImageData()
    img.SetDimensions(64, 64, 1)
    img.GetPointData().SetScalars(numpy_to_vtk(top.reshape(-1), deep=1))
    rgb = vis.render_slice(img, None, colormap="gray", range=(0, 1), title="")
    assert _probe(rgb, 0.3, 0.4) == 3 * 255 and _probe(rgb, 0.75, 0.4) == 0


@pytest.mark.parametrize("axis", ["x", "y"])
def test_an_x_or_y_slice_has_z_growing_downwards(axis):
    vol = np.zeros((64, 64, 64), np.float32)
    vol[:32] = 1.0  # z < 32 bright
    rgb = vis.render_slice(vol, None, axis=axis, colormap="gray", range=(0, 1), title="")
    assert _probe(rgb, 0.3, 0.4) == 3 * 255 and _probe(rgb, 0.75, 0.4) == 0


def test_cell_data_of_an_image_is_drawn_one_pixel_per_cell(tmp_path):
    # A finite-volume code writes its fields as cell data: the picture is the cells' values, drawn
    # as the same (ny, nx) array is, and the command line finds the field by name (before: "no
    # array named 'h'; the dataset has []", the point data searched alone).
    from tack.interop.vtk import Dataset, dataset_to_vtk
    from vtkmodules.vtkIOXML import vtkXMLImageDataWriter

    top = np.zeros((64, 48), np.float32)
    top[:32] = 1.0  # rows 0..31 bright
    ds = Dataset(kind="image", extent=(0, 48, 0, 64, 0, 0), cell_data={"h": top, "q": np.zeros((64 * 48, 3))})
    image = dataset_to_vtk(ds)
    a = vis.render_slice(image, None, field="h", colormap="gray", range=(0, 1), title="")
    b = vis.render_slice(ds, None, field="h", colormap="gray", range=(0, 1), title="")
    np.testing.assert_array_equal(a, b)
    assert _probe(a, 0.3, 0.4) == 3 * 255 and _probe(a, 0.75, 0.4) == 0  # the top half bright
    with pytest.raises(KeyError, match=r"no array named 'hh'.*\['h', 'q'\]"):
        vis.render_slice(image, None, field="hh")
    import subprocess
    import sys

    writer = vtkXMLImageDataWriter(file_name=str(tmp_path / "h.vti"))
    writer.SetInputData(image)
    assert writer.Write() == 1
    out = subprocess.run([sys.executable, "-m", "tack.vis", str(tmp_path / "h.vti"), str(tmp_path / "h.png"),
                          "--field", "h"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert_not_blank(read_png(tmp_path / "h.png"), min_colours=2)
