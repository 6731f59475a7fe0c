/*
 * layout_grid.c -- a kernel laid out on a GPU grid, for every GPU dialect.
 *
 * A kernel body is a sequence of top-level statements, some of them
 * parallel loops.  Each parallel loop becomes one phase function that runs
 * a grid-stride loop over the loop's flattened index space (an ndrange's
 * coordinates split once per thread, then stepped along the loop).  Serial
 * code between the loops goes one of two ways:
 *
 *   - when it is pure -- assignments to locals, checks, ifs, reading only
 *     arrays the kernel never writes -- every thread of the following loop's
 *     phase runs it first (a "prologue").  Hoisted bounds checks and the
 *     `n = a.shape[0]` of most kernels are of this kind, so the usual kernel
 *     is a single launch;
 *   - otherwise it is a phase of its own, launched as one thread.
 *
 * The phases of one call are launched in order on the device's queue, so
 * each sees the memory effects of the one before, as the language requires
 * ("each top-level loop completes before the next statement starts").  The
 * kernel's frame -- its scalar parameters and the locals that live between
 * loops -- travels from phase to phase through a small device buffer that
 * holds two copies of the frame: phase k reads copy k%2 and writes copy
 * (k+1)%2, so threads of one phase never read what another thread of the
 * same phase is writing.  A single-thread phase marks `done` while it runs
 * and clears it at its normal end; a `return` (or a failed check) leaves it
 * set, and later phases of that call return at once.
 *
 * Checks write the device's error record (the dialect's prelude says how);
 * every later phase returns at its start while the record is set.  The
 * source's last comment, `TAG: phases=... frame=N ...`, tells the launcher
 * which phases are single-threaded and how large the frame buffer is.
 *
 * What differs between GPUs -- declaring a phase and its arguments, a
 * thread's index, flushing a privatized sum -- comes from the dialect's
 * tk_grid (grid.h).
 */
#include <string.h>

#include "compiler/grid/grid.h"

enum { PH_SERIAL, PH_PFOR };

typedef struct phase {
    int kind;
    int first, last; /* serial statements or the loop's prologue: stmts[first, last) */
    tk_ir *pfor;
} phase;

typedef struct layout {
    tk_cc *C;
    tk_spec *K;
    tk_ir **stmts;
    int nstmts, capstmts;
    phase *ph;
    int nph;
} layout;

static void flatten(layout *L, tk_ir *s) {
    if (s->op == IR_BLOCK) {
        for (int i = 0; i < s->n; i++) flatten(L, s->k[i]);
        return;
    }
    if (L->nstmts == L->capstmts) {
        int cap = L->capstmts ? L->capstmts * 2 : 16;
        tk_ir **n = tk_alloc(&L->C->arena, sizeof *n * (size_t)cap);
        if (L->nstmts) memcpy(n, L->stmts, sizeof *n * (size_t)L->nstmts);
        L->stmts = n;
        L->capstmts = cap;
    }
    L->stmts[L->nstmts++] = s;
}

/* An expression every thread may evaluate for itself: no calls, no atomics,
 * and no reads of arrays the kernel writes (a thread that starts late would
 * see another thread's stores). */
static int pure_expr(layout *L, const tk_ir *x) {
    if (x->op == IR_CALL || x->op == IR_ATOMIC || x->op == IR_WARP) return 0;
    if (x->op == IR_LOAD && (L->K->written >> (x->param & 63) & 1)) return 0;
    for (int i = 0; i < x->n; i++)
        if (!pure_expr(L, x->k[i])) return 0;
    return 1;
}

static int replicable(layout *L, const tk_ir *s) {
    switch (s->op) {
    case IR_BLOCK:
        for (int i = 0; i < s->n; i++)
            if (!replicable(L, s->k[i])) return 0;
        return 1;
    case IR_ASSIGN:
    case IR_SETCOMP:
    case IR_EVAL:
    case IR_CHECK:
        for (int i = 0; i < s->n; i++)
            if (!pure_expr(L, s->k[i])) return 0;
        return 1;
    case IR_IF: return pure_expr(L, s->k[0]) && replicable(L, s->k[1]) && replicable(L, s->k[2]);
    default: return 0;
    }
}

static int calls_or_atomics(const tk_ir *x) {
    if (x->op == IR_CALL || x->op == IR_ATOMIC || x->op == IR_WARP) return 1;
    for (int i = 0; i < x->n; i++)
        if (calls_or_atomics(x->k[i])) return 1;
    return 0;
}

/* Statements whose only effect is on locals matter only to what follows. */
static int has_effect(const tk_ir *s) {
    switch (s->op) {
    case IR_BLOCK:
        for (int i = 0; i < s->n; i++)
            if (has_effect(s->k[i])) return 1;
        return 0;
    case IR_ASSIGN:
    case IR_SETCOMP: return calls_or_atomics(s); /* a call or an atomic may write or fail */
    case IR_RETURN: return 0;                    /* nothing after it to skip */
    default: return 1;
    }
}

