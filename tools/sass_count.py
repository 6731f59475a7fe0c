"""Count the SASS of Tack's GPU bench kernels: instructions and global loads per element.

Tack's CUDA path writes CUDA C++; NVRTC (libtack's own, as a launch uses it)
turns it into PTX, and ptxas -- the assembler the driver would run -- into
machine code (SASS) for one architecture (sm_90, the H200's, by default).
This tool compiles the bench kernels that way and disassembles them
(nvdisasm or cuobjdump: from the CUDA toolkit, or the copies the Triton
wheel ships), so that a change to the code generator can be judged without
a GPU: how many instructions the hot loop of each kernel runs per element,
and how many global loads it has in flight.

The hot loop is the innermost loop (a backward branch) that reads or writes
global memory, of those the one that loads the most bytes a trip (then
moves the most, then the longest): for the elementwise kernels that is the grid-stride loop,
for n-body the loop over the other bodies (one interaction a trip).  A loop
that handles several elements a trip (an unrolled grid-stride loop) says so
by the bytes it reads: a kernel's case gives the float32 reads one element
makes (saxpy 2, the stencil 4), and a loop that reads N times those bytes
-- unrolled by Tack or by ptxas, or with vector loads -- handles N
elements a trip; the figures per element divide by N (a kernel that reads
nothing, tack.random's, counts its 4-byte stores instead).  `volatile` counts the loads of the error record the failure
checks re-read (LDG.E.STRONG.SYS: a volatile load).

Usage: python tools/sass_count.py [--arch sm_90] [--json PATH] [--show KERNEL]
(--show prints the hot loop's SASS of one kernel).  Needs NVRTC and ptxas;
no GPU.  `--amd gfx90a` counts the same for AMD instead: the HIP source
through libtack's hiprtc, disassembled by llvm-objdump.

`--warp` counts a block reduction with tack.warp_sum (256 threads, a shared
slot per warp) and one with tack.block_sum instead, the whole phase, in both
forms of the sub-group operations (config warp_shuffles: the shared scratch array and barriers, or
the warp's exchanges, lower_blocks.c): instructions, barriers, shuffles,
shared loads and stores; with `--amd`, for AMD.
"""

import argparse
import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import tack
from tack import _core


# ------------------------------------------------------------- the kernels
@tack.kernel
def copy(x, y):
    for i in range(x.shape[0]):
        y[i] = x[i]


@tack.kernel
def scale(x, y, s):
    for i in range(x.shape[0]):
        y[i] = x[i] * s


@tack.kernel
def saxpy(a, x, y):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@tack.kernel
def stencil(a, out):
    for i, j in tack.ndrange(a.shape[0] - 2, a.shape[1] - 2):
        out[i + 1, j + 1] = 0.25 * (a[i, j + 1] + a[i + 2, j + 1] + a[i + 1, j] + a[i + 1, j + 2])


@tack.kernel
def nbody(px, py, pz, m, ax, ay, az, eps2):
    for i in range(px.shape[0]):
        xi = px[i]
        yi = py[i]
        zi = pz[i]
        fx = 0.0
        fy = 0.0
        fz = 0.0
        for j in range(px.shape[0]):
            dx = px[j] - xi
            dy = py[j] - yi
            dz = pz[j] - zi
            r2 = dx * dx + dy * dy + dz * dz + eps2
            inv = 1.0 / math.sqrt(r2)
            s = m[j] * inv * inv * inv
            fx += dx * s
            fy += dy * s
            fz += dz * s
        ax[i] = fx
        ay[i] = fy
        az[i] = fz


@tack.func
def clamp01(v):
    return min(max(v, 0.0), 1.0)


@tack.kernel
def func_call(x, y):
    for i in range(x.shape[0]):
        y[i] = clamp01(x[i]) * 2.0


@tack.kernel
def random(seed, y):
    for i in range(y.shape[0]):
        y[i] = tack.random.uniform(seed, i)


def cases():
    """(name, kernel, arguments, float32 reads per element) of each bench kernel: float32 as on
    the GPU, distinct arrays as in a benchmark (so that the source marks them restrict)."""
    def v():
        return np.zeros(1024, np.float32)

    def g():
        return np.zeros((64, 64), np.float32)

    return [
        ("copy", copy, (v(), v()), 1),
        ("scale", scale, (v(), v(), np.float32(2)), 1),
        ("saxpy", saxpy, (np.float32(2), v(), v()), 2),
        ("stencil", stencil, (g(), g()), 4),
        ("nbody", nbody, tuple(v() for _ in range(7)) + (np.float32(1e-3),), 4),
        ("func_call", func_call, (v(), v()), 1),
        ("random", random, (2026, v()), 0),
    ]


