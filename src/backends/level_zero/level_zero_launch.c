/*
 * level_zero_launch.c -- building and running kernels on Level Zero devices.
 *
 * Build: a Level Zero kernel comes from the same source as an OpenCL one
 * (the "opencl" dialect: OpenCL C 1.2 ending in the layout comment
 *
 *     / * tack-opencl: phases=psp frame=N fp64=0|1 * /
 *
 * -- one letter per phase, p parallel, s serial, b a blocks loop; the bytes of the frame
 * buffer the phases of one call share; whether it needs double precision),
 * with the phases as kernels tk_phase0, tk_phase1, ...  Level Zero takes
 * SPIR-V, not OpenCL C, so the source goes through libocloc, Intel's
 * OpenCL C compiler, loaded with dlopen on first build and called in
 * memory (oclocInvoke: "compile -file k.cl -spv_only -device D -options
 * -cl-std=CL1.2", D from TACK_OCLOC_DEVICE, else "pvc"; SPIR-V does not
 * depend on the device much, the option only picks the extensions ocloc
 * assumes).  The output whose name ends in ".spv" is the module; a failed
 * compile is a compile error quoting the start of ocloc's log.  A kernel
 * that needs fp64 is refused before anything is compiled when the device
 * lacks it.  zeModuleCreate then turns the SPIR-V into device code; its
 * build log becomes a readable compile error when it fails; zeKernelCreate
 * makes one kernel per phase.
 *
 * Correctly rounded f32 division and sqrt, as on OpenCL (opencl.c's
 * build_options; tack.random's f32 normals count on it): where the device's
 * fp32flags has ROUNDED_DIVIDE_SQRT (Intel's driver sets it where the GPU has
 * fp64 arithmetic), the module is built with the flag
 * "-ze-fp32-correctly-rounded-divide-sqrt".  That flag is what counts: the
 * SPIR-V carries no trace of the choice (OpFDiv and OpenCL.std sqrt are the
 * same bytes with and without -cl-fp32-correctly-rounded-divide-sqrt given
 * to ocloc), so it is the device compiler, IGC, that replaces f32 division
 * and sqrt with correctly rounded sequences when its build options ask.
 * ocloc is given -cl-fp32-correctly-rounded-divide-sqrt too on such
 * devices, so the front end never marks a division as allowed 2.5 ulps,
 * whatever a later translator might carry over of that.  A device without
 * the flag gets neither, and its f32 division may be off by an ulp.
 *
 * A fast_math kernel asks for neither.  It means what it means on the CPU
 * (finite math, no signed zeros, reassociation, reciprocals, contraction:
 * cpu_jit.c's FAST_MATH_FLAGS) and, for the math functions, on CUDA
 * (--use_fast_math: the hardware's approximate ones), so ocloc is given
 * -cl-fast-relaxed-math, which is those permissions in OpenCL's words (the
 * dialect leaves out its FP_CONTRACT OFF pragma for such a kernel), and so
 * is the module, as its build flag; subnormals are flushed only for
 * flush_denormals, as everywhere but CUDA.  Both are needed: the SPIR-V
 * ocloc makes with the option carries FPFastMathMode decorations and no
 * ContractionOff, so IGC may contract it, but built without the flag it
 * keeps the exact sin and exp; with it, IGC uses the extended math unit's
 * sin, exp, sqrt and inverse.  Level Zero has no -ze- spelling of the
 * flag; the driver hands the module's flags to IGC, which reads the OpenCL
 * option (docs/backends.md has the instruction counts, from ocloc).  The options table below
 * is indexed by that choice (plain, correctly rounded, fast) and by
 * flush_denormals.
 *
 * Disk cache: the SPIR-V is stored in the kernel cache under kcache.c's
 * rules (sealed, written to a temporary name, fsync'd, renamed; an entry
 * that fails its seal is removed and rebuilt) as `KEY.spv`.  The key hashes
 * the source, the dialect, libocloc's version, the ocloc options, the
 * module's build flags, Tack's version and this launcher's ABI.  An entry starts with a line naming its
 * key and length and ends with a trailer; one that lacks either, is not
 * SPIR-V, or that the driver refuses, is rebuilt from source and stored
 * again.  SPIR-V, not device code, is cached: the driver has its own cache
 * of what it makes from it.
 *
 * Launch: the arguments, checked by tack_launch (dtype, rank, device,
 * writability), are set on every phase's kernel in the order the OpenCL
 * backend uses:
 *
 *     0  __global tk_ctx *ctx   the device's error record (32 bytes)
 *     1  __global frame         the program's frame buffer, or NULL
 *     2  ulong prog             the program's id
 *     then per parameter: an array's device address followed by one long
 *     per dimension (its extent); a scalar as one ulong holding its bits
 *     (a float's as a double, an integer's or a bool's as a 64-bit integer).
 *
 * A parallel phase runs groups of L = min(256, the device's limit, what
 * zeKernelSuggestGroupSize allows) work-items, ceil(extent / L) groups
 * where the loop's extent is known from the arguments (the source's
 * tack-grid-work comment, read by gpu_launch.c), at least one and at most
 * compute units x 8, which a loop of unknown extent gets (the kernels loop
 * with a grid stride, so any count is correct); a serial phase runs one
 * group of one.  A blocks loop (tack.blocks(n, B), phase letter 'b') runs
 * groups of exactly B work-items, one a block of the loop where its extent
 * is known, at most compute units x 8 (each group takes blocks g,
 * g + groups, ...);
 * a B over the device's maxTotalGroupSize or maxGroupSizeX, over what the
 * kernel's properties allow (maxNumSubgroups x maxSubgroupSize), or shared
 * arrays over maxSharedLocalMemory, is an error at build naming the kernel,
 * B and the limit (blocks_group), never a smaller group.  The phases of one call are appended to the
 * current stream's command list (the device's own when none is named; a
 * graph's while a capture records: level_zero_stream.c) under the
 * program's lock, each followed by a barrier, and the call returns once
 * they are appended -- except when an array argument is shared with
 * another library (TACK_ARRAY_SHARED): then it waits and reports a failed
 * check at once, as on CUDA and OpenCL (a captured launch does not: its
 * replay waits).  A program with a frame launched on another stream than
 * its last is ordered after that one first, as gpu_launch.c orders CUDA's;
 * while a profile records, the first and last phases signal kernel-
 * timestamp events that give the launch's device time.
 *
 * Errors: a failed check writes the device's error record (first failure
 * wins).  lz_check_record, called at every synchronization point after the
 * list has drained, reads it, finds the program by its id, words the
 * message from the program's site table through tk_site_error, then clears
 * it.  A program freed with a failure still recorded leaves the message on
 * the device for the next synchronization.  All of this but reading and
 * clearing the record is gpu_common.c's, as is the parsing of the layout
 * comment.
 *
 * TACK_LOG=info logs each compile and cache load with its time to stderr,
 * and a failed build's whole log.
 */
