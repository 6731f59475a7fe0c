/*
 * error.c -- per-thread error state and the version handshake.
 *
 * libtack reports failure with a tack_status and a message kept per thread,
 * in the manner of errno + strerror but with the bad value in the text
 * ("unknown dtype 'f33'").  Thread-local storage means two Python threads
 * calling into the library never see each other's messages.  Messages are
 * fixed-size buffers so that recording an out-of-memory error never needs
 * memory.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/runtime.h"

static _Thread_local char err_msg[1024];
static _Thread_local tack_status err_status;

const char *tack_last_error(void) { return err_msg; }
tack_status tack_last_status(void) { return err_status; }

void tack_clear_error(void) {
    err_msg[0] = '\0';
    err_status = TACK_OK;
}

tack_status tack_set_error(tack_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, sizeof err_msg, fmt, ap);
    va_end(ap);
    err_status = st;
    return st;
}

int tack_abi_version(void) { return TACK_ABI_VERSION; }
const char *tack_version_string(void) { return TACK_VERSION_STRING; }

tack_status tack_check_version(int abi_version) {
    if (abi_version != TACK_ABI_VERSION)
        return tack_set_error(TACK_ERR_RUNTIME,
                              "libtack speaks ABI version %d but the caller was built for %d; "
                              "rebuild the caller against this libtack",
                              TACK_ABI_VERSION, abi_version);
    return TACK_OK;
}

int rt_mul_overflow_size(size_t a, size_t b, size_t *out) {
    if (__builtin_mul_overflow(a, b, out))
        return 0;
    return 1;
}
