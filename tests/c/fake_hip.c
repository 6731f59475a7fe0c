/*
 * fake_hip.c -- a fake HIP runtime (libamdhip64) and hiprtc, for testing the
 * HIP backend's host side on machines without an AMD GPU.
 *
 * It exports the entry points Tack calls (src/backends/hip/hip_api.h, hiprtc.c)
 * and does their host-side work for real: device memory is host memory
 * (calloc), known by address, size and device, so hipPointerGetAttributes
 * answers from the live allocations; copies and fills are queued on their
 * stream and happen only when the stream is drained -- at hipStreamSynchronize,
 * before hipFree (which synchronizes, as HIP's does), or when another stream
 * waits for an event recorded on it -- so a host buffer read after a copy
 * that was not waited for is stale here as it would be on a GPU.  Events
 * record their place in their stream; hipStreamWaitEvent drains the
 * recording stream before the waiting one goes on.
 *
 * Kernels do not run: a launch is queued like a copy and, when it completes,
 * records its grid, block and argument bytes (copied at the call, as HIP
 * does) and, when fail_next is set, writes a failed check into the error
 * record its first slot points at, naming the program id of its third slot.
 * hiprtc "compiles" to "\177ELF" + "fake-hsaco\n" + the source, recording
 * its options, and hipModuleGetFunction finds a name in that text; a real
 * code object (the real hiprtc's) is loaded when it was built for the
 * device's architecture, and its symbols are searched the same way.
 *
 * Environment: FAKE_HIP_COUNT (devices, 1; 0 makes hipInit fail with
 * hipErrorNoDevice), FAKE_HIP_ARCH (gcnArchName, "gfx90a:sramecc+:xnack-"),
 * FAKE_HIP_WARP (64), FAKE_HIP_RUNTIME (hipRuntimeGetVersion, 50221153; 6
 * and later change hipPointerGetAttributes' memory types as ROCm 6 did),
 * FAKE_HIP_FAULT (set: a launch is a GPU memory fault, which ROCm's runtime
 * answers by printing its message and aborting the process, as the real one
 * does from its event thread).
 *
 * Graphs: a stream being captured (hipStreamBeginCapture) keeps what is
 * queued on it in its graph instead of its queue; hipGraphLaunch queues a
 * copy of the graph's work on the launch stream, where it runs when that
 * stream is drained, like any other work.  What Tack must never do on a
 * capturing stream (synchronize it, record or wait for an event on it, copy
 * to or from the host on it) fails and is counted in capture_misuse.
 * Tests read and set the globals below through dlsym or ctypes.
 *
 * Built with FAKE_HIP_WITHOUT_EVENT_QUERY or FAKE_HIP_WITHOUT_GRAPH_LAUNCH,
 * it lacks that entry point, as an old or partial runtime would.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int hipError_t;

static int env_int(const char *n, int dflt) {
    const char *e = getenv(n);
    return e && *e ? atoi(e) : dflt;
}

/* ---------------------------------------------------------- what tests read */
int launches, fail_next, sticky_next_sync, sticky, calls_after;
unsigned last_grid, last_block, phase0_grid; /* phase0_grid: the last tk_phase0's */
uint64_t last_args[64];
size_t last_args_bytes;
int set_device_calls, module_loads, module_unloads, allocs, frees, live_allocs;
char order[8192];        /* synchronizing calls: "create(2) record(E,S) wait(S,E) destroy(E) sync(S)" */
char completed[16384];   /* queued work as it completes: "h2d(N) d2h(N) d2d(N) fill(N) launch(NAME) event(E)" */
char last_options[1024]; /* hiprtc's options, space-separated */
char last_kernel[64];
/* launches as they complete: "NAME:GRID:BLOCK " */
char launch_log[8192];
/* What a compiled function allows (hipFuncGetAttribute: HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
 * the largest work-group its code object was built for, which can be less than the device's 1024, and
 * _SHARED_SIZE_BYTES, its static LDS);
 * a launch of a larger block, or of a function whose LDS exceeds the device's 65536 bytes
 * (hipDeviceAttributeMaxSharedMemoryPerBlock), fails and is counted in oversized, as the runtime
 * refuses it. */
