/*
 * kernel.c -- the Kernel type: a Python function compiled per signature.
 *
 * `@tack.kernel` wraps a function in a Kernel object.  Calling it is Tack's
 * hot path, so the whole call stays in C:
 *
 *   1. bind the positional and keyword arguments to the parameters (with the
 *      TypeError messages Python itself gives for a wrong call);
 *   2. compute the argument signature: for each argument, array (dtype, ndim)
 *      or scalar (weak Python bool/int/float, or a NumPy scalar's dtype);
 *      NumPy arrays and other buffer objects on the CPU are borrowed, their
 *      writeable flag kept;
 *   3. find the compiled specialization for that signature in a small C
 *      table (the last hit first, then a scan comparing hashes) -- no Python
 *      object is created on a hit;
 *   4. refuse a read-only array passed for a parameter the kernel writes;
 *   5. launch with the GIL released.
 *
 * On a miss the front end (frontend.c) turns the function into Tack's AST
 * once per kernel -- the module is kept and reused for every later signature
 * -- and tack_compile + tack_program_build produce the specialization.
 *
 * Signatures record every array as writable: the read-only check is done here
 * on each call against tack_program_param_written(), so one specialization
 * serves writable and read-only inputs alike and a write to a read-only
 * array is a ValueError naming the parameter.
 *
 * Threads: the table is read and extended only with the GIL held.  Compiles
 * take a per-kernel lock and release the GIL while the C compiler runs, so
 * other threads keep going; a thread that misses waits on the lock and
 * looks again, so each signature is compiled once.  Launching releases the
 * GIL always: measured on a one-element launch, a call costs the same with
 * and without the release (about 0.3 us either way, the difference lost in
 * the noise), while keeping it would stall every other Python thread for the
 * length of a large launch.
 *
 * A Kernel made with is_func=True is a @tack.func: kernels call it (the
 * front end lowers it into their module); calling it from Python runs the
 * original Python function.
 */
#include "tack_py.h"

#include <pythread.h>
#include <string.h>
#include <structmember.h>

/* ------------------------------------------------------------- types */
typedef struct {
    Py_hash_t hash;
    tack_device *device;
    tack_program *prog;
    int *written;          /* indices of the parameters the kernel writes */
    int nwritten;
    tack_argtype types[1]; /* nparams entries (at least one) */
} kspec;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    tack_state *st;
    PyObject *fn;       /* the Python function */
    PyObject *params;   /* tuple of parameter names (str) */
    PyObject *defaults; /* tuple or NULL */
    Py_ssize_t nparams, nposonly;
    int checks, fast_math, is_func;
    tack_module *module; /* built on the first compile, reused */
    int kernel_index;
    PyThread_type_lock lock;
    kspec **specs;
    Py_ssize_t nspecs, capspecs, last;
    PyObject *weakreflist;
} KernelObject;

#define KSTACK 12

/* One call's arguments: objects, signature and values. */
typedef struct {
    Py_ssize_t n;
    PyObject **objs;
    tack_argtype *types;
    tack_arg *vals;
    tack_array **temps; /* arrays created for borrowed buffers, released after */
    int *writable;      /* actual writability of each array argument */
    tack_device *device;
    Py_hash_t hash;
    void *heap;
    PyObject *s_objs[KSTACK];
    tack_argtype s_types[KSTACK];
    tack_arg s_vals[KSTACK];
    tack_array *s_temps[KSTACK];
    int s_writable[KSTACK];
} kcall;

