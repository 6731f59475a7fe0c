/*
 * tack_kernel.h -- building, compiling and launching kernels from C.
 *
 * A front end (the Python extension, or a C program) describes a kernel as a
 * tree of tack_node values inside a tack_module: one node per statement or
 * expression, each with its source line and column.  The tree mirrors the
 * part of Python's `ast` that the kernel language accepts, with every free
 * name already resolved by the front end:
 *
 *   - int/float/bool globals arrive as TACK_N_CONST_* nodes;
 *   - builtins, `math.*` and `tack.*` functions arrive as TACK_N_CALL nodes
 *     whose `name` is the intrinsic's bare name ("sqrt", "range", "vec3",
 *     "atomic_add", "f64", ...) and whose `ival` is -1;
 *   - calls of @tack.func functions arrive as TACK_N_CALL nodes whose `ival`
 *     is the callee's function index in the module (name = its name);
 *   - a dtype used as a value or annotation (tack.f32) is TACK_N_TYPE with
 *     ival = the tack_dtype.
 *
 * Lines are lines of the file; columns are 0-based (Python's col_offset)
 * and reported 1-based in errors.  Layout of children per kind is
 * documented on the enumerators below.
 * Nodes are allocated in the module's arena and freed with the module.
 *
 * tack_compile() takes a module, the index of the kernel and one argument
 * signature, and runs the pipeline: type inference, lowering to typed IR,
 * passes, emission for a target dialect.  tack_program_build() turns the
 * source into loaded code for a device (CPU: the platform C compiler and
 * the disk cache), and tack_launch() runs it.
 */
#ifndef TACK_KERNEL_H
#define TACK_KERNEL_H

#include "tack.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tack_module tack_module;
typedef struct tack_node tack_node;

typedef enum tack_node_kind {
    /* ---- statements ---- */
    TACK_N_BLOCK,      /* children: statements in order */
    TACK_N_ASSIGN,     /* [target, value]; target NAME, SUBSCRIPT or TUPLE (unpacking);
                          a chained a = b = v is several ASSIGNs of a temp-free value */
    TACK_N_ANNASSIGN,  /* [target NAME, annotation TYPE, value or absent] */
    TACK_N_AUGASSIGN,  /* op; [target NAME or SUBSCRIPT, value] */
    TACK_N_IF,         /* [test, body BLOCK, orelse BLOCK] (elif = IF inside orelse) */
    TACK_N_FOR,        /* [target NAME or TUPLE, iter CALL(range|ndrange), body BLOCK] */
    TACK_N_WHILE,      /* [test, body BLOCK] */
    TACK_N_BREAK,
    TACK_N_CONTINUE,
    TACK_N_PASS,
    TACK_N_RETURN,     /* [value] or [] */
    TACK_N_ASSERT,     /* [test] or [test, message CONST_STR] */
    TACK_N_EXPR,       /* [expression] evaluated for its effect (print, atomics, calls) */
    /* ---- expressions ---- */
    TACK_N_NAME,       /* name: a parameter or local */
    TACK_N_CONST_INT,  /* ival (a Python int that fits in 64 bits; uval for > INT64_MAX) */
    TACK_N_CONST_FLOAT,/* fval */
    TACK_N_CONST_BOOL, /* ival 0 or 1 */
    TACK_N_CONST_STR,  /* name = the string (print and assert messages only) */
    TACK_N_TYPE,       /* ival = tack_dtype */
    TACK_N_BINOP,      /* op; [left, right] */
    TACK_N_UNARYOP,    /* op (TACK_OP_NEG, TACK_OP_POS, TACK_OP_NOT, TACK_OP_INVERT); [operand] */
    TACK_N_BOOLOP,     /* op (TACK_OP_AND, TACK_OP_OR); [values...] (2 or more) */
    TACK_N_COMPARE,    /* [left, right1, right2, ...]; ops added in order with tack_node_add_op */
    TACK_N_IFEXP,      /* [test, body, orelse] */
    TACK_N_CALL,       /* name, ival (-1 intrinsic or function index), fval 1 for a math-module
                          function (math.sqrt: scalars only); [args...] */
    TACK_N_ATTRIBUTE,  /* name = attribute; [value]  (a.shape, a.ndim, v.x) */
    TACK_N_SUBSCRIPT,  /* [value, index1, index2, ...]  (a[i, j] has two indices) */
    TACK_N_TUPLE,      /* [elements...] */
    TACK_N_KIND_COUNT
} tack_node_kind;

