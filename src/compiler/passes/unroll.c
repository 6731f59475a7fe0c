/*
 * unroll.c -- a short loop of constant bounds inside a parallel loop becomes
 * copies of its body, its variable a constant in each.
 *
 * Stencils over a neighbourhood are written, by Taichi's and Numba's users
 * alike, as loops over the offsets:
 *
 *     for i, j in tack.ndrange(n, m):
 *         c = 0
 *         for di in range(-1, 2):
 *             for dj in range(-1, 2):
 *                 c += a[(i + di) % n, (j + dj) % m]
 *
 * periodic.c makes `(i + c) % n` and `min(i + c, e)` cheap for a constant c,
 * in the loop's interior; with a loop variable in c's place it recognized
 * nothing, and every neighbour cost two 64-bit divisions and two index
 * checks: the Game of Life step at 512^2 took 21-35 ms, where the same count
 * with its eight neighbours written out took 0.07 ms (Numba: 3 ms).  This
 * pass writes the neighbours out: a serial IR_FOR inside a parallel loop's
 * body whose bounds and step are integer constants (after constant folding),
 * with at most UNROLL_TRIPS trips, becomes one copy of the body per trip in
 * order, each copy reading the constant where it read the variable, and then
 * `var = last` (Python leaves the variable at its last value).  Nested loops
 * unroll from the inside out while the copies stay within UNROLL_NODES nodes
 * in all (3x3 and 5x5 neighbourhoods of a small body do).
 *
 * The copies do what the iterations did, in the same order, with the same
 * operations: results are bit for bit the loop's.  Not unrolled: a body that
 * assigns the variable, one with a break or continue anywhere in it (the
 * copies would need the loop's exit), and one assigning a tuple or a
 * decomposition local, which the emitter declares where it is assigned (two
 * copies would declare it twice).  After the copies are folded (their
 * `if di != 0` conditions are constants now), a local the body assigns at
 * its top once per copy and nothing else in the kernel names (a temporary of
 * `(i + di) % n`) becomes one local per assignment (versions), so each is
 * assigned once, as periodic.c and checks.c want to follow it to its value;
 * other locals are assigned by the copies one after another, as the
 * iterations did.
 *
 * Only where parallel loops run in chunks (target.h's TK_LOOPS_CHUNKED, the
 * CPU), the target periodic.c serves; a GPU's compiler unrolls such loops
 * itself, and each GPU dialect keeps its loops as written.
 */
#include <string.h>

#include "compiler/compiler.h"
#include "compiler/target.h"

#define UNROLL_TRIPS 5   /* a loop of at most this many trips */
#define UNROLL_NODES 1500 /* the copies of one loop, nodes in all */

static int nodes(const tk_ir *x, int cap) {
    int n = 1;
    for (int i = 0; i < x->n && n <= cap; i++) n += nodes(x->k[i], cap - n);
    return n;
}

/* a break, a continue or a declaring assignment anywhere in s */
static int pinned(const tk_spec *S, const tk_ir *s) {
    if (s->op == IR_BREAK || s->op == IR_CONTINUE) return 1;
    if (s->op == IR_ASSIGN && (S->locals[s->local].ty.kind == TY_TUPLE || S->locals[s->local].ty.kind == TY_MULTI))
        return 1;
    for (int i = 0; i < s->n; i++)
        if (pinned(S, s->k[i])) return 1;
    return 0;
}

/* the nodes naming local l (a read, an assignment, a component's, a loop's variable) in x */
static int names(const tk_ir *x, int l) {
    int n = (x->op == IR_LOCAL || x->op == IR_ASSIGN || x->op == IR_SETCOMP || x->op == IR_FOR) && x->local == l;
    for (int i = 0; i < x->n; i++) n += names(x->k[i], l);
    return n;
}

/* reads of local v in x become the constant c (x's kids, in place) */
static void substitute(tk_cc *C, tk_ir *x, int v, int64_t c) {
    for (int i = 0; i < x->n; i++) {
        tk_ir *k = x->k[i];
        if (k->op == IR_LOCAL && k->local == v) x->k[i] = ir_const_i(C, k->ty, c, k->line);
        else substitute(C, k, v, c);
    }
}

static int64_t trips(int64_t lo, int64_t hi, int64_t step) {
    if (step > 0) return hi > lo ? (int64_t)(((uint64_t)hi - (uint64_t)lo - 1) / (uint64_t)step + 1) : 0;
    if (step < 0) return lo > hi ? (int64_t)(((uint64_t)lo - (uint64_t)hi - 1) / (0 - (uint64_t)step) + 1) : 0;
    return 0;
}

