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
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"
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

double kc_now_ms(void) { return (double)tk_monotonic_ns() / 1e6; }

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

/* The directory's path as configured (tack_malloc'd, absolute, without a
 * trailing slash), or NULL with the error set. */
static char *cache_path(void) {
    char env[TK_CONFIG_STR_MAX];
    char *path = NULL;
    if (*tk_config_str(TK_CFG_CACHE_DIR, env, sizeof env)) path = str_cat(env, "");
    else return tk_default_cache_dir();
    if (!path) return tack_set_error(TACK_ERR_NOMEM, "out of memory opening the kernel cache"), NULL;
    if (!tk_path_is_absolute(path)) {
        tack_set_error(TACK_ERR_RUNTIME, "the kernel cache directory '%s' (the cache_dir setting: TACK_CACHE_DIR, "
                       "or tack.config.cache_dir) is not an absolute path; give an absolute one", path);
        tack_free(path);
        return NULL;
    }
    size_t len = strlen(path);
    while (len > 1 && (path[len - 1] == '/' || path[len - 1] == TK_PATH_SEP) && !(TK_PATH_SEP == '\\' && path[len - 2] == ':'))
        path[--len] = 0; /* a drive's root, C:\ on Windows, keeps its separator */
    return path;
}

tack_status kc_open(kc_dir *d) {
    d->fd = TK_NO_FD;
    d->path = NULL;
    char *path = cache_path();
    if (!path) return tack_last_status();
    tk_fd fd = TK_NO_FD;
    char *real = NULL;
    tack_status st = tk_dir_open_checked(path, &fd, &real); /* the rules: platform/posix_files.c, win32_files.c */
    tack_free(path);
    if (st != TACK_OK) return st;
    d->path = real;
    d->fd = fd;
    return TACK_OK;
}

void kc_close(kc_dir *d) {
    if (d->fd != TK_NO_FD) tk_file_close(d->fd);
    tack_free(d->path);
    d->fd = TK_NO_FD;
    d->path = NULL;
}

void kc_tmp_name(char *out, size_t n, const char *base, const char *suffix) {
    static _Atomic unsigned long counter;
    snprintf(out, n, "%s-%ld-%lu%s", base, tk_getpid(), (unsigned long)++counter, suffix);
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

/* Whether an open file may be trusted as an entry of ours; NULL if so. */
static const char *foreign(const tk_file_info *sb) {
    if (!sb->regular) return "not a regular file";
    if (!sb->ours) return "owned by another user";
    if (sb->others_write) return "writable by group or others";
    return NULL;
}

/* n bytes at 0 into buf; the count read. */
static size_t read_whole(tk_fd fd, char *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        long r = tk_file_pread(fd, buf + got, n - got, got);
        if (r <= 0) break;
        got += (size_t)r;
    }
    return got;
}

