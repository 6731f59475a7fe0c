"""User types: ``@tack.struct``, its arrays and its values in kernels.

A struct is a class with annotated fields (numbers, bool, vectors, matrices,
complex, quaternions, transforms, other structs, fixed-size arrays of numbers
or vectors).  Its layout
is NumPy's structured dtype with ``align=True`` -- C's rule: each field at a
multiple of its alignment, the size a multiple of the largest -- so a NumPy
record array of ``Particle.dtype`` is the array of particles as it is, read
and written in place by kernels, and ``np.asarray`` of a ``tack.StructArray``
is such a record array over the same bytes.

The compiler never sees a struct.  A struct is scalarized before the front
end reads the kernel, here, on the tree of the kernel's own source:

- a struct *array* argument travels as one strided view per leaf field (the
  field's components as the last axes: an f32 field ``p.mass`` is an
  (n,) f32 view with a stride of the struct's size, a vec3 field ``p.vel``
  an (n, 3) f32 view), passed as parameters named ``p.mass``, ``p.vel``, so
  ``p[i].vel.x += f`` is ``p.vel[i, 0] += f``: a load and store of the
  field's own type at its byte offset, nothing else.  The views are the
  strided arguments every dialect already reads and writes (decisions.md,
  "Strided arguments in every dialect"); the leaves are disjoint bytes, which
  the launch's overlap check sees from their addresses and strides;
- a struct *value* (a local, an argument passed by value, a ``@tack.func``
  parameter or return) is one local per leaf field, ``q.pos`` and ``q.mass``;
  ``q = p[i]`` copies each leaf, ``p[i] = q`` stores each; a func returning a
  struct returns the tuple of its leaves, which the caller unpacks.

The rewritten tree keeps every node's line and column, and the function
made from it carries it as ``__tack_tree__``, which the front end
(frontend_source.c) and debug mode (tack._debug) read in place of the
parse of the file, so errors point at the user's lines.  A kernel is
rewritten once per struct signature (which parameters are struct arrays or
values of which struct), and that build is an ordinary kernel: its cache
key, argument checks, race analysis and every dialect are the existing
ones, and a struct of another layout is another build.  A call reaches here
only when the compiled kernel's argument binding failed (the extension's
struct_call hook), so calls without structs pay nothing.
"""

import builtins as _builtins
import weakref

from . import _core, _vector_args

_VEC_COMP = {"x": 0, "y": 1, "z": 2, "w": 3}


def _np():
    import numpy

    return numpy


def _compile_error(msg, node=None, fn=None, lineshift=0):
    from ._kernels import CompileError

    if node is None or fn is None:
        return CompileError(msg)
    filename = fn.__code__.co_filename
    line = getattr(node, "lineno", 0) + lineshift
    import linecache

    text = linecache.getline(filename, line) or None
    return CompileError(msg, (filename, line, getattr(node, "col_offset", -1) + 1, text))


# ------------------------------------------------------------------ layout


class array_field:
    """A fixed-size array field of a struct: ``hist: tack.array_field(tack.f32, 8)``
    (``shape`` an int or a tuple of ints; the element a number or vector dtype).
    In a kernel ``p[i].hist[k]`` reads and writes element k."""

    def __init__(self, dtype, shape):
        from ._array import dtype as _dtype

        self.dtype = _dtype(dtype)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if not shape or any(not isinstance(n, int) or isinstance(n, bool) or n < 1 for n in shape):
            raise ValueError(f"tack.array_field: the shape must be positive ints, not {shape!r}")
        self.shape = shape

    def __repr__(self):
        return f"tack.array_field({self.dtype.name}, {self.shape if len(self.shape) > 1 else self.shape[0]})"


class _Field:
    __slots__ = ("name", "kind", "dt", "sub", "shape", "offset")

    def __init__(self, name, kind, dt=None, sub=None, shape=()):
        self.name, self.kind, self.dt, self.sub, self.shape, self.offset = name, kind, dt, sub, shape, 0


