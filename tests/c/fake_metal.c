/*
 * fake_metal.c -- a fake Objective-C runtime and Metal framework, for the
 * Metal backend's tests on machines without either (Linux, CI).
 *
 * Built as one shared library (libtack-fake-metal.so) that Tack loads as
 * both TACK_METAL_OBJC_PATH and TACK_METAL_PATH.  It exports the runtime's
 * objc_getClass, sel_registerName, objc_msgSend and autorelease pool, and
 * Metal's MTLCreateSystemDefaultDevice and MTLCopyAllDevices, and does the
 * host side of what Tack asks for real: objects are reference counted (and
 * counted live, so a test can see that retains and releases balance);
 * buffers are host memory; a library records its source and checks that
 * it carries the tack-metal layout comment and a `kernel void tk_phaseN`
 * for each function asked for (it compiles MSL only when emulating, below);
 * encoders record setBuffer/setBytes/dispatch calls, so a test can check the
 * argument convention; a command buffer "runs" when it is waited for, after
 * what its queue committed before it (a lazy GPU: see run() below), and
 * shared events (newSharedEvent) are signalled and waited for by command
 * buffers as they run, so that a missing order between streams shows.
 * fake_metal_ran lists the command buffers' commit numbers in the order they
 * ran; each takes fake_metal_cb_seconds (1 ms unless a test sets it) of the
 * fake GPU's clock, which a completed command buffer reports as its
 * GPUStartTime and GPUEndTime (0 before it has run, as Metal's are).
 *
 * The trick that makes objc_msgSend a C function: the backend calls it
 * only through casts to exact, non-variadic function types, passing
 * integers, pointers and MTLSize structs.  On x86-64 System V those are
 * passed exactly as the same values passed to a variadic function (no
 * floating-point arguments, so the vector-register count in %al does not
 * matter), so here objc_msgSend is a variadic function that dispatches on
 * the selector and reads each argument with va_arg at its documented type.
 * It returns a struct of a pointer and a double, which that ABI returns in
 * %rax and %xmm0: the two registers a caller expecting an integer or a
 * double reads.  That holds for this ABI only; it stands in for the real
 * runtime in tests and nowhere else.
 *
 * Failure injection (globals a test sets): fake_metal_compile_error (the
 * next library fails to compile with that message), fake_metal_cb_error
 * (the next command buffer to run ends in MTLCommandBufferStatusError with
 * that description, having done none of its commands: no signal either), fake_metal_fail_site (the next command buffer that
 * dispatches writes a failed check with that site into buffer(0), the
 * device error record, as the generated code would), fake_metal_max_threads
 * (a new pipeline's maxTotalThreadsPerThreadgroup; a dispatch of more
 * threads a group than its pipeline's counts in fake_metal_oversized),
 * fake_metal_static_tg_mem (a pipeline's staticThreadgroupMemoryLength) and
 * fake_metal_max_tg_mem (the device's maxThreadgroupMemoryLength).  FAKE_METAL_COUNT
 * (environment, default 1) is the number of GPUs.
 *
 * Running kernels: with FAKE_METAL_EMULATE set to the directory of Tack's
 * MSL headers (tests/msl), a library is compiled for real -- its MSL as C++
 * by clang++ (FAKE_METAL_CXX, default clang++) against the CPU emulation of
 * Metal's standard library in tests/msl/emulate, plus one wrapper per phase
 * as tests/msl/emulate/tack_emulate.h describes, into a shared object that
 * is loaded; a source that does not compile fails with clang's messages as
 * the NSError's description.  Each dispatch is then recorded with the
 * buffers bound at that moment (setBytes copied, as Metal does) and, when
 * the command buffer runs, every thread of its grid (threadgroups times
 * threads per group) runs in turn, in order, dispatch after dispatch.
 * What that shows is what the code computes under the backend's argument
 * convention, not how a GPU schedules it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct fobj *id;
typedef const char *SEL;
typedef unsigned long NSUInteger;
typedef struct MTLSize {
    NSUInteger width, height, depth;
} MTLSize;

enum { K_CLASS_STRING = 1, K_CLASS_OPTIONS, K_STRING, K_ARRAY, K_ERROR, K_DEVICE, K_QUEUE, K_BUFFER, K_LIBRARY,
       K_FUNCTION, K_PSO, K_CB, K_ENCODER, K_OPTIONS, K_EVENT };

/* a command buffer's commands, run in order when it runs */
enum { OP_DISPATCH, OP_SIGNAL, OP_WAIT };

