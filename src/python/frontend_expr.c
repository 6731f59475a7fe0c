/*
 * frontend_expr.c -- the walk over Python expressions.
 *
 * Each `ast` expression object becomes one tack_node built through the
 * builder API of tack_kernel.h, its children walked first-to-last as
 * Python evaluates them.  fe_expr() looks the node's class name up once in
 * a static table, expr_kinds, which names either the function that walks
 * that kind or, for syntax a kernel cannot have (lists, lambdas, f-strings,
 * ...), the words of the refusal.  A kind missing from the table is refused
 * with its class name, so a new Python version's syntax fails clearly.
 *
 * Checking kinds of syntax here, rather than in the compiler, gives the user
 * the most specific message: "lists are not supported" instead of a type
 * error three passes later.  The compiler (src/compiler/) sees only what
 * the walk accepted, and types it.
 *
 * Names are the environment's business (frontend_env.c): a Name or an
 * Attribute chain that resolves outside the function becomes a constant, a
 * dtype or is refused; only locals reach the tree as NAME nodes.  Calls are
 * the one expression with real logic here: the callee is resolved, then it
 * is either a @tack.func (walked into the same module as a device function,
 * once, with its default arguments filled in), a dtype (a cast), a local
 * array's constructor (np.zeros, tack.full, ...: a CALL named "numpy.zeros"
 * or "tack.full" whose shape must be constant and whose dtype becomes a
 * TYPE node; the compiler's lower_local.c does the rest), or an intrinsic
 * from the registry (math.sqrt, np.sqrt, tack.dot, range, print, ...).
 * What cannot be called is refused by what it is, with what to write
 * instead (frontend_refuse.c).
 */
#include "frontend.h"

/* ---------------------------------------------------------------- builder */

int fe_add(tack_node *n, tack_node *child, fe_func *f) {
    if (!child)
        return -1;
    if (tack_node_add_child(f->mc->mod, n, child) != TACK_OK)
        return tpy_raise_int();
    return 0;
}

int fe_set_name(fe_func *f, tack_node *n, PyObject *name) {
    const char *s = PyUnicode_AsUTF8(name);
    if (!s)
        return -1;
    if (tack_node_set_name(f->mc->mod, n, s) != TACK_OK)
        return tpy_raise_int();
    return 0;
}


/* -------------------------------------------------------------- operators */

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
static tack_op op_of(PyObject *opnode) {
    const char *k = fe_kind(opnode);
    for (size_t i = 0; i < sizeof op_table / sizeof op_table[0]; i++)
        if (strcmp(op_table[i].kind, k) == 0)
            return op_table[i].op;
    return TACK_OP_NONE;
}

/* Read the `op` field of `e` as a tack_op; -1 with CompileError if unsupported. */
int fe_op(fe_func *f, PyObject *e, tack_op *out) {
    PyObject *op = PyObject_GetAttrString(e, "op");
    if (!op)
        return -1;
    *out = op_of(op);
    if (*out == TACK_OP_NONE) {
        fe_error(f, e, "operator %s is not supported", fe_kind(op));
        Py_DECREF(op);
        return -1;
    }
    Py_DECREF(op);
    return 0;
}

