/*
 * lower_linalg.c -- lowering of the matrix and vector functions.
 *
 * Part of lowering (lower.c has the essay).  tack.transpose, inverse,
 * determinant, trace, outer, diag, norm, identity and the 3x3 decompositions
 * svd3, eig3 and qr3 (intrinsics.def's TK_IK_LINALG rows) take the float
 * vectors and matrices of the dtype table (vec2..vec4, mat22..mat44 and
 * their f64 forms).  Each becomes one IR_MATH of its row on the whole value
 * (aux_ty the argument's type), which the emitter writes as a call of the
 * prelude's tk_<name>_<type> (emit/prelude_linalg.c, written only for the
 * rows a kernel calls: tk_cc.uses_linalg).  Three are not helpers:
 * identity(tack.mat33) is a constant IR_VEC, norm of a vector is its
 * length (M_LENGTH), and diag of a matrix is M_DIAGONAL, its diagonal as a
 * vector, as numpy.diag reads a 2-D argument.
 *
 * A decomposition returns several values.  Its IR_MATH has type TY_MULTI
 * (ty_multi: the matrix dtype and the row), is evaluated once into a
 * temporary, and can only be unpacked, U, s, V = tack.svd3(m), which
 * lower_stmt.c does field by field as for a @tack.func's tuple; the
 * emitter declares the temporary as the prelude's result struct.
 *
 * Integer vectors (vec3i) have no matrices of their type: outer and diag of
 * one are refused by name, as length and normalize of one are.
 *
 * NumPy's method spellings (m.T, m.transpose(), m.trace(); the front end
 * makes them these calls) follow NumPy on a vector too: its .T and
 * .transpose() are the vector itself, as a 1-D array's are.
 */
#include <string.h>

#include "compiler/lower/lower.h"

static int is_float_vector(tk_type t) {
    return ty_is_vector(t) && dt_kind(dt_scalar((tack_dtype)t.dt)) == TACK_KIND_FLOAT;
}

static tk_ir *identity(lw_state *L, tack_node *n) {
    tack_node *a = n->kids[0];
    tack_dtype dt = a->kind == TACK_N_TYPE ? (tack_dtype)a->ival : TACK_DTYPE_COUNT;
    if (dt >= TACK_DTYPE_COUNT || !ty_is_matrix(ty_value(dt)))
        ERR(n, "identity() takes a matrix dtype, as in tack.identity(tack.mat33)");
    int r = dt_rows(dt);
    tk_type comp = ty_value(dt_scalar(dt));
    tk_ir *v = lw_mk(L, IR_VEC, ty_value(dt), n);
    for (int i = 0; i < r; i++)
        for (int j = 0; j < r; j++) ir_push(L->C, v, ir_const_f(L->C, comp, i == j ? 1.0 : 0.0, n->line));
    L->C->uses_vec = 1;
    return v;
}

static tk_ir *op(lw_state *L, int m, tk_type rt, tk_ir *x, tk_ir *y, tack_node *n) {
    tk_ir *e = lw_mk(L, IR_MATH, rt, n);
    e->sub = (uint8_t)m;
    e->aux_ty = x->ty;
    ir_push(L->C, e, x);
    if (y) ir_push(L->C, e, y);
    L->C->uses_vec = 1;
    if (m >= M_TRANSPOSE && m <= M_QR3) L->C->uses_linalg |= (uint32_t)1 << (m - M_TRANSPOSE);
    return e;
}

tk_ir *lw_linalg_call(lw_state *L, const char *name, int m, tack_node *n) {
    if (!strcmp(name, "identity")) return identity(L, n);
    tk_ir *x = lw_expr(L, n->kids[0]), *y = n->nkids > 1 ? lw_expr(L, n->kids[1]) : NULL;
    if (!lw_known(x) || (y && !lw_known(y))) return lw_unknown(L, n);
    tk_type t = x->ty;
    tack_dtype dt = (tack_dtype)t.dt;
    if (m == M_OUTER) {
        if (!is_float_vector(t) || !ty_eq(t, y->ty))
            ERR(n, "outer() takes two float vectors of one type, not %s and %s", TN(t), TN(y->ty));
        return op(L, m, ty_value(dt_compose(dt_scalar(dt), dt_rows(dt), dt_rows(dt))), x, y, n);
    }
    if (m == M_DIAG && ty_is_vector(t)) {
        if (!is_float_vector(t)) ERR(n, "diag() of %s: there are no integer matrices; diag() takes a float vector", TN(t));
        return op(L, m, ty_value(dt_compose(dt_scalar(dt), dt_rows(dt), dt_rows(dt))), x, NULL, n);
    }
    if (m == M_TRANSPOSE && ty_is_vector(t) && n->fval == 2.0) return x; /* v.transpose(), NumPy's: v itself */
    if (m == M_NORM && ty_is_vector(t)) {
        if (!is_float_vector(t)) ERR(n, "norm() takes a float vector or a matrix, not %s", TN(t));
        return op(L, M_LENGTH, ty_value(dt_scalar(dt)), x, NULL, n);
    }
    if (!ty_is_matrix(t))
        ERR(n, "%s() takes a matrix%s, not %s", name, m == M_DIAG ? " or a vector" : m == M_NORM ? " or a float vector" : "",
            TN(t));
    int r = dt_rows(dt);
    tk_type vec = ty_value(dt_compose(dt_scalar(dt), r, 1)), sc = ty_value(dt_scalar(dt));
    switch (m) {
    case M_TRANSPOSE: case M_INVERSE: return op(L, m, t, x, NULL, n);
    case M_DETERMINANT: case M_TRACE: case M_NORM: return op(L, m, sc, x, NULL, n);
    case M_DIAG: return op(L, M_DIAGONAL, vec, x, NULL, n);
    default: break;
    }
    if (r != 3) ERR(n, "%s() takes a 3x3 matrix (mat33 or mat33d), not %s", name, TN(t));
    tk_ir *e = op(L, m, ty_multi(dt, m), x, NULL, n);
    int tmp = lw_temp(L, e->ty);
    lw_emit(L, lw_assign_ir(L, tmp, e, n->line));
    return lw_local_ref(L, tmp, n->line);
}

/* m.T: NumPy's attribute for the transpose, of a vector the vector itself (a 1-D array's .T). */
tk_ir *lw_transpose_attr(lw_state *L, tk_ir *x, tack_node *n) {
    if (ty_is_vector(x->ty)) return x;
    return op(L, M_TRANSPOSE, x->ty, x, NULL, n);
}
