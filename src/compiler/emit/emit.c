/*
 * emit.c -- typed IR to C-family source: the file, its functions, and the
 * emitter's services for the dialects' kernel layouts.
 *
 * One emitter serves every C-like target; what differs between targets is
 * behind a tk_dialect (compiler.h): the prelude (types and helper
 * functions), the names of C types and math functions, how symbols are
 * exported, and how the kernel is laid out.  The emitter is three files:
 * expressions (emit_expr.c), statements (emit_stmt.c), and this one, which
 * writes the @tack.func specializations and assembles the file:
 *
 *   a comment                naming the kernel, its file and line, and the dialect
 *   prelude                  the dialect's types and helpers
 *   kernel_decls             what the layout declares ahead of the functions
 *                            (the CPU's frame struct; most dialects: nothing)
 *   static tk_fN(...)        one function per @tack.func specialization the
 *                            kernel reaches, after their prototypes
 *   the kernel               the dialect's `kernel` hook
 *
 * The layouts are the dialects' own: the CPU's (emit_cpu.c) runs parallel
 * loops as chunk functions through the runtime's parallel_for, CUDA's
 * (dialect_cuda.c) as phases on a grid.  A layout writes through the
 * services at the end of this file (tk_emitter_*), so expressions and
 * statements come out exactly as for every other target; HIP, Metal and
 * OpenCL add tables and layouts, not branches in the emitter.  The CPU
 * layout also shares the emitter's state through emit.h, because its
 * versions of a loop change how a few expressions come out (the modes
 * there).
 *
 * This file also holds the primitives every emitter file writes with
 * (P, I and a local's or a comment's text: emit.h's short names).
 */
#include <stdio.h>
#include <string.h>

#include "compiler/compiler.h"
#include "compiler/emit/emit.h"

void em_printf(tk_emitter *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tk_vprintf(e->b, fmt, ap);
    va_end(ap);
}
void em_indent(tk_emitter *e) {
    for (int i = 0; i < e->ind; i++) tk_puts(e->b, "    ");
}

/* A local's C name: v<index>[_<name>] (ASCII names only), then a copy's suffix in an unrolled loop. */
void em_local_name(tk_emitter *e, int loc) {
    const char *n = e->S->locals[loc].name;
    const char *lane = e->lane && e->S == e->K && e->S->locals[loc].scope == e->lane_scope &&
                               !(e->lane_keep && e->lane_keep[loc]) ? e->lane : "";
    P(e, "v%d", loc);
    int ascii = n != NULL;
    for (const char *c = n; ascii && *c; c++)
        ascii = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_';
    if (ascii) P(e, "_%s", n[0] == '_' ? n + 1 : n);
    P(e, "%s", lane);
}

/* Text from the user's Python (a function's name, a file path) inside a C
 * comment: printable ASCII is kept, except that "*" + "/" and "/" + "*" are
 * broken with a space so the comment can neither end nor nest; anything
 * else (control characters, bytes of non-ASCII names) is written as \ooo.
 * Nothing the user names can become code. */
void em_comment_text(tk_emitter *e, const char *s) {
    if (!s) s = "?";
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c < 32 || *c >= 127) P(e, "\\%03o", *c);
        else if ((*c == '*' && c[1] == '/') || (*c == '/' && c[1] == '*')) P(e, "%c ", *c);
        else P(e, "%c", *c);
    }
}

/* ------------------------------------------------------------ functions */
static void mark_calls(tk_cc *C, tk_ir *x, char *reach) {
    if (!x) return;
    if (x->op == IR_CALL && !reach[x->aux]) {
        reach[x->aux] = 1;
        mark_calls(C, C->specs[x->aux]->body, reach);
    }
    for (int i = 0; i < x->n; i++) mark_calls(C, x->k[i], reach);
}

/* The C type a function returns. */
static const char *ret_type(tk_emitter *e, const tk_spec *S) {
    if (S->ret.kind == TY_TUPLE) return tk_fmt(&e->C->arena, "tk_tup%d", ty_tuple_spec(S->ret));
    return S->ret.kind == TY_VALUE ? ctype(e, S->ret.dt) : "void";
}

