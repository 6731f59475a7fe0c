/*
 * race_watch.c -- the compiler's half of the run-time race detector
 * (check_races): which parallel loops and accesses it watches, the code that
 * watches them, and the tables the launch words its error from.
 *
 * The race check (depend.c) proves most parallel loops race-free or surely
 * racy at compile time.  What it cannot decide -- an index that comes from
 * data, `out[idx[i]] = x[i]` -- it warns of, and a RaceWarning says only
 * "maybe".  A kernel compiled with check_races=True (tack.kernel's option,
 * or tack.set_check_races / TACK_CHECK_RACES=1 for the kernels defined after)
 * answers the question for the data it runs on: depend.c hands each loop it
 * warned of -- and each loop tack.independent vouches for, which it does not
 * judge -- to dp_watch, which records the loop (its variables' names, and
 * how each variable's value follows from the loop's index) and its accesses
 * that can take part in a race: every load, store and atomic update of an
 * array the loop writes, in the loop's own body and in the @tack.func
 * functions it calls.  Loads of arrays the loop only reads cannot race and
 * are left alone.
 *
 * A function is one C function for all its callers, and its array
 * parameters are whichever arrays a call passes, so its accesses cannot be
 * numbered by the kernel's arrays at compile time.  Each function a watched
 * loop calls with an array (and each those call so) gets a second C
 * function, its watched copy (tk_w<spec>, written after the plain one),
 * which takes the session, the calling iteration's tag and, per array
 * parameter, the kernel's array the caller passed (-1 for a local array,
 * the iteration's own): the loop's calls, and the copies' calls, go to the
 * copies; every other call, and every kernel without check_races, to the
 * plain function as before.  A function's access is one site for every loop
 * and call that reaches it, named by the function's own text ("a[k] in
 * put()"), and it records itself in the shadow of the array its caller
 * named -- a shadow the loop has only for an array it writes.  depend.c
 * follows calls at most MAXCALL deep; a loop that calls deeper cannot have
 * all its accesses watched and is refused (a CompileError), not half
 * watched.
 *
 * A kernel with a watched loop is compiled without the optimizing passes:
 * each access stays one load or store, as written, with its own record, and
 * the loop runs as plain C (no SIMD lanes, no private sums).  Emission then
 * (emit_expr.c, emit_cpu.c) wraps the element offset of each watched access in
 * tk_rc_acc(...) -- inline code of the prelude below that records the access
 * in the array's shadow memory with a few atomics and returns the offset
 * unchanged -- gives each iteration its tag (its flat index + 1, under the
 * access's site number), tests the launch's failed flag before each
 * iteration, and has the entry ask the runtime for fresh shadows before the
 * loop starts.  The session reaches the generated code through one more
 * argument slot after the arguments (and their strides), so a kernel
 * without check_races is byte for byte the code it always was: no prelude,
 * no slot, no cost.  src/runtime/races.c has the shadow's design and words
 * the error; docs/design/decisions.md has the why and the cost.
 */
#include <stddef.h>
#include <string.h>

#include "compiler/analysis/depend.h"
#include "compiler/emit/emit.h"
#include "runtime/races.h"

/* ---------------------------------------------------------------- marking */
/* An expression the entry can evaluate before the loop: a constant, a shape,
 * a kernel-scope local, and casts of them. */
static int entry_value(const tk_spec *K, const tk_ir *e) {
    while (e && e->op == IR_CAST) e = e->k[0];
    if (!e) return 0;
    if (e->op == IR_CONST || e->op == IR_SHAPE) return 1;
    return e->op == IR_LOCAL && K->locals[e->local].scope == -1;
}

/* Axis d's name, and its value from its index: the loop's own variable
 * (plus off for range(lo, hi)), or the variable a stepped range or an
 * ndrange axis with bounds sets to lo + index * step at the top of the body
 * (lower_loop.c). */
