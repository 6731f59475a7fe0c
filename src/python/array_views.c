/*
 * array_views.c -- indexing a tack.Array, and the views that share its
 * storage: a[...], transpose / .T, reshape, ravel and the struct fields'
 * _field_view.
 *
 * a[i, j] (one int per axis) reads one element: a NumPy scalar (a NumPy
 * array of the components for vector and matrix dtypes), copied out of the
 * storage -- on a GPU a one-element copy.  Any other index of ints, slices
 * and an Ellipsis gives a view sharing the storage, as in NumPy.  One
 * the storage serves in C order -- leading ints (a[i] of a 2-d array is row
 * i), then at most one slice with step 1, then only full slices (a[2:5],
 * a[1, 2:4], a[2:5, :]) -- is an ordinary array (tack_array_subview); a
 * step, an int after a slice, a partial slice after a slice (a[::2],
 * a[::-1], m[:, 0], m[1:3, 1:3]) and a.T / a.transpose() give a strided view
 * (tack_array_as_strided, runtime/strided.c) that kernels read and write in
 * place on every device and .numpy() copies out; the C-order operations
 * (fill, copy into it, reshape, DLPack export) refuse it.  On OpenCL, whose
 * buffers the host cannot offset, a view starting inside its buffer is such
 * a view too (the kernel adds the offset).  An index array or a boolean
 * mask (a list, a NumPy or Tack array) is NumPy's advanced indexing: a copy,
 * made on the host by tack._array._index_copy.  newaxis and bools raise
 * IndexError pointing at .numpy() or a kernel.
 * Every view holds the storage, so the storage's flags (shared, read-only
 * owner) apply to it.
 *
 * The arithmetic of a view (offsets, strides, bounds) is libtack's; this
 * file only turns Python's index objects into it, and the Array type
 * (array.c) lists these functions in its slots and tables.
 */
#include "tack_py.h"

#define ARR(o) (((TackArrayObject *)(o))->arr)

static PyObject *shape_repr(tack_array *a) { return tpy_int64_tuple(tack_array_shape(a), tack_array_ndim(a)); }

static PyObject *unsupported_index(PyObject *key, const char *why) {
    PyErr_Format(PyExc_IndexError,
                 "tack.Array index %R: %s; tack.Array takes ints (negative ones count from the end), slices "
                 "and an Ellipsis, which give views sharing the storage -- for other indexing copy "
                 "with .numpy() or use a kernel", key, why);
    return NULL;
}

/* The element `start` (flat, C order) of `a`, copied to the host. */
static PyObject *read_element(PyObject *self, tack_array *a, int64_t start, PyObject *key) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    tack_array *v = NULL;
    PyObject *tmp, *host, *out;
    if (!st)
        return NULL;
    if (tack_array_strides(a) && tack_device_kind(tack_array_device(a)) != TACK_DEVICE_OPENCL) {
        /* an element of a strided view: a 0-d view of it, `start` elements from its first */
        if (tack_array_as_strided(a, start, 0, NULL, NULL, &v) != TACK_OK)
            return tpy_raise();
    } else if ((start != 0 || tack_array_strides(a)) && tack_device_kind(tack_array_device(a)) == TACK_DEVICE_OPENCL) {
        /* OpenCL buffers have no addresses to offset: copy all, then pick. */
        host = tpy_array_numpy(self, NULL);
        out = host ? PyObject_GetItem(host, key) : NULL;
        Py_XDECREF(host);
        return out;
    } else if (tack_array_subview(a, start, 0, NULL, &v) != TACK_OK) {
        return tpy_raise();
    }
    if (!(tmp = tpy_array_new(st, v)))
        return NULL;
    host = tpy_array_numpy(tmp, NULL);
    Py_DECREF(tmp);
    if (!host || tack_dtype_get(tack_array_dtype(a))->rows > 1)
        return host; /* a vector or matrix element: its components */
    PyObject *empty = PyTuple_New(0);
    out = empty ? PyObject_GetItem(host, empty) : NULL; /* the NumPy scalar */
    Py_XDECREF(empty);
    Py_DECREF(host);
    return out;
}

