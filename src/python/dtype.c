/*
 * dtype.c -- the DType heap type and the dtype objects tack.f32, tack.vec3, ...
 *
 * One DType instance exists per tack_dtype, created at module exec and kept
 * in module state, so dtypes compare by identity and `tack.f32 is
 * tack.dtype("float32")`.  Everything about a dtype (size, alignment, shape
 * of its vector or matrix) comes from libtack's table; this file only
 * presents it.  A DType's NumPy equivalent is the scalar dtype for scalars
 * and a subarray dtype for vectors and matrices (vec3 -> ('<f4', (3,))), so
 * NumPy allocates exactly the bytes Tack expects and gives them a trailing
 * axis.  bf16's is ml_dtypes.bfloat16, NumPy having none: imported where it
 * is asked for (tpy_numpy_dtype), and since its arrays cannot give a buffer,
 * the buffer paths take their bits' uint16 view (tpy_get_buffer).
 */
#include "tack_py.h"

#include <structmember.h>

static const tack_dtype_info *info_of(PyObject *self) { return tack_dtype_get(((TackDTypeObject *)self)->id); }

static PyObject *dtype_get_name(PyObject *self, void *c) { return PyUnicode_FromString(info_of(self)->name); }
static PyObject *dtype_get_itemsize(PyObject *self, void *c) { return PyLong_FromSize_t(info_of(self)->itemsize); }
static PyObject *dtype_get_alignment(PyObject *self, void *c) { return PyLong_FromSize_t(info_of(self)->alignment); }
static PyObject *dtype_get_kind(PyObject *self, void *c) {
    static const char kinds[] = "biufc";
    return PyUnicode_FromStringAndSize(&kinds[info_of(self)->kind], 1);
}
static PyObject *dtype_get_shape(PyObject *self, void *c) {
    const tack_dtype_info *i = info_of(self);
    if (i->rows == 1 && i->cols == 1)
        return PyTuple_New(0);
    if (i->cols == 1)
        return Py_BuildValue("(i)", i->rows);
    return Py_BuildValue("(ii)", i->rows, i->cols);
}
static PyObject *dtype_get_scalar(PyObject *self, void *c) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    return st ? Py_NewRef(st->dtypes[info_of(self)->scalar]) : NULL;
}

PyObject *tpy_numpy_dtype(tpy_state *st, tack_dtype scalar) {
    PyObject *np = tpy_numpy(st), *ml = NULL, *t = NULL, *out = NULL;
    if (!np)
        return NULL;
    if (scalar != TACK_BF16)
        return tpy_call1(np, "dtype", ((TackDTypeObject *)st->dtypes[scalar])->numpy_name);
    if (!(ml = PyImport_ImportModule("ml_dtypes"))) {
        if (PyErr_ExceptionMatches(PyExc_ImportError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError,
                            "tack.bf16 has no NumPy dtype: NumPy has no bfloat16, and ml_dtypes, which gives "
                            "it one, is not installed (pip install ml_dtypes); without it, bf16 arrays come "
                            "and go through DLPack (tack.from_dlpack(t) of a torch.bfloat16 tensor, "
                            "torch.from_dlpack(a))");
        }
        goto done;
    }
    if ((t = PyObject_GetAttrString(ml, "bfloat16")))
        out = tpy_call1(np, "dtype", t);
done:
    Py_XDECREF(ml);
    Py_XDECREF(t);
    return out;
}

PyObject *tpy_bf16_bits(tpy_state *st, PyObject *obj) {
    PyObject *name = NULL, *ml = NULL, *bt = NULL, *dt = NULL, *type = NULL, *np, *out = NULL;
    if (!(name = PyUnicode_FromString("ml_dtypes")))
        return NULL;
    ml = PyImport_GetModule(name); /* only where ml_dtypes is imported: no array of its types otherwise */
    if (!ml)
        goto done;
    if (!(bt = PyObject_GetAttrString(ml, "bfloat16")) || !(dt = PyObject_GetAttrString(obj, "dtype")) ||
        !(type = PyObject_GetAttrString(dt, "type"))) {
        PyErr_Clear();
        goto done;
    }
    if (type == bt && (np = tpy_numpy(st))) {
        PyObject *u16 = PyObject_GetAttrString(np, "uint16");
        out = u16 ? tpy_call1(obj, "view", u16) : NULL;
        Py_XDECREF(u16);
    }
done:
    Py_XDECREF(name);
    Py_XDECREF(ml);
    Py_XDECREF(bt);
    Py_XDECREF(dt);
    Py_XDECREF(type);
    return out;
}

