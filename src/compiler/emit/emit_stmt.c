/*
 * emit_stmt.c -- typed IR statements to C-family source: blocks, loops,
 * checks, prints, stores, and the declaration of locals.
 *
 * em_stmt writes one statement the same way for every dialect; the CPU
 * layout's versions of a parallel loop (emit.h's modes) change only how a
 * few of them come out, and a parallel loop met inside a body is handed to
 * the layout's pfor hook.
 *
 * Serial loops poll (a target with `polls`: the CPU): each function keeps a
 * budget tk_bud_, starting empty, that its loops spend one unit an
 * iteration; when it runs out the loop asks abi->poll(ctx) whether the
 * launch must stop (Ctrl-C, interrupt.c) and leaves like a failed check if
 * so.  The function that runs a piece of a parallel loop starts with a full
 * budget: the pool asks the same question after every piece (pool.c), and
 * an empty one made every piece of a short launch poll at its first loop
 * (lud's rows: a dozen pieces a launch, each poll reading the clock).  A `for` loop is strip-mined -- an outer loop over strips of up to
 * TK_STRIP iterations pays for each strip at once, and the inner loop is
 * the loop as before, so the C compiler vectorizes it as before (a `break`
 * leaves both, by a goto); a `while` loop pays an iteration at a time (its
 * trip count is unknown; it never ran in vector lanes).  Inside SIMD lanes
 * (nopoll: cpu/emit_lanes.c) nothing may leave early, and loops do not
 * poll; the CPU layout lets only loops of bounded length run there.
 *
 * A failing check calls abi->fail(ctx, site, a, b) and leaves the function
 * being written (returning tk_zero from a function with a value); after a
 * call to a @tack.func that can fail (may_fail.c) the code tests the
 * dialect's TK_CALL_FAILED and leaves too.  A blocks loop's body on a grid
 * cannot leave: every thread of the block must reach every barrier and
 * exchange.  There a failing check only records the failure (TK_FAIL sets
 * the thread's flag, which TK_CALL_FAILED reads) and the thread goes on:
 * each later statement that could fault or write -- one that reads or
 * writes an array, divides, prints -- runs only while the flag is clear,
 * and the rest (the arithmetic on locals, loop counters, the barriers and
 * exchanges and the loops that hold them) runs as on every thread.  Nothing
 * a barrier depends on changes with the failure, so the block's control
 * stays what the program makes it.  Jumping to the next barrier instead,
 * as this file once did, skipped assignments that a loop of barriers read,
 * and PoCL's work-group compiler then gave wrong values though no check
 * failed (docs/design/decisions.md, 2026-12-06).
 */
#include <stdio.h>
#include <string.h>

#include "compiler/compiler.h"
#include "compiler/emit/emit.h"

/* The most IR nodes in the body of an innermost loop that gets a plain copy
 * beside its strips, unless that copy runs in SIMD lanes (emit_for). */
#define TK_PLAIN_BODY_MAX 300


/* Whether a statement is written in a blocks loop's body on a grid (the kernel's own, not a
 * function's), where a failed check does not leave (the essay above). */
static int in_blocks(const tk_emitter *e) { return e->bbody && e->S == e->K; }

static void ret_fail(tk_emitter *e) {
    if (in_blocks(e)) return; /* TK_FAIL set the thread's flag: the guarded statements skip */
    if (e->fn == TK_FN_DEVICE && em_returns_value(e->S)) P(e, "return tk_zero;");
    else P(e, "return;");
}

/* Whether node x, statement or expression, holds a node of kind op. */
static int holds(const tk_ir *x, int op) {
    if (!x) return 0;
    if ((int)x->op == op) return 1;
    for (int i = 0; i < x->n; i++)
        if (holds(x->k[i], op)) return 1;
    return 0;
}

/* Whether x could fault or write when a check before it failed: it reads or writes an array
 * (the kernel's, a local or shared one), divides integers by what is not a constant (by zero it
 * traps on a CPU) or prints. */
