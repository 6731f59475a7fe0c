/*
 * lower.c -- from the kernel AST to the typed IR, inferring types on the way.
 *
 * The IR is a structured tree (compiler.h): blocks, if, while, for, parallel
 * for, and expressions in which every operand already has the operation's
 * type.  Lowering makes everything implicit in Python explicit:
 *
 *   - conversions are IR_CAST nodes (NumPy 2 promotion, NEP 50 weak scalars);
 *   - intrinsics are resolved (sqrt -> IR_MATH sqrt of f32 or f64, min -> a
 *     select, vec3(...) -> IR_VEC ...);
 *   - the safety checks are IR_CHECK statements placed before the expression
 *     they guard: an index check before a load, a zero check before an
 *     integer division, so IR expressions never fault.  Expressions that
 *     need statements (a checked load on the right of `and`, a call to a
 *     @tack.func) are split: the statements go into the current block, and
 *     short-circuit and conditional expressions that contain them become an
 *     if over a temporary, so evaluation order stays Python's.
 *
 * Types are inferred by running the lowering itself to a fixed point: a
 * local's type is the promotion of everything assigned to it, and the first
 * passes run in "infer" mode, where a local whose type is not known yet reads
 * as TY_UNKNOWN and everything built on it is unknown too.  When a pass
 * changes no local type, one final pass builds the IR for real and reports
 * the errors.  Each @tack.func is specialized per call site argument types,
 * lowered to completion when first called; calling a function that is still
 * being lowered is recursion, and an error.
 *
 * Scoping in a kernel: the top-level `for` loops over range/ndrange are
 * parallel.  Names assigned inside one are private to its iterations (a scope
 * of their own, so two parallel loops may both use `i`); names assigned at
 * the top level live in the kernel's frame, shared by all iterations and
 * read-only inside parallel loops.  Assigning a frame name inside a parallel
 * loop is a compile error (it would be a data race); reductions go through
 * an array element (`acc[0] += v` is atomic) or tack.atomic_add.
 */
#include <string.h>

#include "compiler/compiler.h"

#include "compiler/lower.h"

static void lower_block_into(LW *L, tack_node *n, tk_ir *blk);
static void lower_stmt(LW *L, tack_node *n);

/* ------------------------------------------------------------ helpers */
tk_ir *lw_mk(LW *L, int op, tk_type ty, tack_node *n) { return ir_new(L->C, op, ty, n ? n->line : 0); }
void lw_emit(LW *L, tk_ir *s) { ir_push(L->C, L->blk, s); }
tk_ir *lw_kid(LW *L, tk_ir *p, tk_ir *k) { ir_push(L->C, p, k); return p; }
tk_ir *lw_unknown(LW *L, tack_node *n) { return lw_mk(L, IR_CONST, ty_unknown(), n); }

static int find_local_in(tk_spec *S, const char *name, int scope) {
    for (int i = 0; i < S->nlocals; i++)
        if (S->locals[i].scope == scope && S->locals[i].name && strcmp(S->locals[i].name, name) == 0) return i;
    return -1;
}


static int lookup(LW *L, const char *name) {
    int i = -1;
    if (L->pfor >= 0) i = find_local_in(L->S, name, L->pfor);
    if (i < 0) i = find_local_in(L->S, name, -1);
    return i;
}

int lw_array_param(LW *L, const char *name) {
    for (int i = 0; i < L->S->nparams; i++)
        if (L->S->ptypes[i].kind == TY_ARRAY && strcmp(L->S->pnames[i], name) == 0) return i;
    return -1;
}

tk_ir *lw_local_ref(LW *L, int loc, int line) {
    tk_ir *e = ir_new(L->C, IR_LOCAL, L->S->locals[loc].ty, line);
    e->local = loc;
    return e;
}

int lw_temp(LW *L, tk_type ty) {
    int t = tk_new_local(L->C, L->S, tk_fmt(&L->C->arena, "_t%d", L->ntemps++), ty, L->pfor);
    L->S->locals[t].declared = 1;
    return t;
}

tk_ir *lw_assign_ir(LW *L, int loc, tk_ir *v, int line) {
    tk_ir *a = ir_new(L->C, IR_ASSIGN, ty_void(), line);
    a->local = loc;
    ir_push(L->C, a, v);
    return a;
}

/* Evaluate e once into a temporary unless it is cheap and pure to repeat. */
tk_ir *lw_hoist(LW *L, tk_ir *e) {
    if (ir_is_simple(e) || e->ty.kind == TY_UNKNOWN) return e;
    int t = lw_temp(L, e->ty);
    lw_emit(L, lw_assign_ir(L, t, e, e->line));
    return lw_local_ref(L, t, e->line);
}

int lw_known(tk_ir *e) { return e->ty.kind != TY_UNKNOWN; }

tk_ir *lw_cast(LW *L, tk_ir *e, tk_type to) {
    if (e->ty.kind == TY_UNKNOWN || to.kind == TY_UNKNOWN) {
        if (to.kind == TY_UNKNOWN) return e;
        tk_ir *c = ir_new(L->C, IR_CAST, to, e->line);
        return lw_kid(L, c, e);
    }
    if (ty_eq(e->ty, to)) return e;
    if (!ty_is_scalar(to)) {
        int n = dt_rows((tack_dtype)to.dt) * dt_cols((tack_dtype)to.dt);
        tk_type comp = ty_value(dt_scalar((tack_dtype)to.dt));
        tk_ir *v = ir_new(L->C, IR_VEC, to, e->line);
        if (ty_is_scalar(e->ty)) {
            tk_ir *s = lw_hoist(L, lw_cast(L, e, comp));
            for (int i = 0; i < n; i++) ir_push(L->C, v, s);
        } else {
            tk_ir *src = lw_hoist(L, e);
            int en = dt_rows((tack_dtype)e->ty.dt) * dt_cols((tack_dtype)e->ty.dt);
            if (en != n) return e; /* caller reports */
            tk_type scomp = ty_value(dt_scalar((tack_dtype)e->ty.dt));
            for (int i = 0; i < n; i++) {
                tk_ir *c = ir_new(L->C, IR_COMP, scomp, e->line);
                ir_push(L->C, c, src);
                ir_push(L->C, c, ir_const_i(L->C, ty_value(TACK_I64), i, e->line));
                ir_push(L->C, v, lw_cast(L, c, comp));
            }
        }
        return v;
    }
    if (!ty_is_scalar(e->ty)) return e;
    if (e->op == IR_CONST && e->ty.weak == 0 && 0) return e;
    tk_ir *c = ir_new(L->C, IR_CAST, to, e->line);
    return lw_kid(L, c, e);
}

tk_ir *lw_truth(LW *L, tk_ir *e, tack_node *n) {
    if (!lw_known(e)) return lw_cast(L, e, ty_value(TACK_BOOL));
    if (ty_is_bool(e->ty)) return e->ty.weak ? lw_cast(L, e, ty_value(TACK_BOOL)) : e;
    if (!ty_is_scalar(e->ty)) ERR(n, "the truth value of a %s is ambiguous", TN(e->ty));
    tk_ir *u = lw_mk(L, IR_UN, ty_value(TACK_BOOL), n);
    u->sub = U_TRUTH;
    return lw_kid(L, u, e);
}

int lw_site(LW *L, int kind, int line, int axis, const char *array, const char *msg) {
    tk_cc *C = L->C;
    if (C->nsites == C->capsites) {
        int cap = C->capsites ? C->capsites * 2 : 16;
        tk_site *ns = tk_alloc(&C->arena, (size_t)cap * sizeof *ns);
        if (C->nsites) memcpy(ns, C->sites, (size_t)C->nsites * sizeof *ns);
        C->sites = ns;
        C->capsites = cap;
    }
    tk_site *s = &C->sites[C->nsites];
    s->kind = kind;
    s->line = line;
    s->axis = axis;
    s->array = array;
    s->message = msg;
    s->func = L->F->name;
    s->file = L->F->filename;
    return C->nsites++;
}

void lw_check(LW *L, int kind, int site, tk_ir *a, tk_ir *b, int line) {
    tk_ir *c = ir_new(L->C, IR_CHECK, ty_void(), line);
    c->sub = (uint8_t)kind;
    c->aux = site;
    ir_push(L->C, c, a);
    if (b) ir_push(L->C, c, b);
    lw_emit(L, c);
}

tk_type lw_dtype_type(tack_dtype dt) {
    if (dt == TACK_F16) return ty_value(TACK_F32);
    return ty_value(dt);
}

/* -------------------------------------------------------- assignments */
static void assign_local(LW *L, int loc, tk_ir *v, tack_node *n) {
    tk_local *l = &L->S->locals[loc];
    if (l->is_param && L->S->ptypes && 0) return;
    if (!lw_known(v)) {
        if (!L->infer) ERR(n, "cannot infer the type of '%s'", l->name);
        return;
    }
    if (v->ty.kind == TY_TUPLE)
        ERR(n, "cannot assign the %d values a function returned to '%s'; unpack them (a, b = f(...))",
            L->C->specs[ty_tuple_spec(v->ty)]->nret, l->name);
    if (v->ty.kind != TY_VALUE)
        ERR(n, "cannot assign %s to '%s': only numbers, bools, vectors and matrices can be local variables", TN(v->ty), l->name);
    if (l->declared || l->is_param) {
        tk_type t = l->ty;
        int vs = ty_is_scalar(v->ty), ts = ty_is_scalar(t);
        int bad = vs != ts || (!vs && v->ty.dt != t.dt);
        if (vs && ts && !v->ty.weak) {
            tack_scalar_kind vk = dt_kind((tack_dtype)v->ty.dt), tk = dt_kind((tack_dtype)t.dt);
            int vr = vk == TACK_KIND_BOOL ? 0 : vk == TACK_KIND_FLOAT ? 2 : 1;
            int tr = tk == TACK_KIND_BOOL ? 0 : tk == TACK_KIND_FLOAT ? 2 : 1;
            if (vr > tr) bad = 1;
        }
        if (bad) ERR(n, "cannot assign %s to '%s' of type %s", TN(v->ty), l->name, TN(t));
        lw_emit(L, lw_assign_ir(L, loc, lw_cast(L, v, t), n->line));
        return;
    }
    tk_type t = l->ty, u;
    if (t.kind == TY_UNKNOWN) u = v->ty;
    else {
        if (ty_is_scalar(t) != ty_is_scalar(v->ty) || (!ty_is_scalar(t) && t.dt != v->ty.dt))
            ERR(n, "cannot assign %s to '%s' of type %s", TN(v->ty), l->name, TN(t));
        u = ty_promote(t, v->ty);
        if (u.kind == TY_UNKNOWN) ERR(n, "cannot assign %s to '%s' of type %s", TN(v->ty), l->name, TN(t));
    }
    if (!ty_eq(u, t)) {
        l->ty = u;
        L->changed = 1;
    }
    lw_emit(L, lw_assign_ir(L, loc, lw_cast(L, v, l->ty), n->line));
}

