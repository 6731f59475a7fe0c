/*
 * pool.c -- the persistent thread pool that runs parallel loops on the CPU.
 *
 * One pool per process, started on the first launch big enough to need it,
 * with one worker per usable core (sched_getaffinity, so taskset and
 * container CPU sets are honoured; the num_threads setting, TACK_NUM_THREADS,
 * overrides) minus one: the calling thread takes part itself, as thread 0.
 * The count is taken at each launch's start (pool_launch_begin: one count for
 * all of a launch's loops, which size per-thread copies by it); a launch
 * that finds the pool started for another count takes it down and starts it
 * again, so a change of the setting takes effect at the next launch.
 *
 * Sharing the work.  Each thread t owns the static share [n*t/T, n*(t+1)/T)
 * of the index space, as a range with an atomic "next unclaimed index" of
 * its own (on a cache line of its own).  A thread claims pieces of its own
 * range from the front: first half of it, then half of what is left, and so
 * on down to the grain; when its range is empty it steals from the others'
 * the same way (half of what is left), until every range is empty.  So the
 * balanced case costs a handful of uncontended compare-and-swaps per thread
 * and runs contiguous ranges, each thread the same share as in every other
 * launch (its cache stays warm for a stencil run again and again), while a
 * thread that is late -- its core busy with another process, or its
 * iterations dearer -- has its unclaimed part taken by the others.  Until
 * 2026-12 the split was static only: a 256^2 stencil launch with one of two
 * cores busy waited for the busy core's time slice (docs/benchmarks.md has
 * the figures before and after).
 *
 * The grain is the smallest piece worth a call: an eighth of the fewest
 * iterations worth a fork-join (emit_cpu.c's estimate of a body's cost, a
 * fraction of a microsecond of work) for a plain body, one iteration for a
 * body with loops or calls; the generated code may ask for more (a loop with
 * private histograms passes four times the histogram's cells, so every piece
 * still repays its private copy).  A piece's ends are multiples of 64 where
 * they can be, and a range never leaves a remainder under the grain.
 *
 * Finishing.  The caller does not wait for the workers to arrive: it waits
 * for the count of iterations done to reach n.  A worker that wakes late
 * finds every range empty and goes back to waiting, so a launch never waits
 * for a core that is running something else (only for a piece already
 * claimed by a thread that then lost its core).  That means a worker may
 * still be looking at a launch after it has ended and the next has begun;
 * two rules make that safe.  The job is published under a sequence lock (the
 * generation is odd while the caller writes it, and a worker reading the
 * fields retries unless it saw one even generation before and after), and
 * a claim is a compare-and-swap on a range's counter followed by a second
 * look at the generation: unchanged, the piece is the job's the worker read;
 * changed, the counter belonged to a newer job (whose fields were stored
 * before its counters, so are visible now, and stay put until the piece is
 * done), and the worker reloads the job and runs the piece as part of it.
 *
 * Each thread adds what it ran to the count once, when it finds every
 * range empty, not after each piece: the count's cache line went back and
 * forth between the threads a dozen times in a launch of a dozen pieces, a
 * good part of the cost of a short launch (lud's pivots, docs/benchmarks.md).
 * A thread holding iterations it has not counted keeps the job from
 * finishing, so no newer job can be published meanwhile: when a claim
 * moves a thread on to a newer job, it has nothing left to count for the
 * old one.
 *
 * Waking a sleeping thread costs microseconds (a futex wake and a trip
 * through the scheduler), which is more than a medium-sized loop takes to
 * run.  So both sides spin briefly before they sleep, as OpenMP runtimes
 * do: a worker that has run out of work watches the job generation for
 * SPIN_NS before it blocks on the condition variable, and the caller
 * watches the count of iterations done the same way.  Back-to-back
 * launches then hand work over through one cache line.  Sleeping is safe
 * against lost wake-ups by the usual pairing of sequentially consistent
 * atomics: a sleeper announces itself (sleepers++, caller_sleeping = 1)
 * before its last look at the condition, and a publisher changes the
 * condition before it looks for sleepers, so one of the two always sees
 * the other; the publisher then signals under the mutex.
 *
 * A thread may run its launches alone (tack_cpu_launch_alone): each then sees
 * one thread from its start, as with num_threads 1, and never wakes the pool.
 * The parallel primitives ask for it on inputs too small to repay a hand-over
 * (python/tack/_algorithms.py), which the pool cannot tell from the loop alone
 * (a loop over eight blocks is eight iterations of unknown length).
 *
 * The pool serves one launch at a time: a second thread that finds it busy
 * (a concurrent tack_launch) runs its loop on its own thread instead of
 * waiting, so launches from several threads never deadlock and never queue
 * behind each other.  Small ranges (n < min_parallel) also stay on the
 * caller, with no hand-over at all.
 *
 * A launch that can be interrupted (interrupt.c) passes a `stop` test, and
 * then a thread's pieces are also bounded in time: the first a fraction of a
 * millisecond by the body's estimated cost (64 iterations of a body with
 * loops), each next one twice as long while pieces take under 2.5 ms and
 * half as long over 10 ms, so a piece lasts about 5 ms whatever an
 * iteration costs, and stop() is asked after each.  The thread that sees it
 * true empties every range, counting the iterations as done without running
 * them; the others stop after their piece.  Python's launches from its main
 * thread are all interruptible, so this is also the path of their short
 * launches, and there the clock was the cost: a launch of lud's 64 rows on
 * two threads is a dozen pieces, and reading the clock after each (and again
 * in stop(), for the long-launch hook) made an empty two-thread launch 0.98 us
 * against 0.28 us without stop (2026-12-06, benchmarks/RODINIA.md).  So a
 * thread reads the clock only when a reading is due (pacer below): after
 * its first piece (timed from the launch's publication, read once by the
 * caller), and then once the iterations run since the last reading reach
 * what the last reading says takes about POLL_NS, or the step, whichever
 * is fewer.  Between readings stop() is asked without a time (only the
 * flag: a load), so an interrupt is seen after every piece as before, and a
 * launch whose iterations are long still reads the clock after every piece
 * (the long-launch hook still runs).  A launch that runs on its caller in
 * one piece reads no clock at all.
 *
 * After fork() the child has no workers; an atfork handler resets the pool
 * so the child starts its own on demand.
 *
 * The workers never outlive the threads they serve.  A process ends when its
 * last thread does, and the workers wait forever, so a process whose only
 * other thread ended with pthread_exit would never end: a child that Python
 * forked from a thread other than the main one is such a process (its one
 * thread goes on running the parent thread's Python code, and ends as a
 * thread ends, not with exit()).  So every thread that hands a loop to the
 * workers becomes a member of the pool (a thread-specific key whose
 * destructor runs when it ends), and when the last member ends, the
 * workers are told to leave and the pool is taken down; a later launch
 * starts it again.  Members end this way only by pthread_exit or by
 * returning from their start routine -- exit() runs no destructors, and
 * takes the workers with it -- so a program whose main thread launches
 * never pays for it, and one whose launching threads come and go pays a
 * pool start (tens of microseconds a worker) at the next launch.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"
#include "runtime/config.h"
#include "runtime/pool.h"
#include "runtime/runtime.h"
#include "tack.h"

typedef void (*pool_fn)(void *frame, int64_t lo, int64_t hi);

#define SPIN_NS 50000 /* 50 microseconds */
#define MAX_THREADS 256
#define ALIGN 64 /* a piece's ends, where they can be */

