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
 * Making the regions fast (config.def's blocks_fast, on by default; off
 * gives the general layout, which the tests compare bit for bit).  A block
 * reduction written as the docs write it spent its time on work the threads
 * do not need: `stride`, the same in every thread, was an array of B values
 * updated in a loop of B iterations after every barrier; `if t < stride`
 * ran B iterations to do `stride` of them; the temporaries of `s[t] +=
 * s[t + stride]` were arrays of B values; and every region that read an
 * array held an index check whose early exit stops the C compiler from
 * vectorizing the loop.  Five changes; the first four keep every thread's
 * statements and their order 0 .. B-1 within a region, and the fifth
 * changes only the order between different threads' steps of a loop that
 * writes no memory, which nothing can see; no result changes, float sums
 * included:
 *
 *   - the block's values (same_values): a local every thread holds the same
 *     value of is one scalar, and its assignments run once for the block;
 *   - one-region scalars set before every use (md_stmt), not only those
 *     set first at the region's top level;
 *   - a region that is `if <t compared with a bound>:` loops only over the
 *     threads whose test can hold (thread_test);
 *   - a region's checks (and its indices' wraps) computed first, in a loop
 *     of their own, where they test values the region does not change;
 *     where none fails the region runs a copy without them (checks_first);
 *   - a region that is one serial loop writing no memory, reading the
 *     thread's index as t // C and t % C, runs step by step with the
 *     threads as a nest inside each step (emit_stepwise): the tiled
 *     product's inner loop, vectorized over the threads.
 *
 * Each section below says why its change is exact.
 */
#include <stdio.h>
#include <string.h>

#include "compiler/compiler.h"
#include "compiler/emit/emit.h"
#include "runtime/config.h"

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

static int has_barrier(const tk_ir *s) {
    if (s->op == IR_BARRIER) return 1;
    if (s->op != IR_BLOCK && s->op != IR_IF && s->op != IR_WHILE && s->op != IR_FOR) return 0;
    for (int i = 0; i < s->n; i++)
        if (has_barrier(s->k[i])) return 1;
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

/* ------------------------------------------------- set before every use
 * With blocks_fast, a value local used in one region only is the thread's
 * own there (one scalar for every thread in turn) also where the region sets
 * it under an if or in a loop -- `if t < stride: k = t + stride; s[t] +=
 * s[k]` -- as long as every read of it in the region comes after a write of
 * it on every path from the region's top: a thread then never sees the value
 * the thread before it left.  The walk carries the set of locals written on
 * every path so far (an if's two ways meet in their intersection; what a
 * loop's body writes is forgotten after it, since it may run no times); a
 * read of a local outside the set marks it `undef`, and it stays an array
 * of B values. */
static char *md_copy(blk *R, const char *def) {
    size_t nl = (size_t)R->e->S->nlocals + 1;
    char *c = tk_alloc(&R->e->C->arena, nl);
    memcpy(c, def, nl);
    return c;
}

static void md_reads(blk *R, const tk_ir *x, const char *def) {
    switch (x->op) {
    case IR_LOCAL: case IR_LLOAD: case IR_LSTORE: case IR_SETCOMP: case IR_LARRAY:
        if (x->local >= 0 && !def[x->local]) R->undef[x->local] = 1;
        break;
    default: break;
    }
    for (int i = 0; i < x->n; i++) md_reads(R, x->k[i], def);
}

static void md_stmt(blk *R, const tk_ir *s, char *def) {
    int nl = R->e->S->nlocals;
    switch (s->op) {
    case IR_BLOCK:
        for (int i = 0; i < s->n; i++) md_stmt(R, s->k[i], def);
        return;
    case IR_ASSIGN: case IR_LFILL:
        for (int i = 0; i < s->n; i++) md_reads(R, s->k[i], def);
        if (s->local >= 0) def[s->local] = 1;
        return;
    case IR_IF: {
        md_reads(R, s->k[0], def);
        char *a = md_copy(R, def), *b = md_copy(R, def);
        md_stmt(R, s->k[1], a);
        md_stmt(R, s->k[2], b);
        for (int l = 0; l < nl; l++) def[l] = a[l] && b[l];
        return;
    }
    case IR_WHILE:
        md_reads(R, s->k[0], def);
        md_stmt(R, s->k[1], md_copy(R, def));
        return;
    case IR_FOR: {
        for (int i = 0; i < 3; i++) md_reads(R, s->k[i], def);
        char *a = md_copy(R, def);
        if (s->local >= 0) a[s->local] = 1;
        md_stmt(R, s->k[3], a);
        return;
    }
    default: md_reads(R, s, def); return;
    }
}

static int has_barrier(const tk_ir *s);

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
        for (int k = i; k < j; k++) md_stmt(R, b->k[k], def);
    }
}

