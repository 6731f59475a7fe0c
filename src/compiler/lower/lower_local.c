/*
 * lower_local.c -- local arrays: `x = np.zeros(8)` inside a kernel or a
 * @tack.func, for filter taps, small matrices and per-iteration scratch.
 *
 * Part of lowering (lower.c has the essay).  A local array is a local of
 * type TY_ARRAY whose extents are constants known here (tk_local.ashape):
 * the shape must be an int literal, a module-level int constant (the front
 * end hands those over as constants) or arithmetic on them, so the array
 * has a fixed size and lives on the stack (C) or in registers / private
 * memory (CUDA, HIP, OpenCL) with no allocation at run time.  Each dialect
 * declares it as a one-dimensional array of all its elements, zeroed, at
 * the top of its scope (emit_stmt.c), and indexes it row-major.
 *
 * The creation `x = np.zeros(...)` is an IR_LFILL statement that sets every
 * element where it stands, so an array created in a loop's body starts
 * afresh in each iteration, as NumPy's would.  np.empty fills with zeros
 * too: no stack garbage is ever read.  Elements are read with IR_LLOAD and
 * written with IR_LSTORE; indices are checked against the constant extents
 * (negative ones count from the end, through IR_WRAP with param -1 and the
 * extent in c.i) exactly as an array parameter's are, and a failed check
 * raises the same IndexError.
 *
 * Privacy follows the locals' scopes: an array created inside a parallel
 * loop belongs to one iteration.  One created before the loop may be read
 * inside it (every thread reads the one copy, or its own copy on a GPU, see
 * layout_grid.c), but writing it there would be a race between iterations,
 * which is certain, so it is a compile error here rather than a question
 * for depend.c.  A local array is not a value: it cannot be assigned to
 * another name or returned (compile errors).
 *
 * It can be passed to a @tack.func, by reference as NumPy passes arrays:
 * the call's argument is an IR_LARRAY, emitted as the array's storage and
 * its constant extents, so the callee sees an ordinary array parameter
 * (indexing with the same checks, len, .shape, writes the caller sees).
 * The specialization records which parameters receive local arrays
 * (tk_spec.plarr): their storage is private, so on OpenCL the parameter
 * is a private pointer, a += there is no atomic, atomics on it are
 * refused, and depend.c maps the parameter to no kernel array -- writes
 * through it are not races, which is sound because a call that writes a
 * local array created before the parallel loop is refused here, as a
 * direct write is.
 *
 * Elements may be vectors and matrices (tack.zeros(4, tack.vec3)): the
 * array is then one of the dialect's vector structs, the type an array
 * parameter's elements have, so loads, stores, calls and the GPU frame
 * copy are unchanged.  The fill follows NumPy's (n, 3) array: ones and a
 * number give every component that value; a value of the element's shape
 * fills each element (vector_fill); anything else is refused by name.
 *
 * Lowering an index or a value may add temporaries to the locals, which
 * moves them: a pointer to a tk_local is taken again after it.
 *
 * A float16 array is what a float16 array parameter is: a storage type.
 * Its elements are held as their bits (uint16_t in every dialect), a load
 * widens one to f32 exactly (tk_h2f) and a store rounds the f32 value to
 * the nearest f16, ties to even (tk_f2h): lowering types its loads and
 * stores f32 (lw_dtype_type) and the emitter adds the conversions, so a
 * function it is passed to sees the same bits an f16 parameter has.  A
 * float64 is stored as it is and rounded once (tk_d2h), a float64 constant
 * rounded here (lw_half_value), for parameters' f16 elements too.  A
 * bfloat16 array is the same with tk_b2f, tk_f2b and tk_d2b.
 *
 * Sizes are bounded, since the array is on a thread's stack: by the
 * target's local_array_bytes (target.h; 16 KiB per array on the CPU and
 * 4 KiB on GPUs, where a larger one spills from registers into slow local
 * memory); an element counts its whole itemsize (12 bytes for a vec3, 2 for
 * an f16).
 */
#include <math.h>
#include <string.h>

#include "compiler/lower/lower.h"
#include "compiler/target.h"

