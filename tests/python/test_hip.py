"""The HIP dialect, compiled for real AMD GPU architectures without a GPU.

HIP C++ is CUDA's kernel language under another name, so the "hip" dialect
is the CUDA dialect with AMD's wavefront (64 or 32 lanes, from the target),
shuffles, f16 conversions and 64-bit atomics (dialect_hip.c).  hiprtc
compiles it to code objects in-process, with no GPU: every kernel the
language tests call is compiled here for a CDNA target (gfx90a, MI200) and
an RDNA one (gfx1030, RX 6800), and a few with hipcc as well.

Without ROCm's HIP runtime (Debian: libamdhip64-dev, with hipcc) the
compile tests skip with a line saying so; `make test` installs it as root.

Every hiprtc compile runs in a process of its own: Debian's comgr (which
hiprtc loads to compile) and PoCL (which other tests load to list OpenCL
devices) share libLLVM-15 and each registers clang's options in it, so a
process that has used both aborts ("LLVM ERROR: inconsistency in registered
CommandLine options").  test_a_process_with_pocl_and_hiprtc_is_refused_cleanly
would show it if that ever changed.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import _kernel_wrap
import _suite
import tack
from tack import _core

HERE = Path(__file__).resolve().parent
HIPRTC = _core._hiprtc_version() > 0
needs_hiprtc = pytest.mark.skipif(not HIPRTC, reason="hiprtc is not installed (Debian: libamdhip64-dev)")
needs_hipcc = pytest.mark.skipif(shutil.which("hipcc") is None, reason="hipcc is not installed (Debian: hipcc)")


_COMPILE = (
    "import sys\n"
    "from tack import _core\n"
    "try:\n"
    "    sys.stdout.buffer.write(_core._hiprtc_compile(sys.stdin.read(), sys.argv[1]))\n"
    "except Exception as e:\n"
    "    sys.stderr.write(f'{type(e).__name__}: {e}')\n"
    "    sys.exit(3)\n"
)


def hiprtc(source, arch):
    """The code object of `source` for `arch`, compiled by libtack's hiprtc
    path in a fresh process (see the module's docstring); RuntimeError with
    the compile's message when it fails."""
    proc = subprocess.run([sys.executable, "-c", _COMPILE, arch], input=source.encode(), capture_output=True,
                          timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.decode(errors="replace"))
    return proc.stdout


@tack.kernel
def saxpy(a, x, y):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@tack.kernel
def extremes(x, out):
    for i in range(x.shape[0]):
        tack.atomic_min(out, 0, x[i])
        tack.atomic_max(out, 1, x[i])


@tack.kernel
def total(x, out):
    for i in range(x.shape[0]):
        out[0] += x[i]


@tack.kernel
def halves(x, y):
    for i in range(x.shape[0]):
        y[i] = x[i] * x[i]


def test_hip_source_is_the_cuda_source_with_amd_parts():
    f32 = np.ones(4, np.float32)
    hip = total.generated_source(f32, np.zeros(1, np.float32), target="hip")
    cuda = total.generated_source(f32, np.zeros(1, np.float32), target="cuda")
    assert "tack-hip: phases=" in hip and "tack-cuda" not in hip
    # the wavefront's width comes from the target, not an assumed 32
    assert "warpSize" in hip and "__shfl_down_sync" not in hip and "__ballot(1)" in hip
    assert "__shfl_down_sync" in cuda and "warpSize" not in cuda
    assert "asm(" not in halves.generated_source(np.ones(4, np.float16), np.ones(4, np.float16), target="hip")


def test_unknown_targets_and_architectures_are_named():
    f32 = np.ones(4, np.float32)
    with pytest.raises(Exception, match=r"compile target 'rocm' is not supported \(\"c\", \"cuda\", \"hip\", \"metal\" and"):
        saxpy.generated_source(2.0, f32, f32, target="rocm")
    # refused before hiprtc is loaded, so safe in this process
    with pytest.raises(ValueError, match="'sm_80' is not an AMD GPU architecture"):
        _core._hiprtc_compile("", "sm_80")
    with pytest.raises(ValueError, match="is not an AMD GPU architecture"):
        _core._hiprtc_compile("", "gfx90a --include=/etc/passwd")


@needs_hiprtc
def test_hiprtc_reports_errors_with_its_log():
    with pytest.raises(RuntimeError, match=r"hiprtc could not compile kernel.hip for gfx90a(.|\n)*undefined_name"):
        hiprtc('extern "C" __global__ void k() { undefined_name = 1; }', "gfx90a")


@needs_hiprtc
@pytest.mark.parametrize("arch", ["gfx90a", "gfx1030"])
def test_generated_hip_compiles(arch):
    f32, i64 = np.ones(4, np.float32), np.ones(4, np.int64)
    for k, args in ((saxpy, (2.5, f32, f32)), (extremes, (i64, np.zeros(2, np.int64))),
                    (total, (f32, np.zeros(1, np.float32))), (total, (np.ones(3, np.int8), np.zeros(1, np.int8))),
                    (halves, (np.ones(4, np.float16), np.ones(4, np.float16)))):
        code = hiprtc(k.generated_source(*args, target="hip"), arch)
        assert code.startswith(b"\x7fELF") and b"tk_phase0" in code, k.__name__


@needs_hiprtc
def test_language_suite_compiles_for_hip(tmp_path, record_property):
    """Every kernel the language tests call, with the arguments they call it
    with, generates HIP source that hiprtc compiles for gfx90a (and gfx1030
    under make test-all: _suite.ARCHS; the other tests here build for both).
    Under make test, the calls whose CUDA source is in half 1 (_suite.HALVES;
    NVRTC compiles the other half)."""
    # (this process once died of a signal in CI: test_kernels.py's threads compiled with hiprtc at
    # once, which crashes comgr; tack_hiprtc_compile now compiles one at a time, and
    # test_hiprtc_compiles_from_many_threads_at_once checks it)
    summary = _suite.gpu_capture("hip")
    failures = summary["failures"]
    assert not failures, "\n\n".join(f"{f['kernel']} ({f['arch']}):\n{f['error']}" for f in failures[:3])
    archs = _suite.ARCHS["hip"]
    print(f"hiprtc: {summary['compiled']} code objects for {len(summary['kernels'])} kernels ({', '.join(archs)})")
    record_property("language_suite", f"HIP (hiprtc): {len(summary['kernels'])} kernels, {summary['compiled']} "
                    f"code objects ({', '.join(archs)})" +
                    (f"; {summary['other_half']} calls left to NVRTC's share" if summary.get("other_half") else ""))
    assert len(summary["kernels"]) >= 50
    assert summary["compiled"] == len(archs) * len(summary["kernels"])


@needs_hipcc
def test_hipcc_builds_generated_sources(tmp_path):
    """The same source builds with hipcc (the toolchain users have), for both targets."""
    f32 = np.ones(4, np.float32)
    for name, src in (("saxpy", saxpy.generated_source(2.5, f32, f32, target="hip")),
                      ("total", total.generated_source(f32, np.zeros(1, np.float32), target="hip")),
                      ("extremes", extremes.generated_source(np.ones(4, np.int64), np.zeros(2, np.int64), target="hip"))):
        path = tmp_path / f"{name}.hip"
        path.write_text(src)
        for arch in ("gfx90a", "gfx1030"):
            obj = tmp_path / f"{name}_{arch}.co"
            proc = subprocess.run(["hipcc", "--genco", f"--offload-arch={arch}", "-ffp-contract=off", "-O3", str(path),
                                   "-o", str(obj)], capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, proc.stderr[-3000:]
            assert obj.stat().st_size > 0


@needs_hiprtc
def test_a_process_with_pocl_and_hiprtc_is_refused_cleanly():
    """What the isolation above is for: PoCL and hiprtc in one process abort
    in LLVM (with Debian's packages); if that ever stops, this says so."""
    script = ("import tack\nfrom tack import _core\n"
              "if not any(d.startswith('opencl') for d in tack.devices()): raise SystemExit(7)\n"
              "_core._hiprtc_compile('extern \"C\" __global__ void k() {}', 'gfx90a')\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    if proc.returncode == 7:
        pytest.skip("no OpenCL device here: nothing loads a second LLVM")
    if proc.returncode == 0:
        pytest.fail("PoCL and hiprtc now live in one process: the compiles in this file need no process of their own")
    assert "registered more than once" in proc.stderr or "inconsistency in registered" in proc.stderr, proc.stderr[-2000:]


_THREADS = (
    "import sys, threading\n"
    "from tack import _core\n"
    "n = int(sys.argv[1])\n"
    "srcs = ['extern \"C\" __global__ void k%d(float *a, int n) { int j = blockIdx.x * blockDim.x + threadIdx.x; '\n"
    "        'if (j < n) a[j] = a[j] * %d.5f + sqrtf((float)j); }' % (i, i) for i in range(n)]\n"
    "out = [None] * n\n"
    "bar = threading.Barrier(n)\n"
    "def work(i):\n"
    "    bar.wait()\n"
    "    out[i] = _core._hiprtc_compile(srcs[i], 'gfx90a' if i % 2 else 'gfx1030')\n"
    "ts = [threading.Thread(target=work, args=(i,)) for i in range(n)]\n"
    "[t.start() for t in ts]\n"
    "[t.join() for t in ts]\n"
    "print(sum(1 for o in out if o and o.startswith(b'\\x7fELF')))\n"
)


@needs_hiprtc
def test_hiprtc_compiles_from_many_threads_at_once():
    """Threads that compile at once in one process (as the language suite's
    capture does when test_kernels.py calls kernels from twelve threads) all
    get their code objects.  ROCm 5.2's comgr crashed such a process (SIGSEGV)
    in 4 runs of 12 with sixteen threads before tack_hiprtc_compile took a
    lock; two runs here."""
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", _THREADS, "16"], capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, f"signal {-proc.returncode}" if proc.returncode < 0 else proc.stderr[-2000:]
        assert proc.stdout.split() == ["16"], proc.stdout + proc.stderr[-2000:]


_WAVE = (
    "import sys\n"
    "from tack import _core\n"
    "src = 'extern \"C\" __global__ void k(int *a) { a[threadIdx.x] = warpSize; }'\n"
    "for arch, wave in (('gfx1030', 64), ('gfx1030', 32), ('gfx1030', 0), ('gfx90a', 0)):\n"
    "    code = _core._hiprtc_compile(src, arch, wave=wave)\n"
    "    at = code.find(b'.wavefront_size')\n"
    "    print(arch, wave, code[at + 15] if at >= 0 else -1)\n"
)


@needs_hiprtc
def test_rdna_code_objects_follow_the_wavefront_asked_for():
    """The HIP backend builds RDNA code for the wavefront the device reports:
    the code object's metadata says 64 or 32 lanes as asked (msgpack: 0x40
    or 0x20 after the key), and CDNA is wave64."""
    proc = subprocess.run([sys.executable, "-c", _WAVE], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = [line.split() for line in proc.stdout.splitlines()]
    assert got == [["gfx1030", "64", "64"], ["gfx1030", "32", "32"], ["gfx1030", "0", "32"], ["gfx90a", "0", "64"]]
