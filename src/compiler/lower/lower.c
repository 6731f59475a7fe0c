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
 *
 * The files of lowering, which share the context lw_state and the helpers declared
 * in lower.h:
 *
 *   lower.c       this essay; the helpers every part uses (building IR, casts,
 *                 truth values, temporaries, check sites); prescan, which
 *                 creates every local in its scope before lowering; and the
 *                 driver: the fixed point per function, specialization of
 *                 @tack.func per argument types, the kernel's signature
 *   lower_expr.c  expressions: operators and promotion, comparisons,
 *                 and/or and conditional expressions, indexing, attributes
 *   lower_call.c  calls: intrinsics and @tack.func calls
 *   lower_stmt.c  statements: assignments and type widening, if, return,
 *                 assert, break/continue; blocks
 *   lower_loop.c  loops: parallel and serial for over range and ndrange; while
 *   lower_local.c local arrays (x = np.zeros(8)): creation, indexing, stores
 */
#include <string.h>

#include "compiler/compiler.h"

#include "compiler/lower/lower.h"

/* ------------------------------------------------------------ helpers */
tk_ir *lw_mk(lw_state *L, int op, tk_type ty, tack_node *n) { return ir_new(L->C, op, ty, n ? n->line : 0); }
void lw_emit(lw_state *L, tk_ir *s) {
    if (s->op == IR_ASSIGN || s->op == IR_LFILL) lw_da_set(L, s->local); /* unbound.c */
    ir_push(L->C, L->blk, s);
}
tk_ir *lw_kid(lw_state *L, tk_ir *p, tk_ir *k) { ir_push(L->C, p, k); return p; }
tk_ir *lw_unknown(lw_state *L, tack_node *n) { return lw_mk(L, IR_CONST, ty_unknown(), n); }

int lw_find_local_in(tk_spec *S, const char *name, int scope) {
    for (int i = 0; i < S->nlocals; i++)
        if (S->locals[i].scope == scope && S->locals[i].name && strcmp(S->locals[i].name, name) == 0) return i;
    return -1;
}

/* The local a name read at this point refers to: the current parallel loop's, else the frame's. */
int lw_lookup(lw_state *L, const char *name) {
    int i = -1;
    if (L->pfor >= 0) i = lw_find_local_in(L->S, name, L->pfor);
    if (i < 0) i = lw_find_local_in(L->S, name, -1);
    return i;
}

int lw_array_param(lw_state *L, const char *name) {
    for (int i = 0; i < L->S->nparams; i++)
        if (L->S->ptypes[i].kind == TY_ARRAY && strcmp(L->S->pnames[i], name) == 0) return i;
    return -1;
}

tk_ir *lw_local_ref(lw_state *L, int loc, int line) {
    tk_ir *e = ir_new(L->C, IR_LOCAL, L->S->locals[loc].ty, line);
    e->local = loc;
    return e;
}

int lw_temp(lw_state *L, tk_type ty) {
    int t = tk_new_local(L->C, L->S, tk_fmt(&L->C->arena, "_t%d", L->ntemps++), ty, L->pfor);
    L->S->locals[t].declared = 1;
    return t;
}

tk_ir *lw_assign_ir(lw_state *L, int loc, tk_ir *v, int line) {
    tk_ir *a = ir_new(L->C, IR_ASSIGN, ty_void(), line);
    a->local = loc;
    ir_push(L->C, a, v);
    return a;
}

/* Evaluate e once into a temporary unless it is cheap and pure to repeat. */
tk_ir *lw_hoist(lw_state *L, tk_ir *e) {
    if (ir_is_simple(e) || e->ty.kind == TY_UNKNOWN) return e;
    int t = lw_temp(L, e->ty);
    lw_emit(L, lw_assign_ir(L, t, e, e->line));
    return lw_local_ref(L, t, e->line);
}

int lw_known(tk_ir *e) { return e->ty.kind != TY_UNKNOWN; }

/* A Python int parameter (local `loc`) meets fixed-width type dt: the launch
 * checks that the argument fits, as NumPy 2 raises OverflowError for a
 * Python int that does not (driver.c copies the range into the program). */
void lw_int_range(tack_dtype dt, int64_t *lo, int64_t *hi) {
    int bits = dt_bits(dt);
    if (dt_kind(dt) == TACK_KIND_UINT) {
        *lo = 0;
        *hi = bits == 64 ? INT64_MAX : (int64_t)(((uint64_t)1 << bits) - 1);
    } else {
        *lo = bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
        *hi = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
    }
}

