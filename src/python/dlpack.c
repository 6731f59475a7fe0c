/*
 * dlpack.c -- DLPack for Python: Array.__dlpack__, tack.from_dlpack, the C
 * exchange API, and wrapping raw pointers and buffers (array_from_ptr).
 *
 * The Python DLPack protocol moves a managed tensor inside a PyCapsule.
 * A producer's __dlpack__ returns a capsule named "dltensor" (legacy) or
 * "dltensor_versioned" (DLPack 1.x, when the consumer passes max_version >=
 * (1, 0)); the consumer renames it "used_dltensor[_versioned]" the moment it
 * takes the tensor, and from then on owes the producer one call of the
 * deleter.  A capsule that is never consumed calls the deleter from its
 * destructor.  Renaming at once, before any check that can fail, means the
 * tensor has exactly one owner at every step: the capsule, or libtack
 * (tack_array_from_dlpack takes ownership even when it fails).
 *
 * Lifetime after import lives entirely in libtack: the storage's release
 * callback calls the deleter when the last array using it is released, on
 * whatever thread that happens, without the GIL.  DLPack producers whose
 * deleters touch Python objects take the GIL themselves (NumPy does); what we
 * add is the may_delete gate, which skips deleters once the interpreter is
 * finalizing, when Python-backed deleters could no longer run safely.
 *
 * The C exchange API (`type(x).__dlpack_c_exchange_api__`, a PyCapsule named
 * "dlpack_exchange_api" pointing at a DLPackExchangeAPI table) skips the
 * capsule, the method lookup and the keyword parsing: a consumer calls the
 * producer's C function and gets the managed tensor directly.  Tack offers
 * one on tack.Array and uses a producer's (PyTorch 2.10+) in from_dlpack.
 * Its functions do no stream synchronization ("NoSync"), so from_dlpack
 * uses them only for host tensors and takes the Python protocol otherwise.
 */
#include "tack_py.h"

#include <string.h>
#include <time.h>

#include "tack_dlpack.h"

#define ARR(o) (((TackArrayObject *)(o))->arr)

#define CAPSULE_LEGACY "dltensor"
#define CAPSULE_VERSIONED "dltensor_versioned"
#define CAPSULE_LEGACY_USED "used_dltensor"
#define CAPSULE_VERSIONED_USED "used_dltensor_versioned"
#define CAPSULE_EXCHANGE_API "dlpack_exchange_api"

/* Interned names kept in module state (st->dlpack_strs), by index. */
enum {
    S_EXCHANGE_API,
    S_DLPACK,
    S_MAX_VERSION,
    S_COPY,
    S_MODULE,
    S_IS_CONJ,
    S_IS_NEG,
    S_KW_MAX_VERSION,
    S_KW_MAX_VERSION_COPY,
    S_COUNT
};

static int interpreter_alive(void) {
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsInitialized() && !Py_IsFinalizing();
#else
    return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

/* ---------------------------------------------------------- small parsing */
static int parse_copy(PyObject *obj, tack_dlpack_copy *out) {
    if (obj == NULL || obj == Py_None)
        *out = TACK_DLPACK_COPY_IF_NEEDED;
    else if (obj == Py_True)
        *out = TACK_DLPACK_COPY_ALWAYS;
    else if (obj == Py_False)
        *out = TACK_DLPACK_COPY_NEVER;
    else {
        PyErr_Format(PyExc_TypeError, "copy must be None, True or False, not %.100s", Py_TYPE(obj)->tp_name);
        return -1;
    }
    return 0;
}

/* A (device_type, device_id) pair. */
static int parse_dl_device(PyObject *obj, DLDevice *out) {
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 2) {
        PyErr_Format(PyExc_TypeError, "dl_device must be a (device_type, device_id) tuple, not %R", obj);
        return -1;
    }
    long type = PyLong_AsLong(PyTuple_GET_ITEM(obj, 0));
    if (type == -1 && PyErr_Occurred())
        return -1;
    long id = PyLong_AsLong(PyTuple_GET_ITEM(obj, 1));
    if (id == -1 && PyErr_Occurred())
        return -1;
    out->device_type = (DLDeviceType)type;
    out->device_id = (int32_t)id;
    return 0;
}

/* The stream argument of __dlpack__, per the DLPack Python specification,
 * as tack_array_to_dlpack_stream takes it (*out): on CUDA, None is the
 * legacy default stream (1), -1 no synchronization, 1 and 2 the legacy and
 * per-thread default streams, anything else a CUstream; on ROCm, None and 0
 * are the default stream (HIP's null stream: TACK_DLPACK_STREAM_DEFAULT),
 * -1 no synchronization, anything above 2 a hipStream_t; elsewhere None
 * waits on the host, and a stream is refused naming the array's device.  On
 * OpenCL (kDLOpenCL: cl_mem buffers, where the device has no shared virtual
 * memory) the refusal is a BufferError that says why: a consumer asking with
 * a stream there is one that reads data as an address -- mpi4py asks every
 * device but the CPU with stream=-1 and would hand the handle to MPI. */
