/*
 * level_zero_stream.c -- Level Zero streams, events and graphs for
 * runtime/stream.c and graph.c, and the timers of tack.profile().
 *
 * Streams.  Tack appends a device's work to one command list of its own
 * (level_zero.c); a tack.Stream is another command list of the device's
 * context, made as the device's own is: an immediate list where the driver
 * makes one (commands start as they are appended, in the order Tack's
 * barriers impose: a CUDA stream's behaviour), else a regular list with a
 * queue of its own, executed and waited for at each submission (correct,
 * with no overlap).  The stream's handle is the ze_command_list_handle_t,
 * so another library can append to it, and tack.Stream(dev, handle=h)
 * wraps another library's immediate list of the same context (the
 * caller's promise, as a wrapped CUstream is).  The thread's current stream
 * decides where copies, fills and launches go (lz_cur).  A stream's
 * destruction first waits for its list on the host: Level Zero forbids
 * destroying a list the device still references (work queued on a stream
 * the program dropped still runs, as on CUDA; a failed check in it is
 * reported at the next synchronization point).
 *
 * Events.  A tack.Event is a slot of an event pool (host-visible pools of
 * 64 events, made as they are needed, kept for the process), the slot of
 * its last record (gpu_events.c, which OpenCL's events share):
 *
 *   record   a barrier that signals a fresh slot when everything appended
 *            before it has completed; a timing event's record is a write
 *            of the device's global timestamp into host memory beside the
 *            pool (zeCommandListAppendWriteGlobalTimestamp), which signals
 *            the slot.  A new record takes a new slot (no reset of an event
 *            the device may still look at); the old one is retired.
 *   wait     zeCommandListAppendWaitOnEvents on the waiting list: on the
 *            device, the host goes on.
 *   sync     zeEventHostSynchronize; query: zeEventQueryStatus.
 *   elapsed  the two global timestamps apart, within the valid bits the
 *            device reports (timestampValidBits: the counter wraps), in
 *            ticks of the device's timer resolution.
 *
 * Retired slots.  Level Zero forbids resetting or destroying an event
 * while the device may still reference it: a signal not yet done, or a
 * wait on a list not yet past it.  A list remembers the slots it waited
 * for (lz_hold) until the host next waits for that list (lz_wait, which
 * releases them); a retired slot goes back to its pool's free list once
 * nothing holds it and its signal is done (zeEventQueryStatus), reset on
 * the host.  So runtime/stream.c's one event per change of stream costs
 * no host wait, and a program that waits now and then reuses a few slots.
 *
 * Graphs.  A capture is a regular command list: while one records on a
 * stream, lz_cur hands out its list, so launches, copies and fills are
 * appended there (with their barriers) and run nothing; a fill's pattern
 * is kept by the graph, since the driver may read it at each replay.  The
 * list opens with a wait for the graph's `start` event and ends with a
 * barrier signalling `done`.  g.launch() on stream S: S appends a barrier
 * signalling `start` (so the replay runs after what S queued before), the
 * list is executed on the graph's own command queue, and S appends a wait
 * for `done` and its reset, so what S queues next runs after the replay.
 * Level Zero forbids executing a list the device still references, so a
 * replay first waits on the host for the graph's previous replay (its
 * queue): one replay of a graph in flight at a time; other work overlaps
 * as usual.  A replay on another stream than the previous one is ordered
 * after that stream first (its reset of `done` must come before the next
 * signal).
 *
 * Timers.  tack.profile() times a launch from a kernel-timestamp pool:
 * the first phase's kernel signals one slot, the last phase's another;
 * the device time is the first's global start to the last's global end
 * (kernelTimestampValidBits wide), read when the profile stops.
 *
 * A loader without an entry point these need refuses streams, events or
 * graphs naming it.
 */
#include <stddef.h>
#include <string.h>

#include "backends/common/gpu_events.h"
#include "backends/level_zero/level_zero_backend.h"

#define LZ_POOL_EVENTS 64

