/*
 * races.c -- the run-time race detector's shadow memory and its verdict.
 *
 * The race check (compiler/depend.c) decides most parallel loops at compile
 * time; what it cannot decide -- `out[idx[i]] = x[i]`, where only the data
 * says whether two iterations name one element -- it warns of
 * (tack.RaceWarning).  A kernel compiled with check_races=True runs those
 * loops (and the ones tack.independent vouches for) instrumented: every load,
 * store and atomic update of an array the loop writes -- in its body and in
 * the @tack.func functions it calls -- records itself in
 * shadow memory kept here, and the first conflict between two iterations
 * stops the launch with a tack.RaceError that names the array, the element,
 * both iterations and both source lines.
 *
 * What a conflict is.  The iterations of a parallel loop run at once, in no
 * order, so the detector does not ask which happened first: any two
 * different iterations that touch one element, one with a plain write, or
 * one with a plain read and the other with an atomic update, conflict --
 * whether they ran on one thread or two, a microsecond or a second apart.
 * Atomic updates never conflict with each other, nor reads with reads.  So
 * the verdict is the same on every run and with any number of threads: a
 * loop that passes has no two iterations meeting on the data it ran with.
 *
 * The shadow.  One record per element of each array the loop writes,
 * zeroed when the loop starts (begin, from the generated entry, before
 * parallel_for) and freed when the next starts or the launch ends: word 0
 * the element's plain writer, words 1-2 two of its readers, and for an
 * array the loop also updates atomically words 3-4 two of its updaters.
 * A word holds a tag: the access's site (its source line and text, from the
 * program's table) in the top 16 bits over the iteration's flat index + 1.
 * A writer claims word 0 by compare-and-swap from zero (a second writer
 * finds another iteration there: write-write), then reads the other words;
 * a reader or an updater claims a free word of its two (or finds its own
 * iteration there; with both held by other iterations it records nothing
 * more, since any later conflict has one of those two to name), then reads
 * word 0 and the other kind's two.  Every one of those steps is a
 * sequentially consistent atomic, which makes each pair of accesses a
 * Dekker pair: of two iterations that each record and then look, at least
 * one sees the other.  So the detector misses no conflict, needs no lock,
 * and costs a few atomics an access (the code that does it is inline in
 * the kernel, compiler/passes/race_watch.c; only a conflict calls into libtack).
 *
 * Stopping.  The first conflict is kept (a compare-and-swap on `found`) and
 * the generated code calls abi->fail with TK_SITE_RACE, which sets the
 * launch's failed flag; every instrumented iteration tests that flag before
 * it starts and serial loops poll it, as they do for Ctrl-C, so the launch
 * ends within an iteration on every thread.  cpu_jit.c then asks
 * rt_race_error for the message.  The arrays hold whatever the iterations
 * that ran wrote.
 *
 * Shadow memory comes from calloc, not the allocator hook: it can be many
 * times the arrays' size (24 or 40 bytes an element), and calloc's large
 * blocks arrive as zero pages the kernel maps only where they are touched.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/races.h"
#include "runtime/runtime.h"

#define ITER_MASK (((uint64_t)1 << TK_RACE_ITER_BITS) - 1)

struct rt_race {
    tk_rc head;                 /* must stay first: the generated code's view */
    const tack_program *p;
    tk_rcs *s;                  /* per parameter */
    int64_t (*shape)[TACK_MAX_NDIM];
    int64_t (*stride)[TACK_MAX_NDIM]; /* element strides (C order's for a contiguous array) */
    /* the loop running */
    int loop;
    int64_t pn[TACK_MAX_NDIM], lo[TACK_MAX_NDIM], step[TACK_MAX_NDIM];
    /* the first conflict, or why the detector could not run */
    int found;
    int param, how;
    int64_t at;
    uint64_t mine, theirs;
    int nomem_param;            /* begin: out of memory for this array's shadow (-1: none) */
    uint64_t nomem_bytes;
    int too_long;               /* begin: more iterations than a tag holds */
};

static void free_shadows(rt_race *r) {
    for (int i = 0; i < r->p->nparams; i++) {
        free(r->s[i].w);
        memset(&r->s[i], 0, sizeof r->s[i]);
    }
}