static int check_stream(PyObject *stream, DLDevice dev, const tack_array *a, intptr_t *out) {
    *out = dev.device_type == kDLCUDA ? 1 : dev.device_type == kDLROCM ? TACK_DLPACK_STREAM_DEFAULT
                                                                       : TACK_DLPACK_STREAM_HOST;
    if (stream == Py_None)
        return 0;
    if (!PyLong_Check(stream)) {
        PyErr_Format(PyExc_TypeError, "stream must be None or an int, not %.100s", Py_TYPE(stream)->tp_name);
        return -1;
    }
    long long s = PyLong_AsLongLong(stream);
    if (s == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        s = 3; /* a large pointer value */
    }
    switch ((int)dev.device_type) {
    case kDLCUDA:
        if (s == 0 || s < -1) {
            PyErr_Format(PyExc_ValueError, "stream=%lld is not valid for a CUDA array: use None or 1 (the legacy "
                         "default stream), 2 (per-thread default), -1 (no synchronization) or a stream pointer",
                         s);
            return -1;
        }
        if (s == -1 || s == 1 || s == 2)
            *out = (intptr_t)s;
        else if (!(*out = (intptr_t)PyLong_AsVoidPtr(stream)) && PyErr_Occurred())
            return -1;
        return 0;
    case kDLROCM:
        if (s == 1 || s == 2 || s < -1) {
            PyErr_Format(PyExc_ValueError, "stream=%lld is not valid for a ROCm array: use None or 0 (the default "
                         "stream), -1 (no synchronization) or a stream pointer",
                         s);
            return -1;
        }
        if (s == -1)
            *out = TACK_DLPACK_STREAM_NO_SYNC;
        else if (s != 0 && !(*out = (intptr_t)PyLong_AsVoidPtr(stream)) && PyErr_Occurred())
            return -1;
        return 0;
    case kDLOpenCL:
        PyErr_Format(PyExc_BufferError,
                     "the array on %s is an OpenCL buffer (cl_mem), which has no address another library can "
                     "read or write, and the consumer asked for it with stream=%lld (DLPack takes a stream only "
                     "on CUDA and ROCm; mpi4py passes -1 for every device but the CPU, to use the data as an "
                     "address): copy through the host instead, a.numpy() to send and tack.copyto(a, received) "
                     "to receive",
                     tack_device_name(tack_array_device(a)), s);
        return -1;
    default:
        PyErr_Format(PyExc_ValueError, "stream must be None for an array on %s (a %s device), not %lld",
                     tack_device_name(tack_array_device(a)),
                     dev.device_type == kDLCPU ? "CPU (kDLCPU)" : "stream-less", s);
        return -1;
    }
}

/* The producer's deleter, with the pending exception set aside (tack_py.h). */
void tpy_dlpack_delete(void *managed, int versioned) {
    tpy_stashed_error e;
    tpy_error_stash(&e);
    tack_dlpack_delete(managed, versioned);
    tpy_error_unstash(&e);
}

/* ----------------------------------------------------------------- export */
static void capsule_destructor(PyObject *cap, const char *name, int versioned) {
    if (!PyCapsule_IsValid(cap, name))
        return; /* consumed (renamed): the consumer owns the tensor */
    void *managed = PyCapsule_GetPointer(cap, name);
    tpy_dlpack_delete(managed, versioned); /* a dealloc: an exception may be pending */
}

static void capsule_destructor_legacy(PyObject *cap) { capsule_destructor(cap, CAPSULE_LEGACY, 0); }
static void capsule_destructor_versioned(PyObject *cap) { capsule_destructor(cap, CAPSULE_VERSIONED, 1); }

static int kw_is(PyObject *name, const char *s) { return PyUnicode_CompareWithASCIIString(name, s) == 0; }

/* Array.__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) */
PyObject *tpy_array_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy_obj = Py_None;
    tack_array *a = ARR(self), *host = NULL;
    tack_dlpack_copy copy;
    void *managed = NULL;
    tack_status s;
    int versioned = 0;
    if (nargs) {
        PyErr_SetString(PyExc_TypeError, "__dlpack__() takes keyword arguments only");
        return NULL;
    }
    for (Py_ssize_t i = 0; kwnames && i < PyTuple_GET_SIZE(kwnames); i++) {
        PyObject *k = PyTuple_GET_ITEM(kwnames, i), *v = args[i];
        if (kw_is(k, "stream"))
            stream = v;
        else if (kw_is(k, "max_version"))
            max_version = v;
        else if (kw_is(k, "dl_device"))
            dl_device = v;
        else if (kw_is(k, "copy"))
            copy_obj = v;
        else
            return PyErr_Format(PyExc_TypeError, "__dlpack__() got an unexpected keyword argument '%U'", k);
    }
    if (max_version != Py_None) {
        if (!PyTuple_Check(max_version) || PyTuple_GET_SIZE(max_version) != 2)
            return PyErr_Format(PyExc_TypeError, "max_version must be a (major, minor) tuple, not %R", max_version);
        long major = PyLong_AsLong(PyTuple_GET_ITEM(max_version, 0));
        if (major == -1 && PyErr_Occurred())
            return NULL;
        versioned = major >= 1;
    }
    if (parse_copy(copy_obj, &copy) < 0)
        return NULL;
    DLDevice dev = tack_device_to_dlpack(tack_array_device(a));
    intptr_t on = TACK_DLPACK_STREAM_HOST;
    if (check_stream(stream, dev, a, &on) < 0)
        return NULL;
    if (dl_device != Py_None) {
        DLDevice want;
        if (parse_dl_device(dl_device, &want) < 0)
            return NULL;
        if (want.device_type != dev.device_type || want.device_id != dev.device_id) {
            tack_device *cpu = NULL;
            if (want.device_type != kDLCPU || tack_device_from_dlpack(want, &cpu) != TACK_OK)
                return PyErr_Format(PyExc_BufferError,
                                    "cannot export an array on %s to DLPack device (%d, %d): Tack exports to "
                                    "the array's own device or, by copying, to the CPU (1, 0)",
                                    tack_device_name(tack_array_device(a)), (int)want.device_type,
                                    (int)want.device_id);
            if (copy == TACK_DLPACK_COPY_NEVER)
                return PyErr_Format(PyExc_BufferError,
                                    "exporting an array on %s to the CPU needs a copy, and copy=False forbids it",
                                    tack_device_name(tack_array_device(a)));
            Py_BEGIN_ALLOW_THREADS
            s = tack_array_clone(a, cpu, &host);
            Py_END_ALLOW_THREADS
            if (s != TACK_OK)
                return tpy_raise();
            a = host;
            copy = TACK_DLPACK_COPY_NEVER; /* already a copy; flagged below */
            on = TACK_DLPACK_STREAM_HOST;  /* host memory: the copy has waited */
        }
    }
    if (tack_device_kind(tack_array_device(a)) == TACK_DEVICE_CPU) /* nothing queued to wait for */
        s = tack_array_to_dlpack(a, versioned, copy, &managed);
    else {
        Py_BEGIN_ALLOW_THREADS /* the export may wait for queued work */
        s = tack_array_to_dlpack_stream(a, versioned, copy, on, &managed);
        Py_END_ALLOW_THREADS
    }
    if (host) {
        if (s == TACK_OK && versioned)
            ((DLManagedTensorVersioned *)managed)->flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
        tack_array_release(host); /* the tensor holds its own reference */
    }
    if (s != TACK_OK)
        return tpy_raise();
    PyObject *cap = PyCapsule_New(managed, versioned ? CAPSULE_VERSIONED : CAPSULE_LEGACY,
                                  versioned ? capsule_destructor_versioned : capsule_destructor_legacy);
    if (!cap)
        tpy_dlpack_delete(managed, versioned);
    return cap;
}