typedef struct lz_pool {
    ze_event_pool_handle_t h;
    uint64_t *ts; /* host memory, one global timestamp per event (plain pools) */
    lz_slot slots[LZ_POOL_EVENTS];
    struct lz_pool *next;
} lz_pool;

/* A graph: its regular list (recording while the capture runs), the queue
 * it is executed on, its two events and the fill patterns it keeps. */
typedef struct lz_capture {
    lz_list rl;
    ze_command_queue_handle_t q;
    lz_slot *start, *done;
    void **patterns;
    int npat, cappat;
    int launched;
    tack_stream *last; /* the stream of the last replay (a reference); NULL: the device's own */
} lz_capture;

#define ZE(call, what)                      \
    do {                                    \
        ze_result_t r_ = (call);            \
        if (r_ != TACK_ZE_RESULT_SUCCESS) { \
            st = lz_error(r_, what, d);     \
            goto done;                      \
        }                                   \
    } while (0)

static tack_status check_api(tack_device *d) {
    const tack_ze_api *a = lz_api_get();
    const gpu_entry need[] = {GPU_ENTRY(a, zeEventPoolCreate),
                              GPU_ENTRY(a, zeEventCreate),
                              GPU_ENTRY(a, zeEventHostSynchronize),
                              GPU_ENTRY(a, zeEventQueryStatus),
                              GPU_ENTRY(a, zeEventHostReset),
                              GPU_ENTRY(a, zeCommandListAppendWaitOnEvents),
                              GPU_ENTRY(a, zeCommandListAppendWriteGlobalTimestamp),
                              GPU_ENTRY(a, zeMemAllocHost)};
    return GPU_ENTRIES_CHECK(d, "Level Zero loader", need, "streams and events");
}

/* ------------------------------------------------------------- slots */
static tack_status new_pool(tack_device *d, int kind) {
    const tack_ze_api *api = lz_api_get();
    lz_dev *c = d->state;
    tack_status st = TACK_OK;
    lz_pool *p = tack_calloc(1, sizeof *p);
    if (!p) return tack_set_error(TACK_ERR_NOMEM, "out of memory making an event pool on %s", d->name);
    ze_event_pool_desc_t pd = {TACK_ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL,
                               TACK_ZE_EVENT_POOL_FLAG_HOST_VISIBLE |
                                   (kind == LZ_EV_KERNEL_TS ? TACK_ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP : 0u),
                               LZ_POOL_EVENTS};
    ZE(api->zeEventPoolCreate(c->ctx, &pd, 1, &c->dev, &p->h), "zeEventPoolCreate");
    if (kind == LZ_EV_PLAIN) {
        ze_host_mem_alloc_desc_t hd = {TACK_ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, NULL, 0};
        void *ts = NULL;
        ZE(api->zeMemAllocHost(c->ctx, &hd, LZ_POOL_EVENTS * sizeof(uint64_t), 64, &ts), "zeMemAllocHost (timestamps)");
        p->ts = ts;
    }
    for (uint32_t i = 0; i < LZ_POOL_EVENTS; i++) {
        ze_event_desc_t ed = {TACK_ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, i, TACK_ZE_EVENT_SCOPE_FLAG_HOST,
                              TACK_ZE_EVENT_SCOPE_FLAG_HOST};
        ZE(api->zeEventCreate(p->h, &ed, &p->slots[i].ev), "zeEventCreate");
        p->slots[i].ts = p->ts ? p->ts + i : NULL;
        p->slots[i].kind = kind;
    }
    for (int i = LZ_POOL_EVENTS - 1; i >= 0; i--) {
        p->slots[i].next = c->free_slots[kind];
        c->free_slots[kind] = &p->slots[i];
    }
    p->next = c->pools;
    c->pools = p;
    return TACK_OK;
done:
    for (int i = 0; i < LZ_POOL_EVENTS; i++)
        if (p->slots[i].ev && api->zeEventDestroy) api->zeEventDestroy(p->slots[i].ev);
    if (p->ts) api->zeMemFree(c->ctx, p->ts);
    if (p->h && api->zeEventPoolDestroy) api->zeEventPoolDestroy(p->h);
    tack_free(p);
    return st;
}

