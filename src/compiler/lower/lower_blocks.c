/*
 * lower_blocks.c -- blocks of cooperating threads: `for b, t in
 * tack.blocks(n_blocks, B):`, tack.shared(shape, dtype) and tack.barrier().
 *
 * Part of lowering (lower.c has the essay).  Every other parallel loop of a
 * kernel is a set of independent iterations; a blocks loop is n_blocks
 * blocks of B threads each, B a compile-time constant, where the threads of
 * one block share the arrays made by tack.shared (one per block) and wait
 * for each other at tack.barrier().  The spelling keeps Tack's rule that
 * the loops at the top level of a kernel are the parallel ones: the loop
 * has two variables, the block's index b (0 <= b < n_blocks) and the
 * thread's t (0 <= t < B), and its body is what one thread of one block
 * runs.  docs/design/decisions.md ("Blocks") says why this spelling.
 *
 * The loop is an IR_PFOR over the blocks (sub TK_PFOR_BLOCKS, one axis,
 * vars[0] = b) whose `local` is t and c.i is B; a shared array is a local
 * array of the loop's scope marked `shared` (no fill: its elements are
 * unspecified until written, as on every GPU -- the CPU gives zeros); a
 * barrier is an IR_BARRIER statement.  What each target makes of them:
 * the GPUs run a block as a work-group / thread block of exactly B threads
 * (layout_grid.c), the CPU runs a block per parallel iteration and its
 * threads as a loop split at each barrier (cpu/emit_blocks.c).
 *
 * The rules checked here, each a CompileError naming the place:
 *
 *   - B is a constant from 1 to the target's most threads a block
 *     (target.h, 1024), and the loop's target is two names;
 *   - tack.shared only directly in the body of a blocks loop (not under an
 *     if or a loop, not in a @tack.func), of constant shape, and the
 *     block's shared arrays together within the target's shared memory
 *     (target.h's shared_bytes; the message names the other targets');
 *   - tack.barrier() only in the body of a blocks loop of the kernel, not
 *     under control flow that depends on the thread index: an if, a while
 *     or a loop's bounds computed from t (directly, through locals, or
 *     through an array element at an index computed from t) would let
 *     threads of one block reach different barriers, which is undefined on
 *     a GPU and cannot be split on the CPU.  Conditions that read memory at
 *     indices that do not depend on t the compiler cannot judge; the CPU
 *     checks at run time that every thread agrees (a ValueError naming the
 *     line) and the GPUs assume it;
 *   - no `break`, `continue` or `return` that would leave a region between
 *     barriers: only inside a serial loop with no barrier of its own (the
 *     CPU runs the threads of such a region in a loop of its own), and a
 *     `while` around a barrier must have a condition that needs no
 *     statements (it becomes `while True: ... break` otherwise).
 *
 * The race check does not judge a blocks loop (its threads talk through
 * memory on purpose), and the passes that reorder a parallel loop's
 * iterations or move code across them (nests, tile, strength, privatize)
 * leave it alone (ir_is_blocks).
 */
#include <string.h>

#include "compiler/lower/lower.h"
#include "compiler/target.h"

/* The value of block size `n`, a compile-time constant (lower_local.c's rule). */
static int64_t block_size(lw_state *L, tack_node *n) {
    int64_t v;
    if (!lw_const_int(n, &v))
        ERR(n, "the block size of tack.blocks(n_blocks, block_size) must be a compile-time constant (an int "
               "literal, a module-level int constant or arithmetic on them)%s%s%s",
            n->kind == TACK_N_NAME ? ", and '" : "", n->kind == TACK_N_NAME ? n->name : "",
            n->kind == TACK_N_NAME ? "' is a variable" : "");
    const tk_target *T = L->C->target;
    if (v < 1 || v > T->max_block)
        ERR(n, "block size %lld is out of range: a block has 1 to %d threads on %s", (long long)v, T->max_block,
            T->device);
    return v;
}

/* ----------------------------------------------------- the uniformity walk
 * Which locals hold values that depend on the thread index (`vary`), to a
 * fixed point; then every barrier under control that depends on it is an
 * error. */
typedef struct uni {
    lw_state *L;
    char *vary;
    int changed;
    const tk_ir *why;  /* the statement whose control varies, for the message */
} uni;

static int varies(uni *U, const tk_ir *x) {
    switch (x->op) {
    case IR_LOCAL: return U->vary[x->local];
    case IR_LLOAD:
        if (!U->L->S->locals[x->local].shared && U->vary[x->local]) return 1;
        break;
    case IR_ATOMIC: return 1; /* each thread gets another old value */
    case IR_WARP: return 1;   /* each lane gets another lane's value */
    default: break;
    }
    for (int i = 0; i < x->n; i++)
        if (varies(U, x->k[i])) return 1;
    return 0;
}

static void mark(uni *U, int local) {
    if (local >= 0 && !U->vary[local]) {
        U->vary[local] = 1;
        U->changed = 1;
    }
}

