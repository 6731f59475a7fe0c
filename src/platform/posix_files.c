/*
 * posix_files.c -- the kernel cache's files on Linux and macOS (platform.h).
 *
 * The rules are kcache.c's (read its opening comment and docs/security.md);
 * the system calls that carry them out are here.  The directory is walked
 * from / one component at a time with openat(O_NOFOLLOW), each step
 * checked with fstat on the descriptor just opened: ours or root's, and a
 * directory that others may write only with the sticky bit.  The last
 * descriptor is the cache: every entry is then opened relative to it with
 * O_NOFOLLOW (a link is ELOOP, never followed), O_NONBLOCK (a FIFO cannot
 * hang the open) and O_CLOEXEC, and judged by fstat of what was opened.
 * Build locks are POSIX record locks (fcntl F_SETLK), which a forked child
 * does not inherit.
 */
#include "platform/platform.h"

#if TK_POSIX
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/runtime.h"

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


static char *dup_str(const char *a) {
    size_t n = strlen(a) + 1;
    char *s = tack_malloc(n);
    if (s) memcpy(s, a, n);
    return s;
}

tack_status tk_dir_open_checked(const char *path, tk_fd *out, char **real_out) {
    *out = TK_NO_FD;
    *real_out = NULL;
    char *work = dup_str(path);
    if (!work) return tack_set_error(TACK_ERR_NOMEM, "out of memory opening the kernel cache");
    tack_status st = mkdirs(work);
    tack_free(work);
    if (st != TACK_OK) return st;
    char *real = realpath(path, NULL);
    if (!real) return tack_set_error(TACK_ERR_RUNTIME, "cannot use the kernel cache directory %s: %s", path, strerror(errno));
    int fd = -1;
    st = open_checked(real, &fd);
    if (st == TACK_OK && !(*real_out = dup_str(real))) {
        close(fd);
        st = tack_set_error(TACK_ERR_NOMEM, "out of memory opening the kernel cache");
    }
    free(real); /* realpath's malloc */
    if (st == TACK_OK) *out = fd;
    return st;
}

char *tk_default_cache_dir(void) {
    const char *base;
    const char *tail = NULL;
    /* The XDG Base Directory specification: a relative path in XDG_CACHE_HOME is invalid and is ignored. */
    if ((base = getenv("XDG_CACHE_HOME")) && base[0] == '/') tail = "/tack";
    else if ((base = getenv("HOME")) && *base) tail = "/.cache/tack";
    else return tack_set_error(TACK_ERR_RUNTIME, "no kernel cache directory: set TACK_CACHE_DIR (or HOME)"), NULL;
    size_t n = strlen(base) + strlen(tail) + 1;
    char *path = tack_malloc(n);
    if (!path) return tack_set_error(TACK_ERR_NOMEM, "out of memory opening the kernel cache"), NULL;
    snprintf(path, n, "%s%s", base, tail);
    if (path[0] != '/') { /* HOME's: XDG_CACHE_HOME's is absolute */
        tack_set_error(TACK_ERR_RUNTIME, "the kernel cache directory '%s' (from HOME) is not an absolute path; set "
                       "TACK_CACHE_DIR to one", path);
        tack_free(path);
        return NULL;
    }
    return path;
}

tk_fd tk_file_open(tk_fd dir, const char *name, int flags, int *err) {
    int o = O_NOFOLLOW | O_CLOEXEC;
    o |= (flags & TK_F_RDWR) ? O_RDWR : (flags & TK_F_WRITE) ? O_WRONLY : O_RDONLY;
    if (flags & TK_F_CREATE) o |= O_CREAT;
    if (flags & TK_F_EXCL) o |= O_EXCL;
    if (flags & TK_F_NONBLOCK) o |= O_NONBLOCK;
    int fd = openat(dir, name, o, 0600);
    *err = fd < 0 ? errno : 0;
    return fd;
}

int tk_file_block(tk_fd fd) {
    int fl = fcntl(fd, F_GETFL);
    return fl >= 0 ? fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) : -1;
}

static void info_of(const struct stat *sb, tk_file_info *info) {
    info->regular = S_ISREG(sb->st_mode);
    info->dir = S_ISDIR(sb->st_mode);
    info->ours = sb->st_uid == geteuid();
    info->others_write = (sb->st_mode & (S_IWGRP | S_IWOTH)) != 0;
    info->size = sb->st_size > 0 ? (uint64_t)sb->st_size : 0;
    info->mtime_s = (int64_t)sb->st_mtime;
    info->dev = (uint64_t)sb->st_dev;
    info->ino = (uint64_t)sb->st_ino;
}

int tk_file_info_of(tk_fd fd, tk_file_info *info) {
    struct stat sb;
    if (fstat(fd, &sb) != 0) return -1;
    info_of(&sb, info);
    return 0;
}

int tk_file_info_at(tk_fd dir, const char *name, tk_file_info *info) {
    struct stat sb;
    if (fstatat(dir, name, &sb, AT_SYMLINK_NOFOLLOW) != 0) return -1;
    info_of(&sb, info);
    return 0;
}

long tk_file_pread(tk_fd fd, void *buf, size_t n, uint64_t at) {
    for (;;) {
        ssize_t r = pread(fd, buf, n, (off_t)at);
        if (r < 0 && errno == EINTR) continue;
        return (long)r;
    }
}

int tk_file_write_all(tk_fd fd, const void *buf, size_t len) {
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

int tk_file_append_sync(tk_fd fd, const void *buf, size_t n) {
    if (lseek(fd, 0, SEEK_END) < 0 || tk_file_write_all(fd, buf, n) != 0 || fsync(fd) != 0) return -1;
    return 0;
}

int tk_file_close(tk_fd fd) { return close(fd); }
int tk_file_unlink(tk_fd dir, const char *name) { return unlinkat(dir, name, 0); }
int tk_file_rename(tk_fd dir, const char *from, const char *to) { return renameat(dir, from, dir, to); }

int tk_dir_list(tk_fd dir, void (*fn)(void *ctx, const char *name), void *ctx) {
    int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return -1;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) fn(ctx, e->d_name);
    closedir(d);
    return 0;
}

int tk_file_trylock(tk_fd fd) {
    struct flock whole = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (fcntl(fd, F_SETLK, &whole) == 0) return 0;
    return errno == EACCES || errno == EAGAIN || errno == EINTR ? 1 : -1;
}

const char *tk_strerror(int err) { return strerror(err); }

#else
typedef int tk_posix_files_unused; /* ISO C wants something in a translation unit */
#endif
