"""`make test-gpu`: the GPU check on any vendor's machine, in one command.

tests/gpu/run.sh finds a python3 and bounds the whole run with `timeout`;
everything else is here, in Python, so that the logic can be tested on a
machine without a GPU (tests/python/test_gpu_script.py):

1. **Which GPU** (seconds, before anything is built): NVIDIA through its
   driver (libcuda.so.1: cuInit, a device), AMD through ROCm's runtime
   (libamdhip64.so.7, .6 or .5: hipInit, a device, its gcnArchName), Intel
   through Level Zero (libze_loader.so.1 and a GPU device from zeDeviceGet:
   the loader alone is not a GPU), Apple by the kernel's name (Darwin).  The
   libraries are looked for by file name in the loader's directories (or in
   TACK_GPU_LIBDIRS, and the system's name in TACK_GPU_UNAME: the tests' fake
   machines), then loaded and asked.  Without a GPU the run stops with the
   reason for each vendor and exit status 3.
2. **What the machine lacks**, from package registries only: a venv in
   build/gpu/venv over the host Python's packages, then pip (from its wheel
   when the venv has none), NumPy, pytest (and pytest-xdist), cmake and ninja
   where the system has none, the ziglang wheel as the C compiler where
   there is no cc, the NVRTC wheel of the NVIDIA driver's major version where
   no NVRTC that old is found, CuPy for the vendor where it is missing.  What
   a registry cannot give (Python's headers) is named with the package to
   install.  `--dry-run` prints the detection and this plan and stops.
3. **Build** libtack, the C tests and the extension into build/gpu and
   install the package into the venv as links.
4. **Run**, each step bounded by its own limit and by what is left of the
   budget, the short steps first so that a slow suite cannot starve them:
   the C tests; for HIP first a compile for the device's own architecture
   in a child process (hiprtc aborts the process on an architecture its ROCm
   does not know: here that is an error naming the architecture and the ROCm
   to install); the device's own tests; a memory fault in a child process,
   recording what the driver does (a ROCm memory fault kills the process:
   reported as the device lost, with what to do); the bandwidth and launch
   benchmarks (tests/gpu/bench.py: bandwidth, launches, and tack.sort's two
   passes beside CuPy's and PyTorch's sorts) and on NVIDIA the probe
   (tests/gpu/probe.py); the PyTorch exchange where PyTorch is installed;
   last the language suite on the device, every kernel call compared with
   the CPU's (tests/python/_opencl_diff.py with the device named), given
   what is left.
5. **Summary**: a table of the steps, and under one output folder ($OUT, else
   build/gpu/logs) each step's log and summary.json; exit status 0 when every
   step passed, 1 when one failed, 2 when the run could not start, 3 without
   a GPU.
"""

import argparse
import ctypes
import glob
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests" / "python"
NO_GPU, CANNOT_START = 3, 2

# ------------------------------------------------------------------ detection
# The driver libraries by vendor, most recent first.
DRIVER_LIBS = {
    "nvidia": ("libcuda.so.1", "libcuda.so"),
    "amd": ("libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"),
    "intel": ("libze_loader.so.1",),
}
WHAT = {"nvidia": "NVIDIA (the driver's libcuda.so.1)", "amd": "AMD (ROCm's libamdhip64.so)",
        "intel": "Intel (Level Zero: libze_loader.so.1 and a GPU driver such as intel-level-zero-gpu)",
        "apple": "Apple (a Mac)"}
DEVICE = {"nvidia": "cuda:0", "amd": "hip:0", "intel": "level_zero:0", "apple": "metal:0"}
BUDGET = {"nvidia": 540, "amd": 720, "intel": 720, "apple": 720}  # seconds


class Gpu:
    """A GPU found through its vendor's driver."""

    def __init__(self, vendor, lib=None, count=1, name="", arch="", driver_major=0, runtime=""):
        self.vendor, self.lib, self.count, self.name = vendor, lib, count, name
        self.arch, self.driver_major, self.runtime = arch, driver_major, runtime
        self.device = DEVICE[vendor]

    def as_dict(self):
        return {k: v for k, v in vars(self).items()}

    def __str__(self):
        extra = f", {self.arch}" if self.arch else ""
        return f"{self.vendor}: {self.count} GPU(s); device 0: {self.name or '?'}{extra} ({self.runtime})"


def search_dirs(env):
    """The directories the driver libraries are looked for in: TACK_GPU_LIBDIRS
    alone when set, else LD_LIBRARY_PATH, the loader's cache and the usual places."""
    if env.get("TACK_GPU_LIBDIRS") is not None:
        return [d for d in env["TACK_GPU_LIBDIRS"].split(os.pathsep) if d]
    dirs = [d for d in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    try:
        cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=10).stdout
        dirs += [os.path.dirname(m) for m in re.findall(r"=> (\S+)", cache)]
    except (OSError, subprocess.SubprocessError):
        pass
    dirs += ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib",
             "/usr/lib/wsl/lib", "/opt/rocm/lib", *sorted(glob.glob("/opt/rocm-*/lib"), reverse=True)]
    seen, out = set(), []
    for d in dirs:
        if d not in seen:
            seen.add(d)
            out.append(d)
    return out


