/*
 * complex.c -- complex numbers in the kernel language: their lowering (their
 * emission and the prelude's helpers are emit_complex.c's).
 *
 * complex64 and complex128 are scalars of their own kind (runtime/dtype.c):
 * a value is a pair (re, im) of f32 or f64, stored as NumPy stores it.  The
 * rest of the compiler sees them as scalars that are neither int nor float;
 * what is special about them is here:
 *
 *   lowering   literals (2+3j arrives as complex(2.0, 3.0) from the front
 *              end) and complex(re, im) are IR_VEC pairs; z.real, z.imag
 *              are IR_COMP; + - * / == != are IR_BIN of complex type; abs
 *              is IR_UN U_ABS giving the part type; exp, sqrt, log (cmath
 *              and NumPy's spellings) are IR_MATH typed complex.  What Python
 *              or NumPy refuse is a CompileError naming the operator: order
 *              comparisons, //, %, **, float(z), and any mixing with
 *              vectors; a complex never becomes a real number implicitly.
 *
 *   emission   every operation calls a helper of the prelude, and
 *              `a[i] += z` two float atomics: emit_complex.c (emission never
 *              calls lowering, and lowering never writes source).
 */
#include <string.h>

#include "compiler/lower/lower.h"

/* ------------------------------------------------------------- lowering */
static tk_type part_type(tk_type z) {
    return z.weak ? ty_weak(TACK_F64) : ty_value(dt_complex_part((tack_dtype)z.dt));
}

tk_ir *lw_complex_make(lw_state *L, tk_type t, tk_ir *re, tk_ir *im, int line) {
    tk_ir *v = ir_new(L->C, IR_VEC, t, line);
    tk_type p = part_type(t);
    ir_push(L->C, v, lw_cast(L, re, p));
    ir_push(L->C, v, lw_cast(L, im, p));
    L->C->uses_complex = 1;
    return v;
}

tk_ir *lw_complex_part(lw_state *L, tk_ir *z, int k, int line) {
    tk_ir *c = ir_new(L->C, IR_COMP, part_type(z->ty), line);
    ir_push(L->C, c, z);
    ir_push(L->C, c, ir_const_i(L->C, ty_value(TACK_I64), k, line));
    return c;
}

static tk_ir *zero_of(lw_state *L, tk_type t, int line) {
    return ty_is_float(t) ? ir_const_f(L->C, t, 0.0, line) : ir_const_i(L->C, t, 0, line);
}

/* The complex type a real value of type t becomes (cmath, complex()): a
 * Python number stays weak, f16/f32 give complex64, the rest complex128. */
static tk_type complex_for(tk_type t) {
    if (ty_is_complex(t)) return t;
    if (t.weak) return ty_weak(TACK_C128);
    return ty_value(ty_is_float(t) && dt_bits((tack_dtype)t.dt) <= 32 ? TACK_C64 : TACK_C128);
}

tk_ir *lw_complex_cast(lw_state *L, tk_ir *e, tk_type to) {
    if (ty_is_complex(to) && ty_is_complex(e->ty)) {
        if (e->op == IR_VEC) /* a pair (a literal): its parts convert, and constants fold */
            return lw_complex_make(L, to, e->k[0], e->k[1], e->line);
        tk_ir *c = ir_new(L->C, IR_CAST, to, e->line);
        return lw_kid(L, c, e);
    }
    if (ty_is_complex(to)) {
        if (!ty_is_scalar(e->ty)) return e; /* the caller reports */
        tk_ir *s = lw_hoist(L, e);
        tk_type p = ty_value(dt_complex_part((tack_dtype)to.dt));
        return lw_complex_make(L, to, s, zero_of(L, p, e->line), e->line);
    }
    if (to.kind == TY_VALUE && ty_is_bool(to)) {
        tk_ir *c = ir_new(L->C, IR_CAST, to, e->line);
        return lw_kid(L, c, e);
    }
    if (to.kind == TY_VALUE && ty_is_scalar(to))
        tk_error(L->C, L->fidx, e->line, 0,
                 "cannot convert %s to %s: the imaginary part would be lost (Python's float() and int() of a "
                 "complex raise TypeError); use z.real, z.imag or abs(z)",
                 ty_name(&L->C->arena, e->ty), ty_name(&L->C->arena, to));
    return e;
}