#define MAGIC 0x6d74616cu

struct fobj {
    unsigned magic;
    int kind;
    long refs;
    char *text;        /* string, error, library source, function name */
    void *mem;         /* buffer contents */
    NSUInteger len;    /* buffer length */
    NSUInteger mode;   /* buffer storage mode */
    id *items;         /* array items, command buffer's retained resources */
    int nitems;
    int phase;         /* function, pipeline: its tk_phaseN */
    int status;        /* command buffer */
    id err;            /* command buffer error, retained */
    id buf0;           /* command buffer's buffer(0), not retained beyond items */
    uint64_t word0;    /* command buffer's program id */
    int dispatched;
    int fast_math, lang;
    void *dl;          /* library: the emulation's shared object */
    void (*entry)(void **, unsigned, unsigned); /* function, pipeline, encoder: the phase's wrapper */
    void *table[32];   /* encoder: what each buffer index is bound to */
    struct dispatch *disp; /* command buffer: the commands to run */
    int ndisp;
    id queue;          /* command buffer: its queue, retained */
    uint64_t value;    /* shared event: its signaledValue */
    int serial;        /* command buffer: its commit number (from 1), 0 before its commit */
    double t0, t1;     /* command buffer: GPUStartTime, GPUEndTime (0 until it has run) */
};

struct dispatch {
    int op;            /* OP_*: a dispatch, or an event's signal or wait */
    id ev;             /* OP_SIGNAL, OP_WAIT: the event (the command buffer holds it) */
    uint64_t value;
    void (*entry)(void **, unsigned, unsigned);
    void *table[32];
    unsigned long nthreads;
};

/* ------------------------------------------------- what tests read */
int fake_metal_live;             /* objects alive (classes not counted) */
int fake_metal_sends;            /* messages sent */
int fake_metal_compiles;         /* newLibraryWithSource calls */
int fake_metal_last_fast_math = -1;
unsigned long fake_metal_last_lang;
int fake_metal_commits, fake_metal_completed;
char fake_metal_compile_error[512];
char fake_metal_cb_error[512];
int fake_metal_fail_site = -1;
long long fake_metal_fail_a, fake_metal_fail_b;
int fake_metal_max_threads = 1024;
int fake_metal_static_tg_mem;         /* a pipeline's staticThreadgroupMemoryLength */
int fake_metal_max_tg_mem = 32768;    /* the device's maxThreadgroupMemoryLength */
int fake_metal_oversized;             /* dispatches of more threads a group than the pipeline allows */
int fake_metal_complete_on_commit; /* command buffers complete when committed, as if the GPU were quick */
/* the commit numbers of the command buffers in the order they ran, each followed by a space */
char fake_metal_ran[8192];
void fake_metal_ran_clear(void) { fake_metal_ran[0] = 0; }
/* the device's clock: each command buffer takes fake_metal_cb_seconds of it, so elapsed times are exact */
static double gpu_clock = 1000.0;
double fake_metal_cb_seconds = 0.001;
/* the last encoder's calls */
void *fake_metal_bound[32];      /* setBuffer: per index (the MTLBuffer) */
unsigned long fake_metal_bound_offset[32];
int fake_metal_bytes_index = -1; /* setBytes: index */
unsigned long long fake_metal_words[512];
int fake_metal_nwords;
int fake_metal_ndispatch;
unsigned long fake_metal_groups[16], fake_metal_threads[16];
int fake_metal_dispatch_phase[16];
char fake_metal_last_source[65536];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fobj cls_string = {.magic = MAGIC, .kind = K_CLASS_STRING, .refs = 1};
static struct fobj cls_options = {.magic = MAGIC, .kind = K_CLASS_OPTIONS, .refs = 1};
static id devices[8];
static int ndevices = -1;

static id make(int kind) {
    id o = calloc(1, sizeof *o);
    if (!o) abort();
    o->magic = MAGIC;
    o->kind = kind;
    o->refs = 1;
    o->phase = -1;
    pthread_mutex_lock(&lock);
    fake_metal_live++;
    pthread_mutex_unlock(&lock);
    return o;
}

static void release(id o);

