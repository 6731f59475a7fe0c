/*
 * dlpack.c -- Tack arrays in and out of DLPack managed tensors.
 *
 * DLPack separates two things Tack keeps together.  A DLTensor describes
 * memory: device, dtype, shape, strides, byte offset.  A managed tensor adds
 * ownership: a manager_ctx and a deleter the borrower calls exactly once.
 *
 * Import (tack_array_from_dlpack) checks that the description fits a Tack
 * array -- a known scalar dtype with one lane, a device Tack has, an aligned
 * first element -- and then wraps the memory with tack_array_wrap, handing it
 * a release callback that calls the producer's deleter.  Strides that are
 * not C order's (extent-1 dimensions may carry any stride, since no step is
 * ever taken along them) give a strided view, tack_array_wrap_strided, as
 * tack.Array's own m[:, 0] and a.T are (strided.c): kernels read and write
 * it in place, the C-order operations refuse it, and a copy of it (copy=True,
 * another device) gathers its elements.  Only the C API's strided = 0 still
 * asks for C order, for callers that read the data as a C array.  The storage machinery in array.c guarantees that the
 * callback runs once, when the last handle is gone, on whatever thread drops
 * it; the deleter is therefore called without any lock or interpreter state
 * of ours, which is what DLPack requires of producers anyway.  A binding can
 * veto the call at that late point (may_delete): Python uses it to skip
 * deleters once its interpreter is finalizing.  Ownership of the managed
 * tensor passes to libtack whether the import succeeds or not, as with
 * tack_array_wrap, so there is exactly one party responsible for the deleter
 * at every moment.
 *
 * Export (tack_array_to_dlpack) allocates one block holding the managed
 * tensor, the shape and the strides -- a strided view's own, in elements
 * of any sign from element (0, ..., 0), or C order's -- and retains the Tack
 * array in it; the deleter releases the array and frees the block.  A view
 * inside an OpenCL buffer exports the buffer's handle and its byte_offset.  Vector and matrix dtypes
 * have no DLPack equivalent that peers understand (lanes > 1 is rarely
 * supported), so they travel as their scalar type with trailing dimensions,
 * the same shape .numpy() gives.  The legacy format has no read-only flag;
 * exporting a read-only array through it would hand out a writable view, so
 * it is refused unless the caller asks for a copy.  Work queued on the
 * array's device (and the copy, with COPY_ALWAYS) is ordered before the
 * consumer's use: by the backend's stream_wait on the consumer's stream when
 * the caller names one (tack_array_to_dlpack_stream; CUDA records an event
 * and makes that stream wait for it), else by synchronizing the device.
 */
#include <stdio.h>
#include <string.h>

#include "runtime/runtime.h"
#include "tack_dlpack.h"

/* ------------------------------------------------------------------ dtypes */
static const char *code_name(unsigned code) {
    switch (code) {
    case kDLInt: return "int";
    case kDLUInt: return "uint";
    case kDLFloat: return "float";
    case kDLOpaqueHandle: return "opaque handle";
    case kDLBfloat: return "bfloat";
    case kDLComplex: return "complex";
    case kDLBool: return "bool";
    default: return code <= kDLFloat4_e2m1fn ? "low-precision float" : "unknown";
    }
}

tack_status tack_dtype_to_dlpack(tack_dtype dt, DLDataType *out) {
    const tack_dtype_info *info = tack_dtype_get(dt);
    if (!info)
        return tack_set_error(TACK_ERR_TYPE, "invalid dtype id %d", (int)dt);
    const tack_dtype_info *s = tack_dtype_get(info->scalar);
    static const uint8_t codes[] = {
        [TACK_KIND_BOOL] = kDLBool, [TACK_KIND_INT] = kDLInt, [TACK_KIND_UINT] = kDLUInt,
        [TACK_KIND_FLOAT] = kDLFloat, [TACK_KIND_COMPLEX] = kDLComplex};
    out->code = s->id == TACK_BF16 ? kDLBfloat : codes[s->kind]; /* bfloat16: a code of its own */
    out->bits = (uint8_t)s->bits;
    out->lanes = 1;
    return TACK_OK;
}

