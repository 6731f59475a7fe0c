/*
 * ir_dump.c -- the textual form of the typed IR.
 *
 * One line per statement, expressions in prefix form with their types:
 *
 *   kernel scale(a: array[f32, 1-D], s: float (Python))  writes: a
 *     pfor [i] < (shape a 0):
 *       store a[(i:i64)] = (mul:f32 (load a (i)) (cast:f32 (s)))
 *
 * The dump is what tack_program_ir() returns and TACK_DUMP=ir prints; tests
 * read it to see what the passes did (a check removed, a check hoisted).
 * It is deterministic, so it could also serve as a cache key.
 */
#include <stdio.h>
#include <string.h>

#include "compiler/compiler.h"

typedef struct ir_dumper {
    tk_cc *C;
    tk_buf *b;
    tk_spec *S;
} ir_dumper;

static const char *tyn(ir_dumper *d, tk_type t) { return ty_name(&d->C->arena, t); }

static void lname(ir_dumper *d, int loc) {
    if (loc < 0 || loc >= d->S->nlocals) {
        tk_printf(d->b, "?%d", loc);
        return;
    }
    tk_printf(d->b, "%s", d->S->locals[loc].name ? d->S->locals[loc].name : "?");
    if (d->S->locals[loc].scope >= 0) tk_printf(d->b, "'%d", loc);
}

static void dx(ir_dumper *d, tk_ir *x) {
    tk_buf *b = d->b;
    switch (x->op) {
    case IR_CONST:
        if (x->str) tk_printf(b, "\"%s\"", x->str);
        else if (ty_is_float(x->ty)) tk_printf(b, "%.17g", x->c.f);
        else if (x->ty.kind == TY_VALUE && x->ty.dt == TACK_U64) tk_printf(b, "%llu", (unsigned long long)x->c.u);
        else tk_printf(b, "%lld", (long long)x->c.i);
        return;
    case IR_LOCAL: lname(d, x->local); return;
    case IR_SHAPE: tk_printf(b, "(shape %s %d)", d->S->pnames[x->param], x->aux); return;
    case IR_ARRAY: tk_printf(b, "%s", d->S->pnames[x->param]); return;
    case IR_LARRAY: lname(d, x->local); return;
    default: break;
    }
    tk_puts(b, "(");
    switch (x->op) {
    case IR_CAST: tk_printf(b, "cast:%s ", tyn(d, x->ty)); break;
    case IR_BIN: tk_printf(b, "%s:%s ", tk_bin_name(x->sub), tyn(d, x->ty)); break;
    case IR_UN: tk_printf(b, "%s:%s ", tk_un_name(x->sub), tyn(d, x->ty)); break;
    case IR_AND: tk_printf(b, "and:%s ", tyn(d, x->ty)); break;
    case IR_OR: tk_printf(b, "or:%s ", tyn(d, x->ty)); break;
    case IR_SELECT: tk_printf(b, "select:%s ", tyn(d, x->ty)); break;
    case IR_MATH: tk_printf(b, "%s:%s ", tk_math_name(x->sub), tyn(d, x->ty)); break;
    case IR_LOAD: tk_printf(b, "load %s ", d->S->pnames[x->param]); break;
    case IR_WRAP:
        if (x->param < 0) tk_printf(b, "wrap %lld ", (long long)x->c.i); /* a local array's extent */
        else tk_printf(b, "wrap %s %d ", d->S->pnames[x->param], x->aux);
        break;
    case IR_LLOAD: tk_puts(b, "lload "); lname(d, x->local); tk_puts(b, " "); break;
    case IR_WARP: tk_printf(b, "warp_%s:%s w%lld ", tk_warp_name(x->sub), tyn(d, x->ty), (long long)x->c.i); break;
    case IR_VEC: tk_printf(b, "%s ", tyn(d, x->ty)); break;
    case IR_COMP: tk_printf(b, "comp:%s ", tyn(d, x->ty)); break;
    case IR_CALL: tk_printf(b, "call %s#%d ", d->C->m->funcs[d->C->specs[x->aux]->func].name, x->aux); break;
    case IR_ATOMIC:
        tk_printf(b, "atomic_%s:%s %s ", tk_atom_name(x->sub), tyn(d, x->ty), d->S->pnames[x->param]);
        if (x->comp) tk_printf(b, ".c%d ", x->comp - 1);
        break;
    default: tk_printf(b, "op%d ", x->op); break;
    }
    for (int i = 0; i < x->n; i++) {
        if (i) tk_puts(b, " ");
        dx(d, x->k[i]);
    }
    tk_puts(b, ")");
}

