/*
 * nvrtc.c -- CUDA C++ to PTX or a cubin with NVRTC, loaded at run time.
 *
 * The CUDA dialect of the emitter produces CUDA C++ source; NVRTC compiles
 * it in-process, with no nvcc and no CUDA toolkit on the include path beyond
 * NVRTC's own built-in headers.  Compiling needs no GPU, which is what lets
 * the tests check the generated CUDA code on machines without one.
 *
 * Where NVRTC is: users get it from three places -- a CUDA toolkit (in its
 * lib64), the pip wheel nvidia-cuda-nvrtc-cu12 (site-packages/nvidia/
 * cuda_nvrtc/lib; CUDA 13's wheels put it in site-packages/nvidia/cu13/lib),
 * or a system package that puts it on the loader's path.  libnvrtc is looked
 * for, in order, in
 *   1. TACK_NVRTC_PATH: a library file or a directory holding one; when it is
 *      set, it is the only place (a wrong path is an error, not a silent
 *      fallback to another NVRTC);
 *   2. $CUDA_HOME and $CUDA_PATH: their lib64 and lib;
 *   3. the site-packages Tack is installed in: nvidia/cuda_nvrtc/lib and
 *      nvidia/cu13/lib, found from the path of the library holding this code
 *      (libtack in the wheel's tack/lib), so that a wheel installed beside Tack
 *      is used;
 *   4. the dynamic loader's own search (LD_LIBRARY_PATH, the ld.so cache, a
 *      library already loaded by PyTorch or CuPy), by soname;
 *   5. /usr/local/cuda and /opt/cuda.
 * In a directory the names tried are libnvrtc.so.13, .so.12, .so.11.2 and
 * libnvrtc.so.  When none loads, the error lists every place looked in.
 *
 * What is built: PTX for a virtual architecture (compute_XY), which the
 * driver compiles for the exact GPU at load, or a cubin for the GPU's own
 * architecture (sm_XY), which it loads as it is.  Which one the driver can
 * take is cuda_image.c's decision.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"

#include "backends/cuda/cuda_api.h"
#include "runtime/runtime.h"
#include "runtime/config.h"

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

static struct {
    void *lib;
    nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                          const char *const *);
    nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*ptx_size)(nvrtcProgram, size_t *);
    nvrtcResult (*ptx)(nvrtcProgram, char *);
    nvrtcResult (*cubin_size)(nvrtcProgram, size_t *); /* NVRTC 11.1+; may be NULL */
    nvrtcResult (*cubin)(nvrtcProgram, char *);
    nvrtcResult (*log_size)(nvrtcProgram, size_t *);
    nvrtcResult (*log)(nvrtcProgram, char *);
    nvrtcResult (*destroy)(nvrtcProgram *);
    nvrtcResult (*version)(int *, int *);
    nvrtcResult (*num_archs)(int *);                   /* NVRTC 11.2+; may be NULL */
    nvrtcResult (*archs)(int *);
    const char *(*error_string)(nvrtcResult);
    char from[1024];
    char why[2048];
} nv;
static tk_once_t nv_once = TK_ONCE_INIT;

