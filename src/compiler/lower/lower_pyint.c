/*
 * lower_pyint.c -- Python integers that meet 64 bits at compile time.
 *
 * Part of lowering (lower.c has the essay).  A Python int is unbounded; a
 * kernel's integers are 64 bits at most.  Where a Python integer written in
 * the kernel (a literal, or an expression of literals such as `2**64` or
 * `-2**63`) meets a fixed-width type, Tack gives Python's value or refuses
 * the program, never a wrapped one:
 *
 *   - a literal is carried as a weak i64; one above INT64_MAX (up to
 *     2**64 - 1) is carried in a u64 constant marked TK_CONST_PYINT, so the
 *     places it meets a type can tell it from a u64 value;
 *   - an operator on two such constants (+ - * ** // % & | ^ << >>, unary -
 *     and ~, abs, min, max, and `and`/`or`, with True and False as 1 and 0
 *     where they meet an int or are added) is computed here exactly, in 128
 *     bits, with Python's semantics, and becomes a constant: a weak i64 inside int64, a marked
 *     u64 constant in [2**63, 2**64) (as the literal of that value would
 *     be), and otherwise a CompileError, since no type of the language holds
 *     it (`-2**63` is int64's least value and fine, `2**64` is refused, and
 *     so is `2**64 - 1`, whose first step is).  So the checks where a Python
 *     int meets a type see the value, not an expression (`a[i] = 2**62` into
 *     int8 is refused as the literal would be).  Division by zero is left
 *     to the run-time check.  A shift is NumPy's int64 shift, as everywhere
 *     in the language (`1 << 63` is int64's least value, a count past the
 *     width shifts every bit out: docs/language.md), folded all the same.
 *     Left to the ordinary lowering, these gave a weak int that is not a
 *     constant, as the loop variable is, so `(1 << 20) + a16[i]` or `True *
 *     100000 + a16[i]` wrapped to int16 without the check a literal gets;
 *   - lw_cast refuses a marked constant converted to any integer type but
 *     u64 (NumPy 2 raises OverflowError for `np.int64(2**63)`), naming the
 *     value and the type.
 *
 * A comparison is the one place a Python int does not take the fixed-width
 * type it meets.  NumPy 2 compares a Python int with an integer array
 * exactly (`int8_array < 200` is all True, `uint8_array == -1` all False),
 * where the type rule alone would convert 200 to int8 (a literal: refused
 * as out of bounds; a run-time int such as the loop variable or a shape:
 * wrapped, so `a8[j] < n` with n = 300 compared with 44).
 * lw_pyint_compare makes such a comparison exact: in int64 where the
 * fixed-width side fits it (every signed type, and unsigned up to 32
 * bits), and between int64 and uint64 as sign test and unsigned compare
 * (`s < u` is `s < 0 || (uint64)s < u`) where one side is uint64 or a
 * literal from 2**63 up.  A literal that fits the type keeps the narrow
 * comparison (the same answer, and no widening in SIMD lanes); a Python
 * int argument compared with a uint64 keeps its uint64 conversion, which
 * takes values up to 2**64 - 1 and refuses a negative one when the call
 * is made (the launch's range check), as before.  min() and max() pick by
 * the same exact comparison (lower_call.c), as Python's pick by `<`, and
 * then convert the value picked.  Two fixed-width integers compare exactly
 * too where NumPy 2 does and their promotion would not: uint64 against a
 * signed type, whose promoted type is float64.
 *
 * Arithmetic is where a Python int does take the fixed-width type it meets
 * (`i + a8[k]` is int8, as in NumPy 2), and NumPy 2 raises OverflowError
 * when the Python int does not fit that type ("Python integer 300 out of
 * bounds for int8").  A literal is refused at compile time (lw_cast) and a
 * Python int argument at the call (the launch's range check); an integer
 * known only at run time -- the loop variable, a shape, len(), arithmetic
 * on them -- gets a run-time check here (lw_pyint_narrow): a CK_INTFIT
 * check [v, lo, hi] before the operation, whose failure raises
 * OverflowError naming the value, the type and the line.  It follows
 * `checks`, as the index checks do (checks=False wraps, as before).  A
 * check of an invariant value (a shape) runs once per loop, and one of the
 * loop variable (plus a constant) once per loop as its first and last
 * values (checks.c), so `out[i] = a8[i] + i` keeps its SIMD loop.  Only
 * conversions for arithmetic are checked: a comparison is exact (above), a
 * store and an explicit cast (tack.i8(x)) convert as C does.
 *
 * Without a 128-bit integer type in the host compiler the exact check is
 * skipped (the generated arithmetic then wraps as it did before); every
 * compiler Tack is built with on its supported platforms has one.
 */
