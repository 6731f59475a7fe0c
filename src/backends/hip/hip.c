/*
 * hip.c -- the HIP backend's vtable (AMD GPUs): devices, memory, copies,
 * streams.
 *
 * libamdhip64 is loaded with dlopen on first use (TACK_HIP_PATH names the
 * library to use instead); without it, or without an AMD GPU, the backend
 * reports zero devices and says why, so `tack.devices()` omits HIP and
 * `device="hip"` is a clear error rather than a crash.
 *
 * Devices: HIP's runtime API acts on the calling thread's current device.
 * Every entry point makes the device's ordinal current for its duration
 * (hipGetDevice; hipSetDevice only when another one is current) and puts
 * the caller's back afterwards, so a thread where PyTorch or CuPy chose a
 * device keeps it.  What the device is -- its gcnArchName, the architecture
 * hiprtc compiles for; its wavefront size (64 on CDNA and GCN, 32 on RDNA),
 * which the code objects are built with; its compute units -- is read once,
 * at init.
 *
 * Streams: one stream per device, created by Tack with hipStreamCreate (a
 * blocking stream: ordered with the null stream that PyTorch and CuPy use
 * unless told otherwise).  A DLPack export to a consumer's stream makes that
 * stream wait for Tack's with an event (hip_stream_wait), with no wait on
 * the host; the DLPack specification's ROCm default stream is handle 0.
 * Copies to and from the host synchronize the stream before returning,
 * because the host buffer may be freed by the caller right after.
 *
 * Kernels (hip_launch.c) are queued on the same stream; a failed check in
 * one is recorded on the device and reported at the next synchronization
 * point: synchronize, a copy to the host, or a launch that must complete
 * before it returns (an argument shared with another library).
 *
 * Sticky errors: an illegal address, a failed or timed-out launch, a
 * device-side assert leave the device unusable for the rest of the process,
 * for Tack and every library using it; the first marks the device lost
 * (gpu_launch.c says it once, naming the kernel launched last) and later
 * operations fail at once without calling the runtime.
 */
#include "platform/platform.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/hip/hip_backend.h"
#include "runtime/config.h"
#include "tack_dlpack.h"

static tack_hip_api api;
static char load_why[300];
static int load_ok;
static tk_once_t load_once = TK_ONCE_INIT;

