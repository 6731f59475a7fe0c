"""The Level Zero backend on a real Intel GPU (skipped everywhere else).

What compiling with ocloc (test_opencl.py) and the fake driver
(tests/c/test_level_zero_fake.c) cannot show: kernels running on an Intel
GPU and giving the CPU's results with the device's own sub-groups (sums,
atomics, float atomics into one cell), copies through the real driver, a
failed check read back from the device, queued launches in order, streams,
events and graphs on the real driver's immediate lists and event pools, and the
whole language suite on device="level_zero", every kernel call compared with
the CPU's (the differential plugin _opencl_diff.py, pointed at the Level Zero
device).  ``make test-gpu`` runs this file on a machine whose Level Zero
driver has a GPU device, and sets TACK_GPU_EXPECT=level_zero there: the file
then fails, instead of skipping, when Tack cannot use that GPU.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

import tack

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _gpu_device as G  # noqa: E402


L0, WHY = G.find("level_zero")
gpu = pytest.mark.skipif(L0 is None, reason=f"no Intel GPU through Level Zero here ({WHY[:120]})")


def test_make_test_gpu_runs_this_file_on_its_gpu():
    G.expect_usable(L0, WHY, "level_zero", "Intel")


@gpu
def test_copies_between_host_and_device():
    G.copies_both_ways(L0)


@gpu
def test_sub_group_sums_and_atomics_match_the_cpu():
    """Privatized sums through the device's sub-groups, a partial last one included,
    and float sums into one cell (each work-item's atomic)."""
    G.sums_and_atomics(L0, (1, 15, 16, 17, 1000, 1 << 20))
    xf = np.ones(1 << 16, np.float32)
    out = tack.zeros(1, tack.f32, device=L0)
    G.total(tack.array(xf, device=L0), out)
    assert float(out.numpy()[0]) == float(1 << 16)


@gpu
def test_a_failed_check_is_reported_at_the_next_synchronization():
    G.failed_check_reported_once(L0)


@gpu
def test_launches_are_queued_and_ordered():
    G.launches_in_order(L0)


@gpu
def test_streams_events_and_graphs():
    """Each stream an immediate command list (level_zero_stream.c): an array written on one
    stream and read on another, an event wait with no array between, elapsed time from the
    global timestamps, a graph replayed on two streams, and the results the CPU gives."""
    n = 1 << 16
    host = np.arange(n, dtype=np.float32)
    x = tack.array(host, device=L0)
    s1, s2 = tack.Stream(L0), tack.Stream(L0)
    start, end = tack.Event(L0), tack.Event(L0)
    with tack.stream(s1):
        start.record()
        G.scale(x, 2.0)
        end.record()
    with tack.stream(s2):
        G.scale(x, 3.0)  # x was last written on s1: ordered after it on the device
    np.testing.assert_array_equal(x.numpy(), host * 6)
    assert 0 <= start.elapsed_time(end) < 60_000
    flag = tack.zeros(1, tack.f32, device=L0)
    with tack.stream(s1):
        flag.fill(7)
        done = s1.record()
    s2.wait(done)
    s2.synchronize()
    assert float(flag.numpy()[0]) == 7
    y = tack.array(np.ones(8, np.float32), device=L0)
    with tack.capture(s1) as g:
        G.scale(y, 2.0)
        G.scale(y, 5.0)
    assert float(y.numpy()[0]) == 1.0  # nothing ran at capture
    g.launch()
    g.launch(stream=s2)
    s2.synchronize()
    np.testing.assert_array_equal(y.numpy(), 100.0)


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
