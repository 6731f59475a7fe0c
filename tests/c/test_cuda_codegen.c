/*
 * test_cuda_codegen.c -- the CUDA dialect without a GPU.
 *
 * Kernels covering the whole language (the constructs of test_compiler.c and
 * more: every math function, every atomic on every dtype that allows one,
 * f16 and bool storage, vectors and matrices, @tack.func calls, print,
 * return, serial code between parallel loops, ndrange up to 3-D) are
 * compiled with target "cuda", and the source is compiled by Tack's own
 * NVRTC path to PTX for sm_80 and sm_90.  The launch layout (which phases
 * run on the grid, which as one thread) is checked where it matters for
 * speed, and a few sources also go through nvcc when it is installed.  The
 * CPU dialect is checked to be untouched by the CUDA one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cuda/cuda_api.h"
#include "tack.h"
#include "tack_kernel.h"
#include "check.h"
#include "private/tack_private.h"
#include "tk_ast.h"

static int ptx_compiles[2], nvcc_builds;
static int have_nvrtc, have_nvcc;

static void new_module(void) {
    if (tb_m) tack_module_free(tb_m);
    tack_module_new(&tb_m);
}

static char last_layout[64];

/* Compile kernel k for CUDA; NVRTC it for sm_80 and sm_90; optionally nvcc it.
 * Returns 1 when everything that could run passed. */
static int cu(int k, const tack_argtype *sig, int n, int checks, int nvcc) {
    tack_compile_options o;
    tack_compile_options_init(&o);
    o.target = "cuda";
    o.checks = checks;
    tack_program *p = NULL;
    tack_status st = tack_compile(tb_m, k, sig, n, &o, &p);
    CHECK(st == TACK_OK);
    if (st != TACK_OK) return 0;
    const char *src = tack_program_source(p);
    int ok = src && strstr(src, "extern \"C\" __global__") != NULL;
    const char *lay = strstr(src, "tack-cuda: phases=");
    last_layout[0] = 0;
    if (lay) sscanf(lay + strlen("tack-cuda: phases="), "%63[ps]", last_layout);
    CHECK(lay != NULL);
    if (have_nvrtc) {
        int archs[2][2] = {{8, 0}, {9, 0}};
        for (int a = 0; a < 2; a++) {
            char *ptx = NULL;
            st = tack_nvrtc_compile(src, "kernel.cu", archs[a][0], archs[a][1], 0, &ptx);
            if (st != TACK_OK) {
                fprintf(stderr, "NVRTC sm_%d%d failed:\n%s\n--- source ---\n%s\n", archs[a][0], archs[a][1],
                        tack_last_error(), src);
                ok = 0;
            } else {
                char target[32];
                snprintf(target, sizeof target, ".target sm_%d%d", archs[a][0], archs[a][1]);
                int good = strstr(ptx, target) != NULL && (!last_layout[0] || strstr(ptx, ".entry tk_phase0") != NULL);
                CHECK(good);
                ok &= good;
                ptx_compiles[a] += good;
                tack_free(ptx);
            }
        }
    }
    if (nvcc && have_nvcc) {
        char dir[] = "/tmp/tack-nvcc-XXXXXX";
        if (mkdtemp(dir)) {
            char path[128], cmd[512];
            snprintf(path, sizeof path, "%s/k.cu", dir);
            FILE *f = fopen(path, "w");
            if (f) {
                fputs(src, f);
                fclose(f);
                snprintf(cmd, sizeof cmd, "nvcc -arch=sm_80 -c %s -o %s/k.o > %s/log 2>&1", path, dir, dir);
                int rc = system(cmd);
                if (rc != 0) {
                    snprintf(cmd, sizeof cmd, "cat %s/log >&2", dir);
                    if (system(cmd) != 0) fprintf(stderr, "(no log)\n");
                }
                CHECK(rc == 0);
                ok &= rc == 0;
                nvcc_builds += rc == 0;
            }
            snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
            if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
        }
    }
    tack_program_free(p);
    return ok;
}

/* out[i] = a[i] + b[i] * s: one launch, the hoisted checks run by every thread */
static void t_add(void) {
    new_module();
    tack_node *body = BLOCK(1, RANGE1("i", SHAPE("out", 0),
        BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")),
                        BIN(TACK_OP_ADD, SUB(NAME("a"), 1, NAME("i")),
                            BIN(TACK_OP_MUL, SUB(NAME("b"), 1, NAME("i")), NAME("s")))))));
    int k = FUNC(TACK_FUNC_KERNEL, "add", "a b out s", body);
    tack_argtype sig[4] = {ARR(TACK_F32, 1), ARR(TACK_F32, 1), ARR(TACK_F32, 1), WEAK(TACK_F64)};
    CHECK(cu(k, sig, 4, 1, 1));
    CHECK(!strcmp(last_layout, "p"));
    CHECK(cu(k, sig, 4, 0, 0));
    CHECK(!strcmp(last_layout, "p"));
}

