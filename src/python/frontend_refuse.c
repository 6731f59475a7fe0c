/*
 * frontend_refuse.c -- calls a kernel cannot make, and what to write instead.
 *
 * A kernel reads and writes one element at a time, creates no array larger
 * than a small local one, and runs its top-level loops in parallel without
 * being told.  Code written for NumPy or Numba reaches for whole-array
 * functions (np.sum(a[i, :]), a[i].max(), np.dot(a[i], w)), for Numba's
 * prange, for np.random's stateful generators, and for Python's iteration
 * helpers (enumerate, zip).  Each of those is a CompileError; this file
 * writes the message so that it names the call and shows the kernel's
 * spelling of the same idea: the loop that adds up a row, the index kept
 * for an arg-min, tack.random's counter-based draws, range() for prange, and
 * the host function (np.sum, tack.reduce, tack.scan, tack.sort) where the
 * call meant a whole array.
 *
 * The hints are looked up by the callee's name within its origin (NumPy,
 * numpy.random, Python's random module, builtins, Numba) or, for a method
 * call, by the method's name alone: an array method (a[i].sum()) cannot be
 * resolved to an object while the kernel is walked, and every name in the
 * method table is one of ndarray's.  A callee with no hint keeps the general
 * message: for a NumPy function the list of those kernels accept.
 *
 * Only the words are chosen here.  The refusals themselves are decided by
 * the walk (frontend_expr.c): anything that is neither a local array's
 * constructor, a @tack.func, a dtype nor an intrinsic of the registry.
 */
#include "frontend.h"

/* The hints, by the kind of work the call does. */
enum { H_NONE, H_SUM, H_MINMAX, H_ARG, H_DOT, H_NORM, H_SCAN, H_ANY, H_SORT, H_SEARCH,
       H_COPY, H_FILL, H_RANDOM, H_ENUMERATE, H_ZIP, H_REVERSED, H_DIVMOD };

static const char *const hint_text[] = {
    [H_NONE] = "",
    [H_SUM] = "a kernel reads one element at a time, so add the elements up in a loop: "
              "'s = 0.0' then 'for k in range(n): s += a[i, k]' (a mean is s / n)",
    [H_MINMAX] = "a kernel reads one element at a time, so keep the extreme in a loop: "
                 "'m = a[i, 0]' then 'for k in range(1, n): m = max(m, a[i, k])'",
    [H_ARG] = "a kernel reads one element at a time, so keep the index in a loop: "
              "'best = 0' then 'for k in range(1, n):' and 'if a[i, k] < a[i, best]: best = k'",
    [H_DOT] = "a kernel reads one element at a time, so add the products up in a loop: "
              "'s = 0.0' then 'for k in range(n): s += a[i, k] * b[k]' (tack.dot and @ take "
              "Tack's vectors and matrices, such as tack.vec3)",
    [H_NORM] = "a kernel reads one element at a time, so add the squares up in a loop: "
               "'s = 0.0' then 'for k in range(n): s += a[i, k] * a[i, k]', and take math.sqrt(s) "
               "(tack.length takes Tack's vectors, such as tack.vec3)",
    [H_SCAN] = "a kernel reads one element at a time, so keep a running value in a serial loop, "
               "'s = 0.0' then 'for k in range(n): s += a[k]' and 'out[k] = s' (inside a parallel "
               "loop, or under 'for t in range(1):' for a whole array)",
    [H_ANY] = "a kernel reads one element at a time, so test the elements in a loop: "
              "'found = False' then 'for k in range(n):' and 'if a[i, k] > 0: found = True' and 'break'",
    [H_SORT] = "a kernel reads one element at a time, so sort a small local array with a loop of "
               "your own (an insertion sort), or sort the data before the kernel",
    [H_SEARCH] = "a kernel reads one element at a time, so write the binary search as a @tack.func "
                 "with a while loop ('while lo < hi:' halving the range)",
    [H_COPY] = "a kernel reads and writes one element at a time, so copy the elements in a loop into "
               "a local array (np.zeros with a constant shape) or an array argument",
    [H_FILL] = "a kernel writes one element at a time, so set the elements in a loop: "
               "'for k in range(n): a[k] = v'",
    [H_RANDOM] = "draw with tack.random instead, a counter-based generator with no state: "
                 "tack.random.uniform(seed, counter) is a float in [0, 1), and normal(seed, counter) "
                 "and randint(seed, counter, low, high) are the others; give each draw its own "
                 "counter (2 * i and 2 * i + 1 for two draws of iteration i), so the numbers do not "
                 "depend on the thread that runs it",
    [H_ENUMERATE] = "loop over the indices instead: 'for i in range(len(a)):' and 'v = a[i]'",
    [H_ZIP] = "loop over the indices instead: 'for i in range(len(a)):' and 'x, y = a[i], b[i]'",
    [H_REVERSED] = "count down instead: 'for i in range(n - 1, -1, -1):'",
    [H_DIVMOD] = "write 'q = a // b' and 'r = a % b'",
};

