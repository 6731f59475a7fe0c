/*
 * quat.c -- quaternions and rigid transforms in the kernel language: their
 * lowering (their emission and the prelude's helpers are emit_quat.c's).
 *
 * quat / quatd are quaternions (x, y, z, w) of f32 / f64, transform /
 * transformd rigid transforms: a position p (x, y, z) and a rotation q (a
 * quat), stored p then q.  The runtime stores them as vectors of 4 and 7
 * floats (NumPy's (n, 4) and (n, 7) arrays) and marks them by their dtype's
 * form (runtime/dtype.c), so nothing else in the compiler takes them for a
 * vec4: ty_is_vector is false for them, and what they mean is here.
 *
 *   values     tack.quat(x, y, z, w), tack.transform(p, q) and
 *              tack.quat_identity() are IR_VEC; q.x .. q.w and q[k] are
 *              IR_COMP; t.p and t.q are IR_VECs of t's components.  A quat
 *              converts only to the quat of the other precision (a
 *              transform likewise): a vec4, a number or anything else is a
 *              CompileError naming the types.
 *
 *   algebra    a quaternion's: q + r, q - r, -q (IR_BIN / IR_UN, each
 *              component), q * r the Hamilton product (IR_BIN B_MUL, whose
 *              helper is the product, not a componentwise one), q * s, s * q
 *              and q / s with a real number s (IR_MATH M_QSCALE / M_QDIVS).
 *              A transform has one operator: t * u, the composition
 *              (t * u applied to a point is t applied to u applied to it).
 *              Everything else -- q + 1.0, q * v with a vector, q / r, @,
 *              ==, <, t * v -- is refused with the two types named and what
 *              to write instead: a quat is not a vec4, and there is no
 *              silent componentwise product.
 *
 *   functions  the TK_IK_QUAT rows of intrinsics.def (quat_rotate,
 *              quat_slerp, transform_point, ...) are IR_MATH of an M_Q* /
 *              M_X* operation whose aux_ty is the quat or transform type;
 *              tack.dot, tack.length and tack.normalize also take quats
 *              (lower_call.c).  Operands of two precisions meet in the wider
 *              one, as vec3 + vec3d would not: quat_rotate(quatd, vec3) is a
 *              vec3d, since tack.vec3(...) in an f64 kernel is common.
 */
#include <string.h>

#include "compiler/lower/lower.h"

static int is_q(tk_type t) { return ty_is_quat(t) || ty_is_xform(t); }

static tack_dtype scal(tk_type t) { return dt_scalar((tack_dtype)t.dt); }

/* The quat (form TACK_FORM_QUAT) or transform of part f32 / f64. */
static tk_type qtype(int form, tack_dtype part) {
    if (form == TACK_FORM_QUAT) return ty_value(part == TACK_F64 ? TACK_QUATD : TACK_QUAT);
    return ty_value(part == TACK_F64 ? TACK_TRANSFORMD : TACK_TRANSFORM);
}

static void uses(lw_state *L) {
    L->C->uses_quat = 1;
    L->C->uses_vec = 1; /* the helpers take and give vec3 and mat33 */
}

/* lw_cast with a quat or transform side: only to the same form in the other
 * precision, component by component; anything else is refused here. */