/* ndrange 2-D and 3-D, a serial loop nest inside a parallel loop */
static void t_ndrange(void) {
    new_module();
    tack_node *body = BLOCK(3,
        FOR(TUPLE(2, NAME("i"), NAME("j")), CALL("ndrange", 2, SHAPE("a", 0), SHAPE("b", 0)),
            BLOCK(1, ASSIGN(SUB(NAME("m"), 2, NAME("i"), NAME("j")),
                            BIN(TACK_OP_MUL, SUB(NAME("a"), 1, NAME("i")), SUB(NAME("b"), 1, NAME("j")))))),
        RANGE1("r", SHAPE("m", 0),
            BLOCK(3, ASSIGN(NAME("acc"), INT(0)),
                  RANGE1("c", SHAPE("m", 1), BLOCK(1, AUG(TACK_OP_ADD, NAME("acc"), SUB(NAME("m"), 2, NAME("r"), NAME("c"))))),
                  ASSIGN(SUB(NAME("sums"), 1, NAME("r")), NAME("acc")))),
        FOR(TUPLE(3, NAME("x"), NAME("y"), NAME("z")), CALL("ndrange", 3, INT(2), INT(3), SHAPE("b", 0)),
            BLOCK(1, AUG(TACK_OP_ADD, SUB(NAME("sums"), 1, INT(0)), BIN(TACK_OP_MUL, NAME("x"), NAME("z"))))));
    int k = FUNC(TACK_FUNC_KERNEL, "outer", "a b m sums", body);
    tack_argtype sig[4] = {ARR(TACK_F64, 1), ARR(TACK_F64, 1), ARR(TACK_F64, 2), ARR(TACK_F64, 1)};
    CHECK(cu(k, sig, 4, 1, 0));
    CHECK(!strcmp(last_layout, "ppp"));
}

/* Python // and %, int8 wrapping, shifts, bit operations, integer powers, casts */
static void t_int_semantics(void) {
    tack_dtype dts[] = {TACK_I8, TACK_I16, TACK_I32, TACK_I64, TACK_U8, TACK_U16, TACK_U32, TACK_U64};
    for (int d = 0; d < 8; d++) {
        new_module();
        tack_node *a = NULL;
        tack_node *body = BLOCK(1, RANGE1("i", SHAPE("a", 0), BLOCK(8,
            ASSIGN(SUB(NAME("q"), 1, NAME("i")), BIN(TACK_OP_FLOORDIV, SUB(NAME("a"), 1, NAME("i")), SUB(NAME("b"), 1, NAME("i")))),
            ASSIGN(SUB(NAME("r"), 1, NAME("i")), BIN(TACK_OP_MOD, SUB(NAME("a"), 1, NAME("i")), SUB(NAME("b"), 1, NAME("i")))),
            AUG(TACK_OP_ADD, SUB(NAME("q"), 1, NAME("i")), BIN(TACK_OP_LSHIFT, SUB(NAME("a"), 1, NAME("i")), INT(3))),
            AUG(TACK_OP_BITXOR, SUB(NAME("q"), 1, NAME("i")), BIN(TACK_OP_RSHIFT, SUB(NAME("b"), 1, NAME("i")), INT(1))),
            AUG(TACK_OP_BITOR, SUB(NAME("r"), 1, NAME("i")), UN(TACK_OP_INVERT, SUB(NAME("b"), 1, NAME("i")))),
            AUG(TACK_OP_MUL, SUB(NAME("r"), 1, NAME("i")), BIN(TACK_OP_POW, SUB(NAME("a"), 1, NAME("i")), INT(3))),
            ASSIGN(SUB(NAME("f"), 1, NAME("i")), BIN(TACK_OP_DIV, SUB(NAME("a"), 1, NAME("i")), SUB(NAME("b"), 1, NAME("i")))),
            ASSIGN(SUB(NAME("q"), 1, NAME("i")), BIN(TACK_OP_ADD, CALL("abs", 1, UN(TACK_OP_NEG, SUB(NAME("q"), 1, NAME("i")))),
                                                   CALL("int", 1, SUB(NAME("f"), 1, NAME("i"))))))));
        (void)a;
        int k = FUNC(TACK_FUNC_KERNEL, "ints", "a b q r f", body);
        tack_argtype sig[5] = {ARR(dts[d], 1), ARR(dts[d], 1), ARR(dts[d], 1), ARR(dts[d], 1), ARR(TACK_F64, 1)};
        CHECK(cu(k, sig, 5, 1, 0));
    }
}