def find_driver_libs(dirs):
    """{vendor: [paths]}: the driver libraries present in dirs, in DRIVER_LIBS' order."""
    found = {}
    for vendor, names in DRIVER_LIBS.items():
        for name in names:
            for d in dirs:
                p = os.path.join(d, name)
                if os.path.exists(p) and os.path.realpath(p) not in map(os.path.realpath, found.get(vendor, [])):
                    found.setdefault(vendor, []).append(p)
    return found


def _load(path):
    try:
        return ctypes.CDLL(path), None
    except OSError as e:
        return None, f"{path} is there but cannot be loaded ({e})"


def probe_nvidia(path):
    cu, why = _load(path)
    if cu is None:
        return None, why
    r = cu.cuInit(0)
    if r != 0:
        return None, f"{path}: cuInit failed (CUresult {r}): the NVIDIA driver finds no usable GPU"
    n, v = ctypes.c_int(0), ctypes.c_int(0)
    if cu.cuDeviceGetCount(ctypes.byref(n)) != 0 or n.value == 0:
        return None, f"{path}: the NVIDIA driver reports no GPU"
    name = ctypes.create_string_buffer(256)
    cu.cuDeviceGetName(name, 256, 0)
    cu.cuDriverGetVersion(ctypes.byref(v))
    return Gpu("nvidia", path, n.value, name.value.decode(errors="replace"), driver_major=v.value // 1000,
               runtime=f"CUDA driver {v.value // 1000}.{v.value % 1000 // 10}"), None


def arch_from_props(raw):
    """gcnArchName from hipDeviceProp_t's bytes: ROCm 5 keeps it at offset 396;
    other layouts (ROCm 6's R0600) are searched for the first "gfx<digit>" string
    after the name (the HIP backend reads it the same way)."""
    for start in (396, 256):
        m = re.compile(rb"gfx[0-9][0-9a-zA-Z]*(?::[a-z0-9_-]+[+-])*").search(raw, start)
        if m and (start != 396 or m.start() == 396):
            return m.group().decode()
    return ""


def probe_amd(path):
    hip, why = _load(path)
    if hip is None:
        return None, why
    r = hip.hipInit(0)
    if r != 0:
        return None, f"{path}: hipInit failed (hipError {r}): ROCm finds no AMD GPU (or no access to /dev/kfd)"
    n, v = ctypes.c_int(0), ctypes.c_int(0)
    if hip.hipGetDeviceCount(ctypes.byref(n)) != 0 or n.value == 0:
        return None, f"{path}: ROCm reports no AMD GPU"
    props = ctypes.create_string_buffer(8192)
    get = getattr(hip, "hipGetDevicePropertiesR0600", None) or hip.hipGetDeviceProperties
    arch = ""
    if get(props, 0) == 0:
        arch = arch_from_props(props.raw)
    hip.hipRuntimeGetVersion(ctypes.byref(v))
    major, minor = v.value // 10_000_000, v.value // 100_000 % 100
    return Gpu("amd", path, n.value, props.raw[:256].split(b"\0")[0].decode(errors="replace"), arch=arch,
               driver_major=major, runtime=f"ROCm {major}.{minor}"), None


class _ZeProps(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_uint32), ("pNext", ctypes.c_void_p), ("type", ctypes.c_uint32),
                ("vendorId", ctypes.c_uint32), ("deviceId", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("subdeviceId", ctypes.c_uint32), ("coreClockRate", ctypes.c_uint32),
                ("maxMemAllocSize", ctypes.c_uint64), ("misc", ctypes.c_uint32 * 7),
                ("timerResolution", ctypes.c_uint64), ("timestampValidBits", ctypes.c_uint32),
                ("kernelTimestampValidBits", ctypes.c_uint32), ("uuid", ctypes.c_uint8 * 16),
                ("name", ctypes.c_char * 256)]


def probe_intel(path):
    ze, why = _load(path)
    if ze is None:
        return None, why
    r = ze.zeInit(1)  # ZE_INIT_FLAG_GPU_ONLY
    if r != 0:
        return None, f"{path}: zeInit found no GPU driver (ze_result 0x{r & 0xffffffff:x}): install intel-level-zero-gpu"
    n = ctypes.c_uint32(0)
    if ze.zeDriverGet(ctypes.byref(n), None) != 0 or n.value == 0:
        return None, f"{path}: the Level Zero loader has no driver: install intel-level-zero-gpu"
    drivers = (ctypes.c_void_p * n.value)()
    ze.zeDriverGet(ctypes.byref(n), drivers)
    gpus = []
    for drv in drivers:
        m = ctypes.c_uint32(0)
        if ze.zeDeviceGet(ctypes.c_void_p(drv), ctypes.byref(m), None) != 0 or m.value == 0:
            continue
        devs = (ctypes.c_void_p * m.value)()
        ze.zeDeviceGet(ctypes.c_void_p(drv), ctypes.byref(m), devs)
        for dev in devs:
            p = _ZeProps(stype=3)
            if ze.zeDeviceGetProperties(ctypes.c_void_p(dev), ctypes.byref(p)) == 0 and p.type == 1:
                gpus.append(p.name.decode(errors="replace"))
    if not gpus:
        return None, f"{path}: Level Zero is there but zeDeviceGet gives no GPU device"
    return Gpu("intel", path, len(gpus), gpus[0], runtime="Level Zero"), None


PROBES = {"nvidia": probe_nvidia, "amd": probe_amd, "intel": probe_intel}