static int unsafe(const tk_ir *x) {
    if (!x) return 0;
    switch (x->op) {
    case IR_LOAD: case IR_LLOAD: case IR_ATOMIC: case IR_STORE: case IR_LSTORE: case IR_LFILL: case IR_PRINT:
        return 1;
    case IR_BIN:
        if ((x->sub == B_DIV || x->sub == B_FLOORDIV || x->sub == B_MOD) && !ty_is_float(x->ty) && x->n == 2 &&
            !(x->k[1]->op == IR_CONST && x->k[1]->c.i != 0))
            return 1;
        break;
    default:
        break;
    }
    for (int i = 0; i < x->n; i++)
        if (unsafe(x->k[i])) return 1;
    return 0;
}

/* Whether a statement of a blocks loop's body runs only while its thread's flag is clear: an
 * unsafe one holding no barrier or exchange (those every thread runs), and not a declaration
 * (a function's tuple is declared where it is assigned, and read after). */
static int guarded(const tk_emitter *e, const tk_ir *s) {
    if (s->op == IR_BLOCK || s->op == IR_CHECK || !unsafe(s) || holds(s, IR_BARRIER) || holds(s, IR_WARP))
        return 0;
    if (s->op == IR_ASSIGN && (e->S->locals[s->local].ty.kind == TY_TUPLE || e->S->locals[s->local].ty.kind == TY_MULTI))
        return 0;
    return 1;
}

void em_block(tk_emitter *e, tk_ir *b) {
    if (b->str) { I(e); P(e, "/* %s */\n", b->str); } /* a pass's note (nests.c): the compiler's own text */
    /* open: writing a run of guarded statements under one test of the flag, inside which the
     * flag is known clear (bclear) until a check or call in it may set it */
    int open = 0, clear = e->bclear;
    for (int i = 0; i < b->n; i++) {
        tk_ir *x = b->k[i];
        if (!in_blocks(e)) {
            st(e, x);
            continue;
        }
        /* the flag can be set only after a check or a call: a loop holding one may have set it
         * in an earlier trip by the time any of its statements runs */
        int fails = holds(x, IR_CHECK) || holds(x, IR_CALL);
        if (fails && (x->op == IR_FOR || x->op == IR_WHILE)) e->bchecked = 1, e->bclear = 0;
        int guard = e->bchecked && !e->bclear && guarded(e, x);
        if (guard) {
            I(e); P(e, "if (!TK_CALL_FAILED(ctx, abi)) {\n");
            e->ind++;
            open = 1;
            e->bclear = 1;
        }
        st(e, x); /* a guarded statement's own statements after a check are guarded again */
        if (fails) e->bchecked = 1, e->bclear = 0;
        tk_ir *next = i + 1 < b->n ? b->k[i + 1] : NULL;
        if (open && (fails || !next || !guarded(e, next) || holds(next, IR_CHECK) || holds(next, IR_CALL))) {
            e->ind--;
            I(e); P(e, "}\n");
            open = 0;
            e->bclear = clear && !fails;
        }
    }
}

/* After a call that can fail (may_fail.c), leave when it did: TK_CALL_FAILED
 * is the dialect's (a GPU's reads the thread's own flag, not the record). In a
 * blocks loop's body on a grid the flag guards what follows instead. */
static void after_call(tk_emitter *e, tk_ir *v) {
    if (in_blocks(e)) return;
    if (v->op == IR_CALL && e->C->opts.checks && (e->mayfail[v->aux] || em_race_call(e, v))) {
        I(e);
        P(e, "if (TK_CALL_FAILED(ctx, abi)) ");
        ret_fail(e);
        P(e, "\n");
    }
}

