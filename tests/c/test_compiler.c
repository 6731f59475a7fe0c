/*
 * test_compiler.c -- kernels built with the AST builder, compiled with the
 * real C compiler, run on the CPU device, checked against hand results.
 */
#include <math.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tack.h"
#include "tack_kernel.h"
#include "check.h"
#include "tk_ast.h"


static tack_device *cpu;

static tack_array *arr(tack_dtype dt, int ndim, int64_t n0, int64_t n1) {
    int64_t shape[2] = {n0, n1};
    tack_array *a = NULL;
    if (tack_array_zeros(cpu, dt, ndim, shape, &a) != TACK_OK) {
        fprintf(stderr, "array: %s\n", tack_last_error());
        abort();
    }
    return a;
}

/* Compile kernel `k` of tb_m, build, return the program (NULL on failure, status in *st). */
static tack_program *build(int k, const tack_argtype *sig, int n, tack_status *st, int checks) {
    tack_compile_options o;
    tack_compile_options_init(&o);
    o.checks = checks;
    tack_program *p = NULL;
    tack_status s = tack_compile(tb_m, k, sig, n, &o, &p);
    if (s == TACK_OK) {
        s = tack_program_build(p, cpu);
        if (s != TACK_OK) {
            fprintf(stderr, "build: %s\n", tack_last_error());
            tack_program_free(p);
            p = NULL;
        }
    }
    if (st) *st = s;
    return p;
}

static void new_module(void) {
    if (tb_m) tack_module_free(tb_m);
    tack_module_new(&tb_m);
}

/* out[i] = a[i] + b[i] * s over a large range (the pool) */
static void test_add(void) {
    new_module();
    AT(2, 4);
    tack_node *body = BLOCK(1, RANGE1("i", SHAPE("out", 0),
        BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")),
                        BIN(TACK_OP_ADD, SUB(NAME("a"), 1, NAME("i")),
                            BIN(TACK_OP_MUL, SUB(NAME("b"), 1, NAME("i")), NAME("s")))))));
    int k = FUNC(TACK_FUNC_KERNEL, "add", "a b out s", body);
    tack_argtype sig[4] = {ARR(TACK_F32, 1), ARR(TACK_F32, 1), ARR(TACK_F32, 1), WEAK(TACK_F64)};
    tack_status st;
    tack_program *p = build(k, sig, 4, &st, 1);
    CHECK(p != NULL);
    if (!p) return;
    CHECK(tack_program_param_written(p, 2) == 1);
    CHECK(tack_program_param_written(p, 0) == 0);
    CHECK(strstr(tack_program_ir(p), "check.index #") == NULL && strstr(tack_program_ir(p), "check.index.range") != NULL);
    int64_t n = 200000;
    tack_array *a = arr(TACK_F32, 1, n, 0), *b = arr(TACK_F32, 1, n, 0), *out = arr(TACK_F32, 1, n, 0);
    float *pa = tack_array_data(a), *pb = tack_array_data(b);
    for (int64_t i = 0; i < n; i++) {
        pa[i] = (float)i;
        pb[i] = 1.5f;
    }
    tack_arg args[4] = {A(a), A(b), A(out), F64(2.0)};
    CHECK(tack_launch(p, args, 4) == TACK_OK);
    float *po = tack_array_data(out);
    int ok = 1;
    for (int64_t i = 0; i < n; i++)
        if (po[i] != (float)i + 3.0f) ok = 0;
    CHECK(ok);
    /* a wrong array for the signature is refused */
    tack_array *d = arr(TACK_F64, 1, n, 0);
    tack_arg bad[4] = {A(d), A(b), A(out), F64(2.0)};
    CHECK(tack_launch(p, bad, 4) == TACK_ERR_TYPE);
    /* a read-only output is refused, naming the parameter */
    tack_array *ro = NULL;
    CHECK(tack_array_view(out, 0, &ro) == TACK_OK);
    tack_arg rargs[4] = {A(a), A(b), A(ro), F64(2.0)};
    CHECK(tack_launch(p, rargs, 4) == TACK_ERR_READONLY);
    CHECK(strstr(tack_last_error(), "'out'") != NULL);
    tack_array_release(ro);
    tack_array_release(a);
    tack_array_release(b);
    tack_array_release(out);
    tack_array_release(d);
    tack_program_free(p);
}