/* control flow, math of both float types, chained comparisons, short circuit */
static void t_control_flow(void) {
    tack_dtype dts[] = {TACK_F32, TACK_F64};
    for (int d = 0; d < 2; d++) {
        new_module();
        tack_node *body = BLOCK(1, RANGE1("i", SHAPE("x", 0), BLOCK(7,
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
                  BLOCK(3, AUG(TACK_OP_ADD, NAME("n"), INT(1)),
                        IF(CMP(NAME("n"), TACK_OP_EQ, INT(1)), BLOCK(1, SIMPLE(TACK_N_CONTINUE)), NULL),
                        IF(CMP(NAME("n"), TACK_OP_EQ, INT(2)), BLOCK(1, SIMPLE(TACK_N_BREAK)), NULL))),
            IF(CMP(NAME("v"), TACK_OP_EQ, FLT(0.5)), BLOCK(1, SIMPLE(TACK_N_CONTINUE)), NULL),
            AUG(TACK_OP_ADD, SUB(NAME("out"), 1, NAME("i")),
                BIN(TACK_OP_ADD, BIN(TACK_OP_SUB, NAME("n"), INT(2)),
                    BOOLOP(TACK_OP_OR, BIN(TACK_OP_MOD, NAME("v"), FLT(2.0)), BIN(TACK_OP_FLOORDIV, NAME("v"), FLT(3.0))))))));
        int k = FUNC(TACK_FUNC_KERNEL, "shapes", "x out", body);
        tack_argtype sig[2] = {ARR(dts[d], 1), ARR(dts[d], 1)};
        CHECK(cu(k, sig, 2, 1, 0));
    }
}

/* every math function on f32 and f64, NaN and infinity constants */
static void t_math(void) {
    static const char *one[] = {"sqrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan",
                                "sinh", "cosh", "tanh", "floor", "ceil", "trunc", "fabs"};
    static const char *two[] = {"atan2", "pow", "hypot", "fmod", "copysign"};
    tack_dtype dts[] = {TACK_F32, TACK_F64};
    for (int d = 0; d < 2; d++) {
        new_module();
        tack_node *blk = BLOCK(0);
        for (size_t f = 0; f < sizeof one / sizeof one[0]; f++)
            tb_add(blk, AUG(TACK_OP_ADD, SUB(NAME("out"), 1, NAME("i")), CALL(one[f], 1, SUB(NAME("x"), 1, NAME("i")))));
        for (size_t f = 0; f < sizeof two / sizeof two[0]; f++)
            tb_add(blk, AUG(TACK_OP_ADD, SUB(NAME("out"), 1, NAME("i")),
                            CALL(two[f], 2, SUB(NAME("x"), 1, NAME("i")), FLT(0.5))));
        tb_add(blk, IF(BOOLOP(TACK_OP_OR, CALL("isinf", 1, SUB(NAME("x"), 1, NAME("i"))),
                              UN(TACK_OP_NOT, CALL("isfinite", 1, SUB(NAME("x"), 1, NAME("i"))))),
                       BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), BIN(TACK_OP_MUL, FLT(1e308), FLT(1e308)))),
                       BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), BIN(TACK_OP_SUB, FLT(0.0), BIN(TACK_OP_MUL, FLT(1e308), FLT(1e308)))))));
        tb_add(blk, AUG(TACK_OP_ADD, SUB(NAME("out"), 1, NAME("i")), BIN(TACK_OP_POW, SUB(NAME("x"), 1, NAME("i")), INT(2))));
        tb_add(blk, AUG(TACK_OP_ADD, SUB(NAME("out"), 1, NAME("i")), CALL("f32", 1, CALL("i64", 1, SUB(NAME("x"), 1, NAME("i"))))));
        tb_add(blk, AUG(TACK_OP_ADD, SUB(NAME("out"), 1, NAME("i")), CALL("float", 1, CALL("u64", 1, SUB(NAME("x"), 1, NAME("i"))))));
        int k = FUNC(TACK_FUNC_KERNEL, "maths", "x out", BLOCK(1, RANGE1("i", SHAPE("x", 0), blk)));
        tack_argtype sig[2] = {ARR(dts[d], 1), ARR(dts[d], 1)};
        CHECK(cu(k, sig, 2, 1, 0));
    }
}

/* atomics: += -= min max exch cas (and and/or/xor on integers) on every dtype that has them, with and
 * without a used result */