typedef enum tack_op {
    TACK_OP_NONE = 0,
    /* binary */
    TACK_OP_ADD, TACK_OP_SUB, TACK_OP_MUL, TACK_OP_DIV, TACK_OP_FLOORDIV, TACK_OP_MOD,
    TACK_OP_POW, TACK_OP_MATMUL, TACK_OP_LSHIFT, TACK_OP_RSHIFT, TACK_OP_BITAND,
    TACK_OP_BITOR, TACK_OP_BITXOR,
    /* unary */
    TACK_OP_NEG, TACK_OP_POS, TACK_OP_NOT, TACK_OP_INVERT,
    /* boolean */
    TACK_OP_AND, TACK_OP_OR,
    /* comparison */
    TACK_OP_EQ, TACK_OP_NE, TACK_OP_LT, TACK_OP_LE, TACK_OP_GT, TACK_OP_GE,
    TACK_OP_COUNT
} tack_op;

/* ------------------------------------------------------------- modules */
/* A new, empty module (its own arena); free it with tack_module_free. */
TACK_API tack_status tack_module_new(tack_module **out);
/* Free a module, its functions and nodes (NULL: nothing). */
TACK_API void tack_module_free(tack_module *m);

typedef enum tack_function_kind { TACK_FUNC_KERNEL = 0, TACK_FUNC_DEVICE = 1 } tack_function_kind;

/* Declare a function; returns its index (>= 0) or -1 with the error set.
 * `source` is the function's source text (for error carets) whose first line
 * is line `first_line` of `filename`. */
TACK_API int tack_module_add_function(tack_module *m, tack_function_kind kind, const char *name,
                                      const char *filename, int first_line, const char *source);
/* annotation: NULL or a TACK_N_TYPE node. */
TACK_API tack_status tack_function_add_param(tack_module *m, int func, const char *name,
                                             tack_node *annotation);
/* Set the function's body: a TACK_N_BLOCK node of its statements. */
TACK_API tack_status tack_function_set_body(tack_module *m, int func, tack_node *body);
/* Set the return annotation (TYPE node) of a device function. */
TACK_API tack_status tack_function_set_returns(tack_module *m, int func, tack_node *annotation);
/* How many functions the module declares. */
TACK_API int tack_module_function_count(const tack_module *m);

/* ---------------------------------------------------------------- nodes */
/* NULL on allocation failure (the error is set). */
TACK_API tack_node *tack_node_new(tack_module *m, tack_node_kind kind, int line, int col);
/* Append `child` to `n`'s children (their layout per kind is on the tack_node_kind enumerators). */
TACK_API tack_status tack_node_add_child(tack_module *m, tack_node *n, tack_node *child);
/* Set a node's name (a variable, attribute, parameter or intrinsic), copied into the module. */
TACK_API tack_status tack_node_set_name(tack_module *m, tack_node *n, const char *name);
/* Set an integer constant's value (and the int payload other kinds use, such as a dtype's id). */
TACK_API void tack_node_set_int(tack_node *n, int64_t v);
TACK_API void tack_node_set_uint(tack_node *n, uint64_t v);   /* for ints above INT64_MAX */
/* Set a float constant's value. */
TACK_API void tack_node_set_float(tack_node *n, double v);
/* Set the operator of an operator, comparison or augmented-assignment node. */
TACK_API void tack_node_set_op(tack_node *n, tack_op op);
/* Comparison operators, one per comparator, in order. */
TACK_API tack_status tack_node_add_op(tack_module *m, tack_node *n, tack_op op);

/* ----------------------------------------------------------- signatures */
/* One argument of a call, as seen by type inference. */
typedef struct tack_argtype {
    int is_array;     /* 1: array argument (dtype, ndim, writable) */
    tack_dtype dtype; /* array element type or scalar type */
    int ndim;
    int writable;
    int weak;         /* scalar from a Python int/float/bool: takes the other operand's type
                         (dtype is then TACK_I64, TACK_F64 or TACK_BOOL; TACK_U64 for a
                         Python int in [2**63, 2**64), carried in scalar.u and accepted at
                         launch only where every use converts it to u64) */
    int distinct;     /* array: its memory overlaps no other array argument's, so the GPU
                         dialects declare it restrict; 0 (unknown) is always safe.  A program
                         compiled with it refuses a launch whose arrays overlap. */
    int strided;      /* array: a strided view (tack_array_strides is not NULL): the kernel
                         indexes it with its strides, passed at launch, on every target;
                         0 keeps C order's code.  A strided build also takes C-order arrays. */
} tack_argtype;

/* The value of one argument at launch. */
typedef struct tack_arg {
    tack_array *array;     /* for array arguments */
    union {
        int64_t i;         /* integer and bool scalars (bool: 0/1) */
        uint64_t u;
        double f;          /* float scalars (also f32, stored as double) */
        double z[2];       /* complex scalars: (re, im), complex64's parts stored as doubles too */
    } scalar;
} tack_arg;

