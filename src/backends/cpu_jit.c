/*
 * cpu_jit.c -- building and running kernels on the CPU.
 *
 * Build: the emitted C goes through the platform C compiler (TACK_CC,
 * default `cc`) into a shared library, which is loaded with dlopen.  Flags:
 * -O3 -march=native -fPIC -shared -fno-math-errno, fast-math flags only for
 * fast_math kernels, then TACK_CFLAGS.
 *
 * Disk cache: the library is kept under a key that hashes everything that
 * determines its contents -- the source, the dialect, the compiler's
 * identity (`cc --version`, asked once per process), the flags, the CPU
 * (because of -march=native), the ABI and Tack's version -- with two
 * independent 64-bit FNV-1a hashes.  The directory is TACK_CACHE_DIR, else
 * $XDG_CACHE_HOME/tack, else ~/.cache/tack.  Loading a library runs its
 * code, so a directory that is not ours or that group or others may write is
 * refused with an error that says so.  Entries are written to a unique
 * temporary name and renamed into place, so concurrent builders (threads or
 * processes) never see half a file; each library carries its own key as a
 * symbol, and an entry that does not load or whose key does not match
 * (truncated, corrupt, foreign) is rebuilt.
 *
 * Launch: the arguments are checked against the signature (dtype, ndim,
 * device, writability of the parameters the kernel writes) and packed as
 * tk_argv; the entry runs on the calling thread and hands each parallel loop
 * to the pool (pool.c) through tk_abi.  The per-launch context holds the
 * error record: the first failing check wins (an atomic flag), records its
 * site and operands, and every chunk stops at its next check of the flag.
 * The message is written after the launch from the site table.
 *
 * TACK_LOG=info logs each compile and cache load with its time to stderr.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/cpu_jit.h"
#include "backends/kcache.h"
#include "runtime/program.h"
#include "runtime/pool.h"

/* fast_math kernels get the parts of -ffast-math, not the flag itself: with
 * -ffast-math (or -funsafe-math-optimizations) on the link line, gcc and clang
 * link crtfastmath.o into the shared object, whose constructor turns on
 * flush-to-zero for the whole process the moment the kernel is loaded. */
#define FAST_MATH_FLAGS \
    " -fno-math-errno -fassociative-math -freciprocal-math -fno-signed-zeros -fno-trapping-math" \
    " -ffinite-math-only -ffp-contract=fast"

extern char **environ;

/* ------------------------------------------------- compiler identity */
static pthread_mutex_t ident_lock = PTHREAD_MUTEX_INITIALIZER;
static char ident_cc[512];        /* the TACK_CC the identity was computed for */
static char ident_text[1024];     /* first line of `cc --version` */
static hash2 ident_hash;
static int ident_ok;

static const char *cc_command(void) {
    const char *cc = getenv("TACK_CC");
    return cc && *cc ? cc : "cc";
}

/* Asking `cc --version` costs a process start (several milliseconds), which
 * would dominate the first call of a cached kernel in a new process.  So the
 * answer is remembered in the cache directory, keyed by the compiler
 * binary's resolved path, size, inode and modification time: a new or
 * upgraded compiler has a new key and is asked again. */
static int compiler_stamp(const char *cc, hash2 *k) {
    char found[1024];
    if (strpbrk(cc, " \t")) return 0; /* a command line ("ccache gcc"): always ask */
    if (strchr(cc, '/')) snprintf(found, sizeof found, "%s", cc);
    else {
        const char *path = getenv("PATH");
        int ok = 0;
        while (path && *path && !ok) {
            const char *end = strchr(path, ':');
            size_t len = end ? (size_t)(end - path) : strlen(path);
            snprintf(found, sizeof found, "%.*s/%s", (int)len, path, cc);
            ok = access(found, X_OK) == 0;
            path = end ? end + 1 : NULL;
        }
        if (!ok) return 0;
    }
    char real[PATH_MAX];
    struct stat sb;
    if (!realpath(found, real) || stat(real, &sb) != 0) return 0;
    long long fields[4] = {(long long)sb.st_size, (long long)sb.st_ino, (long long)sb.st_mtim.tv_sec,
                           (long long)sb.st_mtim.tv_nsec};
    kc_hash_str(k, real);
    kc_hash_add(k, fields, sizeof fields);
    return 1;
}

/* TACK_CC and TACK_CFLAGS as an argument vector: split at blanks, never
 * given to a shell.  The strings live in `buf` (tack_malloc'd, freed by the
 * caller with the vector). */
