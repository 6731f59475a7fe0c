/*
 * cuda_launch.c -- building and running kernels on CUDA devices.
 *
 * Build: the CUDA dialect's source (dialect_cuda.c) goes through NVRTC to
 * PTX or a cubin, whichever the driver can load (cuda_image.c, which also
 * keeps them in the disk cache), and that is loaded with cuModuleLoadDataEx
 * into the device's primary context; when the driver refuses it, its JIT
 * log is part of the error, and a cache entry it refuses is rebuilt once.
 * The source's last comment says how many phases the kernel has, which of
 * them run as a single thread, and how large the frame buffer between
 * phases must be.
 *
 * Launch: the arguments are checked against the signature (dtype, ndim,
 * device, writability), packed as 8-byte slots (error record, frame buffer,
 * program id, then per parameter its pointer and shape or its scalar) and
 * passed by value to every phase.  Parallel phases run a grid sized from
 * the loop's extent where the source says how to compute it from the
 * arguments, capped at what fills the device (gpu_launch.c, shared with HIP); serial phases
 * run one thread.  A blocks loop runs blocks of exactly its B threads; a B
 * its compiled function cannot hold (cuFuncGetAttribute's
 * MAX_THREADS_PER_BLOCK, lowered by registers) or shared arrays over the
 * device's shared memory a block is a ValueError at build (check_block).  The phases of one call are queued back to back under the
 * program's lock (they share its frame buffer), and the call returns once
 * they are queued -- except when an array argument is shared with another
 * library (TACK_ARRAY_SHARED: exported or imported through DLPack, or
 * wrapped from a pointer), in which case it waits for the launch to finish
 * and reports a failed check at once, so the other library sees finished
 * results ("When a call returns", DESIGN 4).
 *
 * Errors: a failed check writes the device's error record (first failure
 * wins).  cuda_check_record, called at every synchronization point,
 * reads it, finds the program by its id and words the message from the
 * program's site table, as the CPU does.  A program freed with a failure
 * still recorded leaves the message on the device for the next
 * synchronization.  All of this but reading and clearing the record is
 * gpu_common.c's, as are the layout comment's dialect check and phases.
 * A sticky driver error (cuda.c) loses the device: building, launching and
 * reading the record then fail at once, and unloading frees only host memory.
 * Each launch keeps its kernel's name, for the message of such a loss.
 *
 * TACK_LOG=info logs each compile and cache load with its time to stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_backend.h"
#include "backends/common/kcache.h"
#include "runtime/program.h"

typedef struct cuda_prog {
    gpu_prog g; /* first: the device's program list holds it */
    CUmodule mod;
    CUfunction *fn;
    CUdeviceptr frame;
    gpu_grid grid;  /* block size, loops' extents; fill: SMs x resident blocks per SM */
} cuda_prog;

/* ----------------------------------------------------------- reporting */
/* Read the record (stream synchronized, context pushed, c->rec.lock held):
 * gpu_common.h's gpu_take_fn. */
static int take_record(tack_device *d, gpu_err_record *rec, tack_status *st) {
    const tack_cuda_api *api = cuda_api_get();
    cuda_dev *c = d->state;
    *st = TACK_OK;
    if (!c->err) return 0;
    memset(rec, 0, sizeof *rec);
    CUresult r = api->cuMemcpyDtoHAsync(rec, c->err, sizeof *rec, c->stream);
    if (r == TACK_CUDA_SUCCESS) r = api->cuStreamSynchronize(c->stream);
    if (r != TACK_CUDA_SUCCESS) {
        *st = cuda_fail(d, r, "reading the kernel error record");
        return 0;
    }
    if (!rec->failed) return 0;
    r = api->cuMemsetD32Async(c->err, 0, sizeof *rec / 4, c->stream);
    if (r == TACK_CUDA_SUCCESS) r = api->cuStreamSynchronize(c->stream);
    if (r != TACK_CUDA_SUCCESS) *st = cuda_fail(d, r, "clearing the kernel error record");
    return 1;
}

tack_status cuda_check_record(tack_device *d) {
    return gpu_check_record(&((cuda_dev *)d->state)->rec, d, take_record);
}

