/*
 * frontend.c -- from a Python function to Tack's kernel AST.
 *
 * The front end is where a kernel stops being Python.  tpy_frontend_build()
 * takes the function given to @tack.kernel and returns a new tack_module
 * (tack_kernel.h) holding it and every @tack.func it reaches; the compiler
 * (src/compiler/) types and lowers that module once per argument signature,
 * and the Kernel object (kernel.c) keeps it for every later signature.
 *
 * Seven files share the work (frontend.h):
 *
 *   frontend_source.c  fetch the source, parse it with CPython's `ast`,
 *                      and locate nodes and errors in the file
 *   frontend_env.c     resolve free names in the function's environment
 *   frontend_expr.c    walk expressions
 *   frontend_methods.c method calls: NumPy's spellings, Taichi's refused
 *   frontend_unroll.c  unroll loops over constant tuples
 *   frontend_refuse.c  refuse the calls a kernel cannot make, saying what to write
 *   frontend.c         walk statements and functions (this file)
 *
 * Per function, fe_function() parses the source, sets up the environment
 * (which names are locals, where the others come from), adds the function to
 * the module, walks its parameters and annotations (fe_signature) and then
 * its body.  A @tack.func called from a kernel is walked the same way, as a
 * device function of the same module, once per module (the memo), and a
 * function that reaches itself again is refused: kernels do not recurse.
 *
 * The statement walk dispatches on the ast class name through one static
 * table, stmt_kinds, like the expression walk: each entry walks its kind or
 * says why a kernel cannot have it ("'try' statements are not supported in
 * kernels").  A statement appends its node(s) to the enclosing BLOCK; the
 * one statement that becomes several nodes is a chained assignment
 * (a = b = f(x)), which evaluates its value once through a temporary.
 */
#include "frontend.h"

/* ---------------------------------------------------------------- targets */


static tack_node *tg_name(fe_func *f, PyObject *t) {
    PyObject *id = PyObject_GetAttrString(t, "id");
    tack_node *n = id ? fe_node(f, t, TACK_N_NAME) : NULL;
    if (n && fe_set_name(f, n, id) < 0)
        n = NULL;
    Py_XDECREF(id);
    return n;
}


/* a, b = ... and [a, b] = ...: a TUPLE of targets. */
static tack_node *tg_tuple(fe_func *f, PyObject *t) {
    PyObject *elts = fe_get_list(t, "elts");
    tack_node *n = NULL;
    if (elts && (n = fe_node(f, t, TACK_N_TUPLE)) != NULL) {
        for (Py_ssize_t i = 0; n && i < PyList_GET_SIZE(elts); i++) {
            PyObject *item = PyList_GET_ITEM(elts, i);
            if (fe_is_kind(item, "Starred")) {
                fe_error(f, item, "starred assignment targets are not supported in kernels");
                n = NULL;
            } else if (fe_add(n, fe_target(f, item), f) < 0) {
                n = NULL;
            }
        }
    }
    Py_XDECREF(elts);
    return n;
}

/* v.y = s, q.w = s, t.p = v, t.p.x = s: an ATTRIBUTE node over the expression
 * it is an attribute of, which lowering turns into component stores of the
 * local at its root (lower_stmt.c says which targets exist).  A target rooted
 * anywhere but at a local or a parameter -- a module's attribute, a global --
 * is refused here, naming the target: a kernel's globals are constants. */
