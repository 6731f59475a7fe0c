/*
 * speculate.c -- the value that an `if` in a parallel loop assigns is
 * computed before the `if` when computing it can neither fail nor be seen,
 * so the C compiler can vectorize the loop without masked loads.
 *
 * Python's `or` and `and` evaluate their right operand only when the left
 * one leaves the answer open, and lowering writes them so: Conway's Life's
 * rule,
 *
 *     b[i, j] = 1 if c == 3 or (a[i, j] == 1 and c == 2) else 0
 *
 * becomes `t = c == 3; if not t: t = a[i, j] == 1 and c == 2`, a load of
 * a[i, j] in some iterations only.  After checks.c has taken the load's index
 * check out (an index of the loop's own variable within the extent it runs
 * to), GCC still vectorizes such a loop only with a masked load, which a CPU
 * with AVX-512 has for bytes and one with AVX2 alone does not: there the
 * whole loop stayed scalar (Life at 512^2: 0.88 ms a step, 0.031 ms with
 * this pass, in 32-byte lanes).
 *
 * The rewrite: in a parallel loop's body (any depth), an IR_IF with an empty
 * else whose then-block is one assignment `t = e` (empty blocks aside, the
 * remains of checks that went) becomes `s = e; if cond: t = s` with s a new
 * local of the loop, when
 *
 *   - e cannot fail and has no effect: constants, locals, extents, casts
 *     that are not float -> int (C leaves an out-of-range one undefined),
 *     +, -, * and the comparisons, min, max, the bitwise operators, not,
 *     negation, `and`, `or` and selects of those, and loads that checks.c
 *     marked TK_LOAD_IN_BOUNDS (each index a loop's variable plus a
 *     constant, within the extent wherever the loop runs, whether the
 *     condition holds or not; with checks=False as with checks);
 *   - the condition has no effect either (the same list, loads of any
 *     index: they run anyway), so nothing it does can change what e reads;
 *   - e is small (SPEC_NODES nodes, SPEC_LOADS loads): it now runs in the
 *     iterations that did not need it.
 *
 * The `if` that remains assigns a local from a local, which GCC turns into
 * a select.  Where lowering kept `p or q` an expression (nothing in q to
 * check, as with checks=False), it is written p | q under the same
 * conditions on q and p (bools only: Python's `or` of other values is one of
 * them), and `and` p & q: both are computed, in either order.  Results are bit for bit what they were: e is computed from the
 * same values (the condition changes none of them) and is used only where it
 * was.  A division, a call, an index that the condition guards (`i > 0 and
 * a[i - 1] > 0`: at i = 0 the index is -1, which checks.c does not mark) and
 * a longer branch stay as written.
 *
 * Only where parallel loops run in chunks (target.h's TK_LOOPS_CHUNKED: the
 * CPU, whose C compiler vectorizes them); a GPU's compiler predicates
 * branches itself, and there a load the branch skips would cost memory
 * traffic for nothing.
 */
#include "compiler/compiler.h"
#include "compiler/target.h"

#define SPEC_NODES 24 /* e at most this many nodes */
#define SPEC_LOADS 4  /* and this many loads */

typedef struct spec_count {
    int nodes, loads;
} spec_count;

static int scalar(const tk_ir *x) { return x->ty.kind == TY_VALUE && ty_is_scalar(x->ty); }

/* x has no effect and cannot fail; loads only in bounds where `marked` (else any). */
static int pure(const tk_ir *x, int marked, spec_count *n) {
    if (++n->nodes > SPEC_NODES * 4 || !scalar(x)) return 0;
    switch (x->op) {
    case IR_CONST: return !x->str;
    case IR_LOCAL: return x->local >= 0;
    case IR_SHAPE: return 1;
    case IR_LOAD:
        n->loads++;
        if (marked && x->sub != TK_LOAD_IN_BOUNDS) return 0;
        break;
    case IR_CAST:
        if (ty_is_float(x->k[0]->ty) && !ty_is_float(x->ty)) return 0;
        break;
    case IR_BIN:
        switch (x->sub) {
        case B_ADD: case B_SUB: case B_MUL: case B_AND: case B_OR: case B_XOR:
        case B_EQ: case B_NE: case B_LT: case B_LE: case B_GT: case B_GE: case B_MIN: case B_MAX: break;
        default: return 0;
        }
        break;
    case IR_UN:
        if (x->sub != U_NEG && x->sub != U_NOT && x->sub != U_INVERT && x->sub != U_TRUTH) return 0;
        break;
    case IR_AND: case IR_OR: case IR_SELECT: break;
    default: return 0;
    }
    for (int i = 0; i < x->n; i++)
        if (!pure(x->k[i], marked, n)) return 0;
    return 1;
}

