/*
 * grid.h -- the layout of a kernel on a GPU grid (layout_grid.c), shared by
 * the four GPU dialects: CUDA (dialect_cuda.c), HIP (dialect_hip.c), OpenCL
 * (dialect_opencl.c) and Metal (dialect_msl.c), each a tk_grid table.
 *
 * The layout -- which top-level statements become which phase, the frame
 * carried between phases, the grid-stride loop of a parallel loop -- is the
 * same on every GPU; what differs is spelling: how a phase function is
 * declared and receives its arguments, how a thread finds its index, and
 * how a privatized sum is flushed.  A dialect gives those as a tk_grid.
 */
#ifndef TACK_GRID_H
#define TACK_GRID_H

#include "compiler/compiler.h"

typedef struct tk_grid {
    const char *tag; /* the trailer comment's tag: "tack-cuda", "tack-opencl" */
    /* Declarations ahead of the phases, after the frame struct (CUDA: the
     * by-value argument struct); NULL: none. */
    void (*decls)(tk_emitter *e, const tk_spec *K);
    /* Open phase k's function, through its `{` line; then, indented in its
     * body, make `ctx` (the error record), `FB` (the frame buffer) and the
     * arrays a<p> with their shapes a<p>_s<d> available (phase_args, NULL
     * when the function's parameters already are those). */
    void (*phase_open)(tk_emitter *e, const tk_spec *K, int k, int parallel);
    void (*phase_args)(tk_emitter *e, const tk_spec *K);
    const char *prog; /* the program id, in a phase's body */
    /* The expression of scalar parameter p's slot read as member `mem`
     * ("i", "u", "f" or "f32": int64, uint64, double or low-half float bits);
     * im = 1 reads a complex's second slot, its imaginary part. */
    void (*scalar)(tk_emitter *e, int p, int im, const char *mem);
    const char *first_thread;  /* the condition true in exactly one thread of a phase */
    const char *thread_index;  /* a thread's index in the grid, as uint64_t */
    const char *thread_stride; /* the number of threads in the grid, as uint64_t */
    /* A blocks loop's phase (lower_blocks.c): the index of the thread's block
     * (work-group, threadgroup), the number of blocks, and the thread's index
     * in its block. */
    const char *group_index, *group_count, *local_index;
    /* 1: the dialect is C++ (decltype) and its vendor compiler merges adjacent
     * accesses of a pointer promised aligned by __builtin_assume_aligned into
     * vector loads and stores (NVVM, clang: CUDA, HIP); the elementwise loop's
     * four iterations a trip are then adjacent ones (layout_grid.c). */
    int vector_loads;
    /* Flush the privatized sum `a` (an IR_ATOMIC whose value is a local);
     * NULL: each thread adds its own partial sum atomically.  `all_reach` is 1
     * when no check or call in the loop's body can fail, so that every thread
     * of the grid that started the loop reaches the flush (a dialect whose
     * sub-group operations need every lane may pre-reduce only then). */
    void (*flush)(tk_emitter *e, tk_ir *a, int all_reach);
    /* Words after "phases=... frame=N" in the trailer (" block=256"). */
    void (*trailer)(tk_emitter *e);
} tk_grid;

/* The dialect's kernel hook, laid out on a grid by G. */
TK_HIDDEN void tk_grid_kernel(tk_emitter *e, tk_buf *out, const tk_grid *G);

#endif /* TACK_GRID_H */
