/*
 * frontend_unroll.c -- loops over constant tuples, unrolled by the front end.
 *
 * Taichi's ti.static loops over offsets are written in Tack as loops over
 * constant tuples:
 *
 *     for di, dj in ((0, 1), (1, 0), (0, -1), (-1, 0)):
 *         s += a[(i + di) % n, (j + dj) % m]
 *
 * Tack has no run-time tuples, and a loop indexing a table of offsets at
 * run time would hide the constants that make a stencil cheap, so the front
 * end writes the loop out: fe_tuple_loop walks the body once per element,
 * in order, into the enclosing block, with the loop's names standing for the
 * element's parts (bind, fe_unrolled_name: each read of one is the constant
 * itself).  After the last copy the target is assigned the last element, as
 * Python leaves it.  Where the body assigns a loop's name, or has a break or
 * continue of its own, each copy assigns the target first; a copy with an
 * exit is the body of a `while True` run once (frontend.c's st_break and
 * st_continue leave it, a break also setting a flag that later copies test).
 *
 * The elements must be constants -- numbers, tuples of them, vector or scalar
 * types called on them, a module's tuple (of numbers, tuples or vectors made
 * outside the kernel) -- because a copy evaluates its element where the loop
 * reads it, which is Python's evaluate-once only for values that cannot
 * change.  Debug mode runs such a loop as Python does (tack._debug_transform).
 */
#include "frontend.h"

/* An element of a constant tuple loop, written in the source: a number (also negated), a
 * tuple of them, a name of a constant from the environment (a module's N), or a call of a
 * vector or scalar type on them (tack.vec2i(0, 1)) -- values fixed when the kernel compiles,
 * so evaluating one in its copy of the body is evaluating it before the loop, as Python does.
 * 1 if so, 0 if not (nothing raised), -1 on an error. */
static int constant_elt(fe_func *f, PyObject *e) {
    PyObject *v = NULL, *obj = NULL, *list = NULL;
    int r = 0;
    if (fe_is_kind(e, "Constant")) {
        v = PyObject_GetAttrString(e, "value");
        r = v ? (PyLong_Check(v) || PyFloat_Check(v) || PyBool_Check(v)) : -1;
    } else if (fe_is_kind(e, "UnaryOp")) {
        v = PyObject_GetAttrString(e, "operand");
        r = v ? constant_elt(f, v) : -1;
    } else if (fe_is_kind(e, "Tuple")) {
        list = fe_get_list(e, "elts");
        r = list ? 1 : -1;
        for (Py_ssize_t i = 0; r == 1 && i < PyList_GET_SIZE(list); i++)
            r = constant_elt(f, PyList_GET_ITEM(list, i));
    } else if (fe_is_kind(e, "Name") || fe_is_kind(e, "Attribute")) {
        r = fe_resolve_chain(f, e, &obj); /* 1: a value from the environment, which is fixed */
        if (r == 1 && !PyLong_Check(obj) && !PyFloat_Check(obj))
            r = 0;
    } else if (fe_is_kind(e, "Call")) {
        PyObject *func = PyObject_GetAttrString(e, "func"), *kw = fe_get_list(e, "keywords");
        r = func && kw ? fe_resolve_chain(f, func, &obj) : -1;
        if (r == 1)
            r = fe_dtype_of(f, obj) >= 0 && PyList_GET_SIZE(kw) == 0;
        if (r == 1 && (list = fe_get_list(e, "args")) == NULL)
            r = -1;
        for (Py_ssize_t i = 0; r == 1 && i < PyList_GET_SIZE(list); i++)
            r = constant_elt(f, PyList_GET_ITEM(list, i));
        Py_XDECREF(func);
        Py_XDECREF(kw);
    }
    Py_XDECREF(v);
    Py_XDECREF(obj);
    Py_XDECREF(list);
    return r;
}

/* A vector made outside the kernel, an element of a module's tuple (OFFSETS = (tack.vec2i(0, 1), ...),
 * a NumPy array of 2 to 4 i32, f32 or f64): the call of its vector type on its components, constants. */
