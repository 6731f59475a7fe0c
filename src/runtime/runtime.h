/*
 * runtime.h -- libtack's internal runtime interface (not installed).
 *
 * The runtime speaks to hardware only through a rt_backend: a table of
 * function pointers, one table per backend, each in its backend's folder
 * under src/backends/ (QBE's Target is the model).  Shared code never names a
 * backend; it looks devices up in the registry (device.c) and calls through
 * dev->backend.  Adding a GPU backend means writing one such table and
 * registering it in device.c.
 */
#ifndef TACK_RUNTIME_H
#define TACK_RUNTIME_H

#include <stdatomic.h>
#include <stdbool.h>

#include "tack.h"
#include "tack_kernel.h"

typedef enum rt_copy_kind {
    RT_COPY_H2D, /* host -> device */
    RT_COPY_D2H, /* device -> host */
    RT_COPY_D2D  /* device -> same device */
} rt_copy_kind;

/* A backend's streams and events (stream.c; NULL in rt_backend.streams: the
 * backend has none yet).  A tack_stream of NULL is the device's own stream;
 * handles are the API's (CUstream, CUevent, ...). */
typedef struct rt_stream_ops {
    tack_status (*create)(tack_device *d, void **handle);
    void (*destroy)(tack_device *d, void *handle);
    /* wait on the host for the stream, then report a failed check of its kernels */
    tack_status (*sync)(tack_device *d, const tack_stream *s);
    tack_status (*event_create)(tack_device *d, int timing, void **ev);
    void (*event_destroy)(tack_device *d, void *ev);
    tack_status (*record)(tack_device *d, void *ev, const tack_stream *s);
    tack_status (*wait)(tack_device *d, const tack_stream *s, void *ev); /* on the device */
    tack_status (*event_sync)(tack_device *d, void *ev);
    int (*query)(tack_device *d, void *ev); /* 1 reached, 0 not yet, -1 error (set) */
    tack_status (*elapsed)(tack_device *d, void *start, void *end, float *ms);
    /* Graphs (graph.c); NULL: the device keeps a list of the calls instead.
     * Begin capturing what is queued on s; end it, *exec the graph made
     * ready to launch; replay exec on s, the programs it launches given (their
     * frames are ordered as a launch's are); free exec. */
    tack_status (*capture_begin)(tack_device *d, const tack_stream *s);
    tack_status (*capture_end)(tack_device *d, const tack_stream *s, void **exec);
    tack_status (*graph_launch)(tack_device *d, void *exec, const tack_stream *s, tack_program *const *progs, int n);
    void (*graph_destroy)(tack_device *d, void *exec);
} rt_stream_ops;

typedef struct rt_backend {
    const char *name;                 /* "cpu", "cuda", "opencl", ... */
    tack_device_type type;            /* DLPack device type */
    /* The source dialect its kernels are emitted in (compiler: tk_dialect_find):
     * "c", "cuda", ... -- shared code asks the backend, never maps kinds itself. */
    const char *dialect;
    /* Probe the backend; number of devices (0 when unavailable, with a
     * reason written to `why` of `why_len` bytes). */
    int (*device_count)(char *why, size_t why_len);
    tack_status (*init_device)(tack_device *dev);
    tack_status (*alloc)(tack_device *dev, size_t nbytes, void **out);
    void (*free)(tack_device *dev, void *ptr);
    tack_status (*copy)(tack_device *dev, void *dst, const void *src, size_t nbytes, rt_copy_kind kind);
    tack_status (*fill)(tack_device *dev, void *dst, const void *value, size_t itemsize, size_t count);
    tack_status (*synchronize)(tack_device *dev);
    /* Kernels: build emitted source into loaded code, run it, drop it. */
    tack_status (*build)(tack_device *dev, tack_program *p);
    tack_status (*launch)(tack_device *dev, tack_program *p, const tack_arg *args, int nargs);
    void (*unload)(tack_device *dev, tack_program *p);
    /* Optional: TACK_OK when [ptr, ptr+nbytes) is memory this device can use
     * (a wrapped device address); an error naming the address otherwise. */
    tack_status (*check_ptr)(tack_device *dev, const void *ptr, size_t nbytes);
    /* Optional: make work queued from now on on `stream`, a stream of the
     * backend's API that another library uses (CUDA: a CUstream), wait for
     * every copy and launch queued on dev so far -- on the device, with no
     * wait on the host.  NULL: the backend has no streams to hand off to. */
    tack_status (*stream_wait)(tack_device *dev, void *stream);
    /* Optional: the backend wraps an object of its API that owns memory,
     * not an address (Metal: an MTLBuffer) -- array_from_ptr's `ptr` is that
     * object.  Checks it holds nbytes, and gives the address its arrays use
     * and a reference held until release(ctx) runs.  When set, check_ptr is
     * not asked about wrapped pointers. */
    tack_status (*wrap_handle)(tack_device *dev, void *handle, size_t nbytes, void **data, tack_release_fn *release,
                               void **ctx);
    /* Optional: streams and events other than the device's own (stream.c). */
    const rt_stream_ops *streams;
} rt_backend;

