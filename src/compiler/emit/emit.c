/*
 * emit.c -- typed IR to C-family source: expressions, statements, functions.
 *
 * One emitter serves every C-like target; what differs between targets is
 * behind a tk_dialect (compiler.h): the prelude (types and helper
 * functions), the names of C types and math functions, how symbols are
 * exported, and how the kernel is laid out.  This file writes what is the
 * same everywhere -- expressions, statements, and the @tack.func
 * specializations -- and assembles the file:
 *
 *   a comment                naming the kernel, its file and line, and the dialect
 *   prelude                  the dialect's types and helpers
 *   kernel_decls             what the layout declares ahead of the functions
 *                            (the CPU's frame struct; most dialects: nothing)
 *   static tk_fN(...)        one function per @tack.func specialization the
 *                            kernel reaches, after their prototypes
 *   the kernel               the dialect's `kernel` hook
 *
 * The layouts are the dialects' own: the CPU's (emit_cpu.c) runs parallel
 * loops as chunk functions through the runtime's parallel_for, CUDA's
 * (dialect_cuda.c) as phases on a grid.  A layout writes through the
 * services at the end of this file (tk_emitter_*), so expressions and
 * statements come out exactly as for every other target; HIP, Metal and
 * OpenCL will add tables and layouts, not branches here.  The CPU layout
 * also shares the emitter's state through emit.h, because its versions of a
 * loop change how a few expressions come out (the modes there).
 *
 * Integer arithmetic is emitted without undefined behaviour: signed + - *
 * go through unsigned arithmetic, shifts mask their count, division and
 * modulo call helpers that define INT_MIN // -1 and never divide by zero.
 * Float-to-int conversions saturate (NaN gives 0) instead of being UB.
 * Serial loops poll (a target with `polls`: the CPU): each function keeps a
 * budget tk_bud_, starting empty, that its loops spend one unit an
 * iteration; when it runs out the loop asks abi->poll(ctx) whether the
 * launch must stop (Ctrl-C, interrupt.c) and leaves like a failed check if
 * so.  A `for` loop is strip-mined -- an outer loop over strips of up to
 * TK_STRIP iterations pays for each strip at once, and the inner loop is
 * the loop as before, so the C compiler vectorizes it as before (a `break`
 * leaves both, by a goto); a `while` loop pays an iteration at a time (its
 * trip count is unknown; it never ran in vector lanes).  Inside SIMD lanes
 * (nopoll: emit_cpu.c) nothing may leave early, and loops do not poll;
 * emit_cpu.c lets only loops of bounded length run there.
 *
 * A failing check calls abi->fail(ctx, site, a, b) and leaves the function
 * being written (returning tk_zero from a function with a value); after a
 * call to a @tack.func that can fail (may_fail.c) the code tests the
 * dialect's TK_CALL_FAILED and leaves too.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compiler/compiler.h"
#include "compiler/emit/emit.h"

/* The most IR nodes in the body of an innermost loop that gets a plain copy
 * beside its strips, unless that copy runs in SIMD lanes (emit_for). */
#define TK_PLAIN_BODY_MAX 300

void em_printf(tk_emitter *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tk_vprintf(e->b, fmt, ap);
    va_end(ap);
}
void em_indent(tk_emitter *e) {
    for (int i = 0; i < e->ind; i++) tk_puts(e->b, "    ");
}

/* A local's C name: v<index>[_<name>] (ASCII names only), then a copy's suffix in an unrolled loop. */
void em_local_name(tk_emitter *e, int loc) {
    const char *n = e->S->locals[loc].name;
    const char *lane = e->lane && e->S == e->K && e->S->locals[loc].scope == e->lane_scope &&
                               !(e->lane_keep && e->lane_keep[loc]) ? e->lane : "";
    P(e, "v%d", loc);
    int ascii = n != NULL;
    for (const char *c = n; ascii && *c; c++)
        ascii = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_';
    if (ascii) P(e, "_%s", n[0] == '_' ? n + 1 : n);
    P(e, "%s", lane);
}

/* Text from the user's Python (a function's name, a file path) inside a C
 * comment: printable ASCII is kept, except that "*" + "/" and "/" + "*" are
 * broken with a space so the comment can neither end nor nest; anything
 * else (control characters, bytes of non-ASCII names) is written as \ooo.
 * Nothing the user names can become code. */
void em_comment_text(tk_emitter *e, const char *s) {
    if (!s) s = "?";
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c < 32 || *c >= 127) P(e, "\\%03o", *c);
        else if ((*c == '*' && c[1] == '/') || (*c == '/' && c[1] == '*')) P(e, "%c ", *c);
        else P(e, "%c", *c);
    }
}

/* --------------------------------------------------------- expressions */
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

