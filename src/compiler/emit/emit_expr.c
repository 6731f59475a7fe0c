/*
 * emit_expr.c -- typed IR expressions to C-family source.
 *
 * em_expr writes one expression the same way for every dialect: what the
 * dialect changes (C type names, math functions, the spelling of float
 * specials and of vector helpers) is asked of its tk_dialect, never decided
 * by its name.  Statements (emit_stmt.c) and the layouts call it through
 * the ex() short name of emit.h.
 *
 * The C compiler must not be handed undefined behaviour that the Python
 * semantics do not have, so integer arithmetic is emitted without it:
 * signed + - * go through unsigned arithmetic, shifts mask their count, and
 * division and modulo call the prelude's helpers, which define
 * INT_MIN // -1 and never divide by zero.  Float-to-int conversions
 * saturate (NaN gives 0) instead of being UB.  Nor a fold the compiler
 * gets wrong: GCC 12 rewrites a float `0.0 - y` as `-y` where it can tell y
 * is never -0.0 (an integer converted, a bool, fabs), so `0.0 - n` with n =
 * 0 gave -0.0 and `1.0 / (0.0 - n)` -inf; a subtraction from the constant
 * +0.0 is written `y == 0 ? 0.0 : 0.0 - y`, the same value for every y.
 *
 * An array element's offset is written where the C compiler can see its
 * structure: Horner's form for a contiguous array, each index times its
 * axis's element stride for a strided view, and, for an index with a small
 * constant offset, base plus constant (split_index, which explains the
 * measured reason).  em_flat_index and em_local_index are shared with the
 * statements, whose stores and histogram adds index the same way.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compiler/compiler.h"
#include "compiler/emit/emit.h"

static void emit_const(tk_emitter *e, tk_ir *x) {
    int dt = x->ty.dt;
    if (x->ty.kind != TY_VALUE) {
        P(e, "0");
        return;
    }
    if (is_float_dt(dt)) {
        double v = x->c.f;
        int f32 = dt == TACK_F32;
        const char *const *sp = e->D->float_specials;
        if (isnan(v)) P(e, "%s", sp ? sp[f32 ? 0 : 1] : f32 ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")");
        else if (isinf(v)) P(e, "%s%s", v < 0 ? "-" : "", sp ? sp[f32 ? 2 : 3] : f32 ? "__builtin_inff()" : "__builtin_inf()");
        else if (f32 && e->D->decimal_floats) P(e, "%.8ef", (double)(float)v);
        else if (f32) P(e, "%af", (double)(float)v);
        else P(e, "%a", v);
        return;
    }
    if (dt == TACK_BOOL) {
        P(e, "%d", x->c.i != 0);
        return;
    }
    const char *ll = e->D->long_is_64 ? "L" : "LL";
    if (dt == TACK_U64) {
        P(e, "((uint64_t)%lluU%s)", (unsigned long long)x->c.u, ll);
        return;
    }
    if (x->c.i == INT64_MIN) P(e, "((%s)(-9223372036854775807%s-1))", ctype(e, dt), ll);
    else if (dt == TACK_I64) P(e, "((int64_t)%lld%s)", (long long)x->c.i, ll);
    else P(e, "((%s)%lld%s)", ctype(e, dt), (long long)x->c.i, ll);
}

/* An index `b + c` or `b - c` with a small constant c: b and c; else the index and 0. */
enum { SPLIT_MAX = 64 };
static tk_ir *split_offset(tk_ir *x, int64_t *c) {
    *c = 0;
    tk_ir *whole = x;
    while (x->op == IR_CAST && x->k[0]->ty.kind == TY_VALUE && x->k[0]->ty.dt == TACK_I64) x = x->k[0]; /* weak int -> i64 */
    if (x->op != IR_BIN || (x->sub != B_ADD && x->sub != B_SUB) || !ty_is_int(x->ty) || x->ty.dt != TACK_I64) return whole;
    tk_ir *a = x->k[0], *b = x->k[1];
    if (ir_is_const(b) && b->c.i >= -SPLIT_MAX && b->c.i <= SPLIT_MAX) {
        *c = x->sub == B_ADD ? b->c.i : -b->c.i;
        return a;
    }
    if (x->sub == B_ADD && ir_is_const(a) && a->c.i >= -SPLIT_MAX && a->c.i <= SPLIT_MAX) {
        *c = a->c.i;
        return b;
    }
    return whole;
}