/* One thread's share: what is left of it is [next, end). */
typedef struct {
    _Alignas(64) _Atomic int64_t next;
    _Atomic int64_t end;
} range;

static range R[MAX_THREADS];

/* While a profile records (profile.c): each thread's part of the job of
 * generation `gen`, from its first piece's start to its last piece's end,
 * written before the piece is counted done, so the caller reads it once
 * the job is finished and records one "worker" event per thread. */
typedef struct {
    _Alignas(64) _Atomic uint64_t gen;
    _Atomic int64_t t0, t1;
} part_time;

static part_time W[MAX_THREADS];

static struct {
    tk_mutex_t lock;
    tk_cond_t wake, done;
    tk_mutex_t busy;
    tk_cond_t gone; /* a worker left (after `quit`) */
    int workers;         /* started worker threads */
    int started;
    int alive;   /* workers that have not yet left (under lock) */
    int quit;    /* workers: leave (under lock; set only while `busy` is held, so no job runs) */
    int members; /* live threads that have handed a loop to the workers (under lock) */
    /* the job: written by the caller while gen is odd (see the top) */
    _Atomic(pool_fn) fn;
    _Atomic(void *) frame;
    _Atomic int64_t n, first, grain;
    _Atomic int parts;
    _Atomic(int (*)(void *, int64_t)) stop;
    _Atomic(void *) stop_arg;
    _Atomic int64_t t0; /* with stop: the clock when the job was published */
    _Atomic int flush; /* run the pieces with subnormals flushed (fpmode.c) */
    _Atomic int prof;  /* a profile records: the threads note their part's times (W) */
    _Alignas(64) _Atomic uint64_t gen; /* even: a job is published */
    _Atomic int sleepers;        /* workers blocked (or about to block) on `wake` */
    _Atomic int caller_sleeping; /* the caller blocked (or about to block) on `done` */
    _Alignas(64) _Atomic int64_t finished; /* iterations done (or dropped after stop) */
} P = {.lock = TK_MUTEX_INIT, .wake = TK_COND_INIT, .done = TK_COND_INIT,
       .busy = TK_MUTEX_INIT, .gone = TK_COND_INIT};

