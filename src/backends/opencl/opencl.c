/*
 * opencl.c -- the OpenCL backend's vtable: devices, memory, copies, queues.
 *
 * The OpenCL ICD loader (libOpenCL.so.1) is opened with dlopen on first
 * use; without it, or with a loader that finds no driver, the backend
 * reports zero devices and says what to install, so Tack imports and runs
 * on machines without OpenCL and `device="opencl"` is a clear error rather
 * than a crash.
 *
 * Devices: every device of every platform, numbered in platform order and
 * then in the platform's device order: opencl:0, opencl:1, ...  The loader
 * lists the same platforms in the same order for the life of the process,
 * which is all the numbering needs.  Each device gets a context of its own
 * and ONE in-order command queue, on which all of Tack's copies, fills and
 * kernels for it are ordered; OpenCL's entry points are thread safe, so
 * the queue needs no lock of ours.
 *
 * Memory comes in two modes, chosen per device when it is first used
 * (opencl_svm.c says which and why): shared virtual memory where the
 * device has fine-grained buffer SVM, cl_mem buffers otherwise.  The entry
 * points below hand the SVM mode to opencl_svm.c and implement the buffer
 * mode, in which an array's data pointer is its cl_mem handle.  It is
 * opaque -- OpenCL 1.2 has no device addresses a host could offset -- so
 * every copy and fill covers a whole buffer from offset 0.  A 0-byte array
 * still gets a 1-byte buffer, so that its handle is valid.  In both modes
 * copies to and from the host are blocking (the caller may free its buffer
 * right after); copies on the device and fills are queued.  A copy to the
 * host is a synchronization point for the user, so, as on CUDA, it also
 * reports a failed check of a kernel queued before it (opencl_launch.c).
 *
 * Kernels (opencl_launch.c) are queued on the same queue; a failed check in
 * one is recorded on the device and reported at the next synchronization
 * point: synchronize, a copy to the host, or a launch that must complete
 * before it returns (an argument shared with another library).
 */
#include "platform/platform.h"
#include <stdio.h>
#include <string.h>

#include "backends/opencl/opencl_backend.h"

#define OCL_MAX_DEVICES 32
#define OCL_INSTALL "install ocl-icd-libopencl1 and a driver such as pocl-opencl-icd"

static tack_opencl_api api;
static char load_why[256];
static int load_ok;
static struct {
    cl_platform_id platform;
    cl_device_id dev;
} found[OCL_MAX_DEVICES];
static int nfound;
static tk_once_t load_once = TK_ONCE_INIT;

/* Every device of every platform, in order. */
static void enumerate(void) {
    cl_uint np = 0;
    cl_int r = api.clGetPlatformIDs(0, NULL, &np);
    if (r == TACK_CL_PLATFORM_NOT_FOUND_KHR || (r == TACK_CL_SUCCESS && np == 0)) {
        snprintf(load_why, sizeof load_why, "libOpenCL.so.1 finds no OpenCL driver (%s)", OCL_INSTALL);
        return;
    }
    if (r != TACK_CL_SUCCESS) {
        snprintf(load_why, sizeof load_why, "clGetPlatformIDs failed: %s (%d)", ocl_code_name(r), (int)r);
        return;
    }
    cl_platform_id plats[16];
    if (np > 16) np = 16;
    if ((r = api.clGetPlatformIDs(np, plats, NULL)) != TACK_CL_SUCCESS) {
        snprintf(load_why, sizeof load_why, "clGetPlatformIDs failed: %s (%d)", ocl_code_name(r), (int)r);
        return;
    }
    for (cl_uint i = 0; i < np && nfound < OCL_MAX_DEVICES; i++) {
        cl_device_id devs[OCL_MAX_DEVICES];
        cl_uint nd = 0;
        /* a platform without devices (an installed driver without its hardware) says DEVICE_NOT_FOUND */
        if (api.clGetDeviceIDs(plats[i], TACK_CL_DEVICE_TYPE_ALL, OCL_MAX_DEVICES, devs, &nd) != TACK_CL_SUCCESS)
            continue;
        if (nd > OCL_MAX_DEVICES) nd = OCL_MAX_DEVICES;
        for (cl_uint k = 0; k < nd && nfound < OCL_MAX_DEVICES; k++) {
            found[nfound].platform = plats[i];
            found[nfound].dev = devs[k];
            nfound++;
        }
    }
    if (nfound == 0)
        snprintf(load_why, sizeof load_why, "the installed OpenCL platforms (%u) have no device", (unsigned)np);
}

