/*
 * kernel.c -- the Kernel type: a Python function compiled per signature.
 *
 * `@tack.kernel` wraps a function in a Kernel object.  Calling it runs
 * kernel_vectorcall(): kernel_call.c binds the arguments, computes their
 * signature and finds (or compiles and builds) the specialization for it;
 * this file then refuses a read-only array passed for a parameter the
 * kernel writes (a ValueError naming the parameter) and launches.
 *
 * Launching releases the GIL always: measured on a one-element launch, a
 * call costs the same with and without the release (about 0.3 us either
 * way, the difference lost in the noise), while keeping it would stall
 * every other Python thread for the length of a large launch.
 *
 * The methods compile(), generated_source() and ir() take a call's
 * arguments without running anything; they go through the same binding and
 * the same specialization path (kernel_specialize, kernel_program_for).
 *
 * A Kernel made with is_func=True is a @tack.func: kernels call it (the
 * front end lowers it into their module); calling it from Python runs the
 * original Python function.
 *
 * The module-level hooks at the end are the Kernel's part of module state:
 * the type itself and the intrinsics registry (_core._set_intrinsics),
 * which tack._intrinsics hands over at import and the front end reads.
 */
#include "kernel.h"
#include "frontend.h" /* fe_fetch_exception, fe_restore_exception */

#include <stdatomic.h>
#include <structmember.h>

/* ---------------------------------------------------------------- call */

/* A call whose arguments did not bind (the error is pending), offered to the
 * package's struct_call hook (tack._structs): a struct array or value among
 * the arguments makes it call the kernel's struct build -- or, for `method`
 * ("compile", "generated_source", "ir"), that method of the build;
 * NotImplemented (no struct among them) leaves the pending error as it was.
 * Off the hot path: only a call that failed to bind comes here. */
static PyObject *struct_call(KernelObject *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                             const char *method) {
    PyObject *hook = k->st->struct_call, *exc = NULL, *pos = NULL, *kw = NULL, *name = NULL, *result = NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (!hook || !PyErr_Occurred())
        return NULL;
    exc = fe_fetch_exception();
    pos = PyTuple_New(nargs);
    kw = PyDict_New();
    name = method ? PyUnicode_FromString(method) : Py_NewRef(Py_None);
    if (!pos || !kw || !name)
        goto done;
    for (Py_ssize_t i = 0; i < nargs; i++)
        PyTuple_SET_ITEM(pos, i, Py_NewRef(args[i]));
    for (Py_ssize_t i = 0; i < nkw; i++)
        if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0)
            goto done;
    Py_INCREF(hook); /* a call may replace the hook */
    result = PyObject_CallFunctionObjArgs(hook, (PyObject *)k, pos, kw, name, NULL);
    Py_DECREF(hook);
    if (result == Py_NotImplemented) {
        Py_CLEAR(result);
        fe_restore_exception(exc);
        exc = NULL;
    }
done:
    Py_XDECREF(exc);
    Py_XDECREF(pos);
    Py_XDECREF(kw);
    Py_XDECREF(name);
    return result;
}

/* kernel(..., stream=s): the stream a call names (stream.c), NULL when none.
 * A thread-local costs a __tls_get_addr call in a shared object, tens of
 * nanoseconds on the launch path: it is read only while some thread is in
 * such a call (explicit_calls, a plain global). */
static _Thread_local tack_stream *explicit_stream;
static atomic_int explicit_calls;

/* The position in kwnames of a `stream` keyword that is not a parameter of the kernel; -1 when none. */
static Py_ssize_t stream_keyword(KernelObject *k, PyObject *kwnames) {
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(kwnames); j++) {
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, j), "stream") != 0)
            continue;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(k->params); i++)
            if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(k->params, i), "stream") == 0)
                return -1; /* the kernel's own parameter */
        return j;
    }
    return -1;
}

static PyObject *kernel_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames);

