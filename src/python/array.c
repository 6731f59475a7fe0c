/*
 * array.c -- the Array heap type: a Python handle on a tack_array.
 *
 * An Array owns one reference to a tack_array and nothing else; shape,
 * dtype, device and storage all live in libtack.  Tack arrays deliberately
 * offer neither the buffer protocol nor __array_interface__ (DESIGN 4):
 * NumPy gets values through .numpy()/__array__ (copies) or shares storage
 * through DLPack, where lifetime and device are explicit.
 *
 * The other direction is here too: tpy_wrap_buffer borrows any object
 * with the buffer protocol (a NumPy array, a bytearray, a VTK array) as a
 * CPU array.  The Py_buffer is held until libtack releases the storage,
 * which may happen on a thread without the GIL, so the release callback
 * takes the GIL itself and does nothing once the interpreter is finalizing.
 * A kernel's argument may be a non-contiguous view (m[:, 0], a[::-1], m.T):
 * it is borrowed as a strided array, element strides from the buffer's byte
 * strides, that only the kernel call holds (runtime/strided.c).  NumPy has
 * no bfloat16; an ml_dtypes bfloat16 array, which has no buffer, is borrowed
 * through a uint16 view of its bits as a bf16 array (tpy_get_buffer, dtype.c).
 */
#include "tack_py.h"

#include <string.h>
#include <structmember.h>

/* ----------------------------------------------------- buffer borrowing */
typedef struct {
    Py_buffer view;
} held_buffer;

static void release_buffer(void *ctx) {
    held_buffer *h = ctx;
    if (!Py_IsInitialized() || _Py_IsFinalizing()) {
        tack_free(h); /* the interpreter is gone: the object went with it */
        return;
    }
    PyGILState_STATE g = PyGILState_Ensure();
    PyBuffer_Release(&h->view);
    PyGILState_Release(g);
    tack_free(h);
}

void tpy_release_object(void *ctx) {
    if (!Py_IsInitialized() || _Py_IsFinalizing())
        return;
    PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF((PyObject *)ctx);
    PyGILState_Release(g);
}

/* struct-module format -> dtype, for native-endian scalars. */
static int format_dtype(const char *fmt, tack_dtype *out) {
    if (!fmt)
        fmt = "B";
    if (*fmt == '@' || *fmt == '=' || *fmt == '<')
        fmt++;
    if (fmt[0] == 'Z' && (fmt[1] == 'f' || fmt[1] == 'd') && fmt[2] == '\0') { /* NumPy's complex64 / complex128 */
        *out = fmt[1] == 'f' ? TACK_C64 : TACK_C128;
        return 0;
    }
    if (fmt[0] == '\0' || fmt[1] != '\0')
        return -1;
    switch (fmt[0]) {
    case '?': *out = TACK_BOOL; return 0;
    case 'b': *out = TACK_I8; return 0;
    case 'B': *out = TACK_U8; return 0;
    case 'h': *out = TACK_I16; return 0;
    case 'H': *out = TACK_U16; return 0;
    case 'i': *out = TACK_I32; return 0;
    case 'I': *out = TACK_U32; return 0;
    case 'l': *out = sizeof(long) == 8 ? TACK_I64 : TACK_I32; return 0;
    case 'L': *out = sizeof(long) == 8 ? TACK_U64 : TACK_U32; return 0;
    case 'q': *out = TACK_I64; return 0;
    case 'Q': *out = TACK_U64; return 0;
    case 'e': *out = TACK_F16; return 0;
    case 'f': *out = TACK_F32; return 0;
    case 'd': *out = TACK_F64; return 0;
    default: return -1;
    }
}

/* The launch's fast path for an exact numpy.ndarray that is not asked to be
 * writable (a kernel argument): one export asking for no writable buffer,
 * which spares NumPy's writability checks (PyArray_FailUnlessWriteable) and,
 * for a read-only array, the failed first request and its exception.  NumPy
 * fills `readonly` from the array's flags whatever was asked, so a writable
 * array comes back as the general path would have it.  A read-only one --
 * or one NumPy warns about on writing (np.broadcast_arrays' results), which
 * it reports read-only too -- is handed back (-1, no exception) to the
 * general path, which asks for a writable buffer first as before, warning
 * included; so is an array whose export fails (an ml_dtypes bfloat16 array,
 * exported through its bits).  0 with the view held. */
