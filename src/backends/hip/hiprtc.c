/*
 * hiprtc.c -- HIP C++ to an AMD GPU code object with hiprtc, loaded at run
 * time.
 *
 * The HIP dialect of the emitter (compiler/dialect_hip.c) writes HIP C++;
 * hiprtc compiles it in-process to a code object (an ELF the HIP module API
 * loads) for one AMD architecture, named as the driver names it in
 * `gcnArchName` ("gfx90a", "gfx1030", with feature suffixes such as
 * ":sramecc+:xnack-").  Compiling needs no GPU, so the tests build every
 * kernel of the language suite for a CDNA and an RDNA target here.
 *
 * Where hiprtc lives depends on the ROCm release: from ROCm 5.3 in its own
 * libhiprtc.so, before that inside libamdhip64.so (Debian 12 ships 5.2).
 * Both are tried by soname, then under ROCm's usual prefix; TACK_HIPRTC_PATH
 * names a library to use instead.
 *
 * Arithmetic follows the CPU's unless fast math is asked for: no contraction
 * of a * b + c into a fused multiply-add (-ffp-contract=off), and HIP's
 * defaults for f32 division and square root, which round correctly.  An
 * RDNA target is built for the wavefront size asked for (-mwavefrontsize64
 * or -mno-wavefrontsize64): the HIP backend asks for the device's.
 *
 * One compile at a time in the process: hiprtc hands the options to comgr,
 * which parses them into LLVM's command-line registry -- global state that
 * LLVM does not guard -- and ROCm releases before 6 do not serialize it
 * themselves.  Tack compiles from whatever thread calls a kernel first
 * (tests/python/test_kernels.py calls from twelve at once), so the calls
 * from create to destroy hold one mutex.
 */
#include "platform/platform.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"
#include "private/tack_private.h"
#include "runtime/config.h"

typedef int hiprtcResult;
typedef struct _hiprtcProgram *hiprtcProgram;

static struct {
    void *lib;
    hiprtcResult (*create)(hiprtcProgram *, const char *, const char *, int, const char **, const char **);
    hiprtcResult (*compile)(hiprtcProgram, int, const char **);
    hiprtcResult (*code_size)(hiprtcProgram, size_t *);
    hiprtcResult (*code)(hiprtcProgram, char *);
    hiprtcResult (*log_size)(hiprtcProgram, size_t *);
    hiprtcResult (*log)(hiprtcProgram, char *);
    hiprtcResult (*destroy)(hiprtcProgram *);
    hiprtcResult (*version)(int *, int *);
    const char *(*error_string)(hiprtcResult);
    char why[300];
} hr;
static tk_once_t hr_once = TK_ONCE_INIT;
static tk_mutex_t hr_compile_lock = TK_MUTEX_INIT;

static int hr_bind(void *lib) {
#define SYM(field, name)                                          \
    do {                                                          \
        *(void **)&hr.field = tk_dl_sym(lib, name);                   \
        if (!hr.field) {                                          \
            snprintf(hr.why, sizeof hr.why, "%s lacks %s", "the HIP library", name); \
            return 0;                                             \
        }                                                         \
    } while (0)
    SYM(create, "hiprtcCreateProgram");
    SYM(compile, "hiprtcCompileProgram");
    SYM(code_size, "hiprtcGetCodeSize");
    SYM(code, "hiprtcGetCode");
    SYM(log_size, "hiprtcGetProgramLogSize");
    SYM(log, "hiprtcGetProgramLog");
    SYM(destroy, "hiprtcDestroyProgram");
    SYM(version, "hiprtcVersion");
    SYM(error_string, "hiprtcGetErrorString");
#undef SYM
    return 1;
}

static void hr_load(void) {
    static const char *names[] = {
        "libhiprtc.so.7", "libhiprtc.so.6", "libhiprtc.so.5", "libhiprtc.so", "libamdhip64.so.7", "libamdhip64.so.6",
        "libamdhip64.so.5", "libamdhip64.so",
        "/opt/rocm/lib/libhiprtc.so", "/opt/rocm/lib/libamdhip64.so",
    };
    char buf[TK_CONFIG_STR_MAX];
    const char *env = tk_config_str(TK_CFG_HIPRTC_PATH, buf, sizeof buf);
    if (*env) {
        void *lib = tk_dl_open(env, 0);
        if (lib && hr_bind(lib)) {
            hr.lib = lib;
            return;
        }
        if (!lib) snprintf(hr.why, sizeof hr.why, "TACK_HIPRTC_PATH names %.200s, which cannot be loaded", env);
        else tk_dl_close(lib);
        return;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *lib = tk_dl_open(names[i], 0);
        if (!lib) continue;
        if (hr_bind(lib)) {
            hr.lib = lib;
            return;
        }
        tk_dl_close(lib);
    }
    snprintf(hr.why, sizeof hr.why,
             "hiprtc was not found (libhiprtc.so, or libamdhip64.so before ROCm 5.3); install ROCm's HIP runtime "
             "(Debian: libamdhip64-dev) or set TACK_HIPRTC_PATH");
}

