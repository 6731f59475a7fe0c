/*
 * test_opencl.c -- the OpenCL backend against a real driver.
 *
 * The backend needs no GPU to be tested: PoCL, a CPU implementation of
 * OpenCL (Debian: ocl-icd-libopencl1 pocl-opencl-icd), runs real OpenCL C.
 * When the backend finds no device this test says why and passes as a skip.
 *
 * The compiler does not emit the "opencl" dialect yet, so the kernels here
 * are hand-written OpenCL C following the launch convention that
 * opencl_launch.c documents (the layout comment last, tk_phaseN kernels,
 * arguments ctx, frame, prog, then per parameter), wrapped into programs by
 * tk_program_from_source (opencl_programs.h, which the Level Zero tests
 * share, and the few of this test's own).  Covered: the device list and names, memory
 * (round trips, fills of every pattern width, 0-byte arrays, copies between
 * devices), launches and their results, the work-groups a phase launches
 * (sized from its loop's extent), a frame buffer shared by three phases, scalar packing, the error record (reported at synchronize, at a
 * copy to the host, at once for shared arrays, after the program is freed;
 * cleared after), build errors, the fp64 refusal, the disk cache (a second
 * build loads, a damaged, foreign or refused entry is rebuilt), failed host
 * allocations while building, and Tack without OpenCL (the test runs
 * itself again with a libOpenCL.so.1 that cannot load, and with a loader
 * that finds no driver).  Both memory modes: where the device has
 * fine-grained SVM the memory, launch and sharing tests run on SVM arrays,
 * then again in a child with TACK_OPENCL_SVM=0 on cl_mem buffers.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/common/kcache.h"
#include "backends/opencl/opencl_backend.h"
#include "check.h"
#include "opencl_programs.h"
#include "runtime/program.h"
#include "tack.h"
#include "tack_dlpack.h"
#include "tack_kernel.h"

/* out = 2x + sum(2x): a parallel phase, a serial sum into the frame, a parallel phase reading it */
static const char PHASES[] =
    "/* tack-opencl: phases=s frame=0 fp64=0 (a decoy: only the last comment counts) */\n" CTX
    "#define ARGS __global tk_ctx *ctx, __global uchar *frame, ulong prog, __global long *out, long n, "
    "__global const long *x, long xn\n"
    "__kernel void tk_phase0(ARGS) {\n"
    "    for (long i = get_global_id(0); i < n; i += get_global_size(0)) out[i] = 2 * x[i];\n"
    "}\n"
    "__kernel void tk_phase1(ARGS) {\n"
    "    long s = 0;\n"
    "    for (long i = 0; i < n; i++) s += out[i];\n"
    "    *(__global long *)frame = s;\n"
    "}\n"
    "__kernel void tk_phase2(ARGS) {\n"
    "    long s = *(__global const long *)frame;\n"
    "    for (long i = get_global_id(0); i < n; i += get_global_size(0)) out[i] += s;\n"
    "}\n"
    "/* tack-opencl: phases=psp frame=8 fp64=0 */\n";

/* every scalar kind as the launcher packs it */
static const char SCALARS[] =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" CTX
    "__kernel void tk_phase0(__global tk_ctx *ctx, __global uchar *frame, ulong prog, __global long *out, long n,\n"
    "                        ulong si, ulong su, ulong sb, ulong sf) {\n"
    "    out[0] = (long)si; out[1] = (long)su; out[2] = (long)sb; out[3] = (long)(as_double(sf) * 4.0);\n"
    "}\n"
    "/* tack-opencl: phases=s frame=0 fp64=1 */\n";

/* Each phase says the groups and the work-group size it was launched with (out[2k], out[2k + 1]):
 * a loop over x (its extent in the source's tack-grid-work), one over x.shape[0] * k (a product), a
 * blocks loop of k blocks of 4, a loop whose extent the source does not say, and a serial phase.
 * The first and the blocks loop also write out[10 + i] (i < xn) and out[10 + xn + b] (b < k), so a
 * grid-stride loop that misses an iteration shows. */
static const char GRID[] =
    CTX "#define ARGS __global tk_ctx *ctx, __global uchar *frame, ulong prog, __global long *out, long on, "
        "__global const long *x, long xn, ulong k\n"
        "#define SAY(K) if (get_global_id(0) == 0) { out[2 * K] = get_num_groups(0); out[2 * K + 1] = get_local_size(0); }\n"
        "__kernel void tk_phase0(ARGS) {\n"
        "    SAY(0)\n"
        "    for (long i = get_global_id(0); i < xn; i += get_global_size(0)) out[10 + i] = i + 1;\n"
        "}\n"
        "__kernel void tk_phase1(ARGS) { SAY(1) }\n"
        "__kernel void tk_phase2(ARGS) {\n"
        "    SAY(2)\n"
        "    for (ulong b = get_group_id(0); b < k; b += get_num_groups(0)) {\n"
        "        barrier(CLK_LOCAL_MEM_FENCE);\n"
        "        if (get_local_id(0) == 3) out[10 + xn + b] = (long)b + 1;\n"
        "    }\n"
        "}\n"
        "__kernel void tk_phase3(ARGS) { SAY(3) }\n"
        "__kernel void tk_phase4(ARGS) { SAY(4) }\n"
        "/* tack-grid-work: 0:s1.0, 1:s1.0,i2,*, 2:i2, */\n"
        "/* tack-opencl: phases=ppbps frame=0 fp64=0 */\n"
        "/* tack-grid-block: 2:4 */\n";