static int borrow_ndarray(PyObject *obj, Py_buffer *view) {
    if (PyObject_GetBuffer(obj, view, PyBUF_RECORDS_RO | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        return -1;
    }
    if (view->readonly) {
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

int tpy_learn_ndarray(tpy_state *st, PyObject *obj) {
    PyTypeObject *tp = Py_TYPE(obj);
    PyObject *np, *nd;
    if (st->ndarray || strcmp(tp->tp_name, "numpy.ndarray") != 0)
        return 0;
    if (!(np = tpy_numpy(st)) || !(nd = PyObject_GetAttrString(np, "ndarray")))
        return -1;
    if (nd == (PyObject *)tp)
        st->ndarray = (PyTypeObject *)nd; /* the state's reference (module.c clears it) */
    else
        Py_DECREF(nd);
    return 0;
}

tack_array *tpy_wrap_buffer(tpy_state *st, PyObject *obj, int dtype_hint, int want_writable, int allow_strided) {
    held_buffer *h = tack_malloc(sizeof *h);
    tack_array *arr = NULL;
    int writable = 1, bf16 = 0;
    if (!h) {
        PyErr_NoMemory();
        return NULL;
    }
    if (!want_writable && Py_TYPE(obj) == st->ndarray && borrow_ndarray(obj, &h->view) == 0) {
        /* a writable NumPy array, exported without the writable request's checks */
    } else if (tpy_get_buffer(st, obj, &h->view, PyBUF_RECORDS | PyBUF_FORMAT, &bf16) < 0) {
        if (want_writable && !PyErr_ExceptionMatches(PyExc_BufferError))
            goto fail;
        PyErr_Clear();
        writable = 0;
        if (tpy_get_buffer(st, obj, &h->view, PyBUF_RECORDS_RO | PyBUF_FORMAT, &bf16) < 0)
            goto fail;
    }
    int strided = !PyBuffer_IsContiguous(&h->view, 'C');
    if (strided && (!allow_strided || dtype_hint >= 0)) {
        PyErr_Format(PyExc_BufferError,
                     "a %.100s with non-contiguous storage cannot be shared as a tack.Array, which is "
                     "C-contiguous; pass the view to a kernel directly (kernels read and write strided views "
                     "in place), or share a contiguous copy and copy the results back into it",
                     Py_TYPE(obj)->tp_name);
        goto fail_release;
    }
    tack_dtype dt;
    if (bf16)
        dt = TACK_BF16; /* the bits of an ml_dtypes bfloat16 array (tpy_get_buffer) */
    else if (format_dtype(h->view.format, &dt) < 0) {
        PyErr_Format(PyExc_TypeError, "a %.100s with buffer format '%s' has no Tack dtype",
                     Py_TYPE(obj)->tp_name, h->view.format ? h->view.format : "B");
        goto fail_release;
    }
    int64_t shape[TACK_MAX_NDIM];
    int ndim = h->view.ndim;
    if (ndim > TACK_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "a %d-dimensional buffer has more than %d dimensions", ndim,
                     TACK_MAX_NDIM);
        goto fail_release;
    }
    for (int i = 0; i < ndim; i++)
        shape[i] = h->view.shape ? h->view.shape[i] : h->view.len / h->view.itemsize;
    if (ndim == 0 && !h->view.shape && h->view.len != h->view.itemsize) {
        ndim = 1;
        shape[0] = h->view.len / h->view.itemsize;
    }
    if (dtype_hint >= 0 && (tack_dtype)dtype_hint != dt) {
        /* Trailing axes fold into a vector or matrix dtype. */
        const tack_dtype_info *hi = tack_dtype_get((tack_dtype)dtype_hint);
        int fold = hi->cols > 1 ? 2 : (hi->rows > 1 ? 1 : 0);
        if (hi->scalar != dt || ndim < fold || (fold >= 1 && shape[ndim - fold] != hi->rows) ||
            (fold == 2 && shape[ndim - 1] != hi->cols) || fold == 0) {
            PyErr_Format(PyExc_TypeError, "cannot view a %.100s of %s as %s", Py_TYPE(obj)->tp_name,
                         tack_dtype_get(dt)->name, hi->name);
            goto fail_release;
        }
        ndim -= fold;
        dt = (tack_dtype)dtype_hint;
    }
    writable = writable && !h->view.readonly;
    if (want_writable && !writable) {
        PyErr_Format(PyExc_ValueError, "a read-only %.100s cannot be shared as writable",
                     Py_TYPE(obj)->tp_name);
        goto fail_release;
    }
    int64_t strides[TACK_MAX_NDIM];
    for (int i = 0; strided && i < ndim; i++) { /* bytes -> elements */
        if (h->view.strides[i] % h->view.itemsize != 0) {
            PyErr_Format(PyExc_ValueError,
                         "a %.100s with a stride of %zd bytes on axis %d, not a multiple of its %zd-byte "
                         "elements, cannot be indexed by a kernel; pass a copy (x.copy()) and copy the results "
                         "back into it",
                         Py_TYPE(obj)->tp_name, h->view.strides[i], i, h->view.itemsize);
            goto fail_release;
        }
        strides[i] = h->view.strides[i] / h->view.itemsize;
    }
    if ((strided ? tack_array_wrap_strided(NULL, dt, ndim, shape, strides, h->view.buf, writable, release_buffer, h,
                                           &arr)
                 : tack_array_wrap(NULL, dt, ndim, shape, h->view.buf, writable, release_buffer, h, &arr)) != TACK_OK)
    {
        tpy_raise(); /* the wrap released h */
        return NULL;
    }
    return arr;
fail_release:
    PyBuffer_Release(&h->view);
fail:
    tack_free(h);
    return NULL;
}

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
    if (PyLong_Check(obj)) {
        shape[0] = PyLong_AsLongLong(obj);
        if (shape[0] == -1 && PyErr_Occurred())
            goto overflow;
        *ndim = 1;
        goto checked;
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
    if (tpy_parse_shape(shape_obj, shape, &ndim) < 0 || tpy_dtype_from_object(st, dtype_obj, &dt) < 0)
        return NULL;
    tack_device *dev = tpy_device_from_object(st, device_obj);
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

static PyObject *array_copy_from(PyObject *self, PyObject *src) {
    Py_buffer view;
    tack_status s;
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    if (!st || get_exact_buffer(st, src, &view, PyBUF_C_CONTIGUOUS, tack_array_nbytes(ARR(self))) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    s = tack_array_copy_from_host(ARR(self), view.buf, (size_t)view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (s != TACK_OK)
        return tpy_raise();
    Py_RETURN_NONE;
}

static PyObject *array_copy_into(PyObject *self, PyObject *dst) {
    Py_buffer view;
    tack_status s;
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    if (!st || get_exact_buffer(st, dst, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE, tack_array_nbytes(ARR(self))) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    s = tack_array_copy_to_host(ARR(self), view.buf, (size_t)view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (s != TACK_OK)
        return tpy_raise();
    Py_RETURN_NONE;
}

static PyObject *get_numpy_shape(tack_array *a) {
    const tack_dtype_info *i = tack_dtype_get(tack_array_dtype(a));
    int nd = tack_array_ndim(a), extra = i->cols > 1 ? 2 : (i->rows > 1 ? 1 : 0);
    PyObject *t = PyTuple_New(nd + extra);
    if (!t)
        return NULL;
    for (int k = 0; k < nd + extra; k++) {
        long long v = k < nd ? (long long)tack_array_shape(a)[k] : (k == nd ? i->rows : i->cols);
        PyObject *o = PyLong_FromLongLong(v);
        if (!o) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, k, o);
    }
    return t;
}

static PyObject *array_numpy(PyObject *self, PyObject *unused) {
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
    PyObject *out = array_numpy(self, NULL);
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
    int is_number = PyBool_Check(value) || PyLong_Check(value) || PyFloat_Check(value);
    if (!st || !(np = tpy_numpy(st)))
        return NULL;
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

static PyObject *array_copy(PyObject *self, PyObject *unused) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    tack_array *c = NULL;
    tack_status s;
    if (!st)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    s = tack_array_clone(ARR(self), NULL, &c);
    Py_END_ALLOW_THREADS
    if (s != TACK_OK)
        return tpy_raise();
    return tpy_array_new(st, c);
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
    tack_array *c = NULL;
    tack_status s;
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    if (!st || !PyArg_ParseTupleAndKeywords(args, kw, "O|p:to", names, &device_obj, &copy))
        return NULL;
    tack_device *dev = tpy_device_from_object(st, device_obj);
    if (!dev)
        return NULL;
    if (dev == tack_array_device(ARR(self)) && !copy)
        return Py_NewRef(self);
    Py_BEGIN_ALLOW_THREADS
    s = tack_array_clone(ARR(self), dev, &c);
    Py_END_ALLOW_THREADS
    if (s != TACK_OK)
        return tpy_raise();
    return tpy_array_new(st, c);
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

/* ------------------------------------------------------ indexing, views
 *
 * a[i, j] (one int per axis) reads one element: a NumPy scalar (a NumPy
 * array of the components for vector and matrix dtypes), copied out of the
 * storage -- on a GPU a one-element copy.  Any other index of ints, slices
 * and a final Ellipsis gives a view sharing the storage, as in NumPy.  One
 * the storage serves in C order -- leading ints (a[i] of a 2-d array is row
 * i), then at most one slice with step 1, then only full slices (a[2:5],
 * a[1, 2:4], a[2:5, :]) -- is an ordinary array (tack_array_subview); a
 * step, an int after a slice, a partial slice after a slice (a[::2],
 * a[::-1], m[:, 0], m[1:3, 1:3]) and a.T / a.transpose() give a strided view
 * (tack_array_as_strided, runtime/strided.c) that kernels read and write in
 * place on every device and .numpy() copies out; the C-order operations
 * (fill, copy into it, reshape, DLPack export) refuse it.  On OpenCL, whose
 * buffers the host cannot offset, a view starting inside its buffer is such
 * a view too (the kernel adds the offset).  newaxis, bools
 * and index arrays raise IndexError pointing at .numpy() or a kernel.
 * Every view holds the storage, so the storage's flags (shared, read-only
 * owner) apply to it. */

static PyObject *shape_repr(tack_array *a) {
    PyObject *t = PyTuple_New(tack_array_ndim(a));
    for (int i = 0; t && i < tack_array_ndim(a); i++) {
        PyObject *o = PyLong_FromLongLong(tack_array_shape(a)[i]);
        if (!o) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, o);
    }
    return t;
}

static PyObject *unsupported_index(PyObject *key, const char *why) {
    PyErr_Format(PyExc_IndexError,
                 "tack.Array index %R: %s; tack.Array takes ints (negative ones count from the end), slices "
                 "and a final Ellipsis, which give views sharing the storage -- for other indexing copy "
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
        host = array_numpy(self, NULL);
        out = host ? PyObject_GetItem(host, key) : NULL;
        Py_XDECREF(host);
        return out;
    } else if (tack_array_subview(a, start, 0, NULL, &v) != TACK_OK) {
        return tpy_raise();
    }
    if (!(tmp = tpy_array_new(st, v)))
        return NULL;
    host = array_numpy(tmp, NULL);
    Py_DECREF(tmp);
    if (!host || tack_dtype_get(tack_array_dtype(a))->rows > 1)
        return host; /* a vector or matrix element: its components */
    PyObject *empty = PyTuple_New(0);
    out = empty ? PyObject_GetItem(host, empty) : NULL; /* the NumPy scalar */
    Py_XDECREF(empty);
    Py_DECREF(host);
    return out;
}

static PyObject *array_subscript(PyObject *self, PyObject *key) {
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
        if (it == Py_Ellipsis) {
            ellipsis = 1;
            if (j != n - 1) {
                unsupported_index(key, "an Ellipsis must be the last index");
                goto fail;
            }
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
        if (PyBool_Check(it) || !PyIndex_Check(it)) {
            unsupported_index(key, PyBool_Check(it) ? "a bool is not an index"
                                                    : "only ints, slices and a final Ellipsis are indices");
            goto fail;
        }
        if (sliced)
            corder = 0; /* an int after a slice: a strided view */
        Py_ssize_t i = PyNumber_AsSsize_t(it, PyExc_IndexError);
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

static PyObject *array_transpose(PyObject *self, PyObject *args) { return transpose(self, args); }
static PyObject *array_get_T(PyObject *self, void *c) {
    (void)c;
    return transpose(self, NULL);
}

/* _field_view(dtype, offset, shape, strides): a strided view of this C-order
 * storage read as `dtype` elements, from element `offset` with element
 * `strides` -- one field of an array of records (tack._structs), whose
 * bytes the storage holds.  The runtime checks the view stays inside. */
static PyObject *array_field_view(PyObject *self, PyObject *args) {
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
static PyObject *array_reshape(PyObject *self, PyObject *args) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    tack_array *a = ARR(self), *v = NULL;
    PyObject *spec = args;
    int64_t shape[TACK_MAX_NDIM], known = 1;
    int unknown = -1;
    if (!st)
        return NULL;
    if (PyTuple_GET_SIZE(args) == 1 && !PyIndex_Check(PyTuple_GET_ITEM(args, 0)))
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
static PyObject *array_ravel(PyObject *self, PyObject *unused) {
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
    tack_array *a = ARR(self);
    PyObject *t = PyTuple_New(tack_array_ndim(a));
    for (int i = 0; t && i < tack_array_ndim(a); i++) {
        PyObject *o = PyLong_FromLongLong(tack_array_shape(a)[i]);
        if (!o) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, o);
    }
    return t;
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
    int nd = tack_array_ndim(ARR(self));
    PyObject *out = PyTuple_New(nd);
    for (int i = 0; out && i < nd; i++) {
        PyObject *v = PyLong_FromLongLong(t[i]);
        if (!v) {
            Py_CLEAR(out);
            break;
        }
        PyTuple_SET_ITEM(out, i, v);
    }
    return out;
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
    {"T", array_get_T, NULL, "the transpose: a strided view with the axes reversed", NULL},
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
    {"numpy", array_numpy, METH_NOARGS, "numpy() -> a NumPy copy (vecN arrays get a trailing axis of N)"},
    {"__reduce__", array_reduce, METH_NOARGS,
     "__reduce__() -> how pickle sends the array: a CPU array's values, as NumPy would; refused on other devices"},
    {"__array__", (PyCFunction)(void (*)(void))array_array, METH_VARARGS | METH_KEYWORDS,
     "__array__(dtype=None, copy=None) -> a NumPy copy"},
    {"fill", array_fill, METH_O, "fill(value): set every element to value"},
    {"copy", array_copy, METH_NOARGS, "copy() -> a new array with the same values on the same device"},
    {"to", (PyCFunction)(void (*)(void))array_to, METH_VARARGS | METH_KEYWORDS,
     "to(device, copy=False) -> this array on `device`: itself if it is already there, else a copy"},
    {"to_device", (PyCFunction)(void (*)(void))array_to, METH_VARARGS | METH_KEYWORDS,
     "to_device(device, copy=False): the array API standard's name for to()"},
    {"_copy_from", array_copy_from, METH_O, NULL},
    {"_copy_into", array_copy_into, METH_O, NULL},
    {"_copy_array", array_copy_array, METH_O, NULL},
    {"_readonly_view", array_readonly_view, METH_NOARGS, NULL},
    {"_field_view", array_field_view, METH_VARARGS, NULL},
    {"reshape", array_reshape, METH_VARARGS,
     "reshape(*shape) -> a view of the same storage with another shape (one -1 is inferred)"},
    {"ravel", array_ravel, METH_NOARGS, "ravel() -> a 1-d view of the same storage"},
    {"transpose", array_transpose, METH_VARARGS,
     "transpose(*axes) -> a strided view with the axes permuted (reversed when none are given)"},
    {"__dlpack__", (PyCFunction)(void (*)(void))tpy_array_dlpack, METH_FASTCALL | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) -> DLPack capsule"},
    {"__dlpack_device__", tpy_array_dlpack_device, METH_NOARGS, "__dlpack_device__() -> (device_type, device_id)"},
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
    {Py_sq_length, array_len},
    {Py_mp_length, array_len},
    {Py_mp_subscript, array_subscript},
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