static tack_node *constant_vector(fe_func *f, PyObject *e, PyObject *v) {
    static const struct {
        const char *dtype, *suffix;
    } kinds[] = {{"int32", "i"}, {"float32", ""}, {"float64", "d"}};
    PyObject *dt = PyObject_GetAttrString(v, "dtype"), *name = dt ? PyObject_Str(dt) : NULL;
    PyObject *items = name ? PyObject_CallMethod(v, "tolist", NULL) : NULL;
    const char *suffix = NULL;
    tack_node *n = NULL;
    char type[8];
    for (size_t i = 0; name && i < sizeof kinds / sizeof *kinds; i++)
        if (PyUnicode_CompareWithASCIIString(name, kinds[i].dtype) == 0)
            suffix = kinds[i].suffix;
    if (!items) {
        ;
    } else if (!suffix || !PyList_Check(items) || PyList_GET_SIZE(items) < 2 || PyList_GET_SIZE(items) > 4 ||
               !(PyLong_Check(PyList_GET_ITEM(items, 0)) || PyFloat_Check(PyList_GET_ITEM(items, 0)))) {
        fe_error(f, e, "a loop over a tuple in a kernel takes vectors of 2 to 4 i32, f32 or f64 components, "
                 "not an array of dtype %U", name);
    } else if ((n = fe_node(f, e, TACK_N_CALL)) != NULL) {
        snprintf(type, sizeof type, "vec%d%s", (int)PyList_GET_SIZE(items), suffix);
        if (tack_node_set_name(f->mc->mod, n, type) != TACK_OK) {
            tpy_raise();
            n = NULL;
        } else {
            tack_node_set_int(n, -1);
        }
        for (Py_ssize_t i = 0; n && i < PyList_GET_SIZE(items); i++)
            if (fe_add(n, fe_value_node(f, e, PyList_GET_ITEM(items, i)), f) < 0)
                n = NULL;
    }
    Py_XDECREF(dt);
    Py_XDECREF(name);
    Py_XDECREF(items);
    return n;
}

/* The node of element `v` of a constant tuple named in the environment (OFFSETS = ((0, 1), ...)):
 * a number's constant, a tuple's TUPLE of its elements' nodes; NULL with an error otherwise. */
static tack_node *constant_value(fe_func *f, PyObject *e, PyObject *v) {
    tack_node *n;
    if (!PyTuple_Check(v)) {
        if (PyLong_Check(v) || PyFloat_Check(v))
            return fe_value_node(f, e, v);
        if (strcmp(Py_TYPE(v)->tp_name, "numpy.ndarray") == 0)
            return constant_vector(f, e, v);
        fe_error(f, e, "a loop over a tuple in a kernel takes numbers, vectors and tuples of numbers, not %s",
                 Py_TYPE(v)->tp_name);
        return NULL;
    }
    n = fe_node(f, e, TACK_N_TUPLE);
    for (Py_ssize_t i = 0; n && i < PyTuple_GET_SIZE(v); i++)
        if (fe_add(n, constant_value(f, e, PyTuple_GET_ITEM(v, i)), f) < 0)
            n = NULL;
    return n;
}

tack_node *fe_unrolled_name(fe_func *f, PyObject *id, int *found) {
    for (int i = f->n_unrolled - 1; i >= 0; i--) {
        if (PyUnicode_Compare(id, f->unrolled[i].name) != 0)
            continue;
        *found = 1;
        return f->unrolled[i].elt ? fe_expr(f, f->unrolled[i].elt, 0)
                                  : constant_value(f, f->unrolled[i].loc, f->unrolled[i].value);
    }
    *found = 0;
    return NULL;
}

/* The first assignment to `name` in stmts (a target, a loop's variable), or NULL (borrowed). */
static PyObject *assigns(PyObject *stmts, PyObject *name) {
    PyObject *r = NULL;
    for (Py_ssize_t i = 0; !r && i < PyList_GET_SIZE(stmts); i++) {
        PyObject *s = PyList_GET_ITEM(stmts, i), *walk = PyImport_ImportModule("ast"), *it = NULL, *x;
        it = walk ? PyObject_CallMethod(walk, "walk", "O", s) : NULL;
        while (it && !r && (x = PyIter_Next(it)) != NULL) {
            if (fe_is_kind(x, "Name")) {
                PyObject *id = PyObject_GetAttrString(x, "id"), *ctx = PyObject_GetAttrString(x, "ctx");
                if (id && ctx && !fe_is_kind(ctx, "Load") && PyUnicode_Compare(id, name) == 0)
                    r = s;
                Py_XDECREF(id);
                Py_XDECREF(ctx);
            }
            Py_DECREF(x);
        }
        Py_XDECREF(it);
        Py_XDECREF(walk);
        PyErr_Clear();
    }
    return r;
}