static int bind_api(void *lib) {
#define REQ(field)                                                                        \
    do {                                                                                  \
        *(void **)&api.field = tk_dl_sym(lib, #field);                                        \
        if (!api.field) {                                                                 \
            snprintf(load_why, sizeof load_why, "the HIP runtime lacks %s", #field);      \
            return 0;                                                                     \
        }                                                                                 \
    } while (0)
    REQ(hipInit);
    REQ(hipRuntimeGetVersion);
    REQ(hipGetDeviceCount);
    REQ(hipGetDevice);
    REQ(hipSetDevice);
    REQ(hipDeviceGetAttribute);
    REQ(hipGetDeviceProperties);
    REQ(hipStreamCreate);
    REQ(hipStreamSynchronize);
    REQ(hipStreamWaitEvent);
    REQ(hipEventCreateWithFlags);
    REQ(hipEventRecord);
    REQ(hipEventDestroy);
    REQ(hipMalloc);
    REQ(hipFree);
    REQ(hipMemcpyAsync);
    REQ(hipMemsetD8Async);
    REQ(hipMemsetD16Async);
    REQ(hipMemsetD32Async);
    REQ(hipModuleLoadData);
    REQ(hipModuleUnload);
    REQ(hipModuleGetFunction);
    REQ(hipModuleLaunchKernel);
    REQ(hipPointerGetAttributes);
    REQ(hipGetErrorName);
    REQ(hipGetErrorString);
#undef REQ
    *(void **)&api.hipEventSynchronize = tk_dl_sym(lib, "hipEventSynchronize");
    *(void **)&api.hipEventQuery = tk_dl_sym(lib, "hipEventQuery");
    *(void **)&api.hipStreamDestroy = tk_dl_sym(lib, "hipStreamDestroy");
    *(void **)&api.hipEventElapsedTime = tk_dl_sym(lib, "hipEventElapsedTime");
    *(void **)&api.hipStreamBeginCapture = tk_dl_sym(lib, "hipStreamBeginCapture");
    *(void **)&api.hipStreamEndCapture = tk_dl_sym(lib, "hipStreamEndCapture");
    *(void **)&api.hipGraphInstantiate = tk_dl_sym(lib, "hipGraphInstantiate");
    *(void **)&api.hipGraphLaunch = tk_dl_sym(lib, "hipGraphLaunch");
    *(void **)&api.hipGraphExecDestroy = tk_dl_sym(lib, "hipGraphExecDestroy");
    *(void **)&api.hipGraphDestroy = tk_dl_sym(lib, "hipGraphDestroy");
    *(void **)&api.hipDeviceTotalMem = tk_dl_sym(lib, "hipDeviceTotalMem");
    *(void **)&api.hipFuncGetAttribute = tk_dl_sym(lib, "hipFuncGetAttribute");
    *(void **)&api.hipModuleOccupancyMaxActiveBlocksPerMultiprocessor =
        tk_dl_sym(lib, "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor");
    return 1;
}

static void load(void) {
    static const char *names[] = {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so",
                                  "/opt/rocm/lib/libamdhip64.so"};
    char buf[TK_CONFIG_STR_MAX];
    const char *env = tk_config_str(TK_CFG_HIP_PATH, buf, sizeof buf);
    if (*env) {
        if (!(api.lib = tk_dl_open(env, 0))) {
            snprintf(load_why, sizeof load_why, "TACK_HIP_PATH names %.200s, which cannot be loaded", env);
            return;
        }
    } else {
        for (size_t i = 0; !api.lib && i < sizeof names / sizeof names[0]; i++)
            api.lib = tk_dl_open(names[i], 0);
        if (!api.lib) {
            snprintf(load_why, sizeof load_why,
                     "no HIP runtime: libamdhip64.so could not be loaded (install ROCm, or set TACK_HIP_PATH)");
            return;
        }
    }
    if (!bind_api(api.lib)) return;
    hipError_t r = api.hipInit(0);
    if (r == TACK_HIP_ERROR_NO_DEVICE || r == TACK_HIP_ERROR_INVALID_DEVICE) {
        /* ROCm without a GPU (or without access to /dev/kfd) says hipErrorInvalidDevice */
        snprintf(load_why, sizeof load_why, "the HIP runtime finds no AMD GPU (hipInit: %s)", api.hipGetErrorName(r));
        return;
    }
    if (r != TACK_HIP_SUCCESS) {
        snprintf(load_why, sizeof load_why, "hipInit failed: %s", api.hipGetErrorString(r));
        return;
    }
    if (api.hipRuntimeGetVersion(&api.runtime) != TACK_HIP_SUCCESS) api.runtime = 0;
    load_ok = 1;
}

const tack_hip_api *hip_load(char *why, size_t why_len) {
    tk_once(&load_once, load);
    if (!load_ok) {
        if (why) snprintf(why, why_len, "%s", load_why);
        return NULL;
    }
    return &api;
}

const tack_hip_api *hip_api_get(void) { return load_ok ? &api : NULL; }

int hip_memory_kind(const tack_hip_api *a, int type) {
    if (a->runtime >= 60000000) /* ROCm 6: unregistered, host, device, managed */
        return type == 1 ? HIP_MEM_HOST : type == 2 ? HIP_MEM_DEVICE : type == 3 ? HIP_MEM_MANAGED : HIP_MEM_UNKNOWN;
    return type == 0 ? HIP_MEM_HOST : type == 1 ? HIP_MEM_DEVICE : HIP_MEM_UNKNOWN; /* ROCm 5 */
}

tack_status hip_error(hipError_t r, const char *what) {
    const char *s = api.hipGetErrorString ? api.hipGetErrorString(r) : NULL;
    if (r == TACK_HIP_ERROR_OUT_OF_MEMORY) return tack_set_error(TACK_ERR_NOMEM, "out of device memory in %s", what);
    return tack_set_error(TACK_ERR_DEVICE, "%s failed: %s (HIP error %d)", what, s ? s : "?", r);
}

/* ------------------------------------------------------ sticky errors */
static const char *sticky_name(int r, const char **what) {
    switch (r) {
    case 700: *what = "an illegal memory access"; return "hipErrorIllegalAddress";
    case 702: *what = "a kernel ran too long and was stopped"; return "hipErrorLaunchTimeOut";
    case 710: *what = "a device-side assert failed"; return "hipErrorAssert";
    case 719: *what = "a kernel failed while running"; return "hipErrorLaunchFailure";
    default: *what = NULL; return NULL;
    }
}

int hip_sticky(hipError_t r) {
    const char *what;
    return sticky_name(r, &what) != NULL;
}

void hip_note(tack_device *d, hipError_t r) {
    hip_dev *h = d->state;
    if (h && hip_sticky(r)) gpu_lost_mark(&h->lost, r);
}

int hip_is_lost(tack_device *d) {
    hip_dev *h = d->state;
    return h && gpu_lost_is(&h->lost);
}

tack_status hip_lost_error(tack_device *d) {
    hip_dev *h = d->state;
    if (!h) return TACK_OK;
    return gpu_lost_error(&h->lost, d->name, sticky_name, "the GPU is in an unrecoverable state",
                          "every later HIP call on it in this process fails, in Tack and in any library using it "
                          "(PyTorch, CuPy)");
}

tack_status hip_fail(tack_device *d, hipError_t r, const char *what) {
    if (!d->state || !hip_sticky(r)) return hip_error(r, what);
    hip_note(d, r);
    return hip_lost_error(d);
}

void hip_note_launch(tack_device *d, const char *kernel) { gpu_lost_launched(&((hip_dev *)d->state)->lost, kernel); }

#define HIP(call, what)                  \
    do {                                 \
        hipError_t r_ = (call);          \
        if (r_ != TACK_HIP_SUCCESS) {    \
            st = hip_fail(d, r_, what);  \
            goto done;                   \
        }                                \
    } while (0)

/* -------------------------------------------------- the current device
 * Per thread and nesting level, the device that was current before
 * hip_push, or -1 when it was already the one wanted (no hipSetDevice then,
 * and none at hip_pop). */
static _Thread_local int saved[64];
static _Thread_local unsigned depth;

tack_status hip_push(tack_device *d) {
    tack_status st = hip_lost_error(d);
    if (st != TACK_OK) return st;
    hip_dev *h = d->state;
    int cur = -1, was = -1;
    if (api.hipGetDevice(&cur) != TACK_HIP_SUCCESS || cur != h->ordinal) {
        hipError_t r = api.hipSetDevice(h->ordinal);
        if (r != TACK_HIP_SUCCESS) return hip_fail(d, r, "hipSetDevice");
        was = cur;
    }
    if (depth < 64) saved[depth] = was;
    depth++;
    return TACK_OK;
}

void hip_pop(void) {
    if (!depth) return;
    depth--;
    if (depth < 64 && saved[depth] >= 0) api.hipSetDevice(saved[depth]);
}

/* --------------------------------------------------------------- devices */
static int hip_device_count(char *why, size_t why_len) {
    int n = 0;
    if (!hip_load(why, why_len)) return 0;
    if (api.hipGetDeviceCount(&n) != TACK_HIP_SUCCESS || n <= 0) {
        snprintf(why, why_len, "the HIP runtime finds no AMD GPU");
        return 0;
    }
    return n;
}

/* gcnArchName from the properties: at its offset, else (a layout this file
 * does not know) the first NUL-terminated "gfxNNN..." in them. */
static int arch_from_props(const char *prop, size_t n, char *arch, size_t arch_len) {
    const char *a = prop + TACK_HIP_PROP_GCN_ARCH_NAME;
    if (strncmp(a, "gfx", 3) != 0) {
        a = NULL;
        for (size_t i = 0; i + 4 < n && !a; i++)
            if (!memcmp(prop + i, "gfx", 3) && prop[i + 3] >= '0' && prop[i + 3] <= '9') a = prop + i;
        if (!a) return 0;
    }
    snprintf(arch, arch_len, "%.*s", (int)strnlen(a, 60), a);
    return 1;
}

static tack_status hip_init_device(tack_device *d) {
    tack_status st = TACK_OK;
    hip_dev *h = tack_calloc(1, sizeof *h);
    char *prop = tack_calloc(1, TACK_HIP_PROP_BYTES);
    int cur = -1, set = 0;
    if (!h || !prop) {
        tack_free(h);
        tack_free(prop);
        return tack_set_error(TACK_ERR_NOMEM, "out of memory initializing a HIP device");
    }
    h->ordinal = d->index;
    HIP(api.hipGetDeviceProperties(prop, h->ordinal), "hipGetDeviceProperties");
    snprintf(h->name, sizeof h->name, "%.*s", (int)strnlen(prop + TACK_HIP_PROP_NAME, 127), prop + TACK_HIP_PROP_NAME);
    snprintf(d->description, sizeof d->description, "%.159s", h->name);
    size_t total = 0;
    if (api.hipDeviceTotalMem && api.hipDeviceTotalMem(&total, h->ordinal) == TACK_HIP_SUCCESS) d->memory = total;
    if (!arch_from_props(prop, TACK_HIP_PROP_BYTES, h->arch, sizeof h->arch)) {
        st = tack_set_error(TACK_ERR_DEVICE, "hip:%d (%s): the HIP runtime gives no gcnArchName", h->ordinal, h->name);
        goto done;
    }
    HIP(api.hipDeviceGetAttribute(&h->warp, TACK_HIP_ATTR_WARP_SIZE, h->ordinal), "hipDeviceGetAttribute");
    if (h->warp != 32 && h->warp != 64) {
        st = tack_set_error(TACK_ERR_DEVICE, "hip:%d (%s, %s) reports a wavefront of %d lanes; Tack knows 32 and 64",
                            h->ordinal, h->name, h->arch, h->warp);
        goto done;
    }
    HIP(api.hipDeviceGetAttribute(&d->threads, TACK_HIP_ATTR_MULTIPROCESSOR_COUNT, h->ordinal), "hipDeviceGetAttribute");
    if (api.hipDeviceGetAttribute(&h->cu_threads, TACK_HIP_ATTR_MAX_THREADS_PER_MULTIPROCESSOR, h->ordinal) !=
            TACK_HIP_SUCCESS || h->cu_threads <= 0)
        h->cu_threads = 2048;
    /* a blocks loop's limits (hip_launch.c); -1 where the runtime does not say */
    if (api.hipDeviceGetAttribute(&h->max_block, TACK_HIP_ATTR_MAX_THREADS_PER_BLOCK, h->ordinal) != TACK_HIP_SUCCESS ||
        h->max_block <= 0)
        h->max_block = -1;
    if (api.hipDeviceGetAttribute(&h->max_shared, TACK_HIP_ATTR_MAX_SHARED_MEMORY_PER_BLOCK, h->ordinal) !=
            TACK_HIP_SUCCESS || h->max_shared <= 0)
        h->max_shared = -1;
    if (api.hipGetDevice(&cur) != TACK_HIP_SUCCESS) cur = -1;
    HIP(api.hipSetDevice(h->ordinal), "hipSetDevice");
    set = 1;
    /* blocking: ordered with the null stream, which PyTorch and CuPy use by default */
    HIP(api.hipStreamCreate(&h->stream), "hipStreamCreate");
    gpu_records_init(&h->rec, "the GPU");
    gpu_lost_init(&h->lost);
    d->state = h;
    h = NULL;
done:
    if (set && cur >= 0 && cur != d->index) api.hipSetDevice(cur);
    tack_free(prop);
    tack_free(h);
    return st;
}

/* ---------------------------------------------------------------- memory */
static tack_status hip_alloc(tack_device *d, size_t nbytes, void **out) {
    tack_status st;
    void *p = NULL;
    size_t n = nbytes ? nbytes : 1;
    if ((st = hip_push(d)) != TACK_OK) return st;
    hipError_t r = api.hipMalloc(&p, n);
    if (r == TACK_HIP_ERROR_OUT_OF_MEMORY)
        st = tack_set_error(TACK_ERR_NOMEM, "out of device memory allocating %zu bytes on %s (hipMalloc)", n, d->name);
    else if (r != TACK_HIP_SUCCESS)
        st = hip_fail(d, r, "hipMalloc");
    else
        *out = p;
    hip_pop();
    return st;
}

static void hip_free(tack_device *d, void *ptr) {
    /* a lost device: no runtime call */
    if (!ptr || hip_is_lost(d) || hip_push(d) != TACK_OK) return;
    hip_note(d, api.hipFree(ptr));
    hip_pop();
}

static tack_status hip_copy(tack_device *d, void *dst, const void *src, size_t n, rt_copy_kind kind) {
    tack_status st;
    hipStream_t q = hip_queue(d); /* the thread's current stream on d, else Tack's own */
    if (n == 0) return TACK_OK;
    if ((st = hip_push(d)) != TACK_OK) return st;
    switch (kind) {
    case RT_COPY_H2D:
        HIP(api.hipMemcpyAsync(dst, src, n, TACK_HIP_MEMCPY_H2D, q), "hipMemcpyAsync");
        HIP(api.hipStreamSynchronize(q), "hipStreamSynchronize");
        break;
    case RT_COPY_D2H:
        HIP(api.hipMemcpyAsync(dst, src, n, TACK_HIP_MEMCPY_D2H, q), "hipMemcpyAsync");
        HIP(api.hipStreamSynchronize(q), "hipStreamSynchronize");
        /* a synchronization point: a failed check of a kernel before it is reported */
        st = hip_check_record(d);
        break;
    case RT_COPY_D2D:
        HIP(api.hipMemcpyAsync(dst, src, n, TACK_HIP_MEMCPY_D2D, q), "hipMemcpyAsync");
        break;
    }
done:
    hip_pop();
    return st;
}

static tack_status hip_fill(tack_device *d, void *dst, const void *value, size_t itemsize, size_t count) {
    tack_status st;
    hipStream_t q = hip_queue(d); /* the thread's current stream on d, else Tack's own */
    unsigned char *staging = NULL;
    if (count == 0) return TACK_OK;
    if ((st = hip_push(d)) != TACK_OK) return st;
    if (itemsize == 1) {
        HIP(api.hipMemsetD8Async(dst, *(const unsigned char *)value, count, q), "hipMemsetD8Async");
    } else if (itemsize == 2) {
        unsigned short v;
        memcpy(&v, value, 2);
        HIP(api.hipMemsetD16Async(dst, v, count, q), "hipMemsetD16Async");
    } else if (itemsize == 4) {
        int v;
        memcpy(&v, value, 4);
        HIP(api.hipMemsetD32Async(dst, v, count, q), "hipMemsetD32Async");
    } else {
        /* wider elements: a host block filled once and copied out */
        size_t total;
        if (!rt_mul_overflow_size(itemsize, count, &total) || !(staging = tack_malloc(total))) {
            st = tack_set_error(TACK_ERR_NOMEM, "out of memory staging a device fill");
            goto done;
        }
        for (size_t i = 0; i < count; i++) memcpy(staging + i * itemsize, value, itemsize);
        HIP(api.hipMemcpyAsync(dst, staging, total, TACK_HIP_MEMCPY_H2D, q), "hipMemcpyAsync");
        HIP(api.hipStreamSynchronize(q), "hipStreamSynchronize");
    }
done:
    tack_free(staging);
    hip_pop();
    return st;
}

static tack_status hip_synchronize(tack_device *d) {
    tack_status st;
    hip_dev *h = d->state;
    if ((st = hip_push(d)) != TACK_OK) return st;
    HIP(api.hipStreamSynchronize(h->stream), "hipStreamSynchronize");
    st = hip_check_record(d);
    if (st == TACK_OK) st = rt_streams_sync(d); /* and every stream of the program's (hip_stream.c) */
done:
    hip_pop();
    return st;
}

/* A wrapped address must be device (or managed) memory of this GPU: the
 * runtime knows every allocation made through it, by any library. */
static tack_status hip_check_ptr(tack_device *d, const void *ptr, size_t nbytes) {
    tack_status st;
    tack_hip_ptr_attr a;
    (void)nbytes;
    memset(&a, 0, sizeof a);
    if ((st = hip_push(d)) != TACK_OK) return st;
    hipError_t r = api.hipPointerGetAttributes(&a, ptr);
    int kind = r == TACK_HIP_SUCCESS ? hip_memory_kind(&api, a.type) : HIP_MEM_UNKNOWN;
    if (hip_sticky(r)) {
        st = hip_fail(d, r, "hipPointerGetAttributes");
    } else if (kind == HIP_MEM_UNKNOWN) {
        st = tack_set_error(TACK_ERR_VALUE,
                            "address %p is not memory the HIP runtime knows (host memory, or freed): "
                            "array_from_ptr on %s needs a device address of that GPU",
                            ptr, d->name);
    } else if (kind == HIP_MEM_HOST) {
        st = tack_set_error(TACK_ERR_VALUE, "address %p is pinned host memory, not device memory of %s", ptr, d->name);
    } else if (a.device != d->index) {
        st = tack_set_error(TACK_ERR_VALUE, "address %p belongs to hip:%d, not %s", ptr, a.device, d->name);
    }
    hip_pop();
    return st;
}

/* A consumer's stream (DLPack export) waits on the device for everything
 * queued on Tack's stream so far: an event recorded on ours, waited for on
 * theirs, and destroyed at once (the runtime keeps it until it completes).
 * TACK_DLPACK_STREAM_DEFAULT is DLPack's ROCm default stream, HIP's null
 * stream (handle 0). */
static tack_status hip_stream_wait(tack_device *d, void *stream) {
    tack_status st;
    hip_dev *h = d->state;
    hipEvent_t e = NULL;
    hipStream_t s = (intptr_t)stream == TACK_DLPACK_STREAM_DEFAULT ? NULL : (hipStream_t)stream;
    if ((st = hip_push(d)) != TACK_OK) return st;
    HIP(api.hipEventCreateWithFlags(&e, TACK_HIP_EVENT_DISABLE_TIMING), "hipEventCreateWithFlags");
    HIP(api.hipEventRecord(e, h->stream), "hipEventRecord");
    HIP(api.hipStreamWaitEvent(s, e, 0), "hipStreamWaitEvent");
done:
    if (e && !hip_is_lost(d)) hip_note(d, api.hipEventDestroy(e));
    hip_pop();
    return st;
}

static const rt_backend hip_backend = {
    .name = "hip",
    .type = TACK_DEVICE_ROCM,
    .dialect = "hip",
    .device_count = hip_device_count,
    .init_device = hip_init_device,
    .alloc = hip_alloc,
    .free = hip_free,
    .copy = hip_copy,
    .fill = hip_fill,
    .synchronize = hip_synchronize,
    .build = hip_build,
    .launch = hip_launch,
    .unload = hip_unload,
    .check_ptr = hip_check_ptr,
    .stream_wait = hip_stream_wait,
    .streams = &hip_stream_ops,
};

const rt_backend *rt_backend_hip(void) { return &hip_backend; }
