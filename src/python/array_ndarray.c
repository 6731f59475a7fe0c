/*
 * array_ndarray.c -- a NumPy array passed to a kernel, read from the array
 * object itself instead of through the buffer protocol.
 *
 * A kernel call borrows each NumPy array argument for the launch.  Through
 * the buffer protocol (array_buffer.c) that is NumPy's export -- it builds
 * the array's format string and shape/stride lists and compares them with
 * the ones it cached on the array -- and its release, about 100 ns an
 * array, plus our own Py_buffer to allocate and free: a 1-element saxpy
 * with two NumPy arrays took 0.55 us against 0.26 us with two tack.Arrays
 * and 0.28 us for Numba's call on the same NumPy arrays (docs/benchmarks.md).
 *
 * An exact numpy.ndarray is a C struct whose head NumPy's public headers lay
 * out (PyArrayObject_fields: the data pointer, the dimension count, the
 * shape and strides arrays, the base, the dtype object, the flags) and that
 * every extension compiled against NumPy reads directly through NumPy's
 * accessor macros; it has not changed from NumPy 1.7 to 2.x.  Tack does not
 * build against NumPy's headers (the extension builds and imports without
 * NumPy), so it declares that head itself, and trusts it only after
 * checking it: the first NumPy array the buffer protocol lends a kernel is
 * read both ways, and the fields must agree with what NumPy exported (data
 * pointer, dimensions, shape, strides, writability) or this path stays off
 * for the process.  Every later array whose dtype the buffer protocol
 * taught is checked the same way once more.
 *
 * The dtype is never read from NumPy's dtype object (its layout did change
 * in NumPy 2): the dtype objects the buffer protocol mapped to a Tack dtype
 * are kept (a reference each, so an address is never reused) with their
 * Tack dtype, and an array whose dtype object is not among them goes the
 * buffer protocol's way -- which is also the way of every array the buffer
 * protocol would refuse (byte-swapped, structured, object), so each error
 * is still the buffer protocol's error.
 *
 * What qualifies, from the flags word: C-contiguous, aligned and writeable,
 * and no flag outside the public set this file knows (NumPy marks an array
 * that warns when written -- np.broadcast_arrays' results -- with a private
 * bit; such an array, a read-only one, a WRITEBACKIFCOPY one or any other
 * takes the buffer protocol's path, which warns or refuses as before).  The
 * borrowed array holds a reference to the NumPy array until libtack
 * releases its storage, as the Py_buffer did: NumPy refuses to resize an
 * array with references it cannot account for, so another thread cannot
 * free the memory under a running launch.
 *
 * The borrowed array itself -- a libtack handle and its storage block --
 * is not made and freed at each call any more.  After the call,
 * tpy_ndarray_done hands it to tack_array_recycle: the NumPy array's
 * reference is dropped then, exactly as the release did, and when nothing
 * but the call held the handle (a captured graph retains it; so may any
 * other holder libtack has) the handle is kept, emptied, in the module
 * state, and the next NumPy argument refills it (tack_array_rewrap, the
 * wrap's checks without its allocations).  A handle anybody else holds is
 * released as before and never kept.  Measured on a 2-core Xeon, one
 * thread, in one process with the keeping switched on and off
 * (_core._ndarray_spares): about 38 ns an array (docs/design/decisions.md,
 * 2026-12-06).  The
 * list is read and written with the GIL held (a free-threaded build keeps
 * none), and a handle is taken off it before it is refilled, so a call made
 * from Python code that a release or a hook runs never shares one.
 */
#include "tack_py.h"

#include <string.h>

/* The head of NumPy's array object (PyArrayObject_fields, NumPy 1.7 to 2.x). */
typedef struct {
    PyObject_HEAD
    char *data;
    int nd;
    Py_ssize_t *dimensions; /* npy_intp: pointer-sized, as Py_ssize_t */
    Py_ssize_t *strides;
    PyObject *base;
    PyObject *descr;
    int flags;
} np_head;

/* NumPy's public array flags (ndarraytypes.h). */
enum {
    NP_C_CONTIGUOUS = 0x0001,
    NP_F_CONTIGUOUS = 0x0002,
    NP_OWNDATA = 0x0004,
    NP_ALIGNED = 0x0100,
    NP_NOTSWAPPED = 0x0200,
    NP_WRITEABLE = 0x0400,
};
#define NP_NEEDED (NP_C_CONTIGUOUS | NP_ALIGNED | NP_WRITEABLE)
#define NP_KNOWN (NP_NEEDED | NP_F_CONTIGUOUS | NP_OWNDATA | NP_NOTSWAPPED)

static int qualifies(const np_head *h) {
    unsigned f = (unsigned)h->flags;
    return (f & NP_NEEDED) == NP_NEEDED && (f & ~(unsigned)NP_KNOWN) == 0 && h->nd >= 0 && h->nd <= TACK_MAX_NDIM;
}

tack_array *tpy_ndarray_fast(tpy_state *st, PyObject *obj) {
    const np_head *h = (const np_head *)obj;
    if (st->nd_fast != 1 || !qualifies(h))
        return NULL;
    int k = tpy_ids_find(&st->nd_descrs, h->descr);
    if (k < 0)
        return NULL;
    int64_t shape[TACK_MAX_NDIM];
    for (int i = 0; i < h->nd; i++)
        shape[i] = h->dimensions[i];
    tack_array *arr = NULL;
    Py_INCREF(obj); /* released with the storage (tpy_release_object) */
    if (st->nd_nspare > 0) {
        arr = st->nd_spare[--st->nd_nspare]; /* off the list: this call's alone */
        if (tack_array_rewrap(arr, NULL, st->nd_descrs.dt[k], h->nd, shape, h->data, 1, tpy_release_object, obj) !=
            TACK_OK) {
            tack_array_release(arr); /* emptied: it holds nothing */
            tpy_raise();             /* the rewrap released obj */
            return NULL;
        }
        return arr;
    }
    if (tack_array_wrap(NULL, st->nd_descrs.dt[k], h->nd, shape, h->data, 1, tpy_release_object, obj, &arr) != TACK_OK) {
        tpy_raise(); /* the wrap released obj */
        return NULL;
    }
    return arr;
}