static tack_node *tg_attribute(fe_func *f, PyObject *t) {
    PyObject *root = PyObject_GetAttrString(t, "value"), *attr = NULL, *id = NULL;
    tack_node *n = NULL;
    int local = 0;

    while (root && (fe_is_kind(root, "Attribute") || fe_is_kind(root, "Subscript"))) {
        PyObject *next = PyObject_GetAttrString(root, "value");
        Py_DECREF(root);
        root = next;
    }
    if (!root)
        return NULL;
    if (fe_is_kind(root, "Name") && (id = PyObject_GetAttrString(root, "id")) != NULL)
        local = PySet_Contains(f->locals, id);
    if (local == 1) {
        attr = PyObject_GetAttrString(t, "attr");
        n = attr ? fe_node(f, t, TACK_N_ATTRIBUTE) : NULL;
        if (n && (fe_set_name(f, n, attr) < 0 || fe_add(n, fe_field(f, t, "value", 0), f) < 0))
            n = NULL;
    } else if (local == 0 && !PyErr_Occurred()) {
        PyObject *src = fe_unparse(f, t);
        if (id)
            fe_error(f, t, "cannot assign to '%U' in a kernel: '%U' is not a local variable (globals and "
                           "modules are read-only constants); only a component of a local vector, "
                           "quaternion or transform can be assigned by name (v.x = s)", src, id);
        else
            fe_error(f, t, "cannot assign to '%U' in a kernel: only a component of a local vector, "
                           "quaternion or transform can be assigned by name (v.x = s)", src);
        Py_XDECREF(src);
    }
    Py_DECREF(root);
    Py_XDECREF(id);
    Py_XDECREF(attr);
    return n;
}

static const struct {
    const char *kind;
    tack_node *(*walk)(fe_func *f, PyObject *t);
} target_kinds[] = {
    {"Name", tg_name},
    {"Subscript", fe_subscript},
    {"Tuple", tg_tuple},
    {"List", tg_tuple},
    {"Attribute", tg_attribute},
};

/* An assignment target: NAME, SUBSCRIPT, ATTRIBUTE or TUPLE of targets. */
tack_node *fe_target(fe_func *f, PyObject *t) {
    const char *k = fe_kind(t);
    size_t i = 0, count = sizeof target_kinds / sizeof target_kinds[0];
    tack_node *n = NULL;

    while (i < count && strcmp(target_kinds[i].kind, k) != 0)
        i++;
    if (i < count)
        n = target_kinds[i].walk(f, t);
    else
        fe_error(f, t, "cannot assign to this expression (%s) in a kernel", k);
    if (!n && !PyErr_Occurred())
        tpy_raise();
    return n;
}

/* ------------------------------------------------------------- statements */

/* A field of `s` that is a list of statements, as a new BLOCK node. */
static tack_node *fe_block_field(fe_func *f, PyObject *s, const char *field, PyObject *loc) {
    PyObject *list = fe_get_list(s, field);
    tack_node *b;
    if (!list)
        return NULL;
    b = fe_node(f, PyList_GET_SIZE(list) > 0 ? PyList_GET_ITEM(list, 0) : loc, TACK_N_BLOCK);
    if (b && fe_block(f, list, b) < 0)
        b = NULL;
    Py_DECREF(list);
    return b;
}

/* Refuse a non-empty `orelse` of a loop. */
static int no_orelse(fe_func *f, PyObject *s, const char *loop) {
    PyObject *orelse = fe_get_list(s, "orelse");
    int r = 0;
    if (!orelse)
        return -1;
    if (PyList_GET_SIZE(orelse) > 0)
        r = fe_error(f, PyList_GET_ITEM(orelse, 0),
                     "'%s ... else' is not supported in kernels", loop);
    Py_DECREF(orelse);
    return r;
}

/* Assign: the ASSIGN node of the last (usually only) target, which the
 * caller appends; the earlier ones of a chain go into `block` first. */