static const char *const NVRTC_NAMES[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"};
#define NNAMES (sizeof NVRTC_NAMES / sizeof NVRTC_NAMES[0])

static void add_place(char *why, size_t why_len, const char *place) {
    size_t n = strlen(why);
    if (n + 1 < why_len) snprintf(why + n, why_len - n, "%s%s", n ? "; " : "", place);
}

static int is_dir(const char *p) {
    return tk_is_dir(p);
}

/* Try the names in directory dir; the loaded one's path goes to found. */
static void *open_in(const char *dir, char *found, size_t found_len, char *tried, size_t tried_len) {
    add_place(tried, tried_len, dir);
    if (!is_dir(dir)) return NULL;
    for (size_t i = 0; i < NNAMES; i++) {
        char path[1100];
        int n = snprintf(path, sizeof path, "%s/%s", dir, NVRTC_NAMES[i]);
        if (n < 0 || (size_t)n >= sizeof path) return NULL;
        void *h = tk_dl_open(path, 0);
        if (h) {
            snprintf(found, found_len, "%s", path);
            return h;
        }
    }
    return NULL;
}

static void *open_under(const char *root, const char *const *subs, char *found, size_t found_len, char *tried,
                        size_t tried_len) {
    void *h = NULL;
    for (int i = 0; !h && subs[i]; i++) {
        char dir[1024];
        int n = snprintf(dir, sizeof dir, "%s/%s", root, subs[i]);
        if (n < 0 || (size_t)n >= sizeof dir) break;
        h = open_in(dir, found, found_len, tried, tried_len);
    }
    return h;
}

void *nvrtc_open(const nvrtc_where *w, char *found, size_t found_len, char *why, size_t why_len) {
    static const char *const libdirs[] = {"lib64", "lib", NULL};
    static const char *const wheels[] = {"nvidia/cuda_nvrtc/lib", "nvidia/cu13/lib", NULL};
    char tried[1800] = "";
    void *h = NULL;
    found[0] = 0;
    if (w->explicit_path && *w->explicit_path) {
        const char *p = w->explicit_path;
        if (is_dir(p)) h = open_in(p, found, found_len, tried, sizeof tried);
        else if ((h = tk_dl_open(p, 0))) snprintf(found, found_len, "%s", p);
        if (!h) {
            const char *e = is_dir(p) ? NULL : tk_dl_error();
            snprintf(why, why_len, "NVRTC could not be loaded from TACK_NVRTC_PATH=%s (%s); point it at libnvrtc.so "
                     "or the directory holding it, or unset it to search the usual places", p,
                     e ? e : "no libnvrtc.so.13, .so.12, .so.11.2 or .so in that directory");
        }
        return h;
    }
    const char *homes[2] = {w->cuda_home, w->cuda_path};
    for (int i = 0; !h && i < 2; i++)
        if (homes[i] && *homes[i]) h = open_under(homes[i], libdirs, found, found_len, tried, sizeof tried);
    if (!h && w->beside && *w->beside) {
        char site[1024];
        snprintf(site, sizeof site, "%s", w->beside);
        char *slash = strrchr(site, '/');
        if (slash && slash != site) {
            *slash = 0;
            h = open_under(site, wheels, found, found_len, tried, sizeof tried);
        }
    }
    if (!h && w->system) {
        for (size_t i = 0; !h && i < NNAMES; i++)
            if ((h = tk_dl_open(NVRTC_NAMES[i], 0))) snprintf(found, found_len, "%s", NVRTC_NAMES[i]);
        add_place(tried, sizeof tried, "the loader's search path (LD_LIBRARY_PATH, the ld.so cache)");
        if (!h) h = open_under("/usr/local/cuda", libdirs, found, found_len, tried, sizeof tried);
        if (!h) h = open_under("/opt/cuda", libdirs, found, found_len, tried, sizeof tried);
    }
    if (!h)
        snprintf(why, why_len, "NVRTC (libnvrtc.so.13, .so.12, .so.11.2 or .so) was not found; looked in: %s. "
                 "Install it (the CUDA toolkit, or pip install nvidia-cuda-nvrtc-cu12), or set TACK_NVRTC_PATH "
                 "(or CUDA_HOME) to where it is", tried);
    return h;
}

static void nv_load(void) {
    char path[TK_CONFIG_STR_MAX];
    tk_config_str(TK_CFG_NVRTC_PATH, path, sizeof path); /* CUDA_HOME and CUDA_PATH are the toolkit's own */
    nvrtc_where w = {*path ? path : NULL, getenv("CUDA_HOME"), getenv("CUDA_PATH"), NULL, 1};
    char beside[1024] = "";
    char self[1024];
    if (tk_dl_path(NULL, (const void *)(uintptr_t)nvrtc_open, self, sizeof self) == 0 && strchr(self, '/')) {
        snprintf(beside, sizeof beside, "%s", self);
        *strrchr(beside, '/') = 0;
        /* the wheel's libtack lies in site-packages/tack/lib, one level below the
           extension's place that nvrtc_open expects */
        size_t n = strlen(beside);
        if (n > 9 && strcmp(beside + n - 9, "/tack/lib") == 0) beside[n - 4] = 0;
        w.beside = beside;
    }
    nv.lib = nvrtc_open(&w, nv.from, sizeof nv.from, nv.why, sizeof nv.why);
    if (!nv.lib) return;
#define SYM(field, name)                                                              \
    do {                                                                              \
        *(void **)&nv.field = tk_dl_sym(nv.lib, name);                                    \
        if (!nv.field) {                                                              \
            snprintf(nv.why, sizeof nv.why, "%s lacks %s", nv.from, name);            \
            tk_dl_close(nv.lib);                                                          \
            nv.lib = NULL;                                                            \
            return;                                                                   \
        }                                                                             \
    } while (0)
    SYM(create, "nvrtcCreateProgram");
    SYM(compile, "nvrtcCompileProgram");
    SYM(ptx_size, "nvrtcGetPTXSize");
    SYM(ptx, "nvrtcGetPTX");
    SYM(log_size, "nvrtcGetProgramLogSize");
    SYM(log, "nvrtcGetProgramLog");
    SYM(destroy, "nvrtcDestroyProgram");
    SYM(version, "nvrtcVersion");
    SYM(error_string, "nvrtcGetErrorString");
#undef SYM
    *(void **)&nv.cubin_size = tk_dl_sym(nv.lib, "nvrtcGetCUBINSize");
    *(void **)&nv.cubin = tk_dl_sym(nv.lib, "nvrtcGetCUBIN");
    *(void **)&nv.num_archs = tk_dl_sym(nv.lib, "nvrtcGetNumSupportedArchs");
    *(void **)&nv.archs = tk_dl_sym(nv.lib, "nvrtcGetSupportedArchs");
}

int tack_nvrtc_version(void) {
    int major = 0, minor = 0;
    tk_once(&nv_once, nv_load);
    if (!nv.lib || nv.version(&major, &minor) != 0)
        return 0;
    return major * 1000 + minor * 10;
}

void *rt_toolchain_nvrtc(const char **text, int *version) {
    *version = tack_nvrtc_version(); /* loads it */
    *text = nv.lib ? nv.from : nv.why;
    return nv.lib;
}

const char *nvrtc_loaded_from(void) {
    tk_once(&nv_once, nv_load);
    return nv.lib ? nv.from : NULL;
}

int nvrtc_arch_for(int cc) {
    tk_once(&nv_once, nv_load);
    if (!nv.lib) return 0;
    int n = 0;
    if (!nv.num_archs || !nv.archs || nv.num_archs(&n) != 0 || n <= 0 || n > 256) return cc;
    int archs[256], best = 0;
    if (nv.archs(archs) != 0) return cc;
    for (int i = 0; i < n; i++)
        if (archs[i] <= cc && archs[i] > best) best = archs[i];
    return best;
}

/* NVRTC's options after the architecture, written once for the compile and
 * for the cache's key (nvrtc_options). */
#define OPT_STD "--std=c++17"
#define OPT_DEV "-default-device"
#define OPT_IEEE "--fmad=false"
#define OPT_FAST "--use_fast_math"
#define OPT_FTZ "--ftz=true"

const char *nvrtc_options(unsigned flags) {
    static const char *opts[2][2] = {{OPT_STD " " OPT_DEV " " OPT_IEEE, OPT_STD " " OPT_DEV " " OPT_IEEE " " OPT_FTZ},
                                     {OPT_STD " " OPT_DEV " " OPT_FAST, OPT_STD " " OPT_DEV " " OPT_FAST " " OPT_FTZ}};
    return opts[(flags & TACK_NVRTC_FAST_MATH) != 0][(flags & TACK_NVRTC_FTZ) != 0];
}

tack_status nvrtc_build(const char *source, const char *name, int arch, int cubin, unsigned flags, char **image,
                        size_t *len) {
    nvrtcProgram prog = NULL;
    char opt_arch[64];
    char *log = NULL, *out = NULL;
    tack_status st = TACK_OK;
    tk_once(&nv_once, nv_load);
    if (!nv.lib)
        return tack_set_error(TACK_ERR_DEVICE, "%s", nv.why);
    if (cubin && (!nv.cubin_size || !nv.cubin))
        return tack_set_error(TACK_ERR_DEVICE, "%s cannot write a cubin (it lacks nvrtcGetCUBIN: NVRTC 11.1 or later "
                              "is needed)", nv.from);
    snprintf(opt_arch, sizeof opt_arch, "--gpu-architecture=%s_%d", cubin ? "sm" : "compute", arch);
    const char *opts[] = {opt_arch, OPT_STD, OPT_DEV, flags & TACK_NVRTC_FAST_MATH ? OPT_FAST : OPT_IEEE, OPT_FTZ};
    int nopts = (int)(sizeof opts / sizeof opts[0]) - !(flags & TACK_NVRTC_FTZ);
    int r = nv.create(&prog, source, name, 0, NULL, NULL);
    if (r != 0)
        return tack_set_error(TACK_ERR_DEVICE, "nvrtcCreateProgram failed: %s", nv.error_string(r));
    r = nv.compile(prog, nopts, opts);
    size_t log_len = 0;
    if (nv.log_size(prog, &log_len) == 0 && log_len > 1 && (log = tack_malloc(log_len)))
        nv.log(prog, log);
    if (r != 0) {
        st = tack_set_error(TACK_ERR_COMPILE, "NVRTC could not compile %s for %s_%d: %s\n%.3000s", name,
                            cubin ? "sm" : "compute", arch, nv.error_string(r), log ? log : "");
        goto done;
    }
    size_t n = 0;
    if ((cubin ? nv.cubin_size(prog, &n) : nv.ptx_size(prog, &n)) != 0 || !(out = tack_malloc(n + 1))) {
        st = tack_set_error(TACK_ERR_NOMEM, "out of memory reading NVRTC's %s (%zu bytes)", cubin ? "cubin" : "PTX", n);
        goto done;
    }
    if (cubin) nv.cubin(prog, out);
    else nv.ptx(prog, out);
    out[n] = '\0';
    /* PTX: its size counts the final NUL */
    *len = cubin ? n : strlen(out);
    *image = out;
    out = NULL;
done:
    tack_free(out);
    tack_free(log);
    nv.destroy(&prog);
    return st;
}

tack_status tack_nvrtc_compile(const char *source, const char *name, int major, int minor, unsigned flags,
                               char **ptx) {
    size_t len = 0;
    return nvrtc_build(source, name, major * 10 + minor, 0, flags, ptx, &len);
}