/* The local a name assigned at this point refers to (creating none). */
static int target_local(LW *L, tack_node *t) {
    const char *name = t->name;
    if (lw_array_param(L, name) >= 0) ERR(t, "cannot assign to array parameter '%s'", name);
    int i = -1;
    if (L->pfor >= 0) {
        if (find_local_in(L->S, name, -1) >= 0)
            ERR(t, "cannot assign to '%s' inside a parallel loop: it is shared by all iterations "
                   "(assigned outside the loop); use an array element (a[0] += v is atomic) for a reduction", name);
        i = find_local_in(L->S, name, L->pfor);
    } else {
        i = find_local_in(L->S, name, -1);
    }
    if (i < 0) ERR(t, "internal error: no local for '%s'", name);
    return i;
}

/* ---------------------------------------------------------- indexing */
tk_ir *lw_index_value(LW *L, tack_node *n) {
    tk_ir *e = lw_expr(L, n);
    if (!lw_known(e)) return lw_cast(L, e, ty_value(TACK_I64));
    if (!ty_is_int(e->ty) && !ty_is_bool(e->ty))
        ERR(n, "array indices must be integers, not %s", TN(e->ty));
    e = lw_cast(L, e, ty_value(TACK_I64));
    /* i, i + 1, i - 1 stay in the index: checks.c reasons about them */
    const tk_ir *x = e;
    while (x->op == IR_CAST && x->k[0]->ty.kind == TY_VALUE && x->k[0]->ty.dt == x->ty.dt) x = x->k[0];
    if (x->op == IR_BIN && (x->sub == B_ADD || x->sub == B_SUB) && ir_is_simple(x->k[0]) && x->k[1]->op == IR_CONST)
        return e;
    return lw_hoist(L, e);
}

/* Lower the indices of a[i, j, ...] into k (wrapped, checked); returns their count. */
void lw_indices(LW *L, int p, tack_node **idx, int nidx, tk_ir *out, tack_node *n) {
    tk_type at = L->S->ptypes[p];
    if (nidx == 1 && idx[0]->kind == TACK_N_TUPLE) {
        tack_node *tup = idx[0];
        idx = tup->kids;
        nidx = tup->nkids;
    }
    if (nidx != at.ndim)
        ERR(n, "array '%s' has %d dimension%s but is indexed with %d ind%s", L->S->pnames[p], at.ndim,
            at.ndim == 1 ? "" : "s", nidx, nidx == 1 ? "ex" : "ices");
    for (int k = 0; k < nidx; k++) {
        if (idx[k]->kind == TACK_N_TUPLE || (idx[k]->kind == TACK_N_CALL && idx[k]->name && strcmp(idx[k]->name, "slice") == 0))
            ERR(idx[k], "slices and tuple indices are not supported; index each axis with an integer");
        tk_ir *e = lw_index_value(L, idx[k]);
        tk_ir *s = lw_mk(L, IR_SHAPE, ty_value(TACK_I64), idx[k]);
        s->param = p;
        s->aux = k;
        if (L->C->opts.checks && lw_known(e)) {
            int site = lw_site(L, CK_INDEX, idx[k]->line, k, L->S->pnames[p], NULL);
            lw_check(L, CK_INDEX, site, e, s, idx[k]->line);
        }
        tk_ir *w = lw_mk(L, IR_WRAP, ty_value(TACK_I64), idx[k]);
        w->param = p;
        w->aux = k;
        ir_push(L->C, w, e);
        ir_push(L->C, out, w);
    }
}

void lw_mark_written(LW *L, int p) { L->S->written |= (uint64_t)1 << (p & 63); }

static tk_ir *load(LW *L, int p, tack_node **idx, int nidx, tack_node *n) {
    tk_ir *ld = lw_mk(L, IR_LOAD, lw_dtype_type((tack_dtype)L->S->ptypes[p].dt), n);
    ld->param = p;
    lw_indices(L, p, idx, nidx, ld, n);
    if (L->S->ptypes[p].dt == TACK_F16) L->C->uses_f16 = 1;
    return ld;
}

/* Component index of v.x / v[k] (constant) or -1 for a dynamic one. */
static int comp_of_attr(const char *a) {
    if (!a[0] || a[1]) return -1;
    switch (a[0]) {
    case 'x': return 0;
    case 'y': return 1;
    case 'z': return 2;
    case 'w': return 3;
    }
    return -1;
}

tk_ir *lw_component(LW *L, tk_ir *v, tk_ir *k, tack_node *n) {
    tk_type ct = ty_value(dt_scalar((tack_dtype)v->ty.dt));
    int len = dt_rows((tack_dtype)v->ty.dt);
    if (k->op == IR_CONST) {
        int64_t i = k->c.i;
        if (i < 0) i += len;
        if (i < 0 || i >= len) ERR(n, "index %lld is out of range for a %s", (long long)k->c.i, TN(v->ty));
        k = ir_const_i(L->C, ty_value(TACK_I64), i, n->line);
    } else if (L->C->opts.checks) {
        int site = lw_site(L, CK_COMP, n->line, len, NULL, NULL);
        lw_check(L, CK_COMP, site, k, ir_const_i(L->C, ty_value(TACK_I64), len, n->line), n->line);
    }
    tk_ir *c = lw_mk(L, IR_COMP, ct, n);
    ir_push(L->C, c, v);
    ir_push(L->C, c, k);
    return c;
}

static tk_ir *lower_subscript(LW *L, tack_node *n) {
    if (n->nkids < 2) ERR(n, "malformed subscript");
    tack_node *base = n->kids[0];
    /* a.shape[k] */
    if (base->kind == TACK_N_ATTRIBUTE && base->name && strcmp(base->name, "shape") == 0 && base->nkids == 1 &&
        base->kids[0]->kind == TACK_N_NAME) {
        int p = lw_array_param(L, base->kids[0]->name);
        if (p < 0) ERR(base, "'%s' is not an array", base->kids[0]->name);
        tack_node *ix = n->kids[1];
        int64_t k;
        if (ix->kind == TACK_N_CONST_INT) k = ix->ival;
        else if (ix->kind == TACK_N_UNARYOP && ix->op == TACK_OP_NEG && ix->nkids == 1 && ix->kids[0]->kind == TACK_N_CONST_INT) k = -ix->kids[0]->ival;
        else ERR(ix, "a.shape must be indexed with a constant integer");
        int nd = L->S->ptypes[p].ndim;
        if (k < 0) k += nd;
        if (k < 0 || k >= nd) ERR(ix, "axis %lld is out of range for the %d-D array '%s'", (long long)ix->ival, nd, L->S->pnames[p]);
        tk_ir *s = lw_mk(L, IR_SHAPE, ty_weak(TACK_I64), n);
        s->param = p;
        s->aux = (int)k;
        return s;
    }
    if (base->kind == TACK_N_NAME && lw_array_param(L, base->name) >= 0)
        return load(L, lw_array_param(L, base->name), n->kids + 1, n->nkids - 1, n);
    tk_ir *v = lw_expr(L, base);
    if (!lw_known(v)) return lw_unknown(L, n);
    if (ty_is_vector(v->ty)) {
        if (n->nkids != 2) ERR(n, "a %s is indexed with one index", TN(v->ty));
        v = lw_hoist(L, v);
        return lw_component(L, v, lw_index_value(L, n->kids[1]), n);
    }
    if (ty_is_matrix(v->ty)) {
        tack_node **ix = n->kids + 1;
        int ni = n->nkids - 1;
        if (ni == 1 && ix[0]->kind == TACK_N_TUPLE) {
            ni = ix[0]->nkids;
            ix = ix[0]->kids;
        }
        if (ni != 2) ERR(n, "a matrix is indexed as m[i, j]");
        v = lw_hoist(L, v);
        tk_ir *i = lw_index_value(L, ix[0]), *j = lw_index_value(L, ix[1]);
        int r = dt_rows((tack_dtype)v->ty.dt), c = dt_cols((tack_dtype)v->ty.dt);
        if (i->op != IR_CONST || j->op != IR_CONST || i->c.i < 0 || i->c.i >= r || j->c.i < 0 || j->c.i >= c)
            ERR(n, "matrix indices must be constants in range");
        tk_ir *e = lw_mk(L, IR_COMP, ty_value(dt_scalar((tack_dtype)v->ty.dt)), n);
        ir_push(L->C, e, v);
        ir_push(L->C, e, i);
        ir_push(L->C, e, j);
        return e;
    }
    ERR(n, "%s is not subscriptable", TN(v->ty));
}

/* ------------------------------------------------------- binary ops */
static const char *op_symbol(tack_op op) {
    static const char *s[TACK_OP_COUNT] = {
        [TACK_OP_ADD] = "+", [TACK_OP_SUB] = "-", [TACK_OP_MUL] = "*", [TACK_OP_DIV] = "/",
        [TACK_OP_FLOORDIV] = "//", [TACK_OP_MOD] = "%", [TACK_OP_POW] = "**", [TACK_OP_MATMUL] = "@",
        [TACK_OP_LSHIFT] = "<<", [TACK_OP_RSHIFT] = ">>", [TACK_OP_BITAND] = "&", [TACK_OP_BITOR] = "|",
        [TACK_OP_BITXOR] = "^", [TACK_OP_EQ] = "==", [TACK_OP_NE] = "!=", [TACK_OP_LT] = "<",
        [TACK_OP_LE] = "<=", [TACK_OP_GT] = ">", [TACK_OP_GE] = ">="};
    return (unsigned)op < TACK_OP_COUNT && s[op] ? s[op] : "?";
}

tk_ir *lw_bin(LW *L, int b, tk_type ty, tk_ir *x, tk_ir *y, int line) {
    tk_ir *e = ir_new(L->C, IR_BIN, ty, line);
    e->sub = (uint8_t)b;
    e->aux_ty = ty;
    ir_push(L->C, e, x);
    ir_push(L->C, e, y);
    return e;
}

