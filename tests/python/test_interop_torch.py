"""DLPack with PyTorch (CPU) in both directions, including the C exchange
API (``__dlpack_c_exchange_api__``, PyTorch 2.10+).

PyTorch is installed by ``make test`` (the ``peers`` extra); where it cannot
be installed these tests are skipped with the reason."""

import gc
import sys
import timeit
import weakref

import numpy as np
import pytest

import tack

torch = pytest.importorskip("torch", reason="PyTorch is not installed (uv sync --group peers installs it)")

HAS_C_API = hasattr(torch.Tensor, "__dlpack_c_exchange_api__")

DTYPES = [
    (tack.bool, torch.bool), (tack.i8, torch.int8), (tack.i16, torch.int16), (tack.i32, torch.int32),
    (tack.i64, torch.int64), (tack.u8, torch.uint8), (tack.u16, torch.uint16), (tack.u32, torch.uint32),
    (tack.u64, torch.uint64), (tack.f16, torch.float16), (tack.f32, torch.float32), (tack.f64, torch.float64),
]


def ints(n, td):
    t = torch.arange(n) % 2
    return t.to(td)


@pytest.mark.parametrize("pair", DTYPES, ids=lambda p: p[0].name)
@pytest.mark.parametrize("c_api", [True, False], ids=["c_api", "protocol"])
def test_torch_to_tack_every_dtype(pair, c_api):
    tdt, td = pair
    t = ints(12, td).reshape(3, 4)
    a = tack._core.from_dlpack(t, c_api=c_api)
    assert a.dtype is tdt and a.shape == (3, 4) and a.ptr == t.data_ptr() and a.writable
    np.testing.assert_array_equal(a.numpy(), t.numpy())


@pytest.mark.parametrize("pair", DTYPES, ids=lambda p: p[0].name)
def test_tack_to_torch_every_dtype(pair):
    tdt, td = pair
    a = tack.array(np.arange(12).reshape(3, 4) % 2, dtype=tdt)
    t = torch.from_dlpack(a)
    assert t.dtype == td and tuple(t.shape) == (3, 4) and t.data_ptr() == a.ptr
    np.testing.assert_array_equal(t.numpy(), a.numpy())


def test_shared_writes_both_ways():
    t = torch.zeros(4)
    a = tack.from_dlpack(t)
    a.fill(2.0)
    assert t.tolist() == [2.0] * 4
    b = tack.zeros(3)
    u = torch.from_dlpack(b)
    u += 5
    assert b.numpy().tolist() == [5.0] * 3


def test_zero_d_and_size_zero():
    for t in (torch.tensor(3.5), torch.zeros(0, 3), torch.zeros(2, 0)):
        a = tack.from_dlpack(t)
        assert a.shape == tuple(t.shape)
        back = torch.from_dlpack(a)
        assert tuple(back.shape) == tuple(t.shape)
    assert torch.from_dlpack(tack.array(np.float32(2.0))).item() == 2.0


def test_vector_dtypes_travel_as_trailing_dims():
    a = tack.zeros(5, tack.vec3)
    t = torch.from_dlpack(a)
    assert tuple(t.shape) == (5, 3) and t.dtype == torch.float32
    m = torch.from_dlpack(tack.zeros(2, tack.mat22d))
    assert tuple(m.shape) == (2, 2, 2) and m.dtype == torch.float64


@pytest.mark.parametrize("c_api", [True, False], ids=["c_api", "protocol"])
def test_strided_torch_tensors_are_views(c_api):
    """t.T, t[:, 0], t[::2] import as strided views of the tensor's memory
    (they once raised BufferError), through the C exchange API and the
    Python protocol alike; torch.from_dlpack of the view is the same tensor."""
    t = torch.arange(24.0).reshape(4, 6)
    for view in (t.T, t[:, 0], t[::2], t[1:, 1::3], t[::2].T):
        a = tack._core.from_dlpack(view, c_api=c_api)
        assert a.strided and a.shape == tuple(view.shape) and a.ptr == view.data_ptr()
        np.testing.assert_array_equal(a.numpy(), view.numpy())
        back = torch.from_dlpack(a)
        assert back.stride() == view.stride() and back.data_ptr() == view.data_ptr()
        back.add_(100.0)  # a write through the round trip lands in t
        np.testing.assert_array_equal(view.numpy(), a.numpy())
    np.testing.assert_array_equal(t.numpy().ravel()[:1], [100.0 * 4])  # t[0, 0] is in four of the views
    copied = tack._core.from_dlpack(t.T, copy=True, c_api=c_api)
    t.zero_()
    assert not (copied.numpy() == 0).all()