/* The flat offset of element (i0, ..., i{n-1}) of array p: i0 * t0 + ... + i{n-1},
 * with t_k the product of the extents after axis k.  Neighbour accesses of a
 * stencil, a[i + 1, j, k - 1], are written base + constant: every access of
 * the body then shares one row base (i * t0 + j * t1 + k), and the constants'
 * offsets are loop invariants -- written as Horner's ((i + 1) * s1 + j) * s2
 * + (k - 1), each access is its own polynomial, whose per-row products the C
 * compiler keeps in as many registers (7-point stencil at 40^3, one core,
 * 38-element rows: 1.5x the time of the hand-written loop before).  The
 * indices are in bounds (checked, or proven), so no product overflows. */
static void split_index(tk_emitter *e, tk_ir *x, int first) {
    int nd = x->n - first, p = x->param;
    int64_t c[TACK_MAX_NDIM];
    tk_ir *b[TACK_MAX_NDIM];
    for (int k = 0; k < nd; k++) b[k] = split_offset(x->k[first + k], &c[k]);
    for (int k = 0; k < nd; k++) {
        if (k) P(e, " + ");
        P(e, "(");
        ex(e, b[k]);
        P(e, ")");
        for (int m = k + 1; m < nd; m++) P(e, " * a%d_s%d", p, m);
    }
    P(e, " + (");
    for (int k = 0, any = 0; k < nd; k++) {
        if (!c[k]) continue;
        if (any++) P(e, " + ");
        P(e, "%lld", (long long)c[k]);
        for (int m = k + 1; m < nd; m++) P(e, " * a%d_s%d", p, m);
    }
    P(e, ")");
}

static int splits(tk_ir *x, int first) {
    int nd = x->n - first, any = 0;
    if (nd < 2 || nd > TACK_MAX_NDIM) return 0;
    for (int k = 0; k < nd; k++) {
        int64_t c;
        split_offset(x->k[first + k], &c);
        any |= c != 0;
    }
    return any;
}

void em_flat_index(tk_emitter *e, tk_ir *x, int first) {
    int nd = x->n - first;
    int p = x->param;
    if (e->S->ptypes[p].strided) { /* a strided view: each index times its axis's element stride */
        for (int k = 0; k < nd; k++) {
            P(e, "%s(", k ? " + " : "");
            ex(e, x->k[first + k]);
            P(e, ") * a%d_t%d", p, k);
        }
        if (nd == 0) P(e, "0");
        return;
    }
    if (e->C->opts.optimize && splits(x, first)) {
        split_index(e, x, first);
        return;
    }
    for (int k = 0; k < nd - 1; k++) P(e, "(");
    for (int k = 0; k < nd; k++) {
        if (k > 0) P(e, " * a%d_s%d + ", p, k);
        P(e, "(");
        ex(e, x->k[first + k]);
        P(e, ")");
        if (k > 0) P(e, ")");
    }
    if (nd == 0) P(e, "0");
}

/* The row-major index of x's indices from k[first] into local array x->local. */
void em_local_index(tk_emitter *e, tk_ir *x, int first) {
    const tk_local *l = &e->S->locals[x->local];
    int nd = x->n - first;
    for (int k = 0; k < nd - 1; k++) P(e, "(");
    for (int k = 0; k < nd; k++) {
        if (k > 0) P(e, " * %lld + ", (long long)l->ashape[k]);
        P(e, "(");
        ex(e, x->k[first + k]);
        P(e, ")");
        if (k > 0) P(e, ")");
    }
}

#define vname(dt) ctype(e, (dt))

/* Whether x is the constant +0.0 (or 0), through conversions. */
static int plus_zero_const(const tk_ir *x) {
    while (x->op == IR_CAST && x->n == 1) x = x->k[0];
    if (x->op != IR_CONST || x->str || x->ty.kind != TY_VALUE) return 0;
    if (dt_kind((tack_dtype)x->ty.dt) == TACK_KIND_FLOAT) return x->c.f == 0 && !signbit(x->c.f);
    return dt_kind((tack_dtype)x->ty.dt) != TACK_KIND_COMPLEX && x->c.i == 0;
}

