/*
 * fake_level_zero.c -- a fake Level Zero loader (libze_loader.so.1) for
 * testing the Level Zero backend's host side on machines without an Intel
 * GPU.  test_level_zero_fake.c and test_level_zero_streams.c build it with
 * the C compiler and run themselves with it first on LD_LIBRARY_PATH
 * (level_zero_fake.h).
 *
 * One driver with one device "Fake Level Zero GPU" (FAKE_ZE_DEVICES=2: two);
 * device memory is host memory, known by address, size and device, so
 * zeMemGetAllocProperties answers from the live allocations.  Every call is
 * logged by name (fake_calls), and what the specification forbids is
 * collected in fake_misuse: a structure with the wrong stype, a call after
 * zeContextDestroy, appending to a closed list, ...
 *
 * Work is really queued.  An immediate list and a command queue are each an
 * engine: a FIFO of commands that run only when the host waits --
 * zeCommandListHostSynchronize and zeCommandQueueSynchronize run their
 * engine to the end, zeEventHostSynchronize runs the engine that will
 * signal the event up to that signal -- or when a command of another
 * engine waits for an event this one signals (it runs up to the signal,
 * and no further).  So work that Tack did not order is seen unordered: a
 * copy on one list does not see a fill on another unless a wait on an
 * event orders them.  A wait for an event that nothing will signal is a
 * deadlock on a GPU; here it is misuse, and the wait returns an error.  A
 * regular list records its commands; zeCommandQueueExecuteCommandLists
 * queues a copy of them on the queue's engine.  Copies move the bytes, fills
 * read their pattern when they run (the specification does not say when),
 * kernels do not run: they record their arguments and group counts at the
 * append (fake_launch_*), and when they run they advance the device's clock
 * by FAKE_ZE_KERNEL_TICKS (1000) and, when fail_next was set at the append,
 * write a failed check into the error record their first argument points at.
 * What ran is logged in order (fake_ran: "copy(N) fill(N) launch(NAME)
 * ts signal(I) wait reset").
 *
 * Events: pools of host-visible events, with kernel timestamps when the pool
 * asks.  Misuse: an event signaled again before it is reset, reset or
 * destroyed (or its pool destroyed) while a queued command still names it;
 * a list destroyed, reset or executed again while the device still has its
 * work; a host wait on a list or queue that never finishes.  Timestamps:
 * the device's clock counts ticks of 2 ns (timerResolution 2 in the 1.0
 * properties, 500000000 cycles/s in the 1.2 ones), 32 bits valid, starting
 * 5000 ticks before it wraps, so a time taken across the wrap is only right
 * when the valid bits are honoured.
 *
 * FAKE_ZE_FP64=0: a device without fp64 (nor correctly rounded f32
 * division); FAKE_ZE_NO_IMMEDIATE: no immediate lists; FAKE_ZE_NO_LISTS: no
 * command lists at all; FAKE_ZE_KERNEL_TICKS: a kernel's time.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint32_t R;
#define OK 0u
#define NOT_READY 1u
#define DEVICE_LOST 0x70000001u
#define UNINIT 0x78000001u
#define UNSUP 0x78000003u
#define BADARG 0x78000004u

static char calls[1 << 20];
static size_t clen;
static int inited, ctx_dead;
static char misuse[4096];
static char ran[1 << 16];

static void LOG(const char *n) {
    size_t l = strlen(n);
    if (clen + l + 2 < sizeof calls) {
        memcpy(calls + clen, n, l);
        clen += l;
        calls[clen++] = '\n';
        calls[clen] = 0;
    }
}
static void BAD(const char *what) {
    if (strlen(misuse) + strlen(what) + 3 < sizeof misuse) {
        strcat(misuse, what);
        strcat(misuse, "; ");
    }
}
static void RAN(const char *what) {
    size_t n = strlen(ran);
    if (n + strlen(what) + 2 < sizeof ran) snprintf(ran + n, sizeof ran - n, "%s ", what);
}
#define ENTER(st, want)                                          \
    do {                                                         \
        LOG(__func__);                                           \
        if (!inited) {                                           \
            BAD(__func__);                                       \
            return UNINIT;                                       \
        }                                                        \
        if (ctx_dead) BAD("a call after zeContextDestroy");      \
        if ((st) != (want)) {                                    \
            BAD("a wrong stype");                                \
            return BADARG;                                       \
        }                                                        \
    } while (0)

const char *fake_calls(void) { return calls; }
void fake_calls_clear(void) { clen = 0; calls[0] = 0; }
const char *fake_misuse(void) { return misuse; }
const char *fake_ran(void) { return ran; }
void fake_ran_clear(void) { ran[0] = 0; }
int fail_next, refuse_modules;

static int env_int(const char *n, int dflt) {
    const char *e = getenv(n);
    return e && *e ? atoi(e) : dflt;
}

/* ------------------------------------------------------------- devices */
static int drv, devs[2];
static int ndevs(void) { return env_int("FAKE_ZE_DEVICES", 1) >= 2 ? 2 : 1; }
static int dev_index(const void *h) { return h == &devs[1] ? 1 : 0; }