/* The one assignment of block b, empty blocks aside, or NULL. */
static tk_ir *only_assign(tk_ir *b) {
    tk_ir *a = NULL;
    for (int i = 0; i < b->n; i++) {
        tk_ir *s = b->k[i];
        if (s->op == IR_BLOCK && s->n == 0) continue;
        if (s->op != IR_ASSIGN || a) return NULL;
        a = s;
    }
    return a;
}

static void spec_block(tk_cc *C, tk_spec *K, tk_ir *b, int scope);

/* s = e; if cond: t = s, in place of b->k[i], when it may. */
static int spec_if(tk_cc *C, tk_spec *K, tk_ir *b, int i, int scope) {
    tk_ir *x = b->k[i];
    tk_ir *a = only_assign(x->k[1]);
    spec_count n = {0, 0}, m = {0, 0};
    if (!a || x->k[2]->n || a->local < 0 || K->locals[a->local].scope != scope) return 0;
    if (!pure(a->k[0], 1, &n) || n.nodes > SPEC_NODES || n.loads > SPEC_LOADS || !pure(x->k[0], 0, &m)) return 0;
    int v = tk_new_local(C, K, tk_fmt(&C->arena, "_spec%d", K->nlocals), a->k[0]->ty, scope);
    K->locals[v].declared = 1;
    K->locals[v].assigns = 1;
    K->locals[v].read = 1;
    tk_ir *val = a->k[0];
    tk_ir *use = ir_new(C, IR_LOCAL, val->ty, val->line);
    use->local = v;
    a->k[0] = use;
    tk_ir *nb = ir_new(C, IR_BLOCK, ty_void(), b->line);
    for (int j = 0; j < b->n; j++) {
        if (j == i) ir_push(C, nb, ir_assign(C, v, val));
        ir_push(C, nb, b->k[j]);
    }
    b->k = nb->k;
    b->n = nb->n;
    b->cap = nb->cap;
    return 1;
}

/* In expression x: `p and q`, `p or q` of bools with both operands without
 * effect and q small and in bounds become p & q, p | q. */
static void spec_expr(tk_ir *x) {
    for (int i = 0; i < x->n; i++) spec_expr(x->k[i]);
    if ((x->op != IR_AND && x->op != IR_OR) || !ty_is_bool(x->ty) || !ty_is_bool(x->k[0]->ty) ||
        !ty_is_bool(x->k[1]->ty))
        return;
    spec_count n = {0, 0}, m = {0, 0};
    if (!pure(x->k[1], 1, &n) || n.nodes > SPEC_NODES || n.loads > SPEC_LOADS || !pure(x->k[0], 0, &m)) return;
    x->sub = x->op == IR_AND ? B_AND : B_OR;
    x->op = IR_BIN;
    x->aux_ty = x->ty;
}

static void spec_block(tk_cc *C, tk_spec *K, tk_ir *b, int scope) {
    for (int i = 0; i < b->n; i++) {
        tk_ir *s = b->k[i];
        switch (s->op) {
        case IR_BLOCK: spec_block(C, K, s, scope); break;
        case IR_IF:
            spec_expr(s->k[0]);
            spec_block(C, K, s->k[1], scope);
            spec_block(C, K, s->k[2], scope);
            if (spec_if(C, K, b, i, scope)) i++; /* the new assignment went before it */
            break;
        case IR_WHILE:
            spec_expr(s->k[0]);
            spec_block(C, K, s->k[1], scope);
            break;
        case IR_FOR:
            for (int j = 0; j < 3; j++) spec_expr(s->k[j]);
            spec_block(C, K, s->k[3], scope);
            break;
        case IR_PFOR: break;
        default:
            for (int j = 0; j < s->n; j++) spec_expr(s->k[j]);
            break;
        }
    }
}

static void spec_loop(tk_cc *C, tk_spec *K, tk_ir *loop, tk_ir *pre) {
    (void)pre;
    spec_block(C, K, loop->k[loop->aux], K->locals[loop->vars[0]].scope);
}

void tk_speculate(tk_cc *C) {
    tk_spec *K = C->nspecs ? C->specs[0] : NULL;
    if (K && K->body && C->target->loops == TK_LOOPS_CHUNKED) tk_each_pfor(C, K, K->body, spec_loop);
}
