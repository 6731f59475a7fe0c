/*
 * fold.c -- constant folding.
 *
 * Folds operations whose operands are constants, with exactly the semantics
 * the generated code would have at run time: fixed-width wrapping for
 * integers (computed in uint64 and truncated, never with C undefined
 * behaviour in the compiler itself), Python floor division and modulo,
 * IEEE arithmetic rounded to f32 where the type is f32, saturating
 * float-to-int casts.  An integer division by a constant zero is left alone
 * so the check reports it at run time, as Python would.
 *
 * Beyond expressions it removes what constants make dead: an `if` on a
 * constant keeps one branch, a zero check on a non-zero constant and an
 * assert of a true constant disappear, and the negative-index wrap of a
 * non-negative constant index is dropped.  A local compared with itself in
 * an integer type is folded too (no NaN: `x != x` is False).  Math functions are not folded:
 * the C library at run time is the reference for their last bit.
 */
#include <math.h>
#include <string.h>

#include "compiler/compiler.h"

static int64_t norm(int dt, uint64_t v) {
    int bits = dt_bits((tack_dtype)dt);
    if (dt == TACK_BOOL) return v != 0;
    if (bits >= 64) return (int64_t)v;
    uint64_t mask = ((uint64_t)1 << bits) - 1;
    v &= mask;
    if (dt_kind((tack_dtype)dt) == TACK_KIND_INT && (v >> (bits - 1)) & 1) v |= ~mask;
    return (int64_t)v;
}

static double fnorm(int dt, double v) { return dt == TACK_F32 ? (double)(float)v : v; }

static int isf(int dt) { return dt_kind((tack_dtype)dt) == TACK_KIND_FLOAT; }
static int iss(int dt) { return dt_kind((tack_dtype)dt) == TACK_KIND_INT; }

static double pymod(double a, double b) {
    double m = fmod(a, b);
    if (m != 0) {
        if ((b < 0) != (m < 0)) m += b;
    } else {
        m = copysign(0.0, b);
    }
    return m;
}

static double pyfdiv(double a, double b) {
    if (b == 0) return a / b;
    double m = fmod(a, b), d = (a - m) / b;
    if (m != 0 && ((b < 0) != (m < 0))) d -= 1.0;
    if (d != 0) {
        double f = floor(d);
        if (d - f > 0.5) f += 1.0;
        d = f;
    } else {
        d = copysign(0.0, a / b);
    }
    return d;
}

/* x ** y of two float constants as the kernel computes it at run time
 * (dialect_c.c's tk_pow_f64 / tk_pow_f32): x * x, 1 / x and the square root
 * (pow's +0.0 and +inf at -0.0 and -inf) for the exponents 2, -1 and 0.5,
 * pow or powf otherwise -- in f32 for an f32 result, not pow rounded. */
static double fpow(int dt, double p, double q) {
    if (dt == TACK_F32) {
        float x = (float)p, y = (float)q;
        if (y == 2.0f) return (double)(x * x);
        if (y == -1.0f) return (double)(1.0f / x);
        if (y == 0.5f) return (double)(x == 0 || isinf(x) ? fabsf(x) : sqrtf(x));
        return (double)powf(x, y);
    }
    if (q == 2.0) return p * p;
    if (q == -1.0) return 1.0 / p;
    if (q == 0.5) return p == 0 || isinf(p) ? fabs(p) : sqrt(p);
    return pow(p, q);
}

static uint64_t upow(uint64_t a, uint64_t e) {
    uint64_t r = 1;
    while (e) {
        if (e & 1) r *= a;
        a *= a;
        e >>= 1;
    }
    return r;
}

static int64_t f2i(double x) {
    if (x != x) return 0;
    if (x >= 9223372036854775807.0) return INT64_MAX;
    if (x <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)x;
}

