/*
 * level_zero.c -- the Level Zero backend's vtable: devices, memory, copies,
 * command lists.
 *
 * Level Zero is oneAPI's low-level GPU interface (Intel GPUs).  Its loader,
 * libze_loader.so.1, is opened with dlopen on first use; without it, or
 * when zeInit finds no driver, the backend reports zero devices and says
 * what to install, so Tack imports and runs on machines without Level Zero
 * and `device="level_zero"` is a clear error rather than a crash.  (A
 * loader whose zeInit failed must not be asked anything else: some crash.)
 *
 * Devices: every device of every driver, numbered in driver order and then
 * in the driver's device order: level_zero:0, level_zero:1, ...  Each
 * driver gets one context, shared by its devices; each device gets one
 * command list that Tack's copies, fills and kernels for it are appended to
 * when no stream is named -- an immediate list when the driver makes one
 * (commands start as they are appended), else a regular list executed on a
 * command queue at each synchronization.  A tack.Stream is another such
 * list, the thread's current stream decides which one a call appends to
 * (lz_cur), and tack.synchronize() waits for the device's list and every
 * stream's (level_zero_stream.c).  Tack does not lean on the driver's
 * ordering of a list (the in-order flag is newer than the drivers Tack
 * supports): every command is followed by a barrier, so each starts after
 * the one before it has completed, as on an in-order OpenCL queue.
 *
 * Memory: an array's data pointer is a device (USM) allocation of the
 * context (zeMemAllocDevice), an address the kernels take as it is.  A
 * 0-byte array still gets a small allocation, so its address is valid.
 * Copies to and from the host wait for completion (the caller may free or
 * read its buffer right after); copies between arrays are queued.  Fills
 * wait too, because the specification does not say when the driver reads
 * the pattern.  A copy to the host is a synchronization point for the user,
 * so, as on CUDA and OpenCL, it also reports a failed check of a kernel
 * queued before it (level_zero_launch.c).  Freeing an allocation first
 * waits for the list, since zeMemFree does not wait for work using it.
 *
 * check_ptr (tack_array_from_ptr, DLPack imports) asks the driver what an
 * address is: it must be a device or shared allocation of this device's
 * context, made for this device, holding all the array's bytes
 * (zeMemGetAddressRange).  tack_level_zero_handles gives that
 * context (with the driver and device) to a library that is to allocate in
 * it, such as VTK (tack.interop.vtk.init_level_zero).
 *
 * The other way round, tack_level_zero_adopt makes Tack use a context that
 * another library made: before the family is probed it is simply the
 * driver's context when the devices are initialized; after, each device of
 * that driver gets new command lists in it and Tack's own context is
 * destroyed -- unless Tack has already allocated or built a program on one
 * of them (`made`), which would leave those in the old context.  An adopted
 * context belongs to its library: Tack never destroys it.
 */
#include "platform/platform.h"
#include <stdio.h>
#include <string.h>

#include "backends/level_zero/level_zero_backend.h"

#define LZ_MAX_DEVICES 32
#define LZ_MAX_DRIVERS 8
#define LZ_INSTALL "install libze1 and a GPU driver such as intel-level-zero-gpu"

static tack_ze_api api;
static char load_why[256];
static int load_ok;
static struct {
    int driver;
    ze_device_handle_t dev;
} found[LZ_MAX_DEVICES];
static int nfound;
static ze_driver_handle_t drivers[LZ_MAX_DRIVERS];
static ze_context_handle_t contexts[LZ_MAX_DRIVERS]; /* made by the driver's first device, or adopted */
static int owned[LZ_MAX_DRIVERS];                    /* Tack made the context (else adopted: never destroyed) */
static int users[LZ_MAX_DRIVERS];                    /* devices using each context */
static tack_device *ready[LZ_MAX_DEVICES];           /* each found device once initialized */
static tk_mutex_t ctx_lock = TK_MUTEX_INIT; /* contexts, owned, users, ready */
static tk_once_t load_once = TK_ONCE_INIT;