/* ev_lock held: retired slots that nothing references any more go back, reset. */
static void recycle(tack_device *d) {
    const tack_ze_api *api = lz_api_get();
    lz_dev *c = d->state;
    for (lz_slot **at = &c->retired; *at;) {
        lz_slot *s = *at;
        /* armed: a signal may still be pending, unless the event says it happened */
        if (s->waits > 0 || (s->armed && api->zeEventQueryStatus(s->ev) != TACK_ZE_RESULT_SUCCESS) ||
            api->zeEventHostReset(s->ev) != TACK_ZE_RESULT_SUCCESS) {
            at = &s->next;
            continue;
        }
        *at = s->next;
        s->armed = 0;
        s->next = c->free_slots[s->kind];
        c->free_slots[s->kind] = s;
    }
}

tack_status lz_slot_take(tack_device *d, int kind, lz_slot **out) {
    lz_dev *c = d->state;
    tack_status st = TACK_OK;
    *out = NULL;
    tk_mutex_lock(&c->ev_lock);
    if (!c->free_slots[kind]) recycle(d);
    if (!c->free_slots[kind]) st = new_pool(d, kind);
    if (st == TACK_OK) {
        lz_slot *s = c->free_slots[kind];
        c->free_slots[kind] = s->next;
        s->next = NULL;
        s->armed = 0;
        s->waits = 0;
        *out = s;
    }
    tk_mutex_unlock(&c->ev_lock);
    return st;
}

void lz_slot_retire(tack_device *d, lz_slot *s) {
    lz_dev *c = d->state;
    if (!s) return;
    tk_mutex_lock(&c->ev_lock);
    s->next = c->retired;
    c->retired = s;
    tk_mutex_unlock(&c->ev_lock);
}

static void retire(tack_device *d, void *s) { lz_slot_retire(d, s); } /* a gpu_release_fn */

static lz_slot *slot_of(void *ev) { return ((gpu_event *)ev)->rec; } /* NULL before the first record */

tack_status lz_hold(tack_device *d, lz_list *l, lz_slot *s) {
    lz_dev *c = d->state;
    if (l->nheld == l->capheld) {
        int n = l->capheld ? l->capheld * 2 : 8;
        lz_slot **h = tack_realloc(l->held, (size_t)n * sizeof *h);
        if (!h) return tack_set_error(TACK_ERR_NOMEM, "out of memory ordering work on %s", d->name);
        l->held = h;
        l->capheld = n;
    }
    l->held[l->nheld++] = s;
    tk_mutex_lock(&c->ev_lock);
    s->waits++;
    tk_mutex_unlock(&c->ev_lock);
    return TACK_OK;
}

void lz_release_held(tack_device *d, lz_list *l) {
    lz_dev *c = d->state;
    if (!l->nheld) return;
    tk_mutex_lock(&c->ev_lock);
    for (int i = 0; i < l->nheld; i++) l->held[i]->waits--;
    tk_mutex_unlock(&c->ev_lock);
    l->nheld = 0;
}

/* ----------------------------------------------------------- streams */
/* The list of stream s (NULL: the device's own); a wrapped handle gets a
 * record of its own on first use, kept for the process (the runtime does not
 * tell a backend when a stream it did not make goes; a handle used again
 * finds it). */
static lz_list *list_of(tack_device *d, const tack_stream *s) {
    lz_dev *c = d->state;
    if (!s) return &c->own;
    tk_mutex_lock(&c->streams_lock);
    lz_list *l = c->streams;
    while (l && (void *)l->list != s->handle) l = l->next;
    if (!l && (l = tack_calloc(1, sizeof *l))) {
        l->list = (ze_command_list_handle_t)s->handle; /* another library's immediate list: Tack waits for it */
        tk_mutex_init(&l->lock);
        l->next = c->streams;
        c->streams = l;
    }
    tk_mutex_unlock(&c->streams_lock);
    if (!l) tack_set_error(TACK_ERR_NOMEM, "out of memory using a stream of %s", d->name);
    return l;
}

