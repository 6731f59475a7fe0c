/*
 * level_zero_api.h -- the slice of the oneAPI Level Zero C API (and of
 * Intel's ocloc compiler library) that Tack calls.
 *
 * Tack loads the Level Zero loader (libze_loader.so.1) with dlopen at first
 * use, so it builds, imports and runs on machines without it; the backend
 * then reports no device and says what to install.  For the same reason it
 * does not include <level_zero/ze_api.h>: these are our own declarations of
 * the few types, constants and entry points the backend uses, written from
 * the Level Zero specification (1.x).  Results are 32-bit unsigned enums,
 * handles opaque pointers, flags 32-bit unsigned bitfields; every struct
 * that starts with `stype` must carry the structure-type value the
 * specification assigns it (listed below), and each has the field order and
 * sizes the specification gives, so that a driver reads it exactly as it
 * would read its own header's.  The entry points live in one table, filled
 * once by lz_load() (level_zero.c).
 *
 * libocloc (Intel's offline OpenCL C compiler, the library behind `ocloc`)
 * turns the "opencl" dialect's source into SPIR-V; its three entry points
 * are declared here too and loaded on first build (level_zero_launch.c).
 */
#ifndef TACK_LEVEL_ZERO_API_H
#define TACK_LEVEL_ZERO_API_H

#include <stddef.h>
#include <stdint.h>

typedef uint32_t ze_result_t;
typedef uint32_t ze_structure_type_t;
typedef uint32_t ze_flags_t;

typedef struct _ze_driver_handle_t *ze_driver_handle_t;
typedef struct _ze_device_handle_t *ze_device_handle_t;
typedef struct _ze_context_handle_t *ze_context_handle_t;
typedef struct _ze_command_queue_handle_t *ze_command_queue_handle_t;
typedef struct _ze_command_list_handle_t *ze_command_list_handle_t;
typedef struct _ze_fence_handle_t *ze_fence_handle_t;
typedef struct _ze_event_handle_t *ze_event_handle_t;
typedef struct _ze_module_handle_t *ze_module_handle_t;
typedef struct _ze_module_build_log_handle_t *ze_module_build_log_handle_t;
typedef struct _ze_kernel_handle_t *ze_kernel_handle_t;
typedef struct _ze_event_pool_handle_t *ze_event_pool_handle_t;

/* ze_result_t */
#define TACK_ZE_RESULT_SUCCESS 0u
#define TACK_ZE_RESULT_NOT_READY 1u
#define TACK_ZE_RESULT_ERROR_DEVICE_LOST 0x70000001u
#define TACK_ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY 0x70000002u
#define TACK_ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY 0x70000003u
#define TACK_ZE_RESULT_ERROR_MODULE_BUILD_FAILURE 0x70000004u
#define TACK_ZE_RESULT_ERROR_MODULE_LINK_FAILURE 0x70000005u
#define TACK_ZE_RESULT_ERROR_NOT_AVAILABLE 0x70010001u
#define TACK_ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE 0x70020000u
#define TACK_ZE_RESULT_ERROR_UNINITIALIZED 0x78000001u
#define TACK_ZE_RESULT_ERROR_UNSUPPORTED_VERSION 0x78000002u
#define TACK_ZE_RESULT_ERROR_UNSUPPORTED_FEATURE 0x78000003u
#define TACK_ZE_RESULT_ERROR_INVALID_ARGUMENT 0x78000004u
#define TACK_ZE_RESULT_ERROR_INVALID_NULL_HANDLE 0x78000005u
#define TACK_ZE_RESULT_ERROR_INVALID_NULL_POINTER 0x78000007u
#define TACK_ZE_RESULT_ERROR_INVALID_SIZE 0x78000008u
#define TACK_ZE_RESULT_ERROR_UNSUPPORTED_SIZE 0x78000009u
#define TACK_ZE_RESULT_ERROR_INVALID_ENUMERATION 0x7800000cu
#define TACK_ZE_RESULT_ERROR_INVALID_NATIVE_BINARY 0x7800000fu
#define TACK_ZE_RESULT_ERROR_INVALID_KERNEL_NAME 0x78000011u
#define TACK_ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION 0x78000013u
#define TACK_ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX 0x78000015u
#define TACK_ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE 0x78000016u
#define TACK_ZE_RESULT_ERROR_UNKNOWN 0x7ffffffeu