/* the statements of block b, each loop unrolled where it qualifies (innermost first) */
static int unroll_block(tk_cc *C, tk_spec *S, tk_ir *b) {
    int done = 0;
    tk_ir *nb = NULL;
    for (int i = 0; i < b->n; i++) {
        tk_ir *s = b->k[i];
        switch (s->op) {
        case IR_BLOCK: done += unroll_block(C, S, s); break;
        case IR_IF: done += unroll_block(C, S, s->k[1]) + unroll_block(C, S, s->k[2]); break;
        case IR_WHILE: done += unroll_block(C, S, s->k[1]); break;
        case IR_FOR: done += unroll_block(C, S, s->k[3]); break;
        default: break;
        }
        tk_ir *lo = s->op == IR_FOR ? s->k[0] : NULL;
        if (lo && s->aux == 0 && lo->op == IR_CONST && s->k[1]->op == IR_CONST && s->k[2]->op == IR_CONST &&
            !lo->str && !s->k[1]->str && !s->k[2]->str && ty_is_scalar(lo->ty) && s->k[2]->c.i != 0) {
            int64_t step = s->k[2]->c.i, n = trips(lo->c.i, s->k[1]->c.i, step);
            tk_ir *body = s->k[3];
            if (n >= 1 && n <= UNROLL_TRIPS && nodes(body, UNROLL_NODES) * n <= UNROLL_NODES &&
                !ir_assignments(body, s->local) && !pinned(S, body)) {
                if (!nb) { /* the copies go in the enclosing block, in the loop's place */
                    nb = ir_new(C, IR_BLOCK, ty_void(), b->line);
                    for (int j = 0; j < i; j++) ir_push(C, nb, b->k[j]);
                }
                for (int64_t t = 0; t < n; t++) {
                    tk_ir *copy = ir_clone(C, body);
                    substitute(C, copy, s->local, lo->c.i + t * step);
                    for (int j = 0; j < copy->n; j++) ir_push(C, nb, copy->k[j]);
                }
                ir_push(C, nb, ir_assign(C, s->local, ir_const_i(C, S->locals[s->local].ty, lo->c.i + (n - 1) * step,
                                                                 s->line)));
                done++;
                continue;
            }
        }
        if (nb) ir_push(C, nb, s);
    }
    if (nb) {
        b->k = nb->k;
        b->n = nb->n;
        b->cap = nb->cap;
    }
    return done;
}

/* ------------------------------------------------------------ versions */

/* A value local of the iteration that the body assigns more than once, each time at its top
 * (under no if or loop: in blocks only) and nowhere else, and that nothing outside the body
 * names, first mentioned by such an assignment of a value that does not read it: each assignment
 * starts a version that the reads up to the next assignment see, so each version may be a local
 * of its own.  The copies of an unrolled body assign the temporaries lowering made for
 * `(i + di) % n` once per copy; as versions, each is assigned once, as periodic.c and checks.c
 * want to follow a local to its value. */
static void top_assigns(const tk_ir *b, int *count, char *first_seen, char *bad) {
    for (int i = 0; i < b->n; i++) {
        const tk_ir *s = b->k[i];
        if (s->op == IR_BLOCK) {
            top_assigns(s, count, first_seen, bad);
            continue;
        }
        if (s->op == IR_ASSIGN) {
            if (!first_seen[s->local] && ir_mentions(s->k[0], s->local)) bad[s->local] = 1;
            first_seen[s->local] = 1;
            count[s->local]++;
        }
    }
}

static void first_mentions(const tk_ir *x, char *first_seen, char *bad) {
    if ((x->op == IR_LOCAL || x->op == IR_ASSIGN || x->op == IR_SETCOMP || x->op == IR_FOR) && !first_seen[x->local])
        bad[x->local] = 1, first_seen[x->local] = 1;
    for (int i = 0; i < x->n; i++) first_mentions(x->k[i], first_seen, bad);
}

/* in order: a local mentioned before its first top assignment is live into the body */
static void order(const tk_ir *b, char *first_seen, char *bad) {
    for (int i = 0; i < b->n; i++) {
        const tk_ir *s = b->k[i];
        if (s->op == IR_BLOCK) order(s, first_seen, bad);
        else if (s->op == IR_ASSIGN) {
            first_mentions(s->k[0], first_seen, bad);
            first_seen[s->local] = 1;
        } else first_mentions(s, first_seen, bad);
    }
}

static void reads_to(tk_ir *x, const int *cur) {
    if (x->op == IR_LOCAL) x->local = cur[x->local];
    for (int i = 0; i < x->n; i++) reads_to(x->k[i], cur);
}

/* the body as a tree: lowering may share a node between statements (an operand read twice), and
 * a version renames each statement's reads in place */
