/*
 * emit_blocks.c -- a blocks loop on the CPU: a block per parallel
 * iteration, its threads as loops split at each barrier.
 *
 * tack.blocks(n, B) (lower_blocks.c) runs on the CPU as a parallel loop
 * over the n blocks, spread over the cores by the thread pool like any
 * other (each chunk runs whole blocks), and a block's B threads run in the
 * chunk function, one after another, as a loop over t.  A barrier cannot
 * stop a loop iteration halfway, so the loop is split there: the body is
 * cut into regions at its barriers, and each region is its own loop over
 * the B threads, all of them finishing the region before any starts the
 * next -- which is exactly what a barrier promises.  The meaning is the
 * GPUs' for every kernel whose threads meet only at barriers (and through
 * atomics).
 *
 * What lives across a barrier lives per thread: every local of the loop's
 * body except b, t, the shared arrays and those used within one region
 * only (the plan, below) is an array of B values in the chunk function,
 * indexed by t (the emitter's lane suffix, `x[t]`), so a value one thread
 * computed before a barrier is its own after it.  The shared arrays are
 * one per block, zeroed when the block starts.
 *
 * A statement that holds a barrier -- an if, a for or a while around one --
 * runs once for the whole block: its condition or bounds are evaluated for
 * thread 0, and, where they read memory, for every other thread, which must
 * agree (the compiler has refused conditions that depend on t through
 * locals, so one of locals and constants agrees; one that reads memory it
 * cannot judge, so the CPU checks, and a disagreement raises ValueError
 * naming the loop's line).  A for loop's variable is then set
 * in every thread before its body's regions run.  A jump out of a region
 * was refused by the compiler, so each region is a plain loop.
 *
 * Inside a region the threads' iterations are plain loop iterations; the
 * C compiler may vectorize them where nothing in the region stops it, as
 * it does any loop, proving for itself that no iteration reads what an
 * earlier one wrote: nothing here tells it so.
 *
 * With blocks_fast on (config.def; the default) a region is written by
 * blocks_fast.c, which makes it run only the work its threads need and
 * gives the same results; off, each region is the plain loop below.
 */
#include <stdio.h>
#include <string.h>

#include "compiler/cpu/blocks.h"
#include "runtime/config.h"


int cb_has_barrier(const tk_ir *s) {
    if (s->op == IR_BARRIER) return 1;
    if (s->op != IR_BLOCK && s->op != IR_IF && s->op != IR_WHILE && s->op != IR_FOR) return 0;
    for (int i = 0; i < s->n; i++)
        if (cb_has_barrier(s->k[i])) return 1;
    return 0;
}

/* ------------------------------------------------------------ the plan
 * Which locals need a value per thread: those that a value crosses a
 * barrier in.  A local used in one region only, which that region sets at
 * its top level before any other use (i = b * B + t, a temporary, a loop's
 * variable), is the thread's own for the length of the region, so one
 * scalar serves every thread in turn: the C compiler keeps it in a
 * register, and a loop over it vectorizes.  Every other local (and any a
 * uniform condition reads) is an array of B values. */
static void use(blk *R, int l, int region) {
    if (l < 0) return;
    if (R->region[l] == -1) R->region[l] = region;
    else if (R->region[l] != region) R->region[l] = -2;
}

static void refs(blk *R, const tk_ir *x, int region) {
    switch (x->op) {
    case IR_LOCAL: case IR_LLOAD: case IR_LSTORE: case IR_LFILL: case IR_ASSIGN: case IR_SETCOMP: case IR_FOR:
    case IR_LARRAY:
        use(R, x->local, region);
        break;
    default: break;
    }
    for (int i = 0; i < x->n; i++) refs(R, x->k[i], region);
}

static void plan_region(blk *R, const tk_ir *b, int i, int j) {
    int region = R->nregion++;
    for (int k = i; k < j; k++) {
        const tk_ir *x = b->k[k];
        int l = (x->op == IR_ASSIGN || x->op == IR_FOR || x->op == IR_LFILL) ? x->local : -1;
        if (l >= 0 && R->region[l] == -1) {
            int reads = 0;
            for (int q = 0; q < (x->op == IR_FOR ? 3 : x->n) && !reads; q++) { /* a loop's bounds, not its body */
                int saved = R->region[l];
                refs(R, x->k[q], region);
                reads = R->region[l] != saved; /* its own value read where it is set */
                R->region[l] = saved;
            }
            if (!reads) R->first_def[l] = 1;
        }
        refs(R, x, region);
    }
    if (R->fast) {
        int nl = R->e->S->nlocals + 1;
        char *def = tk_alloc(&R->e->C->arena, (size_t)nl);
        memset(def, 0, (size_t)nl);
        for (int k = i; k < j; k++) cb_md_stmt(R, b->k[k], def);
    }
}