/* m[i, j] = a[i] * b[j] over ndrange, and a serial reduction with inference */
static void test_ndrange_and_inference(void) {
    new_module();
    tack_node *body = BLOCK(2,
        FOR(TUPLE(2, NAME("i"), NAME("j")), CALL("ndrange", 2, SHAPE("a", 0), SHAPE("b", 0)),
            BLOCK(1, ASSIGN(SUB(NAME("m"), 2, NAME("i"), NAME("j")),
                            BIN(TACK_OP_MUL, SUB(NAME("a"), 1, NAME("i")), SUB(NAME("b"), 1, NAME("j")))))),
        RANGE1("r", SHAPE("m", 0),
            BLOCK(3, ASSIGN(NAME("acc"), INT(0)),
                  RANGE1("c", SHAPE("m", 1), BLOCK(1, AUG(TACK_OP_ADD, NAME("acc"), SUB(NAME("m"), 2, NAME("r"), NAME("c"))))),
                  ASSIGN(SUB(NAME("sums"), 1, NAME("r")), NAME("acc")))));
    int k = FUNC(TACK_FUNC_KERNEL, "outer", "a b m sums", body);
    tack_argtype sig[4] = {ARR(TACK_F64, 1), ARR(TACK_F64, 1), ARR(TACK_F64, 2), ARR(TACK_F64, 1)};
    tack_program *p = build(k, sig, 4, NULL, 1);
    CHECK(p != NULL);
    if (!p) return;
    CHECK(strstr(tack_program_ir(p), "acc'") != NULL && strstr(tack_program_ir(p), "acc'") != NULL);
    int n0 = 37, n1 = 53;
    tack_array *a = arr(TACK_F64, 1, n0, 0), *b = arr(TACK_F64, 1, n1, 0), *m = arr(TACK_F64, 2, n0, n1),
               *s = arr(TACK_F64, 1, n0, 0);
    double *pa = tack_array_data(a), *pb = tack_array_data(b);
    for (int i = 0; i < n0; i++) pa[i] = i;
    for (int j = 0; j < n1; j++) pb[j] = j + 1;
    tack_arg args[4] = {A(a), A(b), A(m), A(s)};
    CHECK(tack_launch(p, args, 4) == TACK_OK);
    double *pm = tack_array_data(m), *ps = tack_array_data(s);
    int ok = 1;
    for (int i = 0; i < n0; i++) {
        double row = 0;
        for (int j = 0; j < n1; j++) {
            if (pm[i * n1 + j] != (double)i * (j + 1)) ok = 0;
            row += (double)i * (j + 1);
        }
        if (ps[i] != row) ok = 0;
    }
    CHECK(ok);
    tack_array_release(a);
    tack_array_release(b);
    tack_array_release(m);
    tack_array_release(s);
    tack_program_free(p);
}

/* Python // and %, int8 wrapping, zero division error */
static void test_int_semantics(void) {
    new_module();
    tack_node *body = BLOCK(1, RANGE1("i", SHAPE("a", 0), BLOCK(3,
        ASSIGN(SUB(NAME("q"), 1, NAME("i")), BIN(TACK_OP_FLOORDIV, SUB(NAME("a"), 1, NAME("i")), SUB(NAME("b"), 1, NAME("i")))),
        ASSIGN(SUB(NAME("r"), 1, NAME("i")), BIN(TACK_OP_MOD, SUB(NAME("a"), 1, NAME("i")), SUB(NAME("b"), 1, NAME("i")))),
        ASSIGN(SUB(NAME("w"), 1, NAME("i")), BIN(TACK_OP_ADD, SUB(NAME("w"), 1, NAME("i")), INT(1))))));
    int k = FUNC(TACK_FUNC_KERNEL, "divmod", "a b q r w", body);
    tack_argtype sig[5] = {ARR(TACK_I32, 1), ARR(TACK_I32, 1), ARR(TACK_I32, 1), ARR(TACK_I32, 1), ARR(TACK_I8, 1)};
    tack_program *p = build(k, sig, 5, NULL, 1);
    CHECK(p != NULL);
    if (!p) return;
    tack_array *a = arr(TACK_I32, 1, 5, 0), *b = arr(TACK_I32, 1, 5, 0), *q = arr(TACK_I32, 1, 5, 0),
               *r = arr(TACK_I32, 1, 5, 0), *w = arr(TACK_I8, 1, 5, 0);
    int32_t av[5] = {7, -7, 7, -7, INT32_MIN}, bv[5] = {2, 2, -2, -2, -1};
    memcpy(tack_array_data(a), av, sizeof av);
    memcpy(tack_array_data(b), bv, sizeof bv);
    int8_t *pw = tack_array_data(w);
    pw[0] = 127;
    tack_arg args[5] = {A(a), A(b), A(q), A(r), A(w)};
    CHECK(tack_launch(p, args, 5) == TACK_OK);
    int32_t *pq = tack_array_data(q), *pr = tack_array_data(r);
    CHECK(pq[0] == 3 && pq[1] == -4 && pq[2] == -4 && pq[3] == 3 && pq[4] == INT32_MIN);
    CHECK(pr[0] == 1 && pr[1] == 1 && pr[2] == -1 && pr[3] == -1 && pr[4] == 0);
    CHECK(pw[0] == -128 && pw[1] == 1);
    ((int32_t *)tack_array_data(b))[3] = 0;
    CHECK(tack_launch(p, args, 5) == TACK_ERR_ZERODIV);
    CHECK(strstr(tack_last_error(), "division by zero") != NULL);
    CHECK(strstr(tack_last_error(), "test.py:") != NULL);
    tack_program_free(p);
    /* checks off: no error, no crash */
    p = build(k, sig, 5, NULL, 0);
    CHECK(p && tack_launch(p, args, 5) == TACK_OK);
    tack_program_free(p);
    tack_array_release(a);
    tack_array_release(b);
    tack_array_release(q);
    tack_array_release(r);
    tack_array_release(w);
}