/* For the message that refuses a large array: the first target whose bound differs (NULL: none). */
static const tk_target *other_bound(const tk_target *T) {
    for (int i = 0; tk_target_at(i); i++)
        if (tk_target_at(i)->local_array_bytes != T->local_array_bytes) return tk_target_at(i);
    return NULL;
}

int lw_local_array(lw_state *L, const char *name) {
    int loc = name ? lw_lookup(L, name) : -1;
    return loc >= 0 && L->S->locals[loc].ty.kind == TY_ARRAY ? loc : -1;
}

static const char *const makers[] = {"numpy.zeros", "numpy.ones", "numpy.empty", "numpy.full",
                                     "tack.zeros",  "tack.ones",  "tack.empty",  "tack.full", "tack.shared"};

int lw_is_array_maker(const tack_node *n) {
    if (!n || n->kind != TACK_N_CALL || n->ival != -1 || !n->name) return 0;
    for (size_t i = 0; i < sizeof makers / sizeof makers[0]; i++)
        if (!strcmp(n->name, makers[i])) return 1;
    return 0;
}

/* ------------------------------------------------------------- creation */
/* The value of a constant integer expression, or 0 when `n` is not one. */
int lw_const_int(const tack_node *n, int64_t *out) {
    int64_t a, b;
    switch (n->kind) {
    case TACK_N_CONST_INT:
        if (n->is_uint) return 0;
        *out = n->ival;
        return 1;
    case TACK_N_UNARYOP:
        if (n->nkids != 1 || !lw_const_int(n->kids[0], &a)) return 0;
        if (n->op == TACK_OP_POS) { *out = a; return 1; }
        if (n->op == TACK_OP_NEG && a != INT64_MIN) { *out = -a; return 1; }
        return 0;
    case TACK_N_BINOP:
        if (n->nkids != 2 || !lw_const_int(n->kids[0], &a) || !lw_const_int(n->kids[1], &b)) return 0;
        switch (n->op) {
        case TACK_OP_ADD: return !__builtin_add_overflow(a, b, out);
        case TACK_OP_SUB: return !__builtin_sub_overflow(a, b, out);
        case TACK_OP_MUL: return !__builtin_mul_overflow(a, b, out);
        case TACK_OP_FLOORDIV:
        case TACK_OP_MOD: {
            if (b == 0 || (a == INT64_MIN && b == -1)) return 0;
            int64_t q = a / b, r = a % b;
            if (r != 0 && ((r < 0) != (b < 0))) { q -= 1; r += b; }
            *out = n->op == TACK_OP_FLOORDIV ? q : r;
            return 1;
        }
        case TACK_OP_POW: {
            if (b < 0 || b > 62) return 0;
            int64_t r = 1;
            for (int64_t i = 0; i < b; i++)
                if (__builtin_mul_overflow(r, a, &r)) return 0;
            *out = r;
            return 1;
        }
        default: return 0;
        }
    default: return 0;
    }
}

/* The constant extent `n` of the shape of `what`. */
static int64_t extent(lw_state *L, const tack_node *n, const char *what) {
    int64_t v;
    if (!lw_const_int(n, &v)) {
        if (n->kind == TACK_N_NAME)
            ERR(n, "the shape of local array '%s' must be a compile-time constant, and '%s' is a variable: "
                   "use an int literal or a module-level int constant", what, n->name);
        ERR(n, "the shape of local array '%s' must be a compile-time constant (int literals, module-level "
               "int constants and arithmetic on them), and this expression is not one", what);
    }
    if (v < 0) ERR(n, "negative dimensions are not allowed (local array '%s' has an extent %lld)", what, (long long)v);
    return v;
}

/* The dtype of a maker call's array: the TYPE argument when given, else
 * NumPy's default (float64; np.full: the fill value's type) or Tack's
 * (f32; tack.full: bool, i64 or f32 by the value's kind), as outside. */