/* A thread's copy of the job. */
typedef struct {
    uint64_t gen;
    pool_fn fn;
    void *frame;
    int64_t n, first, grain;
    int parts;
    int (*stop)(void *, int64_t);
    void *stop_arg;
    int64_t t0;
    int flush;
    int prof;
} job;

static tk_once_t once = TK_ONCE_INIT;
static int cores = 1;    /* usable cores, at the first use */
static int nthreads = 1; /* the count the pool was started for (under `busy`) */
static _Thread_local int launch_threads; /* this thread's launch's count (0: no launch begun) */
static tk_key_t member_key; /* set on a member thread: its destructor is member_gone */
static int have_key;             /* member_key was made (else the pool is never taken down) */
static _Thread_local int is_member;

static void member_gone(void *unused);

static void after_fork_child(void) {
    tk_mutex_init(&P.lock);
    tk_cond_init(&P.wake);
    tk_cond_init(&P.done);
    tk_cond_init(&P.gone);
    tk_mutex_init(&P.busy);
    P.workers = 0;
    P.started = 0;
    P.alive = 0;
    P.quit = 0;
    P.members = is_member; /* the forking thread, the child's only one, keeps its key */
    uint64_t g = atomic_load(&P.gen);
    atomic_store(&P.gen, g + (g & 1));
    atomic_store(&P.sleepers, 0);
    atomic_store(&P.caller_sleeping, 0);
}

static void init_once(void) {
    int n = tk_cpu_count();
    cores = n < 1 ? 1 : n;
    have_key = tk_key_create(&member_key, member_gone) == 0;
    tk_atfork_child(after_fork_child);
}

/* Tell the workers to leave and wait until they have; `busy` and `lock`
 * held, so no job runs. */
static void take_down(void) {
    P.quit = 1;
    tk_cond_broadcast(&P.wake);
    while (P.alive > 0) tk_cond_wait(&P.gone, &P.lock);
    P.quit = 0;
    P.started = 0;
    P.workers = 0;
}

/* A member thread ended (its key's destructor): the last one takes the pool
 * down.  `busy` first, so that no launch runs meanwhile: a thread that
 * became a member since waits here, then finds the workers there. */
static void member_gone(void *unused) {
    (void)unused;
    is_member = 0;
    tk_mutex_lock(&P.busy);
    tk_mutex_lock(&P.lock);
    if (--P.members == 0 && P.started) take_down();
    tk_mutex_unlock(&P.lock);
    tk_mutex_unlock(&P.busy);
}

/* The calling thread, which holds `busy`, becomes a member (once). */
static void join_members(void) {
    if (is_member || !have_key || tk_key_set(member_key, &is_member) != 0) return;
    is_member = 1;
    tk_mutex_lock(&P.lock);
    P.members++;
    tk_mutex_unlock(&P.lock);
}

/* The setting's count now: 0 means the usable cores; at most MAX_THREADS. */
static int wanted(void) {
    tk_once(&once, init_once);
    int n = tk_config_int(TK_CFG_NUM_THREADS);
    if (n <= 0) n = cores;
    return n > MAX_THREADS ? MAX_THREADS : n;
}

/* tack_cpu_launch_alone: this thread's launches run on it alone (the pool is not woken) */
static _Thread_local int launch_alone;

int tack_cpu_launch_alone(int on) {
    int was = launch_alone;
    launch_alone = on != 0;
    return was;
}

