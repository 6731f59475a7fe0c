/*
 * dialect_opencl.c -- the "opencl" dialect: OpenCL C 1.2, for any OpenCL
 * device and, compiled to SPIR-V by Intel's compiler, for Level Zero.
 *
 * Expressions and statements come out of emit.c as for the CPU: OpenCL C
 * is C99 with address spaces, so the prelude typedefs the <stdint.h> names
 * (int64_t is OpenCL's long) and the emitter's output stands as it is.
 * What differs is supplied here:
 *
 *   - address spaces: an array is a `__global` pointer (the storage types
 *     carry the qualifier), and so is the error record a function is handed;
 *   - the layout on a grid (layout_grid.c) with OpenCL's spelling: each
 *     phase a `__kernel` whose parameters are the error record, the frame
 *     buffer, the program id and then, per kernel parameter, the buffer and
 *     its shape (one `long` a dimension) or the scalar's 8 bytes as a
 *     `ulong` -- the convention opencl_launch.c packs; an array that arrived
 *     as a strided view also gets its element strides (a `long` an axis)
 *     and the element offset of element (0, ..., 0) from the buffer, a
 *     `long` the phase adds to the pointer first: a cl_mem is a handle the
 *     host cannot offset, so a view starting inside one (a[::-1], m[:, 3])
 *     is the buffer and that offset;
 *   - atomics: OpenCL 1.2 has add/sub/min/max/xchg/and/or/xor/cmpxchg for
 *     32-bit integers and, with the cl_khr_int64 extensions, 64-bit ones;
 *     float add/sub/min/max and every operation on 8/16-bit integers are
 *     compare-and-swap loops (the latter on the enclosing 32-bit word), a
 *     float's exchange and compare-and-swap those of its bits.  The 64-bit
 *     helpers and the extensions' pragmas are written only for a kernel
 *     with a 64-bit atomic (tk_cc.atomic_dts), so a device without the
 *     extensions builds every other kernel;
 *   - math by OpenCL's overloaded built-ins (sqrt serves float and double);
 *   - print as printf, one call per item, string items in the format itself
 *     (OpenCL's printf takes %s only for literal strings), complex numbers
 *     as Python's repr; the print helpers are always inlined (PoCL 3.1 read
 *     a kernel's arguments wrong when a called function holding printf
 *     calls was called twice: a bogus IndexError);
 *   - a privatized sum (privatize.c: `total[0] += x[i]`) is summed across
 *     the sub-group first where the device has sub-groups (cl_khr_subgroups,
 *     or OpenCL 3.0's __opencl_c_subgroups: Intel's GPUs, Level Zero) and
 *     the loop's body cannot fail (then every lane reaches the flush, which
 *     a sub-group reduction needs), so one compare-and-swap loop per
 *     sub-group adds it, not one per work-item; elsewhere (PoCL 3.1 has no
 *     sub-groups) each work-item adds its own;
 *   - no contraction of a * b + c into a fused multiply-add (OpenCL's
 *     default allows it), so results round as on the CPU and in NumPy;
 *   - double precision only where the kernel uses it: a kernel that needs
 *     f64 enables cl_khr_fp64 and says fp64=1 in its trailer, and the
 *     launcher refuses it on a device without fp64 (CompileError); one that
 *     does not never names `double`, so it builds on such devices (Intel's
 *     DG2) as it is.
 *
 * Checks write the device's error record {failed, site, prog, a, b} with
 * atomic_cmpxchg (first failure wins); the launcher reads it at the next
 * synchronization, as on CUDA.
 */
#include <string.h>

#include "compiler/grid/grid.h"

static const char *cl_ctype(tack_dtype dt) { return tk_dialect_c.ctype(dt); }

static const char *cl_storage(tack_dtype dt) {
    switch (dt) {
    case TACK_BOOL: return "__global uint8_t";
    case TACK_I8: return "__global int8_t";
    case TACK_I16: return "__global int16_t";
    case TACK_I32: return "__global int32_t";
    case TACK_I64: return "__global int64_t";
    case TACK_U8: return "__global uint8_t";
    case TACK_U16: return "__global uint16_t";
    case TACK_U32: return "__global uint32_t";
    case TACK_U64: return "__global uint64_t";
    case TACK_F16: return "__global uint16_t";
    case TACK_F32: return "__global float";
    case TACK_F64: return "__global double";
    case TACK_VEC2: return "__global tk_vec2";
    case TACK_VEC3: return "__global tk_vec3";
    case TACK_VEC4: return "__global tk_vec4";
    case TACK_VEC2D: return "__global tk_vec2d";
    case TACK_VEC3D: return "__global tk_vec3d";
    case TACK_VEC4D: return "__global tk_vec4d";
    case TACK_VEC2I: return "__global tk_vec2i";
    case TACK_VEC3I: return "__global tk_vec3i";
    case TACK_VEC4I: return "__global tk_vec4i";
    case TACK_MAT22: return "__global tk_mat22";
    case TACK_MAT33: return "__global tk_mat33";
    case TACK_MAT44: return "__global tk_mat44";
    case TACK_MAT22D: return "__global tk_mat22d";
    case TACK_MAT33D: return "__global tk_mat33d";
    case TACK_MAT44D: return "__global tk_mat44d";
    case TACK_C64: return "__global tk_c64";
    case TACK_C128: return "__global tk_c128";
    case TACK_QUAT: return "__global tk_quat";
    case TACK_QUATD: return "__global tk_quatd";
    case TACK_TRANSFORM: return "__global tk_xform";
    case TACK_TRANSFORMD: return "__global tk_xformd";
    case TACK_BF16: return "__global uint16_t";
    default: return "__global void";
    }
}