class _Leaf:
    """One leaf field: its path, dtype, byte offset, and the array field's shape (or ())."""

    __slots__ = ("path", "dt", "offset", "ashape")

    def __init__(self, path, dt, offset, ashape):
        self.path, self.dt, self.offset, self.ashape = path, dt, offset, ashape

    @property
    def name(self):
        return ".".join(self.path)

    def comp_shape(self):
        """The axes a view of the leaf has after the element's: the array field's, then the
        components' (vector (N,), matrix (R, C), complex (2,): its real and imaginary parts)."""
        dt = self.dt
        if dt.kind == "c":
            return self.ashape + (2,)
        return self.ashape + tuple(dt.shape)

    def scalar(self):
        """The dtype of one component (a complex's part)."""
        from . import f32, f64

        if self.dt.kind == "c":
            return f32 if self.dt.itemsize == 8 else f64
        return self.dt.scalar


class _Layout:
    def __init__(self, cls, fields):
        np = _np()
        self.cls = cls
        self.name = cls.__name__
        self.fields = {f.name: f for f in fields}
        spec = []
        for f in fields:
            if f.kind == "struct":
                spec.append((f.name, f.sub.dtype))
            elif f.kind == "array":
                base = f.dt.numpy
                spec.append((f.name, (base.base, f.shape + base.shape)))
            else:
                spec.append((f.name, f.dt.numpy))
        self.dtype = np.dtype(spec, align=True)
        for f in fields:
            f.offset = self.dtype.fields[f.name][1]
        self.itemsize = self.dtype.itemsize
        self.leaves = []
        self._collect(self, (), 0)

    def _collect(self, lay, prefix, base):
        for f in lay.fields.values():
            if f.kind == "struct":
                self._collect(f.sub, prefix + (f.name,), base + f.offset)
            else:
                self.leaves.append(_Leaf(prefix + (f.name,), f.dt, base + f.offset, f.shape))

    def leaves_under(self, path):
        n = len(path)
        return [lf for lf in self.leaves if lf.path[:n] == path]

    def at(self, path):
        """The layout (struct) or leaf at `path`."""
        lay = self
        for k, name in enumerate(path):
            f = lay.fields[name]
            if f.kind != "struct":
                return next(lf for lf in self.leaves if lf.path == path[: k + 1])
            lay = f.sub
        return lay


def _field_of(cls_name, name, ann):
    from . import _core as core
    from ._array import dtype as _dtype

    if isinstance(ann, array_field):
        return _Field(name, "array", dt=ann.dtype, shape=ann.shape)
    if isinstance(ann, type) and getattr(ann, "__tack_struct__", None) is not None:
        return _Field(name, "struct", sub=ann.__tack_struct__)
    if ann is _builtins.bool:
        from . import bool as tbool

        return _Field(name, "value", dt=tbool)
    if ann in (int, float, complex):
        raise TypeError(f"@tack.struct {cls_name}: field '{name}' is annotated {ann.__name__}, whose width a "
                        f"layout cannot guess: spell the dtype (tack.i64, tack.f32, tack.f64, tack.complex64)")
    if isinstance(ann, str):
        raise TypeError(f"@tack.struct {cls_name}: field '{name}' has the string annotation {ann!r} (from "
                        f"__future__ import annotations?): a struct's fields need their dtypes as objects")
    if isinstance(ann, core.DType):
        return _Field(name, "value", dt=ann)
    try:
        return _Field(name, "value", dt=_dtype(ann))
    except (TypeError, ValueError):
        raise TypeError(f"@tack.struct {cls_name}: field '{name}' has annotation {ann!r}, which is not a "
                        f"Tack dtype, bool, a @tack.struct class or tack.array_field(dtype, n)") from None


