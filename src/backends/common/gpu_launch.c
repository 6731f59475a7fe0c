/*
 * gpu_launch.c -- what the CUDA and HIP launchers share beyond the error
 * record (gpu_common.c): the two drivers' module APIs are twins, so their
 * launchers agree on the kernel's layout comment, the grid of each phase,
 * the 8-byte argument slots, when a call returns, and what a lost device
 * means.  Each of them keeps only its driver calls (cuda_launch.c,
 * hip_launch.c).
 *
 *   - The layout comment of the CUDA-family dialects
 *     (`/ * tack-cuda: phases=psp frame=N block=B * /`, tack-hip alike) and
 *     the loops' extents after it (`/ * tack-grid-work: K:EXPR ... * /`,
 *     layout_grid.c's postfix), read into a gpu_grid.
 *
 *   - A parallel phase's grid: ceil(work / block) blocks, at least one, at
 *     most what fills the device (every multiprocessor or compute unit
 *     holding as many blocks as it keeps resident); the whole device when
 *     the work is not known on the host.  The phases are grid-stride loops,
 *     so any grid is correct; sizing only spares launching blocks with
 *     nothing to do.  The OpenCL, Level Zero and Metal launchers size
 *     theirs here too (gpu_grid_work, gpu_phase_grid), OpenCL and Level
 *     Zero with each phase's own work-group size (grid.local).
 *
 *   - The slots: error record, frame, program id, then per parameter an
 *     array's address and extents or a scalar's bits; and whether an array
 *     argument is shared with another library, in which case the launch
 *     must have finished before the call returns ("When a call returns").
 *     gpu_launch_phases is that whole sequence over a backend's two driver
 *     hooks: queue one phase, wait for the stream; and, while a profile
 *     records, two more that put an event on the stream before and after
 *     the phases, for the launch's time on the device (profile.c).
 *
 *   - A blocks loop's block (gpu_block_check): B threads exactly, so a B
 *     over what the compiled kernel allows (its registers can make that
 *     less than the device's 1024) or shared arrays over the device's
 *     shared memory a block is a ValueError at build naming the kernel, B
 *     and the limit, never a smaller block nor the driver's launch error.
 *
 *   - A lost device (gpu_lost): an illegal address, a trap, a failed launch
 *     leave a CUDA context -- and a HIP device -- unusable for the rest of
 *     the process.  The first such error marks the device lost; it is
 *     reported once, naming the kernel launched last, and every later
 *     operation fails at once with "unusable since" without calling the
 *     driver.  Each backend names its codes (CUDA_ERROR_ILLEGAL_ADDRESS,
 *     hipErrorIllegalAddress) and says who else is affected.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/common/gpu_common.h"

/* --------------------------------------------------------------- lost */
void gpu_lost_init(gpu_lost *l) {
    memset(l, 0, sizeof *l);
    tk_mutex_init(&l->lock);
}

void gpu_lost_mark(gpu_lost *l, int code) {
    tk_mutex_lock(&l->lock);
    if (!l->lost) {
        l->lost = 1;
        l->code = code;
        snprintf(l->after, sizeof l->after, "%s", l->last_kernel);
    }
    tk_mutex_unlock(&l->lock);
}

int gpu_lost_is(gpu_lost *l) {
    tk_mutex_lock(&l->lock);
    int lost = l->lost;
    tk_mutex_unlock(&l->lock);
    return lost;
}

void gpu_lost_launched(gpu_lost *l, const char *kernel) {
    tk_mutex_lock(&l->lock);
    snprintf(l->last_kernel, sizeof l->last_kernel, "%s", kernel);
    tk_mutex_unlock(&l->lock);
}

tack_status gpu_lost_error(gpu_lost *l, const char *device, gpu_sticky_fn name_of, const char *lost_words,
                           const char *consequence) {
    tk_mutex_lock(&l->lock);
    if (!l->lost) {
        tk_mutex_unlock(&l->lock);
        return TACK_OK;
    }
    const char *what = NULL, *name = name_of(l->code, &what);
    char after[200] = "";
    tack_status st;
    if (!name) name = "?", what = "an error";
    if (!l->told) {
        l->told = 1;
        if (l->after[0]) snprintf(after, sizeof after, " after kernel '%s' was launched", l->after);
        st = tack_set_error(TACK_ERR_DEVICE, "%s: %s (%s, %s)%s; %s; restart the process", device, lost_words, name,
                            what, after, consequence);
    } else {
        if (l->after[0]) snprintf(after, sizeof after, " after kernel '%s'", l->after);
        st = tack_set_error(TACK_ERR_DEVICE, "%s is unusable since an earlier error (%s%s); restart the process",
                            device, name, after);
    }
    tk_mutex_unlock(&l->lock);
    return st;
}

