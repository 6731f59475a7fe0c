/*
 * emit.c -- typed IR to C-family source.
 *
 * One emitter serves every C-like target; what differs between targets is
 * behind a tk_dialect (compiler.h): the prelude (types and helper
 * functions), the names of C types and math functions, how symbols are
 * exported, and how parallel loops run.  The "c" dialect (dialect_c.c) is
 * the CPU's; "cuda" (dialect_cuda.c) lays the kernel out on a grid through
 * the dialect's `kernel` hook, using the services at the end of this file
 * to emit expressions and statements exactly as for the CPU.  HIP, Metal
 * and OpenCL will add tables, not branches.
 *
 * The shape of the generated C for the CPU:
 *
 *   prelude             stdint, tk_argv / tk_abi (mirroring cpu_jit.h), helpers
 *   struct tk_frame     the kernel's arrays and frame locals, shared with the
 *                       parallel-loop bodies
 *   static tk_fN(...)   one function per @tack.func specialization
 *   static tk_pforN     one function per parallel loop, running [lo, hi) of the
 *                       flattened index space with simple induction variables
 *   tack_entry          the kernel body: straight-line code between parallel
 *                       loops, and for each loop: fill the frame, call
 *                       abi->parallel_for, stop if a check failed
 *
 * Integer arithmetic is emitted without undefined behaviour: signed + - *
 * go through unsigned arithmetic, shifts mask their count, division and
 * modulo call helpers that define INT_MIN // -1 and never divide by zero.
 * Float-to-int conversions saturate (NaN gives 0) instead of being UB.
 * A failing check calls abi->fail(ctx, site, a, b) and returns; after a call
 * to a @tack.func and after each parallel loop the code tests ctx->failed.
 *
 * A parallel loop with fast divisions (strength.c's M_FDIVQ / M_MODQ) is
 * emitted in versions chosen once per chunk by its flags: segmented (index
 * quotients fixed per segment), fast (reciprocal estimate plus fix-up), and
 * exact (the helpers, in a cold function of its own) -- so each version's
 * loop is free of the branch and the fast ones vectorize.  The innermost
 * loop of a chunk runs its iterations in SIMD lanes (`#pragma omp simd`)
 * when nothing in the body can leave the loop early or collide.  A loop
 * with a histogram array (privatize.c) is emitted twice more over: adding
 * into a private copy on the chunk's stack when the array is small and the
 * chunk long, and with the atomics otherwise.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compiler/compiler.h"

typedef struct tk_emitter E;
struct tk_emitter {
    tk_cc *C;
    const tk_dialect *D;
    tk_buf *b;
    tk_spec *S;
    int si;
    int ind;
    int fn;          /* 0 entry, 1 parallel body, 2 device function */
    int counter;
    tk_buf pfors;    /* parallel bodies, emitted while walking the entry */
    int fastv;       /* in a version of a loop with fast divisions (strength.c): 1 fast, 2 exact, 3 segmented; else 0 */
    const char *rlo, *rhi; /* bounds of the innermost loop when it runs a block (else NULL) */
    int whole_row;   /* an ndrange chunk's copy for whole rows: the inner loop runs 0 .. inner_ */
    int exact;       /* emitting the cold function of a loop with fast divisions: its exact version only */
    int hist;        /* in the private-histogram version of a parallel loop: 1 + its array (privatize.c); else 0 */
    tk_spec *K;
};

static void ex(E *e, tk_ir *x);
static void st(E *e, tk_ir *s);

