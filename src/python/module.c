/*
 * module.c -- the extension module tack._core: state, errors, devices.
 *
 * The module uses multi-phase initialization and keeps every Python object
 * it creates (types, dtype instances, hooks) in module state, so it holds no
 * process-global Python objects.  The exec slot first performs the version
 * handshake with libtack: an extension built against another ABI refuses to
 * load with an ImportError instead of misreading structures.
 *
 * Errors from libtack arrive as a tack_status plus a per-thread message;
 * tpy_raise() maps each status to the Python exception a NumPy user
 * expects (ValueError, TypeError, IndexError, MemoryError, ...).
 */
#include "tack_py.h"

/* ------------------------------------------------------------ state */
static struct PyModuleDef tpy_module_def;

tpy_state *tpy_get_state(PyObject *module) { return (tpy_state *)PyModule_GetState(module); }

tpy_state *tpy_state_from_type(PyTypeObject *tp) {
    PyObject *m = PyType_GetModuleByDef(tp, &tpy_module_def);
    return m ? tpy_get_state(m) : NULL;
}

PyObject *tpy_numpy(tpy_state *st) {
    if (!st->numpy)
        st->numpy = PyImport_ImportModule("numpy");
    return st->numpy;
}

PyObject *tpy_raise(void) {
    PyObject *exc;
    if (tack_last_status() == TACK_ERR_INTERRUPTED) {
        /* Python's own handler saw the signal too: let it raise (KeyboardInterrupt,
         * or whatever the program installed); otherwise say what stopped us. */
        if (PyErr_CheckSignals() < 0)
            return NULL;
        PyErr_SetString(PyExc_KeyboardInterrupt, tack_last_error());
        return NULL;
    }
    switch (tack_last_status()) {
    case TACK_ERR_NOMEM: exc = PyExc_MemoryError; break;
    case TACK_ERR_VALUE: exc = PyExc_ValueError; break;
    case TACK_ERR_TYPE: exc = PyExc_TypeError; break;
    case TACK_ERR_INDEX: exc = PyExc_IndexError; break;
    case TACK_ERR_READONLY: exc = PyExc_ValueError; break;
    case TACK_ERR_UNSUPPORTED: exc = PyExc_NotImplementedError; break;
    case TACK_ERR_BUFFER: exc = PyExc_BufferError; break;
    case TACK_ERR_ZERODIV: exc = PyExc_ZeroDivisionError; break;
    case TACK_ERR_ASSERT: exc = PyExc_AssertionError; break;
    case TACK_ERR_OVERFLOW: exc = PyExc_OverflowError; break;
    case TACK_ERR_UNBOUND: exc = PyExc_UnboundLocalError; break;
    default: exc = PyExc_RuntimeError; break;
    }
    const char *msg = tack_last_error();
    PyErr_SetString(exc, msg && *msg ? msg : "unknown error in libtack");
    return NULL;
}

int tpy_raise_int(void) {
    tpy_raise();
    return -1;
}

/* ----------------------------------------------------------- devices */
tack_device *tpy_device_from_object(tpy_state *st, PyObject *obj) {
    tack_device *dev = NULL;
    if (obj == NULL || obj == Py_None)
        obj = st->default_device;
    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "device must be a str such as 'cpu' or 'cuda:0', not %.100s",
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    const char *name = PyUnicode_AsUTF8(obj);
    if (!name)
        return NULL;
    if (tack_device_get(name, &dev) != TACK_OK) {
        tpy_raise();
        return NULL;
    }
    return dev;
}

