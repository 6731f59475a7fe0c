"""DLPack and external pointers with NumPy 2: both directions, every dtype,
versioned and legacy capsules, read-only both ways, copies, lifetimes, and
the spec's snippets verbatim."""

import gc
import subprocess
import sys
import textwrap
import threading
import weakref

import numpy as np
import pytest

import tack

SCALARS = [tack.bool, tack.i8, tack.i16, tack.i32, tack.i64, tack.u8, tack.u16, tack.u32, tack.u64,
           tack.f16, tack.f32, tack.f64]
COMPOSITES = [tack.vec2, tack.vec3, tack.vec4, tack.vec2d, tack.vec3d, tack.vec4d, tack.vec2i, tack.vec3i,
              tack.vec4i, tack.mat22, tack.mat33, tack.mat44, tack.mat22d, tack.mat33d, tack.mat44d]
SHAPES = [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 4, 1)]


def values(shape, npdtype):
    n = int(np.prod(shape)) if shape else 1
    if np.dtype(npdtype) == np.bool_:
        return (np.arange(n) % 3 == 0).reshape(shape)
    return (np.arange(n) % 100).astype(npdtype).reshape(shape)


# ------------------------------------------------------------- the spec

def test_spec_dlpack_export_snippet():
    data = tack.array(np.arange(8, dtype=np.float32))
    shared_array = np.from_dlpack(data)
    np.testing.assert_array_equal(shared_array, np.arange(8, dtype=np.float32))
    shared_array[3] = -1  # shares, so the Tack array sees it
    assert data.numpy()[3] == -1


def test_spec_dlpack_import_snippet():
    producer = np.arange(6, dtype=np.float64).reshape(2, 3)
    # producer is a tensor from another library, on a compatible device.
    view = tack.from_dlpack(producer)
    assert view.shape == (2, 3) and view.dtype is tack.f64 and view.device == "cpu"
    producer[1, 2] = 42
    assert view.numpy()[1, 2] == 42


def test_spec_pointer_snippet():
    # The spec's snippet, verbatim.
    array = np.zeros(8, dtype=np.float32)
    view = tack.array_from_ptr(array, (8,), tack.f32, writable=True)

    @tack.kernel
    def fill_indices(out):
        for i in range(out.shape[0]):
            out[i] = float(i)

    fill_indices(view)
    np.testing.assert_array_equal(array, np.arange(8, dtype=np.float32))


def test_spec_pointer_snippet_without_kernel():
    # The same sharing, written through the view without a kernel.
    array = np.zeros(8, dtype=np.float32)
    view = tack.array_from_ptr(array, (8,), tack.f32, writable=True)
    tack.copyto(view, np.arange(8, dtype=np.float32))
    np.testing.assert_array_equal(array, np.arange(8, dtype=np.float32))


def test_spec_independent_copies():
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    data = tack.array(host)
    assert not np.shares_memory(np.asarray(data), host)
    assert not np.shares_memory(data.numpy(), np.from_dlpack(data))


# -------------------------------------------------- NumPy -> Tack (import)

