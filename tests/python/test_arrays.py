"""Arrays, dtypes and devices from Python: differential against NumPy, every bad input."""

import gc
import operator
import pickle
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

import tack

SCALARS = ["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64"]
NUMPY = {
    "bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64,
}
COMPOSITE = {
    "vec2": (np.float32, (2,)), "vec3": (np.float32, (3,)), "vec4": (np.float32, (4,)),
    "vec2d": (np.float64, (2,)), "vec3d": (np.float64, (3,)), "vec4d": (np.float64, (4,)),
    "vec2i": (np.int32, (2,)), "vec3i": (np.int32, (3,)), "vec4i": (np.int32, (4,)),
    "mat22": (np.float32, (2, 2)), "mat33": (np.float32, (3, 3)), "mat44": (np.float32, (4, 4)),
    "mat22d": (np.float64, (2, 2)), "mat33d": (np.float64, (3, 3)), "mat44d": (np.float64, (4, 4)),
}


# ----------------------------------------------------------------- dtypes
@pytest.mark.parametrize("name", SCALARS)
def test_scalar_dtype_matches_numpy(name):
    d = getattr(tack, name)
    npdt = np.dtype(NUMPY[name])
    assert d.name == name
    assert d.itemsize == npdt.itemsize
    assert d.numpy == npdt
    assert d.shape == ()
    assert d.scalar is d
    assert tack.dtype(NUMPY[name]) is d
    assert tack.dtype(npdt) is d
    assert tack.dtype(name) is d
    assert tack.dtype(npdt.name) is d
    assert repr(d) == f"tack.{name}"
    assert pickle.loads(pickle.dumps(d)) is d


@pytest.mark.parametrize("name", sorted(COMPOSITE))
def test_composite_dtype(name):
    d = getattr(tack, name)
    scalar, shape = COMPOSITE[name]
    assert d.shape == shape
    assert d.scalar.numpy == np.dtype(scalar)
    assert d.itemsize == np.dtype(scalar).itemsize * int(np.prod(shape))
    assert d.numpy == np.dtype((scalar, shape))
    assert tack.dtype((scalar, shape)) is d


def test_dtype_spellings():
    # float is Tack's default float everywhere (docs/design/decisions.md)
    assert tack.dtype(float) is tack.f32 and tack.dtype("float") is tack.f32
    assert tack.dtype("double") is tack.f64 and tack.dtype(np.float64) is tack.f64
    assert tack.zeros(2, float).dtype is tack.f32
    assert tack.dtype(int) is tack.i64
    assert tack.dtype(bool) is tack.bool
    assert tack.dtype("<f4") is tack.f32
    assert tack.f32 == "float32" and tack.f32 != "f64"
    # NumPy's dtype == scalar type: tack.f32 == np.float32 was False, so `a.dtype == np.float32`
    # was silently False for an f32 array; tack.dtype(None) was NumPy's float64, where dtype=None
    # in every constructor is f32
    assert tack.f32 == np.float32 and tack.f32 == np.dtype("float32") and tack.f32 != np.float64
    assert tack.vec3 == np.dtype((np.float32, 3)) and tack.f32 != float and tack.i64 != int  # Python's: no
    assert tack.zeros(2).dtype == np.float32 and not (tack.f32 != np.float32)
    assert tack.f32 != None and tack.f32 != 3 and tack.f32 != list  # noqa: E711
    assert tack.dtype(None) is tack.f32 is tack.zeros(1, None).dtype
    assert tack.f32.kind == "f" and tack.u8.kind == "u" and tack.bool.kind == "b" and tack.i8.kind == "i"
    assert tack.vec3.alignment == 4


@pytest.mark.parametrize("bad", ["f33", "complex32", object, np.clongdouble, "<U3", 3.5])
def test_unknown_dtype(bad):
    with pytest.raises(TypeError, match="dtype"):
        tack.dtype(bad)


def test_big_endian_refused():
    with pytest.raises(TypeError, match="big-endian"):
        tack.dtype(">f4")


def test_dtype_objects_remembered_only_when_immutable():
    # tack.dtype remembers NumPy dtype objects and scalar types (by identity, a few); an object
    # that only has a .dtype attribute can change it, and is asked every time (dtype.c)
    class Holder:
        dtype = np.dtype(np.float32)

    h = Holder()
    for _ in range(3):
        assert tack.dtype(h) is tack.f32 and tack.dtype(Holder) is tack.f32
    h.dtype = np.dtype(np.int64)
    Holder.dtype = np.dtype(np.uint8)
    assert tack.dtype(h) is tack.i64 and tack.dtype(Holder) is tack.u8
    assert tack.empty(2, h).dtype is tack.i64 and tack.zeros(2, Holder).dtype is tack.u8
    # more dtype objects than are kept: each still converts, the same answer every time
    made = [np.dtype((np.float64, (3,))) for _ in range(40)] + [np.dtype((np.int32, (2,))) for _ in range(40)]
    for _ in range(2):
        assert [tack.dtype(d) for d in made] == [tack.vec3d] * 40 + [tack.vec2i] * 40
    # refusals are not kept, and hold no reference
    bad = np.dtype(">f4")
    before = sys.getrefcount(bad)
    for _ in range(20):
        with pytest.raises(TypeError, match="big-endian"):
            tack.dtype(bad)
    assert sys.getrefcount(bad) == before


