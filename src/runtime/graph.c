/*
 * graph.c -- graphs: the work one thread queued on one stream, captured
 * once and replayed many times.
 *
 * A step of a simulation is often a dozen small kernel launches whose cost
 * is the launching, not the work.  CUDA and HIP can record what is queued
 * on a stream (stream capture) into a graph that the driver replays with
 * one call.  tack_capture_begin(s) starts that on s and makes s the calling
 * thread's current stream, so the thread's launches, copies and fills on
 * s's device go to it; tack_capture_end(s) ends it and hands back a
 * tack_graph; tack_graph_launch replays it on s or another stream.
 *
 * Nothing captured runs at capture time, on every device: the driver's
 * capture does not run the work, so the CPU, which has no such driver, keeps
 * a list of the calls (kernel, arguments, copy, fill) and runs them at each
 * replay, not at capture.  A replay uses the same arrays and the same scalar
 * values: new contents of a captured array are seen, a Python name bound to
 * another array is not.  So that an array or a kernel cannot be freed under
 * a graph, the graph holds a reference to each array it uses and a hold on
 * each program (tack_program_free frees it after the last graph goes).
 *
 * What the capture changes in the rest of the runtime:
 *   - tack_launch on a capturing stream comes here (rt_capture_launch): the
 *     arguments are checked as for any launch, the arrays and the program
 *     kept, and the launch is queued to the driver's capture or appended to
 *     the list.  Another thread's launch on the stream is refused: a graph
 *     is one thread's work, and a driver would capture whichever thread's.
 *   - The ordering between streams (stream.c) is not captured: a captured
 *     launch orders nothing, and each replay first orders the replay stream
 *     after every stream that last used one of the graph's arrays, then
 *     remembers itself as their last stream, as a launch does.
 *   - What would wait for the captured work or read it on the host is
 *     refused with a message (rt_capture_refuse): host copies,
 *     synchronizing the stream or the device, events on the stream.  A new
 *     array made during a capture is made (and zeroed) at capture time,
 *     outside the graph (array.c).
 * The design and its reasons are in docs/design/decisions.md ("Graphs").
 */
#include <string.h>

#include "platform/platform.h"
#include "runtime/program.h"
#include "runtime/runtime.h"

typedef enum { OP_LAUNCH, OP_COPY, OP_FILL } op_kind;

/* One call of the list (devices without a driver's graph). */
typedef struct graph_op {
    op_kind kind;
    tack_program *p;     /* OP_LAUNCH */
    tack_arg *args;
    int nargs;
    tack_array *dst;     /* OP_COPY, OP_FILL; kept by the graph's array list */
    const tack_array *src;
    unsigned char value[32]; /* OP_FILL: one element */
} graph_op;

struct tack_graph {
    tack_device *dev;
    tack_stream *stream;  /* captured on: a reference */
    tack_stream *was;     /* the current stream the capture replaced (borrowed) */
    int kept_failed;      /* out of memory keeping a call: the capture fails at its end */
    int64_t count;        /* calls captured */
    tack_array **arrays;  /* one reference each */
    int narrays, caparrays;
    tack_program **progs; /* one hold each */
    int nprogs, capprogs;
    graph_op *ops;        /* the list (no driver graph) */
    int64_t nops, capops;
    void *exec;           /* the driver's graph, ready to launch */
};

static _Thread_local tack_graph *capturing; /* this thread's capture */

static int is_list(const tack_device *d) {
    return d->backend->type == TACK_DEVICE_CPU || !d->backend->streams || !d->backend->streams->capture_begin;
}

static int grow(void **p, int64_t *cap, int64_t need, size_t size) {
    if (need <= *cap) return 1;
    int64_t n = *cap ? *cap * 2 : 8;
    while (n < need) n *= 2;
    void *q = tack_realloc(*p, (size_t)n * size);
    if (!q) return 0;
    *p = q;
    *cap = n;
    return 1;
}

