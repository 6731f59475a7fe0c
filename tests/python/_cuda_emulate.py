"""Run Tack's generated CUDA and HIP sources on the CPU, a blocks loop's threads as fibers.

(HIP's source is CUDA's with another spelling of the warp built-ins.)

A phase without a blocks loop needs no intra-block synchronization: every
thread of a launch runs to completion on its own, so the generated source,
compiled as ordinary C++ with a small shim for CUDA's built-ins, runs each
such phase as a loop over (block, thread), in order, and the results can be
compared with the CPU's.  This checks what NVRTC cannot: that the grid-stride
loops, the ndrange decomposition, the frame passed between phases, the
`done` flag of a kernel `return` and the error record do what the language
says.  Atomics are plain read-modify-writes here and `__activemask()` reports
a partial warp, so the per-thread flush path of privatized sums is the one
taken; real concurrency is left to the GPU run.

A blocks phase (tack.blocks, lower_blocks.c) is what a GPU runs with its
threads waiting for each other, so here each thread of a block is a fiber of
its own (ucontext: makecontext, swapcontext), and a scheduler runs every fiber
of the block until it stops -- at `__syncthreads()`, at a warp exchange, or at
its end.  A barrier lets the block go on when every thread of the block waits
at one.  A warp exchange (`__shfl_sync`, `__shfl_up_sync`, `__shfl_down_sync`,
`__shfl_xor_sync`, `__ballot_sync`, `__any_sync`, `__all_sync`) goes on when
the 32 lanes of the warp (threads 32k .. 32k + 31) all wait at one: each lane
posted its value and its operands, and each gets what PTX's `shfl.sync` gives
(the source lane from its mode, the low five bits of its lane operand and its
width's segment; its own value where that lane is past the segment's end) or
the vote's bits.  Warps go on one at a time, the last first, so a later warp
runs ahead of an earlier one as far as the barriers let it: a read that only a
barrier orders after another warp's write sees the wrong value without it.

Anything else is an error the run reports (EmulationError), never a result:
threads of a block stopped at different kinds of wait (a deadlock on a GPU),
lanes of a warp at different exchanges (of another kind, or called from
another place: the shim's exchanges are told apart by their return address,
the prelude's helpers are always inlined, and a source with a blocks phase is
compiled without optimization, so that no exchange is copied into two paths),
a mask other than all 32
lanes, a warp whose lanes are not all there (a partial warp, or a lane that
ended), a barrier or an exchange outside a blocks phase.  A thread that ended
counts as arrived at a barrier only when a check failed (the error record is
set): a failed check lets threads that start after it leave at the phase's
start, and the run's result is then the error.

HIP's source runs with wavefronts of 64 lanes (CDNA, GCN) or 32 (RDNA), the
`wave` argument: `warpSize` and `__lane_id()` are the wavefront's, `__shfl` and
`__shfl_down` compute their source lane as HIP's headers do and read it from
the wavefront (AMD's ds_bpermute), `__ballot` gives the wavefront's 64-bit
mask.  HIP's exchanges take no mask: a wavefront runs in lockstep and
exchanges among its active lanes, so a lane stopped at a barrier (it took the
other side of a branch, as the lanes above 31 of a wave64 do around a block
reduction's last strides) or ended sits an exchange out, and a block's last
wavefront may be partial (96 threads on a wave64); reading such a lane is the
error.
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
/* always inlined, as a GPU build has it: each call of a prelude helper is then a place of its own, and
 * the warp exchanges below tell one place from another by their return address */
#define __forceinline__ inline __attribute__((always_inline))
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
#define __shared__ static
static unsigned __activemask() { return 1u; }
static void __threadfence() {}
#include <ucontext.h>
#include <sys/mman.h>
#ifndef TK_EM_WAVE
#define TK_EM_WAVE 32
#endif
namespace tkem {
enum { READY, BARRIER, WARP, DONE };
enum { E_DEADLOCK = 1, E_MASK = 2, E_PARTIAL = 4, E_NOFIBER = 8, E_MIXED = 16, E_EXITED = 32, E_STACK = 64 };
struct Fiber {
    ucontext_t ctx;
    void *stack;
    int state, mode;
    const void *site; /* where the exchange was called */
    unsigned mask, b;
    int c;
    unsigned long long val, res;
};
static Fiber *fib;
static unsigned nfib;
static Fiber *cur;
static ucontext_t sched;
static int err;
enum { STACK = 256 << 10 };
static void wait_(int state) { cur->state = state; swapcontext(&cur->ctx, &sched); }
/* mode 0 idx, 1 up, 2 down, 3 bfly (PTX shfl.sync), 4 ballot, 5 any, 6 all, 7 the value of lane b (AMD's
 * ds_bpermute, which HIP's shuffles read through after computing the lane) */
static unsigned long long exchange(int mode, unsigned mask, unsigned long long v, unsigned b, int c,
                                   const void *site) {
    if (!cur) { err |= E_NOFIBER; return v; }
    cur->mode = mode; cur->mask = mask; cur->val = v; cur->b = b; cur->c = c; cur->site = site;
    wait_(WARP);
    return cur->res;
}
/* The warp (wavefront) of lanes lo .. lo + TK_EM_WAVE - 1 goes on when all of them wait at an exchange.
 * HIP's exchanges need no mask: an AMD wavefront runs in lockstep and exchanges among the lanes that are
 * active, so there the lanes stopped at a barrier (or ended) took the other side of a branch and sit the
 * exchange out; reading one of them (or a lane a block's last wavefront lacks) is the error. */
static bool resolve(unsigned lo) {
    unsigned hi = lo + TK_EM_WAVE < nfib ? lo + TK_EM_WAVE : nfib, waiting = 0, done = 0;
    for (unsigned i = lo; i < hi; i++) {
        if (fib[i].state == WARP) waiting++;
        else if (fib[i].state == DONE) done++;
#ifdef TK_EM_HIP
        else if (fib[i].state == BARRIER) continue;
#endif
        else return false;
    }
    if (!waiting) return false;
#ifndef TK_EM_HIP
    if (hi - lo != 32 || done) err |= E_PARTIAL;
#endif
    int mode = -1;
    const void *site = 0;
    for (unsigned i = lo; i < hi; i++) {
        Fiber &f = fib[i];
        if (f.state != WARP) continue;
        if (mode < 0) mode = f.mode, site = f.site;
        if (f.mode != mode || f.site != site) err |= E_MIXED; /* CUDA: undefined; AMD: one at a time */
        if (f.mask != 0xffffffffu) err |= E_MASK;
    }
    unsigned long long ballot = 0;
    unsigned n1 = 0;
    for (unsigned i = lo; i < hi; i++)
        if (fib[i].state == WARP && fib[i].val) ballot |= 1ull << (i - lo), n1++;
    for (unsigned i = lo; i < hi; i++) {
        Fiber &f = fib[i];
        if (f.state != WARP) continue;
        if (mode == 7) {
            unsigned j = f.b & (TK_EM_WAVE - 1);
            if (lo + j >= hi || fib[lo + j].state != WARP) { err |= E_PARTIAL; f.res = 0; }
            else f.res = fib[lo + j].val;
        } else if (mode >= 4) {
            f.res = mode == 4 ? ballot : mode == 5 ? (n1 > 0) : (n1 == waiting);
        } else {
            unsigned lane = i - lo, bval = f.b & 31u, cval = (unsigned)f.c & 31u, seg = ((unsigned)f.c >> 8) & 31u;
            unsigned maxl = (lane & seg) | (cval & ~seg), minl = lane & seg;
            int j;
            bool p;
            switch (f.mode) {
            case 1: j = (int)lane - (int)bval; p = j >= (int)maxl; break;
            case 2: j = (int)(lane + bval); p = j <= (int)maxl; break;
            case 3: j = (int)(lane ^ bval); p = j <= (int)maxl; break;
            default: j = (int)(minl | (bval & ~seg)); p = j <= (int)maxl; break;
            }
            if (!p) j = (int)lane;
            if (lo + (unsigned)j >= hi || fib[lo + j].state != WARP) { err |= E_PARTIAL; f.res = 0; }
            else f.res = fib[lo + j].val;
        }
    }
    for (unsigned i = lo; i < hi; i++)
        if (fib[i].state == WARP) fib[i].state = READY;
    return true;
}
static void (*body)(int, const void *);
static int body_phase;
static const void *body_params;
static void start() {
    body(body_phase, body_params);
    cur->state = DONE;
    swapcontext(&cur->ctx, &sched);
}
/* One block of `n` threads through phase `k`; *failed reads the error record. */
static void block(unsigned n, const volatile int *failed) {
    fib = new Fiber[n];
    nfib = n;
    for (unsigned t = 0; t < n; t++) {
        Fiber &f = fib[t];
        f.stack = mmap(0, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (f.stack == MAP_FAILED) { err |= E_STACK; f.stack = 0; f.state = DONE; continue; }
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = f.stack;
        f.ctx.uc_stack.ss_size = STACK;
        f.ctx.uc_link = 0;
        makecontext(&f.ctx, start, 0);
        f.state = READY;
    }
    for (;;) {
        for (unsigned t = 0; t < n; t++) {
            if (fib[t].state != READY) continue;
            cur = &fib[t];
            threadIdx.x = t;
            swapcontext(&sched, &fib[t].ctx);
            cur = 0;
        }
        unsigned done = 0, bar = 0;
        for (unsigned t = 0; t < n; t++) done += fib[t].state == DONE, bar += fib[t].state == BARRIER;
        if (done == n) break;
        /* one warp at a time, the last first: a later warp runs ahead of the earlier ones to its next wait,
         * so a read that only a barrier orders after another warp's write sees the wrong value without it */
        bool went = false;
        for (unsigned lo = (n - 1) / TK_EM_WAVE * TK_EM_WAVE + TK_EM_WAVE; !went && lo >= TK_EM_WAVE; lo -= TK_EM_WAVE)
            went = resolve(lo - TK_EM_WAVE);
        if (went) continue;
        if (bar && bar + done == n) {
            if (done && !*failed) err |= E_EXITED;
            for (unsigned t = 0; t < n; t++)
                if (fib[t].state == BARRIER) fib[t].state = READY;
            continue;
        }
        err |= E_DEADLOCK; /* the fibers left waiting are dropped with their stacks */
        break;
    }
    for (unsigned t = 0; t < n; t++)
        if (fib[t].stack) munmap(fib[t].stack, STACK);
    delete[] fib;
    fib = 0;
    nfib = 0;
}
template <class T> static unsigned long long bits(T v) { unsigned long long u = 0; memcpy(&u, &v, sizeof v); return u; }
template <class T> static T from(unsigned long long u) { T v; memcpy(&v, &u, sizeof v); return v; }
}
static void __syncthreads() {
    if (!tkem::cur) { tkem::err |= tkem::E_NOFIBER; return; }
    tkem::wait_(tkem::BARRIER);
}
/* CUDA's overloads, so that C++ picks the one a GPU build picks (a bool or a char is promoted to int);
 * the lane operand c as CUDA's headers make it from the width. */
#define TK_EM_X(T, mode, m, v, b, c) \
    tkem::from<T>(tkem::exchange(mode, m, tkem::bits(v), (unsigned)(b), c, __builtin_return_address(0)))
#define TK_EM_NI __attribute__((noinline))
#define TK_EM_SHFL(T) \
TK_EM_NI static T __shfl_sync(unsigned m, T v, int l, int w = 32) { return TK_EM_X(T, 0, m, v, l, ((32 - w) << 8) | 0x1f); } \
TK_EM_NI static T __shfl_up_sync(unsigned m, T v, unsigned d, int w = 32) { return TK_EM_X(T, 1, m, v, d, (32 - w) << 8); } \
TK_EM_NI static T __shfl_down_sync(unsigned m, T v, unsigned d, int w = 32) { return TK_EM_X(T, 2, m, v, d, ((32 - w) << 8) | 0x1f); } \
TK_EM_NI static T __shfl_xor_sync(unsigned m, T v, int x, int w = 32) { return TK_EM_X(T, 3, m, v, x, ((32 - w) << 8) | 0x1f); }
TK_EM_SHFL(int) TK_EM_SHFL(unsigned) TK_EM_SHFL(long) TK_EM_SHFL(unsigned long) TK_EM_SHFL(long long)
TK_EM_SHFL(unsigned long long) TK_EM_SHFL(float) TK_EM_SHFL(double)
#define TK_EM_V(mode, m, p) tkem::exchange(mode, m, p != 0, 0, 0, __builtin_return_address(0))
TK_EM_NI static unsigned __ballot_sync(unsigned m, int p) { return (unsigned)TK_EM_V(4, m, p); }
TK_EM_NI static int __any_sync(unsigned m, int p) { return (int)TK_EM_V(5, m, p); }
TK_EM_NI static int __all_sync(unsigned m, int p) { return (int)TK_EM_V(6, m, p); }
#ifdef TK_EM_HIP
/* HIP's: a wavefront of TK_EM_WAVE lanes; the shuffles compute their source lane as HIP's headers do and
 * read it (ds_bpermute); no masks.  Outside a blocks phase __ballot(1) reports a partial wavefront, as
 * __activemask() does for CUDA, so a privatized sum's per-thread flush is the path taken. */
static const int warpSize = TK_EM_WAVE;
static unsigned __lane_id() { return threadIdx.x % TK_EM_WAVE; }
#define TK_EM_HSHFL(T) \
TK_EM_NI static T __shfl(T v, int src, int w = warpSize) { \
    int self = (int)__lane_id(), index = (src & (w - 1)) + (self & ~(w - 1)); \
    return TK_EM_X(T, 7, ~0u, v, index, 0); } \
TK_EM_NI static T __shfl_down(T v, unsigned d, int w = warpSize) { \
    int self = (int)__lane_id(), index = self + (int)d; \
    index = (int)((self & (w - 1)) + d) >= w ? self : index; \
    return TK_EM_X(T, 7, ~0u, v, index, 0); }
TK_EM_HSHFL(int) TK_EM_HSHFL(unsigned) TK_EM_HSHFL(long) TK_EM_HSHFL(unsigned long) TK_EM_HSHFL(long long)
TK_EM_HSHFL(unsigned long long) TK_EM_HSHFL(float) TK_EM_HSHFL(double)
TK_EM_NI static unsigned long long __ballot(int p) { return tkem::cur ? TK_EM_V(4, ~0u, p) : 1ull; }
TK_EM_NI static int __any(int p) { return (int)TK_EM_V(5, ~0u, p); }
TK_EM_NI static int __all(int p) { return (int)TK_EM_V(6, ~0u, p); }
#endif
static float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static float __uint_as_float(unsigned i) { float f; memcpy(&f, &i, 4); return f; }
static unsigned __float_as_uint(float f) { unsigned i; memcpy(&i, &f, 4); return i; }
static double __longlong_as_double(long long i) { double f; memcpy(&f, &i, 8); return f; }
static long long __double_as_longlong(double f) { long long i; memcpy(&i, &f, 8); return i; }
"""