static char base[] = "/tmp/tack-opencl-XXXXXX";
static char exe[600];

/* ------------------------------------------------------------ stderr capture */
static int saved_fd = -1;
static char logbuf[32768];

static void capture_begin(void) {
    char path[700];
    snprintf(path, sizeof path, "%s/log.txt", base);
    fflush(stderr);
    saved_fd = dup(2);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
}

static const char *capture_end(void) {
    char path[700];
    snprintf(path, sizeof path, "%s/log.txt", base);
    fflush(stderr);
    dup2(saved_fd, 2);
    close(saved_fd);
    logbuf[0] = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(logbuf, 1, sizeof logbuf - 1, f);
        logbuf[n] = 0;
        fclose(f);
    }
    return logbuf;
}

/* ------------------------------------------------------------------ memory */
static void test_devices(tack_device *g) {
    tack_device *list[32], *x = NULL;
    int n = tack_devices(list, 32), seen = 0;
    for (int i = 0; i < n && i < 32; i++) seen += list[i] == g;
    CHECK(seen == 1);
    CHECK(strcmp(tack_device_name(g), "opencl:0") == 0);
    CHECK(tack_device_kind(g) == TACK_DEVICE_OPENCL && TACK_DEVICE_OPENCL == 4);
    CHECK(strcmp(tack_device_dialect(g), "opencl") == 0);
    CHECK(tack_device_index(g) == 0 && tack_device_threads(g) >= 1);
    /* PoCL's device is the host CPU's cores; a GPU's OpenCL device would say 0 */
    CHECK(tack_device_on_host_cores(g) == ((const ocl_dev *)g->state)->lazy_binary);
    if (strstr(tack_device_description(g), "Portable Computing Language")) CHECK(tack_device_on_host_cores(g) == 1);
    CHECK(tack_device_get("opencl:0", &x) == TACK_OK && x == g);
    CHECK(tack_device_from_type(TACK_DEVICE_OPENCL, 0, &x) == TACK_OK && x == g);
    CHECK(tack_device_get("opencl:31", &x) == TACK_ERR_DEVICE && strstr(tack_last_error(), "'opencl:31'"));
    CHECK(tack_device_get("opencl:x", &x) == TACK_ERR_VALUE);
    CHECK(tack_device_get("openc1", &x) == TACK_ERR_VALUE && strstr(tack_last_error(), "'opencl:N'"));
    const ocl_dev *c = g->state;
    printf("opencl:0 is %s: %u compute units, work-groups up to %zu, fp64 %s; arrays in %s%s%s\n", c->name,
           (unsigned)c->units, c->max_group, c->fp64 ? "yes" : "no",
           c->svm ? "fine-grained shared virtual memory" : "cl_mem buffers (", c->svm ? "" : c->no_svm,
           c->svm ? "" : ")");
}

static void test_memory(tack_device *g, tack_device *cpu) {
    enum { N = 1000 };
    int64_t n = N, zero = 0;
    float host[N], back[N];
    for (int i = 0; i < N; i++) host[i] = (float)i * 0.5f;
    tack_array *a = NULL, *b = NULL, *c = NULL, *e = NULL, *h = NULL;
    CHECK(tack_array_empty(g, TACK_F32, 1, &n, &a) == TACK_OK);
    CHECK(tack_array_copy_from_host(a, host, sizeof host) == TACK_OK);
    memset(back, 0, sizeof back);
    CHECK(tack_array_copy_to_host(a, back, sizeof back) == TACK_OK);
    CHECK(memcmp(host, back, sizeof host) == 0);
    /* between buffers of the device, to the host device and back */
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &b) == TACK_OK);
    CHECK(tack_array_copy_to_host(b, back, sizeof back) == TACK_OK && back[0] == 0.0f && back[N - 1] == 0.0f);
    CHECK(tack_array_copy(b, a) == TACK_OK);
    CHECK(tack_array_copy(b, b) == TACK_OK);
    CHECK(tack_array_clone(b, cpu, &h) == TACK_OK && memcmp(tack_array_data(h), host, sizeof host) == 0);
    CHECK(tack_array_clone(h, g, &c) == TACK_OK);
    memset(back, 0, sizeof back);
    CHECK(tack_array_copy_to_host(c, back, sizeof back) == TACK_OK && memcmp(host, back, sizeof host) == 0);
    /* fills: 4-byte and 1-byte patterns, and a 12-byte element staged through the host */
    float v = 3.25f;
    CHECK(tack_array_fill(a, &v) == TACK_OK);
    CHECK(tack_array_copy_to_host(a, back, sizeof back) == TACK_OK && back[0] == v && back[N - 1] == v);
    tack_array *u8 = NULL, *v3 = NULL, *m4 = NULL;
    unsigned char bytes[N], one = 7;
    CHECK(tack_array_empty(g, TACK_U8, 1, &n, &u8) == TACK_OK && tack_array_fill(u8, &one) == TACK_OK);
    CHECK(tack_array_copy_to_host(u8, bytes, sizeof bytes) == TACK_OK && bytes[0] == 7 && bytes[N - 1] == 7);
    float vec[3] = {1, 2, 3}, vh[3 * 10];
    int64_t ten = 10;
    CHECK(tack_array_empty(g, TACK_VEC3, 1, &ten, &v3) == TACK_OK && tack_array_fill(v3, vec) == TACK_OK);
    CHECK(tack_array_copy_to_host(v3, vh, sizeof vh) == TACK_OK && vh[27] == 1 && vh[28] == 2 && vh[29] == 3);
    double mat[16], mh[16 * 10];
    for (int i = 0; i < 16; i++) mat[i] = i;
    CHECK(tack_array_empty(g, TACK_MAT44D, 1, &ten, &m4) == TACK_OK && tack_array_fill(m4, mat) == TACK_OK);
    CHECK(tack_array_copy_to_host(m4, mh, sizeof mh) == TACK_OK && mh[16 * 9 + 15] == 15.0);
    /* an empty array still has a handle */
    CHECK(tack_array_zeros(g, TACK_F32, 1, &zero, &e) == TACK_OK && tack_array_data(e) != NULL);
    CHECK(tack_array_copy_to_host(e, back, 0) == TACK_OK && tack_array_fill(e, &v) == TACK_OK);
    CHECK(tack_array_copy_to_host(a, back, 4) == TACK_ERR_VALUE); /* the size is checked before the backend */
    CHECK(tack_device_synchronize(g) == TACK_OK);
    tack_array *arrays[] = {a, b, c, e, h, u8, v3, m4};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) tack_array_release(arrays[i]);
}

