/*
 * periodic.c -- periodic and clamped indices: `(i + c) % n`, `min(i + c, e)`
 * and `max(i + c, e)` in a parallel loop run as `i + c` in the loop's
 * interior, and their index checks go.
 *
 * A stencil on a periodic domain reads its neighbours across the edge with
 * Python's `%`:
 *
 *     for i, j in tack.ndrange(n, m):
 *         lap = u[(i + 1) % n, j] + u[(i - 1 + n) % n, j]
 *             + u[i, (j + 1) % m] + u[i, (j - 1 + m) % m] - 4.0 * u[i, j]
 *
 * Each `%` is a division with a sign fix-up, and the index it gives is
 * checked against the array's extent per iteration (nothing tells checks.c
 * that a remainder by n lies in [0, n)), so the loop stayed out of SIMD lanes
 * and the neighbour loads were gathers: the reaction-diffusion step of
 * issue 41 ran 1.4-2x slower per core than the same code under Numba.  Yet
 * for all but the iterations at the domain's border the `%` changes nothing.
 *
 * What the pass recognizes, in each parallel loop (IR_PFOR) of the kernel:
 * an i64 `a % d` whose divisor d is loop-invariant (a local the loop does not
 * assign, an extent, a constant, arithmetic on them) and whose dividend a is,
 * through casts and private locals assigned once at the top of the body,
 * `v + c + k * d` with v one of the loop's own variables (coefficient one),
 * c a constant (|c| < 2^40) and k a small constant (|k| <= 16; d written
 * again as the same expression).  Both `(i + 1) % n` and `(i - 1 + n) % n`
 * are of that form, so are `(i + 2 * n - 3) % n` and `(i - 5) % 3`.
 * Python's `%` takes the sign of the divisor; for d > 0 the result is the
 * r in [0, d) with a - r a multiple of d.  If 0 <= v + c < d and nothing
 * overflows, r = v + c (a - (v + c) = k * d): that is the interior, v in
 * [-c, d - c), whatever the sign of c and however c compares with d.  Outside
 * it the `%` is computed as written.
 *
 * Such a `%` becomes M_PMOD [the `%` as it was] (v in `local`, c in `c.i`,
 * aux 1 when v is the innermost variable, whose range the C layout splits).
 * The loop gets `per` = [flag, h, m0, p...]: a bool frame local that holds
 *
 *     every divisor d: 0 < d < 2^50;  every index check of such a result
 *     (the index a private local assigned once from one, or the M_PMOD
 *     itself) against extent s: d <= s,
 *
 * h the interior's end for the innermost variable (min of its extent and
 * each d - c), m0 its start as a constant (max of 0 and each -c), and the
 * locals p assigned from an M_PMOD.  Under the flag every such remainder
 * lies in [0, d), inside every extent it indexes: those checks cannot fail
 * and the negative-index wraps are the identity (d > 0).  With checks=False
 * only the wraps are concerned.  And the interior's sums stay below 2^52 in
 * magnitude, so the `v + c + k * d` the source computes does not wrap there.
 *
 * emit_cpu.c then writes the chunk in two versions, chosen once per chunk by
 * the flag: the loop as it was (a divisor <= 0, an extent the remainder
 * could pass), and the periodic version, written with those checks and wraps
 * left out (tk_periodic_hide / tk_periodic_show swap them for nothing and
 * back) and its innermost loop -- a whole row of an ndrange, the chunk of a
 * 1-D loop -- in three parts: [lo, max(lo, min(m0, hi))) and [max(..,
 * min(h, hi)), hi) with each `%` as written (one copy of the body for both),
 * and the interior between them where the innermost variable's M_PMOD are
 * written `v + c`.  The interior is the
 * plain stencil: contiguous neighbour loads, no checks, in SIMD lanes.  The
 * outer variables' remainders are the same across a row, so the C compiler
 * computes them once per row.
 *
 * Clamped indices are the same split with other break points.  Rodinia's
 * stencils (hotspot, hotspot3D, srad, pathfinder) mirror the edge instead of
 * wrapping round it, `src[r, min(c + 1, cols - 1)]`, `src[max(k - 1, 0)]`:
 * checks.c proves only offsets `v + c`, so each such index kept its check
 * and its negative-index wrap per element, and in the lane dimension it is
 * no offset of the counter, so its loads were gathers that GCC does not
 * vectorize (hotspot's step at 512^2 took 3.3x the time of the same kernel
 * over the interior alone).  A clamp here is an i64 min/max whose one
 * operand is invariant and plain (constants, extents, locals the loop does
 * not assign and private locals assigned once from such, +, -, *, min, max:
 * nothing that can fail before the loop) and whose other operand is again a
 * clamp or, at the bottom, `v + c` (form_of, no invariant term); up to four
 * levels, in either operand order, through private locals.  Each level
 * keeps the order of v, so the clamp's values over the loop lie between its
 * values at v's least and greatest (0 or the 1-D loop's offset; that plus
 * the trip count less one), and the flag asks, for a clamp that is indexed
 * or wrapped, f(least) >= 0, and for each extent s it is checked against,
 * f(greatest) < s.  Under the flag its checks and wraps cannot fail and are
 * the identity, in the whole loop; a clamp whose bound lies outside the
 * array fails the flag, and the loop as written raises where it raised.  The
 * flag also asks every bound, and the variable's range, below 2^50 in
 * magnitude, so the break points below do not overflow.  A clamp is `v + c`
 * exactly where v + c lies within every level's bound: v <= U - c for each
 * min's U, v >= L - c for each max's L.  So for the innermost variable the
 * interior's end is narrowed to U - c + 1 and its start, no longer a
 * constant when a max is there, is the frame local `_interior_lo`; in the
 * interior the clamp is written `v + c` (the same M_PMOD, its kid the
 * min/max), at the row's ends as written.  Outer variables' clamps (hotspot's
 * rows, hotspot3D's layers) are the same across a row: their checks go under
 * the flag and the C compiler computes them once per row.  An i32 clamp, a
 * bound that the loop assigns or that divides, and a clamp of `v + n` with n
 * not a constant stay as written.
 *
 * Only where parallel loops run in chunks (target.h's TK_LOOPS_CHUNKED: the
 * CPU).  On a GPU each iteration is a thread and a warp at the border would
 * diverge on a split; its `%` is a few instructions against a memory-bound
 * stencil's loads, so the grid layouts keep the loop as written.  A 1-D loop
 * over range(lo, hi) with lo != 0, or an ndrange axis with bounds, keeps
 * its `%` in the interior (the variable is not the chunk's counter), though
 * its checks still go under the flag.
 */