/* An integer constant below zero, written as one (-1) or folded to one. */
static int negative_literal(const tk_ir *y) {
    if (ir_is_const(y)) return ty_is_int(y->ty) && y->c.i < 0 && dt_kind((tack_dtype)y->ty.dt) == TACK_KIND_INT;
    return y->op == IR_UN && y->sub == U_NEG && ir_is_const(y->k[0]) && ty_is_int(y->k[0]->ty) && y->k[0]->c.i > 0;
}

static tk_ir *binop(LW *L, tack_op op, tk_ir *x, tk_ir *y, tack_node *n) {
    if (!lw_known(x) || !lw_known(y)) return lw_unknown(L, n);
    if (x->ty.kind != TY_VALUE || y->ty.kind != TY_VALUE)
        ERR(n, "unsupported operand types for %s: %s and %s", op_symbol(op), TN(x->ty), TN(y->ty));
    int xv = !ty_is_scalar(x->ty), yv = !ty_is_scalar(y->ty);
    if (op == TACK_OP_MATMUL) {
        if (!ty_is_matrix(x->ty) || (!ty_is_matrix(y->ty) && !ty_is_vector(y->ty)))
            ERR(n, "@ needs a matrix on the left and a matrix or vector on the right, not %s and %s", TN(x->ty), TN(y->ty));
        tack_dtype xd = (tack_dtype)x->ty.dt, yd = (tack_dtype)y->ty.dt;
        if (dt_scalar(xd) != dt_scalar(yd) || dt_cols(xd) != dt_rows(yd))
            ERR(n, "shapes do not match for @: %s and %s", TN(x->ty), TN(y->ty));
        tack_dtype rd = dt_compose(dt_scalar(xd), dt_rows(xd), dt_cols(yd));
        L->C->uses_vec = 1;
        return lw_bin(L, B_MATMUL, ty_value(rd), x, y, n->line);
    }
    if (xv || yv) {
        tk_type t = ty_promote(x->ty, y->ty);
        if (t.kind == TY_UNKNOWN) ERR(n, "unsupported operand types for %s: %s and %s", op_symbol(op), TN(x->ty), TN(y->ty));
        int b;
        switch (op) {
        case TACK_OP_ADD: b = B_ADD; break;
        case TACK_OP_SUB: b = B_SUB; break;
        case TACK_OP_MUL: b = B_MUL; break;
        case TACK_OP_DIV: b = B_DIV; break;
        default: ERR(n, "unsupported operand types for %s: %s and %s", op_symbol(op), TN(x->ty), TN(y->ty));
        }
        if (b == B_DIV && dt_kind(dt_scalar((tack_dtype)t.dt)) != TACK_KIND_FLOAT)
            ERR(n, "/ on integer vectors is not supported");
        if ((b == B_MUL || b == B_DIV) && xv && yv && ty_is_matrix(t))
            ERR(n, "use @ to multiply matrices");
        L->C->uses_vec = 1;
        return lw_bin(L, b, t, lw_cast(L, x, t), lw_cast(L, y, t), n->line);
    }
    /* arithmetic on two bools is arithmetic on ints, as in Python */
    int arith = op == TACK_OP_ADD || op == TACK_OP_SUB || op == TACK_OP_MUL || op == TACK_OP_DIV ||
                op == TACK_OP_FLOORDIV || op == TACK_OP_MOD || op == TACK_OP_POW;
    int shift = op == TACK_OP_LSHIFT || op == TACK_OP_RSHIFT;
    if ((arith || shift) && ty_is_bool(x->ty) && ty_is_bool(y->ty)) {
        tk_type it = x->ty.weak && y->ty.weak ? ty_weak(TACK_I64) : ty_value(TACK_I64);
        x = lw_cast(L, x, it);
        y = lw_cast(L, y, it);
    }
    tk_type t = ty_promote(x->ty, y->ty);
    if (t.kind == TY_UNKNOWN) ERR(n, "unsupported operand types for %s: %s and %s", op_symbol(op), TN(x->ty), TN(y->ty));
    if (arith && ty_is_bool(t)) t = t.weak ? ty_weak(TACK_I64) : ty_value(TACK_I64);
    switch (op) {
    case TACK_OP_ADD: return lw_bin(L, B_ADD, t, lw_cast(L, x, t), lw_cast(L, y, t), n->line);
    case TACK_OP_SUB: return lw_bin(L, B_SUB, t, lw_cast(L, x, t), lw_cast(L, y, t), n->line);
    case TACK_OP_MUL: return lw_bin(L, B_MUL, t, lw_cast(L, x, t), lw_cast(L, y, t), n->line);
    case TACK_OP_DIV: {
        tk_type r = ty_floatify(t);
        return lw_bin(L, B_DIV, r, lw_cast(L, x, r), lw_cast(L, y, r), n->line);
    }
    case TACK_OP_FLOORDIV:
    case TACK_OP_MOD: {
        int b = op == TACK_OP_FLOORDIV ? B_FLOORDIV : B_MOD;
        x = lw_cast(L, x, t);
        y = lw_cast(L, y, t);
        if (ty_is_int(t)) {
            x = lw_hoist(L, x);
            y = lw_hoist(L, y);
            if (L->C->opts.checks && !(y->op == IR_CONST && y->c.i != 0)) {
                int site = lw_site(L, CK_ZERODIV, n->line, 0, NULL,
                                    b == B_FLOORDIV ? "integer division by zero" : "integer modulo by zero");
                lw_check(L, CK_ZERODIV, site, y, NULL, n->line);
            }
        }
        return lw_bin(L, b, t, x, y, n->line);
    }
    case TACK_OP_POW:
        if (ty_is_int(t) && negative_literal(y)) { /* 2 ** -1 is 0.5, as in Python */
            tk_type r = ty_floatify(t);
            return lw_bin(L, B_POW, r, lw_cast(L, x, r), lw_cast(L, y, r), n->line);
        }
        x = lw_cast(L, x, t);
        y = lw_cast(L, y, t);
        if (ty_is_int(t)) {
            x = lw_hoist(L, x);
            y = lw_hoist(L, y);
            /* otherwise int ** int is an int, and a negative exponent at run time
             * is NumPy's ValueError rather than a silent 0 */
            if (L->C->opts.checks && dt_kind((tack_dtype)t.dt) == TACK_KIND_INT && !(ir_is_const(y) && y->c.i >= 0)) {
                int site = lw_site(L, CK_NEGPOW, n->line, 0, NULL, NULL);
                lw_check(L, CK_NEGPOW, site, y, NULL, n->line);
            }
        }
        return lw_bin(L, B_POW, t, x, y, n->line);
    case TACK_OP_LSHIFT:
    case TACK_OP_RSHIFT:
    case TACK_OP_BITAND:
    case TACK_OP_BITOR:
    case TACK_OP_BITXOR: {
        if (ty_is_float(t)) ERR(n, "unsupported operand types for %s: %s and %s", op_symbol(op), TN(x->ty), TN(y->ty));
        int b = op == TACK_OP_LSHIFT ? B_SHL : op == TACK_OP_RSHIFT ? B_SHR : op == TACK_OP_BITAND ? B_AND
              : op == TACK_OP_BITOR ? B_OR : B_XOR;
        return lw_bin(L, b, t, lw_cast(L, x, t), lw_cast(L, y, t), n->line);
    }
    default: ERR(n, "unsupported binary operator %s", op_symbol(op));
    }
}

static tk_ir *compare(LW *L, tack_op op, tk_ir *x, tk_ir *y, tack_node *n) {
    if (!lw_known(x) || !lw_known(y)) return lw_unknown(L, n);
    if (!ty_is_scalar(x->ty) || !ty_is_scalar(y->ty))
        ERR(n, "comparison %s is not supported between %s and %s", op_symbol(op), TN(x->ty), TN(y->ty));
    tk_type t = ty_promote(x->ty, y->ty);
    int b;
    switch (op) {
    case TACK_OP_EQ: b = B_EQ; break;
    case TACK_OP_NE: b = B_NE; break;
    case TACK_OP_LT: b = B_LT; break;
    case TACK_OP_LE: b = B_LE; break;
    case TACK_OP_GT: b = B_GT; break;
    case TACK_OP_GE: b = B_GE; break;
    default: ERR(n, "unsupported comparison operator (is, in are not supported)");
    }
    tk_ir *e = lw_bin(L, b, ty_value(TACK_BOOL), lw_cast(L, x, t), lw_cast(L, y, t), n->line);
    e->aux_ty = t;
    return e;
}

/* Combine `first` with a right operand lowered into `scratch` (its statements).
 * and: lw_truth(a) ? b : a;  or: lw_truth(a) ? a : b  (values of the promoted type). */
static tk_ir *shortcircuit(LW *L, int isand, tk_ir *a, tk_ir *b, tk_ir *scratch, tack_node *n) {
    if (!lw_known(a) || !lw_known(b)) return lw_unknown(L, n);
    if (!ty_is_scalar(a->ty) || !ty_is_scalar(b->ty)) ERR(n, "and/or need scalar operands, not %s and %s", TN(a->ty), TN(b->ty));
    tk_type t = ty_is_bool(a->ty) && ty_is_bool(b->ty) ? ty_value(TACK_BOOL) : ty_promote(a->ty, b->ty);
    if (scratch->n == 0) {
        a = lw_cast(L, a, t);
        if (!ty_is_bool(t)) a = lw_hoist(L, a);
        tk_ir *e = lw_mk(L, isand ? IR_AND : IR_OR, t, n);
        ir_push(L->C, e, a);
        ir_push(L->C, e, lw_cast(L, b, t));
        return e;
    }
    int tmp = lw_temp(L, t);
    lw_emit(L, lw_assign_ir(L, tmp, lw_cast(L, a, t), n->line));
    tk_ir *cond = lw_truth(L, lw_local_ref(L, tmp, n->line), n);
    if (!isand) {
        tk_ir *u = lw_mk(L, IR_UN, ty_value(TACK_BOOL), n);
        u->sub = U_NOT;
        cond = lw_kid(L, u, cond);
    }
    tk_ir *iff = lw_mk(L, IR_IF, ty_void(), n);
    ir_push(L->C, iff, cond);
    tk_ir *saved = L->blk;
    L->blk = scratch;
    lw_emit(L, lw_assign_ir(L, tmp, lw_cast(L, b, t), n->line));
    L->blk = saved;
    ir_push(L->C, iff, scratch);
    ir_push(L->C, iff, lw_mk(L, IR_BLOCK, ty_void(), n));
    lw_emit(L, iff);
    return lw_local_ref(L, tmp, n->line);
}