#include "platform/platform.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/common/kcache.h"
#include "backends/level_zero/level_zero_backend.h"
#include "runtime/program.h"
#include "runtime/config.h"

#define LEVEL_ZERO_LAUNCH_ABI 1
#define LZ_CL_OPTIONS "-cl-std=CL1.2"
#define LZ_CL_OPTIONS_CR "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt"
#define LZ_CL_OPTIONS_FAST "-cl-std=CL1.2 -cl-fast-relaxed-math"
#define LZ_BUILD_FLAGS_CR "-ze-fp32-correctly-rounded-divide-sqrt"
#define LZ_BUILD_FLAGS_FAST "-cl-fast-relaxed-math"
#define LZ_OCLOC_DEVICE "pvc"
#define LZ_LOG_IN_ERROR 560
#define LZ_OCLOC_INSTALL "install intel-opencl-icd, which provides libocloc.so"

typedef struct lz_prog {
    gpu_prog g; /* first: the device's program list holds it */
    ze_module_handle_t module;
    ze_kernel_handle_t *k;
    void *frame;
    int fp64;
    gpu_grid grid; /* the loops' extents, the 'p' phases' group sizes (local); at most compute units x 8 (fill) */
} lz_prog;

#define SPV_HEAD "tack-level-zero-cache-key "

/* ---------------------------------------------------------------- ocloc */
static tack_ocloc_api ocloc;
static tk_mutex_t ocloc_lock = TK_MUTEX_INIT; /* ocloc is not documented as thread safe */
static int ocloc_ok;
static char ocloc_why[256];
static tk_once_t ocloc_once = TK_ONCE_INIT;