/* Whether index item `it` is an index array or a mask, as NumPy reads it: a
 * list or tuple, a tack.Array, or anything NumPy converts (__array__). */
static int is_index_array(tpy_state *st, PyObject *it) {
    return PyList_Check(it) || PyTuple_Check(it) || PyObject_TypeCheck(it, st->ArrayType) ||
           PyObject_HasAttrString(it, "__array__");
}

/* a[key] for a key holding an index array or a mask: NumPy's advanced
 * indexing, which copies (as NumPy's does).  tack._array._index_copy reads
 * the array to the host, indexes it with NumPy and copies the result to the
 * array's device: NumPy's shapes, order, bounds checks and messages. */
static PyObject *index_copy(PyObject *self, PyObject *key) {
    PyObject *mod = PyImport_ImportModule("tack._array"), *out = NULL;
    if (mod) {
        out = PyObject_CallMethod(mod, "_index_copy", "OO", self, key);
        Py_DECREF(mod);
    }
    return out;
}

/* An Ellipsis before other indices (rgb[..., 0], img[..., ::-1]) stands for as many full slices
 * as the axes the other indices leave, as in NumPy: *items becomes that tuple, and *ellipsis says
 * one was there (a[i, j, ...] of a 2-d array is a 0-d view, not an element).  A final Ellipsis is
 * left for the loop below, a second one is NumPy's IndexError.  An index array or mask counts as
 * one axis here; such a key goes to index_copy with the key as it was, which NumPy reads. */
static int expand_ellipsis(PyObject **items, int nd, int *ellipsis) {
    Py_ssize_t n = PyTuple_GET_SIZE(*items), at = -1;
    for (Py_ssize_t j = 0; j < n; j++) {
        if (PyTuple_GET_ITEM(*items, j) != Py_Ellipsis)
            continue;
        if (at >= 0) {
            PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
            return -1;
        }
        at = j;
    }
    if (at < 0 || at == n - 1)
        return 0;
    Py_ssize_t fill = nd - (n - 1) > 0 ? nd - (n - 1) : 0;
    PyObject *out = PyTuple_New(n - 1 + fill);
    if (!out)
        return -1;
    Py_ssize_t k = 0;
    for (Py_ssize_t j = 0; j < n; j++) {
        if (j != at) {
            PyTuple_SET_ITEM(out, k++, Py_NewRef(PyTuple_GET_ITEM(*items, j)));
            continue;
        }
        for (Py_ssize_t f = 0; f < fill; f++) {
            PyObject *all = PySlice_New(NULL, NULL, NULL);
            if (!all) {
                Py_DECREF(out);
                return -1;
            }
            PyTuple_SET_ITEM(out, k++, all);
        }
    }
    Py_SETREF(*items, out);
    *ellipsis = 1;
    return 0;
}

