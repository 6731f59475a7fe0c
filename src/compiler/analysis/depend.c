/*
 * depend.c -- the race check: can two iterations of a parallel loop touch
 * the same array element, one of them writing it?
 *
 * Every top-level loop of a kernel is parallel (lower_loop.c), so a body
 * that writes an element another iteration reads or writes gives an answer
 * that depends on timing -- and on the CPU with one thread, which runs the
 * iterations in order, it usually looks right.  The classic case is a time
 * loop written at the top of a kernel (`for t in range(steps):` around the
 * stencil loops): the steps run at once and the result was wrong by 0.27
 * after 50 steps without a word.  This pass runs on the IR just after
 * lowering (before the optimizing passes, so TACK_OPT=0 says the same) and
 * looks at each parallel loop on its own.
 *
 * It collects the loop's array accesses -- loads, stores and atomics, also
 * those in the @tack.func functions the body calls, with the callee's
 * parameters replaced by the caller's arguments -- and describes each index
 * by a form: affine in the loop's variables (integer coefficients, a
 * constant, and up to a few "atoms", subexpressions that are the same in
 * every iteration such as n, a.shape[0] or a serial loop's variable), or
 * unknown, with a bit saying whether it may differ between iterations.  A
 * variable times a symbol (i * m) is kept too, and a flattened index
 * i * m + j whose j runs over range(m) -- a serial loop's, or the ndrange
 * axis of extent m -- counts as the two indices [i, j] (delinearize).
 * Locals assigned once in the body stand for their value (the temporaries
 * lowering makes, `i = lo + k * step` of a stepped range); a local assigned
 * more often is an atom when every value it takes is the same in every
 * iteration (decided by a small fixed point, with control dependence:
 * a value assigned under a condition that differs between iterations
 * differs too), else unknown.
 *
 * Then (depend_judge.c), for each plain store (atomics never conflict with
 * each other):
 *   - the columns of its index's affine coefficients have full rank over the
 *     loop's variables: iterations write distinct elements (a[i], m[i, j],
 *     a[2 * i + 1], m[j, i]) -- silent;
 *   - no index depends on a variable: every iteration writes the same
 *     elements.  That is a certain conflict, a CompileError, unless the loop
 *     runs at most once (range(1)), the store is under a condition that
 *     differs between iterations (a warning), or it stores a value that is
 *     the same in every iteration (flag[0] = 1: benign);
 *   - anything else (a[idx[i]], a[i // 2], a[i + j]) may collide: a warning.
 * and for each load (or atomic) of an array the loop writes, against each
 * write of it: the same index as the write's, which writes distinct
 * elements, is the iteration's own element -- silent; an index with the
 * same coefficients at a constant distance (a[i - 1] against a[i]) is
 * solved exactly: no integer distance, or one no smaller than the loop's
 * constant extent, is silent, a distance the loop covers is a certain
 * conflict (an error; a warning under a varying condition); the rest is a
 * warning.  A condition `v == e` (e the same in every iteration) pins v:
 * only one iteration runs what it guards.
 *
 * What is not checked: two array parameters that are views of the same
 * memory (the check knows arrays by parameter), and a negative index that
 * wraps around onto an element another iteration names (a[i - 1] at i = 0
 * is a[n - 1]; the check treats indices as written).  Calls nested more than
 * MAXCALL deep are not followed, and a loop that makes one with an array is
 * a warning -- even when nothing the check saw writes (what the call writes
 * is not known; such a loop once passed in silence).
 *
 * `for i in tack.independent(range(n))` (or around tack.ndrange) turns the
 * check off for one loop: the user says the iterations do not conflict.
 * With check_races, the loops the check warns of -- and the independent
 * ones, which it does not judge -- go to race_watch.c, which instruments
 * them with the run-time race detector.
 * Messages name the array, the index as the kernel wrote it (rendered
 * from the IR), the lines, and what to write instead; warnings go to the
 * program (tk_warn, driver.c) and reach Python as tack.RaceWarning.
 */
#include <string.h>

#include "compiler/analysis/depend.h"

typedef struct dx dx;

/* The walk of one body: the parallel loop's (the kernel) or a callee's. */
struct dx {
    dpass *P;
    tk_spec *S;
    int func, si;        /* S's function, and its index in C->specs (0: the kernel) */
    int own;             /* rendering: a callee's arrays by its own parameter names */
    dx *up;
    const dform *argf;   /* callee: per parameter, the argument's form */
    const int *argdep;
    const int *amap;     /* callee: per parameter, the kernel's array parameter */
    int *nas;            /* per local: assignments in the body (a for loop counts twice) */
    int *dep;            /* per local: may differ between iterations */
    int *vary;           /* per local: assigned in the body */
    dform **env;         /* per local assigned once: its value, after the walk passed it */
    const tk_ir **fhi;   /* per local: in the body of a range(0, hi) loop over it, hi (canon) */
    char *byassign;      /* per local: an assignment (not a for loop) sets it */
    const tk_ir **def;
    int *log, nlog;      /* locals given an env entry, to forget when a block ends */
    int guard;
    unsigned pinned;
    int depth;
};