void pool_launch_begin(void) { launch_threads = launch_alone ? 1 : wanted(); }
void pool_launch_end(void) { launch_threads = 0; }

int pool_threads(void) { return launch_threads ? launch_threads : wanted(); }

static int64_t now_ns(void) { return tk_monotonic_ns(); }

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Spin until a job newer than `seen` is published or SPIN_NS pass; its gen or `seen`. */
static uint64_t spin_for_job(uint64_t seen) {
    int64_t t0 = now_ns();
    for (unsigned i = 1;; i++) {
        uint64_t g = atomic_load_explicit(&P.gen, memory_order_acquire);
        if (g != seen && !(g & 1)) return g;
        relax();
        if ((i & 63) == 0 && now_ns() - t0 > SPIN_NS) return seen;
    }
}

#define PIECE_HEAVY 64
#define PIECE_NS 5000000 /* 5 ms */
#define POLL_NS 1000000  /* a thread's work between two readings of the clock, at most about */

/* The first piece of an interruptible launch, from the fewest iterations
 * worth a fork-join (emit_cpu.c's estimate of a body's cost: 8192-32768
 * iterations take a few microseconds): eight times that for a plain body, a
 * fraction of a millisecond; PIECE_HEAVY iterations of a body with loops or
 * calls (min_parallel 2), whose iterations may each take long -- enough to
 * fill the SIMD lanes of an n-body's outer loop. */
static int64_t first_piece(int64_t min_parallel) {
    return min_parallel >= 8192 ? 8 * min_parallel : PIECE_HEAVY;
}

/* The next piece's length after one of `step` iterations took dt. */
static int64_t next_step(int64_t step, double dt) {
    if (dt < PIECE_NS / 2 && step < ((int64_t)1 << 60)) return step * 2;
    if (dt > 2 * PIECE_NS && step > 1) return step / 2;
    return step;
}

/* A thread's pace in an interruptible launch: the cap on its next piece and
 * when it next reads the clock (see the top). */
typedef struct {
    int64_t step;  /* the cap on a piece */
    int64_t mark;  /* the last reading of the clock (at first the launch's publication) */
    int64_t acc;   /* iterations run since then */
    int64_t quiet; /* iterations that may run before the next reading (0: after the next piece) */
} pacer;

static void pacer_init(pacer *pc, int64_t first, int64_t t0) {
    pc->step = first;
    pc->mark = t0;
    pc->acc = 0;
    pc->quiet = 0;
}

/* After a piece of k iterations: the clock's reading when one was due, the
 * step adapted to it (dt scaled to a piece of `step` iterations), else 0. */
static int64_t pacer_after(pacer *pc, int64_t k) {
    pc->acc += k;
    if (pc->acc < pc->quiet) return 0;
    int64_t now = now_ns(), dt = now - pc->mark > 0 ? now - pc->mark : 1;
    pc->step = next_step(pc->step, (double)dt * (double)pc->step / (double)pc->acc);
    double q = (double)pc->acc * POLL_NS / (double)dt;
    pc->quiet = q < 1.0 ? 1 : q >= (double)pc->step ? pc->step : (int64_t)q;
    pc->mark = now;
    pc->acc = 0;
    return now;
}

/* fn(frame, lo, hi) on this thread, with subnormals flushed (fpmode.c) when
 * `flush` asks for it and the thread's own mode put back after it.  Per
 * piece, not per job: a worker may move on to a newer job between two
 * pieces (claim), and a few cycles per piece are nothing against a piece's
 * microseconds. */
static void call(pool_fn fn, void *frame, int64_t lo, int64_t hi, int flush) {
    if (flush) {
        rt_fpmode saved = rt_flush_enter();
        fn(frame, lo, hi);
        rt_flush_leave(saved);
    } else {
        fn(frame, lo, hi);
    }
}

/* [lo, hi) on the calling thread alone, in pieces of about PIECE_NS when
 * the launch can be stopped, asking stop() after each; a range of one piece
 * reads no clock (there is no next piece to size). */
static void run_serial(pool_fn fn, void *frame, int64_t lo, int64_t hi, int64_t first,
                       int (*stop)(void *, int64_t), void *stop_arg, int flush) {
    if (!stop) {
        call(fn, frame, lo, hi, flush);
        return;
    }
    if (hi - lo <= first) {
        call(fn, frame, lo, hi, flush);
        stop(stop_arg, 0);
        return;
    }
    pacer pc;
    pacer_init(&pc, first, now_ns());
    while (lo < hi) {
        int64_t e = hi - lo > pc.step ? lo + pc.step : hi;
        call(fn, frame, lo, e, flush);
        int64_t now = pacer_after(&pc, e - lo);
        lo = e;
        if (stop(stop_arg, now)) return;
    }
}