tk_ir *lw_complex_binop(lw_state *L, tack_op op, tk_ir *x, tk_ir *y, tack_node *n) {
    tk_type t = ty_promote(x->ty, y->ty);
    if (t.kind == TY_UNKNOWN)
        ERR(n, "unsupported operand types for %s: %s and %s (complex numbers do not mix with vectors or matrices)",
            lw_op_symbol(op), TN(x->ty), TN(y->ty));
    int b;
    switch (op) {
    case TACK_OP_ADD: b = B_ADD; break;
    case TACK_OP_SUB: b = B_SUB; break;
    case TACK_OP_MUL: b = B_MUL; break;
    case TACK_OP_DIV: b = B_DIV; break;
    case TACK_OP_POW: ERR(n, "** of complex numbers is not supported in kernels; multiply, or use cmath.exp and cmath.log");
    default:
        ERR(n, "unsupported operand types for %s: %s and %s (Python and NumPy define no %s on complex numbers)",
            lw_op_symbol(op), TN(x->ty), TN(y->ty), lw_op_symbol(op));
    }
    L->C->uses_complex = 1;
    return lw_bin(L, b, t, lw_cast(L, x, t), lw_cast(L, y, t), n->line);
}

tk_ir *lw_complex_compare(lw_state *L, tack_op op, tk_ir *x, tk_ir *y, tack_node *n) {
    if (op != TACK_OP_EQ && op != TACK_OP_NE)
        ERR(n, "'%s' is not supported between %s and %s: complex numbers have no order (Python raises "
               "TypeError); compare abs(z), z.real or z.imag", lw_op_symbol(op), TN(x->ty), TN(y->ty));
    tk_type t = ty_promote(x->ty, y->ty);
    if (t.kind == TY_UNKNOWN)
        ERR(n, "comparison %s is not supported between %s and %s", lw_op_symbol(op), TN(x->ty), TN(y->ty));
    tk_ir *e = lw_bin(L, op == TACK_OP_EQ ? B_EQ : B_NE, ty_value(TACK_BOOL), lw_cast(L, x, t), lw_cast(L, y, t), n->line);
    e->aux_ty = t;
    return e;
}

/* abs(z): the modulus, hypot(re, im), in the part type. */
tk_ir *lw_complex_abs(lw_state *L, tk_ir *z, tack_node *n) {
    tk_ir *u = lw_mk(L, IR_UN, part_type(z->ty), n);
    u->sub = U_ABS;
    return lw_kid(L, u, z);
}

/* exp, sqrt, log of a complex value (its type). */
tk_ir *lw_complex_math(lw_state *L, int m, tk_ir *z, tack_node *n) {
    if (m != M_EXP && m != M_SQRT && m != M_LOG)
        ERR(n, "%s() of a complex number is not supported in kernels (exp, sqrt, log and abs are)", tk_math_name(m));
    tk_ir *e = lw_mk(L, IR_MATH, z->ty, n);
    e->sub = (uint8_t)m;
    e->aux_ty = z->ty;
    return lw_kid(L, e, z);
}

static tk_ir *arg(lw_state *L, tack_node *n, int i) {
    if (i >= n->nkids) ERR(n, "%s() takes %d argument%s", n->name, i + 1, i ? "s" : "");
    return lw_expr(L, n->kids[i]);
}

static void one_arg(lw_state *L, tack_node *n) {
    if (n->nkids != 1) ERR(n, "%s() takes exactly one argument (%d given)", n->name, n->nkids);
}

static tk_ir *scalar_arg(lw_state *L, tack_node *n, int i) {
    tk_ir *a = arg(L, n, i);
    if (lw_known(a) && (a->ty.kind != TY_VALUE || !ty_is_scalar(a->ty)))
        ERR(n, "%s() takes numbers, not %s", n->name, TN(a->ty));
    return a;
}

