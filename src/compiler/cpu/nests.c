/*
 * nests.c -- loop nests inside a parallel loop: per-row versioning of the
 * bounds checks, and interchange of a perfect two-deep nest.
 *
 * checks.c moves a check out of the loop that varies its index when the
 * index is that loop's variable plus something fixed: a 2-D convolution's
 * `img[i + di, j + dj]` loses its check on `j + dj` from the dj loop, but
 * the check on `i + di` stays in the di loop and the range check of the
 * column stays in the j loop, so each output pixel still runs them (and
 * a serial loop with a check in it can leave early, which the C compiler
 * will not vectorize).  This pass takes the serial loops at the top of a
 * parallel loop's body -- once per row of a 2-D kernel -- and works out,
 * for every index check inside, the least and greatest value the index
 * can take: a sum of terms that are either fixed during the loop (locals
 * it does not assign, extents, constants) or variables of loops inside it
 * whose bounds are fixed (range analysis through inner loops with
 * invariant bounds: i + di over di in range(K) lies in [i, i + K - 1]).
 * When every such bound holds, no check inside can fail, and the loop runs
 * as a copy without them:
 *
 *     if (all indices of the row in bounds) { the loop, no checks }
 *     else                                  { the loop as it was }
 *
 * An inner loop's bounds may also name the loops around it (a triangular
 * nest: `for k in range(j + 1)`, which lowering writes `t = j + 1` before
 * the loop -- a local assigned once, from such values, stands for them).
 * Intervals would lose what ties k to j (j - k over k in [0, j] would be
 * [-(m - 1), m - 1]), so an index is a linear form -- a sum of fixed terms,
 * of the loops' variables times small constants, and a constant -- and its
 * least and greatest values come from replacing the innermost variable by
 * the bound its coefficient favours, then the next one out, and so on:
 * j - k is j - j = 0 at least and j - 0 <= m - 1 at most.  Each loop's
 * variable is also tested to lie within +-2^50, as each fixed term is, so
 * the forms with their coefficients of at most 16 describe the values the
 * generated code computes, wrapping included.
 *
 * The test is conservative (a check under an `if` that is never taken
 * still counts), so when it fails the original loop runs, with every check
 * in its place: an out-of-bounds index raises the same IndexError, from
 * the same site with the same operands, after the same writes, as without
 * this pass.  Each bound is also tested to lie within +-2^50 so that the
 * sums in the test cannot wrap.
 *
 * In the check-free copy, a perfect nest
 *
 *     for j in range(a, b):          for k in range(c, d):
 *         for k in range(c, d):  ->      for j in range(a, b):
 *             C[.., j, ..] = f(C[.., j, ..], loads, locals)
 *
 * (a matmul written `C[i, j] += A[i, k] * B[k, j]`) is interchanged, so
 * that the inner loop walks B and C along rows, a unit stride the C
 * compiler vectorizes, instead of down a column of B.  It is legal when
 * the loop bounds do not change inside the nest, the body is assignments
 * of locals (each assigned before it is read) and one store whose index
 * names j once, as `j` or `j + c` on one axis, and neither k nor a local of
 * the body elsewhere, and whose value reads the stored array only at that
 * same element: then the cells the j's write are distinct, each cell sees
 * the updates of its k's in ascending k order as before, computed by the
 * same operations in the same order -- so float results are bit for bit
 * those of the original order (nothing is reassociated; each cell keeps
 * its own chain).  Arrays it reads besides the stored one must not share
 * its memory, which the interchanged copy tests at run time (M_DISJOINT),
 * as it tests that the k loop runs (after an empty k loop j has its last
 * value in one order and not in the other); otherwise the loop runs as
 * written.  A nest with anything else in it -- a second
 * store, a call, an atomic, a check that remains, a triangular bound, a
 * local carried from one iteration to the next (`s += ...` with `s = 0`
 * outside the k loop) -- is left as it is.
 * A parallel loop whose body is such a nest (or its k-outside form) goes to
 * tile.c first, which runs it in tiled panels of rows.
 *
 * Where loops poll for Ctrl-C (the CPU), each serial loop runs in strips
 * with a poll between them.  For a filter's taps, loops of five iterations,
 * the strips cost more than the taps (a 5x5 convolution took 1.5x the time
 * of the same loops written plainly in C), so when one iteration of the
 * versioned loop does at most 2^16 units of work (1 + the inner loops'
 * iterations, from their trip counts: range loops with fixed bounds, at
 * most three deep and eight in all), its inner loops do not poll
 * (TK_FOR_QUIET) and it polls for their work (IR_FOR's aux names the local
 * that holds it): no more work between polls than before.
 *
 * Index arithmetic is 64-bit and wraps (unsigned sums), which the C
 * compiler cannot follow as an offset: the tap loop's `j + dj` became a
 * gather attempt.  In the copy, an index of a load or store whose terms
 * range analysis bounds is tested, each term within +-2^50, so no sum of
 * its at most MAX_LEAVES terms can wrap, and is written with C's signed
 * sums (TK_BIN_NOWRAP): the convolution's last 1.2x against Numba.
 * Likewise a negative-index wrap of an index the analysis bounds goes from
 * the copy under the test that the index is >= 0 (unwrap_index): LU's row
 * update from a run-time column k + 1.
 *
 * Each new form is `if (test) { new } else { the loop as written }`: the
 * checks' test joined with the interchange's (disjoint memory, k runs) or
 * the work's, so a loop exists in two copies, not three -- a row that fails
 * the test runs with its checks, and the C compiler's time on such a kernel
 * grows by about half rather than doubling.
 *
 * The test runs once per row, but most of it does not depend on the row:
 * its conjuncts are kept once each, and those made of constants, extents
 * and frame locals go into a frame local computed once before the parallel
 * loop (hoist_test), so a row tests that local and its own index.  Where
 * what is left names only the parallel loop's variable, the `if` is marked
 * and the loop carries the test (`ck`): a chunk whose iterations all pass
 * it runs a copy of its loop in which the `if` is its check-free branch
 * alone, neither the test nor the copy as written left in it (emit_cpu.c).
 *
 * The copies carry a comment that names the transformation (emit.c prints
 * a block's `str`).  TACK_NESTS=0 in the environment turns the pass off, for
 * tests that compare with the untransformed code; TACK_OPT=0 does too.  The
 * pass runs where a parallel loop runs in chunks (target.h's
 * TK_LOOPS_CHUNKED, the CPU): a GPU runs a parallel loop's iterations as
 * threads and has its own view of what is cheap.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler.h"
#include "compiler/target.h"
#include "runtime/config.h"

#define MAX_LOOPS 32
#define MAX_MARKED 256
#define MAG ((int64_t)1 << 50) /* each term of a bound lies within +-MAG: no sum of a few wraps */
#define MAX_LEAVES 16
#define MAX_DEFS 32

