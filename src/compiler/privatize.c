/*
 * privatize.c -- reduction privatization for `a[k] += v` in parallel loops.
 *
 * Inside a parallel loop `a[k] += v` is an atomic add.  When every
 * iteration adds into the same cell (`k` does not change in the loop, as in
 * `total[0] += x[i]`), all threads hammer one cache line with
 * compare-and-swap loops.  Instead each chunk sums into a private local and
 * adds it to the cell once, atomically, when the chunk ends.
 *
 * Legal when, inside the loop, the array is only ever the target of such
 * statement-form atomic adds/subtracts (no loads, stores, other atomics or
 * calls that receive it): then no iteration can observe the cell's
 * intermediate values, and integer wrapping addition and (already
 * unordered) float addition give what the atomics would.  The per-iteration
 * index checks stay (or were hoisted), so the flush writes a cell that a
 * check has approved; a chunk that never reached the statement has a zero
 * sum and writes nothing.  A chunk stopped by a failing check does not
 * flush; the launch reports the error.
 *
 * The PFOR node keeps the flushes in `red`: atomics whose value is the
 * private sum.  The emitter writes them after the chunk's loop.
 *
 * Histograms.  When the index varies (`hist[keys[i]] += 1`), the cells are
 * many but usually few enough to copy: OpenMP programs count into a private
 * array per thread and merge at the end, and atomics on a small array are
 * 10-40x slower than that, getting slower with more threads as they fight
 * over the same lines.  The legality rule is the same (the array is only
 * ever the target of statement-form atomic adds/subtracts in the loop); the
 * size is known only at run time, so the choice is made per chunk.  The
 * first such array of a loop (C dialect only: a GPU has no per-chunk stack
 * to spare) is marked in the PFOR's `hist`, and the emitter writes the
 * chunk twice: when the array has at most 16384 elements and 64 KiB, and
 * the chunk is at least four times as long as the array has elements, the
 * chunk zeroes a private copy on its stack, adds into it with the ordinary
 * wrapping (integer) or unordered (float) arithmetic, and at its end adds
 * each non-zero cell into the array atomically; otherwise it runs the
 * atomics as before.  The copy has two cells per element, for the indices
 * -n..n-1 of a 1-D array: a checked index needs no wrap there, and the
 * flush adds the two cells of each element (with the range check as one
 * unsigned compare, 10% off a 256-bin count of 16M keys).  Index checks
 * stay per iteration, so a failing check returns before the flush and the
 * private counts of that chunk are lost with the error.  The array's fixed-cell adds go through the copy too (it
 * is not given private sums); any further arrays of the loop added into at
 * varying indices keep their atomics.
 */
#include <string.h>

#include "compiler/compiler.h"

typedef struct cand {
    tk_ir **slot;   /* where the IR_EVAL statement sits */
    tk_ir *atom;
} cand;

typedef struct privatizer {
    tk_cc *C;
    tk_spec *S;
    tk_ir *loop;
    uint64_t bad;   /* arrays that cannot be privatized in this loop */
    uint64_t vary;  /* arrays with a statement-form add/sub at a varying index */
    cand *c;
    int n, cap;
} privatizer;

static void mark_expr(privatizer *p, tk_ir *x) {
    if (!x) return;
    if (x->op == IR_LOAD || x->op == IR_ATOMIC) p->bad |= (uint64_t)1 << (x->param & 63);
    if (x->op == IR_ARRAY) p->bad |= (uint64_t)1 << (x->param & 63);
    for (int i = 0; i < x->n; i++) mark_expr(p, x->k[i]);
}

static void add_cand(privatizer *p, tk_ir **slot, tk_ir *atom) {
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 8;
        cand *nc = tk_alloc(&p->C->arena, sizeof(cand) * (size_t)cap);
        if (p->n) memcpy(nc, p->c, sizeof(cand) * (size_t)p->n);
        p->c = nc;
        p->cap = cap;
    }
    p->c[p->n].slot = slot;
    p->c[p->n].atom = atom;
    p->n++;
}

static void scan(privatizer *p, tk_ir **slot) {
    tk_ir *s = *slot;
    switch (s->op) {
    case IR_EVAL:
        if (s->k[0]->op == IR_ATOMIC && (s->k[0]->sub == A_ADD || s->k[0]->sub == A_SUB) &&
            !ty_is_complex(s->k[0]->ty)) { /* a complex cell keeps its atomics (complex.c) */
            tk_ir *a = s->k[0];
            int inv = 1;
            for (int i = 1; i < a->n; i++)
                if (!ir_invariant(a->k[i], p->loop)) inv = 0;
            mark_expr(p, a->k[0]);
            for (int i = 1; i < a->n; i++) mark_expr(p, a->k[i]);
            if (inv) add_cand(p, slot, a);
            else p->vary |= (uint64_t)1 << (a->param & 63);
            return;
        }
        mark_expr(p, s->k[0]);
        return;
    case IR_STORE:
        p->bad |= (uint64_t)1 << (s->param & 63);
        for (int i = 0; i < s->n; i++) mark_expr(p, s->k[i]);
        return;
    case IR_BLOCK:
        for (int i = 0; i < s->n; i++) scan(p, &s->k[i]);
        return;
    case IR_IF:
        mark_expr(p, s->k[0]);
        scan(p, &s->k[1]);
        scan(p, &s->k[2]);
        return;
    case IR_WHILE:
        mark_expr(p, s->k[0]);
        scan(p, &s->k[1]);
        return;
    case IR_FOR:
        for (int i = 0; i < 3; i++) mark_expr(p, s->k[i]);
        scan(p, &s->k[3]);
        return;
    case IR_PRINT:
        for (int i = 0; i < s->n; i++)
            if (!s->k[i]->str) mark_expr(p, s->k[i]);
        return;
    default:
        for (int i = 0; i < s->n; i++) mark_expr(p, s->k[i]);
        return;
    }
}

