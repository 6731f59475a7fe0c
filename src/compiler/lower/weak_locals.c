/*
 * weak_locals.c -- a local that holds Python floats and only ever meets f32
 * is an f32.
 *
 * A Python float is weak (NEP 50): it takes the type of what it meets, and
 * lowering computes an expression of weak floats in f32 where it meets f32
 * (lower.c, weak_to_f32).  A local breaks that chain: `s = 1.0 if c else
 * -1.0`, `total = 0.0`, `t = hi - lo` give the local the weak carrier, f64,
 * and the kernel declares a `double` -- which an f32 kernel on a GPU without
 * double precision (Metal, Intel DG2) cannot have, and which halves a CPU's
 * vector width.  By the language's rule the local is no different from the
 * expression it holds: where every use of it meets f32, it is computed in
 * f32.
 *
 * The pass finds, in every specialization, the locals of weak float type
 * that are not a kernel's parameters (weak_float.c converts those on the
 * host) -- a @tack.func's parameters are among them: `mad(x[i], 2.0, 1.0)`
 * passes two Python floats, and where the function only meets f32 with them
 * they are f32 parameters, each call converting its argument -- and follows each use up through weak float
 * arithmetic (+ - * / // % **, min, max, unary -, abs, math functions, the
 * branches of a conditional expression) to where the value goes:
 *
 *   - a conversion to f32: fine;
 *   - an assignment to another such local: fine if that one is narrowed too;
 *   - anything else (an f64 store, a comparison with another weak float,
 *     print, a @tack.func argument, an index): the local keeps its carrier.
 *
 * The candidates that fail, and those whose values flow into them, are
 * dropped until nothing changes; the rest become f32.  Their assignments
 * compute the value in f32 (the operations retyped, constants rounded once,
 * other weak leaves converted), and the conversions at their uses go.  Where
 * a local meets f64 it is left alone, so an f64 kernel computes as NumPy
 * does.
 *
 * A @tack.func's value is one more such place: `return 1.0 if x > 0 else
 * -1.0`, or `h = 0.5; return h * k` with Python floats, makes the function
 * return the weak carrier, f64.  Where every call of the specialization
 * converts the value to f32 (directly, or through weak float arithmetic, as
 * above), the function returns f32: its returns are computed in f32 and the
 * callers' conversions go.  Where one call meets f64 (or is stored in a
 * local that does) it keeps f64, NumPy's answer.  A narrowed return may
 * let the function's locals follow, and a caller's local narrowed later may
 * let a return follow, so the pass repeats -- the locals of every
 * specialization, then the values -- until nothing changes.  It runs for
 * every target, before the optimizing passes, so the CPU, the GPUs and an
 * unoptimized build compute the same values.
 */
#include <string.h>

#include "compiler/compiler.h"

typedef struct wl {
    tk_cc *C;
    tk_spec *S;
    char *cand;  /* per local: a candidate, then: narrowed */
    int *into;   /* per use edge: the local a candidate's value is assigned to */
    int *from;
    int nedge, capedge;
} wl;

enum { TO_BAD = -2, TO_F32 = -1 }; /* where a value goes; >= 0: assigned to that local */

static int is_weakf(const tk_ir *x) {
    return x && x->ty.kind == TY_VALUE && x->ty.weak && x->ty.dt == TACK_F64;
}

/* Whether x passes its (weak float) operands' values on to its own value. */
static int passes_through(const tk_ir *x) {
    if (!is_weakf(x)) return 0;
    switch (x->op) {
    case IR_BIN: return x->sub <= B_POW || x->sub == B_MIN || x->sub == B_MAX;
    case IR_UN: /* abs() of a complex: the complex is computed in its carrier, only the value rounds */
        return (x->sub == U_NEG || x->sub == U_ABS) && x->n == 1 && !ty_is_complex(x->k[0]->ty);
    case IR_MATH: return !tk_math_is_predicate(x->sub) && ty_eq(x->aux_ty, x->ty);
    case IR_SELECT: return 1; /* its branches; the condition is visited apart */
    default: return 0;
    }
}