/* log2 of x when x is an integer constant 2^k (0 < k < 63), else 0. */
static int pow2_const(const tk_ir *x) {
    if (x->op != IR_CONST || x->str || x->ty.kind != TY_VALUE || dt_kind((tack_dtype)x->ty.dt) == TACK_KIND_FLOAT ||
        dt_kind((tack_dtype)x->ty.dt) == TACK_KIND_COMPLEX || x->c.i < 2 || (x->c.i & (x->c.i - 1)))
        return 0;
    return __builtin_ctzll((unsigned long long)x->c.i);
}

static void emit_bin(tk_emitter *e, tk_ir *x) {
    int b = x->sub;
    tk_type t = (b >= B_EQ && b <= B_GE) ? x->aux_ty : x->ty;
    tk_ir *a = x->k[0], *c = x->k[1];
    int dt = t.dt;
    if (ty_is_complex(t)) { em_complex_bin(e, x); return; }
    if (b == B_MATMUL) {
        P(e, "tk_mm_%s_%s(", vname(a->ty.dt), vname(c->ty.dt));
        ex(e, a); P(e, ", "); ex(e, c); P(e, ")");
        return;
    }
    if (b == B_DOT || b == B_CROSS) {
        P(e, "tk_%s_%s(", b == B_DOT ? "dot" : "cross", vname(a->ty.dt));
        ex(e, a); P(e, ", "); ex(e, c); P(e, ")");
        return;
    }
    if (!ty_is_scalar(t)) {
        static const char *nm[] = {[B_ADD] = "add", [B_SUB] = "sub", [B_MUL] = "mul", [B_DIV] = "div"};
        P(e, "tk_%s_%s(", nm[b], vname(dt));
        ex(e, a); P(e, ", "); ex(e, c); P(e, ")");
        return;
    }
    const char *T = ctype(e, dt);
    static const char *sym[B_COUNT] = {[B_ADD] = "+", [B_SUB] = "-", [B_MUL] = "*", [B_DIV] = "/", [B_AND] = "&",
                                       [B_OR] = "|", [B_XOR] = "^", [B_EQ] = "==", [B_NE] = "!=", [B_LT] = "<",
                                       [B_LE] = "<=", [B_GT] = ">", [B_GE] = ">="};
    if (b >= B_EQ && b <= B_GE) {
        P(e, "(("); ex(e, a); P(e, ") %s (", sym[b]); ex(e, c); P(e, "))");
        return;
    }
    if (b == B_MIN || b == B_MAX) {
        P(e, "(("); ex(e, c); P(e, ") %s (", b == B_MIN ? "<" : ">"); ex(e, a); P(e, ") ? (");
        ex(e, c); P(e, ") : ("); ex(e, a); P(e, "))");
        return;
    }
    if (is_float_dt(dt)) {
        const char *sfx = dt == TACK_F32 ? "f32" : "f64";
        switch (b) {
        case B_ADD: case B_SUB: case B_MUL: case B_DIV:
            if (b == B_SUB && plus_zero_const(a)) {
                /* 0.0 - y is +0.0 for y = +0.0, but GCC 12 folds it to -y wherever it can tell y is
                 * never -0.0 (an integer or a bool converted, fabs), which gives -0.0: written
                 * y == 0 ? 0.0 : 0.0 - y, the same value for every y, which GCC leaves as it is */
                P(e, "((("); ex(e, c); P(e, ") == 0) ? ("); ex(e, a); P(e, ") : (("); ex(e, a); P(e, ") - (");
                ex(e, c); P(e, ")))");
                return;
            }
            P(e, "(("); ex(e, a); P(e, ") %s (", sym[b]); ex(e, c); P(e, "))");
            return;
        case B_FLOORDIV: case B_MOD: case B_POW:
            if (b == B_POW) P(e, "%s(", e->D->math(M_POW, (tack_dtype)dt));
            else P(e, "tk_py%s_%s(", b == B_FLOORDIV ? "fdiv" : "mod", sfx);
            ex(e, a); P(e, ", "); ex(e, c); P(e, ")");
            return;
        }
    }
    const char *U = ut(dt);
    int bits = dt_bits((tack_dtype)dt);
    switch (b) {
    case B_ADD: case B_SUB: case B_MUL:
        if (x->aux == TK_BIN_NOWRAP && b != B_MUL && dt == TACK_I64) { /* nests.c: cannot wrap */
            P(e, "(("); ex(e, a); P(e, ") %s (", sym[b]); ex(e, c); P(e, "))");
            return;
        }
        if (dt == TACK_BOOL) { P(e, "(("); ex(e, a); P(e, ") %s (", sym[b]); ex(e, c); P(e, "))"); return; }
        P(e, "((%s)((%s)(", T, U); ex(e, a); P(e, ") %s (%s)(", sym[b], U); ex(e, c); P(e, ")))");
        return;
    case B_FLOORDIV: case B_MOD:
        if (is_signed(dt) && pow2_const(c)) {
            /* by 2^k: Python's floor division is the arithmetic shift, its modulo the low k bits
             * (two's complement, every dialect); tk_fdiv_i64's exact steps cost a binary
             * search's `(lo + hi) // 2` a quarter of its time (docs/performance.md) */
            P(e, "((%s)((int64_t)(", T); ex(e, a);
            if (b == B_FLOORDIV) P(e, ") >> %d))", pow2_const(c));
            else P(e, ") & (((int64_t)1 << %d) - (int64_t)1)))", pow2_const(c));
            return;
        }
        if (is_signed(dt)) P(e, "((%s)tk_%s_i64((int64_t)(", T, b == B_FLOORDIV ? "fdiv" : "mod");
        else P(e, "((%s)tk_%s_u64((uint64_t)(", T, b == B_FLOORDIV ? "fdiv" : "mod");
        ex(e, a); P(e, "), (%s)(", is_signed(dt) ? "int64_t" : "uint64_t"); ex(e, c); P(e, ")))");
        return;
    case B_POW:
        if (is_signed(dt)) P(e, "((%s)tk_ipow_i64((int64_t)(", T);
        else P(e, "((%s)tk_ipow_u64((uint64_t)(", T);
        ex(e, a); P(e, "), (%s)(", is_signed(dt) ? "int64_t" : "uint64_t"); ex(e, c); P(e, ")))");
        return;
    case B_SHL: case B_SHR: { /* NumPy's: a count >= the width shifts everything out (tk_shl32 ...) */
        int w = bits <= 32 ? 32 : 64;
        const char *fn = b == B_SHL ? "shl" : is_signed(dt) ? "sar" : "shr";
        P(e, "((%s)tk_%s%d((%s)(", T, fn, w, b == B_SHR && is_signed(dt) ? (w == 32 ? "int32_t" : "int64_t") : U);
        ex(e, a); P(e, "), (%s)(", U); ex(e, c); P(e, ")))");
        return;
    }
    case B_AND: case B_OR: case B_XOR:
        P(e, "((%s)((", T); ex(e, a); P(e, ") %s (", sym[b]); ex(e, c); P(e, ")))");
        return;
    }
    P(e, "0 /* bad binop */");
}