R zeInit(uint32_t f) {
    (void)f;
    LOG(__func__);
    inited = 1;
    return OK;
}
R zeDriverGet(uint32_t *n, void **d) {
    ENTER(0, 0);
    if (d && *n) d[0] = &drv;
    *n = 1;
    return OK;
}
R zeDeviceGet(void *h, uint32_t *n, void **d) {
    ENTER(h == &drv, 1);
    uint32_t k = (uint32_t)ndevs();
    if (d)
        for (uint32_t i = 0; i < *n && i < k; i++) d[i] = &devs[i];
    if (!d || *n > k) *n = k;
    return OK;
}
#define TICK_BITS 32
#define TICK_MASK 0xffffffffull
uint64_t fake_clock = (1ull << 32) - 5000; /* wraps 5000 ticks in; tests may set it */
R zeDeviceGetProperties(void *h, uint32_t *p) {
    LOG(__func__);
    if (!inited) return UNINIT;
    if (p[0] != 0x3u && p[0] != 0x20006u) {
        BAD("a wrong stype");
        return BADARG;
    }
    uint32_t *u = (uint32_t *)((char *)p + 16);
    u[0] = 1;
    u[1] = 0x8086;
    u[2] = 0xbd5;
    uint32_t *eu = (uint32_t *)((char *)p + 56);
    eu[0] = 8;
    eu[1] = 16;
    eu[2] = 2;
    eu[3] = 2;
    eu[4] = 1;
    *(uint64_t *)((char *)p + 80) = p[0] == 0x3u ? 2u : 500000000u; /* ns per tick, or ticks per second */
    *(uint32_t *)((char *)p + 88) = TICK_BITS;
    *(uint32_t *)((char *)p + 92) = TICK_BITS;
    if (dev_index(h)) snprintf((char *)p + 112, 256, "Fake Level Zero GPU 1");
    else snprintf((char *)p + 112, 256, "Fake Level Zero GPU");
    return OK;
}
R zeDeviceGetComputeProperties(void *h, uint32_t *p) {
    (void)h;
    ENTER(p[0], 0x4u);
    *(uint32_t *)((char *)p + 16) = 512;   /* maxTotalGroupSize */
    *(uint32_t *)((char *)p + 20) = 512;   /* maxGroupSizeX */
    *(uint32_t *)((char *)p + 44) = 65536; /* maxSharedLocalMemory */
    return OK;
}
/* fp32flags: ROUNDED_DIVIDE_SQRT with fp64, as Intel's */
R zeDeviceGetModuleProperties(void *h, uint32_t *p) {
    (void)h;
    ENTER(p[0], 0x5u);
    const char *e = getenv("FAKE_ZE_FP64");
    *(uint32_t *)((char *)p + 20) = 1u | (e && *e == '0' ? 0u : 2u);
    *(uint32_t *)((char *)p + 28) = 0x3fu | (e && *e == '0' ? 0u : 0x40u);
    return OK;
}