static void add_phase(layout *L, int kind, int first, int last, tk_ir *pfor) {
    phase *p = &L->ph[L->nph++];
    p->kind = kind;
    p->first = first;
    p->last = last;
    p->pfor = pfor;
}

static void plan(layout *L) {
    L->ph = tk_alloc(&L->C->arena, sizeof(phase) * (size_t)(2 * L->nstmts + 1));
    int i = 0;
    while (i < L->nstmts) {
        int j = i;
        while (j < L->nstmts && L->stmts[j]->op != IR_PFOR) j++;
        int pure = 1, effect = 0;
        for (int k = i; k < j; k++) {
            pure &= replicable(L, L->stmts[k]);
            effect |= has_effect(L->stmts[k]);
        }
        if (j < L->nstmts) {
            if (j > i && !pure) {
                add_phase(L, PH_SERIAL, i, j, NULL);
                add_phase(L, PH_PFOR, j, j, L->stmts[j]);
            } else {
                add_phase(L, PH_PFOR, i, j, L->stmts[j]);
            }
            i = j + 1;
        } else {
            if (effect) add_phase(L, PH_SERIAL, i, j, NULL);
            i = j;
        }
    }
}

/* Frame locals: values, and local arrays (lower_local.c) created outside the
 * parallel loops, which travel whole, element by element. */
static int is_frame_local(const tk_spec *K, int i) {
    return K->locals[i].scope == -1 && (K->locals[i].ty.kind == TY_VALUE || K->locals[i].ty.kind == TY_ARRAY);
}

/* How many elements local i has (1 but for a local array). */
static int64_t local_elems(const tk_spec *K, int i) {
    if (K->locals[i].ty.kind != TY_ARRAY) return 1;
    int64_t n = tk_local_elems(&K->locals[i]);
    return n > 0 ? n : 1;
}

static size_t local_bytes(const tk_spec *K, int i) {
    size_t n = tack_dtype_get((tack_dtype)K->locals[i].ty.dt)->itemsize * (size_t)local_elems(K, i);
    return (n + 7) & ~(size_t)7;
}

/* Declare frame local i (zeroed) in a phase. */
static void declare_frame_local(tk_emitter *e, const tk_spec *K, int i) {
    tk_emitter_indent(e);
    tk_emitter_printf(e, "%s ", tk_local_elem_type(&K->locals[i], tk_dialect_c.ctype((tack_dtype)K->locals[i].ty.dt)));
    tk_emitter_local(e, i);
    if (K->locals[i].ty.kind == TY_ARRAY) tk_emitter_printf(e, "[%lld]", (long long)local_elems(K, i));
    tk_emitter_printf(e, " = {0};\n");
}

static int has_return(const tk_ir *s) {
    if (s->op == IR_RETURN) return 1;
    for (int i = 0; i < s->n; i++)
        if (has_return(s->k[i])) return 1;
    return 0;
}

static void frame_io(tk_emitter *e, const tk_spec *K, int load, int copy) {
    for (int i = 0; i < K->nlocals; i++) {
        if (!is_frame_local(K, i)) continue;
        if (K->locals[i].ty.kind == TY_ARRAY) { /* a local array: element by element */
            if (load) declare_frame_local(e, K, i);
            tk_emitter_indent(e);
            tk_emitter_printf(e, "for (int64_t l_ = 0; l_ < %lld; l_++) ", (long long)local_elems(K, i));
            if (load) {
                tk_emitter_local(e, i);
                tk_emitter_printf(e, "[l_] = FB->f[%d].", copy);
                tk_emitter_local(e, i);
            } else {
                tk_emitter_printf(e, "FB->f[%d].", copy);
                tk_emitter_local(e, i);
                tk_emitter_printf(e, "[l_] = ");
                tk_emitter_local(e, i);
            }
            tk_emitter_printf(e, "[l_];\n");
            continue;
        }
        tk_emitter_indent(e);
        if (load) {
            tk_emitter_printf(e, "%s ", tk_dialect_c.ctype((tack_dtype)K->locals[i].ty.dt));
            tk_emitter_local(e, i);
            tk_emitter_printf(e, " = FB->f[%d].", copy);
            tk_emitter_local(e, i);
        } else {
            tk_emitter_printf(e, "FB->f[%d].", copy);
            tk_emitter_local(e, i);
            tk_emitter_printf(e, " = ");
            tk_emitter_local(e, i);
        }
        tk_emitter_printf(e, ";\n");
    }
}

