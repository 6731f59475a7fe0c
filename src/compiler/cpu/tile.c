/*
 * tile.c -- register blocking and cache tiling of a matrix product's rows.
 *
 * nests.c interchanges `for j: for k: C[i, j] += A[i, k] * B[k, j]` so that
 * the inner loop runs along a row of B and C.  That is still one row of C
 * per iteration of the parallel loop, and each row reads the whole of B: at
 * 1000 x 1000 (f64, 8 MB) B comes from the last-level cache or memory for
 * every row, and each element of C is loaded and stored once per k -- two
 * memory operations for two flops.  The loop ran 6.5x behind BLAS.
 *
 * This pass takes a parallel loop (one axis) whose body is such a nest --
 *
 *     for i in range(n):                      for i in range(n):
 *         for j in range(a, b):                   for k in range(c, d):
 *             for k in range(c, d):                   t = g(i, k)     (locals, any number)
 *                 C[.., i, .., j, ..] = f(..)         for j in range(a, b):
 *                                                         C[.., i, .., j, ..] = f(..)
 *
 * where the store names i once (`i` or `i + c`) and j once on other axes,
 * f reads C only at the stored element, the locals of the body are assigned
 * once before they are read, and nothing else is in the nest -- and runs its
 * rows in panels of P.  A panel's iteration is
 *
 *     for each tile of JT columns:                       (cache tiling of j)
 *       for each tile of KT values of k:                 (cache tiling of k)
 *         for each block of R = 4 rows i..i+3:            (register blocking)
 *           for k in steps of 4:                         (unroll-and-jam of k)
 *             the locals t for the 16 pairs (i + r, k + q)
 *             for j in the tile:
 *               c_r = C[i + r, j]  (r < 4)
 *               c_r = f(c_r) for k, k+1, k+2, k+3 in turn, each row r
 *               C[i + r, j] = c_r
 *           the last k's (fewer than 4): the four rows, a k at a time
 *         the last rows (fewer than 4), a row at a time
 *
 * so a value of B loaded once serves four rows, an element of C is loaded
 * and stored once per four k's, and the tile of B (KT x JT elements, 256 KB)
 * stays in the second-level cache while the panel's rows pass over it.
 *
 * The result is the same bits.  Each cell C[i, j] still sees its updates in
 * ascending k, each computed by the same operations in the same order on
 * the same operands: tiling j and blocking rows only changes which cells
 * are worked on between two updates of a cell; tiling k visits the tiles in
 * ascending order and each tile's k's in ascending order, so the k order of
 * every cell is the original one; jamming keeps the four updates of a cell
 * in a chain through a local of the element's type (no reassociation, and
 * no fused multiply-add: the C compiler runs with -ffp-contract=off).  The
 * element type must be the local's exactly (not float16, whose stores round
 * each partial result).  It holds because no cell is read except by its own
 * updates (f reads C only at the stored element) and the other arrays read
 * share no memory with C, which the copy tests at run time (M_DISJOINT),
 * with the rest of its conditions:
 *
 *     if (the index checks of the panel's rows hold (nests.c's test) and
 *         the k and j loops run and C shares no byte with what is read)
 *         { the tiled panel }
 *     else
 *         { for i in the panel's rows: the row as written }
 *
 * so an index out of bounds raises the same error, after the same writes,
 * from the loop as written.  The fallback is not given nests.c's per-row
 * copies: it runs only where an index could fail, C overlaps what is read or
 * a loop is empty, and each copy is C compiler time (the tiled kernel's
 * source is already nearly twice the loop's).  Loads of the tiled copy
 * that do not depend on j are made once per (i + r, k + q) before the j
 * loop: the checks' test shows them in bounds, and the j loop runs.
 *
 * `C[i, j] += v` reaches this pass as an atomic add, which privatize.c
 * turns into a read-modify-write of the iteration's own element when the
 * parallel loop's variable names it.  After this pass that variable is the
 * panel's, so the pass writes those stores itself, in the tiled copy and in
 * the fallback: `C[i, j] = C[i, j] + v`, privatize.c's form (the same bits).
 *
 * Rows of one panel are one iteration of the parallel loop, which is now
 * over panels (ceil(n / P) of them): the stores of the tiled copy are plain
 * stores (not the read-modify-writes verify.c checks against the
 * iteration's own element: the panel owns its rows, and the race check ran
 * on the loop as written).  The inner j loops carry TK_FOR_IVDEP: no
 * iteration depends on another (C is disjoint from what is read, and the
 * cells are distinct), which the C compiler is told (`#pragma GCC ivdep`),
 * as it cannot see it through sixteen pointers' worth of alias checks.
 *
 * The k loops poll for the work of their iterations (IR_FOR's aux, as in
 * nests.c): between polls there is no more work than in the loop as written.
 *
 * The pieces gemm.c needs too live here and are declared in compiler.h
 * (tk_rows_*): the readers of a row body (its statements, a step-1 loop,
 * a store or own-row `+=`, a pure expression) and the builder of the loop
 * over panels (the check-free copy of the rows, the run-time test, the
 * fallback to the rows as written, the panel bounds).
 *
 * TACK_TILE=0 in the environment turns the pass off (TACK_NESTS=0 and
 * TACK_OPT=0 do too); the tests compare with it.  C dialect only, like nests.c.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler.h"
#include "runtime/config.h"

#define P_ROWS 32      /* rows in a panel: an iteration of the parallel loop */
#define R_ROWS 4       /* rows in a register block (a power of two) */
#define Q_KS 4         /* k's jammed (a power of two) */
#define KT 64          /* k's in a cache tile */
#define JT_BYTES 4096  /* a tile row's bytes: 512 f64, 1024 f32 */
#define MAX_STMTS 16
#define MAX_HOIST 256  /* loads moved out of a jammed j loop; past that they stay in it */