lz_list *lz_cur(tack_device *d) {
    lz_list *l = list_of(d, rt_stream_now(d));
    return l && l->cap ? &l->cap->rl : l;
}

static tack_status s_create(tack_device *d, void **handle) {
    lz_dev *c = d->state;
    tack_status st = check_api(d);
    if (st != TACK_OK) return st;
    lz_list *l = tack_calloc(1, sizeof *l);
    if (!l) return tack_set_error(TACK_ERR_NOMEM, "out of memory making a stream on %s", d->name);
    if ((st = lz_list_make(d, c->ctx, c->dev, l)) != TACK_OK) {
        tack_free(l);
        return st;
    }
    atomic_fetch_add(&c->made, 1); /* too late to adopt another context (tack_level_zero_adopt) */
    l->owned = 1;
    tk_mutex_init(&l->lock);
    tk_mutex_lock(&c->streams_lock);
    l->next = c->streams;
    c->streams = l;
    tk_mutex_unlock(&c->streams_lock);
    *handle = l->list;
    return TACK_OK;
}

static void s_destroy(tack_device *d, void *handle) {
    const tack_ze_api *api = lz_api_get();
    lz_dev *c = d->state;
    tk_mutex_lock(&c->streams_lock);
    lz_list **at = &c->streams;
    while (*at && (void *)(*at)->list != handle) at = &(*at)->next;
    lz_list *l = *at;
    if (l) *at = l->next;
    tk_mutex_unlock(&c->streams_lock);
    if (!l) return;
    /* the device must not reference a list being destroyed: its work finishes first
     * (a failed check in it stays in the device's record for the next synchronization) */
    tk_mutex_lock(&l->lock);
    if (lz_wait(d, l) != TACK_OK) tack_clear_error();
    tk_mutex_unlock(&l->lock);
    api->zeCommandListDestroy(l->list);
    if (l->queue) api->zeCommandQueueDestroy(l->queue);
    tk_mutex_destroy(&l->lock);
    tack_free(l->held);
    tack_free(l);
}

static tack_status s_sync(tack_device *d, const tack_stream *s) {
    lz_list *l = list_of(d, s);
    if (!l) return TACK_ERR_NOMEM;
    tk_mutex_lock(&l->lock);
    tack_status st = lz_wait(d, l);
    tk_mutex_unlock(&l->lock);
    return st == TACK_OK ? lz_check_record(d) : st; /* a synchronization point */
}

/* ------------------------------------------------------------ events */
static tack_status e_create(tack_device *d, int timing, void **ev) {
    tack_status st = check_api(d);
    return st == TACK_OK ? gpu_event_new(d, timing, ev) : st;
}

/* its last slot back to its pool once nothing references it */
static void e_destroy(tack_device *d, void *ev) { gpu_event_free(d, ev, retire); }

static tack_status e_record(tack_device *d, void *ev, const tack_stream *s) {
    const tack_ze_api *api = lz_api_get();
    gpu_event *e = ev;
    lz_slot *slot = NULL;
    lz_list *l = list_of(d, s);
    if (!l) return TACK_ERR_NOMEM;
    tack_status st = lz_slot_take(d, LZ_EV_PLAIN, &slot);
    if (st != TACK_OK) return st;
    tk_mutex_lock(&l->lock);
    /* Tack's commands end with a barrier; another library's may not */
    if (!l->owned && (st = lz_barrier(d, l)) != TACK_OK) goto done;
    if (e->timing)
        ZE(api->zeCommandListAppendWriteGlobalTimestamp(l->list, slot->ts, slot->ev, 0, NULL),
           "zeCommandListAppendWriteGlobalTimestamp (an event's record)");
    else
        ZE(api->zeCommandListAppendBarrier(l->list, slot->ev, 0, NULL),
           "zeCommandListAppendBarrier (an event's record)");
    slot->armed = 1;
    if ((st = lz_barrier(d, l)) == TACK_OK) st = lz_submit(d, l);
done:
    tk_mutex_unlock(&l->lock);
    if (st != TACK_OK && !slot->armed) {
        lz_slot_retire(d, slot);
        return st;
    }
    gpu_event_replace(d, e, slot, retire);
    return st;
}