/* The scalar parameters from the argument slots, converted as on the CPU. */
static void init_frame(tk_emitter *e, tk_cc *C, const tk_spec *K, const tk_grid *G) {
    for (int p = 0; p < K->nparams; p++) {
        tk_type t = K->ptypes[p];
        if (t.kind == TY_ARRAY) continue;
        tack_scalar_kind k = dt_kind(C->args[p].dtype);
        const char *mem = k == TACK_KIND_FLOAT ? (tk_param_f32(C, p) ? "f32" : "f") : k == TACK_KIND_UINT ? "u" : "i";
        const char *T = tk_dialect_c.ctype((tack_dtype)t.dt);
        int to_float = dt_kind((tack_dtype)t.dt) == TACK_KIND_FLOAT;
        tk_emitter_indent(e);
        tk_emitter_printf(e, "%s ", T);
        tk_emitter_local(e, K->plocal[p]);
        if (ty_is_complex(t)) { /* two slots (re, im), as gpu_common.c packs them; a real argument fills re */
            const char *P = tk_dialect_c.ctype(dt_complex_part((tack_dtype)t.dt));
            const char *pm = k != TACK_KIND_COMPLEX                                ? mem
                             : C->args[p].dtype == TACK_C64 || tk_param_f32(C, p) ? "f32"
                                                                                   : "f";
            tk_emitter_printf(e, " = tk_mk_%s((%s)", T, P);
            G->scalar(e, p, 0, pm);
            tk_emitter_printf(e, ", (%s)", P);
            if (k == TACK_KIND_COMPLEX) G->scalar(e, p, 1, pm);
            else tk_emitter_printf(e, "0");
            tk_emitter_printf(e, ");\n");
        } else if (k == TACK_KIND_FLOAT && !to_float && t.dt != TACK_BOOL) {
            tk_emitter_printf(e, " = (%s)tk_f2%s(", T, dt_kind((tack_dtype)t.dt) == TACK_KIND_INT ? "i64" : "u64");
            G->scalar(e, p, 0, mem);
            tk_emitter_printf(e, ");\n");
        } else if (t.dt == TACK_BOOL) {
            tk_emitter_printf(e, " = ");
            G->scalar(e, p, 0, mem);
            tk_emitter_printf(e, " != 0;\n");
        } else {
            tk_emitter_printf(e, " = (%s)", T);
            G->scalar(e, p, 0, mem);
            tk_emitter_printf(e, ";\n");
        }
    }
    for (int i = 0; i < K->nlocals; i++) {
        if (!is_frame_local(K, i) || K->locals[i].is_param) continue;
        declare_frame_local(e, K, i);
    }
}

static int pfor_scope(const tk_spec *K, const tk_ir *s) { return K->locals[s->vars[0]].scope; }

/* An ndrange's coordinates: the thread's first flat index and the grid's
 * stride are split into coordinates once per thread (c<d>_ and s<d>_, the
 * last dimension varying fastest); each trip then steps the coordinates by
 * the stride's with a carry, instead of dividing the flat index by every
 * extent again (a 64-bit division is a call on a GPU: 76 SASS instructions
 * an element for the 5-point stencil, against 46 stepped).  c<d> + s<d> +
 * carry < 2 n<d>, so one subtraction wraps a coordinate; the first grows
 * past its extent only where i_ has passed total_ and the loop ends. */
static void split_coords(tk_emitter *e, int nd, const tk_grid *G) {
    tk_emitter_indent(e);
    tk_emitter_printf(e, "/* the coordinates of this thread's first index, and of the stride */\n");
    for (int d = 0; d < nd; d++) {
        tk_emitter_indent(e);
        tk_emitter_printf(e, "uint64_t c%d_ = 0, s%d_ = 0;\n", d, d);
    }
    tk_emitter_indent(e);
    tk_emitter_printf(e, "if (total_ > 0) { /* every extent positive */\n");
    tk_emitter_nest(e, 1);
    tk_emitter_indent(e);
    tk_emitter_printf(e, "uint64_t r_ = %s, q_ = stride_;\n", G->thread_index);
    for (int d = nd - 1; d > 0; d--) {
        tk_emitter_indent(e);
        tk_emitter_printf(e, "c%d_ = r_ %% (uint64_t)n%d_; r_ /= (uint64_t)n%d_; s%d_ = q_ %% (uint64_t)n%d_; q_ /= (uint64_t)n%d_;\n",
                          d, d, d, d, d, d);
    }
    tk_emitter_indent(e);
    tk_emitter_printf(e, "c0_ = r_; s0_ = q_;\n");
    tk_emitter_nest(e, -1);
    tk_emitter_indent(e);
    tk_emitter_printf(e, "}\n");
}

/* In a trip, after the loop's variables are set: the next trip's coordinates
 * (before the body, so that a `continue` cannot skip the step). */
static void step_coords(tk_emitter *e, int nd) {
    tk_emitter_indent(e);
    tk_emitter_printf(e, "c%d_ += s%d_;\n", nd - 1, nd - 1);
    for (int d = nd - 1; d > 0; d--) {
        tk_emitter_indent(e);
        tk_emitter_printf(e, "if (c%d_ >= (uint64_t)n%d_) { c%d_ -= (uint64_t)n%d_; c%d_ += s%d_ + 1; } else c%d_ += s%d_;\n",
                          d, d, d, d, d - 1, d - 1, d - 1, d - 1);
    }
}

