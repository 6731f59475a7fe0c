"""@tack.kernel(flush_denormals=True): subnormal floats flush to zero while
the kernel runs -- results (FTZ) and operands (DAZ), on the calling thread and
on the pool's workers -- and every thread's mode is its own again after the
call, an error included.  GPU builds get their compiler's flush option, and
the option is part of what the kernel cache keys on."""

import os
import pickle
import platform
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tack
from tack import _core

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

pytestmark = pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64", "aarch64", "arm64"),
    reason="flush-to-zero is offered on x86-64 and aarch64 only")

TINY32 = np.float32(1e-38)  # normal; times 1e-3 gives a subnormal f32
TINY64 = 1e-300  # times 1e-10: a subnormal f64


def subnormals_survive():
    """The process's own floating-point mode, as NumPy computes in it."""
    return TINY32 * np.float32(1e-3) != 0 and np.float64(TINY64) * 1e-10 != 0


def mul(x, y, out):
    for i in range(out.shape[0]):
        out[i] = x[i] * y[i]


plain = tack.kernel(mul)
flushed = tack.kernel(mul, flush_denormals=True)


@pytest.mark.parametrize("dtype, tiny, scale", [(np.float32, TINY32, 1e-3), (np.float64, TINY64, 1e-10)])
def test_a_subnormal_result_is_zero_with_the_option(dtype, tiny, scale):
    x, y = np.full(8, tiny, dtype), np.full(8, scale, dtype)
    out = np.ones(8, dtype)
    plain(x, y, out)
    assert (out != 0).all() and (np.abs(out) < np.finfo(dtype).tiny).all()  # subnormal
    flushed(x, y, out)
    assert (out == 0).all()
    assert subnormals_survive()


def test_a_subnormal_operand_reads_as_zero_with_the_option():
    x = np.full(4, 1e-40, np.float32)  # subnormal already
    y = np.full(4, 1e30, np.float32)
    out = np.zeros(4, np.float32)
    plain(x, y, out)
    np.testing.assert_allclose(out, 1e-10, rtol=1e-4)
    flushed(x, y, out)
    assert (out == 0).all()


def test_normal_values_are_untouched():
    rng = np.random.default_rng(1)
    x, y = rng.random(1000).astype(np.float32), rng.random(1000).astype(np.float32)
    a, b = np.zeros(1000, np.float32), np.zeros(1000, np.float32)
    plain(x, y, a)
    flushed(x, y, b)
    np.testing.assert_array_equal(a, b)


@tack.kernel(flush_denormals=True)
def scale_checked(x, out, k):
    for i in range(out.shape[0]):
        out[i] = x[i + k] * 1e-3


def test_the_mode_is_put_back_after_an_error():
    x = np.full(8, TINY32)
    out = np.zeros(8, np.float32)
    with pytest.raises(IndexError):
        scale_checked(x, out, 1)
    assert subnormals_survive()
    scale_checked(x, out, 0)
    assert (out == 0).all() and subnormals_survive()


def test_a_caller_that_flushes_already_keeps_flushing():
    torch = pytest.importorskip("torch")
    if not torch.set_flush_denormal(True):
        pytest.skip("PyTorch cannot set flush-to-zero here")
    try:
        out = np.ones(4, np.float32)
        flushed(np.full(4, TINY32), np.full(4, np.float32(1e-3)), out)
        assert (out == 0).all()
        assert not subnormals_survive()  # still the caller's mode
    finally:
        torch.set_flush_denormal(False)
    assert subnormals_survive()


@pytest.mark.parametrize("threads", [2, 4])
def test_the_pool_workers_flush_and_are_put_back(threads):
    n = 1 << 22  # far above one thread's share: every worker runs pieces
    x, y = np.full(n, np.float32(1e-38)), np.full(n, np.float32(1e-3))
    out = np.ones(n, np.float32)
    with tack.config.override(num_threads=threads):
        assert _core.device_threads("cpu") == threads
        for _ in range(5):
            flushed(x, y, out)
            assert (out == 0).all(), np.flatnonzero(out)[:5]
            plain(x, y, out)  # on the same workers: each must be back to its own mode
            assert (out != 0).all(), np.flatnonzero(out == 0)[:5]
    assert np.float32(1e-38) * np.float32(1e-3) != 0


