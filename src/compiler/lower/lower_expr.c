/*
 * lower_expr.c -- lowering of expressions: names, constants, operators,
 * comparisons, and/or, conditional expressions, attributes and subscripts.
 *
 * Part of lowering (lower.c has the essay; calls are in lower_call.c).
 * lw_expr returns an IR expression whose operands already have the
 * operation's type: binop and compare promote both sides (NumPy 2 rules,
 * NEP 50 weak scalars, types.c) and insert the IR_CASTs; / of integers is a
 * float division, ** of an int by a negative literal a float power, bool
 * arithmetic int arithmetic, as in Python.  In infer mode an operand of
 * unknown type makes the whole expression unknown (lw_unknown), and nothing
 * is checked until the types are.
 *
 * An expression may emit statements into the current block before it: the
 * IR_CHECKs that guard it (an index in bounds before a load, a nonzero
 * divisor before an integer // or %, a non-negative integer exponent), and
 * temporaries (lw_hoist) for values used twice, such as a divisor that is
 * checked and then divided by.  An IR expression never faults.
 *
 * Where Python would not evaluate an operand -- the right side of `and`,
 * `or`, a chained comparison, either branch of `a if c else b` -- the
 * operand's statements go into a block of their own (lower_in); when that
 * block is empty the expression stays an expression (IR_AND, IR_OR,
 * IR_SELECT), otherwise it becomes an if that assigns a temporary, so the
 * checks and calls of an operand run only when Python would run them.
 *
 * Array indices are lowered by lw_indices: each an i64, checked against its
 * extent and wrapped (negative indices count from the end, IR_WRAP); an
 * index that is i, i + 1 or i - 1 stays in place for checks.c to reason
 * about, anything else is evaluated once into a temporary.
 */
#include <string.h>

#include "compiler/lower/lower.h"

/* ---------------------------------------------------------- indexing */
tk_ir *lw_index_value(lw_state *L, tack_node *n) { return lw_index_of(L, lw_expr(L, n), n); }

