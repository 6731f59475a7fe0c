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
 * arguments, capped at what fills the device ("grid" below); serial phases
 * run one thread.  The phases of one call are queued back to back under the
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
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/cuda_backend.h"
#include "backends/kcache.h"
#include "runtime/program.h"

#define MAX_SLOTS 512 /* 4 KiB of kernel parameters */

typedef struct cuda_prog {
    gpu_prog g; /* first: the device's program list holds it */
    CUmodule mod;
    CUfunction *fn;
    CUdeviceptr frame;
    unsigned block;
    char **work;   /* per phase: its loop's extent (layout_grid.c's postfix), NULL when not written */
    unsigned *fill; /* per phase: the blocks that fill the device (SMs x resident blocks per SM) */
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
    const char *rest = NULL;
    tack_status st = gpu_layout(p, &cp->g, "cuda", "/* tack-cuda: phases=", "a CUDA device", NULL, &rest);
    if (st != TACK_OK) return st;
    unsigned long long frame = 0;
    unsigned block = 0;
    if (sscanf(rest, " frame=%llu block=%u", &frame, &block) != 2 || block == 0 || block > 1024)
        return tack_set_error(TACK_ERR_VALUE, "kernel '%s': malformed CUDA layout comment", p->kernel_name);
    cp->fn = tack_calloc((size_t)cp->g.nph + 1, sizeof(CUfunction));
    if (!cp->fn) return tack_set_error(TACK_ERR_NOMEM, "out of memory building kernel '%s'", p->kernel_name);
    cp->g.frame_bytes = (size_t)frame;
    cp->block = block;
    cp->work = tack_calloc((size_t)cp->g.nph + 1, sizeof(char *));
    cp->fill = tack_calloc((size_t)cp->g.nph + 1, sizeof(unsigned));
    if (!cp->work || !cp->fill) return tack_set_error(TACK_ERR_NOMEM, "out of memory building kernel '%s'", p->kernel_name);
    /* the loops' extents, where the source says them: " K:EXPR" each */
    const char *w = NULL, *mark = "/* tack-grid-work:";
    for (const char *s = strstr(p->source, mark); s; s = strstr(s + 1, mark)) w = s;
    if (!w) return TACK_OK;
    const char *end = strstr(w, "*/");
    for (w += strlen(mark); end && w < end;) {
        int k = -1, used = 0;
        if (sscanf(w, " %d:%n", &k, &used) != 1 || used == 0) break;
        w += used;
        size_t n = strcspn(w, " *");
        if (k >= 0 && k < cp->g.nph && !cp->work[k]) {
            if (!(cp->work[k] = tack_malloc(n + 1)))
                return tack_set_error(TACK_ERR_NOMEM, "out of memory building kernel '%s'", p->kernel_name);
            memcpy(cp->work[k], w, n);
            cp->work[k][n] = 0;
        }
        w += n;
    }
    return TACK_OK;
}

/* ---------------------------------------------------------------- grid
 * A parallel phase's grid: ceil(work / block) blocks, at least one, at most
 * what fills the device (every SM holding as many blocks as it can keep
 * resident: cuOccupancyMaxActiveBlocksPerMultiprocessor where the driver has
 * it, else its threads per SM / block); the whole device when the work is
 * not known on the host.  The phases are grid-stride loops, so any grid is
 * correct; this only spares launching blocks with nothing to do. */
static int64_t sat(__int128 v) { return v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : (int64_t)v; }

/* The extent of a loop from its postfix (layout_grid.c) and the call's
 * arguments; -1 when it cannot be told. */