/* Mark the locals statement s sets from varying values or under varying control (cv). */
static void flow(uni *U, const tk_ir *s, int cv) {
    switch (s->op) {
    case IR_BLOCK:
        for (int i = 0; i < s->n; i++) flow(U, s->k[i], cv);
        return;
    case IR_ASSIGN:
    case IR_SETCOMP:
        if (cv || varies(U, s)) mark(U, s->local);
        return;
    case IR_LSTORE:
        if (!U->L->S->locals[s->local].shared && (cv || varies(U, s))) mark(U, s->local);
        return;
    case IR_IF:
        flow(U, s->k[1], cv || varies(U, s->k[0]));
        flow(U, s->k[2], cv || varies(U, s->k[0]));
        return;
    case IR_WHILE:
        flow(U, s->k[1], cv || varies(U, s->k[0]));
        return;
    case IR_FOR: {
        int v = cv || varies(U, s->k[0]) || varies(U, s->k[1]) || varies(U, s->k[2]);
        if (v) mark(U, s->local);
        flow(U, s->k[3], v);
        return;
    }
    default: return;
    }
}

static int has_barrier(const tk_ir *s) {
    if (s->op == IR_BARRIER) return 1;
    if (s->op != IR_BLOCK && s->op != IR_IF && s->op != IR_WHILE && s->op != IR_FOR) return 0;
    for (int i = 0; i < s->n; i++)
        if (has_barrier(s->k[i])) return 1;
    return 0;
}

/* A barrier under varying control, or a jump out of a region, is an error. */
static void judge(uni *U, const tk_ir *s, const tk_ir *cv, int free_loop, const char *tname) {
    lw_state *L = U->L;
    switch (s->op) {
    case IR_BLOCK:
        for (int i = 0; i < s->n; i++) judge(U, s->k[i], cv, free_loop, tname);
        return;
    case IR_BARRIER:
        if (cv && s->str) /* a collective's: it holds barriers */
            tk_error(L->C, L->fidx, s->line, 0,
                     "tack.%s() under control flow that depends on the thread index '%s' (the %s at line %d): "
                     "it holds barriers, and threads of one block would reach different barriers; every thread "
                     "of a block must reach it, so move it out of the %s", s->str, tname,
                     cv->op == IR_IF ? "if" : "loop", cv->line, cv->op == IR_IF ? "if" : "loop");
        else if (cv)
            tk_error(L->C, L->fidx, s->line, 0,
                     "tack.barrier() under control flow that depends on the thread index '%s' (the %s at line %d): "
                     "threads of one block would reach different barriers; every thread of a block must reach "
                     "every barrier, so move the barrier out of the %s", tname,
                     cv->op == IR_IF ? "if" : "loop", cv->line, cv->op == IR_IF ? "if" : "loop");
        return;
    case IR_BREAK:
    case IR_CONTINUE:
    case IR_RETURN:
        if (!free_loop)
            tk_error(L->C, L->fidx, s->line, 0,
                     "'%s' in a blocks loop may only leave a serial loop that has no tack.barrier() of its own: "
                     "a block's threads run together between barriers, and a jump out of that stretch would "
                     "skip a barrier for one thread", s->op == IR_BREAK ? "break" : s->op == IR_CONTINUE ? "continue" : "return");
        return;
    case IR_IF: {
        const tk_ir *c = cv ? cv : varies(U, s->k[0]) ? s : NULL;
        judge(U, s->k[1], c, free_loop, tname);
        judge(U, s->k[2], c, free_loop, tname);
        return;
    }
    case IR_WHILE:
    case IR_FOR: {
        int bar = has_barrier(s->op == IR_FOR ? s->k[3] : s->k[1]);
        int v = s->op == IR_FOR ? varies(U, s->k[0]) || varies(U, s->k[1]) || varies(U, s->k[2]) : varies(U, s->k[0]);
        const tk_ir *c = cv ? cv : v ? s : NULL;
        for (int i = 0; bar && s->op == IR_WHILE && i < s->k[1]->n; i++) { /* while True: pre; if not c: break */
            const tk_ir *x = s->k[1]->k[i];
            if (x->op == IR_IF && x->line == s->line && x->k[1]->n == 1 && x->k[1]->k[0]->op == IR_BREAK)
                tk_error(L->C, L->fidx, s->line, 0,
                         "a while loop around tack.barrier() needs a condition of locals and constants: this one "
                         "is computed by statements (a call, a checked load); compute it into a local before the "
                         "loop and again at the end of its body");
        }
        judge(U, s->op == IR_FOR ? s->k[3] : s->k[1], c, bar ? 0 : 1, tname);
        return;
    }
    default: return;
    }
}