/* lw_index_value of an index already lowered. */
tk_ir *lw_index_of(lw_state *L, tk_ir *e, tack_node *n) {
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

/* Index k of axis `axis` of a matrix of type ty (m[i, j], m[i]): lw_component_index's rule
 * for one axis of `len` -- a constant folded, counting from the end when negative, out of
 * range a CompileError; a run-time one checked and wrapped -- with the axis and the matrix's
 * type in the messages, compiled and in debug mode alike. */
tk_ir *lw_matrix_index(lw_state *L, tack_node *n, tk_type ty, int axis) {
    int len = axis == 0 ? dt_rows((tack_dtype)ty.dt) : dt_cols((tack_dtype)ty.dt);
    return lw_axis_index(L, lw_index_value(L, n), ty, axis, len, n);
}

/* A sum or difference of integer vectors whose leaves are locals and constructors of locals and
 * constants (base + off, off a constructor of constants in a copy of a constant tuple's loop): each
 * component can be computed apart, reading nothing twice that has an effect, in the order given. */
static int spreads(const tk_ir *e) {
    if (e->op == IR_LOCAL) return 1;
    if (e->op == IR_VEC) {
        for (int i = 0; i < e->n; i++)
            if (!ir_is_simple(e->k[i])) return 0;
        return 1;
    }
    return e->op == IR_BIN && (e->sub == B_ADD || e->sub == B_SUB) && ty_eq(e->k[0]->ty, e->ty) &&
           ty_eq(e->k[1]->ty, e->ty) && spreads(e->k[0]) && spreads(e->k[1]);
}

/* Component k of a vector that spreads: the same operations on the components, in its type. */
static tk_ir *part(lw_state *L, tk_ir *e, int k, tack_node *ix) {
    tk_type st = ty_value(dt_scalar((tack_dtype)e->ty.dt));
    if (e->op == IR_VEC) return e->k[k];
    if (e->op == IR_BIN) return lw_bin(L, e->sub, st, part(L, e->k[0], k, ix), part(L, e->k[1], k, ix), ix->line);
    tk_ir *c = lw_mk(L, IR_COMP, st, ix);
    ir_push(L->C, c, e);
    ir_push(L->C, c, ir_const_i(L->C, ty_value(TACK_I64), k, ix->line));
    return c;
}

/* g[p] of an ndim-D array (ndim >= 2, one index that is no tuple): when p is an integer vector, its
 * components, evaluated once, as the indices of the axes in order (g[p] is g[p.x, p.y], as Taichi's
 * and Warp's grid[base + offset]), each an i64 into vi[]; 1 if so, 0 when p is no vector (the caller
 * reports the count).  A vector of another length is a CompileError naming both. */
int lw_vector_index(lw_state *L, tack_node *ix, int ndim, const char *what, const char *name, tk_ir **vi) {
    tk_ir *e = lw_expr(L, ix);
    if (!lw_known(e)) {
        for (int k = 0; k < ndim; k++) vi[k] = lw_cast(L, e, ty_value(TACK_I64));
        return 1;
    }
    if (!ty_is_vector(e->ty)) return 0;
    tack_dtype vd = (tack_dtype)e->ty.dt;
    if (dt_kind(dt_scalar(vd)) != TACK_KIND_INT)
        ERR(ix, "%s '%s' is indexed with a %s: an index vector must have integer components (tack.vec%di(p))",
            what, name, TN(e->ty), dt_rows(vd));
    if (dt_rows(vd) != ndim)
        ERR(ix, "%s '%s' has %d dimensions but is indexed with a %s of %d components: the vector's length must "
                "be the array's number of dimensions", what, name, ndim, TN(e->ty), dt_rows(vd));
    if (e->op == IR_VEC && e->n == ndim) { /* g[tack.vec2i(i, j)]: its components, each evaluated once, in order */
        for (int k = 0; k < ndim; k++) vi[k] = lw_index_of(L, lw_cast(L, e->k[k], ty_value(dt_scalar(vd))), ix);
        return 1;
    }
    if (spreads(e)) { /* g[base + off]: g[base.x + off.x, ...], each component's sum an index of its own */
        for (int k = 0; k < ndim; k++) vi[k] = lw_index_of(L, lw_cast(L, part(L, e, k, ix), ty_value(TACK_I64)), ix);
        return 1;
    }
    e = lw_hoist(L, e);
    for (int k = 0; k < ndim; k++) {
        tk_ir *c = lw_mk(L, IR_COMP, ty_value(dt_scalar(vd)), ix);
        ir_push(L->C, c, e);
        ir_push(L->C, c, ir_const_i(L->C, ty_value(TACK_I64), k, ix->line));
        vi[k] = lw_hoist(L, lw_cast(L, c, ty_value(TACK_I64)));
    }
    return 1;
}

/* Lower the indices of a[i, j, ...] into k (wrapped, checked); returns their count. */
void lw_indices(lw_state *L, int p, tack_node **idx, int nidx, tk_ir *out, tack_node *n) {
    tk_type at = L->S->ptypes[p];
    tk_ir *vi[TACK_MAX_NDIM];
    int by_vector = 0;
    if (nidx == 1 && idx[0]->kind == TACK_N_TUPLE) {
        tack_node *tup = idx[0];
        idx = tup->kids;
        nidx = tup->nkids;
    } else if (nidx == 1 && at.ndim >= 2 && at.ndim <= TACK_MAX_NDIM) {
        by_vector = lw_vector_index(L, idx[0], at.ndim, "array", L->S->pnames[p], vi);
        if (by_vector) nidx = at.ndim;
    }
    if (nidx != at.ndim)
        ERR(n, "array '%s' has %d dimension%s but is indexed with %d ind%s", L->S->pnames[p], at.ndim,
            at.ndim == 1 ? "" : "s", nidx, nidx == 1 ? "ex" : "ices");
    for (int k = 0; k < nidx; k++) {
        tack_node *ik = by_vector ? idx[0] : idx[k];
        if (ik->kind == TACK_N_TUPLE || (ik->kind == TACK_N_CALL && ik->name && strcmp(ik->name, "slice") == 0))
            ERR(ik, "slices and tuple indices are not supported; index each axis with an integer");
        tk_ir *e = by_vector ? vi[k] : lw_index_value(L, ik);
        tk_ir *s = lw_mk(L, IR_SHAPE, ty_value(TACK_I64), ik);
        s->param = p;
        s->aux = k;
        if (L->C->opts.checks && lw_known(e)) {
            int site = lw_site(L, CK_INDEX, ik->line, k, L->S->pnames[p], NULL);
            lw_check(L, CK_INDEX, site, e, s, ik->line);
        }
        tk_ir *w = lw_mk(L, IR_WRAP, ty_value(TACK_I64), ik);
        w->param = p;
        w->aux = k;
        ir_push(L->C, w, e);
        ir_push(L->C, out, w);
    }
}

void lw_mark_written(lw_state *L, int p) { L->S->written |= (uint64_t)1 << (p & 63); }

static tk_ir *load(lw_state *L, int p, tack_node **idx, int nidx, tack_node *n) {
    tk_ir *ld = lw_mk(L, IR_LOAD, lw_dtype_type((tack_dtype)L->S->ptypes[p].dt), n);
    ld->param = p;
    lw_indices(L, p, idx, nidx, ld, n);
    lw_uses_half(L, L->S->ptypes[p].dt);
    return ld;
}

/* Component index of v.x / v[k] (constant) or -1 for a dynamic one. */
int lw_comp_of_attr(const char *a) {
    if (!a[0] || a[1]) return -1;
    switch (a[0]) {
    case 'x': return 0;
    case 'y': return 1;
    case 'z': return 2;
    case 'w': return 3;
    }
    return -1;
}

/* The component index k of a value of type ty with len components (v[k], q[k]), as Python
 * indexes: a constant -- also a literal under its cast to i64, as lw_index_value leaves it --
 * counts from the end when negative and must be in range (a CompileError); a run-time index
 * is checked, -len <= k < len (CK_COMP), and wrapped as an array index is (IR_WRAP of the
 * constant extent), so a negative one counts from the end as debug mode's NumPy vector does. */
tk_ir *lw_component_index(lw_state *L, tk_ir *k, tk_type ty, int len, tack_node *n) {
    return lw_axis_index(L, k, ty, -1, len, n);
}

/* lw_component_index of a vector (axis -1) or of one axis of a matrix: the site of a
 * matrix's check holds its axis and its type's name, for the run-time message. */
tk_ir *lw_axis_index(lw_state *L, tk_ir *k, tk_type ty, int axis, int len, tack_node *n) {
    const tk_ir *x = k;
    while (x->op == IR_CAST && x->n == 1) x = x->k[0];
    if (x->op == IR_CONST && ty_is_int(x->ty) && !x->str) {
        int64_t i = x->c.i < 0 ? x->c.i + len : x->c.i;
        if (i < 0 || i >= len) {
            if (axis >= 0) ERR(n, "index %lld is out of range for axis %d of a %s", (long long)x->c.i, axis, TN(ty));
            ERR(n, "index %lld is out of range for a %s", (long long)x->c.i, TN(ty));
        }
        return ir_const_i(L->C, ty_value(TACK_I64), i, n->line);
    }
    if (L->C->opts.checks) {
        int site = axis >= 0 ? lw_site(L, CK_COMP, n->line, axis, NULL, dt_name((tack_dtype)ty.dt))
                             : lw_site(L, CK_COMP, n->line, len, NULL, NULL);
        lw_check(L, CK_COMP, site, k, ir_const_i(L->C, ty_value(TACK_I64), len, n->line), n->line);
    }
    tk_ir *w = lw_mk(L, IR_WRAP, ty_value(TACK_I64), n);
    w->param = -1;
    w->aux = 0;
    w->c.i = len;
    ir_push(L->C, w, k);
    return w;
}

tk_ir *lw_component(lw_state *L, tk_ir *v, tk_ir *k, tack_node *n) {
    tk_type ct = ty_value(dt_scalar((tack_dtype)v->ty.dt));
    k = lw_component_index(L, k, v->ty, dt_rows((tack_dtype)v->ty.dt), n);
    tk_ir *c = lw_mk(L, IR_COMP, ct, n);
    ir_push(L->C, c, v);
    ir_push(L->C, c, k);
    return c;
}

/* t[k] of a tuple written out (a loop over a tuple of tuples: `off[0]`, off standing for (0, 1)): element
 * k, a constant index counting from the end when negative; every element is evaluated, in order, as
 * Python builds the tuple before indexing it. */
static tk_ir *tuple_item(lw_state *L, tack_node *n) {
    tack_node *t = n->kids[0], *ix = n->kids[1];
    int64_t k;
    if (n->nkids != 2) ERR(n, "a tuple is indexed with one index");
    if (ix->kind == TACK_N_CONST_INT) k = ix->ival;
    else if (ix->kind == TACK_N_UNARYOP && ix->op == TACK_OP_NEG && ix->nkids == 1 && ix->kids[0]->kind == TACK_N_CONST_INT)
        k = -ix->kids[0]->ival;
    else ERR(ix, "a tuple must be indexed with a constant integer in a kernel");
    if (k < -t->nkids || k >= t->nkids) ERR(ix, "tuple index %lld is out of range for a tuple of %d", (long long)k, t->nkids);
    if (k < 0) k += t->nkids;
    tk_ir *r = NULL;
    for (int i = 0; i < t->nkids; i++) {
        if (i != k && t->kids[i]->kind == TACK_N_TUPLE) continue; /* a tuple of constants: nothing to evaluate */
        tk_ir *e = lw_expr(L, t->kids[i]);
        if (i == k) r = lw_known(e) && !ir_is_const(e) && i + 1 < t->nkids ? lw_hoist(L, e) : e;
    }
    return r;
}

static tk_ir *lower_subscript(lw_state *L, tack_node *n) {
    if (n->nkids < 2) ERR(n, "malformed subscript");
    tack_node *base = n->kids[0];
    if (base->kind == TACK_N_TUPLE) return tuple_item(L, n);
    if (base->kind == TACK_N_NAME && lw_local_array(L, base->name) >= 0) /* x[i] of a local array */
        return lw_local_load(L, lw_local_array(L, base->name), n->kids + 1, n->nkids - 1, n);
    if (base->kind == TACK_N_ATTRIBUTE && base->name && strcmp(base->name, "shape") == 0 && base->nkids == 1 &&
        base->kids[0]->kind == TACK_N_NAME && lw_local_array(L, base->kids[0]->name) >= 0)
        return lw_local_extent(L, lw_local_array(L, base->kids[0]->name), n->kids[1], n);
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
    if (ty_is_vector(v->ty) || ty_is_quat(v->ty)) { /* v[k], q[k] */
        if (n->nkids != 2) ERR(n, "a %s is indexed with one index", TN(v->ty));
        v = lw_hoist(L, v);
        return lw_component(L, v, lw_index_value(L, n->kids[1]), n);
    }
    if (ty_is_matrix(v->ty)) { /* m[i, j], and m[i]: row i, a vector */
        tack_node **ix = n->kids + 1;
        int ni = n->nkids - 1;
        if (ni == 1 && ix[0]->kind == TACK_N_TUPLE) {
            ni = ix[0]->nkids;
            ix = ix[0]->kids;
        }
        if (ni != 1 && ni != 2) ERR(n, "a matrix is indexed as m[i, j], or m[i] for its row i");
        v = lw_hoist(L, v);
        tk_ir *i = lw_hoist(L, lw_matrix_index(L, ix[0], v->ty, 0));
        tack_dtype sd = dt_scalar((tack_dtype)v->ty.dt);
        if (ni == 1) {
            int c = dt_cols((tack_dtype)v->ty.dt);
            tk_ir *row = lw_mk(L, IR_VEC, ty_value(dt_compose(sd, c, 1)), n);
            for (int j = 0; j < c; j++) {
                tk_ir *e = lw_mk(L, IR_COMP, ty_value(sd), n);
                ir_push(L->C, e, v);
                ir_push(L->C, e, i);
                ir_push(L->C, e, ir_const_i(L->C, ty_value(TACK_I64), j, n->line));
                ir_push(L->C, row, e);
            }
            L->C->uses_vec = 1;
            return row;
        }
        tk_ir *j = lw_matrix_index(L, ix[1], v->ty, 1);
        tk_ir *e = lw_mk(L, IR_COMP, ty_value(sd), n);
        ir_push(L->C, e, v);
        ir_push(L->C, e, i);
        ir_push(L->C, e, j);
        return e;
    }
    ERR(n, "%s is not subscriptable", TN(v->ty));
}

/* ------------------------------------------------------- binary ops */
const char *lw_op_symbol(tack_op op) {
    static const char *s[TACK_OP_COUNT] = {
        [TACK_OP_ADD] = "+", [TACK_OP_SUB] = "-", [TACK_OP_MUL] = "*", [TACK_OP_DIV] = "/",
        [TACK_OP_FLOORDIV] = "//", [TACK_OP_MOD] = "%", [TACK_OP_POW] = "**", [TACK_OP_MATMUL] = "@",
        [TACK_OP_LSHIFT] = "<<", [TACK_OP_RSHIFT] = ">>", [TACK_OP_BITAND] = "&", [TACK_OP_BITOR] = "|",
        [TACK_OP_BITXOR] = "^", [TACK_OP_EQ] = "==", [TACK_OP_NE] = "!=", [TACK_OP_LT] = "<",
        [TACK_OP_LE] = "<=", [TACK_OP_GT] = ">", [TACK_OP_GE] = ">="};
    return (unsigned)op < TACK_OP_COUNT && s[op] ? s[op] : "?";
}

tk_ir *lw_bin(lw_state *L, int b, tk_type ty, tk_ir *x, tk_ir *y, int line) {
    tk_ir *e = ir_new(L->C, IR_BIN, ty, line);
    e->sub = (uint8_t)b;
    e->aux_ty = ty;
    ir_push(L->C, e, x);
    ir_push(L->C, e, y);
    return e;
}

/* The one type rule (docs/language.md, "The type of every operation"): a
 * value's type depends on its dtype, never on where it came from.  The loop
 * variable, a shape, len() and a Python int argument are weak ints, but they
 * are integers known only at run time: meeting a float, divided with /, or
 * given to a math function, they give the default float, as an element of
 * an integer array does -- not the f64 carrier in which literal arithmetic
 * is exact.  Two weak values that are both constants are Python's own
 * arithmetic, folded exactly; a weak float that is not a constant keeps
 * adapting to what it meets (lw_cast computes it in that type). */
static int runtime_weak(const tk_ir *e) { return e->ty.kind == TY_VALUE && e->ty.weak && e->op != IR_CONST; }
static int runtime_weak_int(const tk_ir *e) {
    return runtime_weak(e) && (e->ty.dt == TACK_I64 || e->ty.dt == TACK_BOOL || e->ty.dt == TACK_U64);
}

tk_type lw_rule_arith(tk_type t, const tk_ir *x, const tk_ir *y) {
    if (t.kind == TY_VALUE && t.weak && ty_is_float(t) && (runtime_weak_int(x) || (y && runtime_weak_int(y))))
        return ty_value(ty_default_float());
    return t;
}

tk_type lw_rule_floatify(tk_type t, const tk_ir *x, const tk_ir *y) {
    tk_type r = ty_floatify(t);
    if (r.weak && !ty_is_float(t) && !ty_is_complex(t) && (runtime_weak(x) || (y && runtime_weak(y))))
        return ty_value(ty_default_float());
    return r;
}

/* An integer constant below zero, written as one (-1) or folded to one. */
static int negative_literal(const tk_ir *y) {
    if (ir_is_const(y)) return ty_is_int(y->ty) && y->c.i < 0 && dt_kind((tack_dtype)y->ty.dt) == TACK_KIND_INT;
    return y->op == IR_UN && y->sub == U_NEG && ir_is_const(y->k[0]) && ty_is_int(y->k[0]->ty) && y->k[0]->c.i > 0;
}

/* v @ m, v a row: (v @ m)[j] = sum_i v[i] m[i, j], the vector of those sums written out -- from
 * zero, i ascending, in the type, as the dialects' tk_mm sums m @ v (a -0.0 product alone gives
 * +0.0, as there), so it has the bits of tack.transpose(m) @ v -- which is the C a user would
 * write by hand, with no helper for any dialect to carry (decisions.md, 2026-12-06). */
static tk_ir *row_times(lw_state *L, tk_ir *v, tk_ir *m, tack_node *n) {
    tack_dtype md = (tack_dtype)m->ty.dt, sd = dt_scalar(md);
    int r = dt_rows(md), c = dt_cols(md);
    tk_type t = ty_value(sd);
    v = lw_hoist(L, v);
    m = lw_hoist(L, m);
    tk_ir *out = lw_mk(L, IR_VEC, ty_value(dt_compose(sd, c, 1)), n);
    for (int j = 0; j < c; j++) {
        tk_ir *s = ir_const_f(L->C, t, 0.0, n->line);
        for (int i = 0; i < r; i++) {
            tk_ir *a = lw_mk(L, IR_COMP, t, n), *b = lw_mk(L, IR_COMP, t, n);
            ir_push(L->C, a, v);
            ir_push(L->C, a, ir_const_i(L->C, ty_value(TACK_I64), i, n->line));
            ir_push(L->C, b, m);
            ir_push(L->C, b, ir_const_i(L->C, ty_value(TACK_I64), i, n->line));
            ir_push(L->C, b, ir_const_i(L->C, ty_value(TACK_I64), j, n->line));
            s = lw_bin(L, B_ADD, t, s, lw_bin(L, B_MUL, t, a, b, n->line), n->line);
        }
        ir_push(L->C, out, s);
    }
    return out;
}

/* x // y, x % y and x ** y with a vector or matrix operand (a number broadcast), in the promoted type
 * t: the scalar operator on each pair of components -- Python's rounding toward -inf for integers with
 * its zero-divisor check (ZeroDivisionError), NumPy's floor_divide and remainder for floats, the scalar
 * power with its negative-exponent check -- so each component is bit for bit the scalar result, and no
 * dialect sees anything new (an IR_VEC of them). */
static tk_ir *componentwise(lw_state *L, tack_op op, tk_ir *x, tk_ir *y, tk_type t, tack_node *n) {
    tack_dtype td = (tack_dtype)t.dt, sd = dt_scalar(td);
    int r = dt_rows(td), c = dt_cols(td), xv = !ty_is_scalar(x->ty), yv = !ty_is_scalar(y->ty);
    tk_type st = ty_value(sd);
    x = lw_hoist(L, lw_cast(L, x, xv ? t : st));
    y = lw_hoist(L, lw_cast(L, y, yv ? t : st));
    tk_ir *out = lw_mk(L, IR_VEC, t, n);
    for (int k = 0; k < r * c; k++) {
        tk_ir *a[2] = {x, y};
        for (int i = 0; i < 2; i++) {
            if (ty_is_scalar(a[i]->ty)) continue;
            tk_ir *e = lw_mk(L, IR_COMP, st, n); /* a matrix's entry is [row, column], a vector's [k] */
            ir_push(L->C, e, a[i]);
            ir_push(L->C, e, ir_const_i(L->C, ty_value(TACK_I64), c > 1 ? k / c : k, n->line));
            if (c > 1) ir_push(L->C, e, ir_const_i(L->C, ty_value(TACK_I64), k % c, n->line));
            a[i] = e;
        }
        tk_ir *e = lw_binop(L, op, a[0], a[1], n);
        if (lw_known(e) && !ty_eq(e->ty, st)) /* vec2i ** -1: Python's 0.5 for numbers, NumPy's error for arrays */
            ERR(n, "%s of %s and %s: each component's result would be %s, not the vector's %s", lw_op_symbol(op),
                TN(x->ty), TN(y->ty), TN(e->ty), TN(st));
        ir_push(L->C, out, e);
    }
    return out;
}

/* x @ y, or x op y with a vector or matrix operand: a matrix product, or
 * + - * / element by element in the promoted type (a scalar is broadcast). */
static tk_ir *vector_binop(lw_state *L, tack_op op, tk_ir *x, tk_ir *y, tack_node *n) {
    int xv = !ty_is_scalar(x->ty), yv = !ty_is_scalar(y->ty);
    if (xv && yv) { /* vec3 and vec3d, mat33 and vec3d: the precisions differ (the shapes may well match) */
        tack_dtype xs = dt_scalar((tack_dtype)x->ty.dt), ys = dt_scalar((tack_dtype)y->ty.dt);
        if (xs != ys && dt_kind(xs) == TACK_KIND_FLOAT && dt_kind(ys) == TACK_KIND_FLOAT)
            ERR(n, "%s of %s and %s: the operands have different precisions (%s and %s); convert one, e.g. tack.%s(x)",
                lw_op_symbol(op), TN(x->ty), TN(y->ty), dt_name(xs), dt_name(ys),
                dt_name(dt_compose(dt_bits(xs) > dt_bits(ys) ? xs : ys, dt_rows((tack_dtype)x->ty.dt),
                                   dt_cols((tack_dtype)x->ty.dt))));
    }
    if (op == TACK_OP_MATMUL) { /* NumPy's matmul of 1-D and 2-D operands, each entry summed in order */
        if (!xv || !yv || ty_is_complex(x->ty) || ty_is_complex(y->ty))
            ERR(n, "@ multiplies matrices and vectors, not %s and %s", TN(x->ty), TN(y->ty));
        tack_dtype xd = (tack_dtype)x->ty.dt, yd = (tack_dtype)y->ty.dt;
        int xm = ty_is_matrix(x->ty), ym = ty_is_matrix(y->ty);
        int inner_x = xm ? dt_cols(xd) : dt_rows(xd), inner_y = dt_rows(yd);
        if (dt_scalar(xd) != dt_scalar(yd))
            ERR(n, "@ of %s and %s: the components' types differ (%s and %s); convert one, e.g. tack.%s(v)",
                TN(x->ty), TN(y->ty), dt_name(dt_scalar(xd)), dt_name(dt_scalar(yd)),
                dt_name(dt_compose(TACK_F32, dt_rows(xm ? yd : xd), 1)));
        if (inner_x != inner_y) ERR(n, "shapes do not match for @: %s and %s", TN(x->ty), TN(y->ty));
        L->C->uses_vec = 1;
        if (!xm && !ym) /* v @ w: the dot product, as tack.dot */
            return lw_bin(L, B_DOT, ty_value(dt_scalar(xd)), x, y, n->line);
        if (!xm) return row_times(L, x, y, n);
        tack_dtype rd = dt_compose(dt_scalar(xd), dt_rows(xd), dt_cols(yd));
        return lw_bin(L, B_MATMUL, ty_value(rd), x, y, n->line);
    }
    /* A number meets a vector in the vector's type, converted first; an int vector would truncate
     * a float to its components' type (vec3i * 0.7 multiplied by 0), so that is refused. */
    const tk_ir *vec = xv ? x : y, *num = xv ? y : x;
    tack_dtype vd = (tack_dtype)vec->ty.dt;
    if (xv != yv && dt_kind(dt_scalar(vd)) == TACK_KIND_INT && (ty_is_float(num->ty) || ty_is_complex(num->ty)))
        ERR(n, "%s %s %s: the float would be truncated to the vector's %s components; convert the vector, "
               "e.g. tack.%s(v) %s s, or the number, int(s)", TN(x->ty), lw_op_symbol(op), TN(y->ty),
            dt_name(dt_scalar(vd)), dt_name(dt_compose(TACK_F32, dt_rows(vd), dt_cols(vd))), lw_op_symbol(op));
    tk_type t = ty_promote(x->ty, y->ty);
    if (t.kind == TY_UNKNOWN) ERR(n, "unsupported operand types for %s: %s and %s", lw_op_symbol(op), TN(x->ty), TN(y->ty));
    int b;
    switch (op) {
    case TACK_OP_ADD: b = B_ADD; break;
    case TACK_OP_SUB: b = B_SUB; break;
    case TACK_OP_MUL: b = B_MUL; break;
    case TACK_OP_DIV: b = B_DIV; break;
    case TACK_OP_FLOORDIV:
    case TACK_OP_MOD:
    case TACK_OP_POW: b = -1; break;
    default: ERR(n, "unsupported operand types for %s: %s and %s", lw_op_symbol(op), TN(x->ty), TN(y->ty));
    }
    if (b == B_DIV && dt_kind(dt_scalar((tack_dtype)t.dt)) != TACK_KIND_FLOAT)
        ERR(n, "/ on integer vectors is not supported");
    if ((b == B_MUL || b == B_DIV) && xv && yv && ty_is_matrix(t))
        ERR(n, "use @ to multiply matrices");
    L->C->uses_vec = 1;
    if (xv != yv && dt_kind(dt_scalar((tack_dtype)t.dt)) == TACK_KIND_INT) { /* vec3i * n: n as an i32 */
        tk_type comp = ty_value(dt_scalar((tack_dtype)t.dt));
        if (xv) y = lw_pyint_narrow(L, y, comp, n);
        else x = lw_pyint_narrow(L, x, comp, n);
    }
    if (b < 0) return componentwise(L, op, x, y, t, n);
    return lw_bin(L, b, t, lw_cast(L, x, t), lw_cast(L, y, t), n->line);
}

tk_ir *lw_binop(lw_state *L, tack_op op, tk_ir *x, tk_ir *y, tack_node *n) {
    if (!lw_known(x) || !lw_known(y)) return lw_unknown(L, n);
    if (x->ty.kind != TY_VALUE || y->ty.kind != TY_VALUE)
        ERR(n, "unsupported operand types for %s: %s and %s", lw_op_symbol(op), TN(x->ty), TN(y->ty));
    if (ty_is_quat(x->ty) || ty_is_quat(y->ty) || ty_is_xform(x->ty) || ty_is_xform(y->ty))
        return lw_quat_binop(L, op, x, y, n);
    if (ty_is_complex(x->ty) || ty_is_complex(y->ty)) return lw_complex_binop(L, op, x, y, n);
    if (op == TACK_OP_MATMUL || !ty_is_scalar(x->ty) || !ty_is_scalar(y->ty)) return vector_binop(L, op, x, y, n);
    /* arithmetic on two bools is arithmetic on ints, as in Python */
    int arith = op == TACK_OP_ADD || op == TACK_OP_SUB || op == TACK_OP_MUL || op == TACK_OP_DIV ||
                op == TACK_OP_FLOORDIV || op == TACK_OP_MOD || op == TACK_OP_POW;
    int shift = op == TACK_OP_LSHIFT || op == TACK_OP_RSHIFT;
    if ((arith || shift) && ty_is_bool(x->ty) && ty_is_bool(y->ty)) {
        tk_type it = x->ty.weak && y->ty.weak ? ty_weak(TACK_I64) : ty_value(TACK_I64);
        x = lw_cast(L, lw_pyint_of_bool(L, x, NULL), it); /* True + True: the constant 2, as in Python */
        y = lw_cast(L, lw_pyint_of_bool(L, y, NULL), it);
    }
    int tx, ty_;
    if ((op == TACK_OP_BITAND || op == TACK_OP_BITOR || op == TACK_OP_BITXOR) && ty_is_bool(x->ty) &&
        ty_is_bool(y->ty) && x->ty.weak && y->ty.weak && lw_pyint_truth(x, &tx) && lw_pyint_truth(y, &ty_))
        /* True & False: the bool constant, so that (True | False) * 100000 is folded too */
        return ir_const_i(L->C, ty_weak(TACK_BOOL),
                          op == TACK_OP_BITAND ? (tx & ty_) : op == TACK_OP_BITOR ? (tx | ty_) : (tx ^ ty_), n->line);
    x = lw_pyint_of_bool(L, x, y); /* True * 100000: Python's 100000, checked where it meets a type */
    y = lw_pyint_of_bool(L, y, x);
    tk_ir *exact = lw_pyint_binop(L, op, x, y, n); /* 2**64 is no int64; -2**63 is */
    if (exact) return exact;
    lw_pyint_fits(L, x, y->ty);
    lw_pyint_fits(L, y, x->ty);
    tk_type t = lw_rule_arith(ty_promote(x->ty, y->ty), x, y);
    if (t.kind == TY_UNKNOWN) ERR(n, "unsupported operand types for %s: %s and %s", lw_op_symbol(op), TN(x->ty), TN(y->ty));
    if (arith && ty_is_bool(t)) t = t.weak ? ty_weak(TACK_I64) : ty_value(TACK_I64);
    if (ty_is_int(t) && op != TACK_OP_DIV && !(op == TACK_OP_POW && negative_literal(y))) {
        /* a run-time Python int taking a narrower type: NumPy 2's OverflowError where it does not fit */
        x = lw_pyint_narrow(L, x, t, n);
        y = lw_pyint_narrow(L, y, t, n);
    }
    switch (op) {
    case TACK_OP_ADD: return lw_bin(L, B_ADD, t, lw_cast(L, x, t), lw_cast(L, y, t), n->line);
    case TACK_OP_SUB: return lw_bin(L, B_SUB, t, lw_cast(L, x, t), lw_cast(L, y, t), n->line);
    case TACK_OP_MUL: return lw_bin(L, B_MUL, t, lw_cast(L, x, t), lw_cast(L, y, t), n->line);
    case TACK_OP_DIV: {
        tk_type r = lw_rule_floatify(t, x, y);
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
            tk_type r = lw_rule_floatify(t, x, y);
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
        if (ty_is_float(t)) ERR(n, "unsupported operand types for %s: %s and %s", lw_op_symbol(op), TN(x->ty), TN(y->ty));
        int b = op == TACK_OP_LSHIFT ? B_SHL : op == TACK_OP_RSHIFT ? B_SHR : op == TACK_OP_BITAND ? B_AND
              : op == TACK_OP_BITOR ? B_OR : B_XOR;
        return lw_bin(L, b, t, lw_cast(L, x, t), lw_cast(L, y, t), n->line);
    }
    default: ERR(n, "unsupported binary operator %s", lw_op_symbol(op));
    }
}

static tk_ir *compare(lw_state *L, tack_op op, tk_ir *x, tk_ir *y, tack_node *n) {
    if (!lw_known(x) || !lw_known(y)) return lw_unknown(L, n);
    if (ty_is_quat(x->ty) || ty_is_quat(y->ty) || ty_is_xform(x->ty) || ty_is_xform(y->ty))
        return lw_quat_compare(L, op, x, y, n);
    if (ty_is_complex(x->ty) || ty_is_complex(y->ty)) return lw_complex_compare(L, op, x, y, n);
    if (!ty_is_scalar(x->ty) || !ty_is_scalar(y->ty))
        ERR(n, "comparison %s is not supported between %s and %s", lw_op_symbol(op), TN(x->ty), TN(y->ty));
    tk_type t = lw_rule_arith(ty_promote(x->ty, y->ty), x, y);
    if (t.kind == TY_VALUE && t.weak && ty_is_float(t) && (runtime_weak(x) || runtime_weak(y)))
        t = ty_concrete(t); /* two Python floats, one known only at run time: the default float */
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
    tk_ir *exact = lw_pyint_compare(L, b, x, y, n); /* a Python int and a fixed-width int: NumPy 2's exact answer */
    if (exact) return exact;
    tk_ir *e = lw_bin(L, b, ty_value(TACK_BOOL), lw_cast(L, x, t), lw_cast(L, y, t), n->line);
    e->aux_ty = t;
    return e;
}

/* Combine `first` with a right operand lowered into `scratch` (its statements).
 * and: lw_truth(a) ? b : a;  or: lw_truth(a) ? a : b  (values of the promoted type). */
static tk_ir *shortcircuit(lw_state *L, int isand, tk_ir *a, tk_ir *b, tk_ir *scratch, tack_node *n, int k) {
    if (!lw_known(a) || !lw_known(b)) return lw_unknown(L, n);
    if (!ty_is_scalar(a->ty) || !ty_is_scalar(b->ty)) ERR(n, "and/or need scalar operands, not %s and %s", TN(a->ty), TN(b->ty));
    if (ty_is_complex(a->ty) || ty_is_complex(b->ty))
        ERR(n, "and/or of complex numbers is not supported in kernels; test bool(z) or z != 0");
    tk_type t = ty_is_bool(a->ty) && ty_is_bool(b->ty) ? ty_value(TACK_BOOL) : lw_rule_arith(ty_promote(a->ty, b->ty), a, b);
    /* Python tests a itself; where converting a to t may make a true value false (2**31 * i into
     * uint8 is 0, a Python float of 1e-300 into f32 is 0.0), the test is on a before the conversion,
     * in the if below, and the value picked is converted after */
    int narrows = (ty_is_int(a->ty) && ty_is_int(t) && dt_bits((tack_dtype)t.dt) < dt_bits((tack_dtype)a->ty.dt)) ||
                  (ty_is_float(a->ty) && ty_is_float(t) && dt_bits((tack_dtype)t.dt) < dt_bits((tack_dtype)a->ty.dt));
    if (k > 0 && scratch->n == 0 && !narrows) lw_choice(L, n, k, t, -1);
    int ta, tb;
    if (scratch->n == 0 && !ty_is_bool(t) && lw_pyint_truth(a, &ta) && lw_pyint_truth(b, &tb)) {
        /* 0 or 100000: Python's pick of two constants is a constant, checked where it meets a type */
        tk_ir *pick = lw_pyint_of_bool(L, isand ? (ta ? b : a) : (ta ? a : b), NULL);
        if (k > 0) lw_choice(L, n, k, pick->ty, -1); /* the constant's own type (2**63 or 1: u64 or not) */
        return pick;
    }
    if (scratch->n == 0 && !narrows) {
        a = lw_cast(L, a, t);
        if (!ty_is_bool(t)) a = lw_hoist(L, a);
        tk_ir *e = lw_mk(L, isand ? IR_AND : IR_OR, t, n);
        ir_push(L->C, e, a);
        ir_push(L->C, e, lw_cast(L, b, t));
        return e;
    }
    int tmp = lw_temp(L, t);
    if (k > 0) lw_choice(L, n, k, t, tmp);
    if (narrows) a = lw_hoist(L, a);
    lw_emit(L, lw_assign_ir(L, tmp, lw_cast(L, a, t), n->line));
    tk_ir *cond = lw_truth(L, narrows ? a : lw_local_ref(L, tmp, n->line), n);
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

tk_ir *lw_in(lw_state *L, tk_ir *blk, tack_node *n) {
    tk_ir *saved = L->blk;
    L->blk = blk;
    tk_ir *e = lw_expr(L, n);
    L->blk = saved;
    return e;
}

static tk_ir *lower_compare(lw_state *L, tack_node *n) {
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
        result = i == 0 ? c : shortcircuit(L, 1, result, c, scratch, n, 0); /* a chain: no choice to record */
        left = right;
    }
    return result;
}

/* ------------------------------------------------------- expressions */
/* A name: a local of the current parallel loop or of the frame. */
static tk_ir *lower_name(lw_state *L, tack_node *n) {
    const char *name = n->name ? n->name : "";
    int loc = lw_lookup(L, name);
    if (loc >= 0) {
        tk_local *l = &L->S->locals[loc];
        if (l->ty.kind == TY_UNKNOWN && !L->infer) ERR(n, "local variable '%s' is used before it is assigned", name);
        if (l->ty.kind == TY_ARRAY)
            ERR(n, "local array '%s' cannot be used as a value (assigned to another name, returned, or in an "
                   "expression); index it (%s[i]), use len(%s), %s.shape[k], or pass it whole to a @tack.func: "
                   "f(%s)", name, name, name, name, name);
        l->read = 1;
        lw_unbound_use(L, loc, n);
        tk_ir *e = lw_mk(L, IR_LOCAL, l->ty, n);
        e->local = loc;
        return e;
    }
    int p = lw_array_param(L, name);
    if (p >= 0) {
        tk_type at = L->S->ptypes[p];
        if (at.ndim == 1 && (at.dt == TACK_F32 || at.dt == TACK_F64))  /* perhaps tack.vec3(...) from the host */
            ERR(n, "array '%s' cannot be used as a value here (index it, or pass it to a @tack.func); a vector made "
                   "on the host (tack.%s(...) and the like) is a NumPy array of its components, so it arrives as "
                   "this 1-D array: annotate the parameter, %s: tack.%s, to take it by value (docs/language.md, "
                   "\"Vector arguments\")",
                name, at.dt == TACK_F32 ? "vec3" : "vec3d", name, at.dt == TACK_F32 ? "vec3" : "vec3d");
        ERR(n, "array '%s' cannot be used as a value here (index it, or pass it to a @tack.func)", name);
    }
    for (int i = 0; i < L->S->nlocals; i++)
        if (L->S->locals[i].name && !strcmp(L->S->locals[i].name, name))
            ERR(n, "'%s' is private to the parallel loop that assigns it and cannot be used outside it", name);
    ERR(n, "name '%s' is not defined", name);
}

static tk_ir *lower_unary(lw_state *L, tack_node *n) {
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
        if (ty_is_quat(x->ty) || ty_is_xform(x->ty)) return lw_quat_neg(L, x, n);
        if (ty_is_bool(x->ty)) x = lw_cast(L, lw_pyint_of_bool(L, x, NULL), x->ty.weak ? ty_weak(TACK_I64) : ty_value(TACK_I64));
        if (!ty_is_scalar(x->ty)) L->C->uses_vec = 1;
        tk_ir *lit = lw_pyint_neg(L, x, n); /* -5 is the literal -5, as in Python; -2**63 fits, -2**64 not */
        if (lit) return lit;
        tk_ir *u = lw_mk(L, IR_UN, x->ty, n);
        u->sub = U_NEG;
        return lw_kid(L, u, x);
    }
    if (n->op == TACK_OP_INVERT) {
        if (!ty_is_int(x->ty) && !ty_is_bool(x->ty)) ERR(n, "bad operand type for unary ~: %s", TN(x->ty));
        tk_ir *lit = lw_pyint_invert(L, x, n); /* ~100000 is the literal -100001 */
        if (lit) return lit;
        int t;
        if (ty_is_bool(x->ty) && x->ty.weak && lw_pyint_truth(x, &t)) /* ~True: NumPy's logical not, a constant */
            return ir_const_i(L->C, ty_weak(TACK_BOOL), !t, n->line);
        tk_ir *u = lw_mk(L, IR_UN, x->ty, n);
        u->sub = ty_is_bool(x->ty) ? U_NOT : U_INVERT;
        return lw_kid(L, u, x);
    }
    ERR(n, "unsupported unary operator");
}

