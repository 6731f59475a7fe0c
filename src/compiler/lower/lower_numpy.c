/*
 * lower_numpy.c -- lowering of the rounding and power spellings that are no
 * row of the math table: Python's round(x) and round(x, n), and NumPy's
 * np.round (np.around), np.square and np.power.
 *
 * Part of lowering (lower.c has the essay; lower_call.c dispatches here).
 * Each is written in terms of operations the language already has, so that
 * no emitter and no dialect sees anything new and the typing, the checks and
 * the rounding are the ones those operations have:
 *
 *   np.square(x)      x * x in x's type (a bool is NumPy's int8 first);
 *   np.power(x, y)    x ** y, NumPy's power -- except that an integer to a
 *                     negative integer literal, which ** makes a float power
 *                     as Python does, is a CompileError: NumPy raises
 *                     ValueError there.  A negative exponent known only at
 *                     run time fails as ** fails (CK_NEGPOW);
 *   np.round(x, d)    NumPy's algorithm in x's float type: rint(x * 10**d) /
 *                     10**d for d >= 0 (rint(x) for d = 0), rint(x / 10**-d)
 *                     * 10**-d for d < 0, 10**d a double rounded to the
 *                     type, as NumPy's PyArray_Round computes it; an integer
 *                     is kept (NumPy's), a bool is its float16;
 *   round(x)          Python's: the nearest int, halves to even, as an i64
 *                     (the kernel's int); a NaN raises ValueError and an
 *                     infinity or a value past int64's range OverflowError
 *                     (checks on), where Python raises or grows its int;
 *   round(x, d)       a float x is a NumPy float in a kernel, and NumPy's
 *                     float __round__ is np.round: the same float type.
 *
 * d must be an integer constant.  Rounding an integer to negative digits
 * is refused (NumPy goes through float64 for it).  A vector or matrix takes
 * np.square, np.power and np.round element-wise (lw_elementwise); round(v)
 * is refused, as Python's round of an array is no int.
 */
#include <math.h>
#include <string.h>

#include "compiler/lower/lower.h"

static int is_intlike(tk_type t) { return t.kind == TY_VALUE && (ty_is_int(t) || ty_is_bool(t)); }

/* An integer constant below zero, written as one (-1) or folded to one. */
static int negative_int_const(const tk_ir *y) {
    while (y->op == IR_CAST && y->n == 1) y = y->k[0];
    if (ir_is_const(y)) return ty_is_int(y->ty) && !y->str && y->c.i < 0;
    return y->op == IR_UN && y->sub == U_NEG && ir_is_const(y->k[0]) && ty_is_int(y->k[0]->ty) && y->k[0]->c.i > 0;
}

/* The digits argument of round(x, d) / np.round(x, d): an integer constant. */
static int digits(lw_state *L, tack_node *d, const char *what) {
    if (d->kind == TACK_N_CONST_INT) return (int)d->ival;
    if (d->kind == TACK_N_UNARYOP && d->op == TACK_OP_NEG && d->nkids == 1 && d->kids[0]->kind == TACK_N_CONST_INT)
        return -(int)d->kids[0]->ival;
    ERR(d, "%s: the number of digits must be an integer constant (a literal such as 2 or -1)", what);
}

/* NumPy's power_of_ten (PyArray_Round): 10**n in double, by the table below 1e9 and by
 * multiplying by 10 above it, so that the kernel rounds with NumPy's factor. */
static double power_of_ten(int n) {
    static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8};
    if (n < 9) return p10[n];
    double r = 1e9;
    while (n-- > 9) r *= 10.;
    return r;
}

static tk_ir *rint_of(lw_state *L, tk_ir *x, tk_type t, tack_node *n) {
    tk_ir *e = lw_mk(L, IR_MATH, t, n);
    e->sub = M_RINT;
    e->aux_ty = t;
    L->C->uses_math |= (uint64_t)1 << M_RINT;
    return lw_kid(L, e, lw_cast(L, x, t));
}

/* A failed CK_STEP when `ok` is false; the site's axis 1 makes it an OverflowError. */
static void check_true(lw_state *L, tk_ir *ok, int overflow, const char *msg, tack_node *n) {
    int site = lw_site(L, CK_STEP, n->line, overflow, NULL, msg);
    lw_check(L, CK_STEP, site, ok, NULL, n->line);
}

static tk_ir *compare(lw_state *L, int b, tk_type t, tk_ir *x, tk_ir *y, tack_node *n) {
    tk_ir *c = lw_bin(L, b, ty_value(TACK_BOOL), x, y, n->line);
    c->aux_ty = t;
    return c;
}

/* The scalar meanings, in lw_elementwise's form; in->sub carries round's digits
 * (INT32_MIN: none given), in->kind TK_IK_CAST marks Python's round. */
static tk_ir *square_scalar(lw_state *L, const tk_intrinsic *in, tk_ir **a, int na, tack_node *n) {
    (void)in, (void)na;
    tk_ir *x = a[0];
    if (!lw_known(x)) return lw_unknown(L, n);
    if (x->ty.kind != TY_VALUE || !ty_is_scalar(x->ty)) ERR(n, "np.square() of %s", TN(x->ty));
    if (ty_is_bool(x->ty)) x = lw_cast(L, x, ty_value(TACK_I8)); /* NumPy squares a bool as int8 */
    x = lw_hoist(L, x);
    return lw_binop(L, TACK_OP_MUL, x, x, n);
}