/* for b, t in tack.blocks(n_blocks, B) at the top of a kernel. */
void lw_blocks_pfor(lw_state *L, tack_node *n, tack_node *it, int parallel) {
    tack_node *t = n->kids[0], *body = n->kids[2];
    if (!parallel)
        ERR(it, "tack.blocks() is a parallel loop: it must be a for loop at the top level of a kernel");
    if (t->kind != TACK_N_TUPLE || t->nkids != 2 || t->kids[0]->kind != TACK_N_NAME || t->kids[1]->kind != TACK_N_NAME)
        ERR(t, "a blocks loop has two variables, the block's index and the thread's: for b, t in "
               "tack.blocks(n_blocks, block_size)");
    if (it->nkids != 2) ERR(it, "tack.blocks() takes two arguments, n_blocks and block_size, got %d", it->nkids);
    int64_t bs = block_size(L, it->kids[1]);
    tk_ir *nb = lw_expr(L, it->kids[0]);
    if (lw_known(nb) && !ty_is_int(nb->ty) && !ty_is_bool(nb->ty))
        ERR(it->kids[0], "tack.blocks(): n_blocks must be an integer, not %s", TN(nb->ty));
    nb = lw_cast(L, nb, ty_value(TACK_I64));
    if (lw_known(nb) && nb->op != IR_CONST && nb->op != IR_SHAPE && !(nb->op == IR_CAST && nb->k[0]->op == IR_SHAPE)) {
        int tmp = lw_temp(L, nb->ty); /* evaluated once, before the loop */
        lw_emit(L, lw_assign_ir(L, tmp, nb, it->line));
        nb = lw_local_ref(L, tmp, it->line);
    }
    int id = L->npfor++;
    tk_ir *pf = lw_mk(L, IR_PFOR, ty_void(), n);
    pf->aux = 1;
    pf->sub = TK_PFOR_BLOCKS;
    pf->c.i = bs;
    pf->vars = tk_alloc(&L->C->arena, sizeof(int) * TACK_MAX_NDIM);
    ir_push(L->C, pf, nb);
    int saved_pfor = L->pfor;
    L->pfor = id;
    int vb = lw_target_local(L, t->kids[0]), vt = lw_target_local(L, t->kids[1]);
    for (int k = 0; k < 2; k++) {
        tk_local *l = &L->S->locals[k ? vt : vb];
        if (!ty_eq(l->ty, ty_weak(TACK_I64))) {
            if (l->ty.kind != TY_UNKNOWN) ERR(t->kids[k], "loop variable '%s' is also assigned a %s", l->name, TN(l->ty));
            l->ty = ty_weak(TACK_I64);
            L->changed = 1;
        }
    }
    pf->vars[0] = vb;
    pf->local = vt;
    pf->param = lw_site(L, CK_STEP, n->line, 0, NULL,
                        tk_fmt(&L->C->arena, "the threads of a block disagree on a condition or loop bound around "
                                             "tack.barrier() in the blocks loop at line %d: every thread of a block "
                                             "must reach the same barriers", n->line));
    tk_ir *b = lw_mk(L, IR_BLOCK, ty_void(), body);
    int sd = L->depth;
    tk_ir *saved_bpf = L->bpf;
    L->depth++;
    L->bpf = pf;
    lw_refuse_assigned_pfor_vars(L, t, body);
    L->npfor_vars = 0; /* neither b nor t alone names an element no other thread touches */
    unsigned char *before = lw_da_save(L);
    lw_da_set(L, vb);
    lw_da_set(L, vt);
    lw_block_into(L, body, b);
    lw_da_restore(L, before);
    L->bpf = saved_bpf;
    L->depth = sd;
    L->pfor = saved_pfor;
    ir_push(L->C, pf, b);
    /* the rules on barriers and jumps, over the body as lowered */
    uni U = {L, tk_alloc(&L->C->arena, (size_t)L->S->nlocals + 1), 0, NULL};
    U.vary[vt] = 1;
    do {
        U.changed = 0;
        flow(&U, b, 0);
    } while (U.changed);
    judge(&U, b, NULL, 0, t->kids[1]->name);
    lw_emit(L, pf);
}

/* tack.barrier(): a statement in the body of a blocks loop. */
void lw_barrier(lw_state *L, tack_node *n) {
    if (!L->is_kernel || !L->bpf)
        ERR(n, "tack.barrier() is only allowed in the body of a blocks loop (for b, t in tack.blocks(n, size)) "
               "of a kernel%s", L->is_kernel ? "" : ", not in a @tack.func");
    lw_emit(L, lw_mk(L, IR_BARRIER, ty_void(), n));
}

/* x = tack.shared(shape, dtype): checked here, made by lw_create_array. */
void lw_blocks_shared(lw_state *L, tack_node *call, int loc, int64_t bytes) {
    if (!L->is_kernel || !L->bpf)
        ERR(call, "tack.shared() makes an array shared by the threads of a block: it is only allowed in the body "
                  "of a blocks loop (for b, t in tack.blocks(n, size)) of a kernel%s",
            L->is_kernel ? "" : ", not in a @tack.func");
    if (L->depth != 1 && !L->S->locals[loc].shared) /* shared already: a collective's scratch (below) */
        ERR(call, "tack.shared() must be at the top of the blocks loop's body, not under an if or a loop: "
                  "every thread of the block makes the one array");
    tk_local *l = &L->S->locals[loc];
    l->shared = 1;
    const tk_target *T = L->C->target;
    int64_t total = bytes;
    for (int i = 0; i < L->S->nlocals; i++) {
        const tk_local *o = &L->S->locals[i];
        if (i == loc || !o->shared || o->scope != l->scope || o->ty.kind != TY_ARRAY) continue;
        total += tk_local_elems(o) * (int64_t)tack_dtype_get((tack_dtype)o->ty.dt)->itemsize;
    }
    if (total > T->shared_bytes) {
        const tk_target *O = NULL;
        for (int i = 0; tk_target_at(i); i++)
            if (tk_target_at(i)->shared_bytes != T->shared_bytes) { O = tk_target_at(i); break; }
        ERR(call, "the shared arrays of this block take %lld bytes with '%s', and a block may share at most %lld "
                  "bytes on %s (target \"%s\")%s",
            (long long)total, l->name, (long long)T->shared_bytes, T->device, T->name,
            O ? tk_fmt(&L->C->arena, "; %lld on \"%s\"", (long long)O->shared_bytes, O->name) : "");
    }
}