static tack_node *fe_assign(fe_func *f, PyObject *s, tack_node *block) {
    PyObject *targets = fe_get_list(s, "targets"), *value = NULL;
    tack_node *n = NULL;
    Py_ssize_t nt;
    if (!targets)
        return NULL;
    value = PyObject_GetAttrString(s, "value");
    if (!value)
        goto done;
    nt = PyList_GET_SIZE(targets);
    if (nt == 1) {
        if ((n = fe_node(f, s, TACK_N_ASSIGN)) != NULL &&
            (fe_add(n, fe_target(f, PyList_GET_ITEM(targets, 0)), f) < 0 ||
             fe_add(n, fe_expr(f, value, 0), f) < 0))
            n = NULL;
        goto done;
    }
    /* a = b = v: Python evaluates v once and assigns it to a, then b.  A
     * constant or name is simply repeated; anything else goes through a
     * temporary so it is evaluated once. */
    {
        int simple = fe_is_kind(value, "Constant") || fe_is_kind(value, "Name");
        PyObject *tmpname = NULL;
        if (!simple) {
            tmpname = PyUnicode_FromFormat("_tack_chain%d", ++f->chain_tmp);
            if (!tmpname)
                goto done;
            tack_node *a = fe_node(f, s, TACK_N_ASSIGN), *t = a ? fe_node(f, s, TACK_N_NAME) : NULL;
            if (!t || fe_set_name(f, t, tmpname) < 0 || fe_add(a, t, f) < 0 ||
                fe_add(a, fe_expr(f, value, 0), f) < 0 || fe_add(block, a, f) < 0) {
                Py_DECREF(tmpname);
                goto done;
            }
        }
        for (Py_ssize_t i = 0; i < nt; i++) {
            tack_node *a = fe_node(f, s, TACK_N_ASSIGN), *v;
            if (!a || fe_add(a, fe_target(f, PyList_GET_ITEM(targets, i)), f) < 0)
                break;
            if (simple) {
                v = fe_expr(f, value, 0);
            } else {
                v = fe_node(f, value, TACK_N_NAME);
                if (v && fe_set_name(f, v, tmpname) < 0)
                    v = NULL;
            }
            if (fe_add(a, v, f) < 0)
                break;
            if (i == nt - 1) {
                n = a; /* the caller appends the last one */
                break;
            }
            if (fe_add(block, a, f) < 0)
                break;
        }
        Py_XDECREF(tmpname);
    }
done:
    Py_DECREF(targets);
    Py_XDECREF(value);
    return n;
}

/* Each statement kind appends its node(s) to `block`; 0, or -1 with an
 * exception (fe_add of a NULL node is -1). */
static int st_expr(fe_func *f, PyObject *s, tack_node *block) {
    PyObject *v = PyObject_GetAttrString(s, "value");
    tack_node *n = NULL;
    int r = -1;

    if (!v)
        goto done;
    if (fe_is_kind(v, "Constant")) {
        r = 0; /* a docstring or a bare constant does nothing */
        goto done;
    }
    if ((n = fe_node(f, s, TACK_N_EXPR)) != NULL && fe_add(n, fe_expr(f, v, 0), f) < 0)
        n = NULL;
    r = fe_add(block, n, f);
done:
    Py_XDECREF(v);
    return r;
}

static int st_assign(fe_func *f, PyObject *s, tack_node *block) {
    return fe_add(block, fe_assign(f, s, block), f);
}

static int st_augassign(fe_func *f, PyObject *s, tack_node *block) {
    PyObject *t = PyObject_GetAttrString(s, "target");
    tack_node *n = NULL;
    tack_op op;

    if (t && fe_op(f, s, &op) == 0 && (n = fe_node(f, s, TACK_N_AUGASSIGN)) != NULL) {
        tack_node_set_op(n, op);
        if (fe_add(n, fe_target(f, t), f) < 0 || fe_add(n, fe_field(f, s, "value", 0), f) < 0)
            n = NULL;
    }
    Py_XDECREF(t);
    return fe_add(block, n, f);
}

/* The words a rewrite's local is named by in messages: a struct rewrite
 * (tack._structs) declares the temporary holding a value stored into a
 * field with `tack_shown` set on its statement ("b[i].xf"); it becomes a
 * fourth kid, a CONST_STR, which lowering gives the local.  0 when none. */
static int shown_as(fe_func *f, PyObject *s, tack_node *n) {
    PyObject *shown = PyObject_GetAttrString(s, "tack_shown");
    tack_node *k = NULL;
    int r = 0;
    if (!shown) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    if (PyUnicode_Check(shown)) {
        k = fe_node(f, s, TACK_N_CONST_STR);
        r = !k || fe_set_name(f, k, shown) < 0 || fe_add(n, k, f) < 0 ? -1 : 0;
    }
    Py_DECREF(shown);
    return r;
}