#include <string.h>

#include "compiler/compiler.h"
#include "compiler/target.h"

#define MAX_C ((int64_t)1 << 40)   /* |c| below this */
#define MAX_K 16                   /* |k| at most this */
#define D_LOG 50                   /* 0 < d < 2^50 under the flag */
#define MAX_SITES 64
#define SPLIT_MIN 64               /* a constant divisor below this leaves the interior as it is */

/* a + b with a and b below 2^40 stays far inside int64 */
typedef struct form {
    int var;            /* a variable of the loop, or -1 */
    int64_t c;          /* the constant */
    const tk_ir *atom;  /* an invariant expression, times k; NULL: none */
    int64_t k;
} form;

#define MAX_LEVELS 4                /* min/max around one v + c */

/* A clamp: v + c through min/max with invariant bounds, innermost first. */
typedef struct clamp {
    int n;
    int op[MAX_LEVELS];               /* B_MIN or B_MAX */
    const tk_ir *b[MAX_LEVELS];       /* the bound */
} clamp;

typedef struct site {
    tk_ir **slot;       /* where the `%` (or the clamp) is */
    tk_ir *pm;          /* its M_PMOD */
    const tk_ir *d;     /* its divisor; NULL: a clamp */
    clamp cl;           /* a clamp's levels */
    int low;            /* a clamp indexed or wrapped: its least value >= 0 is in the flag */
} site;

typedef struct per_fn {
    tk_cc *C;
    tk_spec *K;
    tk_ir *loop;
    tk_ir **def;        /* per local: the value of its one top-level assignment, seen so far */
    int *pl;            /* per local: 1 + the site whose M_PMOD it is assigned from, or 0 */
    site sites[MAX_SITES];
    int n;
    int bad;
    tk_ir *cond;        /* the flag's condition */
    const tk_ir *le[MAX_SITES][2]; /* the (divisor, extent) pairs in it */
    int nle;
    const tk_ir *ce[MAX_SITES][2]; /* the (clamp, extent) pairs in it */
    int nce;
} per_fn;