static void flat_index(tk_emitter *e, tk_ir *x, int first) {
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
static void local_index(tk_emitter *e, tk_ir *x, int first) {
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
        flat_index(e, x, 0);
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
        local_index(e, x, 0);
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
        flat_index(e, x, ir_atomic_first(x));
        em_race_close(e, rs);
        P(e, "], ");
        if (x->sub == A_CAS) {
            ex(e, x->k[1]);
            P(e, ", ");
        }
        ex(e, x->k[0]);
        P(e, ")");
        return;
    }
    default: P(e, "0 /* bad expression %d */", x->op); return;
    }
}

/* ----------------------------------------------------------- statements */
static int returns_value(const tk_spec *S) { return S->ret.kind == TY_VALUE || S->ret.kind == TY_TUPLE; }

static void ret_fail(tk_emitter *e) {
    if (e->bbody && e->S == e->K && e->blabel >= 0) P(e, "goto tk_b%d_;", e->blabel); /* a blocks loop's body */
    else if (e->fn == TK_FN_DEVICE && returns_value(e->S)) P(e, "return tk_zero;");
    else P(e, "return;");
}

static int holds_barrier(const tk_ir *s) {
    if (s->op == IR_BARRIER) return 1;
    if (s->op != IR_BLOCK && s->op != IR_IF && s->op != IR_WHILE && s->op != IR_FOR) return 0;
    for (int i = 0; i < s->n; i++)
        if (holds_barrier(s->k[i])) return 1;
    return 0;
}

/* A list of a blocks loop's body that holds barriers: each stretch up to a barrier (or the
 * list's end) ends at a label of its own, where a failed check in it goes on. */
static void barrier_list(tk_emitter *e, tk_ir *b) {
    int saved = e->blabel;
    e->blabel = e->nblabel++;
    for (int i = 0; i < b->n; i++) {
        tk_ir *x = b->k[i];
        if (x->op == IR_BARRIER || holds_barrier(x)) {
            I(e); P(e, "tk_b%d_: ;\n", e->blabel);
            e->blabel = e->nblabel++;
        }
        st(e, x);
    }
    I(e); P(e, "tk_b%d_: ;\n", e->blabel);
    e->blabel = saved;
}

void em_block(tk_emitter *e, tk_ir *b) {
    if (b->str) { I(e); P(e, "/* %s */\n", b->str); } /* a pass's note (nests.c): the compiler's own text */
    if (e->bbody && e->S == e->K && (b == e->bbody || holds_barrier(b))) {
        barrier_list(e, b);
        return;
    }
    for (int i = 0; i < b->n; i++) st(e, b->k[i]);
}

/* After a call that can fail (may_fail.c), leave when it did: TK_CALL_FAILED
 * is the dialect's (a GPU's reads the thread's own flag, not the record). */
static void after_call(tk_emitter *e, tk_ir *v) {
    if (v->op == IR_CALL && e->C->opts.checks && (e->mayfail[v->aux] || em_race_call(e, v))) {
        I(e);
        P(e, "if (TK_CALL_FAILED(ctx, abi)) ");
        ret_fail(e);
        P(e, "\n");
    }
}

/* The condition under which check `s` fails. */
void em_check_fails(tk_emitter *e, tk_ir *s) {
    switch (s->sub) {
    case CK_INDEX:
        if (s->local == CKI_RANGE) { /* a hoisted range: lo < hi and hi beyond the bound */
            P(e, "("); ex(e, s->k[0]); P(e, ") < ("); ex(e, s->k[1]); P(e, ") && ("); ex(e, s->k[1]);
            P(e, ") > ("); ex(e, s->k[2]); P(e, ")");
        } else if (s->local == CKI_NONNEG) { /* no negative indices */
            P(e, "(uint64_t)("); ex(e, s->k[0]); P(e, ") >= (uint64_t)("); ex(e, s->k[1]); P(e, ")");
        } else { /* -n <= k < n as one unsigned compare: k + n wraps above 2n when k < -n */
            P(e, "(uint64_t)("); ex(e, s->k[0]); P(e, ") + (uint64_t)("); ex(e, s->k[1]);
            P(e, ") >= 2 * (uint64_t)("); ex(e, s->k[1]); P(e, ")");
        }
        return;
    case CK_COMP:
        P(e, "(uint64_t)("); ex(e, s->k[0]); P(e, ") >= (uint64_t)("); ex(e, s->k[1]); P(e, ")");
        return;
    case CK_ZERODIV: case CK_STEP:
        P(e, "("); ex(e, s->k[0]); P(e, ") == 0");
        return;
    case CK_NEGPOW:
        P(e, "("); ex(e, s->k[0]); P(e, ") < 0");
        return;
    case CK_ASSERT: case CK_UNBOUND:
        P(e, "!("); ex(e, s->k[0]); P(e, ")");
        return;
    }
}

static int polling(const tk_emitter *e) { return e->T->polls && !e->nopoll; }