int func_max_threads = 1024, func_shared_bytes, oversized;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void add(char *buf, size_t cap, const char *w) {
    size_t n = strlen(buf);
    if (n + strlen(w) + 2 < cap) snprintf(buf + n, cap - n, "%s ", w);
}
#define NOTE(...)                                     \
    do {                                              \
        char w_[160];                                 \
        snprintf(w_, sizeof w_, __VA_ARGS__);         \
        add(order, sizeof order, w_);                 \
    } while (0)
#define ST                   \
    if (sticky) {            \
        calls_after++;       \
        return 700;          \
    }

/* ------------------------------------------------------------ the devices */
static _Thread_local int current;

hipError_t hipInit(unsigned f) {
    (void)f;
    return env_int("FAKE_HIP_COUNT", 1) > 0 ? 0 : 100;
}
hipError_t hipRuntimeGetVersion(int *v) { *v = env_int("FAKE_HIP_RUNTIME", 50221153); return 0; }
hipError_t hipGetDeviceCount(int *n) { ST *n = env_int("FAKE_HIP_COUNT", 1); return 0; }
hipError_t hipGetDevice(int *d) { ST *d = current; return 0; }
hipError_t hipSetDevice(int d) {
    ST if (d < 0 || d >= env_int("FAKE_HIP_COUNT", 1)) return 101; /* hipErrorInvalidDevice */
    current = d;
    set_device_calls++;
    return 0;
}
hipError_t hipDeviceGetAttribute(int *v, int attr, int d) {
    ST switch (attr) {
    case 87: *v = env_int("FAKE_HIP_WARP", 64); return 0;
    case 63: *v = 4; return 0;     /* compute units */
    case 56: *v = 1024; return 0;  /* threads a block */
    case 74: *v = 65536; return 0; /* shared memory (LDS) a block */
    case 57: *v = 2048; return 0;  /* threads per compute unit */
    default: return 1;
    }
}
/* ROCm 5's hipDeviceProp_t: name at 0, gcnArchName at 396 (792 bytes) */
hipError_t hipGetDeviceProperties(void *prop, int d) {
    ST const char *arch = getenv("FAKE_HIP_ARCH");
    memset(prop, 0, 792);
    snprintf(prop, 256, "Fake AMD GPU %d", d);
    snprintf((char *)prop + 396, 256, "%s", arch && *arch ? arch : "gfx90a:sramecc+:xnack-");
    return 0;
}
const char *hipGetErrorName(hipError_t r) { return r == 700 ? "hipErrorIllegalAddress" : r == 100 ? "hipErrorNoDevice" : "hipErrorFake"; }
const char *hipGetErrorString(hipError_t r) { return r == 700 ? "an illegal memory access (fake)" : "fake error"; }

/* ------------------------------------------------------------ the memory */
typedef struct alloc { char *p; size_t n; int device; struct alloc *next; } alloc;
static alloc *allocs_live;

static alloc *find(const void *p) {
    for (alloc *a = allocs_live; a; a = a->next)
        if ((const char *)p >= a->p && (const char *)p < a->p + a->n) return a;
    return NULL;
}

/* -------------------------------------------------------------- streams */
enum { OP_COPY, OP_FILL, OP_LAUNCH, OP_EVENT, OP_WAIT };
typedef struct op {
    int kind;
    char *dst;
    const char *src;
    size_t n, width;
    unsigned char value[4];
    int copy_kind;
    struct event *ev;
    unsigned grid, block;
    uint64_t *args;
    size_t args_bytes;
    char name[64];
    struct op *next;
} op;
typedef struct graph graph;
typedef struct stream { op *head, *tail; int id; graph *cap; } stream;
struct graph { stream ops; };
int capture_mode = -1, capture_misuse, graphs_live, execs_live, graph_launches;
/* events stay on a list after hipEventDestroy (queued work may still name them): reachable, not leaked */
typedef struct event { stream *s; int id; int recorded, done; long long t; struct event *all; } event;
static event *all_events;
/* The device's clock: a launch takes FAKE_HIP_KERNEL_NS (250000) of it, the
 * rest nothing; an event completing reads it (hipEventElapsedTime). */