/* a[i + k] = 1.0 -> IndexError with the location; memory outside untouched */
static void test_index_error(void) {
    new_module();
    AT(3, 8);
    tack_node *st = ASSIGN(SUB(NAME("a"), 1, BIN(TACK_OP_ADD, NAME("i"), NAME("k"))), FLT(1.0));
    AT(2, 4);
    tack_node *body = BLOCK(1, RANGE1("i", SHAPE("a", 0), BLOCK(1, st)));
    int k = FUNC(TACK_FUNC_KERNEL, "shifted", "a k", body);
    tack_argtype sig[2] = {ARR(TACK_F32, 1), WEAK(TACK_I64)};
    tack_program *p = build(k, sig, 2, NULL, 1);
    CHECK(p != NULL);
    if (!p) return;
    tack_array *a = arr(TACK_F32, 1, 4, 0);
    tack_arg args[2] = {A(a), I64(1)};
    CHECK(tack_launch(p, args, 2) == TACK_ERR_INDEX);
    CHECK(strstr(tack_last_error(), "index 4 is out of bounds for axis 0 with size 4") != NULL);
    CHECK(strstr(tack_last_error(), "test.py:3") != NULL);
    /* negative indices wrap once, like Python */
    tack_arg neg[2] = {A(a), I64(-4)};
    CHECK(tack_launch(p, neg, 2) == TACK_OK);
    tack_arg neg5[2] = {A(a), I64(-5)};
    CHECK(tack_launch(p, neg5, 2) == TACK_ERR_INDEX);
    CHECK(strstr(tack_last_error(), "index -5") != NULL);
    tack_program_free(p);
    tack_array_release(a);
}

/* compile errors carry line and column */
static void test_compile_errors(void) {
    new_module();
    AT(2, 4);
    tack_node *use = ASSIGN(SUB(NAME("a"), 1, INT(0)), NAME("nope"));
    tack_node *body = BLOCK(1, use);
    int k = FUNC(TACK_FUNC_KERNEL, "bad", "a", body);
    tack_argtype sig[1] = {ARR(TACK_F32, 1)};
    tack_program *p = NULL;
    CHECK(tack_compile(tb_m, k, sig, 1, NULL, &p) == TACK_ERR_COMPILE);
    CHECK(strstr(tack_last_error(), "name 'nope' is not defined") != NULL);
    const char *file;
    int line, col;
    tack_compile_error_location(&file, &line, &col);
    CHECK(line == 2 && col == 5 && file && !strcmp(file, "test.py"));

    /* assigning a frame variable inside a parallel loop */
    new_module();
    AT(1, 0);
    tack_node *b2 = BLOCK(2, ASSIGN(NAME("t"), INT(0)),
                          RANGE1("i", SHAPE("a", 0), BLOCK(1, AUG(TACK_OP_ADD, NAME("t"), SUB(NAME("a"), 1, NAME("i"))))));
    k = FUNC(TACK_FUNC_KERNEL, "race", "a", b2);
    CHECK(tack_compile(tb_m, k, sig, 1, NULL, &p) == TACK_ERR_COMPILE);
    CHECK(strstr(tack_last_error(), "parallel loop") != NULL);

    /* vector and scalar do not unify */
    new_module();
    tack_node *b3 = BLOCK(1, RANGE1("i", SHAPE("a", 0), BLOCK(2, ASSIGN(NAME("v"), FLT(1.0)),
                            ASSIGN(NAME("v"), CALL("vec3", 3, FLT(1), FLT(2), FLT(3))))));
    k = FUNC(TACK_FUNC_KERNEL, "mix", "a", b3);
    CHECK(tack_compile(tb_m, k, sig, 1, NULL, &p) == TACK_ERR_COMPILE);
    CHECK(strstr(tack_last_error(), "cannot assign vec3 to 'v'") != NULL);

    /* wrong number of indices; recursion */
    new_module();
    tack_node *b4 = BLOCK(1, ASSIGN(SUB(NAME("a"), 2, INT(0), INT(0)), FLT(1.0)));
    k = FUNC(TACK_FUNC_KERNEL, "idx", "a", b4);
    CHECK(tack_compile(tb_m, k, sig, 1, NULL, &p) == TACK_ERR_COMPILE);
    CHECK(strstr(tack_last_error(), "indexed with 2 indices") != NULL);

    new_module();
    int f = tack_module_add_function(tb_m, TACK_FUNC_DEVICE, "rec", "test.py", 1, NULL);
    tack_function_add_param(tb_m, f, "x", NULL);
    tack_function_set_body(tb_m, f, BLOCK(1, RETURN(FCALL(f, "rec", 1, NAME("x")))));
    tack_node *b5 = BLOCK(1, ASSIGN(SUB(NAME("a"), 1, INT(0)), FCALL(f, "rec", 1, FLT(1.0))));
    k = FUNC(TACK_FUNC_KERNEL, "userec", "a", b5);
    CHECK(tack_compile(tb_m, k, sig, 1, NULL, &p) == TACK_ERR_COMPILE);
    CHECK(strstr(tack_last_error(), "recursive") != NULL);

    /* malformed trees are compile errors, not crashes */
    tack_node *bad_nodes[6];
    new_module();
    tack_node *for2 = tb_node(TACK_N_FOR);                              /* for without a body */
    tb_add(for2, NAME("i"));
    tb_add(for2, CALL("range", 1, INT(3)));
    bad_nodes[0] = BLOCK(1, for2);
    bad_nodes[1] = BLOCK(1, EXPR(SUB(NAME("a"), 0)));                   /* subscript without index */
    bad_nodes[2] = BLOCK(1, ASSIGN(NAME("x"), CALL("range", 1, INT(3))));  /* range as a value */
    bad_nodes[3] = BLOCK(1, ASSIGN(NAME("x"), CALL("sqrt", 0)));        /* wrong arity */
    bad_nodes[4] = BLOCK(1, ASSIGN(NAME("x"), ATTR(NAME("a"), "dtype")));
    bad_nodes[5] = BLOCK(1, ASSIGN(NAME("a"), FLT(1.0)));              /* assign to an array parameter */
    for (int i = 0; i < 6; i++) {
        int kf = FUNC(TACK_FUNC_KERNEL, "malformed", "a", bad_nodes[i]);
        p = NULL;
        CHECK(tack_compile(tb_m, kf, sig, 1, NULL, &p) == TACK_ERR_COMPILE && p == NULL);
    }
    int nobody = FUNC(TACK_FUNC_KERNEL, "nobody", "a", NULL);
    CHECK(tack_compile(tb_m, nobody, sig, 1, NULL, &p) == TACK_ERR_COMPILE);
    CHECK(tack_compile(tb_m, 0, sig, 2, NULL, &p) == TACK_ERR_COMPILE); /* wrong signature length */

    /* unsupported intrinsic */
    new_module();
    tack_node *b6 = BLOCK(1, EXPR(CALL("open", 0)));
    k = FUNC(TACK_FUNC_KERNEL, "io", "a", b6);
    CHECK(tack_compile(tb_m, k, sig, 1, NULL, &p) == TACK_ERR_COMPILE);
    CHECK(strstr(tack_last_error(), "'open'") != NULL);
}

