"""Run Tack's generated CUDA source on the CPU, one thread after another.

The CUDA layout (dialect_cuda.c) needs no intra-block synchronization: every
thread of a launch runs to completion on its own.  So the generated source,
compiled as ordinary C++ with a small shim for CUDA's built-ins, can run each
phase as a loop over (block, thread), in order, and the results can be
compared with the CPU's.  This checks what NVRTC cannot: that the grid-stride
loops, the ndrange decomposition, the frame passed between phases, the
`done` flag of a kernel `return` and the error record do what the language
says.  Atomics are plain read-modify-writes here and `__activemask()` reports
a partial warp, so the per-thread flush path of privatized sums is the one
taken; real concurrency is left to the GPU run.
"""

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np

SHIM = r"""
#include <cmath>
#include <math.h>
#include <cstdint>
#include <cstdio>
#include <cstring>
using std::isnan; using std::isinf; using std::isfinite;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
struct tk_dim3 { unsigned x, y, z; };
static tk_dim3 threadIdx, blockIdx, blockDim, gridDim;
template <class T, class U> static T atomicAdd(T *p, U v) { T o = *p; *p = (T)(o + (T)v); return o; }
template <class T, class U> static T atomicMin(T *p, U v) { T o = *p; if ((T)v < o) *p = (T)v; return o; }
template <class T, class U> static T atomicMax(T *p, U v) { T o = *p; if ((T)v > o) *p = (T)v; return o; }
template <class T, class U, class V> static T atomicCAS(T *p, U c, V v) { T o = *p; if (o == (T)c) *p = (T)v; return o; }
template <class T, class U> static T atomicExch(T *p, U v) { T o = *p; *p = (T)v; return o; }
template <class T, class U> static T atomicAnd(T *p, U v) { T o = *p; *p = (T)(o & (T)v); return o; }
template <class T, class U> static T atomicOr(T *p, U v) { T o = *p; *p = (T)(o | (T)v); return o; }
template <class T, class U> static T atomicXor(T *p, U v) { T o = *p; *p = (T)(o ^ (T)v); return o; }
static unsigned __activemask() { return 1u; }
template <class T> static T __shfl_down_sync(unsigned, T v, int) { return v; }
static void __threadfence() {}
static float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static float __uint_as_float(unsigned i) { float f; memcpy(&f, &i, 4); return f; }
static unsigned __float_as_uint(float f) { unsigned i; memcpy(&i, &f, 4); return i; }
static double __longlong_as_double(long long i) { double f; memcpy(&f, &i, 8); return f; }
static long long __double_as_longlong(double f) { long long i; memcpy(&i, &f, 8); return i; }
"""

_dir = None
_libs = {}


def available():
    return shutil.which(os.environ.get("CXX", "g++")) is not None


def _build(src):
    global _dir
    key = hashlib.sha256(src.encode()).hexdigest()[:20]
    if key in _libs:
        return _libs[key]
    if _dir is None:
        _dir = tempfile.mkdtemp(prefix="tack-emulate-")
    nph = len(re.search(r"tack-cuda: phases=([ps]*)", src).group(1))
    runner = ["", 'extern "C" void tk_emulate(int phase, const void *params, unsigned grid, unsigned block) {',
              "    gridDim.x = grid; blockDim.x = block; gridDim.y = gridDim.z = blockDim.y = blockDim.z = 1;",
              "    for (unsigned b = 0; b < grid; b++) for (unsigned t = 0; t < block; t++) {",
              "        blockIdx.x = b; threadIdx.x = t;",
              "        switch (phase) {"]
    runner += [f"        case {k}: tk_phase{k}(*(const tk_params *)params); break;" for k in range(nph)]
    runner += ["        }", "    }", "}"]
    path = os.path.join(_dir, key)
    with open(path + ".cpp", "w") as f:
        f.write(SHIM + src.replace('extern "C" __global__', 'extern "C"') + "\n".join(runner) + "\n")
    cmd = [os.environ.get("CXX", "g++"), "-std=c++17", "-O1", "-w", "-shared", "-fPIC", "-o", path + ".so",
           path + ".cpp"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"the emulated CUDA source does not compile:\n{proc.stderr[-4000:]}")
    lib = ctypes.CDLL(path + ".so")
    lib.tk_emulate.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
    _libs[key] = lib
    return lib


def run(src, args, grid=3, block=32):
    """Run the phases of `src` over `args` (NumPy arrays for arrays, each
    with the kernel's element shape in `args` as (array, shape) when its
    dtype is a vector; Python scalars).  Returns the error record
    (failed, site, prog, a, b); arrays are updated in place -- a strided
    view too, when `src` is the build that indexes it with its strides
    (its element strides follow its shape, as gpu_launch.c packs them)."""
    lib = _build(src)
    phases = re.search(r"tack-cuda: phases=([ps]*)", src).group(1)
    frame = int(re.search(r"frame=(\d+)", src).group(1))
    err = np.zeros(4, np.int64)
    fb = np.zeros(max(frame, 16), np.uint8)
    slots = [err.ctypes.data, fb.ctypes.data if frame else 0, 7]
    for p, a in enumerate(args):
        if isinstance(a, tuple):
            arr, shape = a
            slots.append(arr.ctypes.data)
            slots.extend(shape)
        elif isinstance(a, np.ndarray):
            slots.append(a.ctypes.data)  # element (0, ..., 0)'s address, whatever the strides' signs
            slots.extend(a.shape)
            if f"P.a{p}_t0" in src:
                slots.extend((s // a.itemsize) & 0xFFFFFFFFFFFFFFFF for s in a.strides)
        elif isinstance(a, (bool, np.bool_)):
            slots.append(int(a))
        elif isinstance(a, (int, np.integer)):
            slots.append(int(a) & 0xFFFFFFFFFFFFFFFF)
        elif f"P.s{p}.f32" in src:
            # a float the kernel reads as an f32 (an f32/f16 argument, or a
            # Python float that only meets f32): its bits in the low half, as
            # the launcher packs it (gpu_scalar_bits)
            slots.append(int(np.array(float(a), np.float32).view(np.uint32)))
        else:
            slots.append(int(np.array(float(a), np.float64).view(np.uint64)))
    blob = np.array(slots, dtype=np.uint64)
    for k, kind in enumerate(phases):
        lib.tk_emulate(k, blob.ctypes.data, grid if kind == "p" else 1, block if kind == "p" else 1)
    rec = err.view(np.int32)
    return int(rec[0]), int(rec[1]), int(err[1]), int(err[2]), int(err[3])