PyObject *tpy_array_subscript(PyObject *self, PyObject *key) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    tack_array *a = ARR(self), *v = NULL;
    int nd = tack_array_ndim(a), axis = 0, nout = 0, sliced = 0, ellipsis = 0;
    const int64_t *shape = tack_array_shape(a), *own = tack_array_strides(a);
    /* start: element (0, ...) of the result, in elements from a's; in C order while `corder` holds */
    int64_t start = 0, stride[TACK_MAX_NDIM], out_shape[TACK_MAX_NDIM], out_stride[TACK_MAX_NDIM];
    int corder = own == NULL;
    PyObject *items = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
    if (!st || !items)
        goto fail;
    if (expand_ellipsis(&items, nd, &ellipsis) < 0)
        goto fail;
    {
        int64_t s = 1;
        for (int k = nd - 1; k >= 0; k--) {
            stride[k] = own ? own[k] : s;
            s *= shape[k];
        }
    }
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *it = PyTuple_GET_ITEM(items, j);
        if (it == Py_Ellipsis) { /* the last index: expand_ellipsis expanded any other */
            ellipsis = 1;
            break;
        }
        if (axis >= nd) {
            PyErr_Format(PyExc_IndexError,
                         "too many indices for array: array is %d-dimensional, but %zd were indexed", nd,
                         n - (PyTuple_GET_ITEM(items, n - 1) == Py_Ellipsis));
            goto fail;
        }
        if (PySlice_Check(it)) {
            Py_ssize_t lo, hi, step, len;
            if (PySlice_Unpack(it, &lo, &hi, &step) < 0)
                goto fail;
            len = PySlice_AdjustIndices((Py_ssize_t)shape[axis], &lo, &hi, step);
            /* C order survives leading ints, one slice of step 1, then full slices */
            if (step != 1 || (sliced && (lo != 0 || len != shape[axis])))
                corder = 0;
            sliced = 1;
            if (len > 0)
                start += (int64_t)lo * stride[axis];
            out_shape[nout] = len;
            out_stride[nout++] = (int64_t)step * stride[axis];
            axis++;
            continue;
        }
        if (!PyBool_Check(it) && !PyIndex_Check(it) && is_index_array(st, it)) {
            Py_DECREF(items);
            return index_copy(self, key);
        }
        if (PyBool_Check(it) || !PyIndex_Check(it)) {
            unsupported_index(key, PyBool_Check(it) ? "a bool is not an index"
                                                    : "only ints, slices, an Ellipsis, and integer arrays "
                                                      "and boolean masks (which copy) are indices");
            goto fail;
        }
        if (sliced)
            corder = 0; /* an int after a slice: a strided view */
        Py_ssize_t i = PyNumber_AsSsize_t(it, PyExc_IndexError);
        if (i == -1 && PyErr_ExceptionMatches(PyExc_TypeError) && is_index_array(st, it)) {
            PyErr_Clear(); /* a NumPy array of more than one element: NumPy's advanced indexing */
            Py_DECREF(items);
            return index_copy(self, key);
        }
        if (i == -1 && PyErr_Occurred())
            goto fail;
        int64_t idx = i < 0 ? (int64_t)i + shape[axis] : (int64_t)i;
        if (idx < 0 || idx >= shape[axis]) {
            PyObject *sh = shape_repr(a);
            if (sh)
                PyErr_Format(PyExc_IndexError,
                             "index %zd is out of bounds for axis %d with size %lld (array shape %R)", i,
                             axis, (long long)shape[axis], sh);
            Py_XDECREF(sh);
            goto fail;
        }
        start += idx * stride[axis];
        axis++;
    }
    for (int k = axis; k < nd; k++) {
        out_shape[nout] = shape[k];
        out_stride[nout++] = stride[k];
    }
    Py_DECREF(items);
    if (axis == nd && !sliced && !ellipsis)
        return read_element(self, a, start, key);
    /* an OpenCL buffer cannot be offset by the host: a view inside one is a strided view and its offset */
    if (corder && start != 0 && tack_device_kind(tack_array_device(a)) == TACK_DEVICE_OPENCL)
        corder = 0;
    if (corder ? tack_array_subview(a, start, nout, out_shape, &v) != TACK_OK
               : tack_array_as_strided(a, start, nout, out_shape, out_stride, &v) != TACK_OK)
        return tpy_raise();
    return tpy_array_new(st, v);
fail:
    Py_XDECREF(items);
    return NULL;
}

/* a.transpose(*axes) and a.T: a strided view with the axes permuted (none:
 * reversed), as NumPy's; a 1-d or 0-d array's is a view of itself. */
