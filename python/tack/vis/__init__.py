"""Pictures of Tack arrays and datasets, rendered offscreen with VTK.

Three kinds of figure, each written as a PNG (or returned as an RGB NumPy
array when ``path`` is None):

* ``render_slice``: one slice of a 2-D or 3-D scalar field as a colour map,
  with a colour bar.
* ``render_slices``: the three mid-planes (x, y and z) of a volume side by
  side, sharing one colour range.
* ``render_points``: a point cloud, each point coloured by a field.

``render(obj, path)`` picks one of them from what ``obj`` is.

The array returned when ``path`` is None is a ``Figure``: a NumPy array in
every way, which Jupyter and IPython also show as a picture (its
``_repr_png_``), so a figure made as a cell's last expression appears
under the cell.

Inputs: a Tack array (or NumPy array) of shape (ny, nx) or (nz, ny, nx) --
C order, so x varies fastest, as in VTK images; a ``vtkImageData``; a
``tack.interop.vtk.Dataset`` of kind "image"; for points, an (n, 3) or vec3
array, a ``vtkPolyData``/``vtkPointSet`` or a point ``Dataset``.  Fields on
datasets are chosen with ``field=`` (default: the active scalars, else the
first point-data array).

Rendering needs no display.  On Linux without ``$DISPLAY`` the render
window is VTK's EGL window (Mesa's libEGL: ``apt-get install libegl1
libgl1-mesa-dri``); set ``VTK_DEFAULT_OPENGL_WINDOW`` yourself to choose
another (``vtkOSOpenGLRenderWindow`` for OSMesa).
"""

from __future__ import annotations

import os
import pathlib
import sys

if sys.platform.startswith("linux") and not os.environ.get("DISPLAY"):
    # Without a display VTK would try X first, warn, then fall back; go to
    # EGL directly.  Must be set before the OpenGL module loads.
    os.environ.setdefault("VTK_DEFAULT_OPENGL_WINDOW", "vtkEGLRenderWindow")

import numpy as np

from .. import _core

try:
    import vtkmodules.vtkInteractionStyle  # noqa: F401  (registers default styles)
    import vtkmodules.vtkRenderingFreeType  # noqa: F401  (text)
    import vtkmodules.vtkRenderingOpenGL2  # noqa: F401  (the render window)
    from vtkmodules import vtkCommonCore as _cc
    from vtkmodules import vtkCommonDataModel as _dm
    from vtkmodules import vtkRenderingAnnotation as _ann
    from vtkmodules import vtkRenderingCore as _rc
    from vtkmodules.util import numpy_support as _nps
    from vtkmodules.vtkIOImage import vtkPNGWriter
except ImportError as _e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "tack.vis renders with VTK: `uv sync --extra interop` (or `pip install 'vtk>=9.7.1'`)"
    ) from _e

__all__ = ["render", "render_slice", "render_slices", "render_points", "COLORMAPS", "Figure"]

# Colour maps as a few anchor colours, interpolated in RGB.
COLORMAPS = {
    "viridis": ["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779",
                "#6ece58", "#b5de2b", "#fde725"],
    "magma": ["#000004", "#1c1044", "#4f127b", "#812581", "#b5367a", "#e55064", "#fb8761",
              "#fec287", "#fcfdbf"],
    "coolwarm": ["#3b4cc0", "#7b9ff9", "#c0d4f5", "#f2cbb7", "#ee8468", "#b40426"],
    "gray": ["#000000", "#ffffff"],
}

_BACKGROUND = (1.0, 1.0, 1.0)
_TEXT = (0.1, 0.1, 0.1)


# ------------------------------------------------------------- inputs

def _host(values):
    """A NumPy copy (or view) of a Tack array, NumPy array or VTK array."""
    if isinstance(values, _core.Array):
        return values.numpy()
    if isinstance(values, _cc.vtkDataArray):
        return _nps.vtk_to_numpy(values)
    return np.asarray(values)


def _pick_array(data, field):
    """The array ``field`` of a vtkDataSetAttributes (default: active scalars)."""
    if field is not None:
        a = data.GetArray(field)
        if a is None:
            names = [data.GetArrayName(i) for i in range(data.GetNumberOfArrays())]
            raise KeyError(f"no array named {field!r}; the dataset has {names}")
        return a
    a = data.GetScalars()
    if a is None and data.GetNumberOfArrays():
        a = data.GetArray(0)
    return a


