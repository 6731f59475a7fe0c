/*
 * hip_launch.c -- building and running kernels on HIP devices.
 *
 * Build: the HIP dialect's source (dialect_hip.c) goes through hiprtc
 * (hiprtc.c) to a code object for the device's own gcnArchName -- with its
 * feature suffixes, "gfx90a:sramecc+:xnack-", so the object matches the
 * device's mode -- and with the device's wavefront size where the
 * architecture has a choice (RDNA runs wave32 or wave64; the dialect reads
 * `warpSize`, a constant of the target, so the object is built for the size
 * the device reports).  The object is loaded with hipModuleLoadData; one the
 * runtime refuses from the cache is rebuilt once.
 *
 * The disk cache keeps code objects per architecture, in the directory and
 * under the sealing rules of the CPU's cache (kcache.c): `KEY.ARCH.hsaco`
 * (the architecture's ':' written '_'), gpu_common.c's binary entry, whose
 * key hashes the source, the dialect, hiprtc's version, the architecture,
 * the wavefront, the compile options, Tack's version and the launcher's ABI.
 * A truncated, foreign or non-ELF entry is rebuilt.
 *
 * Launch: the CUDA launcher's twin (gpu_launch.c: layout comment, grid,
 * slots, a shared argument's wait, a blocks loop's block checked at build
 * against hipFuncGetAttribute's limits: check_block).  The slots go to hipModuleLaunchKernel
 * as the kernel's one by-value argument, through `extra` (the argument
 * buffer and its size), which every ROCm release takes.
 *
 * Errors: the device-side record (gpu_common.c) is read and cleared with the
 * runtime's copies at every synchronization point; a program freed with a
 * failure still recorded keeps its message for the next one.
 *
 * TACK_LOG=info logs each compile and cache load with its time to stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/hip/hip_backend.h"
#include "backends/common/kcache.h"
#include "private/tack_private.h"
#include "runtime/program.h"
#include "tack_kernel.h"

#define HSACO_HEAD "tack-hsaco-key "

typedef struct hip_prog {
    gpu_prog g; /* first: the device's program list holds it */
    hipModule_t mod;
    hipFunction_t *fn;
    void *frame;
    gpu_grid grid;
} hip_prog;

/* ----------------------------------------------------------- reporting */
/* Read the record (stream synchronized, h->rec.lock held): gpu_take_fn. */
static int take_record(tack_device *d, gpu_err_record *rec, tack_status *st) {
    const tack_hip_api *api = hip_api_get();
    hip_dev *h = d->state;
    *st = TACK_OK;
    if (!h->err) return 0;
    memset(rec, 0, sizeof *rec);
    hipError_t r = api->hipMemcpyAsync(rec, h->err, sizeof *rec, TACK_HIP_MEMCPY_D2H, h->stream);
    if (r == TACK_HIP_SUCCESS) r = api->hipStreamSynchronize(h->stream);
    if (r != TACK_HIP_SUCCESS) {
        *st = hip_fail(d, r, "reading the kernel error record");
        return 0;
    }
    if (!rec->failed) return 0;
    r = api->hipMemsetD32Async(h->err, 0, sizeof *rec / 4, h->stream);
    if (r == TACK_HIP_SUCCESS) r = api->hipStreamSynchronize(h->stream);
    if (r != TACK_HIP_SUCCESS) *st = hip_fail(d, r, "clearing the kernel error record");
    return 1;
}

tack_status hip_check_record(tack_device *d) {
    return gpu_check_record(&((hip_dev *)d->state)->rec, d, take_record);
}

/* ---------------------------------------------------------- code objects */
unsigned hip_wave_flags(const char *arch, int warp) {
    /* RDNA (gfx10xx and later: four digits after "gfx") chooses; GCN and CDNA are wave64 only */
    size_t digits = strspn(arch + 3, "0123456789abcdef");
    if (strncmp(arch, "gfx", 3) != 0 || digits < 4) return 0;
    return warp == 64 ? TACK_HIPRTC_WAVE64 : TACK_HIPRTC_WAVE32;
}