def test_dtype_object_kept_once():
    # a dtype object converted many times holds at most the one reference the table keeps
    d = np.dtype((np.float32, (4,)))
    base = sys.getrefcount(d)
    tack.dtype(d)
    after_first = sys.getrefcount(d)
    for _ in range(100):
        assert tack.dtype(d) is tack.vec4
        assert tack.empty(3, d).dtype is tack.vec4
    assert sys.getrefcount(d) == after_first <= base + 1


def test_dtype_call_converts_like_numpy():
    assert tack.f32(1.5) == np.float32(1.5) and type(tack.f32(1.5)) is np.float32
    np.testing.assert_array_equal(tack.vec3(1, 2, 3), np.array([1, 2, 3], np.float32))
    np.testing.assert_array_equal(tack.mat22([1, 2, 3, 4]), np.array([[1, 2], [3, 4]], np.float32))
    with pytest.raises(ValueError, match="3 components"):
        tack.vec3(1, 2)
    with pytest.raises(TypeError):
        tack.f32(1, 2)


def test_dtype_not_instantiable():
    with pytest.raises(TypeError):
        tack.DType()
    with pytest.raises(TypeError):
        tack.Array()


# ----------------------------------------------------------------- arrays
@pytest.mark.parametrize("name", SCALARS)
def test_roundtrip_every_scalar_dtype(name):
    rng = np.random.default_rng(1)
    host = (rng.integers(0, 100, size=(3, 5)) if name != "bool" else rng.integers(0, 2, (3, 5))).astype(NUMPY[name])
    a = tack.array(host)
    assert a.dtype is getattr(tack, name)
    assert a.shape == (3, 5) and a.ndim == 2 and a.size == 15 and len(a) == 3
    assert a.nbytes == host.nbytes
    assert a.device == "cpu" and a.writable
    out = a.numpy()
    assert out.dtype == host.dtype
    np.testing.assert_array_equal(out, host)
    np.testing.assert_array_equal(np.asarray(a), host)


@pytest.mark.parametrize("name", sorted(COMPOSITE))
def test_roundtrip_composite(name):
    scalar, shape = COMPOSITE[name]
    host = np.arange(5 * int(np.prod(shape)), dtype=scalar).reshape((5,) + shape)
    a = tack.array(host, dtype=getattr(tack, name))
    assert a.shape == (5,) and a.dtype is getattr(tack, name)
    np.testing.assert_array_equal(a.numpy(), host)
    assert a.numpy().shape == (5,) + shape


def test_vec3_from_n_by_3_float():
    a = tack.array(np.ones((4, 3)), dtype=tack.vec3)
    assert a.shape == (4,)
    assert a.numpy().shape == (4, 3) and a.numpy().dtype == np.float32


def test_vec3_trailing_axis_must_match():
    with pytest.raises(ValueError, match=r"trailing axes must be \(3,\)"):
        tack.array(np.ones((4, 2)), dtype=tack.vec3)


def test_nested_sequences_and_default_float():
    a = tack.array([[1.0, 2.0], [3.0, 4.0]])
    assert a.dtype is tack.f32 and a.shape == (2, 2)
    assert tack.array([1, 2, 3]).dtype is tack.i64
    assert tack.array([True, False]).dtype is tack.bool
    assert tack.array(np.arange(3.0)).dtype is tack.f64  # NumPy arrays keep their dtype
    assert tack.array(2.5).shape == () and tack.array(2.5).numpy() == 2.5
    # only Python floats take the default float: a list of float64 arrays (NumPy's or Tack's) or of
    # np.float64 scalars was rounded to f32, where the same values alone kept f64
    x = np.array([0.1, 1 / 3])
    for obj in ([x, x], [tack.array(x), tack.array(x)], [np.float64(0.1), np.float64(1 / 3)], ([x[0]], [x[1]])):
        a = tack.array(obj)
        assert a.dtype is tack.f64 and a.numpy().ravel().tolist() == np.asarray(obj, np.float64).ravel().tolist()
    assert tack.array([-1, 2**63 + 1025]).dtype is tack.f64  # ints past int64: NumPy's float64, not rounded further
    assert tack.array([1, 2.5]).dtype is tack.f32 and tack.array([x, [0.5, 1.5]]).dtype is tack.f32


def test_array_of_complex_values_as_a_real_dtype_is_refused():
    # tack.array(np.array([1 + 2j]), tack.f64) dropped the imaginary part with only NumPy's
    # ComplexWarning, where fill and full refuse a complex value for a real array
    for obj in (np.array([1 + 2j]), np.complex64(1j), 1j, tack.full(2, 1j)):
        with pytest.raises(TypeError, match="is not complex: a complex never becomes a real number implicitly"):
            tack.array(obj, tack.f64)
    assert tack.array(np.array([1 + 2j]).real, tack.f32).numpy().tolist() == [1.0]
    assert tack.array(np.array([1.5]), tack.complex64).numpy().tolist() == [1.5 + 0j]


def test_copy_module_copies_on_the_device():
    # copy.copy / copy.deepcopy fell back on pickling: off the host a TypeError about pickling
    import copy

    for dev in tack.devices():
        a = tack.array(np.arange(6.0).reshape(2, 3), device=dev)
        for c in (copy.copy(a), copy.deepcopy(a), copy.deepcopy({"w": a})["w"], copy.copy(a.T)):
            assert c is not a and c.device == dev and not c.strided
            c.fill(-1.0)
        assert a.numpy().tolist() == np.arange(6.0).reshape(2, 3).tolist()
        assert copy.copy(a.T).numpy().tolist() == np.arange(6.0).reshape(2, 3).T.tolist()