static long long device_clock;
static stream null_stream;
static int next_stream = 1, next_event = 0x1000;

static stream *S(void *s) { return s ? (stream *)s : &null_stream; }
static void push(stream *s, op *o) {
    if (s->cap) s = &s->cap->ops; /* captured: kept in the graph, not run */
    o->next = NULL;
    if (s->tail) s->tail->next = o;
    else s->head = o;
    s->tail = o;
}
static void drain(stream *s);
static void run(op *o) {
    char w[96];
    switch (o->kind) {
    case OP_COPY:
        memmove(o->dst, o->src, o->n);
        snprintf(w, sizeof w, "%s(%zu)", o->copy_kind == 1 ? "h2d" : o->copy_kind == 2 ? "d2h" : "d2d", o->n);
        break;
    case OP_FILL:
        for (size_t i = 0; i < o->n; i++) memcpy(o->dst + i * o->width, o->value, o->width);
        snprintf(w, sizeof w, "fill(%zu)", o->n * o->width);
        break;
    case OP_LAUNCH:
        launches++;
        last_grid = o->grid;
        last_block = o->block;
        last_args_bytes = o->args_bytes;
        memcpy(last_args, o->args, o->args_bytes < sizeof last_args ? o->args_bytes : sizeof last_args);
        snprintf(last_kernel, sizeof last_kernel, "%s", o->name);
        if (!strcmp(o->name, "tk_phase0")) phase0_grid = o->grid;
        snprintf(w, sizeof w, "%.40s:%u:%u", o->name, o->grid, o->block);
        add(launch_log, sizeof launch_log, w);
        if (fail_next && o->args_bytes >= 24) {
            alloc *rec = find((void *)(uintptr_t)o->args[0]);
            if (rec && rec->n >= 32) { /* {i32 failed, i32 site, u64 prog, i64 a, i64 b}: the first failure wins */
                int32_t *r = (int32_t *)rec->p;
                if (!r[0]) {
                    int64_t ab[2] = {10, 10};
                    r[0] = 1;
                    r[1] = 0;
                    memcpy(rec->p + 8, &o->args[2], 8);
                    memcpy(rec->p + 16, ab, 16);
                }
            }
            fail_next = 0;
        }
        free(o->args);
        device_clock += env_int("FAKE_HIP_KERNEL_NS", 250000);
        snprintf(w, sizeof w, "launch(%s)", o->name);
        break;
    case OP_EVENT:
        o->ev->done = 1;
        o->ev->t = device_clock;
        snprintf(w, sizeof w, "event(%x)", o->ev->id);
        break;
    default: /* OP_WAIT: what the event's stream queued before it completes first */
        if (!o->ev->done) drain(o->ev->s);
        return;
    }
    add(completed, sizeof completed, w);
}
static void drain(stream *s) {
    while (s->head) {
        op *o = s->head;
        s->head = o->next;
        if (!s->head) s->tail = NULL;
        run(o);
        free(o);
    }
}
static op *new_op(int kind) { op *o = calloc(1, sizeof *o); o->kind = kind; return o; }

