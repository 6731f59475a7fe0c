/*
 * hip.c -- the extension's entry to libtack's hiprtc path (tests and tools):
 *
 *   _core._hiprtc_version() -> int     hiprtc's version as major*1000+minor*10,
 *                                      0 when hiprtc cannot be loaded
 *   _core._hiprtc_compile(source, arch="gfx90a", name="kernel.hip",
 *                         fast_math=False, wave=0, ftz=False) -> bytes
 *                                      HIP C++ to an AMD code object; RuntimeError
 *                                      with hiprtc's log when it fails; wave 64
 *                                      or 32 builds RDNA for that wavefront
 *
 * They go through the same code (src/backends/hip/hiprtc.c) that a HIP backend
 * loads kernels with, so the tests that compile every generated kernel for
 * AMD targets test Tack's own path.  tack_hiprtc_compile and
 * tack_hiprtc_version are declared in tack_private.h (src/private: exported
 * by libtack, not installed).
 */
#include "tack_private.h"
#include "tack_py.h"

static PyObject *hiprtc_version(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLong(tack_hiprtc_version());
}

static PyObject *hiprtc_compile(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"source", "arch", "name", "fast_math", "wave", "ftz", NULL};
    const char *source = NULL, *arch = "gfx90a", *name = "kernel.hip";
    int fast_math = 0, wave = 0, ftz = 0;
    unsigned flags;
    void *code = NULL;
    size_t size = 0;
    tack_status st;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|sspip:_hiprtc_compile", kw, &source, &arch, &name, &fast_math,
                                     &wave, &ftz))
        return NULL;
    if (wave != 0 && wave != 32 && wave != 64) {
        PyErr_Format(PyExc_ValueError, "wave must be 0 (the target's default), 32 or 64, not %d", wave);
        return NULL;
    }
    flags = (fast_math ? TACK_HIPRTC_FAST_MATH : 0) | (wave == 64 ? TACK_HIPRTC_WAVE64 : 0) |
            (wave == 32 ? TACK_HIPRTC_WAVE32 : 0) | (ftz ? TACK_HIPRTC_FTZ : 0);
    Py_BEGIN_ALLOW_THREADS
    st = tack_hiprtc_compile(source, name, arch, flags, &code, &size);
    Py_END_ALLOW_THREADS
    if (st != TACK_OK)
        return tpy_raise();
    PyObject *out = PyBytes_FromStringAndSize(code, (Py_ssize_t)size);
    tack_free(code);
    return out;
}

static PyMethodDef hip_methods[] = {
    {"_hiprtc_version", hiprtc_version, METH_NOARGS,
     "_hiprtc_version() -> int: hiprtc's version (major*1000 + minor*10), 0 when it is not found."},
    {"_hiprtc_compile", (PyCFunction)(void (*)(void))hiprtc_compile, METH_VARARGS | METH_KEYWORDS,
     "_hiprtc_compile(source, arch='gfx90a', name='kernel.hip', fast_math=False, wave=0, ftz=False) -> bytes: HIP C++ to an AMD code "
     "object through libtack's hiprtc path; RuntimeError with hiprtc's log on failure."},
    {NULL, NULL, 0, NULL},
};

int tpy_hip_exec(PyObject *m) { return PyModule_AddFunctions(m, hip_methods); }
