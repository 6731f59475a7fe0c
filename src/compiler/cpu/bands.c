/*
 * bands.c -- the rows of a 3-D parallel loop in bands, so that a stencil's
 * neighbouring layers come from the second-level cache.
 *
 * A chunk of `for z, y, x in tack.ndrange(nz, ny, nx)` runs its rows (z, y)
 * in the order they are numbered, layer by layer, each row along x in SIMD
 * lanes (emit_cpu.c, ndrange_rows).  A 3-D stencil reads its source at z - 1,
 * z and z + 1:
 *
 *     dst[z, y, x] = c0 * src[z, y, x] + c1 * src[z - 1, y, x] + c2 * src[z + 1, y, x] + ...
 *
 * so each layer of src is read three times, once as each of them, a whole
 * layer of work apart.  When a layer of every array the loop touches is
 * larger than the second-level cache (hotspot3D at 512^2 x 8: three f32
 * arrays, 3 MiB a layer, on a core with 2 MiB), the second and third reads
 * of a row come from the last-level cache or memory.  Numba's and C's loops,
 * written the same way, pay the same.
 *
 * This pass numbers the rows band by band instead: a band is bh consecutive
 * values of y, and the rows run as
 *
 *     for q in range(ny // bh):          (the bands)
 *         for z in range(nz):            (every layer of the band)
 *             for t in range(bh):        (the band's rows in the layer)
 *                 y = q * bh + t
 *                 the row (z, y), x from 0 to nx
 *
 * so between two reads of a row of src the loop touches one band of one
 * layer per array (bh rows), which the launch sizes to stay in the second
 * level: the band holds at most TK_BAND_BYTES over all arrays.  The chunk
 * splits this numbering as it splits any other (emit_cpu.c: first and last
 * row of the chunk by division, the rows between by nested loops), so the
 * pool's shares and steals are unchanged; with two threads each takes its
 * half of the bands through every layer.
 *
 * The order of a parallel loop's iterations is free (the race analysis
 * proved them independent: the pass leaves a loop it watches alone), but
 * three things can see it, and the pass takes only loops where none can:
 *
 *   - a check that fails: which rows ran before the IndexError decides what
 *     the arrays hold after it, and docs/language.md promises the same
 *     writes as the loop as written.  So the body must have no check left:
 *     none at all, or none once periodic.c's flag holds (its clamps' and
 *     remainders' checks go under the flag, and the launch then bands only
 *     when the flag is true);
 *   - a per-chunk sum or histogram (privatize.c), an atomic or a print: a
 *     float sum's order is its bits, a print's order is its output;
 *   - a call, which may do any of these.
 *
 * It takes a loop only where banding can pay: a body that reads some array
 * at a first index computed from z other than z itself (a neighbouring
 * layer), and at the launch, layers of at least TK_BAND_LAYER bytes over the
 * arrays, at least 3 layers, and a band height from 4 rows up that divides ny
 * (the bands are then all whole, and the numbering a plain product).  Where
 * any of that fails the launch sets bh = ny, one band: the numbering is the
 * plain one, row for row.
 *
 * Measured (one thread, an Intel Xeon with 2 MiB of level 2 a core, load
 * 0.7-1.8): hotspot3D's step at 512^2 x 8 (3 MiB a layer), the same loop
 * written in bands by hand under Numba, 1.11-1.26 -> 0.94-1.08 ms for band
 * heights 16 to 128, and this pass 1.26-1.32 -> 0.91-0.93 ms; at 128^2 x 8,
 * whose layers fit, bands were 0.95x.  A 7-point stencil in f64 (two arrays):
 * 320^3 (1.6 MiB a layer) 48.4 -> 37.9 ms, 256^3 (1 MiB) 3-4% slower banded,
 * so TK_BAND_LAYER is 1.5 MiB: three layers of what a stencil reads must
 * outgrow the second level before bands pay.  A core with less of it would
 * gain from a lower threshold; the launch has no cache size to ask.
 */
#include "compiler/compiler.h"
#include "compiler/emit/emit.h"
#include "runtime/config.h"

/* Layers smaller than this (bytes over all the kernel's arrays) stay unbanded: three fit in the cache. */
#define TK_BAND_LAYER (3 << 19)
/* A band's rows hold at most this many bytes over all the kernel's arrays. */
#define TK_BAND_BYTES (192 << 10)

/* Whether expression x reads a local marked in dep. */
static int reads(const tk_ir *x, const char *dep) {
    if (x->op == IR_LOCAL && dep[x->local]) return 1;
    for (int i = 0; i < x->n; i++)
        if (reads(x->k[i], dep)) return 1;
    return 0;
}

/* x without the casts and negative-index wraps around it. */
static const tk_ir *bare(const tk_ir *x) {
    while ((x->op == IR_CAST || x->op == IR_WRAP) && x->n == 1) x = x->k[0];
    return x;
}

/* Walk statement or expression x of the body: 0 where it holds something whose order can be
 * seen; marks in dep the locals computed from z, and sets *layer where an array is read at a
 * first index computed from z that is not z. */
