/*
 * emit_cpu.c -- the CPU's kernel layout: the "c" dialect's kernel hook.
 *
 * emit.c writes expressions, statements and functions for every dialect;
 * this file decides how a kernel runs on the CPU's threads, as
 * dialect_cuda.c decides how it runs on a GPU's grid.  The shape of the
 * generated C (after the prelude):
 *
 *   struct tk_frame     the kernel's arrays and frame locals, shared with the
 *                       parallel-loop bodies (tk_cpu_frame, the dialect's
 *                       kernel_decls hook: it precedes the functions)
 *   static tk_fN(...)   the @tack.func specializations (emit.c)
 *   static tk_pforN     one function per parallel loop, running [lo, hi) of the
 *                       flattened index space with simple induction variables
 *   tack_entry          the kernel body: straight-line code between parallel
 *                       loops, and for each loop: fill the frame, call
 *                       abi->parallel_for, stop if a check failed
 *
 * The entry is written first (tk_cpu_kernel); each parallel loop met on the
 * way (emit_pfor, through the emitter's `pfor`) writes its caller side in
 * place and its chunk function(s) into a buffer of their own, which goes
 * out ahead of the entry.  The runtime's parallel_for splits the index
 * space into chunks when a loop has enough iterations to repay a fork-join:
 * min_parallel's cost model, from a rough count of the body's operations.
 *
 * A chunk function is where the speed is, so a loop comes out in versions,
 * each a mode of the emitter (emit.h) that changes how some expressions
 * come out:
 *
 *   - a loop with fast divisions (strength.c's M_FDIVQ / M_MODQ) in
 *     versions chosen once per chunk by its flags: segmented (index
 *     quotients fixed per segment), fast (reciprocal estimate plus fix-up),
 *     and exact (the helpers, in a cold function of its own) -- so each
 *     version's loop is free of the branch and the fast ones vectorize;
 *   - the innermost loop of a chunk runs its iterations in SIMD lanes
 *     (`#pragma omp simd`) when nothing in the body can leave the loop
 *     early or collide, versioned on the guards of its inner loops;
 *   - checks that depend on data at the top of a body are verified a block
 *     at a time ahead of the block, which then runs without them in lanes;
 *   - an ndrange chunk's whole rows get a copy of the loop with the same
 *     bounds on every row;
 *   - a loop with periodic indices (periodic.c) in two versions chosen by
 *     its flag: as written, and without the remainders' checks, its
 *     innermost loop split into border, interior (where the `%` of the
 *     innermost index is the identity) and border;
 *   - a loop whose versioned serial loops (nests.c) test only the loop's
 *     variable and fixed values runs, in a chunk whose iterations all pass
 *     (tested before the chunk), a copy with each such loop's check-free
 *     branch alone: no per-iteration test and no checked copy in the loop;
 *   - a loop whose private sums' adds are what it waits on runs two
 *     streams, each with its own sums, so that GCC's one vector a trip is
 *     two independent add chains;
 *   - a loop with a histogram array (privatize.c) is written twice more
 *     over: adding into a private copy on the chunk's stack when the array
 *     is small and the chunk long, and with the atomics otherwise (with
 *     several histogram arrays, a third time, adding into every copy without
 *     a choice per add, for a body of at most TK_COPY_BODY_MAX IR nodes).
 *
 * and a loop that reads records -- an array whose last axis it indexes only
 * by constants, `loc[i, 0]` and `loc[i, 1]` -- gets a second chunk function
 * in which that axis's extent is the constant it must be (record_arrays),
 * chosen at the launch when the arrays have it.
 *
 * The innermost loop of each version -- in SIMD lanes, with the last
 * vector overlapping, as two streams of sums, verified a block ahead, the
 * periodic interior -- is emit_inner.c's (em_innermost); this file writes
 * the chunk function around it, the versions and the launch.  The
 * measurements behind each choice are in the comments where it is made.
 */
#include <string.h>

#include "compiler/compiler.h"
#include "compiler/emit/emit.h"

/* The most IR nodes in a parallel loop's body that gets a further copy of
 * it in its chunk function: the record version (record_arrays), the version
 * adding into all of several histograms' copies (pfor_chunk) and the copy
 * of a chunk whose iterations all pass their loops' tests (chunk_loop).
 * Each copy is the whole body again, and the adjoints of kernels on arrays
 * of vectors (scalarized to `x[i, 0]`, `x[i, 1]`, ... over bodies of
 * 4,000-32,000 nodes) would take them everywhere -- a bead chain's adjoint
 * went from 0.84 to 1.64 MB of C with the record version alone -- where
 * what they speed up is a small part of the work. */
#define TK_COPY_BODY_MAX 4000

/* -------------------------------------------------------------- arrays */
/* The array parameters' data pointers and extents, from the launch's
 * arguments (src "args") or from the frame (src "F"). */
static void array_decls(tk_emitter *e, tk_spec *S, const char *src) {
    for (int p = 0; p < S->nparams; p++) {
        tk_type t = S->ptypes[p];
        if (t.kind != TY_ARRAY) continue;
        I(e);
        P(e, "%s *%sa%d = ", e->D->storage_type((tack_dtype)t.dt), tk_emitter_restrict(e, p, "restrict "), p);
        if (!strcmp(src, "args")) P(e, "(%s *)args[%d].data;\n", e->D->storage_type((tack_dtype)t.dt), p);
        else P(e, "%s->a%d;\n", src, p);
        for (int k = 0; k < t.ndim; k++) {
            I(e);
            if (!strcmp(src, "args")) P(e, "const int64_t a%d_s%d = args[%d].shape[%d];\n", p, k, p, k);
            else if (e->rec && e->rec[p] > 0 && k == t.ndim - 1) /* the record version (record_arrays) */
                P(e, "const int64_t a%d_s%d = %d; /* tk: the record's length, tested at the launch */\n", p, k, e->rec[p]);
            else P(e, "const int64_t a%d_s%d = %s->a%d_s%d;\n", p, k, src, p, k);
        }
        for (int k = 0; t.strided && k < t.ndim; k++) { /* element strides: the launch's second row (cpu_jit.c) */
            I(e);
            if (!strcmp(src, "args")) P(e, "const int64_t a%d_t%d = args[%d].shape[%d];\n", p, k, S->nparams + p, k);
            else P(e, "const int64_t a%d_t%d = %s->a%d_t%d;\n", p, k, src, p, k);
        }
        I(e);
        P(e, "(void)a%d;\n", p);
    }
}

/* ------------------------------------------------------ the cost model */
/* A body with loops or calls is worth spreading even over few iterations. */
static int heavy(const tk_ir *s) {
    if (s->op == IR_FOR || s->op == IR_WHILE || s->op == IR_CALL) return 1;
    for (int i = 0; i < s->n; i++)
        if (heavy(s->k[i])) return 1;
    return 0;
}

/* A rough cost of one iteration of a loop-free body: a unit per operation
 * and per scalar moved, sixteen per math function, eight per division, four per
 * atomic, each times its vector's lanes. */
