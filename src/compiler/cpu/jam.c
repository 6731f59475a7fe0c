/*
 * jam.c -- a parallel loop whose iterations are serial sums, run side by side.
 *
 * A parallel loop each of whose iterations is one long serial reduction --
 *
 *     for j in range(n):                       (the parallel loop)
 *         s = 0
 *         for k in range(m):
 *             s += w[k, j] * x[k]
 *         out[j] = f(s)
 *
 * backprop's hidden layer, a matrix-vector product down the columns, a
 * column sum -- runs each iteration's k loop to its end before the next
 * starts.  The k loop cannot be vectorized (its adds are in order, and
 * nothing is reassociated unless fast_math), and each iteration reads a
 * column: at n = 16 columns of a row of 17 floats, every w[k, j] is a cache
 * line of its own, so the loop reads the whole matrix once per column, 16
 * times in all.  Backprop's forward phase at 2^20 rows took 46-49 ms on one
 * thread, reading 1.1 GB from the last-level cache, where its 68 MB read
 * once would do.
 *
 * This pass runs the iterations in panels of P (one cache line of
 * accumulators: 16 of f32, 8 of f64), jammed:
 *
 *     for each panel of rows j0 .. j0 + P - 1 (the parallel loop's iteration):
 *         for j in the panel:  s[j - j0] = 0               (the statements before the loop)
 *         for k in range(m):
 *             for j in the panel:  s[j - j0] += w[k, j] * x[k]
 *         for j in the panel:  out[j] = f(s[j - j0])       (the statements after it)
 *
 * so the matrix is read once, a row's columns of the panel together, and the
 * loop over the panel is P independent lanes the C compiler vectorizes (one
 * 16-lane add a row where there were 16 dependent scalar adds).
 *
 * The result is the same bits.  Every iteration's statements run in their
 * order, on the same operands, with the same operations: its sum still adds
 * k = 0, 1, 2 ... in turn into its own accumulator (a lane of a local array
 * of the local's type; no reassociation, no fused multiply-add: the C
 * compiler runs with -ffp-contract=off).  Only the interleaving of
 * different iterations changes, which a parallel loop allows -- but the
 * original order is observable where one iteration's writes reach another's
 * reads, so the pass takes only loops where that cannot happen:
 *
 *   - the body is: assignments of locals; one serial loop of step 1 with
 *     bounds fixed in the panel, whose body is assignments of locals; then
 *     assignments of locals and stores.  Nothing else (no call, atomic, check
 *     left, print, nested loop, break);
 *   - what is before the loop and in it only reads memory; what is after
 *     it writes arrays that none of those reads name and, tested at run
 *     time, whose bytes none of them share (M_DISJOINT).  The statements
 *     after the loop run for the panel's iterations in their order, so their
 *     own writes and reads keep their order;
 *   - a local assigned before the loop and again in it is the sum: a lane
 *     of a local array.  One assigned before the loop only, from integer
 *     arithmetic of the parallel variable, fixed values and other such
 *     locals (`j = i + 1`; not of a lane: a sum's value changes), is its
 *     expression, put where it is read (so `w[k, j]` stays a unit-stride
 *     load); any other, a lane of an array too.  A local assigned in the
 *     loop only is assigned before it is read in an iteration (a temporary)
 *     and not read after the loop; one assigned after the loop is read only
 *     after it, later;
 *   - the loop's variable is not read after the loop (its last value
 *     depends on the trip count), nor before it.
 *
 * The statements after the loop run in a loop over the panel, which the C
 * compiler may run in SIMD lanes: a math function there (backprop's `exp`)
 * may then be libmvec's, within the bound the language states for loops in
 * lanes (docs/language.md, "How accurate the math functions are"), where the
 * loop as written called the scalar function.  The sums are the same bits.
 *
 * A body with nothing that keeps it out of SIMD lanes -- no check, call,
 * atomic, print or return -- is left as it is: the emitter already runs such
 * a loop's iterations in lanes (`#pragma omp simd` on the chunk's loop, an
 * n-body's outer-loop vectorization, emit_inner.c), the same lanes this pass
 * would make.  What this pass takes is a body whose per-iteration checks
 * (`j < w.shape[1]` before backprop's loop) keep it out of them: the panel
 * tests them once, with nests.c's copy.
 *
 * It pays where the loads in the serial loop read along the parallel
 * variable with unit stride on their last axis, or do not depend on it
 * (x[k]): then the panel's lanes are contiguous loads and broadcasts.  A
 * load that depends on the parallel variable otherwise (`a[j, k]`, a row per
 * iteration, already contiguous in k) would become a gather, and the loop
 * is left as it is.  Locals of half floats (a lane would round them) and of
 * complex and vector types are left too, and so is a loop of one iteration
 * (`for t in range(1):`, serial work), where a panel of one lane only adds
 * the lane array: a dot product of 10^6 f64 took 2.1 ms so, 0.8 ms as written.
 *
 * Index checks are nests.c's: the panel runs the copy without them where
 * its test (and the disjointness) holds; otherwise the panel's iterations
 * run as written, one after the other, raising where they raised.  The
 * panel is one iteration of the parallel loop, which now runs over
 * ceil(n / P) panels (tile.c's tk_rows_panels); a full panel's lane loops
 * have the constant trip count P, so that the C compiler keeps the
 * accumulators in registers across the serial loop; the last panel's
 * count is what is left.  The serial loop polls for its work (P lanes an
 * iteration; IR_FOR's aux, as in nests.c).
 *
 * TACK_TILE=0 turns the pass off, with tile.c's (the switch of the passes
 * that run a parallel loop's body in panels); TACK_NESTS=0 and TACK_OPT=0
 * do too.  C dialect only, like nests.c.
 */