static PyObject *py_devices(PyObject *m, PyObject *unused) {
    tack_device *list[64];
    int n = tack_devices(list, 64);
    PyObject *out = PyList_New(0);
    if (!out)
        return NULL;
    for (int i = 0; i < n && i < 64; i++) {
        PyObject *s = PyUnicode_FromString(tack_device_name(list[i]));
        if (!s || PyList_Append(out, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(s);
    }
    return out;
}

static PyObject *py_set_default_device(PyObject *m, PyObject *arg) {
    tpy_state *st = tpy_get_state(m);
    if (!tpy_device_from_object(st, arg == Py_None ? NULL : arg))
        return NULL;
    PyObject *name = arg == Py_None ? PyUnicode_FromString("cpu") : Py_NewRef(arg);
    if (!name)
        return NULL;
    Py_SETREF(st->default_device, name);
    Py_RETURN_NONE;
}

static PyObject *py_get_default_device(PyObject *m, PyObject *unused) {
    return Py_NewRef(tpy_get_state(m)->default_device);
}

static PyObject *py_synchronize(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
    tack_status status;
    if (nargs > 1)
        return PyErr_Format(PyExc_TypeError, "synchronize() takes at most 1 argument (%zd given)", nargs);
    if (nargs == 1 && args[0] != Py_None) {
        tack_device *dev = tpy_device_from_object(tpy_get_state(m), args[0]);
        if (!dev)
            return NULL;
        Py_BEGIN_ALLOW_THREADS
        status = tack_device_synchronize(dev);
        Py_END_ALLOW_THREADS
    } else {
        Py_BEGIN_ALLOW_THREADS
        status = tack_synchronize_all();
        Py_END_ALLOW_THREADS
    }
    if (status != TACK_OK)
        return tpy_raise();
    Py_RETURN_NONE;
}

static PyObject *py_device_threads(PyObject *m, PyObject *arg) {
    tack_device *dev = tpy_device_from_object(tpy_get_state(m), arg);
    if (!dev)
        return NULL;
    return PyLong_FromLong(tack_device_threads(dev));
}

/* _launch_alone(on) -> the previous setting: this thread's CPU launches on it alone
 * (tack_cpu_launch_alone), for the primitives' small inputs. */
static PyObject *py_launch_alone(PyObject *m, PyObject *arg) {
    (void)m;
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    return PyBool_FromLong(tack_cpu_launch_alone(on));
}

/* (driver, context, device) handles of a Level Zero device, as ints. */
static PyObject *py_level_zero_handles(PyObject *m, PyObject *arg) {
    void *drv = NULL, *ctx = NULL, *dev = NULL;
    tack_device *d = tpy_device_from_object(tpy_get_state(m), arg);
    if (!d)
        return NULL;
    if (tack_level_zero_handles(d, &drv, &ctx, &dev) != TACK_OK)
        return tpy_raise();
    return Py_BuildValue("(NNN)", PyLong_FromVoidPtr(drv), PyLong_FromVoidPtr(ctx), PyLong_FromVoidPtr(dev));
}

/* Make Tack use another library's Level Zero context (tack_level_zero_adopt). */
static PyObject *py_level_zero_adopt(PyObject *m, PyObject *args) {
    PyObject *o[3];
    void *h[3];
    (void)m;
    if (!PyArg_ParseTuple(args, "O!O!O!:level_zero_adopt", &PyLong_Type, &o[0], &PyLong_Type, &o[1], &PyLong_Type,
                          &o[2]))
        return NULL;
    for (int i = 0; i < 3; i++) {
        h[i] = PyLong_AsVoidPtr(o[i]);
        if (PyErr_Occurred())
            return NULL;
    }
    if (tack_level_zero_adopt(h[0], h[1], h[2]) != TACK_OK)
        return tpy_raise();
    Py_RETURN_NONE;
}

/* The compiler's intrinsics (its intrinsics.def table), a (name, kind,
 * min_args, max_args) tuple per row, in the table's order. */
static PyObject *py_intrinsics(PyObject *m, PyObject *unused) {
    PyObject *rows = PyList_New(0), *row = NULL;
    const char *name, *kind;
    int lo, hi;
    (void)m;
    (void)unused;
    if (!rows)
        return NULL;
    for (int i = 0; (name = tack_intrinsic_info(i, &kind, &lo, &hi)) != NULL; i++) {
        row = Py_BuildValue("(ssii)", name, kind, lo, hi);
        if (!row || PyList_Append(rows, row) < 0)
            goto error;
        Py_CLEAR(row);
    }
    Py_SETREF(rows, PyList_AsTuple(rows));
    return rows;
error:
    Py_XDECREF(row);
    Py_DECREF(rows);
    return NULL;
}

/* The compile targets, from the compiler's one table of them (src/compiler/target.c). */
static PyObject *py_targets(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    Py_ssize_t n = 0;
    while (tack_compile_target((int)n))
        n++;
    PyObject *names = PyTuple_New(n);
    if (!names)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *s = PyUnicode_FromString(tack_compile_target((int)i));
        if (!s) {
            Py_DECREF(names);
            return NULL;
        }
        PyTuple_SET_ITEM(names, i, s);
    }
    return names;
}

static PyObject *py_set_hooks(PyObject *m, PyObject *args, PyObject *kw) {
    static char *names[] = {"repr",       "compile_error", "getsourcelines", "getline",    "race_warning", "reduce",
                            "race_error", "struct_call",   "autodiff",       "cai_export", "cai_import",   "by_name",
                            NULL};
    PyObject *repr = NULL, *ce = NULL, *gsl = NULL, *gl = NULL, *rw = NULL, *red = NULL, *re = NULL, *sc = NULL;
    PyObject *ad = NULL, *cx = NULL, *ci = NULL, *bn = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOOOOOOOOOO:_set_hooks", names, &repr, &ce, &gsl, &gl, &rw, &red, &re,
                                     &sc, &ad, &cx, &ci, &bn))
        return NULL;
    PyObject *const fns[] = {gsl, gl, red, sc, ad, cx, ci, bn};
    const char *const fn_names[] = {"getsourcelines", "getline", "reduce",     "struct_call",
                                    "autodiff",       "cai_export", "cai_import", "by_name"};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        if (fns[i] && !PyCallable_Check(fns[i]))
            return PyErr_Format(PyExc_TypeError, "_set_hooks: %s must be callable, not %.100s", fn_names[i],
                                Py_TYPE(fns[i])->tp_name);
    tpy_state *st = tpy_get_state(m);
    if (repr)
        Py_XSETREF(st->repr_hook, Py_NewRef(repr));
    if (ce)
        Py_XSETREF(st->CompileError, Py_NewRef(ce));
    if (rw)
        Py_XSETREF(st->RaceWarning, Py_NewRef(rw));
    if (re)
        Py_XSETREF(st->RaceError, Py_NewRef(re));
    if (gsl)
        Py_XSETREF(st->getsourcelines, Py_NewRef(gsl));
    if (gl)
        Py_XSETREF(st->getline, Py_NewRef(gl));
    if (red)
        Py_XSETREF(st->reduce_hook, Py_NewRef(red));
    if (bn)
        Py_XSETREF(st->by_name_hook, Py_NewRef(bn));
    if (sc)
        Py_XSETREF(st->struct_call, Py_NewRef(sc));
    if (ad)
        Py_XSETREF(st->autodiff, Py_NewRef(ad));
    if (cx)
        Py_XSETREF(st->cai_export, Py_NewRef(cx));
    if (ci)
        Py_XSETREF(st->cai_import, Py_NewRef(ci));
    Py_RETURN_NONE;
}

