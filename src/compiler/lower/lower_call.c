/*
 * lower_call.c -- lowering of calls: intrinsics and @tack.func calls.
 *
 * Part of lowering (lower.c has the essay).  A call node's name is already
 * resolved by the front end: ival >= 0 is a @tack.func of the module, -1 an
 * intrinsic named by its bare name, looked up in intrinsics.def's table
 * (tk_intrinsic_find), which gives its kind and arity; a name that is no
 * intrinsic may be a dtype's (a cast or a vector constructor).  Intrinsics
 * become IR directly:
 *
 *   casts         float() int() bool() f32() i64() ...   -> IR_CAST (or a truth test)
 *   seed_u64      a u64 cast whose float NaN fails a check -> CK_STEP (ValueError) + IR_CAST
 *   math          sqrt ... isfinite                       -> IR_MATH of the default float
 *                 for integer arguments, of the argument's float type otherwise
 *   abs min max   -> IR_UN abs / IR_MATH fabs / a select per pair (Python's
 *                 "first minimal" rule: min(a, b) is b < a ? b : a)
 *   np.minimum np.maximum -> a select of a < b or a NaN (NumPy's, NaN propagating)
 *   abs, math, np.minimum of a vector or matrix -> an IR_VEC of the scalar call on
 *                 each component (IR_COMP), scalar arguments broadcast (lw_elementwise)
 *   round np.round np.square np.power                   -> lower_numpy.c
 *   len           -> the first extent, a weak int
 *   vec3(...) mat33(...) dot cross length normalize     -> vector IR
 *   transpose inverse ... svd3 eig3 qr3                 -> lower_linalg.c
 *   atomic_add/sub/min/max/exch/and/or/xor(a, idx, v),
 *   atomic_cas(a, idx, expected, v)                     -> IR_ATOMIC, value = old element
 *   print(...)    -> IR_PRINT
 *
 * A @tack.func call specializes the function for the argument types (weak
 * scalars stay weak, arrays by dtype and rank, and whether each array is a
 * caller's local array, tk_spec.plarr: see lower_local.c), marks the
 * caller's arrays written when the callee writes them (a local array
 * written so must be the iteration's own), and evaluates the call into a
 * temporary so the emitter can test for a failed check right after it.
 */
#include <string.h>

#include "compiler/lower/lower.h"

static void nargs_check(lw_state *L, tack_node *n, int lo, int hi) {
    if (hi < 0) {
        if (n->nkids < lo) ERR(n, "%s() takes %d or more arguments", n->name, lo);
        return;
    }
    if (n->nkids < lo || n->nkids > hi) {
        if (lo == hi) ERR(n, "%s() takes %d argument%s (%d given)", n->name, lo, lo == 1 ? "" : "s", n->nkids);
        ERR(n, "%s() takes %d to %d arguments (%d given)", n->name, lo, hi, n->nkids);
    }
}

static tk_ir *to_scalar_cast(lw_state *L, tk_ir *e, tk_type t, tack_node *n) {
    if (!lw_known(e)) return lw_cast(L, e, t);
    if (!ty_is_scalar(e->ty)) ERR(n, "cannot convert %s to %s", TN(e->ty), TN(t));
    if (ty_is_bool(t)) return lw_truth(L, e, n);
    if (ty_is_complex(e->ty) && !ty_is_complex(t))
        ERR(n, "%s() of %s: a complex number cannot become a real one (Python raises TypeError); use z.real, "
               "z.imag or abs(z)", n->name, TN(e->ty));
    return lw_cast(L, e, t);
}

static tk_ir *math_call(lw_state *L, int m, tk_ir **a, int na, tack_node *n) {
    for (int i = 0; i < na; i++)
        if (!lw_known(a[i])) return lw_unknown(L, n);
    tk_type t = a[0]->ty;
    for (int i = 1; i < na; i++) t = ty_promote(t, a[i]->ty);
    if (ty_is_complex(t)) {
        if (strncmp(n->name, "numpy.", 6))
            ERR(n, "%s() takes real numbers, not %s, as math.%s does; use cmath.%s or np.%s for complex numbers",
                n->name, TN(t), n->name, n->name, n->name);
        if (na != 1) ERR(n, "%s() of a complex number is not supported in kernels", n->name);
        return lw_complex_math(L, m, a[0], n);
    }
    if (!ty_is_scalar(t)) ERR(n, "%s() needs scalar arguments, not %s", n->name, TN(t));
    tk_type f = lw_rule_arith(lw_rule_floatify(t, a[0], na > 1 ? a[1] : NULL), a[0], na > 1 ? a[1] : NULL);
    if (na > 2) { /* a third argument known at run time makes a weak result the default float, as a second does */
        tk_type g = lw_rule_arith(lw_rule_floatify(t, a[2], NULL), a[2], NULL);
        if (f.weak && !g.weak) f = g;
    }
    t = f;
    tk_type rt = tk_math_is_predicate(m) ? ty_value(TACK_BOOL) : t;
    tk_ir *e = lw_mk(L, IR_MATH, rt, n);
    e->sub = (uint8_t)m;
    e->aux_ty = t;
    L->C->uses_math |= (uint64_t)1 << m;
    for (int i = 0; i < na; i++) ir_push(L->C, e, lw_cast(L, a[i], t));
    return e;
}