/* What the call means for a whole array, outside a kernel (after the hint). */
static const char *host_text(int h) {
    switch (h) {
    case H_SUM: case H_MINMAX: case H_ARG: case H_ANY:
        return "; for a whole array, call NumPy's function outside the kernel, or tack.reduce";
    case H_SCAN: return "; for a whole array, tack.scan outside the kernel";
    case H_SORT: return "; for a whole array, tack.sort or tack.argsort outside the kernel";
    case H_SEARCH: return "; for whole arrays, tack.searchsorted outside the kernel";
    default: return "";
    }
}

typedef struct {
    const char *name;
    int hint;
} named_hint;

/* NumPy's functions (np.<name>, np.linalg.<name>) and ndarray's methods. */
static const named_hint numpy_hints[] = {
    {"sum", H_SUM},         {"nansum", H_SUM},       {"prod", H_SUM},         {"nanprod", H_SUM},
    {"mean", H_SUM},        {"nanmean", H_SUM},      {"average", H_SUM},      {"std", H_SUM},
    {"var", H_SUM},         {"nanstd", H_SUM},       {"nanvar", H_SUM},       {"trace", H_SUM},
    {"min", H_MINMAX},      {"max", H_MINMAX},       {"amin", H_MINMAX},      {"amax", H_MINMAX},
    {"nanmin", H_MINMAX},   {"nanmax", H_MINMAX},    {"ptp", H_MINMAX},       {"median", H_SORT},
    {"argmin", H_ARG},      {"argmax", H_ARG},       {"nanargmin", H_ARG},    {"nanargmax", H_ARG},
    {"dot", H_DOT},         {"vdot", H_DOT},         {"inner", H_DOT},        {"matmul", H_DOT},
    {"outer", H_DOT},       {"tensordot", H_DOT},    {"einsum", H_DOT},       {"norm", H_NORM},
    {"cumsum", H_SCAN},     {"cumprod", H_SCAN},     {"diff", H_SCAN},        {"any", H_ANY},
    {"all", H_ANY},         {"count_nonzero", H_ANY}, {"sort", H_SORT},       {"argsort", H_SORT},
    {"searchsorted", H_SEARCH}, {"copy", H_COPY},    {"astype", H_COPY},      {"reshape", H_COPY},
    {"ravel", H_COPY},      {"flatten", H_COPY},     {"transpose", H_COPY},   {"fill", H_FILL},
};

/* Python's builtins that have a kernel spelling. */
static const named_hint builtin_hints[] = {
    {"sum", H_SUM},     {"any", H_ANY},           {"all", H_ANY}, {"sorted", H_SORT},
    {"enumerate", H_ENUMERATE}, {"zip", H_ZIP}, {"reversed", H_REVERSED}, {"divmod", H_DIVMOD},
};

static int lookup(const named_hint *t, size_t n, const char *name) {
    for (size_t i = 0; name && i < n; i++)
        if (strcmp(t[i].name, name) == 0)
            return t[i].hint;
    return H_NONE;
}

/* A new reference to getattr(obj, name) as UTF-8 in *s; NULL (cleared) when absent. */
static PyObject *str_attr(PyObject *obj, const char *name, const char **s) {
    PyObject *v = obj ? PyObject_GetAttrString(obj, name) : NULL;
    *s = v && PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
    if (!*s)
        PyErr_Clear();
    return v;
}

