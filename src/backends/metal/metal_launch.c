/*
 * metal_launch.c -- building and running kernels on Metal devices.
 *
 * Build: the metal dialect's MSL source is compiled by Metal itself,
 * newLibraryWithSource:options:error: with MTLCompileOptions for Metal 3
 * (languageVersion 3.0) and fastMathEnabled only for a fast_math kernel;
 * a library that does not compile is a CompileError carrying Metal's own
 * message.  Each phase K is the function tk_phaseK, made into a compute
 * pipeline (newComputePipelineStateWithFunction:error:); the pipelines live
 * as long as the program, so a kernel is compiled once per device and
 * process.  Tack keeps no disk cache of its own for Metal: Metal's compiler
 * service keeps compiled functions in its own per-user cache.  Binary
 * archives (MTLBinaryArchive) would make that explicit; they are not used
 * yet (docs/backends.md says what remains).
 *
 * The layout comment is `/ * tack-metal: phases=psp frame=N * /` (read by
 * gpu_launch.c, with the loops' extents after it when the source says them).
 *
 * Launch: one command buffer and one compute encoder for all of a call's
 * phases, on the queue of the thread's current stream (metal_stream.c),
 * committed at once (a call returns once queued).  The argument
 * convention, agreed with the dialect:
 *   buffer(0)  the device's 32-byte error record (gpu_common.h);
 *   buffer(1)  the program's frame buffer (16 bytes when it has no frame);
 *   buffer(2)  a constant array of 8-byte words: the program id, then per
 *              parameter in order an array's ndim extents (then, in a
 *              strided build, its ndim element strides) or a scalar's
 *              slot (a complex's two), a float always as f32 bits in the
 *              low 4 bytes (Apple GPUs have no double) -- by setBytes when
 *              it is at most 4 KiB, else from a buffer of its own;
 *   buffer(3+i) the i-th array parameter: its MTLBuffer, at the array's
 *              offset in it (a strided view's element (0, ..., 0)).
 * A parallel phase is dispatchThreadgroups with threadgroups of
 * min(256, maxTotalThreadsPerThreadgroup) threads, rounded down to whole
 * SIMD groups (threadExecutionWidth), the smallest over the program's
 * pipelines (a blocks loop's aside), and as many groups as its loop needs, capped at
 * about 256K threads (Metal does not say how many cores a GPU has; the
 * phases are grid-stride loops, so any grid is correct); a serial phase
 * is one group of one thread.  A blocks loop (tack.blocks(n, B), phase
 * letter 'b') is threadgroups of exactly B threads, one per block of the
 * loop, capped alike at about 256K threads (each group takes blocks g,
 * g + groups, ...): its barriers and shared arrays count on B threads, so
 * a pipeline whose maxTotalThreadsPerThreadgroup is below B, or whose
 * shared arrays (static threadgroup memory: the dialect declares them in
 * the phase) exceed the device's maxThreadgroupMemoryLength, is an error
 * at build naming the kernel, B and the limit -- never a smaller group.
 * Dispatches in one encoder run in order, each seeing the previous one's
 * writes.
 *
 * Profile: while tack.profile() records, each launch's command buffer is
 * kept (one more retain) in the launch's timer, read when the profile
 * stops (runtime/profile.c): once it has completed, its GPUEndTime minus
 * its GPUStartTime (seconds of the GPU's clock, which Metal gives for a
 * completed command buffer) is the launch's device time -- all of its
 * phases, as the event pair around them is on CUDA and HIP.  A command
 * buffer that failed, or one without the times, is an error of the
 * profile's stop, not of the launch.
 *
 * Errors: the error record is shared storage the host reads directly once
 * the queued command buffers have completed (metal_check_record), at each
 * synchronization point; a program freed with a failure still recorded
 * keeps its message for the next one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/metal/metal_backend.h"
#include "runtime/program.h"

#define METAL_MAX_BUFFERS 31   /* buffer argument table entries per kernel */
#define METAL_SET_BYTES_MAX 4096
#define METAL_THREADS_IN_FLIGHT 262144u
#define METAL_FRAME_MIN 16

typedef struct metal_prog {
    gpu_prog g; /* first: the device's program list holds it */
    id *pso;    /* per phase, retained */
    id frame;   /* retained */
    gpu_grid grid;
} metal_prog;

/* ----------------------------------------------------------- reporting */
static int take_record(tack_device *d, gpu_err_record *rec, tack_status *st) {
    metal_dev *h = d->state;
    void *p = mtl_ptr(h->err, TK_S(contents));
    *st = TACK_OK;
    memcpy(rec, p, sizeof *rec);
    if (!rec->failed) return 0;
    memset(p, 0, sizeof *rec);
    return 1;
}

