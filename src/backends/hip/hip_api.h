/*
 * hip_api.h -- the slice of the HIP runtime (libamdhip64) that Tack calls.
 *
 * Tack loads libamdhip64 with dlopen at run time, so it builds and imports
 * on machines without ROCm.  These are our own declarations of the few
 * types and entry points we use, matching the documented C ABI of HIP
 * (hipError_t is an int enum whose codes follow CUDA's; handles are opaque
 * pointers; device pointers are plain addresses).  Function pointers live
 * in one table, filled once by hip_load().
 *
 * Two structs are read by offset rather than declared whole, because they
 * grew between ROCm releases:
 *   - hipDeviceProp_t, through the unversioned `hipGetDeviceProperties`
 *     symbol, whose layout is ROCm 5's (ROCm 6 gives its new layout to
 *     hipGetDevicePropertiesR0600 and keeps the old one under the old name):
 *     `name` at 0 and `gcnArchName` (char[256]) at 396, in a buffer far
 *     larger than the struct.
 *   - hipPointerAttribute_t: {memory type, device, device pointer, host
 *     pointer, ...}; its memory-type codes changed in ROCm 6 (host 0 / device
 *     1 before; unregistered 0, host 1, device 2, managed 3 from 6.0), so
 *     they are read against the runtime's version (hip_memory_kind).
 */
#ifndef TACK_HIP_API_H
#define TACK_HIP_API_H

#include <stddef.h>
#include <stdint.h>

typedef int hipError_t; /* 0 = hipSuccess */
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;
typedef struct ihipEvent_t *hipEvent_t;
typedef struct ihipGraph *hipGraph_t;
typedef struct hipGraphExec *hipGraphExec_t;

#define TACK_HIP_SUCCESS 0
#define TACK_HIP_ERROR_NOT_READY 600
#define TACK_HIP_ERROR_INVALID_VALUE 1
#define TACK_HIP_ERROR_OUT_OF_MEMORY 2
#define TACK_HIP_ERROR_NO_DEVICE 100
#define TACK_HIP_ERROR_INVALID_DEVICE 101
#define TACK_HIP_ERROR_NO_BINARY_FOR_GPU 209
#define TACK_HIP_EVENT_DISABLE_TIMING 2
#define TACK_HIP_STREAM_CAPTURE_MODE_RELAXED 2 /* hipStreamCaptureMode (graph.c refuses what matters) */
#define TACK_HIP_MEMCPY_H2D 1
#define TACK_HIP_MEMCPY_D2H 2
#define TACK_HIP_MEMCPY_D2D 3
/* hipDeviceAttribute_t (ROCm 5 and 6) */
#define TACK_HIP_ATTR_MAX_THREADS_PER_MULTIPROCESSOR 57
#define TACK_HIP_ATTR_MULTIPROCESSOR_COUNT 63
#define TACK_HIP_ATTR_WARP_SIZE 87
#define TACK_HIP_ATTR_MAX_THREADS_PER_BLOCK 56
#define TACK_HIP_ATTR_MAX_SHARED_MEMORY_PER_BLOCK 74
/* hipFunction_attribute (CUDA's numbering) */
#define TACK_HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK 0
#define TACK_HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES 1
/* hipModuleLaunchKernel's `extra`: the argument buffer and its size */
#define TACK_HIP_LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01)
#define TACK_HIP_LAUNCH_PARAM_BUFFER_SIZE ((void *)0x02)
#define TACK_HIP_LAUNCH_PARAM_END ((void *)0x03)
/* hipDeviceProp_t as the unversioned hipGetDeviceProperties writes it */
#define TACK_HIP_PROP_BYTES 8192
#define TACK_HIP_PROP_NAME 0
#define TACK_HIP_PROP_GCN_ARCH_NAME 396

/* hipPointerAttribute_t's first fields (32 bytes in ROCm 5, more in 6) */
typedef struct tack_hip_ptr_attr {
    int type;
    int device;
    void *device_pointer;
    void *host_pointer;
    unsigned char rest[256];
} tack_hip_ptr_attr;

enum { HIP_MEM_UNKNOWN, HIP_MEM_HOST, HIP_MEM_DEVICE, HIP_MEM_MANAGED };