def _as_image(obj, field):
    """(vtkImageData with one scalar array, field name) for an image-like obj."""
    if isinstance(obj, _dm.vtkImageData):
        points, cells = obj.GetPointData(), obj.GetCellData()
        if field is not None and points.GetArray(field) is None and cells.GetArray(field) is None:
            names = [d.GetArrayName(i) for d in (points, cells) for i in range(d.GetNumberOfArrays())]
            raise KeyError(f"no array named {field!r}; the image has point and cell arrays {names}")
        a = None if field is not None and points.GetArray(field) is None else _pick_array(points, field)
        img = _dm.vtkImageData()
        if a is not None:
            img.CopyStructure(obj)
        else:  # cell data (a finite-volume code's): one pixel per cell, at the cell's centre
            a = _pick_array(cells, field)
            if a is None:
                raise ValueError("the image has no point data or cell data to show")
            dims = [max(d - 1, 1) for d in obj.GetDimensions()]
            spacing, origin = obj.GetSpacing(), obj.GetOrigin()
            img.SetDimensions(*dims)
            img.SetSpacing(*spacing)
            img.SetOrigin(*(o + (0.5 * h if d > 1 else 0.0) for o, h, d in zip(origin, spacing, obj.GetDimensions())))
            img.SetDirectionMatrix(obj.GetDirectionMatrix())
        img.GetPointData().SetScalars(_scalar_component(a))
        return img, a.GetName() or field or ""
    ds_type = _dataset_type()
    if ds_type is not None and isinstance(obj, ds_type):
        if obj.kind != "image":
            raise TypeError(f"an image figure needs an image dataset, not a {obj.kind!r} one")
        from ..interop.vtk import dataset_to_vtk

        return _as_image(dataset_to_vtk(obj), field)
    values = _host(obj)
    if values.ndim not in (2, 3):
        raise ValueError(
            f"an image figure takes a 2-D (ny, nx) or 3-D (nz, ny, nx) array, not shape {values.shape}"
        )
    values = np.ascontiguousarray(values, dtype=np.float64)
    dims = values.shape[::-1] + (1,) * (3 - values.ndim)
    img = _dm.vtkImageData()
    img.SetDimensions(*dims)
    img.GetPointData().SetScalars(_nps.numpy_to_vtk(values.reshape(-1), deep=1))
    return img, field or ""


def _scalar_component(a):
    """One-component arrays as they are; others as their magnitude."""
    if a.GetNumberOfComponents() == 1:
        return a
    v = _nps.vtk_to_numpy(a).astype(np.float64)
    out = _nps.numpy_to_vtk(np.linalg.norm(v, axis=1), deep=1)
    out.SetName(f"|{a.GetName() or 'vector'}|")
    return out


def _dataset_type():
    try:
        from ..interop.vtk import Dataset
    except ImportError:  # pragma: no cover
        return None
    return Dataset


# ------------------------------------------------------------- drawing

def _lookup_table(colormap, lo, hi):
    anchors = COLORMAPS.get(colormap) if isinstance(colormap, str) else colormap
    if anchors is None:
        raise ValueError(f"unknown colormap {colormap!r}; choose one of {sorted(COLORMAPS)}")
    ctf = _rc.vtkColorTransferFunction()
    for k, c in enumerate(anchors):
        rgb = tuple(int(c[i:i + 2], 16) / 255 for i in (1, 3, 5)) if isinstance(c, str) else tuple(c)
        ctf.AddRGBPoint(k / max(len(anchors) - 1, 1), *rgb)
    lut = _cc.vtkLookupTable() if hasattr(_cc, "vtkLookupTable") else _rc.vtkLookupTable()
    lut.SetNumberOfTableValues(256)
    for i in range(256):
        lut.SetTableValue(i, *ctf.GetColor(i / 255), 1.0)
    if hi <= lo:
        hi = lo + (abs(lo) * 1e-6 or 1.0)
    lut.SetTableRange(lo, hi)
    lut.Build()
    return lut


def _range(values_range, scalar_range):
    if values_range is not None:
        lo, hi = values_range
        return float(lo), float(hi)
    return float(scalar_range[0]), float(scalar_range[1])


def _window(size, n_views=1):
    win = _rc.vtkRenderWindow()
    win.SetOffScreenRendering(1)
    win.SetMultiSamples(0)
    win.SetSize(int(size[0]) * n_views, int(size[1]))
    return win


def _renderer(win, k, n):
    ren = _rc.vtkRenderer()
    ren.SetBackground(*_BACKGROUND)
    ren.SetViewport(k / n, 0.0, (k + 1) / n, 1.0)
    win.AddRenderer(ren)
    return ren