/* The call without its stream= keyword, run with that stream current (None: the current one). */
static PyObject *call_on_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                                Py_ssize_t j) {
    Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames), n = 0;
    PyObject *value = args[nargs + j], *names = NULL, *result = NULL;
    PyObject **vec = NULL;
    tack_stream *s = NULL, *prev, *prev_explicit;
    if (value != Py_None && !(s = tpy_stream_of(value)))
        goto done;
    vec = PyMem_Malloc(sizeof(PyObject *) * (size_t)(nargs + nkw));
    names = PyTuple_New(nkw - 1);
    if (!vec || !names) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        vec[i] = args[i];
    for (Py_ssize_t i = 0; i < nkw; i++) {
        if (i == j)
            continue;
        vec[nargs + n] = args[nargs + i];
        PyTuple_SET_ITEM(names, n, Py_NewRef(PyTuple_GET_ITEM(kwnames, i)));
        n++;
    }
    prev = tack_stream_use(s ? s : tack_stream_current());
    prev_explicit = explicit_stream;
    explicit_stream = s;
    atomic_fetch_add(&explicit_calls, 1);
    result = kernel_vectorcall(self, vec, (size_t)nargs, nkw > 1 ? names : NULL);
    atomic_fetch_sub(&explicit_calls, 1);
    explicit_stream = prev_explicit;
    tack_stream_use(prev);
done:
    PyMem_Free(vec);
    Py_XDECREF(names);
    return result;
}

/* hook(kernel, args, kwargs) for a vectorcall's arguments: the tape's record of a launch and
 * kernel.adjoint (tack._autodiff). */
static PyObject *call_with_args(PyObject *hook, KernelObject *k, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames) {
    PyObject *pos = NULL, *kw = NULL, *result = NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    pos = PyTuple_New(nargs);
    kw = PyDict_New();
    if (!pos || !kw)
        goto done;
    for (Py_ssize_t i = 0; i < nargs; i++)
        PyTuple_SET_ITEM(pos, i, Py_NewRef(args[i]));
    for (Py_ssize_t i = 0; i < nkw; i++)
        if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0)
            goto done;
    Py_INCREF(hook); /* a call may replace the hook */
    result = PyObject_CallFunctionObjArgs(hook, (PyObject *)k, pos, kw, NULL);
    Py_DECREF(hook);
done:
    Py_XDECREF(pos);
    Py_XDECREF(kw);
    return result;
}

