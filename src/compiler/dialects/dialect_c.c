/*
 * dialect_c.c -- the "c" dialect of the C-family emitter (CPU).
 *
 * A dialect is a table of what differs between C-like targets: the prelude
 * of types and helpers every generated file starts with, the spelling of
 * types and math functions, export attributes, and how parallel loops run.
 * The helpers here are the semantic core of the generated code -- Python's
 * floor division and modulo, wrapping integer power, saturating
 * float-to-int conversion, f16 storage, atomics as compare-and-swap loops
 * -- written once as static inline functions so the emitter only names
 * them.  The prelude includes no header at all: the fixed-width integer
 * types and their limits are spelled from the compiler's own predefined
 * macros (__INT64_TYPE__, __INT64_MAX__, ...; GCC since 4.5, clang, zig
 * cc), and math comes from the compiler's builtins, which keeps a cold
 * compile short -- <stdint.h> and the glibc headers it pulls in (features.h,
 * sys/cdefs.h, bits/types.h, ...) cost GCC about 7 ms of CPU a kernel, a
 * tenth of the median kernel's whole compile (docs/performance.md, "Compile
 * time").  A compiler without those macros gets <stdint.h> after all.
 *
 * Vector math: the C library's exp, log, tanh, ... are calls GCC cannot put
 * in SIMD lanes unless it is told a vector variant exists.  glibc's libmvec
 * has them (on x86-64: _ZGVdN8v_expf and its kin, within 4 ulps), and
 * <math.h> says so only under -ffast-math.  So the prelude says it itself,
 * with GCC's simd("notinbranch") attribute on the scalar declarations, when
 * the build asks for it (TK_VMATH, set by cpu_jit.c where libmvec is
 * there: the minor version of the glibc the process runs, 0 for off) and
 * the compiler is GCC on x86-64; clang gets -fveclib=libmvec on its command
 * line instead.  The functions are declared by the glibc release that added
 * their vector variants (2.22: exp, log, sin, cos, pow; 2.35: the rest, erf
 * ... atanh included) -- the release read at run time, by the process that
 * loads libmvec, since no header says it here.  docs/design/decisions.md,
 * "Vector math", has the why and the accuracy.
 *
 * The tk_argv / tk_ctx / tk_pv / tk_abi structs are not spelled here: the
 * build copies them from their one definition, src/runtime/cpu_abi.h, into
 * a string this prelude includes (cpu_abi_prelude.inc, written by
 * cmake/cpu_abi_prelude.cmake), so libtack and the code it generates read
 * one text.
 *
 * The layout of the kernel on the CPU's threads -- the frame struct, a
 * chunk function per parallel loop, the exported entry -- is the dialect's
 * kernel_decls and kernel hooks, in emit_cpu.c.
 */
#include <string.h>

#include "compiler/compiler.h"

static const char *c_ctype(tack_dtype dt) {
    switch (dt) {
    case TACK_BOOL: return "tk_bool";
    case TACK_I8: return "int8_t";
    case TACK_I16: return "int16_t";
    case TACK_I32: return "int32_t";
    case TACK_I64: return "int64_t";
    case TACK_U8: return "uint8_t";
    case TACK_U16: return "uint16_t";
    case TACK_U32: return "uint32_t";
    case TACK_U64: return "uint64_t";
    case TACK_F16: return "float";
    case TACK_F32: return "float";
    case TACK_F64: return "double";
    case TACK_VEC2: return "tk_vec2";
    case TACK_VEC3: return "tk_vec3";
    case TACK_VEC4: return "tk_vec4";
    case TACK_VEC2D: return "tk_vec2d";
    case TACK_VEC3D: return "tk_vec3d";
    case TACK_VEC4D: return "tk_vec4d";
    case TACK_VEC2I: return "tk_vec2i";
    case TACK_VEC3I: return "tk_vec3i";
    case TACK_VEC4I: return "tk_vec4i";
    case TACK_MAT22: return "tk_mat22";
    case TACK_MAT33: return "tk_mat33";
    case TACK_MAT44: return "tk_mat44";
    case TACK_MAT22D: return "tk_mat22d";
    case TACK_MAT33D: return "tk_mat33d";
    case TACK_MAT44D: return "tk_mat44d";
    case TACK_C64: return "tk_c64";
    case TACK_C128: return "tk_c128";
    case TACK_QUAT: return "tk_quat";
    case TACK_QUATD: return "tk_quatd";
    case TACK_TRANSFORM: return "tk_xform";
    case TACK_TRANSFORMD: return "tk_xformd";
    case TACK_BF16: return "float";
    default: return "void";
    }
}