/* Array.__dlpack_device__() -> (device_type, device_id) */
PyObject *tpy_array_dlpack_device(PyObject *self, PyObject *unused) {
    DLDevice d = tack_device_to_dlpack(tack_array_device(ARR(self)));
    return Py_BuildValue("(ii)", (int)d.device_type, (int)d.device_id);
}

/* ----------------------------------------------------------------- import */
static const tack_dlpack_import_options *import_options(tack_dlpack_import_options *o, tack_device *dev,
                                                        tack_dlpack_copy copy) {
    o->copy = copy;
    o->device = dev;
    o->may_delete = interpreter_alive;
    o->strided = 1; /* a strided tensor is a strided tack.Array view, as m[:, 0] is */
    return o;
}

/* Import a managed tensor (libtack owns it from here) as a new Array.  An
 * import that copies releases the GIL for the copy; the producer's deleter,
 * run at the end of it, takes the GIL itself if it needs it. */
static PyObject *import_managed(tpy_state *st, void *managed, int versioned, tack_device *dev,
                                tack_dlpack_copy copy) {
    tack_dlpack_import_options o;
    tack_array *arr = NULL;
    tack_status s;
    import_options(&o, dev, copy);
    if (copy == TACK_DLPACK_COPY_ALWAYS || dev) {
        Py_BEGIN_ALLOW_THREADS
        s = tack_array_from_dlpack(managed, versioned, &o, &arr);
        Py_END_ALLOW_THREADS
    } else
        s = tack_array_from_dlpack(managed, versioned, &o, &arr);
    if (s != TACK_OK)
        return tpy_raise();
    return tpy_array_new(st, arr);
}

/* Take the managed tensor out of a capsule (renaming it at once) and import it. */
static PyObject *import_capsule(tpy_state *st, PyObject *cap, tack_device *dev, tack_dlpack_copy copy) {
    int versioned;
    const char *name = PyCapsule_GetName(cap);
    if (!name && PyErr_Occurred())
        return NULL;
    if (PyCapsule_IsValid(cap, CAPSULE_VERSIONED))
        versioned = 1;
    else if (PyCapsule_IsValid(cap, CAPSULE_LEGACY))
        versioned = 0;
    else if (name && (!strcmp(name, CAPSULE_LEGACY_USED) || !strcmp(name, CAPSULE_VERSIONED_USED))) {
        PyErr_SetString(PyExc_ValueError,
                        "this DLPack capsule was already consumed: a capsule can be imported only once; "
                        "pass the producer object to tack.from_dlpack instead");
        return NULL;
    } else {
        PyErr_Format(PyExc_TypeError, "expected a DLPack capsule named '%s' or '%s', got a capsule named '%s'",
                     CAPSULE_LEGACY, CAPSULE_VERSIONED, name ? name : "(null)");
        return NULL;
    }
    void *managed = PyCapsule_GetPointer(cap, versioned ? CAPSULE_VERSIONED : CAPSULE_LEGACY);
    if (!managed || PyCapsule_SetName(cap, versioned ? CAPSULE_VERSIONED_USED : CAPSULE_LEGACY_USED) < 0)
        return NULL;
    /* From here libtack owns the tensor, whatever happens. */
    return import_managed(st, managed, versioned, dev, copy);
}

/* The producer's exchange API table for major version 1, or NULL when its
 * type offers none we can use (never an error). */
static const DLPackExchangeAPI *producer_api(tpy_state *st, PyObject *obj) {
    PyObject *cap = NULL, *name = PyTuple_GET_ITEM(st->dlpack_strs, S_EXCHANGE_API);
    const DLPackExchangeAPIHeader *h = NULL;
    /* A class attribute, looked up through the type's method cache without
     * raising: most producers (NumPy) have no table, and a raised-and-cleared
     * AttributeError would cost more than the exchange. */
    cap = _PyType_Lookup(Py_TYPE(obj), name); /* borrowed */
    if (!cap)
        return NULL;
    Py_INCREF(cap);
    if (PyCapsule_IsValid(cap, CAPSULE_EXCHANGE_API))
        h = PyCapsule_GetPointer(cap, CAPSULE_EXCHANGE_API);
    else if (PyLong_Check(cap)) /* the first published form: an address */
        h = PyLong_AsVoidPtr(cap);
    Py_DECREF(cap);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    while (h && h->version.major > DLPACK_MAJOR_VERSION)
        h = h->prev_api;
    if (!h || h->version.major != DLPACK_MAJOR_VERSION)
        return NULL;
    const DLPackExchangeAPI *api = (const DLPackExchangeAPI *)h;
    return api->managed_tensor_from_py_object_no_sync ? api : NULL;
}

static int host_device_type(int t) { return t == kDLCPU || t == kDLCUDAHost || t == kDLROCMHost; }