static void dealloc(id o) {
    for (int i = 0; i < o->nitems; i++) release(o->items[i]);
    if (o->err) release(o->err);
    if (o->queue) release(o->queue);
    free(o->items);
    free(o->disp);
    if (o->dl) dlclose(o->dl);
    free(o->text);
    free(o->mem);
    o->magic = 0;
    free(o);
    pthread_mutex_lock(&lock);
    fake_metal_live--;
    pthread_mutex_unlock(&lock);
}

static void check(id o, const char *sel) {
    if (!o || o->magic != MAGIC) {
        fprintf(stderr, "fake metal: [%p %s]: not a live object\n", (void *)o, sel);
        abort();
    }
}

static id retain(id o) {
    if (o->kind == K_CLASS_STRING || o->kind == K_CLASS_OPTIONS) return o;
    pthread_mutex_lock(&lock);
    o->refs++;
    pthread_mutex_unlock(&lock);
    return o;
}

static void release(id o) {
    if (o->kind == K_CLASS_STRING || o->kind == K_CLASS_OPTIONS) return;
    pthread_mutex_lock(&lock);
    long r = --o->refs;
    pthread_mutex_unlock(&lock);
    if (r < 0) {
        fprintf(stderr, "fake metal: object %p (kind %d) released once too often\n", (void *)o, o->kind);
        abort();
    }
    if (r == 0) dealloc(o);
}

static void hold(id owner, id o) {
    owner->items = realloc(owner->items, (size_t)(owner->nitems + 1) * sizeof(id));
    if (!owner->items) abort();
    owner->items[owner->nitems++] = retain(o);
}

/* ------------------------------------------------------ autorelease */
static _Thread_local id *pool;
static _Thread_local size_t npool, cappool;

void *objc_autoreleasePoolPush(void) { return (void *)(uintptr_t)(npool + 1); }

void objc_autoreleasePoolPop(void *mark) {
    size_t to = (size_t)(uintptr_t)mark - 1;
    while (npool > to) release(pool[--npool]);
}

static id autorelease(id o) {
    if (npool == cappool) {
        cappool = cappool ? 2 * cappool : 64;
        pool = realloc(pool, cappool * sizeof *pool);
        if (!pool) abort();
    }
    pool[npool++] = o; /* without a pool pushed, it stays here: counted live, a leak a test sees */
    return o;
}

static id string(const char *s) {
    id o = make(K_STRING);
    o->text = strdup(s ? s : "");
    return o;
}

static id error(const char *s) {
    id o = make(K_ERROR);
    o->text = strdup(s);
    return o;
}

/* ------------------------------------------------------------- runtime */
#define NSELS 128
static char *sels[NSELS];
static int nsels;

SEL sel_registerName(const char *name) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nsels; i++)
        if (!strcmp(sels[i], name)) {
            pthread_mutex_unlock(&lock);
            return sels[i];
        }
    SEL s = nsels < NSELS ? (sels[nsels++] = strdup(name)) : NULL;
    pthread_mutex_unlock(&lock);
    return s;
}

id objc_getClass(const char *name) {
    if (!strcmp(name, "NSString")) return &cls_string;
    if (!strcmp(name, "MTLCompileOptions")) return &cls_options;
    return NULL;
}

static void find_devices(void) {
    if (ndevices >= 0) return;
    const char *e = getenv("FAKE_METAL_COUNT");
    ndevices = e ? atoi(e) : 1;
    if (ndevices > 8) ndevices = 8;
    for (int i = 0; i < ndevices; i++) {
        devices[i] = make(K_DEVICE);
        char name[64];
        snprintf(name, sizeof name, "Fake Apple M%d", i + 1);
        devices[i]->text = strdup(name);
    }
    const char *t = getenv("FAKE_METAL_MAX_THREADS");
    if (t) fake_metal_max_threads = atoi(t);
}

id MTLCreateSystemDefaultDevice(void) {
    find_devices();
    return ndevices > 0 ? retain(devices[0]) : NULL;
}

id MTLCopyAllDevices(void) {
    find_devices();
    id a = make(K_ARRAY);
    for (int i = 0; i < ndevices; i++) hold(a, devices[i]);
    return a;
}

/* ----------------------------------------------------------- test API */
void *fake_metal_new_buffer(unsigned long len, unsigned long mode) {
    id b = make(K_BUFFER);
    b->len = len;
    b->mode = mode;
    if (mode != 2) b->mem = calloc(1, len ? len : 1);
    return b;
}

