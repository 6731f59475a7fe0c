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
 *
 * Sticky errors (an illegal address, a trap, a failed launch...) poison
 * the primary context: every later driver call in it fails the same way.
 * The first one seen marks the device lost; it is reported once, naming
 * the kernel launched last, and from then on every operation on the device
 * fails at once without calling the driver (frees do nothing).
 */
#ifndef TACK_CUDA_BACKEND_H
#define TACK_CUDA_BACKEND_H

#include "platform/platform.h"

#include "backends/cuda/cuda_api.h"
#include "backends/common/gpu_common.h"
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
    int driver;                /* cuDriverGetVersion: CUDA version major*1000 + minor*10 */
    int sm_threads;            /* resident threads per multiprocessor (2048 when not said) */
    int max_block;             /* threads a block (CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK; -1: not said) */
    int max_shared;            /* static shared memory a block, bytes (..._MAX_SHARED_MEMORY_PER_BLOCK; -1) */
    /* memory: under mem_lock */
    tk_mutex_t mem_lock;
    int pools;                 /* allocate with cuMemAllocAsync; off for good after a failure other than OOM */
    cuda_ptrset pooled;        /* live cuMemAllocAsync allocations */
    char name[128];
    /* kernels: cuda_launch.c, under `rec.lock` */
    gpu_records rec;           /* programs built for this device, an error kept (gpu_common.h) */
    CUdeviceptr err;           /* the error record, a gpu_err_record (0 until the first build) */
    gpu_lost lost;             /* a sticky error (gpu_common.h) */
} cuda_dev;

/* The stream a copy, fill or launch on d goes to: the thread's current one
 * on d (runtime/stream.c), else Tack's own. */
static inline CUstream cuda_queue(tack_device *d) {
    tack_stream *s = rt_stream_now(d);
    return s ? (CUstream)s->handle : ((cuda_dev *)d->state)->stream;
}

/* cuda_stream.c: streams and events other than Tack's own (rt_stream_ops). */
extern const rt_stream_ops cuda_stream_ops;

/* cuda.c */
const tack_cuda_api *cuda_api_get(void);
/* Push d's context; fails at once when d is lost. */
tack_status cuda_push(tack_device *d);
void cuda_pop(void);
tack_status cuda_error(CUresult r, const char *what);
/* Whether r is a sticky error: one that loses the context for good. */
int cuda_sticky(CUresult r);
/* cuda_error, except that a sticky error marks d lost and says so. */
tack_status cuda_fail(tack_device *d, CUresult r, const char *what);
/* Mark d lost when r is sticky, reporting nothing (frees, unloads). */
void cuda_note(tack_device *d, CUresult r);
/* Whether d is lost; cuda_lost_error says so (TACK_OK when it is not):
 * the loss itself the first time, "unusable since" after that. */
int cuda_is_lost(tack_device *d);
tack_status cuda_lost_error(tack_device *d);
/* A kernel's launches were queued: the name a loss is reported after. */
void cuda_note_launch(tack_device *d, const char *kernel);

/* cuda_image.c: what the device is given to load (PTX or a cubin) */
#define CUDA_LAUNCH_ABI 1
enum { CUDA_IMAGE_PTX, CUDA_IMAGE_CUBIN, CUDA_IMAGE_NONE };
typedef struct cuda_image {
    char *buf;          /* to free (cuda_image_free) */
    const void *image;  /* what cuModuleLoadDataEx is given: in buf */
    size_t len;
    int cubin;          /* a cubin for sm_XY; else PTX for compute_XY */
    char arch[32];      /* "compute_90", "sm_90" */
    char path[200];     /* the cache entry's name */
} cuda_image;
/* What a driver of CUDA version `driver` can load from an NVRTC of version
 * `nvrtc` (both major*1000 + minor*10): CUDA_IMAGE_PTX, _CUBIN or _NONE. */
int cuda_image_kind(int driver, int nvrtc);
/* The PTX ISA version (major*10 + minor) of CUDA version v; 0 if unknown. */
int cuda_ptx_isa(int v);
/* The `.version` of PTX text as major*10 + minor; 0 when it has none. */
int cuda_ptx_version(const char *ptx);
/* "the NVIDIA driver supports CUDA 12.4 (...) and NVRTC is CUDA 13.0 (...), from ..." */
void cuda_versions_sentence(char *out, size_t n, int driver, int nvrtc);
/* The image for p on d, from the cache unless refresh, else from NVRTC. */
tack_status cuda_image_get(tack_device *d, tack_program *p, int refresh, cuda_image *im);
void cuda_image_free(cuda_image *im);

/* cuda_launch.c: the vtable's build / launch / unload */
tack_status cuda_build(tack_device *d, tack_program *p);
tack_status cuda_launch(tack_device *d, tack_program *p, const tack_arg *args, int nargs);
void cuda_unload(tack_device *d, tack_program *p);
/* After the stream has been synchronized (context pushed): report a failed
 * check recorded on the device, or an error kept from a freed program, and
 * clear it.  TACK_OK when there is none. */
tack_status cuda_check_record(tack_device *d);

#endif /* TACK_CUDA_BACKEND_H */
