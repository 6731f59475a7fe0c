/*
 * posix_interrupt.c -- Ctrl-C for the whole process on Linux and macOS:
 * a SIGINT handler put in front of the program's, which asks the core to
 * stop (platform.h, tk_interrupt_chain) and then calls the handler it found.
 *
 * The embedder decides when (the Python extension, at import:
 * src/python/interrupt.c); this file knows how, so that the extension makes
 * no POSIX call of its own and builds on Windows too (win32_interrupt.c).
 * The handler goes in front only of a handler: a program that set SIGINT to
 * SIG_IGN or SIG_DFL keeps it.  Ours calls the core's function (an atomic
 * store, async-signal-safe) and then the previous handler with the same
 * arguments, so Python still records the signal and runs its Python-level
 * handler as soon as the stopped launch returns.
 *
 * A program's later sigaction (Python's signal.signal() installs its C
 * handler again) removes ours; tk_interrupt_rechain, which the core calls
 * once from any launch that runs past 10 ms (runtime/interrupt.c), puts it
 * back -- but only in front of the handler it first chained to.  Any other
 * handler found there was installed after ours by a library that saved ours
 * to chain to (LLVM, which an OpenCL driver loads, restores the handler it
 * found and raises the signal again), so it is left in front.  The saved
 * handlers are process-wide by nature; they hold nothing of the embedder's.
 */
#include "platform/platform.h"

#if TK_POSIX
#include <errno.h>
#include <signal.h>
#include <string.h>

static struct sigaction previous;    /* the handler ours chains to */
static struct sigaction first;       /* the one found when chained first (Python's) */
static volatile sig_atomic_t inside; /* ours is running: a handler it chained to raised SIGINT again */
static void (*volatile on_interrupt)(void);

static void on_sigint(int sig, siginfo_t *info, void *uc) {
    int saved = errno;
    void (*fn)(void) = on_interrupt;
    if (fn) fn();
    if (inside) { /* re-raised from inside the chain: the request is noted, once is enough */
        errno = saved;
        return;
    }
    inside = 1;
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction) previous.sa_sigaction(sig, info, uc);
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN && previous.sa_handler) {
        previous.sa_handler(sig);
    }
    inside = 0;
    errno = saved;
}

static int is_ours(const struct sigaction *a) { return (a->sa_flags & SA_SIGINFO) && a->sa_sigaction == on_sigint; }

static int same_handler(const struct sigaction *a, const struct sigaction *b) {
    if ((a->sa_flags & SA_SIGINFO) != (b->sa_flags & SA_SIGINFO)) return 0;
    return (a->sa_flags & SA_SIGINFO) ? a->sa_sigaction == b->sa_sigaction : a->sa_handler == b->sa_handler;
}

static void install(const struct sigaction *cur) {
    struct sigaction ours;
    previous = *cur;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = on_sigint;
    ours.sa_mask = cur->sa_mask;
    ours.sa_flags = (cur->sa_flags & ~SA_RESETHAND) | SA_SIGINFO;
    sigaction(SIGINT, &ours, NULL);
}

void tk_interrupt_chain(void (*fn)(void)) {
    struct sigaction cur;
    on_interrupt = fn;
    if (sigaction(SIGINT, NULL, &cur) != 0 || is_ours(&cur)) return;
    if (!(cur.sa_flags & SA_SIGINFO) && (cur.sa_handler == SIG_DFL || cur.sa_handler == SIG_IGN)) return;
    first = cur;
    install(&cur);
}

void tk_interrupt_rechain(void) {
    struct sigaction cur;
    if (sigaction(SIGINT, NULL, &cur) != 0 || is_ours(&cur)) return;
    if (first.sa_handler && same_handler(&cur, &first)) install(&cur);
}
#endif