def _text(ren, text, *, top=True, size=18):
    actor = _rc.vtkTextActor()
    actor.SetInput(text)
    prop = actor.GetTextProperty()
    prop.SetFontSize(size)
    prop.SetColor(*_TEXT)
    prop.SetJustificationToCentered()
    prop.SetVerticalJustificationToTop() if top else prop.SetVerticalJustificationToBottom()
    actor.GetPositionCoordinate().SetCoordinateSystemToNormalizedViewport()
    actor.SetPosition(0.5, 0.97 if top else 0.02)
    ren.AddViewProp(actor)


def _scalar_bar(ren, lut, title):
    bar = _ann.vtkScalarBarActor()
    bar.SetLookupTable(lut)
    bar.SetTitle(title or "")
    bar.SetNumberOfLabels(5)
    bar.SetMaximumWidthInPixels(90)
    bar.SetBarRatio(0.25)
    bar.UnconstrainedFontSizeOn()
    for p in (bar.GetTitleTextProperty(), bar.GetLabelTextProperty()):
        p.SetColor(*_TEXT)
        p.ShadowOff()
        p.ItalicOff()
        p.BoldOff()
        p.SetFontSize(13)
    bar.GetPositionCoordinate().SetCoordinateSystemToNormalizedViewport()
    bar.SetPosition(0.84, 0.12)
    bar.SetWidth(0.14)
    bar.SetHeight(0.75)
    ren.AddViewProp(bar)


def _slice_view(ren, img, lut, axis, index, viewport_px, room=0.8, scale=None):
    """Show plane ``index`` across ``axis`` (0=x, 1=y, 2=z) of ``img``,
    scaled to fit the left ``room`` of a viewport of ``viewport_px`` pixels
    (the rest is for the colour bar) below the title."""
    mapper = _rc.vtkImageSliceMapper()
    mapper.SetInputData(img)
    mapper.SetOrientation(axis)
    mapper.SetSliceNumber(index)
    actor = _rc.vtkImageSlice()
    actor.SetMapper(mapper)
    prop = actor.GetProperty()
    prop.SetLookupTable(lut)
    prop.UseLookupTableScalarRangeOn()
    prop.SetInterpolationTypeToNearest()
    ren.AddViewProp(actor)
    # Row 0 at the top, as an image file and matplotlib's imshow show an
    # array: the slice's first axis in C order (y for a z slice, z for an x
    # or y slice) points down the picture, its second (x, or y for an x
    # slice) to the right.  The camera looks along +z for a z slice (from
    # -z, view up -y), along -y for a y slice and along +x for an x slice.
    b = mapper.GetBounds()
    centre = [(b[2 * i] + b[2 * i + 1]) / 2 for i in range(3)]
    spacing = img.GetSpacing()
    size = [b[2 * i + 1] - b[2 * i] + spacing[i] for i in range(3)]  # pixels reach half a step out
    right_axis, up_axis = {0: (1, 2), 1: (0, 2), 2: (0, 1)}[axis]
    toward = [0.0, 0.0, 0.0]
    toward[axis] = 1.0 if axis == 1 else -1.0
    up = [0.0, 0.0, 0.0]
    up[up_axis] = -1.0  # the first index grows downwards
    right = [0.0, 0.0, 0.0]
    right[right_axis] = 1.0
    w_px, h_px = viewport_px
    aspect = w_px / h_px
    # ParallelScale is half the view's height in world units.
    if scale is None:
        scale = _fit_scale(img, axis, viewport_px, room)
    shift = (0.5 - room / 2) * 2 * scale * aspect  # image centre sits in the middle of `room`
    height_shift = -0.03 * 2 * scale  # a little below centre, clear of the title
    focal = [c + shift * r + height_shift * u for c, r, u in zip(centre, right, up)]
    distance = 10.0 * (max(size) + 1.0)
    cam = ren.GetActiveCamera()
    cam.ParallelProjectionOn()
    cam.SetFocalPoint(*focal)
    cam.SetPosition(*(f + distance * t for f, t in zip(focal, toward)))
    cam.SetViewUp(*up)
    cam.SetParallelScale(scale)
    ren.ResetCameraClippingRange()
    return actor