static PyObject *call_dlpack(tpy_state *st, PyObject *obj, tack_dlpack_copy copy) {
    PyObject *meth = PyObject_GetAttr(obj, PyTuple_GET_ITEM(st->dlpack_strs, S_DLPACK));
    PyObject *args[3], *kw, *out;
    if (!meth) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "tack.from_dlpack() needs an object with __dlpack__ and __dlpack_device__ (a NumPy "
                         "array, a PyTorch tensor, ...) or a DLPack capsule, not %.100s",
                         Py_TYPE(obj)->tp_name);
        }
        return NULL;
    }
    PyObject *version = Py_BuildValue("(ii)", DLPACK_MAJOR_VERSION, TACK_DLPACK_MINOR);
    if (!version) {
        Py_DECREF(meth);
        return NULL;
    }
    args[1] = version;
    args[2] = copy == TACK_DLPACK_COPY_IF_NEEDED ? NULL : (copy == TACK_DLPACK_COPY_ALWAYS ? Py_True : Py_False);
    kw = PyTuple_GET_ITEM(st->dlpack_strs, args[2] ? S_KW_MAX_VERSION_COPY : S_KW_MAX_VERSION);
    out = PyObject_Vectorcall(meth, args + 1, 0, kw);
    Py_DECREF(version);
    if (!out && PyErr_ExceptionMatches(PyExc_TypeError)) {
        /* A producer from before DLPack 1.0: no keywords, a legacy capsule. */
        PyErr_Clear();
        out = PyObject_CallNoArgs(meth);
    }
    Py_DECREF(meth);
    return out;
}

static DLPackExchangeAPI exchange_api; /* Tack's own, defined below */
static int immutable_producer(tpy_state *st, PyObject *obj);
static PyObject *import_producer(tpy_state *st, PyObject *obj, tack_device *dev, tack_dlpack_copy copy,
                                 int use_c_api, int check_dev, tack_device *want);

/* `out` imported from `obj`: a read-only view of it when it shares the storage
 * of an immutable producer (steals `out`). */
static PyObject *readonly_if_immutable(tpy_state *st, PyObject *obj, PyObject *out) {
    tack_array *a = ARR(out), *v = NULL;
    if (!tack_array_writable(a) || !(tack_array_flags(a) & TACK_ARRAY_SHARED) || !immutable_producer(st, obj))
        return out;
    tack_status s = tack_array_view(a, 0, &v);
    Py_DECREF(out);
    if (s != TACK_OK)
        return tpy_raise();
    return tpy_array_new(st, v);
}

/* tack.from_dlpack(obj, /, *, device=None, copy=None, c_api=True).  The
 * arguments are parsed by hand (vectorcall): this is the hot path of an
 * exchange, and the generic parser would cost as much as the exchange. */
static PyObject *py_from_dlpack(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *obj, *device_obj = Py_None, *copy_obj = Py_None;
    int use_c_api = 1;
    tack_dlpack_copy copy;
    tack_device *dev = NULL;
    tpy_state *st = tpy_get_state(m);
    if (nargs != 1)
        return PyErr_Format(PyExc_TypeError, "from_dlpack() takes 1 positional argument (%zd given)", nargs);
    obj = args[0];
    for (Py_ssize_t i = 0; kwnames && i < PyTuple_GET_SIZE(kwnames); i++) {
        PyObject *k = PyTuple_GET_ITEM(kwnames, i), *v = args[nargs + i];
        if (kw_is(k, "device"))
            device_obj = v;
        else if (kw_is(k, "copy"))
            copy_obj = v;
        else if (kw_is(k, "c_api")) {
            if ((use_c_api = PyObject_IsTrue(v)) < 0)
                return NULL;
        } else
            return PyErr_Format(PyExc_TypeError, "from_dlpack() got an unexpected keyword argument '%U'", k);
    }
    if (parse_copy(copy_obj, &copy) < 0)
        return NULL;
    if (device_obj != Py_None && !(dev = tpy_device_from_object(st, device_obj)))
        return NULL;
    if (PyCapsule_CheckExact(obj))
        return import_capsule(st, obj, dev, copy);
    return import_producer(st, obj, dev, copy, use_c_api, 0, NULL);
}

/* A producer whose arrays are immutable but whose capsules cannot say so:
 * JAX exports legacy capsules (no READ_ONLY flag) of arrays nobody may write. */
static int immutable_producer(tpy_state *st, PyObject *obj) {
    /* A heap type keeps its module name in its dict (a method-cache lookup);
     * a static type's tp_name starts with it. */
    PyObject *mod = _PyType_Lookup(Py_TYPE(obj), PyTuple_GET_ITEM(st->dlpack_strs, S_MODULE));
    const char *m = mod && PyUnicode_Check(mod) ? PyUnicode_AsUTF8(mod) : Py_TYPE(obj)->tp_name;
    if (!m) {
        PyErr_Clear();
        return 0;
    }
    return !strncmp(m, "jax", 3) && (m[3] == '\0' || m[3] == '.' || !strncmp(m + 3, "lib", 3));
}

/* A kernel argument's device `dl` (tpy_dlpack_arg): one Tack has, and the
 * call's other arrays' device `want` when there are such (NULL: none yet). */
static int check_arg_device(PyObject *obj, DLDevice dl, tack_device *want) {
    tack_device *dev = NULL;
    if (tack_device_from_dlpack(dl, &dev) != TACK_OK) {
        PyErr_Format(PyExc_ValueError, "the %.100s is on DLPack device (%d, %d), which Tack cannot use: %s",
                     Py_TYPE(obj)->tp_name, (int)dl.device_type, (int)dl.device_id, tack_last_error());
        return -1;
    }
    if (want && dev != want) {
        PyErr_Format(PyExc_ValueError,
                     "the %.100s is on %s, but the call's other arrays are on %s: all array arguments must be "
                     "on one device; move it there first (a copy, e.g. tensor.cpu() or tensor.to(...))",
                     Py_TYPE(obj)->tp_name, tack_device_name(dev), tack_device_name(want));
        return -1;
    }
    return 0;
}

/* The same for a producer without an exchange API: its __dlpack_device__,
 * asked before __dlpack__, so that a tensor on another device is refused
 * without an export (and its stream handshake). */
static int check_arg_device_of(PyObject *obj, tack_device *want) {
    PyObject *d = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
    DLDevice dl;
    int r;
    if (!d)
        return -1;
    r = parse_dl_device(d, &dl);
    Py_DECREF(d);
    return r < 0 ? -1 : check_arg_device(obj, dl, want);
}

