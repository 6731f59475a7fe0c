/*
 * lower_loop.c -- lowering of loops: `for` over range() or tack.ndrange(), and `while`.
 *
 * Part of lowering (lower.c has the essay).  A `for` is either parallel or
 * serial, and lower_for decides which before anything is built: the loops at
 * the top level of a kernel body are parallel (IR_PFOR, one iteration per
 * index, run by the backend's threads or GPU blocks); every other loop -- in
 * a @tack.func, nested in a parallel loop or in another statement -- is a
 * serial IR_FOR.  prescan (lower.c) made the same decision when it gave each
 * parallel loop a scope of its own, so the two must agree: both ask
 * is_range_call, and both count parallel loops in source order (L->npfor).
 *
 * A loop is built in steps, each a function here:
 *
 *   range_bounds   lo, hi, step of range(...) as i64 values, each kept in a
 *                  temporary before the loop unless it cannot change, so the
 *                  body cannot move the bounds (Python evaluates them once);
 *   range_pfor     a parallel range loop: the iteration count (hi itself for
 *                  range(n), else a trip count), then the loop variable --
 *                  the loop's own index when it counts by one in weak i64,
 *                  else an index k with the variable assigned lo + k * step
 *                  at the top of the body;
 *   range_serial   a serial range loop, an IR_FOR over lo, hi, step;
 *   ndrange_axes   the axes of tack.ndrange(...), one per loop variable, each
 *                  read as range() reads its arguments: a size n, a tuple
 *                  (start, stop[, step]) or a range(...); or one shape
 *                  (a.shape, or a single tuple of sizes) for all of them;
 *   ndrange_pfor   one parallel loop over all the axes, each run from 0
 *                  over its trip count: an axis that starts elsewhere or
 *                  steps by more than one sets its variable to lo + k * step
 *                  at the top of the body (and, stepping by one, tells
 *                  checks.c the variable's range through the loop's bnd), so
 *                  the backends' grid layouts only ever see extents from 0;
 *   ndrange_serial nested serial loops over the axes' bounds, the first axis
 *                  outermost.
 *
 * The loop variable's type is inferred like any local's (assign_local), with
 * one rule of its own: a variable that is nothing but the index of a loop
 * over weak integer bounds (stepping by one, for a parallel range loop) and
 * that the body never assigns is the loop's own counter, a weak i64; any
 * other is assigned, at the top of the body, from an i64 counter the loop
 * runs.  A parallel loop's body may not assign its variables at all
 * (refuse_assigned_pfor_vars: a CompileError).
 *
 * Bodies are lowered one statement deeper (L->depth: a loop inside is not
 * parallel); serial bodies one loop deeper too (L->loops: break and continue
 * are legal).  A `while` whose condition needs statements (a checked load,
 * a function call) becomes `while True: <statements>; if not c: break; ...`.
 */
#include <string.h>

#include "compiler/lower/lower.h"

typedef struct rng { tk_ir *lo, *hi, *step; tk_type ty; } rng;

/* lo, hi, step of the arguments args[0..na) as range() reads them, as i64
 * values, and in ty the type the loop variable takes: the promotion of the
 * arguments (unknown while one is).  `what` names the call in messages. */
static rng lower_bounds(lw_state *L, tack_node *at, tack_node **args, int na, const char *what) {
    rng r;
    tk_ir *a[3];
    if (na < 1 || na > 3) ERR(at, "%s expected 1 to 3 arguments, got %d", what, na);
    tk_type t = ty_weak(TACK_I64);
    int unk = 0;
    for (int i = 0; i < na; i++) {
        a[i] = lw_expr(L, args[i]);
        if (!lw_known(a[i])) { unk = 1; continue; }
        if (!ty_is_int(a[i]->ty) && !ty_is_bool(a[i]->ty))
            ERR(args[i], "%s arguments must be integers, not %s", what, TN(a[i]->ty));
        t = ty_promote(t, a[i]->ty);
    }
    if (ty_is_bool(t)) t = ty_weak(TACK_I64);
    r.ty = unk ? ty_unknown() : t;
    tk_type i64 = ty_value(TACK_I64);
    if (na == 1) {
        r.lo = ir_const_i(L->C, i64, 0, at->line);
        r.hi = lw_cast(L, a[0], i64);
        r.step = ir_const_i(L->C, i64, 1, at->line);
    } else {
        r.lo = lw_cast(L, a[0], i64);
        r.hi = lw_cast(L, a[1], i64);
        r.step = na == 3 ? lw_cast(L, a[2], i64) : ir_const_i(L->C, i64, 1, at->line);
    }
    if (r.step->op == IR_CONST && r.step->c.i == 0) ERR(at, "range() arg 3 must not be zero");
    return r;
}