static void axis(dpass *P, tk_rcloop *L, int d) {
    const tk_ir *pf = P->pf, *body = pf->k[pf->aux];
    int k = pf->vars[d];
    L->vars[d] = P->K->locals[k].name;
    if (pf->aux == 1 && pf->off && entry_value(P->K, pf->off)) L->lo[d] = pf->off;
    for (int s = 0; s < body->n && body->k[s]->op == IR_ASSIGN; s++) {
        const tk_ir *a = body->k[s], *v = a->k[0];
        while (v->op == IR_CAST) v = v->k[0];
        if (v->op != IR_BIN || v->sub != B_ADD || v->k[1]->op != IR_BIN || v->k[1]->sub != B_MUL) continue;
        const tk_ir *kk = v->k[1]->k[0];
        while (kk->op == IR_CAST) kk = kk->k[0];
        if (kk->op != IR_LOCAL || kk->local != k) continue;
        if (!entry_value(P->K, v->k[0]) || !entry_value(P->K, v->k[1]->k[1])) continue;
        L->vars[d] = P->K->locals[a->local].name;
        L->lo[d] = v->k[0];
        L->step[d] = v->k[1]->k[1];
        break;
    }
    if (!L->vars[d] || L->vars[d][0] == '_') L->vars[d] = "index"; /* a temporary: the loop's count */
}

static void *grow(tk_cc *C, void *old, int n, int *cap, size_t size) {
    if (n < *cap) return old;
    int c = *cap ? 2 * *cap : 8;
    void *g = tk_alloc(&C->arena, size * (size_t)c);
    if (n) memcpy(g, old, size * (size_t)n);
    *cap = c;
    return g;
}

static int call_has_array(const tk_ir *x) {
    for (int i = 0; i < x->n; i++)
        if (x->k[i]->op == IR_ARRAY) return 1;
    return 0;
}

/* The @tack.func specializations that x calls with an array of the kernel's
 * (and those they call so, through their bodies): each gets a watched copy.
 * depend.c follows exactly these calls (walk_call), so every callee access
 * it collected for the loop is in a function marked here. */
static void mark_specs(tk_cc *C, const tk_ir *x) {
    if (!x) return;
    if (x->op == IR_CALL && x->aux > 0 && x->aux < C->nspecs && !C->rcspec[x->aux] && call_has_array(x) &&
        C->specs[x->aux]->body) {
        C->rcspec[x->aux] = 1;
        mark_specs(C, C->specs[x->aux]->body);
    }
    for (int i = 0; i < x->n; i++) mark_specs(C, x->k[i]);
}

static int site_kind(const dacc *a) { return a->kind == ACC_LOAD ? 0 : a->kind == ACC_STORE ? 1 : 2; }

static tk_rcsite *new_site(tk_cc *C, const dacc *a) {
    if (C->nrcsites >= (1 << (64 - TK_RACE_ITER_BITS)) - 1)
        tk_error(C, a->func, a->line, 0, "check_races: the kernel has more array accesses to watch than the race "
                                         "detector numbers (%d); check a smaller kernel", C->nrcsites);
    C->rcsites = grow(C, C->rcsites, C->nrcsites, &C->caprcsites, sizeof(tk_rcsite));
    tk_rcsite *s = &C->rcsites[C->nrcsites++];
    memset(s, 0, sizeof *s);
    s->kind = site_kind(a);
    s->func = a->func;
    s->line = a->line;
    return s;
}

