/* test_pool.c -- the CPU thread pool (src/runtime/pool.c): every index of a
 * launch runs exactly once whatever the thread count, grain and sizes, late
 * threads' shares are taken by the others, and stop() ends a launch early.
 * Each thread count runs in a child process of its own (a fresh pool), and
 * one process changes the num_threads setting between launches. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "runtime/pool.h"
#include "runtime/runtime.h"

#define MAXN 5000

typedef struct {
    _Atomic int visits[MAXN];
    _Atomic int calls;
    int64_t sleep_below;      /* pieces starting below this index sleep (a slow thread) */
    int64_t sleep_ns;
} frame_t;

static void sleep_ns(int64_t ns) {
    struct timespec ts = {ns / 1000000000, ns % 1000000000};
    nanosleep(&ts, NULL);
}

static void body(void *fp, int64_t lo, int64_t hi) {
    frame_t *f = fp;
    atomic_fetch_add(&f->calls, 1);
    if (lo < f->sleep_below) sleep_ns(f->sleep_ns);
    for (int64_t i = lo; i < hi; i++) atomic_fetch_add(&f->visits[i], 1);
}

static frame_t F;

static void reset(void) {
    for (int i = 0; i < MAXN; i++) atomic_store(&F.visits[i], 0);
    atomic_store(&F.calls, 0);
    F.sleep_below = 0;
    F.sleep_ns = 0;
}

static int exactly_once(int64_t n) {
    for (int64_t i = 0; i < MAXN; i++)
        if (atomic_load(&F.visits[i]) != (i < n ? 1 : 0)) {
            fprintf(stderr, "n=%lld: index %lld visited %d times\n", (long long)n, (long long)i,
                    atomic_load(&F.visits[i]));
            return 0;
        }
    return 1;
}

/* Every n from 0 to MAXN's neighbourhood, several grains and min_parallel values,
 * back to back (late workers meet newer launches). */
static void test_every_index_once(void) {
    static const int64_t grains[] = {0, 1, 3, 64, 100, 1000, 100000};
    static const int64_t mins[] = {2, 8192};
    for (int64_t n = 0; n <= MAXN; n += (n < 300 ? 1 : 97)) {
        for (size_t g = 0; g < sizeof grains / sizeof *grains; g++) {
            for (size_t m = 0; m < 2; m++) {
                reset();
                pool_run(body, &F, n, mins[m], grains[g], NULL, NULL, 0);
                CHECK(exactly_once(n));
            }
        }
    }
}

/* The grain is honoured: no piece shorter than it except a share's end. */
static _Atomic int64_t min_piece;
static void body_len(void *fp, int64_t lo, int64_t hi) {
    body(fp, lo, hi);
    int64_t len = hi - lo, cur = atomic_load(&min_piece);
    while (len < cur && !atomic_compare_exchange_weak(&min_piece, &cur, len)) {
    }
}

static void test_grain(void) {
    int T = pool_threads();
    int64_t n = 4000, grain = 300;
    reset();
    atomic_store(&min_piece, INT64_MAX);
    pool_run(body_len, &F, n, 2, grain, NULL, NULL, 0);
    CHECK(exactly_once(n));
    /* a share is n / T >= 4000 / 7 >= grain here, so every piece is a whole grain */
    if (T <= 8) CHECK(atomic_load(&min_piece) >= grain);
}

/* A late thread: the piece that starts thread 1's share blocks until every
 * index outside it has run (or 5 s pass).  With a static split that piece is
 * the whole share and the rest of it never runs meanwhile; with pieces
 * claimed as threads go, the others take what is left of the share. */
static _Atomic int64_t total;
static _Atomic int waited_ok;
static int64_t block_at;
static void body_block(void *fp, int64_t lo, int64_t hi) {
    body(fp, lo, hi);
    atomic_fetch_add(&total, hi - lo);
    if (lo != block_at) return;
    int64_t n = 2 * block_at; /* block_at = n / 2 with T = 2 */
    for (int i = 0; i < 5000 && atomic_load(&total) < n; i++) sleep_ns(1000000);
    atomic_store(&waited_ok, atomic_load(&total) == n);
}

static void test_late_share_is_taken(void) {
    if (pool_threads() != 2) return;
    int64_t n = 4096;
    reset();
    atomic_store(&total, 0);
    atomic_store(&waited_ok, 0);
    block_at = n / 2;
    pool_run(body_block, &F, n, 2, 1, NULL, NULL, 0);
    CHECK(exactly_once(n));
    CHECK(atomic_load(&waited_ok));
    CHECK(atomic_load(&F.calls) > 2);
}

/* stop(): after it says so, no new piece starts, and the launch returns. */
static _Atomic int stop_after;
static int stop_fn(void *arg, int64_t now) {
    (void)arg;
    (void)now;
    return atomic_fetch_sub(&stop_after, 1) <= 1;
}

