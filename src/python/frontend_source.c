/*
 * frontend_source.c -- a kernel's source text, its parse and its locations.
 *
 * A kernel is an ordinary Python function, so the front end starts where
 * Python itself starts: from the function's source.  The package hands the
 * extension a getsourcelines hook once, at import (tack._source's, which is
 * inspect's without tokenize's start-up cost; inspect itself where in
 * doubt), and this file asks CPython's own parser for the tree (ast.parse).
 * Reusing Python's parser means every piece of syntax is read exactly as
 * Python reads it, and the line/column numbers are Python's.
 *
 * An indented function (a method, or one defined inside another function)
 * is parsed as the body of "if 1:" rather than dedented: dedenting fails on
 * a comment or string line less indented than the def, and this way the
 * columns Python reports are the file's.  The lines are then one off, which
 * fe_func.shift records.
 *
 * The rest of the file is about pointing back into that text.  Every node
 * the walk builds carries the file line and column of its ast object, and
 * every refusal is a tack.CompileError (a SyntaxError) carrying file, line,
 * column and the source line, so Python's traceback prints a caret under
 * the offending code.  Columns: Python's col_offset counts UTF-8 bytes;
 * Tack's nodes use 0-based and CompileError 1-based character columns, so
 * non-ASCII lines are counted again in characters.
 *
 * A function defined in a notebook cell lives in a file IPython made up (a
 * temporary file of the kernel's process, or "<ipython-input-3-...>").  The
 * hook then returns a third item, the cell's name ("Cell In[3]"), which the
 * module records as the function's file: the run-time errors and race
 * reports name the cell, and the generated source, hence the kernel cache's
 * key, is the same after a restart of the notebook's kernel.  CompileError
 * keeps the real file, which IPython's tracebacks map to the cell themselves.
 */
#include "frontend.h"

/* ----------------------------------------------------------- ast fields */

/* getattr(node, name) as a C int; -1 with exception on failure. */
int fe_get_int_attr(PyObject *node, const char *name, long *out) {
    PyObject *v = PyObject_GetAttrString(node, name);
    if (!v)
        return -1;
    if (v == Py_None) {
        Py_DECREF(v);
        *out = -1;
        return 0;
    }
    *out = PyLong_AsLong(v);
    Py_DECREF(v);
    if (*out == -1 && PyErr_Occurred())
        return -1;
    return 0;
}

/* getattr(node, name) where the attribute must be a list; new ref. */
PyObject *fe_get_list(PyObject *node, const char *name) {
    PyObject *v = PyObject_GetAttrString(node, name);
    if (v && !PyList_Check(v)) {
        Py_DECREF(v);
        PyErr_Format(PyExc_TypeError, "ast field %s is not a list", name);
        return NULL;
    }
    return v;
}

/* ------------------------------------------------------------ locations */

/* The original source line `rel_line` (1-based, relative to the function's
 * source) as a new str, or None. */
static PyObject *source_line(fe_func *f, long rel_line) {
    if (rel_line >= 1 && rel_line <= PyList_GET_SIZE(f->lines))
        return Py_NewRef(PyList_GET_ITEM(f->lines, rel_line - 1));
    Py_RETURN_NONE;
}

/* Map a byte column (Python's col_offset) of source line `rel_line` to a
 * 1-based character column. */
static int char_column(fe_func *f, long rel_line, long col_bytes) {
    if (col_bytes < 0)
        return 0;
    if (rel_line >= 1 && rel_line <= PyList_GET_SIZE(f->lines)) {
        PyObject *line = PyList_GET_ITEM(f->lines, rel_line - 1);
        if (!PyUnicode_IS_ASCII(line)) {
            Py_ssize_t n = 0, chars = 0;
            const char *utf8 = PyUnicode_AsUTF8AndSize(line, &n);
            if (!utf8) {
                PyErr_Clear();
            } else {
                for (Py_ssize_t i = 0; i < n && i < col_bytes; i++)
                    if (((unsigned char)utf8[i] & 0xC0) != 0x80)
                        chars++;
                return (int)chars + 1;
            }
        }
    }
    return (int)col_bytes + 1;
}

/* Raise tack.CompileError (a SyntaxError subclass) at a location. */
int tpy_compile_error(tpy_state *st, const char *msg, PyObject *filename, int line, int col,
                          int end_col, PyObject *text) {
    PyObject *cls = st->CompileError ? st->CompileError : PyExc_SyntaxError;
    PyObject *loc = NULL, *args = NULL, *exc = NULL;
    if (!text)
        text = Py_None;
    if (end_col > col)
        loc = Py_BuildValue("(OiiOii)", filename ? filename : Py_None, line, col, text, line,
                            end_col);
    else
        loc = Py_BuildValue("(OiiO)", filename ? filename : Py_None, line, col, text);
    if (!loc)
        goto done;
    args = Py_BuildValue("(sO)", msg, loc);
    if (!args)
        goto done;
    exc = PyObject_Call(cls, args, NULL);
    if (!exc)
        goto done;
    PyErr_SetObject(cls, exc);
done:
    Py_XDECREF(loc);
    Py_XDECREF(args);
    Py_XDECREF(exc);
    return -1;
}