/* ------------------------------------------------------ block collectives
 * r = tack.block_sum(v) (block_min, block_max) and r = tack.block_scan(v):
 * every thread of the block gives a value and gets the block's sum (min,
 * max) or the inclusive prefix sum over threads 0 .. t.  Each is written
 * here, once for every target, as what a user would write: a shared
 * scratch array of B elements of v's type, and barriers --
 *
 *   reduce: s[t] = v; barrier; then for each stride P/2, P/4, ..., 1 (P the
 *           power of two at or above B) `if t < min(stride, B - stride):
 *           s[t] = s[t] op s[t + stride]`; barrier -- a tree, log2 P steps;
 *           r = s[0]; barrier;
 *   scan:   s[t] = v; barrier; then for each offset 1, 2, 4, ... below B
 *           `x = s[t - off] if t >= off else 0`; barrier; `s[t] += x`;
 *           barrier (Hillis and Steele); r = s[t]; barrier.
 *
 * On a target with warp32_shuffles and a block size that is a multiple of
 * 32, a reduction's strides from P/2 down to 32 are as above and the last
 * five are exchanges: x = s[t]; then at stride 16, 8, ..., 1 x = x op (x of
 * lane + stride); thread 0 stores x in s[0]; barrier.  The tree's strides
 * below 32 touch s[0 .. 31] only, with min(stride, B - stride) = stride, so
 * lane 0 ends with s[0]'s bits by the argument of the sub-group reductions
 * below, and four barriers and the shared traffic of those strides go.  The
 * other warps run the same exchanges on values no one reads: under `if t <
 * 32` the compiler (ptxas) cannot know that warp 0 is whole, and adds a
 * second, divergent copy of the shuffles.  A scan's offsets below 32 read
 * across warps (thread 32 reads thread 31): it stays.
 *
 * The last barrier lets the same call run again (in a loop) without a
 * thread overwriting the scratch another still reads.  The value's type is
 * its concrete type (a Python int: i64, a Python float: the default
 * float); integer sums wrap, as every integer sum does.  A collective holds
 * barriers, so it obeys their rules (lw_blocks_pfor's judge); in debug mode
 * each thread's value goes to the block and the result comes back between
 * two barriers (tack._debug), so it is only the whole value of an
 * assignment to a name, here too. */
static tk_ir *c64(lw_state *L, int64_t v, int line) { return ir_const_i(L->C, ty_value(TACK_I64), v, line); }

static tk_ir *sload(lw_state *L, int s, tk_type et, tk_ir *idx, int line) {
    tk_ir *ld = ir_new(L->C, IR_LLOAD, et, line);
    ld->local = s;
    ir_push(L->C, ld, idx);
    return ld;
}

static void sstore(lw_state *L, int s, tk_ir *v, tk_ir *idx, int line) {
    tk_ir *st = ir_new(L->C, IR_LSTORE, ty_void(), line);
    st->local = s;
    ir_push(L->C, st, v);
    ir_push(L->C, st, idx);
    lw_emit(L, st);
}

/* A collective's barrier: its str names the collective, for the errors of judge(). */
static void barrier_at(lw_state *L, int line) {
    tk_ir *b = ir_new(L->C, IR_BARRIER, ty_void(), line);
    b->str = L->bcoll;
    lw_emit(L, b);
}

/* if cond: body (statements lowered by the caller into the block returned) */
static tk_ir *if_block(lw_state *L, tk_ir *cond, int line) {
    tk_ir *iff = ir_new(L->C, IR_IF, ty_void(), line);
    tk_ir *then = ir_new(L->C, IR_BLOCK, ty_void(), line);
    ir_push(L->C, iff, cond);
    ir_push(L->C, iff, then);
    ir_push(L->C, iff, ir_new(L->C, IR_BLOCK, ty_void(), line));
    lw_emit(L, iff);
    return then;
}

static void warp_op(lw_state *L, tack_node *target, tack_node *call, int op, const char *name);

enum { TK_WARP = 32 }; /* the threads of a sub-group (below) */

/* An exchange among the lanes of a warp (IR_WARP; sub-groups as warps, below). */
static tk_ir *warp_x(lw_state *L, int kind, tk_type ty, tk_ir *v, tk_ir *lane, int64_t w, int line) {
    tk_ir *x = ir_new(L->C, IR_WARP, ty, line);
    x->sub = kind;
    x->c.i = w;
    ir_push(L->C, x, v);
    if (lane) ir_push(L->C, x, lane);
    return x;
}

