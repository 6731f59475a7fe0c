/*
 * kernel_captures.c -- a kernel's frozen values, checked at every call.
 *
 * The front end freezes the values a kernel names from outside (a module
 * constant FEED = 0.03, cfg.FEED, a closure's int, a dtype, the @tack.func
 * a global names) into the module it builds, and lists where it found each
 * one (frontend_env.c).  Python would read FEED afresh on every execution;
 * a kernel that kept the value of its first compile would, after the
 * program sets FEED = 0.04, silently compute with 0.03 while the same
 * kernel run as Python (jit=False) uses 0.04.  So each call first asks
 * whether every captured place still holds the very object the module
 * froze: one dict lookup (or cell read) and a pointer comparison per
 * captured name, no allocation, no Python code -- the hot path.
 *
 * When one does not, the slow path (with the kernel's compile lock) looks
 * for the build whose frozen values equal the current ones -- equal as
 * values (same type; floats bit for bit, so -0.0 is not 0.0 and a NaN is
 * itself), not as objects, since `FEED = 0.03` again makes a new float --
 * and else runs the front end again for a new build.  The builds are kept:
 * specializations are keyed on (build, signature), so a value that flips
 * between two settings compiles twice, not at every flip.  A new build sees
 * the new values with their types (an int that became a float compiles as
 * float), and a name that now holds something a kernel cannot use raises
 * the front end's CompileError naming it; the kernel stays usable with the
 * old value restored.
 *
 * Places that cannot be checked cheaply (an attribute of a module with a
 * __getattr__) take the slow path, which compares values, at every call.
 */
#include "kernel.h"

#include <string.h>

/* The object at the capture's place now: borrowed (*owned NULL) or new
 * (*owned set); NULL when the place is empty (no exception). */
static PyObject *capture_now(const kcapture *cp, PyObject **owned) {
    PyObject *v = NULL;
    *owned = NULL;
    if (!cp->where)
        return NULL;
    switch (cp->kind) {
    case TPY_CAP_DICT:
        v = PyDict_GetItemWithError(cp->where, cp->key);
        break;
    case TPY_CAP_CELL:
        v = PyCell_GET(cp->where);
        break;
    default:
        v = *owned = PyObject_GetAttr(cp->where, cp->key);
        break;
    }
    if (!v)
        PyErr_Clear();
    return v;
}

/* The hot path: every place still holds the object frozen into the build. */
static int variant_holds(const kvariant *v) {
    for (Py_ssize_t i = 0; i < v->ncaps; i++) {
        const kcapture *cp = &v->caps[i];
        PyObject *now;
        if (!cp->where)
            return 0;
        if (cp->kind == TPY_CAP_DICT) {
            now = PyDict_GetItemWithError(cp->where, cp->key);
            if (!now)
                PyErr_Clear();
        } else if (cp->kind == TPY_CAP_CELL) {
            now = PyCell_GET(cp->where);
        } else {
            return 0;
        }
        if (now != cp->value)
            return 0;
    }
    return 1;
}

/* Whether a and b are the same value for a kernel: the same object, or of
 * the same type and equal (floats and complex numbers bit for bit; other
 * objects -- dtypes, @tack.func -- only by identity).  Never raises. */
static int same_value(PyObject *a, PyObject *b) {
    int r;
    if (a == b)
        return 1;
    if (!a || !b || Py_TYPE(a) != Py_TYPE(b))
        return 0;
    if (PyFloat_Check(a)) {
        double x = PyFloat_AS_DOUBLE(a), y = PyFloat_AS_DOUBLE(b);
        return memcmp(&x, &y, sizeof x) == 0;
    }
    if (PyComplex_Check(a)) {
        Py_complex x = PyComplex_AsCComplex(a), y = PyComplex_AsCComplex(b);
        return memcmp(&x.real, &y.real, sizeof x.real) == 0 &&
               memcmp(&x.imag, &y.imag, sizeof x.imag) == 0;
    }
    if (PyBool_Check(a))
        return 0; /* two bools of one type that are not one object differ */
    if (!PyLong_Check(a) && !PyNumber_Check(a))
        return 0;
    /* ints, and NumPy scalars (a NaN differs from itself there: a rebuild,
     * never a wrong value) */
    r = PyObject_RichCompareBool(a, b, Py_EQ);
    if (r < 0) {
        PyErr_Clear();
        return 0;
    }
    return r;
}

/* Whether build v's values equal those its places hold now; when they do,
 * it takes the current objects, so the hot path finds them again. */
static int variant_equals_now(kvariant *v) {
    for (Py_ssize_t i = 0; i < v->ncaps; i++) {
        PyObject *owned, *now = capture_now(&v->caps[i], &owned);
        int same = same_value(now, v->caps[i].value);
        Py_XDECREF(owned);
        if (!same)
            return 0;
    }
    for (Py_ssize_t i = 0; i < v->ncaps; i++) {
        PyObject *owned, *now = capture_now(&v->caps[i], &owned);
        if (now && now != v->caps[i].value) {
            PyObject *old = v->caps[i].value;
            v->caps[i].value = Py_NewRef(now);
            Py_XDECREF(old);
        }
        Py_XDECREF(owned);
    }
    return 1;
}