/* x: f32 = v (the value is optional). */
static int st_annassign(fe_func *f, PyObject *s, tack_node *block) {
    PyObject *t = PyObject_GetAttrString(s, "target"), *ann = NULL, *v = NULL;
    tack_node *n = NULL;

    if (!t)
        goto done;
    if (!fe_is_kind(t, "Name")) {
        fe_error(f, t, "only a plain name can be annotated in a kernel");
    } else if ((ann = PyObject_GetAttrString(s, "annotation")) != NULL &&
               (v = PyObject_GetAttrString(s, "value")) != NULL &&
               (n = fe_node(f, s, TACK_N_ANNASSIGN)) != NULL) {
        if (fe_add(n, fe_target(f, t), f) < 0 || fe_add(n, fe_annotation(f, ann), f) < 0 ||
            (v != Py_None && fe_add(n, fe_expr(f, v, 0), f) < 0))
            n = NULL;
        else if (v != Py_None && shown_as(f, s, n) < 0)
            n = NULL;
    }
done:
    Py_XDECREF(t);
    Py_XDECREF(ann);
    Py_XDECREF(v);
    return fe_add(block, n, f);
}

static int st_if(fe_func *f, PyObject *s, tack_node *block) {
    tack_node *n = fe_node(f, s, TACK_N_IF);
    if (n && (fe_add(n, fe_field(f, s, "test", 0), f) < 0 ||
              fe_add(n, fe_block_field(f, s, "body", s), f) < 0 ||
              fe_add(n, fe_block_field(f, s, "orelse", s), f) < 0))
        n = NULL;
    return fe_add(block, n, f);
}

/* for target in range(...) / tack.ndrange(...), or over a constant tuple (tuple_loop). */
static int st_for(fe_func *f, PyObject *s, tack_node *block) {
    PyObject *t = NULL, *it = NULL;
    tack_node *n = NULL, *iter;

    if (no_orelse(f, s, "for") < 0)
        goto done;
    if (!(t = PyObject_GetAttrString(s, "target")) || !(it = PyObject_GetAttrString(s, "iter")))
        goto done;
    if (fe_is_kind(it, "Tuple") || fe_is_kind(it, "List")) {
        PyObject *elts = fe_get_list(it, "elts");
        int r = elts ? fe_tuple_loop(f, s, t, it, elts, NULL, block) : -1;
        Py_XDECREF(elts);
        Py_DECREF(t);
        Py_DECREF(it);
        return r;
    }
    if (fe_is_kind(it, "Name") || fe_is_kind(it, "Attribute")) {
        PyObject *obj = NULL;
        int r = fe_resolve_chain(f, it, &obj);
        if (r == 1 && PyTuple_Check(obj)) {
            r = fe_tuple_loop(f, s, t, it, NULL, obj, block);
            Py_DECREF(obj);
            Py_DECREF(t);
            Py_DECREF(it);
            return r;
        }
        Py_XDECREF(obj);
        if (r < 0)
            goto done;
    }
    if (!(n = fe_node(f, s, TACK_N_FOR)) || fe_add(n, fe_target(f, t), f) < 0) {
        n = NULL;
        goto done;
    }
    f->last_intrinsic = NULL;
    iter = fe_expr(f, it, 0);
    if (iter && !(fe_is_kind(it, "Call") && f->last_intrinsic &&
                  (strcmp(f->last_intrinsic, "range") == 0 ||
                   strcmp(f->last_intrinsic, "ndrange") == 0 ||
                   strcmp(f->last_intrinsic, "independent") == 0 ||
                   strcmp(f->last_intrinsic, "blocks") == 0))) {
        fe_error(f, it, "a for loop in a kernel must iterate over range(...), "
                        "tack.ndrange(...), tack.blocks(...) or a tuple of constants; to visit an array's "
                        "elements, loop over its indices: 'for i in range(len(a)):' and 'v = a[i]'");
        iter = NULL;
    }
    int saved = f->tuple_exit;
    f->tuple_exit = 0; /* its break and continue are its own */
    if (fe_add(n, iter, f) < 0 || fe_add(n, fe_block_field(f, s, "body", s), f) < 0)
        n = NULL;
    f->tuple_exit = saved;
done:
    Py_XDECREF(t);
    Py_XDECREF(it);
    return fe_add(block, n, f);
}