static tack_status e_wait(tack_device *d, const tack_stream *s, void *ev) {
    const tack_ze_api *api = lz_api_get();
    lz_slot *slot = slot_of(ev);
    if (!slot) return TACK_OK;
    lz_list *l = list_of(d, s);
    if (!l) return TACK_ERR_NOMEM;
    tack_status st = TACK_OK;
    tk_mutex_lock(&l->lock);
    ZE(api->zeCommandListAppendWaitOnEvents(l->list, 1, &slot->ev), "zeCommandListAppendWaitOnEvents");
    if ((st = lz_hold(d, l, slot)) == TACK_OK && (st = lz_barrier(d, l)) == TACK_OK) st = lz_submit(d, l);
done:
    tk_mutex_unlock(&l->lock);
    return st;
}

static tack_status sync_slot(tack_device *d, lz_slot *s) {
    ze_result_t r = lz_api_get()->zeEventHostSynchronize(s->ev, TACK_ZE_TIMEOUT_INFINITE);
    return r == TACK_ZE_RESULT_SUCCESS ? TACK_OK : lz_error(r, "zeEventHostSynchronize", d);
}

static tack_status e_sync(tack_device *d, void *ev) {
    lz_slot *slot = slot_of(ev);
    return slot ? sync_slot(d, slot) : TACK_OK;
}

static int e_query(tack_device *d, void *ev) {
    lz_slot *slot = slot_of(ev);
    if (!slot) return 1;
    ze_result_t r = lz_api_get()->zeEventQueryStatus(slot->ev);
    if (r == TACK_ZE_RESULT_SUCCESS) return 1;
    if (r == TACK_ZE_RESULT_NOT_READY) return 0;
    lz_error(r, "zeEventQueryStatus", d);
    return -1;
}

/* b - a in ticks of a counter of `bits` valid bits, as a signed difference. */
static double ticks_apart(uint64_t a, uint64_t b, uint32_t bits) {
    uint64_t mask = bits >= 64 ? UINT64_MAX : (((uint64_t)1 << bits) - 1);
    uint64_t diff = (b - a) & mask;
    if (bits < 64 && diff > mask / 2) return -(double)((mask - diff) + 1);
    if (bits >= 64 && diff > UINT64_MAX / 2) return -(double)(UINT64_MAX - diff) - 1.0;
    return (double)diff;
}

static tack_status e_elapsed(tack_device *d, void *a, void *b, float *ms) {
    lz_dev *c = d->state;
    lz_slot *x = slot_of(a), *y = slot_of(b);
    tack_status st = sync_slot(d, x); /* the runtime waited for the end one */
    if (st != TACK_OK) return st;
    *ms = (float)(ticks_apart(*x->ts, *y->ts, c->ts_bits) * c->tick_ns / 1e6);
    return TACK_OK;
}

/* ------------------------------------------------------------ graphs */
static tack_status check_graph_api(tack_device *d) {
    tack_status st = check_api(d);
    const gpu_entry need[] = {GPU_ENTRY(lz_api_get(), zeCommandListAppendEventReset)};
    return st == TACK_OK ? GPU_ENTRIES_CHECK(d, "Level Zero loader", need, "graphs") : st;
}

static void graph_free(tack_device *d, lz_capture *x) {
    const tack_ze_api *api = lz_api_get();
    if (x->launched && x->q) api->zeCommandQueueSynchronize(x->q, TACK_ZE_TIMEOUT_INFINITE);
    if (x->rl.list) api->zeCommandListDestroy(x->rl.list);
    if (x->q) api->zeCommandQueueDestroy(x->q);
    /* the queue has drained: no signal of theirs is pending; a stream's wait for `done` holds it */
    if (x->start) x->start->armed = 0;
    if (x->done) x->done->armed = 0;
    lz_slot_retire(d, x->start);
    lz_slot_retire(d, x->done);
    for (int i = 0; i < x->npat; i++) tack_free(x->patterns[i]);
    tack_free(x->patterns);
    tack_stream_release(x->last);
    tk_mutex_destroy(&x->rl.lock);
    tack_free(x);
}