/* ------------------------------------------------- the elementwise loop
 * A one-dimensional loop whose body is straight-line code -- the elementwise
 * kernels, copy, scale, saxpy -- had one 4-byte load in flight per thread and
 * 64-bit index arithmetic (13 SASS instructions an element for a copy): too
 * few bytes in flight to reach the memory's bandwidth.  Such a loop is
 * written twice, and the kernel picks one at run time:
 *
 *   - when the space and the grid fit 31 bits, a 32-bit counter (the offsets
 *     become one multiply-add) and four iterations a trip, i, i + stride,
 *     i + 2 stride, i + 3 stride: the body's statements interleaved, each
 *     written for the four iterations before the next statement, so that
 *     the loads of four elements are issued before the first store (the
 *     iterations are independent, as the race rules make them; NVCC does
 *     not reorder loads above stores itself); then a 32-bit loop for the
 *     last few;
 *   - otherwise the 64-bit loop as before.
 *
 * The four copies of a local are the local's name with _u0 .. _u3.  A body
 * with a loop, a local array, a `continue`, a `return` or a print keeps the
 * plain loop (the copies would change what leaves the iteration, or grow
 * the code past what the unrolling buys); so does one with an atomic (its
 * helper is a compare-and-swap loop in several dialects -- 64-bit, 8 and
 * 16-bit, floats on OpenCL -- and waits on the memory system whatever the
 * loads do: four copies bought nothing but vendor compile time, 55 s of
 * ocloc for test_atomics' sources), and one over TK_UNROLL_NODES IR nodes,
 * where a matrix function (a prelude helper the vendor compiler inlines:
 * inverse, svd3, ...) counts TK_UNROLL_HELPER nodes.
 *
 * On the H200 four scalar loads a thread reached 0.86 of the device copy
 * and 16-byte vector loads 0.91 (tests/gpu/probe.py, 2026-12-04).  So where
 * the vendor compiler merges adjacent accesses into vector ones when it
 * knows their alignment (G->vector_loads: NVVM and clang, CUDA and HIP),
 * the four iterations of a trip are consecutive ones, 4t, 4t + 1, 4t + 2,
 * 4t + 3, and every array's pointer is declared 16-byte aligned with
 * __builtin_assume_aligned -- after a run-time test that all of them are
 * (a view starting inside its buffer, a[1:], is not: its kernel runs the
 * plain 32-bit loop).  a[i]'s four loads are then one 16-byte load, its four
 * stores one store; an access that is not adjacent across the four stays
 * four scalar ones, as before.  The plain loop after it does the last
 * (fewer than four) elements. */
enum { TK_UNROLL = 4, TK_UNROLL_NODES = 400, TK_UNROLL_HELPER = 100 };

static int unroll_nodes(const tk_spec *K, const tk_ir *x, int n) {
    if (n > TK_UNROLL_NODES) return n;
    switch (x->op) {
    case IR_FOR: case IR_WHILE: case IR_PFOR: case IR_CONTINUE: case IR_BREAK: case IR_RETURN:
    case IR_PRINT: case IR_LARRAY: case IR_LLOAD: case IR_LSTORE: case IR_LFILL: case IR_ATOMIC: case IR_WARP:
        return TK_UNROLL_NODES + 1;
    default: break;
    }
    (void)K;
    n += x->op == IR_MATH && x->sub >= M_TRANSPOSE && x->sub <= M_QR3 ? TK_UNROLL_HELPER : 1;
    for (int i = 0; i < x->n && n <= TK_UNROLL_NODES; i++) n = unroll_nodes(K, x->k[i], n);
    return n;
}

static int unrollable(const tk_spec *K, const tk_ir *s) {
    if (s->aux != 1 || s->k[1]->op != IR_BLOCK) return 0;
    for (int i = 0; i < K->nlocals; i++)
        if (K->locals[i].scope == pfor_scope(K, s) && K->locals[i].ty.kind == TY_ARRAY) return 0;
    return unroll_nodes(K, s->k[1], 0) <= TK_UNROLL_NODES;
}

/* The loop's variable from the 32-bit counter plus `plus` (a C expression, or ""). */
static void set_var32(tk_emitter *e, const tk_ir *s, const char *plus) {
    tk_emitter_indent(e);
    tk_emitter_local(e, s->vars[0]);
    tk_emitter_printf(e, s->off ? " = (int64_t)((uint64_t)(i_%s) + off_);\n" : " = (int64_t)(i_%s);\n", plus);
}

/* The test that every array's pointer is 16-byte aligned, and the promise of
 * it to the vendor compiler (G->vector_loads); 0 when the kernel has no array. */
static int emit_aligned_test(tk_emitter *e, const tk_spec *K) {
    int n = 0;
    for (int p = 0; p < K->nparams; p++) {
        if (K->ptypes[p].kind != TY_ARRAY) continue;
        tk_emitter_printf(e, n++ ? " | (unsigned long long)a%d" : "if ((((unsigned long long)a%d", p);
    }
    if (!n) return 0;
    tk_emitter_printf(e, ") & 15u) == 0) { /* every array 16-byte aligned: vector loads */\n");
    tk_emitter_nest(e, 1);
    for (int p = 0; p < K->nparams; p++) {
        if (K->ptypes[p].kind != TY_ARRAY) continue;
        tk_emitter_indent(e);
        tk_emitter_printf(e, "a%d = (decltype(a%d))__builtin_assume_aligned(a%d, 16);\n", p, p, p);
    }
    return 1;
}

