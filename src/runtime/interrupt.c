/*
 * interrupt.c -- stopping a running CPU launch when the user asks (Ctrl-C).
 *
 * A kernel runs as machine code with no interpreter around it, so nothing
 * can stop it from outside without leaving locks or half-written state in
 * an unknown place.  Instead the kernel asks, at points where stopping is
 * clean: the thread pool between the pieces of a parallel loop (pool.c runs
 * each thread's share in pieces sized to about 5 ms each), and the
 * generated code in its serial loops, once per 64K iterations counted
 * across all of them (abi->poll; emit_stmt.c).  The question is one relaxed load
 * of a flag, so asking costs nothing measurable.
 *
 * Who sets the flag is the embedder's business: tack_interrupt() is
 * async-signal-safe, made to be called from a SIGINT handler, and the
 * Python extension installs one that chains to Python's own (so Python
 * still raises KeyboardInterrupt).  Only launches made on a thread that
 * opted in with tack_set_interruptible(1) read the flag -- in Python, the
 * main thread while Python's default SIGINT handler is in force, decided
 * again before every call (src/python/interrupt.c) -- and each such launch
 * clears it as it starts, so a request made between launches (which Python
 * itself answers) does not stop the next one.  The compiler's guardian
 * (spawn_guard.c) passes Ctrl-C on to a compile under the same flag.
 *
 * A handler installed once can be replaced later (Python's signal.signal
 * installs its own C handler again).  So a launch still running 10 ms
 * after its first timed poll calls the embedder's long-launch hook once, which puts its
 * handler back if it is gone: the check is a system call, too dear for
 * every launch (a small launch costs a fifth of a microsecond), free for a
 * long one.  The poller passes the time when it has just read the clock
 * (the pool does after a thread's first piece and then about once a
 * millisecond: pool.c), else 0, and a poll without a time only reads the
 * flag: the clock read after every piece of a short launch was most of an
 * empty interruptible launch's cost on two threads.
 */
#include <stdatomic.h>

#include "platform/platform.h"

#include "private/tack_private.h"
#include "runtime/runtime.h"

#define LONG_LAUNCH_NS 10000000 /* 10 ms */

static atomic_int requested;
static _Thread_local int interruptible;
static void (*_Atomic long_hook)(void);

TACK_API void tack_interrupt(void) { atomic_store_explicit(&requested, 1, memory_order_relaxed); }

TACK_API void tack_set_interruptible(int on) { interruptible = on != 0; }

TACK_API int tack_interruptible(void) { return interruptible; }

TACK_API void tack_set_long_launch_hook(void (*fn)(void)) { atomic_store(&long_hook, fn); }

/* The extension's system calls, through the platform layer (tack_private.h). */
TACK_API void tack_chain_sigint(void) {
    tk_interrupt_chain(tack_interrupt);
    tack_set_long_launch_hook(tk_interrupt_rechain);
}

TACK_API long tack_process_id(void) { return tk_getpid(); }

TACK_API void tack_at_fork_child(void (*fn)(void)) { tk_atfork_child(fn); }

static int64_t now_ns(void) {
    return tk_monotonic_ns();
}

/* No clock read here: a launch costs a fifth of a microsecond, and only one
 * that polls can be long.  Its time counts from its first poll. */
void rt_watch_begin(rt_watch *w) {
    w->on = interruptible;
    atomic_store_explicit(&w->hooked, 0, memory_order_relaxed);
    atomic_store_explicit(&w->t0, 0, memory_order_relaxed);
    if (w->on) atomic_store_explicit(&requested, 0, memory_order_relaxed);
}

int rt_watch_poll(rt_watch *w, int64_t now) {
    if (!w->on) return 0;
    if (atomic_load_explicit(&requested, memory_order_relaxed)) return 1;
    if (now == 0) return 0; /* no time given: the flag is the whole question */
    /* the first timed poll stores its time; later ones only read it (a
     * locked compare-and-swap on every poll made the line bounce between a
     * launch's threads, which poll after every piece) */
    int64_t t0 = atomic_load_explicit(&w->t0, memory_order_relaxed);
    if (t0 == 0 && atomic_compare_exchange_strong(&w->t0, &t0, now)) t0 = now; /* else t0 holds the first poll's */
    if (!atomic_load_explicit(&w->hooked, memory_order_relaxed) && now - t0 > LONG_LAUNCH_NS &&
        !atomic_exchange(&w->hooked, 1)) {
        void (*fn)(void) = atomic_load(&long_hook);
        if (fn) fn();
    }
    return atomic_load_explicit(&requested, memory_order_relaxed);
}

int64_t rt_watch_now(void) { return now_ns(); }
