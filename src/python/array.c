/*
 * array.c -- the Array heap type: a Python handle on a tack_array.
 *
 * An Array owns one reference to a tack_array and nothing else; shape,
 * dtype, device and storage all live in libtack.  Tack arrays deliberately
 * offer neither the buffer protocol nor __array_interface__ (DESIGN 4):
 * NumPy gets values through .numpy()/__array__ (copies) or shares storage
 * through DLPack, where lifetime and device are explicit.
 *
 * This file is the type itself -- creating arrays (_core.empty,
 * _core.wrap_buffer), copying values between an array and host buffers or
 * other arrays and devices, its attributes, its GC slots and its tables --
 * and the tables name the functions of the files that hold its other
 * concerns: borrowing a buffer (array_buffer.c), indexing and views
 * (array_views.c), the gradient (array_grad.c) and DLPack (dlpack.c).
 */
#include "tack_py.h"

#include <string.h>
#include <structmember.h>

/* ------------------------------------------------------------ the type */
void tpy_array_release(tack_array *arr) {
    tpy_stashed_error e;
    tpy_error_stash(&e);
    tack_array_release(arr);
    tpy_error_unstash(&e);
}

PyObject *tpy_array_new(tpy_state *st, tack_array *arr) {
    TackArrayObject *self = PyObject_GC_New(TackArrayObject, st->ArrayType);
    if (!self) {
        tpy_array_release(arr);
        return NULL;
    }
    self->arr = arr;
    self->weakreflist = NULL;
    self->grad = NULL;
    PyObject_GC_Track((PyObject *)self);
    return (PyObject *)self;
}

int tpy_array_check(tpy_state *st, PyObject *obj) { return Py_TYPE(obj) == st->ArrayType; }

#define ARR(o) (((TackArrayObject *)(o))->arr)

int tpy_parse_shape(PyObject *obj, int64_t *shape, int *ndim) {
    PyObject *seq = NULL;
    int rc = -1;
    if (PyIndex_Check(obj)) {
        /* an int, a NumPy integer or a 0-d integer array (a NumPy array of several is a sequence) */
        PyObject *idx = PyNumber_Index(obj);
        if (idx) {
            shape[0] = PyLong_AsLongLong(idx);
            Py_DECREF(idx);
            if (shape[0] == -1 && PyErr_Occurred())
                goto overflow;
            *ndim = 1;
            goto checked;
        }
        if (!PyErr_ExceptionMatches(PyExc_TypeError))
            return -1;
        PyErr_Clear();
    }
    if (!(seq = PySequence_Fast(obj, "shape must be an int or a sequence of ints")))
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > TACK_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "shape %R has %zd dimensions; Tack arrays have at most %d", obj, n,
                     TACK_MAX_NDIM);
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyLong_Check(item) && !PyIndex_Check(item)) {
            PyErr_Format(PyExc_TypeError, "shape entries must be ints, got %.100s in %R",
                         Py_TYPE(item)->tp_name, obj);
            goto done;
        }
        PyObject *idx = PyNumber_Index(item);
        if (!idx)
            goto done;
        shape[i] = PyLong_AsLongLong(idx);
        Py_DECREF(idx);
        if (shape[i] == -1 && PyErr_Occurred())
            goto overflow;
    }
    *ndim = (int)n;
checked:
    for (int i = 0; i < *ndim; i++)
        if (shape[i] < 0) {
            PyErr_Format(PyExc_ValueError, "negative dimensions are not allowed: shape %R", obj);
            goto done;
        }
    rc = 0;
    goto done;
overflow:
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "shape %R is too large", obj);
done:
    Py_XDECREF(seq);
    return rc;
}

/* The shape, dtype and device arguments of a new array (_core.empty, _core.wrap_pointer): the
 * device, or NULL with an exception. */
tack_device *tpy_parse_layout(tpy_state *st, PyObject *shape_obj, PyObject *dtype_obj, PyObject *device_obj,
                              int64_t *shape, int *ndim, tack_dtype *dt) {
    if (tpy_parse_shape(shape_obj, shape, ndim) < 0 || tpy_dtype_from_object(st, dtype_obj, dt) < 0)
        return NULL;
    return tpy_device_from_object(st, device_obj);
}