static int64_t body_cost(const tk_ir *x) {
    int lanes = x->ty.kind == TY_VALUE ? dt_rows((tack_dtype)x->ty.dt) * dt_cols((tack_dtype)x->ty.dt) : 1;
    int64_t c = 0;
    switch (x->op) {
    case IR_LOAD: case IR_STORE: case IR_BIN: case IR_UN: case IR_CAST: case IR_SELECT: case IR_CHECK:
        c = x->op == IR_BIN && (x->sub == B_DIV || x->sub == B_FLOORDIV || x->sub == B_MOD) ? 8 : 1;
        break;
    case IR_MATH: c = x->sub == M_FDIVQ || x->sub == M_MODQ ? 2 : x->sub == M_PMOD ? 0 : 16; break;
    case IR_ATOMIC: c = 4; break;
    default: break;
    }
    c *= lanes > 0 ? lanes : 1;
    for (int i = 0; i < x->n && c < 1000000; i++) c += body_cost(x->k[i]);
    return c;
}

int64_t em_body_cost(const tk_ir *x) { return body_cost(x); }

/* The fewest iterations worth a fork-join (a few microseconds here): 32768
 * for a saxpy-sized body, down to 8192 for costlier ones (normalizing vec3: 9532);
 * two for a body with loops or calls (where the launch can count its inner
 * loops' iterations, launch_work.c keeps a launch of little work on the caller). */
static int64_t min_parallel(const tk_ir *body) {
    if (heavy(body)) return 2;
    int64_t m = 524288 / (body_cost(body) + 1);
    return m < 8192 ? 8192 : m > 32768 ? 32768 : m;
}

/* The same for parallel loop s: a loop with private histograms runs its
 * body in scalar code (an add per key into memory the next key may name
 * again), about 2 ns an iteration, not the vector lanes the estimate above
 * assumes: hist2 (a count and a weighted sum, 256 bins) at 21845 keys ran on
 * one thread in 40 us, over the 32768 its estimate asked for, where
 * OpenMP's two threads took 20 us.  So at most 8192. */
static int64_t pfor_min_parallel(const tk_ir *s) {
    if (ir_is_blocks(s)) return 2; /* a block is a whole loop of threads */
    int64_t m = min_parallel(s->k[s->aux]);
    return s->hist && m > 8192 ? 8192 : m;
}

/* ---- vector width
 *
 * With AVX-512 the C compiler vectorizes a chunk with 64-byte vectors,
 * which pays off for plain streams, stencils, reductions and conversions
 * (16 int32 lanes: the segment's i % d).  A body that moves vectors or
 * matrices through memory is the exception: an array of vec3 is
 * interleaved, and the shuffles that take its fields apart cost more at 64
 * bytes than the width gives (normalize, one core, both widths timed in
 * alternation in one process: 34.7 -> 22.2 us at 21845 elements, 603 -> 412
 * us at 349525, 14.8 -> 14.1 ms at 5.6M).  Such a loop's chunk function
 * carries TK_NARROW (the prelude: GCC's prefer-vector-width=256 on x86-64
 * with AVX-512; nothing elsewhere).  A 7-point stencil, timed the same way,
 * is faster at 32 bytes only at 16^3 (2.5 -> 2.1 us), level at 40^3 and
 * 4-9% slower from 100^3 up, so neighbour loads keep the full width. */
static int moves_vectors(const tk_emitter *e, const tk_ir *x) {
    if (x->op == IR_LOAD || x->op == IR_STORE) {
        tack_dtype dt = (tack_dtype)e->S->ptypes[x->param].dt;
        if (dt_rows(dt) * dt_cols(dt) > 1) return 1;
    }
    for (int i = 0; i < x->n; i++)
        if (moves_vectors(e, x->k[i])) return 1;
    return 0;
}

/* A body whose serial loop carries a floating-point sum in order
 * (`d += t * t` over a row, fast_math off) is the other exception.  GCC
 * vectorizes such a loop as a fold-left sum: the operands a vector at a
 * time, then each lane added to the sum in turn by scalar adds, one chain
 * that is the loop's critical path at any width.  On the Intel Xeon the
 * benchmarks run on (a core whose scalar adds take 2 cycles), that chain
 * runs 1.66x slower while 512-bit operations are in flight beside it and
 * at full speed beside 256-bit ones (2M dependent vaddss, alone 1.43 ms,
 * each beside two independent 256-bit multiplies 1.44 ms, beside two
 * 512-bit ones 2.38-2.41 ms), so the 64-byte operands cost more than their
 * width gives.  kmeans (a point's squared distance to 5 centres over 34 f32
 * features, the argmin, the per-cluster sums), one thread, builds with and
 * without this alternated: 9.64 -> 6.72 ms at 100000 points, 47.6 -> 34.9
 * ms at 500000 (Numba, whose LLVM keeps that loop scalar and prefers
 * 32-byte vectors, 7.71 and 38.8 ms); the benchmarks' triangle (f64)
 * 1.59-1.68x, conv2d 1.14-1.63x; backprop and lavaMD level within the
 * noise (RODINIA.md has the runs).  GCC's own tuning for Intel's AVX-512
 * server parts prefers 32 bytes; -march=native on a CPU model newer than
 * the compiler falls back to generic tuning, which does not (decisions.md,
 * 2026-12-06).  A body that may run in SIMD lanes keeps the full width:
 * there each lane's sum is a chain of vector adds (outer-loop
 * vectorization), not a fold-left; so does fast_math, whose sums GCC
 * reassociates into vector accumulators. */
static const tk_ir *float_uncast(const tk_ir *x) {
    while (x->op == IR_CAST && x->n == 1 && ty_is_float(x->ty)) x = x->k[0];
    return x;
}

static int carries_sum(const tk_emitter *e, const tk_ir *x, int in_loop) {
    if (in_loop && x->op == IR_ASSIGN && x->n == 1 && ty_is_float(e->S->locals[x->local].ty)) {
        const tk_ir *v = float_uncast(x->k[0]);
        if (v->op == IR_BIN && (v->sub == B_ADD || v->sub == B_SUB) && ty_is_float(v->ty))
            for (int i = 0; i < (v->sub == B_ADD ? 2 : 1); i++) {
                const tk_ir *o = float_uncast(v->k[i]);
                if (o->op == IR_LOCAL && o->local == x->local) return 1;
            }
    }
    in_loop |= x->op == IR_FOR || x->op == IR_WHILE;
    for (int i = 0; i < x->n; i++)
        if (carries_sum(e, x->k[i], in_loop)) return 1;
    return 0;
}

/* Whether the chunk function of parallel loop s carries TK_NARROW. */
static int narrow_chunk(const tk_emitter *e, const tk_ir *s) {
    const tk_ir *body = s->k[s->aux];
    if (moves_vectors(e, body)) return 1;
    return !e->C->opts.fast_math && carries_sum(e, body, 0) && !(e->T->simd_pragma && em_body_in_lanes(e->C, body));
}

/* ------------------------------------------------------ fast divisions */
/* A parallel loop's fast-division flag (kid 3 of its M_FDIVQ / M_MODQ) or its
 * segmentation flag (kid 5), if it has one (strength.c). */
static tk_ir *fast_flag(tk_ir *x, int kid) {
    if (x->op == IR_MATH && (x->sub == M_FDIVQ || x->sub == M_MODQ) && x->n > kid) return x->k[kid];
    for (int i = 0; i < x->n; i++) {
        tk_ir *f = fast_flag(x->k[i], kid);
        if (f) return f;
    }
    return NULL;
}

