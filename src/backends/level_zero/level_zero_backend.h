/*
 * level_zero_backend.h -- what level_zero.c (devices, memory, copies) and
 * level_zero_launch.c (building, caching, launching kernels; the
 * device-side error record) share.
 *
 * One lz_dev per Tack Level Zero device: its driver, device and context
 * handles (the context is the driver's, shared by its devices: Tack's own,
 * or one adopted from another library by tack_level_zero_adopt), the
 * command list Tack's work on the device is appended to when no stream is
 * named (an immediate list when the driver offers one, else a regular list
 * that is closed, executed on a queue and reset at every synchronization),
 * the streams' lists and the event pools (level_zero_stream.c), what
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
 * Locks: each list's `lock` guards it (Level Zero lists must not be used
 * from two threads at once); no two list locks are ever held together, and
 * only `ev_lock` (event slots) is taken inside one.  `rec.lock` guards the
 * error record and the program list; a program's own lock orders its
 * launches (they share its kernels' argument slots).
 */
#ifndef TACK_LEVEL_ZERO_BACKEND_H
#define TACK_LEVEL_ZERO_BACKEND_H

#include "platform/platform.h"
#include <stdatomic.h>

#include "backends/common/gpu_common.h"
#include "backends/level_zero/level_zero_api.h"
#include "runtime/runtime.h"

/* A command list Tack appends to: the device's own, a stream's
 * (level_zero_stream.c), or a graph's being recorded.  An immediate list
 * when the driver makes one (commands start as they are appended), else a
 * regular list closed, executed on `queue` and reset at every wait; a
 * recording list is a regular list that only a graph's launch executes. */
typedef struct lz_list {
    ze_command_list_handle_t list;
    ze_command_queue_handle_t queue; /* NULL with an immediate list */
    tk_mutex_t lock;            /* a list is one thread's at a time; held only with ev_lock inside it */
    int appended;                    /* regular list: commands not yet executed */
    int recording;                   /* a graph's capture: never executed here, never waited for */
    int owned;                       /* made by Tack (a wrapped one belongs to its library) */
    struct lz_capture *cap;          /* a capture in progress on this stream: appends go to its list */
    struct lz_slot **held;           /* event slots waited on since the last wait for this list */
    int nheld, capheld;
    struct lz_list *next;            /* the device's stream lists */
} lz_list;

/* One event of an event pool (level_zero_stream.c).  A slot is taken for a
 * record, and goes back only once its signal has happened and every list
 * that waited for it has been waited for since: Level Zero forbids
 * destroying or resetting an event the device may still reference. */
typedef struct lz_slot {
    ze_event_handle_t ev;
    uint64_t *ts;         /* its global timestamp (plain pools), in host memory */
    int kind;             /* LZ_EV_PLAIN or LZ_EV_KERNEL_TS */
    int armed;            /* a signal was appended that may not have happened yet */
    int waits;            /* waits appended whose lists have not been waited for since */
    struct lz_slot *next; /* on the free or the retired list */
} lz_slot;
#define LZ_EV_PLAIN 0
#define LZ_EV_KERNEL_TS 1

typedef struct lz_dev {
    ze_driver_handle_t drv;
    ze_device_handle_t dev;
    ze_context_handle_t ctx;
    lz_list own;                     /* the device's own list: Tack's work when no stream is named */
    char name[TACK_ZE_MAX_DEVICE_NAME];
    uint32_t units;                  /* execution units: slices x subslices x EUs */
    uint32_t max_group;              /* max work-group size (maxTotalGroupSize) */
    uint32_t max_group_x;            /* ... in the x dimension (maxGroupSizeX) */
    uint32_t max_slm;                /* bytes of shared local memory a group may use (0: not said) */
    int fp64;
    int fp32_cr;                     /* fp32flags has ROUNDED_DIVIDE_SQRT: builds ask for it */
    double tick_ns;                  /* one tick of the device's timestamps, in nanoseconds */
    uint32_t ts_bits, kts_bits;      /* valid bits of global and kernel timestamps */
    atomic_long made;                /* allocations and program builds in ctx (tack_level_zero_adopt) */
    /* kernels: level_zero_launch.c, under `rec.lock` */
    gpu_records rec;                 /* programs built for this device, an error kept (gpu_common.h) */
    void *err;                       /* the error record, a gpu_err_record (NULL until the first build) */
    /* streams and events: level_zero_stream.c */
    tk_mutex_t streams_lock;    /* `streams` */
    lz_list *streams;
    tk_mutex_t ev_lock;         /* the pools and slot lists; innermost of all */
    struct lz_pool *pools;
    lz_slot *free_slots[2], *retired;
} lz_dev;

/* level_zero.c */
const tack_ze_api *lz_api_get(void);
const char *lz_code_name(ze_result_t r);
/* TACK_ERR_NOMEM for the out-of-memory results, TACK_ERR_DEVICE naming the
 * call, the result and the device otherwise. */
tack_status lz_error(ze_result_t r, const char *what, const tack_device *d);
/* A new list (an immediate one when the driver makes one); nothing left behind on failure. */
tack_status lz_list_make(tack_device *d, ze_context_handle_t ctx, ze_device_handle_t dev, lz_list *l);
/* With l->lock held: a barrier after the command just appended, so the
 * next one starts after it completes (Tack relies on no driver ordering). */
tack_status lz_barrier(tack_device *d, lz_list *l);
/* With l->lock held: run what was appended and wait for it. */
tack_status lz_wait(tack_device *d, lz_list *l);
/* With l->lock held: hand the appended commands to the device without
 * waiting (an immediate list already has; a regular one is executed and
 * waited for, as it cannot be appended to while it runs; a recording one
 * keeps them). */
tack_status lz_submit(tack_device *d, lz_list *l);
/* Copy n bytes on l and wait (takes l->lock). */
tack_status lz_copy_wait(tack_device *d, lz_list *l, void *dst, const void *src, size_t n);

/* level_zero_stream.c: streams, events, graphs and launch timers */
extern const rt_stream_ops lz_stream_ops;
/* The list work goes to now: the calling thread's current stream on d (its
 * capture's list while one records), else the device's own.  NULL, with the
 * error set, only when a wrapped stream's record cannot be made. */
lz_list *lz_cur(tack_device *d);
/* With l->lock held: l waits (on the device) for a slot's signal, the wait remembered until l is waited for. */
tack_status lz_hold(tack_device *d, lz_list *l, lz_slot *s);
/* With l->lock held, after l was waited for: its waits have passed. */
void lz_release_held(tack_device *d, lz_list *l);
/* A fresh event slot of a kind, and one handed back. */
tack_status lz_slot_take(tack_device *d, int kind, lz_slot **out);
void lz_slot_retire(tack_device *d, lz_slot *s);
/* tack.profile(): a launch's device time from the kernel timestamps of its
 * first and last phases' signal events (first == last for one phase). */
rt_prof_timer lz_timer_of(tack_device *d, lz_slot *first, lz_slot *last);
/* A capture's fill keeps its pattern until the graph goes (the driver may read it at each replay). */
const void *lz_capture_keep(tack_device *d, lz_list *l, const void *pattern, size_t size);

/* level_zero_launch.c: the vtable's build / launch / unload */
tack_status lz_build(tack_device *d, tack_program *p);
tack_status lz_launch(tack_device *d, tack_program *p, const tack_arg *args, int nargs);
void lz_unload(tack_device *d, tack_program *p);
/* After the list has drained: report a failed check recorded on the
 * device, or an error kept from a freed program, and clear it. */
tack_status lz_check_record(tack_device *d);

#endif /* TACK_LEVEL_ZERO_BACKEND_H */