static char **split_command(const char *cc, const char *flags, int extra, char **buf_out) {
    size_t len = strlen(cc) + 1 + (flags ? strlen(flags) : 0) + 1;
    char *buf = tack_malloc(len);
    if (!buf) return NULL;
    snprintf(buf, len, "%s %s", cc, flags ? flags : "");
    int words = 0;
    for (char *p = buf; *p;) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) break;
        words++;
        while (*p && *p != ' ' && *p != '\t') p++;
    }
    char **argv = tack_calloc((size_t)words + (size_t)extra + 1, sizeof(char *));
    if (!argv) {
        tack_free(buf);
        return NULL;
    }
    int n = 0;
    for (char *p = buf; *p;) {
        while (*p == ' ' || *p == '\t') *p++ = 0;
        if (!*p) break;
        argv[n++] = p;
        while (*p && *p != ' ' && *p != '\t') p++;
    }
    *buf_out = buf;
    return argv;
}

/* Run argv without a shell (inside directory `dirfd`, or here when it is
 * -1), stdin from /dev/null, stdout and stderr together into out: the first
 * cap - 1 bytes, NUL-terminated (the rest is read and dropped, so the child
 * never blocks on a full pipe).  Returns 0 with the wait status in *status,
 * or the errno that kept it from running. */
static int spawn_output(char **argv, int dirfd, char *out, size_t cap, size_t *len, int *status) {
    int fds[2];
    *len = 0;
    out[0] = 0;
    if (pipe(fds) != 0) return errno;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    int rc = dirfd >= 0 ? posix_spawn_file_actions_addfchdir_np(&fa, dirfd) : 0;
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    if (rc == 0) rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return rc;
    }
    for (;;) {
        char chunk[512];
        ssize_t n = read(fds[0], chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        size_t keep = (size_t)n < cap - 1 - *len ? (size_t)n : cap - 1 - *len;
        memcpy(out + *len, chunk, keep);
        *len += keep;
    }
    out[*len] = 0;
    close(fds[0]);
    while (waitpid(pid, status, 0) < 0)
        if (errno != EINTR) return errno;
    return 0;
}

static int identity_load(const kc_dir *d, const char *memo, hash2 *h, char *text, size_t tn) {
    kc_entry e;
    const char *why;
    if (kc_read(d, memo, &e, &why) != 1) return 0;
    unsigned long long a, b;
    int used = 0;
    int ok = sscanf(e.data, "%llx %llx\n%n", &a, &b, &used) == 2 && used > 0;
    if (ok) {
        snprintf(text, tn, "%s", e.data + used);
        text[strcspn(text, "\n")] = 0;
        h->a = a;
        h->b = b;
    }
    kc_entry_free(&e);
    return ok;
}

static tack_status compiler_identity(const kc_dir *d, hash2 *out, char *first_line, size_t fl_len) {
    const char *cc = cc_command();
    char memo[64] = "";
    hash2 stamp = {0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL};
    pthread_mutex_lock(&ident_lock);
    if ((!ident_ok || strcmp(ident_cc, cc) != 0) && compiler_stamp(cc, &stamp)) {
        snprintf(memo, sizeof memo, "cc-%016llx.id", (unsigned long long)stamp.a);
        if (identity_load(d, memo, &ident_hash, ident_text, sizeof ident_text)) {
            snprintf(ident_cc, sizeof ident_cc, "%s", cc);
            ident_ok = 1;
            memo[0] = 0; /* nothing to write */
        }
    }
    if (!ident_ok || strcmp(ident_cc, cc) != 0) {
        hash2 h = {0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL};
        char *buf = NULL, text[4096] = "";
        size_t total = 0;
        int status = 0;
        char **argv = split_command(cc, "--version", 0, &buf);
        if (!argv || !argv[0] || spawn_output(argv, -1, text, sizeof text, &total, &status) != 0 ||
            !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            total = 0;
        tack_free(argv);
        tack_free(buf);
        kc_hash_add(&h, text, total); /* all of it at once: the hash must not depend on how reads split it */
        size_t k = strcspn(text, "\n");
        snprintf(ident_text, sizeof ident_text, "%.*s", (int)k, text);
        if (total == 0) {
            pthread_mutex_unlock(&ident_lock);
            return tack_set_error(TACK_ERR_RUNTIME,
                                  "the C compiler '%s' does not run (`%s --version` failed); install one or set TACK_CC "
                                  "(a command and its arguments, run without a shell)",
                                  cc, cc);
        }
        snprintf(ident_cc, sizeof ident_cc, "%s", cc);
        ident_hash = h;
        ident_ok = 1;
        if (memo[0]) { /* remember it; a failure to write only costs the next process a run */
            char line[64];
            snprintf(line, sizeof line, "%016llx %016llx\n", (unsigned long long)h.a, (unsigned long long)h.b);
            const char *parts[2] = {line, ident_text};
            kc_store(d, memo, parts, 2);
            tack_clear_error();
        }
    }
    *out = ident_hash;
    size_t n = strnlen(ident_text, fl_len - 1); /* a cut first line is fine for a log message */
    memcpy(first_line, ident_text, n);
    first_line[n] = 0;
    pthread_mutex_unlock(&ident_lock);
    return TACK_OK;
}

/* The CPU model matters because of -march=native. */
static void cpu_identity(hash2 *h) {
    struct utsname u;
    if (uname(&u) == 0) kc_hash_str(h, u.machine);
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[4096];
    int got = 0;
    while (got < 2 && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "model name", 10) || !strncmp(line, "flags", 5)) {
            kc_hash_str(h, line);
            got++;
        }
    }
    fclose(f);
}