def struct(cls):
    """Make ``cls`` a struct type: its annotated fields, in order, laid out as
    C lays them out (``cls.dtype``: NumPy's structured dtype with
    ``align=True``).  Instances are host values (``Particle(mass=2.0)``,
    fields default to zero); kernels take arrays of it (a NumPy record array
    of ``cls.dtype`` or a ``tack.StructArray``) and values of it by value
    (docs/language.md, "Structs")."""
    if not isinstance(cls, type):
        raise TypeError(f"@tack.struct decorates a class, not {type(cls).__name__}")
    anns = cls.__dict__.get("__annotations__", {})
    if not anns:
        raise TypeError(f"@tack.struct {cls.__name__}: a struct needs annotated fields (mass: tack.f32)")
    fields = [_field_of(cls.__name__, n, a) for n, a in anns.items()]
    lay = _Layout(cls, fields)
    cls.__tack_struct__ = lay
    cls.dtype = lay.dtype
    cls.itemsize = lay.itemsize
    cls.fields = tuple(anns)
    for f in fields:
        setattr(cls, f.name, _FieldProperty(f))
    cls.__init__ = _value_init
    cls.__repr__ = _value_repr
    cls.__eq__ = _value_eq
    cls.__hash__ = None
    cls.__reduce__ = _value_reduce
    _STRUCT_DTYPES[lay.dtype] = cls
    return cls


_STRUCT_DTYPES = {}


class _FieldProperty:
    def __init__(self, f):
        self.f = f

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        v = obj._rec[self.f.name]
        if self.f.kind == "struct":
            out = self.f.sub.cls.__new__(self.f.sub.cls)
            object.__setattr__(out, "_rec", v)
            return out
        if v.shape == ():
            return v[()]
        return v

    def __set__(self, obj, value):
        if self.f.kind == "struct" and hasattr(value, "_rec"):
            value = value._rec
        obj._rec[self.f.name] = value


def _value_init(self, *args, **kwargs):
    lay = type(self).__tack_struct__
    names = list(lay.fields)
    if len(args) > len(names):
        raise TypeError(f"{lay.name}() takes {len(names)} fields, {len(args)} given")
    rec = _np().zeros((), lay.dtype)
    object.__setattr__(self, "_rec", rec)
    for n, v in zip(names, args):
        setattr(self, n, v)
    for n, v in kwargs.items():
        if n not in lay.fields:
            raise TypeError(f"struct {lay.name} has no field '{n}' (its fields: {', '.join(names)})")
        setattr(self, n, v)


def _value_repr(self):
    lay = type(self).__tack_struct__
    return f"{lay.name}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in lay.fields) + ")"


def _value_eq(self, other):
    raise TypeError(f"struct {type(self).__tack_struct__.name} values are not compared with '==': compare "
                    f"their fields")


def _array_compare(self, other, op):
    raise TypeError(f"'{op}' between a tack.StructArray and {'itself' if other is self else type(other).__name__} "
                    f"is refused: it has no elementwise operators, and Python's default would compare identity, not "
                    f"values; compare fields on the host (numpy.array_equal(a.numpy(), b.numpy())) or in a "
                    f"kernel, and identity with 'a is b'")


def _value_reduce(self):
    return (_rebuild_value, (type(self), self._rec.tobytes()))


def _rebuild_value(cls, data):
    out = cls.__new__(cls)
    object.__setattr__(out, "_rec", _np().frombuffer(bytearray(data), cls.dtype).reshape(()))
    return out


# ----------------------------------------------------------- struct arrays


