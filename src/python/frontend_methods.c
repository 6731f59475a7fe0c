/*
 * frontend_methods.c -- method calls on a kernel's values.
 *
 * A kernel calls functions, not methods, with the exceptions NumPy's arrays
 * have for the same operations (docs/language.md, "Matrix and vector
 * functions"): z.conjugate(), m.transpose(), m.trace() become the calls of
 * conjugate, transpose and trace (a vector's transpose() is the vector, as
 * a 1-D array's is: the CALL node carries the mark 2.0, which lowering reads),
 * and x.dot(y) becomes x @ y, NumPy's dot of 1-D and 2-D operands.  (m.T is
 * an attribute, resolved by type in lowering, so a struct's field named T
 * keeps its meaning.)  Any other method call is refused; where the name is
 * Taichi's or Warp's for one of Tack's functions (v.norm(), v.normalized(),
 * v.outer_product(w) ...) the message names the function to write.
 */
#include "frontend.h"

/* The methods of a NumPy array that a kernel's values have, each a spelling of a call
 * (docs/language.md, "Matrix and vector functions"): z.conjugate() is conjugate(z),
 * m.transpose() transpose(m) (of a vector, the vector, as NumPy's), m.trace() trace(m), and
 * x.dot(y) is x @ y, which is NumPy's dot of 1-D and 2-D operands. */
static const struct {
    const char *method, *call; /* call NULL: the matmul operator */
    int nargs;
} numpy_methods[] = {
    {"conjugate", "conjugate", 0},
    {"transpose", "transpose", 0},
    {"trace", "trace", 0},
    {"dot", NULL, 1},
};

/* 1 with *result the node (NULL after an error) when the call e of the attribute func is one of
 * numpy_methods, given its number of arguments and no keywords; 0 when it is not. */
int fe_numpy_method(fe_func *f, PyObject *e, PyObject *func, tack_node **result) {
    PyObject *attr = PyObject_GetAttrString(func, "attr"), *args = fe_get_list(e, "args");
    PyObject *kw = fe_get_list(e, "keywords");
    int m = -1;
    tack_node *n = NULL;
    size_t count = sizeof numpy_methods / sizeof *numpy_methods;
    for (size_t i = 0; attr && args && kw && PyUnicode_Check(attr) && i < count; i++)
        if (PyUnicode_CompareWithASCIIString(attr, numpy_methods[i].method) == 0 &&
            PyList_GET_SIZE(args) == numpy_methods[i].nargs && PyList_GET_SIZE(kw) == 0)
            m = (int)i;
    Py_XDECREF(attr);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    PyErr_Clear();
    *result = NULL;
    if (m < 0)
        return 0;
    if (!numpy_methods[m].call) {
        n = fe_node(f, e, TACK_N_BINOP);
        if (n) {
            PyObject *a = fe_get_list(e, "args");
            tack_node_set_op(n, TACK_OP_MATMUL);
            if (!a || fe_add(n, fe_field(f, func, "value", 0), f) < 0 ||
                fe_add(n, fe_expr(f, PyList_GET_ITEM(a, 0), 0), f) < 0)
                n = NULL;
            Py_XDECREF(a);
        }
    } else if ((n = fe_node(f, e, TACK_N_CALL)) != NULL) {
        if (tack_node_set_name(f->mc->mod, n, numpy_methods[m].call) != TACK_OK) {
            tpy_raise();
            n = NULL;
        } else {
            tack_node_set_int(n, -1);
            tack_node_set_float(n, 2.0); /* the method's spelling: m.transpose() of a vector is the vector */
            if (fe_add(n, fe_field(f, func, "value", 0), f) < 0)
                n = NULL;
        }
    }
    *result = n;
    return 1;
}

/* Taichi's and Warp's method names for what Tack spells as functions: the function to write for the
 * method that Attribute node `func` names, or NULL. */
const char *fe_taichi_method(PyObject *func) {
    static const char *const instead[][2] = {
        {"norm", "tack.norm(v) (or tack.length(v))"},
        {"normalized", "tack.normalize(v)"},
        {"normalize", "tack.normalize(v)"},
        {"norm_sqr", "tack.dot(v, v)"},
        {"outer_product", "tack.outer(v, w)"},
        {"cross", "tack.cross(v, w)"},
        {"determinant", "tack.determinant(m)"},
        {"inverse", "tack.inverse(m)"},
        {"length", "tack.length(v)"},
        {"cast", "the type's constructor, e.g. tack.vec3(v) or tack.vec3i(v)"},
    };
    PyObject *attr = PyObject_GetAttrString(func, "attr");
    const char *hint = NULL;
    for (size_t i = 0; attr && PyUnicode_Check(attr) && i < sizeof instead / sizeof *instead; i++)
        if (PyUnicode_CompareWithASCIIString(attr, instead[i][0]) == 0)
            hint = instead[i][1];
    Py_XDECREF(attr);
    PyErr_Clear();
    return hint;
}

/* A method call that is none of numpy_methods, nor one frontend_refuse.c has a loop to suggest for
 * (a.sum(), a[i].max()): a CompileError, naming the function to write where the method is Taichi's
 * or Warp's spelling of one. */
void fe_refuse_method(fe_func *f, PyObject *func) {
    PyObject *src = fe_unparse(f, func);
    const char *hint = fe_taichi_method(func);
    if (hint)
        fe_error(f, func, "method calls ('%U(...)') are not supported in kernels; write %s", src, hint);
    else
        fe_error(f, func, "method calls ('%U(...)') are not supported in kernels; use functions such as "
                          "tack.dot(v, w) (the methods are NumPy's m.T, m.transpose(), m.trace(), x.dot(y), "
                          "z.conjugate())", src);
    Py_XDECREF(src);
}
