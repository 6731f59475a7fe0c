/*
 * opencl_launch.c -- building and running kernels on OpenCL devices.
 *
 * Build: the "opencl" dialect's source is OpenCL C 1.2.  Its last comment
 * says how the kernel is laid out:
 *
 *     / * tack-opencl: phases=psp frame=N fp64=0|1 * /
 *
 * one letter per phase in order (p: a parallel phase, b: a blocks loop,
 * s: a serial one run by one work-item), the bytes of the frame buffer
 * that the phases of one call share (0: none), and whether the kernel
 * needs double precision.  The phases are the kernels tk_phase0,
 * tk_phase1, ... of the program.  A kernel that needs fp64 is refused
 * before anything is compiled when the device lacks it, with an error that
 * names the device; otherwise the
 * source is built with clBuildProgram("-cl-std=CL1.2", with
 * -cl-fp32-correctly-rounded-divide-sqrt where the device offers it:
 * opencl.c; and -cl-denorms-are-zero for a flush_denormals kernel), and a
 * failed build is a compile error that carries the start of the driver's build log.
 *
 * A fast_math kernel is built with "-cl-std=CL1.2 -cl-fast-relaxed-math"
 * instead (and -cl-denorms-are-zero for flush_denormals): what fast_math
 * allows on the CPU (finite math, no signed zeros, reassociation,
 * reciprocals, contraction -- the dialect leaves out its FP_CONTRACT OFF
 * pragma for such a kernel) in OpenCL's words, which also lets the driver
 * use the hardware's approximate math functions, as CUDA's
 * --use_fast_math does.  Correctly rounded division and sqrt are not asked
 * for: they would undo the approximation the kernel asked for.  The option
 * flushes no subnormals (Intel's compiler sets the same floating-point mode
 * with and without it); flush_denormals does.
 *
 * Disk cache: after a build from source the program binary the driver
 * hands back (CL_PROGRAM_BINARIES) is stored in the kernel cache, under
 * kcache.c's rules (sealed, written to a temporary name, fsync'd, renamed;
 * an entry that fails its seal is removed and rebuilt), as `KEY.clbin`.
 * The key hashes what determines the binary: the source, the dialect, the
 * platform's name and version, the device's name, version and driver
 * version, the build options, Tack's version and this launcher's ABI.  An
 * entry starts with a line naming its key and the binary's length and ends
 * with a trailer; one that lacks either, or that the driver refuses
 * (clCreateProgramWithBinary or clBuildProgram fails), is rebuilt from
 * source and stored again.
 *
 * On a CPU device (CL_DEVICE_TYPE_CPU) the binary waits for a program's
 * second build from source: the first leaves only a marker, `KEY.clbuilt`
 * (sealed, naming its key; one that is not ours or names another key is
 * not believed), and a build that finds it fetches and stores the binary.
 * Asking a CPU driver for the binary is not free: PoCL then compiles a
 * generic version of every kernel, besides the build and the version it
 * specializes at the first launch, about 0.14 CPU-s a two-kernel program
 * against 0.2 for building and launching it, and it keeps its own cache of
 * builds, from which a rebuild from source takes about 0.02 CPU-s.  A
 * program built only once (most of a test run's, a script's) so never
 * pays for a binary nobody loads; one built again is cached as before.
 * Other devices store the binary at once: a GPU driver's binary is the
 * finished program.  The device type is the property asked because no
 * OpenCL query says whether a driver caches its own builds.
 *
 * Launch: the arguments, checked by tack_launch (dtype, rank, device,
 * writability), are set on every phase's kernel in one order:
 *
 *     0  __global tk_ctx *ctx   the device's error record (32 bytes)
 *     1  __global frame         the program's frame buffer, or NULL
 *     2  ulong prog             the program's id
 *     then per parameter: an array's cl_mem (its SVM address, set with
 *     clSetKernelArgSVMPointer, on a device in the SVM mode) followed by
 *     one long per dimension (its extent); a scalar as one ulong holding its bits (a
 *     float's as a double, an integer's or a bool's as a 64-bit integer).
 *
 * A parallel phase runs work-groups of L = min(256, the device's and the
 * kernel's work-group limits) work-items (a blocks loop's: exactly its B,
 * checked against the kernel's limit at build), as many groups as its loop
 * needs where the call's arguments give the loop's extent (the source's
 * `/ * tack-grid-work: ... * /` comment, read by gpu_launch.c, as CUDA's
 * and Level Zero's launchers read it): ceil(extent / L), for a blocks loop
 * one a block, at least one and at most compute units x 8 -- which is also
 * what a loop whose extent cannot be told gets.  The kernels loop with a
 * grid stride (a blocks loop's groups take blocks g, g + groups, ...), so
 * any count is correct; sizing spares launching groups with nothing to do
 * (100 iterations: one group, not units x 8).  A serial phase runs one
 * work-item.  The phases of one call are queued back to back
 * on the device's in-order queue under the program's lock (they share its
 * frame buffer and the kernels' argument slots), and the call returns once
 * they are queued -- except when an array argument is shared with another
 * library (TACK_ARRAY_SHARED), in which case it waits for the queue and
 * reports a failed check at once ("When a call returns", DESIGN 4), as the
 * CUDA launcher does.
 *
 * Errors: a failed check writes the device's error record (first failure
 * wins).  ocl_check_record, called at every synchronization point, reads
 * it, finds the program by its id and words the message from the program's
 * site table through tk_site_error, then clears it.  A program freed with a
 * failure still recorded leaves the message on the device for the next
 * synchronization.  All of this but reading and clearing the record is
 * gpu_common.c's, as is the parsing of the layout comment.
 *
 * TACK_LOG=info logs each compile and cache load with its time to stderr,
 * and a failed build's whole log.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/common/kcache.h"
#include "backends/opencl/opencl_backend.h"
#include "runtime/program.h"

#define OPENCL_LAUNCH_ABI 1
#define OCL_LOG_IN_ERROR 560 /* bytes of a build log quoted in the error (messages are 1 KiB) */