static int maker_dtype(lw_state *L, const tack_node *call, int numpy, tk_ir *fill, const char *what) {
    int full = strstr(call->name, ".full") != NULL;
    int nargs = full ? 2 : 1;
    int dt;
    if (call->nkids > nargs) {
        const tack_node *d = call->kids[nargs];
        if (d->kind == TACK_N_ATTRIBUTE && d->nkids == 1 && d->kids[0]->kind == TACK_N_NAME) { /* x.dtype */
            const char *x = d->kids[0]->name;
            int p = lw_array_param(L, x), la = lw_local_array(L, x);
            if (p < 0 && la < 0) ERR(d, "'%s' is not an array: the dtype of a local array must be a constant or an array's dtype", x);
            dt = p >= 0 ? L->S->ptypes[p].dt : L->S->locals[la].ty.dt;
        } else if (d->kind != TACK_N_TYPE || d->ival < 0 || d->ival >= TACK_DTYPE_COUNT) ERR(d, "bad dtype of local array '%s'", what);
        else dt = (int)d->ival;
    } else if (!full) {
        dt = numpy ? TACK_F64 : TACK_F32;
    } else {
        if (!lw_known(fill)) return -1;
        if (ty_is_vector(fill->ty) || ty_is_matrix(fill->ty)) /* as outside, where NumPy broadcasts it over the shape */
            ERR(call, "local array '%s': %s.full() of a %s value needs a dtype (tack.%s), as outside a kernel",
                what, numpy ? "np" : "tack", TN(fill->ty), TN(fill->ty));
        if (fill->ty.kind != TY_VALUE || !ty_is_scalar(fill->ty)) ERR(call, "local array '%s' cannot be filled with %s", what, TN(fill->ty));
        tack_scalar_kind k = dt_kind((tack_dtype)fill->ty.dt);
        if (k == TACK_KIND_BOOL) dt = TACK_BOOL;
        else if (numpy && !fill->ty.weak) dt = fill->ty.dt;
        else if (k == TACK_KIND_COMPLEX && numpy) dt = TACK_C128;
        else if (k == TACK_KIND_COMPLEX)
            ERR(call, "local array '%s': tack.full() of a complex value needs a dtype (tack.complex64 or tack.complex128), "
                      "as outside a kernel", what);
        else if (k == TACK_KIND_FLOAT) dt = numpy ? TACK_F64 : TACK_F32;
        else dt = TACK_I64;
    }
    lw_uses_half(L, dt); /* f16, bf16: stored as its bits, as such an array parameter is */
    if (dt >= TACK_VEC2 && dt <= TACK_MAT44D) L->C->uses_vec = 1; /* vector and matrix elements (below) */
    if (dt_form(dt)) L->C->uses_vec = L->C->uses_quat = 1; /* quaternions, transforms */
    return dt;
}

/* The fill value of a vector or matrix local array of element type et:
 * a number, given to every component (NumPy broadcasts it over the (n, 3)
 * array), or a vector or matrix of the element's shape, its components
 * converted (as tack.full outside converts a sequence).  Anything else --
 * a vec2 for a vec3, a vector for a matrix, a complex number -- is an
 * error naming the value's type. */
static tk_ir *vector_fill(lw_state *L, tk_ir *fill, tk_type et, tack_node *call, const char *what) {
    tack_dtype ed = (tack_dtype)et.dt, fd = (tack_dtype)fill->ty.dt;
    if (fill->ty.kind == TY_VALUE && ty_is_scalar(fill->ty) && !ty_is_complex(fill->ty)) return lw_cast(L, fill, et);
    if (fill->ty.kind == TY_VALUE && !ty_is_scalar(fill->ty) && dt_rows(fd) == dt_rows(ed) && dt_cols(fd) == dt_cols(ed))
        return lw_cast(L, fill, et);
    ERR(call, "local array '%s' of %s cannot be filled with %s: its fill value is a real number, given to every "
              "component, or %s", what, dt_name(ed), TN(fill->ty),
        ty_is_matrix(et) ? tk_fmt(&L->C->arena, "a %d x %d matrix", dt_rows(ed), dt_cols(ed))
                         : tk_fmt(&L->C->arena, "a vector of %d components", dt_rows(ed)));
}