static void ocloc_load(void) {
    ocloc.lib = tk_dl_open("libocloc.so", 0);
    if (!ocloc.lib) ocloc.lib = tk_dl_open("libocloc.so.1", 0);
    if (!ocloc.lib) {
        snprintf(ocloc_why, sizeof ocloc_why, "libocloc.so not found (%s)", LZ_OCLOC_INSTALL);
        return;
    }
    *(void **)&ocloc.oclocInvoke = tk_dl_sym(ocloc.lib, "oclocInvoke");
    *(void **)&ocloc.oclocFreeOutput = tk_dl_sym(ocloc.lib, "oclocFreeOutput");
    *(void **)&ocloc.oclocVersion = tk_dl_sym(ocloc.lib, "oclocVersion");
    if (!ocloc.oclocInvoke || !ocloc.oclocFreeOutput) {
        snprintf(ocloc_why, sizeof ocloc_why, "libocloc.so lacks oclocInvoke or oclocFreeOutput (%s)",
                 LZ_OCLOC_INSTALL);
        return;
    }
    ocloc_ok = 1;
}

void *rt_toolchain_ocloc(const char **text, int *version) {
    tk_once(&ocloc_once, ocloc_load);
    *version = ocloc_ok && ocloc.oclocVersion ? ocloc.oclocVersion() : 0;
    *text = ocloc_ok ? "libocloc.so" : ocloc_why;
    return ocloc_ok ? ocloc.lib : NULL;
}

static const char *ocloc_device(char *buf, size_t cap) {
    const char *e = tk_config_str(TK_CFG_OCLOC_DEVICE, buf, cap);
    return *e ? e : LZ_OCLOC_DEVICE;
}

/* Which options p gets on device d (see above): 0 plain, 1 correctly
 * rounded f32 division and sqrt (the device offers them), 2 fast_math. */
static int math_mode(const tack_device *d, const tack_program *p) {
    return p->fast_math ? 2 : ((const lz_dev *)d->state)->fp32_cr != 0;
}

/* ocloc's options for p on device d, with -cl-denorms-are-zero for a
 * flush_denormals kernel, and the module's build flags. */
static const char *cl_options(const tack_device *d, const tack_program *p) {
    static const char *opts[3][2] = {{LZ_CL_OPTIONS, LZ_CL_OPTIONS " -cl-denorms-are-zero"},
                                     {LZ_CL_OPTIONS_CR, LZ_CL_OPTIONS_CR " -cl-denorms-are-zero"},
                                     {LZ_CL_OPTIONS_FAST, LZ_CL_OPTIONS_FAST " -cl-denorms-are-zero"}};
    return opts[math_mode(d, p)][p->flush_denormals != 0];
}

static const char *build_flags(const tack_device *d, const tack_program *p) {
    static const char *flags[3] = {"", LZ_BUILD_FLAGS_CR, LZ_BUILD_FLAGS_FAST};
    return flags[math_mode(d, p)];
}

/* The error quoting a log (trimmed to fit a message). */
static tack_status log_error(tack_program *p, const tack_device *d, const char *what, char *log) {
    size_t len = log ? strlen(log) : 0;
    while (len > 0 && (log[len - 1] == '\n' || log[len - 1] == ' ' || log[len - 1] == '\r')) log[--len] = 0;
    if (len && kc_log_info()) fprintf(stderr, "tack: the %s log of kernel '%s' on %s:\n%s\n", what, p->kernel_name, d->name, log);
    char more[120] = "";
    if (len > LZ_LOG_IN_ERROR) {
        snprintf(more, sizeof more, "\n... (%zu bytes of log in all; TACK_LOG=info prints it whole)", len);
        log[LZ_LOG_IN_ERROR] = 0;
    }
    return tack_set_error(TACK_ERR_COMPILE, "the %s of kernel '%s' failed on %s (%s)%s%s%s", what, p->kernel_name,
                          d->name, ((lz_dev *)d->state)->name, len ? "; log:\n" : "", len ? log : "", more);
}