/* --------------------------------------------------------------- layout */
void gpu_grid_free(gpu_grid *g) {
    for (int k = 0; g->work && k < g->nph; k++) tack_free(g->work[k]);
    tack_free(g->work);
    tack_free(g->fill);
    tack_free(g->local);
    g->work = NULL;
    g->fill = NULL;
    g->local = NULL;
}

tack_status gpu_cu_layout(tack_program *p, gpu_prog *g, gpu_grid *grid, const char *dialect, const char *mark,
                          const char *device, const char *family) {
    const char *rest = NULL;
    tack_status st = gpu_layout(p, g, dialect, mark, device, NULL, &rest);
    if (st != TACK_OK) return st;
    unsigned long long frame = 0;
    unsigned block = 0;
    if (sscanf(rest, " frame=%llu block=%u", &frame, &block) != 2 || block == 0 || block > 1024)
        return tack_set_error(TACK_ERR_VALUE, "kernel '%s': malformed %s layout comment", p->kernel_name, family);
    g->frame_bytes = (size_t)frame;
    grid->block = block;
    grid->blocks = g->kinds;
    return gpu_grid_work(p, g, grid);
}

/* The grid's per-phase tables and the loops' extents, where the source says
 * them: `/ * tack-grid-work: K:EXPR ... * /`. */
tack_status gpu_grid_work(tack_program *p, gpu_prog *g, gpu_grid *grid) {
    grid->nph = g->nph;
    grid->work = tack_calloc((size_t)g->nph + 1, sizeof(char *));
    grid->fill = tack_calloc((size_t)g->nph + 1, sizeof(unsigned));
    grid->local = tack_calloc((size_t)g->nph + 1, sizeof(unsigned));
    if (!grid->work || !grid->fill || !grid->local)
        return tack_set_error(TACK_ERR_NOMEM, "out of memory building kernel '%s'", p->kernel_name);
    /* the loops' extents, where the source says them: " K:EXPR" each, an EXPR running to the next
     * space.  Its operators are each followed by a comma ("s0.0,i1,*,"), so no EXPR holds the
     * comment's end; a product's '*' is part of it, not where it stops. */
    const char *w = NULL, *wmark = "/* tack-grid-work:";
    for (const char *s = strstr(p->source, wmark); s; s = strstr(s + 1, wmark)) w = s;
    if (!w) return TACK_OK;
    const char *end = strstr(w, "*/");
    for (w += strlen(wmark); end && w < end;) {
        int k = -1, used = 0;
        if (sscanf(w, " %d:%n", &k, &used) != 1 || used == 0) break;
        w += used;
        size_t n = strcspn(w, " ");
        if (n > (size_t)(end - w)) n = (size_t)(end - w);
        if (k >= 0 && k < g->nph && !grid->work[k]) {
            if (!(grid->work[k] = tack_malloc(n + 1)))
                return tack_set_error(TACK_ERR_NOMEM, "out of memory building kernel '%s'", p->kernel_name);
            memcpy(grid->work[k], w, n);
            grid->work[k][n] = 0;
        }
        w += n;
    }
    return TACK_OK;
}

tack_status gpu_metal_layout(tack_program *p, gpu_prog *g, gpu_grid *grid) {
    const char *rest = NULL;
    tack_status st = gpu_layout(p, g, "metal", "/* tack-metal: phases=", "a Metal device",
                                "kernel '%s': its Metal source has no layout comment ('/* tack-metal: phases=... "
                                "frame=N */' last)",
                                &rest);
    if (st != TACK_OK) return st;
    unsigned long long frame = 0;
    int used = 0;
    if (sscanf(rest, " frame=%llu */%n", &frame, &used) != 1 || used == 0 || frame > ((unsigned long long)1 << 40))
        return tack_set_error(TACK_ERR_VALUE,
                              "kernel '%s': malformed Metal layout comment (expected '/* tack-metal: phases=[ps]* "
                              "frame=N */')",
                              p->kernel_name);
    g->frame_bytes = (size_t)frame;
    grid->block = 1; /* the backend's, once the pipelines say their limit */
    grid->blocks = g->kinds; /* a blocks loop's work counts its blocks (gpu_phase_grid) */
    return gpu_grid_work(p, g, grid);
}

/* ----------------------------------------------------------------- grid */
static int64_t sat(__int128 v) { return v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : (int64_t)v; }

/* The extent of a loop from its postfix (layout_grid.c) and the call's
 * arguments; -1 when it cannot be told. */
