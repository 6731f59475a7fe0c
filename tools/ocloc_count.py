"""Count the Intel GPU machine code of fast_math and plain OpenCL kernels.

Tack's OpenCL and Level Zero backends build the "opencl" dialect's OpenCL C
with options that depend on the kernel: a plain kernel with
-cl-fp32-correctly-rounded-divide-sqrt where the device offers it (Intel's
GPUs with fp64 do), a fast_math kernel with -cl-fast-relaxed-math instead
(src/backends/opencl/opencl.c, src/backends/level_zero/level_zero_launch.c).
This tool shows what that changes without a GPU: it compiles one kernel per
math operation (sin, exp, sqrt, a division, a multiply-add, and the first four in
one), plain and
fast_math, with Intel's offline compiler (the `ocloc` command, in Debian's
intel-opencl-icd) to native code for one device (`-device pvc` by default),
disassembles it (`ocloc disasm`, which needs libiga64.so: Debian ships only
libiga64.so.1, so a directory with the unversioned link is put on
LD_LIBRARY_PATH), and counts the instructions of the kernel's parallel phase
(tk_phase0: every line of the listing that is not a label or a comment),
and among them the extended math unit's (`math.sin`, `math.inv`, ...) and
the float multiply-adds (`mad` into a float: contraction).  A plain kernel
is counted twice: on a device with correctly rounded f32 division and sqrt
and on one without.

Two builds are counted for each: OpenCL's (ocloc compiles the OpenCL C to
native code with the options clBuildProgram gets) and Level Zero's (ocloc
makes SPIR-V with Tack's ocloc options, then native code from that SPIR-V
with the module's build flags, as zeModuleCreate would).  The last column
is the fast_math kernel's SPIR-V built without the module's flag: what the
flag, not the SPIR-V, decides.

Usage: python tools/ocloc_count.py [--device pvc] [--json PATH]
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np

import tack


def sin_k(x, y, out):
    for i in range(x.shape[0]):
        out[i] = math.sin(x[i])


def exp_k(x, y, out):
    for i in range(x.shape[0]):
        out[i] = math.exp(x[i])


def sqrt_k(x, y, out):
    for i in range(x.shape[0]):
        out[i] = math.sqrt(x[i])


def div_k(x, y, out):
    for i in range(x.shape[0]):
        out[i] = x[i] / y[i]


def muladd_k(x, y, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * y[i] + x[i]


def all_k(x, y, out):
    for i in range(x.shape[0]):
        out[i] = math.sin(x[i]) + math.exp(y[i]) + math.sqrt(y[i]) + x[i] / y[i]


KERNELS = [("sin", sin_k), ("exp", exp_k), ("sqrt", sqrt_k), ("x / y", div_k), ("x * y + x", muladd_k),
           ("all four", all_k)]

# What the backends pass (opencl.c build_options and opencl_launch.c program_options;
# level_zero_launch.c cl_options and build_flags) on a device with correctly rounded f32
# division and sqrt, as Intel's GPUs with fp64 report.
CL_PLAIN = "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt"
CL_FAST = "-cl-std=CL1.2 -cl-fast-relaxed-math"
ZE_PLAIN = "-ze-fp32-correctly-rounded-divide-sqrt"
ZE_FAST = "-cl-fast-relaxed-math"


def iga_dir(work):
    """A directory holding libiga64.so (a link to the versioned library), or None."""
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/lib"):
        for name in ("libiga64.so", "libiga64.so.1", "libiga64.so.2"):
            p = os.path.join(d, name)
            if os.path.exists(p):
                link = os.path.join(work, "iga")
                os.makedirs(link, exist_ok=True)
                if not os.path.exists(os.path.join(link, "libiga64.so")):
                    os.symlink(p, os.path.join(link, "libiga64.so"))
                return link
    return None


def run(args, cwd, env):
    r = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")


def count(asm_path):
    """[instructions, {math unit op: count}, float mads] of one disassembled kernel."""
    n = fmad = 0
    maths = {}
    with open(asm_path) as f:
        for line in f:
            t = line.strip()
            if not t or t.startswith("//") or re.match(r"^L\d+:$", t):
                continue
            words = re.sub(r"^\([^)]*\)\s*", "", t).split()
            n += 1
            if words[0].startswith("math"):
                maths[words[0]] = maths.get(words[0], 0) + 1
            if words[0] == "mad" and ":f" in words[2]:  # the destination's type
                fmad += 1
    return [n, maths, fmad]


def cell(c):
    n, maths, fmad = c
    parts = [f"{v} {k}" for k, v in sorted(maths.items())] + ([f"{fmad} float mad"] if fmad else [])
    return f"{n}" + (f" ({', '.join(parts)})" if parts else "")


def native(work, tag, device, env, source=None, spirv=None, options=""):
    """ocloc's native code for tk_phase0 of an OpenCL C source or a SPIR-V file: its counts."""
    d = os.path.join(work, tag)
    os.makedirs(d)
    if source is not None:
        with open(os.path.join(d, "k.cl"), "w") as f:
            f.write(source)
        args = ["ocloc", "compile", "-q", "-file", "k.cl", "-device", device, "-options", options, "-output", "k"]
    else:
        shutil.copy(spirv, os.path.join(d, "k.spv"))
        args = ["ocloc", "compile", "-q", "-spirv_input", "-file", "k.spv", "-device", device, "-output", "k"]
        if options:
            args += ["-options", options]
    run(args, d, env)
    bins = [f for f in os.listdir(d) if f.endswith(".bin")]
    run(["ocloc", "disasm", "-file", bins[0], "-device", device, "-dump", "dis"], d, env)
    return count(os.path.join(d, "dis", "tk_phase0_KernelHeap.asm"))