def detect(env=None, only=None):
    """(the GPUs found, by vendor in preference order; why each other vendor has none)."""
    env = os.environ if env is None else env
    system = env.get("TACK_GPU_UNAME") or platform.system()
    if system == "Darwin":
        return [Gpu("apple", name=platform.machine() or "Mac", runtime="Metal")], []
    if only == "apple":
        return [], [f"apple: this is {system}, not macOS"]
    libs = find_driver_libs(search_dirs(env))
    gpus, why = [], []
    for vendor in DRIVER_LIBS:
        if only and vendor != only:
            continue
        if vendor not in libs:
            why.append(f"{vendor}: no {' / '.join(DRIVER_LIBS[vendor])}")
            continue
        for path in libs[vendor]:
            gpu, reason = PROBES[vendor](path)
            if gpu:
                gpus.append(gpu)
                break
            why.append(f"{vendor}: {reason}")
    return gpus, why


def no_gpu_message(why, system):
    kinds = ", ".join(WHAT.values())
    return (f"make test-gpu: FAILED: no GPU here ({system}) -- " + "; ".join(why) +
            f". Run make test-gpu on a machine with a GPU of one of: {kinds}.")


# ------------------------------------------------------------------ bootstrap
SURVEY = r"""
import importlib.util as u, json, os, sys, sysconfig
mods = {m: u.find_spec(m) is not None for m in ("pip", "numpy", "pytest", "xdist", "cupy", "torch", "ziglang")}
inc = sysconfig.get_paths().get("include") or ""
print(json.dumps({"python": list(sys.version_info[:3]), "executable": sys.executable, "modules": mods,
                  "headers": os.path.exists(os.path.join(inc, "Python.h")), "include": inc,
                  "ensurepip": u.find_spec("ensurepip") is not None, "venv": u.find_spec("venv") is not None}))
"""