/* PyObject_GetBuffer; an ml_dtypes bfloat16 array has no buffer of its own
 * (no format letter names it), so its bits' uint16 view gives one, and
 * *bf16 says so (may be NULL).  The view holds the uint16 view, which holds
 * the array. */
int tpy_get_buffer(tpy_state *st, PyObject *obj, Py_buffer *view, int flags, int *bf16) {
    PyObject *t, *v, *tb, *bits;
    if (PyObject_GetBuffer(obj, view, flags) == 0)
        return 0;
    PyErr_Fetch(&t, &v, &tb);
    if (!(bits = tpy_bf16_bits(st, obj))) {
        if (PyErr_Occurred()) {
            Py_XDECREF(t);
            Py_XDECREF(v);
            Py_XDECREF(tb);
        } else
            PyErr_Restore(t, v, tb);
        return -1;
    }
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
    int rc = PyObject_GetBuffer(bits, view, flags);
    Py_DECREF(bits);
    if (rc == 0 && bf16)
        *bf16 = 1;
    return rc;
}

static PyObject *dtype_get_numpy(PyObject *self, void *c) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    PyObject *np, *scalar = NULL, *shape = NULL, *spec = NULL, *out = NULL;
    if (!st || !(np = tpy_numpy(st)))
        return NULL;
    const tack_dtype_info *i = info_of(self);
    scalar = tpy_numpy_dtype(st, i->scalar);
    if (!scalar)
        goto done;
    if (i->rows == 1 && i->cols == 1) {
        out = Py_NewRef(scalar);
        goto done;
    }
    if (!(shape = dtype_get_shape(self, NULL)) || !(spec = PyTuple_Pack(2, scalar, shape)))
        goto done;
    PyObject *fn = PyObject_GetAttrString(np, "dtype");
    out = fn ? PyObject_CallOneArg(fn, spec) : NULL;
    Py_XDECREF(fn);
done:
    Py_XDECREF(scalar);
    Py_XDECREF(shape);
    Py_XDECREF(spec);
    return out;
}

static PyObject *dtype_repr(PyObject *self) { return PyUnicode_FromFormat("tack.%s", info_of(self)->name); }

static Py_hash_t dtype_hash(PyObject *self) { return (Py_hash_t)((TackDTypeObject *)self)->id + 0x7ac4; }

/* Whether `o` is a NumPy dtype (np.dtype('float32')) or scalar type (np.float32). */
static int is_numpy_dtype(tpy_state *st, PyObject *o) {
    PyObject *np = tpy_numpy(st), *t = np ? PyObject_GetAttrString(np, PyType_Check(o) ? "generic" : "dtype") : NULL;
    int r = t ? (PyType_Check(o) ? PyObject_IsSubclass(o, t) : PyObject_IsInstance(o, t)) : -1;
    Py_XDECREF(t);
    if (r < 0) {
        PyErr_Clear();
        r = 0;
    }
    return r;
}

static PyObject *dtype_richcompare(PyObject *self, PyObject *other, int op) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    tack_dtype other_id;
    if ((op != Py_EQ && op != Py_NE) || !st)
        Py_RETURN_NOTIMPLEMENTED;
    if (Py_TYPE(other) == st->DTypeType)
        other_id = ((TackDTypeObject *)other)->id;
    else if (PyUnicode_Check(other)) {
        const char *s = PyUnicode_AsUTF8(other);
        if (!s)
            return NULL;
        if (tack_dtype_from_name(s, &other_id) != TACK_OK)
            return PyBool_FromLong(op == Py_NE);
    } else if (is_numpy_dtype(st, other)) {
        /* np.float32, np.dtype('float32'), as NumPy's np.dtype('float32') == np.float32.
         * Python's own types stay unequal: `float` is f32 only where Tack reads a dtype
         * (code asks `ann in (int, float)` of annotations that may be Tack dtypes). */
        if (tpy_dtype_from_object(st, other, &other_id) < 0) {
            PyErr_Clear();
            return PyBool_FromLong(op == Py_NE);
        }
    } else
        Py_RETURN_NOTIMPLEMENTED;
    int eq = other_id == ((TackDTypeObject *)self)->id;
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