static const char *ctype(E *e, int dt) { return e->D->ctype((tack_dtype)dt); }
static void P(E *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void P(E *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tk_vprintf(e->b, fmt, ap);
    va_end(ap);
}
static void I(E *e) {
    for (int i = 0; i < e->ind; i++) tk_puts(e->b, "    ");
}

static const char *ut(int dt) { return dt_bits((tack_dtype)dt) <= 32 ? "uint32_t" : "uint64_t"; }
static int is_signed(int dt) { return dt_kind((tack_dtype)dt) == TACK_KIND_INT; }
static int is_float_dt(int dt) { return dt_kind((tack_dtype)dt) == TACK_KIND_FLOAT; }

/* A local's C name: v<index>[_<name>] (ASCII names only). */
static void local_name(E *e, int loc) {
    const char *n = e->S->locals[loc].name;
    P(e, "v%d", loc);
    if (!n) return;
    for (const char *c = n; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_')) return;
    P(e, "_%s", n[0] == '_' ? n + 1 : n);
}

/* --------------------------------------------------------- expressions */
static void emit_const(E *e, tk_ir *x) {
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
        else if (f32) P(e, "%af", (double)(float)v);
        else P(e, "%a", v);
        return;
    }
    if (dt == TACK_BOOL) {
        P(e, "%d", x->c.i != 0);
        return;
    }
    if (dt == TACK_U64) {
        P(e, "((uint64_t)%lluULL)", (unsigned long long)x->c.u);
        return;
    }
    if (x->c.i == INT64_MIN) P(e, "((%s)(-9223372036854775807LL-1))", ctype(e, dt));
    else if (dt == TACK_I64) P(e, "((int64_t)%lldLL)", (long long)x->c.i);
    else P(e, "((%s)%lldLL)", ctype(e, dt), (long long)x->c.i);
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
static void split_index(E *e, tk_ir *x, int first) {
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

static void flat_index(E *e, tk_ir *x, int first) {
    int nd = x->n - first;
    int p = x->param;
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

#define vname(dt) ctype(e, (dt))

static void emit_bin(E *e, tk_ir *x) {
    int b = x->sub;
    tk_type t = (b >= B_EQ && b <= B_GE) ? x->aux_ty : x->ty;
    tk_ir *a = x->k[0], *c = x->k[1];
    int dt = t.dt;
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
    case B_SHL:
        P(e, "((%s)((%s)(", T, U); ex(e, a); P(e, ") << ((%s)(", U); ex(e, c); P(e, ") & %du)))", bits - 1);
        return;
    case B_SHR:
        P(e, "((%s)((", T); ex(e, a); P(e, ") >> ((%s)(", U); ex(e, c); P(e, ") & %du)))", bits - 1);
        return;
    case B_AND: case B_OR: case B_XOR:
        P(e, "((%s)((", T); ex(e, a); P(e, ") %s (", sym[b]); ex(e, c); P(e, ")))");
        return;
    }
    P(e, "0 /* bad binop */");
}

static void ex(E *e, tk_ir *x) {
    switch (x->op) {
    case IR_CONST: emit_const(e, x); return;
    case IR_LOCAL: local_name(e, x->local); return;
    case IR_CAST: {
        tk_ir *s = x->k[0];
        int to = x->ty.dt, from = s->ty.dt;
        if (to == from) { ex(e, s); return; }
        if (to == TACK_BOOL) { P(e, "(("); ex(e, s); P(e, ") != 0)"); return; }
        if (is_float_dt(from) && !is_float_dt(to)) {
            P(e, "((%s)tk_f2%s((double)(", ctype(e, to), is_signed(to) ? "i64" : "u64");
            ex(e, s);
            P(e, ")))");
            return;
        }
        P(e, "((%s)(", ctype(e, to)); ex(e, s); P(e, "))");
        return;
    }
    case IR_BIN: emit_bin(e, x); return;
    case IR_UN: {
        tk_ir *a = x->k[0];
        int dt = x->ty.dt;
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
        return;
    }
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
    case IR_MATH: {
        int m = x->sub;
        if (m == M_FDIVQ || m == M_MODQ) { /* the flag is known inside the loop's two versions */
            if (e->fastv == 3 && x->n == 6) { /* in a segment: i // d is q, i % d is o + k_ */
                if (m == M_FDIVQ) { ex(e, x->k[4]); return; }
                P(e, "((int64_t)(sr%d_ + k_))", x->k[4]->local);
                return;
            }
            P(e, "tk_%sq_i64(", m == M_FDIVQ ? "fdiv" : "mod");
            for (int i = 0; i < 3; i++) { ex(e, x->k[i]); P(e, ", "); }
            if (e->fastv) P(e, "%d)", e->fastv != 2);
            else { ex(e, x->k[3]); P(e, ")"); }
            return;
        }
        if (m == M_TRIP) P(e, "tk_trip(");
        else if (m == M_LENGTH || m == M_NORMALIZE) P(e, "tk_%s_%s(", m == M_LENGTH ? "length" : "normalize", vname(x->aux_ty.dt));
        else if (m == M_ISNAN || m == M_ISINF || m == M_ISFINITE) P(e, "(0 != %s(", e->D->math(m, (tack_dtype)x->aux_ty.dt));
        else P(e, "%s(", e->D->math(m, (tack_dtype)x->aux_ty.dt));
        for (int i = 0; i < x->n; i++) {
            if (i) P(e, ", ");
            ex(e, x->k[i]);
        }
        P(e, (m == M_ISNAN || m == M_ISINF || m == M_ISFINITE) ? "))" : ")");
        return;
    }
    case IR_LOAD: {
        int sdt = e->S->ptypes[x->param].dt;
        if (sdt == TACK_F16) P(e, "tk_h2f(");
        else if (sdt == TACK_BOOL) P(e, "(0 != ");
        P(e, "a%d[", x->param);
        flat_index(e, x, 0);
        P(e, "]");
        if (sdt == TACK_F16 || sdt == TACK_BOOL) P(e, ")");
        return;
    }
    case IR_SHAPE: P(e, "a%d_s%d", x->param, x->aux); return;
    case IR_WRAP:
        P(e, "tk_wrap("); ex(e, x->k[0]); P(e, ", a%d_s%d)", x->param, x->aux);
        return;
    case IR_VEC: {
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
        return;
    }
    case IR_COMP:
        P(e, "(");
        ex(e, x->k[0]);
        if (x->k[0]->ty.kind == TY_TUPLE) { /* a function's tuple: field k, a constant */
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
    case IR_CALL: {
        P(e, "tk_f%d(ctx, abi", x->aux);
        for (int i = 0; i < x->n; i++) {
            tk_ir *a = x->k[i];
            if (a->op == IR_ARRAY) {
                P(e, ", a%d", a->param);
                for (int k = 0; k < a->ty.ndim; k++) P(e, ", a%d_s%d", a->param, k);
            } else {
                P(e, ", ");
                ex(e, a);
            }
        }
        P(e, ")");
        return;
    }
    case IR_ATOMIC: {
        static const char *nm[] = {"add", "sub", "min", "max"};
        P(e, "tk_atomic_%s_%s(&a%d[", nm[x->sub], ctype(e, x->ty.dt), x->param);
        flat_index(e, x, 1);
        P(e, "], ");
        ex(e, x->k[0]);
        P(e, ")");
        return;
    }
    default: P(e, "0 /* bad expression %d */", x->op); return;
    }
}

/* ----------------------------------------------------------- statements */
static int returns_value(const tk_spec *S) { return S->ret.kind == TY_VALUE || S->ret.kind == TY_TUPLE; }

static void ret_fail(E *e) {
    if (e->fn == 2 && returns_value(e->S)) P(e, "return tk_zero;");
    else P(e, "return;");
}

static void block(E *e, tk_ir *b) {
    for (int i = 0; i < b->n; i++) st(e, b->k[i]);
}

static void after_call(E *e, tk_ir *v) {
    if (v->op == IR_CALL && e->C->opts.checks) {
        I(e);
        P(e, "if (TK_FAILED(ctx)) ");
        ret_fail(e);
        P(e, "\n");
    }
}

static void emit_pfor(E *e, tk_ir *s);

/* The condition under which check `s` fails. */
static void check_fails(E *e, tk_ir *s) {
    switch (s->sub) {
    case CK_INDEX:
        if (s->local == 2) { /* a hoisted range: lo < hi and hi beyond the bound */
            P(e, "("); ex(e, s->k[0]); P(e, ") < ("); ex(e, s->k[1]); P(e, ") && ("); ex(e, s->k[1]);
            P(e, ") > ("); ex(e, s->k[2]); P(e, ")");
        } else if (s->local == 1) { /* no negative indices */
            P(e, "(uint64_t)("); ex(e, s->k[0]); P(e, ") >= (uint64_t)("); ex(e, s->k[1]); P(e, ")");
        } else { /* -n <= k < n as one unsigned compare: k + n wraps above 2n when k < -n */
            P(e, "(uint64_t)("); ex(e, s->k[0]); P(e, ") + (uint64_t)("); ex(e, s->k[1]);
            P(e, ") >= 2 * (uint64_t)("); ex(e, s->k[1]); P(e, ")");
        }
        return;
    case CK_COMP:
        P(e, "(uint64_t)("); ex(e, s->k[0]); P(e, ") >= (uint64_t)("); ex(e, s->k[1]); P(e, ")");
        return;
    case CK_ZERODIV:
        P(e, "("); ex(e, s->k[0]); P(e, ") == 0");
        return;
    case CK_NEGPOW:
        P(e, "("); ex(e, s->k[0]); P(e, ") < 0");
        return;
    case CK_ASSERT:
        P(e, "!("); ex(e, s->k[0]); P(e, ")");
        return;
    }
}

static void st(E *e, tk_ir *s) {
    switch (s->op) {
    case IR_BLOCK: block(e, s); return;
    case IR_ASSIGN:
        I(e);
        /* a function's tuple: declared where the call assigns it (it is read
         * field by field right after, in the same block) */
        if (e->S->locals[s->local].ty.kind == TY_TUPLE) P(e, "const tk_tup%d ", ty_tuple_spec(e->S->locals[s->local].ty));
        local_name(e, s->local); P(e, " = "); ex(e, s->k[0]); P(e, ";\n");
        after_call(e, s->k[0]);
        return;
    case IR_EVAL:
        if (e->hist && s->k[0]->op == IR_ATOMIC && s->k[0]->param == e->hist - 1) {
            /* an add/sub into the chunk's private copy, wrapping like the atomic */
            tk_ir *a = s->k[0];
            int dt = a->ty.dt;
            const char *op = a->sub == A_SUB ? "-" : "+";
            I(e); P(e, "{ const int64_t h_ = (int64_t)(");
            if (a->n == 2 && a->k[1]->op == IR_WRAP && a->k[1]->param == a->param && e->C->opts.checks)
                ex(e, a->k[1]->k[0]); /* checked to lie in [-n, n): hp_ has a cell for each */
            else
                flat_index(e, a, 1);
            P(e, "); hp_[h_] = ");
            if (is_float_dt(dt)) { P(e, "hp_[h_] %s (", op); ex(e, a->k[0]); P(e, "); }\n"); }
            else {
                P(e, "(%s)((%s)hp_[h_] %s (%s)(", ctype(e, dt), ut(dt), op, ut(dt));
                ex(e, a->k[0]);
                P(e, ")); }\n");
            }
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
        I(e);
        P(e, "a%d[", s->param);
        flat_index(e, s, 1);
        P(e, "] = ");
        if (sdt == TACK_F16) P(e, "tk_f2h(");
        else if (sdt == TACK_BOOL) P(e, "(uint8_t)(");
        ex(e, s->k[0]);
        if (sdt == TACK_F16 || sdt == TACK_BOOL) P(e, ")");
        P(e, ";\n");
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
    case IR_WHILE:
        I(e); P(e, "while ("); ex(e, s->k[0]); P(e, ") {\n");
        e->ind++; block(e, s->k[1]); e->ind--;
        I(e); P(e, "}\n");
        return;
    case IR_FOR: {
        int c = e->counter++;
        tk_ir *lo = s->k[0], *hi = s->k[1], *step = s->k[2];
        I(e); P(e, "{\n");
        e->ind++;
        I(e); P(e, "const int64_t lo%d = ", c); ex(e, lo); P(e, ", hi%d = ", c); ex(e, hi); P(e, ";\n");
        if (step->op == IR_CONST && step->c.i == 1) {
            I(e); P(e, "for (int64_t k%d = lo%d; k%d < hi%d; k%d++) {\n", c, c, c, c, c);
            e->ind++;
            I(e); local_name(e, s->local); P(e, " = k%d;\n", c);
        } else {
            I(e); P(e, "const int64_t st%d = ", c); ex(e, step); P(e, ", n%d = tk_trip(lo%d, hi%d, st%d);\n", c, c, c, c);
            I(e); P(e, "for (int64_t k%d = 0; k%d < n%d; k%d++) {\n", c, c, c, c);
            e->ind++;
            I(e); local_name(e, s->local);
            P(e, " = (int64_t)((uint64_t)lo%d + (uint64_t)k%d * (uint64_t)st%d);\n", c, c, c);
        }
        block(e, s->k[3]);
        e->ind--;
        I(e); P(e, "}\n");
        e->ind--;
        I(e); P(e, "}\n");
        return;
    }
    case IR_PFOR: emit_pfor(e, s); return;
    case IR_BREAK: I(e); P(e, "break;\n"); return;
    case IR_CONTINUE: I(e); P(e, "continue;\n"); return;
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
        } else if (e->fn == 2 && returns_value(e->S)) {
            P(e, "return tk_zero;\n");
        } else {
            P(e, "return;\n");
        }
        return;
    case IR_CHECK: {
        I(e); P(e, "if (__builtin_expect(");
        check_fails(e, s);
        P(e, ", 0)) { abi->fail(ctx, %d, ", s->aux);
        switch (s->sub) {
        case CK_INDEX:
            if (s->local == 2) {
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
        return;
    }
    case IR_PRINT: {
        I(e); P(e, "{ tk_pv pv_[%d] = {", s->n ? s->n : 1);
        for (int i = 0; i < s->n; i++) {
            tk_ir *v = s->k[i];
            if (i) P(e, ", ");
            if (v->str) {
                P(e, "{0, 0, 0, 0, \"");
                for (const unsigned char *c = (const unsigned char *)v->str; *c; c++) {
                    if (*c == '"' || *c == '\\') P(e, "\\%c", *c);
                    else if (*c < 32 || *c >= 127) P(e, "\\%03o", *c);
                    else P(e, "%c", *c);
                }
                P(e, "\"}");
                continue;
            }
            int dt = v->ty.dt;
            if (dt == TACK_BOOL) { P(e, "{1, ("); ex(e, v); P(e, "), 0, 0, 0}"); }
            else if (is_float_dt(dt)) { P(e, "{%d, 0, 0, (double)(", dt == TACK_F32 ? 4 : 5); ex(e, v); P(e, "), 0}"); }
            else if (is_signed(dt)) { P(e, "{2, (int64_t)("); ex(e, v); P(e, "), 0, 0, 0}"); }
            else { P(e, "{3, 0, (uint64_t)("); ex(e, v); P(e, "), 0, 0}"); }
        }
        if (!s->n) P(e, "{0, 0, 0, 0, \"\"}");
        P(e, "}; abi->print(ctx, pv_, %d); }\n", s->n);
        return;
    }
    default: I(e); P(e, "/* bad statement %d */\n", s->op); return;
    }
}

static void array_decls(E *e, tk_spec *S, const char *src) {
    for (int p = 0; p < S->nparams; p++) {
        tk_type t = S->ptypes[p];
        if (t.kind != TY_ARRAY) continue;
        I(e);
        P(e, "%s *a%d = ", e->D->storage_type((tack_dtype)t.dt), p);
        if (!strcmp(src, "args")) P(e, "(%s *)args[%d].data;\n", e->D->storage_type((tack_dtype)t.dt), p);
        else P(e, "%s->a%d;\n", src, p);
        for (int k = 0; k < t.ndim; k++) {
            I(e);
            if (!strcmp(src, "args")) P(e, "const int64_t a%d_s%d = args[%d].shape[%d];\n", p, k, p, k);
            else P(e, "const int64_t a%d_s%d = %s->a%d_s%d;\n", p, k, src, p, k);
        }
        I(e);
        P(e, "(void)a%d;\n", p);
    }
}

/* A body with loops or calls is worth spreading even over few iterations. */
static int heavy(const tk_ir *s) {
    if (s->op == IR_FOR || s->op == IR_WHILE || s->op == IR_CALL) return 1;
    for (int i = 0; i < s->n; i++)
        if (heavy(s->k[i])) return 1;
    return 0;
}

/* A rough cost of one iteration of a loop-free body: a unit per operation
 * and per scalar moved, sixteen per math function, eight per division, four per
 * atomic, each times its vector's lanes. */
static int64_t body_cost(const tk_ir *x) {
    int lanes = x->ty.kind == TY_VALUE ? dt_rows((tack_dtype)x->ty.dt) * dt_cols((tack_dtype)x->ty.dt) : 1;
    int64_t c = 0;
    switch (x->op) {
    case IR_LOAD: case IR_STORE: case IR_BIN: case IR_UN: case IR_CAST: case IR_SELECT: case IR_CHECK:
        c = x->op == IR_BIN && (x->sub == B_DIV || x->sub == B_FLOORDIV || x->sub == B_MOD) ? 8 : 1;
        break;
    case IR_MATH: c = x->sub == M_FDIVQ || x->sub == M_MODQ ? 2 : 16; break;
    case IR_ATOMIC: c = 4; break;
    default: break;
    }
    c *= lanes > 0 ? lanes : 1;
    for (int i = 0; i < x->n && c < 1000000; i++) c += body_cost(x->k[i]);
    return c;
}

/* The fewest iterations worth a fork-join (a few microseconds here): 32768
 * for a saxpy-sized body, down to 8192 for costlier ones (normalizing vec3: 9532);
 * two for a body with loops or calls. */
static int64_t min_parallel(const tk_ir *body) {
    if (heavy(body)) return 2;
    int64_t m = 524288 / (body_cost(body) + 1);
    return m < 8192 ? 8192 : m > 32768 ? 32768 : m;
}

/* ---- vector width
 *
 * With AVX-512 the C compiler vectorizes a chunk with 64-byte vectors,
 * which pays off for plain streams, stencils, reductions and conversions
 * (16 int32 lanes: the segment's i % d).  A body that moves vectors or
 * matrices through memory is the exception: an array of vec3 is
 * interleaved, and the shuffles that take its fields apart cost more at 64
 * bytes than the width gives (normalize, one core, both widths timed in
 * alternation in one process: 34.7 -> 22.2 us at 21845 elements, 603 -> 412
 * us at 349525, 14.8 -> 14.1 ms at 5.6M).  Such a loop's chunk function
 * carries TK_NARROW (the prelude: GCC's prefer-vector-width=256 on x86-64
 * with AVX-512; nothing elsewhere).  A 7-point stencil, timed the same way,
 * is faster at 32 bytes only at 16^3 (2.5 -> 2.1 us), level at 40^3 and
 * 4-9% slower from 100^3 up, so neighbour loads keep the full width. */
static int moves_vectors(const E *e, const tk_ir *x) {
    if (x->op == IR_LOAD || x->op == IR_STORE) {
        tack_dtype dt = (tack_dtype)e->S->ptypes[x->param].dt;
        if (dt_rows(dt) * dt_cols(dt) > 1) return 1;
    }
    for (int i = 0; i < x->n; i++)
        if (moves_vectors(e, x->k[i])) return 1;
    return 0;
}

/* A parallel loop's fast-division flag (kid 3 of its M_FDIVQ / M_MODQ) or its
 * segmentation flag (kid 5), if it has one (strength.c). */
static tk_ir *fast_flag(tk_ir *x, int kid) {
    if (x->op == IR_MATH && (x->sub == M_FDIVQ || x->sub == M_MODQ) && x->n > kid) return x->k[kid];
    for (int i = 0; i < x->n; i++) {
        tk_ir *f = fast_flag(x->k[i], kid);
        if (f) return f;
    }
    return NULL;
}

/* Each segment quotient q = index // d, once per q local (marks in `seen`). */
static void segment_heads(E *e, tk_ir *x, char *seen) {
    if (x->op == IR_MATH && (x->sub == M_FDIVQ || x->sub == M_MODQ) && x->n == 6 && !seen[x->k[4]->local]) {
        seen[x->k[4]->local] = 1;
        /* a segment starts inside q's run or on its next boundary: step q, divide only
         * at the chunk's start (or, never expected, when w_ is elsewhere) */
        I(e); P(e, "int32_t sr%d_; /* index %% d at the segment's start */\n", x->k[4]->local);
        I(e); P(e, "{ const int64_t d_ = "); ex(e, x->k[1]); P(e, ";\n");
        e->ind++;
        I(e); P(e, "const int64_t o_ = (int64_t)((uint64_t)w_ - (uint64_t)d_ * (uint64_t)"); ex(e, x->k[4]); P(e, ");\n");
        I(e); P(e, "if (o_ == d_ && s_ != lo_) "); ex(e, x->k[4]); P(e, "++;\n");
        I(e); P(e, "else if (s_ == lo_ || o_ < 0 || o_ >= d_) "); ex(e, x->k[4]); P(e, " = tk_fdiv_i64(w_, d_);\n");
        I(e); P(e, "const int64_t b_ = (int64_t)((uint64_t)s_ + (uint64_t)d_ * (uint64_t)("); ex(e, x->k[4]);
        P(e, " + 1) - (uint64_t)w_);\n");
        I(e); P(e, "if (b_ < e_) e_ = b_;\n");
        I(e); P(e, "sr%d_ = (int32_t)((uint64_t)w_ - (uint64_t)d_ * (uint64_t)", x->k[4]->local); ex(e, x->k[4]); P(e, ");\n");
        e->ind--;
        I(e); P(e, "}\n");
    }
    for (int i = 0; i < x->n; i++) segment_heads(e, x->k[i], seen);
}

/* Whether a parallel loop's body may run its iterations in SIMD lanes: it
 * cannot leave the loop early (no checks, returns, or breaks out of it), and
 * lanes cannot collide (no atomics, and not the private-histogram version,
 * whose counts two lanes could add into one cell).  Calls and prints are
 * left serial.  `depth` counts the serial loops around `x` inside the body. */
static int simd_body(const tk_ir *x, int depth) {
    switch (x->op) {
    case IR_CHECK: case IR_RETURN: case IR_PRINT: case IR_ATOMIC: case IR_CALL: return 0;
    case IR_BREAK: return depth > 0;
    case IR_FOR: case IR_WHILE: depth++; break;
    default: break;
    }
    for (int i = 0; i < x->n; i++)
        if (!simd_body(x->k[i], depth)) return 0;
    return 1;
}

/* A scalar type that OpenMP's reduction(+) clause takes. */
static int simd_scalar(int dt) {
    return dt != TACK_F16 && dt != TACK_BOOL && dt_scalar((tack_dtype)dt) == (tack_dtype)dt;
}

/* `#pragma omp simd` on the loop whose iterations are the parallel loop's:
 * they are independent by the language's definition, so the C compiler may
 * run them in vector lanes -- the outer-loop vectorization that makes an
 * n-body's per-body inner loop vector code without reassociating anything.
 * The chunk's private sums (privatize.c) get reduction(+): their order was
 * never specified (chunks combine atomically in any order), and partial
 * sums per lane make a long add chain vector code.  CPU dialect only. */
static int simd_ok(E *e, tk_ir *s) {
    if (!e->C->opts.optimize || strcmp(e->D->name, "c") || e->hist || e->exact || !simd_body(s->k[s->aux], 0)) return 0;
    for (int r = 0; s->red && r < s->red->n; r++)
        if (!simd_scalar(s->red->k[r]->ty.dt)) return 0;
    return 1;
}

static void simd_pragma(E *e, tk_ir *s) {
    I(e); P(e, "#pragma omp simd");
    for (int r = 0; s->red && r < s->red->n; r++) {
        P(e, r ? ", " : " reduction(+: ");
        local_name(e, s->red->k[r]->k[0]->local);
    }
    if (s->red && s->red->n) P(e, ")");
    P(e, "\n");
}

/* GCC vectorizes an outer loop only when the loops nested in it run at
 * least once: otherwise the guard that skips an empty inner loop is control
 * flow it refuses.  The serial loops at the top of the body with invariant
 * bounds and step 1 (an n-body's `for j in range(n)`) give the condition
 * `lo < hi` on which the chunk's loop is versioned (the other version, for
 * empty inner loops, is the same loop without the assumption). */
static int simd_guards(E *e, tk_ir *loop, tk_ir *body) {
    int n = 0;
    for (int i = 0; i < body->n; i++) {
        tk_ir *f = body->k[i];
        if (f->op == IR_BLOCK) { n += simd_guards(e, loop, f); continue; }
        if (f->op != IR_FOR || !ir_invariant(f->k[0], loop) || !ir_invariant(f->k[1], loop)) continue;
        if (f->k[2]->op != IR_CONST || f->k[2]->c.i != 1) continue;
        P(e, n ? " && (" : "(");
        ex(e, f->k[0]); P(e, ") < ("); ex(e, f->k[1]); P(e, ")");
        n++;
    }
    return n;
}

/* Mark the locals of a parallel loop whose values live across iterations:
 * the private sums, the segment quotients (strength.c), and the outer
 * indices of an ndrange; the rest are declared inside the loop body, so
 * each iteration (each SIMD lane) has its own. */
static void mark_carried(tk_ir *x, char *carried) {
    if (x->op == IR_MATH && (x->sub == M_FDIVQ || x->sub == M_MODQ) && x->n == 6) carried[x->k[4]->local] = 1;
    for (int i = 0; i < x->n; i++) mark_carried(x->k[i], carried);
}

static char *carried_locals(E *e, tk_ir *s) {
    char *c = tk_alloc(&e->C->arena, (size_t)e->S->nlocals + 1);
    memset(c, 0, (size_t)e->S->nlocals + 1);
    mark_carried(s->k[s->aux], c);
    for (int r = 0; s->red && r < s->red->n; r++) c[s->red->k[r]->k[0]->local] = 1;
    for (int d = 0; d + 1 < s->aux; d++) c[s->vars[d]] = 1;
    return c;
}

/* Declare the locals of one scope (frame: -1, a parallel loop: its id);
 * with `carried`, only those it marks (in 1) or does not mark (in 0). */
static void declare_locals(E *e, int scope, int skip_params, const char *carried, int in) {
    for (int i = 0; i < e->S->nlocals; i++) {
        tk_local *l = &e->S->locals[i];
        if (l->scope != scope || (skip_params && l->is_param) || l->ty.kind != TY_VALUE) continue;
        if (carried && !carried[i] != !in) continue;
        I(e);
        P(e, "%s ", ctype(e, l->ty.dt));
        local_name(e, i);
        P(e, " = {0};\n");
    }
}

/* An iteration's private locals and its index variable. */
static void iteration_head(E *e, tk_ir *s, const char *carried) {
    int nd = s->aux;
    declare_locals(e, e->S->locals[s->vars[0]].scope, 0, carried, 0);
    I(e); local_name(e, s->vars[nd - 1]);
    if (nd > 1) P(e, " = j_;\n");
    else if (s->off) { P(e, " = (int64_t)((uint64_t)i_ + (uint64_t)("); ex(e, s->off); P(e, "));\n"); }
    else P(e, " = i_;\n");
}

/* The innermost loop's variable and bounds: i_ over the chunk or the
 * segment (one dimension), j_ over the row (an ndrange), or a block of
 * either (e->rlo, e->rhi) when checks are verified ahead. */
static void inner_range(E *e, tk_ir *s, const char **v, const char **lo, const char **hi) {
    int nd = s->aux;
    *v = nd > 1 ? "j_" : "i_";
    *lo = e->rlo ? e->rlo : nd > 1 ? (e->whole_row ? "0" : "jb_") : e->fastv == 3 ? "s_" : "lo_";
    *hi = e->rhi ? e->rhi : nd > 1 ? (e->whole_row ? "inner_" : "je_") : e->fastv == 3 ? "e_" : "hi_";
}

/* The header of a loop of variable v over [lo, hi); in a segment (strength.c)
 * the loop counts k_ from lo - s_ in 32 bits, so that i % d (o + k_) and
 * what is computed from it take 32-bit lanes, and i_ follows from k_. */
static void loop_header(E *e, tk_ir *s, const char *v, const char *lo, const char *hi) {
    I(e);
    if (s->aux == 1 && e->fastv == 3) {
        P(e, "for (int32_t k_ = (int32_t)(%s - s_); k_ < (int32_t)(%s - s_); k_++) {\n", lo, hi);
        e->ind++;
        I(e); P(e, "const int64_t %s = s_ + k_;\n", v);
        e->ind--;
    } else {
        P(e, "for (int64_t %s = %s; %s < %s; %s++) {\n", v, lo, v, hi, v);
    }
}

/* The innermost loop of a chunk with the body; `simd` 1 with the pragma, 0 without. */
static void inner_loop(E *e, tk_ir *s, const char *carried, int simd) {
    int nd = s->aux;
    const char *v, *lo, *hi;
    inner_range(e, s, &v, &lo, &hi);
    if (simd) simd_pragma(e, s);
    loop_header(e, s, v, lo, hi);
    e->ind++;
    iteration_head(e, s, carried);
    block(e, s->k[nd]);
    e->ind--;
    I(e); P(e, "}\n");
}

/* The innermost loop, in SIMD lanes when the body allows (versioned on the
 * guards of its inner loops, when it has some). */
static void inner_versions(E *e, tk_ir *s, const char *carried) {
    if (!simd_ok(e, s)) { inner_loop(e, s, carried, 0); return; }
    size_t mark = e->b->len;
    I(e); P(e, "if (");
    if (!simd_guards(e, s, s->k[s->aux])) { /* nothing to assume */
        e->b->len = mark;
        inner_loop(e, s, carried, 1);
        return;
    }
    P(e, ") {\n");
    e->ind++; inner_loop(e, s, carried, 1); e->ind--;
    I(e); P(e, "} else {\n");
    e->ind++; inner_loop(e, s, carried, 0); e->ind--;
    I(e); P(e, "}\n");
}

/* ---- block verification of the checks at the top of a body
 *
 * A check that depends on data (`hist[keys[i]] += 1`, `out[i] = x[idx[i]]`)
 * cannot be hoisted out of the loop, and its early exit keeps the loop out
 * of SIMD lanes.  When the body begins with a prefix of such checks and of
 * assignments that only compute (no calls or atomics, loads only from arrays
 * the loop does not write, no private sums), the chunk runs in blocks: a
 * first pass over the block evaluates just the prefix and ORs the failure
 * conditions together -- vector code, reading what the main pass reads
 * again from L1 -- and when none fails the block runs with those checks
 * left out, in SIMD lanes; otherwise it runs with them, so the first
 * failing iteration reports as before.  Only done when the rest of the body
 * can run in lanes: a never-taken branch costs less than the first pass.
 * The loaded arrays are not written while the loop runs, so both passes see
 * the same values. */
enum { VBLOCK = 1024 };

static void arrays_written(const tk_ir *x, uint64_t *w) {
    if (x->op == IR_STORE || x->op == IR_ATOMIC) *w |= 1ull << (x->param & 63);
    if (x->op == IR_CALL) /* an array handed to a function may be written there */
        for (int i = 0; i < x->n; i++)
            if (x->k[i]->op == IR_ARRAY) *w |= 1ull << (x->k[i]->param & 63);
    for (int i = 0; i < x->n; i++) arrays_written(x->k[i], w);
}

/* No calls or atomics, and loads only from arrays not written (`loads`) or none. */
static int computes_only(const tk_ir *x, uint64_t written, int loads) {
    if (x->op == IR_CALL || x->op == IR_ATOMIC || x->op == IR_ARRAY) return 0;
    if (x->op == IR_LOAD && (!loads || x->param >= 64 || (written >> x->param & 1))) return 0;
    for (int i = 0; i < x->n; i++)
        if (!computes_only(x->k[i], written, loads)) return 0;
    return 1;
}

/* Swap the checks among the body's first n statements with empty blocks
 * (returning what was there) or, given that, put them back. */
static tk_ir **blank_checks(E *e, tk_ir *body, int n, tk_ir **saved) {
    if (saved) {
        memcpy(body->k, saved, sizeof(tk_ir *) * (size_t)n);
        return NULL;
    }
    saved = tk_alloc(&e->C->arena, sizeof(tk_ir *) * (size_t)n);
    memcpy(saved, body->k, sizeof(tk_ir *) * (size_t)n);
    tk_ir *none = ir_new(e->C, IR_BLOCK, ty_void(), body->line);
    for (int i = 0; i < n; i++)
        if (body->k[i]->op == IR_CHECK) body->k[i] = none;
    return saved;
}

/* The number of statements in the body's verifiable prefix, if it holds a check; else 0. */
static int verify_prefix(E *e, tk_ir *s, const char *carried) {
    tk_ir *body = s->k[s->aux];
    uint64_t written = 0;
    int n = 0, checks = 0;
    if (!e->C->opts.optimize || strcmp(e->D->name, "c") || e->exact) return 0;
    arrays_written(body, &written);
    for (; n < body->n; n++) { /* after a check, no loads: the first pass runs unguarded */
        tk_ir *x = body->k[n];
        if (x->op == IR_BLOCK && x->n == 0) continue; /* what a pass emptied */
        if (x->op == IR_CHECK && computes_only(x, written, !checks)) checks++;
        else if (x->op != IR_ASSIGN || carried[x->local] || !computes_only(x->k[0], written, !checks)) break;
    }
    while (n > 0 && body->k[n - 1]->op != IR_CHECK) n--; /* end at the last check */
    if (!checks) return 0;
    /* worth it when the rest can then run in SIMD lanes (a gather: 1.4-2.7x);
     * a branch that never goes costs less than the first pass otherwise */
    tk_ir **saved = blank_checks(e, body, n, NULL);
    int lanes = simd_ok(e, s);
    blank_checks(e, body, n, saved);
    return lanes ? n : 0;
}

static void verified_blocks(E *e, tk_ir *s, const char *carried, int np) {
    tk_ir *body = s->k[s->aux];
    const char *v, *lo, *hi;
    inner_range(e, s, &v, &lo, &hi);
    I(e); P(e, "/* tk: the prefix's checks verified a block at a time */\n");
    I(e); P(e, "for (int64_t b_ = %s, be_; b_ < %s; b_ = be_) {\n", lo, hi);
    e->ind++;
    I(e); P(e, "be_ = %s - b_ > %d ? b_ + %d : %s;\n", hi, VBLOCK, VBLOCK, hi);
    I(e); P(e, "int bad_ = 0;\n");
    I(e); P(e, "#pragma omp simd reduction(|: bad_)\n");
    loop_header(e, s, v, "b_", "be_");
    e->ind++;
    iteration_head(e, s, carried);
    for (int i = 0; i < np; i++) {
        tk_ir *x = body->k[i];
        if (x->op != IR_CHECK) { st(e, x); continue; }
        I(e); P(e, "bad_ |= ("); check_fails(e, x); P(e, ");\n");
    }
    e->ind--;
    I(e); P(e, "}\n");
    e->rlo = "b_";
    e->rhi = "be_";
    I(e); P(e, "if (__builtin_expect(!bad_, 1)) {\n");
    e->ind++;
    tk_ir **saved = blank_checks(e, body, np, NULL);
    inner_versions(e, s, carried);
    blank_checks(e, body, np, saved);
    e->ind--;
    I(e); P(e, "} else {\n");
    e->ind++;
    inner_loop(e, s, carried, 0);
    e->ind--;
    I(e); P(e, "}\n");
    e->rlo = e->rhi = NULL;
    e->ind--;
    I(e); P(e, "}\n");
}

/* The innermost loop, its checks verified a block ahead when the body's
 * prefix allows (np statements), else in SIMD lanes when it allows. */
static void innermost(E *e, tk_ir *s, const char *carried, int np) {
    if (np) verified_blocks(e, s, carried, np);
    else inner_versions(e, s, carried);
}

/* The chunk's loop over [lo_, hi_) of a parallel loop, with its body. */
static void pfor_loop(E *e, tk_ir *s) {
    int nd = s->aux;
    tk_ir *body = s->k[nd];
    char *carried = carried_locals(e, s);
    if (nd == 1 && e->fastv == 3) { /* segments where every index // d is one value */
        I(e); P(e, "for (int64_t s_ = lo_, e_; s_ < hi_; s_ = e_) {\n");
        e->ind++;
        I(e); P(e, "e_ = hi_;\n");
        I(e); P(e, "const int64_t w_ = (int64_t)((uint64_t)s_ + (uint64_t)(");
        if (s->off) ex(e, s->off);
        else P(e, "0");
        P(e, "));\n");
        segment_heads(e, body, tk_alloc(&e->C->arena, (size_t)e->S->nlocals + 1));
    }
    if (nd > 1) {
        I(e); P(e, "const int64_t inner_ = F->pn[%d];\n", nd - 1);
        I(e); P(e, "const int64_t o0_ = lo_ / inner_, o1_ = (hi_ - 1) / inner_;\n");
        I(e); P(e, "const int64_t j0_ = lo_ %% inner_, j1_ = (hi_ - 1) %% inner_ + 1;\n");
        /* the outer indices of the chunk's first and last rows, by division
         * once per chunk (a division per row cost as much as a short row's
         * work); the rows between them in nested loops, so that the C compiler
         * sees each outer index as an induction variable and steps the rows'
         * addresses instead of recomputing them (7-point stencil at 16^3, one
         * core: 1.5x -> 1.2x the hand-written loop's time) */
        I(e); P(e, "int64_t r_;\n");
        for (int end = 0; end < 2; end++) {
            I(e); P(e, "r_ = %s;\n", end ? "o1_" : "o0_");
            for (int d = nd - 2; d > 0; d--) {
                I(e); P(e, "const int64_t %c%d_ = r_ %% F->pn[%d]; r_ /= F->pn[%d];\n", end ? 'e' : 'c', d, d, d);
            }
            I(e); P(e, "const int64_t %c0_ = r_;\n", end ? 'e' : 'c');
        }
        for (int d = 0; d <= nd - 2; d++) {
            I(e);
            if (d == 0) P(e, "for (int64_t x0_ = c0_; x0_ <= e0_; x0_++) {\n");
            else P(e, "for (int64_t x%d_ = f%d_ ? c%d_ : 0; x%d_ <= (g%d_ ? e%d_ : F->pn[%d] - 1); x%d_++) {\n", d, d, d, d, d, d, d, d);
            e->ind++;
            I(e);
            if (d == 0) P(e, "const int f1_ = x0_ == c0_, g1_ = x0_ == e0_;\n");
            else P(e, "const int f%d_ = f%d_ && x%d_ == c%d_, g%d_ = g%d_ && x%d_ == e%d_;\n", d + 1, d, d, d, d + 1, d, d, d);
        }
        for (int d = 0; d <= nd - 2; d++) { I(e); local_name(e, s->vars[d]); P(e, " = x%d_;\n", d); }
        I(e); P(e, "const int64_t jb_ = f%d_ ? j0_ : 0, je_ = g%d_ ? j1_ : inner_;\n", nd - 1, nd - 1);
    }
    int np = verify_prefix(e, s, carried);
    /* rows between the chunk's first and last are whole: a copy whose inner
     * loop has the same bounds on every row, which the C compiler vectorizes
     * better (7-point stencil at 40^3, one core: 16% less time) */
    int rows = nd > 1 && e->C->opts.optimize && !strcmp(e->D->name, "c");
    if (rows) {
        I(e); P(e, "if (jb_ == 0 && je_ == inner_) { /* a whole row */\n");
        e->ind++;
        e->whole_row = 1;
        innermost(e, s, carried, np);
        e->whole_row = 0;
        e->ind--;
        I(e); P(e, "} else {\n");
        e->ind++;
    }
    innermost(e, s, carried, np);
    if (rows) {
        e->ind--;
        I(e); P(e, "}\n");
    }
    for (int d = nd > 1 ? nd - 1 : e->fastv == 3 ? 1 : 0; d > 0; d--) { /* the row or segment loops */
        e->ind--;
        I(e); P(e, "}\n");
    }
}

/* The chunk's loop; one with fast divisions (strength.c) in versions chosen by its flags. */
static void pfor_versions(E *e, tk_ir *s) {
    int nd = s->aux;
    tk_ir *fast = fast_flag(s->k[nd], 3), *seg = fast_flag(s->k[nd], 5);
    if (!fast || e->exact) { /* exact: the cold function's only version */
        e->fastv = fast ? 2 : 0;
        pfor_loop(e, s);
        e->fastv = 0;
        return;
    }
    if (seg) { I(e); P(e, "if ("); ex(e, seg); P(e, ") {\n"); e->ind++; }
    e->fastv = seg ? 3 : 1;
    pfor_loop(e, s);
    if (seg) {
        e->ind--;
        I(e); P(e, "} else {\n");
        e->ind++;
        e->fastv = 1;
        pfor_loop(e, s);
        e->ind--;
        I(e); P(e, "}\n");
    }
    e->fastv = 0;
}

/* The function that runs a chunk of parallel loop `s`.  A loop with fast
 * divisions (strength.c) gets two: the exact version, rarely run (a
 * dividend or divisor beyond 2^52), in a cold function that the C compiler
 * optimizes for size -- a quarter less compile time -- and the fast and
 * segmented versions, which call it when the launch's flag says so. */
static void pfor_chunk(E *e, tk_ir *s);

static void pfor_function(E *e, tk_ir *s, int id, int exact) {
    tk_spec *S = e->S;
    tk_ir *fast = fast_flag(s->k[s->aux], 3);
    e->exact = exact;
    P(e, "/* parallel loop at line %d%s */\n", s->line, exact ? ", exact divisions" : "");
    P(e, "%s%sstatic void tk_pfor%d%s(void *fp_, int64_t lo_, int64_t hi_) {\n",
      exact ? "__attribute__((cold, noinline)) " : "",
      !exact && e->C->opts.optimize && moves_vectors(e, s->k[s->aux]) ? "TK_NARROW " : "", id, exact ? "_x" : "");
    I(e); P(e, "const tk_frame *F = (const tk_frame *)fp_;\n");
    I(e); P(e, "tk_ctx *ctx = F->ctx;\n");
    I(e); P(e, "const tk_abi *abi = F->abi;\n");
    I(e); P(e, "(void)ctx; (void)abi;\n");
    array_decls(e, S, "F");
    for (int i = 0; i < S->nlocals; i++) {
        if (S->locals[i].scope != -1 || S->locals[i].ty.kind != TY_VALUE) continue;
        I(e); P(e, "const %s ", ctype(e, S->locals[i].ty.dt)); local_name(e, i); P(e, " = F->"); local_name(e, i);
        P(e, "; (void)"); local_name(e, i); P(e, ";\n");
    }
    if (fast && !exact) { I(e); P(e, "if (!("); ex(e, fast); P(e, ")) { tk_pfor%d_x(fp_, lo_, hi_); return; }\n", id); }
    pfor_chunk(e, s);
    e->exact = 0;
}

static void emit_pfor(E *e, tk_ir *s) {
    int id = e->counter++;
    int nd = s->aux;
    tk_spec *S = e->S;
    /* the caller side: fill the frame, run, stop on failure */
    I(e); P(e, "{\n");
    e->ind++;
    for (int p = 0; p < S->nparams; p++) {
        if (S->ptypes[p].kind != TY_ARRAY) continue;
        I(e); P(e, "F_.a%d = a%d;", p, p);
        for (int k = 0; k < S->ptypes[p].ndim; k++) P(e, " F_.a%d_s%d = a%d_s%d;", p, k, p, k);
        P(e, "\n");
    }
    for (int i = 0; i < S->nlocals; i++) {
        if (S->locals[i].scope != -1 || S->locals[i].ty.kind != TY_VALUE) continue;
        I(e); P(e, "F_."); local_name(e, i); P(e, " = "); local_name(e, i); P(e, ";\n");
    }
    I(e); P(e, "int64_t total_ = 1;\n");
    for (int d = 0; d < nd; d++) {
        I(e); P(e, "F_.pn[%d] = ", d); ex(e, s->k[d]); P(e, ";\n");
        I(e); P(e, "if (F_.pn[%d] <= 0) total_ = 0;\n", d);
        I(e); P(e, "total_ = (int64_t)((uint64_t)total_ * (uint64_t)(F_.pn[%d] > 0 ? F_.pn[%d] : 0));\n", d, d);
    }
    I(e); P(e, "F_.total = total_;\n");
    I(e); P(e, "if (total_ > 0) abi->parallel_for(ctx, tk_pfor%d, &F_, total_, %lld);\n", id,
            (long long)min_parallel(s->k[nd]));
    I(e); P(e, "if (TK_FAILED(ctx)) return;\n");
    e->ind--;
    I(e); P(e, "}\n");

    /* the body function(s) */
    tk_buf *saved = e->b;
    int saved_ind = e->ind, saved_fn = e->fn;
    e->b = &e->pfors;
    e->ind = 1;
    e->fn = 1;
    if (fast_flag(s->k[nd], 3)) pfor_function(e, s, id, 1);
    pfor_function(e, s, id, 0);
    e->b = saved;
    e->ind = saved_ind;
    e->fn = saved_fn;
}

/* The rest of pfor_function: the chunk's private state, loop and flushes. */
static void pfor_chunk(E *e, tk_ir *s) {
    tk_spec *S = e->S;
    /* private locals: those of this loop's scope (the pfor id is the scope) */
    declare_locals(e, S->locals[s->vars[0]].scope, 0, carried_locals(e, s), 1);
    /* a histogram array (privatize.c) is counted into a zeroed private copy on
     * the stack when it is small and the chunk long enough to repay the flush:
     * then the chunk runs a version of the loop that adds into it, and adds
     * each non-zero cell into the array, atomically, at its end */
    int h = s->hist - 1;
    if (h >= 0) {
        int hdt = S->ptypes[h].dt, cap = 65536 / (dt_bits((tack_dtype)hdt) / 8);
        if (cap > 16384) cap = 16384;
        I(e); P(e, "/* tk: per-chunk private histogram of a%d */\n", h);
        I(e); P(e, "const int64_t hn_ = 1");
        for (int k = 0; k < S->ptypes[h].ndim; k++) P(e, " * a%d_s%d", h, k);
        P(e, ";\n");
        I(e); P(e, "if (hn_ <= %d && hi_ - lo_ >= 4 * hn_) {\n", cap);
        e->ind++;
        I(e); P(e, "%s hb_[%d], *const hp_ = hb_ + hn_;\n", ctype(e, hdt), 2 * cap);
        I(e); P(e, "for (int64_t h_ = 0; h_ < 2 * hn_; h_++) hb_[h_] = 0;\n");
        e->hist = h + 1;
        pfor_versions(e, s);
        e->hist = 0;
        I(e); P(e, "for (int64_t h_ = 0; h_ < hn_; h_++) {\n");
        I(e); P(e, "    const %s c_ = ", ctype(e, hdt));
        if (is_float_dt(hdt)) P(e, "hb_[h_] + hp_[h_];\n");
        else P(e, "(%s)((%s)hb_[h_] + (%s)hp_[h_]);\n", ctype(e, hdt), ut(hdt), ut(hdt));
        /* the whole range in one chunk (a small launch runs so): no other chunk to race */
        I(e); P(e, "    if (c_ == 0) continue;\n");
        I(e); P(e, "    if (lo_ == 0 && hi_ == F->total) a%d[h_] = ", h);
        if (is_float_dt(hdt)) P(e, "a%d[h_] + c_;\n", h);
        else P(e, "(%s)((%s)a%d[h_] + (%s)c_);\n", ctype(e, hdt), ut(hdt), h, ut(hdt));
        I(e); P(e, "    else (void)tk_atomic_add_%s(&a%d[h_], c_);\n", ctype(e, hdt), h);
        I(e); P(e, "}\n");
        e->ind--;
        I(e); P(e, "} else {\n");
        e->ind++;
        pfor_versions(e, s);
        e->ind--;
        I(e); P(e, "}\n");
    } else pfor_versions(e, s);
    /* privatized sums: one atomic add per chunk */
    for (int r = 0; s->red && r < s->red->n; r++) {
        tk_ir *a = s->red->k[r];
        I(e); P(e, "if ("); ex(e, a->k[0]); P(e, " != 0) (void)"); ex(e, a); P(e, ";\n");
    }
    P(e, "}\n\n");
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
static const char *ret_type(E *e, const tk_spec *S) {
    if (S->ret.kind == TY_TUPLE) return tk_fmt(&e->C->arena, "tk_tup%d", ty_tuple_spec(S->ret));
    return S->ret.kind == TY_VALUE ? ctype(e, S->ret.dt) : "void";
}

static void func_signature(E *e, tk_spec *S, int si) {
    P(e, "%s %s tk_f%d(tk_ctx *ctx, const tk_abi *abi", e->D->func_qual ? e->D->func_qual : "static", ret_type(e, S), si);
    for (int p = 0; p < S->nparams; p++) {
        tk_type t = S->ptypes[p];
        if (t.kind == TY_ARRAY) {
            P(e, ", %s *a%d", e->D->storage_type((tack_dtype)t.dt), p);
            for (int k = 0; k < t.ndim; k++) P(e, ", int64_t a%d_s%d", p, k);
        } else {
            P(e, ", %s ", ctype(e, t.dt));
            local_name(e, S->plocal[p]);
        }
    }
    P(e, ")");
}

const char *tk_emit(tk_cc *C) {
    E ev;
    memset(&ev, 0, sizeof ev);
    E *e = &ev;
    e->C = C;
    e->D = C->dialect;
    tk_buf out, funcs, entry;
    tk_buf_init(&out, &C->arena);
    tk_buf_init(&funcs, &C->arena);
    tk_buf_init(&entry, &C->arena);
    tk_buf_init(&e->pfors, &C->arena);
    tk_spec *K = C->specs[0];
    e->K = K;
    tk_func *KF = &C->m->funcs[K->func];

    /* device functions reachable from the kernel, prototypes first */
    char *reach = tk_alloc(&C->arena, (size_t)C->nspecs + 1);
    mark_calls(C, K->body, reach);
    e->b = &funcs;
    for (int si = 1; si < C->nspecs; si++) { /* the tuples functions return: a struct each */
        tk_spec *S = C->specs[si];
        if (!reach[si] || S->ret.kind != TY_TUPLE) continue;
        P(e, "typedef struct tk_tup%d {", si);
        for (int i = 0; i < S->nret; i++) P(e, " %s f%d;", ctype(e, S->rets[i].dt), i);
        P(e, " } tk_tup%d;\n", si);
    }
    for (int si = 1; si < C->nspecs; si++) {
        if (!reach[si]) continue;
        e->S = C->specs[si];
        func_signature(e, e->S, si);
        P(e, ";\n");
    }
    for (int si = 1; si < C->nspecs; si++) {
        if (!reach[si]) continue;
        tk_spec *S = C->specs[si];
        e->S = S;
        e->si = si;
        e->fn = 2;
        P(e, "\n/* %s, line %d */\n", C->m->funcs[S->func].name, C->m->funcs[S->func].first_line);
        func_signature(e, S, si);
        P(e, " {\n");
        e->ind = 1;
        I(e); P(e, "(void)ctx; (void)abi;\n");
        if (returns_value(S)) { I(e); P(e, "const %s tk_zero = {0};\n", ret_type(e, S)); }
        declare_locals(e, -1, 1, NULL, 0);
        block(e, S->body);
        if (returns_value(S)) { I(e); P(e, "return tk_zero;\n"); }
        e->ind = 0;
        P(e, "}\n");
    }

    /* a dialect that lays the kernel out itself (GPU grids) */
    if (e->D->kernel) {
        e->b = &out;
        P(e, "/* generated by tack %s for kernel %s (%s:%d); dialect %s */\n", TACK_VERSION_STRING, KF->name,
          KF->filename, KF->first_line, e->D->name);
        e->D->prelude(C, &out);
        if (funcs.len) tk_puts(&out, funcs.s);
        P(e, "\n");
        e->S = K;
        e->si = 0;
        e->fn = 0;
        e->ind = 0;
        e->D->kernel(e, &out);
        return out.s;
    }

    /* the entry */
    e->S = K;
    e->si = 0;
    e->fn = 0;
    e->b = &entry;
    P(e, "/* kernel %s (%s:%d) */\n", KF->name, KF->filename, KF->first_line);
    P(e, "%s void tack_entry(const tk_argv *args, const tk_abi *abi, tk_ctx *ctx) {\n", e->D->export_attr);
    e->ind = 1;
    I(e); P(e, "tk_frame F_;\n");
    I(e); P(e, "F_.ctx = ctx; F_.abi = abi;\n");
    array_decls(e, K, "args");
    for (int p = 0; p < K->nparams; p++) {
        tk_type t = K->ptypes[p];
        if (t.kind == TY_ARRAY) continue;
        const tack_argtype *a = &C->args[p];
        tack_scalar_kind k = dt_kind(a->dtype);
        const char *mem = k == TACK_KIND_FLOAT ? "f" : k == TACK_KIND_UINT ? "u" : "i";
        I(e); P(e, "%s ", ctype(e, t.dt)); local_name(e, K->plocal[p]);
        if (k == TACK_KIND_FLOAT && !is_float_dt(t.dt) && t.dt != TACK_BOOL)
            P(e, " = (%s)tk_f2%s(args[%d].s.f);\n", ctype(e, t.dt), is_signed(t.dt) ? "i64" : "u64", p);
        else if (t.dt == TACK_BOOL)
            P(e, " = args[%d].s.%s != 0;\n", p, mem);
        else
            P(e, " = (%s)args[%d].s.%s;\n", ctype(e, t.dt), p, mem);
    }
    declare_locals(e, -1, 1, NULL, 0);
    block(e, K->body);
    e->ind = 0;
    P(e, "}\n");

    /* assemble */
    e->b = &out;
    P(e, "/* generated by tack %s for kernel %s (%s:%d); dialect %s */\n", TACK_VERSION_STRING, KF->name,
      KF->filename, KF->first_line, e->D->name);
    e->D->prelude(C, &out);
    P(e, "\ntypedef struct tk_frame {\n    tk_ctx *ctx;\n    const tk_abi *abi;\n    int64_t pn[%d];\n    int64_t total;\n", TACK_MAX_NDIM);
    for (int p = 0; p < K->nparams; p++) {
        tk_type t = K->ptypes[p];
        if (t.kind != TY_ARRAY) continue;
        P(e, "    %s *a%d;\n", e->D->storage_type((tack_dtype)t.dt), p);
        for (int k = 0; k < t.ndim; k++) P(e, "    int64_t a%d_s%d;\n", p, k);
    }
    e->S = K;
    for (int i = 0; i < K->nlocals; i++) {
        if (K->locals[i].scope != -1 || K->locals[i].ty.kind != TY_VALUE) continue;
        P(e, "    %s ", ctype(e, K->locals[i].ty.dt));
        local_name(e, i);
        P(e, ";\n");
    }
    P(e, "} tk_frame;\n\n");
    if (funcs.len) tk_puts(&out, funcs.s);
    P(e, "\n");
    if (e->pfors.len) tk_puts(&out, e->pfors.s);
    tk_puts(&out, entry.s);
    return out.s;
}

/* ------------------------------------------- services for dialect layouts */
tk_cc *tk_emitter_cc(tk_emitter *e) { return e->C; }
tk_spec *tk_emitter_kernel(tk_emitter *e) { return e->K; }
tk_buf *tk_emitter_target(tk_emitter *e, tk_buf *b, int fn) {
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
void tk_emitter_declare_locals(tk_emitter *e, int scope) { declare_locals(e, scope, 0, NULL, 0); }
