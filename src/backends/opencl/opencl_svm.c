/*
 * opencl_svm.c -- an OpenCL device's memory mode, and arrays in shared
 * virtual memory.
 *
 * OpenCL 1.2 gives a host nothing but cl_mem handles: opaque, valid only in
 * the context that made them, read and written only through the queue.  An
 * array held that way can be copied to and from the host but never shared
 * with it.  OpenCL 2.0 added shared virtual memory (SVM): allocations with
 * an address that means the same thing on the host and on the device.  It
 * comes in three grades (CL_DEVICE_SVM_CAPABILITIES):
 *
 *   coarse-grained buffer  an address, but the host may touch the memory
 *                          only between clEnqueueSVMMap and Unmap;
 *   fine-grained buffer    the host reads and writes it directly; what the
 *                          device wrote is visible once the command that
 *                          wrote it has completed;
 *   fine-grained system    any host allocation (malloc) is device memory.
 *
 * Tack uses SVM only where the device has fine-grained buffer SVM.  What
 * sharing is for is handing an address to code that is not Tack's: NumPy
 * through DLPack, or a library that reads `.ptr`.  None of that code would
 * map a coarse-grained allocation before touching it, and no other OpenCL
 * code holds Tack's context (it is Tack's own), so a coarse-grained address
 * would share nothing a cl_mem does not -- while every copy and fill of
 * Tack's would pay a map.  So a device is in one of two modes, chosen once
 * when it is first used and the same for all its arrays:
 *
 *   SVM     an array's data pointer is the address clSVMAlloc returned
 *           (fine-grained, read-write); kernels get it through
 *           clSetKernelArgSVMPointer; copies and fills are queued SVM
 *           commands on the device's one in-order queue, so they keep their
 *           order with the kernels; the storage is host memory, so DLPack
 *           exports it as kDLCPU and NumPy can share it.
 *   buffer  an array's data pointer is its cl_mem (opencl.c), and every
 *           request to share its storage is refused with the reason the
 *           device has no SVM Tack can use.
 *
 * TACK_OPENCL_SVM=0 forces the buffer mode on every device (the tests run
 * both modes on one driver; it is also the way back should a driver's SVM
 * misbehave); unset or 1 uses SVM where it is offered.
 *
 * Which addresses a wrap accepts: OpenCL has no query that says whether an
 * address is SVM of a context (clGetMemObjectInfo takes a cl_mem, and
 * passing it anything else is undefined).  So Tack keeps a table of its own
 * live SVM allocations on the device, sorted by address, and wraps an
 * address only when [ptr, ptr + nbytes) lies in one of them: the `.ptr` of
 * an array on this device, or any part of it.  Everything else -- host
 * memory, another context's SVM, an allocation already freed -- is refused.
 *
 * Freeing: clSVMFree does not wait for the commands that still use the
 * memory, so the free is queued (clEnqueueSVMFree) behind them; the address
 * leaves the table at once.
 *
 * "When a call returns": the host reads shared storage only after an
 * export (which waits for the queue) or through an address it was given
 * (`.ptr`, which marks the storage shared); from then on every launch using
 * the storage completes before it returns, and so, because the host reads
 * SVM directly rather than through a copy that would wait, does every fill
 * and copy on the device that touches it (array.c's settle_shared, for a
 * device whose tack_device.host_memory this backend sets).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/opencl_backend.h"
#include "runtime/config.h"

struct ocl_svm_block {
    uintptr_t base;
    size_t size;
};

#define SVM_FLAGS (TACK_CL_MEM_READ_WRITE | TACK_CL_MEM_SVM_FINE_GRAIN_BUFFER)

/* "OpenCL X.Y ..." -> X * 10 + Y (0 when the string is not that). */
static int cl_version(const char *s) {
    int major = 0, minor = 0;
    if (sscanf(s, "OpenCL %d.%d", &major, &minor) != 2) return 0;
    return major * 10 + minor;
}