/* ----------------------------------------------------------------- sharing */
/* What each memory mode shares: in the SVM mode an array's data pointer is
 * a host address inside Tack's allocation, which wraps (any part of it) and
 * exports as host memory; in the buffer mode nothing wraps, and the refusal
 * says the device has no shared virtual memory and why. */
static void test_sharing(tack_device *g, const tack_program *saxpy) {
    const ocl_dev *c = g->state;
    enum { N = 64 };
    int64_t n = N, four = 4, eight = 8, one = 1;
    float host[N], back[N];
    for (int i = 0; i < N; i++) host[i] = (float)i;
    tack_array *a = NULL, *w = NULL;
    CHECK(tack_array_empty(g, TACK_F32, 1, &n, &a) == TACK_OK && tack_array_copy_from_host(a, host, sizeof host) == TACK_OK);
    float *p = tack_array_data(a);
    DLDevice dl = tack_device_to_dlpack(g);
    if (!c->svm) {
        CHECK(dl.device_type == kDLOpenCL && dl.device_id == 0); /* the cl_mem, as DLPack says for OpenCL */
        CHECK(tack_array_wrap(g, TACK_F32, 1, &four, p, 1, NULL, NULL, &w) == TACK_ERR_UNSUPPORTED);
        CHECK(strstr(tack_last_error(), "opencl:0") && strstr(tack_last_error(), "has no shared virtual memory") &&
              strstr(tack_last_error(), c->no_svm));
        tack_array_release(a);
        return;
    }
    CHECK(c->svm_caps & TACK_CL_DEVICE_SVM_FINE_GRAIN_BUFFER);
    CHECK(dl.device_type == kDLCPU && dl.device_id == 0); /* host memory, which the host reads as it is */
    CHECK(tack_device_synchronize(g) == TACK_OK && p[5] == 5.0f && p[N - 1] == (float)(N - 1));
    p[7] = -7.0f; /* and writes: the device sees it */
    CHECK(tack_array_copy_to_host(a, back, sizeof back) == TACK_OK && back[7] == -7.0f);
    /* a wrap of part of it: copies, fills and launches go through the address */
    CHECK(tack_array_wrap(g, TACK_F32, 1, &eight, p + 8, 1, NULL, NULL, &w) == TACK_OK);
    float v = 2.0f;
    CHECK(tack_array_fill(w, &v) == TACK_OK);
    tack_arg args[3];
    memset(args, 0, sizeof args);
    args[0].array = w; /* y = 3 * x + y, with x the first 8 elements */
    int64_t eight_again = 8;
    tack_array *x = NULL;
    CHECK(tack_array_wrap(g, TACK_F32, 1, &eight_again, p, 0, NULL, NULL, &x) == TACK_OK);
    args[1].array = x;
    args[2].scalar.f = 3.0;
    CHECK(tack_launch((tack_program *)saxpy, args, 3) == TACK_OK);
    CHECK(tack_array_copy_to_host(a, back, sizeof back) == TACK_OK);
    CHECK(back[8] == 2.0f && back[9] == 5.0f && back[15] == 2.0f + 3.0f * -7.0f && back[16] == 16.0f);
    tack_array_release(x);
    tack_array_release(w);
    /* a vec4 fill at an address that is not a multiple of 16: staged, not an OpenCL pattern fill */
    float q[4] = {1, 2, 3, 4};
    CHECK(tack_array_wrap(g, TACK_VEC4, 1, &one, p + 33, 1, NULL, NULL, &w) == TACK_OK);
    CHECK(tack_array_fill(w, q) == TACK_OK && tack_device_synchronize(g) == TACK_OK);
    CHECK(p[32] == 32.0f && p[33] == 1.0f && p[36] == 4.0f && p[37] == 37.0f);
    tack_array_release(w);
    /* what is refused: past the end, host memory, an address once Tack's but freed */
    CHECK(tack_array_wrap(g, TACK_F32, 1, &n, p + 1, 0, NULL, NULL, &w) == TACK_ERR_VALUE &&
          strstr(tack_last_error(), "run past the end of the 256-byte shared virtual memory allocation"));
    CHECK(tack_array_wrap(g, TACK_F32, 1, &four, host, 0, NULL, NULL, &w) == TACK_ERR_VALUE &&
          strstr(tack_last_error(), "not in shared virtual memory Tack allocated there"));
    tack_array_release(a);
    CHECK(tack_array_wrap(g, TACK_F32, 1, &four, p, 0, NULL, NULL, &w) == TACK_ERR_VALUE);
    CHECK(tack_device_synchronize(g) == TACK_OK);
}