FTZ_CALLER_SCRIPT = textwrap.dedent("""
    import numpy as np, tack, torch

    @tack.kernel
    def mul(x, y, out):
        for i in range(out.shape[0]):
            out[i] = x[i] * y[i]

    n = 1 << 22
    x, y = np.full(n, np.float32(1e-38)), np.full(n, np.float32(1e-3))
    out = np.ones(n, np.float32)
    mul(x, y, out)
    assert (out != 0).all()
    assert torch.set_flush_denormal(True)
    for _ in range(5):  # the caller flushes: so do the workers, for its launches
        out[:] = 1
        mul(x, y, out)
        assert (out == 0).all(), np.flatnonzero(out)[:5]
    torch.set_flush_denormal(False)
    mul(x, y, out)
    assert (out != 0).all(), np.flatnonzero(out == 0)[:5]
    print("ok")
""")


def test_a_plain_kernel_runs_in_the_callers_mode_on_every_thread(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "caller_mode.py"
    script.write_text(FTZ_CALLER_SCRIPT)
    env = dict(os.environ, TACK_NUM_THREADS="4")
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]


def test_the_option_is_a_property_and_survives_pickling():
    assert flushed.flush_denormals and not plain.flush_denormals
    assert not tack.kernel(mul, fast_math=True).flush_denormals
    k = pickle.loads(pickle.dumps(flushed))
    assert k.flush_denormals


@pytest.mark.parametrize("target", _core._targets())
def test_the_option_is_in_every_dialects_source_so_in_every_cache_key(target):
    x = np.zeros(4, np.float32)
    with_it = flushed.generated_source(x, x, x, target=target)
    without = plain.generated_source(x, x, x, target=target)
    mark = "/* flush_denormals: "
    assert mark in with_it and mark not in without


def test_debug_mode_applies_the_option():
    """Run as Python (jit=False), the call sets the same mode on its thread
    around the run (tack._core._flush_enter/_flush_leave), so NumPy's scalar
    arithmetic flushes as the compiled kernel does, and the mode goes back."""
    k = tack.kernel(mul, jit=False, flush_denormals=True)
    assert k.flush_denormals
    out = np.zeros(4, np.float32)
    k(np.full(4, TINY32), np.full(4, np.float32(1e-3)), out)
    assert (out == 0).all()
    assert np.float32(TINY32) * np.float32(1e-3) != 0  # the caller's mode is back


def test_nvrtc_gets_ftz():
    if not tack._core._nvrtc_version():
        pytest.skip("NVRTC not found")
    src = 'extern "C" __global__ void k(float *x, const float *y) { x[threadIdx.x] *= y[threadIdx.x]; }'
    assert "mul.rn.ftz.f32" in tack._core._nvrtc_compile(src, ftz=True)
    assert ".ftz" not in tack._core._nvrtc_compile(src)


def test_hiprtc_gets_its_flush_flag():
    if not tack._core._hiprtc_version():
        pytest.skip("hiprtc not found")
    # in a process of its own: hiprtc and PoCL in one process abort (test_hip.py)
    script = textwrap.dedent("""
        from tack import _core
        src = 'extern "C" __global__ void k(float *x, const float *y) { x[threadIdx.x] *= y[threadIdx.x]; }'
        # the flag changes the kernel descriptor's f32 denormal mode
        assert _core._hiprtc_compile(src, ftz=True) != _core._hiprtc_compile(src)
        assert _core._hiprtc_compile(src, ftz=True) == _core._hiprtc_compile(src, ftz=True)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]


OPENCL_SCRIPT = textwrap.dedent("""
    import numpy as np, tack

    def mul(x, y, out):
        for i in range(out.shape[0]):
            out[i] = x[i] * y[i]

    dev = [d for d in tack.devices() if d.startswith("opencl")][0]
    x = tack.array(np.full(4, np.float32(1e-38)), device=dev)
    y = tack.array(np.full(4, np.float32(1e-3)), device=dev)
    out = tack.zeros(4, tack.f32, device=dev)
    tack.kernel(mul)(x, y, out)
    tack.synchronize(dev)
    print("plain done", flush=True)
    tack.kernel(mul, flush_denormals=True)(x, y, out)
    tack.synchronize(dev)
""")


def test_opencl_builds_with_denorms_are_zero(tmp_path):
    if not any(d.startswith("opencl") for d in tack.devices()):
        pytest.skip("no OpenCL device")
    env = dict(os.environ, TACK_LOG="info", TACK_CACHE_DIR=str(tmp_path / "cache"))
    script = tmp_path / "opencl_flush.py"
    script.write_text(OPENCL_SCRIPT)
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    built = [line for line in r.stderr.splitlines() if "compiled kernel 'mul'" in line and "opencl" in line]
    assert len(built) == 2, r.stderr  # two cache entries: the option is in the key
    assert "-cl-denorms-are-zero" not in built[0]
    assert "with options '-cl-std=CL1.2" in built[1] and "-cl-denorms-are-zero'" in built[1]