static void edge(wl *W, int from, int into) {
    if (W->nedge == W->capedge) {
        int cap = W->capedge ? 2 * W->capedge : 16;
        int *f = tk_alloc(&W->C->arena, sizeof(int) * (size_t)cap), *t = tk_alloc(&W->C->arena, sizeof(int) * (size_t)cap);
        if (W->nedge) {
            memcpy(f, W->from, sizeof(int) * (size_t)W->nedge);
            memcpy(t, W->into, sizeof(int) * (size_t)W->nedge);
        }
        W->from = f;
        W->into = t;
        W->capedge = cap;
    }
    W->from[W->nedge] = from;
    W->into[W->nedge++] = into;
}

/* Visit x, whose value goes `to`. */
static void visit(wl *W, const tk_ir *x, int to) {
    if (!x) return;
    if (x->op == IR_LOCAL && x->local >= 0 && x->local < W->S->nlocals && W->cand[x->local]) {
        if (to == TO_BAD) W->cand[x->local] = 0;
        else if (to >= 0) edge(W, x->local, to);
        return;
    }
    int kid_to = TO_BAD;
    if (x->op == IR_CAST && x->ty.kind == TY_VALUE && !x->ty.weak && x->ty.dt == TACK_F32) kid_to = TO_F32;
    else if (passes_through(x)) kid_to = to;
    else if (x->op == IR_ASSIGN && x->local >= 0 && x->local < W->S->nlocals && W->cand[x->local]) kid_to = x->local;
    for (int i = 0; i < x->n; i++)
        visit(W, x->k[i], x->op == IR_SELECT && i == 0 ? TO_BAD : kid_to);
    if (x->op == IR_PFOR) {
        visit(W, x->off, TO_BAD);
        visit(W, x->hi, TO_BAD);
        visit(W, x->red, TO_BAD);
        visit(W, x->bnd, TO_BAD);
    }
}

/* x computed in f32: weak float operations retyped, narrowed locals as they
 * are, constants rounded once, any other value converted. */
static tk_ir *to_f32(wl *W, tk_ir *x) {
    tk_type f = ty_value(TACK_F32);
    if (x->op == IR_LOCAL && x->local >= 0 && x->local < W->S->nlocals && W->cand[x->local]) {
        x->ty = f;
        return x;
    }
    if (x->ty.kind == TY_VALUE && !x->ty.weak && x->ty.dt == TACK_F32) return x;
    if (x->op == IR_CONST && is_weakf(x)) return ir_const_f(W->C, f, (double)(float)x->c.f, x->line);
    if (passes_through(x)) {
        x->ty = f;
        if (x->op == IR_BIN || x->op == IR_MATH) x->aux_ty = f;
        for (int i = x->op == IR_SELECT ? 1 : 0; i < x->n; i++) x->k[i] = to_f32(W, x->k[i]);
        return x;
    }
    if (x->op == IR_CAST && x->n == 1 && x->k[0]->ty.kind == TY_VALUE && x->k[0]->ty.weak && !is_weakf(x->k[0])) {
        x->ty = f; /* a weak int made a weak float: straight to f32 */
        return x;
    }
    tk_ir *c = ir_new(W->C, IR_CAST, f, x->line);
    ir_push(W->C, c, x);
    return c;
}

/* Whether x (a weak float value) reads a narrowed local. */
static int reads_narrowed(const wl *W, const tk_ir *x) {
    if (!x) return 0;
    if (x->op == IR_LOCAL && x->local >= 0 && x->local < W->S->nlocals && W->cand[x->local]) return 1;
    if (!passes_through(x)) return 0;
    for (int i = 0; i < x->n; i++)
        if (reads_narrowed(W, x->k[i])) return 1;
    return 0;
}

static void rewrite(wl *W, tk_ir *x) {
    if (!x) return;
    for (int i = 0; i < x->n; i++) {
        tk_ir *k = x->k[i];
        if (!k) continue;
        if (k->op == IR_CAST && k->n == 1 && !k->ty.weak && k->ty.kind == TY_VALUE && k->ty.dt == TACK_F32 &&
            reads_narrowed(W, k->k[0])) {
            x->k[i] = to_f32(W, k->k[0]); /* the conversion at the use goes */
            continue;
        }
        rewrite(W, k);
    }
    if (x->op == IR_ASSIGN && x->local >= 0 && x->local < W->S->nlocals && W->cand[x->local] && x->n == 1)
        x->k[0] = to_f32(W, x->k[0]);
    if (x->op == IR_PFOR) {
        rewrite(W, x->off);
        rewrite(W, x->hi);
        rewrite(W, x->red);
    }
}

