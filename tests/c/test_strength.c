/*
 * test_strength.c -- strength.c differentially: the same kernels compiled
 * with the passes on and off (tack_compile_options.optimize) must give the
 * same results, bit for bit, for dividends and divisors on both sides of
 * every bound the fast division relies on.
 *
 *     for i in range(lo, lo + q.shape[0]):
 *         q[i - lo] = i // d                  # index // invariant: segmented or fast
 *         r[i - lo] = i % d
 *         m = d * 3                           # invariant assignment: moved out
 *         s[i - lo] = (i // d) % 7 + (i % 1000) // m + a[i - lo] // d
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tack.h"
#include "tack_kernel.h"
#include "check.h"
#include "tk_ast.h"


static tack_device *cpu;

static tack_program *build(int k, const tack_argtype *sig, int n, int optimize) {
    tack_compile_options o;
    tack_compile_options_init(&o);
    o.optimize = optimize;
    tack_program *p = NULL;
    if (tack_compile(tb_m, k, sig, n, &o, &p) != TACK_OK) return NULL;
    if (tack_program_build(p, cpu) != TACK_OK) {
        tack_program_free(p);
        return NULL;
    }
    return p;
}

static tack_array *arr(int64_t n) {
    tack_array *a = NULL;
    if (tack_array_zeros(cpu, TACK_I64, 1, &n, &a) != TACK_OK) abort();
    return a;
}

static tack_node *I_MINUS_LO(void) { return BIN(TACK_OP_SUB, NAME("i"), NAME("lo")); }

int main(void) {
    if (tack_device_get("cpu", &cpu) != TACK_OK) return 1;
    tack_module_new(&tb_m);
    AT(2, 4);
    tack_node *body = BLOCK(1, FOR(NAME("i"), CALL("range", 2, NAME("lo"), BIN(TACK_OP_ADD, NAME("lo"), SHAPE("q", 0))),
        BLOCK(4,
              ASSIGN(SUB(NAME("q"), 1, I_MINUS_LO()), BIN(TACK_OP_FLOORDIV, NAME("i"), NAME("d"))),
              ASSIGN(SUB(NAME("r"), 1, I_MINUS_LO()), BIN(TACK_OP_MOD, NAME("i"), NAME("d"))),
              ASSIGN(NAME("m"), BIN(TACK_OP_MUL, NAME("d"), INT(3))),
              ASSIGN(SUB(NAME("s"), 1, I_MINUS_LO()),
                     BIN(TACK_OP_ADD,
                         BIN(TACK_OP_ADD, BIN(TACK_OP_MOD, BIN(TACK_OP_FLOORDIV, NAME("i"), NAME("d")), INT(7)),
                             BIN(TACK_OP_FLOORDIV, BIN(TACK_OP_MOD, NAME("i"), INT(1000)), NAME("m"))),
                         BIN(TACK_OP_FLOORDIV, SUB(NAME("a"), 1, I_MINUS_LO()), NAME("d")))))));
    int k = FUNC(TACK_FUNC_KERNEL, "divs", "q r s a lo d", body);
    tack_argtype sig[6] = {ARR(TACK_I64, 1), ARR(TACK_I64, 1), ARR(TACK_I64, 1), ARR(TACK_I64, 1),
                           WEAK(TACK_I64), WEAK(TACK_I64)};
    tack_program *fast = build(k, sig, 6, 1), *plain = build(k, sig, 6, 0);
    CHECK(fast && plain);
    if (!fast || !plain) return 1;
    const char *src = tack_program_source(fast);
    CHECK(strstr(src, "tk_fdivq_i64(v") != NULL && strstr(src, "for (int64_t s_ = lo_") != NULL);
    CHECK(strstr(tack_program_source(plain), "tk_fdivq_i64(v") == NULL);

    const int64_t B52 = (int64_t)1 << 52, B50 = (int64_t)1 << 50;
    const int64_t los[] = {0, -5000, 123456789, -B50 - 7, B50 - 40000, B52 - 3000, -B52 - 3000, INT64_MIN,
                           INT64_MAX - 70000};
    const int64_t ds[] = {1, -1, 2, -3, 63, 64, -64, 1000, -1000, 65536, (int64_t)1 << 40, B52 - 1, -(B52 - 1),
                          B52, -B52, (int64_t)1 << 61, INT64_MAX, INT64_MIN};
    const int64_t n = 70001;
    tack_array *out[2][3];
    for (int v = 0; v < 2; v++)
        for (int j = 0; j < 3; j++) out[v][j] = arr(n);
    tack_array *a = arr(n);
    int64_t *pa = tack_array_data(a);
    uint64_t x = 88172645463325252ull;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        pa[i] = i % 3 == 0 ? (int64_t)x : i % 3 == 1 ? (int64_t)(x % 2000001) - 1000000 : (int64_t)(x >> 11) - (B52 >> 1);
    }
    pa[0] = INT64_MIN;
    pa[1] = INT64_MAX;
    int same = 1, ran = 0;
    for (size_t li = 0; li < sizeof los / sizeof *los; li++)
        for (size_t di = 0; di < sizeof ds / sizeof *ds; di++) {
            tack_program *ps[2] = {fast, plain};
            for (int v = 0; v < 2; v++) {
                tack_arg args[6] = {A(out[v][0]), A(out[v][1]), A(out[v][2]), A(a), I64(los[li]), I64(ds[di])};
                if (tack_launch(ps[v], args, 6) != TACK_OK) same = 0;
            }
            for (int j = 0; j < 3; j++)
                if (memcmp(tack_array_data(out[0][j]), tack_array_data(out[1][j]), (size_t)n * 8)) {
                    same = 0;
                    fprintf(stderr, "lo %lld d %lld: output %d differs\n", (long long)los[li], (long long)ds[di], j);
                }
            ran++;
        }
    CHECK(same && ran > 100);
    /* spot check against C: i // d for positive i and d */
    {
        tack_arg args[6] = {A(out[0][0]), A(out[0][1]), A(out[0][2]), A(a), I64(1000), I64(77)};
        CHECK(tack_launch(fast, args, 6) == TACK_OK);
        int64_t *q = tack_array_data(out[0][0]), *r = tack_array_data(out[0][1]);
        int ok = 1;
        for (int64_t i = 0; i < n; i++)
            if (q[i] != (1000 + i) / 77 || r[i] != (1000 + i) % 77) ok = 0;
        CHECK(ok);
    }
    /* a zero divisor: the hoisted check fails before the loop */
    {
        tack_arg args[6] = {A(out[0][0]), A(out[0][1]), A(out[0][2]), A(a), I64(0), I64(0)};
        CHECK(tack_launch(fast, args, 6) == TACK_ERR_ZERODIV);
    }
    for (int v = 0; v < 2; v++)
        for (int j = 0; j < 3; j++) tack_array_release(out[v][j]);
    tack_array_release(a);
    tack_program_free(fast);
    tack_program_free(plain);
    tack_module_free(tb_m);
    return CHECK_SUMMARY();
}
