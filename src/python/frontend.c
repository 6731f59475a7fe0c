/*
 * frontend.c -- from a Python function to Tack's kernel AST.
 *
 * A kernel is an ordinary Python function, so the front end starts where
 * Python itself starts: it fetches the function's source with
 * tack._source.getsourcelines() (inspect's, without tokenize's start-up
 * cost; inspect itself where in doubt) and asks CPython's own parser for the tree
 * (ast.parse; an indented function, defined inside a class or another
 * function, is parsed as the body of "if 1:").  Reusing Python's parser
 * means every piece of syntax is read exactly as Python reads it and the
 * line/column numbers are Python's.  The walk below then visits those `ast`
 * objects from C and builds the matching tack_node tree through the builder
 * API of tack_kernel.h.
 *
 * The walk is also where a Python function meets its environment.  Free names
 * (those the function does not assign) are resolved now, once, in Python's
 * order -- closure cells, then the function's globals, then its builtins:
 *
 *   int / float / bool values      -> constants, frozen at the first compile
 *   math.* / tack.* / builtins     -> intrinsic calls, recognized by identity
 *                                      through the registry tack._kernels
 *                                      hands to the extension (_INTRINSICS)
 *   dtype objects (tack.f32)       -> a cast when called, TYPE otherwise
 *   @tack.func objects             -> a device function of the same module,
 *                                      walked in turn, once per module
 *   modules                        -> followed through attribute chains
 *                                      (math.pi, tack.vec3, np.pi, ...)
 *
 * Anything else is refused here with tack.CompileError, which carries file,
 * line, column and the source line so that Python's traceback prints a caret
 * under the offending code.  Checking kinds of syntax here (rather than in the
 * compiler) gives the user the most specific message: "lists are not
 * supported" instead of a type error three passes later.
 *
 * Columns: Python's col_offset counts UTF-8 bytes; Tack's nodes use 0-based
 * and CompileError 1-based character columns, so non-ASCII lines are
 * counted again in characters.
 */
#include "tack_py.h"

#include <string.h>

/* ------------------------------------------------------------ compat */
/* The exception being raised, taken out of the thread state (new ref). */
static PyObject *fetch_exception(void)
{
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
static void restore_exception(PyObject *exc)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(exc);
#else
    PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(exc)), exc, PyException_GetTraceback(exc));
#endif
}

/* ------------------------------------------------------------ context */
typedef struct {
    tack_state *st;
    tack_module *mod;
    PyObject *memo;        /* dict: Kernel object (func) -> function index */
    PyObject *in_progress; /* list of Kernel objects / functions being walked */
    PyObject *intrinsics;  /* dict: object -> intrinsic name (borrowed from state) */
    PyObject *ast;         /* the ast module */
} fe_module;

typedef struct {
    fe_module *mc;
    PyObject *fn;          /* the Python function (borrowed) */
    PyObject *name;        /* its __name__ */
    PyObject *globals;     /* borrowed */
    PyObject *builtins;    /* dict or module (new ref) */
    PyObject *cells;       /* dict: free variable name -> cell (new ref) */
    PyObject *locals;      /* set of names assigned in the function or parameters */
    PyObject *lines;       /* list of the original source lines (str) */
    PyObject *filename;    /* str */
    int first_line;        /* file line of source line 1 */
    int shift;             /* lines put before the source to parse it (see fe_parse) */
    int chain_tmp;         /* counter for chained-assignment temporaries */
    const char *last_intrinsic; /* intrinsic name of the last call walked (static or
                                   owned by the registry), NULL for others */
} fe_func;

/* ------------------------------------------------------------ helpers */

/* The class name of an ast node ("Name", "BinOp", ...). */
static const char *ast_kind(PyObject *node)
{
    const char *tp = Py_TYPE(node)->tp_name;
    const char *dot = strrchr(tp, '.');
    return dot ? dot + 1 : tp;
}

static int is_kind(PyObject *node, const char *kind) { return strcmp(ast_kind(node), kind) == 0; }

/* getattr(node, name) as a C int; -1 with exception on failure. */
static int get_int_attr(PyObject *node, const char *name, long *out)
{
    PyObject *v = PyObject_GetAttrString(node, name);
    if (!v)
        return -1;
    if (v == Py_None) {
        Py_DECREF(v);
        *out = -1;
        return 0;
    }
    *out = PyLong_AsLong(v);
    Py_DECREF(v);
    if (*out == -1 && PyErr_Occurred())
        return -1;
    return 0;
}

/* The original source line `rel_line` (1-based, relative to the function's
 * source) as a new str, or None. */
static PyObject *source_line(fe_func *f, long rel_line)
{
    if (rel_line >= 1 && rel_line <= PyList_GET_SIZE(f->lines))
        return Py_NewRef(PyList_GET_ITEM(f->lines, rel_line - 1));
    Py_RETURN_NONE;
}

/* Map a byte column (Python's col_offset) of source line `rel_line` to a
 * 1-based character column. */
static int char_column(fe_func *f, long rel_line, long col_bytes)
{
    if (col_bytes < 0)
        return 0;
    if (rel_line >= 1 && rel_line <= PyList_GET_SIZE(f->lines)) {
        PyObject *line = PyList_GET_ITEM(f->lines, rel_line - 1);
        if (!PyUnicode_IS_ASCII(line)) {
            Py_ssize_t n = 0, chars = 0;
            const char *utf8 = PyUnicode_AsUTF8AndSize(line, &n);
            if (!utf8) {
                PyErr_Clear();
            } else {
                for (Py_ssize_t i = 0; i < n && i < col_bytes; i++)
                    if (((unsigned char)utf8[i] & 0xC0) != 0x80)
                        chars++;
                return (int)chars + 1;
            }
        }
    }
    return (int)col_bytes + 1;
}

/* Raise tack.CompileError (a SyntaxError subclass) at a location. */
int tack_py_compile_error(tack_state *st, const char *msg, PyObject *filename, int line, int col,
                          int end_col, PyObject *text)
{
    PyObject *cls = st->CompileError ? st->CompileError : PyExc_SyntaxError;
    PyObject *loc = NULL, *args = NULL, *exc = NULL;
    if (!text)
        text = Py_None;
    if (end_col > col)
        loc = Py_BuildValue("(OiiOii)", filename ? filename : Py_None, line, col, text, line,
                            end_col);
    else
        loc = Py_BuildValue("(OiiO)", filename ? filename : Py_None, line, col, text);
    if (!loc)
        goto done;
    args = Py_BuildValue("(sO)", msg, loc);
    if (!args)
        goto done;
    exc = PyObject_Call(cls, args, NULL);
    if (!exc)
        goto done;
    PyErr_SetObject(cls, exc);
done:
    Py_XDECREF(loc);
    Py_XDECREF(args);
    Py_XDECREF(exc);
    return -1;
}

/* Raise CompileError at `node` (an ast object) with a printf-style message
 * (PyUnicode_FromFormat codes).  Keeps an exception already set (e.g. from a
 * failed getattr) as the cause.  Always returns -1. */
static int fe_error(fe_func *f, PyObject *node, const char *fmt, ...)
{
    va_list va;
    long lineno = 0, col = -1, end_lineno = -1, end_col = -1;
    PyObject *msg = NULL, *text = NULL, *cause = NULL;
    const char *cmsg;

    if (PyErr_Occurred())
        cause = fetch_exception();
    va_start(va, fmt);
    msg = PyUnicode_FromFormatV(fmt, va);
    va_end(va);
    if (!msg)
        goto done;
    if (node) {
        if (get_int_attr(node, "lineno", &lineno) < 0 || get_int_attr(node, "col_offset", &col) < 0)
            PyErr_Clear();
        if (get_int_attr(node, "end_lineno", &end_lineno) < 0 ||
            get_int_attr(node, "end_col_offset", &end_col) < 0)
            PyErr_Clear();
        lineno -= f->shift;
        end_lineno -= f->shift;
    }
    text = source_line(f, lineno);
    cmsg = PyUnicode_AsUTF8(msg);
    if (!cmsg)
        goto done;
    {
        int c = col >= 0 ? char_column(f, lineno, col) : 0;
        int ec = (end_lineno == lineno && end_col > col) ? char_column(f, lineno, end_col) : 0;
        tack_py_compile_error(f->mc->st, cmsg, f->filename,
                              lineno > 0 ? (int)lineno + f->first_line - 1 : f->first_line, c, ec,
                              text);
    }
done:
    if (cause && PyErr_Occurred()) {
        PyObject *exc = fetch_exception();
        PyException_SetCause(exc, cause); /* steals cause */
        restore_exception(exc);
        cause = NULL;
    }
    Py_XDECREF(cause);
    Py_XDECREF(msg);
    Py_XDECREF(text);
    return -1;
}

/* ast.unparse(node) as a new str, for messages ("math.foo"); "?" on failure. */
static PyObject *unparse(fe_func *f, PyObject *node)
{
    PyObject *s = PyObject_CallMethod(f->mc->ast, "unparse", "O", node);
    if (!s) {
        PyErr_Clear();
        s = PyUnicode_FromString("?");
    }
    return s;
}