#include <string.h>

#include "compiler/compiler.h"
#include "runtime/config.h"

#define PANEL_BYTES 64 /* a panel's accumulators: a cache line of the widest sum's type */
#define MAX_STMTS 24
#define MAX_ARRAYS 64

enum { L_NONE, L_LANES, L_EXPR, L_TEMP, L_POST };

typedef struct jam {
    tk_cc *C;
    tk_spec *S;
    tk_ir *rows; /* for iv in range(i0, i1): the body (check-free copy) */
    int iv, kv, scope;
    tk_ir *loop, *bound[2]; /* the serial loop; its bounds, expressions in place */
    tk_ir *pre[MAX_STMTS], *in[MAX_STMTS], *post[MAX_STMTS];
    int npre, nin, npost;
    char *kind; /* per local: L_* */
    int *lanes; /* per local of kind L_LANES: its local array */
    tk_ir **expr; /* per local of kind L_EXPR: its value, expressions substituted */
    int reads[MAX_ARRAYS], nreads;
    int stores[MAX_ARRAYS], nstores;
    int lane; /* the lane local (0 .. P - 1) during substitution */
    int ok;
} jam;

/* ------------------------------------------------------------- helpers */
static void note(int *set, int *n, int p, int *ok) {
    for (int i = 0; i < *n; i++)
        if (set[i] == p) return;
    if (*n >= MAX_ARRAYS) *ok = 0;
    else set[(*n)++] = p;
}

/* The arrays e loads. */
static void loads(jam *t, const tk_ir *e) {
    if (e->op == IR_LOAD) note(t->reads, &t->nreads, e->param, &t->ok);
    for (int i = 0; i < e->n; i++) loads(t, e->k[i]);
}

/* A value a lane may hold: a scalar of a type whose local array element is the value itself. */
static int lane_type(tk_type ty) {
    return ty.kind == TY_VALUE && ty_is_scalar(ty) && !ty_is_complex(ty) && !dt_is_half(ty.dt);
}

/* Integer arithmetic without loads or calls: cheap to repeat where it is read. */
static int arith(const tk_ir *e) {
    switch (e->op) {
    case IR_CONST: case IR_LOCAL: case IR_SHAPE: break;
    case IR_CAST: case IR_UN: break;
    case IR_BIN: if (e->sub != B_ADD && e->sub != B_SUB && e->sub != B_MUL) return 0; break;
    default: return 0;
    }
    if (e->op != IR_SHAPE && e->op != IR_CONST && (e->ty.kind != TY_VALUE || !ty_is_int(e->ty))) return 0;
    for (int i = 0; i < e->n; i++)
        if (!arith(e->k[i])) return 0;
    return 1;
}

/* --------------------------------------------------------------- match */
static int assigned_in(const tk_ir *const *s, int n, int l) {
    int c = 0;
    for (int i = 0; i < n; i++) c += s[i]->op == IR_ASSIGN && s[i]->local == l;
    return c;
}

/* Whether every local e reads is one that may be read at this point: fixed in the panel, or of an
 * allowed kind (a bit per L_*). */
