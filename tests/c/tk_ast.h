/*
 * tk_ast.h -- terse builders for kernel ASTs in C tests.
 *
 * Every builder uses the module in `tb_m` and the source position in
 * `tb_line` / `tb_col` (set them with AT(line, col) before building the
 * nodes of one statement).  Failures abort the test: builders are not what
 * these tests test.
 */
#ifndef TK_AST_H
#define TK_AST_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tack_kernel.h"

static tack_module *tb_m;
static int tb_line = 1, tb_col = 0;
#define AT(l, c) (tb_line = (l), tb_col = (c))

static inline tack_node *tb_node(tack_node_kind k) {
    tack_node *n = tack_node_new(tb_m, k, tb_line, tb_col);
    if (!n) {
        fprintf(stderr, "tack_node_new failed: %s\n", tack_last_error());
        abort();
    }
    return n;
}
static inline void tb_add(tack_node *n, tack_node *c) {
    if (tack_node_add_child(tb_m, n, c) != TACK_OK) abort();
}
static inline tack_node *tb_kids(tack_node_kind k, int n, va_list ap) {
    tack_node *x = tb_node(k);
    for (int i = 0; i < n; i++) tb_add(x, va_arg(ap, tack_node *));
    return x;
}
static inline tack_node *NAME(const char *s) {
    tack_node *n = tb_node(TACK_N_NAME);
    tack_node_set_name(tb_m, n, s);
    return n;
}
static inline tack_node *INT(int64_t v) {
    tack_node *n = tb_node(TACK_N_CONST_INT);
    tack_node_set_int(n, v);
    return n;
}
static inline tack_node *FLT(double v) {
    tack_node *n = tb_node(TACK_N_CONST_FLOAT);
    tack_node_set_float(n, v);
    return n;
}
static inline tack_node *BOOLC(int v) {
    tack_node *n = tb_node(TACK_N_CONST_BOOL);
    tack_node_set_int(n, v);
    return n;
}
static inline tack_node *STR(const char *s) {
    tack_node *n = tb_node(TACK_N_CONST_STR);
    tack_node_set_name(tb_m, n, s);
    return n;
}
static inline tack_node *TYPE(tack_dtype d) {
    tack_node *n = tb_node(TACK_N_TYPE);
    tack_node_set_int(n, d);
    return n;
}
static inline tack_node *BIN(tack_op op, tack_node *a, tack_node *b) {
    tack_node *n = tb_node(TACK_N_BINOP);
    tack_node_set_op(n, op);
    tb_add(n, a);
    tb_add(n, b);
    return n;
}
static inline tack_node *UN(tack_op op, tack_node *a) {
    tack_node *n = tb_node(TACK_N_UNARYOP);
    tack_node_set_op(n, op);
    tb_add(n, a);
    return n;
}
static inline tack_node *BOOLOP(tack_op op, tack_node *a, tack_node *b) {
    tack_node *n = tb_node(TACK_N_BOOLOP);
    tack_node_set_op(n, op);
    tb_add(n, a);
    tb_add(n, b);
    return n;
}
static inline tack_node *CMP(tack_node *a, tack_op op, tack_node *b) {
    tack_node *n = tb_node(TACK_N_COMPARE);
    tb_add(n, a);
    tb_add(n, b);
    tack_node_add_op(tb_m, n, op);
    return n;
}
static inline tack_node *CMP2(tack_node *a, tack_op op1, tack_node *b, tack_op op2, tack_node *c) {
    tack_node *n = CMP(a, op1, b);
    tb_add(n, c);
    tack_node_add_op(tb_m, n, op2);
    return n;
}
static inline tack_node *IFEXP(tack_node *t, tack_node *a, tack_node *b) {
    tack_node *n = tb_node(TACK_N_IFEXP);
    tb_add(n, t);
    tb_add(n, a);
    tb_add(n, b);
    return n;
}
/* intrinsic call */
static inline tack_node *CALL(const char *name, int n, ...) {
    va_list ap;
    va_start(ap, n);
    tack_node *x = tb_kids(TACK_N_CALL, n, ap);
    va_end(ap);
    tack_node_set_name(tb_m, x, name);
    tack_node_set_int(x, -1);
    return x;
}
/* call of function `f` of the module */
static inline tack_node *FCALL(int f, const char *name, int n, ...) {
    va_list ap;
    va_start(ap, n);
    tack_node *x = tb_kids(TACK_N_CALL, n, ap);
    va_end(ap);
    tack_node_set_name(tb_m, x, name);
    tack_node_set_int(x, f);
    return x;
}
static inline tack_node *ATTR(tack_node *v, const char *a) {
    tack_node *n = tb_node(TACK_N_ATTRIBUTE);
    tack_node_set_name(tb_m, n, a);
    tb_add(n, v);
    return n;
}
static inline tack_node *SUB(tack_node *v, int n, ...) {
    va_list ap;
    va_start(ap, n);
    tack_node *x = tb_node(TACK_N_SUBSCRIPT);
    tb_add(x, v);
    for (int i = 0; i < n; i++) tb_add(x, va_arg(ap, tack_node *));
    va_end(ap);
    return x;
}
static inline tack_node *SHAPE(const char *a, int k) { return SUB(ATTR(NAME(a), "shape"), 1, INT(k)); }
static inline tack_node *TUPLE(int n, ...) {
    va_list ap;
    va_start(ap, n);
    tack_node *x = tb_kids(TACK_N_TUPLE, n, ap);
    va_end(ap);
    return x;
}
static inline tack_node *BLOCK(int n, ...) {
    va_list ap;
    va_start(ap, n);
    tack_node *x = tb_kids(TACK_N_BLOCK, n, ap);
    va_end(ap);
    return x;
}
static inline tack_node *ASSIGN(tack_node *t, tack_node *v) {
    tack_node *n = tb_node(TACK_N_ASSIGN);
    tb_add(n, t);
    tb_add(n, v);
    return n;
}
static inline tack_node *ANN(tack_node *t, tack_dtype d, tack_node *v) {
    tack_node *n = tb_node(TACK_N_ANNASSIGN);
    tb_add(n, t);
    tb_add(n, TYPE(d));
    if (v) tb_add(n, v);
    return n;
}
static inline tack_node *AUG(tack_op op, tack_node *t, tack_node *v) {
    tack_node *n = tb_node(TACK_N_AUGASSIGN);
    tack_node_set_op(n, op);
    tb_add(n, t);
    tb_add(n, v);
    return n;
}
static inline tack_node *FOR(tack_node *t, tack_node *it, tack_node *body) {
    tack_node *n = tb_node(TACK_N_FOR);
    tb_add(n, t);
    tb_add(n, it);
    tb_add(n, body);
    return n;
}
static inline tack_node *WHILE(tack_node *t, tack_node *body) {
    tack_node *n = tb_node(TACK_N_WHILE);
    tb_add(n, t);
    tb_add(n, body);
    return n;
}
static inline tack_node *IF(tack_node *t, tack_node *body, tack_node *orelse) {
    tack_node *n = tb_node(TACK_N_IF);
    tb_add(n, t);
    tb_add(n, body);
    tb_add(n, orelse ? orelse : BLOCK(0));
    return n;
}
static inline tack_node *SIMPLE(tack_node_kind k) { return tb_node(k); }
static inline tack_node *RETURN(tack_node *v) {
    tack_node *n = tb_node(TACK_N_RETURN);
    if (v) tb_add(n, v);
    return n;
}
static inline tack_node *ASSERT(tack_node *t, const char *msg) {
    tack_node *n = tb_node(TACK_N_ASSERT);
    tb_add(n, t);
    if (msg) tb_add(n, STR(msg));
    return n;
}
static inline tack_node *EXPR(tack_node *e) {
    tack_node *n = tb_node(TACK_N_EXPR);
    tb_add(n, e);
    return n;
}
/* for i in range(stop) */
static inline tack_node *RANGE1(const char *var, tack_node *stop, tack_node *body) {
    return FOR(NAME(var), CALL("range", 1, stop), body);
}

