/*
 * depend_judge.c -- the race check's judgement: which of a parallel loop's
 * accesses, collected by depend.c, can meet in two iterations, and what to
 * tell the user.
 *
 * A plain store whose coefficient columns have full rank (over the loop
 * variables no condition pins) writes distinct elements in distinct
 * iterations.  One whose index misses a variable surely meets itself in
 * iterations that differ only in that variable: a CompileError, unless the
 * value stored is the same in every iteration or a condition that differs
 * between iterations guards it (then a warning) -- except a guarded store to
 * one cell for all iterations that the loop also reads there (`if x[i] >
 * m[0]: m[0] = ...`, read by all, written by some): a CompileError.  A read (or an atomic) of a
 * written array is the iteration's own when its index is the write's; at a
 * constant distance the distance is solved exactly, row by row; a flattened
 * dimension split the same way keeps iterations apart by its block.  What
 * cannot be decided is a tack.RaceWarning, once per array and loop.
 * Messages name the array, the index as written, the lines and the fix;
 * a time loop at the top of a kernel gets its own.
 */
#include <string.h>

#include "compiler/analysis/depend.h"

/* ------------------------------------------------------- judgement */
/* The rank of the coefficient columns of the access's affine rows, over the
 * loop variables not pinned; 1 when it is full (distinct iterations touch
 * distinct elements). */
static int injective(const dpass *P, const dacc *a, unsigned pinned) {
    int64_t m[2 * NV][NV];
    int rows = 0, cols[NV], nc = 0;
    for (int d = 0; d < P->nv; d++)
        if (!(pinned >> d & 1)) cols[nc++] = d;
    if (nc == 0) return 1;
    for (int i = 0; i < a->nidx; i++) {
        int sym = 0;
        for (int d = 0; d < NV; d++)
            if (a->idx[i].sc[d]) sym = 1;
        if (a->dl[i]) { /* a flattened dimension: the block's variable, and the one within it */
            for (int j = 0; j < nc; j++) m[rows][j] = cols[j] == a->da[i];
            rows++;
            if (a->dl[i] == 2) {
                for (int j = 0; j < nc; j++) m[rows][j] = cols[j] == a->db[i];
                rows++;
            }
            continue;
        }
        if (!a->idx[i].aff || a->idx[i].vary || sym) continue;
        for (int j = 0; j < nc; j++) m[rows][j] = a->idx[i].c[cols[j]];
        rows++;
    }
    int rank = 0;
    for (int j = 0; j < nc && rank < rows; j++) {
        int p = -1;
        for (int i = rank; i < rows; i++)
            if (m[i][j]) { p = i; break; }
        if (p < 0) continue;
        for (int q = 0; q < nc; q++) { int64_t t = m[p][q]; m[p][q] = m[rank][q]; m[rank][q] = t; }
        for (int i = rank + 1; i < rows; i++) {
            if (!m[i][j]) continue;
            int64_t f = m[i][j], g = m[rank][j];
            for (int q = 0; q < nc; q++) m[i][q] = m[i][q] * g - m[rank][q] * f; /* small integers */
        }
        rank++;
    }
    return rank == nc;
}

/* The loop variables (not pinned, with more than one value) that no index of
 * the access depends on, when that is sure: iterations that differ only in
 * them touch the same elements.  0 when an index may depend on anything. */
static unsigned missing_vars(const dpass *P, const dacc *a, unsigned pinned) {
    unsigned miss = 0;
    for (int d = 0; d < P->nv; d++)
        if (!(pinned >> d & 1) && P->ext[d] != 0 && P->ext[d] != 1) miss |= 1u << d;
    for (int i = 0; i < a->nidx; i++) {
        const dform *f = &a->idx[i];
        if (!f->aff) {
            if (f->dep) return 0;
            continue;
        }
        for (int d = 0; d < P->nv; d++)
            if (f->c[d]) miss &= ~(1u << d);
    }
    return miss;
}