typedef struct nest {
    tk_cc *C;
    tk_ir *f;                            /* the loop being versioned */
    int var[MAX_LOOPS];                  /* the loops around a check, inside f, with fixed bounds */
    tk_ir *lo[MAX_LOOPS], *hi[MAX_LOOPS];
    int n;
    const tk_ir *marked[MAX_MARKED];     /* the checks the test covers */
    int nmarked;
    tk_ir *cond;                         /* their test */
    tk_ir *leaves[MAX_LEAVES];           /* the terms of one bound */
    int nleaves;
    const tk_ir *nowrap[MAX_MARKED];     /* indices whose sums cannot wrap where the test holds */
    int nnowrap;
    const tk_ir *unwrap[MAX_MARKED];     /* negative-index wraps of indices >= 0 where the test holds */
    int nunwrap;
    int dlocal[MAX_DEFS];                /* locals f assigns once, from loop variables and fixed */
    const tk_ir *dval[MAX_DEFS];         /* terms (a triangular bound's `t = i + 1`), until their block ends */
    int ndefs;
    int depth;                           /* how deep range_of has gone through loop bounds and defs */
    struct lin *llo[MAX_LOOPS], *lhi[MAX_LOOPS]; /* the loops' bounds as linear forms (NULL: none) */
    tk_ir *guard[MAX_LOOPS];             /* that each loop's variable lies within +-MAG; NULL once in cond */
} nest;

/* An integer value as sum of c * t over terms t fixed during f, plus a
 * constant, plus a * v over the variables v of the loops around (by their
 * place in nest.var), each coefficient within +-MAX_COEF. */
#define MAX_TERMS 16
#define MAX_COEF 16
#define MAX_CONST ((int64_t)1 << 44)
typedef struct lin {
    int nt;
    const tk_ir *t[MAX_TERMS];
    int64_t tc[MAX_TERMS];
    int64_t vc[MAX_LOOPS];
    int64_t c;
} lin;

/* Whether e is free of calls and atomics (so evaluating it more or fewer times changes nothing). */
static int pure(const tk_ir *e) {
    if (e->op == IR_CALL || e->op == IR_ATOMIC) return 0;
    for (int i = 0; i < e->n; i++)
        if (!pure(e->k[i])) return 0;
    return 1;
}

/* ------------------------------------------------------- range analysis */
static int leaf(nest *x, tk_ir *t) {
    if (x->nleaves >= MAX_LEAVES) return 0;
    x->leaves[x->nleaves++] = t;
    return 1;
}

/* The least and greatest value of integer e over every execution of the
 * check it belongs to, inside x->f: fixed terms and loop variables. */
static int range_of(nest *x, const tk_ir *e0, tk_ir **mn, tk_ir **mx) {
    const tk_ir *e = ir_strip(e0);
    if (e->ty.kind != TY_VALUE || !ty_is_int(e->ty) || dt_bits((tack_dtype)e->ty.dt) != 64) return 0;
    if (ir_invariant(e, x->f) && pure(e)) {
        tk_ir *t = ir_clone(x->C, e);
        *mn = *mx = t;
        return leaf(x, t);
    }
    if (e->op == IR_LOCAL) {
        if (x->depth >= 8) return 0;
        int ok = 0;
        x->depth++;
        for (int i = x->n - 1; i >= 0; i--)
            if (x->var[i] == e->local) { /* lo <= v <= hi - 1, with lo and hi ranges in turn */
                tk_ir *ln, *lx, *hn, *hx;
                ok = range_of(x, x->lo[i], &ln, &lx) && range_of(x, x->hi[i], &hn, &hx);
                if (ok) {
                    *mn = ln;
                    *mx = ir_i64_bin(x->C, B_SUB, hx, ir_i64(x->C, 1, e->line));
                }
                x->depth--;
                return ok;
            }
        for (int i = x->ndefs - 1; i >= 0; i--)
            if (x->dlocal[i] == e->local) {
                ok = range_of(x, x->dval[i], mn, mx);
                break;
            }
        x->depth--;
        return ok;
    }
    if (e->op == IR_BIN && (e->sub == B_ADD || e->sub == B_SUB)) {
        tk_ir *an, *ax, *bn, *bx;
        if (!range_of(x, e->k[0], &an, &ax) || !range_of(x, e->k[1], &bn, &bx)) return 0;
        *mn = e->sub == B_ADD ? ir_i64_bin(x->C, B_ADD, an, bn) : ir_i64_bin(x->C, B_SUB, an, bx);
        *mx = e->sub == B_ADD ? ir_i64_bin(x->C, B_ADD, ax, bx) : ir_i64_bin(x->C, B_SUB, ax, bn);
        return 1;
    }
    return 0;
}

/* ------------------------------------------- linear forms (triangular bounds) */

static int coef_ok(int64_t a) { return a >= -MAX_COEF && a <= MAX_COEF; }

static int lin_term(lin *r, const tk_ir *t, int64_t m) {
    for (int i = 0; i < r->nt; i++)
        if (r->t[i] == t || ir_same(r->t[i], t)) {
            r->tc[i] += m;
            return coef_ok(r->tc[i]);
        }
    if (r->nt >= MAX_TERMS) return 0;
    r->t[r->nt] = t;
    r->tc[r->nt++] = m;
    return 1;
}

/* r += m * e */
static int lin_of(nest *x, const tk_ir *e0, int64_t m, lin *r, int depth) {
    const tk_ir *e = ir_strip(e0);
    if (depth > 64 || !coef_ok(m) || e->ty.kind != TY_VALUE || !ty_is_int(e->ty) || dt_bits((tack_dtype)e->ty.dt) != 64)
        return 0;
    if (e->op == IR_CONST) {
        if (e->c.i > MAX_CONST || e->c.i < -MAX_CONST) return 0;
        r->c += m * e->c.i;
        return r->c <= MAX_CONST * MAX_COEF && r->c >= -MAX_CONST * MAX_COEF;
    }
    if (ir_invariant(e, x->f) && pure(e)) return lin_term(r, e, m);
    if (e->op == IR_LOCAL) {
        for (int i = x->n - 1; i >= 0; i--)
            if (x->var[i] == e->local) {
                r->vc[i] += m;
                return coef_ok(r->vc[i]);
            }
        for (int i = x->ndefs - 1; i >= 0; i--)
            if (x->dlocal[i] == e->local) return lin_of(x, x->dval[i], m, r, depth + 1);
        return 0;
    }
    if (e->op == IR_BIN && (e->sub == B_ADD || e->sub == B_SUB))
        return lin_of(x, e->k[0], m, r, depth + 1) && lin_of(x, e->k[1], e->sub == B_ADD ? m : -m, r, depth + 1);
    if (e->op == IR_BIN && e->sub == B_MUL)
        for (int side = 0; side < 2; side++) {
            const tk_ir *c = ir_strip(e->k[side]);
            if (c->op == IR_CONST && ty_is_int(c->ty) && coef_ok(c->c.i) && coef_ok(m * c->c.i))
                return lin_of(x, e->k[1 - side], m * c->c.i, r, depth + 1);
        }
    return 0;
}