/* A new node of `kind` at the location of ast object `pynode` (NULL: the
 * function's first line). */
static tack_node *fe_node(fe_func *f, PyObject *pynode, tack_node_kind kind)
{
    long lineno = 0, col = -1;
    if (pynode && PyObject_HasAttrString(pynode, "lineno")) {
        if (get_int_attr(pynode, "lineno", &lineno) < 0 ||
            get_int_attr(pynode, "col_offset", &col) < 0)
            return NULL;
        lineno -= f->shift;
    }
    int line = lineno > 0 ? (int)lineno + f->first_line - 1 : f->first_line;
    /* Node columns are 0-based like Python's col_offset (the compiler adds 1
     * when it reports an error); lines are the file's. */
    int c = col >= 0 ? char_column(f, lineno, col) - 1 : 0;
    tack_node *n = tack_node_new(f->mc->mod, kind, line, c);
    if (!n)
        tack_py_raise();
    return n;
}

/* Append `child` (NULL: an error is already set) to `n`. */
static int fe_add(tack_node *n, tack_node *child, fe_func *f)
{
    if (!child)
        return -1;
    if (tack_node_add_child(f->mc->mod, n, child) != TACK_OK)
        return tack_py_raise_int();
    return 0;
}

static int fe_set_name(fe_func *f, tack_node *n, PyObject *name)
{
    const char *s = PyUnicode_AsUTF8(name);
    if (!s)
        return -1;
    if (tack_node_set_name(f->mc->mod, n, s) != TACK_OK)
        return tack_py_raise_int();
    return 0;
}

/* getattr(node, name) where the attribute must be a list; new ref. */
static PyObject *get_list(PyObject *node, const char *name)
{
    PyObject *v = PyObject_GetAttrString(node, name);
    if (v && !PyList_Check(v)) {
        Py_DECREF(v);
        PyErr_Format(PyExc_TypeError, "ast field %s is not a list", name);
        return NULL;
    }
    return v;
}

/* ---------------------------------------------------------- resolution */

/* Look a free name up as Python would from inside the function: closure
 * cells, globals, builtins.  1 found (*out new ref), 0 not defined, -1 error. */
static int resolve_name(fe_func *f, PyObject *pynode, PyObject *name, PyObject **out)
{
    PyObject *v;
    *out = NULL;
    if (f->cells) {
        PyObject *cell = PyDict_GetItemWithError(f->cells, name);
        if (cell) {
            v = PyCell_Get(cell);
            if (!v) {
                if (!PyErr_Occurred())
                    return fe_error(f, pynode,
                                    "free variable '%U' is referenced before it is assigned "
                                    "in the enclosing function", name);
                return -1;
            }
            *out = v;
            return 1;
        }
        if (PyErr_Occurred())
            return -1;
    }
    v = PyDict_GetItemWithError(f->globals, name);
    if (v) {
        *out = Py_NewRef(v);
        return 1;
    }
    if (PyErr_Occurred())
        return -1;
    if (f->builtins) {
        if (PyDict_Check(f->builtins)) {
            v = PyDict_GetItemWithError(f->builtins, name);
            if (v) {
                *out = Py_NewRef(v);
                return 1;
            }
            if (PyErr_Occurred())
                return -1;
        } else {
            v = PyObject_GetAttr(f->builtins, name);
            if (v) {
                *out = v;
                return 1;
            }
            if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                return -1;
            PyErr_Clear();
        }
    }
    return 0;
}

/* If `e` is a free name, or attributes of modules reached from one
 * (math.pi, tack.f32, np.random...), the object it denotes: 1 with *out (new
 * ref).  0 when `e` starts from a local or is another kind of expression.
 * -1 with CompileError set. */
static int resolve_chain(fe_func *f, PyObject *e, PyObject **out)
{
    *out = NULL;
    if (is_kind(e, "Name")) {
        PyObject *id = PyObject_GetAttrString(e, "id");
        int r;
        if (!id)
            return -1;
        r = PySet_Contains(f->locals, id);
        if (r != 0) {
            Py_DECREF(id);
            return r < 0 ? -1 : 0;
        }
        r = resolve_name(f, e, id, out);
        if (r == 0)
            fe_error(f, e, "name '%U' is not defined", id);
        Py_DECREF(id);
        return r == 1 ? 1 : -1;
    }
    if (is_kind(e, "Attribute")) {
        PyObject *base = NULL, *value = PyObject_GetAttrString(e, "value"), *attr = NULL;
        int r = -1;
        if (!value)
            return -1;
        r = resolve_chain(f, value, &base);
        if (r <= 0)
            goto done;
        r = -1;
        attr = PyObject_GetAttrString(e, "attr");
        if (!attr)
            goto done;
        if (!PyModule_Check(base)) {
            PyObject *src = unparse(f, value);
            fe_error(f, e, "'%U.%U': only attributes of modules (such as math.pi or tack.f32) "
                           "can be used in a kernel; '%U' is a %s",
                     src, attr, src, Py_TYPE(base)->tp_name);
            Py_XDECREF(src);
            goto done;
        }
        *out = PyObject_GetAttr(base, attr);
        if (!*out) {
            if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
                PyObject *src = unparse(f, value);
                PyErr_Clear();
                fe_error(f, e, "module '%U' has no attribute '%U'", src, attr);
                Py_XDECREF(src);
            }
            goto done;
        }
        r = 1;
    done:
        Py_DECREF(value);
        Py_XDECREF(base);
        Py_XDECREF(attr);
        return r;
    }
    return 0;
}

/* The DType id of `obj`, or -1 if it is not a tack dtype object. */
static int dtype_of(fe_func *f, PyObject *obj)
{
    tack_state *st = f->mc->st;
    if (st->DTypeType && PyObject_TypeCheck(obj, st->DTypeType))
        return (int)((TackDTypeObject *)obj)->id;
    return -1;
}

/* The intrinsic name of `obj` from the registry (borrowed, valid while the
 * registry lives), or NULL (no exception) if it is not an intrinsic. */
static const char *intrinsic_name(fe_func *f, PyObject *obj)
{
    PyObject *name;
    if (!f->mc->intrinsics)
        return NULL;
    name = PyDict_GetItemWithError(f->mc->intrinsics, obj);
    if (!name) {
        PyErr_Clear(); /* unhashable objects are simply not intrinsics */
        return NULL;
    }
    return PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
}

/* 1 with *dt when `obj` is a NumPy scalar (np.float32(0.5), ...) of a dtype
 * Tack has; 0 otherwise (no exception). */
static int numpy_scalar_dtype(fe_func *f, PyObject *obj, tack_dtype *dt)
{
    PyObject *np, *generic = NULL, *dtype = NULL;
    int r = 0;
    np = f->mc->st->numpy;
    if (!np) {
        /* NumPy scalars exist only once numpy is imported. */
        PyObject *modules = PyImport_GetModuleDict();
        np = PyDict_GetItemString(modules, "numpy");
        if (!np)
            return 0;
    }
    generic = PyObject_GetAttrString(np, "generic");
    if (!generic)
        goto done;
    r = PyObject_IsInstance(obj, generic);
    if (r != 1)
        goto done;
    r = 0;
    dtype = PyObject_GetAttrString(obj, "dtype");
    if (!dtype)
        goto done;
    if (tack_py_dtype_from_object(f->mc->st, dtype, dt) == 0)
        r = 1;
done:
    if (PyErr_Occurred())
        PyErr_Clear();
    Py_XDECREF(generic);
    Py_XDECREF(dtype);
    return r < 0 ? 0 : r;
}

/* Describe an object that cannot be used as a value in a kernel. */
static int refuse_object(fe_func *f, PyObject *e, PyObject *obj)
{
    tack_state *st = f->mc->st;
    PyObject *src = unparse(f, e);
    int r;
    if (!src)
        return -1;
    if (tack_py_kernel_unwrap(st, obj, NULL, NULL) == 1 || intrinsic_name(f, obj) ||
        PyFunction_Check(obj) || PyCFunction_Check(obj))
        r = fe_error(f, e, "function '%U' can only be called in a kernel, not used as a value",
                     src);
    else if ((st->ArrayType && PyObject_TypeCheck(obj, st->ArrayType)) ||
             PyObject_CheckBuffer(obj))
        r = fe_error(f, e, "'%U' is an array captured from the enclosing scope; closures over "
                           "arrays are not supported: pass it to the kernel as an argument", src);
    else if (PyUnicode_Check(obj) || PyBytes_Check(obj))
        r = fe_error(f, e, "'%U' is a string; strings are only allowed as print() arguments "
                           "and assert messages", src);
    else if (PyModule_Check(obj))
        r = fe_error(f, e, "module '%U' cannot be used as a value in a kernel", src);
    else if (PyType_Check(obj))
        r = fe_error(f, e, "class '%U' cannot be used in a kernel", src);
    else
        r = fe_error(f, e, "'%U' is a %s; only int, float and bool values, dtypes and functions "
                           "of math/tack/@tack.func can be used from outside a kernel",
                     src, Py_TYPE(obj)->tp_name);
    Py_DECREF(src);
    return r;
}