static int st_while(fe_func *f, PyObject *s, tack_node *block) {
    tack_node *n = NULL;
    int saved = f->tuple_exit;
    f->tuple_exit = 0; /* its break and continue are its own */
    if (no_orelse(f, s, "while") == 0 && (n = fe_node(f, s, TACK_N_WHILE)) != NULL &&
        (fe_add(n, fe_field(f, s, "test", 0), f) < 0 ||
         fe_add(n, fe_block_field(f, s, "body", s), f) < 0))
        n = NULL;
    f->tuple_exit = saved;
    return fe_add(block, n, f);
}

/* In a copy of a loop over a constant tuple (tuple_loop), the copy is the body of a `while True`
 * that runs once: its continue leaves that while, and its break sets the loop's flag first, so
 * the copies after it do not run. */
static int st_break(fe_func *f, PyObject *s, tack_node *block) {
    if (f->tuple_exit && f->tuple_flag) {
        tack_node *a = fe_node(f, s, TACK_N_ASSIGN);
        if (!a || fe_add(a, fe_flag_name(f, s, f->tuple_flag), f) < 0 || fe_add(a, fe_bool_const(f, s, 1), f) < 0 ||
            fe_add(block, a, f) < 0)
            return -1;
    }
    return fe_add(block, fe_node(f, s, TACK_N_BREAK), f);
}

static int st_continue(fe_func *f, PyObject *s, tack_node *block) {
    return fe_add(block, fe_node(f, s, f->tuple_exit ? TACK_N_BREAK : TACK_N_CONTINUE), f);
}

static int st_pass(fe_func *f, PyObject *s, tack_node *block) {
    return fe_add(block, fe_node(f, s, TACK_N_PASS), f);
}

static int st_return(fe_func *f, PyObject *s, tack_node *block) {
    PyObject *v = PyObject_GetAttrString(s, "value");
    tack_node *n = NULL;
    if (v && (n = fe_node(f, s, TACK_N_RETURN)) != NULL && v != Py_None &&
        fe_add(n, fe_expr(f, v, 0), f) < 0)
        n = NULL;
    Py_XDECREF(v);
    return fe_add(block, n, f);
}

/* assert test[, "message"]: the message must be a string literal. */
static int st_assert(fe_func *f, PyObject *s, tack_node *block) {
    PyObject *msg = PyObject_GetAttrString(s, "msg");
    tack_node *n = NULL;
    int is_str = 0;

    if (!msg)
        goto done;
    if (msg != Py_None && fe_is_kind(msg, "Constant")) {
        PyObject *v = PyObject_GetAttrString(msg, "value");
        is_str = v && PyUnicode_Check(v);
        Py_XDECREF(v);
        PyErr_Clear();
    }
    if (msg != Py_None && !is_str) {
        fe_error(f, msg, "an assert message in a kernel must be a string literal");
    } else if ((n = fe_node(f, s, TACK_N_ASSERT)) != NULL) {
        if (fe_add(n, fe_field(f, s, "test", 0), f) < 0 ||
            (msg != Py_None && fe_add(n, fe_expr(f, msg, FE_ALLOW_STR), f) < 0))
            n = NULL;
    }
done:
    Py_XDECREF(msg);
    return fe_add(block, n, f);
}

typedef int (*stmt_walk)(fe_func *f, PyObject *s, tack_node *block);

/* Every statement kind the walk knows: a walk function, or the message that
 * refuses it. */