tack_status ocl_svm_choose(ocl_dev *c, const char *device_version) {
    const tack_opencl_api *api = ocl_api_get();
    if (tk_config_env_check() != TACK_OK) return TACK_ERR_VALUE; /* TACK_OPENCL_SVM=yes, say */
    int want = tk_config_int(TK_CFG_OPENCL_SVM);
    tk_mutex_init(&c->svm_lock);
    int ver = cl_version(device_version);
    if (ver >= 20 && api->clGetDeviceInfo(c->dev, TACK_CL_DEVICE_SVM_CAPABILITIES, sizeof c->svm_caps, &c->svm_caps,
                                          NULL) != TACK_CL_SUCCESS)
        c->svm_caps = 0;
    int entry_points = api->clSVMAlloc && api->clSVMFree && api->clEnqueueSVMFree && api->clEnqueueSVMMemcpy &&
                       api->clEnqueueSVMMemFill && api->clSetKernelArgSVMPointer;
    c->svm = 0;
    if (!want)
        snprintf(c->no_svm, sizeof c->no_svm, "TACK_OPENCL_SVM=0 turns it off");
    else if (ver < 20)
        snprintf(c->no_svm, sizeof c->no_svm, "an OpenCL %d.%d device; SVM is OpenCL 2.0's", ver / 10, ver % 10);
    else if (!entry_points)
        snprintf(c->no_svm, sizeof c->no_svm, "the OpenCL loader lacks clSVMAlloc and the other SVM calls");
    else if (!(c->svm_caps & TACK_CL_DEVICE_SVM_FINE_GRAIN_BUFFER))
        snprintf(c->no_svm, sizeof c->no_svm, "%s",
                 c->svm_caps & TACK_CL_DEVICE_SVM_COARSE_GRAIN_BUFFER
                     ? "only coarse-grained SVM, which the host cannot read without mapping it"
                     : "CL_DEVICE_SVM_CAPABILITIES reports none");
    else
        c->svm = 1;
    return TACK_OK;
}