def test_array_copies():
    host = np.arange(4, dtype=np.float32)
    a = tack.array(host)
    host[0] = 100
    assert a.numpy()[0] == 0
    b = tack.array(a)
    b.fill(7)
    assert a.numpy()[1] == 1
    c = a.copy()
    assert c.ptr != a.ptr
    np.testing.assert_array_equal(c.numpy(), a.numpy())
    with pytest.raises(ValueError, match="always copies"):
        tack.array(host, copy=False)


@pytest.mark.parametrize("dev", tack.devices())
def test_array_of_a_strided_view_copies_it(dev):
    # tack.array(m.T) refused the view as "strided", though tack.array(m.T, dtype=...) copied it
    ref = np.arange(12.0).reshape(3, 4)
    m = tack.array(ref, device=dev)
    for view, expect in ((m.T, ref.T), (m[:, 1], ref[:, 1]), (m[::-1, ::2], ref[::-1, ::2])):
        c = tack.array(view)
        assert not c.strided and c.device == dev and c.dtype is tack.f64 and c.writable
        np.testing.assert_array_equal(c.numpy(), expect)
        c.fill(-1.0)  # a copy: the base is untouched
    np.testing.assert_array_equal(m.numpy(), ref)


def test_asarray_returns_same_array():
    a = tack.zeros(3)
    assert tack.asarray(a) is a
    assert tack.asarray(a, dtype=tack.f64) is not a


def test_asarray_copy_is_the_array_apis():
    # asarray had no copy argument: tack.asarray(x, copy=False) was a TypeError
    a = tack.zeros(3)
    assert tack.asarray(a, copy=None) is a and tack.asarray(a, copy=False) is a
    b = tack.asarray(a, copy=True)
    assert b is not a and b.dtype is a.dtype and b.numpy().tolist() == [0, 0, 0]
    b.fill(1.0)
    assert a.numpy().tolist() == [0, 0, 0]
    host = np.arange(4.0)
    shared = tack.asarray(host, copy=False)  # a NumPy array's storage, as tack.from_dlpack gives it
    host[0] = 9.0
    assert shared.dtype is tack.f64 and shared.numpy().tolist() == [9, 1, 2, 3]
    copied = tack.asarray(host)  # None: a NumPy array is copied, as before
    host[1] = 7.0
    assert copied.numpy().tolist() == [9, 1, 2, 3]
    assert tack.asarray(host, copy=0) is not None  # 0 is False: no copy needed here
    for obj, kw, why in (([1.0, 2.0], {}, "a list has no storage to share"),
                         (a, {"dtype": tack.f64}, "its dtype f32 is not f64"),
                         (host, {"dtype": tack.f32}, "the values are f64, not f32")):
        with pytest.raises(ValueError, match=f"copy=False\\): a copy is needed, since {why}"):
            tack.asarray(obj, copy=False, **kw)
    with pytest.raises(ValueError, match="copy must be True, False or None, not 'never'"):
        tack.asarray(a, copy="never")


@pytest.mark.parametrize("dev", tack.devices())
def test_asarray_copy_false_across_devices_is_refused(dev):
    a = tack.zeros(2, device=dev)
    other = "cpu" if dev != "cpu" else next((d for d in tack.devices() if d != "cpu"), None)
    if other is None:
        pytest.skip("one device")
    with pytest.raises(ValueError, match="copy=False\\): a copy is needed"):
        tack.asarray(a, device=other, copy=False)
    assert tack.asarray(a, device=other).device == other


@pytest.mark.parametrize("op", ["==", "!=", "<", "<=", ">", ">="])
def test_comparisons_are_refused_not_answered_by_identity(op):
    # `a == b` was Python's identity: False for two arrays of equal values, `a == 1` False whatever a held
    a, b = tack.zeros(3), tack.zeros(3)
    for other, name in ((b, "tack.Array"), (a, "itself"), (0, "int"), (None, "NoneType")):
        with pytest.raises(TypeError, match=f"'{re.escape(op)}' between a tack.Array and {name} is refused"):
            eval(f"a {op} other")
    with pytest.raises(TypeError, match="a.numpy\\(\\) .* b.numpy\\(\\)"):
        eval(f"0 {op} a")  # reflected: the same refusal
    # identity stays what dicts, sets and `in` use: they test `is` before `==`
    assert hash(a) == hash(a) and {a: 1}[a] == 1 and a in {a} and a in [a]
    # NumPy on the left converts the Tack array (a copy): NumPy's elementwise answer
    assert (np.zeros(3) == a).tolist() == [True, True, True]


@pytest.mark.parametrize("fn, value", [(tack.zeros, 0), (tack.ones, 1)])
def test_zeros_ones(fn, value):
    a = fn((2, 3))
    assert a.dtype is tack.f32
    np.testing.assert_array_equal(a.numpy(), np.full((2, 3), value, np.float32))
    b = fn(4, tack.i16)
    assert b.dtype is tack.i16 and b.shape == (4,)


def test_full_and_fill():
    np.testing.assert_array_equal(tack.full((2,), 3).numpy(), [3, 3])
    assert tack.full((2,), 3).dtype is tack.i64
    assert tack.full((2,), 3.5).dtype is tack.f32
    assert tack.full((2,), True).dtype is tack.bool
    v = tack.full(3, (1, 2, 3), tack.vec3)
    np.testing.assert_array_equal(v.numpy(), [[1, 2, 3]] * 3)
    v.fill(5)
    np.testing.assert_array_equal(v.numpy(), np.full((3, 3), 5, np.float32))
    a = tack.empty(1000, tack.f64)
    a.fill(np.float64(0.25))
    assert (a.numpy() == 0.25).all()
    e = tack.empty(0)
    e.fill(1.0)  # nothing to fill
    assert e.size == 0


