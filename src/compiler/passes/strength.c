/*
 * strength.c -- loop-invariant code motion and division by loop-invariant
 * divisors in parallel loops.
 *
 * Python's // and % on integers cost a hardware division plus a sign fix-up
 * and, in Tack, a zero check.  A 64-bit idiv is some 40 cycles and does not
 * vectorize (nor does the C compiler's multiply-by-magic-number for a
 * constant divisor, through the helper's branches), so the spec's kernel
 *
 *     for i in range(values.shape[0]):
 *         x = float(i % nx) - ...
 *         y = float((i // nx) % ny) - ...
 *         z = float(i // (nx * ny)) - 2.0
 *
 * ran 30x slower than filling the same memory.  For every parallel loop
 * (IR_PFOR) of the kernel this pass does, in order:
 *
 *   1. Invariant assignments move out.  `t = nx * ny` in the body, where t is
 *      a private local of the loop, assigned only there, not read earlier in
 *      the body, and the value is a pure expression (constants, shapes,
 *      arithmetic, casts, wraps: ir_invariant, which admits no loads and no
 *      calls) of locals the loop does not assign, runs once per launch before
 *      the loop; t becomes a frame local, which the CPU layout hands to every
 *      chunk read-only and the CUDA layout replicates.  Every IR expression
 *      without loads or calls is total (integer division helpers define
 *      x // 0, float-to-int saturates), so running it when the loop would not
 *      have run changes nothing observable.  Later assignments that use t
 *      become invariant in turn.
 *
 *   2. Zero checks of invariant divisors move out (checks.c's invariant
 *      hoisting, guarded by "the loop runs at least once"), which step 1
 *      makes possible for `i // (nx * ny)`.  They keep their order in the
 *      body, so the check that fails is the one the first iteration would
 *      have failed.
 *
 *   3. Division by an invariant divisor with a bounded dividend (targets
 *      whose parallel loops run in chunks, target.h: the CPU layout writes
 *      the versions; GPUs want another trick).  Before the loop, per divisor d,
 *      `inv = fast(d) ? 1.0 / (double)d : 0` with fast(d) = d != 0 and
 *      |d| < 2^52, and one flag per loop: the conjunction of every fact the
 *      fast paths rely on (each divisor fast, the loop's index range
 *      bounded).  A constant divisor 0 < |c| < 2^52 needs neither: its
 *      reciprocal is a constant.  In the body a // d and a % d become
 *      M_FDIVQ / M_MODQ [a, d, inv, flag]; emit_cpu.c versions the chunk's loop on
 *      the flag: a copy with the fast path alone, which vectorizes (AVX-512DQ
 *      has the int64 <-> double conversions and vpmullq), and a copy with
 *      the exact helpers -- the code Tack emitted before this pass -- in a
 *      separate cold function, compiled for size (it is rarely run).
 *
 *   4. Segments.  For i // d and i % d of the index i of a one-dimensional
 *      loop with d >= 16 (a constant, or at run time for an invariant d),
 *      i // d is one value over runs of d consecutive indices.  The loop
 *      then has a third version (flag "seg", which implies the fast flag):
 *      the chunk runs in segments that end where any such quotient changes.
 *      Each quotient q is computed exactly (tk_fdiv_i64) at the chunk's
 *      first segment; a later segment starts at or before q's next boundary
 *      (q + 1) * d -- a segment never crosses one -- so q only steps by one
 *      when the segment starts on it.  Inside a segment i // d is q and
 *      i % d is o + k, where o is the remainder at the segment's start and
 *      k counts from 0 across the segment: the inner loop is plain
 *      arithmetic on an induction variable, and what depends on q alone
 *      ((i // nx) % ny) the C compiler hoists out of it.  Shorter segments
 *      would cost more than they save, hence the lower bound; negative
 *      divisors keep the fast path.  The divisor is also at most 2^31 - 1,
 *      so o + k < d is an int32: k is a 32-bit induction variable, and
 *      float(i % nx) converts sixteen lanes at a time (AVX-512 has no
 *      16-lane int64 conversion; 64K points of the spec's kernel on one
 *      core: 12.4 -> 8.6 us).
 *
 * The fast path (tk_fdivq_i64 / tk_modq_i64 in the C prelude) for |a| < 2^52,
 * 0 < |d| < 2^52:
 *
 *     t  = fl((double)a * inv)            both conversions exact
 *     q0 = (int64)t, minus 1 if (double)q0 > t      = floor(t)
 *     r0 = a - q0 * d,  then q = q0 - [r0 != 0 and sign(r0) != sign(d)]
 *                                   + [d > 0 ? r0 >= d : r0 <= d]
 *
 * (the two brackets are computed without branches: with s = d >> 63, the
 * first is (r0 ^ s) < s and the second (r0 ^ s) >= (d ^ s), as x ^ s is x or
 * ~x and ~ reverses order).
 *
 * Why it is exact.  Let x = a / d (real) and q = floor(x), r = a - q d (the
 * Python results: r has the sign of d and |r| < |d|).  inv = (1/d)(1 + e1)
 * and t = a inv (1 + e2) with |e1|, |e2| <= u = 2^-53, so
 * |t - x| <= |x| (2u + u^2).  If |d| = 1, inv = +-1 exactly and t = x.
 * Otherwise |x| < 2^52 / 2 = 2^51 and |t - x| < 2^51 * 2^-52 (1 + 2^-53), just
 * over 1/2, far below 1.  Hence |floor(t) - q| <= 1: q0 = q + c with c in
 * {-1, 0, 1}, and r0 = r - c d.  For d > 0 (r in [0, d)): c = -1 gives r0 in
 * [d, 2d) (r0 >= d: add one), c = 1 gives r0 in [-d, 0) (negative: subtract
 * one), c = 0 leaves r0 in [0, d); d < 0 is the mirror image.  The modulo is
 * r0 corrected the same way.  No undefined behaviour: |t| < 2^51 + 1, so
 * (int64)t and (double)q0 are exact and in range; |q0 d| <= |a| + |d| < 2^53,
 * so r0 does not overflow.  floor() itself is not used: gcc turns
 * (int64)floor(x) into lfloor, which does not vectorize.  (A search finds the
 * estimate low for some dividends above 2^50, never high;
 * tests/python/test_strength.py feeds such dividends through the fast path.
 * The other correction is kept as a safety net.)
 *
 * When is |a| < 2^52 known?  bits() bounds |a| < 2^b for: integers of 32 bits
 * or fewer (by type), constants, the loop's own index variables (under the
 * flag: extents below 2^50 and a start within +-2^50), sums, products and
 * negations of bounded values while the bound stays below 2^63, a // d of a
 * bounded a (|a // d| <= |a|), a % d by a constant or by an invariant divisor
 * (|r| < |d| < 2^52 under the flag), and private locals assigned once in the
 * loop from a bounded value (their start value, 0, is bounded too).  Anything
 * else -- an int64 loaded from an array, a float converted to int -- keeps
 * the exact path.  With the flag false (a divisor of 2^60, a zero divisor
 * with checks off, an index range past 2^50) the exact loop runs.
 *
 * A constant divisor 2^k (k >= 1) is left to the emitter, which writes
 * Python's floor division as the arithmetic shift and the modulo as a mask
 * (exact for every dividend, one instruction, in lanes too), except for the
 * loop index divided by 2^k >= 16, whose segments make both free.
 */