struct tack_device {
    const rt_backend *backend;
    int index;
    char name[32];
    char description[160]; /* set by init_device: the product ("NVIDIA H200"), for reports */
    int threads;   /* CPU: pool size; a GPU: its compute units (SMs, CUs) */
    uint64_t memory; /* set by init_device: bytes of memory, for reports; 0 when the backend does not say */
    int host_memory; /* set by init_device: its arrays are host-accessible memory (DLPack: kDLCPU) */
    int host_cores;  /* set by init_device: its work runs on the host CPU's cores (an OpenCL device of
                        type CPU, such as PoCL); the CPU backend's always does (tack_device_on_host_cores) */
    int opaque_data; /* set by init_device: an array's data pointer is a handle (OpenCL cl_mem buffers),
                        so arrays of two storages never share memory whatever the numbers say */
    void *state;   /* backend-owned */
};

/* The storage of one or more arrays; reference counted across threads. */
typedef struct rt_storage {
    atomic_long refs;
    tack_device *device;
    void *data;
    size_t nbytes;
    int writable;           /* the owner allows writes */
    int owned;              /* allocated by the backend: freed through it */
    tack_release_fn release;/* borrowed: released once through this */
    void *release_ctx;
    int emptied;            /* tack_array_recycle kept its handle: borrows nothing until tack_array_rewrap */
    /* TACK_ARRAY_* flags: kept on the storage, not a handle, so that every
     * view of memory another library holds waits ("When a call returns") */
    atomic_uint flags;
    /* the stream other than the device's own that work on it was last queued
     * on (a reference), NULL for the device's own (stream.c, rt_storage_use) */
    tack_stream *_Atomic last;
} rt_storage;

struct tack_array {
    atomic_long refs;
    rt_storage *storage;
    void *data;             /* storage->data (views may offset later) */
    tack_dtype dtype;
    int ndim;
    int writable;
    int64_t shape[TACK_MAX_NDIM];
    int64_t size;
    size_t nbytes;
    int strided;            /* a strided view (strided.c): strides below, else C order */
    int64_t strides[TACK_MAX_NDIM]; /* in elements, any sign; only when strided */
    int64_t offset;         /* a strided view on a device whose data are handles (OpenCL cl_mem):
                               element (0, ..., 0) is this many elements into `data`; else 0 */
};