/* A constant node for a Python int (bool excluded). */
static tack_node *int_node(fe_func *f, PyObject *e, PyObject *v)
{
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    tack_node *n;
    if (x == -1 && PyErr_Occurred())
        return NULL;
    if (overflow > 0) {
        unsigned long long u = PyLong_AsUnsignedLongLong(v);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            fe_error(f, e, "integer %R does not fit in 64 bits", v);
            return NULL;
        }
        n = fe_node(f, e, TACK_N_CONST_INT);
        if (n)
            tack_node_set_uint(n, (uint64_t)u);
        return n;
    }
    if (overflow < 0) {
        fe_error(f, e, "integer %R does not fit in 64 bits", v);
        return NULL;
    }
    n = fe_node(f, e, TACK_N_CONST_INT);
    if (n)
        tack_node_set_int(n, (int64_t)x);
    return n;
}

/* The node for a Python object named by expression `e` (a free name or a
 * module attribute) used as a value. */
static tack_node *value_node(fe_func *f, PyObject *e, PyObject *obj)
{
    tack_node *n = NULL;
    tack_dtype dt;
    int id;
    if (PyBool_Check(obj)) {
        n = fe_node(f, e, TACK_N_CONST_BOOL);
        if (n)
            tack_node_set_int(n, obj == Py_True);
        return n;
    }
    if (PyLong_Check(obj))
        return int_node(f, e, obj);
    if (PyFloat_Check(obj)) {
        n = fe_node(f, e, TACK_N_CONST_FLOAT);
        if (n)
            tack_node_set_float(n, PyFloat_AS_DOUBLE(obj));
        return n;
    }
    id = dtype_of(f, obj);
    if (id >= 0) {
        n = fe_node(f, e, TACK_N_TYPE);
        if (n)
            tack_node_set_int(n, id);
        return n;
    }
    if (numpy_scalar_dtype(f, obj, &dt)) {
        /* A NumPy scalar keeps its type: f32(value). */
        const tack_dtype_info *info = tack_dtype_get(dt);
        tack_node *c = NULL;
        n = fe_node(f, e, TACK_N_CALL);
        if (!n || tack_node_set_name(f->mc->mod, n, info->name) != TACK_OK)
            goto fail;
        tack_node_set_int(n, -1);
        if (info->kind == TACK_KIND_FLOAT) {
            double d = PyFloat_AsDouble(obj);
            if (d == -1.0 && PyErr_Occurred())
                return NULL;
            c = fe_node(f, e, TACK_N_CONST_FLOAT);
            if (c)
                tack_node_set_float(c, d);
        } else if (info->kind == TACK_KIND_BOOL) {
            int b = PyObject_IsTrue(obj);
            if (b < 0)
                return NULL;
            c = fe_node(f, e, TACK_N_CONST_BOOL);
            if (c)
                tack_node_set_int(c, b);
        } else if (info->rows == 1 && info->cols == 1) {
            PyObject *iv = PyNumber_Index(obj);
            if (!iv)
                return NULL;
            c = int_node(f, e, iv);
            Py_DECREF(iv);
        } else {
            refuse_object(f, e, obj);
            return NULL;
        }
        if (fe_add(n, c, f) < 0)
            return NULL;
        return n;
    fail:
        if (n && !PyErr_Occurred())
            tack_py_raise();
        return NULL;
    }
    refuse_object(f, e, obj);
    return NULL;
}

/* --------------------------------------------------------- expressions */
#define FE_ALLOW_STR 1

static tack_node *fe_expr(fe_func *f, PyObject *e, int flags);
static int fe_function(fe_module *mc, PyObject *key, PyObject *fn, tack_function_kind kind,
                       int *out_index);

typedef struct {
    const char *kind;
    tack_op op;
} op_entry;

static const op_entry op_table[] = {
    {"Add", TACK_OP_ADD},       {"Sub", TACK_OP_SUB},         {"Mult", TACK_OP_MUL},
    {"Div", TACK_OP_DIV},       {"FloorDiv", TACK_OP_FLOORDIV}, {"Mod", TACK_OP_MOD},
    {"Pow", TACK_OP_POW},       {"MatMult", TACK_OP_MATMUL},  {"LShift", TACK_OP_LSHIFT},
    {"RShift", TACK_OP_RSHIFT}, {"BitAnd", TACK_OP_BITAND},   {"BitOr", TACK_OP_BITOR},
    {"BitXor", TACK_OP_BITXOR}, {"USub", TACK_OP_NEG},        {"UAdd", TACK_OP_POS},
    {"Not", TACK_OP_NOT},       {"Invert", TACK_OP_INVERT},   {"And", TACK_OP_AND},
    {"Or", TACK_OP_OR},         {"Eq", TACK_OP_EQ},           {"NotEq", TACK_OP_NE},
    {"Lt", TACK_OP_LT},         {"LtE", TACK_OP_LE},          {"Gt", TACK_OP_GT},
    {"GtE", TACK_OP_GE},
};

/* The tack_op of an ast operator object, TACK_OP_NONE if unknown. */
static tack_op op_of(PyObject *opnode)
{
    const char *k = ast_kind(opnode);
    for (size_t i = 0; i < sizeof op_table / sizeof op_table[0]; i++)
        if (strcmp(op_table[i].kind, k) == 0)
            return op_table[i].op;
    return TACK_OP_NONE;
}

/* Read the `op` field of `e` as a tack_op; -1 with CompileError if unsupported. */
static int fe_op(fe_func *f, PyObject *e, tack_op *out)
{
    PyObject *op = PyObject_GetAttrString(e, "op");
    if (!op)
        return -1;
    *out = op_of(op);
    if (*out == TACK_OP_NONE) {
        fe_error(f, e, "operator %s is not supported", ast_kind(op));
        Py_DECREF(op);
        return -1;
    }
    Py_DECREF(op);
    return 0;
}

/* Walk the expressions of list field `field` of `e`, appending each to `n`. */
static int fe_expr_list(fe_func *f, PyObject *e, const char *field, tack_node *n, int flags)
{
    PyObject *list = get_list(e, field);
    int r = -1;
    if (!list)
        return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *item = PyList_GET_ITEM(list, i);
        if (is_kind(item, "Starred")) {
            fe_error(f, item, "starred expressions (*args) are not supported in kernels");
            goto done;
        }
        if (fe_add(n, fe_expr(f, item, flags), f) < 0)
            goto done;
    }
    r = 0;
done:
    Py_DECREF(list);
    return r;
}

/* Walk field `field` of `e` (an expression) into a new node. */
static tack_node *fe_field(fe_func *f, PyObject *e, const char *field, int flags)
{
    PyObject *v = PyObject_GetAttrString(e, field);
    tack_node *n;
    if (!v)
        return NULL;
    n = fe_expr(f, v, flags);
    Py_DECREF(v);
    return n;
}

static tack_node *fe_constant(fe_func *f, PyObject *e, int flags)
{
    PyObject *v = PyObject_GetAttrString(e, "value");
    tack_node *n = NULL;
    if (!v)
        return NULL;
    if (PyBool_Check(v) || PyLong_Check(v) || PyFloat_Check(v)) {
        n = value_node(f, e, v);
    } else if (PyUnicode_Check(v)) {
        if (!(flags & FE_ALLOW_STR)) {
            fe_error(f, e, "strings are only allowed as print() arguments and assert messages");
        } else if ((n = fe_node(f, e, TACK_N_CONST_STR)) != NULL && fe_set_name(f, n, v) < 0) {
            n = NULL;
        }
    } else if (v == Py_None) {
        fe_error(f, e, "None is not supported in kernels");
    } else {
        fe_error(f, e, "%s constants are not supported in kernels", Py_TYPE(v)->tp_name);
    }
    Py_DECREF(v);
    return n;
}

/* Subscript: [value, index...]; a[i, j] has two indices. */
static tack_node *fe_subscript(fe_func *f, PyObject *e)
{
    PyObject *slice = NULL;
    tack_node *n = fe_node(f, e, TACK_N_SUBSCRIPT);
    if (!n || fe_add(n, fe_field(f, e, "value", 0), f) < 0)
        return NULL;
    slice = PyObject_GetAttrString(e, "slice");
    if (!slice)
        return NULL;
    if (is_kind(slice, "Index")) { /* Python 3.8 */
        PyObject *inner = PyObject_GetAttrString(slice, "value");
        Py_SETREF(slice, inner);
        if (!slice)
            return NULL;
    }
    if (is_kind(slice, "Tuple")) {
        PyObject *elts = get_list(slice, "elts");
        if (!elts)
            goto fail;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(elts); i++) {
            PyObject *item = PyList_GET_ITEM(elts, i);
            if (is_kind(item, "Slice")) {
                Py_DECREF(elts);
                fe_error(f, item, "slices are not supported in kernels; index one element at a "
                                  "time");
                goto fail;
            }
            if (fe_add(n, fe_expr(f, item, 0), f) < 0) {
                Py_DECREF(elts);
                goto fail;
            }
        }
        Py_DECREF(elts);
    } else if (is_kind(slice, "Slice")) {
        fe_error(f, slice, "slices are not supported in kernels; index one element at a time");
        goto fail;
    } else if (fe_add(n, fe_expr(f, slice, 0), f) < 0) {
        goto fail;
    }
    Py_DECREF(slice);
    return n;