/* The condition under which check `s` fails. */
void em_check_fails(tk_emitter *e, tk_ir *s) {
    switch (s->sub) {
    case CK_INDEX:
        if (s->local == CKI_RANGE) { /* a hoisted range: lo < hi and hi beyond the bound */
            P(e, "("); ex(e, s->k[0]); P(e, ") < ("); ex(e, s->k[1]); P(e, ") && ("); ex(e, s->k[1]);
            P(e, ") > ("); ex(e, s->k[2]); P(e, ")");
        } else if (s->local == CKI_NONNEG) { /* no negative indices */
            P(e, "(uint64_t)("); ex(e, s->k[0]); P(e, ") >= (uint64_t)("); ex(e, s->k[1]); P(e, ")");
        } else { /* -n <= k < n as one unsigned compare: k + n wraps above 2n when k < -n */
            P(e, "(uint64_t)("); ex(e, s->k[0]); P(e, ") + (uint64_t)("); ex(e, s->k[1]);
            P(e, ") >= 2 * (uint64_t)("); ex(e, s->k[1]); P(e, ")");
        }
        return;
    case CK_COMP: /* -len <= k < len, as an array index (the index is wrapped after) */
        P(e, "(uint64_t)("); ex(e, s->k[0]); P(e, ") + (uint64_t)("); ex(e, s->k[1]);
        P(e, ") >= 2 * (uint64_t)("); ex(e, s->k[1]); P(e, ")");
        return;
    case CK_ZERODIV: case CK_STEP:
        P(e, "("); ex(e, s->k[0]); P(e, ") == 0");
        return;
    case CK_NEGPOW:
        P(e, "("); ex(e, s->k[0]); P(e, ") < 0");
        return;
    case CK_ASSERT: case CK_UNBOUND:
        P(e, "!("); ex(e, s->k[0]); P(e, ")");
        return;
    case CK_INTFIT: /* lo <= v <= hi as one unsigned compare, v - lo <= hi - lo */
        if (s->local == CKI_RANGE) { /* a < b and (a outside, or b - 1 above hi) */
            P(e, "("); ex(e, s->k[0]); P(e, ") < ("); ex(e, s->k[1]); P(e, ") && ((uint64_t)(int64_t)(");
            ex(e, s->k[0]); P(e, ") - (uint64_t)(int64_t)(%lld) > (uint64_t)(%llu) || (int64_t)(", (long long)s->k[2]->c.i,
                              (unsigned long long)((uint64_t)s->k[3]->c.i - (uint64_t)s->k[2]->c.i));
            ex(e, s->k[1]); P(e, ") - 1 > (int64_t)(%lld))", (long long)s->k[3]->c.i);
        } else {
            P(e, "(uint64_t)(int64_t)("); ex(e, s->k[0]); P(e, ") - (uint64_t)(int64_t)(%lld) > (uint64_t)(%llu)", (long long)s->k[1]->c.i,
                                                       (unsigned long long)((uint64_t)s->k[2]->c.i - (uint64_t)s->k[1]->c.i));
        }
        return;
    }
}

static int polling(const tk_emitter *e) { return e->T->polls && !e->nopoll; }

void em_poll_budget(tk_emitter *e, int full) {
    if (!e->T->polls) return;
    I(e); P(e, "int64_t tk_bud_ = %s; (void)tk_bud_;\n", full ? "TK_BUDGET" : "0");
}

/* Whether a `break` in x leaves the loop x belongs to (not one nested in it). */
static int breaks_out(const tk_ir *x) {
    if (x->op == IR_BREAK) return 1;
    if (x->op == IR_FOR || x->op == IR_WHILE || x->op == IR_PFOR) return 0;
    for (int i = 0; i < x->n; i++)
        if (breaks_out(x->k[i])) return 1;
    return 0;
}

/* Whether x holds a loop (a body with one is written once: see emit_for). */
static int has_loop(const tk_ir *x) {
    if (x->op == IR_FOR || x->op == IR_WHILE || x->op == IR_PFOR) return 1;
    for (int i = 0; i < x->n; i++)
        if (has_loop(x->k[i])) return 1;
    return 0;
}

/* Whether x has at most *left nodes, counting them off (the budgets of
 * emit_for and emit_cpu.c's histogram versions). */
int em_within(const tk_ir *x, int *left) {
    if (--*left < 0) return 0;
    for (int i = 0; i < x->n; i++)
        if (!em_within(x->k[i], left)) return 0;
    return 1;
}

/* The loop variable and body of serial loop s, counter k<c>. */
void em_for_body(tk_emitter *e, tk_ir *s, int c, int unit, int brk) {
    int saved_brk = e->brk;
    e->ind++;
    I(e); local_name(e, s->local);
    if (unit) P(e, " = k%d;\n", c);
    else P(e, " = (int64_t)((uint64_t)lo%d + (uint64_t)k%d * (uint64_t)st%d);\n", c, c, c);
    e->brk = brk ? c : -1;
    block(e, s->k[3]);
    e->brk = saved_brk;
    e->ind--;
    I(e); P(e, "}\n");
}

