/*
 * compiler.h -- the kernel compiler's internal interface (not installed).
 *
 * The pipeline is tack_compile in driver.c: lowering (lower/), the analyses
 * (analysis/), the passes (passes/, cpu/), then emission (emit/) through the
 * target's dialect (dialects/; the GPU ones share grid/'s layout).  The order
 * of its steps, read from driver.c, and a map of every file with the first
 * sentence of its essay are in docs/design/architecture.md (make docs-gen).
 *
 * errors.c holds tk_error, tk_unsupported and tk_warn, which every pass calls;
 * target.c the one list of targets, each with its descriptor (target.h): the
 * passes ask it what the target can do, never its name.
 *
 * Memory: everything a compile allocates lives in one arena (arena.c) that is
 * freed in bulk.  Errors -- a compile error or an allocation failure -- unwind
 * with longjmp to the driver, which frees the arena; so no pass checks for
 * NULL and no pass can leak.
 */
#ifndef TACK_COMPILER_H
#define TACK_COMPILER_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "tack.h"
#include "tack_kernel.h"
#include "runtime/program.h" /* tk_site, tk_pinfo, struct tack_program: the compiler fills them */

#define TK_HIDDEN __attribute__((visibility("hidden")))

/* ---------------------------------------------------------------- arena */
typedef struct tk_chunk tk_chunk;
typedef struct tk_arena {
    tk_chunk *head;
    size_t used, cap;      /* in the head chunk */
    jmp_buf *oom;          /* longjmp target on failure (NULL: return NULL) */
} tk_arena;

