/*
 * pool.c -- the persistent thread pool that runs parallel loops on the CPU.
 *
 * One pool per process, started on the first launch big enough to need it,
 * with one worker per usable core (sched_getaffinity, so taskset and
 * container CPU sets are honoured; TACK_NUM_THREADS overrides) minus one:
 * the calling thread takes the first chunk itself.  Work is split
 * statically: thread t runs [n*t/T, n*(t+1)/T).  Kernels are regular loops,
 * so static chunks balance well and cost nothing to hand out.
 *
 * Waking a sleeping thread costs microseconds (a futex wake and a trip
 * through the scheduler), which is more than a medium-sized loop takes to
 * run.  So both sides spin briefly before they sleep, as OpenMP runtimes
 * do: a worker that has finished a chunk watches the job generation for
 * SPIN_NS before it blocks on the condition variable, and the caller
 * watches the count of unfinished chunks the same way.  Back-to-back
 * launches then hand work over through one cache line.  Sleeping is safe
 * against lost wake-ups by the usual pairing of sequentially consistent
 * atomics: a sleeper announces itself (sleepers++, caller_sleeping = 1)
 * before its last look at the condition, and a publisher changes the
 * condition before it looks for sleepers, so one of the two always sees
 * the other; the publisher then signals under the mutex.
 *
 * The pool serves one launch at a time: a second thread that finds it busy
 * (a concurrent tack_launch) runs its loop on its own thread instead of
 * waiting, so launches from several threads never deadlock and never queue
 * behind each other.  Small ranges (n < min_parallel) also stay on the
 * caller, with no hand-over at all.
 *
 * A launch that can be interrupted (interrupt.c) passes a `stop` test, and
 * then each thread runs its share in pieces instead of in one call: the
 * first piece a fraction of a millisecond by the body's estimated cost (64
 * iterations of a body with loops), each next one twice as long while pieces
 * take under 2.5 ms and half as long over 10 ms, so a piece lasts about
 * 5 ms whatever an iteration costs, and stop() is asked between pieces.
 * The dozen extra calls and clock reads a share makes this way cost
 * nothing against the milliseconds it runs.
 *
 * After fork() the child has no workers; an atfork handler resets the pool
 * so the child starts its own on demand.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/pool.h"
#include "tack.h"

typedef void (*pool_fn)(void *frame, int64_t lo, int64_t hi);

#define SPIN_NS 50000 /* 50 microseconds */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    pthread_mutex_t busy;
    int workers; /* started worker threads */
    int started;
    /* the job; written by the caller before gen is bumped */
    pool_fn fn;
    void *frame;
    int64_t n;
    int parts;
    int64_t first;
    int (*stop)(void *);
    void *stop_arg;
    _Atomic uint64_t gen;
    _Atomic int remaining;
    _Atomic int sleepers;        /* workers blocked (or about to block) on `wake` */
    _Atomic int caller_sleeping; /* the caller blocked (or about to block) on `done` */
} P = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER,
       .busy = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int nthreads = 1;

static void after_fork_child(void) {
    pthread_mutex_init(&P.lock, NULL);
    pthread_cond_init(&P.wake, NULL);
    pthread_cond_init(&P.done, NULL);
    pthread_mutex_init(&P.busy, NULL);
    P.workers = 0;
    P.started = 0;
    atomic_store(&P.remaining, 0);
    atomic_store(&P.sleepers, 0);
    atomic_store(&P.caller_sleeping, 0);
}

static void init_once(void) {
    int n = 1;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
    else {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c > 0 ? (int)c : 1;
    }
    const char *env = getenv("TACK_NUM_THREADS");
    if (env && atoi(env) > 0) n = atoi(env);
    if (n < 1) n = 1;
    if (n > 256) n = 256;
    nthreads = n;
    pthread_atfork(NULL, NULL, after_fork_child);
}

