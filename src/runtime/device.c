/*
 * device.c -- the device registry.
 *
 * Devices are found by name ("cpu", "cuda:1", "opencl:0", "level_zero:0") and live for the life of the
 * process.  Each device points at its backend's vtable; this file is the
 * only place that lists the backends (its messages read the table too), and
 * shared code never names one.
 * Backends that this build or this machine lacks are still known by name, so
 * that asking for "cuda" on a machine without a GPU says exactly that,
 * instead of "unknown device".
 *
 * Each family is probed the first time something asks for it: the CPU at
 * once, a GPU family when a device of its kind is named or tack_devices()
 * lists them all.  Probing loads a driver -- an OpenCL driver such as PoCL
 * brings LLVM, tens of milliseconds and signal handlers of its own -- which
 * a program that only uses the CPU should never pay for.  Devices are
 * appended under a lock and never move or go away, so a tack_device pointer
 * stays valid and lookups read the table without the lock; tack_devices()
 * lists them in family order whatever order they were probed in.
 *
 * tack_backend_name and tack_backend_status read the same table for
 * diagnostics (`python -m tack`): each family's device count here and, when
 * it has none, the reason its probe kept -- the text tack_device_get's
 * message carries -- so a report can say why CUDA is absent without asking
 * for a device and taking an error apart.  tack_toolchain does the same for
 * the GPU compilers loaded at run time (NVRTC, hiprtc, ocloc), which are
 * listed here with the families.
 *
 * fork(): a child inherits the table, but a GPU driver's context does not
 * carry over -- its threads, queues and device handles stay in the parent
 * (PoCL's queue waits forever in the child for a worker thread it does not
 * have).  So when a process that opened a GPU family forks, the child's
 * devices of that family are swapped onto a copy of their backend whose every
 * operation fails with an error that says so (and what to do), whose frees do
 * nothing (the memory is the parent's), and whose synchronizations have
 * nothing of this process to wait for.  The devices disappear from
 * tack_devices() and a name lookup says why, but a pointer the child
 * inherited (an array of the parent's) stays valid.  A family the parent
 * never opened is probed afresh in the child, as in any process.  The CPU's
 * pool restarts by itself in a child (pool.c).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"

#include "runtime/pool.h"
#include "runtime/runtime.h"

#define MAX_DEVICES 32

/* Every device family Tack knows by name, and the backend that serves it in
 * this build (NULL: not built yet). */
static const struct family {
    const char *name;
    tack_device_type type;
    const rt_backend *(*backend)(void);
    const char *missing; /* why it is unavailable when backend is NULL */
} families[] = {
    { "cpu", TACK_DEVICE_CPU, rt_backend_cpu, NULL },
    { "cuda", TACK_DEVICE_CUDA, rt_backend_cuda, NULL },
    { "hip", TACK_DEVICE_ROCM, rt_backend_hip, NULL },
    { "metal", TACK_DEVICE_METAL, rt_backend_metal, NULL },
    { "level_zero", TACK_DEVICE_ONEAPI, rt_backend_level_zero, NULL },
    { "opencl", TACK_DEVICE_OPENCL, rt_backend_opencl, NULL },
};
#define NFAMILIES ((int)(sizeof families / sizeof families[0]))

static tack_device devices[MAX_DEVICES];
static int family_of[MAX_DEVICES];
static atomic_int ndevices;
static char unavailable[NFAMILIES][200];
static atomic_int probed[NFAMILIES];
static tk_mutex_t probe_lock = TK_MUTEX_INIT;
static long probed_in[NFAMILIES]; /* the process that probed each family */
static void forked_child(void);
static int count(void) { return atomic_load_explicit(&ndevices, memory_order_acquire); }

static void probe(int f) {
    if (atomic_load_explicit(&probed[f], memory_order_acquire)) return;
    /* the CPU first, whichever family is asked for first: it is devices[0] (rt_default_cpu) */
    if (f != 0) probe(0);
    tk_mutex_lock(&probe_lock);
    if (!atomic_load_explicit(&probed[f], memory_order_relaxed)) {
        if (!families[f].backend) {
            snprintf(unavailable[f], sizeof unavailable[f], "%s", families[f].missing);
        } else {
            const rt_backend *be = families[f].backend();
            int n = be->device_count(unavailable[f], sizeof unavailable[f]);
            for (int i = 0; i < n; i++) {
                int at = atomic_load_explicit(&ndevices, memory_order_relaxed);
                if (at >= MAX_DEVICES) break;
                tack_device *d = &devices[at];
                d->backend = be;
                d->index = i;
                if (be->type == TACK_DEVICE_CPU) snprintf(d->name, sizeof d->name, "%s", be->name);
                else snprintf(d->name, sizeof d->name, "%s:%d", be->name, i);
                if (be->init_device && be->init_device(d) != TACK_OK) {
                    /* skip the device; keep why, for when the family ends up with none */
                    if (!unavailable[f][0]) snprintf(unavailable[f], sizeof unavailable[f], "%s", tack_last_error());
                    continue;
                }
                family_of[at] = f;
                atomic_store_explicit(&ndevices, at + 1, memory_order_release);
            }
            probed_in[f] = tk_getpid();
            static int atfork_set;
            if (be->type != TACK_DEVICE_CPU && !atfork_set) {
                tk_atfork_child(forked_child);
                atfork_set = 1;
            }
        }
        atomic_store_explicit(&probed[f], 1, memory_order_release);
    }
    tk_mutex_unlock(&probe_lock);
}