tk_ir *lw_quat_cast(lw_state *L, tk_ir *e, tk_type to) {
    if (is_q(to) && is_q(e->ty) && dt_form((tack_dtype)to.dt) == dt_form((tack_dtype)e->ty.dt)) {
        int n = dt_rows((tack_dtype)to.dt);
        tk_ir *src = lw_hoist(L, e), *v = ir_new(L->C, IR_VEC, to, e->line);
        for (int i = 0; i < n; i++) {
            tk_ir *c = ir_new(L->C, IR_COMP, ty_value(scal(e->ty)), e->line);
            ir_push(L->C, c, src);
            ir_push(L->C, c, ir_const_i(L->C, ty_value(TACK_I64), i, e->line));
            ir_push(L->C, v, lw_cast(L, c, ty_value(scal(to))));
        }
        uses(L);
        return v;
    }
    const char *what = ty_is_quat(to) ? "build one with tack.quat(x, y, z, w)"
                       : ty_is_xform(to) ? "build one with tack.transform(p, q)"
                       : ty_is_quat(e->ty) ? "read its components (q.x, q.y, q.z, q.w)"
                       : "read its parts (t.p, t.q)";
    tk_error(L->C, L->fidx, e->line, 0, "cannot convert %s to %s: a %s is not a vector of numbers; %s",
             ty_name(&L->C->arena, e->ty), ty_name(&L->C->arena, to),
             is_q(to) ? ty_name(&L->C->arena, to) : ty_name(&L->C->arena, e->ty), what);
    return e;
}

/* Two values of one form brought to the wider precision. */
static void same_precision(lw_state *L, tk_ir **a, tk_ir **b) {
    if (scal((*a)->ty) == scal((*b)->ty)) return;
    tack_dtype part = TACK_F64;
    tk_ir **narrow = scal((*a)->ty) == TACK_F64 ? b : a;
    tk_type t = is_q((*narrow)->ty) ? qtype(dt_form((tack_dtype)(*narrow)->ty.dt), part)
                                    : ty_value(dt_compose(part, dt_rows((tack_dtype)(*narrow)->ty.dt),
                                                          dt_cols((tack_dtype)(*narrow)->ty.dt)));
    *narrow = lw_cast(L, *narrow, t);
}

static tk_ir *math(lw_state *L, int m, tk_type rt, tk_type aux, tk_ir **a, int na, tack_node *n) {
    tk_ir *e = lw_mk(L, IR_MATH, rt, n);
    e->sub = (uint8_t)m;
    e->aux_ty = aux;
    for (int i = 0; i < na; i++) ir_push(L->C, e, a[i]);
    uses(L);
    return e;
}

static const char *algebra_hint(tack_op op, tk_ir *x, tk_ir *y) {
    int xq = ty_is_quat(x->ty), yq = ty_is_quat(y->ty), xt = ty_is_xform(x->ty), yt = ty_is_xform(y->ty);
    int xv = ty_is_vector(x->ty) || ty_is_vector(y->ty);
    if (op == TACK_OP_MUL && (xq || yq) && xv) return "rotate a vector with tack.quat_rotate(q, v)";
    if (op == TACK_OP_MUL && (xt || yt) && xv)
        return "apply a transform with tack.transform_point(t, p) or tack.transform_vector(t, v)";
    if (op == TACK_OP_DIV && xq && yq) return "q / r is ambiguous for quaternions: write q * tack.quat_inverse(r)";
    if ((xq && yq) || (xt && yt)) return xt ? "a transform has only * (composition)"
                                            : "quaternions have + - * (the Hamilton product) and * / by a number";
    if (xq || yq) return "quaternion algebra adds and subtracts only quaternions, and multiplies or divides them "
                         "by real numbers; a quat is not a vec4";
    return "a transform has only * (composition with another transform of its precision)";
}