/* OpenCL C to SPIR-V (*spv tack_malloc'd). */
static tack_status compile_spirv(tack_device *d, tack_program *p, unsigned char **spv, size_t *len) {
    tk_once(&ocloc_once, ocloc_load);
    if (!ocloc_ok)
        return tack_set_error(TACK_ERR_COMPILE, "kernel '%s' cannot be compiled for %s: %s", p->kernel_name, d->name,
                              ocloc_why);
    char dev[TK_CONFIG_STR_MAX];
    const char *argv[] = {"ocloc",  "compile", "-file",   "k.cl", "-spv_only", "-device", ocloc_device(dev, sizeof dev),
                          "-options", cl_options(d, p)};
    const uint8_t *src[1] = {(const uint8_t *)p->source};
    uint64_t src_len[1] = {strlen(p->source) + 1};
    const char *names[1] = {"k.cl"};
    uint32_t nout = 0;
    uint8_t **out = NULL;
    uint64_t *out_len = NULL;
    char **out_names = NULL;
    tk_mutex_lock(&ocloc_lock);
    int rc = ocloc.oclocInvoke((unsigned)(sizeof argv / sizeof argv[0]), argv, 1, src, src_len, names, 0, NULL, NULL,
                               NULL, &nout, &out, &out_len, &out_names);
    tk_mutex_unlock(&ocloc_lock);
    const uint8_t *found = NULL, *log = NULL;
    size_t found_len = 0, log_len = 0;
    for (uint32_t i = 0; i < nout; i++) {
        const char *nm = out_names && out_names[i] ? out_names[i] : "";
        size_t nl = strlen(nm);
        if (nl > 4 && strcmp(nm + nl - 4, ".spv") == 0 && out[i] && out_len[i] >= 4) {
            found = out[i];
            found_len = (size_t)out_len[i];
        } else if (strcmp(nm, "stdout.log") == 0 && out[i]) {
            log = out[i];
            log_len = (size_t)out_len[i];
        }
    }
    tack_status st = TACK_OK;
    if (rc != 0 || !found) {
        char *text = tack_malloc(log_len + 1);
        if (text) {
            if (log_len) memcpy(text, log, log_len);
            text[log_len] = 0;
        }
        char what[120];
        snprintf(what, sizeof what, "OpenCL C compile by libocloc (-device %s, returned %d)", argv[6], rc);
        st = log_error(p, d, what, text);
        tack_free(text);
    } else if (!(*spv = tack_malloc(found_len))) {
        st = tack_set_error(TACK_ERR_NOMEM, "out of memory compiling kernel '%s'", p->kernel_name);
    } else {
        memcpy(*spv, found, found_len);
        *len = found_len;
    }
    if (nout || out) ocloc.oclocFreeOutput(&nout, &out, &out_len, &out_names);
    return st;
}

/* ---------------------------------------------------------------- cache */
static int is_spirv(const unsigned char *b, size_t n) {
    uint32_t w;
    if (n < 20 || n % 4) return 0;
    memcpy(&w, b, 4);
    return w == TACK_SPIRV_MAGIC;
}

/* zeModuleCreate from SPIR-V.  quiet: a module the driver refuses is a bare
 * TACK_ERR_COMPILE (a cache entry to rebuild), without reading the log. */
static tack_status make_module(tack_device *d, tack_program *p, const unsigned char *spv, size_t len,
                               ze_module_handle_t *out, int quiet) {
    const tack_ze_api *api = lz_api_get();
    lz_dev *c = d->state;
    ze_module_desc_t md;
    memset(&md, 0, sizeof md);
    md.stype = TACK_ZE_STRUCTURE_TYPE_MODULE_DESC;
    md.format = TACK_ZE_MODULE_FORMAT_IL_SPIRV;
    md.inputSize = len;
    md.pInputModule = spv;
    md.pBuildFlags = build_flags(d, p);
    ze_module_build_log_handle_t blog = NULL;
    ze_module_handle_t m = NULL;
    ze_result_t r = api->zeModuleCreate(c->ctx, c->dev, &md, &m, &blog);
    tack_status st = TACK_OK;
    if (r != TACK_ZE_RESULT_SUCCESS) {
        if (m) api->zeModuleDestroy(m);
        m = NULL;
        if (r == TACK_ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY || r == TACK_ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY) {
            st = lz_error(r, "zeModuleCreate", d);
        } else if (quiet) {
            st = TACK_ERR_COMPILE;
        } else {
            size_t n = 0;
            char *text = NULL;
            if (blog && api->zeModuleBuildLogGetString(blog, &n, NULL) == TACK_ZE_RESULT_SUCCESS && n &&
                (text = tack_malloc(n + 1))) {
                if (api->zeModuleBuildLogGetString(blog, &n, text) != TACK_ZE_RESULT_SUCCESS) n = 0;
                text[n] = 0;
            }
            char what[120];
            snprintf(what, sizeof what, "module build from SPIR-V (zeModuleCreate: %s)", lz_code_name(r));
            st = log_error(p, d, what, text);
            tack_free(text);
        }
    }
    if (blog) api->zeModuleBuildLogDestroy(blog);
    *out = m;
    return st;
}

