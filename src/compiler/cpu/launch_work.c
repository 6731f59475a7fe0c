/*
 * launch_work.c -- how much work a parallel loop with inner loops does, as
 * the launch sees it: whether it is worth the second thread.
 *
 * emit_cpu.c's cost model gives each parallel loop the fewest iterations
 * worth a fork-join (min_parallel): from a rough count of a loop-free
 * body's operations (8192 to 32768 iterations, a few microseconds), and 2
 * for a body with loops or calls, whose iterations may each be long.  That
 * 2 is right for an n-body step or a matrix product and wrong for the short
 * steps of a computation that launches one kernel per pivot or diagonal:
 * lud at 256^2 launches 255 times, with 255 - k rows of 255 - k elements at
 * pivot k, and its last fifty launches are a microsecond or less of work
 * each.  Handing such a launch to the pool costs more than the work: the
 * job published, the worker's cache lines moved, a dozen pieces claimed
 * and counted, and on a loaded machine the chance that the worker is
 * descheduled holding a piece the caller must wait for.
 *
 * Most such inner loops have bounds that do not change across the parallel
 * loop's iterations -- frame locals, scalar arguments, extents, constants
 * (nests.c hoists many) -- so the launch can count their iterations before
 * it runs.  This file writes that count: an estimate of one iteration's
 * work, in the cost model's units, as a C expression evaluated at the launch:
 * the body's straight-line operations (body_cost) plus, for each inner loop,
 * its trip count (tk_trip of its bounds) times its own body's estimate, and
 * the dearer branch of an `if` (nests.c's checked and unchecked versions of
 * a loop are such an if).  A body with a while loop, a call, or a loop whose
 * bounds depend on the iteration (a triangle's `range(i)`) has no estimate,
 * and keeps min_parallel 2.
 *
 * The launch then runs on the caller alone when its iterations times the
 * estimate is under TK_SERIAL_WORK units, what a loop-free body needs
 * (emit_cpu.c: 8192 to 32768 iterations, about 524288 units), and hands
 * out pieces of at least TK_PIECE_WORK units (the grain, in iterations,
 * raised to that).  Both from lud at 256^2 on this project's 2-core Xeon,
 * quiet (load 0.3), each pivot's launch repeated 10,000 times on one thread
 * and on two: two threads drew level with one at 159 rows (472,000 units by
 * this estimate; 2.6 us a launch) and won from 175 (570,000), below which
 * they lost up to 0.4 us.  Without a grain the pool halved each thread's
 * share down to one row, a dozen pieces a launch, each a call of the chunk
 * and a claim; pieces of 262144 units (about a microsecond) took the whole
 * 255-pivot run from 0.575 to 0.509 ms on two threads, and the threshold
 * from 131072 units to 524288 to 0.47-0.49 ms, level with C+OpenMP's
 * 0.46-0.50 in the same runs.  (The threshold had been set at a load
 * average of 9, where two threads of the old, finely split launch drew
 * level with one at 96 rows.)  The units count a vectorized loop's
 * operations; an inner loop that GCC cannot vectorize (a chain of
 * dependent cells, like nw's) costs several times more per unit, so such a
 * loop's launch can stay on one thread up to some tens of microseconds.
 * (nw itself has no estimate: its blocks' bounds depend on the block.)
 * Only loops with inner loops and an estimate are affected; a histogram
 * loop or a blocks loop keeps its own rule.
 */
#include <string.h>

#include "compiler/compiler.h"
#include "compiler/emit/emit.h"

/* A launch of a loop with inner loops whose estimated work is under this many units runs on the caller. */
#define TK_SERIAL_WORK 524288
/* Each piece such a launch hands out is at least this many units (its grain). */
#define TK_PIECE_WORK 262144

/* Whether integer expression x has the same value in every iteration of the
 * parallel loop whose body is `body`, and can be evaluated at its launch
 * (no division: a zero divisor there would be undefined). */
static int invariant(const tk_emitter *e, const tk_ir *body, const tk_ir *x) {
    if (x->ty.kind != TY_VALUE || !ty_is_int(x->ty)) return 0;
    switch (x->op) {
    case IR_CONST: return 1;
    case IR_SHAPE: return x->param >= 0;
    case IR_LOCAL: {
        const tk_local *l = &e->S->locals[x->local];
        return l->scope == -1 && l->ty.kind == TY_VALUE && !ir_assigns_local(body, x->local);
    }
    case IR_BIN:
        if (x->sub != B_ADD && x->sub != B_SUB && x->sub != B_MUL && x->sub != B_MIN && x->sub != B_MAX) return 0;
        return invariant(e, body, x->k[0]) && invariant(e, body, x->k[1]);
    case IR_UN: return x->sub == U_NEG && invariant(e, body, x->k[0]);
    case IR_CAST: return x->n == 1 && invariant(e, body, x->k[0]);
    default: return 0;
    }
}