/* Read the published job `g` into j; 0 when a newer one is being written
 * (the fields are torn: the caller looks again). */
static int read_job(uint64_t g, job *j) {
    j->fn = atomic_load_explicit(&P.fn, memory_order_relaxed);
    j->frame = atomic_load_explicit(&P.frame, memory_order_relaxed);
    j->n = atomic_load_explicit(&P.n, memory_order_relaxed);
    j->first = atomic_load_explicit(&P.first, memory_order_relaxed);
    j->grain = atomic_load_explicit(&P.grain, memory_order_relaxed);
    j->parts = atomic_load_explicit(&P.parts, memory_order_relaxed);
    j->stop = atomic_load_explicit(&P.stop, memory_order_relaxed);
    j->stop_arg = atomic_load_explicit(&P.stop_arg, memory_order_relaxed);
    j->t0 = atomic_load_explicit(&P.t0, memory_order_relaxed);
    j->flush = atomic_load_explicit(&P.flush, memory_order_relaxed);
    j->prof = atomic_load_explicit(&P.prof, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    j->gen = g;
    return atomic_load_explicit(&P.gen, memory_order_relaxed) == g;
}

/* How much of a range with `rem` left to take: half of it (all of it for
 * `drain`), at least the grain and at most `cap`, ending on a multiple of
 * ALIGN where that leaves a piece, and never leaving less than the grain. */
static int64_t piece_len(int64_t cur, int64_t rem, int64_t grain, int64_t cap, int drain) {
    if (drain) return rem;
    int64_t c = rem / 2;
    if (c < grain) c = grain;
    if (c > cap) c = cap;
    if (c > ALIGN) {
        int64_t e = (cur + c) & ~(int64_t)(ALIGN - 1);
        if (e - cur >= grain && e > cur) c = e - cur;
    }
    if (rem - c < grain) c = rem;
    return c;
}

/* Claim a piece [*lo, *hi) of range r of job *j; 0 when the range is empty
 * or the job over.  The range's end and counter are read like the job's
 * fields, under the sequence lock; a compare-and-swap that then succeeds
 * either took part of job *j or -- the counter reset by a newer job to the
 * value seen -- part of a newer one: *j moves on to it (see the top). */
static int claim(job *j, int r, int64_t cap, int drain, int64_t *lo, int64_t *hi) {
    int64_t end = atomic_load_explicit(&R[r].end, memory_order_relaxed);
    int64_t cur = atomic_load_explicit(&R[r].next, memory_order_acquire);
    int64_t c;
    for (;;) {
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&P.gen, memory_order_relaxed) != j->gen || cur >= end) return 0;
        c = piece_len(cur, end - cur, j->grain, cap, drain);
        if (atomic_compare_exchange_weak_explicit(&R[r].next, &cur, cur + c, memory_order_seq_cst,
                                                  memory_order_acquire))
            break;
    }
    uint64_t g = atomic_load(&P.gen);
    if (g != j->gen) {
        /* the counter was a newer job's: its fields were stored before its
         * counters, and stay put until this piece is counted done */
        read_job(g, j);
        j->gen = g + (g & 1);
        end = atomic_load_explicit(&R[r].end, memory_order_relaxed);
        if (cur >= end) return 0;
    }
    *lo = cur;
    *hi = end - cur > c ? cur + c : end;
    return 1;
}

/* Count k iterations of job j done; wake the caller if they were the last. */
static void count_done(const job *j, int64_t k) {
    if (atomic_fetch_add(&P.finished, k) + k == j->n && atomic_load(&P.caller_sleeping)) {
        tk_mutex_lock(&P.lock);
        tk_cond_signal(&P.done);
        tk_mutex_unlock(&P.lock);
    }
}

static void run_piece(const job *j, int64_t lo, int64_t hi) { call(j->fn, j->frame, lo, hi, j->flush); }

/* A profiled job: thread t's part, its start noted at its first piece and its
 * end after each (before the piece counts: the caller reads it after). */
