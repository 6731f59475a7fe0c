/*
 * tack_dlpack.h -- DLPack for libtack: the exchange ABI and Tack's import/export.
 *
 * DLPack (https://dmlc.github.io/dlpack) is a C ABI for describing a tensor
 * that one library owns and another borrows: a DLTensor (data, device,
 * dtype, shape, strides, byte_offset) plus a managed wrapper whose deleter
 * the borrower calls exactly once when it is done.  Two wrappers exist: the
 * legacy DLManagedTensor and DLManagedTensorVersioned (DLPack 1.x), which
 * adds a version and flags (read-only, is-copied).
 *
 * The declarations below are Tack's own rendering of that ABI, written from
 * the DLPack specification (1.3): the layouts, enumerator values and names
 * are those of the standard, so a program that includes the official
 * dlpack.h first gets the official declarations (this file then skips its
 * own; that header must be 1.2 or later, for the exchange API).  Nothing
 * here needs Python.
 *
 * Tack's API on top: tack_array_from_dlpack() borrows a managed tensor as a
 * Tack array (the deleter runs when the last array using it is released),
 * tack_array_to_dlpack() exports a Tack array as a managed tensor whose
 * deleter releases the array.  See docs/runtime-contract.md ("DLPack") for
 * the rules and docs/design/interop.md for the lifetime mechanism.
 */
#ifndef TACK_DLPACK_H
#define TACK_DLPACK_H

#include <stdint.h>

#include "tack.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 3

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

/* Device types: the codes are part of the ABI. */
typedef enum {
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3,
    kDLOpenCL = 4,
    kDLVulkan = 7,
    kDLMetal = 8,
    kDLVPI = 9,
    kDLROCM = 10,
    kDLROCMHost = 11,
    kDLExtDev = 12,
    kDLCUDAManaged = 13,
    kDLOneAPI = 14,
    kDLWebGPU = 15,
    kDLHexagon = 16,
    kDLMAIA = 17,
    kDLTrn = 18
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int32_t device_id;
} DLDevice;

typedef enum {
    kDLInt = 0U,
    kDLUInt = 1U,
    kDLFloat = 2U,
    kDLOpaqueHandle = 3U,
    kDLBfloat = 4U,
    kDLComplex = 5U,
    kDLBool = 6U,
    kDLFloat8_e3m4 = 7U,
    kDLFloat8_e4m3 = 8U,
    kDLFloat8_e4m3b11fnuz = 9U,
    kDLFloat8_e4m3fn = 10U,
    kDLFloat8_e4m3fnuz = 11U,
    kDLFloat8_e5m2 = 12U,
    kDLFloat8_e5m2fnuz = 13U,
    kDLFloat8_e8m0fnu = 14U,
    kDLFloat6_e2m3fn = 15U,
    kDLFloat6_e3m2fn = 16U,
    kDLFloat4_e2m1fn = 17U
} DLDataTypeCode;

/* code: a DLDataTypeCode; bits per lane; lanes (1 for scalars). */
typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data;           /* the allocation; the first element is at data + byte_offset */
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;       /* ndim entries */
    int64_t *strides;     /* ndim entries, in elements; NULL (before 1.2) means C-contiguous */
    uint64_t byte_offset;
} DLTensor;

/* The legacy (pre-1.0) managed tensor: capsule name "dltensor". */
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)

/* The versioned managed tensor: capsule name "dltensor_versioned".  Only
 * `version`, `manager_ctx` and `deleter` may be read when the major version
 * is not ours; the deleter may always be called. */
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

/* ---- The C exchange API (DLPack 1.2+): a table of functions a Python array
 * type offers as `type(x).__dlpack_c_exchange_api__`, a PyCapsule named
 * "dlpack_exchange_api" whose pointer is a DLPackExchangeAPI that lives as
 * long as the process.  `py_object` arguments are PyObject pointers; the
 * functions are called with the GIL held and report failure by returning
 * nonzero with a Python exception set. */
