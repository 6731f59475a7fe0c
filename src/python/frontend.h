/*
 * frontend.h -- what the six files of the kernel front end share.
 *
 * The front end turns a Python function into a Tack module (tack_kernel.h).
 * It is split along its seams:
 *
 *   frontend_source.c  the function's source: fetched through the package's
 *                      getsourcelines hook, parsed by CPython's `ast`, and the
 *                      locations in it (nodes, CompileError with a caret)
 *   frontend_env.c     the function's environment: locals, closure cells,
 *                      globals, builtins, the intrinsics registry, and the
 *                      Python values a kernel may use (constants, dtypes)
 *   frontend_expr.c    the walk over expressions, calls and annotations
 *   frontend_methods.c method calls: NumPy's spellings as calls, the others
 *                      refused (naming the function for Taichi's names)
 *   frontend_unroll.c  loops over constant tuples, written out
 *   frontend_refuse.c  the messages for calls a kernel cannot make, with
 *                      the kernel's spelling of each (np.sum, prange, ...)
 *   frontend.c         the walk over statements, signatures and functions,
 *                      and the entry point tpy_frontend_build()
 *
 * Only tpy_frontend_build() and tpy_compile_error() are seen by the
 * rest of the extension (tack_py.h); everything here is the front end's own.
 */
#ifndef TACK_FRONTEND_H
#define TACK_FRONTEND_H

#include "tack_py.h"

#include <string.h>

/* One module being built: the kernel and every @tack.func it reaches. */
typedef struct {
    tpy_state *st;
    tack_module *mod;
    PyObject *memo;        /* dict: Kernel object (func) -> function index */
    PyObject *in_progress; /* list of Kernel objects / functions being walked */
    PyObject *intrinsics;  /* dict: object -> intrinsic name (st->kernel_extra) */
    PyObject *ast;         /* the ast module */
    long nodes;            /* expressions walked, for FE_MAX_NODES */
    PyObject *captures;    /* list of (kind, where, key, value): the values from outside
                              frozen into the module (tpy_frontend_build) */
} fe_module;

/* What the front end accepts, so that the C compiler never meets a kernel
 * it chokes on (a 50,000-term expression crashed it): a CompileError names
 * the limit instead.  Real kernels stay far below both. */
#define FE_MAX_DEPTH 400      /* nesting of one expression */
#define FE_MAX_NODES 100000   /* expressions in a kernel and the functions it calls */

#define FE_MAX_UNROLLED 32 /* the names loops over constant tuples bind at once (nested) */

/* One Python function being walked. */
typedef struct {
    fe_module *mc;
    PyObject *fn;          /* the Python function (borrowed) */
    PyObject *name;        /* its __name__ */
    PyObject *globals;     /* borrowed */
    PyObject *builtins;    /* dict or module (new ref) */
    PyObject *cells;       /* dict: free variable name -> cell (new ref) */
    PyObject *locals;      /* set of names assigned in the function or parameters */
    PyObject *lines;       /* list of the original source lines (str) */
    PyObject *filename;    /* str: the code's co_filename, which CompileError carries */
    PyObject *shown;       /* str or NULL: the name the module records instead (a notebook
                              cell's "Cell In[3]", from the getsourcelines hook) */
    int first_line;        /* file line of source line 1 */
    int shift;             /* lines put before the source to parse it (see fe_parse) */
    int chain_tmp;         /* counter for chained-assignment temporaries */
    int depth;             /* nesting of the expression being walked */
    const char *last_intrinsic; /* intrinsic name of the last call walked (static or
                                   owned by the registry), NULL for others */
    /* the names the loops over constant tuples being unrolled bind (frontend.c, bind): in a
     * copy of the body, a read of `name` is its part of the element, its source `elt` or the
     * environment's `value` (all borrowed) */
    struct {
        PyObject *name, *elt, *value, *loc;
    } unrolled[FE_MAX_UNROLLED];
    int n_unrolled;
    int tuple_exit;        /* walking a copy of a loop over a constant tuple that has a break or
                              continue of its own (frontend.c, tuple_loop) */
    PyObject *tuple_flag;  /* its break's flag, a local's name (borrowed), or NULL */
    tack_node *top;        /* a kernel's body block, whose `for` loops over range are parallel (NULL in a
                              @tack.func): a tuple loop's copies that go there are the kernel's top level */
} fe_func;

/* frontend_methods.c: NumPy's method spellings as calls (1 with *result, 0 when the call is none),
 * and the refusal of any other method call. */
int fe_numpy_method(fe_func *f, PyObject *e, PyObject *func, tack_node **result);
void fe_refuse_method(fe_func *f, PyObject *func);
const char *fe_taichi_method(PyObject *func);

/* frontend.c: a statement list into `block`, and an assignment's target. */
int fe_block(fe_func *f, PyObject *stmts, tack_node *block);
tack_node *fe_target(fe_func *f, PyObject *t);

/* frontend_unroll.c: a loop over a constant tuple (its elements' source `literal`, a list, or the
 * environment's tuple `value`) written out into `block`; a flag local's name and a bool constant. */
int fe_tuple_loop(fe_func *f, PyObject *s, PyObject *t, PyObject *it, PyObject *literal, PyObject *value,
                  tack_node *block);
tack_node *fe_flag_name(fe_func *f, PyObject *s, PyObject *flag);
tack_node *fe_bool_const(fe_func *f, PyObject *s, int v);