static const struct {
    const char *kind;
    stmt_walk walk;
    const char *refused;
} stmt_kinds[] = {
    {"Assign", st_assign, NULL},
    {"Expr", st_expr, NULL},
    {"AugAssign", st_augassign, NULL},
    {"If", st_if, NULL},
    {"For", st_for, NULL},
    {"AnnAssign", st_annassign, NULL},
    {"Return", st_return, NULL},
    {"While", st_while, NULL},
    {"Break", st_break, NULL},
    {"Continue", st_continue, NULL},
    {"Pass", st_pass, NULL},
    {"Assert", st_assert, NULL},
    {"FunctionDef", NULL, "nested functions are not supported in kernels; define the function "
                          "at module level and decorate it with @tack.func"},
    {"AsyncFunctionDef", NULL, "nested functions are not supported in kernels"},
    {"ClassDef", NULL, "classes are not supported in kernels"},
    {"Import", NULL, "import statements are not supported in kernels; import at module level"},
    {"ImportFrom", NULL, "import statements are not supported in kernels; import at module level"},
    {"Global", NULL, "'global' is not supported in kernels; globals are read-only constants"},
    {"Nonlocal", NULL, "'nonlocal' is not supported in kernels"},
    {"With", NULL, "'with' statements are not supported in kernels"},
    {"AsyncWith", NULL, "'async with' is not supported in kernels"},
    {"AsyncFor", NULL, "'async for' is not supported in kernels"},
    {"Try", NULL, "'try' statements are not supported in kernels"},
    {"TryStar", NULL, "'try' statements are not supported in kernels"},
    {"Raise", NULL, "'raise' is not supported in kernels; use assert"},
    {"Delete", NULL, "'del' is not supported in kernels"},
    {"Match", NULL, "'match' statements are not supported in kernels"},
    {"TypeAlias", NULL, "'type' statements are not supported in kernels"},
};

/* Walk statement `s`, appending its node(s) to `block`. */
static int fe_stmt(fe_func *f, PyObject *s, tack_node *block) {
    const char *k = fe_kind(s);
    size_t i = 0, count = sizeof stmt_kinds / sizeof stmt_kinds[0];
    int r = -1;

    while (i < count && strcmp(stmt_kinds[i].kind, k) != 0)
        i++;
    if (Py_EnterRecursiveCall(" while compiling a kernel statement"))
        return -1;
    if (i == count)
        fe_error(f, s, "this statement (%s) is not supported in kernels", k);
    else if (!stmt_kinds[i].walk)
        fe_error(f, s, "%s", stmt_kinds[i].refused);
    else
        r = stmt_kinds[i].walk(f, s, block);
    Py_LeaveRecursiveCall();
    if (r < 0 && !PyErr_Occurred())
        tpy_raise();
    return r;
}

int fe_block(fe_func *f, PyObject *stmts, tack_node *block) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(stmts); i++)
        if (fe_stmt(f, PyList_GET_ITEM(stmts, i), block) < 0)
            return -1;
    return 0;
}

/* -------------------------------------------------------------- functions */

