/*
 * platform.h -- what the core asks of the operating system, in one place.
 *
 * Tack's core is C11 plus a handful of services that C11 leaves to the
 * system: threads and their locks, loading shared libraries, a monotonic
 * clock, the process's number and its cores, the kernel cache's files
 * (opened by descriptor, never through a link, their owner and permissions
 * checked), advisory file locks, and running the C compiler so that nothing
 * of it outlives us.  This header is the only door to them: no other file of
 * the core includes a system header beyond the C library's own (string.h,
 * stdio.h, stdatomic.h, ...), so a port is this folder and nothing else.
 *
 * Two implementations stand behind it:
 *
 *   - POSIX (posix.c, posix_files.c, posix_spawn_guard.c, posix_interrupt.c):
 *     Linux and macOS.
 *     The thread calls are inline wrappers over pthreads, so on Linux the
 *     compiled code is what it was before the layer existed.  Linux keeps its
 *     guardian process for the compiler (parent-death signal, process
 *     group); macOS, which has neither prctl nor signalfd, gets the process
 *     group and the group kill on every exit path, and says in docs/security.md
 *     what it lacks.
 *   - Windows (win32.c, win32_files.c, win32_spawn.c, win32_interrupt.c): slim reader/writer
 *     locks and condition variables, one-time initialization, fiber-local
 *     storage for the pool's membership destructor, LoadLibrary, handles for
 *     files opened without following reparse points and checked against the
 *     owner SID and the DACL, LockFileEx, and the compiler in a job object
 *     that is killed when the last handle to it closes -- with our process.
 *
 * Ctrl-C is here as one service, not as signals: tk_interrupt_chain puts a
 * handler in front of the process's own (a SIGINT handler on POSIX,
 * posix_interrupt.c; a console control handler on Windows,
 * win32_interrupt.c) that asks the core to stop and then runs the one it
 * found, so the embedder (the Python extension, src/python/interrupt.c,
 * through tack_private.h's tack_chain_sigint) makes no system call of its
 * own.  Atomics are C11's stdatomic.h on every compiler
 * Tack supports (gcc, clang, Apple clang, zig cc, clang-cl), so they need no
 * layer.
 */
#ifndef TACK_PLATFORM_H
#define TACK_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

#include "tack.h"

/* Per system: a shared library's suffix, the path separator, PATH's list
 * separator and its default, and how the C compiler is asked for a shared
 * library (TK_CC_SHARED, which is part of every CPU kernel's cache key, so
 * it stays as it was on Linux) and for the maths library. */
#if defined(_WIN32)
#define TK_WINDOWS 1
#define TK_DL_SUFFIX ".dll"
#define TK_PATH_SEP '\\'
#define TK_PATH_LIST_SEP ';'
#define TK_DEFAULT_PATH "C:\\Windows\\System32"
#define TK_CC_SHARED "-shared"
#define TK_CC_LIBM ""
#elif defined(__APPLE__)
#define TK_MACOS 1
#define TK_POSIX 1
#define TK_DL_SUFFIX ".dylib"
#define TK_PATH_SEP '/'
#define TK_PATH_LIST_SEP ':'
#define TK_DEFAULT_PATH "/usr/bin:/bin"
#define TK_CC_SHARED "-fPIC -shared"
#define TK_CC_LIBM "-lm"
#else
#define TK_POSIX 1
#define TK_DL_SUFFIX ".so"
#define TK_PATH_SEP '/'
#define TK_PATH_LIST_SEP ':'
#define TK_DEFAULT_PATH "/bin:/usr/bin"
#define TK_CC_SHARED "-fPIC -shared"
#define TK_CC_LIBM "-lm"
#endif

/* ------------------------------------------------------------- threads */
#if TK_WINDOWS
/* The system's objects are one pointer each (SRWLOCK, CONDITION_VARIABLE,
 * INIT_ONCE), zero when initialized; mirrored here so that windows.h, with
 * its macros, stays inside win32.c. */