static int is_i64(tk_type t) { return t.kind == TY_VALUE && t.dt == TACK_I64; }

/* Through casts between 64-bit integers. */
static const tk_ir *strip64(const tk_ir *e) {
    while (e->op == IR_CAST && is_i64(e->ty) && is_i64(e->k[0]->ty)) e = e->k[0];
    return e;
}

static int loop_var(const per_fn *f, int l) {
    for (int d = 0; d < f->loop->aux; d++)
        if (f->loop->vars[d] == l) return d;
    return -1;
}

static int small(int64_t c) { return c > -MAX_C && c < MAX_C; }

/* The form of e, or 0. */
static int form_of(per_fn *f, const tk_ir *e, form *r, int depth) {
    e = strip64(e);
    memset(r, 0, sizeof *r);
    r->var = -1;
    if (depth > 16 || !is_i64(e->ty)) return 0;
    switch (e->op) {
    case IR_CONST:
        if (e->aux == TK_CONST_PYINT || !small(e->c.i)) return 0;
        r->c = e->c.i;
        return 1;
    case IR_LOCAL:
        if (loop_var(f, e->local) >= 0) {
            if (ir_assignments(f->loop->k[f->loop->aux], e->local)) return 0;
            r->var = e->local;
            return 1;
        }
        if (f->def[e->local]) return form_of(f, f->def[e->local], r, depth + 1);
        if (!ir_invariant(e, f->loop)) return 0;
        r->atom = e;
        r->k = 1;
        return 1;
    case IR_SHAPE:
        r->atom = e;
        r->k = 1;
        return 1;
    case IR_BIN: {
        if (e->sub != B_ADD && e->sub != B_SUB) break;
        form a, b;
        if (!form_of(f, e->k[0], &a, depth + 1) || !form_of(f, e->k[1], &b, depth + 1)) return 0;
        int64_t s = e->sub == B_ADD ? 1 : -1;
        if (b.var >= 0 && (s < 0 || a.var >= 0)) return 0; /* the variable once, added */
        if (a.atom && b.atom && !ir_same(strip64(a.atom), strip64(b.atom))) return 0;
        r->var = a.var >= 0 ? a.var : b.var;
        r->c = a.c + s * b.c;
        r->atom = a.atom ? a.atom : b.atom;
        r->k = a.k + s * b.k;
        return small(r->c) && r->k >= -MAX_K && r->k <= MAX_K;
    }
    default: return 0;
    }
    if (e->sub != B_MUL) return 0; /* a constant times a form without the variable: 2 * n */
    form a, b;
    if (!form_of(f, e->k[0], &a, depth + 1) || !form_of(f, e->k[1], &b, depth + 1)) return 0;
    if (a.atom || a.var >= 0) {
        form t = a;
        a = b;
        b = t;
    }
    if (a.atom || a.var >= 0 || b.var >= 0 || a.c < -MAX_K || a.c > MAX_K) return 0;
    *r = b;
    r->c = a.c * b.c;
    r->k = a.c * b.k;
    return small(r->c) && r->k >= -MAX_K && r->k <= MAX_K;
}

static tk_ir *i64c(tk_cc *C, int64_t v, int line) { return ir_const_i(C, ty_value(TACK_I64), v, line); }

/* x % d at *slot: a site, when of the form. */
static void try_mod(per_fn *f, tk_ir **slot) {
    tk_ir *x = *slot;
    form a;
    if (f->n == MAX_SITES || !is_i64(x->ty) || !ir_invariant(x->k[1], f->loop)) return;
    if (!form_of(f, x->k[0], &a, 0) || a.var < 0) return;
    if (a.atom && !ir_same(strip64(a.atom), strip64(x->k[1]))) return;
    tk_ir *pm = ir_new(f->C, IR_MATH, x->ty, x->line);
    pm->sub = M_PMOD;
    pm->local = a.var;
    pm->c.i = a.c;
    const tk_ir *dc = ir_strip(x->k[1]);
    pm->aux = a.var == f->loop->vars[f->loop->aux - 1] && !(dc->op == IR_CONST && dc->c.i < SPLIT_MIN);
    ir_push(f->C, pm, x);
    f->sites[f->n] = (site){slot, pm, x->k[1], {0, {0}, {NULL}}, 0};
    f->n++;
}