static void load(void) {
    api.lib = tk_dl_open("libOpenCL.so.1", 0);
    if (!api.lib) {
        const char *e = tk_dl_error();
        if (!e || strstr(e, "No such file"))
            snprintf(load_why, sizeof load_why, "libOpenCL.so.1 not found (%s)", OCL_INSTALL);
        else snprintf(load_why, sizeof load_why, "libOpenCL.so.1 could not be loaded: %.120s (%s)", e, OCL_INSTALL);
        return;
    }
#define REQ(field)                                                                                                     \
    do {                                                                                                               \
        *(void **)&api.field = tk_dl_sym(api.lib, #field);                                                                 \
        if (!api.field) {                                                                                              \
            snprintf(load_why, sizeof load_why, "libOpenCL.so.1 lacks %s (Tack needs OpenCL 1.2)", #field);            \
            return;                                                                                                    \
        }                                                                                                              \
    } while (0)
    REQ(clGetPlatformIDs);
    REQ(clGetPlatformInfo);
    REQ(clGetDeviceIDs);
    REQ(clGetDeviceInfo);
    REQ(clCreateContext);
    REQ(clReleaseContext);
    REQ(clCreateCommandQueue);
    REQ(clReleaseCommandQueue);
    REQ(clCreateBuffer);
    REQ(clReleaseMemObject);
    REQ(clEnqueueReadBuffer);
    REQ(clEnqueueWriteBuffer);
    REQ(clEnqueueCopyBuffer);
    REQ(clEnqueueFillBuffer);
    REQ(clFinish);
    REQ(clCreateProgramWithSource);
    REQ(clCreateProgramWithBinary);
    REQ(clBuildProgram);
    REQ(clGetProgramInfo);
    REQ(clGetProgramBuildInfo);
    REQ(clReleaseProgram);
    REQ(clCreateKernel);
    REQ(clReleaseKernel);
    REQ(clGetKernelInfo);
    REQ(clSetKernelArg);
    REQ(clGetKernelWorkGroupInfo);
    REQ(clEnqueueNDRangeKernel);
#undef REQ
#define OPT(field) (*(void **)&api.field = tk_dl_sym(api.lib, #field))
    OPT(clEnqueueMarkerWithWaitList);
    OPT(clEnqueueBarrierWithWaitList);
    OPT(clWaitForEvents);
    OPT(clGetEventInfo);
    OPT(clGetEventProfilingInfo);
    OPT(clReleaseEvent);
    OPT(clFlush);
    OPT(clSVMAlloc);
    OPT(clSVMFree);
    OPT(clEnqueueSVMFree);
    OPT(clEnqueueSVMMemcpy);
    OPT(clEnqueueSVMMemFill);
    OPT(clSetKernelArgSVMPointer);
#undef OPT
    load_ok = 1;
    enumerate();
}

const tack_opencl_api *ocl_api_get(void) { return load_ok ? &api : NULL; }

const char *ocl_code_name(cl_int r) {
    switch (r) {
    case 0: return "CL_SUCCESS";
    case -1: return "CL_DEVICE_NOT_FOUND";
    case -2: return "CL_DEVICE_NOT_AVAILABLE";
    case -3: return "CL_COMPILER_NOT_AVAILABLE";
    case -4: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case -5: return "CL_OUT_OF_RESOURCES";
    case -6: return "CL_OUT_OF_HOST_MEMORY";
    case -8: return "CL_MEM_COPY_OVERLAP";
    case -11: return "CL_BUILD_PROGRAM_FAILURE";
    case -14: return "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST";
    case -30: return "CL_INVALID_VALUE";
    case -32: return "CL_INVALID_PLATFORM";
    case -33: return "CL_INVALID_DEVICE";
    case -34: return "CL_INVALID_CONTEXT";
    case -36: return "CL_INVALID_COMMAND_QUEUE";
    case -38: return "CL_INVALID_MEM_OBJECT";
    case -42: return "CL_INVALID_BINARY";
    case -43: return "CL_INVALID_BUILD_OPTIONS";
    case -44: return "CL_INVALID_PROGRAM";
    case -45: return "CL_INVALID_PROGRAM_EXECUTABLE";
    case -46: return "CL_INVALID_KERNEL_NAME";
    case -48: return "CL_INVALID_KERNEL";
    case -49: return "CL_INVALID_ARG_INDEX";
    case -50: return "CL_INVALID_ARG_VALUE";
    case -51: return "CL_INVALID_ARG_SIZE";
    case -52: return "CL_INVALID_KERNEL_ARGS";
    case -54: return "CL_INVALID_WORK_GROUP_SIZE";
    case -55: return "CL_INVALID_WORK_ITEM_SIZE";
    case -59: return "CL_INVALID_OPERATION";
    case -61: return "CL_INVALID_BUFFER_SIZE";
    case -63: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "an OpenCL error";
    }
}

tack_status ocl_error(cl_int r, const char *what, const tack_device *d) {
    if (r == TACK_CL_MEM_OBJECT_ALLOCATION_FAILURE || r == TACK_CL_OUT_OF_RESOURCES ||
        r == TACK_CL_OUT_OF_HOST_MEMORY || r == TACK_CL_INVALID_BUFFER_SIZE)
        return tack_set_error(TACK_ERR_NOMEM, "out of device memory on %s in %s (%s)", d->name, what, ocl_code_name(r));
    return tack_set_error(TACK_ERR_DEVICE, "%s failed on %s: %s (OpenCL error %d)", what, d->name, ocl_code_name(r),
                          (int)r);
}

static int ocl_device_count(char *why, size_t why_len) {
    tk_once(&load_once, load);
    if (!load_ok || nfound == 0) {
        snprintf(why, why_len, "%s", load_why);
        return 0;
    }
    return nfound;
}

/* A string property of the device or platform, into buf (truncated to fit). */
static cl_int dev_str(cl_device_id dev, cl_device_info what, char *buf, size_t n) {
    size_t need = 0;
    cl_int r = api.clGetDeviceInfo(dev, what, 0, NULL, &need);
    if (r != TACK_CL_SUCCESS) return r;
    char *tmp = tack_malloc(need + 1);
    if (!tmp) return TACK_CL_OUT_OF_HOST_MEMORY;
    r = api.clGetDeviceInfo(dev, what, need, tmp, NULL);
    tmp[need] = 0;
    if (r == TACK_CL_SUCCESS) snprintf(buf, n, "%s", tmp);
    tack_free(tmp);
    return r;
}

static cl_int plat_str(cl_platform_id p, cl_platform_info what, char *buf, size_t n) {
    size_t need = 0;
    cl_int r = api.clGetPlatformInfo(p, what, 0, NULL, &need);
    if (r != TACK_CL_SUCCESS) return r;
    char *tmp = tack_malloc(need + 1);
    if (!tmp) return TACK_CL_OUT_OF_HOST_MEMORY;
    r = api.clGetPlatformInfo(p, what, need, tmp, NULL);
    tmp[need] = 0;
    if (r == TACK_CL_SUCCESS) snprintf(buf, n, "%s", tmp);
    tack_free(tmp);
    return r;
}

/* Whether the device has double precision: cl_khr_fp64 among its
 * extensions (a whole word), or a non-zero double FP configuration. */
static int has_fp64(cl_device_id dev) {
    char ext[4096] = "";
    if (dev_str(dev, TACK_CL_DEVICE_EXTENSIONS, ext, sizeof ext) == TACK_CL_SUCCESS) {
        const char *w = "cl_khr_fp64";
        for (const char *s = strstr(ext, w); s; s = strstr(s + 1, w)) {
            char after = s[strlen(w)];
            if ((s == ext || s[-1] == ' ') && (after == 0 || after == ' ')) return 1;
        }
    }
    cl_device_fp_config cfg = 0;
    return api.clGetDeviceInfo(dev, TACK_CL_DEVICE_DOUBLE_FP_CONFIG, sizeof cfg, &cfg, NULL) == TACK_CL_SUCCESS &&
           cfg != 0;
}

/* The build options of a plain kernel: OpenCL C 1.2, and f32 division and
 * sqrt correctly rounded where the device can (OpenCL's default allows 2.5
 * and 3 ulps), so f32 results round as on the CPU and in NumPy --
 * tack.random's normals count on it for the same bits everywhere.  f64's
 * are always correctly rounded.  A fast_math kernel gets
 * OCL_BUILD_OPTIONS_FAST instead (opencl_launch.c). */
static const char *build_options(cl_device_id dev) {
    cl_device_fp_config cfg = 0;
    if (api.clGetDeviceInfo(dev, TACK_CL_DEVICE_SINGLE_FP_CONFIG, sizeof cfg, &cfg, NULL) == TACK_CL_SUCCESS &&
        (cfg & TACK_CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT))
        return "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt";
    return "-cl-std=CL1.2";
}

#define CL(call, what)                                                                                                 \
    do {                                                                                                               \
        cl_int r_ = (call);                                                                                            \
        if (r_ != TACK_CL_SUCCESS) {                                                                                   \
            st = ocl_error(r_, what, d);                                                                               \
            goto done;                                                                                                 \
        }                                                                                                              \
    } while (0)

static tack_status ocl_init_device(tack_device *d) {
    tack_status st = TACK_OK;
    cl_int r = TACK_CL_SUCCESS;
    if (d->index < 0 || d->index >= nfound)
        return tack_set_error(TACK_ERR_DEVICE, "no OpenCL device with index %d", d->index);
    ocl_dev *c = tack_calloc(1, sizeof *c);
    if (!c) return tack_set_error(TACK_ERR_NOMEM, "out of memory initializing an OpenCL device");
    c->platform = found[d->index].platform;
    c->dev = found[d->index].dev;
    char pname[200] = "", pver[200] = "", dver[200] = "", drv[200] = "";
    CL(dev_str(c->dev, TACK_CL_DEVICE_NAME, c->name, sizeof c->name), "clGetDeviceInfo(CL_DEVICE_NAME)");
    CL(plat_str(c->platform, TACK_CL_PLATFORM_NAME, pname, sizeof pname), "clGetPlatformInfo(CL_PLATFORM_NAME)");
    CL(plat_str(c->platform, TACK_CL_PLATFORM_VERSION, pver, sizeof pver), "clGetPlatformInfo(CL_PLATFORM_VERSION)");
    CL(dev_str(c->dev, TACK_CL_DEVICE_VERSION, dver, sizeof dver), "clGetDeviceInfo(CL_DEVICE_VERSION)");
    CL(dev_str(c->dev, TACK_CL_DRIVER_VERSION, drv, sizeof drv), "clGetDeviceInfo(CL_DRIVER_VERSION)");
    snprintf(c->platform_id, sizeof c->platform_id, "%s | %s", pname, pver);
    snprintf(d->description, sizeof d->description, "%.100s (%.50s)", c->name, pname);
    snprintf(c->driver, sizeof c->driver, "%s | %s", dver, drv);
    CL(api.clGetDeviceInfo(c->dev, TACK_CL_DEVICE_MAX_COMPUTE_UNITS, sizeof c->units, &c->units, NULL),
       "clGetDeviceInfo(CL_DEVICE_MAX_COMPUTE_UNITS)");
    CL(api.clGetDeviceInfo(c->dev, TACK_CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof c->max_group, &c->max_group, NULL),
       "clGetDeviceInfo(CL_DEVICE_MAX_WORK_GROUP_SIZE)");
    if (c->units == 0) c->units = 1;
    if (c->max_group == 0) c->max_group = 1;
    c->fp64 = has_fp64(c->dev);
    cl_device_type type = 0;
    c->lazy_binary = api.clGetDeviceInfo(c->dev, TACK_CL_DEVICE_TYPE, sizeof type, &type, NULL) == TACK_CL_SUCCESS &&
                     (type & TACK_CL_DEVICE_TYPE_CPU);
    c->build_options = build_options(c->dev);
    d->host_cores = c->lazy_binary; /* a CPU device: tack_device_on_host_cores */
    d->threads = (int)c->units;
    cl_ulong mem = 0;
    if (api.clGetDeviceInfo(c->dev, TACK_CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL) == TACK_CL_SUCCESS)
        d->memory = mem;
    cl_context_properties props[3] = { TACK_CL_CONTEXT_PLATFORM, (cl_context_properties)c->platform, 0 };
    c->ctx = api.clCreateContext(props, 1, &c->dev, NULL, NULL, &r);
    CL(c->ctx ? r : (r ? r : TACK_CL_OUT_OF_RESOURCES), "clCreateContext");
    /* in order; profiled, so that an event recorded on it can time (opencl_stream.c) */
    c->queue = api.clCreateCommandQueue(c->ctx, c->dev, TACK_CL_QUEUE_PROFILING_ENABLE, &r);
    CL(c->queue ? r : (r ? r : TACK_CL_OUT_OF_RESOURCES), "clCreateCommandQueue");
    if ((st = ocl_svm_choose(c, dver)) != TACK_OK) goto done;
    d->host_memory = c->svm; /* fine-grained SVM is host memory: DLPack says kDLCPU */
    d->opaque_data = !c->svm; /* a cl_mem handle is no address: overlap tests compare storages */
    gpu_records_init(&c->rec, "the OpenCL device");
    d->state = c;
    c = NULL;
done:
    if (c) {
        if (c->queue) api.clReleaseCommandQueue(c->queue);
        if (c->ctx) api.clReleaseContext(c->ctx);
        tack_free(c);
    }
    return st;
}

static tack_status ocl_alloc(tack_device *d, size_t nbytes, void **out) {
    ocl_dev *c = d->state;
    cl_int r = TACK_CL_SUCCESS;
    if (c->svm) return ocl_svm_alloc(d, nbytes, out);
    cl_mem m = api.clCreateBuffer(c->ctx, TACK_CL_MEM_READ_WRITE, nbytes ? nbytes : 1, NULL, &r);
    if (!m || r != TACK_CL_SUCCESS) {
        char what[80];
        snprintf(what, sizeof what, "clCreateBuffer of %zu bytes", nbytes);
        return ocl_error(r ? r : TACK_CL_MEM_OBJECT_ALLOCATION_FAILURE, what, d);
    }
    *out = (void *)m;
    return TACK_OK;
}

static void ocl_free(tack_device *d, void *ptr) {
    if (((ocl_dev *)d->state)->svm)
        ocl_svm_free(d, ptr);
    else if (ptr)
        api.clReleaseMemObject((cl_mem)ptr);
}

static tack_status ocl_copy(tack_device *d, void *dst, const void *src, size_t n, rt_copy_kind kind) {
    ocl_dev *c = d->state;
    tack_status st = TACK_OK;
    if (c->svm) return ocl_svm_copy(d, dst, src, n, kind);
    if (n == 0) return TACK_OK;
    switch (kind) {
    case RT_COPY_H2D:
        CL(api.clEnqueueWriteBuffer(ocl_queue(d), (cl_mem)dst, TACK_CL_TRUE, 0, n, src, 0, NULL, NULL),
           "clEnqueueWriteBuffer");
        break;
    case RT_COPY_D2H:
        CL(api.clEnqueueReadBuffer(ocl_queue(d), (cl_mem)src, TACK_CL_TRUE, 0, n, dst, 0, NULL, NULL),
           "clEnqueueReadBuffer");
        /* a synchronization point: a failed check of a kernel before it is reported */
        st = ocl_check_record(d);
        break;
    case RT_COPY_D2D:
        if (dst == src) break; /* the whole buffer onto itself */
        CL(api.clEnqueueCopyBuffer(ocl_queue(d), (cl_mem)src, (cl_mem)dst, 0, 0, n, 0, NULL, NULL), "clEnqueueCopyBuffer");
        break;
    }
done:
    return st;
}

static tack_status ocl_fill(tack_device *d, void *dst, const void *value, size_t itemsize, size_t count) {
    ocl_dev *c = d->state;
    tack_status st = TACK_OK;
    unsigned char *staging = NULL;
    size_t total;
    if (c->svm) return ocl_svm_fill(d, dst, value, itemsize, count);
    if (count == 0) return TACK_OK;
    if (!rt_mul_overflow_size(itemsize, count, &total))
        return tack_set_error(TACK_ERR_VALUE, "fill of %zu elements of %zu bytes overflows", count, itemsize);
    if (itemsize && itemsize <= 128 && (itemsize & (itemsize - 1)) == 0) {
        /* the pattern sizes OpenCL fills (powers of two up to 128); the pattern is copied when queued */
        CL(api.clEnqueueFillBuffer(ocl_queue(d), (cl_mem)dst, value, itemsize, 0, total, 0, NULL, NULL),
           "clEnqueueFillBuffer");
    } else {
        /* vec3 and the like: fill a host block once and copy it out */
        if (!(staging = tack_malloc(total))) {
            st = tack_set_error(TACK_ERR_NOMEM, "out of memory staging a fill of %zu bytes on %s", total, d->name);
            goto done;
        }
        for (size_t i = 0; i < count; i++) memcpy(staging + i * itemsize, value, itemsize);
        CL(api.clEnqueueWriteBuffer(ocl_queue(d), (cl_mem)dst, TACK_CL_TRUE, 0, total, staging, 0, NULL, NULL),
           "clEnqueueWriteBuffer");
    }
done:
    tack_free(staging);
    return st;
}

static tack_status ocl_synchronize(tack_device *d) {
    ocl_dev *c = d->state;
    tack_status st = TACK_OK;
    CL(api.clFinish(c->queue), "clFinish");
    st = rt_streams_sync(d); /* and every stream of the program's (opencl_stream.c) */
    if (st == TACK_OK) st = ocl_check_record(d);
done:
    return st;
}

/* In the SVM mode: an address inside one of Tack's SVM allocations on the
 * device.  In the buffer mode an array is a cl_mem handle, not an address,
 * and a handle from elsewhere cannot be checked without the loader
 * dereferencing it: wrapping anything is refused rather than trusted. */
static tack_status ocl_check_ptr(tack_device *d, const void *ptr, size_t nbytes) {
    ocl_dev *c = d->state;
    if (c->svm) return ocl_svm_check_ptr(d, ptr, nbytes);
    return tack_set_error(TACK_ERR_UNSUPPORTED,
                          "cannot share %p with %s (%s): it has no shared virtual memory Tack can use (%s), so its "
                          "arrays are cl_mem buffers, which have no address to share; copy the data in with "
                          "tack.array(..., device='%s')",
                          ptr, d->name, c->name, c->no_svm, d->name);
}

static const rt_backend ocl_backend = {
    .name = "opencl",
    .type = TACK_DEVICE_OPENCL,
    .dialect = "opencl",
    .device_count = ocl_device_count,
    .init_device = ocl_init_device,
    .alloc = ocl_alloc,
    .free = ocl_free,
    .copy = ocl_copy,
    .fill = ocl_fill,
    .synchronize = ocl_synchronize,
    .build = ocl_build,
    .launch = ocl_launch,
    .unload = ocl_unload,
    .check_ptr = ocl_check_ptr,
    .streams = &ocl_stream_ops,
};

const rt_backend *rt_backend_opencl(void) { return &ocl_backend; }
