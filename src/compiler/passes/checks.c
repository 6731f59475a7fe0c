/*
 * checks.c -- bounds-check elision and hoisting.
 *
 * Lowering puts an index check before every array access.  Most of them are
 * provably true or can run once per loop instead of once per iteration:
 *
 *   1. Elision.  For `for i in range(a.shape[k])` (serial or parallel, any
 *      non-negative start, positive constant step) an index `i` on axis k of
 *      `a` is in bounds: the check goes, and so does the negative-index wrap.
 *      So does `i + c` when the loop stops at `a.shape[k] - d`, d >= c (an
 *      ndrange over the interior, `(1, n - 1)`, reading `i + 1`), the stop
 *      read through locals as it was when the loop began (`n, m = a.shape`
 *      then `ndrange(n, m)`).  That matters most to a check the range
 *      hoisting below cannot move, one that not every iteration executes:
 *      `c == 3 or (a[i, j] == 1 and c == 2)` in Conway's Life loads a[i, j]
 *      only in some iterations, and its check, a branch out of the loop,
 *      kept the C compiler from vectorizing the whole body (10-20x slower).
 *      Any induction variable with a non-negative start keeps its check but
 *      loses the wrap, and the check becomes one unsigned compare.
 *
 *   2. Range hoisting.  In `for i in range(lo, hi)` with a step of 1, a check
 *      of `i` against an extent that the loop does not change, executed on
 *      every iteration (a direct child of a body without break, continue or
 *      return), becomes one check before the loop: "lo < hi implies hi <=
 *      extent".  So does `v + e` with e the same in every iteration (a
 *      filter tap's `j + dj` over dj) when the check was proven
 *      non-negative (1.), which gives lo + e >= 0; the check then is
 *      "hi + e <= extent".  It reports the first index that would have failed, so the
 *      message is the one the per-iteration check would have given; writes
 *      the loop would have made before failing are not made.
 *
 *   3. Invariant hoisting.  A check whose operands the loop does not change
 *      (a[k] with k fixed) moves before the loop, guarded by "the loop runs
 *      at least once".  strength.c uses the same machinery for zero checks.
 *
 *   4. Indices through locals.  `i = i0 + 1; a[i + 1, j, k]` (a stencil
 *      written by hand) is read as `a[i0 + 2, ...]`: a local defined once by
 *      integer arithmetic on stable values is replaced by its value in the
 *      checks (which are then elided or hoisted as above), in the indices of
 *      loads and plain stores (so the C compiler sees an offset from the
 *      loop's counter, not a wrapping add it cannot vectorize through: the
 *      stencil ran 6-8x slower than with the index inline), and when
 *      deciding whether a wrap can go.  A sum or product of non-negative
 *      terms (i = 1 + 2 * k of a stepped range) loses its wrap too.
 *
 *   5. Python ints' ranges (CK_INTFIT, lower_pyint.c).  A check that a
 *      run-time Python int fits the type it meets in arithmetic reads its
 *      value through locals as an index check does (4.), and is hoisted as
 *      one (3.) when the loop does not change it (a shape); of `v + c` for
 *      the variable v of a loop with a step of 1 it becomes one check
 *      before the loop of the first and last values, lo + c and hi - 1 +
 *      c, reporting the first value that would have failed.  So
 *      `out[i] = a8[i] + i` checks `n - 1 <= 127` once per loop and its
 *      body stays the SIMD loop it was.
 *
 * The wraps go with checks=False too (where there are no checks to move):
 * dropping the wrap of an index proven non-negative changes no result, and
 * a kernel compiled without checks kept every one of them, which stopped the
 * C compiler vectorizing loops the checked kernel vectorized (a sum ran 15x,
 * an ikj matmul 40x slower without checks than with them).
 *
 * A local counts as an induction variable only when nothing but its loop
 * header defines it (lowering copies the counter into a fresh local when the
 * body assigns the loop variable) -- or, for an ndrange axis with bounds
 * (ndrange((1, n - 1), ...)), when its only definition is the statement at
 * the top of the body that sets it to lo + index (the loop's `bnd`).
 */
#include <string.h>

#include "compiler/compiler.h"

typedef struct loopv {
    int var;
    tk_ir *lo, *hi;
    int64_t step; /* constant step, 0 if not constant */
    tk_ir *hv;    /* hi as a value when the loop began: its locals replaced (subst) */
} loopv;

typedef struct check_elider {
    tk_cc *C;
    tk_spec *S;
    int *defs;
    loopv stack[64];
    int n;
    tk_ir **env;   /* per local defined once by an index-like value the walk has passed: the value,
                    * its own locals replaced (NULL: none, or its block has ended) */
    int *log, nlog; /* the locals given an env or rdef entry, in order, to forget when a block ends */
    tk_ir **rdef;   /* per integer local defined once, from its definition to the end of its block: the value
                     * (for the ranges of CK_INTFIT checks: a temporary holding `i % 100`) */
    int thread;     /* the thread variable of the blocks loop the walk is in (-1: none), 0 .. block - 1 */
    int64_t block;
} check_elider;