void em_poll_budget(tk_emitter *e) {
    if (!e->T->polls) return;
    I(e); P(e, "int64_t tk_bud_ = 0; (void)tk_bud_;\n");
}

/* Whether a `break` in x leaves the loop x belongs to (not one nested in it). */
static int breaks_out(const tk_ir *x) {
    if (x->op == IR_BREAK) return 1;
    if (x->op == IR_FOR || x->op == IR_WHILE || x->op == IR_PFOR) return 0;
    for (int i = 0; i < x->n; i++)
        if (breaks_out(x->k[i])) return 1;
    return 0;
}

/* Whether x holds a loop (a body with one is written once: see emit_for). */
static int has_loop(const tk_ir *x) {
    if (x->op == IR_FOR || x->op == IR_WHILE || x->op == IR_PFOR) return 1;
    for (int i = 0; i < x->n; i++)
        if (has_loop(x->k[i])) return 1;
    return 0;
}

/* Whether x has at most *left nodes, counting them off (the budgets of
 * emit_for and emit_cpu.c's histogram versions). */
int em_within(const tk_ir *x, int *left) {
    if (--*left < 0) return 0;
    for (int i = 0; i < x->n; i++)
        if (!em_within(x->k[i], left)) return 0;
    return 1;
}

/* The loop variable and body of serial loop s, counter k<c>. */
void em_for_body(tk_emitter *e, tk_ir *s, int c, int unit, int brk) {
    int saved_brk = e->brk;
    e->ind++;
    I(e); local_name(e, s->local);
    if (unit) P(e, " = k%d;\n", c);
    else P(e, " = (int64_t)((uint64_t)lo%d + (uint64_t)k%d * (uint64_t)st%d);\n", c, c, c);
    e->brk = brk ? c : -1;
    block(e, s->k[3]);
    e->brk = saved_brk;
    e->ind--;
    I(e); P(e, "}\n");
}

/* A serial loop over range(lo, hi, step): a counter from 0 to the trip count,
 * or from lo to hi when the step is 1; strip-mined when it polls.
 *
 * An innermost polling loop (no loop in its body) of at most one strip --
 * a row of a stencil, the taps of a filter -- runs as a plain loop after one
 * poll for all its iterations; the strips are the other copy of the body,
 * for longer trips.  GCC compiles the loop nested in the strip loop worse:
 * a 7-point stencil written with nested loops (38-element rows, f64, one
 * thread, the generated C alone, in alternation) ran 46-60 us strip-mined
 * and 41-50 us as a plain loop, the hand-written loop 39-50 us.
 *
 * The plain copy is the body once more, so it is written only where it is
 * measured to pay: a body of at most TK_PLAIN_BODY_MAX IR nodes (Cholesky's
 * 21-node row ran 1.25x slower strip-mined, softmax's 1.05x; the 21 cold
 * kernels' bodies are 14-274 nodes), or one whose plain copy runs in SIMD
 * lanes (a 27-point stencil row of 509 nodes: 1.08x slower strip-mined).  A
 * larger scalar body gains nothing from it (the adjoint of a bead chain,
 * bodies of 422-1203 nodes: 0.86x the time without), and there the
 * copy was a quarter of the C.  No other serial loop has a second copy
 * here: a nest grows by one copy of each small innermost body, never by a
 * factor per level. */