static int elf_magic(const unsigned char *bin, size_t len) { return len > 4 && memcmp(bin, "\177ELF", 4) == 0; }

typedef struct hip_image {
    char *buf;                  /* to free */
    const unsigned char *image; /* in buf */
    size_t len;
    char path[200];
} hip_image;

static tack_status image_in(const kc_dir *dir, tack_device *d, tack_program *p, int refresh, hip_image *im) {
    hip_dev *h = d->state;
    int hv = tack_hiprtc_version();
    unsigned flags = (p->fast_math ? TACK_HIPRTC_FAST_MATH : 0) | (p->flush_denormals ? TACK_HIPRTC_FTZ : 0) |
                     hip_wave_flags(h->arch, h->warp);
    char misc[240], key[40], arch[64];
    snprintf(misc, sizeof misc, "hiprtc%d %s wave%d flags%u tack%s launch%d", hv, h->arch, h->warp, flags,
             TACK_VERSION_STRING, HIP_LAUNCH_ABI);
    gpu_cache_key(p, misc, key);
    snprintf(arch, sizeof arch, "%s", h->arch);
    for (char *c = arch; *c; c++)
        if (*c == ':') *c = '_';
    snprintf(im->path, sizeof im->path, "%s.%s.hsaco", key, arch);
    double t0 = kc_now_ms();
    if (!refresh && (im->buf = gpu_bin_entry_read(dir, im->path, HSACO_HEAD, key, "a code object", elf_magic,
                                                  &im->image, &im->len))) {
        rt_prof_build = "cache hit";
        if (kc_log_info())
            fprintf(stderr, "tack: loaded kernel '%s' for %s from the cache in %.2f ms (%s/%s)\n", p->kernel_name,
                    h->arch, kc_now_ms() - t0, dir->path, im->path);
        return TACK_OK;
    }
    char name[300];
    void *code = NULL;
    snprintf(name, sizeof name, "%s.hip", p->kernel_name);
    tack_status st = tack_hiprtc_compile(p->source, name, h->arch, flags, &code, &im->len);
    if (st != TACK_OK) return st;
    im->buf = code;
    im->image = code;
    if ((st = gpu_bin_entry_write(dir, im->path, HSACO_HEAD, key, im->image, im->len)) != TACK_OK) return st;
    rt_prof_build = "hiprtc";
    if (kc_log_info())
        fprintf(stderr, "tack: compiled kernel '%s' for %s in %.1f ms with hiprtc %d.%d (%s/%s)\n", p->kernel_name,
                h->arch, kc_now_ms() - t0, hv / 1000, hv % 1000 / 10, dir->path, im->path);
    return TACK_OK;
}

static tack_status image_get(tack_device *d, tack_program *p, int refresh, hip_image *im) {
    memset(im, 0, sizeof *im);
    kc_dir dir;
    tack_status st = kc_open(&dir);
    if (st != TACK_OK) return st;
    st = image_in(&dir, d, p, refresh, im);
    kc_close(&dir);
    if (st != TACK_OK) tack_free(im->buf), im->buf = NULL;
    return st;
}

/* --------------------------------------------------------------- build */
static void prog_free(const tack_hip_api *api, tack_device *d, hip_prog *hp) {
    if (!hp) return;
    if (!hip_is_lost(d)) {
        if (hp->frame) hip_note(d, api->hipFree(hp->frame));
        if (hp->mod && !hip_is_lost(d)) hip_note(d, api->hipModuleUnload(hp->mod));
    }
    gpu_grid_free(&hp->grid);
    gpu_prog_fini(&hp->g);
    tack_free(hp->fn);
    tack_free(hp);
}