/* ------------------------------------------------------------ contexts */
typedef struct { int alive; } ctx_t;
static ctx_t ctxs[16];
static int nctx, live_ctx;
void *fake_ctx_alloc, *fake_ctx_module, *fake_ctx_list;

R zeContextCreate(void *d, const uint32_t *desc, void **out) {
    (void)d;
    ENTER(desc[0], 0xdu);
    if (nctx == 16) return 0x70000002u;
    ctx_t *c = &ctxs[nctx++];
    c->alive = 1;
    live_ctx++;
    *out = c;
    return OK;
}
R zeContextDestroy(ctx_t *c) {
    ENTER(0, 0);
    if (!c->alive) BAD("a context destroyed twice");
    c->alive = 0;
    if (--live_ctx == 0) ctx_dead = 1;
    return OK;
}
R zeContextGetStatus(ctx_t *c) {
    ENTER(0, 0);
    return c->alive ? OK : 0x70000001u;
}

/* -------------------------------------------------------------- memory */
static struct {
    char *p;
    size_t n;
    int dev, host;
} allocs[4096];
static int nallocs;

static R alloc(ctx_t *c, size_t n, size_t align, int dev, int host, void **out) {
    if (!c->alive) BAD("an allocation in a destroyed context");
    fake_ctx_alloc = c;
    if (nallocs == 4096 || n == 0) return 0x70000003u;
    size_t a = align < 64 ? 64 : align;
    char *p = aligned_alloc(a, (n + a - 1) / a * a);
    memset(p, 0, n);
    allocs[nallocs].p = p;
    allocs[nallocs].n = n;
    allocs[nallocs].dev = dev;
    allocs[nallocs].host = host;
    nallocs++;
    *out = p;
    return OK;
}
R zeMemAllocDevice(ctx_t *c, const uint32_t *desc, size_t n, size_t align, void *d, void **out) {
    ENTER(desc[0], 0x15u);
    return alloc(c, n, align, dev_index(d), 0, out);
}
R zeMemAllocHost(ctx_t *c, const uint32_t *desc, size_t n, size_t align, void **out) {
    ENTER(desc[0], 0x16u);
    return alloc(c, n, align, 0, 1, out);
}
R zeMemFree(ctx_t *c, void *p) {
    (void)c;
    ENTER(0, 0);
    for (int i = 0; i < nallocs; i++)
        if (allocs[i].p == p) {
            free(p);
            allocs[i] = allocs[--nallocs];
            return OK;
        }
    BAD("zeMemFree of an unknown address");
    return BADARG;
}
R zeMemGetAllocProperties(ctx_t *c, const void *p, uint32_t *props, void **d) {
    (void)c;
    ENTER(props[0], 0x17u);
    for (int i = 0; i < nallocs; i++)
        if ((const char *)p >= allocs[i].p && (const char *)p < allocs[i].p + allocs[i].n) {
            *(uint32_t *)((char *)props + 16) = allocs[i].host ? 1 : 2;
            *(uint64_t *)((char *)props + 24) = (uint64_t)i + 1;
            if (d) *d = allocs[i].host ? NULL : &devs[allocs[i].dev];
            return OK;
        }
    *(uint32_t *)((char *)props + 16) = 0;
    if (d) *d = NULL;
    return OK;
}
R zeMemGetAddressRange(ctx_t *c, const void *p, void **base, size_t *n) {
    (void)c;
    ENTER(0, 0);
    for (int i = 0; i < nallocs; i++)
        if ((const char *)p >= allocs[i].p && (const char *)p < allocs[i].p + allocs[i].n) {
            if (base) *base = allocs[i].p;
            if (n) *n = allocs[i].n;
            return OK;
        }
    return 0x78000004u;
}

