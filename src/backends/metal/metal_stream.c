/*
 * metal_stream.c -- Metal streams and events for runtime/stream.c; graphs
 * are the runtime's replayed list (runtime/graph.c).
 *
 * Streams.  A tack.Stream is an MTLCommandQueue of its own on the device
 * (newCommandQueue), beside the device's own queue (metal.c); its handle
 * is the queue, so tack.Stream(dev, handle=q) wraps another library's
 * MTLCommandQueue of the same device (the caller's promise, as a wrapped
 * CUstream is; Tack keeps a record of it for the process).  The thread's
 * current stream decides which queue a launch commits to (metal_cur).
 *
 * Batching: none.  A launch is one command buffer (one compute encoder for
 * all its phases), committed before the call returns, as on the device's
 * own queue, so the GPU starts it as soon as it is queued -- what a stream
 * is for.  Batching several launches into one command buffer would save a
 * commit each but leave work unstarted until some later call commits it,
 * so a stream the program then leaves alone (the host busy elsewhere)
 * would not overlap anything.  A record and a wait are one small command
 * buffer each, committed at once.  A queue runs its command buffers in the
 * order they were committed; Metal orders two queues only by events.
 *
 * Copies and fills are the host's over shared storage (metal.c): on a
 * stream, the host waits for that stream's committed command buffers, then
 * copies -- runtime/stream.c has made the stream wait (on the GPU) for the
 * streams that last used the arrays, so those are waited for too.  A copy
 * on a stream therefore returns with the copy done, as on the device's own.
 *
 * Events.  A tack.Event is an MTLSharedEvent (newSharedEvent) and the
 * count of its records:
 *
 *   record   a command buffer on the stream holding encodeSignalEvent:value:
 *            with the next count, committed; the event keeps that command
 *            buffer (retained) until its next record or its end
 *   wait     a command buffer on the waiting stream holding
 *            encodeWaitForEvent:value: with the count recorded last,
 *            committed: the GPU waits, the host goes on
 *   sync     waitUntilCompleted on the record's command buffer (a shared
 *            event can notify a listener, but that takes an Objective-C
 *            block, which plain C does not make); query: signaledValue
 *            against the count, read on the host
 *   elapsed  the two records' command buffers' GPUEndTime apart, in ms: the
 *            time the GPU finished each (a record's command buffer holds
 *            only the signal, and runs after what its queue had before it).
 *            Every event can time; timing=False events cost the same.
 *
 * A stream's synchronization is a synchronization point like the device's:
 * a failed check of a kernel that ran on it is reported there (the device's
 * one error record, metal_launch.c), as is a failed command buffer.
 *
 * Graphs: Metal has no capture of a queue's work.  Its nearest thing, an
 * indirect command buffer, encodes dispatches only -- no event signal or
 * wait, no host copy -- and binds arguments from buffers (no setBytes),
 * with pipelines made for it (supportIndirectCommandBuffers); a launch's
 * argument words and a captured copy would need another path, untested
 * without a Mac.  So tack.capture on Metal is the runtime's list of calls
 * (graph.c), replayed call by call: each replay costs what the eager calls
 * cost (one commit per launch), and is correct wherever eager calls are.
 */
#include <stdio.h>
#include <string.h>

#include "backends/metal/metal_backend.h"

typedef struct metal_event {
    id ev;          /* the MTLSharedEvent, retained */
    uint64_t count; /* the value its last record signals */
    id cb;          /* the last record's command buffer, retained; NULL before the first */
} metal_event;

/* --------------------------------------------------------- streams */
metal_q *metal_q_of(tack_device *d, const tack_stream *s) {
    metal_dev *h = d->state;
    if (!s) return &h->own;
    tk_mutex_lock(&h->streams_lock);
    metal_q *q = h->streams;
    while (q && (void *)q->queue != s->handle) q = q->next;
    if (!q && (q = tack_calloc(1, sizeof *q))) { /* another library's queue: the caller keeps it */
        q->queue = (id)s->handle;
        tk_mutex_init(&q->lock);
        q->next = h->streams;
        h->streams = q;
    }
    tk_mutex_unlock(&h->streams_lock);
    if (!q) tack_set_error(TACK_ERR_NOMEM, "out of memory using a stream of %s", d->name);
    return q;
}

