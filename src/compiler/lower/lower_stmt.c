/*
 * lower_stmt.c -- lowering of statements: assignments, if, return, assert,
 * break and continue, expression statements; and the blocks that hold them.
 *
 * Part of lowering (lower.c has the essay; loops are in lower_loop.c,
 * expressions in lower_expr.c, calls in lower_call.c).  A statement lowers
 * into the current block, L->blk: first the statements its expressions need
 * (checks, temporaries, calls), then its own IR.  Nested blocks are lowered
 * with lower_block_into, which makes the new block current for a while.
 *
 * Assignments are where types are inferred.  Every local was created by
 * prescan (lower.c) in its scope before lowering; target_local finds the
 * one an assignment writes, and refuses a frame local inside a parallel loop
 * (a data race).  assign_local widens the local's type to take the value and
 * sets L->changed when the type moved, so the fixed point in lower_spec runs
 * another pass; an annotated local or a parameter keeps its type, and takes
 * no value of a higher kind than its own (a float into an int) unless the
 * value is a weak Python scalar.
 *
 * The targets of an assignment are names, tuples of targets (unpacked from a
 * vector, a tuple a function returned, or a tuple of values evaluated first:
 * a, b = b, a swaps), array elements (IR_STORE, with its index checks), and
 * components of a vector, quaternion or matrix local (IR_SETCOMP), by index or
 * by name: v.y = s, q.w = s, and a transform's parts, t.p = v (three
 * IR_SETCOMPs), t.p.x = s.  A local array's element takes them too, t[k].x = s
 * and t[k][1] = s, as a load into a temporary, the IR_SETCOMP and a store back
 * at the same indices: the array is the thread's own.  An array parameter's
 * element is shared, so a[i].x = s, a[i][k] = s, a[i].p = v are a store of
 * each named component alone (an IR_STORE with comp, store_param_part): the
 * element is never read and written back, and iterations that set different
 * components of one element lose nothing.  Its updates follow a number
 * element's rules per component (a[i].x += s atomic in a parallel loop, an
 * IR_ATOMIC with comp; any other operator on the own element only).  A
 * vector index known only at run time picks its component by a branch per
 * component, each a constant-component store.  An array's attribute is
 * refused naming the target.  a[i] += v and -= v
 * inside a parallel loop are atomic (numeric elements other than f16; a
 * vector or matrix element one atomic per component), so
 * reductions into one cell are correct; otherwise an augmented assignment to
 * an element is a load and a store sharing the indices -- which, inside a
 * parallel loop, is only allowed on the iteration's own element (every loop
 * variable, unassigned in the body, is one of its indices): two iterations
 * updating one cell at once would lose updates silently (s[0] *= x[i] over
 * 200,000 factors gave 452.7 for 22,021), so any other is a CompileError
 * that says what to write instead.  A @tack.func called inside a parallel
 * loop is specialized for it (tk_spec.par, lower_call.c) and keeps the same
 * rule; its own elements are those indexed by the parameters that received
 * the loop's variables.  The store of a compound assignment is marked
 * ST_RMW, and verify.c checks the rule again on the IR after every pass.
 * A parameter that receives a caller's local array (tk_spec.plarr) is
 * exempt from both: that array belongs to one iteration.
 *
 * A @tack.func's return type is inferred like a local's: each return widens
 * it (widen_return); `return a, b` makes it a tuple, typed per position.
 */
#include <stdio.h>
#include <string.h>

#include "compiler/lower/lower.h"

/* -------------------------------------------------------- assignments */
/* Assign v to local loc, widening the local's type to take it (setting
 * L->changed when it moves); a declared local or a parameter keeps its type. */
void lw_assign_local(lw_state *L, int loc, tk_ir *v, tack_node *n) {
    tk_local *l = &L->S->locals[loc];
    const char *name = l->shown ? l->shown : l->name; /* as messages call it */
    if (l->ty.kind == TY_ARRAY)
        ERR(n, "cannot assign to local array '%s'; assign its elements (%s[i] = ...), or create it again "
               "with the same shape", name, name);
    if (l->is_param && L->S->ptypes && 0) return;
    if (!lw_known(v)) {
        if (!L->infer) ERR(n, "cannot infer the type of '%s'", name);
        return;
    }
    if (v->ty.kind == TY_TUPLE)
        ERR(n, "cannot assign the %d values a function returned to '%s'; unpack them (a, b = f(...))",
            L->C->specs[ty_tuple_spec(v->ty)]->nret, name);
    if (v->ty.kind == TY_MULTI)
        ERR(n, "cannot assign the %d values tack.%s() returns to '%s'; unpack them (%s = tack.%s(m))",
            ty_multi_count(v->ty), tk_math_name(v->ty.ndim), name,
            v->ty.ndim == M_SVD3 ? "U, s, V" : v->ty.ndim == M_EIG3 ? "w, V" : "Q, R", tk_math_name(v->ty.ndim));
    if (v->ty.kind != TY_VALUE)
        ERR(n, "cannot assign %s to '%s': only numbers, bools, vectors and matrices can be local variables", TN(v->ty), name);
    if (l->declared || l->is_param) {
        tk_type t = l->ty;
        int vs = ty_is_scalar(v->ty), ts = ty_is_scalar(t);
        int bad = vs != ts || (!vs && v->ty.dt != t.dt);
        if (vs && ts && !v->ty.weak) {
            tack_scalar_kind vk = dt_kind((tack_dtype)v->ty.dt), tk = dt_kind((tack_dtype)t.dt);
            int vr = vk == TACK_KIND_BOOL ? 0 : vk == TACK_KIND_FLOAT ? 2 : vk == TACK_KIND_COMPLEX ? 3 : 1;
            int tr = tk == TACK_KIND_BOOL ? 0 : tk == TACK_KIND_FLOAT ? 2 : tk == TACK_KIND_COMPLEX ? 3 : 1;
            if (vr > tr) bad = 1;
        }
        if (bad) ERR(n, "cannot assign %s to '%s' of type %s", TN(v->ty), name, TN(t));
        lw_emit(L, lw_assign_ir(L, loc, lw_cast(L, v, t), n->line));
        return;
    }
    tk_type t = l->ty, u;
    if (t.kind == TY_UNKNOWN) u = v->ty;
    else {
        if (ty_is_scalar(t) != ty_is_scalar(v->ty) || (!ty_is_scalar(t) && t.dt != v->ty.dt))
            ERR(n, "cannot assign %s to '%s' of type %s", TN(v->ty), name, TN(t));
        u = ty_promote(t, v->ty);
        if (u.kind == TY_UNKNOWN) ERR(n, "cannot assign %s to '%s' of type %s", TN(v->ty), name, TN(t));
    }
    if (!ty_eq(u, t)) {
        l->ty = u;
        L->changed = 1;
    }
    lw_emit(L, lw_assign_ir(L, loc, lw_cast(L, v, l->ty), n->line));
}