static int same_index(const dacc *a, const dacc *b) {
    if (a->nidx != b->nidx) return 0;
    for (int i = 0; i < a->nidx; i++) {
        const dform *x = &a->idx[i], *y = &b->idx[i];
        if (x->aff && y->aff && dp_same_shape(x, y) && x->k == y->k) continue;
        if (!dp_ir_same(a->raw[i], b->raw[i]) || a->func != b->func) return 0;
    }
    return 1;
}

/* Read r of the element write w writes: -1 no iteration reads another's
 * element, 1 some iteration surely does (the distance in *dist), 0 unknown.
 * The dimensions where both indices are affine with the same coefficients
 * are solved for the distance between the iterations; the others (a serial
 * loop's variable, a[idx[j]]) cannot make two iterations meet where these
 * already keep them apart, but cannot make a meeting certain either. */
static int distance(const dpass *P, const dacc *w, const dacc *r, int64_t *dist) {
    if (w->nidx != r->nidx) return 0;
    int use[NV], skipped = 0; /* the dimensions compared: affine, with the same coefficients */
    for (int i = 0; i < w->nidx; i++) {
        use[i] = dp_same_shape(&w->idx[i], &r->idx[i]);
        for (int d = 0; d < NV; d++)
            if (w->idx[i].sc[d]) use[i] = 0; /* a symbolic coefficient: no exact distance */
    }
    int known[NV] = {0};
    int64_t t[NV] = {0};
    for (int i = 0; i < w->nidx; i++) { /* flattened the same way: the blocks keep iterations apart */
        int a = w->da[i];
        if (!w->dl[i] || w->dl[i] != r->dl[i] || a != r->da[i] || !dp_ir_same(w->idx[i].sc[a], r->idx[i].sc[a]))
            continue;
        if (w->dl[i] == 2 && (w->db[i] != r->db[i] || !dp_same_shape(&w->idx[i], &r->idx[i]))) continue;
        known[a] = 1;
        if (w->dl[i] == 2) known[(int)w->db[i]] = 1;
        use[i] = 2; /* accounted for */
    }
    for (int i = 0; i < w->nidx; i++) skipped |= !use[i];
    int progress = 1;
    while (progress) {
        progress = 0;
        for (int i = 0; i < w->nidx; i++) {
            if (use[i] != 1) continue;
            const dform *f = &w->idx[i];
            int64_t rem = r->idx[i].k - f->k;
            int unk = -1, nunk = 0;
            for (int d = 0; d < P->nv; d++) {
                if (!f->c[d]) continue;
                if (known[d]) rem -= f->c[d] * t[d];
                else { unk = d; nunk++; }
            }
            if (nunk == 0) {
                if (rem != 0) return -1; /* inconsistent: no iteration meets another */
                continue;
            }
            if (nunk > 1) continue;
            if (rem % f->c[unk]) return -1;
            t[unk] = rem / f->c[unk];
            known[unk] = 1;
            progress = 1;
        }
    }
    int any = 0;
    for (int d = 0; d < P->nv; d++) {
        if (!known[d]) return 0;
        if (t[d]) any = 1;
        if (P->ext[d] >= 0 && (t[d] >= P->ext[d] || -t[d] >= P->ext[d])) return -1;
        dist[d] = t[d];
    }
    if (!any) return -1; /* only the same iteration meets it */
    return skipped ? 0 : 1;
}

static const char *var_name(const dpass *P, int d) {
    if (P->vname[d]) return P->vname[d];
    const tk_local *l = &P->K->locals[P->pvar[d]];
    return l->name ? l->name : "?";
}

static const char *loop_vars(const dpass *P) {
    tk_buf b;
    tk_buf_init(&b, &P->C->arena);
    for (int d = 0; d < P->nv; d++) tk_printf(&b, "%s'%s'", d ? ", " : "", var_name(P, d));
    return b.s;
}

/* Whether the loop's body holds a serial loop: with a loop variable that no
 * index uses, the shape of a time loop written at the top of the kernel. */
static int has_serial_loop(const tk_ir *s) {
    if (!s) return 0;
    if (s->op == IR_FOR || s->op == IR_WHILE) return 1;
    if (s->op >= IR_BLOCK)
        for (int i = 0; i < s->n; i++)
            if (has_serial_loop(s->k[i])) return 1;
    return 0;
}

