/*
 * cuda_api.h -- the slice of the CUDA driver API and NVRTC that Tack calls.
 *
 * Tack loads libcuda and libnvrtc with dlopen at run time, so it builds and
 * imports on machines without CUDA.  These are our own declarations of the
 * few types and entry points we use, matching the documented C ABI of the
 * driver API (CUresult is an int enum; handles are opaque pointers; device
 * pointers are 64-bit integers).  Function pointers live in one table,
 * filled once by cuda_load().
 */
#ifndef TACK_CUDA_API_H
#define TACK_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;            /* 0 = CUDA_SUCCESS */
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef uint64_t CUdeviceptr;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;

#define TACK_CUDA_SUCCESS 0
#define TACK_CUDA_ERROR_NOT_READY 600
#define TACK_CUDA_ERROR_OUT_OF_MEMORY 2
#define TACK_CUDA_ERROR_NO_DEVICE 100
#define TACK_CUDA_ERROR_UNSUPPORTED_PTX_VERSION 222
#define TACK_CU_EVENT_DISABLE_TIMING 2
#define TACK_CU_STREAM_NON_BLOCKING 1
#define TACK_CU_STREAM_CAPTURE_MODE_RELAXED 2 /* CUstreamCaptureMode: Tack refuses what matters itself (graph.c) */
#define TACK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define TACK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define TACK_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define TACK_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR 39
#define TACK_CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED 115
#define TACK_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK 1
#define TACK_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK 8
#define TACK_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK 0 /* CUfunction_attribute */
#define TACK_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES 1
#define TACK_CU_JIT_ERROR_LOG_BUFFER 5
#define TACK_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#define TACK_CU_POINTER_ATTRIBUTE_CONTEXT 1
#define TACK_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define TACK_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9
#define TACK_CU_MEMORYTYPE_DEVICE 2

typedef struct tack_cuda_api {
    void *lib;
    CUresult (*cuInit)(unsigned flags);
    CUresult (*cuDriverGetVersion)(int *v);
    CUresult (*cuDeviceGetCount)(int *n);
    CUresult (*cuDeviceGet)(CUdevice *d, int ordinal);
    CUresult (*cuDeviceGetName)(char *name, int len, CUdevice d);
    CUresult (*cuDeviceGetAttribute)(int *v, int attr, CUdevice d);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice d);
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice d);
    CUresult (*cuCtxPushCurrent)(CUcontext ctx);
    CUresult (*cuCtxPopCurrent)(CUcontext *ctx);
    CUresult (*cuCtxGetCurrent)(CUcontext *ctx);
    CUresult (*cuStreamCreate)(CUstream *s, unsigned flags);
    CUresult (*cuStreamSynchronize)(CUstream s);
    CUresult (*cuStreamWaitEvent)(CUstream s, CUevent e, unsigned flags);
    CUresult (*cuEventCreate)(CUevent *e, unsigned flags);
    CUresult (*cuEventRecord)(CUevent e, CUstream s);
    CUresult (*cuEventDestroy)(CUevent e);
    /* may be NULL: then a profile has no device times (profile.c) */
    CUresult (*cuEventSynchronize)(CUevent e);
    CUresult (*cuEventQuery)(CUevent e);        /* may be NULL: then no streams (cuda_stream.c) */
    CUresult (*cuStreamDestroy)(CUstream s);    /* may be NULL: then no streams */
    CUresult (*cuEventElapsedTime)(float *ms, CUevent start, CUevent stop);
    CUresult (*cuMemAlloc)(CUdeviceptr *p, size_t n);
    CUresult (*cuMemFree)(CUdeviceptr p);
    CUresult (*cuMemAllocAsync)(CUdeviceptr *p, size_t n, CUstream s); /* may be NULL */
    CUresult (*cuMemFreeAsync)(CUdeviceptr p, CUstream s);             /* may be NULL */
    CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t n, CUstream s);
    CUresult (*cuMemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t n, CUstream s);
    CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
    CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char v, size_t n, CUstream s);
    CUresult (*cuMemsetD16Async)(CUdeviceptr dst, unsigned short v, size_t n, CUstream s);
    CUresult (*cuMemsetD32Async)(CUdeviceptr dst, unsigned int v, size_t n, CUstream s);
    CUresult (*cuModuleLoadDataEx)(CUmodule *m, const void *image, unsigned nopts, int *opts, void **values);
    CUresult (*cuModuleUnload)(CUmodule m);
    CUresult (*cuModuleGetFunction)(CUfunction *f, CUmodule m, const char *name);
    CUresult (*cuLaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shared, CUstream s, void **params,
                               void **extra);
    /* may be NULL: then blocks per SM come from the thread limit */
    CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *n, CUfunction f, int block, size_t shared);
    /* optional: without it a blocks loop's block is checked against the device's limits only */
    CUresult (*cuFuncGetAttribute)(int *v, int attr, CUfunction f);
    /* graphs (cuda_stream.c); each may be NULL: then a capture is refused naming it */
    CUresult (*cuStreamBeginCapture)(CUstream s, int mode); /* cuStreamBeginCapture_v2 */
    CUresult (*cuStreamEndCapture)(CUstream s, CUgraph *g);
    CUresult (*cuGraphInstantiate)(CUgraphExec *e, CUgraph g, unsigned long long flags); /* ...WithFlags */
    CUresult (*cuGraphLaunch)(CUgraphExec e, CUstream s);
    CUresult (*cuGraphExecDestroy)(CUgraphExec e);
    CUresult (*cuGraphDestroy)(CUgraph g);
    CUresult (*cuDeviceTotalMem)(size_t *bytes, CUdevice d); /* may be NULL (reports only) */
    CUresult (*cuPointerGetAttribute)(void *data, int attr, CUdeviceptr p);
    CUresult (*cuGetErrorString)(CUresult r, const char **s);
} tack_cuda_api;