void dp_watch(dpass *P) {
    tk_cc *C = P->C;
    if (P->deep) /* a callee's accesses beyond MAXCALL were not collected: they could not be watched */
        tk_error(C, P->K->func, P->deep_line, 0,
                 "check_races: the race detector follows @tack.func calls nested at most %d deep, and the parallel "
                 "loop at line %d calls deeper (line %d); check the kernel with fewer nested calls", MAXCALL,
                 P->pf->line, P->deep_line);
    C->rcloops = grow(C, C->rcloops, C->nrcloops, &C->caprcloops, sizeof(tk_rcloop));
    int loop = C->nrcloops++;
    tk_rcloop *L = &C->rcloops[loop];
    memset(L, 0, sizeof *L);
    L->pf = P->pf;
    L->func = P->K->func;
    int np = P->K->nparams > 0 ? P->K->nparams : 1;
    L->width = tk_alloc(&C->arena, (size_t)np);
    memset(L->width, 0, (size_t)np);
    for (int d = 0; d < P->pf->aux && d < TACK_MAX_NDIM; d++) axis(P, L, d);
    if (!C->rcspec) {
        C->rcspec = tk_alloc(&C->arena, (size_t)C->nspecs + 1);
        memset(C->rcspec, 0, (size_t)C->nspecs + 1);
    }
    mark_specs(C, P->pf->k[P->pf->aux]);
    for (int i = 0; i < P->nacc; i++) {
        const dacc *a = &P->acc[i];
        if (!a->at || a->kind == ACC_READ || a->param < 0 || a->param >= P->K->nparams) continue;
        int kind = site_kind(a);
        if (L->width[a->param] < (kind == 2 ? 5 : 3)) L->width[a->param] = (signed char)(kind == 2 ? 5 : 3);
        if (a->node) { /* in the loop's own body: a site of this loop, on the kernel's array */
            tk_rcsite *s = new_site(C, a);
            s->node = a->node;
            s->loop = loop;
            s->param = a->param;
            s->text = a->text;
            continue;
        }
        /* in a function: one site for every loop and call that reaches it; its
         * watched copy learns the caller's array at run time */
        int seen = 0;
        for (int k = 0; k < C->nrcsites && !seen; k++)
            seen = C->rcsites[k].loop < 0 && C->rcsites[k].node == a->at;
        if (seen) continue;
        tk_rcsite *s = new_site(C, a);
        s->node = a->at;
        s->loop = -1;
        s->spec = a->si;
        s->param = a->at->param;
        s->text = a->ftext ? a->ftext : a->text;
    }
}

/* ---------------------------------------------------------------- tables */
int tk_race_tables(tk_cc *C, tack_program *p) {
    int fail = 0, np = C->nargs > 0 ? C->nargs : 1;
    p->rloops = tack_calloc((size_t)C->nrcloops, sizeof(tk_rloop));
    p->rsites = tack_calloc((size_t)C->nrcsites + 1, sizeof(tk_rsite));
    if (!p->rloops || !p->rsites) return 1;
    p->nrloops = C->nrcloops;
    p->nrsites = C->nrcsites;
    for (int i = 0; i < C->nrcloops; i++) {
        const tk_rcloop *L = &C->rcloops[i];
        tk_rloop *R = &p->rloops[i];
        R->line = L->pf->line;
        R->nd = L->pf->aux < TACK_MAX_NDIM ? L->pf->aux : TACK_MAX_NDIM;
        R->file = tk_program_strdup(C->m->funcs[L->func].filename, &fail);
        for (int d = 0; d < R->nd; d++) R->vars[d] = tk_program_strdup(L->vars[d], &fail);
        R->width = tack_calloc((size_t)np, 1);
        if (!R->width) fail = 1;
        else memcpy(R->width, L->width, (size_t)(C->nargs > 0 ? C->nargs : 0));
    }
    for (int i = 0; i < C->nrcsites; i++) {
        const tk_rcsite *s = &C->rcsites[i];
        tk_rsite *R = &p->rsites[i];
        R->param = s->loop < 0 ? -1 : s->param; /* a function's: the caller's array, known as it runs */
        R->kind = s->kind;
        R->line = s->line;
        R->file = tk_program_strdup(C->m->funcs[s->func].filename, &fail);
        /* a function's access: "a[k] in put()", as the function wrote it */
        const char *text = s->loop < 0 ? tk_fmt(&C->arena, "%s in %s()", s->text ? s->text : "?",
                                                C->m->funcs[s->func].name)
                                       : s->text;
        R->text = tk_program_strdup(text, &fail);
    }
    return fail;
}

/* --------------------------------------------------------------- prelude */
/* The shadow's record of one access, inline (runtime/races.c has the
 * protocol): a write claims word 0, then looks at the other words; a read
 * (words 1-2) or an atomic update (3-4) claims a word of its kind, then
 * looks at word 0 and the other kind's.  A conflict calls into libtack
 * once, out of line, and fails the launch; the offset comes back as it was. */