static void emit_unrolled(tk_emitter *e, const tk_spec *K, tk_ir *s, const tk_grid *G, const char *sums) {
    static const char *const lane[TK_UNROLL] = {"_u0", "_u1", "_u2", "_u3"};
    static const char *const strided[TK_UNROLL] = {"", " + s32_", " + 2 * s32_", " + 3 * s32_"};
    static const char *const adjacent[TK_UNROLL] = {"", " + 1u", " + 2u", " + 3u"};
    const char *const *plus = strided;
    int scope = pfor_scope(K, s);
    tk_ir *body = s->k[1];
    tk_emitter_indent(e);
    tk_emitter_printf(e, "if (total_ <= 0x7fffffffu && stride_ <= 0x1fffffffu) { /* 32-bit: i_ + 4 * stride_ fits */\n");
    tk_emitter_nest(e, 1);
    tk_emitter_indent(e);
    tk_emitter_printf(e, "const uint32_t t32_ = (uint32_t)total_, s32_ = (uint32_t)stride_;\n");
    tk_emitter_indent(e);
    tk_emitter_printf(e, "uint32_t i_ = (uint32_t)(%s);\n", G->thread_index);
    tk_emitter_indent(e);
    int vec = G->vector_loads && emit_aligned_test(e, K);
    if (vec) {
        plus = adjacent;
        tk_emitter_indent(e);
        tk_emitter_printf(e, "for (i_ *= 4u; i_ + 3u < t32_; i_ += 4u * s32_) { /* four adjacent iterations */\n");
    } else {
        tk_emitter_printf(e, "for (; i_ + 3 * s32_ < t32_; i_ += 4 * s32_) { /* four iterations, their loads first */\n");
    }
    tk_emitter_nest(e, 1);
    for (int u = 0; u < TK_UNROLL; u++) {
        tk_emitter_lane(e, lane[u], scope, sums);
        tk_emitter_declare_locals(e, scope, sums, 0);
    }
    for (int u = 0; u < TK_UNROLL; u++) {
        tk_emitter_lane(e, lane[u], scope, sums);
        set_var32(e, s, plus[u]);
    }
    for (int i = 0; i < body->n; i++) {
        for (int u = 0; u < TK_UNROLL; u++) {
            tk_emitter_lane(e, lane[u], scope, sums);
            tk_emitter_stmt(e, body->k[i]);
        }
    }
    tk_emitter_lane(e, NULL, 0, NULL);
    tk_emitter_nest(e, -1);
    tk_emitter_indent(e);
    tk_emitter_printf(e, "}\n");
    if (vec) { /* the last elements, fewer than four, by the plain loop */
        tk_emitter_indent(e);
        tk_emitter_printf(e, "i_ = (t32_ & ~3u) + (uint32_t)(%s);\n", G->thread_index);
        tk_emitter_nest(e, -1);
        tk_emitter_indent(e);
        tk_emitter_printf(e, "}\n");
    }
    tk_emitter_indent(e);
    tk_emitter_printf(e, "for (; i_ < t32_; i_ += s32_) {\n");
    tk_emitter_nest(e, 1);
    tk_emitter_declare_locals(e, scope, sums, 0);
    set_var32(e, s, "");
    tk_emitter_stmt(e, body);
    tk_emitter_nest(e, -1);
    tk_emitter_indent(e);
    tk_emitter_printf(e, "}\n");
    tk_emitter_nest(e, -1);
    tk_emitter_indent(e);
    tk_emitter_printf(e, "} else {\n");
}

/* ------------------------------------------------------- a blocks loop
 * tack.blocks(n, B) (lower_blocks.c): the phase is launched in blocks of
 * exactly B threads (the launcher reads B from the source's
 * `tack-grid-block` comment), and each block of the launch runs the loop's
 * blocks b = its index, + the number of blocks, ... in turn, so any grid is
 * correct.  The shared arrays are the dialect's block memory, declared once
 * at the phase's top; every other local of the loop is the thread's own.
 * A barrier after each block's body keeps a fast thread from writing the
 * shared arrays of its next block while a slow one still reads this one's. */
