/*
 * array.c -- arrays and the storage they share.
 *
 * An array is a handle: dtype, shape, writable flag and a pointer into a
 * rt_storage.  Storage is the unit of ownership.  It is either allocated
 * by a backend (and freed through it) or borrowed from somebody else -- a
 * NumPy array, a DLPack managed tensor, a VTK array, a raw pointer -- and
 * then carries a release callback that libtack calls exactly once, when the
 * last handle using the storage is gone.  Both handles and storage are
 * reference counted with atomics: a DLPack consumer in another library may
 * drop the last reference on any thread.
 *
 * A strided view (a column, a transpose, a strided DLPack tensor) is a
 * handle with strides; strided.c makes it and answers its overlap
 * questions, the operations here that write or reshape in C order refuse
 * it, and a clone gathers its elements into a new C-order array.
 *
 * Shapes are validated here once (non-negative, at most TACK_MAX_NDIM axes,
 * element count and byte size without overflow), so every other layer can
 * trust size and nbytes.
 *
 * A caller that wraps memory for a moment, again and again -- the Python
 * extension borrows every NumPy array argument of a kernel call for that
 * call -- can keep the handle instead of freeing it: tack_array_recycle
 * releases the storage's owner as the last release would, but keeps the
 * handle and its storage block, emptied, when the caller's reference is
 * the only one; tack_array_rewrap fills them again through the same checks
 * as a wrap.  That saves the two allocations, the zeroing and the atomic
 * read-modify-writes of a wrap and its release.  Whether the reference is
 * the only one is read from the counts: a handle another holder retained
 * (a captured graph, a view's storage reference) is released, never
 * emptied, so no holder ever sees its array change under it.
 */
#include <string.h>

#include "runtime/runtime.h"

static tack_status check_shape(tack_dtype dt, int ndim, const int64_t *shape, int64_t *size_out,
                               size_t *nbytes_out) {
    const tack_dtype_info *info = tack_dtype_get(dt);
    if (!info)
        return tack_set_error(TACK_ERR_TYPE, "invalid dtype id %d", (int)dt);
    if (ndim < 0 || ndim > TACK_MAX_NDIM)
        return tack_set_error(TACK_ERR_VALUE, "arrays have 0 to %d dimensions, not %d", TACK_MAX_NDIM,
                              ndim);
    if (ndim > 0 && !shape)
        return tack_set_error(TACK_ERR_VALUE, "shape is NULL for a %d-dimensional array", ndim);
    /* The extents other than 0 must have a product whose bytes fit, as
     * NumPy asks: an empty array of shape (2**62, 0, 2**62) holds nothing,
     * but the strides computed from its shape would overflow. */
    uint64_t size = 1, span = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return tack_set_error(TACK_ERR_VALUE, "negative dimension %lld in axis %d of the shape",
                                  (long long)shape[i], i);
        if (__builtin_mul_overflow(span, (uint64_t)(shape[i] ? shape[i] : 1), &span) ||
            span > (uint64_t)INT64_MAX)
            return tack_set_error(TACK_ERR_VALUE,
                                  "shape is too large: the element count overflows at axis %d (%lld)", i,
                                  (long long)shape[i]);
        size *= (uint64_t)shape[i]; /* at most span */
    }
    size_t nbytes;
    if (span > SIZE_MAX || !rt_mul_overflow_size((size_t)span, info->itemsize, &nbytes) ||
        nbytes > (size_t)INT64_MAX)
        return size == span ? tack_set_error(TACK_ERR_VALUE, "shape is too large: %llu elements of %zu bytes overflow",
                                             (unsigned long long)span, info->itemsize)
                            : tack_set_error(TACK_ERR_VALUE,
                                             "shape is too large: its extents other than 0 multiply to %llu, "
                                             "and as many elements of %zu bytes overflow",
                                             (unsigned long long)span, info->itemsize);
    nbytes = (size_t)size * info->itemsize; /* at most the span's */
    *size_out = (int64_t)size;
    *nbytes_out = nbytes;
    return TACK_OK;
}

