/*
 * metal.c -- the Metal backend's vtable (Apple GPUs): the Objective-C
 * runtime, devices, memory, copies, synchronization.
 *
 * No Objective-C compiler, no Apple header: libobjc and Metal.framework are
 * loaded with dlopen on first use (TACK_METAL_OBJC_PATH and TACK_METAL_PATH
 * name other libraries, as TACK_HIP_PATH does for HIP), and every message
 * goes through objc_msgSend cast to one exact function type per signature
 * (the mtl_* wrappers below; metal_api.h says why, metal_selectors.def
 * lists each selector with its documented signature).  Where there is no
 * Objective-C runtime or no Metal (Linux, a Mac without a Metal GPU) the
 * backend reports zero devices and says why, so `tack.devices()` omits
 * Metal and `device="metal"` is a clear error.
 *
 * Devices: MTLCopyAllDevices where Metal has it (macOS: every GPU of an
 * Intel Mac with several), else MTLCreateSystemDefaultDevice.  Each device
 * gets a command queue of its own (and each tack.Stream another,
 * metal_stream.c); a launch is one command buffer on the current stream's
 * queue, committed at once and kept (retained) until a synchronization
 * point waits for it: synchronize (every queue of the device), a copy or a
 * fill (the current stream's queue), or a launch with an argument shared
 * with another library ("When a call returns").  Past 32 kept, those that have
 * completed without error are let go at the next launch, so a program that
 * never synchronizes holds a bounded list.  A command buffer that ends in
 * MTLCommandBufferStatusError is reported with its NSError's text; Metal
 * devices recover from such errors, so nothing is sticky here.
 *
 * Memory: every array is an MTLBuffer in MTLResourceStorageModeShared, and
 * the array's address is the buffer's `contents` -- host memory the CPU
 * reads as it is.  So the device is host_memory (DLPack exports it as
 * kDLCPU), and copies and fills are done by the host, after waiting for the
 * device's queued work: no blit encoder, and a copy to the host returns
 * with the data.  The device keeps a sorted table from host address ranges
 * to their buffers, so a launch binds each array argument as its buffer
 * and the offset into it.  array_from_ptr on Metal takes an MTLBuffer (an
 * `id`, as an int), not an address: wrap_handle checks that it answers
 * `contents`, is shared storage and is long enough, retains it for as long
 * as an array uses it, and gives back its contents.  Host memory that is
 * not Tack's cannot be imported without a copy (check_ptr says so, which
 * DLPack's copy=False import reports).
 *
 * Autorelease: Metal returns autoreleased objects (a command buffer, an
 * encoder, a name, an error); each entry point that receives one runs in an
 * autorelease pool of its own (objc_autoreleasePoolPush/Pop), so a thread
 * without a pool, such as any Python thread, leaks nothing.
 */
#include "platform/platform.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/metal/metal_backend.h"
#include "runtime/config.h"

#define METAL_PRUNE_AT 32 /* committed command buffers kept before completed ones are let go */

static tack_metal_api api;
static char load_why[300];
static int load_ok;
static tk_once_t load_once = TK_ONCE_INIT;
SEL metal_sels[TK_SEL_COUNT];

static const char *const sel_names[TK_SEL_COUNT] = {
#define TK_SEL(key, sel, ret, args) sel,
#include "backends/metal/metal_selectors.def"
#undef TK_SEL
};

