/*
 * program.h -- a compiled kernel as the runtime and the backends see it.
 *
 * tack_compile (compiler/driver.c) makes a tack_program; from then on only
 * the runtime and a backend touch it: the backend builds it for a device
 * (loads the code into handle/entry), tack_launch checks the arguments
 * against the parameter table and hands them to the backend, and a failed
 * check in the generated code comes back as a site number that
 * tk_site_error words into the error the user reads.  Backends include this
 * header and the runtime's, never the compiler's internals.
 */
#ifndef TACK_PROGRAM_H
#define TACK_PROGRAM_H

#include <stdatomic.h>
#include <stdint.h>

#include "tack.h"
#include "tack_kernel.h"

/* What a check site tests; the generated code reports the site's number. */
/* CK_STEP: a value that must not be 0, else ValueError with the site's message
 * (range()'s step; seed_u64's x == x, false for a NaN). */
/* CK_UNBOUND: a flag that must be true, else UnboundLocalError naming the
 * local in the site's message (compiler/lower/unbound.c). */
/* CK_INTFIT: a Python int known at run time that must fit the fixed-width
 * type it meets in arithmetic, else OverflowError naming the value and the
 * type (the site's message: the dtype's name; compiler/lower/lower_pyint.c). */
typedef enum tk_check { CK_INDEX, CK_ZERODIV, CK_ASSERT, CK_COMP, CK_NEGPOW, CK_STEP, CK_UNBOUND, CK_INTFIT } tk_check;

/* The site number a launch reports when tack_interrupt() stopped it. */
#define TK_SITE_INTERRUPT (-2)

typedef struct tk_site {   /* a check site: what to say when it fails */
    int kind;              /* tk_check */
    int line;
    int axis;
    const char *array;     /* CK_INDEX: parameter name */
    const char *message;   /* CK_ASSERT, CK_ZERODIV, CK_STEP: the text; CK_UNBOUND: the local's name;
                            * CK_INTFIT: the type's name */
    const char *func;      /* kernel or function name */
    const char *file;
} tk_site;

typedef struct tk_pinfo {  /* one parameter of the compiled signature */
    char *name;
    int is_array;
    tack_dtype dtype;      /* an array's element type, or a scalar's carrier */
    int ndim;
    int weak;              /* a Python scalar (NEP 50) */
    int written;           /* an array the kernel writes */
    int64_t lo, hi;        /* a Python int: the range it must fit (the types it meets) */
    tack_dtype narrow;     /* ... the type that sets it; TACK_DTYPE_COUNT: no limit */
    int carry_f32;         /* a float scalar a GPU receives as f32 bits (else a double's) */
    int distinct;          /* an array compiled as overlapping no other (restrict) */
    uint64_t alias_same;   /* bit j: the result is wrong if this array and array j are one array */
    uint64_t alias_part;   /* bit j: ... if they share memory without being one array (compiler/depend_judge.c) */
    int strided;           /* an array indexed with its strides (tack_argtype.strided) */
} tk_pinfo;

/* The run-time race detector's tables (check_races; runtime/races.c). */
typedef struct tk_rsite {  /* an access the instrumented code records */
    int param;             /* the kernel's array parameter (-1: in a @tack.func, the caller's array) */
    int kind;              /* 0 a read, 1 a write, 2 an atomic update */
    int line;
    char *file;
    char *text;            /* "out[idx[i]]", as the race check renders it */
} tk_rsite;

typedef struct tk_rloop {  /* an instrumented parallel loop */
    int line, nd;
    char *file;
    char *vars[TACK_MAX_NDIM]; /* the names of its variables */
    signed char *width;    /* per parameter: shadow words per element (0 none, 3, or 5 with atomics) */
} tk_rloop;

typedef struct tk_pwarn {  /* a warning of the compile (a possible race, compiler/depend.c) */
    int line;
    char *file;
    char *message;
} tk_pwarn;

struct tack_program {
    char *kernel_name;
    char *filename;
    char *source;            /* the emitted source, in the dialect below */
    char *ir;
    char *dialect;           /* "c", "cuda": the backend that may build it */
    int fast_math;
    int flush_denormals;     /* subnormal floats flush to zero while it runs (CPU: fpmode.c) */
    int nparams;
    tk_pinfo *params;
    int nsites;
    tk_site *sites;          /* strings owned by the program */
    int nwarnings;
    tk_pwarn *warnings;      /* what the compile warned of; strings owned by the program */
    int nrloops, nrsites;    /* check_races: the instrumented loops and accesses (none: 0) */
    tk_rloop *rloops;
    tk_rsite *rsites;
    tack_device *device;     /* set by tack_program_build */
    void *handle;            /* backend: loaded code */
    void *entry;
    atomic_long holds;       /* graphs keeping it (graph.c): tack_program_free frees it after the last */
};

/* A heap copy of s (NULL for NULL); sets *fail on a failed allocation. */
char *tk_program_strdup(const char *s, int *fail);

/* A program from ready-made source, for tests of a backend whose dialect the
 * compiler does not emit yet (not exported): copies of the name, dialect,
 * source, parameter table and sites.  params[i].narrow must be
 * TACK_DTYPE_COUNT unless a scalar's range is to be checked. */
tack_status tk_program_from_source(const char *kernel_name, const char *dialect, const char *source, int nparams,
                                   const tk_pinfo *params, int nsites, const tk_site *sites, tack_program **out);

/* The error for a failed check: site `site` of p, with the values the
 * generated code passed (the index and the extent, or the exponent). */
tack_status tk_site_error(const tack_program *p, int site, int64_t a, int64_t b);

#endif /* TACK_PROGRAM_H */