class StructArray:
    """An array of a ``@tack.struct``: ``tack.zeros(n, Particle)``,
    ``tack.array(records, dtype=Particle)`` (a copy), ``tack.asarray(records,
    dtype=Particle)`` (the records' own bytes, no copy).  On the CPU its
    storage is a NumPy record array, and ``np.asarray(a)`` is that array,
    sharing the bytes; on another device (``device="opencl:0"``, ``"cuda:0"``
    ...) it is the records' bytes in device memory, which kernels on that
    device read and write field by field, and ``np.asarray(a)`` is a copy
    (as ``tack.Array.numpy()`` is)."""

    __slots__ = ("_rec", "_bytes", "_shape", "_cls")

    def __init__(self, records, cls, device_bytes=None, shape=None):
        self._rec = records
        self._bytes = device_bytes
        self._shape = records.shape if records is not None else tuple(shape)
        self._cls = cls

    @property
    def dtype(self):
        """The struct class (``Particle``); ``a.dtype.dtype`` is its NumPy dtype."""
        return self._cls

    @property
    def shape(self):
        """The shape, a tuple of ints (records along each axis)."""
        return self._shape

    @property
    def ndim(self):
        """The number of dimensions."""
        return len(self._shape)

    @property
    def size(self):
        """The number of records."""
        n = 1
        for d in self._shape:
            n *= d
        return n

    @property
    def device(self):
        """The device name: 'cpu', 'opencl:0', 'cuda:0', ..."""
        return "cpu" if self._rec is not None else self._bytes.device

    @property
    def nbytes(self):
        """The bytes of storage (records times the struct's itemsize)."""
        return self.size * self._cls.itemsize

    def __len__(self):
        return self._shape[0]

    def __bool__(self):
        """NumPy's rule, as tack.Array's: one record is the truth of its bytes
        (``bool(numpy_record_array)``), any other size is ambiguous; without it
        Python tested len() and every array of two or more records was true."""
        if self.size != 1:
            raise ValueError("the truth value of an empty tack.StructArray is ambiguous: test a.size > 0"
                             if self.size == 0 else
                             f"the truth value of a tack.StructArray of {self.size} records is ambiguous: "
                             "test a.size, or a field's values")
        return bool(self.numpy())

    def __array__(self, dtype=None, copy=None):
        """The NumPy record array: on the CPU over the same bytes (a copy with ``copy=True``), from
        another device a copy."""
        if self._rec is None:
            rec = self.numpy()
            return rec if dtype is None else rec.astype(dtype)
        if copy:
            return self._rec.copy() if dtype is None else self._rec.astype(dtype)
        return self._rec if dtype is None else self._rec.astype(dtype)

    def numpy(self):
        """A NumPy copy of the records (on the CPU np.asarray(a) shares the bytes instead)."""
        if self._rec is not None:
            return self._rec.copy()
        raw = _np().ascontiguousarray(self._bytes.numpy())
        return raw.view(self._cls.dtype).reshape(self._shape)

    def to(self, device):
        """A copy on `device` ('cpu', 'opencl:0', ...)."""
        return array_of(self, self._cls, device, True)

    def field(self, name):
        """One field as an array sharing the records' bytes (``a.field("mass")``,
        ``a.field("shape.radius")``): a NumPy view on the CPU, a strided ``tack.Array``
        on another device; its components, if any, as the last axes."""
        lay = self._cls.__tack_struct__
        leaf = next((lf for lf in lay.leaves if lf.name == name), None)
        if self._rec is not None and leaf is None:
            v = self._rec
            for part in name.split("."):
                v = v[part]
            return v
        if leaf is None:
            raise KeyError(f"struct {lay.name} has no field '{name}' (its fields: "
                           f"{', '.join(lf.name for lf in lay.leaves)})")
        return _leaf_of(self, leaf)

    def _host_only(self, what):
        if self._rec is None:
            raise ValueError(f"{what} of a {self._cls.__name__} array on {self.device}: copy it to the CPU first "
                             f"(a.numpy(), a.to('cpu'))")

    def __getitem__(self, idx):
        self._host_only("indexing")
        v = self._rec[idx]
        if isinstance(v, _np().ndarray) and v.shape != ():
            return StructArray(v, self._cls)
        out = self._cls.__new__(self._cls)
        object.__setattr__(out, "_rec", self._rec[idx, ...] if not isinstance(idx, tuple) else self._rec[idx + (...,)])
        return out

    def __setitem__(self, idx, value):
        self._host_only("assigning elements")
        if hasattr(value, "_rec"):
            value = value._rec
        self._rec[idx] = value

    def __reduce__(self):
        if self._rec is None:
            raise TypeError(f"a {self._cls.__name__} array on {self.device} is not pickled (as tack.Array's are "
                            f"not): copy it to the CPU first (a.to('cpu'))")
        return (_rebuild_array, (self._cls, self._rec.shape, self._rec.tobytes()))

    # == != < <= > >=: refused, as tack.Array's (array.c): Python's default would answer == by identity
    __eq__ = lambda self, other: _array_compare(self, other, "==")  # noqa: E731
    __ne__ = lambda self, other: _array_compare(self, other, "!=")  # noqa: E731
    __lt__ = lambda self, other: _array_compare(self, other, "<")  # noqa: E731
    __le__ = lambda self, other: _array_compare(self, other, "<=")  # noqa: E731
    __gt__ = lambda self, other: _array_compare(self, other, ">")  # noqa: E731
    __ge__ = lambda self, other: _array_compare(self, other, ">=")  # noqa: E731
    __hash__ = object.__hash__  # identity, the only equality there is

    def __dlpack__(self, **kwargs):
        """Refused with a TypeError: DLPack has no record type (export a field, ``a.field(name)``)."""
        raise TypeError(
            f"DLPack carries arrays of one number type (bool, int, uint, float, complex, bfloat16), and a "
            f"{self._cls.__name__} record is not one: export a field instead (a.field('{self._cls.fields[0]}')"
            f", a strided view DLPack carries), or the records' bytes as uint8 if the consumer knows the "
            f"layout (np.asarray(a).view(np.uint8))")

    def __dlpack_device__(self):
        """The device, as DLPack numbers it."""
        return (1, 0) if self._rec is not None else self._bytes.__dlpack_device__()

    def __repr__(self):
        where = "" if self._rec is not None else f", device='{self.device}'"
        return f"tack.StructArray({self._cls.__name__}, shape={self.shape}{where})"