const char *lz_code_name(ze_result_t r) {
    switch (r) {
    case TACK_ZE_RESULT_SUCCESS: return "ZE_RESULT_SUCCESS";
    case TACK_ZE_RESULT_NOT_READY: return "ZE_RESULT_NOT_READY";
    case TACK_ZE_RESULT_ERROR_DEVICE_LOST: return "ZE_RESULT_ERROR_DEVICE_LOST";
    case TACK_ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY: return "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY";
    case TACK_ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY: return "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY";
    case TACK_ZE_RESULT_ERROR_MODULE_BUILD_FAILURE: return "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE";
    case TACK_ZE_RESULT_ERROR_MODULE_LINK_FAILURE: return "ZE_RESULT_ERROR_MODULE_LINK_FAILURE";
    case TACK_ZE_RESULT_ERROR_NOT_AVAILABLE: return "ZE_RESULT_ERROR_NOT_AVAILABLE";
    case TACK_ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE: return "ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE";
    case TACK_ZE_RESULT_ERROR_UNINITIALIZED: return "ZE_RESULT_ERROR_UNINITIALIZED";
    case TACK_ZE_RESULT_ERROR_UNSUPPORTED_VERSION: return "ZE_RESULT_ERROR_UNSUPPORTED_VERSION";
    case TACK_ZE_RESULT_ERROR_UNSUPPORTED_FEATURE: return "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE";
    case TACK_ZE_RESULT_ERROR_INVALID_ARGUMENT: return "ZE_RESULT_ERROR_INVALID_ARGUMENT";
    case TACK_ZE_RESULT_ERROR_INVALID_NULL_HANDLE: return "ZE_RESULT_ERROR_INVALID_NULL_HANDLE";
    case TACK_ZE_RESULT_ERROR_INVALID_NULL_POINTER: return "ZE_RESULT_ERROR_INVALID_NULL_POINTER";
    case TACK_ZE_RESULT_ERROR_INVALID_SIZE: return "ZE_RESULT_ERROR_INVALID_SIZE";
    case TACK_ZE_RESULT_ERROR_UNSUPPORTED_SIZE: return "ZE_RESULT_ERROR_UNSUPPORTED_SIZE";
    case TACK_ZE_RESULT_ERROR_INVALID_ENUMERATION: return "ZE_RESULT_ERROR_INVALID_ENUMERATION";
    case TACK_ZE_RESULT_ERROR_INVALID_NATIVE_BINARY: return "ZE_RESULT_ERROR_INVALID_NATIVE_BINARY";
    case TACK_ZE_RESULT_ERROR_INVALID_KERNEL_NAME: return "ZE_RESULT_ERROR_INVALID_KERNEL_NAME";
    case TACK_ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION: return "ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION";
    case TACK_ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX: return "ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX";
    case TACK_ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE: return "ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE";
    case TACK_ZE_RESULT_ERROR_UNKNOWN: return "ZE_RESULT_ERROR_UNKNOWN";
    default: return "a Level Zero error";
    }
}

tack_status lz_error(ze_result_t r, const char *what, const tack_device *d) {
    if (r == TACK_ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY || r == TACK_ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)
        return tack_set_error(TACK_ERR_NOMEM, "out of memory on %s in %s (%s)", d->name, what, lz_code_name(r));
    return tack_set_error(TACK_ERR_DEVICE, "%s failed on %s: %s (Level Zero result 0x%x)", what, d->name,
                          lz_code_name(r), (unsigned)r);
}

/* Every device of every driver, in order. */
static void enumerate(void) {
    ze_result_t r = api.zeInit(0);
    if (r != TACK_ZE_RESULT_SUCCESS) {
        snprintf(load_why, sizeof load_why, "no Level Zero driver: zeInit returned %s (0x%x; %s)", lz_code_name(r),
                 (unsigned)r, LZ_INSTALL);
        return;
    }
    uint32_t nd = 0;
    if ((r = api.zeDriverGet(&nd, NULL)) != TACK_ZE_RESULT_SUCCESS || nd == 0) {
        snprintf(load_why, sizeof load_why, "no Level Zero driver: zeDriverGet found %u (%s; %s)", (unsigned)nd,
                 lz_code_name(r), LZ_INSTALL);
        return;
    }
    if (nd > LZ_MAX_DRIVERS) nd = LZ_MAX_DRIVERS;
    if ((r = api.zeDriverGet(&nd, drivers)) != TACK_ZE_RESULT_SUCCESS) {
        snprintf(load_why, sizeof load_why, "zeDriverGet failed: %s (0x%x)", lz_code_name(r), (unsigned)r);
        return;
    }
    for (uint32_t i = 0; i < nd && nfound < LZ_MAX_DEVICES; i++) {
        ze_device_handle_t devs[LZ_MAX_DEVICES];
        uint32_t n = 0;
        if (api.zeDeviceGet(drivers[i], &n, NULL) != TACK_ZE_RESULT_SUCCESS || n == 0) continue;
        if (n > LZ_MAX_DEVICES) n = LZ_MAX_DEVICES;
        if (api.zeDeviceGet(drivers[i], &n, devs) != TACK_ZE_RESULT_SUCCESS) continue;
        for (uint32_t k = 0; k < n && nfound < LZ_MAX_DEVICES; k++) {
            found[nfound].driver = (int)i;
            found[nfound].dev = devs[k];
            nfound++;
        }
    }
    if (nfound == 0)
        snprintf(load_why, sizeof load_why, "the Level Zero drivers (%u) have no device", (unsigned)nd);
}

