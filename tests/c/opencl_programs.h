/*
 * opencl_programs.h -- OpenCL C programs as Tack's opencl dialect lays them
 * out, for the C tests of the backends that build that dialect
 * (test_opencl.c; test_level_zero_fake.c and test_level_zero_streams.c,
 * through level_zero_fake.h): the kernels are hand-written OpenCL C
 * following the launch convention opencl_launch.c documents (the layout
 * comment last, tk_phaseN kernels, arguments ctx, frame, prog, then per
 * parameter), wrapped into programs by tk_program_from_source with the
 * parameter descriptions the compiler would give (arr, scalar) and one
 * bounds-check site.  Functions are static inline, as in check.h.
 */
#ifndef TACK_TEST_OPENCL_PROGRAMS_H
#define TACK_TEST_OPENCL_PROGRAMS_H

#include <string.h>

#include "check.h"
#include "runtime/program.h"
#include "tack.h"
#include "tack_kernel.h"

#define CTX "typedef struct { int failed; int site; ulong prog; long a; long b; } tk_ctx;\n"

/* y = a * x + y; the f32 scalar arrives as its own bits in the slot's low half */
static const char SAXPY[] =
    CTX
    "__kernel void tk_phase0(__global tk_ctx *ctx, __global uchar *frame, ulong prog,\n"
    "                        __global float *y, long n, __global const float *x, long xn, ulong a_bits) {\n"
    "    float a = as_float((uint)a_bits);\n"
    "    for (long i = get_global_id(0); i < n; i += get_global_size(0)) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "/* tack-opencl: phases=p frame=0 fp64=0 */\n";

/* y = a * x + y in float64: what a device without fp64 refuses */
static const char DAXPY[] =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" CTX
    "__kernel void tk_phase0(__global tk_ctx *ctx, __global uchar *frame, ulong prog,\n"
    "                        __global double *y, long n, __global const double *x, long xn, ulong a_bits) {\n"
    "    double a = as_double(a_bits);\n"
    "    for (long i = get_global_id(0); i < n; i += get_global_size(0)) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "/* tack-opencl: phases=p frame=0 fp64=1 */\n";

/* a bounds check: site 0 fails when idx is outside x */
static const char CHECKED[] =
    CTX
    "__kernel void tk_phase0(__global tk_ctx *ctx, __global uchar *frame, ulong prog,\n"
    "                        __global const int *x, long n, ulong idx_bits) {\n"
    "    long idx = (long)idx_bits;\n"
    "    if (get_global_id(0) == 0 && (idx < 0 || idx >= n) &&\n"
    "        atomic_cmpxchg((volatile __global int *)&ctx->failed, 0, 1) == 0) {\n"
    "        ctx->site = 0; ctx->prog = prog; ctx->a = idx; ctx->b = n;\n"
    "    }\n"
    "}\n"
    "/* tack-opencl: phases=p frame=0 fp64=0 */\n";

/* what no OpenCL compiler builds */
static const char BROKEN[] =
    CTX "__kernel void tk_phase0(__global tk_ctx *ctx) { this is not OpenCL C; }\n"
        "/* tack-opencl: phases=p frame=0 fp64=0 */\n";

static inline tk_pinfo arr(const char *name, tack_dtype dt, int written) {
    tk_pinfo p;
    memset(&p, 0, sizeof p);
    p.name = (char *)name;
    p.is_array = 1;
    p.dtype = dt;
    p.ndim = 1;
    p.written = written;
    p.narrow = TACK_DTYPE_COUNT;
    return p;
}

static inline tk_pinfo scalar(const char *name, tack_dtype dt) {
    tk_pinfo p = arr(name, dt, 0);
    p.is_array = 0;
    p.ndim = 0;
    p.carry_f32 = dt == TACK_F32 || dt == TACK_F16; /* as the compiler sets it */
    return p;
}

/* The program `name` of the opencl source `src`, its np parameters described by params. */
static inline tack_program *program(const char *name, const char *src, int np, const tk_pinfo *params) {
    static const tk_site site = {CK_INDEX, 7, 0, "x", NULL, "check", "check.py"};
    tack_program *p = NULL;
    CHECK(tk_program_from_source(name, "opencl", src, np, params, 1, &site, &p) == TACK_OK);
    return p;
}

#endif /* TACK_TEST_OPENCL_PROGRAMS_H */