static int race_begin(tk_rc *rc, int loop, const int64_t *pn, const int64_t *lo, const int64_t *step) {
    rt_race *r = (rt_race *)rc;
    const tk_rloop *L = &r->p->rloops[loop];
    free_shadows(r);
    r->loop = loop;
    uint64_t total = 1;
    for (int d = 0; d < L->nd; d++) {
        r->pn[d] = pn[d];
        r->lo[d] = lo[d];
        r->step[d] = step[d];
        uint64_t n = pn[d] > 0 ? (uint64_t)pn[d] : 0;
        total = n && total > ITER_MASK / n ? ITER_MASK : total * n;
    }
    if (total >= ITER_MASK) {
        r->too_long = 1;
        return 1;
    }
    for (int i = 0; i < r->p->nparams; i++) {
        int width = L->width[i];
        if (!width) continue;
        int nd = r->p->params[i].ndim;
        int64_t lo_off = 0, hi_off = 0, empty = 0;
        for (int k = 0; k < nd; k++) {
            int64_t span = (r->shape[i][k] - 1) * r->stride[i][k];
            if (r->shape[i][k] <= 0) empty = 1;
            if (span < 0) lo_off += span;
            else hi_off += span;
        }
        if (empty) continue; /* nothing to touch: the hook finds len 0 */
        uint64_t len = (uint64_t)(hi_off - lo_off) + 1;
        uint64_t *w = len <= SIZE_MAX / 8 / (uint64_t)width ? calloc((size_t)len * (size_t)width, 8) : NULL;
        if (!w) {
            r->nomem_param = i;
            r->nomem_bytes = len * (uint64_t)width * 8;
            return 1;
        }
        r->s[i].w = w;
        r->s[i].base = -lo_off;
        r->s[i].len = (int64_t)len;
        r->s[i].width = width;
    }
    return 0;
}