/* _core.empty(shape, dtype, device=None, zero=False) */
static PyObject *py_empty(PyObject *m, PyObject *args, PyObject *kw) {
    static char *names[] = {"shape", "dtype", "device", "zero", NULL};
    PyObject *shape_obj, *dtype_obj, *device_obj = Py_None;
    int zero = 0;
    int64_t shape[TACK_MAX_NDIM];
    int ndim = 0;
    tack_dtype dt;
    tack_array *arr = NULL;
    tpy_state *st = tpy_get_state(m);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|Op:empty", names, &shape_obj, &dtype_obj, &device_obj, &zero))
        return NULL;
    tack_device *dev = tpy_parse_layout(st, shape_obj, dtype_obj, device_obj, shape, &ndim, &dt);
    if (!dev)
        return NULL;
    tack_status s;
    Py_BEGIN_ALLOW_THREADS
    s = zero ? tack_array_zeros(dev, dt, ndim, shape, &arr) : tack_array_empty(dev, dt, ndim, shape, &arr);
    Py_END_ALLOW_THREADS
    if (s != TACK_OK)
        return tpy_raise();
    return tpy_array_new(st, arr);
}

/* _core.wrap_buffer(obj, dtype=None, writable=False): borrow a buffer as a CPU array. */
static PyObject *py_wrap_buffer(PyObject *m, PyObject *args, PyObject *kw) {
    static char *names[] = {"obj", "dtype", "writable", NULL};
    PyObject *obj, *dtype_obj = Py_None;
    int writable = 0;
    tpy_state *st = tpy_get_state(m);
    tack_dtype dt = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Op:wrap_buffer", names, &obj, &dtype_obj, &writable))
        return NULL;
    if (dtype_obj != Py_None && tpy_dtype_from_object(st, dtype_obj, &dt) < 0)
        return NULL;
    tack_array *arr = tpy_wrap_buffer(st, obj, dtype_obj == Py_None ? -1 : (int)dt, writable, 0);
    if (!arr)
        return NULL;
    return tpy_array_new(st, arr);
}