class EmulationError(RuntimeError):
    """What the fibers of a blocks phase did that a GPU would not run (the shim's tkem::E_* bits)."""

    WHAT = {1: "a deadlock (threads of a block wait at different things)", 2: "a warp exchange whose mask is not "
            "all 32 lanes", 4: "a warp exchange without all 32 lanes of the warp", 8: "a barrier or warp exchange "
            "outside a blocks phase", 16: "lanes of a warp at different exchanges (of "
            "another kind, or at another place)", 32: "a thread that "
            "ended while others wait at a barrier", 64: "no memory for a fiber's stack"}

    def __init__(self, phase, bits):
        self.bits = bits
        what = "; ".join(v for k, v in self.WHAT.items() if bits & k)
        super().__init__(f"phase {phase}: {what}")


_dir = None
_libs = {}


def available():
    return shutil.which(os.environ.get("CXX", "g++")) is not None


def _tag(src):
    return re.search(r"(tack-cuda|tack-hip): phases=([psb]*)", src)


def _build(src, wave):
    global _dir
    key = hashlib.sha256(f"{wave}\n{src}".encode()).hexdigest()[:20]
    if key in _libs:
        return _libs[key]
    if _dir is None:
        _dir = tempfile.mkdtemp(prefix="tack-emulate-")
    tag = _tag(src)
    nph = len(tag.group(2))
    head = f"#define TK_EM_HIP 1\n#define TK_EM_WAVE {wave}\n" if tag.group(1) == "tack-hip" else ""
    runner = ["", "static void tk_em_body(int phase, const void *params) {", "    switch (phase) {"]
    runner += [f"    case {k}: tk_phase{k}(*(const tk_params *)params); break;" for k in range(nph)]
    runner += ["    }", "}",
               'extern "C" int tk_emulate(int phase, const void *params, unsigned grid, unsigned block, int fibers) {',
               "    gridDim.x = grid; blockDim.x = block; gridDim.y = gridDim.z = blockDim.y = blockDim.z = 1;",
               "    tkem::err = 0;",
               "    for (unsigned b = 0; b < grid; b++) {",
               "        blockIdx.x = b;",
               "        if (fibers) {",
               "            tkem::body = tk_em_body; tkem::body_phase = phase; tkem::body_params = params;",
               "            tkem::block(block, &((const tk_params *)params)->ctx->failed);",
               "        } else {",
               "            for (unsigned t = 0; t < block; t++) { threadIdx.x = t; tk_em_body(phase, params); }",
               "        }",
               "    }",
               "    return tkem::err;",
               "}"]
    path = os.path.join(_dir, key)
    with open(path + ".cpp", "w") as f:
        f.write(head + SHIM + src.replace('extern "C" __global__', 'extern "C"') + "\n".join(runner) + "\n")
    # a blocks phase's source without optimization: each exchange of the source is then one call, which
    # the shim tells from the others by its return address (-O1 may copy a block into two paths)
    opt = "-O0" if "b" in tag.group(2) else "-O1"
    cmd = [os.environ.get("CXX", "g++"), "-std=c++17", opt, "-w", "-shared", "-fPIC", "-o", path + ".so",
           path + ".cpp"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"the emulated CUDA source does not compile:\n{proc.stderr[-4000:]}")
    lib = ctypes.CDLL(path + ".so")
    lib.tk_emulate.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_int]
    lib.tk_emulate.restype = ctypes.c_int
    _libs[key] = lib
    return lib


