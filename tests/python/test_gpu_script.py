"""`make test-gpu` (tests/gpu/run.sh, tests/gpu/gpurun.py) on a machine
without a GPU: it stops in seconds, before building anything, with exit
status 3 and each vendor's reason; the whole run is bounded by its time
budget; and the benchmark's peak bandwidth is memory clock x bus width x 2.

What the script decides is tested on fake machines: a folder of driver
libraries by name (empty files, or the fake HIP runtime of tests/c/fake_hip.c
under ROCm 7's name), a fake kernel name (TACK_GPU_UNAME=Darwin); the plan of
what a machine lacks (--dry-run and make_plan on surveys of bare machines);
the summary's table and JSON; the HIP architecture check in a child process
with this machine's hiprtc (ROCm 5.2: gfx942 is unknown to it, and hiprtc
aborts); and a GPU memory fault in a child, on the fake HIP runtime, which
aborts as ROCm does.
"""

import os
import pathlib
import re
import json
import subprocess
import sys
import time

import numpy as np
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
    assert p.returncode == 3
    assert "make test-gpu: FAILED: no GPU here" in p.stderr
    assert "nvidia: " in p.stderr and "amd: " in p.stderr and "intel: " in p.stderr
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


sys.path.insert(0, str(ROOT / "tests" / "gpu"))
import gpurun  # noqa: E402

sys.path.pop(0)
sys.path.insert(0, str(ROOT / "tests" / "python"))
import _fake_runtime  # noqa: E402

sys.path.pop(0)