static int keep_array(tack_graph *g, tack_array *a) {
    for (int i = 0; i < g->narrays; i++)
        if (g->arrays[i] == a) return 1;
    int64_t cap = g->caparrays;
    if (!grow((void **)&g->arrays, &cap, g->narrays + 1, sizeof *g->arrays)) return 0;
    g->caparrays = (int)cap;
    tack_array_retain(a);
    g->arrays[g->narrays++] = a;
    return 1;
}

static int keep_program(tack_graph *g, tack_program *p) {
    for (int i = 0; i < g->nprogs; i++)
        if (g->progs[i] == p) return 1;
    int64_t cap = g->capprogs;
    if (!grow((void **)&g->progs, &cap, g->nprogs + 1, sizeof *g->progs)) return 0;
    g->capprogs = (int)cap;
    atomic_fetch_add_explicit(&p->holds, 1, memory_order_relaxed);
    g->progs[g->nprogs++] = p;
    return 1;
}

static graph_op *new_op(tack_graph *g) {
    if (!grow((void **)&g->ops, &g->capops, g->nops + 1, sizeof *g->ops)) return NULL;
    graph_op *o = &g->ops[g->nops];
    memset(o, 0, sizeof *o);
    return o;
}

static tack_status kept_nomem(tack_graph *g, const char *what) {
    g->kept_failed = 1;
    return tack_set_error(TACK_ERR_NOMEM, "out of memory keeping a %s in a graph's capture", what);
}

/* The capture in progress on s, if it is this thread's; else an error. */
static tack_status own(tack_stream *s, const char *what, tack_graph **out) {
    tack_graph *g = rt_captured(s);
    if (g && g == capturing) {
        *out = g;
        return TACK_OK;
    }
    return tack_set_error(TACK_ERR_VALUE,
                          "%s on a stream of %s that another thread is capturing: a graph captures the work of the "
                          "thread that began the capture only",
                          what, s->dev->name);
}

tack_status rt_capture_launch(tack_stream *s, tack_program *p, const tack_arg *args, int nargs) {
    tack_graph *g = NULL;
    tack_status st = own(s, "a kernel launch", &g);
    if (st != TACK_OK) return st;
    for (int i = 0; i < nargs; i++)
        if (p->params[i].is_array && !keep_array(g, args[i].array)) return kept_nomem(g, "kernel's array");
    if (!keep_program(g, p)) return kept_nomem(g, "kernel");
    if (!is_list(g->dev)) {
        st = p->device->backend->launch(p->device, p, args, nargs); /* into the driver's capture */
        if (st == TACK_OK) g->count++;
        return st;
    }
    graph_op *o = new_op(g);
    tack_arg *copy = nargs ? tack_malloc((size_t)nargs * sizeof *copy) : NULL;
    if (!o || (nargs && !copy)) {
        tack_free(copy);
        return kept_nomem(g, "kernel launch");
    }
    if (nargs) memcpy(copy, args, (size_t)nargs * sizeof *copy);
    o->kind = OP_LAUNCH;
    o->p = p;
    o->args = copy;
    o->nargs = nargs;
    g->nops++;
    g->count++;
    return TACK_OK;
}

tack_status rt_capture_copy(tack_stream *s, tack_array *dst, const tack_array *src) {
    tack_graph *g = NULL;
    tack_status st = own(s, "a copy", &g);
    if (st != TACK_OK) return st;
    if (!keep_array(g, dst) || !keep_array(g, (tack_array *)src)) return kept_nomem(g, "copy's array");
    if (!is_list(g->dev)) {
        st = g->dev->backend->copy(g->dev, dst->data, src->data, src->nbytes, RT_COPY_D2D);
        if (st == TACK_OK) g->count++;
        return st;
    }
    graph_op *o = new_op(g);
    if (!o) return kept_nomem(g, "copy");
    o->kind = OP_COPY;
    o->dst = dst;
    o->src = src;
    g->nops++;
    g->count++;
    return TACK_OK;
}