static void emit_for(tk_emitter *e, tk_ir *s) {
    int c = e->counter++;
    tk_ir *lo = s->k[0], *hi = s->k[1], *step = s->k[2];
    int unit = step->op == IR_CONST && step->c.i == 1, poll = polling(e) && s->sub == TK_FOR_POLLS;
    int brk = poll && breaks_out(s->k[3]);
    I(e); P(e, "{\n");
    e->ind++;
    I(e); P(e, "const int64_t lo%d = ", c); ex(e, lo); P(e, ", hi%d = ", c); ex(e, hi); P(e, ";\n");
    const char *from = "lo", *to = "hi";
    if (!unit) {
        I(e); P(e, "const int64_t st%d = ", c); ex(e, step); P(e, ", n%d = tk_trip(lo%d, hi%d, st%d);\n", c, c, c, c);
        from = NULL;
        to = "n";
    }
    int left = TK_PLAIN_BODY_MAX;
    if (poll && s->aux == 0 && !has_loop(s->k[3]) && (em_within(s->k[3], &left) || (from && em_lanes_ok(e, s)))) { /* one strip: a plain loop */
        if (from) {
            /* an empty loop goes to the other copy, which does nothing: OpenMP
             * leaves a lastprivate local undefined after no iterations */
            I(e); P(e, "if (hi%d > lo%d && (uint64_t)hi%d - (uint64_t)lo%d <= (uint64_t)TK_STRIP) {\n", c, c, c, c);
            e->ind++;
            I(e); P(e, "if (TK_POLL(hi%d - lo%d)) ", c, c); ret_fail(e); P(e, "\n");
            if (!em_plain_in_lanes(e, s, c)) {
                I(e); P(e, "for (int64_t k%d = lo%d; k%d < hi%d; k%d++) {\n", c, c, c, c, c);
                em_for_body(e, s, c, unit, 0);
            }
            e->ind--;
            I(e); P(e, "} else\n");
        } else {
            I(e); P(e, "if (n%d <= TK_STRIP) {\n", c);
            e->ind++;
            I(e); P(e, "if (n%d > 0 && TK_POLL(n%d)) ", c, c); ret_fail(e); P(e, "\n");
            I(e); P(e, "for (int64_t k%d = 0; k%d < n%d; k%d++) {\n", c, c, c, c);
            em_for_body(e, s, c, unit, 0);
            e->ind--;
            I(e); P(e, "} else\n");
        }
    }
    if (poll && s->aux > 0) { /* each iteration is this many units of work (nests.c): strips of TK_STRIP units */
        I(e); P(e, "const int64_t w%d = ", c); local_name(e, s->aux - 1); P(e, " > 0 ? "); local_name(e, s->aux - 1);
        P(e, " : 1, ws%d = TK_STRIP / w%d > 0 ? TK_STRIP / w%d : 1;\n", c, c, c);
    }
    if (poll) {
        if (from) { I(e); P(e, "for (int64_t s%d = %s%d, e%d; s%d < %s%d; s%d = e%d) {\n", c, from, c, c, c, to, c, c, c); }
        else { I(e); P(e, "for (int64_t s%d = 0, e%d; s%d < %s%d; s%d = e%d) {\n", c, c, c, to, c, c, c); }
        e->ind++;
        if (s->aux > 0) {
            I(e); P(e, "e%d = %s%d - s%d > ws%d ? s%d + ws%d : %s%d;\n", c, to, c, c, c, c, c, to, c);
            I(e); P(e, "if (TK_POLL((e%d - s%d) * w%d)) ", c, c, c); ret_fail(e); P(e, "\n");
        } else {
            I(e); P(e, "e%d = %s%d - s%d > TK_STRIP ? s%d + TK_STRIP : %s%d;\n", c, to, c, c, c, to, c);
            I(e); P(e, "if (TK_POLL(e%d - s%d)) ", c, c); ret_fail(e); P(e, "\n");
        }
        I(e); P(e, "for (int64_t k%d = s%d; k%d < e%d; k%d++) {\n", c, c, c, c, c);
    } else if (from) {
        if (s->sub == TK_FOR_IVDEP) { /* tile.c: the iterations are independent (the arrays tested disjoint) */
            P(e, "#if defined(__clang__)\n#pragma clang loop vectorize(assume_safety)\n#elif defined(__GNUC__)\n#pragma GCC ivdep\n#endif\n");
        }
        I(e); P(e, "for (int64_t k%d = lo%d; k%d < hi%d; k%d++) {\n", c, c, c, c, c);
    } else {
        I(e); P(e, "for (int64_t k%d = 0; k%d < n%d; k%d++) {\n", c, c, c, c);
    }
    em_for_body(e, s, c, unit, brk);
    if (poll) {
        e->ind--;
        I(e); P(e, "}\n");
        if (brk) { I(e); P(e, "tk_brk%d:;\n", c); }
    }
    e->ind--;
    I(e); P(e, "}\n");
}

/* A check: when it fails, abi->fail(ctx, site, a, b) and leave. */
static void emit_check(tk_emitter *e, tk_ir *s) {
    I(e); P(e, "if (__builtin_expect(");
    check_fails(e, s);
    P(e, ", 0)) { %s(ctx, %d, ", e->D->fail_fn ? e->D->fail_fn : "abi->fail", s->aux);
    switch (s->sub) {
    case CK_INDEX:
        if (s->local == CKI_RANGE) {
            P(e, "("); ex(e, s->k[0]); P(e, ") > ("); ex(e, s->k[2]); P(e, ") ? ("); ex(e, s->k[0]); P(e, ") : (");
            ex(e, s->k[2]); P(e, "), "); ex(e, s->k[2]); P(e, "); ");
        } else {
            ex(e, s->k[0]); P(e, ", "); ex(e, s->k[1]); P(e, "); ");
        }
        break;
    case CK_COMP:
        ex(e, s->k[0]); P(e, ", "); ex(e, s->k[1]); P(e, "); ");
        break;
    case CK_NEGPOW:
        P(e, "(int64_t)("); ex(e, s->k[0]); P(e, "), 0); ");
        break;
    default:
        P(e, "0, 0); ");
        break;
    }
    ret_fail(e);
    P(e, " }\n");
}

