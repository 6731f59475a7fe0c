"""The Level Zero backend on a real Intel GPU (skipped everywhere else).

What compiling with ocloc (test_opencl.py) and the fake driver
(tests/c/test_level_zero_fake.c) cannot show: kernels running on an Intel
GPU and giving the CPU's results with the device's own sub-groups (sums,
atomics, float atomics into one cell), copies through the real driver, a
failed check read back from the device, queued launches in order, and the
whole language suite on device="level_zero", every kernel call compared with
the CPU's (the differential plugin _opencl_diff.py, pointed at the Level Zero
device).  ``make test-gpu`` runs this file on a machine whose Level Zero
driver has a GPU device, and sets TACK_GPU_EXPECT=level_zero there: the file
then fails, instead of skipping, when Tack cannot use that GPU.
"""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

import tack

HERE = Path(__file__).resolve().parent


def _device():
    try:
        tack.zeros(1, device="level_zero")
    except RuntimeError as e:
        return None, str(e)
    return "level_zero:0", ""


L0, WHY = _device()
gpu = pytest.mark.skipif(L0 is None, reason=f"no Intel GPU through Level Zero here ({WHY[:120]})")


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


def test_make_test_gpu_runs_this_file_on_its_gpu():
    """Under make test-gpu on an Intel machine the device must be usable: a skip would hide it."""
    if os.environ.get("TACK_GPU_EXPECT") != "level_zero":
        pytest.skip("not under make test-gpu on an Intel GPU")
    assert L0 is not None, f"make test-gpu found an Intel GPU, but Tack cannot use it: {WHY}"


@gpu
def test_copies_between_host_and_device():
    for dt in (np.float32, np.float64, np.int8, np.int64, np.uint16, np.bool_):
        host = (np.arange(1000) % 7).astype(dt)
        d = tack.array(host, device=L0)
        assert d.device == L0
        np.testing.assert_array_equal(d.numpy(), host)
        d2 = tack.zeros(1000, d.dtype, device=L0)
        tack.copyto(d2, d)
        np.testing.assert_array_equal(d2.numpy(), host)


@gpu
def test_sub_group_sums_and_atomics_match_the_cpu():
    """Privatized sums through the device's sub-groups, a partial last one included,
    and float sums into one cell (each work-item's atomic)."""
    for n in (1, 15, 16, 17, 1000, 1 << 20):
        x = np.arange(n, dtype=np.int64) % 11
        out = tack.zeros(1, tack.i64, device=L0)
        total(tack.array(x, device=L0), out)
        assert int(out.numpy()[0]) == int(x.sum()), n
    xf = np.ones(1 << 16, np.float32)
    out = tack.zeros(1, tack.f32, device=L0)
    total(tack.array(xf, device=L0), out)
    assert float(out.numpy()[0]) == float(1 << 16)
    x = (np.arange(5000, dtype=np.int64) * 7919) % 10007 - 5000
    out = tack.array(np.array([10 ** 9, -(10 ** 9)], np.int64), device=L0)
    extremes(tack.array(x, device=L0), out)
    np.testing.assert_array_equal(out.numpy(), [x.min(), x.max()])


@gpu
def test_a_failed_check_is_reported_at_the_next_synchronization():
    a = tack.zeros(4, tack.f32, device=L0)
    shifted(a, 1)
    with pytest.raises(IndexError, match=r"index 4 is out of bounds for axis 0 with size 4.*kernel shifted"):
        tack.synchronize(L0)
    tack.synchronize(L0)  # reported once
    shifted(a, -4)
    tack.synchronize(L0)


@gpu
def test_launches_are_queued_and_ordered():
    x = tack.array(np.ones(1 << 20, np.float32), device=L0)
    for _ in range(10):
        scale(x, 2.0)
    np.testing.assert_array_equal(x.numpy(), np.full(1 << 20, 1024.0, np.float32))


@gpu
def test_language_suite_on_level_zero_gives_the_cpu_results(tmp_path):
    """Every kernel call of the language suite, again on the Intel GPU: the same
    arrays as the CPU's (integers exactly, floats to a few ulps), the same errors."""
    sys.path.insert(0, str(HERE))
    try:
        import _kernel_wrap
        import _suite
    finally:
        sys.path.pop(0)
    out = _kernel_wrap.run_plugins({"_opencl_diff": "TACK_OPENCL_DIFF"}, _suite.paths(), str(tmp_path), 1800,
                                   cwd=HERE, prefix="level-zero", TACK_OPENCL_DEVICE=L0)
    diff = out["_opencl_diff"]
    assert diff["compared"] > 0, out["_process"]["tail"]
    assert diff["mismatches"] == [], diff["mismatches"][:5]