static void narrow_param(tk_spec *S, int loc, tack_dtype dt) {
    int64_t lo, hi;
    lw_int_range(dt, &lo, &hi);
    for (int p = 0; p < S->nparams; p++) {
        if (S->plocal[p] != loc) continue;
        if (lo > S->plo[p]) S->plo[p] = lo, S->pdt[p] = dt;
        if (hi < S->phi[p]) S->phi[p] = hi, S->pdt[p] = dt;
    }
}

/* A weak float computed at run time (Python float arguments, arithmetic on
 * them) meeting f32 is computed in f32: the conversion moves to its leaves,
 * so `(x[i] - lo) / (hi - lo)` with f32 x and Python floats lo, hi
 * subtracts in f32 and needs no double (a GPU without fp64 runs it).  It
 * differs from NumPy, which computes `hi - lo` in f64 and rounds once, by
 * the rounding of the operands (docs/language.md, "Differences from
 * NumPy").  Meeting f64 it stays as it is: f64 arithmetic, NumPy's.
 * An expression of literals alone (`1e300 * 1e-300`, `1e300 % -2**63`, a
 * conditional picking between such) is no value known at run time: it is
 * Python's, computed in f64 and rounded once where it meets f32, as debug
 * mode and NumPy compute it (in f32 it was inf * 0, a NaN). */
int lw_literal_tree(const tk_ir *e) {
    if (e->op == IR_CONST) return 1;
    if (e->ty.kind != TY_VALUE || !e->ty.weak) return 0;
    if (e->op == IR_SELECT && e->n == 3) return lw_literal_tree(e->k[1]) && lw_literal_tree(e->k[2]);
    if (e->op != IR_BIN && e->op != IR_UN && e->op != IR_CAST) return 0;
    if (e->op == IR_BIN && (e->sub > B_MAX || e->sub == B_MATMUL)) return 0;
    for (int i = 0; i < e->n; i++)
        if (!e->k[i] || !lw_literal_tree(e->k[i])) return 0;
    return e->n > 0;
}

/* Whether weak_to_f32 computes the weak float e in f32 (an operation on run-time values), rather
 * than rounding its f64 value (a literal expression; a leaf: an argument, a local). */
int lw_weak_recomputed(const tk_ir *e) {
    if (e->ty.kind != TY_VALUE || !e->ty.weak || e->ty.dt != TACK_F64 || lw_literal_tree(e)) return 0;
    if (e->op == IR_BIN) return e->sub <= B_MAX && e->n == 2 && e->sub != B_MATMUL;
    if (e->op == IR_UN) return (e->sub == U_NEG || e->sub == U_ABS) && e->n == 1 && !ty_is_complex(e->k[0]->ty);
    if (e->op == IR_SELECT) return e->n == 3;
    if (e->op == IR_MATH) return !tk_math_is_predicate(e->sub) && ty_eq(e->aux_ty, e->ty);
    return 0;
}

static tk_ir *weak_to_f32(lw_state *L, tk_ir *e, tk_type to) {
    int weakf = e->ty.kind == TY_VALUE && e->ty.weak && e->ty.dt == TACK_F64;
    if (weakf && lw_literal_tree(e)) {
        tk_ir *c = ir_new(L->C, IR_CAST, to, e->line);
        return lw_kid(L, c, e);
    }
    if (weakf && e->op == IR_BIN && e->sub <= B_MAX && e->n == 2 && e->sub != B_MATMUL) {
        tk_ir *b = lw_bin(L, e->sub, to, weak_to_f32(L, e->k[0], to), weak_to_f32(L, e->k[1], to), e->line);
        b->aux = e->aux;
        return b;
    }
    /* abs() of a Python complex is a weak float too, but its operand is a
     * complex: that is computed in its carrier, complex128, as every weak
     * complex is (lw_complex_cast), and only the result is rounded. */
    if (weakf && e->op == IR_UN && (e->sub == U_NEG || e->sub == U_ABS) && e->n == 1 && !ty_is_complex(e->k[0]->ty)) {
        tk_ir *u = ir_new(L->C, IR_UN, to, e->line);
        u->sub = e->sub;
        return lw_kid(L, u, weak_to_f32(L, e->k[0], to));
    }
    if (weakf && e->op == IR_SELECT && e->n == 3) {
        tk_ir *c = ir_new(L->C, IR_SELECT, to, e->line);
        lw_kid(L, c, e->k[0]);
        lw_kid(L, c, weak_to_f32(L, e->k[1], to));
        return lw_kid(L, c, weak_to_f32(L, e->k[2], to));
    }
    if (weakf && e->op == IR_MATH && !tk_math_is_predicate(e->sub) && ty_eq(e->aux_ty, e->ty)) {
        tk_ir *m = ir_new(L->C, IR_MATH, to, e->line);
        m->sub = e->sub;
        m->aux_ty = to;
        for (int i = 0; i < e->n; i++) lw_kid(L, m, weak_to_f32(L, e->k[i], to));
        return m;
    }
    if (weakf && e->op == IR_CAST && e->n == 1 && e->k[0]->ty.kind == TY_VALUE && e->k[0]->ty.weak)
        return lw_cast(L, e->k[0], to); /* a weak int made a weak float: straight to f32 */
    tk_ir *c = ir_new(L->C, IR_CAST, to, e->line);
    return lw_kid(L, c, e);
}

