/*
 * weak_float.c -- a Python float argument that only ever meets f32 is
 * carried as an f32.
 *
 * A Python float passed to a kernel is a weak scalar (NEP 50): it takes the
 * type of what it meets.  `a * x[i]` with x an f32 array converts `a` to f32
 * first and multiplies in f32, as NumPy 2 does.  Lowering gives the
 * parameter the carrier type, f64, and puts an f32 cast at each use.  On
 * the CPU that costs nothing.  On a GPU without double precision (most
 * Intel GPUs of the DG2 family, many phones' GPUs) the f64 parameter alone
 * makes the kernel need fp64, and the OpenCL and Level Zero backends refuse
 * it: the canonical `saxpy(a, x, y)` with a Python float `a` would not run
 * there, although it computes nothing in double precision.
 *
 * A Python complex is weak the same way: one that only ever meets complex64
 * is carried as a complex64, each part as f32 bits (Metal, which has no
 * double, could not take it otherwise).
 *
 * This pass finds the scalar parameters of the kernel that are weak floats,
 * are never assigned, and whose every use is a conversion to f32 (or which
 * are not used at all).  Each such parameter becomes an f32 local, the
 * conversions at its uses disappear, and the parameter's bit is set in
 * `C->weak_f32`: the launcher converts the Python float to f32 on the host
 * (round to nearest, as the cast in the kernel would) and passes its bits;
 * the dialect reads them as a float.  The result is the same to the bit:
 * the conversion happens once on the host instead of at every use.  A
 * parameter used any other way (in f64 arithmetic, printed, passed to a
 * @tack.func, compared with another weak scalar) keeps its f64 carrier.
 *
 * Only the grid dialects (CUDA, OpenCL) run it: their parameters travel in
 * 64-bit slots that can hold either; the CPU's frame layout is unchanged.
 */
#include "compiler/compiler.h"

typedef struct uses {
    int local;
    int narrow, other;  /* uses under a cast to the narrow type, and any other uses */
    int to;             /* the narrow type: f32 (a Python float) or complex64 (a Python complex) */
} uses;

static int is_narrow_cast(const tk_ir *x, int to) {
    return x->op == IR_CAST && x->ty.kind == TY_VALUE && x->ty.dt == to && x->n == 1;
}

static void count(const tk_ir *x, uses *u);

/* A child slot: a direct use of the local counts as narrow only under a cast. */
static void count_kid(const tk_ir *parent, const tk_ir *kid, uses *u) {
    if (!kid) return;
    if (kid->op == IR_LOCAL && kid->local == u->local) {
        if (parent && is_narrow_cast(parent, u->to)) u->narrow++;
        else u->other++;
        return;
    }
    count(kid, u);
}

static void count(const tk_ir *x, uses *u) {
    if (!x) return;
    for (int i = 0; i < x->n; i++) count_kid(x, x->k[i], u);
    if (x->op == IR_PFOR) {
        count_kid(NULL, x->off, u);
        count_kid(NULL, x->hi, u);
        count_kid(NULL, x->red, u);
    }
}

/* Replace each narrowing cast of the local by the local itself, now of the narrow type. */
static void rewrite(tk_ir *x, int local, tk_type to) {
    if (!x) return;
    for (int i = 0; i < x->n; i++) {
        tk_ir *k = x->k[i];
        if (k && is_narrow_cast(k, to.dt) && k->k[0]->op == IR_LOCAL && k->k[0]->local == local) {
            tk_ir *l = k->k[0];
            l->ty = to;
            x->k[i] = l;
        } else {
            rewrite(k, local, to);
        }
    }
    if (x->op == IR_PFOR) {
        rewrite(x->off, local, to);
        rewrite(x->hi, local, to);
        rewrite(x->red, local, to);
    }
}

void tk_weak_float(tk_cc *C, tk_spec *K) {
    for (int p = 0; p < K->nparams && p < 64; p++) {
        const tack_argtype *a = &C->args[p];
        if (a->is_array || !a->weak || (a->dtype != TACK_F64 && a->dtype != TACK_C128)) continue;
        tk_type to = ty_value(a->dtype == TACK_F64 ? TACK_F32 : TACK_C64);
        int l = K->plocal ? K->plocal[p] : -1;
        if (l < 0 || K->ptypes[p].kind != TY_VALUE || K->ptypes[p].dt != (int)a->dtype) continue;
        if (ir_assigns_local(K->body, l)) continue;
        uses u = {l, 0, 0, to.dt};
        count(K->body, &u);
        if (u.other) continue;
        rewrite(K->body, l, to);
        K->locals[l].ty = to;
        K->ptypes[p] = to;
        C->weak_f32 |= 1ull << p;
    }
}
