"""tack.interop.vtk: arrays shared with VTK in both directions, and datasets copied."""

import gc
import weakref

import numpy as np
import pytest

import tack

pytest.importorskip("vtkmodules", reason="VTK is not installed (uv sync --extra interop)")

from vtkmodules import vtkCommonCore as cc  # noqa: E402
from vtkmodules.util.numpy_support import numpy_to_vtk, vtk_to_numpy  # noqa: E402
from vtkmodules.vtkCommonDataModel import vtkImageData  # noqa: E402

from tack.interop.vtk import (  # noqa: E402
    Dataset,
    array_to_vtk,
    dataset_to_vtk,
    init_level_zero,
    vtk_to_array,
    vtk_to_dataset,
)

# VTK class, Tack dtype, bytes per value.  VTK's plain char is signed in
# VTK's numpy support and in Tack.
VTK_TYPES = [
    ("vtkCharArray", tack.i8),
    ("vtkSignedCharArray", tack.i8),
    ("vtkUnsignedCharArray", tack.u8),
    ("vtkShortArray", tack.i16),
    ("vtkUnsignedShortArray", tack.u16),
    ("vtkIntArray", tack.i32),
    ("vtkUnsignedIntArray", tack.u32),
    ("vtkLongArray", tack.i64 if cc.vtkLongArray().GetDataTypeSize() == 8 else tack.i32),
    ("vtkUnsignedLongArray", tack.u64 if cc.vtkUnsignedLongArray().GetDataTypeSize() == 8 else tack.u32),
    ("vtkLongLongArray", tack.i64),
    ("vtkUnsignedLongLongArray", tack.u64),
    ("vtkIdTypeArray", tack.i64 if cc.vtkIdTypeArray().GetDataTypeSize() == 8 else tack.i32),
    ("vtkFloatArray", tack.f32),
    ("vtkDoubleArray", tack.f64),
    ("vtkTypeInt8Array", tack.i8),
    ("vtkTypeUInt16Array", tack.u16),
    ("vtkTypeInt64Array", tack.i64),
    ("vtkTypeFloat32Array", tack.f32),
]