static void emit_blocks_loop(tk_emitter *e, const tk_spec *K, tk_ir *s, const tk_grid *G) {
    tk_cc *C = tk_emitter_cc(e);
    int scope = pfor_scope(K, s);
    tk_emitter_indent(e);
    tk_emitter_printf(e, "const int64_t n0_ = ");
    tk_emitter_expr(e, s->k[0]);
    tk_emitter_printf(e, ";\n");
    for (int i = 0; i < K->nlocals; i++) {
        const tk_local *l = &K->locals[i];
        if (!l->shared || l->scope != scope) continue;
        tk_emitter_indent(e);
        tk_emitter_printf(e, "%s%s ", C->dialect->shared_qual, tk_local_elem_type(l, C->dialect->ctype((tack_dtype)l->ty.dt)));
        tk_emitter_local(e, i);
        tk_emitter_printf(e, "[%lld];\n", (long long)(tk_local_elems(l) > 0 ? tk_local_elems(l) : 1));
    }
    tk_emitter_indent(e);
    tk_emitter_printf(e, "for (uint64_t b_ = (uint64_t)%s; n0_ > 0 && b_ < (uint64_t)n0_; b_ += (uint64_t)%s) {\n",
                      G->group_index, G->group_count);
    tk_emitter_nest(e, 1);
    tk_emitter_declare_locals(e, scope, NULL, 0);
    tk_emitter_indent(e);
    tk_emitter_local(e, s->vars[0]);
    tk_emitter_printf(e, " = (int64_t)b_;\n");
    tk_emitter_indent(e);
    tk_emitter_local(e, s->local);
    tk_emitter_printf(e, " = (int64_t)%s;\n", G->local_index);
    tk_emitter_blocks_body(e, s->k[1]); /* a failed check does not leave: every thread reaches every barrier */
    tk_emitter_stmt(e, s->k[1]);
    tk_emitter_blocks_body(e, NULL);
    tk_emitter_indent(e);
    tk_emitter_printf(e, "%s\n", C->dialect->barrier);
    tk_emitter_nest(e, -1);
    tk_emitter_indent(e);
    tk_emitter_printf(e, "}\n");
}

/* The grid-stride loop of one parallel loop, its body, and the warp-summed
 * flushes of privatized reductions. */
/* Whether a thread can leave the loop's body early: a check (which returns
 * when it fails) or a call to a function that can fail (may_fail.c). */
static int body_fails_in(const char *mayfail, const tk_ir *x) {
    if (!x) return 0;
    if (x->op == IR_CHECK) return 1;
    if (x->op == IR_CALL && mayfail[x->aux]) return 1;
    for (int i = 0; i < x->n; i++)
        if (body_fails_in(mayfail, x->k[i])) return 1;
    return 0;
}

static int body_fails(tk_cc *C, const tk_ir *body) {
    return body_fails_in(tk_may_fail(C), body);
}

static void emit_grid_loop(tk_emitter *e, const tk_spec *K, tk_ir *s, const tk_grid *G) {
    int nd = s->aux;
    if (ir_is_blocks(s)) {
        emit_blocks_loop(e, K, s, G);
        return;
    }
    for (int d = 0; d < nd; d++) {
        tk_emitter_indent(e);
        tk_emitter_printf(e, "const int64_t n%d_ = ", d);
        tk_emitter_expr(e, s->k[d]);
        tk_emitter_printf(e, ";\n");
    }
    tk_emitter_indent(e);
    tk_emitter_printf(e, "uint64_t total_ = 1;\n");
    for (int d = 0; d < nd; d++) {
        tk_emitter_indent(e);
        tk_emitter_printf(e, "total_ = n%d_ > 0 ? total_ * (uint64_t)n%d_ : 0;\n", d, d);
    }
    if (s->off) {
        tk_emitter_indent(e);
        tk_emitter_printf(e, "const uint64_t off_ = (uint64_t)(");
        tk_emitter_expr(e, s->off);
        tk_emitter_printf(e, ");\n");
    }
    /* a privatized sum lives across the thread's iterations; every other local
     * of the loop is its iteration's own, zero where not assigned (as on the CPU) */
    char *sums = tk_alloc(&tk_emitter_cc(e)->arena, (size_t)K->nlocals + 1);
    memset(sums, 0, (size_t)K->nlocals + 1);
    for (int r = 0; s->red && r < s->red->n; r++)
        if (s->red->k[r]->k[0]->op == IR_LOCAL) sums[s->red->k[r]->k[0]->local] = 1;
    tk_emitter_declare_locals(e, pfor_scope(K, s), sums, 1);
    tk_emitter_indent(e);
    tk_emitter_printf(e, "const uint64_t stride_ = %s;\n", G->thread_stride);
    if (nd > 1) split_coords(e, nd, G);
    int unroll = unrollable(K, s);
    if (unroll) {
        emit_unrolled(e, K, s, G, sums);
        tk_emitter_nest(e, 1);
    }
    tk_emitter_indent(e);
    tk_emitter_printf(e, "for (uint64_t i_ = %s; i_ < total_; i_ += stride_) {\n", G->thread_index);
    tk_emitter_nest(e, 1);
    tk_emitter_declare_locals(e, pfor_scope(K, s), sums, 0);
    if (nd == 1) {
        tk_emitter_indent(e);
        tk_emitter_local(e, s->vars[0]);
        tk_emitter_printf(e, s->off ? " = (int64_t)(i_ + off_);\n" : " = (int64_t)i_;\n");
    } else {
        for (int d = 0; d < nd; d++) {
            tk_emitter_indent(e);
            tk_emitter_local(e, s->vars[d]);
            tk_emitter_printf(e, " = (int64_t)c%d_;\n", d);
        }
        step_coords(e, nd);
    }
    tk_emitter_stmt(e, s->k[nd]);
    tk_emitter_nest(e, -1);
    tk_emitter_indent(e);
    tk_emitter_printf(e, "}\n");
    if (unroll) {
        tk_emitter_nest(e, -1);
        tk_emitter_indent(e);
        tk_emitter_printf(e, "}\n");
    }
    /* whether every thread reaches the flushes: one walk for all of the loop's sums */
    int all_reach = s->red && s->red->n && G->flush ? !body_fails(tk_emitter_cc(e), s->k[nd]) : 0;
    for (int r = 0; s->red && r < s->red->n; r++) {
        tk_ir *a = s->red->k[r];
        tk_ir *v = a->k[0];
        if (v->op == IR_LOCAL && G->flush) {
            G->flush(e, a, all_reach);
        } else {
            tk_emitter_indent(e);
            tk_emitter_printf(e, "if (");
            tk_emitter_expr(e, v);
            tk_emitter_printf(e, " != 0) (void)");
            tk_emitter_expr(e, a);
            tk_emitter_printf(e, ";\n");
        }
    }
}

