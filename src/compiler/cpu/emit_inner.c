/*
 * emit_inner.c -- the innermost loop of a CPU chunk function: SIMD lanes,
 * the last vector overlapping, sums in two streams, checks verified a
 * block ahead, and the interior of a loop with periodic indices.
 *
 * emit_cpu.c lays a parallel loop out as chunk functions and their
 * versions (fast divisions, whole rows, the private-histogram copies);
 * inside each version the loop that runs the iterations one after the
 * other is this file's.  It is where the C compiler is told what it may
 * assume: that iterations are independent (`#pragma omp simd`, with
 * reduction(+) for the private sums), that the inner loops of an
 * iteration run at least once (the version on their guards), that the
 * data-dependent checks at the top of a body passed (verified a block
 * ahead), that a periodic index is its own remainder (the interior).  And
 * it is where the loop's shape is chosen for the vector unit: a short
 * remainder run as one vector overlapping the last, a sum as two
 * independent add chains, a running float maximum in lanes and again in
 * order where its result is a zero, whose sign the order decides.  What each costs and gains is measured in the
 * comments where it is chosen.
 *
 * The chunk function (emit_cpu.c) asks three things: the locals that
 * live across iterations (em_carried_locals), the verifiable prefix of
 * checks (em_verify_prefix), and the loop itself (em_innermost).  The
 * emitter's mode (emit.h: fastv, whole_row, per, rlo/rhi, hist, exact)
 * says which version is being written; this file reads it and sets only
 * rlo/rhi (a block of the range), per (the interior) and nopoll (in lanes).
 */
#include <string.h>

#include "compiler/compiler.h"
#include "compiler/emit/emit.h"
#include "runtime/config.h"

/* ---------------------------------------------------------- SIMD lanes */
/* Whether a parallel loop's body may run its iterations in SIMD lanes: it
 * cannot leave the loop early (no checks, returns, or breaks out of it), and
 * lanes cannot collide (no atomics, and not the private-histogram version,
 * whose counts two lanes could add into one cell).  Prints are left
 * serial, and calls but to the functions em_lane_func (emit_lanes.c)
 * admits.  `depth` counts the serial loops around `x` inside the body. */
static int simd_body(const tk_cc *C, const tk_ir *x, int depth) {
    switch (x->op) {
    case IR_CHECK: case IR_RETURN: case IR_PRINT: case IR_ATOMIC: return 0;
    case IR_CALL:
        if (!em_lane_func(C, x->aux)) return 0;
        break;
    case IR_BREAK: return depth > 0;
    case IR_FOR: case IR_WHILE: depth++; break;
    default: break;
    }
    for (int i = 0; i < x->n; i++)
        if (!simd_body(C, x->k[i], depth)) return 0;
    return 1;
}

int em_body_in_lanes(const tk_cc *C, const tk_ir *body) { return simd_body(C, body, 0); }

/* In a dialect whose loops poll (emit.c), an iteration in SIMD lanes cannot
 * stop, so it must end soon by itself: its serial loops must all be the
 * guarded ones of simd_guards, which bound their trip counts (below). */
#define LANE_TRIP (1 << 22)
static int serial_loops(const tk_ir *x) {
    int n = x->op == IR_FOR || x->op == IR_WHILE;
    for (int i = 0; i < x->n; i++) n += serial_loops(x->k[i]);
    return n;
}
static int guarded_loops(tk_emitter *e, tk_ir *loop, tk_ir *body);

/* A scalar type that OpenMP's reduction(+) clause takes. */
static int simd_scalar(int dt) {
    return !dt_is_half(dt) && dt != TACK_BOOL && dt_scalar((tack_dtype)dt) == (tack_dtype)dt;
}

/* Whether x stores into an array (a local array's element is the iteration's own). */
static int stores_array(const tk_ir *x) {
    if (x->op == IR_STORE) return 1;
    for (int i = 0; i < x->n; i++)
        if (stores_array(x->k[i])) return 1;
    return 0;
}

/* Whether the loop keeps a float running min/max (privatize.c). */
static int float_minmax(const tk_ir *s) {
    for (int r = 0; s->red && r < s->red->n; r++)
        if (s->red->k[r]->sub != A_ADD && is_float_dt(s->red->k[r]->ty.dt)) return 1;
    return 0;
}

/* A float running min/max runs in lanes only where the loop can run again
 * in order (rerun_loop): every private value of the loop is a min or a max
 * (a sum would add twice), and the body stores nothing (its calls, lane
 * functions, store nothing either), so a second run changes nothing but
 * the running values.  An integer's min/max is exact in any order. */
static int minmax_lanes_ok(const tk_ir *s) {
    if (!float_minmax(s)) return 1;
    for (int r = 0; r < s->red->n; r++)
        if (s->red->k[r]->sub == A_ADD) return 0;
    return !stores_array(s->k[s->aux]);
}