/* A serial loop over range(lo, hi, step): a counter from 0 to the trip count,
 * or from lo to hi when the step is 1; strip-mined when it polls.
 *
 * An innermost polling loop (no loop in its body) of at most one strip --
 * a row of a stencil, the taps of a filter -- runs as a plain loop after one
 * poll for all its iterations; the strips are the other copy of the body,
 * for longer trips.  GCC compiles the loop nested in the strip loop worse:
 * a 7-point stencil written with nested loops (38-element rows, f64, one
 * thread, the generated C alone, in alternation) ran 46-60 us strip-mined
 * and 41-50 us as a plain loop, the hand-written loop 39-50 us.
 *
 * The plain copy is the body once more, so it is written only where it is
 * measured to pay: a body of at most TK_PLAIN_BODY_MAX IR nodes (Cholesky's
 * 21-node row ran 1.25x slower strip-mined, softmax's 1.05x; the 21 cold
 * kernels' bodies are 14-274 nodes), or one whose plain copy runs in SIMD
 * lanes (a 27-point stencil row of 509 nodes: 1.08x slower strip-mined).  A
 * larger scalar body gains nothing from it (the adjoint of a bead chain,
 * bodies of 422-1203 nodes: 0.86x the time without), and there the
 * copy was a quarter of the C.  No other serial loop has a second copy
 * here: a nest grows by one copy of each small innermost body, never by a
 * factor per level. */
static void emit_for(tk_emitter *e, tk_ir *s) {
    int c = e->counter++;
    tk_ir *lo = s->k[0], *hi = s->k[1], *step = s->k[2];
    int unit = step->op == IR_CONST && step->c.i == 1, poll = polling(e) && s->sub == TK_FOR_POLLS;
    int brk = poll && breaks_out(s->k[3]);
    I(e); P(e, "{\n");
    e->ind++;
    I(e); P(e, "const int64_t lo%d = ", c); ex(e, lo); P(e, ", hi%d = ", c); ex(e, hi); P(e, ";\n");
    const char *from = "lo", *to = "hi";
    if (!unit) {
        I(e); P(e, "const int64_t st%d = ", c); ex(e, step); P(e, ", n%d = tk_trip(lo%d, hi%d, st%d);\n", c, c, c, c);
        from = NULL;
        to = "n";
    }
    int left = TK_PLAIN_BODY_MAX;
    if (poll && s->aux == 0 && !has_loop(s->k[3]) && (em_within(s->k[3], &left) || (from && em_lanes_ok(e, s)))) { /* one strip: a plain loop */
        if (from) {
            /* an empty loop goes to the other copy, which does nothing: OpenMP
             * leaves a lastprivate local undefined after no iterations */
            I(e); P(e, "if (hi%d > lo%d && (uint64_t)hi%d - (uint64_t)lo%d <= (uint64_t)TK_STRIP) {\n", c, c, c, c);
            e->ind++;
            I(e); P(e, "if (TK_POLL(hi%d - lo%d)) ", c, c); ret_fail(e); P(e, "\n");
            if (!em_plain_in_lanes(e, s, c)) {
                I(e); P(e, "for (int64_t k%d = lo%d; k%d < hi%d; k%d++) {\n", c, c, c, c, c);
                em_for_body(e, s, c, unit, 0);
            }
            e->ind--;
            I(e); P(e, "} else\n");
        } else {
            I(e); P(e, "if (n%d <= TK_STRIP) {\n", c);
            e->ind++;
            I(e); P(e, "if (n%d > 0 && TK_POLL(n%d)) ", c, c); ret_fail(e); P(e, "\n");
            I(e); P(e, "for (int64_t k%d = 0; k%d < n%d; k%d++) {\n", c, c, c, c);
            em_for_body(e, s, c, unit, 0);
            e->ind--;
            I(e); P(e, "} else\n");
        }
    }
    if (poll && s->aux > 0) { /* each iteration is this many units of work (nests.c): strips of TK_STRIP units */
        I(e); P(e, "const int64_t w%d = ", c); local_name(e, s->aux - 1); P(e, " > 0 ? "); local_name(e, s->aux - 1);
        P(e, " : 1, ws%d = TK_STRIP / w%d > 0 ? TK_STRIP / w%d : 1;\n", c, c, c);
    }
    if (poll) {
        if (from) { I(e); P(e, "for (int64_t s%d = %s%d, e%d; s%d < %s%d; s%d = e%d) {\n", c, from, c, c, c, to, c, c, c); }
        else { I(e); P(e, "for (int64_t s%d = 0, e%d; s%d < %s%d; s%d = e%d) {\n", c, c, c, to, c, c, c); }
        e->ind++;
        if (s->aux > 0) {
            I(e); P(e, "e%d = %s%d - s%d > ws%d ? s%d + ws%d : %s%d;\n", c, to, c, c, c, c, c, to, c);
            I(e); P(e, "if (TK_POLL((e%d - s%d) * w%d)) ", c, c, c); ret_fail(e); P(e, "\n");
        } else {
            I(e); P(e, "e%d = %s%d - s%d > TK_STRIP ? s%d + TK_STRIP : %s%d;\n", c, to, c, c, c, to, c);
            I(e); P(e, "if (TK_POLL(e%d - s%d)) ", c, c); ret_fail(e); P(e, "\n");
        }
        I(e); P(e, "for (int64_t k%d = s%d; k%d < e%d; k%d++) {\n", c, c, c, c, c);
    } else if (from) {
        if (s->sub == TK_FOR_IVDEP) { /* tile.c: the iterations are independent (the arrays tested disjoint) */
            P(e, "#if defined(__clang__)\n#pragma clang loop vectorize(assume_safety)\n#elif defined(__GNUC__)\n#pragma GCC ivdep\n#endif\n");
        }
        I(e); P(e, "for (int64_t k%d = lo%d; k%d < hi%d; k%d++) {\n", c, c, c, c, c);
    } else {
        I(e); P(e, "for (int64_t k%d = 0; k%d < n%d; k%d++) {\n", c, c, c, c);
    }
    em_for_body(e, s, c, unit, brk);
    if (poll) {
        e->ind--;
        I(e); P(e, "}\n");
        if (brk) { I(e); P(e, "tk_brk%d:;\n", c); }
    }
    e->ind--;
    I(e); P(e, "}\n");
}