/* print(...): the values as tk_pv records, for abi->print. */
static void emit_print(tk_emitter *e, tk_ir *s) {
    if (e->D->print) {
        e->D->print(e, s);
        return;
    }
    I(e); P(e, "{ ");
    for (int i = 0; i < s->n; i++) /* a complex is read twice: once into a temporary */
        if (!s->k[i]->str && ty_is_complex(s->k[i]->ty)) {
            P(e, "const %s pz%d_ = ", e->D->ctype((tack_dtype)s->k[i]->ty.dt), i); ex(e, s->k[i]); P(e, "; ");
        }
    P(e, "tk_pv pv_[%d] = {", s->n ? s->n : 1);
    for (int i = 0; i < s->n; i++) {
        tk_ir *v = s->k[i];
        if (i) P(e, ", ");
        if (v->str) {
            P(e, "{0, 0, 0, 0, \"");
            for (const unsigned char *c = (const unsigned char *)v->str; *c; c++) {
                if (*c == '"' || *c == '\\' || *c == '?') P(e, "\\%c", *c); /* \? : no trigraphs */
                else if (*c < 32 || *c >= 127) P(e, "\\%03o", *c);
                else P(e, "%c", *c);
            }
            P(e, "\"}");
            continue;
        }
        int dt = v->ty.dt;
        if (ty_is_complex(v->ty)) P(e, "{%d, 0, 0, (double)pz%d_.v[0], 0, (double)pz%d_.v[1]}", dt == TACK_C64 ? 6 : 7, i, i);
        else if (dt == TACK_BOOL) { P(e, "{1, ("); ex(e, v); P(e, "), 0, 0, 0}"); }
        else if (is_float_dt(dt)) { P(e, "{%d, 0, 0, (double)(", dt == TACK_F32 ? 4 : 5); ex(e, v); P(e, "), 0}"); }
        else if (is_signed(dt)) { P(e, "{2, (int64_t)("); ex(e, v); P(e, "), 0, 0, 0}"); }
        else { P(e, "{3, 0, (uint64_t)("); ex(e, v); P(e, "), 0, 0}"); }
    }
    if (!s->n) P(e, "{0, 0, 0, 0, \"\"}");
    P(e, "}; abi->print(ctx, pv_, %d); }\n", s->n);
}

/* In the private-histogram version of a parallel loop (e->hist): an add or
 * sub into the chunk's private copy of the array, wrapping like the atomic it
 * replaces -- in the version that chooses per array (bit 63 of e->hist),
 * when this chunk keeps a copy of it (huN_), else the atomic. */
static void hist_add(tk_emitter *e, tk_ir *a) {
    int dt = a->ty.dt, h = a->param;
    const char *op = a->sub == A_SUB ? "-" : "+";
    if (e->hist >> 63 & 1) { I(e); P(e, "if (!hu%d_) (void)(", h); ex(e, a); P(e, ");\n"); }
    I(e); P(e, "%s{ const int64_t h_ = (int64_t)(", e->hist >> 63 & 1 ? "else " : "");
    if (a->n == 2 && a->k[1]->op == IR_WRAP && a->k[1]->param == a->param && e->C->opts.checks)
        ex(e, a->k[1]->k[0]); /* checked to lie in [-n, n): hpN_ has a cell for each */
    else
        flat_index(e, a, 1);
    P(e, "); hp%d_[h_] = ", h);
    if (is_float_dt(dt)) { P(e, "hp%d_[h_] %s (", h, op); ex(e, a->k[0]); P(e, "); }\n"); }
    else {
        P(e, "(%s)((%s)hp%d_[h_] %s (%s)(", ctype(e, dt), ut(dt), h, op, ut(dt));
        ex(e, a->k[0]);
        P(e, ")); }\n");
    }
}

