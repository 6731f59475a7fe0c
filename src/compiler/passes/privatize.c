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
 * private sum.  The emitter writes them after the chunk's loop.  A
 * component of a vector element (`acc[0].x += v`, an IR_ATOMIC with comp)
 * is a cell of its own: a sum per component.  Only these fixed cells: an
 * array added into one component at a varying index gets no histogram copy
 * (the copy's adds are whole elements), and its own-element adds stay
 * atomic (the owner rewrite below makes whole-element stores).
 *
 * A vector or matrix cell (`p[0] += m[i] * v[i]`, a total momentum) gets a
 * private sum of its type on the CPU too, flushed as one atomic per
 * component; on a GPU, whose flush hooks (a warp's or sub-group's reduction,
 * layout_grid.c) reduce scalars, a scalar sum per component, each reduced
 * across the warp before its one atomic, where every thread otherwise ran an
 * atomic per component into the same address.  A vector
 * or matrix array added into at varying indices (Warp's force scatter,
 * `f[j] += force`) is a histogram array as below, its copies counting
 * components (emit.h's hist_dt and hist_k): 2^20 vec3 forces into 64 cells
 * took 2.3-2.5 ms so, 65-71 ms on per-component atomics (2 cores, load 14).
 *
 * Running minima and maxima.  `tack.atomic_max(err, 0, abs(new[i] - old[i]))`
 * (a Jacobi solver's convergence test, as Numba ports write it) and
 * `tack.atomic_min` into a fixed cell, as statements (the old value
 * unused), get a private running min/max per chunk on a chunked (CPU)
 * target, under the same rule: the array is only ever the target of such
 * statements in the loop.  The statement becomes `m = v > m ? v : m`
 * (`<` for a min): the atomic's own test, so a NaN value changes nothing
 * and a zero equal to m leaves m's sign, the first zero of the chunk winning
 * as it would with the chunk's atomics in order.  m starts at the type's
 * extreme (-inf for a float max, the smallest integer, 0 for an unsigned
 * one), which no atomic moves a cell past, and the flush (an atomic min/max,
 * its sub in `red`) runs only when m moved off it: a chunk that never
 * reached the statement, or reached it only with NaNs, stores nothing, and
 * a NaN cell stays NaN because `v > NaN` is false in the flush as in every
 * atomic.  The emitter starts m; it may run the chunk's loop in SIMD
 * lanes (a reduction(max) over lanes, no sum streams), whose order decides
 * only the sign of a zero result, and then runs a float loop that ends at
 * zero again in order (emit_inner.c, rerun_loop).
 * One array may hold adds, mins and maxes only in cells of their own: each
 * kind's statements at constant indices that differ from every other
 * kind's in some axis (`extremes[0]` min'd, `extremes[1]` max'd); any
 * other mix, or a min/max at a varying index, keeps its atomics.  A GPU
 * keeps its atomics too (its flush hooks reduce sums).
 *
 * Histograms.  When the index varies (`hist[keys[i]] += 1`), the cells are
 * many but usually few enough to copy: OpenMP programs count into a private
 * array per thread and merge at the end, and atomics on a small array are
 * 10-40x slower than that, getting slower with more threads as they fight
 * over the same lines.  The legality rule is the same (the array is only
 * ever the target of statement-form atomic adds/subtracts in the loop); the
 * size is known only at run time, so the choice is made per chunk.  Each
 * such array of a loop, up to TK_MAX_HIST (where a parallel loop runs in
 * chunks, target.h's TK_LOOPS_CHUNKED: a GPU has no per-chunk stack to
 * spare), is marked in the PFOR's `hist`: a loop that
 * fills a count and a weighted histogram together kept one on atomics,
 * 3.13 ms for both against 0.83 ms and 0.44 ms for each alone.  The emitter
 * writes the chunk twice: when an array has at most 16384 elements and fits
 * its share of TK_HIST_STACK bytes (one or two arrays: 128 KiB each), and
 * the chunk is at least four times as long as the array has elements, the
 * chunk zeroes a private copy on its stack, adds into it with the ordinary
 * wrapping (integer) or unordered (float) arithmetic, and at its end adds
 * each non-zero cell into the array atomically; the copy version runs when
 * any array qualifies, and arrays that do not run their atomics there; else
 * the whole loop runs the atomics as before.  A copy has two cells per
 * element, for the indices -n..n-1 of a 1-D array: a checked index needs no
 * wrap there, and the flush adds the two cells of each element (with the
 * range check as one unsigned compare, 10% off a 256-bin count of 16M
 * keys).  Index checks stay per iteration, so a failing check returns
 * before the flush and the private counts of that chunk are lost with the
 * error.  Where the copies of every histogram array of the loop, one per
 * thread, fit TK_HIST_STACK bytes, the entry keeps them instead (emit_cpu.c,
 * hist_slots): each piece adds into its thread's copy and the entry merges
 * them after the loop, once, rather than every piece zeroing and flushing
 * its own.  A histogram array's fixed-cell adds go through its copy too (it
 * is not given private sums); arrays past the first TK_MAX_HIST added into
 * at varying indices keep their atomics.
 *
 * Cells the iteration owns.  `C[i, j] += a * b` in a loop over i is an
 * atomic add by the language's rule, yet no other iteration names row i:
 * the add needs no atomicity, and the compare-and-swap loop of a float
 * atomic cost 31x in a matmul (6.85 s against 0.22 s for the same kernel
 * written `C[i, j] = C[i, j] + ...`).  Before privatizing, a statement-form
 * add/subtract becomes a plain read-modify-write (IR_STORE ST_RMW, the
 * form lowering gives `*=` on the own element) when its element is the
 * iteration's own by the rule verify.c checks for ST_RMW -- for each of the
 * loop's variables one index is a local that is that variable (unassigned
 * in the body) or one assigned once at the body's top from an own local
 * plus or minus a value the loop does not change, or times a non-zero
 * constant -- made narrower here: no negative-index wrap (i and i - n name
 * one element), no symbolic factor (it could be 0).  The same rule holds on
 * every dialect: a GPU thread runs whole iterations.  And only when no
 * other iteration can add into that element another way: every atomic on
 * the array in the loop is such a statement with the same indices on the
 * owning axes, the array is not passed to a call (a @tack.func's `+=`
 * stays atomic), and no other array of its dtype -- which could be a view
 * of the same memory -- has atomics in the loop or is passed to a call.
 */
#include <string.h>

#include "compiler/compiler.h"
#include "compiler/target.h"

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
    uint64_t comp;  /* arrays with an add/sub into one component (a[k].x += v): no histogram copy */
    uint64_t kind[3]; /* arrays with statement-form adds/subs, atomic mins, atomic maxes: one kind an array */
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

static int kind_of(const tk_ir *a) { return a->sub == A_MIN ? 1 : a->sub == A_MAX ? 2 : 0; }

/* A statement-form tack.atomic_min/max into a scalar cell that a chunk can
 * keep a running min/max of: on a chunked (CPU) target, whose chunk flushes
 * it; a float or an integer of a whole element. */
static int minmax_ok(privatizer *p, const tk_ir *a) {
    if ((a->sub != A_MIN && a->sub != A_MAX) || a->comp || p->C->target->loops != TK_LOOPS_CHUNKED ||
        !ty_is_scalar(a->ty) || dt_is_half(a->ty.dt))
        return 0;
    int kind = dt_kind((tack_dtype)a->ty.dt);
    return kind == TACK_KIND_INT || kind == TACK_KIND_UINT || kind == TACK_KIND_FLOAT;
}

static void scan(privatizer *p, tk_ir **slot) {
    tk_ir *s = *slot;
    switch (s->op) {
    case IR_EVAL:
        if (s->k[0]->op == IR_ATOMIC && minmax_ok(p, s->k[0])) {
            tk_ir *a = s->k[0];
            uint64_t bit = (uint64_t)1 << (a->param & 63);
            p->kind[kind_of(a)] |= bit;
            int inv = 1;
            for (int i = 1; i < a->n; i++)
                if (!ir_invariant(a->k[i], p->loop)) inv = 0;
            for (int i = 0; i < a->n; i++) mark_expr(p, a->k[i]);
            if (inv) add_cand(p, slot, a);
            else p->bad |= bit; /* a running min/max per fixed cell only: no copy of the array */
            return;
        }
        if (s->k[0]->op == IR_ATOMIC && (s->k[0]->sub == A_ADD || s->k[0]->sub == A_SUB) &&
            !ty_is_complex(s->k[0]->ty) && /* a complex cell keeps its atomics (complex.c) */
            (ty_is_scalar(s->k[0]->ty) || ty_is_vector(s->k[0]->ty) || ty_is_matrix(s->k[0]->ty) ||
             p->C->target->loops == TK_LOOPS_CHUNKED)) {
            /* a vector or matrix cell: a private sum of its type where a chunk's end flushes it (the
             * CPU's, emit_cpu.c); on a GPU, whose flush hooks reduce scalars across a warp, one
             * scalar sum per component (privatize_loop) */
            tk_ir *a = s->k[0];
            if (a->comp) p->comp |= (uint64_t)1 << (a->param & 63);
            p->kind[0] |= (uint64_t)1 << (a->param & 63);
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

/* ------------------------------------------------ cells the iteration owns */
typedef struct owner {
    tk_cc *C;
    tk_spec *S;
    tk_ir *loop;
    uint32_t *own;  /* per local: the loop variables it is injective in */
    uint64_t other; /* arrays with atomics that are not candidates, or passed to calls */
    uint64_t atom;  /* arrays with atomics */
    cand *c;
    int n, cap;
} owner;

static int assigns(const tk_ir *s, int local) {
    if (!s) return 0;
    int n = (s->op == IR_ASSIGN || s->op == IR_SETCOMP || s->op == IR_FOR) && s->local == local;
    if (s->op == IR_PFOR)
        for (int d = 0; d < s->aux; d++) n += s->vars[d] == local;
    for (int i = 0; i < s->n; i++) n += assigns(s->k[i], local);
    return n;
}

static const tk_ir *strip64(const tk_ir *x) {
    while (x->op == IR_CAST && ty_is_int(x->ty) && dt_bits((tack_dtype)x->ty.dt) == 64 && ty_is_int(x->k[0]->ty) &&
           dt_bits((tack_dtype)x->k[0]->ty.dt) == 64)
        x = x->k[0];
    return x;
}

/* The loop variables x is injective in (a mask); loop NULL: only a local. */
static uint32_t own_of(owner *o, const tk_ir *x, const tk_ir *loop) {
    x = strip64(x);
    if (x->op == IR_LOCAL) return x->local >= 0 && x->local < o->S->nlocals ? o->own[x->local] : 0;
    if (!loop || x->op != IR_BIN || x->n != 2 || !ty_is_int(x->ty)) return 0;
    if (x->sub == B_ADD) {
        if (ir_invariant(x->k[1], loop)) return own_of(o, x->k[0], loop);
        if (ir_invariant(x->k[0], loop)) return own_of(o, x->k[1], loop);
    }
    if (x->sub == B_SUB && ir_invariant(x->k[1], loop)) return own_of(o, x->k[0], loop);
    if (x->sub == B_MUL) {
        if (x->k[1]->op == IR_CONST && x->k[1]->c.i != 0) return own_of(o, x->k[0], loop);
        if (x->k[0]->op == IR_CONST && x->k[0]->c.i != 0) return own_of(o, x->k[1], loop);
    }
    return 0;
}

static void own_expr(owner *o, tk_ir *x) {
    if (x->op == IR_ATOMIC) o->other |= (uint64_t)1 << (x->param & 63), o->atom |= (uint64_t)1 << (x->param & 63);
    if (x->op == IR_ARRAY) o->other |= (uint64_t)1 << (x->param & 63);
    for (int i = 0; i < x->n; i++) own_expr(o, x->k[i]);
}

static void own_scan(owner *o, tk_ir **slot) {
    tk_ir *s = *slot;
    if (s->op == IR_EVAL && s->k[0]->op == IR_ATOMIC && (s->k[0]->sub == A_ADD || s->k[0]->sub == A_SUB) &&
        !s->k[0]->comp) {
        tk_ir *a = s->k[0];
        for (int i = 0; i < a->n; i++) own_expr(o, a->k[i]);
        o->atom |= (uint64_t)1 << (a->param & 63);
        if (o->n == o->cap) {
            int cap = o->cap ? o->cap * 2 : 8;
            cand *nc = tk_alloc(&o->C->arena, sizeof(cand) * (size_t)cap);
            if (o->n) memcpy(nc, o->c, sizeof(cand) * (size_t)o->n);
            o->c = nc;
            o->cap = cap;
        }
        o->c[o->n].slot = slot;
        o->c[o->n].atom = a;
        o->n++;
        return;
    }
    if (s->op >= IR_BLOCK) {
        for (int i = 0; i < s->n; i++) {
            if (s->k[i]->op >= IR_BLOCK) own_scan(o, &s->k[i]);
            else own_expr(o, s->k[i]);
        }
        return;
    }
    own_expr(o, s);
}

static int same(const tk_ir *a, const tk_ir *b);

/* The owning axes of atomic a (a mask of axes), 0 unless they cover every
 * loop variable. */
static uint32_t owning_axes(owner *o, const tk_ir *a, int ndims) {
    uint32_t all = 0, axes = 0, need = (1u << ndims) - 1;
    for (int i = 1; i < a->n; i++) {
        uint32_t m = own_of(o, a->k[i], NULL);
        if (m) axes |= 1u << (i - 1);
        all |= m;
    }
    return (all & need) == need ? axes : 0;
}

static void own_loop(tk_cc *C, tk_spec *S, tk_ir *loop) {
    tk_ir *body = loop->k[loop->aux];
    if (loop->aux < 1 || loop->aux > 31) return;
    owner o;
    memset(&o, 0, sizeof o);
    o.C = C;
    o.S = S;
    o.loop = loop;
    own_scan(&o, &loop->k[loop->aux]);
    if (!o.n) return;
    o.own = tk_alloc(&C->arena, sizeof(uint32_t) * (size_t)(S->nlocals + 1));
    memset(o.own, 0, sizeof(uint32_t) * (size_t)(S->nlocals + 1));
    for (int d = 0; d < loop->aux; d++)
        if (loop->vars[d] >= 0 && loop->vars[d] < S->nlocals && !assigns(body, loop->vars[d]))
            o.own[loop->vars[d]] |= 1u << d;
    for (int i = 0; body->op == IR_BLOCK && i < body->n; i++) { /* the body's leading i = lo + k * step */
        tk_ir *a = body->k[i];
        if (a->op != IR_ASSIGN) break;
        if (a->local >= 0 && a->local < S->nlocals && assigns(body, a->local) == 1 && ty_is_int(a->k[0]->ty))
            o.own[a->local] |= own_of(&o, a->k[0], loop);
    }
    /* per array: every atomic a candidate, owned, on the same owning indices */
    uint64_t ok = 0, bad = o.other;
    tk_ir **first = tk_alloc(&C->arena, sizeof(tk_ir *) * 64);
    memset(first, 0, sizeof(tk_ir *) * 64);
    for (int i = 0; i < o.n; i++) {
        tk_ir *a = o.c[i].atom;
        int q = a->param & 63;
        uint32_t axes = owning_axes(&o, a, loop->aux);
        if (!axes || q == 63) {
            bad |= (uint64_t)1 << q;
            continue;
        }
        if (!first[q]) {
            first[q] = a;
            ok |= (uint64_t)1 << q;
            continue;
        }
        uint32_t fa = owning_axes(&o, first[q], loop->aux);
        if (a->n != first[q]->n) bad |= (uint64_t)1 << q;
        else
            for (int k = 1; k < a->n; k++)
                if ((fa >> (k - 1) & 1) && !same(a->k[k], first[q]->k[k])) bad |= (uint64_t)1 << q;
    }
    ok &= ~bad;
    /* another array of the same dtype with atomics (or passed to a call) may be a view of this one */
    for (int q = 0; q < 63 && q < S->nparams; q++) {
        if (!(ok >> q & 1)) continue;
        for (int r = 0; r < S->nparams; r++)
            if (r != q && S->ptypes[r].kind == TY_ARRAY && S->ptypes[r].dt == S->ptypes[q].dt &&
                ((o.atom | o.other) >> (r & 63) & 1))
                ok &= ~((uint64_t)1 << q);
    }
    for (int i = 0; i < o.n; i++) {
        tk_ir *a = o.c[i].atom;
        if (!(ok >> (a->param & 63) & 1)) continue;
        tk_ir *ld = ir_new(C, IR_LOAD, a->ty, a->line);
        ld->param = a->param;
        for (int k = 1; k < a->n; k++) ir_push(C, ld, a->k[k]);
        tk_ir *op = ir_new(C, IR_BIN, a->ty, a->line);
        op->sub = a->sub == A_ADD ? B_ADD : B_SUB;
        op->aux_ty = a->ty;
        ir_push(C, op, ld);
        ir_push(C, op, a->k[0]);
        tk_ir *st = ir_new(C, IR_STORE, ty_void(), a->line);
        st->param = a->param;
        st->sub = ST_RMW;
        ir_push(C, st, op);
        for (int k = 1; k < a->n; k++) ir_push(C, st, a->k[k]);
        *o.c[i].slot = st;
    }
}

/* The statement that takes value v of atomic min/max a into running local m:
 * `m = v < m ? v : m` (`>` for a max), the atomic's own test, so a NaN
 * value or a zero equal to m leaves m as it was. */
static tk_ir *running(tk_cc *C, tk_spec *S, tk_ir *a, int m, int scope) {
    tk_ir *blk = ir_new(C, IR_BLOCK, ty_void(), a->line), *v = a->k[0];
    if ((v->op != IR_LOCAL && v->op != IR_CONST) || v->n) {
        tk_ir *hold = ir_new(C, IR_ASSIGN, ty_void(), a->line);
        hold->local = tk_new_local(C, S, tk_fmt(&C->arena, "_mm%d", S->nlocals), a->ty, scope);
        S->locals[hold->local].declared = 1;
        ir_push(C, hold, v);
        ir_push(C, blk, hold);
        v = ir_new(C, IR_LOCAL, a->ty, a->line);
        v->local = hold->local;
    }
    tk_ir *mv = ir_new(C, IR_LOCAL, a->ty, a->line), *mv2 = ir_new(C, IR_LOCAL, a->ty, a->line);
    mv->local = mv2->local = m;
    tk_ir *cmp = ir_new(C, IR_BIN, ty_value(TACK_BOOL), a->line);
    cmp->sub = a->sub == A_MIN ? B_LT : B_GT;
    cmp->aux_ty = a->ty;
    ir_push(C, cmp, v);
    ir_push(C, cmp, mv);
    tk_ir *sel = ir_new(C, IR_SELECT, a->ty, a->line), *v2 = ir_new(C, v->op, v->ty, a->line);
    *v2 = *v; /* a second leaf (no kids): no node sits in two places */
    ir_push(C, sel, cmp);
    ir_push(C, sel, v2);
    ir_push(C, sel, mv2);
    tk_ir *as = ir_new(C, IR_ASSIGN, ty_void(), a->line);
    as->local = m;
    ir_push(C, as, sel);
    ir_push(C, blk, as);
    return blk;
}

/* Atomics a and b name different cells: some index a different constant in
 * both, neither negative (-1 and n - 1 are one cell). */
static int apart(const tk_ir *a, const tk_ir *b) {
    if (a->n != b->n || a->comp || b->comp) return 0;
    for (int k = 1; k < a->n; k++)
        if (a->k[k]->op == IR_CONST && b->k[k]->op == IR_CONST && ty_is_int(a->k[k]->ty) && ty_is_int(b->k[k]->ty) &&
            a->k[k]->c.i >= 0 && b->k[k]->c.i >= 0 && a->k[k]->c.i != b->k[k]->c.i)
            return 1;
    return 0;
}

static void privatize_loop(tk_cc *C, tk_spec *S, tk_ir *loop) {
    own_loop(C, S, loop);
    privatizer p;
    memset(&p, 0, sizeof p);
    p.C = C;
    p.S = S;
    p.loop = loop;
    scan(&p, &loop->k[loop->aux]);
    /* an array both added into and min'd or max'd (or min'd and max'd) keeps its atomics unless each
     * kind has cells of its own: constant indices, a pair of kinds apart in one (extremes[0], [1]) */
    uint64_t mixed = (p.kind[0] & p.kind[1]) | (p.kind[0] & p.kind[2]) | (p.kind[1] & p.kind[2]);
    p.bad |= mixed & p.vary;
    for (int i = 0; mixed && i < p.n; i++)
        for (int j = i + 1; j < p.n; j++) {
            tk_ir *a = p.c[i].atom, *b = p.c[j].atom;
            if (a->param != b->param || !(mixed >> (a->param & 63) & 1) || kind_of(a) == kind_of(b)) continue;
            if (!apart(a, b)) p.bad |= (uint64_t)1 << (a->param & 63);
        }
    /* a private copy for each eligible histogram array, the first TK_MAX_HIST
     * (bit 63 stands for every array past it, so only params below 63 qualify) */
    int nh = 0;
    for (int q = 0; q < 63 && q < S->nparams && C->target->loops == TK_LOOPS_CHUNKED && nh < TK_MAX_HIST; q++) {
        /* a strided view keeps its atomics: the copy is merged back in C order (emit_cpu.c) */
        if (!(p.vary >> q & 1) || (p.bad >> q & 1) || S->ptypes[q].kind != TY_ARRAY || S->ptypes[q].strided) continue;
        /* the copy counts whole elements (emit_stmt.c's hist_add): an add into one
         * component (a[k].x += v, hist[i % 4][1] += 2) keeps the array on atomics */
        if (p.comp >> q & 1) continue;
        int dt = S->ptypes[q].dt, kind = dt_kind((tack_dtype)dt);
        int vec = ty_is_vector(ty_value(dt)) || ty_is_matrix(ty_value(dt)); /* a copy of its components */
        if ((!ty_is_scalar(ty_value(dt)) && !vec) || dt_is_half(dt) || kind == TACK_KIND_BOOL ||
            kind == TACK_KIND_COMPLEX)
            continue;
        loop->hist |= (uint64_t)1 << q;
        nh++;
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
            if (acc[j] >= 0 && b->param == a->param && b->n == a->n && b->comp == a->comp) {
                int eq = 1;
                for (int k = 1; k < a->n; k++)
                    if (!same(a->k[k], b->k[k])) eq = 0;
                if (eq) found = acc[j];
            }
        }
        /* On a GPU a vector or matrix cell is summed as its components, each a scalar sum that the
         * grid's flush hook reduces across the warp (or sub-group) before its one atomic: the
         * vector's own sum would keep one atomic per component per thread. */
        int mm = a->sub == A_MIN || a->sub == A_MAX;
        tack_dtype dt = (tack_dtype)a->ty.dt;
        int split = !ty_is_scalar(a->ty) && C->target->loops != TK_LOOPS_CHUNKED;
        int nc = split ? dt_rows(dt) * dt_cols(dt) : 1;
        tk_type ety = split ? ty_value(dt_scalar(dt)) : a->ty;
        if (found < 0) {
            if (!red) red = ir_new(C, IR_BLOCK, ty_void(), loop->line);
            for (int c = 0; c < nc; c++) {
                int l = new_local(C, S, ety, scope); /* consecutive: found + c (tk_new_local appends) */
                if (c == 0) found = l;
                tk_ir *flush = ir_new(C, IR_ATOMIC, ety, a->line);
                flush->sub = mm ? a->sub : A_ADD; /* the emitter starts a min/max at its identity */
                flush->param = a->param;
                flush->comp = split ? c + 1 : a->comp; /* a[0].x += v: a sum per component */
                tk_ir *v = ir_new(C, IR_LOCAL, ety, a->line);
                v->local = l;
                ir_push(C, flush, v);
                for (int k = 1; k < a->n; k++) ir_push(C, flush, a->k[k]);
                ir_push(C, red, flush);
            }
        }
        acc[i] = found;
        if (mm) { /* m = v < m ? v : m (min), v > m ? v : m (max): what the atomic does, v held once */
            *p.c[i].slot = running(C, S, a, found, scope);
            continue;
        }
        /* the statement becomes  sum = sum +/- value  (per component: the value once, then each
         * component's sum = sum +/- value's component) */
        tk_ir *val = a->k[0], *blk = NULL;
        if (split) {
            blk = ir_new(C, IR_BLOCK, ty_void(), a->line);
            tk_ir *hold = ir_new(C, IR_ASSIGN, ty_void(), a->line);
            hold->local = tk_new_local(C, S, tk_fmt(&C->arena, "_add%d", S->nlocals), a->ty, scope);
            S->locals[hold->local].declared = 1;
            ir_push(C, hold, val);
            ir_push(C, blk, hold);
        }
        for (int c = 0; c < nc; c++) {
            tk_ir *x = val;
            if (split) {
                tk_ir *held = ir_new(C, IR_LOCAL, a->ty, a->line);
                held->local = blk->k[0]->local;
                x = ir_new(C, IR_COMP, ety, a->line);
                ir_push(C, x, held);
                if (ty_is_matrix(a->ty)) {
                    ir_push(C, x, ir_const_i(C, ty_value(TACK_I64), c / dt_cols(dt), a->line));
                    ir_push(C, x, ir_const_i(C, ty_value(TACK_I64), c % dt_cols(dt), a->line));
                } else {
                    ir_push(C, x, ir_const_i(C, ty_value(TACK_I64), c, a->line));
                }
            }
            tk_ir *sum = ir_new(C, IR_LOCAL, ety, a->line);
            sum->local = found + c;
            tk_ir *op = ir_new(C, IR_BIN, ety, a->line);
            op->sub = a->sub == A_ADD ? B_ADD : B_SUB;
            op->aux_ty = ety;
            ir_push(C, op, sum);
            ir_push(C, op, x);
            tk_ir *as = ir_new(C, IR_ASSIGN, ty_void(), a->line);
            as->local = found + c;
            ir_push(C, as, op);
            if (split) ir_push(C, blk, as);
            else *p.c[i].slot = as;
        }
        if (split) *p.c[i].slot = blk;
    }
    for (int i = 0; i < p.n; i++)
        if (p.bad >> (p.c[i].atom->param & 63) & 1) acc[i] = -1;
    loop->red = red;
}

static void walk(tk_cc *C, tk_spec *S, tk_ir *s) {
    if (s->op == IR_PFOR) {
        if (!ir_is_blocks(s)) privatize_loop(C, S, s); /* a block's threads keep their adds as written */
        return;
    }
    if (s->op == IR_BLOCK || s->op == IR_IF)
        for (int i = 0; i < s->n; i++) walk(C, S, s->k[i]);
}

void tk_privatize(tk_cc *C) {
    tk_spec *K = C->specs[0];
    if (K->body) walk(C, K, K->body);
}