static void count_defs(check_elider *k, tk_ir *s) {
    if (!s) return;
    if ((s->op == IR_ASSIGN || s->op == IR_SETCOMP || s->op == IR_FOR) && s->local >= 0) k->defs[s->local]++;
    if (s->op == IR_PFOR)
        for (int d = 0; d < s->aux; d++) k->defs[s->vars[d]]++;
    if (ir_is_blocks(s)) k->defs[s->local]++; /* the thread's variable */
    for (int i = 0; i < s->n; i++) count_defs(k, s->k[i]);
}


static int nonneg_expr(const tk_ir *e) {
    while (e->op == IR_CAST && e->k[0]->ty.kind == TY_VALUE && e->k[0]->ty.dt == e->ty.dt) e = e->k[0];
    if (e->op == IR_CONST) return ty_is_float(e->ty) ? 0 : e->c.i >= 0;
    if (e->op == IR_SHAPE) return 1;
    if (e->op == IR_CAST && e->k[0]->op == IR_SHAPE) return 1;
    return 0;
}

static int lo_plus_nonneg(const tk_ir *lo, int64_t c);
#define lo_plus_nonneg_fwd(lo) lo_plus_nonneg((lo), 0)

static loopv *induction(check_elider *k, const tk_ir *e) {
    e = ir_strip(e);
    if (e->op != IR_LOCAL || k->defs[e->local] != 1) return NULL;
    for (int i = k->n - 1; i >= 0; i--)
        if (k->stack[i].var == e->local) return &k->stack[i];
    return NULL;
}

/* idx = v + c for an induction variable v and a constant c (also v - c,
 * c + v, and sums of those: (v + 1) + 1 after a local is replaced). */
static loopv *affine(check_elider *k, const tk_ir *e, int64_t *c) {
    e = ir_strip(e);
    *c = 0;
    if (e->op == IR_LOCAL) return induction(k, e);
    if (e->op != IR_BIN || (e->sub != B_ADD && e->sub != B_SUB) || !ty_is_int(e->ty)) return NULL;
    int ci = e->k[1]->op == IR_CONST ? 1 : e->sub == B_ADD && e->k[0]->op == IR_CONST ? 0 : -1;
    if (ci < 0 || !ty_is_int(e->k[ci]->ty)) return NULL;
    int64_t v = e->k[ci]->c.i, inner;
    if (v == INT64_MIN || v > ((int64_t)1 << 40) || v < -((int64_t)1 << 40)) return NULL;
    loopv *lv = affine(k, e->k[1 - ci], &inner);
    if (!lv) return NULL;
    *c = inner + (e->sub == B_ADD ? v : -v);
    if (*c > ((int64_t)1 << 40) || *c < -((int64_t)1 << 40)) return NULL;
    return lv;
}

/* ------------------------------------------------- locals that name a value */
/* An index written through a local (`i = i0 + 1; a[i + 1]`) is analysed as
 * the value the local was given: a local defined once, by an integer sum,
 * difference or product of constants, extents and locals that are stable
 * where it is read -- parameters (never assigned), the variables of the
 * loops around the reader, and other such locals.  The walk goes in program
 * order and keeps an entry only from the local's definition to the end of
 * its block, so every reader it serves runs after the definition in the
 * same iteration of every loop around it; a loop that defines a local the
 * value names drops the entry (`v = k + 1` read inside a later `for k`).
 * Checks read the value in place of the local, so they are hoisted as if the
 * index were written inline; loads keep the local and only lose the wrap. */
static int index_like(check_elider *k, const tk_ir *e) {
    switch (e->op) {
    case IR_CONST: return ty_is_int(e->ty);
    case IR_SHAPE: return 1;
    case IR_CAST: return ty_is_int(e->ty) && index_like(k, e->k[0]);
    case IR_BIN:
        return ty_is_int(e->ty) && (e->sub == B_ADD || e->sub == B_SUB || e->sub == B_MUL) && index_like(k, e->k[0]) &&
               index_like(k, e->k[1]);
    case IR_LOCAL:
        if (e->local < 0 || e->local >= k->S->nlocals) return 0;
        if (k->env[e->local] || k->defs[e->local] == 0) return 1;
        for (int i = k->n - 1; i >= 0; i--)
            if (k->stack[i].var == e->local) return k->defs[e->local] == 1;
        return 0;
    default: return 0;
    }
}

/* A loop's variable (an ndrange axis's bounded variable is set at the top of
 * the body, and is better known as that). */
static int on_stack(check_elider *k, int local) {
    for (int i = k->n - 1; i >= 0; i--)
        if (k->stack[i].var == local) return 1;
    return 0;
}

/* e with the locals that have an entry replaced by (copies of) their values
 * (new nodes only where one is). */
static tk_ir *subst(check_elider *k, tk_ir *e) {
    if (e->op == IR_LOCAL)
        return e->local >= 0 && e->local < k->S->nlocals && k->env[e->local] ? ir_clone(k->C, k->env[e->local]) : e;
    if (e->op != IR_CAST && e->op != IR_BIN && e->op != IR_WRAP) return e;
    tk_ir *r = e;
    for (int i = 0; i < e->n; i++) {
        tk_ir *x = subst(k, e->k[i]);
        if (x == e->k[i]) continue;
        if (r == e) {
            r = ir_new(k->C, e->op, e->ty, e->line);
            *r = *e;
            r->k = tk_alloc(&k->C->arena, sizeof(tk_ir *) * (size_t)(e->n ? e->n : 1));
            r->cap = e->n;
            for (int j = 0; j < e->n; j++) r->k[j] = e->k[j];
        }
        r->k[i] = x;
    }
    return r;
}