/* ----------------------------------------------------------------- kernels */
static const tk_pinfo saxpy_params[3] = {
    {"y", 1, TACK_F32, 1, 0, 1, 0, 0, TACK_DTYPE_COUNT, 0, 0, 0, 0, 0},
    {"x", 1, TACK_F32, 1, 0, 0, 0, 0, TACK_DTYPE_COUNT, 0, 0, 0, 0, 0},
    {"a", 0, TACK_F32, 0, 0, 0, 0, 0, TACK_DTYPE_COUNT, 1, 0, 0, 0, 0},
};

/* Run saxpy with p on n elements; 1 when every result is right. */
static int run_saxpy(tack_program *p, tack_device *g, int64_t n) {
    float *x = malloc((size_t)n * 4 + 4), *y = malloc((size_t)n * 4 + 4);
    tack_array *ax = NULL, *ay = NULL;
    int ok = x && y;
    for (int64_t i = 0; ok && i < n; i++) x[i] = (float)i, y[i] = 1.0f;
    ok = ok && tack_array_empty(g, TACK_F32, 1, &n, &ax) == TACK_OK && tack_array_empty(g, TACK_F32, 1, &n, &ay) == TACK_OK;
    ok = ok && tack_array_copy_from_host(ax, x, (size_t)n * 4) == TACK_OK &&
         tack_array_copy_from_host(ay, y, (size_t)n * 4) == TACK_OK;
    tack_arg args[3];
    memset(args, 0, sizeof args);
    args[0].array = ay;
    args[1].array = ax;
    args[2].scalar.f = 2.5;
    ok = ok && tack_launch(p, args, 3) == TACK_OK && tack_launch(p, args, 3) == TACK_OK;
    ok = ok && tack_array_copy_to_host(ay, y, (size_t)n * 4) == TACK_OK;
    for (int64_t i = 0; ok && i < n; i++)
        if (y[i] != 5.0f * (float)i + 1.0f) {
            fprintf(stderr, "saxpy: y[%lld] = %g\n", (long long)i, y[i]);
            ok = 0;
        }
    tack_array_release(ax);
    tack_array_release(ay);
    free(x);
    free(y);
    return ok;
}

static void test_launch(tack_device *g, tack_device *cpu) {
    tack_program *p = program("saxpy", SAXPY, 3, saxpy_params);
    CHECK(tack_program_build(p, g) == TACK_OK);
    CHECK(run_saxpy(p, g, 100003));
    CHECK(run_saxpy(p, g, 1));
    CHECK(run_saxpy(p, g, 0));
    test_sharing(g, p);
    /* tack_launch's checks apply: a CPU array is refused */
    int64_t n = 4;
    tack_array *ca = NULL, *ga = NULL;
    CHECK(tack_array_zeros(cpu, TACK_F32, 1, &n, &ca) == TACK_OK && tack_array_zeros(g, TACK_F32, 1, &n, &ga) == TACK_OK);
    tack_arg args[3] = {{ga, {0}}, {ca, {0}}, {NULL, {0}}};
    CHECK(tack_launch(p, args, 3) == TACK_ERR_DEVICE && strstr(tack_last_error(), "is on cpu"));
    tack_array_release(ca);
    tack_array_release(ga);
    tack_program_free(p);

    /* three phases sharing the frame, twice (the frame is reused) */
    tk_pinfo pp[2] = {arr("out", TACK_I64, 1), arr("x", TACK_I64, 0)};
    p = program("phases", PHASES, 2, pp);
    CHECK(tack_program_build(p, g) == TACK_OK);
    enum { M = 5000 };
    int64_t m = M, xs[M], out[M], sum = 0;
    for (int i = 0; i < M; i++) xs[i] = i % 7 - 3, sum += 2 * xs[i];
    tack_array *ao = NULL, *ax = NULL;
    CHECK(tack_array_zeros(g, TACK_I64, 1, &m, &ao) == TACK_OK && tack_array_empty(g, TACK_I64, 1, &m, &ax) == TACK_OK);
    CHECK(tack_array_copy_from_host(ax, xs, sizeof xs) == TACK_OK);
    tack_arg pa[2] = {{ao, {0}}, {ax, {0}}};
    for (int round = 0; round < 2; round++) {
        CHECK(tack_launch(p, pa, 2) == TACK_OK);
        CHECK(tack_array_copy_to_host(ao, out, sizeof out) == TACK_OK);
        int good = 1;
        for (int i = 0; i < M; i++) good &= out[i] == 2 * xs[i] + sum;
        CHECK(good);
    }
    tack_array_release(ax);
    tack_program_free(p);

    /* scalars: an int's, a uint's, a bool's bits and a float as a double */
    tk_pinfo sp[5] = {arr("out", TACK_I64, 1), scalar("si", TACK_I64), scalar("su", TACK_U32), scalar("sb", TACK_BOOL),
                      scalar("sf", TACK_F64)};
    p = program("scalars", SCALARS, 5, sp);
    CHECK(tack_program_build(p, g) == TACK_OK);
    tack_arg sa[5];
    memset(sa, 0, sizeof sa);
    sa[0].array = ao;
    sa[1].scalar.i = -5;
    sa[2].scalar.u = 4000000000u;
    sa[3].scalar.u = 1;
    sa[4].scalar.f = 2.25;
    CHECK(tack_launch(p, sa, 5) == TACK_OK);
    CHECK(tack_array_copy_to_host(ao, out, sizeof out) == TACK_OK);
    CHECK(out[0] == -5 && out[1] == 4000000000LL && out[2] == 1 && out[3] == 9);
    tack_array_release(ao);
    tack_program_free(p);
}

