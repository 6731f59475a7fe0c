/*
 * emit.h -- the emitter's state, shared by its files (emit.c, emit_expr.c,
 * emit_stmt.c, emit_complex.c, emit_quat.c), the CPU kernel layout
 * (cpu/emit_*.c) and the race detector's code (race_watch.c), and by no one
 * else.
 *
 * The emitter writes expressions (emit_expr.c), statements (emit_stmt.c)
 * and @tack.func specializations (emit.c) the same way for every C-family
 * dialect; a dialect's `kernel` hook lays the kernel out around them.  The
 * CUDA layout (dialect_cuda.c) needs nothing beyond compiler.h's
 * tk_emitter_* services.  The CPU layout is more intimate: it writes a
 * parallel loop in several versions, and each version changes how some
 * expressions and statements come out -- a fast division inside a segment
 * is a local, an add into a histogram goes to the chunk's private copy.
 * Those versions are the modes below, set by emit_cpu.c (and emit_inner.c)
 * and read by ex() and st(); this header is where the files share them, so
 * that the struct stays private to the emitter.
 *
 * The emitter's primitives keep their short names (P, I, ex, st, ...) in
 * every file; the macros at the end map them to hidden symbols with an em_
 * prefix.
 */
#ifndef TACK_EMIT_H
#define TACK_EMIT_H

#include "compiler/compiler.h"
#include "compiler/target.h"

/* Which version of a parallel loop's chunk is being written, as far as the
 * fast divisions of strength.c (M_FDIVQ / M_MODQ) are concerned. */
typedef enum tk_divmode {
    DIV_NONE,        /* not in a loop with fast divisions: the flag is an operand */
    DIV_FAST,        /* the fast version: reciprocal estimate plus fix-up */
    DIV_EXACT,       /* the exact version: the helpers' division */
    DIV_SEGMENTED    /* a segment: each index quotient is a local, each remainder o + k_ */
} tk_divmode;

/* The chunk function being written for a loop with fast divisions. */
typedef enum tk_chunkfn {
    CHUNK_ALL,       /* the usual function: every version */
    CHUNK_EXACT      /* the cold function: its exact version only */
} tk_chunkfn;

/* The rows of an ndrange chunk that the innermost loop runs. */
typedef enum tk_rowmode {
    ROW_ANY,         /* from jb_ to je_: the chunk's first and last rows may be partial */
    ROW_WHOLE        /* the copy for whole rows: 0 .. inner_ */
} tk_rowmode;

/* A loop with periodic indices (periodic.c): which part of it is being written. */
typedef enum tk_permode {
    PER_NONE,        /* not its periodic version: M_PMOD is the remainder */
    PER_BORDER,      /* the periodic version, at the border: the remainders' checks left out */
    PER_INTERIOR,    /* its interior: the innermost variable's M_PMOD is var + c */
    PER_FALLBACK     /* the loop as written, for a flag that fails (rare): no whole-row copy */
} tk_permode;

struct tk_emitter {
    tk_cc *C;
    const tk_dialect *D;
    const tk_target *T;   /* what the target can do (target.h) */
    tk_buf *b;            /* where P writes */
    tk_spec *S;           /* the specialization being written */
    tk_spec *K;           /* the kernel's */
    int si;               /* S's index in C->specs */
    int ind;              /* indentation, in levels of four spaces */
    tk_emit_fn fn;        /* what the code being written is: how a failed check leaves it */
    int counter;          /* numbers the names of loops (serial and parallel) */
    /* How a parallel loop met by st() is laid out (the CPU layout's; NULL
     * in a layout that takes parallel loops from the top level itself). */
    void (*pfor)(tk_emitter *e, tk_ir *s);

    /* The CPU layout's state (emit_cpu.c); fastv and hist change what ex()
     * and st() write. */
    tk_buf pfors;          /* parallel bodies, written while walking the entry */
    tk_divmode fastv;      /* the version of a loop with fast divisions being written */
    const char *rlo, *rhi; /* bounds of the innermost loop when it runs a block (else NULL) */
    tk_rowmode whole_row;  /* an ndrange chunk's rows */
    tk_permode per;        /* the part of a loop with periodic indices (periodic.c) */
    tk_chunkfn exact;      /* the chunk function of a loop with fast divisions */
    int nopoll;            /* in SIMD lanes, where no loop may leave early: serial loops do not poll */
    int brk;               /* the label a `break` jumps to (a strip-mined loop's), or -1: `break;` */
    uint64_t hist;         /* in the private-histogram version of a parallel loop: bit q, array q (privatize.c) */
    int unsw;              /* in the chunk's main version: a chunk whose iterations all pass the parallel
                            * loop's `ck` may run its TK_IF_ROWS loops' check-free branches alone (emit_cpu.c) */
    const int *rec;        /* the record version of a chunk function: per array, its last axis's
                            * constant extent, or 0 (emit_cpu.c's record_arrays) */
    int rc;                /* in the chunk of a loop the race detector watches: its index + 1 (race_watch.c) */
    int band;              /* writing a 3-D parallel loop whose rows are numbered in bands (bands.c) */
    int rcf;               /* writing a @tack.func's watched copy (race_watch.c) */
    const char *mayfail;   /* per spec: a call to it can fail (may_fail.c) */
    /* A blocks loop's body on a grid (tk_emitter_blocks_body): a failed check sets the thread's
     * flag instead of returning, and the unsafe statements after it run only while it is clear
     * (emit_stmt.c); bchecked: a check or call has been written before, so the flag may be set;
     * bclear: writing inside a test of the flag, with no check or call since. */
    const tk_ir *bbody;
    int bchecked, bclear;
    const char *lane;      /* a copy of an unrolled loop body: its locals' suffix (tk_emitter_lane) */
    int lane_scope;
    const char *lane_keep;
};

