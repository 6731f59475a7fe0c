/*
 * gpu_events.h -- the event bookkeeping the Level Zero and OpenCL streams
 * share (gpu_events.c says why): an event as the handle of its last record,
 * the check that a loader has the entry points streams need (which the
 * CUDA and HIP streams use too), and tack.profile()'s timer over a
 * launch's first and last handles.
 *
 * Every symbol here is internal to the library (hidden) and starts gpu_.
 */
#ifndef TACK_GPU_EVENTS_H
#define TACK_GPU_EVENTS_H

#include <stdint.h>

#include "runtime/runtime.h"

/* Lets go of one record's handle (a backend's: an lz_slot, a cl_event). */
typedef void (*gpu_release_fn)(tack_device *d, void *rec);

/* A tack.Event of such a backend: its last record's handle, NULL before the first. */
typedef struct gpu_event {
    void *rec;
    int timing; /* made with timing=True */
} gpu_event;

/* A new event with no record yet (e_create, once the backend has checked its entry points). */
tack_status gpu_event_new(tack_device *d, int timing, void **ev);
/* A record's handle replaces the one before, which `release` lets go. */
void gpu_event_replace(tack_device *d, gpu_event *e, void *rec, gpu_release_fn release);
/* e_destroy: the last record's handle let go, the event freed. */
void gpu_event_free(tack_device *d, void *ev, gpu_release_fn release);

/* One entry point a feature needs: whether the loader has it, and its name. */
typedef struct gpu_entry {
    int present;
    const char *name;
} gpu_entry;
#define GPU_ENTRY(api, fn) GPU_ENTRY_AS(api, fn, #fn)
/* One whose name in the driver is not the field's (CUDA's cuStreamDestroy_v2). */
#define GPU_ENTRY_AS(api, fn, name) {(api)->fn != NULL, (name)}
/* TACK_OK, or TACK_ERR_UNSUPPORTED naming the first of need[0..n) that `loader`
 * lacks and `what` (the feature: "streams and events") needs it. */
tack_status gpu_entries_check(const tack_device *d, const char *loader, const gpu_entry *need, int n,
                              const char *what);
#define GPU_ENTRIES_CHECK(d, loader, need, what) \
    gpu_entries_check((d), (loader), (need), (int)(sizeof(need) / sizeof((need)[0])), (what))

/* Reads a launch's device time from its first and last handles (the same
 * one for a one-phase launch) into *ns. */
typedef tack_status (*gpu_timer_read_fn)(tack_device *d, void *first, void *last, int64_t *ns);
/* tack.profile()'s timer over the two handles: it owns them, reads them
 * once when the profile stops (or not at all when the event is dropped) and
 * then lets each go once.  Out of memory: they are let go now and the timer
 * is empty (the launch goes untimed). */
rt_prof_timer gpu_timer_of(tack_device *d, void *first, void *last, gpu_timer_read_fn read, gpu_release_fn release);

#endif /* TACK_GPU_EVENTS_H */