static void plan(blk *R, const tk_ir *b) {
    int i = 0;
    while (i < b->n) {
        if (!cb_has_barrier(b->k[i])) {
            int j = i;
            while (j < b->n && !cb_has_barrier(b->k[j])) j++;
            plan_region(R, b, i, j);
            i = j;
            continue;
        }
        const tk_ir *x = b->k[i++];
        switch (x->op) {
        case IR_BLOCK: plan(R, x); break;
        case IR_IF: refs(R, x->k[0], -3); plan(R, x->k[1]); plan(R, x->k[2]); break;
        case IR_WHILE: refs(R, x->k[0], -3); plan(R, x->k[1]); break;
        case IR_FOR:
            for (int k = 0; k < 3; k++) refs(R, x->k[k], -3);
            use(R, x->local, -3);
            plan(R, x->k[3]);
            break;
        default: break;
        }
    }
}

/* for (t = 0; t < B; t++) { stmts[i, j) }, or blocks_fast's stretch (blocks_fast.c) */
static void region(blk *R, tk_ir *b, int i, int j) {
    tk_emitter *e = R->e;
    if (R->fast) {
        cb_fast_region(R, b, i, j);
        return;
    }
    I(e); P(e, "for (%s = 0; %s < %lld; %s++) {\n", R->t, R->t, (long long)R->B, R->t);
    e->ind++;
    for (int k = i; k < j; k++) st(e, b->k[k]);
    e->ind--;
    I(e); P(e, "}\n");
}

/* Whether x reads memory (an array, a shared one, through a call) or an atomic's result. */
int cb_reads_memory(const tk_ir *x) {
    if (x->op == IR_LOAD || x->op == IR_LLOAD || x->op == IR_CALL || x->op == IR_ATOMIC) return 1;
    for (int i = 0; i < x->n; i++)
        if (cb_reads_memory(x->k[i])) return 1;
    return 0;
}

/* Value x (an expression of type C type `ct`) of thread 0 into a constant
 * named `name`, then the other threads' checked against it -- where it
 * reads memory: one of locals and constants only is the same in every
 * thread, since the compiler refused those computed from t (lower_blocks.c). */
static void uniform(blk *R, tk_ir *x, const char *ct, const char *name) {
    tk_emitter *e = R->e;
    I(e); P(e, "%s = 0;\n", R->t);
    I(e); P(e, "const %s %s = ", ct, name); ex(e, x); P(e, ";\n");
    if (!cb_reads_memory(x)) return;
    I(e); P(e, "for (%s = 1; %s < %lld; %s++) if ((", R->t, R->t, (long long)R->B, R->t);
    ex(e, x);
    P(e, ") != %s) { %s(ctx, %d, 0, 0); return; }\n", name, e->D->fail_fn ? e->D->fail_fn : "abi->fail", R->pf->param);
}

static void seq(blk *R, tk_ir *b) {
    tk_emitter *e = R->e;
    int i = 0;
    while (i < b->n) {
        if (!cb_has_barrier(b->k[i])) {
            int j = i;
            while (j < b->n && !cb_has_barrier(b->k[j])) j++;
            region(R, b, i, j);
            i = j;
            continue;
        }
        tk_ir *x = b->k[i++];
        int c = R->ncond++;
        char name[32], lo[32], hi[32], step[32];
        snprintf(name, sizeof name, "u%d_", c);
        switch (x->op) {
        case IR_BARRIER: I(e); P(e, "/* barrier, line %d */\n", x->line); break;
        case IR_BLOCK: seq(R, x); break;
        case IR_IF:
            I(e); P(e, "{ /* an if around a barrier, line %d: one way for the whole block */\n", x->line);
            e->ind++;
            uniform(R, x->k[0], "tk_bool", name);
            I(e); P(e, "if (%s) {\n", name);
            e->ind++;
            seq(R, x->k[1]);
            e->ind--;
            I(e); P(e, "} else {\n");
            e->ind++;
            seq(R, x->k[2]);
            e->ind--;
            I(e); P(e, "}\n");
            e->ind--;
            I(e); P(e, "}\n");
            break;
        case IR_WHILE:
            I(e); P(e, "for (;;) { /* a while around a barrier, line %d: for the whole block */\n", x->line);
            e->ind++;
            uniform(R, x->k[0], "tk_bool", name);
            I(e); P(e, "if (!%s) break;\n", name);
            seq(R, x->k[1]);
            e->ind--;
            I(e); P(e, "}\n");
            break;
        case IR_FOR:
            snprintf(lo, sizeof lo, "u%dl_", c);
            snprintf(hi, sizeof hi, "u%dh_", c);
            snprintf(step, sizeof step, "u%ds_", c);
            I(e); P(e, "{ /* a loop around a barrier, line %d: for the whole block */\n", x->line);
            e->ind++;
            uniform(R, x->k[0], "int64_t", lo);
            uniform(R, x->k[1], "int64_t", hi);
            uniform(R, x->k[2], "int64_t", step);
            I(e); P(e, "for (int64_t k%d_ = 0, n%d_ = tk_trip(%s, %s, %s); k%d_ < n%d_; k%d_++) {\n", c, c, lo, hi, step, c, c, c);
            e->ind++;
            I(e);
            if (!R->uni[x->local]) P(e, "for (%s = 0; %s < %lld; %s++) ", R->t, R->t, (long long)R->B, R->t);
            local_name(e, x->local);
            P(e, " = (%s)(int64_t)((uint64_t)%s + (uint64_t)k%d_ * (uint64_t)%s);\n",
              ctype(e, e->S->locals[x->local].ty.dt), lo, c, step);
            seq(R, x->k[3]);
            e->ind--;
            I(e); P(e, "}\n");
            e->ind--;
            I(e); P(e, "}\n");
            break;
        default: region(R, b, i - 1, i); break; /* has_barrier said no other kind holds one */
        }
    }
}