int tack_hiprtc_version(void) {
    int major = 0, minor = 0;
    tk_once(&hr_once, hr_load);
    if (!hr.lib || hr.version(&major, &minor) != 0) return 0;
    return major * 1000 + minor * 10;
}

void *rt_toolchain_hiprtc(const char **text, int *version) {
    *version = tack_hiprtc_version(); /* loads it */
    *text = hr.lib ? "hiprtc" : hr.why;
    return hr.lib;
}

/* An architecture as gcnArchName spells it: gfx then letters, digits and
 * the feature suffixes' ':', '+' and '-'. */
static int arch_ok(const char *arch) {
    size_t n = strlen(arch);
    if (n < 4 || n > 60 || strncmp(arch, "gfx", 3)) return 0;
    for (size_t i = 3; i < n; i++) {
        char c = arch[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == ':' || c == '+' || c == '-')) return 0;
    }
    return 1;
}

#define OPT_IEEE "-ffp-contract=off"
#define OPT_FAST "-ffast-math"

static const char *hiprtc_options(unsigned flags) { return flags & TACK_HIPRTC_FAST_MATH ? OPT_FAST : OPT_IEEE; }

tack_status tack_hiprtc_compile(const char *source, const char *name, const char *arch, unsigned flags, void **code,
                                size_t *size) {
    if (!source || !arch || !code || !size)
        return tack_set_error(TACK_ERR_VALUE, "tack_hiprtc_compile: source, arch, code and size are required");
    *code = NULL;
    *size = 0;
    if (!name) name = "kernel.hip";
    if (!arch_ok(arch))
        return tack_set_error(TACK_ERR_VALUE, "'%.80s' is not an AMD GPU architecture (expected a name like 'gfx90a' or "
                                              "'gfx1030', as gcnArchName gives it)", arch);
    tk_once(&hr_once, hr_load);
    if (!hr.lib) return tack_set_error(TACK_ERR_DEVICE, "%s", hr.why);
    char opt_arch[96];
    snprintf(opt_arch, sizeof opt_arch, "--offload-arch=%s", arch);
    const char *opts[5] = {opt_arch, "-O3", hiprtc_options(flags), NULL, NULL};
    int nopts = 3;
    if (flags & TACK_HIPRTC_FTZ) opts[nopts++] = "-fgpu-flush-denormals-to-zero";
    if (flags & TACK_HIPRTC_WAVE64) opts[nopts++] = "-mwavefrontsize64";
    else if (flags & TACK_HIPRTC_WAVE32) opts[nopts++] = "-mno-wavefrontsize64";
    hiprtcProgram prog = NULL;
    char *log = NULL, *out = NULL;
    tack_status st = TACK_OK;
    tk_mutex_lock(&hr_compile_lock);
    int r = hr.create(&prog, source, name, 0, NULL, NULL);
    if (r != 0) {
        tk_mutex_unlock(&hr_compile_lock);
        return tack_set_error(TACK_ERR_DEVICE, "hiprtcCreateProgram failed: %s", hr.error_string(r));
    }
    r = hr.compile(prog, nopts, opts);
    size_t log_len = 0;
    if (hr.log_size(prog, &log_len) == 0 && log_len > 1 && (log = tack_malloc(log_len + 1))) {
        hr.log(prog, log);
        log[log_len] = '\0';
    }
    if (r != 0) {
        st = tack_set_error(TACK_ERR_COMPILE, "hiprtc could not compile %s for %s: %s\n%.3000s", name, arch,
                            hr.error_string(r), log ? log : "");
        goto done;
    }
    size_t n = 0;
    if (hr.code_size(prog, &n) != 0 || n == 0) {
        st = tack_set_error(TACK_ERR_COMPILE, "hiprtc compiled %s for %s but returned no code object", name, arch);
        goto done;
    }
    if (!(out = tack_malloc(n))) {
        st = tack_set_error(TACK_ERR_NOMEM, "out of memory reading hiprtc's code object (%zu bytes)", n);
        goto done;
    }
    hr.code(prog, out);
    *code = out;
    *size = n;
    out = NULL;
done:
    tack_free(out);
    tack_free(log);
    hr.destroy(&prog);
    tk_mutex_unlock(&hr_compile_lock);
    return st;
}