/* The local a name assigned at this point refers to (creating none). */
int lw_target_local(lw_state *L, tack_node *t) {
    const char *name = t->name;
    if (lw_array_param(L, name) >= 0) ERR(t, "cannot assign to array parameter '%s'", name);
    int i = -1;
    if (L->pfor >= 0) {
        if (lw_find_local_in(L->S, name, -1) >= 0)
            ERR(t, "cannot assign to '%s' inside a parallel loop: it is shared by all iterations "
                   "(assigned outside the loop); use an array element (a[0] += v is atomic) for a reduction, "
                   "tack.atomic_max(a, 0, v) or atomic_min for a maximum or a minimum, and read the array "
                   "after the call", name);
        i = lw_find_local_in(L->S, name, L->pfor);
    } else {
        i = lw_find_local_in(L->S, name, -1);
    }
    if (i < 0) ERR(t, "internal error: no local for '%s'", name);
    return i;
}

/* a[i, j] = v: an IR_STORE of v converted to the element type. */
static void store_element(lw_state *L, tack_node *t, int p, tk_ir *v) {
    tk_type et = lw_dtype_type((tack_dtype)L->S->ptypes[p].dt);
    if (lw_known(v)) {
        if (v->ty.kind != TY_VALUE || (ty_is_scalar(et) && !ty_is_scalar(v->ty)) ||
            (!ty_is_scalar(et) && !ty_is_scalar(v->ty) && v->ty.dt != et.dt))
            ERR(t, "cannot store %s into an element of '%s' (%s)", TN(v->ty), L->S->pnames[p], TN(et));
        if (dt_is_half(L->S->ptypes[p].dt)) v = lw_hoist(L, lw_half_value(L, v, L->S->ptypes[p].dt)); /* rounded once (lower_local.c) */
        else v = lw_hoist(L, ty_is_bool(et) ? lw_truth(L, v, t) : lw_cast(L, v, et));
    }
    tk_ir *st = lw_mk(L, IR_STORE, ty_void(), t);
    st->param = p;
    ir_push(L->C, st, v);
    lw_indices(L, p, t->kids + 1, t->nkids - 1, st, t);
    lw_uses_half(L, L->S->ptypes[p].dt);
    lw_mark_written(L, p);
    lw_emit(L, st);
}

/* Which component of a local of type lt the subscript target t (v[k], q[k],
 * m[i, j]) names: returns k, and sets *j for a matrix.  A run-time index is
 * checked and wrapped (lw_component_index, lw_matrix_index), a matrix's per axis. */
static tk_ir *component_target(lw_state *L, tack_node *t, tk_type lt, tk_ir **j) {
    tk_ir *k;
    if (ty_is_xform(lt))
        ERR(t, "a %s is not indexed; assign its parts by name (t.p = v, t.q = q, t.p.x = s)", TN(lt));
    if ((ty_is_vector(lt) || ty_is_quat(lt)) && t->nkids == 2) {
        int len = ty_is_quat(lt) ? 4 : dt_rows((tack_dtype)lt.dt);
        k = lw_component_index(L, lw_index_value(L, t->kids[1]), lt, len, t);
    } else if (ty_is_matrix(lt)) {
        tack_node **ix = t->kids + 1;
        int ni = t->nkids - 1;
        if (ni == 1 && ix[0]->kind == TACK_N_TUPLE) {
            ni = ix[0]->nkids;
            ix = ix[0]->kids;
        }
        if (ni != 2) ERR(t, "a matrix's entry is set as m[i, j] = s, or its row as m[i] = v");
        k = lw_hoist(L, lw_matrix_index(L, ix[0], lt, 0));
        *j = lw_matrix_index(L, ix[1], lt, 1);
    } else {
        ERR(t, "cannot assign to an element of %s", TN(lt));
    }
    return k;
}

/* The text of the attribute chain n over the local `root` (t.p, t[...].x), into buf. */
static void attr_text(tack_node *n, const char *root, char *buf, size_t size) {
    if (n->kind == TACK_N_ATTRIBUTE && n->nkids == 1) {
        attr_text(n->kids[0], root, buf, size);
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, ".%s", n->name ? n->name : "");
    } else {
        snprintf(buf, size, "%s%s", root, n->kind == TACK_N_SUBSCRIPT ? "[...]" : "");
    }
}

/* The components [*first, *first + result) of a value of type lt that the
 * attribute target t names -- v.y of a vector, q.w of a quaternion, t.p (3)
 * and t.q (4) of a transform, a component of those (t.p.x, t.q.w) -- and, in
 * *pt, the type of that part.  The chain of t ends at the value (a local's
 * name, or a local array's element); anything else is a CompileError naming it. */
static int attr_slots(lw_state *L, tack_node *t, tk_type lt, const char *root, int *first, tk_type *pt) {
    tack_node *b = t->kids[0];
    tk_type bt = lt;
    int off = 0;
    char pre[192] = ""; /* the target's text before its last name: "t", "t.p" */
    attr_text(b, root, pre, sizeof pre);
    if (b->kind == TACK_N_ATTRIBUTE) { /* t.p.x: a component of a part */
        if (attr_slots(L, b, lt, root, &off, &bt) == 1)
            ERR(t, "cannot assign to '%s.%s': '%s' is a number", pre, t->name, pre);
    }
    if (ty_is_xform(bt)) {
        int p = !strcmp(t->name, "p"), q = !strcmp(t->name, "q");
        if (!p && !q) ERR(t, "%s has no part '%s' (its parts are p, the position, and q, the rotation)", TN(bt), t->name);
        tack_dtype part = dt_scalar((tack_dtype)bt.dt);
        *first = off + (p ? 0 : 3);
        *pt = p ? ty_value(dt_compose(part, 3, 1)) : ty_value(part == TACK_F64 ? TACK_QUATD : TACK_QUAT);
        return p ? 3 : 4;
    }
    int c = lw_comp_of_attr(t->name);
    int len = ty_is_quat(bt) ? 4 : ty_is_vector(bt) ? dt_rows((tack_dtype)bt.dt) : 0;
    if (!len)
        ERR(t, "cannot assign to '%s.%s': %s has no components by name (only vectors, quaternions and "
               "transforms do)", pre, t->name, TN(bt));
    if (c < 0 || c >= len) ERR(t, "%s has no component '%s'", TN(bt), t->name);
    *first = off + c;
    *pt = ty_value(dt_scalar((tack_dtype)bt.dt));
    return 1;
}

