/*
 * frontend_env.c -- where a kernel meets its Python environment.
 *
 * A kernel body names things it does not define: math.sqrt, tack.f32, a
 * module-level constant N, a @tack.func helper, a value captured from an
 * enclosing function.  Python would look those up on every execution; the
 * front end looks them up now, once, in Python's order -- closure cells,
 * then the function's globals, then its builtins -- and freezes what it
 * finds into the kernel:
 *
 *   int / float / bool values      -> constants, frozen at the first compile
 *   NumPy scalars (np.float32(.5)) -> a cast keeping their dtype
 *   math.* / tack.* / builtins     -> intrinsic calls, recognized by identity
 *                                      through the registry that tack._intrinsics
 *                                      hands over with _core._set_intrinsics (a
 *                                      math.* call marked: it takes scalars only)
 *   np.sqrt & co                   -> the same, named "numpy.sqrt" (NumPy's
 *                                      types for integers); the registry gets
 *                                      them once the program imports NumPy
 *   dtype objects (tack.f32) and
 *   NumPy scalar types (np.int64)  -> a cast when called, TYPE otherwise
 *   @tack.func objects             -> device functions (frontend_expr.c)
 *   modules                        -> followed through attribute chains
 *                                      (math.pi, tack.vec3, np.pi, ...)
 *
 * Anything else is refused with a CompileError that says what the object
 * is and what would work instead.
 *
 * Frozen is not forgotten: every value the module takes in (a number, a
 * NumPy scalar, a dtype, a @tack.func) is recorded with where it was found
 * -- a name in a dict (globals, a module's __dict__, builtins), a closure
 * cell, or a getattr -- in fe_module.captures.  Each call of the kernel
 * looks those places up again (kernel_captures.c) and compiles anew for
 * values that changed, so a kernel never runs with a value the program has
 * since replaced.
 *
 * Which names are free is Python's rule too: a name bound anywhere in the
 * function (a parameter, an assignment target, a for target) is local to
 * the whole function, so collect_locals() walks the body for binding
 * statements before the walk proper starts, and a local never resolves.
 */
#include "frontend.h"

/* ---------------------------------------------------------- resolution */

/* Look a free name up as Python would from inside the function: closure
 * cells, globals, builtins.  1 found (*out new ref; *kind and *where, borrowed,
 * say where: TPY_CAP_*), 0 not defined, -1 error. */
