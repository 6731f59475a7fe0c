/*
 * blocks.h -- what the CPU layout of a blocks loop (cpu/emit_blocks.c) and
 * its fast stretches (cpu/blocks_fast.c) share: the state of one blocks
 * loop's chunk while it is written, and the functions each file gives the
 * other.
 */
#ifndef TACK_CPU_BLOCKS_H
#define TACK_CPU_BLOCKS_H

#include "compiler/compiler.h"
#include "compiler/emit/emit.h"

typedef struct blk {
    tk_emitter *e;
    tk_ir *pf;
    int64_t B;
    const char *t;   /* the thread's variable, as C */
    int ncond;       /* numbers the uniform conditions' names */
    /* the plan (plan_refs): per local, the region that uses it (-1 none yet, -2 several, or a
     * uniform condition's), and whether that region sets it first, at its top level */
    int *region;
    char *first_def;
    int nregion;
    int fast;        /* config.def's blocks_fast (the essay's five changes) */
    char *undef;     /* per local: read in its region where not every path has set it yet */
    char *scalar;    /* per local: one scalar for every thread of its one region */
    char *keep;      /* per local: no lane suffix (b, t, the shared arrays, the scalars) */
    char *uni;       /* per local: the block's one value (same_values), set outside the thread loops */
    int64_t *tfun;   /* per local: C where it is t // C (tfun > 0) or t % C (< 0), set once first (thread_nest) */
} blk;

/* emit_blocks.c: whether statement s holds a barrier; whether x reads memory (an array, a shared
 * one, through a call) or an atomic's result. */
TK_HIDDEN int cb_has_barrier(const tk_ir *s);
TK_HIDDEN int cb_reads_memory(const tk_ir *x);

/* blocks_fast.c (with blocks_fast on): the locals read in region statement s before every path
 * there has set them, into R->undef, from the set `def` already set; the block's values, into
 * R->uni; the locals that hold t // C or t % C, into R->tfun; and region stmts[i, j) written. */
TK_HIDDEN void cb_md_stmt(blk *R, const tk_ir *s, char *def);
TK_HIDDEN void cb_same_values(blk *R, const tk_ir *body, int scope);
TK_HIDDEN void cb_thread_nest(blk *R, const tk_ir *body);
TK_HIDDEN void cb_fast_region(blk *R, tk_ir *b, int i, int j);

#endif