@pytest.mark.parametrize("value", ["x", None, [1, 2], object(), b"1"])
def test_fill_wrong_type(value):
    with pytest.raises(TypeError, match="fill value must be a number"):
        tack.zeros(3).fill(value)


def test_fill_out_of_range():
    with pytest.raises(OverflowError):
        tack.zeros(3, tack.i8).fill(1000)
    # past a C long NumPy said only "Python int too large to convert to C long": no value, no dtype
    for dt, v in ((tack.i64, 2**70), (tack.u64, 2**64), (tack.i32, -2**70), (tack.u8, 2**64)):
        with pytest.raises(OverflowError, match=f"fill value {v} is out of range for the array's dtype {dt.name}"):
            tack.zeros(2, dt).fill(v)
        with pytest.raises(OverflowError, match=f"fill value {v} is out of range"):
            tack.full(2, v, dt)


def test_fill_wrong_component_count():
    with pytest.raises(ValueError, match="needs 3 components"):
        tack.zeros(2, tack.vec3).fill([1, 2])


def test_zero_d_and_empty_arrays():
    z = tack.zeros(())
    assert z.shape == () and z.size == 1 and z.ndim == 0
    with pytest.raises(TypeError, match="0-d"):
        len(z)
    e = tack.zeros((3, 0))
    assert e.size == 0 and e.nbytes == 0 and e.numpy().shape == (3, 0)


def test_alignment_of_own_allocations():
    for n in (1, 3, 17, 1000):
        assert tack.empty(n, tack.u8).ptr % 64 == 0


@pytest.mark.parametrize("shape, exc, match", [
    (-1, ValueError, "negative"),
    ((2, -3), ValueError, "negative"),
    ((1,) * 9, ValueError, "at most 8"),
    ((2**62, 2**62), ValueError, "too large"),
    (2**70, ValueError, "too large"),
    # empty, but its other extents overflow (as NumPy refuses it): the strides
    # computed from such a shape overflowed (on DLPack export, test_fuzz_dlpack.py)
    ((2**62, 0, 2**62), ValueError, "too large"),
    ((2**61, 0, 2), ValueError, "too large.*other than 0"),
    ("abc", TypeError, "ints"),
    ((2.5,), TypeError, "ints"),
    (None, TypeError, "shape"),
])
def test_bad_shapes(shape, exc, match):
    with pytest.raises(exc, match=match):
        tack.empty(shape)


def test_shape_of_numpy_integers():
    # tack.zeros(np.int64(3)) was "shape must be an int or a sequence of ints" (NumPy takes it)
    assert tack.zeros(np.int64(3)).shape == (3,) and tack.empty(np.uint8(2), tack.i8).shape == (2,)
    assert tack.zeros(np.array(4)).shape == (4,) and tack.zeros(np.array([2, 3])).shape == (2, 3)
    assert tack.full(np.int32(2), 1.5).shape == (2,)
    with pytest.raises(ValueError, match="negative dimensions"):
        tack.zeros(np.int64(-1))


def test_out_of_memory_is_memory_error():
    with pytest.raises(MemoryError, match="out of memory"):
        tack.empty(2**44, tack.u8)
    tack.zeros(10)  # and the process goes on


def test_repr_is_numpy_like():
    assert repr(tack.array([1.0, 2.0])) == "tack.array([1., 2.], dtype=f32, device='cpu')"
    assert repr(tack.zeros((2, 2), tack.i32)).startswith("tack.array([[0, 0],")
    assert "dtype=vec3" in repr(tack.zeros(2, tack.vec3))
    # NumPy 2 names the shape where the values do not show it: an empty (2, 0) array printed as [],
    # the same as an empty (0,) one, and a summarised one hid its length
    assert repr(tack.zeros((2, 0))) == "tack.array([], shape=(2, 0), dtype=f32, device='cpu')"
    assert repr(tack.zeros(0)) == "tack.array([], dtype=f32, device='cpu')"
    assert repr(tack.zeros(2000, tack.i8)).endswith("0, 0, 0], shape=(2000,), dtype=i8, device='cpu')")
    assert repr(tack.zeros(1000, tack.i8)).endswith("0], dtype=i8, device='cpu')")  # all shown: no shape


def test_no_buffer_protocol_on_purpose():
    a = tack.zeros(4)
    with pytest.raises(TypeError):
        memoryview(a)
    assert not hasattr(a, "__array_interface__")


def test_array_protocol_numpy2_semantics():
    a = tack.array(np.arange(3, dtype=np.int32))
    assert np.asarray(a, dtype=np.float64).dtype == np.float64
    np.testing.assert_array_equal(np.array(a, copy=True), [0, 1, 2])
    with pytest.raises(ValueError, match="without a copy"):
        np.array(a, copy=False)


def test_weakref():
    import weakref

    a = tack.zeros(2)
    r = weakref.ref(a)
    assert r() is a
    del a
    gc.collect()
    assert r() is None