/* r += a * b */
static int lin_add(lin *r, const lin *b, int64_t a) {
    for (int i = 0; i < MAX_LOOPS; i++) {
        if (!b->vc[i]) continue;
        r->vc[i] += a * b->vc[i];
        if (!coef_ok(r->vc[i])) return 0;
    }
    for (int i = 0; i < b->nt; i++)
        if (!lin_term(r, b->t[i], a * b->tc[i])) return 0;
    r->c += a * b->c;
    return r->c <= MAX_CONST * MAX_COEF && r->c >= -MAX_CONST * MAX_COEF;
}

/* The least (upper = 0) or greatest value of e over the loops around it: the
 * innermost variable first, each replaced by its lower bound or its upper
 * bound less one (whichever its coefficient favours), which are linear in
 * the loops outside it.  `j - k` over k in range(j + 1), j in range(m):
 * j - j = 0 at least, j - 0 <= m - 1 at most (intervals would say -(m - 1)).
 * Where an inner loop is empty for some j the bound covers values that never
 * occur: a stricter test, never a looser one. */
static int lin_bound(const nest *x, const lin *e, int upper, lin *out) {
    *out = *e;
    for (int i = x->n - 1; i >= 0; i--) {
        int64_t a = out->vc[i];
        if (!a) continue;
        out->vc[i] = 0;
        if (!x->llo[i] || !x->lhi[i]) return 0;
        if ((a > 0) == (upper != 0)) {
            if (!lin_add(out, x->lhi[i], a)) return 0;
            out->c -= a;
        } else if (!lin_add(out, x->llo[i], a)) {
            return 0;
        }
    }
    return 1;
}

/* The i64 value of l (all its loop coefficients zero), and in *t the test that its terms lie
 * within +-MAG (so the sum, of at most MAX_TERMS terms times MAX_COEF, cannot wrap). */
static tk_ir *lin_ir(nest *x, const lin *l, tk_ir **t, int line) {
    tk_ir *v = ir_i64(x->C, l->c, line);
    for (int i = 0; i < l->nt; i++) {
        if (!l->tc[i]) continue;
        tk_ir *term = ir_clone(x->C, l->t[i]);
        *t = ir_and(x->C, *t, ir_i64_bin(x->C, B_GE, ir_clone(x->C, term), ir_i64(x->C, -MAG, line)));
        *t = ir_and(x->C, *t, ir_i64_bin(x->C, B_LE, ir_clone(x->C, term), ir_i64(x->C, MAG, line)));
        v = ir_i64_bin(x->C, B_ADD, v, l->tc[i] == 1 ? term : ir_i64_bin(x->C, B_MUL, ir_i64(x->C, l->tc[i], line), term));
    }
    return v;
}

/* The least and greatest value of e (and the tests of their terms) over every execution of the
 * check it belongs to, inside x->f; then the loops' own guards join x->cond: every variable of the
 * loops around lies within +-MAG, so no linear form of them with coefficients within MAX_COEF
 * wraps, and the values the generated code computes are the ones the forms describe. */
static int lin_range(nest *x, const tk_ir *e, tk_ir **mn, tk_ir **mx, tk_ir **t, int line) {
    lin l, lo, hi;
    memset(&l, 0, sizeof l);
    if (!lin_of(x, e, 1, &l, 0) || !lin_bound(x, &l, 0, &lo) || !lin_bound(x, &l, 1, &hi)) return 0;
    *mn = lin_ir(x, &lo, t, line);
    *mx = lin_ir(x, &hi, t, line);
    for (int i = 0; i < x->n; i++)
        if (x->guard[i] && x->llo[i]) {
            x->cond = ir_and(x->C, x->cond, x->guard[i]);
            x->guard[i] = NULL;
        }
    return 1;
}

/* Loop slot i's guard: its variable's least and greatest values lie within +-MAG. */
static void loop_guard(nest *x, int i, int line) {
    x->guard[i] = NULL;
    if (!x->llo[i] || !x->lhi[i]) return;
    lin v, lo, hi;
    memset(&v, 0, sizeof v);
    v.vc[i] = 1;
    tk_ir *t = NULL;
    if (!lin_bound(x, &v, 0, &lo) || !lin_bound(x, &v, 1, &hi)) {
        x->llo[i] = x->lhi[i] = NULL;
        return;
    }
    tk_ir *mn = lin_ir(x, &lo, &t, line), *mx = lin_ir(x, &hi, &t, line);
    t = ir_and(x->C, t, ir_i64_bin(x->C, B_GE, mn, ir_i64(x->C, -MAG, line)));
    t = ir_and(x->C, t, ir_i64_bin(x->C, B_LE, mx, ir_i64(x->C, MAG, line)));
    x->guard[i] = t;
}

/* The test that index check s passes wherever it runs in x->f, added to x->cond. */
static int bound_check(nest *x, const tk_ir *s) {
    if (s->sub != CK_INDEX || x->nmarked >= MAX_MARKED) return 0;
    int range = s->local == CKI_RANGE;
    const tk_ir *n = s->k[range ? 2 : 1];
    if (!ir_invariant(n, x->f) || !pure(n)) return 0;
    tk_ir *mn, *mx, *t = NULL;
    int line = s->line;
    if (!lin_range(x, s->k[range ? 1 : 0], &mn, &mx, &t, line)) return 0;
    tk_ir *ext = ir_clone(x->C, n);
    if (range) { /* lo >= hi or hi <= n: every hi <= n */
        t = ir_and(x->C, t, ir_i64_bin(x->C, B_LE, mx, ext));
    } else { /* 0 <= i < n, or -n <= i < n */
        tk_ir *low = s->local == CKI_NONNEG ? ir_i64(x->C, 0, line) : ir_i64_bin(x->C, B_SUB, ir_i64(x->C, 0, line), ir_clone(x->C, n));
        t = ir_and(x->C, t, ir_i64_bin(x->C, B_GE, mn, low));
        t = ir_and(x->C, t, ir_i64_bin(x->C, B_LT, mx, ext));
    }
    x->cond = ir_and(x->C, x->cond, t);
    x->marked[x->nmarked++] = s;
    return 1;
}