/* The parameters of @tack.func specialization si narrowed to f32 (bit p):
 * each call's argument is converted where it is passed. */
static void convert_args(tk_cc *C, tk_ir *x, int si, uint64_t narrowed) {
    if (!x) return;
    for (int i = 0; i < x->n; i++) convert_args(C, x->k[i], si, narrowed);
    if (x->op == IR_PFOR) {
        convert_args(C, x->off, si, narrowed);
        convert_args(C, x->hi, si, narrowed);
        convert_args(C, x->red, si, narrowed);
    }
    if (x->op != IR_CALL || x->aux != si) return;
    for (int p = 0; p < x->n && p < 64; p++) {
        if (!(narrowed >> p & 1)) continue;
        tk_ir *a = x->k[p];
        if (a->op == IR_CONST && is_weakf(a)) {
            x->k[p] = ir_const_f(C, ty_value(TACK_F32), (double)(float)a->c.f, a->line);
        } else if (!(a->ty.kind == TY_VALUE && !a->ty.weak && a->ty.dt == TACK_F32)) {
            tk_ir *c = ir_new(C, IR_CAST, ty_value(TACK_F32), a->line);
            ir_push(C, c, a);
            x->k[p] = c;
        }
    }
}

/* 1 when something was narrowed. */
static int narrow_spec(tk_cc *C, tk_spec *S, int si) {
    if (!S->body || S->nlocals <= 0) return 0;
    wl W = {C, S, tk_alloc(&C->arena, (size_t)S->nlocals), NULL, NULL, 0, 0};
    int device = C->m->funcs[S->func].kind == TACK_FUNC_DEVICE, any = 0;
    for (int l = 0; l < S->nlocals; l++) {
        tk_type t = S->locals[l].ty;
        W.cand[l] = (char)(t.kind == TY_VALUE && t.weak && t.dt == TACK_F64);
        for (int p = 0; S->plocal && p < S->nparams; p++) /* a kernel's: weak_float.c, on the host; a */
            if (S->plocal[p] == l && (!device || p >= 64)) W.cand[l] = 0; /* func's: its callers convert */
        any |= W.cand[l];
    }
    if (!any) return 0;
    visit(&W, S->body, TO_BAD);
    for (int changed = 1; changed;) { /* a value assigned to a local that keeps f64 keeps it too */
        changed = 0;
        for (int e = 0; e < W.nedge; e++)
            if (W.cand[W.from[e]] && !W.cand[W.into[e]]) {
                W.cand[W.from[e]] = 0;
                changed = 1;
            }
    }
    any = 0;
    for (int l = 0; l < S->nlocals; l++) any |= W.cand[l];
    if (!any) return 0;
    rewrite(&W, S->body);
    for (int l = 0; l < S->nlocals; l++)
        if (W.cand[l]) S->locals[l].ty = ty_value(TACK_F32);
    uint64_t params = 0;
    for (int p = 0; device && S->plocal && p < S->nparams && p < 64; p++)
        if (S->plocal[p] >= 0 && W.cand[S->plocal[p]]) {
            S->ptypes[p] = ty_value(TACK_F32);
            params |= (uint64_t)1 << p;
        }
    for (int i = 0; params && i < C->nspecs; i++) convert_args(C, C->specs[i]->body, si, params);
    return 1;
}

/* ------------------------------------------------------ a function's value */

/* Whether every call of specialization si has its value go to f32 (through
 * weak float arithmetic, as visit follows a local's): *ok is cleared by one
 * that does not. */
static void call_uses(const tk_ir *x, int si, int to, int *ok) {
    if (!x) return;
    if (x->op == IR_CALL && x->aux == si && to != TO_F32) *ok = 0;
    int kid_to = TO_BAD;
    if (x->op == IR_CAST && x->ty.kind == TY_VALUE && !x->ty.weak && x->ty.dt == TACK_F32) kid_to = TO_F32;
    else if (passes_through(x)) kid_to = to;
    for (int i = 0; i < x->n; i++) call_uses(x->k[i], si, x->op == IR_SELECT && i == 0 ? TO_BAD : kid_to, ok);
    if (x->op == IR_PFOR) {
        call_uses(x->off, si, TO_BAD, ok);
        call_uses(x->hi, si, TO_BAD, ok);
        call_uses(x->red, si, TO_BAD, ok);
        call_uses(x->bnd, si, TO_BAD, ok);
    }
}