/* ------------------------------------------------------------ forms */
static dform f_unk(int dep) {
    dform f;
    memset(&f, 0, sizeof f);
    f.dep = dep;
    return f;
}

static dform f_const(int64_t k) {
    dform f = f_unk(0);
    f.aff = 1;
    f.k = k;
    return f;
}

static dform f_atom(const tk_ir *e, int vary) {
    dform f = f_const(0);
    f.na = 1;
    f.at[0].e = e;
    f.at[0].coef = 1;
    f.vary = vary;
    return f;
}

int dp_has_var(const dform *f, int nv) {
    for (int d = 0; d < nv; d++)
        if (f->c[d]) return 1;
    return 0;
}

/* Structural equality of two expressions (atoms). */
int dp_ir_same(const tk_ir *a, const tk_ir *b) {
    if (a == b) return 1; /* two NULLs too */
    if (!a || !b || a->op != b->op || a->sub != b->sub || a->n != b->n || !ty_eq(a->ty, b->ty)) return 0;
    switch (a->op) {
    case IR_CONST: if (a->c.u != b->c.u) return 0; break;
    case IR_LOCAL: if (a->local != b->local) return 0; break;
    case IR_LOAD: case IR_SHAPE: case IR_WRAP: case IR_ARRAY:
        if (a->param != b->param || a->aux != b->aux) return 0;
        break;
    case IR_CALL: case IR_COMP: case IR_ATOMIC: case IR_LLOAD: case IR_WARP: return 0;
    default: break;
    }
    for (int i = 0; i < a->n; i++)
        if (!dp_ir_same(a->k[i], b->k[i])) return 0;
    return 1;
}

/* a + s * b for affine forms; unknown when the atoms overflow. */
static dform f_add(const dform *a, const dform *b, int64_t s) {
    dform r = *a;
    r.vary |= b->vary;
    r.dep |= b->dep;
    r.k += s * b->k;
    for (int d = 0; d < NV; d++) {
        if (b->c[d] && r.c[d] && !dp_ir_same(r.sc[d], b->sc[d])) return f_unk(1);
        if (b->c[d] && !r.c[d]) r.sc[d] = b->sc[d];
        r.c[d] += s * b->c[d];
        if (!r.c[d]) r.sc[d] = NULL;
    }
    for (int i = 0; i < b->na; i++) {
        int j = 0;
        while (j < r.na && !dp_ir_same(r.at[j].e, b->at[i].e)) j++;
        if (j == r.na) {
            if (r.na == NATOM) return f_unk(a->dep | b->dep | 1);
            r.at[r.na].e = b->at[i].e;
            r.at[r.na++].coef = 0;
        }
        r.at[j].coef += s * b->at[i].coef;
    }
    int w = 0;
    for (int i = 0; i < r.na; i++)
        if (r.at[i].coef) r.at[w++] = r.at[i];
    r.na = w;
    return r;
}

static dform f_scale(const dform *a, int64_t s) {
    dform z = f_const(0);
    z.dep = a->dep;
    return f_add(&z, a, s);
}

/* Same coefficients and atoms (the constants may differ). */
int dp_same_shape(const dform *a, const dform *b) {
    if (!a->aff || !b->aff || a->vary || b->vary || a->na != b->na) return 0;
    for (int d = 0; d < NV; d++)
        if (a->c[d] != b->c[d] || !dp_ir_same(a->sc[d], b->sc[d])) return 0;
    for (int i = 0; i < a->na; i++) {
        int found = 0;
        for (int j = 0; j < b->na; j++)
            if (dp_ir_same(a->at[i].e, b->at[j].e) && a->at[i].coef == b->at[j].coef) found = 1;
        if (!found) return 0;
    }
    return 1;
}

/* ------------------------------------------------ what an expression depends on */
static int param_of_local(const tk_spec *S, int l) {
    for (int i = 0; S->plocal && i < S->nparams; i++)
        if (S->plocal[i] == l) return i;
    return -1;
}

static int pvar_index(const dx *X, int l) {
    if (X->up) return -1;
    for (int d = 0; d < X->P->nv; d++)
        if (X->P->pvar[d] == l) return d;
    return -1;
}

static int root_array(const dx *X, int p) { return X->amap ? X->amap[p] : p; }