/* A bound the flag may compute before the loop: invariant, and nothing in it
 * that can fail or that the C compiler could not compute as the body does
 * (no division, no call). */
static int int_dt(int dt) { return dt <= TACK_U64; } /* TACK_BOOL is 0 */

static int plain(const per_fn *f, const tk_ir *e, int depth) {
    if (depth > 8 || e->ty.kind != TY_VALUE) return 0;
    switch (e->op) {
    case IR_CONST: return e->aux != TK_CONST_PYINT && int_dt(e->ty.dt);
    case IR_SHAPE: return 1;
    case IR_LOCAL:
        if (e->local >= 0 && loop_var(f, e->local) < 0 && f->def[e->local])
            return is_i64(e->ty) && is_i64(f->def[e->local]->ty) && plain(f, f->def[e->local], depth + 1);
        return e->local >= 0 && ir_invariant(e, f->loop) && int_dt(e->ty.dt);
    case IR_CAST: return is_i64(e->ty) && e->k[0]->ty.kind == TY_VALUE && int_dt(e->k[0]->ty.dt) && plain(f, e->k[0], depth + 1);
    case IR_BIN:
        return is_i64(e->ty) && (e->sub == B_ADD || e->sub == B_SUB || e->sub == B_MUL || e->sub == B_MIN || e->sub == B_MAX) &&
               plain(f, e->k[0], depth + 1) && plain(f, e->k[1], depth + 1);
    default: return 0;
    }
}

/* A copy of plain bound e for before the loop: its private locals replaced by their values. */
static tk_ir *bound_copy(const per_fn *f, const tk_ir *e) {
    if (e->op == IR_LOCAL && e->local >= 0 && f->def[e->local]) return bound_copy(f, f->def[e->local]);
    tk_ir *x = ir_clone(f->C, e);
    for (int i = 0; i < x->n; i++) x->k[i] = bound_copy(f, e->k[i]);
    return x;
}

static tk_ir *bound_clone(const per_fn *f, const tk_ir *e) { return ir_as_i64(f->C, bound_copy(f, e)); }

/* Whether e is a clamp of v + c (through casts and private locals assigned
 * once): min/max levels each with one invariant, plain operand, around the
 * form of one of the loop's variables plus a constant. */
static int clamp_of(per_fn *f, const tk_ir *e, form *lf, clamp *cl, int depth) {
    e = strip64(e);
    if (depth > 16 || !is_i64(e->ty)) return 0;
    if (e->op == IR_LOCAL && e->local >= 0 && loop_var(f, e->local) < 0 && f->def[e->local])
        return clamp_of(f, f->def[e->local], lf, cl, depth + 1);
    if (e->op == IR_BIN && (e->sub == B_MIN || e->sub == B_MAX)) {
        for (int side = 0; side < 2; side++) {
            const tk_ir *b = e->k[side];
            if (!plain(f, b, 0) || !clamp_of(f, e->k[1 - side], lf, cl, depth + 1)) continue;
            if (cl->n == MAX_LEVELS) return 0;
            cl->op[cl->n] = e->sub;
            cl->b[cl->n++] = b;
            return 1;
        }
        return 0;
    }
    cl->n = 0;
    return form_of(f, e, lf, 0) && lf->var >= 0 && !lf->atom;
}

/* min/max(...) at *slot: a site, when a clamp of v + c. */
static int try_clamp(per_fn *f, tk_ir **slot) {
    tk_ir *x = *slot;
    form a;
    clamp cl;
    memset(&cl, 0, sizeof cl);
    if (f->n == MAX_SITES || !is_i64(x->ty) || !clamp_of(f, x, &a, &cl, 0) || !cl.n) return 0;
    tk_ir *pm = ir_new(f->C, IR_MATH, x->ty, x->line);
    pm->sub = M_PMOD;
    pm->local = a.var;
    pm->c.i = a.c;
    pm->aux = a.var == f->loop->vars[f->loop->aux - 1];
    ir_push(f->C, pm, x);
    f->sites[f->n] = (site){slot, pm, NULL, cl, 0};
    f->n++;
    return 1;
}