/* ------------------------------------------------------------- cache */
/* The end of every generated file: the cache key, then compile-time checks
 * that the prelude's copy of the launch ABI (dialect_c.c) has the layout of
 * the structs in cpu_jit.h that this libtack was built with -- sizes and the
 * offset of every field -- so the two definitions cannot drift apart
 * silently: a mismatch is a C compile error that names the struct. */
static void abi_trailer(char *out, size_t cap, const char *key) {
#define TK_OFF(T, f) (size_t) offsetof(T, f)
    snprintf(out, cap,
             "\n__attribute__((visibility(\"default\"))) const char tack_cache_key[] = \"%s\";\n"
             "#define TK_ABI_MSG(s) s \": the layout in the generated code differs from libtack (cpu_jit.h)\"\n"
             "_Static_assert(sizeof(tk_argv) == %zu && __builtin_offsetof(tk_argv, shape) == %zu && "
             "__builtin_offsetof(tk_argv, s) == %zu, TK_ABI_MSG(\"tk_argv\"));\n"
             "_Static_assert(sizeof(tk_ctx) == %zu, TK_ABI_MSG(\"tk_ctx\"));\n"
             "_Static_assert(sizeof(tk_pv) == %zu && __builtin_offsetof(tk_pv, i) == %zu && __builtin_offsetof(tk_pv, u) == %zu && "
             "__builtin_offsetof(tk_pv, f) == %zu && __builtin_offsetof(tk_pv, s) == %zu, TK_ABI_MSG(\"tk_pv\"));\n"
             "_Static_assert(sizeof(tk_abi) == %zu && __builtin_offsetof(tk_abi, parallel_for) == %zu && "
             "__builtin_offsetof(tk_abi, fail) == %zu && __builtin_offsetof(tk_abi, print) == %zu && "
             "__builtin_offsetof(tk_abi, poll) == %zu, TK_ABI_MSG(\"tk_abi\"));\n",
             key, sizeof(tk_argv), TK_OFF(tk_argv, shape), TK_OFF(tk_argv, s), sizeof(tk_ctx), sizeof(tk_pv),
             TK_OFF(tk_pv, i), TK_OFF(tk_pv, u), TK_OFF(tk_pv, f), TK_OFF(tk_pv, s), sizeof(tk_abi),
             TK_OFF(tk_abi, parallel_for), TK_OFF(tk_abi, fail), TK_OFF(tk_abi, print), TK_OFF(tk_abi, poll));
#undef TK_OFF
}

/* Load a verified entry (kcache.c has checked its owner, mode and seal) and
 * check that it is the entry for `key`.  dlopen takes a path, and glibc
 * matches an already-loaded library by that name before anything else, so
 * /proc/self/fd/N (whose N is reused) cannot be the name.  The path is
 * opened only if it still names the very file whose seal was read; that
 * nobody else can swap it in between is the directory rules' guarantee. */