static void test_stop(void) {
    int64_t n = MAXN;
    reset();
    atomic_store(&stop_after, 1); /* the first piece to end stops the launch */
    pool_run(body, &F, n, 2, 1, stop_fn, NULL, 0);
    int ran = 0;
    for (int64_t i = 0; i < n; i++) {
        int v = atomic_load(&F.visits[i]);
        CHECK(v == 0 || v == 1);
        ran += v;
    }
    CHECK(ran > 0 && ran < n); /* first pieces are 64 iterations: most never ran */
    /* the pool is usable afterwards, and a stop that never fires runs everything */
    reset();
    atomic_store(&stop_after, 1 << 30);
    pool_run(body, &F, n, 2, 1, stop_fn, NULL, 0);
    CHECK(exactly_once(n));
}

/* flush: every piece, on every thread, runs with subnormals flushed, and
 * every thread's mode is its own again after the launch (the next launch
 * without flush sees none of it, nor does the caller). */
static _Atomic int pieces_flushed, pieces_plain;
static void body_mode(void *fp, int64_t lo, int64_t hi) {
    volatile float tiny = 1e-38f, scale = 1e-3f;
    float r = tiny * scale; /* 1e-41: a subnormal, or 0 when flushed */
    int active = rt_flush_active();
    CHECK(active == (r == 0.0f));
    atomic_fetch_add(active ? &pieces_flushed : &pieces_plain, 1);
    body(fp, lo, hi);
    if (lo < 64) sleep_ns(200000); /* the others get a share */
}

static void test_flush(void) {
    if (!rt_flush_supported()) return;
    CHECK(!rt_flush_active());
    for (int round = 0; round < 20; round++) {
        atomic_store(&pieces_flushed, 0);
        atomic_store(&pieces_plain, 0);
        reset();
        pool_run(body_mode, &F, MAXN, 2, 1, round & 1 ? stop_fn : NULL, NULL, 1);
        CHECK(atomic_load(&pieces_plain) == 0 && atomic_load(&pieces_flushed) > 0);
        CHECK(!rt_flush_active());
        atomic_store(&pieces_flushed, 0);
        reset();
        pool_run(body_mode, &F, MAXN, 2, 1, NULL, NULL, 0);
        CHECK(exactly_once(MAXN));
        CHECK(atomic_load(&pieces_flushed) == 0 && atomic_load(&pieces_plain) > 0);
        /* a range run whole on the caller */
        atomic_store(&pieces_flushed, 0);
        pool_run(body_mode, &F, 10, 100, 1, NULL, NULL, 1);
        CHECK(atomic_load(&pieces_flushed) == 1 && !rt_flush_active());
    }
    /* a caller that flushes already keeps flushing after the launch */
    rt_fpmode saved = rt_flush_enter();
    pool_run(body_mode, &F, MAXN, 2, 1, NULL, NULL, 1);
    CHECK(rt_flush_active());
    rt_flush_leave(saved);
    CHECK(!rt_flush_active());
}

/* Two threads launching at once: one gets the pool, the other runs alone. */
static frame_t G;
static void *other(void *arg) {
    (void)arg;
    for (int r = 0; r < 200; r++) {
        for (int i = 0; i < MAXN; i++) atomic_store(&G.visits[i], 0);
        pool_run(body, &G, MAXN, 2, 0, NULL, NULL, 0);
        for (int i = 0; i < MAXN; i++)
            if (atomic_load(&G.visits[i]) != 1) return (void *)1;
    }
    return NULL;
}

static void test_concurrent_launches(void) {
    pthread_t th;
    CHECK(pthread_create(&th, NULL, other, NULL) == 0);
    for (int r = 0; r < 200; r++) {
        reset();
        pool_run(body, &F, MAXN - r, 2, 0, NULL, NULL, 0);
        CHECK(exactly_once(MAXN - r));
    }
    void *res;
    pthread_join(th, &res);
    CHECK(res == NULL);
}

/* The num_threads setting changed between launches takes effect at the
 * next one: its slots stay below the new count (the generated code sizes
 * per-thread copies by pool_threads()), and with a count above one a worker
 * takes part (the caller's first piece waits, up to 5 s, until one has). */
static _Atomic int max_slot, slot_seen[16], wait_for_others;

static void slot_body(void *fp, int64_t lo, int64_t hi) {
    int s = pool_slot(), m = atomic_load(&max_slot);
    while (s > m && !atomic_compare_exchange_weak(&max_slot, &m, s)) {
    }
    if (s < 16) atomic_store(&slot_seen[s], 1);
    for (int t = 0; s == 0 && atomic_load(&wait_for_others) && t < 5000; t++) {
        int others = 0;
        for (int i = 1; i < 16; i++) others |= atomic_load(&slot_seen[i]);
        if (others) break;
        sleep_ns(1000000);
    }
    body(fp, lo, hi);
}