/* How many statements under s assign local v. */
/* An index of a load or store in f whose terms are all bounded: under the
 * test that each term lies within +-2^50 (added to x->cond), no partial
 * sum of at most MAX_LEAVES terms wraps, so the copy writes it with C's
 * signed arithmetic, whose offsets the C compiler can follow (TK_BIN_NOWRAP). */
static void nowrap_index(nest *x, const tk_ir *ix) {
    const tk_ir *e = ir_strip(ix);
    if (e->op != IR_BIN || x->nnowrap >= MAX_MARKED) return;
    x->nleaves = 0;
    tk_ir *mn, *mx, *t = NULL;
    if (!range_of(x, e, &mn, &mx)) return;
    for (int i = 0; i < x->nleaves; i++) {
        if (x->leaves[i]->op == IR_CONST) continue;
        t = ir_and(x->C, t, ir_i64_bin(x->C, B_GE, x->leaves[i], ir_i64(x->C, -MAG, ix->line)));
        t = ir_and(x->C, t, ir_i64_bin(x->C, B_LE, x->leaves[i], ir_i64(x->C, MAG, ix->line)));
    }
    if (t) x->cond = ir_and(x->C, x->cond, t);
    x->nowrap[x->nnowrap++] = e;
}

/* A negative-index wrap (IR_WRAP: `i < 0 ? i + n : i`) of an index that
 * range analysis bounds: under the test that its least value is >= 0
 * (added to x->cond) the wrap does nothing, and the copy leaves it out, so
 * that the C compiler sees the index itself.  checks.c drops the wraps it
 * can prove unneeded at compile time (an index from a loop that starts at
 * 0); this drops those whose start is known only at run time: LU's
 * `a[i, j]` over `j in range(k + 1, n)`, a wavefront's block of
 * `range(b * bs + 1, ...)`.  A wrap left in place made the index a select
 * the compiler would not vectorize through (LU's row update ran in scalar
 * code; see decisions.md).  Where an index is negative (Python's a[-1]),
 * the test fails and the loop runs as written, wraps and all. */
static void unwrap_index(nest *x, const tk_ir *w) {
    if (x->nunwrap >= MAX_MARKED) return;
    tk_ir *mn, *mx, *t = NULL;
    if (!lin_range(x, w->k[0], &mn, &mx, &t, w->line)) return;
    t = ir_and(x->C, t, ir_i64_bin(x->C, B_GE, mn, ir_i64(x->C, 0, w->line)));
    x->cond = ir_and(x->C, x->cond, t);
    x->unwrap[x->nunwrap++] = w;
}

static void scan_indices(nest *x, const tk_ir *e) {
    if (e->op == IR_WRAP) unwrap_index(x, e);
    if (e->op == IR_LOAD || e->op == IR_STORE || e->op == IR_ATOMIC)
        for (int i = e->op == IR_LOAD ? 0 : e->op == IR_ATOMIC ? ir_atomic_first(e) : 1; i < e->n; i++)
            nowrap_index(x, e->k[i]->op == IR_WRAP ? e->k[i]->k[0] : e->k[i]);
    for (int i = 0; i < e->n; i++) scan_indices(x, e->k[i]);
}

/* Whether range_of can bound e: fixed terms, variables of the loops around
 * (with fixed bounds, or bounds that are such values themselves), locals
 * that name such values, their sums and differences, and their products
 * with constants. */
static int stable(const nest *x, const tk_ir *e0) {
    const tk_ir *e = ir_strip(e0);
    if (e->ty.kind != TY_VALUE || !ty_is_int(e->ty) || dt_bits((tack_dtype)e->ty.dt) != 64) return 0;
    if (ir_invariant(e, x->f) && pure(e)) return 1;
    if (e->op == IR_LOCAL) {
        for (int i = x->n - 1; i >= 0; i--)
            if (x->var[i] == e->local) return 1;
        for (int i = x->ndefs - 1; i >= 0; i--)
            if (x->dlocal[i] == e->local) return 1;
        return 0;
    }
    if (e->op == IR_BIN && e->sub == B_MUL)
        return (ir_strip(e->k[0])->op == IR_CONST && stable(x, e->k[1])) || (ir_strip(e->k[1])->op == IR_CONST && stable(x, e->k[0]));
    return e->op == IR_BIN && (e->sub == B_ADD || e->sub == B_SUB) && stable(x, e->k[0]) && stable(x, e->k[1]);
}

static int on_stack(const nest *x, int local) {
    for (int i = 0; i < x->n; i++)
        if (x->var[i] == local) return 1;
    return 0;
}

/* The stop of stepped loop s as the bounds read it (its greatest value plus
 * one), made exact where lo and hi are fixed during f: lo + trip * step -
 * step + 1, one term tk_trip(lo, hi, step) * step, instead of hi.  With hi,
 * `for i in range(0, m, 8)` bounds i by m - 1 and `x[i + 7]` by m + 6, a
 * test that fails for every m, so a loop written in blocks of eight always
 * ran its checked copy; its last value is m - 8 where m is a multiple of 8.
 * The term is tested within +-MAG as every term is (lin_ir): trip * step
 * lies in [hi - lo, hi - lo + step - 1], so it cannot wrap to a small value
 * while lo's terms lie within +-MAG.  An empty loop gives lo - step + 1: its
 * checks never run, whatever the test says of them. */
static void stepped_stop(nest *x, const tk_ir *s, const lin *lo, lin *hi) {
    int64_t st = s->k[2]->c.i;
    if (st > MAX_CONST) return;
    for (int t = 0; t < 2; t++)
        if (!ir_invariant(s->k[t], x->f) || !pure(s->k[t])) return;
    tk_ir *trip = ir_new(x->C, IR_MATH, ty_value(TACK_I64), s->line);
    trip->sub = M_TRIP;
    trip->aux_ty = ty_value(TACK_I64);
    for (int t = 0; t < 3; t++) ir_push(x->C, trip, ir_as_i64(x->C, ir_clone(x->C, s->k[t])));
    lin r = *lo;
    if (!lin_term(&r, ir_i64_bin(x->C, B_MUL, trip, ir_i64(x->C, st, s->line)), 1)) return;
    r.c += 1 - st;
    if (r.c > MAX_CONST * MAX_COEF || r.c < -MAX_CONST * MAX_COEF) return;
    *hi = r;
}