/* A check: when it fails, abi->fail(ctx, site, a, b) and leave. */
static void emit_check(tk_emitter *e, tk_ir *s) {
    I(e); P(e, "if (__builtin_expect(");
    check_fails(e, s);
    P(e, ", 0)) { %s(ctx, %d, ", e->D->fail_fn ? e->D->fail_fn : "abi->fail", s->aux);
    switch (s->sub) {
    case CK_INDEX:
        if (s->local == CKI_RANGE) {
            P(e, "("); ex(e, s->k[0]); P(e, ") > ("); ex(e, s->k[2]); P(e, ") ? ("); ex(e, s->k[0]); P(e, ") : (");
            ex(e, s->k[2]); P(e, "), "); ex(e, s->k[2]); P(e, "); ");
        } else {
            ex(e, s->k[0]); P(e, ", "); ex(e, s->k[1]); P(e, "); ");
        }
        break;
    case CK_COMP:
        ex(e, s->k[0]); P(e, ", "); ex(e, s->k[1]); P(e, "); ");
        break;
    case CK_NEGPOW:
        P(e, "(int64_t)("); ex(e, s->k[0]); P(e, "), 0); ");
        break;
    case CK_INTFIT:
        if (s->local == CKI_RANGE) { /* the first value that fails, in the loop's order */
            P(e, "(uint64_t)(int64_t)("); ex(e, s->k[0]); P(e, ") - (uint64_t)(int64_t)(%lld) > (uint64_t)(%llu) ? (int64_t)(",
                                                        (long long)s->k[2]->c.i,
                                                        (unsigned long long)((uint64_t)s->k[3]->c.i - (uint64_t)s->k[2]->c.i));
            ex(e, s->k[0]); P(e, ") : (int64_t)(%lld) + 1, 0); ", (long long)s->k[3]->c.i);
        } else {
            P(e, "(int64_t)("); ex(e, s->k[0]); P(e, "), 0); ");
        }
        break;
    default:
        P(e, "0, 0); ");
        break;
    }
    ret_fail(e);
    P(e, " }\n");
}

