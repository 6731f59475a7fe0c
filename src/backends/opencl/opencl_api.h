/*
 * opencl_api.h -- the slice of the OpenCL 1.2 C API that Tack calls.
 *
 * Tack loads the OpenCL ICD loader (libOpenCL.so.1) with dlopen at first
 * use, so it builds, imports and runs on machines without OpenCL; the
 * backend then reports no device and says what to install.  For the same
 * reason it does not include <CL/cl.h>, which may not be installed: these
 * are our own declarations of the few types, constants and entry points the
 * backend uses.  The types follow the C ABI the Khronos specification fixes
 * (cl_int is a 32-bit signed integer, cl_uint and cl_bool 32-bit unsigned,
 * bitfields 64-bit unsigned, handles opaque pointers), and each constant has
 * the numeric value the specification gives it.  The entry points live in
 * one table, filled once by ocl_load() (opencl.c).
 *
 * Shared virtual memory (SVM) is OpenCL 2.0's: its entry points are looked
 * up but not required, so a 1.2 loader still loads, and they are used only
 * on a device that reports fine-grained buffer SVM (opencl.c says why).
 */
#ifndef TACK_OPENCL_API_H
#define TACK_OPENCL_API_H

#include <stddef.h>
#include <stdint.h>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef cl_uint cl_bool;
typedef cl_ulong cl_bitfield;
typedef cl_bitfield cl_device_type;
typedef cl_bitfield cl_mem_flags;
typedef cl_bitfield cl_command_queue_properties;
typedef cl_bitfield cl_device_fp_config;
typedef cl_bitfield cl_svm_mem_flags;
typedef cl_bitfield cl_device_svm_capabilities;
typedef cl_uint cl_platform_info;
typedef cl_uint cl_device_info;
typedef cl_uint cl_program_info;
typedef cl_uint cl_program_build_info;
typedef cl_uint cl_kernel_info;
typedef cl_uint cl_kernel_work_group_info;
typedef intptr_t cl_context_properties;

typedef struct _cl_platform_id *cl_platform_id;
typedef struct _cl_device_id *cl_device_id;
typedef struct _cl_context *cl_context;
typedef struct _cl_command_queue *cl_command_queue;
typedef struct _cl_mem *cl_mem;
typedef struct _cl_program *cl_program;
typedef struct _cl_kernel *cl_kernel;
typedef struct _cl_event *cl_event;

/* error codes */
#define TACK_CL_SUCCESS 0
#define TACK_CL_DEVICE_NOT_FOUND (-1)
#define TACK_CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)
#define TACK_CL_OUT_OF_RESOURCES (-5)
#define TACK_CL_OUT_OF_HOST_MEMORY (-6)
#define TACK_CL_BUILD_PROGRAM_FAILURE (-11)
#define TACK_CL_INVALID_BUFFER_SIZE (-61)
#define TACK_CL_PLATFORM_NOT_FOUND_KHR (-1001)

#define TACK_CL_FALSE 0u
#define TACK_CL_TRUE 1u

