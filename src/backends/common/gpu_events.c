/*
 * gpu_events.c -- the event bookkeeping the Level Zero and OpenCL streams
 * share (level_zero_stream.c, opencl_stream.c).
 *
 * CUDA and HIP events are driver objects that a record overwrites in
 * place: the driver keeps the bookkeeping.  Level Zero and OpenCL have no
 * such thing.  An OpenCL record is a marker command with an event of its
 * own; a Level Zero record signals a fresh slot of an event pool (an
 * event the device may still look at cannot be reset).  So on both a
 * tack.Event is Tack's own small record -- the handle of its last record,
 * NULL before the first, and whether it was made to time -- and what a
 * record, a destruction and a profile's timer do with those handles is the
 * same: a new record's handle replaces the old one, which is let go; a
 * destroyed event lets go of its last; a timed launch hands its first and
 * last phases' handles to a timer that owns them, reads them once when the
 * profile stops and lets each go once (once when they are one, a launch
 * of one phase), or lets them go at once when it cannot be made.  Only
 * "let go" differs, and each backend names it: clReleaseEvent, or
 * lz_slot_retire, which returns the slot to its pool once nothing on the
 * device references it.  Keeping this in one place keeps the two backends'
 * ownership rules from drifting apart.
 *
 * Every GPU backend's streams (these two, CUDA's and HIP's) also refuse a
 * stream, an event or a graph when their loader or driver lacks an entry
 * point the feature needs, naming the first one missing; the check and its
 * wording are here, the list of names the backend's.
 */
#include "backends/common/gpu_events.h"

tack_status gpu_event_new(tack_device *d, int timing, void **ev) {
    gpu_event *e = tack_calloc(1, sizeof *e);
    if (!e) return tack_set_error(TACK_ERR_NOMEM, "out of memory making an event on %s", d->name);
    e->timing = timing;
    *ev = e;
    return TACK_OK;
}

void gpu_event_replace(tack_device *d, gpu_event *e, void *rec, gpu_release_fn release) {
    if (e->rec) release(d, e->rec);
    e->rec = rec;
}

void gpu_event_free(tack_device *d, void *ev, gpu_release_fn release) {
    gpu_event *e = ev;
    if (e->rec) release(d, e->rec); /* a record not yet reached is freed when it is */
    tack_free(e);
}

tack_status gpu_entries_check(const tack_device *d, const char *loader, const gpu_entry *need, int n,
                              const char *what) {
    for (int i = 0; i < n; i++)
        if (!need[i].present)
            return tack_set_error(TACK_ERR_UNSUPPORTED, "%s: the %s lacks %s, which %s need", d->name, loader,
                                  need[i].name, what);
    return TACK_OK;
}

typedef struct gpu_timer {
    tack_device *d;
    void *first, *last;
    gpu_timer_read_fn read;
    gpu_release_fn release;
} gpu_timer;

static void release_both(tack_device *d, void *first, void *last, gpu_release_fn release) {
    release(d, first);
    if (last != first) release(d, last);
}

static tack_status timer_resolve(void *ctx, int64_t *ns) {
    gpu_timer *t = ctx;
    tack_status st = ns ? t->read(t->d, t->first, t->last, ns) : TACK_OK;
    release_both(t->d, t->first, t->last, t->release);
    tack_free(t);
    return st;
}

rt_prof_timer gpu_timer_of(tack_device *d, void *first, void *last, gpu_timer_read_fn read, gpu_release_fn release) {
    rt_prof_timer tm = {NULL, NULL};
    gpu_timer *t = tack_malloc(sizeof *t);
    if (!t) {
        release_both(d, first, last, release);
        return tm;
    }
    t->d = d;
    t->first = first;
    t->last = last;
    t->read = read;
    t->release = release;
    tm.resolve = timer_resolve;
    tm.ctx = t;
    return tm;
}