/* x op y with a quat or transform side (lw_binop). */
tk_ir *lw_quat_binop(lw_state *L, tack_op op, tk_ir *x, tk_ir *y, tack_node *n) {
    int xq = is_q(x->ty), yq = is_q(y->ty);
    int form = dt_form((tack_dtype)(xq ? x->ty.dt : y->ty.dt));
    if (xq && yq && dt_form((tack_dtype)x->ty.dt) == dt_form((tack_dtype)y->ty.dt)) {
        int b = op == TACK_OP_MUL ? B_MUL : form == TACK_FORM_QUAT && op == TACK_OP_ADD ? B_ADD
              : form == TACK_FORM_QUAT && op == TACK_OP_SUB ? B_SUB : -1;
        if (b >= 0) {
            same_precision(L, &x, &y);
            uses(L);
            return lw_bin(L, b, x->ty, x, y, n->line);
        }
    } else if (form == TACK_FORM_QUAT && (xq ? ty_is_scalar(y->ty) : ty_is_scalar(x->ty)) &&
               (xq ? !ty_is_complex(y->ty) : !ty_is_complex(x->ty)) &&
               (op == TACK_OP_MUL || (op == TACK_OP_DIV && xq))) {
        tk_ir *q = xq ? x : y, *s = xq ? y : x;
        tk_ir *a[2] = {q, lw_cast(L, s, ty_value(scal(q->ty)))};
        return math(L, op == TACK_OP_MUL ? M_QSCALE : M_QDIVS, q->ty, q->ty, a, 2, n);
    }
    ERR(n, "unsupported operand types for %s: %s and %s (%s)", lw_op_symbol(op), TN(x->ty), TN(y->ty),
        algebra_hint(op, x, y));
}

/* Comparisons of a quat or transform: none (lower_expr.c's compare). */
tk_ir *lw_quat_compare(lw_state *L, tack_op op, tk_ir *x, tk_ir *y, tack_node *n) {
    ERR(n, "'%s' is not supported between %s and %s: quaternions and transforms are not compared in kernels (q and "
           "-q are one rotation); compare components (q.x == r.x) or tack.dot(q, r)",
        lw_op_symbol(op), TN(x->ty), TN(y->ty));
}

/* -q; -t is refused. */
tk_ir *lw_quat_neg(lw_state *L, tk_ir *x, tack_node *n) {
    if (!ty_is_quat(x->ty))
        ERR(n, "bad operand type for unary -: %s (a transform has only * and tack.transform_inverse(t))", TN(x->ty));
    uses(L);
    tk_ir *u = lw_mk(L, IR_UN, x->ty, n);
    u->sub = U_NEG;
    return lw_kid(L, u, x);
}

static tk_ir *comp(lw_state *L, tk_ir *v, int k, int line) {
    tk_ir *c = ir_new(L->C, IR_COMP, ty_value(scal(v->ty)), line);
    ir_push(L->C, c, v);
    ir_push(L->C, c, ir_const_i(L->C, ty_value(TACK_I64), k, line));
    return c;
}

/* v.name of a quat (x y z w) or transform (p q); NULL when v is neither. */
tk_ir *lw_quat_attr(lw_state *L, tk_ir *v, const char *name, tack_node *n) {
    if (!is_q(v->ty)) return NULL;
    if (ty_is_quat(v->ty)) {
        int c = lw_comp_of_attr(name);
        if (c < 0) ERR(n, "%s has no attribute '%s' (its components are x, y, z, w)", TN(v->ty), name);
        return lw_component(L, lw_hoist(L, v), ir_const_i(L->C, ty_value(TACK_I64), c, n->line), n);
    }
    int p = !strcmp(name, "p"), q = !strcmp(name, "q");
    if (!p && !q) ERR(n, "%s has no attribute '%s' (its parts are p, the position, and q, the rotation)", TN(v->ty), name);
    v = lw_hoist(L, v);
    tack_dtype part = scal(v->ty);
    tk_ir *r = lw_mk(L, IR_VEC, p ? ty_value(dt_compose(part, 3, 1)) : qtype(TACK_FORM_QUAT, part), n);
    for (int i = 0; i < (p ? 3 : 4); i++) ir_push(L->C, r, comp(L, v, (p ? 0 : 3) + i, n->line));
    uses(L);
    return r;
}

static tk_ir *arg(lw_state *L, tack_node *n, int i) { return lw_expr(L, n->kids[i]); }