static int reads_ok(jam *t, const tk_ir *e, unsigned allowed) {
    if (e->op == IR_LOCAL) {
        int l = e->local;
        if (l == t->iv) return 1;
        if (l == t->kv) return (allowed >> 15) & 1;
        if (!ir_assigns_local(t->rows, l)) return 1;
        return (allowed >> t->kind[l]) & 1;
    }
    for (int i = 0; i < e->n; i++)
        if (!reads_ok(t, e->k[i], allowed)) return 0;
    return 1;
}

static int match(jam *t) {
    tk_spec *S = t->S;
    tk_ir *all[3 * MAX_STMTS];
    int n = tk_rows_stmts(t->rows->k[3], all, 0, 3 * MAX_STMTS, 0), at = -1;
    if (n < 1 || n > 3 * MAX_STMTS) return 0;
    for (int i = 0; i < n; i++) {
        if (all[i]->op == IR_FOR) {
            if (at >= 0) return 0;
            at = i;
        } else if (all[i]->op != IR_ASSIGN && !(all[i]->op == IR_STORE && at >= 0)) {
            return 0;
        }
    }
    if (at < 0 || !tk_rows_unit_for(all[at]) || at > MAX_STMTS || n - at - 1 > MAX_STMTS) return 0;
    t->loop = all[at];
    t->kv = t->loop->local;
    if (ir_assignments(t->rows, t->kv) != 1 || ir_assignments(t->rows, t->iv) != 1) return 0;
    t->npre = at;
    for (int i = 0; i < at; i++) t->pre[i] = all[i];
    t->npost = n - at - 1;
    for (int i = 0; i < t->npost; i++) t->post[i] = all[at + 1 + i];
    t->nin = tk_rows_stmts(t->loop->k[3], t->in, 0, MAX_STMTS, 0);
    if (t->nin < 1 || t->nin > MAX_STMTS) return 0;
    for (int i = 0; i < t->nin; i++)
        if (t->in[i]->op != IR_ASSIGN) return 0;

    /* every statement: pure, of lane-able locals */
    tk_ir *const *groups[3] = {t->pre, t->in, t->post};
    int counts[3] = {t->npre, t->nin, t->npost};
    for (int g = 0; g < 3; g++)
        for (int i = 0; i < counts[g]; i++) {
            const tk_ir *s = groups[g][i];
            for (int k = 0; k < s->n; k++)
                if (!tk_rows_pure(s->k[k])) return 0;
            if (s->op == IR_ASSIGN) {
                int l = s->local;
                if (l == t->iv || l == t->kv || S->locals[l].scope != t->scope || !lane_type(S->locals[l].ty) ||
                    !ty_eq(s->k[0]->ty, S->locals[l].ty))
                    return 0;
            } else if (S->ptypes[s->param].kind != TY_ARRAY || s->sub != ST_PLAIN) {
                return 0;
            }
        }

    /* the locals' kinds, in the order of the statements */
    for (int i = 0; i < t->npre; i++) {
        int l = t->pre[i]->local;
        if (assigned_in((const tk_ir *const *)t->pre, t->npre, l) != 1 || assigned_in((const tk_ir *const *)t->post, t->npost, l))
            return 0;
        int in = assigned_in((const tk_ir *const *)t->in, t->nin, l);
        if (in > 1) return 0;
        /* before the loop: the parallel variable, fixed values and the locals assigned before */
        if (!reads_ok(t, t->pre[i]->k[0], 1u << L_LANES | 1u << L_EXPR)) return 0;
        /* an expression is put where it is read: it must not read a lane (a sum's value changes) */
        const tk_ir *v = t->pre[i]->k[0];
        t->kind[l] = in || !arith(v) || !ty_is_int(v->ty) || !reads_ok(t, v, 1u << L_EXPR) ? L_LANES : L_EXPR;
    }
    for (int i = 0; i < t->nin; i++) {
        int l = t->in[i]->local;
        if (t->kind[l] == L_LANES) continue; /* a sum */
        if (t->kind[l] != L_NONE || assigned_in((const tk_ir *const *)t->in, t->nin, l) != 1) return 0;
        t->kind[l] = L_TEMP;
    }
    for (int i = 0; i < t->nin; i++) {
        /* a temporary is assigned before it is read: those of later statements are not read here */
        for (int u = i; u < t->nin; u++)
            if (t->kind[t->in[u]->local] == L_TEMP && ir_mentions(t->in[i]->k[0], t->in[u]->local)) return 0;
        if (!reads_ok(t, t->in[i]->k[0], 1u << L_LANES | 1u << L_EXPR | 1u << L_TEMP | 1u << 15)) return 0;
    }
    for (int i = 0; i < t->npost; i++) {
        const tk_ir *s = t->post[i];
        for (int k = 0; k < s->n; k++) {
            if (!reads_ok(t, s->k[k], 1u << L_LANES | 1u << L_EXPR | 1u << L_POST)) return 0;
            for (int u = i; u < t->npost; u++)
                if (t->post[u]->op == IR_ASSIGN && ir_mentions(s->k[k], t->post[u]->local)) return 0;
        }
        if (s->op == IR_ASSIGN) {
            int l = s->local;
            if (t->kind[l] != L_NONE || assigned_in((const tk_ir *const *)t->post, t->npost, l) != 1) return 0;
            t->kind[l] = L_POST;
        } else {
            note(t->stores, &t->nstores, s->param, &t->ok);
        }
    }
    /* what is read before the loop and in it; the arrays written after it are none of those */
    for (int i = 0; i < t->npre; i++) loads(t, t->pre[i]->k[0]);
    for (int i = 0; i < t->nin; i++) loads(t, t->in[i]->k[0]);
    for (int s = 0; s < t->nstores; s++)
        for (int r = 0; r < t->nreads; r++)
            if (t->stores[s] == t->reads[r]) return 0;
    return t->ok;
}