static tack_array *new_handle(rt_storage *s, tack_dtype dt, int ndim, const int64_t *shape,
                              int64_t size, size_t nbytes, int writable) {
    tack_array *a = tack_malloc(sizeof *a);
    if (!a) {
        tack_set_error(TACK_ERR_NOMEM, "out of memory allocating an array handle");
        return NULL;
    }
    memset(a, 0, sizeof *a);
    atomic_init(&a->refs, 1);
    a->storage = s;
    a->data = s->data;
    a->dtype = dt;
    a->ndim = ndim;
    a->writable = writable;
    for (int i = 0; i < ndim; i++)
        a->shape[i] = shape[i];
    a->size = size;
    a->nbytes = nbytes;
    return a;
}

static void storage_release(rt_storage *s) {
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (atomic_load_explicit(&s->last, memory_order_acquire)) /* a plain load: borrowed NumPy storage goes at every call */
        rt_storage_settle(s); /* freed after the last work that used it, on whichever stream (stream.c) */
    if (s->owned)
        s->device->backend->free(s->device, s->data);
    else if (s->release)
        s->release(s->release_ctx);
    tack_free(s);
}

/* A new handle on a's storage (one more reference to it) whose first element is at `data`;
 * NULL, holding nothing, when out of memory (the error set). */
static tack_array *share_storage(tack_array *a, tack_dtype dt, int ndim, const int64_t *shape, int64_t size,
                                 size_t nbytes, int writable, void *data) {
    atomic_fetch_add(&a->storage->refs, 1);
    tack_array *v = new_handle(a->storage, dt, ndim, shape, size, nbytes, writable);
    if (!v) {
        storage_release(a->storage);
        return NULL;
    }
    v->data = data;
    return v;
}

static tack_status alloc_array(tack_device *dev, tack_dtype dt, int ndim, const int64_t *shape,
                               int zero, tack_array **out) {
    int64_t size;
    size_t nbytes;
    tack_status st;
    if (!dev)
        dev = rt_default_cpu();
    if ((st = check_shape(dt, ndim, shape, &size, &nbytes)) != TACK_OK)
        return st;
    rt_storage *s = tack_malloc(sizeof *s);
    if (!s)
        return tack_set_error(TACK_ERR_NOMEM, "out of memory allocating array storage");
    memset(s, 0, sizeof *s);
    atomic_init(&s->refs, 1);
    s->device = dev;
    s->nbytes = nbytes;
    s->writable = 1;
    s->owned = 1;
    if ((st = dev->backend->alloc(dev, nbytes, &s->data)) != TACK_OK) {
        tack_free(s);
        return st;
    }
    if (zero && nbytes) {
        unsigned char z = 0;
        /* during a capture (graph.c) the zeros are written now, on the device's own stream, not captured */
        tack_stream *cur = rt_captured(rt_stream_now(dev)) ? tack_stream_use(NULL) : NULL;
        if ((st = rt_storage_use(s)) == TACK_OK) st = dev->backend->fill(dev, s->data, &z, 1, nbytes);
        if (cur) tack_stream_use(cur);
        if (st != TACK_OK) {
            storage_release(s);
            return st;
        }
    }
    tack_array *a = new_handle(s, dt, ndim, shape, size, nbytes, 1);
    if (!a) {
        storage_release(s);
        return TACK_ERR_NOMEM;
    }
    *out = a;
    return TACK_OK;
}

tack_status tack_array_empty(tack_device *dev, tack_dtype dt, int ndim, const int64_t *shape,
                             tack_array **out) {
    return alloc_array(dev, dt, ndim, shape, 0, out);
}

tack_status tack_array_zeros(tack_device *dev, tack_dtype dt, int ndim, const int64_t *shape,
                             tack_array **out) {
    return alloc_array(dev, dt, ndim, shape, 1, out);
}

/* Whether `data` is off a multiple of `alignment` (a power of two for every dtype: a mask,
 * not the division that was a third of a wrap's time). */
static int misaligned(const void *data, size_t alignment) {
    uintptr_t p = (uintptr_t)data;
    return (alignment & (alignment - 1)) == 0 ? (p & (alignment - 1)) != 0 : p % alignment != 0;
}

/* An emptied array (tack_array_recycle) filled as wrap_span fills a new one: every field the
 * new handle and storage would have (the handle's are those of new_handle's zeroed block). */