typedef struct tiler {
    tk_cc *C;
    tk_spec *S;
    tk_ir *rows;               /* for i in range(i0, i1): the body (check-free copy) */
    int iv, kv, jv;            /* the loops' locals */
    tk_ir *klo, *khi, *jlo, *jhi;
    tk_ir *pre[MAX_STMTS];     /* assignments in the k loop, before the j loop */
    int npre;
    tk_ir *tmp[MAX_STMTS];     /* assignments in the j loop, before the store */
    int ntmp;
    tk_ir *store;
    int reads[64], nreads;
    int ok;
    /* substitution */
    tk_ir *i_to, *k_to;        /* what i and k become (NULL: themselves) */
    int from[2 * MAX_STMTS + 8], to[2 * MAX_STMTS + 8], nmap; /* locals renamed */
    int acc;                   /* the load of C at the stored element becomes this local (-1: not) */
    tk_ir **hoist;             /* loads that do not depend on j: their assignments to locals
                                * (NULL: loads stay where they are) */
    int nhoist;
} tiler;

/* ------------------------------------------------------------- helpers */
/* ------------------------------------------- shared with gemm.c (compiler.h) */
int tk_rows_pure(const tk_ir *e) {
    if (e->op == IR_CALL || e->op == IR_ATOMIC || e->op == IR_LLOAD || e->op == IR_ARRAY || e->op == IR_LARRAY) return 0;
    for (int i = 0; i < e->n; i++)
        if (!tk_rows_pure(e->k[i])) return 0;
    return 1;
}

static int empty(const tk_ir *s) {
    if (s->op == IR_BLOCK) {
        for (int i = 0; i < s->n; i++)
            if (!empty(s->k[i])) return 0;
        return 1;
    }
    return s->op == IR_IF && tk_rows_pure(s->k[0]) && empty(s->k[1]) && empty(s->k[2]);
}

/* Only checks (and tests around them): what nests.c's copy leaves empty. */
static int checks_only(const tk_ir *s) {
    if (s->op == IR_CHECK) return 1;
    if (s->op == IR_BLOCK) {
        for (int i = 0; i < s->n; i++)
            if (!checks_only(s->k[i])) return 0;
        return 1;
    }
    return s->op == IR_IF && tk_rows_pure(s->k[0]) && checks_only(s->k[1]) && checks_only(s->k[2]);
}

int tk_rows_stmts(const tk_ir *b, tk_ir **out, int n, int max, int skip_checks) {
    for (int i = 0; i < b->n && n <= max; i++) {
        tk_ir *s = b->k[i];
        if (skip_checks ? checks_only(s) : empty(s)) continue;
        if (s->op == IR_BLOCK) n = tk_rows_stmts(s, out, n, max, skip_checks);
        else if (n < max) out[n++] = s;
        else return max + 1;
    }
    return n;
}

/* `a[idx] += v` (or -=) as lowering leaves it for privatize.c: an atomic. */
static int add_atomic(const tk_ir *s) {
    return s->op == IR_EVAL && s->k[0]->op == IR_ATOMIC && (s->k[0]->sub == A_ADD || s->k[0]->sub == A_SUB) &&
           !s->k[0]->comp;
}

/* A store of a whole element (a component's, a[i].x = s, is not a panel's). */
static int whole_store(const tk_ir *s) { return s->op == IR_STORE && !s->comp; }

/* The store privatize.c makes of `a[idx] += v` on the iteration's own element:
 * a[idx] = a[idx] + v, here a plain store (the panel owns its rows). */