def vtk_array(cls_name, tuples, comps=1, values=None):
    a = getattr(cc, cls_name)()
    a.SetNumberOfComponents(comps)
    a.SetNumberOfTuples(tuples)
    values = np.arange(tuples * comps) % 100 if values is None else values
    for k, v in enumerate(np.asarray(values).ravel()):
        a.SetComponent(k // comps, k % comps, float(v))
    return a


def address(vtk_arr):
    return np.asarray(vtk_arr).__array_interface__["data"][0]


def churn():
    """Allocate and free enough that freed memory would be reused and overwritten."""
    gc.collect()
    junk = [np.full(4096, 0x5A, dtype=np.uint8) for _ in range(64)]
    junk += [tack.full(4096, 7, tack.u8) for _ in range(64)]
    del junk
    gc.collect()


# ---------------------------------------------------------------- VTK -> Tack

@pytest.mark.parametrize("cls_name, dtype", VTK_TYPES, ids=[t[0] for t in VTK_TYPES])
def test_every_numeric_type_shares(cls_name, dtype):
    a = vtk_array(cls_name, 5, 2)
    t = vtk_to_array(a)
    assert t.dtype is dtype
    assert t.shape == (5, 2)
    assert t.writable
    assert t.ptr == address(a)
    np.testing.assert_array_equal(t.numpy().astype(np.int64), np.arange(10).reshape(5, 2))
    # and back: the exported array has the same VTK scalar type
    back = array_to_vtk(t)
    assert back.GetDataTypeSize() == a.GetDataTypeSize()
    assert address(back) == t.ptr


def test_one_component_is_one_dimensional_and_flatten():
    a = vtk_array("vtkFloatArray", 6)
    assert vtk_to_array(a).shape == (6,)
    assert vtk_to_array(a, flatten=True).shape == (6,)
    b = vtk_array("vtkDoubleArray", 4, 3)
    assert vtk_to_array(b).shape == (4, 3)
    flat = vtk_to_array(b, flatten=True)
    assert flat.shape == (12,)
    np.testing.assert_array_equal(flat.numpy(), np.arange(12.0))  # VTK's interleaved order


def test_writes_cross_from_vtk_to_tack_and_back():
    a = vtk_array("vtkFloatArray", 4, 3)
    t = vtk_to_array(a)
    a.SetComponent(2, 1, -5.0)
    assert t.numpy()[2, 1] == -5.0
    tack.copyto(t, np.full((4, 3), 2.5, np.float32))
    assert a.GetComponent(3, 2) == 2.5
    t.fill(9.0)
    assert a.GetValue(0) == 9.0


def test_tack_view_outlives_the_vtk_handle():
    a = vtk_array("vtkDoubleArray", 1000)
    ref = weakref.ref(a)
    t = vtk_to_array(a)
    del a
    churn()
    assert ref() is not None, "the Tack view should keep the VTK array alive"
    np.testing.assert_array_equal(t.numpy(), np.arange(1000) % 100)
    t.fill(1.0)
    del t
    gc.collect()
    assert ref() is None, "the VTK array should be released with the last Tack view"


def test_vtk_array_inside_a_dataset_outlives_python_handles():
    image = vtkImageData(dimensions=(10, 10, 10))
    a = vtk_array("vtkFloatArray", 1000)
    image.GetPointData().SetScalars(a)
    t = vtk_to_array(a)
    del a
    churn()
    t.fill(4.0)
    np.testing.assert_array_equal(vtk_to_numpy(image.GetPointData().GetScalars()), np.full(1000, 4.0))


def test_copy_true_is_independent():
    a = vtk_array("vtkIntArray", 5)
    c = vtk_to_array(a, copy=True)
    assert c.ptr != address(a)
    a.SetValue(0, 77)
    assert c.numpy()[0] == 0


def test_bit_array_is_refused_unless_copied():
    bits = cc.vtkBitArray()
    bits.SetNumberOfTuples(10)
    for i in range(10):
        bits.SetValue(i, i % 3 == 0)
    with pytest.raises(ValueError, match="packs 8 values"):
        vtk_to_array(bits)
    c = vtk_to_array(bits, copy=True)
    assert c.dtype is tack.bool
    np.testing.assert_array_equal(c.numpy(), np.arange(10) % 3 == 0)


def test_non_numeric_and_non_vtk_inputs_are_refused():
    with pytest.raises(TypeError, match="holds no numbers"):
        vtk_to_array(cc.vtkStringArray())
    with pytest.raises(TypeError, match="expects a VTK data array"):
        vtk_to_array(np.zeros(3))
    with pytest.raises(TypeError, match="expects a VTK data array"):
        vtk_to_array(vtkImageData())


def test_implicit_array_needs_copy():
    affine = getattr(cc, "vtkAffineArray", None)
    if affine is None:
        pytest.skip("this VTK has no implicit arrays")
    try:
        a = affine["float64"]()
        a.ConstructBackend(2.0, 1.0)
        a.SetNumberOfTuples(4)
    except Exception as e:  # the template spelling differs between VTK versions
        pytest.skip(f"cannot build a vtkAffineArray here: {e}")
    with pytest.raises(ValueError, match="copy=True"):
        vtk_to_array(a)
    np.testing.assert_array_equal(vtk_to_array(a, copy=True).numpy(), [1.0, 3.0, 5.0, 7.0])


def test_empty_arrays():
    a = cc.vtkFloatArray()
    t = vtk_to_array(a)
    assert t.shape == (0,) and t.dtype is tack.f32
    e = array_to_vtk(tack.zeros(0))
    assert e.GetNumberOfTuples() == 0


# ---------------------------------------------------------------- Tack -> VTK

def test_array_to_vtk_shares_and_names():
    t = tack.array(np.arange(6, dtype=np.float32))
    v = array_to_vtk(t, name="speed")
    assert v.GetName() == "speed"
    assert v.GetNumberOfComponents() == 1 and v.GetNumberOfTuples() == 6
    assert v.GetDataType() == cc.VTK_FLOAT
    assert address(v) == t.ptr
    t.fill(3.0)
    assert v.GetValue(5) == 3.0
    v.SetValue(0, -1.0)
    assert t.numpy()[0] == -1.0


@pytest.mark.parametrize("dtype, comps", [(tack.vec2, 2), (tack.vec3, 3), (tack.vec4, 4), (tack.vec3d, 3),
                                          (tack.vec3i, 3), (tack.mat33, 9), (tack.mat22d, 4)])
def test_vector_dtypes_export_as_components(dtype, comps):
    t = tack.zeros(5, dtype)
    v = array_to_vtk(t)
    assert v.GetNumberOfComponents() == comps and v.GetNumberOfTuples() == 5
    assert address(v) == t.ptr


def test_two_dimensional_arrays_give_components():
    t = tack.array(np.arange(12, dtype=np.float64).reshape(4, 3))
    v = array_to_vtk(t)
    assert (v.GetNumberOfTuples(), v.GetNumberOfComponents()) == (4, 3)
    assert v.GetComponent(2, 1) == 7.0


def test_flat_array_with_n_components():
    t = tack.array(np.arange(12, dtype=np.float32))
    v = array_to_vtk(t, n_components=3)
    assert (v.GetNumberOfTuples(), v.GetNumberOfComponents()) == (4, 3)
    assert v.GetComponent(1, 0) == 3.0
    with pytest.raises(ValueError, match="not a multiple of 5"):
        array_to_vtk(t, n_components=5)
    with pytest.raises(ValueError, match="positive int"):
        array_to_vtk(t, n_components=0)
    with pytest.raises(ValueError, match="n_components"):
        array_to_vtk(tack.zeros((2, 3, 4)))
    assert array_to_vtk(tack.zeros((2, 3, 4)), n_components=4).GetNumberOfTuples() == 6


def test_vtk_array_outlives_the_tack_handle():
    t = tack.array(np.arange(2048, dtype=np.float32))
    ref = weakref.ref(t)
    v = array_to_vtk(t)
    del t
    churn()
    np.testing.assert_array_equal(vtk_to_numpy(v), np.arange(2048, dtype=np.float32))
    del v
    gc.collect()
    assert ref() is None, "the Tack storage should be released with the VTK array"


def test_exported_array_held_only_by_vtk_keeps_tack_storage():
    # The Python handles of both sides go; only a VTK dataset holds the array.
    t = tack.array(np.arange(1000, dtype=np.float64))
    ref = weakref.ref(t)
    image = vtkImageData(dimensions=(10, 10, 10))
    image.GetPointData().SetScalars(array_to_vtk(t, name="f"))
    del t
    churn()
    np.testing.assert_array_equal(vtk_to_numpy(image.GetPointData().GetArray("f")), np.arange(1000.0))
    # VTK's shallow copies share the buffer, and keep it too
    other = vtkImageData()
    other.ShallowCopy(image)
    del image
    churn()
    np.testing.assert_array_equal(vtk_to_numpy(other.GetPointData().GetArray("f")), np.arange(1000.0))
    del other
    gc.collect()
    assert ref() is None


def test_growing_an_exported_vtk_array_leaves_tack_storage_alone():
    t = tack.array(np.arange(4, dtype=np.float32))
    v = array_to_vtk(t)
    v.InsertNextValue(99.0)  # VTK moves to its own copy; it never frees Tack's memory
    assert v.GetNumberOfTuples() == 5
    np.testing.assert_array_equal(t.numpy(), np.arange(4, dtype=np.float32))


def test_round_trip_tack_vtk_tack_is_one_allocation():
    t = tack.array(np.arange(8, dtype=np.int32))
    again = vtk_to_array(array_to_vtk(t))
    assert again.ptr == t.ptr
    again.fill(5)
    np.testing.assert_array_equal(t.numpy(), np.full(8, 5, np.int32))


def test_array_to_vtk_refusals():
    with pytest.raises(TypeError, match="tack.Array"):
        array_to_vtk(np.zeros(3))
    with pytest.raises(TypeError, match="name must be a str"):
        array_to_vtk(tack.zeros(3), name=3)
    with pytest.raises(TypeError, match="copy=True"):
        array_to_vtk(tack.zeros(3, tack.bool))
    with pytest.raises(TypeError, match="copy=True"):
        array_to_vtk(tack.zeros(3, tack.f16))
    ro = tack.zeros(3)._readonly_view()
    with pytest.raises(ValueError, match="read-only"):
        array_to_vtk(ro)


def test_array_to_vtk_copies_when_asked():
    t = tack.array(np.array([True, False, True]))
    v = array_to_vtk(t, name="mask", copy=True)
    assert v.GetDataType() == cc.VTK_UNSIGNED_CHAR and v.GetName() == "mask"
    np.testing.assert_array_equal(vtk_to_numpy(v), [1, 0, 1])
    f = tack.array(np.arange(4, dtype=np.float32))
    c = array_to_vtk(f, copy=True)
    assert address(c) != f.ptr
    f.fill(0.0)
    assert c.GetValue(3) == 3.0
    ro = tack.zeros(3)._readonly_view()
    assert array_to_vtk(ro, copy=True).GetNumberOfTuples() == 3


# ---------------------------------------------------------------- datasets

def _assert_arrays_equal(a, b):
    assert set(a) == set(b)
    for k in a:
        if isinstance(a[k], tuple):
            assert a[k] == b[k]
        else:
            assert a[k].dtype is b[k].dtype, k
            np.testing.assert_array_equal(a[k].numpy(), b[k].numpy())


def _round_trip(vtk_ds):
    ds = vtk_to_dataset(vtk_ds)
    back = dataset_to_vtk(ds)
    assert back.GetClassName() == vtk_ds.GetClassName()
    assert back.GetNumberOfPoints() == vtk_ds.GetNumberOfPoints()
    assert back.GetNumberOfCells() == vtk_ds.GetNumberOfCells()
    again = vtk_to_dataset(back)
    _assert_arrays_equal(ds.point_data, again.point_data)
    _assert_arrays_equal(ds.cell_data, again.cell_data)
    _assert_arrays_equal(ds.field_data, again.field_data)
    assert ds.point_attributes == again.point_attributes
    assert ds.cell_attributes == again.cell_attributes
    for i in range(0, vtk_ds.GetNumberOfPoints(), max(1, vtk_ds.GetNumberOfPoints() // 17)):
        assert back.GetPoint(i) == vtk_ds.GetPoint(i)
    for c in range(vtk_ds.GetNumberOfCells()):
        assert back.GetCellType(c) == vtk_ds.GetCellType(c)
        ids_a, ids_b = cc.vtkIdList(), cc.vtkIdList()
        vtk_ds.GetCellPoints(c, ids_a)
        back.GetCellPoints(c, ids_b)
        assert [ids_a.GetId(k) for k in range(ids_a.GetNumberOfIds())] == \
               [ids_b.GetId(k) for k in range(ids_b.GetNumberOfIds())]
    return ds, back


def _add_fields(vtk_ds):
    n, m = vtk_ds.GetNumberOfPoints(), vtk_ds.GetNumberOfCells()
    s = numpy_to_vtk(np.linspace(0, 1, n).astype(np.float32), deep=1)
    s.SetName("temperature")
    vtk_ds.GetPointData().SetScalars(s)
    v = numpy_to_vtk(np.arange(3 * n, dtype=np.float64).reshape(n, 3), deep=1)
    v.SetName("velocity")
    vtk_ds.GetPointData().SetVectors(v)
    c = numpy_to_vtk(np.arange(m, dtype=np.int32), deep=1)
    c.SetName("cell_id")
    vtk_ds.GetCellData().AddArray(c)
    f = numpy_to_vtk(np.array([0.25]), deep=1)
    f.SetName("time")
    vtk_ds.GetFieldData().AddArray(f)
    label = cc.vtkStringArray()
    label.SetName("label")
    label.InsertNextValue("run 7")
    vtk_ds.GetFieldData().AddArray(label)


def test_image_data_round_trip():
    image = vtkImageData()
    image.SetExtent(2, 5, -1, 1, 0, 3)
    image.SetOrigin(1.0, 2.0, 3.0)
    image.SetSpacing(0.5, 0.25, 2.0)
    image.SetDirectionMatrix(0, -1, 0, 1, 0, 0, 0, 0, 1)
    _add_fields(image)
    ds, back = _round_trip(image)
    assert ds.kind == "image" and ds.dimensions == (4, 3, 4) and ds.number_of_points == 48
    assert ds.extent == (2, 5, -1, 1, 0, 3)
    assert back.GetExtent() == (2, 5, -1, 1, 0, 3)
    assert back.GetOrigin() == (1.0, 2.0, 3.0) and back.GetSpacing() == (0.5, 0.25, 2.0)
    m = back.GetDirectionMatrix()
    assert [m.GetElement(r, c) for r in range(3) for c in range(3)] == [0, -1, 0, 1, 0, 0, 0, 0, 1]
    assert ds.point_attributes == {"scalars": "temperature", "vectors": "velocity"}
    assert ds.point_data["velocity"].shape == (48, 3) and ds.point_data["velocity"].dtype is tack.f64
    assert ds.field_data["label"] == ("run 7",)
    assert back.GetPointData().GetScalars().GetName() == "temperature"


def test_dataset_arrays_are_copies():
    image = vtkImageData(dimensions=(3, 3, 1))
    _add_fields(image)
    ds = vtk_to_dataset(image)
    image.GetPointData().GetArray("temperature").SetValue(0, 42.0)
    assert ds.point_data["temperature"].numpy()[0] == 0.0


def test_rectilinear_grid_round_trip():
    from vtkmodules.vtkCommonDataModel import vtkRectilinearGrid

    g = vtkRectilinearGrid()
    g.SetDimensions(3, 4, 2)
    g.SetXCoordinates(numpy_to_vtk(np.array([0.0, 1.0, 3.0]), deep=1))
    g.SetYCoordinates(numpy_to_vtk(np.array([0.0, 0.5, 1.0, 4.0]), deep=1))
    g.SetZCoordinates(numpy_to_vtk(np.array([-1.0, 1.0]), deep=1))
    _add_fields(g)
    ds, back = _round_trip(g)
    assert ds.kind == "rectilinear"
    np.testing.assert_array_equal(ds.y_coordinates.numpy(), [0.0, 0.5, 1.0, 4.0])
    assert back.GetDimensions() == (3, 4, 2)


def test_structured_grid_round_trip():
    from vtkmodules.vtkCommonDataModel import vtkStructuredGrid

    g = vtkStructuredGrid()
    g.SetDimensions(3, 2, 2)
    pts = cc.vtkPoints()
    for k in range(2):
        for j in range(2):
            for i in range(3):
                pts.InsertNextPoint(i + 0.1 * j, j * j, k - 0.5 * i)
    g.SetPoints(pts)
    _add_fields(g)
    ds, back = _round_trip(g)
    assert ds.kind == "structured" and ds.points.shape == (12, 3) and ds.points.dtype is tack.f32
    assert back.GetExtent() == (0, 2, 0, 1, 0, 1)


def test_unstructured_grid_round_trip():
    from vtkmodules.vtkCommonDataModel import VTK_HEXAHEDRON, VTK_TETRA, VTK_TRIANGLE, vtkUnstructuredGrid

    g = vtkUnstructuredGrid()
    pts = cc.vtkPoints()
    pts.SetDataTypeToDouble()
    for p in [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1),
              (2, 0, 0)]:
        pts.InsertNextPoint(*p)
    g.SetPoints(pts)
    g.InsertNextCell(VTK_HEXAHEDRON, 8, list(range(8)))
    g.InsertNextCell(VTK_TETRA, 4, [1, 8, 2, 5])
    g.InsertNextCell(VTK_TRIANGLE, 3, [0, 1, 8])
    _add_fields(g)
    ds, back = _round_trip(g)
    assert ds.kind == "unstructured" and ds.points.dtype is tack.f64
    np.testing.assert_array_equal(ds.cells.offsets.numpy(), [0, 8, 12, 15])
    np.testing.assert_array_equal(ds.cell_types.numpy(), [VTK_HEXAHEDRON, VTK_TETRA, VTK_TRIANGLE])
    assert ds.cells.count == 3


def test_polydata_round_trip():
    from vtkmodules.vtkFiltersSources import vtkSphereSource

    src = vtkSphereSource(theta_resolution=12, phi_resolution=8)
    src.Update()
    poly = src.GetOutput()
    from vtkmodules.vtkCommonDataModel import vtkCellArray

    lines, verts = vtkCellArray(), vtkCellArray()
    lines.InsertNextCell(3, [0, 1, 2])
    verts.InsertNextCell(1, [5])
    poly.SetLines(lines)
    poly.SetVerts(verts)
    _add_fields(poly)
    ds, back = _round_trip(poly)
    assert ds.kind == "polydata"
    assert ds.polys.count == poly.GetNumberOfPolys() and ds.lines.count == 1 and ds.verts.count == 1
    assert ds.strips is None
    assert back.GetNumberOfPolys() == poly.GetNumberOfPolys()


def test_dataset_built_in_python():
    ds = Dataset(kind="image", extent=(0, 2, 0, 1, 0, 0), spacing=(1.0, 2.0, 1.0),
                 point_data={"f": tack.array(np.arange(6, dtype=np.float32))},
                 point_attributes={"scalars": "f"})
    image = dataset_to_vtk(ds)
    assert image.GetDimensions() == (3, 2, 1)
    np.testing.assert_array_equal(vtk_to_numpy(image.GetPointData().GetScalars()), np.arange(6))


def test_dataset_errors():
    with pytest.raises(TypeError, match="vtkImageData"):
        vtk_to_dataset(cc.vtkFloatArray())
    from vtkmodules.vtkCommonDataModel import vtkMultiBlockDataSet

    with pytest.raises(TypeError, match="blocks"):
        vtk_to_dataset(vtkMultiBlockDataSet())
    with pytest.raises(TypeError, match="Dataset"):
        dataset_to_vtk(vtkImageData())
    with pytest.raises(ValueError, match="unknown dataset kind"):
        dataset_to_vtk(Dataset(kind="mesh"))
    with pytest.raises(ValueError, match="extent"):
        dataset_to_vtk(Dataset(kind="image"))
    with pytest.raises(ValueError, match="coordinates"):
        dataset_to_vtk(Dataset(kind="rectilinear", extent=(0, 1, 0, 0, 0, 0)))
    with pytest.raises(ValueError, match="cell_types"):
        dataset_to_vtk(Dataset(kind="unstructured", points=tack.zeros((3, 3)),
                               cells=dataset_cells([0, 3], [0, 1, 2])))


def dataset_cells(offsets, conn):
    from tack.interop.vtk import Cells

    return Cells(tack.array(np.array(offsets, np.int64)), tack.array(np.array(conn, np.int64)))


# ---------------------------------------------------------------- Level Zero

def test_init_level_zero_says_when_there_is_none():
    if any(str(d).startswith("level_zero") for d in tack.devices()):
        pytest.skip("this machine has Level Zero")
    with pytest.raises(RuntimeError, match="no Level Zero device"):
        init_level_zero()


def _fake_level_zero(monkeypatch, adopt, vtk_hooks):
    # a stand-in _core with one Level Zero device, and a VTK dlpack_support with the given hooks
    import types

    import tack.interop.vtk as tv

    calls = []
    core = types.SimpleNamespace(
        devices=lambda: ["cpu", "level_zero:0", "level_zero:1"],
        level_zero_handles=lambda name: (1, 2, 30 + int(name[-1])),
        level_zero_adopt=lambda *h: (calls.append(("adopt", h)), adopt(*h)),
    )
    monkeypatch.setattr(tv, "_core", core)
    monkeypatch.setattr(tv, "_vtk_dlpack", lambda: types.SimpleNamespace(**vtk_hooks))
    return calls


def test_init_level_zero_adopts_vtks_context(monkeypatch):
    calls = _fake_level_zero(monkeypatch, lambda *h: None, {"get_level_zero_context": lambda: (1, 5, 31)})
    assert init_level_zero() == "level_zero:1"
    assert calls == [("adopt", (1, 5, 31))]


def test_init_level_zero_publishes_tacks_context(monkeypatch):
    published = []
    hooks = {"set_level_zero_context": lambda *h: published.append(h)}
    calls = _fake_level_zero(monkeypatch, lambda *h: None, hooks)
    assert init_level_zero() == "level_zero:0"
    assert calls == [] and published == [(1, 2, 30)]


def test_init_level_zero_says_when_it_is_too_late(monkeypatch):
    msg = ("tack_level_zero_adopt: Tack has already allocated on level_zero:0 in its own context; call "
           "tack.interop.vtk.init_level_zero() before creating any Level Zero array")

    def late(*h):
        raise ValueError(msg)

    _fake_level_zero(monkeypatch, late, {"get_level_zero_context": lambda: (1, 5, 30)})
    with pytest.raises(RuntimeError, match="called too late: tack_level_zero_adopt: Tack has already"):
        init_level_zero()


def test_init_level_zero_says_when_vtk_has_no_hook(monkeypatch):
    _fake_level_zero(monkeypatch, lambda *h: None, {})
    with pytest.raises(RuntimeError, match="this VTK build has neither hook"):
        init_level_zero()


def test_unstructured_grid_with_a_polyhedron_round_trip():
    from vtkmodules.vtkCommonDataModel import VTK_POLYHEDRON, VTK_TETRA, vtkUnstructuredGrid

    g = vtkUnstructuredGrid()
    pts = cc.vtkPoints()
    for p in [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 1)]:
        pts.InsertNextPoint(*p)
    g.SetPoints(pts)
    g.InsertNextCell(VTK_TETRA, 4, [0, 1, 2, 3])
    stream = cc.vtkIdList()  # faces, then each face's point count and ids
    for i in [4, 3, 1, 2, 4, 3, 1, 2, 3, 3, 1, 3, 4, 3, 2, 3, 4]:
        stream.InsertNextId(i)
    g.InsertNextCell(VTK_POLYHEDRON, stream)
    ds, back = _round_trip(g)
    assert ds.faces is not None and ds.faces.count == 4
    assert back.GetCellType(1) == VTK_POLYHEDRON and back.GetCell(1).GetNumberOfFaces() == 4


def test_dataset_refuses_a_field_whose_shape_does_not_fit_the_extent():
    field_2d = tack.array(np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match=r"point_data\['v'\] has shape \(3, 4\).*extent \(0, 4, 0, 2, 0, 0\)"
                                         r".*needs 15 point values.*\(3, 5\)"):
        Dataset("image", extent=(0, 4, 0, 2, 0, 0), point_data={"v": field_2d})
    with pytest.raises(ValueError, match=r"cell_data\['c'\] has shape \(12,\).*needs 6 cell values"):
        Dataset("image", extent=(0, 3, 0, 2, 0, 0), cell_data={"c": tack.array(np.zeros(12))})
    with pytest.raises(ValueError, match=r"point_data\['p'\] has shape \(11, 3\)"):
        Dataset("structured", extent=(0, 3, 0, 2, 0, 0), point_data={"p": tack.array(np.zeros((11, 3)))})
    ds = Dataset("image", extent=(0, 3, 0, 2, 0, 0), point_data={"v": field_2d})  # fits
    ds.point_data["w"] = tack.array(np.zeros(5))  # changed later: refused when written out
    with pytest.raises(ValueError, match=r"point_data\['w'\] has shape \(5,\)"):
        dataset_to_vtk(ds)


def test_a_grid_shaped_field_is_one_value_per_point_in_x_fastest_order():
    values = np.arange(12, dtype=np.float32).reshape(3, 4)  # (y, x) of a 4 x 3 image
    ds = Dataset("image", extent=(0, 3, 0, 2, 0, 0), point_data={"v": tack.array(values)},
                 cell_data={"c": tack.array(np.arange(6.0).reshape(2, 3)), "t": tack.array(np.zeros((6, 2)))})
    img = dataset_to_vtk(ds)
    v = img.GetPointData().GetArray("v")
    assert (v.GetNumberOfTuples(), v.GetNumberOfComponents()) == (12, 1)
    assert v.GetValue(img.ComputePointId([3, 1, 0])) == values[1, 3]
    c = img.GetCellData().GetArray("c")
    assert (c.GetNumberOfTuples(), c.GetNumberOfComponents()) == (6, 1)
    t = img.GetCellData().GetArray("t")
    assert (t.GetNumberOfTuples(), t.GetNumberOfComponents()) == (6, 2)  # (n, k): k components


def test_a_strided_view_is_refused_unless_copied():
    # a transpose was "shared" as a gathered copy: later writes on either side went unseen;
    # a column raised NumPy's "ndarray is not C-contiguous"
    m = tack.array(np.arange(12, dtype=np.float32).reshape(4, 3))
    for view in (m.T, m[:, 1], m[::2], m[:, ::-1]):
        with pytest.raises(ValueError, match="strided view .* pass copy=True"):
            array_to_vtk(view)
        c = array_to_vtk(view, copy=True)
        expect = view.numpy()
        np.testing.assert_array_equal(vtk_to_numpy(c), expect if expect.ndim == 2 else expect)


def test_complex_arrays_copy_as_real_and_imaginary_components():
    # copy=True cast complex to float, dropping the imaginary part, and the refusal offered "uint8"
    z = tack.array(np.array([1 + 2j, 3 - 4j], np.complex64))
    with pytest.raises(TypeError, match=r"copy=True to copy it as two float32 components per value"):
        array_to_vtk(z)
    c = array_to_vtk(z, copy=True)
    assert c.GetNumberOfTuples() == 2 and c.GetNumberOfComponents() == 2
    np.testing.assert_array_equal(vtk_to_numpy(c), [[1, 2], [3, -4]])
    assert vtk_to_numpy(array_to_vtk(tack.array(np.array([0.5j])), copy=True)).dtype == np.float64