typedef struct tack_hip_api {
    void *lib;
    int runtime;    /* hipRuntimeGetVersion: major*10000000 + minor*100000 + patch */
    hipError_t (*hipInit)(unsigned flags);
    hipError_t (*hipRuntimeGetVersion)(int *v);
    hipError_t (*hipGetDeviceCount)(int *n);
    hipError_t (*hipGetDevice)(int *d);
    hipError_t (*hipSetDevice)(int d);
    hipError_t (*hipDeviceGetAttribute)(int *v, int attr, int d);
    hipError_t (*hipGetDeviceProperties)(void *prop, int d);
    hipError_t (*hipStreamCreate)(hipStream_t *s);
    hipError_t (*hipStreamSynchronize)(hipStream_t s);
    hipError_t (*hipStreamWaitEvent)(hipStream_t s, hipEvent_t e, unsigned flags);
    hipError_t (*hipEventCreateWithFlags)(hipEvent_t *e, unsigned flags);
    hipError_t (*hipEventRecord)(hipEvent_t e, hipStream_t s);
    hipError_t (*hipEventDestroy)(hipEvent_t e);
    /* may be NULL: then a profile has no device times (profile.c) */
    hipError_t (*hipEventSynchronize)(hipEvent_t e);
    hipError_t (*hipEventQuery)(hipEvent_t e);      /* may be NULL: then no streams (hip_stream.c) */
    hipError_t (*hipStreamDestroy)(hipStream_t s);  /* may be NULL: then no streams */
    hipError_t (*hipEventElapsedTime)(float *ms, hipEvent_t start, hipEvent_t stop);
    /* graphs (hip_stream.c); each may be NULL: then a capture is refused naming it */
    hipError_t (*hipStreamBeginCapture)(hipStream_t s, int mode);
    hipError_t (*hipStreamEndCapture)(hipStream_t s, hipGraph_t *g);
    hipError_t (*hipGraphInstantiate)(hipGraphExec_t *e, hipGraph_t g, void *error_node, char *log, size_t n);
    hipError_t (*hipGraphLaunch)(hipGraphExec_t e, hipStream_t s);
    hipError_t (*hipGraphExecDestroy)(hipGraphExec_t e);
    hipError_t (*hipGraphDestroy)(hipGraph_t g);
    hipError_t (*hipDeviceTotalMem)(size_t *bytes, int d); /* may be NULL (reports only) */
    hipError_t (*hipMalloc)(void **p, size_t n);
    hipError_t (*hipFree)(void *p);
    hipError_t (*hipMemcpyAsync)(void *dst, const void *src, size_t n, int kind, hipStream_t s);
    hipError_t (*hipMemsetD8Async)(void *dst, unsigned char v, size_t n, hipStream_t s);
    hipError_t (*hipMemsetD16Async)(void *dst, unsigned short v, size_t n, hipStream_t s);
    hipError_t (*hipMemsetD32Async)(void *dst, int v, size_t n, hipStream_t s);
    hipError_t (*hipModuleLoadData)(hipModule_t *m, const void *image);
    hipError_t (*hipModuleUnload)(hipModule_t m);
    hipError_t (*hipModuleGetFunction)(hipFunction_t *f, hipModule_t m, const char *name);
    hipError_t (*hipModuleLaunchKernel)(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                        unsigned by, unsigned bz, unsigned shared, hipStream_t s, void **params,
                                        void **extra);
    /* may be NULL: then a blocks loop's block is checked against the device's limits only */
    hipError_t (*hipFuncGetAttribute)(int *v, int attr, hipFunction_t f);
    /* may be NULL: then blocks per compute unit come from the thread limit */
    hipError_t (*hipModuleOccupancyMaxActiveBlocksPerMultiprocessor)(int *n, hipFunction_t f, int block,
                                                                    size_t shared);
    hipError_t (*hipPointerGetAttributes)(tack_hip_ptr_attr *a, const void *p);
    const char *(*hipGetErrorName)(hipError_t r);
    const char *(*hipGetErrorString)(hipError_t r);
} tack_hip_api;

/* The HIP runtime, loaded on first use (TACK_HIP_PATH names the library to
 * use instead of libamdhip64.so.*); NULL when there is none, with the
 * reason in `why`. */
const tack_hip_api *hip_load(char *why, size_t why_len);

/* A pointer attribute's memory type as HIP_MEM_*, for the runtime's version. */
int hip_memory_kind(const tack_hip_api *api, int type);

#endif