/* PyTorch's lazy views: `t.conj()` of a complex tensor and `torch.ops.aten.
 * _neg_view(t)` (also what `.imag` of a conjugate view gives) share the
 * storage of `t` and keep a bit, "conjugate" or "negative", that every
 * PyTorch operation applies when it reads.  DLPack has no field for either
 * bit: the storage holds the values before the bit applies, so an import
 * would read 1+2j where the tensor holds 1-2j.  PyTorch's __dlpack__ refuses
 * the conjugate bit but not the negative one, and its C exchange API neither.
 * Tack refuses both on every path, before anything is exported, naming the
 * call that resolves the bit (a copy, which a shared import cannot be).  The
 * test is two method calls on types that have these methods (PyTorch's);
 * debug-mode kernels ask it too (_core._refuse_lazy_view). */
/* The second way to ask, when the method raised (the error is pending): an
 * export-only subclass such as torch.utils.dlpack.ReadOnlyTensorWrapper
 * refuses every method but the DLPack ones in its __torch_function__, and
 * torch._C._dispatch_keys(t), which no such hook intercepts, lists the key
 * ("Conjugate", "Negative") that carries the bit.  1 when `key` is among
 * them, 0 when not, -1 with the method's own error when this cannot tell. */
static int dispatch_key_set(PyObject *obj, const char *key) {
    PyObject *exc, *mod = NULL, *keys = NULL, *text = NULL;
    int set = -1;
#if PY_VERSION_HEX >= 0x030C0000
    exc = PyErr_GetRaisedException();
#else
    PyObject *etype, *etb;
    PyErr_Fetch(&etype, &exc, &etb);
#endif
    PyObject *modname = PyUnicode_FromString("torch._C");
    if (modname && (mod = PyImport_GetModule(modname)) &&
        (keys = PyObject_CallMethod(mod, "_dispatch_keys", "O", obj)) && (text = PyObject_Str(keys))) {
        /* "DispatchKeySet(CPU, Negative, ADInplaceOrView, ...)": whole names */
        const char *t = PyUnicode_AsUTF8(text), *p = t;
        size_t n = strlen(key);
        set = 0;
        while (t && (p = strstr(p, key)) != NULL) {
            if (p > t && (p[-1] == '(' || p[-1] == ' ') && (p[n] == ',' || p[n] == ')')) {
                set = 1;
                break;
            }
            p += n;
        }
        if (!t)
            set = -1;
    }
    Py_XDECREF(modname);
    Py_XDECREF(mod);
    Py_XDECREF(keys);
    Py_XDECREF(text);
    if (set >= 0) {
#if PY_VERSION_HEX >= 0x030C0000
        Py_XDECREF(exc);
#else
        Py_XDECREF(etype);
        Py_XDECREF(exc);
        Py_XDECREF(etb);
#endif
        return set;
    }
    PyErr_Clear();
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(exc);
#else
    PyErr_Restore(etype, exc, etb);
#endif
    return -1;
}

static int refuse_lazy_view(tpy_state *st, PyObject *obj) {
    static const struct {
        int name;
        const char *what, *fix;
    } bits[] = {
        {S_IS_CONJ, "a conjugate view (its conjugate bit is set, as .conj() of a complex tensor sets it)",
         "resolve_conj"},
        {S_IS_NEG, "a negative view (its negative bit is set, as _neg_view() or .imag of a conjugate view sets it)",
         "resolve_neg"},
    };
    for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++) {
        PyObject *name = PyTuple_GET_ITEM(st->dlpack_strs, bits[i].name);
        if (!_PyType_Lookup(Py_TYPE(obj), name))
            continue;
        PyObject *r = PyObject_CallMethodNoArgs(obj, name);
        int set = r ? PyObject_IsTrue(r) : dispatch_key_set(obj, i == 0 ? "Conjugate" : "Negative");
        Py_XDECREF(r);
        if (set < 0)
            return -1;
        if (set) {
            PyErr_Format(PyExc_BufferError,
                         "the %.100s is %s: its memory holds the values before the %s applies, and DLPack "
                         "cannot carry the bit, so Tack would read them wrong; call .%s() on it first "
                         "(a copy holding the values it shows)",
                         Py_TYPE(obj)->tp_name, bits[i].what, i == 0 ? "conjugation" : "negation", bits[i].fix);
            return -1;
        }
    }
    return 0;
}

/* _core._refuse_lazy_view(obj): None, or BufferError for a lazy view. */
static PyObject *py_refuse_lazy_view(PyObject *m, PyObject *obj) {
    if (refuse_lazy_view(tpy_get_state(m), obj) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* Import from a producer object (not a capsule): its exchange API for a host
 * tensor when it has one, else __dlpack__.  A lazy view is refused first.  A shared import of an immutable
 * producer's array is read-only.  A strided tensor comes as a strided view
 * (runtime/strided.c), unless a copy is made, which gathers it.  With
 * check_dev (a kernel argument), the tensor's device is checked against
 * `want` before it is imported. */
static PyObject *import_producer(tpy_state *st, PyObject *obj, tack_device *dev, tack_dlpack_copy copy,
                                 int use_c_api, int check_dev, tack_device *want) {
    PyObject *cap = NULL, *out = NULL;
    const DLPackExchangeAPI *api = use_c_api ? producer_api(st, obj) : NULL;
    if (refuse_lazy_view(st, obj) < 0)
        return NULL;
    if (api && api != &exchange_api) {
        /* The exchange API skips the checks a producer makes in __dlpack__
         * (PyTorch refuses a tensor that requires grad there): such an object
         * goes through __dlpack__, so its own rules apply on every path. */
        PyObject *rg = PyObject_GetAttrString(obj, "requires_grad");
        int needs = rg ? PyObject_IsTrue(rg) : 0;
        Py_XDECREF(rg);
        if (!rg)
            PyErr_Clear();
        if (needs < 0)
            return NULL;
        if (needs)
            api = NULL;
    }
    if (api) {
        DLManagedTensorVersioned *mt = NULL;
        if (api->managed_tensor_from_py_object_no_sync(obj, &mt) != 0 || !mt) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_BufferError, "the producer's DLPack exchange API failed");
            return NULL;
        }
        if (host_device_type((int)mt->dl_tensor.device.device_type)) {
            if (check_dev && check_arg_device(obj, mt->dl_tensor.device, want) < 0) {
                tpy_dlpack_delete(mt, 1);
                return NULL;
            }
            out = import_managed(st, mt, 1, dev, copy);
            return out ? readonly_if_immutable(st, obj, out) : NULL;
        }
        /* A device tensor needs the stream handshake of the Python protocol. */
        tack_dlpack_delete(mt, 1);
    }
    if (check_dev && check_arg_device_of(obj, want) < 0)
        return NULL;
    if (!(cap = call_dlpack(st, obj, copy)))
        return NULL;
    if (!PyCapsule_CheckExact(cap))
        PyErr_Format(PyExc_TypeError, "%.100s.__dlpack__() returned %.100s, not a DLPack capsule",
                     Py_TYPE(obj)->tp_name, Py_TYPE(cap)->tp_name);
    else
        out = import_capsule(st, cap, dev, copy);
    /* The capsule's destructor is the producer's code, maybe Python (a
     * ctypes callback), run here perhaps with a refusal pending. */
    tpy_stashed_error e;
    tpy_error_stash(&e);
    Py_DECREF(cap);
    tpy_error_unstash(&e);
    return out ? readonly_if_immutable(st, obj, out) : NULL;
}