/* Whether e may differ between iterations. */
static int edep(const dx *X, const tk_ir *e) {
    if (!e) return 0;
    switch (e->op) {
    case IR_LOCAL: {
        if (pvar_index(X, e->local) >= 0) return 1;
        if (X->vary[e->local]) return X->dep[e->local];
        int p = X->up ? param_of_local(X->S, e->local) : -1;
        return p >= 0 ? X->argdep[p] : 0;
    }
    case IR_LOAD: {
        int p = root_array(X, e->param);
        if (p >= 0 && (X->P->written >> (p & 63) & 1)) return 1; /* other iterations may change it */
        break;
    }
    case IR_ATOMIC: case IR_WARP: return 1;
    case IR_LLOAD: return 1; /* a local array's element: not modelled */
    case IR_CALL:
        for (int i = 0; i < e->n; i++)
            if (e->k[i]->op == IR_ARRAY && root_array(X, e->k[i]->param) >= 0 &&
                (X->P->written >> (root_array(X, e->k[i]->param) & 63) & 1)) return 1;
        break;
    default: break;
    }
    for (int i = 0; i < e->n; i++)
        if (edep(X, e->k[i])) return 1;
    return 0;
}

/* Whether e may change within an iteration (reads a local the body assigns, or memory). */
static int evary(const dx *X, const tk_ir *e) {
    if (!e) return 0;
    if (e->op == IR_LOCAL) {
        if (X->vary[e->local]) return 1;
        int p = X->up ? param_of_local(X->S, e->local) : -1;
        return p >= 0 && (X->argf[p].vary || !X->argf[p].aff);
    }
    if (e->op == IR_LOAD || e->op == IR_ATOMIC || e->op == IR_CALL || e->op == IR_LLOAD || e->op == IR_WARP) return 1;
    for (int i = 0; i < e->n; i++)
        if (evary(X, e->k[i])) return 1;
    return 0;
}

static dform fm(dx *X, const tk_ir *e);

static dform f_generic(dx *X, const tk_ir *e) {
    if (edep(X, e)) return f_unk(1);
    return f_atom(e, evary(X, e));
}

/* The form of integer expression e. */
static dform fm(dx *X, const tk_ir *e) {
    switch (e->op) {
    case IR_CONST:
        if (!e->str && (ty_is_int(e->ty) || ty_is_bool(e->ty))) return f_const(e->c.i);
        return f_unk(0);
    case IR_CAST:
        if ((ty_is_int(e->ty) || ty_is_bool(e->ty)) && (ty_is_int(e->k[0]->ty) || ty_is_bool(e->k[0]->ty)))
            return fm(X, e->k[0]);
        return f_generic(X, e);
    case IR_WRAP: return fm(X, e->k[0]); /* a negative index's wrap is not modelled (see the essay) */
    case IR_LOCAL: {
        int l = e->local, d = pvar_index(X, l);
        if (d >= 0) {
            dform f = f_const(0);
            f.c[d] = 1;
            f.dep = 1;
            return f;
        }
        if (X->env[l]) return *X->env[l];
        if (!X->vary[l]) {
            int p = X->up ? param_of_local(X->S, l) : -1;
            if (p >= 0) return X->argf[p];
            return f_atom(e, 0);
        }
        return X->dep[l] ? f_unk(1) : f_atom(e, 1);
    }
    case IR_BIN: {
        if (!ty_is_int(e->ty)) break;
        if (e->sub == B_ADD || e->sub == B_SUB) {
            dform a = fm(X, e->k[0]), b = fm(X, e->k[1]);
            if (a.aff && b.aff) return f_add(&a, &b, e->sub == B_ADD ? 1 : -1);
            break;
        }
        if (e->sub == B_MUL) {
            dform a = fm(X, e->k[0]), b = fm(X, e->k[1]);
            if (a.aff && b.aff && !b.na && !dp_has_var(&b, NV)) return f_scale(&a, b.k);
            if (a.aff && b.aff && !a.na && !dp_has_var(&a, NV)) return f_scale(&b, a.k);
            for (int s = 0; s < 2; s++) { /* i * m: one variable times a symbol (a flattened index) */
                const dform *v = s ? &b : &a, *m = s ? &a : &b;
                int d = -1, nz = 0;
                for (int q = 0; q < NV; q++)
                    if (v->c[q]) { nz++; d = q; }
                if (!v->aff || !m->aff || v->na || v->k || v->vary || nz != 1 || v->c[d] != 1 || v->sc[d] ||
                    m->na != 1 || m->at[0].coef != 1 || m->k || m->vary || dp_has_var(m, NV))
                    continue;
                dform f = *v;
                f.sc[d] = m->at[0].e;
                return f;
            }
        }
        break;
    }
    case IR_UN:
        if (e->sub == U_NEG && ty_is_int(e->ty)) {
            dform a = fm(X, e->k[0]);
            if (a.aff) return f_scale(&a, -1);
        }
        break;
    default: break;
    }
    return f_generic(X, e);
}