/* Each segment quotient q = index // d, once per q local (marks in `seen`). */
static void segment_heads(tk_emitter *e, tk_ir *x, char *seen) {
    if (x->op == IR_MATH && (x->sub == M_FDIVQ || x->sub == M_MODQ) && x->n == 6 && !seen[x->k[4]->local]) {
        seen[x->k[4]->local] = 1;
        /* a segment starts inside q's run or on its next boundary: step q, divide only
         * at the chunk's start (or, never expected, when w_ is elsewhere) */
        I(e); P(e, "int32_t sr%d_; /* index %% d at the segment's start */\n", x->k[4]->local);
        I(e); P(e, "{ const int64_t d_ = "); ex(e, x->k[1]); P(e, ";\n");
        e->ind++;
        I(e); P(e, "const int64_t o_ = (int64_t)((uint64_t)w_ - (uint64_t)d_ * (uint64_t)"); ex(e, x->k[4]); P(e, ");\n");
        I(e); P(e, "if (o_ == d_ && s_ != lo_) "); ex(e, x->k[4]); P(e, "++;\n");
        I(e); P(e, "else if (s_ == lo_ || o_ < 0 || o_ >= d_) "); ex(e, x->k[4]); P(e, " = tk_fdiv_i64(w_, d_);\n");
        I(e); P(e, "const int64_t b_ = (int64_t)((uint64_t)s_ + (uint64_t)d_ * (uint64_t)("); ex(e, x->k[4]);
        P(e, " + 1) - (uint64_t)w_);\n");
        I(e); P(e, "if (b_ < e_) e_ = b_;\n");
        I(e); P(e, "sr%d_ = (int32_t)((uint64_t)w_ - (uint64_t)d_ * (uint64_t)", x->k[4]->local); ex(e, x->k[4]); P(e, ");\n");
        e->ind--;
        I(e); P(e, "}\n");
    }
    for (int i = 0; i < x->n; i++) segment_heads(e, x->k[i], seen);
}

/* -------------------------------------------------- the chunk function */
/* An ndrange chunk's rows: the outer indices of its first and last rows,
 * and the loops over the rows between them (left open: pfor_loop closes
 * them), each row running from jb_ to je_ of the innermost dimension. */
static int ndrange_rows(tk_emitter *e, tk_ir *s) {
    int nd = s->aux;
    I(e); P(e, "const int64_t inner_ = F->pn[%d];\n", nd - 1);
    I(e); P(e, "const int64_t o0_ = lo_ / inner_, o1_ = (hi_ - 1) / inner_;\n");
    I(e); P(e, "const int64_t j0_ = lo_ %% inner_, j1_ = (hi_ - 1) %% inner_ + 1;\n");
    if (e->band) return tk_cpu_bands_rows(e, s);
    /* the outer indices of the chunk's first and last rows, by division
     * once per chunk (a division per row cost as much as a short row's
     * work); the rows between them in nested loops, so that the C compiler
     * sees each outer index as an induction variable and steps the rows'
     * addresses instead of recomputing them (7-point stencil at 16^3, one
     * core: 1.5x -> 1.2x the hand-written loop's time) */
    I(e); P(e, "int64_t r_;\n");
    for (int end = 0; end < 2; end++) {
        I(e); P(e, "r_ = %s;\n", end ? "o1_" : "o0_");
        for (int d = nd - 2; d > 0; d--) {
            I(e); P(e, "const int64_t %c%d_ = r_ %% F->pn[%d]; r_ /= F->pn[%d];\n", end ? 'e' : 'c', d, d, d);
        }
        I(e); P(e, "const int64_t %c0_ = r_;\n", end ? 'e' : 'c');
    }
    for (int d = 0; d <= nd - 2; d++) {
        I(e);
        if (d == 0) P(e, "for (int64_t x0_ = c0_; x0_ <= e0_; x0_++) {\n");
        else P(e, "for (int64_t x%d_ = f%d_ ? c%d_ : 0; x%d_ <= (g%d_ ? e%d_ : F->pn[%d] - 1); x%d_++) {\n", d, d, d, d, d, d, d, d);
        e->ind++;
        I(e);
        if (d == 0) P(e, "const int f1_ = x0_ == c0_, g1_ = x0_ == e0_;\n");
        else P(e, "const int f%d_ = f%d_ && x%d_ == c%d_, g%d_ = g%d_ && x%d_ == e%d_;\n", d + 1, d, d, d, d + 1, d, d, d);
    }
    for (int d = 0; d <= nd - 2; d++) { I(e); local_name(e, s->vars[d]); P(e, " = x%d_;\n", d); }
    I(e); P(e, "const int64_t jb_ = f%d_ ? j0_ : 0, je_ = g%d_ ? j1_ : inner_;\n", nd - 1, nd - 1);
    return nd - 1;
}

/* ---- a chunk whose iterations all take the check-free copies
 *
 * nests.c versions a serial loop at the top of the body on its iteration's
 * indices, `if (test) { the loop without checks } else { the loop as
 * written }`, and where that test names only the parallel loop's variable
 * and fixed values it marks the `if` (TK_IF_ROWS) and gives the parallel
 * loop the conjunction of such tests (`ck`).  The loop then carries both
 * copies and the test in every iteration, and the C compiler allocates
 * registers and schedules for all of it: an earlier diagnosis found
 * k-means' assignment at 0.80-0.82x the speed of the same loops written
 * plainly in C on one thread, no single piece of that scaffolding the gap
 * (decisions.md).  So the chunk first evaluates `ck` for each of its
 * iterations -- integer compares, no loads, a small part of a body that
 * holds a loop -- and when every one passes it runs a copy of its loop in
 * which each marked
 * `if` is its check-free branch alone; otherwise the loop as it was, each
 * iteration choosing, so an index out of bounds raises the same IndexError
 * from the same iteration after the same writes.  Only in the chunk's main
 * version (the histogram copies kept, the fast divisions, not the exact or
 * periodic ones or an ndrange's rows), and only for a body of at most
 * TK_COPY_BODY_MAX IR nodes, as the record and all-histogram versions: a third
 * copy of a large adjoint's body costs the C compiler more than it gains.
 * Measured (one thread, both builds in one process): a 5x5 convolution
 * written a row an iteration 1.16-1.17x faster at 256^2 and 1024^2;
 * k-means, LU, Needleman-Wunsch, a 7-point stencil, a triangular loop
 * 0.97-1.02x; the C compiler's CPU on their cold builds 1.3-1.5x. */
#define TK_CLEAN_IFS 32

/* The TK_IF_ROWS statements among the blocks at the top of b: their slots. */
static int rows_ifs(tk_ir *b, tk_ir ***slot, int n) {
    for (int i = 0; i < b->n && n <= TK_CLEAN_IFS; i++) {
        tk_ir *s = b->k[i];
        if (s->op == IR_BLOCK) n = rows_ifs(s, slot, n);
        else if (s->op == IR_IF && s->sub == TK_IF_ROWS && n < TK_CLEAN_IFS) slot[n++] = &b->k[i];
        else if (s->op == IR_IF && s->sub == TK_IF_ROWS) return TK_CLEAN_IFS + 1;
    }
    return n;
}

