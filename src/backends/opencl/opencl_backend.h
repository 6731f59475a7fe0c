/*
 * opencl_backend.h -- what opencl.c (devices, memory, copies) and
 * opencl_launch.c (building, caching, launching kernels; the device-side
 * error record) share.
 *
 * One ocl_dev per Tack OpenCL device: its platform and device handles, a
 * context of its own, the one in-order command queue all of Tack's work on
 * the device is ordered on, what the launcher needs to know of the device
 * (names and versions for the cache key, work-group limits, fp64), and the
 * kernel state -- the error record that generated code writes when a check
 * fails, the list of programs built for the device (so that a failure read
 * from the record can be worded from its program's site table), and an
 * error kept for the next synchronization point when a program is freed
 * with a failure still unreported.
 *
 * An array's data pointer on an OpenCL device is, by the device's memory
 * mode (opencl_svm.c), either its cl_mem handle -- opaque, never offset or
 * dereferenced -- or, where the device has fine-grained buffer shared
 * virtual memory, the address of a clSVMAlloc allocation, which the host
 * reads and writes as it is.
 */
#ifndef TACK_OPENCL_BACKEND_H
#define TACK_OPENCL_BACKEND_H

#include "platform/platform.h"

#include "backends/common/gpu_common.h"
#include "backends/opencl/opencl_api.h"
#include "runtime/runtime.h"

typedef struct ocl_dev {
    cl_platform_id platform;
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue queue;
    char name[256];            /* CL_DEVICE_NAME */
    char platform_id[512];     /* platform name and version (cache key) */
    char driver[512];          /* device version and driver version (cache key) */
    cl_uint units;             /* compute units */
    size_t max_group;          /* max work-group size */
    int fp64;
    int lazy_binary;           /* a CPU device: its program binary is cached from its second build on (opencl_launch.c) */
    const char *build_options; /* clBuildProgram options of a plain kernel: opencl.c chooses them per device */
    /* memory: opencl_svm.c */
    cl_device_svm_capabilities svm_caps; /* what the device reports (0 before OpenCL 2.0) */
    int svm;                   /* arrays are fine-grained SVM allocations, not cl_mem buffers */
    char no_svm[160];          /* when !svm: why, for errors ("has no shared virtual memory") */
    tk_mutex_t svm_lock;  /* guards the table of live SVM allocations */
    struct ocl_svm_block *blocks;
    size_t nblocks, cap_blocks;
    /* kernels: opencl_launch.c, under `rec.lock` */
    gpu_records rec;           /* programs built for this device, an error kept (gpu_common.h) */
    cl_mem err;                /* the error record, a gpu_err_record (NULL until the first build) */
} ocl_dev;

/* A fast_math kernel's clBuildProgram options, on every device: no
 * correctly rounded division or sqrt asked for (opencl_launch.c). */
#define OCL_BUILD_OPTIONS_FAST "-cl-std=CL1.2 -cl-fast-relaxed-math"

/* opencl.c */
const tack_opencl_api *ocl_api_get(void);
/* The error for a failed OpenCL call: TACK_ERR_NOMEM for the out-of-memory
 * codes, TACK_ERR_DEVICE naming the call, the code and the device otherwise. */
tack_status ocl_error(cl_int r, const char *what, const tack_device *d);
const char *ocl_code_name(cl_int r);

/* opencl_svm.c: the memory mode, chosen once per device at init (svm,
 * svm_caps, no_svm; TACK_OPENCL_SVM=0 forces buffers); TACK_ERR_VALUE for a
 * bad TACK_OPENCL_SVM.  Then the SVM half of the vtable's memory entries. */
tack_status ocl_svm_choose(ocl_dev *c, const char *device_version);
tack_status ocl_svm_alloc(tack_device *d, size_t nbytes, void **out);
void ocl_svm_free(tack_device *d, void *ptr);
tack_status ocl_svm_copy(tack_device *d, void *dst, const void *src, size_t n, rt_copy_kind kind);
tack_status ocl_svm_fill(tack_device *d, void *dst, const void *value, size_t itemsize, size_t count);
/* TACK_OK when [ptr, ptr+nbytes) lies in one live SVM allocation Tack made on d. */
tack_status ocl_svm_check_ptr(tack_device *d, const void *ptr, size_t nbytes);

/* opencl_stream.c: streams and events (each stream an in-order command queue
 * of the device's context), and the queue work is put on now: the calling
 * thread's current stream on d (runtime/stream.c), else the device's own. */
extern const rt_stream_ops ocl_stream_ops;
/* A profile's timer of a launch: the device time from `first`'s start to `last`'s end (both owned). */
rt_prof_timer ocl_timer_of(tack_device *d, cl_event first, cl_event last);
static inline cl_command_queue ocl_queue(tack_device *d) {
    tack_stream *s = rt_stream_now(d);
    return s ? (cl_command_queue)s->handle : ((ocl_dev *)d->state)->queue;
}

/* opencl_launch.c: builds from source that asked the driver for the
 * program binary, and those that left it for a later build (test_opencl.c) */
extern _Atomic unsigned long ocl_binaries_fetched, ocl_binaries_deferred;
/* opencl_launch.c: the vtable's build / launch / unload */
tack_status ocl_build(tack_device *d, tack_program *p);
tack_status ocl_launch(tack_device *d, tack_program *p, const tack_arg *args, int nargs);
void ocl_unload(tack_device *d, tack_program *p);
/* After the queue has drained: report a failed check recorded on the
 * device, or an error kept from a freed program, and clear it.  TACK_OK
 * when there is none. */
tack_status ocl_check_record(tack_device *d);

#endif /* TACK_OPENCL_BACKEND_H */