static const char *c_storage(tack_dtype dt) {
    if (dt == TACK_BOOL) return "uint8_t";
    if (dt == TACK_F16 || dt == TACK_BF16) return "uint16_t";
    return c_ctype(dt);
}

/* Math functions by their C library names (intrinsics.def), as GCC builtins. */
static const char *c_math(int m, tack_dtype dt) {
    static const char *f64[M_COUNT] = {
#define TK_MATH(id, name, nargs, result, libm_f64, libm_f32, ulps_f32, ulps_f64) [id] = "__builtin_" libm_f64,
#include "compiler/intrinsics.def"
    };
    static const char *f32[M_COUNT] = {
#define TK_MATH(id, name, nargs, result, libm_f64, libm_f32, ulps_f32, ulps_f64) [id] = "__builtin_" libm_f32,
#include "compiler/intrinsics.def"
    };
    if ((unsigned)m >= M_COUNT) return "?";
    if (m == M_POW) return dt == TACK_F32 ? "tk_pow_f32" : "tk_pow_f64"; /* PRELUDE_POW */
    const char *h = tk_math_helper(m, dt); /* a row without a C library function: the prelude's */
    if (h) return h;
    const char *s = dt == TACK_F32 ? f32[m] : f64[m];
    return s ? s : "?";
}

#define TK_STRINGIFY_(x) #x
#define TK_STRINGIFY(x) TK_STRINGIFY_(x)

/* The fixed-width integer types as <stdint.h> defines them, from the
 * compiler's predefined macros (the essay above: the header is most of a
 * small kernel's parse time); <stdint.h> itself where a macro is missing. */
static const char PRELUDE_INTS[] =
    "#if defined(__INT8_TYPE__) && defined(__INT16_TYPE__) && defined(__INT32_TYPE__) && defined(__INT64_TYPE__) && \\\n"
    "    defined(__UINT8_TYPE__) && defined(__UINT16_TYPE__) && defined(__UINT32_TYPE__) && defined(__UINT64_TYPE__) && \\\n"
    "    defined(__INTPTR_TYPE__) && defined(__UINTPTR_TYPE__) && defined(__INT64_MAX__) && defined(__UINT64_MAX__) && \\\n"
    "    defined(__INTPTR_MAX__) && defined(__UINTPTR_MAX__) && defined(__SIZE_MAX__)\n"
    "typedef __INT8_TYPE__ int8_t; typedef __INT16_TYPE__ int16_t; typedef __INT32_TYPE__ int32_t; typedef __INT64_TYPE__ int64_t;\n"
    "typedef __UINT8_TYPE__ uint8_t; typedef __UINT16_TYPE__ uint16_t; typedef __UINT32_TYPE__ uint32_t; typedef __UINT64_TYPE__ uint64_t;\n"
    "typedef __INTPTR_TYPE__ intptr_t; typedef __UINTPTR_TYPE__ uintptr_t;\n"
    "#define INT8_MAX __INT8_MAX__\n#define INT16_MAX __INT16_MAX__\n#define INT32_MAX __INT32_MAX__\n#define INT64_MAX __INT64_MAX__\n"
    "#define INT8_MIN (-INT8_MAX - 1)\n#define INT16_MIN (-INT16_MAX - 1)\n#define INT32_MIN (-INT32_MAX - 1)\n#define INT64_MIN (-INT64_MAX - 1)\n"
    "#define UINT8_MAX __UINT8_MAX__\n#define UINT16_MAX __UINT16_MAX__\n#define UINT32_MAX __UINT32_MAX__\n#define UINT64_MAX __UINT64_MAX__\n"
    "#define INTPTR_MAX __INTPTR_MAX__\n#define INTPTR_MIN (-INTPTR_MAX - 1)\n#define UINTPTR_MAX __UINTPTR_MAX__\n#define SIZE_MAX __SIZE_MAX__\n"
    "#else\n"
    "#include <stdint.h>\n"
    "#endif\n";

static const char PRELUDE_CORE[] =
    "typedef _Bool tk_bool;\n"