static tk_ir *vec_ctor(lw_state *L, tack_dtype vt, tack_node *n) {
    int r = dt_rows(vt), c = dt_cols(vt), len = r * c;
    tk_type comp = ty_value(dt_scalar(vt));
    tk_ir *v = lw_mk(L, IR_VEC, ty_value(vt), n);
    L->C->uses_vec = 1;
    if (n->nkids == 0) {
        for (int i = 0; i < len; i++) ir_push(L->C, v, ir_const_i(L->C, comp, 0, n->line));
        if (ty_is_float(comp)) for (int i = 0; i < len; i++) v->k[i] = ir_const_f(L->C, comp, 0.0, n->line);
        return v;
    }
    tk_ir *args[16];
    if (n->nkids > 16) ERR(n, "%s() takes at most 16 arguments", n->name);
    for (int i = 0; i < n->nkids; i++) {
        args[i] = lw_expr(L, n->kids[i]);
        if (!lw_known(args[i])) return lw_unknown(L, n);
    }
    if (n->nkids == 1 && ty_is_scalar(args[0]->ty)) {
        tk_ir *s = lw_hoist(L, lw_cast(L, args[0], comp));
        if (c == 1) {
            for (int i = 0; i < len; i++) ir_push(L->C, v, s);
        } else { /* a matrix from one scalar: s on the diagonal */
            for (int i = 0; i < r; i++)
                for (int j = 0; j < c; j++)
                    ir_push(L->C, v, i == j ? s : (ty_is_float(comp) ? ir_const_f(L->C, comp, 0.0, n->line) : ir_const_i(L->C, comp, 0, n->line)));
        }
        return v;
    }
    if (n->nkids == 1 && !ty_is_scalar(args[0]->ty)) {
        if (dt_rows((tack_dtype)args[0]->ty.dt) != r || dt_cols((tack_dtype)args[0]->ty.dt) != c)
            ERR(n, "cannot convert %s to %s", TN(args[0]->ty), dt_name(vt));
        return lw_cast(L, args[0], ty_value(vt));
    }
    if (c > 1 && n->nkids == r) { /* rows */
        for (int i = 0; i < r; i++) {
            if (!ty_is_vector(args[i]->ty) || dt_rows((tack_dtype)args[i]->ty.dt) != c)
                ERR(n->kids[i], "%s() takes %d scalars or %d row vectors", dt_name(vt), len, r);
            tk_ir *row = lw_hoist(L, lw_cast(L, args[i], ty_value(dt_compose(dt_scalar(vt), c, 1))));
            for (int j = 0; j < c; j++) {
                tk_ir *e = lw_mk(L, IR_COMP, comp, n);
                ir_push(L->C, e, row);
                ir_push(L->C, e, ir_const_i(L->C, ty_value(TACK_I64), j, n->line));
                ir_push(L->C, v, e);
            }
        }
        return v;
    }
    if (n->nkids != len) ERR(n, "%s() takes 0, 1 or %d arguments (%d given)", dt_name(vt), len, n->nkids);
    for (int i = 0; i < len; i++) {
        if (!ty_is_scalar(args[i]->ty)) ERR(n->kids[i], "%s() components must be scalars, not %s", dt_name(vt), TN(args[i]->ty));
        ir_push(L->C, v, lw_cast(L, args[i], comp));
    }
    return v;
}


static tk_ir *print_call(lw_state *L, tack_node *n) {
    tk_ir *pr = lw_mk(L, IR_PRINT, ty_void(), n);
    for (int i = 0; i < n->nkids; i++) {
        tack_node *a = n->kids[i];
        if (a->kind == TACK_N_CONST_STR) {
            tk_ir *s = lw_mk(L, IR_CONST, ty_void(), a);
            s->str = a->name ? a->name : "";
            ir_push(L->C, pr, s);
            continue;
        }
        tk_ir *e = lw_expr(L, a);
        if (lw_known(e) && !ty_is_scalar(e->ty)) ERR(a, "print() takes numbers, bools and strings, not %s", TN(e->ty));
        ir_push(L->C, pr, e);
    }
    L->C->uses_print = 1;
    lw_emit(L, pr);
    return lw_mk(L, IR_CONST, ty_void(), n);
}


/* ------------------------------------------------- parallel context */
/* Inside a parallel loop that may run more than one iteration, or in a
 * function specialized for a call from one.  `for t in range(1):` is not:
 * its one iteration is the serial work the docs put there, so `a[k] /= v`
 * is allowed in it and `a[k] += v` needs no atomic. */
int lw_in_parallel(lw_state *L) { return (L->pfor >= 0 && !L->pfor_one) || L->S->par; }

static int names_target(const tack_node *t, const char *name) {
    if (!t) return 0;
    if (t->kind == TACK_N_NAME) return t->name && strcmp(t->name, name) == 0;
    if (t->kind == TACK_N_TUPLE)
        for (int i = 0; i < t->nkids; i++)
            if (names_target(t->kids[i], name)) return 1;
    return 0;
}

/* Whether statement tree x assigns `name` (=, :=, op=, or as a for target). */
int lw_assigns_name(const tack_node *x, const char *name) {
    if (!x) return 0;
    if ((x->kind == TACK_N_ASSIGN || x->kind == TACK_N_ANNASSIGN || x->kind == TACK_N_AUGASSIGN ||
         x->kind == TACK_N_FOR) && x->nkids > 0 && names_target(x->kids[0], name))
        return 1;
    for (int i = 0; i < x->nkids; i++)
        if (lw_assigns_name(x->kids[i], name)) return 1;
    return 0;
}

/* The parallel context a call passes on to the function it specializes:
 * whether it runs inside a parallel loop, and which parameter receives each
 * of the loop's own variables (a name that is one, passed to a 64-bit
 * integer parameter), so that `a[k] *= 2` on the callee's k = i is still the
 * iteration's own element. */
static void par_context(lw_state *L, tack_node *n, const tk_type *pt, tk_spec *par) {
    memset(par, 0, sizeof *par);
    par->par = lw_in_parallel(L);
    if (!par->par) return;
    tk_func *f = &L->C->m->funcs[n->ival];
    par->npar_own = L->npfor_vars;
    for (int d = 0; d < L->npfor_vars; d++) {
        par->par_own[d] = -1;
        if (L->pfor_vars[d] < 0) continue;
        for (int i = 0; i < n->nkids; i++) {
            tack_node *an = f->params[i].annotation;
            tk_type t = an && an->kind == TACK_N_TYPE ? ty_value((tack_dtype)an->ival) : pt[i];
            if (n->kids[i]->kind == TACK_N_NAME && lw_lookup(L, n->kids[i]->name) == L->pfor_vars[d] &&
                ty_is_int(t) && dt_bits((tack_dtype)t.dt) == 64) {
                par->par_own[d] = i;
                break;
            }
        }
    }
}

/* A function lowered for a parallel loop: the parameters that receive the
 * loop's own variables, unassigned in its body, are its own indices. */
void lw_par_own_vars(lw_state *L) {
    tk_spec *S = L->S;
    L->npfor_vars = S->npar_own;
    for (int d = 0; d < S->npar_own; d++) {
        int p = S->par_own[d];
        L->pfor_vars[d] = p >= 0 && S->plocal[p] >= 0 && !lw_assigns_name(L->F->body, S->pnames[p]) ? S->plocal[p] : -1;
    }
}

