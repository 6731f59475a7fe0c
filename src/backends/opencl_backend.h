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
 * An array's data pointer on an OpenCL device is its cl_mem handle: opaque,
 * never offset or dereferenced.
 */
#ifndef TACK_OPENCL_BACKEND_H
#define TACK_OPENCL_BACKEND_H

#include <pthread.h>

#include "backends/gpu_common.h"
#include "backends/opencl_api.h"
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
    /* kernels: opencl_launch.c, under `rec.lock` */
    gpu_records rec;           /* programs built for this device, an error kept (gpu_common.h) */
    cl_mem err;                /* the error record, a gpu_err_record (NULL until the first build) */
} ocl_dev;

/* opencl.c */
const tack_opencl_api *ocl_api_get(void);
/* The error for a failed OpenCL call: TACK_ERR_NOMEM for the out-of-memory
 * codes, TACK_ERR_DEVICE naming the call, the code and the device otherwise. */
tack_status ocl_error(cl_int r, const char *what, const tack_device *d);
const char *ocl_code_name(cl_int r);

/* opencl_launch.c: the vtable's build / launch / unload */
tack_status ocl_build(tack_device *d, tack_program *p);
tack_status ocl_launch(tack_device *d, tack_program *p, const tack_arg *args, int nargs);
void ocl_unload(tack_device *d, tack_program *p);
/* After the queue has drained: report a failed check recorded on the
 * device, or an error kept from a freed program, and clear it.  TACK_OK
 * when there is none. */
tack_status ocl_check_record(tack_device *d);

#endif /* TACK_OPENCL_BACKEND_H */