static int same(const tk_ir *a, const tk_ir *b) {
    if (a->op != b->op || a->sub != b->sub || a->n != b->n || a->local != b->local || a->param != b->param ||
        a->aux != b->aux || !ty_eq(a->ty, b->ty))
        return 0;
    if (a->op == IR_CONST && a->c.u != b->c.u) return 0;
    for (int i = 0; i < a->n; i++)
        if (!same(a->k[i], b->k[i])) return 0;
    return 1;
}

static int new_local(tk_cc *C, tk_spec *S, tk_type ty, int scope) {
    int i = tk_new_local(C, S, tk_fmt(&C->arena, "_sum%d", S->nlocals), ty, scope);
    S->locals[i].declared = 1;
    return i;
}

static void privatize_loop(tk_cc *C, tk_spec *S, tk_ir *loop) {
    privatizer p;
    memset(&p, 0, sizeof p);
    p.C = C;
    p.S = S;
    p.loop = loop;
    scan(&p, &loop->k[loop->aux]);
    /* a private copy for the first eligible histogram array (bit 63 stands for
     * every array past it, so only params below 63 qualify) */
    for (int q = 0; q < 63 && q < S->nparams && C->dialect->pfor_as_function; q++) {
        if (!(p.vary >> q & 1) || (p.bad >> q & 1) || S->ptypes[q].kind != TY_ARRAY) continue;
        int dt = S->ptypes[q].dt, kind = dt_kind((tack_dtype)dt);
        if (!ty_is_scalar(ty_value(dt)) || dt == TACK_F16 || kind == TACK_KIND_BOOL || kind == TACK_KIND_COMPLEX) continue;
        loop->hist = q + 1;
        break;
    }
    /* other arrays added into at varying indices keep their atomics; the
     * histogram array's fixed cells go through its private copy too */
    p.bad |= p.vary;
    int scope = S->locals[loop->vars[0]].scope;
    tk_ir *red = NULL;
    int *acc = tk_alloc(&C->arena, sizeof(int) * (size_t)(p.n + 1));
    for (int i = 0; i < p.n; i++) {
        tk_ir *a = p.c[i].atom;
        if (p.bad >> (a->param & 63) & 1) continue;
        /* one private sum per distinct cell */
        int found = -1;
        for (int j = 0; j < i && found < 0; j++) {
            tk_ir *b = p.c[j].atom;
            if (acc[j] >= 0 && b->param == a->param && b->n == a->n) {
                int eq = 1;
                for (int k = 1; k < a->n; k++)
                    if (!same(a->k[k], b->k[k])) eq = 0;
                if (eq) found = acc[j];
            }
        }
        if (found < 0) {
            found = new_local(C, S, a->ty, scope);
            if (!red) red = ir_new(C, IR_BLOCK, ty_void(), loop->line);
            tk_ir *flush = ir_new(C, IR_ATOMIC, a->ty, a->line);
            flush->sub = A_ADD;
            flush->param = a->param;
            tk_ir *v = ir_new(C, IR_LOCAL, a->ty, a->line);
            v->local = found;
            ir_push(C, flush, v);
            for (int k = 1; k < a->n; k++) ir_push(C, flush, a->k[k]);
            ir_push(C, red, flush);
        }
        acc[i] = found;
        /* the statement becomes  sum = sum +/- value */
        tk_ir *sum = ir_new(C, IR_LOCAL, a->ty, a->line);
        sum->local = found;
        tk_ir *op = ir_new(C, IR_BIN, a->ty, a->line);
        op->sub = a->sub == A_ADD ? B_ADD : B_SUB;
        op->aux_ty = a->ty;
        ir_push(C, op, sum);
        ir_push(C, op, a->k[0]);
        tk_ir *as = ir_new(C, IR_ASSIGN, ty_void(), a->line);
        as->local = found;
        ir_push(C, as, op);
        *p.c[i].slot = as;
    }
    for (int i = 0; i < p.n; i++)
        if (p.bad >> (p.c[i].atom->param & 63) & 1) acc[i] = -1;
    loop->red = red;
}

static void walk(tk_cc *C, tk_spec *S, tk_ir *s) {
    if (s->op == IR_PFOR) {
        privatize_loop(C, S, s);
        return;
    }
    if (s->op == IR_BLOCK || s->op == IR_IF)
        for (int i = 0; i < s->n; i++) walk(C, S, s->k[i]);
}

void tk_privatize(tk_cc *C) {
    tk_spec *K = C->specs[0];
    if (K->body) walk(C, K, K->body);
}