/* The chunk of blocks loop s: blocks lo_ .. hi_, each with its shared arrays
 * and its threads' locals, and the body's regions. */
void tk_cpu_blocks_chunk(tk_emitter *e, tk_ir *s) {
    tk_spec *S = e->S;
    int scope = S->locals[s->vars[0]].scope;
    char *keep = tk_alloc(&e->C->arena, (size_t)S->nlocals + 1);
    memset(keep, 0, (size_t)S->nlocals + 1);
    keep[s->vars[0]] = keep[s->local] = 1;
    for (int i = 0; i < S->nlocals; i++) keep[i] |= S->locals[i].shared;
    /* the thread's variable's C name, the suffix of every other local */
    tk_buf tname;
    tk_buf_init(&tname, &e->C->arena);
    tk_buf *saved = e->b;
    e->b = &tname;
    local_name(e, s->local);
    e->b = saved;
    size_t nl = (size_t)S->nlocals + 1;
    blk R = {e, s, s->c.i, tname.s, 0, tk_alloc(&e->C->arena, sizeof(int) * nl), tk_alloc(&e->C->arena, nl), 0,
             tk_config_int(TK_CFG_BLOCKS_FAST), tk_alloc(&e->C->arena, nl), tk_alloc(&e->C->arena, nl), keep,
             tk_alloc(&e->C->arena, nl), tk_alloc(&e->C->arena, sizeof(int64_t) * nl)};
    memset(R.first_def, 0, nl);
    memset(R.undef, 0, nl);
    for (int i = 0; i < S->nlocals; i++) R.region[i] = -1;
    cb_same_values(&R, s->k[1], scope);
    if (R.fast) cb_thread_nest(&R, s->k[1]);
    for (int i = 0; i < S->nlocals; i++) keep[i] |= R.uni[i];
    plan(&R, s->k[1]);
    char *scalar = R.scalar;
    for (int i = 0; i < S->nlocals; i++) {
        int own = R.first_def[i] || (R.fast && !R.undef[i] && S->locals[i].ty.kind == TY_VALUE);
        scalar[i] = !keep[i] && R.region[i] >= 0 && own;
        keep[i] |= scalar[i];
    }
    I(e); P(e, "for (int64_t i_ = lo_; i_ < hi_; i_++) { /* a block */\n");
    e->ind++;
    for (int i = 0; i < S->nlocals; i++) {
        tk_local *l = &S->locals[i];
        if (l->scope != scope || (l->ty.kind != TY_VALUE && l->ty.kind != TY_ARRAY)) continue;
        I(e);
        P(e, "%s ", l->ty.kind == TY_ARRAY ? tk_local_elem_type(l, ctype(e, l->ty.dt)) : ctype(e, l->ty.dt));
        local_name(e, i);
        if (!keep[i]) P(e, "[%lld]", (long long)R.B); /* one per thread */
        else if (scalar[i]) P(e, " /* the thread's own, within one region */");
        else if (R.uni[i]) P(e, " /* the block's: the same in every thread */");
        if (l->ty.kind == TY_ARRAY) P(e, "[%lld]", (long long)(tk_local_elems(l) > 0 ? tk_local_elems(l) : 1));
        P(e, " = {0}; (void)");
        local_name(e, i);
        P(e, ";\n");
    }
    I(e); local_name(e, s->vars[0]); P(e, " = i_;\n");
    tk_buf suffix;
    tk_buf_init(&suffix, &e->C->arena);
    tk_printf(&suffix, "[%s]", R.t);
    tk_emitter_lane(e, suffix.s, scope, keep);
    seq(&R, s->k[1]);
    tk_emitter_lane(e, NULL, 0, NULL);
    e->ind--;
    I(e); P(e, "}\n");
}
