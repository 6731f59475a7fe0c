/*
 * nvrtc.c -- CUDA C++ to PTX with NVRTC, loaded at run time.
 *
 * The CUDA dialect of the emitter produces CUDA C++ source; NVRTC compiles
 * it to PTX in-process, with no nvcc and no CUDA toolkit on the include path
 * beyond NVRTC's own built-in headers.  Compiling needs no GPU, which is
 * what lets the tests check the generated CUDA code on machines without one.
 * libnvrtc is found by its soname (libnvrtc.so.13, .12, .11, then plain
 * libnvrtc.so, the usual toolkit locations); TACK_NVRTC_PATH overrides.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda_api.h"
#include "runtime/runtime.h"

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

static struct {
    void *lib;
    nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                          const char *const *);
    nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*ptx_size)(nvrtcProgram, size_t *);
    nvrtcResult (*ptx)(nvrtcProgram, char *);
    nvrtcResult (*log_size)(nvrtcProgram, size_t *);
    nvrtcResult (*log)(nvrtcProgram, char *);
    nvrtcResult (*destroy)(nvrtcProgram *);
    nvrtcResult (*version)(int *, int *);
    const char *(*error_string)(nvrtcResult);
    char why[256];
} nv;
static pthread_once_t nv_once = PTHREAD_ONCE_INIT;

static void nv_load(void) {
    static const char *names[] = {
        "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so",
        "/usr/local/cuda/lib64/libnvrtc.so", "/usr/local/cuda/lib/libnvrtc.so",
    };
    const char *env = getenv("TACK_NVRTC_PATH");
    if (env && *env)
        nv.lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    for (size_t i = 0; !nv.lib && i < sizeof names / sizeof names[0]; i++)
        nv.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!nv.lib) {
        snprintf(nv.why, sizeof nv.why, "NVRTC (libnvrtc.so) was not found; install the CUDA toolkit's "
                                        "NVRTC or set TACK_NVRTC_PATH");
        return;
    }
#define SYM(field, name)                                                              \
    do {                                                                              \
        *(void **)&nv.field = dlsym(nv.lib, name);                                    \
        if (!nv.field) {                                                              \
            snprintf(nv.why, sizeof nv.why, "libnvrtc lacks %s", name);               \
            dlclose(nv.lib);                                                          \
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
}

int tack_nvrtc_version(void) {
    int major = 0, minor = 0;
    pthread_once(&nv_once, nv_load);
    if (!nv.lib || nv.version(&major, &minor) != 0)
        return 0;
    return major * 1000 + minor * 10;
}

/* NVRTC's options after the architecture, written once for the compile and
 * for the PTX cache's key (nvrtc_options). */
#define OPT_STD "--std=c++17"
#define OPT_DEV "-default-device"
#define OPT_IEEE "--fmad=false"
#define OPT_FAST "--use_fast_math"

const char *nvrtc_options(unsigned flags) {
    return flags & TACK_NVRTC_FAST_MATH ? OPT_STD " " OPT_DEV " " OPT_FAST : OPT_STD " " OPT_DEV " " OPT_IEEE;
}

tack_status tack_nvrtc_compile(const char *source, const char *name, int major, int minor, unsigned flags,
                               char **ptx) {
    nvrtcProgram prog = NULL;
    char arch[64];
    char *log = NULL, *out = NULL;
    tack_status st = TACK_OK;
    pthread_once(&nv_once, nv_load);
    if (!nv.lib)
        return tack_set_error(TACK_ERR_DEVICE, "%s", nv.why);
    snprintf(arch, sizeof arch, "--gpu-architecture=compute_%d%d", major, minor);
    const char *opts[] = {arch, OPT_STD, OPT_DEV, flags & TACK_NVRTC_FAST_MATH ? OPT_FAST : OPT_IEEE};
    int r = nv.create(&prog, source, name, 0, NULL, NULL);
    if (r != 0)
        return tack_set_error(TACK_ERR_DEVICE, "nvrtcCreateProgram failed: %s", nv.error_string(r));
    r = nv.compile(prog, (int)(sizeof opts / sizeof opts[0]), opts);
    size_t log_len = 0;
    if (nv.log_size(prog, &log_len) == 0 && log_len > 1 && (log = tack_malloc(log_len)))
        nv.log(prog, log);
    if (r != 0) {
        st = tack_set_error(TACK_ERR_COMPILE, "NVRTC could not compile %s for sm_%d%d: %s\n%.3000s", name,
                            major, minor, nv.error_string(r), log ? log : "");
        goto done;
    }
    size_t n = 0;
    if (nv.ptx_size(prog, &n) != 0 || !(out = tack_malloc(n + 1))) {
        st = tack_set_error(TACK_ERR_NOMEM, "out of memory reading NVRTC's PTX (%zu bytes)", n);
        goto done;
    }
    nv.ptx(prog, out);
    out[n] = '\0';
    *ptx = out;
    out = NULL;
done:
    tack_free(out);
    tack_free(log);
    nv.destroy(&prog);
    return st;
}