/* Get a contiguous buffer of exactly the array's bytes from obj. */
static int get_exact_buffer(tpy_state *st, PyObject *obj, Py_buffer *view, int flags, size_t nbytes) {
    if (tpy_get_buffer(st, obj, view, flags, NULL) < 0)
        return -1;
    if (!PyBuffer_IsContiguous(view, 'C') || (size_t)view->len != nbytes) {
        PyErr_Format(PyExc_ValueError, "expected a C-contiguous buffer of %zu bytes, got %zd bytes", nbytes,
                     view->len);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* The array's bytes from (into = 0) or into (1) a C-contiguous buffer of exactly their size. */
static PyObject *host_copy(PyObject *self, PyObject *obj, int into) {
    Py_buffer view;
    tack_status s;
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    int flags = into ? PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE : PyBUF_C_CONTIGUOUS;
    if (!st || get_exact_buffer(st, obj, &view, flags, tack_array_nbytes(ARR(self))) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    s = into ? tack_array_copy_to_host(ARR(self), view.buf, (size_t)view.len)
             : tack_array_copy_from_host(ARR(self), view.buf, (size_t)view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (s != TACK_OK)
        return tpy_raise();
    Py_RETURN_NONE;
}
static PyObject *array_copy_from(PyObject *self, PyObject *src) { return host_copy(self, src, 0); }
static PyObject *array_copy_into(PyObject *self, PyObject *dst) { return host_copy(self, dst, 1); }

/* A tuple of n Python ints (a shape, strides); NULL with an exception. */
PyObject *tpy_int64_tuple(const int64_t *v, int n) {
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *o = PyLong_FromLongLong(v[i]);
        if (!o) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, o);
    }
    return t;
}

/* NumPy's shape of the array's values: a vector dtype's components are a trailing axis, a
 * matrix dtype's two. */
static PyObject *get_numpy_shape(tack_array *a) {
    const tack_dtype_info *i = tack_dtype_get(tack_array_dtype(a));
    int nd = tack_array_ndim(a), extra = i->cols > 1 ? 2 : (i->rows > 1 ? 1 : 0);
    int64_t shape[TACK_MAX_NDIM + 2];
    for (int k = 0; k < nd; k++)
        shape[k] = tack_array_shape(a)[k];
    shape[nd] = i->rows; /* read only when extra >= 1 */
    shape[nd + 1] = i->cols;
    return tpy_int64_tuple(shape, nd + extra);
}

PyObject *tpy_array_numpy(PyObject *self, PyObject *unused) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    PyObject *np, *shape = NULL, *npdt = NULL, *out = NULL, *r;
    tack_array *a = ARR(self);
    if (!st || !(np = tpy_numpy(st)))
        return NULL;
    const tack_dtype_info *i = tack_dtype_get(tack_array_dtype(a));
    if (!(shape = get_numpy_shape(a)))
        goto done;
    if (!(npdt = PyObject_GetAttrString(st->dtypes[i->scalar], "numpy")))
        goto done;
    if (!(out = PyObject_CallMethod(np, "empty", "OO", shape, npdt)))
        goto done;
    if (!(r = array_copy_into(self, out)))
        Py_CLEAR(out);
    Py_XDECREF(r);
done:
    Py_XDECREF(shape);
    Py_XDECREF(npdt);
    return out;
}

/* __array__(dtype=None, copy=None): NumPy 2 semantics.  Tack arrays never
 * share memory with NumPy through this path, so copy=False is refused. */
static PyObject *array_array(PyObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"dtype", "copy", NULL};
    PyObject *dtype = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:__array__", names, &dtype, &copy))
        return NULL;
    if (copy == Py_False) {
        PyErr_SetString(PyExc_ValueError,
                        "a Tack array cannot be converted to NumPy without a copy; use "
                        "numpy.from_dlpack(array) to share its storage");
        return NULL;
    }
    PyObject *out = tpy_array_numpy(self, NULL);
    if (out && dtype != Py_None) {
        PyObject *cast = tpy_call1(out, "astype", dtype);
        Py_SETREF(out, cast);
    }
    return out;
}