/* Walk the expressions of list field `field` of `e`, appending each to `n`. */
static int fe_expr_list(fe_func *f, PyObject *e, const char *field, tack_node *n, int flags) {
    PyObject *list = fe_get_list(e, field);
    int r = -1;
    if (!list)
        return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *item = PyList_GET_ITEM(list, i);
        if (fe_is_kind(item, "Starred")) {
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
tack_node *fe_field(fe_func *f, PyObject *e, const char *field, int flags) {
    PyObject *v = PyObject_GetAttrString(e, field);
    tack_node *n;
    if (!v)
        return NULL;
    n = fe_expr(f, v, flags);
    Py_DECREF(v);
    return n;
}

/* ------------------------------------------------------------ leaves */

static tack_node *fe_constant(fe_func *f, PyObject *e, int flags) {
    PyObject *v = PyObject_GetAttrString(e, "value");
    tack_node *n = NULL;
    if (!v)
        return NULL;
    if (PyBool_Check(v) || PyLong_Check(v) || PyFloat_Check(v) || PyComplex_CheckExact(v)) {
        n = fe_value_node(f, e, v);
    } else if (PyUnicode_Check(v)) {
        Py_ssize_t len = 0;
        const char *u = PyUnicode_AsUTF8AndSize(v, &len);
        if (!u) {
            Py_DECREF(v);
            return NULL;
        }
        if (!(flags & FE_ALLOW_STR)) {
            fe_error(f, e, "strings are only allowed as print() arguments and assert messages");
        } else if ((size_t)len != strlen(u)) { /* C strings end at the first NUL: say so rather than cut */
            fe_error(f, e, "a string in a kernel cannot hold a NUL character ('\\x00'); it would end the text there");
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

/* What a slice in a kernel is told. */
#define SLICE_REFUSED                                                                              \
    "slices are not supported in kernels: a kernel reads and writes one element at a time; "      \
    "write the loop instead, e.g. 'for i in range(lo, hi): a[i] = b[i]' for 'a[lo:hi] = b[lo:hi]'"

/* Subscript: [value, index...]; a[i, j] has two indices. */
tack_node *fe_subscript(fe_func *f, PyObject *e) {
    PyObject *slice = NULL;
    tack_node *n = fe_node(f, e, TACK_N_SUBSCRIPT);
    if (!n || fe_add(n, fe_field(f, e, "value", 0), f) < 0)
        return NULL;
    slice = PyObject_GetAttrString(e, "slice");
    if (!slice)
        return NULL;
    if (fe_is_kind(slice, "Index")) { /* Python 3.8 */
        PyObject *inner = PyObject_GetAttrString(slice, "value");
        Py_SETREF(slice, inner);
        if (!slice)
            return NULL;
    }
    if (fe_is_kind(slice, "Tuple")) {
        PyObject *elts = fe_get_list(slice, "elts");
        if (!elts)
            goto fail;
        if (PyList_GET_SIZE(elts) == 0) {
            Py_DECREF(elts);
            fe_error(f, e, "an empty index, x[()], is not supported in kernels: pass the value of a 0-D "
                           "array as a scalar argument, or make it a 1-element array and write x[0]");
            goto fail;
        }
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(elts); i++) {
            PyObject *item = PyList_GET_ITEM(elts, i);
            if (fe_is_kind(item, "Slice")) {
                Py_DECREF(elts);
                fe_error(f, item, SLICE_REFUSED);
                goto fail;
            }
            if (fe_add(n, fe_expr(f, item, 0), f) < 0) {
                Py_DECREF(elts);
                goto fail;
            }
        }
        Py_DECREF(elts);
    } else if (fe_is_kind(slice, "Slice")) {
        fe_error(f, slice, SLICE_REFUSED);
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
/* ------------------------------------------------------------- calls */

static int add_func_defaults(fe_func *f, PyObject *call, tack_node *n, PyObject *fn,
                             PyObject *fname, Py_ssize_t given) {
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
        if (fe_add(n, fe_value_node(f, call, d), f) < 0)
            return -1;
    }
    return 0;
}

static int list_contains(PyObject *list, PyObject *item) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++)
        if (PyList_GET_ITEM(list, i) == item)
            return 1;
    return 0;
}

/* 0 when call `e` has no keyword arguments; else -1 with CompileError. */
static int no_keywords(fe_func *f, PyObject *e) {
    PyObject *kw = fe_get_list(e, "keywords"), *k, *arg = NULL;
    int r = -1;

    if (!kw)
        goto done;
    if (PyList_GET_SIZE(kw) == 0) {
        r = 0;
        goto done;
    }
    k = PyList_GET_ITEM(kw, 0);
    arg = PyObject_GetAttrString(k, "arg");
    if (!arg)
        goto done;
    if (arg == Py_None)
        fe_error(f, k, "**kwargs in calls is not supported in kernels");
    else
        fe_error(f, k, "keyword arguments are not supported in kernels ('%U=...'); pass "
                       "arguments by position", arg);
done:
    Py_XDECREF(kw);
    Py_XDECREF(arg);
    return r;
}

/* A shuffle's documented keyword, tack.shuffle(v, lane, width=8): *width is
 * its value (a new reference) when the call to `obj` is a shuffle given two
 * arguments and only that keyword, else NULL; -1 with CompileError for a
 * width given twice or another keyword of a shuffle. */
static int shuffle_width(fe_func *f, PyObject *e, PyObject *obj, PyObject **width) {
    const char *iname = fe_intrinsic_name(f, obj);
    PyObject *kw, *args, *k, *arg = NULL;
    int r = 0;
    *width = NULL;
    if (!iname || (strcmp(iname, "shuffle") != 0 && strcmp(iname, "shuffle_down") != 0))
        return 0;
    kw = fe_get_list(e, "keywords");
    args = fe_get_list(e, "args");
    if (!kw || !args || PyList_GET_SIZE(kw) == 0) {
        r = kw && args ? 0 : -1;
        goto done;
    }
    k = PyList_GET_ITEM(kw, 0);
    arg = PyObject_GetAttrString(k, "arg");
    if (!arg) {
        r = -1;
    } else if (PyList_GET_SIZE(kw) > 1 || arg == Py_None || PyUnicode_CompareWithASCIIString(arg, "width") != 0) {
        fe_error(f, k, "tack.%s() takes one keyword argument, width=", iname);
        r = -1;
    } else if (PyList_GET_SIZE(args) != 2) {
        fe_error(f, k, "tack.%s() takes the value, the %s and width=; give the width once", iname,
                 iname[7] ? "delta" : "lane");
        r = -1;
    } else if (!(*width = PyObject_GetAttrString(k, "value"))) {
        r = -1;
    }
done:
    Py_XDECREF(kw);
    Py_XDECREF(args);
    Py_XDECREF(arg);
    return r;
}

/* The local-array constructor `obj` is (np.zeros / np.ones / np.empty /
 * np.full and tack's), as "numpy.zeros" / "tack.full" ...; NULL otherwise. */
static const char *local_array_maker(fe_func *f, PyObject *obj) {
    static const char *names[] = {"numpy.zeros", "numpy.ones", "numpy.empty", "numpy.full",
                                  "tack.zeros",  "tack.ones",  "tack.empty",  "tack.full", "tack.shared"};
    const char *origin = fe_origin(obj), *r = NULL;
    PyObject *name;
    if (!origin || !fe_is_array_maker(obj))
        return NULL;
    name = PyObject_GetAttrString(obj, "__name__");
    if (name && PyUnicode_Check(name)) {
        const char *s = PyUnicode_AsUTF8(name);
        for (size_t i = 0; s && i < sizeof names / sizeof names[0]; i++)
            if (strncmp(names[i], origin, strlen(origin)) == 0 && strcmp(strchr(names[i], '.') + 1, s) == 0)
                r = names[i];
    }
    Py_XDECREF(name);
    PyErr_Clear();
    return r;
}

/* The dtype argument `d` of a local-array constructor as a TYPE node: a tack
 * dtype, a NumPy type or dtype, a name ('float32'), or float / int / bool
 * (NumPy's float64 and int64 for np.*, Tack's f32 and i64 for tack.*); or
 * x.dtype of an array, as an ATTRIBUTE node the compiler resolves. */
static tack_node *local_array_dtype(fe_func *f, PyObject *d, int numpy) {
    PyObject *obj = NULL, *src;
    tack_node *n = NULL;
    tack_dtype dt;
    int r;
    if (fe_is_kind(d, "Constant")) {
        obj = PyObject_GetAttrString(d, "value");
        r = obj ? 1 : -1;
    } else {
        r = fe_resolve_chain(f, d, &obj);
    }
    if (r < 0)
        return NULL;
    if (r == 0 && fe_is_kind(d, "Attribute")) { /* x.dtype of an array: the compiler knows it */
        PyObject *attr = PyObject_GetAttrString(d, "attr");
        int is_dtype = attr && PyUnicode_Check(attr) && PyUnicode_CompareWithASCIIString(attr, "dtype") == 0;
        Py_XDECREF(attr);
        PyErr_Clear();
        if (is_dtype)
            return fe_expr(f, d, 0);
    }
    if (r == 0) {
        src = fe_unparse(f, d);
        if (src)
            fe_error(f, d, "the dtype of a local array must be a constant such as np.float32, tack.f32 "
                           "or 'float32', not '%U'", src);
        Py_XDECREF(src);
        return NULL;
    }
    if (numpy && obj == (PyObject *)&PyFloat_Type)
        dt = TACK_F64, r = 0;
    else
        r = tpy_dtype_from_object(f->mc->st, obj, &dt);
    if (r < 0) {
        PyErr_Clear();
        src = fe_unparse(f, d);
        if (src)
            fe_error(f, d, "%U is not a dtype a local array can have (use np.float32, tack.f32, "
                           "'float32', ...)", src);
        Py_XDECREF(src);
    } else if ((n = fe_node(f, d, TACK_N_TYPE)) != NULL) {
        tack_node_set_int(n, (int64_t)dt);
    }
    Py_DECREF(obj);
    return n;
}

/* Whether the shape `e` of a local array is a compile-time constant: int
 * literals and module-level ints, arithmetic on them, a tuple of those at
 * the top.  0 with CompileError naming the expression that is not; -1 on
 * another error. */
static int constant_shape(fe_func *f, PyObject *e, int top) {
    PyObject *obj = NULL, *src;
    int r = 0;
    if (top && fe_is_kind(e, "Tuple")) {
        PyObject *elts = fe_get_list(e, "elts");
        if (!elts)
            return -1;
        r = 1;
        for (Py_ssize_t i = 0; r == 1 && i < PyList_GET_SIZE(elts); i++)
            r = constant_shape(f, PyList_GET_ITEM(elts, i), 0);
        Py_DECREF(elts);
        return r;
    }
    if (fe_is_kind(e, "Constant")) {
        obj = PyObject_GetAttrString(e, "value");
        r = obj && PyLong_CheckExact(obj) ? 1 : 0;
    } else if (fe_is_kind(e, "Name") || fe_is_kind(e, "Attribute")) {
        int k = fe_resolve_chain(f, e, &obj);
        if (k < 0)
            return -1;
        r = k == 1 && PyLong_CheckExact(obj);
    } else if (fe_is_kind(e, "UnaryOp") || fe_is_kind(e, "BinOp")) {
        const char *fields[2] = {"operand", NULL};
        if (fe_is_kind(e, "BinOp"))
            fields[0] = "left", fields[1] = "right";
        r = 1;
        for (int i = 0; r == 1 && i < 2 && fields[i]; i++) {
            PyObject *x = PyObject_GetAttrString(e, fields[i]);
            r = x ? constant_shape(f, x, 0) : -1;
            Py_XDECREF(x);
        }
        return r;
    }
    Py_XDECREF(obj);
    if (r == 1)
        return 1;
    if (PyErr_Occurred())
        return -1;
    if ((src = fe_unparse(f, e)) != NULL) {
        fe_error(f, e, "the shape of a local array must be a compile-time constant (int literals, "
                       "module-level int constants and arithmetic on them), and '%U' is not one; "
                       "for an array whose size the data decides, create it outside the kernel and "
                       "pass it as an argument", src);
        Py_DECREF(src);
    }
    return 0;
}

/* A local array's constructor call: CALL node `n` named `maker` with
 * [shape, fill value (full only), dtype TYPE (when given)]; the dtype may
 * also come as the keyword dtype= (and full's value as fill_value=). */
static int local_array_call(fe_func *f, PyObject *e, tack_node *n, const char *maker) {
    PyObject *args = fe_get_list(e, "args"), *kw = fe_get_list(e, "keywords");
    PyObject *slot[3] = {NULL, NULL, NULL}; /* shape, fill value (full only), dtype */
    int full = strcmp(strchr(maker, '.') + 1, "full") == 0, numpy = maker[0] == 'n', r = -1;
    int nslots = full ? 3 : 2, dts = nslots - 1;
    if (!args || !kw)
        goto done;
    if (PyList_GET_SIZE(args) > nslots) {
        fe_error(f, e, "%s() in a kernel takes the shape%s and an optional dtype", maker,
                 full ? ", the fill value" : "");
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(args); i++) {
        PyObject *a = PyList_GET_ITEM(args, i);
        if (fe_is_kind(a, "Starred")) {
            fe_error(f, a, "starred expressions (*args) are not supported in kernels");
            goto done;
        }
        slot[i] = Py_NewRef(a);
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(kw); i++) {
        PyObject *k = PyList_GET_ITEM(kw, i), *arg = PyObject_GetAttrString(k, "arg");
        const char *a = arg && arg != Py_None ? PyUnicode_AsUTF8(arg) : NULL;
        int at = a && strcmp(a, "dtype") == 0 ? dts : a && full && strcmp(a, "fill_value") == 0 ? 1 : -1;
        if (at < 0 || slot[at]) {
            if (arg && at < 0)
                fe_error(f, k, "%s() in a kernel takes only the shape%s and dtype=, not '%s='", maker,
                         full ? ", fill_value=" : "", a ? a : "**");
            else if (arg)
                fe_error(f, k, "%s() got '%s' twice", maker, a);
            Py_XDECREF(arg);
            goto done;
        }
        Py_DECREF(arg);
        if (!(slot[at] = PyObject_GetAttrString(k, "value")))
            goto done;
    }
    if (!slot[0] || (full && !slot[1])) {
        fe_error(f, e, "%s() in a kernel needs the shape%s", maker, full ? " and the fill value" : "");
        goto done;
    }
    if (constant_shape(f, slot[0], 1) != 1)
        goto done;
    for (int i = 0; i < dts; i++)
        if (fe_add(n, fe_expr(f, slot[i], 0), f) < 0)
            goto done;
    if (slot[dts] && fe_add(n, local_array_dtype(f, slot[dts], numpy), f) < 0)
        goto done;
    r = 0;
done:
    Py_XDECREF(args);
    Py_XDECREF(kw);
    for (int i = 0; i < 3; i++)
        Py_XDECREF(slot[i]);
    return r;
}

/* A call of the Kernel object `obj` (Python function `fn`): only a
 * @tack.func, walked into the module as a device function that CALL node
 * `n` names, with the defaults of the parameters the call leaves out. */
static int call_device_function(fe_func *f, PyObject *e, PyObject *func, tack_node *n,
                                PyObject *obj, PyObject *fn, int is_func) {
    PyObject *fname = PyObject_GetAttrString(fn, "__name__"), *args = NULL;
    int index = -1, r = -1;

    if (!fname)
        goto done;
    if (!is_func) {
        fe_error(f, func, "kernel '%U' cannot be called from a kernel; only @tack.func "
                          "functions can", fname);
        goto done;
    }
    if (list_contains(f->mc->in_progress, obj)) {
        fe_error(f, func, "recursion is not supported: '%U' calls itself (directly or "
                          "through other functions)", fname);
        goto done;
    }
    if (fe_function(f->mc, obj, fn, TACK_FUNC_DEVICE, &index) < 0 || fe_set_name(f, n, fname) < 0)
        goto done;
    tack_node_set_int(n, index);
    if (fe_expr_list(f, e, "args", n, 0) < 0)
        goto done;
    args = fe_get_list(e, "args");
    if (!args || add_func_defaults(f, e, n, fn, fname, PyList_GET_SIZE(args)) < 0)
        goto done;
    f->last_intrinsic = NULL;
    r = 0;
done:
    Py_XDECREF(fname);
    Py_XDECREF(args);
    return r;
}

/* The arguments of tack.ndrange(...): as any call's, except that a single
 * starred argument, ndrange(*a.shape), is the shape itself: ndrange(a.shape)
 * means the same (the compiler expands a shape into its axes). */
static int ndrange_args(fe_func *f, PyObject *e, tack_node *n) {
    PyObject *args = fe_get_list(e, "args");
    int r;
    if (!args)
        return -1;
    r = 0;
    for (Py_ssize_t i = 0; PyList_GET_SIZE(args) > 1 && i < PyList_GET_SIZE(args); i++)
        if (fe_is_kind(PyList_GET_ITEM(args, i), "Starred"))
            r = fe_error(f, PyList_GET_ITEM(args, i), "a starred shape must be ndrange()'s only "
                         "argument: ndrange(*a.shape) (or ndrange(a.shape))");
    if (r < 0)
        ;
    else if (PyList_GET_SIZE(args) == 1 && fe_is_kind(PyList_GET_ITEM(args, 0), "Starred"))
        r = fe_add(n, fe_field(f, PyList_GET_ITEM(args, 0), "value", 0), f);
    else
        r = fe_expr_list(f, e, "args", n, 0);
    Py_DECREF(args);
    return r;
}

/* Call: a @tack.func, a dtype (a cast: f32(x)) or an intrinsic, by what the
 * callee resolves to; the CALL node names it (index -1 for all but a
 * device function). */
/* float("inf"), float("-inf"), float("nan") (any string Python's float()
 * takes): the argument converted now, a float literal the cast then takes,
 * as float(1e300) would.  1 when `e` is such a call (the literal added to
 * `n`), 0 when it is not, -1 with CompileError for a string float() refuses. */
static int float_of_string(fe_func *f, PyObject *e, PyObject *obj, tack_node *n) {
    PyObject *args, *a, *v = NULL, *x;
    int r = 0;
    if (obj != (PyObject *)&PyFloat_Type || !(args = fe_get_list(e, "args")))
        return PyErr_Occurred() ? -1 : 0;
    a = PyList_GET_SIZE(args) == 1 ? PyList_GET_ITEM(args, 0) : NULL;
    if (a && fe_is_kind(a, "Constant") && (v = PyObject_GetAttrString(a, "value")) != NULL &&
        PyUnicode_Check(v)) {
        x = PyFloat_FromString(v);
        if (!x) {
            PyErr_Clear();
            r = fe_error(f, a, "could not convert string to float: %R", v);
        } else {
            r = fe_add(n, fe_value_node(f, a, x), f) < 0 ? -1 : 1;
            Py_DECREF(x);
        }
    }
    if (!v)
        PyErr_Clear();
    Py_XDECREF(v);
    Py_DECREF(args);
    return r;
}

static tack_node *fe_call(fe_func *f, PyObject *e, int flags) {
    PyObject *func = NULL, *obj = NULL, *fn = NULL, *width = NULL;
    tack_node *n = NULL, *result = NULL;
    const char *iname;
    int is_func = 0, r, dt;

    (void)flags;
    func = PyObject_GetAttrString(e, "func");
    if (!func)
        goto done;
    r = fe_resolve_chain(f, func, &obj);
    if (r == 0 && fe_is_kind(func, "Attribute")) { /* z.conjugate(), m.transpose(), v.dot(w) */
        int found = fe_numpy_method(f, e, func, &result);
        if (found != 0)
            goto done;
    }
    if (r <= 0) {
        if (r == 0 && no_keywords(f, e) == 0)
            fe_refuse_local_callee(f, func);
        goto done;
    }
    n = fe_node(f, e, TACK_N_CALL);
    if (!n)
        goto done;
    if ((iname = local_array_maker(f, obj)) != NULL) { /* a local array: lower_local.c */
        if (tack_node_set_name(f->mc->mod, n, iname) != TACK_OK) {
            tpy_raise();
            goto done;
        }
        tack_node_set_int(n, -1);
        if (local_array_call(f, e, n, iname) == 0)
            result = n;
        goto done;
    }
    if (shuffle_width(f, e, obj, &width) < 0 || (!width && no_keywords(f, e) < 0))
        goto done;
    r = tpy_kernel_unwrap(f->mc->st, obj, &fn, &is_func);
    if (r < 0)
        goto done;
    if (r == 1) {
        if (call_device_function(f, e, func, n, obj, fn, is_func) == 0)
            result = n;
        goto done;
    }
    dt = fe_dtype_of(f, obj);
    iname = dt >= 0 ? tack_dtype_get((tack_dtype)dt)->name : fe_intrinsic_name(f, obj);
    if (!iname) {
        fe_refuse_callee(f, func, obj);
        goto done;
    }
    if (tack_node_set_name(f->mc->mod, n, iname) != TACK_OK) {
        tpy_raise();
        goto done;
    }
    tack_node_set_int(n, -1);
    if (dt < 0 && fe_math_module_function(obj, iname))
        tack_node_set_float(n, 1.0); /* math.sqrt: takes scalars, where tack.sqrt takes vectors too */
    if (strcmp(iname, "ndrange") == 0) {
        if (ndrange_args(f, e, n) < 0)
            goto done;
    } else if ((r = float_of_string(f, e, obj, n)) != 0) {
        if (r < 0)
            goto done;
    } else if (fe_expr_list(f, e, "args", n, strcmp(iname, "print") == 0 ? FE_ALLOW_STR : 0) < 0 ||
               (width && fe_add(n, fe_expr(f, width, 0), f) < 0)) {
        goto done;
    }
    f->last_intrinsic = iname;
    result = n;
done:
    Py_XDECREF(func);
    Py_XDECREF(obj);
    Py_XDECREF(width);
    return result;
}

/* ------------------------------------------------------ expression kinds */

/* Name: a free name is a value from the environment, a local a NAME node. */
static tack_node *ex_name(fe_func *f, PyObject *e, int flags) {
    PyObject *obj = NULL, *id = NULL;
    tack_node *n = NULL;
    int r = fe_resolve_chain(f, e, &obj);

    (void)flags;
    if (r == 1) {
        n = fe_value_node(f, e, obj);
    } else if (r == 0) {
        int found = 0;
        id = PyObject_GetAttrString(e, "id");
        if (id && f->n_unrolled > 0 && ((n = fe_unrolled_name(f, id, &found)) != NULL || found)) {
            Py_XDECREF(obj);
            Py_DECREF(id);
            return n;
        }
        n = id ? fe_node(f, e, TACK_N_NAME) : NULL;
        if (n && fe_set_name(f, n, id) < 0)
            n = NULL;
    }
    Py_XDECREF(obj);
    Py_XDECREF(id);
    return n;
}

/* Attribute: of a module, a value from the environment (math.pi); of a
 * local, an ATTRIBUTE node (v.x, a.shape). */
static tack_node *ex_attribute(fe_func *f, PyObject *e, int flags) {
    PyObject *obj = NULL, *attr = NULL;
    tack_node *n = NULL;
    int r = fe_resolve_chain(f, e, &obj);

    (void)flags;
    if (r == 1) {
        n = fe_value_node(f, e, obj);
    } else if (r == 0) {
        attr = PyObject_GetAttrString(e, "attr");
        n = attr ? fe_node(f, e, TACK_N_ATTRIBUTE) : NULL;
        if (n && (fe_set_name(f, n, attr) < 0 || fe_add(n, fe_field(f, e, "value", 0), f) < 0))
            n = NULL;
    }
    Py_XDECREF(obj);
    Py_XDECREF(attr);
    return n;
}

static tack_node *ex_binop(fe_func *f, PyObject *e, int flags) {
    tack_node *n = NULL;
    tack_op op;

    (void)flags;
    if (fe_op(f, e, &op) == 0 && (n = fe_node(f, e, TACK_N_BINOP)) != NULL) {
        tack_node_set_op(n, op);
        if (fe_add(n, fe_field(f, e, "left", 0), f) < 0 ||
            fe_add(n, fe_field(f, e, "right", 0), f) < 0)
            n = NULL;
    }
    return n;
}

static tack_node *ex_unaryop(fe_func *f, PyObject *e, int flags) {
    tack_node *n = NULL;
    tack_op op;

    (void)flags;
    if (fe_op(f, e, &op) == 0 && (n = fe_node(f, e, TACK_N_UNARYOP)) != NULL) {
        tack_node_set_op(n, op);
        if (fe_add(n, fe_field(f, e, "operand", 0), f) < 0)
            n = NULL;
    }
    return n;
}

static tack_node *ex_boolop(fe_func *f, PyObject *e, int flags) {
    tack_node *n = NULL;
    tack_op op;

    (void)flags;
    if (fe_op(f, e, &op) == 0 && (n = fe_node(f, e, TACK_N_BOOLOP)) != NULL) {
        tack_node_set_op(n, op);
        if (fe_expr_list(f, e, "values", n, 0) < 0)
            n = NULL;
    }
    return n;
}

/* The comparisons a kernel refuses, as Python spells them. */
static const struct {
    const char *kind;
    const char *symbol;
} refused_compares[] = {
    {"In", "in"},
    {"NotIn", "not in"},
    {"Is", "is"},
    {"IsNot", "is not"},
};

/* Compare: [left, comparators...] with one op per comparator (a < b < c). */
static tack_node *ex_compare(fe_func *f, PyObject *e, int flags) {
    PyObject *ops = fe_get_list(e, "ops");
    tack_node *n = NULL;

    (void)flags;
    if (ops && (n = fe_node(f, e, TACK_N_COMPARE)) != NULL) {
        if (fe_add(n, fe_field(f, e, "left", 0), f) < 0 ||
            fe_expr_list(f, e, "comparators", n, 0) < 0)
            n = NULL;
        for (Py_ssize_t i = 0; n && i < PyList_GET_SIZE(ops); i++) {
            PyObject *o = PyList_GET_ITEM(ops, i);
            tack_op cop = op_of(o);
            if (cop == TACK_OP_NONE) {
                const char *ok = fe_kind(o), *sym = "is not";
                for (size_t j = 0; j < sizeof refused_compares / sizeof refused_compares[0]; j++)
                    if (strcmp(refused_compares[j].kind, ok) == 0)
                        sym = refused_compares[j].symbol;
                fe_error(f, e, "the '%s' comparison is not supported in kernels", sym);
                n = NULL;
            } else if (tack_node_add_op(f->mc->mod, n, cop) != TACK_OK) {
                tpy_raise();
                n = NULL;
            }
        }
    }
    Py_XDECREF(ops);
    return n;
}

static tack_node *ex_ifexp(fe_func *f, PyObject *e, int flags) {
    tack_node *n = fe_node(f, e, TACK_N_IFEXP);

    (void)flags;
    if (n && (fe_add(n, fe_field(f, e, "test", 0), f) < 0 ||
              fe_add(n, fe_field(f, e, "body", 0), f) < 0 ||
              fe_add(n, fe_field(f, e, "orelse", 0), f) < 0))
        n = NULL;
    return n;
}

static tack_node *ex_subscript(fe_func *f, PyObject *e, int flags) {
    (void)flags;
    return fe_subscript(f, e);
}

static tack_node *ex_tuple(fe_func *f, PyObject *e, int flags) {
    tack_node *n = fe_node(f, e, TACK_N_TUPLE);

    (void)flags;
    if (n && fe_expr_list(f, e, "elts", n, 0) < 0)
        n = NULL;
    return n;
}

typedef tack_node *(*expr_walk)(fe_func *f, PyObject *e, int flags);

/* Every expression kind the walk knows: a walk function, or the subject of
 * the refusal "... not supported in kernels". */
static const struct {
    const char *kind;
    expr_walk walk;
    const char *refused;
} expr_kinds[] = {
    {"Name", ex_name, NULL},
    {"Constant", fe_constant, NULL},
    {"Subscript", ex_subscript, NULL},
    {"BinOp", ex_binop, NULL},
    {"Attribute", ex_attribute, NULL},
    {"Call", fe_call, NULL},
    {"Compare", ex_compare, NULL},
    {"UnaryOp", ex_unaryop, NULL},
    {"BoolOp", ex_boolop, NULL},
    {"IfExp", ex_ifexp, NULL},
    {"Tuple", ex_tuple, NULL},
    {"List", NULL, "lists are"},
    {"Dict", NULL, "dicts are"},
    {"Set", NULL, "sets are"},
    {"ListComp", NULL, "list comprehensions are"},
    {"SetComp", NULL, "set comprehensions are"},
    {"DictComp", NULL, "dict comprehensions are"},
    {"GeneratorExp", NULL, "generator expressions are"},
    {"Lambda", NULL, "lambdas are"},
    {"JoinedStr", NULL, "f-strings are"},
    {"FormattedValue", NULL, "f-strings are"},
    {"NamedExpr", NULL, "assignment expressions (:=) are"},
    {"Starred", NULL, "starred expressions are"},
    {"Await", NULL, "await is"},
    {"Yield", NULL, "yield is"},
    {"YieldFrom", NULL, "yield from is"},
    {"Slice", NULL, "slices are"},
};

tack_node *fe_expr(fe_func *f, PyObject *e, int flags) {
    const char *k = fe_kind(e);
    size_t i = 0, count = sizeof expr_kinds / sizeof expr_kinds[0];
    tack_node *n = NULL;

    while (i < count && strcmp(expr_kinds[i].kind, k) != 0)
        i++;
    if (Py_EnterRecursiveCall(" while compiling a kernel expression"))
        return NULL;
    f->depth++;
    if (f->depth > FE_MAX_DEPTH)
        fe_error(f, e, "this expression is nested more than %d levels deep (a limit of Tack's, so the C "
                       "compiler can take it); split it into statements with temporaries", FE_MAX_DEPTH);
    else if (++f->mc->nodes > FE_MAX_NODES)
        fe_error(f, e, "this kernel has more than %d expressions (a limit of Tack's, so the C compiler "
                       "can take it); split it into several kernels or loops", FE_MAX_NODES);
    else if (i == count)
        fe_error(f, e, "this expression (%s) is not supported in kernels", k);
    else if (!expr_kinds[i].walk)
        fe_error(f, e, "%s not supported in kernels", expr_kinds[i].refused);
    else
        n = expr_kinds[i].walk(f, e, flags);
    f->depth--;
    Py_LeaveRecursiveCall();
    if (!n && !PyErr_Occurred())
        tpy_raise();
    return n;
}

/* ------------------------------------------------------------ annotations */

/* An annotation: a tack dtype, or int/float/bool (i64/f32/bool). */
tack_node *fe_annotation(fe_func *f, PyObject *ann) {
    PyObject *obj = NULL;
    tack_node *n = NULL;
    int id = -1;
    int r = fe_resolve_chain(f, ann, &obj);
    if (r < 0)
        return NULL;
    if (r == 1) {
        id = fe_dtype_of(f, obj);
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
        PyObject *src = fe_unparse(f, ann);
        fe_error(f, ann, "annotation '%U' is not a tack dtype; annotate with tack.f32, tack.i64, "
                         "tack.vec3, ... (or int, float, bool)", src);
        Py_XDECREF(src);
    } else if ((n = fe_node(f, ann, TACK_N_TYPE)) != NULL) {
        tack_node_set_int(n, id);
    }
    Py_XDECREF(obj);
    return n;
}
