/*
 * stream.c -- streams and events: work ordered on the device, and arrays
 * kept right whichever streams they are used on.
 *
 * A GPU backend queues everything on one stream of its own per device, so
 * any two operations are ordered and nothing can see a stale value.  A user
 * who wants overlap -- a copy beside a kernel, two independent kernels at
 * once, Tack's work inside PyTorch's or CuPy's stream -- names other
 * streams (tack_stream_create, or tack_stream_wrap of another library's
 * handle), makes one current on a thread (tack_stream_use) or for one call,
 * and orders them with events (record on one, wait on another).
 *
 * What keeps this from giving wrong answers: every array's storage
 * remembers the stream its last work was queued on (rt_storage.last;
 * NULL for the device's own).  Before a launch, a copy or a fill queues
 * work on storage from a different stream, that stream is made to wait on
 * the device for the last one (an event recorded there, waited for here:
 * rt_stream_order), so a kernel on stream B reading what a kernel on
 * stream A wrote sees it, a copy to the host waits for the kernel that
 * wrote its array whatever stream it ran on, and memory is freed only after
 * the last work that used it (rt_storage_settle).  Work on disjoint arrays
 * is not ordered and overlaps.  The cost is nothing for a program that names
 * no streams (both sides NULL), and one event for each change of stream
 * per array.  Two reads of one array on two streams are ordered too, which
 * a program that reads one array from two streams at once pays for.
 *
 * Lifetimes: streams are reference counted.  A storage holds a reference
 * to its last stream, so a stream the program dropped lives until the
 * arrays that used it have been ordered after it; the live ones are on a
 * list that tack_device_synchronize waits for.  A wrapped stream is never
 * destroyed by Tack.  Events are not reference counted: the owner frees
 * them (the driver keeps an event recorded but not reached until it is).
 *
 * The CPU runs every call to its end before returning, so there a stream
 * orders nothing and an event records the host's clock: the same program
 * runs on either.  A GPU backend without rt_backend.streams refuses them.
 */
#include <string.h>

#include "platform/platform.h"

#include "runtime/runtime.h"

struct tack_event {
    tack_device *dev;
    void *handle; /* the backend's; NULL on the CPU */
    int timing;
    int recorded;
    int64_t host_ns; /* the CPU: the host's clock when recorded */
};

static tk_mutex_t live_lock = TK_MUTEX_INIT;
static tack_stream *live;
static _Thread_local tack_stream *current;

static int is_cpu(const tack_device *d) { return d->backend->type == TACK_DEVICE_CPU; }

static tack_status no_streams(const tack_device *d) {
    return tack_set_error(TACK_ERR_UNSUPPORTED,
                          "%s has no streams or events in Tack yet (CUDA, HIP, OpenCL, Level Zero and Metal devices have; "
                          "the CPU's are for portable code and order nothing): run without one there",
                          d->name);
}

static tack_status make(tack_device *dev, void *handle, int owned, tack_stream **out) {
    tack_stream *s = tack_calloc(1, sizeof *s);
    if (!s) {
        if (owned) dev->backend->streams->destroy(dev, handle);
        return tack_set_error(TACK_ERR_NOMEM, "out of memory making a stream on %s", dev->name);
    }
    atomic_init(&s->refs, 1);
    s->dev = dev;
    s->handle = handle;
    s->owned = owned;
    tk_mutex_lock(&live_lock);
    s->next = live;
    if (live) live->prev = s;
    live = s;
    tk_mutex_unlock(&live_lock);
    *out = s;
    return TACK_OK;
}

TACK_API tack_status tack_stream_create(tack_device *dev, tack_stream **out) {
    if (!dev || !out) return tack_set_error(TACK_ERR_VALUE, "tack_stream_create: device and out are required");
    *out = NULL;
    void *h = NULL;
    if (!is_cpu(dev)) {
        if (!dev->backend->streams) return no_streams(dev);
        tack_status st = dev->backend->streams->create(dev, &h);
        if (st != TACK_OK) return st;
    }
    return make(dev, h, !is_cpu(dev), out);
}

TACK_API tack_status tack_stream_wrap(tack_device *dev, uintptr_t handle, tack_stream **out) {
    if (!dev || !out) return tack_set_error(TACK_ERR_VALUE, "tack_stream_wrap: device and out are required");
    *out = NULL;
    if (is_cpu(dev)) return tack_set_error(TACK_ERR_VALUE, "the CPU has no stream handles to wrap");
    if (!dev->backend->streams) return no_streams(dev);
    return make(dev, (void *)handle, 0, out);
}