tack_status metal_check_record(tack_device *d) {
    return gpu_check_record(&((metal_dev *)d->state)->rec, d, take_record);
}

/* --------------------------------------------------------------- build */
static void prog_free(metal_prog *mp) {
    if (!mp) return;
    for (int k = 0; mp->pso && k < mp->g.nph; k++)
        if (mp->pso[k]) mtl_void(mp->pso[k], TK_S(release));
    if (mp->frame) mtl_void(mp->frame, TK_S(release));
    tack_free(mp->pso);
    gpu_grid_free(&mp->grid);
    gpu_prog_fini(&mp->g);
    tack_free(mp);
}

/* The library for p's source, or a CompileError with Metal's message. */
static tack_status compile(tack_device *d, tack_program *p, id *lib) {
    metal_dev *h = d->state;
    id src = metal_string(h->api, p->source);
    id cls = h->api->objc_getClass("MTLCompileOptions");
    id opts = cls ? mtl_id(cls, TK_S(new_)) : NULL;
    id err = NULL;
    tack_status st = TACK_OK;
    if (!src || !opts) {
        st = tack_set_error(TACK_ERR_DEVICE, "kernel '%s': Metal gives no %s", p->kernel_name,
                            src ? "MTLCompileOptions" : "NSString for its source");
        goto done;
    }
    mtl_void_bool(opts, TK_S(setFastMathEnabled), p->fast_math ? TK_YES : TK_NO);
    mtl_void_langver(opts, TK_S(setLanguageVersion), TK_MTL_LANGUAGE_VERSION_3_0);
    rt_prof_build = "metal compiler";
    *lib = mtl_id_id_id_err(h->device, TK_S(newLibraryWithSource_options_error), src, opts, &err);
    if (!*lib) {
        char text[2000];
        metal_error_text(err, text, sizeof text);
        st = tack_set_error(TACK_ERR_COMPILE, "kernel '%s' does not compile for %s (%s): %s", p->kernel_name, d->name,
                            h->name, text);
    }
done:
    if (src) mtl_void(src, TK_S(release));
    if (opts) mtl_void(opts, TK_S(release));
    return st;
}

/* Whether the pipeline of blocks phase k runs its threadgroups of the loop's
 * block size B: at most its maxTotalThreadsPerThreadgroup (`most`) threads,
 * and its shared arrays (threadgroup variables the MSL dialect declares at
 * the phase's top, so Metal counts them in staticThreadgroupMemoryLength) at
 * most the device's maxThreadgroupMemoryLength.  Never a smaller group: the
 * kernel's barriers and shared indices count on B threads. */
static tack_status blocks_fit(tack_device *d, tack_program *p, metal_prog *mp, int k, NSUInteger most) {
    metal_dev *h = d->state;
    gpu_block_limits l = {"Metal", h->name, (int)most, "maxTotalThreadsPerThreadgroup",
                          (int)mtl_uint(mp->pso[k], TK_S(staticThreadgroupMemoryLength)),
                          (int)mtl_uint(h->device, TK_S(maxThreadgroupMemoryLength)), "maxThreadgroupMemoryLength"};
    return gpu_block_check(d, p, &mp->g, k, &l);
}

static tack_status pipelines(tack_device *d, tack_program *p, metal_prog *mp, id lib) {
    metal_dev *h = d->state;
    NSUInteger tg = 256;
    for (int k = 0; k < mp->g.nph; k++) {
        char fname[32], text[1000];
        snprintf(fname, sizeof fname, "tk_phase%d", k);
        id name = metal_string(h->api, fname);
        id fn = name ? mtl_id_id(lib, TK_S(newFunctionWithName), name) : NULL;
        if (name) mtl_void(name, TK_S(release));
        if (!fn)
            return tack_set_error(TACK_ERR_COMPILE, "kernel '%s': its Metal library has no kernel function %s",
                                  p->kernel_name, fname);
        id err = NULL;
        mp->pso[k] = mtl_id_id_err(h->device, TK_S(newComputePipelineStateWithFunction_error), fn, &err);
        mtl_void(fn, TK_S(release));
        if (!mp->pso[k]) {
            metal_error_text(err, text, sizeof text);
            return tack_set_error(TACK_ERR_COMPILE, "kernel '%s': Metal makes no compute pipeline of %s on %s: %s",
                                  p->kernel_name, fname, d->name, text);
        }
        NSUInteger most = mtl_uint(mp->pso[k], TK_S(maxTotalThreadsPerThreadgroup));
        if (mp->g.kinds[k] == 'b') { /* a blocks loop: threadgroups of exactly its block size, or an error */
            tack_status st = blocks_fit(d, p, mp, k, most);
            if (st != TACK_OK) return st;
            continue;
        }
        /* at most 256 and the pipeline's limit, in whole SIMD groups where that leaves any */
        NSUInteger simd = mtl_uint(mp->pso[k], TK_S(threadExecutionWidth));
        NSUInteger cap = most && most < 256 ? most : 256;
        if (simd && cap >= simd) cap -= cap % simd;
        if (cap < tg) tg = cap;
    }
    mp->grid.block = (unsigned)tg;
    for (int k = 0; k < mp->g.nph; k++) {
        unsigned per = mp->g.kinds[k] == 'b' ? mp->g.bsize[k] : (unsigned)tg; /* a blocks loop's groups are its own */
        mp->grid.fill[k] = METAL_THREADS_IN_FLIGHT / per ? METAL_THREADS_IN_FLIGHT / per : 1;
    }
    return TACK_OK;
}

