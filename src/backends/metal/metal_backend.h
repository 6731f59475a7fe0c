/*
 * metal_backend.h -- what metal.c (the runtime, devices, memory, copies)
 * and metal_launch.c (libraries, pipelines, command buffers, the error
 * record) share.
 *
 * One metal_dev per Tack Metal device: its MTLDevice and the one command
 * queue all of Tack's work on it goes through, the command buffers
 * committed and not yet waited for, the buffers Tack allocated or wrapped
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

/* A buffer Tack allocated or wrapped: [base, base+len) is its host address range. */
typedef struct metal_buf {
    char *base;
    size_t len;
    id buf;      /* retained: released with the last reference */
    int refs;    /* an allocation is 1; a wrapped buffer counts its wraps */
    struct tack_device *dev;
} metal_buf;

typedef struct metal_dev {
    const tack_metal_api *api;
    id device;             /* retained */
    id queue;              /* retained */
    NSUInteger max_buffer; /* maxBufferLength */
    char name[128];
    tk_mutex_t lock;  /* guards bufs and pending */
    metal_buf **bufs;      /* sorted by base */
    int nbufs, capbufs;
    id *pending;           /* command buffers committed, retained, not yet waited for */
    int npending, cappending;
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
/* Commit cb (retained by the caller, handed over here) to the pending list. */
tack_status metal_add_pending(tack_device *d, id cb);
/* Wait for every committed command buffer and report the first failed one. */
tack_status metal_wait_pending(tack_device *d);

/* metal_launch.c: the vtable's build / launch / unload */
tack_status metal_build(tack_device *d, tack_program *p);
tack_status metal_launch(tack_device *d, tack_program *p, const tack_arg *args, int nargs);
void metal_unload(tack_device *d, tack_program *p);
/* After the pending work has completed: report a failed check recorded on
 * the device, or an error kept from a freed program, and clear it. */
tack_status metal_check_record(tack_device *d);

#endif /* TACK_METAL_BACKEND_H */
