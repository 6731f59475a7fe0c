/*
 * ir.c -- construction and small queries of the typed IR.
 *
 * The IR (compiler.h) is a tree of tk_ir nodes in the compile's arena.  Each
 * node has an operation, a type, a source line and a growable list of
 * children; the meaning of the other fields depends on the operation and is
 * documented with tk_irop.  This file holds the helpers every pass uses to
 * build nodes and to ask simple structural questions (is this a constant,
 * does this subtree assign that local, can control leave this loop body
 * early, is this expression the same in every iteration of that loop), and
 * the facts of the compile that lowering, the passes and every emitter read
 * -- a local array's element count and element type, whether a parameter
 * travels as f32 bits -- so that emission never calls into lowering.
 */
#include <string.h>

#include "compiler/compiler.h"

int64_t tk_local_elems(const tk_local *l) {
    int64_t n = 1;
    for (int k = 0; k < l->ty.ndim; k++) n *= l->ashape[k];
    return n;
}

const char *tk_local_elem_type(const tk_local *l, const char *ctype) {
    return l->ty.kind == TY_ARRAY && dt_is_half(l->ty.dt) ? "uint16_t" : ctype;
}

/* Whether parameter p travels as f32 bits: an f16, bf16 or f32 argument, or a
 * Python float that weak_float.c narrowed (C->weak_f32). */
int tk_param_f32(const tk_cc *C, int p) {
    const tack_argtype *a = &C->args[p];
    if (a->is_array) return 0;
    if (a->dtype == TACK_F32 || dt_is_half(a->dtype)) return 1;
    return p < 64 && (C->weak_f32 >> p & 1);
}

/* Whether e has the same value in every iteration of loop: built of
 * constants, extents, locals the loop does not assign and trip counts of
 * those (nests.c's exact stop of a stepped loop; checks.c hoists
 * by it; the CPU layout and verify.c ask it too). */
int ir_invariant(const tk_ir *e, const tk_ir *loop) {
    switch (e->op) {
    case IR_CONST:
    case IR_SHAPE: return 1;
    case IR_LOCAL: return !ir_assigns_local(loop, e->local);
    case IR_CAST:
    case IR_BIN:
    case IR_UN:
    case IR_WRAP:
    case IR_MATH: /* of the math functions, only a trip count (pure integer arithmetic) */
        if (e->op == IR_MATH && e->sub != M_TRIP) return 0;
        for (int i = 0; i < e->n; i++)
            if (!ir_invariant(e->k[i], loop)) return 0;
        return 1;
    default: return 0;
    }
}

/* Whether parallel loop s runs at most one iteration, as the compiler knows
 * from constant extents (`for t in range(1):`, the place for serial work):
 * nothing in its body runs at the same time as anything else, so lowering
 * (lw_in_parallel) and verify.c treat the body as serial code, and a
 * compound assignment there is a plain read and write.  A blocks loop is
 * never one: the threads of even a single block run together. */
int ir_pfor_one(const tk_ir *s) {
    if (s->op != IR_PFOR || ir_is_blocks(s)) return 0;
    int more = 0;
    for (int d = 0; d < s->aux; d++) {
        if (s->k[d]->op != IR_CONST || !ty_is_int(s->k[d]->ty)) return 0;
        if (s->k[d]->c.i <= 0) return 1; /* an empty axis: no iteration at all */
        if (s->k[d]->c.i > 1) more = 1;
    }
    return !more;
}

int tk_new_local(tk_cc *C, tk_spec *S, const char *name, tk_type ty, int scope) {
    if (S->nlocals == S->caplocals) {
        int cap = S->caplocals ? S->caplocals * 2 : 16;
        tk_local *nl = tk_alloc(&C->arena, (size_t)cap * sizeof *nl);
        if (S->nlocals) memcpy(nl, S->locals, (size_t)S->nlocals * sizeof *nl);
        S->locals = nl;
        S->caplocals = cap;
    }
    tk_local *l = &S->locals[S->nlocals];
    memset(l, 0, sizeof *l);
    l->name = name;
    l->ty = ty;
    l->scope = scope;
    return S->nlocals++;
}