static void chunk_loop(tk_emitter *e, tk_ir *s, const char *carried, int np) {
    tk_ir *body = s->k[s->aux], **slot[TK_CLEAN_IFS], *was[TK_CLEAN_IFS];
    int left = TK_COPY_BODY_MAX, n = 0;
    if (!e->unsw || !s->ck || s->aux != 1 || e->fastv == DIV_SEGMENTED || e->exact == CHUNK_EXACT || e->per != PER_NONE ||
        e->rlo || !em_within(body, &left) || (n = rows_ifs(body, slot, 0)) < 1 || n > TK_CLEAN_IFS) {
        em_innermost(e, s, carried, np);
        return;
    }
    int v = s->vars[0];
    I(e); P(e, "/* tk: every iteration of the chunk passes its loops' index tests: a copy without them (nests.c's ck) */\n");
    I(e); P(e, "tk_bool ck_ = 1;\n");
    I(e); P(e, "for (int64_t i_ = lo_; i_ < hi_; i_++) {\n");
    e->ind++;
    I(e); P(e, "const %s ", ctype(e, e->S->locals[v].ty.dt)); local_name(e, v);
    if (s->off) { P(e, " = (int64_t)((uint64_t)i_ + (uint64_t)("); ex(e, s->off); P(e, "));\n"); }
    else P(e, " = i_;\n");
    I(e); P(e, "ck_ &= (tk_bool)("); ex(e, s->ck); P(e, ");\n");
    e->ind--;
    I(e); P(e, "}\n");
    I(e); P(e, "if (ck_) {\n");
    e->ind++;
    for (int i = 0; i < n; i++) {
        was[i] = *slot[i];
        *slot[i] = was[i]->k[1];
    }
    em_innermost(e, s, carried, np);
    for (int i = 0; i < n; i++) *slot[i] = was[i];
    e->ind--;
    I(e); P(e, "} else {\n");
    e->ind++;
    em_innermost(e, s, carried, np);
    e->ind--;
    I(e); P(e, "}\n");
}

/* The chunk's loop over [lo_, hi_) of a parallel loop, with its body. */
static void pfor_loop(tk_emitter *e, tk_ir *s) {
    int nd = s->aux;
    tk_ir *body = s->k[nd];
    char *carried = em_carried_locals(e, s);
    if (nd == 1 && e->fastv == DIV_SEGMENTED) { /* segments where every index // d is one value */
        I(e); P(e, "for (int64_t s_ = lo_, e_; s_ < hi_; s_ = e_) {\n");
        e->ind++;
        I(e); P(e, "e_ = hi_;\n");
        I(e); P(e, "const int64_t w_ = (int64_t)((uint64_t)s_ + (uint64_t)(");
        if (s->off) ex(e, s->off);
        else P(e, "0");
        P(e, "));\n");
        segment_heads(e, body, tk_alloc(&e->C->arena, (size_t)e->S->nlocals + 1));
    }
    int open = nd > 1 ? ndrange_rows(e, s) : e->fastv == DIV_SEGMENTED ? 1 : 0;
    int np = em_verify_prefix(e, s, carried);
    /* rows between the chunk's first and last are whole: a copy whose inner
     * loop has the same bounds on every row, which the C compiler vectorizes
     * better (7-point stencil at 40^3, one core: 16% less time) */
    int rows = nd > 1 && e->C->opts.optimize && e->per != PER_FALLBACK;
    if (rows) {
        I(e); P(e, "if (jb_ == 0 && je_ == inner_) { /* a whole row */\n");
        e->ind++;
        e->whole_row = ROW_WHOLE;
        em_innermost(e, s, carried, np);
        e->whole_row = ROW_ANY;
        e->ind--;
        I(e); P(e, "} else {\n");
        e->ind++;
    }
    chunk_loop(e, s, carried, np);
    if (rows) {
        e->ind--;
        I(e); P(e, "}\n");
    }
    for (int d = open; d > 0; d--) { /* the row or segment loops */
        e->ind--;
        I(e); P(e, "}\n");
    }
}

/* The chunk's loop; one with fast divisions (strength.c) in versions chosen by its flags. */
static void div_versions(tk_emitter *e, tk_ir *s) {
    int nd = s->aux;
    tk_ir *fast = fast_flag(s->k[nd], 3), *seg = fast_flag(s->k[nd], 5);
    if (!fast || e->exact == CHUNK_EXACT) { /* exact: the cold function's only version */
        e->fastv = fast ? DIV_EXACT : DIV_NONE;
        pfor_loop(e, s);
        e->fastv = DIV_NONE;
        return;
    }
    if (seg) { I(e); P(e, "if ("); ex(e, seg); P(e, ") {\n"); e->ind++; }
    e->fastv = seg ? DIV_SEGMENTED : DIV_FAST;
    pfor_loop(e, s);
    if (seg) {
        e->ind--;
        I(e); P(e, "} else {\n");
        e->ind++;
        e->fastv = DIV_FAST;
        pfor_loop(e, s);
        e->ind--;
        I(e); P(e, "}\n");
    }
    e->fastv = DIV_NONE;
}

/* The chunk's loop; one with periodic indices (periodic.c) in two versions
 * chosen by its flag: the periodic one without their checks, with an
 * interior, and the loop as it was. */
static void pfor_versions(tk_emitter *e, tk_ir *s) {
    if (!s->per || e->per != PER_NONE || e->exact == CHUNK_EXACT) {
        div_versions(e, s);
        return;
    }
    I(e); P(e, "if ("); ex(e, s->per->k[0]); P(e, ") { /* tk: periodic indices, each in bounds (periodic.c) */\n");
    e->ind++;
    tk_periodic_undo u;
    tk_periodic_hide(e->C, s, &u);
    e->per = PER_BORDER;
    div_versions(e, s);
    e->per = PER_NONE;
    tk_periodic_show(&u);
    e->ind--;
    I(e); P(e, "} else {\n");
    e->ind++;
    e->per = PER_FALLBACK;
    div_versions(e, s);
    e->per = PER_NONE;
    e->ind--;
    I(e); P(e, "}\n");
}

/* The function that runs a chunk of parallel loop `s`.  A loop with fast
 * divisions (strength.c) gets two: the exact version, rarely run (a
 * dividend or divisor beyond 2^52), in a cold function that the C compiler
 * optimizes for size -- a quarter less compile time -- and the fast and
 * segmented versions, which call it when the launch's flag says so. */
static void pfor_chunk(tk_emitter *e, tk_ir *s);

static void pfor_function(tk_emitter *e, tk_ir *s, int id, tk_chunkfn which) {
    int exact = which == CHUNK_EXACT;
    tk_spec *S = e->S;
    tk_ir *fast = fast_flag(s->k[s->aux], 3);
    e->exact = which;
    P(e, "/* parallel loop at line %d%s */\n", s->line, exact ? ", exact divisions" : "");
    P(e, "%s%sstatic void tk_pfor%d%s(void *fp_, int64_t lo_, int64_t hi_) {\n",
      exact ? "__attribute__((cold, noinline)) " : "",
      !exact && e->C->opts.optimize && narrow_chunk(e, s) ? "TK_NARROW " : "", id,
      exact ? "_x" : e->rec ? "_r" : "");
    I(e); P(e, "const tk_frame *F = (const tk_frame *)fp_;\n");
    I(e); P(e, "tk_ctx *ctx = F->ctx;\n");
    I(e); P(e, "const tk_abi *abi = F->abi;\n");
    I(e); P(e, "(void)ctx; (void)abi;\n");
    poll_budget(e, 1); /* the pool asks stop() after every piece */
    array_decls(e, S, "F");
    for (int i = 0; i < S->nlocals; i++) {
        if (S->locals[i].scope != -1 || (S->locals[i].ty.kind != TY_VALUE && S->locals[i].ty.kind != TY_ARRAY)) continue;
        I(e); P(e, "const %s ", tk_local_elem_type(&S->locals[i], ctype(e, S->locals[i].ty.dt)));
        if (S->locals[i].ty.kind == TY_ARRAY) P(e, "*const "); /* a local array, read only here (lower_local.c) */
        local_name(e, i); P(e, " = F->"); local_name(e, i);
        P(e, "; (void)"); local_name(e, i); P(e, ";\n");
    }
    if (fast && !exact) { I(e); P(e, "if (!("); ex(e, fast); P(e, ")) { tk_pfor%d_x(fp_, lo_, hi_); return; }\n", id); }
    e->rc = em_race_loop(e, s) + 1; /* check_races: a loop the race detector watches */
    em_race_chunk(e);
    pfor_chunk(e, s);
    e->rc = 0;
    e->exact = CHUNK_ALL;
}