/* -------------------------------------------------------------- events */
typedef struct pool_t pool_t;
typedef struct engine engine;
typedef struct {
    pool_t *pool;
    int alive, signaled;
    int pending_signals, pending_refs; /* queued commands that signal it, that wait for or reset it */
    engine *signaler;                  /* the engine holding its pending signal */
    uint64_t ks, ke;                   /* kernel timestamps */
    int index;
} ev_t;
struct pool_t {
    uint32_t count, flags;
    int live;
    ev_t *evs;
};

R zeEventPoolCreate(ctx_t *c, const uint32_t *desc, uint32_t ndev, void **dv, pool_t **out) {
    (void)c;
    (void)dv;
    ENTER(desc[0], 0x10u);
    uint32_t count = desc[5];
    if (count == 0 || ndev > 2) return BADARG;
    pool_t *p = calloc(1, sizeof *p);
    p->count = count;
    p->flags = desc[4];
    if (!(p->flags & 1u)) BAD("an event pool the host cannot see, waited for on the host");
    p->evs = calloc(count, sizeof *p->evs);
    *out = p;
    return OK;
}
R zeEventPoolDestroy(pool_t *p) {
    ENTER(0, 0);
    if (p->live) BAD("zeEventPoolDestroy with live events");
    free(p->evs);
    free(p);
    return OK;
}
R zeEventCreate(pool_t *p, const uint32_t *desc, ev_t **out) {
    ENTER(desc[0], 0x11u);
    uint32_t i = desc[4];
    if (i >= p->count) return BADARG;
    if (p->evs[i].alive) {
        BAD("zeEventCreate of an index in use");
        return BADARG;
    }
    ev_t *e = &p->evs[i];
    memset(e, 0, sizeof *e);
    e->pool = p;
    e->alive = 1;
    e->index = (int)i;
    p->live++;
    *out = e;
    return OK;
}
R zeEventDestroy(ev_t *e) {
    ENTER(0, 0);
    if (e->pending_signals || e->pending_refs) BAD("zeEventDestroy of an event queued work still names");
    e->alive = 0;
    e->pool->live--;
    return OK;
}

/* ------------------------------------------------------------ commands */
enum { C_COPY, C_FILL, C_LAUNCH, C_BARRIER, C_TS, C_RESET, C_END };
typedef struct list_t list_t;
typedef struct cmd {
    int kind;
    char *dst;
    const char *src;
    size_t n, ps;
    ev_t *signal, *reset;
    uint32_t nwait;
    ev_t *wait[8];
    char name[32];
    uint64_t rec, prog; /* a launch: its error record's address and program id */
    int fail;
    list_t *of; /* C_END: the executed list it ends */
    struct cmd *next;
} cmd;
struct engine {
    cmd *head, *tail;
    int running;
};
struct list_t {
    int imm, closed, executing;
    engine e;          /* an immediate list's work */
    cmd *rec, *rectail; /* a regular list's commands */
};
typedef struct {
    engine e;
} queue_t;

static void enqueue(engine *e, cmd *c) {
    cmd *k = malloc(sizeof *k);
    *k = *c;
    k->next = NULL;
    if (k->signal) {
        k->signal->pending_signals++;
        k->signal->signaler = e;
    }
    if (k->reset) k->reset->pending_refs++;
    for (uint32_t i = 0; i < k->nwait; i++) k->wait[i]->pending_refs++;
    if (e->tail) e->tail->next = k;
    else e->head = k;
    e->tail = k;
}