static int starts(const char *s, const char *prefix) {
    size_t n = strlen(prefix);
    return s && strncmp(s, prefix, n) == 0 && (s[n] == 0 || s[n] == '.');
}

const char *fe_origin(PyObject *obj) {
    const char *s, *r = NULL;
    PyObject *m = str_attr(obj, "__module__", &s);
    if (starts(s, "numpy"))
        r = "numpy";
    else if (starts(s, "tack"))
        r = "tack";
    Py_XDECREF(m);
    return r;
}

int fe_is_array_maker(PyObject *obj) {
    static const char *makers[] = {"zeros", "ones", "empty", "full", "array", "asarray", "zeros_like",
                                   "ones_like", "empty_like", "full_like", "arange", "linspace", "shared"};
    const char *s;
    PyObject *name = str_attr(obj, "__name__", &s);
    int r = 0;
    for (size_t i = 0; s && i < sizeof makers / sizeof makers[0]; i++)
        r |= strcmp(s, makers[i]) == 0;
    Py_XDECREF(name);
    return r;
}

/* The hint for callee `obj`: by its module (or, for a bound method such as
 * random.random, its instance's module) and its name. */
static int callee_hint(PyObject *obj) {
    const char *mod, *name, *self_mod = NULL;
    PyObject *m = str_attr(obj, "__module__", &mod), *n = str_attr(obj, "__name__", &name);
    PyObject *self = PyObject_HasAttrString(obj, "__self__") ? PyObject_GetAttrString(obj, "__self__") : NULL;
    PyObject *sm = self && !PyModule_Check(self) ? str_attr((PyObject *)Py_TYPE(self), "__module__", &self_mod) : NULL;
    int h = H_NONE;
    PyErr_Clear();
    if (starts(mod, "numpy.random") || starts(self_mod, "numpy.random") || starts(mod, "random") ||
        starts(self_mod, "random"))
        h = H_RANDOM;
    else if (starts(mod, "numpy"))
        h = lookup(numpy_hints, sizeof numpy_hints / sizeof numpy_hints[0], name);
    else if (starts(mod, "builtins") || (!mod && starts(self_mod, "builtins")))
        h = lookup(builtin_hints, sizeof builtin_hints / sizeof builtin_hints[0], name);
    Py_XDECREF(m);
    Py_XDECREF(n);
    Py_XDECREF(self);
    Py_XDECREF(sm);
    return h;
}

/* Whether `obj` is Numba's: its prange (a class), or an @njit function (a dispatcher). */
static int from_numba(PyObject *obj, int *is_prange) {
    const char *mod, *name, *tmod;
    PyObject *m = str_attr(obj, "__module__", &mod), *n = str_attr(obj, "__name__", &name);
    PyObject *tm = str_attr((PyObject *)Py_TYPE(obj), "__module__", &tmod);
    int r = starts(mod, "numba") || starts(tmod, "numba");
    *is_prange = r && name && strcmp(name, "prange") == 0;
    Py_XDECREF(m);
    Py_XDECREF(n);
    Py_XDECREF(tm);
    return r;
}

void fe_refuse_local_callee(fe_func *f, PyObject *func) {
    if (fe_is_kind(func, "Name")) {
        PyObject *id = PyObject_GetAttrString(func, "id");
        if (id)
            fe_error(f, func, "'%U' is a local variable or parameter, not a function", id);
        Py_XDECREF(id);
    } else if (fe_is_kind(func, "Attribute")) {
        const char *attr;
        PyObject *a = str_attr(func, "attr", &attr), *src = fe_unparse(f, func);
        /* Taichi's names first (v.norm() is tack.norm, not np.linalg.norm's loop), then NumPy's */
        int h = fe_taichi_method(func) ? H_NONE : lookup(numpy_hints, sizeof numpy_hints / sizeof numpy_hints[0], attr);
        if (h != H_NONE)
            fe_error(f, func, "method calls ('%U(...)') are not supported in kernels: %s%s", src,
                     hint_text[h], host_text(h));
        else
            fe_refuse_method(f, func);
        Py_XDECREF(a);
        Py_XDECREF(src);
    } else {
        fe_error(f, func, "only named functions can be called in kernels");
    }
}