/* `#pragma omp simd` on the loop whose iterations are the parallel loop's:
 * they are independent by the language's definition, so the C compiler may
 * run them in vector lanes -- the outer-loop vectorization that makes an
 * n-body's per-body inner loop vector code without reassociating anything.
 * The chunk's private sums (privatize.c) get reduction(+): their order was
 * never specified (chunks combine atomically in any order), and partial
 * sums per lane make a long add chain vector code. */
static int simd_ok(tk_emitter *e, tk_ir *s) {
    if (!e->T->simd_pragma || !e->C->opts.optimize || e->hist || e->exact == CHUNK_EXACT) return 0;
    if (!simd_body(e->C, s->k[s->aux], 0)) return 0;
    if (e->T->polls && serial_loops(s->k[s->aux]) != guarded_loops(e, s, s->k[s->aux])) return 0;
    for (int r = 0; s->red && r < s->red->n; r++) /* a sum, or a running min/max (rerun_loop) */
        if (!simd_scalar(s->red->k[r]->ty.dt) ||
            (s->red->k[r]->sub != A_ADD && s->red->k[r]->sub != A_MIN && s->red->k[r]->sub != A_MAX))
            return 0;
    return minmax_lanes_ok(s);
}

static void simd_pragma(tk_emitter *e, tk_ir *s) {
    static const tk_atom ops[3] = {A_ADD, A_MIN, A_MAX};
    static const char *const names[3] = {"+", "min", "max"};
    I(e); P(e, "#pragma omp simd");
    for (int o = 0; o < 3; o++) {
        int n = 0;
        for (int r = 0; s->red && r < s->red->n; r++) {
            if (s->red->k[r]->sub != ops[o]) continue;
            if (n++) P(e, ", ");
            else P(e, " reduction(%s: ", names[o]);
            local_name(e, s->red->k[r]->k[0]->local);
        }
        if (n) P(e, ")");
    }
    P(e, "\n");
}

/* GCC vectorizes an outer loop only when the loops nested in it run at
 * least once: otherwise the guard that skips an empty inner loop is control
 * flow it refuses.  The serial loops at the top of the body with invariant
 * bounds and step 1 (an n-body's `for j in range(n)`) give the condition
 * `lo < hi` on which the chunk's loop is versioned (the other version, for
 * empty inner loops, is the same loop without the assumption).  Where loops
 * poll, the condition also bounds each such loop to LANE_TRIP iterations,
 * so that an iteration in lanes ends within milliseconds: the version for
 * longer loops polls (an n-body over four million bodies). */
static int guard_ok(tk_ir *loop, tk_ir *f) {
    return f->op == IR_FOR && ir_invariant(f->k[0], loop) && ir_invariant(f->k[1], loop) && f->k[2]->op == IR_CONST &&
           f->k[2]->c.i == 1 && !serial_loops(f->k[3]);
}

static int guarded_loops(tk_emitter *e, tk_ir *loop, tk_ir *body) {
    int n = 0;
    for (int i = 0; i < body->n; i++) {
        tk_ir *f = body->k[i];
        if (f->op == IR_BLOCK) n += guarded_loops(e, loop, f);
        else n += guard_ok(loop, f);
    }
    return n;
}

/* Writes the guards of body's loops joined by &&, after the n written
 * before it (a nested block's come after its parent's: their count runs on,
 * else a block's first guard would follow the last one with no &&, C that
 * does not compile); returns the count so far. */
static int simd_guards(tk_emitter *e, tk_ir *loop, tk_ir *body, int n) {
    for (int i = 0; i < body->n; i++) {
        tk_ir *f = body->k[i];
        if (f->op == IR_BLOCK) { n = simd_guards(e, loop, f, n); continue; }
        if (f->op != IR_FOR || !ir_invariant(f->k[0], loop) || !ir_invariant(f->k[1], loop)) continue;
        if (f->k[2]->op != IR_CONST || f->k[2]->c.i != 1) continue;
        P(e, n ? " && (" : "(");
        ex(e, f->k[0]); P(e, ") < ("); ex(e, f->k[1]); P(e, ")");
        if (e->T->polls) {
            P(e, " && (uint64_t)("); ex(e, f->k[1]); P(e, ") - (uint64_t)("); ex(e, f->k[0]);
            P(e, ") <= %d", LANE_TRIP);
        }
        n++;
    }
    return n;
}

/* Mark the locals of a parallel loop whose values live across iterations:
 * the private sums, the segment quotients (strength.c), and the outer
 * indices of an ndrange; the rest are declared inside the loop body, so
 * each iteration (each SIMD lane) has its own. */
static void mark_carried(tk_ir *x, char *carried) {
    if (x->op == IR_MATH && (x->sub == M_FDIVQ || x->sub == M_MODQ) && x->n == 6) carried[x->k[4]->local] = 1;
    for (int i = 0; i < x->n; i++) mark_carried(x->k[i], carried);
}