static int run_one(engine *e);
/* Run e until ev is signaled (ev NULL: until e is empty); 0 on a deadlock. */
static int run_until(engine *e, ev_t *ev) {
    if (e->running) {
        BAD("a cycle of waits between lists (a deadlock on a GPU)");
        return 0;
    }
    e->running = 1;
    int ok = 1;
    while (ok && e->head && !(ev && ev->signaled)) ok = run_one(e);
    e->running = 0;
    return ok && (!ev || ev->signaled);
}
static int wait_for(ev_t *ev) {
    if (ev->signaled) return 1;
    if (!ev->pending_signals || !ev->signaler) {
        BAD("a wait for an event nothing will signal (a hang on a GPU)");
        return 0;
    }
    return run_until(ev->signaler, ev);
}
static void signal_event(ev_t *ev, uint64_t start) {
    char w[40];
    if (ev->signaled) BAD("an event signaled again before a reset");
    ev->signaled = 1;
    ev->ks = start & TICK_MASK;
    ev->ke = fake_clock & TICK_MASK;
    snprintf(w, sizeof w, "signal(%d)", ev->index);
    RAN(w);
}
static int run_one(engine *e) {
    cmd *c = e->head;
    for (uint32_t i = 0; i < c->nwait; i++)
        if (!wait_for(c->wait[i])) return 0;
    e->head = c->next;
    if (!e->head) e->tail = NULL;
    char w[64];
    uint64_t start = fake_clock;
    switch (c->kind) {
    case C_COPY:
        memmove(c->dst, c->src, c->n);
        fake_clock += 10;
        snprintf(w, sizeof w, "copy(%zu)", c->n);
        RAN(w);
        break;
    case C_FILL:
        for (size_t i = 0; i < c->n; i += c->ps) memcpy(c->dst + i, c->src, c->ps);
        fake_clock += 10;
        snprintf(w, sizeof w, "fill(%zu)", c->n);
        RAN(w);
        break;
    case C_LAUNCH:
        fake_clock += (uint64_t)env_int("FAKE_ZE_KERNEL_TICKS", 1000);
        if (c->fail) {
            char *rec = (char *)(uintptr_t)c->rec;
            int32_t failed = 0, one = 1, site = 0;
            int64_t ten = 10;
            memcpy(&failed, rec, 4);
            if (!failed) { /* the first failure wins */
                memcpy(rec, &one, 4);
                memcpy(rec + 4, &site, 4);
                memcpy(rec + 8, &c->prog, 8);
                memcpy(rec + 16, &ten, 8);
                memcpy(rec + 24, &ten, 8);
            }
        }
        snprintf(w, sizeof w, "launch(%s)", c->name);
        RAN(w);
        break;
    case C_TS:
        *(uint64_t *)(void *)c->dst = fake_clock & TICK_MASK;
        RAN("ts");
        break;
    case C_RESET:
        c->reset->signaled = 0;
        RAN("reset");
        break;
    case C_END:
        c->of->executing--;
        break;
    default: /* C_BARRIER: its waits, then its signal */
        if (c->nwait) RAN("wait");
        break;
    }
    if (c->signal) {
        signal_event(c->signal, start);
        c->signal->pending_signals--;
        if (!c->signal->pending_signals) c->signal->signaler = NULL;
    }
    if (c->reset) c->reset->pending_refs--;
    for (uint32_t i = 0; i < c->nwait; i++) c->wait[i]->pending_refs--;
    free(c);
    return 1;
}