/* Keep a loop bound in a temporary unless it cannot change (constants, shapes). */
static tk_ir *bound(lw_state *L, tk_ir *e) {
    if (!lw_known(e) || e->op == IR_CONST || e->op == IR_SHAPE) return e;
    if (e->op == IR_CAST && e->k[0]->op == IR_CONST && ty_is_int(e->k[0]->ty) && ty_is_int(e->ty) &&
        dt_bits((tack_dtype)e->ty.dt) == 64 && (e->k[0]->ty.dt != TACK_U64 || e->k[0]->c.i >= 0))
        return ir_const_i(L->C, e->ty, e->k[0]->c.i, e->line);
    if (e->op == IR_CAST && e->k[0]->op == IR_SHAPE) return e;
    int t = lw_temp(L, e->ty);
    lw_emit(L, lw_assign_ir(L, t, e, e->line));
    return lw_local_ref(L, t, e->line);
}

int lw_is_range_call(tack_node *it, const char *name) {
    return it && it->kind == TACK_N_CALL && it->ival < 0 && it->name && !strcmp(it->name, name);
}

/* The bounds of args[0..na) read as range() reads them, each kept in a
 * temporary unless it cannot change; a step that may be zero is checked
 * when the loop is reached (Python's ValueError, checks or not: a zero step
 * never ends). */
static rng axis_bounds(lw_state *L, tack_node *at, tack_node **args, int na, const char *what) {
    rng r = lower_bounds(L, at, args, na, what);
    r.lo = bound(L, r.lo);
    r.hi = bound(L, r.hi);
    r.step = bound(L, r.step);
    if (r.step->op == IR_CONST && r.step->c.i == 0) ERR(at, "range() arg 3 must not be zero");
    if (lw_known(r.step) && r.step->op != IR_CONST) {
        int site = lw_site(L, CK_STEP, at->line, 0, NULL, "range() arg 3 must not be zero");
        lw_check(L, CK_STEP, site, r.step, NULL, at->line);
    }
    return r;
}

/* The bounds of range(...). */
static rng range_bounds(lw_state *L, tack_node *it) {
    return axis_bounds(L, it, it->kids, it->nkids, "range()");
}

/* A serial loop's body, lowered one loop and one statement deeper into b. */
static void loop_body(lw_state *L, tack_node *body, tk_ir *b) {
    L->loops++;
    L->depth++;
    lw_block_into(L, body, b);
    L->depth--;
    L->loops--;
}

/* A loop's body may run no times: after the loop, what was assigned before it (unbound.c). */
static void loop_body_da(lw_state *L, tack_node *body, tk_ir *b, int var) {
    unsigned char *before = lw_da_save(L);
    lw_da_set(L, var);
    loop_body(L, body, b);
    lw_da_restore(L, before);
}

/* An empty parallel loop over `dims` axes; the caller pushes the extents. */
static tk_ir *pfor_new(lw_state *L, tack_node *n, int dims) {
    tk_ir *pf = lw_mk(L, IR_PFOR, ty_void(), n);
    pf->aux = dims;
    pf->sub = (uint8_t)L->independent; /* 1: tack.independent(...), no race check */
    pf->vars = tk_alloc(&L->C->arena, sizeof(int) * TACK_MAX_NDIM); /* one per axis */
    return pf;
}

