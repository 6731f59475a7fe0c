"""The HIP backend on a real AMD GPU (skipped everywhere else).

What the fake runtime (test_hip_fake.py) cannot show: kernels running and
giving the CPU's results with the device's own wavefront (warp sums,
atomics), copies through the real runtime, a failed check read back from
the device, queued launches in order, and the DLPack exchange with PyTorch
and CuPy built for ROCm, whose arrays are kDLROCM and whose default stream is
HIP's null stream.  ``make test-gpu`` runs this file on a machine with an
AMD GPU, and sets TACK_GPU_EXPECT=hip there: the file then fails, instead of
skipping, when Tack cannot use that GPU.

The device is found by asking for "hip" alone (not tack.devices(), which
would also load an OpenCL driver: with Debian's ROCm, PoCL and hiprtc in one
process abort in LLVM; see test_hip.py).
"""

import os
import sys

import numpy as np
import pytest

import tack

sys.path.insert(0, os.path.dirname(__file__))
import _gpu_device as G  # noqa: E402


HIP, WHY = G.find("hip")
gpu = pytest.mark.skipif(HIP is None, reason="no AMD GPU (or no HIP runtime) on this machine")
scale = G.scale


def test_make_test_gpu_runs_this_file_on_its_gpu():
    G.expect_usable(HIP, WHY, "hip", "AMD")


@gpu
def test_copies_between_host_and_device():
    G.copies_both_ways(HIP)


@gpu
def test_wavefront_sums_and_atomics_match_the_cpu():
    """A privatized sum goes through the wavefront's shuffles (64 or 32 lanes,
    the device's), including a partial last wavefront."""
    G.sums_and_atomics(HIP, (1, 63, 64, 65, 1000, 1 << 20))


@gpu
def test_a_failed_check_is_reported_at_the_next_synchronization():
    G.failed_check_reported_once(HIP)


@gpu
def test_launches_are_queued_and_ordered():
    G.launches_in_order(HIP)


def _torch_rocm():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or getattr(torch.version, "hip", None) is None:
        pytest.skip("PyTorch is not built for ROCm here")
    return torch


@gpu
def test_torch_rocm_tensors_both_ways_without_copies():
    torch = _torch_rocm()
    t = torch.arange(1024, dtype=torch.float32, device="cuda")  # ROCm's PyTorch calls its GPUs "cuda"
    assert tuple(t.__dlpack_device__())[0] == 10  # kDLROCM
    a = tack.from_dlpack(t)
    assert a.device == HIP and a.ptr == t.data_ptr()
    scale(a, 2.0)  # shared: complete when the call returns
    assert torch.equal(t, torch.arange(1024, dtype=torch.float32, device="cuda") * 2)
    b = tack.zeros(256, tack.f32, device=HIP)
    tb = torch.from_dlpack(b)  # on PyTorch's current stream, which waits for Tack's
    assert tb.data_ptr() == b.ptr
    tb += 5
    torch.cuda.synchronize()
    np.testing.assert_array_equal(b.numpy(), np.full(256, 5.0, np.float32))
    view = tack.array_from_ptr(t.data_ptr(), (1024,), tack.f32, writable=True, device=HIP)
    view.fill(1.0)
    torch.cuda.synchronize()
    assert float(t.sum()) == 1024.0
    with pytest.raises(ValueError, match="not memory the HIP runtime knows|host memory"):
        host = np.zeros(16, np.float32)
        tack.array_from_ptr(host.ctypes.data, (16,), tack.f32, device=HIP)


@gpu
def test_cupy_rocm_arrays_both_ways_without_copies():
    cp = pytest.importorskip("cupy")
    x = cp.arange(512, dtype=cp.float64)
    a = tack.from_dlpack(x)
    assert a.ptr == x.data.ptr
    scale(a, 3.0)
    assert bool((x == cp.arange(512, dtype=cp.float64) * 3).all())
    b = tack.full(64, 2.0, tack.f64, device=HIP)
    y = cp.from_dlpack(b)
    assert y.data.ptr == b.ptr and float(y.sum()) == 128.0