fail:
    Py_DECREF(slice);
    return NULL;
}

/* Append constants for the defaults of the trailing parameters of @tack.func
 * `fn` that a call with `given` arguments leaves out. */
static int add_func_defaults(fe_func *f, PyObject *call, tack_node *n, PyObject *fn,
                             PyObject *fname, Py_ssize_t given)
{
    PyCodeObject *code = (PyCodeObject *)PyFunction_GetCode(fn);
    PyObject *defaults = PyFunction_GetDefaults(fn);
    Py_ssize_t nparams = code->co_argcount;
    Py_ssize_t ndef = defaults ? PyTuple_GET_SIZE(defaults) : 0;
    if (given > nparams)
        return fe_error(f, call, "%U() takes %zd argument%s but %zd were given", fname, nparams,
                        nparams == 1 ? "" : "s", given);
    if (given < nparams - ndef)
        return fe_error(f, call, "%U() takes %zd argument%s but %zd were given", fname, nparams,
                        nparams == 1 ? "" : "s", given);
    for (Py_ssize_t i = given; i < nparams; i++) {
        PyObject *d = PyTuple_GET_ITEM(defaults, i - (nparams - ndef));
        if (!(PyBool_Check(d) || PyLong_Check(d) || PyFloat_Check(d)))
            return fe_error(f, call, "default value of parameter %zd of %U() is a %s; only int, "
                                     "float and bool defaults are supported",
                            i + 1, fname, Py_TYPE(d)->tp_name);
        if (fe_add(n, value_node(f, call, d), f) < 0)
            return -1;
    }
    return 0;
}

static int list_contains(PyObject *list, PyObject *item)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++)
        if (PyList_GET_ITEM(list, i) == item)
            return 1;
    return 0;
}

static tack_node *fe_call(fe_func *f, PyObject *e)
{
    PyObject *func = NULL, *obj = NULL, *kw = NULL, *args = NULL, *fn = NULL;
    tack_node *n = NULL, *result = NULL;
    const char *iname = NULL;
    int is_func = 0, index = -1, r, dt;

    func = PyObject_GetAttrString(e, "func");
    if (!func)
        goto done;
    kw = get_list(e, "keywords");
    if (!kw)
        goto done;
    if (PyList_GET_SIZE(kw) > 0) {
        PyObject *k = PyList_GET_ITEM(kw, 0), *arg = PyObject_GetAttrString(k, "arg");
        if (!arg)
            goto done;
        if (arg == Py_None)
            fe_error(f, k, "**kwargs in calls is not supported in kernels");
        else
            fe_error(f, k, "keyword arguments are not supported in kernels ('%U=...'); pass "
                           "arguments by position", arg);
        Py_DECREF(arg);
        goto done;
    }
    r = resolve_chain(f, func, &obj);
    if (r < 0)
        goto done;
    if (r == 0) {
        if (is_kind(func, "Name")) {
            PyObject *id = PyObject_GetAttrString(func, "id");
            if (id)
                fe_error(f, func, "'%U' is a local variable or parameter, not a function",
                         id);
            Py_XDECREF(id);
        } else if (is_kind(func, "Attribute")) {
            PyObject *src = unparse(f, func);
            fe_error(f, func, "method calls ('%U(...)') are not supported in kernels; use "
                              "functions such as tack.dot(v, w)", src);
            Py_XDECREF(src);
        } else {
            fe_error(f, func, "only named functions can be called in kernels");
        }
        goto done;
    }
    n = fe_node(f, e, TACK_N_CALL);
    if (!n)
        goto done;
    r = tack_py_kernel_unwrap(f->mc->st, obj, &fn, &is_func);
    if (r < 0)
        goto done;
    if (r == 1) {
        PyObject *fname = PyObject_GetAttrString(fn, "__name__");
        if (!fname)
            goto done;
        if (!is_func) {
            fe_error(f, func, "kernel '%U' cannot be called from a kernel; only @tack.func "
                              "functions can", fname);
            Py_DECREF(fname);
            goto done;
        }
        if (list_contains(f->mc->in_progress, obj)) {
            fe_error(f, func, "recursion is not supported: '%U' calls itself (directly or "
                              "through other functions)", fname);
            Py_DECREF(fname);
            goto done;
        }
        if (fe_function(f->mc, obj, fn, TACK_FUNC_DEVICE, &index) < 0 ||
            fe_set_name(f, n, fname) < 0) {
            Py_DECREF(fname);
            goto done;
        }
        tack_node_set_int(n, index);
        if (fe_expr_list(f, e, "args", n, 0) < 0) {
            Py_DECREF(fname);
            goto done;
        }
        args = get_list(e, "args");
        if (!args || add_func_defaults(f, e, n, fn, fname, PyList_GET_SIZE(args)) < 0) {
            Py_DECREF(fname);
            goto done;
        }
        Py_DECREF(fname);
        f->last_intrinsic = NULL;
        result = n;
        goto done;
    }
    dt = dtype_of(f, obj);
    if (dt >= 0)
        iname = tack_dtype_get((tack_dtype)dt)->name;
    else
        iname = intrinsic_name(f, obj);
    if (!iname) {
        PyObject *src = unparse(f, func);
        if (!src)
            goto done;
        if (PyFunction_Check(obj))
            fe_error(f, func, "function '%U' is not a @tack.func; decorate it with @tack.func "
                              "to call it from a kernel", src);
        else if (PyType_Check(obj))
            fe_error(f, func, "class '%U' cannot be used in a kernel", src);
        else
            fe_error(f, func, "'%U' (%s) cannot be called in a kernel; kernels call math.*, "
                              "tack.* and @tack.func functions and the builtins range, len, "
                              "abs, min, max, float, int, bool and print",
                     src, Py_TYPE(obj)->tp_name);
        Py_DECREF(src);
        goto done;
    }
    if (tack_node_set_name(f->mc->mod, n, iname) != TACK_OK) {
        tack_py_raise();
        goto done;
    }
    tack_node_set_int(n, -1);
    if (fe_expr_list(f, e, "args", n, strcmp(iname, "print") == 0 ? FE_ALLOW_STR : 0) < 0)
        goto done;
    f->last_intrinsic = iname;
    result = n;
done:
    Py_XDECREF(func);
    Py_XDECREF(obj);
    Py_XDECREF(kw);
    Py_XDECREF(args);
    return result;
}

typedef struct {
    const char *kind;
    const char *what;
} unsupported_entry;

static const unsupported_entry unsupported_exprs[] = {
    {"List", "lists are"},
    {"Dict", "dicts are"},
    {"Set", "sets are"},
    {"ListComp", "list comprehensions are"},
    {"SetComp", "set comprehensions are"},
    {"DictComp", "dict comprehensions are"},
    {"GeneratorExp", "generator expressions are"},
    {"Lambda", "lambdas are"},
    {"JoinedStr", "f-strings are"},
    {"FormattedValue", "f-strings are"},
    {"NamedExpr", "assignment expressions (:=) are"},
    {"Starred", "starred expressions are"},
    {"Await", "await is"},
    {"Yield", "yield is"},
    {"YieldFrom", "yield from is"},
    {"Slice", "slices are"},
};