def _fit_scale(img, axis, viewport_px, room):
    """The camera's parallel scale that fits slice ``axis`` of ``img`` in
    90% of the left ``room`` of the viewport and 76% of its height."""
    dims, spacing = img.GetDimensions(), img.GetSpacing()
    size = [dims[i] * spacing[i] for i in range(3)]
    right_axis, up_axis = {0: (1, 2), 1: (0, 2), 2: (0, 1)}[axis]
    aspect = viewport_px[0] / viewport_px[1]
    return max(size[up_axis] / (2 * 0.76), size[right_axis] / (2 * aspect * room * 0.9), 1e-9)


def _finish(win, path):
    win.Render()
    grab = _rc.vtkWindowToImageFilter()
    grab.SetInput(win)
    grab.SetInputBufferTypeToRGB()
    grab.ReadFrontBufferOff()
    grab.Update()
    image = grab.GetOutput()
    if path is None:
        w, h, _ = image.GetDimensions()
        rgb = _nps.vtk_to_numpy(image.GetPointData().GetScalars()).reshape(h, w, -1)
        win.Finalize()
        return np.ascontiguousarray(rgb[::-1]).view(Figure)  # VTK's first row is the bottom one
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = vtkPNGWriter()
    writer.SetFileName(str(path))
    writer.SetInputData(image)
    writer.Write()
    win.Finalize()
    if not path.exists() or path.stat().st_size == 0:
        raise RuntimeError(f"VTK could not write {path}")
    return path


_AXES = {"x": 0, "y": 1, "z": 2, 0: 0, 1: 1, 2: 2}


class Figure(np.ndarray):
    """A rendered picture: an (h, w, 3) uint8 NumPy array (row 0 at the
    top) that IPython and Jupyter display as the picture it is.

    Everything NumPy does with it is what it does with the plain array it
    views (``np.asarray(fig)`` is that array; arithmetic and reductions on
    it give plain arrays); ``_repr_png_`` encodes it as
    a PNG for the notebook, and gives nothing -- so the notebook shows the
    array's text -- for an array derived from it that is no longer an RGB
    picture.
    """

    def __array_wrap__(self, array, context=None, return_scalar=False):
        # what ufuncs and reductions compute from a picture is a plain array (or scalar)
        array = np.asarray(array).view(np.ndarray)
        return array[()] if return_scalar else array

    def _repr_png_(self):
        if self.ndim != 3 or self.shape[2] not in (3, 4) or self.dtype != np.uint8 or 0 in self.shape:
            return None
        return _png(np.asarray(self))


def _png(rgb):
    """PNG bytes of an (h, w, 3 or 4) uint8 array: one IDAT of the rows,
    each behind filter byte 0, deflated."""
    import struct
    import zlib

    h, w, c = rgb.shape

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = np.concatenate([np.zeros((h, 1), np.uint8), np.ascontiguousarray(rgb).reshape(h, w * c)], axis=1)
    header = struct.pack(">IIBBBBB", w, h, 8, 2 if c == 3 else 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
            + chunk(b"IEND", b""))


# ------------------------------------------------------------- figures

def render_slice(data, path=None, *, field=None, axis="z", index=None, colormap="viridis",
                 range=None, title=None, size=(640, 480)):
    """One slice of a scalar field as a colour map with a colour bar.

    ``axis`` ("x", "y" or "z") is the axis the slice is across and ``index``
    the plane along it (default: the middle one).  A 2-D array is its own
    slice.  It is drawn as imshow draws an array: row 0 at the top (y grows
    downwards in a z slice, z in an x or y slice), x (y in an x slice) to
    the right.  ``range`` (lo, hi) fixes the colour range; by default it spans
    the slice's values.  Writes a PNG to ``path`` and returns the path, or
    returns the picture as an (h, w, 3) uint8 array (a ``Figure``, which a
    notebook displays) when ``path`` is None.
    """
    img, name = _as_image(data, field)
    if axis not in _AXES:
        raise ValueError(f"axis must be 'x', 'y' or 'z', not {axis!r}")
    ax = _AXES[axis]
    dims = img.GetDimensions()
    if dims[2] == 1 and ax == 2 and index is None:
        index = 0
    ext = img.GetExtent()
    n = dims[ax]
    if index is None:
        index = n // 2
    if not (0 <= index < n):
        raise IndexError(f"slice index {index} is outside 0..{n - 1} along {'xyz'[ax]}")
    plane = _plane(img, ax, index)
    lo, hi = _range(range, (plane.min(), plane.max()) if plane.size else (0.0, 1.0))
    lut = _lookup_table(colormap, lo, hi)
    win = _window(size)
    ren = _renderer(win, 0, 1)
    _slice_view(ren, img, lut, ax, ext[2 * ax] + index, size)
    _scalar_bar(ren, lut, name)
    if title is None:
        title = f"{name + ': ' if name else ''}{'xyz'[ax]} = {index}" if dims[ax] > 1 else name
    if title:
        _text(ren, title)
    return _finish(win, path)