def test_driver_libraries_are_found_by_name_newest_first(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    for d, names in ((a, ["libamdhip64.so.5", "libcuda.so.1"]), (b, ["libamdhip64.so.7", "libamdhip64.so.6",
                                                                     "libze_loader.so.1", "libOpenCL.so.1"])):
        for n in names:
            (d / n).write_bytes(b"not an ELF")
    found = gpurun.find_driver_libs([str(a), str(b)])
    assert found["amd"] == [str(b / "libamdhip64.so.7"), str(b / "libamdhip64.so.6"), str(a / "libamdhip64.so.5")]
    assert found["nvidia"] == [str(a / "libcuda.so.1")] and found["intel"] == [str(b / "libze_loader.so.1")]
    # present but not loadable: no GPU, and each vendor says why
    gpus, why = gpurun.detect({"TACK_GPU_LIBDIRS": f"{a}{os.pathsep}{b}"})
    assert gpus == []
    assert any(w.startswith("nvidia: ") and "cannot be loaded" in w for w in why)
    assert sum(w.startswith("amd: ") for w in why) == 3
    gpus, why = gpurun.detect({"TACK_GPU_LIBDIRS": str(tmp_path / "empty")})
    assert why == ["nvidia: no libcuda.so.1 / libcuda.so",
                   "amd: no libamdhip64.so.7 / libamdhip64.so.6 / libamdhip64.so.5 / libamdhip64.so",
                   "intel: no libze_loader.so.1"]
    assert "not macOS" in gpurun.detect({"TACK_GPU_LIBDIRS": ""}, only="apple")[1][0]


def test_a_mac_is_an_apple_gpu_by_its_kernel_name():
    gpus, why = gpurun.detect({"TACK_GPU_UNAME": "Darwin", "TACK_GPU_LIBDIRS": ""})
    assert [g.vendor for g in gpus] == ["apple"] and gpus[0].device == "metal:0" and why == []


@pytest.fixture(scope="module")
def fake_rocm7(tmp_path_factory):
    """The fake HIP runtime (tests/c/fake_hip.c) under ROCm 7's soname."""
    return _fake_runtime.build(tmp_path_factory, "fake_hip.c", "libamdhip64.so.7", "the fake HIP runtime")


@_fake_runtime.needs_cc("the fake HIP runtime")
def test_rocm7_through_the_fake_runtime_dry_run_plan(fake_rocm7):
    """The fake HIP runtime under ROCm 7's soname: found, asked (hipInit, its
    gcnArchName, its version), and the dry run's plan for this machine named."""
    lib = fake_rocm7
    env = dict(os.environ, TACK_GPU_LIBDIRS=str(lib.parent), FAKE_HIP_ARCH="gfx942:sramecc+:xnack-",
               FAKE_HIP_RUNTIME="70100000", FAKE_HIP_COUNT="2")
    p = subprocess.run([sys.executable, str(ROOT / "tests" / "gpu" / "gpurun.py"), "--dry-run"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "amd: 2 GPU(s); device 0: Fake AMD GPU 0, gfx942:sramecc+:xnack- (ROCm 7.1)" in p.stdout
    assert "plan for amd:" in p.stdout and "== build" not in p.stdout
    assert "cupy-rocm-7-0" in p.stdout or "cupy" not in p.stdout.lower()  # CuPy installed here: nothing to add


def _bare(**over):
    facts = {"python": [3, 12, 1], "modules": dict.fromkeys(("pip", "numpy", "pytest", "xdist", "cupy", "torch",
                                                            "ziglang"), False),
             "headers": True, "include": "/usr/include/python3.12", "cmake": None, "ninja": None, "make": None,
             "cc": None, "uv": None, "nvrtc_major": 0}
    facts.update(over)
    return facts


def _what(plan):
    return {(w if isinstance(w, str) else " ".join(w)): (a["how"], a["required"]) for a in plan
            for w in [a["what"]]}


def test_the_plan_for_a_bare_machine_comes_from_the_registries():
    nv = gpurun.Gpu("nvidia", driver_major=12, runtime="CUDA driver 12.4")
    got = _what(gpurun.make_plan(nv, _bare()))
    assert got == {"pip": ("pip-wheel", True), "numpy": ("pip", True), "pytest": ("pip", True),
                   "pytest-xdist": ("pip", False), "cmake": ("pip", True), "ninja": ("pip", True),
                   "ziglang": ("pip", True), "nvidia-cuda-nvrtc-cu12": ("pip", True), "cupy-cuda12x": ("pip", False)}
    # CUDA 13's NVRTC has no suffix; a newer NVRTC than the driver is replaced by the driver's
    nv13 = gpurun.Gpu("nvidia", driver_major=13)
    assert "nvidia-cuda-nvrtc==13.*" in _what(gpurun.make_plan(nv13, _bare()))
    assert "nvidia-cuda-nvrtc-cu12" in _what(gpurun.make_plan(nv, _bare(nvrtc_major=13)))
    assert "nvidia-cuda-nvrtc-cu12" not in _what(gpurun.make_plan(nv, _bare(nvrtc_major=12)))
    # a machine with everything: nothing to do; an old cmake is replaced
    full = _bare(modules=dict.fromkeys(("pip", "numpy", "pytest", "xdist", "cupy", "ziglang"), True),
                 cmake=(3, 28), make="/usr/bin/make", cc="/usr/bin/cc", nvrtc_major=12)
    assert gpurun.make_plan(nv, full) == []
    assert _what(gpurun.make_plan(nv, dict(full, cmake=(3, 16)))) == {"cmake": ("pip", True)}
    # what no registry gives is named, with the package that gives it
    amd6 = gpurun.Gpu("amd", driver_major=6, runtime="ROCm 6.2")
    plan = gpurun.make_plan(amd6, _bare(python=[3, 9, 6], headers=False, uv="/usr/bin/uv"))
    got = _what(plan)
    assert got["Python >= 3.10"] == ("none", True) and got["Python headers"] == ("none", True)
    assert got["CuPy"] == ("none", False) and "pip" not in got
    assert any("apt-get install python3-dev" in a["why"] for a in plan)
    assert "cupy-rocm-5-0" in _what(gpurun.make_plan(gpurun.Gpu("amd", driver_major=5), _bare()))
    text = gpurun.format_plan(amd6, plan)
    assert "cannot install: Python headers  [required]" in text


def test_the_summary_table_and_json(tmp_path):
    steps = [{"name": "build", "status": "ok", "seconds": 61.0, "detail": "", "log": "build.log"},
             {"name": "memory fault (child)", "status": "ok", "seconds": 2.5, "detail": "reported", "log": None},
             {"name": "benchmarks", "status": "skipped", "seconds": 0, "detail": "no CuPy", "log": None}]
    gpu = gpurun.Gpu("intel", name="Intel(R) Data Center GPU Max 1550", runtime="Level Zero")
    assert gpurun.write_summary(tmp_path, gpu, steps, [{"what": ["numpy"], "how": "pip"}]) == 0
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert doc["passed"] and doc["gpu"]["device"] == "level_zero:0" and doc["steps"] == steps
    assert doc["plan"][0]["what"] == ["numpy"]
    steps.append({"name": "C tests", "status": "FAILED", "seconds": 3.0, "detail": "exit status 8", "log": None})
    assert gpurun.write_summary(tmp_path, gpu, steps) == 1
    assert not json.loads((tmp_path / "summary.json").read_text())["passed"]
    table = gpurun.summary_table(steps).splitlines()
    assert table[0].split() == ["step", "status", "s", "detail"]
    assert table[-1].split()[:4] == ["C", "tests", "FAILED", "3.0"]


def test_a_step_is_bounded_by_the_budget_left(tmp_path):
    run = gpurun.Run(tmp_path, budget=6.2)
    t0 = time.monotonic()
    status, _ = run.command("sleeps", [sys.executable, "-c", "import time; print('started', flush=True); "
                                                             "time.sleep(30)"], limit=600)
    assert status == "FAILED" and time.monotonic() - t0 < 5
    assert run.steps[-1]["detail"].startswith("stopped after 1 s") or run.steps[-1]["detail"].startswith(
        "stopped after 2 s")
    assert "started" in (tmp_path / "sleeps.log").read_text()
    assert run.command("later", ["true"], 60)[0] == "FAILED" and run.steps[-1]["detail"] == "no time left in the budget"


def test_what_a_fault_did_is_classified():
    lines = lambda *e: "\n".join("FAULT " + json.dumps(x) for x in e)  # noqa: E731
    v = gpurun.classify_fault(0, lines({"stage": "launch"}, {"stage": "sync", "error": "RuntimeError: cuda:0: "
                              "an illegal memory access was encountered"}, {"stage": "after", "ok": False,
                                                                           "error": "RuntimeError: lost"}))
    assert v["outcome"] == "reported" and v["ok"] and "unusable afterwards" in v["message"]
    v = gpurun.classify_fault(0, lines({"stage": "launch"}, {"stage": "sync", "error": None}, {"stage": "after",
                                                                                            "ok": True}))
    assert v["outcome"] == "not seen" and not v["ok"]
    assert gpurun.classify_fault(None, "")["outcome"] == "hung"
    v = gpurun.classify_fault(-11, lines({"stage": "launch"}))
    assert v["outcome"] == "crashed" and "SIGSEGV" in v["message"]


@_fake_runtime.needs_cc("the fake HIP runtime")
def test_a_rocm_memory_fault_in_a_child_is_the_device_lost(fake_rocm7, tmp_path):
    """The fake runtime faults as ROCm does (its message, then abort): the
    harness survives it and says the device was lost, and what to do."""
    lib = fake_rocm7
    env = _fake_runtime.environment(tmp_path, ("FAKE_HIP_COUNT", "FAKE_HIP_ARCH", "FAKE_HIP_RUNTIME"),
                                    TACK_HIP_PATH=lib, TACK_HIPRTC_PATH=lib, FAKE_HIP_FAULT=1)
    verdict, text = gpurun.fault_in_child(sys.executable, "hip:0", env)
    assert "Memory access fault by GPU" in text, text[-2000:]
    assert verdict["outcome"] == "device lost" and verdict["ok"] and verdict["signal"] == "SIGABRT"
    assert "checks on" in verdict["message"] and verdict["events"]["launch"]


def _hiprtc():
    from tack import _core

    return _core._hiprtc_version()


@pytest.mark.skipif(not _hiprtc(), reason="no hiprtc here")
def test_an_architecture_hiprtc_does_not_know_is_an_error_not_an_abort():
    env = dict(os.environ, OCL_ICD_VENDORS="none")
    ok, msg = gpurun.hip_arch_check(sys.executable, "gfx90a:sramecc+:xnack-", env)
    assert ok, msg
    # ROCm 5.2's hiprtc aborts on gfx942 (MI300): a clear error naming it, the process that asked unharmed
    ok, msg = gpurun.hip_arch_check(sys.executable, "gfx942:sramecc+:xnack-", env)
    if ok:
        pytest.skip("this hiprtc knows gfx942")
    assert "architecture gfx942 cannot be compiled for" in msg and "install a ROCm that supports it" in msg
    assert not gpurun.hip_arch_check(sys.executable, "", env)[0]


def test_run_on_mac_names_the_python_to_install(tmp_path):
    """The command-line tools' Python 3.9 is too old: run_on_mac.sh says what to install, and stops."""
    fake = tmp_path / "bin"
    fake.mkdir()
    for name in ("python3", "python3.10", "python3.11", "python3.12", "python3.13"):
        stub = fake / name
        stub.write_text('#!/bin/sh\n[ "$1" = --version ] && echo "Python 3.9.6"\nexit 1\n')
        stub.chmod(0o755)
    env = dict(os.environ, TACK_GPU_UNAME="Darwin", PATH=f"{fake}:/usr/bin:/bin")
    env.pop("PYTHON", None)
    p = subprocess.run(["bash", str(ROOT / "tests" / "metal" / "run_on_mac.sh")], env=env, capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 2
    assert "Tack needs Python 3.10 or later, and this Mac has Python 3.9.6" in p.stderr
    assert "brew install python@3.12" in p.stderr and "PYTHON=" in p.stderr


sys.path.insert(0, str(ROOT / "tests" / "gpu"))
import coop  # noqa: E402
import probe  # noqa: E402

sys.path.pop(0)


def _nvrtc():
    from tack import _core

    return _core._nvrtc_version()


@pytest.mark.skipif(not _nvrtc(), reason="no NVRTC here")
def test_the_probes_cuda_variants_compile_and_load_as_they_say():
    """One NVRTC compile of the probe's hand-written CUDA: every kernel is there;
    vec4 loads 16 bytes at a time, unroll4 issues its four x loads before any
    store, i32 keeps its index in 32 bits."""
    from tack import _core

    ptx = _core._nvrtc_compile(probe.CUDA_SOURCE, arch="sm_90", name="probe.cu")
    bodies = dict(re.findall(r"\.entry (\w+)\((.*?)\n}", ptx, re.S))
    assert sorted(bodies) == sorted(probe.entry_names())
    for k in probe.KERNELS:
        assert re.search(r"ld\.global(\.nc)?\.v4\.f32", bodies[f"{k}_vec4"]), k
        assert not re.search(r"\.v4\.", bodies[f"{k}_base"]), k
        body = bodies[f"{k}_unroll4"]
        assert len(re.findall(r"ld\.global", body[:body.index("st.global")])) >= 4, k
        assert "mul.wide.s32" in bodies[f"{k}_i32"] and "mul.lo.s64" not in bodies[f"{k}_i32"], k
    assert "div.s64" in bodies["stencil_base"] or "rem.s64" in bodies["stencil_base"]
    assert "div.s64" not in bodies["stencil_split"] and "rem.s64" not in bodies["stencil_split"]


def test_the_probes_table_and_its_refusal_without_a_gpu(capsys):
    res = {"memcpy_dtod_GBps": 4000.0, "kernels": {"copy": {"tack": 2880.0, "vec4": 3800.0},
                                                    "stencil2d": {"tack": 2680.0, "split": 3300.0}}}
    rows = probe.table(res).splitlines()
    assert rows[1].split() == ["memcpy", "DtoD", "4000.0", "100.0%"]
    assert rows[2].split() == ["copy", "tack", "2880.0", "72.0%"]
    assert rows[-1].split() == ["stencil2d", "split", "3300.0", "82.5%"]
    if not any(d.startswith("cuda") for d in tack.devices()):
        assert probe.main(["--mib", "1"]) == 3
        assert "probe: no NVIDIA GPU here" in capsys.readouterr().err


def test_offline_a_required_package_stops_the_run_and_an_optional_one_is_skipped(tmp_path, monkeypatch):
    monkeypatch.setattr(gpurun, "registry_reachable", lambda *a, **k: False)
    run = gpurun.Run(tmp_path, budget=60)
    optional = {"what": ["cupy-cuda12x"], "how": "pip", "required": False, "why": "CuPy"}
    required = {"what": ["nvidia-cuda-nvrtc-cu12"], "how": "pip", "required": True, "why": "NVRTC of CUDA 12"}
    assert gpurun.bootstrap(run, sys.executable, [optional, required]) is False
    assert [(s["name"], s["status"]) for s in run.steps] == [("install cupy-cuda12x", "skipped"),
                                                             ("install nvidia-cuda-nvrtc-cu12", "FAILED")]
    assert "PyPI cannot be reached" in run.steps[1]["detail"] and "NVRTC of CUDA 12" in run.steps[1]["detail"]
    assert gpurun.bootstrap(gpurun.Run(tmp_path, 60), sys.executable, [optional]) is True


# A Level Zero loader with one driver and one device, whose type (ZE_DEVICE_TYPE_GPU = 1,
# CPU = 2) and name come from the environment: enough for detection, which must count a GPU
# device only (a loader with a CPU driver, or none, is no Intel GPU).
FAKE_ZE = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
static int drv, dev;
int zeInit(int flags) { (void)flags; return getenv("FAKE_ZE_NO_DRIVER") ? 0x78000001 : 0; }
int zeDriverGet(uint32_t *n, void **d) { if (d && *n) d[0] = &drv; *n = 1; return 0; }
int zeDeviceGet(void *h, uint32_t *n, void **d) { (void)h; if (d && *n) d[0] = &dev; *n = 1; return 0; }
int zeDeviceGetProperties(void *h, uint32_t *p) {
    (void)h;
    if (p[0] != 3) return 0x78000004;  /* the stype of ze_device_properties_t */
    p[4] = (uint32_t)atoi(getenv("FAKE_ZE_TYPE"));
    strcpy((char *)p + 112, "Fake Intel GPU");
    return 0;
}
"""


@_fake_runtime.needs_cc("a fake Level Zero loader")
def test_intel_counts_only_with_a_gpu_device_from_level_zero(tmp_path, monkeypatch):
    src = tmp_path / "fake_ze.c"
    src.write_text(FAKE_ZE)
    lib = tmp_path / "libze_loader.so.1"
    subprocess.run([_fake_runtime.CC, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True, timeout=60)
    env = {"TACK_GPU_LIBDIRS": str(tmp_path)}
    monkeypatch.setenv("FAKE_ZE_TYPE", "1")
    gpus, _ = gpurun.detect(env, only="intel")
    assert [(g.vendor, g.name, g.device) for g in gpus] == [("intel", "Fake Intel GPU", "level_zero:0")]
    monkeypatch.setenv("FAKE_ZE_TYPE", "2")  # a CPU device
    gpus, why = gpurun.detect(env, only="intel")
    assert gpus == [] and "zeDeviceGet gives no GPU device" in why[0]
    monkeypatch.setenv("FAKE_ZE_NO_DRIVER", "1")
    gpus, why = gpurun.detect(env, only="intel")
    assert gpus == [] and "zeInit found no GPU driver" in why[0] and "intel-level-zero-gpu" in why[0]


@pytest.mark.skipif(not _nvrtc(), reason="no NVRTC here")
def test_the_nvrtc_chosen_is_no_newer_than_the_driver(tmp_path):
    """PTX from a newer NVRTC is refused by an older driver: this machine's NVRTC
    is taken for a driver of its major or later, and not for an older one."""
    have = _nvrtc() // 1000
    cands = gpurun.nvrtc_candidates({}, ()) + [str(tmp_path / "libnvrtc.so.99")]
    name, major = gpurun.pick_nvrtc(have, cands)
    assert name and major == have
    assert gpurun.pick_nvrtc(have + 1, cands)[1] == have
    assert gpurun.pick_nvrtc(have - 1, cands) == (None, have)
    assert gpurun.pick_nvrtc(have, [str(tmp_path / "none.so")]) == (None, 0)


def test_the_run_keeps_to_its_budget_between_steps(tmp_path, monkeypatch, capsys):
    """What runs between bounded steps (surveys, copies) is stopped by the run's own
    timer: the summary still says why, and the exit status is timeout's."""
    monkeypatch.setattr(gpurun, "detect", lambda only=None: ([gpurun.Gpu("amd", name="Fake", arch="gfx90a")], []))
    monkeypatch.setattr(gpurun, "run_all", lambda *a: time.sleep(5))
    t0 = time.monotonic()
    assert gpurun.main(["--budget", "0.3", "--out", str(tmp_path)]) == 124
    assert time.monotonic() - t0 < 3
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert doc["steps"][-1]["name"] == "the run itself" and "stopped after 0.3 s" in doc["steps"][-1]["detail"]
    assert "make test-gpu: FAILED" in capsys.readouterr().err


def test_a_summary_with_complex_values_is_written_whole(tmp_path, monkeypatch):
    """The differential's mismatches carry samples of the arrays: complex ones (a
    GPU run's first complex mismatch) once stopped json.dump halfway, leaving a
    file the run could not read back; now they are [real, imag] pairs."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # a worker's summary is PATH.gwN
    sys.path.insert(0, str(ROOT / "tests" / "python"))
    try:
        import _kernel_wrap
    finally:
        sys.path.pop(0)
    path = tmp_path / "summary.json"
    summary = {"mismatches": [{"cpu": np.array([1j, 2 + 0j]).tolist(), "device": [np.complex64(3 - 1j)],
                               "n": np.int64(2), "x": np.float32(0.5)}]}
    import atexit

    write = _kernel_wrap.write_summary_at_exit(str(path), summary)
    atexit.unregister(write)
    write()
    assert json.loads(path.read_text()) == {"mismatches": [{"cpu": [[0.0, 1.0], [2.0, 0.0]], "device": [[3.0, -1.0]],
                                                            "n": 2, "x": 0.5}]}


# A libcuda.so.1 with what detection asks: cuInit, the device count, a name and the driver's version.
FAKE_CUDA = r"""
#include <stdlib.h>
#include <string.h>
int cuInit(unsigned flags) { (void)flags; return getenv("FAKE_CU_NO_DEVICE") ? 100 : 0; }
int cuDeviceGetCount(int *n) { *n = atoi(getenv("FAKE_CU_COUNT")); return 0; }
int cuDeviceGetName(char *name, int len, int dev) { (void)dev; strncpy(name, "Fake NVIDIA H200", len); return 0; }
int cuDriverGetVersion(int *v) { *v = atoi(getenv("FAKE_CU_VERSION")); return 0; }
"""


@_fake_runtime.needs_cc("a fake NVIDIA driver")
def test_nvidia_is_found_through_its_driver_with_its_cuda_major(tmp_path, monkeypatch):
    src = tmp_path / "fake_cuda.c"
    src.write_text(FAKE_CUDA)
    lib = tmp_path / "libcuda.so.1"
    subprocess.run([_fake_runtime.CC, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True, timeout=60)
    env = {"TACK_GPU_LIBDIRS": str(tmp_path)}
    monkeypatch.setenv("FAKE_CU_COUNT", "2")
    monkeypatch.setenv("FAKE_CU_VERSION", "12080")
    (gpu,), _ = gpurun.detect(env, only="nvidia")
    assert (gpu.vendor, gpu.count, gpu.name, gpu.driver_major, gpu.device) == ("nvidia", 2, "Fake NVIDIA H200", 12,
                                                                              "cuda:0")
    assert str(gpu) == "nvidia: 2 GPU(s); device 0: Fake NVIDIA H200 (CUDA driver 12.8)"
    got = _what(gpurun.make_plan(gpu, _bare()))
    assert "nvidia-cuda-nvrtc-cu12" in got and "cupy-cuda12x" in got
    monkeypatch.setenv("FAKE_CU_COUNT", "0")
    assert gpurun.detect(env, only="nvidia") == ([], [f"nvidia: {lib}: the NVIDIA driver reports no GPU"])
    monkeypatch.setenv("FAKE_CU_NO_DEVICE", "1")
    assert "cuInit failed (CUresult 100)" in gpurun.detect(env, only="nvidia")[1][0]


@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_the_cooperative_figures_script_runs_and_checks_its_results(device, tmp_path, capsys):
    """make test-gpu's coop.py at its smallest sizes on the CPU (and PoCL under make test-all):
    every row made and checked, the JSON written, a missing device refused with status 2."""
    if device == "opencl" and not os.environ.get("TACK_TEST_ALL"):
        pytest.skip("coop.py on PoCL: make test-all (eight more PoCL programs)")
    if device not in {d.split(":")[0] for d in tack.devices()}:
        pytest.skip(f"no {device} device here")
    out = tmp_path / "coop.json"
    assert coop.main(["--device", device, "--small", "--rounds", "2", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert [r["name"] for r in res["rows"]] == ["matmul f32", "stencil f32", "block_sum f32", "100 launches"]
    assert set(res["rows"][2]["ms"]) == {"exchanges", "shared tree"} and res["wrong"] == []
    assert set(res["rows"][3]["ms"]) == {"eager", "graph"}
    assert "every result checked against NumPy" in capsys.readouterr().out
    assert coop.main(["--device", "cuda:99", "--small"]) == 2


def test_the_benchmarks_sort_runs_both_passes_and_tabulates_them():
    """The benchmark's sort section on the CPU (both of the sort's passes run anywhere): each is
    NumPy's sort and timed; the table gives ms, elements a second and the ratio to the tiles."""
    sys.path.insert(0, str(ROOT / "tests" / "gpu"))
    try:
        import bench
    finally:
        sys.path.pop(0)
    from tack import _algorithms_sort as S

    res = bench.sort_figures("cpu", 5000, 1, frameworks=False)
    assert res["wrong"] == [] and sorted(res["ms"]) == ["tack blocked", "tack tiles", "tack unpadded"]
    assert all(ms > 0 for ms in res["ms"].values())
    from tack import _algorithms_sort_blocks as B

    assert S._TILES is None and B._PAD  # put back
    rows = bench.sort_table({"n": 1 << 24, "ms": {"tack tiles": 4.0, "cupy": 2.0}, "wrong": [],
                             "skipped": {"torch": "No module named 'torch'"},
                             "failed": {}}).splitlines()
    assert rows[0] == "sort of 16,777,216 float32"
    assert rows[2].split() == ["tack", "tiles", "4.000", "4.194", "1.00"]
    assert rows[3].split() == ["cupy", "2.000", "8.389", "0.50"]
    assert rows[4].startswith("torch") and "not installed" in rows[4]