/* A local holding e (evaluated now). */
static int into_temp(lw_state *L, tk_ir *e, int line) {
    int t = lw_temp(L, e->ty);
    lw_emit(L, lw_assign_ir(L, t, e, line));
    return t;
}

/* Whether the target's sub-groups are warps whose lanes exchange registers (warp32_shuffles, not
 * turned off by the warp_shuffles setting). */
static int warps_native(const lw_state *L) { return L->C->target->warp32_shuffles && L->C->warp_shuffles; }

/* Local x <- x bop (x of lane + stride) at stride 16, 8, ..., 1: a tree's strides below 32 as
 * exchanges, in the scratch tree's operand order. */
static void warp_tree(lw_state *L, int x, int bop, tk_type et, int line) {
    for (int64_t stride = TK_WARP / 2; stride >= 1; stride /= 2) {
        int y = into_temp(L, warp_x(L, WARP_DOWN, et, lw_local_ref(L, x, line), c64(L, stride, line), TK_WARP, line), line);
        lw_emit(L, lw_assign_ir(L, x, lw_bin(L, bop, et, lw_local_ref(L, x, line), lw_local_ref(L, y, line), line), line));
    }
}

static const char *const names[] = {"block_sum", "block_min", "block_max", "block_scan", "warp_sum", "warp_min",
                                    "warp_max", "shuffle", "shuffle_down", "warp_ballot", "warp_any", "warp_all"};

static void collective(lw_state *L, tack_node *target, tack_node *call, int op) {
    const char *name = names[op];
    int line = call->line;
    if (!L->is_kernel || !L->bpf)
        ERR(call, "tack.%s() is only allowed in the body of a blocks loop (for b, t in tack.blocks(n, size)) of a "
                  "kernel%s", name, L->is_kernel ? "" : ", not in a @tack.func");
    if (op >= 4) {
        warp_op(L, target, call, op, name);
        return;
    }
    if (call->nkids != 1) ERR(call, "tack.%s() takes one value, got %d", name, call->nkids);
    tk_ir *v = lw_expr(L, call->kids[0]);
    if (!lw_known(v)) {
        lw_assign_local(L, lw_target_local(L, target), v, target);
        return;
    }
    if (v->ty.kind != TY_VALUE || !ty_is_scalar(v->ty) || ty_is_bool(v->ty) || ty_is_complex(v->ty))
        ERR(call->kids[0], "tack.%s() of %s: the value is an integer or a real float", name, TN(v->ty));
    tk_type et = ty_concrete(v->ty);
    if (dt_is_half(et.dt)) et = ty_value(TACK_F32);
    v = lw_hoist(L, lw_cast(L, v, et));
    tk_ir *pf = L->bpf;
    int64_t B = pf->c.i;
    int s = tk_new_local(L->C, L->S, tk_fmt(&L->C->arena, "_%s%d", name, L->ntemps++),
                         (tk_type){TY_ARRAY, (uint8_t)et.dt, 1, 0, 0}, L->pfor);
    L->S->locals[s].ashape[0] = B;
    L->S->locals[s].declared = L->S->locals[s].read = 1;
    L->S->locals[s].shared = 1;
    lw_blocks_shared(L, call, s, B * (int64_t)tack_dtype_get((tack_dtype)et.dt)->itemsize);
    tk_ir *t = lw_cast(L, lw_local_ref(L, pf->local, line), ty_value(TACK_I64));
    sstore(L, s, v, t, line);
    barrier_at(L, line);
    tk_type b1 = ty_value(TACK_BOOL);
    tk_ir *saved = L->blk;
    if (op != 3) {
        int64_t P = 1;
        while (P < B) P *= 2;
        int bop = op == 0 ? B_ADD : op == 1 ? B_MIN : B_MAX;
        int warps = warps_native(L) && B % TK_WARP == 0;
        for (int64_t stride = P / 2; stride >= (warps ? TK_WARP : 1); stride /= 2) {
            int64_t lim = stride < B - stride ? stride : B - stride;
            if (lim > 0) {
                tk_ir *c = lw_bin(L, B_LT, b1, ir_clone(L->C, t), c64(L, lim, line), line);
                c->aux_ty = ty_value(TACK_I64);
                L->blk = if_block(L, c, line);
                tk_ir *x = sload(L, s, et, ir_clone(L->C, t), line);
                tk_ir *y = sload(L, s, et, lw_bin(L, B_ADD, ty_value(TACK_I64), ir_clone(L->C, t), c64(L, stride, line), line), line);
                sstore(L, s, lw_bin(L, bop, et, x, y, line), ir_clone(L->C, t), line);
                L->blk = saved;
            }
            barrier_at(L, line);
        }
        if (warps) { /* strides 16 .. 1 as exchanges: every warp runs them (no branch), warp 0's count */
            int x = into_temp(L, sload(L, s, et, ir_clone(L->C, t), line), line);
            warp_tree(L, x, bop, et, line);
            tk_ir *first = lw_bin(L, B_EQ, b1, ir_clone(L->C, t), c64(L, 0, line), line);
            first->aux_ty = ty_value(TACK_I64);
            L->blk = if_block(L, first, line);
            sstore(L, s, lw_local_ref(L, x, line), c64(L, 0, line), line);
            L->blk = saved;
            barrier_at(L, line);
        }
        lw_assign_local(L, lw_target_local(L, target), sload(L, s, et, c64(L, 0, line), line), target);
    } else {
        int x = lw_temp(L, et);
        for (int64_t off = 1; off < B; off *= 2) {
            lw_emit(L, lw_assign_ir(L, x, ty_is_float(et) ? ir_const_f(L->C, et, 0.0, line) : ir_const_i(L->C, et, 0, line), line));
            tk_ir *c = lw_bin(L, B_GE, b1, ir_clone(L->C, t), c64(L, off, line), line);
            c->aux_ty = ty_value(TACK_I64);
            L->blk = if_block(L, c, line);
            lw_emit(L, lw_assign_ir(L, x, sload(L, s, et, lw_bin(L, B_SUB, ty_value(TACK_I64), ir_clone(L->C, t), c64(L, off, line), line), line), line));
            L->blk = saved;
            barrier_at(L, line);
            sstore(L, s, lw_bin(L, B_ADD, et, sload(L, s, et, ir_clone(L->C, t), line), lw_local_ref(L, x, line), line),
                   ir_clone(L->C, t), line);
            barrier_at(L, line);
        }
        lw_assign_local(L, lw_target_local(L, target), sload(L, s, et, ir_clone(L->C, t), line), target);
    }
    barrier_at(L, line);
}