static tk_ir *fold_bin(tk_cc *C, tk_ir *x) {
    tk_ir *a = x->k[0], *b = x->k[1];
    /* A local compared with itself in a type without NaN is known: `x != x`, the NaN test of code
     * written once for every type (the primitives' min and max), is False for an integer.  Folded,
     * the C compiler never sees it (clang's -Wtautological-compare, which PoCL printed to the
     * user's stderr as "2 warnings generated." for every scan it built). */
    if (x->sub >= B_EQ && x->sub <= B_GE && a->op == IR_LOCAL && b->op == IR_LOCAL && a->local == b->local &&
        ty_is_scalar(x->aux_ty) && !ty_is_complex(x->aux_ty) && !isf(x->aux_ty.dt))
        return ir_const_i(C, x->ty, x->sub == B_EQ || x->sub == B_LE || x->sub == B_GE, x->line);
    if (!ir_is_const(a) || !ir_is_const(b) || !ty_is_scalar(a->ty) || !ty_is_scalar(b->ty)) return x;
    int op = x->sub;
    int dt = (op >= B_EQ && op <= B_GE) ? x->aux_ty.dt : x->ty.dt;
    if (isf(dt)) {
        double p = a->c.f, q = b->c.f, r;
        switch (op) {
        case B_ADD: r = p + q; break;
        case B_SUB: r = p - q; break;
        case B_MUL: r = p * q; break;
        case B_DIV: r = p / q; break;
        case B_FLOORDIV: r = pyfdiv(p, q); break;
        case B_MOD: r = pymod(p, q); break;
        case B_POW: r = fpow(dt, p, q); break;
        case B_MIN: r = q < p ? q : p; break;
        case B_MAX: r = q > p ? q : p; break;
        case B_EQ: return ir_const_i(C, x->ty, p == q, x->line);
        case B_NE: return ir_const_i(C, x->ty, p != q, x->line);
        case B_LT: return ir_const_i(C, x->ty, p < q, x->line);
        case B_LE: return ir_const_i(C, x->ty, p <= q, x->line);
        case B_GT: return ir_const_i(C, x->ty, p > q, x->line);
        case B_GE: return ir_const_i(C, x->ty, p >= q, x->line);
        default: return x;
        }
        return ir_const_f(C, x->ty, fnorm(dt, r), x->line);
    }
    int64_t p = a->c.i, q = b->c.i;
    uint64_t up = (uint64_t)p, uq = (uint64_t)q, r;
    int bits = dt_bits((tack_dtype)dt);
    int s = iss(dt);
    switch (op) {
    case B_ADD: r = up + uq; break;
    case B_SUB: r = up - uq; break;
    case B_MUL: r = up * uq; break;
    case B_FLOORDIV:
        if (q == 0) return x;
        if (s) {
            if (q == -1) r = (uint64_t)0 - up;
            else {
                int64_t d = p / q, m = p % q;
                r = (uint64_t)((m != 0 && ((m < 0) != (q < 0))) ? d - 1 : d);
            }
        } else r = up / uq;
        break;
    case B_MOD:
        if (q == 0) return x;
        if (s) {
            if (q == -1) r = 0;
            else {
                int64_t m = p % q;
                r = (uint64_t)((m != 0 && ((m < 0) != (q < 0))) ? m + q : m);
            }
        } else r = up % uq;
        break;
    case B_POW:
        if (s && q < 0) r = (uint64_t)(p == 1 ? 1 : p == -1 ? ((q & 1) ? -1 : 1) : 0);
        else r = upow(up, uq);
        break;
    case B_SHL: case B_SHR: { /* as emit_expr.c's tk_shl32 ...: NumPy's counts, read unsigned at 32 or 64 bits */
        int w = bits <= 32 ? 32 : 64;
        uint64_t cnt = w == 32 ? (uint64_t)(uint32_t)uq : uq;
        if (op == B_SHL) r = cnt < (uint64_t)w ? up << cnt : 0;
        else if (s) r = cnt < (uint64_t)w ? (p < 0 ? ~(~up >> cnt) : up >> cnt) : (p < 0 ? ~(uint64_t)0 : 0);
        else r = cnt < (uint64_t)w ? (w == 32 ? (uint64_t)((uint32_t)up >> cnt) : up >> cnt) : 0;
        break;
    }
    case B_AND: r = up & uq; break;
    case B_OR: r = up | uq; break;
    case B_XOR: r = up ^ uq; break;
    case B_MIN: r = (s ? q < p : uq < up) ? uq : up; break;
    case B_MAX: r = (s ? q > p : uq > up) ? uq : up; break;
    case B_EQ: return ir_const_i(C, x->ty, p == q, x->line);
    case B_NE: return ir_const_i(C, x->ty, p != q, x->line);
    case B_LT: return ir_const_i(C, x->ty, s ? p < q : up < uq, x->line);
    case B_LE: return ir_const_i(C, x->ty, s ? p <= q : up <= uq, x->line);
    case B_GT: return ir_const_i(C, x->ty, s ? p > q : up > uq, x->line);
    case B_GE: return ir_const_i(C, x->ty, s ? p >= q : up >= uq, x->line);
    default: return x;
    }
    return ir_const_i(C, x->ty, norm(dt, r), x->line);
}