static tk_ir *func_call(lw_state *L, tack_node *n) {
    tack_module *m = L->C->m;
    int fi = (int)n->ival;
    if (fi >= m->nfuncs) ERR(n, "call of unknown function %d", fi);
    tk_func *f = &m->funcs[fi];
    if (f->kind != TACK_FUNC_DEVICE) ERR(n, "'%s' is a kernel; kernels cannot be called from kernels (make it a @tack.func)", f->name);
    if (n->nkids != f->nparams) ERR(n, "%s() takes %d argument%s (%d given)", f->name, f->nparams, f->nparams == 1 ? "" : "s", n->nkids);
    tk_type *pt = tk_alloc(&L->C->arena, sizeof(tk_type) * (size_t)(n->nkids + 1));
    tk_ir **args = tk_alloc(&L->C->arena, sizeof(tk_ir *) * (size_t)(n->nkids + 1));
    int unknown_arg = 0;
    uint64_t plarr = 0;
    for (int i = 0; i < n->nkids; i++) {
        tack_node *a = n->kids[i];
        if (a->kind == TACK_N_NAME && lw_array_param(L, a->name) >= 0) {
            int p = lw_array_param(L, a->name);
            tk_ir *e = lw_mk(L, IR_ARRAY, L->S->ptypes[p], a);
            e->param = p;
            args[i] = e;
            pt[i] = L->S->ptypes[p];
            if (p < 64 && (L->S->plarr >> p & 1)) { /* our own parameter, a caller's local array */
                if (i >= 64) ERR(a, "a local array can be passed only as one of a function's first 64 arguments");
                plarr |= 1ull << i;
            }
            continue;
        }
        if (a->kind == TACK_N_NAME && lw_local_array(L, a->name) >= 0) {
            if (i >= 64) ERR(a, "a local array can be passed only as one of a function's first 64 arguments");
            args[i] = lw_local_arg(L, lw_local_array(L, a->name), a);
            pt[i] = args[i]->ty;
            plarr |= 1ull << i;
            continue;
        }
        args[i] = lw_expr(L, a);
        if (!lw_known(args[i])) unknown_arg = 1;
        else if (args[i]->ty.kind != TY_VALUE) ERR(a, "cannot pass %s to %s()", TN(args[i]->ty), f->name);
        else args[i] = lw_hoist(L, args[i]);
        pt[i] = args[i]->ty;
    }
    if (unknown_arg) return lw_unknown(L, n);
    tk_spec par;
    par_context(L, n, pt, &par);
    par.plarr = plarr;
    tk_spec *S = lw_specialize(L->C, fi, pt, n->nkids, &par, n);
    for (int i = 0; i < n->nkids; i++) {
        if (pt[i].kind != TY_ARRAY || !(S->written >> i & 1)) continue;
        if (args[i]->op == IR_LARRAY) lw_local_written_by(L, args[i]->local, f->name, n->kids[i]);
        else lw_mark_written(L, args[i]->param);
    }
    int si = 0;
    while (L->C->specs[si] != S) si++;
    tk_ir *call = lw_mk(L, IR_CALL, S->ret.kind == TY_UNKNOWN ? ty_void() : S->ret, n);
    call->aux = si;
    for (int i = 0; i < n->nkids; i++) ir_push(L->C, call, args[i]);
    if (call->ty.kind == TY_VOID) {
        tk_ir *ev = lw_mk(L, IR_EVAL, ty_void(), n);
        lw_emit(L, lw_kid(L, ev, call));
        return lw_mk(L, IR_CONST, ty_void(), n);
    }
    int t = lw_temp(L, call->ty);
    lw_emit(L, lw_assign_ir(L, t, call, n->line));
    return lw_local_ref(L, t, n->line);
}

static tk_ir *len_call(lw_state *L, tack_node *n) {
    tack_node *a = n->kids[0];
    if (a->kind == TACK_N_NAME && lw_local_array(L, a->name) >= 0)
        return ir_const_i(L->C, ty_weak(TACK_I64), L->S->locals[lw_local_array(L, a->name)].ashape[0], n->line);
    if (a->kind == TACK_N_NAME && lw_array_param(L, a->name) >= 0) {
        int p = lw_array_param(L, a->name);
        if (L->S->ptypes[p].ndim < 1) ERR(n, "len() of a 0-D array");
        tk_ir *s = lw_mk(L, IR_SHAPE, ty_weak(TACK_I64), n);
        s->param = p;
        s->aux = 0;
        return s;
    }
    tk_ir *e = lw_expr(L, a);
    if (!lw_known(e)) return lw_unknown(L, n);
    if (ty_is_vector(e->ty) || ty_is_matrix(e->ty))
        return ir_const_i(L->C, ty_weak(TACK_I64), dt_rows((tack_dtype)e->ty.dt), n->line);
    ERR(n, "len() of %s is not supported", TN(e->ty));
}

static tk_ir *atomic_call(lw_state *L, int which, tack_node *n, int discard) {
    tack_node *a = n->kids[0];
    int la = a->kind == TACK_N_NAME ? lw_local_array(L, a->name) : -1;
    if (la >= 0 && L->S->locals[la].shared)
        ERR(a, "%s() on '%s', a shared array: Tack has no atomics on shared memory; give each thread its "
               "own element of it and combine them after a barrier (or use tack.block_sum), or update an "
               "array argument, on which %s() is atomic", n->name, a->name, n->name);
    if (la >= 0)
        ERR(a, "%s() on '%s', a local array: it belongs to one thread, so there is nothing to be atomic "
               "against; write %s[i] += v instead", n->name, a->name, a->name);
    if (a->kind != TACK_N_NAME || lw_array_param(L, a->name) < 0) ERR(a, "%s() needs an array as its first argument", n->name);
    int p = lw_array_param(L, a->name);
    if (p < 64 && (L->S->plarr >> p & 1))
        ERR(a, "%s() on '%s', which receives a local array: a local array belongs to one thread, so there is "
               "nothing to be atomic against; write %s[i] += v instead", n->name, a->name, a->name);
    tack_node *ix = n->kids[1];
    /* atomic_cas(a, idx, expected, value): the value is the last argument */
    tk_ir *exp = which == A_CAS ? lw_expr(L, n->kids[2]) : NULL;
    tk_ir *val = lw_expr(L, n->kids[which == A_CAS ? 3 : 2]);
    tk_ir *r = ix->kind == TACK_N_TUPLE ? lw_atomic(L, which, p, ix->kids, ix->nkids, val, exp, n, !discard)
                                        : lw_atomic(L, which, p, &n->kids[1], 1, val, exp, n, !discard);
    return r ? r : lw_mk(L, IR_CONST, ty_void(), n);
}

static tk_ir *abs_of(lw_state *L, tk_ir *e, tack_node *n) {
    if (!lw_known(e)) return lw_unknown(L, n);
    if (ty_is_complex(e->ty)) return lw_complex_abs(L, e, n);
    if (ty_is_float(e->ty)) return math_call(L, M_FABS, &e, 1, n);
    if (ty_is_bool(e->ty)) e = lw_cast(L, lw_pyint_of_bool(L, e, NULL), e->ty.weak ? ty_weak(TACK_I64) : ty_value(TACK_I64));
    if (!ty_is_int(e->ty)) ERR(n, "abs() of %s is not supported", TN(e->ty));
    tk_ir *lit = lw_pyint_abs(L, e, n); /* abs(-100000) is the literal 100000 */
    if (lit) return lit;
    e = lw_hoist(L, e);
    tk_ir *u = lw_mk(L, IR_UN, e->ty, n);
    u->sub = U_ABS;
    return lw_kid(L, u, e);
}