/* stream.c */
struct tack_stream {
    atomic_long refs;
    tack_device *dev;
    void *handle;
    int owned;                        /* made by Tack: destroyed with the last reference */
    struct tack_stream *next, *prev;  /* the live streams (tack_device_synchronize waits for them) */
    _Atomic(struct tack_graph *) capture; /* the capture in progress on it (graph.c), else NULL */
};
/* The capture in progress on s, or NULL (s may be NULL: the device's own stream, never captured). */
static inline struct tack_graph *rt_captured(const tack_stream *s) {
    return s ? atomic_load_explicit(&((tack_stream *)s)->capture, memory_order_acquire) : NULL;
}
/* The calling thread's current stream if it is on d, else NULL (d's own). */
tack_stream *rt_stream_now(const tack_device *d);
/* Work queued from now on `waiter` waits, on the device, for the work queued
 * so far on `waited` (NULL: d's own stream); nothing when they are one. */
tack_status rt_stream_order(tack_device *d, tack_stream *waiter, tack_stream *waited);
/* Storage s is about to be used on the current stream: ordered after the
 * stream it was last used on, which it then remembers. */
tack_status rt_storage_use(rt_storage *s);
/* Before s's memory is freed on the device's own stream: ordered after its last use. */
void rt_storage_settle(rt_storage *s);
/* Wait for every live stream of d (tack_device_synchronize). */
tack_status rt_streams_sync(tack_device *d);
/* Make d's own stream wait, on the device, for every live stream of d: a
 * program's code and frame are freed after the launches that use them. */
tack_status rt_streams_join(tack_device *d);

/* graph.c: what the runtime does during a capture on s (rt_captured(s)):
 * a launch, a same-device copy and a fill are kept in the graph (and queued
 * to the driver's capture where the device has one); anything that would
 * wait for the captured work or read it on the host is refused. */
tack_status rt_capture_launch(tack_stream *s, tack_program *p, const tack_arg *args, int nargs);
tack_status rt_capture_copy(tack_stream *s, tack_array *dst, const tack_array *src);
tack_status rt_capture_fill(tack_stream *s, tack_array *a, const void *value);
/* TACK_ERR_VALUE naming `what` when the calling thread captures on a stream of d, else TACK_OK. */
tack_status rt_capture_refuse(const tack_device *d, const char *what);
/* A capturing stream of d (any thread's), or NULL. */
tack_stream *rt_capture_on(const tack_device *d);

/* strided.c: an operation that assumes C order refuses a strided view. */
tack_status rt_refuse_strided(const tack_array *a, const char *what);
/* Whether strided a and b (either may be contiguous) share a byte. */
int rt_strided_overlap(const tack_array *a, const tack_array *b);
/* tack_array_copy_to_host of a strided view: its elements gathered in C order. */
tack_status rt_strided_to_host(const tack_array *a, void *dst);
/* tack_array_copy_from_host into a strided view: the values scattered to its elements, in C order. */
tack_status rt_strided_from_host(tack_array *a, const void *src);
/* tack_array_wrap of elements reaching from data + lo, span bytes (array.c). */
tack_status rt_wrap_span(tack_device *dev, tack_dtype dt, int ndim, const int64_t *shape, void *data, int64_t lo,
                         size_t span, int writable, tack_release_fn release, void *ctx, tack_array **out);

/* device.c */
const rt_backend *rt_backend_cpu(void);
/* The GPU toolchains' libraries, loaded at their first use, for reports
 * (tack_toolchain): the dlopen handle, or NULL with *text the reason it is
 * absent; found, *text is the name it was loaded by and *version its version
 * (NVRTC, hiprtc: major*1000 + minor*10; ocloc: oclocVersion's number). */
void *rt_toolchain_nvrtc(const char **text, int *version);
void *rt_toolchain_hiprtc(const char **text, int *version);
void *rt_toolchain_ocloc(const char **text, int *version);

const rt_backend *rt_backend_cuda(void);
const rt_backend *rt_backend_hip(void);
const rt_backend *rt_backend_metal(void);
const rt_backend *rt_backend_opencl(void);
const rt_backend *rt_backend_level_zero(void);
tack_device *rt_default_cpu(void);

/* Checked arithmetic for sizes: 0 on overflow. */
int rt_mul_overflow_size(size_t a, size_t b, size_t *out);