/* Parameters and the return annotation of FunctionDef `fdef`. */
static int fe_signature(fe_func *f, int index, PyObject *fdef, tack_function_kind kind) {
    PyObject *args = NULL, *lists[2] = {NULL, NULL}, *v = NULL, *returns = NULL;
    int r = -1;
    static const char *refused[][2] = {
        {"vararg", "*args parameters are not supported in kernels"},
        {"kwarg", "**kwargs parameters are not supported in kernels"},
    };

    args = PyObject_GetAttrString(fdef, "args");
    if (!args)
        goto done;
    for (int i = 0; i < 2; i++) {
        v = PyObject_GetAttrString(args, refused[i][0]);
        if (!v)
            goto done;
        if (v != Py_None) {
            fe_error(f, v, "%s", refused[i][1]);
            goto done;
        }
        Py_CLEAR(v);
    }
    v = fe_get_list(args, "kwonlyargs");
    if (!v)
        goto done;
    if (PyList_GET_SIZE(v) > 0) {
        fe_error(f, PyList_GET_ITEM(v, 0), "keyword-only parameters are not supported in kernels");
        goto done;
    }
    Py_CLEAR(v);
    if (PyObject_HasAttrString(args, "posonlyargs") && !(lists[0] = fe_get_list(args, "posonlyargs")))
        goto done;
    if (!(lists[1] = fe_get_list(args, "args")))
        goto done;
    for (int l = 0; l < 2; l++) {
        for (Py_ssize_t i = 0; lists[l] && i < PyList_GET_SIZE(lists[l]); i++) {
            PyObject *a = PyList_GET_ITEM(lists[l], i), *name, *ann;
            tack_node *ann_node = NULL;
            const char *cname;
            tack_status st;
            name = PyObject_GetAttrString(a, "arg");
            if (!name)
                goto done;
            ann = PyObject_GetAttrString(a, "annotation");
            if (!ann) {
                Py_DECREF(name);
                goto done;
            }
            if (ann != Py_None)
                ann_node = fe_annotation(f, ann);
            Py_DECREF(ann);
            cname = PyUnicode_AsUTF8(name);
            if (!cname || (ann == Py_None ? 0 : !ann_node)) {
                Py_DECREF(name);
                goto done;
            }
            st = tack_function_add_param(f->mc->mod, index, cname, ann_node);
            Py_DECREF(name);
            if (st != TACK_OK) {
                tpy_raise();
                goto done;
            }
        }
    }
    returns = PyObject_GetAttrString(fdef, "returns");
    if (!returns)
        goto done;
    if (returns != Py_None && !(fe_is_kind(returns, "Constant") &&
                                (v = PyObject_GetAttrString(returns, "value")) == Py_None)) {
        tack_node *rn;
        if (kind == TACK_FUNC_KERNEL) {
            fe_error(f, returns, "a kernel returns nothing; remove the return annotation");
            goto done;
        }
        rn = fe_annotation(f, returns);
        if (!rn)
            goto done;
        if (tack_function_set_returns(f->mc->mod, index, rn) != TACK_OK) {
            tpy_raise();
            goto done;
        }
    }
    r = 0;
done:
    if (r < 0 && !PyErr_Occurred())
        tpy_raise();
    Py_XDECREF(args);
    Py_XDECREF(lists[0]);
    Py_XDECREF(lists[1]);
    Py_XDECREF(v);
    Py_XDECREF(returns);
    return r;
}

/* Add `fn` to the module as a function of `kind` (once per `key` for device
 * functions) and walk its body.  0 with *out_index, -1 with an exception. */
int fe_function(fe_module *mc, PyObject *key, PyObject *fn, tack_function_kind kind,
                int *out_index) {
    fe_func f;
    PyObject *fdef = NULL, *original = NULL, *code, *body = NULL, *idx = NULL;
    const char *cname, *cfile, *csrc;
    tack_node *block;
    int index = -1, r = -1, pushed = 0;

    memset(&f, 0, sizeof f);
    f.mc = mc;
    f.fn = fn;
    if (kind == TACK_FUNC_DEVICE) {
        PyObject *known = PyDict_GetItemWithError(mc->memo, key);
        if (known) {
            *out_index = (int)PyLong_AsLong(known);
            return 0;
        }
        if (PyErr_Occurred())
            return -1;
    }
    if (!PyFunction_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "a kernel must be a Python function, not %.100s",
                     Py_TYPE(fn)->tp_name);
        return -1;
    }
    code = PyFunction_GetCode(fn); /* borrowed */
    f.filename = Py_NewRef(((PyCodeObject *)code)->co_filename);
    f.name = PyObject_GetAttrString(fn, "__name__");
    if (!f.name)
        goto done;
    fdef = fe_parse(&f, fn, &original);
    if (!fdef)
        goto done;
    body = fe_get_list(fdef, "body");
    if (!body || fe_env_init(&f, fn, body) < 0)
        goto done;
    cname = PyUnicode_AsUTF8(f.name);
    cfile = PyUnicode_AsUTF8(f.shown ? f.shown : f.filename);
    csrc = PyUnicode_AsUTF8(original);
    if (!cname || !cfile || !csrc)
        goto done;
    index = tack_module_add_function(mc->mod, kind, cname, cfile, f.first_line, csrc);
    if (index < 0) {
        tpy_raise();
        goto done;
    }
    if (kind == TACK_FUNC_DEVICE) {
        idx = PyLong_FromLong(index);
        if (!idx || PyDict_SetItem(mc->memo, key, idx) < 0)
            goto done;
    }
    if (PyList_Append(mc->in_progress, key) < 0)
        goto done;
    pushed = 1;
    if (fe_signature(&f, index, fdef, kind) < 0)
        goto done;
    block = fe_node(&f, fdef, TACK_N_BLOCK);
    f.top = kind == TACK_FUNC_KERNEL ? block : NULL;
    if (!block || fe_block(&f, body, block) < 0)
        goto done;
    if (tack_function_set_body(mc->mod, index, block) != TACK_OK) {
        tpy_raise();
        goto done;
    }
    *out_index = index;
    r = 0;
