/*
 * cuda.c -- the CUDA backend's vtable: devices, memory, copies, streams.
 *
 * libcuda is loaded with dlopen on first use; without it (no NVIDIA driver)
 * the backend reports zero devices and says why, so `tack.devices()` lists
 * only the CPU and `device="cuda"` is a clear error rather than a crash.
 *
 * Contexts: each Tack device uses its GPU's *primary* context, the one the
 * CUDA runtime -- and so PyTorch, CuPy and Warp -- use.  An allocation made
 * by any of them is therefore valid in Tack's calls on the same thread, and
 * vice versa.  Every entry point makes the primary context current for its
 * duration -- with no driver call beyond cuCtxGetCurrent when it already is,
 * else pushing it and popping it again -- leaving the caller's current
 * context as it found it.
 *
 * Streams: one stream per device, created by Tack (cuStreamCreate with
 * flags 0: a blocking stream); all of Tack's copies and launches on that
 * device are ordered on it.  Being blocking, it is also ordered with the
 * legacy default stream that PyTorch and CuPy use unless told otherwise:
 * their queued work and Tack's follow each other.  A DLPack export to a
 * consumer's stream makes that stream wait for Tack's with an event
 * (cuda_stream_wait), with no wait on the host.  Memory uses the stream-ordered
 * allocator (cuMemAllocAsync) when the device supports memory pools.  If it
 * fails for a reason other than out-of-memory, that allocation and every
 * later one on the device come from cuMemAlloc instead (logged once under
 * TACK_LOG=info); out of memory is a MemoryError, not retried.  Each address
 * is freed by the matching free: the pool's are kept in a set per device.
 * Copies to and from the host synchronize the stream before returning,
 * because the host buffer may be freed by the caller right after.
 *
 * Kernels (cuda_launch.c) are queued on the same stream; a failed check in
 * one is recorded on the device and reported at the next synchronization
 * point: synchronize, a copy to the host, or a launch that must complete
 * before it returns (an argument shared with another library).
 *
 * Sticky errors: an illegal address, a misaligned one, an illegal
 * instruction, a hardware stack error, a device-side assert, a failed or
 * timed-out launch leave the primary context unusable -- every later call
 * in it, by Tack or by any library sharing it, fails with the same code.
 * The first driver call that returns one marks the device lost; that error
 * says so once, naming the kernel launched last, and every later Tack
 * operation on the device fails at once with "unusable since" without
 * calling the driver (frees do nothing: the context's memory is gone with it).
 */
#include "platform/platform.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backends/cuda/cuda_backend.h"
#include "backends/common/kcache.h"
#include "tack_dlpack.h"

static tack_cuda_api api;
static char load_why[256];
static int load_ok;
static tk_once_t load_once = TK_ONCE_INIT;