void lw_block_collective(lw_state *L, tack_node *target, tack_node *call, int op) {
    L->bcoll = names[op];
    collective(L, target, call, op);
    L->bcoll = NULL;
}

/* ------------------------------------------------------- sub-groups
 * The sub-group ("warp") operations work on sub-groups of TK_WARP = 32
 * consecutive threads of a block (threads 0-31, 32-63, ...), the width of
 * the language, not of a device: a warp_sum's float order, a ballot's bits
 * and a shuffle's lanes are then the same on every target, where devices
 * have 8 to 64 lanes (docs/design/decisions.md, "Blocks").  The block size
 * must be a multiple of 32 to use them, and a shuffle's optional width a
 * power of two dividing 32 (CompileErrors).  They are written as the block
 * collectives are: the block's values in a shared scratch array between
 * two barriers, so every thread of the block must reach them (a target
 * with warp32_shuffles gets the warp's exchanges instead, with the same
 * results and the same rules: warp_native below):
 *
 *   warp_sum/min/max(v)     a tree over each sub-group's 32 values;
 *   shuffle(v, lane[, w])   the value of lane `lane % w` of the thread's
 *                           group of w lanes (CUDA's __shfl_sync);
 *   shuffle_down(v, d[, w]) the value of lane + d, or the thread's own v
 *                           where that passes the group's end (__shfl_down_sync);
 *   warp_ballot(c)          an i64 whose bit k is lane k's c;
 *   warp_any(c), warp_all(c) whether some, every lane's c is true. */
static tk_ir *ibin(lw_state *L, int op, tk_ir *a, tk_ir *b, int line) { return lw_bin(L, op, ty_value(TACK_I64), a, b, line); }

static tk_ir *icmp(lw_state *L, int op, tk_ir *a, tk_ir *b, int line) {
    tk_ir *c = lw_bin(L, op, ty_value(TACK_BOOL), a, b, line);
    c->aux_ty = ty_value(TACK_I64);
    return c;
}

/* ------------------------------------------------- sub-groups as warps
 * On a target with warp32_shuffles (target.h), the 32 threads of a
 * sub-group are the lanes of one hardware warp (CUDA) or all or half of one
 * wavefront (HIP on 32 or 64 lanes), and the operations are exchanges of
 * registers (IR_WARP; CUDA's __shfl_sync and __ballot_sync, HIP's __shfl
 * with a width and __ballot), written so that every lane gets the bits the
 * scratch form above gives:
 *
 *   warp_sum/min/max   the same tree: at each stride 16, 8, ..., 1 a lane
 *                      combines its value with that of lane + stride,
 *                      fetched by a shuffle down, in the scratch form's
 *                      operand order and with the same IR operation.  A
 *                      lane below the stride holds exactly the scratch
 *                      array's element (it reads lanes below twice the
 *                      stride, which held theirs at the step before); the
 *                      other lanes compute values nobody reads, where the
 *                      scratch form leaves its elements alone.  Lane 0's
 *                      result then goes to every lane (a shuffle from 0);
 *   warp_ballot/any/all  the hardware's vote: bit k is lane k's condition;
 *   shuffle(v, l, w)   the lane `l % w` (Python's modulo, as the scratch
 *                      form's index) of the thread's group of w lanes;
 *   shuffle_down(v, d, w)  a shuffle down where d is a constant from 0 to
 *                      31 (PTX takes d's low five bits, so any other d would
 *                      differ); else a shuffle from lane (lane + d) % w of
 *                      the group and the thread's own value where lane + d
 *                      is outside it, as the scratch form decides.
 *
 * One barrier comes before the exchanges: every thread of the block must
 * still reach the operation (the same rules -- judge above sees the
 * barrier -- and the same CompileErrors), the memory a thread wrote before
 * it is seen by every thread of the block after it, as with the scratch
 * form's barriers, and a thread whose check failed before the operation (it
 * goes on at the barrier, emit_stmt.c) still takes part in the exchanges,
 * which need all 32 lanes.  The value and the lane are computed into locals
 * before that barrier, as the scratch form stores the value before its
 * first. */