static tack_node *fe_expr(fe_func *f, PyObject *e, int flags)
{
    const char *k = ast_kind(e);
    tack_node *n = NULL;
    tack_op op;

    if (Py_EnterRecursiveCall(" while compiling a kernel expression"))
        return NULL;
    if (strcmp(k, "Constant") == 0) {
        n = fe_constant(f, e, flags);
    } else if (strcmp(k, "Name") == 0 || strcmp(k, "Attribute") == 0) {
        PyObject *obj = NULL;
        int r = resolve_chain(f, e, &obj);
        if (r == 1) {
            n = value_node(f, e, obj);
            Py_DECREF(obj);
        } else if (r == 0 && k[0] == 'N') {
            PyObject *id = PyObject_GetAttrString(e, "id");
            n = id ? fe_node(f, e, TACK_N_NAME) : NULL;
            if (n && fe_set_name(f, n, id) < 0)
                n = NULL;
            Py_XDECREF(id);
        } else if (r == 0) {
            PyObject *attr = PyObject_GetAttrString(e, "attr");
            n = attr ? fe_node(f, e, TACK_N_ATTRIBUTE) : NULL;
            if (n && (fe_set_name(f, n, attr) < 0 || fe_add(n, fe_field(f, e, "value", 0), f) < 0))
                n = NULL;
            Py_XDECREF(attr);
        }
    } else if (strcmp(k, "BinOp") == 0) {
        if (fe_op(f, e, &op) == 0 && (n = fe_node(f, e, TACK_N_BINOP)) != NULL) {
            tack_node_set_op(n, op);
            if (fe_add(n, fe_field(f, e, "left", 0), f) < 0 ||
                fe_add(n, fe_field(f, e, "right", 0), f) < 0)
                n = NULL;
        }
    } else if (strcmp(k, "UnaryOp") == 0) {
        if (fe_op(f, e, &op) == 0 && (n = fe_node(f, e, TACK_N_UNARYOP)) != NULL) {
            tack_node_set_op(n, op);
            if (fe_add(n, fe_field(f, e, "operand", 0), f) < 0)
                n = NULL;
        }
    } else if (strcmp(k, "BoolOp") == 0) {
        if (fe_op(f, e, &op) == 0 && (n = fe_node(f, e, TACK_N_BOOLOP)) != NULL) {
            tack_node_set_op(n, op);
            if (fe_expr_list(f, e, "values", n, 0) < 0)
                n = NULL;
        }
    } else if (strcmp(k, "Compare") == 0) {
        PyObject *ops = get_list(e, "ops");
        if (ops && (n = fe_node(f, e, TACK_N_COMPARE)) != NULL) {
            if (fe_add(n, fe_field(f, e, "left", 0), f) < 0 ||
                fe_expr_list(f, e, "comparators", n, 0) < 0)
                n = NULL;
            for (Py_ssize_t i = 0; n && i < PyList_GET_SIZE(ops); i++) {
                PyObject *o = PyList_GET_ITEM(ops, i);
                tack_op cop = op_of(o);
                if (cop == TACK_OP_NONE) {
                    const char *ok = ast_kind(o);
                    const char *sym = strcmp(ok, "In") == 0      ? "in"
                                      : strcmp(ok, "NotIn") == 0 ? "not in"
                                      : strcmp(ok, "Is") == 0    ? "is"
                                                                 : "is not";
                    fe_error(f, e, "the '%s' comparison is not supported in kernels", sym);
                    n = NULL;
                } else if (tack_node_add_op(f->mc->mod, n, cop) != TACK_OK) {
                    tack_py_raise();
                    n = NULL;
                }
            }
        }
        Py_XDECREF(ops);
    } else if (strcmp(k, "IfExp") == 0) {
        if ((n = fe_node(f, e, TACK_N_IFEXP)) != NULL &&
            (fe_add(n, fe_field(f, e, "test", 0), f) < 0 ||
             fe_add(n, fe_field(f, e, "body", 0), f) < 0 ||
             fe_add(n, fe_field(f, e, "orelse", 0), f) < 0))
            n = NULL;
    } else if (strcmp(k, "Call") == 0) {
        n = fe_call(f, e);
    } else if (strcmp(k, "Subscript") == 0) {
        n = fe_subscript(f, e);
    } else if (strcmp(k, "Tuple") == 0) {
        if ((n = fe_node(f, e, TACK_N_TUPLE)) != NULL && fe_expr_list(f, e, "elts", n, 0) < 0)
            n = NULL;
    } else {
        const char *what = NULL;
        for (size_t i = 0; i < sizeof unsupported_exprs / sizeof unsupported_exprs[0]; i++)
            if (strcmp(unsupported_exprs[i].kind, k) == 0)
                what = unsupported_exprs[i].what;
        if (what)
            fe_error(f, e, "%s not supported in kernels", what);
        else
            fe_error(f, e, "this expression (%s) is not supported in kernels", k);
    }
    Py_LeaveRecursiveCall();
    if (!n && !PyErr_Occurred())
        tack_py_raise();
    return n;
}

/* ---------------------------------------------------------- statements */

static int fe_block(fe_func *f, PyObject *stmts, tack_node *block);

/* An assignment target: NAME, SUBSCRIPT or TUPLE of targets. */
static tack_node *fe_target(fe_func *f, PyObject *t)
{
    const char *k = ast_kind(t);
    tack_node *n = NULL;
    if (strcmp(k, "Name") == 0) {
        PyObject *id = PyObject_GetAttrString(t, "id");
        n = id ? fe_node(f, t, TACK_N_NAME) : NULL;
        if (n && fe_set_name(f, n, id) < 0)
            n = NULL;
        Py_XDECREF(id);
    } else if (strcmp(k, "Subscript") == 0) {
        n = fe_subscript(f, t);
    } else if (strcmp(k, "Tuple") == 0 || strcmp(k, "List") == 0) {
        PyObject *elts = get_list(t, "elts");
        if (elts && (n = fe_node(f, t, TACK_N_TUPLE)) != NULL) {
            for (Py_ssize_t i = 0; n && i < PyList_GET_SIZE(elts); i++) {
                PyObject *item = PyList_GET_ITEM(elts, i);
                if (is_kind(item, "Starred")) {
                    fe_error(f, item, "starred assignment targets are not supported in kernels");
                    n = NULL;
                } else if (fe_add(n, fe_target(f, item), f) < 0) {
                    n = NULL;
                }
            }
        }
        Py_XDECREF(elts);
    } else if (strcmp(k, "Attribute") == 0) {
        PyObject *src = unparse(f, t);
        fe_error(f, t, "assigning to an attribute ('%U = ...') is not supported in kernels; "
                       "build a new value instead", src);
        Py_XDECREF(src);
    } else {
        fe_error(f, t, "cannot assign to this expression (%s) in a kernel", k);
    }
    if (!n && !PyErr_Occurred())
        tack_py_raise();
    return n;
}

/* An annotation: a tack dtype, or int/float/bool (i64/f32/bool). */
static tack_node *fe_annotation(fe_func *f, PyObject *ann)
{
    PyObject *obj = NULL;
    tack_node *n = NULL;
    int id = -1;
    int r = resolve_chain(f, ann, &obj);
    if (r < 0)
        return NULL;
    if (r == 1) {
        id = dtype_of(f, obj);
        if (id < 0 && PyType_Check(obj)) {
            if (obj == (PyObject *)&PyBool_Type)
                id = TACK_BOOL;
            else if (obj == (PyObject *)&PyLong_Type)
                id = TACK_I64;
            else if (obj == (PyObject *)&PyFloat_Type)
                id = TACK_F32;
        }
    }
    if (id < 0) {
        PyObject *src = unparse(f, ann);
        fe_error(f, ann, "annotation '%U' is not a tack dtype; annotate with tack.f32, tack.i64, "
                         "tack.vec3, ... (or int, float, bool)", src);
        Py_XDECREF(src);
    } else if ((n = fe_node(f, ann, TACK_N_TYPE)) != NULL) {
        tack_node_set_int(n, id);
    }
    Py_XDECREF(obj);
    return n;
}

/* A field of `s` that is a list of statements, as a new BLOCK node. */
static tack_node *fe_block_field(fe_func *f, PyObject *s, const char *field, PyObject *loc)
{
    PyObject *list = get_list(s, field);
    tack_node *b;
    if (!list)
        return NULL;
    b = fe_node(f, PyList_GET_SIZE(list) > 0 ? PyList_GET_ITEM(list, 0) : loc, TACK_N_BLOCK);
    if (b && fe_block(f, list, b) < 0)
        b = NULL;
    Py_DECREF(list);
    return b;
}

/* Refuse a non-empty `orelse` of a loop. */
static int no_orelse(fe_func *f, PyObject *s, const char *loop)
{
    PyObject *orelse = get_list(s, "orelse");
    int r = 0;
    if (!orelse)
        return -1;
    if (PyList_GET_SIZE(orelse) > 0)
        r = fe_error(f, PyList_GET_ITEM(orelse, 0),
                     "'%s ... else' is not supported in kernels", loop);
    Py_DECREF(orelse);
    return r;
}