/* The driver API, loaded on first use; NULL when there is no driver, with
 * the reason in `why`. */
const tack_cuda_api *cuda_load(char *why, size_t why_len);

/* NVRTC (nvrtc.c): tack_nvrtc_compile and tack_nvrtc_version are exported,
 * declared in private/tack_private.h (not installed). */
#include "private/tack_private.h"
#include "tack.h"
/* The options tack_nvrtc_compile passes after the architecture, as one
 * string (for cache keys). */
const char *nvrtc_options(unsigned flags);
/* Compile to PTX for compute_<arch> (cubin 0) or to a cubin for sm_<arch>
 * (cubin 1; arch is major*10 + minor).  *image is NUL-terminated, *len its
 * size without that NUL; release with tack_free. */
tack_status nvrtc_build(const char *source, const char *name, int arch, int cubin, unsigned flags, char **image,
                        size_t *len);
/* The newest architecture NVRTC can compile for that is not newer than cc
 * (major*10 + minor): cc itself when NVRTC cannot list them; 0 when none or
 * when NVRTC is missing. */
int nvrtc_arch_for(int cc);
/* The path (or soname) libnvrtc was loaded from; NULL when it was not. */
const char *nvrtc_loaded_from(void);
/* Where to look for libnvrtc (nvrtc.c's comment gives the order). */
typedef struct nvrtc_where {
    const char *explicit_path; /* TACK_NVRTC_PATH: a file or a directory; the only place when set */
    const char *cuda_home;     /* CUDA_HOME */
    const char *cuda_path;     /* CUDA_PATH */
    const char *beside;        /* the directory of the library holding Tack (site-packages/tack) */
    int system;                /* also the loader's search path, /usr/local/cuda and /opt/cuda */
} nvrtc_where;
/* Load libnvrtc from the first place that has it: the handle, with the
 * path in found; NULL with every place looked in written to why. */
void *nvrtc_open(const nvrtc_where *w, char *found, size_t found_len, char *why, size_t why_len);

#endif
