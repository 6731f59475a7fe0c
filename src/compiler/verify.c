/*
 * verify.c -- invariants of the typed IR, checked after every pass.
 *
 * The passes after lowering rewrite the tree; the emitter trusts it.  The
 * verifier sits between them and turns a broken invariant into a compile
 * error naming the pass ("internal compiler error after check elision: ...")
 * rather than into wrong C.  What it checks:
 *
 *   - every type is known (no TY_UNKNOWN survives inference);
 *   - operands of arithmetic have the operation's type; comparisons have
 *     equal operand types and give bool; casts are between value types;
 *   - locals exist and assignments match the local's type;
 *   - loads and stores index every axis of their array with i64 values,
 *     and stores hold a value of the element type;
 *   - statements appear only in blocks and expressions only as operands;
 *   - break/continue sit inside a loop.
 */
#include <stdio.h>
#include <string.h>

#include "compiler/compiler.h"

typedef struct verifier {
    tk_cc *C;
    tk_spec *S;
    const char *after;
    int loops;
} verifier;

#define BAD(x, ...) bad(v, (x), __VA_ARGS__)

static _Noreturn void bad(verifier *v, tk_ir *x, const char *fmt, const char *what) {
    char msg[256];
    snprintf(msg, sizeof msg, fmt, what);
    tk_error(v->C, v->S->func, x ? x->line : 0, 0, "internal compiler error after %s: %s", v->after, msg);
}

static int is_stmt(int op) { return op >= IR_BLOCK; }

static tk_type elem_type(verifier *v, int p) {
    tk_type t = v->S->ptypes[p];
    return ty_value(t.dt == TACK_F16 ? TACK_F32 : (tack_dtype)t.dt);
}

static void vx(verifier *v, tk_ir *x);

static void idx(verifier *v, tk_ir *x, int first) {
    int p = x->param;
    if (p < 0 || p >= v->S->nparams || v->S->ptypes[p].kind != TY_ARRAY) BAD(x, "%s on a non-array", "access");
    if (x->n - first != v->S->ptypes[p].ndim) BAD(x, "%s with the wrong number of indices", "access");
    for (int i = first; i < x->n; i++) {
        vx(v, x->k[i]);
        if (!ty_is_int(x->k[i]->ty) || dt_bits((tack_dtype)x->k[i]->ty.dt) != 64) BAD(x, "%s index is not i64", "access");
    }
}

static void vx(verifier *v, tk_ir *x) {
    if (!x) BAD(x, "%s", "missing expression");
    if (is_stmt(x->op)) BAD(x, "statement %s used as an expression", "node");
    if (x->ty.kind == TY_UNKNOWN) BAD(x, "%s of unknown type", "expression");
    for (int i = 0; i < x->n; i++)
        if (x->op != IR_LOAD && x->op != IR_ATOMIC) vx(v, x->k[i]);
    switch (x->op) {
    case IR_LOCAL:
        if (x->local < 0 || x->local >= v->S->nlocals) BAD(x, "%s out of range", "local");
        if (!ty_eq(x->ty, v->S->locals[x->local].ty)) BAD(x, "%s type differs from its declaration", "local");
        break;
    case IR_CAST:
        if (x->n != 1 || x->ty.kind != TY_VALUE || x->k[0]->ty.kind != TY_VALUE) BAD(x, "%s of a non-value", "cast");
        break;
    case IR_BIN: {
        if (x->n != 2) BAD(x, "%s without two operands", "binary operation");
        int b = x->sub;
        if (b >= B_EQ && b <= B_GE) {
            if (!ty_eq(x->k[0]->ty, x->aux_ty) || !ty_eq(x->k[1]->ty, x->aux_ty) || !ty_is_bool(x->ty))
                BAD(x, "%s operands differ in type", tk_bin_name(b));
        } else if (b == B_MATMUL || b == B_DOT || b == B_CROSS) {
            /* shapes checked by lowering */
        } else if (!ty_eq(x->k[0]->ty, x->ty) || !ty_eq(x->k[1]->ty, x->ty)) {
            BAD(x, "%s operands differ from the result type", tk_bin_name(b));
        }
        break;
    }
    case IR_AND:
    case IR_OR:
        if (!ty_eq(x->k[0]->ty, x->ty) || !ty_eq(x->k[1]->ty, x->ty)) BAD(x, "%s operands differ in type", "and/or");
        break;
    case IR_SELECT:
        if (!ty_is_bool(x->k[0]->ty) || !ty_eq(x->k[1]->ty, x->ty) || !ty_eq(x->k[2]->ty, x->ty)) BAD(x, "%s mistyped", "select");
        break;
    case IR_LOAD: idx(v, x, 0); break;
    case IR_ATOMIC:
        vx(v, x->k[0]);
        idx(v, x, 1);
        if (!ty_eq(x->k[0]->ty, x->ty)) BAD(x, "%s value differs from the element type", "atomic");
        break;
    case IR_CALL:
        if (x->aux <= 0 || x->aux >= v->C->nspecs) BAD(x, "%s of an unknown specialization", "call");
        break;
    default: break;
    }
}

