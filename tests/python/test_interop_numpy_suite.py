"""The cases of NumPy's own DLPack test suite that apply to Tack, re-posed
with Tack arrays as producer and/or consumer (our own code; NumPy's suite
was read only for the list of behaviours it checks)."""

import gc
import sys

import numpy as np
import pytest

import tack

SCALARS = [tack.bool, tack.i8, tack.i16, tack.i32, tack.i64, tack.u8, tack.u16, tack.u32, tack.u64,
           tack.f16, tack.f32, tack.f64]


def test_dunder_dlpack_refcount():
    # Exporting must not keep the Python object alive: the capsule retains
    # the storage, not the handle.
    x = tack.zeros(5)
    y = x.__dlpack__()
    assert sys.getrefcount(x) == 2
    del y
    assert sys.getrefcount(x) == 2


def test_dunder_dlpack_stream():
    x = tack.zeros(5)
    x.__dlpack__(stream=None)
    with pytest.raises(ValueError):
        x.__dlpack__(stream=1)


def test_strides_not_multiple_of_itemsize():
    # A field of a structured array: strides that are not a multiple of the
    # itemsize cannot be described in elements; NumPy refuses to export.
    dt = np.dtype([("int", np.int32), ("char", np.int8)])
    y = np.zeros((5,), dtype=dt)
    z = y["int"]
    with pytest.raises(BufferError):
        tack.from_dlpack(z)


def test_from_dlpack_refcount():
    x = np.arange(5)
    before = sys.getrefcount(x)
    y = tack.from_dlpack(x)
    assert sys.getrefcount(x) == before + 1  # the managed tensor holds one
    del y
    gc.collect()
    assert sys.getrefcount(x) == before


@pytest.mark.parametrize("dt", SCALARS, ids=lambda d: d.name)
def test_dtype_passthrough(dt):
    x = tack.array(np.arange(5) % 2 if dt is tack.bool else np.arange(5), dtype=dt)
    y = np.from_dlpack(x)
    assert y.dtype == dt.numpy
    np.testing.assert_array_equal(x.numpy(), y)
    z = tack.from_dlpack(y)
    assert z.dtype is dt
    np.testing.assert_array_equal(z.numpy(), y)


@pytest.mark.parametrize("npdt", ["datetime64[s]", "timedelta64[s]"])
def test_invalid_dtype(npdt):
    x = np.zeros(4, dtype=npdt)
    with pytest.raises(BufferError):  # NumPy refuses the dates (complex64/128 are shared: test_complex.py)
        tack.from_dlpack(x)


def test_invalid_byte_swapping():
    x = np.arange(5, dtype=np.dtype("int32").newbyteorder())
    with pytest.raises(BufferError):
        tack.from_dlpack(x)


@pytest.mark.parametrize("shape", [(5,), (2, 3), (2, 1, 3)])
def test_non_contiguous(shape):
    x = np.arange(int(np.prod(shape)) * 2, dtype=np.float32).reshape(shape[:-1] + (shape[-1] * 2,))
    v = tack.from_dlpack(x[..., ::2])  # a strided view, and back with its strides
    assert v.strided and v.ptr == x.ctypes.data
    y = np.from_dlpack(v)
    assert y.strides == x[..., ::2].strides and y.ctypes.data == x.ctypes.data
    np.testing.assert_array_equal(y, x[..., ::2])
    # A Tack array of its own is C-contiguous, and exports so.
    z = np.from_dlpack(tack.array(np.ascontiguousarray(x[..., ::2])))
    assert z.flags.c_contiguous
    np.testing.assert_array_equal(z, x[..., ::2])


def test_dlpack_device():
    x = tack.zeros(5)
    assert x.__dlpack_device__() == (1, 0)
    y = np.from_dlpack(x)
    assert y.__dlpack_device__() == (1, 0)
    z = tack.from_dlpack(y)
    assert z.__dlpack_device__() == (1, 0)


def dlpack_deleter_exception():
    x = tack.zeros(5)
    _ = x.__dlpack__()
    raise RuntimeError


def test_dlpack_destructor_exception():
    with pytest.raises(RuntimeError):
        dlpack_deleter_exception()