static int resolve_name(fe_func *f, PyObject *pynode, PyObject *name, PyObject **out, int *kind,
                        PyObject **where) {
    PyObject *v;
    *out = NULL;
    if (f->cells) {
        PyObject *cell = PyDict_GetItemWithError(f->cells, name);
        if (cell) {
            *kind = TPY_CAP_CELL;
            *where = cell;
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
        *kind = TPY_CAP_DICT;
        *where = f->globals;
        *out = Py_NewRef(v);
        return 1;
    }
    if (PyErr_Occurred())
        return -1;
    if (f->builtins) {
        if (PyDict_Check(f->builtins)) {
            v = PyDict_GetItemWithError(f->builtins, name);
            if (v) {
                *kind = TPY_CAP_DICT;
                *where = f->builtins;
                *out = Py_NewRef(v);
                return 1;
            }
            if (PyErr_Occurred())
                return -1;
        } else {
            v = PyObject_GetAttr(f->builtins, name);
            if (v) {
                *kind = TPY_CAP_ATTR;
                *where = f->builtins;
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

static int numpy_scalar_dtype(fe_func *f, PyObject *obj, tack_dtype *dt);

/* Record that the module froze `value`, found under `key` in `where` (kind
 * TPY_CAP_*), when it is a value a kernel can freeze: a number, a NumPy
 * scalar, a dtype or a @tack.func (modules and intrinsics are not values
 * that change).  Each place once.  0, or -1 with an exception. */
static int capture(fe_func *f, int kind, PyObject *where, PyObject *key, PyObject *value) {
    PyObject *list = f->mc->captures, *t;
    tack_dtype dt;
    int r;
    if (!list)
        return 0;
    if (!(PyBool_Check(value) || PyLong_Check(value) || PyFloat_Check(value) ||
          PyComplex_Check(value) || tpy_kernel_unwrap(f->mc->st, value, NULL, NULL) == 1 ||
          fe_dtype_of(f, value) >= 0 || numpy_scalar_dtype(f, value, &dt)))
        return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *c = PyList_GET_ITEM(list, i);
        if (PyTuple_GET_ITEM(c, 1) == where) {
            r = PyObject_RichCompareBool(PyTuple_GET_ITEM(c, 2), key, Py_EQ);
            if (r != 0)
                return r < 0 ? -1 : 0;
        }
    }
    t = Py_BuildValue("(iOOO)", kind, where, key, value);
    r = t ? PyList_Append(list, t) : -1;
    Py_XDECREF(t);
    return r;
}

/* What follows "module 'm' has no attribute 'a'" in a kernel's error, with
 * the module's AttributeError pending (cleared here): the hint the module's
 * own message adds after that text (tack's __getattr__ gives Warp's names
 * their Tack spelling: "...'length_sq': Warp's wp.length_sq(v) is
 * tack.dot(v, v)"), the prange hint, or "".  A new reference, never NULL
 * unless memory ran out. */
static PyObject *attr_hint(PyObject *attr) {
    PyObject *exc, *msg = NULL, *needle = NULL, *hint = NULL;
#if PY_VERSION_HEX >= 0x030C0000
    exc = PyErr_GetRaisedException();
#else
    PyObject *etype, *etb;
    PyErr_Fetch(&etype, &exc, &etb);
    PyErr_NormalizeException(&etype, &exc, &etb);
    Py_XDECREF(etype);
    Py_XDECREF(etb);
#endif
    if (exc && (msg = PyObject_Str(exc)) && (needle = PyUnicode_FromFormat("has no attribute '%U':", attr))) {
        Py_ssize_t at = PyUnicode_Find(msg, needle, 0, PyUnicode_GetLength(msg), 1);
        if (at >= 0) /* from the colon on */
            hint = PyUnicode_Substring(msg, at + PyUnicode_GetLength(needle) - 1, PyUnicode_GetLength(msg));
    }
    PyErr_Clear();
    Py_XDECREF(exc);
    Py_XDECREF(msg);
    Py_XDECREF(needle);
    if (hint)
        return hint;
    return PyUnicode_FromString(PyUnicode_CompareWithASCIIString(attr, "prange") == 0
                                    ? ": a kernel needs no prange, since every for loop over range(...) at "
                                      "the top level of a kernel is parallel; write range(...)"
                                    : "");
}

/* If `e` is a free name, or attributes of modules reached from one
 * (math.pi, tack.f32, np.random...), the object it denotes: 1 with *out (new
 * ref).  0 when `e` starts from a local or is another kind of expression.
 * -1 with CompileError set. */
int fe_resolve_chain(fe_func *f, PyObject *e, PyObject **out) {
    *out = NULL;
    if (fe_is_kind(e, "Name")) {
        PyObject *id = PyObject_GetAttrString(e, "id"), *where = NULL;
        int r, kind = TPY_CAP_DICT;
        if (!id)
            return -1;
        r = PySet_Contains(f->locals, id);
        if (r != 0) {
            Py_DECREF(id);
            return r < 0 ? -1 : 0;
        }
        r = resolve_name(f, e, id, out, &kind, &where);
        if (r == 0)
            fe_error(f, e, "name '%U' is not defined", id);
        if (r == 1 && capture(f, kind, where, id, *out) < 0)
            r = -1;
        Py_DECREF(id);
        if (r != 1)
            Py_CLEAR(*out);
        return r == 1 ? 1 : -1;
    }
    if (fe_is_kind(e, "Attribute")) {
        PyObject *base = NULL, *value = PyObject_GetAttrString(e, "value"), *attr = NULL;
        int r = -1;
        if (!value)
            return -1;
        r = fe_resolve_chain(f, value, &base);
        if (r <= 0)
            goto done;
        r = -1;
        attr = PyObject_GetAttrString(e, "attr");
        if (!attr)
            goto done;
        if (!PyModule_Check(base)) {
            PyObject *src = fe_unparse(f, value);
            fe_error(f, e, "'%U.%U': only attributes of modules (such as math.pi or tack.f32) "
                           "can be used in a kernel; '%U' is a %s",
                     src, attr, src, Py_TYPE(base)->tp_name);
            Py_XDECREF(src);
            goto done;
        }
        {
            /* A module's attribute lives in its __dict__, where each call
             * can look it up again cheaply; else (a module __getattr__) the
             * call repeats the getattr. */
            PyObject *dict = PyModule_GetDict(base), *v;
            v = dict ? PyDict_GetItemWithError(dict, attr) : NULL;
            if (v) {
                *out = Py_NewRef(v);
                r = capture(f, TPY_CAP_DICT, dict, attr, v) < 0 ? -1 : 1;
                if (r < 0)
                    Py_CLEAR(*out);
                goto done;
            }
            if (PyErr_Occurred())
                goto done;
        }
        *out = PyObject_GetAttr(base, attr);
        if (*out && capture(f, TPY_CAP_ATTR, base, attr, *out) < 0) {
            Py_CLEAR(*out);
            goto done;
        }
        if (!*out) {
            if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
                PyObject *hint = attr_hint(attr), *src = fe_unparse(f, value); /* the hint first: it reads the error */
                if (src && hint)
                    fe_error(f, e, "module '%U' has no attribute '%U'%U", src, attr, hint);
                Py_XDECREF(src);
                Py_XDECREF(hint);
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

/* ----------------------------------------------------------------- values */

/* NumPy, when the program has imported it (borrowed), else NULL: a kernel
 * can only name NumPy's objects once its module has imported NumPy. */
PyObject *fe_numpy(fe_func *f) {
    PyObject *np = f->mc->st->numpy;
    return np ? np : PyDict_GetItemString(PyImport_GetModuleDict(), "numpy");
}

/* 1 when `obj` is a NumPy scalar type (np.float32, np.int64, ...); 0 else. */
static int is_numpy_type(fe_func *f, PyObject *obj) {
    PyObject *np, *generic;
    int r;
    if (!PyType_Check(obj) || !(np = fe_numpy(f)))
        return 0;
    generic = PyObject_GetAttrString(np, "generic");
    r = generic && PyType_Check(generic) ? PyObject_IsSubclass(obj, generic) : 0;
    Py_XDECREF(generic);
    if (r < 0)
        PyErr_Clear();
    return r == 1;
}

/* The DType id of `obj` -- a tack dtype object, or a NumPy scalar type of a
 * dtype Tack has (np.float32 is tack.f32: a cast when called, a type in an
 * annotation) -- or -1. */
int fe_dtype_of(fe_func *f, PyObject *obj) {
    tpy_state *st = f->mc->st;
    tack_dtype dt;
    if (st->DTypeType && PyObject_TypeCheck(obj, st->DTypeType))
        return (int)((TackDTypeObject *)obj)->id;
    if (is_numpy_type(f, obj)) {
        if (tpy_dtype_from_object(st, obj, &dt) == 0)
            return (int)dt;
        PyErr_Clear();
    }
    return -1;
}

/* Whether intrinsic `obj` is the math module's function of its name (math.sqrt, not tack.sqrt or np.sqrt):
 * Python's math module takes scalars, so lower_call.c refuses it a vector. */
int fe_math_module_function(PyObject *obj, const char *iname) {
    PyObject *math = PyImport_ImportModule("math"), *f;
    int r = 0;
    if (!math) {
        PyErr_Clear();
        return 0;
    }
    f = PyObject_GetAttrString(math, iname);
    if (!f)
        PyErr_Clear();
    r = f == obj;
    Py_XDECREF(f);
    Py_DECREF(math);
    return r;
}

/* The intrinsic name of `obj` from the registry (borrowed, valid while the
 * registry lives), or NULL (no exception) if it is not an intrinsic. */
const char *fe_intrinsic_name(fe_func *f, PyObject *obj) {
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
static int numpy_scalar_dtype(fe_func *f, PyObject *obj, tack_dtype *dt) {
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
    if (tpy_dtype_from_object(f->mc->st, dtype, dt) == 0)
        r = 1;
done:
    if (PyErr_Occurred())
        PyErr_Clear();
    Py_XDECREF(generic);
    Py_XDECREF(dtype);
    return r < 0 ? 0 : r;
}

/* Describe an object that cannot be used as a value in a kernel. */
static int refuse_object(fe_func *f, PyObject *e, PyObject *obj) {
    tpy_state *st = f->mc->st;
    PyObject *src = fe_unparse(f, e);
    int r;
    if (!src)
        return -1;
    if (tpy_kernel_unwrap(st, obj, NULL, NULL) == 1 || fe_intrinsic_name(f, obj) ||
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
static tack_node *int_node(fe_func *f, PyObject *e, PyObject *v) {
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

/* A complex number (re, im) as the call complex(re, im) -- a Python complex
 * literal, weak like a Python float (complex.c). */
static tack_node *complex_node(fe_func *f, PyObject *e, double re, double im) {
    tack_node *n = fe_node(f, e, TACK_N_CALL), *a, *b;
    if (!n || tack_node_set_name(f->mc->mod, n, "complex") != TACK_OK) {
        if (!PyErr_Occurred())
            tpy_raise();
        return NULL;
    }
    tack_node_set_int(n, -1);
    if (!(a = fe_node(f, e, TACK_N_CONST_FLOAT)) || !(b = fe_node(f, e, TACK_N_CONST_FLOAT)))
        return NULL;
    tack_node_set_float(a, re);
    tack_node_set_float(b, im);
    if (fe_add(n, a, f) < 0 || fe_add(n, b, f) < 0)
        return NULL;
    return n;
}

/* The node for a Python object named by expression `e` (a free name or a
 * module attribute) used as a value. */
tack_node *fe_value_node(fe_func *f, PyObject *e, PyObject *obj) {
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
    /* A Python float is weak; np.float64 subclasses float but is a NumPy scalar, strong f64
     * (below), as it is when passed as an argument and in debug mode. */
    if (PyFloat_CheckExact(obj) || (PyFloat_Check(obj) && !numpy_scalar_dtype(f, obj, &dt))) {
        n = fe_node(f, e, TACK_N_CONST_FLOAT);
        if (n)
            tack_node_set_float(n, PyFloat_AS_DOUBLE(obj));
        return n;
    }
    if (PyComplex_CheckExact(obj))
        return complex_node(f, e, PyComplex_RealAsDouble(obj), PyComplex_ImagAsDouble(obj));
    id = fe_dtype_of(f, obj);
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
        } else if (info->kind == TACK_KIND_COMPLEX) {
            Py_complex z = PyComplex_AsCComplex(obj);
            if (PyErr_Occurred())
                return NULL;
            c = complex_node(f, e, z.real, z.imag);
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
            tpy_raise();
        return NULL;
    }
    refuse_object(f, e, obj);
    return NULL;
}

/* ------------------------------------------------------- local names */

/* Add the names bound by assignment target `t` to the set. */
static int collect_target(PyObject *t, PyObject *set) {
    int r = 0;
    if (fe_is_kind(t, "Name")) {
        PyObject *id = PyObject_GetAttrString(t, "id");
        if (!id)
            return -1;
        r = PySet_Add(set, id);
        Py_DECREF(id);
    } else if (fe_is_kind(t, "Tuple") || fe_is_kind(t, "List")) {
        PyObject *elts = fe_get_list(t, "elts");
        if (!elts)
            return -1;
        for (Py_ssize_t i = 0; r == 0 && i < PyList_GET_SIZE(elts); i++)
            r = collect_target(PyList_GET_ITEM(elts, i), set);
        Py_DECREF(elts);
    } else if (fe_is_kind(t, "Starred")) {
        PyObject *v = PyObject_GetAttrString(t, "value");
        if (!v)
            return -1;
        r = collect_target(v, set);
        Py_DECREF(v);
    }
    return r;
}

/* What a statement kind binds, for collect_locals. */
enum {
    BINDS_TARGETS = 1, /* the list field `targets` (Assign) */
    BINDS_TARGET = 2,  /* the field `target` (AugAssign, AnnAssign, For) */
    HAS_BODIES = 4,    /* nested statement lists: body, orelse, finalbody */
};

static const struct {
    const char *kind;
    int what;
} binding_stmts[] = {
    {"Assign", BINDS_TARGETS},
    {"AugAssign", BINDS_TARGET},
    {"AnnAssign", BINDS_TARGET},
    {"For", BINDS_TARGET | HAS_BODIES},
    {"If", HAS_BODIES},
    {"While", HAS_BODIES},
    {"With", HAS_BODIES},
    {"Try", HAS_BODIES},
};

static int binding_of(PyObject *s) {
    const char *k = fe_kind(s);
    for (size_t i = 0; i < sizeof binding_stmts / sizeof binding_stmts[0]; i++)
        if (strcmp(binding_stmts[i].kind, k) == 0)
            return binding_stmts[i].what;
    return 0;
}

/* Python's rule: a name bound anywhere in the function body is local to it.
 * Walk the statements (not nested scopes) for the names they bind. */
static int collect_locals(PyObject *stmts, PyObject *set) {
    static const char *bodies[] = {"body", "orelse", "finalbody"};
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(stmts); i++) {
        PyObject *s = PyList_GET_ITEM(stmts, i);
        int what = binding_of(s);
        if (what & BINDS_TARGETS) {
            PyObject *targets = fe_get_list(s, "targets");
            if (!targets)
                return -1;
            for (Py_ssize_t j = 0; j < PyList_GET_SIZE(targets); j++)
                if (collect_target(PyList_GET_ITEM(targets, j), set) < 0) {
                    Py_DECREF(targets);
                    return -1;
                }
            Py_DECREF(targets);
        } else if (what & BINDS_TARGET) {
            PyObject *t = PyObject_GetAttrString(s, "target");
            int r = t ? collect_target(t, set) : -1;
            Py_XDECREF(t);
            if (r < 0)
                return -1;
        }
        if (what & HAS_BODIES) {
            for (size_t b = 0; b < 3; b++) {
                PyObject *list;
                if (!PyObject_HasAttrString(s, bodies[b]))
                    continue;
                list = fe_get_list(s, bodies[b]);
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

/* ------------------------------------------------------------ environment */

/* The environment of `fn` into f: globals (borrowed), builtins (the
 * function's, else its globals' __builtins__, else the builtins module),
 * closure cells by free variable name, and the locals -- the parameters and
 * every name `body` binds.  The caller releases the references in f. */
int fe_env_init(fe_func *f, PyObject *fn, PyObject *body) {
    PyObject *code = PyFunction_GetCode(fn); /* borrowed */
    PyObject *closure = PyFunction_GetClosure(fn), *freevars = NULL, *varnames = NULL;
    int r = -1;

    f->globals = PyFunction_GetGlobals(fn);
    f->builtins = PyObject_GetAttrString(fn, "__builtins__");
    if (!f->builtins) {
        PyObject *b;
        PyErr_Clear();
        b = PyDict_GetItemString(f->globals, "__builtins__");
        f->builtins = b ? Py_NewRef(b) : PyImport_ImportModule("builtins");
        if (!f->builtins)
            goto done;
    }
    if (closure && closure != Py_None) {
        freevars = PyObject_GetAttrString(code, "co_freevars");
        if (!freevars)
            goto done;
        f->cells = PyDict_New();
        if (!f->cells)
            goto done;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(freevars) && i < PyTuple_GET_SIZE(closure); i++)
            if (PyDict_SetItem(f->cells, PyTuple_GET_ITEM(freevars, i), PyTuple_GET_ITEM(closure, i)) < 0)
                goto done;
    }
    f->locals = PySet_New(NULL);
    if (!f->locals)
        goto done;
    varnames = PyObject_GetAttrString(code, "co_varnames");
    if (!varnames)
        goto done;
    for (int i = 0; i < ((PyCodeObject *)code)->co_argcount && i < PyTuple_GET_SIZE(varnames); i++)
        if (PySet_Add(f->locals, PyTuple_GET_ITEM(varnames, i)) < 0)
            goto done;
    if (collect_locals(body, f->locals) < 0)
        goto done;
    r = 0;
done:
    Py_XDECREF(freevars);
    Py_XDECREF(varnames);
    return r;
}