static PyObject *kernel_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames) {
    KernelObject *k = (KernelObject *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *result = NULL;
    kspec *s;
    kcall c;
    tack_status st;
    Py_ssize_t sj;

    if (kwnames && !k->is_func && (sj = stream_keyword(k, kwnames)) >= 0)
        return call_on_stream(self, args, nargs, kwnames, sj); /* kernel(..., stream=s) */

    if (k->is_func)
        return PyObject_Vectorcall(k->fn, args, nargsf, kwnames);
    if (kcall_init(&c, k->nparams) < 0)
        return NULL;
    if (kcall_bind(k, &c, args, nargs, kwnames) < 0 || kcall_signature(k, &c) < 0) {
        result = struct_call(k, args, nargs, kwnames, NULL);
        goto done;
    }
    /* before the compile, which Ctrl-C stops under the same rule (interrupt.c) */
    if (tpy_mark_interruptible(k->st) < 0)
        goto done;
    s = kernel_specialize(k, &c);
    if (!s)
        goto done;
    if (atomic_load_explicit(&explicit_calls, memory_order_relaxed) && explicit_stream &&
        tack_stream_device(explicit_stream) != c.device) {
        PyErr_Format(PyExc_ValueError, "stream= names a stream on %s, but the kernel's arrays are on %s",
                     tack_device_name(tack_stream_device(explicit_stream)), tack_device_name(c.device));
        goto done;
    }
    for (int j = 0; j < s->nwritten; j++) {
        int i = s->written[j];
        if (!c.writable[i]) {
            PyObject *q = kernel_qualname(k);
            PyErr_Format(PyExc_ValueError,
                         "%U() writes to parameter '%U', but the array passed for it (a %.100s) "
                         "is read-only", q, PyTuple_GET_ITEM(k->params, i),
                         Py_TYPE(c.objs[i])->tp_name);
            Py_XDECREF(q);
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    st = tack_launch(s->prog, c.vals, (int)c.n);
    Py_END_ALLOW_THREADS
    if (st == TACK_ERR_RACE && k->st->RaceError) {
        PyErr_SetString(k->st->RaceError, tack_last_error()); /* tack.RaceError (a RuntimeError) */
        goto done;
    }
    if (st != TACK_OK) {
        tpy_raise();
        goto done;
    }
    if (k->st->tape) { /* a tack.Tape records the launch (tack._autodiff) */
        PyObject *r = call_with_args(k->st->tape, k, args, nargs, kwnames);
        if (!r)
            goto done;
        Py_DECREF(r);
    }
    result = Py_NewRef(Py_None);
done:
    kcall_fini(&c);
    return result;
}

/* kernel.adjoint(*args, grads=None): the package's adjoint (tack._autodiff). */
static PyObject *kernel_adjoint_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                       PyObject *kwnames) {
    KernelObject *k = (KernelObject *)self;
    if (!k->st->autodiff) {
        PyErr_SetString(PyExc_RuntimeError, "kernel.adjoint: tack._autodiff is not imported");
        return NULL;
    }
    return call_with_args(k->st->autodiff, k, args, nargs, kwnames);
}

static PyObject *kernel_compile_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                       PyObject *kwnames) {
    KernelObject *k = (KernelObject *)self;
    PyObject *target, *result = NULL;
    kcall c;
    if (k->is_func) {
        PyErr_SetString(PyExc_TypeError, "a @tack.func is compiled inside the kernels that call "
                                         "it; compile those kernels instead");
        return NULL;
    }
    if (kcall_init(&c, k->nparams) < 0)
        return NULL;
    if (kcall_bind_method(k, &c, args, nargs, kwnames, &target, 0) < 0) {
        result = struct_call(k, args, nargs, kwnames, "compile");
        goto done;
    }
    if (tpy_mark_interruptible(k->st) < 0)
        goto done;
    if (!kernel_specialize(k, &c))
        goto done;
    /* Example arrays that share memory (one placeholder passed for every
     * array, or an in-place call) build both: without restrict, as passed,
     * and the build calls with separate arrays will look for. */
    for (Py_ssize_t i = 0; i < c.n; i++) {
        if (c.types[i].is_array && !c.types[i].distinct) {
            kcall_set_distinct(&c, 1);
            if (!kernel_specialize(k, &c))
                goto done;
            break;
        }
    }
    result = Py_NewRef(Py_None);
done:
    kcall_fini(&c);
    return result;
}

/* generated_source / ir: the text of the program kernel_program_for() finds
 * or compiles for these arguments and `target`. */
/* (ir, ranges, aliases): for each parameter, None or the (lo, hi, type name)
 * its Python int argument must fit (tack_program_param_range), and None or
 * the (same, part) masks of the array parameters it must not share memory
 * with (tack_program_param_aliases), which a kernel run as Python checks at
 * each call as tack_launch does.  Steals ir. */
static PyObject *with_ranges(const tack_program *prog, int nparams, PyObject *ir) {
    PyObject *ranges = PyTuple_New(nparams), *aliases = PyTuple_New(nparams), *result = NULL;
    if (!ranges || !aliases)
        goto done;
    for (int i = 0; i < nparams; i++) {
        uint64_t same, part;
        PyObject *r = tack_program_param_aliases(prog, i, &same, &part) && (same | part)
                          ? Py_BuildValue("(KK)", (unsigned long long)same, (unsigned long long)part)
                          : Py_NewRef(Py_None);
        if (!r)
            goto done;
        PyTuple_SET_ITEM(aliases, i, r);
    }
    for (int i = 0; i < nparams; i++) {
        int64_t lo, hi;
        tack_dtype narrow;
        PyObject *r;
        if (tack_program_param_range(prog, i, &lo, &hi, &narrow))
            r = Py_BuildValue("(LLs)", (long long)lo, (long long)hi, tack_dtype_get(narrow)->name);
        else
            r = Py_NewRef(Py_None);
        if (!r)
            goto done;
        PyTuple_SET_ITEM(ranges, i, r);
    }
    result = PyTuple_Pack(3, ir, ranges, aliases);
done:
    Py_XDECREF(ranges);
    Py_XDECREF(aliases);
    Py_DECREF(ir);
    return result;
}

static PyObject *kernel_text(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames, int want_ir) {
    KernelObject *k = (KernelObject *)self;
    PyObject *target = NULL, *result = NULL;
    const char *ctarget = NULL, *txt;
    tack_program *prog, *owned = NULL;
    kcall c;

    if (k->is_func) {
        PyErr_SetString(PyExc_TypeError, "a @tack.func has no code of its own; ask a kernel "
                                         "that calls it");
        return NULL;
    }
    if (kcall_init(&c, k->nparams) < 0)
        return NULL;
    if (kcall_bind_method(k, &c, args, nargs, kwnames, &target, 1) < 0) {
        if (want_ir != 2)
            result = struct_call(k, args, nargs, kwnames, want_ir ? "ir" : "generated_source");
        goto done;
    }
    if (target && target != Py_None) {
        if (!PyUnicode_Check(target)) {
            PyErr_Format(PyExc_TypeError, "target must be a str such as 'c' or 'cuda', not %.100s",
                         Py_TYPE(target)->tp_name);
            goto done;
        }
        ctarget = PyUnicode_AsUTF8(target);
        if (!ctarget)
            goto done;
    }
    prog = kernel_program_for(k, &c, ctarget, &owned);
    if (!prog)
        goto done;
    txt = want_ir ? tack_program_ir(prog) : tack_program_source(prog);
    result = PyUnicode_FromString(txt ? txt : "");
    if (result && want_ir == 2)
        result = with_ranges(prog, (int)k->nparams, result);
done:
    if (owned)
        tack_program_free(owned);
    kcall_fini(&c);
    return result;
}

/* pickle (and copy) ask __reduce_ex__(protocol): the package's hook (tack._pickle) says what a
 * kernel pickles as, as it does for arrays.  Below protocol 4 a name with a dot (a script kernel's
 * function copy, __tack_by_name__) is sent as getattr of the kernel, so the hook must know it. */
static PyObject *kernel_reduce_ex(PyObject *self, PyObject *protocol) {
    tpy_state *st = ((KernelObject *)self)->st;
    if (!st || !st->reduce_hook)
        return PyErr_Format(PyExc_TypeError, "cannot pickle 'tack.Kernel' object (import tack first)");
    return PyObject_CallFunctionObjArgs(st->reduce_hook, self, protocol, NULL);
}

static PyObject *kernel_reduce(PyObject *self, PyObject *unused) {
    (void)unused;
    return kernel_reduce_ex(self, Py_None);
}

static PyObject *kernel_generated_source(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                         PyObject *kwnames) {
    return kernel_text(self, args, nargs, kwnames, 0);
}

static PyObject *kernel_ir(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames) {
    return kernel_text(self, args, nargs, kwnames, 1);
}

static PyObject *kernel_debug_facts(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                    PyObject *kwnames) {
    return kernel_text(self, args, nargs, kwnames, 2);
}

/* ------------------------------------------------------------- object */

static PyObject *kernel_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"fn", "checks", "fast_math", "is_func", "flush_denormals", "default_float",
                             "check_races", "optimize", "by_value", NULL};
    PyObject *fn, *code = NULL, *varnames = NULL, *dfloat = NULL;
    int checks = 1, fast_math = 0, is_func = 0, flush = 0, races = 0, optimize, by_value = 0;
    {
        tack_compile_options o; /* optimize's default: the setting now (tack.config) */
        tack_compile_options_init(&o);
        optimize = o.optimize;
    }
    tack_dtype df = TACK_F32;
    KernelObject *k = NULL;
    long argcount, posonly;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|$ppppOppp:Kernel", kwlist, &fn, &checks,
                                     &fast_math, &is_func, &flush, &dfloat, &races, &optimize, &by_value))
        return NULL;
    if (dfloat && dfloat != Py_None) {
        tpy_state *st = tpy_state_from_type(type);
        if (!st || tpy_dtype_from_object(st, dfloat, &df) < 0)
            return NULL;
        if (df != TACK_F32 && df != TACK_F64) {
            PyErr_Format(PyExc_ValueError, "default_float must be tack.f32 or tack.f64, not %.60R", dfloat);
            return NULL;
        }
    }
    if (!PyFunction_Check(fn)) {
        PyErr_Format(PyExc_TypeError,
                     "tack.kernel and tack.func take a Python function (def ...), not %.100s",
                     Py_TYPE(fn)->tp_name);
        return NULL;
    }
    code = PyFunction_GetCode(fn);
    argcount = ((PyCodeObject *)code)->co_argcount;
    posonly = ((PyCodeObject *)code)->co_posonlyargcount;
    varnames = PyObject_GetAttrString(code, "co_varnames");
    if (!varnames)
        return NULL;
    k = (KernelObject *)type->tp_alloc(type, 0);
    if (!k)
        goto fail;
    k->vectorcall = kernel_vectorcall;
    k->st = tpy_state_from_type(type);
    if (!k->st)
        goto fail;
    k->fn = Py_NewRef(fn);
    k->params = PyTuple_GetSlice(varnames, 0, argcount);
    if (!k->params)
        goto fail;
    k->nparams = argcount;
    k->nposonly = posonly;
    {
        PyObject *d = PyFunction_GetDefaults(fn);
        k->defaults = d && d != Py_None ? Py_NewRef(d) : NULL;
    }
    k->checks = checks;
    k->fast_math = fast_math;
    k->flush_denormals = flush;
    k->check_races = races;
    k->optimize = optimize;
    k->is_func = is_func;
    k->by_value = by_value && !is_func;
    k->default_float = df;
    k->lock = PyThread_allocate_lock();
    if (!k->lock) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_DECREF(varnames);
    return (PyObject *)k;