tk_ir *lw_cast(lw_state *L, tk_ir *e, tk_type to) {
    if (e->ty.kind == TY_UNKNOWN || to.kind == TY_UNKNOWN) {
        if (to.kind == TY_UNKNOWN) return e;
        tk_ir *c = ir_new(L->C, IR_CAST, to, e->line);
        return lw_kid(L, c, e);
    }
    if (ty_eq(e->ty, to)) return e;
    if (ty_is_complex(to) || ty_is_complex(e->ty)) return lw_complex_cast(L, e, to);
    if (dt_form((tack_dtype)to.dt) || (e->ty.kind == TY_VALUE && dt_form((tack_dtype)e->ty.dt)))
        if (to.kind == TY_VALUE) return lw_quat_cast(L, e, to);
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
            int cols = dt_cols((tack_dtype)e->ty.dt); /* a matrix's entry is [row, column], a vector's [k] */
            for (int i = 0; i < n; i++) {
                tk_ir *c = ir_new(L->C, IR_COMP, scomp, e->line);
                ir_push(L->C, c, src);
                ir_push(L->C, c, ir_const_i(L->C, ty_value(TACK_I64), cols > 1 ? i / cols : i, e->line));
                if (cols > 1) ir_push(L->C, c, ir_const_i(L->C, ty_value(TACK_I64), i % cols, e->line));
                ir_push(L->C, v, lw_cast(L, c, comp));
            }
        }
        return v;
    }
    if (!ty_is_scalar(e->ty)) return e;
    if (e->op == IR_CONST && e->ty.weak && e->ty.dt == TACK_I64 && ty_is_int(to) && !to.weak) {
        /* A Python int literal meeting a fixed-width type: NumPy 2 raises
         * OverflowError when it does not fit; here that is a compile error. */
        int bits = dt_bits((tack_dtype)to.dt);
        int64_t v = e->c.i;
        int fits = dt_kind((tack_dtype)to.dt) == TACK_KIND_UINT
                       ? v >= 0 && (bits == 64 || (uint64_t)v < ((uint64_t)1 << bits))
                       : bits == 64 || (v >= -((int64_t)1 << (bits - 1)) && v < ((int64_t)1 << (bits - 1)));
        if (!fits)
            tk_error(L->C, L->fidx, e->line, 0, "Python integer %lld is out of bounds for %s (NumPy 2 raises "
                     "OverflowError); write a value in range", (long long)v, dt_name((tack_dtype)to.dt));
    }
    lw_pyint_fits(L, e, to); /* 2**63 .. 2**64 - 1: u64 only */
    if (to.kind == TY_VALUE && !to.weak && to.dt == TACK_F32 && e->op != IR_CONST && e->ty.weak && e->ty.dt == TACK_F64)
        return weak_to_f32(L, e, to);
    if (e->op == IR_LOCAL && e->ty.weak && e->ty.dt == TACK_I64 && ty_is_int(to) && !to.weak && L->S->plo)
        narrow_param(L->S, e->local, (tack_dtype)to.dt);
    tk_ir *c = ir_new(L->C, IR_CAST, to, e->line);
    return lw_kid(L, c, e);
}