/* clGetPlatformInfo */
#define TACK_CL_PLATFORM_VERSION 0x0901
#define TACK_CL_PLATFORM_NAME 0x0902
/* clGetDeviceIDs, clGetDeviceInfo */
#define TACK_CL_DEVICE_TYPE_ALL 0xFFFFFFFFull
#define TACK_CL_DEVICE_TYPE_CPU (1ull << 1)
#define TACK_CL_DEVICE_TYPE 0x1000
#define TACK_CL_DEVICE_MAX_COMPUTE_UNITS 0x1002
#define TACK_CL_DEVICE_GLOBAL_MEM_SIZE 0x101F
#define TACK_CL_DEVICE_MAX_WORK_GROUP_SIZE 0x1004
#define TACK_CL_DEVICE_NAME 0x102B
#define TACK_CL_DRIVER_VERSION 0x102D
#define TACK_CL_DEVICE_VERSION 0x102F
#define TACK_CL_DEVICE_EXTENSIONS 0x1030
#define TACK_CL_DEVICE_DOUBLE_FP_CONFIG 0x1032
#define TACK_CL_DEVICE_SINGLE_FP_CONFIG 0x101B
#define TACK_CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT (1 << 7)
#define TACK_CL_DEVICE_SVM_CAPABILITIES 0x1053 /* OpenCL 2.0 */
#define TACK_CL_DEVICE_SVM_COARSE_GRAIN_BUFFER (1ull << 0)
#define TACK_CL_DEVICE_SVM_FINE_GRAIN_BUFFER (1ull << 1)
#define TACK_CL_DEVICE_SVM_FINE_GRAIN_SYSTEM (1ull << 2)
/* clCreateCommandQueue */
#define TACK_CL_QUEUE_PROFILING_ENABLE (1ull << 1)
/* clGetEventInfo, clGetEventProfilingInfo */
#define TACK_CL_EVENT_COMMAND_EXECUTION_STATUS 0x11D3
#define TACK_CL_COMPLETE 0x0
#define TACK_CL_PROFILING_COMMAND_START 0x1282
#define TACK_CL_PROFILING_COMMAND_END 0x1283
/* clCreateContext */
#define TACK_CL_CONTEXT_PLATFORM 0x1084
/* clCreateBuffer */
#define TACK_CL_MEM_READ_WRITE (1ull << 0)
/* clSVMAlloc */
#define TACK_CL_MEM_SVM_FINE_GRAIN_BUFFER (1ull << 10)
/* clGetProgramInfo, clGetProgramBuildInfo */
#define TACK_CL_PROGRAM_BINARY_SIZES 0x1165
#define TACK_CL_PROGRAM_BINARIES 0x1166
#define TACK_CL_PROGRAM_BUILD_LOG 0x1183
/* clGetKernelInfo, clGetKernelWorkGroupInfo */
#define TACK_CL_KERNEL_NUM_ARGS 0x1191
#define TACK_CL_KERNEL_WORK_GROUP_SIZE 0x11B0