static int64_t eval_work(const char *w, const tack_program *p, const tack_arg *args, int nargs) {
    int64_t total = 1, st[16];
    int sp = 0;
    for (const char *t = w;; t++) {
        char c = *t;
        if (c == 0 || c == ';') {
            if (sp != 1) return -1;
            total = st[0] <= 0 ? 0 : sat((__int128)total * st[0]);
            sp = 0;
            if (c == 0) return total;
            continue;
        }
        if (c == ',') continue;
        if (c == '#' || c == 's' || c == 'i' || c == 'u') {
            char *e = NULL;
            long long a = strtoll(t + 1, &e, 10), b = 0;
            if (e == t + 1 || sp == 16) return -1;
            if (c == 's' && *e == '.') b = strtoll(e + 1, &e, 10);
            t = e - 1;
            if (c != '#' && (a < 0 || a >= nargs || !!p->params[a].is_array != (c == 's'))) return -1;
            if (c == '#') st[sp++] = a;
            else if (c == 's') {
                if (b < 0 || b >= tack_array_ndim(args[a].array)) return -1;
                st[sp++] = tack_array_shape(args[a].array)[b];
            } else if (c == 'u') st[sp++] = args[a].scalar.u > INT64_MAX ? INT64_MAX : (int64_t)args[a].scalar.u;
            else st[sp++] = args[a].scalar.i;
            continue;
        }
        if (sp < 2) return -1;
        int64_t y = st[--sp], x = st[sp - 1], r;
        switch (c) {
        case '+': r = sat((__int128)x + y); break;
        case '-': r = sat((__int128)x - y); break;
        case '*': r = sat((__int128)x * y); break;
        case '/': if (y <= 0) return -1; r = x / y - (x % y != 0 && x < 0); break;
        case 'm': r = x < y ? x : y; break;
        case 'M': r = x > y ? x : y; break;
        default: return -1;
        }
        st[sp - 1] = r;
    }
}

unsigned gpu_phase_grid(const gpu_grid *g, int k, const tack_program *p, const tack_arg *args, int nargs) {
    int blk = g->blocks && g->blocks[k] == 'b';
    int64_t work = g->work[k] ? eval_work(g->work[k], p, args, nargs) : -1;
    if (work < 0) return g->fill[k];
    unsigned per = g->local && g->local[k] ? g->local[k] : g->block ? g->block : 1;
    uint64_t blocks = blk ? (uint64_t)work : ((uint64_t)work + per - 1) / per; /* 'b': the loop's blocks */
    if (blocks == 0) blocks = 1;
    return blocks < g->fill[k] ? (unsigned)blocks : g->fill[k];
}

/* --------------------------------------------------------- block limits */
tack_status gpu_block_check(const tack_device *d, const tack_program *p, const gpu_prog *g, int k,
                            const gpu_block_limits *l) {
    unsigned bs = g->bsize[k];
    if (l->threads > 0 && bs > (unsigned)l->threads)
        return tack_set_error(TACK_ERR_VALUE,
                              "kernel '%s': its blocks loop (phase %d) has blocks of %u threads, and %s device '%s' "
                              "(%s) runs at most %d in a block of this kernel (%s)",
                              p->kernel_name, k, bs, l->family, d->name, l->device_name, l->threads, l->threads_what);
    if (l->shared > 0 && l->shared_most > 0 && l->shared > l->shared_most)
        return tack_set_error(TACK_ERR_VALUE,
                              "kernel '%s': its blocks loop (phase %d, blocks of %u threads) takes %d bytes of shared "
                              "memory, and %s device '%s' (%s) has at most %d a block (%s)",
                              p->kernel_name, k, bs, l->shared, l->family, d->name, l->device_name, l->shared_most,
                              l->shared_what);
    return TACK_OK;
}