/* ze_structure_type_t values of the structs below */
#define TACK_ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES 0x3u
#define TACK_ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES 0x4u
#define TACK_ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES 0x5u
#define TACK_ZE_STRUCTURE_TYPE_CONTEXT_DESC 0xdu
#define TACK_ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC 0xeu
#define TACK_ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC 0xfu
#define TACK_ZE_STRUCTURE_TYPE_EVENT_POOL_DESC 0x10u
#define TACK_ZE_STRUCTURE_TYPE_EVENT_DESC 0x11u
#define TACK_ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC 0x15u
#define TACK_ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC 0x16u
#define TACK_ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES 0x17u
#define TACK_ZE_STRUCTURE_TYPE_MODULE_DESC 0x1bu
#define TACK_ZE_STRUCTURE_TYPE_KERNEL_DESC 0x1du
#define TACK_ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES 0x1eu
#define TACK_ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 0x20006u /* timerResolution in cycles/s, not ns */

/* ze_command_queue_mode_t, ze_command_queue_priority_t */
#define TACK_ZE_COMMAND_QUEUE_MODE_DEFAULT 0u
#define TACK_ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS 1u
#define TACK_ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS 2u
#define TACK_ZE_COMMAND_QUEUE_PRIORITY_NORMAL 0u
/* ze_memory_type_t */
#define TACK_ZE_MEMORY_TYPE_UNKNOWN 0u
#define TACK_ZE_MEMORY_TYPE_HOST 1u
#define TACK_ZE_MEMORY_TYPE_DEVICE 2u
#define TACK_ZE_MEMORY_TYPE_SHARED 3u
/* ze_device_module_flags_t */
#define TACK_ZE_DEVICE_MODULE_FLAG_FP64 (1u << 1)
#define TACK_ZE_DEVICE_FP_FLAG_ROUNDED_DIVIDE_SQRT (1u << 6) /* ze_device_fp_flag_t */
/* ze_event_pool_flag_t, ze_event_scope_flag_t */
#define TACK_ZE_EVENT_POOL_FLAG_HOST_VISIBLE (1u << 0)
#define TACK_ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP (1u << 2)
#define TACK_ZE_EVENT_SCOPE_FLAG_DEVICE (1u << 1)
#define TACK_ZE_EVENT_SCOPE_FLAG_HOST (1u << 2)
/* ze_module_format_t */
#define TACK_ZE_MODULE_FORMAT_IL_SPIRV 0u
/* zeCommandQueueSynchronize / zeCommandListHostSynchronize: wait forever */
#define TACK_ZE_TIMEOUT_INFINITE UINT64_MAX

#define TACK_ZE_MAX_DEVICE_NAME 256
#define TACK_ZE_MAX_DEVICE_UUID_SIZE 16
#define TACK_ZE_MAX_NATIVE_KERNEL_UUID_SIZE 16
#define TACK_ZE_SUBGROUPSIZE_COUNT 8

/* The SPIR-V magic number, the first word of every module. */
#define TACK_SPIRV_MAGIC 0x07230203u

typedef struct ze_device_properties_t { /* 368 bytes on LP64 */
    ze_structure_type_t stype;
    void *pNext;
    uint32_t type; /* ze_device_type_t */
    uint32_t vendorId;
    uint32_t deviceId;
    ze_flags_t flags;
    uint32_t subdeviceId;
    uint32_t coreClockRate;
    uint64_t maxMemAllocSize;
    uint32_t maxHardwareContexts;
    uint32_t maxCommandQueuePriority;
    uint32_t numThreadsPerEU;
    uint32_t physicalEUSimdWidth;
    uint32_t numEUsPerSubslice;
    uint32_t numSubslicesPerSlice;
    uint32_t numSlices;
    uint64_t timerResolution;
    uint32_t timestampValidBits;
    uint32_t kernelTimestampValidBits;
    uint8_t uuid[TACK_ZE_MAX_DEVICE_UUID_SIZE];
    char name[TACK_ZE_MAX_DEVICE_NAME];
} ze_device_properties_t;

typedef struct ze_device_compute_properties_t { /* 88 bytes */
    ze_structure_type_t stype;
    void *pNext;
    uint32_t maxTotalGroupSize;
    uint32_t maxGroupSizeX, maxGroupSizeY, maxGroupSizeZ;
    uint32_t maxGroupCountX, maxGroupCountY, maxGroupCountZ;
    uint32_t maxSharedLocalMemory;
    uint32_t numSubGroupSizes;
    uint32_t subGroupSizes[TACK_ZE_SUBGROUPSIZE_COUNT];
} ze_device_compute_properties_t;