/* Raise CompileError at `node` (an ast object) with a printf-style message
 * (PyUnicode_FromFormat codes).  Keeps an exception already set (e.g. from a
 * failed getattr) as the cause.  Always returns -1. */
int fe_error(fe_func *f, PyObject *node, const char *fmt, ...) {
    va_list va;
    long lineno = 0, col = -1, end_lineno = -1, end_col = -1;
    PyObject *msg = NULL, *text = NULL, *cause = NULL;
    const char *cmsg;

    if (PyErr_Occurred())
        cause = fe_fetch_exception();
    va_start(va, fmt);
    msg = PyUnicode_FromFormatV(fmt, va);
    va_end(va);
    if (!msg)
        goto done;
    if (node) {
        if (fe_get_int_attr(node, "lineno", &lineno) < 0 || fe_get_int_attr(node, "col_offset", &col) < 0)
            PyErr_Clear();
        if (fe_get_int_attr(node, "end_lineno", &end_lineno) < 0 ||
            fe_get_int_attr(node, "end_col_offset", &end_col) < 0)
            PyErr_Clear();
        lineno -= f->shift;
        end_lineno -= f->shift;
    }
    text = source_line(f, lineno);
    cmsg = PyUnicode_AsUTF8(msg);
    if (!cmsg)
        goto done;
    {
        int c = col >= 0 ? char_column(f, lineno, col) : 0;
        int ec = (end_lineno == lineno && end_col > col) ? char_column(f, lineno, end_col) : 0;
        tpy_compile_error(f->mc->st, cmsg, f->filename,
                              lineno > 0 ? (int)lineno + f->first_line - 1 : f->first_line, c, ec,
                              text);
    }
done:
    if (cause && PyErr_Occurred()) {
        PyObject *exc = fe_fetch_exception();
        PyException_SetCause(exc, cause); /* steals cause */
        fe_restore_exception(exc);
        cause = NULL;
    }
    Py_XDECREF(cause);
    Py_XDECREF(msg);
    Py_XDECREF(text);
    return -1;
}

/* ast.fe_unparse(node) as a new str, for messages ("math.foo"); "?" on failure. */
PyObject *fe_unparse(fe_func *f, PyObject *node) {
    PyObject *s = PyObject_CallMethod(f->mc->ast, "unparse", "O", node);
    if (!s) {
        PyErr_Clear();
        s = PyUnicode_FromString("?");
    }
    return s;
}

/* A new node of `kind` at the location of ast object `pynode` (NULL: the
 * function's first line). */
tack_node *fe_node(fe_func *f, PyObject *pynode, tack_node_kind kind) {
    long lineno = 0, col = -1;
    if (pynode && PyObject_HasAttrString(pynode, "lineno")) {
        if (fe_get_int_attr(pynode, "lineno", &lineno) < 0 ||
            fe_get_int_attr(pynode, "col_offset", &col) < 0)
            return NULL;
        lineno -= f->shift;
    }
    int line = lineno > 0 ? (int)lineno + f->first_line - 1 : f->first_line;
    /* Node columns are 0-based like Python's col_offset (the compiler adds 1
     * when it reports an error); lines are the file's. */
    int c = col >= 0 ? char_column(f, lineno, col) - 1 : 0;
    tack_node *n = tack_node_new(f->mc->mod, kind, line, c);
    if (!n)
        tpy_raise();
    return n;
}

/* --------------------------------------------------------------- source */

/* Raise TypeError explaining that `fn`'s source cannot be read (the
 * inspect error is kept as the cause). */
static void no_source_error(PyObject *fn) {
    PyObject *cause = fe_fetch_exception(), *exc;
    PyObject *name = PyObject_GetAttrString(fn, "__qualname__");
    if (!name) {
        PyErr_Clear();
        name = PyUnicode_FromString("?");
    }
    PyErr_Format(PyExc_TypeError,
                 "cannot compile '%U': its source code is not available (%S). Tack compiles a "
                 "kernel from the function's source text, so define it in a file (a module, a "
                 "script or a notebook cell), not in the plain interactive interpreter or with "
                 "exec()/eval()",
                 name ? name : Py_None, cause ? cause : Py_None);
    Py_XDECREF(name);
    if (cause) {
        exc = fe_fetch_exception();
        PyException_SetCause(exc, cause);
        fe_restore_exception(exc);
    }
}

/* Whether the pending exception is an OSError that carries an errno: the
 * file could not be read (EMFILE, EACCES, EIO), as opposed to inspect's
 * "could not get source code", which has none.  The former is the cause the
 * user must see, so it propagates as it is rather than as "no source". */
static int pending_os_error_has_errno(void) {
    if (!PyErr_ExceptionMatches(PyExc_OSError))
        return 0;
    PyObject *exc = fe_fetch_exception();
    PyObject *no = exc ? PyObject_GetAttrString(exc, "errno") : NULL;
    int has = no && no != Py_None;
    if (!no)
        PyErr_Clear();
    Py_XDECREF(no);
    fe_restore_exception(exc);
    return has;
}