#include <string.h>

#include "compiler/compiler.h"
#include "compiler/target.h"

#define FAST_BITS 52   /* |a| < 2^52 and |d| < 2^52: the proof above */
#define RANGE_LOG 50   /* extents and start below 2^50: index below 2^51 */
#define MAX_DIV 32
#define SEG_MIN 16     /* a divisor of the index worth segmenting the loop by */
#define SEG_MAX 2147483647 /* and at most this: the remainder in a segment is an int32 */
#define MAX_SEG 4

typedef struct strength_fn {
    tk_cc *C;
    tk_spec *K;
    tk_ir *loop;
    int scope;          /* the loop's private scope */
    tk_ir *pre;         /* statements that run before the loop */
    tk_ir *cond;        /* what the flag asserts, built up */
    int flag;           /* the flag's local, -1 until a site needs it */
    int range;          /* 1: the range condition is in cond; -1: it cannot be formed */
    int sites;          /* divisions rewritten */
    int *nassign;       /* per local: assignments in the body */
    tk_ir **value;      /* per local: the value of its only assignment */
    int ndiv;
    struct { int key; int inv; } div[MAX_DIV];
    int nlocals0;       /* locals before this pass: nassign and value cover them */
    int segflag;        /* bool local: run the loop in segments (-1: none) */
    tk_ir *segcond;
    int nseg;
    struct { int key; int64_t c; int q; } seg[MAX_SEG]; /* key: a local, -2 a constant c */
} strength_fn;