/* ---- the devices of a family opened before fork(), in the child ---- */

static rt_backend forked_backend[NFAMILIES];
static rt_stream_ops forked_streams[NFAMILIES];

static int is_forked(const tack_device *d) {
    return d->backend >= forked_backend && d->backend < forked_backend + NFAMILIES;
}

static tack_status refuse(const tack_device *d) {
    int f = (int)(d->backend - forked_backend);
    return tack_set_error(TACK_ERR_DEVICE,
                          "device '%s' cannot be used in this process: it was opened in process %ld, which then "
                          "forked this one, and the %s driver's context does not carry over into a child of fork() "
                          "(its threads and queues stayed in the parent). Start the child with multiprocessing's "
                          "'spawn' or 'forkserver' context, or open the device in the parent only after forking",
                          d->name, probed_in[f], d->backend->name);
}

static tack_status f_alloc(tack_device *d, size_t n, void **out) { (void)n, (void)out; return refuse(d); }
static void f_free(tack_device *d, void *p) { (void)d, (void)p; }
static tack_status f_copy(tack_device *d, void *dst, const void *src, size_t n, rt_copy_kind k) {
    (void)dst, (void)src, (void)n, (void)k;
    return refuse(d);
}
static tack_status f_fill(tack_device *d, void *dst, const void *v, size_t size, size_t count) {
    (void)dst, (void)v, (void)size, (void)count;
    return refuse(d);
}
static tack_status f_nothing_queued(tack_device *d) { (void)d; return TACK_OK; }
static tack_status f_build(tack_device *d, tack_program *p) { (void)p; return refuse(d); }
static tack_status f_launch(tack_device *d, tack_program *p, const tack_arg *a, int n) {
    (void)p, (void)a, (void)n;
    return refuse(d);
}
static void f_unload(tack_device *d, tack_program *p) { (void)d, (void)p; }
static tack_status f_check_ptr(tack_device *d, const void *p, size_t n) { (void)p, (void)n; return refuse(d); }
static tack_status f_stream_wait(tack_device *d, void *s) { (void)s; return refuse(d); }
static tack_status f_wrap(tack_device *d, void *h, size_t n, void **data, tack_release_fn *rel, void **ctx) {
    (void)h, (void)n, (void)data, (void)rel, (void)ctx;
    return refuse(d);
}
static tack_status fs_create(tack_device *d, void **h) { (void)h; return refuse(d); }
static void fs_drop(tack_device *d, void *h) { (void)d, (void)h; }
static tack_status fs_sync(tack_device *d, const tack_stream *s) { (void)d, (void)s; return TACK_OK; }
static tack_status fs_event_create(tack_device *d, int timing, void **ev) {
    (void)timing, (void)ev;
    return refuse(d);
}
static tack_status fs_record(tack_device *d, void *ev, const tack_stream *s) {
    (void)ev, (void)s;
    return refuse(d);
}
static tack_status fs_wait(tack_device *d, const tack_stream *s, void *ev) {
    (void)ev, (void)s;
    return refuse(d);
}
static tack_status fs_event_sync(tack_device *d, void *ev) { (void)ev; return refuse(d); }
static int fs_query(tack_device *d, void *ev) { (void)ev; return refuse(d), -1; }
static tack_status fs_elapsed(tack_device *d, void *a, void *b, float *ms) {
    (void)a, (void)b, (void)ms;
    return refuse(d);
}
static tack_status fs_capture_begin(tack_device *d, const tack_stream *s) { (void)s; return refuse(d); }
static tack_status fs_capture_end(tack_device *d, const tack_stream *s, void **exec) {
    (void)s, (void)exec;
    return refuse(d);
}
static tack_status fs_graph_launch(tack_device *d, void *exec, const tack_stream *s, tack_program *const *pr, int n) {
    (void)exec, (void)s, (void)pr, (void)n;
    return refuse(d);
}