/* the launch ABI's structs, from src/runtime/cpu_abi.h (cmake/cpu_abi_prelude.cmake) */
#include "cpu_abi_prelude.inc"
    "#define TK_FAILED(c) __atomic_load_n(&(c)->failed, __ATOMIC_RELAXED)\n"
    "#define TK_CALL_FAILED(c, a) TK_FAILED(c)\n"
    "/* serial loops spend tk_bud_, one unit an iteration, and poll when it runs out */\n"
    "#define TK_BUDGET 65536\n"
    "#define TK_STRIP 65536\n"
    "#define TK_POLL(n) (__builtin_expect((tk_bud_ -= (n)) < 0, 0) && (tk_bud_ = TK_BUDGET, abi->poll(ctx)))\n"
    "#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__AVX512F__)\n"
    "#define TK_NARROW __attribute__((target(\"prefer-vector-width=256\")))\n"
    "#else\n"
    "#define TK_NARROW\n"
    "#endif\n"
    "/* a vector register's bytes, as GCC's loops in lanes use them (emit_inner.c) */\n"
    "#if defined(__AVX__)\n"
    "#define TK_VEC_BYTES 32\n"
    "#else\n"
    "#define TK_VEC_BYTES 16\n"
    "#endif\n"
    "#define tk_wrap(i, s) ((i) < 0 ? (i) + (s) : (i))\n";

/* C's own: floor division and modulo by a loop-invariant divisor through its
 * reciprocal (strength.c), after the shared division helpers. */
static const char PRELUDE_DIVQ[] =
    /* strength.c: exact for |a|, |d| < 2^52, d != 0 (its essay has the proof); vectorizes */
    "static inline int64_t tk_fdivq_i64(int64_t a, int64_t d, double inv, tk_bool fast) {\n"
    "    if (!fast) return tk_fdiv_i64(a, d);\n"
    "    double t = (double)a * inv; int64_t q = (int64_t)t; q -= (double)q > t;\n"
    "    int64_t s = d >> 63, r = (a - q * d) ^ s;\n"
    "    return q - (r < s) + (r >= (d ^ s));\n"
    "}\n"
    "static inline int64_t tk_modq_i64(int64_t a, int64_t d, double inv, tk_bool fast) {\n"
    "    if (!fast) return tk_mod_i64(a, d);\n"
    "    double t = (double)a * inv; int64_t q = (int64_t)t; q -= (double)q > t;\n"
    "    int64_t s = d >> 63, r = a - q * d, x = r ^ s;\n"
    "    return r + (x < s ? d : 0) - (x >= (d ^ s) ? d : 0);\n"
    "}\n";

/* The helpers every dialect shares (prelude.c), spelled for C. */
static const tk_prelude_style C_STYLE = {
    .qual = "static inline",
    .wide = "double",
    .math = c_math,
    .f64 = TK_PRELUDE_F64_ALWAYS,
    .after_div = PRELUDE_DIVQ,
};

static const char PRELUDE_F16[] =
    "static inline float tk_h2f(uint16_t h) {\n"
    "    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023, u;\n"
    "    if (e == 0) {\n"
    "        if (m == 0) u = s;\n"
    "        else { e = 113; while (!(m & 1024)) { m <<= 1; e--; } m &= 1023; u = s | (e << 23) | (m << 13); }\n"
    "    } else if (e == 31) u = s | 0x7f800000u | (m << 13);\n"
    "    else u = s | ((e + 112) << 23) | (m << 13);\n"
    "    float f; __builtin_memcpy(&f, &u, 4); return f;\n"
    "}\n"
    "static inline uint16_t tk_f2h(float f) {\n"
    "    uint32_t u; __builtin_memcpy(&u, &f, 4);\n"
    "    uint32_t s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;\n"
    "    if (a >= 0x7f800000u) return (uint16_t)(s | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0));\n"
    "    if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u);\n"
    "    if (a < 0x38800000u) {\n"
    "        if (a < 0x33000000u) return (uint16_t)s;\n"
    "        uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, sh = 126 - e;\n"
    "        uint32_t r = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);\n"
    "        if (rem > half || (rem == half && (r & 1))) r++;\n"
    "        return (uint16_t)(s | r);\n"
    "    }\n"
    "    uint32_t r = ((a - 0x38000000u) >> 13), rem = a & 0x1fffu;\n"
    "    if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) r++;\n"
    "    return (uint16_t)(s | r);\n"
    "}\n"
    /* f64 -> f16 rounded once: to f32 rounding to odd (an inexact result takes the
     * neighbour with an odd last bit), which f32's 13 spare bits make exact for tk_f2h */
    "static inline uint16_t tk_d2h(double d) {\n"
    "    float f = (float)d; uint32_t u; __builtin_memcpy(&u, &f, 4);\n"
    "    if (f == f && (double)f != d && !(u & 1)) u += (((double)f < d) == (d > 0)) ? 1u : 0xffffffffu;\n"
    "    __builtin_memcpy(&f, &u, 4); return tk_f2h(f);\n"
    "}\n";