tack_status tack_dtype_from_dlpack(DLDataType t, tack_dtype *out) {
    tack_dtype dt = TACK_DTYPE_COUNT;
    if (t.lanes == 1) {
        switch (t.code) {
        case kDLBool:
            if (t.bits == 8)
                dt = TACK_BOOL;
            break;
        case kDLInt:
            dt = t.bits == 8 ? TACK_I8 : t.bits == 16 ? TACK_I16 : t.bits == 32 ? TACK_I32
               : t.bits == 64 ? TACK_I64 : TACK_DTYPE_COUNT;
            break;
        case kDLUInt:
            dt = t.bits == 8 ? TACK_U8 : t.bits == 16 ? TACK_U16 : t.bits == 32 ? TACK_U32
               : t.bits == 64 ? TACK_U64 : TACK_DTYPE_COUNT;
            break;
        case kDLFloat:
            dt = t.bits == 16 ? TACK_F16 : t.bits == 32 ? TACK_F32 : t.bits == 64 ? TACK_F64
               : TACK_DTYPE_COUNT;
            break;
        case kDLBfloat:
            if (t.bits == 16)
                dt = TACK_BF16;
            break;
        case kDLComplex: /* bits count the pair, as NumPy's complex64 */
            dt = t.bits == 64 ? TACK_C64 : t.bits == 128 ? TACK_C128 : TACK_DTYPE_COUNT;
            break;
        default: break;
        }
    }
    if (dt == TACK_DTYPE_COUNT)
        return tack_set_error(TACK_ERR_BUFFER,
                              "DLPack dtype %s%u (code %u, %u bits, %u lanes) has no Tack equivalent; Tack "
                              "imports bool, int8-64, uint8-64, float16/32/64, bfloat16 and complex64/128 with one lane",
                              code_name(t.code), (unsigned)t.bits, (unsigned)t.code, (unsigned)t.bits,
                              (unsigned)t.lanes);
    *out = dt;
    return TACK_OK;
}

/* ----------------------------------------------------------------- devices */
static const char *device_type_name(int type) {
    switch (type) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLOpenCL: return "kDLOpenCL";
    case kDLVulkan: return "kDLVulkan";
    case kDLMetal: return "kDLMetal";
    case kDLVPI: return "kDLVPI";
    case kDLROCM: return "kDLROCM";
    case kDLROCMHost: return "kDLROCMHost";
    case kDLExtDev: return "kDLExtDev";
    case kDLCUDAManaged: return "kDLCUDAManaged";
    case kDLOneAPI: return "kDLOneAPI";
    case kDLWebGPU: return "kDLWebGPU";
    case kDLHexagon: return "kDLHexagon";
    case kDLMAIA: return "kDLMAIA";
    case kDLTrn: return "kDLTrn";
    default: return "unknown";
    }
}

DLDevice tack_device_to_dlpack(const tack_device *d) {
    DLDevice out;
    tack_device_type kind = tack_device_kind(d);
    /* Metal arrays, and those of a device whose backend says its memory is
     * the host's (OpenCL's fine-grained SVM), live in storage the host reads
     * as it is: DLPack sees host memory. */
    if (kind == TACK_DEVICE_METAL || d->host_memory) {
        out.device_type = kDLCPU;
        out.device_id = 0;
    } else {
        out.device_type = (DLDeviceType)kind;
        out.device_id = kind == TACK_DEVICE_CPU ? 0 : tack_device_index(d);
    }
    return out;
}

tack_status tack_device_from_dlpack(DLDevice dev, tack_device **out) {
    switch ((int)dev.device_type) {
    case kDLCPU:
    case kDLCUDAHost: /* pinned host memory is ordinary host memory to a reader */
    case kDLROCMHost:
        return tack_device_from_type(TACK_DEVICE_CPU, 0, out);
    case kDLCUDA:
    case kDLROCM:
    case kDLOneAPI:
        return tack_device_from_type((tack_device_type)dev.device_type, dev.device_id, out);
    default:
        return tack_set_error(TACK_ERR_BUFFER,
                              "DLPack device type %d (%s) is not supported by Tack; it imports kDLCPU, "
                              "kDLCUDAHost, kDLROCMHost, kDLCUDA, kDLROCM and kDLOneAPI tensors",
                              (int)dev.device_type, device_type_name((int)dev.device_type));
    }
}