/* A break or continue (`kind`, or either when NULL) of the loop whose body is `stmts` (not of a loop
 * inside it): the first, or NULL (a borrowed reference into stmts). */
static PyObject *loop_exit(PyObject *stmts, const char *kind) {
    static const char *const fields[] = {"body", "orelse"};
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(stmts); i++) {
        PyObject *s = PyList_GET_ITEM(stmts, i), *found = NULL;
        if (kind ? fe_is_kind(s, kind) : (fe_is_kind(s, "Break") || fe_is_kind(s, "Continue")))
            return s;
        if (!fe_is_kind(s, "If"))
            continue; /* a loop's own exits are its own; other compound statements are refused */
        for (int k = 0; k < 2 && !found; k++) {
            PyObject *sub = fe_get_list(s, fields[k]);
            if (sub)
                found = loop_exit(sub, kind);
            Py_XDECREF(sub);
        }
        PyErr_Clear();
        if (found)
            return found;
    }
    return NULL;
}

/* A `for` over range, tack.ndrange or tack.blocks in stmts that the copies of a tuple loop put
 * into the block they go to: one of the statements, or one in the body of a tuple loop among them
 * (whose copies go there too); NULL if none (a borrowed reference into stmts). */
static PyObject *copied_loop(PyObject *stmts) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(stmts); i++) {
        PyObject *s = PyList_GET_ITEM(stmts, i), *it, *sub, *found = NULL;
        if (!fe_is_kind(s, "For"))
            continue;
        it = PyObject_GetAttrString(s, "iter");
        int call = it && fe_is_kind(it, "Call");
        Py_XDECREF(it);
        if (call)
            return s;
        if ((sub = fe_get_list(s, "body")) != NULL)
            found = copied_loop(sub);
        Py_XDECREF(sub);
        PyErr_Clear();
        if (found)
            return found;
    }
    return NULL;
}

/* A tuple loop at a kernel's top level whose body has a break or continue of its own runs each copy
 * as the body of a `while True` (fe_tuple_loop), where a `for` loop is serial: a loop over range in
 * the body, which the language makes a parallel loop of its own in each copy, would run on one
 * thread instead, its locals no longer private to an iteration.  Refused (-1) rather than run so;
 * 0 where nothing is copied into the kernel's top level or the body has no such loop. */
static int refuse_exit_around_pfor(fe_func *f, PyObject *body, PyObject *exit, tack_node *block) {
    PyObject *loop = block == f->top ? copied_loop(body) : NULL;
    long line = 0;
    if (!loop)
        return 0;
    if (fe_get_int_attr(exit, "lineno", &line) < 0)
        PyErr_Clear();
    return fe_error(f, loop, "this for loop would be a parallel loop in each copy of the loop over a tuple around "
                    "it, but that loop has a %s (line %ld): its copies then run inside a loop of their own, where a "
                    "for loop is serial (a kernel's parallel loops are its top-level statements, which run "
                    "unconditionally). Test the condition inside the parallel loop's body instead, or run the tuple "
                    "loop serially on purpose inside `for t in range(1):`",
                    fe_is_kind(exit, "Break") ? "break" : "continue",
                    line > 0 ? line - f->shift + f->first_line - 1 : 0L);
}

tack_node *fe_flag_name(fe_func *f, PyObject *s, PyObject *flag) {
    tack_node *n = fe_node(f, s, TACK_N_NAME);
    return n && fe_set_name(f, n, flag) == 0 ? n : NULL;
}

tack_node *fe_bool_const(fe_func *f, PyObject *s, int v) {
    tack_node *n = fe_node(f, s, TACK_N_CONST_BOOL);
    if (n)
        tack_node_set_int(n, v);
    return n;
}

static int is_tuple(PyObject *elt, PyObject *v) { return elt ? fe_is_kind(elt, "Tuple") : PyTuple_Check(v); }

/* The parts of a tuple element, its source's (elt) or its value's (v): *n of them, part k by part(). */
static Py_ssize_t parts(PyObject *elt, PyObject *v, PyObject **list) {
    *list = NULL;
    if (!elt)
        return PyTuple_GET_SIZE(v);
    *list = fe_get_list(elt, "elts");
    return *list ? PyList_GET_SIZE(*list) : -1;
}

