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

import hashlib
import os
import re
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

# Under make test the costliest per-source checks each take a fixed half of the
# suite's distinct sources, chosen by the source's digest so the same ones every
# run (sampled() below); under make test-all, and in make test-gpu's runs on a
# device, every source.  The halves pair up
# so that every source is still compiled under make test: NVRTC takes the calls
# whose CUDA source is in half 0 and hiprtc the others (the HIP dialect is the
# CUDA one with its own prelude and wave size); PoCL runs a quarter of the OpenCL
# sources against the CPU and Intel's compiler takes the other three (share()).  On 2026-12-06
# (cold caches, 2 cores at load 20-25: each watcher alone, CPU time above the
# suite's own 83 s) these checks cost about 300 CPU seconds of make test's
# 1,400: PoCL 186, hiprtc 60, NVRTC 48; the race watcher 15.  Metal's type
# check (cheap) keeps every source.
HALVES = {"cuda": 0, "hip": 1, "opencl": 0, "ocloc": 1, "metal_emulated": 0, "cuda_emulated": 0}


def sampling():
    """Whether the plugins of this process take only their half of the sources:
    in the watched run under make test, which _make() starts with
    TACK_SUITE_SAMPLE=1; elsewhere (make test-gpu's runs) every source."""
    return os.environ.get("TACK_SUITE_SAMPLE") == "1"


_COMMENT = re.compile(r"/\*.*?\*/", re.S)


def in_half(src, half):
    """Whether source text `src` is in half `half` (0 or 1) of the suite's sources.  The digest
    is of the source without its /* comments */: they name the kernel's file and line, and a
    checkout's path (or a test's tmp_path) must not move a source from one half to the other
    (CI's clone, at another path than a developer's, once sampled out 6 of the Metal
    emulation's calls where the test asks for at least 8)."""
    return hashlib.sha256(_COMMENT.sub("", src).encode()).digest()[0] & 1 == half


def share(check, src):
    """Whether check `check` (a key of HALVES) takes source `src` under make test.  PoCL's run
    against the CPU ("opencl") takes a quarter of the sources, not its half, and Intel's compiler
    ("ocloc") the other three quarters, so that every source still meets an OpenCL compiler: PoCL
    costs about 0.7 CPU-second a source and ocloc 0.1 (PoCL's half was 186 CPU-seconds of make
    test's 1,400 and CI's run had reached 754 s of its 720, 2026-12-06).  NVRTC and hiprtc take a
    quarter each (108 CPU-seconds for their halves), so half of the sources meet the CUDA dialect's
    compilers under make test; make test-all compiles every source with each."""
    quarter = hashlib.sha256(_COMMENT.sub("", src).encode()).digest()[0] & 3
    if check == "opencl":
        return quarter == 0
    if check == "ocloc":
        return quarter != 0
    if check in ("cuda", "hip"):  # NVRTC a quarter, hiprtc another: the CUDA dialect, half of the sources
        return quarter == HALVES[check]
    return in_half(src, HALVES[check])


def sampled(check, src):
    """Whether the GPU check `check` (a key of HALVES) takes source `src`."""
    return not sampling() or share(check, src)


def paired_half(check, sources, cuda_sources):
    """For a test file's own NVRTC or hiprtc check (`check`: "cuda" or "hip"): under make test
    the members of `sources` (one a kernel) whose kernel's CUDA source (`cuda_sources`, in the
    same order) is in the check's half (HALVES: NVRTC half 0, hiprtc half 1), so that the two
    compilers together still compile every kernel once, as in the watched run; under make
    test-all, and for a list of fewer than 8 kernels, every one."""
    assert len(sources) == len(cuda_sources)
    if TEST_ALL or len(sources) < 8:
        return list(sources)
    out = [s for s, c in zip(sources, cuda_sources) if in_half(c, HALVES[check])]
    assert 0 < len(out) < len(sources), (check, len(out), len(sources))  # a half, not nothing
    return out


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

# The suite's runs in processes of their own, and the tests that read each.
# A test run that collects one of these tests starts the run at once, in the
# background (start(), from conftest.py), so that it goes on beside the other
# tests instead of holding a worker while they wait; conftest.py also puts
# these tests last.  The run on eight threads and the run on one, which
# test_races.py compares, are these two: the watched run computes with the
# optimizing passes on eight threads, the unoptimized one on one thread.
RUNS = {
    "watched": {"test_language_suite_compiles_for_cuda", "test_language_suite_compiles_for_hip",
                "test_language_suite_type_checks_as_msl", "test_language_suite_gives_the_cpu_results",
                "test_intel_compiler_accepts_every_kernel", "test_the_language_suite_has_no_racy_compound_assignment",
                "test_the_language_suite_in_single_precision_needs_no_double",
                "test_warning_free_language_kernels_agree_on_one_thread_and_many"},
    "unoptimized": {"test_language_suites_without_optimizations",
                    "test_warning_free_language_kernels_agree_on_one_thread_and_many"},
}
# The files of the unoptimized run: the suite and the documentation's examples (under make test
# the suite alone: _make).
UNOPTIMIZED_FILES = FILES + ("test_language_docs.py",)

_results = {}
_folder = None
_started = []


def _shared_folder():
    """Where the suite's runs keep their results: one folder for every pytest-xdist
    worker of one test run (PYTEST_XDIST_TESTRUNUID), else one for this process."""
    global _folder
    if _folder is not None:
        return _folder
    import atexit
    import shutil
    import tempfile

    uid = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not uid:
        _folder = tempfile.mkdtemp(prefix="tack-suite-runs-")
        atexit.register(shutil.rmtree, _folder, True)
        return _folder
    import glob
    import time

    for old in glob.glob(os.path.join(tempfile.gettempdir(), "tack-suite-runs-*")):
        try:  # earlier test runs' folders, a day old
            if time.time() - os.stat(old).st_mtime > 86400:
                shutil.rmtree(old, True)
        except OSError:
            pass
    _folder = os.path.join(tempfile.gettempdir(), f"tack-suite-runs-{uid}")
    os.makedirs(_folder, exist_ok=True)
    return _folder