/* The node a read of a tuple loop's variable stands for (NULL when `id` is none of them: 0 in
 * *found; with an error, NULL and 1). */
tack_node *fe_unrolled_name(fe_func *f, PyObject *id, int *found);

/* fe_expr flag: a string constant is allowed here (print, assert messages). */
#define FE_ALLOW_STR 1

/* ------------------------------------------------------------ compat */
/* The exception being raised, taken out of the thread state (new ref). */
static inline PyObject *fe_fetch_exception(void) {
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value && tb)
        PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
#endif
}

/* Raise `exc` again (steals it). */
static inline void fe_restore_exception(PyObject *exc) {
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(exc);
#else
    PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(exc)), exc, PyException_GetTraceback(exc));
#endif
}

/* The class name of an ast node ("Name", "BinOp", ...). */
static inline const char *fe_kind(PyObject *node) {
    const char *tp = Py_TYPE(node)->tp_name;
    const char *dot = strrchr(tp, '.');
    return dot ? dot + 1 : tp;
}

static inline int fe_is_kind(PyObject *node, const char *kind) {
    return strcmp(fe_kind(node), kind) == 0;
}

/* ----------------------------------------------- frontend_source.c */
/* getattr(node, name) as a C long (None -> -1); -1 with exception on failure. */
int fe_get_int_attr(PyObject *node, const char *name, long *out);
/* getattr(node, name) where the attribute must be a list; new ref. */
PyObject *fe_get_list(PyObject *node, const char *name);
/* Raise CompileError at ast object `node` (PyUnicode_FromFormat codes); -1. */
int fe_error(fe_func *f, PyObject *node, const char *fmt, ...);
/* ast.unparse(node) as a new str, for messages; "?" on failure. */
PyObject *fe_unparse(fe_func *f, PyObject *node);
/* A new node of `kind` at the location of ast object `pynode` (NULL: the
 * function's first line); NULL with an exception. */
tack_node *fe_node(fe_func *f, PyObject *pynode, tack_node_kind kind);
/* Read and parse `fn`'s source: the FunctionDef (new ref), *original the
 * source text (new ref); sets f->lines, f->first_line, f->shift. */
PyObject *fe_parse(fe_func *f, PyObject *fn, PyObject **original);

/* -------------------------------------------------- frontend_env.c */
/* Globals, builtins, closure cells and locals of `fn` (body: its statements). */
int fe_env_init(fe_func *f, PyObject *fn, PyObject *body);
/* The object a free name or module attribute chain denotes: 1 (*out new
 * ref), 0 for a local or another expression, -1 with CompileError. */
int fe_resolve_chain(fe_func *f, PyObject *e, PyObject **out);
/* NumPy if the program imported it (borrowed), else NULL. */
PyObject *fe_numpy(fe_func *f);
/* The DType id of `obj` (a tack dtype or a NumPy scalar type), or -1. */
int fe_dtype_of(fe_func *f, PyObject *obj);
/* The registry's intrinsic name of `obj` (borrowed), or NULL. */
const char *fe_intrinsic_name(fe_func *f, PyObject *obj);
/* Whether intrinsic `obj` is the math module's function `iname` (math.sqrt, not tack.sqrt). */
int fe_math_module_function(PyObject *obj, const char *iname);
/* The node for a Python value named by `e` (constant, dtype, NumPy scalar). */
tack_node *fe_value_node(fe_func *f, PyObject *e, PyObject *obj);

/* ------------------------------------------------- frontend_expr.c */
tack_node *fe_expr(fe_func *f, PyObject *e, int flags);
/* Walk field `field` of `e` (an expression) into a new node. */
tack_node *fe_field(fe_func *f, PyObject *e, const char *field, int flags);
/* Read the `op` field of `e`; -1 with CompileError if unsupported. */
int fe_op(fe_func *f, PyObject *e, tack_op *out);
tack_node *fe_subscript(fe_func *f, PyObject *e);
tack_node *fe_annotation(fe_func *f, PyObject *ann);
/* Append `child` (NULL: an error is already set) to `n`. */
int fe_add(tack_node *n, tack_node *child, fe_func *f);
int fe_set_name(fe_func *f, tack_node *n, PyObject *name);

/* ----------------------------------------------- frontend_refuse.c */
/* "numpy" or "tack" when `obj` is one of theirs (by its __module__), else NULL. */
const char *fe_origin(PyObject *obj);
/* Whether `obj` is a function that makes a new array (np.zeros, tack.empty, ...). */
int fe_is_array_maker(PyObject *obj);
/* Raise the CompileError for calling `func` (an ast callee) that resolved to
 * `obj`, which is nothing a kernel can call, with what to write instead. */
void fe_refuse_callee(fe_func *f, PyObject *func, PyObject *obj);
/* The same for a callee that is a local, a method (a.sum()) or an expression. */
void fe_refuse_local_callee(fe_func *f, PyObject *func);

/* ------------------------------------------------------ frontend.c */
/* Add `fn` to the module as a function of `kind` (device functions once per
 * `key`) and walk it; 0 with *out_index, -1 with an exception. */
int fe_function(fe_module *mc, PyObject *key, PyObject *fn, tack_function_kind kind,
                int *out_index);

#endif /* TACK_FRONTEND_H */