static void t_atomics(void) {
    tack_dtype dts[] = {TACK_I8, TACK_I16, TACK_I32, TACK_I64, TACK_U8, TACK_U16, TACK_U32, TACK_U64, TACK_F32, TACK_F64};
    for (int d = 0; d < 10; d++) {
        new_module();
        tack_node *body = BLOCK(1, RANGE1("i", SHAPE("values", 0), BLOCK(6,
            AUG(TACK_OP_ADD, SUB(NAME("bins"), 1, BIN(TACK_OP_MOD, NAME("i"), SHAPE("bins", 0))), SUB(NAME("values"), 1, NAME("i"))),
            AUG(TACK_OP_SUB, SUB(NAME("bins"), 1, INT(0)), SUB(NAME("values"), 1, NAME("i"))),
            EXPR(CALL("atomic_min", 3, NAME("ext"), INT(0), SUB(NAME("values"), 1, NAME("i")))),
            EXPR(CALL("atomic_max", 3, NAME("ext"), INT(1), SUB(NAME("values"), 1, NAME("i")))),
            ASSIGN(NAME("old"), CALL("atomic_add", 3, NAME("ext"), INT(2), SUB(NAME("values"), 1, NAME("i")))),
            ASSIGN(SUB(NAME("values"), 1, NAME("i")), CALL("atomic_sub", 3, NAME("ext"), INT(3), NAME("old"))))));
        int k = FUNC(TACK_FUNC_KERNEL, "histogram", "values bins ext", body);
        tack_argtype sig[3] = {ARR(dts[d], 1), ARR(dts[d], 1), ARR(dts[d], 1)};
        CHECK(cu(k, sig, 3, 1, d == 0));
    }
    /* exchange and compare-and-swap on every dtype (a float's by its bits), and, or and xor on the
     * integers, their old values used */
    for (int d = 0; d < 10; d++) {
        new_module();
        tack_node *blk = BLOCK(2,
            ASSIGN(NAME("old"), CALL("atomic_exch", 3, NAME("ext"), INT(0), SUB(NAME("values"), 1, NAME("i")))),
            ASSIGN(SUB(NAME("values"), 1, NAME("i")),
                   CALL("atomic_cas", 4, NAME("ext"), INT(1), NAME("old"), SUB(NAME("values"), 1, NAME("i")))));
        if (d < 8) {
            tb_add(blk, EXPR(CALL("atomic_and", 3, NAME("ext"), INT(2), SUB(NAME("values"), 1, NAME("i")))));
            tb_add(blk, EXPR(CALL("atomic_or", 3, NAME("ext"), INT(3), SUB(NAME("values"), 1, NAME("i")))));
            tb_add(blk, EXPR(CALL("atomic_xor", 3, NAME("ext"), INT(4), SUB(NAME("values"), 1, NAME("i")))));
        }
        int k = FUNC(TACK_FUNC_KERNEL, "swaps", "values ext", BLOCK(1, RANGE1("i", SHAPE("values", 0), blk)));
        tack_argtype sig[2] = {ARR(dts[d], 1), ARR(dts[d], 1)};
        CHECK(cu(k, sig, 2, 1, d == 0));
    }
    /* a privatized sum into one cell: warp-summed, one atomic per warp */
    tack_dtype sums[] = {TACK_F32, TACK_F64, TACK_I32, TACK_I64, TACK_U8, TACK_I16};
    for (int d = 0; d < 6; d++) {
        new_module();
        tack_node *body = BLOCK(1, RANGE1("i", SHAPE("x", 0), BLOCK(2,
            AUG(TACK_OP_ADD, SUB(NAME("s"), 1, INT(0)), SUB(NAME("x"), 1, NAME("i"))),
            AUG(TACK_OP_SUB, SUB(NAME("s"), 1, INT(1)), SUB(NAME("x"), 1, NAME("i"))))));
        int k = FUNC(TACK_FUNC_KERNEL, "total", "x s", body);
        tack_argtype sig[2] = {ARR(sums[d], 1), ARR(sums[d], 1)};
        tack_compile_options o;
        tack_compile_options_init(&o);
        o.target = "cuda";
        tack_program *p = NULL;
        CHECK(tack_compile(tb_m, k, sig, 2, &o, &p) == TACK_OK);
        CHECK(p && strstr(tack_program_source(p), "tk_wsum(") != NULL);
        tack_program_free(p);
        CHECK(cu(k, sig, 2, 1, 0));
    }
}

/* @tack.func typed per call site, an assert inside one, arrays passed to one */
static void t_funcs(void) {
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
    tack_function_set_body(tb_m, get, BLOCK(3, as, AUG(TACK_OP_ADD, SUB(NAME("arr"), 1, INT(0)), FLT(0.0)),
                                            RETURN(SUB(NAME("arr"), 1, NAME("i")))));
    AT(10, 4);
    tack_node *body = BLOCK(3,
        ASSIGN(NAME("first"), FCALL(get, "get", 2, NAME("x"), INT(0))),
        RANGE1("i", SHAPE("x", 0), BLOCK(2,
            ASSIGN(SUB(NAME("x"), 1, NAME("i")), FCALL(lerp, "lerp", 3, NAME("first"), FLT(1.0), FCALL(get, "get", 2, NAME("x"), NAME("i")))),
            ASSIGN(SUB(NAME("ints"), 1, NAME("i")), FCALL(lerp, "lerp", 3, SUB(NAME("ints"), 1, NAME("i")), INT(10), BIN(TACK_OP_SUB, NAME("k"), INT(1)))))),
        RETURN(NULL));
    int k = FUNC(TACK_FUNC_KERNEL, "apply", "x ints k", body);
    tack_argtype sig[3] = {ARR(TACK_F64, 1), ARR(TACK_I64, 1), WEAK(TACK_I64)};
    CHECK(cu(k, sig, 3, 1, 1));
    if (strcmp(last_layout, "sp")) fprintf(stderr, "layout %s\n", last_layout);
    CHECK(!strcmp(last_layout, "sp")); /* a call is not replicated: one thread runs it */
}

