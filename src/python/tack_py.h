/*
 * tack_py.h -- shared declarations of the extension tack._core.
 *
 * The extension is a thin binding over include/tack.h and include/tack_kernel.h.
 * It keeps all of its Python objects in module state (multi-phase init, heap
 * types), so several interpreters can each import it.  Files:
 *   module.c   module definition, state, error translation, devices
 *   array.c    the Array heap type: creation, copies, attributes, its tables
 *   array_buffer.c  borrowing a buffer-protocol object as a CPU array
 *   array_views.c   indexing, and the views that share an array's storage
 *   array_grad.c    an Array's gradient attributes
 *   dtype.c    the DType heap type and the dtype objects tack.f32, ...
 *   frontend*.c  a Python function -> Tack AST (tack_kernel.h); see frontend.h
 *   kernel.c   the Kernel heap type: vectorcall launch path, methods, module hooks
 *   kernel_call.c  binding a call, its signature, specialization lookup and compile
 *   dlpack.c   DLPack (__dlpack__, from_dlpack, the C exchange API) and wrap_pointer
 */
#ifndef TACK_PY_H
#define TACK_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "tack.h"
#include "tack_kernel.h"

/* How many NumPy scalar types a module remembers with their dtypes (kernel_call.c). */
#define TPY_SCALAR_TYPES 32
/* dtype.c: how many NumPy dtype objects and scalar types (np.float32,
 * np.dtype("int64"), ...) tack.dtype() remembers, compared by identity */
#define TPY_DTYPE_OBJECTS 16
#define TPY_NDARRAY_DTYPES 16 /* array_ndarray.c: NumPy dtype objects known to the launch's fast path */

/* Python objects compared by identity, each with the Tack dtype it stands for, a reference each
 * (the module state's): the module keeps three -- the NumPy scalar types met as kernel arguments,
 * the dtype objects the buffer protocol mapped and those tack.dtype() converted -- so that NumPy
 * is asked once.  A few entries, so a lookup compares pointers in order (dtype.c). */
#define TPY_IDS_MOST 32
typedef struct {
    int n;
    PyObject *obj[TPY_IDS_MOST];
    tack_dtype dt[TPY_IDS_MOST];
} tpy_ids;
/* array_ndarray.c: the emptied array handles kept for the next NumPy array arguments (none in a
 * free-threaded build, where the module state's list would need a lock) */
#ifdef Py_GIL_DISABLED
#define TPY_NDARRAY_SPARES 0
#else
#define TPY_NDARRAY_SPARES 16
#endif

typedef struct {
    PyTypeObject *ArrayType;
    PyTypeObject *DTypeType;
    PyObject *dtypes[TACK_DTYPE_COUNT]; /* DType instances by id */
    PyObject *CompileError;             /* tack.CompileError class, set by the Python package */
    PyObject *RaceWarning;              /* tack.RaceWarning class (a compile's warnings), likewise */
    PyObject *RaceError;                /* tack.RaceError class (the race detector's verdict), likewise */
    PyObject *default_device;           /* str */
    PyTypeObject *KernelType;           /* set by kernel.c */
    PyObject *kernel_extra;             /* the intrinsics registry, dict {object: intrinsic name}:
                                           set by _core._set_intrinsics (tack._intrinsics, at import;
                                           kernel.c), read by the front end (frontend_env.c) */
    PyObject *repr_hook;                /* Python function formatting an Array, set by the package */
    PyObject *reduce_hook;              /* Python function pickling an Array or a Kernel (their
                                           __reduce__), set by the package: the policy (which
                                           devices, what is sent) lives in tack._pickle */
    PyObject *by_name_hook;             /* kernel -> the copy of its function that plain pickle finds
                                           by name (Kernel.__tack_by_name__), set by tack._pickle */
    PyObject *getsourcelines;           /* hook fn -> (lines, first line) for the front end, set
                                           by the package (_set_hooks) */
    PyObject *getline;                  /* hook (filename, lineno) -> str, the source line of a
                                           compile error (linecache.getline), set likewise */
    PyObject *struct_call;              /* hook (kernel, args, kwargs) -> result or NotImplemented:
                                           a call whose arguments did not bind, offered to
                                           tack._structs (struct arrays and values), set likewise */
    PyObject *autodiff;                 /* hook (kernel, args, kwargs) -> kernel.adjoint's result
                                           (tack._autodiff), set likewise */
    PyObject *cai_export;               /* hook (array) -> its __cuda_array_interface__ dict, or
                                           AttributeError off CUDA and HIP (tack._cai), set likewise */
    PyObject *cai_import;               /* hook (obj) -> a tack.Array on the memory obj's
                                           __cuda_array_interface__ describes (tack._cai): a kernel
                                           argument that is neither buffer nor DLPack producer */
    PyObject *tape;                     /* NULL, or while a tack.Tape records: called with (kernel,
                                           args, kwargs) after each launch (_core._set_tape) */
    PyObject *numpy;                    /* the numpy module, imported on first use */
    PyTypeObject *ndarray;              /* numpy.ndarray, learnt from the first kernel argument of
                                           that type (tpy_learn_ndarray): the launch's fast path for
                                           exact NumPy arrays compares types with it */
    tpy_ids scalar_types;               /* kernel_call.c: the NumPy scalar types met as kernel
                                           arguments (np.float32, ...), each with the one dtype all its
                                           values have, so that the launch does not ask NumPy again */
    int nd_fast;                        /* array_ndarray.c: -1 not yet checked, 1 NumPy arrays read
                                           directly, 0 through the buffer protocol only */
    tpy_ids nd_descrs;                  /* the NumPy dtype objects the buffer protocol mapped */
    tack_array *nd_spare[TPY_NDARRAY_SPARES + 1]; /* array_ndarray.c: handles emptied by tack_array_recycle
                                           after a call, refilled for the next call's NumPy arrays */
    int nd_nspare;                      /* how many nd_spare holds */
    int nd_maxspare;                    /* how many it may hold: TPY_NDARRAY_SPARES, or fewer
                                           (_core._ndarray_spares, the tests' and benchmarks' switch) */
    PyObject *dlpack_strs;              /* dlpack.c: interned names and keyword tuples */
    PyObject *getsignal;                /* interrupt.c: _signal.getsignal, */
    PyObject *default_int_handler;      /* _signal.default_int_handler */
    PyObject *sigint;                   /* and the int SIGINT, asked at every main-thread launch */
    tpy_ids dtype_objects;              /* dtype.c: NumPy dtype objects and scalar types converted */
} tpy_state;

