/*
 * array_buffer.c -- borrowing another library's memory as a CPU tack.Array
 * through the buffer protocol.
 *
 * tpy_wrap_buffer borrows any object with the buffer protocol (a NumPy
 * array, a bytearray, a VTK array) as a CPU array: its struct-module format
 * gives the dtype (trailing axes fold into a vector or matrix dtype when the
 * caller asks for one), its shape the shape.  The Py_buffer is held until
 * libtack releases the storage, which may happen on a thread without the
 * GIL, so the release callback takes the GIL itself and does nothing once
 * the interpreter is finalizing.  A kernel's argument may be a
 * non-contiguous view (m[:, 0], a[::-1], m.T): it is borrowed as a strided
 * array, element strides from the buffer's byte strides, that only the
 * kernel call holds (runtime/strided.c).  NumPy has no bfloat16; an
 * ml_dtypes bfloat16 array, which has no buffer, is borrowed through a
 * uint16 view of its bits as a bf16 array (tpy_get_buffer, dtype.c).
 *
 * This is a file of its own because it is the one way into Tack that
 * trusts another object's memory: every check of what that memory may be
 * (its format, its strides, whether it may be written) is here, and none of
 * it belongs to the Array type (array.c), which only wraps the result.
 */
#include "tack_py.h"

#include <string.h>

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