def run(src, args, grid=3, block=32, wave=64):
    """Run the phases of `src` over `args` (NumPy arrays for arrays, each
    with the kernel's element shape in `args` as (array, shape) when its
    dtype is a vector; Python scalars).  Returns the error record
    (failed, site, prog, a, b); arrays are updated in place -- a strided
    view too, when `src` is the build that indexes it with its strides
    (its element strides follow its shape, as gpu_launch.c packs them).
    A blocks phase runs `grid` blocks of its loop's block size, each thread
    a fiber (its loop strides over the other blocks); what a GPU would not
    run raises EmulationError, unless a check failed first.  A HIP source
    (tag tack-hip) runs with wavefronts of `wave` lanes (64 or 32); a CUDA
    source's warps are 32 lanes."""
    lib = _build(src, wave if _tag(src).group(1) == "tack-hip" else 32)
    phases = _tag(src).group(2)
    blocks = re.search(r"tack-grid-block:([ 0-9:]*)\*/", src)
    blocks = dict(map(int, kv.split(":")) for kv in blocks.group(1).split()) if blocks else {}
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
        if kind == "b":  # a blocks loop: blocks of exactly its size, each thread a fiber
            bad = lib.tk_emulate(k, blob.ctypes.data, grid, blocks[k], 1)
        else:
            bad = lib.tk_emulate(k, blob.ctypes.data, grid if kind == "p" else 1, block if kind == "p" else 1, 0)
        if bad and not err.view(np.int32)[0]:
            raise EmulationError(k, bad)
    rec = err.view(np.int32)
    return int(rec[0]), int(rec[1]), int(err[1]), int(err[2]), int(err[3])