static void ind(ir_dumper *d, int n) {
    for (int i = 0; i < n; i++) tk_puts(d->b, "  ");
}

static void ds(ir_dumper *d, tk_ir *s, int n) {
    tk_buf *b = d->b;
    if (s->op == IR_BLOCK) {
        for (int i = 0; i < s->n; i++) ds(d, s->k[i], n);
        return;
    }
    ind(d, n);
    switch (s->op) {
    case IR_ASSIGN: lname(d, s->local); tk_puts(b, " = "); dx(d, s->k[0]); break;
    case IR_SETCOMP:
        lname(d, s->local);
        for (int i = 0; i < s->n - 1; i++) { tk_puts(b, "["); dx(d, s->k[i]); tk_puts(b, "]"); }
        tk_puts(b, " = ");
        dx(d, s->k[s->n - 1]);
        break;
    case IR_STORE:
        tk_printf(b, "%s %s[", s->sub == ST_RMW ? "store.rmw" : "store", d->S->pnames[s->param]);
        for (int i = 1; i < s->n; i++) { if (i > 1) tk_puts(b, ", "); dx(d, s->k[i]); }
        tk_puts(b, "]");
        if (s->comp) tk_printf(b, ".c%d", s->comp - 1);
        tk_puts(b, " = ");
        dx(d, s->k[0]);
        break;
    case IR_EVAL: tk_puts(b, "eval "); dx(d, s->k[0]); break;
    case IR_BARRIER: tk_puts(b, "barrier"); break;
    case IR_LSTORE:
        tk_puts(b, "lstore "); lname(d, s->local); tk_puts(b, "[");
        for (int i = 1; i < s->n; i++) { if (i > 1) tk_puts(b, ", "); dx(d, s->k[i]); }
        tk_puts(b, "] = ");
        dx(d, s->k[0]);
        break;
    case IR_LFILL: {
        const tk_local *l = &d->S->locals[s->local];
        tk_puts(b, "local ");
        lname(d, s->local);
        tk_printf(b, ": %s[", dt_name((tack_dtype)l->ty.dt));
        for (int k = 0; k < l->ty.ndim; k++) tk_printf(b, "%s%lld", k ? ", " : "", (long long)l->ashape[k]);
        tk_puts(b, "] = ");
        dx(d, s->k[0]);
        break;
    }
    case IR_IF:
        tk_puts(b, "if "); dx(d, s->k[0]); tk_puts(b, ":\n");
        ds(d, s->k[1], n + 1);
        if (s->k[2]->n) { ind(d, n); tk_puts(b, "else:\n"); ds(d, s->k[2], n + 1); }
        return;
    case IR_WHILE:
        tk_puts(b, "while "); dx(d, s->k[0]); tk_puts(b, ":\n");
        ds(d, s->k[1], n + 1);
        return;
    case IR_FOR:
        tk_puts(b, "for "); lname(d, s->local); tk_puts(b, " in range("); dx(d, s->k[0]); tk_puts(b, ", ");
        dx(d, s->k[1]); tk_puts(b, ", "); dx(d, s->k[2]); tk_puts(b, "):\n");
        ds(d, s->k[3], n + 1);
        return;
    case IR_PFOR:
        tk_puts(b, "pfor [");
        for (int i = 0; i < s->aux; i++) { if (i) tk_puts(b, ", "); lname(d, s->vars[i]); }
        tk_puts(b, "] < [");
        for (int i = 0; i < s->aux; i++) { if (i) tk_puts(b, ", "); dx(d, s->k[i]); }
        tk_puts(b, "]");
        if (s->off) { tk_puts(b, " from "); dx(d, s->off); }
        if (s->sub == TK_PFOR_INDEPENDENT) tk_puts(b, " independent"); /* tack.independent(...): no race check */
        if (ir_is_blocks(s)) { /* tack.blocks(n, B): the thread's variable, the block size, the shared arrays */
            tk_printf(b, " blocks of %lld, thread ", (long long)s->c.i);
            lname(d, s->local);
        }
        tk_puts(b, ":\n");
        for (int i = 0; ir_is_blocks(s) && i < d->S->nlocals; i++) {
            const tk_local *l = &d->S->locals[i];
            if (!l->shared || l->scope != d->S->locals[s->vars[0]].scope) continue;
            ind(d, n + 1);
            tk_puts(b, "shared ");
            lname(d, i);
            tk_printf(b, ": %s[", dt_name((tack_dtype)l->ty.dt));
            for (int k = 0; k < l->ty.ndim; k++) tk_printf(b, "%s%lld", k ? ", " : "", (long long)l->ashape[k]);
            tk_puts(b, "]\n");
        }
        ds(d, s->k[s->aux], n + 1);
        for (int i = 0; s->red && i < s->red->n; i++) {
            ind(d, n + 1);
            tk_puts(b, "after each chunk: ");
            dx(d, s->red->k[i]);
            tk_puts(b, "\n");
        }
        return;
    case IR_BREAK: tk_puts(b, "break"); break;
    case IR_CONTINUE: tk_puts(b, "continue"); break;
    case IR_RETURN:
        tk_puts(b, "return");
        for (int i = 0; i < s->n; i++) {
            tk_puts(b, i ? ", " : " ");
            dx(d, s->k[i]);
        }
        break;
    case IR_CHECK: {
        static const char *k[] = {"index", "zerodiv", "assert", "component", "negpow", "step", "unbound", "intfit"};
        _Static_assert(sizeof k / sizeof *k == CK_INTFIT + 1, "a name for every check kind");
        tk_printf(b, "check.%s%s #%d", k[s->sub], s->local == 1 ? ".nonneg" : s->local == 2 ? ".range" : "", s->aux);
        for (int i = 0; i < s->n; i++) { tk_puts(b, " "); dx(d, s->k[i]); }
        break;
    }
    case IR_PRINT:
        tk_puts(b, "print");
        for (int i = 0; i < s->n; i++) { tk_puts(b, " "); dx(d, s->k[i]); }
        break;
    default: tk_printf(b, "op%d", s->op); break;
    }
    tk_printf(b, "    ; line %d\n", s->line);
}