/* for b, t in blocks(n, B): B threads a block (lower_blocks.c) */
static inline tack_node *BLOCKS(const char *b, const char *t, tack_node *n, int64_t B, tack_node *body) {
    return FOR(TUPLE(2, NAME(b), NAME(t)), CALL("blocks", 2, n, INT(B)), body);
}

/* A function with parameters named in a space-separated list. */
static inline int FUNC(tack_function_kind kind, const char *name, const char *params, tack_node *body) {
    int f = tack_module_add_function(tb_m, kind, name, "test.py", 1, NULL);
    if (f < 0) abort();
    char buf[256];
    snprintf(buf, sizeof buf, "%s", params);
    for (char *p = buf; *p;) {
        while (*p == ' ') p++;
        if (!*p) break;
        char *e = p;
        while (*e && *e != ' ') e++;
        char save = *e;
        *e = 0;
        if (tack_function_add_param(tb_m, f, p, NULL) != TACK_OK) abort();
        *e = save;
        p = e;
    }
    if (body && tack_function_set_body(tb_m, f, body) != TACK_OK) abort();
    return f;
}

static inline tack_argtype ARR(tack_dtype d, int ndim) {
    tack_argtype a = {1, d, ndim, 1, 0, 0, 0};
    return a;
}
static inline tack_argtype WEAK(tack_dtype d) {
    tack_argtype a = {0, d, 0, 0, 1, 0, 0};
    return a;
}
static inline tack_argtype SCALAR(tack_dtype d) {
    tack_argtype a = {0, d, 0, 0, 0, 0, 0};
    return a;
}


/* Launch arguments: an array, an integer scalar, a float scalar. */
static inline tack_arg A(tack_array *a) {
    tack_arg r = {0};
    r.array = a;
    return r;
}
static inline tack_arg I64(int64_t v) {
    tack_arg r = {0};
    r.scalar.i = v;
    return r;
}
static inline tack_arg F64(double v) {
    tack_arg r = {0};
    r.scalar.f = v;
    return r;
}

#endif /* TK_AST_H */
