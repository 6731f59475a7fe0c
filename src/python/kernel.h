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

/* A value from outside the kernel that its module froze, and where it was
 * found (TPY_CAP_*: a key of a dict, a closure cell, an attribute). */
typedef struct {
    int kind;
    PyObject *where, *key, *value; /* strong references */
} kcapture;

/* One build of the kernel's module (the front end's output) for one set of
 * captured values: the kernel is compiled per (values, signature), and the
 * builds for values that were replaced are kept in case they come back. */
typedef struct {
    tack_module *module;
    int kernel_index;
    Py_ssize_t ncaps;
    kcapture *caps;
} kvariant;

/* One compiled specialization: a program built for a device and signature. */
typedef struct {
    Py_hash_t hash;
    Py_ssize_t variant;    /* the module build (KernelObject.variants) it came from */
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
    PyObject *by_name;  /* the copy of fn pickle finds by name (tack._pickle.by_name), made on first use, or NULL */
    Py_ssize_t nparams, nposonly;
    int checks, fast_math, flush_denormals, is_func;
    int by_value;             /* a parameter takes a vector, matrix or quaternion by value (its annotation):
                                 every call binds through the package's hook (tack._structs), never here */
    int check_races;          /* instrument undecided parallel loops with the race detector (CPU) */
    int optimize;             /* run the optimizing passes (tack.config's optimize when not given) */
    tack_dtype default_float; /* TACK_F32 or TACK_F64: the type of a float that meets no float type */
    kvariant *variants;  /* module builds, one per set of captured values (kernel_captures.c) */
    Py_ssize_t nvariants, cur; /* cur: the build whose values held at the last call */
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
    tpy_state *st;      /* set when one of them is a NumPy array's (kcall_fini: tpy_ndarray_done) */
    int *writable;      /* actual writability of each array argument */
    tack_device *device;
    Py_hash_t hash;
    Py_ssize_t variant; /* the module build the call's captured values select */
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

/* The kernel's compile lock (kernel_call.c): taken without the GIL while
 * waiting; -1 with a RuntimeError when this thread already holds it. */
int kernel_lock(KernelObject *k);
void kernel_unlock(KernelObject *k);

/* kernel_captures.c: set c->variant to the module build for the values the
 * kernel's captured names hold now -- on the hot path a check that each is
 * still the object it froze; else the build whose values equal them, else a
 * new build (the front end runs again; a CompileError when a name now holds
 * something a kernel cannot use).  0, or -1 with an exception. */
int kernel_variant(KernelObject *k, kcall *c);
/* The variants' references, for tp_traverse / tp_clear, and their release. */
int kernel_variants_traverse(KernelObject *k, visitproc visit, void *arg);
void kernel_variants_clear(KernelObject *k);
void kernel_variants_free(KernelObject *k);

#endif /* TACK_KERNEL_PY_H */