static int64_t eval_work(const char *w, const tack_program *p, const tack_arg *args, int nargs) {
    int64_t total = 1, st[16];
    int sp = 0;
    for (const char *t = w;; t++) {
        char c = *t;
        if (c == 0 || c == ';') {
            if (sp != 1) return -1;
            total = st[0] <= 0 ? 0 : sat((__int128)total * st[0]);
            sp = 0;
            if (c == 0) return total;
            continue;
        }
        if (c == ',') continue;
        if (c == '#' || c == 's' || c == 'i' || c == 'u') {
            char *e = NULL;
            long long a = strtoll(t + 1, &e, 10), b = 0;
            if (e == t + 1 || sp == 16) return -1;
            if (c == 's' && *e == '.') b = strtoll(e + 1, &e, 10);
            t = e - 1;
            if (c != '#' && (a < 0 || a >= nargs || !!p->params[a].is_array != (c == 's'))) return -1;
            if (c == '#') st[sp++] = a;
            else if (c == 's') {
                if (b < 0 || b >= tack_array_ndim(args[a].array)) return -1;
                st[sp++] = tack_array_shape(args[a].array)[b];
            } else if (c == 'u') st[sp++] = args[a].scalar.u > INT64_MAX ? INT64_MAX : (int64_t)args[a].scalar.u;
            else st[sp++] = args[a].scalar.i;
            continue;
        }
        if (sp < 2) return -1;
        int64_t y = st[--sp], x = st[sp - 1], r;
        switch (c) {
        case '+': r = sat((__int128)x + y); break;
        case '-': r = sat((__int128)x - y); break;
        case '*': r = sat((__int128)x * y); break;
        case '/': if (y <= 0) return -1; r = x / y - (x % y != 0 && x < 0); break;
        case 'm': r = x < y ? x : y; break;
        case 'M': r = x > y ? x : y; break;
        default: return -1;
        }
        st[sp - 1] = r;
    }
}

static unsigned phase_grid(const cuda_prog *cp, int k, const tack_program *p, const tack_arg *args, int nargs) {
    int64_t work = cp->work[k] ? eval_work(cp->work[k], p, args, nargs) : -1;
    if (work < 0) return cp->fill[k];
    uint64_t blocks = ((uint64_t)work + cp->block - 1) / cp->block;
    if (blocks == 0) blocks = 1;
    return blocks < cp->fill[k] ? (unsigned)blocks : cp->fill[k];
}

/* Device memory and module are left alone when the device is lost. */
static void prog_free(const tack_cuda_api *api, tack_device *d, cuda_prog *cp) {
    if (!cp) return;
    if (!cuda_is_lost(d)) {
        if (cp->frame) cuda_note(d, api->cuMemFree(cp->frame));
        if (cp->mod && !cuda_is_lost(d)) cuda_note(d, api->cuModuleUnload(cp->mod));
    }
    for (int k = 0; cp->work && k < cp->g.nph; k++) tack_free(cp->work[k]);
    tack_free(cp->work);
    tack_free(cp->fill);
    gpu_prog_fini(&cp->g);
    tack_free(cp->fn);
    tack_free(cp);
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
        int per_sm = 0;
        if (!api->cuOccupancyMaxActiveBlocksPerMultiprocessor ||
            api->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, cp->fn[k], (int)cp->block, 0) != TACK_CUDA_SUCCESS ||
            per_sm <= 0)
            per_sm = c->sm_threads / (int)cp->block;
        cp->fill[k] = (unsigned)(d->threads > 0 ? d->threads : 1) * (unsigned)(per_sm > 0 ? per_sm : 1);
    }
    if (cp->g.frame_bytes) {
        CUresult r = api->cuMemAlloc(&cp->frame, cp->g.frame_bytes);
        if (r == TACK_CUDA_SUCCESS) r = api->cuMemsetD8Async(cp->frame, 0, cp->g.frame_bytes, c->stream);
        if (r != TACK_CUDA_SUCCESS) {
            st = cuda_fail(d, r, "allocating a kernel frame");
            goto fail;
        }
    }
    pthread_mutex_lock(&c->rec.lock);
    if (!c->err) {
        CUresult r = api->cuMemAlloc(&c->err, sizeof(gpu_err_record));
        if (r == TACK_CUDA_SUCCESS) r = api->cuMemsetD32Async(c->err, 0, sizeof(gpu_err_record) / 4, c->stream);
        if (r == TACK_CUDA_SUCCESS) r = api->cuStreamSynchronize(c->stream);
        if (r != TACK_CUDA_SUCCESS) {
            if (c->err && !cuda_sticky(r)) api->cuMemFree(c->err);
            c->err = 0;
            pthread_mutex_unlock(&c->rec.lock);
            st = cuda_fail(d, r, "allocating the kernel error record");
            goto fail;
        }
    }
    gpu_link(&c->rec, &cp->g);
    pthread_mutex_unlock(&c->rec.lock);
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
    pthread_mutex_lock(&c->rec.lock);
    /* a failure of this program still unread: keep its message for the next synchronization */
    if (pushed) {
        CUresult r = api->cuStreamSynchronize(c->stream);
        if (r == TACK_CUDA_SUCCESS) gpu_keep_pending(&c->rec, d, take_record);
        else cuda_note(d, r);
    }
    gpu_unlink(&c->rec, &cp->g);
    pthread_mutex_unlock(&c->rec.lock);
    prog_free(api, d, cp);
    if (pushed) cuda_pop();
    p->handle = NULL;
}