/* A blocks phase's B threads against what its compiled function allows
 * (HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: the largest work-group the
 * code object was compiled for, at most the device's) and its static
 * shared memory (LDS)
 * against the device's (gpu_block_check words the error); the device's own
 * limit where the runtime has no hipFuncGetAttribute. */
static tack_status check_block(tack_device *d, tack_program *p, hip_prog *hp, int k) {
    const tack_hip_api *api = hip_api_get();
    hip_dev *h = d->state;
    gpu_block_limits l = {"HIP", h->name, h->max_block, "hipDeviceAttributeMaxThreadsPerBlock", -1, h->max_shared,
                          "hipDeviceAttributeMaxSharedMemoryPerBlock"};
    int v = 0;
    if (api->hipFuncGetAttribute &&
        api->hipFuncGetAttribute(&v, TACK_HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, hp->fn[k]) == TACK_HIP_SUCCESS &&
        v > 0) {
        l.threads = v;
        l.threads_what = "HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: the code object's largest work-group on the device";
    }
    if (api->hipFuncGetAttribute &&
        api->hipFuncGetAttribute(&v, TACK_HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, hp->fn[k]) == TACK_HIP_SUCCESS)
        l.shared = v;
    return gpu_block_check(d, p, &hp->g, k, &l);
}

tack_status hip_build(tack_device *d, tack_program *p) {
    const tack_hip_api *api = hip_api_get();
    hip_dev *h = d->state;
    tack_status st = hip_lost_error(d);
    if (st != TACK_OK) return st;
    hip_prog *hp = tack_calloc(1, sizeof *hp);
    if (!hp) return tack_set_error(TACK_ERR_NOMEM, "out of memory building kernel '%s'", p->kernel_name);
    gpu_prog_init(&hp->g, p);
    st = gpu_cu_layout(p, &hp->g, &hp->grid, "hip", "/* tack-hip: phases=", "a HIP device", "HIP");
    if (st == TACK_OK && !(hp->fn = tack_calloc((size_t)hp->g.nph + 1, sizeof(hipFunction_t))))
        st = tack_set_error(TACK_ERR_NOMEM, "out of memory building kernel '%s'", p->kernel_name);
    if (st == TACK_OK && hp->grid.block % (unsigned)h->warp != 0)
        st = tack_set_error(TACK_ERR_VALUE, "kernel '%s': its block of %u threads is not whole wavefronts of %d on %s",
                            p->kernel_name, hp->grid.block, h->warp, d->name);
    if (st != TACK_OK || (st = hip_push(d)) != TACK_OK) {
        prog_free(api, d, hp);
        return st;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        hip_image im;
        if ((st = image_get(d, p, attempt, &im)) != TACK_OK) goto fail;
        hipError_t r = api->hipModuleLoadData(&hp->mod, im.image);
        tack_free(im.buf);
        if (r == TACK_HIP_SUCCESS) break;
        hp->mod = NULL;
        if (attempt == 1 || hip_sticky(r)) {
            st = hip_fail(d, r, "hipModuleLoadData");
            if (r == TACK_HIP_ERROR_NO_BINARY_FOR_GPU || r == 200 /* hipErrorInvalidImage */) {
                char msg[600];
                snprintf(msg, sizeof msg, "%s", tack_last_error());
                st = tack_set_error(st, "%s loading kernel '%s', compiled for %s (the device's gcnArchName)", msg,
                                    p->kernel_name, h->arch);
            }
            goto fail;
        }
        if (kc_log_info()) fprintf(stderr, "tack: cache entry %s does not load; rebuilding it\n", im.path);
    }
    for (int k = 0; k < hp->g.nph; k++) {
        char fname[32];
        snprintf(fname, sizeof fname, "tk_phase%d", k);
        hipError_t r = api->hipModuleGetFunction(&hp->fn[k], hp->mod, fname);
        if (r != TACK_HIP_SUCCESS) {
            st = hip_fail(d, r, "hipModuleGetFunction");
            goto fail;
        }
        if (hp->g.kinds[k] == 'b' && (st = check_block(d, p, hp, k)) != TACK_OK) goto fail;
        int per_cu = 0;
        if (!api->hipModuleOccupancyMaxActiveBlocksPerMultiprocessor ||
            api->hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(&per_cu, hp->fn[k], (int)(hp->g.bsize[k] ? hp->g.bsize[k] : hp->grid.block), 0) !=
                TACK_HIP_SUCCESS ||
            per_cu <= 0)
            per_cu = h->cu_threads / (int)(hp->g.bsize[k] ? hp->g.bsize[k] : hp->grid.block);
        hp->grid.fill[k] = (unsigned)(d->threads > 0 ? d->threads : 1) * (unsigned)(per_cu > 0 ? per_cu : 1);
    }
    if (hp->g.frame_bytes) {
        hipError_t r = api->hipMalloc(&hp->frame, hp->g.frame_bytes);
        if (r == TACK_HIP_SUCCESS) r = api->hipMemsetD8Async(hp->frame, 0, hp->g.frame_bytes, h->stream);
        if (r != TACK_HIP_SUCCESS) {
            st = hip_fail(d, r, "allocating a kernel frame");
            goto fail;
        }
    }
    tk_mutex_lock(&h->rec.lock);
    if (!h->err) {
        hipError_t r = api->hipMalloc(&h->err, sizeof(gpu_err_record));
        if (r == TACK_HIP_SUCCESS) r = api->hipMemsetD32Async(h->err, 0, sizeof(gpu_err_record) / 4, h->stream);
        if (r == TACK_HIP_SUCCESS) r = api->hipStreamSynchronize(h->stream);
        if (r != TACK_HIP_SUCCESS) {
            if (h->err && !hip_sticky(r)) api->hipFree(h->err);
            h->err = NULL;
            tk_mutex_unlock(&h->rec.lock);
            st = hip_fail(d, r, "allocating the kernel error record");
            goto fail;
        }
    }
    gpu_link(&h->rec, &hp->g);
    tk_mutex_unlock(&h->rec.lock);
    hip_pop();
    p->handle = hp;
    return TACK_OK;
fail:
    prog_free(api, d, hp);
    hip_pop();
    return st;
}