static const char PRELUDE_RACE[] =
    "/* check_races: the run-time race detector (compiler/race_watch.c, runtime/races.c) */\n"
    "typedef struct tk_rcs { uint64_t *w; int64_t base, len, width; } tk_rcs;\n"
    "typedef struct tk_rc {\n"
    "    int (*begin)(struct tk_rc *rc, int loop, const int64_t *pn, const int64_t *lo, const int64_t *step);\n"
    "    void (*conflict)(struct tk_rc *rc, int param, int64_t at, uint64_t mine, uint64_t theirs, int how);\n"
    "    tk_rcs *s;\n"
    "} tk_rc;\n"
    "#define TK_RC_IT(t) ((t) & ((1ull << TK_RC_BITS) - 1))\n"
    "#define TK_RC_SC __ATOMIC_SEQ_CST\n"
    "__attribute__((noinline, cold)) static void tk_rc_hit(tk_rc *rc, tk_ctx *ctx, const tk_abi *abi, int p,\n"
    "                                                    int64_t at, uint64_t me, uint64_t o, int how) {\n"
    "    rc->conflict(rc, p, at, me, o, how);\n"
    "    abi->fail(ctx, TK_RC_SITE, 0, 0);\n"
    "}\n"
    "static inline int64_t tk_rc_acc(tk_rc *rc, tk_ctx *ctx, const tk_abi *abi, int p, int64_t at, uint64_t me, int kind) {\n"
    "    const tk_rcs *s = &rc->s[p];\n"
    "    const uint64_t k = (uint64_t)at + (uint64_t)s->base, it = TK_RC_IT(me);\n"
    "    if (k >= (uint64_t)s->len) return at; /* outside the array (checks=False): nothing to record */\n"
    "    uint64_t *c = s->w + k * (uint64_t)s->width, o = 0;\n"
    "    if (kind == 1) {\n"
    "        if (!__atomic_compare_exchange_n(c, &o, me, 0, TK_RC_SC, TK_RC_SC) && TK_RC_IT(o) != it) {\n"
    "            tk_rc_hit(rc, ctx, abi, p, at, me, o, 5);\n"
    "            return at;\n"
    "        }\n"
    "        for (int64_t j = 1; j < s->width; j++) {\n"
    "            o = __atomic_load_n(c + j, TK_RC_SC);\n"
    "            if (o && TK_RC_IT(o) != it) { tk_rc_hit(rc, ctx, abi, p, at, me, o, j < 3 ? 4 : 6); return at; }\n"
    "        }\n"
    "        return at;\n"
    "    }\n"
    "    const int64_t f = kind == 0 ? 1 : 3, g = kind == 0 ? 3 : 1;\n"
    "    for (int64_t j = f; j < f + 2; j++) {\n"
    "        o = __atomic_load_n(c + j, TK_RC_SC);\n"
    "        if (TK_RC_IT(o) == it) break;\n"
    "        if (!o && (__atomic_compare_exchange_n(c + j, &o, me, 0, TK_RC_SC, TK_RC_SC) || TK_RC_IT(o) == it)) break;\n"
    "    }\n"
    "    o = __atomic_load_n(c, TK_RC_SC);\n"
    "    if (o && TK_RC_IT(o) != it) { tk_rc_hit(rc, ctx, abi, p, at, me, o, kind * 4 + 1); return at; }\n"
    "    for (int64_t j = g; j < g + 2 && j < s->width; j++) {\n"
    "        o = __atomic_load_n(c + j, TK_RC_SC);\n"
    "        if (o && TK_RC_IT(o) != it) { tk_rc_hit(rc, ctx, abi, p, at, me, o, kind * 4 + (kind == 0 ? 2 : 0)); return at; }\n"
    "    }\n"
    "    return at;\n"
    "}\n"
    "/* an access in a @tack.func's watched copy: the caller's array p (-1: a local array, its own) */\n"
    "static inline int64_t tk_rc_facc(tk_rc *rc, tk_ctx *ctx, const tk_abi *abi, int p, int64_t at, uint64_t me, int kind) {\n"
    "    return p < 0 ? at : tk_rc_acc(rc, ctx, abi, p, at, me, kind);\n"
    "}\n";