static void warp_native(lw_state *L, tack_node *target, tack_node *call, int op, tk_ir *v, tk_ir *a, tk_type et,
                        int64_t w) {
    int line = call->line;
    tk_type i64 = ty_value(TACK_I64);
    int xv = into_temp(L, v, line); /* before the barrier */
    int xa = a ? into_temp(L, a, line) : -1;
    int xg = -1;
    int64_t d = -1;
    int down = op == 8 && lw_const_int(call->kids[1], &d) && d >= 0 && d < TK_WARP;
    if (op == 8 && !down) { /* the thread's lane in its group */
        tk_ir *t = lw_cast(L, lw_local_ref(L, L->bpf->local, line), i64);
        xg = into_temp(L, ibin(L, B_MOD, t, c64(L, w, line), line), line);
    }
    barrier_at(L, line);
    tk_ir *r;
    if (op >= 9) {
        r = warp_x(L, op == 9 ? WARP_BALLOT : op == 10 ? WARP_ANY : WARP_ALL, op == 9 ? i64 : ty_value(TACK_BOOL),
                   lw_local_ref(L, xv, line), NULL, TK_WARP, line);
    } else if (op == 7) {
        r = warp_x(L, WARP_IDX, et, lw_local_ref(L, xv, line), ibin(L, B_MOD, lw_local_ref(L, xa, line), c64(L, w, line), line),
                   w, line);
    } else if (down) {
        r = warp_x(L, WARP_DOWN, et, lw_local_ref(L, xv, line), c64(L, d, line), w, line);
    } else if (op == 8) {
        int sv = into_temp(L, ibin(L, B_ADD, lw_local_ref(L, xg, line), lw_local_ref(L, xa, line), line), line);
        int y = into_temp(L, warp_x(L, WARP_IDX, et, lw_local_ref(L, xv, line),
                                    ibin(L, B_MOD, lw_local_ref(L, sv, line), c64(L, w, line), line), w, line), line);
        tk_ir *ok = lw_mk(L, IR_AND, ty_value(TACK_BOOL), call);
        ir_push(L->C, ok, icmp(L, B_GE, lw_local_ref(L, sv, line), c64(L, 0, line), line));
        ir_push(L->C, ok, icmp(L, B_LT, lw_local_ref(L, sv, line), c64(L, w, line), line));
        r = ir_new(L->C, IR_SELECT, et, line);
        ir_push(L->C, r, ok);
        ir_push(L->C, r, lw_local_ref(L, y, line));
        ir_push(L->C, r, lw_local_ref(L, xv, line));
    } else {
        warp_tree(L, xv, op == 5 ? B_MIN : op == 6 ? B_MAX : B_ADD, et, line);
        r = warp_x(L, WARP_IDX, et, lw_local_ref(L, xv, line), c64(L, 0, line), TK_WARP, line);
    }
    int res = into_temp(L, r, line);
    lw_assign_local(L, lw_target_local(L, target), lw_local_ref(L, res, line), target);
}