def _plane(img, ax, index):
    dims = img.GetDimensions()
    vals = _nps.vtk_to_numpy(img.GetPointData().GetScalars()).reshape(dims[::-1])  # (z, y, x)
    return np.take(vals, index, axis=2 - ax)


def render_slices(data, path=None, *, field=None, colormap="viridis", range=None, title=None,
                  size=(420, 400)):
    """The x, y and z mid-planes of a volume side by side, in one colour
    range (by default the whole volume's), with a colour bar on each.

    ``size`` is the size of one panel.  Returns the path, or the picture as
    an (h, w, 3) uint8 array (a ``Figure``) when ``path`` is None.
    """
    img, name = _as_image(data, field)
    dims = img.GetDimensions()
    axes = [a for a in (0, 1, 2) if dims[a] > 1] if min(dims) == 1 else [0, 1, 2]
    if len(axes) < 3:
        return render_slice(img, path, colormap=colormap, range=range, title=title,
                            size=size, axis="z")
    vals = _nps.vtk_to_numpy(img.GetPointData().GetScalars())
    lo, hi = _range(range, (vals.min(), vals.max()) if vals.size else (0.0, 1.0))
    lut = _lookup_table(colormap, lo, hi)
    bar_px = 110
    total = 3 * size[0] + bar_px
    win = _rc.vtkRenderWindow()
    win.SetOffScreenRendering(1)
    win.SetMultiSamples(0)
    win.SetSize(total, int(size[1]))
    ext = img.GetExtent()
    scale = max(_fit_scale(img, ax, size, 0.92) for ax in (0, 1, 2))  # one scale for all three
    for k, ax in enumerate((2, 1, 0)):
        ren = _rc.vtkRenderer()
        ren.SetBackground(*_BACKGROUND)
        ren.SetViewport(k * size[0] / total, 0.0, (k + 1) * size[0] / total, 1.0)
        win.AddRenderer(ren)
        mid = dims[ax] // 2
        _slice_view(ren, img, lut, ax, ext[2 * ax] + mid, size, room=0.92, scale=scale)
        _text(ren, f"{'xyz'[ax]} = {mid}", top=False, size=15)
        if k == 1 and (title or name):
            _text(ren, title or name)
    ren = _rc.vtkRenderer()
    ren.SetBackground(*_BACKGROUND)
    ren.SetViewport(3 * size[0] / total, 0.0, 1.0, 1.0)
    win.AddRenderer(ren)
    _scalar_bar(ren, lut, "")
    bar = ren.GetViewProps().GetLastProp()
    bar.SetPosition(0.05, 0.12)
    bar.SetWidth(0.8)
    return _finish(win, path)


def _as_points(obj, values, field):
    """(n, 3) float64 points and (n,) values (or None) for a point-like obj."""
    ds_type = _dataset_type()
    if ds_type is not None and isinstance(obj, ds_type):
        from ..interop.vtk import dataset_to_vtk

        obj = dataset_to_vtk(obj)
    if isinstance(obj, _dm.vtkDataSet):
        if isinstance(obj, _dm.vtkPointSet):
            pts = _nps.vtk_to_numpy(obj.GetPoints().GetData()) if obj.GetPoints() else np.zeros((0, 3))
        else:
            pts = np.array([obj.GetPoint(i) for i in range(obj.GetNumberOfPoints())])
        if values is None:
            a = _pick_array(obj.GetPointData(), field)
            if a is not None:
                values = _scalar_component(a)
                field = field or a.GetName()
    else:
        pts = _host(obj)
        if pts.ndim != 2 or pts.shape[1] != 3:
            raise ValueError(f"points must have shape (n, 3) (or be n vec3 values), not {pts.shape}")
    pts = np.ascontiguousarray(pts, dtype=np.float64)
    if values is not None:
        if isinstance(values, str):
            raise TypeError("pass a field name as field=, values= takes an array")
        v = _host(values).astype(np.float64)
        if v.ndim == 2:
            v = np.linalg.norm(v, axis=1)
        if v.shape != (pts.shape[0],):
            raise ValueError(f"{pts.shape[0]} points need {pts.shape[0]} values, got shape {v.shape}")
        values = v
    return pts, values, field


