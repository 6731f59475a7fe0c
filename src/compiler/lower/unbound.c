/*
 * unbound.c -- reads of a local that may not be assigned yet.
 *
 * Python raises UnboundLocalError when a function reads a local no
 * statement has assigned; a kernel is the same language.  Each iteration of
 * a parallel loop has locals of its own (its private locals start unassigned,
 * whatever an earlier iteration assigned), a @tack.func call's locals are the
 * call's, and the kernel's frame runs once.  So
 *
 *     for i in range(n):
 *         if x[i] > 0:
 *             t = 2.0 * x[i]
 *         out[i] = t
 *
 * has no value for `t` in an iteration where x[i] <= 0.  Python run one
 * iteration after another would carry the previous iteration's `t`; no
 * parallel kernel can, so Tack raises UnboundLocalError, naming the local
 * and the line, compiled and in debug mode alike (tack._debug_transform
 * unbinds an iteration's locals when it starts).  Reading zero instead --
 * what the compiled code did before, its locals being zeroed for each
 * iteration -- was a silent wrong answer.
 *
 * Lowering tracks which named locals are definitely assigned at the
 * statement being lowered (Java's "definite assignment", over the
 * structured tree): an assignment sets its local's bit; an `if` keeps what
 * both branches assign; a loop's body may not run, so after it the set is
 * what it was before; after break, continue and return nothing is
 * reachable, so such a branch does not weaken its `if`'s meet.  A read of a
 * local not in the set gets a flag: a bool local in the same scope (zero
 * where the local's scope starts, as every local is), set to true after
 * every assignment of the local (lw_unbound_finish, once the function is
 * lowered), and an IR_CHECK CK_UNBOUND before the read (in the block the
 * read's expression emits into, so a read on the right of `and` is checked
 * only when Python would evaluate it).  Reads the analysis proves assigned,
 * nearly all of them, cost nothing; a read in a serial loop that an earlier
 * trip assigned (`if k == 0: t = ...` ... `use(t)`) is Python's and runs,
 * its flag set by that trip.  The check stays with checks=False: it is the
 * language's meaning, not a bounds check, and debug mode cannot drop it.
 */
#include <string.h>

#include "compiler/lower/lower.h"

/* Start a lowering round: nothing assigned but the scalar parameters. */
void lw_unbound_begin(lw_state *L) {
    int n = L->S->nbase;
    L->da = tk_alloc(&L->C->arena, (size_t)n + 1);
    L->uflag = tk_alloc(&L->C->arena, sizeof(int) * ((size_t)n + 1));
    for (int i = 0; i < n; i++) {
        L->da[i] = (unsigned char)(L->S->locals[i].is_param != 0);
        L->uflag[i] = -1;
    }
    L->reach = 1;
}

unsigned char *lw_da_save(lw_state *L) {
    int n = L->S->nbase;
    unsigned char *s = tk_alloc(&L->C->arena, (size_t)n + 2);
    if (L->da) memcpy(s, L->da, (size_t)n);
    s[n] = (unsigned char)L->reach;
    return s;
}

void lw_da_restore(lw_state *L, const unsigned char *s) {
    int n = L->S->nbase;
    if (L->da) memcpy(L->da, s, (size_t)n);
    L->reach = s[n];
}

/* The meet after two branches: `a` (saved at the end of the first), the
 * current state being the end of the second.  An unreachable end assigns
 * everything. */
void lw_da_meet(lw_state *L, const unsigned char *a) {
    int n = L->S->nbase;
    if (!L->da) return;
    int ra = a[n], rb = L->reach;
    for (int i = 0; i < n; i++) {
        int x = ra ? a[i] : 1, y = rb ? L->da[i] : 1;
        L->da[i] = (unsigned char)(x && y);
    }
    L->reach = ra || rb;
}

void lw_da_set(lw_state *L, int loc) {
    if (L->da && loc >= 0 && loc < L->S->nbase) L->da[loc] = 1;
}

/* After break, continue or return: the rest of the block is not reached. */
void lw_da_jump(lw_state *L) { L->reach = 0; }

/* A use of local `loc` at node n: checked when it may be unassigned. */
void lw_unbound_use(lw_state *L, int loc, tack_node *n) {
    if (L->infer || !L->da || loc < 0 || loc >= L->S->nbase || L->da[loc]) return;
    tk_local *l = &L->S->locals[loc];
    if (l->is_param || !l->name || l->shared) return; /* a block's shared array: the block's, made once */
    if (L->uflag[loc] < 0)
        L->uflag[loc] = tk_new_local(L->C, L->S, tk_fmt(&L->C->arena, "_u%d", loc), ty_value(TACK_BOOL), l->scope);
    int line = n ? n->line : 0;
    int site = lw_site(L, CK_UNBOUND, line, 0, NULL, l->name);
    lw_check(L, CK_UNBOUND, site, lw_local_ref(L, L->uflag[loc], line), NULL, line);
}

/* ------------------------------------------------- setting the flags */
static tk_ir *flag_set(lw_state *L, int flag, int line) {
    return lw_assign_ir(L, flag, ir_const_i(L->C, ty_value(TACK_BOOL), 1, line), line);
}

static int assigns(const tk_ir *s, int nbase) {
    return (s->op == IR_ASSIGN || s->op == IR_LFILL) && s->local >= 0 && s->local < nbase ? s->local : -1;
}

static void finish_block(lw_state *L, tk_ir *b);

static void finish_stmt(lw_state *L, tk_ir *s) {
    switch (s->op) {
    case IR_BLOCK: finish_block(L, s); return;
    case IR_IF:
        finish_block(L, s->k[1]);
        finish_block(L, s->k[2]);
        return;
    case IR_WHILE: finish_block(L, s->k[1]); return;
    case IR_FOR: {
        tk_ir *b = s->k[3];
        finish_block(L, b);
        if (s->local >= 0 && s->local < L->S->nbase && L->uflag[s->local] >= 0) {
            /* the loop assigns its variable at the top of every trip */
            ir_push(L->C, b, NULL);
            memmove(b->k + 1, b->k, sizeof(tk_ir *) * (size_t)(b->n - 1));
            b->k[0] = flag_set(L, L->uflag[s->local], s->line);
        }
        return;
    }
    case IR_PFOR: finish_block(L, s->k[s->n - 1]); return;
    default: return;
    }
}

static void finish_block(lw_state *L, tk_ir *b) {
    if (!b || b->op != IR_BLOCK) {
        if (b) finish_stmt(L, b);
        return;
    }
    for (int i = 0; i < b->n; i++) {
        tk_ir *s = b->k[i];
        finish_stmt(L, s);
        int loc = assigns(s, L->S->nbase);
        if (loc < 0 || L->uflag[loc] < 0) continue;
        ir_push(L->C, b, NULL);
        memmove(b->k + i + 2, b->k + i + 1, sizeof(tk_ir *) * (size_t)(b->n - i - 2));
        b->k[i + 1] = flag_set(L, L->uflag[loc], s->line);
        i++;
    }
}

/* Once the function is lowered: every assignment of a flagged local sets its flag. */
void lw_unbound_finish(lw_state *L, tk_ir *body) {
    if (!L->uflag) return;
    int any = 0;
    for (int i = 0; i < L->S->nbase; i++) any |= L->uflag[i] >= 0;
    if (any) finish_block(L, body);
}
