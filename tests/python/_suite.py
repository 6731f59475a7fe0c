"""The language suite: the one list of test files that every per-target run reads.

Several tests run the language suite again with a plugin watching every
kernel call (_kernel_wrap.py): to compile each kernel for CUDA, HIP and
Metal (_cuda_capture.py), to run it on OpenCL and compare (_opencl_diff.py),
in single precision (_f32_capture.py), for races (_race_capture.py,
test_races.py) and without the optimizing passes (test_differential.py).
They all take their files from FILES, so every target sees the same
kernels; a new file of kernels is added here once.

TEST_ALL is true under `make test-all` (TACK_TEST_ALL=1): the GPU compile
checks then also build for a second architecture of each vendor (sm_80
beside sm_90, gfx1030 beside gfx90a, a second Intel generation for a
quarter of the OpenCL sources).  One architecture per vendor catches what a
dialect gets wrong in the source; the second catches what one chip's
compiler refuses, and is run before a release and whenever a dialect changes.
"""

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent

# The suite's files of local arrays (tack.zeros in a kernel, frames), which the fake
# Metal also runs against the CPU (test_metal_run.py); part of FILES.
LOCAL_ARRAYS = ("test_local_arrays.py", "test_local_vector_arrays.py", "test_local_arrays_f16.py")

FILES = ("test_language.py", "test_kernels.py", "test_language_hypothesis.py", "test_shifts.py",
         "test_int_literals.py", "test_range_step.py", "test_intrinsics.py", "test_privatize.py",
         "test_simd.py", "test_strength.py", "test_verified_blocks.py", "test_shared_cells.py",
         "test_ndrange_bounds.py", "test_numpy_spellings.py", "test_complex.py") + LOCAL_ARRAYS

TEST_ALL = os.environ.get("TACK_TEST_ALL") == "1"

# The architectures each GPU compile check builds for; the first one always.
ARCHS = {"cuda": ("sm_90", "sm_80") if TEST_ALL else ("sm_90",),
         "hip": ("gfx90a", "gfx1030") if TEST_ALL else ("gfx90a",),
         "metal": ("msl3",)}


def paths(files=FILES):
    """The suite's files as absolute paths."""
    return [HERE / f for f in files]


def gpu_targets():
    """The GPU dialects whose compilers this machine has: "cuda" (NVRTC),
    "hip" (hiprtc), "metal" (clang++, or Apple's compiler with TACK_MSL_XCRUN=1)."""
    from tack import _core

    import _msl
    import _nvrtc_ctypes

    out = []
    if (_core._nvrtc_version() > 0) if hasattr(_core, "_nvrtc_version") else _nvrtc_ctypes.available():
        out.append("cuda")
    if _core._hiprtc_version() > 0:
        out.append("hip")
    if _msl.clang() is not None or _msl.xcrun():
        out.append("metal")
    return out


_gpu_summaries = None


def gpu_capture(target):
    """The summary of compiling every kernel call of the suite for target.

    The suite runs once per process for every target in gpu_targets()
    (_cuda_capture.py), not once per target: conftest.py puts the three tests
    that ask into one xdist group, so under make test they share this run."""
    global _gpu_summaries
    if _gpu_summaries is None:
        import tempfile

        import _kernel_wrap

        with tempfile.TemporaryDirectory(prefix="tack-gpu-capture-") as tmp:
            _gpu_summaries = _kernel_wrap.run_plugin(
                "_cuda_capture", paths(), "TACK_CUDA_CAPTURE", os.path.join(tmp, "capture.json"), 2400,
                TACK_CAPTURE_TARGET=",".join(gpu_targets()))
    return _gpu_summaries[target]