/* --------------------------------------------------------------- lists */
R zeCommandListCreateImmediate(void *c, void *d, const uint32_t *desc, list_t **out) {
    (void)d;
    ENTER(desc[0], 0xeu);
    if (getenv("FAKE_ZE_NO_IMMEDIATE") || getenv("FAKE_ZE_NO_LISTS")) return UNSUP;
    list_t *l = calloc(1, sizeof *l);
    l->imm = 1;
    *out = l;
    fake_ctx_list = c;
    return OK;
}
R zeCommandQueueCreate(void *c, void *d, const uint32_t *desc, queue_t **out) {
    (void)c;
    (void)d;
    ENTER(desc[0], 0xeu);
    if (getenv("FAKE_ZE_NO_LISTS")) return UNSUP;
    *out = calloc(1, sizeof **out);
    return OK;
}
R zeCommandQueueDestroy(queue_t *q) {
    ENTER(0, 0);
    if (q->e.head) BAD("zeCommandQueueDestroy of a queue with unfinished work");
    free(q);
    return OK;
}
R zeCommandListCreate(void *c, void *d, const uint32_t *desc, list_t **out) {
    (void)d;
    ENTER(desc[0], 0xfu);
    *out = calloc(1, sizeof **out);
    fake_ctx_list = c;
    return OK;
}
static void drop_rec(list_t *l) {
    while (l->rec) {
        cmd *c = l->rec;
        l->rec = c->next;
        free(c);
    }
    l->rectail = NULL;
}
R zeCommandListDestroy(list_t *l) {
    ENTER(0, 0);
    if (l->imm && l->e.head) BAD("zeCommandListDestroy of a list with unfinished work");
    if (l->executing) BAD("zeCommandListDestroy of a list the device is running");
    drop_rec(l);
    free(l);
    return OK;
}
R zeCommandListClose(list_t *l) {
    ENTER(0, 0);
    if (l->imm || l->closed) BAD("close");
    l->closed = 1;
    return OK;
}
R zeCommandListReset(list_t *l) {
    ENTER(0, 0);
    if (l->executing) BAD("zeCommandListReset of a list the device is running");
    drop_rec(l);
    l->closed = 0;
    return OK;
}
R zeCommandQueueExecuteCommandLists(queue_t *q, uint32_t n, list_t **l, void *f) {
    (void)f;
    ENTER(0, 0);
    for (uint32_t i = 0; i < n; i++) {
        if (l[i]->imm || !l[i]->closed) BAD("execute an open list");
        if (l[i]->executing) BAD("a list executed again while the device is running it");
        for (cmd *c = l[i]->rec; c; c = c->next) enqueue(&q->e, c);
        cmd end = {0};
        end.kind = C_END;
        end.of = l[i];
        enqueue(&q->e, &end);
        l[i]->executing++;
    }
    return OK;
}
R zeCommandQueueSynchronize(queue_t *q, uint64_t t) {
    ENTER(0, 0);
    if (!run_until(&q->e, NULL)) return t == UINT64_MAX ? DEVICE_LOST : NOT_READY;
    return OK;
}
R zeCommandListHostSynchronize(list_t *l, uint64_t t) {
    ENTER(0, 0);
    if (!l->imm) BAD("host sync of a regular list");
    if (!run_until(&l->e, NULL)) return t == UINT64_MAX ? DEVICE_LOST : NOT_READY;
    return OK;
}
/* An appended command: queued on an immediate list, recorded by a regular one. */
static R append(list_t *l, cmd *c, void *signal, uint32_t nw, void **w) {
    if (l->closed) BAD("append to a closed list");
    if (nw > 8) return BADARG;
    c->signal = signal;
    c->nwait = nw;
    for (uint32_t i = 0; i < nw; i++) c->wait[i] = w[i];
    if (l->imm) {
        enqueue(&l->e, c);
        return OK;
    }
    cmd *k = malloc(sizeof *k);
    *k = *c;
    k->next = NULL;
    if (l->rectail) l->rectail->next = k;
    else l->rec = k;
    l->rectail = k;
    return OK;
}
R zeCommandListAppendBarrier(list_t *l, void *e, uint32_t n, void **w) {
    ENTER(0, 0);
    cmd c = {0};
    c.kind = C_BARRIER;
    return append(l, &c, e, n, w);
}
R zeCommandListAppendWaitOnEvents(list_t *l, uint32_t n, void **w) {
    ENTER(0, 0);
    cmd c = {0};
    c.kind = C_BARRIER;
    return append(l, &c, NULL, n, w);
}
#ifndef FAKE_ZE_NO_EVENT_RESET /* built without it: a loader that lacks what graphs need */
R zeCommandListAppendEventReset(list_t *l, ev_t *e) {
    ENTER(0, 0);
    cmd c = {0};
    c.kind = C_RESET;
    c.reset = e;
    return append(l, &c, NULL, 0, NULL);
}
#endif
R zeCommandListAppendWriteGlobalTimestamp(list_t *l, uint64_t *dst, void *e, uint32_t n, void **w) {
    ENTER(0, 0);
    if ((uintptr_t)dst % 8) return BADARG;
    cmd c = {0};
    c.kind = C_TS;
    c.dst = (char *)dst;
    return append(l, &c, e, n, w);
}
R zeCommandListAppendMemoryCopy(list_t *l, void *d, const void *s, size_t n, void *e, uint32_t nw, void **w) {
    ENTER(0, 0);
    cmd c = {0};
    c.kind = C_COPY;
    c.dst = d;
    c.src = s;
    c.n = n;
    return append(l, &c, e, nw, w);
}
R zeCommandListAppendMemoryFill(list_t *l, void *d, const void *p, size_t ps, size_t n, void *e, uint32_t nw,
                                void **w) {
    ENTER(0, 0);
    if (ps == 0 || (ps & (ps - 1)) || n % ps) return BADARG;
    cmd c = {0};
    c.kind = C_FILL;
    c.dst = d;
    c.src = p; /* read when it runs */
    c.n = n;
    c.ps = ps;
    return append(l, &c, e, nw, w);
}

