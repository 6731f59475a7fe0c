/*
 * kcache.h -- what every backend's toolchain shares: the on-disk kernel
 * cache's directory rules, the cache-key hash, timing and logging.
 */
#ifndef TACK_KCACHE_H
#define TACK_KCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "tack.h"

/* A 128-bit FNV-1a style hash: two 64-bit lanes with different seeds. */
typedef struct hash2 { uint64_t a, b; } hash2;
#define TACK_HASH2_INIT {0xcbf29ce484222325ULL, 0x6c62272e07bb0142ULL}

void kc_hash_add(hash2 *h, const void *data, size_t n);
void kc_hash_str(hash2 *h, const char *s);

/* The cache directory (TACK_CACHE_DIR, else $XDG_CACHE_HOME/tack, else
 * ~/.cache/tack), created if needed and refused unless it is a directory
 * owned by this user and writable by nobody else: loading a cached kernel
 * runs its code. */
tack_status kc_dir(char *out, size_t n);

/* Create `path` (which must not exist) holding the concatenated strings
 * parts[0..n); on failure nothing is left behind.  Callers write to a
 * temporary name and rename it into place, so readers never see a partial
 * entry. */
tack_status kc_write_new(const char *path, const char *const *parts, int n);

double kc_now_ms(void);
/* TACK_LOG=info (or debug): log compiles and cache loads to stderr. */
int kc_log_info(void);

#endif