static void collect(nest *x, const tk_ir *s) {
    switch (s->op) {
    case IR_CHECK: bound_check(x, s); return;
    case IR_ASSIGN: case IR_STORE: case IR_EVAL: scan_indices(x, s); return;
    case IR_BLOCK: {
        /* a local assigned once in f, here, from stable values (lowering's `t = i + 1` for
         * `range(i + 1)`) is that value from here to the end of the block: the statements
         * after it run after it in the same iteration of every loop around them, and what it
         * names does not change within that iteration */
        int mark = x->ndefs;
        for (int i = 0; i < s->n; i++) {
            const tk_ir *a = s->k[i];
            collect(x, a);
            if (a->op == IR_ASSIGN && a->local >= 0 && x->ndefs < MAX_DEFS && !on_stack(x, a->local) &&
                ir_assignments(x->f, a->local) == 1 && stable(x, a->k[0])) {
                x->dlocal[x->ndefs] = a->local;
                x->dval[x->ndefs++] = a->k[0];
            }
        }
        x->ndefs = mark;
        return;
    }
    case IR_IF: collect(x, s->k[1]); collect(x, s->k[2]); return;
    case IR_WHILE: collect(x, s->k[1]); return;
    case IR_FOR: {
        int fixed = x->n < MAX_LOOPS && s->k[2]->op == IR_CONST && s->k[2]->c.i > 0 && stable(x, s->k[0]) &&
                    stable(x, s->k[1]) && ir_assignments(x->f, s->local) == 1;
        if (fixed) {
            int i = x->n;
            x->var[i] = s->local;
            x->lo[i] = s->k[0];
            x->hi[i] = s->k[1];
            x->llo[i] = tk_alloc(&x->C->arena, sizeof(lin));
            x->lhi[i] = tk_alloc(&x->C->arena, sizeof(lin));
            memset(x->llo[i], 0, sizeof(lin));
            memset(x->lhi[i], 0, sizeof(lin));
            if (!lin_of(x, s->k[0], 1, x->llo[i], 0) || !lin_of(x, s->k[1], 1, x->lhi[i], 0)) x->llo[i] = x->lhi[i] = NULL;
            else if (s->k[2]->c.i > 1) stepped_stop(x, s, x->llo[i], x->lhi[i]);
            x->n++;
            loop_guard(x, i, s->line);
        }
        collect(x, s->k[3]);
        if (fixed) x->n--;
        return;
    }
    default: return;
    }
}

static int is_marked(const nest *x, const tk_ir *s) {
    for (int i = 0; i < x->nmarked; i++)
        if (x->marked[i] == s) return 1;
    return 0;
}

/* A copy of statement s without the marked checks. */
static void mark_nowrap(tk_ir *e) {
    if (e->op == IR_BIN && (e->sub == B_ADD || e->sub == B_SUB) && ty_is_int(e->ty) && dt_bits((tack_dtype)e->ty.dt) == 64)
        e->aux = TK_BIN_NOWRAP;
    if (e->op == IR_LOAD) return;
    for (int i = 0; i < e->n; i++) mark_nowrap(e->k[i]);
}

static tk_ir *copy_unchecked(nest *x, const tk_ir *s) {
    if (s->op == IR_CHECK && is_marked(x, s)) return ir_new(x->C, IR_BLOCK, ty_void(), s->line);
    for (int i = 0; s->op == IR_WRAP && i < x->nunwrap; i++)
        if (x->unwrap[i] == s) return copy_unchecked(x, s->k[0]);
    for (int i = 0; i < x->nnowrap; i++)
        if (x->nowrap[i] == s) {
            tk_ir *r = ir_clone(x->C, s);
            mark_nowrap(r);
            return r;
        }
    if (s->op < IR_BLOCK && s->op != IR_LOAD && s->op != IR_ATOMIC && s->op != IR_CAST && s->op != IR_BIN) return ir_clone(x->C, s);
    tk_ir *r = ir_new(x->C, s->op, s->ty, s->line);
    *r = *s;
    r->k = tk_alloc(&x->C->arena, sizeof(tk_ir *) * (size_t)(s->n ? s->n : 1));
    r->cap = s->n;
    for (int j = 0; j < s->n; j++) r->k[j] = copy_unchecked(x, s->k[j]);
    return r;
}

/* A statement that does nothing: an empty block, or an `if` with a pure test and empty branches. */
static int empty(const tk_ir *s) {
    if (s->op == IR_BLOCK) {
        for (int i = 0; i < s->n; i++)
            if (!empty(s->k[i])) return 0;
        return 1;
    }
    return s->op == IR_IF && pure(s->k[0]) && empty(s->k[1]) && empty(s->k[2]);
}

/* The statements of block b that do something, flattened; at most max. */
static int stmts(const tk_ir *b, tk_ir **out, int n, int max) {
    for (int i = 0; i < b->n && n <= max; i++) {
        tk_ir *s = b->k[i];
        if (empty(s)) continue;
        if (s->op == IR_BLOCK) n = stmts(s, out, n, max);
        else if (n < max) out[n++] = s;
        else return max + 1;
    }
    return n;
}

/* ---------------------------------------------------------- interchange */
typedef struct ichg {
    const tk_ir *store;
    int temps[16], ntemps;
    int reads[64], nreads; /* the other arrays read */
    int ok;
} ichg;

/* The loads in e: the stored array only at the stored element; no calls,
 * atomics or local arrays; the other arrays read, noted. */
static void loads_ok(ichg *g, const tk_ir *e) {
    if (!g->ok) return;
    switch (e->op) {
    case IR_CALL: case IR_ATOMIC: case IR_LLOAD: case IR_ARRAY: case IR_LARRAY: g->ok = 0; return;
    case IR_LOAD:
        if (e->param == g->store->param) {
            if (e->n != g->store->n - 1) { g->ok = 0; return; }
            for (int i = 0; i < e->n; i++)
                if (!ir_same(e->k[i], g->store->k[i + 1])) { g->ok = 0; return; }
            return;
        } else {
            int seen = 0;
            for (int i = 0; i < g->nreads; i++) seen |= g->reads[i] == e->param;
            if (!seen) {
                if (g->nreads >= 64) { g->ok = 0; return; }
                g->reads[g->nreads++] = e->param;
            }
        }
        break;
    default: break;
    }
    for (int i = 0; i < e->n; i++) loads_ok(g, e->k[i]);
}

/* j or j + c (c a constant), no wrap */
static int is_j(const tk_ir *e, int j) {
    e = ir_strip(e);
    if (e->op == IR_LOCAL) return e->local == j;
    return e->op == IR_BIN && (e->sub == B_ADD || e->sub == B_SUB) && e->k[1]->op == IR_CONST && ir_strip(e->k[0])->op == IR_LOCAL &&
           ir_strip(e->k[0])->local == j;
}

static int unit_for(const tk_ir *s) { return s->op == IR_FOR && s->k[2]->op == IR_CONST && s->k[2]->c.i == 1; }

