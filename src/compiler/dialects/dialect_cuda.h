/*
 * dialect_cuda.h -- the parts of the CUDA dialect that HIP shares.
 *
 * HIP's kernel language is CUDA's: the same qualifiers, thread indices,
 * atomics, math and by-value argument struct.  So the HIP dialect
 * (dialect_hip.c) is the CUDA dialect (dialect_cuda.c) with its own warp
 * sums (a wavefront of 64 or 32 lanes and no mask argument), f16
 * conversions (no PTX) and flush; what it shares is declared here.
 */
#ifndef TACK_DIALECT_CUDA_H
#define TACK_DIALECT_CUDA_H

#include "compiler/compiler.h"

/* Prelude text valid for NVRTC, hiprtc, nvcc and hipcc: integer types, the
 * error record and helpers (tk_cu_prelude_core writes them, the shared ones
 * through prelude.c); tk_atomic_<op>_<T> for every dtype and operation but
 * int64_t's add, sub, min and max (each dialect writes its own); vectors and
 * matrices. */
TK_HIDDEN void tk_cu_prelude_core(tk_buf *b);
TK_HIDDEN void tk_cu_prelude_math(const tk_cc *C, tk_buf *b); /* prelude_math.c's helpers, spelled for CUDA */
TK_HIDDEN void tk_cu_prelude_linalg(const tk_cc *C, tk_buf *b); /* prelude_linalg.c's, likewise */
extern TK_HIDDEN const char tk_cu_prelude_atomic[], tk_cu_prelude_vec[];
/* The dialect hooks and grid spellings the two share (tk_dialect, tk_grid). */
TK_HIDDEN const char *tk_cu_ctype(tack_dtype dt);
TK_HIDDEN const char *tk_cu_storage(tack_dtype dt);
TK_HIDDEN const char *tk_cu_math(int m, tack_dtype dt);
TK_HIDDEN void tk_cu_decls(tk_emitter *e, const tk_spec *K);
TK_HIDDEN void tk_cu_phase_open(tk_emitter *e, const tk_spec *K, int k, int parallel);
TK_HIDDEN void tk_cu_phase_args(tk_emitter *e, const tk_spec *K);
TK_HIDDEN void tk_cu_scalar(tk_emitter *e, int p, int im, const char *mem);
TK_HIDDEN void tk_cu_trailer(tk_emitter *e);
/* Write the flush of privatized sum `a`: warp-summed when `full` (the whole
 * warp is active), added by the lane where `lane0` holds; else per thread. */
TK_HIDDEN void tk_cuda_flush(tk_emitter *e, tk_ir *a, const char *full, const char *lane0);
/* f64 -> f16 rounded once, after each dialect's tk_f2h: to f32 rounding to
 * odd (an inexact result takes the neighbour with an odd last bit), which
 * f32's 13 spare bits make exact for tk_f2h's one rounding. */
#define TK_CU_D2H                                                                                          \
    "TK_D uint16_t tk_d2h(double d) {\n"                                                                   \
    "    union { float f; uint32_t u; } c; c.f = (float)d;\n"                                             \
    "    if (c.f == c.f && (double)c.f != d && !(c.u & 1)) c.u += (((double)c.f < d) == (d > 0)) ? 1u : 0xffffffffu;\n" \
    "    return tk_f2h(c.f);\n"                                                                            \
    "}\n"
/* bfloat16 storage as its bits, for CUDA and HIP alike: integer code, as
 * the C dialect's (dialect_c.c), so every target rounds a store the same way */
#define TK_CU_BF16                                                                                         \
    "TK_D float tk_b2f(uint16_t h) { union { uint32_t u; float f; } c; c.u = (uint32_t)h << 16; return c.f; }\n" \
    "TK_D uint16_t tk_f2b(float f) {\n"                                                                    \
    "    union { float f; uint32_t u; } c; c.f = f;\n"                                                     \
    "    if ((c.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(((c.u >> 16) & 0x8000u) | 0x7fc0u);\n"   \
    "    return (uint16_t)((c.u + 0x7fffu + ((c.u >> 16) & 1u)) >> 16);\n"                                 \
    "}\n"                                                                                                  \
    "TK_D uint16_t tk_d2b(double d) {\n"                                                                   \
    "    union { float f; uint32_t u; } c; c.f = (float)d;\n"                                             \
    "    if (c.f == c.f && (double)c.f != d && !(c.u & 1)) c.u += (((double)c.f < d) == (d > 0)) ? 1u : 0xffffffffu;\n" \
    "    return tk_f2b(c.f);\n"                                                                            \
    "}\n"
/* NaN and infinity, f32 and f64 (tk_dialect.float_specials) */
extern TK_HIDDEN const char *const tk_cuda_specials[4];

#endif /* TACK_DIALECT_CUDA_H */