/* min(ceil(work / per), most), at least 1 */
static int64_t groups_for(int64_t work, int64_t per, int64_t most) {
    int64_t n = work <= 0 ? 1 : (work + per - 1) / per;
    return n < most ? n : most;
}

/* A parallel phase launches the groups its loop's extent needs, at most units x 8, which a loop of
 * unknown extent gets; every iteration runs whatever the count. */
static void test_grid(tack_device *g) {
    const ocl_dev *c = g->state;
    tk_pinfo params[3] = {arr("out", TACK_I64, 1), arr("x", TACK_I64, 0), scalar("k", TACK_I64)};
    tack_program *p = program("grid", GRID, 3, params);
    CHECK(tack_program_build(p, g) == TACK_OK);
    const int64_t fill = (int64_t)c->units * 8;
    int64_t L = 0; /* the parallel phases' work-group size: asked of the first launch */
    for (int r = 0; r < 8; r++) {
        /* extents 0, 1, L - 1, L, L + 1 and three times what the cap's groups cover; 1, 2, 3, 0 blocks
         * and more than the cap */
        int64_t xn = r == 0 ? 0 : r == 1 ? 1 : r == 2 ? L - 1 : r == 3 ? L : r == 4 ? L + 1 : 3 * L * fill;
        int64_t k = r < 6 ? r % 3 + 1 : r == 6 ? 0 : fill + 5;
        int64_t on = 10 + xn + k;
        tack_array *o = NULL, *x = NULL;
        CHECK(tack_array_zeros(g, TACK_I64, 1, &on, &o) == TACK_OK && tack_array_zeros(g, TACK_I64, 1, &xn, &x) == TACK_OK);
        tack_arg args[3];
        memset(args, 0, sizeof args);
        args[0].array = o;
        args[1].array = x;
        args[2].scalar.i = k;
        CHECK(tack_launch(p, args, 3) == TACK_OK);
        int64_t *out = calloc((size_t)on, sizeof *out);
        CHECK(out && tack_array_copy_to_host(o, out, (size_t)on * sizeof *out) == TACK_OK);
        if (r == 0) L = out[1];
        CHECK(L >= 1 && L <= 256 && out[1] == L && out[3] == L && out[7] == L && out[5] == 4 && out[9] == 1);
        int64_t want[5] = {groups_for(xn, L, fill), groups_for(xn * k, L, fill), groups_for(k, 1, fill), fill, 1};
        for (int ph = 0; ph < 5; ph++)
            if (out[2 * ph] != want[ph]) {
                fprintf(stderr, "grid: extent %lld, k %lld: phase %d launched %lld groups of %lld, not %lld\n",
                        (long long)xn, (long long)k, ph, (long long)out[2 * ph], (long long)out[2 * ph + 1],
                        (long long)want[ph]);
                CHECK(0);
            }
        int every = 1;
        for (int64_t i = 0; i < xn + k; i++) every &= out[10 + i] == (i < xn ? i + 1 : i - xn + 1);
        CHECK(every);
        free(out);
        tack_array_release(o);
        tack_array_release(x);
    }
    tack_program_free(p);
}