/* ------------------------------------------------------------- the work
 * How many iterations a parallel loop has, written for the launcher so that
 * it can size the grid from the work instead of filling the device (a
 * grid-stride loop is correct for any grid, so this only saves launching
 * idle blocks).  The extent is written when the launcher can evaluate it
 * from the arguments alone: integer constants, array extents, integer
 * scalar parameters never assigned, locals assigned once at the top level
 * before the loop from such values, and + - * // min max of those.  Postfix,
 * comma-separated: `#N` a constant, `sP.D` extent D of array parameter P,
 * `iP` / `uP` signed / unsigned scalar parameter P, `+ - * / m M`; the
 * dimensions of an ndrange are separated by `;`.  A loop whose extent
 * cannot be written is left out, and gets the full grid. */
static int count_assigns(const tk_ir *s, int l) {
    int n = (s->op == IR_ASSIGN || s->op == IR_SETCOMP || s->op == IR_FOR) && s->local == l;
    if (s->op == IR_PFOR)
        for (int d = 0; d < s->aux; d++) n += s->vars[d] == l;
    for (int i = 0; i < s->n; i++) n += count_assigns(s->k[i], l);
    return n;
}

static int work_expr(layout *L, tk_buf *b, const tk_ir *x, int before, int depth) {
    const tk_spec *K = L->K;
    if (depth > 16 || !(ty_is_int(x->ty) || ty_is_bool(x->ty))) return 0;
    switch (x->op) {
    case IR_CONST: tk_printf(b, "#%lld,", (long long)x->c.i); return 1;
    case IR_SHAPE: tk_printf(b, "s%d.%d,", x->param, x->aux); return 1;
    case IR_CAST: return work_expr(L, b, x->k[0], before, depth + 1);
    case IR_BIN: {
        static const char ops[B_COUNT] = {[B_ADD] = '+', [B_SUB] = '-', [B_MUL] = '*', [B_FLOORDIV] = '/',
                                          [B_MIN] = 'm', [B_MAX] = 'M'};
        if (!ops[x->sub] || !work_expr(L, b, x->k[0], before, depth + 1) || !work_expr(L, b, x->k[1], before, depth + 1))
            return 0;
        tk_printf(b, "%c,", ops[x->sub]);
        return 1;
    }
    case IR_LOCAL: {
        int l = x->local, n = count_assigns(K->body, l);
        if (K->locals[l].is_param) {
            for (int p = 0; p < K->nparams; p++) {
                if (K->plocal[p] != l || n) continue;
                tack_scalar_kind k = dt_kind(L->C->args[p].dtype);
                if (k != TACK_KIND_INT && k != TACK_KIND_UINT && k != TACK_KIND_BOOL) return 0;
                tk_printf(b, "%c%d,", k == TACK_KIND_UINT ? 'u' : 'i', p);
                return 1;
            }
            return 0;
        }
        if (n != 1 || K->locals[l].scope != -1) return 0;
        for (int i = 0; i < before; i++) {
            const tk_ir *s = L->stmts[i];
            if (s->op == IR_ASSIGN && s->local == l) return work_expr(L, b, s->k[0], i, depth + 1);
        }
        return 0;
    }
    default: return 0;
    }
}

static void emit_work(layout *L, tk_emitter *e) {
    tk_buf all, one;
    tk_buf_init(&all, &L->C->arena);
    for (int k = 0; k < L->nph; k++) {
        const phase *ph = &L->ph[k];
        if (ph->kind != PH_PFOR) continue;
        int at = ph->last; /* the loop's statement index */
        tk_buf_init(&one, &L->C->arena);
        int ok = 1;
        for (int d = 0; ok && d < ph->pfor->aux; d++) {
            if (d) tk_puts(&one, ";");
            ok = work_expr(L, &one, ph->pfor->k[d], at, 0);
        }
        if (ok) tk_printf(&all, " %d:%s", k, one.len ? one.s : "");
    }
    if (all.len) tk_emitter_printf(e, "/* tack-grid-work:%s */\n", all.s);
    /* a blocks phase's block size: its work above counts blocks, not threads */
    tk_buf_init(&all, &L->C->arena);
    for (int k = 0; k < L->nph; k++)
        if (L->ph[k].kind == PH_PFOR && ir_is_blocks(L->ph[k].pfor))
            tk_printf(&all, " %d:%lld", k, (long long)L->ph[k].pfor->c.i);
    if (all.len) tk_emitter_printf(e, "/* tack-grid-block:%s */\n", all.s);
}