/* Calling a dtype from Python converts like NumPy: tack.f32(1.5) is a
 * numpy.float32, tack.vec3(1, 2, 3) a float32 array of shape (3,),
 * tack.transform(p, q) the 7 floats of p then q.  Inside a kernel the same
 * call is a cast or a constructor. */
static PyObject *dtype_call(PyObject *self, PyObject *args, PyObject *kw) {
    tpy_state *st = tpy_state_from_type(Py_TYPE(self));
    PyObject *np, *npdt = NULL, *value = NULL, *out = NULL;
    const tack_dtype_info *i = info_of(self);
    if (!st || !(np = tpy_numpy(st)))
        return NULL;
    if (kw && PyDict_GET_SIZE(kw))
        return PyErr_Format(PyExc_TypeError, "tack.%s() takes no keyword arguments", i->name);
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (!(npdt = tpy_numpy_dtype(st, i->scalar)))
        goto done;
    if (i->rows == 1 && i->cols == 1) {
        if (n != 1) {
            PyErr_Format(PyExc_TypeError, "tack.%s() takes exactly 1 argument (%zd given)", i->name, n);
            goto done;
        }
        PyObject *type = PyObject_GetAttrString(npdt, "type");
        if (!type)
            goto done;
        out = PyObject_CallOneArg(type, PyTuple_GET_ITEM(args, 0));
        Py_DECREF(type);
        goto done;
    }
    Py_ssize_t want = (Py_ssize_t)i->rows * i->cols;
    if (i->form == TACK_FORM_TRANSFORM && n == 2) /* tack.transform(p, q): the position, then the rotation */
        value = tpy_call1(np, "hstack", args);
    else
        value = n == 1 ? Py_NewRef(PyTuple_GET_ITEM(args, 0)) : Py_NewRef(args);
    if (!value)
        goto done;
    PyObject *arr = PyObject_CallMethod(np, "array", "OO", value, npdt);
    if (!arr)
        goto done;
    PyObject *size = PyObject_GetAttrString(arr, "size");
    Py_ssize_t got = size ? PyLong_AsSsize_t(size) : -1;
    Py_XDECREF(size);
    if (got != want) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "tack.%s() needs %zd components, got %zd", i->name, want, got);
        Py_DECREF(arr);
        goto done;
    }
    PyObject *shape = dtype_get_shape(self, NULL);
    out = shape ? tpy_call1(arr, "reshape", shape) : NULL;
    Py_XDECREF(shape);
    Py_DECREF(arr);
done:
    Py_XDECREF(npdt);
    Py_XDECREF(value);
    return out;
}

static int dtype_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(((TackDTypeObject *)self)->numpy_name);
    return 0;
}

static int dtype_clear(PyObject *self) {
    Py_CLEAR(((TackDTypeObject *)self)->numpy_name);
    return 0;
}