typedef int (*DLPackManagedTensorAllocator)(DLTensor *prototype, DLManagedTensorVersioned **out,
                                            void *error_ctx,
                                            void (*SetError)(void *error_ctx, const char *kind,
                                                             const char *message));
typedef int (*DLPackManagedTensorFromPyObjectNoSync)(void *py_object, DLManagedTensorVersioned **out);
typedef int (*DLPackDLTensorFromPyObjectNoSync)(void *py_object, DLTensor *out);
typedef int (*DLPackCurrentWorkStream)(DLDeviceType device_type, int32_t device_id,
                                       void **out_current_stream);
typedef int (*DLPackManagedTensorToPyObjectNoSync)(DLManagedTensorVersioned *tensor, void **out_py_object);

typedef struct DLPackExchangeAPIHeader {
    DLPackVersion version;
    struct DLPackExchangeAPIHeader *prev_api; /* an older major version's table, or NULL */
} DLPackExchangeAPIHeader;

typedef struct DLPackExchangeAPI {
    DLPackExchangeAPIHeader header;
    DLPackManagedTensorAllocator managed_tensor_allocator;
    DLPackManagedTensorFromPyObjectNoSync managed_tensor_from_py_object_no_sync;
    DLPackManagedTensorToPyObjectNoSync managed_tensor_to_py_object_no_sync;
    DLPackDLTensorFromPyObjectNoSync dltensor_from_py_object_no_sync; /* may be NULL */
    DLPackCurrentWorkStream current_work_stream;
} DLPackExchangeAPI;
#endif /* DLPACK_DLPACK_H_ */

/* ------------------------------------------------------- Tack's DLPack API */

/* The DLPack version Tack writes into versioned tensors it exports. */
#define TACK_DLPACK_MAJOR 1
#define TACK_DLPACK_MINOR 1

/* Copy requests, as the Python `copy=` argument: None, False, True. */
typedef enum tack_dlpack_copy {
    TACK_DLPACK_COPY_IF_NEEDED = -1,
    TACK_DLPACK_COPY_NEVER = 0,
    TACK_DLPACK_COPY_ALWAYS = 1
} tack_dlpack_copy;

typedef struct tack_dlpack_import_options {
    tack_dlpack_copy copy;  /* ALWAYS: the result owns a copy; NEVER: fail where a copy is needed */
    tack_device *device;    /* where the result must live; NULL: the tensor's own device */
    /* Optional: asked just before the producer's deleter would run; returning
     * 0 skips it (a Python binding returns 0 once its interpreter is
     * finalizing, when a Python-backed deleter would crash). */
    int (*may_delete)(void);
    /* Nonzero: a tensor with strides other than C order's is taken as a
     * strided view (tack_array_wrap_strided; tack.from_dlpack and kernel
     * arguments set it) where it is not copied.  0: such a tensor is refused
     * unless it is copied (the copy gathers it in C order), for a caller that
     * reads the data as a C array. */
    int strided;
} tack_dlpack_import_options;

/* Borrow a DLPack managed tensor as a Tack array.
 *
 * `managed` is a DLManagedTensorVersioned* when `versioned` is nonzero, else
 * a DLManagedTensor*.  Ownership of it always passes to libtack, as with
 * tack_array_wrap: on success the deleter runs exactly once when the last
 * array using the storage is released (on whichever thread that is); on
 * failure it has already run when this returns.  `opt` may be NULL (no copy
 * unless needed, the tensor's device).
 *
 * Accepted: every Tack scalar dtype (kDLBool 8-bit, kDLInt/kDLUInt 8-64,
 * kDLFloat 16/32/64, one lane); strides NULL or C-contiguous (a dimension of
 * extent 1 may have any stride), or any strides with opt->strided (a strided
 * view; a copy of it, COPY_ALWAYS or another device, gathers it in C order);
 * any byte_offset the dtype's alignment allows; 0-d tensors; size-0 tensors
 * with a NULL data pointer.  A versioned tensor with the READ_ONLY flag gives
 * a read-only array.
 * Refused: strides other than C order's without opt->strided and without a
 * copy (TACK_ERR_BUFFER), other dtypes and devices Tack does not know
 * (TACK_ERR_BUFFER), a newer major version (TACK_ERR_BUFFER), more than
 * TACK_MAX_NDIM dimensions, a negative extent, extents whose product (those
 * other than 0) or its bytes pass 2**63, a first element (data +
 * byte_offset) misaligned for the dtype or past the address space
 * (TACK_ERR_VALUE). */