static void load(void) {
    api.lib = tk_dl_open("libze_loader.so.1", 0);
    if (!api.lib) {
        const char *e = tk_dl_error();
        if (!e || strstr(e, "No such file"))
            snprintf(load_why, sizeof load_why, "libze_loader.so.1 not found (%s)", LZ_INSTALL);
        else
            snprintf(load_why, sizeof load_why, "libze_loader.so.1 could not be loaded: %.120s (%s)", e, LZ_INSTALL);
        return;
    }
#define REQ(field)                                                                                          \
    do {                                                                                                    \
        *(void **)&api.field = tk_dl_sym(api.lib, #field);                                                      \
        if (!api.field) {                                                                                   \
            snprintf(load_why, sizeof load_why, "libze_loader.so.1 lacks %s (Tack needs Level Zero 1.x)", #field); \
            return;                                                                                         \
        }                                                                                                   \
    } while (0)
    REQ(zeInit);
    REQ(zeDriverGet);
    REQ(zeDeviceGet);
    REQ(zeDeviceGetProperties);
    REQ(zeDeviceGetComputeProperties);
    REQ(zeDeviceGetModuleProperties);
    REQ(zeContextCreate);
    REQ(zeContextDestroy);
    REQ(zeContextGetStatus);
    REQ(zeCommandQueueCreate);
    REQ(zeCommandQueueDestroy);
    REQ(zeCommandQueueExecuteCommandLists);
    REQ(zeCommandQueueSynchronize);
    REQ(zeCommandListCreate);
    REQ(zeCommandListCreateImmediate);
    REQ(zeCommandListDestroy);
    REQ(zeCommandListClose);
    REQ(zeCommandListReset);
    REQ(zeCommandListAppendBarrier);
    REQ(zeCommandListAppendMemoryCopy);
    REQ(zeCommandListAppendMemoryFill);
    REQ(zeCommandListAppendLaunchKernel);
    REQ(zeMemAllocDevice);
    REQ(zeMemFree);
    REQ(zeMemGetAllocProperties);
    REQ(zeMemGetAddressRange);
    REQ(zeModuleCreate);
    REQ(zeModuleDestroy);
    REQ(zeModuleBuildLogGetString);
    REQ(zeModuleBuildLogDestroy);
    REQ(zeKernelCreate);
    REQ(zeKernelDestroy);
    REQ(zeKernelSetArgumentValue);
    REQ(zeKernelSetGroupSize);
    REQ(zeKernelSuggestGroupSize);
#undef REQ
    /* Level Zero 1.6; without it an immediate list is not used */
    *(void **)&api.zeCommandListHostSynchronize = tk_dl_sym(api.lib, "zeCommandListHostSynchronize");
    /* events: streams and events need them, and say which one a loader lacks (level_zero_stream.c) */
#define OPT(field) (*(void **)&api.field = tk_dl_sym(api.lib, #field))
    OPT(zeEventPoolCreate);
    OPT(zeEventPoolDestroy);
    OPT(zeEventCreate);
    OPT(zeEventDestroy);
    OPT(zeEventHostSynchronize);
    OPT(zeEventQueryStatus);
    OPT(zeEventHostReset);
    OPT(zeEventQueryKernelTimestamp);
    OPT(zeCommandListAppendWaitOnEvents);
    OPT(zeCommandListAppendEventReset);
    OPT(zeCommandListAppendWriteGlobalTimestamp);
    OPT(zeMemAllocHost);
    OPT(zeKernelGetProperties);
#undef OPT
    load_ok = 1;
    enumerate();
}

const tack_ze_api *lz_api_get(void) { return load_ok ? &api : NULL; }

static int lz_device_count(char *why, size_t why_len) {
    tk_once(&load_once, load);
    if (!load_ok || nfound == 0) {
        snprintf(why, why_len, "%s", load_why);
        return 0;
    }
    return nfound;
}

#define ZE(call, what)                           \
    do {                                         \
        ze_result_t r_ = (call);                 \
        if (r_ != TACK_ZE_RESULT_SUCCESS) {      \
            st = lz_error(r_, what, d);          \
            goto done;                           \
        }                                        \
    } while (0)

/* A command list for a device in a context: an immediate list when the
 * driver makes one, else a queue and a regular list (queue stays NULL with
 * an immediate list).  Nothing is left behind on failure.  Only the list
 * and queue fields are set: the caller owns the rest of *l. */
tack_status lz_list_make(tack_device *d, ze_context_handle_t ctx, ze_device_handle_t dev, lz_list *l) {
    tack_status st = TACK_OK;
    ze_command_list_handle_t *list = &l->list;
    ze_command_queue_handle_t *queue = &l->queue;
    *list = NULL;
    *queue = NULL;
    ze_command_queue_desc_t qd;
    memset(&qd, 0, sizeof qd);
    qd.stype = TACK_ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
    qd.ordinal = 0; /* the first queue group: compute on every Intel GPU */
    qd.mode = TACK_ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS;
    qd.priority = TACK_ZE_COMMAND_QUEUE_PRIORITY_NORMAL;
    if (api.zeCommandListHostSynchronize &&
        api.zeCommandListCreateImmediate(ctx, dev, &qd, list) == TACK_ZE_RESULT_SUCCESS)
        return TACK_OK;
    *list = NULL;
    ZE(api.zeCommandQueueCreate(ctx, dev, &qd, queue), "zeCommandQueueCreate");
    ze_command_list_desc_t ld = {TACK_ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, NULL, 0, 0};
    ZE(api.zeCommandListCreate(ctx, dev, &ld, list), "zeCommandListCreate");
done:
    if (st != TACK_OK) {
        if (*list) api.zeCommandListDestroy(*list);
        if (*queue) api.zeCommandQueueDestroy(*queue);
        *list = NULL;
        *queue = NULL;
    }
    return st;
}

static tack_status lz_init_device(tack_device *d) {
    tack_status st = TACK_OK;
    int locked = 0;
    if (d->index < 0 || d->index >= nfound)
        return tack_set_error(TACK_ERR_DEVICE, "no Level Zero device with index %d", d->index);
    int drv = found[d->index].driver;
    lz_dev *c = tack_calloc(1, sizeof *c);
    if (!c) return tack_set_error(TACK_ERR_NOMEM, "out of memory initializing a Level Zero device");
    c->drv = drivers[drv];
    c->dev = found[d->index].dev;
    ze_device_properties_t dp;
    memset(&dp, 0, sizeof dp);
    dp.stype = TACK_ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
    ZE(api.zeDeviceGetProperties(c->dev, &dp), "zeDeviceGetProperties");
    dp.name[sizeof dp.name - 1] = 0;
    snprintf(c->name, sizeof c->name, "%s", dp.name);
    snprintf(d->description, sizeof d->description, "%.159s", c->name);
    c->units = dp.numSlices * dp.numSubslicesPerSlice * dp.numEUsPerSubslice;
    if (c->units == 0) c->units = 1;
    ze_device_compute_properties_t cp;
    memset(&cp, 0, sizeof cp);
    cp.stype = TACK_ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
    ZE(api.zeDeviceGetComputeProperties(c->dev, &cp), "zeDeviceGetComputeProperties");
    c->max_group = cp.maxTotalGroupSize ? cp.maxTotalGroupSize : 1;
    c->max_group_x = cp.maxGroupSizeX ? cp.maxGroupSizeX : c->max_group;
    c->max_slm = cp.maxSharedLocalMemory;
    ze_device_module_properties_t mp;
    memset(&mp, 0, sizeof mp);
    mp.stype = TACK_ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES;
    ZE(api.zeDeviceGetModuleProperties(c->dev, &mp), "zeDeviceGetModuleProperties");
    c->fp64 = (mp.flags & TACK_ZE_DEVICE_MODULE_FLAG_FP64) != 0;
    /* timestamps: ticks of timerResolution ns (1.0's properties), or of 1/timerResolution s where the
     * driver knows the 1.2 properties, whose integer is exact; the valid bits say where they wrap */
    c->tick_ns = dp.timerResolution ? (double)dp.timerResolution : 1.0;
    c->ts_bits = dp.timestampValidBits ? dp.timestampValidBits : 64;
    c->kts_bits = dp.kernelTimestampValidBits ? dp.kernelTimestampValidBits : 64;
    dp.stype = TACK_ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2;
    dp.pNext = NULL;
    if (api.zeDeviceGetProperties(c->dev, &dp) == TACK_ZE_RESULT_SUCCESS && dp.timerResolution)
        c->tick_ns = 1e9 / (double)dp.timerResolution;
    c->fp32_cr = (mp.fp32flags & TACK_ZE_DEVICE_FP_FLAG_ROUNDED_DIVIDE_SQRT) != 0;
    d->threads = (int)c->units;
    tk_mutex_lock(&ctx_lock); /* a context adopted meanwhile is used, or switched to (tack_level_zero_adopt) */
    locked = 1;
    if (!contexts[drv]) {
        ze_context_desc_t cd = {TACK_ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0};
        ze_context_handle_t made = NULL;
        ZE(api.zeContextCreate(c->drv, &cd, &made), "zeContextCreate");
        contexts[drv] = made;
        owned[drv] = 1;
    }
    c->ctx = contexts[drv];
    users[drv]++;
    if ((st = lz_list_make(d, c->ctx, c->dev, &c->own)) != TACK_OK) goto done;
    c->own.owned = 1;
    tk_mutex_init(&c->own.lock);
    tk_mutex_init(&c->streams_lock);
    tk_mutex_init(&c->ev_lock);
    gpu_records_init(&c->rec, "the Level Zero device");
    d->state = c;
    ready[d->index] = d;
    c = NULL;
done:
    if (c) {
        if (c->ctx && --users[drv] == 0 && owned[drv]) {
            api.zeContextDestroy(c->ctx);
            contexts[drv] = NULL;
            owned[drv] = 0;
        }
        tack_free(c);
    }
    if (locked) tk_mutex_unlock(&ctx_lock);
    return st;
}

/* ------------------------------------------------------- the command list */
tack_status lz_barrier(tack_device *d, lz_list *l) {
    tack_status st = TACK_OK;
    ZE(api.zeCommandListAppendBarrier(l->list, NULL, 0, NULL), "zeCommandListAppendBarrier");
    l->appended = 1;
done:
    return st;
}

tack_status lz_wait(tack_device *d, lz_list *l) {
    tack_status st = TACK_OK;
    if (l->recording)
        return tack_set_error(TACK_ERR_VALUE, "%s: a wait for work being captured into a graph (nothing captured "
                              "runs until the graph is launched)", d->name);
    if (!l->queue) {
        ZE(api.zeCommandListHostSynchronize(l->list, TACK_ZE_TIMEOUT_INFINITE), "zeCommandListHostSynchronize");
        lz_release_held(d, l);
        return TACK_OK;
    }
    if (!l->appended) return TACK_OK;
    l->appended = 0;
    ZE(api.zeCommandListClose(l->list), "zeCommandListClose");
    ze_result_t r = api.zeCommandQueueExecuteCommandLists(l->queue, 1, &l->list, NULL);
    if (r == TACK_ZE_RESULT_SUCCESS) r = api.zeCommandQueueSynchronize(l->queue, TACK_ZE_TIMEOUT_INFINITE);
    ze_result_t rr = api.zeCommandListReset(l->list); /* reusable whatever happened */
    ZE(r, "running the command list (zeCommandQueueExecuteCommandLists, zeCommandQueueSynchronize)");
    ZE(rr, "zeCommandListReset");
    lz_release_held(d, l);
done:
    return st;
}

tack_status lz_submit(tack_device *d, lz_list *l) {
    return l->queue && !l->recording ? lz_wait(d, l) : TACK_OK;
}

tack_status lz_copy_wait(tack_device *d, lz_list *l, void *dst, const void *src, size_t n) {
    tack_status st = TACK_OK;
    tk_mutex_lock(&l->lock);
    ZE(api.zeCommandListAppendMemoryCopy(l->list, dst, src, n, NULL, 0, NULL), "zeCommandListAppendMemoryCopy");
    if ((st = lz_barrier(d, l)) == TACK_OK) st = lz_wait(d, l);
done:
    tk_mutex_unlock(&l->lock);
    return st;
}

/* ----------------------------------------------------------------- memory */
static tack_status lz_alloc(tack_device *d, size_t nbytes, void **out) {
    lz_dev *c = d->state;
    ze_device_mem_alloc_desc_t md = {TACK_ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0, 0};
    void *p = NULL;
    ze_result_t r = api.zeMemAllocDevice(c->ctx, &md, nbytes ? nbytes : 8, 64, c->dev, &p);
    if (r != TACK_ZE_RESULT_SUCCESS || !p) {
        char what[80];
        snprintf(what, sizeof what, "zeMemAllocDevice of %zu bytes", nbytes);
        return lz_error(r ? r : TACK_ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, what, d);
    }
    atomic_fetch_add(&c->made, 1); /* too late to adopt another context (tack_level_zero_adopt) */
    *out = p;
    return TACK_OK;
}

static void lz_free(tack_device *d, void *ptr) {
    lz_dev *c = d->state;
    if (!ptr) return;
    /* work queued on it must finish first: zeMemFree does not wait (work on
     * a stream: the runtime made the device's own list wait for it, stream.c) */
    tk_mutex_lock(&c->own.lock);
    if (lz_wait(d, &c->own) != TACK_OK) tack_clear_error(); /* said at the next synchronization */
    tk_mutex_unlock(&c->own.lock);
    api.zeMemFree(c->ctx, ptr);
}

/* Copies and fills go to the current stream's list (the device's own when none is named). */
static tack_status lz_copy(tack_device *d, void *dst, const void *src, size_t n, rt_copy_kind kind) {
    tack_status st = TACK_OK;
    if (n == 0) return TACK_OK;
    lz_list *l = lz_cur(d);
    if (!l) return TACK_ERR_NOMEM;
    switch (kind) {
    case RT_COPY_H2D:
        return lz_copy_wait(d, l, dst, src, n);
    case RT_COPY_D2H:
        if ((st = lz_copy_wait(d, l, dst, src, n)) != TACK_OK) return st;
        /* a synchronization point: a failed check of a kernel before it is reported */
        return lz_check_record(d);
    case RT_COPY_D2D:
        if (dst == src) return TACK_OK;
        tk_mutex_lock(&l->lock);
        ZE(api.zeCommandListAppendMemoryCopy(l->list, dst, src, n, NULL, 0, NULL), "zeCommandListAppendMemoryCopy");
        if ((st = lz_barrier(d, l)) == TACK_OK) st = lz_submit(d, l);
    done:
        tk_mutex_unlock(&l->lock);
        return st;
    }
    return st;
}

static tack_status lz_fill(tack_device *d, void *dst, const void *value, size_t itemsize, size_t count) {
    tack_status st = TACK_OK;
    unsigned char *staging = NULL;
    size_t total;
    if (count == 0) return TACK_OK;
    if (!rt_mul_overflow_size(itemsize, count, &total))
        return tack_set_error(TACK_ERR_VALUE, "fill of %zu elements of %zu bytes overflows", count, itemsize);
    lz_list *l = lz_cur(d);
    if (!l) return TACK_ERR_NOMEM;
    if (itemsize && itemsize <= 128 && (itemsize & (itemsize - 1)) == 0) {
        /* power-of-two patterns up to the compute engines' limit; a graph's keeps its pattern */
        tk_mutex_lock(&l->lock);
        const void *pattern = l->recording ? lz_capture_keep(d, l, value, itemsize) : value;
        ze_result_t r = pattern ? api.zeCommandListAppendMemoryFill(l->list, dst, pattern, itemsize, total, NULL, 0,
                                                                    NULL)
                                : TACK_ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        if (r != TACK_ZE_RESULT_SUCCESS) st = lz_error(r, "zeCommandListAppendMemoryFill", d);
        if (st == TACK_OK && (st = lz_barrier(d, l)) == TACK_OK) st = l->recording ? TACK_OK : lz_wait(d, l);
        tk_mutex_unlock(&l->lock);
        return st;
    }
    if (l->recording)
        return tack_set_error(TACK_ERR_VALUE, "a fill of %zu-byte elements during a capture on %s: it is a copy from "
                              "the host, which a graph cannot replay", itemsize, d->name);
    /* vec3 and the like: fill a host block once and copy it out */
    if (!(staging = tack_malloc(total)))
        return tack_set_error(TACK_ERR_NOMEM, "out of memory staging a fill of %zu bytes on %s", total, d->name);
    for (size_t i = 0; i < count; i++) memcpy(staging + i * itemsize, value, itemsize);
    st = lz_copy_wait(d, l, dst, staging, total);
    tack_free(staging);
    return st;
}

static tack_status lz_synchronize(tack_device *d) {
    lz_dev *c = d->state;
    tk_mutex_lock(&c->own.lock);
    tack_status st = lz_wait(d, &c->own);
    tk_mutex_unlock(&c->own.lock);
    if (st == TACK_OK) st = rt_streams_sync(d); /* and every stream of the program's (level_zero_stream.c) */
    return st == TACK_OK ? lz_check_record(d) : st;
}

/* A wrapped address must be a device or shared allocation of this device's
 * context, made for this device. */
static tack_status lz_check_ptr(tack_device *d, const void *ptr, size_t nbytes) {
    lz_dev *c = d->state;
    ze_memory_allocation_properties_t mp;
    memset(&mp, 0, sizeof mp);
    mp.stype = TACK_ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES;
    ze_device_handle_t owner = NULL;
    ze_result_t r = api.zeMemGetAllocProperties(c->ctx, ptr, &mp, &owner);
    if (r != TACK_ZE_RESULT_SUCCESS)
        return tack_set_error(TACK_ERR_VALUE, "address %p cannot be checked on %s: zeMemGetAllocProperties says %s",
                              ptr, d->name, lz_code_name(r));
    switch (mp.type) {
    case TACK_ZE_MEMORY_TYPE_DEVICE:
    case TACK_ZE_MEMORY_TYPE_SHARED:
        if (owner && owner != c->dev)
            return tack_set_error(TACK_ERR_VALUE, "address %p is an allocation of another Level Zero device, not %s",
                                  ptr, d->name);
        void *base = NULL;
        size_t size = 0;
        if (api.zeMemGetAddressRange(c->ctx, ptr, &base, &size) == TACK_ZE_RESULT_SUCCESS && base &&
            ((uintptr_t)ptr - (uintptr_t)base > size || nbytes > size - ((uintptr_t)ptr - (uintptr_t)base)))
            return tack_set_error(TACK_ERR_VALUE,
                                  "address %p and the %zu bytes after it run past the end of its allocation on %s "
                                  "(%zu bytes at %p)",
                                  ptr, nbytes, d->name, size, base);
        return TACK_OK;
    case TACK_ZE_MEMORY_TYPE_HOST:
        return tack_set_error(TACK_ERR_VALUE,
                              "address %p is Level Zero host memory, not device memory of %s: wrap it on the CPU",
                              ptr, d->name);
    default:
        return tack_set_error(TACK_ERR_VALUE,
                              "address %p is not memory of %s's Level Zero context (host memory, freed, or another "
                              "context's): wrapping on %s needs a device or shared allocation of that device",
                              ptr, d->name, d->name);
    }
}

static const rt_backend lz_backend = {
    .name = "level_zero",
    .type = TACK_DEVICE_ONEAPI,
    .dialect = "opencl",
    .device_count = lz_device_count,
    .init_device = lz_init_device,
    .alloc = lz_alloc,
    .free = lz_free,
    .copy = lz_copy,
    .fill = lz_fill,
    .synchronize = lz_synchronize,
    .build = lz_build,
    .launch = lz_launch,
    .unload = lz_unload,
    .check_ptr = lz_check_ptr,
    .streams = &lz_stream_ops,
};

const rt_backend *rt_backend_level_zero(void) { return &lz_backend; }

tack_status tack_level_zero_handles(tack_device *d, void **driver, void **context, void **device) {
    if (!d || d->backend != &lz_backend)
        return tack_set_error(TACK_ERR_VALUE, "device '%s' is not a Level Zero device: it has no Level Zero handles",
                              d ? d->name : "(null)");
    lz_dev *c = d->state;
    if (driver) *driver = c->drv;
    if (context) *context = c->ctx;
    if (device) *device = c->dev;
    return TACK_OK;
}

tack_status tack_level_zero_adopt(void *driver, void *context, void *device) {
    tk_once(&load_once, load);
    if (!load_ok || nfound == 0)
        return tack_set_error(TACK_ERR_DEVICE, "tack_level_zero_adopt: Level Zero is not available: %s", load_why);
    if (!driver || !context || !device)
        return tack_set_error(TACK_ERR_VALUE, "tack_level_zero_adopt: the %s handle is NULL",
                              !driver ? "driver" : !context ? "context" : "device");
    int drv = -1;
    for (int i = 0; i < LZ_MAX_DRIVERS && drivers[i]; i++)
        if (drivers[i] == driver) drv = i;
    if (drv < 0)
        return tack_set_error(TACK_ERR_VALUE,
                              "tack_level_zero_adopt: driver %p is not one of the Level Zero drivers (zeDriverGet)",
                              driver);
    ze_device_handle_t devs[LZ_MAX_DEVICES];
    uint32_t n = 0;
    int listed = 0;
    if (api.zeDeviceGet(driver, &n, NULL) == TACK_ZE_RESULT_SUCCESS && n > 0) {
        if (n > LZ_MAX_DEVICES) n = LZ_MAX_DEVICES;
        if (api.zeDeviceGet(driver, &n, devs) == TACK_ZE_RESULT_SUCCESS)
            for (uint32_t k = 0; k < n; k++) listed |= devs[k] == device;
    }
    if (!listed)
        return tack_set_error(TACK_ERR_VALUE,
                              "tack_level_zero_adopt: device %p is not a device of driver %p (zeDeviceGet on that "
                              "driver does not list it)",
                              device, driver);
    ze_result_t r = api.zeContextGetStatus(context);
    if (r != TACK_ZE_RESULT_SUCCESS)
        return tack_set_error(TACK_ERR_VALUE,
                              "tack_level_zero_adopt: context %p is not usable: zeContextGetStatus returned %s (0x%x)",
                              context, lz_code_name(r), (unsigned)r);
    tack_status st = TACK_OK;
    lz_list lists[LZ_MAX_DEVICES];
    memset(lists, 0, sizeof lists);
    tk_mutex_lock(&ctx_lock);
    if (contexts[drv] == context) goto out; /* adopted already */
    for (int k = 0; k < nfound; k++)
        if (found[k].driver == drv && ready[k] && atomic_load(&((lz_dev *)ready[k]->state)->made) > 0) {
            st = tack_set_error(TACK_ERR_VALUE,
                                "tack_level_zero_adopt: Tack has already allocated on level_zero:%d in its own "
                                "context; call tack.interop.vtk.init_level_zero() before creating any Level Zero array",
                                k);
            goto out;
        }
    /* devices already initialized: new command lists in the adopted context, all made before any is swapped */
    for (int k = 0; k < nfound && st == TACK_OK; k++)
        if (found[k].driver == drv && ready[k])
            st = lz_list_make(ready[k], context, found[k].dev, &lists[k]);
    for (int k = 0; k < nfound; k++) {
        if (!lists[k].list) continue;
        lz_dev *c = ready[k]->state;
        if (st != TACK_OK) {
            api.zeCommandListDestroy(lists[k].list);
            if (lists[k].queue) api.zeCommandQueueDestroy(lists[k].queue);
            continue;
        }
        tk_mutex_lock(&c->own.lock);
        /* nothing of Tack's is queued without an allocation, but drain it anyway */
        if (lz_wait(ready[k], &c->own) != TACK_OK) tack_clear_error();
        api.zeCommandListDestroy(c->own.list);
        if (c->own.queue) api.zeCommandQueueDestroy(c->own.queue);
        c->own.list = lists[k].list;
        c->own.queue = lists[k].queue;
        c->own.appended = 0;
        c->ctx = context;
        tk_mutex_unlock(&c->own.lock);
    }
    if (st != TACK_OK) goto out;
    if (contexts[drv] && owned[drv]) api.zeContextDestroy(contexts[drv]); /* Tack's own, now unused */
    contexts[drv] = context;
    owned[drv] = 0;
out:
    tk_mutex_unlock(&ctx_lock);
    return st;
}