static tk_ir *lower_in(LW *L, tk_ir *blk, tack_node *n) {
    tk_ir *saved = L->blk;
    L->blk = blk;
    tk_ir *e = lw_expr(L, n);
    L->blk = saved;
    return e;
}

static tk_ir *lower_compare(LW *L, tack_node *n) {
    if (n->nkids < 2 || n->nops != n->nkids - 1) ERR(n, "malformed comparison");
    tk_ir *left = lw_expr(L, n->kids[0]);
    tk_ir *result = NULL;
    for (int i = 0; i < n->nops; i++) {
        tk_ir *scratch = lw_mk(L, IR_BLOCK, ty_void(), n);
        tk_ir *saved = L->blk;
        if (i > 0) L->blk = scratch;
        tk_ir *right = lw_expr(L, n->kids[i + 1]);
        if (i < n->nops - 1) right = lw_hoist(L, right);
        tk_ir *c = compare(L, n->ops[i], left, right, n);
        L->blk = saved;
        result = i == 0 ? c : shortcircuit(L, 1, result, c, scratch, n);
        left = right;
    }
    return result;
}

/* ------------------------------------------------------------ calls */
/* ------------------------------------------------------- expressions */
tk_ir *lw_expr(LW *L, tack_node *n) {
    if (!n) ERR(n, "missing expression");
    switch (n->kind) {
    case TACK_N_CONST_INT:
        if (n->is_uint) {
            tk_ir *e = ir_const_i(L->C, ty_value(TACK_U64), n->ival, n->line);
            return e;
        }
        return ir_const_i(L->C, ty_weak(TACK_I64), n->ival, n->line);
    case TACK_N_CONST_FLOAT: return ir_const_f(L->C, ty_weak(TACK_F64), n->fval, n->line);
    case TACK_N_CONST_BOOL: return ir_const_i(L->C, ty_weak(TACK_BOOL), n->ival != 0, n->line);
    case TACK_N_CONST_STR: ERR(n, "strings are only supported in print() and assert messages");
    case TACK_N_TYPE: ERR(n, "a dtype cannot be used as a value here");
    case TACK_N_NAME: {
        const char *name = n->name ? n->name : "";
        int loc = lookup(L, name);
        if (loc >= 0) {
            tk_local *l = &L->S->locals[loc];
            if (l->ty.kind == TY_UNKNOWN && !L->infer) ERR(n, "local variable '%s' is used before it is assigned", name);
            l->read = 1;
            tk_ir *e = lw_mk(L, IR_LOCAL, l->ty, n);
            e->local = loc;
            return e;
        }
        int p = lw_array_param(L, name);
        if (p >= 0) ERR(n, "array '%s' cannot be used as a value here (index it, or pass it to a @tack.func)", name);
        for (int i = 0; i < L->S->nlocals; i++)
            if (L->S->locals[i].name && !strcmp(L->S->locals[i].name, name))
                ERR(n, "'%s' is private to the parallel loop that assigns it and cannot be used outside it", name);
        ERR(n, "name '%s' is not defined", name);
    }
    case TACK_N_BINOP: {
        if (n->nkids != 2) ERR(n, "malformed binary operation");
        tk_ir *x = lw_expr(L, n->kids[0]);
        tk_ir *y = lw_expr(L, n->kids[1]);
        return binop(L, n->op, x, y, n);
    }
    case TACK_N_UNARYOP: {
        if (n->nkids != 1) ERR(n, "malformed unary operation");
        tk_ir *x = lw_expr(L, n->kids[0]);
        if (!lw_known(x)) return lw_unknown(L, n);
        if (n->op == TACK_OP_NOT) {
            tk_ir *u = lw_mk(L, IR_UN, ty_value(TACK_BOOL), n);
            u->sub = U_NOT;
            return lw_kid(L, u, lw_truth(L, x, n));
        }
        if (n->op == TACK_OP_POS) {
            if (x->ty.kind != TY_VALUE) ERR(n, "bad operand type for unary +: %s", TN(x->ty));
            return ty_is_bool(x->ty) ? lw_cast(L, x, x->ty.weak ? ty_weak(TACK_I64) : ty_value(TACK_I64)) : x;
        }
        if (x->ty.kind != TY_VALUE) ERR(n, "bad operand type for unary operator: %s", TN(x->ty));
        if (n->op == TACK_OP_NEG) {
            if (ty_is_bool(x->ty)) x = lw_cast(L, x, x->ty.weak ? ty_weak(TACK_I64) : ty_value(TACK_I64));
            if (!ty_is_scalar(x->ty)) L->C->uses_vec = 1;
            tk_ir *u = lw_mk(L, IR_UN, x->ty, n);
            u->sub = U_NEG;
            return lw_kid(L, u, x);
        }
        if (n->op == TACK_OP_INVERT) {
            if (!ty_is_int(x->ty) && !ty_is_bool(x->ty)) ERR(n, "bad operand type for unary ~: %s", TN(x->ty));
            tk_ir *u = lw_mk(L, IR_UN, x->ty, n);
            u->sub = ty_is_bool(x->ty) ? U_NOT : U_INVERT;
            return lw_kid(L, u, x);
        }
        ERR(n, "unsupported unary operator");
    }
    case TACK_N_BOOLOP: {
        if (n->nkids < 2) ERR(n, "malformed boolean operation");
        int isand = n->op == TACK_OP_AND;
        tk_ir *acc = lw_expr(L, n->kids[0]);
        for (int i = 1; i < n->nkids; i++) {
            tk_ir *scratch = lw_mk(L, IR_BLOCK, ty_void(), n);
            tk_ir *y = lower_in(L, scratch, n->kids[i]);
            acc = shortcircuit(L, isand, acc, y, scratch, n);
        }
        return acc;
    }
    case TACK_N_COMPARE: return lower_compare(L, n);
    case TACK_N_IFEXP: {
        if (n->nkids != 3) ERR(n, "malformed conditional expression");
        tk_ir *c = lw_truth(L, lw_expr(L, n->kids[0]), n);
        tk_ir *ba = lw_mk(L, IR_BLOCK, ty_void(), n), *bb = lw_mk(L, IR_BLOCK, ty_void(), n);
        tk_ir *a = lower_in(L, ba, n->kids[1]);
        tk_ir *b = lower_in(L, bb, n->kids[2]);
        if (!lw_known(a) || !lw_known(b)) return lw_unknown(L, n);
        tk_type t = ty_promote(a->ty, b->ty);
        if (t.kind == TY_UNKNOWN) ERR(n, "the branches of a conditional expression have incompatible types %s and %s", TN(a->ty), TN(b->ty));
        if (ba->n == 0 && bb->n == 0) {
            tk_ir *s = lw_mk(L, IR_SELECT, t, n);
            ir_push(L->C, s, c);
            ir_push(L->C, s, lw_cast(L, a, t));
            ir_push(L->C, s, lw_cast(L, b, t));
            return s;
        }
        int tmp = lw_temp(L, t);
        tk_ir *saved = L->blk;
        L->blk = ba;
        lw_emit(L, lw_assign_ir(L, tmp, lw_cast(L, a, t), n->line));
        L->blk = bb;
        lw_emit(L, lw_assign_ir(L, tmp, lw_cast(L, b, t), n->line));
        L->blk = saved;
        tk_ir *iff = lw_mk(L, IR_IF, ty_void(), n);
        ir_push(L->C, iff, c);
        ir_push(L->C, iff, ba);
        ir_push(L->C, iff, bb);
        lw_emit(L, iff);
        return lw_local_ref(L, tmp, n->line);
    }
    case TACK_N_CALL: return lw_call(L, n);
    case TACK_N_ATTRIBUTE: {
        if (n->nkids != 1 || !n->name) ERR(n, "malformed attribute");
        tack_node *b = n->kids[0];
        if (b->kind == TACK_N_NAME && lw_array_param(L, b->name) >= 0) {
            int p = lw_array_param(L, b->name);
            if (!strcmp(n->name, "ndim")) return ir_const_i(L->C, ty_weak(TACK_I64), L->S->ptypes[p].ndim, n->line);
            if (!strcmp(n->name, "size")) {
                tk_ir *acc = NULL;
                for (int k = 0; k < L->S->ptypes[p].ndim; k++) {
                    tk_ir *s = lw_mk(L, IR_SHAPE, ty_weak(TACK_I64), n);
                    s->param = p;
                    s->aux = k;
                    acc = acc ? lw_bin(L, B_MUL, ty_weak(TACK_I64), acc, s, n->line) : s;
                }
                return acc ? acc : ir_const_i(L->C, ty_weak(TACK_I64), 1, n->line);
            }
            if (!strcmp(n->name, "shape")) ERR(n, "a.shape must be indexed with a constant: a.shape[0]");
            ERR(n, "arrays have no attribute '%s' in kernels (shape, ndim, size are supported)", n->name);
        }
        tk_ir *v = lw_expr(L, b);
        if (!lw_known(v)) return lw_unknown(L, n);
        int c = comp_of_attr(n->name);
        if (ty_is_vector(v->ty) && c >= 0) {
            if (c >= dt_rows((tack_dtype)v->ty.dt)) ERR(n, "%s has no component '%s'", TN(v->ty), n->name);
            return lw_component(L, lw_hoist(L, v), ir_const_i(L->C, ty_value(TACK_I64), c, n->line), n);
        }
        ERR(n, "%s has no attribute '%s'", TN(v->ty), n->name);
    }
    case TACK_N_SUBSCRIPT: return lower_subscript(L, n);
    case TACK_N_TUPLE: ERR(n, "tuples are only supported in assignments, indices and ndrange loops");
    default: ERR(n, "unsupported expression");
    }
}