def test_a_kernel_writes_through_a_strided_torch_import():
    t = torch.arange(12.0).reshape(3, 4)
    col = tack.from_dlpack(t[:, 2])

    @tack.kernel
    def negate(x):
        for i in range(x.shape[0]):
            x[i] = -x[i]

    negate(col)
    negate(tack.from_dlpack(t.T)[0])  # a view of the view: column 0
    np.testing.assert_array_equal(t[:, 2].numpy(), [-2.0, -6.0, -10.0])
    np.testing.assert_array_equal(t[:, 0].numpy(), [-0.0, -4.0, -8.0])


def test_lazy_views_are_still_refused_when_strided():
    z = torch.arange(8.0).reshape(2, 4).to(torch.complex64)
    with pytest.raises(BufferError, match="conjugate view.*resolve_conj"):
        tack.from_dlpack(z.T.conj())
    with pytest.raises(BufferError, match="negative view.*resolve_neg"):
        tack.from_dlpack(torch.ops.aten._neg_view(torch.arange(8.0).reshape(2, 4)[:, ::2]))


def test_contiguous_and_unit_extent_strides_stay_c_order():
    t = torch.arange(12.0).reshape(3, 4)
    a = tack.from_dlpack(t.T.contiguous())
    assert not a.strided
    np.testing.assert_array_equal(a.numpy(), t.T.numpy())
    # Extent-1 dimensions may have any stride.
    u = torch.arange(4.0).reshape(4, 1).expand(4, 1)
    assert tack.from_dlpack(u[:, :1]).shape == (4, 1)


def test_storage_offset():
    t = torch.arange(10.0)[3:]
    a = tack.from_dlpack(t)
    assert a.ptr == t.data_ptr()
    np.testing.assert_array_equal(a.numpy(), np.arange(3.0, 10.0))


def test_copy_semantics():
    t = torch.arange(4.0)
    for c_api in (True, False):
        shared = tack._core.from_dlpack(t, copy=False, c_api=c_api)
        copied = tack._core.from_dlpack(t, copy=True, c_api=c_api)
        assert shared.ptr == t.data_ptr() and copied.ptr != t.data_ptr()
    a = tack.zeros(3)
    assert torch.from_dlpack(a, copy=True).data_ptr() != a.ptr
    assert torch.from_dlpack(a, copy=False).data_ptr() == a.ptr


def _versioned_flags(cap):
    import ctypes

    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    ptr = get(cap, b"dltensor_versioned")
    # DLManagedTensorVersioned: version (8 bytes), manager_ctx, deleter, flags.
    return ctypes.c_uint64.from_address(ptr + 8 + 2 * ctypes.sizeof(ctypes.c_void_p)).value


def test_read_only_tack_to_torch():
    ro = tack.zeros(3)._readonly_view()
    cap = ro.__dlpack__(max_version=(1, 0))
    assert _versioned_flags(cap) & 1  # DLPACK_FLAG_BITMASK_READ_ONLY
    with pytest.raises(BufferError, match="read-only"):
        torch.utils.dlpack.from_dlpack(ro.__dlpack__())  # legacy: refused
    # PyTorch has no read-only tensors: given the flag it still aliases the
    # memory (its choice, made on its side), so writes through it are the
    # caller's responsibility.
    t = torch.from_dlpack(ro)
    assert t.data_ptr() == ro.ptr


def test_read_only_torch_to_tack():
    wrapper = getattr(torch.utils.dlpack, "ReadOnlyTensorWrapper", None)
    if wrapper is None:
        pytest.skip(f"PyTorch {torch.__version__} has no read-only DLPack export")
    t = torch.arange(4.0)
    for c_api in (True, False):
        a = tack._core.from_dlpack(wrapper(t), c_api=c_api)
        assert not a.writable and a.ptr == t.data_ptr()
    # The wrapper refuses is_conj()/is_neg() (only its DLPack methods run);
    # its lazy views are still refused, read from its dispatch keys.
    z = torch.tensor([1 + 2j, 3 - 4j])
    for view, fix in ((z.conj(), "resolve_conj"), (torch.ops.aten._neg_view(t), "resolve_neg")):
        for c_api in (True, False):
            with pytest.raises(BufferError, match=fix):
                tack._core.from_dlpack(wrapper(view), c_api=c_api)
        out = np.zeros(2, np.complex64 if view.is_complex() else np.float32)
        for jit in (True, False):
            with pytest.raises(ValueError, match=f"argument 'src'.*{fix}"):
                tack.kernel(_copy, jit=jit)(wrapper(view), out)
        assert not out.any()