# ----------------------------------------------------------------- copyto
def test_copyto_casts_and_broadcasts():
    dst = tack.zeros((2, 3), tack.f32)
    tack.copyto(dst, np.arange(6, dtype=np.float64).reshape(2, 3))
    np.testing.assert_array_equal(dst.numpy(), np.arange(6).reshape(2, 3))
    tack.copyto(dst, [1, 2, 3])  # broadcast along the first axis
    np.testing.assert_array_equal(dst.numpy(), [[1, 2, 3], [1, 2, 3]])
    tack.copyto(dst, 9)
    assert (dst.numpy() == 9).all()
    src = tack.array(np.ones((2, 3), np.float32))
    tack.copyto(dst, src)
    assert (dst.numpy() == 1).all()
    tack.copyto(dst, tack.array(np.full((2, 3), 4, np.int16)))
    assert (dst.numpy() == 4).all()


def test_copyto_errors():
    dst = tack.zeros(3)
    with pytest.raises(ValueError, match=r"shape \(4,\) cannot be broadcast.*\(3,\)"):
        tack.copyto(dst, np.ones(4))
    with pytest.raises(TypeError, match="[Cc]annot cast"):
        tack.copyto(tack.zeros(3, tack.i32), np.ones(3) * 1.5)
    tack.copyto(tack.zeros(3, tack.i32), np.ones(3) * 1.5, casting="unsafe")
    with pytest.raises(TypeError, match="destination must be a tack.Array"):
        tack.copyto(np.zeros(3), dst)
    ro = dst._readonly_view()
    with pytest.raises(ValueError, match="read-only"):
        tack.copyto(ro, np.ones(3))
    with pytest.raises(ValueError, match="read-only"):
        ro.fill(1.0)