/* ------------------------------------------------------- rendering */
static int prec(int b) {
    switch (b) {
    case B_POW: return 4;
    case B_MUL: case B_DIV: case B_FLOORDIV: case B_MOD: return 3;
    case B_ADD: case B_SUB: return 2;
    case B_SHL: case B_SHR: case B_AND: case B_OR: case B_XOR: return 1;
    default: return 0;
    }
}

static const char *bin_sym(int b) {
    static const char *s[] = {"+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^",
                              "==", "!=", "<", "<=", ">", ">="};
    return b <= B_GE ? s[b] : NULL;
}

static const char *pname(dx *X, int p) {
    if (X->own && p >= 0 && p < X->S->nparams) return X->S->pnames[p];
    int r = root_array(X, p);
    return r >= 0 && r < X->P->K->nparams ? X->P->K->pnames[r] : "?";
}

/* What pr prints for e: through casts and the compiler's own temporaries
 * (a local named '_...' once assigned), so that the parentheses an operand
 * needs are decided on the expression that is printed, not on its wrapper. */
static const tk_ir *shown(const dx *X, const tk_ir *e) {
    for (int n = 0; n < 16; n++) {
        while (e->op == IR_CAST || e->op == IR_WRAP) e = e->k[0];
        if (e->op != IR_LOCAL) break;
        const tk_local *l = &X->S->locals[e->local];
        if (!X->def[e->local] || (l->name && l->name[0] != '_')) break;
        e = X->def[e->local];
    }
    return e;
}

/* Whether k, an operand of the binary operator op (i: 0 left, 1 right), needs
 * parentheses to read as Python reads it: a looser operator, the right operand
 * of an operator of the same level (a - (b - c)), and any operation under **. */
static int needs_paren(const tk_ir *k, int op, int i) {
    if (k->op != IR_BIN || !bin_sym(k->sub)) return 0;
    if (op == B_POW) return 1;
    return prec(k->sub) < prec(op) + (i == 1);
}

static void pr(dx *X, tk_buf *b, const tk_ir *e, int depth) {
    if (depth > 12) { tk_puts(b, "..."); return; }
    switch (e->op) {
    case IR_CONST:
        if (ty_is_float(e->ty)) tk_printf(b, "%g", e->c.f);
        else if (ty_is_bool(e->ty)) tk_puts(b, e->c.i ? "True" : "False");
        else tk_printf(b, "%lld", (long long)e->c.i);
        return;
    case IR_CAST: case IR_WRAP: pr(X, b, e->k[0], depth + 1); return;
    case IR_LOCAL: {
        const tk_local *l = &X->S->locals[e->local];
        if (X->def[e->local] && (!l->name || l->name[0] == '_')) { pr(X, b, X->def[e->local], depth + 1); return; }
        tk_puts(b, l->name ? l->name : "?");
        return;
    }
    case IR_BIN: {
        const char *s = bin_sym(e->sub);
        if (!s) break;
        for (int i = 0; i < 2; i++) {
            const tk_ir *k = shown(X, e->k[i]);
            int paren = needs_paren(k, e->sub, i);
            if (paren) tk_puts(b, "(");
            pr(X, b, k, depth + 1);
            if (paren) tk_puts(b, ")");
            if (!i) tk_printf(b, " %s ", s);
        }
        return;
    }
    case IR_UN:
        if (e->sub == U_NEG) {
            const tk_ir *k = shown(X, e->k[0]);
            int paren = k->op == IR_BIN && bin_sym(k->sub) && k->sub != B_POW; /* -(a - b); -a ** 2 is -(a ** 2) */
            tk_puts(b, paren ? "-(" : "-");
            pr(X, b, k, depth + 1);
            if (paren) tk_puts(b, ")");
            return;
        }
        break;
    case IR_LOAD:
        tk_printf(b, "%s[", pname(X, e->param));
        for (int i = 0; i < e->n; i++) {
            if (i) tk_puts(b, ", ");
            pr(X, b, e->k[i], depth + 1);
        }
        tk_puts(b, "]");
        return;
    case IR_SHAPE: tk_printf(b, "%s.shape[%d]", pname(X, e->param), e->aux); return;
    default: break;
    }
    tk_puts(b, "...");
}

static const char *access_text(dx *X, int p, const tk_ir *const *idx, int n) {
    tk_buf b;
    tk_buf_init(&b, &X->P->C->arena);
    tk_printf(&b, "%s[", pname(X, p));
    for (int i = 0; i < n; i++) {
        if (i) tk_puts(&b, ", ");
        pr(X, &b, idx[i], 0);
    }
    tk_puts(&b, "]");
    return b.s;
}