def render_points(points, path=None, *, values=None, field=None, colormap="viridis", range=None,
                  title=None, point_size=6.0, size=(640, 480), view="iso"):
    """A point cloud, each point a small sphere coloured by ``values``.

    ``points`` is an (n, 3) array, an array of n vec3, a VTK point set or a
    point Dataset; ``values`` an (n,) array (vectors show their length), or
    ``field`` names a point-data array of the dataset.  Without values the
    points are one colour.  ``view`` is "iso", "x", "y" or "z" (looking along
    that axis).  Returns the path, or the picture as an (h, w, 3) uint8 array
    (a ``Figure``) when ``path`` is None.
    """
    pts, vals, name = _as_points(points, values, field)
    poly = _dm.vtkPolyData()
    vp = _cc.vtkPoints()
    vp.SetData(_nps.numpy_to_vtk(pts, deep=1))
    poly.SetPoints(vp)
    n = pts.shape[0]
    verts = _dm.vtkCellArray()
    ids = np.arange(n + 1, dtype=np.int64)
    verts.SetData(_nps.numpy_to_vtk(ids, deep=1, array_type=_cc.VTK_ID_TYPE),
                  _nps.numpy_to_vtk(ids[:-1].copy(), deep=1, array_type=_cc.VTK_ID_TYPE))
    poly.SetVerts(verts)
    mapper = _rc.vtkPolyDataMapper()
    mapper.SetInputData(poly)
    win = _window(size)
    ren = _renderer(win, 0, 1)
    if vals is not None:
        scalars = _nps.numpy_to_vtk(vals, deep=1)
        scalars.SetName(name or "values")
        poly.GetPointData().SetScalars(scalars)
        lo, hi = _range(range, (vals.min(), vals.max()) if vals.size else (0.0, 1.0))
        lut = _lookup_table(colormap, lo, hi)
        mapper.SetLookupTable(lut)
        mapper.UseLookupTableScalarRangeOn()
        mapper.SetScalarModeToUsePointData()
        mapper.ScalarVisibilityOn()
        _scalar_bar(ren, lut, name or "")
    else:
        mapper.ScalarVisibilityOff()
    actor = _rc.vtkActor()
    actor.SetMapper(mapper)
    prop = actor.GetProperty()
    prop.SetPointSize(point_size)
    prop.RenderPointsAsSpheresOn()
    if vals is None:
        prop.SetColor(0.16, 0.38, 0.62)
    ren.AddActor(actor)
    cam = ren.GetActiveCamera()
    directions = {"iso": ((1, -1.3, 0.9), (0, 0, 1)), "x": ((1, 0, 0), (0, 0, 1)),
                  "y": ((0, -1, 0), (0, 0, 1)), "z": ((0, 0, 1), (0, 1, 0))}
    if view not in directions:
        raise ValueError(f"view must be one of {sorted(directions)}, not {view!r}")
    d, up = directions[view]
    cam.SetFocalPoint(0, 0, 0)
    cam.SetPosition(*d)
    cam.SetViewUp(*up)
    ren.ResetCamera()
    cam.Zoom(1.15)
    if title or name:
        _text(ren, title or name)
    return _finish(win, path)


def render(obj, path=None, **options):
    """A picture of ``obj``: its points (``render_points``) if it is an
    array of vec3, a VTK point set or a non-image dataset; its slices if it
    is an image or a 2-D/3-D array (``render_slice`` for 2-D,
    ``render_slices`` for 3-D).  A plain (n, 3) array is drawn as points
    when ``values=`` is given and as a 2-D image otherwise."""
    ds_type = _dataset_type()
    if isinstance(obj, _dm.vtkImageData) or (ds_type is not None and isinstance(obj, ds_type)
                                              and obj.kind == "image"):
        img, _ = _as_image(obj, options.get("field"))
        if 1 in img.GetDimensions():
            return render_slice(obj, path, **options)
        return render_slices(obj, path, **options)
    if isinstance(obj, (_dm.vtkDataSet,)) or ds_type is not None and isinstance(obj, ds_type):
        return render_points(obj, path, **options)
    values = obj
    if isinstance(obj, _core.Array) and obj.dtype.shape == (3,):
        return render_points(obj, path, **options)
    shape = _host(values).shape
    if len(shape) == 2 and shape[1] == 3 and "values" in options:
        return render_points(obj, path, **options)
    if len(shape) == 2:
        return render_slice(obj, path, **options)
    if len(shape) == 3:
        return render_slices(obj, path, **options)
    raise ValueError(f"render() does not know how to draw an array of shape {shape}")