/* Whether statement or expression x assigns the name (a target of =, op=, a
 * for loop or a tuple). */
static int assigns_name(const tack_node *x, const char *name);
static int target_names(const tack_node *t, const char *name) {
    if (!t) return 0;
    if (t->kind == TACK_N_NAME) return t->name && !strcmp(t->name, name);
    if (t->kind == TACK_N_TUPLE)
        for (int i = 0; i < t->nkids; i++)
            if (target_names(t->kids[i], name)) return 1;
    return 0;
}
static int assigns_name(const tack_node *x, const char *name) {
    if (!x) return 0;
    if ((x->kind == TACK_N_ASSIGN || x->kind == TACK_N_ANNASSIGN || x->kind == TACK_N_AUGASSIGN ||
         x->kind == TACK_N_FOR) && x->nkids > 0 && target_names(x->kids[0], name))
        return 1;
    for (int i = 0; i < x->nkids; i++)
        if (assigns_name(x->kids[i], name)) return 1;
    return 0;
}

/* The target node in x that assigns the name (the name node itself, for the
 * message's column), or NULL. */
static const tack_node *assigning_target(const tack_node *x, const char *name) {
    if (!x) return NULL;
    if ((x->kind == TACK_N_ASSIGN || x->kind == TACK_N_ANNASSIGN || x->kind == TACK_N_AUGASSIGN ||
         x->kind == TACK_N_FOR) && x->nkids > 0 && target_names(x->kids[0], name))
        return x->kids[0];
    for (int i = 0; i < x->nkids; i++) {
        const tack_node *t = assigning_target(x->kids[i], name);
        if (t) return t;
    }
    return NULL;
}

/* A parallel loop's variables belong to the loop: each iteration gets its own
 * value from it.  Assigning one in the body would change which element the
 * iteration touches without the race check knowing (`i = i % 3; a[i] += 1`
 * loses updates), so it is refused; a local of another name says the same. */
void lw_refuse_assigned_pfor_vars(lw_state *L, tack_node *t, tack_node *body) {
    int n = t->kind == TACK_N_TUPLE ? t->nkids : 1;
    for (int d = 0; d < n; d++) {
        tack_node *v = t->kind == TACK_N_TUPLE ? t->kids[d] : t;
        if (v->kind != TACK_N_NAME || !v->name) continue;
        const tack_node *a = assigning_target(body, v->name);
        if (a)
            ERR(a, "the variable '%s' of the parallel loop (line %d) is assigned in its body: each iteration "
                   "takes its '%s' from the loop, and changing it would make iterations touch elements the "
                   "race check does not see; give the new value a name of its own (k = %s %% 3; a[k] ...)",
                v->name, t->line, v->name, v->name);
    }
}

/* Note the loop's own variables, those of target t (a name or a tuple of
 * names), for augassign_element: an element indexed by one of them is the
 * iteration's own -- unless the body assigns the variable. */
static void note_pfor_vars(lw_state *L, tack_node *t, tack_node *body) {
    L->npfor_vars = 0;
    int n = t->kind == TACK_N_TUPLE ? t->nkids : 1;
    for (int d = 0; d < n && d < TACK_MAX_NDIM; d++) {
        tack_node *v = t->kind == TACK_N_TUPLE ? t->kids[d] : t;
        int loc = v->kind == TACK_N_NAME ? lw_lookup(L, v->name) : -1;
        L->pfor_vars[L->npfor_vars++] = loc >= 0 && !assigns_name(body, v->name) ? loc : -1;
    }
}