/* An IR_SETCOMP of component k (and column j of a matrix) of local loc to v. */
static void set_comp(lw_state *L, tack_node *t, int loc, tk_ir *k, tk_ir *j, tk_ir *v) {
    tk_ir *sc = lw_mk(L, IR_SETCOMP, ty_void(), t);
    sc->local = loc;
    ir_push(L->C, sc, k);
    if (j) ir_push(L->C, sc, j);
    ir_push(L->C, sc, v);
    lw_emit(L, sc);
}

/* m[i] = v on the matrix local loc of type lt: row i (checked and wrapped once) set
 * from the vector v of the row's type, evaluated once -- or a number, every entry of
 * the row, as NumPy's m[i] = s broadcasts it. */
static void store_row(lw_state *L, tack_node *t, int loc, tk_type lt, tk_ir *v) {
    int c = dt_cols((tack_dtype)lt.dt);
    tack_dtype sd = dt_scalar((tack_dtype)lt.dt), rd = dt_compose(sd, c, 1);
    tk_ir *i = lw_hoist(L, lw_matrix_index(L, t->kids[1], lt, 0));
    if (!lw_known(v)) return;
    if (v->ty.kind != TY_VALUE || (!ty_is_scalar(v->ty) && v->ty.dt != (int)rd) || ty_is_complex(v->ty))
        ERR(t, "cannot assign %s to a row of %s (a %s, or a number)", TN(v->ty), TN(lt), dt_name(rd));
    v = lw_hoist(L, ty_is_scalar(v->ty) ? lw_cast(L, v, ty_value(sd)) : v);
    for (int j = 0; j < c; j++) {
        tk_ir *x = v;
        if (!ty_is_scalar(v->ty)) {
            x = lw_mk(L, IR_COMP, ty_value(sd), t);
            ir_push(L->C, x, v);
            ir_push(L->C, x, ir_const_i(L->C, ty_value(TACK_I64), j, t->line));
        }
        set_comp(L, t, loc, i, ir_const_i(L->C, ty_value(TACK_I64), j, t->line), x);
    }
}

/* v.x = s ; q.w = s ; t.p = v ; t.p.x = s on the local loc of type lt (attr_slots
 * says which components): one IR_SETCOMP per component, a number converted to the
 * local's scalar type, a part (t.p, t.q) a value of its own type evaluated once. */
static void store_part(lw_state *L, tack_node *t, int loc, tk_type lt, const char *root, tk_ir *v) {
    int first = 0;
    tk_type pt;
    int count = attr_slots(L, t, lt, root, &first, &pt);
    if (count == 1) {
        if (lw_known(v) && !ty_is_scalar(v->ty)) ERR(t, "cannot assign %s to a component of %s", TN(v->ty), TN(lt));
        set_comp(L, t, loc, ir_const_i(L->C, ty_value(TACK_I64), first, t->line), NULL, lw_cast(L, v, pt));
        return;
    }
    if (!lw_known(v)) return;
    if (!ty_eq(v->ty, pt) && !(ty_is_vector(pt) && ty_is_vector(v->ty) && v->ty.dt == pt.dt)) {
        char text[192] = "";
        attr_text(t, root, text, sizeof text);
        ERR(t, "cannot assign %s to '%s' (%s)", TN(v->ty), text, TN(pt));
    }
    v = lw_hoist(L, v);
    for (int i = 0; i < count; i++)
        set_comp(L, t, loc, ir_const_i(L->C, ty_value(TACK_I64), first + i, t->line), NULL,
                 lw_component(L, v, ir_const_i(L->C, ty_value(TACK_I64), i, t->line), t));
}

/* t[i].x = s (t[i].p = v ...) on a local array of vectors, quaternions or
 * transforms, which is the thread's own: the element loaded into a temporary,
 * its part set there (store_part), and stored back at the same indices. */
static void store_element_part(lw_state *L, tack_node *t, tack_node *el, int loc, tk_ir *v) {
    tk_ir *ld = lw_local_part_load(L, el, loc);
    if (!lw_known(ld)) return;
    if (ld->ty.kind != TY_VALUE || ty_is_scalar(ld->ty) || ty_is_matrix(ld->ty))
        ERR(t, "cannot assign to attribute '%s' of an element of local array '%s' (%s)", t->name,
            el->kids[0]->name, TN(ld->ty));
    int tmp = lw_temp(L, ld->ty);
    lw_emit(L, lw_assign_ir(L, tmp, ld, t->line));
    store_part(L, t, tmp, ld->ty, el->kids[0]->name, v);
    lw_local_store_back(L, el, loc, ld, lw_local_ref(L, tmp, t->line));
}

static int own_element(lw_state *L, tack_node **idx, int nidx);

/* ------------------------------------- a component of an array parameter's element */
/* Where the target t writes a part of an array parameter's element -- a[i].x, a[i].p.y, a[i][k],
 * a[i, j][r, c] -- the parameter, and in *el the element's subscript (a[i]); else -1. */
static int param_part_target(lw_state *L, tack_node *t, tack_node **el) {
    tack_node *e = t;
    if (t->kind == TACK_N_ATTRIBUTE)
        while (e->kind == TACK_N_ATTRIBUTE && e->nkids == 1) e = e->kids[0];
    else if (t->kind == TACK_N_SUBSCRIPT && t->nkids >= 2)
        e = t->kids[0];
    if (e == t || e->kind != TACK_N_SUBSCRIPT || e->nkids < 2 || e->kids[0]->kind != TACK_N_NAME) return -1;
    int p = lw_array_param(L, e->kids[0]->name);
    if (p >= 0) *el = e;
    return p;
}

/* The components [*first, *first + result) of array p's element that t names, and their type *pt
 * (attr_slots for names, component_target for an index); a vector's index known only at run time
 * (checked and wrapped) comes back in *dyn, with one component. */