static PyObject *array_fill(PyObject *self, PyObject *value) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    PyObject *np, *npdt = NULL, *v = NULL, *ok = NULL;
    tack_array *a = ARR(self);
    const tack_dtype_info *i = tack_dtype_get(tack_array_dtype(a));
    int is_number = PyBool_Check(value) || PyLong_Check(value) || PyFloat_Check(value) || PyComplex_Check(value);
    if (!st || !(np = tpy_numpy(st)))
        return NULL;
    if (i->kind != TACK_KIND_COMPLEX) {
        /* A complex value never becomes a real one implicitly (NumPy would
         * warn and drop the imaginary part): the language's rule. */
        PyObject *cf = PyComplex_Check(value) ? NULL : PyObject_GetAttrString(np, "complexfloating");
        int is_complex = PyComplex_Check(value) ? 1 : cf ? PyObject_IsInstance(value, cf) : -1;
        Py_XDECREF(cf);
        if (is_complex < 0)
            return NULL;
        if (is_complex)
            return PyErr_Format(PyExc_TypeError,
                                "fill value %R is complex and the array's dtype %s is not: a complex never "
                                "becomes a real number implicitly (fill with its .real or .imag)",
                                value, i->name);
    }
    if (!is_number) {
        /* NumPy scalars and, for vectors/matrices, sequences of numbers. */
        PyObject *generic = PyObject_GetAttrString(np, "generic");
        int is_np_scalar = generic ? PyObject_IsInstance(value, generic) : -1;
        Py_XDECREF(generic);
        if (is_np_scalar < 0)
            return NULL;
        int seq_ok = (i->rows > 1) && PySequence_Check(value) && !PyUnicode_Check(value) &&
                     !PyBytes_Check(value);
        if (!is_np_scalar && !seq_ok)
            return PyErr_Format(PyExc_TypeError, "fill value must be a number%s, not %.100s",
                                i->rows > 1 ? " or a sequence of numbers" : "", Py_TYPE(value)->tp_name);
    }
    if (!(npdt = PyObject_GetAttrString(st->dtypes[tack_array_dtype(a)], "numpy")))
        goto done;
    /* np.array(value, dtype) checks the range (NumPy 2 raises OverflowError
     * for out-of-range Python ints) and the component count. */
    PyObject *scalar_dt = PyObject_GetAttrString(st->dtypes[i->scalar], "numpy");
    if (!scalar_dt)
        goto done;
    v = PyObject_CallMethod(np, "array", "OO", value, scalar_dt);
    Py_DECREF(scalar_dt);
    if (!v && PyErr_ExceptionMatches(PyExc_OverflowError) && PyLong_Check(value)) {
        /* NumPy names the value only while it fits a C long ("Python int too large to
         * convert to C long" past it): say which value and which dtype */
        PyErr_Clear();
        PyErr_Format(PyExc_OverflowError, "fill value %R is out of range for the array's dtype %s", value,
                     i->name);
    }
    if (!v)
        goto done;
    PyObject *size = PyObject_GetAttrString(v, "size");
    Py_ssize_t n = size ? PyLong_AsSsize_t(size) : -1;
    Py_XDECREF(size);
    if (n < 0)
        goto done;
    Py_ssize_t comps = (Py_ssize_t)i->rows * i->cols;
    if (n == 1 && comps > 1) {
        /* one number broadcasts to every component */
        PyObject *b = PyObject_CallMethod(np, "full", "nO", comps, v);
        Py_SETREF(v, b);
        if (!v)
            goto done;
    } else if (n != comps) {
        PyErr_Format(PyExc_ValueError, "fill value for %s needs %zd components, got %zd", i->name, comps, n);
        goto done;
    }
    Py_buffer view;
    PyObject *contig = tpy_call1(np, "ascontiguousarray", v);
    if (!contig)
        goto done;
    if (tpy_get_buffer(st, contig, &view, PyBUF_C_CONTIGUOUS, NULL) < 0) {
        Py_DECREF(contig);
        goto done;
    }
    tack_status s = tack_array_fill(a, view.buf);
    PyBuffer_Release(&view);
    Py_DECREF(contig);
    if (s != TACK_OK) {
        tpy_raise();
        goto done;
    }
    ok = Py_NewRef(Py_None);
done:
    Py_XDECREF(npdt);
    Py_XDECREF(v);
    return ok;
}

/* A new array with a's values on `dev` (NULL: a's own device). */
static PyObject *clone_on(tpy_state *st, tack_array *a, tack_device *dev) {
    tack_array *c = NULL;
    tack_status s;
    Py_BEGIN_ALLOW_THREADS
    s = tack_array_clone(a, dev, &c);
    Py_END_ALLOW_THREADS
    if (s != TACK_OK)
        return tpy_raise();
    return tpy_array_new(st, c);
}

static PyObject *array_copy(PyObject *self, PyObject *unused) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    return st ? clone_on(st, ARR(self), NULL) : NULL;
}

/* copy.copy(a) and copy.deepcopy(a): a.copy(), on a's device, as NumPy's
 * copy.copy is ndarray.copy().  Without them the copy module fell back on
 * pickling, which refuses arrays off the host with a message about
 * pickling that a copy.deepcopy of a model's state did not ask for. */
static PyObject *array_deepcopy(PyObject *self, PyObject *memo) {
    (void)memo; /* an array holds no Python objects to share within one deepcopy */
    return array_copy(self, NULL);
}

/* _copy_array(src): self <- src, same dtype and size, any devices. */
static PyObject *array_copy_array(PyObject *self, PyObject *src) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    tack_status s;
    if (!st)
        return NULL;
    if (!tpy_array_check(st, src))
        return PyErr_Format(PyExc_TypeError, "expected a tack.Array, got %.100s", Py_TYPE(src)->tp_name);
    Py_BEGIN_ALLOW_THREADS
    s = tack_array_copy(ARR(self), ARR(src));
    Py_END_ALLOW_THREADS
    if (s != TACK_OK)
        return tpy_raise();
    Py_RETURN_NONE;
}