static int var_used(const dpass *P) {
    for (int i = 0; i < P->nacc; i++)
        if (P->acc[i].kind != ACC_READ)
        for (int j = 0; j < P->acc[i].nidx; j++) {
            const dform *f = &P->acc[i].idx[j];
            if (!f->aff && f->dep) return 1;
            if (f->aff && dp_has_var(f, P->nv)) return 1;
        }
    return 0;
}

/* Whether the loop also reads the element store w writes, at the same index
 * (the test of `if v > a[0]: a[0] = w`). */
static int reads_own_cell(const dpass *P, const dacc *w) {
    for (int j = 0; j < P->nacc; j++) {
        const dacc *r = &P->acc[j];
        if (r != w && r->kind == ACC_LOAD && r->param == w->param && same_index(w, r)) return 1;
    }
    return 0;
}

static const char *OPTOUT = "if the iterations really never touch one element, say so with "
                            "tack.independent(range(...)) around this loop's range";

void dp_judge(dpass *P) {
    tk_cc *C = P->C;
    const tk_ir *pf = P->pf;
    int kf = P->K->func, pl = pf->line;
    const char *vars = loop_vars(P);
    int64_t total = 1;
    for (int d = 0; d < P->nv; d++) total = P->ext[d] < 0 || total < 0 ? -1 : total * P->ext[d];
    if (total >= 0 && total <= 1) return; /* for t in range(1): one iteration, nothing runs at once */
    uint64_t warned = 0;
    /* writes against writes */
    for (int i = 0; i < P->nacc; i++) {
        dacc *w = &P->acc[i];
        if (w->kind != ACC_STORE) continue;
        if (injective(P, w, w->pinned)) continue;
        unsigned miss = missing_vars(P, w, w->pinned);
        if (miss) {
            if (w->valinv) continue; /* the same value from every iteration */
            if (!w->guard && miss != ((1u << P->nv) - 1)) {
                tk_buf b;
                tk_buf_init(&b, &C->arena);
                for (int d = 0; d < P->nv; d++)
                    if (miss >> d & 1) tk_printf(&b, "%s'%s'", b.len ? ", " : "", var_name(P, d));
                tk_error(C, w->func, w->line, 0,
                         "race: iterations of the parallel loop over %s (line %d) that differ only in %s all write "
                         "%s (line %d): the index does not depend on %s, so they overwrite each other in an order "
                         "that changes from run to run. Sum with += / -= (atomic), or loop over %s serially inside "
                         "the body and store once; %s",
                         vars, pl, b.s, w->text, w->line, b.s, b.s, OPTOUT);
            }
            if (w->guard && miss == ((1u << P->nv) - 1) && reads_own_cell(P, w))
                tk_error(C, w->func, w->line, 0,
                         "race: every iteration of the parallel loop over %s (line %d) reads %s and those whose "
                         "condition holds write it (line %d): an iteration can overwrite what another has just "
                         "stored, so the result changes from run to run. A running maximum or minimum is "
                         "tack.atomic_max / tack.atomic_min (Tack writes `if v > a[k]: a[k] = v` that way itself); "
                         "a sum is +=; %s",
                         vars, pl, w->text, w->line, OPTOUT);
            if (!w->guard) {
                if (P->nv == 1 && !var_used(P) && has_serial_loop(pf->k[pf->aux]))
                    tk_error(C, w->func, w->line, 0,
                             "race: the parallel loop over %s (line %d) has iterations that all write %s at once "
                             "(line %d): its loop variable is used in no index, so it looks like a time loop, and "
                             "a kernel's top-level loops run their iterations in parallel, not one after another. "
                             "Call the kernel once per step from Python (for t in range(steps): kernel(...)), "
                             "with the loops over the elements at the top of the kernel; %s",
                             vars, pl, w->text, w->line, OPTOUT);
                tk_error(C, w->func, w->line, 0,
                         "race: every iteration of the parallel loop over %s (line %d) writes %s (line %d): the index "
                         "does not depend on the loop variable, so iterations overwrite each other in an order that "
                         "changes from run to run. For a reduction use += / -= (atomic) or tack.atomic_min / "
                         "tack.atomic_max; for serial work put it in a loop of one iteration (for t in range(1): ...); %s",
                         vars, pl, w->text, w->line, OPTOUT);
            }
        }
        if (!(warned >> (w->param & 63) & 1)) {
            warned |= (uint64_t)1 << (w->param & 63);
            tk_warn(C, w->func, w->line,
                    "possible race: %s (line %d) may be written by several iterations of the parallel loop over %s "
                    "(line %d) -- Tack cannot prove the index differs between iterations. Use += / -= or "
                    "tack.atomic_* to combine, or write to distinct elements; %s",
                    w->text, w->line, vars, pl, OPTOUT);
        }
    }
    /* reads against writes */
    for (int i = 0; i < P->nacc; i++) {
        dacc *w = &P->acc[i];
        if (w->kind == ACC_LOAD || w->kind == ACC_READ) continue;
        for (int j = 0; j < P->nacc; j++) {
            dacc *r = &P->acc[j];
            if (r->param != w->param || i == j) continue;
            if (r->kind == ACC_STORE || (r->kind == ACC_ATOMIC && w->kind == ACC_ATOMIC)) continue;
            if (warned >> (w->param & 63) & 1) break;
            if (same_index(w, r) && (w->kind == ACC_STORE ? injective(P, w, w->pinned) : injective(P, w, 0)))
                continue; /* the iteration's own element */
            int64_t dist[NV];
            int k = !w->pinned && !r->pinned ? distance(P, w, r, dist) : 0;
            if (k < 0) continue;
            if (k > 0 && !w->guard && !r->guard && !P->stride) {
                tk_buf b;
                tk_buf_init(&b, &C->arena);
                tk_buf v;
                tk_buf_init(&v, &C->arena);
                for (int d = 0; d < P->nv; d++) { /* iteration x reads what iteration x + dist writes */
                    tk_printf(&v, "%s%s", d ? ", " : "", var_name(P, d));
                    if (dist[d]) tk_printf(&b, "%s%s %s %lld", b.len ? ", " : "", var_name(P, d), dist[d] > 0 ? "+" : "-",
                                           (long long)(dist[d] > 0 ? dist[d] : -dist[d]));
                    else tk_printf(&b, "%s%s", b.len ? ", " : "", var_name(P, d));
                }
                tk_error(C, r->func, r->line, 0,
                         "race: the parallel loop over %s (line %d) writes %s (line %d) and reads %s (line %d): "
                         "iteration %s%s%s reads the element that iteration %s%s%s writes, at the same time, so the value "
                         "it sees changes from run to run. Write the results to another array (out[...] = ... "
                         "%s ...) and use it after the loop, or swap the two arrays between calls; %s",
                         vars, pl, w->text, w->line, r->text, r->line, P->nv > 1 ? "(" : "", v.s, P->nv > 1 ? ")" : "",
                         P->nv > 1 ? "(" : "", b.s, P->nv > 1 ? ")" : "", r->text, OPTOUT);
            }
            warned |= (uint64_t)1 << (w->param & 63);
            tk_warn(C, r->func, r->line,
                    "possible race: the parallel loop over %s (line %d) writes %s (line %d) and reads %s (line %d); "
                    "Tack cannot prove that no iteration reads an element another one writes. Read from one array "
                    "and write another; %s",
                    vars, pl, w->text, w->line, r->text, r->line, OPTOUT);
            break;
        }
    }
    if (P->deep)
        tk_warn(C, kf, P->deep_line,
                "possible race: the race check does not follow @tack.func calls nested more than %d deep (line %d)",
                MAXCALL, P->deep_line);
}