def spirv(work, tag, source, device, options, env):
    d = os.path.join(work, tag)
    os.makedirs(d)
    with open(os.path.join(d, "k.cl"), "w") as f:
        f.write(source)
    args = ["ocloc", "compile", "-q", "-spv_only", "-file", "k.cl", "-device", device, "-options", options]
    run(args + ["-output", "k"], d, env)
    return os.path.join(d, [f for f in os.listdir(d) if f.endswith(".spv")][0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="pvc")
    ap.add_argument("--json")
    a = ap.parse_args()
    if not shutil.which("ocloc"):
        raise SystemExit("needs ocloc (Debian: intel-opencl-icd)")
    x = np.ones(8, np.float32)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        lib = iga_dir(work)
        if lib is None:
            raise SystemExit("needs libiga64 (Debian: libigc1 or intel-opencl-icd) for ocloc disasm")
        env = dict(os.environ, LD_LIBRARY_PATH=lib + os.pathsep + os.environ.get("LD_LIBRARY_PATH", ""))
        for i, (name, fn) in enumerate(KERNELS):
            plain = tack.kernel(fn).generated_source(x, x, x, target="opencl")
            fast = tack.kernel(fn, fast_math=True).generated_source(x, x, x, target="opencl")
            row = {"kernel": name}
            row["opencl plain"] = native(work, f"{i}cp", a.device, env, source=plain, options=CL_PLAIN)
            row["opencl plain, no rounded div/sqrt"] = native(work, f"{i}cn", a.device, env, source=plain,
                                                              options="-cl-std=CL1.2")
            row["opencl fast_math"] = native(work, f"{i}cf", a.device, env, source=fast, options=CL_FAST)
            sp = spirv(work, f"{i}sp", plain, a.device, CL_PLAIN, env)
            sf = spirv(work, f"{i}sf", fast, a.device, CL_FAST, env)
            row["level_zero plain"] = native(work, f"{i}zp", a.device, env, spirv=sp, options=ZE_PLAIN)
            row["level_zero fast_math"] = native(work, f"{i}zf", a.device, env, spirv=sf, options=ZE_FAST)
            row["its SPIR-V, no flag"] = native(work, f"{i}zn", a.device, env, spirv=sf, options="")
            rows.append(row)
    cols = ["opencl plain", "opencl plain, no rounded div/sqrt", "opencl fast_math", "level_zero plain",
            "level_zero fast_math", "its SPIR-V, no flag"]
    print(f"ocloc -device {a.device}: tk_phase0's instructions (the extended math unit's, the float mads)")
    print("| kernel | " + " | ".join(cols) + " |")
    print("| --- |" + " --- |" * len(cols))
    for r in rows:
        print(f"| {r['kernel']} | " + " | ".join(cell(r[c]) for c in cols) + " |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": a.device, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
