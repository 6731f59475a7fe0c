/*
 * posix.c -- the platform layer on Linux and macOS: threads, the clock,
 * the machine, dynamic loading and the environment (platform.h).
 *
 * The lock and condition calls are inline in platform.h; what is here is
 * what needs more than one call or differs between the two systems: the
 * usable cores (Linux counts the affinity mask, so a process pinned by
 * taskset or a batch system's cgroup starts as many workers as it may run;
 * macOS has no affinity and counts the online cores), the processor's
 * model (sysctl on macOS; Linux reads /proc/cpuinfo in the backend),
 * the file a loaded library came from (dlinfo on Linux, the image list on
 * macOS), and the modification time's nanoseconds, which the two name
 * differently.
 */
#include "platform/platform.h"

#if TK_POSIX
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <link.h>
#include <sched.h>
#endif
#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif
#if TK_MACOS
#include <mach-o/dyld.h>
#include <sys/sysctl.h>
#endif

int tk_thread_start(void *(*fn)(void *), void *arg) {
    pthread_attr_t attr;
    pthread_t th;
    if (pthread_attr_init(&attr) != 0) return -1;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&th, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return rc;
}

void tk_atfork_child(void (*child)(void)) { pthread_atfork(NULL, NULL, child); }

int tk_cpu_count(void) {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
#endif
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c > 0 ? (int)c : 1;
}

void tk_advise_huge_pages(void *p, size_t n) {
#ifdef MADV_HUGEPAGE
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return;
    uintptr_t lo = ((uintptr_t)p + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    uintptr_t hi = ((uintptr_t)p + n) & ~((uintptr_t)page - 1);
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}

uint64_t tk_physical_memory(void) {
#if TK_MACOS
    uint64_t mem = 0;
    size_t len = sizeof mem;
    return sysctlbyname("hw.memsize", &mem, &len, NULL, 0) == 0 ? mem : 0;
#else
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
#endif
}

int tk_machine(char *out, size_t cap) {
    struct utsname u;
    if (uname(&u) != 0) return -1;
    snprintf(out, cap, "%s", u.machine);
    return 0;
}

int tk_cpu_brand(char *out, size_t cap) {
#if TK_MACOS
    size_t len = cap;
    if (cap && sysctlbyname("machdep.cpu.brand_string", out, &len, NULL, 0) == 0) {
        out[cap - 1] = 0;
        return 0;
    }
#else
    (void)out;
    (void)cap;
#endif
    return -1;
}

long tk_getpid(void) { return (long)getpid(); }

int tk_signal_is_interrupt(int sig) { return sig == SIGINT || sig == SIGTERM || sig == SIGHUP; }

/* ---------------------------------------------------------------- time */
int64_t tk_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t tk_thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t tk_wall_s(void) { return (int64_t)time(NULL); }

int tk_sleep_ns(int64_t ns) {
    struct timespec nap = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    return nanosleep(&nap, NULL) == 0 ? 0 : -1;
}

/* ---------------------------------------------------- dynamic loading */
void *tk_dl_open(const char *path, int flags) {
    return dlopen(path, ((flags & TK_DL_LAZY) ? RTLD_LAZY : RTLD_NOW) | RTLD_LOCAL);
}

void *tk_dl_sym(void *lib, const char *name) { return dlsym(lib, name); }
void tk_dl_close(void *lib) { dlclose(lib); }
const char *tk_dl_error(void) { return dlerror(); }

int tk_dl_path(void *lib, const void *addr, char *out, size_t cap) {
    if (!cap) return -1;
    out[0] = 0;
    if (!lib) {
        Dl_info info;
        if (!dladdr(addr, &info) || !info.dli_fname) return -1;
        snprintf(out, cap, "%s", info.dli_fname);
        return 0;
    }
#if defined(__linux__)
    struct link_map *map = NULL;
    if (dlinfo(lib, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name) return -1;
    snprintf(out, cap, "%s", map->l_name);
    return 0;
#elif TK_MACOS
    /* No dlinfo: the loaded image whose own dlopen (RTLD_NOLOAD, which
     * only looks) gives this handle back. */
    for (uint32_t i = 0, n = _dyld_image_count(); i < n; i++) {
        const char *name = _dyld_get_image_name(i);
        void *h = name ? dlopen(name, RTLD_NOLOAD | RTLD_LAZY) : NULL;
        if (!h) continue;
        dlclose(h);
        if (h == lib) {
            snprintf(out, cap, "%s", name);
            return 0;
        }
    }
    return -1;
#else
    return -1;
#endif
}

/* ---------------------------------------------------------- environment */
const char *tk_temp_dir(void) {
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

int tk_path_is_absolute(const char *path) { return path && path[0] == '/'; }

int tk_is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int tk_is_program(char *path, size_t cap) {
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || access(path, X_OK) != 0) return 0;
    if (path[0] == '/') return 1;
    char cwd[PATH_MAX];
    size_t n = strlen(path);
    if (!getcwd(cwd, sizeof cwd)) return 0;
    size_t c = strlen(cwd);
    if (c + 1 + n + 1 > cap) return 0;
    memmove(path + c + 1, path, n + 1);
    memcpy(path, cwd, c);
    path[c] = '/';
    return 1;
}

int tk_program_stamp(const char *path, char *real, size_t cap, long long fields[4]) {
    char buf[PATH_MAX];
    struct stat sb;
    if (!realpath(path, buf) || stat(buf, &sb) != 0) return -1;
    snprintf(real, cap, "%s", buf);
#if TK_MACOS
    long long sec = (long long)sb.st_mtimespec.tv_sec, nsec = (long long)sb.st_mtimespec.tv_nsec;
#else
    long long sec = (long long)sb.st_mtim.tv_sec, nsec = (long long)sb.st_mtim.tv_nsec;
#endif
    fields[0] = (long long)sb.st_size;
    fields[1] = (long long)sb.st_ino;
    fields[2] = sec;
    fields[3] = nsec;
    return 0;
}

const char *tk_glibc_version(void) {
#if defined(__GLIBC__)
    return gnu_get_libc_version();
#else
    return "";
#endif
}

#else
typedef int tk_posix_unused; /* ISO C wants something in a translation unit */
#endif