def survey_python(py):
    p = subprocess.run([py, "-c", SURVEY], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError(f"{py} cannot run a survey: {p.stderr[-500:]}")
    return json.loads(p.stdout)


def cmake_version(cmake):
    try:
        out = subprocess.run([cmake, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"(\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def nvrtc_candidates(env=None, extra_dirs=()):
    """The NVRTC libraries to try, in order: TACK_NVRTC_PATH, a pip wheel's copy in
    extra_dirs (site-packages/nvidia/...), the sonames, a toolkit's."""
    env = os.environ if env is None else env
    names = [env["TACK_NVRTC_PATH"]] if env.get("TACK_NVRTC_PATH") else []
    for d in extra_dirs:
        names += sorted(glob.glob(os.path.join(d, "nvidia", "**", "libnvrtc.so*"), recursive=True), reverse=True)
    names += ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so",
              *sorted(glob.glob("/usr/local/cuda*/lib64/libnvrtc.so*"), reverse=True)]
    return [n for n in names if "builtins" not in n]


def nvrtc_version(name):
    """An NVRTC library's major version; 0 when it does not load."""
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return 0
    major, minor = ctypes.c_int(0), ctypes.c_int(0)
    return major.value if lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) == 0 else 0


def pick_nvrtc(driver_major, candidates):
    """(the first NVRTC in candidates no newer than the driver, its major): PTX from a
    newer NVRTC is refused by an older driver.  Without one, (None, the newest major
    found, 0 for none)."""
    newest = 0
    for name in candidates:
        major = nvrtc_version(name)
        if major and major <= driver_major:
            return name, major
        newest = max(newest, major)
    return None, newest


def nvrtc_package(driver_major):
    """The pip package of NVRTC for a CUDA driver's major version."""
    if driver_major >= 13:
        return f"nvidia-cuda-nvrtc=={driver_major}.*"
    return f"nvidia-cuda-nvrtc-cu{driver_major}"


def cupy_package(gpu):
    """CuPy's wheel for the vendor and its runtime's major version; None where it has none."""
    if gpu.vendor == "nvidia" and gpu.driver_major >= 11:
        return f"cupy-cuda{min(gpu.driver_major, 13)}x"
    if gpu.vendor == "amd":
        return {5: "cupy-rocm-5-0", 7: "cupy-rocm-7-0"}.get(gpu.driver_major)
    return None


def make_plan(gpu, facts):
    """What to install, as a list of {"what", "how", "required", "why"}: "how" is
    "pip" (a package list from PyPI), "pip-wheel" (pip itself, from its wheel) or
    "none" (no registry has it: the message names what to install)."""
    plan = []
    mods = facts["modules"]

    def add(what, how, required, why):
        plan.append({"what": what, "how": how, "required": required, "why": why})

    if tuple(facts["python"][:2]) < (3, 10):
        add("Python >= 3.10", "none", True, f"Python {'.'.join(map(str, facts['python']))} is too old for Tack "
            "(Debian/Ubuntu: apt-get install python3.11; macOS: brew install python@3.12; or set PYTHON)")
    if not facts["headers"]:
        add("Python headers", "none", True, f"no Python.h in {facts['include']} "
            "(Debian/Ubuntu: apt-get install python3-dev; Fedora: dnf install python3-devel; or set PYTHON)")
    if not mods["pip"] and not facts.get("uv"):
        add(["pip"], "pip-wheel", True, "this Python has no pip (and there is no uv): pip's own wheel from PyPI "
            "runs to install it")
    for m, pkg in (("numpy", "numpy"), ("pytest", "pytest")):
        if not mods[m]:
            add([pkg], "pip", True, f"{m} is needed by the tests")
    if not mods["xdist"]:
        add(["pytest-xdist"], "pip", False, "the language suite on several processes")
    cm = facts.get("cmake")
    if not cm or tuple(cm) < (3, 20):
        add(["cmake"], "pip", True, "no cmake >= 3.20 on PATH" + (f" (found {cm[0]}.{cm[1]})" if cm else ""))
    if not facts.get("ninja") and not facts.get("make"):
        add(["ninja"], "pip", True, "no make or ninja for cmake to drive")
    if not facts.get("cc") and not mods["ziglang"]:
        add(["ziglang"], "pip", True, "no C compiler (cc, gcc, clang): zig cc from the ziglang wheel builds Tack "
            "and its CPU kernels")
    if gpu.vendor == "nvidia":
        have = facts.get("nvrtc_major", 0)
        if not have or have > gpu.driver_major:
            add([nvrtc_package(gpu.driver_major)], "pip", True,
                f"NVRTC of the driver's CUDA {gpu.driver_major} is needed" +
                (f" (found NVRTC {have}, newer than the driver)" if have else " (none found)"))
    cupy = cupy_package(gpu)
    if not mods["cupy"]:
        if cupy:
            add([cupy], "pip", False, "CuPy, for the DLPack exchange and the benchmarks beside Tack")
        elif gpu.vendor in ("nvidia", "amd"):
            add("CuPy", "none", False, f"no CuPy wheel for {gpu.runtime}: its tests are skipped")
    return plan


def host_facts(py, env=None):
    """What the machine has: the Python's survey and the tools on PATH."""
    env = os.environ if env is None else env
    facts = survey_python(py)
    path = env.get("PATH", "")
    which = lambda t: shutil.which(t, path=path)  # noqa: E731
    cmake = which("cmake")
    facts["cmake"] = cmake_version(cmake) if cmake else None
    facts["ninja"], facts["make"] = which("ninja"), which("make")
    facts["cc"] = env.get("CC") or which("cc") or which("gcc") or which("clang")
    facts["uv"] = _uv(path)
    return facts


def _uv(path):
    """uv on PATH, or the one `make env` installs into build/uv."""
    own = ROOT / "build" / "uv" / "bin" / "uv"
    return shutil.which("uv", path=path) or (str(own) if own.exists() else None)


def format_plan(gpu, plan):
    lines = [f"plan for {gpu.vendor}:"]
    if not plan:
        lines.append("  nothing to install: the machine has what the run needs")
    for a in plan:
        what = " ".join(a["what"]) if isinstance(a["what"], list) else a["what"]
        kind = "required" if a["required"] else "optional"
        how = {"pip": "pip install", "pip-wheel": "pip from its wheel:", "none": "cannot install:"}[a["how"]]
        lines.append(f"  {how} {what}  [{kind}] -- {a['why']}")
    return "\n".join(lines)


# ------------------------------------------------------------------ steps
class Run:
    """The steps of one run: each bounded by its limit and the budget's remainder,
    logged to OUT/<name>.log, gathered for the summary."""

    def __init__(self, out, budget, env=None):
        self.out, self.deadline = Path(out), time.monotonic() + budget
        self.out.mkdir(parents=True, exist_ok=True)
        self.steps, self.env = [], dict(os.environ if env is None else env)

    def left(self):
        return self.deadline - time.monotonic()

    def record(self, name, status, seconds=0.0, detail="", log=None):
        self.steps.append({"name": name, "status": status, "seconds": round(seconds, 1), "detail": detail,
                           "log": log})
        print(f"   {status}: {name}" + (f" -- {detail}" if detail else ""), flush=True)

    def command(self, name, cmd, limit, detail="", cwd=ROOT, env=None):
        """Run cmd as step name; (status, its output)."""
        log = self.out / f"{_slug(name)}.log"
        limit = min(limit, self.left() - 5)
        print(f"== {name}", flush=True)
        if limit <= 0:
            self.record(name, "FAILED", 0, "no time left in the budget", None)
            return "FAILED", ""
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, cwd=cwd, env=env or self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, timeout=limit, errors="replace")
            text, status = p.stdout, "ok" if p.returncode == 0 else "FAILED"
            why = detail if p.returncode == 0 else f"exit status {p.returncode}"
        except subprocess.TimeoutExpired as e:
            text = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            status, why = "FAILED", f"stopped after {limit:.0f} s"
        log.write_text(" ".join(map(str, cmd)) + "\n\n" + text)
        if status != "ok":
            print(text[-3000:], flush=True)
        self.record(name, status, time.monotonic() - t0, why, str(log))
        return status, text

    def failed(self):
        return any(s["status"] == "FAILED" for s in self.steps)


def _slug(name):
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def summary_table(steps):
    w = max([len(s["name"]) for s in steps] + [4])
    rows = [f"  {'step':{w}s}  {'status':8s} {'s':>6s}  detail"]
    for s in steps:
        rows.append(f"  {s['name']:{w}s}  {s['status']:8s} {s['seconds']:6.1f}  {s['detail']}")
    return "\n".join(rows)