/* The index of the first block whose base is above p (svm_lock held). */
static size_t upper(const ocl_dev *c, uintptr_t p) {
    size_t lo = 0, hi = c->nblocks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->blocks[mid].base <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int table_add(ocl_dev *c, void *ptr, size_t size) {
    int ok = 1;
    tk_mutex_lock(&c->svm_lock);
    if (c->nblocks == c->cap_blocks) {
        size_t cap = c->cap_blocks ? 2 * c->cap_blocks : 64;
        struct ocl_svm_block *nb = tack_realloc(c->blocks, cap * sizeof *nb);
        if (nb) {
            c->blocks = nb;
            c->cap_blocks = cap;
        } else
            ok = 0;
    }
    if (ok) {
        size_t i = upper(c, (uintptr_t)ptr);
        memmove(c->blocks + i + 1, c->blocks + i, (c->nblocks - i) * sizeof *c->blocks);
        c->blocks[i].base = (uintptr_t)ptr;
        c->blocks[i].size = size;
        c->nblocks++;
    }
    tk_mutex_unlock(&c->svm_lock);
    return ok;
}

static void table_remove(ocl_dev *c, void *ptr) {
    tk_mutex_lock(&c->svm_lock);
    size_t i = upper(c, (uintptr_t)ptr);
    if (i > 0 && c->blocks[i - 1].base == (uintptr_t)ptr) {
        memmove(c->blocks + i - 1, c->blocks + i, (c->nblocks - i) * sizeof *c->blocks);
        c->nblocks--;
    }
    tk_mutex_unlock(&c->svm_lock);
}

tack_status ocl_svm_alloc(tack_device *d, size_t nbytes, void **out) {
    const tack_opencl_api *api = ocl_api_get();
    ocl_dev *c = d->state;
    size_t n = nbytes ? nbytes : 1; /* a 0-byte array still gets an address of its own */
    void *p = api->clSVMAlloc(c->ctx, SVM_FLAGS, n, 0);
    if (!p)
        return tack_set_error(TACK_ERR_NOMEM, "out of device memory on %s in clSVMAlloc of %zu bytes", d->name,
                              nbytes);
    if (!table_add(c, p, n)) {
        api->clSVMFree(c->ctx, p);
        return tack_set_error(TACK_ERR_NOMEM, "out of memory recording an SVM allocation on %s", d->name);
    }
    *out = p;
    return TACK_OK;
}

void ocl_svm_free(tack_device *d, void *ptr) {
    const tack_opencl_api *api = ocl_api_get();
    ocl_dev *c = d->state;
    if (!ptr) return;
    table_remove(c, ptr);
    /* after the commands queued before it, which may still use the memory */
    void *ptrs[1] = {ptr};
    if (api->clEnqueueSVMFree(c->queue, 1, ptrs, NULL, NULL, 0, NULL, NULL) != TACK_CL_SUCCESS) {
        api->clFinish(c->queue);
        api->clSVMFree(c->ctx, ptr);
    }
}

#define CL(call, what)                                                                                                 \
    do {                                                                                                               \
        cl_int r_ = (call);                                                                                            \
        if (r_ != TACK_CL_SUCCESS) {                                                                                   \
            st = ocl_error(r_, what, d);                                                                               \
            goto done;                                                                                                 \
        }                                                                                                              \
    } while (0)

tack_status ocl_svm_copy(tack_device *d, void *dst, const void *src, size_t n, rt_copy_kind kind) {
    const tack_opencl_api *api = ocl_api_get();
    tack_status st = TACK_OK;
    if (n == 0 || dst == src) return TACK_OK;
    /* to or from the host: blocking (the caller may reuse its buffer at once); on the device: queued */
    cl_bool blocking = kind == RT_COPY_D2D ? TACK_CL_FALSE : TACK_CL_TRUE;
    CL(api->clEnqueueSVMMemcpy(ocl_queue(d), blocking, dst, src, n, 0, NULL, NULL), "clEnqueueSVMMemcpy");
    /* a copy to the host is a synchronization point: a failed check of a kernel before it is reported */
    if (kind == RT_COPY_D2H) st = ocl_check_record(d);
done:
    return st;
}

tack_status ocl_svm_fill(tack_device *d, void *dst, const void *value, size_t itemsize, size_t count) {
    const tack_opencl_api *api = ocl_api_get();
    tack_status st = TACK_OK;
    unsigned char *staging = NULL;
    size_t total;
    if (count == 0) return TACK_OK;
    if (!rt_mul_overflow_size(itemsize, count, &total))
        return tack_set_error(TACK_ERR_VALUE, "fill of %zu elements of %zu bytes overflows", count, itemsize);
    /* OpenCL fills patterns of 1 to 128 bytes, powers of two, at an address aligned to the pattern */
    if (itemsize && itemsize <= 128 && (itemsize & (itemsize - 1)) == 0 && (uintptr_t)dst % itemsize == 0) {
        CL(api->clEnqueueSVMMemFill(ocl_queue(d), dst, value, itemsize, total, 0, NULL, NULL), "clEnqueueSVMMemFill");
    } else {
        if (!(staging = tack_malloc(total))) {
            st = tack_set_error(TACK_ERR_NOMEM, "out of memory staging a fill of %zu bytes on %s", total, d->name);
            goto done;
        }
        for (size_t i = 0; i < count; i++) memcpy(staging + i * itemsize, value, itemsize);
        CL(api->clEnqueueSVMMemcpy(ocl_queue(d), TACK_CL_TRUE, dst, staging, total, 0, NULL, NULL), "clEnqueueSVMMemcpy");
    }
done:
    tack_free(staging);
    return st;
}

tack_status ocl_svm_check_ptr(tack_device *d, const void *ptr, size_t nbytes) {
    ocl_dev *c = d->state;
    uintptr_t p = (uintptr_t)ptr, base = 0;
    size_t size = 0;
    int found = 0;
    tk_mutex_lock(&c->svm_lock);
    size_t i = upper(c, p);
    if (i > 0 && p - c->blocks[i - 1].base < c->blocks[i - 1].size) {
        found = 1;
        base = c->blocks[i - 1].base;
        size = c->blocks[i - 1].size;
    }
    tk_mutex_unlock(&c->svm_lock);
    if (!found)
        return tack_set_error(TACK_ERR_VALUE,
                              "cannot wrap %p on %s (%s): it is not in shared virtual memory Tack allocated there; "
                              "an OpenCL address is valid only in the context that allocated it, and Tack's context "
                              "is its own -- wrap the address of a Tack array on %s (its .ptr), or copy the data in "
                              "with tack.array(..., device='%s')",
                              ptr, d->name, c->name, d->name, d->name);
    if (nbytes > size - (p - base))
        return tack_set_error(TACK_ERR_VALUE,
                              "cannot wrap %zu bytes at %p on %s: they run past the end of the %zu-byte shared "
                              "virtual memory allocation at %p",
                              nbytes, ptr, d->name, size, (void *)base);
    return TACK_OK;
}