static int kcall_init(kcall *c, Py_ssize_t n)
{
    c->n = n;
    c->heap = NULL;
    c->device = NULL;
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

static void kcall_fini(kcall *c)
{
    for (Py_ssize_t i = 0; i < c->n; i++)
        if (c->temps[i])
            tack_array_release(c->temps[i]);
    if (c->heap)
        PyMem_Free(c->heap);
}

/* ------------------------------------------------------------ binding */

static PyObject *kernel_qualname(KernelObject *k)
{
    PyObject *q = PyObject_GetAttrString(k->fn, "__qualname__");
    if (!q) {
        PyErr_Clear();
        q = PyUnicode_FromString("kernel");
    }
    return q;
}

/* "'a'", "'a' and 'b'", "'a', 'b', and 'c'" as Python writes them. */
static PyObject *name_list(PyObject *names)
{
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
static int kcall_bind(KernelObject *k, kcall *c, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kwnames)
{
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
                     PyObject *obj)
{
    PyObject *q = kernel_qualname(k);
    PyErr_Format(exc, "argument '%U' of %U(): %s (got %.100s)", PyTuple_GET_ITEM(k->params, i),
                 q, what, Py_TYPE(obj)->tp_name);
    Py_XDECREF(q);
    return -1;
}

/* Raise the pending exception again with the parameter named in front of its
 * message; a BufferError (storage that cannot be shared) becomes ValueError. */
static int reraise_for_param(KernelObject *k, Py_ssize_t i)
{
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

/* A NumPy scalar (np.float32(1), np.int8(3), ...): a strong scalar. */
static int numpy_scalar(KernelObject *k, kcall *c, Py_ssize_t i, PyObject *obj)
{
    tack_argtype *t = &c->types[i];
    tack_arg *v = &c->vals[i];
    const tack_dtype_info *info;
    tack_dtype dt;
    PyObject *dtype = PyObject_GetAttrString(obj, "dtype");
    int r = dtype ? tack_py_dtype_from_object(k->st, dtype, &dt) : -1;
    Py_XDECREF(dtype);
    if (r < 0) {
        PyErr_Clear();
        return arg_error(k, i, PyExc_TypeError,
                         "expected a tack.Array, a NumPy array (or another buffer object) or "
                         "a bool/int/float scalar (or a NumPy scalar of a Tack dtype)", obj);
    }
    info = tack_dtype_get(dt);
    if (info->rows != 1 || info->cols != 1)
        return arg_error(k, i, PyExc_TypeError, "only scalar NumPy values can be passed", obj);
    t->dtype = dt;
    if (info->kind == TACK_KIND_FLOAT) {
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

static int is_numpy_scalar_type(PyTypeObject *tp)
{
    return strncmp(tp->tp_name, "numpy.", 6) == 0 && strcmp(tp->tp_name, "numpy.ndarray") != 0 &&
           strncmp(tp->tp_name, "numpy.ma", 8) != 0;
}

/* Fill c->types[i] / c->vals[i] from the bound argument. */
static int kcall_arg(KernelObject *k, kcall *c, Py_ssize_t i)
{
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
        if (overflow)
            return arg_error(k, i, PyExc_OverflowError, "the int does not fit in 64 bits", obj);
        if (v->scalar.i == -1 && PyErr_Occurred())
            return -1;
        return 0;
    }
    if (tack_py_array_check(k->st, obj)) {
        arr = ((TackArrayObject *)obj)->arr;
    } else if (PyFloat_Check(obj)) {
        t->dtype = TACK_F64;
        t->weak = 1;
        v->scalar.f = PyFloat_AsDouble(obj);
        return v->scalar.f == -1.0 && PyErr_Occurred() ? -1 : 0;
    } else if (is_numpy_scalar_type(Py_TYPE(obj))) {
        return numpy_scalar(k, c, i, obj);
    } else if (PyObject_CheckBuffer(obj)) {
        arr = tack_py_wrap_buffer(k->st, obj, -1, 0);
        if (!arr)
            return reraise_for_param(k, i);
        c->temps[i] = arr;
    } else {
        return arg_error(k, i, PyExc_TypeError,
                         "expected a tack.Array, a NumPy array (or another buffer object) or "
                         "a bool/int/float scalar", obj);
    }
    t->is_array = 1;
    t->dtype = tack_array_dtype(arr);
    t->ndim = tack_array_ndim(arr);
    t->writable = 1; /* see the file comment: checked per call */
    c->writable[i] = tack_array_writable(arr);
    v->array = arr;
    dev = tack_array_device(arr);
    if (!c->device) {
        c->device = dev;
    } else if (c->device != dev) {
        PyObject *q = kernel_qualname(k);
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
static Py_hash_t signature_hash(const kcall *c)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)c->device;
    const int *p = (const int *)c->types;
    size_t nw = (size_t)c->n * (sizeof(tack_argtype) / sizeof(int));
    for (size_t i = 0; i < nw; i++)
        h = (h ^ (uint32_t)p[i]) * 1099511628211ull;
    h ^= h >> 29;
    return (Py_hash_t)(h >> 1);
}

/* Compute the whole signature of a bound call. */
static int kcall_signature(KernelObject *k, kcall *c)
{
    for (Py_ssize_t i = 0; i < c->n; i++)
        if (kcall_arg(k, c, i) < 0)
            return -1;
    if (!c->device) {
        c->device = tack_py_device_from_object(k->st, NULL);
        if (!c->device)
            return -1;
    }
    c->hash = -1; /* computed on demand */
    return 0;
}

/* -------------------------------------------------------------- cache */

static int spec_matches(const kspec *s, const kcall *c)
{
    return s->device == c->device &&
           memcmp(s->types, c->types, (size_t)c->n * sizeof(tack_argtype)) == 0;
}

static kspec *cache_lookup(KernelObject *k, kcall *c)
{
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

static void spec_free(kspec *s)
{
    if (!s)
        return;
    if (s->prog)
        tack_program_free(s->prog);
    PyMem_Free(s->written);
    PyMem_Free(s);
}

/* Turn the last libtack error of a compile into a Python exception. */
static void raise_compile_status(KernelObject *k, tack_status s)
{
    const char *file = NULL, *msg = tack_last_error();
    int line = 0, col = 0;
    PyObject *fname = NULL, *text = NULL, *linecache = NULL;

    if (s != TACK_ERR_COMPILE) {
        tack_py_raise();
        return;
    }
    tack_compile_error_location(&file, &line, &col);
    if (file) {
        fname = PyUnicode_DecodeFSDefault(file);
        if (!fname)
            return;
        linecache = PyImport_ImportModule("linecache");
        if (linecache && line > 0)
            text = PyObject_CallMethod(linecache, "getline", "Oi", fname, line);
        if (!text || (PyUnicode_Check(text) && PyUnicode_GET_LENGTH(text) == 0)) {
            PyErr_Clear();
            Py_XDECREF(text);
            text = NULL;
        }
    }
    tack_py_compile_error(k->st, msg && *msg ? msg : "kernel compile error", fname, line, col, 0,
                          text);
    Py_XDECREF(fname);
    Py_XDECREF(text);
    Py_XDECREF(linecache);
}

static void compile_options(KernelObject *k, tack_compile_options *o, const char *target)
{
    tack_compile_options_init(o);
    o->checks = k->checks;
    o->fast_math = k->fast_math;
    o->target = target;
}

/* Take the kernel's compile lock without holding the GIL while waiting. */
static void lock_kernel(KernelObject *k)
{
    if (!PyThread_acquire_lock(k->lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(k->lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
}

/* Build the kernel's module once (lock held). */
static int ensure_module(KernelObject *k)
{
    if (k->module)
        return 0;
    return tack_py_frontend_build(k->st, k->fn, &k->module, &k->kernel_index);
}

/* The specialization for the call's signature, compiled and built on a miss. */
static kspec *kernel_specialize(KernelObject *k, kcall *c)
{
    kspec *s = cache_lookup(k, c), *made = NULL;
    tack_compile_options opts;
    tack_program *prog = NULL;
    tack_status st;
    tack_device *dev = c->device;
    tack_module *mod;
    int index;

    if (s)
        return s;
    lock_kernel(k);
    s = cache_lookup(k, c); /* another thread may have compiled it meanwhile */
    if (s)
        goto done;
    if (ensure_module(k) < 0)
        goto done;
    compile_options(k, &opts, tack_device_dialect(dev));
    mod = k->module;
    index = k->kernel_index;
    {
        const tack_argtype *types = c->types;
        int n = (int)c->n;
        Py_BEGIN_ALLOW_THREADS
        st = tack_compile(mod, index, types, n, &opts, &prog);
        if (st == TACK_OK) {
            st = tack_program_build(prog, dev);
            if (st != TACK_OK) {
                tack_program_free(prog);
                prog = NULL;
            }
        }
        Py_END_ALLOW_THREADS
    }
    if (st != TACK_OK) {
        raise_compile_status(k, st);
        goto done;
    }
    made = PyMem_Calloc(1, sizeof(kspec) + (size_t)(c->n > 0 ? c->n - 1 : 0) * sizeof(tack_argtype));
    if (!made) {
        PyErr_NoMemory();
        goto done;
    }
    made->prog = prog;
    prog = NULL;
    made->hash = c->hash == -1 ? signature_hash(c) : c->hash;
    made->device = dev;
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
    PyThread_release_lock(k->lock);
    if (prog)
        tack_program_free(prog);
    spec_free(made);
    return s;
}

/* ---------------------------------------------------------------- call */

static PyObject *kernel_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames)
{
    KernelObject *k = (KernelObject *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *result = NULL;
    kspec *s;
    kcall c;
    tack_status st;

    if (k->is_func)
        return PyObject_Vectorcall(k->fn, args, nargsf, kwnames);
    if (kcall_init(&c, k->nparams) < 0)
        return NULL;
    if (kcall_bind(k, &c, args, nargs, kwnames) < 0 || kcall_signature(k, &c) < 0)
        goto done;
    s = kernel_specialize(k, &c);
    if (!s)
        goto done;
    for (int j = 0; j < s->nwritten; j++) {
        int i = s->written[j];
        if (!c.writable[i]) {
            PyObject *q = kernel_qualname(k);
            PyErr_Format(PyExc_ValueError,
                         "%U() writes to parameter '%U', but the array passed for it is "
                         "read-only", q, PyTuple_GET_ITEM(k->params, i));
            Py_XDECREF(q);
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    st = tack_launch(s->prog, c.vals, (int)c.n);
    Py_END_ALLOW_THREADS
    if (st != TACK_OK) {
        tack_py_raise();
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    kcall_fini(&c);
    return result;
}

/* Bind a method's arguments as a call would be, taking the keyword-only
 * `target` out first.  *target is borrowed or NULL. */
static int bind_for_method(KernelObject *k, kcall *c, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames, PyObject **target, int allow_target)
{
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

static PyObject *kernel_compile_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                       PyObject *kwnames)
{
    KernelObject *k = (KernelObject *)self;
    PyObject *target, *result = NULL;
    kcall c;
    if (k->is_func) {
        PyErr_SetString(PyExc_TypeError, "a @tack.func is compiled inside the kernels that call "
                                         "it; compile those kernels instead");
        return NULL;
    }
    if (kcall_init(&c, k->nparams) < 0)
        return NULL;
    if (bind_for_method(k, &c, args, nargs, kwnames, &target, 0) < 0)
        goto done;
    if (kernel_specialize(k, &c))
        result = Py_NewRef(Py_None);
done:
    kcall_fini(&c);
    return result;
}

/* generated_source / ir: from the cached specialization when the target is
 * the arguments' device, else compiled for `target` without building. */
static PyObject *kernel_text(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames, int want_ir)
{
    KernelObject *k = (KernelObject *)self;
    PyObject *target = NULL, *result = NULL;
    const char *ctarget = NULL;
    tack_program *prog = NULL;
    kspec *s;
    kcall c;

    if (k->is_func) {
        PyErr_SetString(PyExc_TypeError, "a @tack.func has no code of its own; ask a kernel "
                                         "that calls it");
        return NULL;
    }
    if (kcall_init(&c, k->nparams) < 0)
        return NULL;
    if (bind_for_method(k, &c, args, nargs, kwnames, &target, 1) < 0)
        goto done;
    if (target && target != Py_None) {
        if (!PyUnicode_Check(target)) {
            PyErr_Format(PyExc_TypeError, "target must be a str such as 'c' or 'cuda', not %.100s",
                         Py_TYPE(target)->tp_name);
            goto done;
        }
        ctarget = PyUnicode_AsUTF8(target);
        if (!ctarget)
            goto done;
    }
    if (!ctarget || strcmp(ctarget, tack_device_dialect(c.device)) == 0) {
        s = cache_lookup(k, &c);
        if (!s) {
            /* Compile without building: the text is wanted, not the code. */
            ctarget = tack_device_dialect(c.device);
        } else {
            const char *txt = want_ir ? tack_program_ir(s->prog) : tack_program_source(s->prog);
            result = PyUnicode_FromString(txt ? txt : "");
            goto done;
        }
    }
    {
        tack_compile_options opts;
        tack_status st;
        int failed;
        lock_kernel(k);
        failed = ensure_module(k) < 0;
        if (!failed) {
            compile_options(k, &opts, ctarget);
            st = tack_compile(k->module, k->kernel_index, c.types, (int)c.n, &opts, &prog);
            if (st != TACK_OK) {
                raise_compile_status(k, st);
                failed = 1;
            }
        }
        PyThread_release_lock(k->lock);
        if (failed)
            goto done;
        {
            const char *txt = want_ir ? tack_program_ir(prog) : tack_program_source(prog);
            result = PyUnicode_FromString(txt ? txt : "");
        }
    }
done:
    if (prog)
        tack_program_free(prog);
    kcall_fini(&c);
    return result;
}

static PyObject *kernel_generated_source(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                         PyObject *kwnames)
{
    return kernel_text(self, args, nargs, kwnames, 0);
}

static PyObject *kernel_ir(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames)
{
    return kernel_text(self, args, nargs, kwnames, 1);
}

/* ------------------------------------------------------------- object */

static PyObject *kernel_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"fn", "checks", "fast_math", "is_func", NULL};
    PyObject *fn, *code = NULL, *varnames = NULL;
    int checks = 1, fast_math = 0, is_func = 0;
    KernelObject *k = NULL;
    long argcount, posonly;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|$ppp:Kernel", kwlist, &fn, &checks,
                                     &fast_math, &is_func))
        return NULL;
    if (!PyFunction_Check(fn)) {
        PyErr_Format(PyExc_TypeError,
                     "tack.kernel and tack.func take a Python function (def ...), not %.100s",
                     Py_TYPE(fn)->tp_name);
        return NULL;
    }
    code = PyFunction_GetCode(fn);
    argcount = ((PyCodeObject *)code)->co_argcount;
    posonly = ((PyCodeObject *)code)->co_posonlyargcount;
    varnames = PyObject_GetAttrString(code, "co_varnames");
    if (!varnames)
        return NULL;
    k = (KernelObject *)type->tp_alloc(type, 0);
    if (!k)
        goto fail;
    k->vectorcall = kernel_vectorcall;
    k->st = tack_state_from_type(type);
    if (!k->st)
        goto fail;
    k->fn = Py_NewRef(fn);
    k->params = PyTuple_GetSlice(varnames, 0, argcount);
    if (!k->params)
        goto fail;
    k->nparams = argcount;
    k->nposonly = posonly;
    {
        PyObject *d = PyFunction_GetDefaults(fn);
        k->defaults = d && d != Py_None ? Py_NewRef(d) : NULL;
    }
    k->checks = checks;
    k->fast_math = fast_math;
    k->is_func = is_func;
    k->kernel_index = -1;
    k->lock = PyThread_allocate_lock();
    if (!k->lock) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_DECREF(varnames);
    return (PyObject *)k;
fail:
    Py_XDECREF(varnames);
    Py_XDECREF(k);
    return NULL;
}

static int kernel_traverse(PyObject *self, visitproc visit, void *arg)
{
    KernelObject *k = (KernelObject *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(k->fn);
    Py_VISIT(k->params);
    Py_VISIT(k->defaults);
    return 0;
}

static int kernel_clear(PyObject *self)
{
    KernelObject *k = (KernelObject *)self;
    Py_CLEAR(k->fn);
    Py_CLEAR(k->params);
    Py_CLEAR(k->defaults);
    return 0;
}

static void kernel_dealloc(PyObject *self)
{
    KernelObject *k = (KernelObject *)self;
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (k->weakreflist)
        PyObject_ClearWeakRefs(self);
    kernel_clear(self);
    for (Py_ssize_t i = 0; i < k->nspecs; i++)
        spec_free(k->specs[i]);
    PyMem_Free(k->specs);
    if (k->module)
        tack_module_free(k->module);
    if (k->lock)
        PyThread_free_lock(k->lock);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *kernel_repr(PyObject *self)
{
    KernelObject *k = (KernelObject *)self;
    PyObject *q = kernel_qualname(k), *r;
    PyCodeObject *code = (PyCodeObject *)PyFunction_GetCode(k->fn);
    r = PyUnicode_FromFormat("<tack.%s %U at %U:%d>", k->is_func ? "func" : "kernel", q,
                             code->co_filename, code->co_firstlineno);
    Py_XDECREF(q);
    return r;
}

static PyObject *get_fn_attr(PyObject *self, void *name)
{
    return PyObject_GetAttrString(((KernelObject *)self)->fn, (const char *)name);
}

static PyObject *get_wrapped(PyObject *self, void *unused)
{
    return Py_NewRef(((KernelObject *)self)->fn);
}

static PyObject *get_specializations(PyObject *self, void *unused)
{
    return PyLong_FromSsize_t(((KernelObject *)self)->nspecs);
}

static PyObject *get_flag(PyObject *self, void *which)
{
    KernelObject *k = (KernelObject *)self;
    const char *w = which;
    int v = w[0] == 'c' ? k->checks : (w[0] == 'f' ? k->fast_math : k->is_func);
    return PyBool_FromLong(v);
}

static PyGetSetDef kernel_getset[] = {
    {"__name__", get_fn_attr, NULL, NULL, "__name__"},
    {"__qualname__", get_fn_attr, NULL, NULL, "__qualname__"},
    {"__doc__", get_fn_attr, NULL, NULL, "__doc__"},
    {"__module__", get_fn_attr, NULL, NULL, "__module__"},
    {"__wrapped__", get_wrapped, NULL, "the original Python function", NULL},
    {"specializations", get_specializations, NULL,
     "number of compiled specializations (one per argument signature)", NULL},
    {"checks", get_flag, NULL, "bounds / zero-division / assert checks are compiled in", "c"},
    {"fast_math", get_flag, NULL, "floating point may be reassociated", "f"},
    {"is_func", get_flag, NULL, "this is a @tack.func, not a kernel", "i"},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef kernel_methods[] = {
    {"compile", (PyCFunction)(void (*)(void))kernel_compile_method, METH_FASTCALL | METH_KEYWORDS,
     "compile(*args, **kwargs): compile (and build) the kernel for these arguments' signature "
     "ahead of the first call; nothing runs."},
    {"generated_source", (PyCFunction)(void (*)(void))kernel_generated_source,
     METH_FASTCALL | METH_KEYWORDS,
     "generated_source(*args, target=None) -> str: the source Tack emits for these arguments; "
     "target is a dialect ('c', 'cuda', 'hip', 'metal', 'opencl'), by default the arguments' "
     "device's."},
    {"ir", (PyCFunction)(void (*)(void))kernel_ir, METH_FASTCALL | METH_KEYWORDS,
     "ir(*args, target=None) -> str: the typed IR for these arguments, as TACK_DUMP=ir shows it."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef kernel_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(KernelObject, weakreflist), READONLY, NULL},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(KernelObject, vectorcall), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot kernel_slots[] = {
    {Py_tp_new, kernel_new},
    {Py_tp_dealloc, kernel_dealloc},
    {Py_tp_traverse, kernel_traverse},
    {Py_tp_clear, kernel_clear},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_repr, kernel_repr},
    {Py_tp_getset, kernel_getset},
    {Py_tp_methods, kernel_methods},
    {Py_tp_members, kernel_members},
    {0, NULL},
};

static PyType_Spec kernel_spec = {
    .name = "tack.Kernel",
    .basicsize = sizeof(KernelObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = kernel_slots,
};

/* ------------------------------------------------------- module hooks */

int tack_py_kernel_unwrap(tack_state *st, PyObject *obj, PyObject **fn, int *is_func)
{
    if (!st->KernelType || !PyObject_TypeCheck(obj, st->KernelType))
        return 0;
    if (fn)
        *fn = ((KernelObject *)obj)->fn;
    if (is_func)
        *is_func = ((KernelObject *)obj)->is_func;
    return 1;
}

static PyObject *py_set_intrinsics(PyObject *m, PyObject *arg)
{
    tack_state *st = tack_get_state(m);
    if (!PyDict_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "_set_intrinsics expects a dict {function: name}");
        return NULL;
    }
    Py_XSETREF(st->kernel_extra, Py_NewRef(arg));
    Py_RETURN_NONE;
}

static PyMethodDef kernel_module_methods[] = {
    {"_set_intrinsics", py_set_intrinsics, METH_O,
     "_set_intrinsics(registry): the {object: intrinsic name} dict the kernel front end uses"},
    {NULL, NULL, 0, NULL},
};

int tack_py_kernel_exec(PyObject *m, tack_state *st)
{
    PyObject *type = PyType_FromModuleAndSpec(m, &kernel_spec, NULL);
    if (!type)
        return -1;
    st->KernelType = (PyTypeObject *)type;
    if (PyModule_AddObjectRef(m, "Kernel", type) < 0)
        return -1;
    return PyModule_AddFunctions(m, kernel_module_methods);
}

int tack_py_kernel_traverse(tack_state *st, visitproc visit, void *arg)
{
    Py_VISIT(st->KernelType);
    Py_VISIT(st->kernel_extra);
    return 0;
}

void tack_py_kernel_clear(tack_state *st)
{
    Py_CLEAR(st->KernelType);
    Py_CLEAR(st->kernel_extra);
}