@pytest.mark.parametrize("dt", SCALARS, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_import_every_dtype_and_shape(dt, shape):
    host = values(shape, dt.numpy)
    view = tack.from_dlpack(host)
    assert view.dtype is dt and view.shape == shape and view.writable
    np.testing.assert_array_equal(view.numpy(), host)
    if host.size:
        assert view.ptr == host.ctypes.data


@pytest.mark.parametrize("versioned", [True, False])
def test_import_raw_capsules(versioned):
    host = np.arange(5, dtype=np.int32)
    cap = host.__dlpack__(max_version=(1, 0)) if versioned else host.__dlpack__()
    view = tack.from_dlpack(cap)
    host[0] = 9
    assert view.numpy()[0] == 9
    with pytest.raises(ValueError, match="already consumed"):
        tack.from_dlpack(cap)


def test_import_wrong_capsule():
    import ctypes

    ctypes.pythonapi.PyCapsule_New.restype = ctypes.py_object
    ctypes.pythonapi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    cap = ctypes.pythonapi.PyCapsule_New(ctypes.c_void_p(8), b"something", None)
    with pytest.raises(TypeError, match="dltensor"):
        tack.from_dlpack(cap)


def test_import_read_only():
    host = np.arange(4, dtype=np.float32)
    host.flags.writeable = False
    view = tack.from_dlpack(host)  # versioned: NumPy flags it read-only
    assert not view.writable
    with pytest.raises(ValueError, match="read-only"):
        view.fill(1.0)
    with pytest.raises(ValueError):
        tack.copyto(view, [1, 2, 3, 4])


@pytest.mark.parametrize("key", ["T", (slice(None), 0), (slice(None), slice(None, None, 2)), slice(None, None, -1),
                                 (slice(None, None, -2), slice(None, None, -1)), (1, slice(3, 0, -1))])
def test_import_strided_is_a_view(key):
    """A strided NumPy view imports as a strided tack.Array on the same memory
    (it once raised BufferError): reads, writes, kernels and the export back
    all reach the producer's elements."""
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    v = host.T if key == "T" else host[key]
    a = tack.from_dlpack(v)
    assert a.strided and a.shape == v.shape and a.ptr == v.ctypes.data and a.writable
    np.testing.assert_array_equal(a.numpy(), v)  # gathered
    back = np.from_dlpack(a)  # the export carries the strides: the same memory, no copy
    assert back.ctypes.data == v.ctypes.data and back.strides == v.strides
    back[...] = -1.0  # a write through the round trip lands in the producer
    assert (v == -1.0).all() and (host == -1.0).sum() == v.size
    copied = tack.from_dlpack(v, copy=True)  # independent (NumPy's copy, or Tack's gathered one)
    host[...] = 5.0
    np.testing.assert_array_equal(copied.numpy(), np.full(v.shape, -1.0, np.float32))
    c = a.copy()  # a clone gathers it in C order
    assert not c.strided and c.ptr != a.ptr
    np.testing.assert_array_equal(c.numpy(), v)


def test_a_kernel_writes_through_an_imported_strided_view():
    host = np.arange(12.0).reshape(3, 4)
    col, rev = tack.from_dlpack(host[:, 1]), tack.from_dlpack(host[2, ::-1])

    @tack.kernel
    def twice(x):
        for i in range(x.shape[0]):
            x[i] = 2.0 * x[i]

    twice(col)
    twice(rev)
    want = np.arange(12.0).reshape(3, 4)
    want[:, 1] *= 2
    want[2, :] *= 2
    np.testing.assert_array_equal(host, want)
    # A view of the imported view (Tack's own indexing) stays inside its memory.
    np.testing.assert_array_equal(rev[1:3].numpy(), host[2, ::-1][1:3])
    np.testing.assert_array_equal(tack.from_dlpack(host.T)[:, ::2].numpy(), host.T[:, ::2])


def test_an_imported_view_whose_elements_share_memory_is_read_not_written():
    base = np.arange(3.0)
    b = tack.from_dlpack(np.lib.stride_tricks.as_strided(base, shape=(3, 4), strides=(8, 0), writeable=True))
    assert b.strided and b.writable
    np.testing.assert_array_equal(b.numpy(), np.repeat(base[:, None], 4, axis=1))

    @tack.kernel
    def fill2(x, v):
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                x[i, j] = v

    with pytest.raises(ValueError, match="share memory"):  # four writes to one element: refused, saying why
        fill2(b, 1.0)
    with pytest.raises(BufferError, match="strided view"):  # C-order writes refuse any strided view
        b.fill(1.0)
    np.testing.assert_array_equal(base, [0.0, 1.0, 2.0])
    # debug mode refuses it alike (it wrote each element four times); a writable NumPy view as well
    debug = tack.kernel(jit=False)(fill2.__wrapped__)
    overlapping = np.lib.stride_tricks.as_strided(base, shape=(2, 2), strides=(8, 8), writeable=True)
    for view in (b, np.lib.stride_tricks.as_strided(base, shape=(3, 4), strides=(8, 0), writeable=True), overlapping):
        with pytest.raises(ValueError, match="kernel 'fill2' writes to parameter 'x' but elements of the view"):
            debug(view, 1.0)
        with pytest.raises(ValueError, match="kernel 'fill2' writes to parameter 'x' but elements of the view"):
            fill2(view, 1.0)
    np.testing.assert_array_equal(base, [0.0, 1.0, 2.0])
    debug(np.arange(6.0).reshape(3, 2)[:, ::-1], 1.0)  # views whose elements are apart still run
    debug(tack.zeros((3, 4), tack.f32).T, 1.0)
    debug(np.zeros((9, 0)), 1.0)  # no elements: NumPy gives the 9-row axis a zero stride


def test_import_size1_dims_any_stride():
    host = np.arange(4, dtype=np.float32).reshape(4, 1)
    odd = np.lib.stride_tricks.as_strided(host, shape=(1, 4, 1), strides=(1000, 4, 1234))
    view = tack.from_dlpack(odd)
    assert view.shape == (1, 4, 1)
    np.testing.assert_array_equal(view.numpy().ravel(), np.arange(4))


def test_import_byte_offset_slices():
    host = np.arange(10, dtype=np.float64)
    view = tack.from_dlpack(host[3:7])
    assert view.ptr == host.ctypes.data + 3 * 8
    np.testing.assert_array_equal(view.numpy(), [3, 4, 5, 6])


def test_import_unsupported_dtype():
    torch = pytest.importorskip("torch")  # NumPy exports no DLPack dtype that Tack lacks
    with pytest.raises(BufferError, match="float8"):  # bfloat16 is tack.bf16 (test_bf16.py)
        tack.from_dlpack(torch.zeros(3, dtype=torch.float8_e4m3fn))


def test_import_not_a_producer():
    with pytest.raises(TypeError, match="__dlpack__"):
        tack.from_dlpack([1, 2, 3])


def test_import_copy_semantics():
    host = np.arange(6, dtype=np.float32)
    shared = tack.from_dlpack(host, copy=False)
    copied = tack.from_dlpack(host, copy=True)
    default = tack.from_dlpack(host)
    host[0] = 100
    assert shared.numpy()[0] == 100 and default.numpy()[0] == 100
    assert copied.numpy()[0] == 0 and copied.writable
    ro = host.copy()
    ro.flags.writeable = False
    c = tack.from_dlpack(ro, copy=True)
    assert c.writable and c.ptr != ro.ctypes.data


def test_import_device_argument():
    host = np.arange(3, dtype=np.float32)
    assert tack.from_dlpack(host, device="cpu").ptr == host.ctypes.data
    with pytest.raises(ValueError):
        tack.from_dlpack(host, device="tpu")
    with pytest.raises(TypeError):
        tack.from_dlpack(host, copy="yes")


def test_import_lifetime_after_producer_deleted():
    host = np.arange(1000, dtype=np.float64)
    ref = weakref.ref(host)
    view = tack.from_dlpack(host)
    del host
    gc.collect()
    assert ref() is not None  # the managed tensor keeps the NumPy array alive
    np.testing.assert_array_equal(view.numpy(), np.arange(1000))
    del view
    gc.collect()
    assert ref() is None  # ... and lets go with the last Tack array


def test_import_released_on_another_thread():
    host = np.arange(100, dtype=np.float32)
    ref = weakref.ref(host)
    box = [tack.from_dlpack(host)]
    del host
    t = threading.Thread(target=box.clear)
    t.start()
    t.join()
    gc.collect()
    assert ref() is None


def test_import_vec_dtype_with_copyto_view():
    # An (n, 3) import stays (n, 3) f32; the vec3 view comes from array_from_ptr.
    host = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert tack.from_dlpack(host).shape == (4, 3)
    v = tack.array_from_ptr(host, (4,), tack.vec3)
    assert v.shape == (4,) and v.dtype is tack.vec3
    np.testing.assert_array_equal(v.numpy(), host)


# -------------------------------------------------- Tack -> NumPy (export)

@pytest.mark.parametrize("dt", SCALARS, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_export_every_dtype_and_shape(dt, shape):
    src = values(shape, dt.numpy)
    data = tack.array(src, dtype=dt)
    shared = np.from_dlpack(data)
    assert shared.dtype == dt.numpy and shared.shape == shape
    np.testing.assert_array_equal(shared, src)
    if src.size:
        assert shared.ctypes.data == data.ptr


@pytest.mark.parametrize("dt", COMPOSITES, ids=lambda d: d.name)
def test_export_vector_and_matrix_dtypes(dt):
    data = tack.zeros((2, 3), dt)
    shared = np.from_dlpack(data)
    assert shared.shape == (2, 3) + dt.shape and shared.dtype == dt.scalar.numpy
    shared[...] = 1
    np.testing.assert_array_equal(data.numpy(), np.ones((2, 3) + dt.shape))


@pytest.mark.parametrize("max_version", [None, (0, 8), (1, 0), (1, 5), (2, 0)])
def test_export_capsule_kinds(max_version):
    data = tack.zeros(3)
    cap = data.__dlpack__(max_version=max_version)
    versioned = max_version is not None and max_version[0] >= 1
    assert ("dltensor_versioned" if versioned else "dltensor") in repr(cap)
    shared = np.from_dlpack(_Capsule(cap, data))
    assert shared.ctypes.data == data.ptr
    # NumPy makes arrays from legacy capsules read-only: it cannot know better.
    assert shared.flags.writeable == versioned


class _Capsule:
    """A producer handing out one prepared capsule."""

    def __init__(self, cap, owner):
        self.cap, self.owner = cap, owner

    def __dlpack__(self, **kw):
        return self.cap

    def __dlpack_device__(self):
        return self.owner.__dlpack_device__()


def test_export_read_only():
    ro = tack.array(np.arange(4, dtype=np.float32))._readonly_view()
    shared = np.from_dlpack(ro)  # NumPy asks for 1.x: READ_ONLY travels
    assert not shared.flags.writeable
    with pytest.raises(BufferError, match="read-only.*max_version"):
        ro.__dlpack__()  # legacy cannot say read-only
    with pytest.raises(BufferError):
        ro.__dlpack__(max_version=(0, 8))
    c = ro.__dlpack__(copy=True)  # a copy is writable: allowed
    assert "dltensor" in repr(c)
    writable = np.from_dlpack(ro, copy=True)
    assert writable.flags.writeable


def test_export_copy_semantics():
    data = tack.array(np.arange(4, dtype=np.int64))
    copied = np.from_dlpack(data, copy=True)
    shared = np.from_dlpack(data, copy=False)
    shared[0] = 7
    assert copied[0] == 0 and data.numpy()[0] == 7
    assert copied.ctypes.data != data.ptr and shared.ctypes.data == data.ptr


def test_export_marks_array_shared():
    data = tack.zeros(4)
    assert not data.shared
    np.from_dlpack(data)
    assert data.shared


def test_views_made_before_an_export_are_shared_too():
    # the flag is the storage's: a view taken earlier waits as the exported array does
    data = tack.zeros(4)
    view = data._readonly_view()
    assert not view.shared
    np.from_dlpack(data)
    assert view.shared


def test_handing_out_ptr_shares_the_storage():
    data = tack.zeros(4)
    view = data._readonly_view()
    assert not data.shared
    assert data.ptr != 0  # whoever takes the address may read it at once
    assert data.shared and view.shared


def test_export_lifetime_after_tack_handle_deleted():
    data = tack.array(np.arange(100_000, dtype=np.float64))
    shared = np.from_dlpack(data)
    del data
    gc.collect()
    np.testing.assert_array_equal(shared[-3:], [99997, 99998, 99999])
    shared[:] = 1  # still ours to write


def test_export_device_and_stream():
    data = tack.zeros(2)
    assert data.__dlpack_device__() == (1, 0)
    data.__dlpack__(stream=None)
    with pytest.raises(ValueError, match="stream"):
        data.__dlpack__(stream=1)
    with pytest.raises(TypeError):
        data.__dlpack__(stream="s")
    data.__dlpack__(dl_device=(1, 0))
    with pytest.raises(BufferError, match="device"):
        data.__dlpack__(dl_device=(2, 0))
    with pytest.raises(TypeError):
        data.__dlpack__(1)
    with pytest.raises(TypeError, match="unexpected"):
        data.__dlpack__(nonsense=1)
    with pytest.raises(TypeError):
        data.__dlpack__(max_version=1)


def test_unconsumed_capsule_releases_the_array():
    big = tack.zeros(1 << 20, tack.f64)  # 8 MiB
    before = sys.getrefcount(big)
    for _ in range(200):
        big.__dlpack__(max_version=(1, 0))  # dropped: the capsule's destructor deletes
        big.__dlpack__()
    gc.collect()
    assert sys.getrefcount(big) == before  # no capsule kept a reference to the array


# ------------------------------------------------------------ round trips

def test_round_trip_tack_numpy_tack():
    data = tack.array(np.arange(6, dtype=np.float32))
    back = tack.from_dlpack(np.from_dlpack(data))
    assert back.ptr == data.ptr
    back.fill(3.0)
    np.testing.assert_array_equal(data.numpy(), np.full(6, 3.0))


def test_tack_to_tack_uses_the_exchange_api():
    data = tack.array(np.arange(4, dtype=np.float32))
    assert "dlpack_exchange_api" in repr(type(data).__dlpack_c_exchange_api__)
    for c_api in (True, False):
        back = tack._core.from_dlpack(data, c_api=c_api)
        assert back.ptr == data.ptr and back.writable
    ro = data._readonly_view()
    assert not tack.from_dlpack(ro).writable


def _rss_mib():
    with open("/proc/self/statm") as f:
        import os

        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_refcount_and_memory_over_10000_round_trips():
    host = np.zeros(16, dtype=np.float64)
    data = tack.array(host)
    before_host, before_data = sys.getrefcount(host), sys.getrefcount(data)

    def round_trips():
        # Fresh 64 KiB storage each time: one leaked reference anywhere keeps
        # it alive, and 10,000 of them show as ~640 MiB.
        fresh_np = np.zeros(8192, dtype=np.float64)
        a = tack.from_dlpack(fresh_np)  # NumPy -> Tack, versioned
        b = tack.from_dlpack(fresh_np.__dlpack__())  # a legacy capsule
        c = np.from_dlpack(a)  # Tack -> NumPy
        fresh_tack = tack.zeros(8192, tack.f64)
        d = tack.from_dlpack(np.from_dlpack(fresh_tack))  # and back
        e = tack._core.from_dlpack(fresh_tack, c_api=False)  # Tack -> Tack, Python protocol
        f = tack.from_dlpack(fresh_tack)  # Tack -> Tack, C exchange API
        fresh_tack.__dlpack__(max_version=(1, 0))  # capsules never consumed
        fresh_tack.__dlpack__()
        g = tack.from_dlpack(host)
        h = np.from_dlpack(data)
        del a, b, c, d, e, f, g, h

    for _ in range(200):  # warm up the allocators
        round_trips()
    gc.collect()
    rss = _rss_mib()
    for _ in range(10_000):
        round_trips()
    gc.collect()
    assert sys.getrefcount(host) == before_host
    assert sys.getrefcount(data) == before_data
    grown = _rss_mib() - rss
    assert grown < 64, f"memory grew by {grown:.0f} MiB over 10,000 round trips"


def test_deleters_at_interpreter_exit():
    # Arrays that outlive everything, in both directions, at exit: no crash.
    code = textwrap.dedent(
        """
        import numpy as np, tack
        keep_np = np.arange(10.0)
        keep_tack = tack.from_dlpack(keep_np)
        keep_export = np.from_dlpack(tack.array(np.arange(5.0)))
        cycle = [keep_tack]
        cycle.append(cycle)
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# ------------------------------------------------------------ array_from_ptr

def test_from_ptr_buffer_owner_kept_alive():
    owner = np.arange(8, dtype=np.int32)
    ref = weakref.ref(owner)
    view = tack.array_from_ptr(owner, (2, 4), tack.i32)
    assert not view.writable and view.ptr == owner.ctypes.data and view.shared
    del owner
    gc.collect()
    assert ref() is not None
    np.testing.assert_array_equal(view.numpy(), np.arange(8).reshape(2, 4))
    del view
    gc.collect()
    assert ref() is None


def test_from_ptr_checks():
    owner = np.zeros(8, dtype=np.float32)
    with pytest.raises(ValueError, match="needs 64 bytes.*only 32"):
        tack.array_from_ptr(owner, (16,), tack.f32)
    ro = np.zeros(8, dtype=np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        tack.array_from_ptr(ro, (8,), tack.f32, writable=True)
    with pytest.raises(ValueError, match="read-only"):
        tack.array_from_ptr(bytes(32), (8,), tack.f32, writable=True)
    with pytest.raises(BufferError, match="contiguous"):
        tack.array_from_ptr(np.zeros((4, 4), np.float32)[:, 1], (4,), tack.f32)
    with pytest.raises(TypeError, match="buffer"):
        tack.array_from_ptr("not memory", (1,), tack.u8)
    with pytest.raises(TypeError):
        tack.array_from_ptr(True, (1,), tack.u8)
    with pytest.raises(ValueError, match="negative"):
        tack.array_from_ptr(owner, (-1,), tack.f32)


def test_from_ptr_smaller_view_and_other_dtype():
    raw = bytearray(64)
    view = tack.array_from_ptr(raw, (4,), tack.f64, writable=True)
    view.fill(1.5)
    assert np.frombuffer(raw, dtype=np.float64)[:4].tolist() == [1.5] * 4
    assert np.frombuffer(raw, dtype=np.float64)[4:].tolist() == [0.0] * 4
    mv = memoryview(bytearray(12))
    assert tack.array_from_ptr(mv, (1,), tack.vec3).dtype is tack.vec3


def test_from_ptr_int_address():
    owner = np.arange(6, dtype=np.float64)
    view = tack.array_from_ptr(owner.ctypes.data, (6,), tack.f64)
    assert not view.writable
    np.testing.assert_array_equal(view.numpy(), owner)
    w = tack.array_from_ptr(np.uint64(owner.ctypes.data), (3,), tack.f64, writable=True)
    w.fill(2.0)
    assert owner[:3].tolist() == [2.0] * 3
    addr = owner.ctypes.data + 4
    with pytest.raises(ValueError, match=f"0x{addr:x}.*8-byte alignment"):
        tack.array_from_ptr(addr, (2,), tack.f64)
    # An empty view needs no memory at all.
    assert tack.array_from_ptr(0, (0,), tack.f32).size == 0


def test_from_ptr_device_must_exist():
    with pytest.raises(ValueError):
        tack.array_from_ptr(np.zeros(2, np.float32), (2,), tack.f32, device="tpu")


# ------------------------------------------------------------ with kernels

def test_kernel_writes_through_imports_and_exports():
    @tack.kernel
    def scale(out, factor):
        for i in range(out.shape[0]):
            out[i] = out[i] * factor

    host = np.arange(6, dtype=np.float32)
    scale(tack.from_dlpack(host), 2.0)  # an import: the kernel writes NumPy's memory
    np.testing.assert_array_equal(host, np.arange(6) * 2)
    data = tack.array(np.ones(4, dtype=np.float32))
    alias = np.from_dlpack(data)
    scale(data, 3.0)  # an export: NumPy reads the results at once
    np.testing.assert_array_equal(alias, np.full(4, 3.0))
    scale(host, 0.5)  # on CPU a kernel takes the NumPy array directly
    np.testing.assert_array_equal(host, np.arange(6))


def test_kernel_refuses_to_write_read_only_imports():
    @tack.kernel
    def zero(out):
        for i in range(out.shape[0]):
            out[i] = 0.0

    frozen = np.ones(3, dtype=np.float32)
    frozen.flags.writeable = False
    with pytest.raises(Exception, match="read-only"):
        zero(tack.from_dlpack(frozen))
    assert frozen.tolist() == [1.0, 1.0, 1.0]


# ------------------------------------------------- Tack's C exchange table

def test_c_exchange_api_table_via_ctypes():
    import ctypes as C

    class DLTensor(C.Structure):
        _fields_ = [("data", C.c_void_p), ("device_type", C.c_int32), ("device_id", C.c_int32),
                    ("ndim", C.c_int32), ("code", C.c_uint8), ("bits", C.c_uint8), ("lanes", C.c_uint16),
                    ("shape", C.POINTER(C.c_int64)), ("strides", C.POINTER(C.c_int64)),
                    ("byte_offset", C.c_uint64)]

    class Managed(C.Structure):
        _fields_ = [("major", C.c_uint32), ("minor", C.c_uint32), ("manager_ctx", C.c_void_p),
                    ("deleter", C.c_void_p), ("flags", C.c_uint64), ("dl_tensor", DLTensor)]

    set_error_t = C.CFUNCTYPE(None, C.c_void_p, C.c_char_p, C.c_char_p)
    # PYFUNCTYPE: called with the GIL held, as the exchange API requires.
    alloc_t = C.PYFUNCTYPE(C.c_int, C.POINTER(DLTensor), C.POINTER(C.POINTER(Managed)), C.c_void_p, set_error_t)
    from_py_t = C.PYFUNCTYPE(C.c_int, C.py_object, C.POINTER(C.POINTER(Managed)))
    to_py_t = C.PYFUNCTYPE(C.c_int, C.POINTER(Managed), C.POINTER(C.py_object))
    stream_t = C.PYFUNCTYPE(C.c_int, C.c_int32, C.c_int32, C.POINTER(C.c_void_p))

    class API(C.Structure):
        _fields_ = [("major", C.c_uint32), ("minor", C.c_uint32), ("prev", C.c_void_p),
                    ("allocator", alloc_t), ("from_py", from_py_t), ("to_py", to_py_t),
                    ("dltensor_from_py", C.c_void_p), ("stream", stream_t)]

    get = C.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = C.c_void_p, [C.py_object, C.c_char_p]
    api = API.from_address(get(tack.Array.__dlpack_c_exchange_api__, b"dlpack_exchange_api"))
    assert (api.major, api.prev, api.dltensor_from_py) == (1, None, None)

    # Export a Tack array and import it back: same storage.
    data = tack.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    mt = C.POINTER(Managed)()
    assert api.from_py(data, C.byref(mt)) == 0
    t = mt.contents.dl_tensor
    assert (t.ndim, t.code, t.bits, t.shape[0], t.shape[1], t.strides[0]) == (2, 2, 32, 2, 3, 3)
    assert mt.contents.flags == 0 and t.data == data.ptr
    out = C.py_object()
    assert api.to_py(mt, C.byref(out)) == 0
    back = out.value
    assert isinstance(back, tack.Array) and back.ptr == data.ptr and back.shape == (2, 3)
    with pytest.raises(TypeError, match="tack.Array"):
        api.from_py([1, 2], C.byref(mt))

    # The allocator makes a new Tack array of the prototype's dtype and shape.
    shape = (C.c_int64 * 2)(4, 5)
    proto = DLTensor(None, 1, 0, 2, 0, 16, 1, shape, None, 0)  # int16
    errors = []
    set_error = set_error_t(lambda ctx, kind, msg: errors.append((kind, msg)))
    assert api.allocator(C.byref(proto), C.byref(mt), None, set_error) == 0
    assert api.to_py(mt, C.byref(out)) == 0
    assert out.value.shape == (4, 5) and out.value.dtype is tack.i16 and not errors
    bad = DLTensor(None, 1, 0, 2, 5, 32, 1, shape, None, 0)  # complex32: no Tack dtype
    assert api.allocator(C.byref(bad), C.byref(mt), None, set_error) != 0
    assert errors and errors[0][0] == b"BufferError" and b"complex" in errors[0][1]

    stream = C.c_void_p(123)
    assert api.stream(1, 0, C.byref(stream)) == 0 and not stream.value


@pytest.mark.parametrize("addr", [-8, -1, -(1 << 63)])
def test_array_from_ptr_refuses_negative_addresses(addr):
    with pytest.raises(ValueError, match="negative"):
        tack.array_from_ptr(addr, (4,), tack.f32)


def test_array_from_ptr_refuses_null_with_elements():
    with pytest.raises(ValueError, match="NULL"):
        tack.array_from_ptr(0, (4,), tack.f32)
    assert tack.array_from_ptr(0, (0,), tack.f32).shape == (0,)  # nothing to hold


def test_array_from_ptr_refuses_an_extent_past_the_end_of_memory():
    # 16 bytes from 2**64 - 8 would wrap to address 8: refused, naming both.
    with pytest.raises(ValueError, match=r"0xfffffffffffffff8 with 16 bytes runs past the end"):
        tack.array_from_ptr(2**64 - 8, (4,), tack.f32)
    # The last bytes of the address space are an extent that does not wrap.
    assert tack.array_from_ptr(2**64 - 8, (2,), tack.f32).shape == (2,)


def _dlpack_with_byte_offset(owner, byte_offset):
    """A producer whose legacy DLPack capsule is owner's with byte_offset changed."""
    import ctypes as C

    class DLTensor(C.Structure):
        _fields_ = [("data", C.c_void_p), ("device_type", C.c_int32), ("device_id", C.c_int32),
                    ("ndim", C.c_int32), ("code", C.c_uint8), ("bits", C.c_uint8), ("lanes", C.c_uint16),
                    ("shape", C.POINTER(C.c_int64)), ("strides", C.POINTER(C.c_int64)),
                    ("byte_offset", C.c_uint64)]

    cap = owner.__dlpack__()  # NumPy's legacy "dltensor" capsule
    get = C.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = C.c_void_p, [C.py_object, C.c_char_p]
    DLTensor.from_address(get(cap, b"dltensor")).byte_offset = byte_offset

    class Producer:
        def __dlpack__(self, **kw):
            return cap

        def __dlpack_device__(self):
            return (1, 0)

    return Producer()


def test_dlpack_byte_offset_that_wraps_is_refused():
    owner = np.zeros(4, dtype=np.float32)
    with pytest.raises(ValueError, match=r"byte_offset 18446744073709551608 from address 0x[0-9a-f]+ runs past"):
        tack.from_dlpack(_dlpack_with_byte_offset(owner, 2**64 - 8))
    # The same path with an honest offset imports (the helper itself works).
    ok = tack.from_dlpack(_dlpack_with_byte_offset(np.arange(4, dtype=np.float32), 0))
    assert ok.numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
