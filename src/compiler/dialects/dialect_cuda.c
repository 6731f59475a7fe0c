/*
 * dialect_cuda.c -- the "cuda" dialect of the C-family emitter (NVIDIA GPUs).
 *
 * Expressions and statements come out of emit.c exactly as for the CPU; this
 * file supplies what differs: a prelude of CUDA C++ helpers, the names of
 * CUDA's math functions, C++ brace literals, and -- through the dialect's
 * `kernel` hook -- the layout of the kernel on a grid.
 *
 * The layout -- phases, prologues, the frame between phases -- is the grid
 * layout shared by the GPU dialects (layout_grid.c); this file's tk_grid
 * gives CUDA's spelling of it.
 *
 * Arguments reach every phase as one by-value struct of 8-byte slots: the
 * error record, the frame buffer, the program's id, then per parameter the
 * data pointer and the shape (arrays) or the scalar value; an array that
 * arrived as a strided view (its `strided` bit) also has its element
 * strides after its shape, the pointer being that of element (0, ..., 0).
 * gpu_launch.c packs the same slots; the trailing comment `tack-cuda: phases=... frame=N`
 * tells it which phases are single-threaded and how large the frame is.
 *
 * Checks write the device's error record {failed, site, prog, a, b}: the
 * first failure wins through atomicCAS; the failing thread returns, and
 * every later phase -- of this call or of any call queued after it --
 * returns at its start while the record is set.  The runtime reads the
 * record at the next synchronization point and words the error from the
 * program's site table, naming kernel, file and line as on the CPU.
 *
 * Atomics: CUDA's instructions where they exist (add for 32/64-bit integers
 * and floats, min/max for 32/64-bit integers, exchange, and, or, xor and
 * compare-and-swap for 32/64-bit integers and, on their bits, floats),
 * compare-and-swap loops for float min/max and, on the enclosing 32-bit
 * word, for every operation on 8 and 16-bit integers.  Privatized reductions (privatize.c) are summed across the warp
 * with shuffles and flushed by one atomic per warp.  The sub-group operations of a blocks loop
 * (IR_WARP, lower_blocks.c: a warp's 32 lanes are the language's sub-group) are the prelude's
 * tk_warp_* over __shfl_sync, __shfl_down_sync, __ballot_sync, __any_sync and __all_sync.
 *
 * The prelude is valid both for NVRTC (Tack's path, no headers) and for
 * nvcc (the tests build a few sources with it), so every helper is marked
 * __device__ explicitly.
 */
#include <string.h>

#include "compiler/grid/grid.h"
#include "compiler/dialects/dialect_cuda.h"

const char *tk_cu_ctype(tack_dtype dt) { return tk_dialect_c.ctype(dt); }
const char *tk_cu_storage(tack_dtype dt) { return tk_dialect_c.storage_type(dt); }

/* Math functions by their C library names (intrinsics.def), as CUDA's device library spells them. */
const char *tk_cu_math(int m, tack_dtype dt) {
    static const char *f64[M_COUNT] = {
#define TK_MATH(id, name, nargs, result, libm_f64, libm_f32, ulps_f32, ulps_f64) [id] = libm_f64,
#include "compiler/intrinsics.def"
    };
    static const char *f32[M_COUNT] = {
#define TK_MATH(id, name, nargs, result, libm_f64, libm_f32, ulps_f32, ulps_f64) [id] = libm_f32,
#include "compiler/intrinsics.def"
    };
    if ((unsigned)m >= M_COUNT) return "?";
    if (m == M_RSQRT) return dt == TACK_F32 ? "rsqrtf" : "rsqrt"; /* the device library's own */
    const char *h = tk_math_helper(m, dt); /* a row without a C library function: the prelude's */
    if (h) return h;
    const char *s = dt == TACK_F32 ? f32[m] : f64[m];
    return s ? s : "?";
}

