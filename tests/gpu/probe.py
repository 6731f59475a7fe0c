"""The one-minute GPU probe: where an elementwise kernel's bandwidth goes.

On the one H200 run (docs/benchmarks.md) Tack's copy kernel reached 0.72 of
cuMemcpyDtoD's bandwidth.  A review of the SASS named the likely causes --
one 4-byte load in flight per thread, 64-bit index arithmetic, a division per
element to split an ndrange index -- and each proposed change addresses one.
So that the first GPU run after a change can say which change bought what,
this script times, on the same arrays and against cuMemcpyDtoD of the same
bytes:

- Tack's own kernels (copy, scale, saxpy and the 5-point stencil of
  tests/gpu/bench.py), as Tack compiles them today;
- hand-written CUDA for each, in the variants a code generator could emit:
  ``base`` (a grid-stride loop with 64-bit indices and one element a
  thread a trip, what Tack's loop amounts to), ``i32`` (the same with 32-bit
  indices), ``unroll4`` (four independent loads issued before the four
  stores), ``vec4`` (16-byte float4 loads and stores, a scalar tail); for
  the stencil ``base`` (a flat index divided per element) and ``split``
  (the 2-D index split once per thread and stepped, 32-bit).

Every hand-written kernel runs on the same grid as Tack's (one resident
wave of 256-thread blocks), through the driver API on Tack's own context
(the primary one), compiled by the NVRTC Tack uses.  The result is a table
(GB/s and the fraction of the device copy) and, with --json, the same
figures for docs/benchmarks.md.  Exit status 3 without an NVIDIA GPU, 1 when
a kernel gives a wrong result (each is checked once against NumPy).
"""

import argparse
import ctypes
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

KERNELS = ("copy", "scale", "saxpy")
VARIANTS = ("base", "i32", "unroll4", "vec4")
STENCIL_VARIANTS = ("base", "split")

CUDA_SOURCE = r"""
#define OP_copy(x, y, s) (x)
#define OP_scale(x, y, s) ((x) * (s))
#define OP_saxpy(x, y, s) ((s) * (x) + (y))

#define VARIANTS(K)                                                                                              \
extern "C" __global__ void K##_base(const float *x, float *y, float s, long long n) {                             \
    long long stride = (long long)gridDim.x * blockDim.x;                                                       \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)                    \
        y[i] = OP_##K(x[i], y[i], s);                                                                             \
}                                                                                                                \
extern "C" __global__ void K##_i32(const float *x, float *y, float s, long long n64) {                          \
    int n = (int)n64, stride = gridDim.x * blockDim.x;                                                           \
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = OP_##K(x[i], y[i], s);         \
}                                                                                                                \
extern "C" __global__ void K##_unroll4(const float *__restrict__ x, float *__restrict__ y, float s, long long n64) { \
    int n = (int)n64, stride = gridDim.x * blockDim.x, i = blockIdx.x * blockDim.x + threadIdx.x;                 \
    for (; i + 3 * stride < n; i += 4 * stride) {                                                                \
        float a0 = x[i], a1 = x[i + stride], a2 = x[i + 2 * stride], a3 = x[i + 3 * stride];                     \
        float b0 = y[i], b1 = y[i + stride], b2 = y[i + 2 * stride], b3 = y[i + 3 * stride];                     \
        y[i] = OP_##K(a0, b0, s);                                                                                 \
        y[i + stride] = OP_##K(a1, b1, s);                                                                        \
        y[i + 2 * stride] = OP_##K(a2, b2, s);                                                                    \
        y[i + 3 * stride] = OP_##K(a3, b3, s);                                                                    \
    }                                                                                                            \
    for (; i < n; i += stride) y[i] = OP_##K(x[i], y[i], s);                                                     \
}                                                                                                                \
extern "C" __global__ void K##_vec4(const float *__restrict__ x, float *__restrict__ y, float s, long long n64) {  \
    int n = (int)n64, stride = gridDim.x * blockDim.x, t = blockIdx.x * blockDim.x + threadIdx.x, n4 = n / 4;    \
    const float4 *x4 = (const float4 *)x;                                                                        \
    float4 *y4 = (float4 *)y;                                                                                    \
    for (int i = t; i < n4; i += stride) {                                                                       \
        float4 a = x4[i], b = y4[i], r;                                                                          \
        r.x = OP_##K(a.x, b.x, s); r.y = OP_##K(a.y, b.y, s); r.z = OP_##K(a.z, b.z, s); r.w = OP_##K(a.w, b.w, s); \
        y4[i] = r;                                                                                               \
    }                                                                                                            \
    for (int i = 4 * n4 + t; i < n; i += stride) y[i] = OP_##K(x[i], y[i], s);                                  \
}

VARIANTS(copy)
VARIANTS(scale)
VARIANTS(saxpy)

/* the 5-point stencil over the interior of a side x side array */
extern "C" __global__ void stencil_base(const float *a, float *o, long long side) {
    long long w = side - 2, total = w * w, stride = (long long)gridDim.x * blockDim.x;
    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < total; k += stride) {
        long long i = k / w + 1, j = k % w + 1;
        o[i * side + j] = 0.25f * (a[(i - 1) * side + j] + a[(i + 1) * side + j] + a[i * side + j - 1] +
                                   a[i * side + j + 1]);
    }
}
extern "C" __global__ void stencil_split(const float *a, float *o, long long side64) {
    int side = (int)side64, w = side - 2, stride = gridDim.x * blockDim.x, k = blockIdx.x * blockDim.x + threadIdx.x;
    int i = k / w, j = k % w, di = stride / w, dj = stride % w;   /* split once, then stepped */
    for (; i < w; i += di, j += dj) {
        if (j >= w) { j -= w; i++; if (i >= w) break; }
        int c = (i + 1) * side + j + 1;
        o[c] = 0.25f * (a[c - side] + a[c + side] + a[c - 1] + a[c + 1]);
    }
}
"""


