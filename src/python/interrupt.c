/*
 * interrupt.c -- Ctrl-C stops a running kernel and raises KeyboardInterrupt,
 * when that is what the program's SIGINT handler would do.
 *
 * Python answers SIGINT between bytecodes, so a kernel that runs for
 * minutes would ignore Ctrl-C until it ends.  libtack can stop a launch
 * cleanly when asked (tack_interrupt, src/runtime/interrupt.c); this file
 * asks.  At import it puts a SIGINT handler in front of Python's own: ours
 * calls tack_interrupt() and then Python's, so Python still records the
 * signal and runs the Python-level handler as soon as the stopped launch
 * returns (tpy_raise).  A program that set SIGINT to SIG_IGN or SIG_DFL
 * keeps it: we chain only to a handler.
 *
 * The rule: a launch (and the compile before it) is interruptible only
 * when it runs on the main thread, the only one that runs Python's signal
 * handlers, and the Python-level SIGINT handler is Python's default,
 * signal.default_int_handler -- the one whose answer is KeyboardInterrupt,
 * which would abandon the kernel's result anyway.  A handler the program
 * installed (a simulation that checkpoints and stops cleanly on Ctrl-C)
 * says the program wants to decide: its kernel runs to its end, and then
 * Python runs the handler, as it runs every handler, between bytecodes.
 * SIG_IGN: nothing happens.  The handler is asked at every main-thread
 * launch, with _signal.getsignal (a C function: tens of nanoseconds; the
 * signal module's wrapper costs microseconds), since signal.signal() can
 * change it between any two launches and tells nobody.  After fork(), the
 * thread that forked is the child's main thread (Python makes it so), and
 * an atfork handler says so here.
 *
 * Python installs its C handler again whenever signal.signal() is called,
 * which removes ours: libtack's long-launch hook, run once by any
 * interruptible launch that passes 10 ms, puts it back (a sigaction call:
 * too dear for every launch, nothing for a long one).  The handler and the
 * saved previous one are process-wide by nature, not per module; they hold
 * no Python objects.
 *
 * The system calls themselves are the platform layer's, which libtack
 * exports to this extension (tack_private.h: tack_chain_sigint,
 * tack_at_fork_child; src/platform/posix_interrupt.c), so the extension
 * makes none of its own and builds for Windows too, where the handler is a
 * console control handler run before the C runtime's, which Python's
 * signal module hears Ctrl-C through (src/platform/win32_interrupt.c), and
 * where there is no fork.
 */
#include "tack_py.h" /* Python.h first */

#include <signal.h> /* SIGINT: C11's, for _signal.getsignal */

#include "tack_private.h"

static unsigned long main_ident; /* the main thread's PyThread ident (after fork: the child's) */

/* The rule (top): main thread and Python's default handler.  -1 with an
 * exception set when asking failed. */
int tpy_mark_interruptible(tpy_state *st) {
    int on = 0;
    if (PyThread_get_thread_ident() == main_ident && st->getsignal) {
        PyObject *h = PyObject_CallOneArg(st->getsignal, st->sigint);
        if (!h)
            return -1;
        on = h == st->default_int_handler;
        Py_DECREF(h);
    }
    tack_set_interruptible(on);
    return 0;
}

/* In a child of fork(): the forking thread is the main one now. */
static void after_fork_child(void) { main_ident = PyThread_get_thread_ident(); }

int tpy_interrupt_exec(PyObject *m, tpy_state *st) {
    (void)m;
    static int atfork_set;
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
    PyObject *sig = PyImport_ImportModule("_signal");
    if (!sig) return -1;
    st->getsignal = PyObject_GetAttrString(sig, "getsignal");
    st->default_int_handler = PyObject_GetAttrString(sig, "default_int_handler");
    Py_DECREF(sig);
    st->sigint = PyLong_FromLong(SIGINT);
    if (!st->getsignal || !st->default_int_handler || !st->sigint) return -1;
    main_ident = id;
    if (!atfork_set) {
        tack_at_fork_child(after_fork_child);
        atfork_set = 1;
    }
    if (PyThread_get_thread_ident() == main_ident) tack_chain_sigint();
    return 0;
}