void tk_arena_init(tk_arena *a);
void tk_arena_free(tk_arena *a);
void *tk_alloc(tk_arena *a, size_t size);   /* zeroed, 16-byte aligned */
char *tk_strdup(tk_arena *a, const char *s);
char *tk_fmt(tk_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A growable string kept in an arena. */
typedef struct tk_buf {
    tk_arena *arena;
    char *s;
    size_t len, cap;
} tk_buf;
void tk_buf_init(tk_buf *b, tk_arena *a);
void tk_puts(tk_buf *b, const char *s);
void tk_printf(tk_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tk_vprintf(tk_buf *b, const char *fmt, va_list ap);

/* ------------------------------------------------------------------ AST */
struct tack_node {
    tack_node_kind kind;
    tack_op op;
    int line, col;
    const char *name;
    int64_t ival;
    int is_uint;           /* ival holds a uint64 above INT64_MAX */
    double fval;
    int nkids, capkids;
    tack_node **kids;
    int nops, capops;
    tack_op *ops;          /* COMPARE */
};

typedef struct tk_fparam {
    const char *name;
    tack_node *annotation;
} tk_fparam;

typedef struct tk_func {
    tack_function_kind kind;
    const char *name, *filename, *source;
    int first_line;
    int nparams, capparams;
    tk_fparam *params;
    tack_node *body;
    tack_node *returns;
} tk_func;

struct tack_module {
    tk_arena arena;
    int nfuncs, capfuncs;
    tk_func *funcs;
};

/* ---------------------------------------------------------------- types */
typedef enum tk_tykind {
    TY_UNKNOWN = 0, /* not yet inferred (fixed point in progress) */
    TY_VOID,
    TY_VALUE,       /* scalar, vector or matrix: dt */
    TY_ARRAY,       /* array parameter: element dt, ndim */
    TY_SHAPE,       /* a.shape: ndim entries of weak i64 */
    TY_DTYPE,       /* a dtype object used as a value (tack.f32) */
    TY_RANGE,       /* range(...) / ndrange(...) */
    TY_TUPLE,       /* what a @tack.func returning a tuple returns: spec index dt | ndim << 8 */
    TY_MULTI        /* what svd3/eig3/qr3 return: dt the matrix argument's, ndim the M_* row (ty_multi) */
} tk_tykind;

typedef struct tk_type {
    uint8_t kind;
    uint8_t dt;    /* tack_dtype */
    uint8_t ndim;
    uint8_t weak;  /* Python scalar: carrier dt is TACK_BOOL, TACK_I64 or TACK_F64 */
    uint8_t strided; /* TY_ARRAY: a strided view, indexed with its element strides a<p>_t<k>
                        (tack_argtype.strided; never a local array) */
} tk_type;

tk_type ty_value(tack_dtype dt);
tk_type ty_weak(tack_dtype carrier);
tk_type ty_unknown(void);
tk_type ty_void(void);
int ty_eq(tk_type a, tk_type b);
int ty_is_scalar(tk_type t);   /* value of a scalar dtype */
int ty_is_int(tk_type t);      /* signed or unsigned integer (not bool) */
int ty_is_float(tk_type t);
int ty_is_bool(tk_type t);
int ty_is_vector(tk_type t);   /* vec* */
int ty_is_complex(tk_type t);  /* complex64 / complex128 (scalars: ty_is_scalar holds) */
tack_dtype dt_complex_part(tack_dtype dt);  /* complex64 -> f32, complex128 -> f64 */
tack_dtype dt_complex_of(tack_dtype part);  /* f32 (f16) -> complex64, f64 -> complex128 */
int ty_is_matrix(tk_type t);
int ty_is_quat(tk_type t);     /* quat / quatd (TACK_FORM_QUAT): not a vector */
int ty_is_xform(tk_type t);    /* transform / transformd (TACK_FORM_TRANSFORM): not a vector */
int dt_form(tack_dtype dt);    /* tack_dtype_form */
const tack_dtype_info *ty_info(tack_dtype dt);
int dt_bits(tack_dtype dt);
tack_scalar_kind dt_kind(tack_dtype dt);
tack_dtype dt_scalar(tack_dtype dt);
int dt_rows(tack_dtype dt);
int dt_cols(tack_dtype dt);
const char *dt_name(tack_dtype dt);
/* f16 and bf16, the 16-bit floats: storage types, held as their bits
 * (uint16_t in every dialect) and computed as f32.  A load widens through
 * dt_half_load's helper ("tk_h2f", "tk_b2f"), a store rounds to nearest even
 * through dt_half_store's ("tk_f2h", "tk_f2b"; from a float64, rounded once:
 * "tk_d2h", "tk_d2b"); each dialect's prelude defines them. */
int dt_is_half(int dt);
const char *dt_half_load(int dt);
const char *dt_half_store(int dt, int from_f64);
tack_dtype dt_compose(tack_dtype s, int rows, int cols); /* TACK_DTYPE_COUNT if none */
/* Name of a type for messages ("f32", "weak int", "array[f32, 2]"). */
const char *ty_name(tk_arena *a, tk_type t);
/* NumPy 2 promotion with NEP 50 weak scalars; kind TY_UNKNOWN when impossible. */
tk_type ty_promote(tk_type a, tk_type b);
void ty_set_default_float(tack_dtype dt);   /* for the compile on this thread: f32 or f64 */
tack_dtype ty_default_float(void);
/* The concrete type a weak value takes standing alone (i64, f32, bool). */
tk_type ty_concrete(tk_type t);
/* The default float for a type (division of ints, math of ints). */
tk_type ty_floatify(tk_type t);
/* The type of a tuple returned by specialization si, and its spec index. */
tk_type ty_tuple(int si);
int ty_tuple_spec(tk_type t);
/* The values a decomposition (M_SVD3, M_EIG3, M_QR3 of matrix dtype mat) returns:
 * their number, and the type of value k. */
tk_type ty_multi(tack_dtype mat, int m);
int ty_multi_count(tk_type t);
tk_type ty_multi_field(tk_type t, int k);

/* ------------------------------------------------------------------- IR */
typedef enum tk_irop {
    /* expressions (pure: loads never fault, checks precede them) */
    IR_CONST,    /* c */
    IR_LOCAL,    /* local */
    IR_CAST,     /* [x] -> ty */
    IR_BIN,      /* sub = tk_bin; [a, b] both of type ty (compares: operand type in aux_ty) */
    IR_UN,       /* sub = tk_un; [a] */
    IR_AND, IR_OR, /* [a, b] short circuit, Python value semantics */
    IR_SELECT,   /* [cond, a, b] */
    IR_MATH,     /* sub = tk_math; [args] */
    IR_LOAD,     /* param = array; [idx0, ...] each already wrapped/checked; sub TK_LOAD_IN_BOUNDS: each index
                  * is within its extent wherever the loops around the load run (checks.c, for speculate.c) */
    IR_SHAPE,    /* param = array, aux = axis */
    IR_WRAP,     /* param = array, aux = axis; [i] -> i < 0 ? i + shape : i
                  * (param -1: a local array's axis, whose constant extent is c.i) */
    IR_VEC,      /* [components...] -> ty vector/matrix (row major) */
    IR_COMP,     /* [v, k] component k (matrix: [m, i, j]; a tuple: [t, k], k constant) */
    IR_CALL,     /* aux = spec; [args]; array args are IR_ARRAY */
    IR_ARRAY,    /* param: an array passed to a function */
    IR_LARRAY,   /* local: a local array passed to a function (its extents are constants) */
    IR_ATOMIC,   /* sub = tk_atom; param = array; [value, idx...] -> old value
                  * (A_CAS: [value, expected, idx...]; ir_atomic_first); comp as IR_STORE's */
    IR_LLOAD,    /* local = a local array (lower_local.c); [idx0, ...] each already wrapped/checked */
    IR_WARP,     /* sub = tk_warp; c.i = width: an exchange among the 32 lanes of a hardware warp (lower_blocks.c,
                  * on a target with warp32_shuffles); not pure: every lane of the warp must evaluate it */
    /* statements */
    IR_BLOCK,    /* [stmts] */
    IR_ASSIGN,   /* local = [value] */
    IR_SETCOMP,  /* local's component: [k, value] (matrix [i, j, value]) */
    IR_STORE,    /* param = array; [value, idx...]; sub ST_RMW: the write of a compound a[i] op= v;
                  * comp > 0: only component comp - 1 of the element (a[i].x = s), value its scalar */
    IR_IF,       /* [cond, then BLOCK, else BLOCK] */
    IR_WHILE,    /* [cond, body BLOCK] */
    IR_FOR,      /* serial: local = var; [lo, hi, step, body BLOCK]; sub TK_FOR_QUIET: does not
                  * poll; aux > 0: polls for local aux - 1's units of work an iteration (nests.c) */
    IR_PFOR,     /* parallel: aux = ndims; locals in vars[]; [n0.., body BLOCK]; step 1, from 0 or `off`;
                  * sub TK_PFOR_BLOCKS: tack.blocks(n, B) (lower_blocks.c): vars[0] the block, `local` the
                  * thread, c.i the block size B, `param` the site of a divergent barrier */
    IR_BREAK, IR_CONTINUE,
    IR_RETURN,   /* [value] or [] */
    IR_CHECK,    /* sub = tk_check; aux = site; [the operands of what must hold]:
                  * CK_INDEX [i, n]: -n <= i < n, or by local (tk_index_form) CKI_NONNEG
                  * [i, n]: 0 <= i < n, CKI_RANGE [lo, hi, n] (hoisted out of a loop):
                  * lo >= hi or hi <= n; CK_COMP [k, len]: -len <= k < len; CK_ZERODIV
                  * [d]: d != 0; CK_NEGPOW [e]: e >= 0; CK_ASSERT [c]: c; CK_INTFIT
                  * [v, lo, hi] (constants lo, hi): lo <= v <= hi, or CKI_RANGE [a, b, lo, hi]
                  * (a loop's values a .. b - 1, hoisted out of it): a >= b or lo <= a and b - 1 <= hi */
    IR_PRINT,    /* [values...]; strings are IR_CONST with str */
    IR_EVAL,     /* [expr] evaluated and dropped */
    IR_LSTORE,   /* local = a local array; [value, idx...] */
    IR_LFILL,    /* local = a local array; [value]: every element (its creation) */
    IR_BARRIER,  /* tack.barrier(): the threads of a blocks loop's block wait for each other (lower_blocks.c) */
    IR_OP_COUNT
} tk_irop;

#define TK_LOAD_IN_BOUNDS 1 /* IR_LOAD's sub */

typedef enum tk_bin {
    B_ADD, B_SUB, B_MUL, B_DIV, B_FLOORDIV, B_MOD, B_POW,
    B_SHL, B_SHR, B_AND, B_OR, B_XOR,
    B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE,
    B_MIN, B_MAX,
    B_MATMUL, B_DOT, B_CROSS,
    B_COUNT
} tk_bin;

/* IR_WARP's operations (the dialect's tk_warp_<name>): [v, lane] the value of lane `lane` (0 <= lane < width)
 * of the thread's group of `width` lanes; [v, d] (d a constant, 0 <= d < 32) that of lane + d, or the
 * thread's own v past its group's end; [c] (an i64 0 or 1) the warp's 32 bits as an i64, whether some lane's
 * is 1, whether every lane's is. */
typedef enum tk_warp { WARP_IDX, WARP_DOWN, WARP_BALLOT, WARP_ANY, WARP_ALL, WARP_COUNT } tk_warp;
/* "idx", "down", "ballot", "any", "all": the name of WARP_* k. */
const char *tk_warp_name(int k);

typedef enum tk_un { U_NEG, U_NOT, U_INVERT, U_ABS, U_TRUTH, U_COUNT } tk_un;

/* IR_MATH's operations, in intrinsics.def's order (TK_MATH, then TK_MATH_OP rows). */
typedef enum tk_math {
#define TK_MATH(id, name, nargs, result, libm_f64, libm_f32, ulps_f32, ulps_f64) id,
#define TK_MATH_OP(id, name) id,
#include "compiler/intrinsics.def"
    M_COUNT
} tk_math;
/* tk_cc.uses_math holds a bit for each scalar function (the TK_MATH rows, before M_LENGTH);
 * the TK_MATH_OP rows after it never set one, so their number is free. */
_Static_assert(M_LENGTH <= 64, "uses_math is a uint64_t: one bit per scalar math function");

/* What a TK_MATH function returns: its float argument type, or bool. */
typedef enum tk_math_result { TK_MR_FLOAT, TK_MR_BOOL } tk_math_result;

/* How lower_call.c lowers a TK_CALL intrinsic. */
typedef enum tk_intrinsic_kind {
    TK_IK_MATH,    /* a TK_MATH row: IR_MATH */
    TK_IK_LOOP,    /* range / ndrange: only as a for loop's iterable */
    TK_IK_PRINT,   /* IR_PRINT */
    TK_IK_LEN,     /* the first extent of an array, or a vector's length */
    TK_IK_CAST,    /* float() int() bool(): sub is the dtype */
    TK_IK_ABS,     /* IR_UN abs, or fabs of a float */
    TK_IK_MINMAX,  /* a select per pair: sub is B_MIN / B_MAX */
    TK_IK_VECBIN,  /* dot / cross: sub is B_DOT / B_CROSS */
    TK_IK_VECMATH, /* length / normalize: sub is M_LENGTH / M_NORMALIZE */
    TK_IK_ATOMIC,  /* IR_ATOMIC: sub is an A_* */
    TK_IK_COMPLEX, /* complex(), conjugate(): complex.c (lw_complex_call) */
    TK_IK_SEED,    /* seed_u64(): a u64 cast whose NaN is a ValueError (checks on) */
    TK_IK_QUAT,    /* quaternions and transforms: quat.c (lw_quat_call); sub is an M_Q* / M_X* */
    TK_IK_LINALG,  /* matrix and vector functions: sub is an M_* row (lower_linalg.c) */
    TK_IK_BARRIER, /* tack.barrier(): IR_BARRIER (lower_blocks.c) */
    TK_IK_ROUND,   /* round(x), round(x, d): lower_numpy.c */
    TK_IK_BLOCKOP  /* tack.block_sum & co: shared scratch and barriers (lower_blocks.c); sub 0 sum, 1 min, 2 max, 3 scan, 4.. the sub-group ops */
} tk_intrinsic_kind;

/* One intrinsic a kernel may call by name (a TK_MATH or TK_CALL row). */
typedef struct tk_intrinsic {
    const char *name;
    tk_intrinsic_kind kind;
    int sub;                /* M_* for TK_IK_MATH; see tk_intrinsic_kind */
    int min_args, max_args; /* max_args -1: any number */
    tk_math_result result;  /* TK_IK_MATH only */
} tk_intrinsic;

/* The intrinsic called `name`, or NULL; tk_intrinsic_at(i) is row i (NULL past the last). */
const tk_intrinsic *tk_intrinsic_find(const char *name);
const tk_intrinsic *tk_intrinsic_at(int i);
/* A TK_MATH function's C library spelling for f32 (else f64) arguments; "" for a TK_MATH_OP. */
const char *tk_math_libm(int m, tack_dtype dt);
/* The prelude's helper for a TK_MATH row without a C library function (tk_lerp_f32,
 * emit/prelude_math.c), for f32 (else f64) arguments; NULL for any other row. */
const char *tk_math_helper(int m, tack_dtype dt);
/* Whether IR_MATH m gives bool (isnan, isinf, isfinite). */
int tk_math_is_predicate(int m);

/* IR_ATOMIC's operations (tack.atomic_<name>; every one gives the element's
 * old value).  A_CAS has two values: its kids are [value, expected, idx...],
 * every other's [value, idx...] (ir_atomic_first).  exch and cas on a float
 * move and compare its bits; and, or and xor take integers only. */
typedef enum tk_atom { A_ADD, A_SUB, A_MIN, A_MAX, A_EXCH, A_AND, A_OR, A_XOR, A_CAS, A_COUNT } tk_atom;

/* "add", "sub" ... "cas": the name of A_* a (tack.atomic_<name>; the dialects' tk_atomic_<name>_<T>). */
const char *tk_atom_name(int a);
/* Whether updates by A_* a commute with others of their own kind (all adds and subs, all mins ...):
 * an exchange or a compare-and-swap leaves whichever came last or first. */
static inline int tk_atom_commutes(int a) { return a != A_EXCH && a != A_CAS; }

/* IR_STORE's sub: a plain store, or the write half of a read-modify-write
 * (verify.c: inside a parallel region only on the iteration's own element). */
typedef enum tk_store_kind { ST_PLAIN, ST_RMW } tk_store_kind;

/* IR_BIN's aux for an i64 + or -: no partial sum can wrap (nests.c proved its terms small), so
 * C's signed arithmetic writes it. */
enum { TK_BIN_NOWRAP = 1 };

/* IR_CONST's aux: a Python int literal (or expression of literals) from 2**63
 * to 2**64 - 1, carried in a u64 constant (lower_pyint.c). */
enum { TK_CONST_PYINT = 1 };

/* IR_PFOR's sub: 0, or tack.independent(...) (no race check), or a blocks loop (lower_blocks.c). */
enum { TK_PFOR_INDEPENDENT = 1, TK_PFOR_BLOCKS = 2 };

/* IR_IF's sub: TK_IF_ROWS, nests.c's `if (an iteration's indices in bounds) { the loop without
 * its checks } else { the loop as written }`, whose test the parallel loop's `ck` implies: where ck
 * holds for every iteration of a chunk, the chunk runs a copy with the checked branch left out
 * (emit_cpu.c, chunk_loop). */
enum { TK_IF_ROWS = 1 };

/* IR_FOR's sub: a loop that polls (where loops poll), or one inside a loop that polls for it. */
enum { TK_FOR_POLLS = 0, TK_FOR_QUIET = 1, TK_FOR_IVDEP = 2 /* quiet, and no iteration depends on another (tile.c) */ };


/* Private histograms per parallel loop (privatize.c), and the chunk's stack they share. */
#define TK_MAX_HIST 4
#define TK_HIST_STACK (256 * 1024)

typedef struct tk_ir tk_ir;
struct tk_ir {
    uint8_t op, sub;
    tk_type ty;
    tk_type aux_ty;        /* BIN compare: operand type */
    int line;
    int local, param, aux;
    int comp;              /* IR_STORE, IR_ATOMIC: 0, the whole element; k + 1, its component k alone
                            * (a vector's, a quaternion's or a transform's; a matrix's row major), written
                            * without touching the others (lower_stmt.c, store_param_part) */
    int *vars;             /* PFOR: aux locals */
    union { int64_t i; uint64_t u; double f; } c;
    const char *str;       /* CONST string (print) */
    tk_ir *red;            /* PFOR: per-chunk sums flushed after the chunk (privatize.c) */
    uint64_t hist;         /* PFOR: bit q: array q's varying-index adds may go to a per-chunk
                            * private copy (privatize.c; C dialect; at most TK_MAX_HIST arrays) */
    tk_ir *off, *hi;       /* PFOR over range(lo, hi): var = index + off (NULL: 0); hi as written */
    tk_ir *bnd;            /* PFOR: [var LOCAL, lo, hi] per axis from lo by 1 whose variable the
                            * body's first statements set to lo + index (ndrange bounds,
                            * lower_loop.c), for checks.c; NULL when none */
    tk_ir *per;            /* PFOR: periodic.c's [flag, interior end, interior start (a constant or a frame local),
                            * the locals assigned from an M_PMOD...]; NULL when none */
    tk_ir *ck;             /* PFOR: the test, of the loop's variable and fixed values, that an iteration runs
                            * the check-free copy of each of its TK_IF_ROWS loops (nests.c); NULL when none */
    int n, cap;
    tk_ir **k;
};

/* A tack.blocks(...) loop (lower_blocks.c): its threads cooperate, so the passes that reorder
 * or split a parallel loop's iterations leave it alone. */
static inline int ir_is_blocks(const tk_ir *s) { return s->op == IR_PFOR && s->sub == TK_PFOR_BLOCKS; }

/* The kid of IR_ATOMIC x that holds its first index. */
static inline int ir_atomic_first(const tk_ir *x) { return x->sub == A_CAS ? 2 : 1; }

/* The form of a CK_INDEX check, in its `local` (checks.c). */
typedef enum tk_index_form {
    CKI_WRAP = 0,    /* [i, n]: -n <= i < n (negative indices allowed) */
    CKI_NONNEG = 1,  /* [i, n]: 0 <= i < n (the index is known not to be negative) */
    CKI_RANGE = 2    /* [lo, hi, n]: a loop's indices lo .. hi - 1, hoisted out of it */
} tk_index_form;

/* ----------------------------------------------------------- functions */
enum { LC_FRAME, LC_PRIVATE, LC_TEMP };

typedef struct tk_local {
    const char *name;
    tk_type ty;
    int scope;             /* -1 kernel scope (frame) or the pfor id that owns it */
    int declared;          /* annotated: ty is fixed */
    int is_param;
    int assigns;           /* assignments in the final IR */
    int read;
    int line;
    int64_t ashape[TACK_MAX_NDIM]; /* a local array (ty.kind TY_ARRAY): its constant extents */
    int shared;            /* a local array of a blocks loop made by tack.shared: one per block (lower_blocks.c) */
    const char *shown;     /* what messages call it, when a rewrite made it (a struct field: "b[i].xf"), else NULL */
} tk_local;

/* The number of elements of local array l (its extents' product); these two are ir.c's. */
int64_t tk_local_elems(const tk_local *l);
/* The C type of local array l's elements with value type `ctype`: a float16
 * or bfloat16 array holds its elements' bits ("uint16_t", as every dialect
 * stores f16 and bf16 array parameters), read through tk_h2f (tk_b2f) and
 * written through tk_f2h (tk_f2b). */
const char *tk_local_elem_type(const tk_local *l, const char *ctype);

/* An and/or operand k (1..n-1 of `a and b and c`) or a conditional expression
 * (k = 0) at the AST node's line and column: the type its value has (the
 * promoted type of its operands), read from `local` (a temporary, -1: none)
 * when there is one, since later passes may narrow it.  ir_dump.c prints them
 * for debug mode (python/tack/_debug.py), which cannot know the type of an
 * operand Python's short circuit never evaluates. */
typedef struct tk_choice {
    int line, col, k, local;
    tk_type ty;
} tk_choice;

typedef struct tk_spec {
    int func;
    int nparams;
    tk_type *ptypes;
    const char **pnames;
    int *plocal;           /* scalar param -> local index */
    int64_t *plo, *phi;    /* a Python int param: the range of the fixed-width types it meets */
    int *pdt;              /* ... and the type that set it (TACK_DTYPE_COUNT: none) */
    tk_type ret;           /* TY_TUPLE: the element types are rets[0 .. nret) */
    int nret;
    tk_type *rets;
    tk_ir *body;
    tk_local *locals;
    int nlocals, caplocals;
    uint64_t written;      /* bit i: param i (an array) is written */
    uint64_t plarr;        /* bit i: array param i receives a caller's local array (private
                            * storage, no race with other iterations); part of the key */
    int nbase;             /* locals before temps (params + named locals) */
    int state;             /* 0 new, 1 lowering, 2 done */
    int npfor;
    int emitted;
    /* A @tack.func lowered for a call inside a parallel loop (directly or
     * through other functions): its compound assignments to elements follow
     * the parallel loop's rule (lower_stmt.c).  par_own[d] is the parameter
     * that receives the loop's variable d unchanged (-1: none), so an element
     * it indexes is the iteration's own; part of the specialization's key. */
    int par, npar_own;
    int par_own[TACK_MAX_NDIM];
    tk_choice *choices;    /* and/or and conditional expressions: their types (lower.c, lw_choice) */
    int nchoices, capchoices;
} tk_spec;

typedef struct tk_dialect tk_dialect;
typedef struct tk_target tk_target; /* target.h */

/* A warning of the compile (depend.c's possible races), handed to the program. */
typedef struct tk_warning {
    int line;
    const char *file;
    const char *message;
} tk_warning;

/* The compile context, one per tack_compile. */
/* check_races (race_watch.c): a parallel loop the run-time race detector
 * watches, and an access of it that records itself. */
typedef struct tk_rcloop {
    const tk_ir *pf;
    int func;
    const char *vars[TACK_MAX_NDIM];   /* the names of its variables */
    const tk_ir *lo[TACK_MAX_NDIM];    /* variable d is lo[d] + index * step[d] (NULL: 0 and 1) */
    const tk_ir *step[TACK_MAX_NDIM];
    signed char *width;                /* per parameter: shadow words per element (0, 3 or 5) */
} tk_rcloop;

typedef struct tk_rcsite {
    const tk_ir *node;                 /* the IR_LOAD, IR_STORE or IR_ATOMIC */
    int loop, param, kind, func, line; /* kind: 0 read, 1 write, 2 atomic update */
    int spec;                          /* loop -1: an access in @tack.func specs[spec], whose param
                                        * is the function's (the caller's array comes at run time) */
    const char *text;
} tk_rcsite;

typedef struct tk_cc {
    tk_arena arena;
    jmp_buf jmp;
    tack_module *m;
    tack_compile_options opts;
    const tack_argtype *args; /* the kernel's signature */
    int nargs;
    tk_spec **specs;
    int nspecs, capspecs;
    tk_site *sites;
    int nsites, capsites;
    const tk_target *target;   /* what the target can do (target.h) */
    const tk_dialect *dialect; /* how it is spelled: target->dialect */
    /* error location */
    const char *err_file;
    int err_line, err_col;
    int uses_vec, uses_f16, uses_print, uses_atomic;
    int uses_bf16;         /* the prelude's bfloat16 helpers (tk_b2f, tk_f2b, tk_d2b) */
    uint64_t atomic_dts;   /* bit dt: an atomic updates a dt element (lower_call.c), so the dialect writes
                            * its helpers (OpenCL's 64-bit ones only where used) */
    int uses_complex;      /* emit_complex.c's helpers go into the prelude */
    int uses_gemm;         /* bit 0 f32, bit 1 f64: gemm.c's kernel goes into the prelude */
    int uses_quat;         /* emit_quat.c's helpers go into the prelude (with the vectors') */
    uint64_t uses_math;    /* bit m: an IR_MATH m is called (prelude_math.c writes the helpers used) */
    uint32_t uses_linalg;  /* bit m - M_TRANSPOSE: a matrix function is called (prelude_linalg.c) */
    uint64_t weak_f32;     /* bit p: weak param p is carried as f32 (complex64 for a complex; weak_float.c) */
    uint64_t *alias_same;  /* per kernel array param p, bit q: the result is wrong if p and q are one
                            * array (a parallel loop writes one and reads the other elsewhere than
                            * the iteration's own element; depend_judge.c); NULL when none */
    uint64_t *alias_part;  /* ... bit q: wrong if p and q share memory without being one array */
    int warp_shuffles;     /* config warp_shuffles: sub-group operations as warp exchanges where the target
                            * has them (target.h's warp32_shuffles; 0: the scratch form, for comparing) */
    int racy_rmw;          /* TACK_DEBUG_RACY_RMW=1: lower a[i] op= v in parallel code as a plain
                            * read and write (to show that verify.c catches the race) */
    tk_warning *warns;        /* what the compile warns of (tk_warn) */
    int nwarns, capwarns;
    int nwarn_calls;          /* tk_warn calls, repeats included (depend.c: did this loop warn?) */
    tk_rcloop *rcloops;       /* check_races: the loops instrumented (race_watch.c) */
    int nrcloops, caprcloops;
    tk_rcsite *rcsites;
    int nrcsites, caprcsites;
    char *rcspec;             /* per spec: 1 when a watched loop calls it with an array (its watched copy) */
} tk_cc;

/* Raise a compile error at line/col (longjmp to the driver). */
_Noreturn void tk_error(tk_cc *C, int func, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
_Noreturn void tk_oom(tk_cc *C);
/* Raise TACK_ERR_UNSUPPORTED (NotImplementedError): what this dialect cannot do, at line. */
_Noreturn void tk_unsupported(tk_cc *C, int func, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Record a warning at line of function func (the same text at the same place once). */
void tk_warn(tk_cc *C, int func, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Forget the last compile error's location (tack_compile_error_location), at a compile's start. */
void tk_error_location_clear(void);

/* IR construction (arena) */
tk_ir *ir_new(tk_cc *C, int op, tk_type ty, int line);
/* A new local of specialization S (zeroed flags); its index. */
int tk_new_local(tk_cc *C, tk_spec *S, const char *name, tk_type ty, int scope);
void ir_push(tk_cc *C, tk_ir *parent, tk_ir *kid);
tk_ir *ir_const_i(tk_cc *C, tk_type ty, int64_t v, int line);
tk_ir *ir_const_f(tk_cc *C, tk_type ty, double v, int line);
int ir_is_const(const tk_ir *e);
int ir_is_simple(const tk_ir *e);   /* a local or a constant: cheap to repeat */
/* Builders and helpers the loop passes (checks, nests, tile, strength) share. */
const tk_ir *ir_strip(const tk_ir *e);          /* looks through casts that change nothing */
tk_ir *ir_clone(tk_cc *C, const tk_ir *e);      /* a deep copy */
tk_ir *ir_as_i64(tk_cc *C, tk_ir *x);           /* x cast to i64 unless it is one */
tk_ir *ir_i64(tk_cc *C, int64_t v, int line);    /* an i64 constant */
tk_ir *ir_block(tk_cc *C, int line);             /* an empty block */
tk_ir *ir_local_of(tk_cc *C, const tk_spec *S, int l, int line); /* a read of local l */
tk_ir *ir_for(tk_cc *C, int v, tk_ir *lo, tk_ir *hi, int64_t step, tk_ir *body, int sub); /* for v in range(lo, hi, step) */
tk_ir *ir_i64_bin(tk_cc *C, int sub, tk_ir *a, tk_ir *b); /* i64 arithmetic, or a comparison of i64s */
tk_ir *ir_and(tk_cc *C, tk_ir *a, tk_ir *b);    /* a and b; b alone when a is NULL */
tk_ir *ir_assign(tk_cc *C, int local, tk_ir *v);
int ir_mentions(const tk_ir *e, int local);      /* e reads local somewhere */
int ir_assignments(const tk_ir *s, int local);   /* assignments and loops of s that set local */
int ir_same(const tk_ir *a, const tk_ir *b);     /* the same pure expression (loads, locals, arithmetic) */

/* passes */
tk_spec *tk_lower_kernel(tk_cc *C, int kernel, const tack_argtype *args, int nargs);
void tk_verify(tk_cc *C, const char *after);
void tk_fold(tk_cc *C);
tk_ir *tk_fold_expr(tk_cc *C, tk_ir *e); /* one expression's constants folded */
void tk_checks(tk_cc *C);
void tk_nests(tk_cc *C);     /* per-row versioning of checks, loop interchange (C dialect) */
/* nests.c for tile.c: loop f's copy without the index checks that `*cond` (NULL: none) shows
 * cannot fail. */
tk_ir *tk_nests_fast(tk_cc *C, tk_ir *f, tk_ir **cond);
/* tile.c: a parallel loop whose rows are a matrix product's, in tiled panels (1), or left (0) */
int tk_tile(tk_cc *C, tk_spec *S, tk_ir *pf);
/* jam.c: a parallel loop whose iterations are serial sums, in panels of iterations run side by side
 * (1), or left (0) */
int tk_jam(tk_cc *C, tk_spec *S, tk_ir *pf);
/* tile.c for gemm.c: `a[.., i, ..] += v` on row i's own element as the store privatize.c makes */
void tk_tile_own_rows(tk_cc *C, int iv, tk_ir *s);
/* tile.c, shared with gemm.c: reading a row body and running a parallel loop's rows in panels */
int tk_rows_pure(const tk_ir *e);       /* no calls, atomics or local arrays */
int tk_rows_unit_for(const tk_ir *s);   /* a loop of step 1 (s may be NULL) */
/* block b's statements, flattened into out[n..], leaving out empty tests and (skip_checks) checks;
 * the count, at most max (max + 1: more) */
int tk_rows_stmts(const tk_ir *b, tk_ir **out, int n, int max, int skip_checks);
/* a store as it is, `a[idx] += v` (or -=) as the store a[idx] = a[idx] + v; NULL otherwise */
tk_ir *tk_rows_as_store(tk_cc *C, const tk_ir *s);
/* parallel loop pf's rows [i0, i1): nests.c's check-free copy, the test that it may run in *cond */
tk_ir *tk_rows_copy(tk_cc *C, tk_spec *S, const tk_ir *pf, int i0, int i1, tk_ir **cond);
/* cond and klo < khi and jlo < jhi */
tk_ir *tk_rows_run(tk_cc *C, tk_ir *cond, const tk_ir *klo, const tk_ir *khi, const tk_ir *jlo, const tk_ir *jhi);
/* cond and array c disjoint from each of reads[0..n) */
tk_ir *tk_rows_disjoint(tk_cc *C, tk_ir *cond, int c, const int *reads, int n, int line);
/* pf as a loop over panels of p rows (variable ib): i0, i1 set, extra (or NULL), then `if (cond) then`
 * else the panel's rows as written */
void tk_rows_panels(tk_cc *C, tk_spec *S, tk_ir *pf, int ib, int i0, int i1, int64_t p, tk_ir *extra, tk_ir *cond,
                    tk_ir *then);
/* gemm.c: a parallel loop whose rows hold a matrix product, as calls of a packed kernel (1), or left (0);
 * with wrap, *wrap may be set to a block that packs B before the loop and frees it after, to take the
 * loop's place in its block */
int tk_gemm(tk_cc *C, tk_spec *S, tk_ir *pf, tk_ir **wrap);
/* gemm.c for the C dialect's prelude: the kernels used (tk_cc.uses_gemm) */
void tk_gemm_prelude(const tk_cc *C, tk_buf *b);
void tk_periodic(tk_cc *C);  /* periodic indices: (i + c) % n (C dialect) */
/* periodic.c for emit_cpu.c: swap the index checks and wraps of loop s's
 * remainders for nothing (the periodic version), and back. */
typedef struct tk_periodic_undo {
    tk_ir ***slot;
    tk_ir **old;
    int n, cap;
} tk_periodic_undo;
void tk_periodic_hide(tk_cc *C, tk_ir *s, tk_periodic_undo *u);
void tk_periodic_show(tk_periodic_undo *u);
void tk_strength(tk_cc *C);
void tk_counted(tk_cc *C);  /* `while i < n: ...; i += 1` as a counted loop (counted.c) */
void tk_unroll(tk_cc *C);   /* short loops of constant bounds in parallel loops as copies (unroll.c) */
void tk_speculate(tk_cc *C); /* a branch's value computed before it, when that cannot fail (speculate.c) */
/* Run pass on every parallel loop under block b, skipping blocks loops (nothing moves across a
 * block's barriers); what it puts in `pre` goes right before the loop (strength.c). */
typedef void (*tk_loop_pass)(tk_cc *C, tk_spec *K, tk_ir *loop, tk_ir *pre);
void tk_each_pfor(tk_cc *C, tk_spec *K, tk_ir *b, tk_loop_pass pass);
void tk_privatize(tk_cc *C);
void tk_weak_float(tk_cc *C, tk_spec *K);   /* a Python float that only meets f32 is an f32 */
void tk_weak_locals(tk_cc *C);   /* a local of Python floats that only meets f32 is f32 (weak_locals.c) */
void tk_check_frames(tk_cc *C, tk_spec *K); /* the local arrays of one iteration fit a stack (frames.c) */
/* may_fail.c: per specialization (C->specs), 1 where a call to it can fail (a check, a poll,
 * or a call that can), so that its callers test the failure flag after it */
const char *tk_may_fail(tk_cc *C);
/* A float scalar parameter that a grid dialect receives as f32 bits (an f16 or f32
 * argument, or a weak float narrowed by weak_float.c); others as a double's (ir.c). */
int tk_param_f32(const tk_cc *C, int p);
void tk_depend(tk_cc *C, tk_spec *K);      /* the race check (depend.c) */
/* race_watch.c: the run-time race detector's prelude (C dialect, check_races), and
 * its tables copied into the program (non-zero when out of memory). */
void tk_race_prelude(tk_cc *C, tk_buf *b);
int tk_race_tables(tk_cc *C, tack_program *p);
/* race_watch.c: the watched loops and accesses at the end of the IR dump (none: nothing). */
void tk_race_dump(tk_cc *C, tk_buf *b);
/* Move checks of `kind` whose operands do not change in a loop out of it (checks.c). */
void tk_hoist_invariant_checks(tk_cc *C, int kind);
int ir_invariant(const tk_ir *e, const tk_ir *loop);   /* e is the same in every iteration of loop (ir.c) */
int ir_pfor_one(const tk_ir *s);                       /* parallel loop s has at most one iteration (ir.c) */
const char *tk_dump(tk_cc *C);
const char *tk_emit(tk_cc *C);

/* walking helpers */
int ir_assigns_local(const tk_ir *s, int local);   /* s (a tree) assigns local */
int ir_has_jump(const tk_ir *s);                   /* break/continue/return inside s, not in inner loops' own scope */

const char *tk_bin_name(int b);
const char *tk_un_name(int u);
const char *tk_math_name(int m);

/* ---------------------------------------------------------------- emit */
typedef struct tk_emitter tk_emitter;
struct tk_dialect {
    /* The whole preamble (types, helpers). */
    void (*prelude)(tk_cc *C, tk_buf *b);
    /* C type of a value dtype. */
    const char *(*ctype)(tack_dtype dt);
    /* Storage type of an array element (f16 -> uint16_t, bool -> uint8_t). */
    const char *(*storage_type)(tack_dtype dt);
    /* Name of a math function for a float type ("__builtin_sqrtf"). */
    const char *(*math)(int m, tack_dtype dt);
    /* Qualifier of exported symbols. */
    const char *export_attr;
    /* How a function declares the error record it is handed (NULL: "tk_ctx *ctx"). */
    const char *ctx_param;
    /* What a failed check calls with (ctx, site, a, b) (NULL: "abi->fail"). */
    const char *fail_fn;
    /* The widest float the device has, which float-to-int conversions go
     * through (NULL: "double"). */
    const char *wide_float;
    /* Write print(...) statement `s` (NULL: tk_pv records for abi->print). */
    void (*print)(tk_emitter *e, tk_ir *s);
    /* Qualifiers of @tack.func specializations (NULL: "static"). */
    const char *func_qual;
    /* Vector and matrix values as C++ `T{{...}}` rather than C compound literals. */
    int cxx_literals;
    /* `long` is 64 bits and `long long` may not exist (MSL): 64-bit integer
     * constants take the L suffix, not LL. */
    int long_is_64;
    /* Float constants in decimal (9 significant digits: exact for f32), not
     * C99/C++17 hexadecimal (MSL is C++14). */
    int decimal_floats;
    /* The address space of a pointer to a function's own memory -- the abi
     * record, a local array handed to a @tack.func -- with its trailing space
     * (MSL's "thread "; NULL: none, a plain pointer). */
    const char *thread_ptr;
    /* Spellings of NaN and infinity: f32 NaN, f64 NaN, f32 inf, f64 inf (NULL: GCC builtins). */
    const char *const *float_specials;
    /* Declarations the kernel's layout needs ahead of the functions, written
     * after the prelude (NULL: none; the CPU's: the frame struct). */
    void (*kernel_decls)(tk_emitter *e, tk_buf *out);
    /* Blocks (lower_blocks.c) on a grid: a barrier of the block's threads, as a
     * statement, and the qualifier of an array in the block's shared memory,
     * with its trailing space (NULL: the CPU's layout, cpu/emit_blocks.c). */
    const char *barrier, *shared_qual;
    /* Lay out the kernel itself after the prelude and the functions (required:
     * the CPU's in emit_cpu.c -- a frame, parallel bodies, one exported entry;
     * CUDA's in dialect_cuda.c -- phases on a grid). */
    void (*kernel)(tk_emitter *e, tk_buf *out);
};
extern const tk_dialect tk_dialect_cuda;
extern const tk_dialect tk_dialect_opencl;
extern const tk_dialect tk_dialect_hip;
extern const tk_dialect tk_dialect_msl;

/* What the code being written is, which decides how a failed check or a
 * `return` leaves it. */
typedef enum tk_emit_fn {
    TK_FN_ENTRY,     /* the kernel's entry (a GPU phase): `return;` */
    TK_FN_PARALLEL,  /* a parallel loop's body: `return;` */
    TK_FN_DEVICE     /* a @tack.func specialization: `return tk_zero;` when it returns a value */
} tk_emit_fn;

/* emit.c's services for a dialect's kernel hook.  The emitter writes into the
 * buffer set by tk_emitter_target; `fn` is what is being written there. */
tk_cc *tk_emitter_cc(tk_emitter *e);
/* The qualifier a kernel's array parameter p may carry ("" or `restrict`,
 * spelled by the dialect): restrict only when the call proved its memory
 * overlaps no other array argument's (tack_argtype.distinct). */
const char *tk_emitter_restrict(tk_emitter *e, int p, const char *restrict_kw);
tk_spec *tk_emitter_kernel(tk_emitter *e);
tk_buf *tk_emitter_target(tk_emitter *e, tk_buf *b, tk_emit_fn fn);
void tk_emitter_printf(tk_emitter *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Write the indentation of a new line; change the indentation by `delta` levels. */
void tk_emitter_indent(tk_emitter *e);
void tk_emitter_nest(tk_emitter *e, int delta);
void tk_emitter_expr(tk_emitter *e, tk_ir *x);
void tk_emitter_stmt(tk_emitter *e, tk_ir *s);
void tk_emitter_local(tk_emitter *e, int local);
/* Declare (zero-initialized) the value locals of one scope: -1 frame, else a
 * parallel loop's id; with `mask` (indexed by local), only those it marks
 * (in 1) or does not mark (in 0). */
void tk_emitter_declare_locals(tk_emitter *e, int scope, const char *mask, int in);
/* A copy of a loop body among several in one trip (layout_grid.c's unrolled
 * loop): the kernel's locals of `scope` not marked in `keep` are named with
 * `suffix` after their names (NULL: no copy, the names as they are). */
void tk_emitter_lane(tk_emitter *e, const char *suffix, int scope, const char *keep);
/* A blocks loop's body (lower_blocks.c) written on a grid: with body non-NULL, a failed check in
 * it sets the thread's flag and the thread goes on, its unsafe statements skipped (emit_stmt.c),
 * so every thread of the block reaches every barrier -- a return there makes PoCL's work-group
 * compiler take the conditions around it for uniform ones, and a jump over assignments a loop of
 * barriers reads made it give wrong values; NULL: back to returning. */
void tk_emitter_blocks_body(tk_emitter *e, const tk_ir *body);
extern const tk_dialect tk_dialect_c;
/* emit_cpu.c: the "c" dialect's kernel layout (its kernel_decls and kernel hooks). */
TK_HIDDEN void tk_cpu_frame(tk_emitter *e, tk_buf *out);
TK_HIDDEN void tk_cpu_kernel(tk_emitter *e, tk_buf *out);
/* emit_complex.c: the complex helpers of a prelude (qual: the dialect's function qualifier,
 * global: an atomic pointer's address space, with_f64: complex128 too). */
void tk_complex_prelude(tk_cc *C, tk_buf *b, const char *qual, const char *global, int with_f64);
/* prelude_atomic_vec.c: tk_atomic_<op>_<type> of the vector and matrix types an atomic updates
 * (atomic_dts), a component at a time, after the vector types and the scalar atomics; qual and
 * global as tk_complex_prelude's, with_f64: the f64 types too. */
void tk_vec_atomic_prelude(tk_cc *C, tk_buf *b, const char *qual, const char *global, int with_f64);
/* emit_quat.c: the quaternion and transform helpers of a prelude (uses_quat), after the vectors';
 * with_f64: quatd and transformd too. */
void tk_quat_prelude(tk_cc *C, tk_buf *b, const char *qual, int with_f64);
/* prelude.c: the Python-semantics helpers of a prelude (tk_f2i64, tk_fdiv_i64,
 * tk_shl32, tk_ipow_i64, tk_pyfdiv_f32, tk_trip, ...) as a dialect spells them. */
enum { TK_PRELUDE_F64_NONE, TK_PRELUDE_F64_ALWAYS, TK_PRELUDE_F64_IFDEF };
typedef struct tk_prelude_style {
    const char *qual;                          /* each function's: "static inline", "TK_D", "static" */
    const char *wide;                          /* the float tk_f2i64 and tk_f2u64 take */
    const char *wide_cast, *wide_suffix;       /* around a literal of it: "(tk_wide)", "f" (NULL: none) */
    const char *int_suffix;                    /* of the hex 64-bit limits; NULL: INT64_MAX, INT64_MIN, UINT64_MAX */
    const char *(*math)(int m, tack_dtype dt); /* the dialect's names of fmod, floor, copysign */
    int f64;                                   /* TK_PRELUDE_F64_*: float64 helpers never, always, under TK_FP64 */
    const char *after_div;                     /* the dialect's own helpers after the integer division ones */
    const char *shifts_note, *f32_note;        /* comments before the shifts (NULL: prelude.c's) and the
                                                * float32 helpers (NULL: none) */
} tk_prelude_style;
void tk_prelude_helpers(tk_buf *b, const tk_prelude_style *s);
/* The math rows' helpers the kernel calls: Tack's own functions and those the dialect lacks
 * (prelude_math.c); after the dialect's math names are usable. */
void tk_prelude_math(const tk_cc *C, tk_buf *b, const tk_prelude_style *s);
/* The matrix functions' helpers the kernel calls (prelude_linalg.c); after the vector prelude. */
void tk_prelude_linalg(const tk_cc *C, tk_buf *b, const tk_prelude_style *s);

#endif /* TACK_COMPILER_H */