static void variant_fini(kvariant *v) {
    for (Py_ssize_t i = 0; i < v->ncaps; i++) {
        Py_CLEAR(v->caps[i].where);
        Py_CLEAR(v->caps[i].key);
        Py_CLEAR(v->caps[i].value);
    }
    PyMem_Free(v->caps);
    v->caps = NULL;
    v->ncaps = 0;
    if (v->module)
        tack_module_free(v->module);
    v->module = NULL;
}

/* Run the front end for the values the places hold now: a new build,
 * appended and made current.  Lock held. */
static int variant_build(KernelObject *k) {
    kvariant v, *grown;
    PyObject *caps = NULL;
    int r = -1;

    memset(&v, 0, sizeof v);
    int64_t t0 = tack_profile_active() ? tack_profile_now() : 0; /* tack.profile(): the front end's step */
    if (tpy_frontend_build(k->st, k->fn, &v.module, &v.kernel_index, &caps) < 0)
        return -1;
    if (t0) {
        int64_t t1 = tack_profile_now();
        PyObject *q = PyObject_GetAttrString(k->fn, "__name__"); /* the name the compiler's steps carry */
        const char *name = q ? PyUnicode_AsUTF8(q) : NULL;
        if (name)
            tack_profile_record("compile", "frontend", name, "host", t0, t1, -1);
        Py_XDECREF(q);
        PyErr_Clear(); /* a name that cannot be told: the step goes unrecorded, the build goes on */
    }
    v.ncaps = PyList_GET_SIZE(caps);
    if (v.ncaps) {
        v.caps = PyMem_Calloc((size_t)v.ncaps, sizeof(kcapture));
        if (!v.caps) {
            v.ncaps = 0;
            PyErr_NoMemory();
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < v.ncaps; i++) {
        PyObject *t = PyList_GET_ITEM(caps, i);
        v.caps[i].kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, 0));
        v.caps[i].where = Py_NewRef(PyTuple_GET_ITEM(t, 1));
        v.caps[i].key = Py_NewRef(PyTuple_GET_ITEM(t, 2));
        v.caps[i].value = Py_NewRef(PyTuple_GET_ITEM(t, 3));
    }
    grown = PyMem_Realloc(k->variants, (size_t)(k->nvariants + 1) * sizeof(kvariant));
    if (!grown) {
        PyErr_NoMemory();
        goto done;
    }
    k->variants = grown;
    k->variants[k->nvariants] = v;
    memset(&v, 0, sizeof v);
    k->cur = k->nvariants++;
    r = 0;
done:
    variant_fini(&v);
    Py_XDECREF(caps);
    return r;
}

int kernel_variant(KernelObject *k, kcall *c) {
    int r = -1;
    if (k->nvariants && variant_holds(&k->variants[k->cur])) {
        c->variant = k->cur; /* the hot path */
        return 0;
    }
    if (kernel_lock(k) < 0)
        return -1;
    /* Another thread may have settled it while this one waited. */
    if (k->nvariants && variant_holds(&k->variants[k->cur])) {
        r = 0;
        goto done;
    }
    for (Py_ssize_t i = 0; k->nvariants && i <= k->nvariants; i++) {
        /* the current build first (a place the hot path cannot check), then the others */
        Py_ssize_t j = i == 0 ? k->cur : i - 1;
        if ((i == 0 || j != k->cur) && variant_equals_now(&k->variants[j])) {
            k->cur = j;
            r = 0;
            goto done;
        }
    }
    r = variant_build(k);
done:
    c->variant = k->cur;
    kernel_unlock(k);
    return r;
}

int kernel_variants_traverse(KernelObject *k, visitproc visit, void *arg) {
    for (Py_ssize_t i = 0; i < k->nvariants; i++)
        for (Py_ssize_t j = 0; j < k->variants[i].ncaps; j++) {
            Py_VISIT(k->variants[i].caps[j].where);
            Py_VISIT(k->variants[i].caps[j].key);
            Py_VISIT(k->variants[i].caps[j].value);
        }
    return 0;
}

void kernel_variants_clear(KernelObject *k) {
    for (Py_ssize_t i = 0; i < k->nvariants; i++)
        for (Py_ssize_t j = 0; j < k->variants[i].ncaps; j++) {
            Py_CLEAR(k->variants[i].caps[j].where);
            Py_CLEAR(k->variants[i].caps[j].key);
            Py_CLEAR(k->variants[i].caps[j].value);
        }
}

void kernel_variants_free(KernelObject *k) {
    for (Py_ssize_t i = 0; i < k->nvariants; i++)
        variant_fini(&k->variants[i]);
    PyMem_Free(k->variants);
    k->variants = NULL;
    k->nvariants = 0;
    k->cur = 0;
}