/* A parallel loop's body, lowered one loop deeper into `b`; then the loop is emitted. */
static void pfor_body(lw_state *L, tk_ir *pf, tack_node *n, tk_ir *b, int saved_pfor) {
    tack_node *body = n->kids[2];
    int sd = L->depth;
    L->depth++;
    L->pfor_one = ir_pfor_one(pf); /* its extents are pushed: range(1) is serial work */
    lw_refuse_assigned_pfor_vars(L, n->kids[0], body);
    note_pfor_vars(L, n->kids[0], body);
    unsigned char *before = lw_da_save(L);
    for (int d = 0; d < pf->aux; d++) lw_da_set(L, pf->vars[d]);
    lw_block_into(L, body, b);
    lw_da_restore(L, before);
    L->npfor_vars = 0;
    L->pfor_one = 0;
    L->depth = sd;
    L->pfor = saved_pfor;
    ir_push(L->C, pf, b);
    lw_emit(L, pf);
}

/* ------------------------------------------------------------ range */
/* The number of iterations of a parallel range loop: hi for range(hi), else
 * the trip count of lo, hi, step (kept in a temporary of the enclosing scope). */
static tk_ir *trip_count(lw_state *L, tack_node *n, rng r, int simple) {
    if (simple) return r.hi;
    tk_ir *tr = lw_mk(L, IR_MATH, ty_value(TACK_I64), n);
    tr->sub = M_TRIP;
    tr->aux_ty = ty_value(TACK_I64);
    ir_push(L->C, tr, r.lo);
    ir_push(L->C, tr, r.hi);
    ir_push(L->C, tr, r.step);
    return bound(L, tr);
}

/* The variable of a parallel range loop, in the loop's scope.  Counting by
 * one in weak i64, it is the loop's index (offset by lo unless lo is 0: the
 * emitter adds pf->off, and checks.c bounds it by pf->hi); otherwise the loop
 * runs an index k and the body starts by assigning lo + k * step to it. */
static void range_pfor_var(lw_state *L, tk_ir *pf, tack_node *n, rng r, tk_ir *b, int unit, int simple) {
    tack_node *t = n->kids[0];
    int loc = lw_target_local(L, t);
    tk_local *l = &L->S->locals[loc];
    int rweak = r.ty.kind == TY_UNKNOWN || ty_eq(r.ty, ty_weak(TACK_I64));
    int lweak = l->ty.kind == TY_UNKNOWN || ty_eq(l->ty, ty_weak(TACK_I64));
    if (unit && rweak && lweak) {
        if (r.ty.kind != TY_UNKNOWN && l->ty.kind == TY_UNKNOWN) {
            l->ty = r.ty;
            L->changed = 1;
        }
        pf->vars[0] = loc;
        if (!simple) {
            pf->off = r.lo;
            pf->hi = r.hi;
        }
        return;
    }
    int k = lw_temp(L, ty_value(TACK_I64));
    pf->vars[0] = k;
    tk_ir *saved = L->blk;
    L->blk = b;
    tk_ir *v = lw_local_ref(L, k, n->line);
    if (!simple)
        v = lw_bin(L, B_ADD, ty_value(TACK_I64), r.lo, lw_bin(L, B_MUL, ty_value(TACK_I64), v, r.step, n->line), n->line);
    if (r.ty.kind != TY_UNKNOWN) lw_assign_local(L, loc, lw_cast(L, v, r.ty), t);
    L->blk = saved;
}

/* for t in range(...) at the top of a kernel: one parallel loop. */
static void range_pfor(lw_state *L, tack_node *n, rng r) {
    tack_node *body = n->kids[2];
    int id = L->npfor++;
    tk_ir *pf = pfor_new(L, n, 1);
    int unit = r.step->op == IR_CONST && r.step->c.i == 1;
    int simple = unit && r.lo->op == IR_CONST && r.lo->c.i == 0;
    ir_push(L->C, pf, trip_count(L, n, r, simple));
    int saved_pfor = L->pfor;
    L->pfor = id;
    tk_ir *b = lw_mk(L, IR_BLOCK, ty_void(), body);
    range_pfor_var(L, pf, n, r, b, unit, simple);
    pfor_body(L, pf, n, b, saved_pfor);
}

/* for t in range(...) anywhere else: a serial loop.  The variable is the
 * loop's counter when it is a weak i64 the body never assigns; otherwise the
 * loop runs an i64 counter k and the body starts by assigning it, converted,
 * to t -- so an assignment in the body lasts to the end of its iteration and
 * the next takes the next value, as in Python. */
