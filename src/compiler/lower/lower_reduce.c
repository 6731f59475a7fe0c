/*
 * lower_reduce.c -- the running maximum and minimum, written as Python
 * writes them, become atomic reductions.
 *
 * Part of lowering (lower.c has the essay).  A Numba or NumPy user keeps a
 * running extreme with
 *
 *     if x[i] > out[0]:
 *         out[0] = x[i]
 *
 * In a parallel loop that is a certain race: every iteration reads out[0],
 * and those that pass the test write it, so an iteration can overwrite a
 * larger value another has just stored (run it ten times and one or two
 * answers are wrong).  The statement means "out[0] = max(out[0], x[i])", and
 * that is exactly what tack.atomic_max(out, 0, x[i]) does in any order of the
 * iterations: its compare-and-swap stores v only while v > the cell, the
 * same test, so every serial order and every interleaving end with the same
 * value.  This file recognizes the form and lowers it to that atomic:
 *
 *   if V > A[idx]: A[idx] = V       (or A[idx] < V)      -> atomic_max
 *   if V < A[idx]: A[idx] = V       (or A[idx] > V)      -> atomic_min
 *
 * with no else, one statement in the body, V the same expression in the
 * test and the store, and A an array parameter written inside a parallel
 * loop.  V and idx may not call a @tack.func or an intrinsic with an effect
 * (an atomic, a random draw): the test and the store each evaluate them, and
 * the atomic evaluates them once.  >= and <= are the same for integers; for
 * floats they are not (`-0.0 >= 0.0` stores -0.0, the atomic keeps 0.0), so
 * for floats only the strict forms are taken.  The value must reach the
 * element's type without changing its order: the same type, a Python number,
 * or a narrower float (rounding to nearest is monotonic); otherwise the
 * program is refused with the explicit call to write (an int64 stored into
 * int8 wraps, and a wrapped maximum is not the maximum).
 *
 * An index that names the loop's own variable (`out[i]`) is left alone: no
 * other iteration touches that element, and nothing races.  Every other form
 * of a conditional store to a cell the condition reads is the race check's
 * (depend_judge.c): a CompileError that names this fix.
 */
#include <string.h>

#include "compiler/lower/lower.h"

static int same_node(const tack_node *a, const tack_node *b) {
    if (a == b) return 1;
    if (!a || !b || a->kind != b->kind || a->op != b->op || a->nkids != b->nkids || a->nops != b->nops ||
        a->ival != b->ival || a->is_uint != b->is_uint)
        return 0;
    if (a->kind == TACK_N_CONST_FLOAT && memcmp(&a->fval, &b->fval, sizeof a->fval) != 0) return 0;
    if ((a->name == NULL) != (b->name == NULL) || (a->name && strcmp(a->name, b->name) != 0)) return 0;
    for (int i = 0; i < a->nops; i++)
        if (a->ops[i] != b->ops[i]) return 0;
    for (int i = 0; i < a->nkids; i++)
        if (!same_node(a->kids[i], b->kids[i])) return 0;
    return 1;
}

/* Whether evaluating x twice is evaluating it once: no @tack.func call and no
 * intrinsic but pure math, casts, abs, min and max. */
static int pure(const tack_node *x) {
    if (!x) return 1;
    if (x->kind == TACK_N_CALL) {
        if (x->ival >= 0 || !x->name) return 0;
        const char *nm = !strncmp(x->name, "numpy.", 6) ? x->name + 6 : x->name;
        const tk_intrinsic *in = tk_intrinsic_find(nm);
        if (!in || (in->kind != TK_IK_MATH && in->kind != TK_IK_CAST && in->kind != TK_IK_ABS &&
                    in->kind != TK_IK_MINMAX))
            return 0;
    }
    for (int i = 0; i < x->nkids; i++)
        if (!pure(x->kids[i])) return 0;
    return 1;
}

/* Whether x names one of the parallel loop's own variables. */
static int names_loop_var(lw_state *L, const tack_node *x) {
    if (!x) return 0;
    if (x->kind == TACK_N_NAME && x->name) {
        int loc = lw_lookup(L, x->name);
        for (int d = 0; d < L->npfor_vars; d++)
            if (loc >= 0 && L->pfor_vars[d] == loc) return 1;
    }
    for (int i = 0; i < x->nkids; i++)
        if (names_loop_var(L, x->kids[i])) return 1;
    return 0;
}

