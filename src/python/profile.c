/*
 * profile.c -- tack.profile()'s way into libtack's recorder.
 *
 * The recorder (src/runtime/profile.c) reads the clocks where the work
 * happens, in the C core; this file only starts and stops it and hands its
 * events to the package (python/tack/_profile.py), which makes the table
 * and the Chrome trace.  The front end, which runs here in the extension,
 * records its own step through the public tack_profile_record
 * (kernel_captures.c), and so does debug mode from Python
 * (_profile_record).  A started recorder travels as a capsule whose
 * destructor stops and frees it, so a profile dropped without its __exit__
 * does not keep recording.
 */
#include "tack_py.h"

#define CAPSULE "tack._core.profile"

static void capsule_free(PyObject *cap) {
    tack_profile *p = PyCapsule_GetPointer(cap, CAPSULE);
    if (p)
        tack_profile_free(p);
    else
        PyErr_Clear();
}

static PyObject *py_profile_start(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    tack_profile *p = NULL;
    PyObject *cap = NULL;
    if (tack_profile_start(&p) != TACK_OK)
        return tpy_raise();
    cap = PyCapsule_New(p, CAPSULE, capsule_free);
    if (!cap)
        tack_profile_free(p);
    return cap;
}

/* Stop the recorder: (events, error), each event a tuple (kind, phase, name,
 * device, thread, start_ns, host_ns, device_ns); error the message of a device
 * time that could not be read (those events say -1), else None. */
static PyObject *py_profile_stop(PyObject *m, PyObject *cap) {
    (void)m;
    PyObject *events = NULL, *error = NULL, *result = NULL;
    tack_profile *p = PyCapsule_GetPointer(cap, CAPSULE);
    if (!p)
        goto done;
    tack_status st;
    Py_BEGIN_ALLOW_THREADS /* the device times wait for the devices */
    st = tack_profile_stop(p);
    Py_END_ALLOW_THREADS
    error = st == TACK_OK ? Py_NewRef(Py_None) : PyUnicode_FromString(tack_last_error());
    if (!error)
        goto done;
    int64_t n = tack_profile_count(p);
    events = PyList_New((Py_ssize_t)n);
    if (!events)
        goto done;
    for (int64_t i = 0; i < n; i++) {
        tack_profile_event e;
        tack_profile_get(p, i, &e);
        PyObject *t = Py_BuildValue("(ssssKLLL)", e.kind, e.phase, e.name, e.device, (unsigned long long)e.thread,
                                    (long long)e.start_ns, (long long)e.host_ns, (long long)e.device_ns);
        if (!t)
            goto done;
        PyList_SET_ITEM(events, (Py_ssize_t)i, t);
    }
    result = PyTuple_Pack(2, events, error);
done:
    Py_XDECREF(events);
    Py_XDECREF(error);
    return result;
}

static PyObject *py_profile_record(PyObject *m, PyObject *args) {
    (void)m;
    const char *kind, *phase, *name, *device;
    long long t0, t1, dev = -1;
    if (!PyArg_ParseTuple(args, "ssssLL|L:_profile_record", &kind, &phase, &name, &device, &t0, &t1, &dev))
        return NULL;
    tack_profile_record(kind, phase, name, device, (int64_t)t0, (int64_t)t1, (int64_t)dev);
    Py_RETURN_NONE;
}

static PyObject *py_profile_now(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    return PyLong_FromLongLong((long long)tack_profile_now());
}

static PyObject *py_profile_active(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    return PyBool_FromLong(tack_profile_active());
}

static PyMethodDef profile_methods[] = {
    {"_profile_start", py_profile_start, METH_NOARGS, "_profile_start() -> a recorder, recording (tack.profile)"},
    {"_profile_stop", py_profile_stop, METH_O,
     "_profile_stop(recorder) -> (events, error): stop it; each event (kind, phase, name, device, thread, "
     "start_ns, host_ns, device_ns)"},
    {"_profile_record", py_profile_record, METH_VARARGS,
     "_profile_record(kind, phase, name, device, start_ns, end_ns[, device_ns]): an event into the active "
     "recorder (none: nothing)"},
    {"_profile_now", py_profile_now, METH_NOARGS, "_profile_now() -> the profile's clock, in nanoseconds"},
    {"_profile_active", py_profile_active, METH_NOARGS, "_profile_active() -> whether a recorder records"},
    {NULL, NULL, 0, NULL},
};

int tpy_profile_exec(PyObject *m) { return PyModule_AddFunctions(m, profile_methods); }