static void load(void) {
    static const char *names[] = {"libcuda.so.1", "libcuda.so"};
    for (size_t i = 0; !api.lib && i < sizeof names / sizeof names[0]; i++)
        api.lib = tk_dl_open(names[i], 0);
    if (!api.lib) {
        snprintf(load_why, sizeof load_why, "no NVIDIA driver: libcuda.so.1 could not be loaded");
        return;
    }
#define REQ(field, name)                                                             \
    do {                                                                             \
        *(void **)&api.field = tk_dl_sym(api.lib, name);                                 \
        if (!api.field) {                                                            \
            snprintf(load_why, sizeof load_why, "the NVIDIA driver lacks %s", name); \
            return;                                                                  \
        }                                                                            \
    } while (0)
    REQ(cuInit, "cuInit");
    REQ(cuDriverGetVersion, "cuDriverGetVersion");
    REQ(cuDeviceGetCount, "cuDeviceGetCount");
    REQ(cuDeviceGet, "cuDeviceGet");
    REQ(cuDeviceGetName, "cuDeviceGetName");
    REQ(cuDeviceGetAttribute, "cuDeviceGetAttribute");
    REQ(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    REQ(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    REQ(cuCtxPushCurrent, "cuCtxPushCurrent_v2");
    REQ(cuCtxPopCurrent, "cuCtxPopCurrent_v2");
    REQ(cuCtxGetCurrent, "cuCtxGetCurrent");
    REQ(cuStreamCreate, "cuStreamCreate");
    REQ(cuStreamSynchronize, "cuStreamSynchronize");
    REQ(cuStreamWaitEvent, "cuStreamWaitEvent");
    REQ(cuEventCreate, "cuEventCreate");
    REQ(cuEventRecord, "cuEventRecord");
    REQ(cuEventDestroy, "cuEventDestroy_v2");
    REQ(cuMemAlloc, "cuMemAlloc_v2");
    REQ(cuMemFree, "cuMemFree_v2");
    REQ(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    REQ(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    REQ(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    REQ(cuMemsetD8Async, "cuMemsetD8Async");
    REQ(cuMemsetD16Async, "cuMemsetD16Async");
    REQ(cuMemsetD32Async, "cuMemsetD32Async");
    REQ(cuModuleLoadDataEx, "cuModuleLoadDataEx");
    REQ(cuModuleUnload, "cuModuleUnload");
    REQ(cuModuleGetFunction, "cuModuleGetFunction");
    REQ(cuLaunchKernel, "cuLaunchKernel");
    REQ(cuPointerGetAttribute, "cuPointerGetAttribute");
    REQ(cuGetErrorString, "cuGetErrorString");
#undef REQ
    *(void **)&api.cuEventSynchronize = tk_dl_sym(api.lib, "cuEventSynchronize");
    *(void **)&api.cuEventQuery = tk_dl_sym(api.lib, "cuEventQuery");
    *(void **)&api.cuStreamDestroy = tk_dl_sym(api.lib, "cuStreamDestroy_v2");
    *(void **)&api.cuEventElapsedTime = tk_dl_sym(api.lib, "cuEventElapsedTime");
    *(void **)&api.cuMemAllocAsync = tk_dl_sym(api.lib, "cuMemAllocAsync");
    *(void **)&api.cuMemFreeAsync = tk_dl_sym(api.lib, "cuMemFreeAsync");
    *(void **)&api.cuOccupancyMaxActiveBlocksPerMultiprocessor =
        tk_dl_sym(api.lib, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    *(void **)&api.cuStreamBeginCapture = tk_dl_sym(api.lib, "cuStreamBeginCapture_v2");
    *(void **)&api.cuStreamEndCapture = tk_dl_sym(api.lib, "cuStreamEndCapture");
    *(void **)&api.cuGraphInstantiate = tk_dl_sym(api.lib, "cuGraphInstantiateWithFlags");
    *(void **)&api.cuGraphLaunch = tk_dl_sym(api.lib, "cuGraphLaunch");
    *(void **)&api.cuGraphExecDestroy = tk_dl_sym(api.lib, "cuGraphExecDestroy");
    *(void **)&api.cuGraphDestroy = tk_dl_sym(api.lib, "cuGraphDestroy");
    *(void **)&api.cuDeviceTotalMem = tk_dl_sym(api.lib, "cuDeviceTotalMem_v2");
    *(void **)&api.cuFuncGetAttribute = tk_dl_sym(api.lib, "cuFuncGetAttribute");
    CUresult r = api.cuInit(0);
    if (r != TACK_CUDA_SUCCESS) {
        const char *s = NULL;
        api.cuGetErrorString(r, &s);
        snprintf(load_why, sizeof load_why, "cuInit failed: %s", s ? s : "unknown error");
        return;
    }
    load_ok = 1;
}

const tack_cuda_api *cuda_load(char *why, size_t why_len) {
    tk_once(&load_once, load);
    if (!load_ok) {
        if (why)
            snprintf(why, why_len, "%s", load_why);
        return NULL;
    }
    return &api;
}

const tack_cuda_api *cuda_api_get(void) { return load_ok ? &api : NULL; }

tack_status cuda_error(CUresult r, const char *what) {
    const char *s = NULL;
    if (api.cuGetErrorString)
        api.cuGetErrorString(r, &s);
    if (r == TACK_CUDA_ERROR_OUT_OF_MEMORY)
        return tack_set_error(TACK_ERR_NOMEM, "out of device memory in %s", what);
    return tack_set_error(TACK_ERR_DEVICE, "%s failed: %s (CUDA error %d)", what, s ? s : "?", r);
}

/* ------------------------------------------------------ sticky errors */
static const char *sticky_name(int r, const char **what) {
    switch (r) {
    case 700: *what = "an illegal memory access"; return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case 702: *what = "a kernel ran too long and was stopped"; return "CUDA_ERROR_LAUNCH_TIMEOUT";
    case 710: *what = "a device-side assert failed"; return "CUDA_ERROR_ASSERT";
    case 714: *what = "a hardware stack error"; return "CUDA_ERROR_HARDWARE_STACK_ERROR";
    case 715: *what = "an illegal instruction"; return "CUDA_ERROR_ILLEGAL_INSTRUCTION";
    case 716: *what = "a misaligned memory access"; return "CUDA_ERROR_MISALIGNED_ADDRESS";
    case 718: *what = "an invalid program counter"; return "CUDA_ERROR_INVALID_PC";
    case 719: *what = "a kernel failed while running"; return "CUDA_ERROR_LAUNCH_FAILED";
    default: *what = NULL; return NULL;
    }
}

int cuda_sticky(CUresult r) {
    const char *what;
    return sticky_name(r, &what) != NULL;
}

void cuda_note(tack_device *d, CUresult r) {
    cuda_dev *c = d->state;
    if (c && cuda_sticky(r)) gpu_lost_mark(&c->lost, r);
}

int cuda_is_lost(tack_device *d) {
    cuda_dev *c = d->state;
    return c && gpu_lost_is(&c->lost);
}

tack_status cuda_lost_error(tack_device *d) {
    cuda_dev *c = d->state;
    if (!c) return TACK_OK;
    return gpu_lost_error(&c->lost, d->name, sticky_name, "the GPU context is lost",
                          "every later CUDA call in this process fails, in Tack and in any library sharing the GPU's "
                          "primary context (PyTorch, CuPy)");
}

tack_status cuda_fail(tack_device *d, CUresult r, const char *what) {
    if (!d->state || !cuda_sticky(r)) return cuda_error(r, what);
    cuda_note(d, r);
    return cuda_lost_error(d);
}

void cuda_note_launch(tack_device *d, const char *kernel) { gpu_lost_launched(&((cuda_dev *)d->state)->lost, kernel); }

#define CU(call, what)                            \
    do {                                          \
        CUresult r_ = (call);                     \
        if (r_ != TACK_CUDA_SUCCESS) {            \
            st = cuda_fail(d, r_, what);          \
            goto done;                            \
        }                                         \
    } while (0)

static int cuda_device_count(char *why, size_t why_len) {
    int n = 0;
    if (!cuda_load(why, why_len))
        return 0;
    CUresult r = api.cuDeviceGetCount(&n);
    if (r != TACK_CUDA_SUCCESS || n == 0) {
        snprintf(why, why_len, "the NVIDIA driver reports no CUDA device");
        return 0;
    }
    return n;
}

/* Each thread keeps, per cuda_push not yet popped, whether it pushed, so
 * that cuda_pop pops only then: a call from a thread whose current context
 * is already the device's (PyTorch and CuPy make the primary context current
 * and leave it so) makes no push and no pop.  Where another context, or
 * none, is current, the device's is pushed and popped again, leaving the
 * thread as it was (making it current for good would change the CUDA
 * runtime's current device under PyTorch's feet).  A bit per nesting level. */
static _Thread_local uint64_t push_bits;
static _Thread_local unsigned push_depth;

tack_status cuda_push(tack_device *d) {
    cuda_dev *c = d->state;
    tack_status st = cuda_lost_error(d);
    if (st != TACK_OK) return st;
    CUcontext cur = NULL;
    CUresult r = TACK_CUDA_SUCCESS;
    int pushed = 0;
    if (push_depth >= 64 || api.cuCtxGetCurrent(&cur) != TACK_CUDA_SUCCESS || cur != c->ctx) {
        r = api.cuCtxPushCurrent(c->ctx);
        if (r != TACK_CUDA_SUCCESS) return cuda_fail(d, r, "cuCtxPushCurrent");
        pushed = 1;
    }
    if (push_depth < 64) push_bits = (push_bits & ~((uint64_t)1 << push_depth)) | (uint64_t)pushed << push_depth;
    push_depth++;
    return TACK_OK;
}

#define push cuda_push
#define pop cuda_pop

void cuda_pop(void) {
    CUcontext ignored;
    if (!push_depth) return;
    push_depth--;
    if (push_depth >= 64 || (push_bits >> push_depth & 1)) api.cuCtxPopCurrent(&ignored);
}

static tack_status cuda_init_device(tack_device *d) {
    tack_status st = TACK_OK;
    cuda_dev *c = tack_calloc(1, sizeof *c);
    int pushed = 0;
    if (!c)
        return tack_set_error(TACK_ERR_NOMEM, "out of memory initializing a CUDA device");
    CU(api.cuDeviceGet(&c->dev, d->index), "cuDeviceGet");
    CU(api.cuDeviceGetName(c->name, (int)sizeof c->name, c->dev), "cuDeviceGetName");
    snprintf(d->description, sizeof d->description, "%.159s", c->name);
    size_t total = 0;
    if (api.cuDeviceTotalMem && api.cuDeviceTotalMem(&total, c->dev) == TACK_CUDA_SUCCESS) d->memory = total;
    CU(api.cuDeviceGetAttribute(&c->major, TACK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->dev),
       "cuDeviceGetAttribute");
    CU(api.cuDeviceGetAttribute(&c->minor, TACK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->dev),
       "cuDeviceGetAttribute");
    CU(api.cuDeviceGetAttribute(&c->pools, TACK_CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, c->dev),
       "cuDeviceGetAttribute");
    CU(api.cuDeviceGetAttribute(&d->threads, TACK_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, c->dev),
       "cuDeviceGetAttribute");
    if (api.cuDeviceGetAttribute(&c->sm_threads, TACK_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, c->dev) !=
            TACK_CUDA_SUCCESS || c->sm_threads <= 0)
        c->sm_threads = 2048;
    /* a blocks loop's limits (cuda_launch.c); -1 where the driver does not say */
    if (api.cuDeviceGetAttribute(&c->max_block, TACK_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, c->dev) !=
            TACK_CUDA_SUCCESS || c->max_block <= 0)
        c->max_block = -1;
    if (api.cuDeviceGetAttribute(&c->max_shared, TACK_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, c->dev) !=
            TACK_CUDA_SUCCESS || c->max_shared <= 0)
        c->max_shared = -1;
    CU(api.cuDriverGetVersion(&c->driver), "cuDriverGetVersion");
    CU(api.cuDevicePrimaryCtxRetain(&c->ctx, c->dev), "cuDevicePrimaryCtxRetain");
    CU(api.cuCtxPushCurrent(c->ctx), "cuCtxPushCurrent");
    pushed = 1;
    /* blocking: ordered with the legacy default stream, which PyTorch and CuPy use by default */
    CU(api.cuStreamCreate(&c->stream, 0), "cuStreamCreate");
    c->pools = c->pools && api.cuMemAllocAsync && api.cuMemFreeAsync;
    tk_mutex_init(&c->mem_lock);
    gpu_lost_init(&c->lost);
    gpu_records_init(&c->rec, "the GPU");
    d->state = c;
    c = NULL;
done:
    if (pushed)
        api.cuCtxPopCurrent(&(CUcontext){NULL});
    tack_free(c);
    return st;
}

static size_t ptrset_home(CUdeviceptr p, size_t cap) {
    return (size_t)((p * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static int ptrset_add(cuda_ptrset *s, CUdeviceptr p) {
    if ((s->used + 1) * 4 > s->cap * 3) {
        /* grow, or only sweep out removed slots when few are live */
        size_t cap = 64;
        while ((s->live + 1) * 2 > cap)
            cap *= 2;
        CUdeviceptr *slot = tack_calloc(cap, sizeof *slot);
        if (!slot)
            return 0;
        for (size_t i = 0; i < s->cap; i++)
            if (s->slot[i] > 1) {
                size_t j = ptrset_home(s->slot[i], cap);
                while (slot[j])
                    j = (j + 1) & (cap - 1);
                slot[j] = s->slot[i];
            }
        tack_free(s->slot);
        s->slot = slot;
        s->cap = cap;
        s->used = s->live;
    }
    size_t j = ptrset_home(p, s->cap);
    while (s->slot[j] > 1)
        j = (j + 1) & (s->cap - 1);
    if (!s->slot[j])
        s->used++;
    s->slot[j] = p;
    s->live++;
    return 1;
}

static int ptrset_take(cuda_ptrset *s, CUdeviceptr p) {
    if (!s->live)
        return 0;
    for (size_t j = ptrset_home(p, s->cap); s->slot[j]; j = (j + 1) & (s->cap - 1))
        if (s->slot[j] == p) {
            s->slot[j] = 1;
            s->live--;
            return 1;
        }
    return 0;
}

static tack_status alloc_error(tack_device *d, CUresult r, size_t n, const char *what) {
    if (r == TACK_CUDA_ERROR_OUT_OF_MEMORY)
        return tack_set_error(TACK_ERR_NOMEM, "out of device memory allocating %zu bytes on %s (%s)", n, d->name,
                              what);
    return cuda_fail(d, r, what);
}

static tack_status cuda_alloc(tack_device *d, size_t nbytes, void **out) {
    tack_status st;
    cuda_dev *c = d->state;
    CUdeviceptr p = 0;
    size_t n = nbytes ? nbytes : 1;
    CUresult r;
    if ((st = push(d)) != TACK_OK)
        return st;
    tk_mutex_lock(&c->mem_lock);
    int pools = c->pools;
    tk_mutex_unlock(&c->mem_lock);
    if (pools) {
        r = api.cuMemAllocAsync(&p, n, c->stream);
        if (r == TACK_CUDA_SUCCESS) {
            tk_mutex_lock(&c->mem_lock);
            int kept = ptrset_add(&c->pooled, p);
            tk_mutex_unlock(&c->mem_lock);
            if (!kept) {
                api.cuMemFreeAsync(p, c->stream);
                st = tack_set_error(TACK_ERR_NOMEM, "out of memory recording a device allocation");
            } else
                *out = (void *)(uintptr_t)p;
            goto done;
        }
        if (r == TACK_CUDA_ERROR_OUT_OF_MEMORY || cuda_sticky(r)) {
            st = alloc_error(d, r, n, "cuMemAllocAsync");
            goto done;
        }
        /* any other failure: the pools are not usable here; cuMemAlloc from now on */
        tk_mutex_lock(&c->mem_lock);
        int first = c->pools;
        c->pools = 0;
        tk_mutex_unlock(&c->mem_lock);
        if (first && kc_log_info()) {
            const char *s = NULL;
            api.cuGetErrorString(r, &s);
            fprintf(stderr, "tack: cuMemAllocAsync failed on %s: %s (CUDA error %d); allocating with cuMemAlloc from now on\n",
                    d->name, s ? s : "?", r);
        }
        p = 0;
    }
    r = api.cuMemAlloc(&p, n);
    if (r != TACK_CUDA_SUCCESS)
        st = alloc_error(d, r, n, "cuMemAlloc");
    else
        *out = (void *)(uintptr_t)p;
done:
    pop();
    return st;
}

static void cuda_free(tack_device *d, void *ptr) {
    cuda_dev *c = d->state;
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)ptr;
    /* a lost context: its memory went with it; no driver call */
    if (!ptr || cuda_is_lost(d) || push(d) != TACK_OK)
        return;
    tk_mutex_lock(&c->mem_lock);
    int pooled = ptrset_take(&c->pooled, p);
    tk_mutex_unlock(&c->mem_lock);
    cuda_note(d, pooled ? api.cuMemFreeAsync(p, c->stream) : api.cuMemFree(p));
    pop();
}

static tack_status cuda_copy(tack_device *d, void *dst, const void *src, size_t n, rt_copy_kind kind) {
    tack_status st;
    CUstream q = cuda_queue(d); /* the thread's current stream on d, else Tack's own */
    if (n == 0)
        return TACK_OK;
    if ((st = push(d)) != TACK_OK)
        return st;
    switch (kind) {
    case RT_COPY_H2D:
        CU(api.cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dst, src, n, q), "cuMemcpyHtoDAsync");
        CU(api.cuStreamSynchronize(q), "cuStreamSynchronize");
        break;
    case RT_COPY_D2H:
        CU(api.cuMemcpyDtoHAsync(dst, (CUdeviceptr)(uintptr_t)src, n, q), "cuMemcpyDtoHAsync");
        CU(api.cuStreamSynchronize(q), "cuStreamSynchronize");
        /* a synchronization point: a failed check of a kernel before it is reported */
        st = cuda_check_record(d);
        break;
    case RT_COPY_D2D:
        CU(api.cuMemcpyDtoDAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n, q),
           "cuMemcpyDtoDAsync");
        break;
    }
done:
    pop();
    return st;
}

static tack_status cuda_fill(tack_device *d, void *dst, const void *value, size_t itemsize, size_t count) {
    tack_status st;
    CUstream q = cuda_queue(d);
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)dst;
    unsigned char *staging = NULL;
    if (count == 0)
        return TACK_OK;
    if ((st = push(d)) != TACK_OK)
        return st;
    if (itemsize == 1) {
        CU(api.cuMemsetD8Async(p, *(const unsigned char *)value, count, q), "cuMemsetD8Async");
    } else if (itemsize == 2) {
        unsigned short v;
        memcpy(&v, value, 2);
        CU(api.cuMemsetD16Async(p, v, count, q), "cuMemsetD16Async");
    } else if (itemsize == 4) {
        unsigned int v;
        memcpy(&v, value, 4);
        CU(api.cuMemsetD32Async(p, v, count, q), "cuMemsetD32Async");
    } else {
        /* Wider elements: fill a host block once and copy it out. */
        size_t total;
        if (!rt_mul_overflow_size(itemsize, count, &total) || !(staging = tack_malloc(total))) {
            st = tack_set_error(TACK_ERR_NOMEM, "out of memory staging a device fill");
            goto done;
        }
        for (size_t i = 0; i < count; i++)
            memcpy(staging + i * itemsize, value, itemsize);
        CU(api.cuMemcpyHtoDAsync(p, staging, total, q), "cuMemcpyHtoDAsync");
        CU(api.cuStreamSynchronize(q), "cuStreamSynchronize");
    }
done:
    tack_free(staging);
    pop();
    return st;
}

static tack_status cuda_synchronize(tack_device *d) {
    tack_status st;
    cuda_dev *c = d->state;
    if ((st = push(d)) != TACK_OK)
        return st;
    CU(api.cuStreamSynchronize(c->stream), "cuStreamSynchronize");
    st = cuda_check_record(d);
    if (st == TACK_OK) st = rt_streams_sync(d); /* and every stream of the program's (cuda_stream.c) */
done:
    pop();
    return st;
}

/* A wrapped address must be device (or managed) memory of this GPU: the
 * driver knows every allocation made through it, by any library. */
static tack_status cuda_check_ptr(tack_device *d, const void *ptr, size_t nbytes) {
    tack_status st;
    unsigned int mtype = 0;
    int ordinal = -1;
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)ptr;
    if ((st = push(d)) != TACK_OK)
        return st;
    CUresult r = api.cuPointerGetAttribute(&mtype, TACK_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
    if (cuda_sticky(r)) {
        st = cuda_fail(d, r, "cuPointerGetAttribute");
        goto done;
    }
    if (r != TACK_CUDA_SUCCESS) {
        st = tack_set_error(TACK_ERR_VALUE,
                            "address 0x%llx is not memory the CUDA driver knows (host memory, or freed): "
                            "array_from_ptr on %s needs a device address of that GPU",
                            (unsigned long long)p, d->name);
        goto done;
    }
    if (mtype == 1 /* CU_MEMORYTYPE_HOST */) {
        st = tack_set_error(TACK_ERR_VALUE, "address 0x%llx is pinned host memory, not device memory of %s",
                            (unsigned long long)p, d->name);
        goto done;
    }
    r = api.cuPointerGetAttribute(&ordinal, TACK_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
    if (r == TACK_CUDA_SUCCESS && ordinal != d->index) {
        st = tack_set_error(TACK_ERR_VALUE, "address 0x%llx belongs to cuda:%d, not %s", (unsigned long long)p,
                            ordinal, d->name);
        goto done;
    }
    (void)nbytes;
done:
    pop();
    return st;
}

/* A consumer's stream (DLPack export) waits on the device for everything
 * queued on Tack's stream so far: an event recorded on ours, waited for on
 * theirs, and destroyed at once (the driver keeps it until it completes).
 * The handles 1 and 2 are the driver's CU_STREAM_LEGACY and
 * CU_STREAM_PER_THREAD; any other is a stream of the primary context. */
static tack_status cuda_stream_wait(tack_device *d, void *stream) {
    tack_status st;
    cuda_dev *c = d->state;
    CUevent e = NULL;
    if ((st = push(d)) != TACK_OK)
        return st;
    CU(api.cuEventCreate(&e, TACK_CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    CU(api.cuEventRecord(e, c->stream), "cuEventRecord");
    /* TACK_DLPACK_STREAM_DEFAULT: the default stream, handle 0 (the legacy one) */
    CU(api.cuStreamWaitEvent((intptr_t)stream == TACK_DLPACK_STREAM_DEFAULT ? NULL : (CUstream)stream, e, 0),
       "cuStreamWaitEvent");
done:
    if (e && !cuda_is_lost(d))
        cuda_note(d, api.cuEventDestroy(e));
    pop();
    return st;
}

static const rt_backend cuda_backend = {
    .name = "cuda",
    .type = TACK_DEVICE_CUDA,
    .dialect = "cuda",
    .device_count = cuda_device_count,
    .init_device = cuda_init_device,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .copy = cuda_copy,
    .fill = cuda_fill,
    .synchronize = cuda_synchronize,
    .build = cuda_build,
    .launch = cuda_launch,
    .unload = cuda_unload,
    .check_ptr = cuda_check_ptr,
    .stream_wait = cuda_stream_wait,
    .streams = &cuda_stream_ops,
};

const rt_backend *rt_backend_cuda(void) { return &cuda_backend; }