void em_stmt(tk_emitter *e, tk_ir *s) {
    switch (s->op) {
    case IR_BLOCK: block(e, s); return;
    case IR_ASSIGN:
        I(e);
        /* a function's tuple: declared where the call assigns it (it is read
         * field by field right after, in the same block) */
        if (e->S->locals[s->local].ty.kind == TY_TUPLE) P(e, "const tk_tup%d ", ty_tuple_spec(e->S->locals[s->local].ty));
        if (e->S->locals[s->local].ty.kind == TY_MULTI) /* a decomposition's (prelude_linalg.c) */
            P(e, "const tk_%s_r_%s ", tk_math_name(e->S->locals[s->local].ty.ndim), vname(e->S->locals[s->local].ty.dt));
        local_name(e, s->local); P(e, " = "); ex(e, s->k[0]); P(e, ";\n");
        after_call(e, s->k[0]);
        return;
    case IR_EVAL:
        if (s->k[0]->op == IR_ATOMIC && s->k[0]->param < 63 && (e->hist >> s->k[0]->param & 1)) {
            hist_add(e, s->k[0]);
            return;
        }
        I(e); P(e, "(void)("); ex(e, s->k[0]); P(e, ");\n");
        after_call(e, s->k[0]);
        return;
    case IR_SETCOMP:
        I(e); local_name(e, s->local);
        if (s->n == 3) {
            P(e, ".m["); ex(e, s->k[0]); P(e, "]["); ex(e, s->k[1]); P(e, "] = "); ex(e, s->k[2]);
        } else {
            P(e, ".v["); ex(e, s->k[0]); P(e, "] = "); ex(e, s->k[1]);
        }
        P(e, ";\n");
        return;
    case IR_STORE: {
        int sdt = e->S->ptypes[s->param].dt;
        int rs = em_race_site(e, s);
        I(e);
        P(e, "a%d[", s->param);
        em_race_open(e, rs);
        flat_index(e, s, 1);
        em_race_close(e, rs);
        P(e, "] = ");
        if (dt_is_half(sdt)) P(e, "%s(", dt_half_store(sdt, s->k[0]->ty.dt == TACK_F64)); /* a float64: rounded once */
        else if (sdt == TACK_BOOL) P(e, "(uint8_t)(");
        ex(e, s->k[0]);
        if (dt_is_half(sdt) || sdt == TACK_BOOL) P(e, ")");
        P(e, ";\n");
        return;
    }
    case IR_LSTORE:
    case IR_LFILL: { /* an element, or (a local array's creation) every element; f16/bf16 rounded to its bits */
        int ldt = e->S->locals[s->local].ty.dt, h = dt_is_half(ldt);
        I(e);
        if (s->op == IR_LFILL) P(e, "for (int64_t l_ = 0; l_ < %lld; l_++) ", (long long)tk_local_elems(&e->S->locals[s->local]));
        local_name(e, s->local);
        if (s->op == IR_LFILL) P(e, "[l_] = ");
        else { P(e, "["); local_index(e, s, 1); P(e, "] = "); }
        if (h) P(e, "%s(", dt_half_store(ldt, s->k[0]->ty.dt == TACK_F64));
        ex(e, s->k[0]);
        P(e, h ? ");\n" : ";\n");
        return;
    }
    case IR_IF:
        I(e); P(e, "if ("); ex(e, s->k[0]); P(e, ") {\n");
        e->ind++; block(e, s->k[1]); e->ind--;
        if (s->k[2]->n) {
            I(e); P(e, "} else {\n");
            e->ind++; block(e, s->k[2]); e->ind--;
        }
        I(e); P(e, "}\n");
        return;
    case IR_WHILE: {
        int saved_brk = e->brk;
        I(e); P(e, "while ("); ex(e, s->k[0]); P(e, ") {\n");
        e->ind++;
        if (polling(e)) { I(e); P(e, "if (TK_POLL(1)) "); ret_fail(e); P(e, "\n"); }
        e->brk = -1;
        block(e, s->k[1]);
        e->brk = saved_brk;
        e->ind--;
        I(e); P(e, "}\n");
        return;
    }
    case IR_FOR: emit_for(e, s); return;
    case IR_PFOR: /* the layout's (parallel loops are at the kernel's top level) */
        if (e->pfor) e->pfor(e, s);
        else { I(e); P(e, "/* bad statement %d */\n", s->op); }
        return;
    case IR_BREAK:
        I(e);
        if (e->brk >= 0) P(e, "goto tk_brk%d;\n", e->brk);
        else P(e, "break;\n");
        return;
    case IR_CONTINUE: I(e); P(e, "continue;\n"); return;
    case IR_BARRIER: /* a grid's (the CPU splits its thread loop there instead: cpu/emit_blocks.c) */
        I(e); P(e, "%s\n", e->D->barrier ? e->D->barrier : "/* barrier */");
        return;
    case IR_RETURN:
        I(e);
        if (s->n && e->S->ret.kind == TY_TUPLE) {
            int si = ty_tuple_spec(e->S->ret);
            P(e, e->D->cxx_literals ? "return tk_tup%d{" : "return (tk_tup%d){", si);
            for (int i = 0; i < s->n; i++) {
                if (i) P(e, ", ");
                ex(e, s->k[i]);
            }
            P(e, "};\n");
        } else if (s->n) {
            P(e, "return "); ex(e, s->k[0]); P(e, ";\n");
        } else if (e->fn == TK_FN_DEVICE && returns_value(e->S)) {
            P(e, "return tk_zero;\n");
        } else {
            P(e, "return;\n");
        }
        return;
    case IR_CHECK: emit_check(e, s); return;
    case IR_PRINT: emit_print(e, s); return;
    default: I(e); P(e, "/* bad statement %d */\n", s->op); return;
    }
}