int pool_threads(void) {
    pthread_once(&once, init_once);
    return nthreads;
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Spin until gen differs from `seen` or SPIN_NS pass; the new gen or `seen`. */
static uint64_t spin_for_job(uint64_t seen) {
    int64_t t0 = now_ns();
    for (unsigned i = 1;; i++) {
        uint64_t g = atomic_load_explicit(&P.gen, memory_order_acquire);
        if (g != seen) return g;
        relax();
        if ((i & 63) == 0 && now_ns() - t0 > SPIN_NS) return seen;
    }
}

#define PIECE_HEAVY 64
#define PIECE_NS 5000000 /* 5 ms */

/* [lo, hi) in pieces of about PIECE_NS, asking stop() after each. */
static void run_pieces(pool_fn fn, void *frame, int64_t lo, int64_t hi, int64_t first, int (*stop)(void *),
                       void *stop_arg) {
    int64_t step = first;
    while (lo < hi) {
        int64_t e = hi - lo > step ? lo + step : hi;
        int64_t t0 = now_ns();
        fn(frame, lo, e);
        int64_t dt = now_ns() - t0;
        lo = e;
        if (stop(stop_arg)) return;
        if (dt < PIECE_NS / 2 && step < ((int64_t)1 << 60)) step *= 2;
        else if (dt > 2 * PIECE_NS && step > 1) step /= 2;
    }
}

/* The first piece, from the fewest iterations worth a fork-join (emit_cpu.c's
 * estimate of a body's cost: 8192-32768 iterations take a few
 * microseconds): eight times that for a plain body, a fraction of a
 * millisecond; PIECE_HEAVY iterations of a body with loops or calls
 * (min_parallel 2), whose iterations may each take long -- enough to fill
 * the SIMD lanes of an n-body's outer loop. */
static int64_t first_piece(int64_t min_parallel) {
    return min_parallel >= 8192 ? 8 * min_parallel : PIECE_HEAVY;
}

static void run_range(pool_fn fn, void *frame, int64_t lo, int64_t hi, int64_t first, int (*stop)(void *),
                      void *stop_arg) {
    if (stop) run_pieces(fn, frame, lo, hi, first, stop, stop_arg);
    else fn(frame, lo, hi);
}

static void run_part(int t) {
    int64_t lo = (int64_t)((__int128)P.n * t / P.parts), hi = (int64_t)((__int128)P.n * (t + 1) / P.parts);
    if (lo < hi) run_range(P.fn, P.frame, lo, hi, P.first, P.stop, P.stop_arg);
}

typedef struct { int t; uint64_t seen; } worker_arg;

static void *worker(void *arg) {
    worker_arg *wa = arg;
    int t = wa->t;
    uint64_t seen = wa->seen; /* a job published before this thread ran is still seen */
    free(wa);
    for (;;) {
        uint64_t g = spin_for_job(seen);
        if (g == seen) {
            pthread_mutex_lock(&P.lock);
            atomic_fetch_add(&P.sleepers, 1);
            while ((g = atomic_load(&P.gen)) == seen) pthread_cond_wait(&P.wake, &P.lock);
            atomic_fetch_sub(&P.sleepers, 1);
            pthread_mutex_unlock(&P.lock);
        }
        seen = g;
        if (t < P.parts) run_part(t);
        if (atomic_fetch_sub(&P.remaining, 1) == 1 && atomic_load(&P.caller_sleeping)) {
            pthread_mutex_lock(&P.lock);
            pthread_cond_signal(&P.done);
            pthread_mutex_unlock(&P.lock);
        }
    }
    return NULL;
}

/* Start the workers; returns how many run (0: run everything serially). */
static int start(void) {
    if (P.started) return P.workers;
    P.started = 1;
    int want = nthreads - 1;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (int i = 0; i < want; i++) {
        pthread_t th;
        worker_arg *wa = malloc(sizeof *wa);
        if (!wa) break;
        wa->t = i + 1;
        wa->seen = atomic_load(&P.gen);
        if (pthread_create(&th, &attr, worker, wa) != 0) {
            free(wa);
            break;
        }
        P.workers++;
    }
    pthread_attr_destroy(&attr);
    return P.workers;
}

void pool_run(pool_fn fn, void *frame, int64_t n, int64_t min_parallel, int (*stop)(void *), void *stop_arg) {
    if (n <= 0) return;
    pthread_once(&once, init_once);
    if (n < min_parallel || n < 2) {
        fn(frame, 0, n);
        return;
    }
    if (nthreads <= 1 || pthread_mutex_trylock(&P.busy) != 0) {
        run_range(fn, frame, 0, n, first_piece(min_parallel), stop, stop_arg);
        return;
    }
    int workers = start();
    if (workers == 0) {
        pthread_mutex_unlock(&P.busy);
        run_range(fn, frame, 0, n, first_piece(min_parallel), stop, stop_arg);
        return;
    }
    int parts = workers + 1;
    if (n < parts) parts = (int)n;
    /* Publish: the job, then the count, then the generation (release). */
    P.fn = fn;
    P.frame = frame;
    P.n = n;
    P.parts = parts;
    P.first = first_piece(min_parallel);
    P.stop = stop;
    P.stop_arg = stop_arg;
    atomic_store(&P.remaining, workers);
    atomic_fetch_add(&P.gen, 1);
    if (atomic_load(&P.sleepers) > 0) {
        pthread_mutex_lock(&P.lock);
        pthread_cond_broadcast(&P.wake);
        pthread_mutex_unlock(&P.lock);
    }
    run_part(0);
    /* Wait for the workers: spin, then sleep. */
    int64_t t0 = now_ns();
    for (unsigned i = 1; atomic_load_explicit(&P.remaining, memory_order_acquire) > 0; i++) {
        relax();
        if ((i & 63) == 0 && now_ns() - t0 > SPIN_NS) {
            pthread_mutex_lock(&P.lock);
            atomic_store(&P.caller_sleeping, 1);
            while (atomic_load(&P.remaining) > 0) pthread_cond_wait(&P.done, &P.lock);
            atomic_store(&P.caller_sleeping, 0);
            pthread_mutex_unlock(&P.lock);
            break;
        }
    }
    pthread_mutex_unlock(&P.busy);
}