void lw_create_array(lw_state *L, tack_node *t, tack_node *call) {
    int numpy = !strncmp(call->name, "numpy.", 6);
    const char *fn = strchr(call->name, '.') + 1;
    if (t->kind != TACK_N_NAME || !t->name)
        ERR(t, "a local array must be assigned to a name of its own: x = %s.%s(...)", numpy ? "np" : "tack", fn);
    const char *what = t->name;
    int loc = lw_target_local(L, t);
    tk_local *l = &L->S->locals[loc];
    if (l->ty.kind == TY_VALUE || l->declared)
        ERR(t, "'%s' is a local array here and a %s elsewhere; give the array a name of its own", what, TN(l->ty));
    if (call->nkids < 1) ERR(call, "%s() needs a shape", call->name);
    /* the shape */
    const tack_node *sh = call->kids[0];
    int nd = sh->kind == TACK_N_TUPLE ? sh->nkids : 1;
    if (nd < 1) ERR(sh, "local array '%s' needs at least one dimension", what);
    if (nd > TACK_MAX_NDIM) ERR(sh, "local array '%s' has %d dimensions (at most %d)", what, nd, TACK_MAX_NDIM);
    int64_t shape[TACK_MAX_NDIM], elems = 1;
    for (int k = 0; k < nd; k++) {
        shape[k] = extent(L, sh->kind == TACK_N_TUPLE ? sh->kids[k] : sh, what);
        if (__builtin_mul_overflow(elems, shape[k], &elems)) elems = INT64_MAX;
    }
    /* the value every element starts with */
    int full = !strcmp(fn, "full");
    tk_ir *fill = full ? lw_expr(L, call->kids[1]) : NULL;
    l = &L->S->locals[loc]; /* lowering the value may have added locals (and moved them) */
    int dt = maker_dtype(L, call, numpy, fill, what);
    if (dt < 0) return; /* the fill value's type is not known yet */
    tk_type et = lw_dtype_type((tack_dtype)dt); /* f16: values are f32, rounded where stored */
    int shared = !strcmp(fn, "shared"); /* tack.shared: the block's one array (lower_blocks.c) */
    if (shared && call->nkids != 2) ERR(call, "tack.shared(shape, dtype) takes a shape and a dtype");
    /* the size */
    const tk_target *T = L->C->target, *O = other_bound(T);
    int64_t cap = T->local_array_bytes, item = (int64_t)tack_dtype_get((tack_dtype)dt)->itemsize; /* a vec3's 12 */
    if (shared) {
        if (elems > INT64_MAX / (item ? item : 1)) elems = INT64_MAX / (item ? item : 1);
        lw_blocks_shared(L, call, loc, elems * item);
    } else if (elems > cap / (item ? item : 1)) {
        tk_buf b;
        tk_buf_init(&b, &L->C->arena);
        for (int k = 0; k < nd; k++) tk_printf(&b, "%s%lld", k ? ", " : "", (long long)shape[k]);
        ERR(call, "local array '%s' of shape (%s%s) and dtype %s is too large: %s%lld bytes, and a local array may "
                  "take at most %lld bytes on %s%s; pass a larger array in as an argument",
            what, b.s, nd == 1 ? "," : "", dt_name((tack_dtype)dt), elems == INT64_MAX ? "over " : "",
            (long long)(elems == INT64_MAX ? INT64_MAX : elems * item), (long long)cap, T->device,
            O ? tk_fmt(&L->C->arena, " (%lld on %s)", (long long)O->local_array_bytes, O->device) : "");
    }
    /* one array per name: created again, it must be the same array */
    tk_type at = {TY_ARRAY, (uint8_t)dt, (uint8_t)nd, 0, 0};
    if (l->ty.kind == TY_ARRAY) {
        int same = ty_eq(l->ty, at);
        for (int k = 0; same && k < nd; k++) same = l->ashape[k] == shape[k];
        if (!same) ERR(t, "local array '%s' is created again with another shape or dtype; give it a name of its own", what);
    } else {
        l->ty = at;
        memcpy(l->ashape, shape, sizeof(int64_t) * (size_t)nd);
        L->changed = 1;
    }
    if (shared) { /* no fill: unspecified until written, as on a GPU (the CPU's are zeros) */
        lw_da_set(L, loc);
        return;
    }
    tk_ir *v;
    if (full && !ty_is_scalar(et)) {
        if (!lw_known(fill)) return;
        v = lw_hoist(L, vector_fill(L, fill, et, call, what));
    } else if (full) {
        if (!lw_known(fill)) return;
        if (fill->ty.kind != TY_VALUE || !ty_is_scalar(fill->ty)) ERR(call, "local array '%s' cannot be filled with %s", what, TN(fill->ty));
        v = lw_hoist(L, ty_is_bool(et) ? lw_truth(L, fill, call) : dt_is_half(dt) ? lw_half_value(L, fill, dt) : lw_cast(L, fill, et));
    } else if (!ty_is_scalar(et)) { /* a vector or matrix: every component zero or one, as NumPy fills an (n, 3) array */
        tk_type ct = ty_value(dt_scalar((tack_dtype)dt));
        double one = strcmp(fn, "ones") ? 0.0 : 1.0;
        tk_ir *c = ty_is_float(ct) ? ir_const_f(L->C, ct, one, call->line) : ir_const_i(L->C, ct, (int64_t)one, call->line);
        v = lw_cast(L, c, et); /* constants: nothing to evaluate once */
    } else if (ty_is_complex(et)) { /* a complex zero or one: the real constant, converted */
        tk_type re = ty_value(et.dt == TACK_C64 ? TACK_F32 : TACK_F64);
        v = lw_hoist(L, lw_cast(L, ir_const_f(L->C, re, strcmp(fn, "ones") ? 0.0 : 1.0, call->line), et));
    } else {
        v = ir_const_i(L->C, et, 0, call->line);
        if (!strcmp(fn, "ones")) {
            if (ty_is_float(et)) v = ir_const_f(L->C, et, 1.0, call->line);
            else v->c.i = 1;
        } else if (ty_is_float(et)) {
            v = ir_const_f(L->C, et, 0.0, call->line);
        }
    }
    tk_ir *s = lw_mk(L, IR_LFILL, ty_void(), call);
    s->local = loc;
    ir_push(L->C, s, v);
    lw_emit(L, s);
}

