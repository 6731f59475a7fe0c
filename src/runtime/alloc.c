/*
 * alloc.c -- the one allocator hook of libtack.
 *
 * Every host allocation in the runtime and the compiler goes through
 * tack_malloc/tack_realloc/tack_free, which call the installed
 * tack_allocator.  That single choke point is what lets the C tests fail the
 * Nth allocation (SQLite's technique): a counting allocator returns NULL at
 * allocation N, and the test checks for a clean TACK_ERR_NOMEM and, under
 * ASan/LSan, for no leak -- for every N until the operation succeeds.
 *
 * Device memory is not allocated here; backends own it.  The CPU backend's
 * array storage does go through here (see backends/cpu.c), so host-side
 * out-of-memory is testable end to end.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

static void *libc_malloc(size_t n, void *ud) { (void)ud; return malloc(n); }
static void *libc_realloc(void *p, size_t n, void *ud) { (void)ud; return realloc(p, n); }
static void libc_free(void *p, void *ud) { (void)ud; free(p); }

static const tack_allocator libc_allocator = { libc_malloc, libc_realloc, libc_free, NULL };
static tack_allocator current = { libc_malloc, libc_realloc, libc_free, NULL };

void tack_set_allocator(const tack_allocator *a) {
    current = a ? *a : libc_allocator;
}

void *tack_malloc(size_t size) {
    return current.malloc(size ? size : 1, current.ud);
}

void *tack_calloc(size_t n, size_t size) {
    size_t total;
    if (!rt_mul_overflow_size(n, size, &total))
        return NULL;
    void *p = tack_malloc(total);
    if (p)
        memset(p, 0, total);
    return p;
}

void *tack_realloc(void *ptr, size_t size) {
    if (!ptr)
        return tack_malloc(size);
    return current.realloc(ptr, size ? size : 1, current.ud);
}

void tack_free(void *ptr) {
    if (ptr)
        current.free(ptr, current.ud);
}
