/*
 * profile.c -- the recorder behind tack.profile(): what ran, where, and for
 * how long.
 *
 * A user asking "why is this slow" needs two answers the rest of the
 * library does not keep: how the time of a run splits between compiling
 * (the front end, the compiler, the C compiler or NVRTC, or a kernel-cache
 * hit) and launching, and how a launch's time splits between the host (the
 * argument checks, the packing, queueing) and the device.  The work happens
 * in the C core, so the clocks are read there, at the place each step runs:
 * tack_compile, the backends' builds, tack_launch, the CPU's generated
 * entry and the thread pool's parallel loops.  The extension only starts a
 * recorder, adds the steps it runs itself (the front end) and reads the
 * events out.
 *
 * Cost when off.  The launch path is measured in the benchmarks; a profiler
 * nobody started must not slow it.  The active recorder is one atomic
 * pointer, read relaxed: a launch with none active pays that load and a
 * branch, no clock read, no lock (rt_prof_on in runtime.h).  When one is
 * active, each event takes a global lock for the append; the numbers it
 * reports include that small cost, which is documented.
 *
 * Device time.  On a GPU a launch returns once queued, so the host's time
 * says little about the kernel.  A backend that can time on the device
 * records a pair of events around the launch and hands the recorder a
 * timer (rt_prof_timer): a function that reads the elapsed time once the
 * device has run it, and frees the events.  The timers are read at
 * tack_profile_stop, after recording ended, so a profiled run is not
 * serialized by them.  On the CPU the device time is the time the
 * generated code ran, and each pool thread's part of a parallel loop is
 * an event of its own ("worker"), one track per thread in the trace.
 *
 * Safety.  Recording and stopping take the same lock, and an event is
 * appended only to the recorder found active under it, so a launch racing
 * a stop on another thread either lands in the recorder or is dropped
 * (its timer freed): never written into a freed one.  Strings are copied
 * into the recorder, so events outlive the programs they name.
 */
#include <stdatomic.h>
#include <string.h>

#include "platform/platform.h"

#include "runtime/runtime.h"

typedef struct prof_ev {
    tack_profile_event e;
    rt_prof_timer timer; /* resolve == NULL: device_ns is final */
} prof_ev;

struct tack_profile {
    prof_ev *ev;
    int64_t n, cap;
    char **strs; /* the strings the events point at, owned */
    int64_t nstr, capstr;
    int stopped;
};

tack_profile *_Atomic rt_prof_active;
static tk_mutex_t prof_lock = TK_MUTEX_INIT;
static atomic_ulong next_thread = 1;
static _Thread_local unsigned long thread_id;
_Thread_local const char *rt_prof_kernel;
_Thread_local int64_t rt_prof_cur_ns = -1;
_Thread_local rt_prof_timer rt_prof_cur_timer;
_Thread_local const char *rt_prof_build;

TACK_API int64_t tack_profile_now(void) {
    return tk_monotonic_ns();
}

int64_t rt_prof_now(void) { return tack_profile_now(); }

uint64_t rt_prof_thread(void) {
    if (!thread_id) thread_id = atomic_fetch_add(&next_thread, 1);
    return thread_id;
}

TACK_API int tack_profile_active(void) { return rt_prof_on(); }

/* A copy of s kept by p (a short list searched from the end: the names of
 * one run repeat).  NULL when out of memory. */
static const char *keep(tack_profile *p, const char *s) {
    if (!s) s = "";
    for (int64_t i = p->nstr - 1; i >= 0 && i >= p->nstr - 64; i--)
        if (strcmp(p->strs[i], s) == 0) return p->strs[i];
    if (p->nstr == p->capstr) {
        int64_t cap = p->capstr ? p->capstr * 2 : 64;
        char **m = tack_realloc(p->strs, (size_t)cap * sizeof *m);
        if (!m) return NULL;
        p->strs = m;
        p->capstr = cap;
    }
    size_t len = strlen(s) + 1;
    char *c = tack_malloc(len);
    if (!c) return NULL;
    memcpy(c, s, len);
    p->strs[p->nstr++] = c;
    return c;
}