static int param_part_slots(lw_state *L, tack_node *t, int p, int *first, tk_type *pt, tk_ir **dyn) {
    tk_type et = lw_dtype_type((tack_dtype)L->S->ptypes[p].dt);
    const char *name = L->S->pnames[p];
    *dyn = NULL;
    if (ty_is_scalar(et))
        ERR(t, "cannot assign to a part of an element of '%s': its elements are %s numbers; index every axis "
               "(%s[i, j] = s)", name, TN(et), name);
    if (t->kind == TACK_N_ATTRIBUTE) return attr_slots(L, t, et, name, first, pt);
    tk_ir *j = NULL, *k = component_target(L, t, et, &j);
    *pt = ty_value(dt_scalar((tack_dtype)et.dt));
    *first = 0;
    if (j) *first = (int)(k->c.i * dt_cols((tack_dtype)et.dt) + j->c.i);
    else if (k->op == IR_CONST) *first = (int)k->c.i;
    else *dyn = lw_hoist(L, k);
    return 1;
}

/* The indices of element el of array p, checked (lw_indices) once, in the kids of a holder node that
 * is never emitted; `many`: each is read into a temporary, for the several writes that clone them. */
static tk_ir *part_indices(lw_state *L, int p, tack_node *el, int many) {
    tk_ir *ix = lw_mk(L, IR_BLOCK, ty_void(), el);
    lw_indices(L, p, el->kids + 1, el->nkids - 1, ix, el);
    for (int i = 0; many && i < ix->n; i++) ix->k[i]->k[0] = lw_hoist(L, ix->k[i]->k[0]);
    return ix;
}

/* Component c of element ix of array p, read (the element loaded, the component taken). */
static tk_ir *part_load(lw_state *L, int p, tk_ir *ix, int c, tack_node *t) {
    tack_dtype dt = (tack_dtype)L->S->ptypes[p].dt;
    tk_ir *ld = lw_mk(L, IR_LOAD, lw_dtype_type(dt), t);
    ld->param = p;
    for (int i = 0; i < ix->n; i++) ir_push(L->C, ld, ir_clone(L->C, ix->k[i]));
    tk_ir *cx = lw_mk(L, IR_COMP, ty_value(dt_scalar(dt)), t);
    ir_push(L->C, cx, ld);
    if (dt_cols(dt) > 1) {
        ir_push(L->C, cx, ir_const_i(L->C, ty_value(TACK_I64), c / dt_cols(dt), t->line));
        ir_push(L->C, cx, ir_const_i(L->C, ty_value(TACK_I64), c % dt_cols(dt), t->line));
    } else {
        ir_push(L->C, cx, ir_const_i(L->C, ty_value(TACK_I64), c, t->line));
    }
    return cx;
}

/* How a part is written: a store, the write of a read-modify-write (op= on the iteration's own
 * element, or outside a parallel loop), or an atomic add or subtract. */
enum { PART_STORE, PART_RMW, PART_ATOMIC };

/* The statement that writes v (of the component's type pt) into component c of element ix of array
 * p: an IR_STORE of that component alone, or an IR_ATOMIC of it, never a store of the element. */
static tk_ir *part_write(lw_state *L, int p, tk_ir *ix, int c, tk_type pt, tk_ir *v, int how, int op, tack_node *t) {
    tk_ir *w = lw_mk(L, how == PART_ATOMIC ? IR_ATOMIC : IR_STORE, how == PART_ATOMIC ? pt : ty_void(), t);
    w->param = p;
    w->comp = c + 1;
    w->sub = (uint8_t)(how == PART_ATOMIC ? op : how == PART_RMW ? ST_RMW : ST_PLAIN);
    ir_push(L->C, w, v);
    for (int i = 0; i < ix->n; i++) ir_push(L->C, w, ir_clone(L->C, ix->k[i]));
    if (how != PART_ATOMIC) return w;
    L->C->uses_atomic = 1;
    L->C->atomic_dts |= (uint64_t)1 << pt.dt;
    tk_ir *ev = lw_mk(L, IR_EVAL, ty_void(), t);
    ir_push(L->C, ev, w);
    return ev;
}

/* Component c's update: v (a number) stored, or combined with the component's value by the compound
 * operator n->op (as a number op= v is: the component's type and v's promoted, then converted back) or,
 * atomically, v converted to the component's type first and added to it there (as a[k] += v is). */
static void part_update(lw_state *L, tack_node *n, int p, tk_ir *ix, int c, tk_type pt, tk_ir *v, int how,
                        tack_node *t) {
    if (how == PART_ATOMIC) {
        if (lw_known(v) && ty_is_int(pt)) v = lw_pyint_narrow(L, v, pt, n);
        v = lw_known(v) ? lw_hoist(L, lw_cast(L, v, pt)) : v;
        lw_emit(L, part_write(L, p, ix, c, pt, v, how, n->op == TACK_OP_ADD ? A_ADD : A_SUB, t));
        return;
    }
    if (how == PART_RMW) v = lw_binop(L, n->op, part_load(L, p, ix, c, t), v, n);
    if (lw_known(v)) v = lw_cast(L, v, pt);
    lw_emit(L, part_write(L, p, ix, c, pt, v, how, 0, t));
}

/* a[i].x = s, a[i].p = v, a[i][k] = s, a[i, j][r, c] = s -- and with n an augmented assignment
 * (a[i].x += s), its update -- on an array parameter's element: a write of each component the target
 * names and of no other, so iterations writing other components of one element do not lose each
 * other's writes (the element is never read and written back).  Inside a parallel loop, += and -=
 * are atomic, as on a number's element; any other compound operator only on the iteration's own
 * element.  A vector index known at run time picks the component with a branch per component. */