/* ---------------------------------------------------------- substitute */
/* e with the lanes' locals as their lanes (index t->lane) and the expressions in place. */
static tk_ir *subst(jam *t, const tk_ir *e) {
    tk_cc *C = t->C;
    if (e->op == IR_LOCAL && e->local != t->iv && e->local != t->kv) {
        int l = e->local;
        if (t->kind[l] == L_EXPR) return ir_clone(C, t->expr[l]);
        if (t->kind[l] == L_LANES) {
            tk_ir *r = ir_new(C, IR_LLOAD, e->ty, e->line);
            r->local = t->lanes[l];
            ir_push(C, r, ir_local_of(C, t->S, t->lane, e->line));
            return r;
        }
    }
    tk_ir *r = ir_new(C, e->op, e->ty, e->line);
    *r = *e;
    r->k = tk_alloc(&C->arena, sizeof(tk_ir *) * (size_t)(e->n ? e->n : 1));
    r->cap = e->n;
    for (int j = 0; j < e->n; j++) r->k[j] = subst(t, e->k[j]);
    if (r->op == IR_ASSIGN && t->kind[e->local] == L_LANES) {
        tk_ir *st = ir_new(C, IR_LSTORE, ty_void(), e->line);
        st->local = t->lanes[e->local];
        ir_push(C, st, r->k[0]);
        ir_push(C, st, ir_local_of(C, t->S, t->lane, e->line));
        return st;
    }
    return r;
}

/* The coefficient of the parallel variable in index e (after subst): 0 when e does not depend on
 * it, 1 for `iv + c`; anything else (a lane's load, a product of two, a division) -1 */
static int64_t coef(jam *t, const tk_ir *e) {
    if (!ir_mentions(e, t->iv) && !ir_mentions(e, t->lane)) {
        for (int i = 0; i < e->n; i++)
            if (coef(t, e->k[i]) != 0) return -1;
        return e->op == IR_LLOAD ? -1 : 0;
    }
    switch (e->op) {
    case IR_LOCAL: return e->local == t->iv ? 1 : -1;
    case IR_CAST: return ty_is_int(e->ty) && dt_bits((tack_dtype)e->ty.dt) == 64 ? coef(t, e->k[0]) : -1;
    case IR_BIN: {
        int64_t a = coef(t, e->k[0]), b = coef(t, e->k[1]);
        if (a < 0 || b < 0) return -1;
        if (e->sub == B_ADD) return a + b;
        if (e->sub == B_SUB) return b ? -1 : a;
        if (e->sub == B_MUL) {
            const tk_ir *ca = ir_strip(e->k[0]), *cb = ir_strip(e->k[1]);
            if (!b && cb->op == IR_CONST) return a * cb->c.i;
            if (!a && ca->op == IR_CONST) return b * ca->c.i;
        }
        return -1;
    }
    default: return -1;
    }
}

/* Every load in e reads along the parallel variable with unit stride on its last axis, or not at all. */
static int unit_loads(jam *t, const tk_ir *e) {
    if (e->op == IR_LOAD) {
        for (int a = 0; a < e->n; a++) {
            int64_t c = coef(t, e->k[a]);
            if (c < 0 || c > 1 || (c == 1 && a != e->n - 1)) return 0;
        }
    }
    for (int i = 0; i < e->n; i++)
        if (!unit_loads(t, e->k[i])) return 0;
    return 1;
}

