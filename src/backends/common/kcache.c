/*
 * kcache.c -- the kernel cache's shared rules.
 *
 * Each backend's toolchain (cpu_jit.c for shared objects, cuda_launch.c for
 * PTX, opencl_launch.c for OpenCL program binaries) keeps compiled kernels
 * on disk under one directory and one set of rules, kept here so that they
 * cannot drift apart.  Loading an entry runs its code, so the rules are
 * about trust: Tack loads nothing it did not write itself and find intact.
 *
 *   - where: TACK_CACHE_DIR, else $XDG_CACHE_HOME/tack, else ~/.cache/tack;
 *   - who: the directory must belong to this user and be writable by no one
 *     else, and so must every directory above it, except that a directory
 *     others may write (/tmp) is accepted when it has the sticky bit and
 *     the entry below it is root's or ours -- otherwise another user could
 *     swap the directory for theirs between our check and our use;
 *   - once: the directory is opened once per build (kc_open) and everything
 *     after goes through that descriptor (openat, O_NOFOLLOW), so a path
 *     flipped after the check changes nothing; tools (the C compiler) run
 *     with that directory as their working directory and relative names;
 *   - entries: each file is checked when opened (a regular file, ours, not
 *     writable by others; opened non-blocking, so a FIFO cannot hang us) and
 *     carries a seal, appended when it was stored: a digest of its bytes and
 *     their count.  A truncated, zero-filled or foreign file fails the seal
 *     and is removed and rebuilt, before anything loads it -- dlopen runs a
 *     library's constructors before any symbol could be compared.  The
 *     digest (two FNV-1a lanes) detects damage; forgery is kept out by the
 *     ownership rules, since whoever can write our directory can write a
 *     seal too;
 *   - writes: to a unique temporary name, fsync'd, then renamed into place,
 *     so readers never see half a file;
 *   - builds: one at a time per entry where the file system allows it.  The
 *     first process to miss an entry holds an advisory lock (a POSIX record
 *     lock on "KEY.lock") while it builds; the others wait for it and then
 *     find the entry built, so 64 ranks starting together run the compiler
 *     once, not 64 times.  The lock only saves work: a holder that dies
 *     releases it, and where there are no locks (some network file systems),
 *     after a signal, or after a long wait, a process builds unlocked, which
 *     the renames keep safe;
 *   - leftovers: a process killed mid-build (SIGKILL, the out-of-memory
 *     killer) leaves its temporaries (BASE-PID-N.c, .so.tmp, .tmp), which
 *     nobody would ever remove.  The first time a process takes a build
 *     lock in a directory, it removes every temporary of ours there whose
 *     last change is more than KC_STALE_S (a day) old (kc_sweep).  A day,
 *     not minutes: a live build's source is written once, at its start, and
 *     a compile may take minutes on a loaded machine or sit stopped (a
 *     suspended job, a laptop asleep) for hours; and the source of a failed
 *     compile, which the error names, stays readable that long.  The age is
 *     the only test: the pid in the name may be another host's (a cache on a
 *     network file system) or reused.  Their compiler died with them
 *     (spawn_guard.c);
 *   - keys: a 128-bit hash of everything that decides the compiled bytes
 *     (source, dialect, toolchain identity, flags, Tack's version), with a
 *     separator after each field so that ("ab", "c") and ("a", "bc") differ.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "runtime/config.h"

#include "backends/common/kcache.h"

void kc_hash_add(hash2 *h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h->a = (h->a ^ p[i]) * 0x100000001b3ULL;
        h->b = (h->b ^ p[i]) * 0x100000001b3ULL;
    }
    h->a = (h->a ^ 0xff) * 0x100000001b3ULL;
    h->b = (h->b ^ 0xfe) * 0x100000001b3ULL;
}

void kc_hash_str(hash2 *h, const char *s) { kc_hash_add(h, s ? s : "", s ? strlen(s) : 0); }

double kc_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int kc_log_info(void) { return tk_config_int(TK_CFG_LOG) != 0; /* info or debug */ }