/* ------------------------------------------------------------- builders */
static int new_local(tk_cc *C, tk_spec *S, const char *name, tk_type ty, int scope) {
    int i = tk_new_local(C, S, name, ty, scope);
    tk_local *l = &S->locals[i];
    l->declared = 1;
    l->assigns = 1;
    l->read = 1;
    return i;
}

static tk_ir *loc(tk_cc *C, tk_spec *S, int l, int line) {
    tk_ir *x = ir_new(C, IR_LOCAL, S->locals[l].ty, line);
    x->local = l;
    return x;
}

static tk_ir *cast(tk_cc *C, tk_ir *x, tk_type ty) {
    if (ty_eq(x->ty, ty)) return x;
    tk_ir *c = ir_new(C, IR_CAST, ty, x->line);
    ir_push(C, c, x);
    return c;
}

static tk_ir *bin(tk_cc *C, int sub, tk_type ty, tk_ir *a, tk_ir *b) {
    int cmp = sub >= B_EQ && sub <= B_GE;
    tk_ir *x = ir_new(C, IR_BIN, cmp ? ty_value(TACK_BOOL) : ty, a->line);
    x->sub = (uint8_t)sub;
    if (cmp) x->aux_ty = ty;
    ir_push(C, x, a);
    ir_push(C, x, b);
    return x;
}

static tk_ir *i64c(tk_cc *C, int64_t v, int line) { return ir_const_i(C, ty_value(TACK_I64), v, line); }

static void mark_reads(const tk_ir *s, char *read) {
    if (s->op == IR_LOCAL && s->local >= 0) read[s->local] = 1;
    for (int i = 0; i < s->n; i++) mark_reads(s->k[i], read);
}

static tk_ir *body_of(tk_ir *loop) { return loop->k[loop->aux]; }

/* e reads a local private to the loop (never one that can be evaluated before it). */
static int uses_private(const tk_spec *K, const tk_ir *e, int scope) {
    if (e->op == IR_LOCAL && e->local >= 0 && K->locals[e->local].scope == scope) return 1;
    for (int i = 0; i < e->n; i++)
        if (uses_private(K, e->k[i], scope)) return 1;
    return 0;
}

/* ------------------------------------------- 1. invariant assignments */
static void licm_block(tk_cc *C, tk_spec *K, tk_ir *loop, tk_ir *b, int scope, char *read, tk_ir *pre) {
    for (int i = 0; i < b->n; i++) {
        tk_ir *s = b->k[i];
        if (s->op == IR_BLOCK) {
            licm_block(C, K, loop, s, scope, read, pre);
            continue;
        }
        int l = s->op == IR_ASSIGN ? s->local : -1;
        if (l >= 0 && K->locals[l].scope == scope && K->locals[l].ty.kind == TY_VALUE && !read[l] &&
            ir_assignments(body_of(loop), l) == 1 && ir_invariant(s->k[0], loop) &&
            !uses_private(K, s->k[0], scope)) {
            ir_push(C, pre, s);
            b->k[i] = ir_new(C, IR_BLOCK, ty_void(), s->line);
            K->locals[l].scope = -1; /* computed by the kernel, read by every chunk */
            continue;
        }
        mark_reads(s, read);
    }
}