/* The most cells histogram array h of loop s may have to be counted into a
 * private copy: its share of TK_HIST_STACK bytes (one alone gets half), two
 * cells an element, at most 16384 elements. */
static int64_t hist_cap(const tk_emitter *e, const tk_ir *s, int h) {
    int nh = 0;
    for (int k = 0; k < 63; k++) nh += (int)(s->hist >> k & 1);
    int64_t bytes = TK_HIST_STACK / (nh < 2 ? 2 : nh);
    int64_t cap = bytes / (2 * (dt_bits((tack_dtype)e->S->ptypes[h].dt) / 8));
    return cap > 16384 ? 16384 : cap;
}

/* Cell h_ of histogram array h as its copies count them: the element, or of a vector or matrix
 * array the component (the elements' components are contiguous, row major, as hist_add numbers
 * them). */
static const char *hist_cell(tk_emitter *e, int h) {
    int dt = e->S->ptypes[h].dt;
    if (hist_k(dt) == 1) return tk_fmt(&e->C->arena, "a%d[h_]", h);
    return tk_fmt(&e->C->arena, "((%s *)a%d)[h_]", ctype(e, hist_dt(dt)), h);
}

/* Histogram arrays' private copies, one per thread of the launch.
 *
 * A copy per chunk (pfor_chunk) is zeroed and flushed with atomics by every
 * piece the pool hands out, and the pool hands out several per thread (half
 * of what is left each time, for balance): a 256-bin count of 64K keys on
 * two threads took 58 us, four pieces a thread each zeroing 512 cells and
 * adding 256 atomically into lines the other thread was adding into, where
 * OpenMP's reduction (one copy per thread) took 28 us.  So when the copies
 * of every histogram array of the loop, one per thread (abi->slots(), one
 * for a launch too small to be split), fit TK_HIST_STACK bytes and the loop
 * has at least four iterations per cell, the entry keeps them on its stack,
 * zeroed, and passes them in the frame; each piece adds into its thread's
 * (abi->slot()), and after the loop the entry adds each cell's sum over the
 * threads into the array, plainly: every piece is done.  A failing check
 * stops the launch before that merge, so the counts are lost with the error
 * (as a chunk's are).  The pieces are then the pool's usual ones (grain 0),
 * since they no longer pay for a copy each.  Otherwise the chunks keep
 * their own copies, at least four times the cells of each (the grain). */
static void hist_slots(tk_emitter *e, tk_ir *s) {
    tk_spec *S = e->S;
    I(e); P(e, "/* tk: per-thread private histograms, merged after the loop */\n");
    I(e); P(e, "const int ns_ = total_ >= %lld ? abi->slots() : 1;\n", (long long)pfor_min_parallel(s));
    for (int h = 0; h < 63; h++) {
        if (!(s->hist >> h & 1)) continue;
        I(e); P(e, "const int64_t hn%d_ = %d", h, hist_k(S->ptypes[h].dt)); /* cells: components */
        for (int k = 0; k < S->ptypes[h].ndim; k++) P(e, " * a%d_s%d", h, k);
        P(e, ", hw%d_ = (2 * hn%d_ + 15) & ~(int64_t)15;\n", h, h); /* a thread's cells, 64-byte multiples for 4-byte elements */
    }
    I(e); P(e, "const tk_bool ht_ = 1");
    for (int h = 0; h < 63; h++)
        if (s->hist >> h & 1) P(e, " && hn%d_ <= %lld", h, (long long)hist_cap(e, s, h));
    P(e, " && total_ / 4 >= (0");
    for (int h = 0; h < 63; h++)
        if (s->hist >> h & 1) P(e, " + hn%d_", h);
    P(e, ") * ns_ && (uint64_t)ns_ * (0");
    for (int h = 0; h < 63; h++)
        if (s->hist >> h & 1) P(e, " + (uint64_t)hw%d_ * sizeof(%s)", h, ctype(e, hist_dt(S->ptypes[h].dt)));
    P(e, ") <= %d;\n", TK_HIST_STACK);
    for (int h = 0; h < 63; h++) {
        if (!(s->hist >> h & 1)) continue;
        I(e); P(e, "%s hs%d_[ht_ ? ns_ * hw%d_ : 1];\n", ctype(e, hist_dt(S->ptypes[h].dt)), h, h);
        I(e); P(e, "F_.hs%d = ht_ ? hs%d_ : 0; F_.hw%d = hw%d_;\n", h, h, h, h);
        I(e); P(e, "if (ht_) for (int64_t h_ = 0; h_ < ns_ * hw%d_; h_++) hs%d_[h_] = 0;\n", h, h);
        /* else the chunks' copies: pieces of at least four times the cells */
        I(e); P(e, "if (!ht_ && hn%d_ <= %lld && 4 * hn%d_ > grain_) grain_ = 4 * hn%d_;\n", h,
                (long long)hist_cap(e, s, h), h, h);
    }
}

/* After the loop: each cell's sum over the threads' copies (two cells an
 * element, see pfor_chunk) into the array. */
static void hist_merge(tk_emitter *e, tk_ir *s) {
    tk_spec *S = e->S;
    for (int h = 0; h < 63; h++) {
        if (!(s->hist >> h & 1)) continue;
        int hdt = hist_dt(S->ptypes[h].dt);
        I(e); P(e, "if (ht_) for (int64_t h_ = 0; h_ < hn%d_; h_++) {\n", h);
        I(e); P(e, "    %s c_ = 0;\n", ctype(e, hdt));
        I(e); P(e, "    for (int t_ = 0; t_ < ns_; t_++) {\n");
        I(e); P(e, "        const %s *const q_ = hs%d_ + t_ * hw%d_;\n", ctype(e, hdt), h, h);
        if (is_float_dt(hdt)) { I(e); P(e, "        c_ = c_ + q_[h_] + q_[hn%d_ + h_];\n", h); }
        else {
            I(e); P(e, "        c_ = (%s)((%s)c_ + (%s)q_[h_] + (%s)q_[hn%d_ + h_]);\n", ctype(e, hdt), ut(hdt),
                    ut(hdt), ut(hdt), h);
        }
        I(e); P(e, "    }\n");
        const char *cell = hist_cell(e, h);
        I(e); P(e, "    if (c_ != 0) %s = ", cell);
        if (is_float_dt(hdt)) P(e, "%s + c_;\n", cell);
        else P(e, "(%s)((%s)%s + (%s)c_);\n", ctype(e, hdt), ut(hdt), cell, ut(hdt));
        I(e); P(e, "}\n");
    }
}