/* A definition of `local` met by the walk: entries whose values name it go. */
static void redefined(check_elider *k, int local) {
    for (int i = 0; i < k->nlog; i++) {
        int v = k->log[i];
        if (k->env[v] && ir_mentions(k->env[v], local)) k->env[v] = NULL;
    }
}

/* Provably >= 0: constants, extents, variables of loops from a non-negative
 * start upward, and sums and products of those. */
static int nonneg_value(check_elider *k, const tk_ir *e) {
    e = ir_strip(e);
    switch (e->op) {
    case IR_CONST: return ty_is_int(e->ty) && e->c.i >= 0;
    case IR_SHAPE: return 1;
    case IR_CAST:
        return e->k[0]->op == IR_SHAPE || (ty_is_int(e->ty) && ty_is_int(e->k[0]->ty) && dt_bits((tack_dtype)e->ty.dt) == 64 &&
                                           dt_bits((tack_dtype)e->k[0]->ty.dt) == 64 && nonneg_value(k, e->k[0]));
    case IR_BIN:
        return ty_is_int(e->ty) && (e->sub == B_ADD || e->sub == B_MUL) && nonneg_value(k, e->k[0]) &&
               nonneg_value(k, e->k[1]);
    case IR_LOCAL: {
        loopv *lv = induction(k, e);
        return lv && lv->step > 0 && lo_plus_nonneg_fwd(lv->lo);
    }
    default: return 0;
    }
}

/* lo + c >= 0, provably */
static int lo_plus_nonneg(const tk_ir *lo, int64_t c) {
    lo = ir_strip(lo);
    if (lo->op == IR_CONST) return lo->c.i >= 0 && lo->c.i + c >= 0;
    return nonneg_expr(lo) && c >= 0;
}

static int same_shape(const tk_ir *a, const tk_ir *b) {
    if (a->op == IR_CAST) a = a->k[0];
    if (b->op == IR_CAST) b = b->k[0];
    return a->op == IR_SHAPE && b->op == IR_SHAPE && a->param == b->param && a->aux == b->aux;
}

/* e is extent x plus a constant, *d (e = x - 1: an interior's stop), through
 * casts and sums and differences with constants. */
static int extent_plus(const tk_ir *e, const tk_ir *x, int64_t *d, int depth) {
    e = ir_strip(e);
    if (depth > 8) return 0;
    if (same_shape(e, x)) {
        *d = 0;
        return 1;
    }
    if (e->op != IR_BIN || (e->sub != B_ADD && e->sub != B_SUB) || !ty_is_int(e->ty)) return 0;
    int ci = e->k[1]->op == IR_CONST ? 1 : e->sub == B_ADD && e->k[0]->op == IR_CONST ? 0 : -1;
    if (ci < 0 || !ty_is_int(e->k[ci]->ty)) return 0;
    int64_t v = e->k[ci]->c.i;
    if (v > ((int64_t)1 << 40) || v < -((int64_t)1 << 40) || !extent_plus(e->k[1 - ci], x, d, depth + 1)) return 0;
    *d += e->sub == B_ADD ? v : -v;
    return *d <= ((int64_t)1 << 40) && *d >= -((int64_t)1 << 40);
}

/* v + c < ext wherever loop variable v runs: its stop (as a value) is ext + d with d + c <= 0. */
static int below_extent(const loopv *lv, int64_t c, const tk_ir *ext) {
    int64_t d;
    return lv->hv && extent_plus(lv->hv, ext, &d, 0) && d + c <= 0;
}

static tk_ir *plus(tk_cc *C, tk_ir *e, int64_t c);

/* The i64 value v + c of an induction variable. */
static tk_ir *var_plus(check_elider *k, const loopv *lv, int64_t c, int line) {
    tk_ir *l = ir_new(k->C, IR_LOCAL, k->S->locals[lv->var].ty, line);
    l->local = lv->var;
    if (!ty_eq(l->ty, ty_value(TACK_I64))) {
        tk_ir *x = ir_new(k->C, IR_CAST, ty_value(TACK_I64), line);
        ir_push(k->C, x, l);
        l = x;
    }
    return plus(k->C, l, c);
}

/* An i64 index through locals, as the value they name; v + c for an
 * induction variable v (the form the emitter folds into an offset). */
static tk_ir *inline_index(check_elider *k, tk_ir *x) {
    tk_ir *v = subst(k, x);
    if (v == x || !ty_eq(x->ty, ty_value(TACK_I64))) return v == x || ty_eq(v->ty, x->ty) ? v : x;
    int64_t c;
    loopv *lv = affine(k, v, &c);
    if (!lv || ir_strip(v)->op == IR_LOCAL) return v;
    return var_plus(k, lv, c, x->line);
}

/* Every index of load x is v + c for a loop's variable v, within its extent
 * wherever the loop runs (1.): the load cannot fail where it is moved within
 * the iteration (speculate.c). */