/* _core._set_tape(hook or None): while a tack.Tape records, every launch calls hook(kernel, args,
 * kwargs) after it ran (kernel.c); None stops it.  One pointer test a launch otherwise. */
static PyObject *py_set_tape(PyObject *m, PyObject *hook) {
    tpy_state *st = tpy_get_state(m);
    if (hook != Py_None && !PyCallable_Check(hook)) {
        PyErr_SetString(PyExc_TypeError, "_set_tape: a callable or None");
        return NULL;
    }
    if (hook == Py_None)
        Py_CLEAR(st->tape);
    else
        Py_XSETREF(st->tape, Py_NewRef(hook));
    Py_RETURN_NONE;
}

/* Flush-to-zero on this thread around a flush_denormals kernel run as Python
 * (tack._debug): the mode to give back, and the giving back. */
static PyObject *py_flush_enter(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    unsigned long long saved = 0;
    if (tack_flush_denormals_enter(&saved) != TACK_OK)
        return tpy_raise();
    return PyLong_FromUnsignedLongLong(saved);
}

static PyObject *py_flush_leave(PyObject *m, PyObject *arg) {
    (void)m;
    unsigned long long saved = PyLong_AsUnsignedLongLong(arg);
    if (saved == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    tack_flush_denormals_leave(saved);
    Py_RETURN_NONE;
}

/* ---------------------------------------------------- configuration */
/* The settings table (tack.h, tack_config_*), as text: python/tack/config.py
 * gives it types. */
static PyObject *py_config_table(PyObject *m, PyObject *unused) {
    (void)m;
    int n = tack_config_count();
    PyObject *list = PyList_New(n), *result = NULL;
    if (!list)
        return NULL;
    for (int i = 0; i < n; i++) {
        tack_config_info in;
        if (tack_config_describe(i, &in) != TACK_OK) {
            tpy_raise();
            goto done;
        }
        PyObject *row = Py_BuildValue("(sssszss)", in.name, in.env, in.type, in.default_value, in.choices, in.doc,
                                      in.effect);
        if (!row)
            goto done;
        PyList_SET_ITEM(list, i, row);
    }
    result = Py_NewRef(list);
done:
    Py_DECREF(list);
    return result;
}

static const char *const SOURCE_NAMES[] = {"default", "env", "set"};

static PyObject *py_config_get(PyObject *m, PyObject *arg) {
    (void)m;
    const char *name = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    if (!name) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "a setting's name is a str, not %.60s", Py_TYPE(arg)->tp_name);
        return NULL;
    }
    char buf[4096];
    tack_config_source src = TACK_CONFIG_DEFAULT;
    if (tack_config_get(name, buf, sizeof buf, &src) != TACK_OK)
        return tpy_raise();
    return Py_BuildValue("(ss)", buf, SOURCE_NAMES[src]);
}