void rt_prof_event(const char *kind, const char *phase, const char *name, const char *device, uint64_t thread,
                   int64_t t0, int64_t t1, int64_t device_ns, rt_prof_timer timer) {
    int added = 0;
    tk_mutex_lock(&prof_lock);
    tack_profile *p = atomic_load_explicit(&rt_prof_active, memory_order_relaxed);
    if (p && p->n == p->cap) {
        int64_t cap = p->cap ? p->cap * 2 : 256;
        prof_ev *m = tack_realloc(p->ev, (size_t)cap * sizeof *m);
        if (m) p->ev = m, p->cap = cap;
    }
    if (p && p->n < p->cap) {
        prof_ev *e = &p->ev[p->n];
        e->e.kind = keep(p, kind);
        e->e.phase = keep(p, phase);
        e->e.name = keep(p, name);
        e->e.device = keep(p, device);
        if (e->e.kind && e->e.phase && e->e.name && e->e.device) {
            e->e.thread = thread;
            e->e.start_ns = t0;
            e->e.host_ns = t1 - t0;
            e->e.device_ns = timer.resolve ? -1 : device_ns;
            e->timer = timer;
            p->n++;
            added = 1;
        }
    }
    tk_mutex_unlock(&prof_lock);
    if (!added && timer.resolve) timer.resolve(timer.ctx, NULL); /* dropped: the timer's events freed */
}

TACK_API void tack_profile_record(const char *kind, const char *phase, const char *name, const char *device,
                                  int64_t start_ns, int64_t end_ns, int64_t device_ns) {
    if (!rt_prof_on()) return;
    rt_prof_timer none = {NULL, NULL};
    rt_prof_event(kind, phase, name, device, rt_prof_thread(), start_ns, end_ns, device_ns < 0 ? -1 : device_ns,
                  none);
}

TACK_API tack_status tack_profile_start(tack_profile **out) {
    if (!out) return tack_set_error(TACK_ERR_VALUE, "tack_profile_start: out is NULL");
    *out = NULL;
    tack_profile *p = tack_calloc(1, sizeof *p);
    if (!p) return tack_set_error(TACK_ERR_NOMEM, "out of memory starting a profile");
    tk_mutex_lock(&prof_lock);
    tack_profile *was = atomic_load_explicit(&rt_prof_active, memory_order_relaxed);
    if (!was) atomic_store_explicit(&rt_prof_active, p, memory_order_relaxed);
    tk_mutex_unlock(&prof_lock);
    if (was) {
        tack_free(p);
        return tack_set_error(TACK_ERR_VALUE, "a profile is already recording: one tack.profile() at a time "
                                              "(stop the other one first; profiles do not nest)");
    }
    *out = p;
    return TACK_OK;
}

TACK_API tack_status tack_profile_stop(tack_profile *p) {
    if (!p) return tack_set_error(TACK_ERR_VALUE, "tack_profile_stop: profile is NULL");
    tk_mutex_lock(&prof_lock);
    if (atomic_load_explicit(&rt_prof_active, memory_order_relaxed) == p)
        atomic_store_explicit(&rt_prof_active, NULL, memory_order_relaxed);
    tk_mutex_unlock(&prof_lock);
    if (p->stopped) return TACK_OK;
    p->stopped = 1;
    /* no one appends now: read the device times (each waits for its launch) */
    tack_status first = TACK_OK;
    for (int64_t i = 0; i < p->n; i++) {
        prof_ev *e = &p->ev[i];
        if (!e->timer.resolve) continue;
        int64_t ns = -1;
        tack_status st = e->timer.resolve(e->timer.ctx, &ns);
        e->timer.resolve = NULL;
        e->e.device_ns = st == TACK_OK ? ns : -1;
        if (st != TACK_OK && first == TACK_OK) first = st; /* its message stays the thread's error */
    }
    return first;
}

TACK_API void tack_profile_free(tack_profile *p) {
    if (!p) return;
    if (!p->stopped && tack_profile_stop(p) != TACK_OK) tack_clear_error();
    for (int64_t i = 0; i < p->nstr; i++) tack_free(p->strs[i]);
    tack_free(p->strs);
    tack_free(p->ev);
    tack_free(p);
}

TACK_API int64_t tack_profile_count(const tack_profile *p) { return p ? p->n : 0; }

TACK_API int tack_profile_get(const tack_profile *p, int64_t i, tack_profile_event *out) {
    if (!p || !out || i < 0 || i >= p->n) return 0;
    *out = p->ev[i].e;
    return 1;
}