void tk_race_prelude(tk_cc *C, tk_buf *b) {
    if (!C->nrcloops) return;
    tk_printf(b, "#define TK_RC_BITS %d\n#define TK_RC_SITE %d\n", TK_RACE_ITER_BITS, TK_SITE_RACE);
    tk_puts(b, PRELUDE_RACE);
    tk_printf(b,
              "_Static_assert(sizeof(tk_rcs) == %zu && __builtin_offsetof(tk_rcs, base) == %zu && "
              "__builtin_offsetof(tk_rcs, len) == %zu && __builtin_offsetof(tk_rcs, width) == %zu, "
              "\"tk_rcs: the layout differs from libtack (runtime/races.h)\");\n"
              "_Static_assert(sizeof(tk_rc) == %zu && __builtin_offsetof(tk_rc, conflict) == %zu && "
              "__builtin_offsetof(tk_rc, s) == %zu, \"tk_rc: the layout differs from libtack (runtime/races.h)\");\n",
              sizeof(tk_rcs), offsetof(tk_rcs, base), offsetof(tk_rcs, len), offsetof(tk_rcs, width), sizeof(tk_rc),
              offsetof(tk_rc, conflict), offsetof(tk_rc, s));
}

/* -------------------------------------------------------------- emission */
int em_race_loop(tk_emitter *e, const tk_ir *pf) {
    for (int i = 0; i < e->C->nrcloops; i++)
        if (e->C->rcloops[i].pf == pf) return i;
    return -1;
}

int em_race_site(tk_emitter *e, const tk_ir *x) {
    if (!e->rc && !e->rcf) return -1;
    int loop = e->rc ? e->rc - 1 : -1; /* a function's watched copy: its sites are every loop's */
    for (int i = 0; i < e->C->nrcsites; i++)
        if (e->C->rcsites[i].node == x && e->C->rcsites[i].loop == loop) return i;
    return -1;
}

void em_race_open(tk_emitter *e, int site) {
    if (site < 0) return;
    const tk_rcsite *s = &e->C->rcsites[site];
    if (s->loop < 0) P(e, "tk_rc_facc(rc_, ctx, abi, rcp%d_, ", s->param);
    else P(e, "tk_rc_acc(rc_, ctx, abi, %d, ", s->param);
}

void em_race_close(tk_emitter *e, int site) {
    if (site >= 0) P(e, ", (uint64_t)%d << TK_RC_BITS | rc_me_, %d)", site, e->C->rcsites[site].kind);
}

/* A call from a watched loop, or from a function's watched copy, of a
 * function that has one: the call goes to the copy (tk_w<spec>), which gets
 * the session, the iteration's tag and, per array parameter, the kernel's
 * array the argument is (the caller's own when it is a copy; -1 for a local
 * array).  Other calls are the plain function's, as without check_races. */
int em_race_call(tk_emitter *e, const tk_ir *x) {
    if ((!e->rc && !e->rcf) || !e->C->rcspec || x->aux <= 0 || x->aux >= e->C->nspecs || !e->C->rcspec[x->aux])
        return 0;
    return call_has_array(x);
}

void em_race_call_args(tk_emitter *e, const tk_ir *x) {
    const tk_spec *S = e->C->specs[x->aux];
    P(e, ", rc_, rc_me_");
    for (int i = 0; i < x->n && i < S->nparams; i++) {
        if (S->ptypes[i].kind != TY_ARRAY) continue;
        const tk_ir *a = x->k[i];
        if (a->op != IR_ARRAY) P(e, ", -1");
        else if (e->rcf) P(e, ", rcp%d_", a->param);
        else P(e, ", %d", a->param);
    }
}

/* A watched copy's parameters after ctx and abi (em_race_call passes them). */
void em_race_params(tk_emitter *e, const tk_spec *S) {
    P(e, ", tk_rc *const rc_, const uint64_t rc_me_");
    for (int p = 0; p < S->nparams; p++)
        if (S->ptypes[p].kind == TY_ARRAY) P(e, ", const int rcp%d_", p);
}

void em_race_unused(tk_emitter *e, const tk_spec *S) {
    I(e); P(e, "(void)rc_; (void)rc_me_;");
    for (int p = 0; p < S->nparams; p++)
        if (S->ptypes[p].kind == TY_ARRAY) P(e, " (void)rcp%d_;", p);
    P(e, "\n");
}

void em_race_frame(tk_emitter *e) {
    if (e->C->nrcloops) P(e, "    tk_rc *rc;\n");
}

/* The session rides in the argument slot after the arguments and, when some
 * array is strided, their strides' row (cpu_jit.c packs it there). */
void em_race_entry(tk_emitter *e) {
    if (!e->C->nrcloops) return;
    int rows = 1;
    for (int i = 0; i < e->C->nargs; i++)
        if (e->C->args[i].is_array && e->C->args[i].strided) rows = 2;
    I(e); P(e, "tk_rc *const rc_ = (tk_rc *)args[%d].data; /* check_races: the launch's detector */\n", e->C->nargs * rows);
    I(e); P(e, "F_.rc = rc_;\n");
}