done:
    if (pushed) {
        PyObject *exc = PyErr_Occurred() ? fe_fetch_exception() : NULL;
        Py_ssize_t len = PyList_GET_SIZE(mc->in_progress);
        if (PyList_SetSlice(mc->in_progress, len - 1, len, NULL) < 0)
            PyErr_Clear();
        if (exc)
            fe_restore_exception(exc);
    }
    Py_XDECREF(fdef);
    Py_XDECREF(original);
    Py_XDECREF(body);
    Py_XDECREF(idx);
    Py_XDECREF(f.name);
    Py_XDECREF(f.builtins);
    Py_XDECREF(f.cells);
    Py_XDECREF(f.locals);
    Py_XDECREF(f.lines);
    Py_XDECREF(f.filename);
    Py_XDECREF(f.shown);
    return r;
}

/* Build a new module holding kernel `fn` (function 0 or the returned index)
 * and every @tack.func it reaches. */
int tpy_frontend_build(tpy_state *st, PyObject *fn, tack_module **out_module, int *out_index,
                       PyObject **out_captures) {
    fe_module mc;
    int r = -1, index = -1;

    memset(&mc, 0, sizeof mc);
    mc.st = st;
    *out_module = NULL;
    *out_captures = NULL;
    if (!st->kernel_extra) {
        PyErr_SetString(PyExc_RuntimeError,
                        "tack._core: the intrinsics registry is not set (tack._intrinsics sets it "
                        "with _core._set_intrinsics() when imported)");
        return -1;
    }
    mc.intrinsics = Py_NewRef(st->kernel_extra);
    if (PyDict_GetItemString(PyImport_GetModuleDict(), "numpy")) {
        /* NumPy's math functions join the registry once the program has
         * imported NumPy (Tack itself does not import it). */
        PyObject *kernels = PyImport_ImportModule("tack._intrinsics");
        PyObject *r = kernels ? PyObject_CallMethod(kernels, "_register_numpy", NULL) : NULL;
        Py_XDECREF(kernels);
        if (!r)
            goto done;
        Py_DECREF(r);
    }
    mc.ast = PyImport_ImportModule("ast");
    mc.memo = PyDict_New();
    mc.in_progress = PyList_New(0);
    mc.captures = PyList_New(0);
    if (!mc.ast || !mc.memo || !mc.in_progress || !mc.captures)
        goto done;
    if (tack_module_new(&mc.mod) != TACK_OK) {
        tpy_raise();
        goto done;
    }
    if (fe_function(&mc, fn, fn, TACK_FUNC_KERNEL, &index) < 0)
        goto done;
    *out_module = mc.mod;
    *out_index = index;
    *out_captures = mc.captures;
    mc.captures = NULL;
    mc.mod = NULL;
    r = 0;
done:
    if (mc.mod)
        tack_module_free(mc.mod);
    Py_XDECREF(mc.intrinsics);
    Py_XDECREF(mc.ast);
    Py_XDECREF(mc.memo);
    Py_XDECREF(mc.in_progress);
    Py_XDECREF(mc.captures);
    return r;
}
