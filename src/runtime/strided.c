/*
 * strided.c -- strided views as kernel arguments, on every device.
 *
 * Tack's arrays are C-contiguous.  A kernel may still be handed a view
 * whose elements are not packed in C order -- a NumPy column m[:, 0], a
 * reversed a[::-1], a transpose, a broadcast, a strided PyTorch or CuPy
 * tensor, or the same views of a Tack array on any device (tack.Array
 * indexing and .T make them with tack_array_as_strided, tack.from_dlpack
 * with tack_array_wrap_strided) -- and read and write it in place.  Such an
 * array is an ordinary tack_array handle with `strided` set and one stride
 * per axis, in elements and of any sign, from element (0, ..., 0): its
 * address, or on a device whose data are handles (OpenCL cl_mem buffers,
 * which the host cannot offset) the buffer and an element `offset` the
 * kernel adds itself.  The operations that write or reshape in C order
 * (a device-to-device copy into it, fill, reshape, subviews) refuse it
 * (rt_refuse_strided); copying it to the host or cloning it gathers its
 * elements (rt_strided_to_host), copying host values into it scatters them
 * (rt_strided_from_host: tack.copyto into a[::2] or m.T), and a DLPack
 * export carries its strides (for a
 * buffer and an offset: the buffer and a byte_offset, as DLPack describes
 * OpenCL memory).  The compiler gives the kernel a version that indexes
 * with the strides (the argument signature's `strided` bit), so a
 * contiguous call keeps its code, on the CPU and in every GPU dialect.
 *
 * Two questions about memory need answers that hold for strides:
 *
 *   - do two arguments share a byte (tack_arrays_overlap: restrict builds
 *     and the race check of program.c)?  First the byte ranges the arrays
 *     span; where those meet, every byte of an array lies at its address
 *     plus a multiple of g, the greatest common divisor of both arrays'
 *     byte strides, plus less than an itemsize -- so two arrays whose
 *     residues modulo g do not meet are apart (m[:, 0] and m[:, 1] of a
 *     C-order matrix: g is the row's bytes, the residues 0..7 and 8..15;
 *     innermost axes that run on contiguously count as one block, so two
 *     fields of a record array, each with its components, are apart).
 *     Anything else is called an overlap: conservative, never a false
 *     "apart".
 *   - do two elements of one array share a byte (a zero stride, as
 *     np.broadcast_to gives, or strides that interleave)?  With the axes
 *     sorted by stride, each axis's stride must reach past everything the
 *     smaller ones span; otherwise the array may be read but not written
 *     (tack_launch refuses a written one: parallel iterations would write
 *     one element from several).
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

tack_status rt_refuse_strided(const tack_array *a, const char *what) {
    if (!a->strided)
        return TACK_OK;
    return tack_set_error(TACK_ERR_BUFFER,
                          "%s: the array is a strided view (a step, a column, a transpose), which kernels "
                          "read and write in place but which has no C-order storage of its own; pass it to a "
                          "kernel, or work on a contiguous copy (a.copy(), or a.numpy() on the host)",
                          what);
}

/* The byte strides of `a` along its axes of extent over 1, into s; their count. */
static int byte_strides(const tack_array *a, int64_t *s) {
    int64_t isz = (int64_t)tack_dtype_get(a->dtype)->itemsize, c = isz;
    int n = 0;
    for (int k = a->ndim - 1; k >= 0; k--) {
        int64_t st = a->strided ? a->strides[k] * isz : c;
        if (a->shape[k] > 1)
            s[n++] = st;
        c *= a->shape[k];
    }
    return n;
}

/* Like byte_strides, with the innermost axes that continue one another
 * contiguously (each stride the bytes of everything inside it) merged into
 * one block of *block bytes: every byte of `a` lies at its address plus a
 * sum of the remaining strides, plus less than *block.  A field of a record
 * array seen with its components ((n, 3) floats, 40 bytes apart) is one
 * 12-byte block every 40 bytes, which the residue test below can tell from
 * the next field's. */
static int byte_blocks(const tack_array *a, int64_t *s, int64_t *block) {
    int64_t isz = (int64_t)tack_dtype_get(a->dtype)->itemsize, c = isz;
    int n = 0, inner = 1;
    *block = isz;
    for (int k = a->ndim - 1; k >= 0; k--) {
        int64_t st = a->strided ? a->strides[k] * isz : c;
        if (a->shape[k] > 1) {
            if (inner && st == *block)
                *block *= a->shape[k];
            else {
                inner = 0;
                s[n++] = st;
            }
        }
        c *= a->shape[k];
    }
    return n;
}