metal_q *metal_cur(tack_device *d) { return metal_q_of(d, rt_stream_now(d)); }

static tack_status s_create(tack_device *d, void **handle) {
    metal_dev *h = d->state;
    metal_q *q = tack_calloc(1, sizeof *q);
    if (!q) return tack_set_error(TACK_ERR_NOMEM, "out of memory making a stream on %s", d->name);
    q->queue = mtl_id(h->device, TK_S(newCommandQueue));
    if (!q->queue) {
        tack_free(q);
        return tack_set_error(TACK_ERR_DEVICE, "%s (%s): Metal gives no command queue for a stream (newCommandQueue)",
                              d->name, h->name);
    }
    q->owned = 1;
    tk_mutex_init(&q->lock);
    tk_mutex_lock(&h->streams_lock);
    q->next = h->streams;
    h->streams = q;
    tk_mutex_unlock(&h->streams_lock);
    *handle = q->queue;
    return TACK_OK;
}

static void s_destroy(tack_device *d, void *handle) {
    metal_dev *h = d->state;
    tk_mutex_lock(&h->streams_lock);
    metal_q **at = &h->streams;
    while (*at && (void *)(*at)->queue != handle) at = &(*at)->next;
    metal_q *q = *at;
    if (q) *at = q->next;
    tk_mutex_unlock(&h->streams_lock);
    if (!q) return;
    /* its work finishes first; a failed command buffer in it is kept for the next synchronization */
    if (metal_q_wait(d, q) != TACK_OK) {
        tk_mutex_lock(&h->rec.lock);
        if (h->rec.pending == TACK_OK) {
            h->rec.pending = TACK_ERR_DEVICE;
            snprintf(h->rec.pending_msg, sizeof h->rec.pending_msg, "%s", tack_last_error());
        }
        tk_mutex_unlock(&h->rec.lock);
        tack_clear_error();
    }
    if (q->owned) mtl_void(q->queue, TK_S(release));
    tk_mutex_destroy(&q->lock);
    tack_free(q);
}

static tack_status s_sync(tack_device *d, const tack_stream *s) {
    metal_q *q = metal_q_of(d, s);
    if (!q) return TACK_ERR_NOMEM;
    tack_status st = metal_q_wait(d, q);
    tack_status rst = metal_check_record(d); /* a synchronization point */
    return st != TACK_OK ? st : rst;
}

/* ---------------------------------------------------------- events */
static tack_status e_create(tack_device *d, int timing, void **out) {
    metal_dev *h = d->state;
    (void)timing; /* every record's command buffer has its GPU times */
    metal_event *e = tack_calloc(1, sizeof *e);
    if (!e) return tack_set_error(TACK_ERR_NOMEM, "out of memory making an event on %s", d->name);
    e->ev = mtl_id(h->device, TK_S(newSharedEvent));
    if (!e->ev) {
        tack_free(e);
        return tack_set_error(TACK_ERR_DEVICE, "%s (%s): Metal gives no MTLSharedEvent (newSharedEvent)", d->name,
                              h->name);
    }
    *out = e;
    return TACK_OK;
}

static void e_destroy(tack_device *d, void *ev) {
    (void)d;
    metal_event *e = ev;
    if (e->cb) mtl_void(e->cb, TK_S(release)); /* a command buffer committed runs whoever holds it */
    mtl_void(e->ev, TK_S(release));
    tack_free(e);
}

/* One command buffer on q holding the event's signal (signal != 0) or a wait
 * for `value`, committed; *kept (when asked) is another reference to it. */
