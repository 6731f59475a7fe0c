/*
 * cpu_abi.h -- the launch ABI between libtack and the code it generates for
 * the CPU, written once.
 *
 * A kernel compiled for the CPU is a shared object whose exported entry takes
 * its arguments as an array of tk_argv, the table of libtack's services as a
 * tk_abi and the per-launch context as a tk_ctx.  Both sides must see the
 * same structs: libtack's CPU backend (backends/cpu/cpu_jit.c) fills and
 * implements them, and the C dialect (compiler/dialects/dialect_c.c) writes
 * them into the prelude of every generated file, because that file is
 * compiled apart, by whatever C compiler the user has, and includes nothing
 * of Tack.  So the text between the PRELUDE markers below is both: this
 * header compiles it into libtack, and the build (cmake/cpu_abi_prelude.cmake)
 * copies it, line for line, into a C string that the dialect pastes into its
 * prelude.  Nothing else spells these structs.
 *
 * Between the markers: plain C that <stdint.h> and TACK_MAX_NDIM (tack.h)
 * suffice for, since that is all the generated file has (the build writes
 * TACK_MAX_NDIM's value in), and comments only as whole lines of their own,
 * which the build leaves out.  What the fields mean:
 *
 *   tk_argv  one argument as the entry reads it: an array's data and shape,
 *            or a scalar in s (z: a complex's (re, im)).
 *   tk_ctx   the head of the per-launch context; the generated code reads
 *            `failed` (cpu_jit.c's launch record extends it).
 *   tk_pv    one value of print(): kind 0 string, 1 bool, 2 int, 3 uint,
 *            4 f32, 5 f64, 6 complex64, 7 complex128 (f the real part, im the
 *            imaginary).
 *   tk_abi   libtack's services, versioned by TK_CPU_ABI_VERSION.
 *
 * A change here changes every generated file: raise TK_CPU_ABI_VERSION (part
 * of the cache key).  cpu_jit.c still ends every generated file with
 * _Static_asserts of the sizes and offsets libtack was built with, so a C
 * compiler that lays the structs out otherwise fails to compile the kernel
 * instead of misreading its arguments.
 */
#ifndef TACK_RUNTIME_CPU_ABI_H
#define TACK_RUNTIME_CPU_ABI_H

#include <stdint.h>

#include "tack.h"

#define TK_CPU_ABI_VERSION 5

/* TK_CPU_ABI_PRELUDE_BEGIN */
typedef struct tk_argv { void *data; int64_t shape[TACK_MAX_NDIM]; union { int64_t i; uint64_t u; double f; double z[2]; } s; } tk_argv;
typedef struct tk_ctx { int failed; } tk_ctx;
typedef struct tk_pv { int kind; int64_t i; uint64_t u; double f; const char *s; double im; } tk_pv;
typedef void (*tk_body)(void *frame, int64_t lo, int64_t hi);
typedef struct tk_abi {
    int version;
    /* Run fn over [0, n); ranges under min_parallel stay on the calling thread; pieces are at least grain iterations where the shares allow (pool.h). */
    void (*parallel_for)(tk_ctx *ctx, tk_body fn, void *frame, int64_t n, int64_t min_parallel, int64_t grain);
    void (*fail)(tk_ctx *ctx, int site, int64_t a, int64_t b);
    void (*print)(tk_ctx *ctx, const tk_pv *v, int n);
    /* Asked by serial loops now and then: non-zero when the launch must stop (interrupted, or failed elsewhere); an interrupt is recorded as the failure. */
    int (*poll)(tk_ctx *ctx);
    /* The threads that may run pieces of a launch at once, and the calling thread's slot among them, 0 <= slot() < slots() (pool.h). */
    int (*slots)(void);
    int (*slot)(void);
} tk_abi;
/* TK_CPU_ABI_PRELUDE_END */

typedef void (*tk_entry_fn)(const tk_argv *args, const tk_abi *abi, tk_ctx *ctx);

#endif /* TACK_RUNTIME_CPU_ABI_H */