/* The module: from cached SPIR-V, or compiled (then stored). */
static tack_status get_module_in(const kc_dir *dir, tack_device *d, tack_program *p, ze_module_handle_t *out) {
    char misc[400], dev[TK_CONFIG_STR_MAX];
    tk_once(&ocloc_once, ocloc_load);
    int ver = ocloc_ok && ocloc.oclocVersion ? ocloc.oclocVersion() : 0;
    snprintf(misc, sizeof misc,
             "libocloc %d; ocloc compile -spv_only -device %s -options %s; module flags %s; tack%s; launch%d", ver,
             ocloc_device(dev, sizeof dev), cl_options(d, p), build_flags(d, p), TACK_VERSION_STRING,
             LEVEL_ZERO_LAUNCH_ABI);
    char key[40], name[64];
    gpu_cache_key(p, misc, key);
    snprintf(name, sizeof name, "%s.spv", key);
    double t0 = kc_now_ms();
    const unsigned char *bin = NULL;
    size_t len = 0;
    char *buf = gpu_bin_entry_read(dir, name, SPV_HEAD, key, "SPIR-V", is_spirv, &bin, &len);
    if (buf) {
        tack_status st = make_module(d, p, bin, len, out, 1);
        tack_free(buf);
        if (st == TACK_OK) {
            rt_prof_build = "cache hit";
            if (kc_log_info())
                fprintf(stderr, "tack: loaded kernel '%s' for %s from the cache in %.2f ms (%s/%s)\n", p->kernel_name,
                        d->name, kc_now_ms() - t0, dir->path, name);
            return TACK_OK;
        }
        if (st != TACK_ERR_COMPILE) return st;
        if (kc_log_info())
            fprintf(stderr, "tack: cache entry %s/%s is refused by the Level Zero driver; rebuilding it\n", dir->path,
                    name);
        t0 = kc_now_ms();
    }
    unsigned char *spv = NULL;
    tack_status st = compile_spirv(d, p, &spv, &len);
    if (st != TACK_OK) return st;
    if ((st = make_module(d, p, spv, len, out, 0)) == TACK_OK)
        st = gpu_bin_entry_write(dir, name, SPV_HEAD, key, spv, len);
    tack_free(spv);
    if (st != TACK_OK) {
        if (*out) lz_api_get()->zeModuleDestroy(*out);
        *out = NULL;
        return st;
    }
    rt_prof_build = "ocloc";
    if (kc_log_info())
        fprintf(stderr, "tack: compiled kernel '%s' for %s (%s) with options '%s' and module flags '%s' in %.1f ms "
                "(%s/%s)\n", p->kernel_name, d->name, ((lz_dev *)d->state)->name, cl_options(d, p), build_flags(d, p),
                kc_now_ms() - t0, dir->path, name);
    return TACK_OK;
}

static tack_status get_module(tack_device *d, tack_program *p, ze_module_handle_t *out) {
    kc_dir dir;
    tack_status st = kc_open(&dir);
    if (st != TACK_OK) return st;
    st = get_module_in(&dir, d, p, out);
    kc_close(&dir);
    return st;
}

/* ------------------------------------------------------------ reporting */
/* Read the record (c->rec.lock held; the list has drained): gpu_common.h's
 * gpu_take_fn. */
static int take_record(tack_device *d, gpu_err_record *rec, tack_status *st) {
    lz_dev *c = d->state;
    *st = TACK_OK;
    if (!c->err) return 0;
    memset(rec, 0, sizeof *rec);
    if ((*st = lz_copy_wait(d, &c->own, rec, c->err, sizeof *rec)) != TACK_OK) return 0;
    if (!rec->failed) return 0;
    static const gpu_err_record zero;
    *st = lz_copy_wait(d, &c->own, c->err, &zero, sizeof zero);
    return 1;
}

tack_status lz_check_record(tack_device *d) {
    return gpu_check_record(&((lz_dev *)d->state)->rec, d, take_record);
}

/* ---------------------------------------------------------------- build */
static tack_status parse_layout(tack_program *p, lz_prog *cp) {
    tack_status st = gpu_opencl_layout(p, &cp->g, "a Level Zero device", &cp->fp64);
    if (st != TACK_OK) return st;
    cp->grid.block = 1;           /* each 'p' phase's own group size is its grid.local (make_kernels) */
    cp->grid.blocks = cp->g.kinds;
    if ((st = gpu_grid_work(p, &cp->g, &cp->grid)) != TACK_OK) return st;
    cp->k = tack_calloc((size_t)cp->g.nph + 1, sizeof(ze_kernel_handle_t));
    if (!cp->k) return tack_set_error(TACK_ERR_NOMEM, "out of memory building kernel '%s'", p->kernel_name);
    return TACK_OK;
}