static void range_serial(lw_state *L, tack_node *n, rng r) {
    tack_node *t = n->kids[0], *body = n->kids[2];
    unsigned char *before = lw_da_save(L); /* the variable's assignment below is the body's */
    int loc = lw_target_local(L, t);
    tk_local *l = &L->S->locals[loc];
    tk_ir *f = lw_mk(L, IR_FOR, ty_void(), n);
    tk_ir *b = lw_mk(L, IR_BLOCK, ty_void(), body);
    int own = t->kind == TACK_N_NAME && t->name && !assigns_name(body, t->name);
    if (own && r.ty.kind != TY_UNKNOWN && (l->ty.kind == TY_UNKNOWN || ty_eq(l->ty, r.ty)) &&
        ty_eq(r.ty, ty_weak(TACK_I64))) {
        if (!ty_eq(l->ty, r.ty)) { l->ty = r.ty; L->changed = 1; }
        f->local = loc;
    } else {
        int k = lw_temp(L, ty_value(TACK_I64));
        f->local = k;
        tk_ir *saved = L->blk;
        L->blk = b;
        tk_ir *kv = lw_local_ref(L, k, n->line);
        if (r.ty.kind != TY_UNKNOWN) lw_assign_local(L, loc, lw_cast(L, kv, r.ty), t);
        L->blk = saved;
    }
    ir_push(L->C, f, r.lo);
    ir_push(L->C, f, r.hi);
    ir_push(L->C, f, r.step);
    loop_body_da(L, body, b, f->local);
    lw_da_restore(L, before);
    ir_push(L->C, f, b);
    lw_emit(L, f);
}

/* ---------------------------------------------------------- ndrange */
/* The array parameter whose shape node `x` is (a.shape), or -1. */
int lw_shape_param(lw_state *L, tack_node *x) {
    if (!x || x->kind != TACK_N_ATTRIBUTE || !x->name || strcmp(x->name, "shape") != 0 || x->nkids != 1 ||
        x->kids[0]->kind != TACK_N_NAME)
        return -1;
    return lw_array_param(L, x->kids[0]->name);
}

/* Extent d of array parameter p, a weak i64. */
tk_ir *lw_shape_of(lw_state *L, int p, int d, tack_node *n) {
    tk_ir *s = lw_mk(L, IR_SHAPE, ty_weak(TACK_I64), n);
    s->param = p;
    s->aux = d;
    return s;
}

/* An axis of size e: 0, e, 1. */
static rng size_axis(lw_state *L, tack_node *at, tk_ir *e) {
    rng r;
    tk_type i64 = ty_value(TACK_I64);
    r.lo = ir_const_i(L->C, i64, 0, at->line);
    r.hi = bound(L, lw_cast(L, e, i64));
    r.step = ir_const_i(L->C, i64, 1, at->line);
    r.ty = ty_weak(TACK_I64);
    return r;
}

/* The axes of tack.ndrange(...) into ax, as range() bounds; returns how
 * many.  Each argument is a size n, a tuple (start, stop[, step]) or a
 * range(start, stop[, step]); a single argument may instead be a whole
 * shape: a.shape, or one tuple of sizes (ndrange((n, m)) is ndrange(n, m),
 * as it is in Python). */