/* ------------------------------------------------------- collection */
/* e without casts, a once-assigned temporary or kernel local replaced by its value. */
static const tk_ir *canon(const dx *X, const tk_ir *e) {
    for (int n = 0; e && n < 16; n++) {
        while (e->op == IR_CAST) e = e->k[0];
        if (e->op != IR_LOCAL || X->up || pvar_index(X, e->local) >= 0) break;
        const tk_ir *v = X->def[e->local] ? X->def[e->local] : !X->vary[e->local] ? X->P->fdef[e->local] : NULL;
        if (!v) break;
        e = v;
    }
    return e;
}

/* A flattened dimension i * m + j (m the number of j's values: j a variable
 * of an ndrange whose extent is m, or of a serial range(0, m)) names
 * distinct elements for distinct (i, j): record which variables it stands for. */
static void delinearize(dx *X, dacc *a, int i) {
    const dform *f = &a->idx[i];
    int va = -1, vb = -1, n = 0;
    if (X->up || !f->aff || f->k) return;
    for (int d = 0; d < X->P->nv; d++) {
        if (!f->c[d]) continue;
        n++;
        if (f->sc[d] && f->c[d] == 1 && va < 0) va = d;
        else if (!f->sc[d] && f->c[d] == 1) vb = d;
        else return;
    }
    if (va < 0) return;
    const tk_ir *m = canon(X, f->sc[va]);
    if (n == 2 && vb >= 0 && !f->na && dp_ir_same(canon(X, X->P->pf->k[vb]), m)) {
        a->dl[i] = 2;
        a->da[i] = (signed char)va;
        a->db[i] = (signed char)vb;
        return;
    }
    if (n == 1 && f->na == 1 && f->at[0].coef == 1 && f->at[0].e->op == IR_LOCAL) {
        const tk_ir *hi = X->fhi[f->at[0].e->local];
        if (hi && !X->dep[f->at[0].e->local] && dp_ir_same(hi, m)) {
            a->dl[i] = 1;
            a->da[i] = (signed char)va;
        }
    }
}

static dacc *record(dx *X, const tk_ir *node, int kind, int p, const tk_ir *const *idx, int n, int line,
                    int valinv) {
    dpass *P = X->P;
    if (root_array(X, p) < 0) return NULL; /* a caller's local array (IR_LARRAY): the iteration's own */
    if (P->nacc == P->capacc) {
        int cap = P->capacc ? 2 * P->capacc : 16;
        dacc *g = tk_alloc(&P->C->arena, sizeof(dacc) * (size_t)cap);
        if (P->nacc) memcpy(g, P->acc, sizeof(dacc) * (size_t)P->nacc);
        P->acc = g;
        P->capacc = cap;
    }
    dacc *a = &P->acc[P->nacc++];
    memset(a, 0, sizeof *a);
    a->kind = kind;
    a->param = root_array(X, p);
    a->line = line;
    a->func = X->func;
    a->nidx = n < NV ? n : NV;
    for (int i = 0; i < a->nidx; i++) {
        a->idx[i] = fm(X, idx[i]);
        a->raw[i] = idx[i];
        for (int d = 0; d < NV; d++)
            if (a->idx[i].sc[d]) {
                delinearize(X, a, i);
                break;
            }
    }
    a->guard = X->guard;
    a->pinned = X->pinned;
    a->valinv = valinv;
    a->text = access_text(X, p, idx, n);
    a->node = X->up ? NULL : node;
    a->at = node;
    a->si = X->si;
    if (X->up && P->C->opts.check_races) { /* the run-time detector names a callee's access as the callee wrote it */
        X->own = 1;
        a->ftext = access_text(X, p, idx, n);
        X->own = 0;
    }
    return a;
}

static void walk_call(dx *X, const tk_ir *e);

static void scan(dx *X, const tk_ir *e) {
    if (!e) return;
    for (int i = 0; i < e->n; i++) scan(X, e->k[i]);
    if (e->op == IR_LOAD) { /* a load of an array the loop does not write meets nothing -- unless it
                             * is the same memory as one it writes (dp_alias) */
        int p = root_array(X, e->param);
        if (p >= 0)
            record(X, e, (X->P->written >> (p & 63) & 1) ? ACC_LOAD : ACC_READ, e->param,
                   (const tk_ir *const *)e->k, e->n, e->line, 0);
    }
    else if (e->op == IR_ATOMIC) {
        int f = ir_atomic_first(e);
        dacc *a = record(X, e, ACC_ATOMIC, e->param, (const tk_ir *const *)e->k + f, e->n - f, e->line, 0);
        if (a) a->atom = e->sub;
    }
    else if (e->op == IR_CALL) walk_call(X, e);
}

