/*
 * cpu_jit.c -- building and running kernels on the CPU.
 *
 * Build: the emitted C goes through a C compiler (the first of TACK_CC, CC,
 * cc/gcc/clang on PATH, the ziglang wheel's `zig cc`: see "compiler choice"
 * below) into a shared library, which is loaded with dlopen.  Flags:
 * -O3 -march=native -fPIC -shared -fno-math-errno, fast-math flags only for
 * fast_math kernels, -DTK_VMATH=N where glibc's vector math is used (below,
 * "vector math"), then TACK_CFLAGS.
 *
 * Disk cache: the library is kept under a key that hashes everything that
 * determines its contents -- the source, the dialect, the compiler's
 * identity (`cc --version`, remembered per compiler binary), the flags, the CPU
 * (because of -march=native), the ABI and Tack's version -- with two
 * independent 64-bit FNV-1a hashes.  The directory is TACK_CACHE_DIR, else
 * $XDG_CACHE_HOME/tack, else ~/.cache/tack.  Loading a library runs its
 * code, so a directory that is not ours or that group or others may write is
 * refused with an error that says so.  Entries are written to a unique
 * temporary name and renamed into place, so concurrent builders (threads or
 * processes) never see half a file; each library carries its own key as a
 * symbol, and an entry that does not load or whose key does not match
 * (truncated, corrupt, foreign) is rebuilt.  Beside the entries, a record
 * per kernel says which compiler's identity built it, so that a process
 * with no compiler at all still loads the kernels already built.
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
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"

#include "backends/cpu/cpu_jit.h"
#include "runtime/races.h"
#include "backends/common/kcache.h"
#include "runtime/program.h"
#include "runtime/pool.h"
#include "runtime/config.h"

/* fast_math kernels get the parts of -ffast-math, not the flag itself: with
 * -ffast-math (or -funsafe-math-optimizations) on the link line, gcc and clang
 * link crtfastmath.o into the shared object, whose constructor turns on
 * flush-to-zero for the whole process the moment the kernel is loaded. */
#define FAST_MATH_FLAGS \
    " -fno-math-errno -fassociative-math -freciprocal-math -fno-signed-zeros -fno-trapping-math" \
    " -ffinite-math-only -ffp-contract=fast"

/* ------------------------------------------------- compiler choice */
/* Which C compiler builds kernels is decided at every build, from the
 * environment as it is then, in this order:
 *
 *   1. TACK_CC, a command line split at blanks ("ccache gcc", "clang -g");
 *   2. CC, the same, as build tools read it;
 *   3. cc, gcc, clang: the first of them found on PATH;
 *   4. TACK_ZIG, a zig binary (its path taken whole), run as `zig cc`: clang
 *      with the C library headers it needs, which pip installs (the ziglang
 *      wheel, Tack's `compiler` extra).  The Python package sets TACK_ZIG at
 *      import when that wheel is installed and the variable is unset.
 *
 * A TACK_CC or CC whose program is not there is an error that names it, not
 * a reason to try the next: somebody asked for that compiler.  The program
 * is looked up here and run by the path found, so what runs is what was
 * looked up (a search by exec would happen again, from inside the cache
 * directory).  When no compiler is found at all, a kernel already in the
 * cache still loads -- which compiler built each entry is recorded beside
 * it (build_in) -- and a new one fails with an error that names the
 * choices. */
typedef struct cc_pick {
    const char *line;    /* TACK_CC, CC or the name found on PATH; NULL for zig */
    const char *rest;    /* what follows the program in `line`: its arguments */
    const char *from;    /* "TACK_CC", "CC", "PATH" or "TACK_ZIG", for messages */
    int zig;             /* run as `path cc ...` */
    char path[PATH_MAX]; /* the program, as found */
    char setting[TK_CONFIG_STR_MAX]; /* the cc setting's text, which `line` may point into */
} cc_pick;

/* `path` names an executable regular file; a relative path is made absolute
 * (the compiler runs inside the cache directory, where it would name
 * something else).  Not resolved further: a compiler may be a symbolic link
 * whose name matters (ccache's "gcc"). */
static int is_program(char *path, size_t cap) { return tk_is_program(path, cap); }

/* Find the program named by the first `len` bytes of `name` as execvp
 * would: a name with a slash as it is, else in each directory of PATH (when
 * PATH is unset, /bin:/usr/bin, as glibc's execvp does).  Empty entries of
 * PATH, which mean the working directory, are skipped. */
static int find_program(const char *name, size_t len, char *out, size_t cap) {
    if (len == 0 || len >= cap) return 0;
    if (memchr(name, '/', len) || (TK_PATH_SEP != '/' && memchr(name, TK_PATH_SEP, len))) {
        snprintf(out, cap, "%.*s", (int)len, name);
        return is_program(out, cap);
    }
    const char *path = getenv("PATH");
    if (!path) path = TK_DEFAULT_PATH;
    while (*path) {
        const char *end = strchr(path, TK_PATH_LIST_SEP);
        size_t dl = end ? (size_t)(end - path) : strlen(path);
        if (dl > 0 && dl + 1 + len < cap) {
            snprintf(out, cap, "%.*s%c%.*s", (int)dl, path, TK_PATH_SEP, (int)len, name);
            if (is_program(out, cap)) return 1;
        }
        if (!end) break;
        path = end + 1;
    }
    return 0;
}