static tk_ir *minmax_call(lw_state *L, int b, tack_node *n) {
    tk_ir *acc = lw_expr(L, n->kids[0]);
    for (int i = 1; i < n->nkids; i++) {
        tk_ir *y = lw_expr(L, n->kids[i]);
        if (!lw_known(acc) || !lw_known(y)) return lw_unknown(L, n);
        if (!ty_is_scalar(acc->ty) || !ty_is_scalar(y->ty))
            ERR(n, "%s() takes scalars, not %s and %s (Python's %s() raises TypeError for arrays); use np.%s(a, b) "
                   "for the element-wise %s", n->name, TN(acc->ty), TN(y->ty), n->name,
                b == B_MIN ? "minimum" : "maximum", b == B_MIN ? "minimum" : "maximum");
        if (ty_is_complex(acc->ty) || ty_is_complex(y->ty))
            ERR(n, "%s() of complex numbers: they have no order (Python raises TypeError)", n->name);
        acc = lw_pyint_of_bool(L, acc, y); /* max(True, 100000): 1 and 100000, as Python compares them */
        y = lw_pyint_of_bool(L, y, acc);
        tk_ir *lit = lw_pyint_pick(b == B_MIN, acc, y); /* max(100000, 5) is the literal 100000 */
        if (lit) {
            acc = lit;
            continue;
        }
        /* max(i, 0.5): a run-time int meeting a Python float gives the default float, as in i * 0.5 */
        tk_type t = lw_rule_arith(ty_promote(acc->ty, y->ty), acc, y);
        if (t.kind == TY_VALUE && !t.weak && ty_is_int(t)) {
            /* Python's pick, y < acc, by the exact comparison of a Python int
             * with a fixed-width one (lower_pyint.c); then the value picked
             * takes the promoted type */
            acc = lw_hoist(L, acc);
            y = lw_hoist(L, y);
            tk_ir *pick = lw_pyint_compare(L, b == B_MIN ? B_LT : B_GT, y, acc, n);
            if (pick) {
                tk_ir *s = lw_mk(L, IR_SELECT, t, n);
                ir_push(L->C, s, pick);
                ir_push(L->C, s, lw_hoist(L, lw_cast(L, y, t)));
                ir_push(L->C, s, lw_hoist(L, lw_cast(L, acc, t)));
                acc = s;
                continue;
            }
        }
        acc = lw_bin(L, b, t, lw_hoist(L, lw_cast(L, acc, t)), lw_hoist(L, lw_cast(L, y, t)), n->line);
    }
    return acc;
}

static tk_ir *vecbin_call(lw_state *L, int b, tack_node *n) {
    tk_ir *x = lw_expr(L, n->kids[0]), *y = lw_expr(L, n->kids[1]);
    if (!lw_known(x) || !lw_known(y)) return lw_unknown(L, n);
    if (b == B_DOT && ty_is_quat(x->ty) && x->ty.dt == y->ty.dt) { /* the dot product of two quats, as 4-vectors */
        L->C->uses_quat = L->C->uses_vec = 1;
        return lw_bin(L, b, ty_value(dt_scalar((tack_dtype)x->ty.dt)), x, y, n->line);
    }
    if (!ty_is_vector(x->ty) || x->ty.dt != y->ty.dt) ERR(n, "%s() takes two vectors of one type, not %s and %s", n->name, TN(x->ty), TN(y->ty));
    if (b == B_CROSS && dt_rows((tack_dtype)x->ty.dt) != 3) ERR(n, "cross() takes 3-vectors");
    L->C->uses_vec = 1;
    tk_type rt = b == B_DOT ? ty_value(dt_scalar((tack_dtype)x->ty.dt)) : x->ty;
    return lw_bin(L, b, rt, x, y, n->line);
}

static tk_ir *vecmath_call(lw_state *L, int m, tack_node *n) {
    tk_ir *x = lw_expr(L, n->kids[0]);
    if (!lw_known(x)) return lw_unknown(L, n);
    if (ty_is_quat(x->ty)) L->C->uses_quat = 1; /* a quat's length and normalization, as a 4-vector's */
    else if (!ty_is_vector(x->ty) || dt_kind(dt_scalar((tack_dtype)x->ty.dt)) != TACK_KIND_FLOAT)
        ERR(n, "%s() takes a float vector or a quat, not %s", n->name, TN(x->ty));
    L->C->uses_vec = 1;
    tk_ir *e = lw_mk(L, IR_MATH, m == M_LENGTH ? ty_value(dt_scalar((tack_dtype)x->ty.dt)) : x->ty, n);
    e->sub = (uint8_t)m;
    e->aux_ty = x->ty;
    return lw_kid(L, e, x);
}

/* A call of a dtype by name: a cast to a scalar type, or a vector/matrix
 * constructor.  Returns NULL when `name` is no dtype. */
static tk_ir *dtype_call(lw_state *L, const char *name, tack_node *n) {
    tack_dtype dt;
    if (tack_dtype_from_name(name, &dt) != TACK_OK) {
        tack_clear_error();
        return NULL;
    }
    if (dt_form(dt)) return lw_quat_ctor(L, dt, n); /* quat.c: tack.quat(x, y, z, w), tack.transform(p, q) */
    if (dt_rows(dt) * dt_cols(dt) > 1) return vec_ctor(L, dt, n);
    nargs_check(L, n, 1, 1);
    if (dt_is_half(dt)) { /* rounded to the 16-bit float, its value an f32 (lower_local.c) */
        tk_ir *v = lw_expr(L, n->kids[0]);
        if (lw_known(v) && (!ty_is_scalar(v->ty) || ty_is_complex(v->ty))) return to_scalar_cast(L, v, ty_value(TACK_F32), n);
        return lw_half_round(L, lw_known(v) && ty_is_bool(v->ty) ? lw_cast(L, v, ty_value(TACK_F32)) : v, dt, n);
    }
    return to_scalar_cast(L, lw_expr(L, n->kids[0]), lw_dtype_type(dt), n);
}

/* np.sign of an integer x of type t: -1, 0 or 1 in t, as NumPy gives it ((x > 0) - (x < 0)). */
static tk_ir *int_sign(lw_state *L, tk_ir *x, tk_type t, tack_node *n) {
    x = lw_hoist(L, lw_cast(L, x, t));
    tk_ir *gt = lw_bin(L, B_GT, ty_value(TACK_BOOL), x, ir_const_i(L->C, t, 0, n->line), n->line);
    tk_ir *lt = lw_bin(L, B_LT, ty_value(TACK_BOOL), x, ir_const_i(L->C, t, 0, n->line), n->line);
    gt->aux_ty = lt->aux_ty = t;
    return lw_bin(L, B_SUB, t, lw_cast(L, gt, t), lw_cast(L, lt, t), n->line);
}