static void prog_free(tack_device *d, lz_prog *cp) {
    const tack_ze_api *api = lz_api_get();
    lz_dev *c = d->state;
    if (!cp) return;
    if (cp->k)
        for (int i = 0; i < cp->g.nph; i++)
            if (cp->k[i]) api->zeKernelDestroy(cp->k[i]);
    if (cp->module) api->zeModuleDestroy(cp->module);
    if (cp->frame) api->zeMemFree(c->ctx, cp->frame);
    gpu_grid_free(&cp->grid);
    gpu_prog_fini(&cp->g);
    tack_free(cp->k);
    tack_free(cp);
}

/* The group size of blocks phase k: exactly the loop's block size B, or an
 * error naming the kernel, B and the limit it exceeds -- the device's
 * maxTotalGroupSize and maxGroupSizeX, and, where the driver gives the
 * kernel's properties, its maxNumSubgroups sub-groups of maxSubgroupSize
 * (what its registers allow) and its shared local memory (localMemSize,
 * the __local arrays the dialect declares) against the device's
 * maxSharedLocalMemory.  Never a smaller group: the kernel's barriers and
 * shared indices count on B work-items. */
static tack_status blocks_group(tack_device *d, tack_program *p, lz_prog *cp, int k, uint32_t *out) {
    const tack_ze_api *api = lz_api_get();
    lz_dev *c = d->state;
    uint32_t bs = cp->g.bsize[k], most = c->max_group < c->max_group_x ? c->max_group : c->max_group_x;
    const char *what = most == c->max_group ? "maxTotalGroupSize" : "maxGroupSizeX";
    ze_kernel_properties_t kp;
    memset(&kp, 0, sizeof kp);
    kp.stype = TACK_ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES;
    int props = api->zeKernelGetProperties && api->zeKernelGetProperties(cp->k[k], &kp) == TACK_ZE_RESULT_SUCCESS;
    if (props && kp.maxNumSubgroups && kp.maxSubgroupSize &&
        (uint64_t)kp.maxNumSubgroups * kp.maxSubgroupSize < most) {
        most = kp.maxNumSubgroups * kp.maxSubgroupSize;
        what = "the kernel's maxNumSubgroups x maxSubgroupSize";
    }
    gpu_block_limits l = {"Level Zero", c->name, (int)most, what, props ? (int)kp.localMemSize : -1,
                          c->max_slm ? (int)c->max_slm : -1, "maxSharedLocalMemory"};
    *out = bs;
    return gpu_block_check(d, p, &cp->g, k, &l);
}

/* Kernel objects for the phases, with their group sizes. */
static tack_status make_kernels(tack_device *d, tack_program *p, lz_prog *cp) {
    const tack_ze_api *api = lz_api_get();
    lz_dev *c = d->state;
    for (int k = 0; k < cp->g.nph; k++) {
        char fname[32], what[120];
        snprintf(fname, sizeof fname, "tk_phase%d", k);
        ze_kernel_desc_t kd = {TACK_ZE_STRUCTURE_TYPE_KERNEL_DESC, NULL, 0, fname};
        ze_result_t r = api->zeKernelCreate(cp->module, &kd, &cp->k[k]);
        if (r != TACK_ZE_RESULT_SUCCESS) {
            cp->k[k] = NULL;
            snprintf(what, sizeof what, "zeKernelCreate(\"%s\") for kernel '%s'", fname, p->kernel_name);
            return lz_error(r, what, d);
        }
        uint32_t l = 1;
        cp->grid.fill[k] = c->units * 8; /* the most groups a phase launches */
        if (cp->g.kinds[k] == 'p') {
            uint32_t x = 0, y = 0, z = 0;
            l = c->max_group < 256 ? c->max_group : 256;
            if (api->zeKernelSuggestGroupSize(cp->k[k], l, 1, 1, &x, &y, &z) == TACK_ZE_RESULT_SUCCESS && x > 0 &&
                x < l)
                l = x;
            cp->grid.local[k] = l;
        } else if (cp->g.kinds[k] == 'b') {
            tack_status st = blocks_group(d, p, cp, k, &l);
            if (st != TACK_OK) return st;
        }
        if ((r = api->zeKernelSetGroupSize(cp->k[k], l, 1, 1)) != TACK_ZE_RESULT_SUCCESS) {
            snprintf(what, sizeof what, "zeKernelSetGroupSize(%u) for %s of kernel '%s'", (unsigned)l, fname,
                     p->kernel_name);
            return lz_error(r, what, d);
        }
    }
    return TACK_OK;
}