static void as_tree(tk_cc *C, tk_ir *body) {
    for (int i = 0; i < body->n; i++) body->k[i] = ir_clone(C, body->k[i]);
}

static void version(tk_cc *C, tk_spec *S, tk_ir *b, const char *cand, char *started, int *cur) {
    for (int i = 0; i < b->n; i++) {
        tk_ir *s = b->k[i];
        if (s->op == IR_BLOCK) {
            version(C, S, s, cand, started, cur);
            continue;
        }
        if (s->op == IR_ASSIGN && cand[s->local]) {
            int l = s->local;
            reads_to(s->k[0], cur);
            if (started[l]) { /* a new version */
                tk_local was = S->locals[l];
                int v = tk_new_local(C, S, was.name, was.ty, was.scope);
                S->locals[v].declared = was.declared;
                S->locals[v].line = was.line;
                S->locals[v].shown = was.shown;
                cur[l] = v;
            }
            started[l] = 1;
            s->local = cur[l];
            continue;
        }
        reads_to(s, cur);
    }
}

/* the statements of plain blocks nested in b (a folded `if` leaves its branch as one) in b itself:
 * checks.c hoists what it finds at a loop body's top level */
static void flatten(tk_cc *C, tk_ir *b) {
    int nested = 0;
    for (int i = 0; i < b->n; i++) nested |= b->k[i]->op == IR_BLOCK && !b->k[i]->str;
    if (!nested) return;
    tk_ir *nb = ir_new(C, IR_BLOCK, ty_void(), b->line);
    for (int i = 0; i < b->n; i++) {
        tk_ir *s = b->k[i];
        if (s->op == IR_BLOCK && !s->str) {
            flatten(C, s);
            for (int j = 0; j < s->n; j++) ir_push(C, nb, s->k[j]);
        } else ir_push(C, nb, s);
    }
    b->k = nb->k;
    b->n = nb->n;
    b->cap = nb->cap;
}

static void versions(tk_cc *C, tk_spec *S, tk_ir *body) {
    flatten(C, body);
    int n = S->nlocals;
    int *count = tk_alloc(&C->arena, sizeof(int) * (size_t)n), *cur = tk_alloc(&C->arena, sizeof(int) * (size_t)n);
    char *seen = tk_alloc(&C->arena, (size_t)n), *bad = tk_alloc(&C->arena, (size_t)n);
    char *cand = tk_alloc(&C->arena, (size_t)n), *started = tk_alloc(&C->arena, (size_t)n);
    memset(count, 0, sizeof(int) * (size_t)n);
    memset(seen, 0, (size_t)n);
    memset(bad, 0, (size_t)n);
    top_assigns(body, count, seen, bad);
    memset(seen, 0, (size_t)n);
    order(body, seen, bad);
    int any = 0;
    for (int l = 0; l < n; l++) {
        const tk_local *x = &S->locals[l];
        cand[l] = (char)(count[l] > 1 && !bad[l] && x->ty.kind == TY_VALUE && x->scope >= 0 && !x->is_param &&
                         !x->shared && ir_assignments(body, l) == count[l] && names(S->body, l) == names(body, l));
        any |= cand[l];
        cur[l] = l;
        started[l] = 0;
    }
    if (any) {
        as_tree(C, body);
        version(C, S, body, cand, started, cur);
    }
}

/* each parallel loop's body: unrolled (versions 0), or its locals made versions (1) */
static int each_pfor(tk_cc *C, tk_spec *S, tk_ir *b, int versions_step) {
    int done = 0;
    for (int i = 0; i < b->n; i++) {
        tk_ir *s = b->k[i];
        switch (s->op) {
        case IR_BLOCK: done += each_pfor(C, S, s, versions_step); break;
        case IR_IF: done += each_pfor(C, S, s->k[1], versions_step) + each_pfor(C, S, s->k[2], versions_step); break;
        case IR_WHILE: done += each_pfor(C, S, s->k[1], versions_step); break;
        case IR_FOR: done += each_pfor(C, S, s->k[3], versions_step); break;
        case IR_PFOR:
            if (ir_is_blocks(s)) break; /* a blocks loop keeps its barriers' order */
            if (versions_step) versions(C, S, s->k[s->aux]);
            else done += unroll_block(C, S, s->k[s->aux]);
            break;
        default: break;
        }
    }
    return done;
}

void tk_unroll(tk_cc *C) {
    tk_spec *K = C->nspecs ? C->specs[0] : NULL;
    if (!K || !K->body || C->target->loops != TK_LOOPS_CHUNKED) return;
    if (!each_pfor(C, K, K->body, 0)) return;
    tk_fold(C); /* the copies' constant conditions go (if di != 0 ...), then their locals become versions */
    each_pfor(C, K, K->body, 1);
}