tk_ir *tk_rows_as_store(tk_cc *C, const tk_ir *s) {
    if (s->op == IR_STORE) return s->comp ? NULL : (tk_ir *)s;
    if (!add_atomic(s)) return NULL;
    const tk_ir *a = s->k[0];
    tk_ir *ld = ir_new(C, IR_LOAD, a->ty, a->line);
    ld->param = a->param;
    for (int k = 1; k < a->n; k++) ir_push(C, ld, ir_clone(C, a->k[k]));
    tk_ir *op = ir_new(C, IR_BIN, a->ty, a->line);
    op->sub = a->sub == A_ADD ? B_ADD : B_SUB;
    op->aux_ty = a->ty;
    ir_push(C, op, ld);
    ir_push(C, op, ir_clone(C, a->k[0]));
    tk_ir *st = ir_new(C, IR_STORE, ty_void(), a->line);
    st->param = a->param;
    st->sub = ST_PLAIN;
    ir_push(C, st, op);
    for (int k = 1; k < a->n; k++) ir_push(C, st, ir_clone(C, a->k[k]));
    return st;
}

int tk_rows_unit_for(const tk_ir *s) { return s && s->op == IR_FOR && s->k[2]->op == IR_CONST && s->k[2]->c.i == 1; }

/* v or v + c (c a constant) */
static int is_var(const tk_ir *e, int v) {
    e = ir_strip(e);
    if (e->op == IR_LOCAL) return e->local == v;
    return e->op == IR_BIN && (e->sub == B_ADD || e->sub == B_SUB) && e->k[1]->op == IR_CONST && ir_strip(e->k[0])->op == IR_LOCAL &&
           ir_strip(e->k[0])->local == v;
}

/* --------------------------------------------------------------- match */
/* Loads in e: C only at the stored element (allow_c), else not at all; the other arrays noted. */
static void loads_ok(tiler *t, const tk_ir *e, int allow_c) {
    if (!t->ok) return;
    if (!tk_rows_pure(e)) { t->ok = 0; return; }
    if (e->op == IR_LOAD) {
        if (e->param == t->store->param) {
            if (!allow_c || e->n != t->store->n - 1) { t->ok = 0; return; }
            for (int i = 0; i < e->n; i++)
                if (!ir_same(e->k[i], t->store->k[i + 1])) { t->ok = 0; return; }
            return;
        }
        int seen = 0;
        for (int i = 0; i < t->nreads; i++) seen |= t->reads[i] == e->param;
        if (!seen) {
            if (t->nreads >= 64) { t->ok = 0; return; }
            t->reads[t->nreads++] = e->param;
        }
    }
    for (int i = 0; i < e->n; i++) loads_ok(t, e->k[i], allow_c);
}

static int elem_ok(tk_spec *S, const tk_ir *st) {
    tk_type at = S->ptypes[st->param];
    tack_dtype dt = (tack_dtype)at.dt;
    if (at.kind != TY_ARRAY || st->k[0]->ty.kind != TY_VALUE || st->k[0]->ty.dt != at.dt) return 0;
    return dt == TACK_F32 || dt == TACK_F64 || dt == TACK_I8 || dt == TACK_I16 || dt == TACK_I32 || dt == TACK_I64 ||
           dt == TACK_U8 || dt == TACK_U16 || dt == TACK_U32 || dt == TACK_U64;
}

/* A local the nest assigns: once, private to the iteration, a plain value. */
static int own_local(tiler *t, int l, int scope) {
    return l != t->iv && l != t->kv && l != t->jv && ir_assignments(t->rows, l) == 1 && t->S->locals[l].scope == scope &&
           t->S->locals[l].ty.kind == TY_VALUE;
}

