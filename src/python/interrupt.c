/*
 * interrupt.c -- Ctrl-C stops a running kernel and raises KeyboardInterrupt.
 *
 * Python answers SIGINT between bytecodes, so a kernel that runs for
 * minutes would ignore Ctrl-C until it ends.  libtack can stop a launch
 * cleanly when asked (tack_interrupt, src/runtime/interrupt.c); this file
 * asks.  At import it puts a SIGINT handler in front of Python's own: ours
 * calls tack_interrupt() and then Python's, so Python still records the
 * signal and raises KeyboardInterrupt (or runs the program's handler) as
 * soon as the stopped launch returns (tpy_raise).  A program that set
 * SIGINT to SIG_IGN or SIG_DFL keeps it: we chain only to a handler.
 *
 * Only the main thread's launches are interruptible, since only it gets
 * KeyboardInterrupt; a kernel on another thread runs to its end.  Python
 * installs its handler again whenever signal.signal() is called, which
 * removes ours: libtack's long-launch hook, run once by any launch that
 * passes 10 ms, puts it back (a sigaction call: too dear for every launch,
 * nothing for a long one).  The handler and the saved previous one are
 * process-wide by nature, not per module; they hold no Python objects.
 */
#include "tack_py.h" /* Python.h first: it sets the POSIX feature macros */

#include <errno.h>
#include <signal.h>
#include <string.h>

static struct sigaction previous;    /* the handler ours chains to */
static struct sigaction python;      /* Python's own, as found at import */
static volatile sig_atomic_t inside; /* ours is running: a handler it chained to raised SIGINT again */
static unsigned long main_ident;     /* the main thread's PyThread ident */
static _Thread_local int thread_set; /* this thread's interruptibility is decided */

static void on_sigint(int sig, siginfo_t *info, void *uc) {
    int saved = errno;
    tack_interrupt();
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

/* At import: in front of whatever handler is there (Python's), unless the
 * program set SIG_IGN or SIG_DFL. */
static void install_at_import(void) {
    struct sigaction cur;
    if (sigaction(SIGINT, NULL, &cur) != 0 || is_ours(&cur)) return;
    if (!(cur.sa_flags & SA_SIGINFO) && (cur.sa_handler == SIG_DFL || cur.sa_handler == SIG_IGN)) return;
    python = cur;
    install(&cur);
}

/* Later (the long-launch hook): back in front of Python's handler if
 * signal.signal() put that back.  Any other handler found there was
 * installed after ours by a library that saved ours to chain to -- LLVM,
 * which an OpenCL driver loads, restores the handler it found and raises
 * the signal again -- so it is left in front. */
static void ensure_handler(void) {
    struct sigaction cur;
    if (sigaction(SIGINT, NULL, &cur) != 0 || is_ours(&cur)) return;
    if (python.sa_handler && same_handler(&cur, &python)) install(&cur);
}

void tpy_mark_interruptible(void) {
    if (thread_set) return;
    thread_set = 1;
    tack_set_interruptible(PyThread_get_thread_ident() == main_ident);
}

int tpy_interrupt_exec(PyObject *m) {
    (void)m;
    PyObject *threading = PyImport_ImportModule("threading");
    if (!threading) return -1;
    PyObject *main = PyObject_CallMethod(threading, "main_thread", NULL);
    Py_DECREF(threading);
    if (!main) return -1;
    PyObject *ident = PyObject_GetAttrString(main, "ident");
    Py_DECREF(main);
    if (!ident) return -1;
    unsigned long id = PyLong_AsUnsignedLong(ident);
    Py_DECREF(ident);
    if (id == (unsigned long)-1 && PyErr_Occurred()) return -1;
    main_ident = id;
    if (PyThread_get_thread_ident() == main_ident) install_at_import();
    tack_set_long_launch_hook(ensure_handler);
    return 0;
}