TACK_API void tack_stream_retain(tack_stream *s) {
    if (s) atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

TACK_API void tack_stream_release(tack_stream *s) {
    if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1) return;
    tk_mutex_lock(&live_lock);
    if (s->prev) s->prev->next = s->next;
    else live = s->next;
    if (s->next) s->next->prev = s->prev;
    tk_mutex_unlock(&live_lock);
    if (s->owned) s->dev->backend->streams->destroy(s->dev, s->handle);
    tack_free(s);
}

TACK_API uintptr_t tack_stream_handle(const tack_stream *s) { return s ? (uintptr_t)s->handle : 0; }
TACK_API tack_device *tack_stream_device(const tack_stream *s) { return s ? s->dev : NULL; }

TACK_API tack_status tack_stream_synchronize(tack_stream *s) {
    if (!s) return tack_set_error(TACK_ERR_VALUE, "tack_stream_synchronize: stream is NULL");
    if (rt_captured(s))
        return tack_set_error(TACK_ERR_VALUE,
                              "cannot synchronize a stream of %s while it is being captured (nothing captured runs "
                              "until the graph is launched): synchronize after tack.capture's block",
                              s->dev->name);
    return is_cpu(s->dev) ? TACK_OK : s->dev->backend->streams->sync(s->dev, s);
}

TACK_API tack_stream *tack_stream_use(tack_stream *s) {
    tack_stream *was = current;
    current = s;
    return was;
}

TACK_API tack_stream *tack_stream_current(void) { return current; }

tack_stream *rt_stream_now(const tack_device *d) { return current && current->dev == d ? current : NULL; }

tack_status rt_streams_sync(tack_device *d) {
    tack_status st = TACK_OK;
    if (!d->backend->streams) return TACK_OK;
    tk_mutex_lock(&live_lock);
    for (tack_stream *s = live; s && st == TACK_OK; s = s->next)
        if (s->dev == d && !rt_captured(s)) st = d->backend->streams->sync(d, s); /* a capture runs nothing */
    tk_mutex_unlock(&live_lock);
    return st;
}

tack_status rt_streams_join(tack_device *d) {
    tack_status st = TACK_OK;
    if (!d->backend->streams) return TACK_OK;
    tk_mutex_lock(&live_lock);
    for (tack_stream *s = live; s && st == TACK_OK; s = s->next)
        if (s->dev == d && !rt_captured(s)) st = rt_stream_order(d, NULL, s);
    tk_mutex_unlock(&live_lock);
    return st;
}

tack_status rt_stream_order(tack_device *d, tack_stream *waiter, tack_stream *waited) {
    const rt_stream_ops *o = d->backend->streams;
    if (waiter == waited || !o) return TACK_OK;
    /* a capture keeps no order with the other streams: its replay is ordered instead (graph.c) */
    if (rt_captured(waiter)) return TACK_OK;
    /* An event recorded on a capturing stream would join the capture.  What
     * was queued on it before the capture, d's own stream was made to wait
     * for when the capture began (graph.c): waiting for d's own is enough. */
    if (rt_captured(waited)) {
        if (!waiter) return TACK_OK;
        waited = NULL;
    }
    void *ev = NULL;
    tack_status st = o->event_create(d, 0, &ev);
    if (st == TACK_OK) st = o->record(d, ev, waited);
    if (st == TACK_OK) st = o->wait(d, waiter, ev);
    if (ev) o->event_destroy(d, ev);
    return st;
}

tack_status rt_storage_use(rt_storage *s) {
    tack_device *d = s->device;
    if (!d->backend->streams) return TACK_OK;
    tack_stream *cur = rt_stream_now(d);
    if (rt_captured(cur)) return TACK_OK; /* nothing runs until the replay, which orders it (graph.c) */
    tack_stream *was = atomic_load_explicit(&s->last, memory_order_acquire);
    if (was == cur) return TACK_OK;
    tack_status st = rt_stream_order(d, cur, was);
    if (st != TACK_OK) return st;
    tack_stream_retain(cur);
    was = atomic_exchange_explicit(&s->last, cur, memory_order_acq_rel);
    tack_stream_release(was);
    return TACK_OK;
}

void rt_storage_settle(rt_storage *s) {
    /* a plain load first: the exchange is a locked instruction, and a
     * borrowed NumPy array's storage is released at every call */
    if (!atomic_load_explicit(&s->last, memory_order_acquire)) return;
    tack_stream *was = atomic_exchange_explicit(&s->last, NULL, memory_order_acq_rel);
    if (!was) return;
    if (rt_stream_order(s->device, NULL, was) != TACK_OK) {
        /* the device's own stream could not be made to wait: wait on the host instead */
        tack_clear_error();
        if (tack_stream_synchronize(was) != TACK_OK) tack_clear_error();
    }
    tack_stream_release(was);
}

/* -------------------------------------------------------------- events */
static int64_t host_now(void) {
    return tk_monotonic_ns();
}