static void licm(tk_cc *C, tk_spec *K, tk_ir *loop, tk_ir *pre) {
    char *read = tk_alloc(&C->arena, (size_t)K->nlocals + 1);
    licm_block(C, K, loop, body_of(loop), K->locals[loop->vars[0]].scope, read, pre);
}

/* ------------------------------------------------ 3. invariant divisors */
static int signed_int(tk_type t) {
    return t.kind == TY_VALUE && (t.dt == TACK_I8 || t.dt == TACK_I16 || t.dt == TACK_I32 || t.dt == TACK_I64);
}

/* |c| < 2^result */
static int bits_const(int64_t c) {
    uint64_t m = c < 0 ? (uint64_t)0 - (uint64_t)c : (uint64_t)c;
    int b = 0;
    while (b < 64 && (m >> b)) b++;
    return b;
}

static void add_cond(strength_fn *f, tk_ir *c) { f->cond = ir_and(f->C, f->cond, c); }

/* The loop's index variables are below 2^51 in magnitude under the flag. */
static int range_bounded(strength_fn *f) {
    if (f->range) return f->range > 0;
    tk_ir *loop = f->loop;
    f->range = -1;
    for (int d = 0; d < loop->aux; d++)
        if (!ir_invariant(loop->k[d], loop)) return 0;
    if (loop->off && !ir_invariant(loop->off, loop)) return 0;
    int line = loop->line;
    tk_type i64 = ty_value(TACK_I64);
    for (int d = 0; d < loop->aux; d++)
        add_cond(f, bin(f->C, B_LT, i64, cast(f->C, loop->k[d], i64), i64c(f->C, (int64_t)1 << RANGE_LOG, line)));
    if (loop->off) {
        tk_ir *off = cast(f->C, loop->off, i64);
        add_cond(f, bin(f->C, B_GT, i64, off, i64c(f->C, -((int64_t)1 << RANGE_LOG), line)));
        add_cond(f, bin(f->C, B_LT, i64, off, i64c(f->C, (int64_t)1 << RANGE_LOG, line)));
    }
    f->range = 1;
    return 1;
}

/* A constant divisor the fast path takes: 0 < |c| < 2^52. */
static int const_divisor(const tk_ir *d) {
    const tk_ir *s = ir_strip(d);
    return s->op == IR_CONST && s->c.i != 0 && s->c.i > -((int64_t)1 << FAST_BITS) && s->c.i < ((int64_t)1 << FAST_BITS);
}

/* 1.0 / d for invariant divisor d: a constant for a constant (0 < |d| < 2^52),
 * else a local computed before the loop, made on first use.  NULL: none. */
static tk_ir *divider(strength_fn *f, tk_ir *d) {
    const tk_ir *s = ir_strip(d);
    if (s->op == IR_CONST) return const_divisor(d) ? ir_const_f(f->C, ty_value(TACK_F64), 1.0 / (double)s->c.i, d->line) : NULL;
    int key = s->op == IR_LOCAL ? s->local : -1;
    for (int i = 0; key >= 0 && i < f->ndiv; i++)
        if (f->div[i].key == key) return loc(f->C, f->K, f->div[i].inv, d->line);
    if (f->ndiv == MAX_DIV) return NULL;
    tk_cc *C = f->C;
    int line = d->line;
    tk_type i64 = ty_value(TACK_I64), f64 = ty_value(TACK_F64);
    tk_ir *d64 = cast(C, d, i64);
    tk_ir *fast = bin(C, B_NE, i64, d64, i64c(C, 0, line));
    fast = ir_and(C, fast, bin(C, B_GT, i64, d64, i64c(C, -((int64_t)1 << FAST_BITS), line)));
    fast = ir_and(C, fast, bin(C, B_LT, i64, d64, i64c(C, (int64_t)1 << FAST_BITS, line)));
    int inv = new_local(C, f->K, "_inv", f64, -1);
    tk_ir *sel = ir_new(C, IR_SELECT, f64, line);
    ir_push(C, sel, fast);
    ir_push(C, sel, bin(C, B_DIV, f64, ir_const_f(C, f64, 1.0, line), cast(C, d64, f64)));
    ir_push(C, sel, ir_const_f(C, f64, 0.0, line));
    ir_push(C, f->pre, ir_assign(C, inv, sel));
    add_cond(f, fast);
    f->div[f->ndiv].key = key;
    f->div[f->ndiv].inv = inv;
    f->ndiv++;
    return loc(C, f->K, inv, line);
}