/* ------------------------------------------------------------ directory */
/* a + b in a new string (tack_malloc'd), or NULL. */
static char *str_cat(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    char *s = tack_malloc(na + nb + 1);
    if (s) {
        memcpy(s, a, na);
        memcpy(s + na, b, nb + 1);
    }
    return s;
}

static tack_status mkdirs(char *path) {
    for (char *p = path + 1;; p++) {
        if (*p && *p != '/') continue;
        char c = *p;
        *p = 0; /* path up to this component */
        int err = mkdir(path, 0700) != 0 && errno != EEXIST ? errno : 0;
        tack_status st = err ? tack_set_error(TACK_ERR_RUNTIME, "cannot create the kernel cache directory %s: %s", path,
                                              strerror(err))
                             : TACK_OK;
        *p = c;
        if (st != TACK_OK || !c) return st;
    }
}

#define KC_WHY " (loading cached kernels runs their code; set TACK_CACHE_DIR to a directory only you can write)"

/* The rule for one step of the path: `child` (called name, in `parent`). */
static tack_status check_step(const struct stat *parent, const struct stat *child, const char *path, int last) {
    uid_t me = geteuid();
    if (!S_ISDIR(child->st_mode))
        return tack_set_error(TACK_ERR_RUNTIME, "the kernel cache path %s is not a directory", path);
    if (child->st_uid != me && (last || child->st_uid != 0))
        return tack_set_error(TACK_ERR_RUNTIME, "refusing the kernel cache directory: %s is owned by another user (uid %u)" KC_WHY,
                              path, (unsigned)child->st_uid);
    if (last && (child->st_mode & (S_IWGRP | S_IWOTH)))
        return tack_set_error(TACK_ERR_RUNTIME,
                              "refusing the kernel cache directory %s: it is writable by group or others; chmod go-w %s" KC_WHY,
                              path, path);
    if (parent && (parent->st_mode & (S_IWGRP | S_IWOTH)) && !(parent->st_mode & S_ISVTX))
        return tack_set_error(TACK_ERR_RUNTIME,
                              "refusing the kernel cache directory: the directory holding %s is writable by group or "
                              "others without the sticky bit, so another user could replace it" KC_WHY,
                              path);
    return TACK_OK;
}

/* Open `real` (an absolute path without symlinks) one component at a time,
 * never following a link, checking each step; returns the last descriptor. */
static tack_status open_checked(char *real, int *out) {
    int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat up, sb;
    if (fd < 0 || fstat(fd, &up) != 0) {
        if (fd >= 0) close(fd);
        return tack_set_error(TACK_ERR_RUNTIME, "cannot open /: %s", strerror(errno));
    }
    char *p = real + 1;
    tack_status st = TACK_OK;
    while (*p) {
        char *end = strchr(p, '/');
        if (end) *end = 0;
        int nfd = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int err = errno;
        if (nfd < 0) {
            if (end) *end = '/';
            close(fd);
            return tack_set_error(TACK_ERR_RUNTIME, "cannot open the kernel cache directory %s: %s", real, strerror(err));
        }
        if (fstat(nfd, &sb) != 0) sb.st_mode = 0;
        char save = end ? '/' : 0;
        if (end) *end = 0;
        st = check_step(&up, &sb, real, !end);
        if (end) *end = save;
        close(fd);
        fd = nfd;
        up = sb;
        if (st != TACK_OK) break;
        if (!end) break;
        p = end + 1;
    }
    if (st != TACK_OK) {
        close(fd);
        return st;
    }
    if (p == real + 1 && !*p) { /* the cache is "/" itself */
        st = check_step(NULL, &up, real, 1);
        if (st != TACK_OK) {
            close(fd);
            return st;
        }
    }
    *out = fd;
    return TACK_OK;
}

/* The directory's path as configured (tack_malloc'd, absolute, without a
 * trailing slash), or NULL with the error set. */
