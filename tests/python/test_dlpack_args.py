"""Kernel arguments from any DLPack producer: PyTorch tensors and JAX arrays
passed straight to a kernel are used in place, as tack.from_dlpack would
import them (zero copy); read-only producers stay read-only; a tensor on
another device is refused before its __dlpack__ runs."""

import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import tack  # noqa: E402


@tack.kernel
def add_one(src, dst):
    for i in range(dst.shape[0]):
        dst[i] = src[i] + 1.0


@tack.kernel
def scale(x, a):
    for i in range(x.shape[0]):
        x[i] *= a


class Producer:
    """A DLPack producer that is nothing else: no buffer protocol, no
    __array__ -- only __dlpack__ and __dlpack_device__, delegated."""

    def __init__(self, inner, legacy=False):
        self.inner = inner
        self.legacy = legacy
        self.calls = 0

    def __dlpack__(self, **kw):
        self.calls += 1
        if self.legacy:
            if kw:
                raise TypeError("__dlpack__() takes no keyword arguments")  # a pre-1.0 producer
            return self.inner.__dlpack__()
        return self.inner.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.inner.__dlpack_device__()


def test_a_producer_is_used_in_place():
    x = np.arange(4, dtype=np.float32)
    p = Producer(x)
    scale(p, 3.0)
    np.testing.assert_array_equal(x, [0, 3, 6, 9])
    assert p.calls == 1


def test_a_legacy_producer_is_used_in_place():
    x = np.arange(3, dtype=np.float64)
    scale(Producer(x, legacy=True), 2.0)
    np.testing.assert_array_equal(x, [0, 2, 4])


def test_a_read_only_producer_stays_read_only():
    x = np.arange(4, dtype=np.float32)
    x.flags.writeable = False
    out = np.zeros(4, np.float32)
    add_one(Producer(x), out)  # reading is fine
    np.testing.assert_array_equal(out, [1, 2, 3, 4])
    with pytest.raises(ValueError, match=r"parameter 'x'.*\(a Producer\) is read-only"):
        scale(Producer(x), 2.0)
    np.testing.assert_array_equal(x, [0, 1, 2, 3])


def _ctypes_producer(**kw):
    """A read-only DLPack 1.x tensor of four doubles whose deleter is a Python
    function behind a ctypes pointer (tests/python/_dlpack_producer.py)."""
    from _dlpack_producer import DLPACK_FLAG_BITMASK_READ_ONLY, Producer

    return Producer(np.arange(4.0).tobytes(), shape=(4,), flags=DLPACK_FLAG_BITMASK_READ_ONLY, **kw)


def test_a_read_only_producer_with_a_python_deleter_is_refused_cleanly():
    # The refusal's ValueError was pending when the call dropped the imported
    # argument, whose deleter (a ctypes callback) cannot run with an exception
    # set: a SystemError replaced the refusal and the deleter never ran.
    p, q = _ctypes_producer(), _ctypes_producer()
    try:
        with pytest.raises(ValueError, match=r"scale\(\) writes to parameter 'x'.*\(a Producer\) is read-only"):
            scale(p, 2.0)
        assert p.deleted == 1 and p.buffer is None  # its memory was released, once
        out = np.zeros(4)
        add_one(q, out)  # reading it is fine
        np.testing.assert_array_equal(out, [1, 2, 3, 4])
        assert q.deleted == 1
    finally:
        p.forget()
        q.forget()


def test_an_array_with_a_python_deleter_dropped_while_an_exception_propagates():
    # The array imported for the first argument dies while the ZeroDivisionError
    # unwinds: its deleter runs once and the error arrives unchanged (it was a
    # SystemError, and then a crash).
    p = _ctypes_producer()

    def take(a, b):
        raise AssertionError("not reached")

    try:
        with pytest.raises(ZeroDivisionError):
            take(tack.from_dlpack(p), 1 / 0)
        assert p.deleted == 1
    finally:
        p.forget()


def test_a_raising_python_deleter_neither_loses_nor_replaces_the_refusal():
    p = _ctypes_producer(raise_in_deleter=True)
    seen = []
    hook, sys.unraisablehook = sys.unraisablehook, seen.append
    try:
        with pytest.raises(ValueError, match="parameter 'x'.*read-only"):
            scale(p, 2.0)
    finally:
        sys.unraisablehook = hook
        p.forget()
    assert p.deleted == 1
    assert [type(u.exc_value) for u in seen] == [RuntimeError]  # reported, not raised