void fake_metal_release(void *o) { release(o); }
void *fake_metal_new_queue(void) { return make(K_QUEUE); } /* another library's MTLCommandQueue */
long fake_metal_refs(void *o) { return ((id)o)->refs; }
void *fake_metal_contents(void *o) { return ((id)o)->mem; }
void *fake_metal_device(int i) { find_devices(); return i < ndevices ? devices[i] : NULL; }
/* Objects still in this thread's pool outside any pushed pool (leaked autoreleases). */
int fake_metal_pooled(void) { return (int)npool; }

/* ---------------------------------------------------------- emulation */
/* Append to a growing string. */
static void put(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
    if (*len + n + 1 > *cap) {
        *cap = (*len + n + 1) * 2;
        *buf = realloc(*buf, *cap);
        if (!*buf) abort();
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = 0;
}

/* The wrappers of tack_emulate.h for src's phases, or NULL with why in msg. */
static char *wrappers(const char *src, char *msg, size_t nmsg) {
    char *out = NULL;
    size_t len = 0, cap = 0;
    const char *inc = "\n#include <tack_emulate.h>\n";
    put(&out, &len, &cap, inc, strlen(inc));
    for (const char *s = strstr(src, "kernel void tk_phase"); s; s = strstr(s + 1, "kernel void tk_phase")) {
        int k;
        if (sscanf(s, "kernel void tk_phase%d(", &k) != 1) continue;
        const char *p = strchr(s, '(') + 1;
        char head[128];
        snprintf(head, sizeof head, "extern \"C\" void run_tk_phase%d(void **b, unsigned tid, unsigned nth) { tk_phase%d(",
                 k, k);
        put(&out, &len, &cap, head, strlen(head));
        for (int first = 1;; first = 0) { /* one parameter: up to the next ',' or ')' outside parentheses */
            const char *q = p;
            int depth = 0;
            while (*q && !(depth == 0 && (*q == ',' || *q == ')'))) {
                if (*q == '(') depth++;
                if (*q == ')') depth--;
                q++;
            }
            if (!*q) {
                snprintf(msg, nmsg, "fake metal: tk_phase%d's parameter list does not end", k);
                free(out);
                return NULL;
            }
            char param[256], arg[64];
            snprintf(param, sizeof param, "%.*s", (int)(q - p), p);
            const char *at = strstr(param, "[[buffer(");
            int n;
            if (at && sscanf(at, "[[buffer(%d)]]", &n) == 1 && n >= 0 && n < 31)
                snprintf(arg, sizeof arg, "tk_emu_ptr{b[%d]}", n);
            else if (strstr(param, "[[thread_position_in_grid]]")) snprintf(arg, sizeof arg, "tid");
            else if (strstr(param, "[[threads_per_grid]]")) snprintf(arg, sizeof arg, "nth");
            else {
                snprintf(msg, nmsg, "fake metal: tk_phase%d has a parameter it cannot bind: %s", k, param);
                free(out);
                return NULL;
            }
            if (!first) put(&out, &len, &cap, ", ", 2);
            put(&out, &len, &cap, arg, strlen(arg));
            if (*q == ')') break;
            p = q + 1;
        }
        put(&out, &len, &cap, "); }\n", 5);
    }
    return out;
}

/* Compile src with the emulation into a loaded shared object, or NULL with clang's messages in msg. */
static void *emulate_build(const char *src, const char *inc, char *msg, size_t nmsg) {
    const char *cxx = getenv("FAKE_METAL_CXX");
    const char *tmp = getenv("TMPDIR");
    char dir[512], path[600], so[600], log[600], cmd[4096];
    void *dl = NULL;
    char *wrap = wrappers(src, msg, nmsg);
    if (!wrap) return NULL;
    snprintf(dir, sizeof dir, "%s/fake-metal-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        snprintf(msg, nmsg, "fake metal: no temporary directory");
        free(wrap);
        return NULL;
    }
    snprintf(path, sizeof path, "%s/kernel.cpp", dir);
    snprintf(so, sizeof so, "%s/kernel.so", dir);
    snprintf(log, sizeof log, "%s/clang.log", dir);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(src, f);
        fputs(wrap, f);
        fclose(f);
    }
    free(wrap);
    snprintf(cmd, sizeof cmd, "'%s' -std=c++17 -O1 -shared -fPIC -w -I '%s/emulate' '%s' -o '%s' 2>'%s'",
             cxx && *cxx ? cxx : "clang++", inc, path, so, log);
    int rc = f ? system(cmd) : -1;
    if (rc == 0) {
        dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
        if (!dl) snprintf(msg, nmsg, "fake metal: %s", dlerror());
    } else {
        size_t n = 0;
        FILE *l = fopen(log, "r");
        if (l) {
            n = fread(msg, 1, nmsg - 1, l);
            fclose(l);
        }
        msg[n] = 0;
        if (!n) snprintf(msg, nmsg, "fake metal: the MSL compiler failed (%d)", rc);
    }
    unlink(path);
    unlink(so);
    unlink(log);
    rmdir(dir);
    return dl;
}