/* ------------------------------------------------ float16 and bfloat16 */
/* The float16 (bfloat16) nearest to d, ties to even, overflowing to
 * infinity, as a double (every float16 and bfloat16 is one, and an f32 too).
 * float16 has 11 significant bits, subnormals in steps of 2^-24 and its
 * largest finite value 65504; bfloat16 has 8, steps of 2^-133 and
 * (2 - 2^-7) * 2^127.  The overflow bound is halfway from the largest
 * finite value to the next power of two, whose tie goes to infinity (the
 * largest finite value's last bit is odd). */
static double half_round(double d, int dt) {
    int bf = dt == TACK_BF16, sig = bf ? 8 : 11, qmin = bf ? -133 : -24;
    double over = bf ? ldexp(511.0, 119) : 65520.0;
    if (d != d || d == 0 || isinf(d)) return d;
    double a = fabs(d);
    if (a >= over) return copysign(INFINITY, d);
    int e;
    frexp(a, &e); /* a in [2^(e-1), 2^e): `sig` significant bits, so steps of 2^(e-sig) */
    int q = e - sig < qmin ? qmin : e - sig; /* subnormals: steps of 2^qmin */
    double s = ldexp(a, -q), r = floor(s), rem = s - r; /* exact: a scaling, then s < 2^(sig+1) */
    if (rem > 0.5 || (rem == 0.5 && fmod(r, 2.0) == 1.0)) r += 1.0;
    return copysign(ldexp(r, q), d);
}

/* v, a scalar about to be stored into a float16 or bfloat16 element (of a
 * local array or an array parameter; dt says which), as the value the store
 * rounds once, as NumPy does for float16; through f32 a float64 would round
 * twice, and 1 + 2**-11 + 2**-30 would become 1.0, not 1.0009765625 (for
 * bfloat16, 1 + 2**-8 + 2**-30 would become 1.0, not 1.0078125).  A float64
 * constant (a Python float, a fill value) becomes the f32 of its nearest
 * float16 (bfloat16) here, so the store keeps it and the kernel needs no
 * float64; a float64 computed at run time stays float64, and the store
 * rounds it with tk_d2h (tk_d2b; the emitter picks it by the value's type);
 * anything else becomes f32, for tk_f2h (tk_f2b). */