def _paths(name):
    folder = _shared_folder()
    return os.path.join(folder, f"{name}.lock"), os.path.join(folder, f"{name}.json")


def start(names):
    """Start each run of `names` (keys of RUNS) in the background, unless a
    worker of this test run has already started or made it.  The run's lock
    is taken here and handed to the background process, which holds it until
    the run's result is written: whoever asks for the result (result())
    waits on the lock, so no run is ever made twice."""
    import atexit
    import fcntl
    import subprocess
    import sys

    for name in sorted(names):
        lock, done = _paths(name)
        fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        if os.path.exists(done):
            os.close(fd)
            continue
        # the lock belongs to the open file, which the child shares: it is held
        # until the child ends, whatever this process does meanwhile
        with open(os.path.join(_shared_folder(), f"{name}.err"), "w") as err:
            proc = subprocess.Popen([sys.executable, __file__, name, _shared_folder()], pass_fds=(fd,), cwd=HERE,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        os.close(fd)
        if not _started:
            atexit.register(_end_started)
        _started.append(proc)


def _end_started():
    """At exit: a pytest-xdist worker waits for the runs it started (another
    worker may be waiting for their results); a lone pytest ends them, since
    nobody else can read them."""
    for proc in _started:
        if os.environ.get("PYTEST_XDIST_WORKER"):
            proc.wait()
        elif proc.poll() is None:
            proc.terminate()
            proc.wait()


def result(name):
    """The result of the suite's run `name` (a key of RUNS): the one a
    background process of this test run made (waiting for it to end), else
    made here and now."""
    if name not in _results:
        import fcntl
        import json

        lock, done = _paths(name)
        with open(lock, "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            if not os.path.exists(done):
                _write(done, _make(name))
            with open(done) as g:
                _results[name] = json.load(g)
    if "_error" in _results[name]:
        raise AssertionError(f"the suite's {name} run failed:\n{_results[name]['_error']}")
    return _results[name]


def _write(path, value):
    import json

    with open(path + ".tmp", "w") as f:
        json.dump(value, f)
    os.replace(path + ".tmp", path)


def _make(name):
    """Run the suite's run `name` in a pytest process of its own; its plugins' summaries, by plugin."""
    import _kernel_wrap

    folder = _shared_folder()
    if name == "watched":
        # the suite once with every plugin of WATCHERS this machine can run: each call a
        # test makes is compiled for CUDA, HIP and Metal, run again on OpenCL, checked
        # for racy read-modify-writes and in single precision, in one pass over the
        # suite instead of four; on eight threads (test_races.py)
        plugins = {name: var for name, (var, can) in WATCHERS.items() if can()}
        values = {"TACK_NUM_THREADS": "8", "TACK_SUITE_SAMPLE": "0" if TEST_ALL else "1"}
        if "_cuda_capture" in plugins:
            values["TACK_CAPTURE_TARGET"] = ",".join(gpu_targets())
        if "_opencl_diff" in plugins:
            os.makedirs(opencl_sources(), exist_ok=True)
            values.update(TACK_OPENCL_DEVICE=opencl_devices()[0], TACK_OPENCL_SOURCES=opencl_sources())
        plugins["_outcomes"] = "TACK_OUTCOMES"
        return _kernel_wrap.run_plugins(plugins, paths(), folder, 3600, cwd=HERE, prefix=name, args=_workers(),
                                        **values)
    if name == "unoptimized":
        # every optimizing pass off (TACK_OPT=0), on one thread; the tests that look at
        # the optimized source itself are left out
        # under make test none of the documentation's examples (they run optimized in the test run
        # itself; the language chapter's 113 cost about 20 CPU-seconds there)
        docs = () if TEST_ALL else ("-k", "not test_doc_example_runs")
        return _kernel_wrap.run_plugins({"_outcomes": "TACK_OUTCOMES"}, paths(UNOPTIMIZED_FILES), folder, 1800,
                                        cwd=HERE, prefix=name, args=_workers() + ("-m", "not optimized_source") + docs,
                                        TACK_OPT="0", TACK_NUM_THREADS="1")
    raise KeyError(name)


def _workers():
    """A run's own pytest-xdist workers: two, so that its half of the machine
    goes on while the test run's workers wait for it at the end (the
    plugins' summaries are per worker, merged: _kernel_wrap.run_plugins)."""
    return ("-n", "2", "--dist", "load")


def watched(plugin):
    """The summary `plugin` (a key of WATCHERS) wrote in the suite's one watched run."""
    out = result("watched")
    if plugin not in out:
        raise KeyError(f"{plugin} did not run: this machine lacks what it needs")
    return out[plugin]


def opencl_sources():
    """The folder where the watched run's OpenCL differential keeps each distinct source."""
    return os.path.join(_shared_folder(), "opencl-sources")


def gpu_capture(target):
    """The summary of compiling every kernel call of the suite for target (the watched run's)."""
    return watched("_cuda_capture")[target]


if __name__ == "__main__":  # the background process of start(): holds the run's lock (fd 3 and up) until written
    import sys

    import traceback

    _folder = sys.argv[2]
    try:
        made = _make(sys.argv[1])
    except BaseException:  # noqa: BLE001 -- told to whoever asks for the result, not lost here
        made = {"_error": traceback.format_exc()[-6000:]}
    _write(_paths(sys.argv[1])[1], made)