static char *cache_path(void) {
    char env[TK_CONFIG_STR_MAX];
    const char *base = NULL;
    char *path = NULL;
    if (*tk_config_str(TK_CFG_CACHE_DIR, env, sizeof env)) path = str_cat(env, "");
    else if ((base = getenv("XDG_CACHE_HOME")) && *base) path = str_cat(base, "/tack");
    else if ((base = getenv("HOME")) && *base) path = str_cat(base, "/.cache/tack");
    else return tack_set_error(TACK_ERR_RUNTIME, "no kernel cache directory: set TACK_CACHE_DIR (or HOME)"), NULL;
    if (!path) return tack_set_error(TACK_ERR_NOMEM, "out of memory opening the kernel cache"), NULL;
    if (path[0] != '/') {
        tack_set_error(TACK_ERR_RUNTIME, "the kernel cache directory '%s' is not an absolute path", path);
        tack_free(path);
        return NULL;
    }
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/') path[--len] = 0;
    return path;
}

tack_status kc_open(kc_dir *d) {
    d->fd = -1;
    d->path = NULL;
    char *path = cache_path();
    if (!path) return tack_last_status();
    tack_status st = mkdirs(path);
    char *real = st == TACK_OK ? realpath(path, NULL) : NULL;
    if (st == TACK_OK && !real)
        st = tack_set_error(TACK_ERR_RUNTIME, "cannot use the kernel cache directory %s: %s", path, strerror(errno));
    tack_free(path);
    if (st != TACK_OK) return st;
    int fd = -1;
    st = open_checked(real, &fd);
    if (st != TACK_OK) {
        free(real);
        return st;
    }
    d->path = str_cat(real, "");
    free(real); /* realpath's malloc */
    if (!d->path) {
        close(fd);
        return tack_set_error(TACK_ERR_NOMEM, "out of memory opening the kernel cache");
    }
    d->fd = fd;
    return TACK_OK;
}

void kc_close(kc_dir *d) {
    if (d->fd >= 0) close(d->fd);
    tack_free(d->path);
    d->fd = -1;
    d->path = NULL;
}

void kc_tmp_name(char *out, size_t n, const char *base, const char *suffix) {
    static _Atomic unsigned long counter;
    snprintf(out, n, "%s-%ld-%lu%s", base, (long)getpid(), (unsigned long)++counter, suffix);
}

/* --------------------------------------------------------------- entries */
#define SEAL_MAGIC "TACKSEAL"
#define SEAL_BYTES 32 /* magic, digest a, digest b, size: 4 x 8 bytes, little-endian */

static void put64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void seal_of(const void *data, size_t n, unsigned char out[SEAL_BYTES]) {
    hash2 h = TACK_HASH2_INIT;
    kc_hash_add(&h, data, n);
    memcpy(out, SEAL_MAGIC, 8);
    put64(out + 8, h.a);
    put64(out + 16, h.b);
    put64(out + 24, (uint64_t)n);
}