/* A conversion: saturating from float to int, a test against zero to bool. */
static void emit_cast(tk_emitter *e, tk_ir *x) {
    tk_ir *s = x->k[0];
    int to = x->ty.dt, from = s->ty.dt;
    if (to == from) { ex(e, s); return; }
    if (ty_is_complex(x->ty) || ty_is_complex(s->ty)) { em_complex_cast(e, x); return; }
    if (to == TACK_BOOL) { P(e, "(("); ex(e, s); P(e, ") != 0)"); return; }
    if (is_float_dt(from) && !is_float_dt(to)) {
        P(e, "((%s)tk_f2%s((%s)(", ctype(e, to), is_signed(to) ? "i64" : "u64", e->D->wide_float ? e->D->wide_float : "double");
        ex(e, s);
        P(e, ")))");
        return;
    }
    P(e, "((%s)(", ctype(e, to)); ex(e, s); P(e, "))");
}

/* A unary operation; integer negation wraps (through unsigned). */
static void emit_un(tk_emitter *e, tk_ir *x) {
    tk_ir *a = x->k[0];
    int dt = x->ty.dt;
    if (ty_is_complex(a->ty)) { em_complex_un(e, x); return; }
    switch (x->sub) {
    case U_NEG:
        if (!ty_is_scalar(x->ty)) { P(e, "tk_neg_%s(", vname(dt)); ex(e, a); P(e, ")"); }
        else if (is_float_dt(dt)) { P(e, "(-("); ex(e, a); P(e, "))"); }
        else { P(e, "((%s)((%s)0 - (%s)(", ctype(e, dt), ut(dt), ut(dt)); ex(e, a); P(e, ")))"); }
        return;
    case U_NOT: P(e, "(!("); ex(e, a); P(e, "))"); return;
    case U_INVERT: P(e, "((%s)~(", ctype(e, dt)); ex(e, a); P(e, "))"); return;
    case U_ABS:
        if (!is_signed(dt)) { ex(e, a); return; }
        P(e, "(("); ex(e, a); P(e, ") < 0 ? (%s)((%s)0 - (%s)(", ctype(e, dt), ut(dt), ut(dt)); ex(e, a); P(e, ")) : (");
        ex(e, a); P(e, "))");
        return;
    case U_TRUTH: P(e, "(("); ex(e, a); P(e, ") != 0)"); return;
    }
}