static tk_ir *fold_cast(tk_cc *C, tk_ir *x) {
    tk_ir *a = x->k[0];
    if (!ir_is_const(a) || !ty_is_scalar(a->ty) || !ty_is_scalar(x->ty)) return x;
    int from = a->ty.dt, to = x->ty.dt;
    if (isf(from)) {
        double v = a->c.f;
        if (to == TACK_BOOL) return ir_const_i(C, x->ty, v != 0, x->line);
        if (isf(to)) return ir_const_f(C, x->ty, fnorm(to, v), x->line);
        if (iss(to)) return ir_const_i(C, x->ty, norm(to, (uint64_t)f2i(v)), x->line);
        uint64_t u = v != v ? 0 : v < 0 ? (uint64_t)f2i(v) : v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)v;
        return ir_const_i(C, x->ty, norm(to, u), x->line);
    }
    int64_t v = a->c.i;
    if (to == TACK_BOOL) return ir_const_i(C, x->ty, v != 0, x->line);
    if (isf(to)) {
        double d = iss(from) || from == TACK_BOOL ? (double)v : (double)(uint64_t)v;
        return ir_const_f(C, x->ty, fnorm(to, d), x->line);
    }
    return ir_const_i(C, x->ty, norm(to, (uint64_t)v), x->line);
}

static tk_ir *fold_un(tk_cc *C, tk_ir *x) {
    tk_ir *a = x->k[0];
    if (!ir_is_const(a) || !ty_is_scalar(a->ty)) return x;
    int dt = x->ty.dt;
    switch (x->sub) {
    case U_NOT: return ir_const_i(C, x->ty, !a->c.i, x->line);
    case U_TRUTH: return ir_const_i(C, x->ty, isf(a->ty.dt) ? a->c.f != 0 : a->c.i != 0, x->line);
    case U_NEG:
        if (isf(dt)) return ir_const_f(C, x->ty, -a->c.f, x->line);
        return ir_const_i(C, x->ty, norm(dt, (uint64_t)0 - (uint64_t)a->c.i), x->line);
    case U_INVERT: return ir_const_i(C, x->ty, norm(dt, ~(uint64_t)a->c.i), x->line);
    case U_ABS:
        if (!iss(dt) || a->c.i >= 0) return a;
        return ir_const_i(C, x->ty, norm(dt, (uint64_t)0 - (uint64_t)a->c.i), x->line);
    }
    return x;
}

static int truthy(tk_ir *c) { return isf(c->ty.dt) ? c->c.f != 0 : c->c.i != 0; }

static tk_ir *fx(tk_cc *C, tk_ir *x) {
    for (int i = 0; i < x->n; i++) x->k[i] = fx(C, x->k[i]);
    switch (x->op) {
    case IR_BIN: return fold_bin(C, x);
    case IR_CAST: return fold_cast(C, x);
    case IR_UN: return fold_un(C, x);
    case IR_SELECT:
        if (ir_is_const(x->k[0])) return x->k[0]->c.i ? x->k[1] : x->k[2];
        return x;
    case IR_AND:
        if (ir_is_const(x->k[0]) && ty_is_scalar(x->k[0]->ty)) return truthy(x->k[0]) ? x->k[1] : x->k[0];
        /* p and False of bools is False whatever p, when p does nothing (`fl != 0 and acc != acc` of an
         * integer acc: C compilers warn of a constant operand of && ) */
        if (ty_is_bool(x->ty) && ir_is_const(x->k[1]) && !truthy(x->k[1]) && tk_rows_pure(x->k[0])) return x->k[1];
        return x;
    case IR_OR:
        if (ir_is_const(x->k[0]) && ty_is_scalar(x->k[0]->ty)) return truthy(x->k[0]) ? x->k[0] : x->k[1];
        if (ty_is_bool(x->ty) && ir_is_const(x->k[1]) && truthy(x->k[1]) && tk_rows_pure(x->k[0])) return x->k[1]; /* p or True */
        return x;
    case IR_WRAP:
        if (ir_is_const(x->k[0]) && x->k[0]->c.i >= 0) return x->k[0];
        if (x->param < 0 && ir_is_const(x->k[0]) && x->k[0]->c.i >= -x->c.i) /* a local array's constant extent */
            return ir_const_i(C, x->ty, x->k[0]->c.i + x->c.i, x->line);
        return x;
    default: return x;
    }
}

static tk_ir *empty(tk_cc *C, tk_ir *s) { return ir_new(C, IR_BLOCK, ty_void(), s->line); }