typedef struct tack_opencl_api {
    void *lib;
    cl_int (*clGetPlatformIDs)(cl_uint n, cl_platform_id *platforms, cl_uint *count);
    cl_int (*clGetPlatformInfo)(cl_platform_id p, cl_platform_info what, size_t size, void *value, size_t *size_ret);
    cl_int (*clGetDeviceIDs)(cl_platform_id p, cl_device_type type, cl_uint n, cl_device_id *devices, cl_uint *count);
    cl_int (*clGetDeviceInfo)(cl_device_id d, cl_device_info what, size_t size, void *value, size_t *size_ret);
    cl_context (*clCreateContext)(const cl_context_properties *props, cl_uint ndev, const cl_device_id *devices,
                                  void (*notify)(const char *, const void *, size_t, void *), void *user,
                                  cl_int *err);
    cl_int (*clReleaseContext)(cl_context c);
    cl_command_queue (*clCreateCommandQueue)(cl_context c, cl_device_id d, cl_command_queue_properties props,
                                             cl_int *err);
    cl_int (*clReleaseCommandQueue)(cl_command_queue q);
    cl_mem (*clCreateBuffer)(cl_context c, cl_mem_flags flags, size_t size, void *host, cl_int *err);
    cl_int (*clReleaseMemObject)(cl_mem m);
    cl_int (*clEnqueueReadBuffer)(cl_command_queue q, cl_mem m, cl_bool blocking, size_t offset, size_t size,
                                  void *dst, cl_uint nwait, const cl_event *wait, cl_event *ev);
    cl_int (*clEnqueueWriteBuffer)(cl_command_queue q, cl_mem m, cl_bool blocking, size_t offset, size_t size,
                                   const void *src, cl_uint nwait, const cl_event *wait, cl_event *ev);
    cl_int (*clEnqueueCopyBuffer)(cl_command_queue q, cl_mem src, cl_mem dst, size_t src_offset, size_t dst_offset,
                                  size_t size, cl_uint nwait, const cl_event *wait, cl_event *ev);
    cl_int (*clEnqueueFillBuffer)(cl_command_queue q, cl_mem m, const void *pattern, size_t pattern_size,
                                  size_t offset, size_t size, cl_uint nwait, const cl_event *wait, cl_event *ev);
    cl_int (*clFinish)(cl_command_queue q);
    cl_program (*clCreateProgramWithSource)(cl_context c, cl_uint n, const char **strings, const size_t *lengths,
                                            cl_int *err);
    cl_program (*clCreateProgramWithBinary)(cl_context c, cl_uint ndev, const cl_device_id *devices,
                                            const size_t *lengths, const unsigned char **binaries,
                                            cl_int *binary_status, cl_int *err);
    cl_int (*clBuildProgram)(cl_program p, cl_uint ndev, const cl_device_id *devices, const char *options,
                             void (*notify)(cl_program, void *), void *user);
    cl_int (*clGetProgramInfo)(cl_program p, cl_program_info what, size_t size, void *value, size_t *size_ret);
    cl_int (*clGetProgramBuildInfo)(cl_program p, cl_device_id d, cl_program_build_info what, size_t size,
                                    void *value, size_t *size_ret);
    cl_int (*clReleaseProgram)(cl_program p);
    cl_kernel (*clCreateKernel)(cl_program p, const char *name, cl_int *err);
    cl_int (*clReleaseKernel)(cl_kernel k);
    cl_int (*clGetKernelInfo)(cl_kernel k, cl_kernel_info what, size_t size, void *value, size_t *size_ret);
    cl_int (*clSetKernelArg)(cl_kernel k, cl_uint index, size_t size, const void *value);
    cl_int (*clGetKernelWorkGroupInfo)(cl_kernel k, cl_device_id d, cl_kernel_work_group_info what, size_t size,
                                       void *value, size_t *size_ret);
    cl_int (*clEnqueueNDRangeKernel)(cl_command_queue q, cl_kernel k, cl_uint dims, const size_t *offset,
                                     const size_t *global, const size_t *local, cl_uint nwait,
                                     const cl_event *wait, cl_event *ev);
    /* events and markers (OpenCL 1.2), optional: streams and events need them (opencl_stream.c) */
    cl_int (*clEnqueueMarkerWithWaitList)(cl_command_queue q, cl_uint nwait, const cl_event *wait, cl_event *ev);
    cl_int (*clEnqueueBarrierWithWaitList)(cl_command_queue q, cl_uint nwait, const cl_event *wait, cl_event *ev);
    cl_int (*clWaitForEvents)(cl_uint n, const cl_event *events);
    cl_int (*clGetEventInfo)(cl_event e, cl_uint what, size_t size, void *value, size_t *size_ret);
    cl_int (*clGetEventProfilingInfo)(cl_event e, cl_uint what, size_t size, void *value, size_t *size_ret);
    cl_int (*clReleaseEvent)(cl_event e);
    cl_int (*clFlush)(cl_command_queue q);
    /* OpenCL 2.0, optional: NULL when the loader lacks them */
    void *(*clSVMAlloc)(cl_context c, cl_svm_mem_flags flags, size_t size, cl_uint alignment);
    void (*clSVMFree)(cl_context c, void *ptr);
    cl_int (*clEnqueueSVMFree)(cl_command_queue q, cl_uint n, void *ptrs[],
                               void (*free_fn)(cl_command_queue, cl_uint, void *[], void *), void *user,
                               cl_uint nwait, const cl_event *wait, cl_event *ev);
    cl_int (*clEnqueueSVMMemcpy)(cl_command_queue q, cl_bool blocking, void *dst, const void *src, size_t size,
                                 cl_uint nwait, const cl_event *wait, cl_event *ev);
    cl_int (*clEnqueueSVMMemFill)(cl_command_queue q, void *ptr, const void *pattern, size_t pattern_size,
                                  size_t size, cl_uint nwait, const cl_event *wait, cl_event *ev);
    cl_int (*clSetKernelArgSVMPointer)(cl_kernel k, cl_uint index, const void *ptr);
} tack_opencl_api;

#endif