/* ---- records
 *
 * An array of records -- n points of (lat, lng), particles of (x, y, z, q) --
 * is a 2-D array read one row per iteration at constant columns:
 * `loc[i, 0]`, `loc[i, 1]`.  Its row's length is an extent known only at
 * the launch, so the C compiler sees loads at a stride it does not know and
 * takes each lane's element apart (a scalar load and insert per lane), where
 * with the stride 2 in the source it loads whole vectors and permutes them.
 * nn's distance over 1M records of Rodinia, on one thread: 0.36 ms as
 * generated, 0.19 ms with the row's length a constant, as C+OpenMP's
 * `loc[2 * i]` (the generated source compiled alone, both timed in turn).
 *
 * So a parallel loop that indexes the last axis of a contiguous array of two
 * or more axes only by constants, all below TK_REC_MAX, gets a second chunk
 * function, "_r", in which that extent is the constant the largest column
 * read asks for (largest + 1: the records the kernel reads whole), and the
 * launch picks it when every such array has that extent.  It is the same
 * code at the same values, so nothing can come out differently; an array of
 * longer records (columns the kernel does not read) runs the usual
 * function.  What it costs is the second function's compile time, paid only
 * by loops that read records. */
#define TK_REC_MAX 16

static void record_scan(const tk_emitter *e, const tk_ir *x, int *rec) {
    if (x->op == IR_LOAD || x->op == IR_STORE || x->op == IR_ATOMIC) {
        int p = x->param;
        tk_type t = e->S->ptypes[p];
        int first = x->op == IR_LOAD ? 0 : x->op == IR_STORE ? 1 : ir_atomic_first(x);
        if (p >= 0 && p < e->S->nparams && t.kind == TY_ARRAY && rec[p] >= 0) {
            const tk_ir *c = t.ndim >= 2 && !t.strided && first + t.ndim <= x->n ? x->k[first + t.ndim - 1] : NULL;
            if (c && c->op == IR_CONST && ty_is_int(c->ty) && c->c.i >= 0 && c->c.i < TK_REC_MAX) {
                if (c->c.i + 1 > rec[p]) rec[p] = (int)c->c.i + 1;
            } else rec[p] = -1;
        }
    }
    if (x->op == IR_ARRAY && x->param >= 0 && x->param < e->S->nparams) rec[x->param] = -1; /* read by a function */
    for (int i = 0; i < x->n; i++) record_scan(e, x->k[i], rec);
}

/* Parallel loop s's record arrays: per parameter, its records' length, or 0;
 * NULL when it has none (or when the loop is not one to version). */
static const int *record_arrays(tk_emitter *e, tk_ir *s) {
    if (!e->C->opts.optimize || ir_is_blocks(s) || em_race_loop(e, s) >= 0 || e->S->nparams <= 0) return NULL;
    int left = TK_COPY_BODY_MAX;
    if (!em_within(s->k[s->aux], &left)) return NULL;
    int *rec = tk_alloc(&e->C->arena, (size_t)e->S->nparams * sizeof *rec);
    if (!rec) return NULL;
    memset(rec, 0, (size_t)e->S->nparams * sizeof *rec);
    record_scan(e, s->k[s->aux], rec);
    int any = 0;
    for (int p = 0; p < e->S->nparams; p++) {
        if (rec[p] < 2) rec[p] = 0; /* a single column's stride is the row's: nothing to permute */
        any |= rec[p] > 0;
    }
    return any ? rec : NULL;
}

static void emit_pfor(tk_emitter *e, tk_ir *s) {
    int id = e->counter++;
    int nd = s->aux;
    tk_spec *S = e->S;
    /* the caller side: fill the frame, run, stop on failure */
    I(e); P(e, "{\n");
    e->ind++;
    for (int p = 0; p < S->nparams; p++) {
        if (S->ptypes[p].kind != TY_ARRAY) continue;
        I(e); P(e, "F_.a%d = a%d;", p, p);
        for (int k = 0; k < S->ptypes[p].ndim; k++) P(e, " F_.a%d_s%d = a%d_s%d;", p, k, p, k);
        for (int k = 0; S->ptypes[p].strided && k < S->ptypes[p].ndim; k++) P(e, " F_.a%d_t%d = a%d_t%d;", p, k, p, k);
        P(e, "\n");
    }
    for (int i = 0; i < S->nlocals; i++) {
        if (S->locals[i].scope != -1 || (S->locals[i].ty.kind != TY_VALUE && S->locals[i].ty.kind != TY_ARRAY)) continue;
        I(e); P(e, "F_."); local_name(e, i); P(e, " = "); local_name(e, i); P(e, ";\n");
    }
    I(e); P(e, "int64_t total_ = 1;\n");
    for (int d = 0; d < nd; d++) {
        I(e); P(e, "F_.pn[%d] = ", d); ex(e, s->k[d]); P(e, ";\n");
        I(e); P(e, "if (F_.pn[%d] <= 0) total_ = 0;\n", d);
        I(e); P(e, "total_ = (int64_t)((uint64_t)total_ * (uint64_t)(F_.pn[%d] > 0 ? F_.pn[%d] : 0));\n", d, d);
    }
    I(e); P(e, "F_.total = total_;\n");
    int band = tk_cpu_bands(e, s);
    if (band) tk_cpu_bands_launch(e, s); /* only a banded loop's chunks read F->bh */
    I(e); P(e, "int64_t grain_ = 0;\n");
    if (s->hist) hist_slots(e, s);
    if (em_race_loop(e, s) >= 0) em_race_begin(e, s, em_race_loop(e, s));
    const int *rec = record_arrays(e, s);
    /* a body with inner loops: from 2 iterations, unless the launch counts too little work */
    int counted = pfor_min_parallel(s) == 2 && tk_cpu_launch_work(e, s, "total_", "mp_", "grain_");
    I(e); P(e, "if (total_ > 0) abi->parallel_for(ctx, ");
    if (rec) {
        P(e, "(1");
        for (int p = 0; p < S->nparams; p++)
            if (rec[p] > 0) P(e, " && a%d_s%d == %d", p, S->ptypes[p].ndim - 1, rec[p]);
        P(e, ") ? tk_pfor%d_r : ", id);
    }
    if (counted) P(e, "tk_pfor%d, &F_, total_, mp_, grain_);\n", id);
    else P(e, "tk_pfor%d, &F_, total_, %lld, grain_);\n", id, (long long)pfor_min_parallel(s));
    I(e); P(e, "if (TK_FAILED(ctx)) return;\n");
    if (s->hist) hist_merge(e, s);
    e->ind--;
    I(e); P(e, "}\n");

    /* the body function(s) */
    tk_buf *saved = e->b;
    int saved_ind = e->ind;
    tk_emit_fn saved_fn = e->fn;
    e->b = &e->pfors;
    e->ind = 1;
    e->fn = TK_FN_PARALLEL;
    e->band = band;
    if (fast_flag(s->k[nd], 3)) pfor_function(e, s, id, CHUNK_EXACT);
    pfor_function(e, s, id, CHUNK_ALL);
    if (rec) { /* the record version, after the usual one (its exact divisions are the usual _x) */
        e->rec = rec;
        pfor_function(e, s, id, CHUNK_ALL);
        e->rec = NULL;
    }
    e->band = 0;
    e->b = saved;
    e->ind = saved_ind;
    e->fn = saved_fn;
}