tack_status rt_capture_fill(tack_stream *s, tack_array *a, const void *value) {
    tack_graph *g = NULL;
    tack_status st = own(s, "a fill", &g);
    if (st != TACK_OK) return st;
    size_t itemsize = tack_dtype_get(a->dtype)->itemsize;
    if (itemsize > 4 && !is_list(g->dev))
        return tack_set_error(TACK_ERR_VALUE,
                              "filling a %s array during a capture on %s: elements wider than 4 bytes are filled "
                              "by a copy from the host, which a graph cannot replay; fill it before the capture, or "
                              "with a kernel inside it",
                              tack_dtype_get(a->dtype)->name, g->dev->name);
    if (itemsize > sizeof((graph_op *)0)->value)
        return tack_set_error(TACK_ERR_VALUE, "filling a %s array during a capture: elements of %zu bytes are not "
                              "kept", tack_dtype_get(a->dtype)->name, itemsize);
    if (!keep_array(g, a)) return kept_nomem(g, "fill's array");
    if (!is_list(g->dev)) {
        st = g->dev->backend->fill(g->dev, a->data, value, itemsize, (size_t)a->size);
        if (st == TACK_OK) g->count++;
        return st;
    }
    graph_op *o = new_op(g);
    if (!o) return kept_nomem(g, "fill");
    o->kind = OP_FILL;
    o->dst = a;
    memcpy(o->value, value, itemsize);
    g->nops++;
    g->count++;
    return TACK_OK;
}

tack_status rt_capture_refuse(const tack_device *d, const char *what) {
    tack_graph *g = capturing;
    if (!g || g->dev != d) return TACK_OK;
    return tack_set_error(TACK_ERR_VALUE,
                          "%s during a capture on %s: a graph holds device work only, and nothing captured runs "
                          "until the graph is launched; do it before tack.capture's block or after it",
                          what, d->name);
}

tack_stream *rt_capture_on(const tack_device *d) {
    tack_graph *g = capturing;
    return g && g->dev == d ? g->stream : NULL;
}

TACK_API tack_stream *tack_capture_stream(void) { return capturing ? capturing->stream : NULL; }

TACK_API tack_status tack_capture_begin(tack_stream *s) {
    if (!s) return tack_set_error(TACK_ERR_VALUE, "tack_capture_begin: stream is NULL");
    if (capturing)
        return tack_set_error(TACK_ERR_VALUE,
                              "a capture is already in progress on this thread (on a stream of %s): captures do not "
                              "nest; end it first",
                              capturing->dev->name);
    if (rt_captured(s))
        return tack_set_error(TACK_ERR_VALUE, "the stream of %s is being captured by another thread",
                              s->dev->name);
    tack_graph *g = tack_calloc(1, sizeof *g);
    if (!g) return tack_set_error(TACK_ERR_NOMEM, "out of memory beginning a capture on %s", s->dev->name);
    g->dev = s->dev;
    tack_stream_retain(s);
    g->stream = s;
    if (!is_list(g->dev)) {
        /* the device's own stream after what s queued so far, so that work
         * elsewhere (a free, another stream) can be ordered after it by
         * waiting for the device's own stream while s captures (stream.c) */
        tack_status st = rt_stream_order(g->dev, NULL, s);
        if (st == TACK_OK) st = g->dev->backend->streams->capture_begin(g->dev, s);
        if (st != TACK_OK) {
            tack_stream_release(s);
            tack_free(g);
            return st;
        }
    }
    atomic_store_explicit(&s->capture, g, memory_order_release);
    capturing = g;
    g->was = tack_stream_use(s);
    return TACK_OK;
}