static void note_part(int t, const job *j, int64_t t0) {
    part_time *w = &W[t];
    if (atomic_load_explicit(&w->gen, memory_order_relaxed) != j->gen) {
        atomic_store_explicit(&w->t0, t0, memory_order_relaxed);
        atomic_store_explicit(&w->gen, j->gen, memory_order_relaxed);
    }
    atomic_store_explicit(&w->t1, now_ns(), memory_order_relaxed);
}

/* Thread t's part in job *j: its own range, then everyone else's (the
 * caller's visit to every range is what guarantees each is emptied; a
 * worker moved on to a newer job may skip some).  Returns the generation of
 * the job it last worked on. */
static uint64_t take_part(int t, job *j) {
    int64_t lo, hi, done = 0;
    int stopped = 0;
    pacer pc;
    pacer_init(&pc, j->first, j->t0);
    for (int k = 0; k < j->parts; k++) {
        int r = (t + k) % j->parts;
        for (;;) {
            uint64_t g = j->gen;
            if (!claim(j, r, j->stop && !stopped ? pc.step : INT64_MAX, stopped, &lo, &hi)) break;
            if (j->gen != g) { /* a newer job's piece: run it as part of that job (done is 0: see the top) */
                pacer_init(&pc, j->first, j->t0);
                stopped = 0;
            }
            done += hi - lo;
            if (stopped) continue; /* stop() said so: count what is left done, unrun */
            int64_t t0 = j->prof ? now_ns() : 0;
            run_piece(j, lo, hi);
            if (j->prof) note_part(t, j, t0);
            if (j->stop) {
                /* before the pieces count: stop_arg lives until then */
                stopped = j->stop(j->stop_arg, pacer_after(&pc, hi - lo));
                if (stopped) { /* empty every range, from the first */
                    k = -1;
                    break;
                }
            }
        }
    }
    if (done) count_done(j, done);
    return j->gen;
}

typedef struct { int t; uint64_t seen; } worker_arg;

/* The calling thread's slot: worker t's is t, every other thread's 0 (a
 * launch's caller runs as thread 0; a launch run serially beside the pool's
 * runs on its caller alone). */
static _Thread_local int thread_slot;

int pool_slot(void) { return thread_slot; }

static void *worker(void *arg) {
    worker_arg *wa = arg;
    int t = wa->t;
    thread_slot = t;
    rt_flush_off(); /* not the mode of the launch that started the pool: each job says (fpmode.c) */
    uint64_t seen = wa->seen; /* a job published before this thread ran is still seen */
    free(wa);
    for (;;) {
        uint64_t g = spin_for_job(seen);
        if (g == seen) {
            tk_mutex_lock(&P.lock);
            atomic_fetch_add(&P.sleepers, 1);
            while (((g = atomic_load(&P.gen)) == seen || (g & 1)) && !P.quit) tk_cond_wait(&P.wake, &P.lock);
            atomic_fetch_sub(&P.sleepers, 1);
            if (P.quit) { /* the last member thread ended (member_gone) */
                P.alive--;
                tk_cond_signal(&P.gone);
                tk_mutex_unlock(&P.lock);
                return NULL;
            }
            tk_mutex_unlock(&P.lock);
        }
        job j;
        if (!read_job(g, &j)) continue; /* a newer job is being written: look again */
        seen = take_part(t, &j);
    }
    return NULL;
}

/* Start the workers; returns how many run (0: run everything serially). */
static int start(void) {
    if (P.started) return P.workers;
    P.started = 1;
    int want = nthreads - 1;
    for (int i = 0; i < want; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (!wa) break;
        wa->t = i + 1;
        wa->seen = atomic_load(&P.gen);
        tk_mutex_lock(&P.lock);
        P.alive++;
        tk_mutex_unlock(&P.lock);
        if (tk_thread_start(worker, wa) != 0) {
            free(wa);
            tk_mutex_lock(&P.lock);
            P.alive--;
            tk_mutex_unlock(&P.lock);
            break;
        }
        P.workers++;
    }
    return P.workers;
}

/* A profiled job, finished: each thread's part as a "worker" event on its own
 * track (its slot; 0 is the caller's), named after the kernel launching. */