static void dtype_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    dtype_clear(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *dtype_reduce(PyObject *self, PyObject *unused) {
    /* Pickle by name through tack.dtype. */
    PyObject *mod = PyImport_ImportModule("tack");
    if (!mod)
        return NULL;
    PyObject *fn = PyObject_GetAttrString(mod, "dtype");
    Py_DECREF(mod);
    if (!fn)
        return NULL;
    PyObject *out = Py_BuildValue("(N(s))", fn, info_of(self)->name);
    return out;
}

static PyGetSetDef dtype_getset[] = {
    {"name", dtype_get_name, NULL, "the dtype's name: 'f32', 'vec3', ...", NULL},
    {"itemsize", dtype_get_itemsize, NULL, "bytes of one element", NULL},
    {"alignment", dtype_get_alignment, NULL, "required alignment in bytes", NULL},
    {"kind", dtype_get_kind, NULL, "scalar kind: 'b', 'i', 'u', 'f' or 'c' (NumPy's codes)", NULL},
    {"shape", dtype_get_shape, NULL, "() for scalars, (N,) for vectors, (R, C) for matrices", NULL},
    {"scalar", dtype_get_scalar, NULL, "the scalar dtype of the components", NULL},
    {"numpy", dtype_get_numpy, NULL, "the equivalent numpy.dtype (a subarray dtype for vectors and matrices)", NULL},
    /* NumPy takes any object with a .dtype as a dtype: np.zeros(4, tack.vec3) */
    {"dtype", dtype_get_numpy, NULL, "the equivalent numpy.dtype, so NumPy takes a Tack dtype wherever it takes a dtype", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef dtype_methods[] = {
    {"__reduce__", dtype_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot dtype_slots[] = {
    {Py_tp_repr, dtype_repr},
    {Py_tp_hash, dtype_hash},
    {Py_tp_richcompare, dtype_richcompare},
    {Py_tp_call, dtype_call},
    {Py_tp_getset, dtype_getset},
    {Py_tp_methods, dtype_methods},
    {Py_tp_traverse, dtype_traverse},
    {Py_tp_clear, dtype_clear},
    {Py_tp_dealloc, dtype_dealloc},
    {Py_tp_doc, "A Tack element type. Use the instances tack.f32, tack.vec3, ... or tack.dtype(x)."},
    {0, NULL},
};

static PyType_Spec dtype_spec = {
    .name = "tack.DType",
    .basicsize = sizeof(TackDTypeObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = dtype_slots,
};

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define TACK_PY_BIG_ENDIAN 1
#else
#define TACK_PY_BIG_ENDIAN 0
#endif

static const char *numpy_names[TACK_DTYPE_COUNT] = {
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
    [TACK_C64] = "complex64", [TACK_C128] = "complex128",
    [TACK_BF16] = "bfloat16", /* ml_dtypes' (tpy_numpy_dtype) */
};

int tpy_dtype_exec(PyObject *m, tpy_state *st) {
    st->DTypeType = (PyTypeObject *)PyType_FromModuleAndSpec(m, &dtype_spec, NULL);
    if (!st->DTypeType || PyModule_AddObjectRef(m, "DType", (PyObject *)st->DTypeType) < 0)
        return -1;
    for (int i = 0; i < TACK_DTYPE_COUNT; i++) {
        TackDTypeObject *d = PyObject_GC_New(TackDTypeObject, st->DTypeType);
        if (!d)
            return -1;
        d->id = (tack_dtype)i;
        const tack_dtype_info *info = tack_dtype_get((tack_dtype)i);
        d->numpy_name = PyUnicode_FromString(numpy_names[info->scalar]);
        PyObject_GC_Track((PyObject *)d);
        st->dtypes[i] = (PyObject *)d;
        if (!d->numpy_name || PyModule_AddObjectRef(m, info->name, (PyObject *)d) < 0)
            return -1;
    }
    return 0;
}

/* The NumPy dtype objects and scalar types converted before: asking NumPy
 * (np.dtype(x), its subdtype, byteorder and name) costs about 2 us, which
 * was most of tack.empty(n, np.int64).  Only objects whose meaning cannot
 * change are kept -- instances of numpy.dtype and subclasses of
 * numpy.generic (a user object with a .dtype attribute is asked every
 * time) -- by identity, a reference each, at most TPY_DTYPE_OBJECTS; later
 * ones are converted as before. */
int tpy_ids_add(tpy_ids *t, int most, PyObject *obj, tack_dtype dt) {
    if (t->n >= most || t->n >= TPY_IDS_MOST)
        return 0;
    t->obj[t->n] = Py_NewRef(obj);
    t->dt[t->n++] = dt;
    return 1;
}

int tpy_ids_traverse(tpy_ids *t, visitproc visit, void *arg) {
    for (int k = 0; k < t->n; k++)
        Py_VISIT(t->obj[k]);
    return 0;
}

void tpy_ids_clear(tpy_ids *t) {
    for (int k = 0; k < t->n; k++)
        Py_CLEAR(t->obj[k]);
    t->n = 0;
}

static void dtype_remember(tpy_state *st, PyObject *np, PyObject *obj, tack_dtype dt) {
    PyObject *cls;
    int keep = 0;
    if (st->dtype_objects.n >= TPY_DTYPE_OBJECTS)
        return;
    if (PyType_Check(obj))
        cls = PyObject_GetAttrString(np, "generic");
    else
        cls = PyObject_GetAttrString(np, "dtype");
    if (cls && PyType_Check(cls))
        keep = PyType_Check(obj) ? PyType_IsSubtype((PyTypeObject *)obj, (PyTypeObject *)cls)
                                 : PyObject_TypeCheck(obj, (PyTypeObject *)cls);
    Py_XDECREF(cls);
    PyErr_Clear(); /* a NumPy without these names: nothing kept */
    if (keep)
        tpy_ids_add(&st->dtype_objects, TPY_DTYPE_OBJECTS, obj, dt);
}

int tpy_dtype_from_object(tpy_state *st, PyObject *obj, tack_dtype *out) {
    PyObject *np = NULL, *npdt = NULL, *sub = NULL, *base = NULL, *name = NULL;
    int rc = -1;
    if (Py_TYPE(obj) == st->DTypeType) {
        *out = ((TackDTypeObject *)obj)->id;
        return 0;
    }
    int k = tpy_ids_find(&st->dtype_objects, obj);
    if (k >= 0) {
        *out = st->dtype_objects.dt[k];
        return 0;
    }
    if (PyUnicode_Check(obj)) {
        const char *s = PyUnicode_AsUTF8(obj);
        if (!s)
            return -1;
        if (tack_dtype_from_name(s, out) == TACK_OK)
            return 0;
        /* Fall through to NumPy for spellings such as '<f4'. */
    }
    if (obj == Py_None) { *out = TACK_F32; return 0; } /* the default, as dtype=None makes (NumPy's: float64) */
    if (obj == (PyObject *)&PyBool_Type) { *out = TACK_BOOL; return 0; }
    if (obj == (PyObject *)&PyLong_Type) { *out = TACK_I64; return 0; }
    if (obj == (PyObject *)&PyFloat_Type) { *out = TACK_F32; return 0; } /* the default float */
    if (!(np = tpy_numpy(st)))
        return -1;
    npdt = tpy_call1(np, "dtype", obj);
    if (!npdt) {
        PyErr_Clear();
        PyObject *r = PyObject_Repr(obj);
        PyErr_Format(PyExc_TypeError,
                     "unknown dtype %S (expected a tack dtype such as tack.f32, a name such as 'f32' or "
                     "'float32', or a NumPy dtype)",
                     r ? r : Py_None);
        Py_XDECREF(r);
        goto done;
    }
    if (!(sub = PyObject_GetAttrString(npdt, "subdtype")))
        goto done;
    PyObject *scalar_dt = npdt;
    int rows = 1, cols = 1;
    if (sub != Py_None) {
        PyObject *shape;
        if (!PyArg_ParseTuple(sub, "OO", &base, &shape))
            goto done;
        Py_ssize_t nd = PyTuple_Check(shape) ? PyTuple_GET_SIZE(shape) : -1;
        if (nd < 1 || nd > 2)
            goto unsupported;
        rows = (int)PyLong_AsLong(PyTuple_GET_ITEM(shape, 0));
        cols = nd == 2 ? (int)PyLong_AsLong(PyTuple_GET_ITEM(shape, 1)) : 1;
        scalar_dt = base;
        base = NULL; /* borrowed from sub */
    }
    if (!(name = PyObject_GetAttrString(scalar_dt, "byteorder")))
        goto done;
    const char *order = PyUnicode_AsUTF8(name);
    if (!order)
        goto done;
    if (order[0] == '>' || (order[0] == '=' && TACK_PY_BIG_ENDIAN)) {
        PyErr_Format(PyExc_TypeError, "NumPy dtype %S is big-endian; Tack arrays are native-endian", npdt);
        goto done;
    }
    Py_CLEAR(name);
    if (!(name = PyObject_GetAttrString(scalar_dt, "name")))
        goto done;
    const char *s = PyUnicode_AsUTF8(name);
    tack_dtype scalar;
    if (!s)
        goto done;
    if (tack_dtype_from_name(s, &scalar) != TACK_OK)
        goto unsupported;
    if (rows == 1 && cols == 1) {
        *out = scalar;
        rc = 0;
        goto done;
    }
    if (tack_dtype_compose(scalar, rows, cols, out) == TACK_OK) {
        rc = 0;
        goto done;
    }
unsupported:
    PyErr_Format(PyExc_TypeError, "NumPy dtype %S has no Tack equivalent", npdt);
done:
    if (rc == 0 && !PyUnicode_Check(obj))
        dtype_remember(st, np, obj, *out);
    Py_XDECREF(npdt);
    Py_XDECREF(sub);
    Py_XDECREF(name);
    return rc;
}

/* _core._dtype(x): the DType for x, as tack.dtype() documents. */
PyObject *tpy_dtype_lookup(PyObject *m, PyObject *obj) {
    tpy_state *st = tpy_get_state(m);
    tack_dtype dt;
    if (tpy_dtype_from_object(st, obj, &dt) < 0)
        return NULL;
    return Py_NewRef(st->dtypes[dt]);
}