/* The start of a running min (max) of a chunk (privatize.c): the type's
 * largest (smallest) value, +inf (-inf) for a float, which no value moves the
 * cell past; a chunk whose value is still it flushes nothing. */
static void minmax_identity(tk_emitter *e, const tk_ir *a) {
    static const char *const lo[] = {"(-127 - 1)", "(-32767 - 1)", "(-2147483647 - 1)", "(-9223372036854775807LL - 1)"};
    static const char *const hi[] = {"127", "32767", "2147483647", "9223372036854775807LL"};
    int dt = a->ty.dt, bits = dt_bits((tack_dtype)dt), mx = a->sub == A_MAX;
    int w = bits == 8 ? 0 : bits == 16 ? 1 : bits == 32 ? 2 : 3;
    P(e, "(%s)", ctype(e, dt));
    if (is_float_dt(dt)) P(e, "%s__builtin_inf()", mx ? "-" : "");
    else if (dt_kind((tack_dtype)dt) == TACK_KIND_UINT) P(e, mx ? "0" : "-1");
    else P(e, "%s", mx ? lo[w] : hi[w]);
}

/* The rest of pfor_function: the chunk's private state, loop and flushes. */
static void pfor_chunk(tk_emitter *e, tk_ir *s) {
    tk_spec *S = e->S;
    if (ir_is_blocks(s)) { /* tack.blocks: threads as loops split at barriers (emit_blocks.c) */
        tk_cpu_blocks_chunk(e, s);
        P(e, "}\n\n");
        return;
    }
    /* private locals: those of this loop's scope (the pfor id is the scope) */
    declare_locals(e, S->locals[s->vars[0]].scope, 0, em_carried_locals(e, s), 1);
    for (int r = 0; s->red && r < s->red->n; r++) /* a running min/max starts at its identity */
        if (s->red->k[r]->sub != A_ADD) {
            I(e); local_name(e, s->red->k[r]->k[0]->local); P(e, " = "); minmax_identity(e, s->red->k[r]);
            P(e, "; /* tk: private running %s */\n", s->red->k[r]->sub == A_MIN ? "min" : "max");
        }
    /* histogram arrays (privatize.c) are counted into zeroed private copies on
     * the stack, each when it is small and the chunk long enough to repay its
     * flush: then the chunk runs a version of the loop that adds into the
     * copies (one that chooses per add, huN_, for a chunk that keeps only
     * some), and adds each non-zero cell into the array, atomically, at its
     * end.  The copies share
     * TK_HIST_STACK bytes of the chunk's stack (one alone gets half, as much
     * as when a loop had only one) */
    if (s->hist) {
        int nh = 0;
        for (int h = 0; h < 63; h++) nh += (int)(s->hist >> h & 1);
        for (int h = 0; h < 63; h++) {
            if (!(s->hist >> h & 1)) continue;
            int64_t cap = hist_cap(e, s, h);
            I(e); P(e, "/* tk: per-chunk private histogram of a%d */\n", h);
            I(e); P(e, "const int64_t hn%d_ = %d", h, hist_k(S->ptypes[h].dt)); /* cells: components */
            for (int k = 0; k < S->ptypes[h].ndim; k++) P(e, " * a%d_s%d", h, k);
            P(e, ";\n");
            I(e); P(e, "%s *const hs%d_ = F->hs%d;\n", ctype(e, hist_dt(S->ptypes[h].dt)), h, h);
            I(e); P(e, "const tk_bool hu%d_ = hs%d_ || (hn%d_ <= %lld && hi_ - lo_ >= 4 * hn%d_);\n", h, h, h, (long long)cap, h);
        }
        I(e); P(e, "if (0");
        for (int h = 0; h < 63; h++)
            if (s->hist >> h & 1) P(e, " || hu%d_", h);
        P(e, ") {\n");
        e->ind++;
        /* with several arrays, the version adding into every copy -- a third
         * copy of the loop -- only for a body of at most TK_COPY_BODY_MAX nodes:
         * an adjoint's body is tens of thousands of nodes, and there the
         * third copy was a third of the C (a bead chain's adjoint 2.20 ->
         * 1.44 MB, C-compiler CPU 3.8 -> 2.3 s) for 0-1% of the run time where
         * the copies are kept (a tetrahedron's adjoint, 4,136 nodes); 2-3% in
         * a 1,078-node one, which keeps it */
        int left = TK_COPY_BODY_MAX;
        int all = nh > 1 && em_within(s->k[s->aux], &left);
        if (all) { /* every copy kept: the loop without a choice per add */
            I(e); P(e, "const tk_bool hall_ = 1");
            for (int h = 0; h < 63; h++)
                if (s->hist >> h & 1) P(e, " && hu%d_", h);
            P(e, ";\n");
        }
        for (int h = 0; h < 63; h++) {
            if (!(s->hist >> h & 1)) continue;
            int hdt = hist_dt(S->ptypes[h].dt);
            int64_t cap = hist_cap(e, s, h);
            I(e); P(e, "%s hb%d_[%lld], *const hp%d_ = hs%d_ ? hs%d_ + abi->slot() * F->hw%d + hn%d_ : hu%d_ ? hb%d_ + hn%d_ : hb%d_;\n",
                    ctype(e, hdt), h, (long long)(2 * cap), h, h, h, h, h, h, h, h, h);
            I(e); P(e, "if (hu%d_ && !hs%d_) for (int64_t h_ = 0; h_ < 2 * hn%d_; h_++) hb%d_[h_] = 0;\n", h, h, h, h);
        }
        if (all) {
            I(e); P(e, "if (hall_) {\n");
            e->ind++;
            e->hist = s->hist;
            e->unsw = 1;
            pfor_versions(e, s);
            e->unsw = 0;
            e->ind--;
            I(e); P(e, "} else {\n");
            e->ind++;
            e->hist = s->hist | (uint64_t)1 << 63;
            pfor_versions(e, s);
            e->ind--;
            I(e); P(e, "}\n");
        } else {
            e->hist = nh > 1 ? s->hist | (uint64_t)1 << 63 : s->hist;
            e->unsw = nh == 1;
            pfor_versions(e, s);
            e->unsw = 0;
        }
        e->hist = 0;
        for (int h = 0; h < 63; h++) {
            if (!(s->hist >> h & 1)) continue;
            int hdt = hist_dt(S->ptypes[h].dt);
            const char *cell = hist_cell(e, h);
            I(e); P(e, "if (hu%d_ && !hs%d_) for (int64_t h_ = 0; h_ < hn%d_; h_++) {\n", h, h, h);
            I(e); P(e, "    const %s c_ = ", ctype(e, hdt));
            if (is_float_dt(hdt)) P(e, "hb%d_[h_] + hp%d_[h_];\n", h, h);
            else P(e, "(%s)((%s)hb%d_[h_] + (%s)hp%d_[h_]);\n", ctype(e, hdt), ut(hdt), h, ut(hdt), h);
            /* the whole range in one chunk (a small launch runs so): no other chunk to race */
            I(e); P(e, "    if (c_ == 0) continue;\n");
            I(e); P(e, "    if (lo_ == 0 && hi_ == F->total) %s = ", cell);
            if (is_float_dt(hdt)) P(e, "%s + c_;\n", cell);
            else P(e, "(%s)((%s)%s + (%s)c_);\n", ctype(e, hdt), ut(hdt), cell, ut(hdt));
            I(e); P(e, "    else (void)tk_atomic_add_%s(&%s, c_);\n", ctype(e, hdt), cell);
            I(e); P(e, "}\n");
        }
        e->ind--;
        I(e); P(e, "} else {\n");
        e->ind++;
        pfor_versions(e, s);
        e->ind--;
        I(e); P(e, "}\n");
    } else {
        e->unsw = 1;
        pfor_versions(e, s);
        e->unsw = 0;
    }
    /* privatized sums: one atomic add per chunk */
    for (int r = 0; s->red && r < s->red->n; r++) {
        tk_ir *a = s->red->k[r];
        I(e); P(e, "if (");
        if (a->sub != A_ADD) { /* a min/max that moved off its start */
            ex(e, a->k[0]);
            P(e, " != ");
            minmax_identity(e, a);
        } else if (ty_is_scalar(a->ty)) {
            ex(e, a->k[0]);
            P(e, " != 0");
        } else { /* a vector or matrix sum: any component not 0 (a chunk that never added writes nothing) */
            int rows = dt_rows((tack_dtype)a->ty.dt), cols = dt_cols((tack_dtype)a->ty.dt);
            for (int c = 0; c < rows * cols; c++) {
                if (c) P(e, " || ");
                ex(e, a->k[0]);
                if (cols == 1) P(e, ".v[%d] != 0", c);
                else P(e, ".m[%d][%d] != 0", c / cols, c % cols);
            }
        }
        P(e, ") (void)"); ex(e, a); P(e, ";\n");
    }
    P(e, "}\n\n");
}