/* pthread_atfork's child handler: the child has one thread, so no lock. */
static void forked_child(void) {
    for (int f = 0; f < NFAMILIES; f++) {
        if (!atomic_load_explicit(&probed[f], memory_order_acquire) || families[f].type == TACK_DEVICE_CPU) continue;
        if (!families[f].backend || probed_in[f] == tk_getpid()) continue;
        const rt_backend *be = families[f].backend();
        rt_backend *fb = &forked_backend[f];
        *fb = (rt_backend){ .name = be->name, .type = be->type, .dialect = be->dialect,
                            .device_count = be->device_count, .init_device = be->init_device,
                            .alloc = f_alloc, .free = f_free, .copy = f_copy, .fill = f_fill,
                            .synchronize = f_nothing_queued, .build = f_build, .launch = f_launch,
                            .unload = f_unload, .check_ptr = be->check_ptr ? f_check_ptr : NULL,
                            .stream_wait = be->stream_wait ? f_stream_wait : NULL,
                            .wrap_handle = be->wrap_handle ? f_wrap : NULL };
        if (be->streams) {
            const rt_stream_ops *o = be->streams;
            forked_streams[f] = (rt_stream_ops){
                .create = fs_create, .destroy = fs_drop, .sync = fs_sync, .event_create = fs_event_create,
                .event_destroy = fs_drop, .record = fs_record, .wait = fs_wait, .event_sync = fs_event_sync,
                .query = fs_query, .elapsed = fs_elapsed,
                .capture_begin = o->capture_begin ? fs_capture_begin : NULL,
                .capture_end = o->capture_end ? fs_capture_end : NULL,
                .graph_launch = o->graph_launch ? fs_graph_launch : NULL,
                .graph_destroy = o->graph_destroy ? fs_drop : NULL };
            fb->streams = &forked_streams[f];
        }
        int n = count();
        for (int i = 0; i < n; i++)
            if (family_of[i] == f) devices[i].backend = fb;
    }
}

static void probe_type(tack_device_type type) {
    for (int f = 0; f < NFAMILIES; f++)
        if (families[f].type == type) probe(f);
}

tack_device *rt_default_cpu(void) {
    probe_type(TACK_DEVICE_CPU);
    return &devices[0]; /* the CPU backend always provides a device, probed first */
}

int tack_devices(tack_device **out, int cap) {
    for (int f = 0; f < NFAMILIES; f++) probe(f);
    int n = count(), k = 0;
    for (int f = 0; f < NFAMILIES; f++)
        for (int i = 0; i < n; i++)
            if (family_of[i] == f && !is_forked(&devices[i])) {
                if (k < cap) out[k] = &devices[i];
                k++;
            }
    return k;
}

tack_status tack_device_from_type(tack_device_type type, int index, tack_device **out) {
    probe_type(type);
    int n = count();
    for (int i = 0; i < n; i++)
        if (devices[i].backend->type == type && devices[i].index == index) {
            if (is_forked(&devices[i])) return refuse(&devices[i]);
            *out = &devices[i];
            return TACK_OK;
        }
    for (int f = 0; f < NFAMILIES; f++)
        if (families[f].type == type)
            return tack_set_error(TACK_ERR_DEVICE, "no %s device with index %d: %s", families[f].name, index,
                                  unavailable[f][0] ? unavailable[f] : "index out of range");
    return tack_set_error(TACK_ERR_DEVICE, "unsupported device type %d", (int)type);
}

/* The families for a message, from the table: 'cpu', 'cuda', 'cuda:N', ... or 'opencl', 'opencl:N'. */
static void family_names(char *buf, size_t n) {
    size_t at = 0;
    buf[0] = 0;
    for (int f = 0; f < NFAMILIES && at < n; f++) {
        int cpu = families[f].type == TACK_DEVICE_CPU, w;
        const char *sep = f == 0 ? "" : f == NFAMILIES - 1 ? " or " : ", ";
        if (cpu) w = snprintf(buf + at, n - at, "%s'%s'", sep, families[f].name);
        else w = snprintf(buf + at, n - at, "%s'%s', '%s:N'", sep, families[f].name, families[f].name);
        if (w < 0) break;
        at += (size_t)w;
    }
}

const char *tack_backend_name(int i) { return i >= 0 && i < NFAMILIES ? families[i].name : NULL; }

int tack_backend_status(const char *name, char *why, size_t cap) {
    if (why && cap) why[0] = 0;
    if (!name) return tack_set_error(TACK_ERR_VALUE, "tack_backend_status: the family name is NULL"), -1;
    for (int f = 0; f < NFAMILIES; f++) {
        if (strcmp(families[f].name, name) != 0) continue;
        probe(f);
        int n = count(), k = 0;
        const tack_device *gone = NULL;
        for (int i = 0; i < n; i++) {
            if (family_of[i] != f) continue;
            if (is_forked(&devices[i])) gone = &devices[i];
            else k++;
        }
        if (k == 0 && gone) {
            refuse(gone);
            if (why && cap) snprintf(why, cap, "%s", tack_last_error());
        } else if (k == 0 && why && cap) {
            snprintf(why, cap, "%s", unavailable[f][0] ? unavailable[f] : "no device found");
        }
        return k;
    }
    char known[256];
    family_names(known, sizeof known);
    return tack_set_error(TACK_ERR_VALUE, "tack_backend_status: unknown device family '%.64s' (expected %s)", name,
                          known), -1;
}