/* `iv = i0 + lane` for lane loop bodies */
static tk_ir *set_iv(jam *t, int i0, int line) {
    tk_cc *C = t->C;
    tk_ir *x = ir_i64_bin(C, B_ADD, ir_local_of(C, t->S, i0, line), ir_local_of(C, t->S, t->lane, line));
    x->aux = TK_BIN_NOWRAP; /* i0 + lane < i1: an iteration of the loop */
    if (!ty_eq(t->S->locals[t->iv].ty, x->ty)) {
        tk_ir *cv = ir_new(C, IR_CAST, t->S->locals[t->iv].ty, line);
        ir_push(C, cv, x);
        x = cv;
    }
    return ir_assign(C, t->iv, x);
}

/* The jammed panel with `lanes` lanes (a constant, or a local's value). */
static tk_ir *jammed(jam *t, int i0, tk_ir *lanes, int work, int line) {
    tk_cc *C = t->C;
    tk_ir *b = ir_block(C, line);
    tk_ir *stage[3] = {ir_block(C, line), ir_block(C, line), ir_block(C, line)};
    for (int g = 0; g < 3; g++) ir_push(C, stage[g], set_iv(t, i0, line));
    for (int i = 0; i < t->npre; i++)
        if (t->kind[t->pre[i]->local] == L_LANES) ir_push(C, stage[0], subst(t, t->pre[i]));
    for (int i = 0; i < t->nin; i++) ir_push(C, stage[1], subst(t, t->in[i]));
    for (int i = 0; i < t->npost; i++) ir_push(C, stage[2], subst(t, t->post[i]));
    ir_push(C, b, ir_assign(C, work, ir_as_i64(C, ir_clone(C, lanes))));
    if (stage[0]->n > 1) ir_push(C, b, ir_for(C, t->lane, ir_i64(C, 0, line), ir_clone(C, lanes), 1, stage[0], TK_FOR_IVDEP));
    tk_ir *kb = ir_block(C, line);
    ir_push(C, kb, ir_for(C, t->lane, ir_i64(C, 0, line), ir_clone(C, lanes), 1, stage[1], TK_FOR_IVDEP));
    tk_ir *k = ir_for(C, t->kv, ir_clone(C, t->bound[0]), ir_clone(C, t->bound[1]), 1, kb, TK_FOR_POLLS);
    k->aux = work + 1;
    ir_push(C, b, k);
    /* after the loop: the panel's iterations in their order (their stores may meet) */
    ir_push(C, b, ir_for(C, t->lane, ir_i64(C, 0, line), ir_clone(C, lanes), 1, stage[2], TK_FOR_QUIET));
    return b;
}

/* Whether the loop as written has what keeps a parallel loop's iterations out of SIMD lanes in
 * the emitter (emit_inner.c, simd_body): a check, a return, a print, an atomic, a call. */
static int kept_out_of_lanes(const tk_ir *x) {
    if (x->op == IR_CHECK || x->op == IR_RETURN || x->op == IR_PRINT || x->op == IR_ATOMIC || x->op == IR_CALL) return 1;
    for (int i = 0; i < x->n; i++)
        if (kept_out_of_lanes(x->k[i])) return 1;
    return 0;
}