TACK_API tack_status tack_capture_end(tack_stream *s, tack_graph **out) {
    if (!s || !out) return tack_set_error(TACK_ERR_VALUE, "tack_capture_end: stream and out are required");
    *out = NULL;
    tack_graph *g = capturing;
    if (!g || g->stream != s)
        return tack_set_error(TACK_ERR_VALUE, "tack_capture_end: this thread is not capturing on that stream of %s",
                              s->dev->name);
    capturing = NULL;
    atomic_store_explicit(&s->capture, NULL, memory_order_release);
    tack_stream_use(g->was);
    tack_status st = TACK_OK;
    if (!is_list(g->dev)) st = g->dev->backend->streams->capture_end(g->dev, s, &g->exec);
    if (st == TACK_OK && g->kept_failed)
        st = tack_set_error(TACK_ERR_NOMEM, "the capture on %s ran out of memory keeping its calls", g->dev->name);
    if (st != TACK_OK) {
        tack_graph_release(g);
        return st;
    }
    *out = g;
    return TACK_OK;
}

static tack_status replay_list(tack_graph *g) {
    tack_status st = TACK_OK;
    for (int64_t i = 0; i < g->nops && st == TACK_OK; i++) {
        graph_op *o = &g->ops[i];
        if (o->kind == OP_LAUNCH) st = tack_launch(o->p, o->args, o->nargs);
        else if (o->kind == OP_COPY) st = tack_array_copy(o->dst, o->src);
        else st = tack_array_fill(o->dst, o->value);
    }
    return st;
}

TACK_API tack_status tack_graph_launch(tack_graph *g, tack_stream *s) {
    if (!g) return tack_set_error(TACK_ERR_VALUE, "tack_graph_launch: graph is NULL");
    if (!s) s = g->stream;
    if (s->dev != g->dev)
        return tack_set_error(TACK_ERR_DEVICE, "a graph captured on %s launched on a stream of %s", g->dev->name,
                              s->dev->name);
    if (capturing)
        return tack_set_error(TACK_ERR_VALUE,
                              "launching a graph during a capture (on a stream of %s): graphs are not captured into "
                              "graphs; launch it before tack.capture's block or after it",
                              capturing->dev->name);
    if (rt_captured(s))
        return tack_set_error(TACK_ERR_VALUE, "launching a graph on a stream of %s that another thread is capturing",
                              s->dev->name);
    tack_stream *was = tack_stream_use(s);
    tack_status st = TACK_OK;
    int shared = 0;
    /* ordered after whatever stream last used each array, which then names this one (stream.c) */
    for (int i = 0; i < g->narrays && st == TACK_OK; i++) {
        st = rt_storage_use(g->arrays[i]->storage);
        shared |= (tack_array_flags(g->arrays[i]) & TACK_ARRAY_SHARED) != 0;
    }
    if (st == TACK_OK && is_list(g->dev)) st = replay_list(g);
    else if (st == TACK_OK) {
        st = g->dev->backend->streams->graph_launch(g->dev, g->exec, s, g->progs, g->nprogs);
        /* an array shared with another library: finished before the call returns, as a launch is */
        if (st == TACK_OK && shared) st = tack_stream_synchronize(s);
    }
    tack_stream_use(was);
    return st;
}

TACK_API int64_t tack_graph_count(const tack_graph *g) { return g ? g->count : 0; }
TACK_API tack_device *tack_graph_device(const tack_graph *g) { return g ? g->dev : NULL; }

TACK_API void tack_graph_release(tack_graph *g) {
    if (!g) return;
    if (g->exec) g->dev->backend->streams->graph_destroy(g->dev, g->exec);
    for (int64_t i = 0; i < g->nops; i++) tack_free(g->ops[i].args);
    tack_free(g->ops);
    for (int i = 0; i < g->narrays; i++) tack_array_release(g->arrays[i]);
    tack_free(g->arrays);
    for (int i = 0; i < g->nprogs; i++) tack_program_free(g->progs[i]);
    tack_free(g->progs);
    tack_stream_release(g->stream);
    tack_free(g);
}