static int walk(const tk_ir *x, char *dep, int z, int *layer) {
    switch (x->op) {
    case IR_CHECK:
    case IR_ATOMIC:
    case IR_PRINT:
    case IR_CALL:
    case IR_RETURN:
    case IR_BARRIER: return 0;
    case IR_LOAD: {
        const tk_ir *i0 = bare(x->k[0]);
        if (x->n > 1 && !(i0->op == IR_LOCAL && i0->local == z) && reads(i0, dep)) *layer = 1;
        break;
    }
    default: break;
    }
    for (int i = 0; i < x->n; i++)
        if (!walk(x->k[i], dep, z, layer)) return 0;
    if (x->op == IR_ASSIGN && x->n == 1 && reads(x->k[0], dep)) dep[x->local] = 1;
    return 1;
}

int tk_cpu_bands(tk_emitter *e, tk_ir *s) {
    if (!e->C->opts.optimize || s->op != IR_PFOR || s->aux != 3 || ir_is_blocks(s) || s->off || s->red || s->hist ||
        em_race_loop(e, s) >= 0 || !tk_config_int(TK_CFG_BANDS))
        return 0;
    char *dep = tk_alloc(&e->C->arena, (size_t)e->S->nlocals + 1); /* zeroed */
    if (!dep) return 0;
    dep[s->vars[0]] = 1;
    int layer = 0, ok;
    if (s->per) { /* its checks as the periodic version writes it: the launch bands under the flag only */
        tk_periodic_undo u;
        tk_periodic_hide(e->C, s, &u);
        ok = walk(s->k[s->aux], dep, s->vars[0], &layer);
        tk_periodic_show(&u);
    } else {
        ok = walk(s->k[s->aux], dep, s->vars[0], &layer);
    }
    return ok && layer;
}

void tk_cpu_bands_launch(tk_emitter *e, tk_ir *s) {
    I(e); P(e, "F_.bq = 1; F_.bh = F_.pn[1];\n");
    int64_t bytes = 0; /* a point's bytes over the kernel's arrays */
    for (int p = 0; p < e->S->nparams; p++)
        if (e->S->ptypes[p].kind == TY_ARRAY) bytes += (dt_bits((tack_dtype)e->S->ptypes[p].dt) + 7) / 8;
    if (bytes < 1) bytes = 1;
    I(e); P(e, "if (");
    if (s->per) { ex(e, s->per->k[0]); P(e, " && "); }
    P(e, "F_.pn[0] >= 3 && F_.pn[1] >= 8 && F_.pn[2] > 0 && F_.pn[1] >= %lld / F_.pn[2]) { /* tk: rows in bands (bands.c) */\n",
      (long long)(TK_BAND_LAYER / bytes));
    e->ind++;
    I(e); P(e, "int64_t b_ = %lld / F_.pn[2];\n", (long long)(TK_BAND_BYTES / bytes));
    I(e); P(e, "if (b_ > F_.pn[1] / 2) b_ = F_.pn[1] / 2;\n");
    I(e); P(e, "while (b_ >= 4 && F_.pn[1] %% b_) b_--;\n");
    I(e); P(e, "if (b_ >= 4) { F_.bh = b_; F_.bq = F_.pn[1] / b_; }\n");
    e->ind--;
    I(e); P(e, "}\n");
}

int tk_cpu_bands_rows(tk_emitter *e, tk_ir *s) {
    /* row o of the chunk is (q, z, t): o = (q * nz + z) * bh + t, y = q * bh + t */
    I(e); P(e, "const int64_t bh_ = F->bh; /* rows in bands (bands.c): one band of ny rows when not banded */\n");
    I(e); P(e, "int64_t r_;\n");
    for (int end = 0; end < 2; end++) {
        char c = end ? 'e' : 'c';
        I(e); P(e, "r_ = %s;\n", end ? "o1_" : "o0_");
        I(e); P(e, "const int64_t %c2_ = r_ %% bh_; r_ /= bh_;\n", c);
        I(e); P(e, "const int64_t %c1_ = r_ %% F->pn[0]; r_ /= F->pn[0];\n", c);
        I(e); P(e, "const int64_t %c0_ = r_;\n", c);
    }
    I(e); P(e, "for (int64_t x0_ = c0_; x0_ <= e0_; x0_++) {\n");
    e->ind++;
    I(e); P(e, "const int f1_ = x0_ == c0_, g1_ = x0_ == e0_;\n");
    I(e); P(e, "for (int64_t x1_ = f1_ ? c1_ : 0; x1_ <= (g1_ ? e1_ : F->pn[0] - 1); x1_++) {\n");
    e->ind++;
    I(e); P(e, "const int f2_ = f1_ && x1_ == c1_, g2_ = g1_ && x1_ == e1_;\n");
    I(e); P(e, "for (int64_t x2_ = f2_ ? c2_ : 0; x2_ <= (g2_ ? e2_ : bh_ - 1); x2_++) {\n");
    e->ind++;
    I(e); P(e, "const int f3_ = f2_ && x2_ == c2_, g3_ = g2_ && x2_ == e2_;\n");
    I(e); em_local_name(e, s->vars[0]); P(e, " = x1_;\n");
    I(e); em_local_name(e, s->vars[1]); P(e, " = x0_ * bh_ + x2_;\n");
    I(e); P(e, "const int64_t jb_ = f3_ ? j0_ : 0, je_ = g3_ ? j1_ : inner_;\n");
    return 3;
}