/* vectors and matrices of every kind */
static void t_vectors(void) {
    new_module();
    tack_node *body = BLOCK(1, RANGE1("i", SHAPE("a", 0), BLOCK(7,
        ASSIGN(NAME("n"), CALL("cross", 2, SUB(NAME("a"), 1, NAME("i")), SUB(NAME("b"), 1, NAME("i")))),
        ASSIGN(SUB(NAME("lengths"), 1, NAME("i")), BIN(TACK_OP_ADD, CALL("length", 1, NAME("n")), CALL("dot", 2, NAME("n"), NAME("n")))),
        ASSIGN(NAME("m"), CALL("mat33", 1, FLT(2.0))),
        ASSIGN(NAME("m2"), BIN(TACK_OP_MATMUL, NAME("m"), NAME("m"))),
        ASSIGN(NAME("w"), BIN(TACK_OP_SUB, UN(TACK_OP_NEG, NAME("n")), BIN(TACK_OP_MUL, NAME("n"), NAME("n")))),
        AUG(TACK_OP_ADD, SUB(NAME("lengths"), 1, NAME("i")), BIN(TACK_OP_ADD, SUB(NAME("w"), 1, INT(1)), ATTR(NAME("w"), "z"))),
        ASSIGN(SUB(NAME("out"), 1, NAME("i")),
               BIN(TACK_OP_ADD, BIN(TACK_OP_MATMUL, NAME("m2"), CALL("normalize", 1, NAME("n"))),
                   CALL("vec3", 3, FLT(0.0), FLT(0.0), ATTR(SUB(NAME("a"), 1, NAME("i")), "x")))))));
    int k = FUNC(TACK_FUNC_KERNEL, "normals", "a b out lengths", body);
    tack_argtype sig[4] = {ARR(TACK_VEC3, 1), ARR(TACK_VEC3, 1), ARR(TACK_VEC3, 1), ARR(TACK_F32, 1)};
    CHECK(cu(k, sig, 4, 1, 1));
    tack_argtype sigd[4] = {ARR(TACK_VEC3D, 1), ARR(TACK_VEC3D, 1), ARR(TACK_VEC3D, 1), ARR(TACK_F64, 1)};
    /* mat33 of a float literal is f32: vec3d @ needs mat33d, so build the f64 flavour separately */
    new_module();
    body = BLOCK(1, RANGE1("i", SHAPE("a", 0), BLOCK(3,
        ASSIGN(NAME("n"), CALL("cross", 2, SUB(NAME("a"), 1, NAME("i")), SUB(NAME("b"), 1, NAME("i")))),
        ASSIGN(SUB(NAME("lengths"), 1, NAME("i")), CALL("length", 1, NAME("n"))),
        ASSIGN(SUB(NAME("out"), 1, NAME("i")), CALL("normalize", 1, BIN(TACK_OP_ADD, NAME("n"), SUB(NAME("a"), 1, NAME("i"))))))));
    k = FUNC(TACK_FUNC_KERNEL, "normals_d", "a b out lengths", body);
    CHECK(cu(k, sigd, 4, 1, 0));
    /* integer vectors, 2- and 4-component vectors, matrices from arrays */
    tack_dtype vs[] = {TACK_VEC2, TACK_VEC4, TACK_VEC2I, TACK_VEC3I, TACK_VEC4I, TACK_VEC2D, TACK_VEC4D};
    for (int d = 0; d < 7; d++) {
        new_module();
        body = BLOCK(1, RANGE1("i", SHAPE("a", 0), BLOCK(2,
            ASSIGN(NAME("t"), BIN(TACK_OP_ADD, SUB(NAME("a"), 1, NAME("i")), BIN(TACK_OP_MUL, SUB(NAME("a"), 1, NAME("i")), SUB(NAME("a"), 1, NAME("i"))))),
            ASSIGN(SUB(NAME("a"), 1, NAME("i")), BIN(TACK_OP_SUB, NAME("t"), UN(TACK_OP_NEG, NAME("t")))))));
        k = FUNC(TACK_FUNC_KERNEL, "vecs", "a", body);
        tack_argtype s1[1] = {ARR(vs[d], 1)};
        CHECK(cu(k, s1, 1, 1, 0));
    }
    tack_dtype ms[][2] = {{TACK_MAT22, TACK_VEC2}, {TACK_MAT44, TACK_VEC4}, {TACK_MAT33D, TACK_VEC3D}, {TACK_MAT44D, TACK_VEC4D}};
    for (int d = 0; d < 4; d++) {
        new_module();
        body = BLOCK(1, RANGE1("i", SHAPE("m", 0), BLOCK(2,
            ASSIGN(SUB(NAME("m"), 1, NAME("i")), BIN(TACK_OP_MATMUL, SUB(NAME("m"), 1, NAME("i")), SUB(NAME("m"), 1, NAME("i")))),
            ASSIGN(SUB(NAME("v"), 1, NAME("i")), BIN(TACK_OP_MATMUL, SUB(NAME("m"), 1, NAME("i")), SUB(NAME("v"), 1, NAME("i")))))));
        k = FUNC(TACK_FUNC_KERNEL, "mats", "m v", body);
        tack_argtype s2[2] = {ARR(ms[d][0], 1), ARR(ms[d][1], 1)};
        CHECK(cu(k, s2, 2, 1, 0));
    }
}