/* ------------------------------------------------------------------ import */
typedef struct import_ctx {
    void *managed;
    int versioned;
    int (*may_delete)(void);
} import_ctx;

void tack_dlpack_delete(void *managed, int versioned) {
    if (!managed)
        return;
    if (versioned) {
        DLManagedTensorVersioned *m = managed;
        if (m->deleter)
            m->deleter(m);
    } else {
        DLManagedTensor *m = managed;
        if (m->deleter)
            m->deleter(m);
    }
}

static void import_release(void *p) {
    import_ctx *c = p;
    if (!c->may_delete || c->may_delete())
        tack_dlpack_delete(c->managed, c->versioned);
    tack_free(c);
}

/* Check the strides of a tensor for C-contiguity. */
static int is_c_contiguous(const DLTensor *t, int64_t size) {
    if (!t->strides || size == 0)
        return 1;
    int64_t expected = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->strides[i] != expected)
            return 0;
        expected *= t->shape[i];
    }
    return 1;
}

static void format_strides(const DLTensor *t, char *buf, size_t len) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < t->ndim && used + 24 < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%lld", i ? ", " : "", (long long)t->strides[i]);
}

/* The bytes a non-empty strided tensor's elements reach, from its first
 * element's address: [*lo, *hi).  0, or -1 where the reach overflows (which
 * tack_array_wrap_strided then refuses, naming the stride). */
static int strided_reach(const DLTensor *t, size_t itemsize, int64_t *lo, int64_t *hi) {
    *lo = 0;
    *hi = (int64_t)itemsize;
    for (int i = 0; i < t->ndim; i++) {
        int64_t d;
        if (t->shape[i] <= 1)
            continue;
        if (__builtin_mul_overflow(t->strides[i], t->shape[i] - 1, &d) ||
            __builtin_mul_overflow(d, (int64_t)itemsize, &d) ||
            __builtin_add_overflow(d < 0 ? *lo : *hi, d, d < 0 ? lo : hi))
            return -1;
    }
    return 0;
}