/* An index check whose operands are all constants (a local array's, whose
 * extents are) and that holds, in its form (tk_index_form). */
/* A CK_INTFIT check of constants that passes: a value (or, hoisted out of a
 * loop, a range a .. b - 1) inside [lo, hi]. */
static int intfit_holds(const tk_ir *s) {
    for (int i = 0; i < s->n; i++)
        if (!ir_is_const(s->k[i]) || !ty_is_int(s->k[i]->ty)) return 0;
    if (s->local == CKI_RANGE) {
        int64_t a = s->k[0]->c.i, b = s->k[1]->c.i;
        return a >= b || (a >= s->k[2]->c.i && b - 1 <= s->k[3]->c.i);
    }
    return s->k[0]->c.i >= s->k[1]->c.i && s->k[0]->c.i <= s->k[2]->c.i;
}

static int index_holds(const tk_ir *s) {
    for (int i = 0; i < s->n; i++)
        if (!ir_is_const(s->k[i]) || !ty_is_int(s->k[i]->ty)) return 0;
    int64_t i = s->k[0]->c.i, n = s->k[s->n - 1]->c.i;
    switch (s->local) {
    case CKI_WRAP: return s->n == 2 && i >= -n && i < n;
    case CKI_NONNEG: return s->n == 2 && i >= 0 && i < n;
    case CKI_RANGE: return s->n == 3 && (i >= s->k[1]->c.i || s->k[1]->c.i <= n);
    default: return 0;
    }
}

static tk_ir *fs(tk_cc *C, tk_ir *s) {
    switch (s->op) {
    case IR_BLOCK:
        for (int i = 0; i < s->n; i++) s->k[i] = fs(C, s->k[i]);
        return s;
    case IR_IF:
        s->k[0] = fx(C, s->k[0]);
        s->k[1] = fs(C, s->k[1]);
        s->k[2] = fs(C, s->k[2]);
        if (ir_is_const(s->k[0])) return s->k[0]->c.i ? s->k[1] : s->k[2];
        return s;
    case IR_WHILE:
        s->k[0] = fx(C, s->k[0]);
        s->k[1] = fs(C, s->k[1]);
        if (ir_is_const(s->k[0]) && !s->k[0]->c.i) return empty(C, s);
        return s;
    case IR_FOR:
        for (int i = 0; i < 3; i++) s->k[i] = fx(C, s->k[i]);
        s->k[3] = fs(C, s->k[3]);
        return s;
    case IR_PFOR:
        for (int i = 0; i < s->aux; i++) s->k[i] = fx(C, s->k[i]);
        s->k[s->aux] = fs(C, s->k[s->aux]);
        return s;
    case IR_CHECK:
        for (int i = 0; i < s->n; i++) s->k[i] = fx(C, s->k[i]);
        if (s->sub == CK_ZERODIV && ir_is_const(s->k[0]) && s->k[0]->c.i != 0) return empty(C, s);
        if (s->sub == CK_NEGPOW && ir_is_const(s->k[0]) && s->k[0]->c.i >= 0) return empty(C, s);
        if (s->sub == CK_STEP && ir_is_const(s->k[0]) && s->k[0]->c.i != 0) return empty(C, s);
        if (s->sub == CK_ASSERT && ir_is_const(s->k[0]) && s->k[0]->c.i) return empty(C, s);
        if (s->sub == CK_COMP && ir_is_const(s->k[0]) && ir_is_const(s->k[1]) && s->k[0]->c.i >= -s->k[1]->c.i &&
            s->k[0]->c.i < s->k[1]->c.i)
            return empty(C, s);
        if (s->sub == CK_INDEX && index_holds(s)) return empty(C, s); /* a local array's constant index */
        if (s->sub == CK_INTFIT && intfit_holds(s)) return empty(C, s);
        return s;
    case IR_PRINT:
        for (int i = 0; i < s->n; i++)
            if (!s->k[i]->str) s->k[i] = fx(C, s->k[i]);
        return s;
    default:
        for (int i = 0; i < s->n; i++) s->k[i] = fx(C, s->k[i]);
        return s;
    }
}

/* One expression folded (lowering asks it of a literal expression it must round at compile time). */
tk_ir *tk_fold_expr(tk_cc *C, tk_ir *e) { return fx(C, e); }

void tk_fold(tk_cc *C) {
    for (int i = 0; i < C->nspecs; i++)
        if (C->specs[i]->body) C->specs[i]->body = fs(C, C->specs[i]->body);
}
