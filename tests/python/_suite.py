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


def opencl_devices():
    """The OpenCL devices Tack sees (PoCL's CPU device under make test)."""
    import tack

    return [d for d in tack.devices() if d.startswith("opencl")]


# The plugins that watch every kernel call of the suite, each with the
# environment variable that names its summary file, and when it can run.
WATCHERS = {
    "_race_capture": ("TACK_RACE_CAPTURE", lambda: True),
    "_cuda_capture": ("TACK_CUDA_CAPTURE", lambda: bool(gpu_targets())),
    "_opencl_diff": ("TACK_OPENCL_DIFF", lambda: bool(opencl_devices())),
    "_f32_capture": ("TACK_F32_CAPTURE", lambda: bool(opencl_devices())),
}
_watched = None
_folder = None


def _shared_folder():
    """Where the watched run keeps its summaries: one folder for every pytest-xdist
    worker of one test run (PYTEST_XDIST_TESTRUNUID), else one for this process."""
    import atexit
    import shutil
    import tempfile

    uid = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not uid:
        folder = tempfile.mkdtemp(prefix="tack-watched-suite-")
        atexit.register(shutil.rmtree, folder, True)
        return folder
    import glob
    import time

    for old in glob.glob(os.path.join(tempfile.gettempdir(), "tack-watched-suite-*")):
        try:  # earlier test runs' folders, a day old
            if time.time() - os.stat(old).st_mtime > 86400:
                shutil.rmtree(old, True)
        except OSError:
            pass
    folder = os.path.join(tempfile.gettempdir(), f"tack-watched-suite-{uid}")
    os.makedirs(folder, exist_ok=True)
    return folder


def watched(plugin):
    """The summary `plugin` wrote in the suite's one watched run.

    The suite runs once with every plugin of WATCHERS that this machine can
    run loaded together (_kernel_wrap.run_plugins): each call a test makes is
    compiled for CUDA, HIP and Metal, run again on OpenCL, checked for racy
    read-modify-writes and in single precision, in one pass over the suite
    instead of four.  Under pytest-xdist the first worker to ask makes the
    run, holding a lock in a folder all workers of the test run share; the
    others wait for it and read its summaries."""
    global _watched, _folder
    if _watched is None:
        import fcntl
        import json

        import _kernel_wrap

        _folder = _shared_folder()
        done = os.path.join(_folder, "summaries.json")
        with open(os.path.join(_folder, "lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if os.path.exists(done):
                with open(done) as f:
                    _watched = json.load(f)
            else:
                plugins = {name: var for name, (var, can) in WATCHERS.items() if can()}
                values = {}
                if "_cuda_capture" in plugins:
                    values["TACK_CAPTURE_TARGET"] = ",".join(gpu_targets())
                if "_opencl_diff" in plugins:
                    os.makedirs(opencl_sources(), exist_ok=True)
                    values.update(TACK_OPENCL_DEVICE=opencl_devices()[0], TACK_OPENCL_SOURCES=opencl_sources())
                _watched = _kernel_wrap.run_plugins(plugins, paths(), _folder, 3600, cwd=HERE, **values)
                with open(done + ".tmp", "w") as f:
                    json.dump(_watched, f)
                os.replace(done + ".tmp", done)
    if plugin not in _watched:
        raise KeyError(f"{plugin} did not run: this machine lacks what it needs")
    return _watched[plugin]


def opencl_sources():
    """The folder where the watched run's OpenCL differential keeps each distinct source."""
    return os.path.join(_folder, "opencl-sources")


def gpu_capture(target):
    """The summary of compiling every kernel call of the suite for target (the watched run's)."""
    return watched("_cuda_capture")[target]
