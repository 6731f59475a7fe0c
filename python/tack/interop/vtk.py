"""Tack arrays and VTK data arrays: shared storage in both directions.

VTK keeps a data array's values in one block of memory: tuples one after
another, the components of each tuple interleaved (VTK calls this layout
"array of structures").  That is exactly a C-contiguous array of shape
(tuples, components), so the two libraries can look at one allocation:

* ``vtk_to_array(vtk_array)`` gives a Tack array over the VTK array's
  memory.  One-component arrays are 1-D, the others (tuples, components);
  ``flatten=True`` gives the tuples * components values as one axis.  The
  Tack array holds a reference to the VTK array, so the memory lives as long
  as either side uses it.
* ``array_to_vtk(array)`` gives a VTK array over the Tack array's memory.
  The VTK side keeps the Tack storage alive through an observer attached to
  the VTK array's buffer object (``vtkBuffer``), which VTK releases when the
  last array sharing that buffer is gone -- whether or not a Python handle to
  the VTK array still exists.

How the memory travels: on CPU through Python's buffer protocol, which
every VTK wheel supports (the PyPI wheel included), and through DLPack for
arrays on a GPU, where the VTK build offers ``vtkmodules.util.dlpack_support``.
Both share; neither copies.  Data that cannot be shared -- a GPU array with a
VTK that has no DLPack module, a VTK array computed on the fly (implicit
arrays), a packed ``vtkBitArray`` -- is copied when the call says
``copy=True`` and refused with an explanation otherwise.

Two rules follow from sharing one allocation:

* VTK reallocates an array in place when it grows (``SetNumberOfTuples``,
  ``InsertNextValue`` ...) and frees the old block, even while a view of it
  exists.  Do not resize a VTK array while a Tack array made by
  ``vtk_to_array`` is in use.  (The other direction is safe: VTK never frees
  memory it did not allocate, so a VTK array made by ``array_to_vtk`` that
  grows simply moves to a private copy.)
* VTK pipelines cache results by modification time.  After a kernel writes
  to an array VTK also holds, call ``vtk_array.Modified()`` so that filters
  and renderers see the new values.

``struct_to_vtk(array)`` maps a ``@tack.struct`` array's numeric fields to
VTK data arrays named by field (``"mass"``, ``"vel"``, ``"shape.radius"``),
for a dataset's point data.  A field of records is strided (one record's
size between values) while a VTK array is contiguous, so these are copies.

``vtk_to_dataset`` and ``dataset_to_vtk`` copy whole datasets (image data,
rectilinear, structured and unstructured grids, polydata) to a
:class:`Dataset` of Tack arrays and back.

``mesh_arrays(polydata)`` gives a triangle polydata's points and triangles
as Tack arrays sharing VTK's memory, for ``tack.Mesh.from_vtk``.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from .. import _core

try:
    from vtkmodules import vtkCommonCore as _cc
    from vtkmodules import vtkCommonDataModel as _dm
    from vtkmodules.util import numpy_support as _nps
except ImportError as _e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "tack.interop.vtk needs VTK 9.7.1 or later in this Python environment: "
        "`uv sync --extra interop` (or `pip install 'vtk>=9.7.1'`)"
    ) from _e

MIN_VTK_VERSION = (9, 7, 1)
VTK_VERSION = (
    _cc.vtkVersion.GetVTKMajorVersion(),
    _cc.vtkVersion.GetVTKMinorVersion(),
    _cc.vtkVersion.GetVTKBuildVersion(),
)
if VTK_VERSION < MIN_VTK_VERSION:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"tack.interop.vtk needs VTK {'.'.join(map(str, MIN_VTK_VERSION))} or later (for VTK's "
        f"pythonic API); this Python has VTK {_cc.vtkVersion.GetVTKVersion()}. "
        "`uv sync --extra interop` installs a suitable wheel."
    )

__all__ = [
    "vtk_to_array",
    "array_to_vtk",
    "vtk_to_dataset",
    "dataset_to_vtk",
    "Dataset",
    "Cells",
    "init_level_zero",
    "has_dlpack_support",
    "mesh_arrays",
    "struct_to_vtk",
    "VTK_VERSION",
]


# ------------------------------------------------------------------ dtypes

def _tack_dtype_for_vtk(vtk_array):
    """The Tack dtype holding one value of ``vtk_array``, or None."""
    t = vtk_array.GetDataType()
    size = vtk_array.GetDataTypeSize()
    signed = {
        _cc.VTK_CHAR: True, _cc.VTK_SIGNED_CHAR: True, _cc.VTK_SHORT: True, _cc.VTK_INT: True,
        _cc.VTK_LONG: True, _cc.VTK_LONG_LONG: True, _cc.VTK_ID_TYPE: True,
        _cc.VTK_UNSIGNED_CHAR: False, _cc.VTK_UNSIGNED_SHORT: False, _cc.VTK_UNSIGNED_INT: False,
        _cc.VTK_UNSIGNED_LONG: False, _cc.VTK_UNSIGNED_LONG_LONG: False,
    }
    if t == _cc.VTK_FLOAT:
        return _core.f32
    if t == _cc.VTK_DOUBLE:
        return _core.f64
    if t in signed:
        # VTK_CHAR is C's plain char.  VTK (and its NumPy support) treat it as
        # signed on every platform; so does Tack.
        name = ("i" if signed[t] else "u") + str(8 * size)
        return getattr(_core, name, None)
    return None


# Tack scalar dtype -> VTK type for exported arrays.  64-bit integers become
# VTK's "long long" arrays (vtkTypeInt64Array), the same width everywhere.
_VTK_TYPE_FOR_TACK = {
    "i8": _cc.VTK_SIGNED_CHAR, "u8": _cc.VTK_UNSIGNED_CHAR,
    "i16": _cc.VTK_SHORT, "u16": _cc.VTK_UNSIGNED_SHORT,
    "i32": _cc.VTK_INT, "u32": _cc.VTK_UNSIGNED_INT,
    "i64": _cc.VTK_LONG_LONG, "u64": _cc.VTK_UNSIGNED_LONG_LONG,
    "f32": _cc.VTK_FLOAT, "f64": _cc.VTK_DOUBLE,
}

# dtypes VTK has no array type for, and what copy=True converts them to.
_COPY_AS = {"bool": np.uint8, "f16": np.float32, "bf16": np.float32}

# Buffer-protocol format characters for a Tack scalar dtype.
_FORMAT = {
    "i8": "b", "u8": "B", "i16": "h", "u16": "H", "i32": "i", "u32": "I",
    "i64": "q", "u64": "Q", "f32": "f", "f64": "d",
}


def has_dlpack_support() -> bool:
    """Whether this VTK build offers ``vtkmodules.util.dlpack_support``,
    the module VTK uses to exchange device (GPU) arrays through DLPack."""
    return _vtk_dlpack() is not None


def _vtk_dlpack():
    try:
        from vtkmodules.util import dlpack_support
    except ImportError:
        return None
    return dlpack_support


def _describe(obj):
    cls = getattr(obj, "GetClassName", None)
    return cls() if callable(cls) else type(obj).__name__


# ------------------------------------------------------- VTK -> Tack array

def vtk_to_array(vtk_array, flatten: bool = False, *, copy: bool = False) -> _core.Array:
    """A Tack array sharing ``vtk_array``'s memory.

    One-component arrays give a 1-D array of tuples; arrays of k components
    give shape (tuples, k), and ``flatten=True`` gives one axis of tuples * k
    values in VTK's interleaved order.  The dtype follows the VTK type (float
    -> f32, double -> f64, int -> i32, vtkIdType -> i64, char -> i8 ...).

    The Tack array holds a reference to ``vtk_array`` while it uses the
    memory, so deleting the VTK handle is safe.  Resizing the VTK array is
    not: VTK frees the old block when it grows.

    ``copy=True`` gives an independent Tack array instead, and is the way to
    read arrays that have no shareable memory (VTK's implicit arrays, which
    compute their values, and vtkBitArray, which packs 8 values per byte and
    is copied to a bool array).  Without it, such arrays raise ValueError.
    """
    if not isinstance(vtk_array, _cc.vtkAbstractArray):
        raise TypeError(
            f"vtk_to_array() expects a VTK data array (vtkFloatArray, vtkIntArray, ...), "
            f"not {type(vtk_array).__module__}.{type(vtk_array).__name__}"
        )
    if not isinstance(vtk_array, _cc.vtkDataArray):
        raise TypeError(
            f"a {_describe(vtk_array)} holds no numbers; only numeric VTK arrays (vtkDataArray "
            "subclasses) convert to Tack arrays"
        )
    tuples = vtk_array.GetNumberOfTuples()
    comps = vtk_array.GetNumberOfComponents()
    shape = (tuples * comps,) if (flatten or comps == 1) else (tuples, comps)

    if vtk_array.GetDataType() == _cc.VTK_BIT:
        if not copy:
            raise ValueError(
                "a vtkBitArray packs 8 values into each byte, which no Tack dtype describes, so it "
                "cannot be shared; pass copy=True for a bool copy, or convert it to a "
                "vtkUnsignedCharArray in VTK"
            )
        values = np.array([vtk_array.GetValue(i) for i in range(tuples * comps)], dtype=bool)
        return _core_array(values.reshape(shape))

    dt = _tack_dtype_for_vtk(vtk_array)
    if dt is None:
        raise TypeError(
            f"a {_describe(vtk_array)} of VTK type '{vtk_array.GetDataTypeAsString()}' has no Tack "
            "dtype; Tack takes VTK's integer, float and double arrays"
        )
    if copy:
        values = np.array(_nps.vtk_to_numpy(vtk_array), copy=True)
        return _core_array(values.reshape(shape).astype(dt.numpy, copy=False), dt)

    dl = _device_dlpack_producer(vtk_array)
    if dl is not None:
        return _from_device_dlpack(vtk_array, shape)

    try:
        view = memoryview(vtk_array)
    except (TypeError, ValueError, BufferError):
        raise ValueError(
            f"this {_describe(vtk_array)} has no contiguous memory to share (VTK's implicit and "
            "structure-of-arrays arrays compute or split their values); pass copy=True for a copy"
        ) from None
    nbytes = tuples * comps * dt.itemsize
    if view.nbytes != nbytes or not view.c_contiguous:
        raise ValueError(
            f"this {_describe(vtk_array)} does not keep its {tuples} x {comps} values in one "
            "interleaved block, so it cannot be shared; pass copy=True for a copy"
        )
    if not nbytes:
        return _core.empty(shape, dt, "cpu")  # nothing to share
    # The cast reinterprets the bytes with the exact Tack dtype (VTK reports
    # plain char as 'c', which has no numeric meaning) and the wanted shape.
    # The memoryview chain keeps vtk_array alive; wrap_buffer keeps the chain.
    typed = view.cast("B").cast(_FORMAT[dt.name], shape)
    return _core.wrap_buffer(typed, dtype=dt, writable=not view.readonly)


def _core_array(values, dt=None):
    from .. import _array

    return _array.array(values, dt)


def _device_dlpack_producer(vtk_array):
    """The VTK array itself when it is a DLPack producer on a non-CPU device."""
    dev = getattr(vtk_array, "__dlpack_device__", None)
    if dev is None:
        return None
    try:
        kind, _ = dev()
    except Exception:
        return None
    return vtk_array if int(kind) != 1 else None  # 1 is kDLCPU


def _from_device_dlpack(vtk_array, shape):
    import tack

    from_dlpack = getattr(tack, "from_dlpack", None)
    if from_dlpack is None:
        raise RuntimeError(
            f"this {_describe(vtk_array)} lives on a GPU and this build of Tack has no DLPack import "
            "(tack.from_dlpack) to share it; pass copy=True to copy it through the host"
        )
    arr = from_dlpack(vtk_array)
    if arr.shape != shape:
        raise ValueError(
            f"VTK exported its device array with shape {arr.shape}, not {shape}; use "
            "flatten= to match it"
        )
    return arr


# ------------------------------------------------------- Tack array -> VTK

class _Retain:
    """A VTK observer whose only job is to hold a Python reference.

    Attached to a vtkBuffer's DeleteEvent, it lives exactly as long as that
    buffer: VTK owns its observers and drops them when the object is
    destroyed, whatever happened to the Python wrappers in between.
    """

    __slots__ = ("ref",)

    def __init__(self, ref):
        self.ref = ref

    def __call__(self, obj, event):
        self.ref = None


class _TackMemory:
    """A NumPy-readable description of a CPU Tack array's memory that keeps
    the Tack array alive (NumPy holds this object as the view's base)."""

    def __init__(self, array, np_dtype, count):
        self.array = array
        self.__array_interface__ = {
            "version": 3,
            "shape": (count,),
            "typestr": np.dtype(np_dtype).str,
            "data": (array.ptr, not array.writable),
        }


def _host_view(array, np_dtype, count):
    """A flat NumPy view of a CPU Tack array's storage, keeping it alive.

    Prefer the array's DLPack export (which also puts the array in the
    "shared" mode that makes kernel launches on it synchronous); fall back to
    describing the address, which is safe on CPU.
    """
    if hasattr(type(array), "__dlpack__"):
        try:
            v = np.from_dlpack(array)
        except Exception:  # e.g. a dtype DLPack cannot describe
            v = None
        if v is not None and v.nbytes == array.nbytes and v.__array_interface__["data"][0] == array.ptr:
            return v.reshape(-1).view(np_dtype)
    return np.asarray(_TackMemory(array, np_dtype, count))


def _components(array, n_components):
    dt = array.dtype
    per = math.prod(dt.shape) if dt.shape else 1
    total = array.size * per
    if n_components is not None:
        if isinstance(n_components, bool) or not isinstance(n_components, int) or n_components < 1:
            raise ValueError(f"n_components must be a positive int, not {n_components!r}")
        if total % n_components:
            raise ValueError(
                f"an array of {total} values cannot be split into tuples of n_components="
                f"{n_components} ({total} is not a multiple of {n_components})"
            )
        return n_components, total
    if per > 1:
        return per, total
    if array.ndim <= 1:
        return 1, total
    if array.ndim == 2:
        if array.shape[1] == 0:
            raise ValueError(f"an array of shape {array.shape} has no components")
        return array.shape[1], total
    raise ValueError(
        f"which axis of a {array.ndim}-D array of shape {array.shape} holds the components? "
        "pass n_components (n_components=1 makes every value a tuple of its own)"
    )


def array_to_vtk(array, name: str | None = None, n_components: int | None = None, *,
                 copy: bool = False):
    """A VTK data array sharing ``array``'s memory.

    Components: an array of vecN (or matrix) elements gives N (rows*cols)
    components; a 2-D array gives its second axis as components; a 1-D array
    one component.  ``n_components=k`` splits the values, in C order, into
    tuples of k instead (a flat interleaved x, y, z array with k=3).

    The VTK array keeps the Tack array's storage alive as long as VTK uses
    it, including after the VTK handle is dropped while a dataset still holds
    the array.  A write through either side is seen by the other; call
    ``Modified()`` on the VTK array after writing through Tack.

    ``copy=True`` gives an independent VTK array.  It is required for arrays
    that cannot be shared: arrays on a GPU when VTK has no DLPack module
    (``has_dlpack_support()``), read-only arrays (VTK arrays are always
    writable), and bool, f16 or bf16 arrays (VTK has no such type; they are
    copied as unsigned char and float; bf16 through ml_dtypes, NumPy's bfloat16).
    """
    if not isinstance(array, _core.Array):
        raise TypeError(
            f"array_to_vtk() expects a tack.Array, not {type(array).__module__}.{type(array).__name__}"
            + ("; for a NumPy array use tack.array(...) first, or "
               "vtkmodules.util.numpy_support.numpy_to_vtk" if isinstance(array, np.ndarray) else "")
        )
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str, not {type(name).__name__}")
    comps, total = _components(array, n_components)
    scalar = array.dtype.scalar
    kind = scalar.name
    on_host = array.device == "cpu"

    def finish(out):
        if name is not None:
            out.SetName(name)
        return out

    if copy:
        host = array.numpy().reshape(-1)
        if kind in _COPY_AS:
            host = host.astype(_COPY_AS[kind])
        elif host.dtype.kind == "c":
            # VTK has no complex type: each value is two components, its real
            # and imaginary parts (as struct_to_vtk copies a complex field);
            # a cast would drop the imaginary part.
            host = host.view(host.real.dtype)
            comps *= 2
        return finish(_nps.numpy_to_vtk(host.reshape(-1, comps) if comps > 1 else host, deep=1))

    if kind not in _VTK_TYPE_FOR_TACK:
        as_what = (f"{np.dtype(_COPY_AS[kind]).name}" if kind in _COPY_AS else
                   f"two {np.dtype(scalar.numpy).type(0).real.dtype.name} components per value (real, imaginary)"
                   if np.dtype(scalar.numpy).kind == "c" else None)
        raise TypeError(
            f"VTK has no array type for {kind} values, so a {array.dtype.name} array cannot be shared"
            + (f"; pass copy=True to copy it as {as_what}" if as_what else "")
        )
    if not array.writable:
        raise ValueError(
            "a read-only Tack array cannot be shared with VTK, whose arrays are always writable; "
            "pass copy=True for a VTK copy"
        )
    if array.strided:
        # A VTK array is one contiguous block of tuples: a strided view has no
        # such block, and sharing a gathered copy would let writes on either
        # side go unseen by the other.
        raise ValueError(
            f"a strided view (shape {array.shape}: a step, a column or a transpose) has no contiguous "
            "block a VTK array can share; pass copy=True for a VTK copy of its values"
        )
    if not on_host:
        return finish(_device_to_vtk(array, comps))

    np_dtype = np.dtype(scalar.numpy)
    out = _cc.vtkDataArray.CreateDataArray(_VTK_TYPE_FOR_TACK[kind])
    out.SetNumberOfComponents(comps)
    if total == 0:
        return finish(out)
    flat = _host_view(array, np_dtype, total)
    # save=1: VTK must never free (or realloc) memory it did not allocate.
    out.SetVoidArray(flat, total, 1)
    out.GetBuffer().AddObserver(_cc.vtkCommand.DeleteEvent, _Retain(flat))
    return finish(out)


def struct_to_vtk(array, fields=None) -> list:
    """VTK data arrays of a ``@tack.struct`` array's numeric fields, one per
    field, named by its path (``"pos"``, ``"shape.radius"``), in field order;
    ``fields`` (names or dotted paths) picks some.

    A field's tuples are its values: a vector's components, a matrix's
    elements row by row, an array field's elements, a complex number's real
    and imaginary parts (VTK has no complex type), a bool as an unsigned char.
    Each array is a copy: VTK's arrays are contiguous, and a field of records
    is not (``tack.interop.vtk``'s docstring).  For a point cloud, put the
    position field's array in ``vtkPoints`` and the others in the point data
    (docs/examples/particles.py).
    """
    from .. import _structs

    if not isinstance(array, _structs.StructArray) and not (
            isinstance(array, np.ndarray) and array.dtype in _structs._STRUCT_DTYPES):
        raise TypeError(f"struct_to_vtk() expects an array of a @tack.struct (a tack.StructArray or a NumPy "
                        f"record array of one), not {type(array).__name__}")
    rec = np.asarray(array)
    lay = _structs._STRUCT_DTYPES[rec.dtype].__tack_struct__
    leaves = lay.leaves
    if fields is not None:
        names = {lf.name for lf in leaves}
        for f in fields:
            if f not in names:
                raise ValueError(f"struct {lay.name} has no numeric field '{f}' (its fields: "
                                 f"{', '.join(sorted(names))})")
        leaves = [lf for lf in leaves if lf.name in set(fields)]
    out = []
    n = rec.size
    for lf in leaves:
        values = np.ascontiguousarray(_structs._leaf_view(rec.reshape(-1), lf)).reshape(n, -1)
        if values.dtype == np.bool_:
            values = values.astype(np.uint8)
        elif values.dtype == np.float16:
            values = values.astype(np.float32)
        vtk_array = _nps.numpy_to_vtk(values if values.shape[1] > 1 else values[:, 0], deep=1)
        vtk_array.SetName(lf.name)
        out.append(vtk_array)
    return out


def _device_to_vtk(array, comps):
    mod = _vtk_dlpack()
    if mod is None:
        raise ValueError(
            f"a Tack array on '{array.device}' cannot be shared with this VTK build, which has no "
            "vtkmodules.util.dlpack_support (the PyPI wheel does not); pass copy=True to copy it "
            "to a host VTK array, or use a VTK build with DLPack support"
        )
    to_vtk = getattr(mod, "from_dlpack", None)
    if to_vtk is None:
        raise RuntimeError(
            "this VTK build's vtkmodules.util.dlpack_support has no from_dlpack(); "
            "pass copy=True to copy the array to the host"
        )
    out = to_vtk(array)
    if out.GetNumberOfComponents() != comps:
        out.SetNumberOfComponents(comps)
    return out


# ------------------------------------------------------------- datasets

@dataclasses.dataclass
class Cells:
    """Cells in VTK's compact form: cell i uses the point ids
    ``connectivity[offsets[i]:offsets[i + 1]]``.  Both are i64 arrays;
    ``offsets`` has one entry more than there are cells."""

    offsets: _core.Array
    connectivity: _core.Array

    @property
    def count(self) -> int:
        return max(self.offsets.shape[0] - 1, 0)


@dataclasses.dataclass
class Dataset:
    """A VTK dataset's structure and arrays, held as Tack arrays (copies).

    ``kind`` is one of "image", "rectilinear", "structured", "unstructured",
    "polydata"; ``vtk_class`` is the VTK class it came from (so
    vtkStructuredPoints comes back as itself).  Which other fields are set
    depends on the kind:

    * image: ``extent``, ``origin``, ``spacing``, ``direction`` (9 values,
      row-major) -- the points are implicit.
    * rectilinear: ``extent`` and ``x_coordinates`` ... ``z_coordinates``.
    * structured: ``extent`` and ``points``.
    * unstructured: ``points``, ``cells`` and ``cell_types`` (u8 VTK cell
      type ids); ``faces`` and ``face_locations`` for polyhedral cells.
    * polydata: ``points`` and ``verts``, ``lines``, ``polys``, ``strips``.

    ``points`` is an (n, 3) array of the VTK points' type (f32 or f64).
    ``point_data``, ``cell_data`` and ``field_data`` map array names to Tack
    arrays shaped as ``vtk_to_array`` shapes them (string arrays in field
    data become tuples of str); unnamed VTK arrays get the names "array0",
    "array1" ....  ``point_attributes`` / ``cell_attributes`` record which
    arrays are the active scalars, vectors, normals, tcoords, tensors.
    """

    kind: str
    vtk_class: str = ""
    extent: tuple | None = None
    origin: tuple | None = None
    spacing: tuple | None = None
    direction: tuple | None = None
    x_coordinates: _core.Array | None = None
    y_coordinates: _core.Array | None = None
    z_coordinates: _core.Array | None = None
    points: _core.Array | None = None
    cells: Cells | None = None
    cell_types: _core.Array | None = None
    faces: Cells | None = None
    face_locations: Cells | None = None
    verts: Cells | None = None
    lines: Cells | None = None
    polys: Cells | None = None
    strips: Cells | None = None
    point_data: dict = dataclasses.field(default_factory=dict)
    cell_data: dict = dataclasses.field(default_factory=dict)
    field_data: dict = dataclasses.field(default_factory=dict)
    point_attributes: dict = dataclasses.field(default_factory=dict)
    cell_attributes: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        _check_field_shapes(self)

    @property
    def dimensions(self) -> tuple | None:
        """Points along x, y, z for the structured kinds (from ``extent``)."""
        if self.extent is None:
            return None
        e = self.extent
        return (e[1] - e[0] + 1, e[3] - e[2] + 1, e[5] - e[4] + 1)

    @property
    def number_of_points(self) -> int:
        if self.kind == "image" or (self.kind == "rectilinear" and self.extent is not None):
            return math.prod(self.dimensions)
        return 0 if self.points is None else self.points.shape[0]


def _grid_counts(ds):
    """(points, cells, grid shape of the points, of the cells) of a dataset
    with an extent; None without one.  The grid shapes are C order, z
    slowest and x fastest (VTK's order), with axes of one point dropped."""
    if ds.kind not in ("image", "rectilinear", "structured") or ds.extent is None or len(ds.extent) != 6:
        return None
    dims = ds.dimensions
    if any(d < 0 for d in dims):
        return None
    cdims = tuple(max(d - 1, 1) for d in dims)
    pgrid = tuple(d for d in reversed(dims) if d != 1)
    cgrid = tuple(c for c, d in zip(reversed(cdims), reversed(dims)) if d != 1)
    return math.prod(dims), math.prod(cdims), pgrid, cgrid


def _tuples(values, n, grid):
    """How many VTK tuples `values` gives for a grid of `n` points (or
    cells) of shape `grid`: None when its shape fits neither (n,), (n, k)
    nor the grid's own shape."""
    shape = tuple(values.shape)
    if shape and shape[0] == n and len(shape) <= 2:
        return n  # n values, or n tuples of k components (a vecN dtype is one tuple each)
    if shape == grid or (shape == (n,) and not grid):
        return n  # one value per point, laid out as the grid (x fastest)
    return None


def _check_field_shapes(ds):
    """Refuse point or cell data whose shape does not fit the extent: VTK
    would read a (ny, nx) field of an nx x ny image as ny tuples of nx
    components, silently.  Accepted: (n,), (n, k) for k components, or the
    grid's own shape in C order (z, y, x: x fastest), axes of one point
    dropped."""
    counts = _grid_counts(ds)
    if counts is None:
        return
    npts, ncells, pgrid, cgrid = counts
    for what, data, n, grid in (("point_data", ds.point_data, npts, pgrid), ("cell_data", ds.cell_data, ncells, cgrid)):
        for name, values in (data or {}).items():
            if isinstance(values, tuple) or not hasattr(values, "shape"):
                continue  # strings, or something _arrays_to converts and VTK checks
            if _tuples(values, n, grid) is None:
                noun = "point" if what == "point_data" else "cell"
                raise ValueError(
                    f"{what}[{name!r}] has shape {tuple(values.shape)}, which does not fit the {ds.kind} "
                    f"dataset's extent {tuple(ds.extent)} (dimensions {ds.dimensions}): it needs {n} {noun} "
                    f"values, shaped ({n},), ({n}, k) for k components, or as the grid {grid} "
                    f"(z, y, x order, x fastest)")


_KINDS = (  # VTK base class, kind; subclasses come before their bases
    ("vtkImageData", "image"),
    ("vtkRectilinearGrid", "rectilinear"),
    ("vtkStructuredGrid", "structured"),
    ("vtkUnstructuredGrid", "unstructured"),
    ("vtkPolyData", "polydata"),
)
_ATTRIBUTES = ("scalars", "vectors", "normals", "tcoords", "tensors")


def _copy(vtk_array):
    return vtk_to_array(vtk_array, copy=True)


def _copy_ids(vtk_array):
    values = _nps.vtk_to_numpy(vtk_array).astype(np.int64).reshape(-1)
    return _core_array(values)


def _cells_from(cell_array):
    return Cells(_copy_ids(cell_array.GetOffsetsArray()), _copy_ids(cell_array.GetConnectivityArray()))


def _ids_to_vtk(values):
    host = np.ascontiguousarray(values.numpy() if isinstance(values, _core.Array) else values,
                                dtype=np.int64).reshape(-1)
    return _nps.numpy_to_vtk(host, deep=1, array_type=_cc.VTK_ID_TYPE)


def _cells_to(cells):
    out = _dm.vtkCellArray()
    if cells is not None:
        out.SetData(_ids_to_vtk(cells.offsets), _ids_to_vtk(cells.connectivity))
    return out


def _arrays_from(data, attrs=None):
    arrays = {}
    for i in range(data.GetNumberOfArrays()):
        a = data.GetAbstractArray(i)
        name = a.GetName() or f"array{i}"
        if isinstance(a, _cc.vtkDataArray):
            arrays[name] = _copy(a)
        elif isinstance(a, _cc.vtkStringArray):
            arrays[name] = tuple(a.GetValue(j) for j in range(a.GetNumberOfValues()))
        else:
            warnings.warn(f"tack.interop.vtk: skipping {_describe(a)} '{name}': it holds no numbers",
                          stacklevel=3)
            continue
        if attrs is not None:
            for role in _ATTRIBUTES:
                active = getattr(data, "Get" + role.capitalize().replace("Tcoords", "TCoords"))()
                if active is not None and active is a:
                    attrs[role] = name
    return arrays


def _arrays_to(data, arrays, attrs=None, count=None):
    for name, values in arrays.items():
        if isinstance(values, tuple):
            out = _cc.vtkStringArray()
            out.SetNumberOfValues(len(values))
            for j, s in enumerate(values):
                out.SetValue(j, s)
            out.SetName(name)
        else:
            if not isinstance(values, _core.Array):
                values = _core_array(np.asarray(values))
            grid_shaped = values.ndim > 2 or (count is not None and values.ndim == 2 and values.shape[0] != count)
            out = array_to_vtk(values, name=name, n_components=1 if grid_shaped else None, copy=True)
        data.AddArray(out)
    for role, name in (attrs or {}).items():
        setter = "SetActive" + {"tcoords": "TCoords"}.get(role, role.capitalize())
        getattr(data, setter)(name)


def vtk_to_dataset(dataset) -> Dataset:
    """Copy a VTK dataset -- its structure (extent, origin, spacing,
    direction; coordinates; points; cells) and its point, cell and field
    data -- into a :class:`Dataset` of Tack arrays."""
    kind = None
    for cls, k in _KINDS:
        if isinstance(dataset, getattr(_dm, cls)):
            kind = k
            break
    if kind is None:
        raise TypeError(
            f"vtk_to_dataset() takes vtkImageData, vtkRectilinearGrid, vtkStructuredGrid, "
            f"vtkUnstructuredGrid or vtkPolyData, not {_describe(dataset)}"
            + ("; iterate over its blocks" if isinstance(dataset, _dm.vtkDataObject)
               and not isinstance(dataset, _dm.vtkDataSet) else "")
        )
    ds = Dataset(kind=kind, vtk_class=dataset.GetClassName())
    if kind in ("image", "rectilinear", "structured"):
        ds.extent = tuple(dataset.GetExtent())
    if kind == "image":
        ds.origin = tuple(dataset.GetOrigin())
        ds.spacing = tuple(dataset.GetSpacing())
        m = dataset.GetDirectionMatrix()
        ds.direction = tuple(m.GetElement(r, c) for r in range(3) for c in range(3))
    elif kind == "rectilinear":
        ds.x_coordinates = _copy(dataset.GetXCoordinates())
        ds.y_coordinates = _copy(dataset.GetYCoordinates())
        ds.z_coordinates = _copy(dataset.GetZCoordinates())
    else:
        pts = dataset.GetPoints()
        if pts is not None:
            ds.points = vtk_to_array(pts.GetData(), copy=True)
    if kind == "unstructured":
        cells = dataset.GetCells()
        if cells is not None:
            ds.cells = _cells_from(cells)
            types = dataset.GetCellTypes()  # a vtkDataArray since VTK 9.6
            ds.cell_types = _copy(types) if dataset.GetNumberOfCells() and types is not None else \
                _core.empty((0,), _core.u8, "cpu")
        if dataset.GetPolyhedronFaces() is not None:
            ds.faces = _cells_from(dataset.GetPolyhedronFaces())
            ds.face_locations = _cells_from(dataset.GetPolyhedronFaceLocations())
    elif kind == "polydata":
        for part in ("verts", "lines", "polys", "strips"):
            ca = getattr(dataset, "Get" + part.capitalize())()
            if ca is not None and ca.GetNumberOfCells():
                setattr(ds, part, _cells_from(ca))
    ds.point_data = _arrays_from(dataset.GetPointData(), ds.point_attributes)
    ds.cell_data = _arrays_from(dataset.GetCellData(), ds.cell_attributes)
    ds.field_data = _arrays_from(dataset.GetFieldData())
    return ds


def dataset_to_vtk(ds: Dataset):
    """A new VTK dataset holding copies of a :class:`Dataset`'s structure
    and arrays (the inverse of ``vtk_to_dataset``)."""
    if not isinstance(ds, Dataset):
        raise TypeError(f"dataset_to_vtk() expects a tack.interop.vtk.Dataset, not {type(ds).__name__}")
    base = dict((k, c) for c, k in _KINDS).get(ds.kind)
    if base is None:
        raise ValueError(f"unknown dataset kind {ds.kind!r}; expected one of "
                         + ", ".join(repr(k) for _, k in _KINDS))
    cls = getattr(_dm, ds.vtk_class, None) if ds.vtk_class else None
    if cls is None or not issubclass(cls, getattr(_dm, base)):
        cls = getattr(_dm, base)
    out = cls()
    if ds.kind in ("image", "rectilinear", "structured"):
        if ds.extent is None or len(ds.extent) != 6:
            raise ValueError(f"a {ds.kind} dataset needs an extent of 6 ints, got {ds.extent!r}")
        out.SetExtent(*(int(e) for e in ds.extent))
    if ds.kind == "image":
        out.SetOrigin(*(ds.origin or (0.0, 0.0, 0.0)))
        out.SetSpacing(*(ds.spacing or (1.0, 1.0, 1.0)))
        out.SetDirectionMatrix(*(ds.direction or (1, 0, 0, 0, 1, 0, 0, 0, 1)))
    elif ds.kind == "rectilinear":
        dims = ds.dimensions
        for axis, coords, n in zip("XYZ", (ds.x_coordinates, ds.y_coordinates, ds.z_coordinates), dims):
            if coords is None or coords.size != n:
                raise ValueError(f"a rectilinear grid with dimensions {dims} needs {n} "
                                 f"{axis.lower()} coordinates, got "
                                 f"{'none' if coords is None else coords.size}")
            getattr(out, f"Set{axis}Coordinates")(array_to_vtk(coords, copy=True))
    elif ds.points is not None:
        pts = _cc.vtkPoints()
        pts.SetData(array_to_vtk(ds.points, n_components=3, copy=True))
        out.SetPoints(pts)
    if ds.kind == "structured" and ds.points is not None and ds.points.shape[0] != math.prod(ds.dimensions):
        raise ValueError(f"a structured grid with dimensions {ds.dimensions} needs "
                         f"{math.prod(ds.dimensions)} points, got {ds.points.shape[0]}")
    if ds.kind == "unstructured" and ds.cells is not None:
        types = ds.cell_types
        if types is None or types.size != ds.cells.count:
            raise ValueError(f"{ds.cells.count} cells need as many cell_types, got "
                             f"{'none' if types is None else types.size}")
        vtypes = _nps.numpy_to_vtk(np.ascontiguousarray(types.numpy(), dtype=np.uint8).reshape(-1),
                                   deep=1, array_type=_cc.VTK_UNSIGNED_CHAR)
        if ds.faces is not None and ds.face_locations is not None:
            out.SetPolyhedralCells(vtypes, _cells_to(ds.cells), _cells_to(ds.face_locations),
                                   _cells_to(ds.faces))
        else:
            out.SetCells(vtypes, _cells_to(ds.cells))
    elif ds.kind == "polydata":
        for part in ("verts", "lines", "polys", "strips"):
            cells = getattr(ds, part)
            if cells is not None:
                getattr(out, "Set" + part.capitalize())(_cells_to(cells))
    _check_field_shapes(ds)  # again: the fields may have changed since the Dataset was made
    counts = _grid_counts(ds)
    _arrays_to(out.GetPointData(), ds.point_data, ds.point_attributes, counts and counts[0])
    _arrays_to(out.GetCellData(), ds.cell_data, ds.cell_attributes, counts and counts[1])
    _arrays_to(out.GetFieldData(), ds.field_data)
    return out


# ------------------------------------------------------------ triangle meshes

def mesh_arrays(polydata):
    """A vtkPolyData of triangles as (vertices, triangles): its points, an (n, 3) f32 or f64
    Tack array, and its polygons' connectivity, an (nt, 3) i64 (or i32) Tack array, both sharing
    VTK's memory (no copy).  Every polygon must be a triangle and there must be no triangle
    strips (run vtkTriangleFilter first); vertices and lines are ignored."""
    if not isinstance(polydata, _dm.vtkPolyData):
        raise TypeError(f"mesh_arrays() expects a vtkPolyData, not {type(polydata).__module__}."
                        f"{type(polydata).__name__}")
    if polydata.GetNumberOfStrips():
        raise ValueError(f"the polydata has {polydata.GetNumberOfStrips()} triangle strips: a tack.Mesh "
                         "takes triangles (run vtkTriangleFilter first)")
    pts = polydata.GetPoints()
    if pts is None:
        vertices = _core.empty((0, 3), _core.f32, "cpu")
    else:
        vertices = vtk_to_array(pts.GetData())
    polys = polydata.GetPolys()
    offsets = _nps.vtk_to_numpy(polys.GetOffsetsArray()) if polys is not None else np.zeros(1)
    sizes = np.diff(offsets)
    if sizes.size and (sizes != 3).any():
        k = int(np.flatnonzero(sizes != 3)[0])
        raise ValueError(f"polygon {k} of the polydata has {int(sizes[k])} points: a tack.Mesh takes "
                         "triangles (run vtkTriangleFilter first)")
    nt = int(sizes.size)
    if nt == 0:
        return vertices, _core.empty((0, 3), _core.i64, "cpu")
    conn = vtk_to_array(polys.GetConnectivityArray())
    return vertices, conn.reshape(nt, 3)


# ------------------------------------------------------------ Level Zero

def init_level_zero():
    """Share one Level Zero context between Tack and VTK, before creating arrays.

    Level Zero memory belongs to a context; a device address from one context
    means nothing in another, even on the same GPU.  Call this first, so that
    the arrays either library creates afterwards can be exchanged through
    DLPack.  It needs a Level Zero device that Tack can use and a VTK build
    with ``vtkmodules.util.dlpack_support``.  When that module gives VTK's own
    handles (``get_level_zero_context()`` -> (driver, context, device)),
    Tack adopts VTK's context and device (``_core.level_zero_adopt``);
    otherwise Tack publishes its own context to VTK
    (``set_level_zero_context``).  Adopting is only possible before Tack has
    created any Level Zero array or built a kernel for one: later it raises
    RuntimeError saying it is too late.  RuntimeError also says which of the
    device, the VTK module or its hooks is missing.  Returns the name of the
    Tack device to use.
    """
    devices = list(_core.devices())
    l0 = [d for d in devices if str(d).startswith("level_zero")]
    if not l0:
        raise RuntimeError(
            "init_level_zero(): Tack finds no Level Zero device on this machine (tack.devices() = "
            f"{devices}); it needs an Intel GPU with the Level Zero loader (libze_loader) installed"
        )
    mod = _vtk_dlpack()
    if mod is None:
        raise RuntimeError(
            "init_level_zero(): this VTK build has no vtkmodules.util.dlpack_support, so it cannot "
            "share Level Zero memory (the PyPI wheel cannot); build VTK with its DLPack and SYCL/"
            "Level Zero support, or exchange host copies with copy=True"
        )
    vtk_handles = getattr(mod, "get_level_zero_context", None)
    adopt = getattr(_core, "level_zero_adopt", None)
    if vtk_handles is not None and adopt is not None:
        driver, context, device = (int(h) for h in vtk_handles())
        try:
            adopt(driver, context, device)
        except ValueError as e:
            if "already allocated" in str(e):
                raise RuntimeError(f"init_level_zero() is called too late: {e}") from e
            raise
        for name in l0:  # the Tack device that is VTK's device
            if _core.level_zero_handles(name)[2] == device:
                return str(name)
        return str(l0[0])
    share = getattr(mod, "set_level_zero_context", None)
    handles = getattr(_core, "level_zero_handles", None)
    if share is None or handles is None:
        raise RuntimeError(
            "init_level_zero(): sharing a context needs VTK's get_level_zero_context() (for Tack to "
            "adopt VTK's context) or Tack's Level Zero handles and VTK's set_level_zero_context() (for "
            "VTK to adopt Tack's); " + ("this VTK build has neither hook" if share is None
                                        else "this build of Tack does not expose its Level Zero context")
        )
    share(*handles(l0[0]))
    return str(l0[0])