tk_ir *ir_new(tk_cc *C, int op, tk_type ty, int line) {
    tk_ir *e = tk_alloc(&C->arena, sizeof *e);
    e->op = (uint8_t)op;
    e->ty = ty;
    e->line = line;
    e->local = -1;
    e->param = -1;
    return e;
}

void ir_push(tk_cc *C, tk_ir *p, tk_ir *k) {
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 2;
        tk_ir **nk = tk_alloc(&C->arena, sizeof(tk_ir *) * (size_t)cap);
        if (p->n) memcpy(nk, p->k, sizeof(tk_ir *) * (size_t)p->n);
        p->k = nk;
        p->cap = cap;
    }
    p->k[p->n++] = k;
}

tk_ir *ir_const_i(tk_cc *C, tk_type ty, int64_t v, int line) {
    tk_ir *e = ir_new(C, IR_CONST, ty, line);
    e->c.i = v;
    return e;
}

tk_ir *ir_const_f(tk_cc *C, tk_type ty, double v, int line) {
    tk_ir *e = ir_new(C, IR_CONST, ty, line);
    e->c.f = v;
    return e;
}

int ir_is_const(const tk_ir *e) { return e->op == IR_CONST && !e->str; }

/* A cast that changes nothing (weak i64 -> i64) is looked through. */
const tk_ir *ir_strip(const tk_ir *e) {
    while (e->op == IR_CAST && e->k[0]->ty.kind == TY_VALUE && e->k[0]->ty.dt == e->ty.dt) e = e->k[0];
    return e;
}

tk_ir *ir_clone(tk_cc *C, const tk_ir *e) {
    tk_ir *r = ir_new(C, e->op, e->ty, e->line);
    *r = *e;
    r->k = tk_alloc(&C->arena, sizeof(tk_ir *) * (size_t)(e->n ? e->n : 1));
    r->cap = e->n;
    for (int j = 0; j < e->n; j++) r->k[j] = ir_clone(C, e->k[j]);
    return r;
}

tk_ir *ir_as_i64(tk_cc *C, tk_ir *x) {
    if (ty_eq(x->ty, ty_value(TACK_I64))) return x;
    tk_ir *c = ir_new(C, IR_CAST, ty_value(TACK_I64), x->line);
    ir_push(C, c, x);
    return c;
}

tk_ir *ir_i64(tk_cc *C, int64_t v, int line) { return ir_const_i(C, ty_value(TACK_I64), v, line); }

tk_ir *ir_local_of(tk_cc *C, const tk_spec *S, int l, int line) {
    tk_ir *r = ir_new(C, IR_LOCAL, S->locals[l].ty, line);
    r->local = l;
    return r;
}

tk_ir *ir_block(tk_cc *C, int line) { return ir_new(C, IR_BLOCK, ty_void(), line); }

tk_ir *ir_for(tk_cc *C, int v, tk_ir *lo, tk_ir *hi, int64_t step, tk_ir *body, int sub) {
    tk_ir *f = ir_new(C, IR_FOR, ty_void(), body->line);
    f->local = v;
    f->sub = (uint8_t)sub;
    ir_push(C, f, ir_as_i64(C, lo));
    ir_push(C, f, ir_as_i64(C, hi));
    ir_push(C, f, ir_i64(C, step, body->line));
    ir_push(C, f, body);
    return f;
}

tk_ir *ir_i64_bin(tk_cc *C, int sub, tk_ir *a, tk_ir *b) {
    int cmp = sub == B_LT || sub == B_LE || sub == B_GE || sub == B_GT || sub == B_NE || sub == B_EQ;
    tk_ir *r = ir_new(C, IR_BIN, ty_value(cmp ? TACK_BOOL : TACK_I64), a->line);
    r->sub = (uint8_t)sub;
    r->aux_ty = ty_value(TACK_I64);
    ir_push(C, r, ir_as_i64(C, a));
    ir_push(C, r, ir_as_i64(C, b));
    return r;
}

tk_ir *ir_and(tk_cc *C, tk_ir *a, tk_ir *b) {
    if (!a) return b;
    tk_ir *r = ir_new(C, IR_AND, ty_value(TACK_BOOL), a->line);
    ir_push(C, r, a);
    ir_push(C, r, b);
    return r;
}