static void dump_spec(ir_dumper *d, tk_spec *S, int si) {
    d->S = S;
    tk_func *F = &d->C->m->funcs[S->func];
    tk_printf(d->b, "%s %s#%d(", si == 0 ? "kernel" : "func", F->name, si);
    for (int i = 0; i < S->nparams; i++) tk_printf(d->b, "%s%s: %s", i ? ", " : "", S->pnames[i], tyn(d, S->ptypes[i]));
    tk_puts(d->b, ")");
    if (si > 0) tk_printf(d->b, " -> %s", tyn(d, S->ret));
    if (si > 0 && S->par) { /* lowered for a call inside a parallel loop */
        tk_puts(d->b, "  parallel");
        for (int k = 0; k < S->npar_own; k++)
            if (S->par_own[k] >= 0) tk_printf(d->b, " own:%s", S->pnames[S->par_own[k]]);
    }
    if (S->written) {
        tk_puts(d->b, "  writes:");
        for (int i = 0; i < S->nparams; i++)
            if (S->written >> i & 1) tk_printf(d->b, " %s", S->pnames[i]);
    }
    tk_puts(d->b, "\n  locals:");
    for (int i = 0; i < S->nlocals; i++) {
        tk_puts(d->b, " ");
        lname(d, i);
        tk_printf(d->b, ":%s", tyn(d, S->locals[i].ty));
    }
    tk_puts(d->b, "\n");
    if (S->nchoices) { /* and/or operands and conditional expressions: line:col/k type */
        tk_puts(d->b, "  choices:");
        for (int i = 0; i < S->nchoices; i++) {
            const tk_choice *c = &S->choices[i];
            tk_type t = c->local >= 0 && c->local < S->nlocals ? S->locals[c->local].ty : c->ty;
            tk_printf(d->b, "%s %d:%d/%d %s", i ? ";" : "", c->line, c->col, c->k, tyn(d, t));
        }
        tk_puts(d->b, "\n");
    }
    ds(d, S->body, 1);
}

const char *tk_dump(tk_cc *C) {
    tk_buf b;
    tk_buf_init(&b, &C->arena);
    ir_dumper d = {C, &b, NULL};
    for (int i = 0; i < C->nspecs; i++) dump_spec(&d, C->specs[i], i);
    tk_race_dump(C, &b); /* check_races: what the detector watches (none: nothing) */
    if (!b.s) tk_puts(&b, "");
    return b.s;
}