static int in_bounds(check_elider *k, const tk_ir *x) {
    if (x->param < 0 || x->param >= k->S->nparams || x->n < 1) return 0;
    for (int i = 0; i < x->n; i++) {
        int64_t c;
        loopv *lv = affine(k, subst(k, x->k[i]), &c);
        tk_ir ext;
        memset(&ext, 0, sizeof ext);
        ext.op = IR_SHAPE;
        ext.param = x->param;
        ext.aux = i;
        if (!lv || lv->step <= 0 || !lo_plus_nonneg(lv->lo, c) ||
            !((c == 0 && same_shape(lv->hi, &ext)) || below_extent(lv, c, &ext)))
            return 0;
    }
    return 1;
}

static tk_ir *kx(check_elider *k, tk_ir *x) {
    for (int i = 0; i < x->n; i++) x->k[i] = kx(k, x->k[i]);
    if (x->op == IR_WRAP) {
        int64_t c;
        tk_ir *v = subst(k, x->k[0]);
        loopv *lv = affine(k, v, &c);
        if (lv && lv->step > 0 && lo_plus_nonneg(lv->lo, c)) return x->k[0];
        if (nonneg_value(k, v)) return x->k[0];
    }
    if (x->op == IR_LOAD) { /* the index as if written inline: i0 + 1 + 1 is an offset, not a wrapping add */
        for (int i = 0; i < x->n; i++) x->k[i] = inline_index(k, x->k[i]);
        if (in_bounds(k, x)) x->sub = TK_LOAD_IN_BOUNDS;
    }
    return x;
}

static void ks(check_elider *k, tk_ir *s);

/* ------------------------------------------------- the range of a value */
/* Bounds [*lo, *hi] that integer value e provably lies in, for CK_INTFIT
 * checks (5.): constants, extents (>= 0), the variables of loops with
 * constant bounds (of a stepped loop from a fixed start, up to the last
 * value it takes: range(0, 128, 8) ends at 120, not 127), a blocks loop's thread (0 .. block - 1), and +, -, *, // and >> of those, % by a constant and &
 * with a non-negative constant, a narrower integer's value -- `i % 100`
 * fits int8 wherever i comes from.  Bounds are kept within +-2**61, so the
 * arithmetic on them cannot wrap; past that the value is unknown (0). */
#define RMAG ((int64_t)1 << 61)
static int value_range(check_elider *k, const tk_ir *e, int64_t *lo, int64_t *hi, int depth) {
    e = ir_strip(e);
    if (depth > 16 || !ty_is_int(e->ty)) return 0;
    int64_t al, ah, bl, bh;
    switch (e->op) {
    case IR_CONST:
        if (e->c.i < -RMAG || e->c.i > RMAG) return 0;
        *lo = *hi = e->c.i;
        return 1;
    case IR_SHAPE:
        *lo = 0;
        *hi = RMAG;
        return 1;
    case IR_CAST: { /* an extent, or a narrower integer's value */
        const tk_ir *x = e->k[0];
        if (x->op == IR_SHAPE) return value_range(k, x, lo, hi, depth + 1);
        if (x->ty.kind != TY_VALUE || !ty_is_int(x->ty) || !ty_is_scalar(x->ty)) return 0;
        tack_dtype xd = (tack_dtype)x->ty.dt;
        int bits = dt_bits(xd), uns = dt_kind(xd) == TACK_KIND_UINT;
        if (bits >= 64 || dt_bits((tack_dtype)e->ty.dt) < 64) return 0; /* to int64 only: the value is kept */
        if (!value_range(k, x, lo, hi, depth + 1)) {
            *lo = uns ? 0 : -((int64_t)1 << (bits - 1));
            *hi = uns ? (int64_t)(((uint64_t)1 << bits) - 1) : ((int64_t)1 << (bits - 1)) - 1;
        }
        return 1;
    }
    case IR_LOCAL: {
        if (e->local >= 0 && e->local == k->thread && k->defs[e->local] == 1 && k->block > 0 && k->block <= RMAG) {
            *lo = 0, *hi = k->block - 1; /* a blocks loop's thread */
            return 1;
        }
        loopv *lv = induction(k, e);
        if (!lv && e->local >= 0 && e->local < k->S->nlocals && k->rdef[e->local])
            return value_range(k, k->rdef[e->local], lo, hi, depth + 1);
        if (!lv || lv->step <= 0 || !value_range(k, lv->lo, &al, &ah, depth + 1) ||
            !value_range(k, lv->hi, &bl, &bh, depth + 1))
            return 0;
        *lo = al; /* lo .. hi - 1, upward */
        *hi = bh - 1 > al ? bh - 1 : al;
        if (lv->step > 1 && al == ah && bh - 1 > al) /* a fixed start: the last value, lo + k * step */
            *hi = al + (bh - 1 - al) / lv->step * lv->step;
        return 1;
    }
    case IR_BIN: break;
    default: return 0;
    }
    if (e->sub == B_MOD || e->sub == B_AND) { /* by a constant: whatever the other side is */
        const tk_ir *c = ir_strip(e->k[1]);
        if (e->sub == B_AND && c->op != IR_CONST) c = ir_strip(e->k[0]);
        if (c->op != IR_CONST || c->c.i < -RMAG || c->c.i > RMAG) return 0;
        if (e->sub == B_AND) {
            if (c->c.i < 0) return 0;
            *lo = 0, *hi = c->c.i;
        } else if (c->c.i > 0) { /* Python's %: the divisor's sign */
            *lo = 0, *hi = c->c.i - 1;
        } else if (c->c.i < 0) {
            *lo = c->c.i + 1, *hi = 0;
        } else {
            return 0;
        }
        return 1;
    }
    if (!value_range(k, e->k[0], &al, &ah, depth + 1) || !value_range(k, e->k[1], &bl, &bh, depth + 1)) return 0;
    switch (e->sub) {
    case B_ADD: *lo = al + bl, *hi = ah + bh; break;
    case B_SUB: *lo = al - bh, *hi = ah - bl; break;
    case B_MUL: {
        const int64_t m = (int64_t)1 << 30; /* each side within 2**30: the product within 2**60 */
        if (al < -m || ah > m || bl < -m || bh > m) return 0;
        int64_t p[4] = {al * bl, al * bh, ah * bl, ah * bh};
        *lo = *hi = p[0];
        for (int j = 1; j < 4; j++) {
            if (p[j] < *lo) *lo = p[j];
            if (p[j] > *hi) *hi = p[j];
        }
        break;
    }
    case B_FLOORDIV: /* by a positive constant: monotone, floor */
        if (bl != bh || bl <= 0) return 0;
        *lo = al >= 0 ? al / bl : -((-al + bl - 1) / bl);
        *hi = ah >= 0 ? ah / bl : -((-ah + bl - 1) / bl);
        break;
    case B_SHR: /* by a constant count: monotone */
        if (bl != bh || bl < 0 || bl > 62) return 0;
        *lo = al >> bl, *hi = ah >> bl;
        break;
    default: return 0;
    }
    return *lo >= -RMAG && *hi <= RMAG && *lo <= *hi;
}
#undef RMAG