static void test_errors(tack_device *g) {
    tk_pinfo cp[2] = {arr("x", TACK_I32, 0), scalar("idx", TACK_I64)};
    tack_program *p = program("check", CHECKED, 2, cp);
    CHECK(tack_program_build(p, g) == TACK_OK);
    int64_t n = 4;
    int host[4];
    tack_array *x = NULL;
    CHECK(tack_array_zeros(g, TACK_I32, 1, &n, &x) == TACK_OK);
    tack_arg args[2] = {{x, {0}}, {NULL, {0}}};
    args[1].scalar.i = 2;
    CHECK(tack_launch(p, args, 2) == TACK_OK && tack_device_synchronize(g) == TACK_OK);
    /* a failed check: the call returns, the synchronization reports it once */
    args[1].scalar.i = 10;
    CHECK(tack_launch(p, args, 2) == TACK_OK);
    CHECK(tack_device_synchronize(g) == TACK_ERR_INDEX);
    CHECK(strstr(tack_last_error(), "index 10 is out of bounds for axis 0 with size 4 (array 'x', kernel check, check.py:7)"));
    CHECK(tack_device_synchronize(g) == TACK_OK);
    /* a copy to the host is a synchronization point */
    args[1].scalar.i = -1;
    CHECK(tack_launch(p, args, 2) == TACK_OK);
    CHECK(tack_array_copy_to_host(x, host, sizeof host) == TACK_ERR_INDEX && strstr(tack_last_error(), "index -1 "));
    CHECK(tack_array_copy_to_host(x, host, sizeof host) == TACK_OK);
    CHECK(tack_synchronize_all() == TACK_OK);
    /* a shared argument: the call completes and reports at once */
    tack_array_set_flags(x, TACK_ARRAY_SHARED);
    args[1].scalar.i = 4;
    CHECK(tack_launch(p, args, 2) == TACK_ERR_INDEX && strstr(tack_last_error(), "index 4 "));
    args[1].scalar.i = 3;
    CHECK(tack_launch(p, args, 2) == TACK_OK);
    tack_array_set_flags(x, 0);
    /* freed with a failure unread: the next synchronization still reports it */
    args[1].scalar.i = 99;
    CHECK(tack_launch(p, args, 2) == TACK_OK);
    tack_program_free(p);
    CHECK(tack_device_synchronize(g) == TACK_ERR_INDEX && strstr(tack_last_error(), "index 99 "));
    CHECK(tack_device_synchronize(g) == TACK_OK);
    tack_array_release(x);

    /* a build error names the kernel and quotes the log */
    p = program("broken", BROKEN, 0, NULL);
    capture_begin(); /* the driver may print the compiler's errors too */
    tack_status st = tack_program_build(p, g);
    capture_end();
    CHECK(st == TACK_ERR_COMPILE);
    CHECK(strstr(tack_last_error(), "kernel 'broken'") && strstr(tack_last_error(), "build log"));
    tack_program_free(p);
    /* layout, target and signature mistakes are named */
    p = program("plain", "__kernel void tk_phase0(void) {}\n", 0, NULL);
    CHECK(tack_program_build(p, g) == TACK_ERR_VALUE && strstr(tack_last_error(), "has no layout comment"));
    tack_program_free(p);
    CHECK(tk_program_from_source("cu", "cuda", SAXPY, 3, saxpy_params, 0, NULL, &p) == TACK_OK);
    CHECK(tack_program_build(p, g) == TACK_ERR_VALUE && strstr(tack_last_error(), "'cuda' target"));
    tack_program_free(p);
    p = program("bad_layout", "/* tack-opencl: phases=p frame=x fp64=0 */", 0, NULL);
    CHECK(tack_program_build(p, g) == TACK_ERR_VALUE && strstr(tack_last_error(), "malformed OpenCL layout"));
    tack_program_free(p);
    p = program("short", SAXPY, 2, saxpy_params);
    CHECK(tack_program_build(p, g) == TACK_ERR_VALUE && strstr(tack_last_error(), "takes 8 arguments, but its signature passes 7"));
    tack_program_free(p);
    /* float64 on a device without it is refused before anything is built */
    ocl_dev *c = g->state;
    int had = c->fp64;
    c->fp64 = 0;
    tk_pinfo dparams[3] = {arr("y", TACK_F64, 1), arr("x", TACK_F64, 0), scalar("a", TACK_F64)};
    p = program("saxpy", DAXPY, 3, dparams);
    CHECK(tack_program_build(p, g) == TACK_ERR_COMPILE);
    char want[400];
    snprintf(want, sizeof want,
             "kernel 'saxpy' uses float64, which device 'opencl:0' (%s) does not support (no cl_khr_fp64)", c->name);
    CHECK(strcmp(tack_last_error(), want) == 0);
    c->fp64 = had;
    tack_program_free(p);
}

/* ------------------------------------------------------------------- cache */
static int entry_name(const char *dir, char *out, size_t n) {
    DIR *d = opendir(dir);
    int found = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strlen(e->d_name) > 6 && strcmp(e->d_name + strlen(e->d_name) - 6, ".clbin") == 0) {
            snprintf(out, n, "%s", e->d_name);
            found++;
        }
    if (d) closedir(d);
    return found;
}

/* Build saxpy afresh with TACK_LOG=info; the log, and whether it ran right. */
static const char *build_logged(tack_device *g, int *ran) {
    tack_program *p = program("saxpy", SAXPY, 3, saxpy_params);
    capture_begin();
    tack_status st = tack_program_build(p, g);
    const char *log = capture_end();
    *ran = st == TACK_OK && run_saxpy(p, g, 1000);
    tack_program_free(p);
    return log;
}