static PyObject *transpose(PyObject *self, PyObject *axes) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    tack_array *a = ARR(self), *v = NULL;
    int nd = tack_array_ndim(a), perm[TACK_MAX_NDIM], seen[TACK_MAX_NDIM] = {0};
    const int64_t *shape = tack_array_shape(a), *own = tack_array_strides(a);
    int64_t stride[TACK_MAX_NDIM], out_shape[TACK_MAX_NDIM], out_stride[TACK_MAX_NDIM], c = 1;
    if (!st)
        return NULL;
    Py_ssize_t na = axes ? PyTuple_GET_SIZE(axes) : 0;
    if (na == 1 && !PyIndex_Check(PyTuple_GET_ITEM(axes, 0)) && PyTuple_GET_ITEM(axes, 0) != Py_None) {
        PyObject *seq = PySequence_Tuple(PyTuple_GET_ITEM(axes, 0));
        if (!seq)
            return NULL;
        PyObject *r = transpose(self, seq);
        Py_DECREF(seq);
        return r;
    }
    if (na == 1 && PyTuple_GET_ITEM(axes, 0) == Py_None)
        na = 0;
    if (na != 0 && na != nd)
        return PyErr_Format(PyExc_ValueError, "axes don't match array: %zd axes for a %d-dimensional array", na, nd);
    for (int k = nd - 1; k >= 0; k--) {
        stride[k] = own ? own[k] : c;
        c *= shape[k];
    }
    for (int k = 0; k < nd; k++) {
        long p = nd - 1 - k;
        if (na) {
            p = PyLong_AsLong(PyTuple_GET_ITEM(axes, k));
            if (p == -1 && PyErr_Occurred())
                return NULL;
            if (p < 0)
                p += nd;
            if (p < 0 || p >= nd || seen[p]++)
                return PyErr_Format(PyExc_ValueError, "axes %R are not a permutation of %d axes", axes, nd);
        }
        perm[k] = (int)p;
        out_shape[k] = shape[perm[k]];
        out_stride[k] = stride[perm[k]];
    }
    if (tack_array_as_strided(a, 0, nd, out_shape, out_stride, &v) != TACK_OK)
        return tpy_raise();
    return tpy_array_new(st, v);
}

PyObject *tpy_array_transpose(PyObject *self, PyObject *args) { return transpose(self, args); }
PyObject *tpy_array_get_T(PyObject *self, void *c) {
    (void)c;
    return transpose(self, NULL);
}

/* _field_view(dtype, offset, shape, strides): a strided view of this C-order
 * storage read as `dtype` elements, from element `offset` with element
 * `strides` -- one field of an array of records (tack._structs), whose
 * bytes the storage holds.  The runtime checks the view stays inside. */
PyObject *tpy_array_field_view(PyObject *self, PyObject *args) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    tack_array *a = ARR(self), *flat = NULL, *v = NULL;
    PyObject *dtobj, *shobj, *strobj, *seq = NULL, *result = NULL;
    long long offset;
    tack_dtype dt;
    int64_t shape[TACK_MAX_NDIM], strides[TACK_MAX_NDIM], n;
    int nd = 0;
    if (!st || !PyArg_ParseTuple(args, "OLOO:_field_view", &dtobj, &offset, &shobj, &strobj))
        return NULL;
    if (tpy_dtype_from_object(st, dtobj, &dt) < 0 || tpy_parse_shape(shobj, shape, &nd) < 0)
        return NULL;
    seq = PySequence_Fast(strobj, "_field_view: strides must be a sequence of ints");
    if (!seq)
        return NULL;
    if (PySequence_Fast_GET_SIZE(seq) != nd) {
        PyErr_SetString(PyExc_ValueError, "_field_view: one stride per axis");
        goto done;
    }
    for (int i = 0; i < nd; i++) {
        strides[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (strides[i] == -1 && PyErr_Occurred())
            goto done;
    }
    n = (int64_t)(tack_array_nbytes(a) / tack_dtype_get(dt)->itemsize);
    if (tack_array_reshape(a, dt, 1, &n, &flat) != TACK_OK ||
        tack_array_as_strided(flat, offset, nd, shape, strides, &v) != TACK_OK) {
        tpy_raise();
        goto done;
    }
    result = tpy_array_new(st, v);
done:
    if (flat)
        tpy_array_release(flat);
    Py_XDECREF(seq);
    return result;
}

