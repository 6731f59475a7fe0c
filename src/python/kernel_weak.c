/* Temporary weak defaults until kernel.c lands (removed then). */
#include "tack_py.h"
__attribute__((weak)) int tack_py_kernel_exec(PyObject *m, tack_state *st) { return 0; }
__attribute__((weak)) int tack_py_kernel_traverse(tack_state *st, visitproc visit, void *arg) { return 0; }
__attribute__((weak)) void tack_py_kernel_clear(tack_state *st) {}