def _rebuild_array(cls, shape, data):
    return StructArray(_np().frombuffer(bytearray(data), cls.dtype).reshape(shape), cls)


def _struct_class(dtype):
    return dtype if isinstance(dtype, type) and getattr(dtype, "__tack_struct__", None) is not None else None


def _device_of(device):
    if device is None:
        from . import get_default_device

        device = get_default_device()
    return device


def new_array(shape, cls, device, fill_zero):
    np = _np()
    device = _device_of(device)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if device == "cpu":
        return StructArray((np.zeros if fill_zero else np.empty)(shape, cls.dtype), cls)
    from . import u8

    raw = _core.empty(shape + (cls.itemsize,), u8, device, True)
    return StructArray(None, cls, raw, shape)


def _records_of(obj, cls, what):
    np = _np()
    if isinstance(obj, StructArray):
        if obj.dtype is not cls:
            raise TypeError(f"{what}: the array holds {obj.dtype.__name__} records, not {cls.__name__}")
        obj = obj._rec if obj._rec is not None else obj.numpy()
    if not isinstance(obj, np.ndarray):
        raise TypeError(f"{what}: a {cls.__name__} array is made from a NumPy record array of "
                        f"{cls.__name__}.dtype, not a {type(obj).__name__}")
    if obj.dtype != cls.dtype:
        raise TypeError(f"{what}: the records' dtype {obj.dtype} is not {cls.__name__}.dtype {cls.dtype} (same "
                        f"fields, offsets and size are needed: build the records with dtype={cls.__name__}.dtype)")
    return obj


