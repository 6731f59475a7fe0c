/*
 * depend.h -- what the race check's two halves share (not installed):
 * depend.c collects a parallel loop's array accesses and the forms of their
 * indices; depend_judge.c decides which pairs conflict and says so.
 */
#ifndef TACK_DEPEND_H
#define TACK_DEPEND_H

#include "compiler/compiler.h"

#define NV TACK_MAX_NDIM /* a parallel loop's variables */
#define NATOM 4
#define MAXCALL 8        /* @tack.func calls followed inside one another */

typedef struct dterm { const tk_ir *e; int64_t coef; } dterm;

typedef struct dform {
    int aff;             /* sum c[d] * var_d + k + sum atoms */
    int dep;             /* may differ between iterations */
    int vary;            /* an atom may change within an iteration (a serial loop's variable) */
    int64_t c[NV], k;
    const tk_ir *sc[NV]; /* c[d] is c[d] * sc[d]: a symbolic factor (i * m), the same in every iteration */
    int na;
    dterm at[NATOM];
} dform;

enum { ACC_LOAD, ACC_STORE, ACC_ATOMIC,
       ACC_READ /* a load of an array the loop does not write: only dp_alias looks at it */ };

typedef struct dacc {
    int kind, param, line, func;
    int nidx;
    dform idx[NV];
    const tk_ir *raw[NV];
    int guard;           /* under a condition that differs between iterations */
    unsigned pinned;     /* loop variables pinned by `v == e` conditions */
    signed char dl[NV], da[NV], db[NV]; /* a flattened dimension (record): 1 a block of var da,
                                         * 2 var da times the extent of var db, plus db */
    int valinv;          /* a store of a value that is the same in every iteration */
    int atom;            /* ACC_ATOMIC: its tk_atom (add, sub, min, max) */
    const char *text;    /* "a[i - 1]" */
    const tk_ir *node;   /* the access, when written in the loop's own body (not a callee's) */
    const tk_ir *at;     /* the access, wherever it is written (the loop's body or a callee's) */
    int si;              /* the specialization whose body holds it (0: the kernel's) */
    const char *ftext;   /* a callee's access as the callee writes it ("a[k]"), else NULL */
} dacc;

typedef struct dpass dpass;
struct dpass {
    tk_cc *C;
    tk_spec *K;
    const tk_ir *pf;
    int nv;
    int pvar[NV];        /* the loop's variables (locals of K) */
    int64_t ext[NV];     /* constant extents, else -1 */
    const char *vname[NV]; /* the name the kernel gave a variable that is a temporary's value */
    int stride;          /* the variable is lo + k * step with a step not known: distances are not exact */
    uint64_t written;    /* arrays the loop writes (stores or atomics) */
    dacc *acc;
    int nacc, capacc;
    const tk_ir **fdef;  /* per kernel local assigned once, at the top: its value */
    int deep;            /* a call nested too deep to follow */
    int deep_line;
};

/* depend.c */
int dp_ir_same(const tk_ir *a, const tk_ir *b);           /* structural equality (atoms) */
int dp_same_shape(const dform *a, const dform *b);        /* same coefficients and atoms */
int dp_has_var(const dform *f, int nv);                   /* a loop variable has a coefficient */
/* depend_judge.c */
void dp_judge(dpass *P);                                  /* errors and warnings for one loop */
void dp_alias(dpass *P);                                  /* which arguments may not share memory */
/* race_watch.c */
void dp_watch(dpass *P);                                  /* check_races: instrument this loop */

#endif /* TACK_DEPEND_H */