/* Count assignments per local in s (a for loop's variable counts twice). */
static void count_assigns(dx *X, const tk_ir *s) {
    if (!s) return;
    if (s->op == IR_ASSIGN || s->op == IR_SETCOMP) {
        X->nas[s->local] += s->op == IR_SETCOMP ? 2 : 1;
        X->vary[s->local] = 1;
        X->byassign[s->local] = 1;
    } else if (s->op == IR_FOR) {
        X->nas[s->local] += 2;
        X->vary[s->local] = 1;
    }
    if (s->op >= IR_BLOCK)
        for (int i = 0; i < s->n; i++) count_assigns(X, s->k[i]);
}

/* One round of the fixed point: a local differs between iterations when a
 * value assigned to it does, or it is assigned under control that does. */
static int dep_round(dx *X, const tk_ir *s, int cdep) {
    if (!s) return 0;
    int ch = 0;
    switch (s->op) {
    case IR_ASSIGN: case IR_SETCOMP:
        if (!X->dep[s->local] && (cdep || edep(X, s))) { X->dep[s->local] = 1; ch = 1; }
        return ch;
    case IR_FOR: {
        int d = cdep || edep(X, s->k[0]) || edep(X, s->k[1]) || edep(X, s->k[2]);
        if (d && !X->dep[s->local]) { X->dep[s->local] = 1; ch = 1; }
        return ch | dep_round(X, s->k[3], d);
    }
    case IR_IF: {
        int d = cdep || edep(X, s->k[0]);
        return dep_round(X, s->k[1], d) | dep_round(X, s->k[2], d);
    }
    case IR_WHILE: return dep_round(X, s->k[1], cdep || edep(X, s->k[0]));
    case IR_BLOCK:
        for (int i = 0; i < s->n; i++) ch |= dep_round(X, s->k[i], cdep);
        return ch;
    default: return 0;
    }
}

static void dx_init(dx *X, dpass *P, tk_spec *S, const tk_ir *body, int cdep) {
    tk_arena *A = &P->C->arena;
    int n = S->nlocals > 0 ? S->nlocals : 1;
    X->P = P;
    X->S = S;
    X->func = S->func;
    X->nas = tk_alloc(A, sizeof(int) * (size_t)n);
    X->dep = tk_alloc(A, sizeof(int) * (size_t)n);
    X->vary = tk_alloc(A, sizeof(int) * (size_t)n);
    X->env = tk_alloc(A, sizeof(dform *) * (size_t)n);
    X->def = tk_alloc(A, sizeof(tk_ir *) * (size_t)n);
    X->fhi = tk_alloc(A, sizeof(tk_ir *) * (size_t)n);
    X->byassign = tk_alloc(A, (size_t)n);
    X->log = tk_alloc(A, sizeof(int) * (size_t)n);
    count_assigns(X, body);
    for (int r = 0; r < 64 && dep_round(X, body, cdep); r++) {}
}

static void forget(dx *X, int n0) {
    while (X->nlog > n0) {
        int l = X->log[--X->nlog];
        X->env[l] = NULL;
        X->def[l] = NULL;
    }
}

/* Variables a condition pins (`v == e`, e the same in every iteration; and-ed). */
static unsigned pins(dx *X, const tk_ir *c) {
    while (c->op == IR_CAST) c = c->k[0];
    if (c->op == IR_AND) return pins(X, c->k[0]) | pins(X, c->k[1]);
    if (c->op != IR_BIN || c->sub != B_EQ) return 0;
    for (int s = 0; s < 2; s++) {
        if (!ty_is_int(c->k[s]->ty) && !ty_is_bool(c->k[s]->ty)) return 0;
        dform a = fm(X, c->k[s]), b = fm(X, c->k[1 - s]);
        if (!a.aff || a.vary || !(b.aff ? !dp_has_var(&b, NV) : !b.dep)) continue;
        int nz = 0, v = -1;
        for (int d = 0; d < X->P->nv; d++)
            if (a.c[d]) { nz++; v = d; }
        if (nz == 1 && !a.sc[v]) return 1u << v;
    }
    return 0;
}

static void stmt(dx *X, const tk_ir *s);

static void block(dx *X, const tk_ir *b, int guard, unsigned pinned) {
    int g0 = X->guard, n0 = X->nlog;
    unsigned p0 = X->pinned;
    X->guard += guard;
    X->pinned |= pinned;
    stmt(X, b);
    X->guard = g0;
    X->pinned = p0;
    forget(X, n0);
}