/* The compiler to use: 1 found, 0 none found (no error set), or -1 with the
 * error set when TACK_CC or CC names a program that is not there. */
static int pick_compiler(cc_pick *c) {
    static const char *const vars[2] = {"TACK_CC", "CC"};
    static const char *const names[3] = {"cc", "gcc", "clang"};
    memset(c, 0, sizeof *c);
    for (int i = 0; i < 2; i++) { /* the cc setting (config.def), then the C convention's CC */
        const char *line = i == 0 ? tk_config_str(TK_CFG_CC, c->setting, sizeof c->setting) : getenv(vars[i]);
        const char *w = line;
        if (!line) continue;
        w += strspn(w, " \t");
        size_t n = strcspn(w, " \t");
        if (n == 0) continue; /* set, but blank: as if unset */
        c->line = line;
        c->rest = w + n;
        c->from = vars[i];
        if (find_program(w, n, c->path, sizeof c->path)) return 1;
        tack_set_error(TACK_ERR_RUNTIME,
                       "the C compiler '%s' (%s) does not run: %s '%.*s'; set %s to a C compiler (a command and its "
                       "arguments, run without a shell), or unset it to let Tack look for one",
                       line, vars[i], memchr(w, '/', n) ? "there is no program" : "no program on PATH is named", (int)n, w,
                       vars[i]);
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        if (find_program(names[i], strlen(names[i]), c->path, sizeof c->path)) {
            c->line = names[i];
            c->rest = "";
            c->from = "PATH";
            return 1;
        }
    }
    const char *zig = tk_config_str(TK_CFG_ZIG, c->setting, sizeof c->setting);
    if (*zig && find_program(zig, strlen(zig), c->path, sizeof c->path)) {
        c->rest = "";
        c->from = "TACK_ZIG";
        c->zig = 1;
        return 1;
    }
    return 0;
}

static tack_status no_compiler(const char *kernel) {
    char zig[TK_CONFIG_STR_MAX];
    int bad_zig = *tk_config_str(TK_CFG_ZIG, zig, sizeof zig) != 0;
    return tack_set_error(TACK_ERR_RUNTIME,
                          "no C compiler to build kernel '%s' for the CPU%s%s%s: Tack looks at TACK_CC, then CC, then "
                          "for cc, gcc and clang on PATH, then at TACK_ZIG (the ziglang wheel's zig). Set TACK_CC to "
                          "a C compiler, install cc (gcc or clang), or `pip install ziglang` (the `compiler` extra), "
                          "whose clang Tack then finds by itself",
                          kernel, bad_zig ? " (TACK_ZIG names '" : "", bad_zig ? zig : "",
                          bad_zig ? "', which is not a program)" : "");
}

/* The compiler's argument vector: its program, `cc` for zig, the arguments
 * that came with it, then `flags`, split at blanks and never given to a
 * shell, with room for `extra` more and the NULL.  The words live in
 * *buf_out (tack_malloc'd, freed by the caller with the vector). */
static char **cc_argv(const cc_pick *c, const char *flags, int extra, char **buf_out) {
    size_t len = strlen(c->rest) + 1 + (flags ? strlen(flags) : 0) + 1;
    char *buf = tack_malloc(len);
    if (!buf) return NULL;
    snprintf(buf, len, "%s %s", c->rest, flags ? flags : "");
    int words = 0;
    for (char *p = buf; *p;) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) break;
        words++;
        while (*p && *p != ' ' && *p != '\t') p++;
    }
    char **argv = tack_calloc((size_t)words + 2 + (size_t)extra + 1, sizeof(char *));
    if (!argv) {
        tack_free(buf);
        return NULL;
    }
    int n = 0;
    argv[n++] = (char *)c->path;
    if (c->zig) argv[n++] = "cc";
    for (char *p = buf; *p;) {
        while (*p == ' ' || *p == '\t') *p++ = 0;
        if (!*p) break;
        argv[n++] = p;
        while (*p && *p != ' ' && *p != '\t') p++;
    }
    *buf_out = buf;
    return argv;
}

/* The compiler as the user would write it, for messages. */
#define CC_SHOWN(c) ((c)->zig ? (c)->path : (c)->line), ((c)->zig ? " cc" : "")

/* ------------------------------------------------- compiler identity */
static tk_mutex_t ident_lock = TK_MUTEX_INIT;
static hash2 ident_of;            /* which command the identity was computed for */
static char ident_text[1024];     /* first line of `cc --version` */
static hash2 ident_hash;
static int ident_ok;

static hash2 pick_hash(const cc_pick *c) {
    hash2 h = TACK_HASH2_INIT;
    kc_hash_str(&h, c->zig ? "zig cc" : "command");
    kc_hash_str(&h, c->path);
    kc_hash_str(&h, c->rest);
    return h;
}

/* Asking `cc --version` costs a process start (several milliseconds), which
 * would dominate the first call of a cached kernel in a new process.  So the
 * answer is remembered in the cache directory, keyed by the compiler
 * binary's resolved path, size, inode and modification time: a new or
 * upgraded compiler has a new key and is asked again. */