tack_status tack_array_from_dlpack(void *managed, int versioned, const tack_dlpack_import_options *opt,
                                   tack_array **out) {
    static const tack_dlpack_import_options defaults = {TACK_DLPACK_COPY_IF_NEEDED, NULL, NULL, 0};
    tack_status st;
    const DLTensor *t;
    uint64_t flags = 0;
    tack_device *src_dev = NULL, *dst_dev;
    tack_dtype dt;
    int64_t shape[TACK_MAX_NDIM];
    tack_array *view = NULL;
    import_ctx *ctx = NULL;
    if (!opt)
        opt = &defaults;
    if (!managed)
        return tack_set_error(TACK_ERR_VALUE, "the DLPack managed tensor is NULL");
    if (versioned) {
        DLManagedTensorVersioned *m = managed;
        if (m->version.major != DLPACK_MAJOR_VERSION) {
            st = tack_set_error(TACK_ERR_BUFFER,
                                "the DLPack tensor has version %u.%u; Tack reads major version %d (1.x)",
                                (unsigned)m->version.major, (unsigned)m->version.minor, DLPACK_MAJOR_VERSION);
            goto fail;
        }
        t = &m->dl_tensor;
        flags = m->flags;
    } else {
        t = &((DLManagedTensor *)managed)->dl_tensor;
    }
    if (t->ndim < 0 || t->ndim > TACK_MAX_NDIM) {
        st = tack_set_error(TACK_ERR_VALUE, "a DLPack tensor with %d dimensions: Tack arrays have 0 to %d",
                            (int)t->ndim, TACK_MAX_NDIM);
        goto fail;
    }
    if (t->ndim > 0 && !t->shape) {
        st = tack_set_error(TACK_ERR_VALUE, "the DLPack tensor has %d dimensions and a NULL shape", (int)t->ndim);
        goto fail;
    }
    if ((st = tack_dtype_from_dlpack(t->dtype, &dt)) != TACK_OK)
        goto fail;
    if (flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED) {
        st = tack_set_error(TACK_ERR_BUFFER, "the DLPack tensor is flagged as a padded sub-byte type");
        goto fail;
    }
    if ((st = tack_device_from_dlpack(t->device, &src_dev)) != TACK_OK)
        goto fail;
    int64_t size = 1, span = 1; /* span: the product of the extents other than 0 (array.c) */
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0) {
            st = tack_set_error(TACK_ERR_VALUE, "negative extent %lld in axis %d of a DLPack tensor's shape",
                                (long long)t->shape[i], i);
            goto fail;
        }
        shape[i] = t->shape[i];
        size *= shape[i]; /* at most span */
        if (__builtin_mul_overflow(span, shape[i] ? shape[i] : 1, &span)) {
            st = tack_set_error(TACK_ERR_VALUE,
                                "the DLPack tensor's shape overflows: the product of its extents passes 2**63 "
                                "at axis %d (extent %lld)",
                                i, (long long)shape[i]);
            goto fail;
        }
    }
    int strided = !is_c_contiguous(t, size);
    void *data = NULL; /* an empty array needs no address: keep none */
    if (size > 0 && !t->data) {
        st = tack_set_error(TACK_ERR_VALUE, "the DLPack tensor has %lld elements and a NULL data pointer",
                            (long long)size);
        goto fail;
    } else if (size > 0) {
        /* byte_offset is unsigned: an offset that carries past the top of
         * the address space would land below t->data (2**64-8 is data - 8). */
        if (t->byte_offset > UINTPTR_MAX - (uintptr_t)t->data) {
            st = tack_set_error(TACK_ERR_VALUE,
                                "the DLPack tensor's byte_offset %llu from address 0x%llx runs past the end of "
                                "the address space",
                                (unsigned long long)t->byte_offset, (unsigned long long)(uintptr_t)t->data);
            goto fail;
        }
        data = (char *)t->data + t->byte_offset;
        size_t align = tack_dtype_get(dt)->alignment;
        if ((uintptr_t)data % align) {
            st = tack_set_error(TACK_ERR_VALUE,
                                "the DLPack tensor's first element (data 0x%llx + byte_offset %llu) is not "
                                "aligned for its dtype %s, which needs %zu-byte alignment",
                                (unsigned long long)(uintptr_t)t->data, (unsigned long long)t->byte_offset,
                                tack_dtype_get(dt)->name, align);
            goto fail;
        }
    }
    dst_dev = opt->device ? opt->device : src_dev;
    int writable = !(flags & DLPACK_FLAG_BITMASK_READ_ONLY);
    int need_copy = dst_dev != src_dev;
    /* Host memory asked for on a device whose memory is the host's: shared
     * there when the device's backend says it can use that address (on
     * OpenCL, shared virtual memory Tack allocated on the device); else the
     * backend's reason goes into a copy=False refusal. */
    int host_src = need_copy && data && tack_device_kind(src_dev) == TACK_DEVICE_CPU && dst_dev->backend->check_ptr;
    char why[600] = "";
    if (host_src) {
        size_t nbytes = 0, isz = tack_dtype_get(dt)->itemsize;
        int64_t lo = 0, hi = 0; /* a strided view's bytes: from data + lo to data + hi */
        const char *from = data;
        tack_status ok = TACK_ERR_VALUE;
        if (strided) {
            if (strided_reach(t, isz, &lo, &hi) == 0 && (lo >= 0 || ((uintptr_t)0 - (uintptr_t)lo) <= (uintptr_t)data)) {
                from = (const char *)data + lo;
                nbytes = (size_t)((uint64_t)hi - (uint64_t)lo);
            }
        } else if (__builtin_mul_overflow((size_t)size, isz, &nbytes))
            nbytes = 0;
        if (nbytes && (dst_dev->host_memory || opt->copy == TACK_DLPACK_COPY_NEVER))
            ok = dst_dev->backend->check_ptr(dst_dev, from, nbytes);
        if (ok == TACK_OK && dst_dev->host_memory) {
            src_dev = dst_dev;
            need_copy = 0;
        } else if (ok != TACK_OK && opt->copy == TACK_DLPACK_COPY_NEVER)
            snprintf(why, sizeof why, ": %s", tack_last_error());
        tack_clear_error();
    }
    if (need_copy && opt->copy == TACK_DLPACK_COPY_NEVER) {
        st = tack_set_error(TACK_ERR_BUFFER,
                            "the DLPack tensor is on %s and was asked for on %s without a copy (copy=False)%s",
                            tack_device_name(src_dev), tack_device_name(dst_dev), why);
        goto fail;
    }
    /* A producer's copy (IS_COPIED) is already ours alone, unless read-only. */
    if (opt->copy == TACK_DLPACK_COPY_ALWAYS && !((flags & DLPACK_FLAG_BITMASK_IS_COPIED) && writable))
        need_copy = 1;
    /* A strided tensor is a strided view (strided.c), or, copied, its elements gathered in C order. */
    if (strided && !opt->strided && !need_copy) {
        char strides[256];
        format_strides(t, strides, sizeof strides);
        st = tack_set_error(TACK_ERR_BUFFER,
                            "the DLPack tensor has strides (%s) in elements and the import was asked for "
                            "C-contiguous storage (tack_dlpack_import_options.strided is 0): take it as a strided "
                            "view (strided = 1), or ask for a copy (COPY_ALWAYS), which gathers its elements",
                            strides);
        goto fail;
    }
    if (!(ctx = tack_malloc(sizeof *ctx))) {
        st = tack_set_error(TACK_ERR_NOMEM, "out of memory importing a DLPack tensor");
        goto fail;
    }
    ctx->managed = managed;
    ctx->versioned = versioned;
    ctx->may_delete = opt->may_delete;
    /* From here the storage owns ctx: the wrap releases it, also on failure. */
    if (strided)
        st = tack_array_wrap_strided(src_dev, dt, t->ndim, shape, t->strides, data, writable, import_release, ctx,
                                     &view);
    else
        st = tack_array_wrap(src_dev, dt, t->ndim, shape, data, writable, import_release, ctx, &view);
    if (st != TACK_OK)
        return st;
    if (need_copy) {
        tack_array *c = NULL;
        st = tack_array_clone(view, dst_dev, &c);
        tack_array_release(view); /* the producer's deleter runs here */
        if (st != TACK_OK)
            return st;
        *out = c;
        return TACK_OK;
    }
    *out = view;
    return TACK_OK;