/* The bytes a non-empty `a` spans, relative to its data address: [*lo, *hi). */
static void byte_span(const tack_array *a, int64_t *lo, int64_t *hi) {
    int64_t s[TACK_MAX_NDIM], ext[TACK_MAX_NDIM];
    int n = 0;
    for (int k = a->ndim - 1; k >= 0; k--)
        if (a->shape[k] > 1)
            ext[n++] = a->shape[k];
    byte_strides(a, s);
    *lo = 0;
    *hi = (int64_t)tack_dtype_get(a->dtype)->itemsize;
    for (int i = 0; i < n; i++) {
        int64_t d = s[i] * (ext[i] - 1); /* checked not to overflow when the view was made */
        if (d < 0)
            *lo += d;
        else
            *hi += d;
    }
}

static int64_t gcd64(int64_t a, int64_t b) {
    a = a < 0 ? -a : a;
    b = b < 0 ? -b : b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

int rt_strided_overlap(const tack_array *a, const tack_array *b) {
    if (!a->size || !b->size)
        return 0;
    int64_t alo, ahi, blo, bhi;
    byte_span(a, &alo, &ahi);
    byte_span(b, &blo, &bhi);
    /* element (0, ..., 0)'s address (on a handle's device: within one buffer, the handle's plus its offset) */
    intptr_t a0 = (intptr_t)a->data + (intptr_t)(a->offset * (int64_t)tack_dtype_get(a->dtype)->itemsize);
    intptr_t b0 = (intptr_t)b->data + (intptr_t)(b->offset * (int64_t)tack_dtype_get(b->dtype)->itemsize);
    if (a0 + ahi <= b0 + blo || b0 + bhi <= a0 + alo)
        return 0;
    int64_t s[2 * TACK_MAX_NDIM], g = 0, ia, ib;
    int n = byte_blocks(a, s, &ia);
    n += byte_blocks(b, s + n, &ib);
    for (int i = 0; i < n; i++)
        g = gcd64(g, s[i]);
    if (g == 0 || ia >= g || ib >= g)
        return 1;
    /* b's first byte, from a's, mod g: a signed remainder made non-negative (an unsigned one of a
     * negative difference is taken mod 2**64 first, which g need not divide) */
    int64_t d = (int64_t)(b0 - a0) % g;
    if (d < 0)
        d += g;
    return d < ia || d + ib > g;
}

static int by_magnitude(const void *x, const void *y) {
    int64_t a = llabs(((const int64_t *)x)[0]), b = llabs(((const int64_t *)y)[0]);
    return a < b ? -1 : a > b;
}

int tack_array_self_overlaps(const tack_array *a) {
    if (!a || !a->strided || a->size <= 1)
        return 0;
    int64_t ax[TACK_MAX_NDIM][2]; /* (byte stride, extent) of the axes of extent over 1 */
    int n = 0;
    int64_t isz = (int64_t)tack_dtype_get(a->dtype)->itemsize;
    for (int k = 0; k < a->ndim; k++)
        if (a->shape[k] > 1) {
            ax[n][0] = a->strides[k] * isz;
            ax[n++][1] = a->shape[k];
        }
    qsort(ax, (size_t)n, sizeof ax[0], by_magnitude);
    int64_t reach = isz; /* the bytes the smaller axes' elements span */
    for (int i = 0; i < n; i++) {
        int64_t st = llabs(ax[i][0]);
        if (st < reach)
            return 1;
        reach = st * (ax[i][1] - 1) + reach;
    }
    return 0;
}

const int64_t *tack_array_strides(const tack_array *a) { return a && a->strided ? a->strides : NULL; }

tack_status tack_array_wrap_strided(tack_device *dev, tack_dtype dt, int ndim, const int64_t *shape,
                                    const int64_t *strides, void *data, int writable, tack_release_fn release,
                                    void *ctx, tack_array **out) {
    tack_status st;
    if (!dev)
        dev = rt_default_cpu();
    if (ndim > 0 && !strides) {
        st = tack_set_error(TACK_ERR_VALUE, "strides is NULL for a %d-dimensional strided view", ndim);
        goto fail;
    }
    const tack_dtype_info *info = tack_dtype_get(dt);
    int strided = 0, empty = 0;
    int64_t c = 1, lo = 0, hi = info ? (int64_t)info->itemsize : 1;
    for (int k = ndim - 1; info && k >= 0 && k < TACK_MAX_NDIM; k--) {
        empty |= shape && shape[k] == 0;
        if (!shape || shape[k] <= 1)
            continue;
        strided |= strides[k] != c;
        int64_t d;
        if (__builtin_mul_overflow(strides[k], shape[k] - 1, &d) ||
            __builtin_mul_overflow(d, (int64_t)info->itemsize, &d) ||
            __builtin_add_overflow(d < 0 ? lo : hi, d, d < 0 ? &lo : &hi)) {
            st = tack_set_error(TACK_ERR_VALUE, "stride %lld of axis %d reaches beyond the address space",
                                (long long)strides[k], k);
            goto fail;
        }
        if (__builtin_mul_overflow(c, shape[k], &c))
            c = INT64_MAX;
    }
    /* The elements reach from data + lo to data + hi: neither end may wrap. */
    if (data && !empty &&
        ((lo < 0 && ((uintptr_t)0 - (uintptr_t)lo) > (uintptr_t)data) || (uintptr_t)hi - 1 > UINTPTR_MAX - (uintptr_t)data)) {
        st = tack_set_error(TACK_ERR_VALUE,
                            "a strided view at address 0x%llx reaching bytes %lld to %lld from it runs past the "
                            "end of the address space",
                            (unsigned long long)(uintptr_t)data, (long long)lo, (long long)hi);
        goto fail;
    }
    if ((dev->opaque_data || dev->backend->wrap_handle) && lo < 0 && !empty) { /* a handle has no address before it */
        st = tack_set_error(TACK_ERR_VALUE,
                            "a strided view on %s reaches %lld bytes before its buffer's start; its buffers are "
                            "handles, so element (0, ..., 0) must be the lowest",
                            tack_device_name(dev), (long long)-lo);
        goto fail;
    }
    tack_array *a = NULL; /* its storage: the bytes the elements reach, data + lo to data + hi */
    if ((st = rt_wrap_span(dev, dt, ndim, shape, data, strided && !empty ? lo : 0,
                           strided && !empty ? (size_t)((uint64_t)hi - (uint64_t)lo) : SIZE_MAX, writable, release, ctx, &a)) != TACK_OK)
        return st; /* the wrap released ctx */
    if (strided && !empty) {
        a->strided = 1;
        memcpy(a->strides, strides, sizeof(int64_t) * (size_t)ndim);
    }
    *out = a;
    return TACK_OK;
fail:
    if (release)
        release(ctx);
    return st;
}

tack_status tack_array_as_strided(tack_array *a, int64_t offset, int ndim, const int64_t *shape,
                                  const int64_t *strides, tack_array **out) {
    if (!a || !out || ndim < 0 || ndim > TACK_MAX_NDIM || (ndim > 0 && (!shape || !strides)))
        return tack_set_error(TACK_ERR_VALUE, "tack_array_as_strided: a NULL array, shape or strides, or %d axes", ndim);
    rt_storage *s = a->storage;
    const int64_t isz = (int64_t)tack_dtype_get(a->dtype)->itemsize;
    /* where element (0, ..., 0) lies, in bytes from the storage's start (a reshape to another
     * dtype may leave a's own start a fraction of an element in) */
    int64_t base, lo, hi, size = 1, c = 1;
    if (__builtin_add_overflow(a->offset, offset, &base) || __builtin_mul_overflow(base, isz, &base) ||
        __builtin_add_overflow(base, (int64_t)((uintptr_t)a->data - (uintptr_t)s->data), &base))
        return tack_set_error(TACK_ERR_VALUE, "tack_array_as_strided: offset %lld overflows", (long long)offset);
    lo = hi = base;
    int cstrides = 1;
    for (int k = ndim - 1; k >= 0; k--) {
        if (shape[k] < 0)
            return tack_set_error(TACK_ERR_VALUE, "tack_array_as_strided: extent %lld of axis %d is negative",
                                  (long long)shape[k], k);
        int64_t d = 0;
        if (__builtin_mul_overflow(size, shape[k], &size) ||
            (shape[k] > 0 && (__builtin_mul_overflow(strides[k], shape[k] - 1, &d) || __builtin_mul_overflow(d, isz, &d) ||
                              __builtin_add_overflow(d < 0 ? lo : hi, d, d < 0 ? &lo : &hi))))
            return tack_set_error(TACK_ERR_VALUE, "tack_array_as_strided: the view's extent overflows");
        if (shape[k] > 1)
            cstrides &= strides[k] == c;
        if (__builtin_mul_overflow(c, shape[k] > 0 ? shape[k] : 1, &c))
            c = INT64_MAX;
    }
    if (size > 0 && (lo < 0 || hi + isz > (int64_t)s->nbytes))
        return tack_set_error(TACK_ERR_VALUE,
                              "a strided view reaching bytes %lld to %lld of a storage of %zu bytes: it does not fit",
                              (long long)lo, (long long)(hi + isz), s->nbytes);
    if (s->device->opaque_data && base % isz != 0) /* a buffer's offset travels in elements */
        return tack_set_error(TACK_ERR_VALUE, "a strided view on %s %lld bytes into its buffer is not on an element "
                              "boundary", tack_device_name(s->device), (long long)base);
    atomic_fetch_add(&s->refs, 1);
    tack_array *v = tack_malloc(sizeof *v);
    if (!v) {
        atomic_fetch_sub(&s->refs, 1);
        return tack_set_error(TACK_ERR_NOMEM, "out of memory allocating an array handle");
    }
    memset(v, 0, sizeof *v);
    atomic_init(&v->refs, 1);
    v->storage = s;
    v->dtype = a->dtype;
    v->ndim = ndim;
    v->writable = a->writable;
    memcpy(v->shape, shape, sizeof(int64_t) * (size_t)ndim);
    v->size = size;
    v->nbytes = (size_t)size * (size_t)isz;
    if (s->device->opaque_data) { /* the buffer, and the offset the kernel adds */
        v->data = s->data;
        v->offset = size > 0 ? base / isz : 0;
        v->strided = !cstrides || v->offset != 0;
    } else {
        v->data = size > 0 ? (char *)s->data + base : s->data;
        v->strided = !cstrides;
    }
    if (v->strided) {
        int64_t cc = 1; /* C order's strides where an axis's stride does not matter */
        for (int k = ndim - 1; k >= 0; k--) {
            v->strides[k] = shape[k] > 1 ? strides[k] : cc;
            if (__builtin_mul_overflow(cc, shape[k] > 0 ? shape[k] : 1, &cc)) cc = INT64_MAX;
        }
    }
    *out = v;
    return TACK_OK;
}

/* n elements of isz bytes from src to dst, each `sstep` and `dstep` bytes after the one before: a row
 * of a strided view.  The common sizes copy with a constant size, which the compiler makes one move. */
static void move_row(char *dst, int64_t dstep, const char *src, int64_t sstep, int64_t n, size_t isz) {
#define TK_ROW(size)                                                                                       \
    for (int64_t i = 0; i < n; i++) memcpy(dst + i * dstep, src + i * sstep, size);                       \
    return
    switch (isz) {
    case 1: TK_ROW(1);
    case 2: TK_ROW(2);
    case 4: TK_ROW(4);
    case 8: TK_ROW(8);
    case 16: TK_ROW(16);
    default: TK_ROW(isz);
    }
#undef TK_ROW
}

/* The elements of `a` (base: its element (0, ..., 0)) and a C-order buffer `packed`: the buffer's
 * values into the view's elements (scatter), or the elements' into the buffer, one row of the last
 * axis at a time, in C order. */
static void walk(const tack_array *a, char *base, char *packed, int scatter) {
    const int64_t isz = (int64_t)tack_dtype_get(a->dtype)->itemsize;
    const int last = a->ndim - 1;
    const int64_t n = a->ndim ? a->shape[last] : 1, step = a->ndim ? a->strides[last] * isz : isz;
    int64_t idx[TACK_MAX_NDIM] = {0};
    for (int64_t row = 0; row < a->size / (n ? n : 1); row++) {
        int64_t e = 0;
        for (int k = 0; k < last; k++) e += idx[k] * a->strides[k];
        char *el = base + e * isz, *buf = packed + row * n * isz;
        if (scatter) move_row(el, step, buf, isz, n, (size_t)isz);
        else move_row(buf, isz, el, step, n, (size_t)isz);
        for (int k = last - 1; k >= 0 && ++idx[k] == a->shape[k]; k--) idx[k] = 0;
    }
}

tack_status rt_strided_to_host(const tack_array *a, void *dst) {
    tack_device *d = a->storage->device;
    const int64_t isz = (int64_t)tack_dtype_get(a->dtype)->itemsize;
    if (!a->size)
        return TACK_OK;
    const char *base; /* element (0, ..., 0), readable by the host */
    char *tmp = NULL;
    if (d->backend->type == TACK_DEVICE_CPU) {
        base = (const char *)a->data;
    } else {
        int64_t lo = 0, hi = 0;
        size_t from = 0, n;
        if (d->opaque_data) { /* a handle: the whole buffer (its bytes cannot be addressed) */
            n = a->storage->nbytes;
        } else {
            byte_span(a, &lo, &hi);
            n = (size_t)(hi - lo);
        }
        if (!(tmp = tack_malloc(n ? n : 1)))
            return tack_set_error(TACK_ERR_NOMEM, "out of memory copying a strided view of %zu bytes", n);
        const void *src = d->opaque_data ? a->data : (const char *)a->data + lo;
        tack_status st = rt_capture_refuse(d, "reading an array on the host"); /* graph.c */
        if (st == TACK_OK) st = rt_storage_use(a->storage); /* after the work that wrote it, on any stream */
        if (st == TACK_OK) st = d->backend->copy(d, tmp, src, n, RT_COPY_D2H);
        if (st != TACK_OK) {
            tack_free(tmp);
            return st;
        }
        from = d->opaque_data ? (size_t)(a->offset * isz) : (size_t)-lo;
        base = tmp + from;
    }
    walk(a, (char *)base, dst, 0); /* gathered in C order: the last axis fastest */
    tack_free(tmp);
    return TACK_OK;
}

/* Host values (a->size elements in C order) into the strided view `a`, each at its own place and nothing
 * else changed.  On the CPU they are written in place.  On a device the bytes the view spans (the whole
 * buffer, where the data are handles) come to the host after the work queued on them, the elements are
 * written there, and the span goes back: the bytes between the elements (other elements of the storage,
 * not in the view) are written back as they were read, which nothing queued in between can change, since
 * the host copies wait for it.  A view whose elements share bytes (a broadcast) is refused: which value
 * would stay is not NumPy's to say either (its broadcast views are read-only). */
tack_status rt_strided_from_host(tack_array *a, const void *src) {
    tack_device *d = a->storage->device;
    const int64_t isz = (int64_t)tack_dtype_get(a->dtype)->itemsize;
    if (!a->size)
        return TACK_OK;
    if (tack_array_self_overlaps(a))
        return tack_set_error(TACK_ERR_VALUE,
                              "copy to array: elements of the destination view share memory (a zero or "
                              "overlapping stride, as a broadcast gives), so the copy would write one element "
                              "from several values");
    tack_status st = rt_capture_refuse(d, "copying host data into an array"); /* graph.c */
    if (st == TACK_OK) st = rt_storage_use(a->storage); /* after the work that reads or writes it */
    if (st != TACK_OK)
        return st;
    if (d->backend->type == TACK_DEVICE_CPU) {
        walk(a, a->data, (char *)src, 1);
        return TACK_OK;
    }
    int64_t lo = 0, hi = 0;
    size_t n;
    if (d->opaque_data) {
        n = a->storage->nbytes;
    } else {
        byte_span(a, &lo, &hi);
        n = (size_t)(hi - lo);
    }
    char *tmp = tack_malloc(n ? n : 1);
    if (!tmp)
        return tack_set_error(TACK_ERR_NOMEM, "out of memory copying into a strided view of %zu bytes", n);
    void *span = d->opaque_data ? a->data : (char *)a->data + lo;
    st = d->backend->copy(d, tmp, span, n, RT_COPY_D2H);
    if (st == TACK_OK) {
        char *base = tmp + (d->opaque_data ? (size_t)(a->offset * isz) : (size_t)-lo);
        walk(a, base, (char *)src, 1);
        st = d->backend->copy(d, span, tmp, n, RT_COPY_H2D);
    }
    tack_free(tmp);
    return st;
}