/* Math by the C library's double names, which OpenCL overloads for float. */
static const char *cl_math(int m, tack_dtype dt) {
    static const char *names[M_COUNT] = {
#define TK_MATH(id, name, nargs, result, libm_f64, libm_f32, ulps_f32, ulps_f64) [id] = libm_f64,
#include "compiler/intrinsics.def"
    };
    if ((unsigned)m >= M_COUNT || !names[m]) return "?";
    if (m == M_RSQRT) return "rsqrt"; /* OpenCL C's own */
    const char *h = tk_math_helper(m, dt); /* a row without a C library function: the prelude's */
    return h ? h : names[m];
}

/* ------------------------------------------------------------ double precision */
static int ty_f64(tk_type t) {
    if (t.kind != TY_VALUE && t.kind != TY_ARRAY) return 0;
    return dt_scalar((tack_dtype)t.dt) == TACK_F64 || t.dt == TACK_C128;
}

static int ir_f64(const tk_ir *x) {
    if (!x) return 0;
    if (ty_f64(x->ty) || ty_f64(x->aux_ty)) return 1;
    for (int i = 0; i < x->n; i++)
        if (ir_f64(x->k[i])) return 1;
    return 0;
}

/* Whether the kernel needs double precision anywhere: a value, an array, a
 * scalar argument carried as a double, or an operation typed f64. */
static int uses_f64(const tk_cc *C) {
    for (int p = 0; p < C->nargs; p++)
        if ((dt_scalar(C->args[p].dtype) == TACK_F64 && (C->args[p].is_array || !tk_param_f32(C, p))) ||
            (C->args[p].dtype == TACK_C128 && (C->args[p].is_array || !tk_param_f32(C, p))))
            return 1;
    for (int s = 0; s < C->nspecs; s++) {
        const tk_spec *S = C->specs[s];
        for (int i = 0; i < S->nlocals; i++)
            if (ty_f64(S->locals[i].ty)) return 1;
        for (int p = 0; p < S->nparams; p++)
            if (ty_f64(S->ptypes[p])) return 1;
        if (ty_f64(S->ret) || ir_f64(S->body)) return 1;
    }
    return 0;
}

/* ------------------------------------------------------------ the prelude */
static const char PRELUDE_HEAD[] =
    "typedef char int8_t; typedef short int16_t; typedef int int32_t; typedef long int64_t;\n"
    "typedef uchar uint8_t; typedef ushort uint16_t; typedef uint uint32_t; typedef ulong uint64_t;\n"
    "typedef bool tk_bool;\n"
    "#ifdef TK_FP64\n"
    "typedef double tk_wide;\n"
    "#else\n"
    "typedef float tk_wide;\n"
    "#endif\n"
    "/* The device's error record; mirrored by opencl_launch.c. */\n"
    "typedef struct tk_ctx { int failed; int site; ulong prog; long a, b; } tk_ctx;\n"
    "typedef struct tk_abi { ulong prog; int *fl; } tk_abi; /* fl: the thread's failure flag */\n"
    "#define TK_FAILED(c) (*(volatile __global int *)&(c)->failed)\n"
    "#define TK_CALL_FAILED(c, a) (*(a)->fl)\n"
    "#define tk_wrap(i, s) ((i) < 0 ? (i) + (s) : (i))\n"
    "static void tk_fail(__global tk_ctx *c, ulong prog, int site, long a, long b) {\n"
    "    if (atomic_cmpxchg((volatile __global int *)&c->failed, 0, 1) == 0) {\n"
    "        c->site = site; c->prog = prog; c->a = a; c->b = b; mem_fence(CLK_GLOBAL_MEM_FENCE);\n"
    "    }\n"
    "}\n"
    "#define TK_FAIL(c, s, a, b) (*abi->fl = 1, tk_fail(c, abi->prog, s, a, b))\n"
    "static inline __attribute__((always_inline)) void tk_print_float(tk_wide v, int f32) {\n"
    "    if (v != v) printf(\"nan\");\n"
    "    else if (v - v != 0) { if (v < 0) printf(\"-inf\"); else printf(\"inf\"); }\n"
    "    else if (v == (tk_wide)(long)v && v < 1e15f && v > -1e15f) printf(\"%ld.0\", (long)v);\n"
    "    else if (f32) printf(\"%.9g\", v);\n"
    "    else printf(\"%.17g\", v);\n"
    "}\n"
    "/* A complex as Python's repr writes it: (re+imj), or imj when re is +0. */\n"
    "static inline __attribute__((always_inline)) void tk_print_part(tk_wide v, int f32, int plus) {\n"
    "    if (v != v) { if (plus) printf(\"+nan\"); else printf(\"nan\"); }\n"
    "    else if (v - v != 0) { if (v < 0) printf(\"-inf\"); else if (plus) printf(\"+inf\"); else printf(\"inf\"); }\n"
    "    else {\n"
    "        if (plus && !signbit(v)) printf(\"+\");\n"
    "        if (v == 0 && signbit(v)) printf(\"-0\");\n"
    "        else if (v == (tk_wide)(long)v && v < 1e16f && v > -1e16f) printf(\"%ld\", (long)v);\n"
    "        else if (f32) printf(\"%.9g\", v);\n"
    "        else printf(\"%.17g\", v);\n"
    "    }\n"
    "}\n"
    "static inline __attribute__((always_inline)) void tk_print_complex(tk_wide re, tk_wide im, int f32) {\n"
    "    if (re == 0 && !signbit(re)) { tk_print_part(im, f32, 0); printf(\"j\"); return; }\n"
    "    printf(\"(\"); tk_print_part(re, f32, 0); tk_print_part(im, f32, 1); printf(\"j)\");\n"
    "}\n";