/* A math function, a trip count, or a fast division (strength.c) in the
 * version of its loop being written (e->fastv). */
static void emit_math(tk_emitter *e, tk_ir *x) {
    int m = x->sub;
    if (ty_is_complex(x->aux_ty)) { em_complex_math(e, x); return; }
    if (m == M_FDIVQ || m == M_MODQ) { /* the flag is known inside the loop's two versions */
        if (e->fastv == DIV_SEGMENTED && x->n == 6) { /* in a segment: i // d is q, i % d is o + k_ */
            if (m == M_FDIVQ) { ex(e, x->k[4]); return; }
            P(e, "((int64_t)(sr%d_ + k_))", x->k[4]->local);
            return;
        }
        P(e, "tk_%sq_i64(", m == M_FDIVQ ? "fdiv" : "mod");
        for (int i = 0; i < 3; i++) { ex(e, x->k[i]); P(e, ", "); }
        if (e->fastv != DIV_NONE) P(e, "%d)", e->fastv != DIV_EXACT);
        else { ex(e, x->k[3]); P(e, ")"); }
        return;
    }
    if (m == M_PMOD) { /* periodic.c: in the loop's interior var + c, elsewhere the remainder */
        if (e->per == PER_INTERIOR && x->aux) {
            P(e, "((%s)(", ctype(e, x->ty.dt)); local_name(e, x->local); P(e, " + (%lldLL)))", (long long)x->c.i);
        } else ex(e, x->k[0]);
        return;
    }
    if (m == M_GEMM) { /* gemm.c's call: [m, n, K, A off, rs, cs, alpha, B off, rs, cs, C off, rs, cs, beta, B packed,
                        * epilogue alpha, epilogue beta] */
        int ab[3] = {x->aux, (int)(x->c.i & 0xffffffff), x->param};
        P(e, "tk_gemm_%s(", x->aux_ty.dt == TACK_F32 ? "f32" : "f64");
        for (int i = 0; i < 3; i++) { ex(e, x->k[i]); P(e, ", "); }
        static const int at[3] = {3, 7, 10};
        for (int o = 0; o < 3; o++) {
            P(e, "a%d + (", ab[o]); ex(e, x->k[at[o]]); P(e, "), "); ex(e, x->k[at[o] + 1]); P(e, ", "); ex(e, x->k[at[o] + 2]); P(e, ", ");
            if (o == 0) { P(e, "%d, ", (int)(x->c.i >> 32 & 1)); ex(e, x->k[6]); P(e, ", "); }
        }
        P(e, "%d, ", (int)(x->c.i >> 33 & 3)); ex(e, x->k[13]); P(e, ", %d, ", (int)(x->c.i >> 35 & 1)); ex(e, x->k[14]);
        P(e, ", %d, ", (int)(x->c.i >> 36 & 7)); ex(e, x->k[15]); P(e, ", "); ex(e, x->k[16]); P(e, ")");
        return;
    }
    if (m == M_GEMM_PACK) { /* [n, K, B off, rs, cs] */
        P(e, "tk_gemm_%s_packb(", x->aux_ty.dt == TACK_F32 ? "f32" : "f64");
        ex(e, x->k[0]); P(e, ", "); ex(e, x->k[1]); P(e, ", a%d + (", x->param); ex(e, x->k[2]); P(e, "), ");
        ex(e, x->k[3]); P(e, ", "); ex(e, x->k[4]); P(e, ")");
        return;
    }
    if (m == M_GEMM_FREE) { P(e, "tk_gemm_free("); ex(e, x->k[0]); P(e, ")"); return; }
    if (m == M_DISJOINT) { /* two arrays' elements, [base, base + count) each, do not overlap */
        int ab[2] = {x->param, x->aux};
        P(e, "(");
        for (int s = 0; s < 2; s++) {
            int p = ab[s], q = ab[1 - s];
            P(e, "%s(uintptr_t)(a%d + (", s ? " || " : "", p);
            for (int d = 0; d < e->S->ptypes[p].ndim; d++) P(e, "%sa%d_s%d", d ? " * " : "", p, d);
            P(e, ")) <= (uintptr_t)a%d", q);
        }
        P(e, ")");
        return;
    }
    if (m == M_TRIP) P(e, "tk_trip(");
    else if (m == M_LENGTH || m == M_NORMALIZE || (m >= M_TRANSPOSE && m <= M_QR3)) /* the vector preludes' */
        P(e, "tk_%s_%s(", tk_math_name(m), vname(x->aux_ty.dt));
    else if (m >= M_QSCALE && m <= M_XINV) P(e, "tk_%s_%s(", tk_math_name(m), vname(x->aux_ty.dt)); /* emit_quat.c */
    else if (tk_math_is_predicate(m)) P(e, "(0 != %s(", e->D->math(m, (tack_dtype)x->aux_ty.dt));
    else P(e, "%s(", e->D->math(m, (tack_dtype)x->aux_ty.dt));
    for (int i = 0; i < x->n; i++) {
        if (i) P(e, ", ");
        ex(e, x->k[i]);
    }
    P(e, tk_math_is_predicate(m) ? "))" : ")");
}

