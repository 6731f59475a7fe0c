/*
 * emit_lanes.c -- an innermost serial loop in SIMD lanes, for emit.c's loops.
 *
 * emit_for (emit.c) writes a serial loop; where the loop polls and its trip
 * fits one strip it has a plain copy, and this file decides whether that
 * copy may carry `#pragma omp simd`: whether the loop's text proves its
 * iterations independent (the essay below), and, where it does, writes the
 * copy -- ending, when the remainder is more than half a vector, with one
 * vector that overlaps the last (emit_inner.c has the why).  The analysis is
 * the file's bulk; it reads the IR and writes nothing until it has said yes.
 * It also says which @tack.func calls may run in lanes (em_lane_func), for
 * emit_cpu.c's parallel loops and for emit.c, which writes those functions
 * always_inline.
 */
#include "compiler/compiler.h"
#include "compiler/emit/emit.h"

/* ---- functions in SIMD lanes */
/* A @tack.func whose body can run in SIMD lanes once the C compiler has
 * inlined it: assignments, branches and returns of scalar arithmetic, with
 * no checks (it cannot fail), loops, prints, atomics, arrays or local
 * arrays, calling only such functions.  tack.random's draws are such
 * functions (Philox's rounds, the uniforms, the normals' own log and cos:
 * integer and float arithmetic without branches), so a loop that draws runs
 * in lanes: the same operations on each lane, the same bits as one at a
 * time (contraction stays off).  emit.c writes such functions always_inline
 * in the C dialect: GCC's own heuristics left a draw's block function out of
 * line where a loop drew twice (a normal and a uniform), and a call it has
 * not inlined keeps the loop scalar.  `depth` bounds the walk of the call
 * graph. */
static int lane_func(const tk_cc *C, int si, int depth);

static int lane_stmt(const tk_cc *C, const tk_ir *x, int depth) {
    switch (x->op) {
    case IR_CHECK: case IR_PRINT: case IR_ATOMIC: case IR_STORE: case IR_LOAD: case IR_FOR: case IR_WHILE:
    case IR_BREAK: case IR_CONTINUE: case IR_ARRAY: case IR_LARRAY: case IR_LLOAD: case IR_LSTORE: case IR_LFILL:
        return 0;
    case IR_CALL:
        if (!lane_func(C, x->aux, depth + 1)) return 0;
        break;
    default: break;
    }
    if (x->ty.kind == TY_VALUE && ty_is_complex(x->ty)) return 0;
    for (int i = 0; i < x->n; i++)
        if (!lane_stmt(C, x->k[i], depth)) return 0;
    return 1;
}

static int lane_func(const tk_cc *C, int si, int depth) {
    if (depth > 16 || si < 0 || si >= C->nspecs || !C->specs[si]->body) return 0;
    const tk_spec *S = C->specs[si];
    for (int p = 0; p < S->nparams; p++)
        if (S->ptypes[p].kind != TY_VALUE) return 0;
    return lane_stmt(C, S->body, depth);
}

int em_lane_func(const tk_cc *C, int si) { return lane_func(C, si, 0); }

/* ---- innermost loops in SIMD lanes
 *
 * GCC vectorizes an innermost loop by itself, but first proves that no
 * iteration reads what another writes; where it cannot (seven neighbour
 * loads and a store through one array's strides) it versions the loop
 * with run-time overlap tests or gives up.  `#pragma omp simd` says the
 * iterations are independent, so it need not.  Tack says so only where it
 * holds by the loop's text:
 *   - the body is straight-line: assignments to locals and stores (no
 *     branch, call, check, atomic, print, loop, local array, vector or
 *     complex value, fast division with its carried state);
 *   - every local it reads that it also assigns is assigned earlier in the
 *     same iteration (no value carried from one iteration to the next: no
 *     `s += x[k]`, whose reassociation would change the sum);
 *   - each array it writes is written by one store, never read in the
 *     body, at an index that moves with the loop variable (one axis is the
 *     variable plus or minus a value the loop does not change, the others
 *     do not change): distinct iterations write distinct elements;
 *   - the call's arrays share no memory (restrict), so a read of one array
 *     never sees a write to another.
 * Measured on a stencil written with nested loops (38-element rows, f64,
 * one thread, the generated C alone, in alternation): 41-50 us for the
 * plain loop, 36-42 us with the pragma, the hand-written C 37-46 us. */
typedef struct simd_scan {
    const tk_ir *loop;
    unsigned char *assigned, *defined; /* per local: assigned in the body; so far this iteration */
    uint64_t written;                  /* arrays stored into (param bits) */
} simd_scan;