static void refill(tack_array *a, tack_device *dev, tack_dtype dt, int ndim, const int64_t *shape, int64_t size,
                   size_t nbytes, void *data, void *first, size_t span, int writable, tack_release_fn release,
                   void *ctx) {
    rt_storage *s = a->storage;
    s->device = dev;
    s->data = first;
    s->nbytes = span;
    s->writable = writable;
    s->release = release;
    s->release_ctx = ctx;
    s->emptied = 0;
    /* the caller alone holds it: plain stores, published with the pointer as any new array is */
    if (atomic_load_explicit(&s->flags, memory_order_relaxed) != TACK_ARRAY_SHARED)
        atomic_store_explicit(&s->flags, TACK_ARRAY_SHARED, memory_order_relaxed);
    a->data = data;
    a->dtype = dt;
    a->ndim = ndim;
    a->writable = writable;
    for (int i = 0; i < TACK_MAX_NDIM; i++)
        a->shape[i] = i < ndim ? shape[i] : 0;
    a->size = size;
    a->nbytes = nbytes;
}

/* A wrapped backend object's release, then its owner's (wrap_handle). */
typedef struct wrap_chain {
    tack_release_fn be, user;
    void *be_ctx, *user_ctx;
} wrap_chain;

static void chain_release(void *p) {
    wrap_chain *c = p;
    c->be(c->be_ctx);
    if (c->user)
        c->user(c->user_ctx);
    tack_free(c);
}

/* The storage of a wrapped array is the bytes its elements reach: from
 * element (0, ..., 0)'s address `data` plus `lo` (a strided view with a
 * negative stride reaches below it), `span` bytes (SIZE_MAX: C order's
 * size * itemsize).  Those are the bytes the device's check_ptr is asked
 * about and a later view of the array must stay within (strided.c). */
static tack_status wrap_span(tack_array *into, tack_device *dev, tack_dtype dt, int ndim, const int64_t *shape,
                             void *data, int64_t lo, size_t span, int writable, tack_release_fn release, void *ctx,
                             tack_array **out) {
    int64_t size;
    size_t nbytes;
    tack_status st;
    if (!dev)
        dev = rt_default_cpu();
    if ((st = check_shape(dt, ndim, shape, &size, &nbytes)) != TACK_OK)
        goto fail;
    if (span == SIZE_MAX || !data || !nbytes) {
        span = nbytes;
        lo = 0;
    }
    const tack_dtype_info *info = tack_dtype_get(dt);
    if (nbytes > 0 && !data) {
        st = tack_set_error(TACK_ERR_VALUE, "NULL data pointer for a non-empty array of %lld elements",
                            (long long)size);
        goto fail;
    }
    if (data && dev->backend->wrap_handle) {
        /* `data` is an object of the backend's API (an MTLBuffer): its address, and a reference to it */
        wrap_chain *c = tack_calloc(1, sizeof *c);
        if (!c) {
            st = tack_set_error(TACK_ERR_NOMEM, "out of memory wrapping storage");
            goto fail;
        }
        if ((st = dev->backend->wrap_handle(dev, data, span, &data, &c->be, &c->be_ctx)) != TACK_OK) {
            tack_free(c);
            goto fail;
        }
        c->user = release;
        c->user_ctx = ctx;
        release = chain_release;
        ctx = c;
    }
    if (misaligned(data, info->alignment)) {
        st = tack_set_error(TACK_ERR_VALUE,
                            "address 0x%llx is not aligned for dtype %s: it needs %zu-byte alignment",
                            (unsigned long long)(uintptr_t)data, info->name, info->alignment);
        goto fail;
    }
    /* An extent that runs past the top of the address space wraps to low
     * memory: data + nbytes would compare below data, and every bound
     * computed from it would be wrong. */
    char *first = (char *)((uintptr_t)data + (uintptr_t)lo); /* the lowest byte (the caller checked that it does not wrap;
                                                               integers: a pointer may not step to NULL) */
    if (data && span > 0 && span - 1 > UINTPTR_MAX - (uintptr_t)first) {
        st = tack_set_error(TACK_ERR_VALUE,
                            "address 0x%llx with %zu bytes runs past the end of the address space",
                            (unsigned long long)(uintptr_t)first, span);
        goto fail;
    }
    if (data && dev->backend->check_ptr && !dev->backend->wrap_handle &&
        (st = dev->backend->check_ptr(dev, first, span)) != TACK_OK)
        goto fail;
    if (into) { /* tack_array_rewrap: the emptied handle and storage, held by the caller alone */
        refill(into, dev, dt, ndim, shape, size, nbytes, data, data ? first : NULL, span, writable != 0, release, ctx);
        *out = into;
        return TACK_OK;
    }
    rt_storage *s = tack_malloc(sizeof *s);
    if (!s) {
        st = tack_set_error(TACK_ERR_NOMEM, "out of memory allocating array storage");
        goto fail;
    }
    memset(s, 0, sizeof *s);
    atomic_init(&s->refs, 1);
    s->device = dev;
    s->data = data ? first : NULL;
    s->nbytes = span;
    s->writable = writable != 0;
    s->release = release;
    s->release_ctx = ctx;
    tack_array *a = new_handle(s, dt, ndim, shape, size, nbytes, writable != 0);
    if (!a) {
        storage_release(s); /* runs release(ctx) */
        return TACK_ERR_NOMEM;
    }
    a->data = data;
    atomic_store(&s->flags, TACK_ARRAY_SHARED);
    *out = a;
    return TACK_OK;
fail:
    if (release)
        release(ctx);
    return st;
}

