/*
 * pool.h -- the persistent CPU thread pool (pool.c).
 */
#ifndef TACK_POOL_H
#define TACK_POOL_H

#include <stdint.h>

/* Usable cores (sched_getaffinity), at least 1; the pool has this many
 * threads counting the caller. */
int pool_threads(void);

/* Run fn(frame, lo, hi) over [0, n) split statically into one share per
 * thread.  Ranges below `min_parallel` run on the calling thread, with no
 * wake-up; so does everything while another thread is using the pool.
 * With `stop` (may be NULL), each share runs in pieces of about 5 ms, and a
 * thread leaves its share when stop(stop_arg) returns non-zero after a
 * piece; a range below min_parallel runs whole. */
void pool_run(void (*fn)(void *frame, int64_t lo, int64_t hi), void *frame, int64_t n, int64_t min_parallel,
              int (*stop)(void *arg), void *stop_arg);

#endif /* TACK_POOL_H */
