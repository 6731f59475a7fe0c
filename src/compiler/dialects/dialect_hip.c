/*
 * dialect_hip.c -- the "hip" dialect of the C-family emitter (AMD GPUs).
 *
 * HIP is CUDA's kernel language under another name: `__global__`,
 * `blockIdx`, `atomicAdd`, `sqrtf` and the by-value argument struct are
 * the same, so this dialect is the CUDA dialect's hooks (dialect_cuda.h)
 * with five differences, kept here:
 *
 *   - Warp sums.  An AMD wavefront has 64 lanes (CDNA, GCN) or 32 (RDNA in
 *     its default wave32 mode): the target decides, and the device code
 *     reads it from `warpSize`, a compile-time constant per target, instead
 *     of assuming 32.  HIP's shuffles take no lane mask.
 *   - The flush of a privatized sum asks `__ballot(1)` whether the whole
 *     wavefront is active (a 64-bit mask) and lets lane 0 add.
 *   - f16 conversions use clang's `_Float16` (AMD GPUs convert in one
 *     instruction, rounding to nearest even) instead of PTX.
 *   - The sub-group operations of a blocks loop (lower_blocks.c) are 32 lanes
 *     on every device: a wave32's lanes or half of a wave64's, so HIP's
 *     `__shfl` and `__shfl_down` get their width argument (at most 32) and a
 *     ballot takes the thread's half of the 64-bit mask.
 *   - The trailer's tag is `tack-hip`, so a HIP launcher never takes a
 *     CUDA program's layout for its own.
 *
 * The source is HIP C++ for hiprtc (Tack's path: `__HIPCC_RTC__`, no
 * headers) and for hipcc (the tests build a few with it).
 */
#include "compiler/dialects/dialect_cuda.h"
#include "compiler/grid/grid.h"

static const char PRELUDE_WARP[] =
    "TK_D int tk_shfl(int v, int o) { return __shfl_down(v, o); }\n"
    "TK_D unsigned tk_shfl(unsigned v, int o) { return __shfl_down(v, o); }\n"
    "TK_D long long tk_shfl(long long v, int o) { return __shfl_down(v, o); }\n"
    "TK_D unsigned long long tk_shfl(unsigned long long v, int o) { return __shfl_down(v, o); }\n"
    "TK_D float tk_shfl(float v, int o) { return __shfl_down(v, o); }\n"
    "TK_D double tk_shfl(double v, int o) { return __shfl_down(v, o); }\n"
    "/* integers narrower than 32 bits travel as ints (their sums wrap when stored) */\n"
    "template <typename T> TK_D T tk_shfl(T v, int o) { return (T)tk_shfl((int)v, o); }\n"
    "template <typename T> TK_D T tk_wsum(T v) {\n"
    "    for (int o = warpSize / 2; o > 0; o >>= 1) v = tk_wadd(v, (T)tk_shfl(v, o));\n"
    "    return v;\n"
    "}\n"
    "#define TK_FULL_WAVE (warpSize == 64 ? ~0ull : 0xffffffffull)\n"
    "/* The sub-group operations of a blocks loop (IR_WARP, lower_blocks.c): the language's 32 lanes are a\n"
    " * wave32's lanes or half of a wave64's, so the shuffles take their width (never over 32) and a ballot\n"
    " * takes the thread's half of the wavefront's 64-bit mask. */\n"
    "template <typename T> TK_D T tk_warp_idx(T v, long long lane, int w) { return (T)__shfl(v, (int)lane, w); }\n"
    "template <typename T> TK_D T tk_warp_down(T v, long long d, int w) { return (T)__shfl_down(v, (unsigned)d, w); }\n"
    "TK_D int64_t tk_warp_ballot(int64_t c) {\n"
    "    return (int64_t)(((unsigned long long)__ballot(c != 0) >> (__lane_id() & 32u)) & 0xffffffffull);\n"
    "}\n"
    "TK_D tk_bool tk_warp_any(int64_t c) { return tk_warp_ballot(c) != 0; }\n"
    "TK_D tk_bool tk_warp_all(int64_t c) { return tk_warp_ballot(c) == 0xffffffffll; }\n";

static const char PRELUDE_F16[] =
    "TK_D float tk_h2f(uint16_t h) { union { uint16_t u; _Float16 f; } c; c.u = h; return (float)c.f; }\n"
    "TK_D uint16_t tk_f2h(float f) { union { uint16_t u; _Float16 f; } c; c.f = (_Float16)f; return c.u; }\n"
    TK_CU_D2H;

