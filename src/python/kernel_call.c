/*
 * kernel_call.c -- what a call of a kernel does before it launches.
 *
 * Calling a Kernel is Tack's hot path, so the whole call stays in C:
 *
 *   1. bind the positional and keyword arguments to the parameters (with the
 *      TypeError messages Python itself gives for a wrong call);
 *   2. compute the argument signature: for each argument, array (dtype, ndim)
 *      or scalar (weak Python bool/int/float, or a NumPy scalar's dtype);
 *      NumPy arrays and other buffer objects on the CPU are borrowed, their
 *      writeable flag kept; other DLPack producers (PyTorch, JAX) are
 *      imported as tack.from_dlpack does, without a copy, after the NumPy
 *      and Tack checks so those fast paths pay nothing for it; a
 *      non-contiguous view of either is borrowed as a strided array, and its
 *      `strided` bit in the signature picks a build that indexes it with its
 *      strides, so contiguous arguments keep their code;
 *   3. find the compiled specialization for that signature in a small C
 *      table (the last hit first, then a scan comparing hashes) -- no Python
 *      object is created on a hit;
 *   4. on a miss, compile and build it: the front end (frontend.c) turns the
 *      function into Tack's AST once per kernel -- the module is kept and
 *      reused for every later signature -- and tack_compile +
 *      tack_program_build produce the specialization.  The module holds
 *      the values it froze (module constants); kernel_captures.c checks
 *      before step 3 that they still hold, and picks or builds the module
 *      for the values they have now: a specialization is keyed on the
 *      signature and that build.
 *
 * kernel.c then refuses a read-only array passed for a parameter the kernel
 * writes, and launches.  Signatures record every array as writable: the
 * read-only check is made on each call against tack_program_param_written(),
 * so one specialization serves writable and read-only inputs alike.
 *
 * The methods that take a call's arguments without running it -- compile,
 * generated_source and ir -- bind them here too (kcall_bind_method), and
 * generated_source/ir get their program from the same specialization path
 * (kernel_program_for): the cached specialization when there is one for the
 * wanted dialect, else the same compile step without the build.
 *
 * Threads: the table is read and extended only with the GIL held.  Compiles
 * take a per-kernel lock and release the GIL while the C compiler runs, so
 * other threads keep going; a thread that misses waits on the lock and
 * looks again, so each signature is compiled once.
 */
#include "kernel.h"

#include <string.h>

#include "tack_private.h" /* tack_process_id: the platform layer's */

/* ------------------------------------------------------------ call state */

int kcall_init(kcall *c, Py_ssize_t n) {
    c->n = n;
    c->heap = NULL;
    c->device = NULL;
    c->variant = 0;
    c->st = NULL;
    if (n <= KSTACK) {
        c->objs = c->s_objs;
        c->types = c->s_types;
        c->vals = c->s_vals;
        c->temps = c->s_temps;
        c->writable = c->s_writable;
    } else {
        size_t sz = (size_t)n * (sizeof(PyObject *) + sizeof(tack_argtype) + sizeof(tack_arg) +
                                 sizeof(tack_array *) + sizeof(int));
        char *p = PyMem_Calloc(1, sz);
        if (!p) {
            PyErr_NoMemory();
            return -1;
        }
        c->heap = p;
        c->vals = (tack_arg *)p;
        p += (size_t)n * sizeof(tack_arg);
        c->types = (tack_argtype *)p;
        p += (size_t)n * sizeof(tack_argtype);
        c->objs = (PyObject **)p;
        p += (size_t)n * sizeof(PyObject *);
        c->temps = (tack_array **)p;
        p += (size_t)n * sizeof(tack_array *);
        c->writable = (int *)p;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        c->objs[i] = NULL;
        c->temps[i] = NULL;
    }
    return 0;
}

void kcall_fini(kcall *c) {
    tpy_stashed_error e;
    int stashed = 0;
    /* tpy_array_release's work once for all the call's borrowed arrays: after a refusal its exception
     * is pending, and is put aside while the borrowed buffers are released */
    for (Py_ssize_t i = 0; i < c->n; i++)
        if (c->temps[i]) {
            if (!stashed) {
                tpy_error_stash(&e);
                stashed = 1;
            }
            if (c->st && Py_TYPE(c->objs[i]) == c->st->ndarray)
                tpy_ndarray_done(c->st, c->temps[i]); /* its handle kept for a later call (array_ndarray.c) */
            else
                tack_array_release(c->temps[i]);
            if (PyErr_Occurred()) /* as tpy_error_unstash reports it, one release at a time */
                PyErr_WriteUnraisable(NULL);
        }
    if (stashed)
        tpy_error_unstash(&e);
    if (c->heap)
        PyMem_Free(c->heap);
}