/* Whether statement s (in the parallel loop's body `body`) has an estimate. */
static int estimable(const tk_emitter *e, const tk_ir *body, const tk_ir *s) {
    switch (s->op) {
    case IR_WHILE: case IR_CALL: return 0;
    case IR_FOR:
        return invariant(e, body, s->k[0]) && invariant(e, body, s->k[1]) && invariant(e, body, s->k[2]) &&
               estimable(e, body, s->k[3]);
    default:
        for (int i = 0; i < s->n; i++)
            if (!estimable(e, body, s->k[i])) return 0;
        return 1;
    }
}

static int has_loop(const tk_ir *s) {
    if (s->op == IR_FOR) return 1;
    for (int i = 0; i < s->n; i++)
        if (has_loop(s->k[i])) return 1;
    return 0;
}

/* The units of statement s with no loop in it: a block's statements', an if's
 * condition and dearer branch, any other statement's operations. */
static int64_t flat_work(const tk_ir *s) {
    if (s->op == IR_BLOCK) {
        int64_t c = 0;
        for (int i = 0; i < s->n; i++) c += flat_work(s->k[i]);
        return c;
    }
    if (s->op == IR_IF) {
        int64_t a = flat_work(s->k[1]), b = s->n > 2 ? flat_work(s->k[2]) : 0;
        return em_body_cost(s->k[0]) + (a > b ? a : b);
    }
    return em_body_cost(s);
}

/* The estimate of statement s's work as a C expression of doubles: a loop's
 * trip count times its body's, a block's sum, an if's condition and the
 * dearer of its branches (nests.c's versions of a loop are such an if). */
static void write_work(tk_emitter *e, const tk_ir *s) {
    if (!has_loop(s)) {
        P(e, "%lld.0", (long long)flat_work(s));
        return;
    }
    switch (s->op) {
    case IR_FOR:
        P(e, "(double)tk_trip(");
        ex(e, s->k[0]); P(e, ", "); ex(e, s->k[1]); P(e, ", "); ex(e, s->k[2]);
        P(e, ") * (1.0 + ");
        write_work(e, s->k[3]);
        P(e, ")");
        return;
    case IR_IF:
        P(e, "%lld.0 + tk_work_max(", (long long)em_body_cost(s->k[0]));
        write_work(e, s->k[1]);
        P(e, ", ");
        if (s->n > 2) write_work(e, s->k[2]);
        else P(e, "0.0");
        P(e, ")");
        return;
    default: /* a block (estimable: no other statement holds a loop) */
        P(e, "(0.0");
        for (int i = 0; i < s->n; i++) {
            P(e, " + ");
            write_work(e, s->k[i]);
        }
        P(e, ")");
        return;
    }
}

int tk_cpu_launch_work(tk_emitter *e, tk_ir *s, const char *total, const char *mp, const char *grain) {
    if (s->op != IR_PFOR || ir_is_blocks(s) || s->hist) return 0;
    const tk_ir *body = s->k[s->aux];
    if (!estimable(e, body, body)) return 0;
    I(e); P(e, "/* tk: one iteration's estimated work, its inner loops counted (launch_work.c): */\n");
    I(e); P(e, "/* a launch of under %d units runs on the caller */\n", TK_SERIAL_WORK);
    I(e); P(e, "#define tk_work_max(a, b) ((a) > (b) ? (a) : (b))\n");
    I(e); P(e, "/* and a piece is at least %d units */\n", TK_PIECE_WORK);
    I(e); P(e, "const double w_ = 1.0 + ");
    write_work(e, body);
    P(e, ";\n");
    I(e); P(e, "const int64_t %s = (double)%s * w_ < %d.0 ? %s + 1 : 2;\n", mp, total, TK_SERIAL_WORK, total);
    I(e); P(e, "if ((double)%s * w_ < %d.0) %s = (int64_t)(%d.0 / w_) + 1;\n", grain, TK_PIECE_WORK, grain,
            TK_PIECE_WORK);
    I(e); P(e, "#undef tk_work_max\n");
    return 1;
}