typedef struct ze_device_module_properties_t { /* 64 bytes */
    ze_structure_type_t stype;
    void *pNext;
    uint32_t spirvVersionSupported;
    ze_flags_t flags; /* ze_device_module_flags_t */
    ze_flags_t fp16flags, fp32flags, fp64flags;
    uint32_t maxArgumentsSize;
    uint32_t printfBufferSize;
    uint8_t nativeKernelSupported[TACK_ZE_MAX_NATIVE_KERNEL_UUID_SIZE];
} ze_device_module_properties_t;

typedef struct ze_memory_allocation_properties_t { /* 40 bytes */
    ze_structure_type_t stype;
    void *pNext;
    uint32_t type; /* ze_memory_type_t */
    uint64_t id;
    uint64_t pageSize;
} ze_memory_allocation_properties_t;

typedef struct ze_kernel_properties_t { /* 96 bytes */
    ze_structure_type_t stype;
    void *pNext;
    uint32_t numKernelArgs;
    uint32_t requiredGroupSizeX, requiredGroupSizeY, requiredGroupSizeZ;
    uint32_t requiredNumSubGroups;
    uint32_t requiredSubgroupSize;
    uint32_t maxSubgroupSize;
    uint32_t maxNumSubgroups; /* with maxSubgroupSize: the most work-items a group of this kernel holds */
    uint32_t localMemSize;    /* bytes of shared local memory the kernel declares (its __local arrays) */
    uint32_t privateMemSize;
    uint32_t spillMemSize;
    uint8_t kid[16], mid[16]; /* ze_kernel_uuid_t */
} ze_kernel_properties_t;
_Static_assert(sizeof(void *) != 8 || sizeof(ze_kernel_properties_t) == 96, "ze_kernel_properties_t is 96 bytes");

typedef struct ze_context_desc_t { /* 24 bytes */
    ze_structure_type_t stype;
    const void *pNext;
    ze_flags_t flags;
} ze_context_desc_t;

typedef struct ze_command_queue_desc_t { /* 40 bytes */
    ze_structure_type_t stype;
    const void *pNext;
    uint32_t ordinal;
    uint32_t index;
    ze_flags_t flags;
    uint32_t mode;     /* ze_command_queue_mode_t */
    uint32_t priority; /* ze_command_queue_priority_t */
} ze_command_queue_desc_t;

typedef struct ze_command_list_desc_t { /* 24 bytes */
    ze_structure_type_t stype;
    const void *pNext;
    uint32_t commandQueueGroupOrdinal;
    ze_flags_t flags;
} ze_command_list_desc_t;

typedef struct ze_device_mem_alloc_desc_t { /* 24 bytes */
    ze_structure_type_t stype;
    const void *pNext;
    ze_flags_t flags;
    uint32_t ordinal;
} ze_device_mem_alloc_desc_t;

typedef struct ze_module_constants_t {
    uint32_t numConstants;
    const uint32_t *pConstantIds;
    const void **pConstantValues;
} ze_module_constants_t;

typedef struct ze_module_desc_t { /* 56 bytes */
    ze_structure_type_t stype;
    const void *pNext;
    uint32_t format; /* ze_module_format_t */
    size_t inputSize;
    const uint8_t *pInputModule;
    const char *pBuildFlags;
    const ze_module_constants_t *pConstants;
} ze_module_desc_t;

typedef struct ze_kernel_desc_t { /* 32 bytes */
    ze_structure_type_t stype;
    const void *pNext;
    ze_flags_t flags;
    const char *pKernelName;
} ze_kernel_desc_t;

typedef struct ze_host_mem_alloc_desc_t { /* 24 bytes */
    ze_structure_type_t stype;
    const void *pNext;
    ze_flags_t flags;
} ze_host_mem_alloc_desc_t;

typedef struct ze_event_pool_desc_t { /* 24 bytes */
    ze_structure_type_t stype;
    const void *pNext;
    ze_flags_t flags; /* ze_event_pool_flag_t */
    uint32_t count;
} ze_event_pool_desc_t;

typedef struct ze_event_desc_t { /* 24 bytes */
    ze_structure_type_t stype;
    const void *pNext;
    uint32_t index;
    ze_flags_t signal; /* ze_event_scope_flag_t */
    ze_flags_t wait;
} ze_event_desc_t;