static const char PRELUDE_CORE_HEAD[] =
    "#if defined(__CUDACC_RTC__) || defined(__HIPCC_RTC__)\n"
    "typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;\n"
    "typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;\n"
    "typedef unsigned long long uint64_t;\n"
    "#else\n"
    "#ifdef __HIPCC__\n"
    "#include <hip/hip_runtime.h>\n"
    "#endif\n"
    "#include <cstdint>\n"
    "#include <cstdio>\n"
    "#endif\n"
    "#define TK_D static __device__ __forceinline__\n"
    "typedef bool tk_bool;\n"
    "typedef union tk_scalar { int64_t i; uint64_t u; double f; float f32; } tk_scalar;\n"
    "/* The device's error record; mirrored by cuda_launch.c. */\n"
    "typedef struct tk_ctx { int failed; int site; unsigned long long prog; long long a, b; } tk_ctx;\n"
    "typedef struct tk_pv { int kind; int64_t i; uint64_t u; double f; const char *s; double im; } tk_pv;\n"
    "#define TK_FAILED(c) (*(volatile int *)&(c)->failed)\n"
    "/* After a call that can fail: the thread's own flag, which fail() sets (no load of the record). */\n"
    "#define TK_CALL_FAILED(c, a) (*(a)->fl)\n"
    "#define tk_wrap(i, s) ((i) < 0 ? (i) + (s) : (i))\n"
    "TK_D void tk_print_float(const char *sep, double v, int f32) {\n"
    "    if (v == v && v - v == 0 && v == (double)(long long)v && v < 1e16 && v > -1e16) printf(\"%s%.1f\", sep, v);\n"
    "    else if (v != v) printf(\"%snan\", sep);\n"
    "    else if (v - v != 0) printf(\"%s%sinf\", sep, v < 0 ? \"-\" : \"\");\n"
    "    else if (f32) printf(\"%s%.9g\", sep, v);\n"
    "    else printf(\"%s%.17g\", sep, v);\n"
    "}\n"
    "TK_D void tk_print_part(const char *pre, double v, int f32, int plus) {\n"
    "    const char *s = plus && !signbit(v) ? \"+\" : \"\";\n"
    "    if (v != v) printf(\"%s%snan\", pre, plus ? \"+\" : \"\");\n"
    "    else if (v - v != 0) printf(\"%s%s%sinf\", pre, s, v < 0 ? \"-\" : \"\");\n"
    "    else if (v == (double)(long long)v && v < 1e16 && v > -1e16) printf(\"%s%s%.0f\", pre, s, v);\n"
    "    else if (f32) printf(\"%s%s%.9g\", pre, s, v);\n"
    "    else printf(\"%s%s%.17g\", pre, s, v);\n"
    "}\n"
    "TK_D void tk_print_complex(const char *sep, double re, double im, int f32) {\n"
    "    if (re == 0 && !signbit(re)) { tk_print_part(sep, im, f32, 0); printf(\"j\"); return; }\n"
    "    printf(\"%s(\", sep); tk_print_part(\"\", re, f32, 0); tk_print_part(\"\", im, f32, 1); printf(\"j)\");\n"
    "}\n"
    "struct tk_abi {\n"
    "    unsigned long long prog;\n"
    "    int *fl; /* the thread's failure flag (a local of the phase) */\n"
    "    __device__ void fail(tk_ctx *c, int site, int64_t a, int64_t b) const {\n"
    "        *fl = 1;\n"
    "        if (atomicCAS(&c->failed, 0, 1) == 0) { c->site = site; c->prog = prog; c->a = a; c->b = b; "
    "__threadfence(); }\n"
    "    }\n"
    "    __device__ void print(tk_ctx *c, const tk_pv *v, int n) const {\n"
    "        for (int i = 0; i < n; i++) {\n"
    "            const char *sep = i ? \" \" : \"\";\n"
    "            switch (v[i].kind) {\n"
    "            case 0: printf(\"%s%s\", sep, v[i].s); break;\n"
    "            case 1: printf(\"%s%s\", sep, v[i].i ? \"True\" : \"False\"); break;\n"
    "            case 2: printf(\"%s%lld\", sep, (long long)v[i].i); break;\n"
    "            case 3: printf(\"%s%llu\", sep, (unsigned long long)v[i].u); break;\n"
    "            case 6: case 7: tk_print_complex(sep, v[i].f, v[i].im, v[i].kind == 6); break;\n"
    "            default: tk_print_float(sep, v[i].f, v[i].kind == 4); break;\n"
    "            }\n"
    "        }\n"
    "        printf(\"\\n\");\n"
    "    }\n"
    "};\n";