static void test_count_changes(void) {
    static const char *counts[] = {"4", "2", "1", "3", "4"};
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
        int want = atoi(counts[c]);
        CHECK(tack_config_set("num_threads", counts[c]) == TACK_OK);
        pool_launch_begin();
        CHECK(pool_threads() == want);
        CHECK(tack_config_set("num_threads", "7") == TACK_OK); /* mid-launch: this launch keeps its count */
        CHECK(pool_threads() == want);
        reset();
        atomic_store(&wait_for_others, want > 1);
        atomic_store(&max_slot, 0);
        for (int i = 0; i < 16; i++) atomic_store(&slot_seen[i], 0);
        pool_run(slot_body, &F, MAXN, 2, 64, NULL, NULL, 0);
        pool_launch_end();
        CHECK(exactly_once(MAXN));
        CHECK(atomic_load(&max_slot) < want);
        /* a worker took part: the caller's first piece waits for one, and where a
         * worker ran everything before the caller claimed (it was descheduled), a
         * worker's slot is the greatest */
        int seen = 0;
        for (int i = 0; i < 16; i++) seen += atomic_load(&slot_seen[i]);
        CHECK(want == 1 ? seen == 1 && atomic_load(&max_slot) == 0 : atomic_load(&max_slot) > 0);
    }
    CHECK(tack_config_set("num_threads", NULL) == TACK_OK);
}

/* While a profile records (runtime/profile.c), each thread that ran pieces
 * of a parallel loop has one "worker" event, on its own slot, inside the
 * loop's run and named after the launching kernel; with none recording,
 * nothing is noted.  Every index still runs once. */
static void test_profiled_parts(void) {
    int64_t n = MAXN;
    tack_profile *p = NULL;
    reset();
    pool_run(body, &F, n, 2, 1, NULL, NULL, 0); /* not recorded anywhere */
    reset();
    CHECK(tack_profile_start(&p) == TACK_OK);
    CHECK(tack_profile_start(&(tack_profile *){NULL}) == TACK_ERR_VALUE); /* one at a time */
    rt_prof_kernel = "kern";
    int64_t t0 = tack_profile_now();
    pool_run(body, &F, n, 2, 1, NULL, NULL, 0);
    int64_t t1 = tack_profile_now();
    rt_prof_kernel = NULL;
    CHECK(tack_profile_stop(p) == TACK_OK);
    CHECK(exactly_once(n));
    int seen[256] = {0}, events = 0;
    for (int64_t i = 0; i < tack_profile_count(p); i++) {
        tack_profile_event e;
        CHECK(tack_profile_get(p, i, &e) == 1);
        CHECK(!strcmp(e.kind, "worker") && !strcmp(e.name, "kern") && !strcmp(e.device, "cpu"));
        CHECK(e.thread < (uint64_t)pool_threads() && !seen[e.thread]);
        CHECK(e.start_ns >= t0 && e.start_ns + e.host_ns <= t1 && e.device_ns == e.host_ns);
        seen[e.thread % 256] = 1;
        events++;
    }
    /* one thread runs the loop serially, no job for the pool: the launch's own time covers it */
    CHECK(pool_threads() == 1 ? events == 0 : events >= 1 && events <= pool_threads());
    tack_profile_free(p);
}

/* interrupt.c's watch, asked after every piece as cpu_jit.c's launch_stop
 * asks it: the first timed poll's time is kept (later polls, from any
 * thread, only read it), a poll without a time reads only the flag, and the
 * long-launch hook runs once, after 10 ms. */
static _Atomic int hook_calls;
static void count_hook(void) { atomic_fetch_add(&hook_calls, 1); }
static int watch_stop(void *arg, int64_t now) { return rt_watch_poll(arg, now); }
static void body_slow(void *fp, int64_t lo, int64_t hi) {
    body(fp, lo, hi);
    sleep_ns(100000 * (hi - lo));
}