static int try_load(const kc_dir *d, const kc_entry *e, const char *name, const char *key, void **handle, void **entry) {
    struct stat a, b;
    if (fstat(e->fd, &a) != 0 || fstatat(d->fd, name, &b, AT_SYMLINK_NOFOLLOW) != 0 || a.st_dev != b.st_dev ||
        a.st_ino != b.st_ino)
        return 0;
    size_t n = strlen(d->path) + strlen(name) + 2;
    char *path = tack_malloc(n);
    if (!path) return 0;
    snprintf(path, n, "%s/%s", d->path, name);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    tack_free(path);
    if (!h) return 0;
    const char *k = dlsym(h, "tack_cache_key");
    void *fn = dlsym(h, "tack_entry");
    if (!k || !fn || strcmp(k, key) != 0) {
        dlclose(h);
        return 0;
    }
    *handle = h;
    *entry = fn;
    return 1;
}

/* Run the C compiler inside the cache directory (its working directory is
 * the descriptor kc_open checked; the names are relative), without a shell.
 * What it prints comes back through a pipe, not a file, so a full disk
 * cannot swallow the reason ("No space left on device").  A compiler killed
 * by SIGINT (Ctrl-C reaches the whole process group) is an interruption,
 * not a compile failure. */
static tack_status run_compiler(const kc_dir *d, const char *kernel, const char *flags, const char *src,
                                const char *out) {
    char *buf = NULL;
    char **argv = split_command(cc_command(), flags, 5, &buf);
    if (!argv) return tack_set_error(TACK_ERR_NOMEM, "out of memory compiling kernel '%s'", kernel);
    int argc = 0;
    while (argv[argc]) argc++;
    argv[argc++] = "-o";
    argv[argc++] = (char *)out;
    argv[argc++] = (char *)src;
    argv[argc++] = "-lm";
    argv[argc] = NULL;
    tack_status st = TACK_OK;
    char log[2000];
    size_t len = 0;
    int status = 0;
    int rc = spawn_output(argv, d->fd, log, sizeof log, &len, &status);
    if (rc != 0) {
        st = tack_set_error(TACK_ERR_RUNTIME, "cannot run the C compiler '%s': %s (set TACK_CC)", argv[0], strerror(rc));
        goto done;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) goto done;
    if (WIFSIGNALED(status) && (WTERMSIG(status) == SIGINT || WTERMSIG(status) == SIGTERM || WTERMSIG(status) == SIGHUP))
        st = tack_set_error(TACK_ERR_INTERRUPTED, "compiling kernel '%s' was interrupted (the C compiler got signal %d)",
                            kernel, WTERMSIG(status));
    else if (WIFSIGNALED(status))
        st = tack_set_error(TACK_ERR_RUNTIME, "the C compiler was killed by signal %d on kernel '%s' (source kept in %s/%s)\n%s",
                            WTERMSIG(status), kernel, d->path, src, log);
    else if (strstr(log, "No space left on device")) { /* the disk is full: keep nothing */
        unlinkat(d->fd, src, 0);
        unlinkat(d->fd, out, 0);
        st = tack_set_error(TACK_ERR_RUNTIME, "no space left on the device holding the kernel cache %s compiling kernel '%s':\n%s",
                            d->path, kernel, log);
    } else
        st = tack_set_error(TACK_ERR_RUNTIME, "the C compiler failed on kernel '%s' (source kept in %s/%s):\n%s", kernel,
                            d->path, src, log);
done:
    tack_free(argv);
    tack_free(buf);
    return st;
}

/* The cache entry `name` loaded for `key`: 1 loaded, 0 not there (or
 * unusable: removed, so the caller rebuilds it). */
static int load_entry(const kc_dir *d, const char *name, const char *key, const char *kernel, void **handle,
                      void **entry) {
    kc_entry e;
    const char *why = NULL;
    int r = kc_read(d, name, &e, &why);
    if (r < 0 && kc_log_info())
        fprintf(stderr, "tack: cache entry %s/%s for kernel '%s' is %s; rebuilding it\n", d->path, name, kernel, why);
    if (r != 1) return 0;
    int ok = try_load(d, &e, name, key, handle, entry);
    kc_entry_free(&e);
    if (!ok) {
        if (kc_log_info()) fprintf(stderr, "tack: cache entry %s/%s does not load; rebuilding it\n", d->path, name);
        unlinkat(d->fd, name, 0);
    }
    return ok;
}