/* The helpers every dialect shares (prelude.c), spelled for OpenCL C: the
 * conversions take tk_wide, float64 ones only where the kernel enables fp64. */
static const tk_prelude_style CL_STYLE = {
    .qual = "static",
    .wide = "tk_wide",
    .wide_cast = "(tk_wide)",
    .int_suffix = "L",
    .math = cl_math,
    .f64 = TK_PRELUDE_F64_IFDEF,
    .f32_note = "/* f32 in f32 arithmetic, as NumPy does: a quotient rounded to f32 before its floor */\n",
};

/* (no variable may be called "half" here: it is a type in OpenCL C) */
static const char PRELUDE_F16[] =
    "static float tk_h2f(uint16_t h) {\n"
    "    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023, u;\n"
    "    if (e == 0) {\n"
    "        if (m == 0) u = s;\n"
    "        else { e = 113; while (!(m & 1024)) { m <<= 1; e--; } m &= 1023; u = s | (e << 23) | (m << 13); }\n"
    "    } else if (e == 31) u = s | 0x7f800000u | (m << 13);\n"
    "    else u = s | ((e + 112) << 23) | (m << 13);\n"
    "    return as_float(u);\n"
    "}\n"
    "static uint16_t tk_f2h(float f) {\n"
    "    uint32_t u = as_uint(f);\n"
    "    uint32_t s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;\n"
    "    if (a >= 0x7f800000u) return (uint16_t)(s | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0));\n"
    "    if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u);\n"
    "    if (a < 0x38800000u) {\n"
    "        if (a < 0x33000000u) return (uint16_t)s;\n"
    "        uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, sh = 126 - e;\n"
    "        uint32_t r = m >> sh, rem = m & ((1u << sh) - 1), hw = 1u << (sh - 1);\n"
    "        if (rem > hw || (rem == hw && (r & 1))) r++;\n"
    "        return (uint16_t)(s | r);\n"
    "    }\n"
    "    uint32_t r = ((a - 0x38000000u) >> 13), rem = a & 0x1fffu;\n"
    "    if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) r++;\n"
    "    return (uint16_t)(s | r);\n"
    "}\n"
    "#ifdef TK_FP64\n" /* f64 -> f16 rounded once: through f32 rounding to odd (dialect_c.c) */
    "static uint16_t tk_d2h(double d) {\n"
    "    float f = (float)d; uint u = as_uint(f);\n"
    "    if (f == f && (double)f != d && !(u & 1)) u += (((double)f < d) == (d > 0)) ? 1u : 0xffffffffu;\n"
    "    return tk_f2h(as_float(u));\n"
    "}\n"
    "#endif\n";

/* bfloat16 storage as its bits (dialect_c.c says how a store rounds) */
static const char PRELUDE_BF16[] =
    "static float tk_b2f(uint16_t h) { return as_float((uint)h << 16); }\n"
    "static uint16_t tk_f2b(float f) {\n"
    "    uint u = as_uint(f);\n"
    "    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(((u >> 16) & 0x8000u) | 0x7fc0u);\n"
    "    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "}\n"
    "#ifdef TK_FP64\n"
    "static uint16_t tk_d2b(double d) {\n"
    "    float f = (float)d; uint u = as_uint(f);\n"
    "    if (f == f && (double)f != d && !(u & 1)) u += (((double)f < d) == (d > 0)) ? 1u : 0xffffffffu;\n"
    "    return tk_f2b(as_float(u));\n"
    "}\n"
    "#endif\n";