static void kblock(check_elider *k, tk_ir *b) {
    int mark = k->nlog;
    for (int i = 0; i < b->n; i++) {
        tk_ir *s = b->k[i];
        if (s->op == IR_CHECK && s->sub == CK_INDEX && s->local != 2) {
            for (int j = 0; j < s->n; j++) s->k[j] = subst(k, kx(k, s->k[j]));
            tk_ir *idx = s->k[0], *ext = s->k[1];
            int64_t c;
            loopv *lv = affine(k, idx, &c);
            if (lv && ir_strip(idx)->op != IR_LOCAL) { /* (v + 1) + 1 as v + 2, the form hoisting reads */
                s->k[0] = idx = var_plus(k, lv, c, s->line);
            }
            idx = (tk_ir *)ir_strip(idx);
            if (lv && lv->step > 0 && lo_plus_nonneg(lv->lo, c)) {
                if ((c == 0 && same_shape(lv->hi, ext)) || below_extent(lv, c, ext)) {
                    b->k[i] = ir_new(k->C, IR_BLOCK, ty_void(), s->line); /* provably in bounds */
                    continue;
                }
                s->local = 1;
            } else if ((idx->op == IR_CONST && idx->c.i >= 0) || nonneg_value(k, idx)) {
                s->local = 1;
            }
            continue;
        }
        if (s->op == IR_CHECK && s->sub == CK_INTFIT && s->local != CKI_RANGE) {
            s->k[0] = subst(k, kx(k, s->k[0]));
            int64_t c, lo, hi;
            if (value_range(k, s->k[0], &lo, &hi, 0) && lo >= s->k[1]->c.i && hi <= s->k[2]->c.i) {
                b->k[i] = ir_new(k->C, IR_BLOCK, ty_void(), s->line); /* i % 100 fits int8 */
                continue;
            }
            loopv *lv = affine(k, s->k[0], &c);
            if (lv && ir_strip(s->k[0])->op != IR_LOCAL) s->k[0] = var_plus(k, lv, c, s->line);
            continue;
        }
        ks(k, s);
        if (s->op == IR_ASSIGN || s->op == IR_SETCOMP) {
            if (s->local >= 0 && s->local < k->S->nlocals) redefined(k, s->local);
            if (s->op == IR_ASSIGN && s->local >= 0 && s->local < k->S->nlocals && k->defs[s->local] == 1 &&
                ty_is_int(k->S->locals[s->local].ty) && !on_stack(k, s->local) && index_like(k, s->k[0])) {
                k->env[s->local] = subst(k, s->k[0]);
                k->log[k->nlog++] = s->local;
            } else if (s->op == IR_ASSIGN && s->local >= 0 && s->local < k->S->nlocals && k->defs[s->local] == 1 &&
                       ty_is_int(k->S->locals[s->local].ty) && !on_stack(k, s->local)) {
                k->rdef[s->local] = s->k[0];
                k->log[k->nlog++] = s->local;
            }
        }
    }
    for (int i = mark; i < k->nlog; i++) k->env[k->log[i]] = k->rdef[k->log[i]] = NULL;
    k->nlog = mark;
}