static tk_ir *power_scalar(lw_state *L, const tk_intrinsic *in, tk_ir **a, int na, tack_node *n) {
    (void)in, (void)na;
    tk_ir *x = a[0], *y = a[1];
    if (!lw_known(x) || !lw_known(y)) return lw_unknown(L, n);
    if (is_intlike(x->ty) && is_intlike(y->ty) && negative_int_const(y))
        ERR(n, "np.power() of integers to a negative integer power: NumPy raises ValueError (integers to "
               "negative integer powers are not allowed); make the base a float (np.power(2.0, -1))");
    return lw_binop(L, TACK_OP_POW, x, y, n);
}

static tk_ir *round_scalar(lw_state *L, const tk_intrinsic *in, tk_ir **a, int na, tack_node *n) {
    (void)na;
    int python = in->kind == TK_IK_CAST, has_d = in->sub != INT32_MIN, d = has_d ? in->sub : 0;
    const char *what = python ? "round()" : "np.round()";
    tk_ir *x = a[0];
    if (!lw_known(x)) return lw_unknown(L, n);
    if (x->ty.kind != TY_VALUE || !ty_is_scalar(x->ty) || ty_is_complex(x->ty))
        ERR(n, "%s takes a real number%s, not %s", what, python ? "" : ", vector or matrix", TN(x->ty));
    tk_type t = x->ty;
    if (ty_is_bool(t)) {
        if (python) ERR(n, "round() of bool: NumPy's bool has no __round__ (Python raises TypeError); use int(b)");
        return lw_cast(L, x, ty_value(TACK_F16)); /* NumPy's round of a bool is its float16 */
    }
    if (ty_is_int(t)) {
        if (d < 0)
            ERR(n, "%s of an integer to %d digits is not supported in kernels (NumPy computes it in float64); "
                   "write it with // and *", what, d);
        if (python && !has_d && !t.weak) return lw_cast(L, x, ty_value(TACK_I64)); /* Python's int */
        return x;
    }
    if (t.weak) t = ty_value(ty_default_float()); /* a Python float alone: the default float */
    x = lw_hoist(L, lw_cast(L, x, t));
    tk_ir *r;
    if (d == 0) {
        r = rint_of(L, x, t, n);
    } else {
        double f = power_of_ten(d > 0 ? d : -d);
        tk_ir *y = lw_bin(L, d > 0 ? B_MUL : B_DIV, t, x, ir_const_f(L->C, t, f, n->line), n->line);
        r = lw_bin(L, d > 0 ? B_DIV : B_MUL, t, rint_of(L, y, t, n), ir_const_f(L->C, t, f, n->line), n->line);
    }
    if (!python || has_d) return r;
    /* round(x): Python's int, an i64 here; what Python would raise, the kernel raises */
    r = lw_hoist(L, r);
    if (L->C->opts.checks) {
        check_true(L, compare(L, B_EQ, t, r, r, n), 0, "cannot convert float NaN to integer", n);
        check_true(L, compare(L, B_GE, t, r, ir_const_f(L->C, t, -0x1p63, n->line), n), 1,
                   "round() of an infinity or of a float beyond int64's range: a kernel's int is an int64", n);
        check_true(L, compare(L, B_LT, t, r, ir_const_f(L->C, t, 0x1p63, n->line), n), 1,
                   "round() of an infinity or of a float beyond int64's range: a kernel's int is an int64", n);
    }
    return lw_cast(L, r, ty_value(TACK_I64));
}

/* round(...), np.round / np.around, np.square, np.power: NULL when `name` is none of them. */
tk_ir *lw_numpy_call(lw_state *L, const char *name, tack_node *n) {
    int python = !strcmp(name, "round");
    int rnd = python || !strcmp(name, "numpy.round") || !strcmp(name, "numpy.around");
    int sq = !strcmp(name, "numpy.square"), pw = !strcmp(name, "numpy.power");
    if (!rnd && !sq && !pw) return NULL;
    int lo = pw ? 2 : 1, hi = sq ? 1 : 2;
    if (n->nkids < lo || n->nkids > hi)
        ERR(n, "%s() takes %s%d argument%s (%d given)", python ? "round" : name, lo == hi ? "" : "1 or ", hi,
            hi == 1 ? "" : "s", n->nkids);
    tk_intrinsic in = {python ? "round" : name, python ? TK_IK_CAST : TK_IK_ABS, INT32_MIN, lo, hi, TK_MR_FLOAT};
    tk_ir *a[2] = {NULL, NULL};
    a[0] = lw_expr(L, n->kids[0]);
    if (n->nkids > 1) {
        if (rnd) in.sub = digits(L, n->kids[1], python ? "round()" : "np.round()");
        a[1] = lw_expr(L, n->kids[1]);
    }
    scalar_fn f = sq ? square_scalar : pw ? power_scalar : round_scalar;
    if (python && lw_known(a[0]) && a[0]->ty.kind == TY_VALUE && (ty_is_vector(a[0]->ty) || ty_is_matrix(a[0]->ty)))
        ERR(n, "round() of %s: Python's round gives an int, and Tack has no vector of int64s; use np.rint(v) or "
               "np.round(v, d) for the %s of rounded floats", TN(a[0]->ty), TN(a[0]->ty));
    tk_ir *v = lw_elementwise(L, &in, a, n->nkids, n, f);
    return v ? v : f(L, &in, a, n->nkids, n);
}