/* A zeroed device allocation of n bytes. */
static tack_status zeroed(tack_device *d, size_t n, void **out, const char *what) {
    const tack_ze_api *api = lz_api_get();
    lz_dev *c = d->state;
    ze_device_mem_alloc_desc_t md = {TACK_ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0, 0};
    void *p = NULL;
    ze_result_t r = api->zeMemAllocDevice(c->ctx, &md, n, 64, c->dev, &p);
    if (r != TACK_ZE_RESULT_SUCCESS || !p) return lz_error(r ? r : TACK_ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, what, d);
    unsigned char *zero = tack_calloc(1, n);
    tack_status st = zero ? lz_copy_wait(d, &c->own, p, zero, n)
                          : tack_set_error(TACK_ERR_NOMEM, "out of memory in %s", what);
    tack_free(zero);
    if (st != TACK_OK) {
        api->zeMemFree(c->ctx, p);
        return st;
    }
    *out = p;
    return TACK_OK;
}

tack_status lz_build(tack_device *d, tack_program *p) {
    lz_dev *c = d->state;
    tack_status st;
    lz_prog *cp = tack_calloc(1, sizeof *cp);
    if (!cp) return tack_set_error(TACK_ERR_NOMEM, "out of memory building kernel '%s'", p->kernel_name);
    gpu_prog_init(&cp->g, p);
    if ((st = parse_layout(p, cp)) != TACK_OK) goto fail;
    if (cp->fp64 && !c->fp64) {
        st = tack_set_error(TACK_ERR_COMPILE, "kernel '%s' uses float64, which device '%s' (%s) does not support",
                            p->kernel_name, d->name, c->name);
        goto fail;
    }
    atomic_fetch_add(&c->made, 1); /* too late to adopt another context (tack_level_zero_adopt) */
    if ((st = get_module(d, p, &cp->module)) != TACK_OK) goto fail;
    if ((st = make_kernels(d, p, cp)) != TACK_OK) goto fail;
    if (cp->g.frame_bytes && (st = zeroed(d, cp->g.frame_bytes, &cp->frame, "allocating a kernel frame")) != TACK_OK)
        goto fail;
    tk_mutex_lock(&c->rec.lock);
    if (!c->err && (st = zeroed(d, sizeof(gpu_err_record), &c->err, "allocating the kernel error record")) != TACK_OK) {
        c->err = NULL;
        tk_mutex_unlock(&c->rec.lock);
        goto fail;
    }
    gpu_link(&c->rec, &cp->g);
    tk_mutex_unlock(&c->rec.lock);
    p->handle = cp;
    return TACK_OK;
fail:
    prog_free(d, cp);
    return st;
}

void lz_unload(tack_device *d, tack_program *p) {
    lz_dev *c = d->state;
    lz_prog *cp = p->handle;
    if (!cp || !lz_api_get()) return;
    /* launches of it on other streams (runtime/stream.c) finish before its kernels and frame go */
    if (rt_streams_join(d) != TACK_OK) tack_clear_error(); /* said at the next synchronization */
    tk_mutex_lock(&c->rec.lock);
    tk_mutex_lock(&c->own.lock);
    tack_status wst = lz_wait(d, &c->own);
    tk_mutex_unlock(&c->own.lock);
    /* a failure of this program still unread: keep its message for the next synchronization */
    if (wst == TACK_OK) gpu_keep_pending(&c->rec, d, take_record);
    gpu_unlink(&c->rec, &cp->g);
    tk_mutex_unlock(&c->rec.lock);
    prog_free(d, cp);
    p->handle = NULL;
}

/* ---------------------------------------------------------------- launch */
/* Set the arguments of phase k (cp->lock held). */
static tack_status set_args(tack_device *d, lz_prog *cp, int k, const tack_program *p, const tack_arg *args, int nargs) {
    const tack_ze_api *api = lz_api_get();
    lz_dev *c = d->state;
    ze_kernel_handle_t kern = cp->k[k];
    uint32_t idx = 0;
    ze_result_t r;
#define ARG(size, ptr)                                                                                  \
    do {                                                                                                \
        if ((r = api->zeKernelSetArgumentValue(kern, idx, (size), (ptr))) != TACK_ZE_RESULT_SUCCESS) goto bad; \
        idx++;                                                                                          \
    } while (0)
    void *err = c->err, *frame = cp->frame;
    ARG(sizeof err, &err);
    ARG(sizeof frame, &frame);
    uint64_t id = cp->g.id;
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
        void *ptr = tack_array_data(a);
        ARG(sizeof ptr, &ptr);
        const int64_t *shape = tack_array_shape(a);
        for (int j = 0; j < pi->ndim; j++) {
            int64_t extent = shape[j];
            ARG(sizeof extent, &extent);
        }
        if (pi->strided) { /* the OpenCL dialect's strides and offset: the pointer is element (0, ..., 0)'s */
            int64_t t[TACK_MAX_NDIM + 1];
            gpu_strides(a, pi->ndim, t);
            t[pi->ndim] = 0;
            for (int j = 0; j <= pi->ndim; j++) ARG(sizeof t[j], &t[j]);
        }
    }