static void warp_op(lw_state *L, tack_node *target, tack_node *call, int op, const char *name) {
    int line = call->line;
    tk_ir *pf = L->bpf;
    int64_t B = pf->c.i;
    int pred = op >= 9, shuf = op == 7 || op == 8;
    int nmin = shuf ? 2 : 1, nmax = shuf ? 3 : 1;
    if (call->nkids < nmin || call->nkids > nmax)
        ERR(call, "tack.%s() takes %s, got %d arguments", name,
            shuf ? (op == 7 ? "a value, a lane and an optional width" : "a value, a delta and an optional width")
                 : pred ? "one condition" : "one value", call->nkids);
    if (B % TK_WARP)
        ERR(call, "tack.%s() works on sub-groups of %d threads, so the block size must be a multiple of %d, "
                  "and this blocks loop's is %lld", name, TK_WARP, TK_WARP, (long long)B);
    int64_t w = TK_WARP;
    if (call->nkids == 3) {
        if (!lw_const_int(call->kids[2], &w))
            ERR(call->kids[2], "the width of tack.%s() must be a compile-time constant", name);
        if (w < 1 || w > TK_WARP || (w & (w - 1)))
            ERR(call->kids[2], "tack.%s() width %lld does not divide the sub-group of %d threads: it must be a power "
                               "of two from 1 to %d", name, (long long)w, TK_WARP, TK_WARP);
    }
    tk_ir *v = lw_expr(L, call->kids[0]);
    tk_ir *a = shuf ? lw_expr(L, call->kids[1]) : NULL;
    if (!lw_known(v) || (a && !lw_known(a))) {
        lw_assign_local(L, lw_target_local(L, target), lw_known(v) ? ir_const_i(L->C, ty_value(TACK_I64), 0, line) : v, target);
        return;
    }
    tk_type et;
    if (pred) {
        v = lw_hoist(L, lw_cast(L, lw_truth(L, v, call->kids[0]), ty_value(TACK_I64)));
        et = ty_value(TACK_I64);
    } else {
        if (v->ty.kind != TY_VALUE || !ty_is_scalar(v->ty) || ty_is_complex(v->ty) || (ty_is_bool(v->ty) && !shuf))
            ERR(call->kids[0], "tack.%s() of %s: the value is an integer or a real float", name, TN(v->ty));
        et = ty_concrete(v->ty);
        if (dt_is_half(et.dt)) et = ty_value(TACK_F32);
        v = lw_hoist(L, lw_cast(L, v, et));
    }
    if (a) {
        if (!ty_is_int(a->ty) && !ty_is_bool(a->ty))
            ERR(call->kids[1], "the %s of tack.%s() must be an integer, not %s", op == 7 ? "lane" : "delta", name, TN(a->ty));
        a = lw_hoist(L, lw_cast(L, a, ty_value(TACK_I64)));
    }
    if (warps_native(L)) {
        warp_native(L, target, call, op, v, a, et, w);
        return;
    }
    tk_type i64 = ty_value(TACK_I64);
    int s = tk_new_local(L->C, L->S, tk_fmt(&L->C->arena, "_%s%d", name, L->ntemps++),
                         (tk_type){TY_ARRAY, (uint8_t)et.dt, 1, 0, 0}, L->pfor);
    L->S->locals[s].ashape[0] = B;
    L->S->locals[s].declared = L->S->locals[s].read = 1;
    L->S->locals[s].shared = 1;
    lw_blocks_shared(L, call, s, B * (int64_t)tack_dtype_get((tack_dtype)et.dt)->itemsize);
    tk_ir *t = lw_cast(L, lw_local_ref(L, pf->local, line), i64);
    int g = lw_temp(L, i64); /* the thread's lane in its group of w: t % w */
    lw_emit(L, lw_assign_ir(L, g, ibin(L, B_MOD, ir_clone(L->C, t), c64(L, w, line), line), line));
    tk_ir *lane = lw_local_ref(L, g, line);
    if (op == 9 || op == 10 || op == 11) /* a ballot's bit: c << lane */
        v = ibin(L, B_SHL, v, ir_clone(L->C, lane), line);
    sstore(L, s, v, ir_clone(L->C, t), line);
    barrier_at(L, line);
    tk_ir *saved = L->blk;
    tk_ir *r;
    if (shuf) {
        tk_ir *base = ibin(L, B_SUB, ir_clone(L->C, t), ir_clone(L->C, lane), line);
        if (op == 7) { /* lane % w of the group */
            r = sload(L, s, et, ibin(L, B_ADD, base, ibin(L, B_MOD, a, c64(L, w, line), line), line), line);
        } else { /* lane + d, where it is in the group; else the thread's own */
            int x = lw_temp(L, et);
            lw_emit(L, lw_assign_ir(L, x, sload(L, s, et, ir_clone(L->C, t), line), line));
            tk_ir *src = ibin(L, B_ADD, ir_clone(L->C, lane), a, line);
            int sv = lw_temp(L, i64);
            lw_emit(L, lw_assign_ir(L, sv, src, line));
            tk_ir *ok = lw_mk(L, IR_AND, ty_value(TACK_BOOL), call);
            ir_push(L->C, ok, icmp(L, B_GE, lw_local_ref(L, sv, line), c64(L, 0, line), line));
            ir_push(L->C, ok, icmp(L, B_LT, lw_local_ref(L, sv, line), c64(L, w, line), line));
            L->blk = if_block(L, ok, line);
            lw_emit(L, lw_assign_ir(L, x, sload(L, s, et, ibin(L, B_ADD, base, lw_local_ref(L, sv, line), line), line), line));
            L->blk = saved;
            r = lw_local_ref(L, x, line);
        }
    } else {
        int bop = op == 5 ? B_MIN : op == 6 ? B_MAX : op >= 9 ? B_OR : B_ADD;
        for (int64_t stride = TK_WARP / 2; stride >= 1; stride /= 2) {
            L->blk = if_block(L, icmp(L, B_LT, ir_clone(L->C, lane), c64(L, stride, line), line), line);
            tk_ir *x = sload(L, s, et, ir_clone(L->C, t), line);
            tk_ir *y = sload(L, s, et, ibin(L, B_ADD, ir_clone(L->C, t), c64(L, stride, line), line), line);
            sstore(L, s, lw_bin(L, bop, et, x, y, line), ir_clone(L->C, t), line);
            L->blk = saved;
            barrier_at(L, line);
        }
        r = sload(L, s, et, ibin(L, B_SUB, ir_clone(L->C, t), ir_clone(L->C, lane), line), line);
        if (op == 10) r = icmp(L, B_NE, r, c64(L, 0, line), line);
        if (op == 11) r = icmp(L, B_EQ, r, c64(L, (int64_t)0xffffffff, line), line);
    }
    int res = lw_temp(L, r->ty); /* read before the last barrier */
    lw_emit(L, lw_assign_ir(L, res, r, line));
    barrier_at(L, line);
    lw_assign_local(L, lw_target_local(L, target), lw_local_ref(L, res, line), target);
}