void tpy_ndarray_done(tpy_state *st, tack_array *arr) {
    if (st->nd_nspare >= st->nd_maxspare) {
        tack_array_release(arr);
        return;
    }
    tack_release_fn release;
    void *ctx;
    if (!tack_array_recycle(arr, &release, &ctx))
        return; /* somebody else holds it: released, as tack_array_release does */
    st->nd_spare[st->nd_nspare++] = arr; /* nothing ran since the count was read */
    /* the owner's release, which libtack handed back: with the GIL held here, the NumPy array's
     * reference is dropped directly (tpy_release_object would take the GIL it already has) */
    if (release == tpy_release_object) {
        if (Py_IsInitialized() && !_Py_IsFinalizing()) /* as tpy_release_object asks */
            Py_DECREF((PyObject *)ctx);
    } else if (release) {
        release(ctx); /* an array the buffer protocol lent: PyBuffer_Release */
    }
}

void tpy_ndarray_spares_clear(tpy_state *st) {
    while (st->nd_nspare > 0)
        tack_array_release(st->nd_spare[--st->nd_nspare]);
}

/* _core._ndarray_spares([most]): (most, held) -- how many emptied handles the module state may keep
 * and keeps; with `most`, set it (0: every call wraps and frees, as before the handles were kept). */
PyObject *tpy_ndarray_spares(PyObject *m, PyObject *args) {
    tpy_state *st = tpy_get_state(m);
    int most = -1;
    if (!PyArg_ParseTuple(args, "|i:_ndarray_spares", &most))
        return NULL;
    if (most != -1) {
        if (most < 0 || most > TPY_NDARRAY_SPARES) {
            PyErr_Format(PyExc_ValueError, "_ndarray_spares(most): most is 0 to %d, not %d", TPY_NDARRAY_SPARES,
                         most);
            return NULL;
        }
        st->nd_maxspare = most;
        while (st->nd_nspare > most)
            tack_array_release(st->nd_spare[--st->nd_nspare]);
    }
    return Py_BuildValue("(ii)", st->nd_maxspare, st->nd_nspare);
}

/* Whether the head read directly says what the buffer protocol lent as `arr`. */
static int agrees(const np_head *h, const tack_array *arr) {
    if (tack_array_strides(arr) != NULL || (void *)h->data != tack_array_data(arr) || h->nd != tack_array_ndim(arr) ||
        !tack_array_writable(arr) || !qualifies(h))
        return 0;
    const int64_t *shape = tack_array_shape(arr);
    int64_t step = (int64_t)tack_dtype_get(tack_array_dtype(arr))->itemsize, size = 1;
    for (int i = 0; i < h->nd; i++)
        size *= shape[i];
    for (int i = h->nd - 1; i >= 0; i--) {
        if (h->dimensions[i] != shape[i])
            return 0;
        /* C order's strides where they matter (NumPy may give any stride to an axis of one
         * element, and any strides to an empty array) */
        if (size > 0 && shape[i] > 1 && h->strides[i] != step)
            return 0;
        step *= shape[i];
    }
    return 1;
}

void tpy_ndarray_learn(tpy_state *st, PyObject *obj, const tack_array *arr) {
    const np_head *h = (const np_head *)obj;
    if (st->nd_fast == 0 || tack_array_strides(arr) != NULL || !qualifies(h) || h->descr == NULL)
        return;
    if (!agrees(h, arr)) {
        st->nd_fast = 0; /* not the layout this file knows: the buffer protocol from now on */
        return;
    }
    st->nd_fast = 1;
    if (tpy_ids_find(&st->nd_descrs, h->descr) < 0) /* past TPY_NDARRAY_DTYPES, the buffer protocol's way */
        tpy_ids_add(&st->nd_descrs, TPY_NDARRAY_DTYPES, h->descr, tack_array_dtype(arr));
}

/* _core._ndarray_path([state]): (state, the Tack dtype names of the dtype objects known) --
 * state 1 when NumPy arrays are read directly, 0 through the buffer protocol only, -1 not yet
 * checked; with a state (0 or -1), set it and forget the dtype objects (the tests' switch). */
PyObject *tpy_ndarray_path(PyObject *m, PyObject *args) {
    tpy_state *st = tpy_get_state(m);
    int set = -2;
    if (!PyArg_ParseTuple(args, "|i:_ndarray_path", &set))
        return NULL;
    if (set != -2) {
        if (set != 0 && set != -1) {
            PyErr_Format(PyExc_ValueError, "_ndarray_path(state): state is 0 or -1, not %d", set);
            return NULL;
        }
        tpy_ids_clear(&st->nd_descrs);
        st->nd_fast = set;
    }
    PyObject *names = PyTuple_New(st->nd_descrs.n);
    if (!names)
        return NULL;
    for (int k = 0; k < st->nd_descrs.n; k++) {
        PyObject *s = PyUnicode_FromString(tack_dtype_get(st->nd_descrs.dt[k])->name);
        if (!s) {
            Py_DECREF(names);
            return NULL;
        }
        PyTuple_SET_ITEM(names, k, s);
    }
    return Py_BuildValue("(iN)", st->nd_fast, names);
}
