"""What every real-GPU test file checks the same way, for its own device.

test_hip_gpu.py (AMD) and test_level_zero_gpu.py (Intel) each hold what only
their vendor's device and libraries show (wavefronts and ROCm's PyTorch and
CuPy; sub-groups and the language suite on Level Zero); the checks any GPU
must pass -- the device usable when make test-gpu found it, copies both ways,
a failed check reported at the next synchronization and once, launches
queued in order, privatized sums and integer atomics equal to the CPU's --
are written once here, with the kernels they launch, and take the device.
"""

import os

import numpy as np
import pytest

import tack


@tack.kernel
def scale(x, a):
    for i in range(x.shape[0]):
        x[i] = x[i] * a


@tack.kernel
def shifted(x, k):
    for i in range(x.shape[0]):
        x[i + k] = 1.0


@tack.kernel
def total(x, out):
    for i in range(x.shape[0]):
        out[0] += x[i]


@tack.kernel
def extremes(x, out):
    for i in range(x.shape[0]):
        tack.atomic_min(out, 0, x[i])
        tack.atomic_max(out, 1, x[i])


def find(name):
    """(device, "") when `name` ("hip", "level_zero") has a usable device, else (None, why)."""
    try:
        tack.zeros(1, device=name)
    except RuntimeError as e:
        return None, str(e)
    return f"{name}:0", ""


def expect_usable(dev, why, expect, vendor):
    """Under make test-gpu (TACK_GPU_EXPECT=expect) the device it found must be usable: a skip would hide it."""
    if os.environ.get("TACK_GPU_EXPECT") != expect:
        pytest.skip(f"not under make test-gpu on an {vendor} GPU")
    assert dev is not None, f"make test-gpu found an {vendor} GPU, but Tack cannot use it: {why}"


def copies_both_ways(dev):
    for dt in (np.float32, np.float64, np.int8, np.int64, np.uint16, np.bool_):
        host = (np.arange(1000) % 7).astype(dt)
        d = tack.array(host, device=dev)
        assert d.device == dev
        np.testing.assert_array_equal(d.numpy(), host)
        d2 = tack.zeros(1000, d.dtype, device=dev)
        tack.copyto(d2, d)
        np.testing.assert_array_equal(d2.numpy(), host)
    np.testing.assert_array_equal(tack.full(100, 3.5, tack.f64, device=dev).numpy(), np.full(100, 3.5))


def sums_and_atomics(dev, sizes):
    """Privatized integer sums of each size (partial last sub-groups or wavefronts
    among them), and atomic min and max into two cells."""
    for n in sizes:
        x = np.arange(n, dtype=np.int64) % 11
        out = tack.zeros(1, tack.i64, device=dev)
        total(tack.array(x, device=dev), out)
        assert int(out.numpy()[0]) == int(x.sum()), n
    x = (np.arange(5000, dtype=np.int64) * 7919) % 10007 - 5000
    out = tack.array(np.array([10 ** 9, -(10 ** 9)], np.int64), device=dev)
    extremes(tack.array(x, device=dev), out)
    np.testing.assert_array_equal(out.numpy(), [x.min(), x.max()])


def failed_check_reported_once(dev):
    a = tack.zeros(4, tack.f32, device=dev)
    shifted(a, 1)
    with pytest.raises(IndexError, match=r"index 4 is out of bounds for axis 0 with size 4.*kernel shifted"):
        tack.synchronize(dev)
    tack.synchronize(dev)  # reported once
    shifted(a, -4)
    tack.synchronize(dev)


def launches_in_order(dev):
    x = tack.array(np.ones(1 << 20, np.float32), device=dev)
    for _ in range(10):
        scale(x, 2.0)
    np.testing.assert_array_equal(x.numpy(), np.full(1 << 20, 1024.0, np.float32))