/* ------------------------------------------------------------ binding */

PyObject *kernel_qualname(KernelObject *k) {
    PyObject *q = PyObject_GetAttrString(k->fn, "__qualname__");
    if (!q) {
        PyErr_Clear();
        q = PyUnicode_FromString("kernel");
    }
    return q;
}

/* "'a'", "'a' and 'b'", "'a', 'b', and 'c'" as Python writes them. */
static PyObject *name_list(PyObject *names) {
    Py_ssize_t n = PyList_GET_SIZE(names);
    PyObject *out = PyUnicode_FromString(""), *piece;
    for (Py_ssize_t i = 0; out && i < n; i++) {
        const char *sep = i == 0 ? "" : (i == n - 1 ? (n == 2 ? " and " : ", and ") : ", ");
        piece = PyUnicode_FromFormat("%U%s'%U'", out, sep, PyList_GET_ITEM(names, i));
        Py_SETREF(out, piece);
    }
    return out;
}

/* Bind args/kwnames to the parameters into c->objs (borrowed references). */
int kcall_bind(KernelObject *k, kcall *c, PyObject *const *args, Py_ssize_t nargs,
               PyObject *kwnames) {
    Py_ssize_t n = k->nparams, ndef = k->defaults ? PyTuple_GET_SIZE(k->defaults) : 0;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *q = NULL, *missing = NULL;
    int r = -1;

    if (nargs > n) {
        q = kernel_qualname(k);
        if (ndef > 0)
            PyErr_Format(PyExc_TypeError,
                         "%U() takes from %zd to %zd positional arguments but %zd %s given", q,
                         n - ndef, n, nargs, nargs == 1 ? "was" : "were");
        else
            PyErr_Format(PyExc_TypeError, "%U() takes %zd positional argument%s but %zd %s given",
                         q, n, n == 1 ? "" : "s", nargs, nargs == 1 ? "was" : "were");
        goto done;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        c->objs[i] = args[i];
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, j);
        Py_ssize_t i;
        for (i = 0; i < n; i++)
            if (PyTuple_GET_ITEM(k->params, i) == key)
                break;
        if (i == n)
            for (i = 0; i < n; i++) {
                int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(k->params, i), key, Py_EQ);
                if (eq < 0)
                    goto done;
                if (eq)
                    break;
            }
        if (i == n || i < k->nposonly) {
            q = kernel_qualname(k);
            if (i == n)
                PyErr_Format(PyExc_TypeError, "%U() got an unexpected keyword argument '%U'", q,
                             key);
            else
                PyErr_Format(PyExc_TypeError,
                             "%U() got some positional-only arguments passed as keyword "
                             "arguments: '%U'", q, key);
            goto done;
        }
        if (c->objs[i]) {
            q = kernel_qualname(k);
            PyErr_Format(PyExc_TypeError, "%U() got multiple values for argument '%U'", q, key);
            goto done;
        }
        c->objs[i] = args[nargs + j];
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (c->objs[i])
            continue;
        if (i >= n - ndef) {
            c->objs[i] = PyTuple_GET_ITEM(k->defaults, i - (n - ndef));
            continue;
        }
        if (!missing && !(missing = PyList_New(0)))
            goto done;
        if (PyList_Append(missing, PyTuple_GET_ITEM(k->params, i)) < 0)
            goto done;
    }
    if (missing) {
        PyObject *names = name_list(missing);
        Py_ssize_t m = PyList_GET_SIZE(missing);
        q = kernel_qualname(k);
        if (names)
            PyErr_Format(PyExc_TypeError, "%U() missing %zd required positional argument%s: %U",
                         q, m, m == 1 ? "" : "s", names);
        Py_XDECREF(names);
        goto done;
    }
    r = 0;
done:
    Py_XDECREF(q);
    Py_XDECREF(missing);
    return r;
}

/* ---------------------------------------------------------- signature */

static int arg_error(KernelObject *k, Py_ssize_t i, PyObject *exc, const char *what,
                     PyObject *obj) {
    PyObject *q = kernel_qualname(k);
    PyErr_Format(exc, "argument '%U' of %U(): %s (got %.100s)", PyTuple_GET_ITEM(k->params, i),
                 q, what, Py_TYPE(obj)->tp_name);
    Py_XDECREF(q);
    return -1;
}