/* ---------------------------------------------------------- statements */
static void store_to(LW *L, tack_node *t, tk_ir *v) {
    /* a[i, j] = v ; v.x = s ; v[k] = s */
    if (t->kind == TACK_N_SUBSCRIPT && t->nkids >= 2 && t->kids[0]->kind == TACK_N_NAME &&
        lw_array_param(L, t->kids[0]->name) >= 0) {
        int p = lw_array_param(L, t->kids[0]->name);
        tk_type et = lw_dtype_type((tack_dtype)L->S->ptypes[p].dt);
        if (lw_known(v)) {
            if (v->ty.kind != TY_VALUE || (ty_is_scalar(et) && !ty_is_scalar(v->ty)) ||
                (!ty_is_scalar(et) && !ty_is_scalar(v->ty) && v->ty.dt != et.dt))
                ERR(t, "cannot store %s into an element of '%s' (%s)", TN(v->ty), L->S->pnames[p], TN(et));
            v = lw_hoist(L, ty_is_bool(et) ? lw_truth(L, v, t) : lw_cast(L, v, et));
        }
        tk_ir *st = lw_mk(L, IR_STORE, ty_void(), t);
        st->param = p;
        ir_push(L->C, st, v);
        lw_indices(L, p, t->kids + 1, t->nkids - 1, st, t);
        if (L->S->ptypes[p].dt == TACK_F16) L->C->uses_f16 = 1;
        lw_mark_written(L, p);
        lw_emit(L, st);
        return;
    }
    tack_node *base = t->kids ? t->kids[0] : NULL;
    if ((t->kind == TACK_N_ATTRIBUTE || t->kind == TACK_N_SUBSCRIPT) && base && base->kind == TACK_N_NAME) {
        int loc = lookup(L, base->name);
        if (loc < 0) ERR(base, "name '%s' is not defined", base->name);
        loc = target_local(L, base);
        tk_type lt = L->S->locals[loc].ty;
        if (lt.kind == TY_UNKNOWN) {
            if (!L->infer) ERR(t, "local variable '%s' is used before it is assigned", base->name);
            return;
        }
        tk_ir *k;
        tk_ir *j = NULL;
        if (t->kind == TACK_N_ATTRIBUTE) {
            int c = comp_of_attr(t->name ? t->name : "");
            if (!ty_is_vector(lt) || c < 0 || c >= dt_rows((tack_dtype)lt.dt)) ERR(t, "%s has no component '%s'", TN(lt), t->name);
            k = ir_const_i(L->C, ty_value(TACK_I64), c, t->line);
        } else if (ty_is_vector(lt) && t->nkids == 2) {
            k = lw_index_value(L, t->kids[1]);
            if (k->op == IR_CONST) {
                int64_t i = k->c.i < 0 ? k->c.i + dt_rows((tack_dtype)lt.dt) : k->c.i;
                if (i < 0 || i >= dt_rows((tack_dtype)lt.dt)) ERR(t, "index %lld is out of range for a %s", (long long)k->c.i, TN(lt));
                k = ir_const_i(L->C, ty_value(TACK_I64), i, t->line);
            } else if (L->C->opts.checks) {
                int site = lw_site(L, CK_COMP, t->line, dt_rows((tack_dtype)lt.dt), NULL, NULL);
                lw_check(L, CK_COMP, site, k, ir_const_i(L->C, ty_value(TACK_I64), dt_rows((tack_dtype)lt.dt), t->line), t->line);
            }
        } else if (ty_is_matrix(lt)) {
            tack_node **ix = t->kids + 1;
            int ni = t->nkids - 1;
            if (ni == 1 && ix[0]->kind == TACK_N_TUPLE) {
                ni = ix[0]->nkids;
                ix = ix[0]->kids;
            }
            if (ni != 2) ERR(t, "a matrix is indexed as m[i, j]");
            k = lw_index_value(L, ix[0]);
            j = lw_index_value(L, ix[1]);
            if (k->op != IR_CONST || j->op != IR_CONST || k->c.i < 0 || k->c.i >= dt_rows((tack_dtype)lt.dt) || j->c.i < 0 || j->c.i >= dt_cols((tack_dtype)lt.dt))
                ERR(t, "matrix indices must be constants in range");
        } else {
            ERR(t, "cannot assign to an element of %s", TN(lt));
        }
        tk_type ct = ty_value(dt_scalar((tack_dtype)lt.dt));
        if (lw_known(v) && !ty_is_scalar(v->ty)) ERR(t, "cannot assign %s to a component of %s", TN(v->ty), TN(lt));
        tk_ir *sc = lw_mk(L, IR_SETCOMP, ty_void(), t);
        sc->local = loc;
        ir_push(L->C, sc, k);
        if (j) ir_push(L->C, sc, j);
        ir_push(L->C, sc, lw_cast(L, v, ct));
        lw_emit(L, sc);
        return;
    }
    ERR(t, "unsupported assignment target");
}

/* A function's return type, or a field of its tuple (pos: 1 + the field, else
 * 0), widened to take the value v: the first value fixes it, later ones
 * promote it (or are an error naming both types). */
static void widen_return(LW *L, tk_type *slot, tk_ir *v, tack_node *n, int pos) {
    if (slot->kind == TY_UNKNOWN || slot->kind == TY_VOID) {
        *slot = v->ty;
        L->changed = 1;
        return;
    }
    tk_type u = ty_promote(*slot, v->ty);
    if (u.kind == TY_UNKNOWN || ty_is_scalar(*slot) != ty_is_scalar(v->ty)) {
        if (pos) ERR(n, "'%s' returns %s as value %d here and %s elsewhere", L->F->name, TN(v->ty), pos, TN(*slot));
        ERR(n, "'%s' returns %s here and %s elsewhere", L->F->name, TN(v->ty), TN(*slot));
    }
    if (!ty_eq(u, *slot)) {
        *slot = u;
        L->changed = 1;
    }
}

/* `return a, b` in a @tack.func: the function returns a tuple, a C struct of
 * one field per value, typed like a value return per position (the first
 * return fixes how many values; later ones promote each field). */
static void return_tuple(LW *L, tack_node *tn, tk_ir *r) {
    tk_spec *S = L->S;
    int nv = tn->nkids;
    if (nv < 1) ERR(tn, "'%s' returns an empty tuple; return nothing instead", L->F->name);
    if (L->F->returns) ERR(tn, "'%s' returns a tuple; tuple return annotations are not supported (remove '->')", L->F->name);
    if (S->ret.kind == TY_VALUE) ERR(tn, "'%s' returns %d values here and one elsewhere", L->F->name, nv);
    if (S->ret.kind != TY_TUPLE) {
        int si = 0;
        while (L->C->specs[si] != S) si++;
        if (si > 65535) ERR(tn, "too many specializations of functions (%d)", si);
        S->ret = ty_tuple(si);
        S->nret = nv;
        S->rets = tk_alloc(&L->C->arena, sizeof(tk_type) * (size_t)nv);
        for (int i = 0; i < nv; i++) S->rets[i] = ty_unknown();
        L->changed = 1;
    } else if (S->nret != nv) {
        ERR(tn, "'%s' returns %d values here and %d elsewhere", L->F->name, nv, S->nret);
    }
    tk_ir **vals = tk_alloc(&L->C->arena, sizeof(tk_ir *) * (size_t)nv);
    int known = 1;
    for (int i = 0; i < nv; i++) {
        tk_ir *v = lw_expr(L, tn->kids[i]);
        vals[i] = v;
        if (!lw_known(v)) { known = 0; continue; }
        if (v->ty.kind != TY_VALUE) ERR(tn->kids[i], "cannot return %s in a tuple", TN(v->ty));
        widen_return(L, &S->rets[i], v, tn->kids[i], i + 1);
    }
    for (int i = 0; i < nv; i++) {
        tk_ir *v = vals[i];
        if (known && S->rets[i].kind != TY_UNKNOWN) v = lw_cast(L, lw_hoist(L, v), S->rets[i]);
        ir_push(L->C, r, v);
    }
}

/* Field k of a tuple a function returned (an IR_COMP of the tuple local). */
static tk_ir *tuple_field(LW *L, tk_ir *v, int k, tack_node *n) {
    tk_spec *F = L->C->specs[ty_tuple_spec(v->ty)];
    tk_type ft = k < F->nret ? F->rets[k] : ty_unknown();
    tk_ir *c = lw_mk(L, IR_COMP, ft, n);
    ir_push(L->C, c, v);
    ir_push(L->C, c, ir_const_i(L->C, ty_value(TACK_I64), k, n->line));
    return c;
}

static void assign_target(LW *L, tack_node *t, tk_ir *v) {
    if (t->kind == TACK_N_NAME) {
        assign_local(L, target_local(L, t), v, t);
        return;
    }
    if (t->kind == TACK_N_TUPLE) {
        if (!lw_known(v)) {
            for (int i = 0; i < t->nkids; i++) assign_target(L, t->kids[i], v);
            return;
        }
        if (v->ty.kind == TY_TUPLE) {
            int nv = L->C->specs[ty_tuple_spec(v->ty)]->nret;
            if (nv != t->nkids) ERR(t, "cannot unpack %d values into %d names", nv, t->nkids);
            for (int i = 0; i < t->nkids; i++) assign_target(L, t->kids[i], tuple_field(L, v, i, t));
            return;
        }
        if (!ty_is_vector(v->ty) || dt_rows((tack_dtype)v->ty.dt) != t->nkids)
            ERR(t, "cannot unpack %s into %d names", TN(v->ty), t->nkids);
        v = lw_hoist(L, v);
        for (int i = 0; i < t->nkids; i++)
            assign_target(L, t->kids[i], lw_component(L, v, ir_const_i(L->C, ty_value(TACK_I64), i, t->line), t));
        return;
    }
    store_to(L, t, v);
}

static void lower_assign(LW *L, tack_node *n) {
    if (n->nkids != 2) ERR(n, "malformed assignment");
    tack_node *t = n->kids[0], *vn = n->kids[1];
    if (t->kind == TACK_N_TUPLE && vn->kind == TACK_N_TUPLE) {
        if (t->nkids != vn->nkids) ERR(n, "cannot unpack %d values into %d names", vn->nkids, t->nkids);
        tk_ir **vals = tk_alloc(&L->C->arena, sizeof(tk_ir *) * (size_t)(vn->nkids + 1));
        for (int i = 0; i < vn->nkids; i++) {
            tk_ir *e = lw_expr(L, vn->kids[i]);
            if (lw_known(e) && !ir_is_simple(e)) {
                int tmp = lw_temp(L, e->ty);
                lw_emit(L, lw_assign_ir(L, tmp, e, n->line));
                e = lw_local_ref(L, tmp, n->line);
            } else if (lw_known(e) && e->op == IR_LOCAL) { /* a, b = b, a: copy first */
                int tmp = lw_temp(L, e->ty);
                lw_emit(L, lw_assign_ir(L, tmp, e, n->line));
                e = lw_local_ref(L, tmp, n->line);
            }
            vals[i] = e;
        }
        for (int i = 0; i < t->nkids; i++) assign_target(L, t->kids[i], vals[i]);
        return;
    }
    assign_target(L, t, lw_expr(L, vn));
}