/* The helpers every dialect shares (prelude.c), spelled for CUDA (and HIP). */
static const tk_prelude_style CU_STYLE = {
    .qual = "TK_D",
    .wide = "double",
    .int_suffix = "LL",
    .math = tk_cu_math,
    .f64 = TK_PRELUDE_F64_ALWAYS,
};

static const char PRELUDE_CORE_TAIL[] =
    "/* Warp sums for privatized reductions (integers wrap); tk_wsum is the dialect's. */\n"
    "TK_D float tk_wadd(float a, float b) { return a + b; }\n"
    "TK_D double tk_wadd(double a, double b) { return a + b; }\n"
    "template <typename T> TK_D T tk_wadd(T a, T b) { return (T)((unsigned long long)a + (unsigned long long)b); }\n";

static const char PRELUDE_WARP[] =
    "template <typename T> TK_D T tk_wsum(T v) {\n"
    "    for (int o = 16; o > 0; o >>= 1) v = tk_wadd(v, (T)__shfl_down_sync(0xffffffffu, v, o));\n"
    "    return v;\n"
    "}\n"
    "/* The sub-group operations of a blocks loop (IR_WARP, lower_blocks.c): the 32 lanes of the warp take part.\n"
    " * Types narrower than int travel as int (C++'s promotion picks __shfl_sync's int form). */\n"
    "template <typename T> TK_D T tk_warp_idx(T v, long long lane, int w) { return (T)__shfl_sync(0xffffffffu, v, "
    "(int)lane, w); }\n"
    "template <typename T> TK_D T tk_warp_down(T v, long long d, int w) { return (T)__shfl_down_sync(0xffffffffu, v, "
    "(unsigned)d, w); }\n"
    "TK_D int64_t tk_warp_ballot(int64_t c) { return (int64_t)(unsigned)__ballot_sync(0xffffffffu, c != 0); }\n"
    "TK_D tk_bool tk_warp_any(int64_t c) { return __any_sync(0xffffffffu, c != 0) != 0; }\n"
    "TK_D tk_bool tk_warp_all(int64_t c) { return __all_sync(0xffffffffu, c != 0) != 0; }\n";

static const char PRELUDE_F16[] =
    "TK_D float tk_h2f(uint16_t h) { float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f; }\n"
    "TK_D uint16_t tk_f2h(float f) { uint16_t h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n"
    TK_CU_D2H;