/* A copy's binding of the loop's target t to the element (its source elt, or its value v): each name
 * of t stands for its part of the element in the copy (fe_unrolled_name), so every read of it is the
 * constant itself -- `(i + di) % n` with di a literal, which constant folding and the CPU's periodic
 * indexing (periodic.c) see, where a local assigned the constant is opaque to them.  1 when bound;
 * 0 when a name is assigned in the body or t's shape is not the element's (the copy then assigns the
 * element to t, which reports a mismatch); -1 on an error (a name standing for a tuple, assigned). */
static int bind(fe_func *f, PyObject *t, PyObject *elt, PyObject *v, PyObject *loc, PyObject *body) {
    if (fe_is_kind(t, "Name")) {
        PyObject *id = PyObject_GetAttrString(t, "id"), *at = id ? assigns(body, id) : NULL;
        int r = id ? 1 : -1;
        if (r == 1 && at && is_tuple(elt, v))
            r = fe_error(f, at, "'%U' is the variable of a loop over a tuple of tuples, which stands for "
                         "each element in turn; it cannot be assigned in the loop", id);
        else if (r == 1 && at)
            r = 0;
        else if (r == 1 && f->n_unrolled == FE_MAX_UNROLLED)
            r = fe_error(f, t, "loops over constant tuples bind more than %d names at once", FE_MAX_UNROLLED);
        if (r == 1) {
            int k = f->n_unrolled++;
            f->unrolled[k].name = id; /* borrowed: the target's node holds it */
            f->unrolled[k].elt = elt;
            f->unrolled[k].value = v;
            f->unrolled[k].loc = loc;
        }
        Py_XDECREF(id);
        return r;
    }
    if (!(fe_is_kind(t, "Tuple") || fe_is_kind(t, "List")) || !is_tuple(elt, v))
        return 0;
    PyObject *targets = fe_get_list(t, "elts"), *list;
    Py_ssize_t n = parts(elt, v, &list);
    int r = targets && n >= 0 ? (n == PyList_GET_SIZE(targets)) : -1;
    for (Py_ssize_t i = 0; r == 1 && i < n; i++)
        r = bind(f, PyList_GET_ITEM(targets, i), list ? PyList_GET_ITEM(list, i) : NULL,
                 list ? NULL : PyTuple_GET_ITEM(v, i), loc, body);
    Py_XDECREF(targets);
    Py_XDECREF(list);
    return r;
}

/* Whether `t = element` is a kernel's assignment: no name of t would hold a tuple. */
static int assignable(PyObject *t, PyObject *elt, PyObject *v) {
    if (fe_is_kind(t, "Name"))
        return !is_tuple(elt, v);
    PyObject *targets = fe_get_list(t, "elts"), *list;
    Py_ssize_t n = parts(elt, v, &list);
    int r = targets && n == PyList_GET_SIZE(targets);
    for (Py_ssize_t i = 0; r && i < n; i++)
        r = assignable(PyList_GET_ITEM(targets, i), list ? PyList_GET_ITEM(list, i) : NULL,
                       list ? NULL : PyTuple_GET_ITEM(v, i));
    Py_XDECREF(targets);
    Py_XDECREF(list);
    PyErr_Clear();
    return r;
}

/* for x in (c0, c1, ...): the body once per element, in order -- Taichi's ti.static loops over
 * offsets, unrolled when the kernel compiles (docs/language.md, "Statements and expressions").  In
 * each copy the loop's names stand for the element's parts (bind), constants where they are read;
 * after the last copy the target is assigned the last element, as Python leaves it.  Where the body
 * assigns a name, each copy instead starts with `x = c`.  The tuple is written in the loop
 * (`literal`: its elements' source) or named from the environment (`value`, a Python tuple).
 * Nothing of the loop remains: the copies go into the enclosing block, so in a kernel's serial code
 * they stay serial, and a parallel loop inside one is a parallel loop of its own.  The copies have
 * no exit: where the body has a break or continue of its own, each copy is the body of a
 * `while True` run once (st_continue leaves it; st_break also sets the loop's flag, and each later
 * copy runs only while it is unset), and assigns the variable first, which then holds the element
 * the loop ended on. */