static const char PRELUDE_ATOMIC[] =
    "/* 8 and 16-bit integers: compare-and-swap on the enclosing aligned word (op: add, sub, min, max, exch,\n"
    " * and, or, xor, cas). */\n"
    "#define TK_ATOMIC_SMALL(T, U) \\\n"
    "static T tk_atomic_rmw_##T(__global T *p, T v, int op, T e) { \\\n"
    "    __global uchar *b = (__global uchar *)p; const uint off = (uint)((size_t)b & 3); \\\n"
    "    volatile __global uint *w = (volatile __global uint *)(b - off); \\\n"
    "    const uint sh = off * 8u, mask = (uint)(U)~(U)0 << sh; uint o = *w; \\\n"
    "    for (;;) { T cur = (T)(U)((o & mask) >> sh), nv; \\\n"
    "        if (op == 0) nv = (T)(U)((uint)(U)cur + (uint)(U)v); \\\n"
    "        else if (op == 1) nv = (T)(U)((uint)(U)cur - (uint)(U)v); \\\n"
    "        else if (op == 2) nv = v < cur ? v : cur; else if (op == 3) nv = v > cur ? v : cur; \\\n"
    "        else if (op == 4) nv = v; else if (op == 5) nv = (T)(cur & v); else if (op == 6) nv = (T)(cur | v); \\\n"
    "        else if (op == 7) nv = (T)(cur ^ v); else nv = cur == e ? v : cur; \\\n"
    "        if (nv == cur && op >= 2) return cur; \\\n"
    "        uint n = (o & ~mask) | (((uint)(U)nv << sh) & mask), prev = atomic_cmpxchg(w, o, n); \\\n"
    "        if (prev == o) return cur; o = prev; } } \\\n"
    "static T tk_atomic_add_##T(__global T *p, T v) { return tk_atomic_rmw_##T(p, v, 0, 0); } \\\n"
    "static T tk_atomic_sub_##T(__global T *p, T v) { return tk_atomic_rmw_##T(p, v, 1, 0); } \\\n"
    "static T tk_atomic_min_##T(__global T *p, T v) { return tk_atomic_rmw_##T(p, v, 2, 0); } \\\n"
    "static T tk_atomic_max_##T(__global T *p, T v) { return tk_atomic_rmw_##T(p, v, 3, 0); } \\\n"
    "static T tk_atomic_exch_##T(__global T *p, T v) { return tk_atomic_rmw_##T(p, v, 4, 0); } \\\n"
    "static T tk_atomic_and_##T(__global T *p, T v) { return tk_atomic_rmw_##T(p, v, 5, 0); } \\\n"
    "static T tk_atomic_or_##T(__global T *p, T v) { return tk_atomic_rmw_##T(p, v, 6, 0); } \\\n"
    "static T tk_atomic_xor_##T(__global T *p, T v) { return tk_atomic_rmw_##T(p, v, 7, 0); } \\\n"
    "static T tk_atomic_cas_##T(__global T *p, T e, T v) { return tk_atomic_rmw_##T(p, v, 8, e); }\n"
    "TK_ATOMIC_SMALL(int8_t, uint8_t) TK_ATOMIC_SMALL(uint8_t, uint8_t)\n"
    "TK_ATOMIC_SMALL(int16_t, uint16_t) TK_ATOMIC_SMALL(uint16_t, uint16_t)\n"
    "/* Integers of 32 bits (P atomic: OpenCL 1.2's built-ins) and, where a kernel has them, of 64 (P atom). */\n"
    "#define TK_ATOMIC_NATIVE(T, P) \\\n"
    "static T tk_atomic_add_##T(__global T *p, T v) { return P##_add((volatile __global T *)p, v); } \\\n"
    "static T tk_atomic_sub_##T(__global T *p, T v) { return P##_sub((volatile __global T *)p, v); } \\\n"
    "static T tk_atomic_min_##T(__global T *p, T v) { return P##_min((volatile __global T *)p, v); } \\\n"
    "static T tk_atomic_max_##T(__global T *p, T v) { return P##_max((volatile __global T *)p, v); } \\\n"
    "static T tk_atomic_exch_##T(__global T *p, T v) { return P##_xchg((volatile __global T *)p, v); } \\\n"
    "static T tk_atomic_and_##T(__global T *p, T v) { return P##_and((volatile __global T *)p, v); } \\\n"
    "static T tk_atomic_or_##T(__global T *p, T v) { return P##_or((volatile __global T *)p, v); } \\\n"
    "static T tk_atomic_xor_##T(__global T *p, T v) { return P##_xor((volatile __global T *)p, v); } \\\n"
    "static T tk_atomic_cas_##T(__global T *p, T e, T v) { return P##_cmpxchg((volatile __global T *)p, e, v); }\n"
    "TK_ATOMIC_NATIVE(int32_t, atomic)\n"
    "TK_ATOMIC_NATIVE(uint32_t, atomic)\n"
    "/* Floats: compare-and-swap loops on the bits (NaN leaves a min or max alone); exchange and\n"
    " * compare-and-swap of the bits (-0.0 is not 0.0; a NaN matches the same NaN). */\n"
    "#define TK_ATOMIC_FLT(T, U, P, TO, FROM) \\\n"
    "static T tk_atomic_rmw_##T(__global T *p, T v, int op) { \\\n"
    "    volatile __global U *q = (volatile __global U *)p; U o = *q; \\\n"
    "    for (;;) { T f = FROM(o), g = op == 0 ? f + v : op == 1 ? f - v : op == 2 ? (v < f ? v : f) : (v > f ? v : "
    "f); \\\n"
    "        if (op >= 2 && g == f) return f; \\\n"
    "        U prev = P##_cmpxchg(q, o, TO(g)); if (prev == o) return f; o = prev; } } \\\n"
    "static T tk_atomic_add_##T(__global T *p, T v) { return tk_atomic_rmw_##T(p, v, 0); } \\\n"
    "static T tk_atomic_sub_##T(__global T *p, T v) { return tk_atomic_rmw_##T(p, v, 1); } \\\n"
    "static T tk_atomic_min_##T(__global T *p, T v) { return tk_atomic_rmw_##T(p, v, 2); } \\\n"
    "static T tk_atomic_max_##T(__global T *p, T v) { return tk_atomic_rmw_##T(p, v, 3); } \\\n"
    "static T tk_atomic_exch_##T(__global T *p, T v) { return FROM(P##_xchg((volatile __global U *)p, TO(v))); } \\\n"
    "static T tk_atomic_cas_##T(__global T *p, T e, T v) { \\\n"
    "    return FROM(P##_cmpxchg((volatile __global U *)p, TO(e), TO(v))); }\n"
    "TK_ATOMIC_FLT(float, uint, atomic, as_uint, as_float)\n";

