/*
 * kcache.h -- what every backend's toolchain shares: the on-disk kernel
 * cache (its directory, checked once and used through a descriptor; sealed
 * entries), the cache-key hash, timing and logging.
 */
#ifndef TACK_KCACHE_H
#define TACK_KCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "tack.h"
#include "platform/platform.h"

/* A 128-bit FNV-1a style hash: two 64-bit lanes with different seeds. */
typedef struct hash2 { uint64_t a, b; } hash2;
#define TACK_HASH2_INIT {0xcbf29ce484222325ULL, 0x6c62272e07bb0142ULL}

void kc_hash_add(hash2 *h, const void *data, size_t n);
void kc_hash_str(hash2 *h, const char *s);

/* The cache directory, open.  Every entry is reached relative to fd, so
 * nothing that happens to the path after kc_open changes which directory is
 * used; path is kept for messages and for tools run inside the directory. */
typedef struct kc_dir {
    tk_fd fd;
    char *path; /* the resolved path (tack_malloc'd) */
} kc_dir;

/* Open the cache directory (TACK_CACHE_DIR, else $XDG_CACHE_HOME/tack, else
 * ~/.cache/tack), creating it if needed.  Refused, with an error that says
 * why and what to do, unless it is a directory owned by this user that
 * nobody else may write, and no directory above it lets another user
 * replace it (each is owned by root or this user, and one that others may
 * write has the sticky bit and holds a directory of root's or ours). */
tack_status kc_open(kc_dir *d);
void kc_close(kc_dir *d);

/* An entry as read and verified: its contents without the seal, and the
 * open file (for loaders that take a file, as dlopen does). */
typedef struct kc_entry {
    tk_fd fd;
    char *data;  /* contents, NUL-terminated (tack_malloc'd) */
    size_t size; /* bytes before the seal */
} kc_entry;

/* Read entry `name`: 1 when it is a regular file of ours that nobody else
 * may write and its seal matches its contents; 0 when it is missing; -1
 * when it is there but unusable (not a regular file, foreign, damaged,
 * unsealed), in which case it has been removed and *why says what was wrong. */
int kc_read(const kc_dir *d, const char *name, kc_entry *e, const char **why);
void kc_entry_free(kc_entry *e);

/* Create `name` (which must not exist) holding the concatenated strings
 * parts[0..n); on failure nothing is left behind. */
tack_status kc_write_new(const kc_dir *d, const char *name, const char *const *parts, int n);

/* Seal the finished file `tmp` (written by us or by a tool we ran in the
 * directory) and rename it to `name`: it must be a regular file of ours; a
 * seal (a digest of its bytes and their count) is appended, the data is
 * flushed to disk, then the rename makes it visible whole.  `tmp` is gone
 * afterwards, whatever happened. */
tack_status kc_seal(const kc_dir *d, const char *tmp, const char *name);

/* kc_write_new to a unique temporary name, then kc_seal to `name`. */
tack_status kc_store(const kc_dir *d, const char *name, const char *const *parts, int n);
/* The same for binary parts: parts[i] is lens[i] bytes (a program binary
 * may hold NUL bytes). */
tack_status kc_store_bytes(const kc_dir *d, const char *name, const void *const *parts, const size_t *lens, int n);

/* The build lock of one entry, `name` (the key and ".lock"): many processes
 * that miss the same entry at once -- MPI ranks or Dask workers starting
 * together -- wait for the first one's build instead of each running the
 * compiler.  Returns a descriptor to pass to kc_unlock, or -1 when the lock
 * could not be had (the file system has no locks, a signal arrived, or
 * limit_ms passed): the caller then builds unlocked, which is safe, since
 * every entry is renamed into place whole.  *waited_ms: how long it waited. */
tk_fd kc_lock(const kc_dir *d, const char *name, double limit_ms, double *waited_ms);
/* Release and remove the lock (fd -1: nothing to do). */
void kc_unlock(const kc_dir *d, const char *name, tk_fd fd);

/* A unique temporary name for `base` in this process: "base-PID-N.suffix". */
void kc_tmp_name(char *out, size_t n, const char *base, const char *suffix);
/* Whether `name` is one (with suffix .so.tmp, .tmp or .c). */
int kc_is_temporary(const char *name);
/* Remove the temporaries of ours in the directory whose last change is more
 * than stale_s seconds old (a process killed mid-build left them); returns
 * how many.  kc_lock does it, with a day, the first time a process takes a
 * build lock in a directory. */
int kc_sweep(const kc_dir *d, int stale_s);

double kc_now_ms(void);
/* TACK_LOG=info (or debug): log compiles and cache loads to stderr. */
int kc_log_info(void);

#endif