static void vs(verifier *v, tk_ir *s) {
    if (!s) BAD(s, "%s", "missing statement");
    switch (s->op) {
    case IR_BLOCK:
        for (int i = 0; i < s->n; i++) {
            if (!is_stmt(s->k[i]->op)) BAD(s->k[i], "expression %s in a block", "node");
            vs(v, s->k[i]);
        }
        return;
    case IR_ASSIGN:
        if (s->local < 0 || s->local >= v->S->nlocals) BAD(s, "%s to a bad local", "assignment");
        vx(v, s->k[0]);
        if (!ty_eq(s->k[0]->ty, v->S->locals[s->local].ty)) BAD(s, "%s value differs from the local's type", "assignment");
        return;
    case IR_SETCOMP:
        for (int i = 0; i < s->n; i++) vx(v, s->k[i]);
        return;
    case IR_STORE: {
        vx(v, s->k[0]);
        idx(v, s, 1);
        tk_type et = elem_type(v, s->param);
        if (!ty_eq(s->k[0]->ty, et)) BAD(s, "%s value differs from the element type", "store");
        return;
    }
    case IR_EVAL: vx(v, s->k[0]); return;
    case IR_IF:
        vx(v, s->k[0]);
        if (!ty_is_bool(s->k[0]->ty)) BAD(s, "%s condition is not bool", "if");
        vs(v, s->k[1]);
        vs(v, s->k[2]);
        return;
    case IR_WHILE:
        vx(v, s->k[0]);
        if (!ty_is_bool(s->k[0]->ty)) BAD(s, "%s condition is not bool", "while");
        v->loops++;
        vs(v, s->k[1]);
        v->loops--;
        return;
    case IR_FOR:
        for (int i = 0; i < 3; i++) {
            vx(v, s->k[i]);
            if (!ty_is_int(s->k[i]->ty)) BAD(s, "%s bound is not an integer", "for");
        }
        v->loops++;
        vs(v, s->k[3]);
        v->loops--;
        return;
    case IR_PFOR:
        for (int i = 0; i < s->aux; i++) vx(v, s->k[i]);
        v->loops++;
        vs(v, s->k[s->aux]);
        v->loops--;
        return;
    case IR_BREAK:
    case IR_CONTINUE:
        if (!v->loops) BAD(s, "%s outside a loop", "break/continue");
        return;
    case IR_RETURN:
        for (int i = 0; i < s->n; i++) vx(v, s->k[i]);
        if (s->n && v->S->ret.kind == TY_TUPLE) {
            if (s->n != v->S->nret) BAD(s, "%s with the wrong number of values", "tuple return");
            for (int i = 0; i < s->n; i++)
                if (!ty_eq(s->k[i]->ty, v->S->rets[i])) BAD(s, "%s value differs from the function's", "tuple return");
        } else if (s->n > 1) {
            BAD(s, "%s of several values from a function that returns one", "return");
        }
        return;
    case IR_CHECK:
        for (int i = 0; i < s->n; i++) vx(v, s->k[i]);
        if (s->aux < 0 || s->aux >= v->C->nsites) BAD(s, "%s with a bad site", "check");
        return;
    case IR_PRINT:
        for (int i = 0; i < s->n; i++)
            if (!s->k[i]->str) vx(v, s->k[i]);
        return;
    default: BAD(s, "unknown statement %s", "kind");
    }
}

void tk_verify(tk_cc *C, const char *after) {
    verifier v = {C, NULL, after, 0};
    for (int i = 0; i < C->nspecs; i++) {
        v.S = C->specs[i];
        if (!v.S->body) continue;
        vs(&v, v.S->body);
    }
}