static void plan(blk *R, const tk_ir *b) {
    int i = 0;
    while (i < b->n) {
        if (!has_barrier(b->k[i])) {
            int j = i;
            while (j < b->n && !has_barrier(b->k[j])) j++;
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

/* ------------------------------------------------------ the block's values
 * With blocks_fast, a value local that every thread holds the same value of
 * at every point -- `stride = BS // 2 ... stride //= 2` around barriers, a
 * loop's variable around a barrier -- is one scalar of the block, not B
 * values, and a region that only sets such locals runs once for the block
 * instead of once per thread.  A local is one of these when each of its
 * assignments is either the variable of a loop around a barrier (set
 * from bounds that every thread agrees on, uniform()) or an assignment at
 * a region's top level, to such a local, of a value computed
 * from constants, such locals, b and the kernel's values (no call, not t;
 * memory only as an element of a shared array at constant indices within
 * its shape that the region does not write: `r = s[0]` of block_sum).  An
 * assignment like that in a region that does more runs once before the
 * region's loop, where no statement before it in the region mentions the
 * local.  Then every thread starts with the same value (the block's
 * locals start at zero), and each such region, run by thread 0, 1, ... on
 * its own copies, gives every copy the same new value, which running it once
 * gives the one scalar; a thread reading it anywhere else reads what its own
 * copy would have held.  Found as the largest such set: start from every
 * value local of the body and drop those assigned anywhere else, until
 * nothing changes. */
static int stores_to(const tk_ir *x, int l) {
    if ((x->op == IR_LSTORE || x->op == IR_LFILL) && x->local == l) return 1;
    for (int i = 0; i < x->n; i++)
        if (stores_to(x->k[i], l)) return 1;
    return 0;
}

/* Whether x has the same value in every thread of the region stmts[i, j) that computes it. */
static int same_value(const blk *R, const tk_ir *x, const tk_ir *b, int i, int j) {
    switch (x->op) {
    case IR_CONST: return !x->str;
    case IR_LLOAD: { /* a shared element at constant indices in bounds, which the region does not write */
        if (x->local < 0) return 0;
        const tk_local *l = &R->e->S->locals[x->local];
        if (!l->shared || l->ty.kind != TY_ARRAY || x->n != l->ty.ndim) return 0;
        for (int d = 0; d < x->n; d++)
            if (x->k[d]->op != IR_CONST || !ty_is_int(x->k[d]->ty) || x->k[d]->c.i < 0 || x->k[d]->c.i >= l->ashape[d])
                return 0;
        for (int k = i; k < j; k++)
            if (stores_to(b->k[k], x->local)) return 0;
        return 1;
    }
    case IR_LOCAL:
        return x->local >= 0 && x->local != R->pf->local &&
               (R->uni[x->local] || x->local == R->pf->vars[0] ||
                R->e->S->locals[x->local].scope != R->e->S->locals[R->pf->vars[0]].scope);
    case IR_CAST: case IR_BIN: case IR_UN:
        for (int q = 0; q < x->n; q++)
            if (!same_value(R, x->k[q], b, i, j)) return 0;
        return x->n > 0;
    default: return 0;
    }
}

static int mentions(const tk_ir *x, int l) {
    switch (x->op) {
    case IR_LOCAL: case IR_LLOAD: case IR_LSTORE: case IR_LFILL: case IR_ASSIGN: case IR_SETCOMP: case IR_FOR:
    case IR_LARRAY:
        if (x->local == l) return 1;
        break;
    default: break;
    }
    for (int i = 0; i < x->n; i++)
        if (mentions(x->k[i], l)) return 1;
    return 0;
}

/* Whether statement k of the region stmts[i, j) sets one of the block's values, once for the block:
 * an assignment at the region's top level of a value of the block's, to a local no statement before
 * it in the region mentions (which would see the new value, run before the loop, where it saw its
 * own old one). */
static int once_for_block(const blk *R, const tk_ir *b, int i, int j, int k) {
    const tk_ir *x = b->k[k];
    if (!R->fast || x->op != IR_ASSIGN || x->n != 1 || x->local < 0 || !R->uni[x->local] ||
        !same_value(R, x->k[0], b, i, j))
        return 0;
    for (int q = i; q < k; q++)
        if (mentions(b->k[q], x->local)) return 0;
    return 1;
}

/* Every local x assigns (within a region that does more) is not one of the block's values. */
static int drop_defs(blk *R, const tk_ir *x) {
    int changed = 0;
    if ((x->op == IR_ASSIGN || x->op == IR_SETCOMP || x->op == IR_FOR || x->op == IR_LFILL) && x->local >= 0 &&
        R->uni[x->local]) {
        R->uni[x->local] = 0;
        changed = 1;
    }
    for (int i = 0; i < x->n; i++) changed |= drop_defs(R, x->k[i]);
    return changed;
}

static int same_walk(blk *R, const tk_ir *b) {
    int changed = 0, i = 0;
    while (i < b->n) {
        if (!has_barrier(b->k[i])) {
            int j = i;
            while (j < b->n && !has_barrier(b->k[j])) j++;
            for (int k = i; k < j; k++)
                if (!once_for_block(R, b, i, j, k)) changed |= drop_defs(R, b->k[k]);
            i = j;
            continue;
        }
        const tk_ir *x = b->k[i++];
        switch (x->op) {
        case IR_BLOCK: changed |= same_walk(R, x); break;
        case IR_IF: changed |= same_walk(R, x->k[1]) | same_walk(R, x->k[2]); break;
        case IR_WHILE: changed |= same_walk(R, x->k[1]); break;
        case IR_FOR: changed |= same_walk(R, x->k[3]); break; /* its variable: set by uniform() bounds */
        default: break;
        }
    }
    return changed;
}

static void same_values(blk *R, const tk_ir *body, int scope) {
    const tk_spec *S = R->e->S;
    for (int i = 0; i < S->nlocals; i++) {
        const tk_local *l = &S->locals[i];
        R->uni[i] = R->fast && l->scope == scope && l->ty.kind == TY_VALUE && ty_is_scalar(l->ty) &&
                    !ty_is_complex(l->ty) && !l->shared && i != R->pf->local && i != R->pf->vars[0];
    }
    while (same_walk(R, body)) {
    }
}

/* ---------------------------------------------- a stretch's checks first
 * A region whose loop holds a check (an index, a division) cannot be
 * vectorized: a failing check leaves the loop halfway.  With blocks_fast,
 * where every check of a region tests values that no thread changes while
 * the region runs -- constants, t, b, the kernel's values, the block's
 * values, a per-thread local the region does not set, or a local the region
 * sets once, before each of its reads, to such a value (`i = b * B + t`,
 * read through it) -- the checks are first computed for every thread the
 * region's loop runs, in a loop of their own that nothing leaves; where none
 * fails, the region runs a copy without them, and otherwise as written,
 * which fails at the same thread, at the same check, after the same work.
 * Computing a check where the region would not reach it (under a false if)
 * only sends the region to the copy with checks, so the computations
 * allowed are those that cannot trap (no division, no shift). */
typedef struct pre {
    blk *R;
    int *ndef;      /* per local: the statements of the region that set it */
    char *undef;    /* per local: read in the region where not set on every path before */
    tk_ir **env;    /* per local: the value it is set to once, its locals replaced */
    int ok;
} pre;

static void count_defs(pre *Q, const tk_ir *x) {
    if ((x->op == IR_ASSIGN || x->op == IR_SETCOMP || x->op == IR_FOR || x->op == IR_LFILL || x->op == IR_LSTORE) &&
        x->local >= 0)
        Q->ndef[x->local]++;
    for (int i = 0; i < x->n; i++) count_defs(Q, x->k[i]);
}

/* x with its locals replaced by their values, or NULL where it holds something else. */
static tk_ir *fixed(pre *Q, const tk_ir *x) {
    blk *R = Q->R;
    switch (x->op) {
    case IR_CONST: if (x->str) return NULL; break;
    case IR_SHAPE: break;
    case IR_LOCAL:
        if (x->local < 0 || R->e->S->locals[x->local].ty.kind != TY_VALUE) return NULL;
        if (Q->env[x->local]) return ir_clone(R->e->C, Q->env[x->local]);
        if (Q->ndef[x->local] && x->local != R->pf->local) return NULL;
        break;
    case IR_CAST: case IR_UN: case IR_AND: case IR_OR: case IR_SELECT: case IR_WRAP: break;
    case IR_BIN:
        if (x->sub == B_DIV || x->sub == B_FLOORDIV || x->sub == B_MOD || x->sub == B_POW || x->sub == B_SHL ||
            x->sub == B_SHR || x->sub >= B_MATMUL)
            return NULL;
        break;
    default: return NULL;
    }
    tk_ir *c = ir_new(R->e->C, x->op, x->ty, x->line);
    tk_ir **k = c->k;
    int cap = c->cap;
    *c = *x;
    c->k = k;
    c->cap = cap;
    c->n = 0;
    for (int i = 0; i < x->n; i++) {
        tk_ir *y = fixed(Q, x->k[i]);
        if (!y) return NULL;
        ir_push(R->e->C, c, y);
    }
    return c;
}

/* Walk the region in order: the values of the locals it sets once, and whether every check is fixed. */
static void pre_walk(pre *Q, const tk_ir *x) {
    if (!Q->ok) return;
    if (x->op == IR_CHECK) {
        for (int i = 0; i < x->n && Q->ok; i++)
            if (!fixed(Q, x->k[i])) Q->ok = 0;
        return;
    }
    if (x->op == IR_ASSIGN && x->n == 1 && x->local >= 0 && Q->ndef[x->local] == 1 && !Q->undef[x->local] &&
        Q->R->e->S->locals[x->local].ty.kind == TY_VALUE)
        Q->env[x->local] = fixed(Q, x->k[0]);
    for (int i = 0; i < x->n; i++) pre_walk(Q, x->k[i]);
}

static int has_check(const tk_ir *x) {
    if (x->op == IR_CHECK || x->op == IR_WRAP) return 1;
    for (int i = 0; i < x->n; i++)
        if (has_check(x->k[i])) return 1;
    return 0;
}

static int reads_memory(const tk_ir *x);

/* Whether x has no effect: an if with nothing in either way, on a test without a call (what a
 * hoisted check leaves in the copy without checks). */
static int empty_if(const tk_ir *x) {
    return x->op == IR_IF && x->k[1]->n == 0 && x->k[2]->n == 0 && !reads_memory(x->k[0]);
}

/* Statement x without its checks and without the wraps of indices checks_first found not negative
 * (a copy). */
static tk_ir *unchecked(pre *Q, const tk_ir *x) {
    tk_cc *C = Q->R->e->C;
    if (x->op == IR_WRAP && fixed(Q, x->k[0])) return unchecked(Q, x->k[0]);
    tk_ir *c = ir_clone(C, x);
    for (int i = 0; i < c->n; i++) c->k[i] = unchecked(Q, x->k[i]);
    if (c->op == IR_BLOCK) {
        int m = 0;
        for (int i = 0; i < c->n; i++)
            if (c->k[i]->op != IR_CHECK && !empty_if(c->k[i]) && !(c->k[i]->op == IR_BLOCK && !c->k[i]->n))
                c->k[m++] = c->k[i];
        c->n = m;
    }
    return c;
}

static void emit_fails(pre *Q, const tk_ir *x, const char *name) {
    tk_emitter *e = Q->R->e;
    tk_ir *w = x->op == IR_WRAP ? fixed(Q, x->k[0]) : NULL;
    if (w) { /* a negative index: the copy with its wraps */
        I(e); P(e, "%s |= ((int64_t)(", name); ex(e, w); P(e, ") < 0);\n");
    }
    if (x->op == IR_CHECK) {
        tk_ir *c = ir_new(e->C, IR_CHECK, x->ty, x->line);
        tk_ir **k = c->k;
        int cap = c->cap;
        *c = *x;
        c->k = k;
        c->cap = cap;
        c->n = 0;
        for (int i = 0; i < x->n; i++) ir_push(e->C, c, fixed(Q, x->k[i]));
        I(e); P(e, "%s |= (", name); check_fails(e, c); P(e, ");\n");
        return;
    }
    for (int i = 0; i < x->n; i++) emit_fails(Q, x->k[i], name);
}

/* The checks of stmts[i, j) as one test `name` computed over threads lo .. hi - 1 (and the wraps of
 * their indices: whether one is negative), or NULL where the region does not qualify. */
static pre *checks_first(blk *R, tk_ir *b, int i, int j, const char *lo, const char *hi, const char *name) {
    tk_emitter *e = R->e;
    int have = 0;
    for (int k = i; k < j && !have; k++) have = has_check(b->k[k]);
    if (!R->fast || !have) return NULL;
    size_t nl = (size_t)e->S->nlocals + 1;
    pre *P_ = tk_alloc(&e->C->arena, sizeof(pre));
    pre Q = {R, tk_alloc(&e->C->arena, sizeof(int) * nl), tk_alloc(&e->C->arena, nl),
             tk_alloc(&e->C->arena, sizeof(tk_ir *) * nl), 1};
    for (int k = i; k < j; k++) count_defs(&Q, b->k[k]);
    char *saved = R->undef, *def = tk_alloc(&e->C->arena, nl);
    R->undef = Q.undef;
    for (int k = i; k < j; k++) md_stmt(R, b->k[k], def);
    R->undef = saved;
    for (int k = i; k < j && Q.ok; k++) pre_walk(&Q, b->k[k]);
    if (!Q.ok) return NULL;
    *P_ = Q;
    I(e); P(e, "int %s = 0;\n", name);
    I(e); P(e, "for (%s = %s; %s < %s; %s++) {\n", R->t, lo, R->t, hi, R->t);
    e->ind++;
    /* every check again, in order, its operands fixed */
    for (int k = i; k < j; k++) emit_fails(P_, b->k[k], name);
    e->ind--;
    I(e); P(e, "}\n");
    return P_;
}

/* ------------------------------------------------ a stretch's threads
 * With blocks_fast, a region that is one `if` with no else, whose test is
 * t compared with a bound K (`t < K`, `t <= K`, `t > K`, `t >= K`, `t == K`,
 * either way round, or such a compare and more: `t < K and ...`), runs its
 * loop only over the threads whose test can hold, keeping the test: the
 * others would do nothing there, and those left run in the same order,
 * 0 upwards, so nothing a thread reads or writes changes.  The tree levels
 * of a block reduction (`if t < 16: s[t] += s[t + 16]`) then take 16
 * iterations, not B, and a loop with a constant trip count, which the C
 * compiler unrolls or vectorizes where it proves that no iteration reads
 * what an earlier one wrote (it checks that itself; nothing here asserts
 * it).
 *
 * K is computed before the loop, so it may hold only what no thread of the
 * region changes before its own test: integer constants, and value locals
 * other than t and the region's scalars -- a per-thread local (`stride`,
 * an array of B values) is written by its own thread only, which computes
 * its test first, and b and the kernel's values are fixed in the chunk --
 * through casts and + - * min max, which cannot fail.  Where K is per
 * thread, the loop runs from the least to the greatest of the threads'
 * bounds (a loop over the B values before it). */
static int is_t(const blk *R, const tk_ir *x) {
    x = ir_strip(x);
    return x->op == IR_LOCAL && x->local == R->pf->local;
}

/* Whether K may be computed before the region; *lanes: whether it reads a per-thread local. */
static int bound_ok(const blk *R, const tk_ir *x, int *lanes) {
    const tk_local *L = R->e->S->locals;
    switch (x->op) {
    case IR_CONST: return !x->str && x->ty.kind == TY_VALUE && ty_is_int(x->ty);
    case IR_LOCAL:
        if (x->local < 0 || x->local == R->pf->local || R->scalar[x->local] || L[x->local].ty.kind != TY_VALUE ||
            !ty_is_int(L[x->local].ty))
            return 0;
        if (!R->keep[x->local]) *lanes = 1;
        return 1;
    case IR_CAST:
        return x->ty.kind == TY_VALUE && ty_is_int(x->ty) && x->k[0]->ty.kind == TY_VALUE && ty_is_int(x->k[0]->ty) &&
               bound_ok(R, x->k[0], lanes);
    case IR_BIN:
        return (x->sub == B_ADD || x->sub == B_SUB || x->sub == B_MUL || x->sub == B_MIN || x->sub == B_MAX) &&
               x->ty.kind == TY_VALUE && ty_is_int(x->ty) && bound_ok(R, x->k[0], lanes) && bound_ok(R, x->k[1], lanes);
    default: return 0;
    }
}

/* The compare of t with K that test c requires (c itself, or the first operand of an `and`):
 * its operator as `t op K`, or -1. */
static int thread_test(const blk *R, const tk_ir *c, const tk_ir **K, int *lanes) {
    while (c->op == IR_AND && c->n >= 1) c = c->k[0];
    if (c->op != IR_BIN || c->n != 2 || c->aux_ty.kind != TY_VALUE || c->aux_ty.dt != TACK_I64) return -1;
    int op = c->sub, side;
    if (op != B_LT && op != B_LE && op != B_GT && op != B_GE && op != B_EQ) return -1;
    if (is_t(R, c->k[0])) side = 1;
    else if (is_t(R, c->k[1])) side = 0;
    else return -1;
    const tk_ir *k = c->k[side];
    if (k->ty.kind != TY_VALUE || k->ty.dt != TACK_I64 || c->k[1 - side]->ty.dt != TACK_I64) return -1;
    *lanes = 0;
    if (!bound_ok(R, k, lanes)) return -1;
    *K = k;
    if (side == 0) op = op == B_LT ? B_GT : op == B_LE ? B_GE : op == B_GT ? B_LT : op == B_GE ? B_LE : op;
    return op;
}

/* The threads lo <= t < hi whose `t op k` can hold, into lo and hi (C names), from k (a C name). */
static void thread_range(blk *R, int op, const char *k, const char *lo, const char *hi, int widen) {
    tk_emitter *e = R->e;
    long long B = (long long)R->B;
    char clamp[160], next[160]; /* k in 0..B, and k + 1 in 0..B */
    snprintf(clamp, sizeof clamp, "(%s < 0 ? 0 : %s > %lld ? %lld : %s)", k, k, B, B, k);
    snprintf(next, sizeof next, "(%s < 0 ? 0 : %s >= %lld ? %lld : %s + 1)", k, k, B, B, k);
    const char *l = op == B_LT || op == B_LE ? "0" : op == B_GT ? next : clamp;
    const char *h = op == B_LT ? clamp : op == B_LE || op == B_EQ ? next : NULL;
    char hb[32];
    snprintf(hb, sizeof hb, "%lld", B);
    if (!h) h = hb;
    if (!widen) {
        I(e); P(e, "const int64_t %s = %s, %s = %s;\n", lo, l, hi, h);
        return;
    }
    I(e);
    P(e, "{ const int64_t l_ = %s, h_ = %s; if (l_ < %s) %s = l_; if (h_ > %s) %s = h_; }\n", l, h, lo, lo, hi, hi);
}

/* The loop over the threads lo .. hi - 1 of stmts[i, j), the statements without their checks where
 * no_checks is checks_first's (which found that they all pass). */
/* ------------------------------------------- a serial loop outside the threads
 * A region that is one serial loop whose every step every thread takes --
 * `for kk in range(T): acc += sa[ty, kk] * sb[kk, tx]` of the tiled
 * product, its checks gone before it (above) -- ran each thread's whole
 * loop in turn: an in-order float sum per thread, which the C compiler
 * cannot vectorize.  With blocks_fast, where the loop reads the thread's
 * index only as t // C and t % C through locals set once at the top of the
 * body (`ty = t // T`, `tx = t % T`, C dividing B: thread_nest), it runs
 * the other way round: for each step, the threads as a nest t = tq * C + tr
 * over tq and tr, the loop's `ty` read as tq and `tx` as tr, so that
 * `sb[kk, tx]` and `acc` are contiguous over the inner tr and `sa[ty, kk]`
 * fixed in it, which the compiler vectorizes.  Each thread still takes its
 * steps in order, so its values are the same, bit for bit; what changes is
 * only the order between one thread's step and another's, which nothing can
 * see when the loop writes no memory (no array, shared or not, no atomic,
 * no call, no print, no check, no jump) -- no thread then reads what
 * another writes during it -- and its locals are each thread's own
 * (per-thread arrays, or scalars the step sets before reading them:
 * md_stmt said so of the whole region).  Its bounds must be the block's
 * values, so that every thread takes the same steps, and the region must
 * run every thread.  (The same loop the other way round without the nest
 * was measured 1.5x slower on the tiled product: `sa[ty[t] * T + kk]` over
 * t is a gather, which GCC 12 does not vectorize here, and each thread's
 * sum then goes through memory every step.) */
static int stepwise_body(const blk *R, const tk_ir *x, int64_t *C) {
    switch (x->op) {
    case IR_BLOCK: case IR_IF: break;
    case IR_ASSIGN:
        if (x->local < 0 || R->uni[x->local] || x->local == R->pf->local || R->e->S->locals[x->local].shared ||
            (R->keep[x->local] && !R->scalar[x->local]) || R->tfun[x->local])
            return 0;
        break;
    case IR_LOCAL:
        if (x->local == R->pf->local) return 0; /* t itself: only through the nest's locals */
        if (x->local >= 0 && R->tfun[x->local]) {
            int64_t c = R->tfun[x->local] < 0 ? -R->tfun[x->local] : R->tfun[x->local];
            if (*C && *C != c) return 0;
            *C = c;
        }
        break;
    case IR_CONST: case IR_LOAD: case IR_LLOAD: case IR_CAST: case IR_BIN: case IR_UN: case IR_SELECT: case IR_AND:
    case IR_OR: case IR_MATH: case IR_SHAPE: case IR_WRAP:
        break;
    default: return 0; /* stores, atomics, calls, prints, checks, jumps, loops */
    }
    for (int i = 0; i < x->n; i++)
        if (!stepwise_body(R, x->k[i], C)) return 0;
    return 1;
}

/* The nest's C for region body b (one statement), or 0 where the loop cannot run step by step. */
static int64_t stepwise(const blk *R, const tk_ir *b) {
    if (!R->fast || b->n != 1) return 0;
    const tk_ir *f = b->k[0];
    if (f->op != IR_FOR || f->local < 0 || R->uni[f->local] ||
        R->tfun[f->local] || f->local == R->pf->local || (R->keep[f->local] && !R->scalar[f->local]))
        return 0;
    for (int k = 0; k < 3; k++)
        if (!same_value(R, f->k[k], b, 0, b->n) || mentions(f->k[k], f->local)) return 0;
    int64_t C = 0;
    return stepwise_body(R, f->k[3], &C) ? C : 0;
}

/* The nest: tq and tr are C variables; inside it, each local that holds t // C or t % C is a C
 * constant of its own name (shadowing its array of B values, whose lane suffix is dropped there) set
 * to tq or tr, so the loop's `ty` and `tx` read as the nest's counters. */
static void emit_stepwise(blk *R, tk_ir *f, int64_t C) {
    tk_emitter *e = R->e;
    const tk_spec *S = e->S;
    int c = R->ncond++;
    I(e); P(e, "{ /* the loop at line %d step by step, the threads a %lld x %lld nest in each step */\n", f->line,
            (long long)(R->B / C), (long long)C);
    e->ind++;
    I(e); P(e, "const int64_t u%dl_ = ", c); ex(e, f->k[0]); P(e, ", u%dh_ = ", c); ex(e, f->k[1]);
    P(e, ", u%ds_ = ", c); ex(e, f->k[2]); P(e, ";\n");
    I(e);
    P(e, "for (int64_t k%d_ = 0, n%d_ = tk_trip(u%dl_, u%dh_, u%ds_); k%d_ < n%d_; k%d_++) {\n", c, c, c, c, c, c, c,
      c);
    e->ind++;
    if (e->T->polls && !e->nopoll) { I(e); P(e, "if (TK_POLL(%lld)) return;\n", (long long)R->B); }
    I(e); P(e, "for (int64_t tq%d_ = 0; tq%d_ < %lld; tq%d_++) {\n", c, c, (long long)(R->B / C), c);
    e->ind++;
    I(e); P(e, "for (int64_t tr%d_ = 0; tr%d_ < %lld; tr%d_++) {\n", c, c, (long long)C, c);
    e->ind++;
    I(e); P(e, "%s = tq%d_ * %lld + tr%d_;\n", R->t, c, (long long)C, c);
    char *was = tk_alloc(&e->C->arena, (size_t)S->nlocals + 1);
    for (int l = 0; l < S->nlocals; l++) {
        was[l] = R->keep[l];
        if (!R->tfun[l] || !mentions(f->k[3], l)) continue;
        R->keep[l] = 1; /* its name alone: the constant below */
        I(e); P(e, "const %s ", ctype(e, S->locals[l].ty.dt)); local_name(e, l);
        P(e, " = (%s)%s%d_; (void)", ctype(e, S->locals[l].ty.dt), R->tfun[l] > 0 ? "tq" : "tr", c);
        local_name(e, l); P(e, ";\n");
    }
    I(e); local_name(e, f->local);
    P(e, " = (%s)(int64_t)((uint64_t)u%dl_ + (uint64_t)k%d_ * (uint64_t)u%ds_);\n",
      ctype(e, S->locals[f->local].ty.dt), c, c, c);
    for (int k = 0; k < f->k[3]->n; k++) st(e, f->k[3]->k[k]);
    for (int l = 0; l < S->nlocals; l++) R->keep[l] = was[l];
    for (int d = 0; d < 3; d++) {
        e->ind--;
        I(e); P(e, "}\n");
    }
    e->ind--;
    I(e); P(e, "}\n");
}

/* The loop over the threads lo .. hi - 1 of stmts[i, j), the statements without their checks where
 * no_checks is checks_first's (which found that they all pass); `all`: lo .. hi is every thread. */
static void thread_loop(blk *R, tk_ir *b, int i, int j, const char *lo, const char *hi, pre *no_checks, int all) {
    tk_emitter *e = R->e;
    tk_ir *body = ir_new(e->C, IR_BLOCK, ty_void(), b->line);
    for (int k = i; k < j; k++)
        if (!no_checks) ir_push(e->C, body, b->k[k]);
        else if (b->k[k]->op != IR_CHECK) {
            tk_ir *x = unchecked(no_checks, b->k[k]);
            if (!empty_if(x) && !(x->op == IR_BLOCK && !x->n)) ir_push(e->C, body, x);
        }
    int64_t C = all ? stepwise(R, body) : 0;
    if (C) {
        emit_stepwise(R, body->k[0], C);
        return;
    }
    I(e); P(e, "for (%s = %s; %s < %s; %s++) {\n", R->t, lo, R->t, hi, R->t);
    e->ind++;
    for (int k = 0; k < body->n; k++) st(e, body->k[k]);
    e->ind--;
    I(e); P(e, "}\n");
}

static void region(blk *R, tk_ir *b, int i, int j) {
    tk_emitter *e = R->e;
    const tk_ir *K = NULL;
    int lanes = 0, op = -1;
    if (R->fast) { /* the block's values first, once; the rest in the loop */
        tk_ir *rest = ir_new(e->C, IR_BLOCK, ty_void(), b->line);
        int once = 0;
        for (int k = i; k < j; k++)
            if (!once_for_block(R, b, i, j, k)) ir_push(e->C, rest, b->k[k]);
            else {
                if (!once++) { I(e); P(e, "/* the block's values, once for every thread */\n"); }
                st(e, b->k[k]);
            }
        if (!rest->n) return;
        b = rest;
        i = 0;
        j = rest->n;
    }
    if (!R->fast) {
        char B[32];
        snprintf(B, sizeof B, "%lld", (long long)R->B);
        thread_loop(R, b, i, j, "0", B, NULL, 0);
        return;
    }
    if (j == i + 1 && b->k[i]->op == IR_IF && b->k[i]->k[2]->n == 0) op = thread_test(R, b->k[i]->k[0], &K, &lanes);
    int c = R->ncond++;
    char k[32], lo[32], hi[32], ok[32];
    snprintf(k, sizeof k, "u%dk_", c);
    snprintf(lo, sizeof lo, "u%dlo_", c);
    snprintf(hi, sizeof hi, "u%dhi_", c);
    snprintf(ok, sizeof ok, "u%dbad_", c);
    I(e); P(e, "{ /* a stretch */\n");
    e->ind++;
    if (op < 0) {
        I(e); P(e, "const int64_t %s = 0, %s = %lld;\n", lo, hi, (long long)R->B);
    } else if (lanes) { /* only the threads whose test can hold */
        I(e); P(e, "int64_t %s = %lld, %s = 0; /* the threads whose test at line %d can hold */\n", lo,
                (long long)R->B, hi, b->k[i]->line);
        I(e); P(e, "for (%s = 0; %s < %lld; %s++) {\n", R->t, R->t, (long long)R->B, R->t);
        e->ind++;
        I(e); P(e, "const int64_t %s = (int64_t)(", k); ex(e, (tk_ir *)K); P(e, ");\n");
        thread_range(R, op, k, lo, hi, 1);
        e->ind--;
        I(e); P(e, "}\n");
    } else {
        I(e); P(e, "const int64_t %s = (int64_t)(", k); ex(e, (tk_ir *)K);
        P(e, "); /* the threads whose test at line %d can hold */\n", b->k[i]->line);
        thread_range(R, op, k, lo, hi, 0);
    }
    pre *Q = checks_first(R, b, i, j, lo, hi, ok);
    if (Q) {
        I(e); P(e, "if (!%s) { /* no check fails: the stretch without them */\n", ok);
        e->ind++;
        thread_loop(R, b, i, j, lo, hi, Q, op < 0);
        e->ind--;
        I(e); P(e, "} else {\n");
        e->ind++;
        thread_loop(R, b, i, j, lo, hi, NULL, op < 0);
        e->ind--;
        I(e); P(e, "}\n");
    } else {
        thread_loop(R, b, i, j, lo, hi, NULL, op < 0);
    }
    e->ind--;
    I(e); P(e, "}\n");
}

/* Whether x reads memory (an array, a shared one, through a call) or an atomic's result. */
static int reads_memory(const tk_ir *x) {
    if (x->op == IR_LOAD || x->op == IR_LLOAD || x->op == IR_CALL || x->op == IR_ATOMIC) return 1;
    for (int i = 0; i < x->n; i++)
        if (reads_memory(x->k[i])) return 1;
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
    if (!reads_memory(x)) return;
    I(e); P(e, "for (%s = 1; %s < %lld; %s++) if ((", R->t, R->t, (long long)R->B, R->t);
    ex(e, x);
    P(e, ") != %s) { %s(ctx, %d, 0, 0); return; }\n", name, e->D->fail_fn ? e->D->fail_fn : "abi->fail", R->pf->param);
}

static void seq(blk *R, tk_ir *b) {
    tk_emitter *e = R->e;
    int i = 0;
    while (i < b->n) {
        if (!has_barrier(b->k[i])) {
            int j = i;
            while (j < b->n && !has_barrier(b->k[j])) j++;
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

/* ------------------------------------------------------ t // C and t % C
 * (For emit_stepwise.)  A per-thread integer local set once in the whole
 * body, at the top level of its first region before anything there mentions
 * it, to t // C or t % C for a constant C dividing B, holds that value in
 * thread t wherever it is read afterwards: every later region, and the rest
 * of the first.  No region before the first exists, so that is everywhere
 * it can be read but the statements before it, which do not mention it. */
static int sets_of(const tk_ir *x, int l) {
    int n = (x->op == IR_ASSIGN || x->op == IR_SETCOMP || x->op == IR_FOR || x->op == IR_LFILL) && x->local == l;
    for (int i = 0; i < x->n; i++) n += sets_of(x->k[i], l);
    return n;
}

static void thread_nest(blk *R, const tk_ir *body) {
    const tk_spec *S = R->e->S;
    int j = 0;
    while (j < body->n && !has_barrier(body->k[j])) j++;
    for (int k = 0; k < j; k++) {
        const tk_ir *x = body->k[k];
        if (x->op != IR_ASSIGN || x->n != 1 || x->local < 0 || x->local == R->pf->local) continue;
        const tk_local *l = &S->locals[x->local];
        if (l->ty.kind != TY_VALUE || !ty_is_int(l->ty) || l->shared) continue;
        const tk_ir *v = ir_strip(x->k[0]), *c;
        if (v->op != IR_BIN || (v->sub != B_FLOORDIV && v->sub != B_MOD) || !is_t(R, v->k[0])) continue;
        c = ir_strip(v->k[1]);
        if (c->op != IR_CONST || !ty_is_int(c->ty) || c->c.i <= 0 || R->B % c->c.i || sets_of(body, x->local) != 1)
            continue;
        int seen = 0;
        for (int q = 0; q < k && !seen; q++) seen = mentions(body->k[q], x->local);
        if (!seen) R->tfun[x->local] = v->sub == B_FLOORDIV ? c->c.i : -c->c.i;
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
    same_values(&R, s->k[1], scope);
    if (R.fast) thread_nest(&R, s->k[1]);
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