static void store_param_part(lw_state *L, tack_node *n, tack_node *t, tack_node *el, int p, tk_ir *v) {
    int first = 0, how = n ? PART_RMW : PART_STORE;
    tk_type pt;
    tk_ir *dyn = NULL;
    int count = param_part_slots(L, t, p, &first, &pt, &dyn);
    tk_type et = lw_dtype_type((tack_dtype)L->S->ptypes[p].dt);
    if (n) {
        int par = lw_in_parallel(L) && !L->C->racy_rmw && !(p < 64 && (L->S->plarr >> p & 1));
        if (par && (n->op == TACK_OP_ADD || n->op == TACK_OP_SUB)) how = PART_ATOMIC;
        else if (par && !own_element(L, el->kids + 1, el->nkids - 1))
            ERR(n, "'%s[...] component %s= ...' in a parallel loop%s%s%s: iterations may update the same element "
                   "at once and lose updates, and only += and -= are atomic; index the element by the loop "
                   "variable, or combine into a local and store it once", L->S->pnames[p], lw_op_symbol(n->op),
                L->pfor >= 0 ? "" : " (in '", L->pfor >= 0 ? "" : L->F->name,
                L->pfor >= 0 ? "" : "', called from one)");
    }
    if (count == 1 && lw_known(v) && !ty_is_scalar(v->ty))
        ERR(t, "cannot assign %s to a component of %s", TN(v->ty), TN(et));
    if (count > 1) {
        if (!lw_known(v)) return;
        if (!ty_eq(v->ty, pt) && !(ty_is_vector(pt) && ty_is_vector(v->ty) && v->ty.dt == pt.dt)) {
            char text[192] = "";
            attr_text(t, L->S->pnames[p], text, sizeof text);
            ERR(t, "cannot assign %s to '%s' (%s)", TN(v->ty), text, TN(pt));
        }
    }
    if (lw_known(v)) v = lw_hoist(L, v);
    tk_ir *ix = part_indices(L, p, el, count > 1 || dyn);
    lw_mark_written(L, p);
    tk_type ct = ty_value(dt_scalar((tack_dtype)et.dt));
    if (!dyn) {
        for (int i = 0; i < count; i++) {
            tk_ir *vi = count == 1 ? v : lw_component(L, v, ir_const_i(L->C, ty_value(TACK_I64), i, t->line), t);
            part_update(L, n, p, ix, first + i, ct, vi, how, t);
        }
        return;
    }
    int len = ty_is_quat(et) ? 4 : dt_rows((tack_dtype)et.dt);
    tk_ir *rest = NULL, *saved = L->blk; /* if k == 0: ... else if k == 1: ... */
    for (int c = len - 1; c >= 0; c--) {
        tk_ir *then = lw_mk(L, IR_BLOCK, ty_void(), t), *els = lw_mk(L, IR_BLOCK, ty_void(), t);
        L->blk = then;
        part_update(L, n, p, ix, c, ct, v, how, t);
        L->blk = saved;
        if (rest) ir_push(L->C, els, rest);
        tk_ir *eq = lw_bin(L, B_EQ, ty_value(TACK_BOOL), dyn, ir_const_i(L->C, ty_value(TACK_I64), c, t->line),
                           t->line);
        eq->aux_ty = ty_value(TACK_I64);
        tk_ir *iff = lw_mk(L, IR_IF, ty_void(), t);
        ir_push(L->C, iff, eq);
        ir_push(L->C, iff, then);
        ir_push(L->C, iff, els);
        rest = iff;
    }
    lw_emit(L, rest);
}

/* t[i][k] = s (t[i][r, c] = s) on a local array of vectors, quaternions or matrices, the thread's
 * own: as t[i].x = s, the element loaded into a temporary, the component set, the element stored back. */
static void store_local_elem_comp(lw_state *L, tack_node *t, tack_node *el, int loc, tk_ir *v) {
    tk_ir *ld = lw_local_part_load(L, el, loc);
    if (!lw_known(ld)) return;
    if (ld->ty.kind != TY_VALUE || ty_is_scalar(ld->ty))
        ERR(t, "cannot assign to a part of an element of local array '%s': its elements are %s numbers; index "
               "every axis (%s[i, j] = s)", el->kids[0]->name, TN(ld->ty), el->kids[0]->name);
    tk_ir *j = NULL, *k = component_target(L, t, ld->ty, &j);
    if (lw_known(v) && !ty_is_scalar(v->ty)) ERR(t, "cannot assign %s to a component of %s", TN(v->ty), TN(ld->ty));
    int tmp = lw_temp(L, ld->ty);
    lw_emit(L, lw_assign_ir(L, tmp, ld, t->line));
    set_comp(L, t, tmp, k, j, lw_cast(L, v, ty_value(dt_scalar((tack_dtype)ld->ty.dt))));
    lw_local_store_back(L, el, loc, ld, lw_local_ref(L, tmp, t->line));
}

/* v.x = s ; q.w = s ; t.p = v ; t.p.x = s ; v[k] = s ; m[i, j] = s on the
 * vector, quaternion, transform or matrix local `base` (store_part for the
 * names, component_target for the indices); t[i].x = s on a local array's
 * element.  An array's attribute is refused (an array parameter's element's
 * components never come here: store_param_part). */
static void store_component(lw_state *L, tack_node *t, tack_node *base, tk_ir *v) {
    tack_node *end = t; /* where an attribute chain ends: base, or base[...] */
    while (t->kind == TACK_N_ATTRIBUTE && end->kind == TACK_N_ATTRIBUTE) end = end->kids[0];
    if (lw_array_param(L, base->name) >= 0 || lw_local_array(L, base->name) >= 0) {
        if (t->kind == TACK_N_ATTRIBUTE && t->kids[0] == base)
            ERR(t, "cannot assign to '%s.%s': an array's attributes are read-only in kernels", base->name, t->name);
        if (end->kind == TACK_N_SUBSCRIPT && lw_local_array(L, base->name) >= 0) {
            store_element_part(L, t, end, lw_local_array(L, base->name), v);
            return;
        }
        ERR(t, "cannot assign to this part of '%s'; assign an element's component (%s[i].x = s) or a whole "
               "element", base->name, base->name);
    }
    if (t->kind == TACK_N_ATTRIBUTE && end != base)
        ERR(t, "cannot assign to attribute '%s' of a component of '%s'; assign the component, or copy the value "
               "into a local, set the attribute and assign it back", t->name, base->name);
    int loc = lw_lookup(L, base->name);
    if (loc < 0) ERR(base, "name '%s' is not defined", base->name);
    loc = lw_target_local(L, base);
    tk_type lt = L->S->locals[loc].ty;
    if (lt.kind == TY_UNKNOWN) {
        if (!L->infer) ERR(t, "local variable '%s' is used before it is assigned", base->name);
        return;
    }
    lw_unbound_use(L, loc, base);
    if (t->kind == TACK_N_ATTRIBUTE) {
        store_part(L, t, loc, lt, base->name, v);
        return;
    }
    if (ty_is_matrix(lt) && t->nkids == 2 && t->kids[1]->kind != TACK_N_TUPLE) { /* m[i] = v: row i */
        store_row(L, t, loc, lt, v);
        return;
    }
    tk_ir *j = NULL;
    tk_ir *k = component_target(L, t, lt, &j);
    tk_type ct = ty_value(dt_scalar((tack_dtype)lt.dt));
    if (lw_known(v) && !ty_is_scalar(v->ty)) ERR(t, "cannot assign %s to a component of %s", TN(v->ty), TN(lt));
    set_comp(L, t, loc, k, j, lw_cast(L, v, ct));
}