def write_summary(out, gpu, steps, plan=(), extra=None):
    """OUT/summary.json: the GPU, the plan, every step; its exit status (0 or 1)."""
    status = 1 if any(s["status"] == "FAILED" for s in steps) else 0
    doc = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "gpu": gpu.as_dict() if gpu else None,
           "plan": list(plan), "steps": list(steps), "passed": status == 0, **(extra or {})}
    Path(out, "summary.json").write_text(json.dumps(doc, indent=1))
    return status


# ------------------------------------------------------------------ the child checks
HIP_ARCH_CHILD = r"""
import sys
from tack import _core
_core._hiprtc_compile('extern "C" __global__ void k(float *x) { x[threadIdx.x] += 1.0f; }', arch=sys.argv[1])
print("compiled for", sys.argv[1])
"""


def hip_arch_check(py, arch, env, timeout=120):
    """(ok, message): hiprtc compiles for arch in a child process (it aborts the
    process on an architecture its ROCm does not know)."""
    base = arch.split(":")[0]
    if not base:
        return False, "the HIP runtime gave no gcnArchName for device 0"
    try:
        p = subprocess.run([py, "-c", HIP_ARCH_CHILD, base], capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"hiprtc did not finish compiling for {base} in {timeout} s"
    if p.returncode == 0:
        return True, f"hiprtc compiles for {base}"
    how = f"was killed by signal {-p.returncode} ({_signame(-p.returncode)})" if p.returncode < 0 else \
        f"failed (exit status {p.returncode})"
    last = (p.stderr.strip().splitlines() or [""])[-1][:300]
    return False, (f"the device's architecture {base} cannot be compiled for: hiprtc {how} "
                   f"compiling a one-line kernel ({last}). This ROCm's compiler does not know {base}: install a ROCm "
                   f"that supports it (AMD's ROCm compatibility matrix lists each release's GPUs), "
                   f"or point TACK_HIPRTC_PATH at a newer libhiprtc.so")


def _signame(n):
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


FAULT_CHILD = r"""
import json, sys
import numpy as np
import tack

def say(**kw):
    print("FAULT " + json.dumps(kw), flush=True)

@tack.kernel(checks=False)
def poke(x, k):
    for i in range(x.shape[0]):
        x[i + k] = 1.0

dev = sys.argv[1]
x = tack.zeros(256, tack.f32, device=dev)
say(stage="launch")
try:
    poke(x, 1 << 40)
    tack.synchronize(dev)
    say(stage="sync", error=None)
except Exception as e:
    say(stage="sync", error=f"{type(e).__name__}: {e}"[:600])
try:
    y = tack.array(np.arange(4.0, dtype=np.float32), device=dev)
    say(stage="after", ok=bool((y.numpy() == np.arange(4.0)).all()), error=None)
except Exception as e:
    say(stage="after", ok=False, error=f"{type(e).__name__}: {e}"[:600])
"""

ROCM_FAULT = re.compile(r"Memory access fault by GPU|HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION|"
                        r"HSA_STATUS_ERROR_MEMORY_FAULT|Page not present")


def classify_fault(returncode, output):
    """What a kernel writing far out of bounds did to its process: a dict with
    "outcome" (reported / device lost / crashed / not seen / hung), "ok" (the
    run's verdict: every outcome but "not seen" and "hung" is the driver's
    behaviour, recorded) and "message" (what the user should know and do)."""
    events = {}
    for line in output.splitlines():
        if line.startswith("FAULT "):
            try:
                e = json.loads(line[6:])
                events[e["stage"]] = e
            except ValueError:
                pass
    if returncode is None:
        return {"outcome": "hung", "ok": False, "events": events,
                "message": "the process neither reported the fault nor ended: the driver hangs on a memory fault"}
    if returncode < 0 or "sync" not in events:
        sig = _signame(-returncode) if returncode < 0 else f"exit status {returncode}"
        if ROCM_FAULT.search(output):
            return {"outcome": "device lost", "ok": True, "events": events, "signal": sig, "message":
                    f"the device was lost: ROCm ended the process ({sig}) on a GPU memory access fault, before Tack "
                    "could report it. Nothing in the process survives it: rerun with the kernel's checks on "
                    "(the default, not checks=False) to get the bad index as an IndexError, and check the "
                    "addresses passed to array_from_ptr / from_dlpack"}
        return {"outcome": "crashed", "ok": True, "events": events, "signal": sig,
                "message": f"the process ended ({sig}) without Tack reporting the fault"}
    sync = events["sync"]
    if sync.get("error") is None:
        return {"outcome": "not seen", "ok": False, "events": events,
                "message": "a write 4 TiB past an array's end completed without an error: the fault was not seen"}
    after = events.get("after", {})
    usable = "usable afterwards" if after.get("ok") else \
        f"unusable afterwards ({after.get('error') or 'the process ended'})"
    return {"outcome": "reported", "ok": True, "events": events,
            "message": f"reported at synchronize as {sync['error'][:200]}; the device was {usable}"}


def fault_in_child(py, device, env, timeout=90):
    """(classify_fault's verdict, the child's output): a kernel without checks
    writes 4 TiB past an array's end on device, in a process of its own."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        script = Path(d, "fault_child.py")  # a file: Tack compiles a kernel from its source text
        script.write_text(FAULT_CHILD)
        try:
            p = subprocess.run([py, str(script), device], capture_output=True, text=True, env=env, timeout=timeout,
                               errors="replace")
            rc, text = p.returncode, p.stdout + p.stderr
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            rc, text = None, out
    return classify_fault(rc, text), text


# ------------------------------------------------------------------ the run
def _venv(run, host_py, build, plan):
    venv = build / "venv"
    py = venv / "bin" / "python"
    if not py.exists():
        facts = survey_python(host_py)
        args = [] if facts["ensurepip"] else ["--without-pip"]
        p = subprocess.run([host_py, "-m", "venv", *args, str(venv)], capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError(f"could not make a venv with {host_py}: {p.stderr[-400:]} "
                               "(Debian/Ubuntu: apt-get install python3-venv)")
        # the host Python's own packages (PyTorch, CuPy ...) stay visible, after the venv's own
        paths = subprocess.run([host_py, "-c", "import site; print('\\n'.join(site.getsitepackages() + "
                                "[site.getusersitepackages()]))"], capture_output=True, text=True).stdout
        site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True).stdout.strip()
        Path(site, "host-packages.pth").write_text(paths)
    return str(py)


def _pip_from_wheel(py, run):
    """pip into the venv from pip's own wheel on PyPI (a wheel is a zip that runs)."""
    import urllib.request

    with urllib.request.urlopen("https://pypi.org/pypi/pip/json", timeout=20) as r:
        urls = [u for u in json.load(r)["urls"] if u["filename"].endswith(".whl")]
    whl = Path(py).resolve().parents[2] / urls[0]["filename"]  # beside the venv, in build/gpu
    urllib.request.urlretrieve(urls[0]["url"], whl)
    return run.command("pip (from its wheel)", [py, f"{whl}/pip", "install", "--no-index", str(whl)], 120)[0]


def registry_reachable(host="pypi.org", timeout=5):
    """Whether PyPI answers at all (a machine without network fails at once, not after pip's retries)."""
    import socket

    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def bootstrap(run, py, plan):
    """Carry out the plan: required installs that fail stop the run, optional ones are noted."""
    online = None
    for a in plan:
        if a["how"] != "none":
            online = registry_reachable() if online is None else online
            if not online:
                name = "install " + " ".join(a["what"])
                if a["required"]:
                    run.record(name, "FAILED", 0, f"PyPI cannot be reached from here -- {a['why']}: install it "
                               "yourself, or give the machine network access")
                    return False
                run.record(name, "skipped", 0, f"PyPI cannot be reached from here ({a['why']})")
                continue
        if a["how"] == "none":
            if a["required"]:
                run.record(f"needs {a['what']}", "FAILED", 0, a["why"])
                return False
            run.record(f"{a['what']}", "skipped", 0, a["why"])
            continue
        name = "install " + " ".join(a["what"])
        try:
            if a["how"] == "pip-wheel":
                status = _pip_from_wheel(py, run)
            else:
                uv = _uv(run.env.get("PATH", ""))
                cmd = [uv, "pip", "install", "--python", py, *a["what"]] if uv else \
                    [py, "-m", "pip", "install", "--disable-pip-version-check", "--only-binary=:all:", *a["what"]]
                status = run.command(name, cmd, 300)[0]
        except OSError as e:  # the registry cannot be reached
            run.record(name, "FAILED", 0, f"offline? {e}")
            status = "FAILED"
        if status != "ok":
            if a["required"]:
                run.steps[-1]["detail"] += f" -- {a['why']}: install it yourself, or give the machine network access"
                return False
            run.steps[-1]["status"] = "skipped"
            run.steps[-1]["detail"] = f"could not install ({a['why']})"
    return True


def _compiler_wrapper(build, py):
    """A `cc` that is zig cc from the ziglang wheel, for cmake and for Tack's CPU kernels."""
    bindir = build / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    cc = bindir / "cc"
    cc.write_text(f'#!/bin/sh\nexec "{py}" -m ziglang cc "$@"\n')
    cc.chmod(0o755)
    return str(bindir)


def build_and_install(run, py, build, env):
    gen = ["-G", "Ninja"] if shutil.which("ninja", path=env["PATH"]) else []
    status, _ = run.command("configure", ["cmake", "-S", str(ROOT), "-B", str(build), *gen, "-DTACK_BUILD_PYTHON=ON",
                                          "-DTACK_BUILD_TESTS=ON", "-DCMAKE_BUILD_TYPE=Release",
                                          f"-DPython_EXECUTABLE={py}"], 120)
    if status == "ok":
        status, _ = run.command("build", ["cmake", "--build", str(build), f"-j{os.cpu_count() or 2}"], 300)
    if status != "ok":
        return False
    site = Path(subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True).stdout.strip())
    pkg = site / "tack"
    shutil.rmtree(pkg, ignore_errors=True)
    for src in (ROOT / "python" / "tack").rglob("*"):
        if src.is_file() and not src.name.startswith("_core") and "__pycache__" not in src.parts:
            dst = pkg / src.relative_to(ROOT / "python" / "tack")
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.symlink_to(src)
    for so in glob.glob(str(build / "_core*.so")):
        shutil.copy2(so, pkg)
    (pkg / "lib").mkdir(exist_ok=True)
    for so in glob.glob(str(build / "libtack.so*")) + glob.glob(str(build / "libtack*.dylib")):  # Linux, macOS
        dst = pkg / "lib" / os.path.basename(so)
        if os.path.islink(so):
            dst.symlink_to(os.readlink(so))
        else:
            shutil.copy2(so, dst)
    return True