/* Whether x (a weak float value) has a call of si among its leaves, and
 * those calls retyped f32 (retype). */
static int reads_call(tk_ir *x, int si, int retype) {
    if (!x) return 0;
    if (x->op == IR_CALL && x->aux == si) {
        if (retype) x->ty = ty_value(TACK_F32);
        return 1;
    }
    if (!passes_through(x)) return 0;
    int found = 0;
    for (int i = x->op == IR_SELECT ? 1 : 0; i < x->n; i++) found |= reads_call(x->k[i], si, retype);
    return found;
}

/* The conversions to f32 of values computed from calls of si: the
 * conversion goes, the value is computed in f32 from the call's f32. */
static void rewrite_calls(wl *W, tk_ir *x, int si) {
    if (!x) return;
    for (int i = 0; i < x->n; i++) {
        tk_ir *k = x->k[i];
        if (!k) continue;
        if (k->op == IR_CAST && k->n == 1 && !k->ty.weak && k->ty.kind == TY_VALUE && k->ty.dt == TACK_F32 &&
            reads_call(k->k[0], si, 0)) {
            reads_call(k->k[0], si, 1);
            x->k[i] = to_f32(W, k->k[0]);
            continue;
        }
        rewrite_calls(W, k, si);
    }
    if (x->op == IR_PFOR) {
        rewrite_calls(W, x->off, si);
        rewrite_calls(W, x->hi, si);
        rewrite_calls(W, x->red, si);
    }
}

/* The returns of function specialization si computed in f32. */
static void returns_to_f32(wl *W, tk_ir *x) {
    if (!x) return;
    if (x->op == IR_RETURN && x->n == 1) {
        x->k[0] = to_f32(W, x->k[0]);
        return;
    }
    for (int i = 0; i < x->n; i++) returns_to_f32(W, x->k[i]);
    if (x->op == IR_PFOR) returns_to_f32(W, x->red);
}

/* A @tack.func whose value is a Python float (weak f64, no declared return
 * type) and every one of whose calls converts that value to f32 returns f32:
 * its returns are computed in f32 (a local they read may then be narrowed
 * too, on the next round), and its callers use the f32 as it comes.  1 when
 * narrowed. */
static int narrow_return(tk_cc *C, int si) {
    tk_spec *S = C->specs[si];
    tk_func *F = &C->m->funcs[S->func];
    if (F->kind != TACK_FUNC_DEVICE || F->returns || !S->body ||
        !(S->ret.kind == TY_VALUE && S->ret.weak && S->ret.dt == TACK_F64))
        return 0;
    int ok = 1;
    for (int i = 0; ok && i < C->nspecs; i++) call_uses(C->specs[i]->body, si, TO_BAD, &ok);
    if (!ok) return 0;
    for (int i = 0; i < C->nspecs; i++) { /* no narrowed locals here: a local read is converted */
        tk_spec *T = C->specs[i];
        size_t n = (size_t)(T->nlocals > 0 ? T->nlocals : 1);
        wl W = {C, T, tk_alloc(&C->arena, n), NULL, NULL, 0, 0};
        memset(W.cand, 0, n);
        if (i == si) returns_to_f32(&W, T->body);
        rewrite_calls(&W, T->body, si);
    }
    S->ret = ty_value(TACK_F32);
    return 1;
}

/* Until nothing changes: the locals of every specialization (callees
 * first, so that a narrowed parameter's conversion is in its callers'
 * code when they are looked at), then the functions' values, whose
 * narrowing may let a local that holds one, or that a return reads, follow. */
void tk_weak_locals(tk_cc *C) {
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = C->nspecs - 1; i >= 0; i--) changed |= narrow_spec(C, C->specs[i], i);
        for (int i = 1; i < C->nspecs; i++) changed |= narrow_return(C, i);
    }
}