void tk_grid_kernel(tk_emitter *e, tk_buf *out, const tk_grid *G) {
    tk_cc *C = tk_emitter_cc(e);
    tk_spec *K = tk_emitter_kernel(e);
    layout L;
    memset(&L, 0, sizeof L);
    L.C = C;
    L.K = K;
    flatten(&L, K->body);
    plan(&L);
    int ret = has_return(K->body);

    tk_emitter_target(e, out, TK_FN_ENTRY);
    /* the frame, twice */
    size_t frame = 0;
    tk_emitter_printf(e, "typedef struct tk_frame {\n    int64_t unused_;\n");
    for (int i = 0; i < K->nlocals; i++) {
        if (!is_frame_local(K, i)) continue;
        tk_emitter_printf(e, "    %s ", tk_local_elem_type(&K->locals[i], tk_dialect_c.ctype((tack_dtype)K->locals[i].ty.dt)));
        tk_emitter_local(e, i);
        if (K->locals[i].ty.kind == TY_ARRAY) tk_emitter_printf(e, "[%lld]", (long long)local_elems(K, i));
        tk_emitter_printf(e, ";\n");
        frame += local_bytes(K, i);
    }
    tk_emitter_printf(e, "} tk_frame;\ntypedef struct tk_fbuf { int done; int pad_; tk_frame f[2]; } tk_fbuf;\n\n");
    size_t fbytes = L.nph > 1 ? 16 + 2 * (frame + 16) : 0;
    if (G->decls) G->decls(e, K);

    for (int k = 0; k < L.nph; k++) {
        phase *ph = &L.ph[k];
        int later = k + 1 < L.nph;
        if (ph->kind == PH_SERIAL)
            tk_emitter_printf(e, "/* phase %d: serial code, line %d, one thread */\n", k, L.stmts[ph->first]->line);
        else tk_emitter_printf(e, "/* phase %d: parallel loop at line %d */\n", k, ph->pfor->line);
        tk_emitter_target(e, out, ph->kind == PH_PFOR ? TK_FN_PARALLEL : TK_FN_ENTRY);
        G->phase_open(e, K, k, ph->kind == PH_PFOR);
        tk_emitter_nest(e, 1);
        if (G->phase_args) G->phase_args(e, K);
        tk_emitter_indent(e);
        tk_emitter_printf(e, "if (TK_FAILED(ctx)) return;\n");
        if (k > 0 && ret) {
            tk_emitter_indent(e);
            tk_emitter_printf(e, "if (FB->done) return;\n");
        }
        tk_emitter_indent(e);
        tk_emitter_printf(e, "int fl_ = 0; /* set by a failing check: the test after a call reads it */\n");
        tk_emitter_indent(e);
        tk_emitter_printf(e, "const tk_abi abi_ = {%s, &fl_};\n", G->prog);
        tk_emitter_indent(e);
        tk_emitter_printf(e, "const %stk_abi *abi = &abi_; (void)abi;\n", C->dialect->thread_ptr ? C->dialect->thread_ptr : "");
        if (k == 0) init_frame(e, C, K, G);
        else frame_io(e, K, 1, k % 2);
        if (ph->kind == PH_SERIAL) {
            if (later && ret) {
                tk_emitter_indent(e);
                tk_emitter_printf(e, "FB->done = 1;\n");
            }
            for (int i = ph->first; i < ph->last; i++) tk_emitter_stmt(e, L.stmts[i]);
            if (later) {
                if (ret) {
                    tk_emitter_indent(e);
                    tk_emitter_printf(e, "FB->done = 0;\n");
                }
                frame_io(e, K, 0, (k + 1) % 2);
            }
        } else {
            for (int i = ph->first; i < ph->last; i++) tk_emitter_stmt(e, L.stmts[i]);
            if (later) {
                tk_emitter_indent(e);
                tk_emitter_printf(e, "if (%s) {\n", G->first_thread);
                tk_emitter_nest(e, 1);
                if (k == 0 && ret) {
                    tk_emitter_indent(e);
                    tk_emitter_printf(e, "FB->done = 0;\n");
                }
                frame_io(e, K, 0, (k + 1) % 2);
                tk_emitter_nest(e, -1);
                tk_emitter_indent(e);
                tk_emitter_printf(e, "}\n");
            }
            emit_grid_loop(e, K, ph->pfor, G);
        }
        tk_emitter_nest(e, -1);
        tk_emitter_printf(e, "}\n\n");
    }
    /* what the launcher needs to know */
    emit_work(&L, e);
    tk_emitter_printf(e, "/* %s: phases=", G->tag);
    for (int k = 0; k < L.nph; k++)
        tk_emitter_printf(e, "%c", L.ph[k].kind != PH_PFOR ? 's' : ir_is_blocks(L.ph[k].pfor) ? 'b' : 'p');
    tk_emitter_printf(e, " frame=%zu", fbytes);
    if (G->trailer) G->trailer(e);
    tk_emitter_printf(e, " */\n");
}
