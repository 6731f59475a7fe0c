/*
 * stream.c -- tack.Stream, tack.stream(), tack.Event and tack.capture's way into libtack.
 *
 * The streams and events are libtack's (src/runtime/stream.c: reference
 * counted streams, a current stream per thread, arrays ordered between the
 * streams they are used on); the Python classes are in
 * python/tack/_streams.py.  This file hands them over as capsules, whose
 * destructors release the stream or free the event, and answers the one
 * question a kernel call asks: which tack_stream a `stream=` argument names
 * (tpy_stream_of).  The waits (a stream's or an event's synchronization, an
 * elapsed time) release the GIL.  Graphs (src/runtime/graph.c; tack.capture
 * and tack.Graph in python/tack/_graphs.py) are capsules too, and a graph's
 * replay releases the GIL as a launch does.
 */
#include "tack_py.h"

#define STREAM "tack._core.stream"
#define EVENT "tack._core.event"
#define GRAPH "tack._core.graph"

static void stream_free(PyObject *cap) {
    tack_stream *s = PyCapsule_GetPointer(cap, STREAM);
    if (s)
        tack_stream_release(s);
    else
        PyErr_Clear();
}

static void event_free(PyObject *cap) {
    tack_event *e = PyCapsule_GetPointer(cap, EVENT);
    if (e)
        tack_event_free(e);
    else
        PyErr_Clear();
}

tack_stream *tpy_stream_of(PyObject *obj) {
    tack_stream *s = NULL;
    PyObject *cap = PyCapsule_CheckExact(obj) ? Py_NewRef(obj) : PyObject_GetAttrString(obj, "_cap");
    if (!cap || !PyCapsule_IsValid(cap, STREAM)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "stream= takes a tack.Stream (or None), not %.100s", Py_TYPE(obj)->tp_name);
        goto done;
    }
    s = PyCapsule_GetPointer(cap, STREAM);
done:
    Py_XDECREF(cap);
    return s;
}

static tack_event *event_of(PyObject *cap) { return PyCapsule_GetPointer(cap, EVENT); }

/* _stream_new(device, handle or None) */
static PyObject *py_stream_new(PyObject *m, PyObject *args) {
    PyObject *dev_obj, *handle, *result = NULL;
    tack_stream *s = NULL;
    tack_status st;
    if (!PyArg_ParseTuple(args, "OO:_stream_new", &dev_obj, &handle))
        goto done;
    tack_device *dev = tpy_device_from_object(tpy_get_state(m), dev_obj);
    if (!dev)
        goto done;
    if (handle == Py_None) {
        st = tack_stream_create(dev, &s);
    } else {
        unsigned long long h = PyLong_AsUnsignedLongLong(handle);
        if (h == (unsigned long long)-1 && PyErr_Occurred())
            goto done;
        st = tack_stream_wrap(dev, (uintptr_t)h, &s);
    }
    if (st != TACK_OK) {
        tpy_raise();
        goto done;
    }
    result = PyCapsule_New(s, STREAM, stream_free);
    if (result)
        s = NULL;
done:
    if (s)
        tack_stream_release(s);
    return result;
}

static PyObject *py_stream_info(PyObject *m, PyObject *cap) {
    (void)m;
    tack_stream *s = PyCapsule_GetPointer(cap, STREAM);
    if (!s)
        return NULL;
    return Py_BuildValue("(sK)", tack_device_name(tack_stream_device(s)), (unsigned long long)tack_stream_handle(s));
}

static PyObject *py_stream_sync(PyObject *m, PyObject *cap) {
    (void)m;
    tack_stream *s = PyCapsule_GetPointer(cap, STREAM);
    tack_status st;
    if (!s)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    st = tack_stream_synchronize(s);
    Py_END_ALLOW_THREADS
    if (st != TACK_OK)
        return tpy_raise();
    Py_RETURN_NONE;
}

/* _stream_use(stream or None): the thread's current stream; the caller keeps it alive. */
static PyObject *py_stream_use(PyObject *m, PyObject *obj) {
    (void)m;
    tack_stream *s = NULL;
    if (obj != Py_None && !(s = tpy_stream_of(obj)))
        return NULL;
    tack_stream_use(s);
    Py_RETURN_NONE;
}

static PyObject *py_event_new(PyObject *m, PyObject *args) {
    PyObject *dev_obj, *result = NULL;
    int timing;
    tack_event *e = NULL;
    if (!PyArg_ParseTuple(args, "Op:_event_new", &dev_obj, &timing))
        goto done;
    tack_device *dev = tpy_device_from_object(tpy_get_state(m), dev_obj);
    if (!dev)
        goto done;
    if (tack_event_create(dev, timing, &e) != TACK_OK) {
        tpy_raise();
        goto done;
    }
    result = PyCapsule_New(e, EVENT, event_free);
    if (result)
        e = NULL;
done:
    if (e)
        tack_event_free(e);
    return result;
}

/* _event_op(event, op, stream or None): "record", "wait", "sync" */
static PyObject *py_event_op(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *cap, *sobj;
    const char *op;
    tack_stream *s = NULL;
    tack_status st;
    if (!PyArg_ParseTuple(args, "OsO:_event_op", &cap, &op, &sobj))
        return NULL;
    tack_event *e = event_of(cap);
    if (!e || (sobj != Py_None && !(s = tpy_stream_of(sobj))))
        return NULL;
    if (op[0] == 'r')
        st = tack_event_record(e, s);
    else if (op[0] == 'w')
        st = tack_event_wait(e, s);
    else {
        Py_BEGIN_ALLOW_THREADS
        st = tack_event_synchronize(e);
        Py_END_ALLOW_THREADS
    }
    if (st != TACK_OK)
        return tpy_raise();
    Py_RETURN_NONE;
}