int kc_read(const kc_dir *d, const char *name, kc_entry *e, const char **why) {
    e->fd = TK_NO_FD;
    e->data = NULL;
    e->size = 0;
    *why = NULL;
    int err = 0;
    tk_fd fd = tk_file_open(d->fd, name, TK_F_READ | TK_F_NONBLOCK, &err);
    if (fd == TK_NO_FD) {
        if (err == ENOENT) return 0;
        *why = err == ELOOP ? "a symbolic link" : "cannot be opened";
        goto bad;
    }
    tk_file_info sb;
    if (tk_file_info_of(fd, &sb) != 0) {
        *why = "cannot be examined";
        goto bad;
    }
    if ((*why = foreign(&sb)) != NULL) goto bad;
    if (sb.size < SEAL_BYTES || sb.size > ((uint64_t)1 << 30)) {
        *why = "too short to carry a seal (truncated)";
        goto bad;
    }
    size_t n = (size_t)sb.size;
    if (!(e->data = tack_malloc(n + 1))) {
        *why = "out of memory reading it";
        goto bad;
    }
    if (read_whole(fd, e->data, n) != n) {
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
    tk_file_block(fd);
    e->fd = fd;
    e->size = n - SEAL_BYTES;
    e->data[e->size] = 0;
    return 1;
bad:
    if (fd != TK_NO_FD) tk_file_close(fd);
    tack_free(e->data);
    e->data = NULL;
    tk_file_unlink(d->fd, name); /* rebuilt by the caller; a failure here only costs a retry */
    return -1;
}

void kc_entry_free(kc_entry *e) {
    if (e->fd != TK_NO_FD) tk_file_close(e->fd);
    tack_free(e->data);
    e->fd = TK_NO_FD;
    e->data = NULL;
}

/* Create `name` holding parts[0..n), each lens[i] bytes long (lens NULL:
 * each a string, its strlen). */
static tack_status write_parts(const kc_dir *d, const char *name, const void *const *parts, const size_t *lens, int n) {
    int err = 0;
    tk_fd fd = tk_file_open(d->fd, name, TK_F_WRITE | TK_F_CREATE | TK_F_EXCL, &err);
    if (fd == TK_NO_FD) return tack_set_error(TACK_ERR_RUNTIME, "cannot write %s/%s: %s", d->path, name, tk_strerror(err));
    for (int i = 0; i < n; i++) {
        if (tk_file_write_all(fd, parts[i], lens ? lens[i] : strlen(parts[i])) != 0) {
            err = errno;
            tk_file_close(fd);
            tk_file_unlink(d->fd, name);
            return tack_set_error(TACK_ERR_RUNTIME, "cannot write %s/%s: %s", d->path, name, tk_strerror(err));
        }
    }
    if (tk_file_close(fd) != 0) {
        err = errno;
        tk_file_unlink(d->fd, name);
        return tack_set_error(TACK_ERR_RUNTIME, "cannot write %s/%s: %s", d->path, name, tk_strerror(err));
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
    tk_fd fd = tk_file_open(d->fd, tmp, TK_F_RDWR | TK_F_NONBLOCK, &err);
    tk_file_info sb;
    if (fd == TK_NO_FD || tk_file_info_of(fd, &sb) != 0) {
        if (fd != TK_NO_FD) err = errno;
        what = "cannot open it";
    } else if ((what = foreign(&sb)) != NULL) {
    } else if (sb.size > ((uint64_t)1 << 30) || !(buf = tack_malloc((size_t)sb.size + 1))) {
        what = "too large";
    } else {
        size_t n = (size_t)sb.size;
        size_t got = read_whole(fd, buf, n);
        unsigned char seal[SEAL_BYTES];
        seal_of(buf, n, seal);
        if (got != n) what = "it changed while being read";
        else if (tk_file_append_sync(fd, seal, SEAL_BYTES) != 0) {
            err = errno;
            what = "cannot write it";
        }
    }
    if (fd != TK_NO_FD && tk_file_close(fd) != 0 && !what) {
        err = errno;
        what = "cannot write it";
    }
    if (!what && tk_file_rename(d->fd, tmp, name) != 0) {
        tk_file_info in;
        err = errno;
        what = "cannot rename it into place";
        /* A directory cannot be renamed over (a FIFO, a link or a damaged file can, and is):
         * say what is in the way rather than only EISDIR, and leave it and what it holds. */
        if (tk_file_info_at(d->fd, name, &in) == 0 && in.dir) {
            err = 0;
            what = "a directory is in its place, which Tack did not make and leaves alone: remove it "
                   "(the kernel cache holds only files Tack writes), or set TACK_CACHE_DIR to another directory";
        }
    }
    if (what) {
        tk_file_unlink(d->fd, tmp);
        st = tack_set_error(TACK_ERR_RUNTIME, "cannot store the compiled kernel %s/%s: %s%s%s", d->path, name, what,
                            err ? ": " : "", err ? tk_strerror(err) : "");
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
    static const char *const suffix[] = {TK_DL_SUFFIX ".tmp", ".tmp", ".c"};
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

typedef struct sweep_ctx {
    const kc_dir *d;
    int64_t now;
    int stale_s, removed;
} sweep_ctx;

static void sweep_one(void *ctx, const char *name) {
    sweep_ctx *c = ctx;
    tk_file_info sb;
    if (!kc_is_temporary(name) || tk_file_info_at(c->d->fd, name, &sb) != 0) return;
    if (!sb.regular || !sb.ours || c->now - sb.mtime_s <= c->stale_s) return;
    if (tk_file_unlink(c->d->fd, name) == 0) c->removed++;
}

int kc_sweep(const kc_dir *d, int stale_s) {
    sweep_ctx c = {d, tk_wall_s(), stale_s, 0};
    if (tk_dir_list(d->fd, sweep_one, &c) != 0) return 0;
    int removed = c.removed;
    if (removed && kc_log_info())
        fprintf(stderr, "tack: removed %d leftover temporar%s older than %d s from the kernel cache %s\n", removed,
                removed == 1 ? "y" : "ies", stale_s, d->path);
    return removed;
}

/* Once per process and directory: the first build lock taken there. */
static void sweep_once(const kc_dir *d) {
    static tk_mutex_t lock = TK_MUTEX_INIT;
    static uint64_t dev, ino;
    static long pid;
    tk_file_info sb;
    if (tk_file_info_of(d->fd, &sb) != 0) return;
    tk_mutex_lock(&lock);
    int seen = pid == tk_getpid() && dev == sb.dev && ino == sb.ino;
    if (!seen) {
        dev = sb.dev;
        ino = sb.ino;
        pid = tk_getpid();
    }
    tk_mutex_unlock(&lock);
    if (!seen) kc_sweep(d, KC_STALE_S);
}

/* -------------------------------------------------------------- build lock */
tk_fd kc_lock(const kc_dir *d, const char *name, double limit_ms, double *waited_ms) {
    double t0 = kc_now_ms();
    *waited_ms = 0;
    int err = 0;
    tk_fd fd = tk_file_open(d->fd, name, TK_F_RDWR | TK_F_CREATE | TK_F_NONBLOCK, &err);
    if (fd == TK_NO_FD) return TK_NO_FD;
    tk_file_info sb;
    if (tk_file_info_of(fd, &sb) != 0 || !sb.regular || !sb.ours) { /* not a lock of ours */
        tk_file_close(fd);
        return TK_NO_FD;
    }
    /* On POSIX a record lock, not flock(): a process forked while one of its
     * threads builds does not inherit it (flock's lock belongs to the open
     * file, which the child's copy of the descriptor would keep locked). */
    for (;;) {
        int r = tk_file_trylock(fd);
        if (r == 0) break;
        *waited_ms = kc_now_ms() - t0;
        if (r < 0 || *waited_ms > limit_ms || tk_sleep_ns(2000000) != 0) { /* 2 ms: a compile takes hundreds */
            tk_file_close(fd);
            return TK_NO_FD;
        }
    }
    sweep_once(d);
    return fd;
}

void kc_unlock(const kc_dir *d, const char *name, tk_fd fd) {
    if (fd == TK_NO_FD) return;
    /* Remove the name only while it is still this lock: a process waiting on
     * the file removed here locks it and finds the entry built; one arriving
     * after finds the entry, or at worst builds beside another -- safe. */
    tk_file_info a, b;
    if (tk_file_info_of(fd, &a) == 0 && tk_file_info_at(d->fd, name, &b) == 0 && a.dev == b.dev && a.ino == b.ino)
        tk_file_unlink(d->fd, name);
    tk_file_close(fd); /* releases the lock */
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
    if (!*name || strchr(name, '/') || (TK_PATH_SEP == '\\' && (strchr(name, '\\') || strchr(name, ':'))) ||
        !strcmp(name, ".") || !strcmp(name, ".."))
        return TACK_CACHE_FOREIGN;
    int err = 0;
    tk_fd fd = tk_file_open(d->fd, name, TK_F_READ | TK_F_NONBLOCK, &err);
    if (fd == TK_NO_FD) return TACK_CACHE_FOREIGN;
    tk_file_info sb;
    tack_cache_kind kind = TACK_CACHE_FOREIGN;
    if (tk_file_info_of(fd, &sb) != 0 || foreign(&sb)) goto done;
    if (kc_is_temporary(name)) {
        kind = TACK_CACHE_TEMPORARY;
        goto done;
    }
    if (kept_source(name)) {
        kind = TACK_CACHE_SOURCE;
        goto done;
    }
    if (sb.size < SEAL_BYTES || sb.size > ((uint64_t)1 << 30)) goto done;
    unsigned char seal[SEAL_BYTES], want[SEAL_BYTES];
    if (tk_file_pread(fd, seal, SEAL_BYTES, sb.size - SEAL_BYTES) != SEAL_BYTES || memcmp(seal, SEAL_MAGIC, 8)) goto done;
    size_t n = (size_t)sb.size - SEAL_BYTES;
    char *data = tack_malloc(n + 1);
    if (!data) goto done;
    if (read_whole(fd, data, n) == n) {
        seal_of(data, n, want);
        if (!memcmp(want, seal, SEAL_BYTES)) kind = TACK_CACHE_ENTRY;
    }
    tack_free(data);
done:
    tk_file_close(fd);
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
    else if (tk_file_unlink(d.fd, name) != 0 && errno != ENOENT)
        st = tack_set_error(TACK_ERR_RUNTIME, "cannot remove '%.200s' from the kernel cache %s: %s", name, d.path,
                            tk_strerror(errno));
    kc_close(&d);
    return st;
}
