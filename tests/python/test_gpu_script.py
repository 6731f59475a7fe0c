"""`make test-gpu` (tests/gpu/run.sh) on a machine without a GPU: it stops in
seconds, before building anything, with a non-zero status and a message
that says why; the whole run is bounded by its time budget; and the
benchmark's peak bandwidth is memory clock x bus width x 2."""

import os
import pathlib
import subprocess
import sys
import time

import pytest

import tack

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "gpu" / "run.sh"
no_gpu = pytest.mark.skipif(any(d.startswith("cuda") for d in tack.devices()), reason="this machine has a CUDA device")


def _run(tmp_path, timeout=60, **env_extra):
    env = dict(os.environ, OUT=str(tmp_path / "out"), **env_extra)
    env.pop("TACK_GPU_TIMED", None)
    t0 = time.monotonic()
    p = subprocess.run(["bash", str(SCRIPT)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    return p, time.monotonic() - t0


@no_gpu
def test_without_a_gpu_it_fails_fast_with_the_reason(tmp_path):
    p, took = _run(tmp_path)
    assert p.returncode != 0
    assert "make test-gpu: FAILED: no NVIDIA GPU here" in p.stderr
    assert "libcuda.so.1" in p.stderr or "no GPU" in p.stderr or "cuInit" in p.stderr
    assert took < 30
    assert "== build" not in p.stdout


def test_the_whole_run_is_bounded_by_its_budget(tmp_path):
    slow = tmp_path / "python3"
    slow.write_text("#!/bin/sh\nsleep 30\n")
    slow.chmod(0o755)
    p, took = _run(tmp_path, TACK_GPU_BUDGET="2", PYTHON=str(slow))
    assert p.returncode in (124, 137)
    assert "FAILED: stopped after 2 s" in p.stderr
    assert took < 20


def test_without_python_it_says_so(tmp_path):
    p, _ = _run(tmp_path, PYTHON=str(tmp_path / "no-such-python"))
    assert p.returncode != 0 and "no python3" in p.stderr


def test_peak_bandwidth_is_clock_times_bus_width_times_two():
    sys.path.insert(0, str(ROOT / "tests" / "gpu"))
    try:
        import bench
    finally:
        sys.path.pop(0)
    # an H200's HBM3e: 3.2 GHz x 6144 bits x 2 = 4.9 TB/s
    assert bench.peak_gbps(3_201_000, 6144) == pytest.approx(4917.1, rel=1e-4)
    assert bench.peak_gbps(1_215_000, 5120) == pytest.approx(1555.2, rel=1e-4)  # A100 40 GB
