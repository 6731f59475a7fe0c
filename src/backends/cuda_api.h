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
typedef uint64_t CUdeviceptr;

#define TACK_CUDA_SUCCESS 0
#define TACK_CUDA_ERROR_OUT_OF_MEMORY 2
#define TACK_CUDA_ERROR_NO_DEVICE 100
#define TACK_CU_STREAM_NON_BLOCKING 1
#define TACK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define TACK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define TACK_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define TACK_CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED 115
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
    CUresult (*cuStreamCreate)(CUstream *s, unsigned flags);
    CUresult (*cuStreamSynchronize)(CUstream s);
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
    CUresult (*cuPointerGetAttribute)(void *data, int attr, CUdeviceptr p);
    CUresult (*cuGetErrorString)(CUresult r, const char **s);
} tack_cuda_api;

/* The driver API, loaded on first use; NULL when there is no driver, with
 * the reason in `why`. */
const tack_cuda_api *cuda_load(char *why, size_t why_len);

/* NVRTC (nvrtc.c): tack_nvrtc_compile and tack_nvrtc_version are public,
 * declared in tack_kernel.h. */
#include "tack_kernel.h"
/* The options tack_nvrtc_compile passes after the architecture, as one
 * string (for cache keys). */
const char *nvrtc_options(unsigned flags);

#endif