/* Whether the (check-free) rows loop is the nest; fills t. */
static int match(tiler *t, int scope) {
    tk_ir *top[2], *l1b[MAX_STMTS + 2], *l2b[MAX_STMTS + 2];
    if (tk_rows_stmts(t->rows->k[3], top, 0, 1, 0) != 1 || !tk_rows_unit_for(top[0])) return 0;
    tk_ir *l1 = top[0];
    int n1 = tk_rows_stmts(l1->k[3], l1b, 0, MAX_STMTS + 1, 0);
    if (n1 < 1 || n1 > MAX_STMTS + 1 || !tk_rows_unit_for(l1b[n1 - 1])) return 0;
    tk_ir *l2 = l1b[n1 - 1];
    int n2 = tk_rows_stmts(l2->k[3], l2b, 0, MAX_STMTS + 1, 0);
    if (n2 < 1 || n2 > MAX_STMTS + 1 || (!whole_store(l2b[n2 - 1]) && !add_atomic(l2b[n2 - 1]))) return 0;
    for (int i = 0; i < 2; i++)
        if (!ir_invariant(l1->k[i], t->rows) || !tk_rows_pure(l1->k[i]) || !ir_invariant(l2->k[i], t->rows) ||
            !tk_rows_pure(l2->k[i]))
            return 0;
    if (ir_assignments(t->rows, l1->local) != 1 || ir_assignments(t->rows, l2->local) != 1) return 0;
    tk_ir *st = tk_rows_as_store(t->C, l2b[n2 - 1]);
    if (st->param < 0 || st->n < 3 || !elem_ok(t->S, st)) return 0;
    t->store = st;
    /* which loop is j: the one the store names */
    int v1 = l1->local, v2 = l2->local, iaxes = 0, jaxes = 0, jvar = -1;
    for (int a = 1; a < st->n; a++) {
        const tk_ir *ix = st->k[a];
        if (ir_mentions(ix, t->iv)) {
            if (!is_var(ix, t->iv)) return 0;
            iaxes++;
        } else if (ir_mentions(ix, v1) || ir_mentions(ix, v2)) {
            int v = ir_mentions(ix, v1) ? v1 : v2;
            if (!is_var(ix, v) || jvar >= 0) return 0;
            jvar = v;
            jaxes++;
        } else if (!ir_invariant(ix, t->rows) || !tk_rows_pure(ix)) {
            return 0;
        }
    }
    if (iaxes != 1 || jaxes != 1) return 0;
    tk_ir *kloop = jvar == v2 ? l1 : l2, *jloop = jvar == v2 ? l2 : l1;
    if (jvar == v1 && n1 != 1) return 0; /* j outside: nothing between the loops */
    t->kv = kloop->local;
    t->jv = jloop->local;
    t->klo = kloop->k[0], t->khi = kloop->k[1], t->jlo = jloop->k[0], t->jhi = jloop->k[1];
    t->ok = 1;
    t->npre = n1 - 1;
    t->ntmp = n2 - 1;
    for (int i = 0; i < t->npre; i++) t->pre[i] = l1b[i];
    for (int i = 0; i < t->ntmp; i++) t->tmp[i] = l2b[i];
    /* the locals: assigned once, before they are read */
    tk_ir *all[2 * MAX_STMTS];
    int na = 0;
    for (int i = 0; i < t->npre; i++) all[na++] = t->pre[i];
    for (int i = 0; i < t->ntmp; i++) all[na++] = t->tmp[i];
    for (int i = 0; i < na; i++) {
        tk_ir *a = all[i];
        if (a->op != IR_ASSIGN || !own_local(t, a->local, scope) || a->k[0]->ty.kind != TY_VALUE) return 0;
        for (int u = i; u < na; u++)
            if (ir_mentions(a->k[0], all[u]->local)) return 0;
        if (i < t->npre && ir_mentions(a->k[0], t->jv)) return 0;
        loads_ok(t, a->k[0], i >= t->npre);
    }
    for (int a = 1; a < st->n; a++) {
        for (int u = 0; u < na; u++)
            if (ir_mentions(st->k[a], all[u]->local)) return 0;
        if (ir_mentions(st->k[a], t->kv)) return 0;
        loads_ok(t, st->k[a], 0);
    }
    loads_ok(t, st->k[0], 1);
    return t->ok;
}

/* ---------------------------------------------------------- substitute */
static int renamed(tiler *t, int l) {
    for (int i = 0; i < t->nmap; i++)
        if (t->from[i] == l) return t->to[i];
    return -1;
}

static tk_ir *subst(tiler *t, const tk_ir *e);

/* A load that does not depend on j (nor on a local of the j loop), hoisted to a local. */
static int hoistable(tiler *t, const tk_ir *e) {
    if (e->op != IR_LOAD || e->param == t->store->param || ir_mentions(e, t->jv)) return 0;
    for (int i = 0; i < t->ntmp; i++)
        if (ir_mentions(e, t->tmp[i]->local)) return 0;
    return 1;
}