/* print(...): the values as tk_pv records, for abi->print. */
static void emit_print(tk_emitter *e, tk_ir *s) {
    if (e->D->print) {
        e->D->print(e, s);
        return;
    }
    I(e); P(e, "{ ");
    for (int i = 0; i < s->n; i++) /* a complex is read twice: once into a temporary */
        if (!s->k[i]->str && ty_is_complex(s->k[i]->ty)) {
            P(e, "const %s pz%d_ = ", e->D->ctype((tack_dtype)s->k[i]->ty.dt), i); ex(e, s->k[i]); P(e, "; ");
        }
    P(e, "tk_pv pv_[%d] = {", s->n ? s->n : 1);
    for (int i = 0; i < s->n; i++) {
        tk_ir *v = s->k[i];
        if (i) P(e, ", ");
        if (v->str) {
            P(e, "{0, 0, 0, 0, \"");
            for (const unsigned char *c = (const unsigned char *)v->str; *c; c++) {
                if (*c == '"' || *c == '\\' || *c == '?') P(e, "\\%c", *c); /* \? : no trigraphs */
                else if (*c < 32 || *c >= 127) P(e, "\\%03o", *c);
                else P(e, "%c", *c);
            }
            P(e, "\"}");
            continue;
        }
        int dt = v->ty.dt;
        if (ty_is_complex(v->ty)) P(e, "{%d, 0, 0, (double)pz%d_.v[0], 0, (double)pz%d_.v[1]}", dt == TACK_C64 ? 6 : 7, i, i);
        else if (dt == TACK_BOOL) { P(e, "{1, ("); ex(e, v); P(e, "), 0, 0, 0}"); }
        else if (is_float_dt(dt)) { P(e, "{%d, 0, 0, (double)(", dt == TACK_F32 ? 4 : 5); ex(e, v); P(e, "), 0}"); }
        else if (is_signed(dt)) { P(e, "{2, (int64_t)("); ex(e, v); P(e, "), 0, 0, 0}"); }
        else { P(e, "{3, 0, (uint64_t)("); ex(e, v); P(e, "), 0, 0}"); }
    }
    if (!s->n) P(e, "{0, 0, 0, 0, \"\"}");
    P(e, "}; abi->print(ctx, pv_, %d); }\n", s->n);
}

/* In the private-histogram version of a parallel loop (e->hist): an add or
 * sub into the chunk's private copy of the array, wrapping like the atomic it
 * replaces -- in the version that chooses per array (bit 63 of e->hist),
 * when this chunk keeps a copy of it (huN_), else the atomic. */
static void hist_add(tk_emitter *e, tk_ir *a) {
    int dt = a->ty.dt, h = a->param, cdt = hist_dt(dt), k = hist_k(dt), cols = dt_cols((tack_dtype)dt);
    const char *op = a->sub == A_SUB ? "-" : "+";
    if (e->hist >> 63 & 1) { I(e); P(e, "if (!hu%d_) (void)(", h); ex(e, a); P(e, ");\n"); }
    I(e); P(e, "%s{ const int64_t h_ = (int64_t)(", e->hist >> 63 & 1 ? "else " : "");
    if (a->n == 2 && a->k[1]->op == IR_WRAP && a->k[1]->param == a->param && e->C->opts.checks)
        ex(e, a->k[1]->k[0]); /* checked to lie in [-n, n): hpN_ has a cell for each */
    else
        em_flat_index(e, a, 1);
    if (k == 1) {
        P(e, "); hp%d_[h_] = ", h);
        if (is_float_dt(dt)) { P(e, "hp%d_[h_] %s (", h, op); ex(e, a->k[0]); P(e, "); }\n"); }
        else {
            P(e, "(%s)((%s)hp%d_[h_] %s (%s)(", ctype(e, dt), ut(dt), h, op, ut(dt));
            ex(e, a->k[0]);
            P(e, ")); }\n");
        }
        return;
    }
    /* a vector or matrix element: k cells from h_ * k, one a component (the value evaluated once) */
    P(e, ") * %d; const %s hv_ = ", k, ctype(e, dt));
    ex(e, a->k[0]);
    P(e, ";");
    for (int c = 0; c < k; c++) {
        char comp[32];
        if (cols == 1) snprintf(comp, sizeof comp, "hv_.v[%d]", c);
        else snprintf(comp, sizeof comp, "hv_.m[%d][%d]", c / cols, c % cols);
        if (is_float_dt(cdt)) P(e, " hp%d_[h_ + %d] = hp%d_[h_ + %d] %s %s;", h, c, h, c, op, comp);
        else
            P(e, " hp%d_[h_ + %d] = (%s)((%s)hp%d_[h_ + %d] %s (%s)%s);", h, c, ctype(e, cdt), ut(cdt), h, c, op,
              ut(cdt), comp);
    }
    P(e, " }\n");
}