/* tack.quat(...) / tack.quatd(...) / tack.transform(p, q) / tack.transformd(p, q) (lower_call.c's dtype_call). */
tk_ir *lw_quat_ctor(lw_state *L, tack_dtype dt, tack_node *n) {
    tk_type t = ty_value(dt);
    tack_dtype part = dt_scalar(dt);
    int quat = dt_form(dt) == TACK_FORM_QUAT;
    tk_ir *a[4];
    if (n->nkids > 4) ERR(n, "%s() takes %s (%d given)", dt_name(dt), quat ? "4 components (x, y, z, w) or one quat"
                                                                              : "a position and a rotation (p, q)", n->nkids);
    for (int i = 0; i < n->nkids; i++) {
        a[i] = arg(L, n, i);
        if (!lw_known(a[i])) return lw_unknown(L, n);
    }
    if (n->nkids == 1 && is_q(a[0]->ty)) return lw_cast(L, a[0], t);
    tk_ir *v = lw_mk(L, IR_VEC, t, n);
    uses(L);
    if (quat) {
        if (n->nkids != 4)
            ERR(n, "%s() takes 4 components (x, y, z, w) or one quat (%d given%s); the identity is "
                   "tack.quat_identity(), a rotation tack.quat_from_axis_angle(axis, angle)", dt_name(dt), n->nkids,
                n->nkids == 1 ? tk_fmt(&L->C->arena, ": %s", TN(a[0]->ty)) : "");
        for (int i = 0; i < 4; i++) {
            if (!ty_is_scalar(a[i]->ty) || ty_is_complex(a[i]->ty))
                ERR(n->kids[i], "%s() components must be real numbers, not %s", dt_name(dt), TN(a[i]->ty));
            ir_push(L->C, v, lw_cast(L, a[i], ty_value(part)));
        }
        return v;
    }
    if (n->nkids != 2 || !ty_is_vector(a[0]->ty) || dt_rows((tack_dtype)a[0]->ty.dt) != 3 ||
        dt_kind(scal(a[0]->ty)) != TACK_KIND_FLOAT || !ty_is_quat(a[1]->ty))
        ERR(n, "%s() takes a position (a float 3-vector) and a rotation (a quat): %s(p, q)%s", dt_name(dt),
            dt_name(dt), n->nkids == 2 ? tk_fmt(&L->C->arena, ", not %s and %s", TN(a[0]->ty), TN(a[1]->ty)) : "");
    tk_ir *p = lw_hoist(L, a[0]), *q = lw_hoist(L, a[1]);
    for (int i = 0; i < 3; i++) ir_push(L->C, v, lw_cast(L, comp(L, p, i, n->line), ty_value(part)));
    for (int i = 0; i < 4; i++) ir_push(L->C, v, lw_cast(L, comp(L, q, i, n->line), ty_value(part)));
    return v;
}

static tk_ir *want_quat(lw_state *L, tack_node *n, int i) {
    tk_ir *a = arg(L, n, i);
    if (lw_known(a) && !ty_is_quat(a->ty))
        ERR(n->kids[i], "%s() takes a quat as argument %d, not %s", n->name, i + 1, TN(a->ty));
    return a;
}

static tk_ir *want_xform(lw_state *L, tack_node *n, int i) {
    tk_ir *a = arg(L, n, i);
    if (lw_known(a) && !ty_is_xform(a->ty))
        ERR(n->kids[i], "%s() takes a transform as argument %d, not %s", n->name, i + 1, TN(a->ty));
    return a;
}

static tk_ir *want_vec3(lw_state *L, tack_node *n, int i) {
    tk_ir *a = arg(L, n, i);
    if (lw_known(a) && (!ty_is_vector(a->ty) || dt_rows((tack_dtype)a->ty.dt) != 3 ||
                        dt_kind(scal(a->ty)) != TACK_KIND_FLOAT))
        ERR(n->kids[i], "%s() takes a float 3-vector (vec3, vec3d) as argument %d, not %s", n->name, i + 1, TN(a->ty));
    return a;
}