#undef ARG
    return TACK_OK;
bad:;
    char what[160];
    snprintf(what, sizeof what, "zeKernelSetArgumentValue (argument %u of tk_phase%d of kernel '%s')", (unsigned)idx,
             k, p->kernel_name);
    return lz_error(r, what, d);
}

tack_status lz_launch(tack_device *d, tack_program *p, const tack_arg *args, int nargs) {
    const tack_ze_api *api = lz_api_get();
    lz_prog *cp = p->handle;
    if (!cp) return tack_set_error(TACK_ERR_VALUE, "kernel '%s' is not built", p->kernel_name);
    int shared = gpu_any_shared(p, args, nargs);
    tack_status st = TACK_OK;
    lz_list *l = lz_cur(d); /* the thread's current stream on d (its capture's list), else the device's own */
    if (!l) return TACK_ERR_NOMEM;
    int captured = l->recording;
    lz_slot *first = NULL, *last = NULL;
    tk_mutex_lock(&cp->g.lock);
    /* Launches of one program share its frame buffer: one on another stream than the last waits
     * for it on the device (runtime/stream.c), as gpu_launch.c orders CUDA's and HIP's; a capture
     * orders nothing now, its replays do (level_zero_stream.c). */
    tack_stream *cur = rt_stream_now(d);
    if (!captured && cp->g.frame_bytes && cur != cp->g.last && (st = rt_stream_order(d, cur, cp->g.last)) == TACK_OK) {
        tack_stream_retain(cur);
        tack_stream_release(cp->g.last);
        cp->g.last = cur;
    }
    /* while a profile records: kernel timestamps of the first and last phases (level_zero_stream.c) */
    if (st == TACK_OK && !captured && rt_prof_on() && api->zeEventQueryKernelTimestamp && api->zeEventPoolCreate &&
        api->zeEventCreate && api->zeEventHostSynchronize && api->zeEventQueryStatus && api->zeEventHostReset &&
        lz_slot_take(d, LZ_EV_KERNEL_TS, &first) == TACK_OK) {
        if (cp->g.nph > 1 && lz_slot_take(d, LZ_EV_KERNEL_TS, &last) != TACK_OK) {
            lz_slot_retire(d, first);
            first = NULL;
        }
        tack_clear_error(); /* no timer is no error of the launch */
    }
    tk_mutex_lock(&l->lock);
    for (int k = 0; k < cp->g.nph && st == TACK_OK; k++) {
        if ((st = set_args(d, cp, k, p, args, nargs)) != TACK_OK) break;
        /* a group per L iterations of a parallel loop, one a block of a blocks loop (each takes
         * blocks g, g + groups, ...), at most units x 8; a serial phase one group */
        char kind = cp->g.kinds[k];
        uint32_t ng = kind == 'p' || kind == 'b' ? gpu_phase_grid(&cp->grid, k, p, args, nargs) : 1;
        ze_group_count_t groups = {ng, 1, 1};
        lz_slot *sig = !first ? NULL : k == 0 ? first : k == cp->g.nph - 1 ? last : NULL;
        ze_result_t r = api->zeCommandListAppendLaunchKernel(l->list, cp->k[k], &groups, sig ? sig->ev : NULL, 0, NULL);
        if (r != TACK_ZE_RESULT_SUCCESS) st = lz_error(r, "zeCommandListAppendLaunchKernel", d);
        else if (sig) sig->armed = 1;
        if (st == TACK_OK) st = lz_barrier(d, l);
    }
    /* shared with another library: finished before the call returns (a replay waits instead) */
    if (st == TACK_OK) st = shared && !captured ? lz_wait(d, l) : lz_submit(d, l);
    tk_mutex_unlock(&l->lock);
    tk_mutex_unlock(&cp->g.lock);
    if (first && st == TACK_OK) rt_prof_cur_timer = lz_timer_of(d, first, last ? last : first);
    else if (first) {
        lz_slot_retire(d, first);
        if (last) lz_slot_retire(d, last);
    }
    if (st == TACK_OK && shared && !captured) st = lz_check_record(d);
    return st;
}