/* The condition of an if or a while, with the statement's parentheses.  A scalar == prints its
 * own, `((a) == (b))`, and is not wrapped again: clang reports `if (((a) == (b)))`
 * (-Wparentheses-equality), and PoCL's build printed "N warnings generated." to the user's
 * stderr for every kernel with an `if a == b`.  Other comparisons keep the extra pair, which is
 * what keeps clang quiet about `a != a`, the NaN test, on an integer type (-Wtautological-compare:
 * the primitives' min and max are written once for every type). */
static void cond(tk_emitter *e, tk_ir *x) {
    if (x->op == IR_BIN && x->sub == B_EQ && ty_is_scalar(x->aux_ty) && !ty_is_complex(x->aux_ty)) {
        ex(e, x);
        return;
    }
    P(e, "(");
    ex(e, x);
    P(e, ")");
}

void em_stmt(tk_emitter *e, tk_ir *s) {
    switch (s->op) {
    case IR_BLOCK: block(e, s); return;
    case IR_ASSIGN:
        I(e);
        /* a function's tuple: declared where the call assigns it (it is read
         * field by field right after, in the same block) */
        if (e->S->locals[s->local].ty.kind == TY_TUPLE) P(e, "const tk_tup%d ", ty_tuple_spec(e->S->locals[s->local].ty));
        if (e->S->locals[s->local].ty.kind == TY_MULTI) /* a decomposition's (prelude_linalg.c) */
            P(e, "const tk_%s_r_%s ", tk_math_name(e->S->locals[s->local].ty.ndim),
              ctype(e, e->S->locals[s->local].ty.dt));
        local_name(e, s->local); P(e, " = "); ex(e, s->k[0]); P(e, ";\n");
        after_call(e, s->k[0]);
        return;
    case IR_EVAL:
        if (s->k[0]->op == IR_ATOMIC && s->k[0]->param < 63 && (e->hist >> s->k[0]->param & 1)) {
            hist_add(e, s->k[0]);
            return;
        }
        I(e); P(e, "(void)("); ex(e, s->k[0]); P(e, ");\n");
        after_call(e, s->k[0]);
        return;
    case IR_SETCOMP:
        I(e); local_name(e, s->local);
        if (s->n == 3) {
            P(e, ".m["); ex(e, s->k[0]); P(e, "]["); ex(e, s->k[1]); P(e, "] = "); ex(e, s->k[2]);
        } else {
            P(e, ".v["); ex(e, s->k[0]); P(e, "] = "); ex(e, s->k[1]);
        }
        P(e, ";\n");
        return;
    case IR_STORE: {
        int sdt = s->comp ? dt_scalar((tack_dtype)e->S->ptypes[s->param].dt) : e->S->ptypes[s->param].dt;
        int rs = em_race_site(e, s);
        I(e);
        P(e, "a%d[", s->param);
        em_race_open(e, rs);
        em_flat_index(e, s, 1);
        em_race_close(e, rs);
        P(e, "]");
        em_comp(e, s->param, s->comp); /* a[i].x = s: that component alone */
        P(e, " = ");
        if (dt_is_half(sdt)) P(e, "%s(", dt_half_store(sdt, s->k[0]->ty.dt == TACK_F64)); /* a float64: rounded once */
        else if (sdt == TACK_BOOL) P(e, "(uint8_t)(");
        ex(e, s->k[0]);
        if (dt_is_half(sdt) || sdt == TACK_BOOL) P(e, ")");
        P(e, ";\n");
        return;
    }
    case IR_LSTORE:
    case IR_LFILL: { /* an element, or (a local array's creation) every element; f16/bf16 rounded to its bits */
        int ldt = e->S->locals[s->local].ty.dt, h = dt_is_half(ldt);
        I(e);
        if (s->op == IR_LFILL) P(e, "for (int64_t l_ = 0; l_ < %lld; l_++) ", (long long)tk_local_elems(&e->S->locals[s->local]));
        local_name(e, s->local);
        if (s->op == IR_LFILL) P(e, "[l_] = ");
        else { P(e, "["); em_local_index(e, s, 1); P(e, "] = "); }
        if (h) P(e, "%s(", dt_half_store(ldt, s->k[0]->ty.dt == TACK_F64));
        ex(e, s->k[0]);
        P(e, h ? ");\n" : ";\n");
        return;
    }
    case IR_IF:
        I(e); P(e, "if "); cond(e, s->k[0]); P(e, " {\n");
        e->ind++; block(e, s->k[1]); e->ind--;
        if (s->k[2]->n) {
            I(e); P(e, "} else {\n");
            e->ind++; block(e, s->k[2]); e->ind--;
        }
        I(e); P(e, "}\n");
        return;
    case IR_WHILE: {
        int saved_brk = e->brk;
        I(e); P(e, "while "); cond(e, s->k[0]); P(e, " {\n");
        e->ind++;
        if (polling(e)) { I(e); P(e, "if (TK_POLL(1)) "); ret_fail(e); P(e, "\n"); }
        e->brk = -1;
        block(e, s->k[1]);
        e->brk = saved_brk;
        e->ind--;
        I(e); P(e, "}\n");
        return;
    }
    case IR_FOR: emit_for(e, s); return;
    case IR_PFOR: /* the layout's (parallel loops are at the kernel's top level) */
        if (e->pfor) e->pfor(e, s);
        else { I(e); P(e, "/* bad statement %d */\n", s->op); }
        return;
    case IR_BREAK:
        I(e);
        if (e->brk >= 0) P(e, "goto tk_brk%d;\n", e->brk);
        else P(e, "break;\n");
        return;
    case IR_CONTINUE: I(e); P(e, "continue;\n"); return;
    case IR_BARRIER: /* a grid's (the CPU splits its thread loop there instead: cpu/emit_blocks.c) */
        I(e); P(e, "%s\n", e->D->barrier ? e->D->barrier : "/* barrier */");
        return;
    case IR_RETURN:
        I(e);
        if (s->n && e->S->ret.kind == TY_TUPLE) {
            int si = ty_tuple_spec(e->S->ret);
            P(e, e->D->cxx_literals ? "return tk_tup%d{" : "return (tk_tup%d){", si);
            for (int i = 0; i < s->n; i++) {
                if (i) P(e, ", ");
                ex(e, s->k[i]);
            }
            P(e, "};\n");
        } else if (s->n) {
            P(e, "return "); ex(e, s->k[0]); P(e, ";\n");
        } else if (e->fn == TK_FN_DEVICE && em_returns_value(e->S)) {
            P(e, "return tk_zero;\n");
        } else {
            P(e, "return;\n");
        }
        return;
    case IR_CHECK: emit_check(e, s); return;
    case IR_PRINT: emit_print(e, s); return;
    default: I(e); P(e, "/* bad statement %d */\n", s->op); return;
    }
}

/* Declare the locals of one scope (frame: -1, a parallel loop: its id);
 * with `carried`, only those it marks (in 1) or does not mark (in 0). */
void em_declare_locals(tk_emitter *e, int scope, int skip_params, const char *carried, int in) {
    for (int i = 0; i < e->S->nlocals; i++) {
        tk_local *l = &e->S->locals[i];
        if (l->scope != scope || (skip_params && l->is_param) || l->shared) continue; /* shared: the block's */
        if (carried && !carried[i] != !in) continue;
        if (l->ty.kind == TY_ARRAY) { /* a local array: all its elements, row-major */
            int64_t n = tk_local_elems(l);
            I(e);
            P(e, "%s ", tk_local_elem_type(l, ctype(e, l->ty.dt)));
            local_name(e, i);
            P(e, "[%lld] = {0};\n", (long long)(n > 0 ? n : 1));
            continue;
        }
        if (l->ty.kind != TY_VALUE) continue;
        I(e);
        P(e, "%s ", ctype(e, l->ty.dt));
        local_name(e, i);
        P(e, " = {0};\n");
    }
}