typedef struct { void *p; } tk_mutex_t;
typedef struct { void *p; } tk_cond_t;
typedef struct { void *p; } tk_once_t;
typedef struct { unsigned long k; } tk_key_t;
#define TK_MUTEX_INIT {0}
#define TK_COND_INIT {0}
#define TK_ONCE_INIT {0}
void tk_mutex_init(tk_mutex_t *m);
void tk_mutex_destroy(tk_mutex_t *m);
void tk_mutex_lock(tk_mutex_t *m);
int tk_mutex_trylock(tk_mutex_t *m); /* 0 when taken */
void tk_mutex_unlock(tk_mutex_t *m);
void tk_cond_init(tk_cond_t *c);
void tk_cond_wait(tk_cond_t *c, tk_mutex_t *m);
void tk_cond_signal(tk_cond_t *c);
void tk_cond_broadcast(tk_cond_t *c);
void tk_once(tk_once_t *o, void (*fn)(void));
int tk_key_create(tk_key_t *k, void (*destructor)(void *));
int tk_key_set(tk_key_t k, void *value);
#else
#include <pthread.h>
typedef pthread_mutex_t tk_mutex_t;
typedef pthread_cond_t tk_cond_t;
typedef pthread_once_t tk_once_t;
typedef pthread_key_t tk_key_t;
#define TK_MUTEX_INIT PTHREAD_MUTEX_INITIALIZER
#define TK_COND_INIT PTHREAD_COND_INITIALIZER
#define TK_ONCE_INIT PTHREAD_ONCE_INIT
static inline void tk_mutex_init(tk_mutex_t *m) { pthread_mutex_init(m, NULL); }
static inline void tk_mutex_destroy(tk_mutex_t *m) { pthread_mutex_destroy(m); }
static inline void tk_mutex_lock(tk_mutex_t *m) { pthread_mutex_lock(m); }
static inline int tk_mutex_trylock(tk_mutex_t *m) { return pthread_mutex_trylock(m); }
static inline void tk_mutex_unlock(tk_mutex_t *m) { pthread_mutex_unlock(m); }
static inline void tk_cond_init(tk_cond_t *c) { pthread_cond_init(c, NULL); }
static inline void tk_cond_wait(tk_cond_t *c, tk_mutex_t *m) { pthread_cond_wait(c, m); }
static inline void tk_cond_signal(tk_cond_t *c) { pthread_cond_signal(c); }
static inline void tk_cond_broadcast(tk_cond_t *c) { pthread_cond_broadcast(c); }
static inline void tk_once(tk_once_t *o, void (*fn)(void)) { pthread_once(o, fn); }
static inline int tk_key_create(tk_key_t *k, void (*destructor)(void *)) { return pthread_key_create(k, destructor); }
static inline int tk_key_set(tk_key_t k, void *value) { return pthread_setspecific(k, value); }
#endif

/* Start a detached thread running fn(arg); 0 on success. */
int tk_thread_start(void *(*fn)(void *), void *arg);
/* Run `child` in the child after a fork (POSIX); nothing on Windows, which
 * has no fork. */
void tk_atfork_child(void (*child)(void));
/* The cores this process may run on (its affinity), at least 1. */
int tk_cpu_count(void);
/* Advise the whole pages inside [p, p + n) as wanting transparent huge pages
 * (madvise MADV_HUGEPAGE where the system has it; nothing elsewhere, nor on
 * Windows, whose large pages need a privilege). */
void tk_advise_huge_pages(void *p, size_t n);
/* Physical memory in bytes, 0 when unknown. */
uint64_t tk_physical_memory(void);
/* The machine's architecture as the system names it ("x86_64", "arm64");
 * 0 when known. */
int tk_machine(char *out, size_t cap);
/* The processor's model where the system says it other than in
 * /proc/cpuinfo (macOS: machdep.cpu.brand_string; Windows: the registry's
 * ProcessorNameString); 0 when known. */
int tk_cpu_brand(char *out, size_t cap);
long tk_getpid(void);

/* ------------------------------------------- Ctrl-C, process-wide */
/* Put a handler of Ctrl-C (SIGINT on POSIX; the console's Ctrl-C and
 * Ctrl-Break on Windows) in front of the process's, calling fn (which must
 * be async-signal-safe) and then the handler it found; on POSIX only where
 * that is a handler, not SIG_IGN or SIG_DFL.  Called again, it changes fn
 * and chains nothing twice. */
void tk_interrupt_chain(void (*fn)(void));
/* Put it back in front where the handler it first chained to was installed
 * again since (POSIX: a later sigaction, Python's signal.signal()); nothing
 * on Windows, where nothing removes it. */
void tk_interrupt_rechain(void);

/* ---------------------------------------------------------------- time */
int64_t tk_monotonic_ns(void);
int64_t tk_thread_cpu_ns(void); /* this thread's CPU time */
int64_t tk_wall_s(void);        /* seconds since 1970 */
int tk_sleep_ns(int64_t ns); /* 0 when slept whole, -1 when a signal cut it short */

/* ---------------------------------------------------- dynamic loading */
#define TK_DL_LAZY 1 /* resolve symbols at their first use (POSIX RTLD_LAZY) */
/* Open a shared library (a path, or a name the loader searches for),
 * its symbols kept local; NULL on failure, tk_dl_error then says why. */
void *tk_dl_open(const char *path, int flags);
void *tk_dl_sym(void *lib, const char *name);
void tk_dl_close(void *lib);
const char *tk_dl_error(void);
/* The file a library was loaded from, or the library holding `addr`
 * (lib NULL); 0 when found. */
int tk_dl_path(void *lib, const void *addr, char *out, size_t cap);

