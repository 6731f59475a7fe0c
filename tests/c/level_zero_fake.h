/*
 * level_zero_fake.h -- what the two tests of the Level Zero backend against
 * the fake driver share (test_level_zero_fake.c: devices, memory, launches,
 * the error record, the cache, adopted contexts; test_level_zero_streams.c:
 * streams, events and graphs).
 *
 * Each test builds the fake libze_loader.so.1 (tests/c/fake_level_zero.c)
 * with the C compiler into a fresh directory and runs itself again with it
 * first on LD_LIBRARY_PATH and a kernel cache of its own in that directory
 * (lzf_build, lzf_rerun); under it, it binds the fake's introspection (the
 * log of calls, what ran in order, what the specification forbids as
 * misuse, the launches' arguments, the clock, failures to inject), makes
 * programs from OpenCL C (opencl_programs.h), runs its variants as
 * children of itself (child_run) and removes the directory at the end
 * (lzf_remove).  Functions are static inline, as in check.h, so that a
 * test need not use every one.
 */
#ifndef TACK_TEST_LEVEL_ZERO_FAKE_H
#define TACK_TEST_LEVEL_ZERO_FAKE_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "opencl_programs.h"
#include "runtime/program.h"
#include "tack.h"
#include "tack_kernel.h"
#include "tk_ast.h"

static char exe[600];
static void *fake;
#define FAKE_FN(ret, name, args) static ret(*name) args
FAKE_FN(const char *, fake_calls, (void));
FAKE_FN(void, fake_calls_clear, (void));
FAKE_FN(const char *, fake_misuse, (void));
FAKE_FN(int, fake_launches, (void));
FAKE_FN(const char *, fake_launch_kernel, (int));
FAKE_FN(unsigned, fake_launch_groups, (int));
FAKE_FN(unsigned, fake_launch_group_size, (int));
FAKE_FN(int, fake_launch_nargs, (int));
FAKE_FN(uint64_t, fake_launch_arg, (int, int));
FAKE_FN(size_t, fake_launch_arg_size, (int, int));
FAKE_FN(const char *, fake_build_flags, (void));
FAKE_FN(const char *, fake_ran, (void));
FAKE_FN(void, fake_ran_clear, (void));
static int *fail_next, *refuse_modules;
static unsigned *fake_kernel_max_group, *fake_kernel_slm;
static uint64_t *fake_clock;
static void **fake_ctx_alloc, **fake_ctx_module, **fake_ctx_list;

static inline int bind_fake(void) {
    fake = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!fake) return 0;
#define BIND(n) *(void **)&n = dlsym(fake, #n)
    BIND(fake_calls);
    BIND(fake_calls_clear);
    BIND(fake_misuse);
    BIND(fake_launches);
    BIND(fake_launch_kernel);
    BIND(fake_launch_groups);
    BIND(fake_launch_group_size);
    BIND(fake_launch_nargs);
    BIND(fake_launch_arg);
    BIND(fake_launch_arg_size);
    BIND(fake_build_flags);
    BIND(fake_ran);
    BIND(fake_ran_clear);
    BIND(fake_clock);
    BIND(fail_next);
    BIND(refuse_modules);
    BIND(fake_kernel_max_group);
    BIND(fake_kernel_slm);
    BIND(fake_ctx_alloc);
    BIND(fake_ctx_module);
    BIND(fake_ctx_list);
#undef BIND
    return fake_calls && fake_launch_arg_size && fake_build_flags && fake_ran && fake_ran_clear && fake_clock &&
           fail_next && refuse_modules && fake_kernel_max_group && fake_kernel_slm && fake_ctx_alloc && fake_ctx_module &&
           fake_ctx_list;
}

/* Nothing the specification forbids done so far (what was is printed). */
#define CHECK_NO_MISUSE()                                                      \
    do {                                                                       \
        CHECK(fake_misuse()[0] == 0);                                          \
        if (fake_misuse()[0]) fprintf(stderr, "misuse: %s\n", fake_misuse()); \
    } while (0)

/* Where `call` first appears in the log at or after `from` (-1: never). */
static inline long at(const char *call, long from) {
    const char *log = fake_calls();
    size_t n = strlen(call);
    for (const char *s = log + (from < 0 ? 0 : from); (s = strstr(s, call)); s++)
        if ((s == log || s[-1] == '\n') && s[n] == '\n') return (long)(s - log);
    return -1;
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TACK_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TACK_TEST_ASAN 1
#endif

static inline int have_ocloc(void) {
#ifdef TACK_TEST_ASAN
    /* libocloc dlopens its compiler with RTLD_DEEPBIND, which AddressSanitizer refuses */
    printf("libocloc cannot run under AddressSanitizer: ");
    return 0;
#endif
    void *h = dlopen("libocloc.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libocloc.so.1", RTLD_NOW | RTLD_LOCAL);
    return h != NULL;
}

static inline int child_run(const char *env, const char *mode, const char *arg) {
    char cmd[1600];
    snprintf(cmd, sizeof cmd, "%s '%s' %s '%s'", env, exe, mode, arg);
    return system(cmd) == 0;
}

/* The fake loader (tests/c/fake_level_zero.c, named by the build) built into dir, with the
 * C compiler's `flags` (-D options for a variant). */
static inline int make_fake(const char *dir, const char *flags) {
    char cmd[1500];
    const char *cc = getenv("TACK_CC");
    snprintf(cmd, sizeof cmd, "%s -std=c11 -O1 -shared -fPIC %s -o '%s/libze_loader.so.1' '%s'", cc && *cc ? cc : "cc",
             flags, dir, TACK_FAKE_ZE_SRC);
    return system(cmd) == 0;
}

/* This program's path, for child_run and lzf_rerun (0: it cannot be read). */
static inline int lzf_init_exe(void) {
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return 0;
    exe[len] = 0;
    return 1;
}

/* The fake loader built into the fresh directory made from the mkdtemp template `dir`
 * (0: no directory or no C compiler). */
static inline int lzf_build(char *dir) { return mkdtemp(dir) && make_fake(dir, ""); }

/* This program run again, with the same arguments, under the fake loader in `dir`: first on
 * LD_LIBRARY_PATH, TACK_FAKE_ZE_DIR naming the directory and TACK_CACHE_DIR a cache in it.
 * Returns only when that fails. */
static inline int lzf_rerun(const char *dir, char **argv) {
    char cache[600], ld[1200];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    mkdir(cache, 0700);
    const char *old = getenv("LD_LIBRARY_PATH");
    snprintf(ld, sizeof ld, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
    setenv("LD_LIBRARY_PATH", ld, 1);
    setenv("TACK_FAKE_ZE_DIR", dir, 1);
    setenv("TACK_CACHE_DIR", cache, 1);
    fflush(stdout);
    execv("/proc/self/exe", argv);
    perror("execv");
    return 1;
}

/* The fake's directory (TACK_FAKE_ZE_DIR) removed, at the end of the run under it. */
static inline void lzf_remove(void) {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", getenv("TACK_FAKE_ZE_DIR"));
    if (system(cmd) != 0) fprintf(stderr, "could not remove the fake driver's directory\n");
}

#endif /* TACK_TEST_LEVEL_ZERO_FAKE_H */