static void store_to(lw_state *L, tack_node *t, tk_ir *v) {
    /* a[i, j] = v ; v.x = s ; v[k] = s ; t.p.x = s ; a[i].x = s ; a[i][k] = s */
    tack_node *el = NULL;
    int pp = param_part_target(L, t, &el);
    if (pp >= 0) {
        store_param_part(L, NULL, t, el, pp, v);
        return;
    }
    if (t->kind == TACK_N_SUBSCRIPT && t->nkids >= 2 && t->kids[0]->kind == TACK_N_SUBSCRIPT &&
        t->kids[0]->nkids >= 2 && t->kids[0]->kids[0]->kind == TACK_N_NAME &&
        lw_local_array(L, t->kids[0]->kids[0]->name) >= 0) {
        store_local_elem_comp(L, t, t->kids[0], lw_local_array(L, t->kids[0]->kids[0]->name), v);
        return;
    }
    if (t->kind == TACK_N_SUBSCRIPT && t->nkids >= 2 && t->kids[0]->kind == TACK_N_NAME &&
        lw_local_array(L, t->kids[0]->name) >= 0) {
        lw_local_store(L, t, lw_local_array(L, t->kids[0]->name), v);
        return;
    }
    if (t->kind == TACK_N_SUBSCRIPT && t->nkids >= 2 && t->kids[0]->kind == TACK_N_NAME &&
        lw_array_param(L, t->kids[0]->name) >= 0) {
        store_element(L, t, lw_array_param(L, t->kids[0]->name), v);
        return;
    }
    tack_node *base = t->kids ? t->kids[0] : NULL;
    while (t->kind == TACK_N_ATTRIBUTE && base && base->kind == TACK_N_ATTRIBUTE && base->kids) base = base->kids[0];
    if (t->kind == TACK_N_ATTRIBUTE && base && base->kind == TACK_N_SUBSCRIPT && base->kids && base->kids[0]->kind == TACK_N_NAME)
        base = base->kids[0]; /* a[i].x: refused by store_component */
    if ((t->kind == TACK_N_ATTRIBUTE || t->kind == TACK_N_SUBSCRIPT) && base && base->kind == TACK_N_NAME) {
        store_component(L, t, base, v);
        return;
    }
    ERR(t, "unsupported assignment target");
}

/* Field k of a tuple a function returned (an IR_COMP of the tuple local). */
static tk_ir *tuple_field(lw_state *L, tk_ir *v, int k, tack_node *n) {
    tk_type ft;
    if (v->ty.kind == TY_MULTI) { /* a decomposition's (lower_linalg.c) */
        ft = ty_multi_field(v->ty, k);
    } else {
        tk_spec *F = L->C->specs[ty_tuple_spec(v->ty)];
        ft = k < F->nret ? F->rets[k] : ty_unknown();
    }
    tk_ir *c = lw_mk(L, IR_COMP, ft, n);
    ir_push(L->C, c, v);
    ir_push(L->C, c, ir_const_i(L->C, ty_value(TACK_I64), k, n->line));
    return c;
}