static int simd_local_read_ok(const simd_scan *z, int local) {
    return local == z->loop->local || !z->assigned[local] || z->defined[local];
}

/* An expression of the body: allowed nodes, locals not carried, no load of
 * an array the body writes. */
static int simd_expr_ok(const simd_scan *z, const tk_ir *x) {
    if (x->ty.kind == TY_VALUE && (ty_is_complex(x->ty) || dt_rows((tack_dtype)x->ty.dt) * dt_cols((tack_dtype)x->ty.dt) > 1))
        return 0;
    switch (x->op) {
    case IR_CONST: case IR_SHAPE: return 1;
    case IR_LOCAL: return simd_local_read_ok(z, x->local);
    case IR_CAST: case IR_BIN: case IR_UN: case IR_SELECT: case IR_AND: case IR_OR: case IR_WRAP: break;
    case IR_MATH:
        if (x->sub == M_FDIVQ || x->sub == M_MODQ) return 0;
        break;
    case IR_LOAD:
        if (x->param < 63 && (z->written >> x->param & 1)) return 0;
        break;
    default: return 0;
    }
    for (int i = 0; i < x->n; i++)
        if (!simd_expr_ok(z, x->k[i])) return 0;
    return 1;
}

/* x does not change in the loop: no local the body assigns, not the loop
 * variable, no load. */
static int simd_invariant(const simd_scan *z, const tk_ir *x) {
    if (x->op == IR_LOAD || x->op == IR_CALL || x->op == IR_ATOMIC) return 0;
    if (x->op == IR_LOCAL && (x->local == z->loop->local || z->assigned[x->local])) return 0;
    for (int i = 0; i < x->n; i++)
        if (!simd_invariant(z, x->k[i])) return 0;
    return 1;
}

/* x is the loop variable (through casts) plus or minus invariant values;
 * or a negative-index wrap of the variable itself when the loop starts at a
 * constant >= 0 (every index the same sign: no two wrap onto one element). */
static int simd_moves(const simd_scan *z, const tk_ir *x) {
    if (x->op == IR_CAST) return simd_moves(z, x->k[0]);
    if (x->op == IR_WRAP) {
        const tk_ir *v = x->k[0], *lo = z->loop->k[0];
        while (v->op == IR_CAST) v = v->k[0];
        while (lo->op == IR_CAST) lo = lo->k[0];
        return v->op == IR_LOCAL && v->local == z->loop->local && lo->op == IR_CONST && lo->c.i >= 0;
    }
    if (x->op == IR_LOCAL) return x->local == z->loop->local;
    if (x->op == IR_BIN && (x->sub == B_ADD || x->sub == B_SUB))
        return (simd_moves(z, x->k[0]) && simd_invariant(z, x->k[1])) ||
               (simd_invariant(z, x->k[0]) && simd_moves(z, x->k[1]));
    return 0;
}

static void simd_assigned(simd_scan *z, const tk_ir *x) {
    if (x->op == IR_ASSIGN) z->assigned[x->local] = 1;
    if (x->op == IR_STORE && x->param < 63) z->written |= (uint64_t)1 << x->param;
    for (int i = 0; i < x->n; i++) simd_assigned(z, x->k[i]);
}

static int simd_stmts_ok(simd_scan *z, const tk_ir *b, uint64_t *stored) {
    for (int i = 0; i < b->n; i++) {
        const tk_ir *s = b->k[i];
        if (s->op == IR_BLOCK) {
            if (!simd_stmts_ok(z, s, stored)) return 0;
        } else if (s->op == IR_ASSIGN) {
            if (s->ty.kind != TY_VOID && s->ty.kind != TY_VALUE) return 0;
            if (!simd_expr_ok(z, s->k[0])) return 0;
            z->defined[s->local] = 1;
        } else if (s->op == IR_STORE) {
            if (s->param >= 63 || (*stored >> s->param & 1) || s->comp) return 0; /* one store per array, whole */
            *stored |= (uint64_t)1 << s->param;
            int moving = 0;
            for (int k = 0; k < s->n; k++) {
                if (!simd_expr_ok(z, s->k[k])) return 0;
                if (k == 0) continue;
                if (simd_moves(z, s->k[k])) moving++;
                else if (!simd_invariant(z, s->k[k])) return 0;
            }
            if (moving != 1) return 0;
        } else {
            return 0;
        }
    }
    return 1;
}