tack_status rt_wrap_span(tack_device *dev, tack_dtype dt, int ndim, const int64_t *shape, void *data, int64_t lo,
                         size_t span, int writable, tack_release_fn release, void *ctx, tack_array **out) {
    return wrap_span(NULL, dev, dt, ndim, shape, data, lo, span, writable, release, ctx, out);
}

tack_status tack_array_wrap(tack_device *dev, tack_dtype dt, int ndim, const int64_t *shape, void *data,
                            int writable, tack_release_fn release, void *ctx, tack_array **out) {
    return wrap_span(NULL, dev, dt, ndim, shape, data, 0, SIZE_MAX, writable, release, ctx, out);
}

/* Whether the caller's reference to `a` is the only one and `a` alone uses its borrowed storage.
 * Acquire loads: another holder's last release (acq_rel) happens before what the caller does next,
 * as in storage_release.  Nobody can take a new reference meanwhile: that needs one already. */
static int held_alone(const tack_array *a) {
    const rt_storage *s = a->storage;
    return atomic_load_explicit(&a->refs, memory_order_acquire) == 1 &&
           atomic_load_explicit(&s->refs, memory_order_acquire) == 1 && !s->owned;
}

int tack_array_recycle(tack_array *a, tack_release_fn *release_out, void **ctx_out) {
    if (release_out && ctx_out) {
        *release_out = NULL;
        *ctx_out = NULL;
    }
    if (!a)
        return 0;
    if (!held_alone(a)) {
        tack_array_release(a);
        return 0;
    }
    rt_storage *s = a->storage;
    if (s->emptied)
        return 1;
    /* what storage_release does before it frees: settle the last stream's work, then release the owner */
    if (atomic_load_explicit(&s->last, memory_order_acquire))
        rt_storage_settle(s);
    tack_release_fn release = s->release;
    void *ctx = s->release_ctx;
    s->release = NULL;
    s->release_ctx = NULL;
    s->data = NULL;
    s->nbytes = 0;
    s->writable = 0;
    s->emptied = 1;
    /* an empty 1-d array that borrows nothing: whatever reads it meanwhile reads no memory; the
     * fields a new handle has zeroed are zero again (refill sets the rest) */
    for (int i = 0; i < a->ndim; i++)
        a->shape[i] = 0;
    a->data = NULL;
    a->ndim = 1;
    a->size = 0;
    a->nbytes = 0;
    a->writable = 0;
    if (a->strided) {
        a->strided = 0;
        memset(a->strides, 0, sizeof a->strides);
    }
    a->offset = 0;
    if (release_out && ctx_out) { /* the caller runs it */
        *release_out = release;
        *ctx_out = ctx;
    } else if (release) {
        release(ctx);
    }
    return 1;
}

tack_status tack_array_rewrap(tack_array *a, tack_device *dev, tack_dtype dt, int ndim, const int64_t *shape,
                              void *data, int writable, tack_release_fn release, void *ctx) {
    if (!a || !held_alone(a) || !a->storage->emptied) {
        tack_status st = tack_set_error(TACK_ERR_VALUE, "tack_array_rewrap: the array is not one emptied by "
                                                         "tack_array_recycle and held by the caller alone");
        if (release)
            release(ctx);
        return st;
    }
    tack_array *out = NULL;
    return wrap_span(a, dev, dt, ndim, shape, data, 0, SIZE_MAX, writable, release, ctx, &out);
}