/* bfloat16 storage is its bits, the upper half of an f32: a load shifts them
 * back, a store rounds to nearest even (adding 0x7fff and the last kept bit
 * carries into the exponent where it must, so a value past the largest
 * bfloat16's halfway point becomes infinity), and a NaN becomes the quiet NaN
 * of its sign, as ml_dtypes gives; from a float64, rounded once (tk_d2h). */
static const char PRELUDE_BF16[] =
    "static inline float tk_b2f(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; __builtin_memcpy(&f, &u, 4); return f; }\n"
    "static inline uint16_t tk_f2b(float f) {\n"
    "    uint32_t u; __builtin_memcpy(&u, &f, 4);\n"
    "    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(((u >> 16) & 0x8000u) | 0x7fc0u);\n"
    "    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "}\n"
    "static inline uint16_t tk_d2b(double d) {\n"
    "    float f = (float)d; uint32_t u; __builtin_memcpy(&u, &f, 4);\n"
    "    if (f == f && (double)f != d && !(u & 1)) u += (((double)f < d) == (d > 0)) ? 1u : 0xffffffffu;\n"
    "    __builtin_memcpy(&f, &u, 4); return tk_f2b(f);\n"
    "}\n";

static const char PRELUDE_ATOMIC[] =
    "#define TK_ATOMIC_INT(T) \\\n"
    "static inline T tk_atomic_add_##T(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); } \\\n"
    "static inline T tk_atomic_sub_##T(T *p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); } \\\n"
    "static inline T tk_atomic_min_##T(T *p, T v) { T o = __atomic_load_n(p, __ATOMIC_RELAXED); \\\n"
    "    while (v < o && !__atomic_compare_exchange_n(p, &o, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {} return o; } \\\n"
    "static inline T tk_atomic_max_##T(T *p, T v) { T o = __atomic_load_n(p, __ATOMIC_RELAXED); \\\n"
    "    while (v > o && !__atomic_compare_exchange_n(p, &o, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {} return o; } \\\n"
    "static inline T tk_atomic_exch_##T(T *p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); } \\\n"
    "static inline T tk_atomic_and_##T(T *p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); } \\\n"
    "static inline T tk_atomic_or_##T(T *p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); } \\\n"
    "static inline T tk_atomic_xor_##T(T *p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); } \\\n"
    "static inline T tk_atomic_cas_##T(T *p, T e, T v) { \\\n"
    "    __atomic_compare_exchange_n(p, &e, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED); return e; }\n"
    "#define TK_ATOMIC_FLT(T, U) \\\n"
    "static inline T tk_atomic_rmw_##T(T *p, T v, int op) { U *q = (U *)p; U o = __atomic_load_n(q, __ATOMIC_RELAXED), n; T f, g; \\\n"
    "    do { __builtin_memcpy(&f, &o, sizeof f); \\\n"
    "         g = op == 0 ? f + v : op == 1 ? f - v : op == 2 ? (v < f ? v : f) : (v > f ? v : f); \\\n"
    "         if (op >= 2 && g == f) return f; __builtin_memcpy(&n, &g, sizeof n); \\\n"
    "    } while (!__atomic_compare_exchange_n(q, &o, n, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)); return f; } \\\n"
    "static inline T tk_atomic_add_##T(T *p, T v) { return tk_atomic_rmw_##T(p, v, 0); } \\\n"
    "static inline T tk_atomic_sub_##T(T *p, T v) { return tk_atomic_rmw_##T(p, v, 1); } \\\n"
    "static inline T tk_atomic_min_##T(T *p, T v) { return tk_atomic_rmw_##T(p, v, 2); } \\\n"
    "static inline T tk_atomic_max_##T(T *p, T v) { return tk_atomic_rmw_##T(p, v, 3); } \\\n"
    "static inline T tk_atomic_exch_##T(T *p, T v) { U n, o; T f; __builtin_memcpy(&n, &v, sizeof n); \\\n"
    "    o = __atomic_exchange_n((U *)p, n, __ATOMIC_RELAXED); __builtin_memcpy(&f, &o, sizeof f); return f; } \\\n"
    "static inline T tk_atomic_cas_##T(T *p, T e, T v) { U o, n; T f; \\\n"
    "    __builtin_memcpy(&o, &e, sizeof o); __builtin_memcpy(&n, &v, sizeof n); \\\n"
    "    __atomic_compare_exchange_n((U *)p, &o, n, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED); \\\n"
    "    __builtin_memcpy(&f, &o, sizeof f); return f; }\n"
    "TK_ATOMIC_INT(int8_t) TK_ATOMIC_INT(int16_t) TK_ATOMIC_INT(int32_t) TK_ATOMIC_INT(int64_t)\n"
    "TK_ATOMIC_INT(uint8_t) TK_ATOMIC_INT(uint16_t) TK_ATOMIC_INT(uint32_t) TK_ATOMIC_INT(uint64_t)\n"
    "TK_ATOMIC_FLT(float, uint32_t) TK_ATOMIC_FLT(double, uint64_t)\n";