/* _config_set(name, text or None) */
static PyObject *py_config_set(PyObject *m, PyObject *args) {
    (void)m;
    const char *name, *value;
    if (!PyArg_ParseTuple(args, "sz:_config_set", &name, &value))
        return NULL;
    if (tack_config_set(name, value) != TACK_OK)
        return tpy_raise();
    Py_RETURN_NONE;
}

static PyObject *py_config_check(PyObject *m, PyObject *unused) {
    (void)m;
    if (tack_config_check_environment() != TACK_OK)
        return tpy_raise();
    Py_RETURN_NONE;
}

/* ---------------------------------------------------- diagnostics (tack.info, python -m tack) */
static PyObject *py_backend_status(PyObject *m, PyObject *unused) {
    PyObject *out = PyList_New(0);
    for (int i = 0; out && tack_backend_name(i); i++) {
        char why[512];
        int n;
        Py_BEGIN_ALLOW_THREADS
        n = tack_backend_status(tack_backend_name(i), why, sizeof why);
        Py_END_ALLOW_THREADS
        if (n < 0) {
            Py_DECREF(out);
            return tpy_raise();
        }
        PyObject *t = Py_BuildValue("(sis)", tack_backend_name(i), n, why);
        if (!t || PyList_Append(out, t) < 0) Py_CLEAR(out);
        Py_XDECREF(t);
    }
    return out;
}

/* (description, dialect, threads or compute units) of a device, by name */
static PyObject *py_device_info(PyObject *m, PyObject *arg) {
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name) return NULL;
    tack_device *d = NULL;
    if (tack_device_get(name, &d) != TACK_OK) return tpy_raise();
    return Py_BuildValue("(ssiKN)", tack_device_description(d), tack_device_dialect(d), tack_device_threads(d),
                         (unsigned long long)tack_device_memory(d), PyBool_FromLong(tack_device_on_host_cores(d)));
}