static int is_var(const tk_ir *loop, int l) {
    for (int d = 0; d < loop->aux; d++)
        if (loop->vars[d] == l) return 1;
    return 0;
}

static int max2(int a, int b) { return a > b ? a : b; }

/* |e| < 2^result whenever the loop's flag holds (64: unknown). */
static int bits(strength_fn *f, const tk_ir *e, int depth) {
    if (e->ty.kind != TY_VALUE || depth > 12) return 64;
    int dt = e->ty.dt, tb;
    switch (dt) {
    case TACK_BOOL: tb = 1; break;
    case TACK_I8: case TACK_U8: tb = 8; break;
    case TACK_I16: case TACK_U16: tb = 16; break;
    case TACK_I32: case TACK_U32: tb = 32; break;
    case TACK_I64: tb = 64; break;
    default: return 64;
    }
    int r = 64;
    switch (e->op) {
    case IR_CONST: r = bits_const(e->c.i); break;
    case IR_CAST: {
        int from = e->k[0]->ty.dt;
        if (e->k[0]->ty.kind == TY_VALUE && dt_kind((tack_dtype)from) != TACK_KIND_FLOAT && from != TACK_U64)
            r = bits(f, e->k[0], depth + 1);
        break;
    }
    case IR_LOCAL: {
        int l = e->local;
        if (is_var(f->loop, l)) r = range_bounded(f) ? RANGE_LOG + 1 : 64;
        else if (l < f->nlocals0 && f->K->locals[l].scope == f->scope && f->nassign[l] == 1 && f->value[l])
            r = bits(f, f->value[l], depth + 1);
        break;
    }
    case IR_UN:
        if (e->sub == U_NEG || e->sub == U_ABS) r = bits(f, e->k[0], depth + 1);
        break;
    case IR_SELECT: r = max2(bits(f, e->k[1], depth + 1), bits(f, e->k[2], depth + 1)); break;
    case IR_MATH:
        if (e->sub == M_FDIVQ) r = bits(f, e->k[0], depth + 1);
        else if (e->sub == M_MODQ) r = FAST_BITS;
        break;
    case IR_BIN: {
        if (!signed_int(e->ty)) break;
        const tk_ir *a = e->k[0], *b = e->k[1];
        switch (e->sub) {
        case B_ADD: case B_SUB: r = max2(bits(f, a, depth + 1), bits(f, b, depth + 1)) + 1; break;
        case B_MUL: r = bits(f, a, depth + 1) + bits(f, b, depth + 1); break;
        case B_MIN: case B_MAX: r = max2(bits(f, a, depth + 1), bits(f, b, depth + 1)); break;
        case B_FLOORDIV: r = bits(f, a, depth + 1); break;
        case B_MOD:
            if (ir_strip(b)->op == IR_CONST) r = bits(f, b, depth + 1);
            else if (ir_invariant(b, f->loop) && !uses_private(f->K, b, f->scope) && divider(f, (tk_ir *)b))
                r = FAST_BITS;
            break;
        }
        break;
    }
    default: break;
    }
    if (r >= 63) r = 64; /* a sum or product that might have wrapped */
    return r < tb ? r : tb;
}