tk_ir *lw_truth(lw_state *L, tk_ir *e, tack_node *n) {
    if (!lw_known(e)) return lw_cast(L, e, ty_value(TACK_BOOL));
    if (ty_is_bool(e->ty)) return e->ty.weak ? lw_cast(L, e, ty_value(TACK_BOOL)) : e;
    if (!ty_is_scalar(e->ty)) ERR(n, "the truth value of a %s is ambiguous", TN(e->ty));
    tk_ir *u = lw_mk(L, IR_UN, ty_value(TACK_BOOL), n);
    u->sub = U_TRUTH;
    return lw_kid(L, u, e);
}

/* Record the type of an and/or operand or a conditional expression (tk_choice);
 * a pass of the fixed point starts the list afresh, so the final pass's stays. */
void lw_choice(lw_state *L, tack_node *n, int k, tk_type ty, int local) {
    tk_spec *S = L->S;
    for (int i = 0; i < S->nchoices; i++) {
        tk_choice *c = &S->choices[i];
        if (c->line == n->line && c->col == n->col && c->k == k) {
            c->ty = ty;
            c->local = local;
            return;
        }
    }
    if (S->nchoices == S->capchoices) {
        int cap = S->capchoices ? S->capchoices * 2 : 8;
        tk_choice *nc = tk_alloc(&L->C->arena, (size_t)cap * sizeof *nc);
        if (S->nchoices) memcpy(nc, S->choices, (size_t)S->nchoices * sizeof *nc);
        S->choices = nc;
        S->capchoices = cap;
    }
    S->choices[S->nchoices++] = (tk_choice){n->line, n->col, k, local, ty};
}