static void stmt(dx *X, const tk_ir *s) {
    if (!s) return;
    switch (s->op) {
    case IR_BLOCK:
        for (int i = 0; i < s->n; i++) stmt(X, s->k[i]);
        return;
    case IR_ASSIGN:
        scan(X, s->k[0]);
        if (X->nas[s->local] == 1 && ty_is_int(s->k[0]->ty)) {
            dform *f = tk_alloc(&X->P->C->arena, sizeof *f);
            *f = fm(X, s->k[0]);
            X->env[s->local] = f;
            X->def[s->local] = s->k[0];
            X->log[X->nlog++] = s->local;
        } else if (X->nas[s->local] == 1) {
            X->def[s->local] = s->k[0];
            X->log[X->nlog++] = s->local;
        }
        return;
    case IR_STORE:
        for (int i = 0; i < s->n; i++) scan(X, s->k[i]);
        record(X, s, ACC_STORE, s->param, (const tk_ir *const *)s->k + 1, s->n - 1, s->line, !edep(X, s->k[0]));
        return;
    case IR_IF: {
        scan(X, s->k[0]);
        int d = edep(X, s->k[0]);
        block(X, s->k[1], d, d ? pins(X, s->k[0]) : 0);
        block(X, s->k[2], d, 0);
        return;
    }
    case IR_WHILE:
        scan(X, s->k[0]);
        block(X, s->k[1], edep(X, s->k[0]), 0);
        return;
    case IR_FOR: {
        for (int i = 0; i < 3; i++) scan(X, s->k[i]);
        int d = edep(X, s->k[0]) || edep(X, s->k[1]) || edep(X, s->k[2]);
        const tk_ir *saved = X->fhi[s->local];
        int plain = s->k[0]->op == IR_CONST && s->k[0]->c.i == 0 && s->k[2]->op == IR_CONST && s->k[2]->c.i == 1;
        X->fhi[s->local] = plain && !X->byassign[s->local] ? canon(X, s->k[1]) : NULL;
        block(X, s->k[3], d, 0);
        X->fhi[s->local] = saved;
        return;
    }
    default:
        for (int i = 0; i < s->n; i++) scan(X, s->k[i]);
        return;
    }
}

/* A @tack.func call: walk the callee's body with its parameters standing for the arguments. */
static void walk_call(dx *X, const tk_ir *e) {
    dpass *P = X->P;
    tk_spec *S = P->C->specs[e->aux];
    int touches = 0;
    for (int i = 0; i < e->n; i++)
        if (e->k[i]->op == IR_ARRAY) touches = 1;
    if (!touches || !S->body) return; /* no array: nothing it does can race */
    if (X->depth >= MAXCALL) {
        if (!P->deep) { P->deep = 1; P->deep_line = e->line; }
        return;
    }
    tk_arena *A = &P->C->arena;
    int np = S->nparams > 0 ? S->nparams : 1;
    dform *argf = tk_alloc(A, sizeof(dform) * (size_t)np);
    int *argdep = tk_alloc(A, sizeof(int) * (size_t)np);
    int *amap = tk_alloc(A, sizeof(int) * (size_t)np);
    for (int i = 0; i < S->nparams && i < e->n; i++) {
        const tk_ir *a = e->k[i];
        amap[i] = a->op == IR_ARRAY ? root_array(X, a->param) : -1;
        if (a->op != IR_ARRAY && a->op != IR_LARRAY) {
            argf[i] = ty_is_int(a->ty) || ty_is_bool(a->ty) ? fm(X, a) : f_generic(X, a);
            argdep[i] = edep(X, a);
        }
    }
    dx Y;
    memset(&Y, 0, sizeof Y);
    Y.si = e->aux;
    Y.up = X;
    Y.argf = argf;
    Y.argdep = argdep;
    Y.amap = amap;
    Y.depth = X->depth + 1;
    Y.guard = X->guard;
    Y.pinned = X->pinned;
    /* parameters whose arguments differ between iterations are read through argdep */
    dx_init(&Y, P, S, S->body, X->guard > 0);
    stmt(&Y, S->body);
}
/* Which arrays the body writes (stores and atomics, callees included). */
static void written(dpass *P, const tk_ir *s, const int *amap, int depth) {
    if (!s || depth > MAXCALL) return;
    if (s->op == IR_STORE || s->op == IR_ATOMIC) {
        int p = amap ? amap[s->param] : s->param;
        if (p >= 0) P->written |= (uint64_t)1 << (p & 63);
    }
    if (s->op == IR_CALL && depth + 1 > MAXCALL) { /* not followed: what it writes is not known */
        for (int i = 0; i < s->n; i++)
            if (s->k[i]->op == IR_ARRAY && !P->deep) {
                P->deep = 1;
                P->deep_line = s->line;
            }
    } else if (s->op == IR_CALL) {
        tk_spec *S = P->C->specs[s->aux];
        int *m = tk_alloc(&P->C->arena, sizeof(int) * (size_t)(S->nparams > 0 ? S->nparams : 1));
        for (int i = 0; i < S->nparams && i < s->n; i++)
            m[i] = s->k[i]->op == IR_ARRAY ? (amap ? amap[s->k[i]->param] : s->k[i]->param) : -1;
        written(P, S->body, m, depth + 1);
    }
    for (int i = 0; i < s->n; i++) written(P, s->k[i], amap, depth);
}