/* Declare the locals of one scope (frame: -1, a parallel loop: its id);
 * with `carried`, only those it marks (in 1) or does not mark (in 0). */
void em_declare_locals(tk_emitter *e, int scope, int skip_params, const char *carried, int in) {
    for (int i = 0; i < e->S->nlocals; i++) {
        tk_local *l = &e->S->locals[i];
        if (l->scope != scope || (skip_params && l->is_param) || l->shared) continue; /* shared: the block's */
        if (carried && !carried[i] != !in) continue;
        if (l->ty.kind == TY_ARRAY) { /* a local array: all its elements, row-major */
            int64_t n = tk_local_elems(l);
            I(e);
            P(e, "%s ", tk_local_elem_type(l, ctype(e, l->ty.dt)));
            local_name(e, i);
            P(e, "[%lld] = {0};\n", (long long)(n > 0 ? n : 1));
            continue;
        }
        if (l->ty.kind != TY_VALUE) continue;
        I(e);
        P(e, "%s ", ctype(e, l->ty.dt));
        local_name(e, i);
        P(e, " = {0};\n");
    }
}

/* ------------------------------------------------------------ functions */
static void mark_calls(tk_cc *C, tk_ir *x, char *reach) {
    if (!x) return;
    if (x->op == IR_CALL && !reach[x->aux]) {
        reach[x->aux] = 1;
        mark_calls(C, C->specs[x->aux]->body, reach);
    }
    for (int i = 0; i < x->n; i++) mark_calls(C, x->k[i], reach);
}

/* The C type a function returns. */
static const char *ret_type(tk_emitter *e, const tk_spec *S) {
    if (S->ret.kind == TY_TUPLE) return tk_fmt(&e->C->arena, "tk_tup%d", ty_tuple_spec(S->ret));
    return S->ret.kind == TY_VALUE ? ctype(e, S->ret.dt) : "void";
}

static void func_signature(tk_emitter *e, tk_spec *S, int si) {
    const char *th = e->D->thread_ptr ? e->D->thread_ptr : "";
    const char *qual = e->D->func_qual ? e->D->func_qual : "static";
    if (!e->D->func_qual && e->T->simd_pragma && e->C->opts.optimize && !e->rcf && em_lane_func(e->C, si))
        qual = "static inline __attribute__((always_inline))"; /* for SIMD lanes (emit_lanes.c, em_lane_func) */
    P(e, "%s %s tk_%c%d(%s, const %stk_abi *abi", qual, ret_type(e, S),
      e->rcf ? 'w' : 'f', si, e->D->ctx_param ? e->D->ctx_param : "tk_ctx *ctx", th);
    if (e->rcf) em_race_params(e, S); /* check_races: a watched copy (race_watch.c) */
    for (int p = 0; p < S->nparams; p++) {
        tk_type t = S->ptypes[p];
        if (t.kind == TY_ARRAY) {
            if (p < 64 && (S->plarr >> p & 1)) /* a local array: private (f16, bf16: its bits, as a parameter's) */
                P(e, ", %s%s *a%d", th, dt_is_half(t.dt) ? "uint16_t" : ctype(e, t.dt), p);
            else P(e, ", %s *a%d", e->D->storage_type((tack_dtype)t.dt), p);
            for (int k = 0; k < t.ndim; k++) P(e, ", int64_t a%d_s%d", p, k);
            for (int k = 0; t.strided && k < t.ndim; k++) P(e, ", int64_t a%d_t%d", p, k);
        } else {
            P(e, ", %s ", ctype(e, t.dt));
            local_name(e, S->plocal[p]);
        }
    }
    P(e, ")");
}

/* Whether spec si has a watched copy (race_watch.c): 0 or 1. */
static int watched_copy(const tk_cc *C, int si) { return C->rcspec && C->rcspec[si] ? 1 : 0; }

/* The body of @tack.func specialization si (e->rcf: its watched copy). */
static void function(tk_emitter *e, int si) {
    tk_cc *C = e->C;
    tk_spec *S = C->specs[si];
    e->S = S;
    e->si = si;
    e->fn = TK_FN_DEVICE;
    P(e, "\n/* ");
    comment_text(e, C->m->funcs[S->func].name);
    P(e, ", line %d%s */\n", C->m->funcs[S->func].first_line, e->rcf ? ", watched by the race detector" : "");
    func_signature(e, S, si);
    P(e, " {\n");
    e->ind = 1;
    I(e); P(e, "(void)ctx; (void)abi;\n");
    if (e->rcf) em_race_unused(e, S);
    poll_budget(e);
    if (returns_value(S)) { I(e); P(e, "const %s tk_zero = {0};\n", ret_type(e, S)); }
    declare_locals(e, -1, 1, NULL, 0);
    block(e, S->body);
    if (returns_value(S)) { I(e); P(e, "return tk_zero;\n"); }
    e->ind = 0;
    P(e, "}\n");
}

