/*
 * blocks_fast.c -- a blocks loop's stretches on the CPU, fast: what
 * cpu/emit_blocks.c writes for a region (a stretch between barriers) with
 * config.def's blocks_fast on, the default; off gives the general layout,
 * each region a loop over all B threads, which the tests compare with this
 * bit for bit (tests/python/test_blocks_fast.py).
 *
 * A block reduction written as the docs write it spent its time on work
 * the threads do not need: `stride`, the same in every thread, was an array of B values
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
 *   - the block's values (cb_same_values): a local every thread holds the same
 *     value of is one scalar, and its assignments run once for the block;
 *   - one-region scalars set before every use (cb_md_stmt), not only those
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

#include "compiler/cpu/blocks.h"

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

void cb_md_stmt(blk *R, const tk_ir *s, char *def) {
    int nl = R->e->S->nlocals;
    switch (s->op) {
    case IR_BLOCK:
        for (int i = 0; i < s->n; i++) cb_md_stmt(R, s->k[i], def);
        return;
    case IR_ASSIGN: case IR_LFILL:
        for (int i = 0; i < s->n; i++) md_reads(R, s->k[i], def);
        if (s->local >= 0) def[s->local] = 1;
        return;
    case IR_IF: {
        md_reads(R, s->k[0], def);
        char *a = md_copy(R, def), *b = md_copy(R, def);
        cb_md_stmt(R, s->k[1], a);
        cb_md_stmt(R, s->k[2], b);
        for (int l = 0; l < nl; l++) def[l] = a[l] && b[l];
        return;
    }
    case IR_WHILE:
        md_reads(R, s->k[0], def);
        cb_md_stmt(R, s->k[1], md_copy(R, def));
        return;
    case IR_FOR: {
        for (int i = 0; i < 3; i++) md_reads(R, s->k[i], def);
        char *a = md_copy(R, def);
        if (s->local >= 0) a[s->local] = 1;
        cb_md_stmt(R, s->k[3], a);
        return;
    }
    default: md_reads(R, s, def); return;
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
        if (!cb_has_barrier(b->k[i])) {
            int j = i;
            while (j < b->n && !cb_has_barrier(b->k[j])) j++;
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

void cb_same_values(blk *R, const tk_ir *body, int scope) {
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

/* Whether x has no effect: an if with nothing in either way, on a test without a call (what a
 * hoisted check leaves in the copy without checks). */
static int empty_if(const tk_ir *x) {
    return x->op == IR_IF && x->k[1]->n == 0 && x->k[2]->n == 0 && !cb_reads_memory(x->k[0]);
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
    for (int k = i; k < j; k++) cb_md_stmt(R, b->k[k], def);
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

/* ------------------------------------------------------------ a stretch
 * The region stmts[i, j) with blocks_fast: its assignments of the block's
 * values first, once; then the loop over the threads whose test can hold,
 * after its checks where they can go first. */
void cb_fast_region(blk *R, tk_ir *b, int i, int j) {
    tk_emitter *e = R->e;
    const tk_ir *K = NULL;
    int lanes = 0, op = -1;
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

void cb_thread_nest(blk *R, const tk_ir *body) {
    const tk_spec *S = R->e->S;
    int j = 0;
    while (j < body->n && !cb_has_barrier(body->k[j])) j++;
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