static tk_ir *subst(tiler *t, const tk_ir *e) {
    tk_cc *C = t->C;
    if (e->op == IR_LOCAL) {
        if (e->local == t->iv && t->i_to) return ir_clone(C, t->i_to);
        if (e->local == t->kv && t->k_to) return ir_clone(C, t->k_to);
        int r = renamed(t, e->local);
        if (r >= 0) return ir_local_of(C, t->S, r, e->line);
        return ir_clone(C, e);
    }
    if (t->acc >= 0 && e->op == IR_LOAD && e->param == t->store->param) return ir_local_of(C, t->S, t->acc, e->line);
    if (t->hoist && hoistable(t, e) && t->nhoist < MAX_HOIST) {
        int h = tk_new_local(C, t->S, "tk_h", e->ty, t->S->locals[t->iv].scope);
        tk_ir *r = ir_new(C, e->op, e->ty, e->line);
        *r = *e;
        r->k = tk_alloc(&C->arena, sizeof(tk_ir *) * (size_t)(e->n ? e->n : 1));
        r->cap = e->n;
        for (int j = 0; j < e->n; j++) r->k[j] = subst(t, e->k[j]);
        t->hoist[t->nhoist++] = ir_assign(C, h, r);
        return ir_local_of(C, t->S, h, e->line);
    }
    tk_ir *r = ir_new(C, e->op, e->ty, e->line);
    *r = *e;
    r->k = tk_alloc(&C->arena, sizeof(tk_ir *) * (size_t)(e->n ? e->n : 1));
    r->cap = e->n;
    for (int j = 0; j < e->n; j++) r->k[j] = subst(t, e->k[j]);
    if (r->op == IR_STORE) r->sub = ST_PLAIN;
    return r;
}

static tk_ir *plus(tiler *t, int v, int64_t c, int line) {
    tk_ir *x = ir_local_of(t->C, t->S, v, line);
    if (!c) return x;
    tk_ir *r = ir_i64_bin(t->C, B_ADD, x, ir_i64(t->C, c, line));
    r->aux = TK_BIN_NOWRAP;
    if (ty_eq(t->S->locals[v].ty, r->ty)) return r;
    tk_ir *cv = ir_new(t->C, IR_CAST, t->S->locals[v].ty, line);
    ir_push(t->C, cv, r);
    return cv;
}

/* `pre; for j in range(jt, je): tmp; store` for row i + r (k as it is), original locals. */
static tk_ir *row_update(tiler *t, int r, int jt, int je, int line) {
    t->nmap = 0;
    t->acc = -1;
    t->hoist = NULL;
    t->k_to = NULL;
    t->i_to = r ? plus(t, t->iv, r, line) : NULL;
    tk_ir *b = ir_block(t->C, line);
    for (int i = 0; i < t->npre; i++) ir_push(t->C, b, subst(t, t->pre[i]));
    tk_ir *jb = ir_block(t->C, line);
    for (int i = 0; i < t->ntmp; i++) ir_push(t->C, jb, subst(t, t->tmp[i]));
    ir_push(t->C, jb, subst(t, t->store));
    ir_push(t->C, b, ir_for(t->C, t->jv, ir_local_of(t->C, t->S, jt, line), ir_local_of(t->C, t->S, je, line), 1, jb, TK_FOR_IVDEP));
    t->i_to = NULL;
    return b;
}

/* The jammed block: rows i..i+R-1, k..k+nq-1, j over the tile. */
static tk_ir *jammed(tiler *t, int jt, int je, int nq, int line) {
    tk_cc *C = t->C;
    tk_spec *S = t->S;
    int scope = S->locals[t->iv].scope;
    tk_ir *head = ir_block(C, line), *jb = ir_block(C, line);
    tk_ir *hoists[MAX_HOIST];
    t->nhoist = 0;
    t->hoist = hoists;
    int accs[R_ROWS];
    for (int r = 0; r < R_ROWS; r++) {
        accs[r] = tk_new_local(C, S, "tk_c", t->store->k[0]->ty, scope);
        t->nmap = 0;
        t->acc = -1;
        t->i_to = plus(t, t->iv, r, line);
        t->k_to = NULL;
        tk_ir *ld = ir_new(C, IR_LOAD, t->store->k[0]->ty, line);
        ld->param = t->store->param;
        for (int a = 1; a < t->store->n; a++) ir_push(C, ld, subst(t, t->store->k[a]));
        ir_push(C, jb, ir_assign(C, accs[r], ld));
    }
    for (int q = 0; q < nq; q++)
        for (int r = 0; r < R_ROWS; r++) {
            t->i_to = plus(t, t->iv, r, line);
            t->k_to = q ? plus(t, t->kv, q, line) : NULL;
            t->nmap = 0;
            for (int i = 0; i < t->npre; i++) {
                int nl = tk_new_local(C, S, "tk_p", S->locals[t->pre[i]->local].ty, scope);
                t->acc = -1;
                t->hoist = NULL; /* the pre statements run before the j loop already */
                tk_ir *v = subst(t, t->pre[i]->k[0]);
                t->hoist = hoists;
                ir_push(C, head, ir_assign(C, nl, v));
                t->from[t->nmap] = t->pre[i]->local, t->to[t->nmap++] = nl;
            }
            for (int i = 0; i < t->ntmp; i++) {
                int nl = tk_new_local(C, S, "tk_t", S->locals[t->tmp[i]->local].ty, scope);
                t->acc = accs[r];
                tk_ir *v = subst(t, t->tmp[i]->k[0]);
                ir_push(C, jb, ir_assign(C, nl, v));
                t->from[t->nmap] = t->tmp[i]->local, t->to[t->nmap++] = nl;
            }
            t->acc = accs[r];
            tk_ir *v = subst(t, t->store->k[0]);
            ir_push(C, jb, ir_assign(C, accs[r], v));
        }
    for (int r = 0; r < R_ROWS; r++) {
        t->nmap = 0;
        t->acc = -1;
        t->hoist = NULL;
        t->i_to = plus(t, t->iv, r, line);
        t->k_to = NULL;
        tk_ir *stc = ir_new(C, IR_STORE, ty_void(), line);
        stc->param = t->store->param;
        stc->sub = ST_PLAIN;
        ir_push(C, stc, ir_local_of(C, S, accs[r], line));
        for (int a = 1; a < t->store->n; a++) ir_push(C, stc, subst(t, t->store->k[a]));
        ir_push(C, jb, stc);
    }
    for (int h = 0; h < t->nhoist; h++) ir_push(C, head, hoists[h]);
    t->hoist = NULL;
    t->i_to = t->k_to = NULL;
    ir_push(C, head, ir_for(C, t->jv, ir_local_of(C, S, jt, line), ir_local_of(C, S, je, line), 1, jb, TK_FOR_IVDEP));
    return head;
}