/* (found, library path or why not, version) of "nvrtc", "hiprtc" or "ocloc" */
static PyObject *py_toolchain(PyObject *m, PyObject *arg) {
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name) return NULL;
    char where[1024];
    int version = 0, r;
    Py_BEGIN_ALLOW_THREADS
    r = tack_toolchain(name, where, sizeof where, &version);
    Py_END_ALLOW_THREADS
    if (r < 0) return tpy_raise();
    return Py_BuildValue("(Nsi)", PyBool_FromLong(r), where, version);
}

static PyObject *py_cpu_compiler(PyObject *m, PyObject *unused) {
    char command[4608], version[256];
    const char *from = NULL;
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = tack_cpu_compiler(command, sizeof command, version, sizeof version, &from);
    Py_END_ALLOW_THREADS
    if (r < 0) return tpy_raise();
    if (r == 0) Py_RETURN_NONE;
    return Py_BuildValue("(sss)", command, version, from);
}

static PyObject *py_cache_path(PyObject *m, PyObject *unused) {
    char buf[8192];
    if (tack_cache_path(buf, sizeof buf) != TACK_OK) return tpy_raise();
    return PyUnicode_DecodeFSDefault(buf);
}

static const char *const CACHE_KINDS[] = {"foreign", "entry", "source", "temporary"};

static PyObject *py_cache_classify(PyObject *m, PyObject *arg) {
    PyObject *b = NULL;
    if (!PyUnicode_FSConverter(arg, &b)) return NULL;
    tack_cache_kind kind = TACK_CACHE_FOREIGN;
    tack_status st;
    Py_BEGIN_ALLOW_THREADS
    st = tack_cache_classify(PyBytes_AS_STRING(b), &kind);
    Py_END_ALLOW_THREADS
    Py_DECREF(b);
    if (st != TACK_OK) return tpy_raise();
    return PyUnicode_FromString(CACHE_KINDS[kind]);
}