/* --------------------------------------------------------------- build */
static tack_status parse_layout(tack_program *p, cuda_prog *cp) {
    tack_status st = gpu_cu_layout(p, &cp->g, &cp->grid, "cuda", "/* tack-cuda: phases=", "a CUDA device", "CUDA");
    if (st != TACK_OK) return st;
    if (!(cp->fn = tack_calloc((size_t)cp->g.nph + 1, sizeof(CUfunction))))
        return tack_set_error(TACK_ERR_NOMEM, "out of memory building kernel '%s'", p->kernel_name);
    return TACK_OK;
}

/* Device memory and module are left alone when the device is lost. */
static void prog_free(const tack_cuda_api *api, tack_device *d, cuda_prog *cp) {
    if (!cp) return;
    if (!cuda_is_lost(d)) {
        if (cp->frame) cuda_note(d, api->cuMemFree(cp->frame));
        if (cp->mod && !cuda_is_lost(d)) cuda_note(d, api->cuModuleUnload(cp->mod));
    }
    gpu_grid_free(&cp->grid);
    gpu_prog_fini(&cp->g);
    tack_free(cp->fn);
    tack_free(cp);
}

/* A blocks phase's B threads against what its compiled function allows
 * (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: the device's 1024, or fewer
 * where its registers do not fit) and its static shared memory against the
 * device's (gpu_block_check words the error); the device's own limit where
 * the driver has no cuFuncGetAttribute. */
static tack_status check_block(tack_device *d, tack_program *p, cuda_prog *cp, int k) {
    const tack_cuda_api *api = cuda_api_get();
    cuda_dev *c = d->state;
    gpu_block_limits l = {"CUDA", c->name, c->max_block, "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK", -1,
                          c->max_shared, "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK"};
    int v = 0;
    if (api->cuFuncGetAttribute &&
        api->cuFuncGetAttribute(&v, TACK_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, cp->fn[k]) == TACK_CUDA_SUCCESS &&
        v > 0) {
        l.threads = v;
        l.threads_what = "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: the device's limit and the kernel's registers";
    }
    if (api->cuFuncGetAttribute &&
        api->cuFuncGetAttribute(&v, TACK_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, cp->fn[k]) == TACK_CUDA_SUCCESS)
        l.shared = v;
    return gpu_block_check(d, p, &cp->g, k, &l);
}

