"""Dask (the `dask` extra: dask[array, distributed]): a Dask array's blocks smoothed
by a Tack kernel through map_overlap (docs/examples/dask_blocks.py) equal NumPy on
the whole field, on the threaded scheduler and on a LocalCluster of two worker
processes, which receive the kernel and a Tack array by pickling."""

import pathlib
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import tack

da = pytest.importorskip("dask.array", reason="the dask extra is not installed (uv sync --extra dask)")

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs/examples/dask_blocks.py"
sys.path.insert(0, str(EXAMPLE.parent))
import dask_blocks  # noqa: E402


@pytest.mark.parametrize("shape,chunks", [((37, 29), 10), ((40, 40), (13, 27)), ((5, 64), 64)])
def test_threaded_blocks_equal_numpy(shape, chunks):
    values = dask_blocks.start_values(shape, seed=sum(shape))
    weights = tack.array([0.5, 0.125], dtype=tack.f64)
    result = dask_blocks.smoothed(da.from_array(values, chunks=chunks), weights, 3)
    got = result.compute(scheduler="threads")
    expected = dask_blocks.reference(values, weights, 3)
    assert got.shape == shape and np.array_equal(got, expected)
    # and not by accident: the blocks' edges did need their neighbours' cells
    alone = da.from_array(values, chunks=chunks).map_blocks(dask_blocks.smooth_block, weights=weights, dtype=float)
    assert not np.array_equal(alone.compute(scheduler="threads"), dask_blocks.reference(values, weights, 1))


def test_kernels_release_the_gil_so_blocks_run_at_once(request):
    # While a kernel runs on one thread, Python code runs on another.
    # It counts ticks against a clock: make test runs it alone (conftest.py's SERIAL).
    assert request.node.get_closest_marker("serial") is not None
    @tack.kernel
    def spin(out, n):
        for i in range(out.shape[0]):
            s = 0.0
            for k in range(n):
                s += 1e-9 * k
            out[i] = s

    out = np.zeros(2)
    spin(out, 10)  # compiled before the timing
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    start = time.perf_counter()
    t.start()
    spin(out, 150_000_000)
    end = time.perf_counter()
    done.set()
    t.join()
    during = [x for x in ticks if start < x < end]
    assert end - start > 0.05 and len(during) >= 5, (end - start, len(during))


def test_example_on_both_schedulers(request):
    # it times nothing: make test runs it beside other tests, in the parallel pass
    assert request.node.get_closest_marker("serial") is None
    out = subprocess.run([sys.executable, str(EXAMPLE), "--shape", "96", "80", "--chunks", "32", "--steps", "3"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "threaded scheduler: equal to NumPy" in out.stdout
    assert "distributed scheduler (2 worker processes): equal to NumPy" in out.stdout