/* serial code between loops: one thread for what reads written arrays; print; return */
static void t_phases(void) {
    new_module();
    tack_node *body = BLOCK(7,
        ASSIGN(NAME("n"), SHAPE("x", 0)),
        RANGE1("i", NAME("n"), BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), BIN(TACK_OP_MUL, SUB(NAME("x"), 1, NAME("i")), SUB(NAME("x"), 1, NAME("i")))))),
        ASSIGN(NAME("middle"), SUB(NAME("out"), 1, BIN(TACK_OP_FLOORDIV, NAME("n"), INT(2)))),
        EXPR(CALL("print", 3, STR("middle \"is\"\n"), NAME("middle"), BOOLC(1))),
        IF(CMP(NAME("middle"), TACK_OP_LT, FLT(0.0)), BLOCK(1, RETURN(NULL)), NULL),
        RANGE1("i", NAME("n"), BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), BIN(TACK_OP_SUB, SUB(NAME("out"), 1, NAME("i")), NAME("middle"))))),
        RANGE1("j", INT(4), BLOCK(1, AUG(TACK_OP_ADD, SUB(NAME("out"), 1, NAME("j")), FLT(1.0)))));
    int k = FUNC(TACK_FUNC_KERNEL, "two_phases", "x out", body);
    tack_argtype sig[2] = {ARR(TACK_F64, 1), ARR(TACK_F64, 1)};
    CHECK(cu(k, sig, 2, 1, 1));
    CHECK(!strcmp(last_layout, "pspp"));
    /* only serial code: one thread; a serial loop at the top */
    new_module();
    body = BLOCK(2, ASSIGN(NAME("t"), INT(0)),
                 FOR(NAME("i"), CALL("range", 3, INT(10), INT(0), INT(-3)), BLOCK(1, AUG(TACK_OP_ADD, SUB(NAME("out"), 1, INT(0)), NAME("i")))));
    (void)body;
    /* top-level for loops are parallel; a while loop is serial */
    body = BLOCK(3, ASSIGN(NAME("t"), INT(0)),
                 WHILE(CMP(NAME("t"), TACK_OP_LT, INT(5)), BLOCK(2, AUG(TACK_OP_ADD, SUB(NAME("out"), 1, INT(0)), FLT(1.0)),
                                                             AUG(TACK_OP_ADD, NAME("t"), INT(1)))),
                 FOR(NAME("i"), CALL("range", 3, INT(10), INT(0), INT(-3)), BLOCK(1, AUG(TACK_OP_ADD, SUB(NAME("out"), 1, INT(0)), NAME("i")))));
    k = FUNC(TACK_FUNC_KERNEL, "serial", "x out", body);
    CHECK(cu(k, sig, 2, 1, 0));
    CHECK(!strcmp(last_layout, "sp"));
}

/* stencil over range(1, n - 1); f16 and bool storage */
static void t_storage(void) {
    new_module();
    AT(4, 8);
    tack_node *body = BLOCK(2,
        ASSIGN(NAME("n"), SHAPE("a", 0)),
        FOR(NAME("i"), CALL("range", 2, INT(1), BIN(TACK_OP_SUB, NAME("n"), INT(1))),
            BLOCK(2, ASSIGN(SUB(NAME("out"), 1, NAME("i")),
                BIN(TACK_OP_ADD, BIN(TACK_OP_ADD, SUB(NAME("a"), 1, BIN(TACK_OP_SUB, NAME("i"), INT(1))), SUB(NAME("a"), 1, NAME("i"))),
                    SUB(NAME("a"), 1, BIN(TACK_OP_ADD, NAME("i"), INT(1))))),
                ASSIGN(SUB(NAME("mask"), 1, NAME("i")), CMP(SUB(NAME("out"), 1, NAME("i")), TACK_OP_GT, FLT(0.5))))));
    int k = FUNC(TACK_FUNC_KERNEL, "blur", "a out mask", body);
    tack_argtype sig[3] = {ARR(TACK_F16, 1), ARR(TACK_F16, 1), ARR(TACK_BOOL, 1)};
    CHECK(cu(k, sig, 3, 1, 1));
    CHECK(!strcmp(last_layout, "p"));
    tack_argtype sig2[3] = {ARR(TACK_F32, 1), ARR(TACK_F32, 1), ARR(TACK_BOOL, 1)};
    CHECK(cu(k, sig2, 3, 1, 0));
}