int tpy_is_dlpack_producer(tpy_state *st, PyObject *obj) {
    return _PyType_Lookup(Py_TYPE(obj), PyTuple_GET_ITEM(st->dlpack_strs, S_DLPACK)) != NULL;
}

/* A kernel argument from a DLPack producer (kernel_call.c): its storage,
 * shared, never copied.  The tensor's device is checked against `want` (the
 * device of the call's earlier arrays, or NULL) before it is imported: from
 * the managed tensor the exchange API hands over for a host tensor, else from
 * __dlpack_device__ before __dlpack__ runs (PyTorch's Python-level
 * __dlpack_device__ costs more than the whole exchange, so it is asked only
 * where needed).  A new reference, or NULL with an exception. */
tack_array *tpy_dlpack_arg(tpy_state *st, PyObject *obj, tack_device *want) {
    PyObject *out = import_producer(st, obj, NULL, TACK_DLPACK_COPY_NEVER, 1, 1, want);
    tack_array *arr;
    if (!out)
        return NULL;
    arr = ARR(out);
    tack_array_retain(arr);
    Py_DECREF(out);
    return arr;
}

/* _core._c_exchange_cost(obj, n) -> seconds per exchange through obj's C
 * exchange API alone: export, import as a Tack array, release (both
 * deleters), with no Python objects made -- the floor under from_dlpack. */
static PyObject *py_c_exchange_cost(PyObject *m, PyObject *args) {
    PyObject *obj;
    Py_ssize_t n;
    struct timespec t0, t1;
    tpy_state *st = tpy_get_state(m);
    if (!PyArg_ParseTuple(args, "On:_c_exchange_cost", &obj, &n))
        return NULL;
    const DLPackExchangeAPI *api = producer_api(st, obj);
    if (!api)
        return PyErr_Format(PyExc_TypeError, "%.100s offers no DLPack C exchange API",
                                            Py_TYPE(obj)->tp_name);
    timespec_get(&t0, TIME_UTC); /* C11's clock, on every system (a measurement: no step is expected) */
    for (Py_ssize_t i = 0; i < n; i++) {
        DLManagedTensorVersioned *mt = NULL;
        tack_array *arr = NULL;
        if (api->managed_tensor_from_py_object_no_sync(obj, &mt) != 0)
            return NULL;
        if (tack_array_from_dlpack(mt, 1, NULL, &arr) != TACK_OK)
            return tpy_raise();
        tack_array_release(arr);
    }
    timespec_get(&t1, TIME_UTC);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    return PyFloat_FromDouble(n > 0 ? secs / (double)n : 0.0);
}

/* ------------------------------------------------------ the C exchange API */
static int exchange_from_py(void *py_object, DLManagedTensorVersioned **out) {
    PyObject *obj = py_object;
    tpy_state *st = tpy_state_from_type(Py_TYPE(obj));
    if (!st || !tpy_array_check(st, obj)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "expected a tack.Array, not %.100s", Py_TYPE(obj)->tp_name);
        return -1;
    }
    void *managed = NULL;
    if (tack_array_to_dlpack(ARR(obj), 1, TACK_DLPACK_COPY_IF_NEEDED, &managed) != TACK_OK) {
        tpy_raise();
        return -1;
    }
    *out = managed;
    return 0;
}

static int exchange_to_py(DLManagedTensorVersioned *tensor, void **out_py_object) {
    PyObject *m = PyImport_ImportModule("tack._core"), *arr_obj = NULL;
    tack_dlpack_import_options o;
    tack_array *arr = NULL;
    if (!m) {
        tpy_dlpack_delete(tensor, 1);
        return -1;
    }
    if (tack_array_from_dlpack(tensor, 1, import_options(&o, NULL, TACK_DLPACK_COPY_IF_NEEDED), &arr) != TACK_OK)
        tpy_raise();
    else
        arr_obj = tpy_array_new(tpy_get_state(m), arr);
    Py_DECREF(m);
    if (!arr_obj)
        return -1;
    *out_py_object = arr_obj;
    return 0;
}