const char tk_cu_prelude_atomic[] =
    "/* 8 and 16-bit integers: compare-and-swap on the enclosing aligned word. */\n"
    "template <typename T, typename U> TK_D T tk_atomic_small(T *p, T v, int op, T e = 0) {\n"
    "    unsigned int *w = (unsigned int *)((unsigned long long)p & ~3ull);\n"
    "    const unsigned sh = (unsigned)((unsigned long long)p & 3ull) * 8u;\n"
    "    const unsigned mask = (unsigned)(U)~(U)0 << sh;\n"
    "    unsigned o = *(volatile unsigned int *)w;\n"
    "    for (;;) {\n"
    "        T cur = (T)(U)((o & mask) >> sh), nv;\n"
    "        if (op == 0) nv = (T)(U)((unsigned)(U)cur + (unsigned)(U)v);\n"
    "        else if (op == 1) nv = (T)(U)((unsigned)(U)cur - (unsigned)(U)v);\n"
    "        else if (op == 2) nv = v < cur ? v : cur;\n"
    "        else if (op == 3) nv = v > cur ? v : cur;\n"
    "        else if (op == 4) nv = v;\n"
    "        else if (op == 5) nv = (T)(cur & v);\n"
    "        else if (op == 6) nv = (T)(cur | v);\n"
    "        else if (op == 7) nv = (T)(cur ^ v);\n"
    "        else nv = cur == e ? v : cur;\n"
    "        if (nv == cur && op >= 2) return cur;\n"
    "        unsigned n = (o & ~mask) | (((unsigned)(U)nv << sh) & mask);\n"
    "        unsigned prev = atomicCAS(w, o, n);\n"
    "        if (prev == o) return cur;\n"
    "        o = prev;\n"
    "    }\n"
    "}\n"
    "#define TK_ATOMIC_SMALL(T, U) \\\n"
    "TK_D T tk_atomic_add_##T(T *p, T v) { return tk_atomic_small<T, U>(p, v, 0); } \\\n"
    "TK_D T tk_atomic_sub_##T(T *p, T v) { return tk_atomic_small<T, U>(p, v, 1); } \\\n"
    "TK_D T tk_atomic_min_##T(T *p, T v) { return tk_atomic_small<T, U>(p, v, 2); } \\\n"
    "TK_D T tk_atomic_max_##T(T *p, T v) { return tk_atomic_small<T, U>(p, v, 3); } \\\n"
    "TK_D T tk_atomic_exch_##T(T *p, T v) { return tk_atomic_small<T, U>(p, v, 4); } \\\n"
    "TK_D T tk_atomic_and_##T(T *p, T v) { return tk_atomic_small<T, U>(p, v, 5); } \\\n"
    "TK_D T tk_atomic_or_##T(T *p, T v) { return tk_atomic_small<T, U>(p, v, 6); } \\\n"
    "TK_D T tk_atomic_xor_##T(T *p, T v) { return tk_atomic_small<T, U>(p, v, 7); } \\\n"
    "TK_D T tk_atomic_cas_##T(T *p, T e, T v) { return tk_atomic_small<T, U>(p, v, 8, e); }\n"
    "TK_ATOMIC_SMALL(int8_t, uint8_t) TK_ATOMIC_SMALL(uint8_t, uint8_t)\n"
    "TK_ATOMIC_SMALL(int16_t, uint16_t) TK_ATOMIC_SMALL(uint16_t, uint16_t)\n"
    "/* 32 and 64-bit integers: the hardware's add, min and max (sub adds the wrapped negation). */\n"
    "#define TK_ATOMIC_NATIVE(T, A, M) \\\n"
    "TK_D T tk_atomic_add_##T(T *p, T v) { return (T)atomicAdd((A *)p, (A)v); } \\\n"
    "TK_D T tk_atomic_sub_##T(T *p, T v) { return (T)atomicAdd((A *)p, (A)0 - (A)v); } \\\n"
    "TK_D T tk_atomic_min_##T(T *p, T v) { return (T)atomicMin((M *)p, (M)v); } \\\n"
    "TK_D T tk_atomic_max_##T(T *p, T v) { return (T)atomicMax((M *)p, (M)v); }\n"
    "TK_ATOMIC_NATIVE(int32_t, unsigned int, int) TK_ATOMIC_NATIVE(uint32_t, unsigned int, unsigned int)\n"
    "TK_ATOMIC_NATIVE(uint64_t, unsigned long long, unsigned long long)\n"
    "/* exchange, and, or, xor and compare-and-swap of 32 and 64-bit integers: the hardware's, on the unsigned type\n"
    " * of the width (the bits are the same). */\n"
    "#define TK_ATOMIC_BITS(T, A) \\\n"
    "TK_D T tk_atomic_exch_##T(T *p, T v) { return (T)atomicExch((A *)p, (A)v); } \\\n"
    "TK_D T tk_atomic_and_##T(T *p, T v) { return (T)atomicAnd((A *)p, (A)v); } \\\n"
    "TK_D T tk_atomic_or_##T(T *p, T v) { return (T)atomicOr((A *)p, (A)v); } \\\n"
    "TK_D T tk_atomic_xor_##T(T *p, T v) { return (T)atomicXor((A *)p, (A)v); } \\\n"
    "TK_D T tk_atomic_cas_##T(T *p, T e, T v) { return (T)atomicCAS((A *)p, (A)e, (A)v); }\n"
    "TK_ATOMIC_BITS(int32_t, unsigned int) TK_ATOMIC_BITS(uint32_t, unsigned int)\n"
    "TK_ATOMIC_BITS(int64_t, unsigned long long) TK_ATOMIC_BITS(uint64_t, unsigned long long)\n"
    "/* Floats: the hardware's add; min and max as compare-and-swap loops (NaN leaves the cell); exchange and\n"
    " * compare-and-swap on the bits (-0.0 is not 0.0; a NaN matches the same NaN). */\n"
    "#define TK_ATOMIC_FLT(T, U, TO, FROM) \\\n"
    "TK_D T tk_atomic_add_##T(T *p, T v) { return atomicAdd(p, v); } \\\n"
    "TK_D T tk_atomic_sub_##T(T *p, T v) { return atomicAdd(p, -v); } \\\n"
    "TK_D T tk_atomic_mm_##T(T *p, T v, int mx) { U *q = (U *)p; U o = *(volatile U *)q; \\\n"
    "    for (;;) { T f = FROM(o), g = mx ? (v > f ? v : f) : (v < f ? v : f); if (g == f) return f; \\\n"
    "        U prev = atomicCAS(q, o, (U)TO(g)); if (prev == o) return f; o = prev; } } \\\n"
    "TK_D T tk_atomic_min_##T(T *p, T v) { return tk_atomic_mm_##T(p, v, 0); } \\\n"
    "TK_D T tk_atomic_max_##T(T *p, T v) { return tk_atomic_mm_##T(p, v, 1); } \\\n"
    "TK_D T tk_atomic_exch_##T(T *p, T v) { return FROM(atomicExch((U *)p, (U)TO(v))); } \\\n"
    "TK_D T tk_atomic_cas_##T(T *p, T e, T v) { return FROM(atomicCAS((U *)p, (U)TO(e), (U)TO(v))); }\n"
    "TK_ATOMIC_FLT(float, unsigned int, __float_as_uint, __uint_as_float)\n"
    "TK_ATOMIC_FLT(double, unsigned long long, __double_as_longlong, __longlong_as_double)\n";

