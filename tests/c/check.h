/* check.h -- the one test harness of the C unit tests (tests/c/test_*.c).
 * CHECK(cond) records a failure with file:line, the condition and Tack's last
 * error message, and goes on; a test file ends with CHECK_SUMMARY(), which
 * prints "N passed, M failed" and returns the exit status. */
#ifndef TACK_TEST_CHECK_H
#define TACK_TEST_CHECK_H
#include <stdio.h>
#include <stdlib.h>

#include "tack.h"

static int check_passed, check_failed;

#define CHECK(cond)                                                                             \
    do {                                                                                        \
        if (cond)                                                                               \
            check_passed++;                                                                     \
        else {                                                                                  \
            check_failed++;                                                                     \
            fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #cond, \
                    tack_last_error());                                                         \
        }                                                                                       \
    } while (0)

#define CHECK_SUMMARY()                                                \
    (printf("%d passed, %d failed\n", check_passed, check_failed),     \
     check_failed ? 1 : 0)

/* A counting allocator that fails allocation number `fail_at` (1-based;
 * 0 = never) and counts live blocks, for fail-the-Nth-allocation loops. */
static long alloc_count, alloc_fail_at, alloc_live;
static inline void *count_malloc(size_t n, void *ud)
{
    (void)ud;
    if (alloc_fail_at && ++alloc_count == alloc_fail_at)
        return NULL;
    void *p = malloc(n);
    if (p)
        alloc_live++;
    return p;
}
static inline void *count_realloc(void *p, size_t n, void *ud)
{
    (void)ud;
    if (alloc_fail_at && ++alloc_count == alloc_fail_at)
        return NULL;
    if (!p)
        alloc_live++;
    return realloc(p, n);
}
static inline void count_free(void *p, void *ud)
{
    (void)ud;
    if (p)
        alloc_live--;
    free(p);
}
static inline void failing_allocator_install(long fail_at)
{
    static const tack_allocator a = {count_malloc, count_realloc, count_free, NULL};
    alloc_count = 0;
    alloc_fail_at = fail_at;
    alloc_live = 0;
    tack_set_allocator(&a);
}
#endif