/* Raise the pending exception again with the parameter named in front of its
 * message; a BufferError (storage that cannot be shared) becomes ValueError. */
static int reraise_for_param(KernelObject *k, Py_ssize_t i) {
    PyObject *type, *value, *q;
#if PY_VERSION_HEX >= 0x030C0000
    value = PyErr_GetRaisedException();
    type = value ? Py_NewRef((PyObject *)Py_TYPE(value)) : NULL;
#else
    PyObject *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    Py_XDECREF(tb);
#endif
    if (!type)
        return -1;
    q = kernel_qualname(k);
    PyErr_Format(PyErr_GivenExceptionMatches(type, PyExc_BufferError) ? PyExc_ValueError : type,
                 "argument '%U' of %U(): %S", PyTuple_GET_ITEM(k->params, i), q, value);
    Py_XDECREF(q);
    Py_XDECREF(type);
    Py_XDECREF(value);
    return -1;
}

/* What a kernel argument may be, for the TypeError naming what was passed. */
#define ACCEPTED_KINDS                                                                             \
    "expected a tack.Array, a NumPy array (or another buffer object), a DLPack producer (an "    \
    "object with __dlpack__ and __dlpack_device__, such as a PyTorch tensor or a JAX array; "     \
    "tack.from_dlpack(x) makes one a tack.Array), a bool/int/float or a NumPy scalar of a Tack "  \
    "dtype"

/* The dtype of NumPy scalar obj.  Asking NumPy (obj.dtype, then its subdtype, byte order and
 * name) cost about 2.4 us a scalar, 22 us of a 23 us launch with nine np.float32 arguments
 * (Rodinia's hotspot3D step); every value of a numeric NumPy scalar type has that type's one
 * dtype, so the answer is kept per type.  np.void's values carry their own (structured) dtypes:
 * never kept. */
static int scalar_dtype(tpy_state *st, PyObject *obj, tack_dtype *dt) {
    PyTypeObject *tp = Py_TYPE(obj);
    int j = tpy_ids_find(&st->scalar_types, tp);
    if (j >= 0) {
        *dt = st->scalar_types.dt[j];
        return 0;
    }
    PyObject *dtype = PyObject_GetAttrString(obj, "dtype");
    int r = dtype ? tpy_dtype_from_object(st, dtype, dt) : -1;
    Py_XDECREF(dtype);
    if (r < 0)
        return -1;
    const tack_dtype_info *info = tack_dtype_get(*dt);
    if (info->rows == 1 && info->cols == 1 && strcmp(tp->tp_name, "numpy.void") != 0)
        tpy_ids_add(&st->scalar_types, TPY_SCALAR_TYPES, (PyObject *)tp, *dt);
    return 0;
}

/* A NumPy scalar (np.float32(1), np.int8(3), ...): a strong scalar. */
static int numpy_scalar(KernelObject *k, kcall *c, Py_ssize_t i, PyObject *obj) {
    tack_argtype *t = &c->types[i];
    tack_arg *v = &c->vals[i];
    const tack_dtype_info *info;
    tack_dtype dt;
    if (scalar_dtype(k->st, obj, &dt) < 0) {
        PyErr_Clear();
        return arg_error(k, i, PyExc_TypeError, ACCEPTED_KINDS, obj);
    }
    info = tack_dtype_get(dt);
    if (info->rows != 1 || info->cols != 1)
        return arg_error(k, i, PyExc_TypeError, "only scalar NumPy values can be passed", obj);
    t->dtype = dt;
    if (info->kind == TACK_KIND_COMPLEX) { /* np.complex64 / np.complex128: (re, im) as doubles, exactly */
        Py_complex z = PyComplex_AsCComplex(obj);
        if (z.real == -1.0 && PyErr_Occurred())
            return -1;
        v->scalar.z[0] = z.real;
        v->scalar.z[1] = z.imag;
    } else if (info->kind == TACK_KIND_FLOAT) {
        v->scalar.f = PyFloat_AsDouble(obj);
        if (v->scalar.f == -1.0 && PyErr_Occurred())
            return -1;
    } else if (info->kind == TACK_KIND_BOOL) {
        int b = PyObject_IsTrue(obj);
        if (b < 0)
            return -1;
        v->scalar.i = b;
    } else {
        PyObject *iv = PyNumber_Index(obj);
        if (!iv)
            return -1;
        if (info->kind == TACK_KIND_UINT)
            v->scalar.u = PyLong_AsUnsignedLongLongMask(iv);
        else
            v->scalar.i = PyLong_AsLongLong(iv);
        Py_DECREF(iv);
        if (PyErr_Occurred())
            return -1;
    }
    return 0;
}