static void count_body(strength_fn *f, tk_ir *s) {
    if ((s->op == IR_ASSIGN || s->op == IR_SETCOMP || s->op == IR_FOR) && s->local >= 0) {
        f->nassign[s->local]++;
        f->value[s->local] = s->op == IR_ASSIGN ? s->k[0] : NULL;
    }
    for (int i = 0; i < s->n; i++) count_body(f, s->k[i]);
}

/* i // d and i % d for the index i of a one-dimensional loop and d >= SEG_MIN:
 * the chunk runs in segments over which i // d is one value, q, computed
 * exactly at each segment's start; in the segment, i // d is q and i % d is
 * i - q * d (emit_cpu.c's third version of the loop).  Returns q's local or -1. */
static int segment(strength_fn *f, tk_ir *a, tk_ir *d) {
    const tk_ir *v = ir_strip(a), *s = ir_strip(d);
    if (f->loop->aux != 1 || v->op != IR_LOCAL || v->local != f->loop->vars[0] || !range_bounded(f)) return -1;
    if (a->ty.dt != TACK_I64 || d->ty.dt != TACK_I64) return -1;
    if (s->op == IR_CONST && (s->c.i < SEG_MIN || s->c.i > SEG_MAX)) return -1; /* too short, or too long for int32 */
    int key = s->op == IR_LOCAL ? s->local : s->op == IR_CONST ? -2 : -1;
    int64_t c = s->op == IR_CONST ? s->c.i : 0;
    for (int i = 0; key != -1 && i < f->nseg; i++)
        if (f->seg[i].key == key && f->seg[i].c == c) return f->seg[i].q;
    if (f->nseg == MAX_SEG) return -1;
    tk_cc *C = f->C;
    tk_type i64 = ty_value(TACK_I64);
    if (s->op != IR_CONST) {
        f->segcond = ir_and(C, f->segcond, bin(C, B_GE, i64, cast(C, d, i64), i64c(C, SEG_MIN, d->line)));
        f->segcond = ir_and(C, f->segcond, bin(C, B_LE, i64, cast(C, d, i64), i64c(C, SEG_MAX, d->line)));
    }
    if (f->segflag < 0) f->segflag = new_local(C, f->K, "_seg", ty_value(TACK_BOOL), -1);
    int q = new_local(C, f->K, "_q", i64, f->scope);
    f->seg[f->nseg].key = key;
    f->seg[f->nseg].c = c;
    f->seg[f->nseg].q = q;
    f->nseg++;
    return q;
}

static tk_ir *fx(strength_fn *f, tk_ir *x) {
    for (int i = 0; i < x->n; i++) x->k[i] = fx(f, x->k[i]);
    if (x->op != IR_BIN || (x->sub != B_FLOORDIV && x->sub != B_MOD) || !signed_int(x->ty)) return x;
    tk_ir *a = x->k[0], *d = x->k[1];
    if (!ir_invariant(d, f->loop) || uses_private(f->K, d, f->scope)) return x;
    if (ir_strip(d)->op == IR_CONST && !const_divisor(d)) return x;
    if (d->op == IR_CONST && d->c.i > 1 && !(d->c.i & (d->c.i - 1)) &&
        !(ir_strip(a)->op == IR_LOCAL && ir_strip(a)->local == f->loop->vars[0] && d->c.i >= SEG_MIN))
        return x; /* by 2^k: a shift or a mask (emit_expr.c), unless the index's segments take it */
    if (bits(f, a, 0) > FAST_BITS) return x;
    tk_ir *inv = divider(f, d);
    if (!inv) return x;
    tk_cc *C = f->C;
    if (f->flag < 0) f->flag = new_local(C, f->K, "_fast", ty_value(TACK_BOOL), -1);
    tk_type i64 = ty_value(TACK_I64);
    tk_ir *m = ir_new(C, IR_MATH, i64, x->line);
    m->sub = x->sub == B_FLOORDIV ? M_FDIVQ : M_MODQ;
    m->aux_ty = i64;
    ir_push(C, m, cast(C, a, i64));
    ir_push(C, m, cast(C, d, i64));
    ir_push(C, m, inv);
    ir_push(C, m, loc(C, f->K, f->flag, x->line));
    int q = segment(f, a, d);
    if (q >= 0) {
        ir_push(C, m, loc(C, f->K, q, x->line));
        ir_push(C, m, loc(C, f->K, f->segflag, x->line));
    }
    f->sites++;
    return cast(C, m, x->ty);
}