tk_ir *ir_assign(tk_cc *C, int local, tk_ir *v) {
    tk_ir *a = ir_new(C, IR_ASSIGN, ty_void(), v->line);
    a->local = local;
    ir_push(C, a, v);
    return a;
}

int ir_is_simple(const tk_ir *e) {
    return e->op == IR_CONST || e->op == IR_LOCAL || e->op == IR_SHAPE ||
           (e->op == IR_CAST && (e->k[0]->op == IR_LOCAL || e->k[0]->op == IR_CONST || e->k[0]->op == IR_SHAPE));
}

int ir_assigns_local(const tk_ir *s, int local) {
    if (!s) return 0;
    if ((s->op == IR_ASSIGN || s->op == IR_SETCOMP || s->op == IR_FOR) && s->local == local) return 1;
    if (s->op == IR_PFOR)
        for (int d = 0; d < s->aux; d++)
            if (s->vars[d] == local) return 1;
    if (ir_is_blocks(s) && s->local == local) return 1; /* the thread's variable */
    for (int i = 0; i < s->n; i++)
        if (ir_assigns_local(s->k[i], local)) return 1;
    return 0;
}

static int jump_in(const tk_ir *s, int inloop) {
    if (!s) return 0;
    switch (s->op) {
    case IR_RETURN: return 1;
    case IR_BREAK:
    case IR_CONTINUE: return !inloop;
    case IR_CHECK: return 0;
    case IR_FOR:
    case IR_WHILE:
        for (int i = 0; i < s->n; i++)
            if (jump_in(s->k[i], 1)) return 1;
        return 0;
    default:
        for (int i = 0; i < s->n; i++)
            if (jump_in(s->k[i], inloop)) return 1;
        return 0;
    }
}

int ir_has_jump(const tk_ir *s) { return jump_in(s, 0); }

const char *tk_bin_name(int b) {
    static const char *n[B_COUNT] = {"add", "sub", "mul", "div", "floordiv", "mod", "pow", "shl", "shr", "and",
                                     "or", "xor", "eq", "ne", "lt", "le", "gt", "ge", "min", "max", "matmul",
                                     "dot", "cross"};
    return (unsigned)b < B_COUNT ? n[b] : "?";
}

const char *tk_un_name(int u) {
    static const char *n[U_COUNT] = {"neg", "not", "invert", "abs", "truth"};
    return (unsigned)u < U_COUNT ? n[u] : "?";
}

int ir_mentions(const tk_ir *e, int local) {
    if (e->op == IR_LOCAL) return e->local == local;
    for (int i = 0; i < e->n; i++)
        if (ir_mentions(e->k[i], local)) return 1;
    return 0;
}

/* Counts IR_ASSIGN, IR_SETCOMP and IR_FOR (a serial loop sets its variable);
 * a parallel loop's variables are not counted. */
int ir_assignments(const tk_ir *s, int local) {
    int n = ((s->op == IR_ASSIGN || s->op == IR_SETCOMP || s->op == IR_FOR) || ir_is_blocks(s)) && s->local == local;
    for (int i = 0; i < s->n; i++) n += ir_assignments(s->k[i], local);
    return n;
}

/* Structural equality of expressions made of constants, locals, extents,
 * wraps, loads, casts and arithmetic; anything else is never "the same". */
int ir_same(const tk_ir *a, const tk_ir *b) {
    if (a->op != b->op || a->sub != b->sub || a->n != b->n || !ty_eq(a->ty, b->ty)) return 0;
    switch (a->op) {
    case IR_CONST: if (a->c.i != b->c.i || a->str || b->str) return 0; break;
    case IR_LOCAL: if (a->local != b->local) return 0; break;
    case IR_SHAPE: case IR_WRAP: if (a->param != b->param || a->aux != b->aux) return 0; break;
    case IR_LOAD: if (a->param != b->param) return 0; break;
    case IR_CAST: case IR_BIN: case IR_UN: if (a->op == IR_BIN && !ty_eq(a->aux_ty, b->aux_ty)) return 0; break;
    default: return 0;
    }
    for (int i = 0; i < a->n; i++)
        if (!ir_same(a->k[i], b->k[i])) return 0;
    return 1;
}