static void find_mods(per_fn *f, tk_ir **slot) {
    tk_ir *x = *slot;
    if (x->op == IR_BIN && (x->sub == B_MIN || x->sub == B_MAX) && try_clamp(f, slot)) return;
    for (int i = 0; i < x->n; i++) find_mods(f, &x->k[i]);
    if (x->op == IR_BIN && x->sub == B_MOD) try_mod(f, slot);
}

/* The sites of the body, statement by statement, remembering private locals
 * assigned once at its top as it goes. */
static void scan_body(per_fn *f, tk_ir *body) {
    int scope = f->K->locals[f->loop->vars[0]].scope;
    for (int i = 0; i < body->n; i++) {
        tk_ir *s = body->k[i];
        int n0 = f->n;
        for (int j = 0; j < s->n; j++) find_mods(f, &s->k[j]);
        if (s->op == IR_ASSIGN && s->local >= 0 && f->K->locals[s->local].scope == scope &&
            ir_assignments(body, s->local) == 1) {
            f->def[s->local] = s->k[0];
            const tk_ir *v = strip64(s->k[0]);
            for (int q = n0; q < f->n; q++)
                if (v == *f->sites[q].slot) f->pl[s->local] = q + 1;
        }
    }
}

/* The site whose remainder index expression e is (through casts), or -1. */
static int site_of(const per_fn *f, const tk_ir *e) {
    e = strip64(e);
    if (e->op == IR_LOCAL && e->local >= 0 && f->pl[e->local]) return f->pl[e->local] - 1;
    for (int q = 0; q < f->n; q++)
        if (e == *f->sites[q].slot) return q;
    return -1;
}

/* The least (hi = 0) or greatest (hi = 1) value of loop variable v: 0 or
 * the 1-D loop's offset, plus its trip count less one. */
static tk_ir *var_end(per_fn *f, int v, int hi, int line) {
    tk_ir *lo = f->loop->aux == 1 && f->loop->off ? ir_as_i64(f->C, ir_clone(f->C, f->loop->off)) : i64c(f->C, 0, line);
    if (!hi) return lo;
    tk_ir *n = ir_as_i64(f->C, ir_clone(f->C, f->loop->k[loop_var(f, v)]));
    return ir_i64_bin(f->C, B_ADD, lo, ir_i64_bin(f->C, B_SUB, n, i64c(f->C, 1, line)));
}

/* Clamp q at v = x: its levels applied to x + c, as the body computes them. */
static tk_ir *clamp_at(per_fn *f, int q, tk_ir *x, int line) {
    const site *st = &f->sites[q];
    tk_ir *r = ir_i64_bin(f->C, B_ADD, x, i64c(f->C, st->pm->c.i, line));
    for (int i = 0; i < st->cl.n; i++) r = ir_i64_bin(f->C, st->cl.op[i], r, bound_clone(f, st->cl.b[i]));
    return r;
}

/* A clamp indexed or wrapped: its values lie in [f(least v), f(greatest v)]
 * (each level keeps the order of v), so the flag asks f(least v) >= 0, and
 * f(greatest v) < s for each extent s it is checked against. */
static void clamp_conds(per_fn *f, int q, const tk_ir *s, int line) {
    site *st = &f->sites[q];
    if (!st->low) {
        st->low = 1;
        f->cond = ir_and(f->C, f->cond, ir_i64_bin(f->C, B_GE, clamp_at(f, q, var_end(f, st->pm->local, 0, line), line),
                                                   i64c(f->C, 0, line)));
    }
    if (!s) return;
    for (int r = 0; r < f->nce; r++)
        if (f->ce[r][0] == st->pm && ir_same(strip64(f->ce[r][1]), strip64(s))) return;
    if (f->nce < MAX_SITES) {
        f->ce[f->nce][0] = st->pm;
        f->ce[f->nce++][1] = s;
    }
    f->cond = ir_and(f->C, f->cond, ir_i64_bin(f->C, B_LT, clamp_at(f, q, var_end(f, st->pm->local, 1, line), line),
                                               ir_as_i64(f->C, ir_clone(f->C, s))));
}