R zeEventHostSynchronize(ev_t *e, uint64_t t) {
    ENTER(0, 0);
    if (e->signaled) return OK;
    if (t == 0) return NOT_READY;
    return wait_for(e) ? OK : (t == UINT64_MAX ? DEVICE_LOST : NOT_READY);
}
R zeEventQueryStatus(ev_t *e) {
    ENTER(0, 0);
    return e->signaled ? OK : NOT_READY;
}
R zeEventHostReset(ev_t *e) {
    ENTER(0, 0);
    if (e->pending_signals || e->pending_refs) BAD("zeEventHostReset of an event queued work still names");
    e->signaled = 0;
    return OK;
}
R zeEventQueryKernelTimestamp(ev_t *e, uint64_t *out) {
    ENTER(0, 0);
    if (!(e->pool->flags & 4u)) BAD("kernel timestamps of an event of a pool without them");
    if (!e->signaled) return NOT_READY;
    out[0] = out[2] = e->ks;
    out[1] = out[3] = e->ke;
    return OK;
}

/* ------------------------------------------------------------- modules */
typedef struct {
    char *spv;
    size_t n;
} mod_t;
typedef struct {
    char name[32];
    unsigned gs;
    uint64_t args[64];
    size_t sizes[64];
    int set;
} kern_t;
typedef struct {
    char name[32];
    unsigned groups, gs;
    int nargs;
    uint64_t args[64];
    size_t sizes[64];
} launch_t;
static launch_t launched[1024];
static int nlaunched;
int fake_launches(void) { return nlaunched; }
const char *fake_launch_kernel(int i) { return launched[i].name; }
unsigned fake_launch_groups(int i) { return launched[i].groups; }
unsigned fake_launch_group_size(int i) { return launched[i].gs; }
int fake_launch_nargs(int i) { return launched[i].nargs; }
uint64_t fake_launch_arg(int i, int a) { return launched[i].args[a]; }
size_t fake_launch_arg_size(int i, int a) { return launched[i].sizes[a]; }