int lw_site(lw_state *L, int kind, int line, int axis, const char *array, const char *msg) {
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

void lw_check(lw_state *L, int kind, int site, tk_ir *a, tk_ir *b, int line) {
    tk_ir *c = ir_new(L->C, IR_CHECK, ty_void(), line);
    c->sub = (uint8_t)kind;
    c->aux = site;
    ir_push(L->C, c, a);
    if (b) ir_push(L->C, c, b);
    lw_emit(L, c);
}

tk_type lw_dtype_type(tack_dtype dt) {
    if (dt_is_half(dt)) return ty_value(TACK_F32);
    return ty_value(dt);
}

/* ------------------------------------------------------------ prescan */
/* Create the locals a function assigns, in their scopes, before lowering. */
static void declare(lw_state *L, tack_node *t, int scope, tk_type decl, int declared) {
    if (!t) return;
    if (t->kind == TACK_N_TUPLE) {
        for (int i = 0; i < t->nkids; i++) declare(L, t->kids[i], scope, ty_unknown(), 0);
        return;
    }
    if (t->kind != TACK_N_NAME || !t->name) return;
    if (lw_array_param(L, t->name) >= 0) ERR(t, "cannot assign to array parameter '%s'", t->name);
    int i = lw_find_local_in(L->S, t->name, scope);
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

static tk_type annotation_type(lw_state *L, tack_node *a) {
    if (!a) return ty_unknown();
    if (a->kind != TACK_N_TYPE || a->ival < 0 || a->ival >= TACK_DTYPE_COUNT) ERR(a, "unsupported annotation (use a tack dtype such as tack.f32)");
    return lw_dtype_type((tack_dtype)a->ival);
}

static void prescan(lw_state *L, tack_node *n, int scope) {
    if (!n) return;
    switch (n->kind) {
    case TACK_N_BLOCK:
        for (int i = 0; i < n->nkids; i++) {
            tack_node *s = n->kids[i];
            if (L->is_kernel && scope == -1 && s && s->kind == TACK_N_FOR && s->nkids == 3 && n == L->F->body &&
                (lw_is_range_call(s->kids[1], "range") || lw_is_range_call(s->kids[1], "ndrange") ||
                 lw_is_range_call(s->kids[1], "independent") || lw_is_range_call(s->kids[1], "blocks"))) {
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
        if (n->nkids >= 4 && n->kids[3]->kind == TACK_N_CONST_STR && n->kids[0]->kind == TACK_N_NAME) {
            /* a rewrite's local, with the words messages name it by (frontend.c, st_annassign) */
            int i = lw_find_local_in(L->S, n->kids[0]->name, scope);
            if (i >= 0) L->S->locals[i].shown = n->kids[3]->name;
        }
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
    lw_state l;
    memset(&l, 0, sizeof l);
    lw_state *L = &l;
    L->C = C;
    L->S = S;
    L->F = F;
    L->fidx = S->func;
    L->is_kernel = is_kernel;
    L->pfor = -1;
    if (!F->body) ERR((tack_node *)NULL, "function '%s' has no body", F->name);
    /* scalar parameters are locals of the frame */
    S->plocal = tk_alloc(&C->arena, sizeof(int) * (size_t)(S->nparams + 1));
    S->plo = tk_alloc(&C->arena, sizeof(int64_t) * (size_t)(S->nparams + 1));
    S->phi = tk_alloc(&C->arena, sizeof(int64_t) * (size_t)(S->nparams + 1));
    S->pdt = tk_alloc(&C->arena, sizeof(int) * (size_t)(S->nparams + 1));
    for (int i = 0; i < S->nparams; i++) {
        S->plocal[i] = -1;
        S->plo[i] = INT64_MIN;
        S->phi[i] = INT64_MAX;
        S->pdt[i] = TACK_DTYPE_COUNT;
        if (S->ptypes[i].kind == TY_ARRAY) continue;
        int loc = tk_new_local(C, S, S->pnames[i], S->ptypes[i], -1);
        S->locals[loc].is_param = 1;
        S->plocal[i] = loc;
    }
    prescan(L, F->body, -1);
    S->nbase = S->nlocals;
    if (!is_kernel && S->par) lw_par_own_vars(L);
    if (!is_kernel) {
        S->ret = F->returns ? annotation_type(L, F->returns) : ty_unknown();
    }
    int final = 0;
    for (int pass = 0;; pass++) {
        if (pass > 24) ERR(F->body, "type inference of '%s' did not converge", F->name);
        S->nlocals = S->nbase;
        S->nchoices = 0;
        S->written = 0;
        L->ntemps = 0;
        L->npfor = 0;
        L->changed = 0;
        L->infer = !final;
        L->depth = 0;
        L->loops = 0;
        for (int i = 0; i < S->nlocals; i++) S->locals[i].read = 0;
        lw_unbound_begin(L);
        tk_ir *body = ir_new(C, IR_BLOCK, ty_void(), F->body->line);
        lw_block_into(L, F->body, body);
        if (!final) {
            if (!L->changed) final = 1;
            continue;
        }
        if (L->changed) {
            final = 0;
            continue;
        }
        lw_unbound_finish(L, body);
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

static int par_match(const tk_spec *S, const tk_spec *par) {
    if (S->par != par->par || S->npar_own != par->npar_own || S->plarr != par->plarr) return 0;
    for (int d = 0; d < S->npar_own; d++)
        if (S->par_own[d] != par->par_own[d]) return 0;
    return 1;
}

tk_spec *lw_specialize(tk_cc *C, int func, tk_type *ptypes, int nparams, const tk_spec *par, tack_node *at) {
    for (int i = 1; i < C->nspecs; i++) {
        tk_spec *S = C->specs[i];
        if (S->func == func && S->nparams == nparams && types_match(S->ptypes, ptypes, nparams) && par_match(S, par)) {
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
            S->ptypes[i] = dt_is_half(a->ival) ? ty_value(TACK_F32) : ty_value((tack_dtype)a->ival);
        }
    }
    S->par = par->par;
    S->npar_own = par->npar_own;
    S->plarr = par->plarr;
    memcpy(S->par_own, par->par_own, sizeof S->par_own);
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
            S->ptypes[i] = (tk_type){TY_ARRAY, (uint8_t)a->dtype, (uint8_t)a->ndim, 0, a->strided != 0};
        } else {
            if (dt_rows(a->dtype) * dt_cols(a->dtype) > 1) tk_error(C, kernel, F->first_line, 0, "vector and matrix scalar arguments are not supported ('%s')", S->pnames[i]);
            tk_type t;
            if (a->weak) {
                tack_scalar_kind k = dt_kind(a->dtype);
                t = ty_weak(k == TACK_KIND_BOOL    ? TACK_BOOL
                             : k == TACK_KIND_FLOAT   ? TACK_F64
                             : k == TACK_KIND_COMPLEX ? TACK_C128
                                                      : TACK_I64);
            } else {
                t = lw_dtype_type(a->dtype);
            }
            if (an) {
                tk_type at = lw_dtype_type((tack_dtype)an->ival);
                if (t.weak && dt_kind(a->dtype) == TACK_KIND_COMPLEX && !ty_is_complex(at))
                    tk_error(C, kernel, an->line, an->col + 1, "parameter '%s' is annotated %s but the argument is a "
                             "complex (Python): a complex never becomes a real number implicitly",
                             S->pnames[i], dt_name((tack_dtype)an->ival));
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