tack_status tack_array_view(tack_array *a, int writable, tack_array **out) {
    if (writable && !a->storage->writable)
        return tack_set_error(TACK_ERR_READONLY, "cannot make a writable view of read-only storage");
    tack_array *v = share_storage(a, a->dtype, a->ndim, a->shape, a->size, a->nbytes, writable != 0, a->data);
    if (!v)
        return TACK_ERR_NOMEM;
    v->strided = a->strided;
    memcpy(v->strides, a->strides, sizeof v->strides);
    v->offset = a->offset;
    *out = v;
    return TACK_OK;
}

tack_status tack_array_reshape(tack_array *a, tack_dtype dt, int ndim, const int64_t *shape,
                               tack_array **out) {
    int64_t size;
    size_t nbytes;
    tack_status st;
    if ((st = rt_refuse_strided(a, "reshape")) != TACK_OK || (st = check_shape(dt, ndim, shape, &size, &nbytes)) != TACK_OK)
        return st;
    if (nbytes != a->nbytes)
        return tack_set_error(TACK_ERR_VALUE, "cannot reshape an array of %zu bytes into %zu bytes",
                              a->nbytes, nbytes);
    if ((uintptr_t)a->data % tack_dtype_get(dt)->alignment != 0)
        return tack_set_error(TACK_ERR_VALUE, "storage is not aligned for dtype %s",
                              tack_dtype_get(dt)->name);
    tack_array *v = share_storage(a, dt, ndim, shape, size, nbytes, a->writable, a->data);
    if (!v)
        return TACK_ERR_NOMEM;
    *out = v;
    return TACK_OK;
}

tack_status tack_array_subview(tack_array *a, int64_t start, int ndim, const int64_t *shape,
                               tack_array **out) {
    int64_t size;
    size_t nbytes;
    tack_status st;
    if ((st = rt_refuse_strided(a, "subview")) != TACK_OK || (st = check_shape(a->dtype, ndim, shape, &size, &nbytes)) != TACK_OK)
        return st;
    if (start < 0 || start > a->size || size > a->size - start)
        return tack_set_error(TACK_ERR_VALUE,
                              "a view of %lld elements from element %lld does not fit in an array of %lld",
                              (long long)size, (long long)start, (long long)a->size);
    tack_device *dev = a->storage->device;
    if (start > 0 && size > 0 && dev->backend->type == TACK_DEVICE_OPENCL)
        return tack_set_error(TACK_ERR_VALUE,
                              "an array on %s cannot have a view starting inside it (OpenCL buffers have no "
                              "addresses to offset); copy it with .numpy() or use a kernel",
                              tack_device_name(dev));
    /* An empty view keeps the base address: nothing is read through it. */
    void *data = size > 0 ? (char *)a->data + (size_t)start * tack_dtype_get(a->dtype)->itemsize : a->data;
    tack_array *v = share_storage(a, a->dtype, ndim, shape, size, nbytes, a->writable, data);
    if (!v)
        return TACK_ERR_NOMEM;
    *out = v;
    return TACK_OK;
}

void tack_array_retain(tack_array *a) {
    if (a)
        atomic_fetch_add_explicit(&a->refs, 1, memory_order_relaxed);
}

void tack_array_release(tack_array *a) {
    if (!a || atomic_fetch_sub_explicit(&a->refs, 1, memory_order_acq_rel) != 1)
        return;
    storage_release(a->storage);
    tack_free(a);
}

void *tack_array_data(const tack_array *a) { return a->data; }
tack_dtype tack_array_dtype(const tack_array *a) { return a->dtype; }
int tack_array_ndim(const tack_array *a) { return a->ndim; }
const int64_t *tack_array_shape(const tack_array *a) { return a->shape; }
int64_t tack_array_size(const tack_array *a) { return a->size; }
size_t tack_array_nbytes(const tack_array *a) { return a->nbytes; }
int tack_arrays_overlap(const tack_array *a, const tack_array *b) {
    if (!a || !b || !a->nbytes || !b->nbytes || a->storage->device != b->storage->device) return 0;
    if (a->storage != b->storage && a->storage->device->opaque_data) return 0; /* two cl_mem buffers */
    if (a->strided || b->strided) return rt_strided_overlap(a, b);
    uintptr_t a0 = (uintptr_t)a->data, b0 = (uintptr_t)b->data;
    return a0 < b0 + b->nbytes && b0 < a0 + a->nbytes;
}
int tack_array_writable(const tack_array *a) { return a->writable; }
tack_device *tack_array_device(const tack_array *a) { return a->storage->device; }
/* The flags live on the storage: every view of an exported array is shared too. */
unsigned tack_array_flags(const tack_array *a) { return atomic_load(&a->storage->flags); }
void tack_array_set_flags(tack_array *a, unsigned flags) { atomic_store(&a->storage->flags, flags); }