static tack_status build_in(const kc_dir *d, tack_program *p, double t0) {
    hash2 ident;
    char first_line[256];
    tack_status st = compiler_identity(d, &ident, first_line, sizeof first_line);
    if (st != TACK_OK) return st;

    const char *extra = getenv("TACK_CFLAGS");
    size_t flen = 300 + (extra ? strlen(extra) : 0);
    char *flags = tack_malloc(flen);
    if (!flags) return tack_set_error(TACK_ERR_NOMEM, "out of memory compiling kernel '%s'", p->kernel_name);
    snprintf(flags, flen, "-O3 -march=native -fPIC -shared -std=gnu11 -w -fvisibility=hidden -fno-math-errno -fopenmp-simd%s %s",
             p->fast_math ? FAST_MATH_FLAGS : " -ffp-contract=off", extra ? extra : "");

    hash2 h = TACK_HASH2_INIT;
    kc_hash_str(&h, p->source);
    kc_hash_str(&h, p->dialect);
    kc_hash_add(&h, &ident, sizeof ident);
    kc_hash_str(&h, flags);
    kc_hash_str(&h, TACK_VERSION_STRING);
    char abi[16];
    snprintf(abi, sizeof abi, "abi%d", TK_CPU_ABI_VERSION);
    kc_hash_str(&h, abi);
    cpu_identity(&h);
    char key[40], name[64];
    snprintf(key, sizeof key, "%016llx%016llx", (unsigned long long)h.a, (unsigned long long)h.b);
    snprintf(name, sizeof name, "%s.so", key);
    void *handle = NULL, *entry = NULL;
    if (load_entry(d, name, key, p->kernel_name, &handle, &entry)) {
        if (kc_log_info())
            fprintf(stderr, "tack: loaded kernel '%s' from the cache in %.2f ms (%s/%s)\n", p->kernel_name,
                    kc_now_ms() - t0, d->path, name);
        goto loaded;
    }

    /* Compile into unique temporaries, then seal and rename into place. */
    char src[96], tmp[96], keep[64];
    kc_tmp_name(src, sizeof src, key, ".c");
    kc_tmp_name(tmp, sizeof tmp, key, ".so.tmp");
    char trailer[1600];
    abi_trailer(trailer, sizeof trailer, key);
    const char *parts[2] = {p->source, trailer};
    st = kc_write_new(d, src, parts, 2);
    if (st == TACK_OK) st = run_compiler(d, p->kernel_name, flags, src, tmp);
    if (st != TACK_OK) {
        unlinkat(d->fd, tmp, 0);
        if (st != TACK_ERR_RUNTIME) unlinkat(d->fd, src, 0); /* kept only for a compile failure to read */
        goto out;
    }
    st = kc_seal(d, tmp, name);
    snprintf(keep, sizeof keep, "%s.c", key);
    if (st != TACK_OK || renameat(d->fd, src, d->fd, keep) != 0) unlinkat(d->fd, src, 0);
    if (st != TACK_OK) goto out;
    if (!load_entry(d, name, key, p->kernel_name, &handle, &entry)) {
        const char *why = dlerror();
        st = tack_set_error(TACK_ERR_RUNTIME, "cannot load the compiled kernel '%s' from %s/%s: %s", p->kernel_name,
                            d->path, name, why ? why : "tack_entry or tack_cache_key missing");
        goto out;
    }
    if (kc_log_info())
        fprintf(stderr, "tack: compiled kernel '%s' in %.1f ms with %s (%s/%s)\n", p->kernel_name, kc_now_ms() - t0,
                first_line, d->path, name);
loaded:
    p->handle = handle;
    p->entry = entry;
out:
    tack_free(flags);
    return st;
}

tack_status cpu_build(tack_device *dev, tack_program *p) {
    (void)dev;
    double t0 = kc_now_ms();
    kc_dir d;
    tack_status st = kc_open(&d);
    if (st != TACK_OK) return st;
    st = build_in(&d, p, t0);
    kc_close(&d);
    return st;
}

void cpu_unload(tack_device *dev, tack_program *p) {
    if (p->handle) dlclose(p->handle);
    p->handle = NULL;
    p->entry = NULL;
}

/* ------------------------------------------------------------ launch */
typedef struct launch_ctx {
    tk_ctx head;      /* must stay first: the generated code reads head.failed */
    int site;
    int64_t a, b;
    rt_watch watch;   /* tack_interrupt() as this launch sees it */
} launch_ctx;

static void abi_fail(tk_ctx *ctx, int site, int64_t a, int64_t b);

/* The pool's stop test and abi->poll: an interrupt becomes the launch's
 * failure (unless a check failed first); any failure stops the rest. */