/* The GPU toolchains by name, for reports; the library's path from the
 * loader's own record of it (dlinfo), whatever name it was opened by. */
static const struct toolchain {
    const char *name;
    void *(*query)(const char **text, int *version);
} toolchains[] = {
    {"nvrtc", rt_toolchain_nvrtc},
    {"hiprtc", rt_toolchain_hiprtc},
    {"ocloc", rt_toolchain_ocloc},
};

int tack_toolchain(const char *name, char *where, size_t cap, int *version) {
    if (where && cap) where[0] = 0;
    if (version) *version = 0;
    for (size_t i = 0; name && i < sizeof toolchains / sizeof toolchains[0]; i++) {
        if (strcmp(name, toolchains[i].name) != 0) continue;
        const char *text = "";
        int v = 0;
        void *lib = toolchains[i].query(&text, &v);
        char loaded[4096];
        if (lib && tk_dl_path(lib, NULL, loaded, sizeof loaded) == 0 && tk_path_is_absolute(loaded)) text = loaded;
        if (where && cap) snprintf(where, cap, "%s", text);
        if (version) *version = v;
        return lib != NULL;
    }
    return tack_set_error(TACK_ERR_VALUE, "tack_toolchain: unknown toolchain '%.64s' (expected 'nvrtc', 'hiprtc' or "
                          "'ocloc')", name ? name : "(null)"), -1;
}

tack_status tack_device_get(const char *name, tack_device **out) {
    if (!name) return tack_set_error(TACK_ERR_VALUE, "device name is NULL");
    const char *colon = strchr(name, ':');
    size_t flen = colon ? (size_t)(colon - name) : strlen(name);
    int index = 0;
    if (colon) {
        char *end = NULL;
        long v = strtol(colon + 1, &end, 10);
        if (colon[1] == '\0' || *end != '\0' || v < 0 || v > 1024)
            return tack_set_error(TACK_ERR_VALUE,
                                  "malformed device name '%.64s': expected 'kind' or 'kind:N' with N >= 0", name);
        index = (int)v;
    }
    for (int f = 0; f < NFAMILIES; f++) {
        if (strlen(families[f].name) != flen || strncmp(families[f].name, name, flen) != 0) continue;
        if (families[f].type == TACK_DEVICE_CPU && index != 0)
            return tack_set_error(TACK_ERR_VALUE, "device '%.64s': there is one CPU device, 'cpu'", name);
        probe(f);
        int n = count();
        for (int i = 0; i < n; i++)
            if (devices[i].backend->type == families[f].type && devices[i].index == index) {
                if (is_forked(&devices[i])) return refuse(&devices[i]);
                *out = &devices[i];
                return TACK_OK;
            }
        return tack_set_error(TACK_ERR_DEVICE, "device '%.64s' is not available: %s", name,
                              unavailable[f][0] ? unavailable[f] : "no device with that index");
    }
    char known[256];
    family_names(known, sizeof known);
    return tack_set_error(TACK_ERR_VALUE, "unknown device '%.64s' (expected %s)", name, known);
}

const char *tack_device_name(const tack_device *d) { return d->name; }
tack_device_type tack_device_kind(const tack_device *d) { return d->backend->type; }
const char *tack_device_dialect(const tack_device *d) { return d->backend->dialect; }
const char *tack_device_description(const tack_device *d) { return d->description; }
uint64_t tack_device_memory(const tack_device *d) { return d->memory; }
int tack_device_index(const tack_device *d) { return d->index; }
/* The CPU backend, or a device whose backend found it is the host's cores (PoCL). */
int tack_device_on_host_cores(const tack_device *d) { return d->backend->type == TACK_DEVICE_CPU || d->host_cores; }
/* The CPU's: the threads its next launch runs on (pool.c: the num_threads
 * setting, or the usable cores). */
int tack_device_threads(const tack_device *d) { return d->backend->type == TACK_DEVICE_CPU ? pool_threads() : d->threads; }

tack_status tack_device_synchronize(tack_device *d) {
    tack_status st = rt_capture_refuse(d, "synchronizing the device");
    if (st != TACK_OK) return st;
    return d->backend->synchronize ? d->backend->synchronize(d) : TACK_OK;
}

tack_status tack_synchronize_all(void) {
    int n = count(); /* a family never probed has no work queued */
    for (int i = 0; i < n; i++) {
        tack_status st = tack_device_synchronize(&devices[i]);
        if (st != TACK_OK) return st;
    }
    return TACK_OK;
}