/* ------------------------------------------------------------ aliasing */
/* The race check knows arrays by parameter; at the call two parameters may
 * be one array (step(u, v, u, v)) or views that share bytes.  For each pair
 * of array parameters this loop touches, one of them written, record what
 * such a call would break, for the launch to refuse it (runtime/program.c):
 *
 *   alias_part  the two share bytes without being one array: any access to
 *               one may meet another iteration's write to the other (a
 *               shifted view turns a[i] into a[i + 1]) -- a hazard unless
 *               every access to both is an atomic update that commutes with
 *               the others (all adds, or all mins, or all maxes);
 *   alias_same  the two are one array: safe only when every access to one
 *               meets the other's writes at the writing iteration's own
 *               element -- the judge's tests for one array (the same index
 *               as a write that distinct iterations give distinct elements,
 *               or no two iterations meeting at all) applied across the
 *               pair: u2[i] = f(u[i]) in place -- or both are atomic adds,
 *               which commute.
 *
 * A loop of one iteration has nothing running at once. */
/* Whether access r, of the other parameter, meets write w only at w's own
 * element: the same index as a write distinct iterations give distinct
 * elements, or no solution for two iterations meeting (the judge's own
 * tests for one array, applied across the two). */
static int commute(const dacc *w, const dacc *r) {
    int wa = w->atom == A_ADD || w->atom == A_SUB, ra = r->atom == A_ADD || r->atom == A_SUB;
    return w->kind == ACC_ATOMIC && r->kind == ACC_ATOMIC && tk_atom_commutes(w->atom) &&
           (wa ? ra : !ra && w->atom == r->atom);
}

