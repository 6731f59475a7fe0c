/*
 * kcache.c -- the kernel cache's shared rules.
 *
 * Each backend's toolchain (cpu_jit.c for shared objects, cuda_launch.c for
 * PTX) keeps compiled kernels on disk under one directory and one set of
 * rules, kept here so that they cannot drift apart:
 *
 *   - where: TACK_CACHE_DIR, else $XDG_CACHE_HOME/tack, else ~/.cache/tack;
 *   - who: the directory must belong to this user and be writable by no one
 *     else, because loading a cached kernel runs its code -- a directory
 *     another user can write is a way to run their code in our process;
 *   - keys: a 128-bit hash of everything that decides the compiled bytes
 *     (source, dialect, toolchain identity, flags, Tack's version), with a
 *     separator after each field so that ("ab", "c") and ("a", "bc") differ.
 *
 * Writing entries atomically (temporary file + rename) and checking an
 * entry's key on load are each toolchain's own business, since what an
 * entry is differs (a shared object, a text file of PTX).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/kcache.h"

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

int kc_log_info(void) {
    const char *v = getenv("TACK_LOG");
    return v && (!strcmp(v, "info") || !strcmp(v, "debug"));
}

static tack_status mkdirs(const char *path) {
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
            return tack_set_error(TACK_ERR_RUNTIME, "cannot create the kernel cache directory %s: %s", tmp,
                                  strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
        return tack_set_error(TACK_ERR_RUNTIME, "cannot create the kernel cache directory %s: %s", tmp,
                              strerror(errno));
    return TACK_OK;
}

tack_status kc_dir(char *out, size_t n) {
    const char *d = getenv("TACK_CACHE_DIR");
    if (d && *d)
        snprintf(out, n, "%s", d);
    else if ((d = getenv("XDG_CACHE_HOME")) && *d)
        snprintf(out, n, "%s/tack", d);
    else if ((d = getenv("HOME")) && *d)
        snprintf(out, n, "%s/.cache/tack", d);
    else
        return tack_set_error(TACK_ERR_RUNTIME, "no kernel cache directory: set TACK_CACHE_DIR (or HOME)");
    size_t len = strlen(out);
    while (len > 1 && out[len - 1] == '/')
        out[--len] = 0;
    tack_status st = mkdirs(out);
    if (st != TACK_OK)
        return st;
    struct stat sb;
    if (stat(out, &sb) != 0)
        return tack_set_error(TACK_ERR_RUNTIME, "cannot use the kernel cache directory %s: %s", out,
                              strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return tack_set_error(TACK_ERR_RUNTIME, "the kernel cache path %s is not a directory", out);
    if (sb.st_uid != geteuid())
        return tack_set_error(TACK_ERR_RUNTIME,
                              "refusing the kernel cache directory %s: it is owned by another user (uid %u); "
                              "loading cached kernels runs their code (set TACK_CACHE_DIR to a directory of yours)",
                              out, (unsigned)sb.st_uid);
    if (sb.st_mode & (S_IWGRP | S_IWOTH))
        return tack_set_error(TACK_ERR_RUNTIME,
                              "refusing the kernel cache directory %s: it is writable by group or others; loading "
                              "cached kernels runs their code (chmod go-w %s)",
                              out, out);
    return TACK_OK;
}

tack_status kc_write_new(const char *path, const char *const *parts, int n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return tack_set_error(TACK_ERR_RUNTIME, "cannot write %s: %s", path, strerror(errno));
    for (int i = 0; i < n; i++) {
        size_t len = strlen(parts[i]), off = 0;
        while (off < len) {
            ssize_t w = write(fd, parts[i] + off, len - off);
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                int err = errno;
                close(fd);
                unlink(path);
                return tack_set_error(TACK_ERR_RUNTIME, "cannot write %s: %s", path, strerror(err));
            }
            off += (size_t)w;
        }
    }
    if (close(fd) != 0) {
        int err = errno;
        unlink(path);
        return tack_set_error(TACK_ERR_RUNTIME, "cannot write %s: %s", path, strerror(err));
    }
    return TACK_OK;
}
