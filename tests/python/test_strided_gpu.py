"""Strided views as kernel arguments in the GPU dialects.

A strided argument (a NumPy view, a strided DLPack tensor, or a view of a
Tack array: a[::2], m[:, 0], a[::-1], m.T) gets a build of its own in every
dialect that indexes it with its element strides, passed as kernel
arguments after its extents; OpenCL also passes element (0, ..., 0)'s offset
into the buffer, since a cl_mem is a handle the host cannot offset.  Here:

  - OpenCL runs for real (PoCL on this machine's CPU when it is installed):
    views of Tack arrays on the device, read and written in place, against
    NumPy, in both memory modes (shared virtual memory, where a view is an
    address, and cl_mem buffers, where it is the buffer and an offset);
  - CUDA and HIP sources compile (NVRTC, hiprtc in a process of its own) and
    CUDA's runs in the CPU emulation of its grid (_cuda_emulate.py), on NumPy
    views in place;
  - MSL type-checks with clang++ against tests/msl and runs in its emulation
    (_msl_emulate.py), in place;
  - a contiguous argument's source has no stride in it (the byte-for-byte
    comparison with the previous build is in the commit that made this).
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tack
from tack import _core

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _cuda_emulate  # noqa: E402
import _msl  # noqa: E402
import _msl_emulate  # noqa: E402
from test_strided_args import total, update, update2, update3  # noqa: E402 (the same kernels, CPU-checked there)


@tack.func
def twice(x, i):
    return 2 * x[i]


@tack.kernel
def via_func(out, x):
    for i in range(out.shape[0]):
        out[i] = twice(x, i) + 1


def _has_opencl():
    try:
        return any(str(d).startswith("opencl") for d in tack.devices())
    except Exception:  # noqa: BLE001 -- no driver: no device
        return False


needs_opencl = pytest.mark.skipif(not _has_opencl(), reason="no OpenCL device (Debian: pocl-opencl-icd)")

VIEWS_1D = [("m[:, 0]", lambda m, a: m[:, 0]), ("m[:, 3]", lambda m, a: m[:, 3]), ("m[2]", lambda m, a: m[2]),
            ("a[::2]", lambda m, a: a[::2]), ("a[::-1]", lambda m, a: a[::-1]),
            ("a[15:2:-3]", lambda m, a: a[15:2:-3]), ("m.T[1]", lambda m, a: m.T[1])]
VIEWS_3D = [lambda b: b[::2, ::-1, 1::3], lambda b: b.transpose(2, 0, 1)[::-1],
            lambda b: b.transpose(2, 1, 0)[1:, ::3, :], lambda b: b[1:, 2:5, ::-2]]


def bases(dt):
    return (np.arange(7 * 9) % 13).astype(dt).reshape(7, 9), (np.arange(20) % 11).astype(dt)


# ------------------------------------------------------------------ OpenCL
@needs_opencl
@pytest.mark.parametrize("dt", [np.float32, np.int32, np.float64])
def test_opencl_views_of_device_arrays_are_read_and_written_in_place(dt):
    for name, view in VIEWS_1D:
        m, a = bases(dt)
        M, A = tack.array(m, device="opencl"), tack.array(a, device="opencl")
        v = view(M, A)
        n = v.shape[0]
        src = (np.arange(n) * 3 % 7).astype(dt)
        view(m, a)[...] = 2 * src + 1
        update(v, tack.array(src, device="opencl"))
        np.testing.assert_array_equal(M.numpy(), m, err_msg=name)
        np.testing.assert_array_equal(A.numpy(), a, err_msg=name)
        np.testing.assert_array_equal(v.numpy(), view(m, a), err_msg=name)  # a strided view copied out
        out = tack.zeros(n, dt, device="opencl")  # and read: the view as the input
        update(out, v)
        np.testing.assert_array_equal(out.numpy(), 2 * view(m, a) + 1, err_msg=name)


@needs_opencl
def test_opencl_transposes_and_3d_views():
    m = (np.arange(6 * 5) % 17).astype(np.float32).reshape(6, 5)
    M = tack.array(m, device="opencl")
    update2(M.T, tack.array(m.T.copy(), device="opencl"))  # the transpose written in place from a copy
    want = m.copy()
    want.T[...] = m.T * 3 + np.arange(5)[:, None] - np.arange(6)[None, :]
    np.testing.assert_array_equal(M.numpy(), want)
    base = (np.arange(6 * 7 * 8) % 23).astype(np.float32).reshape(6, 7, 8)
    for view in VIEWS_3D:
        B = tack.array(base, device="opencl")
        v, vn = view(B), view(base.copy())
        x = (np.arange(vn.size) % 5).astype(np.float32).reshape(vn.shape)
        i, j, k = np.indices(vn.shape)
        want = base.copy()
        view(want)[...] = x + 100 * i + 10 * j + k
        update3(v, tack.array(x, device="opencl"))
        np.testing.assert_array_equal(B.numpy(), want)
        out = tack.zeros(vn.shape, np.float32, device="opencl")
        update3(out, v)  # a strided input
        np.testing.assert_array_equal(out.numpy(), view(want) + 100 * i + 10 * j + k)


@needs_opencl
def test_opencl_two_columns_of_one_buffer_and_a_reduction():
    m = np.arange(40.0, dtype=np.float32).reshape(8, 5)
    M = tack.array(m, device="opencl")
    update(M[:, 0], M[:, 1])  # one cl_mem, two offsets: apart, so no alias refusal
    m[:, 0] = 2 * m[:, 1] + 1
    np.testing.assert_array_equal(M.numpy(), m)
    out = tack.zeros(1, np.float32, device="opencl")
    total(M[::-2, 4], out)  # rows 7, 5, 3, 1 of column 4
    assert out.numpy()[0] == m[::-2, 4].sum()
    with pytest.raises(ValueError, match="'out' and 'x'.*share memory"):
        update(M[:, 2], M[::2, 2])


@needs_opencl
def test_opencl_contiguous_arguments_keep_their_source():
    x, y = np.zeros(8, np.float32), np.zeros(8, np.float32)
    plain = update.generated_source(x, y, target="opencl")
    assert not re.search(r"\ba\d+_[to]\b|\ba\d+_t\d", plain)
    strided = update.generated_source(np.zeros(16, np.float32)[::2], y, target="opencl")
    assert "long a0_t0, long a0_o" in strided and "a0 += a0_o;" in strided and "a1_t0" not in strided
    assert "a0[(v0_i) * a0_t0]" in strided


def _exported_tensor(cap):
    """The DLTensor inside a versioned DLPack capsule (read, not consumed)."""
    import ctypes

    from _dlpack_producer import DLManagedTensorVersioned

    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return DLManagedTensorVersioned.from_address(get(cap, b"dltensor_versioned")).dl_tensor


@needs_opencl
def test_opencl_strided_views_through_dlpack():
    """tack.from_dlpack of a strided host view onto the device: shared in
    place where the device's memory is the host's (SVM) and the view lies in
    Tack's allocation, gathered into a copy otherwise; a device view exports
    its strides (SVM: as host memory; buffers: the cl_mem and a byte_offset),
    and .copy() / .to('cpu') gather it."""
    DEV = next(str(d) for d in tack.devices() if str(d).startswith("opencl"))
    h = np.arange(7 * 9, dtype=np.float32).reshape(7, 9)
    m = tack.array(h, device=DEV)
    svm = m.__dlpack_device__() == (1, 0)
    for name, view in VIEWS_1D:
        v = view(m, m.reshape(-1)[:20])
        want = view(h, h.reshape(-1)[:20])
        np.testing.assert_array_equal(v.copy().numpy(), want, err_msg=name)
        np.testing.assert_array_equal(v.to("cpu").numpy(), want, err_msg=name)
        t = _exported_tensor(v.__dlpack__(max_version=(1, 0)))
        isz = 4
        if svm:  # host memory: the address of element (0, ..., 0)
            assert (t.device.device_type, t.byte_offset) == (1, 0) and t.data == v.ptr, name
        else:  # the buffer's handle and the view's offset into it
            assert t.device.device_type == 4 and t.data == m.ptr, name
            assert t.byte_offset == (int(np.asarray(want).ctypes.data) - h.ctypes.data) // isz * isz, name
        assert t.ndim == 1 and t.shape[0] == want.shape[0] and t.strides[0] * isz == want.strides[0], name
    host = np.arange(12.0, dtype=np.float32)[::-3]  # NumPy's memory, not the device's
    c = tack.from_dlpack(host, device=DEV)  # copied: gathered in C order
    assert not c.strided and c.device == DEV
    np.testing.assert_array_equal(c.numpy(), host)
    if svm:
        alias = np.from_dlpack(m[:, 1])  # NumPy on the device's memory, strided
        back = tack.from_dlpack(alias, device=DEV, copy=False)  # shared again: the same view
        assert back.strided and back.ptr == m[:, 1].ptr and back.device == DEV
        update(back, m[:, 2])
        rev = tack.from_dlpack(np.from_dlpack(m[::-1, ::-2]), device=DEV, copy=False)  # negative strides
        np.testing.assert_array_equal(rev.numpy(), m.numpy()[::-1, ::-2])
        h[:, 1] = 2 * h[:, 2] + 1
        np.testing.assert_array_equal(m.numpy(), h)
    with pytest.raises(BufferError, match="without a copy.*(has no shared virtual memory|not in shared virtual)"):
        tack.from_dlpack(host, device=DEV, copy=False)


@needs_opencl
def test_opencl_buffers_pass_the_offset_of_the_first_element():
    """The tests above again with cl_mem buffers (TACK_OPENCL_SVM=0; PoCL's default is shared
    virtual memory, where a view is an address): a view inside a buffer is the buffer and an
    element offset the kernel adds."""
    env = dict(os.environ, TACK_OPENCL_SVM="0")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                           "opencl and not offset_of_the_first"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and " passed" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "skipped" not in proc.stdout, proc.stdout[-500:]


# ------------------------------------------------------------ CUDA and HIP
def _nvrtc_available():
    return hasattr(_core, "_nvrtc_version") and _core._nvrtc_version() > 0


def _views_np(dt):
    m, a = bases(dt)
    return [(name, view(m.copy(), a.copy())) for name, view in VIEWS_1D]


@pytest.mark.skipif(not _cuda_emulate.available(), reason="no C++ compiler to emulate CUDA with")
def test_cuda_strided_views_run_in_the_emulation():
    for name, v in _views_np(np.float64):
        src_in = (np.arange(v.shape[0]) % 7).astype(np.float64)
        want = 2 * src_in + 1
        source = update.generated_source(v, src_in, target="cuda")
        assert ("int64_t a0_t0;" in source) == (not v.flags.c_contiguous) and "a1_t0" not in source, name
        rec = _cuda_emulate.run(source, [v, src_in])
        assert rec[0] == 0, (name, rec)
        np.testing.assert_array_equal(v, want, err_msg=name)
    base = (np.arange(6 * 7 * 8) % 23).astype(np.float32).reshape(6, 7, 8)
    for view in VIEWS_3D:
        b = base.copy()
        x = np.ones(view(b).shape, np.float32)
        i, j, k = np.indices(x.shape)
        source = update3.generated_source(view(b), x, target="cuda")
        assert _cuda_emulate.run(source, [view(b), x])[0] == 0
        np.testing.assert_array_equal(view(b), 1 + 100 * i + 10 * j + k)


@pytest.mark.skipif(not _nvrtc_available(), reason="NVRTC (libnvrtc) is not installed")
def test_cuda_strided_sources_compile_with_nvrtc():
    m = np.zeros((4, 6), np.float32)
    for source in (update.generated_source(m[:, 1], m[0, :4].copy(), target="cuda"),
                   update2.generated_source(m.T, m.T, target="cuda"),
                   update3.generated_source(np.zeros((3, 4, 5))[::-1, :, ::2], np.zeros((3, 4, 3)), target="cuda")):
        assert ".entry" in _core._nvrtc_compile(source, "sm_80")


_HIPRTC = ("import sys\nfrom tack import _core\n"
           "sys.stdout.buffer.write(_core._hiprtc_compile(sys.stdin.read(), sys.argv[1]))\n")


@pytest.mark.skipif(not (hasattr(_core, "_hiprtc_version") and _core._hiprtc_version() > 0),
                    reason="hiprtc is not installed (Debian: libamdhip64-dev)")
def test_hip_strided_source_compiles_with_hiprtc():
    m = np.zeros((4, 6), np.float32)
    source = update2.generated_source(m.T, m[:, ::-1].T, target="hip")
    assert "const int64_t a0_t1 = P.a0_t1;" in source
    # a process of its own: hiprtc and an OpenCL driver do not share one
    proc = subprocess.run([sys.executable, "-c", _HIPRTC, "gfx90a"], input=source.encode(), capture_output=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    assert proc.stdout.startswith(b"\x7fELF")


# ------------------------------------------------------------------- Metal
needs_clang = pytest.mark.skipif(_msl.clang() is None or not _msl.has_float16(),
                                 reason="clang++ with _Float16 is not installed (Debian: clang)")


@needs_clang
def test_msl_strided_views_check_and_run_in_the_emulation():
    m = (np.arange(7 * 9) % 13).astype(np.float32).reshape(7, 9)
    a = np.arange(20, dtype=np.float32)
    for name, view in VIEWS_1D:
        mm, aa = m.copy(), a.copy()
        v = view(mm, aa)
        src_in = (np.arange(v.shape[0]) % 7).astype(np.float32)
        source = update.generated_source(v, src_in, target="metal")
        assert _msl.check(source) is None, name
        arrays, rec = _msl_emulate.run(update, v, src_in)
        assert rec == (0, 0), (name, rec)
        assert (arrays[0] is v) == (not v.flags.c_contiguous), name  # a strided view in place, else a copy
        np.testing.assert_array_equal(arrays[0], 2 * src_in + 1, err_msg=name)
    mm = m.copy()
    update2(mm.T, m.T.copy())  # the CPU's answer
    mt = m.copy()
    _msl_emulate.run(update2, mt.T, m.T.copy())
    np.testing.assert_array_equal(mt, mm)


def test_a_func_taking_a_strided_array_in_every_dialect():
    m = (np.arange(7 * 9) % 13).astype(np.float32).reshape(7, 9)
    out = np.zeros(9, np.float32)
    for target in ("cuda", "hip", "metal", "opencl"):
        src = via_func.generated_source(out, m[::-1, 2], target=target)
        assert re.search(r"tk_f\d+\([^)]*int64_t a0_t0", src), target  # the function takes the strides
        assert re.search(r"tk_f\d+\(ctx, abi, a1, a1_s0, a1_t0", src), target  # and the call passes them
    if _cuda_emulate.available():
        o = np.zeros(7, np.float32)
        assert _cuda_emulate.run(via_func.generated_source(o, m[::-1, 2], target="cuda"), [o, m[::-1, 2]])[0] == 0
        np.testing.assert_array_equal(o, 2 * m[::-1, 2] + 1)
    if _msl.clang() is not None:
        assert _msl.check(via_func.generated_source(out[:7], m[::-1, 2], target="metal")) is None
    if _has_opencl():
        o = tack.zeros(7, np.float32, device="opencl")
        via_func(o, tack.array(m, device="opencl")[::-1, 2])
        np.testing.assert_array_equal(o.numpy(), 2 * m[::-1, 2] + 1)


def test_contiguous_arguments_have_no_strides_in_any_dialect():
    x, y = np.zeros(8, np.float32), np.zeros(8, np.float32)
    for target in _core._targets():
        plain = update.generated_source(x, y, target=target)
        assert not re.search(r"\ba\d+_t\d|\ba\d+_o\b", plain), target
        strided = update.generated_source(np.zeros(16, np.float32)[::2], y, target=target)
        assert "a0_t0" in strided and "a1_t0" not in strided, target