TACK_API tack_status tack_array_from_dlpack(void *managed, int versioned, const tack_dlpack_import_options *opt,
                                            tack_array **out);

/* Export `a` as a DLPack managed tensor (DLManagedTensorVersioned* when
 * `versioned`, else DLManagedTensor*), written to *out.
 *
 * The tensor retains the array (or, with COPY_ALWAYS, a fresh copy, flagged
 * IS_COPIED); its deleter releases it and may be called on any thread.  A
 * vecN/matRC array exports as its scalar type with trailing dimensions of
 * extent N (R, C).  Strides are always filled in: a strided view's own (in
 * elements, any sign, from element (0, ..., 0)), else C order's; a view
 * inside an OpenCL buffer is the buffer's handle and a byte_offset.  With
 * COPY_ALWAYS a strided view's copy is gathered in C order.  A size-0
 * array exports a NULL data pointer.  A read-only array sets READ_ONLY; the
 * legacy format cannot say "read-only", so a read-only array is refused
 * there (TACK_ERR_BUFFER) unless a copy is requested.  The export marks the
 * array TACK_ARRAY_SHARED and waits for work queued on its device. */
TACK_API tack_status tack_array_to_dlpack(tack_array *a, int versioned, tack_dlpack_copy copy, void **out);

/* tack_array_to_dlpack for a consumer that works on a stream: `stream` is
 * the stream argument of DLPack's __dlpack__.  TACK_DLPACK_STREAM_NO_SYNC
 * (-1): no synchronization at all.  TACK_DLPACK_STREAM_HOST (0): wait on the
 * host for the work queued on the array's device (tack_array_to_dlpack).
 * Any other value is the consumer's stream, a handle of the device's API
 * (CUDA: a CUstream; 1 and 2 are the legacy and the per-thread default
 * stream): Tack records an event after its queued work (with COPY_ALWAYS,
 * after the copy) and makes that stream wait for it, so the host does not
 * wait.  A device without streams (the CPU) waits on the host.
 * TACK_DLPACK_STREAM_DEFAULT (-2): the device API's default stream, whose
 * handle is 0 and so cannot be passed as itself (ROCm: DLPack's None or 0,
 * HIP's null stream). */
#define TACK_DLPACK_STREAM_NO_SYNC ((intptr_t)-1)
#define TACK_DLPACK_STREAM_HOST ((intptr_t)0)
#define TACK_DLPACK_STREAM_DEFAULT ((intptr_t)-2)
TACK_API tack_status tack_array_to_dlpack_stream(tack_array *a, int versioned, tack_dlpack_copy copy, intptr_t stream,
                                                 void **out);

/* Call a managed tensor's deleter (if any): for a consumer giving one back. */
TACK_API void tack_dlpack_delete(void *managed, int versioned);

/* The DLPack dtype of a Tack scalar dtype, and back (TACK_ERR_BUFFER naming
 * the type when there is no match).  A vector or matrix dtype maps to its
 * scalar. */
TACK_API tack_status tack_dtype_to_dlpack(tack_dtype dt, DLDataType *out);
/* The Tack scalar dtype of a DLPack dtype (TACK_ERR_BUFFER naming it when there is none). */
TACK_API tack_status tack_dtype_from_dlpack(DLDataType t, tack_dtype *out);

/* The DLPack device of a Tack device and back. */
TACK_API DLDevice tack_device_to_dlpack(const tack_device *d);
/* The Tack device of a DLPack device; TACK_ERR_DEVICE when Tack has no such device here. */
TACK_API tack_status tack_device_from_dlpack(DLDevice dev, tack_device **out);

#ifdef __cplusplus
}
#endif
#endif /* TACK_DLPACK_H */