static const char PRELUDE_VEC[] =
    "#define TK_VEC(N, T, LEN) \\\n"
    "typedef struct N { T v[LEN]; } N; \\\n"
    "static inline N tk_add_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = a.v[i] + b.v[i]; return r; } \\\n"
    "static inline N tk_sub_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = a.v[i] - b.v[i]; return r; } \\\n"
    "static inline N tk_mul_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = a.v[i] * b.v[i]; return r; } \\\n"
    "static inline N tk_div_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = a.v[i] / b.v[i]; return r; } \\\n"
    "static inline N tk_neg_##N(N a) { N r; for (int i = 0; i < LEN; i++) r.v[i] = -a.v[i]; return r; } \\\n"
    "static inline T tk_dot_##N(N a, N b) { T s = 0; for (int i = 0; i < LEN; i++) s += a.v[i] * b.v[i]; return s; }\n"
    "#define TK_VECI(N, LEN) \\\n"
    "typedef struct N { int32_t v[LEN]; } N; \\\n"
    "static inline N tk_add_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = (int32_t)((uint32_t)a.v[i] + (uint32_t)b.v[i]); return r; } \\\n"
    "static inline N tk_sub_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = (int32_t)((uint32_t)a.v[i] - (uint32_t)b.v[i]); return r; } \\\n"
    "static inline N tk_mul_##N(N a, N b) { N r; for (int i = 0; i < LEN; i++) r.v[i] = (int32_t)((uint32_t)a.v[i] * (uint32_t)b.v[i]); return r; } \\\n"
    "static inline N tk_neg_##N(N a) { N r; for (int i = 0; i < LEN; i++) r.v[i] = (int32_t)(0u - (uint32_t)a.v[i]); return r; } \\\n"
    "static inline int32_t tk_dot_##N(N a, N b) { uint32_t s = 0; for (int i = 0; i < LEN; i++) s += (uint32_t)a.v[i] * (uint32_t)b.v[i]; return (int32_t)s; }\n"
    "#define TK_VECF(N, T, LEN, SQRT) TK_VEC(N, T, LEN) \\\n"
    "static inline T tk_length_##N(N a) { return SQRT(tk_dot_##N(a, a)); } \\\n"
    "static inline N tk_normalize_##N(N a) { T l = tk_length_##N(a); N r; for (int i = 0; i < LEN; i++) r.v[i] = l != 0 ? a.v[i] / l : 0; return r; }\n"
    "#define TK_CROSS(N) static inline N tk_cross_##N(N a, N b) { N r; \\\n"
    "    r.v[0] = a.v[1] * b.v[2] - a.v[2] * b.v[1]; r.v[1] = a.v[2] * b.v[0] - a.v[0] * b.v[2]; \\\n"
    "    r.v[2] = a.v[0] * b.v[1] - a.v[1] * b.v[0]; return r; }\n"
    "#define TK_MAT(M, V, T, R) \\\n"
    "typedef struct M { T m[R][R]; } M; \\\n"
    "static inline M tk_add_##M(M a, M b) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) r.m[i][j] = a.m[i][j] + b.m[i][j]; return r; } \\\n"
    "static inline M tk_sub_##M(M a, M b) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) r.m[i][j] = a.m[i][j] - b.m[i][j]; return r; } \\\n"
    "static inline M tk_mul_##M(M a, M b) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) r.m[i][j] = a.m[i][j] * b.m[i][j]; return r; } \\\n"
    "static inline M tk_div_##M(M a, M b) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) r.m[i][j] = a.m[i][j] / b.m[i][j]; return r; } \\\n"
    "static inline M tk_neg_##M(M a) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) r.m[i][j] = -a.m[i][j]; return r; } \\\n"
    "static inline V tk_mm_##M##_##V(M a, V b) { V r; for (int i = 0; i < R; i++) { T s = 0; for (int j = 0; j < R; j++) s += a.m[i][j] * b.v[j]; r.v[i] = s; } return r; } \\\n"
    "static inline M tk_mm_##M##_##M(M a, M b) { M r; for (int i = 0; i < R; i++) for (int j = 0; j < R; j++) { T s = 0; for (int k = 0; k < R; k++) s += a.m[i][k] * b.m[k][j]; r.m[i][j] = s; } return r; }\n"
    "TK_VECF(tk_vec2, float, 2, __builtin_sqrtf) TK_VECF(tk_vec3, float, 3, __builtin_sqrtf) TK_VECF(tk_vec4, float, 4, __builtin_sqrtf)\n"
    "TK_VECF(tk_vec2d, double, 2, __builtin_sqrt) TK_VECF(tk_vec3d, double, 3, __builtin_sqrt) TK_VECF(tk_vec4d, double, 4, __builtin_sqrt)\n"
    "TK_VECI(tk_vec2i, 2) TK_VECI(tk_vec3i, 3) TK_VECI(tk_vec4i, 4)\n"
    "TK_CROSS(tk_vec3) TK_CROSS(tk_vec3d)\n"
    "static inline tk_vec3i tk_cross_tk_vec3i(tk_vec3i a, tk_vec3i b) { tk_vec3i r; uint32_t x[3], y[3]; for (int i = 0; i < 3; i++) { x[i] = (uint32_t)a.v[i]; y[i] = (uint32_t)b.v[i]; }\n"
    "    r.v[0] = (int32_t)(x[1] * y[2] - x[2] * y[1]); r.v[1] = (int32_t)(x[2] * y[0] - x[0] * y[2]); r.v[2] = (int32_t)(x[0] * y[1] - x[1] * y[0]); return r; }\n"
    "TK_MAT(tk_mat22, tk_vec2, float, 2) TK_MAT(tk_mat33, tk_vec3, float, 3) TK_MAT(tk_mat44, tk_vec4, float, 4)\n"
    "TK_MAT(tk_mat22d, tk_vec2d, double, 2) TK_MAT(tk_mat33d, tk_vec3d, double, 3) TK_MAT(tk_mat44d, tk_vec4d, double, 4)\n";

