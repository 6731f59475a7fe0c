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
 *   - an operator on two such constants (+ - * ** // % & | ^, and unary -)
 *     is computed here exactly, in 128 bits, with Python's
 *     semantics, and becomes a constant: a weak i64 inside int64, a marked
 *     u64 constant in [2**63, 2**64) (as the literal of that value would
 *     be), and otherwise a CompileError, since no type of the language holds
 *     it (`-2**63` is int64's least value and fine, `2**64` is refused, and
 *     so is `2**64 - 1`, whose first step is).  So the checks where a Python
 *     int meets a type see the value, not an expression (`a[i] = 2**62` into
 *     int8 is refused as the literal would be).  Division by zero is left
 *     to the run-time check; shifts are not Python's here but NumPy's, as
 *     everywhere in the language (a count past the width gives 0:
 *     docs/language.md), so they are left to the ordinary lowering;
 *   - lw_cast refuses a marked constant converted to any integer type but
 *     u64 (NumPy 2 raises OverflowError for `np.int64(2**63)`), naming the
 *     value and the type.
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

#else /* no 128-bit integers: no exact check */

tk_ir *lw_pyint_binop(lw_state *L, tack_op op, tk_ir *x, tk_ir *y, tack_node *n) {
    (void)L, (void)op, (void)x, (void)y, (void)n;
    return NULL;
}

tk_ir *lw_pyint_neg(lw_state *L, tk_ir *x, tack_node *n) {
    (void)L, (void)x, (void)n;
    return NULL;
}

#endif

void lw_pyint_fits(lw_state *L, const tk_ir *e, tk_type to) {
    if (!lw_is_big_pyint(e) || !ty_is_int(to) || to.weak || to.dt == TACK_U64) return;
    tk_error(L->C, L->fidx, e->line, 0,
             "Python integer %" PRIu64 " is out of bounds for %s (NumPy 2 raises OverflowError); write a value "
             "in range", e->c.u, dt_name((tack_dtype)to.dt));
}