static tack_status check_bytes(const tack_array *a, size_t nbytes, const char *what) {
    if (nbytes != a->nbytes)
        return tack_set_error(TACK_ERR_VALUE, "%s: the host buffer has %zu bytes, the array %zu", what,
                              nbytes, a->nbytes);
    return TACK_OK;
}

static tack_status check_writable(const tack_array *a) {
    if (!a->writable)
        return tack_set_error(TACK_ERR_READONLY, "assignment destination is read-only");
    return TACK_OK;
}

tack_status tack_array_copy_from_host(tack_array *dst, const void *src, size_t nbytes) {
    tack_status st;
    if ((st = check_writable(dst)) != TACK_OK || (st = check_bytes(dst, nbytes, "copy to array")) != TACK_OK)
        return st;
    if (dst->strided) return rt_strided_from_host(dst, src); /* scattered (strided.c) */
    tack_device *d = dst->storage->device;
    if ((st = rt_capture_refuse(d, "copying host data into an array")) != TACK_OK) return st; /* graph.c */
    if ((st = rt_storage_use(dst->storage)) != TACK_OK) return st;
    return d->backend->copy(d, dst->data, src, nbytes, RT_COPY_H2D);
}

tack_status tack_array_copy_to_host(const tack_array *src, void *dst, size_t nbytes) {
    tack_status st;
    if ((st = check_bytes(src, nbytes, "copy from array")) != TACK_OK)
        return st;
    if (src->strided) return rt_strided_to_host(src, dst); /* gathered (strided.c) */
    tack_device *d = src->storage->device;
    if ((st = rt_capture_refuse(d, "reading an array on the host")) != TACK_OK) return st; /* graph.c */
    if ((st = rt_storage_use(src->storage)) != TACK_OK) return st;
    return d->backend->copy(d, dst, src->data, nbytes, RT_COPY_D2H);
}

/* On a device whose memory is the host's (OpenCL's fine-grained SVM), the
 * host reads and writes shared storage directly, with no copy to wait on:
 * a queued fill or copy touching it is finished before the call returns,
 * as a launch using it is ("When a call returns"). */
static tack_status settle_shared(tack_device *d, const tack_array *a, const tack_array *b) {
    if (!d->host_memory || !((tack_array_flags(a) | (b ? tack_array_flags(b) : 0)) & TACK_ARRAY_SHARED))
        return TACK_OK;
    return tack_device_synchronize(d);
}

/* src's bytes into dst through a host buffer: out of a device (sd) and into one (dd), the two
 * accelerators of a copy between devices, or one device whose source and destination overlap. */
static tack_status stage_through_host(tack_device *sd, tack_device *dd, tack_array *dst, const tack_array *src,
                                      const char *what) {
    void *tmp = tack_malloc(src->nbytes);
    if (!tmp)
        return tack_set_error(TACK_ERR_NOMEM, "out of memory staging a %zu-byte %s", src->nbytes, what);
    tack_status st = sd->backend->copy(sd, tmp, src->data, src->nbytes, RT_COPY_D2H);
    if (st == TACK_OK)
        st = dd->backend->copy(dd, dst->data, tmp, src->nbytes, RT_COPY_H2D);
    tack_free(tmp);
    return st;
}