void hip_unload(tack_device *d, tack_program *p) {
    const tack_hip_api *api = hip_api_get();
    hip_dev *h = d->state;
    hip_prog *hp = p->handle;
    if (!hp || !api) return;
    int pushed = !hip_is_lost(d) && hip_push(d) == TACK_OK;
    /* launches of it on other streams (runtime/stream.c) finish before its code and frame go */
    if (pushed && rt_streams_join(d) != TACK_OK) tack_clear_error(); /* a loss: noted, said at the next call */
    tk_mutex_lock(&h->rec.lock);
    /* a failure of this program still unread: keep its message for the next synchronization */
    if (pushed) {
        hipError_t r = api->hipStreamSynchronize(h->stream);
        if (r == TACK_HIP_SUCCESS) gpu_keep_pending(&h->rec, d, take_record);
        else hip_note(d, r);
    }
    gpu_unlink(&h->rec, &hp->g);
    tk_mutex_unlock(&h->rec.lock);
    prog_free(api, d, hp);
    if (pushed) hip_pop();
    p->handle = NULL;
}

/* -------------------------------------------------------------- launch */
static tack_status queue_phase(tack_device *d, gpu_prog *g, int k, unsigned blocks, unsigned threads, uint64_t *slots,
                               size_t bytes) {
    void *extra[5] = {TACK_HIP_LAUNCH_PARAM_BUFFER_POINTER, slots, TACK_HIP_LAUNCH_PARAM_BUFFER_SIZE, &bytes,
                      TACK_HIP_LAUNCH_PARAM_END};
    hipError_t r = hip_api_get()->hipModuleLaunchKernel(((hip_prog *)g)->fn[k], blocks, 1, 1, threads, 1, 1, 0,
                                                         hip_queue(d), NULL, extra);
    return r == TACK_HIP_SUCCESS ? TACK_OK : hip_fail(d, r, "hipModuleLaunchKernel");
}