/* ---------------------------------------------------------- environment */
/* The directory for temporary files: TMPDIR (TEMP on Windows), else the system's. */
const char *tk_temp_dir(void);
/* Whether `path` is absolute on this system ("/x"; "C:\x", "\\server\x"). */
int tk_path_is_absolute(const char *path);
/* The compiler's resolved path (into real) and what changes when it is
 * replaced (size, file number, modification time in s and ns); 0 when known. */
int tk_program_stamp(const char *path, char *real, size_t cap, long long fields[4]);
/* glibc's version ("2.36") where the C library is glibc, else "". */
const char *tk_glibc_version(void);
/* Whether `path` names a directory (following links). */
int tk_is_dir(const char *path);
/* Whether `path` names an executable regular file; a relative one is made
 * absolute against the working directory (in place, up to cap). */
int tk_is_program(char *path, size_t cap);

/* ----------------------------------------- the kernel cache's files */
/* A descriptor (POSIX) or a HANDLE (Windows); TK_NO_FD when none. */
#if TK_WINDOWS
typedef intptr_t tk_fd;
#else
typedef int tk_fd;
#endif
#define TK_NO_FD ((tk_fd)-1)

typedef struct tk_file_info {
    int regular;        /* a regular file (not a directory, link, FIFO, device) */
    int dir;            /* a directory (not a link to one) */
    int ours;           /* owned by this user */
    int others_write;   /* someone other than the owner (and the system) may write it */
    uint64_t size;
    int64_t mtime_s;    /* last change, seconds since 1970 */
    uint64_t dev, ino;  /* identity: equal for the same file */
} tk_file_info;

/* Open (creating) the cache directory `path`, checking every directory from
 * the root down (ours or the system's, and not replaceable by others), and
 * return it open; errors name the directory and the fix. *real gets the
 * resolved path (tack_malloc'd). */
tack_status tk_dir_open_checked(const char *path, tk_fd *out, char **real);
/* The default cache directory's path (tack_malloc'd), from the user's
 * cache location (XDG_CACHE_HOME or HOME; LOCALAPPDATA on Windows); NULL
 * with the error set. */
char *tk_default_cache_dir(void);

#define TK_F_READ 0
#define TK_F_RDWR 1
#define TK_F_CREATE 2      /* create if missing, 0600 / owner only */
#define TK_F_EXCL 4        /* with TK_F_CREATE: fail if it exists */
#define TK_F_WRITE 8       /* write only */
#define TK_F_NONBLOCK 16   /* a FIFO cannot hang the open (POSIX) */
/* Open `name` in `dir`, never following a link (or reparse point); the
 * error as errno's value (ELOOP for a link) in *err. */
tk_fd tk_file_open(tk_fd dir, const char *name, int flags, int *err);
int tk_file_block(tk_fd fd); /* clear TK_F_NONBLOCK */
int tk_file_info_of(tk_fd fd, tk_file_info *info);
/* `name` in `dir` without following a link; -1 when it is not there. */
int tk_file_info_at(tk_fd dir, const char *name, tk_file_info *info);
long tk_file_pread(tk_fd fd, void *buf, size_t n, uint64_t at);
int tk_file_write_all(tk_fd fd, const void *buf, size_t n);
int tk_file_append_sync(tk_fd fd, const void *buf, size_t n); /* at the end, then flushed to disk */
int tk_file_close(tk_fd fd);
int tk_file_unlink(tk_fd dir, const char *name);
int tk_file_rename(tk_fd dir, const char *from, const char *to);
/* Call fn for each name in `dir` (no "." or ".."); 0 when listed. */
int tk_dir_list(tk_fd dir, void (*fn)(void *ctx, const char *name), void *ctx);
/* An exclusive lock on the whole of an open file, without waiting: 0 when
 * taken, 1 when another holds it, -1 on another error. Released by closing. */
int tk_file_trylock(tk_fd fd);
/* errno's text (or the system's message on Windows) for an error above. */
const char *tk_strerror(int err);

/* ------------------------------------------------- running the compiler */
/* Run argv (argv[0] a full path) with `dir` as its working directory (TK_NO_FD:
 * ours), stdin empty, its stdout and stderr into out[0..cap) (*len: bytes
 * produced, which may exceed cap), so that it and everything it starts are
 * killed if this process dies; Ctrl-C passed on when forward_int.  *status:
 * the exit code (>= 0), or minus the signal that ended it.  0 when it ran,
 * else an errno value. */
#define TK_STATUS_OK(status) ((status) == 0)
#define TK_STATUS_SIGNAL(status) ((status) < 0 ? -(status) : 0)
/* Whether a signal number is an interruption (SIGINT, SIGTERM, SIGHUP). */
int tk_signal_is_interrupt(int sig);
int tk_spawn_guarded(char **argv, tk_fd dir, char *out, size_t cap, size_t *len, int *status, int forward_int);

#endif