static PyObject *py_event_query(PyObject *m, PyObject *cap) {
    (void)m;
    tack_event *e = event_of(cap);
    if (!e)
        return NULL;
    int r = tack_event_query(e);
    if (r < 0)
        return tpy_raise();
    return PyBool_FromLong(r);
}

static PyObject *py_event_elapsed(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *a, *b;
    float ms = 0;
    tack_status st;
    if (!PyArg_ParseTuple(args, "OO:_event_elapsed", &a, &b))
        return NULL;
    tack_event *ea = event_of(a), *eb = event_of(b);
    if (!ea || !eb)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    st = tack_event_elapsed(ea, eb, &ms);
    Py_END_ALLOW_THREADS
    if (st != TACK_OK)
        return tpy_raise();
    return PyFloat_FromDouble((double)ms);
}

/* ------------------------------------------------------------- graphs */
/* tack.capture and tack.Graph (python/tack/_graphs.py) over runtime/graph.c:
 * a graph is a capsule whose destructor releases it (its arrays, kernels and
 * stream with it). */
static void graph_free(PyObject *cap) {
    tack_graph *g = PyCapsule_GetPointer(cap, GRAPH);
    if (g)
        tack_graph_release(g);
    else
        PyErr_Clear();
}

static PyObject *py_capture_begin(PyObject *m, PyObject *obj) {
    (void)m;
    tack_stream *s = tpy_stream_of(obj);
    if (!s)
        return NULL;
    if (tack_capture_begin(s) != TACK_OK)
        return tpy_raise();
    Py_RETURN_NONE;
}

/* _capture_end(stream) -> graph: the capture ends even when it failed (then it raises) */
static PyObject *py_capture_end(PyObject *m, PyObject *obj) {
    (void)m;
    tack_graph *g = NULL;
    tack_stream *s = tpy_stream_of(obj);
    if (!s)
        return NULL;
    if (tack_capture_end(s, &g) != TACK_OK)
        return tpy_raise();
    PyObject *cap = PyCapsule_New(g, GRAPH, graph_free);
    if (!cap)
        tack_graph_release(g);
    return cap;
}

static PyObject *py_capture_stream(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    return PyBool_FromLong(tack_capture_stream() != NULL);
}

/* _graph_launch(graph, stream or None) */
static PyObject *py_graph_launch(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *cap, *sobj;
    tack_stream *s = NULL;
    tack_status st;
    if (!PyArg_ParseTuple(args, "OO:_graph_launch", &cap, &sobj))
        return NULL;
    tack_graph *g = PyCapsule_GetPointer(cap, GRAPH);
    if (!g || (sobj != Py_None && !(s = tpy_stream_of(sobj))))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    st = tack_graph_launch(g, s);
    Py_END_ALLOW_THREADS
    if (st != TACK_OK)
        return tpy_raise();
    Py_RETURN_NONE;
}

static PyObject *py_graph_info(PyObject *m, PyObject *cap) {
    (void)m;
    tack_graph *g = PyCapsule_GetPointer(cap, GRAPH);
    if (!g)
        return NULL;
    return Py_BuildValue("(sL)", tack_device_name(tack_graph_device(g)), (long long)tack_graph_count(g));
}

static PyMethodDef stream_methods[] = {
    {"_capture_begin", py_capture_begin, METH_O, "_capture_begin(stream): capture the thread's work on it"},
    {"_capture_end", py_capture_end, METH_O, "_capture_end(stream) -> the graph captured on it"},
    {"_capture_active", py_capture_stream, METH_NOARGS, "_capture_active() -> whether this thread captures"},
    {"_graph_launch", py_graph_launch, METH_VARARGS, "_graph_launch(graph, stream or None): replay it"},
    {"_graph_info", py_graph_info, METH_O, "_graph_info(graph) -> (device name, calls captured)"},
    {"_stream_new", py_stream_new, METH_VARARGS,
     "_stream_new(device, handle) -> a stream: a new one (handle None) or the API's handle wrapped"},
    {"_stream_info", py_stream_info, METH_O, "_stream_info(stream) -> (device name, handle)"},
    {"_stream_sync", py_stream_sync, METH_O, "_stream_sync(stream): wait for its work"},
    {"_stream_use", py_stream_use, METH_O, "_stream_use(stream or None): the calling thread's current stream"},
    {"_event_new", py_event_new, METH_VARARGS, "_event_new(device, timing) -> an event"},
    {"_event_op", py_event_op, METH_VARARGS,
     "_event_op(event, 'record'|'wait'|'sync', stream or None): record on / make wait / wait on the host"},
    {"_event_query", py_event_query, METH_O, "_event_query(event) -> whether its point was reached"},
    {"_event_elapsed", py_event_elapsed, METH_VARARGS, "_event_elapsed(start, end) -> milliseconds"},
    {NULL, NULL, 0, NULL},
};

int tpy_stream_exec(PyObject *m) { return PyModule_AddFunctions(m, stream_methods); }