/* A vector or matrix value, row major. */
static void emit_vec(tk_emitter *e, tk_ir *x) {
    if (ty_is_complex(x->ty)) { em_complex_make(e, x); return; }
    int dt = x->ty.dt, r = dt_rows((tack_dtype)dt), c = dt_cols((tack_dtype)dt);
    P(e, e->D->cxx_literals ? "(%s{{" : "((%s){{", ctype(e, dt));
    for (int i = 0; i < r; i++) {
        if (c > 1) P(e, "%s{", i ? ", " : "");
        for (int j = 0; j < c; j++) {
            if (c == 1 && i) P(e, ", ");
            if (c > 1 && j) P(e, ", ");
            ex(e, x->k[i * c + j]);
        }
        if (c > 1) P(e, "}");
    }
    P(e, "}})");
}

/* The component an IR_STORE or IR_ATOMIC of array `param` writes alone (comp: k + 1; 0 writes the
 * whole element, and prints nothing): a vector's, a quaternion's or a transform's .v[k], a matrix's
 * .m[row][column] of the row-major k. */
void em_comp(tk_emitter *e, int param, int comp) {
    if (!comp) return;
    tack_dtype dt = (tack_dtype)e->S->ptypes[param].dt;
    if (dt_cols(dt) > 1) P(e, ".m[%d][%d]", (comp - 1) / dt_cols(dt), (comp - 1) % dt_cols(dt));
    else P(e, ".v[%d]", comp - 1);
}

/* A call of a @tack.func specialization: arrays go as pointer and extents. */
static void emit_call(tk_emitter *e, tk_ir *x) {
    if (em_race_call(e, x)) { /* check_races: the function's watched copy (race_watch.c) */
        P(e, "tk_w%d(ctx, abi", x->aux);
        em_race_call_args(e, x);
    } else {
        P(e, "tk_f%d(ctx, abi", x->aux);
    }
    for (int i = 0; i < x->n; i++) {
        tk_ir *a = x->k[i];
        if (a->op == IR_ARRAY) {
            P(e, ", a%d", a->param);
            for (int k = 0; k < a->ty.ndim; k++) P(e, ", a%d_s%d", a->param, k);
            for (int k = 0; a->ty.strided && k < a->ty.ndim; k++) P(e, ", a%d_t%d", a->param, k);
        } else if (a->op == IR_LARRAY) { /* a local array: its storage and constant extents */
            const tk_local *l = &e->S->locals[a->local];
            /* the cast drops the const of a pre-loop array read in the loop's CPU chunk
             * (emit_cpu.c); lowering refuses a callee that writes one there */
            P(e, ", (%s%s *)", e->D->thread_ptr ? e->D->thread_ptr : "", tk_local_elem_type(l, ctype(e, l->ty.dt)));
            local_name(e, a->local);
            for (int k = 0; k < l->ty.ndim; k++) P(e, ", (int64_t)%lld", (long long)l->ashape[k]);
        } else {
            P(e, ", ");
            ex(e, a);
        }
    }
    P(e, ")");
}