static int ndrange_axes(lw_state *L, tack_node *t, tack_node *it, rng *ax) {
    tack_node **args = it->kids;
    int dims = it->nkids, shape = 0;
    if (dims == 1) {
        int p = lw_shape_param(L, args[0]);
        if (p >= 0) {
            dims = L->S->ptypes[p].ndim;
            if (dims < 1) ERR(args[0], "ndrange() of the shape of a 0-D array has no axes");
            shape = 2;
        } else if (args[0]->kind == TACK_N_TUPLE) {
            args = args[0]->kids;
            dims = it->kids[0]->nkids;
            shape = 1;
        }
    }
    for (int d = 0; !shape && d < dims; d++)
        if (lw_shape_param(L, args[d]) >= 0)
            ERR(args[d], "a shape must be ndrange()'s only argument: ndrange(a.shape) or ndrange(*a.shape)");
    if (dims < 1 || dims > TACK_MAX_NDIM) ERR(it, "ndrange() takes 1 to %d axes, got %d", TACK_MAX_NDIM, dims);
    int nt = t->kind == TACK_N_TUPLE ? t->nkids : 1;
    if (nt != dims) {
        if (shape == 1)
            ERR(t, "ndrange() of one tuple of %d sizes needs %d loop variables (one tuple is a shape, as in "
                   "ndrange(a.shape); for one axis from start to stop write range(start, stop))", dims, dims);
        ERR(t, "ndrange() with %d axes needs %d loop variables, got %d", dims, dims, nt);
    }
    for (int d = 0; d < dims; d++) {
        if (shape == 2) {
            ax[d] = size_axis(L, it, lw_shape_of(L, lw_shape_param(L, it->kids[0]), d, it));
            continue;
        }
        tack_node *a = args[d];
        if (!shape && a->kind == TACK_N_TUPLE) {
            if (a->nkids < 2 || a->nkids > 3)
                ERR(a, "an ndrange() axis given as a tuple is (start, stop) or (start, stop, step), not %d "
                       "values", a->nkids);
            ax[d] = axis_bounds(L, a, a->kids, a->nkids, "ndrange() bounds");
            ax[d].ty = ty_weak(TACK_I64);
            continue;
        }
        if (lw_is_range_call(a, "range")) {
            ax[d] = axis_bounds(L, a, a->kids, a->nkids, "range()");
            ax[d].ty = ty_weak(TACK_I64);
            continue;
        }
        if (a->kind == TACK_N_TUPLE)
            ERR(a, "a shape given as one tuple holds sizes, not tuples; write each axis as its own "
                   "argument: ndrange((start, stop), (start, stop))");
        if (a->kind == TACK_N_NAME && lw_array_param(L, a->name) >= 0)
            ERR(a, "ndrange() takes sizes, not an array: write ndrange(%s.shape)", a->name);
        tk_ir *e = lw_expr(L, a);
        if (lw_known(e) && !ty_is_int(e->ty) && !ty_is_bool(e->ty))
            ERR(a, "ndrange() arguments are sizes (n), bounds ((start, stop[, step]) or range(...)) or one "
                   "shape (a.shape); a size must be an integer, not %s", TN(e->ty));
        ax[d] = size_axis(L, a, e);
    }
    return dims;
}

/* The loop variable of axis d (the target itself for a 1-D ndrange). */
static tack_node *ndrange_var(lw_state *L, tack_node *t, int dims, int d) {
    tack_node *v = dims == 1 ? t : t->kids[d];
    if (v->kind != TACK_N_NAME) ERR(v, "loop variables must be names");
    return v;
}

static int axis_is_plain(rng r) {
    return r.lo->op == IR_CONST && r.lo->c.i == 0 && r.step->op == IR_CONST && r.step->c.i == 1;
}

/* The local of loop variable v, made a weak i64 (every ndrange variable is). */
static int ndrange_local(lw_state *L, tack_node *v) {
    int loc = lw_target_local(L, v);
    tk_local *l = &L->S->locals[loc];
    if (!ty_eq(l->ty, ty_weak(TACK_I64))) {
        if (l->ty.kind != TY_UNKNOWN) ERR(v, "loop variable '%s' is also assigned a %s", l->name, TN(l->ty));
        l->ty = ty_weak(TACK_I64);
        L->changed = 1;
    }
    return loc;
}

/* for i, j in ndrange(...) at the top of a kernel: one parallel loop over
 * all the axes, each variable a weak i64 of the loop's scope.  An axis from
 * 0 by 1 is the loop's own index; a 1-D axis by 1 from elsewhere is the
 * index offset by its start (pf->off, as range(lo, hi) does); any other
 * axis runs an index k over its trip count and the body starts by
 * assigning lo + k * step to the variable, so the grid layouts see only
 * extents from 0. */