void em_race_begin(tk_emitter *e, tk_ir *s, int loop) {
    const tk_rcloop *L = &e->C->rcloops[loop];
    int nd = s->aux;
    I(e); P(e, "{ /* tk: fresh shadows for the race detector (race_watch.c) */\n");
    e->ind++;
    I(e); P(e, "const int64_t rl_[%d] = {", nd);
    for (int d = 0; d < nd; d++) {
        P(e, d ? ", " : "");
        if (L->lo[d]) { P(e, "(int64_t)("); ex(e, (tk_ir *)L->lo[d]); P(e, ")"); }
        else P(e, "0");
    }
    P(e, "}, rs_[%d] = {", nd);
    for (int d = 0; d < nd; d++) {
        P(e, d ? ", " : "");
        if (L->step[d]) { P(e, "(int64_t)("); ex(e, (tk_ir *)L->step[d]); P(e, ")"); }
        else P(e, "1");
    }
    P(e, "};\n");
    I(e); P(e, "if (total_ > 0 && rc_->begin(rc_, %d, F_.pn, rl_, rs_)) { abi->fail(ctx, TK_RC_SITE, 0, 0); return; }\n", loop);
    e->ind--;
    I(e); P(e, "}\n");
}

void em_race_chunk(tk_emitter *e) {
    if (e->rc) { I(e); P(e, "tk_rc *const rc_ = F->rc;\n"); }
}

/* The iteration's tag (its flat index + 1: the chunk's i_, or an ndrange's
 * row indices and j_), and a stop when another iteration found a race. */
void em_race_iteration(tk_emitter *e, tk_ir *s) {
    if (!e->rc) return;
    int nd = s->aux;
    I(e); P(e, "const uint64_t rc_me_ = (uint64_t)(");
    if (nd == 1) P(e, "i_");
    else {
        for (int d = 0; d < nd - 1; d++) P(e, "(");
        P(e, "x0_");
        for (int d = 1; d < nd; d++) {
            if (d < nd - 1) P(e, ") * F->pn[%d] + x%d_", d, d);
            else P(e, ") * F->pn[%d] + j_", d);
        }
    }
    P(e, ") + 1;\n");
    I(e); P(e, "if (TK_FAILED(ctx)) return; /* a race found: the launch stops */\n");
}

/* ------------------------------------------------------------- IR dump */
/* What the detector watches, after the IR (Kernel.ir; debug mode reads it to
 * watch the same loops and accesses as it runs the kernel as Python):
 *   race loop <n> line <line> vars <var>,... arrays <the kernel's arrays it watches>,...
 *   race site <n> loop <n or -1> <read|write|atomic> line <line> in <kernel|func> <name>: <text>
 * (loop -1: an access in a @tack.func, watched wherever a watched loop calls it). */
void tk_race_dump(tk_cc *C, tk_buf *b) {
    if (!C->nrcloops) return;
    static const char *kinds[] = {"read", "write", "atomic"};
    tk_puts(b, "races:\n");
    for (int i = 0; i < C->nrcloops; i++) {
        const tk_rcloop *L = &C->rcloops[i];
        tk_printf(b, "  race loop %d line %d vars ", i, L->pf->line);
        for (int d = 0; d < L->pf->aux && d < TACK_MAX_NDIM; d++) tk_printf(b, "%s%s", d ? "," : "", L->vars[d]);
        tk_puts(b, " arrays");
        for (int p = 0, n = 0; p < C->specs[0]->nparams; p++)
            if (L->width[p]) tk_printf(b, "%s%s", n++ ? "," : " ", C->specs[0]->pnames[p]);
        tk_puts(b, "\n");
    }
    for (int i = 0; i < C->nrcsites; i++) {
        const tk_rcsite *s = &C->rcsites[i];
        tk_printf(b, "  race site %d loop %d %s line %d in %s %s: %s\n", i, s->loop, kinds[s->kind], s->line,
                  s->loop < 0 ? "func" : "kernel", C->m->funcs[s->func].name, s->text ? s->text : "?");
    }
}