static tack_node *fe_assign(fe_func *f, PyObject *s, tack_node *block)
{
    PyObject *targets = get_list(s, "targets"), *value = NULL;
    tack_node *n = NULL;
    Py_ssize_t nt;
    if (!targets)
        return NULL;
    value = PyObject_GetAttrString(s, "value");
    if (!value)
        goto done;
    nt = PyList_GET_SIZE(targets);
    if (nt == 1) {
        if ((n = fe_node(f, s, TACK_N_ASSIGN)) != NULL &&
            (fe_add(n, fe_target(f, PyList_GET_ITEM(targets, 0)), f) < 0 ||
             fe_add(n, fe_expr(f, value, 0), f) < 0))
            n = NULL;
        goto done;
    }
    /* a = b = v: Python evaluates v once and assigns it to a, then b.  A
     * constant or name is simply repeated; anything else goes through a
     * temporary so it is evaluated once. */
    {
        int simple = is_kind(value, "Constant") || is_kind(value, "Name");
        PyObject *tmpname = NULL;
        if (!simple) {
            tmpname = PyUnicode_FromFormat("_tack_chain%d", ++f->chain_tmp);
            if (!tmpname)
                goto done;
            tack_node *a = fe_node(f, s, TACK_N_ASSIGN), *t = a ? fe_node(f, s, TACK_N_NAME) : NULL;
            if (!t || fe_set_name(f, t, tmpname) < 0 || fe_add(a, t, f) < 0 ||
                fe_add(a, fe_expr(f, value, 0), f) < 0 || fe_add(block, a, f) < 0) {
                Py_DECREF(tmpname);
                goto done;
            }
        }
        for (Py_ssize_t i = 0; i < nt; i++) {
            tack_node *a = fe_node(f, s, TACK_N_ASSIGN), *v;
            if (!a || fe_add(a, fe_target(f, PyList_GET_ITEM(targets, i)), f) < 0)
                break;
            if (simple) {
                v = fe_expr(f, value, 0);
            } else {
                v = fe_node(f, value, TACK_N_NAME);
                if (v && fe_set_name(f, v, tmpname) < 0)
                    v = NULL;
            }
            if (fe_add(a, v, f) < 0)
                break;
            if (i == nt - 1) {
                n = a; /* the caller appends the last one */
                break;
            }
            if (fe_add(block, a, f) < 0)
                break;
        }
        Py_XDECREF(tmpname);
    }
done:
    Py_DECREF(targets);
    Py_XDECREF(value);
    return n;
}

typedef struct {
    const char *kind;
    const char *msg;
} unsupported_stmt;

static const unsupported_stmt unsupported_stmts[] = {
    {"FunctionDef", "nested functions are not supported in kernels; define the function at "
                    "module level and decorate it with @tack.func"},
    {"AsyncFunctionDef", "nested functions are not supported in kernels"},
    {"ClassDef", "classes are not supported in kernels"},
    {"Import", "import statements are not supported in kernels; import at module level"},
    {"ImportFrom", "import statements are not supported in kernels; import at module level"},
    {"Global", "'global' is not supported in kernels; globals are read-only constants"},
    {"Nonlocal", "'nonlocal' is not supported in kernels"},
    {"With", "'with' statements are not supported in kernels"},
    {"AsyncWith", "'async with' is not supported in kernels"},
    {"AsyncFor", "'async for' is not supported in kernels"},
    {"Try", "'try' statements are not supported in kernels"},
    {"TryStar", "'try' statements are not supported in kernels"},
    {"Raise", "'raise' is not supported in kernels; use assert"},
    {"Delete", "'del' is not supported in kernels"},
    {"Match", "'match' statements are not supported in kernels"},
    {"TypeAlias", "'type' statements are not supported in kernels"},
};

/* Walk statement `s`, appending its node(s) to `block`. */
static int fe_stmt(fe_func *f, PyObject *s, tack_node *block)
{
    const char *k = ast_kind(s);
    tack_node *n = NULL;
    tack_op op;

    if (Py_EnterRecursiveCall(" while compiling a kernel statement"))
        return -1;
    if (strcmp(k, "Expr") == 0) {
        PyObject *v = PyObject_GetAttrString(s, "value");
        if (!v)
            goto done;
        if (is_kind(v, "Constant")) {
            /* A docstring or a bare constant does nothing. */
            Py_DECREF(v);
            Py_LeaveRecursiveCall();
            return 0;
        }
        if ((n = fe_node(f, s, TACK_N_EXPR)) != NULL && fe_add(n, fe_expr(f, v, 0), f) < 0)
            n = NULL;
        Py_DECREF(v);
    } else if (strcmp(k, "Assign") == 0) {
        n = fe_assign(f, s, block);
    } else if (strcmp(k, "AugAssign") == 0) {
        PyObject *t = PyObject_GetAttrString(s, "target");
        if (t && fe_op(f, s, &op) == 0 && (n = fe_node(f, s, TACK_N_AUGASSIGN)) != NULL) {
            tack_node_set_op(n, op);
            if (fe_add(n, fe_target(f, t), f) < 0 || fe_add(n, fe_field(f, s, "value", 0), f) < 0)
                n = NULL;
        }
        Py_XDECREF(t);
    } else if (strcmp(k, "AnnAssign") == 0) {
        PyObject *t = PyObject_GetAttrString(s, "target"), *ann = NULL, *v = NULL;
        if (!t)
            goto done;
        if (!is_kind(t, "Name")) {
            fe_error(f, t, "only a plain name can be annotated in a kernel");
        } else if ((ann = PyObject_GetAttrString(s, "annotation")) != NULL &&
                   (v = PyObject_GetAttrString(s, "value")) != NULL &&
                   (n = fe_node(f, s, TACK_N_ANNASSIGN)) != NULL) {
            if (fe_add(n, fe_target(f, t), f) < 0 || fe_add(n, fe_annotation(f, ann), f) < 0 ||
                (v != Py_None && fe_add(n, fe_expr(f, v, 0), f) < 0))
                n = NULL;
        }
        Py_DECREF(t);
        Py_XDECREF(ann);
        Py_XDECREF(v);
    } else if (strcmp(k, "If") == 0) {
        if ((n = fe_node(f, s, TACK_N_IF)) != NULL &&
            (fe_add(n, fe_field(f, s, "test", 0), f) < 0 ||
             fe_add(n, fe_block_field(f, s, "body", s), f) < 0 ||
             fe_add(n, fe_block_field(f, s, "orelse", s), f) < 0))
            n = NULL;
    } else if (strcmp(k, "For") == 0) {
        PyObject *t = NULL, *it = NULL;
        tack_node *iter;
        if (no_orelse(f, s, "for") < 0)
            goto done;
        if (!(t = PyObject_GetAttrString(s, "target")) || !(it = PyObject_GetAttrString(s, "iter")) ||
            !(n = fe_node(f, s, TACK_N_FOR)) || fe_add(n, fe_target(f, t), f) < 0) {
            n = NULL;
        } else {
            f->last_intrinsic = NULL;
            iter = fe_expr(f, it, 0);
            if (iter && !(is_kind(it, "Call") && f->last_intrinsic &&
                          (strcmp(f->last_intrinsic, "range") == 0 ||
                           strcmp(f->last_intrinsic, "ndrange") == 0))) {
                fe_error(f, it, "a for loop in a kernel must iterate over range(...) or "
                                "tack.ndrange(...)");
                iter = NULL;
            }
            if (fe_add(n, iter, f) < 0 || fe_add(n, fe_block_field(f, s, "body", s), f) < 0)
                n = NULL;
        }
        Py_XDECREF(t);
        Py_XDECREF(it);
    } else if (strcmp(k, "While") == 0) {
        if (no_orelse(f, s, "while") < 0)
            goto done;
        if ((n = fe_node(f, s, TACK_N_WHILE)) != NULL &&
            (fe_add(n, fe_field(f, s, "test", 0), f) < 0 ||
             fe_add(n, fe_block_field(f, s, "body", s), f) < 0))
            n = NULL;
    } else if (strcmp(k, "Break") == 0) {
        n = fe_node(f, s, TACK_N_BREAK);
    } else if (strcmp(k, "Continue") == 0) {
        n = fe_node(f, s, TACK_N_CONTINUE);
    } else if (strcmp(k, "Pass") == 0) {
        n = fe_node(f, s, TACK_N_PASS);
    } else if (strcmp(k, "Return") == 0) {
        PyObject *v = PyObject_GetAttrString(s, "value");
        if (v && (n = fe_node(f, s, TACK_N_RETURN)) != NULL && v != Py_None &&
            fe_add(n, fe_expr(f, v, 0), f) < 0)
            n = NULL;
        Py_XDECREF(v);
    } else if (strcmp(k, "Assert") == 0) {
        PyObject *msg = PyObject_GetAttrString(s, "msg");
        if (!msg)
            goto done;
        int is_str = 0;
        if (msg != Py_None && is_kind(msg, "Constant")) {
            PyObject *v = PyObject_GetAttrString(msg, "value");
            is_str = v && PyUnicode_Check(v);
            Py_XDECREF(v);
            PyErr_Clear();
        }
        if (msg != Py_None && !is_str) {
            fe_error(f, msg, "an assert message in a kernel must be a string literal");
        } else if ((n = fe_node(f, s, TACK_N_ASSERT)) != NULL) {
            if (fe_add(n, fe_field(f, s, "test", 0), f) < 0 ||
                (msg != Py_None && fe_add(n, fe_expr(f, msg, FE_ALLOW_STR), f) < 0))
                n = NULL;
        }
        Py_DECREF(msg);
    } else {
        const char *msg = NULL;
        for (size_t i = 0; i < sizeof unsupported_stmts / sizeof unsupported_stmts[0]; i++)
            if (strcmp(unsupported_stmts[i].kind, k) == 0)
                msg = unsupported_stmts[i].msg;
        if (msg)
            fe_error(f, s, "%s", msg);
        else
            fe_error(f, s, "this statement (%s) is not supported in kernels", k);
    }
done:
    Py_LeaveRecursiveCall();
    if (!n) {
        if (!PyErr_Occurred())
            tack_py_raise();
        return -1;
    }
    return fe_add(block, n, f);
}