LANGUAGE_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import _kernel_wrap, _suite
device, out, timeout, workers = sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
res = _kernel_wrap.run_plugins({"_opencl_diff": "TACK_OPENCL_DIFF"}, _suite.paths(), out, timeout, cwd=sys.argv[1],
                               prefix="language", args=("-n", str(workers)) if workers > 1 else (),
                               TACK_OPENCL_DEVICE=device)
with open(out + "/language.json", "w") as f:
    json.dump(res, f, indent=1)
"""


def language_suite(run, py, gpu, env):
    """Every kernel call of the language suite, run on the CPU as the test makes it and
    again on the device (tests/python/_opencl_diff.py, pointed at the device)."""
    name = f"language suite on {gpu.device} vs the CPU"
    workers = min(8, os.cpu_count() or 2) if _has(py, "xdist") else 1
    limit = max(10, min(300, run.left() - 15))  # the last step: what is left, less the summary's time
    status, _ = run.command(name, [py, "-c", LANGUAGE_CHILD, str(TESTS), gpu.device, str(run.out), str(limit - 10),
                                   str(workers)], limit, env=env)
    path = Path(run.out, "language.json")
    if status != "ok" or not path.exists():
        return
    res = json.loads(path.read_text())
    diff = res["_opencl_diff"]
    bad = diff["mismatches"]
    step = run.steps[-1]
    step["detail"] = (f"{diff['compared']} of {diff['calls']} calls compared ({diff['exact']} arrays exact, "
                      f"{diff['close'] + diff['close_atomic']} close), {len(bad)} mismatches, "
                      f"{sum(diff['not_run'].values())} not run")
    step["log"] = str(path)
    proc = res.get("_process", {})
    if proc.get("returncode", 0) < 0 or "node down" in proc.get("tail", ""):  # a process of the suite crashed
        step["detail"] += f"; a test process crashed (see {path})"
        bad = bad or ["crash"]
    if bad or not diff["compared"]:
        step["status"] = "FAILED"
    print(f"   {step['status']}: {step['detail']}", flush=True)


def _has(py, module):
    return subprocess.run([py, "-c", f"import {module}"], capture_output=True).returncode == 0


def device_tests(gpu):
    """The device's own test files (with their PyTorch / CuPy exchange) and pytest's -k."""
    return {"nvidia": (["test_cuda.py", "test_strided_gpu.py"], "not language_suite"),
            "amd": (["test_hip_gpu.py"], ""),
            "intel": (["test_level_zero_gpu.py"], "not language_suite"),  # the suite is a step of its own
            "apple": ([], "")}[gpu.vendor]


def run_all(args, gpu, plan, run, host_py):
    build = ROOT / "build" / "gpu"
    py = _venv(run, host_py, build, plan)
    # the venv's facts decide what it lacks: the plan shown by --dry-run was the host Python's
    facts = host_facts(py, run.env)
    if gpu.vendor == "nvidia":
        facts["nvrtc_major"] = pick_nvrtc(gpu.driver_major, nvrtc_candidates(run.env, _site_dirs(py)))[1]
    plan = make_plan(gpu, facts)
    print(format_plan(gpu, plan), flush=True)
    env = run.env
    env["PATH"] = f"{Path(py).parent}{os.pathsep}{env.get('PATH', '')}"
    if not bootstrap(run, py, plan):
        return plan
    if not facts["cc"]:
        env["PATH"] = _compiler_wrapper(build, py) + os.pathsep + env["PATH"]
        env["CC"] = str(build / "bin" / "cc")
    env["TACK_CACHE_DIR"] = str(build / "kernel-cache")
    env.setdefault("TACK_TEST_TOOL_CACHE", str(build / "tool-cache"))
    if gpu.vendor == "nvidia" and not env.get("TACK_NVRTC_PATH"):
        # named for Tack, which would otherwise take the newest soname, maybe newer than the driver
        name, major = pick_nvrtc(gpu.driver_major, nvrtc_candidates(env, _site_dirs(py)))
        if name:
            env["TACK_NVRTC_PATH"] = name
            print(f"   NVRTC {major}: {name}", flush=True)
    if gpu.vendor == "amd" and gpu.lib:
        env.setdefault("TACK_HIP_PATH", gpu.lib)
        # no OpenCL driver beside hiprtc: Debian's PoCL and ROCm's comgr bring two LLVMs into one process
        env["OCL_ICD_VENDORS"] = str(build / "no-opencl")
    # the device's test file fails instead of skipping when Tack cannot use the GPU found
    env["TACK_GPU_EXPECT"] = gpu.device.split(":")[0]
    if not build_and_install(run, py, build, env):
        return plan
    t = lambda f: str(TESTS / f)  # noqa: E731
    status, _ = run.command(f"Tack sees {gpu.device}", [py, "-c", f"import tack; x = tack.zeros(4, device="
                                                                   f"'{gpu.device}'); print(x.device)"], 60)
    if gpu.vendor == "amd":
        t0 = time.monotonic()
        ok, msg = hip_arch_check(py, gpu.arch, env)
        run.record(f"hiprtc for {gpu.arch.split(':')[0] or '?'} (child)", "ok" if ok else "FAILED",
                   time.monotonic() - t0, msg)
        if not ok:
            return plan
    run.command("C tests", ["ctest", "--test-dir", str(build), "--output-on-failure", f"-j{os.cpu_count() or 2}"],
                150)
    if status == "ok":
        # the short steps first, the open-ended language suite last: on a lent machine with
        # a hard budget the bandwidth figures and the device's own tests must not be the
        # steps a slow suite starves
        files, k = device_tests(gpu)
        if files:
            run.command(f"{gpu.vendor} device tests", [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
                                                       *[t(f) for f in files], *(["-k", k] if k else [])], 200)
        if gpu.vendor == "apple":  # what only a Mac shows (the C test test_metal_device ran with the C tests)
            run.command("Metal interop", [py, str(ROOT / "tests" / "metal" / "interop_on_mac.py")], 120)
            run.command("validator (msl)", [py, str(ROOT / "docs" / "examples" / "validate.py"), "--arch", "metal"],
                        200)
        t0 = time.monotonic()
        verdict, text = fault_in_child(py, gpu.device, env, timeout=max(10, min(90, run.left() - 5)))
        Path(run.out, "fault.log").write_text(text)
        Path(run.out, "fault.json").write_text(json.dumps(verdict, indent=1))
        run.record("memory fault (child)", "ok" if verdict["ok"] else "FAILED", time.monotonic() - t0,
                   f"{verdict['outcome']}: {verdict['message']}", str(Path(run.out, "fault.json")))
        run.command("benchmarks", [py, str(ROOT / "tests" / "gpu" / "bench.py"), "--device", gpu.device,
                                   "--json", str(run.out / "bench.json")], 180)  # 30 s of it the sort's
        if gpu.vendor == "nvidia":
            run.command("probe", [py, str(ROOT / "tests" / "gpu" / "probe.py"), "--json",
                                  str(run.out / "probe.json")], 90)
        # issue 38's figures: tiled product against the plain one and cuBLAS, the shared-memory
        # stencil, a block sum with and without the sub-group exchanges, 100 launches against a graph
        run.command("cooperative kernels and graphs", [py, str(ROOT / "tests" / "gpu" / "coop.py"), "--device",
                                                       gpu.device, "--json", str(run.out / "coop.json")], 120)
        if gpu.vendor == "nvidia" and _has(py, "torch"):
            run.command("PyTorch interop", [py, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                            t("test_interop_torch.py")], 120)
        language_suite(run, py, gpu, env)
    return plan


def _site_dirs(py):
    out = subprocess.run([py, "-c", "import sys; print('\\n'.join(p for p in sys.path if p))"], capture_output=True,
                         text=True).stdout
    return [p for p in out.splitlines() if os.path.isdir(p)]


def main(argv=None):
    ap = argparse.ArgumentParser(description="make test-gpu: the GPU check on an NVIDIA, AMD, Intel or Apple GPU")
    ap.add_argument("--dry-run", action="store_true", help="print the GPU found and what would be installed; stop")
    ap.add_argument("--vendor", choices=sorted(WHAT), help="use this vendor's GPU (when there are several)")
    ap.add_argument("--out", default=os.environ.get("OUT") or str(ROOT / "build" / "gpu" / "logs"))
    ap.add_argument("--budget", type=float, help="seconds for the whole run (default: the vendor's; TACK_GPU_BUDGET)")
    args = ap.parse_args(argv)
    system = os.environ.get("TACK_GPU_UNAME") or platform.system()
    gpus, why = detect(only=args.vendor)
    if not gpus:
        print(no_gpu_message(why, system), file=sys.stderr)
        return NO_GPU
    gpu = gpus[0]
    print(f"== GPU: {gpu}", flush=True)
    for other in gpus[1:]:
        print(f"   also: {other} (make test-gpu VENDOR={other.vendor} checks it)")
    host_py = sys.executable
    if args.dry_run:
        facts = host_facts(host_py)
        if gpu.vendor == "nvidia":
            facts["nvrtc_major"] = pick_nvrtc(gpu.driver_major, nvrtc_candidates(extra_dirs=_site_dirs(host_py)))[1]
        print(format_plan(gpu, make_plan(gpu, facts)))
        return 0
    budget = args.budget or float(os.environ.get("TACK_GPU_BUDGET") or BUDGET[gpu.vendor])
    run = Run(args.out, budget)
    plan = []

    def out_of_time(signum, frame):
        raise OutOfTime(f"stopped after {budget:g} s (the whole check must fit in its budget)")

    # each step keeps to what is left of the budget; this stops what is between them
    before = signal.signal(signal.SIGALRM, out_of_time)
    signal.setitimer(signal.ITIMER_REAL, budget)
    late = False
    try:
        plan = run_all(args, gpu, plan, run, host_py)
    except OutOfTime as e:
        late = True
        run.record("the run itself", "FAILED", 0, str(e))
    except Exception as e:  # noqa: BLE001 -- the run's own failure, in the summary like a step's
        run.record("the run itself", "FAILED", 0, f"{type(e).__name__}: {e}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    status = write_summary(run.out, gpu, run.steps, plan)
    print(f"\n== summary ({gpu.vendor}, {gpu.name}; logs and summary.json in {run.out})")
    print(summary_table(run.steps))
    print("make test-gpu: passed" if status == 0 else "make test-gpu: FAILED", file=sys.stdout if status == 0
          else sys.stderr)
    return 124 if late else status


class OutOfTime(Exception):
    """The run's budget is spent."""


if __name__ == "__main__":
    sys.exit(main())