/* np.fmod of two integers of type t, NumPy's integer loop: C's remainder, which has the sign of
 * the dividend, in t (np.fmod(-7, 2) is -1; of int64s exact, where fmod in f64 rounds 2**60 + 1).
 * It is Python's remainder (the `%` lowering: the divisor's sign) less y where the two signs differ
 * and the remainder is not zero -- that r - y cannot overflow, since |r| < |y| and r has y's sign.
 * A zero divisor is ZeroDivisionError, as for `%`, and a Python int meeting t is checked as in
 * arithmetic (NumPy 2 raises OverflowError for np.fmod(int8, 300) as for int8 + 300). */
static tk_ir *int_fmod(lw_state *L, tk_ir *x, tk_ir *y, tk_type t, tack_node *n) {
    lw_pyint_fits(L, x, t);
    lw_pyint_fits(L, y, t);
    x = lw_hoist(L, lw_cast(L, lw_pyint_narrow(L, x, t, n), t));
    y = lw_hoist(L, lw_cast(L, lw_pyint_narrow(L, y, t, n), t));
    if (L->C->opts.checks && !(y->op == IR_CONST && y->c.i != 0)) {
        int site = lw_site(L, CK_ZERODIV, n->line, 0, NULL, "integer modulo by zero");
        lw_check(L, CK_ZERODIV, site, y, NULL, n->line);
    }
    tk_ir *r = lw_hoist(L, lw_bin(L, B_MOD, t, x, y, n->line));
    if (dt_kind((tack_dtype)t.dt) != TACK_KIND_INT) return r; /* unsigned: the signs never differ */
    tk_ir *rneg = lw_bin(L, B_LT, ty_value(TACK_BOOL), r, ir_const_i(L->C, t, 0, n->line), n->line);
    tk_ir *xneg = lw_bin(L, B_LT, ty_value(TACK_BOOL), x, ir_const_i(L->C, t, 0, n->line), n->line);
    tk_ir *nz = lw_bin(L, B_NE, ty_value(TACK_BOOL), r, ir_const_i(L->C, t, 0, n->line), n->line);
    rneg->aux_ty = xneg->aux_ty = nz->aux_ty = t;
    tk_ir *differ = lw_bin(L, B_NE, ty_value(TACK_BOOL), rneg, xneg, n->line);
    differ->aux_ty = ty_value(TACK_BOOL);
    tk_ir *fix = lw_mk(L, IR_SELECT, t, n); /* the signs differ: r - y, else r */
    ir_push(L->C, fix, differ);
    ir_push(L->C, fix, lw_bin(L, B_SUB, t, r, y, n->line));
    ir_push(L->C, fix, r);
    tk_ir *out = lw_mk(L, IR_SELECT, t, n); /* a zero remainder is zero either way */
    ir_push(L->C, out, nz);
    ir_push(L->C, out, fix);
    ir_push(L->C, out, r);
    return out;
}

/* A NumPy spelling (np.sqrt, named "numpy.sqrt" by the front end) of a math
 * intrinsic types integers as NumPy does rather than as math.sqrt does:
 * floor, ceil and trunc keep an integer or bool as it is, abs keeps a bool,
 * sign gives an integer's sign in its type (and refuses a bool, as NumPy
 * does), fmod of integers is NumPy's integer remainder (int_fmod), and the others compute in NumPy's float for the promoted integer type --
 * f16 for 8-bit ints and bool, f32 for 16-bit, f64 for wider -- where the
 * math spelling takes the default float.  Weak scalars keep Tack's rule. */
static tk_ir *numpy_math(lw_state *L, const tk_intrinsic *in, tk_ir **a, int na, tack_node *n) {
    tk_type t = a[0]->ty;
    for (int j = 1; j < na; j++) t = ty_promote(t, a[j]->ty);
    if (t.kind == TY_VALUE && ty_is_scalar(t) && !ty_is_float(t) && !ty_is_complex(t)) {
        /* recent NumPy returns integers (and bools) from floor/ceil/trunc as they are */
        if (in->kind == TK_IK_ABS && ty_is_bool(t)) return a[0];
        if (in->sub == M_FLOOR || in->sub == M_CEIL || in->sub == M_TRUNC) return a[0];
        if (in->kind == TK_IK_MATH && in->sub == M_SIGN && !t.weak) {
            if (ty_is_bool(t)) ERR(n, "np.sign() of bool: NumPy has no sign of a bool (it raises TypeError)");
            return int_sign(L, a[0], t, n);
        }
        if (!t.weak && in->kind == TK_IK_MATH && in->sub == M_FMOD && ty_is_int(t)) return int_fmod(L, a[0], a[1], t, n);
        if (!t.weak && in->kind == TK_IK_MATH && in->sub == M_FMOD && ty_is_bool(t)) /* NumPy's loop for bools is int8's */
            return int_fmod(L, a[0], a[1], ty_value(TACK_I8), n);
        if (!t.weak && in->kind == TK_IK_MATH && !tk_math_is_predicate(in->sub)) { /* isnan(int): False in any float */
            int bits = ty_is_bool(t) ? 8 : dt_bits((tack_dtype)t.dt);
            tk_type f = ty_value(bits <= 8 ? TACK_F16 : bits == 16 ? TACK_F32 : TACK_F64);
            for (int j = 0; j < na; j++) a[j] = lw_cast(L, a[j], f);
        }
    }
    if (in->kind == TK_IK_ABS) return abs_of(L, a[0], n);
    if (in->sub == M_FABS && lw_known(a[0]) && !ty_is_scalar(a[0]->ty)) ERR(n, "fabs() of %s", TN(a[0]->ty));
    return math_call(L, in->sub, a, na, n);
}

/* The scalar meanings element-wise applies: Python's abs, math/tack's row, NumPy's spelling. */
static tk_ir *abs_scalar(lw_state *L, const tk_intrinsic *in, tk_ir **a, int na, tack_node *n) {
    (void)in, (void)na;
    return abs_of(L, a[0], n);
}

static tk_ir *math_scalar(lw_state *L, const tk_intrinsic *in, tk_ir **a, int na, tack_node *n) {
    if (in->sub == M_FABS && lw_known(a[0]) && !ty_is_scalar(a[0]->ty)) ERR(n, "fabs() of %s", TN(a[0]->ty));
    return math_call(L, in->sub, a, na, n);
}

