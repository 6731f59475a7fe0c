/*
 * array_grad.c -- an Array's gradient: the `grad` and `requires_grad` attributes.
 *
 * Reverse-mode differentiation (python/tack/_autodiff*.py, docs/differentiation.md)
 * accumulates a kernel's adjoint into a second array of the same shape, dtype and
 * device that the Array object holds, as PyTorch's tensors hold theirs.  The
 * gradient is a Python object (a tack.Array), not a libtack concept: libtack's
 * tack_array knows nothing of differentiation, so the reference lives on the
 * heap type (TackArrayObject.grad, visited and cleared by array.c's GC slots)
 * and these four accessors are its whole interface.  Setting `grad` checks the
 * match and refuses anything else by name; `requires_grad = True` allocates a
 * zeroed gradient once (kept if there is one), False drops it.
 */
#include "tack_py.h"

#define ARR(o) (((TackArrayObject *)(o))->arr)

/* The gradient of an array that requires one (tack._autodiff, docs/differentiation.md): an array
 * of the same shape, dtype and device, or None. */
PyObject *tpy_array_get_grad(PyObject *self, void *c) {
    PyObject *g = ((TackArrayObject *)self)->grad;
    return Py_NewRef(g ? g : Py_None);
}

int tpy_array_set_grad(PyObject *self, PyObject *value, void *c) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    if (value == NULL || value == Py_None) {
        Py_CLEAR(((TackArrayObject *)self)->grad);
        return 0;
    }
    if (Py_TYPE(value) != st->ArrayType || value == self) {
        PyErr_SetString(PyExc_TypeError, "an array's grad is another tack.Array (or None)");
        return -1;
    }
    const tack_array *a = ARR(self), *g = ARR(value);
    int same = tack_array_dtype(a) == tack_array_dtype(g) && tack_array_ndim(a) == tack_array_ndim(g) &&
               tack_array_device(a) == tack_array_device(g);
    for (int i = 0; same && i < tack_array_ndim(a); i++)
        same = tack_array_shape(a)[i] == tack_array_shape(g)[i];
    if (!same) {
        PyErr_SetString(PyExc_ValueError, "an array's grad has the array's shape, dtype and device");
        return -1;
    }
    Py_XSETREF(((TackArrayObject *)self)->grad, Py_NewRef(value));
    return 0;
}

PyObject *tpy_array_get_requires_grad(PyObject *self, void *c) {
    return PyBool_FromLong(((TackArrayObject *)self)->grad != NULL);
}

/* requires_grad = True gives the array a zeroed grad (kept if it has one); False drops it. */
int tpy_array_set_requires_grad(PyObject *self, PyObject *value, void *c) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    int on = value ? PyObject_IsTrue(value) : 0;
    tack_array *g = NULL;
    const tack_array *a = ARR(self);
    tack_status s;
    if (on < 0)
        return -1;
    if (!on) {
        Py_CLEAR(((TackArrayObject *)self)->grad);
        return 0;
    }
    if (((TackArrayObject *)self)->grad)
        return 0;
    Py_BEGIN_ALLOW_THREADS
    s = tack_array_zeros(tack_array_device(a), tack_array_dtype(a), tack_array_ndim(a), tack_array_shape(a), &g);
    Py_END_ALLOW_THREADS
    if (s != TACK_OK)
        return tpy_raise_int();
    PyObject *obj = tpy_array_new(st, g);
    if (!obj)
        return -1;
    Py_XSETREF(((TackArrayObject *)self)->grad, obj);
    return 0;
}