static void lower_augassign(LW *L, tack_node *n) {
    if (n->nkids != 2) ERR(n, "malformed augmented assignment");
    tack_node *t = n->kids[0];
    if (t->kind == TACK_N_NAME) {
        int loc = lookup(L, t->name);
        if (loc < 0) ERR(t, "name '%s' is not defined", t->name);
        target_local(L, t);
        tk_ir *cur = lw_expr(L, t);
        tk_ir *v = lw_expr(L, n->kids[1]);
        assign_local(L, target_local(L, t), binop(L, n->op, cur, v, n), n);
        return;
    }
    if (t->kind == TACK_N_SUBSCRIPT && t->nkids >= 2 && t->kids[0]->kind == TACK_N_NAME && lw_array_param(L, t->kids[0]->name) >= 0) {
        int p = lw_array_param(L, t->kids[0]->name);
        tk_type et = lw_dtype_type((tack_dtype)L->S->ptypes[p].dt);
        if (L->pfor >= 0 && (n->op == TACK_OP_ADD || n->op == TACK_OP_SUB) && ty_is_scalar(et) &&
            !ty_is_bool(et) && L->S->ptypes[p].dt != TACK_F16) {
            tk_ir *v = lw_expr(L, n->kids[1]);
            if (lw_known(v) && ty_is_scalar(v->ty)) {
                lw_atomic(L, n->op == TACK_OP_ADD ? A_ADD : A_SUB, p, t->kids + 1, t->nkids - 1, v, n, 0);
                return;
            }
            if (lw_known(v)) ERR(n, "cannot add %s to an element of '%s' (%s)", TN(v->ty), L->S->pnames[p], TN(et));
            return;
        }
        /* plain read-modify-write with the indices evaluated once */
        tk_ir *ld = lw_mk(L, IR_LOAD, et, t);
        ld->param = p;
        lw_indices(L, p, t->kids + 1, t->nkids - 1, ld, t);
        tk_ir *v = lw_expr(L, n->kids[1]);
        tk_ir *r = binop(L, n->op, ld, v, n);
        if (lw_known(r)) {
            if (!ty_is_scalar(et) && (r->ty.dt != et.dt)) ERR(n, "cannot store %s into an element of '%s' (%s)", TN(r->ty), L->S->pnames[p], TN(et));
            r = ty_is_bool(et) ? lw_truth(L, r, n) : lw_cast(L, r, et);
        }
        tk_ir *st = lw_mk(L, IR_STORE, ty_void(), t);
        st->param = p;
        ir_push(L->C, st, r);
        for (int i = 0; i < ld->n; i++) ir_push(L->C, st, ld->k[i]);
        if (L->S->ptypes[p].dt == TACK_F16) L->C->uses_f16 = 1;
        lw_mark_written(L, p);
        lw_emit(L, st);
        return;
    }
    /* v.x += s */
    tk_ir *cur = lw_expr(L, t);
    tk_ir *v = lw_expr(L, n->kids[1]);
    store_to(L, t, binop(L, n->op, cur, v, n));
}

typedef struct rng { tk_ir *lo, *hi, *step; tk_type ty; } rng;

static rng lower_range(LW *L, tack_node *it) {
    rng r;
    tk_ir *a[3];
    int na = it->nkids;
    if (na < 1 || na > 3) ERR(it, "range expected 1 to 3 arguments, got %d", na);
    tk_type t = ty_weak(TACK_I64);
    int unk = 0;
    for (int i = 0; i < na; i++) {
        a[i] = lw_expr(L, it->kids[i]);
        if (!lw_known(a[i])) { unk = 1; continue; }
        if (!ty_is_int(a[i]->ty) && !ty_is_bool(a[i]->ty))
            ERR(it->kids[i], "range() arguments must be integers, not %s", TN(a[i]->ty));
        t = ty_promote(t, a[i]->ty);
    }
    if (ty_is_bool(t)) t = ty_weak(TACK_I64);
    r.ty = unk ? ty_unknown() : t;
    tk_type i64 = ty_value(TACK_I64);
    if (na == 1) {
        r.lo = ir_const_i(L->C, i64, 0, it->line);
        r.hi = lw_cast(L, a[0], i64);
        r.step = ir_const_i(L->C, i64, 1, it->line);
    } else {
        r.lo = lw_cast(L, a[0], i64);
        r.hi = lw_cast(L, a[1], i64);
        r.step = na == 3 ? lw_cast(L, a[2], i64) : ir_const_i(L->C, i64, 1, it->line);
    }
    if (r.step->op == IR_CONST && r.step->c.i == 0) ERR(it, "range() arg 3 must not be zero");
    return r;
}

/* Keep a loop bound in a temporary unless it cannot change (constants, shapes). */
static tk_ir *bound(LW *L, tk_ir *e) {
    if (!lw_known(e) || e->op == IR_CONST || e->op == IR_SHAPE) return e;
    if (e->op == IR_CAST && e->k[0]->op == IR_CONST && ty_is_int(e->k[0]->ty) && ty_is_int(e->ty) &&
        dt_bits((tack_dtype)e->ty.dt) == 64 && (e->k[0]->ty.dt != TACK_U64 || e->k[0]->c.i >= 0))
        return ir_const_i(L->C, e->ty, e->k[0]->c.i, e->line);
    if (e->op == IR_CAST && e->k[0]->op == IR_SHAPE) return e;
    int t = lw_temp(L, e->ty);
    lw_emit(L, lw_assign_ir(L, t, e, e->line));
    return lw_local_ref(L, t, e->line);
}

static int is_range_call(tack_node *it, const char *name) {
    return it && it->kind == TACK_N_CALL && it->ival < 0 && it->name && !strcmp(it->name, name);
}

/* A parallel loop's body, lowered one loop deeper into `b`; then the loop is emitted. */
static void pfor_body(LW *L, tk_ir *pf, tack_node *body, tk_ir *b, int saved_pfor) {
    int sd = L->depth;
    L->depth++;
    lower_block_into(L, body, b);
    L->depth = sd;
    L->pfor = saved_pfor;
    ir_push(L->C, pf, b);
    lw_emit(L, pf);
}

static void lower_for(LW *L, tack_node *n) {
    if (n->nkids != 3) ERR(n, "malformed for loop");
    tack_node *t = n->kids[0], *it = n->kids[1], *body = n->kids[2];
    int nd = is_range_call(it, "ndrange");
    if (!nd && !is_range_call(it, "range"))
        ERR(it, "for loops must iterate over range(...) or tack.ndrange(...)");
    int parallel = L->is_kernel && L->depth == 0 && L->pfor < 0;
    if (nd) {
        int dims = it->nkids;
        if (dims < 1 || dims > TACK_MAX_NDIM) ERR(it, "ndrange() takes 1 to %d sizes", TACK_MAX_NDIM);
        int nt = t->kind == TACK_N_TUPLE ? t->nkids : 1;
        if (nt != dims) ERR(t, "ndrange() with %d sizes needs %d loop variables", dims, dims);
        tk_ir *sz[TACK_MAX_NDIM];
        for (int d = 0; d < dims; d++) {
            tk_ir *e = lw_expr(L, it->kids[d]);
            if (lw_known(e) && !ty_is_int(e->ty) && !ty_is_bool(e->ty)) ERR(it->kids[d], "ndrange() sizes must be integers, not %s", TN(e->ty));
            sz[d] = bound(L, lw_cast(L, e, ty_value(TACK_I64)));
        }
        if (parallel) {
            int id = L->npfor++;
            tk_ir *pf = lw_mk(L, IR_PFOR, ty_void(), n);
            pf->aux = dims;
            pf->vars = tk_alloc(&L->C->arena, sizeof(int) * 8);
            for (int d = 0; d < dims; d++) ir_push(L->C, pf, sz[d]);
            int saved_pfor = L->pfor;
            L->pfor = id;
            for (int d = 0; d < dims; d++) {
                tack_node *v = nt == 1 ? t : t->kids[d];
                if (v->kind != TACK_N_NAME) ERR(v, "loop variables must be names");
                int loc = target_local(L, v);
                tk_local *l = &L->S->locals[loc];
                if (!ty_eq(l->ty, ty_weak(TACK_I64))) {
                    if (l->ty.kind != TY_UNKNOWN) ERR(v, "loop variable '%s' is also assigned a %s", l->name, TN(l->ty));
                    l->ty = ty_weak(TACK_I64);
                    L->changed = 1;
                }
                pf->vars[d] = loc;
            }
            tk_ir *b = lw_mk(L, IR_BLOCK, ty_void(), body);
            pfor_body(L, pf, body, b, saved_pfor);
            return;
        }
        /* serial ndrange: nested serial loops */
        tk_ir *outer = NULL, *inner_blk = NULL;
        for (int d = 0; d < dims; d++) {
            tack_node *v = nt == 1 ? t : t->kids[d];
            if (v->kind != TACK_N_NAME) ERR(v, "loop variables must be names");
            int loc = target_local(L, v);
            tk_local *l = &L->S->locals[loc];
            if (l->ty.kind == TY_UNKNOWN) { l->ty = ty_weak(TACK_I64); L->changed = 1; }
            tk_ir *f = lw_mk(L, IR_FOR, ty_void(), n);
            f->local = loc;
            ir_push(L->C, f, ir_const_i(L->C, ty_value(TACK_I64), 0, n->line));
            ir_push(L->C, f, sz[d]);
            ir_push(L->C, f, ir_const_i(L->C, ty_value(TACK_I64), 1, n->line));
            tk_ir *b = lw_mk(L, IR_BLOCK, ty_void(), body);
            ir_push(L->C, f, b);
            if (!outer) lw_emit(L, f);
            else ir_push(L->C, inner_blk, f);
            outer = f;
            inner_blk = b;
        }
        L->loops++;
        L->depth++;
        lower_block_into(L, body, inner_blk);
        L->depth--;
        L->loops--;
        return;
    }
    if (t->kind != TACK_N_NAME) ERR(t, "the target of a range() loop must be a name");
    rng r = lower_range(L, it);
    tk_ir *lo = bound(L, r.lo), *hi = bound(L, r.hi), *step = bound(L, r.step);
    if (parallel) {
        int id = L->npfor++;
        tk_ir *pf = lw_mk(L, IR_PFOR, ty_void(), n);
        pf->aux = 1;
        pf->vars = tk_alloc(&L->C->arena, sizeof(int) * 8);
        int unit = step->op == IR_CONST && step->c.i == 1;
        int simple = unit && lo->op == IR_CONST && lo->c.i == 0;
        tk_ir *count = hi;
        if (!simple) {
            tk_ir *tr = lw_mk(L, IR_MATH, ty_value(TACK_I64), n);
            tr->sub = M_TRIP;
            tr->aux_ty = ty_value(TACK_I64);
            ir_push(L->C, tr, lo);
            ir_push(L->C, tr, hi);
            ir_push(L->C, tr, step);
            count = bound(L, tr);
        }
        ir_push(L->C, pf, count);
        int saved_pfor = L->pfor;
        L->pfor = id;
        int loc = target_local(L, t);
        tk_local *l = &L->S->locals[loc];
        tk_ir *b = lw_mk(L, IR_BLOCK, ty_void(), body);
        int rweak = r.ty.kind == TY_UNKNOWN || ty_eq(r.ty, ty_weak(TACK_I64));
        int lweak = l->ty.kind == TY_UNKNOWN || ty_eq(l->ty, ty_weak(TACK_I64));
        if (unit && rweak && lweak) {
            if (r.ty.kind != TY_UNKNOWN && l->ty.kind == TY_UNKNOWN) {
                l->ty = r.ty;
                L->changed = 1;
            }
            pf->vars[0] = loc;
            if (!simple) {
                pf->off = lo;
                pf->hi = hi;
            }
        } else {
            int k = lw_temp(L, ty_value(TACK_I64));
            pf->vars[0] = k;
            tk_ir *saved = L->blk;
            L->blk = b;
            tk_ir *v = lw_local_ref(L, k, n->line);
            if (!simple)
                v = lw_bin(L, B_ADD, ty_value(TACK_I64), lo, lw_bin(L, B_MUL, ty_value(TACK_I64), v, step, n->line), n->line);
            if (r.ty.kind != TY_UNKNOWN) assign_local(L, loc, lw_cast(L, v, r.ty), t);
            L->blk = saved;
        }
        pfor_body(L, pf, body, b, saved_pfor);
        return;
    }
    int loc = target_local(L, t);
    tk_local *l = &L->S->locals[loc];
    tk_ir *f = lw_mk(L, IR_FOR, ty_void(), n);
    tk_ir *b = lw_mk(L, IR_BLOCK, ty_void(), body);
    if (r.ty.kind != TY_UNKNOWN && (l->ty.kind == TY_UNKNOWN || ty_eq(l->ty, r.ty)) && ty_eq(r.ty, ty_weak(TACK_I64))) {
        if (!ty_eq(l->ty, r.ty)) { l->ty = r.ty; L->changed = 1; }
        f->local = loc;
    } else {
        int k = lw_temp(L, ty_value(TACK_I64));
        f->local = k;
        tk_ir *saved = L->blk;
        L->blk = b;
        tk_ir *kv = lw_local_ref(L, k, n->line);
        if (r.ty.kind != TY_UNKNOWN) assign_local(L, loc, lw_cast(L, kv, r.ty), t);
        L->blk = saved;
    }
    ir_push(L->C, f, lo);
    ir_push(L->C, f, hi);
    ir_push(L->C, f, step);
    L->loops++;
    L->depth++;
    lower_block_into(L, body, b);
    L->depth--;
    L->loops--;
    ir_push(L->C, f, b);
    lw_emit(L, f);
}