/* control flow, math, chained comparisons, short circuit, conditional expressions */
static void test_control_flow(void) {
    new_module();
    /* for i in range(x.shape[0]):
     *   v = x[i]
     *   lo, hi = -1.0, 1.0
     *   if lo <= v < hi and not isnan(v): out[i] = sqrt(abs(v))
     *   elif v >= hi: out[i] = min(v, 10.0)
     *   else: out[i] = -1.0 if v < -5 else floor(v)
     *   n = 0
     *   while n < 3:
     *     n += 1
     *     if n == 2: break
     *   out[i] += n - 2
     */
    tack_node *body = BLOCK(1, RANGE1("i", SHAPE("x", 0), BLOCK(6,
        ASSIGN(NAME("v"), SUB(NAME("x"), 1, NAME("i"))),
        ASSIGN(TUPLE(2, NAME("lo"), NAME("hi")), TUPLE(2, FLT(-1.0), FLT(1.0))),
        IF(BOOLOP(TACK_OP_AND, CMP2(NAME("lo"), TACK_OP_LE, NAME("v"), TACK_OP_LT, NAME("hi")),
                  UN(TACK_OP_NOT, CALL("isnan", 1, NAME("v")))),
           BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), CALL("sqrt", 1, CALL("abs", 1, NAME("v"))))),
           BLOCK(1, IF(CMP(NAME("v"), TACK_OP_GE, NAME("hi")),
                       BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), CALL("min", 2, NAME("v"), FLT(10.0)))),
                       BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")),
                                       IFEXP(CMP(NAME("v"), TACK_OP_LT, INT(-5)), FLT(-1.0), CALL("floor", 1, NAME("v")))))))),
        ASSIGN(NAME("n"), INT(0)),
        WHILE(CMP(NAME("n"), TACK_OP_LT, INT(3)),
              BLOCK(2, AUG(TACK_OP_ADD, NAME("n"), INT(1)),
                    IF(CMP(NAME("n"), TACK_OP_EQ, INT(2)), BLOCK(1, SIMPLE(TACK_N_BREAK)), NULL))),
        AUG(TACK_OP_ADD, SUB(NAME("out"), 1, NAME("i")), BIN(TACK_OP_SUB, NAME("n"), INT(2))))));
    int k = FUNC(TACK_FUNC_KERNEL, "shapes", "x out", body);
    tack_argtype sig[2] = {ARR(TACK_F64, 1), ARR(TACK_F64, 1)};
    tack_program *p = build(k, sig, 2, NULL, 1);
    CHECK(p != NULL);
    if (!p) return;
    tack_array *x = arr(TACK_F64, 1, 5, 0), *out = arr(TACK_F64, 1, 5, 0);
    double xv[5] = {0.25, 4.0, 20.0, -2.5, -9.0};
    memcpy(tack_array_data(x), xv, sizeof xv);
    tack_arg args[2] = {A(x), A(out)};
    CHECK(tack_launch(p, args, 2) == TACK_OK);
    double *po = tack_array_data(out);
    CHECK(po[0] == 0.5 && po[1] == 4.0 && po[2] == 10.0 && po[3] == -3.0 && po[4] == -1.0);
    tack_program_free(p);
    tack_array_release(x);
    tack_array_release(out);
}