static tk_ir *bmin(tk_cc *C, tk_ir *a, tk_ir *b) { return ir_i64_bin(C, B_MIN, a, b); }

/* ---------------------------------------------------------------- pass */
/* In the loop as written, `a[.., i, ..] += v` on row i's own element: the store privatize.c
 * would make of it (it makes it only where the parallel loop's variable names the element,
 * which after this pass is the panel's). */
void tk_tile_own_rows(tk_cc *C, int iv, tk_ir *s) {
    for (int i = 0; i < s->n; i++) {
        tk_ir *x = s->k[i];
        if (add_atomic(x)) {
            int own = 0;
            for (int a = 1; a < x->k[0]->n; a++) own |= is_var(x->k[0]->k[a], iv);
            if (own) s->k[i] = tk_rows_as_store(C, x);
        } else if (x->op >= IR_BLOCK) {
            tk_tile_own_rows(C, iv, x);
        }
    }
}

/* The rows [i0, i1) of parallel loop pf, as nests.c's copy without the checks *cond shows cannot fail. */
tk_ir *tk_rows_copy(tk_cc *C, tk_spec *S, const tk_ir *pf, int i0, int i1, tk_ir **cond) {
    int iv = pf->vars[0], line = pf->line;
    *cond = NULL;
    tk_ir *rows = ir_for(C, iv, ir_local_of(C, S, i0, line), ir_local_of(C, S, i1, line), 1, ir_clone(C, pf->k[1]), TK_FOR_QUIET);
    return tk_nests_fast(C, rows, cond);
}

/* cond and both loops run: klo < khi and jlo < jhi */
tk_ir *tk_rows_run(tk_cc *C, tk_ir *cond, const tk_ir *klo, const tk_ir *khi, const tk_ir *jlo, const tk_ir *jhi) {
    cond = ir_and(C, cond, ir_i64_bin(C, B_LT, ir_clone(C, klo), ir_clone(C, khi)));
    return ir_and(C, cond, ir_i64_bin(C, B_LT, ir_clone(C, jlo), ir_clone(C, jhi)));
}

/* cond and array c shares no byte with any of reads[0..n) (M_DISJOINT) */
tk_ir *tk_rows_disjoint(tk_cc *C, tk_ir *cond, int c, const int *reads, int n, int line) {
    for (int r = 0; r < n; r++) {
        tk_ir *d = ir_new(C, IR_MATH, ty_value(TACK_BOOL), line);
        d->sub = M_DISJOINT;
        d->aux_ty = ty_value(TACK_I64);
        d->param = c;
        d->aux = reads[r];
        cond = ir_and(C, cond, d);
    }
    return cond;
}

/* Parallel loop pf made a loop over panels of p rows (ib its variable): each sets i0 = off + ib * p
 * and i1 = min(i0 + p, off + n), then runs `extra` (NULL: nothing), then `if (cond) then else` the
 * panel's rows as written, with their checks (pf's body, its own-row `+=` as stores). */