static PyObject *py_cache_remove(PyObject *m, PyObject *arg) {
    PyObject *b = NULL;
    if (!PyUnicode_FSConverter(arg, &b)) return NULL;
    tack_status st;
    Py_BEGIN_ALLOW_THREADS
    st = tack_cache_remove(PyBytes_AS_STRING(b));
    Py_END_ALLOW_THREADS
    Py_DECREF(b);
    if (st != TACK_OK) return tpy_raise();
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"_backend_status", py_backend_status, METH_NOARGS,
     "_backend_status() -> [(family, devices here, why none)] for every device family Tack knows"},
    {"_device_info", py_device_info, METH_O,
     "_device_info(name) -> (description, dialect, threads (CPU) or compute units (a GPU), memory in bytes or 0, "
     "whether its work runs on the host CPU's cores)"},
    {"_toolchain", py_toolchain, METH_O,
     "_toolchain('nvrtc'|'hiprtc'|'ocloc') -> (found, the library's path or why not, version)"},
    {"_cpu_compiler", py_cpu_compiler, METH_NOARGS,
     "_cpu_compiler() -> (command, first line of --version, 'TACK_CC'/'CC'/'PATH'/'TACK_ZIG'), or None"},
    {"_cache_path", py_cache_path, METH_NOARGS, "_cache_path() -> the kernel cache directory (not created)"},
    {"_cache_classify", py_cache_classify, METH_O,
     "_cache_classify(name) -> 'entry', 'source', 'temporary' or 'foreign' (a file in the kernel cache)"},
    {"_cache_remove", py_cache_remove, METH_O, "_cache_remove(name): remove one of Tack's files from the kernel cache"},
    {"devices", py_devices, METH_NOARGS, "devices() -> list of available device names"},
    {"set_default_device", py_set_default_device, METH_O, "set_default_device(name)"},
    {"get_default_device", py_get_default_device, METH_NOARGS, "get_default_device() -> str"},
    {"synchronize", (PyCFunction)(void (*)(void))py_synchronize, METH_FASTCALL,
     "synchronize(device=None): wait for queued work on one device or all"},
    {"device_threads", py_device_threads, METH_O, "device_threads(name) -> worker threads"},
    {"_launch_alone", py_launch_alone, METH_O, "_launch_alone(on) -> previous: this thread's CPU launches on it alone"},
    {"level_zero_handles", py_level_zero_handles, METH_O,
     "level_zero_handles(name) -> (driver, context, device) handles of a Level Zero device, as ints"},
    {"level_zero_adopt", py_level_zero_adopt, METH_VARARGS,
     "level_zero_adopt(driver, context, device): make Tack use another library's Level Zero context "
     "(before Tack allocates on that driver's devices)"},
    {"_flush_enter", py_flush_enter, METH_NOARGS,
     "_flush_enter() -> the mode to restore: flush-to-zero on this thread, as a flush_denormals kernel runs"},
    {"_flush_leave", py_flush_leave, METH_O, "_flush_leave(mode): put back the mode _flush_enter returned"},
    {"_dtype", tpy_dtype_lookup, METH_O, "_dtype(x) -> the DType for x (tack.dtype)"},
    {"_intrinsics", py_intrinsics, METH_NOARGS,
     "_intrinsics() -> the compiler's intrinsics besides the dtype names, as (name, kind, min_args, max_args)"},
    {"_targets", py_targets, METH_NOARGS,
     "_targets() -> the compile targets a kernel's generated_source(target=...) takes, 'c' (the CPU's) first"},
    {"_config_table", py_config_table, METH_NOARGS,
     "_config_table() -> [(name, env, type, default, choices or None, doc, effect)] of every setting"},
    {"_config_get", py_config_get, METH_O, "_config_get(name) -> (value as text, 'default'/'env'/'set')"},
    {"_config_set", py_config_set, METH_VARARGS,
     "_config_set(name, text): set a setting (None: back to the environment's value or the default)"},
    {"_config_check", py_config_check, METH_NOARGS,
     "_config_check(): ValueError naming a TACK_* variable whose value could not be read"},
    {"_set_hooks", (PyCFunction)(void (*)(void))py_set_hooks, METH_VARARGS | METH_KEYWORDS,
     "_set_hooks(repr=, compile_error=, getsourcelines=, getline=, race_warning=, reduce=, race_error=, struct_call=, "
     "autodiff=, cai_export=, cai_import=): what the package hands the extension at import (the extension imports none of tack's modules itself)"},
    {"_ndarray_path", tpy_ndarray_path, METH_VARARGS,
     "_ndarray_path([state]) -> (1: NumPy arrays read directly, 0: through the buffer protocol, -1: not yet "
     "checked; the Tack dtypes of the NumPy dtypes known); a state (0 or -1) sets it"},
    {"_ndarray_spares", tpy_ndarray_spares, METH_VARARGS,
     "_ndarray_spares([most]) -> (most, held): how many emptied array handles kept for NumPy array arguments "
     "(tack_array_recycle) it may hold and holds; `most` (0 to its limit) sets it, 0 wraps and frees each "
     "time"},
    {"_set_tape", py_set_tape, METH_O,
     "_set_tape(hook or None): the recording tack.Tape's hook, called (kernel, args, kwargs) after every launch"},
    {NULL, NULL, 0, NULL},
};

/* ------------------------------------------------------- lifecycle */
static int module_exec(PyObject *m) {
    tpy_state *st = tpy_get_state(m);
    if (tack_check_version(TACK_ABI_VERSION) != TACK_OK) {
        PyErr_SetString(PyExc_ImportError, tack_last_error());
        return -1;
    }
    st->nd_fast = -1; /* checked at the first NumPy array a kernel borrows (array_ndarray.c) */
    st->nd_maxspare = TPY_NDARRAY_SPARES;
    st->default_device = PyUnicode_FromString("cpu");
    if (!st->default_device)
        return -1;
    if (PyModule_AddStringConstant(m, "__version__", tack_version_string()) < 0 ||
        PyModule_AddIntConstant(m, "ABI_VERSION", tack_abi_version()) < 0 ||
        PyModule_AddIntConstant(m, "MAX_NDIM", TACK_MAX_NDIM) < 0)
        return -1;
    if (tpy_dtype_exec(m, st) < 0 || tpy_array_exec(m, st) < 0 || tpy_kernel_exec(m, st) < 0 ||
        tpy_dlpack_exec(m, st) < 0 || tpy_cuda_exec(m, st) < 0 || tpy_hip_exec(m) < 0 ||
        tpy_interrupt_exec(m, st) < 0 || tpy_profile_exec(m) < 0 ||
        tpy_stream_exec(m) < 0)
        return -1;
    return 0;
}