/* atomics: histogram with += and atomic_min/max */
static void test_atomics(void) {
    new_module();
    tack_node *body = BLOCK(1, RANGE1("i", SHAPE("values", 0), BLOCK(3,
        AUG(TACK_OP_ADD, SUB(NAME("bins"), 1, BIN(TACK_OP_MOD, SUB(NAME("values"), 1, NAME("i")), SHAPE("bins", 0))), INT(1)),
        EXPR(CALL("atomic_min", 3, NAME("ext"), INT(0), SUB(NAME("values"), 1, NAME("i")))),
        EXPR(CALL("atomic_max", 3, NAME("ext"), INT(1), SUB(NAME("values"), 1, NAME("i")))))));
    int k = FUNC(TACK_FUNC_KERNEL, "histogram", "values bins ext", body);
    tack_argtype sig[3] = {ARR(TACK_I64, 1), ARR(TACK_I64, 1), ARR(TACK_I64, 1)};
    tack_program *p = build(k, sig, 3, NULL, 1);
    CHECK(p != NULL);
    if (!p) return;
    int64_t n = 100000;
    tack_array *v = arr(TACK_I64, 1, n, 0), *bins = arr(TACK_I64, 1, 10, 0), *ext = arr(TACK_I64, 1, 2, 0);
    int64_t *pv = tack_array_data(v), *pe = tack_array_data(ext), *pb = tack_array_data(bins);
    for (int64_t i = 0; i < n; i++) pv[i] = i;
    pe[0] = 1000000000;
    pe[1] = -1;
    tack_arg args[3] = {A(v), A(bins), A(ext)};
    CHECK(tack_launch(p, args, 3) == TACK_OK);
    int ok = 1;
    for (int i = 0; i < 10; i++)
        if (pb[i] != 10000) ok = 0;
    CHECK(ok);
    CHECK(pe[0] == 0 && pe[1] == n - 1);
    tack_program_free(p);

    /* float atomics: many iterations add into one cell */
    new_module();
    body = BLOCK(1, RANGE1("i", SHAPE("x", 0), BLOCK(1, AUG(TACK_OP_ADD, SUB(NAME("s"), 1, INT(0)), SUB(NAME("x"), 1, NAME("i"))))));
    k = FUNC(TACK_FUNC_KERNEL, "total", "x s", body);
    tack_argtype sig2[2] = {ARR(TACK_F64, 1), ARR(TACK_F64, 1)};
    p = build(k, sig2, 2, NULL, 1);
    CHECK(p != NULL);
    if (p) {
        CHECK(strstr(tack_program_ir(p), "after each chunk") != NULL); /* privatized */
        tack_array *x = arr(TACK_F64, 1, n, 0), *s = arr(TACK_F64, 1, 1, 0);
        double *px = tack_array_data(x);
        for (int64_t i = 0; i < n; i++) px[i] = 1.0;
        tack_arg a2[2] = {A(x), A(s)};
        CHECK(tack_launch(p, a2, 2) == TACK_OK);
        CHECK(((double *)tack_array_data(s))[0] == (double)n);
        tack_array_release(x);
        tack_array_release(s);
        tack_program_free(p);
    }
    tack_array_release(v);
    tack_array_release(bins);
    tack_array_release(ext);
}

/* @tack.func typed per call site; assert in a func */
static void test_funcs(void) {
    new_module();
    int lerp = tack_module_add_function(tb_m, TACK_FUNC_DEVICE, "lerp", "test.py", 1, NULL);
    tack_function_add_param(tb_m, lerp, "a", NULL);
    tack_function_add_param(tb_m, lerp, "b", NULL);
    tack_function_add_param(tb_m, lerp, "t", NULL);
    tack_function_set_body(tb_m, lerp, BLOCK(1, RETURN(BIN(TACK_OP_ADD, NAME("a"),
        BIN(TACK_OP_MUL, BIN(TACK_OP_SUB, NAME("b"), NAME("a")), NAME("t"))))));
    int get = tack_module_add_function(tb_m, TACK_FUNC_DEVICE, "get", "test.py", 5, NULL);
    tack_function_add_param(tb_m, get, "arr", NULL);
    tack_function_add_param(tb_m, get, "i", NULL);
    AT(6, 4);
    tack_node *as = ASSERT(CMP(NAME("i"), TACK_OP_GE, INT(0)), "negative index");
    tack_function_set_body(tb_m, get, BLOCK(2, as, RETURN(SUB(NAME("arr"), 1, NAME("i")))));
    AT(10, 4);
    tack_node *body = BLOCK(1, RANGE1("i", SHAPE("x", 0), BLOCK(2,
        ASSIGN(SUB(NAME("x"), 1, NAME("i")), FCALL(lerp, "lerp", 3, FLT(0.0), FLT(1.0), FCALL(get, "get", 2, NAME("x"), NAME("i")))),
        ASSIGN(SUB(NAME("ints"), 1, NAME("i")), FCALL(lerp, "lerp", 3, SUB(NAME("ints"), 1, NAME("i")), INT(10), BIN(TACK_OP_SUB, NAME("k"), INT(1)))))));
    int k = FUNC(TACK_FUNC_KERNEL, "apply", "x ints k", body);
    tack_argtype sig[3] = {ARR(TACK_F64, 1), ARR(TACK_I64, 1), WEAK(TACK_I64)};
    tack_program *p = build(k, sig, 3, NULL, 1);
    CHECK(p != NULL);
    if (!p) return;
    tack_array *x = arr(TACK_F64, 1, 3, 0), *ints = arr(TACK_I64, 1, 3, 0);
    double xv[3] = {0.0, 0.5, 1.0};
    int64_t iv[3] = {1, 2, 3};
    memcpy(tack_array_data(x), xv, sizeof xv);
    memcpy(tack_array_data(ints), iv, sizeof iv);
    tack_arg args[3] = {A(x), A(ints), I64(3)};
    CHECK(tack_launch(p, args, 3) == TACK_OK);
    double *px = tack_array_data(x);
    int64_t *pi = tack_array_data(ints);
    CHECK(px[0] == 0.0 && px[1] == 0.5 && px[2] == 1.0);
    CHECK(pi[0] == 19 && pi[1] == 18 && pi[2] == 17);
    CHECK(tack_program_param_written(p, 1) && tack_program_param_written(p, 0));
    tack_program_free(p);
    tack_array_release(x);
    tack_array_release(ints);
}