static tack_status g_begin(tack_device *d, const tack_stream *s) {
    const tack_ze_api *api = lz_api_get();
    lz_dev *c = d->state;
    tack_status st = check_graph_api(d);
    if (st != TACK_OK) return st;
    lz_list *l = list_of(d, s);
    if (!l) return TACK_ERR_NOMEM;
    lz_capture *x = tack_calloc(1, sizeof *x);
    if (!x) return tack_set_error(TACK_ERR_NOMEM, "out of memory beginning a capture on %s", d->name);
    tk_mutex_init(&x->rl.lock);
    x->rl.recording = 1;
    x->rl.owned = 1;
    ze_command_list_desc_t ld = {TACK_ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, NULL, 0, 0};
    ze_command_queue_desc_t qd;
    memset(&qd, 0, sizeof qd);
    qd.stype = TACK_ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
    qd.mode = TACK_ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS;
    qd.priority = TACK_ZE_COMMAND_QUEUE_PRIORITY_NORMAL;
    ZE(api->zeCommandListCreate(c->ctx, c->dev, &ld, &x->rl.list), "zeCommandListCreate (a graph)");
    ZE(api->zeCommandQueueCreate(c->ctx, c->dev, &qd, &x->q), "zeCommandQueueCreate (a graph)");
    if ((st = lz_slot_take(d, LZ_EV_PLAIN, &x->start)) != TACK_OK) goto done;
    if ((st = lz_slot_take(d, LZ_EV_PLAIN, &x->done)) != TACK_OK) goto done;
    /* a replay starts when the stream it is launched on says so (g_go) */
    ZE(api->zeCommandListAppendWaitOnEvents(x->rl.list, 1, &x->start->ev), "zeCommandListAppendWaitOnEvents (a graph)");
    if ((st = lz_barrier(d, &x->rl)) != TACK_OK) goto done;
    tk_mutex_lock(&l->lock);
    l->cap = x;
    tk_mutex_unlock(&l->lock);
    return TACK_OK;
done:
    graph_free(d, x);
    return st;
}

static tack_status g_end(tack_device *d, const tack_stream *s, void **exec) {
    const tack_ze_api *api = lz_api_get();
    tack_status st = TACK_OK;
    *exec = NULL;
    lz_list *l = list_of(d, s);
    if (!l) return TACK_ERR_NOMEM;
    tk_mutex_lock(&l->lock);
    lz_capture *x = l->cap;
    l->cap = NULL;
    tk_mutex_unlock(&l->lock);
    if (!x) return tack_set_error(TACK_ERR_VALUE, "%s: no capture in progress on that stream", d->name);
    ZE(api->zeCommandListAppendBarrier(x->rl.list, x->done->ev, 0, NULL), "zeCommandListAppendBarrier (a graph's end)");
    ZE(api->zeCommandListClose(x->rl.list), "zeCommandListClose (a graph)");
    *exec = x;
    return TACK_OK;
done:
    graph_free(d, x);
    return st;
}

const void *lz_capture_keep(tack_device *d, lz_list *l, const void *pattern, size_t size) {
    (void)d;
    lz_capture *x = (lz_capture *)(void *)((char *)l - offsetof(lz_capture, rl));
    if (x->npat == x->cappat) {
        int n = x->cappat ? x->cappat * 2 : 4;
        void **p = tack_realloc(x->patterns, (size_t)n * sizeof *p);
        if (!p) return NULL;
        x->patterns = p;
        x->cappat = n;
    }
    void *copy = tack_malloc(size);
    if (!copy) return NULL;
    memcpy(copy, pattern, size);
    x->patterns[x->npat++] = copy;
    return copy;
}