/* np.minimum / np.maximum of two real scalars, NumPy's meaning: a if a < b (a > b) or a is NaN, else b --
 * a NaN propagates (the first one), where Python's min/max follow the comparisons -- in the promoted type,
 * into which a Python int must fit, as NumPy 2 checks it (min and max compare it exactly instead). */
static tk_ir *np_minmax(lw_state *L, const tk_intrinsic *in, tk_ir **a, int na, tack_node *n) {
    (void)na;
    if (!lw_known(a[0]) || !lw_known(a[1])) return lw_unknown(L, n);
    for (int i = 0; i < 2; i++)
        if (a[i]->ty.kind != TY_VALUE || !ty_is_scalar(a[i]->ty) || ty_is_complex(a[i]->ty))
            ERR(n, "np.%s() takes real numbers, vectors or matrices, not %s", in->name, TN(a[i]->ty));
    tk_type t = ty_promote(a[0]->ty, a[1]->ty);
    if (t.kind != TY_VALUE) ERR(n, "np.%s() of %s and %s", in->name, TN(a[0]->ty), TN(a[1]->ty));
    /* two Python ints (literals or known at run time): NumPy's int64 scalar, not a Python int --
     * np.maximum(3, 100) / 3 divides an int64, and np.maximum(i, 5) + a8[i] is int64 arithmetic */
    if (t.weak && ty_is_int(t) && !ty_is_bool(t)) t = ty_concrete(t);
    if (ty_is_int(t)) { /* a Python int meeting int8 here is NumPy 2's OverflowError where it does not fit, as in + */
        for (int i = 0; i < 2; i++) {
            lw_pyint_fits(L, a[i], t);
            a[i] = lw_pyint_narrow(L, a[i], t, n);
        }
    }
    tk_ir *x = lw_hoist(L, lw_cast(L, a[0], t)), *y = lw_hoist(L, lw_cast(L, a[1], t));
    tk_ir *lt = lw_bin(L, in->sub == B_MIN ? B_LT : B_GT, ty_value(TACK_BOOL), x, y, n->line);
    lt->aux_ty = t;
    tk_ir *s = lw_mk(L, IR_SELECT, t, n);
    ir_push(L->C, s, lt);
    ir_push(L->C, s, x);
    ir_push(L->C, s, y);
    if (!ty_is_float(t)) return s;
    tk_ir *nan = lw_bin(L, B_NE, ty_value(TACK_BOOL), x, x, n->line); /* x != x: x is NaN */
    nan->aux_ty = t;
    tk_ir *r = lw_mk(L, IR_SELECT, t, n);
    ir_push(L->C, r, nan);
    ir_push(L->C, r, x);
    ir_push(L->C, r, lw_hoist(L, s));
    return r;
}

static int composite(tk_ir *e) {
    return lw_known(e) && e->ty.kind == TY_VALUE && (ty_is_vector(e->ty) || ty_is_matrix(e->ty));
}

/* abs, a math row or its NumPy spelling applied to a vector or matrix: the
 * scalar call `f` on each component, the scalar arguments broadcast, into a
 * vector (matrix) of the scalar result's type -- NumPy's meaning, and Warp's
 * for abs, sign, clamp, lerp.  Every argument is evaluated once (hoisted);
 * each component's call is then the scalar one, so the language's scalar
 * typing, checks and rounding hold per component and no emitter sees
 * anything new.  NULL when no argument is a vector or matrix. */
tk_ir *lw_elementwise(lw_state *L, const tk_intrinsic *in, tk_ir **a, int na, tack_node *n, scalar_fn f) {
    int v = -1;
    for (int i = 0; i < na; i++)
        if (composite(a[i]) && v < 0) v = i;
    if (v < 0) return NULL;
    if (in->kind == TK_IK_MATH && tk_math_is_predicate(in->sub))
        ERR(n, "%s() of %s: Tack has no vector of bools to hold its element-wise result; test the components "
               "(%s(v[0]) ...)", n->name, TN(a[v]->ty), n->name);
    if (n->fval == 1.0) { /* the front end's mark of math.<name>: Python's math module takes scalars */
        const char *nm = n->name, *pre = "use ", *mid = "tack.";
        const char *post = "() (or its NumPy spelling) for it element-wise";
        if (!strcmp(nm, "pow")) mid = "", post = "(v, w) for it element-wise";
        else if (!strcmp(nm, "fabs")) nm = "abs(v) or np.fabs", mid = "", post = "(v) for it element-wise";
        else if (!strcmp(nm, "erf") || !strcmp(nm, "erfc") || !strcmp(nm, "remainder"))
            pre = "Tack has no element-wise ", mid = "", post = ": apply it to each component (v[0] ...)";
        ERR(n, "math.%s() takes scalars, not %s (Python's math module raises TypeError for an array); %s%s%s%s",
            n->name, TN(a[v]->ty), pre, mid, nm, post);
    }
    tack_dtype vt = (tack_dtype)a[v]->ty.dt;
    int r = dt_rows(vt), c = dt_cols(vt);
    for (int i = 0; i < na; i++) {
        if (!lw_known(a[i])) return lw_unknown(L, n);
        if (composite(a[i])) {
            tack_dtype d = (tack_dtype)a[i]->ty.dt;
            if (dt_rows(d) != r || dt_cols(d) != c)
                ERR(n, "%s() of %s and %s: element-wise, the shapes must match", n->name, TN(a[v]->ty), TN(a[i]->ty));
        } else if (a[i]->ty.kind != TY_VALUE || !ty_is_scalar(a[i]->ty) || ty_is_complex(a[i]->ty)) {
            ERR(n, "%s() of %s and %s: element-wise, the other arguments must be real scalars or of its shape",
                n->name, TN(a[v]->ty), TN(a[i]->ty));
        }
    }
    for (int i = 0; i < na; i++) a[i] = lw_hoist(L, a[i]);
    int len = r * c;
    tk_ir *out[16];
    tk_type st = ty_void();
    for (int k = 0; k < len; k++) {
        tk_ir *ca[3] = {NULL, NULL, NULL};
        for (int i = 0; i < na; i++) {
            if (!composite(a[i])) {
                ca[i] = a[i];
                continue;
            }
            tk_ir *e = lw_mk(L, IR_COMP, ty_value(dt_scalar((tack_dtype)a[i]->ty.dt)), n);
            ir_push(L->C, e, a[i]); /* a matrix's entry is [row, column], a vector's [k] */
            ir_push(L->C, e, ir_const_i(L->C, ty_value(TACK_I64), c > 1 ? k / c : k, n->line));
            if (c > 1) ir_push(L->C, e, ir_const_i(L->C, ty_value(TACK_I64), k % c, n->line));
            ca[i] = e;
        }
        out[k] = f(L, in, ca, na, n);
        if (!lw_known(out[k])) return out[k];
        if (k == 0) st = out[k]->ty;
        if (out[k]->ty.kind != TY_VALUE || !ty_is_scalar(out[k]->ty) || out[k]->ty.weak || !ty_eq(out[k]->ty, st))
            ERR(n, "%s() of %s: its components' results are not of one scalar type", n->name, TN(a[v]->ty));
    }
    tack_dtype rt = dt_compose((tack_dtype)st.dt, r, c);
    if (rt == TACK_DTYPE_COUNT)
        ERR(n, "%s() of %s: each component's result is %s, and Tack has no %s of %s of that shape to hold "
               "them (the vector and matrix types hold f32, f64 or i32); convert the argument first",
            n->name, TN(a[v]->ty), TN(st), c > 1 ? "matrix" : "vector", TN(st));
    L->C->uses_vec = 1;
    tk_ir *e = lw_mk(L, IR_VEC, ty_value(rt), n);
    for (int k = 0; k < len; k++) ir_push(L->C, e, out[k]);
    return e;
}