/* 64-bit atomics, only in a kernel that updates a 64-bit element atomically:
 * a device without cl_khr_int64_base_atomics still builds the rest. */
static const char PRELUDE_ATOMIC64[] =
    "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"
    "#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable\n"
    "TK_ATOMIC_NATIVE(int64_t, atom)\n"
    "TK_ATOMIC_NATIVE(uint64_t, atom)\n"
    "#ifdef TK_FP64\n"
    "TK_ATOMIC_FLT(double, ulong, atom, as_ulong, as_double)\n"
    "#endif\n";

/* Whether the kernel updates a 64-bit element atomically (a complex128's parts are doubles). */
static int atomics64(const tk_cc *C) {
    const uint64_t wide = (uint64_t)1 << TACK_I64 | (uint64_t)1 << TACK_U64 | (uint64_t)1 << TACK_F64 |
                          (uint64_t)1 << TACK_C128;
    return (C->atomic_dts & wide) != 0;
}

static const char PRELUDE_VEC[] =
    "#define TK_VEC(N, T, LEN) \\\n"
    "typedef struct N { T v[LEN]; } N; \\\n"
    "static N tk_add_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = a.v[i] + b.v[i]; return r; } \\\n"
    "static N tk_sub_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = a.v[i] - b.v[i]; return r; } \\\n"
    "static N tk_mul_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = a.v[i] * b.v[i]; return r; } \\\n"
    "static N tk_div_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = a.v[i] / b.v[i]; return r; } \\\n"
    "static N tk_neg_##N(N a) { N r; for (int i = 0; i < LEN; i++) r.v[i] = -a.v[i]; return r; } \\\n"
    "static T tk_dot_##N(N a, N b) { T s = 0; for (int i = 0; i < LEN; i++) s += a.v[i] * b.v[i]; return s; }\n"
    "#define TK_VECI(N, LEN) \\\n"
    "typedef struct N { int32_t v[LEN]; } N; \\\n"
    "static N tk_add_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = (int32_t)((uint32_t)a.v[i] + "
    "(uint32_t)b.v[i]); return r; } \\\n"
    "static N tk_sub_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = (int32_t)((uint32_t)a.v[i] - "
    "(uint32_t)b.v[i]); return r; } \\\n"
    "static N tk_mul_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = (int32_t)((uint32_t)a.v[i] * "
    "(uint32_t)b.v[i]); return r; } \\\n"
    "static N tk_neg_##N(N a) { N r; for (int i = 0; i < LEN; i++) r.v[i] = (int32_t)(0u - (uint32_t)a.v[i]); return "
    "r; } \\\n"
    "static int32_t tk_dot_##N(N a, N b) { uint32_t s = 0; for (int i = 0; i < LEN; i++) s += (uint32_t)a.v[i] * "
    "(uint32_t)b.v[i]; return (int32_t)s; }\n"
    "#define TK_VECF(N, T, LEN) TK_VEC(N, T, LEN) \\\n"
    "static T tk_length_##N(N a) { return sqrt(tk_dot_##N(a, a)); } \\\n"
    "static N tk_normalize_##N(N a) { T l = tk_length_##N(a); N r; for (int i = 0; i < LEN; i++) r.v[i] = l != 0 ? "
    "a.v[i] / l : 0; return r; }\n"
    "#define TK_CROSS(N) static N tk_cross_##N(N a, N b) { N r; \\\n"
    "    r.v[0] = a.v[1] * b.v[2] - a.v[2] * b.v[1]; r.v[1] = a.v[2] * b.v[0] - a.v[0] * b.v[2]; \\\n"
    "    r.v[2] = a.v[0] * b.v[1] - a.v[1] * b.v[0]; return r; }\n"
    "#define TK_MAT(M, V, T, R) \\\n"
    "typedef struct M { T m[R][R]; } M; \\\n"
    "static M tk_add_##M(M a, M b) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) r.m[i][j] = "
    "a.m[i][j] + b.m[i][j]; return r; } \\\n"
    "static M tk_sub_##M(M a, M b) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) r.m[i][j] = "
    "a.m[i][j] - b.m[i][j]; return r; } \\\n"
    "static M tk_mul_##M(M a, M b) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) r.m[i][j] = "
    "a.m[i][j] * b.m[i][j]; return r; } \\\n"
    "static M tk_div_##M(M a, M b) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) r.m[i][j] = "
    "a.m[i][j] / b.m[i][j]; return r; } \\\n"
    "static M tk_neg_##M(M a) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) r.m[i][j] = -a.m[i][j]; "
    "return r; } \\\n"
    "static V tk_mm_##M##_##V(M a, V b) { V r; for (int i = 0; i < R; i++) { T s = 0; for (int j = 0; j < R; j++) s += "
    "a.m[i][j] * b.v[j]; r.v[i] = s; } return r; } \\\n"
    "static M tk_mm_##M##_##M(M a, M b) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) { T s = 0; for "
    "(int k = 0; k < R; k++) s += a.m[i][k] * b.m[k][j]; r.m[i][j] = s; } return r; }\n"
    "TK_VECF(tk_vec2, float, 2) TK_VECF(tk_vec3, float, 3) TK_VECF(tk_vec4, float, 4)\n"
    "TK_VECI(tk_vec2i, 2) TK_VECI(tk_vec3i, 3) TK_VECI(tk_vec4i, 4)\n"
    "TK_CROSS(tk_vec3)\n"
    "static tk_vec3i tk_cross_tk_vec3i(tk_vec3i a, tk_vec3i b) { tk_vec3i r; uint32_t x[3], y[3]; for (int i = 0; i < "
    "3; i++) { x[i] = (uint32_t)a.v[i]; y[i] = (uint32_t)b.v[i]; }\n"
    "    r.v[0] = (int32_t)(x[1] * y[2] - x[2] * y[1]); r.v[1] = (int32_t)(x[2] * y[0] - x[0] * y[2]); r.v[2] = "
    "(int32_t)(x[0] * y[1] - x[1] * y[0]); return r; }\n"
    "TK_MAT(tk_mat22, tk_vec2, float, 2) TK_MAT(tk_mat33, tk_vec3, float, 3) TK_MAT(tk_mat44, tk_vec4, float, 4)\n"
    "#ifdef TK_FP64\n"
    "TK_VECF(tk_vec2d, double, 2) TK_VECF(tk_vec3d, double, 3) TK_VECF(tk_vec4d, double, 4)\n"
    "TK_CROSS(tk_vec3d)\n"
    "TK_MAT(tk_mat22d, tk_vec2d, double, 2) TK_MAT(tk_mat33d, tk_vec3d, double, 3) TK_MAT(tk_mat44d, tk_vec4d, double, "
    "4)\n"
    "#endif\n";