/* Every index check of a remainder: its divisor within the extent; of a
 * clamp: its values within the extent; every wrap of a clamp: its values
 * not negative. */
static void check_conds(per_fn *f, tk_ir *x) {
    if (x->op == IR_WRAP) {
        int q = site_of(f, x->k[0]);
        if (q >= 0 && !f->sites[q].d) clamp_conds(f, q, NULL, x->line);
    }
    if (x->op == IR_CHECK && x->sub == CK_INDEX && x->local != CKI_RANGE) {
        int q = site_of(f, x->k[0]);
        if (q >= 0 && !f->sites[q].d) {
            if (!ir_invariant(x->k[1], f->loop)) f->bad = 1;
            else clamp_conds(f, q, x->k[1], x->line);
        } else if (q >= 0) {
            if (!ir_invariant(x->k[1], f->loop)) f->bad = 1;
            else {
                int seen = 0;
                for (int r = 0; r < f->nle && !seen; r++)
                    seen = ir_same(strip64(f->le[r][0]), strip64(f->sites[q].d)) && ir_same(strip64(f->le[r][1]), strip64(x->k[1]));
                if (!seen) {
                    if (f->nle < MAX_SITES) {
                        f->le[f->nle][0] = f->sites[q].d;
                        f->le[f->nle++][1] = x->k[1];
                    }
                    f->cond = ir_and(f->C, f->cond, ir_i64_bin(f->C, B_LE, ir_as_i64(f->C, ir_clone(f->C, f->sites[q].d)),
                                                               ir_as_i64(f->C, ir_clone(f->C, x->k[1]))));
                }
            }
        }
    }
    for (int i = 0; i < x->n; i++) check_conds(f, x->k[i]);
}

static int new_frame_local(tk_cc *C, tk_spec *S, const char *name, tk_type ty) {
    int i = tk_new_local(C, S, name, ty, -1);
    S->locals[i].declared = 1;
    S->locals[i].assigns = 1;
    S->locals[i].read = 1;
    return i;
}

static tk_ir *loc(tk_cc *C, tk_spec *S, int l, int line) {
    tk_ir *x = ir_new(C, IR_LOCAL, S->locals[l].ty, line);
    x->local = l;
    return x;
}

/* The flag asks -2^50 < e < 2^50. */
static void bounded(per_fn *f, const tk_ir *e, int line) {
    f->cond = ir_and(f->C, f->cond, ir_i64_bin(f->C, B_GT, ir_as_i64(f->C, ir_clone(f->C, e)), i64c(f->C, -((int64_t)1 << D_LOG), line)));
    f->cond = ir_and(f->C, f->cond, ir_i64_bin(f->C, B_LT, ir_as_i64(f->C, ir_clone(f->C, e)), i64c(f->C, (int64_t)1 << D_LOG, line)));
}

/* x = e < x ? e : x (min), or e > x ? e : x, before the loop. */
static void narrow(tk_cc *C, tk_spec *K, tk_ir *pre, int x, tk_ir *e, int min, int line) {
    tk_ir *sel = ir_new(C, IR_SELECT, ty_value(TACK_I64), line);
    ir_push(C, sel, ir_i64_bin(C, min ? B_LT : B_GT, e, loc(C, K, x, line)));
    ir_push(C, sel, ir_clone(C, e));
    ir_push(C, sel, loc(C, K, x, line));
    ir_push(C, pre, ir_assign(C, x, sel));
    K->locals[x].assigns++;
}