/* to(device, copy=False): this array on `device` -- itself when it already
 * lives there (unless copy=True), else a copy made by the backends. */
static PyObject *array_to(PyObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"device", "copy", NULL};
    PyObject *device_obj;
    int copy = 0;
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    if (!st || !PyArg_ParseTupleAndKeywords(args, kw, "O|p:to", names, &device_obj, &copy))
        return NULL;
    tack_device *dev = tpy_device_from_object(st, device_obj);
    if (!dev)
        return NULL;
    if (dev == tack_array_device(ARR(self)) && !copy)
        return Py_NewRef(self);
    return clone_on(st, ARR(self), dev);
}

static PyObject *array_readonly_view(PyObject *self, PyObject *unused) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    tack_array *v = NULL;
    if (!st)
        return NULL;
    if (tack_array_view(ARR(self), 0, &v) != TACK_OK)
        return tpy_raise();
    return tpy_array_new(st, v);
}

static Py_ssize_t array_len(PyObject *self) {
    tack_array *a = ARR(self);
    if (tack_array_ndim(a) == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d array");
        return -1;
    }
    return (Py_ssize_t)tack_array_shape(a)[0];
}

/* bool(a): NumPy's rule, as a NumPy user expects of `if a:`.  Without it
 * Python would fall back on len() and call a one-element array of zero true
 * (and any longer array true, whatever it holds).  One element is tested by
 * its value (a copy of it); any other size is ambiguous. */
static int array_bool(PyObject *self) {
    tack_array *a = ARR(self);
    int64_t n = tack_array_size(a);
    if (n != 1) {
        PyErr_Format(PyExc_ValueError,
                     n == 0 ? "the truth value of an empty tack.Array is ambiguous: test a.size > 0"
                            : "the truth value of a tack.Array of %lld elements is ambiguous: test a.size, or "
                              "reduce the values (in a kernel, or a.numpy().any() / .all())",
                     (long long)n);
        return -1;
    }
    PyObject *host = tpy_array_numpy(self, NULL);
    if (!host)
        return -1;
    int r = PyObject_IsTrue(host);
    Py_DECREF(host);
    return r;
}

/* float(a), int(a), complex(a), operator.index(a): NumPy's answers for a 0-d array of numbers -- its
 * one value, a copy of it from its device, converted by NumPy's own 0-d array (int() of a float
 * truncates, of NaN is a ValueError; index() takes integers only) -- and NumPy 2's TypeError for any
 * other shape (a one-element array too, a DeprecationWarning in NumPy from 1.25 and an error in the
 * NumPy 2.4 the project builds against), naming the shape; a vector or matrix value is not a number. */
static PyObject *scalar_host(PyObject *self, const char *fn) {
    tack_array *a = ARR(self);
    const tack_dtype_info *i = tack_dtype_get(tack_array_dtype(a));
    if (tack_array_ndim(a) != 0 || i->rows > 1 || i->cols > 1) {
        PyObject *shape = tpy_int64_tuple(tack_array_shape(a), tack_array_ndim(a));
        if (!shape)
            return NULL;
        int index = !strcmp(fn, "index"); /* NumPy's own words first, for code that matches them */
        if (tack_array_ndim(a) != 0)
            PyErr_Format(PyExc_TypeError,
                         "only %s arrays can be converted to %s: %s() of a tack.Array of shape %R; index "
                         "one element (a[0] of a 1-d array is its value)",
                         index ? "integer scalar" : "0-dimensional", index ? "a scalar index" : "Python scalars",
                         fn, shape);
        else
            PyErr_Format(PyExc_TypeError,
                         "%s() of a 0-dimensional tack.Array of %s: a %s value is not a number; take a "
                         "component (a.numpy()[0])", fn, i->name, i->cols > 1 ? "matrix" : "vector");
        Py_DECREF(shape);
        return NULL;
    }
    return tpy_array_numpy(self, NULL);
}