def entry_names():
    """The kernels of CUDA_SOURCE, as the PTX names them."""
    return [f"{k}_{v}" for k in KERNELS for v in VARIANTS] + [f"stencil_{v}" for v in STENCIL_VARIANTS]


class Driver:
    """The few driver calls the probe needs, on the primary context (Tack's)."""

    def __init__(self, ordinal=0):
        try:
            self.cu = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise LookupError(f"no NVIDIA driver: libcuda.so.1 could not be loaded ({e})") from None
        cu = self.cu
        if cu.cuInit(0) != 0:
            raise LookupError("the NVIDIA driver finds no usable GPU (cuInit failed)")
        self.dev, self.ctx = ctypes.c_int(0), ctypes.c_void_p()
        self.check(cu.cuDeviceGet(ctypes.byref(self.dev), ordinal), "cuDeviceGet")
        self.check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), self.dev), "cuDevicePrimaryCtxRetain")
        self.check(cu.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        cu.cuMemcpyDtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_size_t]
        cu.cuEventElapsedTime.argtypes = [ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_void_p]

    def check(self, r, what):
        if r != 0:
            name = ctypes.c_char_p()
            self.cu.cuGetErrorName(r, ctypes.byref(name))
            raise RuntimeError(f"{what} failed: {(name.value or b'?').decode()} ({r})")

    def attribute(self, attr):
        v = ctypes.c_int(0)
        self.check(self.cu.cuDeviceGetAttribute(ctypes.byref(v), attr, self.dev), "cuDeviceGetAttribute")
        return v.value

    def module(self, ptx):
        m = ctypes.c_void_p()
        self.check(self.cu.cuModuleLoadData(ctypes.byref(m), ptx.encode() + b"\0"), "cuModuleLoadData")
        return m

    def function(self, module, name):
        f = ctypes.c_void_p()
        self.check(self.cu.cuModuleGetFunction(ctypes.byref(f), module, name.encode()), f"cuModuleGetFunction {name}")
        return f

    def launch(self, f, grid, block, *args):
        """args: (ctypes value) each, passed by address."""
        ptrs = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in args])
        self.check(self.cu.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, None, ptrs, None), "cuLaunchKernel")

    def time(self, fn, reps):
        """Seconds per call of fn (queued reps times on the null stream), by events."""
        e0, e1 = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.cu.cuEventCreate(ctypes.byref(e0), 0), "cuEventCreate")
        self.check(self.cu.cuEventCreate(ctypes.byref(e1), 0), "cuEventCreate")
        fn()
        self.check(self.cu.cuCtxSynchronize(), "cuCtxSynchronize")
        self.cu.cuEventRecord(e0, None)
        for _ in range(reps):
            fn()
        self.cu.cuEventRecord(e1, None)
        self.check(self.cu.cuEventSynchronize(e1), "cuEventSynchronize")
        ms = ctypes.c_float(0)
        self.cu.cuEventElapsedTime(ctypes.byref(ms), e0, e1)
        self.cu.cuEventDestroy_v2(e0)
        self.cu.cuEventDestroy_v2(e1)
        return ms.value / 1e3 / reps


def traffic(kernel, nbytes, side):
    """Bytes each call moves: read x (and y for saxpy), write y; the stencil reads and writes its array once."""
    return {"copy": 2 * nbytes, "scale": 2 * nbytes, "saxpy": 3 * nbytes, "stencil2d": 2 * 4 * side * side}[kernel]


def table(res):
    """The results as a table: one row a kernel and variant, GB/s and the fraction of cuMemcpyDtoD."""
    base = res["memcpy_dtod_GBps"]
    rows = [f"{'kernel':10s} {'variant':8s} {'GB/s':>9s} {'of copy':>8s}",
            f"{'memcpy':10s} {'DtoD':8s} {base:9.1f} {1:8.1%}"]
    for kernel, by in res["kernels"].items():
        for variant, g in by.items():
            rows.append(f"{kernel:10s} {variant:8s} {g:9.1f} {g / base:8.1%}")
    return "\n".join(rows)


