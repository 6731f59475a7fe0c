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
 *     and stores hold a value of the element type (of the component's, for
 *     a store or atomic of one component: a[i].x = s);
 *   - statements appear only in blocks and expressions only as operands;
 *   - break/continue sit inside a loop;
 *   - no race in a compound assignment: the write of a[i] op= v (an IR_STORE
 *     marked ST_RMW) inside a parallel region -- a parallel loop's body
 *     (not one of at most one iteration, ir_pfor_one: `for t in range(1):`
 *     is serial work), or a function specialized for a call inside one
 *     (tk_spec.par) -- indexes the
 *     iteration's own element, so no other iteration reads or writes it in
 *     between.  Lowering makes += and -= atomics there and refuses the rest
 *     (lower_stmt.c); this is the check that would see a lowering that
 *     forgot, on every dialect at once, since they all emit this IR.  Own:
 *     for each of the loop's variables, one index is a local that is that
 *     variable, unassigned in the region (or, in a function, the parameter
 *     that received it), or a local assigned once in the region, at the top
 *     of the loop's body, from an own local plus, minus or times a value the
 *     loop does not change (range's lo + k * step), through 64-bit integer
 *     casts and negative-index wraps.  TACK_DEBUG_RACY_RMW=1 makes lowering
 *     emit plain read-modify-writes, which this check must refuse
 *     (tests/python/test_shared_cells.py).  A function's parameter that
 *     receives a caller's local array (tk_spec.plarr) is exempt: that array
 *     is the iteration's own;
 *   - a local array passed to a function (IR_LARRAY) is a local array.
 */
#include <stdio.h>
#include <string.h>

#include "compiler/compiler.h"

typedef struct verifier {
    tk_cc *C;
    tk_spec *S;
    const char *after;
    int loops;
    /* the parallel region being checked (NULL outside one), its number of
     * loop variables, and per local the mask of those it is own for */
    tk_ir *region;
    int ndims;
    uint32_t *own;
} verifier;

#define BAD(x, ...) bad(v, (x), __VA_ARGS__)

static _Noreturn void bad(verifier *v, tk_ir *x, const char *fmt, const char *what) {
    char msg[256];
    snprintf(msg, sizeof msg, fmt, what);
    tk_error(v->C, v->S->func, x ? x->line : 0, 0, "internal compiler error after %s: %s", v->after, msg);
}

static int is_stmt(int op) { return op >= IR_BLOCK; }

/* ------------------------------------------------- races in parallel code */
static int assign_count(const tk_ir *s, int local) {
    if (!s) return 0;
    int n = (s->op == IR_ASSIGN || s->op == IR_SETCOMP || s->op == IR_FOR) && s->local == local;
    if (s->op == IR_PFOR)
        for (int d = 0; d < s->aux; d++) n += s->vars[d] == local;
    for (int i = 0; i < s->n; i++) n += assign_count(s->k[i], local);
    return n;
}

static int int64_cast(const tk_ir *x) {
    return x->op == IR_CAST && ty_is_int(x->ty) && dt_bits((tack_dtype)x->ty.dt) == 64 && ty_is_int(x->k[0]->ty) &&
           dt_bits((tack_dtype)x->k[0]->ty.dt) == 64;
}

/* The loop variables an index expression is injective in (a mask), 0 when none. */
static uint32_t own_of(verifier *v, const tk_ir *x, const tk_ir *loop) {
    while (int64_cast(x) || x->op == IR_WRAP) x = x->k[0];
    if (x->op == IR_LOCAL) return v->own[x->local];
    if (!loop || x->op != IR_BIN || x->n != 2) return 0;
    if (x->sub == B_ADD || x->sub == B_MUL) {
        if (ir_invariant(x->k[1], loop)) return own_of(v, x->k[0], loop);
        if (ir_invariant(x->k[0], loop)) return own_of(v, x->k[1], loop);
    }
    if (x->sub == B_SUB && ir_invariant(x->k[1], loop)) return own_of(v, x->k[0], loop);
    return 0;
}

/* Enter a parallel region: the own locals of a PFOR's body, or of a function
 * lowered for a parallel loop. */
static void enter_region(verifier *v, tk_ir *region, tk_ir *loop) {
    tk_spec *S = v->S;
    v->region = region;
    v->own = tk_alloc(&v->C->arena, sizeof(uint32_t) * (size_t)(S->nlocals + 1));
    memset(v->own, 0, sizeof(uint32_t) * (size_t)(S->nlocals + 1));
    if (loop) {
        v->ndims = loop->aux;
        for (int d = 0; d < loop->aux; d++)
            if (loop->vars[d] >= 0 && loop->vars[d] < S->nlocals && !assign_count(region, loop->vars[d]))
                v->own[loop->vars[d]] |= 1u << d;
        for (int i = 0; i < region->n; i++) { /* the body's leading assignments: i = lo + k * step */
            tk_ir *a = region->k[i];
            if (a->op != IR_ASSIGN) break;
            if (assign_count(region, a->local) == 1 && ty_is_int(a->k[0]->ty)) v->own[a->local] |= own_of(v, a->k[0], loop);
        }
    } else {
        v->ndims = S->npar_own;
        for (int d = 0; d < S->npar_own; d++) {
            int p = S->par_own[d], l = p >= 0 ? S->plocal[p] : -1;
            if (l >= 0 && !assign_count(region, l)) v->own[l] |= 1u << d;
        }
    }
}

static void check_rmw(verifier *v, tk_ir *s) {
    if (!v->region || s->sub != ST_RMW) return;
    if (s->param < 64 && (v->S->plarr >> s->param & 1)) return; /* a caller's local array: private */
    uint32_t all = 0;
    for (int i = 1; i < s->n; i++) all |= own_of(v, s->k[i], NULL);
    uint32_t need = v->ndims >= 32 ? ~0u : (1u << v->ndims) - 1;
    if (v->ndims == 0 || (all & need) != need) {
        char what[160];
        snprintf(what, sizeof what, "'%s'", v->S->pnames[s->param]);
        BAD(s, "a non-atomic read-modify-write of %s in parallel code, on an element that is not the iteration's own "
               "(a data race)", what);
    }
}

/* The value type of an element of dtype dt: f16 and bf16 are stored, f32 computed. */
static tk_type value_type(int dt) { return ty_value(dt_is_half(dt) ? TACK_F32 : (tack_dtype)dt); }

/* A float64 stored into a float16 (bfloat16) element: rounded once by tk_d2h (tk_d2b; lower_local.c). */
static int f16_f64(int dt, tk_type t) { return dt_is_half(dt) && ty_eq(t, ty_value(TACK_F64)); }

static tk_type elem_type(verifier *v, int p) {
    return value_type(v->S->ptypes[p].dt);
}

/* The type a store or atomic x writes: its array's element, or with comp the component alone (which
 * must be one of the element's). */
static tk_type written_type(verifier *v, tk_ir *x) {
    tack_dtype dt = (tack_dtype)v->S->ptypes[x->param].dt;
    if (!x->comp) return elem_type(v, x->param);
    int n = dt_form(dt) == TACK_FORM_TRANSFORM ? 7 : dt_rows(dt) * dt_cols(dt);
    if (x->comp < 0 || x->comp > n || n < 2) BAD(x, "%s of a component the element does not have", "store");
    return value_type(dt_scalar(dt));
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

/* A local array's access (IR_LLOAD, IR_LSTORE): one i64 index per axis. */
static void lidx(verifier *v, tk_ir *x, int first) {
    if (x->local < 0 || x->local >= v->S->nlocals || v->S->locals[x->local].ty.kind != TY_ARRAY)
        BAD(x, "%s of something not a local array", "access");
    if (x->n - first != v->S->locals[x->local].ty.ndim) BAD(x, "%s with the wrong number of indices", "local array access");
    for (int i = first; i < x->n; i++) {
        vx(v, x->k[i]);
        if (!ty_is_int(x->k[i]->ty) || dt_bits((tack_dtype)x->k[i]->ty.dt) != 64) BAD(x, "%s index is not i64", "local array");
    }
}

static void vx(verifier *v, tk_ir *x) {
    if (!x) BAD(x, "%s", "missing expression");
    if (is_stmt(x->op)) BAD(x, "statement %s used as an expression", "node");
    if (x->ty.kind == TY_UNKNOWN) BAD(x, "%s of unknown type", "expression");
    for (int i = 0; i < x->n; i++)
        if (x->op != IR_LOAD && x->op != IR_ATOMIC && x->op != IR_LLOAD) vx(v, x->k[i]);
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
    case IR_LLOAD: lidx(v, x, 0); break;
    case IR_ATOMIC:
        for (int i = 0; i < ir_atomic_first(x); i++) {
            vx(v, x->k[i]);
            if (!ty_eq(x->k[i]->ty, x->ty)) BAD(x, "%s value differs from the element type", "atomic");
        }
        idx(v, x, ir_atomic_first(x));
        if (!ty_eq(written_type(v, x), x->ty)) BAD(x, "%s differs from the element type", "atomic");
        break;
    case IR_WARP:
        if (x->sub >= WARP_COUNT || x->n != (x->sub <= WARP_DOWN ? 2 : 1) || x->c.i < 1 || x->c.i > 32 ||
            (x->c.i & (x->c.i - 1)))
            BAD(x, "%s of a bad form", "a warp exchange");
        if (x->sub <= WARP_DOWN ? !ty_eq(x->k[0]->ty, x->ty) || !ty_is_int(x->k[1]->ty)
                                : !ty_is_int(x->k[0]->ty) || !ty_is_scalar(x->ty))
            BAD(x, "%s mistyped", "a warp exchange");
        if (x->sub == WARP_DOWN && (x->k[1]->op != IR_CONST || x->k[1]->c.i < 0 || x->k[1]->c.i >= 32))
            BAD(x, "%s whose delta is not a constant from 0 to 31", "a shuffle down");
        break;
    case IR_CALL:
        if (x->aux <= 0 || x->aux >= v->C->nspecs) BAD(x, "%s of an unknown specialization", "call");
        break;
    case IR_LARRAY:
        if (x->local < 0 || x->local >= v->S->nlocals || v->S->locals[x->local].ty.kind != TY_ARRAY)
            BAD(x, "%s that is no local array", "an array argument");
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
        check_rmw(v, s);
        tk_type et = written_type(v, s);
        if (!ty_eq(s->k[0]->ty, et) && !f16_f64(v->S->ptypes[s->param].dt, s->k[0]->ty))
            BAD(s, "%s value differs from the element type", "store");
        return;
    }
    case IR_EVAL: vx(v, s->k[0]); return;
    case IR_LSTORE:
    case IR_LFILL:
        vx(v, s->k[0]);
        if (s->op == IR_LSTORE) lidx(v, s, 1);
        else if (s->n != 1 || s->local < 0 || s->local >= v->S->nlocals || v->S->locals[s->local].ty.kind != TY_ARRAY)
            BAD(s, "%s of something not a local array", "fill");
        if (!ty_eq(s->k[0]->ty, value_type(v->S->locals[s->local].ty.dt)) && !f16_f64(v->S->locals[s->local].ty.dt, s->k[0]->ty))
            BAD(s, "%s value differs from the element type", "local array store");
        return;
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
    case IR_PFOR: {
        for (int i = 0; i < s->aux; i++) vx(v, s->k[i]);
        tk_ir *saved = v->region;
        uint32_t *saved_own = v->own;
        int saved_nd = v->ndims;
        if (ir_pfor_one(s)) v->region = NULL; /* range(1): serial work, nothing runs at once */
        else enter_region(v, s->k[s->aux], s);
        v->loops++;
        vs(v, s->k[s->aux]);
        v->loops--;
        v->region = saved;
        v->own = saved_own;
        v->ndims = saved_nd;
        return;
    }
    case IR_BREAK:
    case IR_CONTINUE:
        if (!v->loops) BAD(s, "%s outside a loop", "break/continue");
        return;
    case IR_BARRIER:
        if (!v->region || v->S != v->C->specs[0]) BAD(s, "%s outside a blocks loop", "barrier");
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
    verifier v = {C, NULL, after, 0, NULL, 0, NULL};
    for (int i = 0; i < C->nspecs; i++) {
        v.S = C->specs[i];
        v.region = NULL;
        if (!v.S->body) continue;
        if (i > 0 && v.S->par) enter_region(&v, v.S->body, NULL);
        vs(&v, v.S->body);
    }
}