/* ------------------------------------------------------ frame and entry */

/* The histogram arrays of every parallel loop under s (privatize.c). */
static uint64_t hist_mask(const tk_ir *s) {
    if (!s) return 0;
    uint64_t m = s->op == IR_PFOR ? s->hist & ~((uint64_t)1 << 63) : 0;
    for (int i = 0; i < s->n; i++) m |= hist_mask(s->k[i]);
    return m;
}

/* The dialect's kernel_decls hook: the frame struct, which carries the
 * kernel's arrays, the parallel loop's sizes and the frame locals to the
 * chunk functions. */
void tk_cpu_frame(tk_emitter *e, tk_buf *out) {
    tk_spec *K = e->K;
    tk_buf *saved = e->b;
    e->b = out;
    P(e, "\ntypedef struct tk_frame {\n    tk_ctx *ctx;\n    const tk_abi *abi;\n    int64_t pn[%d];\n    int64_t total;\n    int64_t bq, bh;\n", TACK_MAX_NDIM);
    for (int p = 0; p < K->nparams; p++) {
        tk_type t = K->ptypes[p];
        if (t.kind != TY_ARRAY) continue;
        P(e, "    %s *a%d;\n", e->D->storage_type((tack_dtype)t.dt), p);
        for (int k = 0; k < t.ndim; k++) P(e, "    int64_t a%d_s%d;\n", p, k);
        for (int k = 0; t.strided && k < t.ndim; k++) P(e, "    int64_t a%d_t%d;\n", p, k);
    }
    em_race_frame(e);
    uint64_t hists = hist_mask(K->body);
    for (int h = 0; h < 63; h++) /* the threads' private histograms (hist_slots) */
        if (hists >> h & 1) P(e, "    %s *hs%d;\n    int64_t hw%d;\n", ctype(e, hist_dt(K->ptypes[h].dt)), h, h);
    for (int i = 0; i < K->nlocals; i++) {
        if (K->locals[i].scope != -1 || (K->locals[i].ty.kind != TY_VALUE && K->locals[i].ty.kind != TY_ARRAY)) continue;
        P(e, "    %s ", tk_local_elem_type(&K->locals[i], ctype(e, K->locals[i].ty.dt)));
        if (K->locals[i].ty.kind == TY_ARRAY) P(e, "const *"); /* the entry's local array, which outlives the loop */
        local_name(e, i);
        P(e, ";\n");
    }
    P(e, "} tk_frame;\n\n");
    e->b = saved;
}

/* The dialect's kernel hook: the exported entry, the kernel's body with
 * each parallel loop a call of parallel_for, and ahead of it the chunk
 * functions that the loops write while the entry is walked. */
void tk_cpu_kernel(tk_emitter *e, tk_buf *out) {
    tk_cc *C = e->C;
    tk_spec *K = e->K;
    tk_func *KF = &C->m->funcs[K->func];
    tk_buf entry;
    tk_buf_init(&entry, &C->arena);
    tk_buf_init(&e->pfors, &C->arena);
    e->pfor = emit_pfor;
    e->S = K;
    e->si = 0;
    e->fn = TK_FN_ENTRY;
    e->b = &entry;
    P(e, "/* kernel ");
    comment_text(e, KF->name);
    P(e, " (");
    comment_text(e, KF->filename);
    P(e, ":%d) */\n", KF->first_line);
    P(e, "%s void tack_entry(const tk_argv *args, const tk_abi *abi, tk_ctx *ctx) {\n", e->D->export_attr);
    e->ind = 1;
    I(e); P(e, "tk_frame F_;\n");
    I(e); P(e, "F_.ctx = ctx; F_.abi = abi;\n");
    poll_budget(e, 0);
    em_race_entry(e);
    array_decls(e, K, "args");
    for (int p = 0; p < K->nparams; p++) {
        tk_type t = K->ptypes[p];
        if (t.kind == TY_ARRAY) continue;
        const tack_argtype *a = &C->args[p];
        tack_scalar_kind k = dt_kind(a->dtype);
        const char *mem = k == TACK_KIND_FLOAT ? "f" : k == TACK_KIND_UINT ? "u" : "i";
        I(e); P(e, "%s ", ctype(e, t.dt)); local_name(e, K->plocal[p]);
        if (k == TACK_KIND_COMPLEX) /* (re, im) as doubles; complex64 rounds each part once */
            P(e, " = tk_mk_%s((%s)args[%d].s.z[0], (%s)args[%d].s.z[1]);\n", ctype(e, t.dt),
              ctype(e, dt_complex_part((tack_dtype)t.dt)), p, ctype(e, dt_complex_part((tack_dtype)t.dt)), p);
        else if (ty_is_complex(t)) /* a real argument to a parameter annotated complex */
            P(e, " = tk_mk_%s((%s)args[%d].s.%s, 0);\n", ctype(e, t.dt), ctype(e, dt_complex_part((tack_dtype)t.dt)), p, mem);
        else if (k == TACK_KIND_FLOAT && !is_float_dt(t.dt) && t.dt != TACK_BOOL)
            P(e, " = (%s)tk_f2%s(args[%d].s.f);\n", ctype(e, t.dt), is_signed(t.dt) ? "i64" : "u64", p);
        else if (t.dt == TACK_BOOL)
            P(e, " = args[%d].s.%s != 0;\n", p, mem);
        else
            P(e, " = (%s)args[%d].s.%s;\n", ctype(e, t.dt), p, mem);
    }
    declare_locals(e, -1, 1, NULL, 0);
    block(e, K->body);
    e->ind = 0;
    P(e, "}\n");
    e->b = out;
    e->pfor = NULL;
    if (e->pfors.len) tk_puts(out, e->pfors.s);
    tk_puts(out, entry.s);
}