tk_ir *lw_half_value(lw_state *L, tk_ir *v, int dt) {
    if (!lw_known(v) || v->ty.kind != TY_VALUE || !ty_is_float(v->ty) || dt_bits((tack_dtype)v->ty.dt) != 64)
        return lw_cast(L, v, ty_value(TACK_F32));
    /* a literal expression (`t[1] = 1 + 2**-11`) is Python's value, rounded once at compile time:
     * left to run time it would be a float64 the kernel computes (a GPU without fp64 refuses it) */
    if (lw_literal_tree(v)) v = tk_fold_expr(L->C, v);
    const tk_ir *c = v;
    int neg = 0;
    for (; c->op == IR_UN && c->sub == U_NEG && c->n == 1; c = c->k[0]) neg = !neg; /* -1.5: not folded yet */
    if (c->op == IR_CONST && ty_eq(c->ty, v->ty))
        return ir_const_f(L->C, ty_value(TACK_F32), half_round(neg ? -c->c.f : c->c.f, dt), v->line);
    /* A Python float computed at run time meets f32, as elsewhere (`s * 0.5` is computed in f32); one
     * that is no computation -- a Python float argument, a local holding one -- is stored as NumPy
     * stores it, rounded once (through f32, 1 + 2**-11 + 2**-40 fell on a tie and became 1.0) */
    if (v->ty.weak && v->op == IR_SELECT && v->n == 3 && lw_weak_recomputed(v)) {
        /* `s * 2.0 if c else t`: each branch as it would be stored, picked as an f64 (an f32 widens exactly) */
        tk_ir *e = ir_new(L->C, IR_SELECT, ty_value(TACK_F64), v->line);
        lw_kid(L, e, v->k[0]);
        for (int k = 1; k < 3; k++) lw_kid(L, e, lw_cast(L, lw_half_value(L, v->k[k], dt), ty_value(TACK_F64)));
        return e;
    }
    if (v->ty.weak && lw_weak_recomputed(v)) return lw_cast(L, v, ty_value(TACK_F32));
    return v->ty.weak ? lw_cast(L, v, ty_value(TACK_F64)) : v;
}

/* tack.f16(x), tack.bf16(x) (np.float16(x) too): the value rounded to the
 * 16-bit float as a store rounds it, given as the f32 it holds (its value
 * type), as NumPy's np.float16(x) is rounded.  It is stored into a
 * one-element local array of that dtype and loaded back, so the rounding is
 * the stores' own in every dialect (a float64 rounded once, a constant at
 * compile time) and the C compilers keep the element in a register. */
tk_ir *lw_half_round(lw_state *L, tk_ir *v, int dt, tack_node *n) {
    if (!lw_known(v)) return lw_cast(L, v, ty_value(TACK_F32));
    int t = lw_temp(L, (tk_type){TY_ARRAY, (uint8_t)dt, 1, 0, 0});
    L->S->locals[t].ashape[0] = 1;
    L->S->locals[t].read = 1;
    lw_uses_half(L, dt);
    tk_ir *st = lw_mk(L, IR_LSTORE, ty_void(), n);
    st->local = t;
    ir_push(L->C, st, lw_hoist(L, lw_half_value(L, v, dt)));
    ir_push(L->C, st, ir_const_i(L->C, ty_value(TACK_I64), 0, n->line));
    lw_emit(L, st);
    tk_ir *ld = lw_mk(L, IR_LLOAD, ty_value(TACK_F32), n);
    ld->local = t;
    ir_push(L->C, ld, ir_const_i(L->C, ty_value(TACK_I64), 0, n->line));
    return lw_hoist(L, ld);
}

void lw_uses_half(lw_state *L, int dt) {
    if (dt == TACK_F16) L->C->uses_f16 = 1;
    else if (dt == TACK_BF16) L->C->uses_bf16 = 1;
}

/* --------------------------------------------------------------- access */
/* The indices of x[i, j] into `out`: i64, checked against the constant
 * extents and wrapped like an array parameter's (lw_indices). */