/* reshape(*shape) or reshape(shape): a view with the new shape; one -1
 * takes the size the others leave. */
PyObject *tpy_array_reshape(PyObject *self, PyObject *args) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    tack_array *a = ARR(self), *v = NULL;
    PyObject *spec = args;
    int64_t shape[TACK_MAX_NDIM], known = 1;
    int unknown = -1;
    if (!st)
        return NULL;
    /* one sequence of ints: a tuple, a list, a NumPy array (which also has __index__) */
    if (PyTuple_GET_SIZE(args) == 1 &&
        (!PyIndex_Check(PyTuple_GET_ITEM(args, 0)) || PySequence_Check(PyTuple_GET_ITEM(args, 0))))
        spec = PyTuple_GET_ITEM(args, 0);
    PyObject *seq = PySequence_Fast(spec, "reshape() takes ints or one sequence of ints");
    if (!seq)
        return NULL;
    Py_ssize_t nd = PySequence_Fast_GET_SIZE(seq);
    if (nd > TACK_MAX_NDIM) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "shape %R has %zd dimensions; Tack arrays have at most %d", spec,
                            nd, TACK_MAX_NDIM);
    }
    for (Py_ssize_t i = 0; i < nd; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
        if (PyBool_Check(it) || !PyIndex_Check(it)) {
            PyErr_Format(PyExc_TypeError, "reshape(): shape entries must be ints, got %.100s in %R",
                         Py_TYPE(it)->tp_name, spec);
            goto fail;
        }
        long long d = PyLong_AsLongLong(it);
        if (d == -1 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError))
                goto fail;
            PyErr_Clear();
            d = -2;
        }
        if (d == -1) {
            if (unknown >= 0) {
                PyErr_Format(PyExc_ValueError, "reshape(): can only specify one unknown dimension (-1), got %R",
                             spec);
                goto fail;
            }
            unknown = (int)i;
        } else if (d < 0) {
            PyErr_Format(PyExc_ValueError, "reshape(): invalid dimension in shape %R", spec);
            goto fail;
        } else if (__builtin_mul_overflow(known, (int64_t)d, &known)) {
            known = -1;
        }
        shape[i] = d;
    }
    Py_DECREF(seq);
    int64_t size = tack_array_size(a);
    if (unknown >= 0) {
        if (known <= 0 || size % known != 0)
            known = -1;
        else
            shape[unknown] = size / known;
    }
    if (known < 0 || (unknown < 0 && known != size) || (unknown >= 0 && known == 0)) {
        PyObject *sh = shape_repr(a);
        if (sh)
            PyErr_Format(PyExc_ValueError, "cannot reshape an array of size %lld (shape %R) into shape %R",
                         (long long)size, sh, spec);
        Py_XDECREF(sh);
        return NULL;
    }
    if (tack_array_reshape(a, tack_array_dtype(a), (int)nd, shape, &v) != TACK_OK)
        return tpy_raise();
    return tpy_array_new(st, v);
fail:
    Py_DECREF(seq);
    return NULL;
}

/* ravel(): the elements as one axis -- always a view, the storage being
 * C-contiguous. */
PyObject *tpy_array_ravel(PyObject *self, PyObject *unused) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    tack_array *v = NULL;
    int64_t n;
    if (!st)
        return NULL;
    n = tack_array_size(ARR(self));
    if (tack_array_reshape(ARR(self), tack_array_dtype(ARR(self)), 1, &n, &v) != TACK_OK)
        return tpy_raise();
    return tpy_array_new(st, v);
}