hipError_t hipStreamCreate(void **s) {
    ST stream *x = calloc(1, sizeof *x);
    x->id = next_stream++;
    *s = x;
    return 0;
}
hipError_t hipStreamSynchronize(void *s) {
    ST if (S(s)->cap) return capture_misuse++, 900; /* hipErrorStreamCaptureUnsupported */
    pthread_mutex_lock(&lock);
    drain(S(s));
    NOTE("sync(%d)", S(s)->id);
    pthread_mutex_unlock(&lock);
    if (sticky_next_sync) {
        sticky_next_sync = 0;
        sticky = 1;
        return 700;
    }
    return 0;
}
hipError_t hipEventCreateWithFlags(void **e, unsigned f) {
    ST event *x = calloc(1, sizeof *x);
    pthread_mutex_lock(&lock);
    x->all = all_events;
    all_events = x;
    x->id = next_event++;
    pthread_mutex_unlock(&lock);
    *e = x;
    NOTE("create(%u)", f);
    return 0;
}
hipError_t hipEventRecord(void *e, void *s) {
    ST if (S(s)->cap) return capture_misuse++, 900;
    event *x = e;
    op *o = new_op(OP_EVENT);
    o->ev = x;
    x->s = S(s);
    x->recorded = 1;
    x->done = 0;
    pthread_mutex_lock(&lock);
    push(S(s), o);
    pthread_mutex_unlock(&lock);
    NOTE("record(%x,%d)", x->id, S(s)->id);
    return 0;
}
hipError_t hipStreamWaitEvent(void *s, void *e, unsigned f) {
    ST if (S(s)->cap) return capture_misuse++, 900;
    event *x = e;
    if (!x->recorded) return 0;
    op *o = new_op(OP_WAIT);
    o->ev = x;
    pthread_mutex_lock(&lock);
    push(S(s), o);
    pthread_mutex_unlock(&lock);
    NOTE("wait(%d,%x)", S(s)->id, x->id);
    return 0;
}
hipError_t hipStreamDestroy(void *s) { ST NOTE("sdestroy(%d)", S(s)->id); return 0; } /* its ops still run */
#ifndef FAKE_HIP_WITHOUT_EVENT_QUERY /* built without it: a runtime that lacks it (test_hip_fake.py) */
hipError_t hipEventQuery(void *e) {
    ST event *x = e;
    return !x->recorded || x->done ? 0 : 600; /* hipErrorNotReady */
}
#endif
hipError_t hipEventSynchronize(void *e) {
    ST event *x = e;
    pthread_mutex_lock(&lock);
    if (x->recorded && !x->done) drain(x->s);
    pthread_mutex_unlock(&lock);
    NOTE("esync(%x)", x->id);
    return 0;
}
hipError_t hipEventElapsedTime(float *ms, void *a, void *b) {
    ST event *x = a, *y = b;
    if (!x->done || !y->done) return 600; /* hipErrorNotReady */
    *ms = (float)((double)(y->t - x->t) / 1e6);
    return 0;
}
/* A waiting stream may still hold the event: it is freed with the process. */
hipError_t hipEventDestroy(void *e) { ST NOTE("destroy(%x)", ((event *)e)->id); return 0; }