static int fe_block(fe_func *f, PyObject *stmts, tack_node *block)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(stmts); i++)
        if (fe_stmt(f, PyList_GET_ITEM(stmts, i), block) < 0)
            return -1;
    return 0;
}

/* ------------------------------------------------------- local names */

/* Add the names bound by assignment target `t` to the set. */
static int collect_target(PyObject *t, PyObject *set)
{
    int r = 0;
    if (is_kind(t, "Name")) {
        PyObject *id = PyObject_GetAttrString(t, "id");
        if (!id)
            return -1;
        r = PySet_Add(set, id);
        Py_DECREF(id);
    } else if (is_kind(t, "Tuple") || is_kind(t, "List")) {
        PyObject *elts = get_list(t, "elts");
        if (!elts)
            return -1;
        for (Py_ssize_t i = 0; r == 0 && i < PyList_GET_SIZE(elts); i++)
            r = collect_target(PyList_GET_ITEM(elts, i), set);
        Py_DECREF(elts);
    } else if (is_kind(t, "Starred")) {
        PyObject *v = PyObject_GetAttrString(t, "value");
        if (!v)
            return -1;
        r = collect_target(v, set);
        Py_DECREF(v);
    }
    return r;
}

/* Python's rule: a name bound anywhere in the function body is local to it.
 * Walk the statements (not nested scopes) for the names they bind. */
static int collect_locals(PyObject *stmts, PyObject *set)
{
    static const char *bodies[] = {"body", "orelse", "finalbody"};
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(stmts); i++) {
        PyObject *s = PyList_GET_ITEM(stmts, i);
        const char *k = ast_kind(s);
        if (strcmp(k, "Assign") == 0) {
            PyObject *targets = get_list(s, "targets");
            if (!targets)
                return -1;
            for (Py_ssize_t j = 0; j < PyList_GET_SIZE(targets); j++)
                if (collect_target(PyList_GET_ITEM(targets, j), set) < 0) {
                    Py_DECREF(targets);
                    return -1;
                }
            Py_DECREF(targets);
        } else if (strcmp(k, "AugAssign") == 0 || strcmp(k, "AnnAssign") == 0 ||
                   strcmp(k, "For") == 0) {
            PyObject *t = PyObject_GetAttrString(s, "target");
            int r = t ? collect_target(t, set) : -1;
            Py_XDECREF(t);
            if (r < 0)
                return -1;
        }
        if (strcmp(k, "If") == 0 || strcmp(k, "For") == 0 || strcmp(k, "While") == 0 ||
            strcmp(k, "With") == 0 || strcmp(k, "Try") == 0) {
            for (size_t b = 0; b < 3; b++) {
                PyObject *list;
                if (!PyObject_HasAttrString(s, bodies[b]))
                    continue;
                list = get_list(s, bodies[b]);
                if (!list || collect_locals(list, set) < 0) {
                    Py_XDECREF(list);
                    return -1;
                }
                Py_DECREF(list);
            }
        }
    }
    return 0;
}

/* ------------------------------------------------------------ functions */

/* Raise TypeError explaining that `fn`'s source cannot be read (the
 * inspect error is kept as the cause). */
static void no_source_error(PyObject *fn)
{
    PyObject *cause = fetch_exception(), *exc;
    PyObject *name = PyObject_GetAttrString(fn, "__qualname__");
    if (!name) {
        PyErr_Clear();
        name = PyUnicode_FromString("?");
    }
    PyErr_Format(PyExc_TypeError,
                 "cannot compile '%U': its source code is not available (%S). Tack compiles a "
                 "kernel from the function's source text, so define it in a file (a module, a "
                 "script or a notebook cell), not in the plain interactive interpreter or with "
                 "exec()/eval()",
                 name ? name : Py_None, cause ? cause : Py_None);
    Py_XDECREF(name);
    if (cause) {
        exc = fetch_exception();
        PyException_SetCause(exc, cause);
        restore_exception(exc);
    }
}

/* Read and parse `fn`'s source.  Sets f->lines, f->first_line, f->shift;
 * returns the FunctionDef (new ref) and *original (new ref).
 *
 * An indented function (a method, or one defined inside another function)
 * is parsed as the body of "if 1:" rather than dedented: dedenting fails on
 * a comment or a string line less indented than the def, and this way
 * Python's columns are the file's columns.  Line numbers are then one more
 * than the source's (f->shift). */
static PyObject *fe_parse(fe_func *f, PyObject *fn, PyObject **original)
{
    PyObject *source = NULL, *res = NULL, *lnum, *text = NULL, *empty = NULL, *tree = NULL;
    PyObject *body = NULL, *inner = NULL, *fdef = NULL;
    Py_UCS4 c0;

    *original = NULL;
    source = PyImport_ImportModule("tack._source"); /* inspect's, minus tokenize's start-up */
    if (!source)
        goto done;
    res = PyObject_CallMethod(source, "getsourcelines", "O", fn);
    if (!res) {
        if (PyErr_ExceptionMatches(PyExc_OSError) || PyErr_ExceptionMatches(PyExc_TypeError))
            no_source_error(fn);
        goto done;
    }
    if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 2 || !PyList_Check(PyTuple_GET_ITEM(res, 0)) ||
        PyList_GET_SIZE(PyTuple_GET_ITEM(res, 0)) == 0 ||
        !PyUnicode_Check(PyList_GET_ITEM(PyTuple_GET_ITEM(res, 0), 0))) {
        PyErr_SetString(PyExc_TypeError, "getsourcelines returned no source");
        goto done;
    }
    f->lines = Py_NewRef(PyTuple_GET_ITEM(res, 0));
    lnum = PyTuple_GET_ITEM(res, 1);
    f->first_line = (int)PyLong_AsLong(lnum);
    if (f->first_line == -1 && PyErr_Occurred())
        goto done;
    if (f->first_line < 1)
        f->first_line = 1;
    empty = PyUnicode_FromString("");
    if (!empty)
        goto done;
    *original = PyUnicode_Join(empty, f->lines);
    if (!*original)
        goto done;
    c0 = PyUnicode_GET_LENGTH(PyList_GET_ITEM(f->lines, 0)) > 0
             ? PyUnicode_READ_CHAR(PyList_GET_ITEM(f->lines, 0), 0)
             : 0;
    f->shift = (c0 == ' ' || c0 == '\t' || c0 == '\f') ? 1 : 0;
    text = f->shift ? PyUnicode_FromFormat("if 1:\n%U", *original) : Py_NewRef(*original);
    if (!text)
        goto done;
    tree = PyObject_CallMethod(f->mc->ast, "parse", "O", text);
    if (!tree)
        goto done;
    body = get_list(tree, "body");
    if (!body)
        goto done;
    if (f->shift && PyList_GET_SIZE(body) > 0) {
        inner = get_list(PyList_GET_ITEM(body, 0), "body");
        if (!inner)
            goto done;
        Py_SETREF(body, inner);
        inner = NULL;
    }
    if (PyList_GET_SIZE(body) < 1) {
        PyErr_SetString(PyExc_TypeError, "the function's source is empty");
        goto done;
    }
    fdef = PyList_GET_ITEM(body, 0);
    if (!is_kind(fdef, "FunctionDef")) {
        if (is_kind(fdef, "AsyncFunctionDef"))
            fe_error(f, fdef, "an async function cannot be a kernel");
        else
            fe_error(f, fdef, "only functions defined with 'def' can be kernels (a lambda "
                              "cannot)");
        fdef = NULL;
        goto done;
    }
    Py_INCREF(fdef);
done:
    if (!fdef)
        Py_CLEAR(*original);
    Py_XDECREF(source);
    Py_XDECREF(res);
    Py_XDECREF(text);
    Py_XDECREF(empty);
    Py_XDECREF(tree);
    Py_XDECREF(body);
    return fdef;
}