/* `TK_VMATH_F(n)` declares the f64 and f32 functions with their vector
 * variants.  TK_VMATH is glibc's minor version (cpu_jit.c sets it only on
 * x86-64 glibc with libmvec loadable), 0 where vector math is off. */
static const char PRELUDE_VMATH[] =
    "#if TK_VMATH && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 6 && defined(__x86_64__)\n"
    "#define TK_VMATH_F(n) double n(double) __attribute__((simd(\"notinbranch\"))); float n##f(float) __attribute__((simd(\"notinbranch\")));\n"
    "#define TK_VMATH_F2(n) double n(double, double) __attribute__((simd(\"notinbranch\"))); float n##f(float, float) __attribute__((simd(\"notinbranch\")));\n"
    "#if TK_VMATH >= 22\n"
    "TK_VMATH_F(exp) TK_VMATH_F(log) TK_VMATH_F(sin) TK_VMATH_F(cos)\n"
    "#endif\n"
    "#if TK_VMATH >= 35\n"
    "TK_VMATH_F(log2) TK_VMATH_F(log10) TK_VMATH_F(tan) TK_VMATH_F(asin) TK_VMATH_F(acos) TK_VMATH_F(atan)\n"
    "TK_VMATH_F(sinh) TK_VMATH_F(cosh) TK_VMATH_F(tanh) TK_VMATH_F2(atan2) TK_VMATH_F2(hypot)\n"
    "TK_VMATH_F(erf) TK_VMATH_F(erfc) TK_VMATH_F(log1p) TK_VMATH_F(expm1) TK_VMATH_F(cbrt) TK_VMATH_F(exp2)\n"
    "TK_VMATH_F(asinh) TK_VMATH_F(acosh) TK_VMATH_F(atanh)\n"
    "#endif\n"
    "#endif\n";