/* scalar parameters of every kind, weak and strong, unsigned 64-bit constants */
static void t_scalars(void) {
    tack_argtype sc[] = {WEAK(TACK_I64), WEAK(TACK_F64), WEAK(TACK_BOOL), SCALAR(TACK_U64), SCALAR(TACK_I8),
                         SCALAR(TACK_F32), SCALAR(TACK_BOOL), SCALAR(TACK_U16)};
    for (int d = 0; d < 8; d++) {
        new_module();
        tack_node *c = tb_node(TACK_N_CONST_INT);
        tack_node_set_uint(c, 18446744073709551615ull);
        tack_node *body = BLOCK(1, RANGE1("i", SHAPE("out", 0), BLOCK(2,
            ASSIGN(SUB(NAME("out"), 1, NAME("i")), BIN(TACK_OP_ADD, SUB(NAME("out"), 1, NAME("i")), NAME("s"))),
            ASSIGN(SUB(NAME("big"), 1, NAME("i")), BIN(TACK_OP_BITAND, SUB(NAME("big"), 1, NAME("i")), c)))));
        int k = FUNC(TACK_FUNC_KERNEL, "scal", "out big s", body);
        tack_argtype sig[3] = {ARR(TACK_F64, 1), ARR(TACK_U64, 1), sc[d]};
        CHECK(cu(k, sig, 3, 1, 0));
    }
}

/* the CUDA dialect leaves the C dialect alone */
static void t_cpu_untouched(void) {
    new_module();
    tack_node *body = BLOCK(1, RANGE1("i", SHAPE("out", 0),
        BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), CALL("vec3", 3, FLT(1.0), FLT(__builtin_nan("")), FLT(__builtin_inf()))))));
    int k = FUNC(TACK_FUNC_KERNEL, "c_only", "out", body);
    tack_argtype sig[1] = {ARR(TACK_VEC3, 1)};
    tack_program *p = NULL;
    CHECK(tack_compile(tb_m, k, sig, 1, NULL, &p) == TACK_OK);
    const char *s = p ? tack_program_source(p) : "";
    CHECK(strstr(s, "__builtin_nanf(\"\")") && strstr(s, "((tk_vec3){{") && strstr(s, "tack_entry") &&
          !strstr(s, "__global__"));
    tack_program_free(p);
    tack_compile_options o;
    tack_compile_options_init(&o);
    o.target = "vulkan";
    p = NULL;
    CHECK(tack_compile(tb_m, k, sig, 1, &o, &p) == TACK_ERR_UNSUPPORTED && p == NULL);
    /* metal is a target (dialect_msl.c): MSL, its own layout comment, f32 NaN spelled NAN */
    o.target = "metal";
    CHECK(tack_compile(tb_m, k, sig, 1, &o, &p) == TACK_OK);
    s = p ? tack_program_source(p) : "";
    CHECK(strstr(s, "#include <metal_stdlib>") && strstr(s, "/* tack-metal: phases=p frame=0 */") &&
          strstr(s, "tk_vec3{{") && strstr(s, "NAN") && !strstr(s, "__builtin_nanf"));
    tack_program_free(p);
    p = NULL;
    /* a CUDA program cannot be built for the CPU */
    o.target = "cuda";
    CHECK(tack_compile(tb_m, k, sig, 1, &o, &p) == TACK_OK);
    tack_program_free(p);
}

/* ------------------------------------------------------------ on a GPU */
static tack_program *gpu_build(int k, const tack_argtype *sig, int n, tack_device *dev) {
    tack_compile_options o;
    tack_compile_options_init(&o);
    o.target = "cuda";
    tack_program *p = NULL;
    if (tack_compile(tb_m, k, sig, n, &o, &p) != TACK_OK) return NULL;
    if (tack_program_build(p, dev) != TACK_OK) {
        fprintf(stderr, "build for %s: %s\n", tack_device_name(dev), tack_last_error());
        tack_program_free(p);
        return NULL;
    }
    return p;
}

static tack_array *gpu_array(tack_device *dev, tack_dtype dt, int64_t n, const void *host) {
    tack_array *a = NULL;
    if (tack_array_zeros(dev, dt, 1, &n, &a) != TACK_OK) return NULL;
    if (host && tack_array_copy_from_host(a, host, tack_array_nbytes(a)) != TACK_OK) {
        tack_array_release(a);
        return NULL;
    }
    return a;
}

/* With a CUDA device: kernels run, phases order, atomics add up, a failed
 * check is reported at the synchronization point and then cleared. */