static void ks(check_elider *k, tk_ir *s) {
    switch (s->op) {
    case IR_BLOCK: kblock(k, s); return;
    case IR_FOR: {
        for (int i = 0; i < 3; i++) s->k[i] = kx(k, s->k[i]);
        redefined(k, s->local);
        if (k->n < 64) {
            loopv lv = {s->local, s->k[0], s->k[1], s->k[2]->op == IR_CONST ? s->k[2]->c.i : 0, subst(k, s->k[1])};
            k->stack[k->n++] = lv;
            kblock(k, s->k[3]);
            k->n--;
        }
        return;
    }
    case IR_PFOR: {
        int saved = k->n;
        for (int d = 0; d < s->aux; d++) redefined(k, s->vars[d]);
        for (int d = 0; d < s->aux; d++) {
            s->k[d] = kx(k, s->k[d]);
            if (k->n < 64) {
                loopv lv = {s->vars[d], ir_const_i(k->C, ty_value(TACK_I64), 0, s->line), s->k[d], 1, NULL};
                if (d == 0 && s->off) {
                    lv.lo = s->off;
                    lv.hi = s->hi;
                }
                lv.hv = subst(k, lv.hi);
                k->stack[k->n++] = lv;
            }
        }
        for (int j = 0; s->bnd && j + 2 < s->bnd->n && k->n < 64; j += 3) { /* ndrange((lo, hi), ...) */
            loopv lv = {s->bnd->k[j]->local, s->bnd->k[j + 1], s->bnd->k[j + 2], 1, subst(k, s->bnd->k[j + 2])};
            k->stack[k->n++] = lv;
        }
        int thread = k->thread;
        int64_t block = k->block;
        if (ir_is_blocks(s)) k->thread = s->local, k->block = s->c.i;
        kblock(k, s->k[s->aux]);
        k->thread = thread, k->block = block;
        k->n = saved;
        return;
    }
    case IR_IF:
        s->k[0] = kx(k, s->k[0]);
        kblock(k, s->k[1]);
        kblock(k, s->k[2]);
        return;
    case IR_WHILE:
        s->k[0] = kx(k, s->k[0]);
        kblock(k, s->k[1]);
        return;
    case IR_PRINT:
        for (int i = 0; i < s->n; i++)
            if (!s->k[i]->str) s->k[i] = kx(k, s->k[i]);
        return;
    case IR_STORE: /* a plain store's index too; a read-modify-write keeps the own local verify.c looks for */
        for (int i = 0; i < s->n; i++) s->k[i] = kx(k, s->k[i]);
        for (int i = 1; s->sub == ST_PLAIN && i < s->n; i++) s->k[i] = inline_index(k, s->k[i]);
        return;
    default:
        for (int i = 0; i < s->n; i++) s->k[i] = kx(k, s->k[i]);
        return;
    }
}

/* ------------------------------------------------------------- hoisting */
static tk_ir *body_of(tk_ir *loop) { return loop->op == IR_FOR ? loop->k[3] : loop->k[loop->aux]; }

/* "the loop runs at least once" */
static tk_ir *runs(tk_cc *C, tk_ir *loop) {
    tk_ir *cond = NULL;
    int nd = loop->op == IR_FOR ? 1 : loop->aux;
    for (int d = 0; d < nd; d++) {
        tk_ir *c = ir_new(C, IR_BIN, ty_value(TACK_BOOL), loop->line);
        c->sub = B_LT;
        c->aux_ty = ty_value(TACK_I64);
        if (loop->op == IR_FOR) {
            tk_ir *tr = ir_new(C, IR_MATH, ty_value(TACK_I64), loop->line);
            tr->sub = M_TRIP;
            tr->aux_ty = ty_value(TACK_I64);
            ir_push(C, tr, loop->k[0]);
            ir_push(C, tr, loop->k[1]);
            ir_push(C, tr, loop->k[2]);
            ir_push(C, c, ir_const_i(C, ty_value(TACK_I64), 0, loop->line));
            ir_push(C, c, tr);
        } else {
            ir_push(C, c, ir_const_i(C, ty_value(TACK_I64), 0, loop->line));
            ir_push(C, c, loop->k[d]);
        }
        if (!cond) cond = c;
        else {
            tk_ir *a = ir_new(C, IR_AND, ty_value(TACK_BOOL), loop->line);
            ir_push(C, a, cond);
            ir_push(C, a, c);
            cond = a;
        }
    }
    return cond;
}

static tk_ir *guarded(tk_cc *C, tk_ir *loop, tk_ir *check) {
    tk_ir *iff = ir_new(C, IR_IF, ty_void(), check->line);
    ir_push(C, iff, runs(C, loop));
    tk_ir *then = ir_new(C, IR_BLOCK, ty_void(), check->line);
    ir_push(C, then, check);
    ir_push(C, iff, then);
    ir_push(C, iff, ir_new(C, IR_BLOCK, ty_void(), check->line));
    return iff;
}

static tk_ir *plus(tk_cc *C, tk_ir *e, int64_t c) {
    if (c == 0) return e;
    tk_ir *b = ir_new(C, IR_BIN, ty_value(TACK_I64), e->line);
    b->sub = B_ADD;
    b->aux_ty = ty_value(TACK_I64);
    tk_ir *x = e;
    if (!ty_eq(x->ty, ty_value(TACK_I64))) {
        x = ir_new(C, IR_CAST, ty_value(TACK_I64), e->line);
        ir_push(C, x, e);
    }
    ir_push(C, b, x);
    ir_push(C, b, ir_const_i(C, ty_value(TACK_I64), c, e->line));
    return b;
}