typedef struct tack_compile_options {
    int checks;            /* bounds / zero-division / assert checks (default 1) */
    int fast_math;         /* default 0 */
    int optimize;          /* run the optimizing passes (default 1) */
    const char *target;    /* a compile target (tack_compile_target lists them): "c" (default) */
    int default_float;     /* TACK_F32 (default) or TACK_F64: the type of a float that meets no
                              float type (docs/language.md, "Types of operations") */
    int flush_denormals;   /* subnormal floats flush to zero while the kernel runs (default 0):
                              CPU threads set FTZ/DAZ (x86-64) or FPCR.FZ (aarch64) around it;
                              GPU builds get their compiler's flush option */
    int check_races;       /* instrument the parallel loops the race check could not prove
                              race-free with the run-time race detector (default 0; the CPU's
                              target only: a GPU target is a compile error) */
} tack_compile_options;

/* Fill `o` with the default options (each field says its default above). */
TACK_API void tack_compile_options_init(tack_compile_options *o);

typedef struct tack_program tack_program;

/* Type, lower, optimize and emit kernel `kernel` of `m` for one signature.
 * On a compile error returns TACK_ERR_COMPILE with the message set and the
 * location available from tack_compile_error_location(). */
TACK_API tack_status tack_compile(tack_module *m, int kernel, const tack_argtype *args, int nargs,
                                  const tack_compile_options *opts, tack_program **out);
/* The names a kernel may call as intrinsics, besides the dtype names (casts):
 * name i, or NULL past the last.  The Python package checks its registry
 * against them. */
TACK_API const char *tack_intrinsic_name(int i);
/* Row i of the same table: its name (NULL past the last), and, where the
 * pointers are not NULL, its kind as a word ("math" for a C library math
 * function; "loop", "print", "len", "cast", "abs", "minmax", "vecbin",
 * "vecmath", "atomic", "complex", "seed" for the others) and the number of
 * arguments it takes (*max_args -1: any number).  The Python package builds
 * its intrinsic functions (tack.sqrt, ...) from these rows. */
TACK_API const char *tack_intrinsic_info(int i, const char **kind, int *min_args, int *max_args);
/* The compile targets (tack_compile_options.target), from the compiler's one table of them:
 * target i's name ("c", the CPU's, first), or NULL past the last. */
TACK_API const char *tack_compile_target(int i);
/* Location of the last compile error on this thread (line/col 1-based, 0 if unknown). */
TACK_API void tack_compile_error_location(const char **filename, int *line, int *col);

TACK_API const char *tack_program_source(const tack_program *p); /* emitted source */
TACK_API const char *tack_program_ir(const tack_program *p);     /* textual IR dump */
/* Warning i of the compile (a possible race in a parallel loop), with its
 * file and line; NULL past the last. */
TACK_API const char *tack_program_warning(const tack_program *p, int i, const char **file, int *line);
/* Parameter i of the kernel is written by it (so must be a writable array). */
TACK_API int tack_program_param_written(const tack_program *p, int i);
/* Parameter i as a Python int: the range [*lo, *hi] a call's argument must lie in (the
 * types it meets in the kernel), and in *narrow the type that sets it; returns 0 and sets
 * nothing for an array or a parameter with no limit.  A Python int from 2**63 to 2**64 - 1
 * (a weak u64 parameter) is accepted only where *lo == *hi == 0; *narrow names the type
 * that refuses it otherwise.  Debug mode (jit=False) checks its arguments by these,
 * as tack_launch does. */
TACK_API int tack_program_param_range(const tack_program *p, int i, int64_t *lo, int64_t *hi, tack_dtype *narrow);
/* Array parameter i's pairs that a parallel loop would race through (bit j: parameter j, j > i):
 * in *same, if the two arguments were one array; in *part, if they shared memory without being
 * one.  tack_launch refuses a call that passes such a pair; debug mode (jit=False) checks its
 * arguments by these, as it does.  Returns 0 and sets nothing for a parameter that is not an array. */
TACK_API int tack_program_param_aliases(const tack_program *p, int i, uint64_t *same, uint64_t *part);

/* Build and load the program for `dev` (CPU: C compiler + disk cache). */
TACK_API tack_status tack_program_build(tack_program *p, tack_device *dev);
/* Run a built program; the args follow the signature it was compiled for.
 * A failed check in the kernel returns TACK_ERR_INDEX / TACK_ERR_ZERODIV /
 * TACK_ERR_ASSERT with a message naming the kernel's file and line.  Safe to
 * call from several threads at once. */
TACK_API tack_status tack_launch(tack_program *p, const tack_arg *args, int nargs);
/* Free a program, unloading what it built on its device (NULL: nothing). */
TACK_API void tack_program_free(tack_program *p);

#ifdef __cplusplus
}
#endif
#endif /* TACK_KERNEL_H */