fail:
    tack_dlpack_delete(managed, versioned);
    return st;
}

/* ------------------------------------------------------------------ export */
typedef struct export_block {
    union {
        DLManagedTensor legacy;
        DLManagedTensorVersioned versioned;
    } m; /* first, so a managed tensor pointer is the block's address */
    tack_array *array;
    int64_t shape[TACK_MAX_NDIM + 2];
    int64_t strides[TACK_MAX_NDIM + 2];
} export_block;

static void export_delete_legacy(DLManagedTensor *self) {
    export_block *b = (export_block *)self;
    tack_array_release(b->array);
    tack_free(b);
}

static void export_delete_versioned(DLManagedTensorVersioned *self) {
    export_block *b = (export_block *)self;
    tack_array_release(b->array);
    tack_free(b);
}

tack_status tack_array_to_dlpack(tack_array *a, int versioned, tack_dlpack_copy copy, void **out) {
    return tack_array_to_dlpack_stream(a, versioned, copy, TACK_DLPACK_STREAM_HOST, out);
}

/* Work queued on dev before the export completes before the consumer reads
 * it: on the consumer's stream when it names one and the device has
 * streams, else by waiting here. */
static tack_status export_sync(tack_device *dev, intptr_t stream) {
    if (stream == TACK_DLPACK_STREAM_NO_SYNC) return TACK_OK;
    if (stream != TACK_DLPACK_STREAM_HOST && dev->backend->stream_wait)
        return dev->backend->stream_wait(dev, (void *)stream);
    return tack_device_synchronize(dev);
}