typedef struct ze_kernel_timestamp_data_t {
    uint64_t kernelStart, kernelEnd; /* device ticks */
} ze_kernel_timestamp_data_t;

typedef struct ze_kernel_timestamp_result_t { /* 32 bytes */
    ze_kernel_timestamp_data_t global;  /* the free-running device clock */
    ze_kernel_timestamp_data_t context; /* while the context ran */
} ze_kernel_timestamp_result_t;

typedef struct ze_group_count_t {
    uint32_t groupCountX, groupCountY, groupCountZ;
} ze_group_count_t;

typedef struct tack_ze_api {
    void *lib;
    ze_result_t (*zeInit)(ze_flags_t flags);
    ze_result_t (*zeDriverGet)(uint32_t *count, ze_driver_handle_t *drivers);
    ze_result_t (*zeDeviceGet)(ze_driver_handle_t drv, uint32_t *count, ze_device_handle_t *devices);
    ze_result_t (*zeDeviceGetProperties)(ze_device_handle_t dev, ze_device_properties_t *props);
    ze_result_t (*zeDeviceGetComputeProperties)(ze_device_handle_t dev, ze_device_compute_properties_t *props);
    ze_result_t (*zeDeviceGetModuleProperties)(ze_device_handle_t dev, ze_device_module_properties_t *props);
    ze_result_t (*zeContextCreate)(ze_driver_handle_t drv, const ze_context_desc_t *desc, ze_context_handle_t *out);
    ze_result_t (*zeContextDestroy)(ze_context_handle_t ctx);
    ze_result_t (*zeContextGetStatus)(ze_context_handle_t ctx);
    ze_result_t (*zeCommandQueueCreate)(ze_context_handle_t ctx, ze_device_handle_t dev,
                                        const ze_command_queue_desc_t *desc, ze_command_queue_handle_t *out);
    ze_result_t (*zeCommandQueueDestroy)(ze_command_queue_handle_t q);
    ze_result_t (*zeCommandQueueExecuteCommandLists)(ze_command_queue_handle_t q, uint32_t n,
                                                     ze_command_list_handle_t *lists, ze_fence_handle_t fence);
    ze_result_t (*zeCommandQueueSynchronize)(ze_command_queue_handle_t q, uint64_t timeout);
    ze_result_t (*zeCommandListCreate)(ze_context_handle_t ctx, ze_device_handle_t dev,
                                       const ze_command_list_desc_t *desc, ze_command_list_handle_t *out);
    ze_result_t (*zeCommandListCreateImmediate)(ze_context_handle_t ctx, ze_device_handle_t dev,
                                                const ze_command_queue_desc_t *desc, ze_command_list_handle_t *out);
    ze_result_t (*zeCommandListDestroy)(ze_command_list_handle_t l);
    ze_result_t (*zeCommandListClose)(ze_command_list_handle_t l);
    ze_result_t (*zeCommandListReset)(ze_command_list_handle_t l);
    ze_result_t (*zeCommandListHostSynchronize)(ze_command_list_handle_t l, uint64_t timeout); /* optional (1.6) */
    ze_result_t (*zeCommandListAppendBarrier)(ze_command_list_handle_t l, ze_event_handle_t signal, uint32_t nwait,
                                              ze_event_handle_t *wait);
    ze_result_t (*zeCommandListAppendMemoryCopy)(ze_command_list_handle_t l, void *dst, const void *src, size_t n,
                                                 ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *wait);
    ze_result_t (*zeCommandListAppendMemoryFill)(ze_command_list_handle_t l, void *ptr, const void *pattern,
                                                 size_t pattern_size, size_t size, ze_event_handle_t signal,
                                                 uint32_t nwait, ze_event_handle_t *wait);
    ze_result_t (*zeCommandListAppendLaunchKernel)(ze_command_list_handle_t l, ze_kernel_handle_t k,
                                                   const ze_group_count_t *groups, ze_event_handle_t signal,
                                                   uint32_t nwait, ze_event_handle_t *wait);
    ze_result_t (*zeMemAllocDevice)(ze_context_handle_t ctx, const ze_device_mem_alloc_desc_t *desc, size_t size,
                                    size_t alignment, ze_device_handle_t dev, void **out);
    ze_result_t (*zeMemFree)(ze_context_handle_t ctx, void *ptr);
    ze_result_t (*zeMemGetAllocProperties)(ze_context_handle_t ctx, const void *ptr,
                                           ze_memory_allocation_properties_t *props, ze_device_handle_t *dev);
    ze_result_t (*zeMemGetAddressRange)(ze_context_handle_t ctx, const void *ptr, void **base, size_t *size);
    ze_result_t (*zeModuleCreate)(ze_context_handle_t ctx, ze_device_handle_t dev, const ze_module_desc_t *desc,
                                  ze_module_handle_t *out, ze_module_build_log_handle_t *log);
    ze_result_t (*zeModuleDestroy)(ze_module_handle_t m);
    ze_result_t (*zeModuleBuildLogGetString)(ze_module_build_log_handle_t log, size_t *size, char *text);
    ze_result_t (*zeModuleBuildLogDestroy)(ze_module_build_log_handle_t log);
    ze_result_t (*zeKernelCreate)(ze_module_handle_t m, const ze_kernel_desc_t *desc, ze_kernel_handle_t *out);
    ze_result_t (*zeKernelDestroy)(ze_kernel_handle_t k);
    ze_result_t (*zeKernelSetArgumentValue)(ze_kernel_handle_t k, uint32_t index, size_t size, const void *value);
    ze_result_t (*zeKernelSetGroupSize)(ze_kernel_handle_t k, uint32_t x, uint32_t y, uint32_t z);
    ze_result_t (*zeKernelSuggestGroupSize)(ze_kernel_handle_t k, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t *x,
                                            uint32_t *y, uint32_t *z);
    /* optional: without it a blocks loop's group is checked against the device's limits only */
    ze_result_t (*zeKernelGetProperties)(ze_kernel_handle_t k, ze_kernel_properties_t *props);
    /* events (level_zero_stream.c); optional: a loader without them refuses streams, naming the one it lacks */
    ze_result_t (*zeEventPoolCreate)(ze_context_handle_t ctx, const ze_event_pool_desc_t *desc, uint32_t ndev,
                                     ze_device_handle_t *devs, ze_event_pool_handle_t *out);
    ze_result_t (*zeEventPoolDestroy)(ze_event_pool_handle_t pool);
    ze_result_t (*zeEventCreate)(ze_event_pool_handle_t pool, const ze_event_desc_t *desc, ze_event_handle_t *out);
    ze_result_t (*zeEventDestroy)(ze_event_handle_t e);
    ze_result_t (*zeEventHostSynchronize)(ze_event_handle_t e, uint64_t timeout);
    ze_result_t (*zeEventQueryStatus)(ze_event_handle_t e);
    ze_result_t (*zeEventHostReset)(ze_event_handle_t e);
    ze_result_t (*zeEventQueryKernelTimestamp)(ze_event_handle_t e, ze_kernel_timestamp_result_t *out);
    ze_result_t (*zeCommandListAppendWaitOnEvents)(ze_command_list_handle_t l, uint32_t n, ze_event_handle_t *events);
    ze_result_t (*zeCommandListAppendEventReset)(ze_command_list_handle_t l, ze_event_handle_t e);
    ze_result_t (*zeCommandListAppendWriteGlobalTimestamp)(ze_command_list_handle_t l, uint64_t *dst,
                                                           ze_event_handle_t signal, uint32_t nwait,
                                                           ze_event_handle_t *wait);
    ze_result_t (*zeMemAllocHost)(ze_context_handle_t ctx, const ze_host_mem_alloc_desc_t *desc, size_t size,
                                  size_t alignment, void **out);
} tack_ze_api;

/* libocloc (ocloc_api.h): compile in memory; outputs are named files, among
 * them the SPIR-V ("*.spv") and the messages ("stdout.log"). */
typedef struct tack_ocloc_api {
    void *lib;
    int (*oclocInvoke)(unsigned int nargs, const char *argv[], uint32_t nsrc, const uint8_t **src,
                       const uint64_t *src_len, const char **src_names, uint32_t nhdr, const uint8_t **hdr,
                       const uint64_t *hdr_len, const char **hdr_names, uint32_t *nout, uint8_t ***out,
                       uint64_t **out_len, char ***out_names);
    int (*oclocFreeOutput)(uint32_t *nout, uint8_t ***out, uint64_t **out_len, char ***out_names);
    int (*oclocVersion)(void);
} tack_ocloc_api;

#endif /* TACK_LEVEL_ZERO_API_H */