/* -------------------------------------------------------- memory, copies */
static void drain_all(void);
static stream *streams[64];
static int nstreams;
hipError_t hipMalloc(void **p, size_t n) {
    ST alloc *a = calloc(1, sizeof *a);
    a->p = calloc(1, n ? n : 1);
    a->n = n ? n : 1;
    a->device = current;
    pthread_mutex_lock(&lock);
    a->next = allocs_live;
    allocs_live = a;
    allocs++;
    live_allocs++;
    pthread_mutex_unlock(&lock);
    *p = a->p;
    return 0;
}
hipError_t hipFree(void *p) {
    ST if (!p) return 0;
    pthread_mutex_lock(&lock);
    drain_all();
    for (alloc **q = &allocs_live; *q; q = &(*q)->next)
        if ((*q)->p == p) {
            alloc *a = *q;
            *q = a->next;
            free(a->p);
            free(a);
            frees++;
            live_allocs--;
            pthread_mutex_unlock(&lock);
            return 0;
        }
    pthread_mutex_unlock(&lock);
    return 1; /* not an allocation: hipErrorInvalidValue */
}
/* every stream Tack made: hipFree waits for them all */
static void drain_all(void) {
    drain(&null_stream);
    for (int i = 0; i < nstreams; i++) drain(streams[i]);
}
hipError_t hipMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *s) {
    ST if (S(s)->cap && kind != 3) return capture_misuse++, 900;
    const char *dev = kind == 1 ? dst : src;
    alloc *a = find(dev);
    if (!a || (const char *)dev + n > a->p + a->n || (kind == 3 && !find(dst))) return 1;
    if (s && nstreams < 64) {
        int known = 0;
        for (int i = 0; i < nstreams; i++) known |= streams[i] == s;
        if (!known) streams[nstreams++] = s;
    }
    op *o = new_op(OP_COPY);
    o->dst = dst;
    o->src = src;
    o->n = n;
    o->copy_kind = kind;
    pthread_mutex_lock(&lock);
    push(S(s), o);
    pthread_mutex_unlock(&lock);
    return 0;
}
static hipError_t fill(void *dst, const void *v, size_t width, size_t n, void *s) {
    ST alloc *a = find(dst);
    if (!a || (char *)dst + n * width > a->p + a->n) return 1;
    op *o = new_op(OP_FILL);
    o->dst = dst;
    o->n = n;
    o->width = width;
    memcpy(o->value, v, width);
    pthread_mutex_lock(&lock);
    push(S(s), o);
    pthread_mutex_unlock(&lock);
    return 0;
}
hipError_t hipMemsetD8Async(void *d, unsigned char v, size_t n, void *s) { return fill(d, &v, 1, n, s); }
hipError_t hipMemsetD16Async(void *d, unsigned short v, size_t n, void *s) { return fill(d, &v, 2, n, s); }
hipError_t hipMemsetD32Async(void *d, int v, size_t n, void *s) { return fill(d, &v, 4, n, s); }

/* ROCm 5: {memoryType (host 0, device 1), device, devicePointer, hostPointer, ...};
 * ROCm 6: unregistered 0, host 1, device 2, and success for unknown memory */
hipError_t hipPointerGetAttributes(void *attr, const void *p) {
    ST int rocm6 = env_int("FAKE_HIP_RUNTIME", 50221153) >= 60000000;
    int *t = attr;
    pthread_mutex_lock(&lock);
    alloc *a = find(p);
    pthread_mutex_unlock(&lock);
    memset(attr, 0, 32);
    if (!a) {
        if (!rocm6) return 1; /* hipErrorInvalidValue */
        t[0] = 0;
        return 0;
    }
    t[0] = rocm6 ? 2 : 1;
    t[1] = a->device;
    memcpy((char *)attr + 8, &p, sizeof p);
    return 0;
}

/* --------------------------------------------------------------- modules */
#define MAGIC "\177ELFfake-hsaco\n"
/* live modules stay listed (a lost device's are never unloaded: the process frees them) */
typedef struct module { char *text; size_t len; struct module *next; } module;
static module *modules_live;
/* A real code object (from the real hiprtc) is an AMDGPU ELF: its size is
 * where the section headers end, and its e_flags name the architecture it
 * was built for (EF_AMDGPU_MACH, the low byte), which must be the device's,
 * as the runtime requires (else hipErrorNoBinaryForGpu). */