/* The numpy module (borrowed from state), imported on first use; NULL with
 * an ImportError set when NumPy is missing. */
PyObject *tpy_numpy(tpy_state *st);

typedef struct {
    PyObject_HEAD
    tack_array *arr;
    PyObject *weakreflist;
    PyObject *grad; /* the gradient array of requires_grad (tack._autodiff), or NULL */
} TackArrayObject;

typedef struct {
    PyObject_HEAD
    tack_dtype id;
    PyObject *numpy_name; /* str: "float32", ... */
} TackDTypeObject;

tpy_state *tpy_get_state(PyObject *module);
tpy_state *tpy_state_from_type(PyTypeObject *tp);

/* Raise the Python exception matching tack_last_status()/tack_last_error().
 * Returns NULL (for `return tpy_raise();`). */
PyObject *tpy_raise(void);
int tpy_raise_int(void); /* same, returns -1 */

/* Array helpers. New reference wrapping `arr` (steals the caller's reference
 * to arr, released on failure). */
PyObject *tpy_array_new(tpy_state *st, tack_array *arr);
int tpy_array_check(tpy_state *st, PyObject *obj);
/* A tuple of n Python ints (a shape, strides); NULL with an exception (array.c). */
PyObject *tpy_int64_tuple(const int64_t *v, int n);
/* numpy(): a NumPy copy of an Array (array.c; array_views.c reads an element with it). */
PyObject *tpy_array_numpy(PyObject *self, PyObject *unused);
/* An Array's indexing and views (array_views.c), in array.c's slots and tables. */
PyObject *tpy_array_subscript(PyObject *self, PyObject *key);
PyObject *tpy_array_transpose(PyObject *self, PyObject *args);
PyObject *tpy_array_get_T(PyObject *self, void *c);
PyObject *tpy_array_field_view(PyObject *self, PyObject *args);
PyObject *tpy_array_reshape(PyObject *self, PyObject *args);
PyObject *tpy_array_ravel(PyObject *self, PyObject *unused);
/* An Array's gradient attributes (array_grad.c), in array.c's getset table. */
PyObject *tpy_array_get_grad(PyObject *self, void *c);
int tpy_array_set_grad(PyObject *self, PyObject *value, void *c);
PyObject *tpy_array_get_requires_grad(PyObject *self, void *c);
int tpy_array_set_requires_grad(PyObject *self, PyObject *value, void *c);
/* A shape argument (an int or a sequence of ints, none negative, at most
 * TACK_MAX_NDIM) into shape/ndim; -1 with ValueError/TypeError naming it. */
