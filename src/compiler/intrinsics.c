/*
 * intrinsics.c -- the intrinsic table, expanded once for the whole compiler.
 *
 * intrinsics.def holds one row per intrinsic; this file turns the rows into
 * the lookups the rest of the compiler asks: lower_call.c finds a called name
 * (tk_intrinsic_find) and dispatches on its kind, the IR dump names an
 * IR_MATH operation (tk_math_name), the emitter asks whether it yields bool
 * (tk_math_is_predicate), and each dialect spells it from its C library name
 * (tk_math_libm) or, for a row without one, as the prelude's helper
 * (tk_math_helper: tk_lerp_f32, written by emit/prelude_math.c).  The atomics'
 * operations are named here once too (tk_atom_name: the IR dump's
 * atomic_<name>, the dialects' tk_atomic_<name>_<T> helpers, the messages'
 * tack.atomic_<name>).  The Python package reads the rows through the public
 * tack_intrinsic_info() (name, kind, arity): it builds its intrinsic
 * functions from them, and its tests check that every row has a Python
 * meaning and nothing in Python lacks a row.
 *
 * The math rows come first in the table, in the tk_math enum's order, so row
 * i of TK_MATH is math operation i.  The lookup by name is linear: there are
 * about seventy rows and it runs once per call site at compile time.
 */
#include <string.h>

#include "compiler/compiler.h"

static const tk_intrinsic TABLE[] = {
#define TK_MATH(id, name, nargs, result, libm_f64, libm_f32, ulps_f32, ulps_f64) {name, TK_IK_MATH, id, nargs, nargs, result},
#define TK_CALL(name, kind, sub, min_args, max_args) {name, kind, sub, min_args, max_args, TK_MR_FLOAT},
#include "compiler/intrinsics.def"
    {NULL, TK_IK_MATH, 0, 0, 0, TK_MR_FLOAT}};

static const struct mathrow {
    const char *name, *libm_f64, *libm_f32, *helper_f64, *helper_f32;
    tk_math_result result;
} MATH[M_COUNT] = {
#define TK_MATH(id, name, nargs, result, libm_f64, libm_f32, ulps_f32, ulps_f64) \
    [id] = {name, libm_f64, libm_f32, "tk_" name "_f64", "tk_" name "_f32", result},
#define TK_MATH_OP(id, name) [id] = {name, "", "", "", "", TK_MR_FLOAT},
#include "compiler/intrinsics.def"
};

const tk_intrinsic *tk_intrinsic_at(int i) {
    if (i < 0 || i >= (int)(sizeof TABLE / sizeof TABLE[0]) - 1) return NULL;
    return &TABLE[i];
}

const tk_intrinsic *tk_intrinsic_find(const char *name) {
    if (!name) return NULL;
    for (const tk_intrinsic *t = TABLE; t->name; t++)
        if (!strcmp(t->name, name)) return t;
    return NULL;
}

const char *tk_math_name(int m) { return (unsigned)m < M_COUNT ? MATH[m].name : "?"; }

const char *tk_math_libm(int m, tack_dtype dt) {
    if ((unsigned)m >= M_COUNT) return "";
    return dt == TACK_F32 ? MATH[m].libm_f32 : MATH[m].libm_f64;
}

const char *tk_warp_name(int k) {
    static const char *const NAME[WARP_COUNT] = {[WARP_IDX] = "idx", [WARP_DOWN] = "down", [WARP_BALLOT] = "ballot",
                                                 [WARP_ANY] = "any", [WARP_ALL] = "all"};
    return (unsigned)k < WARP_COUNT ? NAME[k] : "?";
}

const char *tk_atom_name(int a) {
    static const char *const NAME[A_COUNT] = {[A_ADD] = "add", [A_SUB] = "sub", [A_MIN] = "min", [A_MAX] = "max",
                                              [A_EXCH] = "exch", [A_AND] = "and", [A_OR] = "or", [A_XOR] = "xor",
                                              [A_CAS] = "cas"};
    return (unsigned)a < A_COUNT ? NAME[a] : "?";
}

const char *tk_math_helper(int m, tack_dtype dt) {
    if ((unsigned)m >= M_COUNT || MATH[m].libm_f64[0] || !MATH[m].helper_f64[0]) return NULL;
    return dt == TACK_F32 ? MATH[m].helper_f32 : MATH[m].helper_f64;
}

int tk_math_is_predicate(int m) { return (unsigned)m < M_COUNT && MATH[m].result == TK_MR_BOOL; }

TACK_API const char *tack_intrinsic_name(int i) { return tack_intrinsic_info(i, NULL, NULL, NULL); }

/* The kinds by name, for the Python package (tack_intrinsic_info). */
static const char *const KIND_NAME[] = {
    [TK_IK_MATH] = "math",       [TK_IK_LOOP] = "loop",       [TK_IK_PRINT] = "print",
    [TK_IK_LEN] = "len",         [TK_IK_CAST] = "cast",       [TK_IK_ABS] = "abs",
    [TK_IK_MINMAX] = "minmax",   [TK_IK_VECBIN] = "vecbin",   [TK_IK_VECMATH] = "vecmath",
    [TK_IK_ATOMIC] = "atomic",   [TK_IK_COMPLEX] = "complex", [TK_IK_SEED] = "seed",
    [TK_IK_QUAT] = "quat",
    [TK_IK_LINALG] = "linalg",   [TK_IK_BARRIER] = "barrier", [TK_IK_BLOCKOP] = "blockop",
    [TK_IK_ROUND] = "round",
};

TACK_API const char *tack_intrinsic_info(int i, const char **kind, int *min_args, int *max_args) {
    const tk_intrinsic *t = tk_intrinsic_at(i);
    if (!t) return NULL;
    if (kind) {
        unsigned k = (unsigned)t->kind;
        *kind = k < sizeof KIND_NAME / sizeof KIND_NAME[0] && KIND_NAME[k] ? KIND_NAME[k] : "?";
    }
    if (min_args) *min_args = t->min_args;
    if (max_args) *max_args = t->max_args;
    return t->name;
}