def test_a_producer_on_another_device_is_refused_before_its_dlpack_runs():
    class OnCuda:
        def __dlpack_device__(self):
            return (2, 0)  # kDLCUDA, device 0

        def __dlpack__(self, **kw):
            raise AssertionError("__dlpack__ must not be called")

    # Alone: Tack either has no such device, or it is another device than
    # the CPU array that follows.
    with pytest.raises(ValueError, match=r"argument '(src|dst)' of add_one\(\)"):
        add_one(OnCuda(), np.zeros(2, np.float32))
    with pytest.raises(ValueError, match=r"argument 'dst' of add_one\(\).*(one device|cannot use)") as e:
        add_one(np.zeros(2, np.float32), OnCuda())
    assert "OnCuda" in str(e.value)


def test_a_producer_with_an_unsupported_device_type_is_refused():
    class OnVulkan(Producer):
        def __dlpack_device__(self):
            return (7, 0)  # kDLVulkan

    with pytest.raises(ValueError, match=r"argument 'x' of scale\(\).*DLPack device \(7, 0\).*kDLVulkan"):
        scale(OnVulkan(np.zeros(2)), 1.0)


def test_a_bad_dlpack_device_answer_is_refused():
    class Confused(Producer):
        def __dlpack_device__(self):
            return "cpu"

    class Broken(Producer):
        def __dlpack_device__(self):
            raise RuntimeError("no device today")

    with pytest.raises(TypeError, match=r"argument 'x' of scale\(\).*dl_device must be a \(device_type, device_id\)"):
        scale(Confused(np.zeros(2)), 1.0)
    with pytest.raises(RuntimeError, match=r"argument 'x' of scale\(\).*no device today"):
        scale(Broken(np.zeros(2)), 1.0)


def test_non_contiguous_producers_are_scaled_in_place():
    base = np.arange(8.0)
    scale(Producer(base[::2]), 2.0)
    np.testing.assert_array_equal(base, [0, 1, 4, 3, 8, 5, 12, 7])


def test_unsupported_objects_list_every_accepted_kind():
    with pytest.raises(TypeError) as e:
        scale(object(), 2.0)
    msg = str(e.value)
    for words in ("argument 'x' of scale()", "tack.Array", "NumPy array", "buffer object",
                  "DLPack producer", "__dlpack__", "PyTorch tensor", "JAX array", "tack.from_dlpack",
                  "(got object)"):
        assert words in msg, words
    with pytest.raises(TypeError, match="DLPack producer"):
        scale(np.zeros(2), "2.0")  # a str is neither a scalar nor an array


# ------------------------------------------------------------------ PyTorch
def test_torch_tensors_are_used_in_place():
    torch = pytest.importorskip("torch")
    t = torch.arange(5, dtype=torch.float32)
    ptr = t.data_ptr()
    out = torch.zeros(5)
    add_one(t, out)
    assert out.tolist() == [1, 2, 3, 4, 5]
    scale(t, 2.0)
    assert t.tolist() == [0, 2, 4, 6, 8] and t.data_ptr() == ptr


def test_torch_tensors_share_specializations_with_tack_arrays():
    torch = pytest.importorskip("torch")

    @tack.kernel
    def twice(x):
        for i in range(x.shape[0]):
            x[i] *= 2

    twice(tack.ones(3, tack.f32))
    twice(torch.ones(3, dtype=torch.float32))
    twice(np.ones(3, np.float32))
    assert twice.specializations == 1


def test_torch_mixed_with_numpy_and_tack_arrays():
    torch = pytest.importorskip("torch")
    t = torch.arange(3, dtype=torch.float64)
    out = tack.zeros(3, tack.f64)
    add_one(t, out)
    np.testing.assert_array_equal(out.numpy(), [1, 2, 3])
    n = np.zeros(3)
    add_one(out, n)
    add_one(n, t)
    assert t.tolist() == [3, 4, 5]


def test_torch_rules_still_apply():
    torch = pytest.importorskip("torch")
    t = torch.ones(4, requires_grad=True)
    with pytest.raises(Exception, match=r"argument 'x' of scale\(\).*(grad|detach)"):
        scale(t, 2.0)
    u = torch.arange(8.0)
    scale(u[::2], 2.0)  # a strided tensor, scaled in place
    np.testing.assert_array_equal(u.numpy(), [0, 1, 4, 3, 8, 5, 12, 7])