static inline const char *ctype(tk_emitter *e, int dt) { return e->D->ctype((tack_dtype)dt); }
static inline const char *ut(int dt) { return dt_bits((tack_dtype)dt) <= 32 ? "uint32_t" : "uint64_t"; }
static inline int is_signed(int dt) { return dt_kind((tack_dtype)dt) == TACK_KIND_INT; }
static inline int is_float_dt(int dt) { return dt_kind((tack_dtype)dt) == TACK_KIND_FLOAT; }
/* A histogram array's private copy (privatize.c) counts components: a vector or matrix element
 * is hist_k cells of its component type hist_dt (one cell of its own type for a number). */
static inline int hist_dt(int dt) { return (int)dt_scalar((tack_dtype)dt); }
static inline int hist_k(int dt) { return dt_rows((tack_dtype)dt) * dt_cols((tack_dtype)dt); }
/* Whether specialization S returns something (a value or a tuple): its functions keep a tk_zero. */
static inline int em_returns_value(const tk_spec *S) { return S->ret.kind == TY_VALUE || S->ret.kind == TY_TUPLE; }

/* emit.c: the primitives */
TK_HIDDEN void em_printf(tk_emitter *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
TK_HIDDEN void em_indent(tk_emitter *e);
/* A local's C name: v<index>[_<name>]. */
TK_HIDDEN void em_local_name(tk_emitter *e, int loc);
TK_HIDDEN void em_comment_text(tk_emitter *e, const char *s);
/* emit_expr.c: an expression; the element offset of access x (its indices from k[first]) into
 * its array parameter, and the row-major index into its local array */
TK_HIDDEN void em_expr(tk_emitter *e, tk_ir *x);
TK_HIDDEN void em_flat_index(tk_emitter *e, tk_ir *x, int first);
/* .v[k] or .m[i][j]: the component an IR_STORE or IR_ATOMIC with comp writes (nothing for comp 0). */
TK_HIDDEN void em_comp(tk_emitter *e, int param, int comp);
TK_HIDDEN void em_local_index(tk_emitter *e, tk_ir *x, int first);
/* emit_stmt.c: a statement, a block */
TK_HIDDEN void em_stmt(tk_emitter *e, tk_ir *s);
TK_HIDDEN void em_block(tk_emitter *e, tk_ir *b);
/* The condition under which check `s` fails. */
TK_HIDDEN void em_check_fails(tk_emitter *e, tk_ir *s);
/* In a dialect with polls: the function's loop budget (at its top): empty,
 * or `full` in a parallel loop's piece (the pool polls between pieces). */
TK_HIDDEN void em_poll_budget(tk_emitter *e, int full);
/* Declare (zero-initialized) the value locals of one scope (frame: -1, a
 * parallel loop: its id); with `carried`, only those it marks (in 1) or does
 * not mark (in 0). */
TK_HIDDEN void em_declare_locals(tk_emitter *e, int scope, int skip_params, const char *carried, int in);
/* emit_stmt.c: a serial loop's body with its variable, closing the loop's brace */
TK_HIDDEN void em_for_body(tk_emitter *e, tk_ir *s, int c, int unit, int brk);
/* emit_stmt.c: whether IR x has at most *left nodes, counting them off */
TK_HIDDEN int em_within(const tk_ir *x, int *left);
/* emit_lanes.c: @tack.func specialization si can run in SIMD lanes once inlined */
TK_HIDDEN int em_lane_func(const tk_cc *C, int si);
/* emit_cpu.c: the cost model's units of one run of loop-free IR x */
TK_HIDDEN int64_t em_body_cost(const tk_ir *x);
/* launch_work.c: for parallel loop s with inner loops whose bounds the launch knows, declare
 * const int64_t `mp` (its min_parallel: `total` + 1 when the estimated work is too little to
 * share, else 2), raise int64_t `grain` to the iterations of a piece worth handing out, and
 * return 1; 0 (nothing written) when there is no estimate. */
TK_HIDDEN int tk_cpu_launch_work(tk_emitter *e, tk_ir *s, const char *total, const char *mp, const char *grain);
/* emit_blocks.c: the chunk of a blocks loop (tack.blocks): its blocks, their threads split at barriers */
TK_HIDDEN void tk_cpu_blocks_chunk(tk_emitter *e, tk_ir *s);
/* bands.c: whether the rows of 3-D parallel loop s may run in bands of layers; the launch's band
 * height for such a loop (F_.bh, F_.bq: one band of ny rows where the layers are small); and a
 * chunk's rows in that numbering (ndrange_rows' loops, left open: returns how many) */
TK_HIDDEN int tk_cpu_bands(tk_emitter *e, tk_ir *s);
TK_HIDDEN void tk_cpu_bands_launch(tk_emitter *e, tk_ir *s);
TK_HIDDEN int tk_cpu_bands_rows(tk_emitter *e, tk_ir *s);
/* emit_lanes.c: the plain copy of loop s (counter c) in SIMD lanes, or 0 (nothing written) */
TK_HIDDEN int em_plain_in_lanes(tk_emitter *e, tk_ir *s, int c);
TK_HIDDEN int em_lanes_ok(tk_emitter *e, const tk_ir *s);
/* emit_inner.c: a CPU chunk's innermost loop, for emit_cpu.c.  em_carried_locals: the parallel
 * loop s's locals whose values live across its iterations (1 in the result, indexed by local);
 * em_verify_prefix: the number of statements of s's body whose checks are verified a block ahead
 * (0: none); em_innermost: the loop over the chunk's (or the row's) iterations, in the version the
 * emitter's mode says. */
TK_HIDDEN int em_body_in_lanes(const tk_cc *C, const tk_ir *body); /* a parallel loop's body may run in SIMD lanes */
TK_HIDDEN char *em_carried_locals(tk_emitter *e, tk_ir *s);
TK_HIDDEN int em_verify_prefix(tk_emitter *e, tk_ir *s, const char *carried);
TK_HIDDEN void em_innermost(tk_emitter *e, tk_ir *s, const char *carried, int np);

/* race_watch.c: the run-time race detector's code (check_races), for emit_cpu.c and the emitter.
 * em_race_site: access x's site in the loop being written, or -1; em_race_open / close
 * write around the element offset of such an access (kind 0 read, 1 write, 2 atomic). */
TK_HIDDEN int em_race_loop(tk_emitter *e, const tk_ir *pf);      /* its index, or -1 */
TK_HIDDEN int em_race_site(tk_emitter *e, const tk_ir *x);
TK_HIDDEN void em_race_open(tk_emitter *e, int site);
TK_HIDDEN void em_race_close(tk_emitter *e, int site);
TK_HIDDEN void em_race_frame(tk_emitter *e);                     /* the frame's field */
TK_HIDDEN void em_race_entry(tk_emitter *e);                     /* the entry's session */
TK_HIDDEN void em_race_begin(tk_emitter *e, tk_ir *s, int loop); /* before parallel_for */
TK_HIDDEN void em_race_chunk(tk_emitter *e);                     /* the chunk function's head */
TK_HIDDEN void em_race_iteration(tk_emitter *e, tk_ir *s);       /* an iteration's head */
/* Whether call x goes to the function's watched copy, and the extra arguments it then passes. */
TK_HIDDEN int em_race_call(tk_emitter *e, const tk_ir *x);
TK_HIDDEN void em_race_call_args(tk_emitter *e, const tk_ir *x);
TK_HIDDEN void em_race_params(tk_emitter *e, const tk_spec *S);  /* a watched copy's extra parameters */
TK_HIDDEN void em_race_unused(tk_emitter *e, const tk_spec *S);  /* ... each cast to void */

/* emit_complex.c: the expressions of complex type or operands */
void em_complex_make(tk_emitter *e, tk_ir *x);
void em_complex_cast(tk_emitter *e, tk_ir *x);
void em_complex_bin(tk_emitter *e, tk_ir *x);
void em_complex_un(tk_emitter *e, tk_ir *x);
void em_complex_math(tk_emitter *e, tk_ir *x);

#define P(...) em_printf(__VA_ARGS__)
#define I(e) em_indent(e)
#define ex(e, x) em_expr(e, x)
#define st(e, s) em_stmt(e, s)
#define block(e, b) em_block(e, b)
#define local_name(e, loc) em_local_name(e, loc)
#define comment_text(e, s) em_comment_text(e, s)
#define check_fails(e, s) em_check_fails(e, s)
#define declare_locals(e, scope, skip_params, carried, in) em_declare_locals(e, scope, skip_params, carried, in)
#define poll_budget(e, full) em_poll_budget(e, full)

#endif /* TACK_EMIT_H */