static int module_traverse(PyObject *m, visitproc visit, void *arg) {
    tpy_state *st = tpy_get_state(m);
    Py_VISIT(st->ArrayType);
    Py_VISIT(st->DTypeType);
    for (int i = 0; i < TACK_DTYPE_COUNT; i++)
        Py_VISIT(st->dtypes[i]);
    Py_VISIT(st->CompileError);
    Py_VISIT(st->RaceWarning);
    Py_VISIT(st->RaceError);
    Py_VISIT(st->default_device);
    Py_VISIT(st->repr_hook);
    Py_VISIT(st->reduce_hook);
    Py_VISIT(st->by_name_hook);
    Py_VISIT(st->cai_export);
    Py_VISIT(st->cai_import);
    Py_VISIT(st->getsourcelines);
    Py_VISIT(st->getline);
    Py_VISIT(st->struct_call);
    Py_VISIT(st->autodiff);
    Py_VISIT(st->tape);
    Py_VISIT(st->numpy);
    Py_VISIT(st->ndarray);
    int r;
    if ((r = tpy_ids_traverse(&st->scalar_types, visit, arg)) || (r = tpy_ids_traverse(&st->nd_descrs, visit, arg)))
        return r;
    Py_VISIT(st->dlpack_strs);
    Py_VISIT(st->getsignal);
    Py_VISIT(st->default_int_handler);
    Py_VISIT(st->sigint);
    if ((r = tpy_ids_traverse(&st->dtype_objects, visit, arg)))
        return r;
    return tpy_kernel_traverse(st, visit, arg);
}

static int module_clear(PyObject *m) {
    tpy_state *st = tpy_get_state(m);
    Py_CLEAR(st->ArrayType);
    Py_CLEAR(st->DTypeType);
    for (int i = 0; i < TACK_DTYPE_COUNT; i++)
        Py_CLEAR(st->dtypes[i]);
    Py_CLEAR(st->CompileError);
    Py_CLEAR(st->RaceWarning);
    Py_CLEAR(st->RaceError);
    Py_CLEAR(st->default_device);
    Py_CLEAR(st->repr_hook);
    Py_CLEAR(st->reduce_hook);
    Py_CLEAR(st->by_name_hook);
    Py_CLEAR(st->cai_export);
    Py_CLEAR(st->cai_import);
    Py_CLEAR(st->getsourcelines);
    Py_CLEAR(st->getline);
    Py_CLEAR(st->struct_call);
    Py_CLEAR(st->autodiff);
    Py_CLEAR(st->tape);
    Py_CLEAR(st->numpy);
    Py_CLEAR(st->ndarray);
    tpy_ids_clear(&st->scalar_types);
    tpy_ids_clear(&st->nd_descrs);
    tpy_ndarray_spares_clear(st);
    Py_CLEAR(st->dlpack_strs);
    Py_CLEAR(st->getsignal);
    Py_CLEAR(st->default_int_handler);
    Py_CLEAR(st->sigint);
    tpy_ids_clear(&st->dtype_objects);
    tpy_kernel_clear(st);
    return 0;
}

static void module_free(void *m) { module_clear((PyObject *)m); }

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
    {0, NULL},
};

static struct PyModuleDef tpy_module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tack._core",
    .m_doc = "Tack's C core: arrays, devices and kernels (use the tack package).",
    .m_size = sizeof(tpy_state),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__core(void) { return PyModuleDef_Init(&tpy_module_def); }