static int simd_inner_ok(tk_emitter *e, const tk_ir *s, unsigned char **assigned) {
    tk_cc *C = e->C;
    tk_spec *S = e->S;
    if (!e->T->polls || !e->T->simd_pragma || !C->opts.optimize || !C->args || e->hist) return 0;
    for (int p = 0; p < S->nparams; p++) /* restrict: the call's arrays share no memory */
        if (S->ptypes[p].kind == TY_ARRAY && (p >= C->nargs || !C->args[p].distinct)) return 0;
    if (S->nlocals <= 0) return 0;
    simd_scan z = {s, tk_alloc(&C->arena, (size_t)S->nlocals), tk_alloc(&C->arena, (size_t)S->nlocals), 0};
    simd_assigned(&z, s->k[3]);
    uint64_t stored = 0;
    *assigned = z.assigned;
    return simd_stmts_ok(&z, s->k[3], &stored) && stored;
}

/* Whether the plain copy of serial loop s would run in SIMD lanes
 * (em_plain_in_lanes), asked before it is written: emit_for keeps that
 * copy for such a loop whatever the size of its body. */
int em_lanes_ok(tk_emitter *e, const tk_ir *s) {
    unsigned char *assigned = NULL;
    return simd_inner_ok(e, s, &assigned);
}

/* The widest stored element's bytes (the body's stores are of scalars:
 * simd_expr_ok). */
static int simd_store_bytes(const tk_ir *x) {
    int b = x->op == IR_STORE ? dt_bits((tack_dtype)x->k[0]->ty.dt) / 8 : 0;
    for (int i = 0; i < x->n; i++) {
        int k = simd_store_bytes(x->k[i]);
        if (k > b) b = k;
    }
    return b;
}

/* The pragma, with every local the loop assigns lastprivate: after the loop
 * it holds the last iteration's value, as Python leaves it (the loop
 * variable too). */
static void simd_inner_pragma(tk_emitter *e, const tk_ir *s) {
    unsigned char *assigned = NULL;
    if (!simd_inner_ok(e, s, &assigned)) return;
    I(e); P(e, "#pragma omp simd lastprivate(");
    local_name(e, s->local);
    for (int i = 0; i < e->S->nlocals; i++)
        if (assigned[i] && i != s->local) { P(e, ", "); local_name(e, i); }
    P(e, ") /* tack: iterations independent (emit.c) */\n");
}

/* The plain copy of a step-1 loop in SIMD lanes, when simd_inner_ok proves
 * its iterations independent: returns 0 (having written nothing) where it
 * does not.  Those same conditions -- a straight-line body whose locals are
 * assigned before they are read, written arrays never read, restrict arrays
 * -- make an iteration safe to run twice, so a remainder of more than half
 * a vector runs as one vector overlapping the last, as emit_inner.c does for
 * an ndrange's rows (its essay has the why and the figures). */
int em_plain_in_lanes(tk_emitter *e, tk_ir *s, int c) {
    unsigned char *assigned = NULL;
    if (!simd_inner_ok(e, s, &assigned)) return 0;
    int w = simd_store_bytes(s->k[3]);
    if (w != 1 && w != 2 && w != 4 && w != 8) {
        simd_inner_pragma(e, s);
        I(e); P(e, "for (int64_t k%d = lo%d; k%d < hi%d; k%d++) {\n", c, c, c, c, c);
        em_for_body(e, s, c, 1, 0);
        return 1;
    }
    I(e); P(e, "const int64_t or%d = (hi%d - lo%d) %% (TK_VEC_BYTES / %d);\n", c, c, c, w);
    I(e); P(e, "if (hi%d - lo%d >= TK_VEC_BYTES / %d && 2 * or%d > TK_VEC_BYTES / %d) {", c, c, w, c, w);
    P(e, " /* tk: the remainder as a vector overlapping the last (emit_cpu.c) */\n");
    e->ind++;
    I(e); P(e, "const int64_t ot%d = hi%d - TK_VEC_BYTES / %d;\n", c, c, w);
    simd_inner_pragma(e, s);
    I(e); P(e, "for (int64_t k%d = lo%d; k%d < hi%d - or%d; k%d++) {\n", c, c, c, c, c, c);
    em_for_body(e, s, c, 1, 0);
    simd_inner_pragma(e, s);
    I(e); P(e, "for (int64_t k%d = ot%d; k%d < ot%d + TK_VEC_BYTES / %d; k%d++) {\n", c, c, c, c, w, c);
    em_for_body(e, s, c, 1, 0);
    e->ind--;
    I(e); P(e, "} else {\n");
    e->ind++;
    simd_inner_pragma(e, s);
    I(e); P(e, "for (int64_t k%d = lo%d; k%d < hi%d; k%d++) {\n", c, c, c, c, c);
    em_for_body(e, s, c, 1, 0);
    e->ind--;
    I(e); P(e, "}\n");
    return 1;
}