char *em_carried_locals(tk_emitter *e, tk_ir *s) {
    char *c = tk_alloc(&e->C->arena, (size_t)e->S->nlocals + 1);
    memset(c, 0, (size_t)e->S->nlocals + 1);
    mark_carried(s->k[s->aux], c);
    for (int r = 0; s->red && r < s->red->n; r++) c[s->red->k[r]->k[0]->local] = 1;
    for (int d = 0; d + 1 < s->aux; d++) c[s->vars[d]] = 1;
    return c;
}

/* An iteration's private locals and its index variable. */
static void iteration_head(tk_emitter *e, tk_ir *s, const char *carried) {
    int nd = s->aux;
    declare_locals(e, e->S->locals[s->vars[0]].scope, 0, carried, 0);
    I(e); local_name(e, s->vars[nd - 1]);
    if (nd > 1) P(e, " = j_;\n");
    else if (s->off) { P(e, " = (int64_t)((uint64_t)i_ + (uint64_t)("); ex(e, s->off); P(e, "));\n"); }
    else P(e, " = i_;\n");
    em_race_iteration(e, s); /* check_races */
}

/* The innermost loop's variable and bounds: i_ over the chunk or the
 * segment (one dimension), j_ over the row (an ndrange), or a block of
 * either (e->rlo, e->rhi) when checks are verified ahead. */
static void inner_range(tk_emitter *e, tk_ir *s, const char **v, const char **lo, const char **hi) {
    int nd = s->aux;
    *v = nd > 1 ? "j_" : "i_";
    *lo = e->rlo ? e->rlo : nd > 1 ? (e->whole_row == ROW_WHOLE ? "0" : "jb_") : e->fastv == DIV_SEGMENTED ? "s_" : "lo_";
    *hi = e->rhi ? e->rhi : nd > 1 ? (e->whole_row == ROW_WHOLE ? "inner_" : "je_") : e->fastv == DIV_SEGMENTED ? "e_" : "hi_";
}

/* The header of a loop of variable v over [lo, hi); in a segment (strength.c)
 * the loop counts k_ from lo - s_ in 32 bits, so that i % d (o + k_) and
 * what is computed from it take 32-bit lanes, and i_ follows from k_. */
static void loop_header(tk_emitter *e, tk_ir *s, const char *v, const char *lo, const char *hi) {
    I(e);
    if (s->aux == 1 && e->fastv == DIV_SEGMENTED) {
        P(e, "for (int32_t k_ = (int32_t)(%s - s_); k_ < (int32_t)(%s - s_); k_++) {\n", lo, hi);
        e->ind++;
        I(e); P(e, "const int64_t %s = s_ + k_;\n", v);
        e->ind--;
    } else {
        P(e, "for (int64_t %s = %s; %s < %s; %s++) {\n", v, lo, v, hi, v);
    }
}

/* ---- the last vector overlapping the one before
 *
 * GCC runs a loop in lanes as a vector loop and an epilogue: for the
 * remainder after the last whole vector, half a vector and then scalar
 * iterations.  Where the trip is short that epilogue is much of the time:
 * a 7-point stencil's 38-element f32 rows are four vectors of eight, four
 * lanes and two scalar iterations, and the epilogue took a third of the
 * time (a profile, 40^3, one thread).  When an iteration can run twice
 * with the same effect, the remainder can instead be one whole vector that
 * overlaps the vector before it: iterations hi - W .. hi - 1, some of them
 * run again.  That holds when
 *   - the body can run in lanes (simd_ok: no checks, calls, atomics or
 *     private histogram) and has no private sums (a second run would add
 *     twice) and no segment state (strength.c);
 *   - no array it writes is read in the body, and the call's arrays share
 *     no memory (restrict): a second run reads what the first read and
 *     stores the same values;
 *   - it writes only scalar, non-complex elements (their size gives W).
 * Locals are declared per iteration, so a second run starts afresh.  W is
 * a vector register's bytes (TK_VEC_BYTES, the prelude) over the stored
 * element's size, and the overlapping vector is taken only when the
 * remainder is more than half a vector: at half or less, GCC's half-vector
 * epilogue and a scalar iteration or two cost less than a whole vector
 * more (generated C alone, in alternation, one thread: rows of 14 and 38,
 * remainders 6, 3.1 -> 1.9 us and 33 -> 28 us; rows of 44 and 98,
 * remainders 4 and 2, 29 -> 33 us and 403 -> 502 us with the overlap).
 * The row keeps its plain loop for the other case, a third copy of the
 * body: with one loop whose end moves instead, the overlapping rows ran 10%
 * slower (the kernel at 16^3 and 40^3, one thread, in alternation).  The
 * 7-point stencil at 16^3 and 40^3, one thread: 1.23-1.38x faster; at 100^3
 * (remainder 2) unchanged.  The copies cost compile time: that stencil's
 * cold build 180-270 -> 250-330 ms. */