fail:
    Py_XDECREF(varnames);
    Py_XDECREF(k);
    return NULL;
}

static int kernel_traverse(PyObject *self, visitproc visit, void *arg) {
    KernelObject *k = (KernelObject *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(k->fn);
    Py_VISIT(k->params);
    Py_VISIT(k->defaults);
    Py_VISIT(k->by_name);
    return kernel_variants_traverse(k, visit, arg);
}

static int kernel_clear(PyObject *self) {
    KernelObject *k = (KernelObject *)self;
    Py_CLEAR(k->fn);
    Py_CLEAR(k->params);
    Py_CLEAR(k->defaults);
    Py_CLEAR(k->by_name);
    kernel_variants_clear(k);
    return 0;
}

static void kernel_dealloc(PyObject *self) {
    KernelObject *k = (KernelObject *)self;
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (k->weakreflist)
        PyObject_ClearWeakRefs(self);
    kernel_clear(self);
    for (Py_ssize_t i = 0; i < k->nspecs; i++)
        kernel_spec_free(k->specs[i]);
    PyMem_Free(k->specs);
    kernel_variants_free(k);
    if (k->lock)
        PyThread_free_lock(k->lock);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *kernel_repr(PyObject *self) {
    KernelObject *k = (KernelObject *)self;
    PyObject *q = kernel_qualname(k), *r;
    PyCodeObject *code = (PyCodeObject *)PyFunction_GetCode(k->fn);
    r = PyUnicode_FromFormat("<tack.%s %U at %U:%d>", k->is_func ? "func" : "kernel", q,
                             code->co_filename, code->co_firstlineno);
    Py_XDECREF(q);
    return r;
}

static PyObject *get_fn_attr(PyObject *self, void *name) {
    return PyObject_GetAttrString(((KernelObject *)self)->fn, (const char *)name);
}

static PyObject *get_wrapped(PyObject *self, void *unused) {
    return Py_NewRef(((KernelObject *)self)->fn);
}

/* A script's kernel (module __main__) is the name its function's qualname gives, so plain pickle,
 * which sends a function by that name, cannot send the function: a copy of it that this attribute
 * holds is found by name instead (`__main__.k.__tack_by_name__`), in the receiving process too, where
 * the script's kernels are made again (fork, or multiprocessing's spawn).  tack._pickle makes it. */
static PyObject *get_by_name(PyObject *self, void *unused) {
    (void)unused;
    KernelObject *k = (KernelObject *)self;
    if (!k->by_name) {
        if (!k->st || !k->st->by_name_hook)
            return PyErr_Format(PyExc_AttributeError, "'tack.Kernel' object has no attribute '__tack_by_name__' "
                                                      "(import tack first)");
        PyObject *copy = PyObject_CallOneArg(k->st->by_name_hook, self);
        if (!copy)
            return NULL;
        if (k->by_name) /* the hook's Python code may have run another thread's getter */
            Py_DECREF(copy);
        else
            k->by_name = copy;
    }
    return Py_NewRef(k->by_name);
}

static PyObject *get_specializations(PyObject *self, void *unused) {
    return PyLong_FromSsize_t(((KernelObject *)self)->nspecs);
}

static PyObject *get_flag(PyObject *self, void *which) {
    KernelObject *k = (KernelObject *)self;
    const char *w = which;
    int v = w[0] == 'c' ? k->checks : w[0] == 'f' ? k->fast_math : w[0] == 'd' ? k->flush_denormals
          : w[0] == 'r' ? k->check_races : w[0] == 'o' ? k->optimize : w[0] == 'v' ? k->by_value : k->is_func;
    return PyBool_FromLong(v);
}

static PyObject *get_default_float(PyObject *self, void *unused) {
    KernelObject *k = (KernelObject *)self;
    return Py_NewRef(k->st->dtypes[k->default_float]);
}

static PyGetSetDef kernel_getset[] = {
    {"__name__", get_fn_attr, NULL, NULL, "__name__"},
    {"__qualname__", get_fn_attr, NULL, NULL, "__qualname__"},
    {"__doc__", get_fn_attr, NULL, NULL, "__doc__"},
    {"__module__", get_fn_attr, NULL, NULL, "__module__"},
    {"__wrapped__", get_wrapped, NULL, "the original Python function", NULL},
    {"__tack_by_name__", get_by_name, NULL, "a copy of the function that pickle sends by name (tack._pickle)", NULL},
    {"specializations", get_specializations, NULL,
     "number of compiled specializations (one per argument signature)", NULL},
    {"checks", get_flag, NULL, "bounds / zero-division / assert checks are compiled in", "c"},
    {"fast_math", get_flag, NULL, "floating point may be reassociated", "f"},
    {"flush_denormals", get_flag, NULL, "subnormal floats flush to zero while the kernel runs", "d"},
    {"check_races", get_flag, NULL, "the parallel loops the race check cannot decide run under the run-time "
     "race detector (CPU)", "r"},
    {"optimize", get_flag, NULL, "the optimizing passes run on its compiles", "o"},
    {"is_func", get_flag, NULL, "this is a @tack.func, not a kernel", "i"},
    {"by_value", get_flag, NULL, "a parameter is annotated with a vector, matrix or quaternion type, which "
     "it takes by value: calls go through tack._structs (docs/language.md, \"Vector arguments\")", "v"},
    {"default_float", get_default_float, NULL,
     "tack.f32 or tack.f64: the type of a float that meets no float type (docs/language.md)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef kernel_methods[] = {
    {"compile", (PyCFunction)(void (*)(void))kernel_compile_method, METH_FASTCALL | METH_KEYWORDS,
     "compile(*args, **kwargs): compile (and build) the kernel for these arguments' signature "
     "ahead of the first call; nothing runs. Example arrays that share memory build both the "
     "code for separate arrays (restrict) and the code for overlapping ones."},
    {"generated_source", (PyCFunction)(void (*)(void))kernel_generated_source,
     METH_FASTCALL | METH_KEYWORDS,
     "generated_source(*args, target=None) -> str: the source Tack emits for these arguments; "
     "target is a compile target, one of tack._core._targets() ('c' is the CPU's), by default the "
     "arguments' device's."},
    {"ir", (PyCFunction)(void (*)(void))kernel_ir, METH_FASTCALL | METH_KEYWORDS,
     "ir(*args, target=None) -> str: the typed IR for these arguments, as TACK_DUMP=ir shows it."},
    {"_debug_facts", (PyCFunction)(void (*)(void))kernel_debug_facts, METH_FASTCALL | METH_KEYWORDS,
     "_debug_facts(*args) -> (ir, ranges, aliases): the IR and, per parameter, None or the (lo, hi, "
     "type) a Python int argument must fit, and None or the (same, part) masks of the array "
     "parameters it must not share memory with, for a kernel run as Python (tack._debug)."},
    {"adjoint", (PyCFunction)(void (*)(void))kernel_adjoint_method, METH_FASTCALL | METH_KEYWORDS,
     "adjoint(*args, grads=None): launch the kernel's adjoint (reverse mode) for these arguments, "
     "accumulating into the gradients of its float arrays and scalars (docs/differentiation.md)."},
    {"__reduce__", kernel_reduce, METH_NOARGS,
     "__reduce__() -> how pickle sends the kernel: by name when importable, else its function and options"},
    {"__reduce_ex__", kernel_reduce_ex, METH_O,
     "__reduce_ex__(protocol) -> how pickle sends the kernel at this protocol (tack._pickle)"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef kernel_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(KernelObject, weakreflist), READONLY, NULL},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(KernelObject, vectorcall), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot kernel_slots[] = {
    {Py_tp_new, kernel_new},
    {Py_tp_dealloc, kernel_dealloc},
    {Py_tp_traverse, kernel_traverse},
    {Py_tp_clear, kernel_clear},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_repr, kernel_repr},
    {Py_tp_getset, kernel_getset},
    {Py_tp_methods, kernel_methods},
    {Py_tp_members, kernel_members},
    {0, NULL},
};

static PyType_Spec kernel_spec = {
    .name = "tack.Kernel",
    .basicsize = sizeof(KernelObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = kernel_slots,
};

/* ------------------------------------------------------- module hooks */

int tpy_kernel_unwrap(tpy_state *st, PyObject *obj, PyObject **fn, int *is_func) {
    if (!st->KernelType || !PyObject_TypeCheck(obj, st->KernelType))
        return 0;
    if (fn)
        *fn = ((KernelObject *)obj)->fn;
    if (is_func)
        *is_func = ((KernelObject *)obj)->is_func;
    return 1;
}

static PyObject *py_set_intrinsics(PyObject *m, PyObject *arg) {
    tpy_state *st = tpy_get_state(m);
    if (!PyDict_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "_set_intrinsics expects a dict {function: name}");
        return NULL;
    }
    Py_XSETREF(st->kernel_extra, Py_NewRef(arg));
    Py_RETURN_NONE;
}

static PyMethodDef kernel_module_methods[] = {
    {"_set_intrinsics", py_set_intrinsics, METH_O,
     "_set_intrinsics(registry): the {object: intrinsic name} dict the kernel front end uses"},
    {NULL, NULL, 0, NULL},
};

int tpy_kernel_exec(PyObject *m, tpy_state *st) {
    PyObject *type = PyType_FromModuleAndSpec(m, &kernel_spec, NULL);
    if (!type)
        return -1;
    st->KernelType = (PyTypeObject *)type;
    if (PyModule_AddObjectRef(m, "Kernel", type) < 0)
        return -1;
    return PyModule_AddFunctions(m, kernel_module_methods);
}

int tpy_kernel_traverse(tpy_state *st, visitproc visit, void *arg) {
    Py_VISIT(st->KernelType);
    Py_VISIT(st->kernel_extra);
    return 0;
}

void tpy_kernel_clear(tpy_state *st) {
    Py_CLEAR(st->KernelType);
    Py_CLEAR(st->kernel_extra);
}
