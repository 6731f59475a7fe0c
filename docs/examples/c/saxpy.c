/*
 * saxpy.c -- a Tack kernel built and run from C.
 *
 * The kernel, as Python would write it:
 *
 *     @tack.kernel
 *     def saxpy(a, x, y):
 *         for i in range(y.shape[0]):
 *             y[i] = a * x[i] + y[i]
 *
 * A C front end describes the function as the tree that tack_kernel.h
 * documents (what the Python extension builds from Python's `ast`), compiles
 * it for one signature (a: a float scalar; x, y: 1-d float32 arrays), builds
 * it for the CPU -- with a C compiler and the kernel cache, as from Python --
 * and launches it on Tack arrays.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tack_kernel.h"

static tack_module *m;

static void check(tack_status st, const char *what) {
    if (st != TACK_OK) {
        fprintf(stderr, "%s: %s\n", what, tack_last_error());
        exit(1);
    }
}

/* A node with up to three children (NULL: none), at line 3, column 8. */
static tack_node *node(tack_node_kind kind, tack_node *a, tack_node *b, tack_node *c) {
    tack_node *n = tack_node_new(m, kind, 3, 8);
    if (!n) check(tack_last_status(), "tack_node_new");
    tack_node *kids[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (kids[i]) check(tack_node_add_child(m, n, kids[i]), "tack_node_add_child");
    return n;
}

static tack_node *named(tack_node_kind kind, const char *name, tack_node *child) {
    tack_node *n = node(kind, child, NULL, NULL);
    check(tack_node_set_name(m, n, name), "tack_node_set_name");
    return n;
}

static tack_node *name(const char *s) { return named(TACK_N_NAME, s, NULL); }

static tack_node *binop(tack_op op, tack_node *l, tack_node *r) {
    tack_node *n = node(TACK_N_BINOP, l, r, NULL);
    tack_node_set_op(n, op);
    return n;
}

static tack_node *item(const char *array, const char *index) {
    return node(TACK_N_SUBSCRIPT, name(array), name(index), NULL);
}

int main(void) {
    check(tack_check_version(TACK_ABI_VERSION), "tack_check_version");
    check(tack_module_new(&m), "tack_module_new");

    static const char source[] =
        "def saxpy(a, x, y):\n"
        "    for i in range(y.shape[0]):\n"
        "        y[i] = a * x[i] + y[i]\n";
    int k = tack_module_add_function(m, TACK_FUNC_KERNEL, "saxpy", "saxpy.py", 1, source);
    if (k < 0) check(tack_last_status(), "tack_module_add_function");
    const char *params[3] = {"a", "x", "y"};
    for (int i = 0; i < 3; i++) check(tack_function_add_param(m, k, params[i], NULL), "tack_function_add_param");

    tack_node *zero = node(TACK_N_CONST_INT, NULL, NULL, NULL);
    tack_node_set_int(zero, 0);
    tack_node *n = node(TACK_N_SUBSCRIPT, named(TACK_N_ATTRIBUTE, "shape", name("y")), zero, NULL); /* y.shape[0] */
    tack_node *range = named(TACK_N_CALL, "range", n);
    tack_node_set_int(range, -1); /* an intrinsic, not a function of the module */
    tack_node *assign = node(TACK_N_ASSIGN, item("y", "i"),
                             binop(TACK_OP_ADD, binop(TACK_OP_MUL, name("a"), item("x", "i")), item("y", "i")), NULL);
    tack_node *loop = node(TACK_N_FOR, name("i"), range, node(TACK_N_BLOCK, assign, NULL, NULL));
    check(tack_function_set_body(m, k, node(TACK_N_BLOCK, loop, NULL, NULL)), "tack_function_set_body");

    /* a: a Python float (weak: it takes the arrays' f32); x read, y written */
    tack_argtype sig[3] = {{0, TACK_F64, 0, 0, 1}, {1, TACK_F32, 1, 0, 0}, {1, TACK_F32, 1, 1, 0}};
    tack_compile_options opts;
    tack_compile_options_init(&opts);
    tack_program *p = NULL;
    check(tack_compile(m, k, sig, 3, &opts, &p), "tack_compile");
    tack_device *cpu = NULL;
    check(tack_device_get("cpu", &cpu), "tack_device_get");
    check(tack_program_build(p, cpu), "tack_program_build");

    enum { N = 8 };
    int64_t shape[1] = {N};
    tack_array *x = NULL, *y = NULL;
    check(tack_array_empty(cpu, TACK_F32, 1, shape, &x), "tack_array_empty");
    check(tack_array_empty(cpu, TACK_F32, 1, shape, &y), "tack_array_empty");
    float *px = tack_array_data(x), *py = tack_array_data(y);
    for (int i = 0; i < N; i++) {
        px[i] = (float)i;
        py[i] = 1.0f;
    }
    tack_arg args[3] = {{0}, {0}, {0}};
    args[0].scalar.f = 2.0;
    args[1].array = x;
    args[2].array = y;
    check(tack_launch(p, args, 3), "tack_launch");

    int ok = 1;
    printf("y =");
    for (int i = 0; i < N; i++) {
        printf(" %g", py[i]);
        if (py[i] != 2.0f * (float)i + 1.0f) ok = 0;
    }
    printf("\n%s\n", ok ? "saxpy: ok" : "saxpy: WRONG");

    tack_array_release(x);
    tack_array_release(y);
    tack_program_free(p);
    tack_module_free(m);
    return ok ? 0 : 1;
}