int fe_tuple_loop(fe_func *f, PyObject *s, PyObject *t, PyObject *it, PyObject *literal, PyObject *value,
                  tack_node *block) {
    PyObject *body = fe_get_list(s, "body");
    Py_ssize_t count = literal ? PyList_GET_SIZE(literal) : PyTuple_GET_SIZE(value);
    int r = body ? 0 : -1;

    for (Py_ssize_t i = 0; r == 0 && literal && i < count; i++) {
        int c = constant_elt(f, PyList_GET_ITEM(literal, i));
        if (c == 0)
            r = fe_error(f, PyList_GET_ITEM(literal, i), "a loop over a tuple in a kernel is unrolled when it "
                         "compiles, so its elements must be constants: numbers, tuples of numbers or vectors "
                         "of numbers (tack.vec2i(0, 1)); loop over range(len(...)) for values known at run time");
        else if (c < 0)
            r = -1;
    }
    PyObject *exit = r == 0 ? loop_exit(body, NULL) : NULL;
    int exits = exit != NULL, saved_exit = f->tuple_exit;
    if (exits && refuse_exit_around_pfor(f, body, exit, block) < 0)
        r = -1, exits = 0;
    PyObject *flag = NULL, *saved_flag = f->tuple_flag;
    if (exits && loop_exit(body, "Break")) { /* _tack_tuple_break = False: set by a copy's break */
        flag = PyUnicode_FromFormat("_tack_tuple_break%d", ++f->chain_tmp);
        tack_node *a = flag ? fe_node(f, s, TACK_N_ASSIGN) : NULL;
        if (!a || fe_add(a, fe_flag_name(f, s, flag), f) < 0 || fe_add(a, fe_bool_const(f, s, 0), f) < 0 ||
            fe_add(block, a, f) < 0)
            r = -1;
    }
    for (Py_ssize_t i = 0; r == 0 && i < count; i++) {
        PyObject *elt = literal ? PyList_GET_ITEM(literal, i) : NULL, *v = value ? PyTuple_GET_ITEM(value, i) : NULL;
        tack_node *dest = block;
        if (exits) { /* if not _tack_tuple_break: while True: <copy> break */
            tack_node *into = block, *w = fe_node(f, s, TACK_N_WHILE), *wb = fe_node(f, s, TACK_N_BLOCK);
            if (flag && i > 0) {
                tack_node *c = fe_node(f, s, TACK_N_IF), *no = fe_node(f, s, TACK_N_UNARYOP);
                into = fe_node(f, s, TACK_N_BLOCK);
                if (no)
                    tack_node_set_op(no, TACK_OP_NOT);
                if (!c || !no || fe_add(no, fe_flag_name(f, s, flag), f) < 0 || fe_add(c, no, f) < 0 ||
                    fe_add(c, into, f) < 0 || fe_add(c, fe_node(f, s, TACK_N_BLOCK), f) < 0 || fe_add(block, c, f) < 0)
                    r = -1;
            }
            if (r < 0 || !w || fe_add(w, fe_bool_const(f, s, 1), f) < 0 || fe_add(w, wb, f) < 0 || fe_add(into, w, f) < 0) {
                r = -1;
                break;
            }
            dest = wb;
        }
        int base = f->n_unrolled, b = bind(f, t, elt, v, it, body);
        f->tuple_exit = exits;
        f->tuple_flag = flag;
        if (b < 0) {
            r = -1;
        } else if (b == 0 || (exits && assignable(t, elt, v))) {
            /* the body assigns the variable, or may leave the loop with it: each copy assigns it first */
            if (b == 0)
                f->n_unrolled = base;
            tack_node *a = fe_node(f, s, TACK_N_ASSIGN);
            if (!a || fe_add(a, fe_target(f, t), f) < 0 ||
                fe_add(a, elt ? fe_expr(f, elt, 0) : constant_value(f, it, v), f) < 0 || fe_add(dest, a, f) < 0)
                r = -1;
        }
        if (r == 0)
            r = fe_block(f, body, dest);
        f->tuple_exit = saved_exit;
        f->tuple_flag = saved_flag;
        if (r == 0 && exits && fe_add(dest, fe_node(f, s, TACK_N_BREAK), f) < 0)
            r = -1;
        if (r == 0 && b == 1 && !exits && i == count - 1 && assignable(t, elt, v)) {
            /* after the loop, x is the last element */
            tack_node *a = fe_node(f, s, TACK_N_ASSIGN);
            if (!a || fe_add(a, fe_target(f, t), f) < 0 ||
                fe_add(a, elt ? fe_expr(f, elt, 0) : constant_value(f, it, v), f) < 0 || fe_add(block, a, f) < 0)
                r = -1;
        }
        f->n_unrolled = base;
    }
    Py_XDECREF(flag);
    Py_XDECREF(body);
    return r;
}