/* A NumPy scalar, or ml_dtypes' bfloat16 (NumPy's spelling of tack.bf16), which
 * the buffer path would otherwise take for a 0-d array. */
static int is_numpy_scalar_type(PyTypeObject *tp) {
    return (strncmp(tp->tp_name, "numpy.", 6) == 0 && strcmp(tp->tp_name, "numpy.ndarray") != 0 &&
            strncmp(tp->tp_name, "numpy.ma", 8) != 0) ||
           strcmp(tp->tp_name, "ml_dtypes.bfloat16") == 0;
}

/* Fill c->types[i] / c->vals[i] from the bound argument. */
static int kcall_arg(KernelObject *k, kcall *c, Py_ssize_t i) {
    PyObject *obj = c->objs[i];
    tack_argtype *t = &c->types[i];
    tack_arg *v = &c->vals[i];
    tack_array *arr = NULL;
    tack_device *dev;

    memset(t, 0, sizeof *t);
    v->array = NULL;
    v->scalar.u = 0;
    c->writable[i] = 0;
    if (PyFloat_CheckExact(obj)) {
        t->dtype = TACK_F64;
        t->weak = 1;
        v->scalar.f = PyFloat_AS_DOUBLE(obj);
        return 0;
    }
    if (PyBool_Check(obj)) {
        t->dtype = TACK_BOOL;
        t->weak = 1;
        v->scalar.i = obj == Py_True;
        return 0;
    }
    if (PyLong_Check(obj)) {
        int overflow = 0;
        t->dtype = TACK_I64;
        t->weak = 1;
        v->scalar.i = PyLong_AsLongLongAndOverflow(obj, &overflow);
        if (overflow > 0) {
            /* 2**63 .. 2**64 - 1: only a uint64 holds it.  Its own signature
             * (weak, TACK_U64) lets the build check that every use converts
             * it to u64 (compiler/driver.c), else the launch refuses it. */
            unsigned long long u = PyLong_AsUnsignedLongLong(obj);
            if (u == (unsigned long long)-1 && PyErr_Occurred()) {
                PyErr_Clear();
                return arg_error(k, i, PyExc_OverflowError, "the int does not fit in 64 bits", obj);
            }
            t->dtype = TACK_U64;
            v->scalar.u = u;
            return 0;
        }
        if (overflow)
            return arg_error(k, i, PyExc_OverflowError, "the int does not fit in 64 bits", obj);
        if (v->scalar.i == -1 && PyErr_Occurred())
            return -1;
        return 0;
    }
    if (PyComplex_CheckExact(obj)) { /* a Python complex: weak, carried as complex128 (types.c) */
        t->dtype = TACK_C128;
        t->weak = 1;
        v->scalar.z[0] = PyComplex_RealAsDouble(obj);
        v->scalar.z[1] = PyComplex_ImagAsDouble(obj);
        return 0;
    }
    if (tpy_array_check(k->st, obj)) {
        arr = ((TackArrayObject *)obj)->arr;
    } else if (Py_TYPE(obj) == k->st->ndarray) {
        /* an exact NumPy array, before the scalar checks below (which walk its type's bases and
         * compare its type's name, none of which it can match): read from the array object where
         * it qualifies, else borrowed as any buffer is */
        arr = tpy_ndarray_fast(k->st, obj); /* array_ndarray.c */
        if (!arr) {
            if (PyErr_Occurred())
                return reraise_for_param(k, i);
            arr = tpy_wrap_buffer(k->st, obj, -1, 0, 1);
            if (!arr)
                return reraise_for_param(k, i);
            tpy_ndarray_learn(k->st, obj, arr);
        }
        c->temps[i] = arr;
        c->st = k->st; /* kcall_fini hands it back to array_ndarray.c */
    } else if (is_numpy_scalar_type(Py_TYPE(obj))) {
        /* np.float64 and np.complex128 too, before the float and complex checks: they
         * are subclasses of Python's float and complex, but concrete, not weak */
        return numpy_scalar(k, c, i, obj);
    } else if (PyFloat_Check(obj)) {
        t->dtype = TACK_F64;
        t->weak = 1;
        v->scalar.f = PyFloat_AsDouble(obj);
        return v->scalar.f == -1.0 && PyErr_Occurred() ? -1 : 0;
    } else if (PyComplex_Check(obj)) { /* another subclass of complex: weak, as a Python complex */
        Py_complex z = PyComplex_AsCComplex(obj);
        if (z.real == -1.0 && PyErr_Occurred())
            return -1;
        t->dtype = TACK_C128;
        t->weak = 1;
        v->scalar.z[0] = z.real;
        v->scalar.z[1] = z.imag;
        return 0;
    } else if (PyObject_CheckBuffer(obj)) {
        if (tpy_learn_ndarray(k->st, obj) < 0)
            return -1;
        arr = tpy_wrap_buffer(k->st, obj, -1, 0, 1);
        if (!arr)
            return reraise_for_param(k, i);
        c->temps[i] = arr;
    } else if (tpy_is_dlpack_producer(k->st, obj)) {
        arr = tpy_dlpack_arg(k->st, obj, c->device);
        if (!arr)
            return reraise_for_param(k, i);
        c->temps[i] = arr;
    } else if (k->st->cai_import && PyObject_HasAttrString(obj, "__cuda_array_interface__")) {
        /* Numba's device arrays and the like: wrapped by tack._cai, held for the call */
        PyObject *wrapped = PyObject_CallOneArg(k->st->cai_import, obj);
        if (!wrapped)
            return reraise_for_param(k, i);
        if (!PyObject_TypeCheck(wrapped, k->st->ArrayType)) {
            Py_DECREF(wrapped);
            PyErr_SetString(PyExc_TypeError, "the __cuda_array_interface__ hook did not return a tack.Array");
            return reraise_for_param(k, i);
        }
        arr = ((TackArrayObject *)wrapped)->arr;
        tack_array_retain(arr);
        Py_DECREF(wrapped);
        c->temps[i] = arr;
    } else if (PyTuple_Check(obj) || PyList_Check(obj)) { /* perhaps a vector's components, as Warp takes them */
        PyObject *q = kernel_qualname(k), *name = PyTuple_GET_ITEM(k->params, i);
        if (q)
            PyErr_Format(PyExc_TypeError,
                         "argument '%U' of %U(): " ACCEPTED_KINDS " (got %.100s); a vector, matrix or quaternion "
                         "is passed by value to a parameter annotated with its type, %U: tack.vec3 "
                         "(docs/language.md, \"Vector arguments\")", name, q, Py_TYPE(obj)->tp_name, name);
        Py_XDECREF(q);
        return -1;
    } else {
        return arg_error(k, i, PyExc_TypeError, ACCEPTED_KINDS, obj);
    }
    t->is_array = 1;
    t->dtype = tack_array_dtype(arr);
    t->ndim = tack_array_ndim(arr);
    t->writable = 1; /* see the file comment: checked per call */
    t->strided = tack_array_strides(arr) != NULL; /* a foreign view: its own build (emit_expr.c) */
    c->writable[i] = tack_array_writable(arr);
    v->array = arr;
    dev = tack_array_device(arr);
    if (!c->device) {
        c->device = dev;
    } else if (c->device != dev) {
        PyObject *q = kernel_qualname(k);
        Py_ssize_t first = 0; /* the earlier array that set the call's device: name it */
        while (first < i && !(c->types[first].is_array && c->vals[first].array &&
                              tack_array_device(c->vals[first].array) == c->device))
            first++;
        if (first < i)
            PyErr_Format(PyExc_ValueError,
                         "%U(): all array arguments must be on one device, but '%U' is on %s and '%U' is on %s",
                         q, PyTuple_GET_ITEM(k->params, i), tack_device_name(dev),
                         PyTuple_GET_ITEM(k->params, first), tack_device_name(c->device));
        else
            PyErr_Format(PyExc_ValueError,
                         "%U(): all array arguments must be on one device, but '%U' is on %s and an "
                         "earlier array is on %s", q, PyTuple_GET_ITEM(k->params, i),
                         tack_device_name(dev), tack_device_name(c->device));
        Py_XDECREF(q);
        return -1;
    }
    return 0;
}