static int compiler_stamp(const cc_pick *c, hash2 *k) {
    if (c->rest[strspn(c->rest, " \t")]) return 0; /* a command line ("ccache gcc"): always ask */
    char real[PATH_MAX];
    long long fields[4];
    if (tk_program_stamp(c->path, real, sizeof real, fields) != 0) return 0;
    kc_hash_str(k, real);
    kc_hash_add(k, fields, sizeof fields);
    if (c->zig) kc_hash_str(k, "zig cc");
    return 1;
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

static tack_status compiler_identity(const kc_dir *d, const cc_pick *c, hash2 *out, char *first_line, size_t fl_len) {
    hash2 of = pick_hash(c);
    char memo[64] = "";
    hash2 stamp = {0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL};
    tk_mutex_lock(&ident_lock);
    int known = ident_ok && ident_of.a == of.a && ident_of.b == of.b;
    if (!known && d->fd != TK_NO_FD && compiler_stamp(c, &stamp)) { /* fd -1: no usable cache, nothing remembered */
        snprintf(memo, sizeof memo, "cc-%016llx.id", (unsigned long long)stamp.a);
        if (identity_load(d, memo, &ident_hash, ident_text, sizeof ident_text)) {
            ident_of = of;
            ident_ok = known = 1;
            memo[0] = 0; /* nothing to write */
        }
    }
    if (!known) {
        hash2 h = {0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL};
        char *buf = NULL, text[4096] = "";
        size_t total = 0;
        int status = 0;
        char **argv = cc_argv(c, "--version", 0, &buf);
        if (!argv || tk_spawn_guarded(argv, TK_NO_FD, text, sizeof text, &total, &status, 0) != 0 ||
            !TK_STATUS_OK(status))
            total = 0;
        tack_free(argv);
        tack_free(buf);
        kc_hash_add(&h, text, total); /* all of it at once: the hash must not depend on how reads split it */
        size_t k = strcspn(text, "\n");
        snprintf(ident_text, sizeof ident_text, "%.*s", (int)k, text);
        if (total == 0) {
            ident_ok = 0;
            tk_mutex_unlock(&ident_lock);
            return tack_set_error(TACK_ERR_RUNTIME,
                                  "the C compiler '%s%s' (%s) does not run (`%s%s --version` failed); install one or set "
                                  "TACK_CC (a command and its arguments, run without a shell)",
                                  CC_SHOWN(c), c->from, CC_SHOWN(c));
        }
        ident_of = of;
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
    tk_mutex_unlock(&ident_lock);
    return TACK_OK;
}

/* For diagnostics (tack.h; `python -m tack`): the compiler a build would
 * choose now, by pick_compiler itself, and the first line of its --version
 * as the cache key uses it (remembered in the cache when the cache directory
 * exists and can be opened; asked afresh when it cannot, so a refused cache
 * directory does not hide the compiler, and a report creates no directory). */
int tack_cpu_compiler(char *command, size_t cap, char *version, size_t vcap, const char **from) {
    if (command && cap) command[0] = 0;
    if (version && vcap) version[0] = 0;
    if (from) *from = NULL;
    cc_pick c;
    int found = pick_compiler(&c);
    if (found <= 0) return found;
    if (command && cap) snprintf(command, cap, "%s%s%s", c.path, c.zig ? " cc" : "", c.rest);
    if (from) *from = c.from;
    kc_dir d;
    char dir[PATH_MAX];
    int usable = tack_cache_path(dir, sizeof dir) == TACK_OK && tk_is_dir(dir);
    if (!usable || kc_open(&d) != TACK_OK) { /* a report creates no cache directory */
        tack_clear_error();
        d.fd = TK_NO_FD;
        d.path = NULL;
    }
    hash2 ident;
    char first[256];
    tack_status st = compiler_identity(&d, &c, &ident, first, sizeof first);
    if (d.fd != TK_NO_FD) kc_close(&d);
    if (st != TACK_OK) return -1;
    if (version && vcap) snprintf(version, vcap, "%s", first);
    return 1;
}

/* The CPU model matters because of -march=native.  Read once per process
 * (a key is computed twice for a kernel whose compiler is recorded). */
static tk_once_t cpu_once = TK_ONCE_INIT;
static char cpu_machine[65];
static char cpu_lines[2][4096];
static int cpu_uname_ok, cpu_nlines;

static void cpu_read(void) {
    if (tk_machine(cpu_machine, sizeof cpu_machine) == 0) cpu_uname_ok = 1;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) { /* macOS, Windows: the model as the system says it */
        if (tk_cpu_brand(cpu_lines[0], sizeof cpu_lines[0]) == 0) cpu_nlines = 1;
        return;
    }
    while (cpu_nlines < 2 && fgets(cpu_lines[cpu_nlines], sizeof cpu_lines[0], f)) {
        const char *line = cpu_lines[cpu_nlines];
        if (!strncmp(line, "model name", 10) || !strncmp(line, "flags", 5)) cpu_nlines++;
    }
    fclose(f);
}

static void cpu_identity(hash2 *h) {
    tk_once(&cpu_once, cpu_read);
    if (cpu_uname_ok) kc_hash_str(h, cpu_machine);
    for (int i = 0; i < cpu_nlines; i++) kc_hash_str(h, cpu_lines[i]);
}

/* ------------------------------------------------- vector math */
/* Calls of exp, log, tanh, ... run in SIMD lanes through glibc's libmvec
 * (docs/design/decisions.md, "Vector math"): on by default where the library
 * is there -- x86-64 glibc whose libmvec.so.1 this process can load -- and
 * off with TACK_VECTOR_MATH=0.  The choice reaches the build as -DTK_VMATH=N
 * among the flags, N the minor version of the glibc this process runs (the
 * prelude declares the vector variants that release has; it includes no
 * header that would say it) or 0 for off, so it is part of the cache key;
 * what GCC needs is in the prelude (dialect_c.c), clang needs -fveclib=libmvec on its command line
 * (clang 12 and later know it; zig cc is a recent clang).  The link names
 * -lmvec after -lm (as needed: a kernel without vector calls does not load
 * it): glibc's libm.so is a linker script that brings libmvec in, but zig
 * cc's own glibc stubs (its choice when it cannot see the system's) have no
 * such script, and the library would load with an undefined _ZGV symbol.
 * The loader probe is done once per process. */
static tk_once_t mvec_once = TK_ONCE_INIT;
static int mvec_there; /* glibc's minor version where libmvec loads (99 past 2.x), else 0 */

static void mvec_probe(void) {
#if defined(__x86_64__) && defined(__GLIBC__)
    void *h = tk_dl_open("libmvec.so.1", TK_DL_LAZY);
    if (h) {
        int major = 0, minor = 0;
        if (sscanf(tk_glibc_version(), "%d.%d", &major, &minor) == 2 && major >= 2)
            mvec_there = major > 2 ? 99 : minor > 0 ? minor : 1;
        tk_dl_close(h);
    } else
        (void)tk_dl_error(); /* not a failure: no vector math */
#endif
}

/* glibc's minor version (>= 1) on, 0 off, -1 a bad TACK_* variable,
 * TACK_VECTOR_MATH=fast say (the error names it). */
static int vector_math(void) {
    if (tk_config_env_check() != TACK_OK) return -1;
    if (!tk_config_int(TK_CFG_VECTOR_MATH)) return 0;
    tk_once(&mvec_once, mvec_probe);
    return mvec_there;
}

/* The compiler's flag for vector math, by the first line of its --version:
 * clang's, or NULL (GCC reads the prelude's declarations). */
static const char *veclib_flag(const char *first_line) {
    const char *c = strstr(first_line, "clang version ");
    return c && atoi(c + 14) >= 12 ? "-fveclib=libmvec" : NULL;
}

/* ------------------------------------------------------------- cache */
/* The end of every generated file: the cache key, then compile-time checks
 * that the prelude's launch ABI (dialect_c.c pastes in runtime/cpu_abi.h's
 * text) has, under the C compiler that builds the kernel, the layout that
 * this libtack was built with -- sizes and the offset of every field -- so
 * two compilers that lay the structs out differently cannot misread each
 * other silently: a mismatch is a C compile error that names the struct. */
static void abi_trailer(char *out, size_t cap, const char *key) {
#define TK_OFF(T, f) (size_t) offsetof(T, f)
    snprintf(out, cap,
             "\n__attribute__((visibility(\"default\"))) const char tack_cache_key[] = \"%s\";\n"
             "#define TK_ABI_MSG(s) s \": the layout in the generated code differs from libtack (runtime/cpu_abi.h)\"\n"
             "_Static_assert(sizeof(tk_argv) == %zu && __builtin_offsetof(tk_argv, shape) == %zu && "
             "__builtin_offsetof(tk_argv, s) == %zu, TK_ABI_MSG(\"tk_argv\"));\n"
             "_Static_assert(sizeof(tk_ctx) == %zu, TK_ABI_MSG(\"tk_ctx\"));\n"
             "_Static_assert(sizeof(tk_pv) == %zu && __builtin_offsetof(tk_pv, i) == %zu && __builtin_offsetof(tk_pv, u) == %zu && "
             "__builtin_offsetof(tk_pv, f) == %zu && __builtin_offsetof(tk_pv, s) == %zu && __builtin_offsetof(tk_pv, im) == %zu, "
             "TK_ABI_MSG(\"tk_pv\"));\n"
             "_Static_assert(sizeof(tk_abi) == %zu && __builtin_offsetof(tk_abi, parallel_for) == %zu && "
             "__builtin_offsetof(tk_abi, fail) == %zu && __builtin_offsetof(tk_abi, print) == %zu && "
             "__builtin_offsetof(tk_abi, poll) == %zu && __builtin_offsetof(tk_abi, slots) == %zu && "
             "__builtin_offsetof(tk_abi, slot) == %zu, TK_ABI_MSG(\"tk_abi\"));\n",
             key, sizeof(tk_argv), TK_OFF(tk_argv, shape), TK_OFF(tk_argv, s), sizeof(tk_ctx), sizeof(tk_pv),
             TK_OFF(tk_pv, i), TK_OFF(tk_pv, u), TK_OFF(tk_pv, f), TK_OFF(tk_pv, s), TK_OFF(tk_pv, im), sizeof(tk_abi),
             TK_OFF(tk_abi, parallel_for), TK_OFF(tk_abi, fail), TK_OFF(tk_abi, print), TK_OFF(tk_abi, poll),
             TK_OFF(tk_abi, slots), TK_OFF(tk_abi, slot));
#undef TK_OFF
}

/* Load a verified entry (kcache.c has checked its owner, mode and seal) and
 * check that it is the entry for `key`.  dlopen takes a path, and glibc
 * matches an already-loaded library by that name before anything else, so
 * /proc/self/fd/N (whose N is reused) cannot be the name.  The path is
 * opened only if it still names the very file whose seal was read; that
 * nobody else can swap it in between is the directory rules' guarantee.
 * Another process building the same kernel may rename its copy into place
 * after the seal was read: -1 says so, and the caller reads the entry again. */
static int try_load(const kc_dir *d, const kc_entry *e, const char *name, const char *key, void **handle, void **entry) {
    tk_file_info a, b;
    if (tk_file_info_of(e->fd, &a) != 0) return 0;
    if (tk_file_info_at(d->fd, name, &b) != 0 || a.dev != b.dev || a.ino != b.ino) return -1;
    size_t n = strlen(d->path) + strlen(name) + 2;
    char *path = tack_malloc(n);
    if (!path) return 0;
    snprintf(path, n, "%s%c%s", d->path, TK_PATH_SEP, name);
    void *h = tk_dl_open(path, 0);
    tack_free(path);
    if (!h) return 0;
    const char *k = tk_dl_sym(h, "tack_cache_key");
    void *fn = tk_dl_sym(h, "tack_entry");
    if (!k || !fn || strcmp(k, key) != 0) {
        tk_dl_close(h);
        return 0;
    }
    *handle = h;
    *entry = fn;
    return 1;
}

/* Run the C compiler inside the cache directory (its working directory is
 * the descriptor kc_open checked; the names are relative), without a shell,
 * guarded (spawn_guard.c: a process group of its own, killed whole if this
 * process dies).  What it prints comes back through a pipe, not a file, so
 * a full disk cannot swallow the reason ("No space left on device").  A
 * compiler killed by SIGINT (Ctrl-C, passed on by the guardian when the
 * launch is interruptible), SIGTERM or SIGHUP is an interruption, not a
 * compile failure. */
static tack_status run_compiler(const kc_dir *d, const cc_pick *c, const char *kernel, const char *flags,
                                int vmath, const char *src, const char *out, const char *first_line) {
    char *buf = NULL;
    char **argv = cc_argv(c, flags, 8, &buf);
    if (!argv) return tack_set_error(TACK_ERR_NOMEM, "out of memory compiling kernel '%s'", kernel);
    int argc = 0;
    while (argv[argc]) argc++;
    const char *veclib = vmath ? veclib_flag(first_line) : NULL;
    if (veclib) argv[argc++] = (char *)veclib;
    argv[argc++] = "-o";
    argv[argc++] = (char *)out;
    argv[argc++] = (char *)src;
    if (TK_CC_LIBM[0]) argv[argc++] = TK_CC_LIBM;
    if (vmath) { /* named, not left to libm.so's linker script: zig cc's own glibc has none */
        argv[argc++] = "-Wl,--as-needed";
        argv[argc++] = "-lmvec";
    }
    argv[argc] = NULL;
    tack_status st = TACK_OK;
    char log[2000];
    size_t len = 0;
    int status = 0;
    int rc = tk_spawn_guarded(argv, d->fd, log, sizeof log, &len, &status, tack_interruptible());
    if (rc != 0) {
        st = tack_set_error(TACK_ERR_RUNTIME, "cannot run the C compiler '%s%s' (%s): %s (set TACK_CC)", CC_SHOWN(c),
                            c->from, strerror(rc));
        goto done;
    }
    if (TK_STATUS_OK(status)) goto done;
    if (tk_signal_is_interrupt(TK_STATUS_SIGNAL(status)))
        st = tack_set_error(TACK_ERR_INTERRUPTED, "compiling kernel '%s' was interrupted (the C compiler got signal %d)",
                            kernel, TK_STATUS_SIGNAL(status));
    else if (TK_STATUS_SIGNAL(status))
        st = tack_set_error(TACK_ERR_RUNTIME, "the C compiler was killed by signal %d on kernel '%s' (source kept in %s/%s)\n%s",
                            TK_STATUS_SIGNAL(status), kernel, d->path, src, log);
    else if (strstr(log, "No space left on device")) { /* the disk is full: keep nothing */
        tk_file_unlink(d->fd, src);
        tk_file_unlink(d->fd, out);
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
    int ok = -1;
    for (int tries = 0; ok < 0 && tries < 8; tries++) { /* -1: replaced by an equal build meanwhile */
        kc_entry e;
        const char *why = NULL;
        int r = kc_read(d, name, &e, &why);
        if (r < 0 && kc_log_info())
            fprintf(stderr, "tack: cache entry %s/%s for kernel '%s' is %s; rebuilding it\n", d->path, name, kernel, why);
        if (r != 1) return 0;
        ok = try_load(d, &e, name, key, handle, entry);
        kc_entry_free(&e);
    }
    if (ok < 0) return 0;
    if (!ok) {
        if (kc_log_info()) fprintf(stderr, "tack: cache entry %s/%s does not load; rebuilding it\n", d->path, name);
        tk_file_unlink(d->fd, name);
    }
    return ok;
}

/* The cache key of kernel p built with `flags` by the compiler whose
 * identity is `ident`; with ident NULL, the key of the record of which
 * compiler built it (any compiler: ident is the only difference). */
static void entry_key(const tack_program *p, const char *flags, const hash2 *ident, char key[40]) {
    hash2 h = TACK_HASH2_INIT;
    kc_hash_str(&h, p->source);
    kc_hash_str(&h, p->dialect);
    if (ident)
        kc_hash_add(&h, ident, sizeof *ident);
    else
        kc_hash_str(&h, "the record of which C compiler built it");
    kc_hash_str(&h, flags);
    kc_hash_str(&h, TACK_VERSION_STRING);
    char abi[16];
    snprintf(abi, sizeof abi, "abi%d", TK_CPU_ABI_VERSION);
    kc_hash_str(&h, abi);
    cpu_identity(&h);
    snprintf(key, 40, "%016llx%016llx", (unsigned long long)h.a, (unsigned long long)h.b);
}

/* Remember beside the entries which compiler built the kernel (`rec`, the
 * entry_key without a compiler, ".ccid"): its identity hash and the first
 * line of its --version, as the identity memo holds them.  A process that
 * finds no compiler reads it back, computes the entry's key from it and
 * loads that entry, checked as every entry is (its seal, its embedded key):
 * the record only says which name to try.  A failure to write costs only
 * that a process without a compiler cannot load the kernel. */
static void record_builder(const kc_dir *d, const char *rec, const hash2 *ident, const char *first_line) {
    char line[64];
    snprintf(line, sizeof line, "%016llx %016llx\n", (unsigned long long)ident->a, (unsigned long long)ident->b);
    const char *parts[2] = {line, first_line};
    if (kc_store(d, rec, parts, 2) != TACK_OK) tack_clear_error();
}

/* How long a process waits for another's build of the same entry before it
 * builds the entry itself (kc_lock). */
#define BUILD_WAIT_MS 120000.0

static tack_status build_in(const kc_dir *d, tack_program *p, double t0) {
    tk_fd lock_fd = TK_NO_FD;
    char lock[64] = "";
    cc_pick cc;
    int found = pick_compiler(&cc);
    if (found < 0) return TACK_ERR_RUNTIME; /* the error names the compiler asked for */
    hash2 ident = {0, 0};
    char first_line[256] = "";
    tack_status st = found ? compiler_identity(d, &cc, &ident, first_line, sizeof first_line) : TACK_OK;
    if (st != TACK_OK) return st;

    int vmath = vector_math();
    if (vmath < 0) return TACK_ERR_VALUE;
    char extra[TK_CONFIG_STR_MAX];
    tk_config_str(TK_CFG_CFLAGS, extra, sizeof extra);
    size_t flen = 300 + strlen(extra);
    char *flags = tack_malloc(flen);
    if (!flags) return tack_set_error(TACK_ERR_NOMEM, "out of memory compiling kernel '%s'", p->kernel_name);
    snprintf(flags, flen,
             "-O3 -march=native " TK_CC_SHARED " -std=gnu11 -w -fvisibility=hidden -fno-math-errno -fopenmp-simd%s -DTK_VMATH=%d %s",
             p->fast_math ? FAST_MATH_FLAGS : " -ffp-contract=off", vmath, extra);

    char key[40], name[64], rec[64];
    entry_key(p, flags, NULL, key);
    snprintf(rec, sizeof rec, "%s.ccid", key);
    void *handle = NULL, *entry = NULL;
    if (!found) { /* no compiler: the entry the record names, or an error that says what to install */
        if (identity_load(d, rec, &ident, first_line, sizeof first_line)) {
            entry_key(p, flags, &ident, key);
            snprintf(name, sizeof name, "%s" TK_DL_SUFFIX, key);
            if (load_entry(d, name, key, p->kernel_name, &handle, &entry)) {
                rt_prof_build = "cache hit";
                if (kc_log_info())
                    fprintf(stderr, "tack: loaded kernel '%s' from the cache in %.2f ms (built by %s; no C compiler found) (%s/%s)\n",
                            p->kernel_name, kc_now_ms() - t0, first_line, d->path, name);
                goto loaded;
            }
        }
        st = no_compiler(p->kernel_name);
        goto out;
    }
    entry_key(p, flags, &ident, key);
    snprintf(name, sizeof name, "%s" TK_DL_SUFFIX, key);
    if (load_entry(d, name, key, p->kernel_name, &handle, &entry)) {
        tk_file_info sb; /* an entry from before records existed, or whose record was lost */
        if (tk_file_info_at(d->fd, rec, &sb) != 0) record_builder(d, rec, &ident, first_line);
        rt_prof_build = "cache hit";
        if (kc_log_info())
            fprintf(stderr, "tack: loaded kernel '%s' from the cache in %.2f ms (%s/%s)\n", p->kernel_name,
                    kc_now_ms() - t0, d->path, name);
        goto loaded;
    }

    /* Another process may be building this very entry (ranks that start
     * together): wait for its build, then look again. */
    snprintf(lock, sizeof lock, "%s.lock", key);
    double waited = 0;
    lock_fd = kc_lock(d, lock, BUILD_WAIT_MS, &waited);
    if (lock_fd != TK_NO_FD && load_entry(d, name, key, p->kernel_name, &handle, &entry)) {
        rt_prof_build = "cache hit";
        if (kc_log_info())
            fprintf(stderr, "tack: loaded kernel '%s' from the cache in %.2f ms, built by another process (waited "
                            "%.1f ms) (%s/%s)\n", p->kernel_name, kc_now_ms() - t0, waited, d->path, name);
        goto loaded;
    }

    /* Compile into unique temporaries, then seal and rename into place. */
    char src[96], tmp[96], keep[64];
    kc_tmp_name(src, sizeof src, key, ".c");
    kc_tmp_name(tmp, sizeof tmp, key, TK_DL_SUFFIX ".tmp");
    char trailer[1600];
    abi_trailer(trailer, sizeof trailer, key);
    const char *parts[2] = {p->source, trailer};
    st = kc_write_new(d, src, parts, 2);
    if (st == TACK_OK) st = run_compiler(d, &cc, p->kernel_name, flags, vmath, src, tmp, first_line);
    if (st != TACK_OK) {
        tk_file_unlink(d->fd, tmp);
        if (st != TACK_ERR_RUNTIME) tk_file_unlink(d->fd, src); /* kept only for a compile failure to read */
        goto out;
    }
    st = kc_seal(d, tmp, name);
    snprintf(keep, sizeof keep, "%s.c", key);
    if (st != TACK_OK || tk_file_rename(d->fd, src, keep) != 0) tk_file_unlink(d->fd, src);
    if (st != TACK_OK) goto out;
    if (!load_entry(d, name, key, p->kernel_name, &handle, &entry)) {
        const char *why = tk_dl_error();
        st = tack_set_error(TACK_ERR_RUNTIME, "cannot load the compiled kernel '%s' from %s/%s: %s", p->kernel_name,
                            d->path, name, why ? why : "tack_entry or tack_cache_key missing");
        goto out;
    }
    record_builder(d, rec, &ident, first_line);
    rt_prof_build = "cc";
    if (kc_log_info())
        fprintf(stderr, "tack: compiled kernel '%s' in %.1f ms with %s (%s%s, from %s) (%s/%s)\n", p->kernel_name,
                kc_now_ms() - t0, first_line, CC_SHOWN(&cc), cc.from, d->path, name);
loaded:
    p->handle = handle;
    p->entry = entry;
out:
    kc_unlock(d, lock, lock_fd);
    tack_free(flags);
    return st;
}

tack_status cpu_build(tack_device *dev, tack_program *p) {
    (void)dev;
    if (p->flush_denormals && !rt_flush_supported())
        return tack_set_error(TACK_ERR_VALUE, "kernel '%s' asks for flush_denormals=True, but Tack cannot set "
                              "flush-to-zero on this CPU (only x86-64 and aarch64): compile it without the option",
                              p->kernel_name);
    double t0 = kc_now_ms();
    kc_dir d;
    tack_status st = kc_open(&d);
    if (st != TACK_OK) return st;
    st = build_in(&d, p, t0);
    kc_close(&d);
    return st;
}

void cpu_unload(tack_device *dev, tack_program *p) {
    if (p->handle) tk_dl_close(p->handle);
    p->handle = NULL;
    p->entry = NULL;
}

/* ------------------------------------------------------------ launch */
typedef struct launch_ctx {
    tk_ctx head;      /* must stay first: the generated code reads head.failed */
    int site;
    int64_t a, b;
    rt_watch watch;   /* tack_interrupt() as this launch sees it */
    int flush;        /* flush_denormals: the pool's threads flush subnormals too */
} launch_ctx;

static void abi_fail(tk_ctx *ctx, int site, int64_t a, int64_t b);

/* The pool's stop test and abi->poll: an interrupt becomes the launch's
 * failure (unless a check failed first); any failure stops the rest.  `now`:
 * the pool's reading of the clock, or 0 (pool.h). */
static int launch_stop(void *arg, int64_t now) {
    launch_ctx *l = arg;
    if (rt_watch_poll(&l->watch, now)) abi_fail(&l->head, TK_SITE_INTERRUPT, 0, 0);
    return __atomic_load_n(&l->head.failed, __ATOMIC_RELAXED);
}

/* The generated code's serial loops poll once per 64K iterations: a clock read is nothing there. */
static int abi_poll(tk_ctx *ctx) { return launch_stop(ctx, rt_watch_now()); }

static void abi_parallel_for(tk_ctx *ctx, tk_body fn, void *frame, int64_t n, int64_t min_parallel,
                             int64_t grain) {
    launch_ctx *l = (launch_ctx *)ctx;
    pool_run(fn, frame, n, min_parallel, grain, l->watch.on ? launch_stop : NULL, l, l->flush);
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

static tk_mutex_t print_lock = TK_MUTEX_INIT;

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

/* A complex as Python's repr writes it: each part as a float's repr without
 * a trailing ".0", the imaginary part signed, "(re+imj)" -- or "imj" alone
 * when the real part is +0, as Python does (complex_repr). */
static void fmt_complex(char *out, size_t n, double re, double im, int f32) {
    char r[40], i[40];
    fmt_float(r, sizeof r, re, f32);
    fmt_float(i, sizeof i, im, f32);
    size_t lr = strlen(r), li = strlen(i);
    if (lr > 2 && !strcmp(r + lr - 2, ".0")) r[lr - 2] = '\0';
    if (li > 2 && !strcmp(i + li - 2, ".0")) i[li - 2] = '\0';
    if (re == 0 && !signbit(re)) snprintf(out, n, "%sj", i);
    else snprintf(out, n, "(%s%s%sj)", r, i[0] == '-' ? "" : "+", i);
}

/* print(...) from a kernel: one line, written whole (no length limit) under
 * a lock, so lines from parallel iterations never interleave. */
static void abi_print(tk_ctx *ctx, const tk_pv *v, int n) {
    (void)ctx;
    tk_mutex_lock(&print_lock);
    for (int i = 0; i < n; i++) {
        char item[64];
        const char *s = item;
        switch (v[i].kind) {
        case 0: s = v[i].s ? v[i].s : ""; break;
        case 1: s = v[i].i ? "True" : "False"; break;
        case 2: snprintf(item, sizeof item, "%lld", (long long)v[i].i); break;
        case 3: snprintf(item, sizeof item, "%llu", (unsigned long long)v[i].u); break;
        case 6:
        case 7: fmt_complex(item, sizeof item, v[i].f, v[i].im, v[i].kind == 6); break;
        default: fmt_float(item, sizeof item, v[i].f, v[i].kind == 4); break;
        }
        if (i) fputc(' ', stdout);
        fputs(s, stdout);
    }
    fputc('\n', stdout);
    fflush(stdout);
    tk_mutex_unlock(&print_lock);
}

static const tk_abi cpu_abi = {TK_CPU_ABI_VERSION, abi_parallel_for, abi_fail, abi_print, abi_poll, pool_threads, pool_slot};


tack_status cpu_launch(tack_device *dev, tack_program *p, const tack_arg *args, int nargs) {
    if (!p->entry) return tack_set_error(TACK_ERR_VALUE, "kernel '%s' is not built", p->kernel_name);
    tk_argv stackv[16];
    tk_argv *v = stackv;
    /* A build with strided arrays reads each one's element strides from a
     * second row of slots after the arguments: args[nargs + i].shape
     * (dialect_c.c), so a build without them reads what it always read. */
    int rows = 1;
    for (int i = 0; i < nargs; i++)
        if (p->params[i].strided) rows = 2;
    int extra = p->nrloops ? 1 : 0; /* check_races: the detector's session in the slot after them (races.c) */
    if (nargs * rows + extra > 16) {
        v = tack_calloc((size_t)(nargs * rows + extra), sizeof *v);
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
            if (tack_dtype_get(pi->dtype)->kind == TACK_KIND_COMPLEX) {
                v[i].s.z[0] = args[i].scalar.z[0];
                v[i].s.z[1] = args[i].scalar.z[1];
            }
            continue;
        }
        tack_array *a = args[i].array; /* checked by tack_launch (driver.c) */
        v[i].data = tack_array_data(a);
        const int64_t *shape = tack_array_shape(a);
        for (int k = 0; k < pi->ndim; k++) v[i].shape[k] = shape[k];
        if (!pi->strided) continue;
        const int64_t *strides = tack_array_strides(a); /* NULL: C order's */
        memset(&v[nargs + i], 0, sizeof v[nargs + i]);
        int64_t c = 1;
        for (int k = pi->ndim - 1; k >= 0; k--) {
            v[nargs + i].shape[k] = strides ? strides[k] : c;
            c *= shape[k];
        }
    }
    rt_race *race = extra ? rt_race_new(p, args, nargs) : NULL;
    if (extra && !race) {
        if (v != stackv) tack_free(v);
        return TACK_ERR_NOMEM;
    }
    if (race) v[nargs * rows].data = rt_race_head(race);
    launch_ctx l;
    memset(&l, 0, sizeof l);
    l.site = -1;
    rt_watch_begin(&l.watch);
    /* flush_denormals: this thread flushes while the kernel runs, the pool's
     * for each piece they run of it (fpmode.c); the entry returns on every
     * path, a failed check or an interrupt included, so the mode goes back.
     * A caller that flushes on its own has the pool's threads flush too. */
    rt_fpmode fp = p->flush_denormals ? rt_flush_enter() : 0;
    l.flush = p->flush_denormals || rt_flush_active(); /* the pool runs in this thread's mode */
    pool_launch_begin(); /* the thread count, for the whole launch */
    int64_t t0 = rt_prof_on() ? rt_prof_now() : 0; /* a profile: the generated code's time is the device's */
    ((tk_entry_fn)p->entry)(nargs ? v : NULL, &cpu_abi, &l.head); /* a kernel of no arguments reads none */
    if (t0) rt_prof_cur_ns = rt_prof_now() - t0;
    pool_launch_end();
    if (p->flush_denormals) rt_flush_leave(fp);
    if (__atomic_load_n(&l.head.failed, __ATOMIC_ACQUIRE))
        st = l.site == TK_SITE_RACE ? rt_race_error(p, race) : tk_site_error(p, l.site, l.a, l.b);
    rt_race_free(race);
    if (v != stackv) tack_free(v);
    return st;
}
