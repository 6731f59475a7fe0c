/*
 * frames.c -- the local arrays of one iteration must fit a thread's stack.
 *
 * A local array lives on the stack of the thread running the iteration (a
 * GPU thread's private memory).  lower_local.c caps each array (16 KiB on
 * the CPU, 4 KiB on a GPU), but not how many: 600 arrays of 2048 doubles in
 * one iteration took 9.4 MiB and the kernel crashed with a segmentation
 * fault instead of a compile error.  This pass adds up what can be live at
 * once and refuses more than a bound per target:
 *
 *   - a @tack.func's frame is its own local arrays plus the largest frame of
 *     the functions it calls (a chain of calls is on the stack together;
 *     recursion is refused by lowering, so the calls form no cycle);
 *   - a kernel's is its local arrays at the kernel's own level, plus the
 *     largest set of one parallel loop's (each loop's iterations run in a
 *     function of their own on the CPU), plus the largest frame it calls;
 *   - a blocks loop (lower_blocks.c) on the CPU holds a block's threads at
 *     once (cpu/emit_blocks.c): each thread's arrays and values times the
 *     block size, and the block's shared arrays once.
 *
 * The bound is the target's frame_bytes (target.h, whose table says why:
 * 1 MiB on the CPU, 64 KiB of a GPU thread's private memory).  The message
 * gives the total and where it comes from.
 */
#include <string.h>

#include "compiler/compiler.h"
#include "compiler/target.h"

static int64_t array_bytes(const tk_local *l) {
    if (l->ty.kind != TY_ARRAY) return 0;
    return tk_local_elems(l) * (int64_t)tack_dtype_get((tack_dtype)l->ty.dt)->itemsize;
}

typedef struct fr {
    tk_cc *C;
    int64_t *frame; /* per spec: -1 not yet known */
    int *chain;     /* per spec: the callee whose frame is the largest (-1: none) */
} fr;

static int64_t frame_of(fr *F, int si);

/* The largest frame among the functions x calls, and which (in *who). */
static int64_t callees(fr *F, const tk_ir *x, int *who) {
    if (!x) return 0;
    int64_t m = 0;
    if (x->op == IR_CALL && x->aux >= 0 && x->aux < F->C->nspecs) {
        int64_t f = frame_of(F, x->aux);
        if (f > m) m = f, *who = x->aux;
    }
    for (int i = 0; i < x->n; i++) {
        int w = -1;
        int64_t f = callees(F, x->k[i], &w);
        if (f > m) m = f, *who = w;
    }
    if (x->op == IR_PFOR) {
        int w = -1;
        int64_t f = callees(F, x->red, &w);
        if (f > m) m = f, *who = w;
    }
    return m;
}

static int64_t frame_of(fr *F, int si) {
    if (F->frame[si] >= 0) return F->frame[si];
    F->frame[si] = 0; /* no cycles (recursion is refused), but never loop */
    tk_spec *S = F->C->specs[si];
    int64_t own = 0;
    for (int l = 0; l < S->nlocals; l++) own += array_bytes(&S->locals[l]);
    int who = -1;
    int64_t deep = callees(F, S->body, &who);
    F->chain[si] = who;
    return F->frame[si] = own + deep;
}

void tk_check_frames(tk_cc *C, tk_spec *K) {
    if (!K || !K->body || C->nspecs <= 0) return;
    fr F = {C, tk_alloc(&C->arena, sizeof(int64_t) * (size_t)C->nspecs),
            tk_alloc(&C->arena, sizeof(int) * (size_t)C->nspecs)};
    for (int i = 0; i < C->nspecs; i++) F.frame[i] = -1, F.chain[i] = -1;
    /* the kernel: its own level, the largest parallel loop's, the largest callee chain */
    int64_t level = 0, loop = 0;
    int nscopes = K->npfor > 0 ? K->npfor : 1;
    int64_t *per = tk_alloc(&C->arena, sizeof(int64_t) * (size_t)nscopes);
    memset(per, 0, sizeof(int64_t) * (size_t)nscopes);
    int64_t *threads = tk_alloc(&C->arena, sizeof(int64_t) * (size_t)nscopes); /* a blocks loop's B on the CPU */
    for (int s = 0; s < nscopes; s++) threads[s] = 1;
    for (int i = 0; C->target->loops == TK_LOOPS_CHUNKED && i < K->body->n; i++) {
        const tk_ir *x = K->body->k[i];
        int sc = ir_is_blocks(x) ? K->locals[x->vars[0]].scope : -1;
        if (sc >= 0 && sc < nscopes) threads[sc] = x->c.i;
    }
    for (int l = 0; l < K->nlocals; l++) {
        const tk_local *lo = &K->locals[l];
        int64_t b = array_bytes(lo);
        int sc = lo->scope;
        if (sc >= 0 && sc < nscopes && threads[sc] > 1 && !lo->shared) {
            if (lo->ty.kind == TY_VALUE) b = (int64_t)tack_dtype_get((tack_dtype)lo->ty.dt)->itemsize;
            b *= threads[sc]; /* one per thread */
        }
        if (sc >= 0 && sc < nscopes) per[sc] += b;
        else level += b;
    }
    for (int s = 0; s < nscopes; s++)
        if (per[s] > loop) loop = per[s];
    int who = -1;
    int64_t deep = callees(&F, K->body, &who);
    int64_t total = level + loop + deep;
    int64_t cap = C->target->frame_bytes;
    if (total <= cap) return;
    tk_buf b;
    tk_buf_init(&b, &C->arena);
    for (int f = who, n = 0; f >= 0 && n < 8; f = F.chain[f], n++)
        tk_printf(&b, "%s%s() %lld", n ? ", then " : "; the calls through ", C->m->funcs[C->specs[f]->func].name,
                  (long long)(F.frame[f] - (F.chain[f] >= 0 ? F.frame[F.chain[f]] : 0)));
    tk_error(C, K->func, C->m->funcs[K->func].first_line, 0,
             "the local arrays of one iteration of kernel '%s' take %lld bytes (the kernel's own %lld%s), and at "
             "most %lld fit %s; make them smaller, or pass a larger array in as an argument",
             C->m->funcs[K->func].name, (long long)total, (long long)(level + loop), b.s ? b.s : "", (long long)cap,
             C->target->thread_memory);
}