static void stores_loads(const tk_ir *x, uint64_t *stored, uint64_t *loaded, int *bytes) {
    if (x->op == IR_STORE) {
        tack_dtype dt = (tack_dtype)x->k[0]->ty.dt;
        int b = dt_scalar(dt) == dt && !ty_is_complex(x->k[0]->ty) && !x->comp ? dt_bits(dt) / 8 : 0;
        if (x->param >= 63 || b <= 0) *bytes = -1;
        else {
            *stored |= (uint64_t)1 << x->param;
            if (*bytes >= 0 && b > *bytes) *bytes = b;
        }
    }
    if (x->op == IR_LOAD || x->op == IR_SHAPE || x->op == IR_WRAP) {
        if (x->param >= 63) *bytes = -1;
        else if (x->op == IR_LOAD) *loaded |= (uint64_t)1 << x->param;
    }
    for (int i = 0; i < x->n; i++) stores_loads(x->k[i], stored, loaded, bytes);
}

/* The stored element's bytes when the loop may run its remainder as an
 * overlapping vector (above), else 0. */
static int overlap_bytes(tk_emitter *e, tk_ir *s) {
    if (!e->C->opts.optimize || e->fastv == DIV_SEGMENTED || (s->red && s->red->n) || e->whole_row != ROW_WHOLE) return 0;
    for (int p = 0; p < e->S->nparams; p++)
        if (e->S->ptypes[p].kind == TY_ARRAY && !*tk_emitter_restrict(e, p, "r")) return 0;
    uint64_t stored = 0, loaded = 0;
    int bytes = 0;
    stores_loads(s->k[s->aux], &stored, &loaded, &bytes);
    return (bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8) && stored && !(stored & loaded) ? bytes : 0;
}

static void inner_body(tk_emitter *e, tk_ir *s, const char *carried, int simd);

/* When the remainder is more than half a vector: the loop in lanes up to
 * it and one vector ending at the row's end; else the loop as it was. */
static void overlap_loop(tk_emitter *e, tk_ir *s, const char *carried, int bytes) {
    static const char *const ends[9] = {NULL, "ot_ + TK_VEC_BYTES / 1", "ot_ + TK_VEC_BYTES / 2", NULL,
                                        "ot_ + TK_VEC_BYTES / 4", NULL, NULL, NULL, "ot_ + TK_VEC_BYTES / 8"};
    const char *v, *lo, *hi, *rlo = e->rlo, *rhi = e->rhi;
    inner_range(e, s, &v, &lo, &hi);
    I(e); P(e, "const int64_t or_ = (%s - %s) %% (TK_VEC_BYTES / %d);\n", hi, lo, bytes);
    I(e); P(e, "if (%s - %s >= TK_VEC_BYTES / %d && 2 * or_ > TK_VEC_BYTES / %d) {", hi, lo, bytes, bytes);
    P(e, " /* tk: the remainder as a vector overlapping the last (emit_inner.c) */\n");
    e->ind++;
    I(e); P(e, "const int64_t om_ = %s - or_, ot_ = %s - TK_VEC_BYTES / %d;\n", hi, hi, bytes);
    e->rlo = lo;
    e->rhi = "om_";
    inner_body(e, s, carried, 1);
    e->rlo = "ot_";
    e->rhi = ends[bytes];
    inner_body(e, s, carried, 1);
    e->rlo = rlo;
    e->rhi = rhi;
    e->ind--;
    I(e); P(e, "} else {\n");
    e->ind++;
    inner_body(e, s, carried, 1);
    e->ind--;
    I(e); P(e, "}\n");
}

/* ---- several sums a trip
 *
 * GCC runs a private sum in lanes with one vector accumulator, so each
 * trip waits for the previous trip's add (3-4 cycles) while a load could
 * go every cycle.  Where that add is what the loop waits on -- at most one
 * array load a sum, no math function, division or call, a small body
 * without loops -- the chunk runs as two streams over its two halves, each
 * with its own copy of every sum (<sum>_1), in one loop in lanes whose
 * reduction clause names both; then the last iteration at most, in a loop
 * whose bound says so (bounded only by hi, GCC vectorized it, in-order
 * adds and their epilogues, for iterations that never come); then
 * s = s + s_1.  Only the grouping of the additions changes, which the
 * language leaves open (docs/language.md, "Atomics"; integer sums are
 * exact either way); debug mode adds in loop order, as before.
 *
 * Measured in one process, the streams timed against one (sum_streams=1,
 * the code before) in alternation, best of rounds, on a loaded 2-core
 * Zen 4 (AVX-512): a sum of 64K elements 1.34x (f32) and 1.40x (f64) on
 * one thread, 1.15x and 1.33x on two; at 1M 1.17-1.24x; at 16M the memory
 * decides.  Four streams were no faster than two, and a dot product (two
 * loads an add: the loads are the limit) gained nothing from two and lost
 * up to 17% with four, so it keeps one.  The cost is compile time, only in
 * such loops: the body twice in the vector loop and in GCC's scalar
 * epilogue, which GCC peels completely (up to 15 copies a stream for f32):
 * +5-7 ms of C-compiler CPU for an f64 or i64 sum, +8-10 ms for f32 (on
 * about 50).  Elementwise loops are not unrolled: GCC's unroller
 * (-funroll-loops, 4 or 8 vectors a trip) left saxpy and the 3-D stencils
 * unchanged (decisions.md). */