/* --------------------------------------------------------------- launch */
tack_status gpu_launch_phases(tack_device *d, gpu_prog *g, const gpu_grid *grid, uint64_t err, uint64_t frame,
                              const tack_arg *args, int nargs, const char *family, const gpu_launch_hooks *h) {
    tack_program *p = g->p;
    uint64_t stackslots[64];
    uint64_t *slots = stackslots;
    int nslots = gpu_arg_count(p);
    tack_status st = TACK_OK;
    if (nslots > GPU_MAX_SLOTS)
        return tack_set_error(TACK_ERR_UNSUPPORTED,
                              "kernel '%s' has too many arguments for one %s launch (%d slots of 8 bytes; at most %d)",
                              p->kernel_name, family, nslots, GPU_MAX_SLOTS);
    if (nslots > 64 && !(slots = tack_calloc((size_t)nslots, sizeof *slots)))
        return tack_set_error(TACK_ERR_NOMEM, "out of memory launching kernel '%s'", p->kernel_name);
    int shared = 0, n = 3;
    slots[0] = err;
    slots[1] = frame;
    slots[2] = g->id;
    for (int i = 0; i < nargs; i++) {
        const tk_pinfo *pi = &p->params[i];
        if (!pi->is_array) {
            for (int s = 0; s < gpu_scalar_slots(pi); s++) slots[n++] = gpu_scalar_bits(pi, &args[i], s);
            continue;
        }
        tack_array *a = args[i].array; /* checked by tack_launch (driver.c) */
        shared |= (tack_array_flags(a) & TACK_ARRAY_SHARED) != 0;
        slots[n++] = (uint64_t)(uintptr_t)tack_array_data(a);
        const int64_t *shape = tack_array_shape(a);
        for (int k = 0; k < pi->ndim; k++) slots[n++] = (uint64_t)shape[k];
        if (pi->strided) { /* a strided build: element strides after the extents (dialect_cuda.c) */
            int64_t t[TACK_MAX_NDIM];
            gpu_strides(a, pi->ndim, t);
            for (int k = 0; k < pi->ndim; k++) slots[n++] = (uint64_t)t[k];
        }
    }
    /* the phases share the frame buffer: queued back to back under the program's lock */
    tk_mutex_lock(&g->lock);
    /* Launches of one program share its frame buffer: one on another stream
     * than the last waits for it on the device (runtime/stream.c).  A
     * program with no frame has nothing shared, and its launches overlap. */
    tack_stream *cur = rt_stream_now(d);
    /* captured (runtime/graph.c): nothing runs now, and each replay orders the frame (gpu_replay) */
    int captured = rt_captured(cur) != NULL;
    if (!captured && g->frame_bytes && cur != g->last && (st = rt_stream_order(d, cur, g->last)) == TACK_OK) {
        tack_stream_retain(cur);
        tack_stream_release(g->last);
        g->last = cur;
    }
    void *timed = st == TACK_OK && !captured && h->time_start && rt_prof_on() ? h->time_start(d) : NULL; /* profile.c */
    for (int k = 0; k < g->nph && st == TACK_OK; k++) {
        int par = g->kinds[k] == 'p' || g->kinds[k] == 'b';
        unsigned blocks = par ? gpu_phase_grid(grid, k, p, args, nargs) : 1;
        unsigned threads = g->kinds[k] == 'b' ? g->bsize[k] : par ? grid->block : 1; /* a blocks loop's own size */
        st = h->queue(d, g, k, blocks, threads, slots, (size_t)n * sizeof *slots);
    }
    if (timed) rt_prof_cur_timer = h->time_stop(d, timed); /* tack_launch records it with the launch */
    tk_mutex_unlock(&g->lock);
    if (st == TACK_OK) h->launched(d, p->kernel_name);
    /* shared with another library: finished, and a failed check reported, before the call returns */
    if (st == TACK_OK && shared && !captured) st = h->finish(d); /* a replay waits instead (graph.c) */
    if (slots != stackslots) tack_free(slots);
    return st;
}

/* ---------------------------------------------------------------- replay */
static int by_address(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)*(gpu_prog *const *)a, y = (uintptr_t)*(gpu_prog *const *)b;
    return x < y ? -1 : x > y;
}

tack_status gpu_replay(tack_device *d, tack_program *const *progs, int n, const tack_stream *s,
                       tack_status (*go)(tack_device *d, void *exec, const tack_stream *s), void *exec) {
    tack_status st = TACK_OK;
    gpu_prog *stackgs[16], **gs = n > 16 ? tack_malloc((size_t)n * sizeof *gs) : stackgs;
    if (!gs) return tack_set_error(TACK_ERR_NOMEM, "out of memory launching a graph on %s", d->name);
    for (int i = 0; i < n; i++) gs[i] = progs[i]->handle; /* a backend's program starts with its gpu_prog */
    /* every program's lock, in one order (no two replays can deadlock), held
     * while the graph is queued, as a launch holds its program's */
    qsort(gs, (size_t)n, sizeof *gs, by_address);
    for (int i = 0; i < n; i++) tk_mutex_lock(&gs[i]->lock);
    tack_stream *cur = (tack_stream *)s;
    for (int i = 0; i < n && st == TACK_OK; i++) {
        gpu_prog *g = gs[i];
        if (!g->frame_bytes || cur == g->last || (st = rt_stream_order(d, cur, g->last)) != TACK_OK) continue;
        tack_stream_retain(cur);
        tack_stream_release(g->last);
        g->last = cur;
    }
    if (st == TACK_OK) st = go(d, exec, s);
    for (int i = n - 1; i >= 0; i--) tk_mutex_unlock(&gs[i]->lock);
    if (gs != stackgs) tack_free(gs);
    return st;
}