static int uses_local(const tk_ir *e, int l) {
    if (!e) return 0;
    if (e->op == IR_LOCAL && e->local == l) return 1;
    for (int i = 0; i < e->n; i++)
        if (uses_local(e->k[i], l)) return 1;
    return 0;
}

/* range(lo, hi, step) other than by one runs an index k and starts the body
 * with `i = lo + k * step` (lower_loop.c); an ndrange axis with bounds does
 * the same, one such statement per axis at the top of the body.  Messages
 * name i.  With a step that is not a constant the value is not affine in k,
 * but it is distinct for each k (a zero step raises before the loop), so i
 * itself serves as the axis's variable -- with distances in units of i that
 * the step may skip, so a read at a distance is only a warning. */
static void stepped_var(dpass *P, const tk_ir *body) {
    for (int s = 0; s < body->n && s < P->nv && body->k[s]->op == IR_ASSIGN; s++) {
        const tk_ir *a = body->k[s];
        int d = -1;
        for (int e = 0; e < P->nv; e++)
            if (uses_local(a->k[0], P->pvar[e])) d = d < 0 ? e : -2; /* exactly one axis's index */
        if (d < 0) return;
        int k = P->pvar[d];
        const tk_local *tl = &P->K->locals[k], *ul = &P->K->locals[a->local];
        if (!tl->name || tl->name[0] != '_' || !ty_is_int(a->k[0]->ty)) return;
        const tk_ir *v = a->k[0];
        while (v->op == IR_CAST) v = v->k[0];
        if (v->op != IR_BIN || v->sub != B_ADD || v->k[1]->op != IR_BIN || v->k[1]->sub != B_MUL) return;
        const tk_ir *step = v->k[1]->k[1];
        if (v->k[1]->k[0]->op != IR_LOCAL || v->k[1]->k[0]->local != k) return;
        P->vname[d] = ul->name;
        if (step->op == IR_CONST || uses_local(v->k[0], k) || uses_local(step, k)) continue; /* affine already */
        int again = 0;
        for (int i = 0; i < body->n && !again; i++)
            if (i != s && ir_assigns_local(body->k[i], a->local)) again = 1;
        if (again) return;
        P->pvar[d] = a->local;
        P->ext[d] = -1;
        P->stride = 1;
    }
}

static void check_pfor(tk_cc *C, tk_spec *K, const tk_ir *pf) {
    dpass P;
    memset(&P, 0, sizeof P);
    P.C = C;
    P.K = K;
    P.pf = pf;
    P.nv = pf->aux < NV ? pf->aux : NV;
    for (int d = 0; d < P.nv; d++) {
        P.pvar[d] = pf->vars[d];
        P.ext[d] = pf->k[d]->op == IR_CONST ? pf->k[d]->c.i : -1;
    }
    const tk_ir *body = pf->k[pf->aux];
    P.fdef = tk_alloc(&C->arena, sizeof(tk_ir *) * (size_t)(K->nlocals > 0 ? K->nlocals : 1));
    for (int i = 0; i < K->body->n && K->body->k[i] != pf; i++) { /* kernel locals assigned once, at the top, before the loop */
        const tk_ir *a = K->body->k[i];
        if (a->op != IR_ASSIGN || P.fdef[a->local]) continue;
        int once = 1;
        for (int j = 0; j < K->body->n && once; j++)
            if (j != i && ir_assigns_local(K->body->k[j], a->local)) once = 0;
        if (once) P.fdef[a->local] = a->k[0];
    }
    stepped_var(&P, body);
    written(&P, body, NULL, 0);
    if (!P.written && !P.deep) return; /* a loop that only reads cannot race */
    dx X;
    memset(&X, 0, sizeof X);
    dx_init(&X, &P, K, body, 0);
    stmt(&X, body);
    if (pf->sub) { /* tack.independent: not judged; with check_races, checked as it runs */
        dp_watch(&P);
        return;
    }
    int warned = C->nwarn_calls;
    dp_judge(&P);
    dp_alias(&P);
    if (C->opts.check_races && C->nwarn_calls != warned) dp_watch(&P); /* undecided: checked as it runs */
}

/* Each top-level parallel loop on its own; with check_races, the loops
 * tack.independent vouches for too (for the run-time detector only). */
void tk_depend(tk_cc *C, tk_spec *K) {
    if (!K || !K->body) return;
    for (int i = 0; i < K->body->n; i++) {
        const tk_ir *s = K->body->k[i];
        if (s->op == IR_PFOR && !ir_is_blocks(s) && (!s->sub || C->opts.check_races)) check_pfor(C, K, s);
    }
}