static void lower_stmt(LW *L, tack_node *n) {
    if (!n) return;
    switch (n->kind) {
    case TACK_N_BLOCK: {
        for (int i = 0; i < n->nkids; i++) lower_stmt(L, n->kids[i]);
        return;
    }
    case TACK_N_ASSIGN: lower_assign(L, n); return;
    case TACK_N_ANNASSIGN:
        if (n->nkids < 2) ERR(n, "malformed annotated assignment");
        if (n->nkids >= 3 && n->kids[2]) assign_target(L, n->kids[0], lw_expr(L, n->kids[2]));
        return;
    case TACK_N_AUGASSIGN: lower_augassign(L, n); return;
    case TACK_N_IF: {
        if (n->nkids < 2) ERR(n, "malformed if");
        tk_ir *c = lw_truth(L, lw_expr(L, n->kids[0]), n);
        tk_ir *iff = lw_mk(L, IR_IF, ty_void(), n);
        ir_push(L->C, iff, c);
        tk_ir *a = lw_mk(L, IR_BLOCK, ty_void(), n), *b = lw_mk(L, IR_BLOCK, ty_void(), n);
        L->depth++;
        lower_block_into(L, n->kids[1], a);
        if (n->nkids > 2) lower_block_into(L, n->kids[2], b);
        L->depth--;
        ir_push(L->C, iff, a);
        ir_push(L->C, iff, b);
        lw_emit(L, iff);
        return;
    }
    case TACK_N_FOR: lower_for(L, n); return;
    case TACK_N_WHILE: {
        if (n->nkids < 2) ERR(n, "malformed while");
        tk_ir *w = lw_mk(L, IR_WHILE, ty_void(), n);
        tk_ir *body = lw_mk(L, IR_BLOCK, ty_void(), n);
        tk_ir *c = lw_truth(L, lower_in(L, body, n->kids[0]), n);
        if (body->n == 0) {
            ir_push(L->C, w, c);
        } else { /* while True: pre; if not c: break; body */
            ir_push(L->C, w, ir_const_i(L->C, ty_value(TACK_BOOL), 1, n->line));
            tk_ir *u = lw_mk(L, IR_UN, ty_value(TACK_BOOL), n);
            u->sub = U_NOT;
            tk_ir *iff = lw_mk(L, IR_IF, ty_void(), n);
            ir_push(L->C, iff, lw_kid(L, u, c));
            tk_ir *brk = lw_mk(L, IR_BLOCK, ty_void(), n);
            ir_push(L->C, brk, lw_mk(L, IR_BREAK, ty_void(), n));
            ir_push(L->C, iff, brk);
            ir_push(L->C, iff, lw_mk(L, IR_BLOCK, ty_void(), n));
            ir_push(L->C, body, iff);
        }
        L->loops++;
        L->depth++;
        lower_block_into(L, n->kids[1], body);
        L->depth--;
        L->loops--;
        ir_push(L->C, w, body);
        lw_emit(L, w);
        return;
    }
    case TACK_N_BREAK:
    case TACK_N_CONTINUE:
        if (L->loops == 0) {
            if (L->pfor >= 0 && n->kind == TACK_N_CONTINUE) {
                lw_emit(L, lw_mk(L, IR_CONTINUE, ty_void(), n));
                return;
            }
            if (L->pfor >= 0) ERR(n, "break is not supported directly in a parallel loop");
            ERR(n, "'%s' outside loop", n->kind == TACK_N_BREAK ? "break" : "continue");
        }
        lw_emit(L, lw_mk(L, n->kind == TACK_N_BREAK ? IR_BREAK : IR_CONTINUE, ty_void(), n));
        return;
    case TACK_N_PASS: return;
    case TACK_N_RETURN: {
        if (L->is_kernel) {
            if (n->nkids && n->kids[0] && n->kids[0]->kind != TACK_N_CONST_BOOL) ERR(n, "a kernel cannot return a value");
            if (L->pfor >= 0) ERR(n, "return is not supported inside a parallel loop (use continue)");
            lw_emit(L, lw_mk(L, IR_RETURN, ty_void(), n));
            return;
        }
        tk_ir *r = lw_mk(L, IR_RETURN, ty_void(), n);
        if (n->nkids && n->kids[0] && n->kids[0]->kind == TACK_N_TUPLE) {
            return_tuple(L, n->kids[0], r);
        } else if (n->nkids && n->kids[0]) {
            tk_ir *v = lw_expr(L, n->kids[0]);
            if (lw_known(v)) {
                if (v->ty.kind == TY_TUPLE)
                    ERR(n, "cannot return the tuple a function returned; unpack it first (a, b = f(...)) "
                           "and return a, b");
                if (v->ty.kind != TY_VALUE) ERR(n, "cannot return %s", TN(v->ty));
                tk_type rt = L->S->ret;
                if (rt.kind == TY_TUPLE)
                    ERR(n, "'%s' returns one value here and %d elsewhere", L->F->name, L->S->nret);
                if (!L->F->returns) { /* else declared */
                    if (rt.kind == TY_VOID && L->infer == 0) ERR(n, "'%s' returns both a value and None", L->F->name);
                    widen_return(L, &L->S->ret, v, n, 0);
                }
                ir_push(L->C, r, lw_cast(L, v, L->S->ret));
            } else {
                ir_push(L->C, r, v);
            }
        }
        lw_emit(L, r);
        return;
    }
    case TACK_N_ASSERT: {
        if (n->nkids < 1) ERR(n, "malformed assert");
        if (!L->C->opts.checks) return;
        tk_ir *c = lw_truth(L, lw_expr(L, n->kids[0]), n);
        const char *msg = NULL;
        if (n->nkids > 1 && n->kids[1]) {
            if (n->kids[1]->kind != TACK_N_CONST_STR) ERR(n->kids[1], "assert messages must be string constants");
            msg = n->kids[1]->name;
        }
        int site = lw_site(L, CK_ASSERT, n->line, 0, NULL, msg);
        lw_check(L, CK_ASSERT, site, c, NULL, n->line);
        return;
    }
    case TACK_N_EXPR: {
        if (n->nkids < 1 || !n->kids[0]) return;
        tack_node *e = n->kids[0];
        if (e->kind == TACK_N_CONST_STR) return; /* docstring */
        L->discard = e->kind == TACK_N_CALL;
        lw_expr(L, e);
        L->discard = 0;
        return;
    }
    default: ERR(n, "unsupported statement");
    }
}

static void lower_block_into(LW *L, tack_node *n, tk_ir *blk) {
    tk_ir *saved = L->blk;
    L->blk = blk;
    if (n && n->kind == TACK_N_BLOCK) {
        for (int i = 0; i < n->nkids; i++) lower_stmt(L, n->kids[i]);
    } else {
        lower_stmt(L, n);
    }
    L->blk = saved;
}

/* ------------------------------------------------------------ prescan */
/* Create the locals a function assigns, in their scopes, before lowering. */
static void declare(LW *L, tack_node *t, int scope, tk_type decl, int declared) {
    if (!t) return;
    if (t->kind == TACK_N_TUPLE) {
        for (int i = 0; i < t->nkids; i++) declare(L, t->kids[i], scope, ty_unknown(), 0);
        return;
    }
    if (t->kind != TACK_N_NAME || !t->name) return;
    if (lw_array_param(L, t->name) >= 0) ERR(t, "cannot assign to array parameter '%s'", t->name);
    int i = find_local_in(L->S, t->name, scope);
    if (i < 0) {
        i = tk_new_local(L->C, L->S, t->name, ty_unknown(), scope);
        L->S->locals[i].line = t->line;
    }
    if (declared) {
        tk_local *l = &L->S->locals[i];
        if (l->declared && !ty_eq(l->ty, decl)) ERR(t, "'%s' is annotated with two different types", t->name);
        if (l->is_param && !ty_eq(l->ty, decl)) ERR(t, "parameter '%s' cannot be re-annotated", t->name);
        l->declared = 1;
        l->ty = decl;
    }
}

