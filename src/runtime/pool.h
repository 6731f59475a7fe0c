/*
 * pool.h -- the persistent CPU thread pool (pool.c).
 */
#ifndef TACK_POOL_H
#define TACK_POOL_H

#include <stdint.h>

/* The threads a launch runs on, counting the caller: the num_threads
 * setting, or the usable cores (sched_getaffinity) when it is 0; at least 1.
 * Between pool_launch_begin and pool_launch_end on a thread, the count taken
 * at pool_launch_begin (a launch's loops all see one count). */
int pool_threads(void);
void pool_launch_begin(void);
void pool_launch_end(void);

/* The calling thread's slot, 0 <= slot < pool_threads(): no two threads
 * running pieces of one launch have the same (generated code keeps
 * per-thread private copies of a histogram in the launch's frame by it). */
int pool_slot(void);

/* Run fn(frame, lo, hi) over [0, n), every index exactly once, in pieces
 * that the threads claim as they go: each starts on its static share and
 * then takes from the others' (pool.c).  A piece is at least `grain`
 * iterations (or the pool's own grain from min_parallel, if larger) unless
 * a thread's whole share is smaller.  Ranges below `min_parallel` run on the
 * calling thread in one call, with no wake-up; so does everything while
 * another thread is using the pool.  With `stop` (may be NULL), pieces last
 * about 5 ms at most, and after stop(stop_arg, now) returns non-zero
 * following a piece, no new piece starts; a range below min_parallel runs
 * whole.  `now` is the monotonic clock (tk_monotonic_ns) read just before,
 * or 0 when the thread did not read it after that piece: a thread reads it
 * after its first piece and then about once per millisecond of its work
 * (pool.c), so a stop() that needs the time looks only when given one.  With
 * `flush`, every call of fn, on whichever thread, runs with subnormal floats
 * flushed to zero, the thread's own mode put back after it (fpmode.c). */
void pool_run(void (*fn)(void *frame, int64_t lo, int64_t hi), void *frame, int64_t n, int64_t min_parallel,
              int64_t grain, int (*stop)(void *arg, int64_t now), void *stop_arg, int flush);

#endif /* TACK_POOL_H */