static int exchange_allocator(DLTensor *prototype, DLManagedTensorVersioned **out, void *error_ctx,
                              void (*set_error)(void *error_ctx, const char *kind, const char *message)) {
    tack_device *dev = NULL;
    tack_dtype dt;
    tack_array *arr = NULL;
    void *managed = NULL;
    tack_status s = tack_dtype_from_dlpack(prototype->dtype, &dt);
    if (s == TACK_OK)
        s = tack_device_from_dlpack(prototype->device, &dev);
    if (s == TACK_OK)
        s = tack_array_empty(dev, dt, prototype->ndim, prototype->shape, &arr);
    if (s == TACK_OK) {
        s = tack_array_to_dlpack(arr, 1, TACK_DLPACK_COPY_IF_NEEDED, &managed);
        tack_array_release(arr);
    }
    if (s != TACK_OK) {
        if (set_error)
            set_error(error_ctx,
                      s == TACK_ERR_NOMEM ? "MemoryError" : s == TACK_ERR_BUFFER ? "BufferError" : "ValueError",
                      tack_last_error());
        return -1;
    }
    *out = managed;
    return 0;
}

static int exchange_current_work_stream(DLDeviceType device_type, int32_t device_id, void **out_current_stream) {
    /* Tack's CPU work is synchronous; on a GPU, Tack's stream is a blocking one of
     * its own (ordered with the legacy default stream), and exports through this
     * table wait on the host for it (__dlpack__(stream=...) makes the consumer's
     * stream wait instead). */
    *out_current_stream = NULL;
    return 0;
}

static DLPackExchangeAPI exchange_api = {
    .header = {.version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION}, .prev_api = NULL},
    .managed_tensor_allocator = exchange_allocator,
    .managed_tensor_from_py_object_no_sync = exchange_from_py,
    .managed_tensor_to_py_object_no_sync = exchange_to_py,
    .dltensor_from_py_object_no_sync = NULL, /* Tack keeps no strides to lend without allocating */
    .current_work_stream = exchange_current_work_stream,
};

/* ------------------------------------------------------- array_from_ptr */
typedef struct {
    Py_buffer view;
} held_view;

static void release_view(void *ctx) {
    held_view *h = ctx;
    if (interpreter_alive()) {
        PyGILState_STATE g = PyGILState_Ensure();
        PyBuffer_Release(&h->view);
        PyGILState_Release(g);
    }
    tack_free(h);
}

/* An int address's owner (wrap_pointer's owner=): a reference dropped, under the GIL, when libtack
 * releases the storage (any thread). */
static void release_owner(void *ctx) {
    if (interpreter_alive()) {
        PyGILState_STATE g = PyGILState_Ensure();
        Py_DECREF((PyObject *)ctx);
        PyGILState_Release(g);
    }
}

/* _core.wrap_pointer(ptr, shape, dtype, writable=False, device=None, owner=None) */
static PyObject *py_wrap_pointer(PyObject *m, PyObject *args, PyObject *kw) {
    static char *names[] = {"ptr", "shape", "dtype", "writable", "device", "owner", NULL};
    PyObject *ptr, *shape_obj, *dtype_obj, *device_obj = Py_None, *owner = Py_None;
    int writable = 0, ndim = 0;
    int64_t shape[TACK_MAX_NDIM];
    tack_dtype dt;
    tack_array *arr = NULL;
    tpy_state *st = tpy_get_state(m);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|pOO:wrap_pointer", names, &ptr, &shape_obj, &dtype_obj,
                                     &writable, &device_obj, &owner))
        return NULL;
    tack_device *dev = tpy_parse_layout(st, shape_obj, dtype_obj, device_obj, shape, &ndim, &dt);
    if (!dev)
        return NULL;
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0)
            return PyErr_Format(PyExc_ValueError, "negative dimensions are not allowed: shape %R", shape_obj);
    if (PyLong_Check(ptr)) {
        /* A raw address: trusted for size, never owned, checked for alignment. */
        PyObject *zero = PyLong_FromLong(0);
        int neg = zero ? PyObject_RichCompareBool(ptr, zero, Py_LT) : -1;
        Py_XDECREF(zero);
        if (neg < 0)
            return NULL;
        if (neg)
            return PyErr_Format(PyExc_ValueError, "array_from_ptr(): address %R is negative; an address is an int >= 0", ptr);
        void *p = PyLong_AsVoidPtr(ptr);
        if (!p && PyErr_Occurred())
            return NULL;
        int empty = 0;
        for (int i = 0; i < ndim; i++)
            empty |= shape[i] == 0;
        if (!p && !empty)
            return PyErr_Format(PyExc_ValueError, "array_from_ptr(): address 0 (NULL) cannot hold the elements of shape %R",
                                shape_obj);
        /* owner=: an object kept alive while the memory is used (the exporter of a
         * __cuda_array_interface__, tack._cai); its reference goes to the storage */
        int owned = owner != Py_None;
        if (owned)
            Py_INCREF(owner);
        if (tack_array_wrap(dev, dt, ndim, shape, p, writable, owned ? release_owner : NULL, owned ? owner : NULL,
                            &arr) != TACK_OK)
            return tpy_raise(); /* the release ran: the reference is gone either way */
        return tpy_array_new(st, arr);
    }
    if (!PyObject_CheckBuffer(ptr))
        return PyErr_Format(PyExc_TypeError,
                            "array_from_ptr() needs an int address or an object with the buffer protocol (a "
                            "NumPy array, a bytearray, ...), not %.100s",
                            Py_TYPE(ptr)->tp_name);
    if (tack_device_kind(dev) != TACK_DEVICE_CPU)
        return PyErr_Format(PyExc_ValueError,
                            "a %.100s's buffer is host memory and cannot be wrapped on %s; pass %s as an int",
                            Py_TYPE(ptr)->tp_name, tack_device_name(dev),
                            tack_device_kind(dev) == TACK_DEVICE_METAL ? "an MTLBuffer (its id)" : "a device address");
    held_view *h = tack_malloc(sizeof *h);
    if (!h)
        return PyErr_NoMemory();
    if (PyObject_GetBuffer(ptr, &h->view, writable ? PyBUF_RECORDS : PyBUF_RECORDS_RO) < 0) {
        if (writable && PyErr_ExceptionMatches(PyExc_BufferError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError,
                         "the %.100s's memory is read-only and cannot be wrapped with writable=True",
                         Py_TYPE(ptr)->tp_name);
        }
        tack_free(h);
        return NULL;
    }
    const tack_dtype_info *info = tack_dtype_get(dt);
    size_t need = info->itemsize;
    for (int i = 0; i < ndim; i++)
        need *= (size_t)shape[i];
    if (!PyBuffer_IsContiguous(&h->view, 'C')) {
        PyErr_Format(PyExc_BufferError,
                     "a %.100s with non-contiguous storage cannot be wrapped: Tack arrays are C-contiguous; "
                     "pass the view to a kernel directly (kernels read and write strided views in place), import "
                     "it with tack.from_dlpack (a strided view of the same memory), or wrap a contiguous copy and "
                     "copy the results back into it",
                     Py_TYPE(ptr)->tp_name);
        goto fail;
    }
    if (need > (size_t)h->view.len) {
        PyErr_Format(PyExc_ValueError,
                     "shape %R of %s needs %zu bytes, but the %.100s's buffer has only %zd", shape_obj, info->name,
                     need, Py_TYPE(ptr)->tp_name, h->view.len);
        goto fail;
    }
    if (writable && h->view.readonly) {
        PyErr_Format(PyExc_ValueError, "the %.100s's memory is read-only and cannot be wrapped with writable=True",
                     Py_TYPE(ptr)->tp_name);
        goto fail;
    }
    /* The wrap owns h from here: it releases the view when done, or on failure. */
    if (tack_array_wrap(dev, dt, ndim, shape, h->view.buf, writable, release_view, h, &arr) != TACK_OK)
        return tpy_raise();
    return tpy_array_new(st, arr);