/* Replace the entry with a sealed one of ours whose head names `key` and
 * whose binary is `body`. */
static void forge(const char *name, const char *key, const char *body) {
    char head[200];
    snprintf(head, sizeof head, "tack-opencl-cache-key %s %zu\n", key, strlen(body));
    kc_dir dir;
    CHECK(kc_open(&dir) == TACK_OK);
    unlinkat(dir.fd, name, 0);
    const void *parts[3] = {head, body, "\ntack-end\n"};
    size_t lens[3] = {strlen(head), strlen(body), 10};
    CHECK(kc_store_bytes(&dir, name, parts, lens, 3) == TACK_OK);
    kc_close(&dir);
}

static void test_cache(tack_device *g) {
    char dir[700], name[200] = "", path[1000], key[40];
    int ran = 0;
    snprintf(dir, sizeof dir, "%s/cache2", base);
    CHECK(tack_config_set("cache_dir", dir) == TACK_OK); /* the environment was read at the first use */
    CHECK(tack_config_set("log", "info") == TACK_OK);
    const ocl_dev *c = g->state;
    /* PoCL's device is a CPU: the binary waits for the second build */
    if (strstr(c->platform_id, "Portable Computing Language")) CHECK(c->lazy_binary);
    unsigned long fetched = ocl_binaries_fetched, deferred = ocl_binaries_deferred;
    CHECK(strstr(build_logged(g, &ran), "compiled kernel 'saxpy' for opencl:0") && ran);
    if (c->lazy_binary) {
        /* the first build asks for no binary and stores none, only its marker */
        CHECK(ocl_binaries_fetched == fetched && ocl_binaries_deferred == deferred + 1);
        CHECK(entry_name(dir, name, sizeof name) == 0);
        /* a marker that is not ours for this key is not believed: the build defers again */
        char marker[300] = "";
        DIR *dd = opendir(dir);
        struct dirent *de;
        while (dd && (de = readdir(dd)))
            if (strstr(de->d_name, ".clbuilt") && strlen(de->d_name) < sizeof marker) strcpy(marker, de->d_name);
        if (dd) closedir(dd);
        CHECK(marker[0] != 0);
        forge(marker, "0123", "");
        CHECK(strstr(build_logged(g, &ran), "its binary is cached if it is built again") && ran);
        CHECK(ocl_binaries_fetched == fetched && ocl_binaries_deferred == deferred + 2);
        CHECK(entry_name(dir, name, sizeof name) == 0);
        /* the next build fetches and stores it */
        CHECK(strstr(build_logged(g, &ran), "compiled kernel 'saxpy' for opencl:0") && ran);
        CHECK(ocl_binaries_fetched == fetched + 1 && ocl_binaries_deferred == deferred + 2);
    } else {
        CHECK(ocl_binaries_fetched == fetched + 1 && ocl_binaries_deferred == deferred);
    }
    CHECK(entry_name(dir, name, sizeof name) == 1);
    fetched = ocl_binaries_fetched;
    CHECK(strstr(build_logged(g, &ran), "loaded kernel 'saxpy' for opencl:0 from the cache") && ran);
    CHECK(ocl_binaries_fetched == fetched);
    /* damaged: the seal fails, the entry is removed and rebuilt */
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDWR);
    char byte = 0;
    CHECK(fd >= 0 && pread(fd, &byte, 1, 100) == 1);
    byte ^= 0x5a;
    CHECK(pwrite(fd, &byte, 1, 100) == 1);
    close(fd);
    const char *log = build_logged(g, &ran);
    CHECK(strstr(log, "is damaged") && strstr(log, "compiled kernel 'saxpy'") && ran);
    CHECK(strstr(build_logged(g, &ran), "loaded kernel 'saxpy'") && ran);
    /* sealed but not a binary for its key; sealed but refused by the driver */
    snprintf(key, sizeof key, "%.32s", name);
    forge(name, "0123", "junk");
    log = build_logged(g, &ran);
    CHECK(strstr(log, "not a program binary for its key") && strstr(log, "compiled kernel 'saxpy'") && ran);
    forge(name, key, "this is no program binary at all");
    log = build_logged(g, &ran);
    CHECK(strstr(log, "refused by the OpenCL driver") && strstr(log, "compiled kernel 'saxpy'") && ran);
    CHECK(strstr(build_logged(g, &ran), "loaded kernel 'saxpy'") && ran);
    CHECK(tack_config_set("log", NULL) == TACK_OK);
    /* failed host allocations while building leave nothing behind */
    for (int fail = 1; fail < 40; fail++) {
        tack_program *q = program("saxpy", SAXPY, 3, saxpy_params);
        failing_allocator_install(fail);
        tack_status st = tack_program_build(q, g);
        tack_set_allocator(NULL);
        CHECK(st == TACK_OK || st == TACK_ERR_NOMEM);
        tack_program_free(q);
    }
}