static void record_parts(uint64_t g, int threads) {
    rt_prof_timer none = {NULL, NULL};
    for (int t = 0; t < threads && t < MAX_THREADS; t++) {
        if (atomic_load_explicit(&W[t].gen, memory_order_relaxed) != g) continue;
        int64_t t0 = atomic_load_explicit(&W[t].t0, memory_order_relaxed);
        int64_t t1 = atomic_load_explicit(&W[t].t1, memory_order_relaxed);
        rt_prof_event("worker", "parallel loop", rt_prof_kernel ? rt_prof_kernel : "?", "cpu", (uint64_t)t, t0, t1,
                      t1 - t0, none);
    }
}

void pool_run(pool_fn fn, void *frame, int64_t n, int64_t min_parallel, int64_t grain,
              int (*stop)(void *, int64_t), void *stop_arg, int flush) {
    if (n <= 0) return;
    if (n < min_parallel || n < 2) {
        call(fn, frame, 0, n, flush);
        return;
    }
    int want = pool_threads();
    if (want <= 1 || tk_mutex_trylock(&P.busy) != 0) {
        run_serial(fn, frame, 0, n, first_piece(min_parallel), stop, stop_arg, flush);
        return;
    }
    join_members();
    if (P.started && nthreads != want) { /* the setting changed: a pool of the new count */
        tk_mutex_lock(&P.lock);
        take_down();
        tk_mutex_unlock(&P.lock);
    }
    nthreads = want;
    int workers = start();
    if (workers == 0) {
        tk_mutex_unlock(&P.busy);
        run_serial(fn, frame, 0, n, first_piece(min_parallel), stop, stop_arg, flush);
        return;
    }
    int parts = workers + 1;
    if (n < parts) parts = (int)n;
    int64_t own = min_parallel >= 8192 ? min_parallel / 8 : 1;
    if (grain < own) grain = own;
    /* Publish under the sequence lock: gen odd, the fields, the ranges (each
     * counter last, released), gen even. */
    uint64_t g = atomic_fetch_add(&P.gen, 1) + 2;
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&P.fn, fn, memory_order_relaxed);
    atomic_store_explicit(&P.frame, frame, memory_order_relaxed);
    atomic_store_explicit(&P.n, n, memory_order_relaxed);
    atomic_store_explicit(&P.first, first_piece(min_parallel), memory_order_relaxed);
    atomic_store_explicit(&P.grain, grain, memory_order_relaxed);
    atomic_store_explicit(&P.parts, parts, memory_order_relaxed);
    atomic_store_explicit(&P.stop, stop, memory_order_relaxed);
    atomic_store_explicit(&P.stop_arg, stop_arg, memory_order_relaxed);
    int64_t t0 = stop ? now_ns() : 0;
    atomic_store_explicit(&P.t0, t0, memory_order_relaxed);
    atomic_store_explicit(&P.flush, flush, memory_order_relaxed);
    int prof = rt_prof_on();
    atomic_store_explicit(&P.prof, prof, memory_order_relaxed);
    atomic_store_explicit(&P.finished, 0, memory_order_relaxed);
    for (int t = 0; t < parts; t++) {
        atomic_store_explicit(&R[t].end, (int64_t)((__int128)n * (t + 1) / parts), memory_order_relaxed);
        atomic_store_explicit(&R[t].next, (int64_t)((__int128)n * t / parts), memory_order_release);
    }
    atomic_fetch_add(&P.gen, 1);
    if (atomic_load(&P.sleepers) > 0) {
        tk_mutex_lock(&P.lock);
        tk_cond_broadcast(&P.wake);
        tk_mutex_unlock(&P.lock);
    }
    job j = {g, fn, frame, n, first_piece(min_parallel), grain, parts, stop, stop_arg, t0, flush, prof};
    take_part(0, &j);
    /* Wait for the pieces others are running: spin, then sleep (the clock
     * read only once the wait is longer than a few spins). */
    int64_t tw = 0;
    for (unsigned i = 1; atomic_load_explicit(&P.finished, memory_order_acquire) < n; i++) {
        relax();
        if ((i & 63) != 0) continue;
        if (!tw) {
            tw = now_ns();
        } else if (now_ns() - tw > SPIN_NS) {
            tk_mutex_lock(&P.lock);
            atomic_store(&P.caller_sleeping, 1);
            while (atomic_load(&P.finished) < n) tk_cond_wait(&P.done, &P.lock);
            atomic_store(&P.caller_sleeping, 0);
            tk_mutex_unlock(&P.lock);
            break;
        }
    }
    if (prof) record_parts(g, workers + 1);
    tk_mutex_unlock(&P.busy);
}