static PyObject *array_convert(PyObject *self, const char *fn, PyObject *(*conv)(PyObject *)) {
    PyObject *host = scalar_host(self, fn);
    if (!host)
        return NULL;
    PyObject *r = conv(host);
    Py_DECREF(host);
    return r;
}

static PyObject *array_float(PyObject *self) { return array_convert(self, "float", PyNumber_Float); }
static PyObject *array_int(PyObject *self) { return array_convert(self, "int", PyNumber_Long); }
static PyObject *array_index(PyObject *self) { return array_convert(self, "index", PyNumber_Index); }
static PyObject *to_complex(PyObject *host) { return PyObject_CallOneArg((PyObject *)&PyComplex_Type, host); }
static PyObject *array_complex(PyObject *self, PyObject *unused) { return array_convert(self, "complex", to_complex); }

/* a == b, a != b, a < b ...: refused.  Tack arrays have no operators, and
 * Python's default would answer == and != by identity -- `a == b` False for
 * two arrays of equal values, `a == 1` False whatever a holds -- where a
 * NumPy user reads an elementwise comparison.  A TypeError says what to use
 * instead.  The hash stays the object's identity (tp_hash below): nothing
 * compares equal but by identity, which dicts and sets test first. */
static PyObject *array_richcompare(PyObject *self, PyObject *other, int op) {
    static const char *const ops[] = {"<", "<=", "==", "!=", ">", ">="};
    return PyErr_Format(PyExc_TypeError,
                        "'%s' between a tack.Array and %.100s is refused: tack.Array has no elementwise "
                        "operators, and Python's default would compare identity, not values; compare the "
                        "values on the host (a.numpy() %s b.numpy(), numpy.array_equal(a.numpy(), b.numpy())) "
                        "or in a kernel, and identity with 'a is b'",
                        ops[op], other == self ? "itself" : Py_TYPE(other)->tp_name, ops[op]);
}

static Py_hash_t array_hash(PyObject *self) { return PyBaseObject_Type.tp_hash(self); }

static PyObject *array_repr(PyObject *self) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    if (!st)
        return NULL;
    if (st->repr_hook)
        return PyObject_CallOneArg(st->repr_hook, self);
    return PyUnicode_FromFormat("<tack.Array of %s on %s>", tack_dtype_get(tack_array_dtype(ARR(self)))->name,
                                tack_device_name(tack_array_device(ARR(self))));
}

/* pickle (and copy.copy / copy.deepcopy) ask __reduce_ex__, which finds this:
 * the package's hook decides what an array pickles as (tack._pickle). */
static PyObject *array_reduce(PyObject *self, PyObject *unused) {
    (void)unused;
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    if (!st)
        return NULL;
    if (!st->reduce_hook)
        return PyErr_Format(PyExc_TypeError, "cannot pickle 'tack.Array' object (import tack first)");
    return PyObject_CallOneArg(st->reduce_hook, self);
}

static PyObject *array_get_shape(PyObject *self, void *c) {
    return tpy_int64_tuple(tack_array_shape(ARR(self)), tack_array_ndim(ARR(self)));
}
static PyObject *array_get_dtype(PyObject *self, void *c) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    return st ? Py_NewRef(st->dtypes[tack_array_dtype(ARR(self))]) : NULL;
}
static PyObject *array_get_ndim(PyObject *self, void *c) { return PyLong_FromLong(tack_array_ndim(ARR(self))); }
static PyObject *array_get_size(PyObject *self, void *c) { return PyLong_FromLongLong(tack_array_size(ARR(self))); }
static PyObject *array_get_nbytes(PyObject *self, void *c) { return PyLong_FromSize_t(tack_array_nbytes(ARR(self))); }
static PyObject *array_get_writable(PyObject *self, void *c) { return PyBool_FromLong(tack_array_writable(ARR(self))); }
/* Handing out the address shares the storage with whoever takes it: from
 * then on, launches using it complete before the call returns. */
