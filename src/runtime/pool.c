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
 * A launch publishes the job under the pool lock, bumps a generation number
 * and broadcasts; workers run their chunk and count down; the caller waits
 * for the count to reach zero.  The pool serves one launch at a time: a
 * second thread that finds it busy (a concurrent tack_launch) runs its loop
 * on its own thread instead of waiting, so launches from several threads
 * never deadlock and never queue behind each other.  Small ranges
 * (n < min_parallel) also stay on the caller, with no wake-up at all.
 *
 * After fork() the child has no workers; an atfork handler resets the pool
 * so the child starts its own on demand.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/pool.h"
#include "tack.h"

typedef void (*pool_fn)(void *frame, int64_t lo, int64_t hi);

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    pthread_mutex_t busy;
    int workers;      /* started worker threads */
    int started;
    uint64_t gen;
    uint64_t base_gen; /* gen when the workers were started */
    pool_fn fn;
    void *frame;
    int64_t n;
    int parts;
    int remaining;
} P = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
       0, 0, 0, 0, NULL, NULL, 0, 0, 0};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int nthreads = 1;

static void after_fork_child(void) {
    pthread_mutex_init(&P.lock, NULL);
    pthread_cond_init(&P.wake, NULL);
    pthread_cond_init(&P.done, NULL);
    pthread_mutex_init(&P.busy, NULL);
    P.workers = 0;
    P.started = 0;
    P.remaining = 0;
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

int tack_pool_threads(void) {
    pthread_once(&once, init_once);
    return nthreads;
}

static void run_part(pool_fn fn, void *frame, int64_t n, int parts, int t) {
    int64_t lo = (int64_t)((__int128)n * t / parts), hi = (int64_t)((__int128)n * (t + 1) / parts);
    if (lo < hi) fn(frame, lo, hi);
}

static void *worker(void *arg) {
    int t = (int)(intptr_t)arg;
    pthread_mutex_lock(&P.lock);
    uint64_t seen = P.base_gen; /* a job published before this thread ran is still seen */
    for (;;) {
        while (P.gen == seen) pthread_cond_wait(&P.wake, &P.lock);
        seen = P.gen;
        pool_fn fn = P.fn;
        void *frame = P.frame;
        int64_t n = P.n;
        int parts = P.parts;
        pthread_mutex_unlock(&P.lock);
        if (t < parts) run_part(fn, frame, n, parts, t);
        pthread_mutex_lock(&P.lock);
        if (--P.remaining == 0) pthread_cond_signal(&P.done);
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
    pthread_mutex_lock(&P.lock);
    P.base_gen = P.gen;
    for (int i = 0; i < want; i++) {
        pthread_t th;
        if (pthread_create(&th, &attr, worker, (void *)(intptr_t)(i + 1)) != 0) break;
        P.workers++;
    }
    pthread_mutex_unlock(&P.lock);
    pthread_attr_destroy(&attr);
    return P.workers;
}

void tack_pool_run(pool_fn fn, void *frame, int64_t n, int64_t min_parallel) {
    if (n <= 0) return;
    pthread_once(&once, init_once);
    if (nthreads <= 1 || n < min_parallel || n < 2 || pthread_mutex_trylock(&P.busy) != 0) {
        fn(frame, 0, n);
        return;
    }
    int workers = start();
    if (workers == 0) {
        pthread_mutex_unlock(&P.busy);
        fn(frame, 0, n);
        return;
    }
    int parts = workers + 1;
    if (n < parts) parts = (int)n;
    pthread_mutex_lock(&P.lock);
    P.fn = fn;
    P.frame = frame;
    P.n = n;
    P.parts = parts;
    P.remaining = workers;
    P.gen++;
    pthread_cond_broadcast(&P.wake);
    pthread_mutex_unlock(&P.lock);
    run_part(fn, frame, n, parts, 0);
    pthread_mutex_lock(&P.lock);
    while (P.remaining > 0) pthread_cond_wait(&P.done, &P.lock);
    pthread_mutex_unlock(&P.lock);
    pthread_mutex_unlock(&P.busy);
}