static void func_signature(tk_emitter *e, tk_spec *S, int si) {
    const char *th = e->D->thread_ptr ? e->D->thread_ptr : "";
    const char *qual = e->D->func_qual ? e->D->func_qual : "static";
    if (!e->D->func_qual && e->T->simd_pragma && e->C->opts.optimize && !e->rcf && em_lane_func(e->C, si))
        qual = "static inline __attribute__((always_inline))"; /* for SIMD lanes (emit_lanes.c, em_lane_func) */
    P(e, "%s %s tk_%c%d(%s, const %stk_abi *abi", qual, ret_type(e, S),
      e->rcf ? 'w' : 'f', si, e->D->ctx_param ? e->D->ctx_param : "tk_ctx *ctx", th);
    if (e->rcf) em_race_params(e, S); /* check_races: a watched copy (race_watch.c) */
    for (int p = 0; p < S->nparams; p++) {
        tk_type t = S->ptypes[p];
        if (t.kind == TY_ARRAY) {
            if (p < 64 && (S->plarr >> p & 1)) /* a local array: private (f16, bf16: its bits, as a parameter's) */
                P(e, ", %s%s *a%d", th, dt_is_half(t.dt) ? "uint16_t" : ctype(e, t.dt), p);
            else P(e, ", %s *a%d", e->D->storage_type((tack_dtype)t.dt), p);
            for (int k = 0; k < t.ndim; k++) P(e, ", int64_t a%d_s%d", p, k);
            for (int k = 0; t.strided && k < t.ndim; k++) P(e, ", int64_t a%d_t%d", p, k);
        } else {
            P(e, ", %s ", ctype(e, t.dt));
            local_name(e, S->plocal[p]);
        }
    }
    P(e, ")");
}

/* Whether spec si has a watched copy (race_watch.c): 0 or 1. */
static int watched_copy(const tk_cc *C, int si) { return C->rcspec && C->rcspec[si] ? 1 : 0; }

/* The body of @tack.func specialization si (e->rcf: its watched copy). */
static void function(tk_emitter *e, int si) {
    tk_cc *C = e->C;
    tk_spec *S = C->specs[si];
    e->S = S;
    e->si = si;
    e->fn = TK_FN_DEVICE;
    P(e, "\n/* ");
    comment_text(e, C->m->funcs[S->func].name);
    P(e, ", line %d%s */\n", C->m->funcs[S->func].first_line, e->rcf ? ", watched by the race detector" : "");
    func_signature(e, S, si);
    P(e, " {\n");
    e->ind = 1;
    I(e); P(e, "(void)ctx; (void)abi;\n");
    if (e->rcf) em_race_unused(e, S);
    poll_budget(e, 0);
    if (em_returns_value(S)) { I(e); P(e, "const %s tk_zero = {0};\n", ret_type(e, S)); }
    declare_locals(e, -1, 1, NULL, 0);
    block(e, S->body);
    if (em_returns_value(S)) { I(e); P(e, "return tk_zero;\n"); }
    e->ind = 0;
    P(e, "}\n");
}

/* The @tack.func specializations reachable from kernel K into `funcs`: the
 * structs of the tuples they return, their prototypes, their bodies. */