tack_status tack_array_to_dlpack_stream(tack_array *a, int versioned, tack_dlpack_copy copy, intptr_t stream,
                                        void **out) {
    tack_status st;
    tack_array *src = a;
    if (!a || !out)
        return tack_set_error(TACK_ERR_VALUE, "tack_array_to_dlpack: NULL %s", a ? "output" : "array");
    int copied = copy == TACK_DLPACK_COPY_ALWAYS; /* a strided view's copy gathers it (array.c) */
    if (!versioned && !copied && !tack_array_writable(a))
        return tack_set_error(TACK_ERR_BUFFER,
                              "a read-only array cannot be exported as a legacy DLPack capsule, which "
                              "cannot mark it read-only; ask for DLPack 1.x (max_version=(1, 0)) or a copy "
                              "(copy=True)");
    tack_device *dev = tack_array_device(a);
    if (copied) {
        if ((st = tack_array_clone(a, NULL, &src)) != TACK_OK)
            return st;
    } else
        tack_array_retain(src);
    /* Work queued before the export (and the copy) completes before anyone reads it:
     * on whichever stream it was queued (stream.c), then Tack's own. */
    if (stream != TACK_DLPACK_STREAM_NO_SYNC) rt_storage_settle(src->storage);
    if ((st = export_sync(dev, stream)) != TACK_OK) {
        tack_array_release(src);
        return st;
    }
    export_block *b = tack_malloc(sizeof *b);
    if (!b) {
        tack_array_release(src);
        return tack_set_error(TACK_ERR_NOMEM, "out of memory exporting an array through DLPack");
    }
    memset(b, 0, sizeof *b);
    b->array = src;
    const tack_dtype_info *info = tack_dtype_get(tack_array_dtype(src));
    int nd = tack_array_ndim(src);
    for (int i = 0; i < nd; i++)
        b->shape[i] = tack_array_shape(src)[i];
    if (info->rows > 1)
        b->shape[nd++] = info->rows;
    if (info->cols > 1)
        b->shape[nd++] = info->cols;
    int64_t stride = 1;
    for (int i = nd - 1; i >= 0; i--) {
        b->strides[i] = stride;
        stride *= b->shape[i] > 0 ? b->shape[i] : 1;
    }
    for (int i = 0; tack_array_strides(src) && i < tack_array_ndim(src); i++) /* in elements of the components */
        b->strides[i] = tack_array_strides(src)[i] * (int64_t)(info->rows * info->cols);
    DLTensor *t = versioned ? &b->m.versioned.dl_tensor : &b->m.legacy.dl_tensor;
    t->data = tack_array_size(src) ? tack_array_data(src) : NULL;
    t->device = tack_device_to_dlpack(dev);
    t->ndim = nd;
    tack_dtype_to_dlpack(info->id, &t->dtype);
    t->shape = b->shape;
    t->strides = b->strides;
    /* A view inside a buffer whose data is a handle (OpenCL's cl_mem) is the
     * handle and a byte offset, as DLPack describes OpenCL memory; an address
     * is element (0, ..., 0)'s own. */
    t->byte_offset = src->offset * (uint64_t)info->itemsize;
    if (versioned) {
        b->m.versioned.version.major = TACK_DLPACK_MAJOR;
        b->m.versioned.version.minor = TACK_DLPACK_MINOR;
        b->m.versioned.manager_ctx = src;
        b->m.versioned.deleter = export_delete_versioned;
        b->m.versioned.flags = (tack_array_writable(src) ? 0 : DLPACK_FLAG_BITMASK_READ_ONLY) |
                               (copied ? DLPACK_FLAG_BITMASK_IS_COPIED : 0);
    } else {
        b->m.legacy.manager_ctx = src;
        b->m.legacy.deleter = export_delete_legacy;
    }
    tack_array_set_flags(a, tack_array_flags(a) | TACK_ARRAY_SHARED);
    *out = b;
    return TACK_OK;
}