tack_status tack_array_copy(tack_array *dst, const tack_array *src) {
    tack_status st;
    if ((st = rt_refuse_strided(dst, "copy")) != TACK_OK || (st = rt_refuse_strided(src, "copy")) != TACK_OK ||
        (st = check_writable(dst)) != TACK_OK)
        return st;
    if (dst->dtype != src->dtype || dst->size != src->size)
        return tack_set_error(TACK_ERR_VALUE,
                              "cannot copy %lld elements of %s into %lld elements of %s",
                              (long long)src->size, tack_dtype_get(src->dtype)->name, (long long)dst->size,
                              tack_dtype_get(dst->dtype)->name);
    tack_device *dd = dst->storage->device, *sd = src->storage->device;
    /* Two views of one storage whose bytes overlap (copyto(a[1:], a[:-1])):
     * the devices' own copies are memcpy's (OpenCL refuses them with
     * CL_MEM_COPY_OVERLAP, CUDA leaves them undefined), so the source is
     * staged through the host first, as memmove would. */
    int overlap = dst->storage == src->storage && src->nbytes > 0 &&
                  (uintptr_t)dst->data < (uintptr_t)src->data + src->nbytes &&
                  (uintptr_t)src->data < (uintptr_t)dst->data + src->nbytes;
    if (overlap && dst->data == src->data)
        return TACK_OK; /* the same bytes: nothing to move */
    /* during a capture (graph.c): a copy within the device is captured, one through the host refused */
    tack_stream *cur = rt_stream_now(dd);
    if (overlap && (st = rt_capture_refuse(dd, "copying between overlapping views of one array")) != TACK_OK)
        return st;
    if (dd == sd && rt_captured(cur)) return rt_capture_copy(cur, dst, src);
    if ((st = rt_capture_refuse(dd, "copying an array from another device")) != TACK_OK ||
        (st = rt_capture_refuse(sd, "copying an array to another device")) != TACK_OK)
        return st;
    if ((st = rt_storage_use(dst->storage)) != TACK_OK || (st = rt_storage_use(src->storage)) != TACK_OK) return st;
    if (overlap) {
        st = stage_through_host(dd, dd, dst, src, "overlapping copy");
        return st == TACK_OK ? settle_shared(dd, dst, src) : st;
    }
    if (dd == sd) {
        st = dd->backend->copy(dd, dst->data, src->data, src->nbytes, RT_COPY_D2D);
        return st == TACK_OK ? settle_shared(dd, dst, src) : st;
    }
    if (sd->backend->type == TACK_DEVICE_CPU)
        return dd->backend->copy(dd, dst->data, src->data, src->nbytes, RT_COPY_H2D);
    if (dd->backend->type == TACK_DEVICE_CPU)
        return sd->backend->copy(sd, dst->data, src->data, src->nbytes, RT_COPY_D2H);
    return stage_through_host(sd, dd, dst, src, "copy"); /* between two accelerators */
}

tack_status tack_array_fill(tack_array *a, const void *value) {
    tack_status st;
    if ((st = rt_refuse_strided(a, "fill")) != TACK_OK || (st = check_writable(a)) != TACK_OK)
        return st;
    tack_device *d = a->storage->device;
    tack_stream *cur = rt_stream_now(d);
    if (rt_captured(cur)) return rt_capture_fill(cur, a, value); /* graph.c */
    if ((st = rt_storage_use(a->storage)) != TACK_OK) return st;
    st = d->backend->fill(d, a->data, value, tack_dtype_get(a->dtype)->itemsize, (size_t)a->size);
    return st == TACK_OK ? settle_shared(d, a, NULL) : st;
}

/* A strided view's elements, gathered in C order on the host (strided.c),
 * into the new array c: in place on the CPU, else staged and copied over. */
static tack_status gather_into(tack_array *c, const tack_array *a) {
    tack_device *d = c->storage->device;
    if (d->backend->type == TACK_DEVICE_CPU)
        return rt_strided_to_host(a, c->data);
    void *tmp = tack_malloc(c->nbytes ? c->nbytes : 1);
    if (!tmp)
        return tack_set_error(TACK_ERR_NOMEM, "out of memory staging a %zu-byte copy of a strided view", c->nbytes);
    tack_status st = rt_strided_to_host(a, tmp);
    if (st == TACK_OK && c->nbytes)
        st = d->backend->copy(d, c->data, tmp, c->nbytes, RT_COPY_H2D);
    tack_free(tmp);
    return st;
}

tack_status tack_array_clone(const tack_array *a, tack_device *dev, tack_array **out) {
    tack_array *c = NULL;
    tack_status st = tack_array_empty(dev ? dev : a->storage->device, a->dtype, a->ndim, a->shape, &c);
    if (st != TACK_OK)
        return st;
    if ((st = a->strided ? gather_into(c, a) : tack_array_copy(c, a)) != TACK_OK) {
        tack_array_release(c);
        return st;
    }
    *out = c;
    return TACK_OK;
}