/* -------------------------------------------------------------- launch */
tack_status cuda_launch(tack_device *d, tack_program *p, const tack_arg *args, int nargs) {
    const tack_cuda_api *api = cuda_api_get();
    cuda_dev *c = d->state;
    cuda_prog *cp = p->handle;
    if (!cp) return tack_set_error(TACK_ERR_VALUE, "kernel '%s' is not built", p->kernel_name);
    tack_status st = cuda_lost_error(d);
    if (st != TACK_OK) return st;
    uint64_t stackslots[64];
    uint64_t *slots = stackslots;
    int nslots = gpu_arg_count(p);
    if (nslots > MAX_SLOTS)
        return tack_set_error(TACK_ERR_UNSUPPORTED, "kernel '%s' has too many arguments for one CUDA launch (%d slots of 8 bytes; at most %d)",
                              p->kernel_name, nslots, MAX_SLOTS);
    if (nslots > 64 && !(slots = tack_calloc((size_t)nslots, sizeof *slots)))
        return tack_set_error(TACK_ERR_NOMEM, "out of memory launching kernel '%s'", p->kernel_name);
    int shared = 0, n = 3;
    slots[0] = (uint64_t)c->err;
    slots[1] = (uint64_t)cp->frame;
    slots[2] = cp->g.id;
    for (int i = 0; i < nargs && st == TACK_OK; i++) {
        const tk_pinfo *pi = &p->params[i];
        if (!pi->is_array) {
            slots[n++] = gpu_scalar_bits(pi, &args[i]);
            continue;
        }
        tack_array *a = args[i].array; /* checked by tack_launch (driver.c) */
        shared |= (tack_array_flags(a) & TACK_ARRAY_SHARED) != 0;
        slots[n++] = (uint64_t)(uintptr_t)tack_array_data(a);
        const int64_t *shape = tack_array_shape(a);
        for (int k = 0; k < pi->ndim; k++) slots[n++] = (uint64_t)shape[k];
    }
    if (st == TACK_OK && (st = cuda_push(d)) == TACK_OK) {
        void *params[1] = {slots};
        pthread_mutex_lock(&cp->g.lock);
        for (int k = 0; k < cp->g.nph && st == TACK_OK; k++) {
            int par = cp->g.kinds[k] == 'p';
            unsigned grid = par ? phase_grid(cp, k, p, args, nargs) : 1;
            CUresult r = api->cuLaunchKernel(cp->fn[k], grid, 1, 1, par ? cp->block : 1, 1, 1, 0, c->stream,
                                             params, NULL);
            if (r != TACK_CUDA_SUCCESS) st = cuda_fail(d, r, "cuLaunchKernel");
        }
        pthread_mutex_unlock(&cp->g.lock);
        if (st == TACK_OK) cuda_note_launch(d, p->kernel_name);
        if (st == TACK_OK && shared) {
            /* shared with another library: finished before the call returns */
            CUresult r = api->cuStreamSynchronize(c->stream);
            st = r == TACK_CUDA_SUCCESS ? cuda_check_record(d) : cuda_fail(d, r, "cuStreamSynchronize");
        }
        cuda_pop();
    }
    if (slots != stackslots) tack_free(slots);
    return st;
}