/* a func returning two values, unpacked into array elements; an int power
 * with a negative exponent at run time is a ValueError naming the exponent */
static void test_tuple_returns_and_powers(void) {
    new_module();
    int dm = tack_module_add_function(tb_m, TACK_FUNC_DEVICE, "divmod_", "test.py", 1, NULL);
    tack_function_add_param(tb_m, dm, "a", NULL);
    tack_function_add_param(tb_m, dm, "b", NULL);
    tack_function_set_body(tb_m, dm, BLOCK(1, RETURN(TUPLE(2, BIN(TACK_OP_FLOORDIV, NAME("a"), NAME("b")),
                                                           BIN(TACK_OP_MOD, NAME("a"), NAME("b"))))));
    AT(5, 4);
    tack_node *body = BLOCK(1, RANGE1("i", SHAPE("a", 0), BLOCK(2,
        ASSIGN(TUPLE(2, SUB(NAME("q"), 1, NAME("i")), SUB(NAME("r"), 1, NAME("i"))),
               FCALL(dm, "divmod_", 2, SUB(NAME("a"), 1, NAME("i")), INT(3))),
        AUG(TACK_OP_ADD, SUB(NAME("q"), 1, NAME("i")), BIN(TACK_OP_POW, INT(2), NAME("e"))))));
    int k = FUNC(TACK_FUNC_KERNEL, "split", "a q r e", body);
    tack_argtype sig[4] = {ARR(TACK_I64, 1), ARR(TACK_I64, 1), ARR(TACK_I64, 1), WEAK(TACK_I64)};
    tack_program *p = build(k, sig, 4, NULL, 1);
    CHECK(p != NULL);
    if (!p) return;
    tack_array *a = arr(TACK_I64, 1, 5, 0), *q = arr(TACK_I64, 1, 5, 0), *r = arr(TACK_I64, 1, 5, 0);
    int64_t av[5] = {-7, -1, 0, 5, 9};
    memcpy(tack_array_data(a), av, sizeof av);
    tack_arg args[4] = {A(a), A(q), A(r), I64(2)};
    CHECK(tack_launch(p, args, 4) == TACK_OK);
    int64_t *pq = tack_array_data(q), *pr = tack_array_data(r);
    CHECK(pq[0] == -3 + 4 && pr[0] == 2 && pq[1] == -1 + 4 && pr[1] == 2 && pq[2] == 4 && pr[2] == 0);
    CHECK(pq[3] == 1 + 4 && pr[3] == 2 && pq[4] == 3 + 4 && pr[4] == 0);
    args[3] = I64(-2);
    CHECK(tack_launch(p, args, 4) == TACK_ERR_VALUE);
    CHECK(strstr(tack_last_error(), "integers to negative integer powers are not allowed: exponent -2") != NULL);
    CHECK(strstr(tack_last_error(), "kernel split, test.py:5") != NULL);
    tack_program_free(p);
    tack_array_release(a);
    tack_array_release(q);
    tack_array_release(r);
}