static void periodic_loop(tk_cc *C, tk_spec *K, tk_ir *loop, tk_ir *pre) {
    per_fn f;
    memset(&f, 0, sizeof f);
    f.C = C;
    f.K = K;
    f.loop = loop;
    int nl0 = K->nlocals;
    f.def = tk_alloc(&C->arena, sizeof(tk_ir *) * ((size_t)K->nlocals + 1));
    memset(f.def, 0, sizeof(tk_ir *) * ((size_t)K->nlocals + 1));
    f.pl = tk_alloc(&C->arena, sizeof(int) * ((size_t)K->nlocals + 1));
    memset(f.pl, 0, sizeof(int) * ((size_t)K->nlocals + 1));
    tk_ir *body = loop->k[loop->aux];
    scan_body(&f, body);
    if (!f.n) return;
    int line = loop->line;
    int nd = loop->aux;
    for (int q = 0; q < f.n; q++) {
        if (!f.sites[q].d) { /* a clamp: its bounds and its variable's range below 2^50 in magnitude */
            for (int i = 0; i < f.sites[q].cl.n; i++) bounded(&f, bound_clone(&f, f.sites[q].cl.b[i]), line);
            int d = loop_var(&f, f.sites[q].pm->local), seen = 0;
            for (int r = 0; r < q && !seen; r++) seen = !f.sites[r].d && f.sites[r].pm->local == f.sites[q].pm->local;
            if (!seen) {
                bounded(&f, loop->k[d], line);
                if (nd == 1 && loop->off) bounded(&f, loop->off, line);
            }
            continue;
        }
        int seen = 0;
        for (int r = 0; r < q && !seen; r++) seen = f.sites[r].d && ir_same(strip64(f.sites[r].d), strip64(f.sites[q].d));
        if (seen) continue;
        tk_ir *d = ir_as_i64(C, ir_clone(C, f.sites[q].d));
        f.cond = ir_and(C, f.cond, ir_i64_bin(C, B_GT, d, i64c(C, 0, line)));
        f.cond = ir_and(C, f.cond, ir_i64_bin(C, B_LT, ir_as_i64(C, ir_clone(C, f.sites[q].d)),
                                               i64c(C, (int64_t)1 << D_LOG, line)));
    }
    check_conds(&f, body);
    if (f.bad) return;
    /* the interior of the innermost variable (the chunk's counter: no offset) */
    int inner = nd > 1 || !loop->off;
    if (!inner)
        for (int q = 0; q < f.n; q++) f.sites[q].pm->aux = 0;
    /* commit: the remainders become M_PMOD, the flag and the interior's end are computed before the loop */
    for (int q = 0; q < f.n; q++) *f.sites[q].slot = f.sites[q].pm;
    int flag = new_frame_local(C, K, "_periodic", ty_value(TACK_BOOL));
    ir_push(C, pre, ir_assign(C, flag, f.cond));
    int hl = new_frame_local(C, K, "_interior", ty_value(TACK_I64));
    ir_push(C, pre, ir_assign(C, hl, inner ? ir_as_i64(C, ir_clone(C, loop->k[nd - 1])) : i64c(C, 0, line)));
    int64_t m0 = 0;
    for (int q = 0; q < f.n; q++) { /* _interior = min(_interior, d - c) */
        tk_ir *pm = f.sites[q].pm;
        if (!pm->aux || !f.sites[q].d) continue;
        int seen = 0;
        for (int r = 0; r < q && !seen; r++)
            seen = f.sites[r].pm->aux && f.sites[r].d && f.sites[r].pm->c.i == pm->c.i &&
                   ir_same(strip64(f.sites[r].d), strip64(f.sites[q].d));
        if (seen) continue;
        if (-pm->c.i > m0) m0 = -pm->c.i;
        narrow(C, K, pre, hl, ir_i64_bin(C, B_SUB, ir_as_i64(C, ir_clone(C, f.sites[q].d)), i64c(C, pm->c.i, line)), 1, line);
    }
    /* a clamp's interior: each min's bound U, v <= U - c; each max's L, v >= L - c */
    int ml = -1;
    for (int q = 0; q < f.n; q++) {
        tk_ir *pm = f.sites[q].pm;
        if (!pm->aux || f.sites[q].d) continue;
        for (int i = 0; i < f.sites[q].cl.n; i++) {
            int seen = 0;
            for (int r = 0; r <= q && !seen; r++)
                for (int j = 0; j < (r < q ? f.sites[r].cl.n : i) && !seen; j++)
                    seen = f.sites[r].pm->aux && !f.sites[r].d && f.sites[r].pm->c.i == pm->c.i &&
                           f.sites[r].cl.op[j] == f.sites[q].cl.op[i] && ir_same(strip64(f.sites[r].cl.b[j]), strip64(f.sites[q].cl.b[i]));
            if (seen) continue;
            tk_ir *b = bound_clone(&f, f.sites[q].cl.b[i]);
            if (f.sites[q].cl.op[i] == B_MIN) {
                narrow(C, K, pre, hl, ir_i64_bin(C, B_ADD, b, i64c(C, 1 - pm->c.i, line)), 1, line);
            } else {
                if (ml < 0) {
                    ml = new_frame_local(C, K, "_interior_lo", ty_value(TACK_I64));
                    ir_push(C, pre, ir_assign(C, ml, i64c(C, 0, line)));
                }
                narrow(C, K, pre, ml, ir_i64_bin(C, B_SUB, b, i64c(C, pm->c.i, line)), 0, line);
            }
        }
    }
    tk_ir *per = ir_new(C, IR_BLOCK, ty_void(), line);
    ir_push(C, per, loc(C, K, flag, line));
    ir_push(C, per, loc(C, K, hl, line));
    if (ml >= 0) { /* the remainders' start too */
        narrow(C, K, pre, ml, i64c(C, m0, line), 0, line);
        ir_push(C, per, loc(C, K, ml, line));
    } else ir_push(C, per, i64c(C, inner ? m0 : 0, line));
    for (int l = 0; l < nl0; l++)
        if (f.pl[l]) ir_push(C, per, loc(C, K, l, line));
    loop->per = per;
}