#include <inttypes.h>
#include <stdio.h>

#include "compiler/lower/lower.h"

/* Whether e is a Python int constant: a weak i64 or a marked u64. */
static int is_pyint(const tk_ir *e) {
    if (!e || e->op != IR_CONST || e->str) return 0;
    if (e->ty.kind == TY_VALUE && e->ty.weak && e->ty.dt == TACK_I64) return 1;
    return lw_is_big_pyint(e);
}

int lw_is_big_pyint(const tk_ir *e) {
    return e && e->op == IR_CONST && !e->str && e->ty.kind == TY_VALUE && !e->ty.weak && e->ty.dt == TACK_U64 &&
           e->aux == TK_CONST_PYINT;
}

tk_ir *lw_big_pyint(lw_state *L, uint64_t v, int line) {
    tk_ir *e = ir_const_i(L->C, ty_value(TACK_U64), (int64_t)v, line);
    e->aux = TK_CONST_PYINT;
    return e;
}

#ifdef __SIZEOF_INT128__
__extension__ typedef __int128 i128;

static i128 value_of(const tk_ir *e) { return lw_is_big_pyint(e) ? (i128)e->c.u : (i128)e->c.i; }

static const i128 LIMIT = (i128)1 << 66; /* past any value the language holds: stop growing there */

/* The exact value of x op y, or LIMIT when it is past every bound (or not
 * computed here: 0 in *done). */
static i128 exact(tack_op op, i128 x, i128 y, int *done) {
    *done = 1;
    switch (op) {
    case TACK_OP_ADD: return x + y;
    case TACK_OP_SUB: return x - y;
    case TACK_OP_MUL: {
        i128 ax = x < 0 ? -x : x, ay = y < 0 ? -y : y;
        if (ax != 0 && ay > LIMIT / ax) return LIMIT;
        return x * y;
    }
    case TACK_OP_POW: {
        if (y < 0) break; /* a float (2 ** -1 is 0.5) */
        if (x == 0) return y == 0 ? 1 : 0;
        if (x == 1) return 1;
        if (x == -1) return y % 2 ? -1 : 1;
        i128 r = 1;
        for (i128 k = 0; k < y; k++) { /* |x| >= 2: at most 67 rounds */
            r *= x;
            if (r > LIMIT || r < -LIMIT) return LIMIT;
        }
        return r;
    }
    case TACK_OP_FLOORDIV:
    case TACK_OP_MOD: {
        if (y == 0) break; /* ZeroDivisionError at run time, as the check reports it */
        i128 q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) { q -= 1; m += y; }
        return op == TACK_OP_FLOORDIV ? q : m;
    }
    case TACK_OP_BITAND: return x & y;
    case TACK_OP_BITOR: return x | y;
    case TACK_OP_BITXOR: return x ^ y;
    case TACK_OP_LSHIFT:
    case TACK_OP_RSHIFT: {
        /* NumPy's int64 shift, as at run time (test_shifts.py): `1 << 63` is
         * int64's least value, a count past the width or a negative one
         * shifts every bit out; a Python int from 2**63 up is not shifted here */
        if (x < (i128)INT64_MIN || x > (i128)INT64_MAX) break;
        int64_t a = (int64_t)x;
        if (y < 0 || y >= 64) return op == TACK_OP_RSHIFT && a < 0 ? -1 : 0;
        if (op == TACK_OP_LSHIFT) return (i128)(int64_t)((uint64_t)a << (int)y);
        return (i128)(a < 0 ? ~(~a >> (int)y) : a >> (int)y); /* arithmetic, without relying on >> of a negative */
    }
    default: break;
    }
    *done = 0;
    return 0;
}