tk_ir *lw_call(lw_state *L, tack_node *n) {
    int discard = L->discard; /* the value is not used (an expression statement) */
    L->discard = 0;
    if (n->ival >= 0) return func_call(L, n);
    const char *name = n->name ? n->name : "";
    tk_ir *z = lw_complex_call(L, name, n);
    if (z) return z;
    if (lw_is_array_maker(n))
        ERR(n, "%s() makes a local array only as the whole value of an assignment to a name: x = %s(...)", name, name);
    if (!strcmp(name, "numpy.minimum") || !strcmp(name, "numpy.maximum")) {
        tk_intrinsic mm = {name + 6, TK_IK_MINMAX, name[8] == 'n' ? B_MIN : B_MAX, 2, 2, TK_MR_FLOAT};
        nargs_check(L, n, 2, 2);
        tk_ir *a[2] = {lw_expr(L, n->kids[0]), lw_expr(L, n->kids[1])};
        tk_ir *v = lw_elementwise(L, &mm, a, 2, n, np_minmax);
        return v ? v : np_minmax(L, &mm, a, 2, n);
    }
    tk_ir *rn = lw_numpy_call(L, name, n); /* round, np.round, np.square, np.power: lower_numpy.c */
    if (rn) return rn;
    if (!strncmp(name, "numpy.", 6)) { /* np.sqrt & co: NumPy's types for integers */
        const tk_intrinsic *in = tk_intrinsic_find(name + 6);
        if (!in || (in->kind != TK_IK_MATH && in->kind != TK_IK_ABS)) ERR(n, "unsupported function '%s'", name);
        nargs_check(L, n, in->min_args, in->max_args);
        tk_ir *a[3] = {NULL, NULL, NULL};
        int na = in->max_args < 3 ? in->max_args : 3;
        for (int j = 0; j < na; j++) a[j] = lw_expr(L, n->kids[j]);
        tk_ir *v = lw_elementwise(L, in, a, na, n, numpy_math);
        return v ? v : numpy_math(L, in, a, na, n);
    }
    const tk_intrinsic *in = tk_intrinsic_find(name);
    if (!in) {
        tk_ir *e = dtype_call(L, name, n);
        if (e) return e;
        ERR(n, "unsupported function '%s'", name);
    }
    if (in->kind == TK_IK_LOOP) ERR(n, "%s() is only supported as the iterable of a for loop", name);
    nargs_check(L, n, in->min_args, in->max_args);
    switch (in->kind) {
    case TK_IK_PRINT: return print_call(L, n);
    case TK_IK_LEN: return len_call(L, n);
    case TK_IK_ATOMIC: return atomic_call(L, in->sub, n, discard);
    case TK_IK_CAST: { /* float() is the default float (the table's F32 stands for it) */
        tack_dtype to = (tack_dtype)in->sub == TACK_F32 ? ty_default_float() : (tack_dtype)in->sub;
        return to_scalar_cast(L, lw_expr(L, n->kids[0]), ty_value(to), n);
    }
    case TK_IK_ABS: {
        tk_ir *x = lw_expr(L, n->kids[0]), *v = lw_elementwise(L, in, &x, 1, n, abs_scalar);
        return v ? v : abs_of(L, x, n);
    }
    case TK_IK_SEED: { /* a float -> u64 cast turns NaN into 0; Python's int(), and so the host, raise */
        tk_ir *e = lw_expr(L, n->kids[0]);
        if (lw_known(e) && ty_is_float(e->ty) && L->C->opts.checks) {
            e = lw_hoist(L, e);
            int site = lw_site(L, CK_STEP, n->line, 0, NULL, "cannot convert float NaN to integer");
            tk_type t = ty_concrete(e->ty); /* a Python float compares as an f64 */
            tk_ir *x = lw_cast(L, e, t), *same = lw_bin(L, B_EQ, ty_value(TACK_BOOL), x, x, n->line);
            same->aux_ty = t; /* x == x: false only for a NaN, and a false CK_STEP value fails */
            lw_check(L, CK_STEP, site, same, NULL, n->line);
        }
        return to_scalar_cast(L, e, ty_value((tack_dtype)in->sub), n);
    }
    case TK_IK_MINMAX: return minmax_call(L, in->sub, n);
    case TK_IK_VECBIN: return vecbin_call(L, in->sub, n);
    case TK_IK_VECMATH: return vecmath_call(L, in->sub, n);
    case TK_IK_LINALG: return lw_linalg_call(L, name, in->sub, n);
    case TK_IK_MATH: {
        tk_ir *a[3] = {NULL, NULL, NULL};
        for (int j = 0; j < in->max_args && j < 3; j++) a[j] = lw_expr(L, n->kids[j]);
        tk_ir *v = lw_elementwise(L, in, a, in->max_args, n, math_scalar);
        return v ? v : math_scalar(L, in, a, in->max_args, n);
    }
    case TK_IK_QUAT: return lw_quat_call(L, in->sub, n);
    case TK_IK_BLOCKOP:
        ERR(n, "tack.%s() is the whole value of an assignment to a name: r = tack.%s(v)", name, name);
    case TK_IK_BARRIER:
        if (!discard) ERR(n, "tack.barrier() is a statement and has no value");
        lw_barrier(L, n);
        return NULL;
    case TK_IK_LOOP: case TK_IK_COMPLEX: case TK_IK_ROUND: break;
    }
    ERR(n, "unsupported function '%s'", name);
}