/* a + b as i64 values. */
static tk_ir *add_i64(tk_cc *C, tk_ir *a, tk_ir *b) {
    tk_ir *x[2] = {a, b};
    for (int i = 0; i < 2; i++)
        if (!ty_eq(x[i]->ty, ty_value(TACK_I64))) {
            tk_ir *cv = ir_new(C, IR_CAST, ty_value(TACK_I64), x[i]->line);
            ir_push(C, cv, x[i]);
            x[i] = cv;
        }
    tk_ir *r = ir_new(C, IR_BIN, ty_value(TACK_I64), a->line);
    r->sub = B_ADD;
    r->aux_ty = ty_value(TACK_I64);
    ir_push(C, r, x[0]);
    ir_push(C, r, x[1]);
    return r;
}

/* The values local v takes in `loop` when it is the loop's variable with a
 * step of 1: lo .. hi - 1, both invariant (0: not such a variable).
 * *bounded: an ndrange axis's bounded variable, set once by the body. */
static int var_range(tk_cc *C, tk_ir *loop, int v, tk_ir **lo, tk_ir **hi, int *bounded) {
    tk_ir *body = body_of(loop);
    *lo = *hi = NULL;
    *bounded = 0;
    if (loop->op == IR_FOR && loop->local == v && loop->k[2]->op == IR_CONST && loop->k[2]->c.i == 1 &&
        ir_invariant(loop->k[0], loop) && ir_invariant(loop->k[1], loop)) {
        *lo = loop->k[0];
        *hi = loop->k[1];
    } else if (loop->op == IR_PFOR) {
        for (int d = 0; d < loop->aux; d++)
            if (loop->vars[d] == v) {
                *lo = d == 0 && loop->off ? loop->off : ir_const_i(C, ty_value(TACK_I64), 0, loop->line);
                *hi = d == 0 && loop->off ? loop->hi : loop->k[d];
                if (!ir_invariant(*lo, loop) || !ir_invariant(*hi, loop)) *lo = NULL;
            }
        for (int j = 0; loop->bnd && j + 2 < loop->bnd->n; j += 3)
            if (loop->bnd->k[j]->local == v && ir_assignments(body, v) == 1) {
                *lo = loop->bnd->k[j + 1]; /* set once, by the body's first statements */
                *hi = loop->bnd->k[j + 2];
                if (!ir_invariant(*lo, loop) || !ir_invariant(*hi, loop)) *lo = NULL;
                *bounded = 1;
            }
    }
    if (!*lo) return 0;
    /* the variable must not be redefined in the body */
    return *bounded || !ir_assigns_local(body, v);
}

/* A CK_INTFIT check of v + c, v the loop's variable (step 1): one check of
 * the range of values the loop gives it, or NULL. */
static tk_ir *intfit_range(tk_cc *C, tk_ir *loop, tk_ir *c) {
    const tk_ir *idx = ir_strip(c->k[0]);
    int64_t off = 0;
    if (idx->op == IR_BIN && (idx->sub == B_ADD || idx->sub == B_SUB) && idx->k[1]->op == IR_CONST &&
        ty_is_int(idx->k[1]->ty) && idx->k[1]->c.i > -((int64_t)1 << 40) && idx->k[1]->c.i < ((int64_t)1 << 40)) {
        off = idx->sub == B_ADD ? idx->k[1]->c.i : -idx->k[1]->c.i;
        idx = ir_strip(idx->k[0]);
    }
    tk_ir *lo, *hi;
    int bounded;
    if (idx->op != IR_LOCAL || !var_range(C, loop, idx->local, &lo, &hi, &bounded)) return NULL;
    tk_ir *r = ir_new(C, IR_CHECK, ty_void(), c->line);
    r->sub = CK_INTFIT;
    r->aux = c->aux;
    r->local = CKI_RANGE;
    ir_push(C, r, plus(C, lo, off));
    ir_push(C, r, plus(C, hi, off));
    ir_push(C, r, c->k[1]);
    ir_push(C, r, c->k[2]);
    return r;
}