static PyObject *array_get_ptr(PyObject *self, void *c) {
    tack_array_set_flags(ARR(self), tack_array_flags(ARR(self)) | TACK_ARRAY_SHARED);
    return PyLong_FromVoidPtr(tack_array_data(ARR(self)));
}
static PyObject *array_get_strided(PyObject *self, void *c) {
    (void)c;
    return PyBool_FromLong(tack_array_strides(ARR(self)) != NULL);
}
/* __cuda_array_interface__ (tack._cai): an AttributeError off CUDA and HIP, so hasattr() is false there */
static PyObject *array_get_cai(PyObject *self, void *c) {
    (void)c;
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    if (!st || !st->cai_export) {
        PyErr_SetString(PyExc_AttributeError, "__cuda_array_interface__");
        return NULL;
    }
    return PyObject_CallOneArg(st->cai_export, self);
}
/* _strides: the element strides of a strided view, None for C order (tack._cai) */
static PyObject *array_get_strides(PyObject *self, void *c) {
    (void)c;
    const int64_t *t = tack_array_strides(ARR(self));
    if (!t)
        Py_RETURN_NONE;
    return tpy_int64_tuple(t, tack_array_ndim(ARR(self)));
}
static PyObject *array_get_device(PyObject *self, void *c) {
    return PyUnicode_FromString(tack_device_name(tack_array_device(ARR(self))));
}
static PyObject *array_get_shared(PyObject *self, void *c) {
    return PyBool_FromLong((tack_array_flags(ARR(self)) & TACK_ARRAY_SHARED) != 0);
}

static int array_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(((TackArrayObject *)self)->grad);
    return 0;
}

static int array_clear(PyObject *self) {
    Py_CLEAR(((TackArrayObject *)self)->grad);
    return 0;
}