/* The @tack.func specializations reachable from kernel K into `funcs`: the
 * structs of the tuples they return, their prototypes, their bodies. */
static void functions(tk_emitter *e, tk_spec *K, tk_buf *funcs) {
    tk_cc *C = e->C;
    char *reach = tk_alloc(&C->arena, (size_t)C->nspecs + 1);
    mark_calls(C, K->body, reach);
    e->b = funcs;
    for (int si = 1; si < C->nspecs; si++) { /* the tuples functions return: a struct each */
        tk_spec *S = C->specs[si];
        if (!reach[si] || S->ret.kind != TY_TUPLE) continue;
        P(e, "typedef struct tk_tup%d {", si);
        for (int i = 0; i < S->nret; i++) P(e, " %s f%d;", ctype(e, S->rets[i].dt), i);
        P(e, " } tk_tup%d;\n", si);
    }
    /* each function, and after it its watched copy where a watched loop calls it (check_races) */
    for (int si = 1; si < C->nspecs; si++) {
        if (!reach[si]) continue;
        e->S = C->specs[si];
        for (e->rcf = 0; e->rcf <= watched_copy(C, si); e->rcf++) {
            func_signature(e, e->S, si);
            P(e, ";\n");
        }
    }
    e->rcf = 0;
    for (int si = 1; si < C->nspecs; si++) {
        if (!reach[si]) continue;
        for (e->rcf = 0; e->rcf <= watched_copy(C, si); e->rcf++) function(e, si);
    }
    e->rcf = 0;
}

const char *tk_emit(tk_cc *C) {
    tk_emitter ev;
    memset(&ev, 0, sizeof ev);
    tk_emitter *e = &ev;
    e->brk = -1;
    e->C = C;
    e->D = C->dialect;
    e->T = C->target;
    tk_buf out, funcs;
    tk_buf_init(&out, &C->arena);
    tk_buf_init(&funcs, &C->arena);
    tk_spec *K = C->specs[0];
    e->K = K;
    e->mayfail = tk_may_fail(C);
    tk_func *KF = &C->m->funcs[K->func];

    functions(e, K, &funcs);

    /* assemble: the prelude, the layout's declarations, the functions, the kernel */
    e->b = &out;
    P(e, "/* generated by tack %s for kernel ", TACK_VERSION_STRING);
    comment_text(e, KF->name);
    P(e, " (");
    comment_text(e, KF->filename);
    P(e, ":%d); dialect %s */\n", KF->first_line, e->T->name);
    if (C->opts.flush_denormals) /* in every cache key, since each hashes the source */
        P(e, "/* flush_denormals: subnormal floats flush to zero while it runs */\n");
    e->D->prelude(C, &out);
    e->S = K;
    e->si = 0;
    e->fn = TK_FN_ENTRY;
    e->ind = 0;
    if (e->D->kernel_decls) e->D->kernel_decls(e, &out);
    if (funcs.len) tk_puts(&out, funcs.s);
    P(e, "\n");
    e->D->kernel(e, &out);
    return out.s;
}

/* ------------------------------------------- services for dialect layouts */
tk_cc *tk_emitter_cc(tk_emitter *e) { return e->C; }
const char *tk_emitter_restrict(tk_emitter *e, int p, const char *restrict_kw) {
    const tk_cc *C = e->C;
    return C->args && p < C->nargs && C->args[p].is_array && C->args[p].distinct ? restrict_kw : "";
}
tk_spec *tk_emitter_kernel(tk_emitter *e) { return e->K; }
tk_buf *tk_emitter_target(tk_emitter *e, tk_buf *b, tk_emit_fn fn) {
    tk_buf *old = e->b;
    e->b = b;
    e->fn = fn;
    e->S = e->K;
    return old;
}
void tk_emitter_printf(tk_emitter *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tk_vprintf(e->b, fmt, ap);
    va_end(ap);
}
void tk_emitter_indent(tk_emitter *e) { I(e); }
void tk_emitter_nest(tk_emitter *e, int delta) { e->ind += delta; }
void tk_emitter_expr(tk_emitter *e, tk_ir *x) { ex(e, x); }
void tk_emitter_stmt(tk_emitter *e, tk_ir *s) { st(e, s); }
void tk_emitter_local(tk_emitter *e, int local) { local_name(e, local); }
void tk_emitter_declare_locals(tk_emitter *e, int scope, const char *mask, int in) {
    declare_locals(e, scope, 0, mask, in);
}
void tk_emitter_blocks_body(tk_emitter *e, const tk_ir *body) {
    e->bbody = body;
    e->blabel = -1;
}
void tk_emitter_lane(tk_emitter *e, const char *suffix, int scope, const char *keep) {
    e->lane = suffix;
    e->lane_scope = scope;
    e->lane_keep = keep;
}