/* The walk is strength.c's (tk_each_pfor: blocks loops are left alone, their barriers split them) */
static void periodic_pass(tk_cc *C, tk_spec *K, tk_ir *loop, tk_ir *pre) {
    if (!loop->per) periodic_loop(C, K, loop, pre);
}

void tk_periodic(tk_cc *C) {
    tk_spec *K = C->nspecs ? C->specs[0] : NULL;
    if (K && K->body && C->target->loops == TK_LOOPS_CHUNKED) tk_each_pfor(C, K, K->body, periodic_pass);
}

/* ------------------------------------------------ for the C layout */
/* Whether index expression e is a remainder of loop s's `per` (through casts):
 * an M_PMOD, or a local assigned from one. */
static int per_index(const tk_ir *s, const tk_ir *e) {
    e = strip64(e);
    if (e->op == IR_MATH && e->sub == M_PMOD) return 1;
    if (e->op != IR_LOCAL) return 0;
    for (int i = 3; i < s->per->n; i++)
        if (s->per->k[i]->local == e->local) return 1;
    return 0;
}

static void hide(tk_cc *C, const tk_ir *s, tk_ir **slot, tk_periodic_undo *u) {
    tk_ir *x = *slot;
    tk_ir *by = NULL;
    if (x->op == IR_CHECK && x->sub == CK_INDEX && x->local != CKI_RANGE && per_index(s, x->k[0]))
        by = ir_new(C, IR_BLOCK, ty_void(), x->line);
    else if (x->op == IR_WRAP && per_index(s, x->k[0]))
        by = x->k[0];
    if (by) {
        if (u->n == u->cap) {
            int cap = u->cap ? 2 * u->cap : 16;
            tk_ir ***ns = tk_alloc(&C->arena, sizeof(tk_ir **) * (size_t)cap);
            tk_ir **no = tk_alloc(&C->arena, sizeof(tk_ir *) * (size_t)cap);
            if (u->n) {
                memcpy(ns, u->slot, sizeof(tk_ir **) * (size_t)u->n);
                memcpy(no, u->old, sizeof(tk_ir *) * (size_t)u->n);
            }
            u->slot = ns;
            u->old = no;
            u->cap = cap;
        }
        u->slot[u->n] = slot;
        u->old[u->n++] = x;
        *slot = by;
        x = by;
    }
    for (int i = 0; i < x->n; i++) hide(C, s, &x->k[i], u);
}

void tk_periodic_hide(tk_cc *C, tk_ir *s, tk_periodic_undo *u) {
    memset(u, 0, sizeof *u);
    tk_ir *body = s->k[s->aux];
    for (int i = 0; i < body->n; i++) hide(C, s, &body->k[i], u);
}

void tk_periodic_show(tk_periodic_undo *u) {
    for (int i = u->n - 1; i >= 0; i--) *u->slot[i] = u->old[i];
    u->n = 0;
}