#define SUM_STREAM_NODES 48 /* IR nodes of a body written once a stream */

/* The streams a sum runs in (config.def's sum_streams: "1|2|4", so 1 << its index). */
static int sum_streams(void) { return 1 << tk_config_int(TK_CFG_SUM_STREAMS); }

static int ir_nodes(const tk_ir *x) {
    int n = 1;
    for (int i = 0; i < x->n; i++) n += ir_nodes(x->k[i]);
    return n;
}

/* The array elements a body loads, or -1 where it calls a function, a math
 * function or divides: work that outlasts an add, so more chains do not help. */
static int sum_loads(const tk_ir *x) {
    if (x->op == IR_CALL || x->op == IR_MATH || x->op == IR_ATOMIC) return -1;
    if (x->op == IR_BIN && (x->sub == B_DIV || x->sub == B_FLOORDIV || x->sub == B_MOD || x->sub == B_POW)) return -1;
    int n = x->op == IR_LOAD || x->op == IR_LLOAD;
    for (int i = 0; i < x->n; i++) {
        int k = sum_loads(x->k[i]);
        if (k < 0) return -1;
        n += k;
    }
    return n;
}

/* Streams where the sums' adds are what the loop waits on: at most one load
 * a sum (a sum, a sum of squares, a count), a small body without loops. */
static int streams_ok(tk_emitter *e, tk_ir *s) {
    if (sum_streams() < 2 || !s->red || !s->red->n || s->aux != 1 || e->fastv == DIV_SEGMENTED || e->rlo || e->rhi ||
        e->rc || serial_loops(s->k[1]) || ir_nodes(s->k[1]) > SUM_STREAM_NODES)
        return 0;
    for (int r = 0; r < s->red->n; r++) /* a vector sum: one stream, its own type's adds; a min/max: in order */
        if (!simd_scalar(s->red->k[r]->ty.dt) || s->red->k[r]->sub != A_ADD) return 0;
    int loads = sum_loads(s->k[1]);
    return loads >= 0 && loads <= s->red->n;
}

static void sum_copy(tk_emitter *e, tk_ir *s, int c, int to_copy) {
    for (int r = 0; r < s->red->n; r++) {
        int id = s->red->k[r]->k[0]->local;
        I(e);
        if (to_copy) { local_name(e, id); P(e, "_%d = ", c); local_name(e, id); P(e, ";\n"); }
        else { P(e, "%s ", ctype(e, s->red->k[r]->ty.dt)); local_name(e, id); P(e, " = "); local_name(e, id); P(e, "_%d;\n", c); }
    }
}

/* Stream c of sum `id`: the sum itself (c = 0) or its copy. */
static void stream_name(tk_emitter *e, int id, int c) {
    local_name(e, id);
    if (c) P(e, "_%d", c);
}

static void stream_loop(tk_emitter *e, tk_ir *s, const char *carried) {
    const char *v, *lo, *hi;
    int n = sum_streams();
    inner_range(e, s, &v, &lo, &hi);
    I(e); P(e, "const int64_t q_ = (%s - %s) / %d, qe_ = %s + %d * q_;", hi, lo, n, lo, n);
    P(e, " /* tk: %d sums a trip (emit_inner.c) */\n", n);
    for (int r = 0; r < s->red->n; r++)
        for (int c = 1; c < n; c++) {
            I(e); P(e, "%s ", ctype(e, s->red->k[r]->ty.dt)); stream_name(e, s->red->k[r]->k[0]->local, c); P(e, " = 0;\n");
        }
    I(e); P(e, "#pragma omp simd reduction(+: ");
    for (int r = 0; r < s->red->n; r++)
        for (int c = 0; c < n; c++) {
            if (r || c) P(e, ", ");
            stream_name(e, s->red->k[r]->k[0]->local, c);
        }
    P(e, ")\n");
    I(e); P(e, "for (int64_t t_ = 0; t_ < q_; t_++) {\n");
    e->ind++;
    for (int c = 0; c < n; c++) {
        I(e); P(e, "{\n");
        e->ind++;
        I(e); P(e, "const int64_t %s = %s + %d * q_ + t_;\n", v, lo, c);
        if (c) sum_copy(e, s, c, 0);
        iteration_head(e, s, carried);
        e->nopoll = 1;
        block(e, s->k[1]);
        e->nopoll = 0;
        if (c) sum_copy(e, s, c, 1);
        e->ind--;
        I(e); P(e, "}\n");
    }
    e->ind--;
    I(e); P(e, "}\n");
    /* The last n - 1 iterations at most, in a loop that says so: GCC vectorized a loop bounded
     * only by hi (in-order adds, with their own epilogues) for iterations that never come. */
    I(e); P(e, "for (int64_t %s = qe_; %s < %s && %s < qe_ + %d; %s++) {\n", v, v, hi, v, n - 1, v);
    e->ind++;
    iteration_head(e, s, carried);
    block(e, s->k[1]);
    e->ind--;
    I(e); P(e, "}\n");
    for (int r = 0; r < s->red->n; r++) { /* (s0 + s1), or (s0 + s1) + (s2 + s3) */
        int id = s->red->k[r]->k[0]->local;
        I(e); local_name(e, id); P(e, " = ");
        for (int c = 0; c < n; c += 2) {
            if (c) P(e, " + ");
            P(e, "("); stream_name(e, id, c); P(e, " + "); stream_name(e, id, c + 1); P(e, ")");
        }
        P(e, ";\n");
    }
}

