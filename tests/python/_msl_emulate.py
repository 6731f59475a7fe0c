"""Run the MSL of the "metal" dialect on the CPU, one thread after another.

The emitted source is compiled as ordinary C++ against
tests/msl/emulate/metal_stdlib (address spaces erased, atomics as plain
read-modify-writes, half as _Float16, the C library's math) with a small
wrapper per phase (tests/msl/emulate/tack_emulate.h; the fake Metal,
tests/c/fake_metal.c, writes the same ones to run kernels launched through
the Metal backend), then each phase is called for every thread of a small
grid in turn -- a one-thread phase with one thread -- with the buffers the
Metal backend binds: the error record, the frame buffer, the argument words
and the arrays.  What it shows is what the code computes under the argument
convention (dialect_msl.c), not how a GPU schedules it; races cannot show.
"""

import ctypes
import os
import re
import subprocess
import tempfile
from pathlib import Path

import numpy as np

import _msl

EMULATE = Path(__file__).resolve().parents[1] / "msl" / "emulate"
_PHASE = re.compile(r"kernel void (tk_phase(\d+))\((.*?)\) \{", re.S)
_PARAM = re.compile(r"^(?:device|constant)\s+(?:const\s+)?([\w]+)\s*\*\s*(\w+)\s*\[\[buffer\((\d+)\)\]\]$")


def _wrappers(source):
    out, phases = [], []
    for m in _PHASE.finditer(source):
        name, k, params = m.group(1), int(m.group(2)), m.group(3)
        args = []
        for p in (x.strip() for x in params.split(",")):
            pm = _PARAM.match(p)
            if pm:
                args.append(f"tk_emu_ptr{{b[{int(pm.group(3))}]}}")
            elif p.endswith("[[thread_position_in_grid]]"):
                args.append("tid")
            elif p.endswith("[[threads_per_grid]]"):
                args.append("nth")
            else:
                raise ValueError(f"unexpected phase parameter {p!r}")
        out.append(f'extern "C" void run_{name}(void **b, unsigned tid, unsigned nth) {{ {name}({", ".join(args)}); }}')
        phases.append(k)
    return "\n".join(out), phases


def build(source, workdir):
    """The emulation library of `source` (ctypes), and its phase numbers."""
    wrap, phases = _wrappers(source)
    path = os.path.join(workdir, "kernel.cpp")
    with open(path, "w") as f:
        f.write(source + "\n#include <tack_emulate.h>\n" + wrap + "\n")
    lib = os.path.join(workdir, "kernel.so")
    proc = subprocess.run([_msl.clang(), "-std=c++17", "-O1", "-shared", "-fPIC", "-w", "-I", str(EMULATE), path, "-o",
                           lib], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[:4000])
    return ctypes.CDLL(lib), phases


def words(args, strided=(), extents=None):
    """Buffer 2: the program id (0 here), then per argument its extents (and
    its element strides when its index is in `strided`) or its slot(s).
    extents[p], where given, are array p's extents in elements (a tack.Array
    of quats or vectors: NumPy's view has the components' axis too)."""
    w = [0]
    for p, a in enumerate(args):
        if isinstance(a, np.ndarray):
            w.extend(int(n) for n in (extents[p] if extents and extents[p] is not None else a.shape))
            if p in strided:
                w.extend((int(s) // a.itemsize) & 0xFFFFFFFFFFFFFFFF for s in a.strides)
        elif isinstance(a, (bool, np.bool_)):
            w.append(int(a))
        elif isinstance(a, (int, np.integer)):
            w.append(int(a) & 0xFFFFFFFFFFFFFFFF)
        elif isinstance(a, (complex, np.complexfloating)):
            z = complex(a)
            w.extend(int(np.float32(p).view(np.uint32)) for p in (z.real, z.imag))
        else:  # a float: its f32 bits, always, in the low half (Metal has no double)
            w.append(int(np.float32(a).view(np.uint32)))
    return np.array(w, dtype=np.uint64)


def run(kernel, *args, threads=5):
    """Run kernel's MSL on copies of args -- a strided view in place, through
    its strides; a CPU tack.Array as a NumPy copy of its storage -- and return
    (the arrays after, the error record (failed, site))."""
    source = kernel.generated_source(*args, target="metal")
    extents = [tuple(a.shape) if type(a).__name__ == "Array" else None for a in args]
    args = [np.asarray(a) if e is not None else a for a, e in zip(args, extents)]
    strided = {p for p in range(len(args)) if f"a{p}_t0 = " in source}
    trailer = re.search(r"/\* tack-metal: phases=([ps]+) frame=(\d+) \*/\s*$", source)
    kinds, frame = trailer.group(1), int(trailer.group(2))
    arrays = [(a if p in strided else np.ascontiguousarray(a).copy()) if isinstance(a, np.ndarray) else None
              for p, a in enumerate(args)]
    ctx = np.zeros(4, np.int64)  # {int failed; int site; ulong prog; long a, b}
    fb = np.zeros(max(frame, 16) // 8 + 2, np.int64)
    A = words(args, strided, extents)
    bufs = [ctx.ctypes.data, fb.ctypes.data, A.ctypes.data] + [a.ctypes.data for a in arrays if a is not None]
    table = (ctypes.c_void_p * len(bufs))(*bufs)
    with tempfile.TemporaryDirectory() as tmp:
        lib, phases = build(source, tmp)
        assert phases == list(range(len(kinds))), (phases, kinds)
        for k, kind in enumerate(kinds):
            fn = getattr(lib, f"run_tk_phase{k}")
            fn.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
            nth = threads if kind == "p" else 1
            for tid in range(nth):
                fn(table, tid, nth)
    failed, site = ctx[:1].view(np.int32)[0], ctx[:1].view(np.int32)[1]
    return [a for a in arrays if a is not None], (int(failed), int(site))