static void indices(lw_state *L, int loc, tack_node **idx, int nidx, tk_ir *out, tack_node *n) {
    const tk_local l_ = L->S->locals[loc], *l = &l_; /* a copy: the indices may add locals (and move them) */
    tk_ir *vi[TACK_MAX_NDIM];
    int by_vector = 0;
    if (nidx == 1 && idx[0]->kind == TACK_N_TUPLE) {
        tack_node *tup = idx[0];
        idx = tup->kids;
        nidx = tup->nkids;
    } else if (nidx == 1 && l->ty.ndim >= 2 && l->ty.ndim <= TACK_MAX_NDIM) { /* x[p], p an integer vector */
        by_vector = lw_vector_index(L, idx[0], l->ty.ndim, "local array", l->name, vi);
        if (by_vector) nidx = l->ty.ndim;
    }
    if (nidx != l->ty.ndim)
        ERR(n, "local array '%s' has %d dimension%s but is indexed with %d ind%s", l->name, l->ty.ndim,
            l->ty.ndim == 1 ? "" : "s", nidx, nidx == 1 ? "ex" : "ices");
    for (int k = 0; k < nidx; k++) {
        tack_node *ik = by_vector ? idx[0] : idx[k];
        if (ik->kind == TACK_N_TUPLE || (ik->kind == TACK_N_CALL && ik->name && strcmp(ik->name, "slice") == 0))
            ERR(ik, "slices and tuple indices are not supported; index each axis with an integer");
        tk_ir *e = by_vector ? vi[k] : lw_index_value(L, ik);
        int64_t ext = l->ashape[k];
        if (L->C->opts.checks && lw_known(e)) {
            int site = lw_site(L, CK_INDEX, ik->line, k, l->name, NULL);
            lw_check(L, CK_INDEX, site, e, ir_const_i(L->C, ty_value(TACK_I64), ext, ik->line), ik->line);
        }
        if (e->op == IR_CONST && lw_known(e)) {
            ir_push(L->C, out, ir_const_i(L->C, ty_value(TACK_I64), e->c.i < 0 ? e->c.i + ext : e->c.i, ik->line));
            continue;
        }
        tk_ir *w = lw_mk(L, IR_WRAP, ty_value(TACK_I64), ik);
        w->param = -1;
        w->aux = k;
        w->c.i = ext;
        ir_push(L->C, w, e);
        ir_push(L->C, out, w);
    }
}

/* Writing local array `loc` here: refused inside a parallel loop that does
 * not own it (created before the loop, so shared by its iterations). */
static void check_private(lw_state *L, int loc, tack_node *n) {
    tk_local *l = &L->S->locals[loc];
    if (L->pfor >= 0 && l->scope != L->pfor)
        ERR(n, "local array '%s' is created before the parallel loop (line %d) and written inside it: its "
               "iterations would race on the one array; create it inside the loop, where each iteration "
               "has its own", l->name, l->line);
}

/* Local array `loc` passed to a @tack.func (lower_call.c). */
tk_ir *lw_local_arg(lw_state *L, int loc, tack_node *n) {
    tk_local *l = &L->S->locals[loc];
    if (l->shared)
        ERR(n, "the shared array '%s' cannot be passed to a @tack.func: it lives in a block's shared memory, "
               "which a function's array parameter cannot point to on every GPU; index it in the kernel", l->name);
    l->read = 1;
    lw_unbound_use(L, loc, n);
    tk_ir *a = lw_mk(L, IR_LARRAY, l->ty, n);
    a->local = loc;
    return a;
}

/* Local array `loc` is written by function `fn` it was passed to here. */
void lw_local_written_by(lw_state *L, int loc, const char *fn, tack_node *n) {
    tk_local *l = &L->S->locals[loc];
    if (L->pfor >= 0 && l->scope != L->pfor)
        ERR(n, "local array '%s' is created before the parallel loop (line %d) and written inside it by %s(): "
               "its iterations would race on the one array; create it inside the loop, where each iteration "
               "has its own", l->name, l->line, fn);
}

tk_ir *lw_local_load(lw_state *L, int loc, tack_node **idx, int nidx, tack_node *n) {
    tk_local *l = &L->S->locals[loc];
    l->read = 1;
    lw_unbound_use(L, loc, n);
    tk_ir *ld = lw_mk(L, IR_LLOAD, lw_dtype_type((tack_dtype)l->ty.dt), n);
    ld->local = loc;
    indices(L, loc, idx, nidx, ld, n);
    return ld;
}

/* A value stored into an element, converted to the element's type; as into
 * an array parameter's element (lower_stmt.c), a vector or matrix element
 * takes a value of its own type or a number, given to every component. */