/* A running float min/max in SIMD lanes.  The CFL condition of a grid code,
 * tack.atomic_max(smax, 0, abs(u) + sqrt(g * h)) over the cells, ran its
 * divisions and square roots one cell at a time: lanes combine their maxima
 * in another order than the iterations', and the order decides one thing,
 * the sign of a zero result (`v > m` leaves m's zero, so the first zero
 * seen wins, as the atomics in order leave it).  Every other result is the
 * one value it can be: no lane holds a NaN (`v > m` skips it), and equal
 * non-zero floats are the same bits.  So the loop runs in lanes, each lane
 * its own `m = v > m ? v : m`, reduction(max) combining them; where a
 * running value ends at zero (of either sign) it is set back and the loop
 * run again in order, which is why the body may store nothing (float_minmax).
 * Measured: see docs/performance.md, "A running maximum per chunk". */
static void rerun_loop(tk_emitter *e, tk_ir *s, const char *carried) {
    I(e); P(e, "{\n");
    e->ind++;
    for (int r = 0; r < s->red->n; r++) {
        I(e); P(e, "const %s ", ctype(e, s->red->k[r]->ty.dt)); local_name(e, s->red->k[r]->k[0]->local);
        P(e, "_b = "); local_name(e, s->red->k[r]->k[0]->local); P(e, ";\n");
    }
    inner_body(e, s, carried, 1);
    I(e); P(e, "if (");
    for (int r = 0, n = 0; r < s->red->n; r++) {
        if (!is_float_dt(s->red->k[r]->ty.dt)) continue; /* an integer's order decides nothing */
        if (n++) P(e, " || ");
        local_name(e, s->red->k[r]->k[0]->local); P(e, " == 0");
    }
    P(e, ") { /* tk: a zero's sign is the first zero's: again in order (emit_inner.c) */\n");
    e->ind++;
    for (int r = 0; r < s->red->n; r++) {
        I(e); local_name(e, s->red->k[r]->k[0]->local); P(e, " = "); local_name(e, s->red->k[r]->k[0]->local);
        P(e, "_b;\n");
    }
    inner_body(e, s, carried, 0);
    e->ind--;
    I(e); P(e, "}\n");
    e->ind--;
    I(e); P(e, "}\n");
}

/* The innermost loop of a chunk with the body; `simd` 1 with the pragma, 0 without. */
static void inner_loop(tk_emitter *e, tk_ir *s, const char *carried, int simd) {
    int bytes = simd ? overlap_bytes(e, s) : 0;
    if (bytes) overlap_loop(e, s, carried, bytes);
    else if (simd && float_minmax(s)) rerun_loop(e, s, carried);
    else if (simd && streams_ok(e, s)) {
        I(e); P(e, "{\n");
        e->ind++;
        stream_loop(e, s, carried);
        e->ind--;
        I(e); P(e, "}\n");
    } else inner_body(e, s, carried, simd);
}

static void inner_body(tk_emitter *e, tk_ir *s, const char *carried, int simd) {
    int nd = s->aux;
    const char *v, *lo, *hi;
    inner_range(e, s, &v, &lo, &hi);
    if (simd) simd_pragma(e, s);
    loop_header(e, s, v, lo, hi);
    e->ind++;
    iteration_head(e, s, carried);
    e->nopoll = simd;
    block(e, s->k[nd]);
    e->nopoll = 0;
    e->ind--;
    I(e); P(e, "}\n");
}

/* The innermost loop, in SIMD lanes when the body allows (versioned on the
 * guards of its inner loops, when it has some). */