/* ---------------------------------------------------------------- pass */
int tk_jam(tk_cc *C, tk_spec *S, tk_ir *pf) {
    if (!tk_config_int(TK_CFG_TILE)) return 0; /* the switch of the panel passes (config.def) */
    if (pf->aux != 1 || pf->red || pf->hist || pf->vars[0] < 0) return 0;
    if (ir_pfor_one(pf)) return 0; /* one iteration (`for t in range(1):`): nothing to run beside it */
    /* a body the emitter can already run in lanes (an n-body's) is left to it: the same lanes */
    if (!kept_out_of_lanes(pf->k[1])) return 0;
    /* a quick look at the loop as written: one serial loop among the body's statements */
    tk_ir *top[3 * MAX_STMTS];
    int n = tk_rows_stmts(pf->k[1], top, 0, 3 * MAX_STMTS, 1), loops = 0;
    if (n < 2 || n > 3 * MAX_STMTS) return 0;
    for (int i = 0; i < n; i++) loops += top[i]->op == IR_FOR;
    if (loops != 1) return 0;

    int iv = pf->vars[0], scope = S->locals[iv].scope, line = pf->line;
    tk_type i64 = ty_value(TACK_I64);
    int nl0 = S->nlocals;
    int i0 = tk_new_local(C, S, "tk_i0", i64, scope), i1 = tk_new_local(C, S, "tk_i1", i64, scope);
    jam t;
    memset(&t, 0, sizeof t);
    t.C = C, t.S = S, t.iv = iv, t.scope = scope, t.ok = 1;
    tk_ir *cond;
    t.rows = tk_rows_copy(C, S, pf, i0, i1, &cond);
    int nl = S->nlocals + 8;
    t.kind = tk_alloc(&C->arena, (size_t)nl);
    memset(t.kind, 0, (size_t)nl);
    t.lanes = tk_alloc(&C->arena, sizeof(int) * (size_t)nl);
    memset(t.lanes, 0, sizeof(int) * (size_t)nl);
    t.expr = tk_alloc(&C->arena, sizeof(tk_ir *) * (size_t)nl);
    memset(t.expr, 0, sizeof(tk_ir *) * (size_t)nl);
    if (!match(&t)) {
        S->nlocals = nl0; /* the two locals, unused */
        return 0;
    }
    /* P: a cache line of the widest lane's type */
    int wide = 1;
    for (int l = 0; l < nl0; l++)
        if (t.kind[l] == L_LANES) {
            int b = dt_bits((tack_dtype)S->locals[l].ty.dt) / 8;
            if (b > wide) wide = b;
        }
    int64_t P = PANEL_BYTES / wide;
    t.lane = tk_new_local(C, S, "tk_lane", i64, scope);
    /* the expressions, substituted in order (one may read those before it) */
    for (int i = 0; i < t.npre; i++) {
        int l = t.pre[i]->local;
        if (t.kind[l] == L_EXPR) t.expr[l] = subst(&t, t.pre[i]->k[0]);
    }
    for (int l = 0; l < nl0; l++)
        if (t.kind[l] == L_LANES) {
            tk_type at = {TY_ARRAY, S->locals[l].ty.dt, 1, 0, 0};
            int a = tk_new_local(C, S, "tk_lanes", at, scope);
            S->locals[a].ashape[0] = P;
            S->locals[a].read = 1;
            t.lanes[l] = a;
        }
    /* the loop's bounds, the expressions in place, are fixed in the panel (no loads, no local the
     * rows assign: lowering's `_t = n` before the loop is such an expression) */
    for (int b = 0; b < 2; b++) {
        t.bound[b] = subst(&t, t.loop->k[b]);
        if (!ir_invariant(t.bound[b], t.rows)) {
            S->nlocals = nl0;
            return 0;
        }
    }
    /* it pays: the serial loop's loads are along the parallel variable, unit stride, or fixed */
    for (int i = 0; i < t.nin; i++)
        if (!unit_loads(&t, subst(&t, t.in[i]->k[0]))) {
            S->nlocals = nl0;
            return 0;
        }

    int m = tk_new_local(C, S, "tk_m", i64, scope), work = tk_new_local(C, S, "tk_work", i64, scope);
    int ib = tk_new_local(C, S, "tk_panel", i64, scope);
    tk_ir *full = ir_i64_bin(C, B_EQ, ir_local_of(C, S, m, line), ir_i64(C, P, line));
    tk_ir *iff = ir_new(C, IR_IF, ty_void(), line);
    ir_push(C, iff, full);
    tk_ir *a = ir_block(C, line), *b = ir_block(C, line);
    ir_push(C, a, jammed(&t, i0, ir_i64(C, P, line), work, line));
    ir_push(C, b, jammed(&t, i0, ir_local_of(C, S, m, line), work, line));
    ir_push(C, iff, a);
    ir_push(C, iff, b);
    tk_ir *then = ir_block(C, line);
    then->str = "tack: sums jammed (jam.c): the iterations of a panel side by side, each sum in its order";
    ir_push(C, then, iff);
    for (int s = 0; s < t.nstores; s++) cond = tk_rows_disjoint(C, cond, t.stores[s], t.reads, t.nreads, line);
    if (!cond) cond = ir_const_i(C, ty_value(TACK_BOOL), 1, line);
    tk_rows_panels(C, S, pf, ib, i0, i1, P,
                   ir_assign(C, m, ir_i64_bin(C, B_SUB, ir_local_of(C, S, i1, line), ir_local_of(C, S, i0, line))), cond, then);
    return 1;
}