int tpy_parse_shape(PyObject *obj, int64_t *shape, int *ndim);
/* The shape, dtype and device arguments of a new array: the device, or NULL with an exception. */
tack_device *tpy_parse_layout(tpy_state *st, PyObject *shape_obj, PyObject *dtype_obj, PyObject *device_obj,
                              int64_t *shape, int *ndim, tack_dtype *dt);
/* Resolve a dtype argument: DType object, NumPy dtype/str, type; -1 with TypeError. */
int tpy_dtype_from_object(tpy_state *st, PyObject *obj, tack_dtype *out);
/* tpy_ids: the index of obj, or -1 (inline: the launch looks up every NumPy argument's dtype);
 * add obj (a new reference) unless `most` are held (returns 0 then); visit or drop every
 * reference. */
static inline int tpy_ids_find(const tpy_ids *t, const void *obj) {
    for (int k = 0; k < t->n; k++)
        if (t->obj[k] == obj)
            return k;
    return -1;
}
int tpy_ids_add(tpy_ids *t, int most, PyObject *obj, tack_dtype dt);
int tpy_ids_traverse(tpy_ids *t, visitproc visit, void *arg);
void tpy_ids_clear(tpy_ids *t);
PyObject *tpy_dtype_lookup(PyObject *m, PyObject *obj);
/* Device by name (None -> the default device); NULL with an exception set. */
tack_device *tpy_device_from_object(tpy_state *st, PyObject *obj);

/* array_buffer.c: wrap a buffer-protocol object (C-contiguous) as a borrowed array on the CPU,
 * retaining `obj` until the storage is released.  `dtype_hint` < 0: take the
 * dtype from the buffer's format. */
/* allow_strided (a kernel argument): a non-contiguous buffer becomes a strided
 * view (tack_array_wrap_strided) instead of a BufferError. */
tack_array *tpy_wrap_buffer(tpy_state *st, PyObject *obj, int dtype_hint, int want_writable, int allow_strided);
/* Remember obj's type as st->ndarray when it is numpy.ndarray itself (not a subclass); 0, or -1
 * with an exception. */
int tpy_learn_ndarray(tpy_state *st, PyObject *obj);
/* array_ndarray.c: an exact NumPy array `obj` borrowed for a launch by reading the array object
 * (NULL without an exception where it does not qualify: the caller takes the buffer protocol's
 * way; NULL with one where the wrap failed); and, after the buffer protocol lent obj as `arr`,
 * the check of that reading against it and the dtype it teaches. */
tack_array *tpy_ndarray_fast(tpy_state *st, PyObject *obj);
void tpy_ndarray_learn(tpy_state *st, PyObject *obj, const tack_array *arr);
/* The end of a call's borrow of a NumPy array's `arr` (either way it was borrowed): released, its
 * handle kept emptied for a later call when nothing else holds it (tack_array_recycle).  The GIL
 * held; the owner's release may run Python code. */
void tpy_ndarray_done(tpy_state *st, tack_array *arr);
void tpy_ndarray_spares_clear(tpy_state *st);
PyObject *tpy_ndarray_spares(PyObject *m, PyObject *args); /* _core._ndarray_spares */
PyObject *tpy_ndarray_path(PyObject *m, PyObject *args); /* _core._ndarray_path */
/* dtype.c: the NumPy dtype of scalar dtype `scalar` (a new reference): bf16's
 * is ml_dtypes.bfloat16, imported here; NumPy has none, so without ml_dtypes
 * a TypeError says how else bf16 data comes and goes. */
PyObject *tpy_numpy_dtype(tpy_state *st, tack_dtype scalar);
/* An ml_dtypes bfloat16 NumPy array cannot give a buffer (its format has no
 * buffer-protocol letter): its bits as a uint16 view (a new reference), for
 * the buffer paths to take instead.  NULL without an error when obj is no
 * such array (ml_dtypes never imported: never one). */
PyObject *tpy_bf16_bits(tpy_state *st, PyObject *obj);
/* PyObject_GetBuffer, and for such an array its bits' buffer (*bf16 set; may be NULL). */
int tpy_get_buffer(tpy_state *st, PyObject *obj, Py_buffer *view, int flags, int *bf16);
/* dlpack.c: a kernel argument from a DLPack producer, shared (never copied);
 * refused when it is on another device than `want` (NULL: any). */
tack_array *tpy_dlpack_arg(tpy_state *st, PyObject *obj, tack_device *want);
/* Whether obj's type has __dlpack__ (a method-cache lookup; never raises). */
int tpy_is_dlpack_producer(tpy_state *st, PyObject *obj);