static tack_status finish(tack_device *d) {
    hipError_t r = hip_api_get()->hipStreamSynchronize(hip_queue(d)); /* the stream it was launched on */
    return r == TACK_HIP_SUCCESS ? hip_check_record(d) : hip_fail(d, r, "hipStreamSynchronize");
}

/* While a profile records: events before and after the phases (profile.c).
 * The timer reads the time between once the device has run them, and frees
 * both; a failure to read is an error of the profile's stop, not the launch's. */
typedef struct hip_timer {
    tack_device *d;
    hipEvent_t a, b;
} hip_timer;

static tack_status timer_read(void *ctx, int64_t *ns) {
    hip_timer *t = ctx;
    const tack_hip_api *api = hip_api_get();
    tack_status st = TACK_OK;
    if (ns && !hip_is_lost(t->d) && (st = hip_push(t->d)) == TACK_OK) {
        float ms = 0;
        hipError_t r = api->hipEventSynchronize(t->b);
        if (r == TACK_HIP_SUCCESS) r = api->hipEventElapsedTime(&ms, t->a, t->b);
        st = r == TACK_HIP_SUCCESS ? TACK_OK : hip_fail(t->d, r, "hipEventElapsedTime");
        if (st == TACK_OK) *ns = (int64_t)((double)ms * 1e6 + 0.5); /* ms as a float: to the nearest ns */
        hip_pop();
    }
    if (!hip_is_lost(t->d)) {
        hip_note(t->d, api->hipEventDestroy(t->a));
        if (t->b) hip_note(t->d, api->hipEventDestroy(t->b));
    }
    tack_free(t);
    return st;
}

static void *time_start(tack_device *d) {
    const tack_hip_api *api = hip_api_get();
    if (!api->hipEventSynchronize || !api->hipEventElapsedTime) return NULL;
    hip_timer *t = tack_calloc(1, sizeof *t);
    if (!t) return NULL;
    t->d = d;
    if (api->hipEventCreateWithFlags(&t->a, 0) != TACK_HIP_SUCCESS) t->a = NULL;
    if (t->a && api->hipEventRecord(t->a, hip_queue(d)) == TACK_HIP_SUCCESS) return t;
    if (t->a) api->hipEventDestroy(t->a);
    tack_free(t);
    return NULL;
}

static rt_prof_timer time_stop(tack_device *d, void *start) {
    const tack_hip_api *api = hip_api_get();
    hip_timer *t = start;
    rt_prof_timer tm = {timer_read, t};
    if (api->hipEventCreateWithFlags(&t->b, 0) != TACK_HIP_SUCCESS ||
        api->hipEventRecord(t->b, hip_queue(d)) != TACK_HIP_SUCCESS) {
        if (t->b) api->hipEventDestroy(t->b);
        api->hipEventDestroy(t->a);
        tack_free(t);
        tm.resolve = NULL;
        tm.ctx = NULL;
    }
    return tm;
}

static const gpu_launch_hooks hooks = {queue_phase, hip_note_launch, finish, time_start, time_stop};

tack_status hip_launch(tack_device *d, tack_program *p, const tack_arg *args, int nargs) {
    hip_dev *h = d->state;
    hip_prog *hp = p->handle;
    if (!hp) return tack_set_error(TACK_ERR_VALUE, "kernel '%s' is not built", p->kernel_name);
    tack_status st = hip_push(d);
    if (st != TACK_OK) return st;
    st = gpu_launch_phases(d, &hp->g, &hp->grid, (uint64_t)(uintptr_t)h->err, (uint64_t)(uintptr_t)hp->frame, args,
                           nargs, "HIP", &hooks);
    hip_pop();
    return st;
}