/* x ** y of floats, the same function in debug mode (_debug_calls.py,
 * float_power) and in fold.c: an exponent of 2, -1 or 0.5 is NumPy's array
 * power -- x * x, 1 / x, sqrt(x) -- correctly rounded, with pow's values
 * at -0.0 and -inf for 0.5 (+0.0 and +inf, where sqrt gives -0.0 and NaN);
 * any other exponent is the C library's scalar pow, never libmvec's vector
 * pow in SIMD lanes: the lanes differ from pow by up to a few ulps, so a
 * value would change with where the loop split it, and debug mode (which
 * calls pow, as Python and NumPy's scalars do) could not give the same
 * bits.  The call goes through a function that is never inlined, so neither
 * GCC (simd declarations above) nor clang (-fveclib=libmvec) puts it in
 * lanes; a constant exponent still folds the three exact cases inline, and
 * they vectorize.  Cost and the NumPy comparison: docs/language.md, "How
 * accurate the math functions are". */
static const char PRELUDE_POW[] =
    "__attribute__((noinline)) static double tk_pow_call_f64(double x, double y) { return __builtin_pow(x, y); }\n"
    "__attribute__((noinline)) static float tk_pow_call_f32(float x, float y) { return __builtin_powf(x, y); }\n"
    "static inline double tk_pow_f64(double x, double y) {\n"
    "    if (y == 2.0) return x * x;\n"
    "    if (y == -1.0) return 1.0 / x;\n"
    "    if (y == 0.5) return x == 0 || __builtin_isinf(x) ? __builtin_fabs(x) : __builtin_sqrt(x);\n"
    "    return tk_pow_call_f64(x, y);\n"
    "}\n"
    "static inline float tk_pow_f32(float x, float y) {\n"
    "    if (y == 2.0f) return x * x;\n"
    "    if (y == -1.0f) return 1.0f / x;\n"
    "    if (y == 0.5f) return x == 0 || __builtin_isinf(x) ? __builtin_fabsf(x) : __builtin_sqrtf(x);\n"
    "    return tk_pow_call_f32(x, y);\n"
    "}\n";

static void c_prelude(tk_cc *C, tk_buf *b) {
    tk_puts(b, PRELUDE_INTS);
    tk_puts(b, PRELUDE_CORE);
    tk_prelude_helpers(b, &C_STYLE);
    tk_puts(b, PRELUDE_VMATH);
    tk_puts(b, PRELUDE_POW); /* after the vector declarations: its call may take lanes */
    tk_prelude_math(C, b, &C_STYLE);
    if (C->uses_f16) tk_puts(b, PRELUDE_F16);
    if (C->uses_bf16) tk_puts(b, PRELUDE_BF16);
    if (C->uses_atomic) tk_puts(b, PRELUDE_ATOMIC);
    if (C->uses_vec) tk_puts(b, PRELUDE_VEC);
    if (C->uses_atomic && C->uses_vec) tk_vec_atomic_prelude(C, b, "static inline", "", 1);
    tk_prelude_linalg(C, b, &C_STYLE);
    tk_gemm_prelude(C, b);
    if (C->uses_complex) {
        /* TK_ROUNDED(x): x rounded on its own, never fused into the sum it
         * feeds. GCC 12's SLP vectorizer turns the two lanes of Smith's
         * division, x + y*r and u - v*r, into one vfmsubadd even under
         * -ffp-contract=off: one ulp from NumPy's quotient wherever the loop
         * is not vectorized. The barrier keeps the products apart. */
        tk_puts(b, "#if defined(__has_builtin)\n#if __has_builtin(__builtin_assoc_barrier)\n"
                   "#define TK_ROUNDED(x) __builtin_assoc_barrier(x)\n#endif\n#endif\n");
        tk_complex_prelude(C, b, "static inline", "", 1);
    }
    if (C->uses_quat) tk_quat_prelude(C, b, "static inline", 1);
    tk_race_prelude(C, b); /* check_races only */
}

const tk_dialect tk_dialect_c = {
    .prelude = c_prelude,
    .ctype = c_ctype,
    .storage_type = c_storage,
    .math = c_math,
    .export_attr = "__attribute__((visibility(\"default\")))",
    .kernel_decls = tk_cpu_frame,
    .kernel = tk_cpu_kernel,
};