static const char build_log[] = "fake build log: error: the fake driver refuses this module";
static char build_flags[256] = "(none)";
const char *fake_build_flags(void) { return build_flags; }
R zeModuleCreate(ctx_t *c, void *d, const char *desc, mod_t **out, void **log) {
    (void)d;
    ENTER(*(const uint32_t *)desc, 0x1bu);
    if (!c->alive) BAD("a module in a destroyed context");
    fake_ctx_module = c;
    uint32_t fmt = *(const uint32_t *)(desc + 16);
    size_t n = *(const size_t *)(desc + 24);
    const unsigned char *in = *(const unsigned char **)(desc + 32);
    if (log) *log = (void *)build_log;
    const char *fl = *(const char **)(desc + 40);
    snprintf(build_flags, sizeof build_flags, "%s", fl ? fl : "(null)");
    uint32_t magic = 0;
    if (n >= 4) memcpy(&magic, in, 4);
    if (fmt != 0 || magic != 0x07230203u) return 0x7800000fu;
    if (refuse_modules > 0) {
        refuse_modules--;
        return 0x70000004u;
    }
    mod_t *m = malloc(sizeof *m);
    m->spv = malloc(n);
    memcpy(m->spv, in, n);
    m->n = n;
    *out = m;
    return OK;
}
R zeModuleDestroy(mod_t *m) {
    ENTER(0, 0);
    free(m->spv);
    free(m);
    return OK;
}
R zeModuleBuildLogGetString(void *l, size_t *n, char *s) {
    ENTER(l == build_log, 1);
    if (s) memcpy(s, build_log, *n < sizeof build_log ? *n : sizeof build_log);
    else *n = sizeof build_log;
    return OK;
}
R zeModuleBuildLogDestroy(void *l) {
    (void)l;
    ENTER(0, 0);
    return OK;
}
static void *find(const char *h, size_t hn, const char *nd) {
    size_t l = strlen(nd);
    for (size_t i = 0; i + l <= hn; i++)
        if (!memcmp(h + i, nd, l)) return (void *)(h + i);
    return NULL;
}
R zeKernelCreate(mod_t *m, const char *desc, kern_t **out) {
    ENTER(*(const uint32_t *)desc, 0x1du);
    const char *name = *(const char **)(desc + 24);
    if (!find(m->spv, m->n, name)) return 0x78000011u;
    kern_t *k = calloc(1, sizeof *k);
    snprintf(k->name, 32, "%s", name);
    *out = k;
    return OK;
}
R zeKernelDestroy(kern_t *k) {
    ENTER(0, 0);
    free(k);
    return OK;
}
R zeKernelSetArgumentValue(kern_t *k, uint32_t i, size_t n, const void *v) {
    ENTER(0, 0);
    if (i >= 64 || n > 8) return 0x78000016u;
    k->args[i] = 0;
    if (v) memcpy(&k->args[i], v, n);
    k->sizes[i] = n;
    if ((int)i + 1 > k->set) k->set = (int)i + 1;
    return OK;
}
R zeKernelSetGroupSize(kern_t *k, uint32_t x, uint32_t y, uint32_t z) {
    ENTER(y == 1 && z == 1, 1);
    k->gs = x;
    return OK;
}
R zeKernelSuggestGroupSize(kern_t *k, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t *x, uint32_t *y, uint32_t *z) {
    (void)k;
    (void)gy;
    (void)gz;
    ENTER(0, 0);
    *x = gx < 128 ? gx : 128;
    *y = *z = 1;
    return OK;
}
/* A kernel's properties: sub-groups of 16, fake_kernel_max_group work-items
 * in a group at most, fake_kernel_slm bytes of shared local memory (a test
 * sets them: the fake compiles nothing to count them from). */
unsigned fake_kernel_max_group = 512, fake_kernel_slm;
R zeKernelGetProperties(kern_t *k, uint32_t *p) {
    (void)k;
    ENTER(p[0], 0x1eu);
    uint32_t *u = (uint32_t *)((char *)p + 16);
    memset(u, 0, 76);
    u[6] = 16;                          /* maxSubgroupSize */
    u[7] = fake_kernel_max_group / 16;  /* maxNumSubgroups */
    u[8] = fake_kernel_slm;             /* localMemSize */
    return OK;
}
/* The arguments are taken at the append, as the driver takes them. */
R zeCommandListAppendLaunchKernel(list_t *l, kern_t *k, const uint32_t *g, void *e, uint32_t nw, void **w) {
    ENTER(0, 0);
    if (k->gs > 512 || k->gs > fake_kernel_max_group) BAD("a group larger than the kernel or device allows");
    launch_t *r = &launched[nlaunched++ % 1024];
    memcpy(r->name, k->name, 32);
    r->groups = g[0];
    r->gs = k->gs;
    r->nargs = k->set;
    memcpy(r->args, k->args, sizeof r->args);
    memcpy(r->sizes, k->sizes, sizeof r->sizes);
    cmd c = {0};
    c.kind = C_LAUNCH;
    memcpy(c.name, k->name, 32);
    c.rec = k->args[0];
    c.prog = k->args[2];
    c.fail = fail_next;
    fail_next = 0;
    return append(l, &c, e, nw, w);
}