static int write_all(int fd, const void *buf, size_t len) {
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Whether an open file may be trusted as an entry of ours; NULL if so. */
static const char *foreign(const struct stat *sb) {
    if (!S_ISREG(sb->st_mode)) return "not a regular file";
    if (sb->st_uid != geteuid()) return "owned by another user";
    if (sb->st_mode & (S_IWGRP | S_IWOTH)) return "writable by group or others";
    return NULL;
}

int kc_read(const kc_dir *d, const char *name, kc_entry *e, const char **why) {
    e->fd = -1;
    e->data = NULL;
    e->size = 0;
    *why = NULL;
    int fd = openat(d->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return 0;
        *why = errno == ELOOP ? "a symbolic link" : "cannot be opened";
        goto bad;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        *why = "cannot be examined";
        goto bad;
    }
    if ((*why = foreign(&sb)) != NULL) goto bad;
    if (sb.st_size < SEAL_BYTES || sb.st_size > ((off_t)1 << 30)) {
        *why = "too short to carry a seal (truncated)";
        goto bad;
    }
    size_t n = (size_t)sb.st_size, got = 0;
    if (!(e->data = tack_malloc(n + 1))) {
        *why = "out of memory reading it";
        goto bad;
    }
    while (got < n) {
        ssize_t r = pread(fd, e->data + got, n - got, (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    if (got != n) {
        *why = "shorter than its size (being truncated)";
        goto bad;
    }
    unsigned char want[SEAL_BYTES];
    seal_of(e->data, n - SEAL_BYTES, want);
    if (memcmp(want, e->data + n - SEAL_BYTES, SEAL_BYTES) != 0) {
        *why = memcmp(e->data + n - SEAL_BYTES, SEAL_MAGIC, 8) ? "not sealed by Tack (damaged or foreign)"
                                                               : "damaged (its seal does not match its contents)";
        goto bad;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    e->fd = fd;
    e->size = n - SEAL_BYTES;
    e->data[e->size] = 0;
    return 1;
bad:
    if (fd >= 0) close(fd);
    tack_free(e->data);
    e->data = NULL;
    unlinkat(d->fd, name, 0); /* rebuilt by the caller; a failure here only costs a retry */
    return -1;
}

void kc_entry_free(kc_entry *e) {
    if (e->fd >= 0) close(e->fd);
    tack_free(e->data);
    e->fd = -1;
    e->data = NULL;
}

/* Create `name` holding parts[0..n), each lens[i] bytes long (lens NULL:
 * each a string, its strlen). */
static tack_status write_parts(const kc_dir *d, const char *name, const void *const *parts, const size_t *lens, int n) {
    int fd = openat(d->fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return tack_set_error(TACK_ERR_RUNTIME, "cannot write %s/%s: %s", d->path, name, strerror(errno));
    for (int i = 0; i < n; i++) {
        if (write_all(fd, parts[i], lens ? lens[i] : strlen(parts[i])) != 0) {
            int err = errno;
            close(fd);
            unlinkat(d->fd, name, 0);
            return tack_set_error(TACK_ERR_RUNTIME, "cannot write %s/%s: %s", d->path, name, strerror(err));
        }
    }
    if (close(fd) != 0) {
        int err = errno;
        unlinkat(d->fd, name, 0);
        return tack_set_error(TACK_ERR_RUNTIME, "cannot write %s/%s: %s", d->path, name, strerror(err));
    }
    return TACK_OK;
}

tack_status kc_write_new(const kc_dir *d, const char *name, const char *const *parts, int n) {
    return write_parts(d, name, (const void *const *)parts, NULL, n);
}

tack_status kc_seal(const kc_dir *d, const char *tmp, const char *name) {
    tack_status st = TACK_OK;
    char *buf = NULL;
    const char *what = NULL;
    int err = 0;
    int fd = openat(d->fd, tmp, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        err = errno;
        what = "cannot open it";
    } else if ((what = foreign(&sb)) != NULL) {
    } else if (sb.st_size > ((off_t)1 << 30) || !(buf = tack_malloc((size_t)sb.st_size + 1))) {
        what = "too large";
    } else {
        size_t n = (size_t)sb.st_size, got = 0;
        while (got < n) {
            ssize_t r = pread(fd, buf + got, n - got, (off_t)got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            got += (size_t)r;
        }
        unsigned char seal[SEAL_BYTES];
        seal_of(buf, n, seal);
        if (got != n) what = "it changed while being read";
        else if (lseek(fd, 0, SEEK_END) < 0 || write_all(fd, seal, SEAL_BYTES) != 0 || fsync(fd) != 0) {
            err = errno;
            what = "cannot write it";
        }
    }
    if (fd >= 0 && close(fd) != 0 && !what) {
        err = errno;
        what = "cannot write it";
    }
    if (!what && renameat(d->fd, tmp, d->fd, name) != 0) {
        err = errno;
        what = "cannot rename it into place";
    }
    if (what) {
        unlinkat(d->fd, tmp, 0);
        st = tack_set_error(TACK_ERR_RUNTIME, "cannot store the compiled kernel %s/%s: %s%s%s", d->path, name, what,
                            err ? ": " : "", err ? strerror(err) : "");
    }
    tack_free(buf);
    return st;
}

tack_status kc_store(const kc_dir *d, const char *name, const char *const *parts, int n) {
    char tmp[300];
    kc_tmp_name(tmp, sizeof tmp, name, ".tmp");
    tack_status st = kc_write_new(d, tmp, parts, n);
    if (st != TACK_OK) return st;
    return kc_seal(d, tmp, name);
}

tack_status kc_store_bytes(const kc_dir *d, const char *name, const void *const *parts, const size_t *lens, int n) {
    char tmp[300];
    kc_tmp_name(tmp, sizeof tmp, name, ".tmp");
    tack_status st = write_parts(d, tmp, parts, lens, n);
    if (st != TACK_OK) return st;
    return kc_seal(d, tmp, name);
}

/* --------------------------------------------------------------- leftovers */
#define KC_STALE_S (24 * 3600)

static int all_digits(const char *a, const char *b) {
    if (a >= b) return 0;
    for (; a < b; a++)
        if (*a < '0' || *a > '9') return 0;
    return 1;
}

/* A name kc_tmp_name made: BASE-PID-N then .so.tmp, .tmp or .c. */
int kc_is_temporary(const char *name) {
    static const char *const suffix[] = {".so.tmp", ".tmp", ".c"};
    size_t n = strlen(name);
    for (int i = 0; i < 3; i++) {
        size_t k = strlen(suffix[i]);
        if (n <= k || strcmp(name + n - k, suffix[i]) != 0) continue;
        const char *end = name + n - k, *dash2 = end, *dash1;
        while (dash2 > name && dash2[-1] != '-') dash2--;
        if (dash2 <= name + 1 || !all_digits(dash2, end)) return 0; /* N */
        dash1 = dash2 - 1;
        while (dash1 > name && dash1[-1] != '-') dash1--;
        return dash1 > name + 1 && all_digits(dash1, dash2 - 1); /* PID, after a BASE */
    }
    return 0;
}

int kc_sweep(const kc_dir *d, int stale_s) {
    int fd = openat(d->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dir) {
        if (fd >= 0) close(fd);
        return 0;
    }
    time_t now = time(NULL);
    int removed = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        struct stat sb;
        if (!kc_is_temporary(e->d_name) || fstatat(d->fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (!S_ISREG(sb.st_mode) || sb.st_uid != geteuid() || now - sb.st_mtime <= stale_s) continue;
        if (unlinkat(d->fd, e->d_name, 0) == 0) removed++;
    }
    closedir(dir);
    if (removed && kc_log_info())
        fprintf(stderr, "tack: removed %d leftover temporar%s older than %d s from the kernel cache %s\n", removed,
                removed == 1 ? "y" : "ies", stale_s, d->path);
    return removed;
}

/* Once per process and directory: the first build lock taken there. */
static void sweep_once(const kc_dir *d) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static dev_t dev;
    static ino_t ino;
    static pid_t pid;
    struct stat sb;
    if (fstat(d->fd, &sb) != 0) return;
    pthread_mutex_lock(&lock);
    int seen = pid == getpid() && dev == sb.st_dev && ino == sb.st_ino;
    if (!seen) {
        dev = sb.st_dev;
        ino = sb.st_ino;
        pid = getpid();
    }
    pthread_mutex_unlock(&lock);
    if (!seen) kc_sweep(d, KC_STALE_S);
}

/* -------------------------------------------------------------- build lock */
int kc_lock(const kc_dir *d, const char *name, double limit_ms, double *waited_ms) {
    double t0 = kc_now_ms();
    *waited_ms = 0;
    int fd = openat(d->fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid()) { /* not a lock of ours */
        close(fd);
        return -1;
    }
    /* A POSIX record lock, not flock(): a process forked while one of its
     * threads builds does not inherit it (flock's lock belongs to the open
     * file, which the child's copy of the descriptor would keep locked). */
    struct flock whole = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    for (;;) {
        if (fcntl(fd, F_SETLK, &whole) == 0) break;
        *waited_ms = kc_now_ms() - t0;
        struct timespec nap = {0, 2000000}; /* 2 ms: a compile takes hundreds */
        if ((errno != EACCES && errno != EAGAIN && errno != EINTR) || *waited_ms > limit_ms ||
            nanosleep(&nap, NULL) != 0) {
            close(fd);
            return -1;
        }
    }
    sweep_once(d);
    return fd;
}

void kc_unlock(const kc_dir *d, const char *name, int fd) {
    if (fd < 0) return;
    /* Remove the name only while it is still this lock: a process waiting on
     * the file removed here locks it and finds the entry built; one arriving
     * after finds the entry, or at worst builds beside another -- safe. */
    struct stat a, b;
    if (fstat(fd, &a) == 0 && fstatat(d->fd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
        unlinkat(d->fd, name, 0);
    close(fd); /* releases the lock */
}

/* ------------------------------------------------------------------ tools */
/* For `python -m tack cache` (tack.h: tack_cache_path and the rest): what
 * in the directory Tack wrote, judged without changing anything (kc_read
 * removes what it cannot use; these never remove a file they did not
 * recognize).  Tack's files are the sealed entries (every kc_store: kernels,
 * program binaries, compiler records), the source kept beside a CPU
 * kernel ("KEY.c": 32 hex digits, written whole but not sealed) and the
 * temporaries of builds (kc_tmp_name's names).  Everything else -- build
 * locks, which their build removes, included -- is left alone. */
tack_status tack_cache_path(char *buf, size_t cap) {
    char *path = cache_path();
    if (!path) return tack_last_status();
    size_t n = strlen(path);
    tack_status st = TACK_OK;
    if (!buf || n + 1 > cap)
        st = tack_set_error(TACK_ERR_VALUE, "tack_cache_path: the buffer (%zu bytes) is too short for %s", cap, path);
    else memcpy(buf, path, n + 1);
    tack_free(path);
    return st;
}

static int kept_source(const char *name) {
    if (strlen(name) != 34 || strcmp(name + 32, ".c") != 0) return 0;
    for (int i = 0; i < 32; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return 0;
    return 1;
}

/* The kind of `name` in the open directory; the checks of kc_read, without its removal. */
static tack_cache_kind classify_in(const kc_dir *d, const char *name) {
    if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..")) return TACK_CACHE_FOREIGN;
    int fd = openat(d->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return TACK_CACHE_FOREIGN;
    struct stat sb;
    tack_cache_kind kind = TACK_CACHE_FOREIGN;
    if (fstat(fd, &sb) != 0 || foreign(&sb)) goto done;
    if (kc_is_temporary(name)) {
        kind = TACK_CACHE_TEMPORARY;
        goto done;
    }
    if (kept_source(name)) {
        kind = TACK_CACHE_SOURCE;
        goto done;
    }
    if (sb.st_size < SEAL_BYTES || sb.st_size > ((off_t)1 << 30)) goto done;
    unsigned char seal[SEAL_BYTES], want[SEAL_BYTES];
    if (pread(fd, seal, SEAL_BYTES, sb.st_size - SEAL_BYTES) != SEAL_BYTES || memcmp(seal, SEAL_MAGIC, 8)) goto done;
    size_t n = (size_t)sb.st_size - SEAL_BYTES, got = 0;
    char *data = tack_malloc(n + 1);
    if (!data) goto done;
    while (got < n) {
        ssize_t r = pread(fd, data + got, n - got, (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    if (got == n) {
        seal_of(data, n, want);
        if (!memcmp(want, seal, SEAL_BYTES)) kind = TACK_CACHE_ENTRY;
    }
    tack_free(data);
done:
    close(fd);
    return kind;
}

tack_status tack_cache_classify(const char *name, tack_cache_kind *kind) {
    if (!name || !kind) return tack_set_error(TACK_ERR_VALUE, "tack_cache_classify: a NULL argument");
    kc_dir d;
    tack_status st = kc_open(&d);
    if (st != TACK_OK) return st;
    *kind = classify_in(&d, name);
    kc_close(&d);
    return TACK_OK;
}

tack_status tack_cache_remove(const char *name) {
    if (!name) return tack_set_error(TACK_ERR_VALUE, "tack_cache_remove: the name is NULL");
    kc_dir d;
    tack_status st = kc_open(&d);
    if (st != TACK_OK) return st;
    if (classify_in(&d, name) == TACK_CACHE_FOREIGN)
        st = tack_set_error(TACK_ERR_VALUE, "not removing '%.200s' from the kernel cache %s: Tack did not write it", name,
                            d.path);
    else if (unlinkat(d.fd, name, 0) != 0 && errno != ENOENT)
        st = tack_set_error(TACK_ERR_RUNTIME, "cannot remove '%.200s' from the kernel cache %s: %s", name, d.path,
                            strerror(errno));
    kc_close(&d);
    return st;
}
