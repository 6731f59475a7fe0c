/*
 * metal_backend.h -- what metal.c (the runtime, devices, memory, copies)
 * and metal_launch.c (libraries, pipelines, command buffers, the error
 * record) share, with metal_stream.c (streams and events).
 *
 * One metal_dev per Tack Metal device: its MTLDevice and its own command
 * queue (the queues of tack.Streams beside it, metal_stream.c), each with
 * the command buffers committed and not yet waited for, the buffers Tack allocated or wrapped
 * (host address -> MTLBuffer, for binding an array's storage at a launch),
 * the 32-byte error record (a shared MTLBuffer the host reads directly)
 * and the programs built for the device (gpu_common.h).
 *
 * Messages are sent only through the typed wrappers below, with selectors
 * named TK_S(key) from metal_selectors.def.
 */
#ifndef TACK_METAL_BACKEND_H
#define TACK_METAL_BACKEND_H

#include "platform/platform.h"

#include "backends/common/gpu_common.h"
#include "backends/metal/metal_api.h"
#include "runtime/runtime.h"

enum {
#define TK_SEL(key, sel, ret, args) TK_SEL_##key,
#include "backends/metal/metal_selectors.def"
#undef TK_SEL
    TK_SEL_COUNT
};
extern SEL metal_sels[TK_SEL_COUNT];
#define TK_S(key) metal_sels[TK_SEL_##key]

/* The typed objc_msgSend wrappers, one per signature (metal.c). */
id mtl_id(id o, SEL s);
void mtl_void(id o, SEL s);
NSUInteger mtl_uint(id o, SEL s);
void *mtl_ptr(id o, SEL s);
const char *mtl_cstr(id o, SEL s);
MTLStorageMode mtl_storage_mode(id o, SEL s);
MTLCommandBufferStatus mtl_cb_status(id o, SEL s);
BOOL mtl_bool_sel(id o, SEL s, SEL a);
id mtl_id_cstr(id o, SEL s, const char *a);
id mtl_id_uint(id o, SEL s, NSUInteger a);
id mtl_id_uint_opts(id o, SEL s, NSUInteger a, MTLResourceOptions b);
id mtl_id_id(id o, SEL s, id a);
id mtl_id_id_err(id o, SEL s, id a, id *b);
id mtl_id_id_id_err(id o, SEL s, id a, id b, id *c);
void mtl_void_bool(id o, SEL s, BOOL a);
void mtl_void_langver(id o, SEL s, MTLLanguageVersion a);
void mtl_void_id(id o, SEL s, id a);
void mtl_void_id_uint_uint(id o, SEL s, id a, NSUInteger b, NSUInteger c);
void mtl_void_bytes_uint_uint(id o, SEL s, const void *a, NSUInteger b, NSUInteger c);
void mtl_void_size_size(id o, SEL s, MTLSize a, MTLSize b);
void mtl_void_id_u64(id o, SEL s, id a, uint64_t b);
uint64_t mtl_u64(id o, SEL s);
double mtl_double(id o, SEL s);

/* A buffer Tack allocated or wrapped: [base, base+len) is its host address range. */
typedef struct metal_buf {
    char *base;
    size_t len;
    id buf;      /* retained: released with the last reference */
    int refs;    /* an allocation is 1; a wrapped buffer counts its wraps */
    struct tack_device *dev;
} metal_buf;

/* A command queue Tack commits to: the device's own, or a stream's
 * (metal_stream.c), with the command buffers committed to it that no one
 * has waited for yet. */
typedef struct metal_q {
    id queue;              /* the device's own and a stream's: retained; a wrapped one: the caller's */
    tk_mutex_t lock;  /* guards pending */
    id *pending;           /* command buffers committed, retained, not yet waited for */
    int npending, cappending;
    int owned;             /* made by Tack (a tack.Stream's), not wrapped */
    struct metal_q *next;  /* the device's streams */
} metal_q;

typedef struct metal_dev {
    const tack_metal_api *api;
    id device;             /* retained */
    metal_q own;           /* the device's own queue */
    tk_mutex_t streams_lock;
    metal_q *streams;      /* the queues of streams (made or wrapped) */
    NSUInteger max_buffer; /* maxBufferLength */
    char name[128];
    tk_mutex_t lock;  /* guards bufs */
    metal_buf **bufs;      /* sorted by base */
    int nbufs, capbufs;
    gpu_records rec;       /* programs built for this device, an error kept */
    id err;                /* the error record: a 32-byte shared MTLBuffer */
} metal_dev;

/* metal.c */
/* An autorelease pool around a call into Metal (NULL when the runtime has none). */
void *metal_pool_push(const tack_metal_api *api);
void metal_pool_pop(const tack_metal_api *api, void *pool);
/* An NSString made from UTF-8 text (owned: release it), NULL on failure. */
id metal_string(const tack_metal_api *api, const char *s);
/* An NSError's localizedDescription into buf ("no description" when none). */
void metal_error_text(id err, char *buf, size_t len);
/* The buffer holding host address p (with *offset into it), NULL when none. */
id metal_buffer_of(metal_dev *h, const void *p, size_t *offset);
/* Keep cb, committed to q (a reference handed over here), until a wait. */
tack_status metal_q_add(tack_device *d, metal_q *q, id cb);
/* Wait for every command buffer committed to q and report the first failed one. */
tack_status metal_q_wait(tack_device *d, metal_q *q);
/* The same for every queue of the device: its own and its streams'. */
tack_status metal_wait_all(tack_device *d);

/* metal_stream.c */
/* The queue of stream s (NULL: the device's own); NULL when out of memory (set). */
metal_q *metal_q_of(tack_device *d, const tack_stream *s);
/* The queue of the calling thread's current stream on d. */
metal_q *metal_cur(tack_device *d);
extern const rt_stream_ops metal_stream_ops;

/* metal_launch.c: the vtable's build / launch / unload */
tack_status metal_build(tack_device *d, tack_program *p);
tack_status metal_launch(tack_device *d, tack_program *p, const tack_arg *args, int nargs);
void metal_unload(tack_device *d, tack_program *p);
/* After the pending work has completed: report a failed check recorded on
 * the device, or an error kept from a freed program, and clear it. */
tack_status metal_check_record(tack_device *d);

#endif /* TACK_METAL_BACKEND_H */