/* A hash of the signature, computed only when the last specialization used
 * does not match (the common case -- the same signature again -- is one
 * memcmp).  Word-wise: tack_argtype is made of ints. */
static Py_hash_t signature_hash(const kcall *c) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)c->device;
    const int *p = (const int *)c->types;
    size_t nw = (size_t)c->n * (sizeof(tack_argtype) / sizeof(int));
    for (size_t i = 0; i < nw; i++)
        h = (h ^ (uint32_t)p[i]) * 1099511628211ull;
    h = (h ^ (uint64_t)c->variant) * 1099511628211ull;
    h ^= h >> 29;
    return (Py_hash_t)(h >> 1);
}

/* The arrays of a call are `distinct` when no two of them share memory:
 * then the dialects declare them restrict (the CPU's C too; not MSL).  One
 * bit for the whole call, set on every array argument of the signature, so
 * a call has two possible builds, not one per pattern of overlaps: the same
 * array passed twice (or views of one buffer that share bytes) gets the
 * build without restrict for all its arrays.  Each pair is compared once,
 * until one overlaps. */
void kcall_mark_distinct(kcall *c) {
    int d = 1;
    for (Py_ssize_t i = 0; i < c->n && d; i++) {
        if (!c->types[i].is_array)
            continue;
        for (Py_ssize_t j = i + 1; j < c->n && d; j++)
            if (c->types[j].is_array && tack_arrays_overlap(c->vals[i].array, c->vals[j].array))
                d = 0;
    }
    kcall_set_distinct(c, d);
}