def _copy(src, dst):
    for i in range(dst.shape[0]):
        dst[i] = src[i]


def test_lifetimes():
    t = torch.arange(1000.0)
    a = tack.from_dlpack(t)
    storage_ptr = t.data_ptr()
    del t
    gc.collect()
    assert a.ptr == storage_ptr and a.numpy()[-1] == 999.0  # the tensor's storage lives on
    b = tack.array(np.arange(5.0))
    u = torch.from_dlpack(b)
    del b
    gc.collect()
    assert u.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_legacy_capsules():
    t = torch.arange(3.0)
    cap = torch.utils.dlpack.to_dlpack(t)
    a = tack.from_dlpack(cap)
    assert a.ptr == t.data_ptr()
    b = tack.zeros(2)
    assert torch.utils.dlpack.from_dlpack(b.__dlpack__()).data_ptr() == b.ptr


@pytest.mark.skipif(not HAS_C_API, reason=f"PyTorch {torch.__version__} has no __dlpack_c_exchange_api__")
def test_c_exchange_api_is_used_for_torch():
    # The C path takes no capsule: a producer whose __dlpack__ fails still works.
    class NoProtocol(torch.Tensor):
        def __dlpack__(self, *a, **k):
            raise AssertionError("the Python protocol was used")

    t = torch.arange(4.0).as_subclass(NoProtocol)
    a = tack.from_dlpack(t)
    assert a.ptr == t.data_ptr()
    with pytest.raises(AssertionError):
        tack._core.from_dlpack(t, c_api=False)


def test_refcounts_over_10000_round_trips():
    t = torch.arange(16.0)
    a = tack.array(np.arange(16.0))
    rt, ra = sys.getrefcount(t), sys.getrefcount(a)
    wt = weakref.ref(t)
    for _ in range(10_000):
        x = tack.from_dlpack(t)
        y = tack._core.from_dlpack(t, c_api=False)
        z = torch.from_dlpack(a)
        w = tack.from_dlpack(torch.from_dlpack(tack.zeros(64)))
        del x, y, z, w
    gc.collect()
    assert sys.getrefcount(t) == rt and sys.getrefcount(a) == ra and wt() is t


def test_exchange_costs(record_property):
    """Per-exchange cost of the Python protocol and of the C exchange API
    (printed with -s; kept as properties in JUnit XML)."""
    t = torch.arange(16.0)
    a = tack.zeros(16)
    n = 20_000
    rows = {
        "torch->tack C exchange API": lambda: tack.from_dlpack(t),
        "torch->tack Python protocol": lambda: tack._core.from_dlpack(t, c_api=False),
        "tack->tack C exchange API": lambda: tack.from_dlpack(a),
        "tack->tack Python protocol": lambda: tack._core.from_dlpack(a, c_api=False),
        "tack->torch (torch.from_dlpack)": lambda: torch.from_dlpack(a),
        "tack->numpy (np.from_dlpack)": lambda: np.from_dlpack(a),
    }
    for name, fn in rows.items():
        if "C exchange" in name and name.startswith("torch") and not HAS_C_API:
            continue
        cost = min(timeit.repeat(fn, number=n, repeat=3)) / n * 1e9
        record_property(name, f"{cost:.0f} ns")
        print(f"{name:34s} {cost:8.0f} ns per exchange")
        # An exchange is a struct and a refcount (a few hundred ns); tens of
        # microseconds would mean a copy or a Python-level fallback crept in.
        # PyTorch's own Python side (tensor.__dlpack__, torch.from_dlpack)
        # takes 4-7 us here and over 20 us when the machine is busy, so the
        # rows where it runs have more room.
        limit = 100_000 if name in ("torch->tack Python protocol", "tack->torch (torch.from_dlpack)") else 20_000
        assert 0 < cost < limit, f"{name}: {cost:.0f} ns per exchange"


def test_kernel_on_a_torch_tensor():
    @tack.kernel
    def iota(out):
        for i in range(out.shape[0]):
            out[i] = float(i)

    t = torch.zeros(5)
    iota(tack.from_dlpack(t))
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize("c_api", [True, False])
def test_tensor_requiring_grad_is_refused_on_every_path(c_api):
    # PyTorch's __dlpack__ refuses it; the C exchange API would not ask, so
    # Tack sends such a tensor through __dlpack__ and PyTorch's rule holds.
    t = torch.ones(4, requires_grad=True)
    with pytest.raises((BufferError, RuntimeError), match="require"):
        tack._core.from_dlpack(t, c_api=c_api)
    assert tack.from_dlpack(t.detach()).shape == (4,)