static void t_gpu(tack_device *dev) {
    enum { N = 100000 };
    static float x[N], y[N], back[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = 1.0f;
    }
    new_module();
    tack_node *body = BLOCK(1, RANGE1("i", SHAPE("out", 0),
        BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")),
                        BIN(TACK_OP_ADD, SUB(NAME("a"), 1, NAME("i")),
                            BIN(TACK_OP_MUL, SUB(NAME("out"), 1, NAME("i")), NAME("s")))))));
    int k = FUNC(TACK_FUNC_KERNEL, "axpy", "a out s", body);
    tack_argtype sig[3] = {ARR(TACK_F32, 1), ARR(TACK_F32, 1), WEAK(TACK_F64)};
    tack_program *p = gpu_build(k, sig, 3, dev);
    CHECK(p != NULL);
    tack_array *a = gpu_array(dev, TACK_F32, N, x), *out = gpu_array(dev, TACK_F32, N, y);
    CHECK(a && out);
    if (p && a && out) {
        tack_arg args[3];
        memset(args, 0, sizeof args);
        args[0].array = a;
        args[1].array = out;
        args[2].scalar.f = 2.0;
        CHECK(tack_launch(p, args, 3) == TACK_OK);
        CHECK(tack_launch(p, args, 3) == TACK_OK);
        CHECK(tack_array_copy_to_host(out, back, sizeof back) == TACK_OK);
        int ok = 1;
        for (int i = 0; i < N; i++) ok &= back[i] == 3.0f * (float)i + 4.0f;
        CHECK(ok);
        /* out of bounds: reported at the synchronization, naming the kernel; then cleared */
        tack_array *small = gpu_array(dev, TACK_F32, 10, NULL);
        args[0].array = small; /* a[i] for i up to out's length */
        CHECK(tack_launch(p, args, 3) == TACK_OK);
        CHECK(tack_device_synchronize(dev) == TACK_ERR_INDEX);
        CHECK(strstr(tack_last_error(), "array 'a', kernel axpy") != NULL);
        CHECK(tack_device_synchronize(dev) == TACK_OK);
        tack_array_release(small);
    }
    tack_program_free(p);
    /* serial code between loops, a privatized sum, integer atomics */
    new_module();
    body = BLOCK(4,
        RANGE1("i", SHAPE("x", 0), BLOCK(2, AUG(TACK_OP_ADD, SUB(NAME("s"), 1, INT(0)), SUB(NAME("x"), 1, NAME("i"))),
                                        AUG(TACK_OP_ADD, SUB(NAME("h"), 1, BIN(TACK_OP_MOD, NAME("i"), INT(7))), INT(1)))),
        ASSIGN(NAME("t"), SUB(NAME("s"), 1, INT(0))),
        RANGE1("i", INT(3), BLOCK(1, ASSIGN(SUB(NAME("s"), 1, BIN(TACK_OP_ADD, NAME("i"), INT(1))), NAME("t")))),
        ASSIGN(SUB(NAME("s"), 1, INT(4)), BIN(TACK_OP_MUL, NAME("t"), FLT(2.0))));
    k = FUNC(TACK_FUNC_KERNEL, "sums", "x s h", body);
    tack_argtype sig2[3] = {ARR(TACK_F64, 1), ARR(TACK_F64, 1), ARR(TACK_I64, 1)};
    p = gpu_build(k, sig2, 3, dev);
    CHECK(p != NULL);
    static double ones[N];
    for (int i = 0; i < N; i++) ones[i] = 1.0;
    tack_array *xs = gpu_array(dev, TACK_F64, N, ones), *s = gpu_array(dev, TACK_F64, 5, NULL),
               *h = gpu_array(dev, TACK_I64, 7, NULL);
    if (p && xs && s && h) {
        tack_arg args[3];
        memset(args, 0, sizeof args);
        args[0].array = xs;
        args[1].array = s;
        args[2].array = h;
        CHECK(tack_launch(p, args, 3) == TACK_OK);
        double sv[5];
        int64_t hv[7];
        CHECK(tack_array_copy_to_host(s, sv, sizeof sv) == TACK_OK);
        CHECK(tack_array_copy_to_host(h, hv, sizeof hv) == TACK_OK);
        CHECK(sv[0] == N && sv[1] == N && sv[2] == N && sv[3] == N && sv[4] == 2.0 * N);
        int64_t sum = 0;
        for (int i = 0; i < 7; i++) sum += hv[i];
        CHECK(sum == N && hv[0] == (N + 6) / 7);
    }
    tack_array_release(xs);
    tack_array_release(s);
    tack_array_release(h);
    tack_program_free(p);
    tack_array_release(a);
    tack_array_release(out);
}

int main(void) {
    have_nvrtc = tack_nvrtc_version() != 0;
    have_nvcc = system("nvcc --version > /dev/null 2>&1") == 0;
    if (!have_nvrtc) printf("SKIP: test_cuda_codegen, compiling the generated CUDA source with NVRTC; the source is still generated and checked (NVRTC not found: no libnvrtc could be loaded)\n");
    if (!have_nvcc) printf("SKIP: test_cuda_codegen, the nvcc builds (nvcc not found on PATH)\n");
    t_add();
    t_ndrange();
    t_int_semantics();
    t_control_flow();
    t_math();
    t_atomics();
    t_funcs();
    t_vectors();
    t_phases();
    t_storage();
    t_scalars();
    t_cpu_untouched();
    tack_device *gpu = NULL;
    if (tack_device_get("cuda", &gpu) == TACK_OK) t_gpu(gpu);
    else printf("no CUDA device: %s\n", tack_last_error());
    if (tb_m) tack_module_free(tb_m);
    printf("%d passed, %d failed; PTX compiled: %d for sm_80, %d for sm_90; nvcc builds: %d\n", check_passed, check_failed,
           ptx_compiles[0], ptx_compiles[1], nvcc_builds);
    return check_failed != 0;
}