/* Set the distinct bit of every array argument to d. */
void kcall_set_distinct(kcall *c, int d) {
    for (Py_ssize_t i = 0; i < c->n; i++)
        c->types[i].distinct = c->types[i].is_array && d;
    c->hash = -1;
}

/* Compute the whole signature of a bound call. */
int kcall_signature(KernelObject *k, kcall *c) {
    if (k->by_value) { /* the package's hook binds it (tack._structs): the struct_call path of kernel.c */
        PyObject *q = kernel_qualname(k);
        if (q)
            PyErr_Format(PyExc_TypeError, "%U() takes a vector, matrix or quaternion by value, which the tack "
                         "package binds (tack._structs)", q);
        Py_XDECREF(q);
        return -1;
    }
    for (Py_ssize_t i = 0; i < c->n; i++)
        if (kcall_arg(k, c, i) < 0)
            return -1;
    if (!c->device) {
        c->device = tpy_device_from_object(k->st, NULL);
        if (!c->device)
            return -1;
    }
    kcall_mark_distinct(c); /* also sets hash = -1: computed on demand */
    return 0;
}

/* Bind a method's arguments as a call would be, taking the keyword-only
 * `target` out first.  *target is borrowed or NULL. */
int kcall_bind_method(KernelObject *k, kcall *c, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kwnames, PyObject **target, int allow_target) {
    PyObject *kw = NULL, *kwargs[64];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, m = 0;
    PyObject *stack[128];
    int r;

    *target = NULL;
    if (nargs + nkw > 128) {
        PyErr_SetString(PyExc_TypeError, "too many arguments");
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        stack[i] = args[i];
    if (nkw) {
        kw = PyList_New(0);
        if (!kw)
            return -1;
        for (Py_ssize_t j = 0; j < nkw; j++) {
            PyObject *key = PyTuple_GET_ITEM(kwnames, j);
            if (allow_target && PyUnicode_CompareWithASCIIString(key, "target") == 0) {
                *target = args[nargs + j];
                continue;
            }
            if (PyList_Append(kw, key) < 0 || m >= 64) {
                Py_DECREF(kw);
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_TypeError, "too many keyword arguments");
                return -1;
            }
            kwargs[m] = args[nargs + j];
            stack[nargs + m] = kwargs[m];
            m++;
        }
    }
    {
        PyObject *names = NULL;
        if (kw && m) {
            names = PyList_AsTuple(kw);
            if (!names) {
                Py_DECREF(kw);
                return -1;
            }
        }
        r = kcall_bind(k, c, stack, nargs, names);
        Py_XDECREF(names);
    }
    Py_XDECREF(kw);
    if (r < 0)
        return -1;
    return kcall_signature(k, c);
}

/* -------------------------------------------------------------- cache */

static int spec_matches(const kspec *s, const kcall *c) {
    return s->device == c->device && s->variant == c->variant &&
           memcmp(s->types, c->types, (size_t)c->n * sizeof(tack_argtype)) == 0;
}

static kspec *cache_lookup(KernelObject *k, kcall *c) {
    if (k->nspecs == 0)
        return NULL;
    if (spec_matches(k->specs[k->last], c))
        return k->specs[k->last];
    if (c->hash == -1)
        c->hash = signature_hash(c);
    for (Py_ssize_t i = 0; i < k->nspecs; i++)
        if (k->specs[i]->hash == c->hash && spec_matches(k->specs[i], c)) {
            k->last = i;
            return k->specs[i];
        }
    return NULL;
}