static tack_status event_cb(tack_device *d, metal_q *q, metal_event *e, int signal, uint64_t value, id *kept) {
    metal_dev *h = d->state;
    void *pool = metal_pool_push(h->api);
    tack_status st = TACK_OK;
    id cb = mtl_id(q->queue, TK_S(commandBuffer));
    if (!cb) {
        st = tack_set_error(TACK_ERR_DEVICE, "Metal gives no command buffer on %s for an event's %s", d->name,
                            signal ? "record" : "wait");
    } else {
        if (signal) mtl_void_id_u64(cb, TK_S(encodeSignalEvent_value), e->ev, value);
        else mtl_void_id_u64(cb, TK_S(encodeWaitForEvent_value), e->ev, value);
        mtl_void(cb, TK_S(commit));
        if (kept) *kept = mtl_id(cb, TK_S(retain));
        st = metal_q_add(d, q, mtl_id(cb, TK_S(retain)));
    }
    metal_pool_pop(h->api, pool);
    return st;
}

static tack_status e_record(tack_device *d, void *ev, const tack_stream *s) {
    metal_event *e = ev;
    metal_q *q = metal_q_of(d, s);
    if (!q) return TACK_ERR_NOMEM;
    id cb = NULL;
    tack_status st = event_cb(d, q, e, 1, e->count + 1, &cb);
    if (!cb) return st;
    if (e->cb) mtl_void(e->cb, TK_S(release));
    e->cb = cb;
    e->count++;
    return st;
}

static tack_status e_wait(tack_device *d, const tack_stream *s, void *ev) {
    metal_event *e = ev;
    if (!e->cb) return TACK_OK;
    metal_q *q = metal_q_of(d, s);
    if (!q) return TACK_ERR_NOMEM;
    return event_cb(d, q, e, 0, e->count, NULL);
}

/* The record's command buffer completed; an error if it failed. */
static tack_status finish(tack_device *d, metal_event *e) {
    metal_dev *h = d->state;
    if (!e->cb) return TACK_OK;
    void *pool = metal_pool_push(h->api);
    tack_status st = TACK_OK;
    mtl_void(e->cb, TK_S(waitUntilCompleted));
    if (mtl_cb_status(e->cb, TK_S(status)) == TK_MTL_CB_ERROR) {
        char text[600];
        metal_error_text(mtl_id(e->cb, TK_S(error)), text, sizeof text);
        st = tack_set_error(TACK_ERR_DEVICE, "a Metal command buffer failed on %s (%s): %s", d->name, h->name, text);
    }
    metal_pool_pop(h->api, pool);
    return st;
}

static tack_status e_sync(tack_device *d, void *ev) { return finish(d, ev); }

static int e_query(tack_device *d, void *ev) {
    metal_event *e = ev;
    if (!e->cb || mtl_u64(e->ev, TK_S(signaledValue)) >= e->count) return 1;
    /* a record whose command buffer failed never signals: say so rather than "not yet" for ever */
    if (mtl_cb_status(e->cb, TK_S(status)) == TK_MTL_CB_ERROR) return finish(d, e), -1;
    return 0;
}

static tack_status e_elapsed(tack_device *d, void *a, void *b, float *ms) {
    metal_event *x = a, *y = b;
    tack_status st = finish(d, x); /* the runtime waited for the end one */
    if (st != TACK_OK) return st;
    double t0 = mtl_double(x->cb, TK_S(GPUEndTime)), t1 = mtl_double(y->cb, TK_S(GPUEndTime));
    if (t0 <= 0 || t1 <= 0)
        return tack_set_error(TACK_ERR_UNSUPPORTED,
                              "elapsed_time on %s: Metal gives no GPUEndTime for the events' command buffers "
                              "(macOS 10.15 / iOS 10.3 and later have it)",
                              d->name);
    *ms = (float)((t1 - t0) * 1e3);
    return TACK_OK;
}

const rt_stream_ops metal_stream_ops = {s_create, s_destroy, s_sync,    e_create, e_destroy, e_record, e_wait,
                                        e_sync,   e_query,   e_elapsed, NULL,     NULL,      NULL,     NULL};