tack_status metal_build(tack_device *d, tack_program *p) {
    metal_dev *h = d->state;
    metal_prog *mp = tack_calloc(1, sizeof *mp);
    if (!mp) return tack_set_error(TACK_ERR_NOMEM, "out of memory building kernel '%s'", p->kernel_name);
    gpu_prog_init(&mp->g, p);
    tack_status st = gpu_metal_layout(p, &mp->g, &mp->grid);
    int narrays = 0;
    for (int i = 0; i < p->nparams; i++) narrays += p->params[i].is_array != 0;
    if (st == TACK_OK && 3 + narrays > METAL_MAX_BUFFERS)
        st = tack_set_error(TACK_ERR_UNSUPPORTED,
                            "kernel '%s' has %d array parameters; a Metal kernel binds at most %d buffers, %d of them "
                            "arrays",
                            p->kernel_name, narrays, METAL_MAX_BUFFERS, METAL_MAX_BUFFERS - 3);
    if (st == TACK_OK && !(mp->pso = tack_calloc((size_t)mp->g.nph + 1, sizeof(id))))
        st = tack_set_error(TACK_ERR_NOMEM, "out of memory building kernel '%s'", p->kernel_name);
    if (st != TACK_OK) {
        prog_free(mp);
        return st;
    }
    void *pool = metal_pool_push(h->api);
    id lib = NULL;
    if ((st = compile(d, p, &lib)) == TACK_OK) st = pipelines(d, p, mp, lib);
    if (lib) mtl_void(lib, TK_S(release));
    if (st == TACK_OK) {
        size_t n = mp->g.frame_bytes > METAL_FRAME_MIN ? mp->g.frame_bytes : METAL_FRAME_MIN;
        mp->frame = mtl_id_uint_opts(h->device, TK_S(newBufferWithLength_options), n, TK_MTL_RESOURCE_STORAGE_SHARED);
        void *f = mp->frame ? mtl_ptr(mp->frame, TK_S(contents)) : NULL;
        if (f) memset(f, 0, n);
        else st = tack_set_error(TACK_ERR_NOMEM, "out of device memory for kernel '%s''s frame of %zu bytes",
                                 p->kernel_name, n);
    }
    metal_pool_pop(h->api, pool);
    if (st != TACK_OK) {
        prog_free(mp);
        return st;
    }
    tk_mutex_lock(&h->rec.lock);
    gpu_link(&h->rec, &mp->g);
    tk_mutex_unlock(&h->rec.lock);
    p->handle = mp;
    return TACK_OK;
}

void metal_unload(tack_device *d, tack_program *p) {
    metal_dev *h = d->state;
    metal_prog *mp = p->handle;
    if (!mp) return;
    /* its queued work done, and a failure still unread -- a command buffer's
     * or a check's -- kept for the next synchronization */
    tack_status st = metal_wait_all(d);
    tk_mutex_lock(&h->rec.lock);
    if (st != TACK_OK && h->rec.pending == TACK_OK) {
        h->rec.pending = st;
        snprintf(h->rec.pending_msg, sizeof h->rec.pending_msg, "%s", tack_last_error());
    }
    if (st != TACK_OK) tack_clear_error();
    gpu_keep_pending(&h->rec, d, take_record);
    gpu_unlink(&h->rec, &mp->g);
    tk_mutex_unlock(&h->rec.lock);
    prog_free(mp);
    p->handle = NULL;
}

