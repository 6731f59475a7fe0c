/*
 * test_restrict.c -- array parameters declared restrict only where the call
 * proved they share no memory (tack_argtype.distinct), and a launch that
 * breaks that promise refused.
 *
 *     for i in range(x.shape[0]):
 *         y[i] = x[i] + 1
 *
 * Compiled with both arrays distinct, the CUDA source declares them
 * __restrict__ and the OpenCL source restrict; compiled without, neither.
 * A CPU build compiled for distinct arrays refuses the same array passed
 * twice (TACK_ERR_VALUE, naming both parameters); the build for possibly
 * overlapping arrays runs it and gives x + 1 in place.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tack.h"
#include "tack_kernel.h"
#include "check.h"
#include "tk_ast.h"


static tack_program *compile(int k, const tack_argtype *sig, const char *target) {
    tack_compile_options o;
    tack_compile_options_init(&o);
    o.target = target;
    tack_program *p = NULL;
    if (tack_compile(tb_m, k, sig, 2, &o, &p) != TACK_OK) return NULL;
    return p;
}

int main(void) {
    tack_device *cpu;
    if (tack_device_get("cpu", &cpu) != TACK_OK) return 1;
    tack_module_new(&tb_m);
    tack_node *body = BLOCK(1, FOR(NAME("i"), CALL("range", 1, SHAPE("x", 0)),
                                   BLOCK(1, ASSIGN(SUB(NAME("y"), 1, NAME("i")),
                                                   BIN(TACK_OP_ADD, SUB(NAME("x"), 1, NAME("i")), INT(1))))));
    int k = FUNC(TACK_FUNC_KERNEL, "plus_one", "x y", body);
    tack_argtype may[2] = {ARR(TACK_F64, 1), ARR(TACK_F64, 1)};
    tack_argtype distinct[2] = {ARR(TACK_F64, 1), ARR(TACK_F64, 1)};
    distinct[0].distinct = distinct[1].distinct = 1;

    tack_program *cu_d = compile(k, distinct, "cuda"), *cu_m = compile(k, may, "cuda");
    tack_program *cl_d = compile(k, distinct, "opencl"), *cl_m = compile(k, may, "opencl");
    CHECK(cu_d && cu_m && cl_d && cl_m);
    if (!cu_d || !cu_m || !cl_d || !cl_m) return 1;
    CHECK(strstr(tack_program_source(cu_d), "double *__restrict__ a0 = P.a0;") != NULL);
    CHECK(strstr(tack_program_source(cu_d), "double *__restrict__ a1 = P.a1;") != NULL);
    CHECK(strstr(tack_program_source(cu_m), "__restrict__") == NULL);
    CHECK(strstr(tack_program_source(cl_d), "double *restrict a0") != NULL);
    CHECK(strstr(tack_program_source(cl_m), "restrict") == NULL);

    tack_program *c_d = compile(k, distinct, "c"), *c_m = compile(k, may, "c");
    CHECK(c_d && c_m);
    if (!c_d || !c_m) return 1;
    CHECK(tack_program_build(c_d, cpu) == TACK_OK && tack_program_build(c_m, cpu) == TACK_OK);
    int64_t n = 100;
    tack_array *x = NULL, *y = NULL;
    if (tack_array_zeros(cpu, TACK_F64, 1, &n, &x) != TACK_OK || tack_array_zeros(cpu, TACK_F64, 1, &n, &y) != TACK_OK)
        return 1;
    double *xd = tack_array_data(x), *yd = tack_array_data(y);
    for (int i = 0; i < n; i++) xd[i] = i;
    CHECK(tack_arrays_overlap(x, x) && !tack_arrays_overlap(x, y));
    tack_arg two[2] = {A(x), A(y)}, same[2] = {A(x), A(x)};
    CHECK(tack_launch(c_d, two, 2) == TACK_OK && tack_device_synchronize(cpu) == TACK_OK);
    CHECK(yd[0] == 1.0 && yd[99] == 100.0);
    CHECK(tack_launch(c_d, same, 2) == TACK_ERR_VALUE);
    CHECK(strstr(tack_last_error(), "'x' of kernel 'plus_one' shares memory with 'y'") != NULL);
    CHECK(xd[0] == 0.0);
    CHECK(tack_launch(c_m, same, 2) == TACK_OK && tack_device_synchronize(cpu) == TACK_OK);
    CHECK(xd[0] == 1.0 && xd[99] == 100.0);

    tack_array_release(x);
    tack_array_release(y);
    tack_program_free(cu_d);
    tack_program_free(cu_m);
    tack_program_free(cl_d);
    tack_program_free(cl_m);
    tack_program_free(c_d);
    tack_program_free(c_m);
    tack_module_free(tb_m);
    return CHECK_SUMMARY();
}