static void ndrange_pfor(lw_state *L, tack_node *n, rng *ax, int dims) {
    tack_node *t = n->kids[0], *body = n->kids[2];
    int id = L->npfor++;
    tk_ir *pf = pfor_new(L, n, dims);
    int offset = dims == 1 && !axis_is_plain(ax[0]) && ax[0].step->op == IR_CONST && ax[0].step->c.i == 1;
    for (int d = 0; d < dims; d++) ir_push(L->C, pf, trip_count(L, n, ax[d], axis_is_plain(ax[d])));
    int saved_pfor = L->pfor;
    L->pfor = id;
    tk_ir *b = lw_mk(L, IR_BLOCK, ty_void(), body);
    for (int d = 0; d < dims; d++) {
        tack_node *v = ndrange_var(L, t, dims, d);
        int loc = ndrange_local(L, v);
        if (axis_is_plain(ax[d])) {
            pf->vars[d] = loc;
        } else if (offset) {
            pf->vars[d] = loc;
            pf->off = ax[d].lo;
            pf->hi = ax[d].hi;
        } else {
            int k = lw_temp(L, ty_value(TACK_I64));
            pf->vars[d] = k;
            tk_ir *saved = L->blk;
            L->blk = b;
            tk_type i64 = ty_value(TACK_I64);
            tk_ir *kv = lw_local_ref(L, k, n->line);
            tk_ir *x = lw_bin(L, B_ADD, i64, ax[d].lo, lw_bin(L, B_MUL, i64, kv, ax[d].step, n->line), n->line);
            lw_assign_local(L, loc, lw_cast(L, x, ty_weak(TACK_I64)), v);
            L->blk = saved;
            if (ax[d].step->op == IR_CONST && ax[d].step->c.i == 1) { /* v in [lo, hi): for checks.c */
                if (!pf->bnd) pf->bnd = lw_mk(L, IR_BLOCK, ty_void(), n);
                ir_push(L->C, pf->bnd, lw_local_ref(L, loc, n->line));
                ir_push(L->C, pf->bnd, ax[d].lo);
                ir_push(L->C, pf->bnd, ax[d].hi);
            }
        }
    }
    pfor_body(L, pf, n, b, saved_pfor);
}

/* for i, j in ndrange(...) anywhere else: nested serial loops over each
 * axis's bounds, the first axis outermost, the body in the innermost. */
static void ndrange_serial(lw_state *L, tack_node *n, rng *ax, int dims) {
    tack_node *t = n->kids[0], *body = n->kids[2];
    tk_ir *outer = NULL, *inner_blk = NULL;
    unsigned char *before = lw_da_save(L); /* the variables' assignments below are the body's */
    int assigned = 0, loc[TACK_MAX_NDIM], cnt[TACK_MAX_NDIM];
    for (int d = 0; d < dims; d++) assigned |= assigns_name(body, ndrange_var(L, t, dims, d)->name);
    for (int d = 0; d < dims; d++) {
        tack_node *v = ndrange_var(L, t, dims, d);
        loc[d] = lw_target_local(L, v);
        tk_local *l = &L->S->locals[loc[d]];
        if (l->ty.kind == TY_UNKNOWN) { l->ty = ty_weak(TACK_I64); L->changed = 1; }
        tk_ir *f = lw_mk(L, IR_FOR, ty_void(), n);
        /* a body that assigns a variable runs the loops on counters of their own, and
         * every iteration of the innermost starts by setting all the variables, as
         * Python's one loop over tuples does */
        f->local = assigned ? (cnt[d] = lw_temp(L, ty_value(TACK_I64))) : loc[d];
        ir_push(L->C, f, ax[d].lo);
        ir_push(L->C, f, ax[d].hi);
        ir_push(L->C, f, ax[d].step);
        tk_ir *b = lw_mk(L, IR_BLOCK, ty_void(), body);
        ir_push(L->C, f, b);
        if (!outer) lw_emit(L, f);
        else ir_push(L->C, inner_blk, f);
        outer = f;
        inner_blk = b;
    }
    if (assigned) {
        tk_ir *saved = L->blk;
        L->blk = inner_blk;
        for (int d = 0; d < dims; d++)
            lw_assign_local(L, loc[d], lw_cast(L, lw_local_ref(L, cnt[d], n->line), ty_weak(TACK_I64)),
                            ndrange_var(L, t, dims, d));
        L->blk = saved;
    }
    for (int d = 0; d < dims && !assigned; d++) lw_da_set(L, loc[d]);
    loop_body_da(L, body, inner_blk, -1);
    lw_da_restore(L, before);
}