TACK_API tack_status tack_event_create(tack_device *dev, int timing, tack_event **out) {
    if (!dev || !out) return tack_set_error(TACK_ERR_VALUE, "tack_event_create: device and out are required");
    *out = NULL;
    if (!is_cpu(dev) && !dev->backend->streams) return no_streams(dev);
    tack_event *e = tack_calloc(1, sizeof *e);
    if (!e) return tack_set_error(TACK_ERR_NOMEM, "out of memory making an event on %s", dev->name);
    e->dev = dev;
    e->timing = timing != 0;
    if (!is_cpu(dev)) {
        tack_status st = dev->backend->streams->event_create(dev, e->timing, &e->handle);
        if (st != TACK_OK) {
            tack_free(e);
            return st;
        }
    }
    *out = e;
    return TACK_OK;
}

TACK_API void tack_event_free(tack_event *e) {
    if (!e) return;
    if (e->handle) e->dev->backend->streams->event_destroy(e->dev, e->handle);
    tack_free(e);
}

static tack_status check_stream(const tack_event *e, const tack_stream *s, const char *what) {
    if (s && s->dev != e->dev)
        return tack_set_error(TACK_ERR_DEVICE, "%s: the event is on %s and the stream on %s", what, e->dev->name,
                              s->dev->name);
    return TACK_OK;
}

static tack_status check_capture(const tack_event *e, const tack_stream *s, const char *what) {
    if (!rt_captured(s ? s : rt_stream_now(e->dev))) return TACK_OK;
    return tack_set_error(TACK_ERR_VALUE,
                          "%s on a stream of %s that is being captured: events are not captured into a graph; "
                          "record or wait for them around the graph's launch",
                          what, e->dev->name);
}

TACK_API tack_status tack_event_record(tack_event *e, tack_stream *s) {
    if (!e) return tack_set_error(TACK_ERR_VALUE, "tack_event_record: event is NULL");
    tack_status st = check_stream(e, s, "Event.record");
    if (st == TACK_OK) st = check_capture(e, s, "Event.record");
    if (st != TACK_OK) return st;
    if (is_cpu(e->dev)) e->host_ns = host_now();
    else st = e->dev->backend->streams->record(e->dev, e->handle, s ? s : rt_stream_now(e->dev));
    if (st == TACK_OK) e->recorded = 1;
    return st;
}

TACK_API tack_status tack_event_wait(tack_event *e, tack_stream *s) {
    if (!e) return tack_set_error(TACK_ERR_VALUE, "tack_event_wait: event is NULL");
    tack_status st = check_stream(e, s, "Event.wait");
    if (st == TACK_OK) st = check_capture(e, s, "Event.wait");
    if (st != TACK_OK || is_cpu(e->dev) || !e->recorded) return st;
    return e->dev->backend->streams->wait(e->dev, s ? s : rt_stream_now(e->dev), e->handle);
}

TACK_API tack_status tack_event_synchronize(tack_event *e) {
    if (!e) return tack_set_error(TACK_ERR_VALUE, "tack_event_synchronize: event is NULL");
    if (is_cpu(e->dev) || !e->recorded) return TACK_OK;
    return e->dev->backend->streams->event_sync(e->dev, e->handle);
}

TACK_API int tack_event_query(tack_event *e) {
    if (!e) return tack_set_error(TACK_ERR_VALUE, "tack_event_query: event is NULL"), -1;
    if (is_cpu(e->dev) || !e->recorded) return 1;
    return e->dev->backend->streams->query(e->dev, e->handle);
}

TACK_API tack_status tack_event_elapsed(tack_event *start, tack_event *end, float *ms) {
    if (!start || !end || !ms) return tack_set_error(TACK_ERR_VALUE, "tack_event_elapsed: events and ms are required");
    if (start->dev != end->dev)
        return tack_set_error(TACK_ERR_DEVICE, "elapsed_time: the events are on %s and %s", start->dev->name,
                              end->dev->name);
    if (!start->timing || !end->timing)
        return tack_set_error(TACK_ERR_VALUE, "elapsed_time: an event was made with timing=False");
    if (!start->recorded || !end->recorded)
        return tack_set_error(TACK_ERR_VALUE, "elapsed_time: the %s event has not been recorded",
                              start->recorded ? "end" : "start");
    if (is_cpu(start->dev)) {
        *ms = (float)((double)(end->host_ns - start->host_ns) / 1e6);
        return TACK_OK;
    }
    const rt_stream_ops *o = start->dev->backend->streams;
    tack_status st = o->event_sync(start->dev, end->handle);
    return st == TACK_OK ? o->elapsed(start->dev, start->handle, end->handle, ms) : st;
}
