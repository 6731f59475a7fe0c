/*
 * races.h -- the run-time race detector (check_races): what the
 * instrumented CPU code and libtack share, and the session a launch keeps.
 *
 * The two structs below are mirrored, field for field, by the prelude that
 * compiler/passes/race_watch.c writes into an instrumented kernel's C; that prelude
 * ends with _Static_asserts of their layout as this header gives it, so a
 * copy that drifts fails to compile.  A kernel built without check_races
 * has neither the prelude nor the argument slot that carries the session.
 */
#ifndef TACK_RACES_H
#define TACK_RACES_H

#include <stdint.h>

#include "runtime/program.h"

/* The site number an instrumented kernel reports when its detector found a
 * conflict (or could not make its shadow memory): rt_race_error words it. */
#define TK_SITE_RACE (-3)

/* A shadow tag: the access's site (rsites index) over the iteration's flat index + 1. */
#define TK_RACE_ITER_BITS 48

/* One array's shadow memory for the loop running now: `width` words per
 * element from element -base (a strided view's lowest offset) for len elements. */
typedef struct tk_rcs {
    uint64_t *w;
    int64_t base, len, width;
} tk_rcs;

/* The head of a launch's session, as the instrumented code sees it. */
typedef struct tk_rc {
    /* Before instrumented loop `loop` runs: fresh shadows for its arrays; pn
     * are its extents, lo and step give each variable's value from its index.
     * Non-zero when the detector cannot run (the error is kept for the launch). */
    int (*begin)(struct tk_rc *rc, int loop, const int64_t *pn, const int64_t *lo, const int64_t *step);
    /* Two iterations met at element `at` of array `param`: tags `mine` and
     * `theirs`, kinds (0 read, 1 write, 2 atomic) how / 4 and how % 4.  The
     * first call of a launch is kept; the caller then stops the launch. */
    void (*conflict)(struct tk_rc *rc, int param, int64_t at, uint64_t mine, uint64_t theirs, int how);
    tk_rcs *s; /* per parameter */
} tk_rc;

typedef struct rt_race rt_race;

/* A session for one launch of instrumented program p with these arguments
 * (checked by tack_launch); NULL with the error set when out of memory. */
rt_race *rt_race_new(const tack_program *p, const tack_arg *args, int nargs);
/* What the generated entry receives in its extra argument slot. */
tk_rc *rt_race_head(rt_race *r);
/* The error for a launch stopped with TK_SITE_RACE (tack.RaceError). */
tack_status rt_race_error(const tack_program *p, const rt_race *r);
void rt_race_free(rt_race *r);

#endif /* TACK_RACES_H */