static void array_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (((TackArrayObject *)self)->weakreflist)
        PyObject_ClearWeakRefs(self);
    Py_CLEAR(((TackArrayObject *)self)->grad);
    tpy_array_release(ARR(self)); /* a dealloc may run while an exception propagates */
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyGetSetDef array_getset[] = {
    {"shape", array_get_shape, NULL, "the shape, a tuple of ints", NULL},
    {"dtype", array_get_dtype, NULL, "the element dtype", NULL},
    {"ndim", array_get_ndim, NULL, "the number of dimensions", NULL},
    {"size", array_get_size, NULL, "the number of elements", NULL},
    {"nbytes", array_get_nbytes, NULL, "the bytes of storage", NULL},
    {"writable", array_get_writable, NULL, "whether kernels and copies may write the array", NULL},
    {"ptr", array_get_ptr, NULL, "the address of the first element (a device address on GPUs)", NULL},
    {"device", array_get_device, NULL, "the device name: 'cpu', 'cuda:0', ...", NULL},
    {"shared", array_get_shared, NULL, "whether the storage is shared with another library", NULL},
    {"T", tpy_array_get_T, NULL, "the transpose: a strided view with the axes reversed", NULL},
    {"strided", array_get_strided, NULL, "whether the array is a strided view (a step, a column, a transpose)", NULL},
    {"_strides", array_get_strides, NULL, NULL, NULL},
    {"__cuda_array_interface__", array_get_cai, NULL,
     "the CUDA Array Interface (version 3) of an array on a CUDA or HIP device; see docs/interop.md", NULL},
    {"grad", tpy_array_get_grad, tpy_array_set_grad,
     "the gradient array (same shape, dtype and device) that tack.Tape.backward accumulates into, or None", NULL},
    {"requires_grad", tpy_array_get_requires_grad, tpy_array_set_requires_grad,
     "whether the array has a grad; setting True gives it a zeroed one, False drops it", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef array_methods[] = {
    {"numpy", tpy_array_numpy, METH_NOARGS, "numpy() -> a NumPy copy (vecN arrays get a trailing axis of N)"},
    {"__reduce__", array_reduce, METH_NOARGS,
     "__reduce__() -> how pickle sends the array: a CPU array's values, as NumPy would; refused on other devices"},
    {"__array__", (PyCFunction)(void (*)(void))array_array, METH_VARARGS | METH_KEYWORDS,
     "__array__(dtype=None, copy=None) -> a NumPy copy"},
    {"fill", array_fill, METH_O, "fill(value): set every element to value"},
    {"copy", array_copy, METH_NOARGS, "copy() -> a new array with the same values on the same device"},
    {"__copy__", array_copy, METH_NOARGS, "copy.copy(a): a.copy(), on a's device"},
    {"__deepcopy__", array_deepcopy, METH_O, "copy.deepcopy(a): a.copy(), on a's device"},
    {"to", (PyCFunction)(void (*)(void))array_to, METH_VARARGS | METH_KEYWORDS,
     "to(device, copy=False) -> this array on `device`: itself if it is already there, else a copy"},
    {"to_device", (PyCFunction)(void (*)(void))array_to, METH_VARARGS | METH_KEYWORDS,
     "to_device(device, copy=False): the array API standard's name for to()"},
    {"_copy_from", array_copy_from, METH_O, NULL},
    {"_copy_into", array_copy_into, METH_O, NULL},
    {"_copy_array", array_copy_array, METH_O, NULL},
    {"_readonly_view", array_readonly_view, METH_NOARGS, NULL},
    {"_field_view", tpy_array_field_view, METH_VARARGS, NULL},
    {"reshape", tpy_array_reshape, METH_VARARGS,
     "reshape(*shape) -> a view of the same storage with another shape (one -1 is inferred)"},
    {"ravel", tpy_array_ravel, METH_NOARGS, "ravel() -> a 1-d view of the same storage"},
    {"transpose", tpy_array_transpose, METH_VARARGS,
     "transpose(*axes) -> a strided view with the axes permuted (reversed when none are given)"},
    {"__dlpack__", (PyCFunction)(void (*)(void))tpy_array_dlpack, METH_FASTCALL | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) -> DLPack capsule"},
    {"__dlpack_device__", tpy_array_dlpack_device, METH_NOARGS, "__dlpack_device__() -> (device_type, device_id)"},
    {"__complex__", array_complex, METH_NOARGS, "complex(a): the value of a 0-d array, as NumPy's"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef array_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(TackArrayObject, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot array_slots[] = {
    {Py_tp_members, array_members},
    {Py_tp_repr, array_repr},
    {Py_tp_getset, array_getset},
    {Py_tp_methods, array_methods},
    {Py_tp_traverse, array_traverse},
    {Py_tp_clear, array_clear},
    {Py_tp_dealloc, array_dealloc},
    {Py_nb_bool, array_bool},
    {Py_nb_float, array_float},
    {Py_nb_int, array_int},
    {Py_nb_index, array_index},
    {Py_tp_richcompare, array_richcompare},
    {Py_tp_hash, array_hash},
    {Py_sq_length, array_len},
    {Py_mp_length, array_len},
    {Py_mp_subscript, tpy_array_subscript},
    {Py_tp_doc, "A Tack array: dtype, shape, device and C-contiguous storage (or a strided view of it).\n\n"
                "Create one with tack.array, tack.empty, tack.zeros, tack.ones or tack.full."},
    {0, NULL},
};

static PyMethodDef array_module_methods[] = {
    {"empty", (PyCFunction)(void (*)(void))py_empty, METH_VARARGS | METH_KEYWORDS,
     "empty(shape, dtype, device=None, zero=False) -> Array"},
    {"wrap_buffer", (PyCFunction)(void (*)(void))py_wrap_buffer, METH_VARARGS | METH_KEYWORDS,
     "wrap_buffer(obj, dtype=None, writable=False) -> Array borrowing obj's buffer"},
    {NULL, NULL, 0, NULL},
};

static PyType_Spec array_spec = {
    .name = "tack.Array",
    .basicsize = sizeof(TackArrayObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = array_slots,
};

int tpy_array_exec(PyObject *m, tpy_state *st) {
    st->ArrayType = (PyTypeObject *)PyType_FromModuleAndSpec(m, &array_spec, NULL);
    if (!st->ArrayType || PyModule_AddObjectRef(m, "Array", (PyObject *)st->ArrayType) < 0)
        return -1;
    return PyModule_AddFunctions(m, array_module_methods);
}