/* Checks to move out of `loop`, appended to `out`; they are replaced by empty blocks. */
static void hoist_from(tk_cc *C, tk_ir *loop, int kind, tk_ir *out) {
    tk_ir *body = body_of(loop);
    if (ir_has_jump(body)) return;
    for (int i = 0; i < body->n; i++) {
        tk_ir *c = body->k[i];
        if (c->op != IR_CHECK || c->sub != kind) continue;
        int inv = 1;
        for (int j = 0; j < c->n; j++)
            if (!ir_invariant(c->k[j], loop)) inv = 0;
        if (inv) {
            ir_push(C, out, guarded(C, loop, c));
            body->k[i] = ir_new(C, IR_BLOCK, ty_void(), c->line);
            continue;
        }
        if (kind == CK_INTFIT) {
            tk_ir *r = c->local == CKI_RANGE ? NULL : intfit_range(C, loop, c);
            if (r) {
                ir_push(C, out, r);
                body->k[i] = ir_new(C, IR_BLOCK, ty_void(), c->line);
            }
            continue;
        }
        /* range form: v + c for the loop's own variable v, step 1, lo + c >= 0 */
        if (kind != CK_INDEX || c->local == 2 || !ir_invariant(c->k[1], loop)) continue;
        const tk_ir *idx = ir_strip(c->k[0]);
        int64_t off = 0;
        tk_ir *shift = NULL; /* v + e, e the same in every iteration (a filter tap's j + dj over dj) */
        if (idx->op == IR_BIN && (idx->sub == B_ADD || idx->sub == B_SUB) && idx->k[1]->op == IR_CONST &&
            ty_is_int(idx->k[1]->ty) && idx->k[1]->c.i > -((int64_t)1 << 40) && idx->k[1]->c.i < ((int64_t)1 << 40)) {
            off = idx->sub == B_ADD ? idx->k[1]->c.i : -idx->k[1]->c.i;
            idx = ir_strip(idx->k[0]);
        } else if (idx->op == IR_BIN && idx->sub == B_ADD && c->local == 1 && ty_is_int(idx->ty)) {
            /* a check proven non-negative at every iteration: lo + e >= 0 holds where the loop runs */
            for (int side = 0; side < 2 && !shift; side++) {
                const tk_ir *v = ir_strip(idx->k[side]);
                if (v->op == IR_LOCAL && !ir_invariant(v, loop) && ir_invariant(idx->k[1 - side], loop)) {
                    shift = idx->k[1 - side];
                    idx = v;
                }
            }
            if (!shift) continue;
        }
        if (idx->op != IR_LOCAL) continue;
        tk_ir *lo, *hi;
        int bounded;
        if (!var_range(C, loop, idx->local, &lo, &hi, &bounded)) continue;
        if (!shift && !lo_plus_nonneg(lo, off)) continue;
        lo = shift ? add_i64(C, lo, shift) : plus(C, lo, off);
        hi = shift ? add_i64(C, hi, shift) : plus(C, hi, off);
        tk_ir *r = ir_new(C, IR_CHECK, ty_void(), c->line);
        r->sub = CK_INDEX;
        r->aux = c->aux;
        r->local = 2;
        ir_push(C, r, lo);
        ir_push(C, r, hi);
        ir_push(C, r, c->k[1]);
        ir_push(C, out, r);
        body->k[i] = ir_new(C, IR_BLOCK, ty_void(), c->line);
    }
}

static void hoist_block(tk_cc *C, tk_ir *b, int kind) {
    int changed = 0;
    tk_ir *nb = ir_new(C, IR_BLOCK, ty_void(), b->line);
    for (int i = 0; i < b->n; i++) {
        tk_ir *s = b->k[i];
        switch (s->op) {
        case IR_BLOCK: hoist_block(C, s, kind); break;
        case IR_IF: hoist_block(C, s->k[1], kind); hoist_block(C, s->k[2], kind); break;
        case IR_WHILE: hoist_block(C, s->k[1], kind); break;
        case IR_FOR:
        case IR_PFOR: {
            /* flatten nested blocks of the body so hoisted inner checks are direct children */
            tk_ir *body = body_of(s);
            hoist_block(C, body, kind);
            tk_ir *out = ir_new(C, IR_BLOCK, ty_void(), s->line);
            hoist_from(C, s, kind, out);
            if (out->n) {
                changed = 1;
                for (int j = 0; j < out->n; j++) ir_push(C, nb, out->k[j]);
            }
            break;
        }
        default: break;
        }
        ir_push(C, nb, s);
    }
    if (changed) {
        b->k = nb->k;
        b->n = nb->n;
        b->cap = nb->cap;
    }
}

void tk_hoist_invariant_checks(tk_cc *C, int kind) {
    for (int i = 0; i < C->nspecs; i++)
        if (C->specs[i]->body) hoist_block(C, C->specs[i]->body, kind);
}

void tk_checks(tk_cc *C) {
    for (int i = 0; i < C->nspecs; i++) {
        tk_spec *S = C->specs[i];
        if (!S->body) continue;
        check_elider k;
        memset(&k, 0, sizeof k);
        k.C = C;
        k.S = S;
        k.defs = tk_alloc(&C->arena, sizeof(int) * (size_t)(S->nlocals + 1));
        memset(k.defs, 0, sizeof(int) * (size_t)(S->nlocals + 1));
        k.env = tk_alloc(&C->arena, sizeof(tk_ir *) * (size_t)(S->nlocals + 1));
        memset(k.env, 0, sizeof(tk_ir *) * (size_t)(S->nlocals + 1));
        k.log = tk_alloc(&C->arena, sizeof(int) * (size_t)(S->nlocals + 1));
        k.thread = -1;
        k.rdef = tk_alloc(&C->arena, sizeof(tk_ir *) * (size_t)(S->nlocals + 1));
        memset(k.rdef, 0, sizeof(tk_ir *) * (size_t)(S->nlocals + 1));
        count_defs(&k, S->body);
        ks(&k, S->body);
    }
    if (C->opts.checks) tk_hoist_invariant_checks(C, CK_INDEX);
    if (C->opts.checks) tk_hoist_invariant_checks(C, CK_INTFIT);
}
