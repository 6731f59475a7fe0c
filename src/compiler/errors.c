/*
 * errors.c -- how a compile fails or warns: tk_error, tk_oom,
 * tk_unsupported and tk_warn, and the location of the last compile error
 * (tack_compile_error_location).
 *
 * Every pass raises through these, so they sit below every pass: they
 * write the message, record where it arose, and longjmp to the jump buffer
 * the driver set (compiler.h: the driver then frees the arena), calling no
 * pass and not the driver.  They were driver.c's, which made the driver and
 * each pass call each other; here the calls go one way, driver -> passes
 * -> errors.
 *
 * The location is per thread: a compile runs on one thread, and the
 * extension reads the location right after tack_compile returns on it.
 */
#include <stdio.h>
#include <string.h>

#include "compiler/compiler.h"

static _Thread_local struct {
    char file[512];
    int line, col;
} err_loc;

TACK_API void tack_compile_error_location(const char **filename, int *line, int *col) {
    if (filename) *filename = err_loc.file[0] ? err_loc.file : NULL;
    if (line) *line = err_loc.line;
    if (col) *col = err_loc.col;
}

_Noreturn void tk_error(tk_cc *C, int func, int line, int col, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *file = (func >= 0 && func < C->m->nfuncs) ? C->m->funcs[func].filename : "<kernel>";
    snprintf(err_loc.file, sizeof err_loc.file, "%s", file ? file : "<kernel>");
    err_loc.line = line;
    err_loc.col = col;
    tack_set_error(TACK_ERR_COMPILE, "%s", msg);
    longjmp(C->jmp, 2);
}

_Noreturn void tk_oom(tk_cc *C) { longjmp(C->jmp, 1); }

_Noreturn void tk_unsupported(tk_cc *C, int func, int line, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *file = (func >= 0 && func < C->m->nfuncs) ? C->m->funcs[func].filename : NULL;
    tack_set_error(TACK_ERR_UNSUPPORTED, "%s (%s:%d)", msg, file ? file : "<kernel>", line);
    longjmp(C->jmp, 3);
}

void tk_warn(tk_cc *C, int func, int line, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *file = (func >= 0 && func < C->m->nfuncs) ? C->m->funcs[func].filename : NULL;
    C->nwarn_calls++;
    for (int i = 0; i < C->nwarns; i++)
        if (C->warns[i].line == line && !strcmp(C->warns[i].message, msg)) return;
    if (C->nwarns == C->capwarns) {
        int cap = C->capwarns ? 2 * C->capwarns : 4;
        tk_warning *g = tk_alloc(&C->arena, sizeof *g * (size_t)cap);
        if (C->nwarns) memcpy(g, C->warns, sizeof *g * (size_t)C->nwarns);
        C->warns = g;
        C->capwarns = cap;
    }
    C->warns[C->nwarns].line = line;
    C->warns[C->nwarns].file = file ? file : "<kernel>";
    C->warns[C->nwarns++].message = tk_strdup(&C->arena, msg);
}

void tk_error_location_clear(void) {
    err_loc.file[0] = 0;
    err_loc.line = err_loc.col = 0;
}