void kernel_spec_free(kspec *s) {
    if (!s)
        return;
    if (s->prog)
        tack_program_free(s->prog);
    PyMem_Free(s->written);
    PyMem_Free(s);
}

/* -------------------------------------------------------------- compile */

/* Turn the last libtack error of a compile into a Python exception; a
 * CompileError shows the source line, read through the getline hook. */
static void raise_compile_status(KernelObject *k, tack_status s) {
    const char *file = NULL, *msg = tack_last_error();
    int line = 0, col = 0;
    PyObject *fname = NULL, *text = NULL, *getline = k->st->getline;

    if (s != TACK_ERR_COMPILE) {
        tpy_raise();
        goto done;
    }
    tack_compile_error_location(&file, &line, &col);
    if (file) {
        if (!getline) {
            PyErr_SetString(PyExc_RuntimeError,
                            "tack._core: the getline hook is not set (the tack package sets it "
                            "with _core._set_hooks(getline=...) when imported)");
            goto done;
        }
        fname = PyUnicode_DecodeFSDefault(file);
        if (!fname)
            goto done;
        if (line > 0) {
            Py_INCREF(getline); /* a call may replace the hook */
            text = PyObject_CallFunction(getline, "Oi", fname, line);
            Py_DECREF(getline);
        }
        if (!text || (PyUnicode_Check(text) && PyUnicode_GET_LENGTH(text) == 0)) {
            PyErr_Clear();
            Py_CLEAR(text);
        }
    }
    tpy_compile_error(k->st, msg && *msg ? msg : "kernel compile error", fname, line, col, 0,
                          text);
done:
    Py_XDECREF(fname);
    Py_XDECREF(text);
}

/* The compile's warnings (possible races) as tack.RaceWarning at the
 * kernel's file and line; -1 when a warnings filter made one an error. */
static int warn_compile(KernelObject *k, const tack_program *prog) {
    const char *file = NULL, *msg;
    int line = 0;
    PyObject *cat = k->st->RaceWarning ? k->st->RaceWarning : PyExc_UserWarning;
    for (int i = 0; (msg = tack_program_warning(prog, i, &file, &line)) != NULL; i++) {
        PyObject *text = PyUnicode_FromString(msg), *fname = PyUnicode_DecodeFSDefault(file ? file : "<kernel>");
        int r = text && fname ? PyErr_WarnExplicitObject(cat, text, fname, line, NULL, NULL) : -1;
        Py_XDECREF(text);
        Py_XDECREF(fname);
        if (r < 0)
            return -1;
    }
    return 0;
}

static void compile_options(KernelObject *k, tack_compile_options *o, const char *target) {
    tack_compile_options_init(o);
    o->checks = k->checks;
    o->fast_math = k->fast_math;
    o->default_float = k->default_float;
    o->flush_denormals = k->flush_denormals;
    o->check_races = k->check_races;
    o->optimize = k->optimize;
    o->target = target;
}

/* Take the kernel's compile lock without holding the GIL while waiting.
 * Two waits could never end, and are errors or repaired instead:
 *   - the thread compiling the kernel calls it again (the front end ran
 *     Python -- a module __getattr__, a property -- that calls the kernel):
 *     a RuntimeError saying so;
 *   - the process was forked while another thread compiled: that thread does
 *     not exist in the child, so the child takes a fresh lock. */