def copy_c64(src, dst):
    for i in range(dst.shape[0]):
        dst[i] = src[i]


def _lazy_views(torch):
    """(tensor, the bit's resolving method) for each kind of lazy view."""
    z = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex64)
    r = torch.tensor([1.0, 2.0], dtype=torch.float32)
    return [
        (z.conj(), "resolve_conj"),
        (torch.ops.aten._neg_view(r), "resolve_neg"),
        (torch.ops.aten._neg_view(z), "resolve_neg"),
    ]


@pytest.mark.parametrize("jit", [True, False])
def test_torch_conjugate_and_negative_views_are_refused_as_arguments(jit):
    # Their storage holds the values before the bit applies: read as they
    # are, t.conj() of 1+2j arrived as 1+2j, _neg_view of 1.0 as 1.0.
    torch = pytest.importorskip("torch")
    k = tack.kernel(copy_c64, jit=jit)
    for view, fix in _lazy_views(torch):
        out = np.zeros(2, np.complex64 if view.is_complex() else np.float32)
        with pytest.raises(ValueError, match=rf"argument 'src' of copy_c64\(\).*{fix}\(\)"):
            k(view, out)
        assert not out.any()
        k(getattr(view, fix)(), out)  # resolved: the values the tensor shows
        np.testing.assert_array_equal(out, view.resolve_conj().resolve_neg().numpy())
    # (a BufferError, as a kernel argument a ValueError like every refused
    # argument); a view written by the kernel would be written wrong as well
    dst = torch.zeros(2, dtype=torch.complex64).conj()
    with pytest.raises(ValueError, match="argument 'dst'.*resolve_conj"):
        k(np.ones(2, np.complex64), dst)


@pytest.mark.parametrize("c_api", [True, False])
def test_torch_conjugate_and_negative_views_are_refused_by_from_dlpack(c_api):
    torch = pytest.importorskip("torch")
    for view, fix in _lazy_views(torch):
        for copy in (None, True):
            with pytest.raises(BufferError, match=rf"Tensor is a (conjugate|negative) view.*\.{fix}\(\)"):
                tack._core.from_dlpack(view, c_api=c_api, copy=copy)
        resolved = tack._core.from_dlpack(getattr(view, fix)(), c_api=c_api)
        np.testing.assert_array_equal(resolved.numpy(), view.resolve_conj().resolve_neg().numpy())
    z = torch.tensor([1 + 2j], dtype=torch.complex128)
    assert tack.from_dlpack(z.conj().resolve_conj()).numpy()[0] == 1 - 2j
    # the imaginary part of a conjugate view is a negative view: refused for
    # the bit before its strides are looked at
    with pytest.raises(BufferError, match="resolve_neg"):
        tack._core.from_dlpack(z.conj().imag, c_api=c_api)


def test_cuda_tensor_to_a_cpu_call_is_refused():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    t = torch.ones(4, device="cuda")
    with pytest.raises(ValueError, match=r"argument 'dst'.*cuda.*one device"):
        add_one(np.ones(4, np.float32), t)


# ---------------------------------------------------------------------- JAX
def test_jax_arrays_are_read_in_place():
    jnp = pytest.importorskip("jax.numpy")
    j = jnp.arange(4, dtype=jnp.float32)
    out = np.zeros(4, np.float32)
    add_one(j, out)
    np.testing.assert_array_equal(out, [1, 2, 3, 4])


def test_writing_a_jax_array_is_refused():
    jnp = pytest.importorskip("jax.numpy")
    j = jnp.arange(4, dtype=jnp.float32)
    with pytest.raises(ValueError, match=r"scale\(\) writes to parameter 'x'.*jax.*read-only"):
        scale(j, 2.0)
    np.testing.assert_array_equal(np.asarray(j), [0, 1, 2, 3])


def test_jax_arrays_import_read_only():
    # JAX exports legacy capsules, which cannot say "read-only"; its arrays are
    # immutable all the same, so a shared import is read-only ...
    jnp = pytest.importorskip("jax.numpy")
    j = jnp.arange(3, dtype=jnp.float32)
    a = tack.from_dlpack(j)
    assert not a.writable
    with pytest.raises(ValueError, match="read-only"):
        a.fill(1.0)
    # ... and a copy is the caller's own.
    assert tack.from_dlpack(j, copy=True).writable