/* int64_t atomics: HIP (ROCm 5.2) has no signed 64-bit atomicMin/Max, so
 * those are compare-and-swap loops; add and sub use the unsigned add. */
static const char PRELUDE_ATOMIC_I64[] =
    "TK_D int64_t tk_atomic_add_int64_t(int64_t *p, int64_t v) {\n"
    "    return (int64_t)atomicAdd((unsigned long long *)p, (unsigned long long)v);\n"
    "}\n"
    "TK_D int64_t tk_atomic_sub_int64_t(int64_t *p, int64_t v) {\n"
    "    return (int64_t)atomicAdd((unsigned long long *)p, 0ull - (unsigned long long)v);\n"
    "}\n"
    "TK_D int64_t tk_atomic_mm_int64_t(int64_t *p, int64_t v, int mx) {\n"
    "    unsigned long long *q = (unsigned long long *)p, o = *(volatile unsigned long long *)q;\n"
    "    for (;;) {\n"
    "        int64_t f = (int64_t)o, g = mx ? (v > f ? v : f) : (v < f ? v : f);\n"
    "        if (g == f) return f;\n"
    "        unsigned long long prev = atomicCAS(q, o, (unsigned long long)g);\n"
    "        if (prev == o) return f;\n"
    "        o = prev;\n"
    "    }\n"
    "}\n"
    "TK_D int64_t tk_atomic_min_int64_t(int64_t *p, int64_t v) { return tk_atomic_mm_int64_t(p, v, 0); }\n"
    "TK_D int64_t tk_atomic_max_int64_t(int64_t *p, int64_t v) { return tk_atomic_mm_int64_t(p, v, 1); }\n";

static void hip_prelude(tk_cc *C, tk_buf *b) {
    tk_cu_prelude_core(b);
    tk_cu_prelude_math(C, b);
    tk_puts(b, PRELUDE_WARP);
    if (C->uses_f16) tk_puts(b, PRELUDE_F16);
    if (C->uses_bf16) tk_puts(b, TK_CU_BF16);
    if (C->uses_atomic) {
        tk_puts(b, tk_cu_prelude_atomic);
        tk_puts(b, PRELUDE_ATOMIC_I64);
    }
    if (C->uses_vec) tk_puts(b, tk_cu_prelude_vec);
    if (C->uses_atomic && C->uses_vec) tk_vec_atomic_prelude(C, b, "TK_D", "", 1);
    tk_cu_prelude_linalg(C, b);
    if (C->uses_complex) tk_complex_prelude(C, b, "TK_D", "", 1);
    if (C->uses_quat) tk_quat_prelude(C, b, "TK_D", 1);
}

/* A privatized sum: summed across a full wavefront and added by its first
 * lane; a partial wavefront adds per thread. */
static void hip_flush(tk_emitter *e, tk_ir *a, int all_reach) {
    (void)all_reach; /* a partial warp is found at run time */
    tk_cuda_flush(e, a, "__ballot(1) == TK_FULL_WAVE", "(threadIdx.x & (unsigned)(warpSize - 1)) == 0");
}

static const tk_grid hip_grid = {
    .tag = "tack-hip",
    .decls = tk_cu_decls,
    .phase_open = tk_cu_phase_open,
    .phase_args = tk_cu_phase_args,
    .prog = "P.prog",
    .scalar = tk_cu_scalar,
    .first_thread = "blockIdx.x == 0 && threadIdx.x == 0",
    .thread_index = "(uint64_t)blockIdx.x * blockDim.x + threadIdx.x",
    .thread_stride = "(uint64_t)gridDim.x * blockDim.x",
    .group_index = "blockIdx.x",
    .group_count = "gridDim.x",
    .local_index = "threadIdx.x",
    .vector_loads = 1,
    .flush = hip_flush,
    .trailer = tk_cu_trailer,
};

static void hip_kernel(tk_emitter *e, tk_buf *out) { tk_grid_kernel(e, out, &hip_grid); }

const tk_dialect tk_dialect_hip = {
    .prelude = hip_prelude,
    .ctype = tk_cu_ctype,
    .storage_type = tk_cu_storage,
    .math = tk_cu_math,
    .export_attr = "extern \"C\" __global__",
    .func_qual = "static __device__",
    .cxx_literals = 1,
    .float_specials = tk_cuda_specials,
    .barrier = "__syncthreads();",
    .shared_qual = "__shared__ ",
    .kernel = hip_kernel,
};
