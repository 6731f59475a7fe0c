/*
 * level_zero_backend.h -- what level_zero.c (devices, memory, copies) and
 * level_zero_launch.c (building, caching, launching kernels; the
 * device-side error record) share.
 *
 * One lz_dev per Tack Level Zero device: its driver, device and context
 * handles (the context is the driver's, shared by its devices: Tack's own,
 * or one adopted from another library by tack_level_zero_adopt), the one
 * command list all of Tack's work on the device is appended to (an
 * immediate list when the driver offers one, else a regular list that is
 * closed, executed on a queue and reset at every synchronization), what
 * the launcher needs to know of the device (name, compute units, group
 * limit, fp64), and the kernel state -- the error record that generated
 * code writes when a check fails, the programs built for the device (so
 * that a failure read from the record can be worded from its program's
 * site table), and an error kept for the next synchronization point when a
 * program is freed with a failure still unreported (gpu_common.h).
 *
 * An array's data pointer on a Level Zero device is its device (USM)
 * address: kernels take it as it is, and copies may start inside it.
 *
 * Locks: `list_lock` guards the command list (Level Zero lists must not be
 * used from two threads at once) and is always the innermost lock; `rec.lock`
 * guards the error record and the program list; a program's own lock
 * orders its launches (they share its kernels' argument slots).
 */
#ifndef TACK_LEVEL_ZERO_BACKEND_H
#define TACK_LEVEL_ZERO_BACKEND_H

#include "platform/platform.h"
#include <stdatomic.h>

#include "backends/common/gpu_common.h"
#include "backends/level_zero/level_zero_api.h"
#include "runtime/runtime.h"

typedef struct lz_dev {
    ze_driver_handle_t drv;
    ze_device_handle_t dev;
    ze_context_handle_t ctx;
    ze_command_list_handle_t list;
    ze_command_queue_handle_t queue; /* NULL with an immediate list */
    char name[TACK_ZE_MAX_DEVICE_NAME];
    uint32_t units;                  /* execution units: slices x subslices x EUs */
    uint32_t max_group;              /* max work-group size */
    int fp64;
    int fp32_cr;                     /* fp32flags has ROUNDED_DIVIDE_SQRT: builds ask for it */
    tk_mutex_t list_lock;
    int appended;                    /* regular list: commands not yet executed */
    atomic_long made;                /* allocations and program builds in ctx (tack_level_zero_adopt) */
    /* kernels: level_zero_launch.c, under `rec.lock` */
    gpu_records rec;                 /* programs built for this device, an error kept (gpu_common.h) */
    void *err;                       /* the error record, a gpu_err_record (NULL until the first build) */
} lz_dev;

/* level_zero.c */
const tack_ze_api *lz_api_get(void);
const char *lz_code_name(ze_result_t r);
/* TACK_ERR_NOMEM for the out-of-memory results, TACK_ERR_DEVICE naming the
 * call, the result and the device otherwise. */
tack_status lz_error(ze_result_t r, const char *what, const tack_device *d);
/* With list_lock held: a barrier after the command just appended, so the
 * next one starts after it completes (Tack relies on no driver ordering). */
tack_status lz_barrier(tack_device *d);
/* With list_lock held: run what was appended and wait for it. */
tack_status lz_wait(tack_device *d);
/* With list_lock held: hand the appended commands to the device without
 * waiting (an immediate list already has; a regular one is executed and
 * waited for, as it cannot be appended to while it runs). */
tack_status lz_submit(tack_device *d);
/* Copy n bytes and wait (takes list_lock). */
tack_status lz_copy_wait(tack_device *d, void *dst, const void *src, size_t n);

/* level_zero_launch.c: the vtable's build / launch / unload */
tack_status lz_build(tack_device *d, tack_program *p);
tack_status lz_launch(tack_device *d, tack_program *p, const tack_arg *args, int nargs);
void lz_unload(tack_device *d, tack_program *p);
/* After the list has drained: report a failed check recorded on the
 * device, or an error kept from a freed program, and clear it. */
tack_status lz_check_record(tack_device *d);

#endif /* TACK_LEVEL_ZERO_BACKEND_H */
