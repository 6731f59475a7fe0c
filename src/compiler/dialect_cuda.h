/*
 * dialect_cuda.h -- the parts of the CUDA dialect that HIP shares.
 *
 * HIP's kernel language is CUDA's: the same qualifiers, thread indices,
 * atomics, math and by-value argument struct.  So the HIP dialect
 * (dialect_hip.c) is the CUDA dialect (dialect_cuda.c) with its own warp
 * sums (a wavefront of 64 or 32 lanes and no mask argument), f16
 * conversions (no PTX) and flush; this table hands it the rest.
 */
#ifndef TACK_DIALECT_CUDA_H
#define TACK_DIALECT_CUDA_H

#include "compiler/compiler.h"

typedef struct tk_cuda_family {
    const char *prelude_core;   /* integer types, the error record, helpers; valid for NVRTC, hiprtc, nvcc, hipcc */
    const char *prelude_atomic; /* tk_atomic_<op>_<T> for every dtype but int64_t (the dialect's own) */
    const char *prelude_vec;    /* vectors and matrices */
    const char *(*ctype)(tack_dtype dt);
    const char *(*storage)(tack_dtype dt);
    const char *(*math)(int m, tack_dtype dt);
    void (*decls)(tk_emitter *e, const tk_spec *K);
    void (*phase_open)(tk_emitter *e, const tk_spec *K, int k, int parallel);
    void (*phase_args)(tk_emitter *e, const tk_spec *K);
    void (*scalar)(tk_emitter *e, int p, const char *mem);
    void (*trailer)(tk_emitter *e);
} tk_cuda_family;

extern TK_HIDDEN const tk_cuda_family tk_cuda_family_parts;
/* Write the flush of privatized sum `a`: warp-summed when `full` (the whole
 * warp is active), added by the lane where `lane0` holds; else per thread. */
TK_HIDDEN void tk_cuda_flush(tk_emitter *e, tk_ir *a, const char *full, const char *lane0);
/* NaN and infinity, f32 and f64 (tk_dialect.float_specials) */
extern TK_HIDDEN const char *const tk_cuda_specials[4];

#endif /* TACK_DIALECT_CUDA_H */