# ------------------------------------------------------------- the tools
def find_tool(name):
    """A CUDA binary tool: PATH, $CUDA_HOME/bin, /usr/local/cuda/bin, or a wheel's copy (Triton's)."""
    found = shutil.which(name)
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and os.path.exists(os.path.join(root, "bin", name)):
            return os.path.join(root, "bin", name)
    for site in sys.path:
        hit = glob.glob(os.path.join(site, "triton", "backends", "nvidia", "bin", name))
        if hit:
            return hit[0]
    return None


def sass_of(src, arch):
    """The SASS text of a CUDA source, through NVRTC and ptxas."""
    ptx = _core._nvrtc_compile(src, "compute_" + arch.split("_")[1])
    ptxas = find_tool("ptxas")
    dis = find_tool("nvdisasm") or find_tool("cuobjdump")
    if not ptxas or not dis:
        raise SystemExit("needs ptxas and nvdisasm (or cuobjdump): install the CUDA toolkit")
    with tempfile.TemporaryDirectory() as d:
        p, cubin = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(p, "w") as f:
            f.write(ptx)
        subprocess.run([ptxas, "-arch=" + arch, "-O3", p, "-o", cubin], check=True)
        args = [dis, "-c", cubin] if dis.endswith("nvdisasm") else [dis, "-sass", cubin]
        return subprocess.run(args, check=True, capture_output=True, text=True).stdout


_INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);")
_TARGET = re.compile(r"BRA\s+(?:`?\(?\.L_x_(\d+)|0x([0-9a-f]+))")
_LABEL = re.compile(r"^\s*\.L_x_(\d+):", re.M)


def functions(sass):
    """{name: [(address, text), ...]} of each function, and {label: address}."""
    out, labels, cur = {}, {}, None
    pending = []
    for line in sass.splitlines():
        m = re.match(r"\s*(?:\.text\.|Function : )(\w+)", line)
        if m and ("Function" in line or line.strip().endswith(":")):
            cur = m.group(1)
            out.setdefault(cur, [])
            continue
        lab = _LABEL.match(line)
        if lab:
            pending.append(lab.group(1))
            continue
        ins = _INSN.search(line)
        if ins and cur is not None:
            addr = int(ins.group(1), 16)
            for p in pending:
                labels[(cur, p)] = addr
            pending = []
            out[cur].append((addr, re.sub(r"\s+", " ", ins.group(2)).strip()))
    return out, labels


def is_global_access(text):
    op = text.split()[0] if not text.startswith("@") else text.split()[1]
    return op.startswith(("LDG", "STG", "RED", "ATOMG"))


def loops(fn, body, labels):
    """Each loop of a function: (first index, last index) of a backward branch's range."""
    index = {a: i for i, (a, _) in enumerate(body)}
    out = []
    for i, (addr, text) in enumerate(body):
        m = _TARGET.search(text)
        if not m:
            continue
        tgt = labels.get((fn, m.group(1))) if m.group(1) else int(m.group(2), 16)
        if tgt is not None and tgt <= addr and tgt in index:
            out.append((index[tgt], i))
    return out


def hot_loop(sass):
    """(function, instructions of the hot loop) of the kernel's largest phase."""
    fns, labels = functions(sass)
    best = None
    for fn, body in fns.items():
        for lo, hi in loops(fn, body, labels):
            ins = [t for _, t in body[lo:hi + 1]]
            if not any(is_global_access(t) for t in ins):
                continue
            inner = not any(l2 > lo and h2 <= hi and (l2, h2) != (lo, hi) and
                            any(is_global_access(t) for _, t in body[l2:h2 + 1])
                            for l2, h2 in loops(fn, body, labels))
            moved = [access_bits(t) for t in ins if is_global_access(t) and ".STRONG.SYS" not in t]
            key = (sum(b for b, t in zip(moved, [t for t in ins if is_global_access(t) and ".STRONG.SYS" not in t])
                       if opname(t).startswith("LDG")), sum(moved), len(ins))
            if inner and (best is None or key > best[2]):
                best = (fn, ins, key)
    return best[:2] if best else None


def opname(text):
    parts = text.split()
    return parts[1] if parts[0].startswith("@") else parts[0]


def load_bits(text):
    m = re.search(r"LDG\.E(?:\.\w+)*?\.(64|128)\b", text)
    return int(m.group(1)) if m else 32


def access_bits(text):
    """The bits a global load or store moves (32 unless it says .64 or .128)."""
    m = re.search(r"(?:LDG|STG)\.E(?:\.\w+)*?\.(64|128)\b", text)
    return int(m.group(1)) if m else 32