static int only_own(const dpass *P, const dacc *w, const dacc *r) {
    if (commute(w, r)) return 1; /* adds (or all mins, all maxes) in any order */
    if (same_index(w, r) && injective(P, w, w->kind == ACC_STORE ? w->pinned : 0)) return 1;
    int64_t dist[NV];
    return !w->pinned && !r->pinned && !P->stride && distance(P, w, r, dist) < 0;
}

static int own_element_only(const dpass *P, int a, int b) {
    for (int i = 0; i < P->nacc; i++) {
        const dacc *w = &P->acc[i];
        if ((w->param != a && w->param != b) || (w->kind != ACC_STORE && w->kind != ACC_ATOMIC)) continue;
        int other = w->param == a ? b : a;
        for (int j = 0; j < P->nacc; j++) {
            const dacc *r = &P->acc[j];
            if (r->param == other && !only_own(P, w, r)) return 0;
        }
    }
    return 1;
}

/* Whether every access to a or b is an atomic update that commutes with the others. */
static int commuting_only(const dpass *P, int a, int b) {
    const dacc *first = NULL;
    for (int i = 0; i < P->nacc; i++) {
        const dacc *x = &P->acc[i];
        if (x->param != a && x->param != b) continue;
        if (x->kind != ACC_ATOMIC) return 0;
        if (!first) first = x;
        else if (!commute(first, x)) return 0;
    }
    return 1;
}

void dp_alias(dpass *P) {
    tk_cc *C = P->C;
    int np = P->K->nparams;
    int64_t total = 1;
    for (int d = 0; d < P->nv; d++) total = P->ext[d] < 0 || total < 0 ? -1 : total * P->ext[d];
    if ((total >= 0 && total <= 1) || np <= 1) return;
    uint64_t touched = 0;
    for (int i = 0; i < P->nacc; i++)
        if (P->acc[i].param >= 0 && P->acc[i].param < 64) touched |= (uint64_t)1 << P->acc[i].param;
    for (int a = 0; a < np && a < 64; a++) {
        if (!(touched >> a & 1)) continue;
        for (int b = a + 1; b < np && b < 64; b++) {
            if (!(touched >> b & 1) || !((P->written >> a & 1) || (P->written >> b & 1))) continue;
            if (!C->alias_same) {
                C->alias_same = tk_alloc(&C->arena, sizeof(uint64_t) * (size_t)np);
                C->alias_part = tk_alloc(&C->arena, sizeof(uint64_t) * (size_t)np);
                memset(C->alias_same, 0, sizeof(uint64_t) * (size_t)np);
                memset(C->alias_part, 0, sizeof(uint64_t) * (size_t)np);
            }
            if (!commuting_only(P, a, b)) {
                C->alias_part[a] |= (uint64_t)1 << b;
                C->alias_part[b] |= (uint64_t)1 << a;
            }
            if (!own_element_only(P, a, b)) {
                C->alias_same[a] |= (uint64_t)1 << b;
                C->alias_same[b] |= (uint64_t)1 << a;
            }
        }
    }
}