static void test_watch(void) {
    tack_set_long_launch_hook(count_hook);
    tack_set_interruptible(1);
    rt_watch w;
    rt_watch_begin(&w);
    atomic_store(&hook_calls, 0);
    CHECK(rt_watch_poll(&w, 0) == 0);
    CHECK(atomic_load(&w.t0) == 0); /* no time given: nothing noted */
    CHECK(rt_watch_poll(&w, rt_watch_now()) == 0);
    int64_t first = atomic_load(&w.t0);
    CHECK(first != 0);
    CHECK(rt_watch_poll(&w, rt_watch_now()) == 0);
    CHECK(atomic_load(&w.t0) == first);
    CHECK(atomic_load(&hook_calls) == 0);
    sleep_ns(11000000);
    CHECK(rt_watch_poll(&w, 0) == 0);
    CHECK(atomic_load(&hook_calls) == 0); /* an untimed poll never calls it */
    reset();
    pool_run(body_slow, &F, 200, 2, 1, watch_stop, &w, 0); /* pieces on every thread, each polling */
    CHECK(exactly_once(200));
    CHECK(atomic_load(&w.t0) == first);
    CHECK(atomic_load(&hook_calls) == 1);
    /* a fresh launch of 25 ms a thread, in iterations of 0.1 ms: the
     * threads read the clock once their work since the last reading adds up
     * to about a millisecond, so the hook runs once it has lasted 10 ms */
    rt_watch_begin(&w);
    atomic_store(&hook_calls, 0);
    int64_t n = 250 * pool_threads();
    reset();
    pool_run(body_slow, &F, n, 2, 1, watch_stop, &w, 0);
    CHECK(exactly_once(n));
    CHECK(atomic_load(&w.t0) != 0);
    CHECK(atomic_load(&hook_calls) == 1);
    tack_set_interruptible(0);
    tack_set_long_launch_hook(NULL);
}

/* The clock in an interruptible launch of short pieces (pool.c's pacer):
 * stop() is asked after every piece, but a thread reads the clock after its
 * first piece and then only once its iterations add up to about a
 * millisecond's work or the step: a launch of a few microseconds is a
 * reading or two a thread, however many pieces it is cut into. */
static _Atomic int polls_timed, polls_untimed;
static int count_stop(void *arg, int64_t now) {
    (void)arg;
    atomic_fetch_add(now ? &polls_timed : &polls_untimed, 1);
    return 0;
}

static void test_polls_read_the_clock_rarely(void) {
    int threads = pool_threads();
    for (int rep = 0; rep < 20; rep++) {
        reset();
        atomic_store(&polls_timed, 0);
        atomic_store(&polls_untimed, 0);
        /* 64 iterations a thread, under the first step (64): each thread's
         * share is cut in halves, six or seven pieces */
        int64_t n = 64 * threads;
        pool_run(body, &F, n, 2, 1, count_stop, NULL, 0);
        CHECK(exactly_once(n));
        int timed = atomic_load(&polls_timed), untimed = atomic_load(&polls_untimed);
        CHECK(timed + untimed == atomic_load(&F.calls)); /* asked after every piece */
        CHECK(timed <= 3 * threads); /* one or two a thread (a third after a late start) */
        if (threads == 1) CHECK(timed == 0 && untimed == 1); /* one piece on the caller: no clock */
        else CHECK(untimed > timed);
    }
    /* a long range of short iterations: the step doubles at each reading,
     * so the pieces, and the readings, are a handful */
    reset();
    atomic_store(&polls_timed, 0);
    atomic_store(&polls_untimed, 0);
    pool_run(body, &F, MAXN, 2, 1, count_stop, NULL, 0);
    CHECK(exactly_once(MAXN));
    CHECK(atomic_load(&polls_timed) + atomic_load(&polls_untimed) == atomic_load(&F.calls));
    if (threads == 1) CHECK(atomic_load(&F.calls) <= 8 && atomic_load(&polls_timed) >= 1);
}

static int run_with_threads(const char *threads, int flush_first) {
    pid_t pid = fork();
    if (pid == 0) {
        CHECK(tack_config_set("num_threads", threads) == TACK_OK);
        if (flush_first && rt_flush_supported()) {
            /* the workers start inside a flushing launch (a caller that
             * flushes, as cpu_jit.c's does): they must not keep its mode */
            rt_fpmode saved = rt_flush_enter();
            pool_run(body, &F, MAXN, 2, 1, NULL, NULL, 1);
            rt_flush_leave(saved);
            atomic_store(&stop_after, 1 << 30);
            test_flush();
            _exit(check_failed ? 1 : 0);
        }
        test_every_index_once();
        test_grain();
        test_late_share_is_taken();
        test_stop();
        test_concurrent_launches();
        test_profiled_parts();
        test_watch();
        test_polls_read_the_clock_rarely();
        atomic_store(&stop_after, 1 << 30);
        test_flush();
        _exit(check_failed ? 1 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status)) fprintf(stderr, "child ended by signal %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : -1);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(void) {
    (void)failing_allocator_install;
    static const char *counts[] = {"1", "2", "3", "4", "7", "16"};
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
        for (int flush_first = 0; flush_first < 2; flush_first++) {
            int ok = run_with_threads(counts[i], flush_first);
            if (!ok) fprintf(stderr, "failed with TACK_NUM_THREADS=%s%s\n", counts[i], flush_first ? ", flush first" : "");
            CHECK(ok);
        }
    }
    test_count_changes(); /* after the children: they do not inherit its pool */
    return CHECK_SUMMARY();
}