def test_copyto_vec3():
    dst = tack.zeros(2, tack.vec3)
    tack.copyto(dst, np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(dst.numpy(), np.arange(6).reshape(2, 3))


# ----------------------------------------------------------------- devices
def test_devices_and_default():
    assert tack.devices()[0] == "cpu"
    assert tack.get_default_device() == "cpu"
    tack.set_default_device("cpu")
    tack.synchronize()
    tack.synchronize("cpu")
    assert tack._core.device_threads("cpu") >= 1


@pytest.mark.parametrize("name, exc, match", [
    ("tpu", ValueError, "unknown device 'tpu'"),
    ("cuda:x", ValueError, "malformed"),
    ("cpu:1", ValueError, "one CPU device"),
    ("cuda", RuntimeError, "not available"),
    ("level_zero", RuntimeError, "not available"),
    (3, TypeError, "device must be a str"),
])
def test_bad_devices(name, exc, match):
    if name == "cuda" and any(d.startswith("cuda") for d in tack.devices()):
        pytest.skip("this machine has a CUDA device")
    with pytest.raises(exc, match=match):
        tack.set_default_device(name)
    with pytest.raises(exc, match=match):
        tack.zeros(3, device=name)
    assert tack.get_default_device() == "cpu"


def test_level_zero_adopt_is_a_clean_error():
    # no Level Zero: RuntimeError saying so; with a driver: the NULL handles are named
    with pytest.raises((RuntimeError, ValueError), match="tack_level_zero_adopt: "):
        tack._core.level_zero_adopt(0, 0, 0)
    with pytest.raises(TypeError):
        tack._core.level_zero_adopt("driver", 0, 0)


def test_without_gpu_devices_lists_cpu_only():
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("an NVIDIA driver is installed here")
    except OSError:
        pass
    # an OpenCL driver for the CPU (PoCL) adds "opencl:0"; it is no GPU
    assert [d for d in tack.devices() if not d.startswith("opencl")] == ["cpu"]
    with pytest.raises(RuntimeError, match="no NVIDIA driver"):
        tack.zeros(1, device="cuda:0")


# ----------------------------------------------------------------- lifetimes and refcounts
def test_wrap_buffer_keeps_owner_alive():
    host = np.arange(5, dtype=np.int16)
    before = sys.getrefcount(host)
    w = tack._core.wrap_buffer(host, writable=True)
    assert w.shared and w.ptr == host.ctypes.data
    assert sys.getrefcount(host) > before
    del w
    gc.collect()
    assert sys.getrefcount(host) == before


def test_wrap_buffer_readonly_and_noncontiguous():
    ro = np.arange(4.0)
    ro.flags.writeable = False
    w = tack._core.wrap_buffer(ro)
    assert not w.writable
    with pytest.raises(ValueError, match="read-only"):
        tack._core.wrap_buffer(ro, writable=True)
    with pytest.raises(BufferError, match="contiguous"):
        tack._core.wrap_buffer(np.arange(10.0)[::2])
    with pytest.raises(TypeError, match="no Tack dtype"):
        tack._core.wrap_buffer(np.zeros(3, np.clongdouble))


def test_no_reference_leaks_over_many_roundtrips():
    host = np.arange(16, dtype=np.float32)
    a = tack.array(host)
    refs = sys.getrefcount(host), sys.getrefcount(a), sys.getrefcount(tack.f32)
    for _ in range(10_000):
        tack.copyto(a, host)
        a.numpy()
        a.dtype
        a.shape
        tack._core.wrap_buffer(host)
    gc.collect()
    assert (sys.getrefcount(host), sys.getrefcount(a), sys.getrefcount(tack.f32)) == refs


def test_threads_create_arrays_concurrently():
    errors = []

    def work():
        try:
            for i in range(200):
                a = tack.full(64, i, tack.i32)
                assert a.numpy().sum() == 64 * i
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def test_subinterpreter_free_import_in_subprocess():
    # A fresh process imports tack, makes arrays and exits cleanly.
    code = "import tack; a = tack.zeros(3); print(a.shape)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(3,)"


def test_version():
    assert tack.__version__ == "0.1.0"
    assert tack._core.ABI_VERSION == 1


def test_type_stubs_cover_the_extension():
    import ast
    import pathlib

    stub = pathlib.Path(tack.__file__).with_name("_core.pyi")
    assert pathlib.Path(tack.__file__).with_name("py.typed").exists()
    tree = ast.parse(stub.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
    public = {n for n in dir(tack._core) if not n.startswith("__")}
    missing = public - names
    assert not missing, f"tack/_core.pyi lacks {sorted(missing)}"


def test_to_device():
    a = tack.array(np.arange(4, dtype=np.float32))
    assert a.to("cpu") is a
    assert a.to_device("cpu") is a
    b = a.to("cpu", copy=True)
    assert b is not a and b.ptr != a.ptr and b.device == "cpu"
    np.testing.assert_array_equal(b.numpy(), a.numpy())
    with pytest.raises(ValueError, match="unknown device 'gpu'"):
        a.to("gpu")
    if not any(d.startswith("cuda") for d in tack.devices()):
        with pytest.raises(RuntimeError, match="not available"):
            a.to("cuda")


def test_repr_of_a_large_array_reads_only_what_it_prints():
    import tracemalloc

    a = tack.zeros(50_000_000, tack.f64)  # 400 MB; repr shows six values
    tracemalloc.start()
    try:
        text = repr(a)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert text == "tack.array([0., 0., 0., ..., 0., 0., 0.], shape=(50000000,), dtype=f64, device='cpu')"
    assert peak < 16 << 20, f"repr allocated {peak >> 20} MiB"


@pytest.mark.parametrize("shape,dt", [((5000,), "f32"), ((50, 40), "i32"), ((9, 8, 30), "f64"),
                                      ((2000,), "vec3"), ((7, 3, 100), "u8"), ((3, 400), "mat22")])
def test_repr_edges_match_the_full_copy(shape, dt):
    # The path for device arrays (a copy of each printed run, not of the array)
    # prints exactly what a full copy prints.
    from tack import _array

    d = getattr(tack, dt)
    rng = np.random.default_rng(1)
    a = tack.array(rng.integers(0, 100, size=shape + d.shape).astype(d.scalar.numpy), dtype=d)
    fmt = dict(separator=", ", prefix="tack.array(", threshold=1000)
    assert np.array2string(_array._edge_values(a), **fmt) == np.array2string(a.numpy(), **fmt)


# ----------------------------------------------------------------- huge pages
def _thp_mode():
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return f.read().split("[")[1].split("]")[0]
    except (OSError, IndexError):
        return None


def _huge_kb(addr):
    """AnonHugePages (kB) of the mapping of this process that holds addr."""
    with open("/proc/self/smaps") as f:
        inside = False
        for line in f:
            head = line.split()[0]
            if "-" in head and ":" not in head:
                lo, hi = (int(v, 16) for v in head.split("-"))
                inside = lo <= addr < hi
            elif inside and head == "AnonHugePages:":
                return int(line.split()[1])
    return 0


@pytest.mark.skipif(_thp_mode() not in ("madvise", "always"), reason="no transparent huge pages here")
def test_a_large_cpu_array_asks_for_huge_pages():
    # the CPU backend advises blocks of 4 MiB and more as wanting huge pages (as NumPy does): where
    # the system's setting is "madvise", only the advice gives them, and a fresh array's first
    # write faults in 2 MiB pages (a 64 MB array written 4-9x faster on a 2-core machine)
    a = tack.empty(16 << 20, np.uint8)
    a.fill(1)
    assert _huge_kb(a.ptr + (8 << 20)) >= 2048


# ----------------------------------------------------------------- a NumPy user's trial (2026-12-06)
def test_full_follows_a_numpy_scalars_dtype():
    # np.full keeps a NumPy scalar's dtype; an i64 made from np.uint64(2**63) was -2**63
    big = tack.full(3, np.uint64(2**63))
    assert big.dtype is tack.u64 and big.numpy().tolist() == [2**63] * 3
    tenth = tack.full(2, np.float64(0.1))
    assert tenth.dtype is tack.f64 and tenth.numpy().tolist() == [0.1, 0.1]
    assert tack.full(2, np.float16(1.5)).dtype is tack.f16
    assert tack.full(2, np.int8(-3)).dtype is tack.i8
    assert tack.full(2, np.bool_(True)).dtype is tack.bool
    assert tack.full(2, 7).dtype is tack.i64 and tack.full(2, 7.5).dtype is tack.f32  # Python numbers as before


def test_full_and_fill_take_complex_values():
    z = tack.full(2, 1 + 2j)
    assert z.dtype is tack.complex128 and z.numpy().tolist() == [1 + 2j, 1 + 2j]
    assert tack.full(2, np.complex64(3j)).dtype is tack.complex64
    c = tack.full(2, 1 - 1j, tack.complex64)
    assert c.numpy().tolist() == [1 - 1j, 1 - 1j]
    c.fill(2.5)  # a real value into a complex array is exact
    assert c.numpy().tolist() == [2.5, 2.5]
    for value in (1j, np.complex128(1 + 1j)):  # and a complex one never becomes real implicitly
        with pytest.raises(TypeError, match="is complex and the array's dtype f32 is not"):
            tack.zeros(2).fill(value)


@pytest.mark.parametrize("dev", tack.devices())
def test_truth_value_is_numpys(dev):
    # `if a:` fell back on len(): a one-element array of zero was true, and so was any longer array
    assert not tack.zeros(1, device=dev) and not tack.zeros((1, 1), tack.i32, device=dev)
    assert tack.full((), 2.0, device=dev) and not tack.zeros((), device=dev)
    with pytest.raises(ValueError, match="truth value of a tack.Array of 2 elements is ambiguous"):
        bool(tack.ones(2, device=dev))
    with pytest.raises(ValueError, match="truth value of an empty tack.Array is ambiguous"):
        bool(tack.zeros(0, device=dev))


def test_copyto_names_a_bad_casting_rule():
    # an unknown rule was reported as a shape mismatch between two equal shapes
    with pytest.raises(ValueError, match="casting must be one of .* not 'bogus'"):
        tack.copyto(tack.zeros(3), np.ones(3), casting="bogus")


@pytest.mark.parametrize("dev", tack.devices())
def test_copyto_from_a_strided_view_and_between_overlapping_views(dev):
    m = tack.array(np.arange(12.0).reshape(3, 4), device=dev)
    col = tack.zeros(3, tack.f64, device=dev)
    tack.copyto(col, m[:, 1])  # same dtype and shape: was refused as "strided", where f32 was not
    assert col.numpy().tolist() == [1.0, 5.0, 9.0]
    ref = np.arange(10.0)
    a = tack.array(ref, device=dev)
    tack.copyto(a[1:], a[:9])  # memmove's answer, as numpy.copyto gives; OpenCL raised CL_MEM_COPY_OVERLAP
    np.copyto(ref[1:], ref[:9].copy())
    assert a.numpy().tolist() == ref.tolist()
    tack.copyto(a[:9], a[1:])
    np.copyto(ref[:9], ref[1:].copy())
    assert a.numpy().tolist() == ref.tolist()
    tack.copyto(a, a)
    assert a.numpy().tolist() == ref.tolist()


def test_strided_refusal_names_only_methods_tack_arrays_have():
    with pytest.raises(BufferError, match=r"contiguous copy \(a.copy\(\), or a.numpy\(\) on the host\)") as e:
        tack.zeros((2, 3)).T.reshape(6)
    assert "contiguous()" not in str(e.value)


# ------------------------------------------------- float(a), int(a), complex(a), operator.index(a)
SCALARS = [np.array(2.75), np.array(-3.5, np.float32), np.array(7), np.array(200, np.uint8), np.array(True),
           np.array(1.5 - 2j), np.array(np.nan), np.array(np.inf), np.array(-0.0, np.float16)]


def _outcome(f, x):
    """f(x)'s value and its type, or the exception's type."""
    try:
        r = f(x)
    except (TypeError, ValueError, OverflowError) as e:
        return type(e)
    return type(r), r if r == r else "nan"


@pytest.mark.parametrize("dev", tack.devices())
def test_a_0d_array_converts_to_a_python_number_as_numpys(dev):
    # float(a) of a 0-d tack.Array was "float() argument must be ... not 'tack.Array'"; every conversion
    # now gives NumPy's answer: its value, or NumPy's error (int(nan), float(complex), index(float))
    for x in SCALARS:
        a = tack.array(x, device=dev)
        for f in (float, int, complex, bool, operator.index):
            assert _outcome(f, a) == _outcome(f, x), (x.dtype, x, f.__name__)
    assert float(tack.array(np.arange(4.0), device=dev)[1]) == 1.0  # an element of a 1-d array
    assert operator.index(tack.full((), 3, tack.i64, device=dev)) == 3
    assert [10, 11, 12, 13][tack.full((), 2, tack.i32, device=dev)] == 12  # an index, as a NumPy 0-d int


@pytest.mark.parametrize("dev", tack.devices())
def test_any_other_shape_is_numpy_2s_type_error_naming_the_shape(dev):
    # NumPy 2 refuses a one-element n-d array too (NumPy 1.25 warned); the message keeps NumPy's words
    for shape in [(1,), (1, 1), (2,), (0,), (2, 3)]:
        a = tack.zeros(shape, tack.f64, device=dev)
        for f in (float, int, complex):
            with pytest.raises(TypeError) as want:
                f(np.zeros(shape))
            with pytest.raises(TypeError, match=re.escape(f"{f.__name__}() of a tack.Array of shape {shape}")) as e:
                f(a)
            assert str(e.value).startswith(str(want.value)), (str(e.value), str(want.value))
        with pytest.raises(TypeError, match=re.escape(f"converted to a scalar index: index() of a tack.Array of "
                                                      f"shape {shape}")):
            operator.index(tack.zeros(shape, tack.i64, device=dev))
    with pytest.raises(TypeError, match=r"float\(\) of a 0-dimensional tack.Array of vec3: a vector value is not"):
        float(tack.zeros((), tack.vec3, device=dev))


# ------------------------------------------------------------ copyto into a strided view
def _views(dev):
    """(name, tack view, the same view of a NumPy copy) pairs: a step, a reversal, a column, a transpose,
    a block with a step (on OpenCL, a view whose first element is past the buffer's start)."""
    base = np.arange(48.0).reshape(6, 8)
    for name, pick in [("a[::2]", lambda m: m.reshape(48)[::2]), ("a[::-1]", lambda m: m.reshape(48)[::-1]),
                       ("m[:, 1]", lambda m: m[:, 1]), ("m.T", lambda m: m.T),
                       ("m[1:5, 3::2]", lambda m: m[1:5, 3::2]), ("m[::-2, ::3].T", lambda m: m[::-2, ::3].T)]:
        t = tack.array(base, device=dev)
        ref = base.copy()
        yield name, t, pick(t), ref, pick(ref)


@pytest.mark.parametrize("dev", tack.devices())
def test_copyto_into_a_strided_view_writes_its_elements_and_no_others(dev):
    # refused before ("copy to array: the array is a strided view"): now each value goes to its element,
    # NumPy's np.copyto on the same view of a NumPy array the reference, the elements around it unchanged
    for name, t, view, ref, ref_view in _views(dev):
        assert view.strided, name
        src = -np.arange(ref_view.size, dtype=np.float64).reshape(ref_view.shape) - 0.5
        tack.copyto(view, src)
        np.copyto(ref_view, src)
        assert t.numpy().tolist() == ref.tolist(), name
        tack.copyto(view, 7)  # a scalar, broadcast
        np.copyto(ref_view, 7)
        assert t.numpy().tolist() == ref.tolist(), name
        row = np.arange(ref_view.shape[-1], dtype=np.int32)  # a row broadcast, an int converted
        tack.copyto(view, row)
        np.copyto(ref_view, row)
        assert t.numpy().tolist() == ref.tolist(), name
        same = tack.array(src + 100, device=dev)  # a Tack array of the same dtype and shape
        tack.copyto(view, same)
        np.copyto(ref_view, src + 100)
        assert t.numpy().tolist() == ref.tolist(), name


@pytest.mark.parametrize("dev", tack.devices())
def test_copyto_between_strided_views_of_one_array_and_of_other_dtypes(dev):
    ref = np.arange(20.0)
    a = tack.array(ref, device=dev)
    tack.copyto(a[::2], a[1::2])  # interleaved views of one array
    np.copyto(ref[::2], ref[1::2])
    assert a.numpy().tolist() == ref.tolist()
    tack.copyto(a[::-1], a)  # the whole array reversed in place: as if the source were copied out first
    np.copyto(ref[::-1], ref.copy())
    assert a.numpy().tolist() == ref.tolist()
    v = tack.zeros(6, tack.vec3, device=dev)  # vectors: whole elements, the components kept together
    tack.copyto(v[::-2], np.arange(9, dtype=np.float32).reshape(3, 3))
    want = np.zeros((6, 3), np.float32)
    want[::-2] = np.arange(9).reshape(3, 3)
    assert v.numpy().tolist() == want.tolist()
    for dt, vals in [(tack.f16, [0.5, -2.0, 1e4]), (tack.bool, [True, False, True]),
                     (tack.complex128, [1 + 2j, -3j, 4]), (tack.u8, [1, 255, 7])]:
        m = tack.zeros((3, 3), dt, device=dev)
        tack.copyto(m.T[0], np.array(vals, dt.numpy))  # the first column
        host = np.zeros((3, 3), dt.numpy)
        np.copyto(host.T[0], np.array(vals, dt.numpy))
        assert m.numpy().tolist() == host.tolist(), dt


def test_copyto_refuses_a_view_whose_elements_share_memory():
    # a writable zero-stride view: np.copyto writes the last value; Tack says why it will not guess
    x = np.zeros(4)
    t = tack.from_dlpack(np.lib.stride_tricks.as_strided(x, shape=(3,), strides=(0,), writeable=True))
    with pytest.raises(ValueError, match="elements of the destination view share memory"):
        tack.copyto(t, [1.0, 2.0, 3.0])
    assert x.tolist() == [0.0] * 4
    a = np.arange(16.0)
    a.flags.writeable = False
    ro = tack.from_dlpack(a[::4])
    assert ro.strided and not ro.writable
    with pytest.raises(ValueError, match="read-only"):
        tack.copyto(ro, [1.0] * 4)
    assert a.tolist() == list(range(16))


def test_zeros_like_and_its_kin_take_shape_dtype_and_device():
    # a port's scratch arrays (tack.zeros_like(force)) were an AttributeError: tack had no *_like
    m = tack.array(np.arange(6.0).reshape(2, 3))
    z = tack.zeros_like(m)
    assert (z.shape, z.dtype, z.device) == ((2, 3), tack.f64, "cpu") and not z.numpy().any()
    o = tack.ones_like(m, tack.i32)
    assert o.dtype is tack.i32 and o.numpy().tolist() == [[1, 1, 1], [1, 1, 1]]
    f = tack.full_like(np.zeros(3, np.float32), 2.5)
    assert f.dtype is tack.f32 and f.numpy().tolist() == [2.5, 2.5, 2.5]
    assert tack.empty_like(m.T).shape == (3, 2) and not tack.empty_like(m.T).strided
    v = tack.zeros_like(tack.full(4, 1.0, tack.vec3d))
    assert v.dtype is tack.vec3d and v.shape == (4,) and not v.numpy().any()

    @tack.struct
    class Atom:
        pos: tack.vec3
        kind: tack.i32

    atoms = tack.zeros(5, Atom)
    np.asarray(atoms)["kind"] = 7
    again = tack.zeros_like(atoms)
    assert type(again) is type(atoms) and again.dtype is Atom and not np.asarray(again)["kind"].any()
    with pytest.raises(TypeError, match="takes an array .* not list"):
        tack.zeros_like([1, 2])
    with pytest.raises(TypeError, match="a NumPy record array has no struct of its own"):
        tack.zeros_like(np.zeros(3, Atom.dtype))
    if "opencl:0" in tack.devices():
        g = tack.zeros_like(tack.zeros(3, tack.f32, device="opencl:0"))
        assert g.device == "opencl:0"
