/*
 * cuda.c -- tack._core's view of the CUDA toolchain: NVRTC from Python.
 *
 * Two private helpers, for tests and tools that check generated CUDA code on
 * machines without a GPU:
 *
 *   _core._nvrtc_version() -> int      NVRTC's version as major*1000+minor*10,
 *                                       0 when libnvrtc cannot be loaded
 *   _core._nvrtc_compile(source, arch="sm_80", name="kernel.cu", fast_math=False, ftz=False) -> str
 *                                       the PTX; RuntimeError with NVRTC's log
 *                                       (or saying that NVRTC is missing)
 *
 * They go through libtack's own NVRTC path (src/backends/cuda/nvrtc.c, the one the
 * CUDA backend builds kernels with), so what they accept is what a launch on
 * a GPU would accept.  The compile runs without the GIL.
 *
 * tack_nvrtc_compile and tack_nvrtc_version are declared in tack_private.h
 * (src/private: exported by libtack, not installed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tack_private.h"
#include "tack_py.h"


static PyObject *nvrtc_version(PyObject *self, PyObject *unused) {
    return PyLong_FromLong(tack_nvrtc_version());
}

/* "sm_80", "compute_90", "80", 80, 9.0 is not accepted (ambiguous). */
static int parse_arch(PyObject *arch, int *major, int *minor) {
    long v = -1;
    if (PyLong_Check(arch)) {
        v = PyLong_AsLong(arch);
        if (v == -1 && PyErr_Occurred())
            return -1;
    } else if (PyUnicode_Check(arch)) {
        const char *s = PyUnicode_AsUTF8(arch);
        if (!s)
            return -1;
        if (!strncmp(s, "sm_", 3))
            s += 3;
        else if (!strncmp(s, "compute_", 8))
            s += 8;
        char *end = NULL;
        v = strtol(s, &end, 10);
        if (end == s || *end != '\0')
            v = -1;
    }
    if (v < 10 || v > 1299) {
        PyErr_Format(PyExc_ValueError, "arch must be like 'sm_80' or 80, not %R", arch);
        return -1;
    }
    *major = (int)(v / 10);
    *minor = (int)(v % 10);
    return 0;
}

static PyObject *nvrtc_compile(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"source", "arch", "name", "fast_math", "ftz", NULL};
    const char *source = NULL, *name = "kernel.cu";
    PyObject *arch = NULL;
    int major = 8, minor = 0, fast_math = 0, ftz = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|Ospp:_nvrtc_compile", kw, &source, &arch, &name, &fast_math,
                                     &ftz))
        return NULL;
    if (arch && parse_arch(arch, &major, &minor) < 0)
        return NULL;
    char *ptx = NULL;
    tack_status st;
    Py_BEGIN_ALLOW_THREADS
    st = tack_nvrtc_compile(source, name, major, minor,
                            (fast_math ? TACK_NVRTC_FAST_MATH : 0) | (ftz ? TACK_NVRTC_FTZ : 0), &ptx);
    Py_END_ALLOW_THREADS
    if (st != TACK_OK)
        return tpy_raise();
    PyObject *out = PyUnicode_FromString(ptx);
    tack_free(ptx);
    return out;
}

static PyMethodDef cuda_methods[] = {
    {"_nvrtc_version", nvrtc_version, METH_NOARGS,
     "_nvrtc_version() -> int: NVRTC's version (major*1000 + minor*10), 0 when it is not found."},
    {"_nvrtc_compile", (PyCFunction)(void (*)(void))nvrtc_compile, METH_VARARGS | METH_KEYWORDS,
     "_nvrtc_compile(source, arch='sm_80', name='kernel.cu', fast_math=False, ftz=False) -> str: CUDA C++ to PTX through libtack's NVRTC "
     "path; RuntimeError with NVRTC's log on failure."},
    {NULL, NULL, 0, NULL},
};

int tpy_cuda_exec(PyObject *m, tpy_state *st) {
    (void)st;
    return PyModule_AddFunctions(m, cuda_methods);
}