typedef struct ocl_prog {
    gpu_prog g; /* first: the device's program list holds it */
    cl_program prog;
    cl_kernel *k;
    gpu_grid grid; /* per phase: the loop's extent, the work-group size (local), at most units x 8 groups (fill) */
    cl_mem frame;
    int fp64;
} ocl_prog;

#define BIN_HEAD "tack-opencl-cache-key "

/* How many builds from source asked the driver for the program binary, and
 * how many left it for a later build (a CPU device's first): the counts
 * that test_opencl.c checks. */
_Atomic unsigned long ocl_binaries_fetched, ocl_binaries_deferred;

/* ------------------------------------------------------------ reporting */
/* Read the record (c->rec.lock held; the blocking read waits for the work
 * queued before it): gpu_common.h's gpu_take_fn. */
static int take_record(tack_device *d, gpu_err_record *rec, tack_status *st) {
    const tack_opencl_api *api = ocl_api_get();
    ocl_dev *c = d->state;
    *st = TACK_OK;
    if (!c->err) return 0;
    memset(rec, 0, sizeof *rec);
    cl_int r = api->clEnqueueReadBuffer(c->queue, c->err, TACK_CL_TRUE, 0, sizeof *rec, rec, 0, NULL, NULL);
    if (r != TACK_CL_SUCCESS) {
        *st = ocl_error(r, "reading the kernel error record", d);
        return 0;
    }
    if (!rec->failed) return 0;
    static const gpu_err_record zero;
    r = api->clEnqueueWriteBuffer(c->queue, c->err, TACK_CL_TRUE, 0, sizeof zero, &zero, 0, NULL, NULL);
    if (r != TACK_CL_SUCCESS) *st = ocl_error(r, "clearing the kernel error record", d);
    return 1;
}

tack_status ocl_check_record(tack_device *d) {
    return gpu_check_record(&((ocl_dev *)d->state)->rec, d, take_record);
}

/* ---------------------------------------------------------------- build */
static tack_status parse_layout(tack_program *p, ocl_prog *cp) {
    tack_status st = gpu_opencl_layout(p, &cp->g, "an OpenCL device", &cp->fp64);
    if (st != TACK_OK) return st;
    cp->grid.block = 1; /* each phase's own work-group size is its grid.local (make_kernels) */
    cp->grid.blocks = cp->g.kinds;
    if ((st = gpu_grid_work(p, &cp->g, &cp->grid)) != TACK_OK) return st;
    cp->k = tack_calloc((size_t)cp->g.nph + 1, sizeof(cl_kernel));
    if (!cp->k) return tack_set_error(TACK_ERR_NOMEM, "out of memory building kernel '%s'", p->kernel_name);
    return TACK_OK;
}