/* Read `fn`'s source through the getsourcelines hook and parse it (an
 * indented function as the body of "if 1:", see the top of the file).  Sets
 * f->lines, f->first_line, f->shift; returns the FunctionDef (new ref) and
 * *original (new ref). */
PyObject *fe_parse(fe_func *f, PyObject *fn, PyObject **original) {
    PyObject *getsourcelines = f->mc->st->getsourcelines;
    PyObject *res = NULL, *lnum, *text = NULL, *empty = NULL, *tree = NULL;
    PyObject *body = NULL, *inner = NULL, *fdef = NULL, *alt = NULL;
    Py_UCS4 c0;

    *original = NULL;
    if (!getsourcelines) {
        PyErr_SetString(PyExc_RuntimeError,
                        "tack._core: the getsourcelines hook is not set (the tack package sets it "
                        "with _core._set_hooks(getsourcelines=...) when imported)");
        goto done;
    }
    Py_INCREF(getsourcelines); /* a call may replace the hook */
    res = PyObject_CallOneArg(getsourcelines, fn);
    Py_DECREF(getsourcelines);
    if (!res) {
        if ((PyErr_ExceptionMatches(PyExc_OSError) && !pending_os_error_has_errno()) ||
            PyErr_ExceptionMatches(PyExc_TypeError))
            no_source_error(fn);
        goto done;
    }
    if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) < 2 || PyTuple_GET_SIZE(res) > 3 ||
        !PyList_Check(PyTuple_GET_ITEM(res, 0)) ||
        PyList_GET_SIZE(PyTuple_GET_ITEM(res, 0)) == 0 ||
        !PyUnicode_Check(PyList_GET_ITEM(PyTuple_GET_ITEM(res, 0), 0))) {
        PyErr_SetString(PyExc_TypeError, "getsourcelines returned no source");
        goto done;
    }
    f->lines = Py_NewRef(PyTuple_GET_ITEM(res, 0));
    if (PyTuple_GET_SIZE(res) == 3 && PyUnicode_Check(PyTuple_GET_ITEM(res, 2)))
        f->shown = Py_NewRef(PyTuple_GET_ITEM(res, 2)); /* a notebook cell's name */
    lnum = PyTuple_GET_ITEM(res, 1);
    f->first_line = (int)PyLong_AsLong(lnum);
    if (f->first_line == -1 && PyErr_Occurred())
        goto done;
    if (f->first_line < 1)
        f->first_line = 1;
    empty = PyUnicode_FromString("");
    if (!empty)
        goto done;
    *original = PyUnicode_Join(empty, f->lines);
    if (!*original)
        goto done;
    c0 = PyUnicode_GET_LENGTH(PyList_GET_ITEM(f->lines, 0)) > 0
             ? PyUnicode_READ_CHAR(PyList_GET_ITEM(f->lines, 0), 0)
             : 0;
    f->shift = (c0 == ' ' || c0 == '\t' || c0 == '\f') ? 1 : 0;
    text = f->shift ? PyUnicode_FromFormat("if 1:\n%U", *original) : Py_NewRef(*original);
    if (!text)
        goto done;
    tree = PyObject_CallMethod(f->mc->ast, "parse", "O", text);
    if (!tree)
        goto done;
    body = fe_get_list(tree, "body");
    if (!body)
        goto done;
    if (f->shift && PyList_GET_SIZE(body) > 0) {
        inner = fe_get_list(PyList_GET_ITEM(body, 0), "body");
        if (!inner)
            goto done;
        Py_SETREF(body, inner);
        inner = NULL;
    }
    if (PyList_GET_SIZE(body) < 1) {
        PyErr_SetString(PyExc_TypeError, "the function's source is empty");
        goto done;
    }
    fdef = PyList_GET_ITEM(body, 0);
    if (!fe_is_kind(fdef, "FunctionDef")) {
        if (fe_is_kind(fdef, "AsyncFunctionDef"))
            fe_error(f, fdef, "an async function cannot be a kernel");
        else
            fe_error(f, fdef, "only functions defined with 'def' can be kernels (a lambda "
                              "cannot)");
        fdef = NULL;
        goto done;
    }
    Py_INCREF(fdef);
    /* A function tack._structs made for a struct call carries its rewritten
     * tree (struct fields as their own parameters and locals), numbered as
     * this parse numbers its own source; the lines and carets stay these. */
    alt = PyObject_GetAttrString(fn, "__tack_tree__");
    if (!alt && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
    } else if (!alt) {
        Py_CLEAR(fdef);
    } else if (!fe_is_kind(alt, "FunctionDef")) {
        PyErr_SetString(PyExc_TypeError, "__tack_tree__ is not an ast.FunctionDef");
        Py_CLEAR(fdef);
    } else {
        Py_SETREF(fdef, Py_NewRef(alt));
    }
done:
    Py_XDECREF(alt);
    if (!fdef)
        Py_CLEAR(*original);
    Py_XDECREF(res);
    Py_XDECREF(text);
    Py_XDECREF(empty);
    Py_XDECREF(tree);
    Py_XDECREF(body);
    return fdef;
}