/* ------------------------------------------------ the typed wrappers */
id mtl_id(id o, SEL s) { return ((id(*)(id, SEL))api.objc_msgSend)(o, s); }
void mtl_void(id o, SEL s) { ((void (*)(id, SEL))api.objc_msgSend)(o, s); }
NSUInteger mtl_uint(id o, SEL s) { return ((NSUInteger(*)(id, SEL))api.objc_msgSend)(o, s); }
void *mtl_ptr(id o, SEL s) { return ((void *(*)(id, SEL))api.objc_msgSend)(o, s); }
const char *mtl_cstr(id o, SEL s) { return ((const char *(*)(id, SEL))api.objc_msgSend)(o, s); }
MTLStorageMode mtl_storage_mode(id o, SEL s) { return ((MTLStorageMode(*)(id, SEL))api.objc_msgSend)(o, s); }
MTLCommandBufferStatus mtl_cb_status(id o, SEL s) { return ((MTLCommandBufferStatus(*)(id, SEL))api.objc_msgSend)(o, s); }
BOOL mtl_bool_sel(id o, SEL s, SEL a) { return ((BOOL(*)(id, SEL, SEL))api.objc_msgSend)(o, s, a); }
id mtl_id_cstr(id o, SEL s, const char *a) { return ((id(*)(id, SEL, const char *))api.objc_msgSend)(o, s, a); }
id mtl_id_uint(id o, SEL s, NSUInteger a) { return ((id(*)(id, SEL, NSUInteger))api.objc_msgSend)(o, s, a); }
id mtl_id_uint_opts(id o, SEL s, NSUInteger a, MTLResourceOptions b) {
    return ((id(*)(id, SEL, NSUInteger, MTLResourceOptions))api.objc_msgSend)(o, s, a, b);
}
id mtl_id_id(id o, SEL s, id a) { return ((id(*)(id, SEL, id))api.objc_msgSend)(o, s, a); }
id mtl_id_id_err(id o, SEL s, id a, id *b) { return ((id(*)(id, SEL, id, id *))api.objc_msgSend)(o, s, a, b); }
id mtl_id_id_id_err(id o, SEL s, id a, id b, id *c) {
    return ((id(*)(id, SEL, id, id, id *))api.objc_msgSend)(o, s, a, b, c);
}
void mtl_void_bool(id o, SEL s, BOOL a) { ((void (*)(id, SEL, BOOL))api.objc_msgSend)(o, s, a); }
void mtl_void_langver(id o, SEL s, MTLLanguageVersion a) {
    ((void (*)(id, SEL, MTLLanguageVersion))api.objc_msgSend)(o, s, a);
}
void mtl_void_id(id o, SEL s, id a) { ((void (*)(id, SEL, id))api.objc_msgSend)(o, s, a); }
void mtl_void_id_uint_uint(id o, SEL s, id a, NSUInteger b, NSUInteger c) {
    ((void (*)(id, SEL, id, NSUInteger, NSUInteger))api.objc_msgSend)(o, s, a, b, c);
}
void mtl_void_bytes_uint_uint(id o, SEL s, const void *a, NSUInteger b, NSUInteger c) {
    ((void (*)(id, SEL, const void *, NSUInteger, NSUInteger))api.objc_msgSend)(o, s, a, b, c);
}
void mtl_void_size_size(id o, SEL s, MTLSize a, MTLSize b) {
    ((void (*)(id, SEL, MTLSize, MTLSize))api.objc_msgSend)(o, s, a, b);
}
void mtl_void_id_u64(id o, SEL s, id a, uint64_t b) { ((void (*)(id, SEL, id, uint64_t))api.objc_msgSend)(o, s, a, b); }
uint64_t mtl_u64(id o, SEL s) { return ((uint64_t(*)(id, SEL))api.objc_msgSend)(o, s); }
/* a double comes back in a floating-point register, where objc_msgSend leaves it on arm64 and
 * x86-64 alike (objc_msgSend_fpret is for long double on x86-64 only) */
double mtl_double(id o, SEL s) { return ((double (*)(id, SEL))api.objc_msgSend)(o, s); }

/* ---------------------------------------------------------------- load */
static void *open_lib(tk_config_id setting, const char *env, const char *path, const char *what) {
    char buf[TK_CONFIG_STR_MAX];
    const char *e = tk_config_str(setting, buf, sizeof buf);
    void *lib = tk_dl_open(e && *e ? e : path, 0);
    if (!lib) {
        if (e && *e) snprintf(load_why, sizeof load_why, "%s names %.200s, which cannot be loaded", env, e);
        else snprintf(load_why, sizeof load_why, "no Metal: %s (%s) could not be loaded (Metal is macOS's; set %s)",
                      what, path, env);
    }
    return lib;
}