/* -------------------------------------------------------- objc_msgSend */
static int has_kernel(const char *src, const char *fn) {
    char pat[96];
    snprintf(pat, sizeof pat, "kernel void %s(", fn);
    return strstr(src, pat) != NULL;
}

/* Committed command buffers not yet run, in commit order, retained (as a
 * queue keeps what it was given).  The fake GPU is lazy: a command buffer
 * runs only when the host waits for it (or for an event it signals), and
 * then its queue's earlier ones run first; a wait for an event runs the
 * command buffer that signals it (with what its queue committed before).
 * So work on one queue runs in commit order, two queues keep no order
 * between them but what their events impose, and a missing wait shows as
 * work that has not run. */
static id *committed;
static int ncommitted, capcommitted;

static void run(id cb);

/* The first committed command buffer that signals ev with at least v. */
static id signaller(id ev, uint64_t v) {
    for (int i = 0; i < ncommitted; i++)
        for (int k = 0; k < committed[i]->ndisp; k++)
            if (committed[i]->disp[k].op == OP_SIGNAL && committed[i]->disp[k].ev == ev &&
                committed[i]->disp[k].value >= v)
                return committed[i];
    return NULL;
}

static void run(id cb) {
    if (cb->status != 2) return; /* not committed, running or run */
    for (int i = 0; i < ncommitted && committed[i] != cb;) {
        if (committed[i]->queue == cb->queue) { /* its queue's earlier work first */
            run(committed[i]);
            i = 0;
        } else {
            i++;
        }
    }
    cb->status = 3;
    for (int i = 0; i < ncommitted; i++)
        if (committed[i] == cb) {
            memmove(committed + i, committed + i + 1, (size_t)(ncommitted - i - 1) * sizeof *committed);
            ncommitted--;
            break;
        }
    cb->t0 = gpu_clock;
    /* a command buffer that fails (fake_metal_cb_error) does none of its commands: no dispatch, no signal */
    int fails = fake_metal_cb_error[0] != 0;
    for (int i = 0; i < cb->ndisp && !fails; i++) {
        struct dispatch *d = &cb->disp[i];
        if (d->op == OP_SIGNAL) {
            d->ev->value = d->value;
        } else if (d->op == OP_WAIT) {
            while (d->ev->value < d->value) {
                id s = signaller(d->ev, d->value);
                if (!s) {
                    fprintf(stderr, "fake metal: a command buffer waits for event %p to reach %llu, which no "
                            "committed command buffer signals: a GPU would wait for ever\n",
                            (void *)d->ev, (unsigned long long)d->value);
                    abort();
                }
                run(s);
            }
        } else {
            for (unsigned long t = 0; t < d->nthreads; t++) d->entry(d->table, (unsigned)t, (unsigned)d->nthreads);
        }
    }
    if (cb->dispatched && fake_metal_fail_site >= 0 && cb->buf0) {
        int32_t *rec = cb->buf0->mem;
        if (!rec[0]) {
            int64_t ab[2] = {fake_metal_fail_a, fake_metal_fail_b};
            rec[0] = 1;
            rec[1] = fake_metal_fail_site;
            memcpy(rec + 2, &cb->word0, 8);
            memcpy(rec + 4, ab, 16);
        }
        fake_metal_fail_site = -1;
    }
    if (fails) {
        cb->status = 5;
        cb->err = error(fake_metal_cb_error);
        fake_metal_cb_error[0] = 0;
    } else {
        cb->status = 4;
    }
    gpu_clock += fake_metal_cb_seconds;
    cb->t1 = gpu_clock;
    size_t n = strlen(fake_metal_ran);
    snprintf(fake_metal_ran + n, sizeof fake_metal_ran - n, "%d ", cb->serial);
    fake_metal_completed++;
    release(cb); /* the queue's reference */
}