/* The error for a failed build from source, quoting the start of the log. */
static tack_status build_failed(tack_device *d, tack_program *p, cl_program prog, cl_int r) {
    const tack_opencl_api *api = ocl_api_get();
    ocl_dev *c = d->state;
    size_t n = 0;
    char *log = NULL;
    if (api->clGetProgramBuildInfo(prog, c->dev, TACK_CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == TACK_CL_SUCCESS && n > 0 &&
        (log = tack_malloc(n + 1))) {
        if (api->clGetProgramBuildInfo(prog, c->dev, TACK_CL_PROGRAM_BUILD_LOG, n, log, NULL) != TACK_CL_SUCCESS) n = 0;
        log[n] = 0;
    }
    size_t len = log ? strlen(log) : 0;
    while (len > 0 && (log[len - 1] == '\n' || log[len - 1] == ' ' || log[len - 1] == '\r')) log[--len] = 0;
    if (log && kc_log_info())
        fprintf(stderr, "tack: the OpenCL build log of kernel '%s' on %s:\n%s\n", p->kernel_name, d->name, log);
    char more[120] = "";
    if (len > OCL_LOG_IN_ERROR) {
        snprintf(more, sizeof more, "\n... (%zu bytes of log in all; TACK_LOG=info prints it whole)", len);
        log[OCL_LOG_IN_ERROR] = 0;
    }
    tack_status st = tack_set_error(TACK_ERR_COMPILE, "the OpenCL C build of kernel '%s' failed on %s (%s): %s (%d)%s%s%s",
                                    p->kernel_name, d->name, c->name, ocl_code_name(r), (int)r,
                                    len ? "; build log:\n" : "", len ? log : "", more);
    tack_free(log);
    return st;
}

/* The clBuildProgram options for p on the device: the device's (the fast
 * ones for a fast_math kernel), and the flush for a flush_denormals kernel
 * (f32 subnormals may then be flushed; OpenCL C lets a device flush f32 ones
 * anyway where it lacks CL_FP_DENORM). */
static void program_options(const ocl_dev *c, const tack_program *p, char *buf, size_t n) {
    snprintf(buf, n, "%s%s", p->fast_math ? OCL_BUILD_OPTIONS_FAST : c->build_options,
             p->flush_denormals ? " -cl-denorms-are-zero" : "");
}

/* Build from source; *out is the built program. */
static tack_status build_source(tack_device *d, tack_program *p, cl_program *out) {
    const tack_opencl_api *api = ocl_api_get();
    ocl_dev *c = d->state;
    cl_int r = TACK_CL_SUCCESS;
    const char *src = p->source;
    cl_program prog = api->clCreateProgramWithSource(c->ctx, 1, &src, NULL, &r);
    if (!prog || r != TACK_CL_SUCCESS) return ocl_error(r ? r : TACK_CL_OUT_OF_HOST_MEMORY, "clCreateProgramWithSource", d);
    char opts[256];
    program_options(c, p, opts, sizeof opts);
    r = api->clBuildProgram(prog, 1, &c->dev, opts, NULL, NULL);
    if (r != TACK_CL_SUCCESS) {
        tack_status st = build_failed(d, p, prog, r);
        api->clReleaseProgram(prog);
        return st;
    }
    *out = prog;
    return TACK_OK;
}

/* The built program's binary (tack_malloc'd), or NULL when the driver gives none. */
static unsigned char *program_binary(cl_program prog, size_t *len) {
    const tack_opencl_api *api = ocl_api_get();
    size_t n = 0;
    if (api->clGetProgramInfo(prog, TACK_CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) != TACK_CL_SUCCESS || n == 0)
        return NULL;
    unsigned char *bin = tack_malloc(n);
    unsigned char *ptrs[1] = {bin};
    if (bin && api->clGetProgramInfo(prog, TACK_CL_PROGRAM_BINARIES, sizeof ptrs, ptrs, NULL) != TACK_CL_SUCCESS) {
        tack_free(bin);
        bin = NULL;
    }
    *len = n;
    return bin;
}

/* Whether a program of this key was built from source before under this
 * cache: its marker, `KEY.clbuilt`, is an entry of ours whose seal holds
 * and that names the key (kc_read removes one that is foreign or damaged). */
#define SEEN_EXT "clbuilt"
#define SEEN_HEAD "tack-opencl-built "
static int built_before(const kc_dir *dir, const char *key) {
    char name[64], want[80];
    snprintf(name, sizeof name, "%s.%s", key, SEEN_EXT);
    snprintf(want, sizeof want, "%s%s\n", SEEN_HEAD, key);
    kc_entry e;
    const char *why = NULL;
    if (kc_read(dir, name, &e, &why) != 1) return 0;
    int ok = e.size == strlen(want) && memcmp(e.data, want, e.size) == 0;
    kc_entry_free(&e);
    return ok;
}

static tack_status mark_built(const kc_dir *dir, const char *key) {
    char name[64], text[80];
    snprintf(name, sizeof name, "%s.%s", key, SEEN_EXT);
    snprintf(text, sizeof text, "%s%s\n", SEEN_HEAD, key);
    const char *parts[1] = {text};
    return kc_store(dir, name, parts, 1);
}

/* The program for the device: from the cache, or built from source (then
 * stored, at once on a device that is not a CPU, from the second build on
 * one that is). */
static tack_status get_program_in(const kc_dir *dir, tack_device *d, tack_program *p, cl_program *out) {
    const tack_opencl_api *api = ocl_api_get();
    ocl_dev *c = d->state;
    char misc[1600], opts[256];
    program_options(c, p, opts, sizeof opts);
    snprintf(misc, sizeof misc, "platform %s; device %s; %s; options %s; tack%s; launch%d", c->platform_id, c->name,
             c->driver, opts, TACK_VERSION_STRING, OPENCL_LAUNCH_ABI);
    char key[40], name[64];
    gpu_cache_key(p, misc, key);
    snprintf(name, sizeof name, "%s.clbin", key);
    double t0 = kc_now_ms();
    const unsigned char *bin = NULL;
    size_t len = 0;
    char *buf = gpu_bin_entry_read(dir, name, BIN_HEAD, key, "a program binary", NULL, &bin, &len);
    if (buf) {
        cl_int r = TACK_CL_SUCCESS, bs = TACK_CL_SUCCESS;
        cl_program prog = api->clCreateProgramWithBinary(c->ctx, 1, &c->dev, &len, &bin, &bs, &r);
        if (prog && r == TACK_CL_SUCCESS && bs == TACK_CL_SUCCESS)
            r = api->clBuildProgram(prog, 1, &c->dev, opts, NULL, NULL);
        else if (r == TACK_CL_SUCCESS)
            r = bs != TACK_CL_SUCCESS ? bs : TACK_CL_OUT_OF_HOST_MEMORY;
        tack_free(buf);
        if (r == TACK_CL_SUCCESS) {
            rt_prof_build = "cache hit";
            if (kc_log_info())
                fprintf(stderr, "tack: loaded kernel '%s' for %s from the cache in %.2f ms (%s/%s)\n", p->kernel_name,
                        d->name, kc_now_ms() - t0, dir->path, name);
            *out = prog;
            return TACK_OK;
        }
        if (prog) api->clReleaseProgram(prog);
        if (kc_log_info())
            fprintf(stderr, "tack: cache entry %s/%s is refused by the OpenCL driver (%s); rebuilding it\n", dir->path,
                    name, ocl_code_name(r));
        t0 = kc_now_ms();
    }
    cl_program prog = NULL;
    tack_status st = build_source(d, p, &prog);
    if (st != TACK_OK) return st;
    if (c->lazy_binary && !built_before(dir, key)) {
        st = mark_built(dir, key);
        if (st != TACK_OK) {
            api->clReleaseProgram(prog);
            return st;
        }
        ocl_binaries_deferred++;
        rt_prof_build = "clBuildProgram";
        if (kc_log_info())
            fprintf(stderr, "tack: compiled kernel '%s' for %s (%s) with options '%s' in %.1f ms; its binary is cached "
                    "if it is built again (%s/%s.%s)\n", p->kernel_name, d->name, c->name, opts, kc_now_ms() - t0,
                    dir->path, key, SEEN_EXT);
        *out = prog;
        return TACK_OK;
    }
    unsigned char *built = program_binary(prog, &len);
    ocl_binaries_fetched++;
    if (built) {
        st = gpu_bin_entry_write(dir, name, BIN_HEAD, key, built, len);
        tack_free(built);
        if (st != TACK_OK) {
            api->clReleaseProgram(prog);
            return st;
        }
    } else if (kc_log_info()) {
        fprintf(stderr, "tack: the OpenCL driver gives no binary for kernel '%s'; it is not cached\n", p->kernel_name);
    }
    rt_prof_build = "clBuildProgram";
    if (kc_log_info())
        fprintf(stderr, "tack: compiled kernel '%s' for %s (%s) with options '%s' in %.1f ms (%s/%s)\n", p->kernel_name,
                d->name, c->name, opts, kc_now_ms() - t0, dir->path, name);
    *out = prog;
    return TACK_OK;
}

static tack_status get_program(tack_device *d, tack_program *p, cl_program *out) {
    kc_dir dir;
    tack_status st = kc_open(&dir);
    if (st != TACK_OK) return st;
    st = get_program_in(&dir, d, p, out);
    kc_close(&dir);
    return st;
}

static void prog_free(ocl_prog *cp) {
    const tack_opencl_api *api = ocl_api_get();
    if (!cp) return;
    if (cp->k)
        for (int i = 0; i < cp->g.nph; i++)
            if (cp->k[i]) api->clReleaseKernel(cp->k[i]);
    if (cp->frame) api->clReleaseMemObject(cp->frame);
    if (cp->prog) api->clReleaseProgram(cp->prog);
    gpu_grid_free(&cp->grid);
    gpu_prog_fini(&cp->g);
    tack_free(cp->k);
    tack_free(cp);
}

/* Kernel objects for the phases, each checked against the convention. */
static tack_status make_kernels(tack_device *d, tack_program *p, ocl_prog *cp) {
    const tack_opencl_api *api = ocl_api_get();
    ocl_dev *c = d->state;
    cl_uint want = (cl_uint)gpu_arg_count(p);
    for (int i = 0; i < p->nparams; i++) want += p->params[i].is_array && p->params[i].strided; /* the offsets */
    for (int k = 0; k < cp->g.nph; k++) {
        char fname[32];
        cl_int r = TACK_CL_SUCCESS;
        snprintf(fname, sizeof fname, "tk_phase%d", k);
        cp->k[k] = api->clCreateKernel(cp->prog, fname, &r);
        if (!cp->k[k] || r != TACK_CL_SUCCESS) {
            char what[120];
            snprintf(what, sizeof what, "clCreateKernel(\"%s\") for kernel '%s'", fname, p->kernel_name);
            return ocl_error(r ? r : TACK_CL_OUT_OF_HOST_MEMORY, what, d);
        }
        cl_uint nargs = 0;
        if (api->clGetKernelInfo(cp->k[k], TACK_CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL) == TACK_CL_SUCCESS &&
            nargs != want)
            return tack_set_error(TACK_ERR_VALUE,
                                  "kernel '%s': %s takes %u arguments, but its signature passes %u (ctx, frame, prog, "
                                  "then per array its buffer and extents, per scalar one ulong)",
                                  p->kernel_name, fname, (unsigned)nargs, (unsigned)want);
        size_t kmax = 0;
        size_t l = c->max_group < 256 ? c->max_group : 256;
        if (api->clGetKernelWorkGroupInfo(cp->k[k], c->dev, TACK_CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax, NULL) ==
                TACK_CL_SUCCESS &&
            kmax > 0 && kmax < l)
            l = kmax;
        cp->grid.local[k] = (unsigned)(l ? l : 1);
        cp->grid.fill[k] = c->units * 8; /* the most groups a phase launches */
        if (cp->g.kinds[k] == 'b') { /* a blocks loop: exactly its block size, or an error naming both */
            size_t bs = cp->g.bsize[k];
            size_t most = kmax > 0 && kmax < c->max_group ? kmax : c->max_group;
            if (most && bs > most)
                return tack_set_error(TACK_ERR_VALUE,
                                      "kernel '%s': its blocks loop has blocks of %zu threads, and device '%s' runs "
                                      "at most %zu in a work-group for this kernel", p->kernel_name, bs, d->name, most);
            cp->grid.local[k] = (unsigned)bs;
        }
    }
    return TACK_OK;
}

tack_status ocl_build(tack_device *d, tack_program *p) {
    const tack_opencl_api *api = ocl_api_get();
    ocl_dev *c = d->state;
    tack_status st;
    cl_int r = TACK_CL_SUCCESS;
    ocl_prog *cp = tack_calloc(1, sizeof *cp);
    if (!cp) return tack_set_error(TACK_ERR_NOMEM, "out of memory building kernel '%s'", p->kernel_name);
    gpu_prog_init(&cp->g, p);
    if ((st = parse_layout(p, cp)) != TACK_OK) goto fail;
    if (cp->fp64 && !c->fp64) {
        st = tack_set_error(TACK_ERR_COMPILE,
                            "kernel '%s' uses float64, which device '%s' (%s) does not support (no cl_khr_fp64)",
                            p->kernel_name, d->name, c->name);
        goto fail;
    }
    if ((st = get_program(d, p, &cp->prog)) != TACK_OK) goto fail;
    if ((st = make_kernels(d, p, cp)) != TACK_OK) goto fail;
    if (cp->g.frame_bytes) {
        unsigned char zero = 0;
        cp->frame = api->clCreateBuffer(c->ctx, TACK_CL_MEM_READ_WRITE, cp->g.frame_bytes, NULL, &r);
        if (cp->frame && r == TACK_CL_SUCCESS)
            r = api->clEnqueueFillBuffer(c->queue, cp->frame, &zero, 1, 0, cp->g.frame_bytes, 0, NULL, NULL);
        if (!cp->frame || r != TACK_CL_SUCCESS) {
            st = ocl_error(r ? r : TACK_CL_MEM_OBJECT_ALLOCATION_FAILURE, "allocating a kernel frame", d);
            goto fail;
        }
    }
    tk_mutex_lock(&c->rec.lock);
    if (!c->err) {
        static const gpu_err_record zero;
        c->err = api->clCreateBuffer(c->ctx, TACK_CL_MEM_READ_WRITE, sizeof zero, NULL, &r);
        if (c->err && r == TACK_CL_SUCCESS)
            r = api->clEnqueueWriteBuffer(c->queue, c->err, TACK_CL_TRUE, 0, sizeof zero, &zero, 0, NULL, NULL);
        if (!c->err || r != TACK_CL_SUCCESS) {
            if (c->err) api->clReleaseMemObject(c->err);
            c->err = NULL;
            tk_mutex_unlock(&c->rec.lock);
            st = ocl_error(r ? r : TACK_CL_MEM_OBJECT_ALLOCATION_FAILURE, "allocating the kernel error record", d);
            goto fail;
        }
    }
    gpu_link(&c->rec, &cp->g);
    tk_mutex_unlock(&c->rec.lock);
    p->handle = cp;
    return TACK_OK;
fail:
    prog_free(cp);
    return st;
}

void ocl_unload(tack_device *d, tack_program *p) {
    const tack_opencl_api *api = ocl_api_get();
    ocl_dev *c = d->state;
    ocl_prog *cp = p->handle;
    if (!cp || !api) return;
    /* launches of it on other streams (runtime/stream.c) finish before its kernels and frame go */
    if (rt_streams_join(d) != TACK_OK) tack_clear_error(); /* said at the next synchronization */
    tk_mutex_lock(&c->rec.lock);
    /* a failure of this program still unread: keep its message for the next synchronization */
    if (api->clFinish(c->queue) == TACK_CL_SUCCESS) gpu_keep_pending(&c->rec, d, take_record);
    gpu_unlink(&c->rec, &cp->g);
    tk_mutex_unlock(&c->rec.lock);
    prog_free(cp);
    p->handle = NULL;
}

/* ---------------------------------------------------------------- launch */
/* Set the arguments of phase k (cp->lock held). */
static tack_status set_args(tack_device *d, ocl_prog *cp, int k, const tack_program *p, const tack_arg *args, int nargs) {
    const tack_opencl_api *api = ocl_api_get();
    ocl_dev *c = d->state;
    cl_kernel kern = cp->k[k];
    cl_mem null_mem = NULL;
    cl_uint idx = 0;
    cl_int r;
#define ARG(size, ptr)                                                        \
    do {                                                                      \
        if ((r = api->clSetKernelArg(kern, idx, (size), (ptr))) != TACK_CL_SUCCESS) goto bad; \
        idx++;                                                                \
    } while (0)
    ARG(sizeof(cl_mem), &c->err);
    ARG(sizeof(cl_mem), cp->frame ? &cp->frame : &null_mem);
    cl_ulong id = cp->g.id;
    ARG(sizeof id, &id);
    for (int i = 0; i < nargs; i++) {
        const tk_pinfo *pi = &p->params[i];
        if (!pi->is_array) {
            for (int s = 0; s < gpu_scalar_slots(pi); s++) {
                uint64_t bits = gpu_scalar_bits(pi, &args[i], s);
                ARG(sizeof bits, &bits);
            }
            continue;
        }
        const tack_array *a = args[i].array; /* checked by tack_launch (program.c) */
        if (c->svm && tack_array_data(a)) {
            if ((r = api->clSetKernelArgSVMPointer(kern, idx, tack_array_data(a))) != TACK_CL_SUCCESS) goto bad;
            idx++;
        } else { /* a cl_mem, or an empty wrapped array's NULL */
            cl_mem m = (cl_mem)tack_array_data(a);
            ARG(sizeof m, &m);
        }
        const int64_t *shape = tack_array_shape(a);
        for (int j = 0; j < pi->ndim; j++) {
            int64_t extent = shape[j];
            ARG(sizeof extent, &extent);
        }
        if (pi->strided) { /* element strides, then element (0, ..., 0)'s offset into the buffer (dialect_opencl.c) */
            int64_t t[TACK_MAX_NDIM + 1];
            gpu_strides(a, pi->ndim, t);
            t[pi->ndim] = a->offset;
            for (int j = 0; j <= pi->ndim; j++) ARG(sizeof t[j], &t[j]);
        }
    }
#undef ARG
    return TACK_OK;
bad:;
    char what[160];
    snprintf(what, sizeof what, "clSetKernelArg (argument %u of tk_phase%d of kernel '%s')", (unsigned)idx, k,
             p->kernel_name);
    return ocl_error(r, what, d);
}

tack_status ocl_launch(tack_device *d, tack_program *p, const tack_arg *args, int nargs) {
    const tack_opencl_api *api = ocl_api_get();
    ocl_prog *cp = p->handle;
    if (!cp) return tack_set_error(TACK_ERR_VALUE, "kernel '%s' is not built", p->kernel_name);
    int shared = gpu_any_shared(p, args, nargs);
    tack_status st = TACK_OK;
    cl_command_queue q = ocl_queue(d); /* the thread's current stream on d, else the device's own queue */
    tk_mutex_lock(&cp->g.lock);
    /* Launches of one program share its frame buffer: one on another stream than the last waits
     * for it on the device (runtime/stream.c), as gpu_launch.c orders CUDA's and HIP's.  Graphs
     * on OpenCL replay the calls themselves (runtime/graph.c): nothing is captured here. */
    tack_stream *cur = rt_stream_now(d);
    if (cp->g.frame_bytes && cur != cp->g.last && (st = rt_stream_order(d, cur, cp->g.last)) == TACK_OK) {
        tack_stream_retain(cur);
        tack_stream_release(cp->g.last);
        cp->g.last = cur;
    }
    /* while a profile records: the phases' events, for the launch's device time (opencl_stream.c) */
    int timed = rt_prof_on() && api->clGetEventProfilingInfo && api->clWaitForEvents && api->clReleaseEvent;
    cl_event first = NULL, last = NULL;
    for (int k = 0; k < cp->g.nph && st == TACK_OK; k++) {
        if ((st = set_args(d, cp, k, p, args, nargs)) != TACK_OK) break;
        /* a parallel phase: a group per `local` iterations of its loop (a blocks loop: per block)
         * where the arguments give its extent, at most units x 8 (gpu_phase_grid) */
        int par = cp->g.kinds[k] == 'p' || cp->g.kinds[k] == 'b';
        size_t local = par ? cp->grid.local[k] : 1;
        size_t global = par ? local * gpu_phase_grid(&cp->grid, k, p, args, nargs) : 1;
        cl_event ev = NULL;
        cl_int r = api->clEnqueueNDRangeKernel(q, cp->k[k], 1, NULL, &global, &local, 0, NULL, timed ? &ev : NULL);
        if (r != TACK_CL_SUCCESS) st = ocl_error(r, "clEnqueueNDRangeKernel", d);
        if (!ev) continue;
        if (!first) first = ev;
        else {
            if (last) api->clReleaseEvent(last);
            last = ev;
        }
    }
    if (first && st == TACK_OK) rt_prof_cur_timer = ocl_timer_of(d, first, last ? last : first);
    else {
        if (first) api->clReleaseEvent(first);
        if (last) api->clReleaseEvent(last);
    }
    tk_mutex_unlock(&cp->g.lock);
    if (st == TACK_OK && shared) {
        /* shared with another library: finished before the call returns */
        cl_int r = api->clFinish(q);
        st = r == TACK_CL_SUCCESS ? ocl_check_record(d) : ocl_error(r, "clFinish", d);
    }
    return st;
}