static tk_ir *to_element(lw_state *L, int loc, tk_ir *v, tack_node *n) {
    tk_local *l = &L->S->locals[loc];
    tk_type et = lw_dtype_type((tack_dtype)l->ty.dt);
    if (!lw_known(v)) return v;
    if (v->ty.kind != TY_VALUE || (ty_is_scalar(et) && !ty_is_scalar(v->ty)) ||
        (!ty_is_scalar(et) && (ty_is_scalar(v->ty) ? ty_is_complex(v->ty) : v->ty.dt != et.dt)))
        ERR(n, "cannot store %s into an element of local array '%s' (%s)", TN(v->ty), l->name,
            TN(dt_is_half(l->ty.dt) ? ty_value((tack_dtype)l->ty.dt) : et));
    if (dt_is_half(l->ty.dt)) return lw_hoist(L, lw_half_value(L, v, l->ty.dt));
    return lw_hoist(L, ty_is_bool(et) ? lw_truth(L, v, n) : lw_cast(L, v, et));
}

void lw_local_store(lw_state *L, tack_node *t, int loc, tk_ir *v) {
    check_private(L, loc, t);
    v = to_element(L, loc, v, t);
    lw_unbound_use(L, loc, t);
    tk_ir *st = lw_mk(L, IR_LSTORE, ty_void(), t);
    st->local = loc;
    ir_push(L->C, st, v);
    indices(L, loc, t->kids + 1, t->nkids - 1, st, t);
    lw_emit(L, st);
}

void lw_local_augassign(lw_state *L, tack_node *n, int loc) {
    tack_node *t = n->kids[0];
    check_private(L, loc, t);
    tk_ir *ld = lw_local_load(L, loc, t->kids + 1, t->nkids - 1, t);
    tk_ir *v = lw_expr(L, n->kids[1]);
    tk_ir *r = to_element(L, loc, lw_binop(L, n->op, ld, v, n), n);
    tk_ir *st = lw_mk(L, IR_LSTORE, ty_void(), t);
    st->local = loc;
    ir_push(L->C, st, r);
    for (int i = 0; i < ld->n; i++) ir_push(L->C, st, ld->k[i]);
    lw_emit(L, st);
}

/* t[i].x = s on a local array (lower_stmt.c, store_part): the element t[i] loaded, after the
 * array's writability check; lw_local_store_back stores the updated value at the same indices. */
tk_ir *lw_local_part_load(lw_state *L, tack_node *t, int loc) {
    check_private(L, loc, t);
    return lw_local_load(L, loc, t->kids + 1, t->nkids - 1, t);
}

void lw_local_store_back(lw_state *L, tack_node *t, int loc, tk_ir *ld, tk_ir *v) {
    tk_ir *st = lw_mk(L, IR_LSTORE, ty_void(), t);
    st->local = loc;
    ir_push(L->C, st, v);
    for (int i = 0; i < ld->n; i++) ir_push(L->C, st, ld->k[i]);
    lw_emit(L, st);
}

tk_ir *lw_local_attr(lw_state *L, int loc, tack_node *n) {
    tk_local *l = &L->S->locals[loc];
    if (!strcmp(n->name, "ndim")) return ir_const_i(L->C, ty_weak(TACK_I64), l->ty.ndim, n->line);
    if (!strcmp(n->name, "size")) return ir_const_i(L->C, ty_weak(TACK_I64), tk_local_elems(l), n->line);
    if (!strcmp(n->name, "shape")) ERR(n, "x.shape must be indexed with a constant: x.shape[0]");
    ERR(n, "arrays have no attribute '%s' in kernels (shape, ndim, size are supported)", n->name);
}

tk_ir *lw_local_extent(lw_state *L, int loc, tack_node *ix, tack_node *n) {
    tk_local *l = &L->S->locals[loc];
    int64_t k;
    if (!lw_const_int(ix, &k)) ERR(ix, "x.shape must be indexed with a constant integer");
    int64_t a = k < 0 ? k + l->ty.ndim : k;
    if (a < 0 || a >= l->ty.ndim) ERR(ix, "axis %lld is out of range for the %d-D local array '%s'", (long long)k, l->ty.ndim, l->name);
    return ir_const_i(L->C, ty_weak(TACK_I64), l->ashape[a], n->line);
}
