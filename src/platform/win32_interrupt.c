/*
 * win32_interrupt.c -- Ctrl-C for the whole process on Windows: a console
 * control handler that asks the core to stop (platform.h,
 * tk_interrupt_chain) and then lets the next handler run.
 *
 * Windows delivers Ctrl-C and Ctrl-Break to a console program on a thread
 * of their own, calling the handlers registered with SetConsoleCtrlHandler
 * last-registered first until one returns TRUE.  The C runtime's SIGINT
 * emulation, through which Python's signal module hears Ctrl-C, is one of
 * them, registered when Python starts; ours, registered later, runs before
 * it, calls the core's function (an atomic store) and returns FALSE, so the
 * runtime's handler and then Python's still run.  Python's signal.signal()
 * changes the runtime's table, not the console's list, so ours is never
 * removed and tk_interrupt_rechain has nothing to do.  Unlike POSIX, the
 * handler cannot see whether the program ignores SIGINT; it need not: the
 * core reads the request only in launches the embedder marked interruptible
 * (the Python extension: only while Python's default handler is in force).
 */
#include "platform/platform.h"

#if TK_WINDOWS
#include "platform/win32.h"

static void (*volatile on_interrupt)(void);
static volatile LONG registered;

static BOOL WINAPI on_ctrl(DWORD event) {
    void (*fn)(void) = on_interrupt;
    if ((event == CTRL_C_EVENT || event == CTRL_BREAK_EVENT) && fn) fn();
    return FALSE; /* the next handler: the C runtime's SIGINT, Python's */
}

void tk_interrupt_chain(void (*fn)(void)) {
    on_interrupt = fn;
    if (InterlockedExchange(&registered, 1) == 0 && !SetConsoleCtrlHandler(on_ctrl, TRUE))
        InterlockedExchange(&registered, 0);
}

void tk_interrupt_rechain(void) {}
#endif