static void load(void) {
    if (!(api.objc = open_lib(TK_CFG_METAL_OBJC_PATH, "TACK_METAL_OBJC_PATH", "/usr/lib/libobjc.A.dylib", "the Objective-C runtime")) ||
        !(api.metal = open_lib(TK_CFG_METAL_PATH, "TACK_METAL_PATH", "/System/Library/Frameworks/Metal.framework/Metal", "Metal")))
        return;
#define REQ(lib, what, field)                                                          \
    do {                                                                               \
        *(void **)&api.field = tk_dl_sym(api.lib, #field);                                 \
        if (!api.field) {                                                              \
            snprintf(load_why, sizeof load_why, "the %s lacks %s", what, #field);      \
            return;                                                                    \
        }                                                                              \
    } while (0)
    REQ(objc, "Objective-C runtime", objc_getClass);
    REQ(objc, "Objective-C runtime", sel_registerName);
    REQ(objc, "Objective-C runtime", objc_msgSend);
    REQ(metal, "Metal framework", MTLCreateSystemDefaultDevice);
#undef REQ
    *(void **)&api.objc_autoreleasePoolPush = tk_dl_sym(api.objc, "objc_autoreleasePoolPush");
    *(void **)&api.objc_autoreleasePoolPop = tk_dl_sym(api.objc, "objc_autoreleasePoolPop");
    if (!api.objc_autoreleasePoolPush || !api.objc_autoreleasePoolPop) api.objc_autoreleasePoolPush = NULL;
    *(void **)&api.MTLCopyAllDevices = tk_dl_sym(api.metal, "MTLCopyAllDevices");
    /* the one place selectors are registered: the table's */
    for (int i = 0; i < TK_SEL_COUNT; i++)
        if (!(metal_sels[i] = api.sel_registerName(sel_names[i]))) {
            snprintf(load_why, sizeof load_why, "the Objective-C runtime does not register selector %s", sel_names[i]);
            return;
        }
    load_ok = 1;
}

const tack_metal_api *metal_load(char *why, size_t why_len) {
    tk_once(&load_once, load);
    if (!load_ok) {
        if (why) snprintf(why, why_len, "%s", load_why);
        return NULL;
    }
    return &api;
}

void *metal_pool_push(const tack_metal_api *a) { return a->objc_autoreleasePoolPush ? a->objc_autoreleasePoolPush() : NULL; }

void metal_pool_pop(const tack_metal_api *a, void *pool) {
    if (pool) a->objc_autoreleasePoolPop(pool);
}

id metal_string(const tack_metal_api *a, const char *s) {
    id cls = a->objc_getClass("NSString");
    id o = cls ? mtl_id(cls, TK_S(alloc)) : NULL;
    return o ? mtl_id_cstr(o, TK_S(initWithUTF8String), s) : NULL; /* nil on failure: the alloc is freed */
}

void metal_error_text(id err, char *buf, size_t len) {
    id desc = err ? mtl_id(err, TK_S(localizedDescription)) : NULL;
    const char *s = desc ? mtl_cstr(desc, TK_S(UTF8String)) : NULL;
    snprintf(buf, len, "%s", s && *s ? s : "no description");
}

/* ------------------------------------------------------------- devices */
/* The devices found at the first probe: retained for the process. */
static id found[16];
static int nfound;

static int metal_device_count(char *why, size_t why_len) {
    if (!metal_load(why, why_len)) return 0;
    if (!nfound) {
        void *pool = metal_pool_push(&api);
        id all = api.MTLCopyAllDevices ? api.MTLCopyAllDevices() : NULL;
        if (all) {
            NSUInteger n = mtl_uint(all, TK_S(count));
            for (NSUInteger i = 0; i < n && nfound < 16; i++) {
                id dev = mtl_id_uint(all, TK_S(objectAtIndex), i);
                if (dev) found[nfound++] = mtl_id(dev, TK_S(retain));
            }
            mtl_void(all, TK_S(release));
        } else {
            id dev = api.MTLCreateSystemDefaultDevice();
            if (dev) found[nfound++] = dev;
        }
        metal_pool_pop(&api, pool);
    }
    if (!nfound) snprintf(why, why_len, "Metal finds no GPU (MTLCreateSystemDefaultDevice returned nil)");
    return nfound;
}

static tack_status metal_init_device(tack_device *d) {
    metal_dev *h = tack_calloc(1, sizeof *h);
    if (!h) return tack_set_error(TACK_ERR_NOMEM, "out of memory initializing a Metal device");
    void *pool = metal_pool_push(&api);
    h->api = &api;
    h->device = found[d->index];
    id name = mtl_id(h->device, TK_S(name));
    const char *s = name ? mtl_cstr(name, TK_S(UTF8String)) : NULL;
    snprintf(h->name, sizeof h->name, "%s", s ? s : "Metal GPU");
    h->max_buffer = mtl_uint(h->device, TK_S(maxBufferLength));
    h->own.queue = mtl_id(h->device, TK_S(newCommandQueue));
    h->own.owned = 1;
    if (h->own.queue)
        h->err = mtl_id_uint_opts(h->device, TK_S(newBufferWithLength_options), sizeof(gpu_err_record),
                                  TK_MTL_RESOURCE_STORAGE_SHARED);
    void *rec = h->err ? mtl_ptr(h->err, TK_S(contents)) : NULL;
    metal_pool_pop(&api, pool);
    if (!h->own.queue || !rec) {
        if (h->own.queue) mtl_void(h->own.queue, TK_S(release));
        if (h->err) mtl_void(h->err, TK_S(release));
        tack_status st = tack_set_error(TACK_ERR_DEVICE, "metal:%d (%s): Metal gives no command queue or error record",
                                        d->index, h->name);
        tack_free(h);
        return st;
    }
    memset(rec, 0, sizeof(gpu_err_record));
    tk_mutex_init(&h->lock);
    tk_mutex_init(&h->own.lock);
    tk_mutex_init(&h->streams_lock);
    gpu_records_init(&h->rec, "the GPU");
    d->host_memory = 1; /* shared storage: DLPack sees host memory */
    d->threads = 1;
    snprintf(d->description, sizeof d->description, "%.159s", h->name);
    d->state = h;
    return TACK_OK;
}

/* --------------------------------------------------------- buffer table */
/* With h->lock held: the index of the last buffer whose base <= p, or -1. */
static int find_at(metal_dev *h, const char *p) {
    int lo = 0, hi = h->nbufs - 1, at = -1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (h->bufs[mid]->base <= p) at = mid, lo = mid + 1;
        else hi = mid - 1;
    }
    return at;
}

static tack_status table_add(metal_dev *h, metal_buf *b) {
    tk_mutex_lock(&h->lock);
    if (h->nbufs == h->capbufs) {
        int cap = h->capbufs ? 2 * h->capbufs : 64;
        metal_buf **nb = tack_realloc(h->bufs, (size_t)cap * sizeof *nb);
        if (!nb) {
            tk_mutex_unlock(&h->lock);
            return tack_set_error(TACK_ERR_NOMEM, "out of memory recording a Metal buffer");
        }
        h->bufs = nb;
        h->capbufs = cap;
    }
    int at = find_at(h, b->base) + 1;
    memmove(h->bufs + at + 1, h->bufs + at, (size_t)(h->nbufs - at) * sizeof *h->bufs);
    h->bufs[at] = b;
    h->nbufs++;
    tk_mutex_unlock(&h->lock);
    return TACK_OK;
}

/* Drop one reference (h->lock held); the last one removes b, returned then. */
static metal_buf *table_unref(metal_dev *h, metal_buf *b) {
    if (--b->refs > 0) return NULL;
    for (int i = 0; i < h->nbufs; i++)
        if (h->bufs[i] == b) {
            memmove(h->bufs + i, h->bufs + i + 1, (size_t)(h->nbufs - i - 1) * sizeof *h->bufs);
            h->nbufs--;
            break;
        }
    return b;
}

id metal_buffer_of(metal_dev *h, const void *p, size_t *offset) {
    id buf = NULL;
    tk_mutex_lock(&h->lock);
    /* several buffers may share a base (a wrap of a buffer already known): any holds p */
    int at = find_at(h, p);
    if (at >= 0 && (const char *)p <= h->bufs[at]->base + h->bufs[at]->len) {
        buf = h->bufs[at]->buf;
        *offset = (size_t)((const char *)p - h->bufs[at]->base);
    }
    tk_mutex_unlock(&h->lock);
    return buf;
}

/* ---------------------------------------------------------------- memory */
static tack_status metal_alloc(tack_device *d, size_t nbytes, void **out) {
    metal_dev *h = d->state;
    size_t n = nbytes ? nbytes : 1;
    if (h->max_buffer && n > h->max_buffer)
        return tack_set_error(TACK_ERR_NOMEM, "%zu bytes is more than one Metal buffer holds on %s (%s): "
                              "maxBufferLength is %lu", n, d->name, h->name, (unsigned long)h->max_buffer);
    metal_buf *b = tack_calloc(1, sizeof *b);
    if (!b) return tack_set_error(TACK_ERR_NOMEM, "out of memory allocating a Metal buffer");
    b->buf = mtl_id_uint_opts(h->device, TK_S(newBufferWithLength_options), n, TK_MTL_RESOURCE_STORAGE_SHARED);
    b->base = b->buf ? mtl_ptr(b->buf, TK_S(contents)) : NULL;
    if (!b->base) {
        if (b->buf) mtl_void(b->buf, TK_S(release));
        tack_free(b);
        return tack_set_error(TACK_ERR_NOMEM, "out of device memory allocating %zu bytes on %s (newBufferWithLength)",
                              n, d->name);
    }
    b->len = n;
    b->refs = 1;
    b->dev = d;
    tack_status st = table_add(h, b);
    if (st != TACK_OK) {
        mtl_void(b->buf, TK_S(release));
        tack_free(b);
        return st;
    }
    *out = b->base;
    return TACK_OK;
}

static void metal_free(tack_device *d, void *ptr) {
    metal_dev *h = d->state;
    metal_buf *gone = NULL;
    if (!ptr) return;
    tk_mutex_lock(&h->lock);
    int at = find_at(h, ptr);
    if (at >= 0 && h->bufs[at]->base == (char *)ptr) gone = table_unref(h, h->bufs[at]);
    tk_mutex_unlock(&h->lock);
    /* a command buffer that uses it retains it until it completes */
    if (gone) mtl_void(gone->buf, TK_S(release));
    tack_free(gone);
}

/* ------------------------------------------------------ synchronization */
/* Release the oldest command buffers that have completed without error
 * (q->lock held), so that a program that launches without ever
 * synchronizing keeps a bounded list.  A failed one stops the pruning: it
 * stays to be reported. */
static void prune_pending(metal_q *q) {
    int done = 0;
    while (done < q->npending && mtl_cb_status(q->pending[done], TK_S(status)) == TK_MTL_CB_COMPLETED) done++;
    for (int i = 0; i < done; i++) mtl_void(q->pending[i], TK_S(release));
    memmove(q->pending, q->pending + done, (size_t)(q->npending - done) * sizeof *q->pending);
    q->npending -= done;
}

tack_status metal_q_add(tack_device *d, metal_q *q, id cb) {
    (void)d;
    tk_mutex_lock(&q->lock);
    if (q->npending >= METAL_PRUNE_AT) prune_pending(q);
    if (q->npending == q->cappending) {
        int cap = q->cappending ? 2 * q->cappending : 16;
        id *np = tack_realloc(q->pending, (size_t)cap * sizeof *np);
        if (!np) {
            tk_mutex_unlock(&q->lock);
            mtl_void(cb, TK_S(waitUntilCompleted));
            mtl_void(cb, TK_S(release));
            return tack_set_error(TACK_ERR_NOMEM, "out of memory queueing a Metal command buffer");
        }
        q->pending = np;
        q->cappending = cap;
    }
    q->pending[q->npending++] = cb;
    tk_mutex_unlock(&q->lock);
    return TACK_OK;
}

tack_status metal_q_wait(tack_device *d, metal_q *q) {
    metal_dev *h = d->state;
    tack_status st = TACK_OK;
    tk_mutex_lock(&q->lock);
    id *list = q->pending;
    int n = q->npending;
    q->pending = NULL;
    q->npending = q->cappending = 0;
    tk_mutex_unlock(&q->lock);
    void *pool = metal_pool_push(&api);
    for (int i = 0; i < n; i++) {
        mtl_void(list[i], TK_S(waitUntilCompleted));
        if (st == TACK_OK && mtl_cb_status(list[i], TK_S(status)) == TK_MTL_CB_ERROR) {
            char text[600];
            metal_error_text(mtl_id(list[i], TK_S(error)), text, sizeof text);
            st = tack_set_error(TACK_ERR_DEVICE, "a Metal command buffer failed on %s (%s): %s", d->name, h->name,
                                text);
        }
        mtl_void(list[i], TK_S(release));
    }
    metal_pool_pop(&api, pool);
    tack_free(list);
    return st;
}

tack_status metal_wait_all(tack_device *d) {
    metal_dev *h = d->state;
    tack_status st = metal_q_wait(d, &h->own);
    tk_mutex_lock(&h->streams_lock);
    for (metal_q *q = h->streams; q; q = q->next) {
        tack_status s2 = metal_q_wait(d, q);
        if (st == TACK_OK) st = s2;
        else if (s2 != TACK_OK) tack_clear_error(); /* the first failure is the one reported */
    }
    tk_mutex_unlock(&h->streams_lock);
    return st;
}

/* The device's queued work done, on its own queue and its streams', and a
 * failed check in it reported. */
static tack_status metal_synchronize(tack_device *d) {
    tack_status st = metal_wait_all(d);
    tack_status rst = metal_check_record(d);
    return st != TACK_OK ? st : rst;
}

/* Copies and fills are the host's, over shared storage, once the kernels
 * queued on the current stream (which runtime/stream.c has ordered after
 * the arrays' last streams) are done with it; a copy to the host is a
 * synchronization point. */
static tack_status metal_copy(tack_device *d, void *dst, const void *src, size_t n, rt_copy_kind kind) {
    metal_q *q = metal_cur(d);
    tack_status st = q ? metal_q_wait(d, q) : TACK_ERR_NOMEM;
    if (st != TACK_OK) return st;
    if (n) memmove(dst, src, n);
    return kind == RT_COPY_D2H ? metal_check_record(d) : TACK_OK;
}

static tack_status metal_fill(tack_device *d, void *dst, const void *value, size_t itemsize, size_t count) {
    metal_q *q = metal_cur(d);
    tack_status st = q ? metal_q_wait(d, q) : TACK_ERR_NOMEM;
    if (st != TACK_OK) return st;
    for (size_t i = 0; i < count; i++) memcpy((char *)dst + i * itemsize, value, itemsize);
    return TACK_OK;
}

/* An address given for a Metal array: Tack wraps MTLBuffers (wrap_handle),
 * not host addresses, and imports host memory only by copying. */
static tack_status metal_check_ptr(tack_device *d, const void *ptr, size_t nbytes) {
    (void)nbytes;
    return tack_set_error(TACK_ERR_BUFFER,
                          "Metal has no zero-copy import of host memory (address %p): a Metal array lives in an "
                          "MTLBuffer; copy it in (tack.from_dlpack(x, device=\"%s\", copy=True)) or wrap an MTLBuffer "
                          "with array_from_ptr",
                          ptr, d->name);
}

typedef struct wrap_ctx {
    metal_dev *h;
    metal_buf *b;
} wrap_ctx;

static void wrap_release(void *ctx) {
    wrap_ctx *w = ctx;
    tk_mutex_lock(&w->h->lock);
    metal_buf *gone = table_unref(w->h, w->b);
    tk_mutex_unlock(&w->h->lock);
    if (gone) mtl_void(gone->buf, TK_S(release));
    tack_free(gone);
    tack_free(w);
}

static tack_status metal_wrap_handle(tack_device *d, void *handle, size_t nbytes, void **data, tack_release_fn *release,
                                     void **ctx) {
    metal_dev *h = d->state;
    id buf = handle;
    tack_status st = TACK_OK;
    void *pool = metal_pool_push(&api);
    if (!mtl_bool_sel(buf, TK_S(respondsToSelector), TK_S(contents)) ||
        !mtl_bool_sel(buf, TK_S(respondsToSelector), TK_S(storageMode))) {
        st = tack_set_error(TACK_ERR_VALUE, "array_from_ptr on %s needs an MTLBuffer; object %p is not one", d->name,
                            handle);
        goto done;
    }
    MTLStorageMode mode = mtl_storage_mode(buf, TK_S(storageMode));
    NSUInteger len = mtl_uint(buf, TK_S(length));
    char *base = mtl_ptr(buf, TK_S(contents));
    if (mode != TK_MTL_STORAGE_SHARED || !base) {
        st = tack_set_error(TACK_ERR_VALUE,
                            "MTLBuffer %p has %s storage (MTLStorageMode %lu): Tack wraps MTLResourceStorageModeShared "
                            "buffers, which the host and the GPU both read without a copy",
                            handle, mode == TK_MTL_STORAGE_PRIVATE ? "private" : mode == TK_MTL_STORAGE_MANAGED ? "managed" : "other",
                            (unsigned long)mode);
        goto done;
    }
    if (len < nbytes) {
        st = tack_set_error(TACK_ERR_VALUE, "MTLBuffer %p holds %lu bytes; the shape and dtype need %zu", handle,
                            (unsigned long)len, nbytes);
        goto done;
    }
    wrap_ctx *w = tack_calloc(1, sizeof *w);
    metal_buf *b = NULL;
    if (!w) {
        st = tack_set_error(TACK_ERR_NOMEM, "out of memory wrapping an MTLBuffer");
        goto done;
    }
    tk_mutex_lock(&h->lock);
    for (int i = 0; i < h->nbufs && !b; i++)
        if (h->bufs[i]->buf == buf) b = h->bufs[i];
    if (b) b->refs++;
    tk_mutex_unlock(&h->lock);
    if (!b) {
        if (!(b = tack_calloc(1, sizeof *b))) {
            tack_free(w);
            st = tack_set_error(TACK_ERR_NOMEM, "out of memory wrapping an MTLBuffer");
            goto done;
        }
        b->buf = mtl_id(buf, TK_S(retain));
        b->base = base;
        b->len = len;
        b->refs = 1;
        b->dev = d;
        if ((st = table_add(h, b)) != TACK_OK) {
            mtl_void(buf, TK_S(release));
            tack_free(b);
            tack_free(w);
            goto done;
        }
    }
    w->h = h;
    w->b = b;
    *data = base;
    *release = wrap_release;
    *ctx = w;
done:
    metal_pool_pop(&api, pool);
    return st;
}

static const rt_backend metal_backend = {
    .name = "metal",
    .type = TACK_DEVICE_METAL,
    .dialect = "metal",
    .device_count = metal_device_count,
    .init_device = metal_init_device,
    .alloc = metal_alloc,
    .free = metal_free,
    .copy = metal_copy,
    .fill = metal_fill,
    .synchronize = metal_synchronize,
    .build = metal_build,
    .launch = metal_launch,
    .unload = metal_unload,
    .check_ptr = metal_check_ptr,
    .wrap_handle = metal_wrap_handle,
    .streams = &metal_stream_ops,
};

const rt_backend *rt_backend_metal(void) { return &metal_backend; }
