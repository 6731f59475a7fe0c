/*
 * counted.c -- a `while` loop that counts by one becomes a counted loop.
 *
 * Code ported from C, Fortran or Numba often counts by hand:
 *
 *     j = 0
 *     while j < m:
 *         b[i, j] = 2.0 * a[i, j] + 1.0
 *         j += 1
 *
 * which is `for j in range(m)` with one difference the passes after this one
 * cannot see through: the counter is an ordinary local, assigned before the
 * loop and in its body.  checks.c elides and hoists the index checks of a
 * serial loop's variable, defined by nothing but its loop header; here every
 * iteration kept its two checks, a branch out of the loop, and the loop polled
 * for Ctrl-C each time round, so the C compiler vectorized nothing (1000 x
 * 1000 f64 on one thread: 0.55 ms, the same written with range() 0.24 ms).
 *
 * This pass rewrites such a loop -- IR_WHILE whose condition is `i < hi` for
 * a 64-bit integer local i and a bound of i's type that the loop does not
 * change (a constant, an extent, a local it never assigns), whose body ends
 * with `i = i + 1` and assigns i nowhere else, and which has no break or
 * continue of its own -- as
 *
 *     for k in range(i, hi):     k a fresh local of i's type
 *         <body, reading k where it read i, without the increment>
 *     if i < hi: i = hi
 *
 * Python evaluates `i < hi` before each iteration, with i the iteration's
 * value; the counted loop runs the same iterations with the same values, in
 * order, and leaves i where the while loop left it: hi when it ran at all, its
 * value before the loop otherwise.  A `continue` would skip the increment and
 * a `break` leaves i at the iteration's value, which the assignment after the
 * loop would overwrite, so loops with either stay as written, as does any loop
 * whose bound the body changes (Python reads it again every time round; range()
 * reads it once) and one of another counter type (an int8 counter wraps where
 * a range would not).  The result is the while loop's, bit for bit; only its
 * checks move, as a for loop's do, and a failing check reports the same first
 * index.  Debug mode runs the while loop as Python does.
 */
#include <string.h>

#include "compiler/compiler.h"

/* a break or continue of the loop whose body is s (not of a loop inside it) */
static int own_exit(const tk_ir *s) {
    if (s->op == IR_BREAK || s->op == IR_CONTINUE) return 1;
    if (s->op == IR_FOR || s->op == IR_WHILE || s->op == IR_PFOR) return 0;
    for (int i = 0; i < s->n; i++)
        if (own_exit(s->k[i])) return 1;
    return 0;
}

/* reads of local `from` in x become reads of local `to` (x is the loop's own copy) */
static void rename(tk_ir *x, int from, int to) {
    if (x->op == IR_LOCAL && x->local == from) x->local = to;
    for (int i = 0; i < x->n; i++) rename(x->k[i], from, to);
}

static int is_i64(tk_type t) { return ty_is_int(t) && t.dt == TACK_I64; }

/* `i = i + 1` (or `1 + i`) for local i */
static int increments(const tk_ir *s, int i) {
    if (s->op != IR_ASSIGN || s->local != i || s->k[0]->op != IR_BIN || s->k[0]->sub != B_ADD) return 0;
    const tk_ir *a = s->k[0]->k[0], *b = s->k[0]->k[1];
    if (a->op == IR_CONST) { const tk_ir *t = a; a = b; b = t; }
    return a->op == IR_LOCAL && a->local == i && b->op == IR_CONST && !b->str && ty_is_int(b->ty) && b->c.i == 1;
}

/* The counted loop and what follows it for while loop w, or NULL where w is not one that counts by one. */
static tk_ir *counted(tk_cc *C, tk_spec *S, tk_ir *w) {
    tk_ir *cond = w->k[0], *body = w->k[1];
    if (cond->op != IR_BIN || cond->sub != B_LT || cond->n != 2 || !is_i64(cond->aux_ty)) return NULL;
    tk_ir *iv = cond->k[0], *hi = cond->k[1];
    if (iv->op != IR_LOCAL || body->op != IR_BLOCK || body->n < 1) return NULL;
    int i = iv->local;
    tk_local *l = &S->locals[i];
    if (l->ty.kind != TY_VALUE || !is_i64(l->ty) || !ty_eq(l->ty, iv->ty) || !ty_eq(hi->ty, l->ty) || l->shared)
        return NULL;
    if (!increments(body->k[body->n - 1], i) || ir_assignments(body, i) != 1 || !ir_invariant(hi, w) ||
        ir_mentions(hi, i) || own_exit(body))
        return NULL;
    int k = tk_new_local(C, S, S->locals[i].name, S->locals[i].ty, S->locals[i].scope);
    l = &S->locals[i]; /* the table may have moved */
    S->locals[k].declared = l->declared;
    S->locals[k].line = l->line;
    S->locals[k].shown = l->shown;
    tk_ir *nb = ir_block(C, body->line);
    for (int j = 0; j + 1 < body->n; j++) {
        tk_ir *s = ir_clone(C, body->k[j]);
        rename(s, i, k);
        ir_push(C, nb, s);
    }
    tk_ir *out = ir_block(C, w->line);
    ir_push(C, out, ir_for(C, k, ir_local_of(C, S, i, w->line), ir_clone(C, hi), 1, nb, TK_FOR_POLLS));
    tk_ir *fix = ir_new(C, IR_IF, ty_void(), w->line), *then = ir_block(C, w->line);
    ir_push(C, fix, ir_clone(C, cond));
    ir_push(C, then, ir_assign(C, i, ir_clone(C, hi)));
    ir_push(C, fix, then);
    ir_push(C, fix, ir_block(C, w->line));
    ir_push(C, out, fix);
    return out;
}

/* the while loops in block b that count by one, as counted loops (innermost first) */
static void count_block(tk_cc *C, tk_spec *S, tk_ir *b) {
    tk_ir *nb = NULL;
    for (int i = 0; i < b->n; i++) {
        tk_ir *s = b->k[i], *r = NULL;
        switch (s->op) {
        case IR_BLOCK: count_block(C, S, s); break;
        case IR_IF: count_block(C, S, s->k[1]); count_block(C, S, s->k[2]); break;
        case IR_WHILE: count_block(C, S, s->k[1]); r = counted(C, S, s); break;
        case IR_FOR: count_block(C, S, s->k[3]); break;
        case IR_PFOR:
            if (!ir_is_blocks(s)) count_block(C, S, s->k[s->aux]); /* a blocks loop keeps its barriers' loops */
            break;
        default: break;
        }
        if (r && !nb) { /* the loop's statements go in the enclosing block, in its place */
            nb = ir_block(C, b->line);
            for (int j = 0; j < i; j++) ir_push(C, nb, b->k[j]);
        }
        if (r) {
            for (int j = 0; j < r->n; j++) ir_push(C, nb, r->k[j]);
        } else if (nb) {
            ir_push(C, nb, s);
        }
    }
    if (nb) {
        b->k = nb->k;
        b->n = nb->n;
        b->cap = nb->cap;
    }
}

void tk_counted(tk_cc *C) {
    for (int i = 0; i < C->nspecs; i++)
        if (C->specs[i]->body) count_block(C, C->specs[i], C->specs[i]->body);
}