int kernel_lock(KernelObject *k) {
    long pid = tack_process_id();
    if (k->lock_owner && k->lock_pid != pid) {
        PyThread_type_lock fresh = PyThread_allocate_lock();
        if (!fresh) {
            PyErr_NoMemory();
            return -1;
        }
        k->lock = fresh; /* the old one stays held forever; it is not ours to free */
        k->lock_owner = 0;
    }
    if (k->lock_owner == PyThread_get_thread_ident()) {
        PyObject *name = kernel_qualname(k);
        if (name)
            PyErr_Format(PyExc_RuntimeError,
                         "kernel '%U' was called while it is being compiled, from Python code the compile ran "
                         "(a module __getattr__ or a property the kernel's names reach); it cannot be used before "
                         "its compile ends", name);
        Py_XDECREF(name);
        return -1;
    }
    if (!PyThread_acquire_lock(k->lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(k->lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
    k->lock_owner = PyThread_get_thread_ident();
    k->lock_pid = pid;
    return 0;
}

void kernel_unlock(KernelObject *k) {
    k->lock_owner = 0;
    PyThread_release_lock(k->lock);
}


/* Compile the kernel for the signature of `c` and dialect `target`, and
 * build it for `dev` unless that is NULL.  The caller holds the kernel's
 * lock; the GIL is released while the compiler runs.  0 with *out, -1 with
 * an exception. */
static int compile_locked(KernelObject *k, const kcall *c, const char *target, tack_device *dev,
                          tack_program **out) {
    const tack_argtype *types = c->types;
    tack_compile_options opts;
    tack_program *prog = NULL;
    tack_module *mod;
    tack_status st;
    int n = (int)c->n, index, r = -1;

    *out = NULL;
    compile_options(k, &opts, target);
    mod = k->variants[c->variant].module;
    index = k->variants[c->variant].kernel_index;
    Py_BEGIN_ALLOW_THREADS
    st = tack_compile(mod, index, types, n, &opts, &prog);
    if (st == TACK_OK && dev)
        st = tack_program_build(prog, dev);
    Py_END_ALLOW_THREADS
    if (st != TACK_OK) {
        raise_compile_status(k, st);
        goto done;
    }
    if (warn_compile(k, prog) < 0)
        goto done;
    *out = prog;
    prog = NULL;
    r = 0;
done:
    if (prog)
        tack_program_free(prog);
    return r;
}

/* The specialization for the call's signature, compiled and built on a miss
 * (once: a thread that misses waits on the lock and looks again). */
kspec *kernel_specialize(KernelObject *k, kcall *c) {
    kspec *s, *made = NULL;
    tack_program *prog = NULL;

    if (kernel_variant(k, c) < 0)
        return NULL;
    s = cache_lookup(k, c);
    if (s)
        return s; /* the hot path: no lock, no allocation */
    if (kernel_lock(k) < 0)
        return NULL;
    s = cache_lookup(k, c); /* another thread may have compiled it meanwhile */
    if (s || compile_locked(k, c, tack_device_dialect(c->device), c->device, &prog) < 0)
        goto done;

    made = PyMem_Calloc(1, sizeof(kspec) + (size_t)(c->n > 0 ? c->n - 1 : 0) * sizeof(tack_argtype));
    if (!made) {
        PyErr_NoMemory();
        goto done;
    }
    made->prog = prog;
    prog = NULL;
    made->hash = c->hash == -1 ? signature_hash(c) : c->hash;
    made->variant = c->variant;
    made->device = c->device;
    memcpy(made->types, c->types, (size_t)c->n * sizeof(tack_argtype));
    for (Py_ssize_t i = 0; i < c->n; i++)
        if (c->types[i].is_array && tack_program_param_written(made->prog, (int)i))
            made->nwritten++;
    if (made->nwritten) {
        made->written = PyMem_Malloc((size_t)made->nwritten * sizeof(int));
        if (!made->written) {
            PyErr_NoMemory();
            goto done;
        }
        made->nwritten = 0;
        for (Py_ssize_t i = 0; i < c->n; i++)
            if (c->types[i].is_array && tack_program_param_written(made->prog, (int)i))
                made->written[made->nwritten++] = (int)i;
    }
    if (k->nspecs == k->capspecs) {
        Py_ssize_t cap = k->capspecs ? 2 * k->capspecs : 4;
        kspec **grown = PyMem_Realloc(k->specs, (size_t)cap * sizeof(kspec *));
        if (!grown) {
            PyErr_NoMemory();
            goto done;
        }
        k->specs = grown;
        k->capspecs = cap;
    }
    k->last = k->nspecs;
    k->specs[k->nspecs++] = made;
    s = made;
    made = NULL;
done:
    kernel_unlock(k);
    if (prog)
        tack_program_free(prog);
    kernel_spec_free(made);
    return s;
}

/* generated_source / ir: the cached specialization's program when the
 * target is the arguments' device's dialect, else compile_locked() for
 * `target` without building (kernel.h). */
tack_program *kernel_program_for(KernelObject *k, kcall *c, const char *target,
                                 tack_program **owned) {
    const char *dialect = tack_device_dialect(c->device);
    tack_program *prog = NULL;
    kspec *s = NULL;

    *owned = NULL;
    if (kernel_variant(k, c) < 0)
        return NULL;
    if (!target || strcmp(target, dialect) == 0) {
        target = dialect;
        s = cache_lookup(k, c);
    }
    if (s) {
        prog = s->prog;
    } else {
        /* Compile without building: the text is wanted, not the code. */
        if (kernel_lock(k) < 0)
            return NULL;
        if (compile_locked(k, c, target, NULL, owned) == 0)
            prog = *owned;
        kernel_unlock(k);
    }
    return prog;
}
