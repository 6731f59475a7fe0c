/*
 * target.h -- what a compile target can do and how its kernels are laid
 * out: the descriptor the passes ask, in place of the target's name.
 *
 * A compile target (tack_compile_options.target; a backend names the one it
 * builds in rt_backend.dialect) is two things: a dialect, the hooks that
 * spell the source (compiler.h's tk_dialect: type names, math names, the
 * prelude, the kernel hook), and the facts below, which decide what the
 * passes do.  A pass never compares a target's name: it asks the fact it
 * depends on -- "does a thread run a chunk of a parallel loop's iterations
 * in a function of its own?" rather than "is this the CPU?" -- so that a new
 * target states its facts once, in target.c's table, and every pass does
 * the right thing for it without being read (tests/python/test_targets.py
 * scans the compiler for name comparisons and fails on one).
 *
 * The table in target.c is the one list of targets: tk_target_find looks a
 * name up in it, the driver's "not supported" message lists it, and
 * tack_compile_target (tack_kernel.h) hands it to Python
 * (tack._core._targets()).
 */
#ifndef TACK_COMPILER_TARGET_H
#define TACK_COMPILER_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "compiler/compiler.h"

/* How a parallel loop runs. */
typedef enum tk_loop_layout {
    /* Outlined: each parallel loop is a function over a range [lo, hi) of
     * its flattened index space that the runtime's parallel_for calls once
     * per chunk, so one thread runs many iterations in order (the CPU,
     * emit_cpu.c).  What pays off only over a chunk -- a private histogram
     * per chunk (privatize.c), fast division with its per-chunk state
     * (strength.c), check versioning, interchange and tiling of the rows
     * a chunk walks (nests.c, tile.c) -- asks for this layout. */
    TK_LOOPS_CHUNKED,
    /* On a grid: one work item per iteration, the kernel split into phases
     * at its parallel loops (layout_grid.c; the GPUs). */
    TK_LOOPS_GRID
} tk_loop_layout;

/* Double precision. */
typedef enum tk_fp64 {
    TK_FP64_NONE,    /* never (Metal: Apple GPUs have no float64); a kernel that needs it is refused */
    TK_FP64_DEVICE,  /* where the device has it (OpenCL's cl_khr_fp64): the source says whether the
                      * kernel needs it and the launcher checks the device */
    TK_FP64_ALWAYS   /* always */
} tk_fp64;

struct tk_target {
    const char *name;              /* tack_compile_options.target, rt_backend.dialect, tack_program.dialect */
    const tk_dialect *dialect;     /* how its source is spelled */
    tk_loop_layout loops;          /* how a parallel loop runs */
    /* Serial loops ask abi->poll whether to stop (interrupt.c): each function
     * declares a budget tk_bud_ that its loops spend (emit_stmt.c). */
    int polls;
    /* Loops whose iterations are independent may carry `#pragma omp simd`
     * (emit_lanes.c, emit_inner.c): the source's compiler runs them in vector
     * lanes. */
    int simd_pragma;
    /* check_races: the run-time race detector (race_watch.c) can watch its
     * parallel loops (its shadow memory is the host's). */
    int race_watch;
    /* A scalar parameter travels in a 64-bit slot that holds f32 bits or a
     * double's, so a Python float that only meets f32 may travel as f32
     * (weak_float.c): a kernel that computes nothing in double precision
     * then needs no fp64. */
    int weak_f32_params;
    tk_fp64 fp64;
    int atomics64;                 /* 64-bit integer atomic updates */
    int print;                     /* print() in a kernel */
    /* Local arrays (lower_local.c, frames.c): the most bytes one may take,
     * and the most one iteration's may take together; where they live and
     * what the target is, for the messages that refuse more. */
    int64_t local_array_bytes, frame_bytes;
    const char *thread_memory;     /* "a CPU thread's stack" */
    /* Blocks (lower_blocks.c): the most threads a block may have, and the most
     * bytes its tack.shared arrays may take together. */
    int max_block;
    int64_t shared_bytes;
    /* Threads 32k .. 32k + 31 of a block lie in one hardware warp or wavefront (32 or 64 lanes wide),
     * whose lanes exchange registers in groups of 32 (CUDA's __shfl_sync and __ballot_sync; HIP's
     * __shfl with a width, and the thread's half of __ballot): the sub-group operations, whose groups
     * are the language's 32 threads, are lowered to those exchanges (IR_WARP) in place of a shared
     * scratch array (lower_blocks.c), with the same results. */
    int warp32_shuffles;
    const char *device;            /* "the CPU", "a GPU" */
    /* Whether 512-bit vector operations run at full width on the cores the kernels run on:
     * twice a 256-bit operation's work per issue slot, not two halves (runtime/cpu_width.c,
     * measured once per process; TACK_WIDE_VECTORS states it).  NULL: not a question this
     * target's code asks (the GPUs).  A pass that asks it must put the answer into the source
     * it emits, which is part of the kernel cache's key. */
    int (*wide_vectors)(void);
};

/* The target called `name` (NULL: the default, "c"), or NULL when there is none. */
const tk_target *tk_target_find(const char *name);
/* Target i of the table, in its order; NULL past the last. */
const tk_target *tk_target_at(int i);
/* The targets' names for a message, quoted: "c", "cuda", ... and "opencl" (cut to fit n bytes). */
void tk_target_names(char *buf, size_t n);

#endif /* TACK_COMPILER_TARGET_H */