static void assign_target(lw_state *L, tack_node *t, tk_ir *v) {
    if (t->kind == TACK_N_NAME) {
        lw_assign_local(L, lw_target_local(L, t), v, t);
        return;
    }
    if (t->kind == TACK_N_TUPLE) {
        if (!lw_known(v)) {
            for (int i = 0; i < t->nkids; i++) assign_target(L, t->kids[i], v);
            return;
        }
        if (v->ty.kind == TY_TUPLE || v->ty.kind == TY_MULTI) {
            int nv = v->ty.kind == TY_MULTI ? ty_multi_count(v->ty) : L->C->specs[ty_tuple_spec(v->ty)]->nret;
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

static void lower_assign(lw_state *L, tack_node *n) {
    if (n->nkids != 2) ERR(n, "malformed assignment");
    tack_node *t = n->kids[0], *vn = n->kids[1];
    if (lw_is_array_maker(vn)) { /* x = np.zeros(...): lower_local.c */
        lw_create_array(L, t, vn);
        return;
    }
    if (vn->kind == TACK_N_CALL && vn->ival < 0 && vn->name && t->kind == TACK_N_NAME) { /* r = tack.block_sum(v) */
        const tk_intrinsic *in = tk_intrinsic_find(vn->name);
        if (in && in->kind == TK_IK_BLOCKOP) {
            lw_block_collective(L, t, vn, in->sub);
            return;
        }
    }
    if (t->kind == TACK_N_TUPLE && vn->kind == TACK_N_ATTRIBUTE && vn->name && !strcmp(vn->name, "shape") &&
        vn->nkids == 1 && vn->kids[0]->kind == TACK_N_NAME && lw_local_array(L, vn->kids[0]->name) >= 0) {
        tk_local l = L->S->locals[lw_local_array(L, vn->kids[0]->name)]; /* n, m = x.shape: constants (a copy:
                                                                          * assignments may add locals) */
        if (l.ty.ndim != t->nkids)
            ERR(n, "cannot unpack the shape of the %d-D local array '%s' into %d names", l.ty.ndim, l.name, t->nkids);
        for (int i = 0; i < t->nkids; i++) assign_target(L, t->kids[i], ir_const_i(L->C, ty_weak(TACK_I64), l.ashape[i], n->line));
        return;
    }
    int sp = t->kind == TACK_N_TUPLE ? lw_shape_param(L, vn) : -1;
    if (sp >= 0) { /* n, m = a.shape: one extent per name, as many as the array has */
        int nd = L->S->ptypes[sp].ndim;
        if (nd != t->nkids) ERR(n, "cannot unpack the shape of the %d-D array '%s' into %d names", nd, vn->kids[0]->name, t->nkids);
        for (int i = 0; i < nd; i++) assign_target(L, t->kids[i], lw_shape_of(L, sp, i, vn));
        return;
    }
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

/* Whether a[idx...] is the current iteration's own element: each variable
 * of the parallel loop, unassigned in its body, is one of the indices, so
 * no two iterations name the same element.  (range() with a negative start
 * could still meet a wrapped index; such loops are not worth a check.) */
static int own_element(lw_state *L, tack_node **idx, int nidx) {
    if (L->npfor_vars == 0) return 0;
    for (int d = 0; d < L->npfor_vars; d++) {
        int v = L->pfor_vars[d], found = 0;
        if (v < 0) return 0;
        for (int i = 0; i < nidx; i++)
            if (idx[i]->kind == TACK_N_NAME && lw_lookup(L, idx[i]->name) == v) found = 1;
        if (!found) return 0;
    }
    return 1;
}

/* a[i] op= v on an array element: an atomic add or subtract inside a parallel
 * loop (a reduction into one cell from many iterations), else a load and a
 * store that share the indices, evaluated once -- on the iteration's own
 * element only, inside a parallel loop. */
static void augassign_element(lw_state *L, tack_node *n, int p) {
    tack_node *t = n->kids[0];
    tk_type et = lw_dtype_type((tack_dtype)L->S->ptypes[p].dt);
    /* a caller's local array (tk_spec.plarr) is the thread's own: no atomic, no rule */
    int par = lw_in_parallel(L) && !L->C->racy_rmw && !(p < 64 && (L->S->plarr >> p & 1));
    if (par && (n->op == TACK_OP_ADD || n->op == TACK_OP_SUB) && (ty_is_vector(et) || ty_is_matrix(et))) {
        /* a vector or matrix cell: an atomic per component (lw_atomic converts v as `+` would) */
        lw_atomic(L, n->op == TACK_OP_ADD ? A_ADD : A_SUB, p, t->kids + 1, t->nkids - 1, lw_expr(L, n->kids[1]),
                  NULL, n, 0);
        return;
    }
    if (par && (n->op == TACK_OP_ADD || n->op == TACK_OP_SUB) && ty_is_scalar(et) &&
        !ty_is_bool(et) && !dt_is_half(L->S->ptypes[p].dt)) {
        tk_ir *v = lw_expr(L, n->kids[1]);
        if (lw_known(v) && ty_is_scalar(v->ty)) {
            if (ty_is_int(et)) v = lw_pyint_narrow(L, v, et, n); /* added in the element's type, as NumPy's a[k] += v */
            lw_atomic(L, n->op == TACK_OP_ADD ? A_ADD : A_SUB, p, t->kids + 1, t->nkids - 1, v, NULL, n, 0);
            return;
        }
        if (lw_known(v)) ERR(n, "cannot add %s to an element of '%s' (%s)", TN(v->ty), L->S->pnames[p], TN(et));
        return;
    }
    if (par && !own_element(L, t->kids + 1, t->nkids - 1)) {
        const char *why = n->op == TACK_OP_ADD || n->op == TACK_OP_SUB
                              ? (L->S->ptypes[p].dt == TACK_F16 ? "+= and -= are not atomic on float16 elements"
                                 : L->S->ptypes[p].dt == TACK_BF16 ? "+= and -= are not atomic on bfloat16 elements"
                                 : ty_is_bool(et)               ? "+= and -= are not atomic on bool elements"
                                                                : "+= and -= are not atomic on quaternion and transform elements")
                              : "only += and -= are atomic";
        ERR(n, "'%s[...] %s= ...' in a parallel loop%s%s%s: iterations may update the same element at once and "
               "lose updates, and %s; index the element by the loop variable, or combine into a local in a "
               "serial loop (or with += / -= on a numeric array) and store it once",
            L->S->pnames[p], lw_op_symbol(n->op), L->pfor >= 0 ? "" : " (in '", L->pfor >= 0 ? "" : L->F->name,
            L->pfor >= 0 ? "" : "', called from one)", why);
    }
    /* plain read-modify-write with the indices evaluated once */
    tk_ir *ld = lw_mk(L, IR_LOAD, et, t);
    ld->param = p;
    lw_indices(L, p, t->kids + 1, t->nkids - 1, ld, t);
    tk_ir *v = lw_expr(L, n->kids[1]);
    tk_ir *r = lw_binop(L, n->op, ld, v, n);
    if (lw_known(r)) {
        if (!ty_is_scalar(et) && (r->ty.dt != et.dt)) ERR(n, "cannot store %s into an element of '%s' (%s)", TN(r->ty), L->S->pnames[p], TN(et));
        r = ty_is_bool(et) ? lw_truth(L, r, n) : dt_is_half(L->S->ptypes[p].dt) ? lw_half_value(L, r, L->S->ptypes[p].dt) : lw_cast(L, r, et);
    }
    tk_ir *st = lw_mk(L, IR_STORE, ty_void(), t);
    st->param = p;
    st->sub = ST_RMW;
    ir_push(L->C, st, r);
    for (int i = 0; i < ld->n; i++) ir_push(L->C, st, ld->k[i]);
    lw_uses_half(L, L->S->ptypes[p].dt);
    lw_mark_written(L, p);
    lw_emit(L, st);
}

static void lower_augassign(lw_state *L, tack_node *n) {
    if (n->nkids != 2) ERR(n, "malformed augmented assignment");
    tack_node *t = n->kids[0];
    if (t->kind == TACK_N_NAME) {
        int loc = lw_lookup(L, t->name);
        if (loc < 0) ERR(t, "name '%s' is not defined", t->name);
        lw_target_local(L, t);
        tk_ir *cur = lw_expr(L, t);
        tk_ir *v = lw_expr(L, n->kids[1]);
        lw_assign_local(L, lw_target_local(L, t), lw_binop(L, n->op, cur, v, n), n);
        return;
    }
    if (t->kind == TACK_N_SUBSCRIPT && t->nkids >= 2 && t->kids[0]->kind == TACK_N_NAME && lw_local_array(L, t->kids[0]->name) >= 0) {
        lw_local_augassign(L, n, lw_local_array(L, t->kids[0]->name));
        return;
    }
    if (t->kind == TACK_N_SUBSCRIPT && t->nkids >= 2 && t->kids[0]->kind == TACK_N_NAME && lw_array_param(L, t->kids[0]->name) >= 0) {
        augassign_element(L, n, lw_array_param(L, t->kids[0]->name));
        return;
    }
    tack_node *el = NULL;
    int pp = param_part_target(L, t, &el);
    if (pp >= 0) { /* a[i].x += s: that component's update alone (atomic in a parallel loop) */
        store_param_part(L, n, t, el, pp, lw_expr(L, n->kids[1]));
        return;
    }
    /* v.x += s */
    tk_ir *cur = lw_expr(L, t);
    tk_ir *v = lw_expr(L, n->kids[1]);
    store_to(L, t, lw_binop(L, n->op, cur, v, n));
}

/* -------------------------------------------------------- returns */
/* A function's return type, or a field of its tuple (pos: 1 + the field, else
 * 0), widened to take the value v: the first value fixes it, later ones
 * promote it (or are an error naming both types). */
static void widen_return(lw_state *L, tk_type *slot, tk_ir *v, tack_node *n, int pos) {
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
static void return_tuple(lw_state *L, tack_node *tn, tk_ir *r) {
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

static void lower_return(lw_state *L, tack_node *n) {
    if (L->is_kernel) {
        if (n->nkids && n->kids[0] && n->kids[0]->kind != TACK_N_CONST_BOOL)
            ERR(n, "a kernel cannot return a value: write results into an array argument (out[0] = s, "
                   "or out[0] += x[i] for a sum over a parallel loop) and read it after the call; "
                   "@tack.func functions return values");
        if (L->pfor >= 0) ERR(n, "return is not supported inside a parallel loop (use continue)");
        lw_emit(L, lw_mk(L, IR_RETURN, ty_void(), n));
        lw_da_jump(L);
        return;
    }
    tk_ir *r = lw_mk(L, IR_RETURN, ty_void(), n);
    if (n->nkids && n->kids[0] && n->kids[0]->kind == TACK_N_TUPLE) {
        return_tuple(L, n->kids[0], r);
    } else if (n->nkids && n->kids[0]) {
        tk_ir *v = lw_expr(L, n->kids[0]);
        if (lw_known(v)) {
            if (v->ty.kind == TY_TUPLE || v->ty.kind == TY_MULTI)
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
    lw_da_jump(L);
}

/* ------------------------------------------------------- statements */
static void lower_if(lw_state *L, tack_node *n) {
    if (n->nkids < 2) ERR(n, "malformed if");
    if (lw_running_extreme(L, n)) return; /* if v > a[0]: a[0] = v -- an atomic max (lower_reduce.c) */
    tk_ir *c = lw_truth(L, lw_expr(L, n->kids[0]), n);
    tk_ir *iff = lw_mk(L, IR_IF, ty_void(), n);
    ir_push(L->C, iff, c);
    tk_ir *a = lw_mk(L, IR_BLOCK, ty_void(), n), *b = lw_mk(L, IR_BLOCK, ty_void(), n);
    L->depth++;
    unsigned char *before = lw_da_save(L);
    lw_block_into(L, n->kids[1], a);
    unsigned char *after_then = lw_da_save(L);
    lw_da_restore(L, before);
    if (n->nkids > 2) lw_block_into(L, n->kids[2], b);
    lw_da_meet(L, after_then);
    L->depth--;
    ir_push(L->C, iff, a);
    ir_push(L->C, iff, b);
    lw_emit(L, iff);
}

/* break and continue: in serial loops; continue also ends an iteration of a
 * parallel loop directly. */
static void lower_jump(lw_state *L, tack_node *n) {
    if (L->loops == 0) {
        if (L->pfor >= 0 && n->kind == TACK_N_CONTINUE) {
            lw_emit(L, lw_mk(L, IR_CONTINUE, ty_void(), n));
            lw_da_jump(L);
            return;
        }
        if (L->pfor >= 0) ERR(n, "break is not supported directly in a parallel loop");
        ERR(n, "'%s' outside loop", n->kind == TACK_N_BREAK ? "break" : "continue");
    }
    lw_emit(L, lw_mk(L, n->kind == TACK_N_BREAK ? IR_BREAK : IR_CONTINUE, ty_void(), n));
    lw_da_jump(L);
}

/* assert c, "message": an IR_CHECK, dropped when checks are off. */
static void lower_assert(lw_state *L, tack_node *n) {
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
}

/* An expression statement: a call for its effect (L->discard tells
 * lower_call.c its value is unused), or a docstring. */
static void lower_exprstmt(lw_state *L, tack_node *n) {
    if (n->nkids < 1 || !n->kids[0]) return;
    tack_node *e = n->kids[0];
    if (e->kind == TACK_N_CONST_STR) return; /* docstring */
    L->discard = e->kind == TACK_N_CALL;
    lw_expr(L, e);
    L->discard = 0;
}

void lw_stmt(lw_state *L, tack_node *n) {
    if (!n) return;
    switch (n->kind) {
    case TACK_N_BLOCK: {
        for (int i = 0; i < n->nkids; i++) lw_stmt(L, n->kids[i]);
        return;
    }
    case TACK_N_ASSIGN: lower_assign(L, n); return;
    case TACK_N_ANNASSIGN:
        if (n->nkids < 2) ERR(n, "malformed annotated assignment");
        if (n->nkids >= 3 && n->kids[2]) assign_target(L, n->kids[0], lw_expr(L, n->kids[2]));
        return;
    case TACK_N_AUGASSIGN: lower_augassign(L, n); return;
    case TACK_N_IF: lower_if(L, n); return;
    case TACK_N_FOR: lw_for(L, n); return;
    case TACK_N_WHILE: lw_while(L, n); return;
    case TACK_N_BREAK:
    case TACK_N_CONTINUE: lower_jump(L, n); return;
    case TACK_N_PASS: return;
    case TACK_N_RETURN: lower_return(L, n); return;
    case TACK_N_ASSERT: lower_assert(L, n); return;
    case TACK_N_EXPR: lower_exprstmt(L, n); return;
    default: ERR(n, "unsupported statement");
    }
}

/* Lower a statement or a block of them into blk (blk is current meanwhile). */
void lw_block_into(lw_state *L, tack_node *n, tk_ir *blk) {
    tk_ir *saved = L->blk;
    L->blk = blk;
    if (n && n->kind == TACK_N_BLOCK) {
        for (int i = 0; i < n->nkids; i++) lw_stmt(L, n->kids[i]);
    } else {
        lw_stmt(L, n);
    }
    L->blk = saved;
}