/* complex(re[, im]): the complex of the promoted float type of the parts. */
static tk_ir *complex_ctor(lw_state *L, tack_node *n) {
    if (n->nkids < 1 || n->nkids > 2) ERR(n, "complex() takes one or two arguments in kernels (%d given)", n->nkids);
    tk_ir *re = scalar_arg(L, n, 0), *im = n->nkids == 2 ? scalar_arg(L, n, 1) : NULL;
    if (!lw_known(re) || (im && !lw_known(im))) return lw_unknown(L, n);
    if (ty_is_complex(re->ty) || (im && ty_is_complex(im->ty))) {
        if (!im) return re;
        ERR(n, "complex() of complex parts is not supported in kernels; write re + im * 1j");
    }
    tk_type t = im ? ty_promote(re->ty, im->ty) : re->ty;
    t = complex_for(t);
    re = lw_hoist(L, re);
    tk_ir *z = lw_complex_make(L, t, re, im ? lw_hoist(L, im) : zero_of(L, ty_value(dt_complex_part((tack_dtype)t.dt)), n->line), n->line);
    return z;
}

/* The calls that are about complex numbers, by the front end's name: complex(),
 * conjugate (z.conjugate(), np.conj), np.real / np.imag, cmath.*; NULL when
 * `name` is none of them. */
tk_ir *lw_complex_call(lw_state *L, const char *name, tack_node *n) {
    if (!strcmp(name, "complex")) return complex_ctor(L, n);
    int conj = !strcmp(name, "conjugate") || !strcmp(name, "numpy.conjugate");
    int real = !strcmp(name, "numpy.real"), imag = !strcmp(name, "numpy.imag");
    if (conj || real || imag) {
        one_arg(L, n);
        tk_ir *z = scalar_arg(L, n, 0);
        if (!lw_known(z)) return lw_unknown(L, n);
        if (!ty_is_complex(z->ty)) { /* NumPy's: a real number is its own conjugate and real part */
            if (imag) return zero_of(L, z->ty, n->line);
            return z;
        }
        z = lw_hoist(L, z);
        if (real || imag) return lw_complex_part(L, z, imag, n->line);
        tk_ir *im = lw_complex_part(L, z, 1, n->line);
        tk_ir *u = lw_mk(L, IR_UN, im->ty, n);
        u->sub = U_NEG;
        return lw_complex_make(L, z->ty, lw_complex_part(L, z, 0, n->line), lw_kid(L, u, im), n->line);
    }
    if (!strncmp(name, "cmath.", 6)) {
        const char *f = name + 6;
        int m = !strcmp(f, "exp") ? M_EXP : !strcmp(f, "sqrt") ? M_SQRT : !strcmp(f, "log") ? M_LOG : -1;
        if (m < 0 && strcmp(f, "phase"))
            ERR(n, "cmath.%s is not supported in kernels (cmath.exp, sqrt, log and phase are)", f);
        one_arg(L, n);
        tk_ir *z = scalar_arg(L, n, 0);
        if (!lw_known(z)) return lw_unknown(L, n);
        z = lw_cast(L, z, complex_for(z->ty));
        if (m >= 0) return lw_complex_math(L, m, z, n);
        z = lw_hoist(L, z); /* phase: atan2(im, re) */
        tk_ir *e = lw_mk(L, IR_MATH, part_type(z->ty), n);
        e->sub = M_ATAN2;
        e->aux_ty = ty_value(dt_complex_part((tack_dtype)z->ty.dt));
        ir_push(L->C, e, lw_cast(L, lw_complex_part(L, z, 1, n->line), e->aux_ty));
        ir_push(L->C, e, lw_cast(L, lw_complex_part(L, z, 0, n->line), e->aux_ty));
        if (!z->ty.weak) e->ty = e->aux_ty; /* of a Python complex a weak float, as abs(z) and z.real */
        return e;
    }
    return NULL;
}