void tk_rows_panels(tk_cc *C, tk_spec *S, tk_ir *pf, int ib, int i0, int i1, int64_t p, tk_ir *extra, tk_ir *cond,
                    tk_ir *then) {
    int iv = pf->vars[0], line = pf->line;
    tk_ir *body = pf->k[1];
    /* the fallback: each row as written (with its checks); it runs where an index could fail,
     * C overlaps what is read, or a loop is empty -- not worth a copy of its own for the C
     * compiler to optimize (nests.c's per-row versions) */
    tk_ir *els = ir_block(C, line);
    tk_tile_own_rows(C, iv, body);
    ir_push(C, els, ir_for(C, iv, ir_local_of(C, S, i0, line), ir_local_of(C, S, i1, line), 1, body, TK_FOR_QUIET));
    tk_ir *iff = ir_new(C, IR_IF, ty_void(), line);
    ir_push(C, iff, cond);
    ir_push(C, iff, then);
    ir_push(C, iff, els);
    tk_ir *n = ir_as_i64(C, pf->k[0]);
    tk_ir *off = pf->off ? ir_as_i64(C, pf->off) : ir_i64(C, 0, line);
    tk_ir *nb = ir_block(C, line);
    tk_ir *first = ir_i64_bin(C, B_ADD, ir_clone(C, off), ir_i64_bin(C, B_MUL, ir_local_of(C, S, ib, line), ir_i64(C, p, line)));
    ir_push(C, nb, ir_assign(C, i0, first));
    ir_push(C, nb, ir_assign(C, i1, ir_i64_bin(C, B_MIN, ir_i64_bin(C, B_ADD, ir_local_of(C, S, i0, line), ir_i64(C, p, line)),
                                              ir_i64_bin(C, B_ADD, ir_clone(C, off), ir_clone(C, n)))));
    if (extra) ir_push(C, nb, extra);
    ir_push(C, nb, iff);
    /* panels: n // p + (n % p > 0), which is <= 0 when n is */
    tk_ir *q = ir_i64_bin(C, B_FLOORDIV, ir_clone(C, n), ir_i64(C, p, line));
    tk_ir *rem = ir_i64_bin(C, B_GT, ir_i64_bin(C, B_MOD, ir_clone(C, n), ir_i64(C, p, line)), ir_i64(C, 0, line));
    tk_ir *sel = ir_new(C, IR_SELECT, ty_value(TACK_I64), line);
    ir_push(C, sel, rem);
    ir_push(C, sel, ir_i64(C, 1, line));
    ir_push(C, sel, ir_i64(C, 0, line));
    pf->k[0] = ir_i64_bin(C, B_ADD, q, sel);
    pf->k[1] = nb;
    pf->vars[0] = ib;
    pf->off = NULL;
    pf->hi = NULL;
    pf->bnd = NULL;
}