/* Loop fj (check-free) as `if (k loop runs and arrays disjoint) { interchanged } else { fj }`, or NULL. */
static tk_ir *interchange(tk_cc *C, tk_ir *fj) {
    if (!unit_for(fj)) return NULL;
    tk_ir *one[2];
    if (stmts(fj->k[3], one, 0, 1) != 1 || !unit_for(one[0])) return NULL;
    tk_ir *fk = one[0];
    int j = fj->local, k = fk->local;
    for (int i = 0; i < 2; i++) {
        if (!ir_invariant(fj->k[i], fj) || !pure(fj->k[i]) || !ir_invariant(fk->k[i], fj) || !pure(fk->k[i])) return NULL;
    }
    if (ir_assignments(fj, j) != 1 || ir_assignments(fj, k) != 1) return NULL;
    tk_ir *body[17];
    int nb = stmts(fk->k[3], body, 0, 16);
    if (nb < 1 || nb > 16) return NULL;
    ichg g;
    memset(&g, 0, sizeof g);
    const tk_ir *w = body[nb - 1];
    if (w->op == IR_EVAL && w->k[0]->op == IR_ATOMIC && tk_atom_commutes(w->k[0]->sub))
        w = w->k[0]; /* a[..] += v before privatize.c (an exchange or a swap keeps its order) */
    else if (w->op != IR_STORE) return NULL;
    g.store = w;
    g.ok = 1;
    for (int i = 0; i < nb - 1; i++) { /* locals, each assigned once before it is read */
        tk_ir *a = body[i];
        if (a->op != IR_ASSIGN || a->local == j || a->local == k || ir_assignments(fj, a->local) != 1) return NULL;
        for (int t = i; t < nb - 1; t++)
            if (ir_mentions(a->k[0], body[t]->local)) return NULL;
        g.temps[g.ntemps++] = a->local;
        loads_ok(&g, a->k[0]);
    }
    const tk_ir *st = g.store;
    if (st->param < 0 || st->n < 2) return NULL;
    int jaxes = 0;
    for (int i = 1; i < st->n; i++) {
        const tk_ir *ix = st->k[i];
        if (ir_mentions(ix, k)) return NULL;
        for (int t = 0; t < g.ntemps; t++)
            if (ir_mentions(ix, g.temps[t])) return NULL;
        if (ir_mentions(ix, j)) {
            if (!is_j(ix, j)) return NULL;
            jaxes++;
        } else if (!ir_invariant(ix, fj) || !pure(ix)) {
            return NULL;
        }
        loads_ok(&g, ix);
    }
    if (jaxes != 1) return NULL;
    loads_ok(&g, st->k[0]);
    if (!g.ok) return NULL;

    /* if (lo_k < hi_k && disjoint(C, each array read)) { for k: for j: body } else { fj } */
    tk_ir *cond = ir_i64_bin(C, B_LT, ir_clone(C, fk->k[0]), ir_clone(C, fk->k[1]));
    for (int r = 0; r < g.nreads; r++) {
        tk_ir *d = ir_new(C, IR_MATH, ty_value(TACK_BOOL), fj->line);
        d->sub = M_DISJOINT;
        d->aux_ty = ty_value(TACK_I64);
        d->param = st->param;
        d->aux = g.reads[r];
        cond = ir_and(C, cond, d);
    }
    tk_ir *inner = ir_new(C, IR_FOR, ty_void(), fj->line);
    *inner = *fj;
    inner->k = NULL;
    inner->n = inner->cap = 0;
    for (int i = 0; i < 3; i++) ir_push(C, inner, ir_clone(C, fj->k[i]));
    ir_push(C, inner, ir_clone(C, fk->k[3]));
    tk_ir *outer = ir_new(C, IR_FOR, ty_void(), fk->line);
    *outer = *fk;
    outer->k = NULL;
    outer->n = outer->cap = 0;
    for (int i = 0; i < 3; i++) ir_push(C, outer, ir_clone(C, fk->k[i]));
    tk_ir *ob = ir_new(C, IR_BLOCK, ty_void(), fk->line);
    ir_push(C, ob, inner);
    ir_push(C, outer, ob);
    tk_ir *then = ir_new(C, IR_BLOCK, ty_void(), fj->line);
    then->str = "tack: loops interchanged (nests.c): the inner loop runs along rows, each cell's updates in the same order";
    ir_push(C, then, outer);
    tk_ir *els = ir_new(C, IR_BLOCK, ty_void(), fj->line);
    ir_push(C, els, fj);
    tk_ir *iff = ir_new(C, IR_IF, ty_void(), fj->line);
    ir_push(C, iff, cond);
    ir_push(C, iff, then);
    ir_push(C, iff, els);
    return iff;
}

/* ----------------------------------------------------------- versioning */
static int has_pfor(const tk_ir *s) {
    if (s->op == IR_PFOR) return 1;
    for (int i = 0; i < s->n; i++)
        if (has_pfor(s->k[i])) return 1;
    return 0;
}

/* ------------------------------------------------- short inner loops */
/* The inner loops of f, when all are range loops with fixed bounds, at most
 * three deep and eight in all (no while loops): the work of one iteration of
 * f, 1 + the iterations of the inner loops, as an i64 expression, with
 * `small` the test that every trip count is at most 2^16 (so the products
 * cannot wrap); NULL otherwise. */
static tk_ir *work_of(tk_cc *C, const tk_ir *f, const tk_ir *b, int depth, int *count, tk_ir **small) {
    tk_ir *w = ir_i64(C, 1, b->line);
    for (int i = 0; i < b->n; i++) {
        const tk_ir *s = b->k[i];
        if (s->op == IR_WHILE || s->op == IR_PFOR) return NULL;
        if (s->op == IR_BLOCK) {
            tk_ir *inner = work_of(C, f, s, depth, count, small);
            if (!inner) return NULL;
            w = ir_i64_bin(C, B_ADD, w, inner);
            continue;
        }
        if (s->op == IR_IF) {
            for (int t = 1; t < 3; t++) {
                tk_ir *inner = work_of(C, f, s->k[t], depth, count, small);
                if (!inner) return NULL;
                w = ir_i64_bin(C, B_ADD, w, inner);
            }
            continue;
        }
        if (s->op != IR_FOR) continue;
        if (depth >= 3 || ++*count > 8 || s->k[2]->op != IR_CONST || s->k[2]->c.i <= 0) return NULL;
        for (int t = 0; t < 2; t++)
            if (!ir_invariant(s->k[t], f) || !pure(s->k[t])) return NULL;
        tk_ir *trip = ir_new(C, IR_MATH, ty_value(TACK_I64), s->line);
        trip->sub = M_TRIP;
        trip->aux_ty = ty_value(TACK_I64);
        for (int t = 0; t < 3; t++) ir_push(C, trip, ir_as_i64(C, ir_clone(C, s->k[t])));
        *small = ir_and(C, *small, ir_i64_bin(C, B_LE, ir_clone(C, trip), ir_i64(C, (int64_t)1 << 16, s->line)));
        tk_ir *body = work_of(C, f, s->k[3], depth + 1, count, small);
        if (!body) return NULL;
        w = ir_i64_bin(C, B_ADD, w, ir_i64_bin(C, B_MUL, trip, body));
    }
    return w;
}