def test_readonly():
    x = tack.zeros(5)._readonly_view()
    with pytest.raises(BufferError):
        x.__dlpack__()
    y = np.from_dlpack(x)
    assert not y.flags.writeable


def test_ndim0():
    x = tack.array(np.float64(1.0))
    y = np.from_dlpack(x)
    np.testing.assert_array_equal(x.numpy(), y)
    z = tack.from_dlpack(np.array(2.5))
    assert z.shape == () and z.numpy() == 2.5


def test_size1dims_arrays():
    # NumPy's case: Fortran order, with an odd stride on an extent-1 axis:
    # a strided view; the extent-1 stride alone leaves C order.
    buf = np.arange(1000, dtype=np.uint8)
    x = np.ndarray(dtype="f8", shape=(10, 5, 1), strides=(8, 80, 4), buffer=buf, order="F")
    f = tack.from_dlpack(x)
    assert f.strided and f.ptr == x.ctypes.data
    np.testing.assert_array_equal(f.numpy(), x)
    c = np.ndarray(dtype="f8", shape=(10, 5, 1), strides=(40, 8, 4), buffer=buf)
    y = tack.from_dlpack(c)
    assert y.shape == (10, 5, 1) and y.ptr == c.ctypes.data and not y.strided
    np.testing.assert_array_equal(y.numpy(), c)


def test_fortran_order():
    x = np.asfortranarray(np.arange(50.0).reshape(10, 5))
    f = tack.from_dlpack(x)  # a strided view, not a copy
    assert f.strided and f.ptr == x.ctypes.data
    np.testing.assert_array_equal(f.numpy(), x)
    assert np.from_dlpack(f).flags.f_contiguous
    y = np.ones((10, 5, 1))[:, :, :]
    z = tack.from_dlpack(np.lib.stride_tricks.as_strided(y, strides=(40, 8, 4)))
    assert z.shape == (10, 5, 1) and not z.strided


def test_copy():
    x = tack.array(np.arange(5, dtype=np.float32))
    y = np.from_dlpack(x)
    assert y.ctypes.data == x.ptr
    y = np.from_dlpack(x, copy=False)
    assert y.ctypes.data == x.ptr
    y = np.from_dlpack(x, copy=True)
    assert y.ctypes.data != x.ptr
    np.testing.assert_array_equal(x.numpy(), y)
    z = np.arange(5.0)
    assert tack.from_dlpack(z, copy=True).ptr != z.ctypes.data
    assert tack.from_dlpack(z, copy=False).ptr == z.ctypes.data


def test_device():
    x = np.arange(5)
    assert tack.from_dlpack(x, device="cpu").device == "cpu"
    y = tack.zeros(5)
    assert np.from_dlpack(y, device="cpu").ctypes.data == y.ptr
    with pytest.raises(ValueError, match="tpu"):
        tack.from_dlpack(x, device="tpu")
    if "metal" not in tack.devices():
        with pytest.raises(RuntimeError, match="not available"):
            tack.from_dlpack(x, device="metal")


def test_dlpack_higher_version():
    # A consumer allowing a higher version still gets 1.x (Tack's own), which
    # it must accept by the minor-version rules.
    x = tack.zeros(3)
    cap = x.__dlpack__(max_version=(10, 0))
    assert "dltensor_versioned" in repr(cap)
    assert tack.from_dlpack(cap).ptr == x.ptr


def test_dlpack_capsule_consumed_once():
    x = np.arange(3)
    cap = x.__dlpack__()
    tack.from_dlpack(cap)
    with pytest.raises(ValueError):
        tack.from_dlpack(cap)
    with pytest.raises((ValueError, TypeError, BufferError)):
        np.from_dlpack(_Wrap(cap))


class _Wrap:
    def __init__(self, cap):
        self.cap = cap

    def __dlpack__(self, **kw):
        return self.cap

    def __dlpack_device__(self):
        return (1, 0)


def test_lifetime_consumer_outlives_producer():
    x = tack.array(np.arange(5, dtype=np.float32))
    y = np.from_dlpack(x)
    del x
    gc.collect()
    np.testing.assert_array_equal(y, np.arange(5))