static tk_ir *want_scalar(lw_state *L, tack_node *n, int i) {
    tk_ir *a = arg(L, n, i);
    if (lw_known(a) && (!ty_is_scalar(a->ty) || ty_is_complex(a->ty)))
        ERR(n->kids[i], "%s() takes a real number as argument %d, not %s", n->name, i + 1, TN(a->ty));
    return a;
}

/* A row of kind TK_IK_QUAT (intrinsics.def): sub is its M_Q* / M_X* operation. */
tk_ir *lw_quat_call(lw_state *L, int m, tack_node *n) {
    tk_ir *a[3] = {NULL, NULL, NULL};
    if (m < 0) { /* quat_identity() */
        tack_dtype part = ty_default_float();
        tk_ir *v = lw_mk(L, IR_VEC, qtype(TACK_FORM_QUAT, part), n);
        for (int i = 0; i < 4; i++) ir_push(L->C, v, ir_const_f(L->C, ty_value(part), i == 3 ? 1.0 : 0.0, n->line));
        uses(L);
        return v;
    }
    switch (m) {
    case M_QINV: case M_QTOMAT: a[0] = want_quat(L, n, 0); break;
    case M_XINV: a[0] = want_xform(L, n, 0); break;
    case M_QROT: case M_QROTINV: a[0] = want_quat(L, n, 0); a[1] = want_vec3(L, n, 1); break;
    case M_XPOINT: case M_XVECTOR: a[0] = want_xform(L, n, 0); a[1] = want_vec3(L, n, 1); break;
    case M_QSLERP: a[0] = want_quat(L, n, 0); a[1] = want_quat(L, n, 1); a[2] = want_scalar(L, n, 2); break;
    case M_QFROMAXIS: a[0] = want_vec3(L, n, 0); a[1] = want_scalar(L, n, 1); break;
    case M_QFROMMAT:
        a[0] = arg(L, n, 0);
        if (lw_known(a[0]) && (!ty_is_matrix(a[0]->ty) || dt_rows((tack_dtype)a[0]->ty.dt) != 3 ||
                               dt_cols((tack_dtype)a[0]->ty.dt) != 3 || dt_kind(scal(a[0]->ty)) != TACK_KIND_FLOAT))
            ERR(n->kids[0], "quat_from_matrix() takes a rotation matrix (mat33, mat33d), not %s", TN(a[0]->ty));
        break;
    default: ERR(n, "unsupported function '%s'", n->name);
    }
    for (int i = 0; i < 3; i++)
        if (a[i] && !lw_known(a[i])) return lw_unknown(L, n);
    for (int i = 0; i < 3; i++)
        if (a[i]) a[i] = lw_hoist(L, a[i]);
    switch (m) {
    case M_QINV: case M_XINV: return math(L, m, a[0]->ty, a[0]->ty, a, 1, n);
    case M_QTOMAT: return math(L, m, ty_value(dt_compose(scal(a[0]->ty), 3, 3)), a[0]->ty, a, 1, n);
    case M_QROT: case M_QROTINV: case M_XPOINT: case M_XVECTOR:
        same_precision(L, &a[0], &a[1]);
        return math(L, m, a[1]->ty, a[0]->ty, a, 2, n);
    case M_QSLERP:
        same_precision(L, &a[0], &a[1]);
        a[2] = lw_cast(L, a[2], ty_value(scal(a[0]->ty)));
        return math(L, m, a[0]->ty, a[0]->ty, a, 3, n);
    case M_QFROMAXIS: {
        tk_type q = qtype(TACK_FORM_QUAT, scal(a[0]->ty));
        a[1] = lw_cast(L, a[1], ty_value(scal(a[0]->ty)));
        return math(L, m, q, q, a, 2, n);
    }
    default: { /* M_QFROMMAT */
        tk_type q = qtype(TACK_FORM_QUAT, scal(a[0]->ty));
        return math(L, m, q, q, a, 1, n);
    }
    }
}
