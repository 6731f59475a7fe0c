/*
 * cpu_jit.h -- the CPU toolchain (platform C compiler + disk cache) and the
 * ABI between libtack and the code it generates for the CPU.
 *
 * cpu.c (the CPU backend's vtable) points its build/launch/unload entries at
 * the three functions below.  The structs are mirrored, field for field, by
 * the prelude that dialect_c.c writes into every generated file; change both
 * together (TK_CPU_ABI_VERSION is part of the cache key).  cpu_jit.c ends
 * every generated file with _Static_asserts of these structs' sizes and field
 * offsets, so a copy that drifts fails to compile instead of misreading.
 */
#ifndef TACK_CPU_JIT_H
#define TACK_CPU_JIT_H

#include <stdint.h>

#include "runtime/runtime.h"

#define TK_CPU_ABI_VERSION 5

/* One argument as the generated entry reads it. */
typedef struct tk_argv {
    void *data;
    int64_t shape[TACK_MAX_NDIM];
    union { int64_t i; uint64_t u; double f; double z[2]; } s; /* z: a complex's (re, im) */
} tk_argv;

/* The head of the per-launch context; the generated code reads `failed`. */
typedef struct tk_ctx {
    int failed;
} tk_ctx;

/* One value of print(): kind 0 string, 1 bool, 2 int, 3 uint, 4 f32, 5 f64,
 * 6 complex64, 7 complex128 (f the real part, im the imaginary). */
typedef struct tk_pv {
    int kind;
    int64_t i;
    uint64_t u;
    double f;
    const char *s;
    double im;
} tk_pv;

typedef void (*tk_body)(void *frame, int64_t lo, int64_t hi);

typedef struct tk_abi {
    int version;
    /* Run fn over [0, n); ranges under min_parallel stay on the calling thread;
     * pieces are at least grain iterations where the shares allow (pool.h). */
    void (*parallel_for)(tk_ctx *ctx, tk_body fn, void *frame, int64_t n, int64_t min_parallel, int64_t grain);
    void (*fail)(tk_ctx *ctx, int site, int64_t a, int64_t b);
    void (*print)(tk_ctx *ctx, const tk_pv *v, int n);
    /* Asked by serial loops now and then: non-zero when the launch must stop
     * (interrupted, or failed elsewhere); an interrupt is recorded as the failure. */
    int (*poll)(tk_ctx *ctx);
    /* The threads that may run pieces of a launch at once, and the calling
     * thread's slot among them, 0 <= slot() < slots() (pool.h). */
    int (*slots)(void);
    int (*slot)(void);
} tk_abi;

typedef void (*tk_entry_fn)(const tk_argv *args, const tk_abi *abi, tk_ctx *ctx);

tack_status cpu_build(tack_device *dev, tack_program *p);
tack_status cpu_launch(tack_device *dev, tack_program *p, const tack_arg *args, int nargs);
void cpu_unload(tack_device *dev, tack_program *p);

#endif /* TACK_CPU_JIT_H */