/* Parallel loop pf (one axis): its body tiled, with nests.c's per-row copies as the fallback. 1: done. */
int tk_tile(tk_cc *C, tk_spec *S, tk_ir *pf) {
    if (!tk_config_int(TK_CFG_TILE)) return 0; /* the switch, for comparing (config.def) */
    if (pf->aux != 1 || pf->red || pf->hist || pf->vars[0] < 0) return 0;
    tk_ir *body = pf->k[1];
    int iv = pf->vars[0], scope = S->locals[iv].scope;
    /* a quick look at the loop as written before anything is made */
    tk_ir *top[2], *in[MAX_STMTS + 2];
    if (tk_rows_stmts(body, top, 0, 1, 1) != 1 || !tk_rows_unit_for(top[0])) return 0;
    int n1 = tk_rows_stmts(top[0]->k[3], in, 0, MAX_STMTS + 1, 1);
    if (n1 < 1 || n1 > MAX_STMTS + 1 || !tk_rows_unit_for(in[n1 - 1])) return 0;
    int n2 = tk_rows_stmts(in[n1 - 1]->k[3], in, 0, MAX_STMTS + 1, 1);
    if (n2 < 1 || n2 > MAX_STMTS + 1 || (!whole_store(in[n2 - 1]) && !add_atomic(in[n2 - 1]))) return 0;

    int line = pf->line;
    tk_type i64 = ty_value(TACK_I64);
    int ib = tk_new_local(C, S, "tk_panel", i64, scope);
    int i0 = tk_new_local(C, S, "tk_i0", i64, scope), i1 = tk_new_local(C, S, "tk_i1", i64, scope);
    tiler t;
    memset(&t, 0, sizeof t);
    t.C = C, t.S = S, t.iv = iv, t.acc = -1;
    tk_ir *cond;
    t.rows = tk_rows_copy(C, S, pf, i0, i1, &cond);
    if (!match(&t, scope)) return 0;

    /* the tiled panel */
    int esz = dt_bits((tack_dtype)S->ptypes[t.store->param].dt) / 8;
    int64_t jt_n = JT_BYTES / (esz > 0 ? esz : 8);
    int jt = tk_new_local(C, S, "tk_jt", i64, scope), je = tk_new_local(C, S, "tk_je", i64, scope);
    int kt = tk_new_local(C, S, "tk_kt", i64, scope), ke = tk_new_local(C, S, "tk_ke", i64, scope);
    int kq = tk_new_local(C, S, "tk_kq", i64, scope), ir = tk_new_local(C, S, "tk_ir", i64, scope);
    /* k quads, then the last k's (four rows, one k at a time) */
    tk_ir *quad = jammed(&t, jt, je, Q_KS, line);
    tk_ir *lastk = jammed(&t, jt, je, 1, line);
    /* the k loops poll for their work: an iteration of the jammed one is R * Q * (je - jt) updates */
    int wq = tk_new_local(C, S, "tk_work", i64, scope), w1 = tk_new_local(C, S, "tk_work", i64, scope);
    tk_ir *rb = ir_block(C, line);
    tk_ir *kquad = ir_for(C, t.kv, ir_local_of(C, S, kt, line), ir_local_of(C, S, kq, line), Q_KS, quad, TK_FOR_POLLS);
    kquad->aux = wq + 1;
    ir_push(C, rb, kquad);
    ir_push(C, rb, ir_for(C, t.kv, ir_local_of(C, S, kq, line), ir_local_of(C, S, ke, line), 1, lastk, TK_FOR_QUIET)); /* < Q k's */
    tk_ir *onerow = ir_block(C, line);
    tk_ir *krow = ir_for(C, t.kv, ir_local_of(C, S, kt, line), ir_local_of(C, S, ke, line), 1, row_update(&t, 0, jt, je, line), TK_FOR_POLLS);
    krow->aux = w1 + 1;
    ir_push(C, onerow, krow);
    tk_ir *ktile = ir_block(C, line);
    ir_push(C, ktile, ir_assign(C, ke, bmin(C, ir_i64_bin(C, B_ADD, ir_local_of(C, S, kt, line), ir_i64(C, KT, line)), ir_clone(C, t.khi))));
    ir_push(C, ktile, ir_assign(C, kq, ir_i64_bin(C, B_ADD, ir_local_of(C, S, kt, line),
                                        ir_i64_bin(C, B_AND, ir_i64_bin(C, B_SUB, ir_local_of(C, S, ke, line), ir_local_of(C, S, kt, line)), ir_i64(C, -Q_KS, line)))));
    ir_push(C, ktile, ir_for(C, iv, ir_local_of(C, S, i0, line), ir_local_of(C, S, ir, line), R_ROWS, rb, TK_FOR_QUIET));
    ir_push(C, ktile, ir_for(C, iv, ir_local_of(C, S, ir, line), ir_local_of(C, S, i1, line), 1, onerow, TK_FOR_QUIET));
    tk_ir *jtile = ir_block(C, line);
    ir_push(C, jtile, ir_assign(C, je, bmin(C, ir_i64_bin(C, B_ADD, ir_local_of(C, S, jt, line), ir_i64(C, jt_n, line)), ir_clone(C, t.jhi))));
    ir_push(C, jtile, ir_assign(C, w1, ir_i64_bin(C, B_SUB, ir_local_of(C, S, je, line), ir_local_of(C, S, jt, line))));
    ir_push(C, jtile, ir_assign(C, wq, ir_i64_bin(C, B_MUL, ir_local_of(C, S, w1, line), ir_i64(C, R_ROWS * Q_KS, line))));
    ir_push(C, jtile, ir_for(C, kt, ir_clone(C, t.klo), ir_clone(C, t.khi), KT, ktile, TK_FOR_QUIET));
    tk_ir *then = ir_block(C, line);
    then->str = "tack: rows tiled (tile.c): panels of rows, blocks of 4 rows by 4 k's, each cell's updates in the same order";
    ir_push(C, then, ir_for(C, jt, ir_clone(C, t.jlo), ir_clone(C, t.jhi), jt_n, jtile, TK_FOR_QUIET));

    /* the test: nests.c's (the checks), the loops run, C disjoint from what is read */
    cond = tk_rows_run(C, cond, t.klo, t.khi, t.jlo, t.jhi);
    cond = tk_rows_disjoint(C, cond, t.store->param, t.reads, t.nreads, line);
    /* the parallel loop over panels; ir: i0 + whole blocks */
    tk_ir *whole = ir_i64_bin(C, B_AND, ir_i64_bin(C, B_SUB, ir_local_of(C, S, i1, line), ir_local_of(C, S, i0, line)), ir_i64(C, -R_ROWS, line));
    tk_rows_panels(C, S, pf, ib, i0, i1, P_ROWS, ir_assign(C, ir, ir_i64_bin(C, B_ADD, ir_local_of(C, S, i0, line), whole)), cond, then);
    return 1;
}