/* int64_t: CUDA has signed 64-bit min and max (HIP's are in dialect_hip.c). */
static const char PRELUDE_ATOMIC_I64[] = "TK_ATOMIC_NATIVE(int64_t, unsigned long long, long long)\n";

const char tk_cu_prelude_vec[] =
    "#define TK_VEC(N, T, LEN) \\\n"
    "typedef struct N { T v[LEN]; } N; \\\n"
    "TK_D N tk_add_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = a.v[i] + b.v[i]; return r; } \\\n"
    "TK_D N tk_sub_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = a.v[i] - b.v[i]; return r; } \\\n"
    "TK_D N tk_mul_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = a.v[i] * b.v[i]; return r; } \\\n"
    "TK_D N tk_div_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = a.v[i] / b.v[i]; return r; } \\\n"
    "TK_D N tk_neg_##N(N a) { N r; for (int i = 0; i < LEN; i++) r.v[i] = -a.v[i]; return r; } \\\n"
    "TK_D T tk_dot_##N(N a, N b) { T s = 0; for (int i = 0; i < LEN; i++) s += a.v[i] * b.v[i]; return s; }\n"
    "#define TK_VECI(N, LEN) \\\n"
    "typedef struct N { int32_t v[LEN]; } N; \\\n"
    "TK_D N tk_add_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = (int32_t)((uint32_t)a.v[i] + "
    "(uint32_t)b.v[i]); return r; } \\\n"
    "TK_D N tk_sub_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = (int32_t)((uint32_t)a.v[i] - "
    "(uint32_t)b.v[i]); return r; } \\\n"
    "TK_D N tk_mul_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = (int32_t)((uint32_t)a.v[i] * "
    "(uint32_t)b.v[i]); return r; } \\\n"
    "TK_D N tk_neg_##N(N a) { N r; for (int i = 0; i < LEN; i++) r.v[i] = (int32_t)(0u - (uint32_t)a.v[i]); return r; "
    "} \\\n"
    "TK_D int32_t tk_dot_##N(N a, N b) { uint32_t s = 0; for (int i = 0; i < LEN; i++) s += (uint32_t)a.v[i] * "
    "(uint32_t)b.v[i]; return (int32_t)s; }\n"
    "#define TK_VECF(N, T, LEN, SQRT) TK_VEC(N, T, LEN) \\\n"
    "TK_D T tk_length_##N(N a) { return SQRT(tk_dot_##N(a, a)); } \\\n"
    "TK_D N tk_normalize_##N(N a) { T l = tk_length_##N(a); N r; for (int i = 0; i < LEN; i++) r.v[i] = l != 0 ? a.v[i] "
    "/ l : 0; return r; }\n"
    "#define TK_CROSS(N) TK_D N tk_cross_##N(N a, N b) { N r; \\\n"
    "    r.v[0] = a.v[1] * b.v[2] - a.v[2] * b.v[1]; r.v[1] = a.v[2] * b.v[0] - a.v[0] * b.v[2]; \\\n"
    "    r.v[2] = a.v[0] * b.v[1] - a.v[1] * b.v[0]; return r; }\n"
    "#define TK_MAT(M, V, T, R) \\\n"
    "typedef struct M { T m[R][R]; } M; \\\n"
    "TK_D M tk_add_##M(M a, M b) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) r.m[i][j] = a.m[i][j] "
    "+ b.m[i][j]; return r; } \\\n"
    "TK_D M tk_sub_##M(M a, M b) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) r.m[i][j] = a.m[i][j] "
    "- b.m[i][j]; return r; } \\\n"
    "TK_D M tk_mul_##M(M a, M b) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) r.m[i][j] = a.m[i][j] "
    "* b.m[i][j]; return r; } \\\n"
    "TK_D M tk_div_##M(M a, M b) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) r.m[i][j] = a.m[i][j] "
    "/ b.m[i][j]; return r; } \\\n"
    "TK_D M tk_neg_##M(M a) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) r.m[i][j] = -a.m[i][j]; "
    "return r; } \\\n"
    "TK_D V tk_mm_##M##_##V(M a, V b) { V r; for (int i = 0; i < R; i++) { T s = 0; for (int j = 0; j < R; j++) s += "
    "a.m[i][j] * b.v[j]; r.v[i] = s; } return r; } \\\n"
    "TK_D M tk_mm_##M##_##M(M a, M b) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) { T s = 0; for "
    "(int k = 0; k < R; k++) s += a.m[i][k] * b.m[k][j]; r.m[i][j] = s; } return r; }\n"
    "TK_VECF(tk_vec2, float, 2, sqrtf) TK_VECF(tk_vec3, float, 3, sqrtf) TK_VECF(tk_vec4, float, 4, sqrtf)\n"
    "TK_VECF(tk_vec2d, double, 2, sqrt) TK_VECF(tk_vec3d, double, 3, sqrt) TK_VECF(tk_vec4d, double, 4, sqrt)\n"
    "TK_VECI(tk_vec2i, 2) TK_VECI(tk_vec3i, 3) TK_VECI(tk_vec4i, 4)\n"
    "TK_CROSS(tk_vec3) TK_CROSS(tk_vec3d)\n"
    "TK_D tk_vec3i tk_cross_tk_vec3i(tk_vec3i a, tk_vec3i b) { tk_vec3i r; uint32_t x[3], y[3]; for (int i = 0; i < 3; "
    "i++) { x[i] = (uint32_t)a.v[i]; y[i] = (uint32_t)b.v[i]; }\n"
    "    r.v[0] = (int32_t)(x[1] * y[2] - x[2] * y[1]); r.v[1] = (int32_t)(x[2] * y[0] - x[0] * y[2]); r.v[2] = "
    "(int32_t)(x[0] * y[1] - x[1] * y[0]); return r; }\n"
    "TK_MAT(tk_mat22, tk_vec2, float, 2) TK_MAT(tk_mat33, tk_vec3, float, 3) TK_MAT(tk_mat44, tk_vec4, float, 4)\n"
    "TK_MAT(tk_mat22d, tk_vec2d, double, 2) TK_MAT(tk_mat33d, tk_vec3d, double, 3) TK_MAT(tk_mat44d, tk_vec4d, double, "
    "4)\n";