static void inner_versions(tk_emitter *e, tk_ir *s, const char *carried) {
    if (!simd_ok(e, s)) { inner_loop(e, s, carried, 0); return; }
    size_t mark = e->b->len;
    I(e); P(e, "if (");
    if (!simd_guards(e, s, s->k[s->aux], 0)) { /* nothing to assume */
        e->b->len = mark;
        inner_loop(e, s, carried, 1);
        return;
    }
    P(e, ") {\n");
    e->ind++; inner_loop(e, s, carried, 1); e->ind--;
    I(e); P(e, "} else {\n");
    e->ind++; inner_loop(e, s, carried, 0); e->ind--;
    I(e); P(e, "}\n");
}

/* ---- block verification of the checks at the top of a body
 *
 * A check that depends on data (`hist[keys[i]] += 1`, `out[i] = x[idx[i]]`)
 * cannot be hoisted out of the loop, and its early exit keeps the loop out
 * of SIMD lanes.  When the body begins with a prefix of such checks and of
 * assignments that only compute (no calls or atomics, loads only from arrays
 * the loop does not write, no private sums), the chunk runs in blocks: a
 * first pass over the block evaluates just the prefix and ORs the failure
 * conditions together -- vector code, reading what the main pass reads
 * again from L1 -- and when none fails the block runs with those checks
 * left out, in SIMD lanes; otherwise it runs with them, so the first
 * failing iteration reports as before.  Only done when the rest of the body
 * can run in lanes: a never-taken branch costs less than the first pass.
 * The loaded arrays are not written while the loop runs, so both passes see
 * the same values. */
enum { VBLOCK = 1024 };

static void arrays_written(const tk_ir *x, uint64_t *w) {
    if (x->op == IR_STORE || x->op == IR_ATOMIC) *w |= 1ull << (x->param & 63);
    if (x->op == IR_CALL) /* an array handed to a function may be written there */
        for (int i = 0; i < x->n; i++)
            if (x->k[i]->op == IR_ARRAY) *w |= 1ull << (x->k[i]->param & 63);
    for (int i = 0; i < x->n; i++) arrays_written(x->k[i], w);
}

/* No calls or atomics, and loads only from arrays not written (`loads`) or none. */
static int computes_only(const tk_ir *x, uint64_t written, int loads) {
    if (x->op == IR_CALL || x->op == IR_ATOMIC || x->op == IR_ARRAY || x->op == IR_LLOAD) return 0;
    if (x->op == IR_LOAD && (!loads || x->param >= 64 || (written >> x->param & 1))) return 0;
    for (int i = 0; i < x->n; i++)
        if (!computes_only(x->k[i], written, loads)) return 0;
    return 1;
}

/* Swap the checks among the body's first n statements with empty blocks
 * (returning what was there) or, given that, put them back. */
static tk_ir **blank_checks(tk_emitter *e, tk_ir *body, int n, tk_ir **saved) {
    if (saved) {
        memcpy(body->k, saved, sizeof(tk_ir *) * (size_t)n);
        return NULL;
    }
    saved = tk_alloc(&e->C->arena, sizeof(tk_ir *) * (size_t)n);
    memcpy(saved, body->k, sizeof(tk_ir *) * (size_t)n);
    tk_ir *none = ir_new(e->C, IR_BLOCK, ty_void(), body->line);
    for (int i = 0; i < n; i++)
        if (body->k[i]->op == IR_CHECK) body->k[i] = none;
    return saved;
}

/* The number of statements in the body's verifiable prefix, if it holds a check; else 0. */
int em_verify_prefix(tk_emitter *e, tk_ir *s, const char *carried) {
    tk_ir *body = s->k[s->aux];
    uint64_t written = 0;
    int n = 0, checks = 0;
    if (!e->C->opts.optimize || e->exact == CHUNK_EXACT) return 0;
    arrays_written(body, &written);
    for (; n < body->n; n++) { /* after a check, no loads: the first pass runs unguarded */
        tk_ir *x = body->k[n];
        if (x->op == IR_BLOCK && x->n == 0) continue; /* what a pass emptied */
        if (x->op == IR_CHECK && computes_only(x, written, !checks)) checks++;
        else if (x->op != IR_ASSIGN || carried[x->local] || !computes_only(x->k[0], written, !checks)) break;
    }
    while (n > 0 && body->k[n - 1]->op != IR_CHECK) n--; /* end at the last check */
    if (!checks) return 0;
    /* worth it when the rest can then run in SIMD lanes (a gather: 1.4-2.7x);
     * a branch that never goes costs less than the first pass otherwise */
    tk_ir **saved = blank_checks(e, body, n, NULL);
    int lanes = simd_ok(e, s);
    blank_checks(e, body, n, saved);
    return lanes ? n : 0;
}