/* interrupt.c: one launch's view of tack_interrupt(). */
typedef struct rt_watch {
    int on;             /* the launching thread is interruptible */
    atomic_int hooked;  /* the long-launch hook has run */
    _Atomic int64_t t0; /* the launch's first poll (ns); 0 before it */
} rt_watch;
/* At a launch's start: clears an earlier request when the thread is interruptible. */
void rt_watch_begin(rt_watch *w);
/* 1 when the launch should stop.  `now`: the monotonic clock (rt_watch_now) just
 * read, or 0 for no reading (then only the request flag is looked at); polls
 * with a time call the long-launch hook once, 10 ms after the first of them. */
int rt_watch_poll(rt_watch *w, int64_t now);
int64_t rt_watch_now(void);

/* fpmode.c: flush-to-zero for the kernels that ask (flush_denormals). */
typedef unsigned long long rt_fpmode; /* a thread's floating-point control word */
/* 1 where the CPU can flush subnormals (x86-64: MXCSR; aarch64: FPCR). */
int rt_flush_supported(void);
/* The calling thread's mode, then subnormal results and operands flushed to
 * zero on it; give the mode back to rt_flush_leave. */
rt_fpmode rt_flush_enter(void);
void rt_flush_leave(rt_fpmode saved);
/* 1 when the calling thread flushes subnormals now. */
int rt_flush_active(void);
/* Subnormals kept (IEEE) on the calling thread: the pool's workers start so. */
void rt_flush_off(void);

/* cpu_width.c: 1 when this CPU runs 512-bit vector operations at full width (measured once
 * per process; the wide_vectors setting states it), the C target's wide_vectors (target.h). */
int rt_cpu_wide_vectors(void);

/* profile.c: the active recorder (tack.h's tack_profile).  rt_prof_on is
 * the whole cost of profiling when none is active: one relaxed load. */
extern __attribute__((visibility("hidden"))) tack_profile *_Atomic rt_prof_active; /* no GOT load */
static inline int rt_prof_on(void) { return atomic_load_explicit(&rt_prof_active, memory_order_relaxed) != 0; }
/* The kernel the calling thread is launching on the CPU (for the pool's events). */
extern _Thread_local const char *rt_prof_kernel;
int64_t rt_prof_now(void);
/* The calling host thread's number in the profile (1, 2, ... in order of first use). */
uint64_t rt_prof_thread(void);
/* A device time read after the run (a GPU's event pair): resolve(ctx, &ns)
 * once, at tack_profile_stop; resolve(ctx, NULL) only frees (the event was
 * dropped).  Either way ctx is gone after it. */
typedef struct rt_prof_timer {
    tack_status (*resolve)(void *ctx, int64_t *ns);
    void *ctx;
} rt_prof_timer;
/* Set by a backend's launch while a profile records, read and cleared by
 * tack_launch, which records the launch: the time the launch's code ran on
 * the device (-1: not measured), or a timer that reads it later. */
extern _Thread_local int64_t rt_prof_cur_ns;
extern _Thread_local rt_prof_timer rt_prof_cur_timer;
/* Set by a backend's build (any time: the compile path is not hot): what the
 * build did, "cc", "cache hit", "nvrtc", ...; tack_program_build records it. */
extern _Thread_local const char *rt_prof_build;
/* An event into the active recorder (none: dropped, the timer freed). */
void rt_prof_event(const char *kind, const char *phase, const char *name, const char *device, uint64_t thread,
                   int64_t t0, int64_t t1, int64_t device_ns, rt_prof_timer timer);
/* A compile step of the calling thread, t0 to now. */
static inline void rt_prof_step(const char *phase, const char *name, const char *device, int64_t t0) {
    rt_prof_timer none = {0, 0};
    rt_prof_event("compile", phase, name, device, rt_prof_thread(), t0, rt_prof_now(), -1, none);
}

#endif /* TACK_RUNTIME_H */
