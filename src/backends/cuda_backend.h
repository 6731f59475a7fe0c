/*
 * cuda_backend.h -- what cuda.c (devices, memory, copies) and cuda_launch.c
 * (building, caching, launching kernels; the device-side error record) share.
 *
 * One cuda_dev per Tack CUDA device: the GPU's primary context, the stream
 * all of Tack's work on that device is ordered on, and the kernel state --
 * the error record in device memory that generated code writes when a check
 * fails, the list of programs built for the device (so that a failure read
 * from the record can be worded from its program's site table), and an
 * error kept for the next synchronization point when a program is freed
 * with a failure still unreported.
 */
#ifndef TACK_CUDA_BACKEND_H
#define TACK_CUDA_BACKEND_H

#include <pthread.h>

#include "backends/cuda_api.h"
#include "backends/gpu_common.h"
#include "runtime/runtime.h"

/* The addresses cuMemAllocAsync gave and not yet freed: each is freed with
 * cuMemFreeAsync, every other address with cuMemFree.  Open addressing;
 * 0 is an empty slot, 1 a removed one. */
typedef struct cuda_ptrset {
    CUdeviceptr *slot;
    size_t cap, used, live;
} cuda_ptrset;

typedef struct cuda_dev {
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    int major, minor;
    /* memory: under mem_lock */
    pthread_mutex_t mem_lock;
    int pools;                 /* allocate with cuMemAllocAsync; off for good after a failure other than OOM */
    cuda_ptrset pooled;        /* live cuMemAllocAsync allocations */
    char name[128];
    /* kernels: cuda_launch.c, under `rec.lock` */
    gpu_records rec;           /* programs built for this device, an error kept (gpu_common.h) */
    CUdeviceptr err;           /* the error record, a gpu_err_record (0 until the first build) */
} cuda_dev;

/* cuda.c */
const tack_cuda_api *cuda_api_get(void);
tack_status cuda_push(tack_device *d);
void cuda_pop(void);
tack_status cuda_error(CUresult r, const char *what);

/* cuda_launch.c: the vtable's build / launch / unload */
tack_status cuda_build(tack_device *d, tack_program *p);
tack_status cuda_launch(tack_device *d, tack_program *p, const tack_arg *args, int nargs);
void cuda_unload(tack_device *d, tack_program *p);
/* After the stream has been synchronized (context pushed): report a failed
 * check recorded on the device, or an error kept from a freed program, and
 * clear it.  TACK_OK when there is none. */
tack_status cuda_check_record(tack_device *d);

#endif /* TACK_CUDA_BACKEND_H */