static void race_conflict(tk_rc *rc, int param, int64_t at, uint64_t mine, uint64_t theirs, int how) {
    rt_race *r = (rt_race *)rc;
    int expected = 0;
    if (!__atomic_compare_exchange_n(&r->found, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return;
    r->param = param;
    r->at = at;
    r->mine = mine;
    r->theirs = theirs;
    r->how = how;
}

rt_race *rt_race_new(const tack_program *p, const tack_arg *args, int nargs) {
    rt_race *r = tack_calloc(1, sizeof *r);
    int n = p->nparams > 0 ? p->nparams : 1;
    if (r) {
        r->s = tack_calloc((size_t)n, sizeof *r->s);
        r->shape = tack_calloc((size_t)n, sizeof *r->shape);
        r->stride = tack_calloc((size_t)n, sizeof *r->stride);
    }
    if (!r || !r->s || !r->shape || !r->stride) {
        rt_race_free(r);
        tack_set_error(TACK_ERR_NOMEM, "out of memory starting the race detector of kernel '%s'", p->kernel_name);
        return NULL;
    }
    r->p = p;
    r->nomem_param = -1;
    r->head.begin = race_begin;
    r->head.conflict = race_conflict;
    r->head.s = r->s;
    for (int i = 0; i < nargs && i < p->nparams; i++) {
        if (!p->params[i].is_array) continue;
        const int64_t *shape = tack_array_shape(args[i].array);
        const int64_t *strides = p->params[i].strided ? tack_array_strides(args[i].array) : NULL;
        int64_t c = 1;
        for (int k = p->params[i].ndim - 1; k >= 0; k--) {
            r->shape[i][k] = shape[k];
            r->stride[i][k] = strides ? strides[k] : c;
            c *= shape[k];
        }
    }
    return r;
}

tk_rc *rt_race_head(rt_race *r) { return &r->head; }

void rt_race_free(rt_race *r) {
    if (!r) return;
    if (r->s && r->p) free_shadows(r);
    tack_free(r->s);
    tack_free(r->shape);
    tack_free(r->stride);
    tack_free(r);
}

/* ------------------------------------------------------------ the verdict */
/* "i=3" or "i=1, j=2": the loop's variables in iteration `it` (flat). */
static void iteration_text(const rt_race *r, uint64_t it, char *out, size_t n) {
    const tk_rloop *L = &r->p->rloops[r->loop];
    int64_t k[TACK_MAX_NDIM];
    for (int d = L->nd - 1; d >= 0; d--) {
        uint64_t e = r->pn[d] > 0 ? (uint64_t)r->pn[d] : 1;
        k[d] = (int64_t)(it % e);
        it /= e;
    }
    size_t len = 0;
    out[0] = 0;
    for (int d = 0; d < L->nd && len < n; d++) {
        long long v = (long long)((uint64_t)r->lo[d] + (uint64_t)k[d] * (uint64_t)r->step[d]);
        int w = snprintf(out + len, n - len, "%s%s=%lld", d ? ", " : "", L->vars[d] ? L->vars[d] : "?", v);
        len += w > 0 ? (size_t)w : 0;
    }
}

/* The element at offset `at` of array param as an index: "5" or "1, 2"
 * (a strided view's offset taken apart by its strides, largest first). */
static void element_text(const rt_race *r, int param, int64_t at, char *out, size_t n) {
    int nd = r->p->params[param].ndim;
    int64_t off = at, idx[TACK_MAX_NDIM] = {0};
    int order[TACK_MAX_NDIM], done[TACK_MAX_NDIM] = {0};
    for (int k = 0; k < nd; k++) /* a negative stride counts from the axis's other end */
        if (r->stride[param][k] < 0) off -= (r->shape[param][k] - 1) * r->stride[param][k];
    for (int j = 0; j < nd; j++) {
        int best = -1;
        for (int k = 0; k < nd; k++) {
            int64_t a = r->stride[param][k] < 0 ? -r->stride[param][k] : r->stride[param][k];
            int64_t b = best < 0 ? -1 : r->stride[param][best] < 0 ? -r->stride[param][best] : r->stride[param][best];
            if (!done[k] && a > b) best = k;
        }
        if (best < 0) break;
        done[best] = 1;
        order[j] = best;
    }
    for (int j = 0; j < nd; j++) {
        int k = order[j];
        int64_t t = r->stride[param][k] < 0 ? -r->stride[param][k] : r->stride[param][k];
        int64_t q = t ? off / t : 0;
        if (q < 0) q = 0;
        if (q > r->shape[param][k] - 1) q = r->shape[param][k] - 1;
        off -= q * t;
        idx[k] = r->stride[param][k] < 0 ? r->shape[param][k] - 1 - q : q;
    }
    if (off != 0 || nd == 0) {
        snprintf(out, n, "%s(memory offset %lld)", nd ? "" : "", (long long)at);
        return;
    }
    size_t len = 0;
    out[0] = 0;
    for (int k = 0; k < nd && len < n; k++) {
        int w = snprintf(out + len, n - len, "%s%lld", k ? ", " : "", (long long)idx[k]);
        len += w > 0 ? (size_t)w : 0;
    }
}

static const char *verb(int kind) { return kind == 0 ? "reads" : kind == 1 ? "writes" : "updates atomically"; }

tack_status rt_race_error(const tack_program *p, const rt_race *r) {
    if (!r) return tack_set_error(TACK_ERR_RUNTIME, "kernel '%s' failed its race check", p->kernel_name);
    const tk_rloop *L = &p->rloops[r->loop];
    if (r->too_long)
        return tack_set_error(TACK_ERR_VALUE,
                              "the race detector (check_races) of kernel '%s' counts at most 2**48 - 2 iterations "
                              "of a parallel loop, and the loop at %s:%d has more", p->kernel_name,
                              L->file ? L->file : "?", L->line);
    if (r->nomem_param >= 0)
        return tack_set_error(TACK_ERR_NOMEM,
                              "out of memory for the race detector's shadow of array '%s' (%llu bytes) in kernel "
                              "'%s': check the kernel on smaller arrays, or run it without check_races",
                              p->params[r->nomem_param].name, (unsigned long long)r->nomem_bytes, p->kernel_name);
    if (!r->found) return tack_set_error(TACK_ERR_RUNTIME, "kernel '%s' failed its race check", p->kernel_name);
    /* the earlier iteration first */
    uint64_t a = r->theirs, b = r->mine;
    int ka = r->how % 4, kb = r->how / 4;
    if ((b & ITER_MASK) < (a & ITER_MASK)) {
        uint64_t t = a;
        a = b;
        b = t;
        int k = ka;
        ka = kb;
        kb = k;
    }
    const tk_rsite *sa = &p->rsites[a >> TK_RACE_ITER_BITS], *sb = &p->rsites[b >> TK_RACE_ITER_BITS];
    char ia[256], ib[256], el[256], vars[256];
    iteration_text(r, (a & ITER_MASK) - 1, ia, sizeof ia);
    iteration_text(r, (b & ITER_MASK) - 1, ib, sizeof ib);
    element_text(r, r->param, r->at, el, sizeof el);
    size_t len = 0;
    vars[0] = 0;
    for (int d = 0; d < L->nd && len < sizeof vars; d++) {
        int w = snprintf(vars + len, sizeof vars - len, "%s'%s'", d ? ", " : "", L->vars[d] ? L->vars[d] : "?");
        len += w > 0 ? (size_t)w : 0;
    }
    const char *name = p->params[r->param].name;
    return tack_set_error(TACK_ERR_RACE,
                          "race in kernel '%s': iteration %s %s %s[%s] (%s:%d: %s) and iteration %s %s it (%s:%d: %s). "
                          "The iterations of the parallel loop over %s (%s:%d) run at once, so two that touch one "
                          "element, one of them writing it, give a result that depends on timing. Write to distinct "
                          "elements, combine with += / tack.atomic_*, or read from one array and write another",
                          p->kernel_name, ia, verb(ka), name, el, sa->file ? sa->file : "?", sa->line,
                          sa->text ? sa->text : "?", ib, verb(kb), sb->file ? sb->file : "?", sb->line,
                          sb->text ? sb->text : "?", vars, L->file ? L->file : "?", L->line);
}