tack_status cuda_build(tack_device *d, tack_program *p) {
    const tack_cuda_api *api = cuda_api_get();
    cuda_dev *c = d->state;
    char path[200] = "";
    tack_status st = cuda_lost_error(d);
    if (st != TACK_OK) return st;
    cuda_prog *cp = tack_calloc(1, sizeof *cp);
    if (!cp) return tack_set_error(TACK_ERR_NOMEM, "out of memory building kernel '%s'", p->kernel_name);
    gpu_prog_init(&cp->g, p);
    if ((st = parse_layout(p, cp)) != TACK_OK) {
        prog_free(api, d, cp);
        return st;
    }
    if ((st = cuda_push(d)) != TACK_OK) {
        prog_free(api, d, cp);
        return st;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        cuda_image im;
        st = cuda_image_get(d, p, attempt, &im);
        if (st != TACK_OK) goto fail;
        char log[4096] = "";
        int opts[2] = {TACK_CU_JIT_ERROR_LOG_BUFFER, TACK_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
        void *values[2] = {log, (void *)(uintptr_t)sizeof log};
        CUresult r = api->cuModuleLoadDataEx(&cp->mod, im.image, 2, opts, values);
        snprintf(path, sizeof path, "%s", im.path);
        cuda_image_free(&im);
        if (r == TACK_CUDA_SUCCESS) break;
        cp->mod = NULL;
        if (attempt == 1 || cuda_sticky(r)) {
            st = cuda_fail(d, r, "cuModuleLoadDataEx");
            char msg[512];
            if (r == TACK_CUDA_ERROR_UNSUPPORTED_PTX_VERSION) {
                char vs[400];
                cuda_versions_sentence(vs, sizeof vs, c->driver, tack_nvrtc_version());
                snprintf(msg, sizeof msg, "%s", tack_last_error());
                st = tack_set_error(st, "%s: %s", msg, vs);
            }
            log[sizeof log - 1] = 0;
            size_t n = strlen(log);
            while (n && (log[n - 1] == '\n' || log[n - 1] == ' ')) log[--n] = 0;
            if (n) {
                snprintf(msg, sizeof msg, "%s", tack_last_error());
                st = tack_set_error(st, "%s loading kernel '%s'; the JIT's log:\n%s", msg, p->kernel_name, log);
            }
            goto fail;
        }
        if (kc_log_info()) fprintf(stderr, "tack: cache entry %s does not load; rebuilding it\n", path);
    }
    for (int k = 0; k < cp->g.nph; k++) {
        char fname[32];
        snprintf(fname, sizeof fname, "tk_phase%d", k);
        CUresult r = api->cuModuleGetFunction(&cp->fn[k], cp->mod, fname);
        if (r != TACK_CUDA_SUCCESS) {
            st = cuda_fail(d, r, "cuModuleGetFunction");
            goto fail;
        }
        if (cp->g.kinds[k] == 'b' && (st = check_block(d, p, cp, k)) != TACK_OK) goto fail;
        int per_sm = 0;
        if (!api->cuOccupancyMaxActiveBlocksPerMultiprocessor ||
            api->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, cp->fn[k], (int)(cp->g.bsize[k] ? cp->g.bsize[k] : cp->grid.block), 0) != TACK_CUDA_SUCCESS ||
            per_sm <= 0)
            per_sm = c->sm_threads / (int)(cp->g.bsize[k] ? cp->g.bsize[k] : cp->grid.block);
        cp->grid.fill[k] = (unsigned)(d->threads > 0 ? d->threads : 1) * (unsigned)(per_sm > 0 ? per_sm : 1);
    }
    if (cp->g.frame_bytes) {
        CUresult r = api->cuMemAlloc(&cp->frame, cp->g.frame_bytes);
        if (r == TACK_CUDA_SUCCESS) r = api->cuMemsetD8Async(cp->frame, 0, cp->g.frame_bytes, c->stream);
        if (r != TACK_CUDA_SUCCESS) {
            st = cuda_fail(d, r, "allocating a kernel frame");
            goto fail;
        }
    }
    tk_mutex_lock(&c->rec.lock);
    if (!c->err) {
        CUresult r = api->cuMemAlloc(&c->err, sizeof(gpu_err_record));
        if (r == TACK_CUDA_SUCCESS) r = api->cuMemsetD32Async(c->err, 0, sizeof(gpu_err_record) / 4, c->stream);
        if (r == TACK_CUDA_SUCCESS) r = api->cuStreamSynchronize(c->stream);
        if (r != TACK_CUDA_SUCCESS) {
            if (c->err && !cuda_sticky(r)) api->cuMemFree(c->err);
            c->err = 0;
            tk_mutex_unlock(&c->rec.lock);
            st = cuda_fail(d, r, "allocating the kernel error record");
            goto fail;
        }
    }
    gpu_link(&c->rec, &cp->g);
    tk_mutex_unlock(&c->rec.lock);
    cuda_pop();
    p->handle = cp;
    return TACK_OK;
fail:
    prog_free(api, d, cp);
    cuda_pop();
    return st;
}

void cuda_unload(tack_device *d, tack_program *p) {
    const tack_cuda_api *api = cuda_api_get();
    cuda_dev *c = d->state;
    cuda_prog *cp = p->handle;
    if (!cp || !api) return;
    /* lost: no driver call, and no error of its own (a free) */
    int pushed = !cuda_is_lost(d) && cuda_push(d) == TACK_OK;
    /* launches of it on other streams (runtime/stream.c) finish before its code and frame go */
    if (pushed && rt_streams_join(d) != TACK_OK) tack_clear_error(); /* a loss: noted, said at the next call */
    tk_mutex_lock(&c->rec.lock);
    /* a failure of this program still unread: keep its message for the next synchronization */
    if (pushed) {
        CUresult r = api->cuStreamSynchronize(c->stream);
        if (r == TACK_CUDA_SUCCESS) gpu_keep_pending(&c->rec, d, take_record);
        else cuda_note(d, r);
    }
    gpu_unlink(&c->rec, &cp->g);
    tk_mutex_unlock(&c->rec.lock);
    prog_free(api, d, cp);
    if (pushed) cuda_pop();
    p->handle = NULL;
}