/* Releasing an array, or deleting a DLPack managed tensor, with the GIL held
 * where an exception may be pending (a dealloc during unwinding, a call's
 * arguments dropped after a refusal).  The release may run a producer's
 * deleter, which may be Python code (a ctypes callback) that cannot run with
 * an exception set: the pending exception is set aside around it and put
 * back unchanged; one the deleter leaves behind is reported as unraisable
 * (array.c, dlpack.c). */
void tpy_array_release(tack_array *arr);
void tpy_dlpack_delete(void *managed, int versioned);

/* The pending exception, taken out of the thread state and put back as it
 * was (nothing normalized, nothing lost): tpy_error_stash leaves none set;
 * tpy_error_unstash reports one raised since as unraisable first. */
typedef struct {
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *exc;
#else
    PyObject *type, *value, *tb;
#endif
} tpy_stashed_error;

static inline void tpy_error_stash(tpy_stashed_error *e) {
#if PY_VERSION_HEX >= 0x030C0000
    e->exc = PyErr_GetRaisedException();
#else
    PyErr_Fetch(&e->type, &e->value, &e->tb);
#endif
}

static inline void tpy_error_unstash(tpy_stashed_error *e) {
    if (PyErr_Occurred())
        PyErr_WriteUnraisable(NULL);
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(e->exc);
#else
    PyErr_Restore(e->type, e->value, e->tb);
#endif
}

/* Release callback for storage owned by a Python object: takes the GIL,
 * drops the reference; does nothing after interpreter finalization. */
void tpy_release_object(void *ctx);

/* obj.name(arg) with exactly one argument (a tuple arg stays one argument). */
static inline PyObject *tpy_call1(PyObject *obj, const char *name, PyObject *arg) {
    PyObject *fn = PyObject_GetAttrString(obj, name);
    if (!fn)
        return NULL;
    PyObject *out = PyObject_CallOneArg(fn, arg);
    Py_DECREF(fn);
    return out;
}

/* Per-file module exec hooks, called from module.c. */
int tpy_dtype_exec(PyObject *m, tpy_state *st);
int tpy_array_exec(PyObject *m, tpy_state *st);
int tpy_kernel_exec(PyObject *m, tpy_state *st);
int tpy_cuda_exec(PyObject *m, tpy_state *st);
int tpy_hip_exec(PyObject *m);
int tpy_interrupt_exec(PyObject *m, tpy_state *st);
int tpy_profile_exec(PyObject *m); /* profile.c: tack.profile()'s functions */
int tpy_stream_exec(PyObject *m);  /* stream.c: tack.Stream's and tack.Event's */
/* The tack_stream a stream= argument names (a tack.Stream); NULL with a TypeError. */
tack_stream *tpy_stream_of(PyObject *obj);
/* The first launch on a thread: make it interruptible if it is the main thread (interrupt.c). */
int tpy_mark_interruptible(tpy_state *st);
int tpy_dlpack_exec(PyObject *m, tpy_state *st);

/* dlpack.c: Array.__dlpack__ and Array.__dlpack_device__ */
PyObject *tpy_array_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *tpy_array_dlpack_device(PyObject *self, PyObject *unused);
/* Where a kernel found a value it froze (a capture, kernel_captures.c): its
 * name in a dict (a module's globals or __dict__, builtins), a closure cell,
 * or an attribute read with getattr (a module with __getattr__). */
enum { TPY_CAP_DICT = 0, TPY_CAP_CELL = 1, TPY_CAP_ATTR = 2 };
/* frontend.c: Python function -> Tack module (new), the kernel's function
 * index, and *out_captures: a new list of (kind, where, key, value) tuples,
 * one per value from outside the kernel that it froze (numbers, NumPy
 * scalars, dtypes, @tack.func objects), in the kernel and its funcs. */
int tpy_frontend_build(tpy_state *st, PyObject *fn, tack_module **out_module, int *out_index,
                       PyObject **out_captures);
/* frontend_source.c: raise tack.CompileError with location, source line and caret; returns -1. */
int tpy_compile_error(tpy_state *st, const char *msg, PyObject *filename, int line, int col,
                          int end_col, PyObject *text);
/* kernel.c: 1 if `obj` is a Kernel (then its function, borrowed, and whether
 * it is a @tack.func), 0 if not, -1 on error. */
int tpy_kernel_unwrap(tpy_state *st, PyObject *obj, PyObject **fn, int *is_func);
int tpy_kernel_traverse(tpy_state *st, visitproc visit, void *arg);
void tpy_kernel_clear(tpy_state *st);

#endif /* TACK_PY_H */