static int launch_stop(void *arg) {
    launch_ctx *l = arg;
    if (rt_watch_poll(&l->watch)) abi_fail(&l->head, TK_SITE_INTERRUPT, 0, 0);
    return __atomic_load_n(&l->head.failed, __ATOMIC_RELAXED);
}

static int abi_poll(tk_ctx *ctx) { return launch_stop(ctx); }

static void abi_parallel_for(tk_ctx *ctx, tk_body fn, void *frame, int64_t n, int64_t min_parallel) {
    launch_ctx *l = (launch_ctx *)ctx;
    pool_run(fn, frame, n, min_parallel, l->watch.on ? launch_stop : NULL, l);
}

static void abi_fail(tk_ctx *ctx, int site, int64_t a, int64_t b) {
    launch_ctx *l = (launch_ctx *)ctx;
    int expected = 0;
    if (__atomic_compare_exchange_n(&l->head.failed, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        l->site = site;
        l->a = a;
        l->b = b;
    }
}

static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

static void fmt_float(char *out, size_t n, double v, int f32) {
    if (v != v) {
        snprintf(out, n, "nan");
        return;
    }
    if (v == __builtin_inf() || v == -__builtin_inf()) {
        snprintf(out, n, "%sinf", v < 0 ? "-" : "");
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, n, "%.*g", prec, v);
        double back = strtod(out, NULL);
        if (f32 ? (float)back == (float)v : back == v) break;
    }
    if (!strpbrk(out, ".en")) strncat(out, ".0", n - strlen(out) - 1);
}

/* print(...) from a kernel: one line, written whole (no length limit) under
 * a lock, so lines from parallel iterations never interleave. */
static void abi_print(tk_ctx *ctx, const tk_pv *v, int n) {
    (void)ctx;
    pthread_mutex_lock(&print_lock);
    for (int i = 0; i < n; i++) {
        char item[64];
        const char *s = item;
        switch (v[i].kind) {
        case 0: s = v[i].s ? v[i].s : ""; break;
        case 1: s = v[i].i ? "True" : "False"; break;
        case 2: snprintf(item, sizeof item, "%lld", (long long)v[i].i); break;
        case 3: snprintf(item, sizeof item, "%llu", (unsigned long long)v[i].u); break;
        default: fmt_float(item, sizeof item, v[i].f, v[i].kind == 4); break;
        }
        if (i) fputc(' ', stdout);
        fputs(s, stdout);
    }
    fputc('\n', stdout);
    fflush(stdout);
    pthread_mutex_unlock(&print_lock);
}

static const tk_abi cpu_abi = {TK_CPU_ABI_VERSION, abi_parallel_for, abi_fail, abi_print, abi_poll};


tack_status cpu_launch(tack_device *dev, tack_program *p, const tack_arg *args, int nargs) {
    if (!p->entry) return tack_set_error(TACK_ERR_VALUE, "kernel '%s' is not built", p->kernel_name);
    tk_argv stackv[16];
    tk_argv *v = stackv;
    if (nargs > 16) {
        v = tack_calloc((size_t)nargs, sizeof *v);
        if (!v) return tack_set_error(TACK_ERR_NOMEM, "out of memory launching kernel '%s'", p->kernel_name);
    }
    tack_status st = TACK_OK;
    for (int i = 0; i < nargs; i++) {
        const tk_pinfo *pi = &p->params[i];
        memset(&v[i], 0, sizeof v[i]);
        if (!pi->is_array) {
            v[i].s.i = args[i].scalar.i;
            v[i].s.u = args[i].scalar.u;
            if (tack_dtype_get(pi->dtype)->kind == TACK_KIND_FLOAT) v[i].s.f = args[i].scalar.f;
            continue;
        }
        tack_array *a = args[i].array; /* checked by tack_launch (driver.c) */
        v[i].data = tack_array_data(a);
        const int64_t *shape = tack_array_shape(a);
        for (int k = 0; k < pi->ndim; k++) v[i].shape[k] = shape[k];
    }
    launch_ctx l;
    memset(&l, 0, sizeof l);
    l.site = -1;
    rt_watch_begin(&l.watch);
    ((tk_entry_fn)p->entry)(nargs ? v : NULL, &cpu_abi, &l.head); /* a kernel of no arguments reads none */
    if (__atomic_load_n(&l.head.failed, __ATOMIC_ACQUIRE)) st = tk_site_error(p, l.site, l.a, l.b);
    if (v != stackv) tack_free(v);
    return st;
}
