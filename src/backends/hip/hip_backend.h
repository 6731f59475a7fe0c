/*
 * hip_backend.h -- what hip.c (devices, memory, copies) and hip_launch.c
 * (code objects, their disk cache, launching kernels, the device-side
 * error record) share.
 *
 * One hip_dev per Tack HIP device: its ordinal, the stream all of Tack's
 * work on it is ordered on, what the code objects are built for (the
 * device's own gcnArchName and its wavefront size, 64 or 32), the kernel
 * state (the error record in device memory and the programs built for the
 * device, gpu_common.h) and the lost-device state (gpu_launch.c).
 */
#ifndef TACK_HIP_BACKEND_H
#define TACK_HIP_BACKEND_H

#include "backends/common/gpu_common.h"
#include "backends/hip/hip_api.h"
#include "runtime/runtime.h"

typedef struct hip_dev {
    int ordinal;
    hipStream_t stream;
    int warp;            /* the wavefront: 64 (CDNA, GCN) or 32 (RDNA), from hipDeviceAttributeWarpSize */
    int cu_threads;      /* resident threads per compute unit (2048 when not said) */
    int max_block;       /* threads a block (hipDeviceAttributeMaxThreadsPerBlock; -1: not said) */
    int max_shared;      /* shared memory (LDS) a block, bytes (hipDeviceAttributeMaxSharedMemoryPerBlock; -1) */
    char arch[64];       /* gcnArchName: "gfx90a:sramecc+:xnack-" */
    char name[128];
    gpu_records rec;     /* programs built for this device, an error kept */
    void *err;           /* the error record (NULL until the first build) */
    gpu_lost lost;       /* a sticky error */
} hip_dev;

/* The stream a copy, fill or launch on d goes to: the thread's current one
 * on d (runtime/stream.c), else Tack's own. */
static inline hipStream_t hip_queue(tack_device *d) {
    tack_stream *s = rt_stream_now(d);
    return s ? (hipStream_t)s->handle : ((hip_dev *)d->state)->stream;
}

/* hip_stream.c: streams and events other than Tack's own (rt_stream_ops). */
extern const rt_stream_ops hip_stream_ops;

/* hip.c */
const tack_hip_api *hip_api_get(void);
/* Make d's GPU the calling thread's current HIP device (as it was before at
 * hip_pop); fails at once when d is lost. */
tack_status hip_push(tack_device *d);
void hip_pop(void);
tack_status hip_error(hipError_t r, const char *what);
int hip_sticky(hipError_t r);
/* hip_error, except that a sticky error marks d lost and says so. */
tack_status hip_fail(tack_device *d, hipError_t r, const char *what);
/* Mark d lost when r is sticky, reporting nothing (frees, unloads). */
void hip_note(tack_device *d, hipError_t r);
int hip_is_lost(tack_device *d);
tack_status hip_lost_error(tack_device *d);
void hip_note_launch(tack_device *d, const char *kernel);

/* hip_launch.c: the vtable's build / launch / unload */
#define HIP_LAUNCH_ABI 1
tack_status hip_build(tack_device *d, tack_program *p);
tack_status hip_launch(tack_device *d, tack_program *p, const tack_arg *args, int nargs);
void hip_unload(tack_device *d, tack_program *p);
/* After the stream has been synchronized: report a failed check recorded on
 * the device, or an error kept from a freed program, and clear it. */
tack_status hip_check_record(tack_device *d);
/* The hiprtc flags for d's code objects: the wavefront size where the
 * architecture has a choice (RDNA: gfx10 and later). */
unsigned hip_wave_flags(const char *arch, int warp);

#endif /* TACK_HIP_BACKEND_H */