static void functions(tk_emitter *e, tk_spec *K, tk_buf *funcs) {
    tk_cc *C = e->C;
    char *reach = tk_alloc(&C->arena, (size_t)C->nspecs + 1);
    mark_calls(C, K->body, reach);
    e->b = funcs;
    for (int si = 1; si < C->nspecs; si++) { /* the tuples functions return: a struct each */
        tk_spec *S = C->specs[si];
        if (!reach[si] || S->ret.kind != TY_TUPLE) continue;
        P(e, "typedef struct tk_tup%d {", si);
        for (int i = 0; i < S->nret; i++) P(e, " %s f%d;", ctype(e, S->rets[i].dt), i);
        P(e, " } tk_tup%d;\n", si);
    }
    /* each function, and after it its watched copy where a watched loop calls it (check_races) */
    for (int si = 1; si < C->nspecs; si++) {
        if (!reach[si]) continue;
        e->S = C->specs[si];
        for (e->rcf = 0; e->rcf <= watched_copy(C, si); e->rcf++) {
            func_signature(e, e->S, si);
            P(e, ";\n");
        }
    }
    e->rcf = 0;
    for (int si = 1; si < C->nspecs; si++) {
        if (!reach[si]) continue;
        for (e->rcf = 0; e->rcf <= watched_copy(C, si); e->rcf++) function(e, si);
    }
    e->rcf = 0;
}

const char *tk_emit(tk_cc *C) {
    tk_emitter ev;
    memset(&ev, 0, sizeof ev);
    tk_emitter *e = &ev;
    e->brk = -1;
    e->C = C;
    e->D = C->dialect;
    e->T = C->target;
    tk_buf out, funcs;
    tk_buf_init(&out, &C->arena);
    tk_buf_init(&funcs, &C->arena);
    tk_spec *K = C->specs[0];
    e->K = K;
    e->mayfail = tk_may_fail(C);
    tk_func *KF = &C->m->funcs[K->func];

    functions(e, K, &funcs);

    /* assemble: the prelude, the layout's declarations, the functions, the kernel */
    e->b = &out;
    P(e, "/* generated by tack %s for kernel ", TACK_VERSION_STRING);
    comment_text(e, KF->name);
    P(e, " (");
    comment_text(e, KF->filename);
    P(e, ":%d); dialect %s */\n", KF->first_line, e->T->name);
    if (C->opts.flush_denormals) /* in every cache key, since each hashes the source */
        P(e, "/* flush_denormals: subnormal floats flush to zero while it runs */\n");
    e->D->prelude(C, &out);
    e->S = K;
    e->si = 0;
    e->fn = TK_FN_ENTRY;
    e->ind = 0;
    if (e->D->kernel_decls) e->D->kernel_decls(e, &out);
    if (funcs.len) tk_puts(&out, funcs.s);
    P(e, "\n");
    e->D->kernel(e, &out);
    return out.s;
}

/* ------------------------------------------- services for dialect layouts */
tk_cc *tk_emitter_cc(tk_emitter *e) { return e->C; }
const char *tk_emitter_restrict(tk_emitter *e, int p, const char *restrict_kw) {
    const tk_cc *C = e->C;
    return C->args && p < C->nargs && C->args[p].is_array && C->args[p].distinct ? restrict_kw : "";
}
tk_spec *tk_emitter_kernel(tk_emitter *e) { return e->K; }
tk_buf *tk_emitter_target(tk_emitter *e, tk_buf *b, tk_emit_fn fn) {
    tk_buf *old = e->b;
    e->b = b;
    e->fn = fn;
    e->S = e->K;
    return old;
}
void tk_emitter_printf(tk_emitter *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tk_vprintf(e->b, fmt, ap);
    va_end(ap);
}
void tk_emitter_indent(tk_emitter *e) { I(e); }
void tk_emitter_nest(tk_emitter *e, int delta) { e->ind += delta; }
void tk_emitter_expr(tk_emitter *e, tk_ir *x) { ex(e, x); }
void tk_emitter_stmt(tk_emitter *e, tk_ir *s) { st(e, s); }
void tk_emitter_local(tk_emitter *e, int local) { local_name(e, local); }
void tk_emitter_declare_locals(tk_emitter *e, int scope, const char *mask, int in) {
    declare_locals(e, scope, 0, mask, in);
}
void tk_emitter_blocks_body(tk_emitter *e, const tk_ir *body) {
    e->bbody = body;
    e->bchecked = 0;
    e->bclear = 0;
}
void tk_emitter_lane(tk_emitter *e, const char *suffix, int scope, const char *keep) {
    e->lane = suffix;
    e->lane_scope = scope;
    e->lane_keep = keep;
}