/* Parameters and the return annotation of FunctionDef `fdef`. */
static int fe_signature(fe_func *f, int index, PyObject *fdef, tack_function_kind kind)
{
    PyObject *args = NULL, *lists[2] = {NULL, NULL}, *v = NULL, *returns = NULL;
    int r = -1;
    static const char *refused[][2] = {
        {"vararg", "*args parameters are not supported in kernels"},
        {"kwarg", "**kwargs parameters are not supported in kernels"},
    };

    args = PyObject_GetAttrString(fdef, "args");
    if (!args)
        goto done;
    for (int i = 0; i < 2; i++) {
        v = PyObject_GetAttrString(args, refused[i][0]);
        if (!v)
            goto done;
        if (v != Py_None) {
            fe_error(f, v, "%s", refused[i][1]);
            goto done;
        }
        Py_CLEAR(v);
    }
    v = get_list(args, "kwonlyargs");
    if (!v)
        goto done;
    if (PyList_GET_SIZE(v) > 0) {
        fe_error(f, PyList_GET_ITEM(v, 0), "keyword-only parameters are not supported in kernels");
        goto done;
    }
    Py_CLEAR(v);
    if (PyObject_HasAttrString(args, "posonlyargs") && !(lists[0] = get_list(args, "posonlyargs")))
        goto done;
    if (!(lists[1] = get_list(args, "args")))
        goto done;
    for (int l = 0; l < 2; l++) {
        for (Py_ssize_t i = 0; lists[l] && i < PyList_GET_SIZE(lists[l]); i++) {
            PyObject *a = PyList_GET_ITEM(lists[l], i), *name, *ann;
            tack_node *ann_node = NULL;
            const char *cname;
            tack_status st;
            name = PyObject_GetAttrString(a, "arg");
            if (!name)
                goto done;
            ann = PyObject_GetAttrString(a, "annotation");
            if (!ann) {
                Py_DECREF(name);
                goto done;
            }
            if (ann != Py_None)
                ann_node = fe_annotation(f, ann);
            Py_DECREF(ann);
            cname = PyUnicode_AsUTF8(name);
            if (!cname || (ann == Py_None ? 0 : !ann_node)) {
                Py_DECREF(name);
                goto done;
            }
            st = tack_function_add_param(f->mc->mod, index, cname, ann_node);
            Py_DECREF(name);
            if (st != TACK_OK) {
                tack_py_raise();
                goto done;
            }
        }
    }
    returns = PyObject_GetAttrString(fdef, "returns");
    if (!returns)
        goto done;
    if (returns != Py_None && !(is_kind(returns, "Constant") &&
                                (v = PyObject_GetAttrString(returns, "value")) == Py_None)) {
        tack_node *rn;
        if (kind == TACK_FUNC_KERNEL) {
            fe_error(f, returns, "a kernel returns nothing; remove the return annotation");
            goto done;
        }
        rn = fe_annotation(f, returns);
        if (!rn)
            goto done;
        if (tack_function_set_returns(f->mc->mod, index, rn) != TACK_OK) {
            tack_py_raise();
            goto done;
        }
    }
    r = 0;
done:
    if (r < 0 && !PyErr_Occurred())
        tack_py_raise();
    Py_XDECREF(args);
    Py_XDECREF(lists[0]);
    Py_XDECREF(lists[1]);
    Py_XDECREF(v);
    Py_XDECREF(returns);
    return r;
}

/* Add `fn` to the module as a function of `kind` (once per `key` for device
 * functions) and walk its body.  0 with *out_index, -1 with an exception. */
static int fe_function(fe_module *mc, PyObject *key, PyObject *fn, tack_function_kind kind,
                       int *out_index)
{
    fe_func f;
    PyObject *fdef = NULL, *original = NULL, *code = NULL, *freevars = NULL, *body = NULL;
    PyObject *closure, *idx = NULL;
    const char *cname, *cfile, *csrc;
    tack_node *block;
    int index = -1, r = -1, pushed = 0;

    memset(&f, 0, sizeof f);
    f.mc = mc;
    f.fn = fn;
    if (kind == TACK_FUNC_DEVICE) {
        PyObject *known = PyDict_GetItemWithError(mc->memo, key);
        if (known) {
            *out_index = (int)PyLong_AsLong(known);
            return 0;
        }
        if (PyErr_Occurred())
            return -1;
    }
    if (!PyFunction_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "a kernel must be a Python function, not %.100s",
                     Py_TYPE(fn)->tp_name);
        return -1;
    }
    code = PyFunction_GetCode(fn); /* borrowed */
    f.filename = Py_NewRef(((PyCodeObject *)code)->co_filename);
    f.name = PyObject_GetAttrString(fn, "__name__");
    if (!f.name)
        goto done;
    fdef = fe_parse(&f, fn, &original);
    if (!fdef)
        goto done;
    f.globals = PyFunction_GetGlobals(fn);
    f.builtins = PyObject_GetAttrString(fn, "__builtins__");
    if (!f.builtins) {
        PyObject *b;
        PyErr_Clear();
        b = PyDict_GetItemString(f.globals, "__builtins__");
        f.builtins = b ? Py_NewRef(b) : PyImport_ImportModule("builtins");
        if (!f.builtins)
            goto done;
    }
    closure = PyFunction_GetClosure(fn);
    if (closure && closure != Py_None) {
        freevars = PyObject_GetAttrString(code, "co_freevars");
        if (!freevars)
            goto done;
        f.cells = PyDict_New();
        if (!f.cells)
            goto done;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(freevars) && i < PyTuple_GET_SIZE(closure); i++)
            if (PyDict_SetItem(f.cells, PyTuple_GET_ITEM(freevars, i), PyTuple_GET_ITEM(closure, i)) < 0)
                goto done;
    }
    /* Locals: the parameters and every name the body binds. */
    f.locals = PySet_New(NULL);
    if (!f.locals)
        goto done;
    {
        PyObject *varnames = PyObject_GetAttrString(code, "co_varnames");
        if (!varnames)
            goto done;
        for (int i = 0; i < ((PyCodeObject *)code)->co_argcount && i < PyTuple_GET_SIZE(varnames);
             i++)
            if (PySet_Add(f.locals, PyTuple_GET_ITEM(varnames, i)) < 0) {
                Py_DECREF(varnames);
                goto done;
            }
        Py_DECREF(varnames);
    }
    body = get_list(fdef, "body");
    if (!body || collect_locals(body, f.locals) < 0)
        goto done;

    cname = PyUnicode_AsUTF8(f.name);
    cfile = PyUnicode_AsUTF8(f.filename);
    csrc = PyUnicode_AsUTF8(original);
    if (!cname || !cfile || !csrc)
        goto done;
    index = tack_module_add_function(mc->mod, kind, cname, cfile, f.first_line, csrc);
    if (index < 0) {
        tack_py_raise();
        goto done;
    }
    if (kind == TACK_FUNC_DEVICE) {
        idx = PyLong_FromLong(index);
        if (!idx || PyDict_SetItem(mc->memo, key, idx) < 0)
            goto done;
    }
    if (PyList_Append(mc->in_progress, key) < 0)
        goto done;
    pushed = 1;
    if (fe_signature(&f, index, fdef, kind) < 0)
        goto done;
    block = fe_node(&f, fdef, TACK_N_BLOCK);
    if (!block || fe_block(&f, body, block) < 0)
        goto done;
    if (tack_function_set_body(mc->mod, index, block) != TACK_OK) {
        tack_py_raise();
        goto done;
    }
    *out_index = index;
    r = 0;
done:
    if (pushed) {
        PyObject *exc = PyErr_Occurred() ? fetch_exception() : NULL;
        Py_ssize_t len = PyList_GET_SIZE(mc->in_progress);
        if (PyList_SetSlice(mc->in_progress, len - 1, len, NULL) < 0)
            PyErr_Clear();
        if (exc)
            restore_exception(exc);
    }
    Py_XDECREF(fdef);
    Py_XDECREF(original);
    Py_XDECREF(freevars);
    Py_XDECREF(body);
    Py_XDECREF(idx);
    Py_XDECREF(f.name);
    Py_XDECREF(f.builtins);
    Py_XDECREF(f.cells);
    Py_XDECREF(f.locals);
    Py_XDECREF(f.lines);
    Py_XDECREF(f.filename);
    return r;
}

/* Build a new module holding kernel `fn` (function 0 or the returned index)
 * and every @tack.func it reaches. */
int tack_py_frontend_build(tack_state *st, PyObject *fn, tack_module **out_module, int *out_index)
{
    fe_module mc;
    int r = -1, index = -1;

    memset(&mc, 0, sizeof mc);
    mc.st = st;
    *out_module = NULL;
    if (!st->kernel_extra) {
        /* tack._kernels registers the intrinsics when imported. */
        PyObject *m = PyImport_ImportModule("tack._kernels");
        if (!m)
            return -1;
        Py_DECREF(m);
    }
    mc.intrinsics = st->kernel_extra ? Py_NewRef(st->kernel_extra) : NULL;
    mc.ast = PyImport_ImportModule("ast");
    mc.memo = PyDict_New();
    mc.in_progress = PyList_New(0);
    if (!mc.ast || !mc.memo || !mc.in_progress)
        goto done;
    if (tack_module_new(&mc.mod) != TACK_OK) {
        tack_py_raise();
        goto done;
    }
    if (fe_function(&mc, fn, fn, TACK_FUNC_KERNEL, &index) < 0)
        goto done;
    *out_module = mc.mod;
    *out_index = index;
    mc.mod = NULL;
    r = 0;
done:
    if (mc.mod)
        tack_module_free(mc.mod);
    Py_XDECREF(mc.intrinsics);
    Py_XDECREF(mc.ast);
    Py_XDECREF(mc.memo);
    Py_XDECREF(mc.in_progress);
    return r;
}