void tk_cu_prelude_core(tk_buf *b) {
    tk_puts(b, PRELUDE_CORE_HEAD);
    tk_prelude_helpers(b, &CU_STYLE);
    tk_puts(b, PRELUDE_CORE_TAIL);
}

void tk_cu_prelude_math(const tk_cc *C, tk_buf *b) { tk_prelude_math(C, b, &CU_STYLE); }

void tk_cu_prelude_linalg(const tk_cc *C, tk_buf *b) { tk_prelude_linalg(C, b, &CU_STYLE); }

static void cu_prelude(tk_cc *C, tk_buf *b) {
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

/* ------------------------------------------------------------ the layout */
#define CU_BLOCK 256

/* The argument slots, passed by value to every phase. */
void tk_cu_decls(tk_emitter *e, const tk_spec *K) {
    tk_emitter_printf(
        e, "typedef struct tk_params {\n    tk_ctx *ctx;\n    struct tk_fbuf *fb;\n    unsigned long long prog;\n");
    for (int p = 0; p < K->nparams; p++) {
        tk_type t = K->ptypes[p];
        if (t.kind == TY_ARRAY) {
            tk_emitter_printf(e, "    %s *%sa%d;\n", tk_cu_storage((tack_dtype)t.dt), tk_emitter_restrict(e, p, "__restrict__ "), p);
            for (int k = 0; k < t.ndim; k++) tk_emitter_printf(e, "    int64_t a%d_s%d;\n", p, k);
            /* a strided view: its element strides after its extents (gpu_launch.c) */
            for (int k = 0; t.strided && k < t.ndim; k++) tk_emitter_printf(e, "    int64_t a%d_t%d;\n", p, k);
        } else {
            tk_emitter_printf(e, "    tk_scalar s%d;\n", p);
            if (dt_kind(tk_emitter_cc(e)->args[p].dtype) == TACK_KIND_COMPLEX) /* (re, im): two slots */
                tk_emitter_printf(e, "    tk_scalar s%di;\n", p);
        }
    }
    tk_emitter_printf(e, "} tk_params;\n\n");
}

void tk_cu_phase_open(tk_emitter *e, const tk_spec *K, int k, int parallel) {
    (void)K;
    tk_emitter_printf(e, "extern \"C\" __global__ void %stk_phase%d(const tk_params P) {\n",
                      parallel ? "__launch_bounds__(256) " : "", k);
}

void tk_cu_phase_args(tk_emitter *e, const tk_spec *K) {
    tk_emitter_indent(e);
    tk_emitter_printf(e, "tk_ctx *ctx = P.ctx;\n");
    tk_emitter_indent(e);
    tk_emitter_printf(e, "tk_fbuf *FB = P.fb; (void)FB;\n");
    for (int p = 0; p < K->nparams; p++) {
        tk_type t = K->ptypes[p];
        if (t.kind != TY_ARRAY) continue;
        tk_emitter_indent(e);
        tk_emitter_printf(e, "%s *%sa%d = P.a%d; (void)a%d;\n", tk_cu_storage((tack_dtype)t.dt),
                          tk_emitter_restrict(e, p, "__restrict__ "), p, p, p);
        for (int d = 0; d < t.ndim; d++) {
            tk_emitter_indent(e);
            tk_emitter_printf(e, "const int64_t a%d_s%d = P.a%d_s%d; (void)a%d_s%d;\n", p, d, p, d, p, d);
        }
        for (int d = 0; t.strided && d < t.ndim; d++) {
            tk_emitter_indent(e);
            tk_emitter_printf(e, "const int64_t a%d_t%d = P.a%d_t%d; (void)a%d_t%d;\n", p, d, p, d, p, d);
        }
    }
}

void tk_cu_scalar(tk_emitter *e, int p, int im, const char *mem) { tk_emitter_printf(e, "P.s%d%s.%s", p, im ? "i" : "", mem); }

/* A privatized sum: summed across a full warp with shuffles and added by its
 * first lane; a partial warp adds per thread.  `full` is true when the whole
 * warp is active, `lane0` in its first lane (HIP passes its own). */
void tk_cuda_flush(tk_emitter *e, tk_ir *a, const char *full, const char *lane0) {
    tk_ir *v = a->k[0];
    tk_emitter_indent(e);
    tk_emitter_printf(e, "if (%s) { ", full);
    tk_emitter_local(e, v->local);
    tk_emitter_printf(e, " = tk_wsum(");
    tk_emitter_local(e, v->local);
    tk_emitter_printf(e, "); if (%s && ", lane0);
    tk_emitter_local(e, v->local);
    tk_emitter_printf(e, " != 0) (void)");
    tk_emitter_expr(e, a);
    tk_emitter_printf(e, "; } else if (");
    tk_emitter_local(e, v->local);
    tk_emitter_printf(e, " != 0) (void)");
    tk_emitter_expr(e, a);
    tk_emitter_printf(e, ";\n");
}

static void cu_flush(tk_emitter *e, tk_ir *a, int all_reach) {
    (void)all_reach; /* a partial warp is found at run time */
    tk_cuda_flush(e, a, "__activemask() == 0xffffffffu", "(threadIdx.x & 31u) == 0");
}

void tk_cu_trailer(tk_emitter *e) { tk_emitter_printf(e, " block=%d", CU_BLOCK); }

static const tk_grid cu_grid = {
    .tag = "tack-cuda",
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
    .flush = cu_flush,
    .trailer = tk_cu_trailer,
};

static void cu_kernel(tk_emitter *e, tk_buf *out) { tk_grid_kernel(e, out, &cu_grid); }

const char *const tk_cuda_specials[4] = { "__int_as_float(0x7fc00000)", "__longlong_as_double(0x7ff8000000000000LL)",
                                            "__int_as_float(0x7f800000)",
                                            "__longlong_as_double(0x7ff0000000000000LL)" };

const tk_dialect tk_dialect_cuda = {
    .prelude = cu_prelude,
    .ctype = tk_cu_ctype,
    .storage_type = tk_cu_storage,
    .math = tk_cu_math,
    .export_attr = "extern \"C\" __global__",
    .func_qual = "static __device__",
    .cxx_literals = 1,
    .float_specials = tk_cuda_specials,
    .barrier = "__syncthreads();",
    .shared_qual = "__shared__ ",
    .kernel = cu_kernel,
};