static void commit(id cb) {
    if (cb->status != 0) {
        fprintf(stderr, "fake metal: command buffer %p committed twice\n", (void *)cb);
        abort();
    }
    if (ncommitted == capcommitted) {
        capcommitted = capcommitted ? 2 * capcommitted : 64;
        committed = realloc(committed, (size_t)capcommitted * sizeof *committed);
        if (!committed) abort();
    }
    committed[ncommitted++] = retain(cb);
    cb->status = 2;
    cb->serial = ++fake_metal_commits;
    if (fake_metal_complete_on_commit) run(cb);
}

/* The result of every message: objc_msgSend is declared to return this
 * struct, which x86-64 System V returns in %rax and %xmm0, so a caller that
 * cast it to a function returning an integer or pointer reads .r, and one
 * that cast it to a function returning a double (GPUEndTime) reads .d. */
typedef struct msg_result {
    void *r;
    double d;
} msg_result;

#define IS(name) (!strcmp(op, name))

msg_result objc_msgSend(id self, SEL op, ...) {
    va_list ap;
    void *r = NULL;
    double dr = 0;
    check(self, op);
    fake_metal_sends++;
    va_start(ap, op);
    if (IS("retain")) r = retain(self);
    else if (IS("release")) release(self);
    else if (IS("alloc") && self->kind == K_CLASS_STRING) r = make(K_STRING);
    else if (IS("new") && self->kind == K_CLASS_OPTIONS) r = make(K_OPTIONS);
    else if (IS("respondsToSelector:")) {
        SEL s = va_arg(ap, SEL);
        int buffer_only = !strcmp(s, "contents") || !strcmp(s, "storageMode") || !strcmp(s, "length");
        r = (void *)(uintptr_t)(!buffer_only || self->kind == K_BUFFER);
    } else if (IS("initWithUTF8String:") && self->kind == K_STRING) {
        const char *s = va_arg(ap, const char *);
        if (!s) {
            release(self);
        } else {
            self->text = strdup(s);
            r = self;
        }
    } else if (IS("UTF8String") && self->kind == K_STRING) r = self->text;
    else if (IS("count") && self->kind == K_ARRAY) r = (void *)(uintptr_t)self->nitems;
    else if (IS("objectAtIndex:") && self->kind == K_ARRAY) {
        NSUInteger i = va_arg(ap, NSUInteger);
        if (i >= (NSUInteger)self->nitems) abort();
        r = self->items[i];
    } else if (IS("localizedDescription") && self->kind == K_ERROR) r = autorelease(string(self->text));
    else if (IS("name") && self->kind == K_DEVICE) r = autorelease(string(self->text));
    else if (IS("newCommandQueue") && self->kind == K_DEVICE) r = make(K_QUEUE);
    else if (IS("maxBufferLength") && self->kind == K_DEVICE) r = (void *)(uintptr_t)(1ul << 32);
    else if (IS("newBufferWithLength:options:") && self->kind == K_DEVICE) {
        NSUInteger len = va_arg(ap, NSUInteger), opts = va_arg(ap, NSUInteger);
        id b = fake_metal_new_buffer(len, (opts >> 4) & 0xf);
        if (b->mem) memset(b->mem, 0xcd, len); /* new buffers hold no promised value */
        r = b;
    } else if (IS("contents") && self->kind == K_BUFFER) r = self->mem;
    else if (IS("length") && self->kind == K_BUFFER) r = (void *)(uintptr_t)self->len;
    else if (IS("storageMode") && self->kind == K_BUFFER) r = (void *)(uintptr_t)self->mode;
    else if (IS("setFastMathEnabled:") && self->kind == K_OPTIONS) self->fast_math = (signed char)va_arg(ap, int);
    else if (IS("setLanguageVersion:") && self->kind == K_OPTIONS) self->lang = (int)va_arg(ap, NSUInteger);
    else if (IS("newLibraryWithSource:options:error:") && self->kind == K_DEVICE) {
        id src = va_arg(ap, id), opts = va_arg(ap, id);
        id *err = va_arg(ap, id *);
        check(src, op);
        check(opts, op);
        fake_metal_compiles++;
        fake_metal_last_fast_math = opts->fast_math;
        fake_metal_last_lang = (unsigned long)opts->lang;
        snprintf(fake_metal_last_source, sizeof fake_metal_last_source, "%s", src->text);
        if (fake_metal_compile_error[0]) {
            if (err) *err = autorelease(error(fake_metal_compile_error));
            fake_metal_compile_error[0] = 0;
        } else if (!strstr(src->text, "/* tack-metal: phases=")) {
            if (err) *err = autorelease(error("fake metal: the source has no tack-metal layout comment"));
        } else if (getenv("FAKE_METAL_EMULATE")) {
            char msg[4000];
            void *dl = emulate_build(src->text, getenv("FAKE_METAL_EMULATE"), msg, sizeof msg);
            if (dl) {
                id lib = make(K_LIBRARY);
                lib->text = strdup(src->text);
                lib->dl = dl;
                r = lib;
            } else if (err) {
                *err = autorelease(error(msg));
            }
        } else {
            id lib = make(K_LIBRARY);
            lib->text = strdup(src->text);
            r = lib;
        }
    } else if (IS("newFunctionWithName:") && self->kind == K_LIBRARY) {
        id name = va_arg(ap, id);
        check(name, op);
        if (has_kernel(self->text, name->text)) {
            id f = make(K_FUNCTION);
            f->text = strdup(name->text);
            sscanf(name->text, "tk_phase%d", &f->phase);
            if (self->dl) {
                char sym[96];
                snprintf(sym, sizeof sym, "run_%s", name->text);
                *(void **)&f->entry = dlsym(self->dl, sym);
                if (!f->entry) {
                    release(f);
                    f = NULL;
                } else {
                    hold(f, self); /* the code lives as long as what runs it */
                }
            }
            r = f;
        }
    } else if (IS("newComputePipelineStateWithFunction:error:") && self->kind == K_DEVICE) {
        id fn = va_arg(ap, id);
        check(fn, op);
        id p = make(K_PSO);
        p->phase = fn->phase;
        p->len = (NSUInteger)fake_metal_max_threads; /* its maxTotalThreadsPerThreadgroup */
        p->entry = fn->entry;
        if (fn->entry) hold(p, fn);
        r = p;
    } else if (IS("maxTotalThreadsPerThreadgroup") && self->kind == K_PSO) r = (void *)(uintptr_t)self->len;
    else if (IS("threadExecutionWidth") && self->kind == K_PSO) r = (void *)(uintptr_t)32;
    else if (IS("staticThreadgroupMemoryLength") && self->kind == K_PSO) r = (void *)(uintptr_t)fake_metal_static_tg_mem;
    else if (IS("maxThreadgroupMemoryLength") && self->kind == K_DEVICE) r = (void *)(uintptr_t)fake_metal_max_tg_mem;
    else if (IS("commandBuffer") && self->kind == K_QUEUE) {
        id cb = make(K_CB);
        cb->queue = retain(self);
        r = autorelease(cb);
    }
    else if (IS("computeCommandEncoder") && self->kind == K_CB) {
        id e = make(K_ENCODER);
        hold(e, self); /* the encoder knows its command buffer */
        memset(fake_metal_bound, 0, sizeof fake_metal_bound);
        memset(fake_metal_bound_offset, 0, sizeof fake_metal_bound_offset);
        fake_metal_bytes_index = -1;
        fake_metal_nwords = fake_metal_ndispatch = 0;
        r = autorelease(e);
    } else if (IS("setBuffer:offset:atIndex:") && self->kind == K_ENCODER) {
        id b = va_arg(ap, id);
        NSUInteger off = va_arg(ap, NSUInteger), i = va_arg(ap, NSUInteger);
        check(b, op);
        if (b->kind != K_BUFFER || i >= 31 || off > b->len) abort();
        hold(self->items[0], b); /* the command buffer keeps what it uses */
        fake_metal_bound[i] = b;
        fake_metal_bound_offset[i] = off;
        self->table[i] = b->mem ? (char *)b->mem + off : NULL;
        if (i == 0) self->items[0]->buf0 = b;
        if (i == 2) {
            fake_metal_nwords = (int)((b->len - off) / 8 > 512 ? 512 : (b->len - off) / 8);
            memcpy(fake_metal_words, (char *)b->mem + off, (size_t)fake_metal_nwords * 8);
            memcpy(&self->items[0]->word0, b->mem, 8);
        }
    } else if (IS("setBytes:length:atIndex:") && self->kind == K_ENCODER) {
        const void *p = va_arg(ap, const void *);
        NSUInteger len = va_arg(ap, NSUInteger), i = va_arg(ap, NSUInteger);
        if (len > 4096 || i >= 31) abort(); /* Metal's limit for setBytes */
        fake_metal_bytes_index = (int)i;
        id copy = fake_metal_new_buffer(len, 0); /* Metal copies the bytes when they are set */
        memcpy(copy->mem, p, len);
        hold(self->items[0], copy);
        release(copy);
        self->table[i] = copy->mem;
        if (i == 2) {
            fake_metal_nwords = (int)(len / 8);
            memcpy(fake_metal_words, p, len);
            memcpy(&self->items[0]->word0, p, 8);
        }
    } else if (IS("setComputePipelineState:") && self->kind == K_ENCODER) {
        id p = va_arg(ap, id);
        check(p, op);
        if (fake_metal_ndispatch < 16) fake_metal_dispatch_phase[fake_metal_ndispatch] = p->phase;
        self->entry = p->entry;
        self->len = p->len; /* the pipeline's limit, for the dispatches after it */
    } else if (IS("dispatchThreadgroups:threadsPerThreadgroup:") && self->kind == K_ENCODER) {
        MTLSize g = va_arg(ap, MTLSize), t = va_arg(ap, MTLSize);
        if (g.height != 1 || g.depth != 1 || t.height != 1 || t.depth != 1 || !g.width || !t.width) abort();
        if (t.width > self->len) fake_metal_oversized++; /* more than the pipeline's maxTotalThreadsPerThreadgroup */
        if (fake_metal_ndispatch < 16) {
            fake_metal_groups[fake_metal_ndispatch] = g.width;
            fake_metal_threads[fake_metal_ndispatch] = t.width;
        }
        fake_metal_ndispatch++;
        id cb = self->items[0];
        cb->dispatched = 1;
        if (self->entry) {
            cb->disp = realloc(cb->disp, (size_t)(cb->ndisp + 1) * sizeof *cb->disp);
            if (!cb->disp) abort();
            struct dispatch *d = &cb->disp[cb->ndisp++];
            memset(d, 0, sizeof *d);
            d->op = OP_DISPATCH;
            d->entry = self->entry;
            memcpy(d->table, self->table, sizeof d->table);
            d->nthreads = g.width * t.width;
        }
    } else if (IS("endEncoding") && self->kind == K_ENCODER) {
    } else if (IS("commit") && self->kind == K_CB) {
        commit(self);
    } else if ((IS("encodeSignalEvent:value:") || IS("encodeWaitForEvent:value:")) && self->kind == K_CB) {
        id ev = va_arg(ap, id);
        uint64_t v = va_arg(ap, uint64_t);
        check(ev, op);
        if (ev->kind != K_EVENT || self->status != 0) abort(); /* an event, into a command buffer not committed */
        hold(self, ev);
        self->disp = realloc(self->disp, (size_t)(self->ndisp + 1) * sizeof *self->disp);
        if (!self->disp) abort();
        struct dispatch *d = &self->disp[self->ndisp++];
        memset(d, 0, sizeof *d);
        d->op = IS("encodeSignalEvent:value:") ? OP_SIGNAL : OP_WAIT;
        d->ev = ev;
        d->value = v;
    } else if (IS("newSharedEvent") && self->kind == K_DEVICE) r = make(K_EVENT);
    else if (IS("signaledValue") && self->kind == K_EVENT) r = (void *)(uintptr_t)self->value;
    else if (IS("GPUEndTime") && self->kind == K_CB) dr = self->status >= 4 ? self->t1 : 0.0;
    else if (IS("GPUStartTime") && self->kind == K_CB) dr = self->status >= 4 ? self->t0 : 0.0;
    else if (IS("waitUntilCompleted") && self->kind == K_CB) run(self);
    else if (IS("status") && self->kind == K_CB) r = (void *)(uintptr_t)self->status;
    else if (IS("error") && self->kind == K_CB) r = self->err;
    else {
        fprintf(stderr, "fake metal: object of kind %d does not answer %s\n", self->kind, op);
        abort();
    }
    va_end(ap);
    msg_result m = {r, dr};
    return m;
}