void em_expr(tk_emitter *e, tk_ir *x) {
    switch (x->op) {
    case IR_CONST: emit_const(e, x); return;
    case IR_LOCAL: local_name(e, x->local); return;
    case IR_CAST: emit_cast(e, x); return;
    case IR_BIN: emit_bin(e, x); return;
    case IR_UN: emit_un(e, x); return;
    case IR_AND:
    case IR_OR:
        if (ty_is_bool(x->ty)) {
            P(e, "(("); ex(e, x->k[0]); P(e, ") %s (", x->op == IR_AND ? "&&" : "||"); ex(e, x->k[1]); P(e, "))");
        } else {
            P(e, "(("); ex(e, x->k[0]); P(e, ") != 0 ? (");
            ex(e, x->op == IR_AND ? x->k[1] : x->k[0]); P(e, ") : (");
            ex(e, x->op == IR_AND ? x->k[0] : x->k[1]); P(e, "))");
        }
        return;
    case IR_SELECT:
        P(e, "(("); ex(e, x->k[0]); P(e, ") ? ("); ex(e, x->k[1]); P(e, ") : ("); ex(e, x->k[2]); P(e, "))");
        return;
    case IR_MATH: emit_math(e, x); return;
    case IR_LOAD: {
        int sdt = e->S->ptypes[x->param].dt;
        if (dt_is_half(sdt)) P(e, "%s(", dt_half_load(sdt));
        else if (sdt == TACK_BOOL) P(e, "(0 != ");
        int rs = em_race_site(e, x); /* check_races: the access records itself (race_watch.c) */
        P(e, "a%d[", x->param);
        em_race_open(e, rs);
        em_flat_index(e, x, 0);
        em_race_close(e, rs);
        P(e, "]");
        if (dt_is_half(sdt) || sdt == TACK_BOOL) P(e, ")");
        return;
    }
    case IR_SHAPE: P(e, "a%d_s%d", x->param, x->aux); return;
    case IR_WRAP:
        P(e, "tk_wrap("); ex(e, x->k[0]);
        if (x->param < 0) P(e, ", (int64_t)%lld)", (long long)x->c.i); /* a local array's extent */
        else P(e, ", a%d_s%d)", x->param, x->aux);
        return;
    case IR_LLOAD: {
        int ldt = e->S->locals[x->local].ty.dt, h = dt_is_half(ldt); /* its bits, widened */
        if (h) P(e, "%s(", dt_half_load(ldt));
        local_name(e, x->local);
        P(e, "[");
        em_local_index(e, x, 0);
        P(e, "]");
        if (h) P(e, ")");
        return;
    }
    case IR_VEC: emit_vec(e, x); return;
    case IR_COMP:
        P(e, "(");
        ex(e, x->k[0]);
        if (x->k[0]->ty.kind == TY_TUPLE || x->k[0]->ty.kind == TY_MULTI) { /* a tuple: field k, a constant */
            P(e, ").f%lld", (long long)x->k[1]->c.i);
        } else if (x->n == 3) {
            P(e, ").m[");
            ex(e, x->k[1]);
            P(e, "][");
            ex(e, x->k[2]);
            P(e, "]");
        } else {
            P(e, ").v[");
            ex(e, x->k[1]);
            P(e, "]");
        }
        return;
    case IR_CALL: emit_call(e, x); return;
    case IR_ATOMIC: { /* tk_atomic_<op>_<T>(&element, value), and (&element, expected, value) for cas */
        int rs = em_race_site(e, x);
        P(e, "tk_atomic_%s_%s(&a%d[", tk_atom_name(x->sub), ctype(e, x->ty.dt), x->param);
        em_race_open(e, rs);
        em_flat_index(e, x, ir_atomic_first(x));
        em_race_close(e, rs);
        P(e, "]");
        em_comp(e, x->param, x->comp);
        P(e, ", ");
        if (x->sub == A_CAS) {
            ex(e, x->k[1]);
            P(e, ", ");
        }
        ex(e, x->k[0]);
        P(e, ")");
        return;
    }
    case IR_WARP: /* tk_warp_<op>(v[, lane or delta, width]): the dialect's prelude (dialect_cuda.c) */
        P(e, "tk_warp_%s(", tk_warp_name(x->sub));
        ex(e, x->k[0]);
        if (x->n > 1) {
            P(e, ", ");
            ex(e, x->k[1]);
            P(e, ", %d", (int)x->c.i);
        }
        P(e, ")");
        return;
    default: P(e, "0 /* bad expression %d */", x->op); return;
    }
}