def count(name, k, args, reads, arch):
    src = k.generated_source(*args, target="cuda")
    sass = sass_of(src, arch)
    fns, _ = functions(sass)
    total = sum(1 for body in fns.values() for _, t in body if opname(t) != "NOP")
    fn, ins = hot_loop(sass) or ("?", [])
    ins = [t for t in ins if opname(t) != "NOP"]
    loads = [t for t in ins if opname(t).startswith("LDG")]
    data = [t for t in loads if ".STRONG.SYS" not in t]
    bits = sum(load_bits(t) for t in data)
    stores = sum(opname(t).startswith("STG") for t in ins)
    if reads:
        per = bits // (32 * reads) if bits % (32 * reads) == 0 and bits >= 32 * reads else 1
    else:  # a kernel that reads nothing (tack.random's): one 4-byte store an element
        per = max(sum(access_bits(t) for t in ins if opname(t).startswith("STG")) // 32, 1)
    return {
        "kernel": name,
        "sass_total": total,
        "loop_insns": len(ins),
        "elements_per_trip": per,
        "insns_per_element": round(len(ins) / per, 2),
        "global_loads_per_element": round(len(loads) / per, 2),
        "volatile_loads_per_element": round(sum(".STRONG.SYS" in t for t in loads) / per, 2),
        "loop_calls": sum(opname(t).startswith("CALL") for t in ins),
        "loop": ins,
    }


# ------------------------------------------------------------- AMD (hiprtc)
def amd_isa(src, arch):
    """The disassembly of a HIP source for an AMD architecture, through libtack's hiprtc and llvm-objdump."""
    code = _core._hiprtc_compile(src, arch)
    dis = find_tool("llvm-objdump") or next((t for t in (find_tool(f"llvm-objdump-{v}") for v in range(20, 13, -1)) if t), None)
    if not dis:
        raise SystemExit("needs llvm-objdump for AMD code")
    with tempfile.TemporaryDirectory() as d:
        co = os.path.join(d, "k.co")
        with open(co, "wb") as f:
            f.write(code)
        return subprocess.run([dis, "-d", "--mcpu=" + arch, co], check=True, capture_output=True, text=True).stdout


_AMD_INSN = re.compile(r"^\s+(\S.*?)\s*//\s*([0-9A-F]{8,}):")
_AMD_TARGET = re.compile(r"<(\w+)\+0x([0-9a-f]+)>")


def amd_count(name, k, args, reads, arch):
    """count()'s figures for AMD: the innermost loop with a global access, per element."""
    src = k.generated_source(*args, target="hip")
    fns, cur, starts = {}, None, {}
    for line in amd_isa(src, arch).splitlines():
        m = re.match(r"^([0-9a-f]+) <(\w+)>:", line)
        if m:
            cur = m.group(2)
            starts[cur] = int(m.group(1), 16)
            fns[cur] = []
            continue
        ins = _AMD_INSN.match(line)
        if ins and cur:
            t = _AMD_TARGET.search(line)  # a branch's target follows the encoding
            text = re.sub(r"\s+", " ", ins.group(1)) + (f" {t.group(0)}" if t else "")
            fns[cur].append((int(ins.group(2), 16), text))
    mem = ("global_load", "global_store", "global_atomic", "flat_load", "flat_store", "buffer_load", "buffer_store")
    widths = {"dword": 32, "dwordx2": 64, "dwordx3": 96, "dwordx4": 128}
    best = None
    for fn, body in fns.items():
        index = {a: i for i, (a, _) in enumerate(body)}
        spans = []
        for i, (addr, text) in enumerate(body):
            t = _AMD_TARGET.search(text)
            if text.startswith(("s_cbranch", "s_branch")) and t and t.group(1) == fn:
                tgt = starts[fn] + int(t.group(2), 16)
                if tgt <= addr and tgt in index:
                    spans.append((index[tgt], i))
        for lo, hi in spans:
            ins = [t for _, t in body[lo:hi + 1]]
            if not any(t.startswith(mem) for t in ins):
                continue
            inner = not any((l2, h2) != (lo, hi) and l2 >= lo and h2 <= hi and
                            any(t.startswith(mem) for _, t in body[l2:h2 + 1]) for l2, h2 in spans)
            key = (sum(widths.get(m.group(1), 32) for m in (re.match(r"\w+_load_(\w+)", t) for t in ins) if m),
                   sum(widths.get(m.group(1), 32) for m in (re.match(r"\w+_(?:load|store)_(\w+)", t) for t in ins)
                       if m), len(ins))
            if inner and (best is None or key > best[1]):
                best = (ins, key)
    ins = [t for t in (best[0] if best else []) if not t.startswith("s_nop")]
    loads = [t for t in ins if t.startswith(("global_load", "flat_load", "buffer_load"))]
    bits = sum(widths.get(re.match(r"\w+_load_(\w+)", t).group(1), 32) for t in loads)
    stores = sum(widths.get(re.match(r"\w+_store_(\w+)", t).group(1), 32) // 32 for t in ins
                 if t.startswith(("global_store", "flat_store", "buffer_store")) and re.match(r"\w+_store_(\w+)", t))
    per = (bits // (32 * reads) if bits % (32 * reads) == 0 and bits >= 32 * reads else 1) if reads else max(stores, 1)
    return {"kernel": name, "loop_insns": len(ins), "elements_per_trip": per,
            "insns_per_element": round(len(ins) / per, 2), "global_loads_per_element": round(len(loads) / per, 2),
            "loop": ins}


def warp_reduce(x, out):
    for b, t in tack.blocks(out.shape[0], 256):
        s = tack.shared(8, tack.f32)
        i = b * 256 + t
        v = x[i] if i < x.shape[0] else 0.0
        w = tack.warp_sum(v)
        if t % 32 == 0:
            s[t // 32] = w
        tack.barrier()
        if t == 0:
            acc = 0.0
            for k in range(8):
                acc += s[k]
            out[b] = acc


def block_reduce(x, out):
    for b, t in tack.blocks(out.shape[0], 256):
        i = b * 256 + t
        v = x[i] if i < x.shape[0] else 0.0
        r = tack.block_sum(v)
        if t == 0:
            out[b] = r


def warp_counts(arch, amd, fn=warp_reduce):
    """{form: {what: count}} of fn's phase, NOPs left out."""
    args = (np.zeros(1 << 20, np.float32), np.zeros(4096, np.float32))
    rows = {}
    for native in (False, True):
        with tack.config.override(warp_shuffles=native):
            src = tack.kernel(fn).generated_source(*args, target="hip" if amd else "cuda")
        if amd:
            text = amd_isa(src, arch)
            phase = text[text.index("<tk_phase0>:"):]
            ops = [m.group(1) for m in (_AMD_INSN.match(line) for line in phase.splitlines()) if m]
            ops = [o.split()[0] for o in ops if not o.startswith(("s_nop", "s_code_end"))]
            rows[native] = {"insns": len(ops), "barriers": ops.count("s_barrier"),
                            "shuffles": ops.count("ds_bpermute_b32"),
                            "shared loads": sum(o.startswith(("ds_read", "ds_load")) for o in ops),
                            "shared stores": sum(o.startswith(("ds_write", "ds_store")) for o in ops)}
        else:
            fns, _ = functions(sass_of(src, arch))
            ops = [opname(t).split(".")[0] for _, t in fns["tk_phase0"]]
            ops = [o for o in ops if o != "NOP"]
            rows[native] = {"insns": len(ops), "barriers": ops.count("BAR"), "shuffles": ops.count("SHFL"),
                            "shared loads": ops.count("LDS"), "shared stores": ops.count("STS")}
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--json")
    ap.add_argument("--show")
    ap.add_argument("--amd", metavar="GFX", help="count AMD code instead (hiprtc, e.g. gfx90a)")
    ap.add_argument("--warp", action="store_true", help="a block reduction with warp_sum, both forms")
    a = ap.parse_args(argv)
    if a.warp:
        for fn, what in ((warp_reduce, "with warp_sum"), (block_reduce, "with block_sum")):
            rows = warp_counts(a.amd or a.arch, bool(a.amd), fn)
            print(f"{a.amd or a.arch}: a block reduction {what:<15}" + "  ".join(rows[False]))
            for native, r in rows.items():
                print(f"  {'warp exchanges' if native else 'scratch':<39}" + "  ".join(f"{v:>{len(k)}}" for k, v in r.items()))
        return
    if a.amd:
        rows = [amd_count(n, k, args, reads, a.amd) for n, k, args, reads in cases()]
        print(f"AMD {a.amd}: the hot loop, per element   insns  global loads  elements/trip")
        for r in rows:
            print(f"  {r['kernel']:<12} {r['insns_per_element']:>25} {r['global_loads_per_element']:>13} "
                  f"{r['elements_per_trip']:>14}")
            if a.show == r["kernel"]:
                print("\n".join(r["loop"]))
        return
    rows = [count(n, k, args, reads, a.arch) for n, k, args, reads in cases()]
    print(f"SASS {a.arch}: the hot loop, per element    insns   LDG  volatile LDG  elements/trip  calls  kernel total")
    for r in rows:
        print(f"  {r['kernel']:<12} {r['insns_per_element']:>30} {r['global_loads_per_element']:>5} "
              f"{r['volatile_loads_per_element']:>13} {r['elements_per_trip']:>14} {r['loop_calls']:>6} {r['sass_total']:>13}")
    if a.show:
        for r in rows:
            if r["kernel"] == a.show:
                print("\n".join(r["loop"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump([{k: v for k, v in r.items() if k != "loop"} for r in rows], f, indent=1)


if __name__ == "__main__":
    main()
