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

FILES = ("test_language.py", "test_kernels.py", "test_language_hypothesis.py", "test_shifts.py",
         "test_int_literals.py", "test_range_step.py", "test_intrinsics.py", "test_privatize.py",
         "test_simd.py", "test_strength.py", "test_verified_blocks.py", "test_shared_cells.py",
         "test_ndrange_bounds.py", "test_numpy_spellings.py", "test_complex.py",
         "test_local_arrays.py", "test_local_vector_arrays.py", "test_local_arrays_f16.py")

TEST_ALL = os.environ.get("TACK_TEST_ALL") == "1"

# The architectures each GPU compile check builds for; the first one always.
ARCHS = {"cuda": ("sm_90", "sm_80") if TEST_ALL else ("sm_90",),
         "hip": ("gfx90a", "gfx1030") if TEST_ALL else ("gfx90a",),
         "metal": ("msl3",)}


def paths(files=FILES):
    """The suite's files as absolute paths."""
    return [HERE / f for f in files]