static void mark_quiet(tk_ir *s) {
    if (s->op == IR_FOR) s->sub = TK_FOR_QUIET;
    if (s->op < IR_BLOCK) return;
    for (int i = 0; i < s->n; i++) mark_quiet(s->k[i]);
}

/* Where loops poll (the CPU), a loop of short loops -- a filter's taps --
 * spends more on their strips and polls than on the taps (a 5x5
 * convolution: 1.5x the time of the same loops written plainly in C).  So
 * when an iteration of f does at most 2^16 units of work, f's copy polls
 * for the whole of it (IR_FOR's aux: the local that holds the work) and its
 * inner loops do not poll: between polls there is no more work than before.
 * `if (work <= 2^16) { tk_work = work; quiet copy } else { fast }`, or fast. */
static tk_ir *quiet(tk_cc *C, tk_spec *S, tk_ir *fast) {
    int count = 0;
    tk_ir *small = NULL;
    tk_ir *w = work_of(C, fast, fast->k[3], 0, &count, &small);
    if (!w || !count) return fast;
    int wl = tk_new_local(C, S, "tk_work", ty_value(TACK_I64), S->locals[fast->local].scope);
    tk_ir *q = ir_clone(C, fast);
    mark_quiet(q->k[3]);
    q->aux = wl + 1;
    tk_ir *set = ir_new(C, IR_ASSIGN, ty_void(), fast->line);
    set->local = wl;
    ir_push(C, set, w);
    tk_ir *then = ir_new(C, IR_BLOCK, ty_void(), fast->line);
    then->str = "tack: inner loops short (nests.c): they do not poll; this loop polls for their work";
    ir_push(C, then, set);
    ir_push(C, then, q);
    tk_ir *els = ir_new(C, IR_BLOCK, ty_void(), fast->line);
    ir_push(C, els, fast);
    tk_ir *iff = ir_new(C, IR_IF, ty_void(), fast->line);
    ir_push(C, iff, ir_and(C, small, ir_i64_bin(C, B_LE, ir_clone(C, w), ir_i64(C, (int64_t)1 << 16, fast->line))));
    ir_push(C, iff, then);
    ir_push(C, iff, els);
    return iff;
}

/* Serial loop f at the top of a parallel loop's body: its replacement, or f. */
static tk_ir *version(tk_cc *C, tk_spec *S, tk_ir *f) {
    if (has_pfor(f)) return f;
    nest x;
    memset(&x, 0, sizeof x);
    x.C = C;
    x.f = f;
    collect(&x, f);
    tk_ir *fast = copy_unchecked(&x, f); /* a copy without the checks the test covers */
    /* interchanged or quiet: `if (test) { new } else { fast }`, whose test joins the checks' and
     * whose else is dropped -- where it fails the loop runs as written: two copies, not three */
    tk_ir *r = interchange(C, fast);
    if (!r && C->target->polls) r = quiet(C, S, fast);
    if (r && r->op != IR_IF) r = NULL;
    if (!r && !x.nmarked) return f;
    tk_ir *cond = x.cond, *then = ir_new(C, IR_BLOCK, ty_void(), f->line);
    if (x.nmarked) then->str = "tack: this loop's index checks tested once (nests.c); the loop as written runs if any could fail";
    if (r) {
        cond = ir_and(C, cond, r->k[0]);
        ir_push(C, then, r->k[1]);
    } else {
        ir_push(C, then, fast);
    }
    tk_ir *els = ir_new(C, IR_BLOCK, ty_void(), f->line);
    ir_push(C, els, f);
    tk_ir *iff = ir_new(C, IR_IF, ty_void(), f->line);
    ir_push(C, iff, cond);
    ir_push(C, iff, then);
    ir_push(C, iff, els);
    return iff;
}

/* ---- the test's fixed part, once per launch
 *
 * The test runs once per row of the parallel loop, but most of it does not
 * depend on the row: LU's step, `for j in range(k + 1, n)` inside the rows
 * `i`, tests the bounds of k + 1 and n against the extents and +-2^50 for
 * each of its four index checks, and only the row's own index varies.  The
 * C compiler hoisted none of it (thirty-odd compares and branches a row):
 * lud's 255 steps at 256^2 ran in 0.59 ms with the test and 0.49 ms with the
 * test taken out by hand, the generated source compiled alone (C's loop:
 * 0.44 ms).  So the test's conjuncts are taken apart, each kept once, and
 * those made only of constants, extents and frame locals the parallel loop
 * does not assign are computed once into a frame local just before the
 * loop, which the row's test reads.  Every conjunct is pure integer
 * arithmetic, so where and how often it is evaluated changes nothing. */
#define MAX_CONJ 512

static int conjuncts(tk_ir *c, tk_ir **out, int *n) {
    if (c->op == IR_AND && c->n == 2) return conjuncts(c->k[0], out, n) && conjuncts(c->k[1], out, n);
    if (*n >= MAX_CONJ) return 0;
    out[(*n)++] = c;
    return 1;
}

/* e with each local of the loop's own replaced by its value, or NULL: a copy that reads only
 * constants, extents and frame locals (the entry's, which the chunks see fixed).  A local of the
 * loop's qualifies when the loop assigns it once, by a statement of block b before b->k[upto] (so
 * before the test, in every iteration), from a value that qualifies in turn: lowering's `_t = k + 1`
 * for a range's start, which strength.c moves out of the loop only later. */
static tk_ir *frame_value(tk_cc *C, const tk_spec *S, const tk_ir *pf, const tk_ir *e, const tk_ir *b, int upto,
                          int depth, int var) {
    if (e->op == IR_LOCAL && e->local == var) return ir_clone(C, e);
    if (e->op == IR_LOCAL && S->locals[e->local].scope != -1) {
        if (depth > 4 || ir_assignments(pf, e->local) != 1) return NULL;
        for (int i = 0; i < upto; i++)
            if (b->k[i]->op == IR_ASSIGN && b->k[i]->local == e->local)
                return frame_value(C, S, pf, b->k[i]->k[0], b, i, depth + 1, var);
        return NULL;
    }
    tk_ir *r = ir_clone(C, e);
    for (int i = 0; i < e->n; i++)
        if (!(r->k[i] = frame_value(C, S, pf, e->k[i], b, upto, depth, var))) return NULL;
    return r;
}