static void fastdiv(tk_cc *C, tk_spec *K, tk_ir *loop, tk_ir *pre) {
    strength_fn f;
    memset(&f, 0, sizeof f);
    f.C = C;
    f.K = K;
    f.loop = loop;
    f.scope = K->locals[loop->vars[0]].scope;
    f.pre = ir_new(C, IR_BLOCK, ty_void(), loop->line);
    f.flag = -1;
    f.segflag = -1;
    f.nlocals0 = K->nlocals;
    f.nassign = tk_alloc(&C->arena, sizeof(int) * ((size_t)K->nlocals + 1));
    f.value = tk_alloc(&C->arena, sizeof(tk_ir *) * ((size_t)K->nlocals + 1));
    count_body(&f, body_of(loop));
    tk_ir *body = body_of(loop);
    for (int i = 0; i < body->n; i++) body->k[i] = fx(&f, body->k[i]);
    if (!f.sites) return; /* the dividers made for bits() alone are dropped */
    for (int i = 0; i < f.pre->n; i++) ir_push(C, pre, f.pre->k[i]);
    ir_push(C, pre, ir_assign(C, f.flag, f.cond ? f.cond : ir_const_i(C, ty_value(TACK_BOOL), 1, loop->line)));
    if (f.segflag >= 0) {
        tk_ir *fast = loc(C, K, f.flag, loop->line);
        ir_push(C, pre, ir_assign(C, f.segflag, f.segcond ? ir_and(C, fast, f.segcond) : fast));
    }
}

/* ----------------------------------------------------------- the walk */
/* Run `pass` on every parallel loop under block b; what it puts in `pre`
 * goes right before the loop (compiler.h; periodic.c walks with it too). */
void tk_each_pfor(tk_cc *C, tk_spec *K, tk_ir *b, tk_loop_pass pass) {
    tk_ir *nb = NULL;
    for (int i = 0; i < b->n; i++) {
        tk_ir *s = b->k[i];
        switch (s->op) {
        case IR_BLOCK: tk_each_pfor(C, K, s, pass); break;
        case IR_IF: tk_each_pfor(C, K, s->k[1], pass); tk_each_pfor(C, K, s->k[2], pass); break;
        case IR_WHILE: tk_each_pfor(C, K, s->k[1], pass); break;
        case IR_FOR: tk_each_pfor(C, K, s->k[3], pass); break;
        case IR_PFOR: {
            if (ir_is_blocks(s)) break; /* nothing moves across a block's barriers */
            tk_ir *pre = ir_new(C, IR_BLOCK, ty_void(), s->line);
            pass(C, K, s, pre);
            if (pre->n && !nb) {
                nb = ir_new(C, IR_BLOCK, ty_void(), b->line);
                for (int j = 0; j < i; j++) ir_push(C, nb, b->k[j]);
            }
            for (int j = 0; j < pre->n; j++) ir_push(C, nb, pre->k[j]);
            break;
        }
        default: break;
        }
        if (nb) ir_push(C, nb, s);
    }
    if (nb) {
        b->k = nb->k;
        b->n = nb->n;
        b->cap = nb->cap;
    }
}

void tk_strength(tk_cc *C) {
    tk_spec *K = C->nspecs ? C->specs[0] : NULL;
    if (K && K->body) tk_each_pfor(C, K, K->body, licm);
    if (C->opts.checks) tk_hoist_invariant_checks(C, CK_ZERODIV);
    if (K && K->body && C->target->loops == TK_LOOPS_CHUNKED) tk_each_pfor(C, K, K->body, fastdiv);
}