/* -------------------------------------------------------------- launch */
/* A scalar's 8-byte word: floats as f32 bits in the low half. */
static uint64_t scalar_word(const tk_pinfo *pi, const tack_arg *a, int part) {
    const tack_dtype_info *info = tack_dtype_get(pi->dtype);
    if (info->kind == TACK_KIND_FLOAT || info->kind == TACK_KIND_COMPLEX) {
        float f = (float)(info->kind == TACK_KIND_COMPLEX ? a->scalar.z[part] : a->scalar.f);
        uint32_t u;
        memcpy(&u, &f, 4);
        return u;
    }
    return a->scalar.u;
}

/* The device time of a launch's command buffer, read once it has completed
 * (rt_prof_timer; ns NULL: the event was dropped, the buffer only released). */
typedef struct metal_timer {
    tack_device *d;
    id cb; /* retained */
} metal_timer;

static tack_status timer_read(void *ctx, int64_t *ns) {
    metal_timer *t = ctx;
    metal_dev *h = t->d->state;
    tack_status st = TACK_OK;
    void *pool = metal_pool_push(h->api);
    if (ns) {
        mtl_void(t->cb, TK_S(waitUntilCompleted));
        double t0 = mtl_double(t->cb, TK_S(GPUStartTime)), t1 = mtl_double(t->cb, TK_S(GPUEndTime));
        if (mtl_cb_status(t->cb, TK_S(status)) == TK_MTL_CB_ERROR)
            st = tack_set_error(TACK_ERR_DEVICE, "%s (%s): a profiled launch's command buffer failed: no device time",
                                t->d->name, h->name);
        else if (t0 <= 0 || t1 < t0)
            st = tack_set_error(TACK_ERR_DEVICE,
                                "%s (%s): Metal gives no GPUStartTime and GPUEndTime for a profiled launch's "
                                "command buffer (%g, %g)",
                                t->d->name, h->name, t0, t1);
        else
            *ns = (int64_t)((t1 - t0) * 1e9 + 0.5); /* seconds as a double: to the nearest ns */
    }
    mtl_void(t->cb, TK_S(release));
    metal_pool_pop(h->api, pool);
    tack_free(t);
    return st;
}

/* While a profile records: cb's timer, for tack_launch to record with the launch. */
static void time_launch(tack_device *d, id cb) {
    metal_timer *t = tack_malloc(sizeof *t);
    if (!t) return; /* no device time, and no error of the launch */
    t->d = d;
    t->cb = mtl_id(cb, TK_S(retain));
    rt_prof_timer tm = {timer_read, t};
    rt_prof_cur_timer = tm;
}

static tack_status encode(tack_device *d, metal_q *q, metal_prog *mp, const tack_arg *args, int nargs,
                          const uint64_t *words, size_t nwords, int *shared) {
    metal_dev *h = d->state;
    tack_program *p = mp->g.p;
    id cb = mtl_id(q->queue, TK_S(commandBuffer));
    id enc = cb ? mtl_id(cb, TK_S(computeCommandEncoder)) : NULL;
    id big = NULL;
    if (!enc) return tack_set_error(TACK_ERR_DEVICE, "Metal gives no command buffer or encoder on %s", d->name);
    mtl_void_id_uint_uint(enc, TK_S(setBuffer_offset_atIndex), h->err, 0, 0);
    mtl_void_id_uint_uint(enc, TK_S(setBuffer_offset_atIndex), mp->frame, 0, 1);
    size_t wbytes = nwords * sizeof *words;
    if (wbytes <= METAL_SET_BYTES_MAX) {
        mtl_void_bytes_uint_uint(enc, TK_S(setBytes_length_atIndex), words, wbytes, 2);
    } else {
        big = mtl_id_uint_opts(h->device, TK_S(newBufferWithLength_options), wbytes, TK_MTL_RESOURCE_STORAGE_SHARED);
        void *c = big ? mtl_ptr(big, TK_S(contents)) : NULL;
        if (!c) {
            if (big) mtl_void(big, TK_S(release));
            mtl_void(enc, TK_S(endEncoding));
            return tack_set_error(TACK_ERR_NOMEM, "out of device memory for kernel '%s''s arguments", p->kernel_name);
        }
        memcpy(c, words, wbytes);
        mtl_void_id_uint_uint(enc, TK_S(setBuffer_offset_atIndex), big, 0, 2);
        mtl_void(big, TK_S(release)); /* the command buffer keeps what it uses */
    }
    for (int i = 0, ai = 0; i < nargs; i++) {
        if (!p->params[i].is_array) continue;
        tack_array *a = args[i].array;
        *shared |= (tack_array_flags(a) & TACK_ARRAY_SHARED) != 0;
        size_t off = 0;
        const void *data = tack_array_data(a);
        id buf = data ? metal_buffer_of(h, data, &off) : h->err; /* an empty array: any buffer */
        if (!buf) {
            mtl_void(enc, TK_S(endEncoding));
            return tack_set_error(TACK_ERR_VALUE, "kernel '%s': argument %d at %p is in no MTLBuffer of %s",
                                  p->kernel_name, i, data, d->name);
        }
        mtl_void_id_uint_uint(enc, TK_S(setBuffer_offset_atIndex), buf, off, (NSUInteger)(3 + ai++));
    }
    for (int k = 0; k < mp->g.nph; k++) {
        int par = mp->g.kinds[k] == 'p' || mp->g.kinds[k] == 'b';
        MTLSize groups = {par ? gpu_phase_grid(&mp->grid, k, p, args, nargs) : 1, 1, 1};
        MTLSize threads = {mp->g.kinds[k] == 'b' ? mp->g.bsize[k] : par ? mp->grid.block : 1, 1, 1};
        mtl_void_id(enc, TK_S(setComputePipelineState), mp->pso[k]);
        mtl_void_size_size(enc, TK_S(dispatchThreadgroups_threadsPerThreadgroup), groups, threads);
    }
    mtl_void(enc, TK_S(endEncoding));
    mtl_void(cb, TK_S(commit));
    if (rt_prof_on()) time_launch(d, cb); /* runtime/profile.c */
    return metal_q_add(d, q, mtl_id(cb, TK_S(retain)));
}