/* vectors: cross, length, normalize, components, matrices */
static void test_vectors(void) {
    new_module();
    tack_node *body = BLOCK(1, RANGE1("i", SHAPE("a", 0), BLOCK(4,
        ASSIGN(NAME("n"), CALL("cross", 2, SUB(NAME("a"), 1, NAME("i")), SUB(NAME("b"), 1, NAME("i")))),
        ASSIGN(SUB(NAME("lengths"), 1, NAME("i")), CALL("length", 1, NAME("n"))),
        ASSIGN(NAME("m"), CALL("mat33", 1, FLT(2.0))),
        ASSIGN(SUB(NAME("out"), 1, NAME("i")),
               BIN(TACK_OP_ADD, BIN(TACK_OP_MATMUL, NAME("m"), CALL("normalize", 1, NAME("n"))),
                   CALL("vec3", 3, FLT(0.0), FLT(0.0), ATTR(SUB(NAME("a"), 1, NAME("i")), "x")))))));
    int k = FUNC(TACK_FUNC_KERNEL, "normals", "a b out lengths", body);
    tack_argtype sig[4] = {ARR(TACK_VEC3, 1), ARR(TACK_VEC3, 1), ARR(TACK_VEC3, 1), ARR(TACK_F32, 1)};
    tack_program *p = build(k, sig, 4, NULL, 1);
    CHECK(p != NULL);
    if (!p) return;
    tack_array *a = arr(TACK_VEC3, 1, 2, 0), *b = arr(TACK_VEC3, 1, 2, 0), *out = arr(TACK_VEC3, 1, 2, 0),
               *len = arr(TACK_F32, 1, 2, 0);
    float av[6] = {1, 0, 0, 0, 2, 0}, bv[6] = {0, 1, 0, 0, 0, 1};
    memcpy(tack_array_data(a), av, sizeof av);
    memcpy(tack_array_data(b), bv, sizeof bv);
    tack_arg args[4] = {A(a), A(b), A(out), A(len)};
    CHECK(tack_launch(p, args, 4) == TACK_OK);
    float *po = tack_array_data(out), *pl = tack_array_data(len);
    CHECK(pl[0] == 1.0f && pl[1] == 2.0f);
    CHECK(po[0] == 0 && po[1] == 0 && po[2] == 3.0f && po[3] == 2.0f && po[4] == 0 && po[5] == 0);
    tack_program_free(p);
    tack_array_release(a);
    tack_array_release(b);
    tack_array_release(out);
    tack_array_release(len);
}

/* code between parallel loops runs once, in order; frame values reach the loops */
static void test_phases(void) {
    new_module();
    tack_node *body = BLOCK(4,
        ASSIGN(NAME("n"), SHAPE("x", 0)),
        RANGE1("i", NAME("n"), BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), BIN(TACK_OP_MUL, SUB(NAME("x"), 1, NAME("i")), SUB(NAME("x"), 1, NAME("i")))))),
        ASSIGN(NAME("middle"), SUB(NAME("out"), 1, BIN(TACK_OP_FLOORDIV, NAME("n"), INT(2)))),
        RANGE1("i", NAME("n"), BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), BIN(TACK_OP_SUB, SUB(NAME("out"), 1, NAME("i")), NAME("middle"))))));
    int k = FUNC(TACK_FUNC_KERNEL, "two_phases", "x out", body);
    tack_argtype sig[2] = {ARR(TACK_F64, 1), ARR(TACK_F64, 1)};
    tack_program *p = build(k, sig, 2, NULL, 1);
    CHECK(p != NULL);
    if (!p) return;
    tack_array *x = arr(TACK_F64, 1, 5, 0), *out = arr(TACK_F64, 1, 5, 0);
    double *px = tack_array_data(x);
    for (int i = 0; i < 5; i++) px[i] = i;
    tack_arg args[2] = {A(x), A(out)};
    CHECK(tack_launch(p, args, 2) == TACK_OK);
    double *po = tack_array_data(out);
    CHECK(po[0] == -4 && po[1] == -3 && po[2] == 0 && po[3] == 5 && po[4] == 12);
    tack_program_free(p);
    tack_array_release(x);
    tack_array_release(out);
}

/* stencils: i - 1, i + 1 in range(1, n - 1): checks hoisted out of the loop, results right */
static void test_stencil(void) {
    new_module();
    AT(4, 8);
    tack_node *body = BLOCK(2,
        ASSIGN(NAME("n"), SHAPE("a", 0)),
        FOR(NAME("i"), CALL("range", 2, INT(1), BIN(TACK_OP_SUB, NAME("n"), INT(1))),
            BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")),
                BIN(TACK_OP_ADD, BIN(TACK_OP_ADD, SUB(NAME("a"), 1, BIN(TACK_OP_SUB, NAME("i"), INT(1))), SUB(NAME("a"), 1, NAME("i"))),
                    SUB(NAME("a"), 1, BIN(TACK_OP_ADD, NAME("i"), INT(1))))))));
    int k = FUNC(TACK_FUNC_KERNEL, "blur", "a out", body);
    tack_argtype sig[2] = {ARR(TACK_F32, 1), ARR(TACK_F32, 1)};
    tack_program *p = build(k, sig, 2, NULL, 1);
    CHECK(p != NULL);
    if (!p) return;
    CHECK(strstr(tack_program_ir(p), "check.index #") == NULL);
    CHECK(strstr(tack_program_ir(p), "wrap") == NULL);
    int64_t n = 100000;
    tack_array *a = arr(TACK_F32, 1, n, 0), *out = arr(TACK_F32, 1, n, 0), *small = arr(TACK_F32, 1, 10, 0);
    float *pa = tack_array_data(a);
    for (int64_t i = 0; i < n; i++) pa[i] = (float)(i % 7);
    tack_arg args[2] = {A(a), A(out)};
    CHECK(tack_launch(p, args, 2) == TACK_OK);
    float *po = tack_array_data(out);
    int ok = po[0] == 0 && po[n - 1] == 0;
    for (int64_t i = 1; i < n - 1; i++)
        if (po[i] != pa[i - 1] + pa[i] + pa[i + 1]) ok = 0;
    CHECK(ok);
    /* out too small: the hoisted check reports the first bad index */
    tack_arg bad[2] = {A(a), A(small)};
    CHECK(tack_launch(p, bad, 2) == TACK_ERR_INDEX);
    CHECK(strstr(tack_last_error(), "index 10 is out of bounds for axis 0 with size 10 (array 'out'") != NULL);
    CHECK(strstr(tack_last_error(), "test.py:4") != NULL);
    tack_program_free(p);
    tack_array_release(a);
    tack_array_release(out);
    tack_array_release(small);
}