/* cond with its fixed conjuncts replaced by a frame local assigned in `pre` (NULL: no hoisting,
 * duplicates dropped only). */
static tk_ir *hoist_test(tk_cc *C, tk_spec *S, const tk_ir *pf, tk_ir *cond, tk_ir *pre, const tk_ir *b, int at) {
    tk_ir **cs = tk_alloc(&C->arena, MAX_CONJ * sizeof *cs);
    int n = 0;
    if (!cs || !conjuncts(cond, cs, &n)) return cond;
    tk_ir *fixed = NULL, *rest = NULL;
    for (int i = 0; i < n; i++) {
        int dup = 0;
        for (int j = 0; j < i && !dup; j++) dup = ir_same(cs[j], cs[i]);
        if (dup) continue;
        tk_ir *v = pre ? frame_value(C, S, pf, cs[i], b, at, 0, -1) : NULL;
        if (v && ir_invariant(v, pf)) fixed = ir_and(C, fixed, v);
        else rest = ir_and(C, rest, cs[i]);
    }
    if (!fixed) return rest;
    int l = tk_new_local(C, S, "tk_rows_ok", ty_value(TACK_BOOL), -1);
    ir_push(C, pre, ir_assign(C, l, fixed));
    tk_ir *r = ir_new(C, IR_LOCAL, S->locals[l].ty, cond->line);
    r->local = l;
    return rest ? ir_and(C, r, rest) : r;
}

/* ---- the test over a chunk
 *
 * A versioned loop's test, with the loop's own locals replaced by their
 * values, names only the parallel loop's variable and fixed values: then
 * the chunk function can test it for every iteration of a chunk before the
 * chunk runs, and where it holds throughout, run a copy of the chunk's loop
 * in which each such `if` is its check-free branch alone -- the else copy
 * and the per-iteration test gone from the loop (emit_cpu.c, chunk_loop;
 * decisions.md: k-means' point loop).  Such an `if` is marked TK_IF_ROWS and
 * its test joins the parallel loop's `ck`.  Whether a test qualifies: pure
 * integer arithmetic and comparisons (trip counts and the interchange's
 * disjointness included) of constants, extents, locals the parallel loop
 * does not assign and its variable -- nothing that reads an array the body
 * could write, so the test gives the same value before the chunk as where
 * the `if` runs. */
static int rows_fixed(const tk_ir *e, const tk_ir *pf, int var) {
    switch (e->op) {
    case IR_CONST: case IR_SHAPE: return 1;
    case IR_LOCAL: return e->local == var || !ir_assigns_local(pf, e->local);
    case IR_MATH: if (e->sub != M_TRIP && e->sub != M_DISJOINT) return 0; break;
    case IR_BIN: case IR_UN: case IR_CAST: case IR_WRAP: case IR_AND: case IR_OR: case IR_SELECT: break;
    default: return 0;
    }
    for (int i = 0; i < e->n; i++)
        if (!rows_fixed(e->k[i], pf, var)) return 0;
    return 1;
}

static void rows_test(tk_cc *C, tk_spec *S, tk_ir *pf, tk_ir *iff, const tk_ir *b, int at) {
    /* (periodic.c runs after this pass; the emitter leaves its versions without the copy) */
    if (pf->aux != 1 || pf->bnd || !tk_config_int(TK_CFG_UNSWITCH)) return;
    int var = pf->vars[0];
    if (ir_assignments(pf->k[pf->aux], var)) return;
    tk_ir *t = frame_value(C, S, pf, iff->k[0], b, at, 0, var);
    if (!t || !rows_fixed(t, pf, var)) return;
    iff->sub = TK_IF_ROWS;
    pf->ck = ir_and(C, pf->ck, t);
}

static void top_loops(tk_cc *C, tk_spec *S, tk_ir *b, tk_ir *pf, tk_ir *pre) {
    for (int i = 0; i < b->n; i++) {
        tk_ir *s = b->k[i];
        if (s->op == IR_BLOCK) top_loops(C, S, s, pf, pre);
        else if (s->op == IR_FOR) {
            b->k[i] = version(C, S, s);
            if (b->k[i] != s && b->k[i]->op == IR_IF) {
                b->k[i]->k[0] = hoist_test(C, S, pf, b->k[i]->k[0], pre, b, i);
                rows_test(C, S, pf, b->k[i], b, i);
            }
        }
    }
}

static void find_pfors(tk_cc *C, tk_spec *S, tk_ir *s, tk_ir **slot) {
    if (s->op == IR_PFOR) {
        if (ir_is_blocks(s)) return; /* a block's threads: their loops stay as written */
        tk_ir *wrap = NULL;
        if (tk_gemm(C, S, s, slot ? &wrap : NULL)) { /* gemm.c: a packed matrix product */
            if (wrap) *slot = wrap;                  /* with B packed before it, in a block's place */
            return;
        }
        if (tk_tile(C, S, s)) return; /* tile.c: panels of rows */
        if (tk_jam(C, S, s)) return;  /* jam.c: panels of serial sums, side by side */
        /* the tests' fixed parts go just before the loop: a block in the loop's place */
        tk_ir *pre = slot ? ir_new(C, IR_BLOCK, ty_void(), s->line) : NULL;
        top_loops(C, S, s->k[s->aux], s, pre);
        if (pre && pre->n) {
            ir_push(C, pre, s);
            *slot = pre;
        }
        return;
    }
    if (s->op < IR_BLOCK) return;
    for (int i = 0; i < s->n; i++) find_pfors(C, S, s->k[i], s->op == IR_BLOCK ? &s->k[i] : NULL);
}

tk_ir *tk_nests_fast(tk_cc *C, tk_ir *f, tk_ir **cond) {
    nest x;
    memset(&x, 0, sizeof x);
    x.C = C;
    x.f = f;
    collect(&x, f);
    *cond = x.cond;
    return copy_unchecked(&x, f);
}

void tk_nests(tk_cc *C) {
    if (!tk_config_int(TK_CFG_NESTS)) return; /* the switch, for comparing (config.def) */
    if (!C->target || C->target->loops != TK_LOOPS_CHUNKED || !C->nspecs || !C->specs[0]->body) return;
    /* The interchanged and tiled copies test what arrays share by the bytes
     * [a, a + size) (M_DISJOINT), which a strided view does not occupy:
     * a kernel with one keeps its loops as written. */
    for (int p = 0; p < C->specs[0]->nparams; p++)
        if (C->specs[0]->ptypes[p].kind == TY_ARRAY && C->specs[0]->ptypes[p].strided) return;
    find_pfors(C, C->specs[0], C->specs[0]->body, NULL);
}