/* --------------------------------------------------------- without OpenCL */
/* The child: OpenCL is unusable; Tack still runs and says why. */
static int child(const char *why) {
    tack_device *list[32], *d = NULL, *cpu = NULL;
    /* Whether the environment hid OpenCL as the parent meant, asked of the ICD loader
     * itself: an empty libOpenCL.so.1 first on LD_LIBRARY_PATH fails dlopen on Debian's
     * glibc, and OCL_ICD_VENDORS naming an empty folder leaves Debian's ocl-icd no
     * driver; on the H200 machine (Ubuntu) the loader still found PoCL.  Where the
     * condition cannot be set up this way, say so instead of testing Tack against it. */
    void *real = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (real && (strstr(why, "could not be loaded") || strstr(why, "finds no OpenCL driver"))) {
        typedef int (*get_platforms)(unsigned, void *, unsigned *);
        get_platforms gp = (get_platforms)dlsym(real, "clGetPlatformIDs");
        unsigned np = 0;
        if (strstr(why, "could not be loaded") || (gp && gp(0, NULL, &np) == 0 && np > 0)) {
            fprintf(stderr, "SKIP: the environment does not hide OpenCL here (wanted: %s; the ICD loader found %u "
                    "platform(s))\n", why, np);
            return 0; /* the loader stays loaded: unloading it under a driver it loaded is not safe */
        }
    }
    if (real) dlclose(real);
    int n = tack_devices(list, 32);
    for (int i = 0; i < n && i < 32; i++) CHECK(tack_device_kind(list[i]) != TACK_DEVICE_OPENCL);
    CHECK(tack_device_get("opencl", &d) == TACK_ERR_DEVICE);
    CHECK(strstr(tack_last_error(), why) != NULL);
    if (!strstr(tack_last_error(), why)) fprintf(stderr, "the message: %s\n", tack_last_error());
    int64_t four = 4;
    float v = 1.5f, back[4];
    tack_array *a = NULL;
    CHECK(tack_device_get("cpu", &cpu) == TACK_OK && tack_array_empty(cpu, TACK_F32, 1, &four, &a) == TACK_OK);
    CHECK(tack_array_fill(a, &v) == TACK_OK && tack_array_copy_to_host(a, back, sizeof back) == TACK_OK && back[3] == v);
    tack_array_release(a);
    return CHECK_SUMMARY();
}

static void test_without_opencl(void) {
    char dir[700], cmd[2400];
    snprintf(dir, sizeof dir, "%s/nolib", base);
    mkdir(dir, 0700);
    snprintf(cmd, sizeof cmd, "%s/libOpenCL.so.1", dir);
    FILE *f = fopen(cmd, "w"); /* an empty file: dlopen fails on it as on a missing library */
    if (f) fclose(f);
    snprintf(cmd, sizeof cmd, "LD_LIBRARY_PATH='%s' '%s' --child 'libOpenCL.so.1 could not be loaded' >/dev/null",
             dir, exe);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "env -u OCL_ICD_FILENAMES OCL_ICD_VENDORS='%s' '%s' --child 'finds no OpenCL driver (install' "
             ">/dev/null", dir, exe);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "TACK_OPENCL_SVM=yes '%s' --child 'TACK_OPENCL_SVM must be 0' >/dev/null", exe);
    CHECK(system(cmd) == 0);
}

/* The memory and launch tests again with TACK_OPENCL_SVM=0: cl_mem buffers
 * on a device that has SVM (where it has none, the first run was that). */
static void test_buffer_mode(const ocl_dev *c) {
    if (!c->svm) return;
    char cmd[900];
    snprintf(cmd, sizeof cmd, "TACK_OPENCL_SVM=0 TACK_CACHE_DIR='%s/cache' '%s' --buffers", base, exe);
    CHECK(system(cmd) == 0);
}

static int buffers_child(void) {
    tack_device *g = NULL, *cpu = NULL;
    CHECK(tack_device_get("opencl", &g) == TACK_OK && tack_device_get("cpu", &cpu) == TACK_OK);
    if (!g) return CHECK_SUMMARY();
    const ocl_dev *c = g->state;
    CHECK(!c->svm && strstr(c->no_svm, "TACK_OPENCL_SVM=0"));
    test_memory(g, cpu);
    test_launch(g, cpu);
    return CHECK_SUMMARY();
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--child") == 0) return child(argv[2]);
    if (argc == 2 && strcmp(argv[1], "--buffers") == 0) return buffers_child();
    tack_device *g = NULL, *cpu = NULL;
    if (tack_device_get("opencl", &g) != TACK_OK) {
        printf("skip: no OpenCL device: %s\n", tack_last_error());
        return 0;
    }
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0 || !mkdtemp(base)) {
        printf("cannot make a temporary directory: skipping\n");
        return 0;
    }
    exe[len] = 0;
    char cache[700];
    snprintf(cache, sizeof cache, "%s/cache", base);
    setenv("TACK_CACHE_DIR", cache, 1); /* for the child processes */
    CHECK(tack_config_set("cache_dir", cache) == TACK_OK);
    CHECK(tack_device_get("cpu", &cpu) == TACK_OK);
    test_devices(g);
    test_memory(g, cpu);
    test_launch(g, cpu);
    test_grid(g);
    test_errors(g);
    test_cache(g);
    test_without_opencl();
    test_buffer_mode(g->state);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", base);
    return CHECK_SUMMARY();
}