static int kernel_fp64(const tk_cc *C) { return uses_f64(C); }

static void cl_prelude(tk_cc *C, tk_buf *b) {
    if (kernel_fp64(C)) tk_puts(b, "#define TK_FP64 1\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
    if (C->uses_atomic) tk_puts(b, "#ifdef cl_khr_subgroups\n#pragma OPENCL EXTENSION cl_khr_subgroups : enable\n#endif\n");
    /* IEEE arithmetic as on the CPU and NumPy: OpenCL lets the compiler fuse
     * a * b + c into one rounding unless told not to */
    if (!C->opts.fast_math) tk_puts(b, "#pragma OPENCL FP_CONTRACT OFF\n");
    tk_puts(b, PRELUDE_HEAD);
    tk_prelude_helpers(b, &CL_STYLE);
    tk_prelude_math(C, b, &CL_STYLE);
    if (C->uses_f16) tk_puts(b, PRELUDE_F16);
    if (C->uses_bf16) tk_puts(b, PRELUDE_BF16);
    if (C->uses_atomic) tk_puts(b, PRELUDE_ATOMIC);
    if (C->uses_atomic && atomics64(C)) tk_puts(b, PRELUDE_ATOMIC64);
    if (C->uses_vec) tk_puts(b, PRELUDE_VEC);
    if (C->uses_atomic && C->uses_vec) tk_vec_atomic_prelude(C, b, "static", "__global", kernel_fp64(C));
    tk_prelude_linalg(C, b, &CL_STYLE);
    if (C->uses_complex) tk_complex_prelude(C, b, "static", "__global", kernel_fp64(C));
    if (C->uses_quat) tk_quat_prelude(C, b, "static", kernel_fp64(C));
}

/* ------------------------------------------------------------ print */
/* One printf per item: strings as literal text of the format, bools as the
 * words, integers as 64-bit, floats through tk_print_float, complex numbers
 * through tk_print_complex (Python's repr: "(1+2j)", "-1j"). */
static void cl_print(tk_emitter *e, tk_ir *s) {
    tk_emitter_indent(e);
    tk_emitter_printf(e, "{\n");
    tk_emitter_nest(e, 1);
    for (int i = 0; i < s->n; i++) {
        tk_ir *v = s->k[i];
        tk_emitter_indent(e);
        if (i) tk_emitter_printf(e, "printf(\" \"); ");
        if (v->str) {
            tk_emitter_printf(e, "printf(\"");
            for (const unsigned char *c = (const unsigned char *)v->str; *c; c++) {
                if (*c == '%') tk_emitter_printf(e, "%%%%");
                else if (*c == '"' || *c == '\\' || *c == '?') tk_emitter_printf(e, "\\%c", *c);
                else if (*c < 32 || *c >= 127) tk_emitter_printf(e, "\\%03o", *c);
                else tk_emitter_printf(e, "%c", *c);
            }
            tk_emitter_printf(e, "\");\n");
            continue;
        }
        int dt = v->ty.dt;
        if (ty_is_complex(v->ty)) {
            tk_emitter_printf(e, "{ %s tk_pz = ", cl_ctype((tack_dtype)dt));
            tk_emitter_expr(e, v);
            tk_emitter_printf(e, "; tk_print_complex((tk_wide)tk_pz.v[0], (tk_wide)tk_pz.v[1], %d); }\n",
                              dt == TACK_C64);
        } else if (dt == TACK_BOOL) {
            tk_emitter_printf(e, "if (");
            tk_emitter_expr(e, v);
            tk_emitter_printf(e, ") printf(\"True\"); else printf(\"False\");\n");
        } else if (dt_kind((tack_dtype)dt) == TACK_KIND_FLOAT) {
            tk_emitter_printf(e, "tk_print_float((tk_wide)(");
            tk_emitter_expr(e, v);
            tk_emitter_printf(e, "), %d);\n", dt != TACK_F64);
        } else if (dt_kind((tack_dtype)dt) == TACK_KIND_INT) {
            tk_emitter_printf(e, "printf(\"%%ld\", (long)(");
            tk_emitter_expr(e, v);
            tk_emitter_printf(e, "));\n");
        } else {
            tk_emitter_printf(e, "printf(\"%%lu\", (ulong)(");
            tk_emitter_expr(e, v);
            tk_emitter_printf(e, "));\n");
        }
    }
    tk_emitter_indent(e);
    tk_emitter_printf(e, "printf(\"\\n\");\n");
    tk_emitter_nest(e, -1);
    tk_emitter_indent(e);
    tk_emitter_printf(e, "}\n");
}

/* ------------------------------------------------------------ the layout */
static void cl_phase_open(tk_emitter *e, const tk_spec *K, int k, int parallel) {
    (void)parallel;
    tk_emitter_printf(e, "__kernel void tk_phase%d(__global tk_ctx *ctx, __global tk_fbuf *FB, ulong prog", k);
    for (int p = 0; p < K->nparams; p++) {
        tk_type t = K->ptypes[p];
        if (t.kind == TY_ARRAY) {
            tk_emitter_printf(e, ", %s *%sa%d", cl_storage((tack_dtype)t.dt), tk_emitter_restrict(e, p, "restrict "), p);
            for (int d = 0; d < t.ndim; d++) tk_emitter_printf(e, ", long a%d_s%d", p, d);
            if (t.strided) { /* a strided view: its element strides and the offset of its first element */
                for (int d = 0; d < t.ndim; d++) tk_emitter_printf(e, ", long a%d_t%d", p, d);
                tk_emitter_printf(e, ", long a%d_o", p);
            }
        } else {
            tk_emitter_printf(e, ", ulong s%d", p);
            if (dt_kind(tk_emitter_cc(e)->args[p].dtype) == TACK_KIND_COMPLEX) /* (re, im): two slots */
                tk_emitter_printf(e, ", ulong s%di", p);
        }
    }
    tk_emitter_printf(e, ") {\n");
}

/* A strided view's pointer moves to its first element; nothing for C order's arrays. */
static void cl_phase_args(tk_emitter *e, const tk_spec *K) {
    for (int p = 0; p < K->nparams; p++) {
        if (K->ptypes[p].kind != TY_ARRAY || !K->ptypes[p].strided) continue;
        tk_emitter_indent(e);
        tk_emitter_printf(e, "a%d += a%d_o;\n", p, p);
    }
}

static void cl_scalar(tk_emitter *e, int p, int im, const char *mem) {
    const char *s = im ? "i" : "";
    if (!strcmp(mem, "f32")) tk_emitter_printf(e, "as_float((uint)s%d%s)", p, s);
    else if (mem[0] == 'f') tk_emitter_printf(e, "as_double(s%d%s)", p, s);
    else if (mem[0] == 'i') tk_emitter_printf(e, "((long)s%d%s)", p, s);
    else tk_emitter_printf(e, "s%d%s", p, s);
}

/* A privatized sum's flush (see the head comment): the sub-group's total,
 * added by its first lane, for the element types sub_group_reduce_add
 * takes; a work-item's own sum otherwise, and on devices without sub-groups. */
static void cl_flush(tk_emitter *e, tk_ir *a, int all_reach) {
    tk_ir *v = a->k[0];
    int dt = v->ty.dt;
    int sg = all_reach && (dt == TACK_I32 || dt == TACK_U32 || dt == TACK_I64 || dt == TACK_U64 ||
                           dt == TACK_F32 || dt == TACK_F64);
    if (sg) {
        tk_emitter_printf(e, "#if defined(cl_khr_subgroups) || defined(__opencl_c_subgroups)\n");
        tk_emitter_indent(e);
        tk_emitter_local(e, v->local);
        tk_emitter_printf(e, " = sub_group_reduce_add(");
        tk_emitter_local(e, v->local);
        tk_emitter_printf(e, ");\n");
        tk_emitter_indent(e);
        tk_emitter_printf(e, "if (get_sub_group_local_id() == 0 && ");
        tk_emitter_local(e, v->local);
        tk_emitter_printf(e, " != 0) (void)");
        tk_emitter_expr(e, a);
        tk_emitter_printf(e, ";\n#else\n");
    }
    tk_emitter_indent(e);
    tk_emitter_printf(e, "if (");
    tk_emitter_local(e, v->local);
    tk_emitter_printf(e, " != 0) (void)");
    tk_emitter_expr(e, a);
    tk_emitter_printf(e, ";\n");
    if (sg) tk_emitter_printf(e, "#endif\n");
}

static void cl_trailer(tk_emitter *e) { tk_emitter_printf(e, " fp64=%d", kernel_fp64(tk_emitter_cc(e))); }

static const tk_grid cl_grid = {
    .tag = "tack-opencl",
    .phase_open = cl_phase_open,
    .phase_args = cl_phase_args,
    .prog = "prog",
    .scalar = cl_scalar,
    .first_thread = "get_global_id(0) == 0",
    .thread_index = "(uint64_t)get_global_id(0)",
    .thread_stride = "(uint64_t)get_global_size(0)",
    .group_index = "get_group_id(0)",
    .group_count = "get_num_groups(0)",
    .local_index = "get_local_id(0)",
    .flush = cl_flush,
    .trailer = cl_trailer,
};

static void cl_kernel(tk_emitter *e, tk_buf *out) { tk_grid_kernel(e, out, &cl_grid); }

static const char *const cl_specials[4] = { "NAN", "as_double(0x7ff8000000000000UL)", "INFINITY",
                                            "as_double(0x7ff0000000000000UL)" };

const tk_dialect tk_dialect_opencl = {
    .prelude = cl_prelude,
    .ctype = cl_ctype,
    .storage_type = cl_storage,
    .math = cl_math,
    .export_attr = "__kernel",
    .ctx_param = "__global tk_ctx *ctx",
    .fail_fn = "TK_FAIL",
    .wide_float = "tk_wide",
    .print = cl_print,
    .func_qual = "static",
    .float_specials = cl_specials,
    .barrier = "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);",
    .shared_qual = "__local ",
    .kernel = cl_kernel,
};
