/*
 * kernel.h -- what kernel.c and kernel_call.c share: the Kernel object, its
 * compiled specializations and the state of one call.
 *
 * kernel.c is the Python type (construction, attributes, the vectorcall
 * entry and the compile/generated_source/ir methods); kernel_call.c is what
 * a call does before launching: bind the arguments, compute the signature,
 * find or make the specialization.  Everything here is the kernel's own;
 * the rest of the extension sees only tack_py.h.
 */
#ifndef TACK_KERNEL_PY_H
#define TACK_KERNEL_PY_H

#include "tack_py.h"

#include <pythread.h>

/* One compiled specialization: a program built for a device and signature. */
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
    tpy_state *st;
    PyObject *fn;       /* the Python function */
    PyObject *params;   /* tuple of parameter names (str) */
    PyObject *defaults; /* tuple or NULL */
    Py_ssize_t nparams, nposonly;
    int checks, fast_math, flush_denormals, is_func;
    tack_dtype default_float; /* TACK_F32 or TACK_F64: the type of a float that meets no float type */
    tack_module *module; /* built on the first compile, reused */
    int kernel_index;
    PyThread_type_lock lock;
    unsigned long lock_owner; /* thread holding `lock` (0: none), set and read with the GIL */
    long lock_pid;            /* the process it was taken in: a fork's child finds another */
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

/* A call's arguments on the stack or, past KSTACK, in one heap block. */
int kcall_init(kcall *c, Py_ssize_t n);
void kcall_fini(kcall *c);

/* The kernel's __qualname__ (new ref; "kernel" if it has none). */
PyObject *kernel_qualname(KernelObject *k);

/* Bind args/kwnames to the parameters into c->objs (borrowed references),
 * with the TypeErrors Python gives for a wrong call. */
int kcall_bind(KernelObject *k, kcall *c, PyObject *const *args, Py_ssize_t nargs,
               PyObject *kwnames);
/* Compute the signature (types, values, device) of a bound call. */
int kcall_signature(KernelObject *k, kcall *c);
/* Mark the array arguments distinct when no two share memory (tack_argtype.distinct). */
void kcall_mark_distinct(kcall *c);
/* Set that bit on every array argument to d (Kernel.compile builds both). */
void kcall_set_distinct(kcall *c, int d);
/* Bind and compute the signature for a method (compile, generated_source,
 * ir), taking the keyword `target` out first when allowed (*target borrowed
 * or NULL). */
int kcall_bind_method(KernelObject *k, kcall *c, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kwnames, PyObject **target, int allow_target);

/* The specialization for the call's signature, compiled and built on a
 * miss; NULL with an exception. */
kspec *kernel_specialize(KernelObject *k, kcall *c);
/* The program whose text generated_source/ir show for the call and dialect
 * `target` (NULL: the arguments' device's): the cached specialization's
 * (borrowed) when there is one, else compiled through the same path without
 * building (*owned, which the caller frees).  NULL with an exception. */
tack_program *kernel_program_for(KernelObject *k, kcall *c, const char *target,
                                 tack_program **owned);
void kernel_spec_free(kspec *s);

#endif /* TACK_KERNEL_PY_H */