/* v in decimal, or "beyond 64 bits" for LIMIT (a value past every bound). */
static void print_i128(char *buf, size_t n, i128 v) {
    if (v == LIMIT) {
        snprintf(buf, n, "beyond 64 bits");
        return;
    }
    char d[48];
    int k = 0, neg = v < 0;
    i128 u = neg ? -v : v;
    do {
        d[k++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u && k < 47);
    size_t j = 0;
    if (neg && j + 1 < n) buf[j++] = '-';
    while (k && j + 1 < n) buf[j++] = d[--k];
    buf[j] = 0;
}

/* A result of Python int constants: NULL when it fits int64 (the caller
 * makes the weak constant), a marked u64 constant, or a CompileError. */
static tk_ir *settle(lw_state *L, i128 r, tack_node *n) {
    if (r >= (i128)INT64_MIN && r <= (i128)INT64_MAX) return NULL;
    if (r > (i128)INT64_MAX && r <= (i128)UINT64_MAX) return lw_big_pyint(L, (uint64_t)r, n->line);
    char v[64];
    print_i128(v, sizeof v, r);
    ERR(n, "this integer expression reaches %s, which no 64-bit integer type holds (Python's ints are "
           "unbounded, a kernel's are not): every step of it must lie from -2**63 to 2**64 - 1; write the "
           "value as one literal if it does (18446744073709551615, not 2**64 - 1)", v);
}

tk_ir *lw_pyint_binop(lw_state *L, tack_op op, tk_ir *x, tk_ir *y, tack_node *n) {
    if (!is_pyint(x) || !is_pyint(y)) return NULL;
    int done;
    i128 r = exact(op, value_of(x), value_of(y), &done);
    if (!done) {
        if (lw_is_big_pyint(x) || lw_is_big_pyint(y))
            ERR(n, "%s on a Python integer from 2**63 up is not supported in a kernel; write the result "
                   "as a literal", lw_op_symbol(op));
        return NULL; /* 1 // 0, 1 << -1: the run-time checks report them, as Python would */
    }
    tk_ir *e = settle(L, r, n);
    return e ? e : ir_const_i(L->C, ty_weak(TACK_I64), (int64_t)r, n->line);
}

tk_ir *lw_pyint_neg(lw_state *L, tk_ir *x, tack_node *n) {
    if (!is_pyint(x)) return NULL;
    i128 r = -value_of(x);
    tk_ir *e = settle(L, r, n);
    if (e) return e;
    return ir_const_i(L->C, ty_weak(TACK_I64), (int64_t)r, n->line);
}

tk_ir *lw_pyint_invert(lw_state *L, tk_ir *x, tack_node *n) {
    if (!is_pyint(x)) return NULL;
    i128 r = -value_of(x) - 1; /* Python's ~x */
    tk_ir *e = settle(L, r, n);
    return e ? e : ir_const_i(L->C, ty_weak(TACK_I64), (int64_t)r, n->line);
}

tk_ir *lw_pyint_abs(lw_state *L, tk_ir *x, tack_node *n) {
    if (!is_pyint(x)) return NULL;
    i128 r = value_of(x) < 0 ? -value_of(x) : value_of(x); /* abs(-2**63) is 2**63: a uint64 alone holds it */
    tk_ir *e = settle(L, r, n);
    return e ? e : ir_const_i(L->C, ty_weak(TACK_I64), (int64_t)r, n->line);
}

tk_ir *lw_pyint_pick(int is_min, tk_ir *acc, tk_ir *y) {
    if (!is_pyint(acc) || !is_pyint(y)) return NULL;
    i128 a = value_of(acc), b = value_of(y);
    return (is_min ? b < a : b > a) ? y : acc; /* Python's: the first of equals */
}

#else /* no 128-bit integers: no exact check */

tk_ir *lw_pyint_binop(lw_state *L, tack_op op, tk_ir *x, tk_ir *y, tack_node *n) {
    (void)L, (void)op, (void)x, (void)y, (void)n;
    return NULL;
}

tk_ir *lw_pyint_neg(lw_state *L, tk_ir *x, tack_node *n) {
    (void)L, (void)x, (void)n;
    return NULL;
}

tk_ir *lw_pyint_invert(lw_state *L, tk_ir *x, tack_node *n) {
    (void)L, (void)x, (void)n;
    return NULL;
}

tk_ir *lw_pyint_abs(lw_state *L, tk_ir *x, tack_node *n) {
    (void)L, (void)x, (void)n;
    return NULL;
}

tk_ir *lw_pyint_pick(int is_min, tk_ir *acc, tk_ir *y) {
    (void)is_min, (void)acc, (void)y;
    return NULL;
}

#endif

/* A Python bool constant (True, False) met by a Python int constant, or
 * made an int by arithmetic on two bools: the constant 1 or 0, so that the
 * expression of literals is folded, and checked, like any other. */
tk_ir *lw_pyint_of_bool(lw_state *L, tk_ir *e, const tk_ir *other) {
    if (!e || e->op != IR_CONST || e->str || e->ty.kind != TY_VALUE || !e->ty.weak || e->ty.dt != TACK_BOOL) return e;
    if (other && !is_pyint(other)) return e;
    return ir_const_i(L->C, ty_weak(TACK_I64), e->c.i != 0, e->line);
}

/* Whether e is a constant of Python's (an int or a bool) and, in *truth, its truth value. */
int lw_pyint_truth(const tk_ir *e, int *truth) {
    if (!e || e->op != IR_CONST || e->str || e->ty.kind != TY_VALUE) return 0;
    if (!is_pyint(e) && !(e->ty.weak && e->ty.dt == TACK_BOOL)) return 0;
    *truth = lw_is_big_pyint(e) ? e->c.u != 0 : e->c.i != 0;
    return 1;
}

void lw_pyint_fits(lw_state *L, const tk_ir *e, tk_type to) {
    if (!lw_is_big_pyint(e) || !ty_is_int(to) || to.weak || to.dt == TACK_U64) return;
    tk_error(L->C, L->fidx, e->line, 0,
             "Python integer %" PRIu64 " is out of bounds for %s (NumPy 2 raises OverflowError); write a value "
             "in range", e->c.u, dt_name((tack_dtype)to.dt));
}

/* Whether e is a Python int that is not bounded by a fixed width: a weak
 * i64 (a literal, the loop variable, a shape, a Python int argument and
 * arithmetic on them) or a literal from 2**63 up. */
static int python_int(const tk_ir *e) {
    return e->ty.kind == TY_VALUE && ((e->ty.weak && e->ty.dt == TACK_I64) || lw_is_big_pyint(e));
}

static int is_param(const lw_state *L, const tk_ir *e) {
    if (e->op != IR_LOCAL || !L->S->plocal) return 0;
    for (int p = 0; p < L->S->nparams; p++)
        if (L->S->plocal[p] == e->local) return 1;
    return 0;
}

static int literal_fits(const tk_ir *e, tack_dtype dt) {
    if (e->op != IR_CONST || lw_is_big_pyint(e)) return 0;
    int64_t v = e->c.i;
    int bits = dt_bits(dt);
    if (dt_kind(dt) == TACK_KIND_UINT) return v >= 0 && (bits == 64 || (uint64_t)v < ((uint64_t)1 << bits));
    return bits == 64 || (v >= -((int64_t)1 << (bits - 1)) && v < ((int64_t)1 << (bits - 1)));
}

static tk_ir *cmp_as(lw_state *L, int b, tk_type t, tk_ir *x, tk_ir *y, int line) {
    tk_ir *e = lw_bin(L, b, ty_value(TACK_BOOL), x, y, line);
    e->aux_ty = t;
    return e;
}

static tk_ir *both(lw_state *L, int op, tk_ir *a, tk_ir *b, tack_node *n) {
    tk_ir *e = lw_mk(L, op, ty_value(TACK_BOOL), n);
    ir_push(L->C, e, a);
    ir_push(L->C, e, b);
    return e;
}

/* x b y is y mirror[b] x */
static const int mirror[] = {[B_EQ] = B_EQ, [B_NE] = B_NE, [B_LT] = B_GT, [B_LE] = B_GE, [B_GT] = B_LT, [B_GE] = B_LE};

/* s b u, exactly, for s an int64 and u a uint64 (b one of B_EQ .. B_GE). */
static tk_ir *signed_vs_unsigned(lw_state *L, int b, tk_ir *s, tk_ir *u, tack_node *n) {
    tk_type i64 = ty_value(TACK_I64), u64 = ty_value(TACK_U64);
    s = lw_hoist(L, s);
    int below = b == B_LT || b == B_LE || b == B_NE; /* true wherever s < 0 */
    tk_ir *sign = cmp_as(L, below ? B_LT : B_GE, i64, s, ir_const_i(L->C, i64, 0, n->line), n->line);
    tk_ir *rest = cmp_as(L, b, u64, lw_cast(L, s, u64), u, n->line);
    return both(L, below ? IR_OR : IR_AND, sign, rest, n);
}

/* c b w, exactly, for c of the fixed-width type dt (at most 32 bits, or
 * signed) and w an int64: tested against dt's range first, so that where w
 * lies inside it the comparison is dt's own, and an 8-bit array compared
 * with a shape stays 8-bit in SIMD lanes (widening every element to int64
 * made `u8[i] < n` 5.7 times slower).  `c < w` is `w > hi || (w > lo && c <
 * (dt)w)`: past hi every c is below w, at lo or under none is. */
static tk_ir *in_range(lw_state *L, int b, tk_ir *c, tk_ir *w, tack_dtype dt, tack_node *n) {
    tk_type i64 = ty_value(TACK_I64), t = ty_value(dt);
    int bits = dt_bits(dt), line = n->line;
    int64_t lo = dt_kind(dt) == TACK_KIND_UINT ? 0 : -((int64_t)1 << (bits - 1));
    int64_t hi = dt_kind(dt) == TACK_KIND_UINT ? (int64_t)(((uint64_t)1 << bits) - 1) : ((int64_t)1 << (bits - 1)) - 1;
    w = lw_hoist(L, lw_cast(L, w, i64));
#define BOUND(op, v) cmp_as(L, op, i64, w, ir_const_i(L->C, i64, v, line), line)
    tk_ir *narrow = cmp_as(L, b, t, c, lw_cast(L, w, t), line);
    switch (b) {
    case B_LT: return both(L, IR_OR, BOUND(B_GT, hi), both(L, IR_AND, BOUND(B_GT, lo), narrow, n), n);
    case B_LE: return both(L, IR_OR, BOUND(B_GE, hi), both(L, IR_AND, BOUND(B_GE, lo), narrow, n), n);
    case B_GT: return both(L, IR_OR, BOUND(B_LT, lo), both(L, IR_AND, BOUND(B_LT, hi), narrow, n), n);
    case B_GE: return both(L, IR_OR, BOUND(B_LE, lo), both(L, IR_AND, BOUND(B_LE, hi), narrow, n), n);
    case B_EQ: return both(L, IR_AND, both(L, IR_AND, BOUND(B_GE, lo), BOUND(B_LE, hi), n), narrow, n);
    default: return both(L, IR_OR, both(L, IR_OR, BOUND(B_LT, lo), BOUND(B_GT, hi), n), narrow, n);
    }
#undef BOUND
}

static int fixed_int(const tk_ir *e) { return e->ty.kind == TY_VALUE && !e->ty.weak && ty_is_int(e->ty); }

tk_ir *lw_pyint_compare(lw_state *L, int b, tk_ir *x, tk_ir *y, tack_node *n) {
    int px = python_int(x), py = python_int(y);
    if (!px && !py && fixed_int(x) && fixed_int(y) && !lw_is_big_pyint(x) && !lw_is_big_pyint(y)) {
        /* uint64 against a signed type: promoted, they are float64, which
         * rounds both above 2**53 (2**62 + 1 == 2**62); NumPy 2 compares them
         * exactly, and so does this */
        int ux = x->ty.dt == TACK_U64, uy = y->ty.dt == TACK_U64;
        int sx = dt_kind((tack_dtype)x->ty.dt) == TACK_KIND_INT, sy = dt_kind((tack_dtype)y->ty.dt) == TACK_KIND_INT;
        if (sx && uy) return signed_vs_unsigned(L, b, lw_cast(L, x, ty_value(TACK_I64)), y, n);
        if (ux && sy) return signed_vs_unsigned(L, mirror[b], lw_cast(L, y, ty_value(TACK_I64)), x, n);
        return NULL;
    }
#ifdef __SIZEOF_INT128__
    if (px && py && is_pyint(x) && is_pyint(y) && (lw_is_big_pyint(x) || lw_is_big_pyint(y))) {
        /* two literals, one from 2**63 up: Python's exact answer (2**64 - 1 >= -1 is True), not a
         * conversion of the other to uint64, which refused -1 */
        i128 u = value_of(x), v = value_of(y);
        int r = b == B_EQ ? u == v : b == B_NE ? u != v : b == B_LT ? u < v : b == B_LE ? u <= v : b == B_GT ? u > v : u >= v;
        return ir_const_i(L->C, ty_value(TACK_BOOL), r, n->line);
    }
#endif
    if (px == py) return NULL; /* two Python ints */
    tk_ir *w = px ? x : y, *c = px ? y : x;
    if (c->ty.kind != TY_VALUE || c->ty.weak || !ty_is_int(c->ty) || !ty_is_scalar(c->ty)) return NULL;
    tack_dtype dt = (tack_dtype)c->ty.dt;
    if (literal_fits(w, dt)) return NULL; /* the narrow comparison gives the same answer */
    int wide = dt != TACK_U64; /* int64 holds every value of the fixed-width side */
    if (lw_is_big_pyint(w)) {
        if (!wide) return NULL; /* a uint64 literal meeting uint64: the ordinary comparison */
        /* c (as int64) against the literal (uint64) */
        tk_ir *s = lw_cast(L, c, ty_value(TACK_I64));
        if (!px) return signed_vs_unsigned(L, b, s, w, n);
        return signed_vs_unsigned(L, mirror[b], s, w, n);
    }
    if (dt == TACK_I64) return NULL; /* int64 against int64: exact as it is */
    if (wide) return px ? in_range(L, mirror[b], c, w, dt, n) : in_range(L, b, c, w, dt, n);
    if (is_param(L, w)) return NULL; /* uint64 conversion, checked at the call (the essay) */
    tk_ir *s = lw_cast(L, w, ty_value(TACK_I64));
    if (px) return signed_vs_unsigned(L, b, s, c, n);
    return signed_vs_unsigned(L, mirror[b], s, c, n);
}

/* A Python int known only at run time (a weak i64 that is not a constant:
 * the loop variable, a shape, len(), a Python int argument, arithmetic on
 * them) about to be converted to the fixed-width integer type `to` because
 * it meets a value of that type in arithmetic: NumPy 2 raises OverflowError
 * where it does not fit, and so does the kernel, through a CK_INTFIT check
 * [e, lo, hi] before the operation (the essay).  Returns e, evaluated once
 * into a temporary when the check reads it. */
tk_ir *lw_pyint_narrow(lw_state *L, tk_ir *e, tk_type to, tack_node *n) {
    if (!L->C->opts.checks || e->ty.kind != TY_VALUE || !e->ty.weak || e->ty.dt != TACK_I64 || e->op == IR_CONST)
        return e;
    if (to.kind != TY_VALUE || to.weak || !ty_is_int(to) || !ty_is_scalar(to) || to.dt == TACK_I64) return e;
    /* a kernel's parameter as the caller passed it: the launch checks the argument against the
     * types it meets (lower.c, narrow_param), and one from 2**63 up is a uint64's bits */
    if (L->is_kernel && e->op == IR_LOCAL && is_param(L, e) && !lw_assigns_name(L->F->body, L->S->locals[e->local].name))
        return e;
    tack_dtype dt = (tack_dtype)to.dt;
    int64_t lo, hi;
    lw_int_range(dt, &lo, &hi);
    e = lw_hoist(L, e);
    static const char *numpy[] = {[TACK_I8] = "int8", [TACK_I16] = "int16", [TACK_I32] = "int32", [TACK_U8] = "uint8",
                                  [TACK_U16] = "uint16", [TACK_U32] = "uint32", [TACK_U64] = "uint64"};
    const char *name = (size_t)dt < sizeof numpy / sizeof *numpy && numpy[dt] ? numpy[dt] : dt_name(dt);
    int site = lw_site(L, CK_INTFIT, n->line, 0, NULL, name); /* NumPy's name: its message's words */
    tk_ir *c = ir_new(L->C, IR_CHECK, ty_void(), n->line);
    c->sub = CK_INTFIT;
    c->aux = site;
    ir_push(L->C, c, e);
    ir_push(L->C, c, ir_const_i(L->C, ty_value(TACK_I64), lo, n->line));
    ir_push(L->C, c, ir_const_i(L->C, ty_value(TACK_I64), hi, n->line));
    lw_emit(L, c);
    return e;
}