tack_status metal_launch(tack_device *d, tack_program *p, const tack_arg *args, int nargs) {
    metal_dev *h = d->state;
    metal_prog *mp = p->handle;
    if (!mp) return tack_set_error(TACK_ERR_VALUE, "kernel '%s' is not built", p->kernel_name);
    uint64_t stackwords[64], *words = stackwords;
    size_t n = 1;
    for (int i = 0; i < nargs; i++)
        n += p->params[i].is_array ? (size_t)p->params[i].ndim * (p->params[i].strided ? 2 : 1)
                                   : (size_t)gpu_scalar_slots(&p->params[i]);
    if (n > 64 && !(words = tack_calloc(n, sizeof *words)))
        return tack_set_error(TACK_ERR_NOMEM, "out of memory launching kernel '%s'", p->kernel_name);
    size_t w = 0;
    words[w++] = mp->g.id;
    for (int i = 0; i < nargs; i++) {
        const tk_pinfo *pi = &p->params[i];
        if (pi->is_array) {
            const int64_t *shape = tack_array_shape(args[i].array);
            for (int k = 0; k < pi->ndim; k++) words[w++] = (uint64_t)shape[k];
            if (pi->strided) { /* element strides after the extents (dialect_msl.c); bound at element (0, ..., 0) */
                int64_t t[TACK_MAX_NDIM];
                gpu_strides(args[i].array, pi->ndim, t);
                for (int k = 0; k < pi->ndim; k++) words[w++] = (uint64_t)t[k];
            }
        } else {
            for (int s = 0; s < gpu_scalar_slots(pi); s++) words[w++] = scalar_word(pi, &args[i], s);
        }
    }
    int shared = 0;
    tack_status st = TACK_OK;
    metal_q *q = metal_cur(d); /* the thread's current stream on d, else the device's own queue */
    if (!q) st = TACK_ERR_NOMEM;
    void *pool = metal_pool_push(h->api);
    /* the phases share the frame buffer: encoded under the program's lock */
    tk_mutex_lock(&mp->g.lock);
    /* Launches of one program share its frame buffer: one on another stream than the last waits
     * for it on the device (runtime/stream.c).  Graphs on Metal replay the calls themselves
     * (runtime/graph.c): nothing is captured here. */
    tack_stream *cur = rt_stream_now(d);
    if (st == TACK_OK && mp->g.frame_bytes && cur != mp->g.last &&
        (st = rt_stream_order(d, cur, mp->g.last)) == TACK_OK) {
        tack_stream_retain(cur);
        tack_stream_release(mp->g.last);
        mp->g.last = cur;
    }
    if (st == TACK_OK) st = encode(d, q, mp, args, nargs, words, w, &shared);
    tk_mutex_unlock(&mp->g.lock);
    metal_pool_pop(h->api, pool);
    if (words != stackwords) tack_free(words);
    /* shared with another library: finished, and a failed check reported, before the call returns */
    if (st == TACK_OK && shared) {
        st = metal_q_wait(d, q);
        tack_status rst = metal_check_record(d);
        if (st == TACK_OK) st = rst;
    }
    return st;
}