static void verified_blocks(tk_emitter *e, tk_ir *s, const char *carried, int np) {
    tk_ir *body = s->k[s->aux];
    const char *v, *lo, *hi;
    inner_range(e, s, &v, &lo, &hi);
    I(e); P(e, "/* tk: the prefix's checks verified a block at a time */\n");
    I(e); P(e, "for (int64_t b_ = %s, be_; b_ < %s; b_ = be_) {\n", lo, hi);
    e->ind++;
    I(e); P(e, "be_ = %s - b_ > %d ? b_ + %d : %s;\n", hi, VBLOCK, VBLOCK, hi);
    I(e); P(e, "int bad_ = 0;\n");
    I(e); P(e, "#pragma omp simd reduction(|: bad_)\n");
    loop_header(e, s, v, "b_", "be_");
    e->ind++;
    iteration_head(e, s, carried);
    for (int i = 0; i < np; i++) {
        tk_ir *x = body->k[i];
        if (x->op != IR_CHECK) { st(e, x); continue; }
        I(e); P(e, "bad_ |= ("); check_fails(e, x); P(e, ");\n");
    }
    e->ind--;
    I(e); P(e, "}\n");
    e->rlo = "b_";
    e->rhi = "be_";
    I(e); P(e, "if (__builtin_expect(!bad_, 1)) {\n");
    e->ind++;
    tk_ir **saved = blank_checks(e, body, np, NULL);
    inner_versions(e, s, carried);
    blank_checks(e, body, np, saved);
    e->ind--;
    I(e); P(e, "} else {\n");
    e->ind++;
    inner_loop(e, s, carried, 0);
    e->ind--;
    I(e); P(e, "}\n");
    e->rlo = e->rhi = NULL;
    e->ind--;
    I(e); P(e, "}\n");
}

/* The innermost loop, its checks verified a block ahead when the body's
 * prefix allows (np statements), else in SIMD lanes when it allows. */
static void innermost(tk_emitter *e, tk_ir *s, const char *carried, int np) {
    if (np) verified_blocks(e, s, carried, np);
    else inner_versions(e, s, carried);
}

/* ---- periodic indices (periodic.c)
 *
 * In a loop's periodic version the innermost loop runs in three parts: the
 * interior, where the innermost variable's remainders are var + c -- the
 * plain stencil, in SIMD lanes -- and the border iterations before and
 * after it with each `%` as written, through one plain copy of the body
 * (one or two iterations a row).  A chunk's partial first and last rows run
 * whole as the border does, and the version for a flag that fails has no
 * whole-row copy: the Gray-Scott step compiled in twice the time of the
 * loop as written with a split everywhere, about as long without. */
static int per_inner(const tk_ir *x) {
    if (x->op == IR_MATH && x->sub == M_PMOD && x->aux) return 1;
    for (int i = 0; i < x->n; i++)
        if (per_inner(x->k[i])) return 1;
    return 0;
}

void em_innermost(tk_emitter *e, tk_ir *s, const char *carried, int np) {
    if (e->per != PER_BORDER || np || e->fastv == DIV_SEGMENTED || e->rlo || !per_inner(s->k[s->aux]) ||
        (s->aux > 1 && e->whole_row != ROW_WHOLE)) { /* a chunk's partial first or last row: as it is */
        innermost(e, s, carried, np);
        return;
    }
    const char *v, *lo, *hi;
    inner_range(e, s, &v, &lo, &hi);
    I(e); P(e, "{ /* tk: the interior, where the innermost index's %% is the identity (periodic.c) */\n");
    e->ind++;
    I(e); P(e, "int64_t pa_ = "); ex(e, s->per->k[2]); P(e, " < %s ? ", hi); ex(e, s->per->k[2]); P(e, " : %s;\n", hi);
    I(e); P(e, "if (pa_ < %s) pa_ = %s;\n", lo, lo);
    I(e); P(e, "int64_t pb_ = "); ex(e, s->per->k[1]); P(e, " < %s ? ", hi); ex(e, s->per->k[1]); P(e, " : %s;\n", hi);
    I(e); P(e, "if (pb_ < pa_) pb_ = pa_;\n");
    e->rlo = "pa_";
    e->rhi = "pb_";
    e->per = PER_INTERIOR;
    innermost(e, s, carried, np);
    e->per = PER_BORDER;
    /* both borders through one copy of the body */
    I(e); P(e, "for (int pp_ = 0; pp_ < 2; pp_++) {\n");
    e->ind++;
    I(e); P(e, "const int64_t ql_ = pp_ ? pb_ : %s, qh_ = pp_ ? %s : pa_;\n", lo, hi);
    e->rlo = "ql_";
    e->rhi = "qh_";
    inner_loop(e, s, carried, 0);
    e->ind--;
    I(e); P(e, "}\n");
    e->rlo = e->rhi = NULL;
    e->ind--;
    I(e); P(e, "}\n");
}