/* a and b and c: each right operand lowered into a block of its own, so its
 * statements run only when Python would evaluate it. */
static tk_ir *lower_boolop(lw_state *L, tack_node *n) {
    if (n->nkids < 2) ERR(n, "malformed boolean operation");
    int isand = n->op == TACK_OP_AND;
    tk_ir *acc = lw_expr(L, n->kids[0]);
    for (int i = 1; i < n->nkids; i++) {
        tk_ir *scratch = lw_mk(L, IR_BLOCK, ty_void(), n);
        tk_ir *y = lw_in(L, scratch, n->kids[i]);
        acc = shortcircuit(L, isand, acc, y, scratch, n, i);
    }
    return acc;
}

/* a if c else b: a select when neither branch needs statements, else an if
 * assigning a temporary. */
static tk_ir *lower_ifexp(lw_state *L, tack_node *n) {
    if (n->nkids != 3) ERR(n, "malformed conditional expression");
    tk_ir *c = lw_truth(L, lw_expr(L, n->kids[0]), n);
    tk_ir *ba = lw_mk(L, IR_BLOCK, ty_void(), n), *bb = lw_mk(L, IR_BLOCK, ty_void(), n);
    tk_ir *a = lw_in(L, ba, n->kids[1]);
    tk_ir *b = lw_in(L, bb, n->kids[2]);
    if (!lw_known(a) || !lw_known(b)) return lw_unknown(L, n);
    /* i if c else 0.5: a run-time int meeting a Python float is the default float, as in max(i, 0.5) */
    tk_type t = lw_rule_arith(ty_promote(a->ty, b->ty), a, b);
    if (t.kind == TY_UNKNOWN) ERR(n, "the branches of a conditional expression have incompatible types %s and %s", TN(a->ty), TN(b->ty));
    if (ba->n == 0 && bb->n == 0) {
        lw_choice(L, n, 0, t, -1);
        tk_ir *s = lw_mk(L, IR_SELECT, t, n);
        ir_push(L->C, s, c);
        ir_push(L->C, s, lw_cast(L, a, t));
        ir_push(L->C, s, lw_cast(L, b, t));
        return s;
    }
    int tmp = lw_temp(L, t);
    lw_choice(L, n, 0, t, tmp);
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

/* a.ndim, a.size of an array; v.x, v.y, v.z, v.w of a vector. */
static tk_ir *lower_attribute(lw_state *L, tack_node *n) {
    if (n->nkids != 1 || !n->name) ERR(n, "malformed attribute");
    tack_node *b = n->kids[0];
    if (b->kind == TACK_N_NAME && lw_local_array(L, b->name) >= 0) return lw_local_attr(L, lw_local_array(L, b->name), n);
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
        if (!strcmp(n->name, "T"))
            ERR(n, "arrays have no attribute 'T' in kernels (shape, ndim, size are supported): index the "
                   "transpose as a[j, i], or pass a.T to the kernel (a strided view, not a copy)");
        ERR(n, "arrays have no attribute '%s' in kernels (shape, ndim, size are supported)", n->name);
    }
    tk_ir *v = lw_expr(L, b);
    if (!lw_known(v)) return lw_unknown(L, n);
    if (ty_is_complex(v->ty) && (!strcmp(n->name, "real") || !strcmp(n->name, "imag")))
        return lw_complex_part(L, lw_hoist(L, v), n->name[0] == 'i', n->line);
    tk_ir *qa = lw_quat_attr(L, v, n->name, n); /* q.x ... q.w, t.p, t.q */
    if (qa) return qa;
    int c = lw_comp_of_attr(n->name);
    if (ty_is_vector(v->ty) && c >= 0) {
        if (c >= dt_rows((tack_dtype)v->ty.dt)) ERR(n, "%s has no component '%s'", TN(v->ty), n->name);
        return lw_component(L, lw_hoist(L, v), ir_const_i(L->C, ty_value(TACK_I64), c, n->line), n);
    }
    if (!strcmp(n->name, "T") && (ty_is_vector(v->ty) || ty_is_matrix(v->ty))) return lw_transpose_attr(L, v, n);
    if (ty_is_vector(v->ty) || ty_is_matrix(v->ty)) {
        /* NumPy's, Warp's and Taichi's method names for what Tack spells as functions */
        static const char *const fn[][2] = {
            {"norm", "tack.norm(v) (or tack.length(v))"}, {"length", "tack.length(v)"},
            {"magnitude", "tack.length(v)"}, {"norm_sqr", "tack.dot(v, v)"},
            {"length_sq", "tack.dot(v, v)"}, {"normalized", "tack.normalize(v)"},
            {"normalize", "tack.normalize(v)"}, {"dot", "tack.dot(v, w)"},
            {"cross", "tack.cross(v, w)"}, {"outer", "tack.outer(v, w)"}};
        for (size_t k = 0; k < sizeof fn / sizeof fn[0]; k++)
            if (!strcmp(n->name, fn[k][0])) ERR(n, "%s has no attribute '%s': write %s", TN(v->ty), n->name, fn[k][1]);
        if (ty_is_vector(v->ty))
            ERR(n, "%s has no attribute '%s' (a vector has its components x, y, z, w as far as its size, and T)",
                TN(v->ty), n->name);
        ERR(n, "%s has no attribute '%s' (a matrix has T; index it as m[i, j])", TN(v->ty), n->name);
    }
    ERR(n, "%s has no attribute '%s'", TN(v->ty), n->name);
}