fail:
    PyBuffer_Release(&h->view);
    tack_free(h);
    return NULL;
}

/* ----------------------------------------------------------------- module */
PyDoc_STRVAR(FROM_DLPACK_DOC,
"from_dlpack(obj, /, *, device=None, copy=None)\n--\n\n"
"A Tack array sharing the storage of obj, a DLPack producer.\n\n"
"obj is an object with __dlpack__ and __dlpack_device__ (a NumPy array, a\n"
"PyTorch tensor, a JAX array, another Tack array, ...) or a raw DLPack\n"
"capsule.  A capsule can be consumed only once; passing the producer object\n"
"is usually clearer.\n\n"
"Tack asks for a DLPack 1.x tensor first and falls back to the legacy format\n"
"for producers that predate it.  When the producer's type offers the C\n"
"exchange API (__dlpack_c_exchange_api__, as PyTorch 2.10+ and Tack do),\n"
"host tensors are exchanged through it, without a capsule.\n\n"
"A strided tensor (t[:, 0], t[::2], t.T, negative strides where the\n"
"producer has them) gives a strided view (.strided is True) of the same\n"
"memory: kernels read and write it in place, .numpy() gathers it, and it\n"
"exports through DLPack with its strides.  A read-only tensor gives a\n"
"read-only array.  The producer's storage stays alive until the last Tack\n"
"array using it is gone.\n\n"
"device: where the result must live ('cpu', ...); None: the tensor's own\n"
"device.  Another device than the tensor's needs a copy.\n"
"copy: True always returns an independent, writable, C-contiguous copy\n"
"(a strided tensor's elements gathered); False never\n"
"copies (BufferError where sharing is impossible); None (default) shares\n"
"when possible and copies otherwise.\n"
"c_api=False (for measurements and tests) forces the Python protocol.");

static PyMethodDef dlpack_module_methods[] = {
    {"from_dlpack", (PyCFunction)(void (*)(void))py_from_dlpack, METH_FASTCALL | METH_KEYWORDS, FROM_DLPACK_DOC},
    {"_c_exchange_cost", py_c_exchange_cost, METH_VARARGS, NULL},
    {"_refuse_lazy_view", py_refuse_lazy_view, METH_O, NULL},
    {"wrap_pointer", (PyCFunction)(void (*)(void))py_wrap_pointer, METH_VARARGS | METH_KEYWORDS,
     "wrap_pointer(ptr, shape, dtype, writable=False, device=None, owner=None) -> Array borrowing the memory"},
    {NULL, NULL, 0, NULL},
};

int tpy_dlpack_exec(PyObject *m, tpy_state *st) {
    PyObject *cap = NULL, *kw1 = NULL, *kw2 = NULL;
    int rc = -1;
    if (!(kw1 = Py_BuildValue("(s)", "max_version")) || !(kw2 = Py_BuildValue("(ss)", "max_version", "copy")))
        goto done;
    st->dlpack_strs = PyTuple_New(S_COUNT);
    if (!st->dlpack_strs)
        goto done;
    static const char *strs[] = {"__dlpack_c_exchange_api__", "__dlpack__", "max_version", "copy", "__module__",
                                 "is_conj", "is_neg"};
    for (int i = 0; i < S_KW_MAX_VERSION; i++) {
        PyObject *s = PyUnicode_InternFromString(strs[i]);
        if (!s)
            goto done;
        PyTuple_SET_ITEM(st->dlpack_strs, i, s);
    }
    PyTuple_SET_ITEM(st->dlpack_strs, S_KW_MAX_VERSION, kw1);
    PyTuple_SET_ITEM(st->dlpack_strs, S_KW_MAX_VERSION_COPY, kw2);
    kw1 = kw2 = NULL;
    /* The exchange API is a class attribute of the (immutable) Array type. */
    if (!(cap = PyCapsule_New(&exchange_api, CAPSULE_EXCHANGE_API, NULL)))
        goto done;
    if (PyDict_SetItem(st->ArrayType->tp_dict, PyTuple_GET_ITEM(st->dlpack_strs, S_EXCHANGE_API), cap) < 0)
        goto done;
    PyType_Modified(st->ArrayType);
    if (PyModule_AddIntConstant(m, "DLPACK_MAJOR", TACK_DLPACK_MAJOR) < 0 ||
        PyModule_AddIntConstant(m, "DLPACK_MINOR", TACK_DLPACK_MINOR) < 0)
        goto done;
    rc = PyModule_AddFunctions(m, dlpack_module_methods);
done:
    Py_XDECREF(cap);
    Py_XDECREF(kw1);
    Py_XDECREF(kw2);
    return rc;
}