/* -------------------------------------------------------------- for */
void lw_for(lw_state *L, tack_node *n) {
    if (n->nkids != 3) ERR(n, "malformed for loop");
    tack_node *t = n->kids[0], *it = n->kids[1];
    int parallel = L->is_kernel && L->depth == 0 && L->pfor < 0;
    int indep = lw_is_range_call(it, "independent"); /* the race check's opt-out (depend.c) */
    if (indep) {
        if (it->nkids != 1 || !(lw_is_range_call(it->kids[0], "range") || lw_is_range_call(it->kids[0], "ndrange")))
            ERR(it, "tack.independent() takes one range(...) or tack.ndrange(...)");
        if (!parallel)
            ERR(it, "tack.independent() marks a parallel loop (a for loop at the top level of a kernel); "
                    "this loop is serial, so it has no iterations running at once to mark");
        it = it->kids[0];
    }
    if (lw_is_range_call(it, "blocks")) {
        if (indep) ERR(it, "tack.independent() takes one range(...) or tack.ndrange(...)");
        lw_blocks_pfor(L, n, it, parallel);
        return;
    }
    int nd = lw_is_range_call(it, "ndrange");
    if (!nd && !lw_is_range_call(it, "range"))
        ERR(it, "for loops must iterate over range(...), tack.ndrange(...) or tack.blocks(...)");
    L->independent = indep;
    if (nd) {
        rng ax[TACK_MAX_NDIM];
        int dims = ndrange_axes(L, t, it, ax);
        if (parallel) ndrange_pfor(L, n, ax, dims);
        else ndrange_serial(L, n, ax, dims);
        return;
    }
    if (t->kind != TACK_N_NAME) ERR(t, "the target of a range() loop must be a name");
    rng r = range_bounds(L, it);
    if (parallel) range_pfor(L, n, r);
    else range_serial(L, n, r);
}

/* ------------------------------------------------------------ while */
void lw_while(lw_state *L, tack_node *n) {
    if (n->nkids < 2) ERR(n, "malformed while");
    tk_ir *w = lw_mk(L, IR_WHILE, ty_void(), n);
    tk_ir *body = lw_mk(L, IR_BLOCK, ty_void(), n);
    tk_ir *c = lw_truth(L, lw_in(L, body, n->kids[0]), n);
    if (body->n == 0) {
        ir_push(L->C, w, c);
    } else { /* while True: pre; if not c: break; body */
        ir_push(L->C, w, ir_const_i(L->C, ty_value(TACK_BOOL), 1, n->line));
        tk_ir *u = lw_mk(L, IR_UN, ty_value(TACK_BOOL), n);
        u->sub = U_NOT;
        tk_ir *iff = lw_mk(L, IR_IF, ty_void(), n);
        ir_push(L->C, iff, lw_kid(L, u, c));
        tk_ir *brk = lw_mk(L, IR_BLOCK, ty_void(), n);
        ir_push(L->C, brk, lw_mk(L, IR_BREAK, ty_void(), n));
        ir_push(L->C, iff, brk);
        ir_push(L->C, iff, lw_mk(L, IR_BLOCK, ty_void(), n));
        ir_push(L->C, body, iff);
    }
    loop_body_da(L, n->kids[1], body, -1);
    ir_push(L->C, w, body);
    lw_emit(L, w);
}