static tk_ir *atomic_operand(lw_state *L, int which, tk_ir *v, tk_type vt, tack_node *n) {
    if (lw_known(v) && !ty_is_scalar(v->ty))
        ERR(n, "tack.atomic_%s() of %s into a %s element: the value must be a scalar", tk_atom_name(which),
            TN(v->ty), TN(vt));
    if (lw_known(v) && (which == A_AND || which == A_OR || which == A_XOR) && !ty_is_int(v->ty) && !ty_is_bool(v->ty))
        ERR(n, "tack.atomic_%s() of %s: and, or and xor are bitwise operations on integers (Python raises "
               "TypeError)", tk_atom_name(which), TN(v->ty));
    return lw_hoist(L, lw_cast(L, v, vt));
}

/* The value of an atomic on a vector or matrix element: one of the element's
 * type, one of its shape whose integer components a float element takes
 * exactly, or a number given to every component -- converted as `a[idx] + v`
 * would convert it (vector_binop, lower_expr.c), so a float is not truncated
 * into an integer vector and two precisions do not meet silently. */
static tk_ir *atomic_vec_operand(lw_state *L, int which, int p, tk_ir *v, tk_type vt, tack_node *n) {
    if (!lw_known(v)) return v;
    tack_dtype dt = (tack_dtype)vt.dt, comp = dt_scalar(dt);
    /* what the message calls the update: the call, or `a[...] += v` (its node is the augmented assignment) */
    const char *what = n->kind == TACK_N_CALL
                           ? tk_fmt(&L->C->arena, "tack.atomic_%s() of %s into a %s element", tk_atom_name(which),
                                    TN(v->ty), TN(vt))
                           : tk_fmt(&L->C->arena, "'%s[...] %s= ...' of %s on a %s element", L->S->pnames[p],
                                    which == A_SUB ? "-" : "+", TN(v->ty), TN(vt));
    if (v->ty.kind != TY_VALUE || ty_is_complex(v->ty) || ty_is_quat(v->ty) || ty_is_xform(v->ty))
        ERR(n, "%s: the value must be a %s or a number", what, TN(vt));
    if (!ty_is_scalar(v->ty)) {
        tack_dtype vd = (tack_dtype)v->ty.dt, vs = dt_scalar(vd);
        if (dt_rows(vd) != dt_rows(dt) || dt_cols(vd) != dt_cols(dt)) ERR(n, "%s: the shapes differ", what);
        if (vs != comp && !(dt_kind(comp) == TACK_KIND_FLOAT && dt_kind(vs) == TACK_KIND_INT))
            ERR(n, "%s: the component types differ (%s and %s); convert the value first, tack.%s(v)", what,
                dt_name(vs), dt_name(comp), dt_name(dt));
        return lw_hoist(L, lw_cast(L, v, vt));
    }
    if (dt_kind(comp) == TACK_KIND_INT && ty_is_float(v->ty))
        ERR(n, "%s: the float would be truncated to the %s components; convert it, int(s)", what, dt_name(comp));
    if (ty_is_bool(v->ty)) v = lw_pyint_of_bool(L, v, NULL);
    if (ty_is_int(v->ty) && dt_kind(comp) == TACK_KIND_INT) v = lw_pyint_narrow(L, v, ty_value(comp), n);
    return lw_hoist(L, lw_cast(L, lw_hoist(L, lw_cast(L, v, ty_value(comp))), vt)); /* one number, every component */
}

tk_ir *lw_atomic(lw_state *L, int which, int p, tack_node **idx, int nidx, tk_ir *val, tk_ir *exp, tack_node *n,
                 int want_value) {
    tk_type et = L->S->ptypes[p];
    tack_dtype dt = (tack_dtype)et.dt;
    int cplx = dt_kind(dt) == TACK_KIND_COMPLEX;
    int vec = ty_is_vector(ty_value(dt)) || ty_is_matrix(ty_value(dt));
    if (vec && which != A_ADD && which != A_SUB && which != A_MIN && which != A_MAX)
        ERR(n, "tack.atomic_%s() on %s array '%s': a %s element is updated one component at a time, so only "
               "atomic_add, atomic_sub, atomic_min and atomic_max take it (each component its own atomic); to "
               "%s one component, keep the components in an %s array with %s",
            tk_atom_name(which), dt_name(dt), L->S->pnames[p], dt_name(dt),
            which == A_EXCH || which == A_CAS ? "swap" : "update", dt_name(dt_scalar(dt)),
            dt_cols(dt) == 1 ? "one more axis" : "two more axes");
    if (dt == TACK_BOOL || dt_is_half(dt) || (!vec && dt_rows(dt) * dt_cols(dt) > 1))
        ERR(n, "atomic operations on %s elements are not supported", dt_name(dt));
    if (cplx && (which == A_MIN || which == A_MAX))
        ERR(n, "atomic min and max of %s elements: complex numbers have no order", dt_name(dt));
    if (cplx && which != A_ADD && which != A_SUB)
        ERR(n, "tack.atomic_%s() of %s elements: a complex element is two floats, and only an add or a subtract "
               "can update both parts atomically", tk_atom_name(which), dt_name(dt));
    if ((which == A_AND || which == A_OR || which == A_XOR) && dt_kind(dt) != TACK_KIND_INT &&
        dt_kind(dt) != TACK_KIND_UINT)
        ERR(n, "tack.atomic_%s() on %s array '%s': and, or and xor are bitwise operations, for integer arrays only",
            tk_atom_name(which), dt_name(dt), L->S->pnames[p]);
    tk_type vt = ty_value(dt);
    val = vec ? atomic_vec_operand(L, which, p, val, vt, n) : atomic_operand(L, which, val, vt, n);
    if (exp) exp = atomic_operand(L, which, exp, vt, n);
    tk_ir *a = lw_mk(L, IR_ATOMIC, vt, n);
    a->sub = (uint8_t)which;
    a->param = p;
    ir_push(L->C, a, val);
    if (exp) ir_push(L->C, a, exp); /* A_CAS: [value, expected, idx...] */
    lw_indices(L, p, idx, nidx, a, n);
    lw_mark_written(L, p);
    L->C->uses_atomic = 1;
    L->C->atomic_dts |= (uint64_t)1 << dt;
    if (vec) { /* a component at a time: the component type's atomics (OpenCL's 64-bit ones for vec3d) */
        L->C->atomic_dts |= (uint64_t)1 << dt_scalar(dt);
        L->C->uses_vec = 1;
    }
    if (!want_value) { /* a statement: privatize.c may turn it into a per-chunk sum */
        tk_ir *ev = lw_mk(L, IR_EVAL, ty_void(), n);
        lw_emit(L, lw_kid(L, ev, a));
        return NULL;
    }
    int t = lw_temp(L, vt);
    lw_emit(L, lw_assign_ir(L, t, a, n->line));
    return lw_local_ref(L, t, n->line);
}