static tk_type annotation_type(LW *L, tack_node *a) {
    if (!a) return ty_unknown();
    if (a->kind != TACK_N_TYPE || a->ival < 0 || a->ival >= TACK_DTYPE_COUNT) ERR(a, "unsupported annotation (use a tack dtype such as tack.f32)");
    return lw_dtype_type((tack_dtype)a->ival);
}

static void prescan(LW *L, tack_node *n, int scope) {
    if (!n) return;
    switch (n->kind) {
    case TACK_N_BLOCK:
        for (int i = 0; i < n->nkids; i++) {
            tack_node *s = n->kids[i];
            if (L->is_kernel && scope == -1 && s && s->kind == TACK_N_FOR && s->nkids == 3 && n == L->F->body &&
                (is_range_call(s->kids[1], "range") || is_range_call(s->kids[1], "ndrange"))) {
                int id = L->npfor++;
                declare(L, s->kids[0], id, ty_unknown(), 0);
                prescan(L, s->kids[2], id);
            } else {
                prescan(L, s, scope);
            }
        }
        return;
    case TACK_N_ASSIGN:
        if (n->nkids) declare(L, n->kids[0], scope, ty_unknown(), 0);
        return;
    case TACK_N_ANNASSIGN:
        if (n->nkids >= 2) declare(L, n->kids[0], scope, annotation_type(L, n->kids[1]), 1);
        return;
    case TACK_N_AUGASSIGN:
        if (n->nkids) declare(L, n->kids[0], scope, ty_unknown(), 0);
        return;
    case TACK_N_FOR:
        if (n->nkids == 3) {
            declare(L, n->kids[0], scope, ty_unknown(), 0);
            prescan(L, n->kids[2], scope);
        }
        return;
    case TACK_N_IF:
        for (int i = 1; i < n->nkids; i++) prescan(L, n->kids[i], scope);
        return;
    case TACK_N_WHILE:
        if (n->nkids >= 2) prescan(L, n->kids[1], scope);
        return;
    default: return;
    }
}

/* ------------------------------------------------------------- driver */
static void lower_spec(tk_cc *C, tk_spec *S, int is_kernel) {
    tk_func *F = &C->m->funcs[S->func];
    LW l;
    memset(&l, 0, sizeof l);
    LW *L = &l;
    L->C = C;
    L->S = S;
    L->F = F;
    L->fidx = S->func;
    L->is_kernel = is_kernel;
    L->pfor = -1;
    if (!F->body) ERR((tack_node *)NULL, "function '%s' has no body", F->name);
    /* scalar parameters are locals of the frame */
    S->plocal = tk_alloc(&C->arena, sizeof(int) * (size_t)(S->nparams + 1));
    for (int i = 0; i < S->nparams; i++) {
        S->plocal[i] = -1;
        if (S->ptypes[i].kind == TY_ARRAY) continue;
        int loc = tk_new_local(C, S, S->pnames[i], S->ptypes[i], -1);
        S->locals[loc].is_param = 1;
        S->plocal[i] = loc;
    }
    prescan(L, F->body, -1);
    S->nbase = S->nlocals;
    if (!is_kernel) {
        S->ret = F->returns ? annotation_type(L, F->returns) : ty_unknown();
    }
    int final = 0;
    for (int pass = 0;; pass++) {
        if (pass > 24) ERR(F->body, "type inference of '%s' did not converge", F->name);
        S->nlocals = S->nbase;
        S->written = 0;
        L->ntemps = 0;
        L->npfor = 0;
        L->changed = 0;
        L->infer = !final;
        L->depth = 0;
        L->loops = 0;
        for (int i = 0; i < S->nlocals; i++) S->locals[i].read = 0;
        tk_ir *body = ir_new(C, IR_BLOCK, ty_void(), F->body->line);
        lower_block_into(L, F->body, body);
        if (!final) {
            if (!L->changed) final = 1;
            continue;
        }
        if (L->changed) {
            final = 0;
            continue;
        }
        S->body = body;
        S->npfor = L->npfor;
        break;
    }
    if (!is_kernel && S->ret.kind == TY_UNKNOWN) S->ret = ty_void();
    if (!is_kernel && F->returns && S->ret.kind == TY_VOID) S->ret = annotation_type(L, F->returns);
}

static int types_match(tk_type *a, tk_type *b, int n) {
    for (int i = 0; i < n; i++)
        if (!ty_eq(a[i], b[i])) return 0;
    return 1;
}

static void add_spec(tk_cc *C, tk_spec *S) {
    if (C->nspecs == C->capspecs) {
        int cap = C->capspecs ? C->capspecs * 2 : 8;
        tk_spec **ns = tk_alloc(&C->arena, sizeof(tk_spec *) * (size_t)cap);
        if (C->nspecs) memcpy(ns, C->specs, sizeof(tk_spec *) * (size_t)C->nspecs);
        C->specs = ns;
        C->capspecs = cap;
    }
    C->specs[C->nspecs++] = S;
}

tk_spec *lw_specialize(tk_cc *C, int func, tk_type *ptypes, int nparams, tack_node *at) {
    for (int i = 1; i < C->nspecs; i++) {
        tk_spec *S = C->specs[i];
        if (S->func == func && S->nparams == nparams && types_match(S->ptypes, ptypes, nparams)) {
            if (S->state == 1) tk_error(C, func, at->line, at->col + 1, "recursive call of '%s' is not supported", C->m->funcs[func].name);
            return S;
        }
    }
    for (int i = 0; i < C->nspecs; i++)
        if (C->specs[i]->func == func && C->specs[i]->state == 1)
            tk_error(C, func, at->line, at->col + 1, "recursive call of '%s' is not supported", C->m->funcs[func].name);
    tk_func *F = &C->m->funcs[func];
    tk_spec *S = tk_alloc(&C->arena, sizeof *S);
    S->func = func;
    S->nparams = nparams;
    S->ptypes = tk_alloc(&C->arena, sizeof(tk_type) * (size_t)(nparams + 1));
    S->pnames = tk_alloc(&C->arena, sizeof(char *) * (size_t)(nparams + 1));
    for (int i = 0; i < nparams; i++) {
        S->ptypes[i] = ptypes[i];
        S->pnames[i] = F->params[i].name;
        if (F->params[i].annotation && ptypes[i].kind == TY_VALUE) {
            tack_node *a = F->params[i].annotation;
            if (a->kind != TACK_N_TYPE) tk_error(C, func, a->line, a->col + 1, "unsupported annotation");
            S->ptypes[i] = a->ival == TACK_F16 ? ty_value(TACK_F32) : ty_value((tack_dtype)a->ival);
        }
    }
    S->state = 1;
    add_spec(C, S);
    lower_spec(C, S, 0);
    S->state = 2;
    return S;
}

tk_spec *tk_lower_kernel(tk_cc *C, int kernel, const tack_argtype *args, int nargs) {
    tack_module *m = C->m;
    tk_func *F = &m->funcs[kernel];
    if (F->kind != TACK_FUNC_KERNEL) tk_error(C, kernel, F->first_line, 0, "'%s' is not a kernel", F->name);
    if (nargs != F->nparams)
        tk_error(C, kernel, F->first_line, 0, "kernel '%s' takes %d argument%s but the signature has %d", F->name,
                 F->nparams, F->nparams == 1 ? "" : "s", nargs);
    if (nargs > 64) tk_error(C, kernel, F->first_line, 0, "kernel '%s' has more than 64 parameters", F->name);
    tk_spec *S = tk_alloc(&C->arena, sizeof *S);
    S->func = kernel;
    S->nparams = nargs;
    S->ptypes = tk_alloc(&C->arena, sizeof(tk_type) * (size_t)(nargs + 1));
    S->pnames = tk_alloc(&C->arena, sizeof(char *) * (size_t)(nargs + 1));
    for (int i = 0; i < nargs; i++) {
        const tack_argtype *a = &args[i];
        S->pnames[i] = F->params[i].name;
        tack_node *an = F->params[i].annotation;
        if ((unsigned)a->dtype >= TACK_DTYPE_COUNT)
            tk_error(C, kernel, F->first_line, 0, "argument '%s' has an unknown dtype %d", S->pnames[i], (int)a->dtype);
        if (an && an->kind != TACK_N_TYPE) tk_error(C, kernel, an->line, an->col + 1, "unsupported annotation of '%s'", S->pnames[i]);
        if (a->is_array) {
            if (a->ndim < 0 || a->ndim > TACK_MAX_NDIM)
                tk_error(C, kernel, F->first_line, 0, "argument '%s' has %d dimensions (at most %d)", S->pnames[i], a->ndim, TACK_MAX_NDIM);
            if (an && an->ival != a->dtype)
                tk_error(C, kernel, an->line, an->col + 1, "parameter '%s' is annotated %s but the argument is an array of %s",
                         S->pnames[i], dt_name((tack_dtype)an->ival), dt_name(a->dtype));
            S->ptypes[i] = (tk_type){TY_ARRAY, (uint8_t)a->dtype, (uint8_t)a->ndim, 0};
        } else {
            if (a->dtype >= TACK_VEC2) tk_error(C, kernel, F->first_line, 0, "vector and matrix scalar arguments are not supported ('%s')", S->pnames[i]);
            tk_type t;
            if (a->weak) {
                tack_scalar_kind k = dt_kind(a->dtype);
                t = ty_weak(k == TACK_KIND_BOOL ? TACK_BOOL : k == TACK_KIND_FLOAT ? TACK_F64 : TACK_I64);
            } else {
                t = lw_dtype_type(a->dtype);
            }
            if (an) {
                tk_type at = lw_dtype_type((tack_dtype)an->ival);
                if (!t.weak && !ty_eq(at, t))
                    tk_error(C, kernel, an->line, an->col + 1, "parameter '%s' is annotated %s but the argument is %s",
                             S->pnames[i], dt_name((tack_dtype)an->ival), dt_name(a->dtype));
                t = at;
            }
            S->ptypes[i] = t;
        }
    }
    S->state = 1;
    add_spec(C, S);
    lower_spec(C, S, 1);
    S->state = 2;
    return S;
}