def run(args):
    import bench
    import tack
    from tack import _core

    drv = Driver()
    cc = drv.attribute(75) * 10 + drv.attribute(76)  # compute capability major, minor
    sms, per_sm = drv.attribute(16), drv.attribute(39)  # multiprocessors, threads per multiprocessor
    block = 256
    grid = sms * (per_sm // block)  # one resident wave, as Tack sizes its grid at most
    ptx = _core._nvrtc_compile(CUDA_SOURCE, arch=f"sm_{cc}", name="probe.cu")
    mod = drv.module(ptx)
    n = args.mib * (1 << 20) // 4
    side = int(np.sqrt(n))
    dev = "cuda:0"
    rng = np.random.default_rng(1)
    xh = rng.random(n, dtype=np.float32)
    x = tack.array(xh, device=dev)
    y = tack.zeros(n, tack.f32, device=dev)
    a2 = tack.array(rng.random((side, side), dtype=np.float32), device=dev)
    o2 = tack.zeros((side, side), tack.f32, device=dev)
    tack.synchronize(dev)
    nbytes = 4 * n
    res = {"date": time.strftime("%Y-%m-%d", time.gmtime()), "device": drv_name(drv), "compute_capability": cc,
           "grid": [grid, block], "mib": args.mib, "kernels": {}, "wrong": []}
    res["memcpy_dtod_GBps"] = 2 * nbytes / drv.time(lambda: drv.cu.cuMemcpyDtoD_v2(y.ptr, x.ptr, nbytes),
                                                     args.reps) / 1e9
    s = 2.0
    ours = {"copy": lambda: bench.copy_k(x, y), "scale": lambda: bench.scale_k(x, y, s),
            "saxpy": lambda: bench.saxpy_k(s, x, y), "stencil2d": lambda: bench.stencil_k(a2, o2)}
    want = {"copy": lambda y0: xh, "scale": lambda y0: xh * np.float32(s), "saxpy": lambda y0: np.float32(s) * xh + y0}
    ah = a2.numpy()
    sten = np.zeros_like(ah)
    sten[1:-1, 1:-1] = np.float32(0.25) * (ah[:-2, 1:-1] + ah[2:, 1:-1] + ah[1:-1, :-2] + ah[1:-1, 2:])
    for kernel in KERNELS + ("stencil2d",):
        by = res["kernels"].setdefault(kernel, {})
        by["tack"] = traffic(kernel, nbytes, side) / bench.timed(ours[kernel], lambda: tack.synchronize(dev),
                                                                 args.reps) / 1e9
        tack.synchronize(dev)
        for v in (VARIANTS if kernel != "stencil2d" else STENCIL_VARIANTS):
            name = f"{kernel}_{v}" if kernel != "stencil2d" else f"stencil_{v}"
            f = drv.function(mod, name)
            if kernel == "stencil2d":
                call = lambda f=f: drv.launch(f, grid, block, ctypes.c_uint64(a2.ptr), ctypes.c_uint64(o2.ptr),  # noqa: E731
                                              ctypes.c_longlong(side))
            else:
                call = lambda f=f: drv.launch(f, grid, block, ctypes.c_uint64(x.ptr), ctypes.c_uint64(y.ptr),  # noqa: E731
                                              ctypes.c_float(s), ctypes.c_longlong(n))
            # checked once against NumPy, from a known output array
            out, y0 = (o2, np.zeros_like(ah)) if kernel == "stencil2d" else (y, rng.random(n, dtype=np.float32))
            tack.copyto(out, tack.array(y0, device=dev))
            tack.synchronize(dev)
            call()
            drv.check(drv.cu.cuCtxSynchronize(), name)
            if not np.array_equal(out.numpy(), sten if kernel == "stencil2d" else want[kernel](y0)):
                res["wrong"].append(name)
            by[v] = traffic(kernel, nbytes, side) / drv.time(call, args.reps) / 1e9
    return res


def drv_name(drv):
    buf = ctypes.create_string_buffer(256)
    drv.cu.cuDeviceGetName(buf, 256, drv.dev)
    return buf.value.decode(errors="replace")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=256, help="size of each array (MiB)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE))
    try:
        res = run(args)
    except LookupError as e:
        print(f"probe: no NVIDIA GPU here: {e}", file=sys.stderr)
        return 3
    print(f"{res['device']} (sm_{res['compute_capability']}), grid {res['grid'][0]} x {res['grid'][1]}, "
          f"{res['mib']} MiB arrays, {res['date']}")
    print(table(res))
    if res["wrong"]:
        print(f"WRONG RESULTS: {', '.join(res['wrong'])}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 1 if res["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