/* -------------------------------------------------------------- launch */
static tack_status queue_phase(tack_device *d, gpu_prog *g, int k, unsigned blocks, unsigned threads, uint64_t *slots,
                               size_t bytes) {
    void *params[1] = {slots};
    (void)bytes;
    CUresult r = cuda_api_get()->cuLaunchKernel(((cuda_prog *)g)->fn[k], blocks, 1, 1, threads, 1, 1, 0, cuda_queue(d),
                                                params, NULL);
    return r == TACK_CUDA_SUCCESS ? TACK_OK : cuda_fail(d, r, "cuLaunchKernel");
}

static tack_status finish(tack_device *d) {
    CUresult r = cuda_api_get()->cuStreamSynchronize(cuda_queue(d)); /* the stream it was launched on */
    return r == TACK_CUDA_SUCCESS ? cuda_check_record(d) : cuda_fail(d, r, "cuStreamSynchronize");
}

/* While a profile records: events before and after the phases (profile.c).
 * The timer reads the time between once the device has run them, and frees
 * both; a failure to read is an error of the profile's stop, not the launch's. */
typedef struct cuda_timer {
    tack_device *d;
    CUevent a, b;
} cuda_timer;

static tack_status timer_read(void *ctx, int64_t *ns) {
    cuda_timer *t = ctx;
    const tack_cuda_api *api = cuda_api_get();
    tack_status st = TACK_OK;
    int pushed = !cuda_is_lost(t->d) && cuda_push(t->d) == TACK_OK;
    if (ns && pushed) {
        float ms = 0;
        CUresult r = api->cuEventSynchronize(t->b);
        if (r == TACK_CUDA_SUCCESS) r = api->cuEventElapsedTime(&ms, t->a, t->b);
        st = r == TACK_CUDA_SUCCESS ? TACK_OK : cuda_fail(t->d, r, "cuEventElapsedTime");
        if (st == TACK_OK) *ns = (int64_t)((double)ms * 1e6 + 0.5); /* ms as a float: to the nearest ns */
    } else if (ns) {
        st = tack_set_error(TACK_ERR_DEVICE, "%s: cannot read a launch's device time", t->d->name);
    }
    if (pushed && !cuda_is_lost(t->d)) {
        cuda_note(t->d, api->cuEventDestroy(t->a));
        cuda_note(t->d, api->cuEventDestroy(t->b));
    }
    if (pushed) cuda_pop();
    tack_free(t);
    return st;
}

static void *time_start(tack_device *d) {
    const tack_cuda_api *api = cuda_api_get();
    if (!api->cuEventSynchronize || !api->cuEventElapsedTime) return NULL;
    cuda_timer *t = tack_calloc(1, sizeof *t);
    if (!t) return NULL;
    t->d = d;
    if (api->cuEventCreate(&t->a, 0) != TACK_CUDA_SUCCESS) t->a = NULL;
    if (t->a && api->cuEventRecord(t->a, cuda_queue(d)) == TACK_CUDA_SUCCESS) return t;
    if (t->a) api->cuEventDestroy(t->a);
    tack_free(t);
    return NULL;
}

static rt_prof_timer time_stop(tack_device *d, void *start) {
    const tack_cuda_api *api = cuda_api_get();
    cuda_timer *t = start;
    rt_prof_timer tm = {timer_read, t};
    if (api->cuEventCreate(&t->b, 0) != TACK_CUDA_SUCCESS ||
        api->cuEventRecord(t->b, cuda_queue(d)) != TACK_CUDA_SUCCESS) {
        if (t->b) api->cuEventDestroy(t->b);
        api->cuEventDestroy(t->a);
        tack_free(t);
        tm.resolve = NULL;
        tm.ctx = NULL;
    }
    return tm;
}

static const gpu_launch_hooks hooks = {queue_phase, cuda_note_launch, finish, time_start, time_stop};

tack_status cuda_launch(tack_device *d, tack_program *p, const tack_arg *args, int nargs) {
    cuda_dev *c = d->state;
    cuda_prog *cp = p->handle;
    if (!cp) return tack_set_error(TACK_ERR_VALUE, "kernel '%s' is not built", p->kernel_name);
    tack_status st = cuda_push(d);
    if (st != TACK_OK) return st;
    st = gpu_launch_phases(d, &cp->g, &cp->grid, (uint64_t)c->err, (uint64_t)cp->frame, args, nargs, "CUDA", &hooks);
    cuda_pop();
    return st;
}