tk_ir *lw_expr(lw_state *L, tack_node *n) {
    if (!n) ERR(n, "missing expression");
    switch (n->kind) {
    case TACK_N_CONST_INT:
        if (n->is_uint) return lw_big_pyint(L, (uint64_t)n->ival, n->line);
        return ir_const_i(L->C, ty_weak(TACK_I64), n->ival, n->line);
    case TACK_N_CONST_FLOAT: return ir_const_f(L->C, ty_weak(TACK_F64), n->fval, n->line);
    case TACK_N_CONST_BOOL: return ir_const_i(L->C, ty_weak(TACK_BOOL), n->ival != 0, n->line);
    case TACK_N_CONST_STR: ERR(n, "strings are only supported in print() and assert messages");
    case TACK_N_TYPE: ERR(n, "a dtype cannot be used as a value here");
    case TACK_N_NAME: return lower_name(L, n);
    case TACK_N_BINOP: {
        if (n->nkids != 2) ERR(n, "malformed binary operation");
        tk_ir *x = lw_expr(L, n->kids[0]);
        tk_ir *y = lw_expr(L, n->kids[1]);
        return lw_binop(L, n->op, x, y, n);
    }
    case TACK_N_UNARYOP: return lower_unary(L, n);
    case TACK_N_BOOLOP: return lower_boolop(L, n);
    case TACK_N_COMPARE: return lower_compare(L, n);
    case TACK_N_IFEXP: return lower_ifexp(L, n);
    case TACK_N_CALL: return lw_call(L, n);
    case TACK_N_ATTRIBUTE: return lower_attribute(L, n);
    case TACK_N_SUBSCRIPT: return lower_subscript(L, n);
    case TACK_N_TUPLE: ERR(n, "tuples are only supported in assignments, indices and ndrange loops");
    default: ERR(n, "unsupported expression");
    }
}