/* Refuse a NumPy function that is no intrinsic: with the kernel's spelling
 * of it where there is one, else naming the ones the registry holds as
 * "numpy.<intrinsic>", by NumPy's names. */
static void refuse_numpy(fe_func *f, PyObject *func, PyObject *obj, PyObject *src) {
    PyObject *names, *key, *value, *sep = NULL, *text = NULL;
    Py_ssize_t pos = 0;
    int h = callee_hint(obj);
    if (h != H_NONE) {
        fe_error(f, func, "%U is not supported in kernels: %s%s", src, hint_text[h], host_text(h));
        return;
    }
    names = PyList_New(0);
    while (names && PyDict_Next(f->mc->intrinsics, &pos, &key, &value)) {
        const char *v = PyUnicode_Check(value) ? PyUnicode_AsUTF8(value) : NULL;
        PyObject *n;
        if (!v || strncmp(v, "numpy.", 6) != 0)
            continue;
        n = PyObject_GetAttrString(key, "__name__");
        if (!n || PySequence_Contains(names, n) == 1 || PyList_Append(names, n) < 0)
            PyErr_Clear();
        Py_XDECREF(n);
    }
    if (names && PyList_Sort(names) == 0 && (sep = PyUnicode_FromString(", ")) != NULL)
        text = PyUnicode_Join(sep, names);
    PyErr_Clear();
    fe_error(f, func, "%U is not supported in kernels; the NumPy functions kernels accept are: %U "
                      "(and the casts np.float32(x), np.int64(x), ..., and the constants np.pi, "
                      "np.e, ...)", src, text ? text : src);
    Py_XDECREF(names);
    Py_XDECREF(sep);
    Py_XDECREF(text);
}

void fe_refuse_callee(fe_func *f, PyObject *func, PyObject *obj) {
    PyObject *src = fe_unparse(f, func);
    const char *origin;
    int h, prange = 0;
    if (!src)
        return;
    origin = fe_origin(obj);
    h = callee_hint(obj);
    if (origin && fe_is_array_maker(obj))
        fe_error(f, func, "'%U' creates an array; inside a kernel only np.zeros, np.ones, np.empty "
                          "and np.full (and tack's) create one, a small local array of constant "
                          "shape: create this one outside and pass it as an argument", src);
    else if (h == H_RANDOM)
        fe_error(f, func, "%U is not supported in kernels: %s", src, hint_text[h]);
    else if (origin && strcmp(origin, "numpy") == 0)
        refuse_numpy(f, func, obj, src);
    else if (origin && strcmp(origin, "tack") == 0)
        fe_error(f, func, "'%U' is Tack's host API and cannot be called in a kernel; kernels call "
                          "the math, vector and atomic functions of tack, math.*, NumPy's math "
                          "functions and @tack.func functions", src);
    else if (from_numba(obj, &prange) && prange)
        fe_error(f, func, "'%U' is Numba's: a kernel needs no prange, since every for loop over "
                          "range(...) at the top level of a kernel is parallel (loops nested in it "
                          "are serial); write range(...)", src);
    else if (from_numba(obj, &prange))
        fe_error(f, func, "'%U' is a Numba function: a kernel calls @tack.func functions; "
                          "decorate its Python function with @tack.func instead of Numba's", src);
    else if (PyFunction_Check(obj))
        fe_error(f, func, "function '%U' is not a @tack.func; decorate it with @tack.func "
                          "to call it from a kernel", src);
    else if (PyType_Check(obj))
        fe_error(f, func, "class '%U' cannot be used in a kernel%s%s", src, h ? "; " : "", hint_text[h]);
    else
        fe_error(f, func, "'%U' (%s) cannot be called in a kernel; kernels call math.*, "
                          "tack.* and @tack.func functions and the builtins range, len, "
                          "abs, min, max, pow, round, float, int, bool and print%s%s%s",
                 src, Py_TYPE(obj)->tp_name, h ? " (" : "", hint_text[h], h ? ")" : "");
    Py_DECREF(src);
}