int real_loads;
static int mach_of(const char *arch) {
    static const struct { const char *name; int mach; } t[] = {
        {"gfx908", 0x30}, {"gfx90a", 0x3f}, {"gfx1030", 0x36}, {"gfx1100", 0x41}};
    size_t n = strcspn(arch, ":");
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strlen(t[i].name) == n && !strncmp(t[i].name, arch, n)) return t[i].mach;
    return -1;
}
hipError_t hipModuleLoadData(void **m, const void *image) {
    ST const unsigned char *b = image;
    module *x = malloc(sizeof *x);
    if (!memcmp(image, MAGIC, strlen(MAGIC))) {
        x->text = strdup((const char *)image + strlen(MAGIC));
        x->len = strlen(x->text);
    } else if (!memcmp(image, "\177ELF", 4)) {
        uint16_t machine, shentsize, shnum;
        uint32_t flags;
        uint64_t shoff;
        const char *arch = getenv("FAKE_HIP_ARCH");
        memcpy(&machine, b + 18, 2);
        memcpy(&flags, b + 48, 4);
        memcpy(&shoff, b + 0x28, 8);
        memcpy(&shentsize, b + 0x3A, 2);
        memcpy(&shnum, b + 0x3C, 2);
        int want = mach_of(arch && *arch ? arch : "gfx90a");
        if (machine != 224 || (want >= 0 && (int)(flags & 0xff) != want)) {
            free(x);
            return 209; /* hipErrorNoBinaryForGpu */
        }
        x->len = shoff + (size_t)shentsize * shnum;
        x->text = malloc(x->len + 1);
        memcpy(x->text, image, x->len);
        x->text[x->len] = 0;
        real_loads++;
    } else {
        free(x);
        return 200; /* hipErrorInvalidImage */
    }
    module_loads++;
    pthread_mutex_lock(&lock);
    x->next = modules_live;
    modules_live = x;
    pthread_mutex_unlock(&lock);
    *m = x;
    return 0;
}
hipError_t hipModuleUnload(void *m) {
    ST pthread_mutex_lock(&lock);
    for (module **q = &modules_live; *q; q = &(*q)->next)
        if (*q == m) {
            *q = ((module *)m)->next;
            break;
        }
    pthread_mutex_unlock(&lock);
    free(((module *)m)->text);
    free(m);
    module_unloads++;
    return 0;
}
typedef struct function { char name[64]; } function;
static function functions[256];
static int nfunctions;
hipError_t hipModuleGetFunction(void **f, void *m, const char *name) {
    ST module *mod = m;
    if (!memmem(mod->text, mod->len, name, strlen(name) + 1) && !strstr(mod->text, name)) return 500; /* hipErrorNotFound */
    function *fn = &functions[nfunctions++ % 256];
    snprintf(fn->name, sizeof fn->name, "%s", name);
    *f = fn;
    return 0;
}
hipError_t hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *f, int block, size_t sh) {
    ST *n = 1536 / block; /* six resident 256-thread blocks per compute unit */
    return 0;
}
hipError_t hipFuncGetAttribute(int *v, int attr, void *f) {
    ST if (!f) return 98; /* hipErrorInvalidDeviceFunction */
    if (attr == 0) *v = func_max_threads;
    else if (attr == 1) *v = func_shared_bytes;
    else return 1;
    return 0;
}
hipError_t hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                 unsigned sh, void *s, void **params, void **extra) {
    ST if (bx > (unsigned)func_max_threads || func_shared_bytes > 65536) /* more than the function holds */
        return oversized++, 1;                                             /* hipErrorInvalidValue */
    const void *buf = NULL;
    size_t bytes = 0;
    for (int i = 0; extra && extra[i] != (void *)0x03; i += 2) {
        if (extra[i] == (void *)0x01) buf = extra[i + 1];
        if (extra[i] == (void *)0x02) bytes = *(size_t *)extra[i + 1];
    }
    if (!buf || !bytes || params || gy != 1 || gz != 1 || by != 1 || bz != 1 || !gx || !bx || bx > 1024) return 1;
    if (getenv("FAKE_HIP_FAULT")) {
        fprintf(stderr, "Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0x7f0000000000. "
                        "Reason: Page not present or supervisor privilege.\n");
        abort();
    }
    op *o = new_op(OP_LAUNCH);
    o->grid = gx;
    o->block = bx;
    o->args = malloc(bytes);
    memcpy(o->args, buf, bytes); /* HIP copies the arguments at the call */
    o->args_bytes = bytes;
    snprintf(o->name, sizeof o->name, "%s", ((function *)f)->name);
    pthread_mutex_lock(&lock);
    push(S(s), o);
    pthread_mutex_unlock(&lock);
    return 0;
}