/* tack_interrupt() stops a launch on an interruptible thread: an endless
 * loop in each iteration of a parallel loop returns TACK_ERR_INTERRUPTED
 * soon after the request; a request made before a launch does not stop it. */
static void *interrupt_later(void *arg) {
    (void)arg;
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    tack_interrupt();
    return NULL;
}

static void test_interrupt(void) {
    new_module();
    tack_node *body = BLOCK(1, RANGE1("i", SHAPE("out", 0),
        BLOCK(3, ASSIGN(NAME("x"), INT(0)),
              WHILE(CMP(NAME("x"), TACK_OP_GE, INT(0)),
                    BLOCK(1, ASSIGN(NAME("x"), BIN(TACK_OP_MOD, BIN(TACK_OP_ADD, NAME("x"), INT(1)), INT(1000))))),
              ASSIGN(SUB(NAME("out"), 1, NAME("i")), NAME("x")))));
    int k = FUNC(TACK_FUNC_KERNEL, "spin", "out", body);
    tack_argtype sig[1] = {ARR(TACK_I64, 1)};
    tack_status st;
    tack_program *p = build(k, sig, 1, &st, 1);
    CHECK(p != NULL);
    if (!p) return;
    tack_array *out = arr(TACK_I64, 1, 4, 0);
    tack_arg args[1] = {A(out)};
    CHECK(tack_interruptible() == 0);
    tack_set_interruptible(1);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, interrupt_later, NULL) == 0);
    CHECK(tack_launch(p, args, 1) == TACK_ERR_INTERRUPTED);
    CHECK(strstr(tack_last_error(), "kernel 'spin' was interrupted") != NULL);
    pthread_join(th, NULL);
    tack_array_release(out);
    tack_program_free(p);

    /* a request left from before the launch is dropped as the launch starts */
    new_module();
    tack_node *fill = BLOCK(1, RANGE1("i", SHAPE("out", 0), BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), INT(7)))));
    k = FUNC(TACK_FUNC_KERNEL, "fill", "out", fill);
    p = build(k, sig, 1, &st, 1);
    CHECK(p != NULL);
    if (!p) return;
    out = arr(TACK_I64, 1, 1000000, 0);
    args[0] = A(out);
    tack_interrupt();
    CHECK(tack_launch(p, args, 1) == TACK_OK);
    CHECK(((int64_t *)tack_array_data(out))[999999] == 7);
    tack_set_interruptible(0);
    tack_array_release(out);
    tack_program_free(p);
}

/* The intrinsic table as the Python package reads it: name, kind, arity. */
static void test_intrinsic_table(void) {
    const char *kind = NULL;
    int lo = 0, hi = 0, n = 0, sqrt_row = 0, ndrange_row = 0;
    for (const char *name; (name = tack_intrinsic_info(n, &kind, &lo, &hi)) != NULL; n++) {
        CHECK(strcmp(kind, "?") != 0 && lo >= 0 && (hi == -1 || hi >= lo));
        CHECK(tack_intrinsic_name(n) == name);
        if (!strcmp(name, "sqrt")) sqrt_row = !strcmp(kind, "math") && lo == 1 && hi == 1;
        if (!strcmp(name, "ndrange")) ndrange_row = !strcmp(kind, "loop") && lo == 1 && hi == -1;
    }
    CHECK(n > 40 && sqrt_row && ndrange_row);
    CHECK(tack_intrinsic_name(n) == NULL && tack_intrinsic_info(-1, NULL, NULL, NULL) == NULL);
}

int main(void) {
    if (tack_device_get("cpu", &cpu) != TACK_OK) {
        fprintf(stderr, "no cpu device: %s\n", tack_last_error());
        return 1;
    }
    test_add();
    test_ndrange_and_inference();
    test_int_semantics();
    test_index_error();
    test_compile_errors();
    test_control_flow();
    test_atomics();
    test_funcs();
    test_tuple_returns_and_powers();
    test_vectors();
    test_phases();
    test_stencil();
    test_interrupt();
    test_intrinsic_table();
    if (tb_m) tack_module_free(tb_m);
    return CHECK_SUMMARY();
}