/* One replay on s (the programs' frames ordered by gpu_replay). */
static tack_status g_go(tack_device *d, void *exec, const tack_stream *s) {
    const tack_ze_api *api = lz_api_get();
    lz_capture *x = exec;
    tack_status st = TACK_OK;
    lz_list *l = list_of(d, s);
    if (!l) return TACK_ERR_NOMEM;
    if (x->launched) {
        /* the device may not reference a list being executed again: the previous replay first */
        ZE(api->zeCommandQueueSynchronize(x->q, TACK_ZE_TIMEOUT_INFINITE), "zeCommandQueueSynchronize (a graph)");
        ZE(api->zeEventHostReset(x->start->ev), "zeEventHostReset (a graph's start)");
        /* the last replay's stream resets `done` after its wait: before this replay can signal it */
        if (x->last != s && (st = rt_stream_order(d, (tack_stream *)s, x->last)) != TACK_OK) goto done;
    }
    tk_mutex_lock(&l->lock);
    ze_result_t r = api->zeCommandListAppendBarrier(l->list, x->start->ev, 0, NULL);
    if (r == TACK_ZE_RESULT_SUCCESS) st = lz_submit(d, l);
    else st = lz_error(r, "zeCommandListAppendBarrier (a graph's start)", d);
    tk_mutex_unlock(&l->lock);
    if (st != TACK_OK) goto done;
    x->start->armed = 1;
    ZE(api->zeCommandQueueExecuteCommandLists(x->q, 1, &x->rl.list, NULL),
       "zeCommandQueueExecuteCommandLists (a graph)");
    x->launched = 1;
    x->done->armed = 1;
    tk_mutex_lock(&l->lock);
    r = api->zeCommandListAppendWaitOnEvents(l->list, 1, &x->done->ev);
    if (r == TACK_ZE_RESULT_SUCCESS) r = api->zeCommandListAppendEventReset(l->list, x->done->ev);
    if (r != TACK_ZE_RESULT_SUCCESS) st = lz_error(r, "zeCommandListAppendWaitOnEvents (a graph's end)", d);
    if (st == TACK_OK && (st = lz_hold(d, l, x->done)) == TACK_OK && (st = lz_barrier(d, l)) == TACK_OK)
        st = lz_submit(d, l);
    tk_mutex_unlock(&l->lock);
    if (x->last != s) {
        tack_stream_retain((tack_stream *)s);
        tack_stream_release(x->last);
        x->last = (tack_stream *)s;
    }
done:
    return st;
}

static tack_status g_launch(tack_device *d, void *exec, const tack_stream *s, tack_program *const *progs, int n) {
    return gpu_replay(d, progs, n, s, g_go, exec);
}

static void g_destroy(tack_device *d, void *exec) { graph_free(d, exec); }

/* ------------------------------------------------------------ timers */
/* The first slot's global start to the last's global end (gpu_timer_of owns and retires them). */
static tack_status timer_read(tack_device *d, void *first, void *last, int64_t *ns) {
    const tack_ze_api *api = lz_api_get();
    lz_dev *c = d->state;
    lz_slot *f = first, *l = last;
    tack_status st = sync_slot(d, l);
    if (st != TACK_OK) return st;
    ze_kernel_timestamp_result_t a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    ze_result_t r = api->zeEventQueryKernelTimestamp(f->ev, &a);
    if (r == TACK_ZE_RESULT_SUCCESS) r = api->zeEventQueryKernelTimestamp(l->ev, &b);
    if (r != TACK_ZE_RESULT_SUCCESS) return lz_error(r, "zeEventQueryKernelTimestamp (a launch's device time)", d);
    double v = ticks_apart(a.global.kernelStart, b.global.kernelEnd, c->kts_bits) * c->tick_ns;
    *ns = v > 0 ? (int64_t)(v + 0.5) : 0;
    return TACK_OK;
}

rt_prof_timer lz_timer_of(tack_device *d, lz_slot *first, lz_slot *last) {
    return gpu_timer_of(d, first, last, timer_read, retire);
}

const rt_stream_ops lz_stream_ops = {s_create, s_destroy, s_sync,    e_create, e_destroy, e_record, e_wait,
                                     e_sync,   e_query,   e_elapsed, g_begin,  g_end,     g_launch, g_destroy};