int lw_running_extreme(lw_state *L, tack_node *n) {
    if (!L->is_kernel || L->pfor < 0 || n->nkids < 2) return 0;
    if (n->nkids > 2 && n->kids[2] && n->kids[2]->nkids > 0) return 0; /* an else */
    tack_node *test = n->kids[0], *body = n->kids[1];
    if (!test || test->kind != TACK_N_COMPARE || test->nkids != 2 || test->nops != 1) return 0;
    if (!body || body->kind != TACK_N_BLOCK || body->nkids != 1) return 0;
    tack_node *st = body->kids[0];
    if (st->kind != TACK_N_ASSIGN || st->nkids != 2) return 0;
    tack_node *tgt = st->kids[0], *v = st->kids[1];
    if (tgt->kind != TACK_N_SUBSCRIPT || tgt->nkids < 2 || tgt->kids[0]->kind != TACK_N_NAME) return 0;
    int p = lw_array_param(L, tgt->kids[0]->name);
    if (p < 0) return 0;
    tack_op op = test->ops[0];
    int max;
    if (same_node(test->kids[0], v) && same_node(test->kids[1], tgt)) /* V op A[idx] */
        max = op == TACK_OP_GT || op == TACK_OP_GE;
    else if (same_node(test->kids[1], v) && same_node(test->kids[0], tgt)) /* A[idx] op V */
        max = op == TACK_OP_LT || op == TACK_OP_LE;
    else
        return 0;
    if (op != TACK_OP_GT && op != TACK_OP_GE && op != TACK_OP_LT && op != TACK_OP_LE) return 0;
    for (int i = 1; i < tgt->nkids; i++)
        if (names_loop_var(L, tgt->kids[i])) return 0; /* the iteration's own element: no race */
    if (!pure(v) || !pure(tgt)) return 0;
    tk_type et = L->S->ptypes[p];
    int efloat = dt_kind((tack_dtype)et.dt) == TACK_KIND_FLOAT;
    int eint = dt_kind((tack_dtype)et.dt) == TACK_KIND_INT || dt_kind((tack_dtype)et.dt) == TACK_KIND_UINT;
    if (!efloat && !eint) return 0; /* bool, complex, vectors: the ordinary lowering says what it says */
    const char *fn = max ? "atomic_max" : "atomic_min";
    const char *arr = tgt->kids[0]->name;
    if (efloat && (op == TACK_OP_GE || op == TACK_OP_LE))
        ERR(test, "race: every iteration of the parallel loop reads %s[...] and those that pass this test write it, "
                  "so a store can overwrite another iteration's; for a running %s write tack.%s(%s, index, value) "
                  "(with >= / <= on floats the two differ only for -0.0 and 0.0, so Tack does not rewrite it for you)",
            arr, max ? "maximum" : "minimum", fn, arr);
    tk_ir *val = lw_expr(L, v);
    if (!lw_known(val)) return 1; /* inference round: the types come later */
    int vfloat = ty_is_float(val->ty), vint = ty_is_int(val->ty) || ty_is_bool(val->ty);
    int ok = val->ty.weak ? (vint || efloat)
             : efloat ? vfloat || vint /* rounding to nearest keeps the order (ties stay ties) */
                      : vint && ty_eq(ty_promote(val->ty, ty_value((tack_dtype)et.dt)), ty_value((tack_dtype)et.dt));
    if (!ok || !ty_is_scalar(val->ty))
        ERR(v, "race: every iteration of the parallel loop reads %s[...] and those that pass this test write it; "
               "a running %s is tack.%s(%s, index, value), but %s stored into %s elements may change its order, "
               "so write the call yourself with the value you mean",
            arr, max ? "maximum" : "minimum", fn, arr, TN(val->ty), dt_name((tack_dtype)et.dt));
    lw_atomic(L, max ? A_MAX : A_MIN, p, tgt->kids + 1, tgt->nkids - 1, val, NULL, st, 0);
    return 1;
}