/* --------------------------------------------------------------- graphs */
static op *dup_op(const op *o) {
    op *c = malloc(sizeof *c);
    *c = *o;
    c->next = NULL;
    if (o->args) {
        c->args = malloc(o->args_bytes);
        memcpy(c->args, o->args, o->args_bytes);
    }
    return c;
}
static void free_ops(stream *q) {
    for (op *o = q->head, *n; o; o = n) {
        n = o->next;
        free(o->args);
        free(o);
    }
}
hipError_t hipStreamBeginCapture(void *s, int mode) {
    ST if (!s || S(s)->cap) return 1;
    capture_mode = mode;
    S(s)->cap = calloc(1, sizeof(graph));
    NOTE("begin(%d)", S(s)->id);
    return 0;
}
hipError_t hipStreamEndCapture(void *s, void **g) {
    ST if (!s || !S(s)->cap) return 1;
    *g = S(s)->cap;
    S(s)->cap = NULL;
    graphs_live++;
    NOTE("end(%d)", S(s)->id);
    return 0;
}
hipError_t hipGraphInstantiate(void **e, void *g, void *node, char *log, size_t n) {
    ST graph *x = calloc(1, sizeof *x);
    for (op *o = ((graph *)g)->ops.head; o; o = o->next) push(&x->ops, dup_op(o));
    *e = x;
    execs_live++;
    return 0;
}
hipError_t hipGraphDestroy(void *g) { free_ops(&((graph *)g)->ops); free(g); graphs_live--; return 0; }
hipError_t hipGraphExecDestroy(void *e) { free_ops(&((graph *)e)->ops); free(e); execs_live--; return 0; }
#ifndef FAKE_HIP_WITHOUT_GRAPH_LAUNCH /* likewise */
hipError_t hipGraphLaunch(void *e, void *s) {
    ST if (S(s)->cap) return capture_misuse++, 900;
    pthread_mutex_lock(&lock);
    for (op *o = ((graph *)e)->ops.head; o; o = o->next) push(S(s), dup_op(o));
    graph_launches++;
    pthread_mutex_unlock(&lock);
    NOTE("glaunch(%d)", S(s)->id);
    return 0;
}
#endif

/* ---------------------------------------------------------------- hiprtc */
typedef struct rtc { char *src, *code; size_t size; char log[256]; } rtc;
int hiprtcVersion(int *major, int *minor) { *major = 5; *minor = 2; return 0; }
const char *hiprtcGetErrorString(int r) { return r ? "HIPRTC_ERROR_COMPILATION (fake)" : "HIPRTC_SUCCESS"; }
int hiprtcCreateProgram(void **p, const char *src, const char *name, int n, const char **h, const char **hn) {
    rtc *x = calloc(1, sizeof *x);
    x->src = strdup(src);
    *p = x;
    return 0;
}
int hiprtcCompileProgram(void *p, int n, const char **opts) {
    rtc *x = p;
    last_options[0] = 0;
    for (int i = 0; i < n; i++) add(last_options, sizeof last_options, opts[i]);
    if (strstr(x->src, "#error")) {
        snprintf(x->log, sizeof x->log, "fake.hip:1: error: #error in the source");
        return 6;
    }
    x->size = strlen(MAGIC) + strlen(x->src) + 1;
    x->code = malloc(x->size);
    memcpy(x->code, MAGIC, strlen(MAGIC));
    memcpy(x->code + strlen(MAGIC), x->src, strlen(x->src) + 1);
    return 0;
}
int hiprtcGetCodeSize(void *p, size_t *n) { *n = ((rtc *)p)->size; return 0; }
int hiprtcGetCode(void *p, char *out) { memcpy(out, ((rtc *)p)->code, ((rtc *)p)->size); return 0; }
int hiprtcGetProgramLogSize(void *p, size_t *n) { *n = strlen(((rtc *)p)->log) + 1; return 0; }
int hiprtcGetProgramLog(void *p, char *out) { strcpy(out, ((rtc *)p)->log); return 0; }
int hiprtcDestroyProgram(void **p) {
    rtc *x = *p;
    free(x->src);
    free(x->code);
    free(x);
    *p = NULL;
    return 0;
}
