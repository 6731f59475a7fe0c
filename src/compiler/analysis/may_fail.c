/*
 * may_fail.c -- which @tack.func specializations can fail, over the call graph.
 *
 * A failed check inside a @tack.func records the error and returns from the
 * function; its caller must then leave too, so the emitter writes a test of
 * the failure flag after each call.  On a GPU that test was a volatile load
 * of the error record from global memory after every call -- in a kernel
 * calling a clamp function, three of its four loads per element, and a
 * dozen or more per element in tack.random's helpers, none of which can
 * fail.  A call needs the test only when the callee can fail:
 *
 *   - its body holds a check (IR_CHECK: an index, a division by zero, an
 *     assert, ...), or
 *   - on a target whose loops poll (the CPU: an interrupt leaves a function
 *     like a failed check, emit_stmt.c), it holds a serial loop, or
 *   - it calls a function that can fail.
 *
 * Lowering refuses recursion, so the calls form no cycle and one memoized
 * walk over the graph settles every function.  (A call to a function's copy
 * watched by the race detector, race_watch.c, can always fail: the emitter
 * asks that itself.)
 */
#include <string.h>

#include "compiler/compiler.h"
#include "compiler/target.h"

typedef struct mf {
    tk_cc *C;
    signed char *bit; /* per spec: -1 not yet known, else 0 or 1 */
} mf;

static int spec_fails(mf *M, int si);

static int ir_fails(mf *M, const tk_ir *x) {
    if (!x) return 0;
    switch (x->op) {
    case IR_CHECK: return 1;
    case IR_CALL:
        if (spec_fails(M, x->aux)) return 1;
        break;
    case IR_FOR:
    case IR_WHILE:
        if (M->C->target->polls) return 1;
        break;
    default: break;
    }
    for (int i = 0; i < x->n; i++)
        if (ir_fails(M, x->k[i])) return 1;
    return 0;
}

static int spec_fails(mf *M, int si) {
    if (si < 0 || si >= M->C->nspecs) return 1; /* not a function this compile knows: assume so */
    if (M->bit[si] < 0) {
        M->bit[si] = 1; /* no cycles (lowering refuses recursion); were there one, it would stay checked */
        M->bit[si] = (signed char)ir_fails(M, M->C->specs[si]->body);
    }
    return M->bit[si];
}

const char *tk_may_fail(tk_cc *C) {
    mf M = {C, tk_alloc(&C->arena, (size_t)C->nspecs + 1)};
    memset(M.bit, -1, (size_t)C->nspecs + 1);
    char *out = tk_alloc(&C->arena, (size_t)C->nspecs + 1);
    for (int si = 0; si < C->nspecs; si++) out[si] = (char)spec_fails(&M, si);
    return out;
}