def array_of(obj, cls, device, copy):
    what = f"tack.array(..., dtype={cls.__name__})"
    if isinstance(obj, StructArray) and obj._rec is None and device in (None, obj.device):
        if not copy:
            return obj
        out = new_array(obj.shape, cls, obj.device, False)
        out._bytes._copy_array(obj._bytes)
        return out
    if device is None and isinstance(obj, StructArray):
        device = obj.device
    rec = _records_of(obj, cls, what)
    device = _device_of(device)
    if device == "cpu":
        return StructArray(rec.copy() if copy else rec, cls)
    np = _np()
    from . import u8

    raw = _core.empty(rec.shape + (cls.itemsize,), u8, device, False)
    raw._copy_from(np.ascontiguousarray(rec).view(np.uint8).reshape(rec.shape + (cls.itemsize,)))
    return StructArray(None, cls, raw, rec.shape)


def _leaf_of(a, leaf):
    """One leaf of struct array `a` as an array sharing its bytes (NumPy on the CPU, a strided
    tack.Array on another device): its components as the last axes."""
    if a._rec is not None:
        return _leaf_view(a._rec, leaf)
    sc = leaf.scalar()
    size = sc.itemsize
    per = a._cls.itemsize // size
    shape = tuple(a._shape)
    comp = leaf.comp_shape()
    strides, c = [], per
    for d in reversed(shape):
        strides.insert(0, c)
        c *= d
    cstr, c = [], 1
    for d in reversed(comp):
        cstr.insert(0, c)
        c *= d
    return a._bytes._field_view(sc, leaf.offset // size, shape + comp, tuple(strides + cstr))


# ------------------------------------------------------------ the arguments

def _arg_kind(v):
    """(kind, layout, ndim) for a struct argument, or None."""
    np = _np()
    if isinstance(v, StructArray):
        return ("array", v.dtype.__tack_struct__, v.ndim)
    if isinstance(v, np.ndarray) and v.dtype.fields is not None:
        cls = _STRUCT_DTYPES.get(v.dtype)
        if cls is None:
            return ("bad", v, 0)
        return ("array", cls.__tack_struct__, v.ndim)
    lay = getattr(type(v), "__tack_struct__", None)
    if lay is not None and not isinstance(v, type):
        return ("value", lay, 0)
    return None


def _leaf_view(rec, leaf):
    """The strided NumPy view of one leaf of a record array (NumPy's own field
    view, sharing the bytes): its components as the last axes, a complex as
    the pair of its parts."""
    v = rec
    for p in leaf.path:
        v = v[p]
    if leaf.dt.kind == "c":
        v = v[..., None].view(leaf.scalar().numpy)
    return v


def _expand(sig, values):
    """The argument list of the struct build: each struct array as its leaf views,
    each struct value as its leaves' components."""
    np = _np()
    out = []
    for kind, v in zip(sig, values):
        if kind is None:
            out.append(v)
        elif kind[0] == "vec":  # a vector, matrix or quaternion: its components, converted (tack._vector_args)
            out.extend(kind[2])
        elif kind[0] == "array":
            if isinstance(v, StructArray):
                out.extend(_leaf_of(v, lf) for lf in kind[1].leaves)
            else:
                out.extend(_leaf_view(v, lf) for lf in kind[1].leaves)
        else:
            rec = v._rec
            for lf in kind[1].leaves:
                x = rec[lf.path[0]]
                for p in lf.path[1:]:
                    x = x[p]
                x = np.asarray(x)
                sc = lf.scalar().numpy
                if lf.dt.kind == "c":
                    x = np.stack([x.real, x.imag], axis=-1)
                x = x.astype(sc).reshape(-1)
                if lf.ashape:
                    raise TypeError(f"struct {kind[1].name} has the array field '{lf.name}': a struct with "
                                    f"array fields is passed to kernels in an array, not by value")
                out.extend(sc.type(c) for c in x)
    return out


class _NoBind(Exception):
    """The arguments do not bind to the parameters: the extension's own TypeError says how."""


_PARAMS = weakref.WeakKeyDictionary()  # kernel -> (its function, its inspect.Signature, its parameter names)


def _signature(kernel, args, kwargs):
    hit = _PARAMS.get(kernel)
    if hit is None:
        import inspect

        fn = kernel.__wrapped__ if hasattr(kernel, "__wrapped__") else kernel.py_func
        sig = inspect.signature(fn)
        hit = _PARAMS[kernel] = (fn, sig, tuple(sig.parameters))
    fn, sig, names = hit
    if not kwargs and len(args) == len(names):
        values = list(args)
    else:
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError:
            raise _NoBind from None
        bound.apply_defaults()
        values = list(bound.arguments.values())
    kinds = []
    vparams = _vector_args.params(fn)
    for name, v in zip(names, values):
        k = _arg_kind(v)
        if k is not None and k[0] == "bad":
            raise TypeError(f"{fn.__qualname__}(): the record array passed for '{name}' has the dtype "
                            f"{v.dtype}, which is no @tack.struct's (make the records with "
                            f"dtype=YourStruct.dtype)")
        if k is None and name in vparams:  # a vector, matrix or quaternion by value (tack._vector_args)
            k = _vector_args.kind(f"{fn.__qualname__}()", name, vparams[name], v)
        kinds.append(k)
    return fn, tuple(kinds), values


def needs_build(kernel, args, kwargs):
    """Whether a call of `kernel` goes through its struct build: a struct among the arguments, or a
    parameter annotated with a vector, matrix or quaternion type (tack._vector_args)."""
    return _builtins.bool(_vector_args.kernel_params(kernel)) or has_struct(args, kwargs)


def has_struct(args, kwargs):
    for v in args:
        if _arg_kind(v) is not None:
            return True
    for v in kwargs.values():
        if _arg_kind(v) is not None:
            return True
    return False


_BUILDS = weakref.WeakKeyDictionary()


def build_for(kernel, args, kwargs):
    """(the struct build of `kernel` for these arguments, its argument list)."""
    fn, sig, values = _signature(kernel, args, kwargs)
    table = _BUILDS.setdefault(kernel, {})
    key = tuple(None if k is None else (k[0], k[1].name, None) if k[0] == "vec" else (k[0], k[1].cls, k[2])
                for k in sig)
    built = table.get(key)
    if built is None:
        g = _rewrite_function(fn, sig, is_kernel=True)
        from ._kernels import PythonKernel

        if isinstance(kernel, PythonKernel):
            built = PythonKernel(g, checks=kernel.checks, fast_math=kernel.fast_math,
                                 flush_denormals=kernel.flush_denormals, default_float=kernel.default_float,
                                 check_races=kernel.check_races, optimize=kernel.optimize)
        else:
            built = _core.Kernel(g, checks=kernel.checks, fast_math=kernel.fast_math,
                                 flush_denormals=kernel.flush_denormals, default_float=kernel.default_float,
                                 check_races=kernel.check_races, optimize=kernel.optimize)
        table[key] = built
    return built, _expand(sig, values)


def struct_call(kernel, args, kwargs, method=None):
    """The extension's struct_call hook: a call whose arguments did not bind (or, with `method`,
    kernel.compile / generated_source / ir of such arguments, with their target= keyword)."""
    if not needs_build(kernel, args, kwargs):
        return NotImplemented
    extra = {}
    if method is not None and "target" in kwargs:
        kwargs = dict(kwargs)
        extra["target"] = kwargs.pop("target")
    try:
        built, expanded = build_for(kernel, args, kwargs)
    except _NoBind:
        return NotImplemented
    if method is None:
        return built(*expanded)
    out = getattr(built, method)(*expanded, **extra)
    return None if method == "compile" else out


# -------------------------------------------------------------- the rewrite

from ._structs_rewrite import _rewrite_function  # noqa: E402
